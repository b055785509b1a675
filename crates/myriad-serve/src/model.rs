//! Per-iteration time of one serving instance (one model replica on `tp × attention_dp`
//! accelerators), from first principles.
//!
//! One iteration runs every layer once over the tokens of the batch: `decode` sequences
//! contribute one token each (1 + draft tokens with speculative decoding), prefill chunks
//! contribute their prompt tokens. Per layer and per accelerator:
//!
//! - each weight GEMM takes `max(FLOPs / (peak × gemm eff) + overhead, weight bytes / (HBM ×
//!   hbm_gemm) + overhead)`: the step model's GEMM form (`myriad_train::step::gemm_time`)
//!   against streaming the weight shard once at the rate GEMMs with few rows reach (measured
//!   on H100/H200 at 0.80/0.76 of the peak, below a copy's 0.90; calibration/README.md)
//!   (decode is memory-bound, prefill compute-bound);
//! - attention in prefill: the step model's fused-attention time over the causal pairs of
//!   the chunk (quadratic in prompt length); in decode: `max(FLOPs, KV bytes)` where the KV
//!   bytes are the cached context of every sequence in the KV precision (MLA: the latent
//!   `kv_lora + rope` vector, replicated on every TP rank; GQA: `max(1, kv_heads/tp)` heads);
//! - MoE: the routed experts read only the distinct experts the batch activates,
//!   `E · (1 − (1 − k/E)^T)` for `T` tokens of top-`k` routing over `E` experts (uniform
//!   routing), spread over the EP ranks; FLOPs are `2 · T · k · expert params`; the
//!   busiest EP rank receives `1 + cv · E[max of ep normals]` times the mean tokens
//!   (`myriad_model::moe_balance`: the router's published per-expert load CV, EPLB
//!   residual, Poisson sampling), which lengthens its grouped GEMM and the all-to-alls;
//! - communication via `myriad_collective`: two TP all-reduces per layer, MoE dispatch and
//!   combine all-to-alls over the EP group; exposed, or overlapped with compute (two-batch
//!   overlap) when the framework does so; decode with EP follows DeepSeek's published
//!   schedule, where each all-to-all hides only under one named stage of the other
//!   micro-batch (`InstanceModel::decode_two_batch_overlap`);
//! - plus a fixed per-iteration framework overhead (scheduler, sampling, launch).
//!
//! Invariants: pure, allocation-free per call; every efficiency comes from the catalog
//! accelerator record or the framework table (`framework.rs`), never from a validation row.

use myriad_catalog::Accelerator;
use myriad_cluster::Level;
use myriad_collective::{time as coll_time, Algorithm, GroupSpan, Op as CollOp};
use myriad_model::moe_balance::{busiest_rank_factor, rank_load_cv, Placement};
use myriad_model::Transformer;
use myriad_scenario::Precision;
use myriad_train::step::{
    attention_band_fwd_time, attention_fwd_time, expected_max_std_normal, gemm_time, peak_tflops,
    supported_peak_tflops, BUFFERS_GIB,
};
use serde::Serialize;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Queries per FlashAttention tile (FlashAttention-2/3 forward: 128-row query blocks):
/// prefill re-reads the cached keys and values once per tile.
pub const PREFILL_QUERY_TILE: f64 = myriad_train::step::ATTENTION_TILE;

/// Memory-bound kernels per layer besides GEMMs and attention (norm, rotary + KV append,
/// residual + norm, activation), each charged the accelerator's fixed per-kernel cost.
pub const DENSE_LAYER_KERNELS: f64 = 4.0;
/// Extra kernels of a MoE layer (router top-k, permute, un-permute).
pub const MOE_EXTRA_KERNELS: f64 = 3.0;
/// Extra kernels of an MLA layer: the RMS norms of the query and key/value latents and the
/// separate write of the latent into the KV cache (SGLang's DeepSeek decode step on GB200
/// runs `RMSNormKernel` twice and `set_mla_kv_buffer_kernel` once per layer besides the
/// rotary + quantise kernel: the trace behind `efficiency.hbm_small_kernels`).
pub const MLA_EXTRA_KERNELS: f64 = 3.0;

/// Rows per tile of the grouped expert GEMM: each expert's token count is padded up to a
/// multiple of this (CUTLASS/DeepGEMM grouped GEMMs use 64- or 128-row tiles; 64 taken).
pub const GROUPED_GEMM_TILE_M: f64 = 64.0;

/// Rows per tile of the grouped expert GEMM on weights the tensor cores cannot read, at
/// `tokens_per_expert` routed rows per local expert on average. TensorRT-LLM runs MXFP4
/// experts on Hopper with the Triton MoE backend (triton_kernels `matmul_ogs`, the weights
/// widened in the main loop), whose tile is sized to the expected tokens per expert:
/// `block_m = max(16, min(next_power_of_2(m // n_expts_tot), 128))` (triton-lang/triton
/// `python/triton_kernels/triton_kernels/matmul_ogs_details/opt_flags.py`,
/// `make_default_opt_flags_nvidia`; the routing's `block_m` pads each expert's rows to
/// it, `routing.py`; the rule of the 2025 versions, which TensorRT-LLM's perf-overview
/// runs used; 2026 revisions size experts of at most 64 tokens to twice their tokens, up to
/// 64). So gpt-oss-120b's ~5 tokens an expert at batch 157 take 16-row tiles, not 64: its
/// decode reads the expert weights with little MMA work, bound by the weight stream.
pub fn widened_expert_tile_rows(tokens_per_expert: f64) -> f64 {
    let tpe = tokens_per_expert.floor().max(1.0);
    tpe.log2().ceil().exp2().clamp(16.0, 128.0)
}

/// Bytes per element of a storage precision. NVFP4 stores 4-bit values plus one fp8 scale
/// per 16 elements: 0.5 + 1/16 bytes.
pub fn bytes_of(p: Precision) -> f64 {
    match p {
        Precision::Fp32 | Precision::Tf32 => 4.0,
        Precision::Fp16 | Precision::Bf16 => 2.0,
        Precision::Fp8 => 1.0,
        Precision::Fp4 => 0.5625,
    }
}

/// The precision a GEMM on weights stored in `p` computes in: `p` where the accelerator
/// has tensor cores for it, else bf16 (weight-only quantisation: fp8 or fp4 weights are
/// widened to bf16 in the kernel, as Marlin/Triton W4A16 and W8A16 kernels do).
pub fn compute_precision(acc: &Accelerator, p: Precision) -> Precision {
    match p {
        Precision::Fp8 | Precision::Fp4
            if myriad_train::step::supported_peak_tflops(acc, p).is_none() =>
        {
            Precision::Bf16
        }
        _ => p,
    }
}

/// Least time (seconds) for `flops` of useful GEMM work on weights stored in `p`: where the
/// accelerator has no tensor cores for `p`, the kernel widens the weights in its main loop
/// and runs no faster than the catalog's `weight_only_gemm_tflops` (issue-bound on the
/// dequantisation); else, and where no ceiling is measured, 0.
pub fn widened_gemm_floor(acc: &Accelerator, p: Precision, flops: f64) -> f64 {
    match acc.efficiency.weight_only_gemm_tflops {
        Some(t) if t > 0.0 && compute_precision(acc, p) != p => flops / (t * 1e12),
        _ => 0.0,
    }
}

/// What a run does with `key`'s weights stored in `p` when the accelerator's tensor cores
/// cannot read them (weight-only quantisation), as a note for the report; `None` otherwise.
pub fn widening_note(acc: &Accelerator, key: &str, p: Precision) -> Option<String> {
    let c = compute_precision(acc, p);
    if c == p {
        return None;
    }
    let ceiling = match acc.efficiency.weight_only_gemm_tflops {
        Some(t) => format!(", at most {t} TFLOP/s (catalog weight_only_gemm_tflops)"),
        None => String::new(),
    };
    Some(format!(
        "{key}: {} stored, {} GEMMs ({} has no {} tensor cores: weight-only quantisation{ceiling})",
        p.as_str(),
        c.as_str(),
        acc.id,
        p.as_str()
    ))
}

/// The widening notes of every weight group of `prec` (`widening_note`), the attention
/// groups only where they differ from the group before them (said once).
pub fn widening_notes(acc: &Accelerator, prec: Precisions) -> Vec<String> {
    [
        ("weights", prec.weights, None),
        ("experts", prec.experts, None),
        ("attention", prec.attention, Some(prec.weights)),
        ("attention_out", prec.attention_out, Some(prec.attention)),
    ]
    .into_iter()
    .filter(|(_, p, same_as)| *same_as != Some(*p))
    .filter_map(|(k, p, _)| widening_note(acc, k, p))
    .collect()
}

/// How one instance is cut over its accelerators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Parallel {
    /// Tensor parallelism of attention (and of dense MLPs and shared experts).
    pub tp: u32,
    /// Attention data parallelism: independent attention ranks, each with its own
    /// sequences and KV cache. Accelerators per instance = tp × attention_dp.
    pub attention_dp: u32,
    /// Expert parallelism of routed experts within a pipeline stage; expert TP = the
    /// stage's accelerators / ep.
    pub ep: u32,
    /// Pipeline stages: the layers are cut into `pp` consecutive runs, each on its own
    /// `tp × attention_dp` accelerators, and `pp` micro-batches of the running sequences
    /// are in flight at once (TensorRT-LLM's and vLLM's pipeline-parallel executors).
    pub pp: u32,
}

impl Parallel {
    /// Tensor, attention-DP and expert parallelism over one pipeline stage.
    pub const fn new(tp: u32, attention_dp: u32, ep: u32) -> Self {
        Self {
            tp,
            attention_dp,
            ep,
            pp: 1,
        }
    }
    /// The same cut with `pp` pipeline stages.
    pub const fn with_pp(self, pp: u32) -> Self {
        Self { pp, ..self }
    }
    /// Accelerators of one pipeline stage: tp × attention_dp.
    pub fn stage_gpus(&self) -> u32 {
        self.tp * self.attention_dp
    }
    /// Accelerators of the instance: tp × attention_dp × pp.
    pub fn gpus(&self) -> u32 {
        self.stage_gpus() * self.pp.max(1)
    }
    pub fn etp(&self) -> u32 {
        (self.stage_gpus() / self.ep.max(1)).max(1)
    }
}

/// Storage and compute precisions of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Precisions {
    /// Dense-MLP and shared-expert weights (and their GEMMs).
    pub weights: Precision,
    /// Routed-expert weights (and their grouped GEMMs).
    pub experts: Precision,
    /// KV cache.
    pub kv: Precision,
    /// Attention projections before and inside the core: query, key/value and, with MLA,
    /// the absorbed up-projections.
    pub attention: Precision,
    /// The attention output projection (`o_proj`).
    pub attention_out: Precision,
}

impl Precisions {
    /// Every linear layer but the routed experts in `weights`: the attention as well.
    pub const fn new(weights: Precision, experts: Precision, kv: Precision) -> Self {
        Self {
            weights,
            experts,
            kv,
            attention: weights,
            attention_out: weights,
        }
    }
}

/// Speculative decoding (draft or MTP): each decode step verifies `draft_tokens` extra
/// tokens; each is accepted with probability `acceptance` given the previous ones were.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Speculative {
    pub draft_tokens: u32,
    pub acceptance: f64,
}

impl Speculative {
    /// Expected tokens emitted per decode step: 1 + a + a² + … + a^n.
    pub fn tokens_per_step(&self) -> f64 {
        let (a, n) = (self.acceptance, self.draft_tokens);
        // Term by term for any realistic draft; a longer one in closed form (summing
        // billions of terms per call hung the simulation, and `powi` wraps past i32).
        if n <= 1024 {
            (0..=n).map(|i| a.powi(i as i32)).sum()
        } else if a == 1.0 {
            n as f64 + 1.0
        } else {
            (1.0 - a.powf(n as f64 + 1.0)) / (1.0 - a)
        }
    }

    /// The chain of `draft_tokens` whose per-token acceptance `a` gives a measured mean of
    /// `tokens_per_step` tokens per step (`1 + a + … + a^n = τ`, solved by bisection; `τ`
    /// clamped to `[1, 1 + n]`). Measured acceptance lengths already hold the fall of
    /// acceptance with draft depth; one `a` per depth reproduces its mean exactly.
    pub fn with_mean_tokens(draft_tokens: u32, tokens_per_step: f64) -> Self {
        let n = draft_tokens as f64;
        let tau = if tokens_per_step.is_finite() {
            tokens_per_step.clamp(1.0, 1.0 + n)
        } else {
            1.0
        };
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            let s = Speculative {
                draft_tokens,
                acceptance: mid,
            };
            if s.tokens_per_step() < tau {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Speculative {
            draft_tokens,
            acceptance: 0.5 * (lo + hi),
        }
    }
}

/// DeepSeek-R1's measured mean tokens per decode step with 1–5 autoregressive MTP draft
/// layers, strict (top-1) acceptance: 1.92, 2.58, 2.82, 2.99, 3.01 (TensorRT-LLM tech blog
/// 1, "Pushing Latency Boundaries", table "Autoregressive MTP Layers", column "Acceptance
/// Rate"; 8×B200, ISL/OSL 1K/2K). Deeper drafts reuse the one MTP module and accept less.
pub const DEEPSEEK_R1_MTP_TOKENS_PER_STEP: [f64; 5] = [1.92, 2.58, 2.82, 2.99, 3.01];

/// The same with relaxed acceptance in the thinking phase, MTP3, top-10, delta 0.6: 3.10
/// (tech blog 1, table "Relax Acceptance Verification").
pub const DEEPSEEK_R1_MTP3_RELAXED_TOKENS_PER_STEP: f64 = 3.10;

/// Mean and mean square of the contexts of running requests of `isl` prompt and `osl`
/// output tokens in a steady state: spread evenly over their outputs, `isl … isl + osl`
/// (mean `isl + osl/2`, variance `osl²/12`).
pub fn running_contexts(isl: f64, osl: f64) -> (f64, f64) {
    let mean = isl + osl / 2.0;
    (mean, mean * mean + osl * osl / 12.0)
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// The work of one iteration of an instance (totals over the instance).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Batch {
    /// Sequences in the decode phase (each decodes one step).
    pub decode_seqs: f64,
    /// Sum over those sequences of their current context length (tokens in the KV cache).
    pub decode_ctx: f64,
    /// Sum over those sequences of their squared context lengths; 0 when not tracked (the
    /// ranks' contexts are then taken as equal). With attention data parallelism each rank
    /// attends over its own sequences and every MoE layer waits for the slowest, so the
    /// spread of the contexts sets the busiest rank's attention
    /// (`InstanceModel::busiest_context_factor`).
    pub decode_ctx_sq: f64,
    /// Sequences `decode_ctx` and `decode_ctx_sq` sum over, where fewer than `decode_seqs`:
    /// a CUDA graph pads the decode batch with rows that have no context. 0: all of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decode_ctx_seqs: f64,
    /// Prompt tokens computed this iteration (after prefix-cache hits).
    pub prefill_tokens: f64,
    /// Sum over those prompt tokens of the positions each attends to (causal pairs).
    pub prefill_pairs: f64,
    /// Prompts whose last chunk runs this iteration (they produce a token: LM head).
    pub prefill_done: f64,
    /// Prompts with a chunk in this iteration. With attention data parallelism a prompt
    /// runs on one rank, so fewer prompts than ranks leave ranks idle.
    pub prefill_seqs: f64,
    /// With attention data parallelism, where the caller knows each rank's batch
    /// (`BusiestRank`): the most decode sequences one rank runs. A decode-only iteration's
    /// CUDA graph is the next captured size above it on every rank (the ranks run one
    /// graph size, the largest any of them needs), and its LM head has that rank's rows.
    /// 0: the even split, `decode_seqs / attention_dp`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rank_decode_seqs: f64,
    /// With attention data parallelism, where the caller knows each rank's batch: the most
    /// tokens one rank computes (its decode tokens, drafts included, and its prompt
    /// tokens). Each rank runs its own batch through the attention-side GEMMs (projections,
    /// dense and shared MLPs, router), norms and TP all-reduce, and every MoE layer waits
    /// for the rank with the most rows. 0: the even split, the decode tokens over the
    /// ranks plus the prompt tokens over the ranks that carry prompts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rank_tokens: f64,
}

impl Batch {
    /// Sequences the decode contexts belong to (`decode_ctx_seqs`, else all of them).
    pub fn context_seqs(&self) -> f64 {
        if self.decode_ctx_seqs > 0.0 {
            self.decode_ctx_seqs
        } else {
            self.decode_seqs
        }
    }
}

/// The busiest attention-DP rank of an iteration, where the caller knows which rank holds
/// each sequence (the request-level simulation places every request on one rank): the
/// iteration is paced by it instead of the statistical estimate of
/// `InstanceModel::busiest_context_factor`. Each is the maximum over the ranks on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BusiestRank {
    /// The largest sum of decode contexts on one rank (its attention's KV reads).
    pub decode_ctx: f64,
    /// The most sequences on one rank: its decodes and its prompts with a chunk in this
    /// iteration (the host loop's work, `Framework::host_us_per_seq`).
    pub seqs: f64,
    /// The most decode sequences on one rank (`Batch::rank_decode_seqs`; 0: unknown, the
    /// even split).
    pub decode_seqs: f64,
    /// The most tokens one rank computes: its decode tokens (drafts included) and its
    /// prompt tokens (`Batch::rank_tokens`, the rows of its attention-side GEMMs; 0:
    /// unknown, the even split).
    pub tokens: f64,
}

/// Where an iteration's time goes (seconds); the parts add up to `total_s`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IterTime {
    /// GEMMs (weights), compute- or memory-bound per op.
    pub gemm_s: f64,
    /// Attention cores (prefill FLOPs, decode KV reads).
    pub attention_s: f64,
    /// Other memory-bound ops (norms, activations, residuals).
    pub memory_s: f64,
    /// Exposed communication (TP all-reduce, EP all-to-all).
    pub comm_s: f64,
    /// Per-iteration framework overhead.
    pub overhead_s: f64,
    pub total_s: f64,
}

impl IterTime {
    /// Adds another iteration's parts to these (a running sum over iterations).
    pub fn add(&mut self, o: &IterTime) {
        self.gemm_s += o.gemm_s;
        self.attention_s += o.attention_s;
        self.memory_s += o.memory_s;
        self.comm_s += o.comm_s;
        self.overhead_s += o.overhead_s;
        self.total_s += o.total_s;
    }
}

/// The iteration-time model of one instance: precomputed per-accelerator constants.
#[derive(Debug, Clone)]
pub struct InstanceModel {
    pub acc: Accelerator,
    pub levels: Vec<Level>,
    pub model: Transformer,
    pub par: Parallel,
    pub prec: Precisions,
    pub overhead_s: f64,
    /// Host time per iteration per sequence on a rank (seconds) of a framework whose host
    /// loop runs ahead of the GPU: an iteration takes at least this times the busiest
    /// rank's sequences (`Framework::host_us_per_seq`); 0: the host never binds.
    pub host_per_seq_s: f64,
    /// Multiplier on compute-bound work (prefill GEMMs and attention): the instance's ranks
    /// synchronise within every layer, so they run at the pace of the instance's slowest chip
    /// (`myriad_train::step::straggler_pace`) and wait for the one whose clock the power
    /// controller holds lowest at the moment (`myriad_train::step::sync_jitter_pace`), as a
    /// training step's compute does; memory-bound decode work runs below the power cap at a
    /// steady clock and pays nothing.
    pub compute_pace: f64,
    pub overlap_comm: bool,
    pub spec: Option<Speculative>,
    /// Times each cached K/V byte is read per decode step: 1 with a GQA-aware decode
    /// kernel (one read serves the query heads of a group); `heads / kv_heads` with a
    /// kernel that reads K/V once per query head (`Framework::gqa_decode_kernel` false).
    pub decode_kv_reads: f64,
    /// Decode attention's matrix math runs at the fp8 peak (the framework's kernel multiplies
    /// an fp8 KV cache in fp8, `Framework::fp8_decode_attention`); false: the bf16 peak.
    pub fp8_decode_attention: bool,
    /// Sliding-window attention: (window tokens, fraction of layers windowed). A windowed
    /// layer attends to (and reads) only the last `window` tokens of each sequence.
    pub window: Option<(f64, f64)>,
    /// Windowed layers attend within fixed chunks of the window (Llama 4) rather than a
    /// window sliding with the query ([`myriad_model::SlidingWindow::chunked`]).
    pub window_chunked: bool,
    /// The KV cache holds only the window of windowed layers (`kv_need` shrinks); false
    /// where the framework keeps (and reserves) the whole sequence for every layer.
    pub window_bounds_kv: bool,
    /// Most tokens (prompt + output) one request may hold: the engine's context limit
    /// (`serving.max_context`, by default the model preset's maximum context). The
    /// simulation turns longer requests away on arrival, as vLLM, SGLang and TensorRT-LLM
    /// reject them (`SimReport::rejected_too_long`). `None`: no limit.
    pub max_context: Option<u32>,
    /// Decode batch sizes (per attention rank) with a captured CUDA graph, ascending, when
    /// the framework pads a decode-only batch up to the next one (empty: no padding).
    pub graph_batch_sizes: Vec<u32>,
    /// Per-expert token-load CV of the model's router (`myriad_model::moe_balance`): the
    /// published figure where one exists (DeepSeek-V3/R1), else 0 (uniform routing).
    pub expert_load_cv: f64,
    /// Expert placement on the EP ranks (static unless the deployment runs EPLB).
    pub placement: Placement,
    /// The MoE input of every attention-DP rank is padded to the busiest rank's tokens
    /// (`Framework::adp_pads_fp4_moe`, NVFP4 experts only): an iteration where some ranks
    /// prefill costs the experts and the all-to-alls as if every rank did.
    pub moe_dp_padding: bool,
    /// MoE tokens travel by an all-gather and the expert outputs by a reduce-scatter over
    /// the EP ranks instead of two all-to-alls (`Framework::moe_allgather_unless_wide_mnnvl`).
    pub moe_gather_comm: bool,
    /// The scale-up domain spans several nodes (multi-node NVLink: GB200/GB300 NVL72).
    pub multi_node_nvlink: bool,
    /// The framework settings behind `moe_dp_padding` and `moe_gather_comm` (what
    /// `with_moe_dp_padding` and `with_moe_gather_comm` were given), so that an instance
    /// of another shape built from this one (`search`) applies them to its own.
    pub framework_pads_fp4_moe: bool,
    pub framework_moe_allgather: bool,
    /// Expected maximum of `ep` standard normals (busiest-rank order statistic).
    ep_max_z: f64,
    hbm_bps: f64,
    /// Rate of the step's small memory-bound kernels (norms, rotary + quantise, residual
    /// adds, activations, casts; `efficiency.hbm_small_kernels`).
    small_bps: f64,
    /// Rate at which skinny GEMMs stream their weights (`efficiency.hbm_gemm`).
    gemm_stream_bps: f64,
    /// Attention weights one TP rank holds and reads (`Transformer::attention_params_per_rank`):
    /// `attn_params / tp`, except what every rank holds whole: MLA's down projections and
    /// latent norms (SGLang's `fused_qkv_a_proj_with_mqa` is a `ReplicatedLinear`, as
    /// Megatron-Core's are duplicated), and K/V heads replicated where TP exceeds them.
    attn_rank_params: f64,
    attn_gemms: f64,
    /// Attention weights applied after the core (MLA: the value half of `kv_b`, absorbed
    /// as `w_vc`, and `o_proj`; GQA: `o_proj`); the rest (query and key/value
    /// projections) runs before it.
    attn_post_params: f64,
    /// The output projection (`o_proj`), the last of `attn_post_params`.
    attn_out_params: f64,
    dense_mlp_params: f64,
    expert_params: f64,
    shared_params: f64,
    heads_gpu: f64,
    /// (d_qk, d_v) of prefill attention and of decode attention (MLA decode is absorbed:
    /// queries attend over the latent vector).
    dims_prefill: (f64, f64),
    dims_decode: (f64, f64),
    /// KV bytes of one token of one layer on one accelerator.
    kv_token_layer: f64,
    tp_span: Option<GroupSpan>,
    ep_span: Option<GroupSpan>,
    /// Consecutive pipeline stages: `pp` members `tp × attention_dp` accelerators apart.
    pp_span: Option<GroupSpan>,
    act_bytes: f64,
}

/// The published per-expert token-load CV of `model`'s router: DeepSeek-V3/R1 (256
/// routed experts, top-8) has TensorRT-LLM's measured 164.1/128 (tech blog 4, Table 1;
/// `moe_balance::DEEPSEEK_R1_EXPERT_LOAD_CV`). No other model's figure was found
/// published: 0 (uniform routing; only the sampling noise of a finite batch remains).
pub fn published_expert_load_cv(model: &Transformer) -> f64 {
    match &model.moe {
        Some(m)
            if model.name.to_ascii_lowercase().contains("deepseek")
                && m.experts == 256
                && m.top_k == 8 =>
        {
            myriad_model::moe_balance::DEEPSEEK_R1_EXPERT_LOAD_CV
        }
        _ => 0.0,
    }
}

/// A group of `n` consecutive accelerators laid on the hierarchy innermost first.
pub fn span(n: u64, levels: &[Level]) -> GroupSpan {
    let mut spans = vec![1u64; levels.len()];
    let mut left = n.max(1);
    let mut inner = 1u64;
    for (i, l) in levels.iter().enumerate() {
        let fit = (l.size / inner).max(1);
        let s = left.min(fit);
        spans[i] = s;
        left = left.div_ceil(s);
        inner = l.size;
        if left <= 1 {
            break;
        }
    }
    GroupSpan::new(spans)
}

impl InstanceModel {
    /// Builds the model; errors name what does not divide or fit.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        acc: &Accelerator,
        levels: &[Level],
        model: &Transformer,
        par: Parallel,
        prec: Precisions,
        overhead_s: f64,
        overlap_comm: bool,
        spec: Option<Speculative>,
    ) -> Result<Self, String> {
        if par.tp == 0 || par.attention_dp == 0 || par.ep == 0 || par.pp == 0 {
            return Err("tp, attention_dp, ep and pp must be at least 1".into());
        }
        if par.pp > model.layers {
            return Err(format!(
                "pp {} is more than the model's {} layers (every pipeline stage needs one)",
                par.pp, model.layers
            ));
        }
        if !par.stage_gpus().is_multiple_of(par.ep) {
            return Err(format!(
                "ep {} does not divide the {} accelerators of a pipeline stage (tp {} × attention_dp {})",
                par.ep,
                par.stage_gpus(),
                par.tp,
                par.attention_dp
            ));
        }
        if !model.heads.is_multiple_of(par.tp) {
            return Err(format!(
                "tp {} does not divide the {} attention heads",
                par.tp, model.heads
            ));
        }
        if let Some(m) = &model.moe {
            if par.ep > m.experts {
                return Err(format!(
                    "ep {} is more than the {} experts",
                    par.ep, m.experts
                ));
            }
        } else if par.ep > 1 {
            return Err(format!("ep {} needs a mixture-of-experts model", par.ep));
        }
        let h = model.hidden as f64;
        let tp = par.tp as f64;
        let (dims_prefill, dims_decode, kv_token_layer, attn_gemms) = match &model.mla {
            Some(m) => {
                let r = m.kv_lora_rank as f64;
                let rope = m.qk_rope_head_dim as f64;
                (
                    ((m.qk_nope_head_dim as f64 + rope), m.v_head_dim as f64),
                    (r + rope, r),
                    (r + rope) * bytes_of(prec.kv),
                    if m.q_lora_rank.is_some() { 5.0 } else { 4.0 },
                )
            }
            None => {
                let d = model.head_dim() as f64;
                let kv_gpu = (model.kv_heads as f64 / tp).ceil().max(1.0);
                ((d, d), (d, d), 2.0 * kv_gpu * d * bytes_of(prec.kv), 2.0)
            }
        };
        let (expert_params, shared_params) = match &model.moe {
            Some(m) => {
                let one = model.mlp_params(m.expert_ffn_hidden);
                (one, one * m.shared_experts as f64)
            }
            None => (0.0, 0.0),
        };
        let tp_span = (par.tp > 1).then(|| span(par.tp as u64, levels));
        let ep_span = (par.ep > 1).then(|| span(par.ep as u64, levels));
        let pp_span = (par.pp > 1)
            .then(|| myriad_train::Plan::span(levels, par.pp as u64, par.stage_gpus() as u64));
        let heads = model.heads as f64;
        let attn_out_params = match &model.mla {
            Some(m) => h * heads * m.v_head_dim as f64,
            None => heads * model.head_dim() as f64 * h,
        };
        let attn_post_params = attn_out_params
            + model
                .mla
                .as_ref()
                .map_or(0.0, |m| m.kv_lora_rank as f64 * heads * m.v_head_dim as f64);
        Ok(Self {
            acc: acc.clone(),
            levels: levels.to_vec(),
            model: model.clone(),
            par,
            prec,
            overhead_s,
            host_per_seq_s: 0.0,
            overlap_comm,
            spec,
            decode_kv_reads: 1.0,
            fp8_decode_attention: false,
            window: None,
            window_chunked: false,
            window_bounds_kv: false,
            max_context: None,
            graph_batch_sizes: Vec::new(),
            expert_load_cv: published_expert_load_cv(model),
            placement: Placement::Static,
            moe_dp_padding: false,
            moe_gather_comm: false,
            multi_node_nvlink: false,
            framework_pads_fp4_moe: false,
            framework_moe_allgather: false,
            ep_max_z: expected_max_std_normal(par.ep as u64),
            compute_pace: myriad_train::step::sync_jitter_pace(acc, par.stage_gpus() as u64)
                * myriad_train::step::straggler_pace(acc, par.stage_gpus() as u64),
            hbm_bps: acc.hbm_tbps * 1e12 * acc.efficiency.hbm,
            small_bps: acc.hbm_tbps * 1e12 * acc.efficiency.small_kernel_hbm(),
            gemm_stream_bps: acc.hbm_tbps * 1e12 * acc.efficiency.hbm_gemm,
            attn_rank_params: model.attention_params_per_rank(par.tp),
            attn_gemms,
            attn_post_params,
            attn_out_params,
            dense_mlp_params: model.mlp_params(model.dense_ffn()),
            expert_params,
            shared_params,
            heads_gpu: model.heads as f64 / tp,
            dims_prefill,
            dims_decode,
            kv_token_layer,
            tp_span,
            ep_span,
            pp_span,
            act_bytes: 2.0,
        })
    }

    /// Applies a framework's per-instance behaviour: its decode attention kernel, its
    /// host-loop floor, and whether its kernels and KV cache exploit the model's sliding
    /// windows.
    pub fn with_framework(self, fw: &crate::framework::Framework) -> Self {
        let m = self
            .with_decode_kernel(fw.gqa_decode_kernel)
            .with_fp8_decode_attention(fw.fp8_decode_attention)
            .with_host_per_seq(fw.host_us_per_seq)
            .with_moe_dp_padding(fw.adp_pads_fp4_moe)
            .with_moe_gather_comm(fw.moe_allgather_unless_wide_mnnvl);
        match m.model.sliding_window {
            Some(w) if fw.sliding_window_attention => {
                let layers = m.model.windowed_layers();
                let mut m = m.with_sliding_window(w.window, layers, fw.sliding_window_kv);
                m.window_chunked = w.chunked;
                m
            }
            _ => m,
        }
    }

    /// With `on` (the framework pads), NVFP4 experts under attention data parallelism run
    /// on `attention_dp ×` the busiest rank's tokens.
    pub fn with_moe_dp_padding(mut self, on: bool) -> Self {
        self.framework_pads_fp4_moe = on;
        self.moe_dp_padding = on
            && self.par.attention_dp > 1
            && self.model.moe.is_some()
            && self.prec.experts == Precision::Fp4;
        self
    }

    /// With `on` (the framework does), an attention-data-parallel MoE all-gathers its
    /// tokens and reduce-scatters the expert outputs unless its EP group is larger than
    /// top-k on a multi-node NVLink domain.
    pub fn with_moe_gather_comm(mut self, on: bool) -> Self {
        self.framework_moe_allgather = on;
        let wide = self
            .model
            .moe
            .as_ref()
            .is_some_and(|m| self.par.ep > m.top_k);
        self.moe_gather_comm =
            on && self.par.attention_dp > 1 && self.par.ep > 1 && !(wide && self.multi_node_nvlink);
        self
    }

    /// Whether the scale-up domain spans several nodes (multi-node NVLink); set before
    /// [`Self::with_framework`].
    pub fn with_multi_node_nvlink(mut self, on: bool) -> Self {
        self.multi_node_nvlink = on;
        self
    }

    /// With `on` (the framework's kernels can), an fp8 KV cache on an accelerator with fp8
    /// attention kernels (catalog `efficiency.fp8_attention`) is attended in fp8 (queries
    /// quantised, QK^T and PV at the fp8 peak); otherwise in bf16.
    pub fn with_fp8_decode_attention(mut self, on: bool) -> Self {
        let fp8_kv = matches!(self.prec.kv, Precision::Fp8 | Precision::Fp4);
        self.fp8_decode_attention = on
            && fp8_kv
            && self.acc.efficiency.fp8_attention
            && supported_peak_tflops(&self.acc, Precision::Fp8).is_some();
        self
    }

    /// Sets the host time per sequence per iteration (`Framework::host_us_per_seq`, µs).
    pub fn with_host_per_seq(mut self, us: f64) -> Self {
        self.host_per_seq_s = us.max(0.0) * 1e-6;
        self
    }

    /// Applies a framework's decode kernel: without GQA-aware decode attention every query
    /// head re-reads its group's K/V.
    pub fn with_decode_kernel(mut self, gqa_aware: bool) -> Self {
        self.decode_kv_reads = if gqa_aware || self.model.mla.is_some() {
            1.0
        } else {
            (self.model.heads / self.model.kv_heads.max(1)) as f64
        };
        self
    }

    /// Applies sliding-window attention to `layers` of the model's layers (gpt-oss: every
    /// other layer, window 128): those layers attend to at most `window` tokens, and with
    /// `bounds_kv` also cache at most that many.
    pub fn with_sliding_window(mut self, window: u32, layers: u32, bounds_kv: bool) -> Self {
        if window > 0 && layers > 0 {
            let f = (layers as f64 / self.model.layers.max(1) as f64).min(1.0);
            self.window = Some((window as f64, f));
            self.window_bounds_kv = bounds_kv;
        }
        self
    }

    /// The windowed layers' attention span of `window` tokens (sliding, or chunked).
    fn local_attention(&self, window: f64) -> myriad_model::SlidingWindow {
        myriad_model::SlidingWindow {
            window: window as u32,
            full_every: None,
            chunked: self.window_chunked,
        }
    }

    /// Context one decode step attends to, per layer averaged over the layers, for `seqs`
    /// sequences whose contexts sum to `ctx_sum` and their squares to `ctx_sq_sum` (0: not
    /// tracked, all taken as the mean): windowed layers see the mean of each sequence's
    /// window or chunk span ([`myriad_model::SlidingWindow::decode_span`]), the rest the
    /// whole context.
    fn attended_context(&self, seqs: f64, ctx_sum: f64, ctx_sq_sum: f64) -> f64 {
        match self.window {
            Some((w, f)) => {
                let mean = ctx_sum / seqs;
                let sd = if ctx_sq_sum > 0.0 {
                    (ctx_sq_sum / seqs - mean * mean).max(0.0).sqrt()
                } else {
                    0.0
                };
                let span = self.local_attention(w).decode_span(mean, sd);
                ctx_sum * (1.0 - f) + seqs * span * f
            }
            None => ctx_sum,
        }
    }

    /// KV-cache need of a sequence of `tokens` tokens, in tokens of an all-layers cache
    /// (`kv_bytes_per_token_per_gpu` each): windowed layers hold at most the window when
    /// the framework bounds their cache.
    pub fn kv_need(&self, tokens: f64) -> f64 {
        match self.window {
            Some((w, f)) if self.window_bounds_kv => tokens * (1.0 - f) + tokens.min(w) * f,
            _ => tokens,
        }
    }

    /// Places the routed experts with `placement` (EPLB: redundant experts placed from
    /// load statistics, which leaves the measured residual imbalance).
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Load of the busiest EP rank relative to the mean for `assign` mean token-expert
    /// assignments per rank (1 without EP): `myriad_model::moe_balance`.
    pub fn busiest_rank_factor(&self, assign: f64) -> f64 {
        match &self.model.moe {
            Some(m) if self.par.ep > 1 => {
                let per_rank = m.experts as f64 / self.par.ep as f64;
                let cv = rank_load_cv(self.placement, self.expert_load_cv, per_rank, assign);
                busiest_rank_factor(cv, self.ep_max_z)
            }
            _ => 1.0,
        }
    }

    /// Decode-only iterations run a captured CUDA graph padded up to the next of `sizes`
    /// (per attention rank): the padding rows cost GEMM work but hold no context.
    pub fn with_graph_padding(mut self, mut sizes: Vec<u32>) -> Self {
        sizes.retain(|&s| s > 0);
        sizes.sort_unstable();
        sizes.dedup();
        self.graph_batch_sizes = sizes;
        self
    }

    /// The decode batch a decode-only iteration of `seqs` sequences computes: per rank,
    /// the next captured graph size, or `seqs` when none is larger (eager, unpadded).
    pub fn padded_decode_seqs(&self, seqs: f64) -> f64 {
        self.padded_decode_seqs_on(seqs, 0.0)
    }

    /// As [`Self::padded_decode_seqs`], where the busiest attention-DP rank runs
    /// `rank_seqs` of the sequences (0: the even split): every rank runs the graph of the
    /// next captured size above the busiest rank's batch (SGLang's DP attention and
    /// TensorRT-LLM's attention DP pick one graph size for all ranks from the largest
    /// rank's batch, and a batch above every captured size runs eagerly on all of them).
    pub fn padded_decode_seqs_on(&self, seqs: f64, rank_seqs: f64) -> f64 {
        let dp = self.par.attention_dp.max(1) as f64;
        let per_rank = if rank_seqs > 0.0 {
            rank_seqs.ceil()
        } else {
            (seqs / dp).ceil()
        };
        match self
            .graph_batch_sizes
            .iter()
            .find(|&&s| s as f64 >= per_rank)
        {
            Some(&s) => (s as f64 * dp).max(seqs),
            None => seqs,
        }
    }

    /// Tokens emitted per decode step per sequence (1 without speculative decoding).
    pub fn tokens_per_step(&self) -> f64 {
        self.spec.map(|s| s.tokens_per_step()).unwrap_or(1.0)
    }

    /// Layers on the busiest pipeline stage (all of them without pipeline parallelism).
    pub fn stage_layers(&self) -> u32 {
        self.model.layers.div_ceil(self.par.pp.max(1))
    }

    /// Weight bytes held by one accelerator (of the busiest pipeline stage: the most layers,
    /// and an embedding matrix, which the first and the last stage each hold one of).
    pub fn weight_bytes_per_gpu(&self) -> f64 {
        let m = &self.model;
        let tp = self.par.tp as f64;
        let bw = bytes_of(self.prec.weights);
        let be = bytes_of(self.prec.experts);
        let share = self.stage_layers() as f64 / m.layers.max(1) as f64;
        let layers = m.layers as f64;
        let moe_layers = m.moe_layers() as f64;
        let dense_layers = layers - moe_layers;
        let embed = m.vocab as f64 * m.hidden as f64 * 2.0 / tp;
        let embeds = if m.tied_embeddings || self.par.pp > 1 {
            1.0
        } else {
            2.0
        };
        // One rank's attention weights: the output projection split over TP, the rest as
        // the rank holds it (`attn_rank_params`).
        let out = self.attn_out_params / tp;
        let attn = (self.attn_rank_params - out) * bytes_of(self.prec.attention)
            + out * bytes_of(self.prec.attention_out);
        let mut w = share * (layers * attn + dense_layers * self.dense_mlp_params / tp * bw)
            + embed * embeds;
        if let Some(moe) = &m.moe {
            w += share
                * moe_layers
                * ((moe.experts as f64 / self.par.ep as f64).ceil() * self.expert_params
                    / self.par.etp() as f64
                    * be
                    + self.shared_params / tp * bw
                    + m.router_params() * 2.0);
        }
        w
    }

    /// KV-cache bytes of one token on one accelerator of its attention rank (the layers of
    /// the busiest pipeline stage).
    pub fn kv_bytes_per_token_per_gpu(&self) -> f64 {
        self.kv_token_layer * self.stage_layers() as f64
    }

    /// KV-cache bytes of one token over all layers as moved between instances (one copy).
    pub fn kv_bytes_per_token(&self) -> f64 {
        let all_layers = self.kv_token_layer * self.model.layers as f64;
        match &self.model.mla {
            Some(_) => all_layers,
            None => {
                all_layers * self.par.tp as f64
                    / ((self.par.tp as f64 / self.model.kv_heads as f64).max(1.0))
            }
        }
    }

    /// Tokens the instance's KV cache holds when `fraction` of the memory left after
    /// weights and runtime buffers goes to it.
    pub fn kv_capacity_tokens(&self, fraction: f64) -> f64 {
        let free = self.acc.hbm_gib * GIB - self.weight_bytes_per_gpu() - BUFFERS_GIB * GIB;
        (free.max(0.0) * fraction / self.kv_bytes_per_token_per_gpu()).floor()
            * self.par.attention_dp as f64
    }

    fn weight_gemm(&self, p: Precision, tokens: f64, params: f64, kernels: f64) -> f64 {
        if tokens <= 0.0 || params <= 0.0 {
            return 0.0;
        }
        let k = self.model.hidden as f64;
        let n = params / k;
        let compute = gemm_time(
            &self.acc,
            compute_precision(&self.acc, p),
            tokens,
            n,
            k,
            1.0,
        )
        .max(widened_gemm_floor(&self.acc, p, 2.0 * tokens * params))
            * self.compute_pace;
        let ov = self.acc.efficiency.gemm_overhead_us * 1e-6;
        let memory = params * bytes_of(p) / self.gemm_stream_bps + ov;
        compute.max(memory) + (kernels - 1.0).max(0.0) * ov
    }

    fn coll(&self, op: CollOp, bytes: f64, g: &Option<GroupSpan>) -> f64 {
        match g {
            Some(g) if bytes > 0.0 => coll_time(op, Algorithm::Auto, bytes, g, &self.levels)
                .map(|c| c.time_s)
                .unwrap_or(f64::INFINITY),
            _ => 0.0,
        }
    }

    /// Upper bound on the instance's decode throughput, output tokens/s per accelerator,
    /// with `kv_tokens` of cache (the instance's) and at most `max_batch` running requests
    /// of `isl` prompt and `osl` output tokens: each request holds cache for its whole
    /// prompt and output from admission (TensorRT-LLM's `GUARANTEED_NO_EVICT`, and the
    /// simulation's admission), the running ones are on average halfway through their
    /// output, and every step reads their cache (windowed layers only their span) and the
    /// weights the batch touches (the share of experts it hits) at the accelerator's peak
    /// bandwidth, with no prefill and no compute or communication cost. `None` with
    /// pipeline stages.
    pub fn decode_roofline(
        &self,
        kv_tokens: f64,
        max_batch: f64,
        isl: f64,
        osl: f64,
    ) -> Option<f64> {
        if self.par.pp > 1 || isl + osl <= 0.0 {
            return None;
        }
        let ranks = self.par.attention_dp.max(1) as f64;
        let per_rank = (max_batch / ranks)
            .min((kv_tokens / ranks / self.kv_need(isl + osl)).floor())
            .max(0.0);
        if per_rank <= 0.0 {
            return Some(0.0);
        }
        let hit = match &self.model.moe {
            Some(moe) => {
                Self::distinct_experts(moe.experts as f64, moe.top_k as f64, per_rank * ranks)
                    / moe.experts as f64
            }
            None => 1.0,
        };
        // Cache read per request and step, as the decode attention reads it.
        let (mean, mean_sq) = running_contexts(isl, osl);
        let read = self.attended_context(1.0, mean, mean_sq);
        let bytes =
            self.weight_bytes_per_gpu() * hit + per_rank * read * self.kv_bytes_per_token_per_gpu();
        let step = bytes / (self.acc.hbm_tbps * 1e12);
        Some(per_rank * self.tokens_per_step() / step / self.par.tp as f64)
    }

    /// Expected number of distinct experts (of `experts`) that `tokens` top-`k` routings hit.
    pub fn distinct_experts(experts: f64, top_k: f64, tokens: f64) -> f64 {
        if tokens <= 0.0 {
            return 0.0;
        }
        experts * (1.0 - (1.0 - top_k / experts).powf(tokens))
    }

    /// Time of one iteration over `b`.
    ///
    /// With `overlap_comm` the batch runs as two micro-batches that alternate, layer by
    /// layer, between compute and communication (SGLang/DeepSeek two-batch overlap): each
    /// half streams the weights again, and the step takes `2 · max(compute, comm)` of one
    /// half.
    ///
    /// The host loop (scheduling, input preparation, sampling and response handling, in
    /// Python, per sequence) runs one iteration ahead of the GPU, so it is hidden until it
    /// takes longer than the GPU's iteration; then the iteration takes the host's time
    /// (`host_per_seq_s` × the busiest rank's sequences) and the excess is counted as
    /// overhead.
    pub fn iteration(&self, b: &Batch) -> IterTime {
        self.iteration_memo(b, None, &mut IterMemo::off())
    }

    /// `iteration` where the busiest attention-DP rank is known (`BusiestRank`): its decode
    /// contexts set the attention core, its sequences the host-loop floor, its tokens the
    /// rows of the attention-side GEMMs and its decode sequences the CUDA graph's size.
    /// `None`: the statistical estimate (`busiest_context_factor`) and the mean rank's
    /// sequences and tokens.
    pub fn iteration_on_ranks(&self, b: &Batch, busiest: Option<&BusiestRank>) -> IterTime {
        self.iteration_memo(b, busiest, &mut IterMemo::off())
    }

    /// As [`Self::iteration_on_ranks`], with the parts that depend only on the batch's
    /// token and sequence counts taken from `memo` where it holds them (a simulation's
    /// iterations repeat the same counts): the same result, computed once per distinct
    /// count. `memo` must come from [`IterMemo::new`] and serve only this model, unchanged
    /// since.
    pub fn iteration_memo(
        &self,
        b: &Batch,
        busiest: Option<&BusiestRank>,
        memo: &mut IterMemo,
    ) -> IterTime {
        let dp = self.par.attention_dp as f64;
        let f = match busiest {
            Some(r) if dp > 1.0 && b.decode_ctx > 0.0 => {
                (dp * r.decode_ctx / b.decode_ctx).max(1.0)
            }
            Some(_) => 1.0,
            None => self.busiest_context_factor_memo(b, memo),
        };
        // The busiest rank's contexts: their spread scaled with their mean (it still sets
        // the windowed layers' spans, `attended_context`); its rows, where known.
        let (rank_decode_seqs, rank_tokens) = match busiest {
            Some(r) if dp > 1.0 => (r.decode_seqs, r.tokens),
            _ => (b.rank_decode_seqs, b.rank_tokens),
        };
        let b = &Batch {
            decode_ctx: b.decode_ctx * f,
            decode_ctx_sq: b.decode_ctx_sq * f * f,
            rank_decode_seqs,
            rank_tokens,
            ..*b
        };
        let mut t = if self.par.pp > 1 {
            self.pipeline_cycle(b, memo)
        } else {
            self.iteration_gpu(b, memo)
        };
        let rank_seqs = match busiest {
            Some(r) => r.seqs,
            None => ((b.decode_seqs + b.prefill_seqs) / dp).ceil(),
        };
        let host = self.host_per_seq_s * rank_seqs;
        if host > t.total_s {
            t.overhead_s += host - t.total_s;
            t.total_s = host;
        }
        t
    }

    /// How far the busiest attention-DP rank's decode context exceeds the mean rank's.
    /// The ranks hold equal numbers of sequences (TensorRT-LLM and SGLang hand new requests
    /// to the least-loaded rank) drawn from the running ones, so a rank's context is a sum
    /// of `n = seqs / attention_dp` draws with the running sequences' mean `μ` and spread
    /// `σ`; the busiest of `dp` such sums exceeds the mean by `E[max of dp normals] · σ /
    /// (μ √n)` (normal approximation of the sums; at most `dp`, one rank holding all).
    /// 1 without attention DP or without the contexts' squares (`Batch::decode_ctx_sq`).
    pub fn busiest_context_factor(&self, b: &Batch) -> f64 {
        self.busiest_context_factor_memo(b, &mut IterMemo::off())
    }

    /// As [`Self::busiest_context_factor`], with the expected maximum of `attention_dp`
    /// standard normals from `memo`.
    fn busiest_context_factor_memo(&self, b: &Batch, memo: &mut IterMemo) -> f64 {
        let dp = self.par.attention_dp.max(1) as u64;
        if dp <= 1 || b.decode_seqs < 2.0 || b.decode_ctx <= 0.0 || b.decode_ctx_sq <= 0.0 {
            return 1.0;
        }
        let n = b.context_seqs();
        let mean = b.decode_ctx / n;
        let sd = (b.decode_ctx_sq / n - mean * mean).max(0.0).sqrt();
        let per_rank = (n / dp as f64).max(1.0);
        (1.0 + memo.dp_max_z(self) * sd / (mean * per_rank.sqrt())).min(dp as f64)
    }

    /// One iteration of every running sequence under pipeline parallelism: the batch runs
    /// as `pp` micro-batches (each a `1/pp` share of the sequences and prompt tokens), all
    /// in flight at once, so every stage works on one of them at a time. A micro-batch
    /// comes back to the first stage (its token sampled on the last) after
    /// `max(pp × busiest stage, Σ stages + pp sends)`: the busiest stage holds
    /// `⌈layers / pp⌉` layers and the LM head, and each stage boundary sends the
    /// micro-batch's hidden states (the last stage's sampled tokens return with the same
    /// latency). Summed over the stages, the layers of one micro-batch cost what the whole
    /// model costs for `1/pp` of the batch (`iteration_gpu`); the host loop runs once per
    /// micro-batch on every stage (TensorRT-LLM's pipeline executor has no overlap
    /// scheduler), so the cycle carries `pp` iteration overheads.
    ///
    /// Sources: TensorRT-LLM `PyExecutor._executor_loop_pp` (one micro-batch per stage in
    /// flight, `num_micro_batches = pp_size`, sampled tokens sent back from the last
    /// rank); vLLM's pipeline-parallel engine (one virtual engine per stage, each with its
    /// own batch). Weights and KV cache are cut by layer (`weight_bytes_per_gpu`,
    /// `kv_bytes_per_token_per_gpu`).
    fn pipeline_cycle(&self, b: &Batch, memo: &mut IterMemo) -> IterTime {
        let q = self.par.pp.max(1) as f64;
        let micro = Batch {
            decode_seqs: b.decode_seqs / q,
            decode_ctx: b.decode_ctx / q,
            decode_ctx_sq: b.decode_ctx_sq / q,
            decode_ctx_seqs: b.decode_ctx_seqs / q,
            prefill_tokens: b.prefill_tokens / q,
            prefill_pairs: b.prefill_pairs / q,
            prefill_done: b.prefill_done / q,
            prefill_seqs: b.prefill_seqs / q,
            rank_decode_seqs: b.rank_decode_seqs / q,
            rank_tokens: b.rank_tokens / q,
        };
        let full = self.iteration_gpu(&micro, memo);
        let head = memo.lm_head(self, &micro);
        let head = head.min(full.gemm_s);
        // The busiest stage's share of the layers against an even cut (1 when pp divides).
        let uneven = q * self.stage_layers() as f64 / self.model.layers.max(1) as f64;
        let dp = self.par.attention_dp.max(1) as f64;
        let draft = self.spec.map(|s| s.draft_tokens as f64).unwrap_or(0.0);
        let rank_tokens = if micro.rank_tokens > 0.0 {
            micro.rank_tokens
        } else {
            (micro.decode_seqs * (1.0 + draft) + micro.prefill_tokens) / dp
        };
        let send = memo.pp_send(self, rank_tokens);
        let layers = full.total_s - full.overhead_s - head;
        let bound_by_stage = uneven * layers + q * head;
        let bound_by_trip = layers + head + q * send;
        let overhead_s = q * full.overhead_s;
        let t = if bound_by_stage >= bound_by_trip {
            IterTime {
                gemm_s: uneven * (full.gemm_s - head) + q * head,
                attention_s: uneven * full.attention_s,
                memory_s: uneven * full.memory_s,
                comm_s: uneven * full.comm_s,
                overhead_s,
                total_s: 0.0,
            }
        } else {
            IterTime {
                comm_s: full.comm_s + q * send,
                overhead_s,
                total_s: 0.0,
                ..full
            }
        };
        IterTime {
            total_s: t.gemm_s + t.attention_s + t.memory_s + t.comm_s + t.overhead_s,
            ..t
        }
    }

    fn iteration_gpu(&self, b: &Batch, memo: &mut IterMemo) -> IterTime {
        if b.prefill_tokens <= 0.0 && b.decode_seqs > 0.0 && !self.graph_batch_sizes.is_empty() {
            let padded = self.padded_decode_seqs_on(b.decode_seqs, b.rank_decode_seqs);
            if padded > b.decode_seqs {
                // Padding rows: GEMM rows without context (decode_ctx unchanged). Every rank
                // runs the graph's size, the busiest one too.
                let (rank_decode_seqs, rank_tokens) = if b.rank_decode_seqs > 0.0 {
                    let size = padded / self.par.attention_dp.max(1) as f64;
                    (size, size * (1.0 + self.draft_tokens()))
                } else {
                    (0.0, 0.0)
                };
                return self.iteration_unpadded(
                    &Batch {
                        decode_seqs: padded,
                        decode_ctx_seqs: b.context_seqs(),
                        rank_decode_seqs,
                        rank_tokens,
                        ..*b
                    },
                    memo,
                );
            }
        }
        self.iteration_unpadded(b, memo)
    }

    /// Draft tokens a decoding sequence adds to each step (0 without speculative decoding).
    fn draft_tokens(&self) -> f64 {
        self.spec.map(|s| s.draft_tokens as f64).unwrap_or(0.0)
    }

    fn iteration_unpadded(&self, b: &Batch, memo: &mut IterMemo) -> IterTime {
        let tokens = b.decode_seqs + b.prefill_tokens;
        if !self.overlap_comm || tokens < 2.0 {
            return self.sequential(b, memo).0;
        }
        if b.prefill_tokens <= 0.0 && self.par.ep > 1 && self.model.moe.is_some() {
            return self.decode_two_batch_overlap(b, memo);
        }
        let half = Batch {
            decode_seqs: b.decode_seqs / 2.0,
            decode_ctx: b.decode_ctx / 2.0,
            decode_ctx_sq: b.decode_ctx_sq / 2.0,
            decode_ctx_seqs: b.decode_ctx_seqs / 2.0,
            prefill_tokens: b.prefill_tokens / 2.0,
            prefill_pairs: b.prefill_pairs / 2.0,
            prefill_done: b.prefill_done / 2.0,
            prefill_seqs: (b.prefill_seqs / 2.0).max(b.prefill_seqs.min(1.0)),
            rank_decode_seqs: b.rank_decode_seqs / 2.0,
            rank_tokens: b.rank_tokens / 2.0,
        };
        let h = self.sequential(&half, memo).0;
        let compute = h.gemm_s + h.attention_s + h.memory_s;
        // Hidden communication still takes SMs and HBM bandwidth from the compute it hides
        // under (`efficiency.comm_overlap_slowdown`).
        let slowed = compute + self.acc.efficiency.overlap_slowdown() * compute.min(h.comm_s);
        let step = slowed.max(h.comm_s);
        IterTime {
            gemm_s: 2.0 * h.gemm_s,
            attention_s: 2.0 * h.attention_s,
            memory_s: 2.0 * h.memory_s,
            comm_s: 2.0 * (step - compute),
            overhead_s: h.overhead_s,
            total_s: 2.0 * step + h.overhead_s,
        }
    }

    /// A decode-only iteration under DeepSeek's decode two-batch overlap, which SGLang
    /// reproduces: the batch runs as two halves, and in every MoE
    /// layer each half's dispatch hides only under the shared experts and the other half's
    /// MLA projections (ATTN-0), its combine only under the other half's core attention,
    /// output projection and gate (ATTN-1), while the routed-expert MLP overlaps no
    /// communication. One MoE layer takes `2·[max(shared + pre, dispatch) + mlp +
    /// max(core, combine)]` of one half; dense layers, the TP all-reduces and the draft
    /// module run in turn for both halves; the LM head runs once over the whole batch
    /// (SGLang splits only the decoder layers). Over RDMA (an EP group that leaves the
    /// scale-up domain) the low-latency all-to-all posts RDMA writes and holds no SMs while
    /// in flight, so hidden communication does not slow the compute it hides under; within
    /// one NVLink domain its warps copy the tokens with SM loads and stores (DeepEP
    /// `csrc/kernels/legacy/internode_ll.cu`: `UNROLLED_WARP_COPY` to NVLink-reachable peers,
    /// `nvshmemi_ibgda_put_nbi_warp` to the others), and the training model's
    /// `efficiency.comm_overlap_slowdown` slows the compute it hides under, as in the
    /// generic overlap.
    ///
    /// Sources:
    /// - deepseek-ai/profile-data README and `assets/decode.jpg` (Feb 2025): decoding (EP128,
    ///   TP1, batch 128 per GPU) runs two micro-batches; per layer the computation stream runs
    ///   SHARED(0), ATTN-0(1), MLP(0), ATTN-1(1), SHARED(1), ATTN-0(0), MLP(1), ATTN-1(0), with
    ///   DISPATCH(0) under SHARED(0)+ATTN-0(1), COMBINE(0) under ATTN-1(1), and the same for
    ///   micro-batch 1 (ATTN-0: "MLA down/up projection and other ops after combine all-to-all
    ///   and before core attention"; ATTN-1: "core attention, attention output projection and
    ///   MoE routing gate"); "the all-to-all communication during decoding does not occupy GPU
    ///   SMs: after RDMA messages are issued, all GPU SMs are freed".
    /// - SGLang `operations_strategy.py` `_compute_moe_deepseek_blog_decode`: stages
    ///   [prepare_attn + attn.op_prepare] | [attn.op_core + gate + select_experts] |
    ///   [dispatch_a + shared_experts] | [dispatch_b + experts + combine_a] | [combine_b] |
    ///   [output, which runs with the next layer's first stage: no yield between layers],
    ///   the second micro-batch two stages behind (`tbo_delta_stages=2`): the same pairing.
    /// - LMSYS blog 2025-05-05 (96 H100): "SGLang's decode kernel breakdown aligns closely with
    ///   DeepSeek's"; its combine "appears 2x slower than DeepSeek's due to shorter attention
    ///   computation, causing communication kernels to busy-wait" (the combine hides only under
    ///   ATTN-1); decode communication kernels "either fully utilize SMs (during send/receive)
    ///   or none (during inflight waiting), avoiding resource contention with computation".
    fn decode_two_batch_overlap(&self, b: &Batch, memo: &mut IterMemo) -> IterTime {
        let half = Batch {
            decode_seqs: b.decode_seqs / 2.0,
            decode_ctx: b.decode_ctx / 2.0,
            decode_ctx_sq: b.decode_ctx_sq / 2.0,
            decode_ctx_seqs: b.decode_ctx_seqs / 2.0,
            rank_decode_seqs: b.rank_decode_seqs / 2.0,
            rank_tokens: b.rank_tokens / 2.0,
            ..*b
        };
        let (h, st) = self.sequential(&half, memo);
        let full = memo.lm_head(self, b);
        let moe_layers = self.model.moe_layers() as f64;
        let compute = h.gemm_s + h.attention_s + h.memory_s;
        let moe_compute = moe_layers * (st.pre + st.core + st.shared + st.mlp);
        let other = compute - moe_compute - st.lm_head;
        let tp_comm = h.comm_s - moe_layers * (st.dispatch + st.combine);
        let sm_share = if self.ep_over_rdma() {
            0.0
        } else {
            self.acc.efficiency.overlap_slowdown()
        };
        let hide = |c: f64, m: f64| (c + sm_share * c.min(m)).max(m);
        let stage = hide(st.shared + st.pre, st.dispatch) + st.mlp + hide(st.core, st.combine);
        let step = 2.0 * (moe_layers * stage + other + tp_comm) + full;
        let compute_all = 2.0 * (compute - st.lm_head) + full;
        IterTime {
            gemm_s: 2.0 * (h.gemm_s - st.lm_head) + full,
            attention_s: 2.0 * h.attention_s,
            memory_s: 2.0 * h.memory_s,
            comm_s: step - compute_all,
            overhead_s: h.overhead_s,
            total_s: step + h.overhead_s,
        }
    }

    /// The EP group leaves the scale-up domain: its all-to-all crosses the scale-out NICs.
    pub fn ep_over_rdma(&self) -> bool {
        self.ep_span
            .as_ref()
            .is_some_and(|g| g.spans.iter().skip(1).any(|&s| s > 1))
    }

    /// Sampling tokens of the busiest attention rank: its decode tokens (drafts included;
    /// the even split where not known) and an even share of the prompts that finish.
    fn lm_head_rows(&self, b: &Batch) -> f64 {
        let dp = self.par.attention_dp as f64;
        let draft = self.draft_tokens();
        if b.rank_decode_seqs > 0.0 {
            b.rank_decode_seqs * (1.0 + draft) + b.prefill_done / dp
        } else {
            (b.decode_seqs * (1.0 + draft) + b.prefill_done) / dp
        }
    }

    /// The LM head over `logits` rows on one rank (bf16 weights, vocab sharded over TP).
    fn lm_head_time(&self, logits: f64) -> f64 {
        self.weight_gemm(
            Precision::Bf16,
            logits,
            self.model.vocab as f64 * self.model.hidden as f64 / self.par.tp as f64,
            1.0,
        )
    }

    /// One iteration with every collective exposed, and the parts of one MoE layer that the
    /// decode two-batch overlap schedules (`MoeStages`).
    fn sequential(&self, b: &Batch, memo: &mut IterMemo) -> (IterTime, MoeStages) {
        let m = &self.model;
        let acc = &self.acc;
        let dp = self.par.attention_dp as f64;
        let draft = self.spec.map(|s| s.draft_tokens as f64).unwrap_or(0.0);
        let dec_tokens = b.decode_seqs * (1.0 + draft);
        let tokens = dec_tokens + b.prefill_tokens;
        if tokens <= 0.0 {
            return (IterTime::default(), MoeStages::default());
        }
        // Tokens on the busiest attention rank: decode sequences spread evenly; prompts
        // are whole units, so fewer prompts than ranks cannot use every rank.
        let prefill_ranks = if b.prefill_seqs > 0.0 {
            b.prefill_seqs.min(dp).max(1.0)
        } else {
            dp
        };
        let pdp = prefill_ranks;
        let ov = acc.efficiency.gemm_overhead_us * 1e-6;

        let TokenParts {
            attn_post_gemm,
            attn_gemm,
            norm_mem,
            mla_kernels,
            tp_ar,
            dense_gemm,
            dense_act,
            moe_t,
            moe_comm,
            moe_quant,
            router,
            mut stages,
            lm_head,
        } = memo.token_parts(self, b);
        let mut attn_core = 0.0;
        if b.decode_seqs > 0.0 {
            let (dq, dv) = self.dims_decode;
            let ctx = self.attended_context(b.context_seqs(), b.decode_ctx, b.decode_ctx_sq);
            let flops = 2.0 * self.heads_gpu * (dq + dv) * ctx / dp * (1.0 + draft);
            let bytes = ctx / dp * self.kv_token_layer * self.decode_kv_reads;
            let math = if self.fp8_decode_attention {
                Precision::Fp8
            } else {
                Precision::Bf16
            };
            let compute = flops / (peak_tflops(acc, math) * 1e12 * acc.efficiency.attention_fwd);
            attn_core += compute.max(bytes / self.hbm_bps) + ov;
        }
        if b.prefill_tokens > 0.0 {
            let (dq, dv) = self.dims_prefill;
            let flops = |pairs: f64| 2.0 * self.heads_gpu * (dq + dv) * pairs / pdp;
            // The kernel's span: causal attention over the prompts' mean length.
            let seq = (2.0 * b.prefill_pairs / b.prefill_tokens).max(1.0);
            // Windowed layers: each query attends to at most `window` positions; a sliding
            // window narrower than the prompts is a band (the step model's band form),
            // a chunked one causal attention over its chunks.
            let (pairs, compute) = match self.window {
                Some((w, f)) => {
                    let local = self
                        .local_attention(w)
                        .prefill_pairs(b.prefill_pairs, b.prefill_tokens);
                    let full = b.prefill_pairs * (1.0 - f);
                    let local_t = if !self.window_chunked && seq > w {
                        attention_band_fwd_time(acc, flops(local * f), w, dq + dv)
                    } else {
                        let seq_local = (2.0 * local / b.prefill_tokens).max(1.0);
                        attention_fwd_time(acc, flops(local * f), seq_local, dq + dv)
                    };
                    let full_t = if full > 0.0 {
                        attention_fwd_time(acc, flops(full), seq, dq + dv)
                    } else {
                        0.0
                    };
                    (full + local * f, full_t + local_t)
                }
                None => (
                    b.prefill_pairs,
                    attention_fwd_time(acc, flops(b.prefill_pairs), seq, dq + dv),
                ),
            };
            // Fused attention reads the cached context once per tile of
            // `PREFILL_QUERY_TILE` queries.
            attn_core += (compute * self.compute_pace)
                .max(pairs / PREFILL_QUERY_TILE / pdp * self.kv_token_layer / self.hbm_bps);
        }
        if m.moe.is_some() {
            stages.core = attn_core + attn_post_gemm + router + 2.0 * ov;
        }
        let layers = m.layers as f64;
        let moe_layers = m.moe_layers() as f64;
        let dense_layers = layers - moe_layers;
        let attention_s = layers * attn_core;
        let mut gemm_s = layers * attn_gemm + dense_layers * dense_gemm + moe_layers * moe_t;
        // Memory-bound kernels pay the same fixed launch-and-tail cost as a GEMM: per layer
        // the norms, rotary + KV append, residual and activation (MLA layers also their two
        // latent norms and the cache write); MoE layers add the router top-k, token permute
        // and un-permute.
        let kernels = layers * (DENSE_LAYER_KERNELS + mla_kernels) + moe_layers * MOE_EXTRA_KERNELS;
        let memory_s =
            layers * norm_mem + dense_layers * dense_act + moe_layers * moe_quant + kernels * ov;
        // TP all-reduce after attention on every layer, after the MLP on dense layers and on
        // MoE layers without EP (TP-sharded experts reduce like a dense MLP).
        let mlp_ar_layers = if self.par.ep > 1 {
            dense_layers
        } else {
            layers
        };
        let comm = (layers + mlp_ar_layers) * tp_ar + moe_layers * moe_comm;

        // LM head over the tokens that sample (bf16 weights, vocab sharded over TP).
        stages.lm_head = lm_head;
        gemm_s += lm_head;

        // Speculative decoding: the draft (MTP) module runs one layer per draft token.
        if draft > 0.0 && b.decode_seqs > 0.0 {
            let per_layer = (attn_gemm + attn_core + norm_mem)
                + if moe_layers > 0.0 { moe_t } else { dense_gemm };
            gemm_s += draft * per_layer;
        }

        let compute = gemm_s + attention_s + memory_s;
        let overhead_s = self.overhead_s;
        (
            IterTime {
                gemm_s,
                attention_s,
                memory_s,
                comm_s: comm,
                overhead_s,
                total_s: compute + comm + overhead_s,
            },
            stages,
        )
    }

    /// The parts of `sequential` that depend only on the token and sequence counts of `b`
    /// (`decode_seqs`, `prefill_tokens`, `prefill_seqs`, `prefill_done`, and the busiest
    /// rank's `rank_decode_seqs` and `rank_tokens`): everything but
    /// the attention core, which also depends on the contexts. `b` carries tokens.
    fn token_parts(&self, b: &Batch) -> TokenParts {
        let m = &self.model;
        let acc = &self.acc;
        let tp = self.par.tp as f64;
        let dp = self.par.attention_dp as f64;
        let gpus = self.par.stage_gpus() as f64;
        let h = m.hidden as f64;
        let draft = self.spec.map(|s| s.draft_tokens as f64).unwrap_or(0.0);
        let dec_tokens = b.decode_seqs * (1.0 + draft);
        let tokens = dec_tokens + b.prefill_tokens;
        if tokens <= 0.0 {
            return TokenParts::default();
        }
        // Tokens on the busiest attention rank: decode sequences spread evenly; prompts
        // are whole units, so fewer prompts than ranks cannot use every rank.
        let prefill_ranks = if b.prefill_seqs > 0.0 {
            b.prefill_seqs.min(dp).max(1.0)
        } else {
            dp
        };
        // Where the caller knows each rank's batch, the busiest rank's own tokens
        // (`Batch::rank_tokens`): it runs them through the same GEMMs, and every MoE layer
        // waits for it.
        let t_r = if b.rank_tokens > 0.0 {
            b.rank_tokens
        } else {
            dec_tokens / dp + b.prefill_tokens / prefill_ranks
        };
        let rank_dec_tokens = if b.rank_decode_seqs > 0.0 {
            b.rank_decode_seqs * (1.0 + draft)
        } else {
            dec_tokens / dp
        };
        let ov = acc.efficiency.gemm_overhead_us * 1e-6;

        // --- attention block (every layer)
        // The part after the core (MLA's absorbed value up-projection and the output
        // projection), by weight share: the rest (query and key/value projections) runs
        // before it. Each share is priced at its own precision (NVIDIA's DeepSeek-R1
        // NVFP4 v2 checkpoint quantises only `o_proj` of the attention), at the shape of
        // the whole block, so that one precision throughout gives one block's time.
        let whole = |p: Precision| self.weight_gemm(p, t_r, self.attn_rank_params, self.attn_gemms);
        let attn_whole = whole(self.prec.attention);
        let out_whole = if self.prec.attention_out == self.prec.attention {
            attn_whole
        } else {
            whole(self.prec.attention_out)
        };
        let (post_share, out_share) = (
            self.attn_post_params / tp / self.attn_rank_params,
            self.attn_out_params / tp / self.attn_rank_params,
        );
        let attn_pre_gemm = attn_whole * (1.0 - post_share);
        let attn_post_gemm = attn_whole * (post_share - out_share) + out_whole * out_share;
        let attn_gemm = attn_pre_gemm + attn_post_gemm;
        // Norms, rotary, residuals: about 10 reads/writes of the hidden state per token.
        // An fp8 decode attention kernel takes its queries in fp8: the rotary kernel reads
        // every decode token's bf16 queries (`heads × d_qk`; MLA's absorbed queries are 10×
        // the hidden state) and writes them quantised (SGLang's `RopeQuantizeKernel`,
        // TensorRT-LLM's fused MLA rope/quantise generation kernel).
        let q_quant = if self.fp8_decode_attention {
            rank_dec_tokens * self.heads_gpu * self.dims_decode.0 * (self.act_bytes + 1.0)
        } else {
            0.0
        };
        let norm_mem = (10.0 * t_r * h * self.act_bytes + q_quant) / self.small_bps;
        let mla_kernels = if m.mla.is_some() {
            MLA_EXTRA_KERNELS
        } else {
            0.0
        };
        let tp_ar = self.coll(CollOp::AllReduce, t_r * h * self.act_bytes, &self.tp_span);

        // --- dense MLP layer
        let dense_gemm = self.weight_gemm(self.prec.weights, t_r, self.dense_mlp_params / tp, 2.0);
        let g = if m.gated_mlp { 3.0 } else { 2.0 };
        let dense_act = g * t_r * m.dense_ffn() as f64 / tp * self.act_bytes / self.small_bps;

        // --- MoE layer
        let mut stages = MoeStages::default();
        let mut moe_quant = 0.0;
        let mut router_s = 0.0;
        let (moe_t, moe_comm) = match &m.moe {
            Some(moe) => {
                // Padded to the busiest attention rank's tokens on every rank
                // (`moe_dp_padding`), or the tokens the ranks hold.
                let tokens = if self.moe_dp_padding {
                    tokens.max(t_r * dp)
                } else {
                    tokens
                };
                let e = moe.experts as f64;
                let k = moe.top_k as f64;
                let ep = self.par.ep as f64;
                let etp = self.par.etp() as f64;
                let assign = tokens * k / ep;
                // The busiest EP rank receives `hot` of them (expert-load imbalance,
                // `myriad_model::moe_balance`); every rank waits for it at the combine.
                let imbalance = self.busiest_rank_factor(assign);
                let hot = assign * imbalance;
                let distinct = Self::distinct_experts(e, k, tokens) / ep;
                let shard = self.expert_params / etp;
                // Tokens per activated local expert, padded to whole tiles: 64 rows for
                // the native grouped GEMMs; the weight-only kernel sizes its tile to the
                // mean tokens per expert (`widened_expert_tile_rows`).
                let per_expert = hot / distinct.max(1.0);
                let widened = compute_precision(acc, self.prec.experts) != self.prec.experts;
                let tile = if widened {
                    widened_expert_tile_rows(assign / (e / ep))
                } else {
                    GROUPED_GEMM_TILE_M
                };
                let padded = (per_expert / tile).ceil() * tile;
                let compute = gemm_time(
                    acc,
                    compute_precision(acc, self.prec.experts),
                    padded,
                    shard / h,
                    h,
                    distinct.max(1.0),
                )
                .max(widened_gemm_floor(
                    acc,
                    self.prec.experts,
                    2.0 * hot * shard,
                )) * self.compute_pace;
                let memory =
                    distinct * shard * bytes_of(self.prec.experts) / self.gemm_stream_bps + ov;
                let routed = compute.max(memory) + ov;
                let shared = self.weight_gemm(self.prec.weights, t_r, self.shared_params / tp, 2.0);
                let router = self.weight_gemm(Precision::Bf16, t_r, h * e, 1.0);
                router_s = router;
                // Token bytes on the wire when the tokens are all-gathered: NVFP4 values and
                // scales for NVFP4 experts, else 16-bit.
                let gathered_bytes = if self.prec.experts == Precision::Fp4 {
                    bytes_of(Precision::Fp4)
                } else {
                    self.act_bytes
                };
                // After an all-gather every rank's MoE kernel reads all `tokens` (to route
                // them) and writes a bf16 output row for each (zeroed, then the experts'
                // weighted sum), which the reduce-scatter then reads.
                let gathered_io = if self.moe_gather_comm {
                    tokens * h * (gathered_bytes + 2.0 * self.act_bytes)
                } else {
                    0.0
                };
                let act = ((g * hot * moe.expert_ffn_hidden as f64 / etp
                    + 4.0 * tokens * k / gpus * h * imbalance)
                    * self.act_bytes
                    + gathered_io)
                    / self.hbm_bps;
                // NVFP4 experts on FP4 tensor cores take NVFP4 activations: a kernel of
                // its own reads every routed copy's bf16 input and writes it quantised
                // (values and per-16 scales), once before the up projection and once
                // before the down projection (SGLang's DeepSeek decode step on GB200 runs
                // `cvt_fp16_to_fp4_expert` and `cvt_fp16_to_fp4` per layer: 29 and 13 us
                // at 1,024 sequences a rank, the trace behind
                // `efficiency.hbm_small_kernels`).
                moe_quant = if compute_precision(acc, self.prec.experts) == Precision::Fp4 {
                    hot * (h + moe.expert_ffn_hidden as f64 / etp)
                        * (self.act_bytes + bytes_of(Precision::Fp4))
                        / self.small_bps
                        + 2.0 * ov
                } else {
                    0.0
                };
                let (dispatch, combine) = if self.moe_gather_comm {
                    // Every rank gathers all `tokens` and reduce-scatters its experts'
                    // bf16 partial outputs for all of them: balanced traffic, whatever
                    // the routing.
                    (
                        self.coll(
                            CollOp::AllGather,
                            tokens * h * gathered_bytes,
                            &self.ep_span,
                        ),
                        self.coll(CollOp::ReduceScatter, tokens * h * 2.0, &self.ep_span),
                    )
                } else if self.par.ep > 1 {
                    // The all-to-all lasts until the busiest rank has received (dispatch)
                    // and sent back (combine) its `imbalance`-times-mean share, and until
                    // the busiest sender has sent its tokens' copies out (and taken them
                    // back): with attention data parallelism a rank that runs a prompt
                    // sends its prompt's `k` copies of every token while the others send
                    // only their decode tokens' (each GPU of a TP group its 1/tp share).
                    let recv = tokens / gpus * k * h * imbalance;
                    let send = t_r / tp * k * h;
                    let per_gpu = recv.max(send);
                    (
                        self.coll(CollOp::AllToAll, per_gpu * 1.0, &self.ep_span),
                        self.coll(CollOp::AllToAll, per_gpu * 2.0, &self.ep_span),
                    )
                } else {
                    (0.0, 0.0)
                };
                // The per-kernel costs of the layer's memory-bound kernels go with the
                // stage that runs them: input norm and rotary + KV append before the core;
                // residual + norm and router top-k after it; activation, permute and
                // un-permute with the experts (`DENSE_LAYER_KERNELS + MOE_EXTRA_KERNELS`, and
                // `MLA_EXTRA_KERNELS` before the core).
                stages = MoeStages {
                    pre: attn_pre_gemm + norm_mem + (2.0 + mla_kernels) * ov,
                    core: 0.0,
                    shared,
                    mlp: routed + act + moe_quant + 3.0 * ov,
                    dispatch,
                    combine,
                    lm_head: 0.0,
                };
                (routed + shared + router + act, dispatch + combine)
            }
            None => (0.0, 0.0),
        };

        // LM head over the tokens that sample (bf16 weights, vocab sharded over TP).
        let lm_head = self.lm_head_time(self.lm_head_rows(b));
        TokenParts {
            attn_post_gemm,
            attn_gemm,
            norm_mem,
            mla_kernels,
            tp_ar,
            dense_gemm,
            dense_act,
            moe_t,
            moe_comm,
            moe_quant,
            router: router_s,
            stages,
            lm_head,
        }
    }

    /// The parts of one MoE layer of `b` as the decode two-batch overlap schedules them
    /// (seconds; zero without MoE layers).
    pub fn moe_stages(&self, b: &Batch) -> MoeStages {
        self.sequential(b, &mut IterMemo::off()).1
    }
}

/// One MoE layer's work on the busiest rank, in the stages of DeepSeek's decode two-batch
/// overlap (`InstanceModel::decode_two_batch_overlap`), plus the iteration's LM head.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MoeStages {
    /// ATTN-0: query and key/value projections (MLA down/up and the absorbed key
    /// up-projection), norms, rotary and KV append.
    pub pre: f64,
    /// ATTN-1: core attention, value up-projection and output projection, router gate.
    pub core: f64,
    /// Shared experts.
    pub shared: f64,
    /// Routed experts: grouped GEMMs, activation, permute and un-permute.
    pub mlp: f64,
    /// Dispatch all-to-all (fp8), until the busiest rank has received its tokens.
    pub dispatch: f64,
    /// Combine all-to-all (bf16).
    pub combine: f64,
    /// The LM head over the iteration's sampling tokens (once per iteration).
    pub lm_head: f64,
}

/// The parts of [`InstanceModel::sequential`] that depend only on a batch's token and
/// sequence counts (seconds; what `token_parts` computes).
#[derive(Debug, Clone, Copy, Default)]
struct TokenParts {
    attn_post_gemm: f64,
    attn_gemm: f64,
    norm_mem: f64,
    mla_kernels: f64,
    tp_ar: f64,
    dense_gemm: f64,
    dense_act: f64,
    moe_t: f64,
    moe_comm: f64,
    moe_quant: f64,
    router: f64,
    /// One MoE layer's stages, all but `core` (which holds the attention core) and
    /// `lm_head`.
    stages: MoeStages,
    lm_head: f64,
}

/// Slots of [`IterMemo`]'s token-parts table and of its table of single values (powers of
/// two).
const MEMO_PARTS: usize = 1024;
const MEMO_VALUES: usize = 512;

/// A memo of an instance's iteration parts that depend only on token and sequence counts
/// (`InstanceModel::iteration_memo`): direct-mapped tables keyed by the counts' exact bits,
/// allocated once, so a lookup neither allocates nor changes a result (a miss computes
/// what `InstanceModel::iteration` computes, and a hit returns the value a miss stored).
/// One memo serves one model, unchanged while the memo is in use (a simulation's).
#[derive(Debug, Clone)]
pub struct IterMemo {
    /// Expected maximum of `attention_dp` standard normals (NaN until first needed).
    dp_max_z: f64,
    parts: Vec<Option<([u64; 6], TokenParts)>>,
    values: Vec<Option<([u64; 3], f64)>>,
}

impl Default for IterMemo {
    fn default() -> Self {
        Self::new()
    }
}

/// Kinds of the single values [`IterMemo`] holds.
const MEMO_LM_HEAD: u64 = 1;
const MEMO_PP_SEND: u64 = 2;

fn memo_slot(key: &[u64], slots: usize) -> usize {
    let mut h = 0u64;
    for &k in key {
        h = (h ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    (h.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32) as usize & (slots - 1)
}

impl IterMemo {
    /// An empty memo (its tables allocated now).
    pub fn new() -> Self {
        Self {
            dp_max_z: f64::NAN,
            parts: vec![None; MEMO_PARTS],
            values: vec![None; MEMO_VALUES],
        }
    }

    /// A memo that holds nothing (every lookup computes; no allocation).
    fn off() -> Self {
        Self {
            dp_max_z: f64::NAN,
            parts: Vec::new(),
            values: Vec::new(),
        }
    }

    fn dp_max_z(&mut self, m: &InstanceModel) -> f64 {
        if self.dp_max_z.is_nan() {
            self.dp_max_z = expected_max_std_normal(m.par.attention_dp.max(1) as u64);
        }
        self.dp_max_z
    }

    fn token_parts(&mut self, m: &InstanceModel, b: &Batch) -> TokenParts {
        if self.parts.is_empty() {
            return m.token_parts(b);
        }
        let key = [
            b.decode_seqs.to_bits(),
            b.prefill_tokens.to_bits(),
            b.prefill_seqs.to_bits(),
            b.prefill_done.to_bits(),
            b.rank_decode_seqs.to_bits(),
            b.rank_tokens.to_bits(),
        ];
        let i = memo_slot(&key, self.parts.len());
        match &self.parts[i] {
            Some((k, p)) if *k == key => *p,
            _ => {
                let p = m.token_parts(b);
                self.parts[i] = Some((key, p));
                p
            }
        }
    }

    fn value(&mut self, key: [u64; 3], f: impl FnOnce() -> f64) -> f64 {
        if self.values.is_empty() {
            return f();
        }
        let i = memo_slot(&key, self.values.len());
        match &self.values[i] {
            Some((k, v)) if *k == key => *v,
            _ => {
                let v = f();
                self.values[i] = Some((key, v));
                v
            }
        }
    }

    /// The LM head's time over the sampling tokens of `b` (the busiest rank's).
    fn lm_head(&mut self, m: &InstanceModel, b: &Batch) -> f64 {
        let rows = m.lm_head_rows(b);
        self.value([MEMO_LM_HEAD, rows.to_bits(), 0], || m.lm_head_time(rows))
    }

    /// The send of `rank_tokens` tokens' hidden states to the next pipeline stage.
    fn pp_send(&mut self, m: &InstanceModel, rank_tokens: f64) -> f64 {
        self.value([MEMO_PP_SEND, rank_tokens.to_bits(), 0], || {
            m.coll(
                CollOp::SendRecv,
                rank_tokens * m.model.hidden as f64 / m.par.tp as f64 * m.act_bytes,
                &m.pp_span,
            )
        })
    }
}
