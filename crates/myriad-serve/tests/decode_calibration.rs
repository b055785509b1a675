//! The serving model's decode iteration against a Llama-3-8B-shaped model measured on one
//! H100 and one H200 (calibration/h100-decode-measured.json, h200-decode-measured.json, made
//! by calibration/decode_bench.py: PyTorch, bf16, random weights, each decode step captured
//! as one CUDA graph so no host launch cost is in it).
//!
//! The measured step runs unfused element-wise ops (RMSNorm, rotary, SiLU·mul, residual
//! adds: about 16 small kernels a layer where serving engines fuse them into about 4) and
//! PyTorch's SDPA decode, which has no split-KV and so streams the cache slowly at batch 1.
//! The test therefore checks the model against the step with those parts taken out (GEMMs
//! and attention only, `graph_gemm_attn_only_ms`) at batch >= 8, and the skinny-GEMM table
//! directly: those are the parts the model's decode form claims to predict.

use myriad_scenario::Precision;
use myriad_serve::{Batch, InstanceModel, Parallel, Precisions};

fn data(file: &str) -> serde_json::Value {
    let path = format!("{}/../../calibration/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn llama3_8b(acc: &str) -> InstanceModel {
    let cat = myriad_catalog::catalog();
    let text = format!(
        "{{\"format\":\"myriad/1\",\"cluster\":{{\"accelerator\":\"{acc}\",\"count\":8}}}}"
    );
    let s = myriad_scenario::parse_scenario("t", &text, cat).unwrap();
    let levels = myriad_cluster::build(&s, cat).unwrap().levels;
    InstanceModel::new(
        cat.accelerator(acc).unwrap(),
        &levels,
        &cat.model("llama3-8b").unwrap().model,
        Parallel::new(1, 1, 1),
        Precisions::new(Precision::Bf16, Precision::Bf16, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap()
}

/// Worst error of the model's GEMM + attention time against the measured decode steps at
/// batch >= 8 of one device's file.
fn worst_decode_error(file: &str, acc: &str) -> f64 {
    let d = data(file);
    let m = llama3_8b(acc);
    let mut worst: f64 = 0.0;
    for r in d["step"].as_array().unwrap() {
        let b = r["batch"].as_f64().unwrap();
        let ctx = r["ctx"].as_f64().unwrap();
        let it = m.iteration(&Batch {
            decode_seqs: b,
            decode_ctx: b * ctx,
            decode_ctx_sq: 0.0,
            decode_ctx_seqs: 0.0,
            prefill_tokens: 0.0,
            prefill_pairs: 0.0,
            prefill_done: 0.0,
            prefill_seqs: 0.0,
            ..Batch::default()
        });
        let core = it.gemm_s + it.attention_s;
        let measured = r["graph_gemm_attn_only_ms"].as_f64().unwrap() / 1e3;
        let err = core / measured - 1.0;
        eprintln!(
            "{acc} b {b:4} ctx {ctx:5}: GEMMs+attention {:.2} ms (measured {:.2}) {:+.1}%; whole step {:.2} ms (measured {:.2} unfused)",
            core * 1e3,
            measured * 1e3,
            100.0 * err,
            it.total_s * 1e3,
            r["graph_ms"].as_f64().unwrap()
        );
        if b >= 8.0 {
            worst = worst.max(err.abs());
        }
    }
    worst
}

#[test]
fn decode_step_matches_the_h100_measurement() {
    let worst = worst_decode_error("h100-decode-measured.json", "h100-sxm");
    assert!(
        worst < 0.09,
        "worst decode-step error {:.1}%",
        100.0 * worst
    );
}

#[test]
fn decode_step_matches_the_h200_measurement() {
    let worst = worst_decode_error("h200-decode-measured.json", "h200");
    assert!(
        worst < 0.09,
        "worst decode-step error {:.1}%",
        100.0 * worst
    );
}

/// The skinny-GEMM table itself: at M <= 64 tokens `gemm_overhead_us + weight bytes /
/// (HBM × hbm_gemm)` is unbiased (mean error within 3%) and within 15% of every measured
/// GEMM, bf16 and fp8 (the 70B TP8 query/key/value shape, 21 MB, runs 15-25% slower than
/// that on H100 and is left out: its N = 1280 gives too few output tiles to keep every SM
/// streaming).
#[test]
fn skinny_gemms_stream_weights_at_the_catalog_rate() {
    let cat = myriad_catalog::catalog();
    for (file, acc) in [
        ("h100-decode-measured.json", "h100-sxm"),
        ("h200-decode-measured.json", "h200"),
    ] {
        let a = cat.accelerator(acc).unwrap();
        let rate = a.hbm_tbps * 1e12 * a.efficiency.hbm_gemm;
        let ov = a.efficiency.gemm_overhead_us * 1e-6;
        let d = data(file);
        let (mut n, mut sum) = (0, 0.0);
        for r in d["gemm"].as_array().unwrap() {
            let m = r["m"].as_f64().unwrap();
            if m > 64.0 || r["n"].as_f64().unwrap() < 2048.0 {
                continue;
            }
            let bytes = r["n"].as_f64().unwrap()
                * r["k"].as_f64().unwrap()
                * if r["dtype"] == "bf16" { 2.0 } else { 1.0 };
            let model = ov + bytes / rate;
            let measured = r["us"].as_f64().unwrap() * 1e-6;
            let err = model / measured - 1.0;
            assert!(
                err.abs() < 0.15,
                "{acc} {} {} m={m}: model {:.1} us, measured {:.1} us",
                r["shape"],
                r["dtype"],
                model * 1e6,
                measured * 1e6
            );
            n += 1;
            sum += err;
        }
        assert!(n >= 50, "{acc}: only {n} GEMM rows checked");
        let mean = sum / n as f64;
        assert!(mean.abs() < 0.03, "{acc}: mean error {:+.1}%", 100.0 * mean);
    }
}

/// Decode attention streams the KV cache at the catalog's `hbm` rate: measured calls with
/// at least 256 (batch × KV head) work units and 8192+ cached tokens are within 5% of
/// `gemm_overhead_us + KV bytes / (HBM × hbm)`, which is the serving model's decode
/// attention form when memory-bound. (Shorter calls run 6-10 µs longer than that, and
/// PyTorch's SDPA, with no split-KV, leaves SMs idle below 132 work units; neither is
/// asserted.)
#[test]
fn decode_attention_streams_the_kv_cache_at_the_catalog_rate() {
    let cat = myriad_catalog::catalog();
    for (file, acc) in [
        ("h100-decode-measured.json", "h100-sxm"),
        ("h200-decode-measured.json", "h200"),
    ] {
        let a = cat.accelerator(acc).unwrap();
        let rate = a.hbm_tbps * 1e12 * a.efficiency.hbm;
        let ov = a.efficiency.gemm_overhead_us * 1e-6;
        let mut n = 0;
        for r in data(file)["attention"].as_array().unwrap() {
            let f = |k: &str| r[k].as_f64().unwrap();
            if f("batch") * f("kv_heads") < 256.0 || f("ctx") < 8192.0 {
                continue;
            }
            let bytes = 2.0 * f("batch") * f("kv_heads") * f("ctx") * f("head_dim") * 2.0;
            let model = ov + bytes / rate;
            let measured = f("us") * 1e-6;
            assert!(
                (model / measured - 1.0).abs() < 0.05,
                "{acc} batch {} ctx {}: model {:.0} us, measured {:.0} us",
                f("batch"),
                f("ctx"),
                model * 1e6,
                measured * 1e6
            );
            n += 1;
        }
        assert!(n >= 6, "{acc}: only {n} attention rows checked");
    }
}

/// Prefill of one prompt (2048 and 8192 tokens) through the same model, measured eagerly
/// (large kernels: launch gaps are negligible). The model is 14-17% fast against it: the
/// measured prefill runs unfused element-wise passes (rotary as five kernels on each of q
/// and k, RMSNorm, SiLU·mul, residual adds) that serving engines fuse; and the same eager
/// layer at 8192 tokens, measured for training on another day's H100
/// (calibration/h100-layer-measured.json), took 6.9 ms against 7.6 ms a layer here, so
/// machine and run spread (±5%, extremes ±12%, `../shared/calibration`) is part of it.
/// Asserted within 20%.
#[test]
fn prefill_matches_the_measurement() {
    for (file, acc) in [
        ("h100-decode-measured.json", "h100-sxm"),
        ("h200-decode-measured.json", "h200"),
    ] {
        let m = llama3_8b(acc);
        for r in data(file)["prefill"].as_array().unwrap() {
            let t = r["tokens"].as_f64().unwrap();
            let it = m.iteration(&Batch {
                decode_seqs: 0.0,
                decode_ctx: 0.0,
                decode_ctx_sq: 0.0,
                decode_ctx_seqs: 0.0,
                prefill_tokens: t,
                prefill_pairs: t * (t + 1.0) / 2.0,
                prefill_done: 1.0,
                prefill_seqs: 1.0,
                ..Batch::default()
            });
            let measured = r["ms"].as_f64().unwrap() / 1e3;
            let err = it.total_s / measured - 1.0;
            eprintln!(
                "{acc} prefill {t}: {:.1} ms (measured {:.1}) {:+.1}%",
                it.total_s * 1e3,
                measured * 1e3,
                100.0 * err
            );
            assert!(err.abs() < 0.20, "{acc} prefill {t}: {:+.1}%", 100.0 * err);
        }
    }
}

/// Grouped expert GEMMs in the decode regime (8-32 experts of DeepSeek-V3 and
/// Qwen3-235B shapes, 1-64 tokens each; calibration/h100-moe-decode-measured.json, made by
/// calibration/moe_decode_bench.py): the serving model's routed-expert memory term,
/// `2 × gemm_overhead_us + expert bytes / (HBM × hbm_gemm)`, is within 30% of every row;
/// bf16 (`torch._grouped_mm`) is unbiased (mean −4%), fp8 (`torch._scaled_grouped_mm` with
/// row-wise scales) runs slower than the dense fp8 GEMMs (mean −14%: the model is fast
/// there, most with 8 experts; serving engines use their own grouped kernels).
///
/// On the lent H200 (h200-moe-decode-measured.json, 2026-11-28) the same PyTorch kernels
/// stream the experts at 1.6-2.9 TB/s, about what they reach on the H100, where its dense
/// skinny GEMMs reach 3.66 TB/s (`hbm_gemm` 0.76 of 4.8): they keep too few bytes in
/// flight to use the H200's faster memory, so the model is 20-38% fast on every row
/// (bf16 mean −24%, fp8 −31%). Not adopted as the H200's expert rate: a pipelined grouped
/// kernel streams faster than the catalog rate (next test), so the limit is PyTorch's
/// kernel, not the part; and the serving rows that run TensorRT-LLM's own grouped kernels
/// on the H200 do not agree on a direction (DeepSeek-R1 predicted fast, Qwen3-235B and
/// Llama 4 Maverick slow). Asserted as what it is: the catalog rate bounds these kernels
/// from above, by at most 40%.
#[test]
fn grouped_decode_gemms_stream_experts_near_the_catalog_rate() {
    grouped_decode_gemms(
        "h100-moe-decode-measured.json",
        "h100-sxm",
        (-0.30, 0.30),
        0.08,
    );
}

#[test]
fn pytorch_grouped_decode_gemms_do_not_reach_the_h200_s_dense_rate() {
    grouped_decode_gemms("h200-moe-decode-measured.json", "h200", (-0.40, 0.0), 0.35);
}

/// Whether the H200's faster memory is out of reach of grouped expert kernels or of
/// PyTorch's only: calibration/h200-grouped-decode-stream-measured.json (made by
/// calibration/grouped_decode_stream_bench.py on the lent H200, 2026-11-28) times the same
/// bf16 expert shapes (8-32 experts, 1-64 tokens each) as `torch._grouped_mm` (both weight
/// layouts), as one cuBLAS GEMM per expert in a CUDA graph, and as a plain software-pipelined
/// Triton grouped kernel. PyTorch's and cuBLAS's stream 1.9-3.3 TB/s; the Triton kernel
/// 3.3-4.5 TB/s (median 0.86 of 4.8). The serving model's routed-expert term at the
/// catalog's `hbm_gemm` (0.76, the dense skinny GEMMs' rate) lies between the two on every
/// row: slower than the pipelined kernel (by 8-32%), faster than PyTorch's grouped one.
#[test]
fn expert_stream_lies_between_pytorch_s_and_a_pipelined_grouped_kernel_on_the_h200() {
    let a = myriad_catalog::catalog().accelerator("h200").unwrap();
    let rate = a.hbm_tbps * 1e12 * a.efficiency.hbm_gemm;
    let ov = a.efficiency.gemm_overhead_us * 1e-6;
    let rows = data("h200-grouped-decode-stream-measured.json")["rows"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), 36);
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap();
        let model = 2.0 * ov + f("weight_bytes") / rate;
        let (pipelined, pytorch) = (f("triton_us") * 1e-6, f("grouped_mm_us") * 1e-6);
        assert!(
            pipelined < model && model < pytorch,
            "{} E{} m={}: pipelined {:.1} us, model {:.1} us, torch._grouped_mm {:.1} us",
            r["shape"],
            f("experts"),
            f("tokens_per_expert"),
            pipelined * 1e6,
            model * 1e6,
            pytorch * 1e6
        );
    }
}

/// Checks every row of `file` at <= 64 tokens an expert within `bounds` (model / measured
/// − 1) and the bf16 rows' mean error within ± `bf16_mean`.
fn grouped_decode_gemms(file: &str, acc: &str, bounds: (f64, f64), bf16_mean: f64) {
    let a = myriad_catalog::catalog().accelerator(acc).unwrap();
    let rate = a.hbm_tbps * 1e12 * a.efficiency.hbm_gemm;
    let ov = a.efficiency.gemm_overhead_us * 1e-6;
    let (mut sum_bf16, mut n_bf16) = (0.0, 0);
    let (mut sum_fp8, mut n_fp8, mut worst) = (0.0, 0, 0.0f64);
    for r in data(file)["rows"].as_array().unwrap() {
        let f = |k: &str| r[k].as_f64().unwrap();
        if f("tokens_per_expert") > 64.0 {
            continue;
        }
        let bf16 = r["dtype"] == "bf16";
        let bytes = f("experts") * f("k") * f("n") * if bf16 { 2.0 } else { 1.0 };
        let model = 2.0 * ov + bytes / rate;
        let err = model / (f("us") * 1e-6) - 1.0;
        worst = worst.max(err.abs());
        assert!(
            err > bounds.0 && err < bounds.1,
            "{acc} {} E{} {} m={}: {:+.1}%",
            r["shape"],
            f("experts"),
            r["dtype"],
            f("tokens_per_expert"),
            100.0 * err
        );
        if bf16 {
            sum_bf16 += err;
            n_bf16 += 1;
        } else {
            sum_fp8 += err;
            n_fp8 += 1;
        }
    }
    assert!(n_bf16 >= 40);
    let mean = sum_bf16 / n_bf16 as f64;
    eprintln!(
        "{acc}: bf16 mean {:+.1}%, fp8 mean {:+.1}%, worst {:.1}%",
        100.0 * mean,
        100.0 * sum_fp8 / n_fp8.max(1) as f64,
        100.0 * worst
    );
    assert!(
        mean.abs() < bf16_mean,
        "{acc}: bf16 grouped mean error {:+.1}%",
        100.0 * mean
    );
}
