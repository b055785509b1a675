//! The cluster planner: for a model and a token budget, which accelerator, scale-up system,
//! fabric and count to build.
//!
//! Each candidate (accelerator × count) is built as a cluster from the scenario (its own
//! scale-up system and fabric unless the scenario names them), searched for its best
//! parallel plan over a reduced space (every TP/CP/PP/VPP/EP/DP, micro-batch 1-2, all
//! recompute modes, ZeRO-1 and ZeRO-3, default placement), and costed: time to train
//! `training.tokens`, capital cost, energy and power. The cluster is built in whole scale-up
//! domains (every site alike); the job runs the requested count in it, or, when no parallel
//! plan divides that count, the largest subset of the built cluster that one divides (the
//! built count, then it rounded down to multiples of 2, 4, 8, ...), noted; idle accelerators
//! stay in the cost, the power and the GPU-hours (what is built is held, powered and paid
//! for over the whole run: `gpu_hours` counts `cluster_accelerators`, as `energy_mwh` counts
//! the whole facility). The Pareto front is over time to train
//! and capital cost; the chosen design is the cheapest that meets every constraint
//! (deadline, budget, power), or the fastest when there is no deadline.

use myriad_catalog::Catalog;
use myriad_cluster::ClusterReport;
use myriad_model::Recompute;
use myriad_scenario::{Scenario, DEFAULT_PLACEMENT};
use rayon::prelude::*;
use serde::Serialize;

use crate::{search, Fixed, Ranked, Space};

pub const DEFAULT_ACCELERATORS: [&str; 5] = ["h100-sxm", "h200", "b200", "gb200", "mi300x"];
pub const DEFAULT_COUNTS: [u64; 6] = [1024, 2048, 4096, 8192, 16384, 32768];

#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub accelerator: String,
    pub scale_up: String,
    pub fabric: String,
    /// Accelerators the job uses: the requested count, or, when no parallel plan divides
    /// it, the largest subset of the built cluster that one does (see `notes`).
    pub accelerators: u64,
    /// Accelerators in the built cluster (whole scale-up domains).
    pub cluster_accelerators: u64,
    /// The best plan and its estimate; `None` when no plan fits.
    pub best: Option<Ranked>,
    pub days: Option<f64>,
    /// Accelerator-hours of the built cluster over the run: `cluster_accelerators` × hours,
    /// the idle ones included, as the capital cost and the energy include them.
    pub gpu_hours: Option<f64>,
    pub capex_usd: f64,
    pub facility_power_mw: f64,
    pub energy_mwh: Option<f64>,
    pub energy_cost_usd: Option<f64>,
    pub racks: u64,
    pub switches: u64,
    pub pareto: bool,
    /// Why the candidate does not qualify (deadline, budget, power, no plan fits).
    pub violations: Vec<String>,
    /// What the planner changed in the scenario's cluster for this candidate (e.g. the
    /// island resized to whole scale-up domains of the candidate's system), with the field.
    pub notes: Vec<String>,
    pub plans_evaluated: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanResult {
    pub tokens: f64,
    pub candidates: Vec<Candidate>,
    /// Index into `candidates` of the chosen design.
    pub chosen: Option<usize>,
    pub chosen_report: Option<ClusterReport>,
    /// Candidates skipped because the cluster could not be built, with the reason.
    pub skipped: Vec<String>,
}

/// The scenario's island (`cluster.scale_out.island`, accelerators per full-bisection
/// island) for a candidate built of `count` accelerators in scale-up domains of `dom`: about
/// the same number of accelerators, rounded to the nearest whole number of the candidate's
/// domains (at least one), and the whole cluster when that is not smaller than it (one
/// full-bisection network, not oversubscribed leaves). Each change is noted.
fn candidate_island(
    island: u64,
    dom: u64,
    system: &str,
    count: u64,
    notes: &mut Vec<String>,
) -> u64 {
    if island >= count {
        if island != count {
            notes.push(format!(
                "cluster.scale_out.island: {island} is more than the cluster's {count} accelerators; one full-bisection island of {count}"
            ));
        }
        return count;
    }
    let domains = (island / dom + u64::from(island % dom >= dom.div_ceil(2))).max(1);
    let rounded = domains.saturating_mul(dom).min(count);
    if rounded != island {
        notes.push(format!(
            "cluster.scale_out.island: {island} is not a whole number of `{system}` domains of {dom}; islands of {rounded} ({} domains){}",
            rounded / dom,
            if rounded == count { ", the whole cluster" } else { "" }
        ));
    }
    rounded
}

/// `value` and the `limit` it exceeds, with the same decimals, at least `decimals` and as
/// many more as it takes for them to read differently (a capex of 10.92 M against a budget of
/// 10.9 M read "capex 11 M USD > budget 11 M"; 0.533 MW against 0.53 read "0.5 MW > limit
/// 0.53 MW").
fn exceeding(value: f64, limit: f64, decimals: usize) -> (String, String) {
    let mut d = decimals;
    while d < 12 && format!("{value:.d$}") == format!("{limit:.d$}") {
        d += 1;
    }
    (format!("{value:.d$}"), format!("{limit:.d$}"))
}

/// Runs the planner. Errors are messages naming the scenario field.
pub fn plan(s: &Scenario, cat: &Catalog) -> Result<PlanResult, String> {
    let model_spec = s
        .model
        .as_ref()
        .ok_or("model: missing; `myriad plan` needs a model block")?;
    let model = model_spec
        .resolve(cat)
        .map_err(|(p, m)| format!("model.{p}: {m}"))?;
    let spec = s.training.clone().unwrap_or_default();
    // The settings every candidate's search takes as given, checked as `train` checks them.
    myriad_train::plan::check_moe_graph(&spec).map_err(|e| e.to_string())?;
    myriad_train::plan::check_precision_settings(
        &spec,
        spec.precision.unwrap_or(myriad_scenario::Precision::Bf16),
    )
    .map_err(|e| e.to_string())?;
    let tokens = spec
        .tokens
        .ok_or("training.tokens: missing; `myriad plan` needs the token budget")?;
    // A global batch the scenario gives holds for every candidate; the default (one
    // sequence per accelerator) is checked per candidate.
    if let Some(gb) = spec.global_batch {
        myriad_train::plan::check_token_budget(tokens, gb, model.seq_len, None)
            .map_err(|e| e.to_string())?;
    }
    let planning = s.planning.clone().unwrap_or_default();
    let accs: Vec<String> = if planning.accelerators.is_empty() {
        DEFAULT_ACCELERATORS.iter().map(|a| a.to_string()).collect()
    } else {
        planning.accelerators.clone()
    };
    let counts: Vec<u64> = if planning.counts.is_empty() {
        DEFAULT_COUNTS.to_vec()
    } else {
        planning.counts.clone()
    };
    // A candidate given twice was planned, listed and put on the front twice.
    for (i, c) in counts.iter().enumerate() {
        if let Some(j) = counts[..i].iter().position(|x| x == c) {
            return Err(format!(
                "planning.counts[{i}]: {c} is given twice (also [{j}]); give each count once"
            ));
        }
    }
    let mut jobs = Vec::new();
    let mut skipped = Vec::new();
    let mut seen: Vec<(usize, String)> = Vec::new();
    for (ai, a) in accs.iter().enumerate() {
        let acc = cat.accelerator(a).map_err(|e| e.message())?;
        if let Some((j, _)) = seen.iter().find(|(_, id)| *id == acc.id) {
            return Err(format!(
                "planning.accelerators[{ai}]: `{a}` is given twice (also [{j}]); give each accelerator once"
            ));
        }
        seen.push((ai, acc.id.clone()));
        // Checked against each candidate accelerator's SMs, as `train` would check them.
        myriad_train::plan::check_tp_comm_overlap_sms(
            &spec,
            acc,
            spec.tp_comm_overlap.unwrap_or(true),
        )
        .map_err(|e| match spec.tp_comm_overlap {
            // The SMs given with the overlap off: no accelerator's doing.
            Some(false) => e.to_string(),
            _ => format!("{e} (candidate accelerator `{}`)", acc.id),
        })?;
        let same_acc = s.cluster.accelerator == acc.id;
        // The system the candidate is built with: the scenario's for its own accelerator,
        // the catalog's default for another.
        let named = if same_acc {
            s.cluster.scale_up.as_deref()
        } else {
            None
        };
        let su = match cat.scale_up_for(&acc.id, named) {
            Ok(su) => su,
            Err(m) => {
                skipped.push(format!("{a}: {m}"));
                continue;
            }
        };
        for (i, &c) in counts.iter().enumerate() {
            let dom = su.accelerators_per_domain as u64;
            // Every site holds the same whole number of domains, so the cluster is built in
            // whole multiples of `dom × sites`.
            let sites = u64::from(s.cluster.sites.max(1));
            // Past the largest cluster (or past u64): skipped, naming the field the count
            // came from (the build named `cluster.count`, and the overflow u64::MAX as the
            // accelerators supported).
            let most = myriad_scenario::MAX_ACCELERATORS;
            let Some(count) = dom
                .checked_mul(sites)
                .and_then(|unit| c.checked_next_multiple_of(unit))
                .filter(|n| *n <= most)
            else {
                let per = if sites > 1 {
                    format!(" in each of {sites} sites")
                } else {
                    String::new()
                };
                skipped.push(format!(
                    "{c} x {}: planning.counts[{i}]: {c}{} is more than the {most} accelerators supported",
                    acc.id,
                    if c > most {
                        String::new()
                    } else {
                        format!(" rounded up to whole scale-up domains of {dom}{per}")
                    }
                ));
                continue;
            };
            let mut sc = s.clone();
            sc.cluster.accelerator = acc.id.clone();
            sc.cluster.count = count;
            if !same_acc {
                sc.cluster.scale_up = None;
                sc.cluster.scale_out.fabric = None;
            }
            let mut notes = Vec::new();
            // Rounded past whole domains to fill every site alike: noted (rounding to whole
            // domains alone shows as `cluster_accelerators`).
            if sites > 1 && count != c.next_multiple_of(dom) {
                notes.push(format!(
                    "cluster.sites: {c} accelerators in whole `{}` domains of {dom} over {sites} sites is {count} ({} domains per site)",
                    su.id,
                    count / sites / dom
                ));
            }
            sc.cluster.scale_out.island = sc
                .cluster
                .scale_out
                .island
                .map(|i| candidate_island(i, dom, &su.id, count, &mut notes));
            if let Some(t) = sc.training.as_mut() {
                t.accelerators = None;
            }
            jobs.push((sc, c, notes));
        }
    }
    let tokens_per_step = |gb: u64| gb as f64 * model.seq_len as f64;
    let results: Vec<Result<(Candidate, ClusterReport), String>> = jobs
        .par_iter()
        .map(|(sc, job, notes)| {
            // The cluster is built in whole scale-up domains; the job uses the requested
            // count inside it (e.g. 2,048 GPUs of 29 NVL72 racks).
            let cluster = myriad_cluster::build(sc, cat)
                .map_err(|e| format!("{} x {}: {e}", sc.cluster.count, sc.cluster.accelerator))?;
            let report = myriad_cluster::report(&cluster, sc);
            let mut space = Space::full(&model);
            space.micro_batch = vec![1, 2];
            space.zero_stage = vec![1, 3];
            space.placements = vec![DEFAULT_PLACEMENT];
            space.recompute = vec![Recompute::None, Recompute::Selective, Recompute::Full];
            let run = |n: u64| {
                let fixed = Fixed::from_spec(&spec, n);
                let r = search(&model, &cluster, &fixed, &space, 1, &|_, _| {});
                (fixed, r)
            };
            let (mut fixed, mut r) = run(*job);
            let mut notes = notes.clone();
            let requested = *job;
            let mut job = requested;
            // A count no parallel plan divides (1,031 accelerators and a global batch of 512)
            // runs, as a real job would, on the largest subset of the built cluster that one
            // does: the cluster, then it rounded down to multiples of 2, 4, 8, ... (the idle
            // accelerators stay in the capital cost and the power).
            if r.evaluated == 0
                && myriad_train::plan::check_precision_supported(
                    &cluster.accelerator,
                    fixed.precision,
                )
                .is_ok()
            {
                let built = sc.cluster.count;
                let tries = (0..u64::BITS)
                    .map(|k| built >> k << k)
                    .take_while(|&n| n > 0)
                    .filter(|&n| n != requested);
                let mut last = 0;
                for n in tries {
                    if n == last {
                        continue;
                    }
                    last = n;
                    let (f, rn) = run(n);
                    if rn.evaluated > 0 {
                        notes.push(format!(
                            "no parallel plan divides {requested} accelerators and global batch {}; the job runs on {n} of the {built} built",
                            fixed.global_batches[0]
                        ));
                        (fixed, r, job) = (f, rn, n);
                        break;
                    }
                }
            }
            let best = r.top.into_iter().next();
            // The default global batch (one sequence per accelerator) may hold more than the
            // token budget: the best plan, but no time to train, and the candidate says why.
            let over_budget = best.as_ref().and_then(|b| {
                myriad_train::plan::check_token_budget(
                    tokens,
                    b.plan.global_batch,
                    model.seq_len,
                    Some("one sequence per accelerator"),
                )
                .err()
            });
            let (days, gpu_hours, energy_mwh, energy_cost) = match &best {
                Some(b) if over_budget.is_none() => {
                    let steps = (tokens / tokens_per_step(b.plan.global_batch)).ceil();
                    let secs = steps * b.estimate.step_time_s;
                    // The whole built cluster, idle accelerators included: the facility's
                    // energy and every accelerator's hours, held for the run.
                    let mwh = report.facility_power_mw * secs / 3600.0;
                    (
                        Some(secs / 86400.0),
                        Some(secs / 3600.0 * sc.cluster.count as f64),
                        Some(mwh),
                        Some(mwh * 1000.0 * sc.cluster.datacenter.usd_per_kwh),
                    )
                }
                _ => (None, None, None, None),
            };
            let mut violations = Vec::new();
            match days {
                None if over_budget.is_some() => {
                    violations.extend(over_budget.map(|e| e.to_string()))
                }
                // The accelerator cannot train in the precision at all (every plan rejected
                // for it): said as `train` says it, not as plans that do not divide.
                None if r.evaluated == 0 => violations.push(
                    match myriad_train::plan::check_precision_supported(
                        &cluster.accelerator,
                        fixed.precision,
                    )
                    .and_then(|()| {
                        myriad_train::plan::check_offload_supported(&spec, &cluster.scale_up)
                    }) {
                        Err(e) => e.to_string(),
                        Ok(()) => format!(
                            "no parallel plan divides {job} accelerators and global batch {}",
                            fixed.global_batches[0]
                        ),
                    },
                ),
                None => violations.push("no parallel plan fits in memory".to_string()),
                Some(d) => {
                    if let Some(dl) = planning.deadline_days {
                        if d > dl {
                            let (d, dl) = exceeding(d, dl, 1);
                            violations.push(format!("{d} days > deadline {dl}"));
                        }
                    }
                }
            }
            if let Some(b) = planning.budget_usd {
                if report.capex_usd > b {
                    let (c, b) = exceeding(report.capex_usd / 1e6, b / 1e6, 0);
                    violations.push(format!("capex {c} M USD > budget {b} M"));
                }
            }
            if let Some(mw) = planning.max_mw {
                if report.facility_power_mw > mw {
                    let (p, mw) = exceeding(report.facility_power_mw, mw, 1);
                    violations.push(format!("{p} MW > limit {mw} MW"));
                }
            }
            let candidate = Candidate {
                accelerator: cluster.accelerator.id.clone(),
                scale_up: cluster.scale_up.id.clone(),
                fabric: cluster.fabric.id.clone(),
                accelerators: job,
                cluster_accelerators: sc.cluster.count,
                best,
                days,
                gpu_hours,
                capex_usd: report.capex_usd,
                facility_power_mw: report.facility_power_mw,
                energy_mwh,
                energy_cost_usd: energy_cost,
                racks: report.racks,
                switches: report.switches_total,
                pareto: false,
                violations,
                notes,
                plans_evaluated: r.evaluated,
            };
            Ok((candidate, report))
        })
        .collect();
    let mut candidates = Vec::new();
    let mut reports = Vec::new();
    for r in results {
        match r {
            Ok((c, rep)) => {
                candidates.push(c);
                reports.push(rep);
            }
            Err(e) => skipped.push(e),
        }
    }
    // Pareto front over (days, capex) among candidates with a plan.
    for i in 0..candidates.len() {
        let Some(di) = candidates[i].days else {
            continue;
        };
        let ci = candidates[i].capex_usd;
        let dominated = candidates.iter().enumerate().any(|(j, o)| {
            j != i
                && o.days.is_some_and(|dj| {
                    dj <= di && o.capex_usd <= ci && (dj < di || o.capex_usd < ci)
                })
        });
        candidates[i].pareto = !dominated;
    }
    let ok = |c: &Candidate| c.violations.is_empty();
    let days = |c: &Candidate| c.days.unwrap_or(f64::INFINITY);
    let chosen = if planning.deadline_days.is_some() {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| ok(c))
            // Equal capital cost (e.g. two counts built as the same whole scale-up domains):
            // the faster, so that the choice is never dominated on the front.
            .min_by(|a, b| {
                a.1.capex_usd
                    .total_cmp(&b.1.capex_usd)
                    .then(days(a.1).total_cmp(&days(b.1)))
                    .then(a.0.cmp(&b.0))
            })
            .map(|(i, _)| i)
    } else {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| ok(c))
            .min_by(|a, b| {
                days(a.1)
                    .total_cmp(&days(b.1))
                    .then(a.1.capex_usd.total_cmp(&b.1.capex_usd))
                    .then(a.0.cmp(&b.0))
            })
            .map(|(i, _)| i)
    };
    // Each candidate's report was made with its build; keep the chosen one's.
    let chosen_report = chosen.map(|i| reports.swap_remove(i));
    Ok(PlanResult {
        tokens,
        candidates,
        chosen,
        chosen_report,
        skipped,
    })
}
