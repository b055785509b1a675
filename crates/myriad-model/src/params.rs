//! Exact parameter counts.

use serde::Serialize;

use crate::Transformer;

/// Parameters of a model, by part. Biases are not counted (modern LLMs have none; GPT-3's
/// biases are < 0.01% of its weights). Norm weights are counted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct ParamCount {
    /// Input embedding (vocab × hidden).
    pub embedding: f64,
    /// Output layer (0 when tied to the embedding).
    pub output: f64,
    /// Attention weights of one layer (QKV or MLA projections, output projection).
    pub attention_per_layer: f64,
    /// Dense MLP weights of one dense layer.
    pub dense_mlp_per_layer: f64,
    /// Routed-expert weights of one MoE layer (all experts).
    pub experts_per_moe_layer: f64,
    /// Shared-expert and router weights of one MoE layer.
    pub moe_shared_per_layer: f64,
    /// Norm weights of one layer (its two norms; MLA's latent norms are in
    /// `attention_per_layer`). Every tensor-parallel rank holds them whole, as it holds the
    /// final norm (`hidden` weights, in `total`).
    pub norms_per_layer: f64,
    /// Multi-token-prediction modules, all of them (their layer, projection and three
    /// norms; they share the embedding and the output layer).
    pub mtp: f64,
    /// Of `mtp`, the routed experts of the modules' MoE layers.
    pub mtp_experts: f64,
    /// All parameters.
    pub total: f64,
    /// Parameters touched per token (routed experts counted top_k of experts).
    pub active: f64,
}

/// Parameter tensors of one layer ([`Transformer::tensors_per_layer`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LayerTensors {
    /// Weight matrices.
    pub matrices: f64,
    /// Vectors: norm weights and biases.
    pub vectors: f64,
}

/// Parameter tensors of one MoE layer ([`Transformer::tensors_per_layer`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MoeLayerTensors {
    /// Attention, norms, router and shared experts.
    pub dense: LayerTensors,
    /// Routed-expert matrices on one expert-parallel rank.
    pub experts: f64,
}

impl Transformer {
    /// Weights of one attention block.
    pub fn attention_params(&self) -> f64 {
        let h = self.hidden as f64;
        let heads = self.heads as f64;
        match &self.mla {
            Some(m) => {
                let qk = (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64;
                let q = match m.q_lora_rank {
                    // down h->r, norm r, up r->heads*qk
                    Some(r) => h * r as f64 + r as f64 + r as f64 * heads * qk,
                    None => h * heads * qk,
                };
                let r = m.kv_lora_rank as f64;
                // down h -> (kv_lora + rope), norm, up kv_lora -> heads*(nope + v)
                let kv = h * (r + m.qk_rope_head_dim as f64)
                    + r
                    + r * heads * (m.qk_nope_head_dim + m.v_head_dim) as f64;
                let o = heads * m.v_head_dim as f64 * h;
                q + kv + o
            }
            None => {
                let d = self.head_dim() as f64;
                let kv = self.kv_heads as f64;
                h * (heads + 2.0 * kv) * d + heads * d * h
            }
        }
    }

    /// MLA's latent norm weights in one attention block (the query latent's, where queries
    /// are compressed, and the key-value latent's); 0 without MLA.
    pub fn latent_norm_params(&self) -> f64 {
        self.mla.as_ref().map_or(0.0, |m| {
            m.q_lora_rank.unwrap_or(0) as f64 + m.kv_lora_rank as f64
        })
    }

    /// MLA weights every tensor-parallel rank holds whole: the latent norms and the down
    /// projections (`h → q_lora_rank` where queries are compressed, `h → kv_lora_rank +
    /// rope`). Megatron-Core builds both down projections as `TELinear` with
    /// `parallel_mode='duplicated'` (`MLASelfAttention.__init__`,
    /// `megatron/core/transformer/multi_latent_attention.py`): each rank computes the
    /// whole latent its sharded up projections read. 0 without MLA.
    pub fn tp_replicated_attention_params(&self) -> f64 {
        self.mla.as_ref().map_or(0.0, |m| {
            let h = self.hidden as f64;
            let q_down = m.q_lora_rank.map_or(0.0, |r| h * r as f64);
            let kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim) as f64;
            q_down + kv_down + self.latent_norm_params()
        })
    }

    /// Router weights of one MoE layer (`hidden × experts`; 0 without MoE). Megatron's
    /// `TopKRouter` holds its weight whole on every tensor-parallel rank.
    pub fn router_params(&self) -> f64 {
        self.moe
            .as_ref()
            .map_or(0.0, |m| self.hidden as f64 * m.experts as f64)
    }

    /// Attention weights one of `tp` tensor-parallel ranks holds: `attention_params / tp`,
    /// except that a rank holds the key and value projections of whole KV heads
    /// ([`Transformer::kv_heads_per_rank`]): with TP beyond `kv_heads` the replicated K/V
    /// weights (`2·h·d` per head) sit whole on each rank that needs them. MLA shards its
    /// per-head (up and output) projections over TP; its down projections and latent norms
    /// sit whole on every rank ([`Transformer::tp_replicated_attention_params`]; every norm
    /// is whole: Megatron replicates norm weights over TP, with or without sequence
    /// parallelism).
    pub fn attention_params_per_rank(&self, tp: u32) -> f64 {
        let tp_f = tp.max(1) as f64;
        match &self.mla {
            Some(_) => {
                let whole = self.tp_replicated_attention_params();
                (self.attention_params() - whole) / tp_f + whole
            }
            None => {
                let h = self.hidden as f64;
                let d = self.head_dim() as f64;
                let heads = self.heads as f64;
                // Q and O sharded by head; K and V per held KV head.
                2.0 * h * heads * d / tp_f + 2.0 * h * d * self.kv_heads_per_rank(tp)
            }
        }
    }

    /// Weights of an MLP with inner size `ffn`.
    pub fn mlp_params(&self, ffn: u32) -> f64 {
        let mats = if self.gated_mlp { 3.0 } else { 2.0 };
        mats * self.hidden as f64 * ffn as f64
    }

    pub fn params(&self) -> ParamCount {
        let h = self.hidden as f64;
        let embedding = self.vocab as f64 * h;
        let output = if self.tied_embeddings { 0.0 } else { embedding };
        let attention_per_layer = self.attention_params();
        let norms_per_layer = 2.0 * h;
        let dense_mlp_per_layer = self.mlp_params(self.dense_ffn());
        let (experts, shared, active_experts) = match &self.moe {
            Some(m) => {
                let one = self.mlp_params(m.expert_ffn_hidden);
                (
                    m.experts as f64 * one,
                    m.shared_experts as f64 * one + self.router_params(),
                    m.top_k as f64 * one,
                )
            }
            None => (0.0, 0.0, 0.0),
        };
        let moe_layers = self.moe_layers() as f64;
        let dense_layers = self.layers as f64 - moe_layers;
        let common =
            self.layers as f64 * (attention_per_layer + norms_per_layer) + embedding + output + h;
        // One multi-token-prediction module: a layer of the last kind, `eh_proj` (2h → h),
        // the norms of the hidden state and of the embedding, and its final norm.
        let n_mtp = self.mtp_layers as f64;
        let last_moe = self.is_moe_layer(self.mtp_layer());
        let (mtp_mlp, mtp_mlp_active, mtp_experts) = if last_moe {
            (experts + shared, active_experts + shared, experts)
        } else {
            (dense_mlp_per_layer, dense_mlp_per_layer, 0.0)
        };
        let mtp_common = attention_per_layer + norms_per_layer + 2.0 * h * h + 3.0 * h;
        let mtp = n_mtp * (mtp_common + mtp_mlp);
        let total =
            common + dense_layers * dense_mlp_per_layer + moe_layers * (experts + shared) + mtp;
        let active = common
            + dense_layers * dense_mlp_per_layer
            + moe_layers * (active_experts + shared)
            + n_mtp * (mtp_common + mtp_mlp_active);
        ParamCount {
            embedding,
            output,
            attention_per_layer,
            dense_mlp_per_layer,
            experts_per_moe_layer: experts,
            moe_shared_per_layer: shared,
            norms_per_layer,
            mtp,
            mtp_experts: n_mtp * mtp_experts,
            total,
            active,
        }
    }

    /// Parameters of one layer that every tensor-parallel rank holds whole but, under
    /// sequence parallelism, trains on its own share of the sequence only, so that their
    /// gradients are all-reduced over TP once per step (Megatron marks them
    /// `sequence_parallel`: `_allreduce_layernorm_grads` in `finalize_model_grads`): the
    /// two norms, weights only (RMSNorm; models with a gated MLP, as
    /// [`Transformer::tensors_per_layer`] takes them) or weights and biases (LayerNorm,
    /// GPT-style models), the biases of the row-parallel layers of GPT-style models (the
    /// attention output projection, and in a dense layer the MLP's second GEMM), MLA's
    /// latent norms, and in an MoE layer the router. Returns (dense layer, MoE layer).
    /// MLA's down projections are taken as the op list runs them, on every token of each
    /// TP rank (whole gradients, nothing to reduce).
    pub fn sequence_parallel_params_per_layer(&self) -> (f64, f64) {
        let h = self.hidden as f64;
        let gpt_style = !self.gated_mlp;
        let norms = if gpt_style { 4.0 * h } else { 2.0 * h };
        let latent_norms = self.latent_norm_params();
        // Row-parallel biases: attention's output projection, the MLP's second GEMM.
        let (attn_bias, mlp_bias) = if gpt_style { (h, h) } else { (0.0, 0.0) };
        let common = norms + latent_norms + attn_bias;
        (common + mlp_bias, common + self.router_params())
    }

    /// Parameter tensors of one layer as a framework's module tree holds them (what a
    /// framework gathering one tensor at a time, as DeepSpeed ZeRO-3 did before 2022,
    /// issues one collective for). Megatron-style fusion: one QKV matrix (MLA: its down
    /// and up projections), the output projection, the MLP's in (gate and up fused) and
    /// out matrices; vectors: two norms, and for models without a gated MLP, taken as
    /// GPT-style, a bias on every matrix and LayerNorm biases (gated models are taken as
    /// Llama-style: no biases, RMSNorm). For an MoE layer `experts` counts the routed-expert
    /// matrices held by one of `ep` expert-parallel ranks.
    pub fn tensors_per_layer(&self, ep: u32) -> (LayerTensors, MoeLayerTensors) {
        let gpt_style = !self.gated_mlp;
        let (attn_mats, attn_norms) = match &self.mla {
            Some(m) if m.q_lora_rank.is_some() => (5.0, 2.0),
            Some(_) => (4.0, 1.0),
            None => (2.0, 0.0),
        };
        let tensors = |mats: f64| LayerTensors {
            matrices: mats,
            vectors: attn_norms + if gpt_style { mats + 4.0 } else { 2.0 },
        };
        let dense = tensors(attn_mats + 2.0);
        let moe = match &self.moe {
            Some(m) => MoeLayerTensors {
                // + the router
                dense: tensors(attn_mats + 2.0 * m.shared_experts as f64 + 1.0),
                experts: 2.0 * (m.experts as f64 / ep.max(1) as f64).max(1.0),
            },
            None => MoeLayerTensors::default(),
        };
        (dense, moe)
    }
}
