//! The `serving` block of a scenario (`myriad serve`): precisions, deployment (aggregated
//! or prefill/decode disaggregated, parallelism and batch limits per role), request mix,
//! arrivals and SLOs. The model is the scenario's `model` block; the accelerator, scale-up
//! domain and scale-out fabric come from `cluster`.
//!
//! Every key is optional except `input` and `output`; defaults are stated per field and
//! in docs/serving.md. `check` gives `(field path below serving, message)` errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Precision;

/// The `serving` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServingSpec {
    /// Serving framework whose defaults fill unstated settings: `tensorrt-llm` (default),
    /// `vllm` or `sglang` (see docs/serving.md for each one's defaults).
    #[serde(default)]
    pub framework: Option<String>,
    /// Precision of attention, dense-MLP and shared-expert weights and their GEMMs
    /// (`bf16`, `fp8`, `fp4`); default `bf16`.
    #[serde(default)]
    pub weights: Option<Precision>,
    /// Precision of the attention projections (query, key/value, MLA's absorbed
    /// up-projections), where the checkpoint keeps them apart from the MLPs (NVIDIA's
    /// NVFP4 DeepSeek-R1 checkpoints: bf16); default: `weights`.
    #[serde(default)]
    pub attention: Option<Precision>,
    /// Precision of the attention output projection; default: `attention`.
    #[serde(default)]
    pub attention_out: Option<Precision>,
    /// Precision of the routed-expert weights; default: `weights`.
    #[serde(default)]
    pub experts: Option<Precision>,
    /// Precision of the KV cache; default `bf16`.
    #[serde(default)]
    pub kv_cache: Option<Precision>,
    /// `aggregated` (default: every instance prefills and decodes) or `disaggregated`
    /// (separate `prefill` and `decode` instances; the KV cache moves between them).
    #[serde(default)]
    pub mode: Option<ServingMode>,
    /// The instances of an aggregated deployment.
    #[serde(default)]
    pub instance: Option<RoleSpec>,
    /// Prefill instances of a disaggregated deployment.
    #[serde(default)]
    pub prefill: Option<RoleSpec>,
    /// Decode instances of a disaggregated deployment.
    #[serde(default)]
    pub decode: Option<RoleSpec>,
    /// Split long prompts into chunks that share iterations with decode (Sarathi-Serve);
    /// default: the framework's (on for all three).
    #[serde(default)]
    pub chunked_prefill: Option<bool>,
    /// Run prompts in iterations of their own, first, with every running sequence waiting
    /// (vLLM's V0 engine without chunked prefill); default false: prompts share iterations
    /// with the decodes. Needs `chunked_prefill: false`; aggregated instances only.
    #[serde(default)]
    pub prefill_first: Option<bool>,
    /// Decode steps per scheduling round (vLLM V0 multi-step scheduling,
    /// `num_scheduler_steps`): waiting prompts are scheduled only when a round ends;
    /// default 1; aggregated instances only.
    #[serde(default)]
    pub decode_steps_per_round: Option<u32>,
    /// TensorRT-LLM's ADP balance (`attention_dp_config: enable_balance: true`,
    /// `timeout_iters`): with attention data parallelism, new prompts wait until there is
    /// one for every attention rank, or at most this many iterations, so that the ranks
    /// prefill together. Default 0 (off, TensorRT-LLM's default); TensorRT-LLM's own
    /// `timeout_iters` default when enabled is 50. Aggregated instances only.
    #[serde(default)]
    pub adp_balance_timeout_iters: Option<u32>,
    /// With the ADP balance on: once every attention rank has a new prompt, the prompts
    /// wait this many iterations more to batch (`attention_dp_config: batching_wait_iters`);
    /// default 10, TensorRT-LLM's. Aggregated instances only.
    #[serde(default)]
    pub adp_balance_batching_wait_iters: Option<u32>,
    /// Share of the memory left after weights and runtime buffers given to the KV cache;
    /// default: the framework's (0.90 TensorRT-LLM and vLLM, 0.85 SGLang).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 1))]
    pub kv_cache_fraction: Option<f64>,
    /// Fraction of prompt tokens found in the prefix cache (not recomputed); default 0.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    #[schemars(extend("exclusiveMaximum" = 1))]
    pub prefix_cache_hit: Option<f64>,
    /// Host time per iteration not hidden by the GPU, microseconds; default: the
    /// framework's.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub iteration_overhead_us: Option<f64>,
    /// Overlap MoE all-to-all with compute (two micro-batches); default: the framework's.
    #[serde(default)]
    pub overlap_comm: Option<bool>,
    /// Speculative decoding (draft model or multi-token prediction); default: none.
    #[serde(default)]
    pub speculative: Option<SpeculativeSpec>,
    /// Poisson arrival rate, requests per second. Absent (and no `trace`): offline, every
    /// request queued at time 0 (maximum throughput).
    #[serde(default)]
    #[schemars(range(min = 1e-06))]
    pub arrival_rate: Option<f64>,
    /// Clients in a closed loop instead of Poisson arrivals: each keeps one request in
    /// flight and sends the next the moment its last one completes, as benchmark clients
    /// with a fixed concurrency do (`vllm bench serve --max-concurrency`, `trtllm-bench
    /// --concurrency`). Latencies run from when a request is sent.
    #[serde(default)]
    pub concurrency: Option<u64>,
    /// CSV or JSON-lines file of `arrival_s,input_tokens,output_tokens` (read by the CLI,
    /// relative to the scenario file); replaces `arrival_rate`, `input`, `output`, `requests`.
    #[serde(default)]
    pub trace: Option<String>,
    /// Requests to simulate; default 10,000, at most 10,000,000 (`--requests` overrides).
    #[serde(default)]
    pub requests: Option<u64>,
    /// Most tokens (prompt + output) one request may hold: the serving engine's context
    /// limit (vLLM `max_model_len`, TensorRT-LLM `max_seq_len`, SGLang `context_length`),
    /// which turns longer requests away. Default: the model preset's maximum context where
    /// the catalog knows it (e.g. 8,192 for `llama3-70b`, 131,072 for `llama3-405b`, Llama
    /// 3.1); none for a custom model.
    #[serde(default)]
    pub max_context: Option<u32>,
    /// Requests drawn from a published dataset's per-sample (input, output) token counts
    /// instead of `input`/`output`: `mlperf-deepseek-r1`, `mlperf-llama3.1-405b`,
    /// `mlperf-llama3.1-8b`, `mlperf-llama2-70b` or `mlperf-mixtral-8x7b` (MLPerf
    /// Inference's sets, shipped with Myriad). Arrivals still follow `arrival_rate`.
    #[serde(default)]
    pub dataset: Option<String>,
    /// Prompt length distribution, tokens (required unless `dataset` or `trace`).
    #[serde(default)]
    pub input: LengthSpec,
    /// Output length distribution, tokens (required unless `dataset` or `trace`).
    #[serde(default)]
    pub output: LengthSpec,
    /// Latency targets for goodput and for `--search`.
    #[serde(default)]
    pub slo: Option<SloSpec>,
    /// Requests per second the deployment must sustain: the report says how many
    /// accelerators that takes.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub target_rate: Option<f64>,
    /// Random seed of arrivals and lengths; default 1 (`--seed` overrides).
    #[serde(default)]
    pub seed: Option<u64>,
}

/// Aggregated or disaggregated serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServingMode {
    Aggregated,
    Disaggregated,
}

/// One role's instances: how many, how each is cut, and its batch limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// Instances of this role; default: as many as fill `cluster.count` (aggregated) or 1.
    #[serde(default)]
    pub instances: Option<u32>,
    /// Attention tensor parallelism; default 1.
    #[serde(default)]
    pub tp: Option<u32>,
    /// Attention data parallelism (each rank its own sequences and KV); accelerators per
    /// instance = tp × attention_dp; default 1.
    #[serde(default)]
    pub attention_dp: Option<u32>,
    /// Expert parallelism of the routed experts (divides tp × attention_dp); default 1.
    #[serde(default)]
    pub ep: Option<u32>,
    /// Pipeline stages: the layers are cut over `pp` groups of tp × attention_dp
    /// accelerators, with `pp` micro-batches in flight; accelerators per instance = tp ×
    /// attention_dp × pp; default 1.
    #[serde(default)]
    pub pp: Option<u32>,
    /// Most sequences running at once per instance (all micro-batches together); default:
    /// the framework's.
    #[serde(default)]
    pub max_batch: Option<u32>,
    /// Token budget per iteration (decode tokens + prompt chunk; with `pp`, of each
    /// micro-batch); default: the framework's.
    #[serde(default)]
    pub max_num_tokens: Option<u32>,
}

/// Speculative decoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeculativeSpec {
    /// Draft tokens verified per step.
    pub draft_tokens: u32,
    /// Probability that each draft token is accepted given the previous one was; default
    /// 0.85 (the DeepSeek-V3 report gives 85–90% acceptance for its second-token prediction).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub acceptance: Option<f64>,
}

/// Values of `serving.dataset`.
pub const DATASETS: [&str; 5] = [
    "mlperf-deepseek-r1",
    "mlperf-llama3.1-405b",
    "mlperf-llama3.1-8b",
    "mlperf-llama2-70b",
    "mlperf-mixtral-8x7b",
];

/// A length distribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthSpec {
    /// `fixed` (default), `uniform` (between min and max), `normal` or `lognormal` (mean and
    /// std, clipped to [min, max]).
    #[serde(default)]
    pub dist: Option<LengthDistKind>,
    /// Mean (the value for `fixed`), tokens.
    #[serde(default)]
    pub mean: Option<f64>,
    /// Standard deviation, tokens (normal, lognormal).
    #[serde(default)]
    pub std: Option<f64>,
    /// Smallest length; default 1.
    #[serde(default)]
    pub min: Option<u32>,
    /// Largest length; default 4 × mean (normal, lognormal); required for uniform.
    #[serde(default)]
    pub max: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LengthDistKind {
    Fixed,
    Uniform,
    Normal,
    Lognormal,
}

/// Latency targets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SloSpec {
    /// Time to first token limit, milliseconds.
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// Time per output token limit (after the first), milliseconds.
    #[serde(default)]
    pub tpot_ms: Option<f64>,
}

/// Most draft tokens a speculative step may propose.
pub const MAX_DRAFT_TOKENS: u32 = 256;

/// Slowest Poisson arrival rate, requests per second.
pub const MIN_ARRIVAL_RATE: f64 = 1e-6;

fn positive(path: &str, v: Option<f64>) -> Result<(), (String, String)> {
    match v {
        Some(x) if !(x > 0.0 && x.is_finite()) => {
            Err((path.into(), format!("{x} must be a positive number")))
        }
        _ => Ok(()),
    }
}

impl RoleSpec {
    fn check(&self, p: &str) -> Result<(), (String, String)> {
        for (k, v) in [
            ("instances", self.instances),
            ("tp", self.tp),
            ("attention_dp", self.attention_dp),
            ("ep", self.ep),
            ("pp", self.pp),
            ("max_batch", self.max_batch),
            ("max_num_tokens", self.max_num_tokens),
        ] {
            if v == Some(0) {
                return Err((format!("{p}.{k}"), "must be at least 1, got 0".into()));
            }
        }
        // Counted in u64: the product of three u32 sizes can pass u32 (and wrapped to 0).
        let gpus = self.tp.unwrap_or(1) as u64 * self.attention_dp.unwrap_or(1) as u64;
        let instance = gpus * self.pp.unwrap_or(1) as u64;
        if instance > u32::MAX as u64 {
            return Err((
                p.to_string(),
                format!(
                    "tp × attention_dp × pp = {instance} accelerators in one instance, more than the {} supported",
                    u32::MAX
                ),
            ));
        }
        let gpus = gpus as u32;
        if let Some(ep) = self.ep {
            if !gpus.is_multiple_of(ep) {
                return Err((
                    format!("{p}.ep"),
                    format!(
                        "{ep} does not divide the {gpus} accelerators of a pipeline stage (tp × attention_dp)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Longest request length (tokens) a scenario may state: far beyond any model's context,
/// and small enough that a prompt plus its output never overflows a 32-bit token count.
pub const MAX_REQUEST_TOKENS: u32 = 1_000_000_000;

impl LengthSpec {
    fn check(&self, p: &str) -> Result<(), (String, String)> {
        let limit = MAX_REQUEST_TOKENS as f64;
        for (k, v) in [
            ("mean", self.mean),
            ("max", self.max.map(f64::from)),
            ("min", self.min.map(f64::from)),
        ] {
            if let Some(v) = v.filter(|v| *v > limit) {
                return Err((
                    format!("{p}.{k}"),
                    format!("{v} tokens is more than the {MAX_REQUEST_TOKENS} supported"),
                ));
            }
        }
        let kind = self.dist.unwrap_or(LengthDistKind::Fixed);
        match (kind, self.mean) {
            (LengthDistKind::Uniform, _) => {
                let (Some(lo), Some(hi)) = (self.min, self.max) else {
                    return Err((format!("{p}.max"), "uniform needs min and max".into()));
                };
                if lo > hi || hi == 0 {
                    return Err((
                        format!("{p}.max"),
                        format!("{hi} must be at least min {lo} and positive"),
                    ));
                }
            }
            (_, None) => return Err((format!("{p}.mean"), "missing required key".into())),
            (_, Some(m)) if !(m >= 1.0 && m.is_finite()) => {
                return Err((format!("{p}.mean"), format!("{m} must be at least 1 token")))
            }
            _ => {}
        }
        if matches!(kind, LengthDistKind::Normal | LengthDistKind::Lognormal) {
            match self.std {
                None => {
                    return Err((
                        format!("{p}.std"),
                        "missing: normal and lognormal need std".into(),
                    ))
                }
                Some(s) if !(s >= 0.0 && s.is_finite()) => {
                    return Err((format!("{p}.std"), format!("{s} must be a number >= 0")))
                }
                _ => {}
            }
        }
        if let (Some(lo), Some(hi)) = (self.min, self.max) {
            if lo > hi {
                return Err((format!("{p}.min"), format!("{lo} is larger than max {hi}")));
            }
        }
        // Without `max`, normal and lognormal clip at the default max of 4 × mean.
        if let (LengthDistKind::Normal | LengthDistKind::Lognormal, Some(lo), None, Some(m)) =
            (kind, self.min, self.max, self.mean)
        {
            let hi = (4.0 * m).ceil();
            if lo as f64 > hi {
                return Err((
                    format!("{p}.min"),
                    format!("{lo} is larger than the default max {hi} (4 × mean {m}); give max"),
                ));
            }
        }
        Ok(())
    }
}

impl ServingSpec {
    /// Range checks; errors are `(field path below serving, message)`.
    pub fn check(&self) -> Result<(), (String, String)> {
        let mode = self.mode.unwrap_or(ServingMode::Aggregated);
        if let Some(r) = &self.instance {
            r.check("instance")?;
        }
        if let Some(r) = &self.prefill {
            r.check("prefill")?;
        }
        if let Some(r) = &self.decode {
            r.check("decode")?;
        }
        if mode == ServingMode::Disaggregated && (self.prefill.is_none() || self.decode.is_none()) {
            let k = if self.prefill.is_none() {
                "prefill"
            } else {
                "decode"
            };
            return Err((
                k.into(),
                "missing: a disaggregated deployment needs `prefill` and `decode`".into(),
            ));
        }
        if mode == ServingMode::Aggregated && (self.prefill.is_some() || self.decode.is_some()) {
            return Err((
                "mode".into(),
                "`prefill`/`decode` are given but mode is aggregated; set mode: disaggregated or use `instance`".into(),
            ));
        }
        if self.max_context.is_some_and(|c| c < 2) {
            return Err((
                "max_context".into(),
                "must be at least 2 tokens (a prompt token and an output token)".into(),
            ));
        }
        if let Some(f) = &self.framework {
            let n = f.to_ascii_lowercase();
            if !["tensorrt-llm", "trtllm", "trt-llm", "vllm", "sglang"].contains(&n.as_str()) {
                return Err((
                    "framework".into(),
                    format!("`{f}` is not one of tensorrt-llm, vllm, sglang"),
                ));
            }
        }
        if self.prefill_first == Some(true) && self.chunked_prefill != Some(false) {
            return Err((
                "prefill_first".into(),
                "true needs chunked_prefill: false (chunked prefill puts prompt chunks into the decode iterations; every framework's default is on)".into(),
            ));
        }
        if mode == ServingMode::Disaggregated {
            for (k, set) in [
                ("prefill_first", self.prefill_first.is_some()),
                (
                    "decode_steps_per_round",
                    self.decode_steps_per_round.is_some(),
                ),
                (
                    "adp_balance_timeout_iters",
                    self.adp_balance_timeout_iters.is_some(),
                ),
                (
                    "adp_balance_batching_wait_iters",
                    self.adp_balance_batching_wait_iters.is_some(),
                ),
            ] {
                if set {
                    return Err((
                        k.into(),
                        "applies to aggregated instances only (mode is disaggregated)".into(),
                    ));
                }
            }
        }
        if self.decode_steps_per_round == Some(0) {
            return Err((
                "decode_steps_per_round".into(),
                "0 must be at least 1".into(),
            ));
        }
        if let Some(x) = self.kv_cache_fraction {
            if !(x > 0.0 && x <= 1.0) {
                return Err(("kv_cache_fraction".into(), format!("{x} must be in (0, 1]")));
            }
        }
        if let Some(x) = self.prefix_cache_hit {
            if !(0.0..1.0).contains(&x) {
                return Err(("prefix_cache_hit".into(), format!("{x} must be in [0, 1)")));
            }
        }
        if let Some(x) = self.iteration_overhead_us {
            if !(x >= 0.0 && x.is_finite()) {
                return Err(("iteration_overhead_us".into(), format!("{x} must be >= 0")));
            }
        }
        if let Some(s) = &self.speculative {
            // Deployed drafts are 1-16 tokens (MTP 1-3, EAGLE 3-8, n-gram lookahead up to
            // 16); past a few hundred the acceptance series means nothing.
            if s.draft_tokens > MAX_DRAFT_TOKENS {
                return Err((
                    "speculative.draft_tokens".into(),
                    format!(
                        "{} is more than the {MAX_DRAFT_TOKENS} supported",
                        s.draft_tokens
                    ),
                ));
            }
            if let Some(a) = s.acceptance {
                if !(0.0..=1.0).contains(&a) {
                    return Err((
                        "speculative.acceptance".into(),
                        format!("{a} must be in [0, 1]"),
                    ));
                }
            }
        }
        positive("arrival_rate", self.arrival_rate)?;
        if let Some(r) = self.arrival_rate {
            // Below this the arrival clock runs to 1e300 s and overflows, and iteration
            // times vanish against it.
            if r < MIN_ARRIVAL_RATE {
                return Err((
                    "arrival_rate".into(),
                    format!("{r:e} requests/s is below the {MIN_ARRIVAL_RATE:e} supported (one request in about 12 days)"),
                ));
            }
        }
        if let Some(c) = self.concurrency {
            if c == 0 || c > u32::MAX as u64 {
                return Err((
                    "concurrency".into(),
                    format!(
                        "{c} must be a whole number of clients from 1 to {}",
                        u32::MAX
                    ),
                ));
            }
            if self.target_rate.is_some() {
                return Err((
                    "target_rate".into(),
                    "a closed loop's request rate is set by its clients, not by the deployment's capacity; size for a target_rate with arrival_rate (or offline) instead of concurrency".into(),
                ));
            }
            for (k, set) in [
                ("arrival_rate", self.arrival_rate.is_some()),
                ("trace", self.trace.is_some()),
            ] {
                if set {
                    return Err((
                        "concurrency".into(),
                        format!("give either concurrency (a closed loop) or {k}, not both"),
                    ));
                }
            }
        }
        positive("target_rate", self.target_rate)?;
        if let Some(n) = self.requests {
            check_requests(n).map_err(|m| ("requests".to_string(), m))?;
        }
        match (&self.dataset, &self.trace) {
            (Some(d), _) => {
                if !DATASETS.contains(&d.as_str()) {
                    return Err((
                        "dataset".into(),
                        format!(
                            "unknown dataset '{d}'; expected one of {}",
                            DATASETS.join(", ")
                        ),
                    ));
                }
                if self.trace.is_some() {
                    return Err((
                        "dataset".into(),
                        "give either dataset or trace, not both".into(),
                    ));
                }
                for (k, l) in [("input", &self.input), ("output", &self.output)] {
                    if *l != LengthSpec::default() {
                        return Err((
                            k.into(),
                            format!("not used with dataset '{d}' (its samples give the lengths); remove it"),
                        ));
                    }
                }
            }
            (None, Some(_)) => {}
            (None, None) => {
                self.input.check("input")?;
                self.output.check("output")?;
            }
        }
        if let Some(s) = &self.slo {
            positive("slo.ttft_ms", s.ttft_ms)?;
            positive("slo.tpot_ms", s.tpot_ms)?;
        }
        Ok(())
    }
}

/// Most requests one simulation takes: 10 million take about 35 s and 0.7 GB for
/// `examples/serve-llama3-70b-h100.yaml` with its accelerators-for-a-rate search (memory
/// grows with the requests: a billion would need some 70 GB). Percentiles and goodput
/// settle long before.
pub const MAX_REQUESTS: u64 = 10_000_000;

/// `requests` (or `--requests`) in range: 1 to [`MAX_REQUESTS`].
pub fn check_requests(n: u64) -> Result<(), String> {
    if n == 0 {
        Err("must be at least 1, got 0".into())
    } else if n > MAX_REQUESTS {
        Err(format!(
            "{n} is more than the {MAX_REQUESTS} a simulation takes (about 35 s and 0.7 GB at that); percentiles and goodput settle long before"
        ))
    } else {
        Ok(())
    }
}
