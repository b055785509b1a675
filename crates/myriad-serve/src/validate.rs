//! Predicting published serving measurements (`myriad-measurements/1`, kind inference).
//!
//! Each row is read leniently from JSON (unknown keys are listed as warnings, never
//! errors). The deployment it describes is built with the stated settings; unstated ones
//! are filled the way the named framework would (`framework.rs`; trtllm-bench's
//! `calc_engine_setting` heuristic for TensorRT-LLM throughput runs) and every choice is
//! reported per row. Then:
//! - offline / max-throughput rows: the row's requests, all queued at t = 0, simulated to
//!   the end (total output tokens / total time, as trtllm-bench and MLPerf Offline count);
//! - static-batch rows: one batch of `max_batch` prompts prefilled together, then decoded;
//! - server rows (MLPerf Server): Poisson arrivals at the row's target rate;
//! - disaggregated rows: the decode pool saturated at its batch limit (largest batch whose
//!   iteration meets the row's ITL limit when it states one) and the prefill pool's
//!   token throughput.
//!
//! Errors are `predicted / measured - 1` on output tokens/s per accelerator (decode output
//! tokens/s per decode accelerator for disaggregated rows).

use myriad_catalog::Catalog;
use myriad_cluster::Level;
use myriad_model::{Mla, Moe, Placement, Transformer};
use myriad_scenario::Precision;
use serde::Serialize;
use serde_json::Value;

use crate::framework::{framework, Framework};
use crate::model::{Batch, InstanceModel, Parallel, Precisions, Speculative};
use crate::sim::{simulate_closed, simulate_requests, Deployment, RoleSpec, SchedulePolicy, Slo};

/// One predicted row.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub group: String,
    /// Output tokens/s per accelerator (None when the row measured no throughput).
    pub predicted: Option<f64>,
    pub measured: Option<f64>,
    pub error: Option<f64>,
    /// Other predicted quantities with their measurements: (name, predicted, measured).
    pub extra: Vec<(String, f64, f64)>,
    /// What was chosen for unstated settings, and why a row may be off.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    pub count: usize,
    pub mae: f64,
    /// Mean signed error (predicted / measured − 1): the bias, apart from the scatter.
    pub mean_error: f64,
    pub median_abs_error: f64,
    pub worst_abs_error: f64,
    pub worst_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub cases: Vec<CaseResult>,
    pub summary: GroupSummary,
    pub groups: Vec<GroupSummary>,
    /// The other measured quantities, one summary each (`group` is the quantity's name).
    pub metrics: Vec<GroupSummary>,
    pub warnings: Vec<String>,
}

fn summarize(group: &str, cases: &[&CaseResult]) -> GroupSummary {
    summarize_errors(
        group,
        cases
            .iter()
            .filter_map(|c| c.error.map(|e| (e, c.id.as_str())))
            .collect(),
    )
}

/// Count, MAE, signed mean, median and worst of signed errors `(error, row id)`.
fn summarize_errors(group: &str, mut errs: Vec<(f64, &str)>) -> GroupSummary {
    let n = errs.len();
    if n == 0 {
        return GroupSummary {
            group: group.into(),
            count: 0,
            mae: 0.0,
            mean_error: 0.0,
            median_abs_error: 0.0,
            worst_abs_error: 0.0,
            worst_id: String::new(),
        };
    }
    let mean_error = errs.iter().map(|e| e.0).sum::<f64>() / n as f64;
    for e in &mut errs {
        e.0 = e.0.abs();
    }
    let mae = errs.iter().map(|e| e.0).sum::<f64>() / n as f64;
    errs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = if n % 2 == 1 {
        errs[n / 2].0
    } else {
        (errs[n / 2 - 1].0 + errs[n / 2].0) / 2.0
    };
    GroupSummary {
        group: group.into(),
        count: n,
        mae,
        mean_error,
        median_abs_error: median,
        worst_abs_error: errs[n - 1].0,
        worst_id: errs[n - 1].1.to_string(),
    }
}

/// One summary per measured quantity besides the throughput (TTFT, TPOT, request latency,
/// per-user rates, prefill and decode rates), named for it, in first-seen order.
fn summarize_extras(cases: &[CaseResult]) -> Vec<GroupSummary> {
    let mut names: Vec<&str> = Vec::new();
    for c in cases {
        for (k, _, _) in &c.extra {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    names
        .iter()
        .map(|k| {
            let errs = cases
                .iter()
                .flat_map(|c| {
                    c.extra
                        .iter()
                        .filter(|(n, _, m)| n == k && *m > 0.0)
                        .map(|(_, p, m)| (p / m - 1.0, c.id.as_str()))
                })
                .collect();
            summarize_errors(k, errs)
        })
        .collect()
}

fn num(v: &Value, k: &str) -> Option<f64> {
    match v.get(k) {
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    }
}
/// Largest count (accelerators, instances, parallel degree, batch, tokens) a row may state.
const MAX_COUNT: f64 = 1e8;

/// Counts in a row's `hardware` and `serving` blocks (and in `prefill`/`decode`) that are
/// numbers must be whole and at most [`MAX_COUNT`]: a clear error instead of a value cast
/// to 0 or to billions of instances.
fn check_counts(hw: &Value, sv: &Value) -> Result<(), String> {
    const KEYS: [&str; 14] = [
        "count",
        "per_node",
        "gpus_per_node",
        "nodes",
        "gpus",
        "gpus_per_instance",
        "tp",
        "pp",
        "ep",
        "attention_dp",
        "instances",
        "max_batch",
        "max_num_tokens",
        "concurrency",
    ];
    let blocks = [
        ("hardware", Some(hw)),
        ("serving", Some(sv)),
        ("serving.prefill", sv.get("prefill")),
        ("serving.decode", sv.get("decode")),
    ];
    for (name, b) in blocks {
        let Some(b) = b else { continue };
        for k in KEYS {
            if let Some(x) = b.get(k).and_then(Value::as_f64) {
                if !(x.is_finite() && x.fract() == 0.0 && (0.0..=MAX_COUNT).contains(&x)) {
                    return Err(format!(
                        "{name}.{k}: {x} is not a whole number between 0 and {MAX_COUNT}"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn uint(v: &Value, k: &str) -> Option<u32> {
    num(v, k).filter(|x| *x >= 1.0).map(|x| x as u32)
}
fn text(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// Storage precision named in free text ("nvfp4 (table label FP4)", "fp8 (...)").
fn precision_in(s: &str) -> Option<Precision> {
    // The first clause states the format; later ones are commentary.
    let s = s.to_ascii_lowercase();
    let s = s.split([';', '(']).next().unwrap_or("");
    if s.contains("fp4") {
        Some(Precision::Fp4)
    } else if s.contains("fp8") {
        Some(Precision::Fp8)
    } else if s.contains("bf16") || s.contains("fp16") || s.contains("16-bit") || s.contains("auto")
    {
        Some(Precision::Bf16)
    } else {
        None
    }
}

fn accelerator_id(hw: &Value) -> String {
    let a = text(hw, "accelerator");
    if !a.is_empty() {
        return a;
    }
    let g = text(hw, "gpu").to_ascii_lowercase();
    for (k, id) in [
        ("h800", "h800"),
        ("h200", "h200"),
        ("h20", "h20"),
        ("h100", "h100-sxm"),
        ("gb200", "gb200"),
        ("b200", "b200"),
        ("a100", "a100-sxm-80gb"),
        ("mi300x", "mi300x"),
    ] {
        if g.contains(k) {
            return id.into();
        }
    }
    g
}

/// The model block of a row (tolerates `ffn`/`ffn_hidden`, `active`/`top_k`, MLA inside moe).
fn row_model(m: &Value, notes: &mut Vec<String>) -> Result<Transformer, String> {
    let req = |k: &str, alt: &str| {
        uint(m, k)
            .or_else(|| uint(m, alt))
            .ok_or_else(|| format!("model.{k}: missing"))
    };
    let layers = req("layers", "layers")?;
    let hidden = req("hidden", "hidden")?;
    let ffn = req("ffn_hidden", "ffn")?;
    let heads = req("heads", "heads")?;
    let moe_v = m.get("moe").filter(|v| v.is_object());
    let mla_v = m
        .get("mla")
        .filter(|v| v.is_object())
        .or_else(|| moe_v.and_then(|x| x.get("mla")).filter(|v| v.is_object()));
    let mla = mla_v.map(|x| Mla {
        q_lora_rank: uint(x, "q_lora_rank"),
        kv_lora_rank: uint(x, "kv_lora_rank").unwrap_or(512),
        qk_nope_head_dim: uint(x, "qk_nope_head_dim").unwrap_or(128),
        qk_rope_head_dim: uint(x, "qk_rope_head_dim").unwrap_or(64),
        v_head_dim: uint(x, "v_head_dim").unwrap_or(128),
    });
    let moe = moe_v.map(|x| Moe {
        experts: uint(x, "experts").unwrap_or(1),
        top_k: uint(x, "top_k").or_else(|| uint(x, "active")).unwrap_or(1),
        expert_ffn_hidden: uint(x, "expert_ffn_hidden")
            .or_else(|| uint(x, "expert_ffn"))
            .unwrap_or(ffn),
        shared_experts: uint(x, "shared_experts").unwrap_or(0),
        dense_layers: uint(x, "dense_layers")
            .or_else(|| uint(x, "dense_layers_first"))
            .unwrap_or(0),
        dense_ffn_hidden: uint(x, "dense_ffn_hidden"),
        every: None,
        router_groups: uint(x, "router_groups"),
        router_group_topk: uint(x, "router_group_topk"),
    });
    let kv_heads = match uint(m, "kv_heads") {
        Some(k) => k,
        None => {
            if mla.is_none() {
                notes.push(format!("model.kv_heads: {heads} (not given; MHA assumed)"));
            }
            heads
        }
    };
    let vocab = match uint(m, "vocab") {
        Some(v) => v,
        None => {
            notes.push("model.vocab: 129280 (not given; DeepSeek-V3 tokenizer size)".into());
            129_280
        }
    };
    let t = Transformer {
        name: text(m, "name"),
        layers,
        hidden,
        ffn_hidden: ffn,
        heads,
        kv_heads,
        head_dim: uint(m, "head_dim"),
        vocab,
        seq_len: 4096,
        gated_mlp: m.get("gated_mlp").and_then(Value::as_bool).unwrap_or(true),
        tied_embeddings: false,
        moe,
        mla,
        sliding_window: None,
        // Sinks cost only the backward pass, which serving never runs.
        attention_sinks: false,
        mtp_layers: 0,
    };
    t.check().map_err(|e| format!("model.{e}"))?;
    Ok(t)
}

/// Hierarchy levels for `count` accelerators of `acc` on its default system and fabric, and
/// whether that system's scale-up domain spans several nodes.
fn levels_for(cat: &Catalog, acc: &str, count: u64) -> Result<(Vec<Level>, bool), String> {
    let su = cat
        .default_scale_up_for(acc)
        .ok_or_else(|| format!("no scale-up system holds `{acc}`"))?;
    let dom = su.accelerators_per_domain as u64;
    let count = count.max(1).div_ceil(dom) * dom;
    let text = format!(
        "{{\"format\":\"myriad/1\",\"cluster\":{{\"accelerator\":\"{acc}\",\"count\":{count}}}}}"
    );
    let s = myriad_scenario::parse_scenario("(row)", &text, cat).map_err(|e| e.to_string())?;
    let b = myriad_cluster::build(&s, cat).map_err(|e| e.to_string())?;
    Ok((b.levels, su.spans_nodes()))
}

/// trtllm-bench's `calc_engine_setting` (TensorRT-LLM `bench/build/tuning.py`): max batch
/// and max tokens from the KV capacity at the target ISL + OSL, rounded "optimistically".
pub fn trtllm_bench_settings(kv_requests: f64, isl: f64, osl: f64) -> (u32, u32) {
    let raw_bs = kv_requests.min(4096.0);
    let raw_tok = (raw_bs * (1.0 + isl / osl)).min(32768.0);
    let bs = if raw_bs < 256.0 {
        (32.0 * (raw_bs / 32.0).ceil()).max(64.0)
    } else if raw_bs < 1024.0 {
        128.0 * (raw_bs / 128.0).ceil()
    } else {
        256.0 * (raw_bs / 256.0).ceil()
    };
    let tok = if raw_tok < 4096.0 {
        (256.0 * (raw_tok / 256.0).ceil()).max(2048.0)
    } else if raw_tok < 8192.0 {
        512.0 * (raw_tok / 512.0).ceil()
    } else {
        1024.0 * (raw_tok / 1024.0).ceil()
    };
    (bs as u32, tok as u32)
}

/// NVIDIA's ModelOpt NVFP4 checkpoints of DeepSeek-R1 quantise every MLP (the routed and
/// shared experts and the three dense layers) and leave the attention projections in
/// bf16: the R1-0528-FP4 safetensors listing has `mlp.*_proj.weight` U8 with F8_E4M3
/// block scales and `self_attn.*_proj.weight` BF16 (search index file 31342819827), and
/// MLPerf's DeepSeek-R1-FP4 lists the attention projections in `exclude_modules`. The v2
/// checkpoints also quantise the output projection ("Compared to
/// nvidia/DeepSeek-R1-0528-FP4, this checkpoint additionally quantizes the wo module in
/// attention layers", the nvidia/DeepSeek-R1-0528-FP4-v2 model card). Returns the
/// output projection's precision and the evidence, for a row that names such a
/// checkpoint or states bf16 attention.
fn nvidia_deepseek_fp4(checkpoint: &str, weight_text: &str) -> Option<(Precision, &'static str)> {
    let c = checkpoint.to_ascii_lowercase();
    let w = weight_text.to_ascii_lowercase();
    let named = c.contains("deepseek-r1") && c.contains("fp4");
    if named && c.contains("-v2") {
        return Some((
            Precision::Fp4,
            "the NVIDIA NVFP4 v2 checkpoint: its model card adds o_proj to v1's NVFP4 MLPs",
        ));
    }
    if named {
        return Some((
            Precision::Bf16,
            "the NVIDIA NVFP4 checkpoint: its safetensors hold the attention projections in bf16",
        ));
    }
    if w.contains("attention bf16") || w.contains("bf16 attention") {
        return Some((Precision::Bf16, "the row states bf16 attention"));
    }
    None
}

/// The checkpoint's quantisation format as trtllm-bench reads it (`quant_algo` of the
/// checkpoint's quantisation config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantAlgo {
    None,
    Fp8,
    /// NVIDIA NVFP4: two 4-bit values per stored byte, one fp8 scale per 16 values.
    Nvfp4,
    /// OCP MXFP4 (gpt-oss): two 4-bit values per stored byte, one e8m0 scale per 32.
    Mxfp4,
}

impl QuantAlgo {
    /// The format of a checkpoint whose lowest weight precision is in `prec`.
    pub fn of(prec: Precisions, mxfp4: bool) -> Self {
        if prec.weights == Precision::Fp4 || prec.experts == Precision::Fp4 {
            if mxfp4 {
                QuantAlgo::Mxfp4
            } else {
                QuantAlgo::Nvfp4
            }
        } else if prec.weights == Precision::Fp8 || prec.experts == Precision::Fp8 {
            QuantAlgo::Fp8
        } else {
            QuantAlgo::None
        }
    }

    /// trtllm-bench's `BYTES_PER_ELEM` (`bench/build/tuning.py`): NO_QUANT 2, FP8 1,
    /// NVFP4 0.5, anything else (MXFP4 included) the default 2.
    pub fn bench_bytes_per_elem(self) -> f64 {
        match self {
            QuantAlgo::Fp8 => 1.0,
            QuantAlgo::Nvfp4 => 0.5,
            QuantAlgo::None | QuantAlgo::Mxfp4 => 2.0,
        }
    }

    /// Elements a safetensors header lists per 4-bit parameter: the packed byte holds two
    /// values (0.5) plus the block scales (NVFP4 1/16, MXFP4 1/32).
    fn stored_elems_per_fp4_param(self) -> f64 {
        match self {
            QuantAlgo::Mxfp4 => 0.5 + 1.0 / 32.0,
            _ => 0.5 + 1.0 / 16.0,
        }
    }
}

/// The parameter count trtllm-bench reads: the sum of the element counts in the
/// checkpoint's safetensors headers (`ModelConfig.get_param_count`,
/// `bench/build/dataclasses.py`). 4-bit weights are stored packed two per byte, so the
/// headers list about half as many elements as there are parameters.
pub fn trtllm_bench_param_count(t: &Transformer, prec: Precisions, algo: QuantAlgo) -> f64 {
    let p = t.params();
    let moe_layers = t.moe_layers() as f64;
    let dense_layers = t.layers as f64 - moe_layers;
    let experts = moe_layers * p.experts_per_moe_layer;
    // Linear weights besides the routed experts (attention, dense MLPs, shared experts);
    // embeddings, norms and routers stay 16-bit in the published checkpoints.
    let router = t.router_params();
    let linear = t.layers as f64 * p.attention_per_layer
        + dense_layers * p.dense_mlp_per_layer
        + moe_layers * (p.moe_shared_per_layer - router);
    let fp4 = algo.stored_elems_per_fp4_param();
    let stored = |n: f64, q: Precision| if q == Precision::Fp4 { n * fp4 } else { n };
    p.total - experts - linear + stored(experts, prec.experts) + stored(linear, prec.weights)
}

/// The KV-cache capacity in requests as trtllm-bench's `calc_engine_setting` estimates it
/// (not the runtime's): KV bytes per token `2 · layers · max(tp, kv_heads) · head_size ·
/// kv bytes` with `head_size = hidden / heads` unless stated (MLA models are treated as
/// multi-head attention, which overstates their cache), engine = header parameter count
/// (`trtllm_bench_param_count`) × `BYTES_PER_ELEM` of the checkpoint's format, memory =
/// device memory × GPUs, 95% of the rest for the cache.
#[allow(clippy::too_many_arguments)]
pub fn trtllm_bench_kv_requests(
    cat: &Catalog,
    acc_id: &str,
    t: &Transformer,
    prec: Precisions,
    algo: QuantAlgo,
    tp: u32,
    isl: f64,
    osl: f64,
) -> f64 {
    let Ok(acc) = cat.accelerator(acc_id) else {
        return 0.0;
    };
    let gib = 1024.0 * 1024.0 * 1024.0;
    let kv_bytes = match prec.kv {
        Precision::Fp8 => 1.0,
        Precision::Fp4 => 0.5,
        _ => 2.0,
    };
    let head = t.head_dim.unwrap_or(t.hidden / t.heads.max(1)) as f64;
    let per_token = 2.0 * t.layers as f64 * (tp.max(t.kv_heads)) as f64 * head * kv_bytes;
    let engine = trtllm_bench_param_count(t, prec, algo) * algo.bench_bytes_per_elem();
    let free = acc.hbm_gib * gib * tp as f64 - engine;
    (free * 0.95 / (per_token * (isl + osl))).max(0.0)
}

/// Parallel layout stated in free text: "EP16", "TP8", "DP+EP (8 GPUs)".
/// The number written right after `key` in `s` (case-insensitive): "TP4PP2", "PP" → 2.
fn number_after(s: &str, key: &str) -> Option<u32> {
    let u = s.to_ascii_uppercase();
    let i = u.find(key)? + key.len();
    let d: String = u[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    d.parse().ok()
}

fn parse_parallel(s: &str, gpus: u32) -> (u32, u32, u32) {
    let u = s.to_ascii_uppercase();
    let after = |k: &str| number_after(&u, k);
    if let Some(ep) = after("EP") {
        // Large EP: attention data-parallel over the same ranks (DeepSeek/SGLang layout).
        return (1, ep, ep);
    }
    if u.contains("DP") && u.contains("EP") {
        return (1, gpus, gpus);
    }
    if let Some(tp) = after("TP") {
        return (tp, 1, 1);
    }
    (1, gpus, gpus)
}

/// Published checkpoints that run with an FP8 KV cache in TensorRT-LLM when the row
/// states no KV precision: their quantisation config names one (`hf_quant_config.json`
/// `kv_cache_quant_algo: FP8`, which the `auto` KV dtype follows), or trtllm-bench's
/// documented mapping gives them one. (lower-case repository id, where that was read)
pub const CHECKPOINT_KV_FP8: &[(&str, &str)] = &[
    (
        "nvidia/llama-3.3-70b-instruct-fp4",
        "hf_quant_config.json {quant_algo NVFP4, kv_cache_quant_algo FP8, group_size 16}, as checked against the downloaded snapshot by a public deployment script (search index file 63143559752)",
    ),
    (
        "nvidia/llama-3.1-8b-instruct-fp8",
        "TensorRT-LLM docs, performance/perf-benchmarking.md, 'Quantization in the PyTorch Flow': this checkpoint (named there) has kv_cache_quant_algo null and trtllm-bench maps FP8|null to an FP8 KV cache. Consistent with physics: a 16-bit cache cannot reach the published H200 figures - at 2048/2048 the 247 requests it holds (0.95 of 140 GiB less 9.6 GB of weights, 128 KiB per token) read 99.5 GB of KV per step, 20.7 ms at the full 4.8 TB/s, at most 11,900 tokens/s against 12,194 measured; at 20000/2000 at most 1,742 against 1,804",
    ),
    (
        "nvidia/llama-3.3-70b-instruct-fp8",
        "not read; FP8 because a 16-bit cache cannot give the published figure: trtllm-bench admits a request only with KV room for its whole prompt and output (GUARANTEED_NO_EVICT, its get_settings), so at 1024/8192 on H200 TP2 even all free memory holds at most 73 requests, and each step reads their cache (mean context 5,120) and every weight: at most 1,796 tokens/s per GPU at the full 4.8 TB/s with no prefill, against 2,009 measured (test a_16_bit_cache_cannot_reach_three_published_figures); ModelOpt's exporter writes an FP8 cache by default (hf_ptq.py --kv_cache_qformat), as its NVFP4 sibling above carries",
    ),
    (
        "nvidia/llama-4-maverick-17b-128e-instruct-nvfp4",
        "not read; FP8 because a 16-bit cache cannot give the published figure: under trtllm-bench's GUARANTEED_NO_EVICT admission, at 1024/8192 on B200 DEP4 all free memory holds at most ~65 requests a rank, and each step reads their cache and the experts they hit: at most 4,134 tokens/s per GPU at the full 8 TB/s with no prefill, against 5,174 measured (test a_16_bit_cache_cannot_reach_three_published_figures); ModelOpt's exporter writes an FP8 cache by default. The FP8 Maverick checkpoint's H200 rows are consistent with a 16-bit cache and keep it",
    ),
    (
        "nvidia/qwen3-30b-a3b-fp4",
        "not read; FP8 because a 16-bit cache cannot give the published figures: under trtllm-bench's GUARANTEED_NO_EVICT admission, at 1024/32768 on one B200 all free memory holds at most ~100 requests, and each step reads their cache (mean context 17,408) and the experts they hit: at most 3,751 tokens/s at the full 8 TB/s with no prefill, against 4,494 measured (GB200: 4,925) (test a_16_bit_cache_cannot_reach_three_published_figures); ModelOpt's exporter writes an FP8 cache by default. The Qwen3-235B-A22B checkpoints' figures are reachable with a 16-bit cache and keep it",
    ),
    (
        "nvidia/llama-3.1-405b-instruct-fp8",
        "TensorRT-LLM docs, performance/perf-benchmarking.md, 'Quantization in the PyTorch Flow': this checkpoint (named there) has kv_cache_quant_algo null and trtllm-bench maps FP8|null to an FP8 KV cache",
    ),
];

/// trtllm-bench's KV-cache dtype for a quantised checkpoint, with its source.
pub const TRTLLM_BENCH_KV_RULE: &str = "the TensorRT-LLM 1.0 era's trtllm-bench maps a checkpoint's compute/KV quantisation FP8|FP8, FP8|null and NVFP4|null to an FP8 KV cache (TensorRT-LLM docs, performance/perf-benchmarking.md, 'Quantization in the PyTorch Flow', mapping table)";

/// TensorRT-LLM's CUDA-graph batch sizes for `max_batch` with padding enabled
/// (`CudaGraphConfig._generate_cuda_graph_batch_sizes`, llmapi/llm_args.py): 1, 2, 4, the
/// multiples of 8 to 128, the powers of two from 256 below `max_batch`, and `max_batch`.
pub fn trtllm_graph_batch_sizes(max_batch: u32) -> Vec<u32> {
    let mut v: Vec<u32> = [1, 2, 4]
        .into_iter()
        .chain((1..=16).map(|i| i * 8))
        .collect();
    let top = (max_batch.max(1) as f64).log2().floor() as u32;
    v.extend((8..top).map(|i| 1u32 << i));
    v.retain(|&x| x <= max_batch);
    if v.last() != Some(&max_batch) {
        v.push(max_batch);
    }
    v
}

struct Built {
    model: InstanceModel,
    gpus: u32,
}

#[allow(clippy::too_many_arguments)]
fn build(
    cat: &Catalog,
    acc_id: &str,
    t: &Transformer,
    par: Parallel,
    prec: Precisions,
    fw: &Framework,
    overlap: bool,
    spec: Option<Speculative>,
    count: u64,
) -> Result<Built, String> {
    let acc = cat.accelerator(acc_id).map_err(|e| e.message())?;
    let (levels, mnnvl) = levels_for(cat, acc_id, count.max(par.gpus() as u64))?;
    let m = InstanceModel::new(
        acc,
        &levels,
        t,
        par,
        prec,
        fw.iteration_overhead_us * 1e-6,
        overlap,
        spec,
    )?
    .with_multi_node_nvlink(mnnvl)
    .with_framework(fw);
    Ok(Built {
        gpus: par.gpus(),
        model: m,
    })
}

/// Saturated decode throughput of one instance (output tokens/s per accelerator) at the
/// largest batch that fits `max_batch`, the KV cache, and (when given) the ITL limit.
pub fn decode_saturated(
    m: &InstanceModel,
    max_batch: f64,
    kv_tokens: f64,
    isl: f64,
    osl: f64,
    itl_limit_s: Option<f64>,
) -> (f64, f64) {
    let (ctx_mean, ctx_mean_sq) = crate::model::running_contexts(isl, osl);
    let fit = (kv_tokens / m.kv_need(isl + osl)).floor().max(1.0);
    let mut b = max_batch.min(fit).max(1.0);
    let tps = m.tokens_per_step();
    let it = |b: f64| {
        m.iteration(&Batch {
            decode_seqs: b,
            decode_ctx: b * ctx_mean,
            decode_ctx_sq: b * ctx_mean_sq,
            ..Batch::default()
        })
        .total_s
    };
    if let Some(l) = itl_limit_s {
        // Per output token: the step time over the tokens it emits.
        while b > 1.0 && it(b) / tps > l {
            b = (b * 0.9).floor();
        }
    }
    (b * tps / it(b) / m.par.gpus() as f64, b)
}

/// Prefill throughput of one instance (prompt tokens/s per accelerator): iterations of
/// `max_tokens` worth of whole prompts of `isl` tokens.
pub fn prefill_saturated(m: &InstanceModel, max_tokens: f64, isl: f64) -> f64 {
    let n = (max_tokens / isl).floor().max(1.0);
    let tok = n * isl;
    let t = m
        .iteration(&Batch {
            prefill_tokens: tok,
            prefill_pairs: n * isl * (isl + 1.0) / 2.0,
            prefill_done: n,
            prefill_seqs: n,
            ..Batch::default()
        })
        .total_s;
    tok / t / m.par.gpus() as f64
}

/// The `serving` keys the validator reads; any other that a row sets is reported as not
/// used (keys ending in `_note` or `notes` are commentary).
const KNOWN_SERVING: &[&str] = &[
    "framework",
    "weight_precision",
    "kv_cache_precision",
    "tp",
    "pp",
    "ep",
    "attention_dp",
    "attention_dp_config",
    "gpus",
    "gpus_per_instance",
    "instances",
    "max_batch",
    "max_batch_per_instance",
    "max_num_tokens",
    "chunked_prefill",
    "num_scheduler_steps",
    "concurrency",
    "num_requests",
    "isl",
    "osl",
    "scenario",
    "aggregation",
    "speculative_decoding",
    "kv_cache_free_gpu_mem_fraction",
    "kv_cache_free_gpu_mem_frac",
    "target_qps",
    "ttft_limit_ms",
    "tpot_limit_ms",
    "loadgen_requested",
    "prefill",
    "decode",
    "dataset",
    "prefill_nodes",
    "decode_nodes",
    "pd_disaggregated",
    "dp_eq_ep",
    "input_len",
    "output_len",
    "itl_slo_ms",
    "checkpoint",
    "cuda_graph_batch_sizes",
    "deployment_from",
];

/// How a row key the validator does not read is reported.
const UNUSED: &str = "not used (ignored)";

/// Predicts one row. `warnings` collects keys that were not understood.
pub fn predict_row(cat: &Catalog, row: &Value, warnings: &mut Vec<String>) -> CaseResult {
    let id = text(row, "id");
    let group = {
        let g = text(row, "group");
        if g.is_empty() {
            "ungrouped".into()
        } else {
            g
        }
    };
    let mut notes = Vec::new();
    let mut res = CaseResult {
        id: id.clone(),
        group,
        predicted: None,
        measured: None,
        error: None,
        extra: Vec::new(),
        notes: Vec::new(),
    };
    match predict_inner(cat, row, &mut res, &mut notes, warnings) {
        Ok(()) => {}
        Err(e) => notes.push(format!("not predicted: {e}")),
    }
    if let (Some(p), Some(m)) = (res.predicted, res.measured) {
        res.error = Some(p / m - 1.0);
    }
    res.notes = notes;
    res
}

fn predict_inner(
    cat: &Catalog,
    row: &Value,
    res: &mut CaseResult,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let null = Value::Null;
    let hw = row.get("hardware").unwrap_or(&null);
    let sv = row.get("serving").unwrap_or(&null);
    let ms = row.get("measured").unwrap_or(&null);
    check_counts(hw, sv)?;
    let from = text(sv, "deployment_from");
    if !from.is_empty() {
        notes.push(format!(
            "prefill/decode groups: those of {from} (the row's hardware notes: same deployment shape)"
        ));
    }
    if let Some(o) = sv.as_object() {
        for k in o.keys() {
            if !KNOWN_SERVING.contains(&k.as_str())
                && !k.ends_with("_note")
                && !k.ends_with("notes")
                && o[k] != Value::Null
            {
                warnings.push(format!("{}: serving.{k}: {UNUSED}", res.id));
            }
        }
    }
    let acc_id = accelerator_id(hw);
    cat.accelerator(&acc_id).map_err(|e| e.message())?;
    // The system `levels_for` builds the row's cluster on: the one built for the
    // accelerator (`hgx-h200` for H200, not `hgx-h100`, which also lists it).
    if let Some(su) = cat.default_scale_up_for(&acc_id) {
        notes.push(su.choice_note(&acc_id, cat));
    }
    let mut t = row_model(row.get("model").unwrap_or(&null), notes)?;
    // Sliding windows are architecture the row format cannot state: from the built-in
    // model of the same shape (gpt-oss: every other layer, 128 tokens).
    if let Some(n) = cat.lend_sliding_window(&mut t) {
        notes.push(format!("model.{n}"));
    }
    let mut fw_name = text(sv, "framework");
    if fw_name.is_empty() {
        // No framework field: the source may name it.
        fw_name = match row.get("source") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
    }
    let fw = framework(&fw_name);
    notes.push(format!("framework: {} defaults", fw.id));
    // Precisions.
    let wtext = text(sv, "weight_precision");
    let experts = match precision_in(&wtext) {
        Some(p) => p,
        None if t.mla.is_some() && t.moe.is_some() => {
            notes.push(
                "weights: fp8 (not given; DeepSeek-V3/R1 weights are released in fp8)".into(),
            );
            Precision::Fp8
        }
        None => {
            notes.push("weights: bf16 (not given)".into());
            Precision::Bf16
        }
    };
    let wl = wtext.to_ascii_lowercase();
    // NVIDIA's and the SGLang FP4 DeepSeek checkpoints quantise only the MoE to NVFP4 and
    // keep attention/dense in FP8; dense models in FP4 are FP4 throughout.
    let weights = if experts == Precision::Fp4 && t.moe.is_some() {
        Precision::Fp8
    } else if wl.contains("fp8") || experts == Precision::Fp4 {
        if experts == Precision::Fp4 {
            Precision::Fp4
        } else {
            Precision::Fp8
        }
    } else {
        experts
    };
    let fw_text = text(sv, "framework").to_ascii_lowercase();
    // A trtllm-bench run: its settings fill what the row leaves unstated.
    let bench = fw.id == "tensorrt-llm" && fw_text.contains("trtllm-bench");
    let kv_text = text(sv, "kv_cache_precision");
    let kv = {
        let k = kv_text.to_ascii_lowercase();
        if k.contains("blackwell") && k.contains("hopper") {
            // "fp8 on Blackwell; auto on Hopper"
            if acc_id.starts_with('b') || acc_id.starts_with("gb") {
                Precision::Fp8
            } else {
                Precision::Bf16
            }
        } else {
            // "auto" (TensorRT-LLM on Hopper) keeps the model's 16-bit dtype.
            precision_in(&k).unwrap_or(Precision::Bf16)
        }
    };
    let kv_stated = !kv_text.is_empty();
    let acc = cat.accelerator(&acc_id).map_err(|e| e.message())?;
    // gpt-oss ships MXFP4 routed experts and bf16 attention (OpenAI model card); a row
    // that names MXFP4 (and no NVFP4 checkpoint) gets that checkpoint, whether its label
    // reads FP8 or FP4 (TensorRT-LLM's perf overview labels gpt-oss columns by the GPU's
    // MoE path, not by a re-quantised checkpoint).
    let mxfp4 = t.name.to_ascii_lowercase().contains("gpt-oss")
        && wl.contains("mxfp4")
        && !wl.contains("nvfp4");
    let (weights, experts) = if mxfp4 {
        notes.push(
            "weights: MXFP4 experts + bf16 attention (the upstream gpt-oss checkpoint; the row leaves the format open)"
                .into(),
        );
        (Precision::Bf16, Precision::Fp4)
    } else {
        (weights, experts)
    };
    let mut prec = Precisions::new(weights, experts, kv);
    if experts == Precision::Fp4 && t.mla.is_some() && t.moe.is_some() {
        if let Some((out, why)) = nvidia_deepseek_fp4(&text(sv, "checkpoint"), &wtext) {
            prec.weights = Precision::Fp4;
            prec.attention = Precision::Bf16;
            prec.attention_out = out;
            notes.push(format!(
                "weights: NVFP4 MLPs (routed, shared and dense), {} o_proj, bf16 other attention projections ({why})",
                out.as_str()
            ));
        }
    }
    notes.extend(crate::model::widening_notes(acc, prec));
    let quant_algo = QuantAlgo::of(prec, mxfp4);
    if !kv_stated {
        let ckpt = text(sv, "checkpoint").to_ascii_lowercase();
        // trtllm-bench of the TensorRT-LLM 1.0 era picked the KV dtype from the checkpoint's
        // compute quantisation when the checkpoint left `kv_cache_quant_algo` null (its
        // perf-benchmarking doc's mapping table): a ModelOpt FP8 or NVFP4 checkpoint ran with
        // an FP8 cache. Later releases default the dtype to `auto` (`get_settings` in
        // `bench/benchmark/utils/general.py`), which leaves the mapping inert: the cache
        // follows the checkpoint's own `kv_cache_quant_algo` (the table above).
        let bench_v1 = bench && fw_text.contains("v1.0");
        let quantised = [weights, experts]
            .iter()
            .any(|p| matches!(p, Precision::Fp8 | Precision::Fp4));
        if let Some((_, src)) = CHECKPOINT_KV_FP8.iter().find(|(c, _)| ckpt == *c) {
            // TensorRT-LLM's "auto" KV dtype follows the checkpoint's kv_cache_quant_algo.
            notes.push(format!(
                "kv_cache_precision: fp8 (not given; the checkpoint's kv_cache_quant_algo: {src})"
            ));
            prec.kv = Precision::Fp8;
        } else if bench_v1 && quantised {
            notes.push(format!(
                "kv_cache_precision: fp8 (not given; {TRTLLM_BENCH_KV_RULE})"
            ));
            prec.kv = Precision::Fp8;
        } else {
            notes.push("kv_cache_precision: bf16 (not given)".into());
        }
    }
    notes.push(format!(
        "precision: weights {} experts {} kv {}{}",
        prec.weights.as_str(),
        prec.experts.as_str(),
        prec.kv.as_str(),
        if (prec.attention, prec.attention_out) == (prec.weights, prec.weights) {
            String::new()
        } else {
            format!(
                " attention {} attention_out {}",
                prec.attention.as_str(),
                prec.attention_out.as_str()
            )
        }
    ));
    let spec = {
        let s = text(sv, "speculative_decoding").to_ascii_lowercase();
        if (s.contains("mtp") || s.contains("eagle") || s.contains("draft"))
            && !s.contains("none")
            && !s.contains("not enabled")
        {
            let n = draft_depth(&s);
            let deepseek = t.name.to_ascii_lowercase().contains("deepseek")
                && t.moe.as_ref().is_some_and(|m| m.experts == 256);
            let relaxed = s.contains("relaxed");
            let measured = match (deepseek && s.contains("mtp"), relaxed, n) {
                (true, true, 3) => Some((
                    crate::model::DEEPSEEK_R1_MTP3_RELAXED_TOKENS_PER_STEP,
                    "relaxed acceptance",
                )),
                (true, false, 1..=5) => Some((
                    crate::model::DEEPSEEK_R1_MTP_TOKENS_PER_STEP[n as usize - 1],
                    "strict acceptance",
                )),
                _ => None,
            };
            match measured {
                Some((tau, how)) => {
                    let sp = Speculative::with_mean_tokens(n, tau);
                    notes.push(format!(
                        "speculative: {n} MTP draft tokens, {tau} tokens per step measured for DeepSeek-R1 with {how} (TensorRT-LLM tech blog 1; {:.3} per token)",
                        sp.acceptance
                    ));
                    Some(sp)
                }
                None => {
                    notes.push(format!(
                        "speculative: {n} draft tokens, acceptance 0.85 per token (DeepSeek-V3 report)"
                    ));
                    Some(Speculative {
                        draft_tokens: n,
                        acceptance: 0.85,
                    })
                }
            }
        } else {
            None
        }
    };
    let scenario = format!(
        "{} {}",
        text(sv, "scenario").to_ascii_lowercase(),
        text(sv, "aggregation").to_ascii_lowercase()
    );
    let kv_frac = num(sv, "kv_cache_free_gpu_mem_fraction")
        .or_else(|| num(sv, "kv_cache_free_gpu_mem_frac"))
        .unwrap_or(fw.kv_fraction);
    let ttft_limit = num(sv, "ttft_limit_ms").map(|x| x * 1e-3);
    let tpot_limit = num(sv, "tpot_limit_ms").map(|x| x * 1e-3);

    // Lengths. MLPerf rows state no ISL/OSL: the output mean is the accuracy run's mean
    // output (tokens/s ÷ samples/s); the input mean is the dataset's.
    let mut isl = num(sv, "isl").or_else(|| num(sv, "input_len"));
    let mut osl = num(sv, "osl").or_else(|| num(sv, "output_len"));
    if isl.is_none()
        && ms
            .get("decode_output_tokens_per_s_per_node_2k_input")
            .is_some()
    {
        isl = Some(2000.0);
        notes.push("isl: 2000 (the measurement's \"2k input\")".into());
    }
    if isl.is_none() && osl.is_none() {
        if let (Some(tot), Some(out)) = (
            num(ms, "total_tokens_per_s"),
            num(ms, "output_tokens_per_s_total"),
        ) {
            // The workload's shape from what the benchmark printed: ISL/OSL = (total -
            // output) / output tokens; ISL 1024 assumed.
            let ratio = (tot - out) / out;
            let o = (1024.0 / ratio).round();
            isl = Some(1024.0);
            osl = Some(o);
            notes.push(format!(
                "isl/osl: 1024/{o} (not given; ratio from the printed total/output tokens)"
            ));
        }
    }
    if osl.is_none() {
        if let Some(o) = num(ms, "mean_output_tokens_per_sample_accuracy_run") {
            osl = Some(o);
            notes.push(format!("osl: {o} (mean output of the accuracy run)"));
        } else if let (Some(tok), Some(smp)) = (
            num(ms, "output_tokens_per_s_total"),
            num(ms, "samples_per_s").filter(|&x| x > 0.0),
        ) {
            // LoadGen counts both over the same run: their ratio is its mean output.
            let o = (tok / smp * 10.0).round() / 10.0;
            osl = Some(o);
            notes.push(format!(
                "osl: {o} (mean output of the performance run: tokens/s over samples/s)"
            ));
        }
    }
    // A row that names an MLPerf dataset and states no prompt length runs that dataset's
    // own requests (`crate::datasets`): its per-sample (input, output) pairs, outputs
    // scaled to the row's mean.
    let mut samples = None;
    if isl.is_none() {
        let ds = text(sv, "dataset").to_ascii_lowercase();
        let name = text(row.get("model").unwrap_or(&Value::Null), "name")
            .to_ascii_lowercase()
            .replace([' ', '-'], "");
        let Some((guess, why)) = dataset_mean_input(&ds, &name) else {
            // Any other dataset: its mean prompt length is not known here, and guessing
            // one would decide the prediction.
            return Err(format!(
                "serving.isl: not given, and the mean input length of this row's dataset ({}) is not known",
                if ds.is_empty() {
                    "not named".to_string()
                } else {
                    ds.chars().take(60).collect::<String>() + "…"
                }
            ));
        };
        isl = Some(guess);
        samples = crate::datasets::mlperf(&ds);
        match (samples, osl) {
            (Some(set), None) => {
                osl = Some(set.mean_output());
                notes.push(format!(
                    "osl: {:.0} (the dataset's reference mean; not given in the row)",
                    set.mean_output()
                ));
            }
            (None, _) => notes.push(format!(
                "isl: {guess} (dataset mean, not given in the row: {why})"
            )),
            _ => {}
        }
        if let (Some(set), Some(o)) = (samples, osl) {
            notes.push(format!(
                "lengths: drawn from the {} per-sample (input, output) pairs of the {} set ({}): mean input {:.0}, outputs scaled by {:.3} to the row's mean {:.0}",
                set.pairs.len(),
                set.name,
                set.source,
                guess,
                o / set.mean_output(),
                o
            ));
        }
    }
    let isl = isl.unwrap_or(1024.0);
    let disagg = scenario.contains("disagg")
        || sv.get("pd_disaggregated").and_then(Value::as_bool) == Some(true)
        || sv.get("dp_eq_ep").and_then(Value::as_bool) == Some(true)
        || sv.get("prefill_nodes").is_some();
    let osl = match osl {
        Some(o) => o,
        None if disagg => {
            notes.push("osl: 1000 (not given; decode context = isl + osl/2)".into());
            1000.0
        }
        None => return Err("serving.osl: not given".into()),
    };

    // Measured quantity.
    let measured = num(ms, "output_tokens_per_s_per_gpu")
        .or_else(|| num(ms, "decode_output_tokens_per_s_per_gpu"))
        .or_else(|| {
            let per_node = uint(hw, "per_node")
                .or_else(|| uint(hw, "gpus_per_node"))
                .unwrap_or(8) as f64;
            num(ms, "decode_output_tokens_per_s_per_node")
                .or_else(|| num(ms, "decode_output_tokens_per_s_per_node_2k_input"))
                .or_else(|| num(ms, "decode_tokens_per_s_per_node"))
                .map(|x| x / per_node)
        });
    if let Some(m) = measured.filter(|m| !(*m > 0.0 && m.is_finite())) {
        // Nothing to compare against: an error of ±inf would poison the file's summary.
        return Err(format!(
            "measured output tokens/s per accelerator: {m} is not a positive rate"
        ));
    }
    res.measured = measured;

    if disagg {
        return predict_disagg(
            cat, &acc_id, &t, prec, fw, row, isl, osl, spec, kv_frac, res, notes,
        );
    }

    // Aggregated instance.
    let count = uint(hw, "count").unwrap_or(8);
    let tp_field = uint(sv, "tp").unwrap_or(1);
    let gpus = uint(sv, "gpus_per_instance")
        .or_else(|| uint(sv, "gpus"))
        .unwrap_or(tp_field);
    let dp = match sv.get("attention_dp") {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(1).max(1) as u32,
        Some(Value::Bool(true)) => gpus,
        _ => 1,
    };
    let ep = uint(sv, "ep").unwrap_or(1);
    if t.moe.is_some() && sv.get("ep").is_none_or(Value::is_null) {
        notes.push("ep: 1 (not given; experts tensor-parallel)".into());
    }
    // The instance's accelerators are tp × attention_dp × pp.
    let pp = uint(sv, "pp").unwrap_or(1).max(1);
    let par = Parallel::new((gpus / (dp * pp)).max(1), dp, ep).with_pp(pp);
    let instances = uint(sv, "instances").unwrap_or((count / par.gpus()).max(1));
    let b = build(
        cat,
        &acc_id,
        &t,
        par,
        prec,
        fw,
        fw.overlap_comm,
        spec,
        count as u64,
    )?;
    if par.ep > 1 && b.model.expert_load_cv > 0.0 {
        notes.push(format!(
            "experts: static placement ({} default: no expert load balancer), per-expert load CV {:.3} (published)",
            fw.id, b.model.expert_load_cv
        ));
    }
    let kv_tokens = b.model.kv_capacity_tokens(kv_frac);
    if kv_tokens < isl + osl {
        return Err(format!(
            "the weights leave {kv_tokens:.0} KV tokens per instance, less than one request"
        ));
    }
    let static_batch = scenario.contains("static") || scenario.contains("batch 1");
    // trtllm-bench runs without chunked prefill unless asked (`enable_chunked_prefill`
    // defaults to False in `bench/benchmark/utils/general.py`, `get_settings`).
    if bench && !static_batch {
        notes.push("chunked prefill: off (trtllm-bench default)".into());
    }
    let stated_batch = uint(sv, "max_batch_per_instance").or_else(|| uint(sv, "max_batch"));
    let conc = uint(sv, "concurrency");
    let (max_batch, max_tokens) = if static_batch {
        let bsz = stated_batch.unwrap_or(1);
        (bsz, (bsz as f64 * isl) as u32)
    } else {
        // Per attention-DP rank in TensorRT-LLM's PyTorch backend.
        let is_trt = fw.id == "tensorrt-llm";
        let kv_req = trtllm_bench_kv_requests(cat, &acc_id, &t, prec, quant_algo, gpus, isl, osl);
        let (hb, ht) = trtllm_bench_settings(kv_req, isl, osl);
        let mb = match stated_batch {
            Some(x) => x * dp,
            None if is_trt => {
                notes.push(format!(
                    "max_batch: {hb} per rank (trtllm-bench heuristic from KV capacity)"
                ));
                hb * dp
            }
            None => fw.max_batch,
        };
        let mt = match uint(sv, "max_num_tokens") {
            Some(x) => x * dp,
            None if is_trt => {
                // Without chunked prefill trtllm-bench raises the budget to hold the
                // longest prompt next to a full batch of decodes (`get_settings`).
                let t = if bench {
                    ht.max(isl.round() as u32 + hb)
                } else {
                    ht
                };
                notes.push(format!(
                    "max_num_tokens: {t} per rank (trtllm-bench heuristic)"
                ));
                t * dp
            }
            None => fw.max_num_tokens,
        };
        let mb = conc.map(|c| mb.min(c.div_ceil(instances))).unwrap_or(mb);
        (mb, mt)
    };
    // Decode-only iterations replay CUDA graphs padded to the next captured batch size:
    // the row's list, else (trtllm-bench, which always sets `enable_padding`) TensorRT-LLM's
    // generated list for the per-rank max batch.
    let graph_sizes: Vec<u32> = match sv.get("cuda_graph_batch_sizes").and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .filter_map(Value::as_u64)
            .map(|x| x as u32)
            .collect(),
        None if bench && !static_batch => trtllm_graph_batch_sizes((max_batch / dp).max(1)),
        None => Vec::new(),
    };
    if let (Some(&hi), false) = (graph_sizes.last(), static_batch) {
        notes.push(format!(
            "CUDA graphs: decode-only batches padded to the next captured size (up to {hi} per rank)"
        ));
    }
    let model = if static_batch {
        b.model
    } else {
        b.model.with_graph_padding(graph_sizes)
    };
    // TensorRT-LLM's pipeline executor schedules each of its `pp` micro-batches on its own,
    // every one within the batch and token limits.
    let (max_batch, max_tokens) = if pp > 1 {
        notes.push(format!(
            "pp {pp}: {pp} micro-batches in flight, each within max_batch {max_batch} and max_num_tokens {max_tokens}"
        ));
        (max_batch * pp, max_tokens * pp)
    } else {
        (max_batch, max_tokens)
    };
    // Chunked prefill as the row states it (`serving.chunked_prefill`), else the
    // framework's default. vLLM's V0 engine (forced with `VLLM_USE_V1=0` after V1 became
    // the default in 0.8) without chunked prefill runs prefill-only iterations first, and
    // with `num_scheduler_steps` runs decodes in rounds of that many steps.
    let chunked_prefill = match sv.get("chunked_prefill").and_then(Value::as_bool) {
        Some(c) => {
            notes.push(format!(
                "chunked prefill: {} (stated)",
                if c { "on" } else { "off" }
            ));
            c
        }
        None => !static_batch && fw.chunked_prefill && !bench,
    };
    let vllm_v0 = fw.id == "vllm"
        && (fw_text.contains("v0 engine")
            || fw_text.contains("vllm_use_v1 0")
            || fw_text.contains("vllm_use_v1=0"));
    let (adp_timeout, adp_batching_wait) = adp_balance_of(sv);
    let policy = SchedulePolicy {
        prefill_first: vllm_v0 && !chunked_prefill,
        decode_steps_per_round: if vllm_v0 {
            uint(sv, "num_scheduler_steps").unwrap_or(1)
        } else {
            1
        },
        adp_balance_timeout_iters: adp_timeout,
        adp_balance_batching_wait_iters: adp_batching_wait,
        dp_placement: fw.dp_placement,
    };
    if policy.adp_balance_timeout_iters > 0 {
        notes.push(format!(
            "scheduling: ADP balance (stated): new prompts held until every attention rank has one (the {}th iteration runs them), then {} iterations more to batch",
            policy.adp_balance_timeout_iters, policy.adp_balance_batching_wait_iters
        ));
    }
    if policy.prefill_first {
        notes.push(format!(
            "scheduling: vLLM V0 without chunked prefill: prefill-only iterations first, running sequences wait{}",
            if policy.decode_steps_per_round > 1 {
                format!(
                    "; decodes in rounds of {} steps (num_scheduler_steps)",
                    policy.decode_steps_per_round
                )
            } else {
                String::new()
            }
        ));
    }
    let role = RoleSpec {
        model,
        instances,
        max_batch,
        max_tokens,
        chunked_prefill: !static_batch && chunked_prefill,
        kv_tokens,
        policy,
    };
    notes.push(format!(
        "instance: {} × (tp {} attention_dp {} ep {}{}), max_batch {}, max_num_tokens {}, KV {:.0} tokens",
        instances,
        par.tp,
        par.attention_dp,
        par.ep,
        if pp > 1 {
            format!(" pp {pp}")
        } else {
            String::new()
        },
        max_batch,
        max_tokens,
        kv_tokens
    ));
    let roofline = role
        .model
        .decode_roofline(role.kv_tokens, role.max_batch as f64, isl, osl);
    notes.extend(out_of_reach(roofline, res.measured));
    let dep = Deployment::Aggregated(role);
    let (isl_u, osl_u) = (isl.round() as u32, osl.round().max(1.0) as u32);
    let server = scenario.contains("server") || scenario.contains("interactive");
    let slo = Slo {
        ttft_s: ttft_limit,
        tpot_s: tpot_limit,
    };
    // Latencies are compared at the load the run was measured under (the target rate of a
    // server row).
    let r = if server {
        let target = num(sv, "target_qps").unwrap_or(1.0);
        // MLPerf Server runs issue queries for at least `min_duration` (600 s by the rules;
        // the row's LoadGen setting where it has one): each rate is simulated over that
        // window of arrivals, so that long requests (DeepSeek-R1's ~3,700 output tokens
        // take minutes) reach a steady state instead of draining a short burst.
        let min_duration = sv
            .get("loadgen_requested")
            .and_then(|l| num(l, "requested_min_duration_ms"))
            .map(|ms| ms / 1e3)
            .unwrap_or(SERVER_MIN_DURATION_S);
        // LoadGen keeps issuing until both the minimum duration and the minimum query count
        // are reached (a submission's `min_query_count`: 219,400 queries, an hour at 60/s, for
        // NVIDIA's GB300 DeepSeek-R1 Server run).
        let min_queries = sv
            .get("loadgen_requested")
            .and_then(|l| num(l, "requested_min_query_count"))
            .unwrap_or(0.0);
        let n_at = |rate: f64| -> usize {
            ((rate * min_duration).max(min_queries).ceil() as usize)
                .clamp(SERVER_REQUESTS, SERVER_REQUESTS_MAX)
        };
        let unit = crate::sim::generate(&crate::sim::Workload {
            arrivals: crate::sim::Arrivals::Poisson(1.0),
            input: crate::sim::LengthDist::Fixed(isl_u),
            output: crate::sim::LengthDist::Fixed(osl_u),
            requests: SERVER_REQUESTS_MAX as u64,
            prefix_hit: 0.0,
            seed: 1,
        });
        let unit: Vec<(f64, u32, u32)> = match samples {
            Some(set) => set.requests(unit.iter().map(|r| r.0), 1, osl / set.mean_output()),
            None => unit,
        };
        let at = |rate: f64| -> Vec<(f64, u32, u32)> {
            unit[..n_at(rate)]
                .iter()
                .map(|&(t, i, o)| (t / rate, i, o))
                .collect()
        };
        let n = n_at(target);
        // A valid Server run completes what it was sent at the rate it was sent: its
        // output rate is the query rate times the output per query.
        let gpus = dep.accelerators() as f64;
        let steady = |rate: f64| rate * osl_u as f64 / gpus;
        let at_target = simulate_requests(&dep, &at(target), 0.0, &slo);
        if slo.ttft_s.is_some() || slo.tpot_s.is_some() {
            // What MLPerf Server scores: the highest rate whose p99 latencies meet the
            // limits. The same seeded arrivals, rescaled, at every rate.
            let meets = |x: &crate::sim::SimReport| {
                x.rejected == 0
                    && slo.ttft_s.is_none_or(|l| x.ttft.p99 <= l)
                    && slo.tpot_s.is_none_or(|l| x.tpot.p99 <= l)
            };
            match max_rate_meeting(target, |rate| {
                // The search starts at the target, already simulated.
                let x = if rate == target {
                    at_target.clone()
                } else {
                    simulate_requests(&dep, &at(rate), 0.0, &slo)
                };
                meets(&x).then_some(x)
            }) {
                Some((rate, _)) => {
                    notes.push(format!(
                        "server: the highest Poisson rate whose simulated p99 TTFT and TPOT meet the limits ({}{}): {rate:.3} requests/s (the run's target {target}), {} requests over {:.0} s of arrivals (LoadGen's minimum {min_duration:.0} s and {min_queries:.0} queries); at the target, p99 TTFT {:.0} ms and TPOT {:.1} ms",
                        ttft_limit.map(|x| format!("TTFT {:.0} ms", x * 1e3)).unwrap_or_default(),
                        tpot_limit.map(|x| format!(" TPOT {:.0} ms", x * 1e3)).unwrap_or_default(),
                        n_at(rate),
                        n_at(rate) as f64 / rate,
                        at_target.ttft.p99 * 1e3,
                        at_target.tpot.p99 * 1e3,
                    ));
                    res.predicted = Some(steady(rate));
                }
                None => {
                    notes.push(format!(
                        "server: no rate down to {:.4} requests/s meets the latency limits",
                        target / 1024.0
                    ));
                    res.predicted = Some(0.0);
                }
            }
        } else {
            notes.push(format!(
                "arrivals: Poisson at the target {target} requests/s over {min_duration:.0} s, {n} requests (no latency limits given)"
            ));
            res.predicted = Some(at_target.output_tokens_per_s_per_accelerator);
        }
        at_target
    } else {
        let n = if static_batch {
            max_batch as usize * instances as usize
        } else {
            let documented =
                || loadgen_offline_samples(sv).or_else(|| perf_overview_requests(row, isl, osl));
            match (uint(sv, "num_requests"), documented()) {
                (Some(x), _) => x as usize,
                (None, Some((x, why))) => {
                    notes.push(why);
                    x
                }
                (None, None) => {
                    if scenario.contains("mlperf") || scenario.contains("offline (max") {
                        24_576
                    } else {
                        (max_batch as usize * instances as usize * 3).max(1000)
                    }
                }
            }
        };
        let n = n.min(OFFLINE_REQUESTS_MAX);
        let reqs: Vec<(f64, u32, u32)> = match samples {
            Some(set) => set.requests(std::iter::repeat_n(0.0, n), 1, osl / set.mean_output()),
            None => vec![(0.0, isl_u, osl_u); n],
        };
        // A stated client concurrency is a closed loop: each completion sends the next
        // request, and a request's latency runs from when it was sent.
        let r = match conc {
            Some(c) if !static_batch => {
                notes.push(format!(
                    "clients: {c} in a closed loop (stated concurrency), each sending its next request when the last completes"
                ));
                simulate_closed(&dep, &reqs, c, 0.0, &slo)
            }
            _ => simulate_requests(&dep, &reqs, 0.0, &slo),
        };
        // Offline runs count output tokens over the whole run.
        res.predicted = Some(r.output_tokens_per_s_per_accelerator);
        r
    };
    notes.push(iteration_note(&r.iteration_mix, server));
    notes.extend(above_roofline(roofline, res.predicted));
    if let Deployment::Aggregated(role) = &dep {
        notes.extend(moe_stage_note(&role.model, &r.iteration_mix));
    }
    // Every latency the row measured, as its source defines it: LoadGen's and
    // trtllm-bench's TTFT, TPOT ((last − first token time) / (output − 1)) and request
    // latency per query, in milliseconds, and trtllm-bench's per-user rates.
    for (k, v) in [
        ("ttft_ms", r.ttft.mean),
        ("ttft_mean_ms", r.ttft.mean),
        ("ttft_p50_ms", r.ttft.p50),
        ("ttft_p90_ms", r.ttft.p90),
        ("ttft_p99_ms", r.ttft.p99),
        ("tpot_mean_ms", r.tpot.mean),
        ("tpot_p50_ms", r.tpot.p50),
        ("tpot_p90_ms", r.tpot.p90),
        ("tpot_p99_ms", r.tpot.p99),
        ("request_latency_mean_ms", r.latency.mean),
        ("request_latency_p50_ms", r.latency.p50),
        ("request_latency_p99_ms", r.latency.p99),
    ] {
        if let Some(m) = num(ms, k) {
            res.extra.push((k.into(), v * 1e3, m));
        }
    }
    for (k, v) in [
        (
            "per_user_output_tokens_per_s",
            r.per_user_output_tokens_per_s,
        ),
        (
            "per_user_output_tokens_per_s_with_ctx",
            r.per_user_output_tokens_per_s_with_ctx,
        ),
    ] {
        if let Some(m) = num(ms, k) {
            res.extra.push((k.into(), v, m));
        }
    }
    if res.measured.is_none() {
        notes.push("no output tokens/s measured: only latencies compared".into());
    }
    Ok(())
}

/// Most requests an offline row simulates: past this the run is long enough that its
/// ramp-up and tail no longer move the throughput.
pub const OFFLINE_REQUESTS_MAX: usize = 400_000;

/// The samples an MLPerf Offline run issues, from the LoadGen settings the row records
/// (`serving.loadgen_requested`): LoadGen coalesces the run into one query of
/// `max(min_query_count, 1.1 × min_duration × offline_expected_qps)` samples (`kSlack`
/// 1.1, `test_settings_internal.cc`), so that the run lasts at least the minimum duration.
/// The count decides how much of the run is ramp-up and tail, where the batch is not full.
fn loadgen_offline_samples(sv: &Value) -> Option<(usize, String)> {
    let l = sv.get("loadgen_requested")?;
    let qps = num(l, "requested_offline_expected_qps")?;
    let dur = num(l, "requested_min_duration_ms")? / 1e3;
    let minq = num(l, "requested_min_query_count").unwrap_or(0.0);
    let n = minq.max((1.1 * dur * qps).floor());
    if n.is_nan() || n < 1.0 {
        return None;
    }
    Some((
        n as usize,
        format!(
            "samples: {n:.0}, as LoadGen issues an Offline run: max(min_query_count {minq:.0}, 1.1 × {dur:.0} s × expected {qps} samples/s){}",
            if n as usize > OFFLINE_REQUESTS_MAX {
                format!("; {OFFLINE_REQUESTS_MAX} simulated")
            } else {
                String::new()
            }
        ),
    ))
}

/// The request counts TensorRT-LLM's performance overview generated its synthetic datasets
/// with, by input and output length (docs/source/developer-guide/perf-overview.md,
/// "Preparing a Dataset": "For shorter input and output lengths, a larger number of messages
/// were used to guarantee that the system hit a steady state").
pub const PERF_OVERVIEW_REQUESTS: [(f64, f64, usize); 5] = [
    (1024.0, 1024.0, 3000),
    (8192.0, 1024.0, 1500),
    (1024.0, 8192.0, 1500),
    (32768.0, 1024.0, 1000),
    (1024.0, 32768.0, 1000),
];

/// The request count of a TensorRT-LLM performance-overview row that leaves it unstated: the
/// doc's table entry whose input and output lengths are each within 5% of the row's (its
/// 1000/1000 column is the 1K/1K entry, 1024/1024, which the table lists).
fn perf_overview_requests(row: &Value, isl: f64, osl: f64) -> Option<(usize, String)> {
    let path = row.get("source")?.get("path")?.as_str()?;
    if !path.ends_with("perf-overview.md") {
        return None;
    }
    let near = |a: f64, b: f64| (a / b - 1.0).abs() <= 0.05;
    let &(i, o, n) = PERF_OVERVIEW_REQUESTS
        .iter()
        .find(|&&(i, o, _)| near(isl, i) && near(osl, o))?;
    Some((
        n,
        format!(
            "requests: {n} (not given; the performance overview's dataset table lists {n} for {i:.0}/{o:.0})"
        ),
    ))
}

/// A note when the measured output tokens/s per GPU exceed the deployment's decode memory
/// roofline (`InstanceModel::decode_roofline`): a setting the row runs with is not the one
/// that ran.
fn out_of_reach(bound: Option<f64>, measured: Option<f64>) -> Option<String> {
    let (bound, measured) = (bound?, measured?);
    (measured > bound).then(|| format!(
        "out of reach: the measured {measured:.0} output tokens/s per GPU exceed this deployment's decode memory roofline, {bound:.0} (every request's prompt and output cached from admission, the cache and touched weights read each step at peak bandwidth, no prefill, compute not counted): a setting it runs with is not the one that ran"
    ))
}

/// A note when the model's own prediction beats the roofline it is bounded by: an
/// inconsistency in the model (tests require none).
pub const ABOVE_ROOFLINE: &str =
    "model inconsistency: the prediction exceeds its deployment's decode memory roofline";

fn above_roofline(bound: Option<f64>, predicted: Option<f64>) -> Option<String> {
    let (bound, predicted) = (bound?, predicted?);
    (predicted > bound * 1.001).then(|| format!("{ABOVE_ROOFLINE} ({predicted:.0} > {bound:.0})"))
}

/// One MoE layer of the mean decode-only iteration on the busiest rank, by stage (where
/// a MoE row's decode step goes); `None` for dense models or runs without such steps.
fn moe_stage_note(
    m: &crate::model::InstanceModel,
    mix: &crate::sim::IterationMix,
) -> Option<String> {
    let d = &mix.decode_only;
    if m.model.moe.is_none() || d.iterations == 0 {
        return None;
    }
    let n = d.iterations as f64;
    let ranks = m.par.attention_dp as f64;
    let seqs = d.decode_seqs_per_rank / n * ranks;
    let b = crate::model::Batch {
        decode_seqs: seqs,
        decode_ctx: seqs * d.decode_context / n,
        ..Default::default()
    };
    let s = m.moe_stages(&b);
    let ms = |x: f64| x * 1e3;
    Some(format!(
        "one MoE layer of that decode step, ms: attention projections {:.3}, attention core and output {:.3}, shared experts {:.3}, routed experts {:.3}, dispatch {:.3}, combine {:.3}; LM head {:.3} a step",
        ms(s.pre),
        ms(s.core),
        ms(s.shared),
        ms(s.mlp),
        ms(s.dispatch),
        ms(s.combine),
        ms(s.lm_head)
    ))
}

/// The simulated iterations of a row in one line: how many were decode-only and how many
/// carried prompts, each class's mean time and operating point (where a miss comes from).
fn iteration_note(mix: &crate::sim::IterationMix, server: bool) -> String {
    let (d, p) = (&mix.decode_only, &mix.with_prompts);
    format!(
        "iterations{}: {} decode-only, mean {:.1} ms at {:.0} sequences per rank (context {:.0}; GEMMs {:.1}, attention {:.1}, other memory {:.1}, communication {:.1}, overhead {:.1}); {} with prompts, mean {:.1} ms ({:.0} prompt tokens per prompted rank, {:.0} sequences decoding per rank)",
        if server { " at the target rate" } else { "" },
        d.iterations,
        d.mean(d.time.total_s) * 1e3,
        d.mean(d.decode_seqs_per_rank),
        d.mean(d.decode_context),
        d.mean(d.time.gemm_s) * 1e3,
        d.mean(d.time.attention_s) * 1e3,
        d.mean(d.time.memory_s) * 1e3,
        d.mean(d.time.comm_s) * 1e3,
        d.mean(d.time.overhead_s) * 1e3,
        p.iterations,
        p.mean(p.time.total_s) * 1e3,
        p.mean(p.prompt_tokens_per_rank),
        p.mean(p.decode_seqs_per_rank),
    )
}

/// TensorRT-LLM's ADP balance as a row states it: `serving.attention_dp_config` with
/// `enable_balance` true, `timeout_iters` and `batching_wait_iters` (TensorRT-LLM's own
/// defaults when not given: 50 and 10, `AttentionDpConfig`); (0, 0) when not stated or not
/// enabled.
fn adp_balance_of(sv: &Value) -> (u32, u32) {
    match sv.get("attention_dp_config") {
        Some(c) if c.get("enable_balance").and_then(Value::as_bool) == Some(true) => (
            uint(c, "timeout_iters").unwrap_or(50),
            num(c, "batching_wait_iters")
                .filter(|x| *x >= 0.0)
                .map_or(crate::ADP_BALANCE_BATCHING_WAIT_ITERS, |x| x as u32),
        ),
        _ => (0, 0),
    }
}

/// Mean prompt length (tokens) of the MLPerf Inference dataset a row names (see
/// [`crate::datasets::mlperf`] for the matching rule), with the set's name: the mean of its
/// per-sample token counts (`crate::datasets`, from the official MLCommons files).
pub fn dataset_mean_input(ds: &str, name: &str) -> Option<(f64, &'static str)> {
    if ds.contains("gsm8k") || ds.contains("mixtral") || name.contains("mixtral") {
        // OpenOrca ~300, the few-shot GSM8K and MBXP prompts longer.
        return Some((600.0, "MLPerf Mixtral mix of OpenOrca, GSM8K and MBXP few-shot prompts: an estimate, not a published statistic"));
    }
    if ds.contains("openorca") || name.contains("llama270b") {
        return Some((295.0, "MLPerf OpenOrca subset for Llama 2 70B"));
    }
    crate::datasets::mlperf(ds).map(|s| (s.mean_input(), s.name))
}

/// Requests simulated per rate for a server row (MLPerf Server runs last at least ten
/// minutes: tens of thousands of queries at these rates).
pub const SERVER_REQUESTS: usize = 20_000;

/// Seconds of arrivals a server row is simulated over when it does not say (MLPerf
/// Inference's minimum Server run duration, 600 s).
pub const SERVER_MIN_DURATION_S: f64 = 600.0;

/// Most requests simulated per rate (a bound on the time one rate takes).
pub const SERVER_REQUESTS_MAX: usize = 400_000;

/// The highest rate for which `run` returns `Some`, found from `target` by doubling or
/// halving to a bracket (at most ten steps each way), then ten bisections on the log scale
/// (under 0.07% of the rate); `None` when no rate down to `target / 1024` passes.
/// `run` must pass below any rate it passes at (true of a queue fed by rescaled arrivals).
pub fn max_rate_meeting<T>(target: f64, mut run: impl FnMut(f64) -> Option<T>) -> Option<(f64, T)> {
    let (mut lo, mut hi);
    let mut best;
    match run(target) {
        Some(x) => {
            (lo, best) = (target, x);
            hi = target * 2.0;
            let mut steps = 0;
            loop {
                match run(hi) {
                    Some(x) if steps < 10 => {
                        (lo, best) = (hi, x);
                        hi *= 2.0;
                        steps += 1;
                    }
                    Some(x) => return Some((hi, x)),
                    None => break,
                }
            }
        }
        None => {
            hi = target;
            lo = target / 2.0;
            let mut steps = 0;
            loop {
                if let Some(x) = run(lo) {
                    best = x;
                    break;
                }
                steps += 1;
                if steps >= 10 {
                    return None;
                }
                hi = lo;
                lo /= 2.0;
            }
        }
    }
    for _ in 0..10 {
        let mid = (lo * hi).sqrt();
        match run(mid) {
            Some(x) => (lo, best) = (mid, x),
            None => hi = mid,
        }
    }
    Some((lo, best))
}

/// Draft depth named in a speculative-decoding description: the number after
/// `num_nextn_predict_layers`, else the digits right after `mtp`/`eagle`, else the first
/// number, else 1 ("MTP3 autoregressive, relaxed (top-10, delta 0.6; ~3.1)" is 3).
fn draft_depth(s: &str) -> u32 {
    let after = |key: &str| -> Option<u32> {
        let i = s.find(key)? + key.len();
        let d: String = s[i..]
            .trim_start_matches([' ', '=', ':', '_', '-'])
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        d.parse().ok().filter(|&n| n > 0)
    };
    after("num_nextn_predict_layers")
        .or_else(|| after("nextn"))
        .or_else(|| after("mtp"))
        .or_else(|| after("eagle"))
        .or_else(|| {
            s.split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse().ok())
                .find(|&n| n > 0)
        })
        .unwrap_or(1)
}

/// Expert placement of a disaggregated deployment: EPLB (redundant experts placed from
/// load statistics) where the row says so (`EPLB` or a load balancer in its serving
/// text), or for SGLang-family large-EP runs: the LMSYS large-EP post states EPLB for its
/// 96-H100 deployment and its GB200 posts mirror that setup; RTP-LLM reproduces DeepSeek's
/// inference system, which places redundant experts (DeepSeek-V3 report). Otherwise the
/// frameworks' default, static placement (TensorRT-LLM `load_balancer` None, vLLM
/// `enable_eplb` False).
fn disagg_placement(
    row: &Value,
    fw: &Framework,
    t: &Transformer,
    ep: u32,
    notes: &mut Vec<String>,
) -> Placement {
    if t.moe.is_none() || ep <= 1 {
        return Placement::Static;
    }
    let sv = row.get("serving").unwrap_or(&Value::Null);
    let said = ["dispatch", "other", "load_balancer"].iter().any(|k| {
        let x = text(sv, k).to_ascii_lowercase();
        x.contains("eplb") || x.contains("load balancer")
    });
    if said {
        notes.push("experts: EPLB placement (stated)".into());
        Placement::Eplb
    } else if fw.id == "sglang" {
        notes.push(
            "experts: EPLB placement (not stated; SGLang/RTP-LLM large-EP deployments run EPLB as DeepSeek's does)"
                .into(),
        );
        Placement::Eplb
    } else {
        notes.push(format!(
            "experts: static placement ({} default: no expert load balancer)",
            fw.id
        ));
        Placement::Static
    }
}

#[allow(clippy::too_many_arguments)]
fn predict_disagg(
    cat: &Catalog,
    acc_id: &str,
    t: &Transformer,
    prec: Precisions,
    fw: &Framework,
    row: &Value,
    isl: f64,
    osl: f64,
    spec: Option<Speculative>,
    kv_frac: f64,
    res: &mut CaseResult,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let null = Value::Null;
    let hw = row.get("hardware").unwrap_or(&null);
    let sv = row.get("serving").unwrap_or(&null);
    let ms = row.get("measured").unwrap_or(&null);
    let per_node = uint(hw, "per_node")
        .or_else(|| uint(hw, "gpus_per_node"))
        .unwrap_or(8);
    // Roles: a `prefill`/`decode` block, or node counts, or "EPn" figures in the source
    // text (prefill first, then decode).
    let eps: Vec<u32> = {
        let src = text(row, "source").to_ascii_uppercase();
        src.match_indices("EP")
            .filter_map(|(i, _)| {
                let d: String = src[i + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                d.parse().ok()
            })
            .collect()
    };
    let synth = |block: &str, nodes: &str, k: usize| -> Value {
        if let Some(v) = sv.get(block).filter(|v| v.is_object()) {
            return v.clone();
        }
        if let Some(n) = uint(sv, nodes) {
            return serde_json::json!({ "gpus": n * per_node });
        }
        match eps.get(k) {
            Some(e) => serde_json::json!({ "gpus": e, "parallel": format!("EP{e}") }),
            None => Value::Null,
        }
    };
    let p_owned = synth("prefill", "prefill_nodes", 0);
    let d_owned = synth("decode", "decode_nodes", 1);
    let p = &p_owned;
    let d = &d_owned;
    let role_par = |v: &Value, default_gpus: u32, name: &str, notes: &mut Vec<String>| {
        let gpus = uint(v, "gpus_per_instance")
            .or_else(|| uint(v, "gpus"))
            .unwrap_or(default_gpus);
        let txt = text(v, "parallel");
        // Pipeline stages as the role states them (`pp`, or "PP<n>" in its layout text):
        // the rest of the layout is one stage's.
        let stages = uint(v, "pp")
            .or_else(|| number_after(&txt, "PP"))
            .unwrap_or(1)
            .clamp(1, gpus.max(1));
        let stage = (gpus / stages).max(1);
        if stages > 1 {
            notes.push(format!(
                "{name}: {stages} pipeline stages of {stage} accelerators (stated)"
            ));
        }
        let (tp, ep, dp) = if txt.is_empty() {
            notes.push(format!(
                "{name}: DP-attention + EP over {stage} accelerators (not stated; large-EP layout)"
            ));
            (1, stage, stage)
        } else {
            parse_parallel(&txt, stage)
        };
        let ep = if t.moe.is_some() { ep } else { 1 };
        Parallel::new(tp, dp.max(1), ep.max(1)).with_pp(stages)
    };
    let pp = role_par(p, 8, "prefill", notes);
    let dpar = role_par(d, 8, "decode", notes);
    let overlap = true;
    let placement = disagg_placement(row, fw, t, dpar.ep.max(pp.ep), notes);
    let dm = build(
        cat,
        acc_id,
        t,
        dpar,
        prec,
        fw,
        overlap,
        spec,
        dpar.gpus() as u64,
    )?;
    let dm = Built {
        model: dm.model.with_placement(placement),
        ..dm
    };
    let kv = dm.model.kv_capacity_tokens(kv_frac);
    let max_batch = uint(d, "max_running_requests")
        .map(|x| x as f64 * dm.model.par.attention_dp as f64)
        .unwrap_or(fw.max_batch as f64 * dm.model.par.attention_dp as f64);
    let itl = num(sv, "itl_slo_ms").map(|x| x * 1e-3);
    if let Some(l) = itl {
        notes.push(format!(
            "decode batch: the largest whose step meets the ITL limit of {:.0} ms",
            l * 1e3
        ));
    }
    let (dec, b) = decode_saturated(&dm.model, max_batch, kv, isl, osl, itl);
    notes.push(format!(
        "decode: tp {} attention_dp {} ep {}, batch {:.0} ({:.0} per accelerator), context {:.0}",
        dpar.tp,
        dpar.attention_dp,
        dpar.ep,
        b,
        b / dm.gpus as f64,
        isl + osl / 2.0
    ));
    res.predicted = Some(dec);
    let roofline = dm.model.decode_roofline(kv, max_batch, isl, osl);
    notes.extend(out_of_reach(roofline, res.measured));
    notes.extend(above_roofline(roofline, res.predicted));
    let pm = build(
        cat,
        acc_id,
        t,
        pp,
        prec,
        fw,
        overlap,
        None,
        pp.gpus() as u64,
    )?;
    let pm = Built {
        model: pm.model.with_placement(placement),
        ..pm
    };
    let chunk = uint(p, "chunked_prefill_size").unwrap_or(fw.max_num_tokens) as f64
        * pm.model.par.attention_dp as f64;
    let pre = prefill_saturated(&pm.model, chunk, isl);
    notes.push(format!(
        "prefill: tp {} attention_dp {} ep {}, {:.0} tokens per iteration",
        pp.tp, pp.attention_dp, pp.ep, chunk
    ));
    if let Some(m) = num(ms, "prefill_input_tokens_per_s_per_gpu") {
        res.extra
            .push(("prefill_input_tokens_per_s_per_gpu".into(), pre, m));
    }
    let pn = per_node as f64;
    for k in [
        "prefill_input_tokens_per_s_per_node",
        "prefill_input_tokens_per_s_per_node_2k_input",
        "prefill_tokens_per_s_per_node",
    ] {
        if let Some(m) = num(ms, k) {
            res.extra.push((k.into(), pre * pn, m));
        }
    }
    for k in [
        "decode_output_tokens_per_s_per_node",
        "decode_output_tokens_per_s_per_node_2k_input",
        "decode_tokens_per_s_per_node",
    ] {
        if let Some(m) = num(ms, k) {
            res.extra.push((k.into(), dec * pn, m));
        }
    }
    Ok(())
}

/// Rows as read, except that a row whose hardware notes say it has "the same deployment
/// shape as" another row of its source (same `source.url`), and that states no prefill or
/// decode group of its own, takes that row's groups (`serving.deployment_from` names it).
fn with_referenced_deployment(rows: &[Value]) -> Vec<std::borrow::Cow<'_, Value>> {
    use std::borrow::Cow;
    let url = |r: &Value| r.get("source").map(|s| text(s, "url")).unwrap_or_default();
    let groups = |r: &Value| {
        r.get("serving")
            .map(|s| ["prefill", "decode"].map(|k| s.get(k).filter(|v| !v.is_null()).cloned()))
            .unwrap_or_default()
    };
    rows.iter()
        .map(|r| {
            let notes = r
                .get("hardware")
                .map(|h| text(h, "notes").to_ascii_lowercase())
                .unwrap_or_default();
            if !notes.contains("same deployment shape as") || groups(r) != [None, None] {
                return Cow::Borrowed(r);
            }
            let u = url(r);
            let sibling = rows.iter().find(|o| {
                !u.is_empty()
                    && url(o) == u
                    && text(o, "id") != text(r, "id")
                    && groups(o) != [None, None]
            });
            let Some(o) = sibling else {
                return Cow::Borrowed(r);
            };
            let mut row = r.clone();
            if let Some(sv) = row.get_mut("serving").and_then(Value::as_object_mut) {
                for (k, g) in ["prefill", "decode"].iter().zip(groups(o)) {
                    if let Some(g) = g {
                        sv.insert(k.to_string(), g);
                    }
                }
                sv.insert("deployment_from".into(), Value::String(text(o, "id")));
            }
            Cow::Owned(row)
        })
        .collect()
}

/// Predicts every row of a `myriad-measurements/1` document (rows under `rows` or `cases`).
pub fn validate(cat: &Catalog, doc: &Value) -> Result<Report, String> {
    let fmt = text(doc, "format");
    let mut warnings = Vec::new();
    if fmt != "myriad-measurements/1" {
        warnings.push(format!(
            "format `{fmt}` is not myriad-measurements/1; reading rows anyway"
        ));
    }
    let rows = doc
        .get("rows")
        .or_else(|| doc.get("cases"))
        .and_then(Value::as_array)
        .ok_or("no `rows` or `cases` array")?;
    let rows = with_referenced_deployment(rows);
    let cases: Vec<CaseResult> = {
        use rayon::prelude::*;
        let out: Vec<(CaseResult, Vec<String>)> = rows
            .par_iter()
            .map(|r| {
                let mut w = Vec::new();
                let c = predict_row(cat, r, &mut w);
                (c, w)
            })
            .collect();
        // Keys a file repeats on many rows are reported once, with the rows.
        let mut unused: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        let cases = out
            .into_iter()
            .map(|(c, w)| {
                for w in w {
                    match w.strip_prefix(&format!("{}: ", c.id)) {
                        Some(rest) if rest.ends_with(UNUSED) => unused
                            .entry(rest.to_string())
                            .or_default()
                            .push(c.id.clone()),
                        _ => warnings.push(w),
                    }
                }
                c
            })
            .collect();
        for (what, ids) in unused {
            warnings.push(match ids.as_slice() {
                [one] => format!("{one}: {what}"),
                _ => format!("{what} in {} rows ({}, ...)", ids.len(), ids[0]),
            });
        }
        cases
    };
    let all: Vec<&CaseResult> = cases.iter().collect();
    let summary = summarize("all", &all);
    let mut names: Vec<&str> = cases.iter().map(|c| c.group.as_str()).collect();
    names.sort();
    names.dedup();
    let groups = names
        .iter()
        .map(|g| {
            let v: Vec<&CaseResult> = cases.iter().filter(|c| c.group == *g).collect();
            summarize(g, &v)
        })
        .collect();
    let metrics = summarize_extras(&cases);
    Ok(Report {
        cases,
        summary,
        groups,
        metrics,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn layout_text_gives_tensor_expert_and_pipeline_sizes() {
        assert_eq!(super::number_after("tp4pp2", "PP"), Some(2));
        assert_eq!(super::number_after("TP4", "PP"), None);
        assert_eq!(super::parse_parallel("TP4PP2", 4), (4, 1, 1));
        assert_eq!(super::parse_parallel("DEP", 8), (1, 8, 8));
        assert_eq!(super::parse_parallel("EP32", 64), (1, 32, 32));
    }

    #[test]
    fn a_key_unused_on_many_rows_is_one_warning_naming_the_rows() {
        let row = |id: &str| serde_json::json!({"id": id, "hardware": {"accelerator": "h100"}, "serving": {"label": "x"}});
        let doc = serde_json::json!({
            "format": "myriad-measurements/1",
            "cases": [row("a"), row("b"), row("c")],
        });
        let rep = super::validate(myriad_catalog::catalog(), &doc).unwrap();
        let unused: Vec<&String> = rep
            .warnings
            .iter()
            .filter(|w| w.contains("label"))
            .collect();
        assert_eq!(
            unused,
            ["serving.label: not used (ignored) in 3 rows (a, ...)"]
        );
        // One row: named as before.
        let doc = serde_json::json!({"format": "myriad-measurements/1", "cases": [row("a")]});
        let rep = super::validate(myriad_catalog::catalog(), &doc).unwrap();
        assert!(rep
            .warnings
            .contains(&"a: serving.label: not used (ignored)".to_string()));
    }

    use super::{draft_depth, max_rate_meeting};

    #[test]
    fn loadgen_offline_sample_count() {
        // max(min_query_count, 1.1 x min duration x expected qps), as LoadGen sizes the
        // single Offline query.
        let sv = |q: f64, ms: f64, minq: Option<f64>| {
            let mut l = serde_json::json!({
                "requested_offline_expected_qps": q,
                "requested_min_duration_ms": ms,
            });
            if let Some(m) = minq {
                l["requested_min_query_count"] = m.into();
            }
            serde_json::json!({ "loadgen_requested": l })
        };
        // 1.1 x 2000 s x 180/s = 396,000 > 307,160.
        assert_eq!(
            super::loadgen_offline_samples(&sv(180.0, 2_000_000.0, Some(307_160.0))).map(|x| x.0),
            Some(396_000)
        );
        // 1.1 x 600 s x 10/s = 6,600 < 26,328.
        assert_eq!(
            super::loadgen_offline_samples(&sv(10.0, 600_000.0, Some(26_328.0))).map(|x| x.0),
            Some(26_328)
        );
        assert_eq!(
            super::loadgen_offline_samples(&sv(2.0, 600_000.0, None)).map(|x| x.0),
            Some(1_320)
        );
        assert!(super::loadgen_offline_samples(&serde_json::json!({})).is_none());
    }

    #[test]
    fn max_rate_is_found_above_and_below_the_target() {
        // A threshold at 37.5: found from a target below it (doubling) and above it
        // (halving), to within the bisection's resolution, never above the threshold.
        for target in [5.0, 37.5, 300.0] {
            let (r, v) = max_rate_meeting(target, |x| (x <= 37.5).then_some(x)).unwrap();
            assert!(r <= 37.5 && r > 37.5 * 0.999, "target {target}: {r}");
            assert_eq!(r, v, "the value returned is the run at that rate");
        }
        // Nothing passes: None, after at most 1 + 10 + 0 runs.
        let mut runs = 0;
        assert!(max_rate_meeting(10.0, |_| {
            runs += 1;
            None::<()>
        })
        .is_none());
        assert!(runs <= 11, "{runs} runs");
        // Everything passes: stops after ten doublings.
        let (r, _) = max_rate_meeting(1.0, Some).unwrap();
        assert_eq!(r, 2048.0);
    }

    #[test]
    fn draft_depth_reads_the_named_depth() {
        assert_eq!(draft_depth("mtp, num_nextn_predict_layers 3"), 3);
        // Not the last number of the text (the old parser read 1 from "~3.1").
        assert_eq!(
            draft_depth(
                "mtp3 autoregressive, relaxed acceptance (top-10, delta 0.6; acceptance ~3.1)"
            ),
            3
        );
        assert_eq!(draft_depth("eagle-2 draft"), 2);
        assert_eq!(draft_depth("mtp"), 1);
    }
}
