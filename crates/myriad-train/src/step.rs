//! The analytical step-time and memory model.
//!
//! One step = the pipeline schedule over per-stage, per-micro-batch forward and backward
//! times, plus exposed communication of each parallel group, plus the optimizer step.
//! Compute time per op comes from the accelerator's peak and its catalog efficiency
//! (GEMM: the longer of FLOPs / (peak × eff) and operand bytes / (HBM × `hbm_gemm`), plus a
//! fixed overhead, in fp8 on Hopper at the fast-accumulation
//! rate forward and the split-accumulation rate for the gradients; attention:
//! sequence-dependent efficiency; memory-bound ops: bytes / (HBM × eff)), stretched by the
//! job's slowest chip (`speed_sigma`) and by the wait of the ranks that synchronise within
//! every layer (TP, CP, EP) for the one whose clock is momentarily lowest (`speed_jitter`;
//! [`straggler_pace`], [`sync_jitter_pace`]). Communication is
//! timed by `myriad_collective` on the group's placement in the hierarchy. Overlaps are
//! explicit:
//! - TP with sequence parallelism and `tp_comm_overlap`: the collective is split into TP
//!   chunks pipelined with the GEMM it feeds; the first chunk and any excess over the GEMM
//!   are exposed, and the two forward GEMMs whose outputs are reduce-scattered run on the
//!   SMs the communication kernel leaves (`tp_comm_overlap_sms`). Without overlap, all of
//!   it is exposed.
//! - CP ring attention: KV exchange overlapped with attention compute of the previous chunk.
//! - EP all-to-all: exposed (Megatron's default).
//! - PP send/recv: exposed per micro-batch in 1F1B; overlapped in the interleaved schedule
//!   except during warm-up/cool-down.
//! - DP: gradient reduce-scatter overlapped with the last micro-batch's backward, parameter
//!   all-gather with the first forward, bucket by bucket (Megatron `overlap_grad_reduce`,
//!   `overlap_param_gather`): the excess and the last bucket are exposed. Under the
//!   interleaved schedule each model chunk synchronises on its own, in the windows the
//!   schedule gives it ([`dp_overlap_exposed`]).
//!
//! Invariants: pure; no allocation beyond the two op lists; `breakdown` components add up
//! to `step_time_s`.

use myriad_catalog::Accelerator;
use myriad_cluster::{BuiltCluster, Level};
use myriad_collective::{Analytical, CollectiveTimer, Concurrent, GroupSpan, Layout, Op as CollOp};
use myriad_model::{
    CpComm, Fp8Recipe, Op, OpKind, Recompute, RecomputeModule, RecomputeModules, Transformer,
};
use myriad_scenario::{Dim, PipelineSchedule, Precision};
use serde::Serialize;

use crate::plan::Plan;

/// Where the step time goes (seconds); components add up to the step time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Breakdown {
    pub forward_s: f64,
    pub backward_s: f64,
    pub recompute_s: f64,
    /// Eager MoE layers' time beyond their kernels (the host's read of the token counts,
    /// launch gaps; [`MOE_EAGER_OVERHEAD_S`]), forward and recomputed forward.
    pub moe_overhead_s: f64,
    pub tp_comm_s: f64,
    pub cp_comm_s: f64,
    pub ep_comm_s: f64,
    pub pp_comm_s: f64,
    pub dp_comm_s: f64,
    pub pipeline_bubble_s: f64,
    pub optimizer_s: f64,
    /// Activation offloading to host memory: transfer time not hidden under compute.
    pub offload_s: f64,
}

impl Breakdown {
    /// Every part as (JSON key, label, seconds), in the order reports list them; `total` is
    /// their sum.
    pub fn parts(&self) -> [(&'static str, &'static str, f64); 12] {
        [
            ("forward_s", "forward", self.forward_s),
            ("backward_s", "backward", self.backward_s),
            ("recompute_s", "recompute", self.recompute_s),
            ("moe_overhead_s", "MoE eager overhead", self.moe_overhead_s),
            ("tp_comm_s", "TP/SP comm", self.tp_comm_s),
            ("cp_comm_s", "CP comm", self.cp_comm_s),
            ("ep_comm_s", "EP comm", self.ep_comm_s),
            ("pp_comm_s", "PP comm", self.pp_comm_s),
            ("dp_comm_s", "DP comm", self.dp_comm_s),
            (
                "pipeline_bubble_s",
                "pipeline bubble",
                self.pipeline_bubble_s,
            ),
            ("optimizer_s", "optimizer", self.optimizer_s),
            ("offload_s", "activation offload", self.offload_s),
        ]
    }

    pub fn total(&self) -> f64 {
        self.forward_s
            + self.backward_s
            + self.recompute_s
            + self.moe_overhead_s
            + self.tp_comm_s
            + self.cp_comm_s
            + self.ep_comm_s
            + self.pp_comm_s
            + self.dp_comm_s
            + self.pipeline_bubble_s
            + self.optimizer_s
            + self.offload_s
    }
}

/// Memory per accelerator (GiB) on the most loaded pipeline stage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Memory {
    pub weights_gib: f64,
    pub gradients_gib: f64,
    pub optimizer_gib: f64,
    pub activations_gib: f64,
    /// Micro-batches whose activations a stage holds at its peak (schedule-dependent).
    pub in_flight_micro_batches: f64,
    /// CUDA context, communication buffers, allocator fragmentation.
    pub buffers_gib: f64,
    /// Activations offloaded to host memory (not counted in `total_gib`) on the stage that
    /// offloads the most, `host_offload_stage`: not always the HBM peak stage (the first
    /// stage holds the most micro-batches in flight, the last the output layer).
    pub host_offload_gib: f64,
    /// The pipeline stage offloading the most activations to host memory (0-based).
    pub host_offload_stage: u32,
    pub total_gib: f64,
    pub capacity_gib: f64,
    /// The pipeline stage with the peak (0-based).
    pub peak_stage: u32,
}

/// The estimate of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepEstimate {
    pub step_time_s: f64,
    pub breakdown: Breakdown,
    pub memory: Memory,
    pub fits: bool,
    /// Model FLOPs utilisation (no recompute, causal attention) against the dense peak of
    /// the training precision.
    pub mfu: f64,
    /// Hardware FLOPs utilisation (recompute counted).
    pub hfu: f64,
    /// MFU against the bf16 dense peak (the convention of most published fp8 tables).
    pub mfu_bf16: f64,
    pub tokens_per_s: f64,
    pub model_flops_per_step: f64,
    pub micro_batches: u64,
    /// How much slower than the median chip the step's compute runs, and why.
    pub pace: Pace,
}

/// The multipliers on a step's compute (communication is not paced).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pace {
    /// The job's slowest chip ([`straggler_pace`] over every accelerator).
    pub slowest_chip: f64,
    /// Ranks that synchronise within every layer ([`crate::plan::Plan::lockstep_ranks`]).
    pub lockstep_ranks: u64,
    /// Their wait for the momentarily slowest clock ([`sync_jitter_pace`]).
    pub lockstep: f64,
}

/// Per micro-batch, per pipeline stage (all its model chunks).
#[derive(Debug, Clone, Copy, Default)]
struct StageTimes {
    fwd: f64,
    bwd: f64,
    /// Weight-gradient part of `bwd` (zero-bubble schedules defer it).
    bwd_w: f64,
    recompute: f64,
    tp: f64,
    cp: f64,
    ep: f64,
    /// Eager MoE overhead inside `fwd` and inside `recompute` ([`MOE_EAGER_OVERHEAD_S`]),
    /// kept apart so the breakdown can show it.
    eager_fwd: f64,
    eager_rec: f64,
}

impl StageTimes {
    /// Every part times `k` (`k` layers, or modules, of one kind).
    fn scaled(self, k: f64) -> Self {
        StageTimes {
            fwd: k * self.fwd,
            bwd: k * self.bwd,
            bwd_w: k * self.bwd_w,
            recompute: k * self.recompute,
            tp: k * self.tp,
            cp: k * self.cp,
            ep: k * self.ep,
            eager_fwd: k * self.eager_fwd,
            eager_rec: k * self.eager_rec,
        }
    }
}

impl std::ops::Add for StageTimes {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        StageTimes {
            fwd: self.fwd + o.fwd,
            bwd: self.bwd + o.bwd,
            bwd_w: self.bwd_w + o.bwd_w,
            recompute: self.recompute + o.recompute,
            tp: self.tp + o.tp,
            cp: self.cp + o.cp,
            ep: self.ep + o.ep,
            eager_fwd: self.eager_fwd + o.eager_fwd,
            eager_rec: self.eager_rec + o.eager_rec,
        }
    }
}

/// A parallel group: the one holding rank 0 on the hierarchy, and where all its peers lie.
#[derive(Clone)]
struct Group {
    span: GroupSpan,
    layout: Layout,
}

impl Group {
    fn new(levels: &[Level], n: u64, stride: u64, accelerators: u64) -> Group {
        Group {
            span: Plan::span(levels, n, stride),
            layout: Layout {
                n,
                stride,
                accelerators,
            },
        }
    }

    fn of(plan: &Plan, levels: &[Level], d: Dim) -> Group {
        Group::of_dims(levels, &plan.group_dims(d), plan.accelerators)
    }

    /// A group made of several placement dimensions ((size, stride) each), placed by
    /// [`Plan::span_dims`]; its flow-simulation layout takes the finest stride.
    fn of_dims(levels: &[Level], dims: &[(u64, u64)], accelerators: u64) -> Group {
        // One dimension of more than one rank (every group but DP and DP × CP under some
        // placements): a uniform stride, placed directly.
        let mut big = dims.iter().filter(|d| d.0 > 1);
        if let (first, None) = (big.next(), big.next()) {
            let (n, stride) = first.copied().unwrap_or((1, 1));
            return Group::new(levels, n, stride.max(1), accelerators);
        }
        let parts = Plan::group_parts(dims);
        let (n, stride) = Plan::parts_layout(dims, &parts);
        Group {
            span: Plan::span_parts(levels, &parts),
            layout: Layout {
                n,
                stride,
                accelerators,
            },
        }
    }

    fn size(&self) -> u64 {
        self.span.size()
    }
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    acc: &'a Accelerator,
    timer: &'a dyn CollectiveTimer,
    gemm_peak: f64,
    /// Efficiency of the forward GEMMs.
    gemm_eff: f64,
    /// Efficiency of the backward (data- and weight-gradient) GEMMs: below `gemm_eff` in
    /// fp8 on Hopper, where Transformer Engine promotes their accumulation to fp32.
    gemm_bwd_eff: f64,
    bf16_peak: f64,
    hbm_bps: f64,
    /// Rate at which a GEMM kernel streams its operands when it has too little work to be
    /// compute-bound (`efficiency.hbm_gemm` of the datasheet bandwidth).
    gemm_bps: f64,
    /// Bytes per element of a GEMM's A and B operands, and of its output.
    gemm_in_bytes: f64,
    gemm_out_bytes: f64,
    /// Fixed cost of one kernel, seconds: the launch-and-drain term of the GEMM fit
    /// (`gemm_overhead_us`), which every kernel on the stream pays, memory-bound ones too.
    kernel_s: f64,
    /// Training (Transformer Engine): each fp8 input quantisation runs as kernels of its
    /// own and writes a column-wise copy where the weight gradient needs one; `false`
    /// (inference engines): fused into the kernel before (norm+quant, activation+quant),
    /// one copy.
    training: bool,
    /// How fp8 inputs are scaled ([`Fp8Recipe`]): passes over the input and kernels.
    recipe: Fp8Recipe,
    fp8: bool,
    /// Compute-time multiplier: how much slower than the median chip the job's slowest
    /// chip runs ([`straggler_pace`]), times the wait of ranks in lockstep for the one
    /// momentarily slowest ([`sync_jitter_pace`]); 1 outside a synchronous job.
    pace: f64,
    /// Bytes per element of the gradient buffer the weight-gradient GEMMs accumulate into.
    grad_bytes: f64,
    /// Forward ops run again in backward by selective recompute (empty otherwise).
    recomputed: RecomputeModules,
    /// The model has multi-head latent attention (its RoPE belongs to `mla_up_proj`).
    mla: bool,
    /// Share of the SMs the forward GEMMs whose output is reduce-scattered under TP overlap
    /// (`out_proj`, `mlp_down`) give up to the communication kernel
    /// ([`Plan::tp_comm_overlap_sms`] / SMs); 0 without that overlap.
    rs_overlap_share: f64,
    /// Speed compute loses while communication hides under it
    /// (`efficiency.comm_overlap_slowdown`).
    overlap: f64,
    /// The routed experts' GEMMs run one kernel per local expert (and, in fp8, quantise
    /// each expert's input on its own), as Transformer Engine's `GroupedLinear` does in an
    /// eager MoE layer; `false`: one grouped kernel for all of them.
    per_expert_kernels: bool,
}

impl<'a> Ctx<'a> {
    /// The compute context of `precision` on `acc` (GEMMs at that precision's peak and
    /// efficiency, attention at the bf16 peak), collectives timed by `timer`.
    fn new(acc: &'a Accelerator, precision: Precision, timer: &'a dyn CollectiveTimer) -> Self {
        let fp8 = matches!(precision, Precision::Fp8 | Precision::Fp4);
        let e = &acc.efficiency;
        Ctx {
            acc,
            timer,
            gemm_peak: peak_tflops(acc, precision) * 1e12,
            gemm_eff: match precision {
                Precision::Fp8 => e.gemm_fp8_fast_acc.unwrap_or(e.gemm_fp8),
                Precision::Fp4 => e.fp4_gemm(),
                _ => e.gemm_bf16,
            },
            gemm_bwd_eff: match precision {
                Precision::Fp8 => e.gemm_fp8_split_acc.unwrap_or(e.gemm_fp8),
                Precision::Fp4 => e.fp4_gemm(),
                _ => e.gemm_bf16,
            },
            bf16_peak: peak_tflops(acc, Precision::Bf16) * 1e12,
            hbm_bps: acc.hbm_tbps * 1e12 * acc.efficiency.hbm,
            gemm_bps: acc.hbm_tbps * 1e12 * acc.efficiency.hbm_gemm,
            gemm_in_bytes: match precision {
                Precision::Fp32 | Precision::Tf32 => 4.0,
                Precision::Fp8 => 1.0,
                // NVFP4: 4-bit elements plus one 8-bit scale per 16.
                Precision::Fp4 => 0.5625,
                _ => 2.0,
            },
            gemm_out_bytes: match precision {
                Precision::Fp32 | Precision::Tf32 => 4.0,
                _ => 2.0,
            },
            kernel_s: acc.efficiency.gemm_overhead_us * 1e-6,
            training: true,
            recipe: Fp8Recipe::Delayed,
            fp8,
            pace: 1.0,
            grad_bytes: 4.0,
            recomputed: RecomputeModules::NONE,
            mla: false,
            rs_overlap_share: 0.0,
            overlap: e.overlap_slowdown(),
            per_expert_kernels: false,
        }
    }

    /// The same context running routed experts' GEMMs one kernel per expert.
    fn per_expert(self, on: bool) -> Self {
        Ctx {
            per_expert_kernels: on,
            ..self
        }
    }

    /// The same context counting the forward time of the ops `modules` recompute.
    fn recomputing(self, modules: RecomputeModules, mla: bool) -> Self {
        Ctx {
            recomputed: modules,
            mla,
            ..self
        }
    }

    /// The same context accumulating weight gradients into `bytes`-byte elements.
    fn grads(self, bytes: f64) -> Self {
        Ctx {
            grad_bytes: bytes,
            ..self
        }
    }

    /// The same context quantising fp8 GEMM inputs by `recipe`.
    fn scaled_by(self, recipe: Fp8Recipe) -> Self {
        Ctx { recipe, ..self }
    }

    /// The same context with compute running `pace` times slower.
    fn paced(self, pace: f64) -> Self {
        Ctx { pace, ..self }
    }

    /// The same context with the reduce-scatter-overlapped forward GEMMs on `1 - share` of
    /// the SMs.
    fn rs_overlapped(self, share: f64) -> Self {
        Ctx {
            rs_overlap_share: share,
            ..self
        }
    }

    fn gemm(&self, m: f64, n: f64, k: f64, count: f64) -> f64 {
        self.gemm_on(m, n, k, count, 1.0)
    }

    /// A backward GEMM (data or weight gradient), at `gemm_bwd_eff`; `quantise`: its
    /// A operand is quantised for it (the data gradient's output gradient), not reused
    /// from an earlier quantisation (the weight gradient's input and output gradient).
    /// The weight gradient (`quantise: false`) accumulates into the main-grad buffer,
    /// whose traffic its caller charges, so its output is left out of the memory floor.
    fn gemm_bwd(&self, m: f64, n: f64, k: f64, count: f64, quantise: bool) -> f64 {
        let q = if quantise {
            self.quant(m, k, count)
        } else {
            0.0
        };
        let out = if quantise { self.gemm_out_bytes } else { 0.0 };
        self.gemm_kernels(m, n, k, count, 1.0, self.gemm_bwd_eff, out) + q
    }

    /// A GEMM running on `sms` (a fraction) of the SMs: its FLOPs take `1 / sms` longer.
    fn gemm_on(&self, m: f64, n: f64, k: f64, count: f64, sms: f64) -> f64 {
        self.gemm_with(m, n, k, count, sms, self.gemm_eff) + self.quant(m, k, count)
    }

    /// The GEMM kernels alone ([`Ctx::gemm_kernels`], the output written at the
    /// precision's width).
    fn gemm_with(&self, m: f64, n: f64, k: f64, count: f64, sms: f64, eff: f64) -> f64 {
        self.gemm_kernels(m, n, k, count, sms, eff, self.gemm_out_bytes)
    }

    /// The roofline of `count` GEMMs `C[m,n] = A[m,k]·B[k,n]`: the longer of their FLOPs at
    /// `eff` of the peak on `sms` of the SMs and their operands (A, B, and C at `out_bytes`
    /// an element) streamed at the GEMM stream rate, plus the fixed per-kernel cost. A GEMM
    /// with a small dimension (an expert with a few hundred tokens, a weight gradient over
    /// them) does too little work per byte to be compute-bound: one with 128 rows against
    /// a 2,880 x 5,760 weight streams 33 MB for 4.2 GFLOP (measured on the H100,
    /// calibration/h100-small-expert-gemm-measured.json).
    #[allow(clippy::too_many_arguments)]
    fn gemm_kernels(
        &self,
        m: f64,
        n: f64,
        k: f64,
        count: f64,
        sms: f64,
        eff: f64,
        out_bytes: f64,
    ) -> f64 {
        let flops = 2.0 * m * n * k * count;
        let compute = flops / (self.gemm_peak * eff * sms);
        if self.gemm_bps == f64::INFINITY {
            // No memory floor (the serving model's `gemm_time`).
            return compute + self.kernel_s;
        }
        let bytes = count * (self.gemm_in_bytes * (m * k + k * n) + out_bytes * m * n);
        compute.max(bytes / self.gemm_bps) + self.kernel_s
    }

    /// Quantising an fp8 GEMM's A operand [m, k] (`count` of them): read bf16, write fp8
    /// (current scaling reads it once more for its amax); as kernels of their own they pay
    /// the fixed per-kernel cost too. Zero outside fp8.
    fn quant(&self, m: f64, k: f64, count: f64) -> f64 {
        if !self.fp8 {
            return 0.0;
        }
        let bytes = self
            .recipe
            .quant_bytes_per_element(self.training, self.acc.fp8_gemm_any_layout);
        let mut t = bytes * m * k * count / self.hbm_bps;
        if self.training {
            t += self.recipe.quant_kernels() * self.kernel_s;
        }
        t
    }

    /// Fused attention time. `head_flops` = d_qk + d_v: the efficiency calibrated at
    /// d = 128 is scaled by how much of each score's cost is matmul rather than softmax.
    fn attention(&self, flops: f64, seq: f64, head_flops: f64, backward: bool) -> f64 {
        let (a, half) = self.attention_curve(head_flops, backward);
        let eff = a * seq / (seq + half);
        flops / (self.bf16_peak * eff)
    }

    /// Fused attention time of a sliding window `window` keys wide over a longer sequence
    /// (a band). The causal curve `a·s/(s + half)` is what tiles of 128 query rows give
    /// when each CTA walks its `t + 1` key tiles, the diagonal one cut by the mask, plus a
    /// fixed cost of `c0 = (half/128 − 1)/2` tiles; in a band each CTA walks the `w/128`
    /// tiles of the window plus those its rows' unaligned edge spans (one for a 128-row
    /// unit, two for Blackwell's two-CTA forward, `efficiency.attention_fwd_tile_rows`), and
    /// both edge tiles are cut, one more than causal: [`BAND_EDGE_TILES`] more. Efficiency
    /// `a·u/(u + unit + c0 + edge)` with `u = w/128`; a wide band tends to `a`, as a long
    /// causal sequence does.
    fn attention_band(&self, flops: f64, window: f64, head_flops: f64, backward: bool) -> f64 {
        let (a, half) = self.attention_curve(head_flops, backward);
        let c0 = (half / ATTENTION_TILE - 1.0).max(0.0) / 2.0;
        let u = window / ATTENTION_TILE;
        // The forward pass walks the keys of its whole work unit's rows (two CTAs' on
        // Blackwell); backward, each CTA owns a key tile and walks the query tiles.
        let unit = if backward {
            1.0
        } else {
            self.acc
                .efficiency
                .attention_fwd_tile_rows
                .map_or(1.0, |r| (r / ATTENTION_TILE).max(1.0))
        };
        let eff = a * u / (u + unit + c0 + BAND_EDGE_TILES);
        flops / (self.bf16_peak * eff)
    }

    /// The attention curve's plateau (scaled to the head dimension) and half-efficiency
    /// length, forward or backward.
    fn attention_curve(&self, head_flops: f64, backward: bool) -> (f64, f64) {
        let e = &self.acc.efficiency;
        let (a, half, x, per) = if backward {
            (
                e.attention_bwd,
                e.attention_bwd_seq_half,
                e.attention_bwd_score_flops,
                5.0,
            )
        } else {
            (
                e.attention_fwd,
                e.attention_fwd_seq_half,
                e.attention_fwd_score_flops,
                2.0,
            )
        };
        let f = per * head_flops;
        let f128 = per * 256.0;
        let head = (f / (f + x)) / (f128 / (f128 + x));
        (a * head, half)
    }

    /// Time of a memory-bound kernel's traffic (its fixed cost is `kernel_s`).
    fn memory(&self, bytes: f64) -> f64 {
        bytes / self.hbm_bps
    }

    /// Forward, backward, weight-gradient and attention-core forward time of an op list.
    fn times(&self, ops: &[Op]) -> (f64, f64, f64, f64) {
        let t = self.op_times(ops);
        (t.0, t.1, t.2, t.3)
    }

    /// As [`Ctx::times`], plus the forward time of the ops selective recompute runs again.
    fn op_times(&self, ops: &[Op]) -> (f64, f64, f64, f64, f64) {
        let (mut f, mut b, mut w, mut attn_f) = (0.0, 0.0, 0.0, 0.0);
        let mut rec_f = 0.0;
        for op in ops {
            let f_before = f;
            match op.kind {
                OpKind::Gemm { m, n, k, count } => {
                    // Transformer Engine's userbuffers reduce-scatter the outputs of these
                    // two forward GEMMs chunk by chunk while they run, on SMs they reserve.
                    let sms = if matches!(op.name, "out_proj" | "mlp_down") {
                        1.0 - self.rs_overlap_share
                    } else {
                        1.0
                    };
                    // Kernels beyond the one grouped GEMM and quantisation the op is
                    // costed with, when the routed experts run eagerly: Transformer
                    // Engine's GroupedLinear launches one cuBLAS GEMM per local expert in
                    // each of the forward, data- and weight-gradient passes
                    // (`nvte_multi_stream_cublas_gemm`), and quantises each expert's input
                    // and output gradient on its own outside delayed scaling.
                    let (gemms, quants) =
                        if self.per_expert_kernels && op.name.starts_with("expert_") {
                            let q = if self.fp8 {
                                self.recipe.split_quant_kernels(count) - self.recipe.quant_kernels()
                            } else {
                                0.0
                            };
                            ((count - 1.0).max(0.0), q.max(0.0))
                        } else {
                            (0.0, 0.0)
                        };
                    let (extra_gemms, extra_quants) =
                        (gemms * self.kernel_s, quants * self.kernel_s);
                    let t = self.gemm_on(m, n, k, count, sms) + extra_gemms + extra_quants;
                    f += t;
                    if op.name.starts_with("core_") {
                        attn_f += t;
                    }
                    // dgrad: [m,n]x[n,k], quantising the output gradient [m,n] once
                    // (its column-wise copy serves the weight gradient too); wgrad:
                    // [k,m]x[m,n], both operands already quantised (the forward input's
                    // column-wise copy and the output gradient's).
                    let dg = self.gemm_bwd(m, k, n, count, true) + extra_gemms + extra_quants;
                    // The weight gradient accumulates into the main-grad buffer across
                    // micro-batches (Megatron gradient-accumulation fusion): the GEMM's
                    // epilogue reads and writes one gradient element per weight element.
                    let wg = self.gemm_bwd(k, n, m, count, false)
                        + 2.0 * self.grad_bytes * k * n * count / self.hbm_bps
                        + extra_gemms;
                    b += dg + wg;
                    w += wg;
                }
                OpKind::Attention {
                    sq,
                    skv,
                    d_qk,
                    d_v,
                    window,
                    ..
                } => {
                    let flops = op.flops();
                    // Backward recomputes QK^T and forms dV, dP, dQ, dK: 2·(3·d_qk + 2·d_v)
                    // FLOPs per score against the forward's 2·(d_qk + d_v) (2.5× when equal).
                    let ratio = (3.0 * d_qk + 2.0 * d_v) / (d_qk + d_v);
                    let (t, tb) = if window > 0.0 && window < skv {
                        // A sliding window over a longer sequence: a band.
                        (
                            self.attention_band(flops, window, d_qk + d_v, false),
                            self.attention_band(ratio * flops, window, d_qk + d_v, true),
                        )
                    } else {
                        // The kernel's span per query: the shorter of the two lengths.
                        let seq = sq.min(skv);
                        (
                            self.attention(flops, seq, d_qk + d_v, false),
                            self.attention(ratio * flops, seq, d_qk + d_v, true),
                        )
                    };
                    f += t;
                    attn_f += t;
                    b += tb;
                }
                OpKind::SinkGrad { rows } => {
                    // Inside the fused backward kernel: no launch of its own.
                    b += rows * self.acc.sink_grad_ns() * 1e-9;
                }
                OpKind::Memory { bytes, backward } => {
                    // One kernel each way, each paying the fixed launch-and-drain cost.
                    let t = self.memory(bytes) + self.kernel_s;
                    f += t;
                    b += self.memory(backward) + self.kernel_s;
                    if op.name.starts_with("core_") {
                        attn_f += t;
                    }
                }
            }
            if self.recomputed.recomputes_op(op.name, self.mla) {
                rec_f += f - f_before;
            }
        }
        let p = self.pace;
        (f * p, b * p, w * p, attn_f * p, rec_f * p)
    }

    fn coll(&self, op: CollOp, bytes: f64, group: &Group) -> f64 {
        coll_time(self.timer, op, bytes, group)
    }

    fn coll_during(&self, op: CollOp, bytes: f64, group: &Group, background: &[Concurrent]) -> f64 {
        if group.size() <= 1 || bytes <= 0.0 {
            return 0.0;
        }
        self.timer
            .time_during(op, bytes, &group.span, &group.layout, background)
    }
}

/// Share of a rank's forward (and backward) passes that combined 1F1B cannot pair with a
/// pass of the other direction: the pipeline's warm-up forwards and cool-down backwards,
/// averaged over the stages. Megatron-Core warms up `pp - 1 - rank` micro-batches in 1F1B,
/// `2·(pp - 1 - rank) + (vpp - 1)·group` chunks interleaved (`group` micro-batches per
/// virtual stage, `pp` by default), of `m·vpp` chunk passes; without a pipeline the first
/// forward and the last backward run alone (1 of `m`).
pub fn unpaired_share(plan: &Plan) -> f64 {
    let m = plan.micro_batches().max(1) as f64;
    let (pp, vpp) = (plan.pp as f64, plan.vpp.max(1) as f64);
    let warm = if plan.pp <= 1 {
        1.0
    } else if plan.vpp > 1 {
        (pp - 1.0) + (vpp - 1.0) * plan.vpp_group.max(1) as f64
    } else {
        (pp - 1.0) / 2.0
    };
    (warm / (m * vpp)).min(1.0)
}

/// Forward and backward compute time (seconds) of one layer for one micro-batch on one
/// rank: the op-sum of the step model, without communication or recompute.
pub fn layer_compute_times(
    acc: &Accelerator,
    levels: &[Level],
    model: &Transformer,
    shard: &myriad_model::Shard,
    precision: Precision,
    layer: u32,
) -> (f64, f64) {
    let timer = Analytical { levels };
    let ctx = Ctx::new(acc, precision, &timer);
    let mut ops = Vec::with_capacity(24);
    model.layer_ops(layer, shard, &mut ops);
    let (f, b, _, _) = ctx.times(&ops);
    (f, b)
}

/// Time (seconds) of `count` GEMMs `C[m,n] = A[m,k]·B[k,n]` in `precision` on `acc`: the step
/// model's form (FLOPs / (peak × gemm efficiency) + fixed overhead, plus the fp8 input
/// quantisation pass, fused into the kernel before as inference engines do). Used by the
/// serving model so that both share one compute model.
pub fn gemm_time(
    acc: &Accelerator,
    precision: Precision,
    m: f64,
    n: f64,
    k: f64,
    count: f64,
) -> f64 {
    let timer = Analytical { levels: &[] };
    let ctx = Ctx::new(acc, precision, &timer);
    // Inference engines' fp8 GEMMs are neither all fast-accumulating (per-tensor cuBLASLt)
    // nor all promoted (DeepGEMM's block-scaled kernels promote every 128 K elements): the
    // blended fit over both, not Transformer Engine's forward choice.
    let eff = match precision {
        Precision::Fp8 => acc.efficiency.gemm_fp8,
        Precision::Fp4 => acc.efficiency.fp4_gemm(),
        _ => ctx.gemm_eff,
    };
    // The serving model streams weights at their stored precision itself (a weight-only
    // fp4 expert is read in 4 bits but multiplied in bf16) and takes the longer of that
    // and this compute time: no memory floor here.
    let ctx = Ctx {
        training: false,
        gemm_eff: eff,
        gemm_bps: f64::INFINITY,
        ..ctx
    };
    ctx.gemm(m, n, k, count)
}

/// Forward fused-attention time (seconds) of `flops` FLOPs at sequence length `seq` with
/// `head_flops` = d_qk + d_v, on the bf16 peak (the step model's attention form).
pub fn attention_fwd_time(acc: &Accelerator, flops: f64, seq: f64, head_flops: f64) -> f64 {
    let timer = Analytical { levels: &[] };
    let ctx = Ctx::new(acc, Precision::Bf16, &timer);
    ctx.attention(flops, seq, head_flops, false)
}

/// Forward fused-attention time (seconds) of `flops` FLOPs in a sliding window `window`
/// keys wide over longer sequences (a band), with `head_flops` = d_qk + d_v, on the bf16
/// peak (the step model's band form, `Ctx::attention_band`).
pub fn attention_band_fwd_time(acc: &Accelerator, flops: f64, window: f64, head_flops: f64) -> f64 {
    let timer = Analytical { levels: &[] };
    let ctx = Ctx::new(acc, Precision::Bf16, &timer);
    ctx.attention_band(flops, window, head_flops, false)
}

/// As [`op_times`], with the routed experts' GEMMs run one kernel per local expert
/// (Transformer Engine's eager `GroupedLinear`, `training.moe_grouped_kernel: false`): each
/// expert GEMM pays the fixed per-kernel cost.
pub fn op_times_per_expert(acc: &Accelerator, precision: Precision, ops: &[Op]) -> (f64, f64) {
    let timer = Analytical { levels: &[] };
    let ctx = Ctx::new(acc, precision, &timer).per_expert(true);
    let (f, b, _, _) = ctx.times(ops);
    (f, b)
}

/// Forward and backward time (seconds) of one fused-attention op on `acc` (bf16).
pub fn attention_times(acc: &Accelerator, op: &Op) -> (f64, f64) {
    op_times(acc, Precision::Bf16, std::slice::from_ref(op))
}

/// Forward and backward compute time (seconds) of a list of ops on `acc` in `precision`:
/// the step model's op-sum, no communication, recompute or gradient accumulation beyond
/// the weight-gradient epilogue.
pub fn op_times(acc: &Accelerator, precision: Precision, ops: &[Op]) -> (f64, f64) {
    let timer = Analytical { levels: &[] };
    let ctx = Ctx::new(acc, precision, &timer);
    let (f, b, _, _) = ctx.times(ops);
    (f, b)
}

/// Dense peak (TFLOP/s) of the GEMMs of a training precision, or `None` when the
/// accelerator does not support it. fp32 GEMMs run on TF32 tensor cores (cuBLAS's and every
/// framework's choice for fp32 training on them); fp16 falls back to the bf16 peak.
pub fn supported_peak_tflops(acc: &Accelerator, p: Precision) -> Option<f64> {
    let d = &acc.dense_tflops;
    match p {
        Precision::Fp32 | Precision::Tf32 => d.tf32,
        Precision::Fp16 => d.fp16.or(d.bf16),
        Precision::Bf16 => d.bf16,
        Precision::Fp8 => d.fp8,
        Precision::Fp4 => d.fp4,
    }
    .filter(|x| *x > 0.0)
}

/// As [`supported_peak_tflops`], with bf16 for a precision the accelerator lacks
/// (`plan::resolve` and the search reject those plans before they get here).
pub fn peak_tflops(acc: &Accelerator, p: Precision) -> f64 {
    supported_peak_tflops(acc, p)
        .or(acc.dense_tflops.bf16)
        .unwrap_or(1.0)
}

/// Expected maximum of `n` independent standard normal draws (Blom's approximation
/// Φ⁻¹((n − 0.375)/(n + 0.25)); within 5% of the exact order statistic for every n ≥ 2,
/// e.g. 1.42 for 8, 3.26 for 1,024, 3.85 for 10,000). 0 for n ≤ 1.
pub fn expected_max_std_normal(n: u64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    Normal::standard().inverse_cdf((n - 0.375) / (n + 0.25))
}

/// Compute-time multiplier of a synchronous job on `n` chips of `acc`: every step waits at
/// its collectives for the slowest chip, which runs `speed_sigma · E[max of n normals]`
/// slower than the median chip the catalog's efficiencies describe (Sinha et al., SC'22).
pub fn straggler_pace(acc: &Accelerator, n: u64) -> f64 {
    1.0 + acc.efficiency.speed_sigma * expected_max_std_normal(n)
}

/// Compute-time multiplier of `g` ranks that synchronise within every layer (the tensor,
/// context and expert parallel ranks of one layer): at each collective they wait for the
/// one whose clock the power controller holds lowest at that moment,
/// `speed_jitter · E[max of g normals]` behind the mean (`ComputeEfficiency::speed_jitter`).
pub fn sync_jitter_pace(acc: &Accelerator, g: u64) -> f64 {
    1.0 + acc.efficiency.jitter() * expected_max_std_normal(g)
}

/// Data-parallel synchronisation of one pipeline stage's parameters, once per step.
#[derive(Debug, Clone, Copy)]
pub struct DpOverlap {
    /// Gradient reduce-scatter (or all-reduce) of all the stage's parameters, seconds.
    pub rs: f64,
    /// Parameter all-gather of all of them (0 without a sharded optimizer), seconds.
    pub ag: f64,
    /// One micro-batch's forward and backward over the whole stage, seconds.
    pub fwd: f64,
    pub bwd: f64,
    /// Model chunks per stage (the interleaved schedule's virtual stages; 1 otherwise).
    pub chunks: u32,
    pub pp: u32,
    /// Speed compute loses while communication runs beside it
    /// (`efficiency.comm_overlap_slowdown` of the accelerator).
    pub slowdown: f64,
}

/// Exposed data-parallel time of a step whose gradient reduction and parameter gather
/// overlap compute chunk by chunk, as Megatron-Core does (`overlap_grad_reduce`,
/// `overlap_param_gather`):
/// - chunk 0's all-gather, launched at the end of the optimizer step, hides bucket by
///   bucket under its own first forward; under the interleaved schedule each later
///   chunk's all-gather is launched when the chunk before it starts its first forward
///   (`param_sync_func` in `forward_backward_pipelining_with_interleaving`), p chunk
///   forwards (the warm-up runs p micro-batches per chunk) before it is needed, and also
///   hides bucket by bucket under its own first forward;
/// - each chunk's reduce-scatter is launched after its last backward (`grad_sync_func`);
///   the cool-down finishes chunks p chunk-backwards apart, last chunk first, and the
///   reduce-scatters queue on one stream, so what outlasts the last backward is exposed;
/// - one bucket (`bucket`, the share of the stage's parameters in one bucket) of each is
///   always exposed, and hidden traffic slows compute by `slowdown` of its time.
///
/// With one chunk this is the classic form: `(rs − bwd)⁺ + (ag − fwd)⁺` plus a bucket.
pub fn dp_overlap_exposed(d: DpOverlap, bucket: f64) -> f64 {
    let v = d.chunks.max(1) as f64;
    let p = d.pp.max(1) as f64;
    let (rs_c, ag_c, f_c, b_c) = (d.rs / v, d.ag / v, d.fwd / v, d.bwd / v);
    let ag_exposed = (ag_c - f_c).max(0.0) + (v - 1.0) * (ag_c - (p + 1.0) * f_c).max(0.0);
    // Reduce-scatter chain, in seconds from the end of the last backward: chunk j's
    // gradients stream out bucket by bucket during its last backward (one chunk-backward),
    // which ends j·p chunk-backwards before the step's last one.
    let mut free = f64::NEG_INFINITY;
    for j in (0..d.chunks.max(1)).rev() {
        let ready = -(j as f64 * p + 1.0) * b_c;
        free = free.max(ready) + rs_c;
    }
    let rs_exposed = free.max(0.0);
    let hidden = (d.rs - rs_exposed).max(0.0) + (d.ag - ag_exposed).max(0.0);
    ag_exposed + rs_exposed + (d.rs + d.ag) * bucket.min(1.0 / v) + d.slowdown * hidden
}

/// Fixed memory outside the model (CUDA context, NCCL buffers, allocator fragmentation).
pub const BUFFERS_GIB: f64 = 3.0;

/// Time an eager MoE layer takes beyond its kernels' GPU time, per layer and micro-batch
/// (forward and backward), seconds. A MoE layer runs many small kernels (router, top-k,
/// sorts, histograms, index maps, the load-balancing loss: about a hundred forward and
/// backward), and Megatron-Core's dropless dispatchers read the per-expert token counts on
/// the host every forward (the all-to-all's split sizes, `cuda_sync_point` in
/// `token_dispatcher.py`; Transformer Engine's grouped GEMM takes them as a host list,
/// `m_splits`), so the GPU idles between kernels and while the host catches up.
/// Measured on the lent H100 (calibration/h100-moe-fused-measured.json,
/// `moe_fused_bench.py`): eight MoE blocks back to back, forward then backward, with fused
/// gather permutes and one host read of the counts a layer as Megatron makes (`sync1`),
/// run 0.31-2.55 ms a layer above their summed kernel time at eight shapes (Qwen3 30B and
/// 235B, gpt-oss-120b, DeepSeek-V3, Mixtral; 4,096-16,384 tokens a rank), an amount that
/// does not follow the layer's GPU time (2.5-19.9 ms); this is the median. Without the
/// host read the blocks still run 0.21-2.44 ms above (median 0.93): the read itself costs
/// 0.18 ms on average, the rest is the eager layer's kernel stream. A full-iteration CUDA
/// graph removes both (`Plan::moe_full_graph`). Host and launch time: not scaled by the
/// accelerator's speed.
pub const MOE_EAGER_OVERHEAD_S: f64 = 1.0887e-3;

/// Host time of one eager PyTorch view op (`narrow`, `view`) called from Python: 3.3-3.4 µs,
/// PyTorch's operator micro-benchmark of eager `split` on CUDA tensors (PR #32194, 2020).
pub const PY_VIEW_OP_S: f64 = 3.35e-6;

/// Host time of one per-chunk copy in torch.distributed's list collectives before PyTorch
/// 1.9 (`all_gather(tensor_list, t)` copies each of the n gathered chunks out with its own
/// `copy_`, `reduce_scatter(t, tensor_list)` each of the n inputs in; PyTorch PR #33924
/// measured a 4.6x slowdown from them, `_all_gather_base` (PRs #56315, #57769) removed
/// them). Each copy is one kernel launch: [`myriad_collective::LAUNCH_US`], the launch cost
/// calibrated on the DGX H100 all-reduce curve.
pub const LIST_COPY_S: f64 = myriad_collective::LAUNCH_US * 1e-6;

/// Query rows (and keys) per tile of the fused attention kernels the curves were fitted on
/// (FlashAttention-style, cuDNN's included).
pub const ATTENTION_TILE: f64 = 128.0;

/// Key tiles' worth of time the second masked edge of a band costs beyond causal attention's
/// one (see `Ctx::attention_band`): fitted to cuDNN 9.19's 128-token-window kernels of
/// gpt-oss-120b's shape (64 heads of 64, one and four 4,096-token sequences, forward and
/// backward) on the lent H100 and H200 (`calibration/h100-sink-attention-measured.json`,
/// `h200-…`): the eight measurements give 0.5-1.6, mean 1.1. With it the band's forward is
/// within −11…+2% of them and its backward within −10…+11%, where taking the band for a
/// 128-token sequence gave −21…−10% and +17…+43%.
const BAND_EDGE_TILES: f64 = 1.1;

/// Host work per rank of one DeepSpeed v0.3 parameter all-gather: a Python `narrow` to
/// build the rank's output view, and torch's copy of that chunk.
pub const LIST_GATHER_HOST_S: f64 = PY_VIEW_OP_S + LIST_COPY_S;

/// Host work per rank of one DeepSpeed v0.3 gradient reduce-scatter: `view(-1).narrow` to
/// build the rank's input, and torch's copy of it into the flat buffer.
pub const LIST_REDUCE_SCATTER_HOST_S: f64 = 2.0 * PY_VIEW_OP_S + LIST_COPY_S;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Estimates one training step of `model` under `plan` on `cluster`, with the analytical
/// collective model.
pub fn estimate(model: &Transformer, plan: &Plan, cluster: &BuiltCluster) -> StepEstimate {
    estimate_with(
        model,
        plan,
        cluster,
        &Analytical {
            levels: &cluster.levels,
        },
    )
}

/// As [`estimate`], timing every collective of the step with `timer` (e.g. the flow-level
/// network simulation of `myriad-netsim`).
pub fn estimate_with(
    model: &Transformer,
    plan: &Plan,
    cluster: &BuiltCluster,
    timer: &dyn CollectiveTimer,
) -> StepEstimate {
    let acc = &cluster.accelerator;
    let levels = &cluster.levels[..];
    let fp8 = matches!(plan.precision, Precision::Fp8 | Precision::Fp4);
    let gemm_peak = peak_tflops(acc, plan.precision) * 1e12;
    let bf16_peak = peak_tflops(acc, Precision::Bf16) * 1e12;
    // The step runs at the pace of the job's slowest chip, and the ranks that synchronise
    // within every layer (TP, CP and, in MoE layers, EP) wait at each collective for the
    // one whose clock is momentarily lowest.
    let straggler = straggler_pace(acc, plan.accelerators);
    let lockstep_ranks = plan.lockstep_ranks(model);
    let lockstep = sync_jitter_pace(acc, lockstep_ranks);
    let pace = straggler * lockstep;
    // Gradient buffers: fp32 main grads, or the 2-byte parameter precision.
    let grad_bytes = if plan.grad_reduce_in_fp32 { 4.0 } else { 2.0 };
    let selective = if plan.recompute == Recompute::Selective {
        plan.recompute_modules
    } else {
        RecomputeModules::NONE
    };
    let rs_share = match acc.sm_count {
        Some(sms) if plan.tp > 1 && plan.tp_comm_overlap => {
            (plan.tp_comm_overlap_sms as f64 / sms as f64).min(0.9)
        }
        _ => 0.0,
    };
    let ctx = Ctx::new(acc, plan.precision, timer)
        .scaled_by(plan.fp8_recipe)
        .rs_overlapped(rs_share)
        .paced(pace)
        .grads(grad_bytes)
        .recomputing(selective, model.mla.is_some())
        .per_expert(!plan.moe_grouped_kernel);
    let shard = plan.shard();
    let h = model.hidden as f64;
    let tokens_mb = plan.micro_batch as f64 * model.seq_len as f64 / plan.cp as f64;

    // Groups on the hierarchy.
    let g_tp = Group::of(plan, levels, Dim::Tp);
    let g_cp = Group::of(plan, levels, Dim::Cp);
    let g_ep = Group::of(plan, levels, Dim::Ep);
    let g_dp = Group::of(plan, levels, Dim::Dp);
    let g_pp = Group::of(plan, levels, Dim::Pp);

    // Tokens one EP rank routes per micro-batch (sequence parallelism splits them over TP).
    let ep_tokens = tokens_mb
        / if plan.sequence_parallel {
            plan.tp as f64
        } else {
            1.0
        };
    let busiest_expert_rank = model
        .moe
        .as_ref()
        .map_or(1.0, |m| busiest_expert_rank_factor(m, plan.ep, ep_tokens));

    // Per-layer times for one micro-batch, dense and MoE layer kinds.
    let mut ops: Vec<Op> = Vec::with_capacity(24);
    let layer_times = |layer: u32, ops: &mut Vec<Op>| -> StageTimes {
        ops.clear();
        model.layer_ops(layer, &shard, ops);
        // The routed experts run the busiest EP rank's share of the tokens.
        if busiest_expert_rank > 1.0 && model.is_moe_layer(layer) {
            scale_routed_experts(ops, busiest_expert_rank);
        }
        let (f, b, w, attn_f, rec_f) = ctx.op_times(ops);
        let mut st = StageTimes {
            fwd: f,
            bwd: b,
            bwd_w: w,
            ..Default::default()
        };
        st.recompute = match plan.recompute {
            Recompute::None => 0.0,
            Recompute::Selective => rec_f,
            Recompute::Full => plan.recompute_fraction * f,
        };
        // A whole recomputed MLP or MoE block runs its forward communication again: one
        // block's forward TP collectives (a quarter of the layer's), and the MoE dispatch
        // and combine.
        let moe_layer = model.is_moe_layer(layer);
        let block_again = if moe_layer {
            selective.contains(RecomputeModule::Moe)
        } else {
            selective.contains(RecomputeModule::Mlp)
        };
        // TP: with SP, all-gather before and reduce-scatter after each of the two blocks;
        // without SP, one all-reduce after each block. Same again in backward.
        if plan.tp > 1 {
            let bytes = tokens_mb * h * 2.0;
            let per_block = if plan.sequence_parallel {
                ctx.coll(CollOp::AllGather, bytes, &g_tp)
                    + ctx.coll(CollOp::ReduceScatter, bytes, &g_tp)
            } else {
                ctx.coll(CollOp::AllReduce, bytes, &g_tp)
            };
            let comm = 4.0 * per_block; // 2 blocks × (forward + backward)
            let exposed = if plan.tp_comm_overlap {
                // Chunked overlap: the first of tp chunks is exposed, the rest hides under
                // the GEMMs of the layer (forward + backward GEMM time).
                let gemm: f64 = ops
                    .iter()
                    .filter(|o| matches!(o.kind, OpKind::Gemm { .. }))
                    .map(|o| o.flops())
                    .sum::<f64>()
                    * 3.0
                    / (ctx.gemm_peak * ctx.gemm_eff);
                let first = comm / plan.tp as f64;
                let rest = comm - first;
                let hidden = rest.min(gemm);
                // The forward reduce-scatters (a quarter of the traffic) already cost their
                // GEMMs the SMs they reserve (`rs_overlap_share`); the rest slows compute by
                // the measured slowdown of overlapped compute.
                let sm_share_paid = if ctx.rs_overlap_share > 0.0 {
                    0.25
                } else {
                    0.0
                };
                first + (rest - gemm).max(0.0) + ctx.overlap * hidden * (1.0 - sm_share_paid)
            } else {
                comm
            };
            let recompute_comm = if plan.recompute == Recompute::Full {
                plan.recompute_fraction * exposed / 2.0
            } else if block_again {
                exposed / 4.0
            } else {
                0.0
            };
            st.tp = exposed + recompute_comm;
        }
        // CP: ring exchange of K and V (cp - 1 steps) overlapped with attention.
        if plan.cp > 1 {
            // K and V elements per token on one TP rank: whole KV heads (replicated where
            // TP exceeds kv_heads, and each replica travels its own CP ring).
            let kv_dim = match &model.mla {
                Some(m) => {
                    (model.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)) as f64
                        / plan.tp as f64
                }
                None => 2.0 * model.kv_heads_per_rank(plan.tp) * model.head_dim() as f64,
            };
            let kv_bytes = tokens_mb * kv_dim * 2.0;
            st.cp = match plan.cp_comm {
                CpComm::P2p => {
                    let step = ctx.coll(CollOp::SendRecv, kv_bytes, &g_cp);
                    let steps = (plan.cp - 1) as f64;
                    let attn_chunk = attn_f / plan.cp as f64;
                    let fwd = step + steps * (step - attn_chunk).max(0.0);
                    // Backward sends K, V and their gradients; attention backward is ~2.5x
                    // longer.
                    let bwd = 2.0 * step + steps * (2.0 * step - 2.5 * attn_chunk).max(0.0);
                    let hidden =
                        steps * (step.min(attn_chunk) + (2.0 * step).min(2.5 * attn_chunk));
                    fwd + bwd + ctx.overlap * hidden
                }
                // Attention waits for the gathered keys and values; their gradients are
                // reduce-scattered back after it (Llama 3, arXiv:2407.21783 §3.3.2: the
                // exposed all-gather is small next to attention with GQA's few KV heads).
                CpComm::AllGather => {
                    let all = kv_bytes * plan.cp as f64;
                    ctx.coll(CollOp::AllGather, all, &g_cp)
                        + ctx.coll(CollOp::ReduceScatter, all, &g_cp)
                }
            };
        }
        // EP: dispatch and combine all-to-all, forward and backward.
        if plan.ep > 1 && model.is_moe_layer(layer) {
            if let Some(m) = &model.moe {
                // Dispatch bytes per element: fp8 only where the framework quantises before
                // the all-to-all (`training.fp8_dispatch`); Megatron-Core dispatches bf16.
                let elem = if fp8 && plan.fp8_dispatch { 1.0 } else { 2.0 };
                // The exchange ends when the busiest rank has received (dispatch) and sent
                // back (combine) its share.
                let one = |elem: f64| {
                    busiest_expert_rank
                        * ep_exchange_on(timer, levels, plan, &g_ep, m, ep_tokens * h * elem)
                };
                let (dispatch, combine) = (one(elem), one(2.0));
                let unhidden = if block_again { 3.0 } else { 2.0 } * (dispatch + combine);
                st.ep = unhidden;
                // DualPipe pairs the chunks itself (`ep_slot` below).
                if plan.ep_overlap && !block_again && plan.schedule != PipelineSchedule::Dualpipe {
                    // Combined 1F1B (Megatron-Core `overlap_moe_expert_parallel_comm`, after
                    // DeepSeek-V3's DualPipe, §3.2.1): this layer's forward for one
                    // micro-batch runs beside its backward for the previous one, each
                    // all-to-all of one under a block of the other: attention forward under
                    // the backward combine, MoE backward under the forward dispatch, MoE
                    // forward under the backward dispatch, attention backward under the
                    // forward combine. Hidden traffic slows the compute it runs beside.
                    let moe_ops: Vec<Op> = ops
                        .iter()
                        .filter(|o| is_moe_block_op(o.name))
                        .copied()
                        .collect();
                    let (fm, bm, _, _) = ctx.times(&moe_ops);
                    let (fa, ba) = (st.fwd - fm, st.bwd - bm);
                    let pairs = [(fa, combine), (bm, dispatch), (fm, dispatch), (ba, combine)];
                    let exposed: f64 = pairs.iter().map(|&(c, t)| (t - c).max(0.0)).sum();
                    let hidden: f64 = pairs.iter().map(|&(c, t)| t.min(c)).sum();
                    // Only the steady state pairs a forward with a backward: the warm-up
                    // forwards and cool-down backwards run alone, their all-to-alls exposed.
                    let alone = unpaired_share(plan);
                    st.ep = (1.0 - alone) * (exposed + ctx.overlap * hidden) + alone * unhidden;
                }
            }
        }
        st
    };

    let moe_layers = model.moe_layers();
    let dense_layers = model.layers - moe_layers;
    let dense_t = if dense_layers > 0 {
        layer_times(model.layer_of_kind(false).unwrap_or(0), &mut ops)
    } else {
        StageTimes::default()
    };
    let moe_t = if moe_layers > 0 {
        let mut t = layer_times(model.layer_of_kind(true).unwrap_or(0), &mut ops);
        // An eager MoE layer idles the GPU beyond its kernels' time: the host's wait for
        // the token counts and the launch gaps of its many small kernels
        // ([`MOE_EAGER_OVERHEAD_S`]); a recomputed MoE block pays it again.
        let again = match plan.recompute {
            Recompute::Full => plan.recompute_fraction,
            _ if selective.contains(RecomputeModule::Moe) => 1.0,
            _ => 0.0,
        };
        let overhead = if plan.moe_full_graph {
            0.0
        } else {
            MOE_EAGER_OVERHEAD_S
        };
        t.fwd += overhead;
        t.recompute += again * overhead;
        t.eager_fwd = overhead;
        t.eager_rec = again * overhead;
        t
    } else {
        StageTimes::default()
    };
    ops.clear();
    model.head_ops(&shard, &mut ops);
    // The output layer is a plain parallel linear in Megatron, outside Transformer
    // Engine's fp8 autocast: it runs in bf16 even in fp8 training.
    let bf16_ctx = Ctx::new(acc, Precision::Bf16, timer)
        .paced(pace)
        .grads(grad_bytes);
    let (head_f, head_b, head_w, _) = bf16_ctx.times(&ops);
    ops.clear();
    model.embedding_ops(&shard, &mut ops);
    let (emb_f, emb_b, _, _) = ctx.times(&ops);
    // Multi-token prediction, on the rank that holds the head: per module a layer of the
    // model's last kind (its communication included), the projection and norms, and the
    // output head and loss once more.
    let mtp = model.mtp_layers as f64;
    let mtp_layer_moe = model.is_moe_layer(model.mtp_layer());
    let mtp_t = if model.mtp_layers > 0 {
        ops.clear();
        model.mtp_ops(&shard, &mut ops);
        let (pf, pb, pw, _) = ctx.times(&ops);
        let l = if mtp_layer_moe { moe_t } else { dense_t };
        let module = StageTimes {
            fwd: pf + head_f,
            bwd: pb + head_b,
            bwd_w: pw + head_w,
            ..Default::default()
        };
        (l + module).scaled(mtp)
    } else {
        StageTimes::default()
    };

    // Rank composition: dense-first layers sit on the first stages (and under DualPipe the
    // first rank holds the deepest chunk as well).
    let pp = plan.pp;
    // Dense and MoE layer counts of rank s.
    let splits: Vec<(f64, f64)> = (0..plan.pp)
        .map(|s| {
            plan.rank_layers(model.layers, s)
                .iter()
                .fold((0.0, 0.0), |(d, m), &(lo, hi)| {
                    let dl = model.dense_layers_in(lo, hi);
                    (d + dl, m + hi - lo - dl)
                })
        })
        .collect();
    let split = |s: u32| -> (f64, f64) { splits[s as usize] };
    let mut stage = |s: u32| -> StageTimes {
        let (d, m) = split(s);
        let mut t = dense_t.scaled(d) + moe_t.scaled(m);
        if plan.holds_embedding(s) {
            t.fwd += emb_f;
            t.bwd += emb_b;
        }
        if plan.holds_head(s) {
            t = t + mtp_t;
            t.fwd += head_f;
            t.bwd += head_b;
            t.bwd_w += head_w;
        }
        t
    };
    let stages: Vec<StageTimes> = (0..pp).map(&mut stage).collect();
    let busy = |t: &StageTimes| t.fwd + t.bwd + t.recompute + t.tp + t.cp + t.ep;
    let (crit_idx, crit) = stages
        .iter()
        .enumerate()
        .max_by(|a, b| busy(a.1).total_cmp(&busy(b.1)))
        .map(|(i, t)| (i, *t))
        .unwrap_or_default();
    let mean_busy = stages.iter().map(busy).sum::<f64>() / pp as f64;

    // Pipeline schedule.
    let m = plan.micro_batches() as f64;
    let v = plan.vpp as f64;
    let act_bytes = tokens_mb * h * 2.0
        / if plan.sequence_parallel {
            plan.tp as f64
        } else {
            1.0
        };
    // Megatron-LM's scatter/gather (SC'21 §4.1): without sequence parallelism each TP rank
    // sends its 1/TP slice over its own NIC and the receiving stage all-gathers the slices
    // over the scale-up fabric.
    let scatter_gather = plan.pp_scatter_gather && !plan.sequence_parallel && plan.tp > 1;
    let sent_bytes = if scatter_gather {
        act_bytes / plan.tp as f64
    } else {
        act_bytes
    };
    let p2p = if pp > 1 {
        ctx.coll(CollOp::SendRecv, sent_bytes, &g_pp)
            + if scatter_gather {
                ctx.coll(CollOp::AllGather, act_bytes, &g_tp)
            } else {
                0.0
            }
    } else {
        0.0
    };
    let (bubble, pp_comm) = if pp == 1 {
        (0.0, 0.0)
    } else {
        let pf = (pp - 1) as f64;
        // Transfers on the step's critical path, each way: the first micro-batch's
        // forward crosses every boundary between the p·v virtual stages before the last
        // one starts, and the last one's backward every boundary back, with nothing else
        // to run meanwhile on the warm-up and cool-down ranks: p·v − 1 each way. (The
        // group of p micro-batches a rank runs per chunk takes p·t_chunk, the ring back to
        // it p·(t_chunk + t_p2p): each chunk change in the warm-up waits p transfers. An
        // event simulation of Megatron's interleaved order with non-blocking sends gives
        // exactly 2(p·v − 1)·t_p2p over the zero-latency step for any m, p, v; without
        // interleaving it is the p − 1 of the plain schedule.)
        let exposed_hops = pf.max(pp as f64 * v - 1.0);
        // The sends and receives of the steady state that run beside compute (every chunk
        // boundary of every micro-batch, forward and backward, less the warm-up and
        // cool-down ones counted as exposed) slow it as any hidden traffic does.
        let hidden_p2p = |hops: f64| ctx.overlap * (m * v - hops).max(0.0) * 2.0 * p2p;
        match plan.schedule {
            PipelineSchedule::Gpipe | PipelineSchedule::OneFOneB if v <= 1.0 => {
                // (m + p - 1) slots of the slowest stage; p2p blocking per micro-batch.
                (pf * mean_busy, (m + pf) * 2.0 * p2p)
            }
            PipelineSchedule::Gpipe | PipelineSchedule::OneFOneB if !plan.overlap_p2p_comm => {
                // Interleaved without p2p overlap: every chunk boundary blocks, forward and
                // backward, for every micro-batch, plus the warm-up.
                (pf / v * mean_busy, (m * v + pf) * 2.0 * p2p)
            }
            PipelineSchedule::Gpipe | PipelineSchedule::OneFOneB => {
                // Interleaved: bubble shrinks by v; p2p overlapped except on the warm-up
                // and cool-down path through all p·v virtual stages (`exposed_hops`).
                (
                    pf / v * mean_busy,
                    exposed_hops * 2.0 * p2p + hidden_p2p(exposed_hops),
                )
            }
            PipelineSchedule::ZeroBubble => {
                // ZB-H1 (Qi et al. 2023): bubble (p-1)(T_F + T_B - 2 T_W) ... at least 0,
                // with T_B the input-gradient part.
                let w = crit.bwd_w;
                let tb_in = crit.bwd - w;
                let per = (crit.fwd + tb_in - w).max(0.0) / busy(&crit).max(1e-30) * mean_busy;
                (pf * per / v, pf * 2.0 * p2p + hidden_p2p(pf))
            }
            PipelineSchedule::Dualpipe => {
                // DeepSeek-V3 Table 2: (p/2 - 1)(F&B + B - 3W).
                let w = crit.bwd_w;
                let fb = crit.fwd + crit.bwd;
                let per = (fb + crit.bwd - 3.0 * w).max(0.0);
                (
                    (pp as f64 / 2.0 - 1.0).max(0.0) * per,
                    pf * 2.0 * p2p + hidden_p2p(pf),
                )
            }
        }
    };

    // Data parallelism. Parameters on the critical stage's rank.
    let params = model.params();
    // Attention weights per rank: K and V projections of whole KV heads, replicated where TP
    // exceeds kv_heads; the replicas' extra over `attention_per_layer / tp` is held (and
    // its gradient reduced) per layer, MTP layers included.
    let attn_rank = model.attention_params_per_rank(plan.tp);
    let attn_replicated = attn_rank - params.attention_per_layer / plan.tp as f64;
    // Norm weights (LayerNorm/RMSNorm: a layer's two, MLA's latent norms in `attn_rank`, the
    // final norm, the MTP modules' three each) sit whole on every TP rank: Megatron
    // replicates them, with or without sequence parallelism.
    let p_layer_dense =
        attn_rank + params.norms_per_layer + params.dense_mlp_per_layer / plan.tp as f64;
    // The router's weight sits whole on every TP rank too (Megatron's `TopKRouter`).
    let router = model.router_params();
    let router_whole = router - router / plan.tp as f64;
    let p_layer_moe_dense = attn_rank
        + params.norms_per_layer
        + params.moe_shared_per_layer / plan.tp as f64
        + router_whole;
    // The head's rank: the final norm, and the MTP modules' norms (a layer's two, those of
    // the hidden state and of the embedding, its final norm).
    let head_norms = model.hidden as f64;
    let mtp_norms = model.mtp_layers as f64 * (params.norms_per_layer + 3.0 * model.hidden as f64);
    let mtp_router_whole = if model.is_moe_layer(model.mtp_layer()) {
        model.mtp_layers as f64 * router_whole
    } else {
        0.0
    };
    let p_layer_experts = params.experts_per_moe_layer / (plan.ep as f64 * plan.etp as f64);
    // Whether rank `s` holds an output-layer weight of its own: untied, the head's rank;
    // tied to the input embedding, the head's rank where it is not the embedding's (Megatron
    // keeps a copy of the word embeddings on the last stage, whose gradients it all-reduces
    // with the first stage's: `setup_embeddings_and_output_layer`).
    let own_output =
        |s: u32| plan.holds_head(s) && (!model.tied_embeddings || !plan.holds_embedding(s));
    let stage_params = |s: u32| -> (f64, f64) {
        let (d, mo) = split(s);
        let mut dense = d * p_layer_dense + mo * p_layer_moe_dense;
        if plan.holds_embedding(s) {
            dense += params.embedding / plan.tp as f64;
        }
        let mut experts = mo * p_layer_experts;
        if own_output(s) {
            dense += params.embedding / plan.tp as f64;
        }
        if plan.holds_head(s) {
            dense += head_norms
                + mtp_norms
                + (params.mtp - params.mtp_experts - mtp_norms) / plan.tp as f64
                + model.mtp_layers as f64 * attn_replicated
                + mtp_router_whole;
            experts += params.mtp_experts / (plan.ep as f64 * plan.etp as f64);
        }
        (dense, experts)
    };
    let (pd, pe) = stage_params(crit_idx as u32);
    // Expert-data-parallel group: ranks holding the same experts.
    let edp = plan.expert_dp();
    let folded = if plan.ep_folded() {
        plan.expert_dims()
    } else {
        None
    };
    let g_edp = match folded {
        // Folded EP: the stage's ranks left over after ETP × EP, in placement order.
        Some((_, edp_dims)) => Group::of_dims(levels, &edp_dims, plan.accelerators),
        None => Group::new(
            levels,
            (edp / plan.cp.max(1) as u64).max(1),
            plan.stride(Dim::Dp),
            plan.accelerators,
        ),
    };
    // The gradient reduce-scatter overlaps the last backward passes, while the pipeline
    // still sends activation gradients between stages over the same NICs.
    let pp_background = [Concurrent {
        op: CollOp::SendRecv,
        bytes: sent_bytes,
        layout: g_pp.layout,
    }];
    let background: &[Concurrent] = if pp > 1 { &pp_background } else { &[] };
    // The distributed optimizer gathers the updated parameters in their stored precision.
    let param_gather_bytes = if plan.fp8_params { 1.0 } else { 2.0 };
    let dp_comm = |p: f64, g: &Group| -> (f64, f64) {
        if g.size() <= 1 || p <= 0.0 {
            return (0.0, 0.0);
        }
        if plan.distributed_optimizer || plan.zero_stage >= 1 {
            (
                ctx.coll_during(CollOp::ReduceScatter, p * grad_bytes, g, background),
                ctx.coll(CollOp::AllGather, p * param_gather_bytes, g),
            )
        } else {
            (
                ctx.coll_during(CollOp::AllReduce, p * grad_bytes, g, background),
                0.0,
            )
        }
    };
    // DP spans data-parallel replicas and, for dense weights, the CP ranks too.
    let g_dpcp = if plan.cp > 1 {
        let [ep, dp, _] = plan.group_dims(Dim::Dp);
        let dims = [ep, dp, (plan.cp as u64, plan.stride(Dim::Cp))];
        Group::of_dims(levels, &dims, plan.accelerators)
    } else {
        g_dp.clone()
    };
    let (rs_d, ag_d) = dp_comm(pd, &g_dpcp);
    let (rs_e, ag_e) = dp_comm(pe, &g_edp);
    let (rs, ag) = (rs_d + rs_e, ag_d + ag_e);
    let total_local = pd + pe;
    let bucket = (40e6_f64.max(1e6 * plan.dp as f64) / total_local.max(1.0)).min(1.0);
    let dp_exposed = if plan.zero_stage >= 3 && plan.zero3_prefetch {
        // ZeRO-3 with prefetch (PyTorch FSDP, Megatron FSDP, DeepSpeed since 2022): each
        // micro-batch gathers the next layer's parameters while the current one computes,
        // forward and again backward, and reduce-scatters each layer's gradients under the
        // rest of the backward pass; the first layer's gather and what compute cannot cover
        // are exposed, and hidden traffic slows compute by the SM share.
        let (d, mo) = split(crit_idx as u32);
        let layers = (d + mo).max(1.0);
        m * ((ag - crit.fwd).max(0.0)
            + (ag + rs - crit.bwd).max(0.0)
            + 2.0 * ag / layers
            + ctx.overlap * (ag.min(crit.fwd) + (ag + rs).min(crit.bwd)))
    } else if plan.zero_stage >= 3 {
        // ZeRO-3 gathered on demand, as DeepSpeed did before 2022 (v0.3, read in its source):
        // every weight matrix is all-gathered on its own after a device synchronisation,
        // once for forward, again for the recompute and again for backward (the default
        // reuse distance, 1e9 elements, is shorter than a layer of these models, so each
        // is released in between); tensors under 1e5 elements (biases, norms) stay whole;
        // every tensor's gradient is reduce-scattered on its own. Each collective is a
        // torch.distributed list collective: the latency, and the host work per rank
        // chunk (DeepSpeed's Python view per rank, torch's copy per rank), sit on the
        // critical path.
        let (d, mo) = split(crit_idx as u32);
        let (t_dense, t_moe) = model.tensors_per_layer(plan.ep);
        let mut mats = d * t_dense.matrices + mo * t_moe.dense.matrices;
        if plan.holds_embedding(crit_idx as u32) {
            mats += 1.0;
        }
        if own_output(crit_idx as u32) {
            mats += 1.0;
        }
        let vectors = d * t_dense.vectors + mo * t_moe.dense.vectors;
        let gathers = if plan.recompute == Recompute::Full {
            2.0 + plan.recompute_fraction
        } else {
            2.0
        };
        let list_cost = |p: f64, mats: f64, vectors: f64, g: &Group| -> f64 {
            if mats <= 0.0 || p <= 0.0 || g.size() <= 1 {
                return 0.0;
            }
            let one = p / mats;
            let n = g.size() as f64;
            mats * gathers * (ctx.coll(CollOp::AllGather, one * 2.0, g) + n * LIST_GATHER_HOST_S)
                + mats
                    * (ctx.coll(CollOp::ReduceScatter, one * grad_bytes, g)
                        + n * LIST_REDUCE_SCATTER_HOST_S)
                + vectors
                    * (ctx.coll(CollOp::ReduceScatter, model.hidden as f64 * grad_bytes, g)
                        + n * LIST_REDUCE_SCATTER_HOST_S)
        };
        m * (list_cost(pd, mats, vectors, &g_dpcp) + list_cost(pe, mo * t_moe.experts, 0.0, &g_edp))
    } else if !plan.overlap_grad_reduce && plan.zero_stage <= 2 {
        // No overlap (Megatron-LM before `overlap_grad_reduce`): the gradient reduction
        // runs after the backward pass (every micro-batch's under ZeRO-2), the parameter
        // all-gather before the next forward, both on the critical path.
        if plan.zero_stage == 2 {
            m * rs + ag
        } else {
            rs + ag
        }
    } else if plan.zero_stage == 2 {
        // ZeRO-2: gradients are sharded, so every micro-batch's gradients are
        // reduce-scattered during its backward; parameters gathered once per step.
        m * (rs - crit.bwd).max(0.0)
            + (ag - crit.fwd).max(0.0)
            + (rs + ag) * bucket
            + ctx.overlap * (m * rs.min(crit.bwd) + ag.min(crit.fwd))
    } else {
        // Overlapped chunk by chunk (one chunk without interleaving): see
        // [`dp_overlap_exposed`].
        dp_overlap_exposed(
            DpOverlap {
                rs,
                ag,
                fwd: crit.fwd,
                bwd: crit.bwd,
                chunks: if pp > 1 { plan.vpp.max(1) } else { 1 },
                pp,
                slowdown: ctx.overlap,
            },
            bucket,
        )
    };

    // Replicated KV heads (TP beyond `kv_heads`): the `tp / kv_heads` ranks holding one
    // head each computed only their own query heads' share of its K/V weight gradient, so
    // they all-reduce it once per step after the last backward (as the sequence-parallel
    // norm gradients are, in Megatron-Core's `finalize_model_grads`), on the critical path
    // before the optimizer: the critical stage's layers, MTP layers included.
    let kv_replica_ar = match model.mla {
        None if plan.tp > model.kv_heads && model.kv_heads > 0 => {
            let replicas = (plan.tp / model.kv_heads) as u64;
            let (d, mo) = split(crit_idx as u32);
            let mut layers = d + mo;
            if plan.holds_head(crit_idx as u32) {
                layers += mtp;
            }
            let kv_weights = 2.0 * h * model.head_dim() as f64 * model.kv_heads_per_rank(plan.tp);
            // Replicas are neighbours in the TP group (rank r holds head r / replicas).
            let g = Group::new(levels, replicas, plan.stride(Dim::Tp), plan.accelerators);
            ctx.coll(CollOp::AllReduce, layers * kv_weights * grad_bytes, &g)
        }
        _ => 0.0,
    };

    // Sequence parallelism: the parameters every TP rank holds whole but trains on its own
    // share of the sequence only (norms, GPT-style row-parallel biases, MoE routers:
    // `Transformer::sequence_parallel_params_per_layer`) have their gradients all-reduced
    // over TP once per step after the last backward, one coalesced all-reduce of every
    // parameter Megatron-Core marks `sequence_parallel` (`_allreduce_layernorm_grads` in
    // `finalize_model_grads`, after the data-parallel reduction), on the critical path
    // before the optimizer: the critical stage's layers, and where it holds the head the
    // final norm and the MTP modules (a layer of the last kind and three norms each).
    let sp_ar = if plan.sequence_parallel && plan.tp > 1 {
        let (dense_sp, moe_sp) = model.sequence_parallel_params_per_layer();
        let (d, mo) = split(crit_idx as u32);
        let mut p = d * dense_sp + mo * moe_sp;
        if plan.holds_head(crit_idx as u32) {
            let norm = if model.gated_mlp { h } else { 2.0 * h };
            let mtp_layer = if mtp_layer_moe { moe_sp } else { dense_sp };
            p += norm + mtp * (mtp_layer + 3.0 * norm);
        }
        ctx.coll(CollOp::AllReduce, p * grad_bytes, &g_tp)
    } else {
        0.0
    };

    // Tied embeddings over a pipeline: the last stage keeps its own copy of the word
    // embeddings for the output layer, and the first and last pipeline ranks all-reduce
    // their gradients once per step after the backward pass (Megatron's
    // `_allreduce_word_embedding_grads` in `finalize_model_grads`, beside the data-parallel
    // gradient reduction), on the critical path.
    // Under DualPipe the head sits with the embedding on the first rank: nothing to reduce.
    let tied_ar = if model.tied_embeddings && (0..pp).any(|s| own_output(s)) {
        let g = Group::new(
            levels,
            2,
            plan.stride(Dim::Pp) * (pp as u64 - 1),
            plan.accelerators,
        );
        ctx.coll(
            CollOp::AllReduce,
            params.embedding / plan.tp as f64 * grad_bytes,
            &g,
        )
    } else {
        0.0
    };

    // Optimizer: Adam over the local shard (master weights, m, v; read grads, write bf16
    // params).
    // The distributed optimizer shards the dense weights' state over DP × CP and the
    // experts' over expert DP, each whatever the other's size (with DP × CP 1 a folded EP
    // group still leaves expert-DP ranks to shard over).
    let sharded = plan.distributed_optimizer || plan.zero_stage >= 1;
    let shard_div = if sharded {
        (plan.dp as f64 * plan.cp as f64).max(1.0)
    } else {
        1.0
    };
    let expert_shard_div = if sharded { (edp as f64).max(1.0) } else { 1.0 };
    let opt_params = pd / shard_div + pe / expert_shard_div;
    // bf16 moments read and write 2 bytes each instead of 4.
    let moment_bytes = if plan.bf16_optimizer_moments {
        2.0
    } else {
        4.0
    };
    // The master copy is read and written: 8 bytes of the 18 in fp32, 4 in bf16.
    let master_bytes = if plan.bf16_master_weights { 2.0 } else { 4.0 };
    let optimizer =
        opt_params * (10.0 + 2.0 * master_bytes + 4.0 * moment_bytes) / ctx.hbm_bps * straggler;

    let gemm_input_bytes = if fp8 { 1.0 } else { 2.0 };
    let mut act = model.activation_memory_with(
        &shard,
        plan.recompute,
        plan.recompute_modules,
        gemm_input_bytes,
    );
    if plan.recompute == Recompute::Full && plan.recompute_fraction < 1.0 {
        // Block recompute: the first share of each chunk's layers keeps only its input, the
        // rest keep everything.
        let kept = model.activation_memory(&shard, Recompute::None, gemm_input_bytes);
        let f = plan.recompute_fraction;
        act.dense_layer = f * act.dense_layer + (1.0 - f) * kept.dense_layer;
        act.moe_layer = f * act.moe_layer + (1.0 - f) * kept.moe_layer;
    }
    // Activation offloading: the first share of each chunk's layers sends its activations
    // to host memory after its forward pass and fetches them back before its backward; a
    // transfer hides under the layer's own compute, what does not fit under it is exposed.
    let offload_bw = cluster.scale_up.host_offload_gbps.unwrap_or(0.0) * 1e9;
    let offload_s = if plan.offload_fraction > 0.0 {
        let exposed = |bytes: f64, t: &StageTimes| -> f64 {
            if offload_bw <= 0.0 {
                return f64::INFINITY;
            }
            let x = bytes / offload_bw;
            (x - t.fwd).max(0.0) + (x - t.bwd).max(0.0)
        };
        let (d, mo) = split(crit_idx as u32);
        m * plan.offload_fraction
            * (d * exposed(act.dense_layer, &dense_t) + mo * exposed(act.moe_layer, &moe_t))
    } else {
        0.0
    };

    // EP all-to-all. DualPipe (DeepSeek-V3 report, section 3.2.1) pairs one micro-batch's
    // forward chunk with another's backward chunk so that each one's dispatch and combine
    // run under the other's compute, on a share of the SMs (20 of H800's 132): only what
    // the paired compute cannot cover is exposed, and the hidden traffic slows compute by
    // the SM share. Other schedules run the all-to-all on the critical path.
    let ep_slot = if plan.schedule == PipelineSchedule::Dualpipe {
        let cover = crit.fwd + crit.bwd + crit.recompute;
        (crit.ep - cover).max(0.0) + ctx.overlap * crit.ep.min(cover)
    } else {
        crit.ep
    };

    // Assemble: m slots of the critical stage plus fill/drain.
    let fill = bubble;
    let breakdown = Breakdown {
        forward_s: m * (crit.fwd - crit.eager_fwd),
        backward_s: m * crit.bwd,
        recompute_s: m * (crit.recompute - crit.eager_rec),
        moe_overhead_s: m * (crit.eager_fwd + crit.eager_rec),
        tp_comm_s: m * crit.tp + kv_replica_ar + sp_ar,
        cp_comm_s: m * crit.cp,
        ep_comm_s: m * ep_slot,
        pp_comm_s: pp_comm,
        dp_comm_s: dp_exposed + tied_ar,
        pipeline_bubble_s: fill,
        optimizer_s: optimizer,
        offload_s,
    };
    let step = breakdown.total();

    // Memory on each stage; report the peak.
    let mut memory = Memory::default();
    // The most any stage offloads to host memory, and that stage: host memory is checked
    // there, wherever the HBM peak is.
    let mut host_peak = (0.0f64, 0u32);
    // ZeRO-3 keeps only a shard of each layer, but computes on whole ones: the layer being
    // computed (and, with prefetch, the next one) is gathered, and its gradient exists in
    // full until its reduce-scatter. On demand (DeepSpeed 0.3) that is one weight matrix
    // at a time.
    let zero3_working = if plan.zero_stage >= 3 && plan.dp as u64 * plan.cp as u64 > 1 {
        let layer = p_layer_dense.max(p_layer_moe_dense + p_layer_experts);
        if plan.zero3_prefetch {
            (2.0 * layer, layer)
        } else {
            let (t_dense, t_moe) = model.tensors_per_layer(plan.ep);
            let mats = t_dense
                .matrices
                .max(t_moe.dense.matrices + t_moe.experts)
                .max(1.0);
            (layer / mats, layer / mats)
        }
    } else {
        (0.0, 0.0)
    };
    for s in 0..pp {
        let (d, e) = stage_params(s);
        // fp8 training keeps each weight's 2-byte copy and its fp8 cast; with fp8 parameters
        // the 2-byte copy goes and the fp8 transpose the backward GEMMs read is kept instead
        // (Transformer Engine caches it per weight across micro-batches).
        let w_bytes = if fp8 && !plan.fp8_params { 3.0 } else { 2.0 };
        let p_local = d + e;
        let zero3 = plan.zero_stage >= 3;
        let weights = if zero3 {
            d / shard_div + e / edp as f64 + zero3_working.0
        } else {
            p_local
        } * w_bytes;
        let grads = if plan.zero_stage >= 3 {
            d / shard_div + e / edp as f64 + zero3_working.1
        } else if plan.zero_stage >= 2 {
            d / shard_div + e / edp as f64
        } else {
            p_local
        } * grad_bytes;
        // Master weights and Adam's two moments.
        let optim = (d / shard_div + e / expert_shard_div) * (master_bytes + 2.0 * moment_bytes);
        let (dl, ml) = split(s);
        let mut per_mb = dl * act.dense_layer + ml * act.moe_layer;
        if plan.holds_head(s) {
            // Each multi-token-prediction module keeps a layer's activations per micro-batch
            // in flight (its logits, like the head's, one micro-batch at a time: below).
            per_mb += mtp
                * if mtp_layer_moe {
                    act.moe_layer
                } else {
                    act.dense_layer
                };
        }
        let in_flight = crate::plan::in_flight_micro_batches(
            plan.schedule,
            pp,
            plan.vpp,
            plan.vpp_group,
            s,
            plan.micro_batches(),
        );
        // Offloaded layers leave HBM; one layer's activations stay as the transfer buffer.
        let off = plan.offload_fraction;
        let host = per_mb * in_flight * off;
        if host > host_peak.0 {
            host_peak = (host, s);
        }
        let mut acts = per_mb * in_flight * (1.0 - off);
        if off > 0.0 {
            acts += act.dense_layer.max(act.moe_layer);
        }
        // Recompute rebuilds one layer of one micro-batch at a time in the backward: the
        // peak adds that layer's rebuilt activations, of the largest kind the stage holds.
        let rebuilds = match plan.recompute {
            Recompute::None => false,
            Recompute::Full => plan.recompute_fraction > 0.0,
            Recompute::Selective => true,
        };
        if rebuilds {
            let mut one = 0.0f64;
            if dl > 0.0 {
                one = one.max(act.dense_rebuilt);
            }
            if ml > 0.0 {
                one = one.max(act.moe_rebuilt);
            }
            if plan.holds_head(s) && mtp > 0.0 {
                one = one.max(if mtp_layer_moe {
                    act.moe_rebuilt
                } else {
                    act.dense_rebuilt
                });
            }
            acts += one;
        }
        if plan.holds_head(s) {
            acts += (1.0 + mtp) * act.head;
        }
        let total = (weights + grads + optim + acts) / GIB + BUFFERS_GIB;
        if total > memory.total_gib {
            memory = Memory {
                weights_gib: weights / GIB,
                gradients_gib: grads / GIB,
                optimizer_gib: optim / GIB,
                activations_gib: acts / GIB,
                in_flight_micro_batches: in_flight,
                buffers_gib: BUFFERS_GIB,
                host_offload_gib: 0.0,
                host_offload_stage: 0,
                total_gib: total,
                capacity_gib: acc.hbm_gib,
                peak_stage: s,
            };
        }
    }
    memory.capacity_gib = acc.hbm_gib;
    memory.host_offload_gib = host_peak.0 / GIB;
    memory.host_offload_stage = host_peak.1;
    let host_fits =
        memory.host_offload_gib <= cluster.scale_up.host_memory_gib.unwrap_or(0.0) + 1e-9;
    let fits = memory.total_gib <= acc.hbm_gib && (plan.offload_fraction == 0.0 || host_fits);

    let flops = model.flops_per_sequence();
    let model_flops = flops.training * plan.global_batch as f64;
    let n = plan.accelerators as f64;
    let recompute_flops = match plan.recompute {
        Recompute::None => 0.0,
        Recompute::Selective if selective == RecomputeModules::CORE_ATTN => flops.attention,
        Recompute::Selective => {
            // The share of a layer's forward FLOPs in the recomputed ops (the same on every
            // rank of a sharding), weighted by the dense and MoE layer counts.
            let mut share = |layer: u32| -> f64 {
                ops.clear();
                model.layer_ops(layer, &shard, &mut ops);
                let all: f64 = ops.iter().map(|o| o.flops()).sum();
                let again: f64 = ops
                    .iter()
                    .filter(|o| selective.recomputes_op(o.name, model.mla.is_some()))
                    .map(|o| o.flops())
                    .sum();
                if all > 0.0 {
                    again / all
                } else {
                    0.0
                }
            };
            let (d, mo) = (dense_layers as f64, moe_layers as f64);
            // A layer of each kind: the last layer is dense where `moe.every` leaves it so.
            let mut of_kind = |moe: bool, n: f64| -> f64 {
                match model.layer_of_kind(moe) {
                    Some(layer) if n > 0.0 => n * share(layer),
                    _ => 0.0,
                }
            };
            let w = (of_kind(false, d) + of_kind(true, mo)) / (d + mo).max(1.0);
            w * flops.forward
        }
        Recompute::Full => plan.recompute_fraction * flops.forward,
    } * plan.global_batch as f64;
    StepEstimate {
        step_time_s: step,
        breakdown,
        memory,
        fits,
        mfu: model_flops / (step * n * gemm_peak),
        hfu: (model_flops + recompute_flops) / (step * n * gemm_peak),
        mfu_bf16: model_flops / (step * n * bf16_peak),
        tokens_per_s: plan.global_batch as f64 * model.seq_len as f64 / step,
        model_flops_per_step: model_flops,
        micro_batches: plan.micro_batches(),
        pace: Pace {
            slowest_chip: straggler,
            lockstep_ranks,
            lockstep,
        },
    }
}

/// Ops of a layer's MLP or MoE block (the rest are its attention block).
fn is_moe_block_op(name: &str) -> bool {
    name.starts_with("mlp_")
        || name.starts_with("expert_")
        || name.starts_with("moe_")
        || name == "router"
}

/// Time of one expert-parallel exchange, a dispatch or a combine, as the step model costs
/// it: `token_bytes` is what one rank's tokens take at the exchange's precision (tokens ×
/// hidden × bytes per element), and each token moves [`ep_copies`] times. With Megatron's
/// all-to-all dispatcher, or with DeepEP/HybridEP inside one scale-up domain, that is one
/// all-to-all over the EP group. DeepEP/HybridEP across domains: each token crosses the
/// scale-out network once per other scale-up domain holding any of its experts (rank i of
/// one domain to rank i of the other, over its own NIC, [`domain_hit`]) and is forwarded
/// over the scale-up fabric once to each rank there that holds any of them; the combine
/// reduces inside the domain before it crosses back. The two stages are pipelined: the
/// longer one sets the time.
pub fn ep_exchange(
    model: &Transformer,
    plan: &Plan,
    cluster: &BuiltCluster,
    token_bytes: f64,
) -> f64 {
    let Some(m) = &model.moe else {
        return 0.0;
    };
    let timer = Analytical {
        levels: &cluster.levels,
    };
    let g_ep = Group::of(plan, &cluster.levels, Dim::Ep);
    ep_exchange_on(&timer, &cluster.levels, plan, &g_ep, m, token_bytes)
}

/// One collective of `bytes` over `group` by `timer`; nothing for one rank or no bytes.
fn coll_time(timer: &dyn CollectiveTimer, op: CollOp, bytes: f64, group: &Group) -> f64 {
    if group.size() <= 1 || bytes <= 0.0 {
        return 0.0;
    }
    timer.time(op, bytes, &group.span, &group.layout)
}

fn ep_exchange_on(
    timer: &dyn CollectiveTimer,
    levels: &[Level],
    plan: &Plan,
    g_ep: &Group,
    m: &myriad_model::Moe,
    token_bytes: f64,
) -> f64 {
    if g_ep.size() <= 1 || token_bytes <= 0.0 {
        return 0.0;
    }
    let coll = |bytes: f64, g: &Group| coll_time(timer, CollOp::AllToAll, bytes, g);
    let copies = ep_copies(m, plan.ep_dispatcher, g_ep.size());
    let d = g_ep.span.spans.first().copied().unwrap_or(1).max(1);
    let domains = g_ep.size() / d;
    if !(plan.ep_dispatcher.dedups_domains() && domains > 1) {
        return coll(token_bytes * copies, g_ep);
    }
    let (_, stride) = plan.group_layout(Dim::Ep);
    let g_in = Group::new(levels, d, stride, plan.accelerators);
    let g_out = Group::new(levels, domains, stride * d, plan.accelerators);
    // An all-to-all over the D domains sends (D - 1)/D of its bytes away: (D - 1)·hit
    // copies of each token leave the domain.
    let hit = domain_hit(m, domains);
    let within = coll(token_bytes * copies, &g_in);
    let across = coll(token_bytes * domains as f64 * hit, &g_out);
    within.max(across)
}

/// Scales the routed experts' ops (`expert_*`) of one layer to `factor` times their
/// tokens: GEMM rows and memory traffic.
#[inline(never)]
fn scale_routed_experts(ops: &mut [Op], factor: f64) {
    for op in ops.iter_mut().filter(|o| o.name.starts_with("expert_")) {
        op.kind = match op.kind {
            OpKind::Gemm { m, n, k, count } => OpKind::Gemm {
                m: m * factor,
                n,
                k,
                count,
            },
            OpKind::Memory { bytes, backward } => OpKind::Memory {
                bytes: bytes * factor,
                backward: backward * factor,
            },
            other => other,
        };
    }
}

/// Load of the busiest expert-parallel rank relative to the mean, per MoE layer and
/// micro-batch, when each of the `ep` ranks routes `tokens_per_rank` tokens: the routing's
/// sampling spread alone ([`myriad_model::moe_balance::routing_sampling_cv`], the draws of
/// an even router) at the expected maximum over the ranks
/// ([`myriad_model::moe_balance::busiest_rank_factor`]). A trained router spreads its load
/// more (serving takes DeepSeek-R1's measured per-expert spread); the training benchmarks
/// start from a random router, and a per-expert spread of a quarter of DeepSeek-R1's (CV
/// 0.3) would take the public file from 6.7% to about 7.1% and Megatron-Bridge kept aside
/// from 14.1% to about 17% (docs/validation-training.md), so none is added.
/// 1 without EP; about 1.01 for a 4,096-token micro-batch at EP 8-64.
pub fn busiest_expert_rank_factor(m: &myriad_model::Moe, ep: u32, tokens_per_rank: f64) -> f64 {
    if ep <= 1 {
        return 1.0;
    }
    let cv = myriad_model::moe_balance::routing_sampling_cv(
        m.experts as f64,
        m.top_k as f64,
        ep as f64,
        tokens_per_rank,
    );
    myriad_model::moe_balance::busiest_rank_factor(cv, expected_max_std_normal(ep as u64))
}

/// Copies of each token an expert-parallel dispatch (and its combine) moves over `ep` ranks.
/// Megatron-Core's all-to-all dispatcher permutes every one of a token's top-k copies and
/// sends each to its expert's rank: `top_k` copies. DeepEP's and HybridEP's normal kernels
/// send a token once to each rank that holds any of its experts and expand it to those
/// experts there (DeepEP `get_dispatch_layout`'s `is_token_in_rank`; its tests count
/// `recv_x`, one row per token and rank, as the bytes moved), and the combine returns one
/// partial sum per token and rank: the expected number of ranks hit, `ep · P(a rank is
/// hit)` ([`domain_hit`] with one rank per partition), at most `top_k`.
pub fn ep_copies(m: &myriad_model::Moe, dispatcher: myriad_model::EpDispatcher, ep: u64) -> f64 {
    let k = m.top_k as f64;
    if !dispatcher.dedups_domains() || ep <= 1 {
        return k;
    }
    (ep as f64 * domain_hit(m, ep)).min(k)
}

/// The probability that a given one of `domains` equal scale-up domains holds at least one
/// of a token's experts, the experts laid out in order over the EP ranks and routing
/// otherwise even. Group-limited routing (`Moe::router_groups`, DeepSeek-V3's node-limited
/// routing) draws the token's experts from `router_group_topk` of the groups only: where
/// each domain holds whole groups (`g` of them) the domain is hit unless none of its chosen
/// groups (hypergeometric in `g`) receives an expert; where a group spans several domains,
/// only a chosen group's domains can be hit. Without groups, or with group sizes that do
/// not tile the domains, `1 - domain_miss`.
pub fn domain_hit(m: &myriad_model::Moe, domains: u64) -> f64 {
    let (e, k, d) = (m.experts as u64, m.top_k as u64, domains.max(1));
    let unlimited = 1.0 - domain_miss(m.experts, m.top_k, domains);
    let (Some(n), Some(t)) = (m.router_groups, m.router_group_topk) else {
        return unlimited;
    };
    let (n, t) = (n as u64, t as u64);
    if n <= 1 || t >= n || t == 0 || e % n != 0 || e % d != 0 {
        return unlimited;
    }
    let g_size = e / n;
    let pool = (t * g_size) as f64;
    let miss = |inside: f64| none_drawn(pool, inside, k);
    let choose = |a: u64, b: u64| -> f64 {
        if b > a {
            return 0.0;
        }
        (0..b).fold(1.0, |acc, i| acc * (a - i) as f64 / (i + 1) as f64)
    };
    if n % d == 0 {
        let g = n / d;
        (0..=g.min(t))
            .map(|j| {
                let p = choose(g, j) * choose(n - g, t - j) / choose(n, t);
                p * (1.0 - miss((j * g_size) as f64))
            })
            .sum()
    } else if d % n == 0 {
        (t as f64 / n as f64) * (1.0 - miss((e / d) as f64))
    } else {
        unlimited
    }
}

/// The probability that one of `domains` equal groups of `experts` experts holds none of a
/// token's `top_k` distinct experts, routing spread evenly:
/// C(E - E/D, k) / C(E, k) = prod over i < k of (E - E/D - i) / (E - i).
pub fn domain_miss(experts: u32, top_k: u32, domains: u64) -> f64 {
    let e = experts as f64;
    none_drawn(e, e / domains.max(1) as f64, top_k as u64)
}

/// The probability that none of `k` distinct items drawn without replacement from `pool`
/// falls among `inside` given ones: prod over i < k of (pool - inside - i) / (pool - i).
fn none_drawn(pool: f64, inside: f64, k: u64) -> f64 {
    let outside = pool - inside;
    (0..k)
        .map(|i| ((outside - i as f64) / (pool - i as f64)).max(0.0))
        .product()
}
