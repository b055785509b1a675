//! Numbers for the commands' text output, kept short for absurd but accepted inputs: Rust
//! prints `{:.2}` of 1e300 as 300 digits and `{}` of 1e-300 as 300 zeros. Values of normal
//! size print exactly as `{:.d$}` and `{}` do.

/// Where a value switches to scientific form: 12 integer digits.
const BIG: f64 = 1e12;

/// `x` with `d` decimals (`{:.d$}`), in scientific form (`{:.3e}`) from 1e12 up, where the
/// fixed form would run past 12 integer digits (300 of them for 1e300).
pub fn fixed(x: f64, d: usize) -> String {
    if x.is_finite() && x.abs() >= BIG {
        format!("{x:.3e}")
    } else {
        format!("{x:.d$}")
    }
}

/// As [`fixed`], and also in scientific form where `d` decimals would show a value that is
/// not 0 as 0 (`sustained_tbps: 1e-300` made a 300-digit write time).
pub fn fix(x: f64, d: usize) -> String {
    let a = x.abs();
    if x.is_finite() && x != 0.0 && (a >= BIG || a < 0.5 * 10f64.powi(-(d as i32))) {
        format!("{x:.3e}")
    } else {
        format!("{x:.d$}")
    }
}

/// A value given in a file, as short as it is exact (`{}`), in scientific form (`{:e}`) past
/// a million or under a thousandth.
pub fn given(x: f64) -> String {
    let a = x.abs();
    if x.is_finite() && x != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A string of digits with thousands separators: `1234567` -> `1,234,567`.
fn group(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` with `d` decimals and thousands separators (`1,013.1`), as `myriad cluster`'s
/// tables print quantities; from 1e12 up in scientific form, as [`fixed`].
pub fn grouped(x: f64, d: usize) -> String {
    if !x.is_finite() || x.abs() >= BIG {
        return fixed(x, d);
    }
    let s = format!("{:.d$}", x.abs());
    // `-0.0` and values that round to 0 print without a sign.
    let neg = x < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b));
    signed_grouped(neg, &s)
}

/// The unsigned decimal `s` (`1234.5`) with thousands separators in its whole part, after
/// a `-` where `neg`.
fn signed_grouped(neg: bool, s: &str) -> String {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&group(i));
    if !f.is_empty() {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A value in a report's tables: `0`; whole numbers (counts) and values from 100 up with
/// thousands separators and no decimals (`1,024`, `469,159`); smaller ones with three
/// decimals; from 1e12 up and under a thousandth in scientific form (`{:.3e}`), where
/// the CLI's [`fixed`] switches too. Not a number: `-`.
pub fn sig(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "-".into()
    } else if x == 0.0 {
        "0".into()
    } else if !(1e-3..BIG).contains(&a) {
        format!("{x:.3e}")
    } else if x.fract() == 0.0 || a >= 100.0 {
        grouped(x, 0)
    } else {
        format!("{x:.3}")
    }
}

/// An axis tick label on an axis whose ends reach `scale` in magnitude: the value as short
/// as it is exact to six decimals, with thousands separators (`1,000,000`, `0.25`); on an
/// axis of absurd or tiny values (from 1e12 up, under a thousandth) in scientific form
/// (`5e288`, `2.5e-4`), as the tables print them. A tick within a billionth of the scale of
/// 0 reads `0` (not `-0.0`, nor `5.6e-17` from the tick arithmetic). On a log axis pass the
/// tick itself as `scale`.
pub fn tick(x: f64, scale: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    let scale = scale.abs();
    if x == 0.0 || x.abs() <= scale * 1e-9 {
        return "0".into();
    }
    let trim = |s: &str| s.trim_end_matches('0').trim_end_matches('.').to_string();
    if !(1e-3..BIG).contains(&scale) {
        let e = format!("{x:.3e}");
        let (m, exp) = e.split_once('e').unwrap_or((&e, "0"));
        return format!("{}e{exp}", trim(m));
    }
    signed_grouped(x < 0.0, &trim(&format!("{:.6}", x.abs())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_values_print_as_before_and_absurd_ones_stay_short() {
        assert_eq!(fixed(1234.5678, 2), "1234.57");
        assert_eq!(fixed(0.3, 0), "0");
        assert_eq!(fixed(999_999_999_999.0, 0), "999999999999");
        assert_eq!(fixed(1e300, 2), "1.000e300");
        assert_eq!(fixed(-1e300, 2), "-1.000e300");
        assert_eq!(fix(1e-300, 2), "1.000e-300");
        assert_eq!(fix(0.0, 2), "0.00");
        assert_eq!(fix(0.25, 1), "0.2");
        assert_eq!(given(0.08), "0.08");
        assert_eq!(given(1.2), "1.2");
        assert_eq!(given(1e-300), "1e-300");
        assert_eq!(given(1e12), "1e12");
        for s in [
            fixed(f64::MAX, 6),
            fix(f64::MIN_POSITIVE, 6),
            given(f64::MAX),
        ] {
            assert!(s.len() < 24, "{s}");
        }
        assert_eq!(fixed(f64::INFINITY, 1), "inf");
    }

    /// Guards the reports' numbers: `sig` printed non-integers from 100 up without
    /// separators (`469159` tokens/s beside a `2,048` global batch), whole numbers up to
    /// 1e15 in full (`14,936,795,136,000` M USD a year at 1e12 USD/kWh, where the CLI says
    /// `1.494e13`) and non-integers from a million up in scientific form.
    #[test]
    fn report_values_group_thousands_and_go_scientific_where_the_cli_does() {
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(2048.0), "2,048");
        assert_eq!(sig(469_159.4), "469,159");
        assert_eq!(sig(9969.9), "9,970");
        assert_eq!(sig(2_500_000.7), "2,500,001");
        assert_eq!(sig(8.9401), "8.940");
        assert_eq!(sig(14_936_795_136_000.0), "1.494e13");
        assert_eq!(sig(-1e300), "-1.000e300");
        assert_eq!(sig(2e-5), "2.000e-5");
        assert_eq!(sig(f64::NAN), "-");
        assert_eq!(grouped(1013.14, 1), "1,013.1");
        assert_eq!(grouped(-1234567.0, 0), "-1,234,567");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(grouped(1e300, 1), "1.000e300");
    }

    /// Guards the charts' axis labels: plotters printed its ticks as `{}` of the float,
    /// `1000000000.0` on a checkpoint-interval axis and 300 digits on an axis of 1e289 days.
    #[test]
    fn ticks_are_short_grouped_and_scientific_on_absurd_axes() {
        assert_eq!(tick(1e9, 1e9), "1,000,000,000");
        assert_eq!(tick(10_000.0, 1e5), "10,000");
        assert_eq!(tick(0.9932, 1.0), "0.9932");
        assert_eq!(tick(0.30000000000000004, 1.0), "0.3");
        assert_eq!(tick(2.5, 10.0), "2.5");
        assert_eq!(tick(-0.0, 1.0), "0");
        assert_eq!(tick(5.6e-17, 1.0), "0");
        assert_eq!(tick(-2.0, 10.0), "-2");
        assert_eq!(tick(5e288, 2.5e289), "5e288");
        assert_eq!(tick(2.5e289, 2.5e289), "2.5e289");
        assert_eq!(tick(2.5e-4, 1e-3 / 2.0), "2.5e-4");
        assert_eq!(tick(1e-5, 1e-5), "1e-5");
        for s in [tick(f64::MAX, f64::MAX), tick(1.7e308 / 3.0, 1.7e308)] {
            assert!(s.len() < 12, "{s}");
        }
    }
}
