//! Text (YAML or JSON) to `serde_json::Value`, tracking the field path as it goes.
//!
//! `serde_json::Value`'s own visitor turns a non-finite float into `null` (so `.nan` on an
//! optional field would read as absent) and keeps the last of two equal keys (so a JSON file
//! could say `count` twice and silently drop the first). `Build` replaces it: it rejects
//! both, naming the field path where they occur, which the parsers' own errors cannot do
//! (they know a line and column, not a path). It also remembers the path it is in when the
//! parser fails, so that a JSON literal that is no finite number (`NaN`, `Infinity`,
//! `1e999`) is reported at its field.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// What `Build` found wrong, and where.
#[derive(Debug, Default)]
pub struct State {
    /// Path segments of the value being read: a key, or `[i]` for a list element.
    path: Vec<Seg>,
    /// The first problem `Build` itself found: its field path and message.
    pub problem: Option<(String, String)>,
}

#[derive(Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

impl State {
    /// The dotted path of the value being read (`training.tokens`, `axes[2].values`), or
    /// the path of `key` inside it.
    pub fn path(&self) -> String {
        join(&self.path)
    }

    fn path_with(&self, key: &str) -> String {
        let p = join(&self.path);
        if p.is_empty() {
            key.to_string()
        } else {
            format!("{p}.{key}")
        }
    }

    fn fail<E: de::Error>(&mut self, path: String, message: String) -> E {
        let e = E::custom(&message);
        if self.problem.is_none() {
            self.problem = Some((path, message));
        }
        e
    }
}

fn join(segs: &[Seg]) -> String {
    let mut out = String::new();
    for s in segs {
        match s {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The message for a non-finite number.
pub fn non_finite(v: f64) -> String {
    let shown = if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "infinity"
    } else {
        "-infinity"
    };
    format!("{shown}: expected a finite number")
}

/// A seed building one value at the current path (plus `seg`, entered while it is read and
/// left only when it was read without error, so that after an error the path is where it
/// happened).
pub struct Build<'a> {
    pub state: &'a RefCell<State>,
    seg: Option<Seg>,
}

impl<'a> Build<'a> {
    pub fn root(state: &'a RefCell<State>) -> Self {
        Build { state, seg: None }
    }
}

impl<'de> DeserializeSeed<'de> for Build<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        let entered = match self.seg {
            Some(s) => {
                self.state.borrow_mut().path.push(s);
                true
            }
            None => false,
        };
        let v = d.deserialize_any(ValueVisitor(self.state))?;
        if entered {
            self.state.borrow_mut().path.pop();
        }
        Ok(v)
    }
}

struct ValueVisitor<'a>(&'a RefCell<State>);

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        if let Ok(u) = u64::try_from(v) {
            return Ok(Value::Number(u.into()));
        }
        match i64::try_from(v) {
            Ok(i) => Ok(Value::Number(i.into())),
            Err(_) => {
                let mut st = self.0.borrow_mut();
                let p = st.path();
                Err(st.fail(p, format!("{v} is out of the range of 64-bit integers")))
            }
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match u64::try_from(v) {
            Ok(u) => Ok(Value::Number(u.into())),
            Err(_) => {
                let mut st = self.0.borrow_mut();
                let p = st.path();
                Err(st.fail(p, format!("{v} is out of the range of 64-bit integers")))
            }
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => {
                let mut st = self.0.borrow_mut();
                let p = st.path();
                Err(st.fail(p, non_finite(v)))
            }
        }
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Build {
            state: self.0,
            seg: None,
        }
        .deserialize(d)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Build {
            state: self.0,
            seg: Some(Seg::Index(out.len())),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if out.contains_key(&key) {
                let mut st = self.0.borrow_mut();
                let p = st.path_with(&key);
                return Err(st.fail(
                    p,
                    "duplicate key: each key may appear once in a mapping".to_string(),
                ));
            }
            let v = map.next_value_seed(Build {
                state: self.0,
                seg: Some(Seg::Key(key.clone())),
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key, read as a string (as `serde_json::Value` reads keys).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
}
