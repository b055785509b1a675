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
}
