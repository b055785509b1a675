//! Impossible plans are reported with their numbers; the step model's invariants hold.

use myriad_scenario::parse_scenario;

fn setup(
    training: &str,
) -> (
    myriad_scenario::Scenario,
    myriad_cluster::BuiltCluster,
    myriad_model::Transformer,
) {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 1024, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: gpt3-175b}}\ntraining: {training}\n"
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    (s, c, m)
}

fn err(training: &str) -> String {
    let (s, c, m) = setup(training);
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024)
        .unwrap_err()
        .to_string()
}

#[test]
fn impossible_plans_name_the_numbers() {
    assert_eq!(
        err("{tp: 16, pp: 8, dp: 8}"),
        "training.tp: TP 16 is larger than the scale-up domain of 8"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 8}"),
        "training.dp: tp*pp*cp*dp = 8*8*1*8 = 512 != 1024 accelerators"
    );
    assert_eq!(
        err("{tp: 8, pp: 64, dp: 2}"),
        "training.pp: layers 96 not divisible by PP*VPP = 64*1 = 64"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, vpp: 5}"),
        "training.vpp: layers 96 not divisible by PP*VPP = 8*5 = 40"
    );
    // PP*VPP past u32 once wrapped to 0 in the message ("16*268435456 = 0").
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, vpp: 2147483648}"),
        "training.vpp: PP*VPP = 8*2147483648 = 17179869184 is more than the 98 pipeline slots (layers 96 + embedding + loss)"
    );
    // EP may divide DP or, folded, the stage's ranks: the message names both (it said only
    // "ep 3 does not divide dp 16").
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, ep: 3}"),
        "training.ep: EP 3 divides neither DP 16 nor the TP*CP*DP = 8*1*16 = 128 ranks of a pipeline stage"
    );
    // TP*PP*CP*DP in u64 wrapped: 4294967295^4 was shown as 18446744056529682433.
    assert_eq!(
        err("{tp: 4294967295, pp: 4294967295, cp: 4294967295, dp: 4294967295}"),
        "training.dp: tp*pp*cp*dp = 4294967295*4294967295*4294967295*4294967295 = 340282366604025813516997721482669850625 != 1024 accelerators"
    );
    // TP*PP*CP without dp past u64 (2^96 - ...) wrapped too.
    assert_eq!(
        err("{tp: 4294967295, pp: 4294967295, cp: 4294967295}"),
        "training.dp: tp*pp*cp = 79228162458924105385300197375 does not divide the 1024 accelerators"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, global_batch: 100, micro_batch: 1}"),
        "training.global_batch: global batch 100 not divisible by micro_batch*DP = 1*16 = 16"
    );
}

/// A token budget below one step is an error naming both fields and the numbers (a global
/// batch of 2^40 sequences used to be timed as one step of 43,566 days).
/// TP·PP·CP·DP = 2^64 + 1,024 wrapped in u64 to the 1,024 accelerators of the cluster,
/// and the plan was accepted and estimated (CP 671,170,565 on 1,024 H100).
#[test]
fn a_plan_whose_rank_product_wraps_u64_is_rejected() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b, layers: 109, seq_len: 1342341130}\ntraining: {tp: 1, pp: 109, cp: 671170565, dp: 252150784}\n";
    assert_eq!(
        1u128 * 109 * 671_170_565 * 252_150_784,
        (1u128 << 64) + 1024
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let e = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "training.dp: tp*pp*cp*dp = 1*109*671170565*252150784 = 18446744073709552640 != 1024 accelerators"
    );
}

#[test]
fn one_step_beyond_the_token_budget_is_an_error() {
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, global_batch: 1099511627776, tokens: 15.0e12}"),
        "training.global_batch: one step of 1099511627776 sequences of 2048 tokens is 2251799813685248 tokens, more than the budget training.tokens: 15000000000000 tokens; use a global batch of at most 7324218750 sequences or a larger training.tokens"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, tokens: 1.0e4}"),
        "training.global_batch: not given, dp * micro_batch: one step of 16 sequences of 2048 tokens is 32768 tokens, more than the budget training.tokens: 10000 tokens; use a global batch of at most 4 sequences or a larger training.tokens"
    );
    assert!(
        err("{tp: 8, pp: 8, dp: 16, global_batch: 16, tokens: 1000}")
            .ends_with("training.tokens is less than one sequence of 2048 tokens")
    );
    // Exactly one step is a run.
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 16, tokens: 32768}");
    assert!(myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).is_ok());
}

#[test]
fn the_interleaved_schedule_needs_at_least_pp_micro_batches() {
    // 2048 / (64 × 32) = 1 micro-batch on 8 stages: Megatron-Core raises for fewer than PP.
    assert_eq!(
        err("{tp: 4, pp: 8, dp: 32, vpp: 12, global_batch: 2048, micro_batch: 64}"),
        "training.vpp: the interleaved schedule (VPP 12) needs at least PP = 8 micro-batches per step, got 1 (global batch 2048 / (micro_batch 64 * DP 32))"
    );
    // 12 micro-batches on 8 stages: the last group of the interleaved schedule would hold 4.
    assert_eq!(
        err("{tp: 4, pp: 8, dp: 32, vpp: 12, global_batch: 384, micro_batch: 1}"),
        "training.vpp: the interleaved schedule (VPP 12) runs micro-batches in groups of 8 (PP, Megatron-Core's default microbatch_group_size_per_vp_stage); 12 per step (global batch 384 / (micro_batch 1 * DP 32)) leave a last group of 4 < PP = 8 (set training.vpp_group, e.g. to 12)"
    );
    // One group of all 12 runs, holding every micro-batch in flight on the first stage.
    let (s, c, m) = setup(
        "{tp: 4, pp: 8, dp: 32, vpp: 12, global_batch: 384, micro_batch: 1, vpp_group: 12, recompute: full}",
    );
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert_eq!(t.plan.vpp_group, 12);
    // (The peak is the last stage, which holds GPT-3's tied embedding copy and the logits.)
    let p = &t.plan;
    let first = myriad_train::plan::in_flight_micro_batches(
        p.schedule,
        p.pp,
        p.vpp,
        p.vpp_group,
        0,
        p.micro_batches(),
    );
    assert_eq!(first, 12.0);
    assert_eq!(
        err("{tp: 4, pp: 8, dp: 32, vpp: 12, global_batch: 384, micro_batch: 1, vpp_group: 7}"),
        "training.vpp_group: vpp_group 7 must lie between PP = 8 and the 12 micro-batches per step"
    );
    assert_eq!(
        err("{tp: 4, pp: 8, dp: 32, vpp: 12, global_batch: 640, micro_batch: 1, vpp_group: 9}"),
        "training.vpp_group: the interleaved schedule (VPP 12) runs micro-batches in groups of 9; 20 per step (global batch 640 / (micro_batch 1 * DP 32)) leave a last group of 2 < PP = 8 (set training.vpp_group, e.g. to 20)"
    );
    assert_eq!(
        err("{tp: 4, pp: 8, dp: 32, global_batch: 384, micro_batch: 1, vpp_group: 12}"),
        "training.vpp_group: applies only to the interleaved schedule (1F1B with PP > 1 and VPP > 1); leave it out"
    );
    // The same batch without interleaving is a (bubble-heavy) 1F1B plan.
    let (s, c, m) =
        setup("{tp: 4, pp: 8, dp: 32, global_batch: 2048, micro_batch: 64, recompute: full}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    // One micro-batch: no stage holds more than one in flight.
    assert_eq!(t.estimate.memory.in_flight_micro_batches, 1.0);
}

#[test]
fn in_flight_micro_batches_follow_megatron_warm_up() {
    use myriad_scenario::PipelineSchedule::{Dualpipe, Gpipe, OneFOneB};
    use myriad_train::plan::in_flight_micro_batches as f;
    // Interleaved, p = 8, v = 12, m = 64: stage s holds 2(p-s-1) + (v-1)p + 1 chunk
    // activations, over v: (14 + 88 + 1)/12 on the first stage, (0 + 88 + 1)/12 on the last.
    assert!((f(OneFOneB, 8, 12, 8, 0, 64) - 103.0 / 12.0).abs() < 1e-12);
    assert!((f(OneFOneB, 8, 12, 8, 7, 64) - 89.0 / 12.0).abs() < 1e-12);
    assert!((f(OneFOneB, 8, 12, 8, 3, 64) - 97.0 / 12.0).abs() < 1e-12); // 2·4 + 88 + 1
                                                                         // First stage: p + (p-1)/v (Korthikanti et al. 2022).
    assert!((f(OneFOneB, 8, 12, 8, 0, 64) - (8.0 + 7.0 / 12.0)).abs() < 1e-12);
    // m == p: the first stage's warm-up (30 + 48) covers all 64 chunk forwards, so it holds
    // every micro-batch (16, not the 16 + 15/4 of the uncapped count); the last stage
    // 48 + 1 chunks.
    assert_eq!(f(OneFOneB, 16, 4, 16, 0, 16), 16.0);
    assert_eq!(f(OneFOneB, 16, 4, 16, 15, 16), 49.0 / 4.0);
    // Plain 1F1B: p - s, at most m.
    assert_eq!(f(OneFOneB, 8, 1, 8, 0, 64), 8.0);
    assert_eq!(f(OneFOneB, 8, 1, 8, 7, 64), 1.0);
    assert_eq!(f(OneFOneB, 8, 1, 8, 0, 3), 3.0);
    // GPipe holds every micro-batch; DualPipe p + 1, at most two per micro-batch.
    assert_eq!(f(Gpipe, 8, 1, 8, 0, 32), 32.0);
    assert_eq!(f(Dualpipe, 8, 1, 8, 0, 32), 9.0);
    assert_eq!(f(Dualpipe, 8, 1, 8, 0, 2), 4.0);
    // A larger group warms up more: p = 4, v = 2, group 6, m = 6: stage 0 runs 2·3 + 6
    // chunk forwards, all 12 of the step, so it holds all 6 micro-batches (4 + 3/2 with
    // the default group of 4).
    assert_eq!(f(OneFOneB, 4, 2, 6, 0, 6), 6.0);
    assert_eq!(f(OneFOneB, 4, 2, 4, 0, 8), 11.0 / 2.0);
    // Never more than the step's micro-batches, on any stage of any schedule.
    for sched in [OneFOneB, Gpipe, Dualpipe] {
        for (p, v) in [(4, 1), (8, 1), (8, 2), (8, 12), (16, 4)] {
            for m in [1u64, 2, 7, 8, 16, 64] {
                for s in 0..p {
                    let x = f(sched, p, v, p, s, m);
                    let cap = if sched == Dualpipe { 2 * m } else { m };
                    assert!(
                        x <= cap as f64 + 1e-12 && x >= 1.0 / v as f64,
                        "{sched:?} p{p} v{v} s{s} m{m}: {x}"
                    );
                }
            }
        }
    }
}

#[test]
fn heads_must_divide_by_tp() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: gpt3-175b, heads: 100, kv_heads: 100, hidden: 12800}\ntraining: {tp: 8, dp: 1}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let e = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8).unwrap_err();
    assert_eq!(
        e.to_string(),
        "training.tp: heads 100 not divisible by TP 8"
    );
}

#[test]
fn breakdown_adds_up_and_more_data_parallelism_is_faster() {
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1, vpp: 3}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let e = &t.estimate;
    assert!((e.breakdown.total() - e.step_time_s).abs() < 1e-9 * e.step_time_s);
    assert!(e.mfu > 0.2 && e.mfu < 0.8, "mfu {}", e.mfu);
    // Half the DP (same global batch) takes longer per step.
    let (s2, c2, m2) = setup(
        "{tp: 8, pp: 8, dp: 8, global_batch: 1536, micro_batch: 1, vpp: 3, accelerators: 512}",
    );
    let t2 = myriad_train::train(s2.training.as_ref().unwrap(), &m2, &c2, 512).unwrap();
    assert!(t2.estimate.step_time_s > 1.8 * e.step_time_s);
}

#[test]
fn does_not_fit_is_reported_with_numbers() {
    // GPT-3 175B with TP 1, PP 1 and no sharded optimizer cannot fit in 80 GiB.
    let (s, c, m) = setup("{tp: 1, pp: 1, dp: 1024, global_batch: 1024, micro_batch: 1, distributed_optimizer: false, recompute: none}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert!(!t.estimate.fits);
    // weights 2 + grads 4 + optimizer 12 bytes per parameter = 18 × 174.6e9 B > 2.8 TiB
    assert!(t.estimate.memory.total_gib > 18.0 * 174e9 / 1024f64.powi(3));
}

#[test]
fn recompute_is_chosen_to_fit_when_not_given() {
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert!(t.estimate.fits);
    assert!(
        t.notes.iter().any(|n| n.starts_with("recompute:")),
        "{:?}",
        t.notes
    );
}

#[test]
fn unsupported_precision_is_an_error() {
    let text = "format: myriad/1\ncluster: {accelerator: a100-sxm-80gb, count: 8}\nmodel: {preset: llama3-8b}\ntraining: {precision: fp8, dp: 8}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let e = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8).unwrap_err();
    assert!(
        e.to_string().starts_with("training.precision: fp8 is not supported by a100-sxm-80gb (it has fp64, tf32, bf16, fp16"),
        "{e}"
    );
}

#[test]
fn expected_maximum_of_normals_matches_order_statistics() {
    use myriad_train::step::expected_max_std_normal as z;
    assert_eq!(z(1), 0.0);
    // E[max of 2] = 1/sqrt(pi) = 0.5642 exactly; Blom's form is within 5%.
    assert!((z(2) / (1.0 / std::f64::consts::PI.sqrt()) - 1.0).abs() < 0.05);
    // Tabulated expected maxima (Harter 1961): n = 10 -> 1.5388, n = 100 -> 2.5076.
    assert!((z(10) / 1.5388 - 1.0).abs() < 0.01, "{}", z(10));
    assert!((z(100) / 2.5076 - 1.0).abs() < 0.01, "{}", z(100));
    let mut last = 0.0;
    for n in [2, 8, 64, 1024, 16384, 131072] {
        assert!(z(n) > last);
        last = z(n);
    }
}

#[test]
fn the_slowest_chip_paces_compute_and_not_communication() {
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1, vpp: 3}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let mut even = c.clone();
    even.accelerator.efficiency.speed_sigma = 0.0;
    let t0 = myriad_train::train(s.training.as_ref().unwrap(), &m, &even, 1024).unwrap();
    let pace = myriad_train::step::straggler_pace(&c.accelerator, 1024);
    assert!(pace > 1.02 && pace < 1.06, "{pace}");
    let (a, b) = (&t.estimate.breakdown, &t0.estimate.breakdown);
    assert!((a.forward_s / b.forward_s - pace).abs() < 1e-9);
    assert!((a.backward_s / b.backward_s - pace).abs() < 1e-9);
    assert!((a.recompute_s - pace * b.recompute_s).abs() < 1e-9);
    assert!((a.pp_comm_s - b.pp_comm_s).abs() < 1e-12);
    assert!(t.estimate.step_time_s > t0.estimate.step_time_s);
}

/// Ranks that synchronise within every layer (here the 8 TP ranks) wait at each collective
/// for the one whose clock the power controller holds lowest at that moment: compute runs
/// `1 + speed_jitter · E[max of 8 normals]` longer than with a steady clock (H100: 0.030 x
/// 1.43 = 4.3%), communication not at all; ranks that meet only once a step (data
/// parallelism alone) pay nothing.
#[test]
fn ranks_in_lockstep_wait_for_the_momentarily_slowest() {
    let plan = "{tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1, vpp: 3}";
    let (s, c, m) = setup(plan);
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let mut steady = c.clone();
    steady.accelerator.efficiency.speed_jitter = Some(0.0);
    let t0 = myriad_train::train(s.training.as_ref().unwrap(), &m, &steady, 1024).unwrap();
    let wait = myriad_train::step::sync_jitter_pace(&c.accelerator, 8);
    let z8 = myriad_train::step::expected_max_std_normal(8);
    assert!((wait - (1.0 + 0.030 * z8)).abs() < 1e-12, "{wait}");
    assert!(wait > 1.04 && wait < 1.05, "{wait}");
    let (a, b) = (&t.estimate.breakdown, &t0.estimate.breakdown);
    assert!((a.forward_s / b.forward_s - wait).abs() < 1e-9);
    assert!((a.backward_s / b.backward_s - wait).abs() < 1e-9);
    // The estimate says so: 8 ranks in lockstep, and the slowest of 1,024 chips.
    let pace = &t.estimate.pace;
    assert_eq!(pace.lockstep_ranks, 8);
    assert_eq!(pace.lockstep, wait);
    let slowest = myriad_train::step::straggler_pace(&c.accelerator, 1024);
    assert_eq!(pace.slowest_chip, slowest);
    assert!((a.tp_comm_s - b.tp_comm_s).abs() < 1e-12);
    assert!((a.optimizer_s - b.optimizer_s).abs() < 1e-12);
    // Data parallelism alone: no rank waits for another within a layer, unless ZeRO-3
    // gathers every layer's parameters across all of them.
    let run = |zero: u32, jitter: Option<f64>| {
        let (s, mut c, m) = setup(&format!(
            "{{tp: 1, pp: 1, dp: 1024, global_batch: 1024, micro_batch: 1, zero_stage: {zero}, recompute: full}}"
        ));
        if let Some(j) = jitter {
            c.accelerator.efficiency.speed_jitter = Some(j);
        }
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap()
    };
    let (dp, dp0) = (run(1, None), run(1, Some(0.0)));
    assert_eq!(dp.estimate.pace.lockstep_ranks, 1);
    assert_eq!(
        dp.estimate.breakdown.forward_s,
        dp0.estimate.breakdown.forward_s
    );
    let (z3, z30) = (run(3, None), run(3, Some(0.0)));
    assert_eq!(z3.estimate.pace.lockstep_ranks, 1024);
    let wait = myriad_train::step::sync_jitter_pace(&c.accelerator, 1024);
    let (a, b) = (&z3.estimate.breakdown, &z30.estimate.breakdown);
    assert!((a.forward_s / b.forward_s - wait).abs() < 1e-9);
}

#[test]
fn block_recompute_sits_between_none_and_full() {
    // GPT-3 175B, TP8 PP8 VPP3: 96 / (8*3) = 4 layers per chunk.
    let base = "tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1, vpp: 3";
    let run = |extra: &str| {
        let (s, c, m) = setup(&format!("{{{base}, {extra}}}"));
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024)
            .unwrap()
            .estimate
    };
    let none = run("recompute: none");
    let full = run("recompute: full");
    let all4 = run("recompute: full, recompute_layers: 4");
    assert_eq!(full.step_time_s, all4.step_time_s);
    assert_eq!(full.memory.total_gib, all4.memory.total_gib);
    let mut last = (none.step_time_s, none.memory.total_gib);
    for n in 1..=4 {
        let e = run(&format!("recompute: full, recompute_layers: {n}"));
        assert!(e.step_time_s > last.0 && e.memory.total_gib < last.1, "{n}");
        // Recompute time is the recomputed share of the forward pass.
        let share = e.breakdown.recompute_s / full.breakdown.recompute_s;
        assert!((share - n as f64 / 4.0).abs() < 1e-9, "{n}: {share}");
        last = (e.step_time_s, e.memory.total_gib);
    }
}

#[test]
fn recompute_layers_errors_name_the_numbers() {
    let e = err(
        "{tp: 8, pp: 8, dp: 16, global_batch: 1536, vpp: 3, recompute: full, recompute_layers: 5}",
    );
    assert!(
        e.contains("recompute_layers") && e.contains("5") && e.contains("4 layers"),
        "{e}"
    );
    let e = err(
        "{tp: 8, pp: 8, dp: 16, global_batch: 1536, recompute: selective, recompute_layers: 2}",
    );
    assert!(e.contains("recompute: full"), "{e}");
}

#[test]
fn the_free_choice_recomputes_no_more_than_needed() {
    // Nothing given, micro-batch 8: nothing fits without recompute, so the choice recomputes
    // part of every chunk; it fits, beats full recompute, and one layer fewer would not fit.
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 2048, micro_batch: 8, vpp: 3}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert!(t.estimate.fits);
    assert_eq!(t.plan.recompute, myriad_model::Recompute::Full);
    let share = t.plan.recompute_fraction;
    assert!(share < 1.0, "{share}");
    let (s2, c2, m2) = setup(
        "{tp: 8, pp: 8, dp: 16, global_batch: 2048, micro_batch: 8, vpp: 3, recompute: full, distributed_optimizer: true}",
    );
    let f = myriad_train::train(s2.training.as_ref().unwrap(), &m2, &c2, 1024).unwrap();
    assert!(t.estimate.step_time_s < f.estimate.step_time_s);
    let fewer = myriad_train::Plan {
        recompute_fraction: share - 1.0 / t.plan.chunk_layers(m.layers) as f64,
        ..t.plan.clone()
    };
    assert!(fewer.recompute_fraction <= 0.0 || !myriad_train::estimate(&m, &fewer, &c).fits);
}

#[test]
fn two_byte_gradients_halve_gradient_memory_and_data_parallel_bytes() {
    let base = "tp: 8, pp: 8, dp: 16, global_batch: 1536, micro_batch: 1, vpp: 3, recompute: full, distributed_optimizer: true";
    let run = |extra: &str| {
        let (s, c, m) = setup(&format!("{{{base}{extra}}}"));
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024)
            .unwrap()
            .estimate
    };
    let fp32 = run("");
    let bf16 = run(", grad_reduce_in_fp32: false");
    assert!((bf16.memory.gradients_gib / fp32.memory.gradients_gib - 0.5).abs() < 1e-9);
    assert_eq!(bf16.memory.weights_gib, fp32.memory.weights_gib);
    assert!(bf16.breakdown.dp_comm_s <= fp32.breakdown.dp_comm_s);
    // The weight-gradient epilogue moves half the bytes: backward is faster, forward equal.
    assert!(bf16.breakdown.backward_s < fp32.breakdown.backward_s);
    assert_eq!(bf16.breakdown.forward_s, fp32.breakdown.forward_s);
}

fn gb200(training: &str) -> myriad_train::TrainEstimate {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: gb200, count: 72}}\nmodel: {{preset: llama3-70b, seq_len: 8192}}\ntraining: {training}\n"
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 64).unwrap()
}

/// Host memory is checked on the stage that offloads the most, not on the HBM peak stage:
/// under 1F1B the first stage holds PP micro-batches in flight, the last one (the HBM peak,
/// with the output layer) one. Offloading every layer of a 4-stage pipeline sends about
/// 270 GiB per GPU from stage 0 to the 223 GiB of host memory; the plan used to fit on the
/// last stage's 68 GiB.
#[test]
fn host_memory_is_checked_on_the_stage_offloading_the_most() {
    let base = "tp: 1, pp: 4, dp: 16, global_batch: 256, micro_batch: 2, precision: fp8, recompute: none, zero_stage: 1";
    let all = gb200(&format!("{{{base}, offload_layers: 20}}")).estimate;
    let m = &all.memory;
    assert_eq!(m.peak_stage, 3);
    assert!(m.total_gib <= m.capacity_gib, "{m:?}");
    assert_eq!(m.host_offload_stage, 0);
    assert!(m.host_offload_gib > 223.0, "{m:?}");
    assert!(!all.fits);
    // Three quarters of each stage's layers: stage 0 is the HBM peak too (and does not fit
    // in HBM); it offloads 3/4 of what it offloads above.
    let some = gb200(&format!("{{{base}, offload_layers: 15}}")).estimate;
    assert_eq!(some.memory.peak_stage, 0);
    assert_eq!(some.memory.host_offload_stage, 0);
    assert!((some.memory.host_offload_gib * 20.0 / 15.0 - m.host_offload_gib).abs() < 1e-6);
    assert!(!some.fits);
}

#[test]
fn offloaded_activations_leave_hbm_and_cost_only_what_compute_cannot_hide() {
    let base = "tp: 1, pp: 1, dp: 64, global_batch: 256, micro_batch: 2, precision: fp8, recompute: none, zero_stage: 3";
    let none = gb200(&format!("{{{base}}}")).estimate;
    let half = gb200(&format!("{{{base}, offload_layers: 40}}")).estimate;
    let all = gb200(&format!("{{{base}, offload_layers: 80}}")).estimate;
    // HBM keeps the other layers plus one as the transfer buffer (and the output layer's
    // logits), the host holds the offloaded share: with L the 80 layers' activations and H
    // the head's, none = L + H and all = L/80 + H.
    let layers = (none.memory.activations_gib - all.memory.activations_gib) * 80.0 / 79.0;
    let head = none.memory.activations_gib - layers;
    assert!(head >= 0.0);
    let want = 0.5 * layers + layers / 80.0 + head;
    assert!(
        (half.memory.activations_gib - want).abs() < 1e-6,
        "{} vs {want}",
        half.memory.activations_gib
    );
    assert!((half.memory.host_offload_gib - 0.5 * layers).abs() < 1e-6);
    assert!((all.memory.host_offload_gib - layers).abs() < 1e-6);
    // All 80 layers (about 280 GiB) do not fit in the 223 GiB of host memory per GPU.
    assert!(all.memory.host_offload_gib > 223.0 && !all.fits);
    // Transfers hide under compute except where a layer's bytes take longer than the layer:
    // never negative, more layers never cheaper, and compute itself unchanged.
    assert!(half.breakdown.offload_s >= 0.0 && all.breakdown.offload_s >= half.breakdown.offload_s);
    assert_eq!(half.breakdown.forward_s, none.breakdown.forward_s);
    assert!(half.step_time_s >= none.step_time_s);
    assert!(
        !none.fits && half.fits,
        "{} / {}",
        none.memory.total_gib,
        half.memory.total_gib
    );
}

#[test]
fn offload_needs_a_host_memory_link() {
    let e = err("{tp: 8, pp: 8, dp: 16, global_batch: 1536, offload_layers: 2}");
    assert!(
        e.contains("offload_layers") && e.contains("host memory link"),
        "{e}"
    );
    let text = "format: myriad/1\ncluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {tp: 1, pp: 1, dp: 64, global_batch: 256, offload_layers: 81}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let e = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("81") && e.contains("80 layers"), "{e}");
}

#[test]
fn the_free_choice_offloads_instead_of_recomputing_where_it_is_faster() {
    let t = gb200("{tp: 1, pp: 1, dp: 64, global_batch: 256, micro_batch: 2, precision: fp8}");
    assert!(t.estimate.fits);
    assert!(t.plan.offload_fraction > 0.0, "{:?}", t.notes);
    assert!(t.notes.iter().any(|n| n.starts_with("offload:")));
    let r = gb200("{tp: 1, pp: 1, dp: 64, global_batch: 256, micro_batch: 2, precision: fp8, recompute: full}");
    assert!(t.estimate.step_time_s < r.estimate.step_time_s);
}

#[test]
fn zero3_prefetch_hides_gathers_under_compute() {
    let base =
        "tp: 8, pp: 1, dp: 128, global_batch: 1024, micro_batch: 1, recompute: full, zero_stage: 3";
    let (s, c, m) = setup(&format!("{{{base}}}"));
    let on = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let (s, c, m) = setup(&format!("{{{base}, zero3_prefetch: false}}"));
    let off = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert!(on.plan.zero3_prefetch && !off.plan.zero3_prefetch);
    // Same compute; the exposed parameter traffic only shrinks with prefetch.
    assert_eq!(
        on.estimate.breakdown.forward_s,
        off.estimate.breakdown.forward_s
    );
    assert!(on.estimate.breakdown.dp_comm_s < off.estimate.breakdown.dp_comm_s);
    assert!(on.estimate.breakdown.dp_comm_s > 0.0);
    // Memory: prefetch holds two whole layers (the one computing and the next) and one
    // layer's whole gradient; on demand one weight matrix of each (GPT-3: 4 per layer).
    let p = m.params();
    // A layer on one of 8 TP ranks: its matrices split, its norms whole.
    let layer = (p.attention_per_layer + p.dense_mlp_per_layer) / 8.0 + p.norms_per_layer;
    let gib = 1024f64.powi(3);
    let grad_bytes = if on.plan.grad_reduce_in_fp32 {
        4.0
    } else {
        2.0
    };
    let dw = (on.estimate.memory.weights_gib - off.estimate.memory.weights_gib) * gib;
    let dg = (on.estimate.memory.gradients_gib - off.estimate.memory.gradients_gib) * gib;
    assert!(
        (dw / ((2.0 - 0.25) * layer * 2.0) - 1.0).abs() < 1e-9,
        "{dw}"
    );
    assert!(
        (dg / ((1.0 - 0.25) * layer * grad_bytes) - 1.0).abs() < 1e-9,
        "{dg}"
    );
}

#[test]
fn on_demand_zero3_pays_host_work_per_rank_of_every_tensor_collective() {
    // DeepSpeed v0.3 gathers each weight matrix three times under full recompute and
    // reduce-scatters every tensor, each a list collective with host work per rank: twice
    // the ranks at the same per-rank work adds at least that host work once more.
    let run = |count: u64| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: a100-sxm-80gb, count: {count}, scale_out: {{fabric: infiniband-hdr}}}}\nmodel: {{preset: gpt3-175b}}\ntraining: {{tp: 8, pp: 1, dp: {}, global_batch: {}, micro_batch: 1, recompute: full, zero_stage: 3, zero3_prefetch: false}}\n",
            count / 8,
            count / 8
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, count).unwrap()
    };
    let (a, b) = (run(1024), run(2048));
    // Same per-rank compute (up to the slowest-chip pace, which grows slowly with N).
    let (fa, fb) = (
        a.estimate.breakdown.forward_s,
        b.estimate.breakdown.forward_s,
    );
    assert!(fb >= fa && fb < 1.01 * fa, "{fa} {fb}");
    // GPT-style layer: 4 matrices, 8 vectors (4 biases, 2 LayerNorms of weight and bias).
    let per_rank = 96.0
        * (4.0 * 3.0 * myriad_train::step::LIST_GATHER_HOST_S
            + 12.0 * myriad_train::step::LIST_REDUCE_SCATTER_HOST_S);
    let added = b.estimate.breakdown.dp_comm_s - a.estimate.breakdown.dp_comm_s;
    assert!(added >= per_rank * 128.0, "{added} < {}", per_rank * 128.0);
    // ... and not much more: the collectives' own latency grows too, but less.
    assert!(added < 2.0 * per_rank * 128.0, "{added}");
}

#[test]
fn dualpipe_hides_the_expert_all_to_all_under_the_paired_chunk() {
    // DeepSeek-V3-like plan on 2,048 H800: the same plan under 1F1B runs every dispatch and
    // combine on the critical path; DualPipe exposes only what the paired forward and
    // backward compute cannot cover, plus the SM share the hidden traffic takes.
    let run = |schedule: &str| {
        h800_dsv3(
            ", layers: 64, mtp_layers: 0, moe: {experts: 256, top_k: 8, expert_ffn_hidden: 2048, shared_experts: 1}",
            &format!("global_batch: 15360, pp: 16, dp: 128, recompute: full, pipeline_schedule: {schedule}"),
        )
        .unwrap()
    };
    let (a, d) = (run("1f1b"), run("dualpipe"));
    let (ba, bd) = (&a.estimate.breakdown, &d.estimate.breakdown);
    // 64 MoE layers (no dense ones, no MTP module): four on every rank, and the head on the
    // critical one under both (1F1B's last; DualPipe's first, which holds both ends of the
    // model and so the embedding too): the same all-to-all traffic, and a forward pass
    // longer by the embedding alone.
    let extra = bd.forward_s / ba.forward_s - 1.0;
    assert!((0.0..0.01).contains(&extra), "{extra}");
    let traffic = ba.ep_comm_s;
    let cover = bd.forward_s + bd.backward_s + bd.recompute_s;
    assert!(traffic > 0.0 && traffic < cover, "{traffic} {cover}");
    // Fully covered here: exposed = the measured slowdown of overlapped compute x traffic
    // (H800 has no measurement of its own: the H100 figure).
    let h800 = myriad_catalog::catalog().accelerator("h800").unwrap();
    assert_eq!(h800.efficiency.comm_overlap_slowdown, None);
    let expect = myriad_catalog::COMM_OVERLAP_SLOWDOWN * traffic;
    assert!(
        (bd.ep_comm_s - expect).abs() < 1e-9 * expect,
        "{} {expect}",
        bd.ep_comm_s
    );
    assert!(d.estimate.step_time_s < a.estimate.step_time_s);
}

/// The DeepSeek-V3 preset (with the `model` fields given beside it) trained on 2,048 H800
/// with `training`.
fn h800_dsv3(model: &str, training: &str) -> Result<myriad_train::TrainEstimate, String> {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: h800, count: 2048, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: deepseek-v3{model}}}\ntraining: {{micro_batch: 1, tp: 1, ep: 64, precision: fp8, {training}}}\n"
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).map_err(|e| e.to_string())?;
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 2048).map_err(|e| e.to_string())
}

/// DeepSeek-V3 without its multi-token-prediction module (61 layers alone: PP 16 divides
/// neither them nor them with the embedding and loss).
fn dsv3(training: &str) -> Result<myriad_train::TrainEstimate, String> {
    h800_dsv3(
        ", mtp_layers: 0",
        &format!("global_batch: 15360, pp: 16, dp: 128, {training}"),
    )
}

#[test]
fn edge_stages_split_layers_that_pp_does_not_divide() {
    // DeepSeek-V3's 61 layers on PP 16: without an uneven split the plan is impossible.
    let e = dsv3("recompute: full").unwrap_err();
    assert!(e.contains("not divisible by PP*VPP"), "{e}");
    // One layer on the first stage, 60 over the other 15 (4 each).
    let t = dsv3("recompute: full, first_stage_layers: 1").unwrap();
    let p = &t.plan;
    let counts: Vec<f64> = (0..16)
        .map(|s| {
            let (lo, hi) = p.stage_layers(61, s);
            hi - lo
        })
        .collect();
    assert_eq!(counts[0], 1.0);
    assert!(counts[1..].iter().all(|&c| c == 4.0), "{counts:?}");
    assert_eq!(counts.iter().sum::<f64>(), 61.0);
    assert_eq!(p.chunk_layers(61), 4);
    // The critical (last) stage holds 4 MoE layers and the head, as in an even split of
    // a 64-layer DeepSeek-V3: the same forward time per step.
    let even = h800_dsv3(
        ", layers: 64, mtp_layers: 0",
        "global_batch: 15360, pp: 16, dp: 128, recompute: full",
    )
    .unwrap();
    let (a, b) = (
        t.estimate.breakdown.forward_s,
        even.estimate.breakdown.forward_s,
    );
    assert!((a - b).abs() < 1e-9 * b, "{a} {b}");
    // Both edges: 1 first, 4 last, 56 over 14 stages.
    let t2 = dsv3("recompute: full, first_stage_layers: 1, last_stage_layers: 4").unwrap();
    assert_eq!(t2.plan.stage_layers(61, 15), (57.0, 61.0));
    assert_eq!(t2.plan.stage_layers(61, 1), (1.0, 5.0));
}

#[test]
fn edge_stage_errors_name_the_numbers() {
    let e = dsv3("first_stage_layers: 3").unwrap_err();
    assert_eq!(
        e,
        "training.first_stage_layers: the other 58 layers do not split evenly over the other 15 stages"
    );
    let e = dsv3("first_stage_layers: 40, last_stage_layers: 30").unwrap_err();
    assert!(e.contains("70 is more than the model's 61 layers"), "{e}");
    let e = dsv3("first_stage_layers: 1, vpp: 2").unwrap_err();
    assert_eq!(
        e,
        "training.first_stage_layers: 1 layers not divisible by VPP 2 (every virtual stage of a stage holds the same layers)"
    );
}

#[test]
fn edge_stages_with_interleaving_split_every_stage_evenly_over_its_virtual_stages() {
    // Llama 3 70B's 80 layers on PP 6 with VPP 2: 12 + 4 x 14 + 12.
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 48, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: llama3-70b}\ntraining: {tp: 8, pp: 6, dp: 1, vpp: 2, global_batch: 36, micro_batch: 1, recompute: full, first_stage_layers: 12, last_stage_layers: 12}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 48).unwrap();
    let counts: Vec<f64> = (0..6)
        .map(|st| {
            let (lo, hi) = t.plan.stage_layers(80, st);
            hi - lo
        })
        .collect();
    assert_eq!(counts, vec![12.0, 14.0, 14.0, 14.0, 14.0, 12.0]);
    // A virtual stage (the unit of block recompute) holds 14 / 2 layers on the largest stage.
    assert_eq!(t.plan.chunk_layers(80), 7);
    // 13 on the edges does not split over 2 virtual stages.
    let bad = text.replace(
        "first_stage_layers: 12, last_stage_layers: 12",
        "first_stage_layers: 13, last_stage_layers: 11",
    );
    let s = parse_scenario("t.yaml", &bad, cat).unwrap();
    let e = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 48)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "training.first_stage_layers: 13 layers not divisible by VPP 2 (every virtual stage of a stage holds the same layers)"
    );
}

/// Without p2p overlap every chunk boundary of the interleaved schedule blocks: the exposed
/// PP time is (m·v + p − 1) transfers in each direction; with it, the transfers on the
/// warm-up and cool-down path, `h` each way (what an event simulation of Megatron's
/// interleaved order finds, [`interleaved_exposed_transfers`]: p·v − 1), plus the slowdown
/// `s` the other m·v − h inflict on the compute they run beside, so the two differ by
/// exactly (m·v + p − 1)/(h + s·(m·v − h)).
/// Without gradient-reduce
/// overlap the DP collectives are all exposed, so more DP time shows, and the step is longer
/// by at least the difference.
#[test]
fn overlap_switches_follow_the_schedule() {
    let base = "{tp: 8, pp: 8, dp: 16, vpp: 3, global_batch: 512, micro_batch: 1, recompute: full, distributed_optimizer: true";
    let run = |extra: &str| {
        let (s, c, m) = setup(&format!("{base}{extra}}}"));
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024)
            .unwrap()
            .estimate
    };
    let on = run("");
    let no_p2p = run(", overlap_p2p_comm: false");
    let (m, v, p) = (512.0 / 16.0, 3.0, 8.0);
    let s = myriad_catalog::catalog()
        .accelerator("h100-sxm")
        .unwrap()
        .efficiency
        .overlap_slowdown();
    let h = interleaved_exposed_transfers(8, 3, 32);
    assert_eq!(h, p * v - 1.0);
    let want = on.breakdown.pp_comm_s * (m * v + p - 1.0) / (h + s * (m * v - h));
    assert!(
        (no_p2p.breakdown.pp_comm_s - want).abs() < 1e-9 * want,
        "{} vs {want}",
        no_p2p.breakdown.pp_comm_s
    );
    let no_dp = run(", overlap_grad_reduce: false");
    assert!(no_dp.breakdown.dp_comm_s > on.breakdown.dp_comm_s);
    assert!(
        no_dp.step_time_s - on.step_time_s
            >= no_dp.breakdown.dp_comm_s - on.breakdown.dp_comm_s - 1e-12
    );
    // Compute does not change.
    assert_eq!(no_dp.breakdown.forward_s, on.breakdown.forward_s);
}

/// Megatron's gradient buffer: fp32 for bf16 training (`accumulate_allreduce_grads_in_fp32`
/// is forced on), the parameter precision for fp16; the DP reduction moves half the bytes
/// in fp16 and the gradient buffer takes half the memory.
#[test]
fn gradient_precision_follows_megatron_defaults() {
    let run = |t: &str| {
        let (s, c, m) = setup(t);
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap()
    };
    let plan = "tp: 8, pp: 8, dp: 16, global_batch: 256, micro_batch: 1, recompute: full, overlap_grad_reduce: false";
    let bf16 = run(&format!("{{{plan}, precision: bf16}}"));
    let fp16 = run(&format!("{{{plan}, precision: fp16, attention: flash}}"));
    let fp16_fp32 = run(&format!(
        "{{{plan}, precision: fp16, attention: flash, grad_reduce_in_fp32: true}}"
    ));
    assert!(bf16.plan.grad_reduce_in_fp32);
    assert!(!fp16.plan.grad_reduce_in_fp32);
    assert!(fp16_fp32.plan.grad_reduce_in_fp32);
    // Exposed DP traffic: reduce-scatter of gradients plus all-gather of bf16 parameters;
    // fp32 gradients make the first twice as large.
    let (a, b) = (
        fp16.estimate.breakdown.dp_comm_s,
        fp16_fp32.estimate.breakdown.dp_comm_s,
    );
    assert!(b > a * 1.2 && b < a * 1.6, "fp16 {a} vs fp32 {b}");
}

/// Data-parallel overlap chunk by chunk, computed by hand.
#[test]
fn dp_overlap_is_exposed_chunk_by_chunk() {
    use myriad_train::step::{dp_overlap_exposed, DpOverlap};
    let share = 0.25;
    // One chunk: (rs − bwd)⁺ + (ag − fwd)⁺ + one bucket + the SM share of what hid.
    let one = DpOverlap {
        rs: 0.30,
        ag: 0.10,
        fwd: 0.04,
        bwd: 0.12,
        chunks: 1,
        pp: 4,
        slowdown: share,
    };
    let want = 0.18 + 0.06 + 0.40 * 0.05 + share * (0.12 + 0.04);
    assert!((dp_overlap_exposed(one, 0.05) - want).abs() < 1e-12);
    // Four chunks on 4 stages: chunk 0's gather (0.025) outlasts its forward (0.01) by
    // 0.015; later gathers have 5 chunk-forwards (0.05) and hide. Reduce-scatters of
    // 0.075 each leave at -13, -9, -5, -1 chunk-backwards (0.03): ready at -0.39, -0.27,
    // -0.15, -0.03; the chain ends at max(max(max(-0.315, -0.27) + 0.075, -0.15) + 0.075,
    // -0.03) + 0.075 = 0.045 after the last backward. One bucket of a chunk at most.
    let four = DpOverlap { chunks: 4, ..one };
    let exposed = 0.015 + 0.045;
    let want = exposed + 0.40 * 0.05 + share * (0.40 - exposed);
    let got = dp_overlap_exposed(four, 0.05);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    assert!(got < dp_overlap_exposed(one, 0.05));
    // More traffic never exposes less; with no traffic nothing is exposed.
    let more = DpOverlap { rs: 0.6, ..four };
    assert!(dp_overlap_exposed(more, 0.05) > got);
    let none = DpOverlap {
        rs: 0.0,
        ag: 0.0,
        ..four
    };
    assert_eq!(dp_overlap_exposed(none, 0.05), 0.0);
}

#[test]
fn userbuffers_reduce_scatter_costs_its_gemms_the_reserved_sms() {
    // GPT-3 175B, TP 8 without pipelining, one micro-batch: the forward pass is 96 layers.
    let run = |sms: u32| {
        let (s, c, m) = setup(&format!(
            "{{tp: 8, pp: 1, dp: 128, global_batch: 128, micro_batch: 1, recompute: full, tp_comm_overlap_sms: {sms}}}"
        ));
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap()
    };
    let (with, without) = (run(16), run(0));
    assert_eq!(with.plan.tp_comm_overlap_sms, 16);
    // Only the attention output projection [2048, 1536] x [1536, 12288] and the second MLP
    // GEMM [2048, 6144] x [6144, 12288] of each layer move: their FLOPs run on 116 of 132 SMs.
    let acc = myriad_catalog::catalog().accelerator("h100-sxm").unwrap();
    let rate = acc.dense_tflops.bf16.unwrap() * 1e12 * acc.efficiency.gemm_bf16;
    let flops = 2.0 * 2048.0 * 12288.0 * (1536.0 + 6144.0);
    let pace = myriad_train::step::straggler_pace(acc, 1024)
        * myriad_train::step::sync_jitter_pace(acc, 8);
    let want = 96.0 * flops / rate * (132.0 / 116.0 - 1.0) * pace;
    let got = with.estimate.breakdown.forward_s - without.estimate.breakdown.forward_s;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    // Backward GEMMs are untouched.
    assert_eq!(
        with.estimate.breakdown.backward_s,
        without.estimate.breakdown.backward_s
    );
    // Not given: Transformer Engine's default, 16.
    let (s, c, m) =
        setup("{tp: 8, pp: 1, dp: 128, global_batch: 128, micro_batch: 1, recompute: full}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    assert_eq!(t.plan.tp_comm_overlap_sms, 16);
    assert_eq!(
        t.estimate.breakdown.forward_s,
        with.estimate.breakdown.forward_s
    );
}

#[test]
fn tp_comm_overlap_sms_errors_name_the_numbers() {
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, tp_comm_overlap: false, tp_comm_overlap_sms: 16}"),
        "training.tp_comm_overlap_sms: applies only when TP communication is overlapped (tp_comm_overlap, which needs TP > 1 and sequence parallelism); leave it out"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, tp_comm_overlap_sms: 132}"),
        "training.tp_comm_overlap_sms: 132 SMs leave none of the 132 of h100-sxm for the GEMM"
    );
}

/// Sliding windows cut only the windowed layers' attention: a window as long as the
/// sequence changes nothing, a 128-token band on half the layers (gpt-oss) shortens the
/// step by less than the attention's share of it.
#[test]
fn a_sliding_window_shortens_attention_only() {
    let cat = myriad_catalog::catalog();
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: gpt-oss-120b}\ntraining: {tp: 1, pp: 1, dp: 64, ep: 8, micro_batch: 1, global_batch: 512, recompute: none, zero_stage: 1}\n";
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let oss = s.model.as_ref().unwrap().resolve(cat).unwrap();
    assert_eq!(oss.windowed_layers(), 18);
    let step = |m: &myriad_model::Transformer| {
        myriad_train::train(s.training.as_ref().unwrap(), m, &c, 64)
            .unwrap()
            .estimate
    };
    let mut full = oss.clone();
    full.sliding_window = None;
    let mut whole = oss.clone();
    whole.sliding_window = Some(myriad_model::SlidingWindow {
        window: oss.seq_len,
        full_every: Some(2),
        chunked: false,
    });
    let (w, f, same) = (step(&oss), step(&full), step(&whole));
    assert_eq!(same.step_time_s, f.step_time_s);
    assert!(w.step_time_s < f.step_time_s);
    // What the band saves is at most the attention time of the windowed half.
    let attn = myriad_train::step::op_times(
        cat.accelerator("h100-sxm").unwrap(),
        myriad_scenario::Precision::Bf16,
        &[myriad_model::Op {
            name: "attention",
            kind: myriad_model::OpKind::Attention {
                batch_heads: 64.0,
                sq: 4096.0,
                skv: 4096.0,
                d_qk: 64.0,
                d_v: 64.0,
                causal_fraction: 0.5,
                window: 0.0,
            },
        }],
    );
    let per_step_attn = (attn.0 + attn.1) * 18.0 * (512.0 / 64.0);
    let saved = f.step_time_s - w.step_time_s;
    assert!(
        saved > 0.3 * per_step_attn && saved < per_step_attn,
        "{saved} of {per_step_attn}"
    );
}

/// fp8 parameters drop each weight's 2-byte copy (1 byte of the 3 fp8 training keeps per
/// parameter) and need fp8 training.
#[test]
fn fp8_params_drop_the_two_byte_weight_copy() {
    let cat = myriad_catalog::catalog();
    let run = |extra: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 128, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: nemotron4-340b}}\ntraining: {{global_batch: 32, micro_batch: 1, tp: 8, pp: 8, dp: 2, vpp: 12, zero_stage: 1, recompute: none, grad_reduce_in_fp32: false{extra}}}\n"
        );
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 128)
    };
    let (plain, stored) = (
        run(", precision: fp8").unwrap().estimate,
        run(", precision: fp8, fp8_params: true").unwrap().estimate,
    );
    // 3 bytes per parameter become 2: a third of the weights' memory.
    let ratio = stored.memory.weights_gib / plain.memory.weights_gib;
    assert!((ratio - 2.0 / 3.0).abs() < 1e-9, "{ratio}");
    assert_eq!(stored.memory.optimizer_gib, plain.memory.optimizer_gib);
    // Nemotron-4 340B on 128 H100 (TP 8, PP 8, DP 2) fits only with them, as NVIDIA ran it.
    assert!(!plain.fits && stored.fits);
    assert!(stored.breakdown.dp_comm_s <= plain.breakdown.dp_comm_s);
    let e = run(", precision: bf16, fp8_params: true")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "training.fp8_params: parameters are stored in fp8 only with fp8 or fp4 training, not bf16"
    );
}

/// DeepSeek-V3 with its MTP module (the preset), on 2,048 H800, full recompute.
fn dsv3_mtp(training: &str) -> Result<myriad_train::TrainEstimate, String> {
    h800_dsv3("", &format!("recompute: full, {training}"))
}

#[test]
fn mtp_takes_a_pipeline_slot_like_the_embedding_and_the_loss() {
    // 61 layers + embedding + MTP + loss = 64 slots (Megatron-Bridge's DeepSeek-V3
    // layouts): PP 16 gives 4 slots a stage, so the first stage holds 3 layers, the last 2
    // (beside the MTP module and the loss) and the others 4.
    let t = dsv3_mtp("pp: 16, dp: 128, global_batch: 15360").unwrap();
    let p = &t.plan;
    assert!(p.embedding_in_pipeline_split);
    assert_eq!(p.mtp_layers, 1);
    let counts: Vec<f64> = (0..16)
        .map(|s| {
            let (lo, hi) = p.stage_layers(61, s);
            hi - lo
        })
        .collect();
    assert_eq!(counts[0], 3.0);
    assert_eq!(counts[15], 2.0);
    assert!(counts[1..15].iter().all(|&c| c == 4.0), "{counts:?}");
    assert_eq!(counts.iter().sum::<f64>(), 61.0);
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("embedding + MTP 1 + loss = 64")),
        "{:?}",
        t.notes
    );
    // PP 8 with 2 virtual stages: 16 chunks of 4 slots too; PP 16 with VPP 3 (48 chunks)
    // divides neither 61, 63 nor 64.
    assert!(dsv3_mtp("pp: 8, dp: 256, vpp: 2, global_batch: 16384").is_ok());
    let e = dsv3_mtp("pp: 16, dp: 128, vpp: 3, global_batch: 15360").unwrap_err();
    assert!(e.contains("not divisible by PP*VPP"), "{e}");
}

#[test]
fn mtp_work_lands_on_the_last_stage_and_in_the_model_flops() {
    // Without pipelining the whole model is one stage: the module adds a MoE layer, its
    // projection and a second head to every micro-batch, and its FLOPs to the model's.
    let with = dsv3_mtp("pp: 1, dp: 2048, global_batch: 16384").unwrap();
    let without = h800_dsv3(
        ", mtp_layers: 0",
        "pp: 1, dp: 2048, global_batch: 16384, recompute: full",
    )
    .unwrap();
    let m1 = myriad_catalog::catalog()
        .model("deepseek-v3")
        .unwrap()
        .model
        .clone();
    let m0 = myriad_model::Transformer {
        mtp_layers: 0,
        ..m1.clone()
    };
    let ratio = m1.flops_per_sequence().training / m0.flops_per_sequence().training;
    let (a, b) = (
        with.estimate.model_flops_per_step,
        without.estimate.model_flops_per_step,
    );
    assert!((a / b / ratio - 1.0).abs() < 1e-12, "{a} {b} {ratio}");
    // One MoE layer of 58 plus two heads' worth: between 1/58 and 1/10 more forward time.
    let (f1, f0) = (
        with.estimate.breakdown.forward_s,
        without.estimate.breakdown.forward_s,
    );
    assert!(f1 > f0 * (1.0 + 1.0 / 58.0) && f1 < f0 * 1.1, "{f1} {f0}");
    assert!(with.estimate.breakdown.ep_comm_s > without.estimate.breakdown.ep_comm_s);
    assert!(with.estimate.memory.total_gib > without.estimate.memory.total_gib);
}

#[test]
fn with_interleaving_the_last_stage_may_hold_fewer_layers() {
    // DeepSeek-V3's 61 layers (no MTP) on PP 4 x VPP 4, as Megatron-Bridge lays them out:
    // 16 chunks of 4, the last chunk 1: stages of 16, 16, 16 and 13.
    let run = |last: u32| {
        h800_dsv3(
            ", mtp_layers: 0",
            &format!("global_batch: 16384, pp: 4, vpp: 4, dp: 512, recompute: full, last_stage_layers: {last}"),
        )
    };
    let t = run(13).unwrap();
    let counts: Vec<f64> = (0..4)
        .map(|s| {
            let (lo, hi) = t.plan.stage_layers(61, s);
            hi - lo
        })
        .collect();
    assert_eq!(counts, vec![16.0, 16.0, 16.0, 13.0]);
    // More than the other stages is not a remainder.
    let e = run(17).unwrap_err();
    assert!(e.contains("last_stage_layers"), "{e}");
    // The other stages must still split evenly over their chunks.
    let e = run(4).unwrap_err();
    assert!(e.contains("not divisible by VPP 4"), "{e}");
}

#[test]
fn dualpipe_puts_both_ends_of_the_model_on_the_first_rank() {
    // DeepSeek-V3 report §2.2/§3.2.1: DualPipe feeds the pipeline from both ends, so rank
    // s holds chunk s and chunk 2·pp − 1 − s; the embedding, the shallowest layers, the
    // deepest layers and the output head (with the MTP module) share rank 0.
    let t = dsv3_mtp("pp: 16, dp: 128, global_batch: 15360, pipeline_schedule: dualpipe").unwrap();
    let p = &t.plan;
    assert!(p.holds_head(0) && p.holds_embedding(0) && !p.holds_head(15));
    // 64 slots over 32 chunks, 2 each: chunk 0 holds the embedding and layer 0, chunk 31
    // the MTP module and the loss; rank 1 holds chunks 1 and 30 (layers 1-2 and 59-60).
    assert_eq!(p.rank_layers(61, 0), [(0.0, 1.0), (61.0, 61.0)]);
    assert_eq!(p.rank_layers(61, 1), [(1.0, 3.0), (59.0, 61.0)]);
    let total: f64 = (0..16)
        .flat_map(|s| p.rank_layers(61, s))
        .map(|(lo, hi)| hi - lo)
        .sum();
    assert_eq!(total, 61.0);
    // Without DualPipe the head stays on the last rank.
    let one = dsv3_mtp("pp: 16, dp: 128, global_batch: 15360").unwrap();
    assert!(one.plan.holds_head(15) && !one.plan.holds_head(0));
}

#[test]
fn bf16_moments_shrink_the_optimizer_state_by_a_third() {
    // Adam keeps an fp32 master copy and two moments: 12 bytes a parameter, 8 with the
    // moments in bf16 (DeepSeek-V3 §3.3); the step reads and writes 34 bytes, 26.
    let run = |bf16: bool| {
        dsv3_mtp(&format!(
            "pp: 16, dp: 128, global_batch: 15360, bf16_optimizer_moments: {bf16}"
        ))
        .unwrap()
    };
    let (a, b) = (run(false), run(true));
    assert!(b.plan.bf16_optimizer_moments && !a.plan.bf16_optimizer_moments);
    let (ma, mb) = (&a.estimate.memory, &b.estimate.memory);
    assert!((mb.optimizer_gib / ma.optimizer_gib - 8.0 / 12.0).abs() < 1e-9);
    assert_eq!(ma.weights_gib, mb.weights_gib);
    let (oa, ob) = (
        a.estimate.breakdown.optimizer_s,
        b.estimate.breakdown.optimizer_s,
    );
    assert!((ob / oa - 26.0 / 34.0).abs() < 1e-9, "{ob} {oa}");
}

#[test]
fn bf16_optimizer_state_halves_it() {
    // Apex DistributedFusedAdam with `dtype: bf16` keeps the master copy and both moments
    // in bf16: 6 bytes a parameter instead of 12; the step reads and writes 22 bytes, not 34
    // (master 4 instead of 8, moments 8 instead of 16).
    let run =
        |extra: &str| dsv3_mtp(&format!("pp: 16, dp: 128, global_batch: 15360{extra}")).unwrap();
    let (a, b) = (
        run(""),
        run(", bf16_optimizer_moments: true, bf16_master_weights: true"),
    );
    assert!(b.plan.bf16_master_weights && !a.plan.bf16_master_weights);
    let (ma, mb) = (&a.estimate.memory, &b.estimate.memory);
    assert!((mb.optimizer_gib / ma.optimizer_gib - 0.5).abs() < 1e-9);
    assert_eq!(ma.weights_gib, mb.weights_gib);
    let (oa, ob) = (
        a.estimate.breakdown.optimizer_s,
        b.estimate.breakdown.optimizer_s,
    );
    assert!((ob / oa - 22.0 / 34.0).abs() < 1e-9, "{ob} {oa}");
}

#[test]
fn eager_moe_layers_cost_their_overhead_once_per_layer_and_micro_batch() {
    // Qwen3 30B-A3B on 16 H100, EP 16, PP 1: 48 MoE layers, 1,024 sequences over DP 16 at
    // micro-batch 1 = 64 micro-batches. Each eager MoE layer costs MOE_EAGER_OVERHEAD_S
    // beyond its kernels once per micro-batch, so the step is 48 × 64 of them longer than
    // in a full-iteration CUDA graph, and a fully recomputed layer pays it again. Both
    // run the experts as one grouped kernel (a graph's default), so that only the eager
    // overhead differs.
    let run = |extra: &str| {
        qwen3_30b_a3b_on_16_h100(&format!("{extra}, moe_grouped_kernel: true")).unwrap()
    };
    let sync = myriad_train::step::MOE_EAGER_OVERHEAD_S;
    let waits = 48.0 * 64.0;
    let (on, off) = (
        run("recompute: none"),
        run("recompute: none, moe_full_graph: true"),
    );
    assert!(!on.plan.moe_full_graph && off.plan.moe_full_graph);
    let d = on.estimate.step_time_s - off.estimate.step_time_s;
    assert!((d / (waits * sync) - 1.0).abs() < 1e-6, "{d}");
    // The breakdown shows it on its own line, and the forward is the same in both.
    let (b_on, b_off) = (&on.estimate.breakdown, &off.estimate.breakdown);
    assert!((b_on.moe_overhead_s / (waits * sync) - 1.0).abs() < 1e-9);
    assert_eq!(b_off.moe_overhead_s, 0.0);
    assert!((b_on.forward_s / b_off.forward_s - 1.0).abs() < 1e-9);
    let (on, off) = (
        run("recompute: full"),
        run("recompute: full, moe_full_graph: true"),
    );
    let d = on.estimate.step_time_s - off.estimate.step_time_s;
    assert!((d / (2.0 * waits * sync) - 1.0).abs() < 1e-6, "{d}");
}

#[test]
fn pipeline_scatter_gather_sends_a_tp_slice_over_the_network() {
    // GPT-3 175B on 1,024 H100, TP 8 x PP 16 x DP 8, no sequence parallelism: each stage
    // boundary crosses nodes. Megatron-LM's scatter/gather sends 1/8 of the activation per
    // rank over its NIC and all-gathers it over NVLink on arrival, so the exposed pipeline
    // traffic shrinks, but not below an eighth (latency and the all-gather stay); with
    // sequence parallelism the tensor is already sliced and the switch changes nothing.
    let run = |extra: &str| {
        let (s, c, m) = setup(&format!(
            "{{tp: 8, pp: 16, dp: 8, micro_batch: 1, global_batch: 512, recompute: full{extra}}}"
        ));
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap()
    };
    let whole = run(", sequence_parallel: false");
    let sliced = run(", sequence_parallel: false, pp_scatter_gather: true");
    assert!(sliced.plan.pp_scatter_gather);
    let (a, b) = (
        whole.estimate.breakdown.pp_comm_s,
        sliced.estimate.breakdown.pp_comm_s,
    );
    assert!(b < a && b > a / 8.0, "{b} against {a}");
    assert!(sliced.estimate.step_time_s < whole.estimate.step_time_s);
    let sp = run(", sequence_parallel: true");
    let sp_sg = run(", sequence_parallel: true, pp_scatter_gather: true");
    assert_eq!(
        sp.estimate.breakdown.pp_comm_s,
        sp_sg.estimate.breakdown.pp_comm_s
    );
}

/// Combined 1F1B pairs forwards with backwards only in the steady state. By hand: no
/// pipeline, 16 micro-batches: the first forward and last backward alone, 1/16; 1F1B over 4
/// stages, 80 micro-batches: on average (4 - 1)/2 = 1.5 warm-up micro-batches, 1.5/80;
/// interleaved over 8 stages with 4 virtual stages of 8 micro-batches each (the plan of the
/// 1,024-H100 DeepSeek-V3 runs), 128 micro-batches: (8 - 1) + 3·8 = 31 of 512 chunk passes.
#[test]
fn only_the_steady_state_pairs_forward_and_backward() {
    let (s, c, m) = setup("{tp: 8, pp: 8, dp: 16, global_batch: 2048, micro_batch: 1, vpp: 3}");
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let with = |pp: u32, vpp: u32, group: u32, dp: u32, gb: u64| myriad_train::Plan {
        pp,
        vpp,
        vpp_group: group,
        dp,
        global_batch: gb,
        micro_batch: 1,
        ..t.plan.clone()
    };
    let share = myriad_train::step::unpaired_share;
    assert!((share(&with(1, 1, 1, 8, 128)) - 1.0 / 16.0).abs() < 1e-12);
    assert!((share(&with(4, 1, 4, 1, 80)) - 1.5 / 80.0).abs() < 1e-12);
    assert!((share(&with(8, 4, 8, 64, 8192)) - 31.0 / 512.0).abs() < 1e-12);
    // A step too short for a steady state pairs nothing.
    assert_eq!(share(&with(8, 4, 8, 64, 64)), 1.0);
}

/// fp8 dispatch quantises the tokens before the EP all-to-all: with the all-to-all
/// dispatcher (exposed, no overlap) the dispatch bytes halve, the combine stays bf16, so the
/// EP time falls by a quarter at most (exactly a quarter where every collective is
/// bandwidth-bound) and never rises. Megatron's default (bf16 dispatch) is the same traffic
/// as a bf16 run. A bf16 plan cannot dispatch fp8.
#[test]
fn fp8_dispatch_halves_the_dispatch_bytes_only() {
    let run = |extra: &str| {
        qwen3_30b_a3b_on_16_h100(&format!(
            "recompute: none, ep_dispatcher: alltoall, {extra}"
        ))
    };
    let ep = |extra: &str| run(extra).unwrap().estimate.breakdown.ep_comm_s;
    let (bf16, fp8, fp8_dispatch) = (
        ep("precision: bf16"),
        ep("precision: fp8"),
        ep("precision: fp8, fp8_dispatch: true"),
    );
    assert!((fp8 / bf16 - 1.0).abs() < 1e-12, "{fp8} {bf16}");
    let saved = 1.0 - fp8_dispatch / fp8;
    assert!(saved > 0.15 && saved <= 0.25 + 1e-9, "{saved}");
    let e = run("precision: bf16, fp8_dispatch: true")
        .unwrap_err()
        .to_string();
    assert!(e.contains("fp8_dispatch") && e.contains("bf16"), "{e}");
}

/// Qwen3 30B-A3B on 16 H100 at EP 16, PP 1, micro-batch 1 and 1,024 sequences (64
/// micro-batches), with `extra` training keys.
fn qwen3_30b_a3b_on_16_h100(
    extra: &str,
) -> Result<myriad_train::TrainEstimate, myriad_train::PlanError> {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 16, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: qwen3-30b-a3b}}\ntraining: {{tp: 1, pp: 1, dp: 16, ep: 16, micro_batch: 1, global_batch: 1024, {extra}}}\n"
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 16)
}

/// Llama 3 8B on 8 H100 (TP 1, PP 1, DP 8, micro-batch 1, global batch 64, no recompute)
/// with `extra` training settings, and the resolved model.
fn llama3_8b_on_8_h100(
    extra: &str,
) -> (
    Result<myriad_train::TrainEstimate, myriad_train::PlanError>,
    myriad_model::Transformer,
) {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: llama3-8b}}\ntraining: {{tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 64, recompute: none, {extra}}}\n"
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    (
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8),
        m,
    )
}

/// Current scaling quantises every fp8 GEMM input in three kernels (amax, scale, cast) that
/// read it twice; delayed, blockwise and MXFP8 scaling in one kernel that reads it once.
/// On Llama 3 8B (32 dense layers, no MoE overhead) the forward pass grows by exactly two
/// bytes read per GEMM input element and two kernels per GEMM, for every layer and
/// micro-batch, at the compute pace; the bf16 output layer is untouched. A bf16 plan has no
/// fp8 recipe.
#[test]
fn current_scaling_reads_each_fp8_input_again_in_two_more_kernels() {
    let cat = myriad_catalog::catalog();
    let run = llama3_8b_on_8_h100;
    let fwd = |extra: &str| run(extra).0.unwrap().estimate.breakdown.forward_s;
    let delayed = fwd("precision: fp8");
    assert_eq!(delayed, fwd("precision: fp8, fp8_recipe: delayed"));
    assert_eq!(delayed, fwd("precision: fp8, fp8_recipe: blockwise"));
    assert_eq!(delayed, fwd("precision: fp8, fp8_recipe: mxfp8"));
    let (current, m) = run("precision: fp8, fp8_recipe: current");
    let current = current.unwrap();
    assert_eq!(current.plan.fp8_recipe, myriad_model::Fp8Recipe::Current);
    let acc = cat.accelerator("h100-sxm").unwrap();
    let hbm = acc.hbm_tbps * 1e12 * acc.efficiency.hbm;
    let kernel = acc.efficiency.gemm_overhead_us * 1e-6;
    let mut ops = Vec::new();
    m.layer_ops(0, &current.plan.shard(), &mut ops);
    let per_layer: f64 = ops
        .iter()
        .map(|o| match o.kind {
            myriad_model::OpKind::Gemm { m, k, count, .. } => {
                2.0 * m * k * count / hbm + 2.0 * kernel
            }
            _ => 0.0,
        })
        .sum();
    assert!(per_layer > 0.0);
    let p = current.estimate.pace;
    let expected = per_layer * 32.0 * 8.0 * p.slowest_chip * p.lockstep;
    let got = current.estimate.breakdown.forward_s - delayed;
    assert!((got / expected - 1.0).abs() < 1e-9, "{got} {expected}");
    let e = run("precision: bf16, fp8_recipe: current")
        .0
        .unwrap_err()
        .to_string();
    assert!(e.contains("fp8_recipe") && e.contains("bf16"), "{e}");
}

/// Each fp8 tensor is quantised once: a linear's input in the forward pass, its output
/// gradient in the backward; the weight-gradient GEMM reuses both. Training writes a
/// column-wise copy of each for that GEMM, except per-tensor scaling on Blackwell, whose
/// fp8 GEMMs take any layout (Transformer Engine's `is_non_tn_fp8_gemm_supported`). So on
/// the B200 an MXFP8 forward pass is longer than a delayed-scaling one by exactly one byte
/// written per GEMM input element, and on the H100 the two are equal; the backward
/// quantises only the output gradients, so its share of the difference is one byte per
/// data-gradient input element.
#[test]
fn each_fp8_tensor_is_quantised_once_with_a_columnwise_copy_where_needed() {
    let cat = myriad_catalog::catalog();
    let run = |acc: &str, extra: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: {acc}, count: 8, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: llama3-8b}}\ntraining: {{tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 64, recompute: none, precision: fp8, {extra}}}\n"
        );
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        (
            myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8).unwrap(),
            m,
        )
    };
    let (h_d, _) = run("h100-sxm", "fp8_recipe: delayed");
    let (h_mx, _) = run("h100-sxm", "fp8_recipe: mxfp8");
    assert_eq!(
        h_d.estimate.breakdown.forward_s,
        h_mx.estimate.breakdown.forward_s
    );
    assert_eq!(
        h_d.estimate.breakdown.backward_s,
        h_mx.estimate.breakdown.backward_s
    );
    let (b_d, m) = run("b200", "fp8_recipe: delayed");
    let (b_mx, _) = run("b200", "fp8_recipe: mxfp8");
    let acc = cat.accelerator("b200").unwrap();
    assert!(acc.fp8_gemm_any_layout);
    let hbm = acc.hbm_tbps * 1e12 * acc.efficiency.hbm;
    let mut ops = Vec::new();
    m.layer_ops(0, &b_d.plan.shard(), &mut ops);
    let (mut fwd_in, mut dgrad_in) = (0.0, 0.0);
    for o in &ops {
        if let myriad_model::OpKind::Gemm { m, n, k, count } = o.kind {
            fwd_in += m * k * count;
            dgrad_in += m * n * count;
        }
    }
    let p = b_d.estimate.pace;
    let scale = 32.0 * 8.0 * p.slowest_chip * p.lockstep / hbm;
    let (fd, bd) = (
        b_mx.estimate.breakdown.forward_s - b_d.estimate.breakdown.forward_s,
        b_mx.estimate.breakdown.backward_s - b_d.estimate.breakdown.backward_s,
    );
    assert!((fd / (fwd_in * scale) - 1.0).abs() < 1e-9, "{fd}");
    assert!((bd / (dgrad_in * scale) - 1.0).abs() < 1e-9, "{bd}");
}

/// Whatever the model, accelerator and plan, current scaling never makes a step faster than
/// delayed scaling (it only adds passes and kernels); a recipe changes compute only, so the
/// memory and the optimizer step are the same and exposed communication can only shrink.
#[test]
fn current_scaling_only_adds_compute() {
    let cat = myriad_catalog::catalog();
    for (acc, count, model, plan) in [
        (
            "h100-sxm",
            64,
            "llama3-70b",
            "tp: 4, pp: 2, dp: 8, micro_batch: 1, global_batch: 128",
        ),
        (
            "b200",
            64,
            "llama3-70b",
            "tp: 8, pp: 1, dp: 8, micro_batch: 2, global_batch: 256",
        ),
        (
            "h100-sxm",
            16,
            "qwen3-30b-a3b",
            "tp: 1, pp: 1, dp: 16, ep: 16, micro_batch: 1, global_batch: 256",
        ),
        (
            "gb200",
            72,
            "mixtral-8x7b",
            "tp: 2, pp: 1, dp: 36, ep: 8, micro_batch: 1, global_batch: 288",
        ),
    ] {
        let run = |recipe: &str| {
            let text = format!(
                "format: myriad/1\ncluster: {{accelerator: {acc}, count: {count}}}\nmodel: {{preset: {model}}}\ntraining: {{{plan}, recompute: none, precision: fp8, fp8_recipe: {recipe}}}\n"
            );
            let s = parse_scenario("t.yaml", &text, cat).unwrap();
            let c = myriad_cluster::build(&s, cat).unwrap();
            let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
            myriad_train::train(s.training.as_ref().unwrap(), &m, &c, count)
                .unwrap()
                .estimate
        };
        let (d, c) = (run("delayed"), run("current"));
        let (bd, bc) = (&d.breakdown, &c.breakdown);
        assert!(
            bc.forward_s > bd.forward_s && bc.backward_s > bd.backward_s,
            "{acc} {model}"
        );
        assert!(c.step_time_s > d.step_time_s, "{acc} {model}");
        // Exposed communication can only shrink: longer GEMMs hide more of what overlaps
        // them (TP userbuffers, DP buckets under the backward).
        for (x, y) in [
            (bd.tp_comm_s, bc.tp_comm_s),
            (bd.pp_comm_s, bc.pp_comm_s),
            (bd.dp_comm_s, bc.dp_comm_s),
            (bd.ep_comm_s, bc.ep_comm_s),
        ] {
            assert!(y <= x + 1e-12, "{acc} {model}: {x} -> {y}");
        }
        assert_eq!(bd.optimizer_s, bc.optimizer_s, "{acc} {model}");
        assert_eq!(d.memory.total_gib, c.memory.total_gib, "{acc} {model}");
    }
}

/// Eager MoE layers run Transformer Engine's `GroupedLinear`: one cuBLAS GEMM per local
/// expert in each of the forward, data- and weight-gradient passes, and, outside delayed
/// fp8 scaling, one quantisation of each expert's input and output gradient
/// (`multi_tensor_quantize` fuses them only for delayed scaling). Against one grouped kernel
/// (`moe_grouped_kernel: true`, the default under a full-iteration CUDA graph), each extra
/// kernel costs the fixed per-kernel time: checked by hand for Qwen3-30B-A3B on 16 H100
/// with EP 16 (8 local experts, 48 MoE layers, 64 micro-batches).
#[test]
fn eager_experts_pay_one_kernel_per_local_expert() {
    let cat = myriad_catalog::catalog();
    let run = |extra: &str| qwen3_30b_a3b_on_16_h100(&format!("recompute: none, {extra}"));
    let kernel = cat
        .accelerator("h100-sxm")
        .unwrap()
        .efficiency
        .gemm_overhead_us
        * 1e-6;
    // (forward, backward) kernels beyond the grouped ones, per expert GEMM op.
    for (precision, fwd_extra, bwd_extra) in [
        ("bf16", 7.0, 14.0),
        ("fp8, fp8_recipe: delayed", 7.0, 14.0),
        // 7 GEMMs + 8 × 3 − 3 quantisation kernels forward; the same for the data
        // gradient, and 7 GEMMs for the weight gradient.
        ("fp8, fp8_recipe: current", 28.0, 35.0),
    ] {
        let eager = run(&format!("precision: {precision}")).unwrap();
        assert!(!eager.plan.moe_grouped_kernel);
        let grouped = run(&format!("precision: {precision}, moe_grouped_kernel: true")).unwrap();
        let p = eager.estimate.pace;
        let scale = 2.0 * 48.0 * 64.0 * kernel * p.slowest_chip * p.lockstep;
        let (e, g) = (&eager.estimate.breakdown, &grouped.estimate.breakdown);
        let fwd = (e.forward_s - g.forward_s) / (fwd_extra * scale);
        let bwd = (e.backward_s - g.backward_s) / (bwd_extra * scale);
        assert!((fwd - 1.0).abs() < 1e-9, "{precision}: forward {fwd}");
        assert!((bwd - 1.0).abs() < 1e-9, "{precision}: backward {bwd}");
    }
    // A full-iteration graph runs the grouped kernel unless told otherwise, and cannot run
    // the per-expert one.
    let graphed = run("moe_full_graph: true").unwrap();
    assert!(graphed.plan.moe_grouped_kernel);
    let e = run("moe_full_graph: true, moe_grouped_kernel: false")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("moe_grouped_kernel") && e.contains("moe_full_graph"),
        "{e}"
    );
}

/// MoE settings given for a dense model do nothing: the plan says so, names them, and the
/// estimate is the one without them.
#[test]
fn moe_settings_on_a_dense_model_are_named_as_ignored() {
    let run = |extra: &str| llama3_8b_on_8_h100(extra).0.unwrap();
    let plain = run("precision: bf16");
    let moe = run(
        "precision: bf16, ep_dispatcher: deepep, moe_full_graph: true, moe_grouped_kernel: true",
    );
    assert_eq!(plain.estimate.step_time_s, moe.estimate.step_time_s);
    assert!(
        moe.notes.iter().any(|n| n
            == "to ignore ep_dispatcher, moe_full_graph, moe_grouped_kernel: the model has no MoE layers"),
        "{:?}",
        moe.notes
    );
    assert!(!plain.notes.iter().any(|n| n.starts_with("to ignore")));
}

/// A data-parallel group placed after the pipeline (placement tp-cp-ep-pp-dp, as MLPerf's
/// NeMo configs with TP_PP_DP_MAPPING run Llama 3.1 405B): on GB200 NVL72 racks of 72,
/// TP 4 × CP 2 × PP 8 = 64 ranks make one replica, so DP peers sit 64 ranks apart, one or
/// two to a rack. EP of size 1 is placed before PP but holds no rank: it once set the DP
/// group's stride to 8 (nine peers a rack), and the dense weights' DP×CP group took the CP
/// stride, 4 (eighteen a rack), timing the gradient reduce-scatter over NVLink instead of
/// the racks' NICs.
#[test]
fn data_parallel_peers_placed_after_the_pipeline_sit_in_other_racks() {
    let text = "format: myriad/1\ncluster: {accelerator: gb200, count: 5184, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: llama3-405b}\ntraining: {tp: 4, pp: 8, cp: 2, dp: 81, vpp: 8, global_batch: 1296, placement: tp-cp-ep-pp-dp}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let (plan, _) = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, 5184).unwrap();
    use myriad_scenario::Dim;
    use myriad_train::Plan;
    assert_eq!(plan.group_dims(Dim::Dp), [(1, 8), (81, 64), (1, 1)]);
    // One DP peer to most racks of 72 (every eighth holds two: ranks 0 and 64), not nine;
    // the racks with one bound the ring. Whole units above round the group up a little
    // (81 peers over units of 12 racks: 7 of them); rounding up per rack took it to 96.
    let dp_span = plan.group(&c.levels, Dim::Dp);
    assert_eq!(dp_span.spans[0], 1);
    assert!((81..=84).contains(&dp_span.size()), "{dp_span:?}");
    // Dense weights reduce over DP × CP: the CP pair (4 apart) of each.
    let [ep, dp, _] = plan.group_dims(Dim::Dp);
    let dims = [ep, dp, (2, plan.stride(Dim::Cp))];
    assert_eq!(*Plan::group_parts(&dims), [(2, 4), (81, 64)]);
    assert_eq!(Plan::span_dims(&c.levels, &dims).spans[0], 2);
    // Adjacent dimensions stay one part of uniform stride: the default placement
    // tp-cp-ep-dp-pp puts CP and DP next to each other (8 × 2 per rack of 72 at stride 4).
    assert_eq!(*Plan::group_parts(&[(2, 4), (1, 8), (81, 8)]), [(162, 4)]);
    // Out of order and with a gap: sorted by stride, the adjacent pair merged.
    assert_eq!(
        *Plan::group_parts(&[(81, 64), (2, 4), (4, 8)]),
        [(8, 4), (81, 64)]
    );
    assert_eq!(
        Plan::span_dims(&c.levels, &[(2, 4), (1, 8), (81, 8)]),
        Plan::span(&c.levels, 162, 4)
    );
}

/// `etp` on a dense model has no effect (only expert layers use it): like the other MoE-only
/// settings it is named as ignored, and the estimate is the one without it.
#[test]
fn etp_on_a_dense_model_is_named_as_ignored() {
    let run = |extra: &str| llama3_8b_on_8_h100(extra).0.unwrap();
    let plain = run("precision: bf16");
    let etp = run("precision: bf16, etp: 8");
    assert_eq!(plain.estimate.step_time_s, etp.estimate.step_time_s);
    assert!(
        etp.notes
            .iter()
            .any(|n| n == "to ignore etp: the model has no MoE layers"),
        "{:?}",
        etp.notes
    );
}

/// Expert TP x EP tile the ranks of a pipeline stage: ETP 1000 with EP 64 on 128 ranks was
/// accepted, its expert-data-parallel group of 128 / 64,000 ranks rounded up to one.
#[test]
fn etp_times_ep_must_divide_the_stage_ranks() {
    let e = dsv3("recompute: full, first_stage_layers: 1, etp: 1000").unwrap_err();
    assert_eq!(
        e,
        "training.etp: ETP*EP = 1000*64 = 64000 does not divide the TP*CP*DP = 1*1*128 = 128 ranks of a pipeline stage"
    );
    dsv3("recompute: full, first_stage_layers: 1, etp: 2").unwrap();
}

/// `first_stage_layers: 0` (or `last_stage_layers: 0`) left a pipeline stage without a
/// transformer layer, which Megatron-Core refuses; it was accepted whenever the other layers
/// split evenly.
#[test]
fn edge_stages_of_zero_layers_are_errors() {
    for k in ["first_stage_layers", "last_stage_layers"] {
        let e = h800_dsv3(
            ", layers: 60, mtp_layers: 0",
            &format!("global_batch: 15360, pp: 16, dp: 128, recompute: full, {k}: 0"),
        )
        .unwrap_err();
        assert_eq!(
            e,
            format!("training.{k}: must be at least 1, got 0 (a pipeline stage holds at least one transformer layer, as Megatron-Core requires); leave it out for an even split")
        );
    }
    // Every layer on the first stage left the other 15 with none.
    let e = dsv3("first_stage_layers: 61").unwrap_err();
    assert_eq!(
        e,
        "training.first_stage_layers: first + last stage layers = 61 leaves none of the model's 61 layers for the other 15 stages (a pipeline stage holds at least one)"
    );
}

/// `first_stage_layers + last_stage_layers` was summed in u32: 4294967295 + 3 wrapped to 2,
/// passed the check against the model's layers, and the plan was estimated with a first
/// stage of four billion layers (its block-recompute candidates ran the process out of
/// memory).
#[test]
fn edge_stage_layers_past_u32_are_more_than_the_layers() {
    let e = dsv3("first_stage_layers: 4294967295, last_stage_layers: 3").unwrap_err();
    assert_eq!(
        e,
        "training.first_stage_layers: first + last stage layers = 4294967298 is more than the model's 61 layers"
    );
}

/// `vpp_group: 0` was an error about the step's micro-batch count that never named the 0.
#[test]
fn a_vpp_group_of_zero_is_named() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: gpt3-175b}\ntraining: {tp: 8, pp: 8, dp: 16, vpp: 2, global_batch: 16, vpp_group: 0}\n";
    let e = parse_scenario("t.yaml", text, myriad_catalog::catalog()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.yaml: training.vpp_group: must be at least 1, got 0"
    );
}

/// Megatron-Core's interleaved 1F1B order, run as an event simulation: rank `r` runs
/// `min(2(p − r − 1) + (v − 1)·p, m·v)` warm-up forwards, then alternates one forward and
/// one backward, then the remaining backwards; the k-th forward of a rank is chunk
/// `(k / p) mod v` of micro-batch `(k / (p·v))·p + k mod p` (groups of p micro-batches a
/// chunk), the k-th backward the same micro-batch of chunk `v − 1 − that`. A forward waits
/// for the previous virtual stage's output (rank r − 1, or rank p − 1's previous chunk), a
/// backward for the next one's gradient, each `tc` after it was produced (sends do not block
/// compute); forwards take 1, backwards 2. Returns the step's growth over `tc = 0`, in
/// transfers each way: (T(tc) − T(0)) / (2·tc).
fn interleaved_exposed_transfers(p: usize, v: usize, m: usize) -> f64 {
    let run = |tc: f64| -> f64 {
        let fwd = |k: usize| ((k / p) % v, (k / (p * v)) * p + k % p);
        let orders: Vec<Vec<(bool, usize, usize)>> = (0..p)
            .map(|r| {
                let total = m * v;
                let warm = (2 * (p - r - 1) + (v - 1) * p).min(total);
                let mut ops: Vec<(bool, usize, usize)> = Vec::new();
                let (mut kf, mut kb) = (0, 0);
                while kf < warm {
                    let (c, j) = fwd(kf);
                    ops.push((true, c, j));
                    kf += 1;
                }
                while kf < total {
                    let (c, j) = fwd(kf);
                    ops.push((true, c, j));
                    kf += 1;
                    let (c, j) = fwd(kb);
                    ops.push((false, v - 1 - c, j));
                    kb += 1;
                }
                while kb < total {
                    let (c, j) = fwd(kb);
                    ops.push((false, v - 1 - c, j));
                    kb += 1;
                }
                ops
            })
            .collect();
        let key = |f: bool, r: usize, c: usize, j: usize| ((f as usize * p + r) * v + c) * m + j;
        let mut done = vec![f64::NAN; 2 * p * v * m];
        let (mut clock, mut next) = (vec![0.0f64; p], vec![0usize; p]);
        let mut left: usize = orders.iter().map(Vec::len).sum();
        while left > 0 {
            let before = left;
            for r in 0..p {
                while let Some(&(f, c, j)) = orders[r].get(next[r]) {
                    let dep = match (f, r, c) {
                        (true, 0, 0) => None,
                        (true, 0, c) => Some((key(true, p - 1, c - 1, j), tc)),
                        (true, r, c) => Some((key(true, r - 1, c, j), tc)),
                        (false, r, c) if r + 1 < p => Some((key(false, r + 1, c, j), tc)),
                        (false, _, c) if c + 1 < v => Some((key(false, 0, c + 1, j), tc)),
                        (false, r, c) => Some((key(true, r, c, j), 0.0)),
                    };
                    let ready = match dep {
                        None => 0.0,
                        Some((k, _)) if done[k].is_nan() => break,
                        Some((k, lat)) => done[k] + lat,
                    };
                    clock[r] = clock[r].max(ready) + if f { 1.0 } else { 2.0 };
                    done[key(f, r, c, j)] = clock[r];
                    next[r] += 1;
                    left -= 1;
                }
            }
            assert!(left < before, "the schedule deadlocked");
        }
        clock.into_iter().fold(0.0, f64::max)
    };
    let tc = 0.125;
    let (zero, with) = (run(0.0), run(tc));
    // The zero-latency step is the textbook one: m·v chunk pairs plus the (p − 1)/v bubble.
    let chunk = 3.0;
    assert_eq!(zero, (m * v) as f64 * chunk + (p - 1) as f64 * chunk);
    (with - zero) / (2.0 * tc)
}

/// The exposed transfers of the interleaved schedule do not depend on the number of
/// micro-batches, and are the whole path through the p·v virtual stages: p·v − 1 each way.
#[test]
fn interleaved_warm_up_and_cool_down_expose_every_virtual_stage_boundary() {
    for (p, v, m) in [
        (2, 2, 4),
        (4, 2, 8),
        (4, 4, 32),
        (8, 8, 16),
        (8, 8, 64),
        (8, 12, 16),
        (16, 4, 32),
    ] {
        assert_eq!(
            interleaved_exposed_transfers(p, v, m),
            (p * v - 1) as f64,
            "p {p} v {v} m {m}"
        );
    }
}

/// GPT-3's output layer is tied to its input embedding; with PP > 1 the last stage holds a
/// copy of the word embeddings of its own (Megatron's `setup_embeddings_and_output_layer`:
/// the copy's gradients are all-reduced with the first stage's), which the memory model
/// left out. GPipe holds every micro-batch on every stage and the last adds the logits, so
/// the last stage is the peak: its weights by hand, 48 layers of 12·h² over TP 8 and 2·h
/// (norms, whole on every rank), the 51,200 × h copy over TP 8 and the final norm h, in
/// bf16.
#[test]
fn tied_embeddings_keep_a_copy_on_the_last_pipeline_stage() {
    let (s, c, m) = setup(
        "{tp: 8, pp: 2, dp: 64, global_batch: 128, micro_batch: 1, pipeline_schedule: gpipe, recompute: full, zero_stage: 1}",
    );
    assert!(m.tied_embeddings);
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
    let mem = &t.estimate.memory;
    assert_eq!(mem.peak_stage, 1);
    let h = 12288.0f64;
    let params = 48.0 * (12.0 * h * h / 8.0 + 2.0 * h) + 51200.0 * h / 8.0 + h;
    let want = params * 2.0 / (1u64 << 30) as f64;
    assert!(
        (mem.weights_gib - want).abs() < 1e-9 * want,
        "{} GiB vs {want} by hand",
        mem.weights_gib
    );
}

/// Interleaved 1F1B's chunk count m·vpp was multiplied in u64: 2^62 micro-batches on VPP 4
/// wrapped to 0, the last stage was said to hold no micro-batch in flight, and a plan was
/// reported to fit on no activations. By hand: the last of 8 stages warms up
/// (vpp − 1)·PP = 24 chunks, holds 25, i.e. 25 / 4 micro-batches.
#[test]
fn interleaved_in_flight_micro_batches_do_not_wrap() {
    use myriad_scenario::PipelineSchedule;
    let f = myriad_train::plan::in_flight_micro_batches(
        PipelineSchedule::OneFOneB,
        8,
        4,
        8,
        7,
        1u64 << 62,
    );
    assert_eq!(f, 25.0 / 4.0);
}

/// VPP without a pipeline, or with a schedule that has no virtual stages, was taken
/// silently: GPipe with VPP 2 had its bubble halved as if interleaved (its in-flight
/// micro-batches stayed GPipe's), DualPipe ignored it, PP 1 printed "PP 1 (VPP 2)".
#[test]
fn virtual_stages_need_a_pipeline_and_an_interleaving_schedule() {
    assert_eq!(
        err("{tp: 8, pp: 1, dp: 128, vpp: 2}"),
        "training.vpp: VPP 2 needs a pipeline (PP 2 or more), got PP 1; leave vpp out"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, vpp: 2, global_batch: 64, pipeline_schedule: gpipe}"),
        "training.vpp: VPP 2: the GPipe schedule has no virtual stages (interleaving is 1F1B's and the zero-bubble schedule's); leave vpp out"
    );
    assert_eq!(
        err("{tp: 8, pp: 8, dp: 16, vpp: 2, global_batch: 64, pipeline_schedule: dualpipe}"),
        "training.vpp: VPP 2: the DualPipe schedule has no virtual stages (interleaving is 1F1B's and the zero-bubble schedule's); leave vpp out"
    );
    let (s, c, m) =
        setup("{tp: 8, pp: 8, dp: 16, vpp: 2, global_batch: 64, pipeline_schedule: zero-bubble}");
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
}

/// Megatron splits every MLP's inner size over the TP (routed experts: ETP) ranks and
/// refuses a size they do not divide; such plans were estimated with fractional shards.
#[test]
fn mlp_inner_sizes_must_split_over_tp() {
    let run = |model: &str, training: &str| -> Result<(), String> {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {model}\ntraining: {training}\n");
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 64)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let plan = "{tp: 8, dp: 8, global_batch: 64, recompute: full, zero_stage: 1}";
    assert_eq!(
        run("{preset: llama3-8b, ffn_hidden: 14340}", plan).unwrap_err(),
        "training.tp: the dense MLP's inner size 14340 is not divisible by TP 8"
    );
    run("{preset: llama3-8b}", plan).unwrap();
    // Routed experts split over ETP (TP's when EP is 1), shared experts over TP.
    let moe = |expert: u32, shared: u32| {
        format!("{{preset: mixtral-8x7b, seq_len: 4096, moe: {{experts: 8, top_k: 2, expert_ffn_hidden: {expert}, shared_experts: {shared}}}}}")
    };
    assert_eq!(
        run(&moe(14338, 0), plan).unwrap_err(),
        "training.tp: the routed experts' inner size 14338 (moe.expert_ffn_hidden) is not divisible by ETP 8"
    );
    assert_eq!(
        run(&moe(14338, 0), "{tp: 8, dp: 8, ep: 2, etp: 4, global_batch: 64, recompute: full, zero_stage: 1}").unwrap_err(),
        "training.etp: the routed experts' inner size 14338 (moe.expert_ffn_hidden) is not divisible by ETP 4"
    );
    assert_eq!(
        run(
            &moe(14338, 1),
            "{tp: 8, dp: 8, ep: 8, global_batch: 64, recompute: full, zero_stage: 1}"
        )
        .unwrap_err(),
        "training.tp: the shared experts' inner size 14338 is not divisible by TP 8"
    );
    // EP 8 with ETP 1: the experts are whole on each rank.
    run(
        &moe(14338, 0),
        "{tp: 8, dp: 8, ep: 8, global_batch: 64, recompute: full, zero_stage: 1}",
    )
    .unwrap();
}

/// MoE parallel folding: EP 32 over TP 2 × DP 16 (Qwen3-235B on 256 H100, Megatron-Bridge's
/// H100 recipe: EP does not divide DP). The expert layers re-factor each stage's 32 ranks
/// as ETP 1 × EP 32: the EP group is the stage, 32 adjacent ranks (4 DGX), not 32 ranks at
/// TP's stride (which reached into the next pipeline stage), and the pipeline's stride is
/// the stage's 32 ranks (it was 32 × (16 / 32 = 0) → adjacent ranks, over NVLink).
#[test]
fn folded_expert_parallelism_spans_the_stage() {
    let plan_of = |count: u32, training: &str| {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: qwen3-235b-a22b, seq_len: 4096}}\ntraining: {training}\n");
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, count as u64)
            .map(|(p, notes)| (p, notes, c))
            .map_err(|e| e.to_string())
    };
    use myriad_scenario::Dim;
    let (p, notes, c) = plan_of(
        256,
        "{tp: 2, pp: 8, dp: 16, ep: 32, vpp: 4, global_batch: 256, micro_batch: 1, recompute: full}",
    )
    .unwrap();
    assert!(p.ep_folded());
    assert_eq!(p.group_layout(Dim::Ep), (32, 1));
    assert_eq!(p.group_layout(Dim::Dp), (16, 2));
    assert_eq!(p.stride(Dim::Pp), 32);
    assert_eq!(p.group_layout(Dim::Pp), (8, 32));
    // Four DGX of 8: the EP group spans 4 domains, 8 in each.
    assert_eq!(p.group(&c.levels, Dim::Ep).spans[0], 8);
    assert_eq!(p.group(&c.levels, Dim::Ep).size(), 32);
    let (_, edp) = p.expert_dims().unwrap();
    assert!(edp.iter().all(|d| d.0 == 1), "{edp:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("ep: 32 spans TP*CP*DP = 32 ranks")),
        "{notes:?}"
    );

    // EP 8 over TP 4 × DP 4 at ETP 1 (32 H100, PP 2): two expert groups of 8 per stage, each
    // two TP groups side by side; expert DP pairs them, 8 apart.
    let (p, _, _) = plan_of(
        32,
        "{tp: 4, pp: 2, dp: 4, ep: 8, global_batch: 64, micro_batch: 1, recompute: full}",
    )
    .unwrap();
    assert_eq!(p.group_layout(Dim::Ep), (8, 1));
    let (_, edp) = p.expert_dims().unwrap();
    assert_eq!(edp[0], (2, 8));
    assert_eq!(p.stride(Dim::Pp), 16);
    // Nested EP is unchanged: EP 4 inside DP 8 at TP 2.
    let (p, _, _) = plan_of(
        64,
        "{tp: 2, pp: 4, dp: 8, ep: 4, global_batch: 64, micro_batch: 1, recompute: full}",
    )
    .unwrap();
    assert!(!p.ep_folded());
    assert_eq!(p.group_layout(Dim::Ep), (4, 2));
    assert_eq!(p.stride(Dim::Pp), 16);
}

/// A folded EP group that does not tile a stage's ranks in placement order has no layout:
/// EP 12 over TP 8 × DP 3 would take all 8 TP ranks and then 1.5 DP replicas.
#[test]
fn folded_expert_parallelism_that_does_not_tile_is_an_error() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 48, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: mixtral-8x7b, seq_len: 4096, moe: {experts: 24, top_k: 2, expert_ffn_hidden: 14336, shared_experts: 0}}\ntraining: {tp: 8, pp: 2, dp: 3, ep: 12, global_batch: 48, micro_batch: 1, recompute: full}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let e = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, 48)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "training.ep: EP 12 (ETP 1) spans the TP*CP*DP = 8*1*3 = 24 ranks of a stage (it does not divide DP), but does not tile them in the placement order tp-cp-ep-dp-pp"
    );
}

/// Llama 3 70B (8 KV heads of 128) at TP 16: each KV head is replicated on two ranks, and
/// each rank holds its K and V projections whole (2·8192·128 = 2,097,152 weights), not half
/// of them. Weights per rank (pp 1, bf16): 80 layers of Q and O 2·8192·8192/16 =
/// 8,388,608, K and V 2,097,152, norms 2·8192 = 16,384 (whole on every rank) and the MLP
/// 3·8192·28672/16 = 44,040,192, plus the untied embedding and output layer
/// 2·128256·8192/16 = 131,334,144 and the final norm 8,192: 4,494,721,024 weights (the old
/// kv_heads/TP count gave 80·1,048,576 fewer).
#[test]
fn replicated_kv_heads_hold_whole_kv_projections() {
    let t = gb200("{tp: 16, pp: 1, dp: 4, global_batch: 64, micro_batch: 1, precision: bf16}");
    let per_layer = 8_388_608.0 + 2_097_152.0 + 16_384.0 + 44_040_192.0;
    let weights = 80.0 * per_layer + 131_334_144.0 + 8_192.0;
    let got = t.estimate.memory.weights_gib * 1024f64.powi(3) / 2.0;
    assert!((got / weights - 1.0).abs() < 1e-12, "{got} vs {weights}");
    // At TP 8 no KV head is replicated: the rank holds exactly 1/8 of every layer's
    // attention and MLP weights (and the norms whole).
    let t8 = gb200("{tp: 8, pp: 1, dp: 8, global_batch: 64, micro_batch: 1, precision: bf16}");
    let p = myriad_catalog::catalog()
        .model("llama3-70b")
        .unwrap()
        .model
        .params();
    let w8 = (80.0 * (p.attention_per_layer + p.dense_mlp_per_layer) + p.embedding + p.output)
        / 8.0
        + 80.0 * p.norms_per_layer
        + 8192.0;
    let got8 = t8.estimate.memory.weights_gib * 1024f64.powi(3) / 2.0;
    assert!((got8 / w8 - 1.0).abs() < 1e-12, "{got8} vs {w8}");
}

/// Full recompute keeps each layer's input, but the backward rebuilds one layer's whole
/// activations at a time (Korthikanti et al. 2022 §4): Llama 3 8B, micro-batch 2, seq 8192,
/// TP 1, PP 1 (one micro-batch in flight), bf16 with a fused attention kernel. A layer
/// stores 139,392 bytes a token without recompute (36,992 attention + 102,400 SwiGLU MLP)
/// and 2h = 8,192 with it, over 16,384 tokens; the peak with full recompute is 32 inputs
/// plus one layer's rebuilt 131,200 bytes a token, so against no recompute it saves 31
/// layers' worth, not 32.
#[test]
fn full_recompute_peak_holds_one_rebuilt_layer() {
    let run = |recompute: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: llama3-8b, seq_len: 8192}}\ntraining: {{tp: 1, pp: 1, dp: 8, global_batch: 16, micro_batch: 2, precision: bf16, attention: flash, recompute: {recompute}}}\n"
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8).unwrap()
    };
    let (none, full) = (run("none"), run("full"));
    assert_eq!(none.estimate.memory.in_flight_micro_batches, 1.0);
    let saved = (none.estimate.memory.activations_gib - full.estimate.memory.activations_gib)
        * 1024f64.powi(3);
    let expect = 31.0 * (139_392.0 - 8_192.0) * 16_384.0;
    assert!((saved / expect - 1.0).abs() < 1e-12, "{saved} vs {expect}");
}

/// The ranks that share a replicated KV head (TP beyond `kv_heads`) each hold only their
/// own query heads' share of its K/V weight gradient, so they all-reduce it once per step,
/// on the critical path. Llama 3 70B (8 KV heads of 128, hidden 8192) at TP 16, PP 4: the
/// two neighbouring TP ranks of each head all-reduce the 80 / 4 = 20 layers' K and V
/// gradients of the critical stage, 20 · 2 · 8192 · 128 weights in fp32 = 167,772,160
/// bytes, charged to TP communication once. At TP 8 (no replicas) nothing of the kind runs.
#[test]
fn replicated_kv_head_gradients_are_all_reduced_once_per_step() {
    use myriad_collective::{GroupSpan, Layout, Op};
    use std::sync::Mutex;
    // Analytical, plus 1000 s and a record for each all-reduce over two neighbouring ranks.
    struct Marked<'a> {
        inner: myriad_train::Analytical<'a>,
        seen: Mutex<Vec<f64>>,
    }
    impl myriad_train::CollectiveTimer for Marked<'_> {
        fn time(&self, op: Op, bytes: f64, span: &GroupSpan, layout: &Layout) -> f64 {
            let t = self.inner.time(op, bytes, span, layout);
            if op == Op::AllReduce && span.size() == 2 && layout.stride == 1 {
                self.seen.lock().unwrap().push(bytes);
                return t + 1000.0;
            }
            t
        }
    }
    let run = |training: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: gb200, count: 72}}\nmodel: {{preset: llama3-70b, seq_len: 8192}}\ntraining: {training}\n"
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        let (plan, _) = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, 64).unwrap();
        let plain = myriad_train::estimate(&m, &plan, &c);
        let marked = Marked {
            inner: myriad_train::Analytical { levels: &c.levels },
            seen: Mutex::new(Vec::new()),
        };
        let e = myriad_train::estimate_with(&m, &plan, &c, &marked);
        (plain, e, marked.seen.into_inner().unwrap())
    };
    let (plain, e, seen) = run("{tp: 16, pp: 4, dp: 1, global_batch: 64, micro_batch: 1, precision: bf16, recompute: full}");
    assert_eq!(seen, vec![167_772_160.0]);
    let extra = e.breakdown.tp_comm_s - plain.breakdown.tp_comm_s;
    assert!((extra - 1000.0).abs() < 1e-6, "{extra}");
    assert!((e.step_time_s - plain.step_time_s - 1000.0).abs() < 1e-6);
    assert!(plain.breakdown.tp_comm_s > 0.0);
    let (plain8, e8, seen8) = run(
        "{tp: 8, pp: 4, dp: 2, global_batch: 64, micro_batch: 1, precision: bf16, recompute: full}",
    );
    assert!(seen8.is_empty(), "{seen8:?}");
    assert_eq!(e8.step_time_s, plain8.step_time_s);
}

/// The distributed optimizer shards the experts' state over expert DP even when DP × CP is
/// 1: Qwen3-30B-A3B on 8 H100 at TP 8, DP 1 with EP 4 folded over the TP ranks (ETP 1)
/// leaves two ranks holding the same experts. Each rank holds 48 layers of 32 experts of
/// 3·2048·768 = 4,718,592 weights (7,247,757,312), whose 12 bytes of optimizer state a
/// weight halve over the two: 43,486,543,872 bytes fewer than without the distributed
/// optimizer (it used to shard nothing when DP × CP was 1).
#[test]
fn distributed_optimizer_shards_experts_over_expert_dp_without_dp() {
    let run = |extra: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: qwen3-30b-a3b}}\ntraining: {{tp: 8, pp: 1, dp: 1, ep: 4, global_batch: 8, micro_batch: 1, precision: bf16, recompute: full, {extra}}}\n"
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 8).unwrap()
    };
    let plain = run("distributed_optimizer: false");
    let sharded = run("distributed_optimizer: true");
    assert!(sharded.plan.ep_folded());
    let saved = (plain.estimate.memory.optimizer_gib - sharded.estimate.memory.optimizer_gib)
        * 1024f64.powi(3);
    let expect = 48.0 * 32.0 * 4_718_592.0 / 2.0 * 12.0;
    assert_eq!(expect, 43_486_543_872.0);
    assert!((saved / expect - 1.0).abs() < 1e-9, "{saved} vs {expect}");
    // The optimizer step reads and writes half the experts' state as well.
    assert!(sharded.estimate.breakdown.optimizer_s < plain.estimate.breakdown.optimizer_s);
}

/// Tied embeddings over a pipeline: the first and last pipeline ranks each hold the word
/// embeddings (input embedding, output layer) and all-reduce their gradients once per step
/// (Megatron's `_allreduce_word_embedding_grads`). GPT-3 175B at TP 8, PP 8: 51200 · 12288
/// / 8 = 78,643,200 weights in fp32, 314,572,800 bytes, between ranks 7 · 128 apart
/// (placement tp-cp-ep-dp-pp: the PP stride is TP · DP = 128), charged with the gradient
/// reduction (DP communication) once. Under DualPipe the head sits with the embedding and nothing is reduced.
#[test]
fn tied_embedding_gradients_are_all_reduced_between_the_pipeline_ends() {
    use myriad_collective::{GroupSpan, Layout, Op};
    use std::sync::Mutex;
    struct Marked<'a> {
        inner: myriad_train::Analytical<'a>,
        stride: u64,
        seen: Mutex<Vec<f64>>,
    }
    impl myriad_train::CollectiveTimer for Marked<'_> {
        fn time(&self, op: Op, bytes: f64, span: &GroupSpan, layout: &Layout) -> f64 {
            let t = self.inner.time(op, bytes, span, layout);
            if op == Op::AllReduce && span.size() == 2 && layout.stride == self.stride {
                self.seen.lock().unwrap().push(bytes);
                return t + 1000.0;
            }
            t
        }
    }
    let run = |training: &str| {
        let (s, c, m) = setup(training);
        let (plan, _) = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, 1024).unwrap();
        let plain = myriad_train::estimate(&m, &plan, &c);
        let marked = Marked {
            inner: myriad_train::Analytical { levels: &c.levels },
            stride: 7 * 128,
            seen: Mutex::new(Vec::new()),
        };
        let e = myriad_train::estimate_with(&m, &plan, &c, &marked);
        (plain, e, marked.seen.into_inner().unwrap())
    };
    let (plain, e, seen) =
        run("{tp: 8, pp: 8, dp: 16, global_batch: 512, micro_batch: 1, recompute: full}");
    assert_eq!(seen, vec![314_572_800.0]);
    let extra = e.breakdown.dp_comm_s - plain.breakdown.dp_comm_s;
    assert!((extra - 1000.0).abs() < 1e-6, "{extra}");
    assert!((e.step_time_s - plain.step_time_s - 1000.0).abs() < 1e-6);
    let (_, _, seen) = run("{tp: 8, pp: 8, dp: 16, global_batch: 512, micro_batch: 1, recompute: full, pipeline_schedule: dualpipe}");
    assert!(seen.is_empty(), "{seen:?}");
}

/// When recompute is not given, activation offloading (a system with a host memory link) is
/// tried beside selective recompute too, as the search tries it and Megatron-Core offloads
/// what selective recompute keeps: Llama 3 70B at 8K, micro-batch 4, TP 1 on 72 GB200 does
/// not fit without recompute even offloading every layer, and its fastest fitting plan is
/// selective recompute with part of the layers offloaded (9.59 s), faster than the block
/// full recompute the choice fell back to (offload was tried only without recompute).
#[test]
fn unstated_recompute_tries_offloading_beside_selective_recompute() {
    let cat = myriad_catalog::catalog();
    let scenario = |extra: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: gb200, count: 72}}\nmodel: {{preset: llama3-70b, seq_len: 8192}}\ntraining: {{global_batch: 288, precision: fp8, tp: 1, pp: 1, dp: 72, micro_batch: 4, zero_stage: 3{extra}}}\n"
        );
        parse_scenario("t.yaml", &text, cat).unwrap()
    };
    let s = scenario("");
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let run = |extra: &str| {
        myriad_train::train(scenario(extra).training.as_ref().unwrap(), &m, &c, 72).unwrap()
    };
    let chosen = run("");
    assert!(chosen.estimate.fits);
    assert_eq!(chosen.plan.recompute, myriad_model::Recompute::Selective);
    let share = chosen.plan.offload_fraction;
    assert!(share > 0.0 && share < 1.0, "{share}");
    // Faster than every full-recompute choice (block recompute picked where unstated).
    let full = run(", recompute: full");
    assert!(full.estimate.fits);
    assert!(
        chosen.estimate.step_time_s < full.estimate.step_time_s,
        "{} against {}",
        chosen.estimate.step_time_s,
        full.estimate.step_time_s
    );
    // The offload is needed: the same selective plan without it overflows HBM.
    let bare = myriad_train::estimate(
        &m,
        &myriad_train::Plan {
            offload_fraction: 0.0,
            ..chosen.plan.clone()
        },
        &c,
    );
    assert!(!bare.fits, "{} GiB", bare.memory.total_gib);
}

/// With DP 1 the optimizer state is still sharded over CP (Megatron's distributed optimizer
/// uses the DP x CP group): with sharding not given, `train` tried no ZeRO stage at DP 1,
/// so Llama 3 70B at TP 8 x CP 2 on 16 H200 ran unsharded where ZeRO-1 fits (the search
/// offers it since session 43).
#[test]
fn unstated_sharding_is_tried_over_context_parallelism_without_dp() {
    let text = "format: myriad/1\ncluster: {accelerator: h200, count: 16}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {global_batch: 16, precision: bf16, tp: 8, cp: 2, dp: 1, pp: 1, micro_batch: 1, sequence_parallel: true}\n";
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 16).unwrap();
    assert!(
        t.plan.zero_stage >= 1 && t.plan.distributed_optimizer,
        "{:?}",
        t.notes
    );
    assert!(t.estimate.fits);
    let unsharded = myriad_train::estimate(
        &m,
        &myriad_train::Plan {
            zero_stage: 0,
            distributed_optimizer: false,
            ..t.plan.clone()
        },
        &c,
    );
    assert!(
        unsharded.memory.optimizer_gib > t.estimate.memory.optimizer_gib,
        "{} against {}",
        unsharded.memory.optimizer_gib,
        t.estimate.memory.optimizer_gib
    );
}

/// Under sequence parallelism each TP rank holds the norms (and an MoE layer's router)
/// whole but computes their gradients from its own share of the sequence, so the TP group
/// all-reduces them once per step (Megatron-Core's `_allreduce_layernorm_grads`), on the
/// critical path; it was not charged. Llama 3 70B (hidden 8192, RMSNorm) at TP 8, PP 1:
/// 80 layers of two norms and the final norm, 80 · 2 · 8192 + 8192 = 1,318,912 weights in
/// fp32, 5,275,648 bytes. Qwen3-30B-A3B (hidden 2048, 128 experts) at TP 4: 48 layers of
/// two norms and a 2048 × 128 router, and the final norm, 12,781,568 weights, 51,126,272
/// bytes. Without sequence parallelism nothing of the kind runs.
#[test]
fn sequence_parallel_gradients_are_all_reduced_over_tp_once_per_step() {
    use myriad_collective::{GroupSpan, Layout, Op};
    use std::sync::Mutex;
    // Analytical, plus 1000 s and a record for each all-reduce over the TP group.
    struct Marked<'a> {
        inner: myriad_train::Analytical<'a>,
        tp: u64,
        seen: Mutex<Vec<f64>>,
    }
    impl myriad_train::CollectiveTimer for Marked<'_> {
        fn time(&self, op: Op, bytes: f64, span: &GroupSpan, layout: &Layout) -> f64 {
            let t = self.inner.time(op, bytes, span, layout);
            if op == Op::AllReduce && span.size() == self.tp && layout.stride == 1 {
                self.seen.lock().unwrap().push(bytes);
                return t + 1000.0;
            }
            t
        }
    }
    let run = |cluster: &str, model: &str, tp: u64, training: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {cluster}\nmodel: {{preset: {model}}}\ntraining: {training}\n"
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        let n = s
            .training
            .as_ref()
            .unwrap()
            .accelerators
            .unwrap_or(s.cluster.count);
        let (plan, _) = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, n).unwrap();
        let plain = myriad_train::estimate(&m, &plan, &c);
        let marked = Marked {
            inner: myriad_train::Analytical { levels: &c.levels },
            tp,
            seen: Mutex::new(Vec::new()),
        };
        let e = myriad_train::estimate_with(&m, &plan, &c, &marked);
        (plain, e, marked.seen.into_inner().unwrap())
    };
    let gb200 = "{accelerator: gb200, count: 72}";
    let llama = "tp: 8, pp: 1, dp: 8, accelerators: 64, global_batch: 64, micro_batch: 1, precision: bf16, recompute: full";
    let (plain, e, seen) = run(gb200, "llama3-70b", 8, &format!("{{{llama}}}"));
    assert_eq!(seen, vec![5_275_648.0]);
    let extra = e.breakdown.tp_comm_s - plain.breakdown.tp_comm_s;
    assert!((extra - 1000.0).abs() < 1e-6, "{extra}");
    assert!((e.step_time_s - plain.step_time_s - 1000.0).abs() < 1e-6);
    // Without sequence parallelism the TP all-reduces are the layers' activations only.
    let (_, _, seen) = run(
        gb200,
        "llama3-70b",
        8,
        &format!("{{{llama}, sequence_parallel: false}}"),
    );
    assert!(!seen.is_empty() && !seen.contains(&5_275_648.0), "{seen:?}");
    let (_, _, seen) = run(
        "{accelerator: h100-sxm, count: 8}",
        "qwen3-30b-a3b",
        4,
        "{tp: 4, pp: 1, dp: 2, ep: 2, global_batch: 16, micro_batch: 1, precision: bf16, recompute: full}",
    );
    assert_eq!(seen, vec![51_126_272.0]);
}

/// Norm weights sit whole on every tensor-parallel rank (Megatron replicates LayerNorm and
/// RMSNorm weights over TP, with or without sequence parallelism); they were counted split
/// over TP, and the final norm not at all. Llama 3 70B at TP 8, PP 1, by hand: 80 layers of
/// attention 150,994,944/8 = 18,874,368, MLP 3·8192·28672/8 = 88,080,384 and two norms
/// 2·8192 = 16,384 whole; embedding and output 2·128256·8192/8 = 262,668,288; the final
/// norm 8,192: 8,820,367,360 weights per rank (the old count: 8,819,212,288, 80·14,336 +
/// 8,192 = 1,155,072 fewer). Gradients and the optimizer state count the same weights.
#[test]
fn norm_weights_are_held_whole_on_every_tp_rank() {
    let want = 80.0 * (18_874_368.0 + 88_080_384.0 + 16_384.0) + 262_668_288.0 + 8_192.0;
    assert_eq!(want, 8_820_367_360.0);
    let gib = 1024f64.powi(3);
    for sp in [true, false] {
        let t = gb200(&format!(
            "{{tp: 8, pp: 1, dp: 8, global_batch: 64, micro_batch: 1, precision: bf16, sequence_parallel: {sp}, zero_stage: 1}}"
        ));
        let m = &t.estimate.memory;
        let weights = m.weights_gib * gib / 2.0;
        assert!(
            (weights / want - 1.0).abs() < 1e-12,
            "SP {sp}: {weights} vs {want}"
        );
        // fp32 main gradients of every weight the rank holds; ZeRO-1 shards the fp32 master
        // weights and two fp32 moments (12 bytes) over DP 8.
        let grads = m.gradients_gib * gib / 4.0;
        assert!(
            (grads / want - 1.0).abs() < 1e-12,
            "SP {sp}: {grads} vs {want}"
        );
        let optim = m.optimizer_gib * gib / 12.0 * 8.0;
        assert!(
            (optim / want - 1.0).abs() < 1e-12,
            "SP {sp}: {optim} vs {want}"
        );
    }
}

/// MLA's down projections and latent norms, every norm and the MoE routers sit whole on
/// every TP rank (Megatron-Core: duplicated `TELinear` down projections, replicated norms,
/// `TopKRouter`'s plain weight); everything else splits over TP. So the weights a rank
/// holds are `S/tp + R`, and `R = 2·W(TP 2) − W(TP 1)` must be the hand count. DeepSeek-V3
/// without MTP, PP 1: 61 layers × (two norms 14,336 + q_down 7,168 × 1,536 + kv_down
/// 7,168 × 576 + latent norms 2,048) + 58 MoE layers × (router 7,168 × 256 + the rank's
/// 256/64 experts of 3 × 7,168 × 2,048, which EP, not TP, divides) + final norm 7,168.
#[test]
fn mla_down_projections_and_routers_are_whole_on_every_tp_rank() {
    let per_layer = 14_336.0 + 7_168.0 * 1_536.0 + 7_168.0 * 576.0 + 2_048.0;
    let experts = 4.0 * 3.0 * 7_168.0 * 2_048.0;
    let want = 61.0 * per_layer + 58.0 * (7_168.0 * 256.0 + experts) + 7_168.0;
    let weights = |tp: u32| -> f64 {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h800, count: 2048, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: deepseek-v3, mtp_layers: 0}}\ntraining: {{micro_batch: 1, tp: {tp}, pp: 1, ep: 64, dp: {}, global_batch: 4096, precision: bf16, zero_stage: 1}}\n",
            2048 / tp
        );
        let cat = myriad_catalog::catalog();
        let s = parse_scenario("t.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
        let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 2048).unwrap();
        t.estimate.memory.weights_gib * 1024f64.powi(3) / 2.0
    };
    let got = 2.0 * weights(2) - weights(1);
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
}
