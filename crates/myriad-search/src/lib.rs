//! Parallel-plan search and the cluster planner.
//!
//! `search` enumerates every combination of TP, CP, PP, virtual stages, EP, DP, micro-batch,
//! recompute mode, ZeRO stage / distributed optimizer and rank placement order for a model
//! on a built cluster, rejects what cannot divide (counting each reason), estimates the rest
//! with the analytical step model in parallel (rayon), and keeps the fastest that fit.
//! `plan` (module `planner`) goes one level up: which accelerator, system, fabric and count.
//!
//! Invariants:
//! - Deterministic: candidates are generated in a fixed order and ties are broken by that
//!   order, so the same scenario gives the same ranking on any number of threads.
//! - No IO and no clock: the caller measures time and draws progress bars (`progress` is a
//!   callback).
//! - The cluster is built once per search; estimates share it read-only.
//! - What the scenario's training block fixes beyond the searched dimensions ([`Fixed`]:
//!   kernels, overlaps, `vpp_group`, first/last stage layers, `recompute_layers`,
//!   `offload_layers`, ...) every candidate keeps: a plan it reported resolves through
//!   `train` to itself; candidates that cannot keep a setting are rejected with a reason
//!   naming it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use myriad_cluster::BuiltCluster;
use myriad_model::{Recompute, RecomputeModules, Transformer};
use myriad_scenario::{
    AttentionKernel, Dim, PipelineSchedule, Precision, TrainingSpec, DEFAULT_PLACEMENT,
};
use myriad_train::plan::first_stage_remainder;
use myriad_train::{estimate, Plan, StepEstimate};
use rayon::prelude::*;
use serde::Serialize;

pub mod planner;

/// The values each dimension may take before divisibility filtering.
#[derive(Debug, Clone, Serialize)]
pub struct Space {
    pub tp: Vec<u32>,
    /// Sequence parallelism on/off (only distinct when TP > 1).
    pub sequence_parallel: Vec<bool>,
    pub cp: Vec<u32>,
    pub pp: Vec<u32>,
    pub vpp: Vec<u32>,
    pub ep: Vec<u32>,
    pub micro_batch: Vec<u32>,
    pub recompute: Vec<Recompute>,
    /// The module sets tried for `Selective` (Megatron `recompute_modules`); the full space
    /// takes [`myriad_train::selective_ladder`].
    pub selective: Vec<RecomputeModules>,
    pub zero_stage: Vec<u8>,
    pub placements: Vec<[Dim; 5]>,
}

impl Space {
    /// The full space for a model: every power-of-two TP up to 64, CP up to 16, every PP
    /// up to 128 that divides the layers (or the pipeline slots: layers + 2 + MTP modules,
    /// with the embedding, loss and MTP counted as stages) and every power-of-two PP whose
    /// stages can hold ceil(layers / PP) layers each with at least one left for the first
    /// (Megatron-Core's first-stage layer count), interleaving depths that divide the
    /// layers or the slots, every EP dividing the experts (each kept where it divides DP or,
    /// folded, a stage's TP x CP x DP ranks), micro-batches 1, 2, 4 and 8,
    /// the three recompute modes, ZeRO-1/2/3, and two placement orders (PP outermost, or
    /// DP outermost).
    pub fn full(model: &Transformer) -> Self {
        let l = model.layers;
        let slots = myriad_train::plan::pipeline_slots(model);
        // Up to the pipeline slots: with the embedding, loss and MTP modules as stages, PP
        // may exceed the layers (DeepSeek-V3's 61 layers in 64 slots over PP 64).
        let mut pp: Vec<u32> = (1..=slots.min(128))
            .filter(|p| {
                l.is_multiple_of(*p)
                    || (*p > 1 && slots.is_multiple_of(*p))
                    || (p.is_power_of_two() && first_stage_remainder(l, *p).is_some())
            })
            .collect();
        pp.dedup();
        let ep = match &model.moe {
            Some(m) => [1u32, 2, 4, 8, 16, 32, 64, 128, 256]
                .into_iter()
                .filter(|e| *e <= m.experts)
                .collect(),
            None => vec![1],
        };
        Space {
            tp: vec![1, 2, 4, 8, 16, 32, 64],
            sequence_parallel: vec![true, false],
            cp: vec![1, 2, 4, 8, 16],
            pp,
            // Every interleaving depth that can split the layers (or the pipeline slots:
            // layers + embedding + MTP + loss) evenly.
            vpp: (1..=64u32)
                .filter(|v| l.is_multiple_of(*v) || slots.is_multiple_of(*v))
                .collect(),
            ep,
            micro_batch: vec![1, 2, 4, 8],
            recompute: vec![Recompute::None, Recompute::Selective, Recompute::Full],
            selective: myriad_train::selective_ladder(model),
            zero_stage: vec![1, 2, 3],
            placements: vec![
                DEFAULT_PLACEMENT,
                [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Pp, Dim::Dp],
            ],
        }
    }

    /// Recompute choices: each of `recompute`, with `Selective` once per module set.
    pub fn recompute_options(&self) -> Vec<(Recompute, RecomputeModules)> {
        self.recompute
            .iter()
            .flat_map(|&r| {
                let sets = if r == Recompute::Selective && !self.selective.is_empty() {
                    self.selective.clone()
                } else {
                    vec![RecomputeModules::CORE_ATTN]
                };
                sets.into_iter().map(move |m| (r, m))
            })
            .collect()
    }

    /// Configurations before any filtering, for one global batch.
    pub fn size(&self) -> u64 {
        [
            self.tp.len(),
            self.sequence_parallel.len(),
            self.cp.len(),
            self.pp.len(),
            self.vpp.len(),
            self.ep.len(),
            self.micro_batch.len(),
            self.recompute_options().len(),
            self.zero_stage.len(),
            self.placements.len(),
        ]
        .iter()
        .map(|&n| n as u64)
        .product()
    }
}

/// One ranked plan.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub plan: Plan,
    pub estimate: StepEstimate,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// Configurations in the space before filtering.
    pub space: u64,
    /// Configurations estimated (they divide).
    pub evaluated: u64,
    /// Estimated configurations that fit in memory.
    pub feasible: u64,
    /// Rejected configurations by reason (counts of configurations).
    pub infeasible: BTreeMap<String, u64>,
    /// Fastest first (by time per sequence, which is step time for a fixed batch).
    pub top: Vec<Ranked>,
}

/// What stays fixed during a search, taken from the scenario's training block.
#[derive(Debug, Clone)]
pub struct Fixed {
    pub accelerators: u64,
    /// Global batches to consider (sequences per step): the scenario's, or a range.
    pub global_batches: Vec<u64>,
    pub precision: Precision,
    pub attention: AttentionKernel,
    /// Loss kernel (`training.cross_entropy`, default fused).
    pub cross_entropy: myriad_model::CrossEntropy,
    /// Context-parallel KV exchange (`training.cp_comm`, default p2p).
    pub cp_comm: myriad_model::CpComm,
    /// MoE token dispatcher (`training.ep_dispatcher`, default alltoall).
    pub ep_dispatcher: myriad_model::EpDispatcher,
    /// MoE all-to-all overlap (`training.ep_overlap`, default false).
    pub ep_overlap: bool,
    /// MoE layers in a full-iteration CUDA graph (`training.moe_full_graph`, default false).
    pub moe_full_graph: bool,
    /// Routed experts' GEMMs as one grouped kernel (`training.moe_grouped_kernel`, default
    /// `moe_full_graph`).
    pub moe_grouped_kernel: bool,
    pub schedule: PipelineSchedule,
    /// Gradient buffers in fp32 (`training.grad_reduce_in_fp32`; default true, false for fp16).
    pub grad_reduce_in_fp32: bool,
    /// Weights kept in fp8 only (`training.fp8_params`, default false).
    pub fp8_params: bool,
    /// Adam's moments in bf16 (`training.bf16_optimizer_moments`, default false).
    pub bf16_optimizer_moments: bool,
    /// Master weights in bf16 (`training.bf16_master_weights`, default false).
    pub bf16_master_weights: bool,
    /// ZeRO-3 with prefetch (`training.zero3_prefetch`, default true).
    pub zero3_prefetch: bool,
    /// DP and PP overlap switches (`training.overlap_grad_reduce`, `overlap_p2p_comm`).
    pub overlap_grad_reduce: bool,
    pub overlap_p2p_comm: bool,
    /// Pipeline scatter/gather (`training.pp_scatter_gather`, default false).
    pub pp_scatter_gather: bool,
    /// TP communication overlapped with GEMMs (`training.tp_comm_overlap`; by default on
    /// with sequence parallelism and flash attention, as `train` sets it).
    pub tp_comm_overlap: Option<bool>,
    /// SMs the overlap reserves (`training.tp_comm_overlap_sms`, default Transformer
    /// Engine's).
    pub tp_comm_overlap_sms: Option<u32>,
    /// Expert tensor parallelism (`training.etp`; by default 1 with EP, else TP, as `train`
    /// sets it).
    pub etp: Option<u32>,
    /// fp8 EP dispatch (`training.fp8_dispatch`, default false).
    pub fp8_dispatch: bool,
    /// fp8 scaling recipe (`training.fp8_recipe`, default delayed).
    pub fp8_recipe: myriad_model::Fp8Recipe,
    /// Micro-batches per interleaved group (`training.vpp_group`): when given, every
    /// candidate keeps it, so only interleaved plans whose micro-batches it groups as
    /// `train` accepts are kept (default: PP).
    pub vpp_group: Option<u32>,
    /// Layers of the first and last pipeline stages (`training.first_stage_layers`,
    /// `last_stage_layers`): when either is given, every candidate keeps them, so only
    /// pipelines they split as `train` accepts are kept.
    pub first_stage_layers: Option<u32>,
    pub last_stage_layers: Option<u32>,
    /// Layers of each chunk recomputed under full recompute (`training.recompute_layers`):
    /// when given, every candidate recomputes fully, exactly that many (the search does not
    /// look for the least block recompute that fits).
    pub recompute_layers: Option<u32>,
    /// Layers of each chunk whose activations go to host memory
    /// (`training.offload_layers`): when given, every candidate offloads exactly that many
    /// (the search does not look for the least offload that fits).
    pub offload_layers: Option<u32>,
}

impl Fixed {
    pub fn from_spec(spec: &TrainingSpec, accelerators: u64) -> Self {
        let precision = spec.precision.unwrap_or(Precision::Bf16);
        Fixed {
            accelerators,
            global_batches: vec![spec.global_batch.unwrap_or(accelerators)],
            precision,
            attention: spec.attention.unwrap_or(if precision == Precision::Fp16 {
                AttentionKernel::Unfused
            } else {
                AttentionKernel::Flash
            }),
            cross_entropy: spec
                .cross_entropy
                .unwrap_or(myriad_model::CrossEntropy::Fused),
            cp_comm: spec.cp_comm.unwrap_or(myriad_model::CpComm::P2p),
            ep_dispatcher: spec
                .ep_dispatcher
                .unwrap_or(myriad_model::EpDispatcher::Alltoall),
            ep_overlap: spec.ep_overlap.unwrap_or(false),
            moe_full_graph: spec.moe_full_graph.unwrap_or(false),
            moe_grouped_kernel: spec
                .moe_grouped_kernel
                .unwrap_or(spec.moe_full_graph.unwrap_or(false)),
            schedule: spec.pipeline_schedule.unwrap_or(PipelineSchedule::OneFOneB),
            grad_reduce_in_fp32: spec
                .grad_reduce_in_fp32
                .unwrap_or(precision != Precision::Fp16),
            fp8_params: spec.fp8_params.unwrap_or(false),
            bf16_optimizer_moments: spec.bf16_optimizer_moments.unwrap_or(false),
            bf16_master_weights: spec.bf16_master_weights.unwrap_or(false),
            zero3_prefetch: spec.zero3_prefetch.unwrap_or(true),
            overlap_grad_reduce: spec.overlap_grad_reduce.unwrap_or(true),
            overlap_p2p_comm: spec.overlap_p2p_comm.unwrap_or(true),
            pp_scatter_gather: spec.pp_scatter_gather.unwrap_or(false),
            tp_comm_overlap: spec.tp_comm_overlap,
            tp_comm_overlap_sms: spec.tp_comm_overlap_sms,
            etp: spec.etp,
            fp8_dispatch: spec.fp8_dispatch.unwrap_or(false),
            fp8_recipe: spec.fp8_recipe.unwrap_or(myriad_model::Fp8Recipe::Delayed),
            vpp_group: spec.vpp_group,
            first_stage_layers: spec.first_stage_layers,
            last_stage_layers: spec.last_stage_layers,
            recompute_layers: spec.recompute_layers,
            offload_layers: spec.offload_layers,
        }
    }
}

/// The fields of the scenario's training block that the search chooses itself (its
/// dimensions), given there: the search does not keep them, and says so.
pub fn searched_fields(spec: &TrainingSpec) -> Vec<&'static str> {
    [
        ("tp", spec.tp.is_some()),
        ("pp", spec.pp.is_some()),
        ("dp", spec.dp.is_some()),
        ("cp", spec.cp.is_some()),
        ("ep", spec.ep.is_some()),
        ("vpp", spec.vpp.is_some()),
        ("micro_batch", spec.micro_batch.is_some()),
        ("sequence_parallel", spec.sequence_parallel.is_some()),
        ("recompute", spec.recompute.is_some()),
        ("recompute_modules", spec.recompute_modules.is_some()),
        ("zero_stage", spec.zero_stage.is_some()),
        (
            "distributed_optimizer",
            spec.distributed_optimizer.is_some(),
        ),
        ("placement", spec.placement.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, given)| given.then_some(k))
    .collect()
}

/// What the search overrides in the scenario's training block, as one note (`None` when it
/// overrides nothing).
pub fn override_note(spec: &TrainingSpec) -> Option<String> {
    let fields = searched_fields(spec);
    (!fields.is_empty()).then(|| {
        format!(
            "training.{}: searched over, not kept (the search chooses them; `myriad train` runs the scenario's own plan)",
            fields.join(", ")
        )
    })
}

fn reject(map: &mut BTreeMap<&'static str, u64>, reason: &'static str, n: u64) {
    *map.entry(reason).or_insert(0) += n;
}

/// Enumerates the plans of `space` that divide, counting rejections by reason.
pub fn candidates(
    model: &Transformer,
    cluster: &BuiltCluster,
    fixed: &Fixed,
    space: &Space,
) -> (Vec<Plan>, BTreeMap<&'static str, u64>) {
    let n = fixed.accelerators;
    let domain = cluster.levels.first().map(|l| l.size).unwrap_or(1);
    let mut out = Vec::new();
    let mut rej = BTreeMap::new();
    let supported =
        myriad_train::step::supported_peak_tflops(&cluster.accelerator, fixed.precision);
    if supported.is_none() {
        let n = space.size() * fixed.global_batches.len() as u64;
        reject(&mut rej, "precision not supported by the accelerator", n);
        return (out, rej);
    }
    if fixed.offload_layers.is_some() && cluster.scale_up.host_offload_gbps.is_none() {
        // `train` refuses offload_layers on a system without a host memory link.
        let n = space.size() * fixed.global_batches.len() as u64;
        reject(
            &mut rej,
            "offload_layers given: the scale-up system has no host memory link",
            n,
        );
        return (out, rej);
    }
    let inner = |s: &Space| -> u64 {
        (s.micro_batch.len()
            * s.recompute_options().len()
            * s.zero_stage.len()
            * s.placements.len()) as u64
    };
    let recompute_options = space.recompute_options();
    // The scenario's first/last stage layers, checked per pipeline as `train` checks them.
    let given_edges = (fixed.first_stage_layers.is_some() || fixed.last_stage_layers.is_some())
        .then(|| TrainingSpec {
            first_stage_layers: fixed.first_stage_layers,
            last_stage_layers: fixed.last_stage_layers,
            ..TrainingSpec::default()
        });
    // Every count above the micro-batch loop covers each of the global batches.
    let per_mb = inner(space) / space.micro_batch.len().max(1) as u64;
    let per_ep = inner(space) * fixed.global_batches.len() as u64;
    let per_vpp = per_ep * space.ep.len() as u64;
    let per_pp = per_vpp * space.vpp.len() as u64;
    let per_cp = per_pp * space.pp.len() as u64;
    let per_sp = per_cp * space.cp.len() as u64;
    for (&tp, &sp) in space
        .tp
        .iter()
        .flat_map(|t| space.sequence_parallel.iter().map(move |s| (t, s)))
    {
        if tp as u64 > domain {
            reject(&mut rej, "tp larger than the scale-up domain", per_sp);
            continue;
        }
        if tp == 1 && sp != space.sequence_parallel[0] {
            reject(
                &mut rej,
                "sequence parallelism irrelevant without tp",
                per_sp,
            );
            continue;
        }
        if !model.heads.is_multiple_of(tp)
            || (model.mla.is_none()
                && !model.kv_heads.is_multiple_of(tp)
                && tp % model.kv_heads != 0)
        {
            reject(&mut rej, "heads not divisible by tp", per_sp);
            continue;
        }
        for &cp in &space.cp {
            if cp > 1 && !model.seq_len.is_multiple_of(2 * cp) {
                reject(&mut rej, "seq_len not divisible by 2*cp", per_cp);
                continue;
            }
            for &pp in &space.pp {
                if fixed.schedule == PipelineSchedule::Dualpipe && !pp.is_multiple_of(2) {
                    // DualPipe runs the stages in pairs from both ends (`train` refuses it).
                    reject(&mut rej, "dualpipe needs an even pp", per_pp);
                    continue;
                }
                let inner_ranks = tp as u64 * cp as u64 * pp as u64;
                if !n.is_multiple_of(inner_ranks) {
                    reject(
                        &mut rej,
                        "tp*cp*pp does not divide the accelerators",
                        per_pp,
                    );
                    continue;
                }
                let dp = (n / inner_ranks) as u32;
                for &vpp in &space.vpp {
                    if vpp > 1 && pp == 1 {
                        reject(&mut rej, "virtual stages without pipeline", per_vpp);
                        continue;
                    }
                    if vpp > 1
                        && matches!(
                            fixed.schedule,
                            PipelineSchedule::Gpipe | PipelineSchedule::Dualpipe
                        )
                    {
                        // Only 1F1B and the zero-bubble schedule interleave (`train` refuses).
                        reject(&mut rej, "virtual stages on gpipe or dualpipe", per_vpp);
                        continue;
                    }
                    // A vpp_group the scenario gives applies only to the interleaved
                    // schedule (`train` refuses it elsewhere): every candidate keeps it.
                    if fixed.vpp_group.is_some()
                        && !myriad_train::plan::interleaved(fixed.schedule, pp, vpp)
                    {
                        reject(
                            &mut rej,
                            "vpp_group given: needs the interleaved schedule",
                            per_vpp,
                        );
                        continue;
                    }
                    let stages = pp * vpp;
                    let (even, with_ends, edge) = if let Some(edges) = &given_edges {
                        // The scenario's first/last stage layers, kept as `train` keeps them.
                        match myriad_train::plan::edge_stages(edges, model.layers, pp, vpp) {
                            Ok(e) => (false, false, e),
                            Err(_) => {
                                reject(
                                    &mut rej,
                                    "first/last_stage_layers given: do not split the layers over this pp*vpp",
                                    per_vpp,
                                );
                                continue;
                            }
                        }
                    } else {
                        let even = model.layers.is_multiple_of(stages);
                        let with_ends = pp > 1
                            && myriad_train::plan::pipeline_slots(model).is_multiple_of(stages);
                        // Otherwise (vpp 1) the first stage may take the remainder, the
                        // others ceil(layers / pp) each (Megatron-Core's first-stage layer
                        // count).
                        let edge = (!even && !with_ends && vpp == 1)
                            .then(|| first_stage_remainder(model.layers, pp))
                            .flatten();
                        (even, with_ends, edge)
                    };
                    if !even && !with_ends && edge.is_none() {
                        reject(&mut rej, "layers not divisible by pp*vpp", per_vpp);
                        continue;
                    }
                    for &ep in &space.ep {
                        if let Some(m) = &model.moe {
                            if m.experts % ep != 0 {
                                reject(&mut rej, "experts not divisible by ep", per_ep);
                                continue;
                            }
                        }
                        // EP divides DP, or (Megatron-Core's MoE parallel folding) it is wider
                        // and divides the stage's TP x CP x DP ranks, as `train` accepts.
                        if !dp.is_multiple_of(ep)
                            && !(tp as u64 * cp as u64 * dp as u64).is_multiple_of(ep as u64)
                        {
                            reject(
                                &mut rej,
                                "ep divides neither dp nor a stage's ranks",
                                per_ep,
                            );
                            continue;
                        }
                        let etp = fixed.etp.unwrap_or(if ep > 1 { 1 } else { tp });
                        // Expert layers lay ETP x EP x expert-DP over a stage's ranks.
                        if model.moe.is_some()
                            && !(tp as u64 * cp as u64 * dp as u64)
                                .is_multiple_of(etp as u64 * ep as u64)
                        {
                            reject(&mut rej, "etp*ep does not divide a stage's ranks", per_ep);
                            continue;
                        }
                        if myriad_train::plan::check_mlp_split(model, tp, etp, "tp").is_err() {
                            // Megatron splits every MLP's inner size over TP (ETP): `train`
                            // refuses it.
                            reject(&mut rej, "mlp inner size not divisible by tp", per_ep);
                            continue;
                        }
                        for (&mb, &gb) in space
                            .micro_batch
                            .iter()
                            .flat_map(|m| fixed.global_batches.iter().map(move |g| (m, g)))
                        {
                            if gb % (mb as u64 * dp as u64) != 0 {
                                reject(
                                    &mut rej,
                                    "global batch not divisible by micro_batch*dp",
                                    per_mb,
                                );
                                continue;
                            }
                            let m = gb / (mb as u64 * dp as u64);
                            let vpp_group = fixed.vpp_group.unwrap_or(pp);
                            if myriad_train::plan::interleaved(fixed.schedule, pp, vpp)
                                && myriad_train::plan::interleaved_groups(pp, m, vpp_group).is_err()
                            {
                                reject(
                                    &mut rej,
                                    if fixed.vpp_group.is_some() {
                                        "interleaved schedule: micro-batches do not form groups of vpp_group"
                                    } else {
                                        "interleaved schedule: micro-batches not a multiple of pp"
                                    },
                                    per_mb,
                                );
                                continue;
                            }
                            // The distributed optimizer (ZeRO) shards the dense weights'
                            // state over DP x CP and the experts' over expert DP (the
                            // stage's TP x CP x DP ranks over ETP x EP): with DP 1 it still
                            // shards over CP, or expert DP, when either is wider than one.
                            let edp = if model.moe.is_some() {
                                myriad_train::plan::expert_dp(tp, cp, dp, etp, ep)
                            } else {
                                1
                            };
                            let unsharded = dp as u64 * cp as u64 == 1 && edp <= 1;
                            for &(r, modules) in &recompute_options {
                                if fixed.recompute_layers.is_some() && r != Recompute::Full {
                                    // Block recompute the scenario gives is full recompute.
                                    reject(
                                        &mut rej,
                                        "recompute_layers given: needs full recompute",
                                        (space.zero_stage.len() * space.placements.len()) as u64,
                                    );
                                    continue;
                                }
                                for &stage in &space.zero_stage {
                                    let z = if unsharded { 0 } else { stage };
                                    if unsharded && stage != space.zero_stage[0] {
                                        // ZeRO stages are identical with nothing to shard
                                        // over.
                                        reject(
                                            &mut rej,
                                            "zero stage irrelevant without dp",
                                            space.placements.len() as u64,
                                        );
                                        continue;
                                    }
                                    for (pi, &placement) in space.placements.iter().enumerate() {
                                        if pi > 0 && (pp == 1 || dp == 1) {
                                            reject(&mut rej, "placement order irrelevant", 1);
                                            continue;
                                        }
                                        let sp = sp && tp > 1;
                                        // As `train` resolves it for this plan.
                                        let tp_overlap = fixed.tp_comm_overlap.unwrap_or(
                                            sp && fixed.attention == AttentionKernel::Flash,
                                        );
                                        let plan = Plan {
                                            accelerators: n,
                                            tp,
                                            pp,
                                            dp,
                                            cp,
                                            ep,
                                            etp,
                                            vpp,
                                            vpp_group,
                                            micro_batch: mb,
                                            global_batch: gb,
                                            sequence_parallel: sp,
                                            recompute: r,
                                            recompute_modules: modules,
                                            recompute_fraction: 1.0,
                                            offload_fraction: 0.0,
                                            precision: fixed.precision,
                                            distributed_optimizer: z >= 1,
                                            grad_reduce_in_fp32: fixed.grad_reduce_in_fp32,
                                            fp8_params: fixed.fp8_params,
                                            bf16_optimizer_moments: fixed.bf16_optimizer_moments,
                                            bf16_master_weights: fixed.bf16_master_weights,
                                            zero3_prefetch: fixed.zero3_prefetch,
                                            zero_stage: z,
                                            schedule: fixed.schedule,
                                            tp_comm_overlap: tp_overlap,
                                            tp_comm_overlap_sms: if tp_overlap {
                                                fixed.tp_comm_overlap_sms.unwrap_or(
                                                    myriad_train::plan::TE_UB_DEFAULT_SMS,
                                                )
                                            } else {
                                                0
                                            },
                                            overlap_grad_reduce: fixed.overlap_grad_reduce,
                                            overlap_p2p_comm: fixed.overlap_p2p_comm,
                                            pp_scatter_gather: fixed.pp_scatter_gather,
                                            fp8_dispatch: fixed.fp8_dispatch,
                                            fp8_recipe: fixed.fp8_recipe,
                                            placement,
                                            attention: fixed.attention,
                                            cross_entropy: fixed.cross_entropy,
                                            cp_comm: fixed.cp_comm,
                                            ep_dispatcher: fixed.ep_dispatcher,
                                            ep_overlap: fixed.ep_overlap,
                                            moe_full_graph: fixed.moe_full_graph,
                                            moe_grouped_kernel: fixed.moe_grouped_kernel,
                                            embedding_in_pipeline_split: !even && edge.is_none(),
                                            mtp_layers: model.mtp_layers,
                                            edge_stage_layers: edge,
                                        };
                                        // Block recompute and offloading the scenario
                                        // gives, in layers of this plan's chunks.
                                        let chunk = plan.chunk_layers(model.layers);
                                        let mut plan = plan;
                                        if let Some(k) = fixed.recompute_layers {
                                            if k == 0 || k > chunk {
                                                reject(
                                                    &mut rej,
                                                    "recompute_layers given: not between 1 and a pipeline chunk's layers",
                                                    1,
                                                );
                                                continue;
                                            }
                                            plan.recompute_fraction = k as f64 / chunk as f64;
                                        }
                                        if let Some(k) = fixed.offload_layers {
                                            if k > chunk {
                                                reject(
                                                    &mut rej,
                                                    "offload_layers given: more than a pipeline chunk's layers",
                                                    1,
                                                );
                                                continue;
                                            }
                                            plan.offload_fraction = k as f64 / chunk as f64;
                                        }
                                        // A folded EP group must tile the stage's ranks in
                                        // the placement order (`train` refuses it otherwise).
                                        if plan.ep_folded() && plan.expert_dims().is_none() {
                                            reject(
                                                &mut rej,
                                                "folded ep does not tile a stage's ranks",
                                                1,
                                            );
                                            continue;
                                        }
                                        out.push(plan);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    (out, rej)
}

/// The least `k` in `1..=n` for which `fits(k)` holds, given that it holds at `n` and, once
/// it holds, for every larger `k` (binary search).
fn least_share(n: u32, mut fits: impl FnMut(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (1u32, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

/// The fastest block recompute of a plan whose full recompute fits: the fewest recomputed
/// layers per chunk that still fit (memory falls and time rises with the share). Returns
/// (step time, recomputed share).
fn least_block_recompute(model: &Transformer, plan: &Plan, cluster: &BuiltCluster) -> (f64, f64) {
    let layers = plan.chunk_layers(model.layers);
    let mut q = plan.clone();
    let mut at = |k: u32| {
        q.recompute_fraction = k as f64 / layers as f64;
        estimate(model, &q, cluster)
    };
    let k = least_share(layers, |k| at(k).fits);
    (at(k).step_time_s, k as f64 / layers as f64)
}

/// The least share of every chunk's layers whose activations must go to host memory for a
/// plan without recompute, or with selective recompute, to fit in HBM (HBM use falls as the share grows), if the host
/// memory then holds them. Returns (step time, offloaded share).
fn least_offload(model: &Transformer, plan: &Plan, cluster: &BuiltCluster) -> Option<(f64, f64)> {
    let layers = plan.chunk_layers(model.layers);
    let mut q = plan.clone();
    let mut at = |k: u32| {
        q.offload_fraction = k as f64 / layers as f64;
        estimate(model, &q, cluster)
    };
    let hbm_fits = |e: &StepEstimate| e.memory.total_gib <= e.memory.capacity_gib;
    if !hbm_fits(&at(layers)) {
        return None;
    }
    let k = least_share(layers, |k| hbm_fits(&at(k)));
    let e = at(k);
    (e.fits && e.step_time_s.is_finite()).then_some((e.step_time_s, k as f64 / layers as f64))
}

/// Searches the space; `progress` is called with the number of plans estimated so far
/// (every 4,096 plans) and the total.
pub fn search(
    model: &Transformer,
    cluster: &BuiltCluster,
    fixed: &Fixed,
    space: &Space,
    top_n: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> SearchResult {
    let (plans, rej) = candidates(model, cluster, fixed, space);
    let total = plans.len() as u64;
    let done = AtomicU64::new(0);
    // (step time per sequence, index, recompute share, exact) of every plan that fits. A
    // plan with full recompute that fits may recompute only part of every chunk (Megatron's
    // block method): its time with one layer per chunk recomputed is a lower bound, exact
    // when that already fits; the others are refined only if they reach the top.
    let mut fits: Vec<(f64, usize, f64, f64, bool)> = plans
        .par_iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let e = estimate(model, p, cluster);
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            if d.is_multiple_of(4096) {
                progress(d, total);
            }
            let per_seq = |t: f64| t / p.global_batch as f64;
            let layers = p.chunk_layers(model.layers) as f64;
            if !(e.fits && e.step_time_s.is_finite()) {
                // Without recompute, or with selective recompute (Megatron-Core's
                // fine-grained activation offloading combines the two), activations may go to
                // host memory instead (systems with a host memory link): the least offloaded
                // share that fits, if any. Full recompute keeps only layer inputs: block
                // recompute covers it.
                if matches!(p.recompute, Recompute::None | Recompute::Selective)
                    && cluster.scale_up.host_offload_gbps.is_some()
                    && fixed.offload_layers.is_none()
                {
                    return least_offload(model, p, cluster)
                        .map(|(t, off)| (per_seq(t), i, p.recompute_fraction, off, true));
                }
                return None;
            }
            if p.recompute == Recompute::Full && layers > 1.0 && fixed.recompute_layers.is_none() {
                let least = Plan {
                    recompute_fraction: 1.0 / layers,
                    ..p.clone()
                };
                let l = estimate(model, &least, cluster);
                return Some((
                    per_seq(l.step_time_s),
                    i,
                    1.0 / layers,
                    p.offload_fraction,
                    l.fits,
                ));
            }
            // Rank by time per sequence: the step time when the batch is fixed, and the
            // right comparison across a range of global batches.
            Some((
                per_seq(e.step_time_s),
                i,
                p.recompute_fraction,
                p.offload_fraction,
                true,
            ))
        })
        .collect();
    progress(total, total);
    fits.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let feasible = fits.len() as u64;
    let mut infeasible: BTreeMap<String, u64> =
        rej.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if total > feasible {
        infeasible.insert("does not fit in memory".into(), total - feasible);
    }
    // A plan that differs from a better one only in placement order and times the same
    // (within 0.01%)
    // adds nothing to the list.
    let mut top: Vec<Ranked> = Vec::with_capacity(top_n.min(fits.len()));
    let mut k = 0;
    while k < fits.len() && top.len() < top_n {
        let (t, i, share, off, exact) = fits[k];
        if !exact {
            // A lower bound reached the front: refine it and put it back in rank order
            // (refining only moves an entry down, so the walk stays exact).
            let p = &plans[i];
            let (t, share) = least_block_recompute(model, p, cluster);
            let e = (
                t / p.global_batch as f64,
                i,
                share,
                p.offload_fraction,
                true,
            );
            fits.remove(k);
            let at =
                k + fits[k..].partition_point(|x| x.0.total_cmp(&e.0).then(x.1.cmp(&e.1)).is_lt());
            fits.insert(at, e);
            continue;
        }
        k += 1;
        let p = &Plan {
            recompute_fraction: share,
            offload_fraction: off,
            ..plans[i].clone()
        };
        let same = top.iter().any(|r| {
            (r.estimate.step_time_s / r.plan.global_batch as f64 - t).abs() <= 1e-4 * t
                && Plan {
                    placement: p.placement,
                    ..r.plan.clone()
                } == *p
        });
        if !same {
            top.push(Ranked {
                plan: p.clone(),
                estimate: estimate(model, p, cluster),
            });
        }
    }
    SearchResult {
        space: space.size() * fixed.global_batches.len() as u64,
        evaluated: total,
        feasible,
        infeasible,
        top,
    }
}
