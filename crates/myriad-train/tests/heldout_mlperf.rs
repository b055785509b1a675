//! MLPerf Training GPT-3 175B submissions kept aside (`validation/training-heldout-mlperf.json`
//! in this repository; nothing in the model was tuned on them). The bar for measurements
//! kept aside is a mean absolute error under 10% and no case worse than 25%.
//!
//! The bar is met: the 12 cases (v3.0 to v4.1; NVIDIA, CoreWeave, Azure and Oracle on 256 to
//! 11,616 H100, plus NVIDIA's 64-GPU B200 preview) give mean 8.2% and worst -14.6%
//! (mlperf-v3.0-coreweave-gpt3-3584xh100). They were 7.2% and +11.2% before each model chunk
//! of the interleaved schedule synchronised its gradients and parameters in its own window
//! (`step::dp_overlap_exposed`); the old single window over-counted exposed DP traffic at
//! large scale, where it is most of the step. The 11,616-GPU v4.0 run reduces gradients in
//! bf16 as its submission's optimizer config states (`grad_sync_dtype: bf16`); read as fp32
//! it was +27.8%.

mod common;
use common::print;

fn report() -> myriad_train::validate::ValidationReport {
    common::report_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/training-heldout-mlperf.json"
    ))
    .expect("the MLPerf held-out file is in the repository")
}

/// Ratchet just above the figures measured (mean 8.0%, worst +18.5% on NVIDIA's 64-GPU B200
/// v4.1 run, since TP ranks wait for the momentarily slowest clock, `speed_jitter`, which
/// moved these rows slower: the v4.1 runs, already predicted slow, to +14…+19%; 7.5% and
/// +15.1% before; 7.7% and 12.9% before hidden communication first slowed compute by the
/// H100-measured 0.24 rather than an assumed 0.2): fails if a change makes the kept-aside
/// MLPerf predictions worse.
#[test]
fn mlperf_held_out_runs_do_not_regress() {
    let r = report();
    print(&r);
    assert_eq!(r.summary.count, 12);
    common::assert_within(&r, 0.0810, 0.19);
}

/// The bar for kept-aside data: mean absolute error under 10%, no case worse than 25%.
#[test]
fn mlperf_held_out_runs_meet_the_kept_aside_bar() {
    let r = report();
    print(&r);
    common::assert_kept_aside_bar(&r);
}

/// A null field is filled and said: the B200 preview's systems file gives no network rate.
#[test]
fn unstated_scale_out_rate_is_reported() {
    let r = report();
    let c = r
        .cases
        .iter()
        .find(|c| c.id == "mlperf-v4.1-nvidia-gpt3-64xb200")
        .expect("the B200 case");
    let notes = c.notes.join(" | ");
    assert!(
        notes.contains("scale_out_gbps_per_accelerator: 400 (not given; hgx-b200's 8 NICs"),
        "{notes}"
    );
}
