//! Activation memory per layer and micro-batch on one rank (Korthikanti et al. 2022,
//! Table 2, generalised to GQA/MLA, gated MLPs and MoE, with fused attention kernels that
//! keep no score matrix).
//!
//! Stored per token (bf16, 2 bytes each), "/t" = divided by TP:
//! - attention block: norm input (2h, /t with SP), QKV GEMM input (2h, /t with SP),
//!   Q, K, V (2·(heads/t + 2·max(kv/t, 1))·d: a rank holds whole KV heads, replicated
//!   where TP exceeds kv_heads; or MLA's latent and per-head tensors), attention
//!   output (2·heads·d_v/t), and the softmax statistics (4·heads/t, fp32);
//! - MLP block: norm input and GEMM input (2h each, /t with SP), the up-projection output
//!   (2·g·ffn/t) and the activation output (2·ffn/t); MoE stores these per routed copy
//!   of a token (top_k), plus the router logits and the permuted input.
//!
//! Korthikanti's GPT figure is 34·s·b·h/t with SP: this gives 32·s·b·h/t for a GPT layer
//! (no dropout masks: modern runs train without dropout, and the masks are 2·s·b·h).
//! Full recompute stores only the layer input; selective recompute of the attention core
//! equals none with fused attention (the s² terms it removes do not exist). Either way the
//! backward rebuilds what a layer dropped, one layer at a time: a rank's peak holds the
//! stored tensors of every in-flight layer plus one layer's rebuilt ones
//! ([`ActivationMemory::dense_rebuilt`]; for full recompute, the layer's whole activations
//! less its stored input, Korthikanti et al. 2022 §4; selective recompute rebuilds each
//! module just before its backward, after the later modules of the layer have freed theirs). Selective
//! recompute of other modules ([`RecomputeModules`], Megatron's `recompute_modules`) drops
//! what each one would have kept: `layernorm` the two norm outputs, `moe_act` the routed
//! experts' activation outputs, `mla_up_proj` the per-head Q, K, V rebuilt from the latents;
//! `mlp`, `moe` and `shared_experts` keep only their input.

use serde::Serialize;

use crate::{CrossEntropy, Recompute, RecomputeModule, RecomputeModules, Shard, Transformer};

/// Activation bytes of one micro-batch on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct ActivationMemory {
    /// Per dense layer.
    pub dense_layer: f64,
    /// Per MoE layer.
    pub moe_layer: f64,
    /// Output head: logits in fp32 for the loss (last pipeline stage).
    pub head: f64,
    /// Recompute's working set for a dense layer: what the backward rebuilds of one layer
    /// beyond what it stored. Layers are recomputed one at a time, so a rank holds this
    /// once, for one layer of one micro-batch, on top of every in-flight layer's stored
    /// tensors (Korthikanti et al. 2022 §4: "the activations of one layer are needed at a
    /// time"). Full recompute: the layer's whole activations less its stored input.
    /// Selective: the larger of the MLP block's rebuilt modules and the attention block's
    /// less the MLP-block tensors its backward has already freed. 0 without recompute.
    pub dense_rebuilt: f64,
    /// The same for a MoE layer.
    pub moe_rebuilt: f64,
}

impl Transformer {
    /// `gemm_input_bytes`: bytes per element of the tensors saved as GEMM inputs for the
    /// weight gradient (2 in bf16; 1 in fp8 training, where Transformer Engine saves the
    /// fp8 copy it already made for the forward GEMM).
    pub fn activation_memory(
        &self,
        s: &Shard,
        recompute: Recompute,
        gemm_input_bytes: f64,
    ) -> ActivationMemory {
        self.activation_memory_with(s, recompute, RecomputeModules::CORE_ATTN, gemm_input_bytes)
    }

    /// As [`Transformer::activation_memory`], with `modules` the set selective recompute
    /// recomputes (ignored unless `recompute` is `Selective`).
    pub fn activation_memory_with(
        &self,
        s: &Shard,
        recompute: Recompute,
        modules: RecomputeModules,
        gemm_input_bytes: f64,
    ) -> ActivationMemory {
        let tp = s.tp as f64;
        let tokens = s.micro_batch as f64 * self.seq_len as f64 / s.cp as f64;
        let h = self.hidden as f64;
        let sp_div = if s.sp { tp } else { 1.0 };
        let heads = self.heads as f64;
        let g = if self.gated_mlp { 2.0 } else { 1.0 };
        let by = 2.0;
        let attn = {
            let (qkv, o) = match &self.mla {
                Some(m) => {
                    let qk = (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64;
                    let q_latent = m.q_lora_rank.unwrap_or(0) as f64;
                    let kv_latent = (m.kv_lora_rank + m.qk_rope_head_dim) as f64;
                    (
                        q_latent + kv_latent + heads * (qk + qk + m.v_head_dim as f64) / tp,
                        heads * m.v_head_dim as f64 / tp,
                    )
                }
                None => {
                    let d = self.head_dim() as f64;
                    (
                        heads * d / tp + 2.0 * self.kv_heads_per_rank(s.tp) * d,
                        heads * d / tp,
                    )
                }
            };
            // norm input (bf16), QKV GEMM input, Q/K/V (bf16, for attention backward),
            // attention output (the projection GEMM input), softmax statistics (fp32).
            by * h / sp_div
                + gemm_input_bytes * h / sp_div
                + by * qkv
                + gemm_input_bytes * o
                + 4.0 * heads / tp
        };
        let ffn_d = self.dense_ffn() as f64 / tp;
        // norm input, up-projection input, up output (bf16, for the activation's backward),
        // activation output (the down-projection GEMM input).
        let mlp_dense = by * h / sp_div
            + gemm_input_bytes * h / sp_div
            + by * g * ffn_d
            + gemm_input_bytes * ffn_d;
        let mlp_moe = match &self.moe {
            Some(m) => {
                let per_copy = (g + 1.0) * m.expert_ffn_hidden as f64 / s.etp as f64 + h;
                let routed = m.top_k as f64 / tp * s.etp as f64;
                let shared = (g + 1.0) * (m.expert_ffn_hidden * m.shared_experts) as f64 / tp;
                by * (2.0 * h / sp_div + routed * per_copy + shared)
                    + 4.0 * m.experts as f64 / sp_div
            }
            None => 0.0,
        };
        // Unfused attention stores the scores, the softmax output and the dropout mask
        // (Korthikanti's 5·a·s²·b/t): selective recompute exists to drop exactly these.
        let core = if s.fused_attention {
            0.0
        } else {
            5.0 * heads / tp * self.seq_len as f64 / s.cp as f64
                * self.seq_len as f64
                * s.micro_batch as f64
        };
        let none = (
            tokens * (attn + mlp_dense) + core,
            tokens * (attn + mlp_moe) + core,
        );
        let (dense_layer, moe_layer, dense_rebuilt, moe_rebuilt) = match recompute {
            // The backward reruns the whole layer's forward from its stored input, then runs
            // the layer's backward: all of its activations exist at once. The input it
            // reruns from is the stored one (no second copy).
            Recompute::Full => {
                let input = by * h / sp_div * tokens;
                (input, input, none.0 - input, none.1 - input)
            }
            Recompute::Selective => {
                use RecomputeModule as M;
                let on = |m: M| modules.contains(m);
                // Norm input (the residual, kept anyway) and the module's input.
                let kept_inputs = by * h / sp_div + gemm_input_bytes * h / sp_div;
                let mut attn_kept = attn;
                if on(M::Layernorm) {
                    attn_kept -= gemm_input_bytes * h / sp_div;
                }
                if let (true, Some(m)) = (on(M::MlaUpProj), &self.mla) {
                    let qk = (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64;
                    attn_kept -= by * heads * (2.0 * qk + m.v_head_dim as f64) / tp;
                }
                let dense_kept = if on(M::Mlp) {
                    kept_inputs
                } else if on(M::Layernorm) {
                    mlp_dense - gemm_input_bytes * h / sp_div
                } else {
                    mlp_dense
                };
                let moe_kept = match &self.moe {
                    Some(_) if on(M::Moe) => 2.0 * by * h / sp_div,
                    Some(m) => {
                        let routed = m.top_k as f64 / tp * s.etp as f64;
                        let shared =
                            (g + 1.0) * (m.expert_ffn_hidden * m.shared_experts) as f64 / tp;
                        let mut x = mlp_moe;
                        if on(M::Layernorm) {
                            x -= by * h / sp_div;
                        }
                        if on(M::MoeAct) {
                            x -= by * routed * m.expert_ffn_hidden as f64 / s.etp as f64;
                        }
                        if on(M::SharedExperts) {
                            x -= by * shared;
                        }
                        x
                    }
                    None => 0.0,
                };
                let core_kept = if on(M::CoreAttn) { 0.0 } else { core };
                // A recomputed module is rebuilt just before its own backward (Megatron's
                // `CheckpointWithoutOutput` and `checkpoint`). The MLP block's backward runs
                // first, its rebuilt tensors joining everything stored; the attention
                // block's are rebuilt once the layer's MLP-block tensors have been freed.
                let attn_rebuilt = tokens * (attn - attn_kept) + (core - core_kept);
                let rebuilt = |mlp_all: f64, mlp_kept: f64| {
                    (tokens * (mlp_all - mlp_kept))
                        .max(attn_rebuilt - tokens * mlp_kept)
                        .max(0.0)
                };
                (
                    tokens * (attn_kept + dense_kept) + core_kept,
                    tokens * (attn_kept + moe_kept) + core_kept,
                    rebuilt(mlp_dense, dense_kept),
                    rebuilt(mlp_moe, moe_kept),
                )
            }
            Recompute::None => (none.0, none.1, 0.0, 0.0),
        };
        // Logits (bf16) and the fp32 softmax Megatron's cross-entropy keeps for its backward,
        // vocab sharded over TP; Transformer Engine's kernel keeps only the bf16 logits,
        // which its backward overwrites with the gradient.
        let per_logit = match s.cross_entropy {
            CrossEntropy::Te => 2.0,
            CrossEntropy::Fused | CrossEntropy::Unfused => 2.0 + 4.0,
        };
        let head = tokens * self.vocab as f64 / tp * per_logit;
        ActivationMemory {
            dense_layer,
            moe_layer,
            head,
            dense_rebuilt,
            moe_rebuilt,
        }
    }
}
