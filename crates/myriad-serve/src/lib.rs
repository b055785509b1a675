//! Inference serving: how many tokens per second per accelerator a deployment delivers, at
//! what time to first token (TTFT) and time per output token (TPOT), and how many
//! accelerators a traffic level needs.
//!
//! - [`model`]: the per-iteration time of one instance from first principles (prefill
//!   compute-bound GEMMs and quadratic attention; decode weight and KV-cache reads; TP
//!   all-reduce and MoE all-to-all via `myriad-collective`; a framework overhead).
//! - [`sim`]: the seeded request-level discrete-event simulation (continuous batching,
//!   chunked prefill, KV-cache capacity, prefix cache, aggregated or disaggregated).
//! - [`validate`]: builds the deployment a `myriad-measurements/1` serving row describes
//!   and predicts its throughput.
//! - [`search`]: picks roles, parallelism and batch limits that maximise goodput per
//!   accelerator under the SLOs.
//!
//! Invariants:
//! - No IO, no printing: callers pass scenario values and trace data in.
//! - A run is a pure function of its inputs and seed (ChaCha8 streams).
//! - Every efficiency comes from the catalog (accelerator, scale-up system, fabric) or the
//!   framework table, each with its provenance; nothing is tuned per measurement.
//! - Iteration parts (`IterTime`) add up to the iteration time; simulated throughput never
//!   exceeds the roofline of the hardware (tested).

pub mod datasets;
pub mod framework;
pub mod model;
pub mod search;
pub mod sim;
pub mod validate;

use myriad_catalog::Catalog;
use myriad_cluster::BuiltCluster;
use myriad_scenario::serving::{LengthDistKind, LengthSpec, RoleSpec as RoleIn, ServingMode};
use myriad_scenario::{Precision, Scenario};
use serde::Serialize;

pub use framework::{framework, DpPlacement, Framework};
pub use model::{
    Batch, BusiestRank, InstanceModel, IterMemo, IterTime, MoeStages, Parallel, Precisions,
    Speculative,
};
pub use sim::{
    simulate, simulate_closed, simulate_requests, Arrivals, Deployment, IterationClass,
    IterationMix, LengthDist, Percentiles, RoleSpec, SchedulePolicy, SimReport, Slo, Workload,
};

/// Everything `myriad serve` needs, resolved from a scenario, with notes on defaults.
#[derive(Debug, Clone)]
pub struct Setup {
    pub deployment: Deployment,
    pub workload: Workload,
    pub slo: Slo,
    pub framework: &'static Framework,
    pub target_rate: Option<f64>,
    pub notes: Vec<String>,
    /// What the user should know before trusting the run: requests the deployment's
    /// maximum context turns away, a `serving.max_context` past the model's.
    pub warnings: Vec<String>,
    pub accelerators_per_node: u32,
}

/// Converts a scenario length block.
pub fn length(l: &LengthSpec) -> LengthDist {
    let mean = l.mean.unwrap_or(1.0);
    let max = l.max.unwrap_or((4.0 * mean).ceil() as u32);
    let min = l.min.unwrap_or(1);
    match l.dist.unwrap_or(LengthDistKind::Fixed) {
        LengthDistKind::Fixed => LengthDist::Fixed(mean.round() as u32),
        LengthDistKind::Uniform => LengthDist::Uniform {
            min,
            max: l.max.unwrap_or(min),
        },
        LengthDistKind::Normal => LengthDist::Normal {
            mean,
            std: l.std.unwrap_or(0.0),
            min,
            max,
        },
        LengthDistKind::Lognormal => LengthDist::LogNormal {
            mean,
            std: l.std.unwrap_or(0.0),
            min,
            max,
        },
    }
}

/// A role's resolved settings.
#[allow(clippy::too_many_arguments)]
pub fn role(
    r: &RoleIn,
    path: &str,
    cluster: &BuiltCluster,
    model: &myriad_model::Transformer,
    prec: Precisions,
    fw: &Framework,
    overhead_us: f64,
    overlap: bool,
    spec: Option<Speculative>,
    kv_fraction: f64,
    chunked: bool,
    default_instances: u32,
    notes: &mut Vec<String>,
) -> Result<RoleSpec, String> {
    let par = Parallel::new(
        r.tp.unwrap_or(1),
        r.attention_dp.unwrap_or(1),
        r.ep.unwrap_or(1),
    )
    .with_pp(r.pp.unwrap_or(1));
    let m = InstanceModel::new(
        &cluster.accelerator,
        &cluster.levels,
        model,
        par,
        prec,
        overhead_us * 1e-6,
        overlap,
        spec,
    )
    .map_err(|e| format!("serving.{path}: {e}"))?
    .with_multi_node_nvlink(cluster.scale_up.spans_nodes())
    .with_framework(fw);
    let kv_tokens = m.kv_capacity_tokens(kv_fraction);
    if kv_tokens < 1.0 {
        return Err(format!(
            "serving.{path}: the weights ({:.1} GiB per accelerator) leave no room for a KV cache on {} ({} GiB); use more tp/ep or smaller weights",
            m.weight_bytes_per_gpu() / (1u64 << 30) as f64,
            cluster.accelerator.id,
            cluster.accelerator.hbm_gib
        ));
    }
    if par.pp > 1 {
        notes.push(format!(
            "{path}.pp: {} pipeline stages of {} accelerators (at most {} of the {} layers each), {} micro-batches in flight, each with its own max_num_tokens; an iteration below is one cycle of all of them",
            par.pp,
            par.stage_gpus(),
            m.stage_layers(),
            model.layers,
            par.pp
        ));
    }
    let instances = r.instances.unwrap_or(default_instances.max(1));
    if r.instances.is_none() {
        notes.push(format!("{path}.instances: {instances} (not given)"));
    }
    if r.max_batch.is_none() {
        notes.push(format!(
            "{path}.max_batch: {} ({} default)",
            fw.max_batch, fw.id
        ));
    }
    if r.max_num_tokens.is_none() {
        notes.push(format!(
            "{path}.max_num_tokens: {} ({} default)",
            fw.max_num_tokens, fw.id
        ));
    }
    Ok(RoleSpec {
        model: m,
        instances,
        max_batch: r.max_batch.unwrap_or(fw.max_batch),
        // Each of the pp micro-batches has its own token budget (saturating: a budget past
        // u32 is unlimited, and a wrapped one was none).
        max_tokens: r
            .max_num_tokens
            .unwrap_or(fw.max_num_tokens)
            .saturating_mul(par.pp),
        chunked_prefill: chunked,
        kv_tokens,
        policy: SchedulePolicy {
            dp_placement: if path == "prefill" {
                fw.dp_placement_prefill
            } else {
                fw.dp_placement
            },
            ..Default::default()
        },
    })
}

/// Resolves the scenario's `serving` block on its built cluster. `trace` holds the rows of
/// `serving.trace` when the caller read one.
pub fn setup(
    s: &Scenario,
    cluster: &BuiltCluster,
    cat: &Catalog,
    trace: Option<Vec<(f64, u32, u32)>>,
) -> Result<Setup, String> {
    let sv = s
        .serving
        .as_ref()
        .ok_or("serving: missing; `myriad serve` needs a `serving` block")?;
    let mut model = s
        .model
        .as_ref()
        .ok_or("model: missing; `myriad serve` needs a `model` block")?
        .resolve(cat)
        .map_err(|(p, m)| format!("model.{p}: {m}"))?;
    // Multi-token-prediction modules are a training-time head here: serving runs them only
    // as a speculative draft (`serving.speculative`), which prices its own draft passes.
    model.mtp_layers = 0;
    let fw = framework(sv.framework.as_deref().unwrap_or("tensorrt-llm"));
    let mut notes = Vec::new();
    let weights = sv.weights.unwrap_or(Precision::Bf16);
    let mut prec = Precisions::new(
        weights,
        sv.experts.unwrap_or(weights),
        sv.kv_cache.unwrap_or(Precision::Bf16),
    );
    prec.attention = sv.attention.unwrap_or(weights);
    prec.attention_out = sv.attention_out.unwrap_or(prec.attention);
    notes.extend(model::widening_notes(&cluster.accelerator, prec));
    let overhead = sv.iteration_overhead_us.unwrap_or(fw.iteration_overhead_us);
    let overlap = sv.overlap_comm.unwrap_or(fw.overlap_comm);
    let kv_fraction = sv.kv_cache_fraction.unwrap_or(fw.kv_fraction);
    let chunked = sv.chunked_prefill.unwrap_or(fw.chunked_prefill);
    let spec = sv.speculative.as_ref().map(|x| Speculative {
        draft_tokens: x.draft_tokens,
        acceptance: x.acceptance.unwrap_or(0.85),
    });
    let count = cluster.accelerators as u32;
    let mode = sv.mode.unwrap_or(ServingMode::Aggregated);
    let deployment = match mode {
        ServingMode::Aggregated => {
            let r = sv.instance.clone().unwrap_or_default();
            // An instance spans `tp × attention_dp × pp` accelerators.
            let gpus = r.tp.unwrap_or(1) * r.attention_dp.unwrap_or(1) * r.pp.unwrap_or(1);
            let mut spec_r = role(
                &r,
                "instance",
                cluster,
                &model,
                prec,
                fw,
                overhead,
                overlap,
                spec,
                kv_fraction,
                chunked,
                count / gpus,
                &mut notes,
            )?;
            spec_r.policy = SchedulePolicy {
                prefill_first: sv.prefill_first.unwrap_or(false),
                decode_steps_per_round: sv.decode_steps_per_round.unwrap_or(1),
                adp_balance_timeout_iters: sv.adp_balance_timeout_iters.unwrap_or(0),
                adp_balance_batching_wait_iters: sv
                    .adp_balance_batching_wait_iters
                    .unwrap_or(ADP_BALANCE_BATCHING_WAIT_ITERS),
                dp_placement: fw.dp_placement,
            };
            Deployment::Aggregated(spec_r)
        }
        ServingMode::Disaggregated => {
            let p = sv.prefill.clone().unwrap_or_default();
            let d = sv.decode.clone().unwrap_or_default();
            let pr = role(
                &p,
                "prefill",
                cluster,
                &model,
                prec,
                fw,
                overhead,
                overlap,
                None,
                kv_fraction,
                chunked,
                1,
                &mut notes,
            )?;
            let de = role(
                &d,
                "decode",
                cluster,
                &model,
                prec,
                fw,
                overhead,
                overlap,
                spec,
                kv_fraction,
                chunked,
                1,
                &mut notes,
            )?;
            // Expert placement: SGLang's large-EP disaggregated deployments place redundant
            // experts with EPLB (LMSYS 2025-05-05); other frameworks default to static
            // placement (`myriad_model::moe_balance`).
            let (mut pr, mut de) = (pr, de);
            if fw.id == "sglang" && (pr.model.par.ep > 1 || de.model.par.ep > 1) {
                notes.push(
                    "experts: EPLB placement (SGLang large-EP disaggregated deployment)".into(),
                );
                pr.model = pr.model.with_placement(myriad_model::Placement::Eplb);
                de.model = de.model.with_placement(myriad_model::Placement::Eplb);
            }
            // KV moves over the scale-out NIC of each prefill accelerator.
            let out = cluster.levels.get(1).unwrap_or(&cluster.levels[0]);
            Deployment::Disaggregated {
                prefill: pr,
                decode: Box::new(de),
                kv_bps: out.gbps_per_accelerator * out.efficiency * 1e9,
                kv_latency_s: out.latency_us * 1e-6,
            }
        }
    };
    // The engine's context limit: stated, else the preset's maximum context.
    let mut warnings = Vec::new();
    let preset = s
        .model
        .as_ref()
        .and_then(|m| m.preset.as_deref())
        .and_then(|p| cat.model(p).ok());
    let model_limit = preset.and_then(|p| p.max_context.map(|c| (c, p.id.as_str())));
    let max_context = match (sv.max_context, model_limit) {
        (Some(c), Some((m, id))) if c > m => {
            warnings.push(format!(
                "serving.max_context: {c} tokens is more than the {id} preset's maximum context of {m}: positions past it are beyond what the checkpoint supports"
            ));
            Some(c)
        }
        (Some(c), _) => Some(c),
        (None, Some((m, id))) => {
            notes.push(format!(
                "max_context: {m} tokens (the {id} preset's maximum context; longer requests are rejected)"
            ));
            Some(m)
        }
        (None, None) => None,
    };
    let mut deployment = deployment;
    match &mut deployment {
        Deployment::Aggregated(r) => r.model.max_context = max_context,
        Deployment::Disaggregated {
            prefill, decode, ..
        } => {
            prefill.model.max_context = max_context;
            decode.model.max_context = max_context;
        }
    }
    if deployment.accelerators() > cluster.accelerators {
        return Err(format!(
            "serving: the deployment needs {} accelerators but cluster.count is {}",
            deployment.accelerators(),
            cluster.accelerators
        ));
    }
    // A named dataset: each request's lengths are one of its samples, drawn with the
    // scenario's seed; arrivals as the rate says.
    let trace = match (&sv.dataset, trace) {
        (Some(key), None) => {
            let set = datasets::by_key(key)
                .ok_or_else(|| format!("serving.dataset: unknown dataset '{key}'"))?;
            let n = sv.requests.unwrap_or(10_000);
            let seed = sv.seed.unwrap_or(1);
            let times = sim::generate(&Workload {
                arrivals: sv.arrival_rate.map_or(Arrivals::Offline, Arrivals::Poisson),
                input: LengthDist::Fixed(1),
                output: LengthDist::Fixed(1),
                requests: n,
                prefix_hit: 0.0,
                seed,
            });
            notes.push(format!(
                "lengths: {} samples of the {} set ({}), drawn with replacement: mean input {:.0}, mean output {:.0} tokens",
                set.pairs.len(),
                set.name,
                set.source,
                set.mean_input(),
                set.mean_output()
            ));
            Some(set.requests(times.iter().map(|r| r.0), seed, 1.0))
        }
        (_, t) => t,
    };
    let arrivals = match (&trace, sv.arrival_rate, sv.concurrency) {
        (_, _, Some(c)) => {
            let clients = c as u32;
            notes.push(format!(
                "arrivals: {clients} clients in a closed loop, each sending its next request when the last completes"
            ));
            Arrivals::Closed {
                clients,
                lengths: trace
                    .as_ref()
                    .map(|t| t.iter().map(|&(_, i, o)| (i, o)).collect())
                    .unwrap_or_default(),
            }
        }
        (Some(t), _, None) => Arrivals::Trace(t.clone()),
        (None, Some(r), None) => Arrivals::Poisson(r),
        (None, None, None) => {
            notes
                .push("arrivals: offline (no arrival_rate or trace): all requests at t = 0".into());
            Arrivals::Offline
        }
    };
    let requests = trace
        .as_ref()
        .map(|t| t.len() as u64)
        .unwrap_or(sv.requests.unwrap_or(10_000));
    if let Some(limit) = max_context {
        let source = match (sv.max_context, model_limit) {
            (Some(_), _) | (None, None) => "serving.max_context".to_string(),
            (None, Some((_, id))) => format!("the {id} preset's maximum context"),
        };
        let field = if sv.dataset.is_some() {
            "serving.dataset"
        } else if sv.trace.is_some() {
            "serving.trace"
        } else {
            "serving.input + serving.output"
        };
        let carried = match &arrivals {
            Arrivals::Trace(t) => Some(check_context(
                t.iter().map(|&(_, i, o)| (i, o)),
                limit,
                &source,
                field,
                &mut warnings,
            )),
            Arrivals::Closed { lengths, .. } if !lengths.is_empty() => Some(check_context(
                lengths.iter().copied(),
                limit,
                &source,
                field,
                &mut warnings,
            )),
            _ => None,
        };
        match carried {
            Some(checked) => checked?,
            None => {
                let (input, output) = (length(&sv.input), length(&sv.output));
                let (lo, hi) = (
                    input.min_len() as u64 + output.min_len() as u64,
                    input.max_len() as u64 + output.max_len() as u64,
                );
                if lo > limit as u64 {
                    return Err(format!(
                        "{field}: every request holds at least {} + {} = {lo} tokens, more than the maximum context of {limit} tokens ({source}); shorten the lengths or set serving.max_context",
                        input.min_len(),
                        output.min_len()
                    ));
                }
                if hi > limit as u64 {
                    warnings.push(format!(
                        "{field}: requests reach {} + {} = {hi} tokens, more than the maximum context of {limit} tokens ({source}): those drawn longer are rejected on arrival (rejected_too_long)",
                        input.max_len(),
                        output.max_len()
                    ));
                }
            }
        }
    }
    Ok(Setup {
        deployment,
        workload: Workload {
            arrivals,
            input: length(&sv.input),
            output: length(&sv.output),
            requests,
            prefix_hit: sv.prefix_cache_hit.unwrap_or(0.0),
            seed: sv.seed.unwrap_or(1),
        },
        slo: Slo {
            ttft_s: sv.slo.as_ref().and_then(|x| x.ttft_ms).map(|x| x * 1e-3),
            tpot_s: sv.slo.as_ref().and_then(|x| x.tpot_ms).map(|x| x * 1e-3),
        },
        framework: fw,
        target_rate: sv.target_rate,
        notes,
        warnings,
        accelerators_per_node: cluster.scale_up.accelerators_per_node,
    })
}

/// Checks given request lengths `(input, output)` against the maximum context `limit`
/// (`source` names where it comes from, `field` the scenario key the lengths come from):
/// an error when every request exceeds it (nothing would run), else a warning naming how
/// many do and the first of them.
fn check_context(
    lengths: impl Iterator<Item = (u32, u32)>,
    limit: u32,
    source: &str,
    field: &str,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let (mut total, mut over, mut first) = (0usize, 0usize, None);
    for (k, (i, o)) in lengths.enumerate() {
        total += 1;
        if i.max(1) as u64 + o.max(1) as u64 > limit as u64 {
            over += 1;
            first.get_or_insert((k, i, o));
        }
    }
    let Some((k, i, o)) = first else {
        return Ok(());
    };
    let first = format!(
        "request {} holds {i} + {o} = {} tokens",
        k + 1,
        i as u64 + o as u64
    );
    if over == total {
        return Err(format!(
            "{field}: all {total} requests exceed the maximum context of {limit} tokens ({source}; {first}); set serving.max_context if the deployment allows more"
        ));
    }
    warnings.push(format!(
        "{field}: {over} of {total} requests exceed the maximum context of {limit} tokens ({source}; the first, {first}): they are rejected on arrival (rejected_too_long)"
    ));
    Ok(())
}

/// Accelerators needed to sustain `rate` requests/s within the SLOs, from the deployment's
/// capacity per accelerator (`max_rate_per_accelerator`: the highest Poisson rate at which
/// the search's share of requests, `search::ATTAINMENT`, meets both SLOs, per accelerator;
/// `search::capacity`), rounded up to a whole number of `per_instance` (the accelerators of
/// the smallest unit the deployment grows by). `None` when no rate met the SLOs.
///
/// (It was scaled from the goodput of the run at the scenario's own arrival rate, which
/// is that rate whenever the deployment keeps up: the same deployment needed 784
/// accelerators for 100 requests/s when simulated at 1 request/s and 36 at 30.)
pub fn accelerators_for(
    rate: f64,
    max_rate_per_accelerator: f64,
    per_instance: u64,
) -> Option<u64> {
    if !(max_rate_per_accelerator > 0.0) {
        return None;
    }
    let n = (rate / max_rate_per_accelerator).ceil() as u64;
    Some(n.div_ceil(per_instance.max(1)) * per_instance.max(1))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The serve report: setup notes and simulation results.
#[derive(Debug, Clone, Serialize)]
pub struct ServeReport {
    pub notes: Vec<String>,
    /// The setup's warnings (`Setup::warnings`); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub framework: &'static str,
    pub accelerators: u64,
    pub accelerators_per_node: u32,
    pub output_tokens_per_s_per_node: f64,
    pub input_tokens_per_s_per_node: f64,
    /// Accelerators that serve `serving.target_rate` within the SLOs, from the deployment's
    /// capacity (`search::capacity`, `accelerators_for`); `None` without a target or where
    /// no rate met the SLOs.
    pub accelerators_for_target_rate: Option<u64>,
    /// Most output tokens/s per accelerator the decoding instances' memory traffic allows at
    /// this run's mean prompt and output lengths (`InstanceModel::decode_roofline`: every
    /// request's whole cache reserved from admission, the cache and the touched weights
    /// read each step at peak bandwidth; no prefill, compute not counted); `None` with
    /// pipeline stages or no completions.
    pub decode_memory_roofline_output_tokens_per_s_per_accelerator: Option<f64>,
    pub result: SimReport,
    /// For a closed loop of clients (`serving.concurrency`): the throughput each user's
    /// speed buys, at 1, 2, 4, … clients up to twice the setup's ([`concurrency_sweep`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub concurrency_sweep: Vec<ConcurrencyPoint>,
}

/// One point of a concurrency sweep: what a closed loop of `clients` gives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConcurrencyPoint {
    pub clients: u32,
    /// Between the 10% and 90% completions (`SimReport::steady_…`): the loop's steady
    /// rate, without the ramp-up and the drain of the last long requests.
    pub output_tokens_per_s_per_accelerator: f64,
    /// The mean decode speed each user sees (1/TPOT per request, averaged).
    pub per_user_output_tokens_per_s: f64,
    pub ttft: Percentiles,
    pub tpot: Percentiles,
}

/// Most requests one point of [`concurrency_sweep`] simulates.
pub const SWEEP_REQUESTS: u64 = 5_000;

/// TensorRT-LLM's default ADP-balance batching wait (`AttentionDpConfig.batching_wait_iters`
/// in `tensorrt_llm/llmapi/llm_args.py`: 10 iterations).
pub const ADP_BALANCE_BATCHING_WAIT_ITERS: u32 = 10;

/// Requests a sweep point with `clients` clients runs: sixteen per client, at least 128
/// (a few clients reach their steady state within a few requests each, and a long run of
/// one client is millions of one-sequence steps), at most [`SWEEP_REQUESTS`], within the
/// `requests` the setup has.
pub fn sweep_requests(clients: u32, requests: u64) -> u64 {
    (16 * clients as u64)
        .clamp(128, SWEEP_REQUESTS)
        .min(requests)
}

/// The throughput–interactivity curve of a closed-loop setup: the setup's requests, the
/// first [`sweep_requests`] of them, sent by 1, 2, 4, … clients up to twice the setup's
/// (at most one per request), each point simulated in parallel. More clients raise the
/// output per accelerator until the batch or the KV cache is full, and lower each user's
/// speed: the curve serving benchmarks plot (throughput per GPU against tokens/s per
/// user). Empty for open arrivals.
pub fn concurrency_sweep(setup: &Setup) -> Vec<ConcurrencyPoint> {
    use rayon::prelude::*;
    let Arrivals::Closed { clients, lengths } = &setup.workload.arrivals else {
        return Vec::new();
    };
    // Past one client per request every point is the same offline run.
    let cap = setup.workload.requests.clamp(1, u32::MAX as u64) as u32;
    let top = clients.saturating_mul(2).clamp(1, cap);
    let levels: Vec<u32> = std::iter::successors(Some(1u32), |c| c.checked_mul(2))
        .take_while(|&c| c < top)
        .chain(std::iter::once(top))
        .collect();
    levels
        .par_iter()
        .map(|&c| {
            // Built field by field: the setup's own lengths can be millions long.
            let requests = sweep_requests(c, setup.workload.requests);
            let w = Workload {
                arrivals: Arrivals::Closed {
                    clients: c,
                    lengths: lengths.iter().take(requests as usize).copied().collect(),
                },
                input: setup.workload.input.clone(),
                output: setup.workload.output.clone(),
                requests,
                prefix_hit: setup.workload.prefix_hit,
                seed: setup.workload.seed,
            };
            let r = simulate(&setup.deployment, &w, &setup.slo);
            ConcurrencyPoint {
                clients: c,
                output_tokens_per_s_per_accelerator: r.steady_output_tokens_per_s_per_accelerator,
                per_user_output_tokens_per_s: r.per_user_output_tokens_per_s,
                ttft: r.ttft,
                tpot: r.tpot,
            }
        })
        .collect()
}

/// Simulates a resolved setup.
pub fn run(setup: &Setup) -> ServeReport {
    let r = simulate(&setup.deployment, &setup.workload, &setup.slo);
    let per_node = setup.accelerators_per_node as f64;
    let per_instance = match &setup.deployment {
        Deployment::Aggregated(x) => x.model.par.gpus() as u64,
        // The fewest instances in the deployment's prefill:decode ratio (4:1 grows by
        // 4 prefill and 1 decode instances, not by one of each).
        Deployment::Disaggregated {
            prefill, decode, ..
        } => {
            let (p, d) = (prefill.instances as u64, decode.instances as u64);
            let g = gcd(p, d).max(1);
            p / g * prefill.model.par.gpus() as u64 + d / g * decode.model.par.gpus() as u64
        }
    };
    let decode = match &setup.deployment {
        Deployment::Aggregated(x) => x,
        Deployment::Disaggregated { decode, .. } => decode.as_ref(),
    };
    let done = r.completed as f64;
    let roofline = (done > 0.0)
        .then(|| {
            let (isl, osl) = (
                r.input_tokens_per_s * r.duration_s / done,
                r.output_tokens_per_s * r.duration_s / done,
            );
            decode
                .model
                .decode_roofline(decode.kv_tokens, decode.max_batch as f64, isl, osl)
        })
        .flatten();
    ServeReport {
        notes: setup.notes.clone(),
        warnings: setup.warnings.clone(),
        framework: setup.framework.id,
        accelerators: r.accelerators,
        accelerators_per_node: setup.accelerators_per_node,
        output_tokens_per_s_per_node: r.output_tokens_per_s_per_accelerator * per_node,
        input_tokens_per_s_per_node: r.input_tokens_per_s_per_accelerator * per_node,
        accelerators_for_target_rate: setup.target_rate.and_then(|t| {
            let c = search::capacity(&setup.deployment, &setup.workload, &setup.slo);
            accelerators_for(t, c.max_rate / c.accelerators.max(1) as f64, per_instance)
        }),
        decode_memory_roofline_output_tokens_per_s_per_accelerator: roofline,
        result: r,
        concurrency_sweep: concurrency_sweep(setup),
    }
}
