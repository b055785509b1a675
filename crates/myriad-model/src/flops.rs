//! Model FLOPs: what the architecture needs per sequence, independent of parallelism.
//! Computed from the same op lists the step-time model times (one source of truth).

use serde::Serialize;

use crate::{OpKind, Shard, Transformer};

/// Forward FLOPs of one sequence of `seq_len` tokens, by part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct ModelFlops {
    /// Weight GEMMs of all layers and the output head (and of the multi-token-prediction
    /// modules, when the model has them).
    pub gemm: f64,
    /// Attention scores and attention over values (causal: half the square).
    pub attention: f64,
    /// `gemm + attention`.
    pub forward: f64,
    /// Forward + backward (backward = 2× forward): the model FLOPs of MFU.
    pub training: f64,
}

impl Transformer {
    /// FLOPs of one sequence (no recomputation).
    pub fn flops_per_sequence(&self) -> ModelFlops {
        let s = Shard::single(1);
        let mut ops = Vec::with_capacity(32);
        let split = |ops: &[crate::Op]| {
            ops.iter().fold((0.0, 0.0), |(g, a), op| match op.kind {
                OpKind::Gemm { .. } => (g + op.flops(), a),
                OpKind::Attention { .. } => (g, a + op.flops()),
                OpKind::Memory { .. } | OpKind::SinkGrad { .. } => (g, a),
            })
        };
        // Dense and MoE layers each have one op shape: count each kind once and scale.
        let moe_layers = self.moe_layers() as f64;
        let dense_layers = self.layers as f64 - moe_layers;
        let (mut gemm, mut attention) = (0.0, 0.0);
        let index = |moe: bool| self.layer_of_kind(moe).unwrap_or(0);
        for (layer, n) in [(index(false), dense_layers), (index(true), moe_layers)] {
            if n > 0.0 {
                ops.clear();
                self.layer_ops(layer, &s, &mut ops);
                let (g, a) = split(&ops);
                gemm += g * n;
                attention += a * n;
            }
        }
        ops.clear();
        self.head_ops(&s, &mut ops);
        let (g, a) = split(&ops);
        gemm += g;
        attention += a;
        // Multi-token prediction: per module a layer of the last kind, its projection and
        // the output head again.
        if self.mtp_layers > 0 {
            let n = self.mtp_layers as f64;
            ops.clear();
            self.layer_ops(self.mtp_layer(), &s, &mut ops);
            self.mtp_ops(&s, &mut ops);
            self.head_ops(&s, &mut ops);
            let (g, a) = split(&ops);
            gemm += n * g;
            attention += n * a;
        }
        let forward = gemm + attention;
        ModelFlops {
            gemm,
            attention,
            forward,
            training: 3.0 * forward,
        }
    }
}
