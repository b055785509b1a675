//! DeepSeek-V3's own pretraining throughput kept aside
//! (`validation/training-heldout-deepseek-v3.json`; nothing in the model was tuned on it):
//! 180K H800 GPU-hours per trillion tokens on 2,048 H800 (arXiv:2412.19437, §1 and Table 1),
//! with the layout the report gives (§3.2: PP 16 under DualPipe, EP 64 over eight nodes,
//! ZeRO-1, no TP; FP8; RMSNorm, MLA up-projections and SwiGLU outputs recomputed; AdamW
//! moments in BF16; MTP depth 1; batch 15,360 of 4,096 tokens): 19.91 s per step.
//!
//! Measured when added: −22.8% (15.38 s); −22.4% (15.44 s) once the row stated the SwiGLU
//! recompute and BF16 moments, with which the plan fits in 80 GB (79.5 GiB; 80.8 with fp32
//! moments), as it did for DeepSeek. DualPipe puts both ends of the model on rank 0
//! (the embedding and first layer, the MTP module and the output head twice), which is
//! then the critical rank; with the head on the last rank instead, as a one-directional
//! pipeline would have it, the same plan was +14.7%.

mod common;
use common::print;

fn report() -> myriad_train::validate::ValidationReport {
    common::report_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/training-heldout-deepseek-v3.json"
    ))
    .expect("the DeepSeek-V3 held-out file is in the repository")
}

/// Ratchet just above the figure measured (−18.1% since the router's node limit, §2.1.2:
/// a token's experts come from 4 of 8 groups, one per node, so fewer tokens cross the
/// InfiniBand; −15.0% before, since the EP 64 ranks of a MoE layer wait for the
/// momentarily slowest clock, `speed_jitter`; −19.7% before that; −22.4% before the
/// per-layer eager MoE overhead), and the plan fits in the H800's 80 GB (79.6 GiB once the
/// peak holds the MoE layer its selective recompute rebuilds in the backward).
#[test]
fn deepseek_v3_pretraining_does_not_regress() {
    let r = report();
    print(&r);
    assert_eq!(r.summary.count, 1);
    common::assert_within(&r, 0.185, 0.185);
    assert_eq!(r.cases[0].fits, Some(true));
    // The report's layout is what ran: DualPipe with the MTP module.
    let c = &r.cases[0];
    assert!(
        c.notes.iter().any(|n| n.contains("MTP 1 + loss = 64")),
        "{:?}",
        c.notes
    );
    // The H800's own system (NVLink at 200 GB/s per direction), not `hgx-h100`, which also
    // lists the H800 and came first in the catalog.
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("scale_up: hgx-h800 (built for h800")),
        "{:?}",
        c.notes
    );
    // Its framework dispatches fp8 tokens (§3.3.2), unlike Megatron-Core's default.
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("fp8_dispatch: true (not given; DeepSeek-V3")),
        "{:?}",
        c.notes
    );
}

/// The bar for kept-aside data; not met (−18.1%: the mean of one case is over 10%).
#[test]
#[ignore = "kept-aside bar not met on DeepSeek-V3's pretraining: -17.9%"]
fn deepseek_v3_pretraining_meets_the_kept_aside_bar() {
    common::assert_kept_aside_bar(&report());
}
