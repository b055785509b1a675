//! Serving measurements kept aside (`validation/serving-heldout.json`, in this repository):
//! published results that are not rows of `../shared/validation/serving-public.json` —
//! AMD MI300X under vLLM, MLPerf Server (latency-bound) runs, H100/H200/B200/GB200 columns of
//! TensorRT-LLM's perf overview that the public file does not use. Nothing in the model was
//! tuned on them. Issue 8's bar for them is the public file's: mean absolute error under 15%
//! and no row worse than 40%, error = predicted / measured − 1 on output tokens/s per GPU.

fn report() -> myriad_serve::validate::Report {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/serving-heldout.json"
    );
    let text = std::fs::read_to_string(path).expect("the held-out file is in the repository");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("the held-out file parses");
    myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap()
}

#[test]
fn held_out_rows_meet_the_kept_aside_bar() {
    let r = report();
    for c in &r.cases {
        eprintln!(
            "{:<66} pred {:>9.1} meas {:>9.1} err {:>+6.1}%",
            c.id,
            c.predicted.unwrap_or(f64::NAN),
            c.measured.unwrap_or(f64::NAN),
            100.0 * c.error.unwrap_or(f64::NAN)
        );
    }
    // Every row is predicted and scored (17 rows; none needs a missing feature).
    let unscored: Vec<&str> = r
        .cases
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| c.id.as_str())
        .collect();
    assert!(unscored.is_empty(), "not scored: {unscored:?}");
    let s = &r.summary;
    assert!(s.count >= 17, "rows scored: {}", s.count);
    // Met when written: MAE 10.5%, worst 37.0% (Llama 3.3 70B FP8, H100 TP2, 2048/2048).
    assert!(s.mae < 0.15, "mean absolute error {:.1}%", 100.0 * s.mae);
    assert!(
        s.worst_abs_error < 0.40,
        "{} at {:.1}%",
        s.worst_id,
        100.0 * s.worst_abs_error
    );
}
