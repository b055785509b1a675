//! The CSV subset the shard files use (RFC 4180): fields with `,` or `"` are quoted with
//! `"` doubled; line breaks inside a field become spaces, so one record is one line.

use std::borrow::Cow;

/// A field as written.
pub fn field(s: &str) -> Cow<'_, str> {
    let s: Cow<str> = if s.contains(['\n', '\r']) {
        Cow::Owned(s.replace(['\n', '\r'], " "))
    } else {
        Cow::Borrowed(s)
    };
    if s.contains([',', '"']) || s.starts_with(' ') || s.ends_with(' ') {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        s
    }
}

/// A record as one line, without the line break.
pub fn line<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&field(f.as_ref()));
    }
    out
}

/// Splits one line into fields; `None` when a quote is unbalanced.
pub fn parse(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(ch) = chars.next() {
        if quoted {
            if ch == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            } else {
                cur.push(ch);
            }
        } else if ch == '"' && at_start {
            quoted = true;
            at_start = false;
        } else if ch == ',' {
            out.push(std::mem::take(&mut cur));
            at_start = true;
        } else {
            cur.push(ch);
            at_start = false;
        }
    }
    if quoted {
        return None;
    }
    out.push(cur);
    Some(out)
}
