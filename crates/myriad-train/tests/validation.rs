//! The accuracy bar on the public validation file (../shared/validation/training-public.json):
//! mean absolute error under 5% and no current (not superseded) case worse than 20%.

mod common;
use common::{notes_of, print};

fn report() -> Option<myriad_train::validate::ValidationReport> {
    common::report_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    ))
}

/// The bar (mean under 5%, no current case worse than 20%) is not met yet; this
/// test states it and runs with `cargo test -- --ignored`.
#[test]
#[ignore = "target not yet met: see the README's validation section"]
fn public_training_file_meets_the_accuracy_bar() {
    let Some(r) = report() else { return };
    print(&r);
    let s = &r.summary;
    assert_eq!(s.failed, 0, "every case must be predicted");
    assert!(
        s.mae < 0.05,
        "mean absolute error {:.2}% is above the 5% bar",
        100.0 * s.mae
    );
    assert!(
        s.worst_abs_error < 0.20,
        "worst case {} at {:.1}% is above the 20% bar",
        s.worst_id,
        100.0 * s.worst_abs_error
    );
}

/// A ratchet at the accuracy measured when it was last changed: any change to the model
/// that makes the public file worse fails here. Lower the numbers as the model improves.
#[test]
fn accuracy_does_not_regress() {
    let Some(r) = report() else { return };
    print(&r);
    let s = &r.summary;
    assert_eq!(s.failed, 0, "every case must be predicted");
    // 0.0910 before gpt-oss's 128-token sliding-window layers were modelled (2026-11-27):
    // the physics made its three rows faster (-33/-34/-12% to -35/-36/-17%), 9.04% -> 9.12%.
    // 0.0915 before the per-layer eager MoE overhead measured on the lent H100 and the
    // full-iteration CUDA-graph recipes of the 26.08 MoE rows (2026-11-27): 9.11% -> 8.35%;
    // 8.47% once archived Megatron-Bridge MoE rows take their release's recipe (the 25.11
    // Qwen3 H100 rows' EP overlap: +8.2% -> -16.4%); 8.52% once a row takes the config
    // variant whose plan it states (gpt-oss-120b on 64 GB200 ran V2, global batch 1280, with
    // HybridEP and the all-to-all overlap, not V1's all-to-all: -31.1% -> -37.5%).
    // 7.75% once ranks in lockstep (TP, CP, EP) wait for the momentarily slowest clock
    // (`speed_jitter`, measured on the lent H100 and H200); 7.55% once ZeRO-3's
    // data-parallel ranks count among them; 7.44% once NeMo's Nemotron-4 340B row keeps its
    // launcher config's bf16 optimizer state (ZeRO-2 +15.7% -> ZeRO-1 -4.5%); 7.32% once
    // the SC'21 pipelines send a TP slice per rank (Megatron-LM's scatter/gather); 7.28% once
    // combined 1F1B leaves the pipeline's warm-up and cool-down passes unpaired; 7.24% once
    // Megatron's fp8 runs dispatch bf16 tokens (`training.fp8_dispatch` false); 7.28% once
    // a bare "fp8" row takes its release's only fp8 recipe (Qwen3 30B on 16 H100 in 26.06:
    // HybridEP, +20.4% -> -24.1%); 7.13% once current scaling reads each fp8 input twice;
    // 7.24% once each fp8 tensor is quantised once (a linear's input and its output
    // gradient, two copies where the weight gradient needs a column-wise one) rather than
    // once per GEMM: the fp8 rows run 0.3-2.5% faster; 6.99% once eager MoE layers pay a
    // kernel per local expert (Transformer Engine's GroupedLinear) and full-graph ones one
    // grouped kernel: the Hopper MoE rows move up by 4-7 points. 6.98% before gpt-oss's
    // learned attention sinks cost their gradient in the backward pass (measured on the
    // lent H100 and H200): its three rows -32/-29/-17% -> -26/-25/-8%, 6.80%; 6.71% once
    // DeepEP and HybridEP move a token once to each rank holding any of its experts, not
    // once per expert (`step::ep_copies`; Qwen3 30B-A3B on 8 B200 +7.2% -> -0.1%); 6.60%
    // once the interleaved schedule's warm-up and cool-down wait for every one of the
    // p·v − 1 virtual-stage transfers, not p − 1 (GPT-3 175B and Nemotron-4 340B at VPP 12
    // move 0.6-1.8 points up, the Llama 3.1 405B rows at VPP 7-8 up to 1 point); 6.66%
    // once expert parallelism wider than DP (MoE parallel folding) spans its stage's ranks
    // rather than ranks of the next stage, and the pipeline's stride is a stage again
    // (Qwen3-235B on 256 H100, EP 32 over TP 2 x DP 16: +0.8% -> -7.2%); 6.65% once
    // recompute's peak holds the one layer its backward rebuilds (Llama 3 8B on 8 H100 fp8
    // block-recomputes 3 layers a chunk, not 2, to fit: -5.9% -> -5.1%).
    assert!(s.mae < 0.0670, "mean absolute error {:.2}%", 100.0 * s.mae);
    // The median was 4.65% before each fp8 tensor was quantised once (the fp8 rows, most
    // of them already predicted fast, run 0.3-2.5% faster).
    assert!(
        s.median_abs_error < 0.0450,
        "median {:.2}%",
        100.0 * s.median_abs_error
    );
    // Dense models with tensor/pipeline/data parallelism (everything but MoE and ZeRO-3).
    let dense: Vec<f64> = r
        .cases
        .iter()
        .filter(|c| !c.id.contains("zero3"))
        .filter(|c| {
            let moe = ["gpt-oss", "qwen3"].iter().any(|m| c.id.contains(m));
            !moe
        })
        .filter_map(|c| c.error.map(f64::abs))
        .collect();
    let dense_mae = dense.iter().sum::<f64>() / dense.len() as f64;
    eprintln!(
        "dense: {} cases, mae {:.2}%",
        dense.len(),
        100.0 * dense_mae
    );
    assert!(
        dense_mae < 0.0440,
        "dense-model mean absolute error {:.2}%",
        100.0 * dense_mae
    );
    // DeepSpeed ZeRO-3 (SC'21): per-tensor list collectives on the critical path.
    let z: Vec<f64> = r
        .cases
        .iter()
        .filter(|c| c.id.contains("zero3"))
        .filter_map(|c| c.error.map(f64::abs))
        .collect();
    let z_mae = z.iter().sum::<f64>() / z.len().max(1) as f64;
    eprintln!("zero-3: {} cases, mae {:.2}%", z.len(), 100.0 * z_mae);
    assert!(
        z.len() == 6 && z_mae < 0.160,
        "ZeRO-3 mean absolute error {:.2}%",
        100.0 * z_mae
    );
}

#[test]
fn older_releases_are_marked_superseded() {
    let Some(r) = report() else { return };
    let sup = |id: &str| r.cases.iter().find(|c| c.id == id).map(|c| c.superseded);
    // 25.11 is superseded by 26.06 for Qwen3-30B-A3B on 16 H100 in fp8.
    assert_eq!(
        sup("mb-25.11-qwen3_30b_a3b-dgx-h100-16gpu-fp8-cs"),
        Some(true)
    );
    assert_eq!(
        sup("mb-26.06-qwen3_30b_a3b-dgx-h100-16gpu-fp8"),
        Some(false)
    );
    // The same benchmark however the source spells the model: NeMo 24.07's "LLAMA3-8B" on
    // eight H100 in fp8 is Megatron-Bridge 25.09's "Llama 3 8B".
    assert_eq!(sup("nemo-24.07-llama3-8b-8xh100"), Some(true));
    assert_eq!(sup("mb-25.09-llama3_8b-dgx-h100-8gpu-fp8"), Some(false));
    // Rows with no other release of the same benchmark are current.
    assert_eq!(sup("megatron-sc21-t1-1.7b"), Some(false));
    assert_eq!(sup("nemo-24.07-llama2-70b-64xh100"), Some(false));
}

/// Published runs outside the public file (`validation/training-heldout.json`, in this
/// repository; nothing in the model was tuned on them): the bar for measurements kept
/// aside, mean absolute error under 10% and no case worse than 25%.
#[test]
fn held_out_runs_meet_the_kept_aside_bar() {
    let r = common::report_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/training-heldout.json"
    ))
    .expect("the held-out file is in the repository");
    print(&r);
    assert!(r.summary.count >= 3);
    common::assert_kept_aside_bar(&r);
}

#[test]
fn zero3_before_2022_is_gathered_on_demand() {
    let Some(r) = report() else { return };
    let notes = |id: &str| notes_of(&r, id);
    // SC'21 (arXiv 2104): DeepSpeed 0.3 synchronised before every gather.
    assert!(notes("megatron-sc21-t2-zero3-174.6b-1536gpu").contains("zero3_prefetch: false"));
    // ... and recomputed every layer or none: selective and block recompute came later.
    for id in [
        "megatron-sc21-t2-zero3-174.6b-1536gpu",
        "megatron-sc21-t2-zero3-529.6b-640gpu",
    ] {
        let n = notes(id);
        assert!(
            n.contains("recompute: full (not given; no-recompute does not fit"),
            "{n}"
        );
        assert!(
            !n.contains("recompute: selective") && !n.contains("(block)"),
            "{n}"
        );
    }
    // Megatron-Bridge 26.04 with Megatron FSDP prefetches.
    let n = notes("mb-26.04.01-llama3_70b-dgx-gb200-64gpu-fp8");
    assert!(n.contains("ZeRO-3") && !n.contains("zero3_prefetch"), "{n}");
}

/// Sequence parallelism (Korthikanti et al., arXiv:2205.05198) came to Megatron-LM in 2022:
/// an SC'21 row with TP runs without it (norms and dropouts whole on every TP rank, TP
/// all-reduces), a later row with TP gets it unless the case says otherwise.
#[test]
fn sequence_parallel_before_2022_is_off() {
    let Some(r) = report() else { return };
    let notes = |id: &str| notes_of(&r, id);
    let old = notes("megatron-sc21-t2-ptd-174.6b-768gpu");
    assert!(old.contains("sequence_parallel: false"), "{old}");
    assert!(!old.contains("sequence_parallel: true"), "{old}");
    let new = notes("dgxc-35a9aec-nemotron4_15b-nemo-megatron-bf16-h100-16");
    assert!(new.contains("sequence_parallel: true"), "{new}");
}

/// The loss kernel follows the source's framework: Megatron-Bridge's performance recipes
/// run Transformer Engine's, sources before 2024 Megatron's unfused one, the rest the
/// Megatron-Core fused one (the default, no note).
#[test]
fn cross_entropy_kernel_follows_the_framework() {
    let Some(r) = report() else { return };
    let notes = |id: &str| notes_of(&r, id);
    let n = notes("mb-25.09-llama3_8b-dgx-h100-8gpu-fp8");
    assert!(n.contains("cross_entropy: te"), "{n}");
    let n = notes("megatron-sc21-t1-1.7b");
    assert!(n.contains("cross_entropy: unfused"), "{n}");
    let n = notes("dgxc-35a9aec-nemotron4_15b-nemo-megatron-bf16-h100-16");
    assert!(!n.contains("cross_entropy"), "{n}");
}

/// NVIDIA's benchmark recipes (Megatron-Bridge, NeMo, DGX Cloud) reduce gradients in bf16;
/// Megatron-LM papers keep Megatron's default (fp32 for bf16, fp16 for fp16, no note).
#[test]
fn gradient_reduction_follows_the_recipe() {
    let Some(r) = report() else { return };
    let notes = |id: &str| notes_of(&r, id);
    for id in [
        "mb-25.09-llama3_8b-dgx-h100-8gpu-fp8",
        "dgxc-35a9aec-nemotron4_340b-nemo-megatron-bf16-h100-128",
    ] {
        let n = notes(id);
        assert!(n.contains("grad_reduce_in_fp32: false"), "{n}");
    }
    let n = notes("korthikanti-t5-22b-full-recompute");
    assert!(!n.contains("grad_reduce_in_fp32"), "{n}");
}

/// Megatron-Bridge runs Megatron-Core, which shards the optimizer (distributed optimizer,
/// ZeRO-1) or everything (Megatron FSDP, ZeRO-3) but has no ZeRO-2: its rows never get one,
/// while NeMo 1.x rows (Apex `DistributedFusedAdam`, which shards gradients too) may.
#[test]
fn optimizer_sharding_follows_the_framework() {
    let Some(r) = report() else { return };
    for c in r.cases.iter().filter(|c| c.id.starts_with("mb-")) {
        let n = c.notes.join(" | ");
        assert!(!n.contains("ZeRO-2"), "{}: {n}", c.id);
    }
    // Data parallelism 8 on one H100 node: ZeRO-1 without recompute does not fit, and the
    // cheaper ZeRO-2 plan is no longer on offer.
    let n = notes_of(&r, "mb-25.09-llama3_8b-dgx-h100-8gpu-fp8");
    assert!(
        n.contains("optimizer sharding: ZeRO-1") || n.contains("optimizer sharding: ZeRO-3"),
        "{n}"
    );
    // A NeMo 1.x row may still get ZeRO-2: the NeMo 24.07 Nemotron-4 340B row with its
    // optimizer state in fp32 (not its recipe's bf16) fits no ZeRO-1 plan without
    // recompute at data parallelism 2, and sharding the gradients too is the cheaper way.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    );
    let Some(cases) = common::cases_of(path) else {
        return;
    };
    let mut case = cases
        .into_iter()
        .find(|c| c.id == "nemo-24.07-nemotron-340b-128xh100")
        .unwrap();
    case.training.bf16_optimizer_moments = Some(false);
    case.training.bf16_master_weights = Some(false);
    let (_, notes) = myriad_train::validate::explain(&case, myriad_catalog::catalog()).unwrap();
    let n = notes.join(" | ");
    assert!(n.contains("optimizer sharding: ZeRO-2"), "{n}");
}

/// DGX Cloud's v24.11.1 recipes (commit 35a9aec) store fp8 parameters in fp8 runs (all three
/// recipe families), and the Nemotron-4 340B one keeps its whole optimizer state in bf16:
/// with that, its 128-GPU row (data parallelism 2) fits with the distributed optimizer and
/// no recompute, as the flat measured step times from 128 to 2,048 GPUs say it ran.
#[test]
fn dgx_cloud_rows_take_their_recipes_settings() {
    let Some(r) = report() else { return };
    for id in [
        "dgxc-35a9aec-gpt3_175b-nemo-megatron-fp8-h100-256",
        "dgxc-35a9aec-llama3_8b-nemo-megatron-fp8-h100-32",
        "dgxc-35a9aec-nemotron4_15b-nemo-megatron-fp8-h100-16",
    ] {
        let n = notes_of(&r, id);
        assert!(n.contains("fp8_params: true"), "{id}: {n}");
    }
    let n = notes_of(&r, "dgxc-35a9aec-gpt3_175b-nemo-megatron-bf16-h100-1024");
    assert!(!n.contains("fp8_params"), "{n}");
    let n = notes_of(
        &r,
        "dgxc-35a9aec-nemotron4_340b-nemo-megatron-bf16-h100-128",
    );
    assert!(n.contains("bf16_master_weights: true"), "{n}");
    assert!(n.contains("optimizer sharding: ZeRO-1"), "{n}");
    assert!(n.contains("recompute: no-recompute (not given"), "{n}");
    let n = notes_of(&r, "dgxc-35a9aec-nemotron4_15b-nemo-megatron-bf16-h100-16");
    assert!(!n.contains("bf16_master_weights"), "{n}");
}

/// Megatron-LM's distributed optimizer (ZeRO-1) came in 2022: the SC'21 PTD-P runs keep the
/// whole optimizer state on every replica, while its ZeRO-3 comparison runs still shard
/// everything (DeepSpeed).
#[test]
fn optimizer_sharding_before_2022_is_none_or_zero3() {
    let Some(r) = report() else { return };
    for id in [
        "megatron-sc21-t1-1008.0b",
        "megatron-sc21-t2-ptd-174.6b-384gpu",
    ] {
        let n = notes_of(&r, id);
        assert!(n.contains("optimizer sharding: none"), "{id}: {n}");
    }
    let n = notes_of(&r, "megatron-sc21-t2-zero3-174.6b-384gpu");
    assert!(n.contains("optimizer sharding: ZeRO-3"), "{n}");
    // A 2022 source may shard the optimizer state alone.
    let n = notes_of(&r, "dgxc-35a9aec-llama3_8b-nemo-megatron-fp8-h100-32");
    assert!(n.contains("optimizer sharding: ZeRO-1"), "{n}");
}

/// Megatron-LM reduced gradients after the backward pass until `--overlap-grad-reduce`
/// (2023); NeMo's recipes overlapped them through Apex's distributed Adam.
#[test]
fn gradient_reduction_before_2023_is_not_overlapped() {
    let Some(r) = report() else { return };
    let n = notes_of(&r, "megatron-sc21-t1-1.7b");
    assert!(n.contains("overlap_grad_reduce: false"), "{n}");
    let n = notes_of(&r, "nemo-24.07-llama3-8b-8xh100");
    assert!(!n.contains("overlap_grad_reduce"), "{n}");
    let n = notes_of(&r, "dgxc-35a9aec-llama3_8b-nemo-megatron-fp8-h100-32");
    assert!(!n.contains("overlap_grad_reduce"), "{n}");
}

/// Megatron-LM of 2021-2022 split pipeline sends over the TP ranks when sequence
/// parallelism was off (SC'21 §4.1); Megatron-Core dropped it, and sequence-parallel runs
/// send a slice anyway.
#[test]
fn pipeline_scatter_gather_follows_the_era() {
    let Some(r) = report() else { return };
    let n = notes_of(&r, "megatron-sc21-t1-1008.0b");
    assert!(n.contains("pp_scatter_gather: true"), "{n}");
    // Tensor parallelism without a pipeline: nothing to scatter.
    let n = notes_of(&r, "megatron-sc21-t1-18.4b");
    assert!(!n.contains("pp_scatter_gather"), "{n}");
    // A 2024 source (Megatron-Core): whole tensors.
    let n = notes_of(&r, "dgxc-35a9aec-gpt3_175b-nemo-megatron-bf16-h100-1024");
    assert!(!n.contains("pp_scatter_gather"), "{n}");
}

#[test]
fn nemo_summary_nemotron_340b_takes_the_launchers_bf16_optimizer_state() {
    // NeMo 24.07's performance summary ran the NeMo Framework Launcher's Nemotron-4 340B
    // config (optim.dtype bf16): with the state in bf16 the distributed optimizer (ZeRO-1)
    // fits 128 H100s at TP 8 x PP 8 x DP 2 without recompute, as it did for the DGX Cloud
    // run of the same plan, so the gradients are not sharded micro-batch by micro-batch.
    let Some(r) = report() else { return };
    let n = notes_of(&r, "nemo-24.07-nemotron-340b-128xh100");
    assert!(n.contains("bf16_master_weights: true"), "{n}");
    assert!(n.contains("optimizer sharding: ZeRO-1"), "{n}");
    // The launcher's other configs leave the optimizer state in fp32.
    let n = notes_of(&r, "nemo-24.07-llama2-70b-64xh100");
    assert!(!n.contains("bf16_master_weights"), "{n}");
    // Same plan, same hardware, same precision: the two runs measured 3.14 and 3.16 s, and
    // the predictions now agree within 2%.
    let step = |id: &str| {
        r.cases
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.predicted_step_time_s)
            .unwrap()
    };
    let (nemo, dgxc) = (
        step("nemo-24.07-nemotron-340b-128xh100"),
        step("dgxc-35a9aec-nemotron4_340b-nemo-megatron-fp8-h100-128"),
    );
    assert!((nemo / dgxc - 1.0).abs() < 0.02, "{nemo} {dgxc}");
}

/// The summary's signed mean is the bias of the per-case errors: between −MAE and +MAE, and
/// per group the count-weighted groups give it back.
#[test]
fn signed_mean_error_is_the_bias_of_the_cases() {
    let Some(r) = report() else { return };
    let s = &r.summary;
    let errs: Vec<f64> = r.cases.iter().filter_map(|c| c.error).collect();
    let mean = errs.iter().sum::<f64>() / errs.len() as f64;
    assert!((s.mean_error - mean).abs() < 1e-12);
    assert!(s.mean_error.abs() <= s.mae + 1e-12);
    let from_groups: f64 = s
        .groups
        .iter()
        .map(|g| g.mean_error * g.count as f64)
        .sum::<f64>()
        / s.count as f64;
    assert!((from_groups - s.mean_error).abs() < 1e-12);
}

/// A case whose measured step time is zero, negative or not finite has nothing to compare
/// against: it is reported as failed with the field, not scored at an error of ±inf (which
/// made the file's mean absolute error "inf%").
#[test]
fn a_case_without_a_positive_measured_time_fails_with_the_field() {
    let Some(mut cases) = common::cases_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    )) else {
        return;
    };
    cases.truncate(2);
    cases[0].measured.step_time_s = 0.0;
    let r = myriad_train::validate::validate(&cases, myriad_catalog::catalog());
    let f = r.cases[0].failure.as_deref().unwrap_or_default();
    assert!(
        f.contains("measured.step_time_s: 0 is not a positive"),
        "{f}"
    );
    assert!(r.cases[0].error.is_none());
    assert_eq!(r.summary.failed, 1);
    assert_eq!(r.summary.count, 1);
    assert!(r.summary.mae.is_finite());
}

/// A case's `system` block out of range fails the case with the field path of the
/// validation format: a count of 0 was reported as `cluster.count` (a scenario field the
/// file does not have), an unknown accelerator without its field, and a zero node or domain
/// size, a negative NIC rate or a fabric other than infiniband/roce (`ib`) were taken
/// silently (the case scored with another system than stated).
#[test]
fn a_case_with_an_impossible_system_fails_with_the_field() {
    let Some(mut cases) = common::cases_of(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    )) else {
        return;
    };
    cases.truncate(1);
    let cat = myriad_catalog::catalog();
    let fail = |edit: &dyn Fn(&mut myriad_scenario::validation::ValidationSystem)| {
        let mut c = cases.clone();
        edit(&mut c[0].system);
        let r = myriad_train::validate::validate(&c, cat);
        r.cases[0].failure.clone().unwrap_or_default()
    };
    assert_eq!(
        fail(&|s| s.count = 0),
        "system.count: must be at least 1, got 0"
    );
    assert_eq!(
        fail(&|s| s.per_node = Some(0)),
        "system.per_node: must be at least 1, got 0 (leave it out or null if unknown)"
    );
    assert_eq!(
        fail(&|s| s.scale_up_domain = Some(0)),
        "system.scale_up_domain: must be at least 1, got 0 (leave it out or null if unknown)"
    );
    assert_eq!(
        fail(&|s| s.scale_out_gbps_per_accelerator = Some(-400.0)),
        "system.scale_out_gbps_per_accelerator: -400 is not a positive number of Gb/s"
    );
    assert_eq!(
        fail(&|s| s.scale_out_fabric = Some("ib".into())),
        "system.scale_out_fabric: `ib` is not `infiniband` or `roce` (or null)"
    );
    let f = fail(&|s| s.accelerator = "h1000".into());
    assert!(
        f.starts_with("system.accelerator: `h1000` is not a known accelerator; closest: "),
        "{f}"
    );
    // The case as stated still scores.
    let r = myriad_train::validate::validate(&cases, cat);
    assert!(r.cases[0].failure.is_none() && r.cases[0].error.is_some());
}

/// The validator's recompute notes use the label `train`, `search` and `plan` print
/// (`plan::recompute_label`): they said `recompute: selective layernorm, moe_act` and
/// `recompute: full on every layer` where the rest of the CLI says
/// `selective(layernorm+moe_act)` and `full`.
#[test]
fn recompute_notes_use_the_one_label() {
    let Some(r) = report() else { return };
    let n = notes_of(&r, "mb-26.04.01-gpt-oss-120b-dgx-b200-64gpu-bf16");
    assert!(
        n.contains("recompute: selective(layernorm+moe_act) (not given; recompute_modules in Megatron-Bridge v0.4.1 recipe GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2)"),
        "{n}"
    );
    let n = notes_of(&r, "megatron-sc21-t2-zero3-174.6b-384gpu");
    assert!(
        n.contains("recompute: full (not given; no-recompute does not fit, and a source from before 2022 had no selective or partial recompute)"),
        "{n}"
    );
    // Every recompute note, whoever filled it, names one of the label's forms.
    let mut seen = 0;
    for c in &r.cases {
        for note in c.notes.iter().filter_map(|n| n.strip_prefix("recompute: ")) {
            // The label ends at its reason (` (not given; …)`) or a block's layers (`, the
            // first 3 of 32 layers …`).
            let label = note.split(" (").next().unwrap().split(',').next().unwrap();
            let ok = label == "no-recompute"
                || label == "full"
                || label
                    .strip_prefix("full ")
                    .and_then(|p| p.strip_suffix('%'))
                    .is_some_and(|p| p.parse::<u32>().is_ok())
                || label
                    .strip_prefix("selective(")
                    .and_then(|m| m.strip_suffix(')'))
                    .is_some_and(|m| {
                        m.split('+').all(|x| {
                            !x.is_empty() && x.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        })
                    });
            assert!(ok, "{}: `{label}` in `recompute: {note}`", c.id);
            seen += 1;
        }
    }
    assert!(seen >= 4, "{seen} recompute notes");
}
