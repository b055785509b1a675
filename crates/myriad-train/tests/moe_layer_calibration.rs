//! The op-sum compute model against one MoE transformer layer measured on an H100 as one
//! expert-parallel rank runs it (calibration/h100-moe-layer-measured.json, made by
//! calibration/moe_layer_bench.py: PyTorch eager, bf16, router + top-k, two permutes,
//! `torch._grouped_mm` experts, two un-permutes, no all-to-all), with the GPU time of every
//! kernel summed by the profiler.
//!
//! What it shows: the expert GEMMs (the CUTLASS grouped-GEMM kernels, forward, data and
//! weight gradients, over the ragged per-expert counts a real router gives) take what the
//! step model's GEMM form says, within 15% (the model is 4-12% slower: it also charges the
//! fp32 main-gradient accumulation of Megatron's weight-gradient epilogue, which the
//! measured `torch._grouped_mm` does not do; 0.9 ms of DeepSeek's 1.4 ms difference). The whole layer does not: PyTorch's naive
//! token movement (`index_select` / `index_add_`, whose backward scatters with atomics)
//! takes 25-45% of the layer's GPU time, far more than the read+write passes Megatron's
//! fused permute kernels make (the model's `moe_permute`); so the layer total is printed
//! for the record and not asserted.

use myriad_model::{Moe, OpKind, Shard, Transformer};
use myriad_scenario::Precision;

mod common;
use common::calibration;

/// One MoE layer of a measured row's shape (`hidden`, `experts`, `top_k`, `expert_ffn`),
/// with attention (heads, KV heads, head dim, sequence length) as given.
fn moe_layer(
    r: &serde_json::Value,
    (heads, kv_heads, head_dim, seq): (u32, u32, u32, u32),
) -> Transformer {
    let u = |k: &str| r[k].as_u64().unwrap() as u32;
    Transformer {
        name: r["name"].as_str().unwrap().into(),
        layers: 1,
        hidden: u("hidden"),
        ffn_hidden: u("expert_ffn"),
        heads,
        kv_heads,
        head_dim: Some(head_dim),
        vocab: 32000,
        seq_len: seq,
        gated_mlp: true,
        tied_embeddings: false,
        moe: Some(Moe::routed(u("experts"), u("top_k"), u("expert_ffn"))),
        mla: None,
        sliding_window: None,
        attention_sinks: false,
        mtp_layers: 0,
    }
}

#[test]
fn moe_expert_gemms_match_the_h100_measurement() {
    let data = calibration("h100-moe-layer-measured.json");
    let acc = myriad_catalog::catalog().accelerator("h100-sxm").unwrap();
    let mut worst: f64 = 0.0;
    let rows = data["rows"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for r in rows {
        let u = |k: &str| r[k].as_u64().unwrap() as u32;
        let attention = (u("heads"), u("kv_heads"), u("head_dim"), u("seq"));
        let m = moe_layer(r, attention);
        let shard = Shard {
            ep: u("ep"),
            ..Shard::single(u("micro_batch"))
        };
        let (f, b) =
            myriad_train::step::layer_compute_times(acc, &[], &m, &shard, Precision::Bf16, 0);
        let gpu_fb = r["fwd_bwd_gpu_ms"].as_f64().unwrap() / 1e3;
        // The expert GEMMs alone: the model's `expert_up` / `expert_down` against the
        // grouped-GEMM (CUTLASS) kernels of the MoE-only forward+backward.
        let mut ops = Vec::new();
        m.layer_ops(0, &shard, &mut ops);
        ops.retain(|o| o.name.starts_with("expert_") && matches!(o.kind, OpKind::Gemm { .. }));
        assert_eq!(ops.len(), 2);
        let (ef, eb) = myriad_train::step::op_times(acc, Precision::Bf16, &ops);
        let grouped: f64 = r["moe_kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k[0].as_str().unwrap().contains("cutlass"))
            .map(|k| k[2].as_f64().unwrap() / 1e3)
            .sum();
        let err = (ef + eb) / grouped - 1.0;
        eprintln!(
            "{:32} expert GEMMs {:.2} ms (measured {:.2}) {:+.1}%; layer fwd+bwd {:.2} ms (GPU {:.2}, wall {:.2})",
            m.name,
            (ef + eb) * 1e3,
            grouped * 1e3,
            100.0 * err,
            (f + b) * 1e3,
            gpu_fb * 1e3,
            r["fwd_bwd_ms"].as_f64().unwrap(),
        );
        worst = worst.max(err.abs());
    }
    assert!(
        worst < 0.15,
        "worst expert-GEMM error {:.1}%",
        100.0 * worst
    );
}

/// The fused-MoE-block measurement of `file` (calibration/, made by
/// calibration/moe_fused_bench.py) against the model on `acc`: the worst and mean error of
/// the model's MoE ops against the measured GPU kernel time, and what each eight-layer
/// stack with one host read of the counts a layer (Megatron's) took per layer beyond its
/// kernels, sorted.
fn fused_block(file: &str, acc: &str) -> (f64, f64, Vec<f64>) {
    let data = calibration(file);
    let acc = myriad_catalog::catalog().accelerator(acc).unwrap();
    let rows = data["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let (mut worst, mut sum) = (0.0f64, 0.0);
    let mut exposed = Vec::new();
    for r in rows {
        let u = |k: &str| r[k].as_u64().unwrap() as u32;
        let tokens = u("tokens");
        exposed.push(
            (r["layers8_sync1_ms"].as_f64().unwrap() / 8.0 - r["fwd_bwd_gpu_ms"].as_f64().unwrap())
                / 1e3,
        );
        // The block has no attention: any attention shape will do.
        let m = moe_layer(r, (32, 8, 128, 4096));
        let shard = Shard {
            ep: u("ep"),
            ..Shard::single(tokens / 4096)
        };
        let mut ops = Vec::new();
        m.layer_ops(0, &shard, &mut ops);
        ops.retain(|o| {
            matches!(
                o.name,
                "router" | "moe_permute" | "expert_up" | "expert_act" | "expert_down"
            )
        });
        assert_eq!(ops.len(), 5);
        let (f, b) = myriad_train::step::op_times(acc, Precision::Bf16, &ops);
        // The model charges Megatron's fp32 main-gradient accumulation in the expert
        // weight-gradient epilogue (read and write 4 bytes per weight element); the
        // benchmark writes plain bf16 gradients, so that term is taken out here.
        let local = (u("experts") / u("ep")).max(1) as f64;
        let weights = 3.0 * u("hidden") as f64 * u("expert_ffn") as f64 * local;
        let epilogue = 2.0 * 4.0 * weights / (acc.hbm_tbps * 1e12 * acc.efficiency.hbm);
        let model = f + b - epilogue;
        let gpu = r["fwd_bwd_gpu_ms"].as_f64().unwrap() / 1e3;
        let err = model / gpu - 1.0;
        eprintln!(
            "{} {:28} MoE block fwd+bwd model {:.2} ms, measured GPU {:.2} ms ({:+.1}%), wall {:.2} ms, 8 layers with one host read a layer {:.2} ms each",
            acc.id,
            m.name,
            model * 1e3,
            gpu * 1e3,
            100.0 * err,
            r["fused_fwd_bwd_ms"].as_f64().unwrap(),
            r["layers8_sync1_ms"].as_f64().unwrap() / 8.0,
        );
        worst = worst.max(err.abs());
        sum += err;
    }
    exposed.sort_by(f64::total_cmp);
    (worst, sum / rows.len() as f64, exposed)
}

/// The MoE block alone (router, permutes, expert GEMMs, activation, un-permutes; forward
/// and backward) against the same block measured on the lent H100 with fused token
/// movement (gather kernels without atomics, as Transformer Engine's permute kernels, a
/// fused SwiGLU, `torch._grouped_mm`). Its GPU kernel time is what the model's MoE ops must
/// account for; the eager layer's time beyond it sets `MOE_EAGER_OVERHEAD_S`.
#[test]
fn moe_block_gpu_time_matches_the_fused_h100_measurement() {
    let (worst, mean, exposed) = fused_block("h100-moe-fused-measured.json", "h100-sxm");
    eprintln!("mean {:+.1}%", 100.0 * mean);
    assert!(worst < 0.15, "worst MoE-block error {:.1}%", 100.0 * worst);
    // Every shape runs above its kernels, and the step model's per-layer eager MoE overhead
    // is the median of what was measured.
    assert!(exposed[0] > 0.2e-3, "{exposed:?}");
    let median = (exposed[3] + exposed[4]) / 2.0;
    let constant = myriad_train::step::MOE_EAGER_OVERHEAD_S;
    assert!(
        (median / constant - 1.0).abs() < 0.01,
        "measured median {median} s against MOE_EAGER_OVERHEAD_S {constant} s"
    );
}

/// The same benchmark on the lent H200 machine (another host): the model's MoE ops within
/// 15% of its GPU time, and the eager overhead within 25% of the H100 machine's (0.98 ms
/// against 1.09: the overhead is the host's and the kernel stream's, not one machine's).
#[test]
fn moe_block_and_its_eager_overhead_reproduce_on_the_h200() {
    let (worst, mean, exposed) = fused_block("h200-moe-fused-measured.json", "h200");
    eprintln!("mean {:+.1}%", 100.0 * mean);
    assert!(worst < 0.15, "worst MoE-block error {:.1}%", 100.0 * worst);
    let median = (exposed[3] + exposed[4]) / 2.0;
    let constant = myriad_train::step::MOE_EAGER_OVERHEAD_S;
    assert!(
        (median / constant - 1.0).abs() < 0.25,
        "H200 median {median} s against MOE_EAGER_OVERHEAD_S {constant} s"
    );
}

/// A whole gpt-oss-120b layer of one EP-8 rank (calibration/h100-gptoss-layer-measured.json,
/// made by calibration/gptoss_layer_bench.py): the attention half with its biases, rotary,
/// GQA 64/8 of head dim 64 (cuDNN SDPA on the full layers; FlexAttention with the 128-token
/// band and the learned sink on the banded ones) and the fused MoE block with gpt-oss's
/// clamped SwiGLU, forward and backward, at the H100 row's micro-batch (one 4,096-token
/// sequence) and the Blackwell rows' (four). The model's op sum for the preset's averaged
/// layer (half banded, half full) must be within 10% of the mean of the two measured layers'
/// GPU time (it is +3.1% and -1.9%), and the eager stack of eight layers must run above its
/// kernels by about the step model's per-layer MoE overhead.
///
/// What it shows: Megatron-Bridge's gpt-oss rows (20-34% slower than predicted on H100,
/// B200, GB200 and B300) do not lose their time inside one GPU's layer, nor in the sinks,
/// biases and clamped activation the model leaves out.
/// The H100 file is checked by `gpt_oss_layer_matches_the_h100_measurement`, the same
/// layer on the lent H200 machine by `gpt_oss_layer_reproduces_on_the_h200`.
fn gpt_oss_layer(file: &str, acc: &str) -> Vec<(f64, f64)> {
    let data = calibration(file);
    let cat = myriad_catalog::catalog();
    let acc = cat.accelerator(acc).unwrap();
    let m = cat.model("gpt-oss-120b").unwrap().model.clone();
    let layers = data["layers"].as_array().unwrap();
    let stacks = data["stacks"].as_array().unwrap();
    let mut out = Vec::new();
    for tokens in [4096u64, 16384] {
        let at = |kind: &str| {
            layers
                .iter()
                .find(|r| r["tokens"] == tokens && r["layer"] == kind)
                .unwrap_or_else(|| panic!("no {kind} layer at {tokens} tokens"))
        };
        let gpu = |kind: &str| at(kind)["fwd_bwd_gpu_ms"].as_f64().unwrap() / 1e3;
        let measured = 0.5 * (gpu("full") + gpu("banded"));
        let shard = Shard {
            ep: 8,
            ..Shard::single((tokens / 4096) as u32)
        };
        let (f, b) =
            myriad_train::step::layer_compute_times(acc, &[], &m, &shard, Precision::Bf16, 0);
        let err = (f + b) / measured - 1.0;
        // The eager stack's wall time above its kernels, per layer, against the model's.
        let s = stacks.iter().find(|s| s["tokens"] == tokens).unwrap();
        let excess =
            (s["layers8_ms"].as_f64().unwrap() - s["layers8_gpu_ms"].as_f64().unwrap()) / 8.0 / 1e3;
        let k = excess / myriad_train::step::MOE_EAGER_OVERHEAD_S;
        println!(
            "{file} {tokens} tokens: model {:.2} ms, measured {:.2} ms ({:+.1}%); eager excess {:.2} ms a layer ({k:.2}x the model's)",
            (f + b) * 1e3,
            measured * 1e3,
            100.0 * err,
            excess * 1e3
        );
        out.push((err, k));
    }
    out
}

#[test]
fn gpt_oss_layer_matches_the_h100_measurement() {
    for (err, k) in gpt_oss_layer("h100-gptoss-layer-measured.json", "h100-sxm") {
        assert!(err.abs() < 0.10, "{:+.1}%", 100.0 * err);
        assert!((0.5..3.0).contains(&k), "{k:.2}x");
    }
}

/// The same layer on the lent H200 machine (another host, the H200's own catalog record):
/// within 10% too (-3.3% and -6.4%), the eager excess again 1-3 times the model's.
#[test]
fn gpt_oss_layer_reproduces_on_the_h200() {
    for (err, k) in gpt_oss_layer("h200-gptoss-layer-measured.json", "h200") {
        assert!(err.abs() < 0.10, "{:+.1}%", 100.0 * err);
        assert!((0.5..3.0).contains(&k), "{k:.2}x");
    }
}

/// The routed experts' GEMMs of one EP rank run one cuBLAS GEMM per expert, as Transformer
/// Engine's eager `GroupedLinear` runs them (calibration/h100-grouped-gemm-streams-measured.json,
/// made by calibration/grouped_gemm_streams_bench.py on the lent H100, 2026-11-27): the
/// model's per-expert form (each expert GEMM at the fit's efficiency plus the fixed
/// per-kernel cost, `training.moe_grouped_kernel: false`) against the forward GEMMs run back
/// to back on one stream, six shapes (2-16 local experts, 2,048-32,768 tokens each), up and
/// down projections. Spreading the experts over four streams (TE's default) hides nothing
/// at these sizes: no row's four-stream time is more than 10% below its one-stream time
/// (the two smallest rows' four-stream times are above it, bound by Python's launches of
/// the stream switches, which TE makes in C++), so the model charges every expert kernel
/// its whole fixed cost. One `torch._grouped_mm` kernel is 8% slower than the per-expert
/// cuBLAS GEMMs on average here (printed, not asserted). The same bounds hold on the lent
/// H200 (h200-grouped-gemm-streams-measured.json, 2026-11-28) against its own GEMM fit.
#[test]
fn per_expert_gemms_match_the_h100_measurement() {
    per_expert_gemms("h100-grouped-gemm-streams-measured.json", "h100-sxm");
}

#[test]
fn per_expert_gemms_reproduce_on_the_h200() {
    per_expert_gemms("h200-grouped-gemm-streams-measured.json", "h200");
}

fn per_expert_gemms(file: &str, acc: &str) {
    use myriad_model::Op;
    let data = calibration(file);
    let acc = myriad_catalog::catalog().accelerator(acc).unwrap();
    let rows = data["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let (mut worst, mut sum, mut n) = (0.0f64, 0.0, 0.0);
    for r in rows {
        let experts = r["experts"].as_f64().unwrap();
        for (gemm, name) in [("up", "expert_up"), ("down", "expert_down")] {
            let g = &r[gemm];
            let f = |k: &str| g[k].as_f64().unwrap();
            let op = Op {
                name,
                kind: OpKind::Gemm {
                    m: f("m"),
                    n: f("n"),
                    k: f("k"),
                    count: experts,
                },
            };
            let (model, _) = myriad_train::step::op_times_per_expert(acc, Precision::Bf16, &[op]);
            let wall = |v: &str| g[v]["wall_ms"].as_f64().unwrap() / 1e3;
            let (one, four, grouped) = (wall("loop1"), wall("loop4"), wall("grouped"));
            let err = model / one - 1.0;
            eprintln!(
                "{:26} {gemm:4} {experts:2} experts: model {:.3} ms, one stream {:.3} ({:+.1}%), four {:.3}, torch._grouped_mm {:.3}",
                r["name"].as_str().unwrap(),
                model * 1e3,
                one * 1e3,
                100.0 * err,
                four * 1e3,
                grouped * 1e3,
            );
            worst = worst.max(err.abs());
            sum += err;
            n += 1.0;
            assert!(
                four > 0.9 * one,
                "four streams hid {:.0}% of {} {gemm}",
                100.0 * (1.0 - four / one),
                r["name"]
            );
        }
    }
    let mean = sum / n;
    eprintln!("worst {:.1}%, mean {:+.1}%", 100.0 * worst, 100.0 * mean);
    assert!(
        worst < 0.20,
        "worst per-expert GEMM error {:.1}%",
        100.0 * worst
    );
    assert!(
        mean.abs() < 0.06,
        "mean per-expert GEMM error {:+.1}%",
        100.0 * mean
    );
}

/// Expert GEMMs with few tokens each (128-512 rows: an expert's share where few EP ranks
/// share many experts, e.g. gpt-oss-120b or Qwen3 at EP 1-2;
/// calibration/h100-small-expert-gemm-measured.json,
/// made by calibration/small_expert_gemm_bench.py on the lent H100, 2026-11-27: one cuBLAS
/// GEMM per expert, replayed as a CUDA graph so that launches are not timed). With 128 rows
/// against a 2,880 x 5,760 weight a GEMM streams 33 MB for 4.2 GFLOP: it is bound by
/// memory, not by the tensor cores, and the FLOP form alone (fitted on M, N, K >= 512)
/// says a third less than it takes. The model's roofline (the longer of FLOPs and operand
/// bytes at `hbm_gemm`, plus the fixed cost) must be within 25% of every forward and
/// data-gradient row (H100 −16.8…+14.7%, H200 −23.0…+14.2%: the worst is Qwen3 30B's
/// data gradient with N = 768, whose few output tiles leave most SMs idle, a regime
/// neither form resolves), and closer than the FLOP form to every 128-token row.
#[test]
fn few_token_expert_gemms_are_memory_bound_on_the_h100() {
    few_token_expert_gemms("h100-small-expert-gemm-measured.json", "h100-sxm");
}

/// The same benchmark on the lent H200 machine (its 4.8 TB/s stream the 128-row GEMMs
/// faster: 0.186 ms where the H100 took 0.234), against the H200's catalog record.
#[test]
fn few_token_expert_gemms_are_memory_bound_on_the_h200() {
    few_token_expert_gemms("h200-small-expert-gemm-measured.json", "h200");
}

fn few_token_expert_gemms(file: &str, acc: &str) {
    use myriad_model::Op;
    let data = calibration(file);
    let acc = myriad_catalog::catalog().accelerator(acc).unwrap();
    let e = &acc.efficiency;
    let flop_rate = acc.dense_tflops.bf16.unwrap() * 1e12 * e.gemm_bf16;
    let rows = data["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let mut worst: f64 = 0.0;
    for r in rows {
        let experts = r["experts"].as_f64().unwrap();
        let tokens = r["tokens_per_expert"].as_f64().unwrap();
        for proj in ["up", "down"] {
            for pass in ["fwd", "dgrad"] {
                let g = &r[proj][pass];
                let f = |k: &str| g[k].as_f64().unwrap();
                let (m, n, k) = (f("m"), f("n"), f("k"));
                let op = Op {
                    name: "expert_up",
                    kind: OpKind::Gemm {
                        m,
                        n,
                        k,
                        count: experts,
                    },
                };
                let (model, _) =
                    myriad_train::step::op_times_per_expert(acc, Precision::Bf16, &[op]);
                let flop_form = experts * (2.0 * m * n * k / flop_rate + e.gemm_overhead_us * 1e-6);
                let measured = g["loop1"]["ms"].as_f64().unwrap() / 1e3;
                let err = model / measured - 1.0;
                eprintln!(
                    "{:40} {proj:4} {pass:5} M {m:5} N {n:5} K {k:5}: model {:.3} ms, FLOP form {:.3}, measured {:.3} ({:+.1}%), four streams {:.3}",
                    r["name"].as_str().unwrap(),
                    model * 1e3,
                    flop_form * 1e3,
                    measured * 1e3,
                    100.0 * err,
                    g["loop4"]["ms"].as_f64().unwrap(),
                );
                worst = worst.max(err.abs());
                if tokens <= 128.0 {
                    assert!(
                        (flop_form / measured - 1.0).abs() > err.abs(),
                        "the FLOP form is closer to a 128-token row than the roofline"
                    );
                }
            }
        }
    }
    assert!(
        worst < 0.25,
        "worst few-token expert GEMM error {:.1}%",
        100.0 * worst
    );
}

/// gpt-oss-120b's attention as Transformer Engine runs it: cuDNN's fused attention,
/// causal on full layers and with the 128-token band on the others
/// (calibration/h100-sink-attention-measured.json, made by
/// calibration/sink_attention_bench.py through the cuDNN frontend on the lent H100,
/// 2026-11-27; its outputs checked against a float32 reference of the masked softmax with
/// the sink in the denominator). The model's attention ops of the preset's layer, forward
/// and backward together, against cuDNN's kernels without the sink at one and four
/// 4,096-token sequences: the full (causal) layers within 15% (H100 −7…−2%, H200 −5…−2%),
/// the banded ones too (H100 −10…−2%, H200 +1…+9%; `Ctx::attention_band`, whose one
/// constant, the second masked edge, is fitted to these rows; the band taken as a
/// 128-token sequence had been +9…+32%). The learned sink costs nothing forward and about 0.4 ms a
/// sequence backward (the sink's gradient) on full and banded layers alike: the model's
/// `attention_sink` op (`efficiency.attention_sink_bwd_ns`, the mean of these rows) is
/// within 15% of each row's increment, and the layer's attention with the sink, the
/// kernels gpt-oss really runs, within 15% on full and banded layers (H100 −5…−1%, H200
/// −3…0%, with the band form).
#[test]
fn gpt_oss_attention_matches_cudnn_on_the_h100() {
    gpt_oss_attention("h100-sink-attention-measured.json", "h100-sxm");
}

/// The same kernels on the lent H200 machine (cuDNN 9.19), the same bounds; the sink's
/// gradient again 0.39-0.44 ms a sequence.
#[test]
fn gpt_oss_attention_matches_cudnn_on_the_h200() {
    gpt_oss_attention("h200-sink-attention-measured.json", "h200");
}

fn gpt_oss_attention(file: &str, acc: &str) {
    let data = calibration(file);
    let cat = myriad_catalog::catalog();
    let acc = cat.accelerator(acc).unwrap();
    let m = cat.model("gpt-oss-120b").unwrap().model.clone();
    let rows = data["rows"].as_array().unwrap();
    for check in data["checks"].as_array().unwrap() {
        let err = check["max_abs_err"].as_f64().unwrap();
        assert!(err < 0.02, "cuDNN's output is off the reference by {err}");
    }
    let mut checked = 0;
    for seqs in [1u64, 4] {
        let mut ops = Vec::new();
        m.layer_ops(0, &Shard::single(seqs as u32), &mut ops);
        // The sink's gradient: one op per layer over every query row and head.
        let sink_op = ops
            .iter()
            .find(|o| o.name == "attention_sink")
            .expect("the gpt-oss preset has attention sinks");
        let (sink_f, sink_b) =
            myriad_train::step::op_times(acc, Precision::Bf16, std::slice::from_ref(sink_op));
        assert_eq!(sink_f, 0.0, "the sink costs nothing forward");
        for (name, band) in [("attention", false), ("attention_window", true)] {
            let op = ops
                .iter()
                .find(|o| o.name == name)
                .unwrap_or_else(|| panic!("no {name} op"));
            // Each op carries its kind's share of the layers (half of gpt-oss's 36 are
            // banded): one layer of that kind is the op over that share.
            let share = 0.5;
            let (f, b) = myriad_train::step::attention_times(acc, op);
            let (f, b) = (f / share, b / share);
            let at = |sink: bool| {
                rows.iter()
                    .find(|r| r["seqs"] == seqs && r["band"].is_null() != band && r["sink"] == sink)
                    .unwrap()
            };
            let ms = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap() / 1e3;
            let plain = at(false);
            let sink = at(true);
            let (ef, eb) = (f / ms(plain, "fwd_ms") - 1.0, b / ms(plain, "bwd_ms") - 1.0);
            eprintln!(
                "{seqs} x 4096 {name:16}: model fwd {:.3} bwd {:.3} ms; cuDNN {:.3} / {:.3} ({:+.1}% / {:+.1}%); with the sink {:.3} / {:.3}",
                f * 1e3,
                b * 1e3,
                ms(plain, "fwd_ms") * 1e3,
                ms(plain, "bwd_ms") * 1e3,
                100.0 * ef,
                100.0 * eb,
                ms(sink, "fwd_ms") * 1e3,
                ms(sink, "bwd_ms") * 1e3,
            );
            let e = (f + b) / (ms(plain, "fwd_ms") + ms(plain, "bwd_ms")) - 1.0;
            let bound = 0.15;
            assert!(
                e.abs() < bound,
                "{name} at {seqs} sequences: {:+.1}%",
                100.0 * e
            );
            // What the sink adds backward, and the layer with it.
            let added = ms(sink, "bwd_ms") - ms(plain, "bwd_ms");
            let es = sink_b / added - 1.0;
            let ew = (f + b + sink_b) / (ms(sink, "fwd_ms") + ms(sink, "bwd_ms")) - 1.0;
            eprintln!(
                "    sink gradient: model {:.3} ms, cuDNN {:.3} ({:+.1}%); layer with the sink {:+.1}%",
                sink_b * 1e3,
                added * 1e3,
                100.0 * es,
                100.0 * ew
            );
            assert!(
                es.abs() < 0.15,
                "{name} at {seqs} sequences: the sink's gradient {:+.1}%",
                100.0 * es
            );
            assert!(
                ew.abs() < 0.15,
                "{name} at {seqs} sequences with the sink: {:+.1}%",
                100.0 * ew
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

/// A gpt-oss-shaped (heads of 64) sliding-window attention op over `s`-token sequences, the
/// band's exact area: every query sees `w` keys but the first window's triangle.
fn band_op(batch_heads: f64, s: f64, w: f64) -> myriad_model::Op {
    myriad_model::Op {
        name: "attention_window",
        kind: OpKind::Attention {
            batch_heads,
            sq: s,
            skv: s,
            d_qk: 64.0,
            d_v: 64.0,
            causal_fraction: (w * s - 0.5 * w * w) / (s * s),
            window: w,
        },
    }
}

/// A sliding window eight times wider than gpt-oss's, on three more chips: NVIDIA's own
/// cuDNN 9.19 training benchmark of gpt-oss-shaped attention (64 query / 8 KV heads of 64,
/// bf16, batch 2, a 1,024-token window, forward and non-deterministic backward;
/// NVIDIA/cudnn-frontend `benchmark/sdpa_benchmark_training/results/{h200,gb200,gb300}_919_only_cudnn/gpt_oss_*.csv`,
/// commits afa9f7c0 (H200, GB200) and df73764a (GB300), 2026-02-26/27). Their TFLOP/s
/// count the band's exact area, as `Op::flops` does. `Ctx::attention_band`, whose one
/// constant was fitted to the 128-token band on the lent H100 and H200, is within 15% of
/// the forward and backward together from 4,096 tokens up (H200 +2…+7%, GB200 +1…+9%,
/// GB300 −12…−4%: Blackwell Ultra's forward, whose causal efficiency the doubled
/// exponential rate lifts, gains less in a band; with Blackwell's forward taken in
/// 128-row units GB200 was −1…+7% and GB300 −14…−6%, see the next test for the forward
/// alone); the band taken as a 1,024-token sequence, the form before, was +11…+27%. The harness times short bursts, a few percent
/// above the power-capped calibration (see the catalog's attention sources).
#[test]
fn band_attention_matches_cudnn_published_runs_on_three_chips() {
    // (chip, [(sequence, forward TFLOP/s, backward TFLOP/s)]) as printed.
    type Run = (&'static str, [(f64, f64, f64); 4]);
    let runs: [Run; 3] = [
        (
            "h200",
            [
                (32768.0, 358.0, 299.0),
                (16384.0, 355.0, 303.0),
                (8192.0, 349.0, 300.0),
                (4096.0, 336.0, 289.0),
            ],
        ),
        (
            "gb200",
            [
                (32768.0, 632.0, 660.0),
                (16384.0, 624.0, 658.0),
                (8192.0, 609.0, 646.0),
                (4096.0, 574.0, 617.0),
            ],
        ),
        (
            "gb300",
            [
                (32768.0, 748.0, 689.0),
                (16384.0, 738.0, 682.0),
                (8192.0, 718.0, 668.0),
                (4096.0, 675.0, 638.0),
            ],
        ),
    ];
    let cat = myriad_catalog::catalog();
    for (chip, rows) in runs {
        let acc = cat.accelerator(chip).unwrap();
        for (s, tf_fwd, tf_bwd) in rows {
            let op = band_op(2.0 * 64.0, s, 1024.0);
            let flops = op.flops();
            let measured = flops / (tf_fwd * 1e12) + 2.5 * flops / (tf_bwd * 1e12);
            let (f, b) = myriad_train::step::attention_times(acc, &op);
            let e = (f + b) / measured - 1.0;
            eprintln!(
                "{chip:5} {s:6}: model {:.3} ms, cuDNN {:.3} ms ({:+.1}%)",
                (f + b) * 1e3,
                measured * 1e3,
                100.0 * e
            );
            assert!(e.abs() < 0.15, "{chip} at {s}: {:+.1}%", 100.0 * e);
        }
    }
}

/// gpt-oss's own 128-token band, forward only (its prefill), in NVIDIA's published cuDNN
/// 9.27 inference runs: 64 query / 8 KV heads of 64, bf16, one sequence with the learned
/// sink (NVIDIA/cudnn-frontend `benchmark/attention_inference/results/gpt_oss/{h200,gb200,gb300}/gpt_oss_20260928_*.csv`
/// and `b200/gpt_oss_20260918_170602.csv`, commits 104a33b0, f4f19cbe, 73c5657e and
/// 0501eca2; `cudnn` backend, context phase). Their printed plan for the open-source SM100
/// kernel pairs two CTAs on 128-row tiles, which is the catalog's `attention_fwd_tile_rows`
/// 256 on Blackwell: with it the band form is within 10% on the H200 (−2…+3%), the B200
/// (+3…+8%) and the GB200 (−6…+1%; −15…−20% with 128-row units).
/// On the GB300 it is 20-25% fast: its causal plateau carries Blackwell Ultra's doubled
/// exponential rate (measured on causal kernels), which a narrow band, dominated by its
/// masked edge tiles, gains less from; the bound there states that miss.
#[test]
fn band_prefill_matches_cudnn_published_inference_runs() {
    // (chip, [(tokens, milliseconds)]) as printed.
    type Run = (&'static str, f64, [(f64, f64); 2]);
    let runs: [Run; 4] = [
        ("h200", 0.10, [(8192.0, 0.135487), (32768.0, 0.517145)]),
        ("b200", 0.10, [(8192.0, 0.113408), (32768.0, 0.436928)]),
        ("gb200", 0.10, [(8192.0, 0.106461), (32768.0, 0.401882)]),
        ("gb300", 0.30, [(8192.0, 0.093278), (32768.0, 0.351176)]),
    ];
    let cat = myriad_catalog::catalog();
    let w = 128.0;
    for (chip, bound, rows) in runs {
        let acc = cat.accelerator(chip).unwrap();
        for (s, ms) in rows {
            // Forward FLOPs of the band's exact area (queries × keys, less the first
            // window's triangle), 64 heads, d_qk + d_v = 128.
            let flops = 2.0 * 64.0 * (w * s - 0.5 * w * w) * 128.0;
            let model = myriad_train::step::attention_band_fwd_time(acc, flops, w, 128.0);
            let e = model / (ms * 1e-3) - 1.0;
            eprintln!(
                "{chip:5} {s:6}: model {:.4} ms, cuDNN {ms:.4} ms ({:+.1}%)",
                model * 1e3,
                100.0 * e
            );
            assert!(e.abs() < bound, "{chip} at {s}: {:+.1}%", 100.0 * e);
        }
    }
}

/// gpt-oss's own 128-token band in training, forward and non-deterministic backward, in
/// NVIDIA's published cuDNN 9.26/9.27 training runs on Blackwell (128 query and 128 KV heads
/// of 64, bf16, batch 2; NVIDIA/cudnn-frontend
/// `benchmark/sdpa_benchmark_training/results/gpt_oss/gb200/gpt_oss_20260813_110803.csv`
/// @20dc1089 and `gpt_oss/gb300/gpt_oss_20260724_040706.csv` @e99b0d0b). Not fitted to:
/// the band's one constant came from the lent H100 and H200. Forward and backward together
/// are within 25% from 2,048 to 32,768 tokens (GB200 +12…+23%, GB300 −6…+2%), but the
/// parts are not: the GB200 forward is within −8…+1% while its backward is over-stated by
/// 21-33% (Blackwell's backward walks a narrow band better than the H100/H200 curve the
/// model scales), and the GB300 forward is 26-32% fast (as in the inference runs above)
/// while its backward is 5-15% slow. In the public gpt-oss GB200 rows the band's kernels are
/// about 2% of the step and the over-statement 0.3% (0.14 ms a band layer and micro-batch),
/// so the miss is recorded here and not tuned away.
#[test]
fn band_training_on_blackwell_matches_cudnn_published_runs_together() {
    // (chip, [(tokens, forward ms, backward ms)]) as printed.
    type Run = (&'static str, [(f64, f64, f64); 5]);
    let runs: [Run; 2] = [
        (
            "gb200",
            [
                (32768.0, 1.611, 3.626),
                (16384.0, 0.809, 1.818),
                (8192.0, 0.408, 0.899),
                (4096.0, 0.207, 0.458),
                (2048.0, 0.107, 0.242),
            ],
        ),
        (
            "gb300",
            [
                (32768.0, 1.509, 3.450),
                (16384.0, 0.758, 1.719),
                (8192.0, 0.382, 0.862),
                (4096.0, 0.194, 0.441),
                (2048.0, 0.100, 0.228),
            ],
        ),
    ];
    let cat = myriad_catalog::catalog();
    for (chip, rows) in runs {
        let acc = cat.accelerator(chip).unwrap();
        for (s, fwd_ms, bwd_ms) in rows {
            let op = band_op(2.0 * 128.0, s, 128.0);
            let (f, b) = myriad_train::step::attention_times(acc, &op);
            let e = (f + b) / ((fwd_ms + bwd_ms) * 1e-3) - 1.0;
            eprintln!(
                "{chip:5} {s:6}: forward {:+.1}%, backward {:+.1}%, together {:+.1}%",
                100.0 * (f / (fwd_ms * 1e-3) - 1.0),
                100.0 * (b / (bwd_ms * 1e-3) - 1.0),
                100.0 * e
            );
            assert!(e.abs() < 0.25, "{chip} at {s}: {:+.1}%", 100.0 * e);
        }
    }
}

/// DeepSeek-V3's attention shape (128 heads, d_qk 192, d_v 128, causal), forward, in
/// NVIDIA's published cuDNN 9.19 training runs (NVIDIA/cudnn-frontend
/// `benchmark/sdpa_benchmark_training/results/{h200,gb200,gb300}_919_only_cudnn/dsv3_*.csv`,
/// commits afa9f7c0 and df73764a; bf16, batch 1). The catalog's attention curves came from
/// the same harness's Llama rows (d 128): these check the head-dimension scaling on a shape
/// they were not fitted to. Within 10% from 4,096 tokens (H200 −3…+1%, GB200 −6…+5%,
/// GB300 −5…+4%). (The backward rows ran cuDNN's deterministic kernel, slower than the
/// one training uses by default, so they are left out.)
#[test]
fn mla_attention_forward_matches_cudnn_published_runs() {
    // (chip, [(tokens, forward ms)]) as printed; the H200's longer runs ran out of memory.
    causal_forward_within(
        (128.0, 192.0, 128.0),
        &[
            ("h200", [(4096.0, 1.148), (8192.0, 4.278)]),
            ("gb200", [(8192.0, 1.800), (32768.0, 24.232)]),
            ("gb300", [(8192.0, 1.548), (32768.0, 21.483)]),
        ],
        0.10,
    );
}

/// gpt-oss's full (causal) layers with the learned sink, forward, in the same published
/// cuDNN 9.27 inference runs as `band_prefill_matches_cudnn_published_inference_runs`
/// (`gpt_oss_full`, 64/8 heads of 64, one sequence). The model's causal op, to which the
/// sink adds nothing forward, is within 10% on the H200, GB200 and GB300 (−8…+1%): the sink
/// costs nothing forward on Blackwell either, and the head-dimension scaling holds at 64.
#[test]
fn sink_attention_forward_matches_cudnn_published_inference_runs() {
    causal_forward_within(
        (64.0, 64.0, 64.0),
        &[
            ("h200", [(8192.0, 1.201782), (32768.0, 18.220574)]),
            ("gb200", [(8192.0, 0.552673), (32768.0, 8.099202)]),
            ("gb300", [(8192.0, 0.436386), (32768.0, 6.313014)]),
        ],
        0.10,
    );
}

/// The model's causal forward attention of one sequence, `(heads, d_qk, d_v)`, against
/// published times `(chip, [(tokens, ms)])`: each within `bound`.
fn causal_forward_within(
    (heads, d_qk, d_v): (f64, f64, f64),
    runs: &[(&str, [(f64, f64); 2])],
    bound: f64,
) {
    let cat = myriad_catalog::catalog();
    for (chip, rows) in runs {
        let acc = cat.accelerator(chip).unwrap();
        for &(s, ms) in rows {
            let op = myriad_model::Op {
                name: "attention",
                kind: OpKind::Attention {
                    batch_heads: heads,
                    sq: s,
                    skv: s,
                    d_qk,
                    d_v,
                    causal_fraction: 0.5,
                    window: 0.0,
                },
            };
            let (f, _) = myriad_train::step::attention_times(acc, &op);
            let e = f / (ms * 1e-3) - 1.0;
            eprintln!(
                "{chip:5} {s:6}: model {:.3} ms, cuDNN {ms:.3} ms ({:+.1}%)",
                f * 1e3,
                100.0 * e
            );
            assert!(e.abs() < bound, "{chip} at {s}: {:+.1}%", 100.0 * e);
        }
    }
}
