//! Parallel plans: resolving a `training` block into a complete plan, checking it against
//! the model and cluster, and placing each parallel group on the cluster hierarchy.

use myriad_cluster::BuiltCluster;
use myriad_collective::GroupSpan;
use myriad_model::{
    CpComm, CrossEntropy, EpDispatcher, Fp8Recipe, Recompute, RecomputeModule, RecomputeModules,
    Shard, Transformer,
};
use myriad_scenario::{
    AttentionKernel, Dim, PipelineSchedule, Precision, TrainingSpec, DEFAULT_PLACEMENT,
};
use serde::Serialize;

/// A complete parallel plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub accelerators: u64,
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub cp: u32,
    pub ep: u32,
    pub etp: u32,
    pub vpp: u32,
    /// Micro-batches per virtual-stage group of the interleaved schedule (Megatron-Core
    /// `microbatch_group_size_per_vp_stage`; PP by default).
    pub vpp_group: u32,
    pub micro_batch: u32,
    pub global_batch: u64,
    pub sequence_parallel: bool,
    pub recompute: Recompute,
    /// With selective recompute: the modules recomputed (Megatron `recompute_modules`;
    /// default the attention core).
    pub recompute_modules: RecomputeModules,
    /// With full recompute: the share of each pipeline chunk's layers that are recomputed
    /// (Megatron `--recompute-method block --recompute-num-layers N`: the first N layers of
    /// every chunk, N / layers-per-chunk); the other layers keep all their activations.
    /// 1 recomputes every layer (`--recompute-method uniform`).
    pub recompute_fraction: f64,
    /// The share of each pipeline chunk's layers whose activations are offloaded to host
    /// memory after their forward pass (Megatron `cpu_offloading_num_layers`); 0: none.
    pub offload_fraction: f64,
    pub precision: Precision,
    pub distributed_optimizer: bool,
    /// Gradient buffers and DP reduction in fp32 (else in the 2-byte parameter precision).
    pub grad_reduce_in_fp32: bool,
    /// Weights kept in fp8 only (`training.fp8_params`).
    pub fp8_params: bool,
    /// Adam's moments in bf16 (`training.bf16_optimizer_moments`).
    pub bf16_optimizer_moments: bool,
    /// The optimizer's master weights in bf16 (`training.bf16_master_weights`).
    pub bf16_master_weights: bool,
    /// ZeRO-3 prefetches the next layer's parameters under compute (FSDP); false: gathers
    /// on demand on the critical path, one tensor at a time with list collectives
    /// (DeepSpeed before 2022).
    pub zero3_prefetch: bool,
    pub zero_stage: u8,
    pub schedule: PipelineSchedule,
    /// Tensor-parallel communication overlapped with GEMMs (Transformer Engine userbuffers).
    pub tp_comm_overlap: bool,
    /// SMs reserved from the reduce-scatter-overlapped forward GEMMs under `tp_comm_overlap`
    /// (0 without it).
    pub tp_comm_overlap_sms: u32,
    /// DP gradient reduction and parameter gather overlapped with backward and forward.
    pub overlap_grad_reduce: bool,
    /// Interleaved-pipeline send/receive overlapped with compute.
    pub overlap_p2p_comm: bool,
    /// Pipeline sends split over the TP ranks and all-gathered on arrival
    /// (`training.pp_scatter_gather`).
    pub pp_scatter_gather: bool,
    /// The EP dispatch all-to-all carries fp8 tokens (`training.fp8_dispatch`).
    pub fp8_dispatch: bool,
    /// How fp8 training scales its GEMM inputs (`training.fp8_recipe`).
    pub fp8_recipe: Fp8Recipe,
    pub placement: [Dim; 5],
    pub attention: AttentionKernel,
    /// Loss kernel over the logits.
    pub cross_entropy: CrossEntropy,
    /// How context-parallel ranks share keys and values.
    pub cp_comm: CpComm,
    /// How MoE tokens reach experts on other EP ranks.
    pub ep_dispatcher: EpDispatcher,
    /// MoE all-to-alls hidden under the paired micro-batch's compute (combined 1F1B).
    pub ep_overlap: bool,
    /// MoE layers replay in a full-iteration CUDA graph (`TrainingSpec::moe_full_graph`).
    pub moe_full_graph: bool,
    /// Routed experts' GEMMs as one grouped kernel (`TrainingSpec::moe_grouped_kernel`);
    /// `false`: one kernel per local expert.
    pub moe_grouped_kernel: bool,
    /// The embedding and the loss count as one layer each in the pipeline split
    /// (Megatron-Core `account_for_embedding/loss_in_pipeline_split`), and so does each
    /// multi-token-prediction module (Megatron-Bridge's DeepSeek-V3 layouts, e.g.
    /// `Et*3|(tt|)*29m|L`): used when `layers + 2 + mtp_layers`, not `layers`, divides by
    /// PP×VPP (Llama 3.1 405B: 126 + 2 = 128; DeepSeek-V3: 61 + 2 + 1 = 64).
    pub embedding_in_pipeline_split: bool,
    /// Multi-token-prediction modules of the model ([`Transformer::mtp_layers`]), placed
    /// with the output head ([`Plan::holds_head`]).
    pub mtp_layers: u32,
    /// Transformer layers of the first and of the last pipeline stage when they are set
    /// apart (Megatron-Core `decoder_first/last_pipeline_num_layers`); the other stages
    /// share the rest evenly. `None`: the even split.
    pub edge_stage_layers: Option<(u32, u32)>,
}

/// An activation recompute in the scenario's own spelling, the one label every output uses
/// ([`Plan::recompute_label`] for a plan; the validator's notes for what it fills before a
/// plan exists): `full`, `full 25%` (`fraction` of every chunk's layers), `selective(…)`
/// with `modules` joined by `+`, `no-recompute`.
pub fn recompute_label(recompute: Recompute, fraction: f64, modules: RecomputeModules) -> String {
    match recompute {
        Recompute::Full if fraction < 1.0 => format!("full {:.0}%", 100.0 * fraction),
        Recompute::Full => "full".to_string(),
        Recompute::Selective => format!("selective({})", modules.names().replace(", ", "+")),
        Recompute::None => "no-recompute".to_string(),
    }
}

impl Plan {
    /// The plan's activation recompute in the scenario's own spelling, one label for every
    /// output (`myriad train`'s plan line and notes, `search` and `plan` tables): `full`,
    /// block recompute as the share of every chunk's layers recomputed (`full 25%`,
    /// `recompute_layers`), selective with its module set (`selective(core_attn)`,
    /// `selective(core_attn+layernorm)`: `recompute_modules`), and `no-recompute` for
    /// `recompute: none` (a word of its own in a plan summary, not a missing value).
    pub fn recompute_label(&self) -> String {
        recompute_label(
            self.recompute,
            self.recompute_fraction,
            self.recompute_modules,
        )
    }

    /// Transformer layers of pipeline stage `s`, as a range `[lo, hi)` of layer indices
    /// (fractional when the split is uneven).
    pub fn stage_layers(&self, layers: u32, s: u32) -> (f64, f64) {
        let pp = self.pp as f64;
        if let Some((first, last)) = self.edge_stage_layers {
            let (first, last) = (first as f64, last as f64);
            let middle = (layers as f64 - first - last) / (pp - 2.0).max(1.0);
            return if s == 0 {
                (0.0, first)
            } else if s + 1 == self.pp {
                (layers as f64 - last, layers as f64)
            } else {
                let lo = first + (s - 1) as f64 * middle;
                (lo, lo + middle)
            };
        }
        if self.embedding_in_pipeline_split {
            slot_range(layers, layers + 2 + self.mtp_layers, self.pp, s)
        } else {
            let k = layers as f64 / pp;
            (s as f64 * k, (s as f64 + 1.0) * k)
        }
    }

    /// Transformer layers of pipeline rank `s`, as the chunks it holds: one range, or under
    /// DualPipe two (DeepSeek-V3 report §3.2.1 and §2.2: the pipeline runs from both ends,
    /// so rank `s` holds chunk `s` and chunk `2·pp − 1 − s` of `2·pp`, and the shallowest
    /// layers with the embedding and the deepest with the output head share rank 0).
    /// Chunks split the layers as stages do (evenly, or with the embedding, MTP modules and
    /// loss taking a slot each), fractionally where neither divides; a split given by
    /// `first/last_stage_layers` is kept as stated, by rank.
    pub fn rank_layers(&self, layers: u32, s: u32) -> [(f64, f64); 2] {
        if self.schedule != PipelineSchedule::Dualpipe
            || self.pp < 2
            || self.edge_stage_layers.is_some()
        {
            return [self.stage_layers(layers, s), (0.0, 0.0)];
        }
        let chunks = 2 * self.pp;
        let range = |c: u32| -> (f64, f64) {
            let slots = layers + 2 + self.mtp_layers;
            if !layers.is_multiple_of(chunks) && slots.is_multiple_of(chunks) {
                slot_range(layers, slots, chunks, c)
            } else {
                let k = layers as f64 / chunks as f64;
                (c as f64 * k, (c as f64 + 1.0) * k)
            }
        };
        [range(s), range(chunks - 1 - s)]
    }

    /// Whether pipeline rank `s` holds the input embedding (the first rank).
    pub fn holds_embedding(&self, s: u32) -> bool {
        s == 0
    }

    /// Whether pipeline rank `s` holds the output head, the loss and the multi-token
    /// prediction modules: the last rank, or under DualPipe the first.
    pub fn holds_head(&self, s: u32) -> bool {
        if self.schedule == PipelineSchedule::Dualpipe && self.pp > 1 {
            s == 0
        } else {
            s + 1 == self.pp
        }
    }

    /// Transformer layers in one pipeline chunk (a stage's share of one virtual stage): the
    /// unit of block recompute and activation offloading.
    pub fn chunk_layers(&self, layers: u32) -> u32 {
        match self.edge_stage_layers {
            // The largest stage: block recompute and offloading count its layers.
            Some(edges) => edge_chunk_layers(layers, self.pp, self.vpp, edges),
            None => layers_per_chunk(
                layers + self.mtp_layers * self.embedding_in_pipeline_split as u32,
                self.embedding_in_pipeline_split,
                self.pp,
                self.vpp,
            ),
        }
    }

    /// Micro-batches per pipeline per step.
    pub fn micro_batches(&self) -> u64 {
        self.global_batch / (self.micro_batch as u64 * self.dp as u64)
    }

    /// Ranks that synchronise within every layer of a stage: the tensor and context
    /// parallel ranks, in a MoE model the expert-parallel ranks their all-to-all joins, and
    /// under ZeRO-3 the data-parallel ranks too, whose every layer waits for its parameters'
    /// all-gather (at most one pipeline stage's ranks).
    pub fn lockstep_ranks(&self, model: &myriad_model::Transformer) -> u64 {
        let stage = (self.accelerators / self.pp.max(1) as u64).max(1);
        if self.zero_stage >= 3 {
            return stage;
        }
        let ep = if model.moe.is_some() {
            self.ep as u64
        } else {
            1
        };
        (self.tp as u64 * self.cp as u64 * ep).clamp(1, stage)
    }

    pub fn shard(&self) -> Shard {
        Shard {
            tp: self.tp,
            cp: self.cp,
            ep: self.ep,
            etp: self.etp,
            sp: self.sequence_parallel,
            micro_batch: self.micro_batch,
            fused_attention: self.attention == AttentionKernel::Flash,
            cross_entropy: self.cross_entropy,
            cp_comm: self.cp_comm,
        }
    }

    fn size(&self, d: Dim) -> u64 {
        match d {
            Dim::Tp => self.tp as u64,
            Dim::Cp => self.cp as u64,
            Dim::Ep if self.ep_folded() => 1,
            Dim::Ep => self.ep as u64,
            Dim::Dp if self.ep_folded() => self.dp as u64,
            Dim::Dp => (self.dp / self.ep.max(1)) as u64,
            Dim::Pp => self.pp as u64,
        }
    }

    /// The expert-data-parallel size: the stage's TP × CP × DP ranks over ETP × EP, the
    /// ranks holding the same experts ([`expert_dp`]).
    pub fn expert_dp(&self) -> u64 {
        expert_dp(self.tp, self.cp, self.dp, self.etp, self.ep)
    }

    /// Expert parallelism wider than data parallelism's share of it: EP does not divide DP
    /// but divides a stage's TP × CP × DP ranks (Megatron-Core's MoE parallel folding, e.g.
    /// Qwen3-235B at TP 2, DP 16, EP 32: the expert layers re-factor the stage's 32 ranks
    /// as ETP 1 × EP 32). EP then takes no place of its own in the placement order: the
    /// expert groups are laid over the stage's ranks ([`Plan::expert_dims`]).
    pub fn ep_folded(&self) -> bool {
        self.ep > 1 && !self.dp.is_multiple_of(self.ep)
    }

    /// Under [`Plan::ep_folded`], the expert-parallel group and the expert-data-parallel
    /// group as placement parts ((size, stride) each): the stage's ranks in placement order
    /// (every dimension but PP) re-factored ETP innermost, then EP, then expert DP, as
    /// Megatron-Core builds its expert groups. `None` where a factor straddles a dimension
    /// it does not divide (no uniform-stride layout).
    pub fn expert_dims(&self) -> Option<([(u64, u64); 3], [(u64, u64); 3])> {
        let (mut skip, mut take) = (self.etp.max(1) as u64, self.ep.max(1) as u64);
        let (mut ep, mut edp) = ([(1u64, 1u64); 3], [(1u64, 1u64); 3]);
        let (mut ne, mut nd) = (0usize, 0usize);
        for d in self.placement.into_iter().filter(|d| *d != Dim::Pp) {
            let (n, stride) = (self.size(d), self.stride(d));
            if n <= 1 {
                continue;
            }
            // ETP ranks first (innermost), then EP, then what is left: expert DP.
            let (mut avail, mut inner) = (n, stride);
            if skip >= avail {
                if !skip.is_multiple_of(avail) {
                    return None;
                }
                skip /= avail;
                continue;
            }
            if !avail.is_multiple_of(skip) {
                return None;
            }
            inner *= skip;
            avail /= skip;
            skip = 1;
            let k = take.min(avail);
            if k > 1 {
                if !take.is_multiple_of(k) || !avail.is_multiple_of(k) || ne == 3 {
                    return None;
                }
                ep[ne] = (k, inner);
                ne += 1;
                take /= k;
                inner *= k;
                avail /= k;
            }
            if avail > 1 {
                if nd == 3 {
                    return None;
                }
                edp[nd] = (avail, inner);
                nd += 1;
            }
        }
        (skip == 1 && take == 1).then_some((ep, edp))
    }

    /// Rank stride of dimension `d` in the placement order (EP is the inner part of DP).
    pub fn stride(&self, d: Dim) -> u64 {
        let mut s = 1;
        for x in self.placement {
            if x == d {
                return s;
            }
            s *= self.size(x);
        }
        s
    }

    /// How a group of `n` ranks at rank stride `stride` lies on the hierarchy: the members
    /// inside one unit of each level are those within `size / stride` strides, rounded
    /// down (where the stride does not divide the unit, units hold that many or one more,
    /// and the units with fewer bound a ring's crossing: DP peers 64 ranks apart in racks of
    /// 72 are one to most racks, two to every eighth), at least one, never more units than
    /// a level holds.
    pub fn span(levels: &[myriad_cluster::Level], n: u64, stride: u64) -> GroupSpan {
        let stride = stride.max(1);
        Self::span_by(levels, n, |size| (size / stride).clamp(1, n))
    }

    /// How a group made of several placement dimensions lies on the hierarchy: `dims` are
    /// each dimension's (size, rank stride). Dimensions next to each other in the placement
    /// order make one part of uniform stride ([`Plan::span`]); where another dimension lies
    /// between two of them (the data-parallel group of dense weights under placement
    /// tp-cp-ep-pp-dp: CP ranks `tp` apart, DP ranks `tp·cp·ep·pp` apart), a unit of a level
    /// holds, of each part, the members that fall within its size, and the group is the
    /// product of the parts. Dimensions of size 1 take no part, whatever their stride.
    pub fn span_dims(levels: &[myriad_cluster::Level], dims: &[(u64, u64)]) -> GroupSpan {
        Self::span_parts(levels, &Self::group_parts(dims))
    }

    /// [`Plan::span_dims`] of a group's parts ([`Plan::group_parts`]).
    pub fn span_parts(levels: &[myriad_cluster::Level], parts: &GroupParts) -> GroupSpan {
        match &**parts {
            [] => Self::span(levels, 1, 1),
            [(n, stride)] => Self::span(levels, *n, *stride),
            _ => {
                let n = parts.iter().fold(1u64, |a, p| a.saturating_mul(p.0));
                Self::span_by(levels, n, |size| {
                    parts
                        .iter()
                        .fold(1u64, |a, &(k, s)| {
                            a.saturating_mul((size / s.max(1)).clamp(1, k))
                        })
                        .clamp(1, n)
                })
            }
        }
    }

    /// The parts of uniform stride of a group of placement dimensions `dims` ((size,
    /// stride) each): size-1 dimensions dropped, the rest by stride, and dimensions that
    /// continue the one before (stride = its stride × size) merged into it.
    pub fn group_parts(dims: &[(u64, u64)]) -> GroupParts {
        let mut out = GroupParts {
            parts: [(1, 1); 5],
            len: 0,
        };
        for &(n, s) in dims.iter().filter(|d| d.0 > 1).take(5) {
            // Insert by stride (at most five: one per placement dimension).
            let s = s.max(1);
            let mut i = out.len;
            while i > 0 && out.parts[i - 1].1 > s {
                out.parts[i] = out.parts[i - 1];
                i -= 1;
            }
            out.parts[i] = (n, s);
            out.len += 1;
        }
        let mut merged = 0usize;
        for i in 0..out.len {
            let (n, s) = out.parts[i];
            if merged > 0 {
                let last = &mut out.parts[merged - 1];
                if last.1.saturating_mul(last.0) == s {
                    last.0 = last.0.saturating_mul(n);
                    continue;
                }
            }
            out.parts[merged] = (n, s);
            merged += 1;
        }
        out.len = merged;
        out
    }

    /// [`Plan::span`] with the members of a group of `n` inside a unit of `size`
    /// accelerators given by `in_unit(size)`.
    fn span_by(
        levels: &[myriad_cluster::Level],
        n: u64,
        in_unit: impl Fn(u64) -> u64,
    ) -> GroupSpan {
        let mut spans = Vec::with_capacity(levels.len());
        let mut prev = 1u64;
        let mut below = 1u64;
        for (i, l) in levels.iter().enumerate() {
            let max = l.size.div_ceil(below).max(1);
            let in_unit = if i + 1 == levels.len() {
                n
            } else {
                in_unit(l.size)
            };
            let span = in_unit.div_ceil(prev).clamp(1, max);
            spans.push(span);
            prev *= span;
            below = l.size;
        }
        GroupSpan { spans }
    }

    /// Size and rank stride of the groups of dimension `d` (DP here means the full
    /// data-parallel group, EP included). A DP group whose EP ranks and outer replicas are
    /// not adjacent in the placement order has no single stride; this gives its finest one
    /// (`group_dims` and [`Plan::span_dims`] place it exactly).
    pub fn group_layout(&self, d: Dim) -> (u64, u64) {
        let dims = self.group_dims(d);
        Self::parts_layout(&dims, &Self::group_parts(&dims))
    }

    /// Size and finest stride of the group made of `dims`, whose parts are `parts`.
    pub fn parts_layout(dims: &[(u64, u64)], parts: &GroupParts) -> (u64, u64) {
        let n = dims.iter().fold(1u64, |a, p| a.saturating_mul(p.0));
        (n, parts.first().map_or(1, |p| p.1))
    }

    /// The placement dimensions a group of dimension `d` is made of, (size, stride) each:
    /// DP is its EP ranks and the replicas outside them; a folded EP group
    /// ([`Plan::ep_folded`]) the parts of the stage's ranks it takes; other groups are one
    /// dimension (the other entries then have size 1 and take no part).
    pub fn group_dims(&self, d: Dim) -> [(u64, u64); 3] {
        match d {
            Dim::Dp => [
                (self.size(Dim::Ep), self.stride(Dim::Ep)),
                (self.size(Dim::Dp), self.stride(Dim::Dp)),
                (1, 1),
            ],
            Dim::Ep if self.ep_folded() => self
                .expert_dims()
                .map_or([(self.ep as u64, 1), (1, 1), (1, 1)], |(ep, _)| ep),
            _ => [(self.size(d), self.stride(d)), (1, 1), (1, 1)],
        }
    }

    /// The group of dimension `d` holding rank 0, placed on the hierarchy.
    pub fn group(&self, levels: &[myriad_cluster::Level], d: Dim) -> GroupSpan {
        Self::span_dims(levels, &self.group_dims(d))
    }
}

/// The parts of uniform stride of a group ([`Plan::group_parts`]), (size, stride) each,
/// by stride; at most one per placement dimension, so held inline (the step model builds
/// them for every group of every estimate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupParts {
    parts: [(u64, u64); 5],
    len: usize,
}

impl std::ops::Deref for GroupParts {
    type Target = [(u64, u64)];
    fn deref(&self) -> &[(u64, u64)] {
        &self.parts[..self.len]
    }
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("training.{field}: {message}")]
    Field {
        field: &'static str,
        message: String,
    },
}

/// `offload_layers` needs a scale-up system with a host memory link (`train` and the
/// search refuse it otherwise).
pub fn check_offload_supported(
    spec: &TrainingSpec,
    scale_up: &myriad_catalog::ScaleUpSystem,
) -> Result<(), PlanError> {
    if spec.offload_layers.is_some() && scale_up.host_offload_gbps.is_none() {
        return Err(bad(
            "offload_layers",
            format!(
                "the scale-up system `{}` has no host memory link in the catalog (activation offloading is modelled on GB200/GB300 NVL72)",
                scale_up.id
            ),
        ));
    }
    Ok(())
}

/// The accelerator has a dense peak for the training precision (`train`, the search and
/// the planner refuse a precision it lacks with this error, naming the ones it has).
pub fn check_precision_supported(
    acc: &myriad_catalog::Accelerator,
    precision: Precision,
) -> Result<(), PlanError> {
    if crate::step::supported_peak_tflops(acc, precision).is_some() {
        return Ok(());
    }
    let have: Vec<&str> = acc.dense_tflops.iter().map(|(n, _)| n).collect();
    Err(bad(
        "precision",
        format!(
            "{} is not supported by {} (it has {})",
            precision.as_str(),
            acc.id,
            have.join(", ")
        ),
    ))
}

/// The token budget (`training.tokens`) holds at least one step of `global_batch`
/// sequences of `seq_len` tokens: a budget below one step is no run to time (it used to be
/// timed as one whole step, e.g. 43,566 days). Checked by `train` and by the planner.
/// `default` says how the global batch was chosen when the scenario does not give it.
pub fn check_token_budget(
    tokens: f64,
    global_batch: u64,
    seq_len: u32,
    default: Option<&str>,
) -> Result<(), PlanError> {
    let step = global_batch as u128 * seq_len as u128;
    if (step as f64) <= tokens {
        return Ok(());
    }
    let most = (tokens / seq_len as f64).floor();
    // A budget as given, in scientific form where `{}` would print past 21 digits
    // (`tokens: 1e-300` made 300 zeros).
    let tokens = if tokens == 0.0 || (1e-3..1e21).contains(&tokens.abs()) {
        format!("{tokens}")
    } else {
        format!("{tokens:e}")
    };
    Err(bad(
        "global_batch",
        format!(
            "{}one step of {global_batch} sequences of {seq_len} tokens is {step} tokens, more than the budget training.tokens: {tokens} tokens; {}",
            default.map_or(String::new(), |d| format!("not given, {d}: ")),
            if most >= 1.0 {
                format!("use a global batch of at most {most} sequences or a larger training.tokens")
            } else {
                format!("training.tokens is less than one sequence of {seq_len} tokens")
            }
        ),
    ))
}

/// Megatron splits an MLP's inner dimension over the tensor-parallel ranks (column-parallel
/// up-projection, row-parallel down-projection; `divide` asserts it divides): the dense
/// MLP's and the shared experts' over TP, the routed experts' over ETP. Checked by
/// [`resolve`] and by the plan search. `etp_field`: the field that set ETP.
pub fn check_mlp_split(
    model: &Transformer,
    tp: u32,
    etp: u32,
    etp_field: &'static str,
) -> Result<(), PlanError> {
    let ffn = model.dense_ffn();
    if model.moe_layers() < model.layers && !ffn.is_multiple_of(tp) {
        return Err(bad(
            "tp",
            format!("the dense MLP's inner size {ffn} is not divisible by TP {tp}"),
        ));
    }
    if let Some(m) = &model.moe {
        let shared = m.expert_ffn_hidden as u64 * m.shared_experts as u64;
        if shared > 0 && !shared.is_multiple_of(tp as u64) {
            return Err(bad(
                "tp",
                format!("the shared experts' inner size {shared} is not divisible by TP {tp}"),
            ));
        }
        if !m.expert_ffn_hidden.is_multiple_of(etp) {
            return Err(bad(
                etp_field,
                format!(
                    "the routed experts' inner size {} (moe.expert_ffn_hidden) is not divisible by ETP {etp}",
                    m.expert_ffn_hidden
                ),
            ));
        }
    }
    Ok(())
}

/// `moe_grouped_kernel: false` with `moe_full_graph: true` is a contradiction: a CUDA graph
/// needs the grouped GEMM that reads its per-expert split sizes on the device. Checked by
/// [`resolve`] and by the plan search, which takes the settings as given.
pub fn check_moe_graph(spec: &TrainingSpec) -> Result<(), PlanError> {
    if spec.moe_grouped_kernel == Some(false) && spec.moe_full_graph == Some(true) {
        return Err(bad(
            "moe_grouped_kernel",
            "false cannot replay in a full-iteration CUDA graph (moe_full_graph: true): the graph needs the grouped GEMM that reads its per-expert split sizes on the device",
        ));
    }
    Ok(())
}

/// `tp_comm_overlap_sms` against `tp_comm_overlap` and the accelerator: an error when the
/// overlap is off, or when the SMs leave none for the GEMM. Checked by [`resolve`] and by
/// the plan search and the planner, which take the settings as given.
pub fn check_tp_comm_overlap_sms(
    spec: &TrainingSpec,
    accelerator: &myriad_catalog::Accelerator,
    tp_comm_overlap: bool,
) -> Result<(), PlanError> {
    let Some(n) = spec.tp_comm_overlap_sms else {
        return Ok(());
    };
    if !tp_comm_overlap {
        return Err(bad(
            "tp_comm_overlap_sms",
            "applies only when TP communication is overlapped (tp_comm_overlap, which needs TP > 1 and sequence parallelism); leave it out".to_string(),
        ));
    }
    if let Some(sms) = accelerator.sm_count {
        if n >= sms {
            return Err(bad(
                "tp_comm_overlap_sms",
                format!(
                    "{n} SMs leave none of the {sms} of {} for the GEMM",
                    accelerator.id
                ),
            ));
        }
    }
    Ok(())
}

/// The fp8-only settings (`fp8_dispatch`, `fp8_recipe`, `fp8_params`) against the plan's
/// precision: each is an error outside fp8 (or fp4) training. Checked by [`resolve`] and by
/// the plan search and the planner, which take the settings as given.
pub fn check_precision_settings(
    spec: &TrainingSpec,
    precision: Precision,
) -> Result<(), PlanError> {
    if spec.fp8_dispatch == Some(true) && !matches!(precision, Precision::Fp8 | Precision::Fp4) {
        return Err(bad(
            "fp8_dispatch",
            format!(
                "tokens are dispatched in fp8 only with fp8 or fp4 training, not {}",
                precision.as_str()
            ),
        ));
    }
    if let Some(r) = spec.fp8_recipe {
        if precision != Precision::Fp8 {
            return Err(bad(
                "fp8_recipe",
                format!(
                    "{} scaling is an fp8 training recipe; this plan trains in {}",
                    r.name(),
                    precision.as_str()
                ),
            ));
        }
    }
    if spec.fp8_params == Some(true) && !matches!(precision, Precision::Fp8 | Precision::Fp4) {
        return Err(bad(
            "fp8_params",
            format!(
                "parameters are stored in fp8 only with fp8 or fp4 training, not {}",
                precision.as_str()
            ),
        ));
    }
    Ok(())
}

/// Transformer layers `[lo, hi)` of part `c` of `parts` when the embedding (the first
/// slot), the loss and the MTP modules (the last ones) take a slot of `slots` each.
fn slot_range(layers: u32, slots: u32, parts: u32, c: u32) -> (f64, f64) {
    let k = slots as f64 / parts as f64;
    let lo = (c as f64 * k - 1.0).max(0.0);
    let hi = ((c as f64 + 1.0) * k - 1.0).min(layers as f64);
    (lo, hi.max(lo))
}

/// Slots of the pipeline split when the embedding, the loss and each multi-token-prediction
/// module take one like a transformer layer (see [`Plan::embedding_in_pipeline_split`]).
pub fn pipeline_slots(model: &Transformer) -> u32 {
    model.layers + 2 + model.mtp_layers
}

/// Transformer layers in one pipeline chunk, at least 1: `layers` (plus the embedding and
/// the loss when they count as stages) over PP × VPP, rounded.
pub fn layers_per_chunk(layers: u32, embedding_in_split: bool, pp: u32, vpp: u32) -> u32 {
    let split = layers + if embedding_in_split { 2 } else { 0 };
    (split as f64 / (pp.max(1) as f64 * vpp.max(1) as f64))
        .round()
        .max(1.0) as u32
}

/// Layers of one virtual stage of the largest pipeline stage when the first and last stages
/// hold `(first, last)` layers and the others share the rest: the unit of block recompute
/// and offloading.
pub fn edge_chunk_layers(layers: u32, pp: u32, vpp: u32, (first, last): (u32, u32)) -> u32 {
    let middle = if pp > 2 {
        (layers - first - last) / (pp - 2)
    } else {
        0
    };
    (first.max(last).max(middle) / vpp.max(1)).max(1)
}

/// Megatron-Core's first-stage layer count for `layers` that `pp` does not divide: every
/// other stage holds ceil(layers / pp), the first the remainder; `None` when that leaves the
/// first stage no layer (Megatron-Core, and [`resolve`]'s `first_stage_layers`, need at
/// least one). Returned as `(first, last)` edge-stage layers.
pub fn first_stage_remainder(layers: u32, pp: u32) -> Option<(u32, u32)> {
    if pp < 2 {
        return None;
    }
    let k = layers.div_ceil(pp);
    let rest = (pp - 1) as u64 * k as u64;
    (layers as u64 > rest).then(|| (layers - rest as u32, k))
}

/// SMs Transformer Engine's userbuffers reserve by default for a reduce-scatter overlapped
/// with a GEMM (`num_sm` 16 with `set_sm_margin` for its `pipeline` method, `initialize_ub`
/// in transformer_engine/pytorch/module/base.py, TE 2.x).
pub const TE_UB_DEFAULT_SMS: u32 = 16;

/// Why Megatron-Core's interleaved schedule refuses `m` micro-batches per step in groups of
/// `group` on `pp` stages (`forward_backward_pipelining_with_interleaving`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupError {
    /// Fewer micro-batches than stages.
    TooFew,
    /// The group is outside [PP, M].
    GroupOutOfRange,
    /// The last group holds this many (> 0 and < PP): "the remainder of M ... should be 0,
    /// or larger than or equal to the pipeline-parallel size".
    ShortLastGroup(u64),
}

/// Checks Megatron-Core's constraints on the interleaved schedule's micro-batch groups.
pub fn interleaved_groups(pp: u32, m: u64, group: u32) -> Result<(), GroupError> {
    let (p, n) = (pp as u64, group as u64);
    if m < p {
        Err(GroupError::TooFew)
    } else if n < p || n > m {
        Err(GroupError::GroupOutOfRange)
    } else if !m.is_multiple_of(n) && m % n < p {
        Err(GroupError::ShortLastGroup(m % n))
    } else {
        Ok(())
    }
}

/// Whether `schedule` with `vpp` virtual stages on `pp` stages is Megatron-Core's
/// interleaved 1F1B.
pub fn interleaved(schedule: PipelineSchedule, pp: u32, vpp: u32) -> bool {
    pp > 1 && vpp > 1 && schedule == PipelineSchedule::OneFOneB
}

/// Micro-batches whose activations a rank of pipeline stage `stage` holds at its peak, in
/// units of one micro-batch through the whole stage (all its virtual chunks), for `m`
/// micro-batches per step on `pp` stages of `vpp` chunks each.
///
/// - Interleaved 1F1B (Megatron-Core `forward_backward_pipelining_with_interleaving`; also
///   the zero-bubble schedule with virtual stages, whose warm-up is the same):
///   stage s runs `w = 2(pp - s - 1) + (vpp - 1)·group` warm-up chunk forwards (`group`:
///   `microbatch_group_size_per_vp_stage`, pp by default; all `m·vpp` when w reaches that,
///   `get_pp_rank_microbatches`), then one more forward before its first backward, so it
///   holds `min(w + 1, m·vpp)` chunk activations, i.e. that over `vpp` stage micro-batches:
///   `pp + (pp - 1)/vpp` on the first stage and `pp - (pp - 1)/vpp` on the last one
///   (Korthikanti et al. 2022 give the first-stage figure).
/// - 1F1B: `pp - s - 1` warm-up forwards plus one, at most `m`.
/// - GPipe: every micro-batch's forward before any backward: `m`.
/// - DualPipe: `pp + 1` (DeepSeek-V3 report, Table 2), at most `2m` (each rank holds two
///   stages).
pub fn in_flight_micro_batches(
    schedule: PipelineSchedule,
    pp: u32,
    vpp: u32,
    group: u32,
    stage: u32,
    m: u64,
) -> f64 {
    let (p, s, m) = (
        pp.max(1) as u64,
        stage.min(pp.saturating_sub(1)) as u64,
        m.max(1),
    );
    match schedule {
        PipelineSchedule::Gpipe => m as f64,
        PipelineSchedule::Dualpipe => ((p + 1) as f64).min(2.0 * m as f64),
        _ if p > 1 && vpp > 1 => {
            let v = vpp as u64;
            // Saturating: m·vpp past u64 wrapped (to 0 for 2^62 micro-batches on VPP 4), and
            // the stage was said to hold no activations.
            let total = m.saturating_mul(v);
            let warmup = 2 * (p - s - 1) + (v - 1) * (group as u64).max(p);
            (warmup + 1).min(total) as f64 / v as f64
        }
        _ => (p - s).min(m) as f64,
    }
}

fn bad(field: &'static str, message: impl Into<String>) -> PlanError {
    PlanError::Field {
        field,
        message: message.into(),
    }
}

/// Resolves a `training` block into a plan for `accelerators` ranks on `cluster`, filling
/// nulls with documented defaults; returns notes saying what was chosen.
///
/// Defaults: tp, pp, cp, ep, vpp = 1; dp = accelerators / (tp·pp·cp); micro_batch 1;
/// global_batch = dp·micro_batch; sequence_parallel = tp > 1; precision bf16;
/// distributed_optimizer = dp > 1; zero_stage 0 (1 with the distributed optimizer);
/// schedule 1F1B (interleaved when vpp > 1); etp = 1 when ep > 1 else tp;
/// tp_comm_overlap = sequence_parallel; placement tp-cp-ep-dp-pp; recompute: `none`, or
/// the cheapest mode that fits in memory (chosen by the caller, see `estimate`).
pub fn resolve(
    spec: &TrainingSpec,
    model: &Transformer,
    cluster: &BuiltCluster,
    accelerators: u64,
) -> Result<(Plan, Vec<String>), PlanError> {
    let mut notes = Vec::new();
    let tp = spec.tp.unwrap_or(1);
    let pp = spec.pp.unwrap_or(1);
    let cp = spec.cp.unwrap_or(1);
    // In u128, as `product` below: three u32s reach 2^96.
    let inner = tp as u128 * pp as u128 * cp as u128;
    let dp = match spec.dp {
        Some(d) => d,
        None => {
            if !(accelerators as u128).is_multiple_of(inner) {
                return Err(bad(
                    "dp",
                    format!("tp*pp*cp = {inner} does not divide the {accelerators} accelerators"),
                ));
            }
            let d = (accelerators as u128 / inner) as u32;
            notes.push(format!("dp: {d} (accelerators / (tp*pp*cp))"));
            d
        }
    };
    // TP·PP·CP·DP of four u32s reaches 2^128, and a u64 product that wrapped to the
    // accelerator count (TP 1, PP 109, CP 671,170,565, DP 252,150,784 is 2^64 + 1,024)
    // passed this check on 1,024 accelerators.
    let product = tp as u128 * pp as u128 * cp as u128 * dp as u128;
    if product != accelerators as u128 {
        return Err(bad(
            "dp",
            format!("tp*pp*cp*dp = {tp}*{pp}*{cp}*{dp} = {product} != {accelerators} accelerators"),
        ));
    }
    let ep = spec.ep.unwrap_or(1);
    if dp % ep != 0 && !(dp as u64 * cp as u64 * tp as u64).is_multiple_of(ep as u64) {
        // Megatron-Core accepts EP dividing DP, or (MoE parallel folding) a stage's ranks.
        return Err(bad(
            "ep",
            format!(
                "EP {ep} divides neither DP {dp} nor the TP*CP*DP = {tp}*{cp}*{dp} = {} ranks of a pipeline stage",
                dp as u64 * cp as u64 * tp as u64
            ),
        ));
    }
    let etp = spec.etp.unwrap_or(if ep > 1 { 1 } else { tp });
    let domain = cluster.levels.first().map(|l| l.size).unwrap_or(1);
    if tp as u64 > domain {
        return Err(bad(
            "tp",
            format!("TP {tp} is larger than the scale-up domain of {domain}"),
        ));
    }
    if !model.heads.is_multiple_of(tp) {
        return Err(bad(
            "tp",
            format!("heads {} not divisible by TP {tp}", model.heads),
        ));
    }
    if model.mla.is_none()
        && !model.kv_heads.is_multiple_of(tp)
        && !tp.is_multiple_of(model.kv_heads)
    {
        return Err(bad(
            "tp",
            format!("kv_heads {} not compatible with TP {tp}", model.kv_heads),
        ));
    }
    if let Some(m) = &model.moe {
        if m.experts % ep != 0 {
            return Err(bad(
                "ep",
                format!("experts {} not divisible by EP {ep}", m.experts),
            ));
        }
    } else if ep > 1 {
        return Err(bad("ep", format!("EP {ep} on a model without experts")));
    }
    // Expert layers lay ETP x EP x expert-DP over the ranks of a pipeline stage (Megatron-Core's
    // expert parallel groups): ETP x EP must divide them.
    let stage_ranks = tp as u64 * cp as u64 * dp as u64;
    if model.moe.is_some() && !stage_ranks.is_multiple_of(etp as u64 * ep as u64) {
        return Err(bad(
            if spec.etp.is_some() { "etp" } else { "ep" },
            format!(
                "ETP*EP = {etp}*{ep} = {} does not divide the TP*CP*DP = {tp}*{cp}*{dp} = {stage_ranks} ranks of a pipeline stage",
                etp as u64 * ep as u64
            ),
        ));
    }
    // ETP not given is TP's when EP is 1 (1 otherwise, which divides anything).
    check_mlp_split(
        model,
        tp,
        etp,
        if spec.etp.is_some() { "etp" } else { "tp" },
    )?;
    let vpp = spec.vpp.unwrap_or(1);
    // Virtual stages interleave the chunks of a pipeline's stages under 1F1B (and the
    // zero-bubble schedule): without a pipeline there is nothing to interleave, and GPipe
    // and DualPipe have no virtual stages (they were taken silently, GPipe's bubble then
    // divided by VPP as the interleaved schedule's is).
    if vpp > 1 {
        if pp < 2 {
            return Err(bad(
                "vpp",
                format!("VPP {vpp} needs a pipeline (PP 2 or more), got PP {pp}; leave vpp out"),
            ));
        }
        let schedule = spec.pipeline_schedule.unwrap_or(PipelineSchedule::OneFOneB);
        if matches!(
            schedule,
            PipelineSchedule::Gpipe | PipelineSchedule::Dualpipe
        ) {
            return Err(bad(
                "vpp",
                format!(
                    "VPP {vpp}: the {} schedule has no virtual stages (interleaving is 1F1B's and the zero-bubble schedule's); leave vpp out",
                    if schedule == PipelineSchedule::Gpipe { "GPipe" } else { "DualPipe" }
                ),
            ));
        }
    }
    // Every pipeline chunk holds at least one slot (a layer, the embedding or the loss); the
    // product in u64, as PP and VPP can each be near u32::MAX.
    let stages = pp as u64 * vpp as u64;
    if stages > pipeline_slots(model) as u64 {
        return Err(bad(
            if vpp > 1 { "vpp" } else { "pp" },
            format!(
                "PP*VPP = {pp}*{vpp} = {stages} is more than the {} pipeline slots (layers {} + embedding + loss{})",
                pipeline_slots(model),
                model.layers,
                if model.mtp_layers > 0 {
                    format!(" + MTP {}", model.mtp_layers)
                } else {
                    String::new()
                }
            ),
        ));
    }
    let mut embedding_in_pipeline_split = false;
    let edge_stage_layers = edge_stages(spec, model.layers, pp, vpp)?;
    if edge_stage_layers.is_some() {
        // The edge stages are set apart; the rest divides evenly (checked above).
    } else if !model.layers.is_multiple_of(pp * vpp) {
        if pp > 1 && pipeline_slots(model).is_multiple_of(pp * vpp) {
            embedding_in_pipeline_split = true;
            notes.push(if model.mtp_layers > 0 {
                format!(
                    "pipeline split: layers {} + embedding + MTP {} + loss = {} over PP*VPP = {} (the first stage holds one layer less, the last {} less)",
                    model.layers,
                    model.mtp_layers,
                    pipeline_slots(model),
                    pp * vpp,
                    1 + model.mtp_layers
                )
            } else {
                format!(
                    "pipeline split: layers {} + embedding + loss = {} over PP*VPP = {} (first and last stages hold one layer less)",
                    model.layers,
                    model.layers + 2,
                    pp * vpp
                )
            });
        } else if vpp > 1 || !model.layers.is_multiple_of(pp) {
            let stages = pp * vpp;
            return Err(bad(
                if vpp > 1 { "vpp" } else { "pp" },
                format!(
                    "layers {} not divisible by PP*VPP = {pp}*{vpp} = {stages}",
                    model.layers
                ),
            ));
        }
    }
    if !model.seq_len.is_multiple_of(cp * 2) && cp > 1 {
        return Err(bad(
            "cp",
            format!(
                "seq_len {} not divisible by 2*CP = {} (causal load balancing)",
                model.seq_len,
                2 * cp
            ),
        ));
    }
    let micro_batch = match spec.micro_batch {
        Some(m) => m as u32,
        None => {
            notes.push("micro_batch: 1 (not given)".into());
            1
        }
    };
    let global_batch = match spec.global_batch {
        Some(g) => g,
        None => {
            let g = dp as u64 * micro_batch as u64;
            notes.push(format!("global_batch: {g} (dp * micro_batch)"));
            g
        }
    };
    let per_step = micro_batch as u64 * dp as u64;
    if global_batch % per_step != 0 {
        return Err(bad(
            "global_batch",
            format!(
                "global batch {global_batch} not divisible by micro_batch*DP = {micro_batch}*{dp} = {per_step}"
            ),
        ));
    }
    let sequence_parallel = match spec.sequence_parallel {
        Some(s) => s && tp > 1,
        None => {
            if tp > 1 {
                notes.push("sequence_parallel: true (tp > 1)".into());
            }
            tp > 1
        }
    };
    let precision = spec.precision.unwrap_or_else(|| {
        notes.push("precision: bf16 (not given)".into());
        Precision::Bf16
    });
    check_precision_supported(&cluster.accelerator, precision)?;
    check_moe_graph(spec)?;
    check_precision_settings(spec, precision)?;
    let distributed_optimizer = match spec.distributed_optimizer {
        Some(d) => d,
        None => dp > 1 && spec.zero_stage.is_none(),
    };
    let zero_stage = spec
        .zero_stage
        .unwrap_or(if distributed_optimizer { 1 } else { 0 });
    let schedule = spec.pipeline_schedule.unwrap_or(PipelineSchedule::OneFOneB);
    if schedule == PipelineSchedule::Dualpipe && !pp.is_multiple_of(2) {
        return Err(bad(
            "pipeline_schedule",
            format!("DualPipe needs an even PP, got {pp}"),
        ));
    }
    // Megatron-Core's interleaved schedule runs micro-batches through the virtual stages in
    // groups of `vpp_group` (`microbatch_group_size_per_vp_stage`, PP by default).
    let micro_batches = global_batch / per_step;
    let vpp_group = spec.vpp_group.unwrap_or(pp);
    if spec.vpp_group.is_some() && !interleaved(schedule, pp, vpp) {
        return Err(bad(
            "vpp_group",
            "applies only to the interleaved schedule (1F1B with PP > 1 and VPP > 1); leave it out"
                .to_string(),
        ));
    }
    if interleaved(schedule, pp, vpp) {
        let field = if spec.vpp_group.is_some() {
            "vpp_group"
        } else {
            "vpp"
        };
        let batch =
            format!("(global batch {global_batch} / (micro_batch {micro_batch} * DP {dp}))");
        let why = match interleaved_groups(pp, micro_batches, vpp_group) {
            Ok(()) => None,
            Err(GroupError::TooFew) => Some(format!(
                "the interleaved schedule (VPP {vpp}) needs at least PP = {pp} micro-batches per step, got {micro_batches} {batch}"
            )),
            Err(GroupError::GroupOutOfRange) => Some(format!(
                "vpp_group {vpp_group} must lie between PP = {pp} and the {micro_batches} micro-batches per step"
            )),
            Err(GroupError::ShortLastGroup(r)) => Some(format!(
                "the interleaved schedule (VPP {vpp}) runs micro-batches in groups of {vpp_group}{}; {micro_batches} per step {batch} leave a last group of {r} < PP = {pp} (set training.vpp_group, e.g. to {micro_batches})",
                if spec.vpp_group.is_none() { " (PP, Megatron-Core's default microbatch_group_size_per_vp_stage)" } else { "" },
            )),
        };
        if let Some(why) = why {
            return Err(bad(field, why));
        }
    }
    let placement = match &spec.placement {
        Some(p) => myriad_scenario::parse_placement(p).map_err(|m| bad("placement", m))?,
        None => DEFAULT_PLACEMENT,
    };
    let mut recompute = spec.recompute.unwrap_or(Recompute::None);
    let recompute_modules = match &spec.recompute_modules {
        None => RecomputeModules::CORE_ATTN,
        Some(list) => {
            if list.is_empty() {
                return Err(bad(
                    "recompute_modules",
                    "is empty; leave it out (selective recompute then recomputes core_attn) or list modules".to_string(),
                ));
            }
            if let Some(r @ (Recompute::None | Recompute::Full)) = spec.recompute {
                return Err(bad(
                    "recompute_modules",
                    format!(
                        "lists what selective recompute recomputes, but recompute is `{}`; set `recompute: selective` or leave recompute out",
                        if r == Recompute::Full { "full" } else { "none" }
                    ),
                ));
            }
            for (i, m) in list.iter().enumerate() {
                let why = match m {
                    RecomputeModule::MoeAct | RecomputeModule::Moe if model.moe.is_none() => {
                        Some("the model has no MoE layers")
                    }
                    RecomputeModule::SharedExperts
                        if model.moe.as_ref().is_none_or(|m| m.shared_experts == 0) =>
                    {
                        Some("the model has no shared experts")
                    }
                    RecomputeModule::MlaUpProj if model.mla.is_none() => {
                        Some("the model has no multi-head latent attention")
                    }
                    RecomputeModule::Mlp if model.moe_layers() == model.layers => {
                        Some("every layer of the model is an MoE layer (no dense MLP)")
                    }
                    _ => None,
                };
                if let Some(why) = why {
                    return Err(bad(
                        "recompute_modules",
                        format!("`{}` (entry {}) does not apply: {why}", m.name(), i + 1),
                    ));
                }
            }
            recompute = Recompute::Selective;
            RecomputeModules::of(list)
        }
    };
    let chunk = match edge_stage_layers {
        Some(edges) => edge_chunk_layers(model.layers, pp, vpp, edges),
        None => layers_per_chunk(
            model.layers + model.mtp_layers * embedding_in_pipeline_split as u32,
            embedding_in_pipeline_split,
            pp,
            vpp,
        ),
    };
    let mut recompute_fraction = 1.0;
    if let Some(n) = spec.recompute_layers {
        if recompute != Recompute::Full {
            return Err(bad(
                "recompute_layers",
                "needs `recompute: full` (it chooses how many layers of each chunk are recomputed)"
                    .to_string(),
            ));
        }
        if n == 0 || n > chunk {
            return Err(bad(
                "recompute_layers",
                format!("{n} is not between 1 and the {chunk} layers of a pipeline chunk (layers / (pp*vpp))"),
            ));
        }
        recompute_fraction = n as f64 / chunk as f64;
    }
    let mut offload_fraction = 0.0;
    if let Some(n) = spec.offload_layers {
        check_offload_supported(spec, &cluster.scale_up)?;
        if n > chunk {
            return Err(bad(
                "offload_layers",
                format!(
                    "{n} is more than the {chunk} layers of a pipeline chunk (layers / (pp*vpp))"
                ),
            ));
        }
        offload_fraction = n as f64 / chunk as f64;
    }
    let attention = match spec.attention {
        Some(a) => a,
        None if precision == Precision::Fp16 => {
            notes.push("attention: unfused (fp16 recipe; set `attention: flash` to change)".into());
            AttentionKernel::Unfused
        }
        None => AttentionKernel::Flash,
    };
    // MoE settings on a model without MoE layers are not an error (a scenario may be run
    // against several models), but the user is told they do nothing.
    if model.moe.is_none() {
        let unused: Vec<&str> = [
            ("etp", spec.etp.is_some()),
            ("ep_dispatcher", spec.ep_dispatcher.is_some()),
            ("ep_overlap", spec.ep_overlap.is_some()),
            ("fp8_dispatch", spec.fp8_dispatch.is_some()),
            ("moe_full_graph", spec.moe_full_graph.is_some()),
            ("moe_grouped_kernel", spec.moe_grouped_kernel.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if !unused.is_empty() {
            notes.push(format!(
                "to ignore {}: the model has no MoE layers",
                unused.join(", ")
            ));
        }
    }
    let moe_grouped_kernel = spec
        .moe_grouped_kernel
        .unwrap_or(spec.moe_full_graph.unwrap_or(false));
    if let Some(m) = model
        .moe
        .as_ref()
        .filter(|_| spec.moe_grouped_kernel.is_none())
    {
        let local = m.experts / ep.max(1);
        if !moe_grouped_kernel && local > 1 {
            notes.push(format!(
                "moe_grouped_kernel: false (not given; eager MoE layers run Transformer Engine's GroupedLinear: one GEMM kernel per local expert, {local} here, in each pass; set `moe_grouped_kernel: true` for one grouped kernel)"
            ));
        }
    }
    let tp_comm_overlap = spec
        .tp_comm_overlap
        .unwrap_or(sequence_parallel && attention == AttentionKernel::Flash);
    check_tp_comm_overlap_sms(spec, &cluster.accelerator, tp_comm_overlap)?;
    let tp_comm_overlap_sms = match spec.tp_comm_overlap_sms {
        Some(n) => n,
        None if tp_comm_overlap => {
            notes.push(format!(
                "tp_comm_overlap_sms: {TE_UB_DEFAULT_SMS} (not given; Transformer Engine's default reserve for each forward reduce-scatter it overlaps)"
            ));
            TE_UB_DEFAULT_SMS
        }
        None => 0,
    };
    let plan = Plan {
        accelerators,
        tp,
        pp,
        dp,
        cp,
        ep,
        etp,
        vpp,
        vpp_group,
        micro_batch,
        global_batch,
        sequence_parallel,
        recompute,
        recompute_modules,
        recompute_fraction,
        offload_fraction,
        precision,
        distributed_optimizer,
        grad_reduce_in_fp32: spec
            .grad_reduce_in_fp32
            .unwrap_or(precision != Precision::Fp16),
        fp8_params: spec.fp8_params.unwrap_or(false),
        bf16_optimizer_moments: spec.bf16_optimizer_moments.unwrap_or(false),
        bf16_master_weights: spec.bf16_master_weights.unwrap_or(false),
        zero3_prefetch: spec.zero3_prefetch.unwrap_or(true),
        zero_stage,
        schedule,
        tp_comm_overlap,
        tp_comm_overlap_sms,
        overlap_grad_reduce: spec.overlap_grad_reduce.unwrap_or(true),
        overlap_p2p_comm: spec.overlap_p2p_comm.unwrap_or(true),
        pp_scatter_gather: spec.pp_scatter_gather.unwrap_or(false),
        fp8_dispatch: spec.fp8_dispatch.unwrap_or(false),
        fp8_recipe: spec.fp8_recipe.unwrap_or(Fp8Recipe::Delayed),
        placement,
        attention,
        cross_entropy: spec.cross_entropy.unwrap_or(CrossEntropy::Fused),
        cp_comm: spec.cp_comm.unwrap_or(CpComm::P2p),
        ep_dispatcher: spec.ep_dispatcher.unwrap_or(EpDispatcher::Alltoall),
        ep_overlap: spec.ep_overlap.unwrap_or(false),
        moe_full_graph: spec.moe_full_graph.unwrap_or(false),
        moe_grouped_kernel,
        embedding_in_pipeline_split,
        mtp_layers: model.mtp_layers,
        edge_stage_layers,
    };
    // Folded expert parallelism needs its groups to tile the stage's ranks in the placement
    // order (e.g. EP 8 over TP 4 × DP 4 at ETP 1: two TP groups of 4, side by side).
    if plan.ep_folded() {
        if plan.expert_dims().is_none() {
            return Err(bad(
                "ep",
                format!(
                    "EP {ep} (ETP {etp}) spans the TP*CP*DP = {tp}*{cp}*{dp} = {} ranks of a stage (it does not divide DP), but does not tile them in the placement order {}",
                    tp as u64 * cp as u64 * dp as u64,
                    plan.placement.iter().map(|d| format!("{d:?}").to_lowercase()).collect::<Vec<_>>().join("-")
                ),
            ));
        }
        notes.push(format!(
            "ep: {ep} spans TP*CP*DP = {} ranks of a stage at ETP {etp} (MoE parallel folding: EP does not divide DP {dp})",
            tp as u64 * cp as u64 * dp as u64
        ));
    }
    Ok((plan, notes))
}

/// `first_stage_layers` / `last_stage_layers`: the layers of the first and last pipeline
/// stages, the rest split evenly over the other stages (Megatron-Core's
/// `decoder_first/last_pipeline_num_layers`); `None` when neither is given.
pub fn edge_stages(
    spec: &TrainingSpec,
    layers: u32,
    pp: u32,
    vpp: u32,
) -> Result<Option<(u32, u32)>, PlanError> {
    let (first, last) = (spec.first_stage_layers, spec.last_stage_layers);
    if first.is_none() && last.is_none() {
        return Ok(None);
    }
    let field = if first.is_some() {
        "first_stage_layers"
    } else {
        "last_stage_layers"
    };
    if pp < 2 {
        return Err(bad(field, format!("needs PP of at least 2, got {pp}")));
    }
    for (name, n) in [("first_stage_layers", first), ("last_stage_layers", last)] {
        if n == Some(0) {
            return Err(bad(
                name,
                "must be at least 1, got 0 (a pipeline stage holds at least one transformer layer, as Megatron-Core requires); leave it out for an even split".to_string(),
            ));
        }
    }
    // In u64: two large counts once wrapped past u32 to a small sum that was accepted.
    let given = first.unwrap_or(0) as u64 + last.unwrap_or(0) as u64;
    if given > layers as u64 {
        return Err(bad(
            field,
            format!("first + last stage layers = {given} is more than the model's {layers} layers"),
        ));
    }
    let given = given as u32;
    let others = pp - first.is_some() as u32 - last.is_some() as u32;
    let rest = layers - given;
    if others == 0 {
        if rest != 0 {
            return Err(bad(
                field,
                format!(
                    "with PP 2 the first and last stages hold every layer: {given} != {layers}"
                ),
            ));
        }
        return Ok(Some((first.unwrap_or(0), last.unwrap_or(0))));
    }
    if !rest.is_multiple_of(others) {
        return Err(bad(
            field,
            format!("the other {rest} layers do not split evenly over the other {others} stages"),
        ));
    }
    let each = rest / others;
    if each == 0 {
        return Err(bad(
            field,
            format!("first + last stage layers = {given} leaves none of the model's {layers} layers for the other {others} stages (a pipeline stage holds at least one)"),
        ));
    }
    let (first, last) = (first.unwrap_or(each), last.unwrap_or(each));
    // With interleaving every virtual stage of a pipeline stage holds the same layers, but
    // the last stage's last chunks may hold fewer (Megatron-Bridge's DeepSeek-V3 layouts:
    // every chunk ceil(61 / chunks) layers, the last chunk the remainder beside the MTP
    // module and the loss).
    if vpp > 1 {
        if spec.last_stage_layers.is_some() && last > each {
            return Err(bad(
                "last_stage_layers",
                format!("{last} layers with VPP {vpp} is more than the {each} of each other stage (the last stage's chunks may hold fewer, not more)"),
            ));
        }
        for (name, n) in [
            ("first_stage_layers", first),
            (
                "last_stage_layers",
                if spec.last_stage_layers.is_some() {
                    0
                } else {
                    last
                },
            ),
            ("pp", each),
        ] {
            if n % vpp != 0 {
                let what = if name == "pp" {
                    format!("the {each} layers of each other stage")
                } else {
                    format!("{n} layers")
                };
                return Err(bad(
                    if name == "pp" { field } else { name },
                    format!("{what} not divisible by VPP {vpp} (every virtual stage of a stage holds the same layers)"),
                ));
            }
        }
    }
    Ok(Some((first, last)))
}

/// The expert-data-parallel size of a plan's shape: a pipeline stage's TP × CP × DP ranks
/// over ETP × EP (Megatron-Core's expert groups), the ranks that hold the same experts and
/// over which the distributed optimizer shards their state.
pub fn expert_dp(tp: u32, cp: u32, dp: u32, etp: u32, ep: u32) -> u64 {
    tp as u64 * cp as u64 * dp as u64 / (etp.max(1) as u64 * ep.max(1) as u64)
}
