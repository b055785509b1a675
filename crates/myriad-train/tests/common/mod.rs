//! Shared by the validation and calibration tests: load a `myriad-validation/1` file and
//! print its report; read a measurement file of `calibration/`. Each test binary uses a part.
#![allow(dead_code)]

use myriad_scenario::validation::parse_validation;
use myriad_train::validate::ValidationReport;

/// The cases of the file at `path`; `None` when it is absent (`../shared` may be).
pub fn cases_of(path: &str) -> Option<Vec<myriad_scenario::validation::ValidationCase>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("skipping: {path} not found");
        return None;
    };
    Some(
        parse_validation(path, &text)
            .expect("the validation file parses")
            .cases,
    )
}

/// Predicts every case of the file at `path`; `None` when it is absent (`../shared` may be).
pub fn report_of(path: &str) -> Option<ValidationReport> {
    let cases = cases_of(path)?;
    Some(myriad_train::validate::validate(
        &cases,
        myriad_catalog::catalog(),
    ))
}

/// One line per case, then the summary, on stderr (shown with `--nocapture`).
pub fn print(r: &ValidationReport) {
    for c in &r.cases {
        eprintln!(
            "{:60} {:>9} {:>9.3} {:>8} {}",
            c.id,
            c.predicted_step_time_s
                .map(|p| format!("{p:.3}"))
                .unwrap_or("-".into()),
            c.measured_step_time_s,
            c.error
                .map(|e| format!("{:+.1}%", 100.0 * e))
                .unwrap_or("-".into()),
            c.failure
                .as_deref()
                .unwrap_or(if c.superseded { "superseded" } else { "" })
        );
    }
    let s = &r.summary;
    eprintln!(
        "count {} failed {} mae {:.2}% median {:.2}% worst {:.1}% ({}) worst-all {:.1}% ({})",
        s.count,
        s.failed,
        100.0 * s.mae,
        100.0 * s.median_abs_error,
        100.0 * s.worst_abs_error,
        s.worst_id,
        100.0 * s.worst_abs_error_all,
        s.worst_id_all
    );
}

/// The bar for measurements kept aside: every case predicted, mean absolute error
/// under 10% and no case (superseded or not) worse than 25%.
#[allow(dead_code)] // not every test binary that includes this module uses each helper
pub fn assert_kept_aside_bar(r: &ValidationReport) {
    assert_within(r, 0.10, 0.25);
}

/// Every case predicted, mean absolute error under `mae` and no case (superseded or not)
/// worse than `worst` (fractions).
#[allow(dead_code)] // not every test binary that includes this module uses each helper
pub fn assert_within(r: &ValidationReport, mae: f64, worst: f64) {
    let s = &r.summary;
    assert_eq!(s.failed, 0);
    assert!(s.mae < mae, "mean absolute error {:.2}%", 100.0 * s.mae);
    assert!(
        s.worst_abs_error_all < worst,
        "{} at {:.1}%",
        s.worst_id_all,
        100.0 * s.worst_abs_error_all
    );
}

/// The notes the validator wrote for one case, joined (empty when the case is absent).
#[allow(dead_code)] // not every test binary that includes this module uses each helper
pub fn notes_of(r: &ValidationReport, id: &str) -> String {
    r.cases
        .iter()
        .find(|c| c.id == id)
        .map(|c| c.notes.join(" | "))
        .unwrap_or_default()
}

/// A measurement file of `calibration/` (made on a lent GPU by the script it names).
pub fn calibration(file: &str) -> serde_json::Value {
    let path = format!("{}/../../calibration/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}
