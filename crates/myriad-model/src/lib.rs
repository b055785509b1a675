//! Transformer architectures and their arithmetic: parameters, FLOPs, GEMM shapes and
//! activation memory, layer by layer.
//!
//! Invariants:
//! - Pure arithmetic: no IO, no allocation on the per-layer paths except the op lists.
//! - Counts are exact for the architecture described (GQA/MQA, MLA, SwiGLU, MoE with
//!   shared experts and dense-first layers), not the 6·N·D rule of thumb; `6·N·D` appears
//!   only as a cross-check in tests.
//! - FLOPs count a multiply-add as 2 FLOPs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod flops;
pub mod memory;
pub mod moe_balance;
pub mod ops;
pub mod params;

pub use flops::ModelFlops;
pub use memory::ActivationMemory;
pub use moe_balance::Placement;
pub use ops::{CpComm, CrossEntropy, EpDispatcher, Fp8Recipe, LayerKind, Op, OpKind, Shard};
pub use params::ParamCount;

/// Most transformer layers (and multi-token-prediction modules) a model may have: 130
/// times Llama 3 405B's 126, above the 1,000-layer DeepNet; the training plan's choices
/// walk every layer count.
pub const MAX_LAYERS: u32 = 16_384;

/// A decoder-only transformer, as the `model` block of `myriad/1` and `myriad-validation/1`
/// describes it (all fields resolved).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Transformer {
    pub name: String,
    pub layers: u32,
    pub hidden: u32,
    /// MLP inner size of dense layers (per expert: `moe.expert_ffn_hidden`).
    pub ffn_hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// Per-head dimension; `hidden / heads` when absent (Qwen3 and gpt-oss differ).
    #[serde(default)]
    pub head_dim: Option<u32>,
    pub vocab: u32,
    pub seq_len: u32,
    /// SwiGLU-style MLP with three weight matrices.
    pub gated_mlp: bool,
    /// Input embedding and output layer share weights.
    #[serde(default)]
    pub tied_embeddings: bool,
    #[serde(default)]
    pub moe: Option<Moe>,
    #[serde(default)]
    pub mla: Option<Mla>,
    /// Sliding-window (locally banded) attention on some layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<SlidingWindow>,
    /// A learned sink logit per head joins every softmax's denominator (gpt-oss: "each
    /// attention head has a learned bias in the denominator of the softmax", model card).
    /// It costs nothing forward; backward, the kernel also forms each sink's gradient, a
    /// reduction over every query row of the head (`OpKind::SinkGrad`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub attention_sinks: bool,
    /// Multi-token prediction modules trained beside the model (DeepSeek-V3 §2.2, depth
    /// D = 1; Megatron-Core `mtp_num_layers`): each adds, per token, a projection of the
    /// normed hidden state and the next token's embedding (2h → h), one transformer layer
    /// of the model's last kind (MoE for DeepSeek-V3), and the shared output head and loss
    /// once more. They sit on the last pipeline stage. Not part of `layers`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtp_layers: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Sliding-window attention: a windowed layer's query attends to itself and the
/// `window - 1` positions before it, so its scores, its kernel's work and its KV reads are
/// bounded by the window whatever the context. gpt-oss alternates windowed and full layers
/// (`window: 128, full_every: 2`); Gemma 3 keeps one full layer in six (`full_every: 6`);
/// Mistral 7B windows every layer (no `full_every`).
///
/// With `chunked`, the local layers attend within fixed chunks of `window` tokens instead
/// (Llama 4's `attention_chunk_size` 8192 with a global, NoPE layer every fourth: `window:
/// 8192, full_every: 4, chunked: true`): the query at position p sees positions
/// ⌊p / window⌋·window … p, so a long sequence's queries see `window / 2` keys on average.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindow {
    /// Positions each query of a windowed layer attends to (itself included); with
    /// `chunked`, the chunk length.
    pub window: u32,
    /// Every `full_every`-th layer (the 2nd, 4th, ... for 2) attends to the whole context;
    /// absent: every layer is windowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_every: Option<u32>,
    /// Fixed chunks (Llama 4) rather than a window sliding with the query.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunked: bool,
}

impl SlidingWindow {
    /// Whether layer `i` (0-based) is windowed.
    pub fn windows_layer(&self, i: u32) -> bool {
        match self.full_every {
            Some(n) if n > 0 => !(i + 1).is_multiple_of(n),
            _ => true,
        }
    }

    /// Causal (query, key) pairs of a sequence of `seq` tokens in a windowed layer, as a
    /// share of the `seq²` square (a full causal layer: 1/2, the convention of the step
    /// model): each query attends to min(position + 1, window) keys, which sums to
    /// `window·seq − window²/2` once `seq ≥ window`.
    pub fn causal_fraction(&self, seq: f64) -> f64 {
        let w = self.window as f64;
        if seq <= 0.0 || w >= seq {
            return 0.5;
        }
        if self.chunked {
            // Causal within each chunk: q whole chunks of w and a last one of r tokens.
            let q = (seq / w).floor();
            let r = seq - q * w;
            return 0.5 * (q * w * w + r * r) / (seq * seq);
        }
        (w * seq - 0.5 * w * w) / (seq * seq)
    }

    /// Keys a decoding query reads in a windowed layer, on average over a batch whose
    /// contexts have mean `mean` and standard deviation `sd`, taken as spread evenly over
    /// `mean ± √3·sd` (`sd` 0: one context). A query at context `c` reads `min(c, window)`
    /// keys under a sliding window, and chunked `c − ⌊c / window⌋·window`, the part of its
    /// own chunk (a sawtooth): just past a chunk boundary very few, half a chunk on average
    /// once contexts spread over whole chunks. The mean of the exact spans, not the span of
    /// the mean context: 1,024 tokens generated after an 8,192-token prompt read 512 keys
    /// of a chunk on average, not 4,096.
    pub fn decode_span(&self, mean: f64, sd: f64) -> f64 {
        let w = self.window as f64;
        if w <= 0.0 {
            return mean.max(0.0);
        }
        let mean = mean.max(0.0);
        // Contexts are never negative: a spread wider than the mean is taken as 0 … 2·mean.
        let half = (3f64.sqrt() * sd.max(0.0)).min(mean);
        let (a, b) = (mean - half, mean + half);
        // Integral of the span over contexts 0..x.
        let integral = |x: f64| {
            if self.chunked {
                let whole = (x / w).floor();
                let r = x - whole * w;
                whole * w * w / 2.0 + r * r / 2.0
            } else if x <= w {
                x * x / 2.0
            } else {
                w * w / 2.0 + w * (x - w)
            }
        };
        if b - a < 1e-9 * w {
            // One context: its own span.
            return if self.chunked { a % w } else { a.min(w) };
        }
        (integral(b) - integral(a)) / (b - a)
    }

    /// Query-key pairs of `tokens` prompt tokens whose causal pairs with their context
    /// number `pairs`, in a windowed layer: each query sees at most the window (chunked:
    /// `window / 2` on average once a prompt spans chunks).
    pub fn prefill_pairs(&self, pairs: f64, tokens: f64) -> f64 {
        let per_query = if self.chunked {
            0.5 * self.window as f64
        } else {
            self.window as f64
        };
        pairs.min(tokens * per_query)
    }
}

/// Mixture of experts (applies to every layer after the first `dense_layers`, or with
/// `every` to every `every`-th of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Moe {
    pub experts: u32,
    pub top_k: u32,
    pub expert_ffn_hidden: u32,
    #[serde(default)]
    pub shared_experts: u32,
    /// The first layers that keep a dense MLP (DeepSeek-V3: 3).
    #[serde(default)]
    pub dense_layers: u32,
    /// MLP inner size of those dense layers; `ffn_hidden` when absent.
    #[serde(default)]
    pub dense_ffn_hidden: Option<u32>,
    /// After the dense ones, only every `every`-th layer has experts and the others a dense
    /// MLP (Llama 4 Maverick's `interleave_moe_layer_step` 2: layers 1, 3, 5, ...;
    /// Megatron-Core's `moe_layer_freq`); absent: every layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u32>,
    /// Group-limited routing (DeepSeek-V3's node-limited routing, arXiv:2412.19437 §2.1.2;
    /// `n_group` in its config, Megatron-Core `moe_router_num_groups`): the experts form
    /// this many groups of consecutive experts, and each token picks its experts inside
    /// `router_group_topk` of them only. Absent: any expert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_groups: Option<u32>,
    /// Groups a token's experts may come from (`topk_group`, `moe_router_group_topk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_group_topk: Option<u32>,
}

impl Moe {
    /// Routed experts only, in every layer: `experts` of inner size `expert_ffn_hidden`, each
    /// token routed to `top_k` of them from any group; no shared experts, no dense layers.
    ///
    /// ```
    /// let m = myriad_model::Moe::routed(128, 8, 768);
    /// assert_eq!((m.experts, m.top_k, m.shared_experts), (128, 8, 0));
    /// assert_eq!(m.router_groups, None);
    /// ```
    pub fn routed(experts: u32, top_k: u32, expert_ffn_hidden: u32) -> Moe {
        Moe {
            experts,
            top_k,
            expert_ffn_hidden,
            shared_experts: 0,
            dense_layers: 0,
            dense_ffn_hidden: None,
            every: None,
            router_groups: None,
            router_group_topk: None,
        }
    }
}

/// Multi-head latent attention (DeepSeek-V2/V3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    /// Low-rank query compression; `None` projects queries directly.
    #[serde(default)]
    pub q_lora_rank: Option<u32>,
    pub kv_lora_rank: u32,
    pub qk_nope_head_dim: u32,
    pub qk_rope_head_dim: u32,
    pub v_head_dim: u32,
}

/// Activation recomputation (Korthikanti et al. 2022).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    None,
    /// Recompute only the attention core (softmax, dropout, QK^T, attention over V).
    Selective,
    /// Store only each layer's input; recompute the whole forward in backward.
    Full,
}

/// A module that selective recompute may recompute: Megatron-Core's `--recompute-modules`
/// names (`TransformerConfig.recompute_modules`, 2025). `core_attn` is the default and what
/// `recompute: selective` alone means (Korthikanti et al. 2022). `layernorm`, `moe_act` and
/// `mla_up_proj` discard their output after the next GEMM has used it and recompute it in
/// backward (output-discarding checkpoints); `mlp`, `moe` and `shared_experts` checkpoint
/// the whole submodule, keeping only its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecomputeModule {
    /// The attention core (scores, softmax, attention over V).
    CoreAttn,
    /// The two pre-norms (attention and MLP): their outputs are not kept.
    Layernorm,
    /// The routed experts' activation function: its output is not kept.
    MoeAct,
    /// MLA's query and key-value up-projections and RoPE: the per-head Q, K, V are rebuilt
    /// from the kept latents.
    MlaUpProj,
    /// The dense MLP of dense layers, whole.
    Mlp,
    /// The MoE layer, whole: router, dispatch, experts, combine (the all-to-alls run again).
    Moe,
    /// The shared experts of MoE layers, whole.
    SharedExperts,
}

impl RecomputeModule {
    pub const ALL: [RecomputeModule; 7] = [
        RecomputeModule::CoreAttn,
        RecomputeModule::Layernorm,
        RecomputeModule::MoeAct,
        RecomputeModule::MlaUpProj,
        RecomputeModule::Mlp,
        RecomputeModule::Moe,
        RecomputeModule::SharedExperts,
    ];

    /// Megatron's name for the module.
    pub fn name(self) -> &'static str {
        match self {
            RecomputeModule::CoreAttn => "core_attn",
            RecomputeModule::Layernorm => "layernorm",
            RecomputeModule::MoeAct => "moe_act",
            RecomputeModule::MlaUpProj => "mla_up_proj",
            RecomputeModule::Mlp => "mlp",
            RecomputeModule::Moe => "moe",
            RecomputeModule::SharedExperts => "shared_experts",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of [`RecomputeModule`]s (a bit set; `Copy`, so plans stay cheap to clone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecomputeModules(u8);

impl RecomputeModules {
    /// Nothing recomputed.
    pub const NONE: RecomputeModules = RecomputeModules(0);
    /// Megatron's default selective set: the attention core only.
    pub const CORE_ATTN: RecomputeModules = RecomputeModules(1);

    pub fn of(modules: &[RecomputeModule]) -> Self {
        RecomputeModules(modules.iter().fold(0, |b, m| b | m.bit()))
    }

    pub fn contains(self, m: RecomputeModule) -> bool {
        self.0 & m.bit() != 0
    }

    pub fn with(self, m: RecomputeModule) -> Self {
        RecomputeModules(self.0 | m.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modules, in Megatron's order.
    pub fn iter(self) -> impl Iterator<Item = RecomputeModule> {
        RecomputeModule::ALL
            .into_iter()
            .filter(move |m| self.contains(*m))
    }

    /// Comma-separated Megatron names (`core_attn, layernorm`).
    pub fn names(self) -> String {
        self.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
    }

    /// Whether the forward op `name` of [`Transformer::layer_ops`] is run again in backward.
    /// `mla`: the model has multi-head latent attention (its RoPE belongs to
    /// `mla_up_proj`).
    pub fn recomputes_op(self, name: &str, mla: bool) -> bool {
        use RecomputeModule as M;
        let any = |ms: &[M]| ms.iter().any(|m| self.contains(*m));
        match name {
            "attention" | "attention_window" | "core_scores" | "core_softmax" | "core_values" => {
                any(&[M::CoreAttn])
            }
            "attn_norm" | "mlp_norm" => any(&[M::Layernorm]),
            "q_up" | "kv_up" => any(&[M::MlaUpProj]),
            "rope" => mla && any(&[M::MlaUpProj]),
            "mlp_up" | "mlp_act" | "mlp_down" => any(&[M::Mlp]),
            "expert_act" => any(&[M::MoeAct, M::Moe]),
            "router" | "moe_permute" | "expert_up" | "expert_down" => any(&[M::Moe]),
            "shared_up" | "shared_act" | "shared_down" => any(&[M::Moe, M::SharedExperts]),
            _ => false,
        }
    }
}

impl Serialize for RecomputeModules {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl Transformer {
    /// Per-head dimension of queries and keys (without MLA).
    pub fn head_dim(&self) -> u32 {
        self.head_dim.unwrap_or(self.hidden / self.heads.max(1))
    }

    /// Key/value heads one of `tp` tensor-parallel ranks holds (GQA/MQA; MLA has none):
    /// `kv_heads / tp`, but never less than one whole head. Where TP exceeds `kv_heads`
    /// (Qwen3-235B-A22B's 4 at TP 8, Llama 3 70B's 8 at TP 16) each head is replicated on
    /// `tp / kv_heads` ranks (Megatron-Core's `num_query_groups < tp`), which each project,
    /// store and exchange it whole: the rule the serving model applies to its KV cache.
    pub fn kv_heads_per_rank(&self, tp: u32) -> f64 {
        (self.kv_heads as f64 / tp.max(1) as f64).ceil().max(1.0)
    }

    /// Whether layer `i` (0-based) has a MoE MLP.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        match &self.moe {
            Some(m) => {
                i >= m.dense_layers
                    && (i - m.dense_layers + 1).is_multiple_of(m.every.unwrap_or(1).max(1))
            }
            None => false,
        }
    }

    /// Index of a layer with experts and of one with a dense MLP (the kinds' op lists are
    /// the same for every layer of a kind); `None` where the model has none of that kind.
    pub fn layer_of_kind(&self, moe: bool) -> Option<u32> {
        (0..self.layers).find(|&i| self.is_moe_layer(i) == moe)
    }

    /// Dense-MLP layers among the layer indices `[lo, hi)` (fractional bounds: a pipeline
    /// stage's share): the first `dense_layers`, then `every − 1` in every `every`.
    pub fn dense_layers_in(&self, lo: f64, hi: f64) -> f64 {
        let Some(m) = &self.moe else {
            return hi - lo;
        };
        let d = m.dense_layers as f64;
        let first = d.clamp(lo, hi) - lo;
        let k = m.every.unwrap_or(1).max(1) as f64;
        first + (hi - lo - first) * (k - 1.0) / k
    }

    /// MLP inner size of a dense layer.
    pub fn dense_ffn(&self) -> u32 {
        match &self.moe {
            Some(m) => m.dense_ffn_hidden.unwrap_or(self.ffn_hidden),
            None => self.ffn_hidden,
        }
    }

    /// Number of sliding-window layers (every layer but each `full_every`-th).
    pub fn windowed_layers(&self) -> u32 {
        match self.sliding_window.map(|w| w.full_every) {
            Some(Some(n)) if n > 0 => self.layers - self.layers / n,
            Some(_) => self.layers,
            None => 0,
        }
    }

    /// The layer a multi-token-prediction module repeats: the model's last, so its kind
    /// (MoE for DeepSeek-V3) and op list.
    pub fn mtp_layer(&self) -> u32 {
        self.layers.saturating_sub(1)
    }

    /// Number of MoE layers.
    pub fn moe_layers(&self) -> u32 {
        match &self.moe {
            Some(m) => self.layers.saturating_sub(m.dense_layers) / m.every.unwrap_or(1).max(1),
            None => 0,
        }
    }

    /// Checks the architecture is self-consistent; returns a message naming the field.
    pub fn check(&self) -> Result<(), String> {
        all_positive(&[
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("ffn_hidden", self.ffn_hidden),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("vocab", self.vocab),
            ("seq_len", self.seq_len),
        ])?;
        // The training plan walks every layer count (block recompute, offload shares,
        // pipeline splits): u32::MAX layers asked for a 32 GiB table and four billion
        // estimates.
        for (name, n) in [("layers", self.layers), ("mtp_layers", self.mtp_layers)] {
            if n > MAX_LAYERS {
                return Err(format!(
                    "{name}: {n} is more than the {MAX_LAYERS} layers supported"
                ));
            }
        }
        if self.head_dim == Some(0) {
            return Err("head_dim: must be positive, got 0".into());
        }
        if let Some(w) = &self.sliding_window {
            if w.window == 0 {
                return Err("sliding_window.window: must be positive, got 0".into());
            }
            if let Some(n) = w.full_every {
                if n < 2 {
                    return Err(format!(
                        "sliding_window.full_every: {n} leaves no layer windowed; give 2 or more, or drop sliding_window"
                    ));
                }
            }
        }
        if let Some(m) = &self.moe {
            if m.expert_ffn_hidden == 0 {
                return Err("moe.expert_ffn_hidden: must be positive, got 0".into());
            }
            if m.dense_ffn_hidden == Some(0) {
                return Err("moe.dense_ffn_hidden: must be positive, got 0".into());
            }
        }
        if let Some(m) = &self.mla {
            all_positive(&[
                ("mla.kv_lora_rank", m.kv_lora_rank),
                ("mla.qk_nope_head_dim", m.qk_nope_head_dim),
                ("mla.qk_rope_head_dim", m.qk_rope_head_dim),
                ("mla.v_head_dim", m.v_head_dim),
            ])?;
            if m.q_lora_rank == Some(0) {
                return Err("mla.q_lora_rank: must be positive, got 0 (leave it out for a full-rank query projection)".into());
            }
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!(
                "kv_heads: {} does not divide heads {}",
                self.kv_heads, self.heads
            ));
        }
        if self.head_dim.is_none() && !self.hidden.is_multiple_of(self.heads) {
            return Err(format!(
                "heads: {} does not divide hidden {} (give head_dim)",
                self.heads, self.hidden
            ));
        }
        if let Some(m) = &self.moe {
            if m.experts == 0 || m.top_k == 0 || m.top_k > m.experts {
                return Err(format!(
                    "moe.top_k: {} must be between 1 and experts {}",
                    m.top_k, m.experts
                ));
            }
            if m.dense_layers > self.layers {
                return Err(format!(
                    "moe.dense_layers: {} is more than layers {}",
                    m.dense_layers, self.layers
                ));
            }
            if m.every == Some(0) {
                return Err(
                    "moe.every: must be positive, got 0 (1 puts experts in every layer)".into(),
                );
            }
            match (m.router_groups, m.router_group_topk) {
                (None, None) => {}
                (Some(g), Some(t)) => {
                    if g == 0 || m.experts % g != 0 {
                        return Err(format!(
                            "moe.router_groups: {g} must divide the {} experts",
                            m.experts
                        ));
                    }
                    if t == 0 || t > g {
                        return Err(format!(
                            "moe.router_group_topk: {t} must be between 1 and router_groups {g}"
                        ));
                    }
                    if t * (m.experts / g) < m.top_k {
                        return Err(format!(
                            "moe.router_group_topk: {t} groups of {} experts cannot hold top_k {}",
                            m.experts / g,
                            m.top_k
                        ));
                    }
                }
                (Some(_), None) => {
                    return Err("moe.router_group_topk: missing (router_groups is given)".into())
                }
                (None, Some(_)) => {
                    return Err("moe.router_groups: missing (router_group_topk is given)".into())
                }
            }
        }
        Ok(())
    }
}

/// The first of `fields` that is zero, as `name: must be positive, got 0`.
fn all_positive(fields: &[(&str, u32)]) -> Result<(), String> {
    match fields.iter().find(|(_, v)| *v == 0) {
        Some((name, _)) => Err(format!("{name}: must be positive, got 0")),
        None => Ok(()),
    }
}
