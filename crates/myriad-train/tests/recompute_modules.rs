//! Module-level selective recompute (Megatron-Core `recompute_modules`): what each module
//! frees, what it costs, how it is chosen, and what is refused.

use myriad_model::{Recompute, RecomputeModule as M, RecomputeModules, Shard};
use myriad_scenario::parse_scenario;

const OSS: &str = "format: myriad/1\ncluster: {accelerator: b200, count: 64, scale_up: hgx-b200, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: gpt-oss-120b, seq_len: 4096}\n";

fn run(training: &str) -> Result<myriad_train::TrainEstimate, String> {
    let cat = myriad_catalog::catalog();
    let text = format!("{OSS}training: {training}\n");
    let s = parse_scenario("t.yaml", &text, cat).map_err(|e| e.to_string())?;
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 64).map_err(|e| e.to_string())
}

fn model() -> myriad_model::Transformer {
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", OSS, cat).unwrap();
    s.model.as_ref().unwrap().resolve(cat).unwrap()
}

/// By hand, per token of an MoE layer in bf16 without TP: `layernorm` frees the two norm
/// outputs (2·h bytes each), `moe_act` the activation output of each of the top-k routed
/// copies (2·ffn bytes each). gpt-oss-120b: h = ffn = 2880, top-4: 2·2880·(2 + 4) bytes.
#[test]
fn layernorm_and_moe_act_free_what_they_discard() {
    let m = model();
    let s = Shard {
        ep: 8,
        ..Shard::single(4)
    };
    let base = m.activation_memory_with(&s, Recompute::Selective, RecomputeModules::CORE_ATTN, 2.0);
    let cheap = m.activation_memory_with(
        &s,
        Recompute::Selective,
        RecomputeModules::of(&[M::CoreAttn, M::Layernorm, M::MoeAct]),
        2.0,
    );
    let tokens = 4.0 * 4096.0;
    let want = tokens * 2.0 * 2880.0 * (2.0 + 4.0);
    assert!((base.moe_layer - cheap.moe_layer - want).abs() < 1e-6 * want);
    // `moe` keeps only the MoE block's inputs: less than any output-discarding set.
    let whole = m.activation_memory_with(
        &s,
        Recompute::Selective,
        RecomputeModules::of(&[M::CoreAttn, M::Layernorm, M::Moe]),
        2.0,
    );
    assert!(whole.moe_layer < cheap.moe_layer);
    // Full recompute keeps less than any selective set.
    let full = m.activation_memory_with(&s, Recompute::Full, RecomputeModules::CORE_ATTN, 2.0);
    assert!(full.moe_layer < whole.moe_layer);
}

/// Along the ladder the validator and `train` try, memory never grows and recompute time
/// never shrinks; recomputing the whole MoE block runs its dispatch and combine a third
/// time (forward, recompute, backward): EP time × 3/2.
#[test]
fn the_ladder_trades_memory_for_time() {
    let m = model();
    let ladder = myriad_train::selective_ladder(&m);
    let names: Vec<String> = ladder.iter().map(|s| s.names()).collect();
    assert_eq!(
        names,
        [
            "core_attn",
            "core_attn, layernorm",
            "core_attn, layernorm, moe_act",
            "core_attn, layernorm, moe_act, moe"
        ],
        "gpt-oss has no MLA, no dense layers and no shared experts"
    );
    let base = "{global_batch: 1280, micro_batch: 4, tp: 1, pp: 1, dp: 64, ep: 8, precision: bf16, distributed_optimizer: true";
    let mut last: Option<myriad_train::TrainEstimate> = None;
    for set in &ladder {
        let list = set.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
        let t = run(&format!("{base}, recompute_modules: [{list}]}}")).unwrap();
        if let Some(prev) = &last {
            assert!(t.estimate.memory.activations_gib <= prev.estimate.memory.activations_gib);
            assert!(t.estimate.breakdown.recompute_s >= prev.estimate.breakdown.recompute_s);
        }
        last = Some(t);
    }
    let cheap = run(&format!(
        "{base}, recompute_modules: [layernorm, moe_act]}}"
    ))
    .unwrap();
    let whole = run(&format!("{base}, recompute_modules: [moe]}}")).unwrap();
    let (a, b) = (
        cheap.estimate.breakdown.ep_comm_s,
        whole.estimate.breakdown.ep_comm_s,
    );
    assert!((b - 1.5 * a).abs() < 1e-9 * b, "{b} vs 1.5 x {a}");
}

/// When nothing cheaper fits, `train` picks the cheapest module set that does, and says so.
#[test]
fn the_cheapest_set_that_fits_is_chosen() {
    let t = run("{global_batch: 1280, micro_batch: 5, tp: 1, pp: 1, dp: 64, ep: 8, precision: bf16, distributed_optimizer: true, grad_reduce_in_fp32: false}").unwrap();
    assert!(t.estimate.fits);
    assert_eq!(t.plan.recompute, Recompute::Selective);
    let notes = t.notes.join(" | ");
    assert!(
        notes.contains(
            "recompute: selective(core_attn+layernorm+moe_act) (not given; the fastest that fits)"
        ),
        "{notes}"
    );
    let none = run("{global_batch: 1280, micro_batch: 5, tp: 1, pp: 1, dp: 64, ep: 8, precision: bf16, distributed_optimizer: true, grad_reduce_in_fp32: false, recompute: none}").unwrap();
    assert!(!none.estimate.fits);
}

#[test]
fn modules_that_do_not_apply_are_refused() {
    let base = "{global_batch: 1280, micro_batch: 4, tp: 1, pp: 1, dp: 64, ep: 8";
    let e = run(&format!(
        "{base}, recompute_modules: [layernorm, mla_up_proj]}}"
    ))
    .unwrap_err();
    assert_eq!(
        e,
        "training.recompute_modules: `mla_up_proj` (entry 2) does not apply: the model has no multi-head latent attention"
    );
    let e = run(&format!("{base}, recompute_modules: [mlp]}}")).unwrap_err();
    assert!(e.contains("no dense MLP"), "{e}");
    let e = run(&format!(
        "{base}, recompute: full, recompute_modules: [layernorm]}}"
    ))
    .unwrap_err();
    assert!(e.contains("recompute is `full`"), "{e}");
    let e = run(&format!("{base}, recompute_modules: [layernrm]}}")).unwrap_err();
    assert!(
        e.contains("training.recompute_modules[0]") && e.contains("`layernorm`"),
        "{e}"
    );
}

/// HFU counts the recomputed share of each kind of layer from a layer of that kind: it took
/// the last layer as the MoE one, which under `moe.every: 2` with an odd layer count is
/// dense, so recomputing the whole MoE block (`moe`) counted no recomputed FLOPs at all
/// (HFU equal to MFU). Layers 0 and 2 dense, layer 1 MoE: the MoE block is recomputed once
/// per step in three layers, so HFU exceeds MFU.
#[test]
fn hfu_counts_the_moe_layers_recompute_when_the_last_layer_is_dense() {
    let cat = myriad_catalog::catalog();
    let text = "format: myriad/1\ncluster: {accelerator: b200, count: 64, scale_up: hgx-b200, scale_out: {fabric: infiniband-ndr}}\nmodel: {name: t, layers: 3, hidden: 2880, ffn_hidden: 2880, heads: 64, kv_heads: 8, head_dim: 64, vocab: 201088, seq_len: 4096, gated_mlp: true, moe: {experts: 128, top_k: 4, expert_ffn_hidden: 2880, every: 2}}\ntraining: {tp: 1, pp: 1, dp: 64, ep: 8, global_batch: 64, micro_batch: 1, recompute_modules: [moe], zero_stage: 1}\n";
    let s = parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    assert!(!m.is_moe_layer(2) && m.is_moe_layer(1));
    let t = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, 64).unwrap();
    let e = &t.estimate;
    assert!(e.breakdown.recompute_s > 0.0);
    // The MoE block's forward FLOPs (router, four routed experts' SwiGLU of 3·h·ffn weights)
    // over the forward of the whole model, per token: at least the experts' 2·4·3·h·ffn over
    // three layers and the head.
    let experts = 2.0 * 4.0 * 3.0 * 2880.0 * 2880.0;
    let per_token = m.flops_per_sequence().forward / 4096.0;
    let want = experts / per_token;
    let got = e.hfu / e.mfu - 1.0;
    // Model FLOPs are 3× forward; the recomputed ones one forward of the MoE block.
    assert!(
        got >= want / 3.0 * 0.999,
        "HFU/MFU - 1 = {got}, want at least {}",
        want / 3.0
    );
}
