//! Training step time and memory: model + parallel plan + built cluster -> breakdown,
//! and the validation runner over `myriad-validation/1` files.
//!
//! Invariants:
//! - Pure: no IO; the CLI reads files and prints.
//! - No per-case or per-source parameter: every efficiency comes from the catalog entry of
//!   the accelerator, the scale-up system or the fabric.
//! - `estimate` allocates only two small op lists and the per-stage vector.

pub mod plan;
pub mod step;
pub mod validate;

pub use myriad_collective::{Analytical, CollectiveTimer};
pub use plan::{resolve, GroupParts, Plan, PlanError};
pub use step::{estimate, estimate_with, Breakdown, Memory, StepEstimate};

use myriad_cluster::BuiltCluster;
use myriad_model::{Recompute, RecomputeModule, RecomputeModules, Transformer};
use myriad_scenario::TrainingSpec;
use serde::Serialize;

/// A step estimate with the plan it used and the defaults chosen.
#[derive(Debug, Clone, Serialize)]
pub struct TrainEstimate {
    pub plan: Plan,
    pub notes: Vec<String>,
    pub estimate: StepEstimate,
}

/// Records a candidate of [`train_with`]'s free choices: the fastest that fits, and the
/// smallest footprint in case nothing does (the first of equals is kept).
fn keep(
    best: &mut Option<(Plan, StepEstimate)>,
    smallest: &mut Option<(Plan, StepEstimate)>,
    plan: &Plan,
    e: StepEstimate,
) {
    if e.fits
        && best
            .as_ref()
            .is_none_or(|(_, b)| e.step_time_s < b.step_time_s)
    {
        *best = Some((plan.clone(), e.clone()));
    }
    if smallest
        .as_ref()
        .is_none_or(|(_, b)| e.memory.total_gib < b.memory.total_gib)
    {
        *smallest = Some((plan.clone(), e));
    }
}

/// Resolves the plan and estimates a step.
///
/// Fields the spec leaves unset that decide whether the plan fits are chosen the way a user
/// would: when `recompute` is not given, and when neither `distributed_optimizer` nor
/// `zero_stage` is given, every combination (recompute none/selective/full, full recompute
/// of the first 1..N layers of every pipeline chunk, activation offload of 0..N layers to
/// host memory where the system has a host link, × optimizer sharding ZeRO-1/2/3) is
/// estimated and the fastest that fits is kept; if none fits, the one needing the least
/// memory is reported (with `fits: false`). Each choice is noted.
pub fn train(
    spec: &TrainingSpec,
    model: &Transformer,
    cluster: &BuiltCluster,
    accelerators: u64,
) -> Result<TrainEstimate, PlanError> {
    let timer = Analytical {
        levels: &cluster.levels,
    };
    train_with(spec, model, cluster, accelerators, &timer)
}

/// Which choices [`train_choosing`] may make for what the spec leaves unset.
#[derive(Debug, Clone, Copy)]
pub struct Choices {
    /// Selective recompute may recompute modules beyond the attention core (Megatron-Core's
    /// `recompute_modules`, 2025); off, it recomputes the attention core only.
    pub recompute_modules: bool,
    /// Optimizer sharding may shard gradients but not parameters (ZeRO-2: DeepSpeed, Apex's
    /// `DistributedFusedAdam` under NeMo 1.x, PyTorch FSDP `SHARD_GRAD_OP`); off, only
    /// ZeRO-1 and ZeRO-3 are tried, as Megatron-Core offers them (its distributed
    /// optimizer and Megatron FSDP).
    pub zero2: bool,
    /// Optimizer state may be sharded alone (ZeRO-1: Megatron's distributed optimizer,
    /// 2022 on); off, as in Megatron-LM before it, the choice is between unsharded
    /// data parallelism (plain all-reduce, every replica keeping the whole optimizer state)
    /// and ZeRO-3 (DeepSpeed).
    pub zero1: bool,
}

impl Default for Choices {
    fn default() -> Self {
        Choices {
            recompute_modules: true,
            zero2: true,
            zero1: true,
        }
    }
}

/// The selective-recompute sets tried when `recompute` is not given, cheapest first: the
/// attention core; + the norms; + the output-discarding MoE and MLA parts; + whole dense and
/// shared-expert MLPs; + the whole MoE layer. Modules the model lacks are left out.
pub fn selective_ladder(model: &Transformer) -> Vec<RecomputeModules> {
    use RecomputeModule as M;
    let moe = model.moe.is_some();
    let shared = model.moe.as_ref().is_some_and(|m| m.shared_experts > 0);
    let dense = model.moe_layers() < model.layers;
    let applies = |m: M| match m {
        M::MoeAct | M::Moe => moe,
        M::SharedExperts => shared,
        M::MlaUpProj => model.mla.is_some(),
        M::Mlp => dense,
        M::CoreAttn | M::Layernorm => true,
    };
    let steps: [&[M]; 5] = [
        &[M::CoreAttn],
        &[M::Layernorm],
        &[M::MoeAct, M::MlaUpProj],
        &[M::Mlp, M::SharedExperts],
        &[M::Moe],
    ];
    let mut out: Vec<RecomputeModules> = Vec::new();
    let mut set = RecomputeModules::NONE;
    for step in steps {
        for &m in step {
            if applies(m) {
                set = set.with(m);
            }
        }
        if out.last() != Some(&set) {
            out.push(set);
        }
    }
    out
}

/// As [`train`], timing the step's collectives with `timer` (every candidate recompute and
/// optimizer-sharding choice is timed with it too).
pub fn train_with(
    spec: &TrainingSpec,
    model: &Transformer,
    cluster: &BuiltCluster,
    accelerators: u64,
    timer: &dyn CollectiveTimer,
) -> Result<TrainEstimate, PlanError> {
    train_choosing(
        spec,
        model,
        cluster,
        accelerators,
        timer,
        Choices::default(),
    )
}

/// As [`train_with`], with `choices` limiting what may be chosen for unset fields (the
/// validator limits it to what a source's era offered).
pub fn train_choosing(
    spec: &TrainingSpec,
    model: &Transformer,
    cluster: &BuiltCluster,
    accelerators: u64,
    timer: &dyn CollectiveTimer,
    choices: Choices,
) -> Result<TrainEstimate, PlanError> {
    let (mut plan, mut notes) = resolve(spec, model, cluster, accelerators)?;
    if let Some(tokens) = spec.tokens {
        plan::check_token_budget(
            tokens,
            plan.global_batch,
            model.seq_len,
            spec.global_batch.is_none().then_some("dp * micro_batch"),
        )?;
    }
    let auto_recompute = spec.recompute.is_none() && spec.recompute_modules.is_none();
    let recomputes: Vec<(Recompute, RecomputeModules)> = if auto_recompute {
        let mut v = vec![(Recompute::None, RecomputeModules::CORE_ATTN)];
        if choices.recompute_modules {
            v.extend(
                selective_ladder(model)
                    .into_iter()
                    .map(|m| (Recompute::Selective, m)),
            );
        } else {
            v.push((Recompute::Selective, RecomputeModules::CORE_ATTN));
        }
        v.push((Recompute::Full, RecomputeModules::CORE_ATTN));
        v
    } else {
        Vec::new()
    };
    // The distributed optimizer (ZeRO) shards the dense state over DP x CP and the experts'
    // over expert DP (a stage's TP x CP x DP ranks over ETP x EP), so with DP 1 it still has
    // ranks to shard over when CP or expert DP is wider than one (as the search tries it).
    let expert_dp = if model.moe.is_some() {
        plan.expert_dp()
    } else {
        1
    };
    let free_sharding = spec.distributed_optimizer.is_none()
        && spec.zero_stage.is_none()
        && (plan.dp as u64 * plan.cp as u64 > 1 || expert_dp > 1);
    let stages: &[u8] = match (free_sharding, choices.zero1, choices.zero2) {
        (false, _, _) => &[],
        (true, false, _) => &[0, 3],
        (true, true, true) => &[1, 2, 3],
        (true, true, false) => &[1, 3],
    };
    if recomputes.is_empty() && stages.is_empty() {
        let est = estimate_with(model, &plan, cluster, timer);
        return Ok(TrainEstimate {
            plan,
            notes,
            estimate: est,
        });
    }
    let rs: Vec<(Recompute, RecomputeModules)> = if recomputes.is_empty() {
        vec![(plan.recompute, plan.recompute_modules)]
    } else {
        recomputes.clone()
    };
    let zs: Vec<u8> = if stages.is_empty() {
        vec![plan.zero_stage]
    } else {
        stages.to_vec()
    };
    let mut best: Option<(Plan, StepEstimate)> = None;
    let mut smallest: Option<(Plan, StepEstimate)> = None;
    // Full recompute may cover only the first N layers of every pipeline chunk (Megatron's
    // block method): every N is a candidate when recompute is not given.
    let chunk = plan.chunk_layers(model.layers);
    let (base_recompute_fraction, base_offload_fraction) =
        (plan.recompute_fraction, plan.offload_fraction);
    for &z in &zs {
        for &(r, modules) in &rs {
            let blocks: Vec<f64> = if r == Recompute::Full
                && !recomputes.is_empty()
                && spec.recompute_layers.is_none()
            {
                (1..=chunk).map(|k| k as f64 / chunk as f64).collect()
            } else {
                vec![base_recompute_fraction]
            };
            // Without recompute or beside selective recompute (Megatron-Core offloads the
            // activations selective recompute keeps), activations may go to host memory
            // (systems with a host memory link), the first N layers of every chunk, as the
            // search tries them. HBM use falls and the exposed transfer grows with N, so the
            // fastest share that fits is the least whose activations fit in HBM: found by
            // bisection (log2 of the chunk's layers estimates, not one per share).
            let offload_free = matches!(r, Recompute::None | Recompute::Selective)
                && !recomputes.is_empty()
                && spec.offload_layers.is_none()
                && cluster.scale_up.host_offload_gbps.is_some();
            for &f in &blocks {
                plan.recompute = r;
                plan.recompute_modules = modules;
                plan.recompute_fraction = f;
                plan.zero_stage = z;
                if free_sharding {
                    plan.distributed_optimizer = z >= 1;
                }
                let share = |k: u32| k as f64 / chunk as f64;
                let at = |plan: &mut Plan, o: f64| {
                    plan.offload_fraction = o;
                    estimate_with(model, plan, cluster, timer)
                };
                if !offload_free {
                    let e = at(&mut plan, base_offload_fraction);
                    keep(&mut best, &mut smallest, &plan, e);
                    continue;
                }
                let none = at(&mut plan, 0.0);
                let fits = none.fits;
                keep(&mut best, &mut smallest, &plan, none);
                if fits {
                    continue;
                }
                let in_hbm = |e: &StepEstimate| e.memory.total_gib <= e.memory.capacity_gib;
                let all = at(&mut plan, 1.0);
                if in_hbm(&all) {
                    // in_hbm fails at lo and holds at hi.
                    let (mut lo, mut hi) = (0, chunk);
                    let mut least = None;
                    while hi - lo > 1 {
                        let mid = lo + (hi - lo) / 2;
                        let m = at(&mut plan, share(mid));
                        if in_hbm(&m) {
                            hi = mid;
                            least = Some(m);
                        } else {
                            lo = mid;
                        }
                    }
                    if let Some(m) = least {
                        plan.offload_fraction = share(hi);
                        keep(&mut best, &mut smallest, &plan, m);
                    }
                }
                plan.offload_fraction = 1.0;
                keep(&mut best, &mut smallest, &plan, all);
            }
        }
    }
    let (plan, est) = best
        .or(smallest)
        .expect("at least one combination is estimated");
    let fit_note = if est.fits {
        "the fastest that fits"
    } else {
        "nothing fits; the smallest footprint"
    };
    if !recomputes.is_empty() {
        // The plan line's label (`Plan::recompute_label`), block recompute with its layers.
        let block = if plan.recompute == Recompute::Full && plan.recompute_fraction < 1.0 {
            format!(
                ", the first {} of {chunk} layers of every pipeline chunk",
                (plan.recompute_fraction * chunk as f64).round()
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "recompute: {}{block} (not given; {fit_note})",
            plan.recompute_label()
        ));
    }
    if plan.offload_fraction > 0.0 && spec.offload_layers.is_none() {
        notes.push(format!(
            "offload: activations of the first {} of {chunk} layers of every pipeline chunk to host memory (not given; {fit_note})",
            (plan.offload_fraction * chunk as f64).round()
        ));
    }
    if free_sharding {
        let stage = match plan.zero_stage {
            0 => "none, every replica keeps the whole optimizer state".to_string(),
            z => format!("ZeRO-{z}"),
        };
        notes.push(format!(
            "optimizer sharding: {stage} (not given; {fit_note})"
        ));
    }
    Ok(TrainEstimate {
        plan,
        notes,
        estimate: est,
    })
}
