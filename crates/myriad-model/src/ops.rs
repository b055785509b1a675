//! The forward operations one rank runs for one micro-batch, layer by layer, after
//! tensor, context, sequence and expert parallel sharding (Megatron-LM layout).
//!
//! Backward is derived by the caller: each GEMM becomes two GEMMs of the same size
//! (input gradient and weight gradient), attention backward costs 2.5× its forward FLOPs
//! (FlashAttention recomputes the scores), memory-bound ops move the backward bytes they
//! state (twice their forward bytes, except the loss kernel).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Transformer;

/// How one rank's share of a layer is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    /// Tensor parallelism inside each expert.
    pub etp: u32,
    /// Sequence parallelism (norms and dropout sharded over TP).
    pub sp: bool,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// Fused attention (FlashAttention/cuDNN): scores never reach HBM. When false, the
    /// attention core runs as Megatron-LM's pre-2023 path: batched QK^T GEMM over the full
    /// square, fused scale-mask-softmax, dropout, batched attention-over-values GEMM.
    pub fused_attention: bool,
    /// The loss kernel over the logits.
    pub cross_entropy: CrossEntropy,
    /// How context-parallel ranks share keys and values.
    pub cp_comm: CpComm,
}

/// How context parallelism gives each rank the keys and values of the whole sequence
/// (Megatron-Core `cp_comm_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpComm {
    /// A ring of point-to-point exchanges overlapped with attention, one attention kernel
    /// per KV block and a merge of the partial results (Transformer Engine's
    /// `AttnFuncWithCPAndKVP2P`; Megatron's default).
    P2p,
    /// All-gather the keys and values, attend once over them, reduce-scatter their
    /// gradients (`all_gather`; Meta's Llama 3 implementation, arXiv:2407.21783 §3.3.2).
    AllGather,
}

/// How MoE tokens reach their experts on other expert-parallel ranks (Megatron-Core
/// `moe_token_dispatcher_type`, and the `flex` dispatcher's backend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EpDispatcher {
    /// One NCCL all-to-all of every token's top-k copies (`alltoall`, Megatron's default):
    /// a token whose experts sit on j ranks of another scale-up domain crosses the
    /// scale-out network j times.
    Alltoall,
    /// DeepEP's normal kernels (`flex` + `deepep`): a token crosses the scale-out network
    /// once for each other scale-up domain holding any of its experts, and is forwarded
    /// over the scale-up fabric there, the two stages pipelined (DeepEP README, "kernels
    /// ... forwarding from NVLink domain to RDMA domain").
    Deepep,
    /// NVIDIA's HybridEP (`flex` + `hybridep`): the same per-domain deduplication as
    /// DeepEP, topology-aware for NVLink domains of any size.
    Hybridep,
}

impl EpDispatcher {
    /// The scenario name (`training.ep_dispatcher`).
    pub fn name(self) -> &'static str {
        match self {
            EpDispatcher::Alltoall => "alltoall",
            EpDispatcher::Deepep => "deepep",
            EpDispatcher::Hybridep => "hybridep",
        }
    }

    /// Whether tokens cross the scale-out network once per destination scale-up domain
    /// (not once per expert copy).
    pub fn dedups_domains(self) -> bool {
        !matches!(self, EpDispatcher::Alltoall)
    }
}

/// How fp8 training scales each tensor before its GEMM (Transformer Engine's recipe): each
/// quantises a GEMM input in its own number of passes over it and kernels
/// (`transformer_engine/pytorch/csrc/quantizer.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fp8Recipe {
    /// `DelayedScaling` (Transformer Engine's default): the scale comes from the amax
    /// history, so one kernel reads the bf16 input and writes fp8, recording the new amax
    /// as it goes.
    Delayed,
    /// `Float8CurrentScaling` (Megatron-Bridge's `fp8_cs` recipes): the tensor's own amax
    /// first, in a kernel of its own (`nvte_compute_amax`), then the scale from it
    /// (`nvte_compute_scale_from_amax`), then the cast: the input is read twice, in three
    /// kernels.
    Current,
    /// `Float8BlockScaling` (1×128 and 128×128 blocks, DeepSeek-V3's; Megatron-Bridge's
    /// `fp8_sc` on Hopper): each block's amax inside the one quantising kernel.
    Blockwise,
    /// `MXFP8BlockScaling` (32-element blocks, Blackwell): one kernel, as blockwise.
    Mxfp8,
}

impl Fp8Recipe {
    /// The scenario name (`training.fp8_recipe`).
    pub fn name(self) -> &'static str {
        match self {
            Fp8Recipe::Delayed => "delayed",
            Fp8Recipe::Current => "current",
            Fp8Recipe::Blockwise => "blockwise",
            Fp8Recipe::Mxfp8 => "mxfp8",
        }
    }

    /// Passes over the bf16 input to quantise it: current scaling reads it once for its
    /// amax and again for the cast.
    pub fn reads(self) -> f64 {
        match self {
            Fp8Recipe::Current => 2.0,
            _ => 1.0,
        }
    }

    /// Whether training writes a second, column-wise copy of each quantised tensor for the
    /// GEMM that consumes it transposed (the weight gradient): block scales run along the
    /// other axis there, and per-tensor scales need a transposed copy where the fp8 GEMMs
    /// are TN only (`any_layout` false: Hopper; Transformer Engine's cast-transpose).
    pub fn columnwise_copy(self, any_layout: bool) -> bool {
        match self {
            Fp8Recipe::Delayed | Fp8Recipe::Current => !any_layout,
            Fp8Recipe::Blockwise | Fp8Recipe::Mxfp8 => true,
        }
    }

    /// Bytes moved per element to quantise a bf16 GEMM input: two read per pass over it,
    /// one written per fp8 copy (block scales add under 1%, left out). Inference writes
    /// one copy; training two where [`Fp8Recipe::columnwise_copy`].
    pub fn quant_bytes_per_element(self, training: bool, any_layout: bool) -> f64 {
        let copies = if training && self.columnwise_copy(any_layout) {
            2.0
        } else {
            1.0
        };
        2.0 * self.reads() + copies
    }

    /// Kernels launched to quantise one GEMM input.
    pub fn quant_kernels(self) -> f64 {
        match self {
            Fp8Recipe::Current => 3.0,
            _ => 1.0,
        }
    }

    /// Kernels launched to quantise the inputs of `n` GEMMs split from one tensor (a
    /// grouped GEMM's per-expert inputs): Transformer Engine's `multi_tensor_quantize`
    /// (`split_quantize`) has one fused kernel for all of them only for delayed scaling
    /// ("Currently only have fused kernel for FP8 delayed scaling", `nvte_multi_cast_transpose`,
    /// extensions/cast.cpp, v2.x); every other recipe quantises each tensor on its own.
    pub fn split_quant_kernels(self, n: f64) -> f64 {
        match self {
            Fp8Recipe::Delayed => 1.0,
            _ => n * self.quant_kernels(),
        }
    }
}

/// How the loss over the vocabulary-parallel logits is computed: each kernel moves a
/// different number of bytes per logit (counted from its source; see [`CrossEntropy::bytes_per_logit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CrossEntropy {
    /// Megatron's `vocab_parallel_cross_entropy` as separate PyTorch ops (Megatron-LM's
    /// default, and all Megatron-LM before 2024).
    Unfused,
    /// Megatron-Core's `cross_entropy_loss_fusion` with the native implementation (NeMo 2.0
    /// and Megatron-Bridge recipes).
    Fused,
    /// Transformer Engine's Triton kernel (`cross_entropy_fusion_impl: te`, Megatron-Bridge
    /// performance recipes since 2025): an online softmax that never writes fp32 logits.
    Te,
}

impl CrossEntropy {
    /// Bytes read plus written in HBM per logit, (forward, backward), counted from the
    /// kernels' source:
    /// - unfused (megatron/core/tensor_parallel/cross_entropy.py): forward upcasts the bf16
    ///   logits to an fp32 copy (read 2, write 4), takes the row max (4), subtracts it in
    ///   place (8), exponentiates in place (8), sums (4) and divides by the sum in place (8)
    ///   = 38; backward scales the saved softmax by the loss gradient in place (8) and
    ///   autograd casts it back to bf16 (read 4, write 2) = 14;
    /// - fused (megatron/core/fusions/fused_cross_entropy.py): the cast and max fuse (6),
    ///   subtract and exponentiate fuse (8), sum (4), divide (8) = 26; backward 14;
    /// - te (transformer_engine/pytorch/triton/cross_entropy.py): the online softmax reads
    ///   the bf16 logits once for the row max and sum (2); backward recomputes the softmax
    ///   from them and writes the gradient in place in bf16 (read 2, write 2) = 4.
    pub const fn bytes_per_logit(self) -> (f64, f64) {
        match self {
            CrossEntropy::Unfused => (38.0, 14.0),
            CrossEntropy::Fused => (26.0, 14.0),
            CrossEntropy::Te => (2.0, 4.0),
        }
    }
}

impl Shard {
    pub fn single(micro_batch: u32) -> Self {
        Self {
            tp: 1,
            cp: 1,
            ep: 1,
            etp: 1,
            sp: false,
            micro_batch,
            fused_attention: true,
            cp_comm: CpComm::P2p,
            cross_entropy: CrossEntropy::Fused,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LayerKind {
    Dense,
    Moe,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum OpKind {
    /// `count` GEMMs of C[m,n] = A[m,k] · B[k,n] (a grouped GEMM when count > 1).
    Gemm { m: f64, n: f64, k: f64, count: f64 },
    /// Fused attention over `batch_heads` independent heads, queries `sq`, keys `skv`.
    /// `causal_fraction` is the share of the score matrix computed (1/2 for causal).
    /// `window`: keys each query attends to in a sliding-window layer, a band narrower than
    /// `skv` (the kernel's span per query, which sets its efficiency); 0 for full attention
    /// and for chunked layers, which are causal attention over their chunks.
    Attention {
        batch_heads: f64,
        sq: f64,
        skv: f64,
        d_qk: f64,
        d_v: f64,
        causal_fraction: f64,
        window: f64,
    },
    /// Memory-bound op: bytes read plus written in HBM by the forward pass and by the
    /// backward pass.
    Memory { bytes: f64, backward: f64 },
    /// The attention sinks' gradient (`Transformer::attention_sinks`): nothing forward;
    /// backward, a reduction over `rows` (query rows × heads) that the fused kernel adds,
    /// timed per row by the accelerator (`efficiency.attention_sink_bwd_ns`).
    SinkGrad { rows: f64 },
}

impl OpKind {
    /// A memory-bound op whose backward moves twice the forward's bytes (it reads the
    /// saved input and the output gradient and writes the input gradient).
    pub const fn memory(bytes: f64) -> OpKind {
        OpKind::Memory {
            bytes,
            backward: 2.0 * bytes,
        }
    }
}

/// One forward operation on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Op {
    pub name: &'static str,
    pub kind: OpKind,
}

impl Op {
    /// Forward FLOPs of the op (0 for memory-bound ops).
    pub fn flops(&self) -> f64 {
        match self.kind {
            OpKind::Gemm { m, n, k, count } => 2.0 * m * n * k * count,
            OpKind::Attention {
                batch_heads,
                sq,
                skv,
                d_qk,
                d_v,
                causal_fraction,
                ..
            } => 2.0 * batch_heads * sq * skv * (d_qk + d_v) * causal_fraction,
            OpKind::Memory { .. } | OpKind::SinkGrad { .. } => 0.0,
        }
    }
}

/// Bytes per element of activations (bf16).
pub const ACT_BYTES: f64 = 2.0;

impl Transformer {
    /// Tokens of one micro-batch on one rank for TP-sharded GEMMs.
    fn rank_tokens(&self, s: &Shard) -> f64 {
        s.micro_batch as f64 * self.seq_len as f64 / s.cp as f64
    }

    /// Tokens each rank owns in sequence-parallel regions (norms, residuals).
    fn sp_tokens(&self, s: &Shard) -> f64 {
        let t = self.rank_tokens(s);
        if s.sp {
            t / s.tp as f64
        } else {
            t
        }
    }

    /// Forward ops of the attention block of one layer.
    pub fn attention_ops(&self, s: &Shard, out: &mut Vec<Op>) {
        let tp = s.tp as f64;
        let t = self.rank_tokens(s);
        let ts = self.sp_tokens(s);
        let h = self.hidden as f64;
        let heads = self.heads as f64;
        let b = s.micro_batch as f64;
        let seq = self.seq_len as f64;
        // Pre-attention norm: read and write the hidden state.
        out.push(Op {
            name: "attn_norm",
            kind: OpKind::memory(2.0 * ts * h * ACT_BYTES),
        });
        let (d_qk, d_v) = match &self.mla {
            Some(m) => {
                let qk = (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64;
                let r = m.kv_lora_rank as f64;
                match m.q_lora_rank {
                    Some(q) => {
                        out.push(Op {
                            name: "q_down",
                            kind: OpKind::Gemm {
                                m: t,
                                n: q as f64,
                                k: h,
                                count: 1.0,
                            },
                        });
                        out.push(Op {
                            name: "q_up",
                            kind: OpKind::Gemm {
                                m: t,
                                n: heads * qk / tp,
                                k: q as f64,
                                count: 1.0,
                            },
                        });
                    }
                    None => out.push(Op {
                        name: "q_proj",
                        kind: OpKind::Gemm {
                            m: t,
                            n: heads * qk / tp,
                            k: h,
                            count: 1.0,
                        },
                    }),
                }
                out.push(Op {
                    name: "kv_down",
                    kind: OpKind::Gemm {
                        m: t,
                        n: r + m.qk_rope_head_dim as f64,
                        k: h,
                        count: 1.0,
                    },
                });
                out.push(Op {
                    name: "kv_up",
                    kind: OpKind::Gemm {
                        m: t,
                        n: heads * (m.qk_nope_head_dim + m.v_head_dim) as f64 / tp,
                        k: r,
                        count: 1.0,
                    },
                });
                (qk, m.v_head_dim as f64)
            }
            None => {
                let d = self.head_dim() as f64;
                // Queries sharded by head; keys and values of whole KV heads, replicated
                // where TP exceeds kv_heads.
                let kv = self.kv_heads_per_rank(s.tp);
                out.push(Op {
                    name: "qkv_proj",
                    kind: OpKind::Gemm {
                        m: t,
                        n: heads * d / tp + 2.0 * kv * d,
                        k: h,
                        count: 1.0,
                    },
                });
                (d, d)
            }
        };
        // Rotary embedding and layout: read and write q and k.
        out.push(Op {
            name: "rope",
            kind: OpKind::memory(2.0 * t * heads * d_qk / tp * ACT_BYTES),
        });
        if !s.fused_attention {
            // Unfused core: every score of the square is computed and stored.
            let bh = b * heads / tp;
            let sq = seq / s.cp as f64;
            out.push(Op {
                name: "core_scores",
                kind: OpKind::Gemm {
                    m: sq,
                    n: seq,
                    k: d_qk,
                    count: bh,
                },
            });
            // Write scores, scale-mask-softmax (read, write), dropout (read, write, mask):
            // 2 + 4 + 5 bytes per score in fp16/bf16.
            out.push(Op {
                name: "core_softmax",
                kind: OpKind::memory(11.0 * bh * sq * seq),
            });
            out.push(Op {
                name: "core_values",
                kind: OpKind::Gemm {
                    m: sq,
                    n: d_v,
                    k: seq,
                    count: bh,
                },
            });
        } else {
            // Context parallelism: each rank holds seq/cp queries and, after the ring of KV
            // exchanges, attends over the whole sequence; with causal load balancing each rank
            // computes 1/cp of the causal score matrix.
            //
            // Sliding windows: the op list describes the mean layer, so the heads split
            // between a full-attention op and a windowed one in the model's proportion of
            // windowed layers (gpt-oss alternates them, so every pipeline stage holds
            // nearly the same mix).
            let bh = b * heads / tp;
            let windowed = self.windowed_layers() as f64 / self.layers.max(1) as f64;
            let attention = |bh: f64, frac: f64, w: f64| OpKind::Attention {
                batch_heads: bh,
                sq: seq / s.cp as f64,
                skv: seq,
                d_qk,
                d_v,
                causal_fraction: frac,
                window: w,
            };
            if windowed < 1.0 {
                out.push(Op {
                    name: "attention",
                    kind: attention(bh * (1.0 - windowed), 0.5, 0.0),
                });
            }
            if let Some(window) = self.sliding_window.filter(|_| windowed > 0.0) {
                let w = window.window as f64;
                let kind = if w >= seq {
                    // The window holds the whole sequence: plain causal attention.
                    attention(bh * windowed, 0.5, 0.0)
                } else if window.chunked {
                    // Causal within each chunk: causal attention over independent
                    // sequences of `w` (the last one `r` long), which the kernel runs as a
                    // batch of them; each CP rank computes 1/cp of it.
                    let q = (seq / w).floor();
                    let r = seq - q * w;
                    OpKind::Attention {
                        batch_heads: bh * windowed * (q * w * w + r * r) / (w * w) / s.cp as f64,
                        sq: w,
                        skv: w,
                        d_qk,
                        d_v,
                        causal_fraction: 0.5,
                        window: 0.0,
                    }
                } else {
                    // A band `w` keys wide over the sequence.
                    attention(bh * windowed, window.causal_fraction(seq), w)
                };
                out.push(Op {
                    name: "attention_window",
                    kind,
                });
            }
            if self.attention_sinks {
                // Every query row of every head (full and windowed layers alike) gets the
                // sink's term in its softmax; backward sums them into each head's gradient.
                out.push(Op {
                    name: "attention_sink",
                    kind: OpKind::SinkGrad {
                        rows: bh * seq / s.cp as f64,
                    },
                });
            }
            if s.cp > 1 && s.cp_comm == CpComm::P2p {
                // The ring runs one attention kernel per KV block and merges the partial
                // results (Transformer Engine `AttnFuncWithCPAndKVP2P`): forward, the first
                // block's output is rescaled into `out` (read, write) and every later one
                // rescaled and added to it (read both, write); backward, dQ is accumulated
                // the same way and the dK, dV travelling round the ring are added to at every
                // step after the first (read both, write). The softmax statistics merged
                // alongside are one float per query and head, negligible.
                let steps = s.cp as f64 - 1.0;
                let q_out = t * heads * d_v / tp * ACT_BYTES;
                let kv_heads = match &self.mla {
                    Some(_) => heads / tp,
                    None => self.kv_heads_per_rank(s.tp),
                };
                let kv = t * kv_heads * (d_qk + d_v) * ACT_BYTES;
                let merge = q_out * (2.0 + 3.0 * steps);
                out.push(Op {
                    name: "cp_merge",
                    kind: OpKind::Memory {
                        bytes: merge,
                        backward: merge + 3.0 * kv * steps,
                    },
                });
            }
        }
        out.push(Op {
            name: "out_proj",
            kind: OpKind::Gemm {
                m: t,
                n: h,
                k: heads * d_v / tp,
                count: 1.0,
            },
        });
        // Residual add (read two, write one).
        out.push(Op {
            name: "attn_residual",
            kind: OpKind::memory(3.0 * ts * h * ACT_BYTES),
        });
    }

    /// Forward ops of the MLP block of layer `layer`.
    pub fn mlp_ops(&self, layer: u32, s: &Shard, out: &mut Vec<Op>) {
        let tp = s.tp as f64;
        let t = self.rank_tokens(s);
        let ts = self.sp_tokens(s);
        let h = self.hidden as f64;
        let g = if self.gated_mlp { 2.0 } else { 1.0 };
        out.push(Op {
            name: "mlp_norm",
            kind: OpKind::memory(2.0 * ts * h * ACT_BYTES),
        });
        let dense = |ffn: f64,
                     tp: f64,
                     out: &mut Vec<Op>,
                     up: &'static str,
                     act: &'static str,
                     down: &'static str| {
            out.push(Op {
                name: up,
                kind: OpKind::Gemm {
                    m: t,
                    n: g * ffn / tp,
                    k: h,
                    count: 1.0,
                },
            });
            out.push(Op {
                name: act,
                kind: OpKind::memory((g + 1.0) * t * ffn / tp * ACT_BYTES),
            });
            out.push(Op {
                name: down,
                kind: OpKind::Gemm {
                    m: t,
                    n: h,
                    k: ffn / tp,
                    count: 1.0,
                },
            });
        };
        match (&self.moe, self.is_moe_layer(layer)) {
            (Some(m), true) => {
                let experts = m.experts as f64;
                out.push(Op {
                    name: "router",
                    kind: OpKind::Gemm {
                        m: ts,
                        n: experts,
                        k: h,
                        count: 1.0,
                    },
                });
                // Token-expert assignments this rank computes: the TP×CP×DP ranks of a stage
                // share the routed work evenly; expert TP splits each expert's weights.
                let etp = s.etp as f64;
                let assignments = t * m.top_k as f64 / tp * etp;
                let local = (experts / s.ep as f64).max(1.0);
                let ffn = m.expert_ffn_hidden as f64;
                // Token movement around the experts (Megatron's all-to-all dispatcher): permute
                // by expert, sort the received chunks by local expert, and the reverse two
                // on the way back (the last one a top-k weighted sum): four read+write passes
                // over every routed copy. Router scores and top-k over `experts` in fp32.
                out.push(Op {
                    name: "moe_permute",
                    kind: OpKind::memory(
                        8.0 * assignments * h * ACT_BYTES + 3.0 * ts * experts * 4.0,
                    ),
                });
                out.push(Op {
                    name: "expert_up",
                    kind: OpKind::Gemm {
                        m: assignments / local,
                        n: g * ffn / etp,
                        k: h,
                        count: local,
                    },
                });
                out.push(Op {
                    name: "expert_act",
                    kind: OpKind::memory((g + 1.0) * assignments * ffn / etp * ACT_BYTES),
                });
                out.push(Op {
                    name: "expert_down",
                    kind: OpKind::Gemm {
                        m: assignments / local,
                        n: h,
                        k: ffn / etp,
                        count: local,
                    },
                });
                if m.shared_experts > 0 {
                    dense(
                        ffn * m.shared_experts as f64,
                        tp,
                        out,
                        "shared_up",
                        "shared_act",
                        "shared_down",
                    );
                }
            }
            _ => dense(
                self.dense_ffn() as f64,
                tp,
                out,
                "mlp_up",
                "mlp_act",
                "mlp_down",
            ),
        }
        out.push(Op {
            name: "mlp_residual",
            kind: OpKind::memory(3.0 * ts * h * ACT_BYTES),
        });
    }

    /// All forward ops of layer `layer` (0-based).
    pub fn layer_ops(&self, layer: u32, s: &Shard, out: &mut Vec<Op>) {
        self.attention_ops(s, out);
        self.mlp_ops(layer, s, out);
    }

    /// Forward ops of the output head: final norm, output projection (vocab sharded over TP),
    /// and the cross-entropy over the logits ([`CrossEntropy`]).
    pub fn head_ops(&self, s: &Shard, out: &mut Vec<Op>) {
        let t = self.rank_tokens(s);
        let ts = self.sp_tokens(s);
        let h = self.hidden as f64;
        let v = self.vocab as f64 / s.tp as f64;
        out.push(Op {
            name: "final_norm",
            kind: OpKind::memory(2.0 * ts * h * ACT_BYTES),
        });
        out.push(Op {
            name: "output_proj",
            kind: OpKind::Gemm {
                m: t,
                n: v,
                k: h,
                count: 1.0,
            },
        });
        out.push(Op {
            name: "cross_entropy",
            kind: {
                let (f, b) = s.cross_entropy.bytes_per_logit();
                OpKind::Memory {
                    bytes: f * t * v,
                    backward: b * t * v,
                }
            },
        });
    }

    /// Forward ops of one multi-token-prediction module besides its transformer layer and
    /// the output head ([`Transformer::mtp_layers`]): the two RMSNorms (the hidden state and
    /// the next token's embedding, read and written) and the projection of their
    /// concatenation back to the hidden size (Megatron-Core `eh_proj`, column-parallel).
    pub fn mtp_ops(&self, s: &Shard, out: &mut Vec<Op>) {
        let t = self.rank_tokens(s);
        let ts = self.sp_tokens(s);
        let h = self.hidden as f64;
        out.push(Op {
            name: "mtp_norms",
            kind: OpKind::memory(2.0 * 2.0 * ts * h * ACT_BYTES),
        });
        out.push(Op {
            name: "mtp_proj",
            kind: OpKind::Gemm {
                m: t,
                n: h / s.tp as f64,
                k: 2.0 * h,
                count: 1.0,
            },
        });
    }

    /// Forward ops of the input embedding (a gather: read rows, write the hidden state).
    pub fn embedding_ops(&self, s: &Shard, out: &mut Vec<Op>) {
        let ts = self.sp_tokens(s);
        out.push(Op {
            name: "embedding",
            kind: OpKind::memory(2.0 * ts * self.hidden as f64 * ACT_BYTES),
        });
    }
}
