//! Deployment search: which roles, parallelism and batch limits give the most goodput per
//! accelerator under the SLOs.
//!
//! Each candidate is one deployment unit (one aggregated instance, or one set of prefill
//! and decode instances). For each, the highest Poisson rate at which at least
//! `ATTAINMENT` of requests meet both SLOs is found by bisection below the offline run's
//! steady rate (short seeded
//! simulations of the workload's own lengths: its distributions', or a trace's or
//! dataset's: 1,000 requests a rate to screen every candidate, then the best
//! [`REFINED_TOP`] again over the workload's requests, up to [`CAPACITY_REQUESTS`], long
//! enough to fill a loaded deployment's batch), and goodput per accelerator = that rate × the output tokens of the run's
//! requests that met both SLOs per request of the run / accelerators of the unit. (Rate × mean output × attainment, as it was, counted the
//! misses' tokens as met: long outputs that missed the TPOT SLO inflated it.) Candidates are evaluated in parallel (rayon); the result is
//! deterministic (sorted by goodput, then by description).

use rayon::prelude::*;
use serde::Serialize;

use crate::model::{InstanceModel, Parallel};
use crate::sim::{simulate_requests, Deployment, RoleSpec, Slo, Workload};

/// Share of requests that must meet the SLOs.
pub const ATTAINMENT: f64 = 0.9;

#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub description: String,
    pub accelerators: u64,
    /// Requests each rate of this candidate simulated: the screening's
    /// [`SEARCH_REQUESTS`], or up to [`CAPACITY_REQUESTS`] for the best ones
    /// (see [`REFINED_TOP`]).
    pub requests: u64,
    pub max_rate: f64,
    pub goodput_tokens_per_s_per_accelerator: f64,
    /// At `max_rate`; `None` when no rate met the SLOs.
    pub ttft_p90_s: Option<f64>,
    pub tpot_p90_s: Option<f64>,
    /// Whether some rate met the SLOs (at least `ATTAINMENT` of requests within both,
    /// none rejected).
    pub feasible: bool,
    /// Where an infeasible candidate fell short, at the rate it came closest (`None` when
    /// feasible).
    pub shortfall: Option<Shortfall>,
    /// The deployment evaluated (`None` only for candidates built by hand); not in the
    /// JSON, which describes it by `description`.
    #[serde(skip)]
    pub deployment: Option<Deployment>,
}

/// How far an infeasible candidate's best run (highest attainment, then lowest rate) was
/// from the SLOs.
#[derive(Debug, Clone, Serialize)]
pub struct Shortfall {
    pub rate: f64,
    /// Share of requests within both SLOs (`ATTAINMENT` needed), of those the model's
    /// maximum context admits.
    pub slo_attainment: f64,
    /// Requests turned away (the KV cache cannot hold them); any makes a rate fail.
    pub rejected: u64,
    pub ttft_p90_s: f64,
    pub tpot_p90_s: f64,
    pub ttft_slo_s: Option<f64>,
    pub tpot_slo_s: Option<f64>,
    /// How much the p90 exceeds the SLO, s; `None` where it is within it (or unset).
    pub ttft_p90_over_s: Option<f64>,
    pub tpot_p90_over_s: Option<f64>,
}

/// Best first: by goodput; infeasible ones by how close they came (attainment, then the
/// largest p90 / SLO ratio, fewest rejections); then by description.
fn rank(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    let att = |c: &Candidate| c.shortfall.as_ref().map_or(1.0, |s| s.slo_attainment);
    let worst = |c: &Candidate| {
        c.shortfall.as_ref().map_or(0.0, |s| {
            let r = |p90: f64, slo: Option<f64>| slo.map_or(0.0, |l| p90 / l.max(1e-12));
            r(s.ttft_p90_s, s.ttft_slo_s).max(r(s.tpot_p90_s, s.tpot_slo_s))
        })
    };
    let rejected = |c: &Candidate| c.shortfall.as_ref().map_or(0, |s| s.rejected);
    b.goodput_tokens_per_s_per_accelerator
        .total_cmp(&a.goodput_tokens_per_s_per_accelerator)
        .then(b.feasible.cmp(&a.feasible))
        .then(att(b).total_cmp(&att(a)))
        .then(worst(a).total_cmp(&worst(b)))
        .then(rejected(a).cmp(&rejected(b)))
        .then(a.description.cmp(&b.description))
}

/// The closest candidate when none of `ranked` (as `search` returns them, best first)
/// met the SLOs; `None` when one did (or there are none).
pub fn no_feasible(ranked: &[Candidate]) -> Option<&Candidate> {
    ranked
        .first()
        .filter(|_| ranked.iter().all(|c| !c.feasible))
}

/// A role of `base`'s model, precisions and framework behaviour, cut by `par`, with
/// `max_batch`, `base`'s token budget per attention rank and micro-batch, and a KV cache of
/// `kv_fraction`; `None` where the weights leave no room.
pub fn with(base: &RoleSpec, par: Parallel, max_batch: u32, kv_fraction: f64) -> Option<RoleSpec> {
    let m = &base.model;
    let im = InstanceModel::new(
        &m.acc,
        &m.levels,
        &m.model,
        par,
        m.prec,
        m.overhead_s,
        m.overlap_comm,
        m.spec,
    )
    .ok()?;
    // The cluster's domain and the framework's MoE choices, applied to this shape (they
    // depend on its attention DP and EP).
    let mut im = im
        .with_placement(m.placement)
        .with_multi_node_nvlink(m.multi_node_nvlink)
        .with_moe_dp_padding(m.framework_pads_fp4_moe)
        .with_moe_gather_comm(m.framework_moe_allgather);
    // The framework's per-instance behaviour, as the base deployment was built with it.
    im.decode_kv_reads = m.decode_kv_reads;
    im.expert_load_cv = m.expert_load_cv;
    im.fp8_decode_attention = m.fp8_decode_attention;
    im.host_per_seq_s = m.host_per_seq_s;
    im.window = m.window;
    im.window_chunked = m.window_chunked;
    im.window_bounds_kv = m.window_bounds_kv;
    im.max_context = m.max_context;
    let kv = im.kv_capacity_tokens(kv_fraction);
    (kv >= 1.0).then_some(RoleSpec {
        model: im,
        instances: 1,
        max_batch,
        // The base's token budget per attention rank and micro-batch, for each of the
        // candidate's ranks and micro-batches (as `max_batch`, a per-rank limit: the
        // instance's budget is split over its ranks, so a shape of more ranks kept the
        // base's whole budget and gave each rank a fraction of it).
        max_tokens: (base.max_tokens / (m.par.pp.max(1) * m.par.attention_dp.max(1)))
            .max(1)
            .saturating_mul(par.pp.max(1))
            .saturating_mul(par.attention_dp.max(1)),
        chunked_prefill: base.chunked_prefill,
        kv_tokens: kv,
        policy: base.policy,
    })
}

fn describe(r: &RoleSpec) -> String {
    let p = r.model.par;
    let pp = if p.pp > 1 {
        format!(" PP{}", p.pp)
    } else {
        String::new()
    };
    format!(
        "{}×(TP{} DP{} EP{}{pp}) mb{}",
        r.instances, p.tp, p.attention_dp, p.ep, r.max_batch
    )
}

/// The capacity of deployment `d` for workload `w`: the highest Poisson rate at which at
/// least `ATTAINMENT` of requests meet both SLOs and none is rejected, found as the search
/// finds each candidate's (`max_rate` 0 and `feasible` false when no rate met them). Sizes
/// `target_rate` (`crate::accelerators_for`).
///
/// Over the workload's requests, up to [`CAPACITY_REQUESTS`] (the search's 1,000 are too
/// short a run to reach the batch of a loaded deployment: the example's four TP2 Llama 3
/// 70B instances meet the SLOs for 99.9% of 1,000 requests at 50 requests/s, and for 10.9%
/// of 20,000).
pub fn capacity(d: &Deployment, w: &Workload, slo: &Slo) -> Candidate {
    evaluate(d, w, slo, String::new(), w.requests.min(CAPACITY_REQUESTS))
}

/// Most requests each rate of [`capacity`] simulates.
pub const CAPACITY_REQUESTS: u64 = 20_000;

/// Requests each rate of a search candidate simulates (at most).
pub const SEARCH_REQUESTS: u64 = 1000;

fn evaluate(d: &Deployment, w: &Workload, slo: &Slo, desc: String, n: u64) -> Candidate {
    // The workload's own lengths (a trace's or dataset's) at each candidate rate.
    let run = |rate: f64| simulate_requests(d, &w.requests_at(Some(rate), n), w.prefix_hit, slo);
    // Rate upper bound: the offline run's steady rate in requests/s (its output tokens/s
    // between the 10% and 90% completions, over its mean output per request): no Poisson
    // rate above what the deployment completes with its batch full can be sustained. (Its
    // completions over the whole run were taken, which count the drain of the last long
    // requests, whose batch empties: the example's four TP2 Llama 3 70B instances
    // complete 1,000 requests offline at 18.7/s, a third of their steady rate, while 30
    // requests/s meet the SLOs; every candidate that met them there was capped at it.)
    let all_at_once = w.requests_at(None, n);
    let off = simulate_requests(d, &all_at_once, w.prefix_hit, slo);
    let whole = off.completed as f64 / off.duration_s;
    let out_per_request = off.output_tokens_per_s * off.duration_s / off.completed.max(1) as f64;
    let steady =
        off.steady_output_tokens_per_s_per_accelerator * off.accelerators as f64 / out_per_request;
    let mut hi = if steady.is_finite() {
        steady.max(whole)
    } else {
        whole
    };
    let mut lo = 0.0;
    let mut best = None;
    // The failing run that came closest: highest attainment, then the lowest rate.
    let mut closest: Option<(f64, crate::sim::SimReport)> = None;
    // The first probe is the upper bound itself; then bisection between the highest rate
    // that met the SLOs and the lowest that did not.
    for probe in 0..8 {
        let mid = if probe == 0 { hi } else { (lo + hi) / 2.0 };
        let r = run(mid.max(1e-6));
        // Requests longer than the maximum context are turned away by every deployment:
        // they miss the SLOs, but do not fail a rate.
        if attainment(&r) >= ATTAINMENT && r.rejected == r.rejected_too_long {
            lo = mid;
            best = Some(r);
            if mid >= hi {
                break;
            }
        } else {
            hi = mid;
            if closest
                .as_ref()
                .is_none_or(|(_, c)| attainment(&r) >= attainment(c))
            {
                closest = Some((mid.max(1e-6), r));
            }
        }
    }
    let accs = d.accelerators();
    match best {
        Some(r) => Candidate {
            description: desc,
            accelerators: accs,
            requests: n,
            max_rate: lo,
            // The rate × the output tokens of the requests that met the SLOs per request
            // of the run, not rate × mean output × attainment: the misses may be the long
            // outputs. (Over the rate, not the run's duration: that adds the last
            // requests' drain, 15% of a 400-request run, to every candidate.)
            goodput_tokens_per_s_per_accelerator: lo
                * (r.goodput_output_tokens_per_s * r.duration_s / r.requests.max(1) as f64)
                / accs as f64,
            ttft_p90_s: Some(r.ttft.p90),
            tpot_p90_s: Some(r.tpot.p90),
            feasible: true,
            shortfall: None,
            deployment: Some(d.clone()),
        },
        None => Candidate {
            description: desc,
            accelerators: accs,
            requests: n,
            max_rate: 0.0,
            goodput_tokens_per_s_per_accelerator: 0.0,
            ttft_p90_s: None,
            tpot_p90_s: None,
            feasible: false,
            shortfall: closest.map(|(rate, r)| {
                let over = |p90: f64, slo: Option<f64>| slo.filter(|&s| p90 > s).map(|s| p90 - s);
                Shortfall {
                    rate,
                    slo_attainment: attainment(&r),
                    rejected: r.rejected,
                    ttft_p90_s: r.ttft.p90,
                    tpot_p90_s: r.tpot.p90,
                    ttft_slo_s: slo.ttft_s,
                    tpot_slo_s: slo.tpot_s,
                    ttft_p90_over_s: over(r.ttft.p90, slo.ttft_s),
                    tpot_p90_over_s: over(r.tpot.p90, slo.tpot_s),
                }
            }),
            deployment: Some(d.clone()),
        },
    }
}

/// Searches deployments around `base` (its model, precisions and framework settings) on
/// a cluster of `accelerators` with scale-up domains of `domain`: instance sizes are powers
/// of two up to the cluster (and the base deployment's own sizes), 1, 2 or 4 pipeline
/// stages, TP within the domain, attention-DP for the rest of a stage, EP 1 or the whole
/// stage for MoE models, and per-rank batch
/// limits of 32-2048. Aggregated candidates are evaluated first; disaggregated ones pair the
/// six best aggregated shapes as prefill and decode roles (1:1, 1:2 and 2:1 instances),
/// where the pair fits in the cluster's `accelerators`.
/// Returns candidates, best first (infeasible ones last, closest to the SLOs first; see
/// [`no_feasible`]).
pub fn search(
    base: &Deployment,
    w: &Workload,
    slo: &Slo,
    domain: u32,
    accelerators: u64,
    kv_fraction: f64,
) -> Vec<Candidate> {
    let role = match base {
        Deployment::Aggregated(r) => r,
        Deployment::Disaggregated { decode, .. } => decode,
    };
    let moe = role.model.model.moe.is_some();
    let limit = accelerators.clamp(1, 1024) as u32;
    let mut sizes: Vec<u32> = (0..11).map(|i| 1u32 << i).filter(|&g| g <= limit).collect();
    match base {
        Deployment::Aggregated(r) => sizes.push(r.model.par.gpus()),
        Deployment::Disaggregated {
            prefill, decode, ..
        } => {
            sizes.push(prefill.model.par.gpus());
            sizes.push(decode.model.par.gpus());
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    let tps: Vec<u32> = (0..11)
        .map(|i| 1u32 << i)
        .filter(|&t| t <= domain.max(1))
        .collect();
    let batches = [32u32, 128, 512, 2048];
    let mut roles: Vec<RoleSpec> = Vec::new();
    for &g in &sizes {
        // Pipeline stages cut the layers (and so the weights and KV per accelerator) over
        // `pp` groups of `g / pp` accelerators.
        for pp in [1u32, 2, 4].into_iter().filter(|&p| g % p == 0) {
            let stage = g / pp;
            for &tp in tps.iter().filter(|&&t| t <= stage && stage % t == 0) {
                let dp = stage / tp;
                // EP 1 and the whole stage: one EP1 when the stage is one accelerator.
                let eps: Vec<u32> = if moe && stage > 1 {
                    vec![1, stage]
                } else {
                    vec![1]
                };
                for ep in eps {
                    for &mb in &batches {
                        let par = Parallel::new(tp, dp, ep).with_pp(pp);
                        if let Some(r) = with(role, par, mb * dp, kv_fraction) {
                            roles.push(r);
                        }
                    }
                }
            }
        }
    }
    let (kv_bps, kv_lat) = match base {
        Deployment::Disaggregated {
            kv_bps,
            kv_latency_s,
            ..
        } => (*kv_bps, *kv_latency_s),
        _ => {
            let l = role.model.levels.get(1).unwrap_or(&role.model.levels[0]);
            (
                l.gbps_per_accelerator * l.efficiency * 1e9,
                l.latency_us * 1e-6,
            )
        }
    };
    let mut cands: Vec<(Deployment, String)> = roles
        .iter()
        .map(|r| {
            (
                Deployment::Aggregated(r.clone()),
                format!("aggregated {}", describe(r)),
            )
        })
        .collect();
    let screen = w.requests.min(SEARCH_REQUESTS);
    let mut out: Vec<Candidate> = cands
        .par_iter()
        .map(|(d, desc)| evaluate(d, w, slo, desc.clone(), screen))
        .collect();
    // The six best aggregated shapes (by goodput) become prefill and decode roles.
    let mut order: Vec<usize> = (0..roles.len()).collect();
    order.sort_by(|&a, &b| rank(&out[a], &out[b]).then(a.cmp(&b)));
    let best: Vec<&RoleSpec> = order.iter().take(6).map(|&i| &roles[i]).collect();
    let aggregated = cands.len();
    for p in &best {
        for d in &best {
            for (np, nd) in [(1, 1), (1, 2), (2, 1)] {
                let mut pr = (*p).clone();
                pr.instances = np;
                let mut de = (*d).clone();
                de.instances = nd;
                // A pair larger than the cluster cannot be deployed on it.
                if (pr.instances * pr.model.par.gpus() + de.instances * de.model.par.gpus()) as u64
                    > accelerators
                {
                    continue;
                }
                let desc = format!("disaggregated P {} / D {}", describe(&pr), describe(&de));
                cands.push((
                    Deployment::Disaggregated {
                        prefill: pr,
                        decode: Box::new(de),
                        kv_bps,
                        kv_latency_s: kv_lat,
                    },
                    desc,
                ));
            }
        }
    }
    let disagg: Vec<Candidate> = cands[aggregated..]
        .par_iter()
        .map(|(d, desc)| evaluate(d, w, slo, desc.clone(), screen))
        .collect();
    out.extend(disagg);
    refine(&cands, &mut out, w, slo);
    out.sort_by(rank);
    out
}

/// Share of the requests a deployment could take that met both SLOs: those longer than
/// the model's maximum context are turned away by every deployment alike, so they do not
/// count against one (with 30% of a workload too long, no deployment reached 90% of all
/// requests and sizing found none).
fn attainment(r: &crate::sim::SimReport) -> f64 {
    let all = (r.completed + r.rejected) as f64;
    let eligible = all - r.rejected_too_long as f64;
    if eligible <= 0.0 {
        0.0
    } else {
        (r.slo_attainment * all / eligible).min(1.0)
    }
}

/// How many of the best candidates are re-run over the workload's requests (up to
/// [`CAPACITY_REQUESTS`]) after the screening runs of [`SEARCH_REQUESTS`].
pub const REFINED_TOP: usize = 10;

/// Re-runs the best candidates over a run long enough to load them, until the
/// [`REFINED_TOP`] best are all refined. A screening run of 1,000 requests lasts 1,000 /
/// rate seconds, shorter than one long request at a loaded rate (the example's Llama 3 70B
/// requests take minutes to decode): its batch never fills, so a rate the deployment
/// cannot sustain passes (four TP2 Llama 3 70B instances meet the SLOs for 99.9% of 1,000
/// requests at 50 requests/s and for 10.9% of 20,000). Refining can move a candidate down,
/// so the ranking is redone until its head is all refined; each candidate is refined at
/// most once.
fn refine(cands: &[(Deployment, String)], out: &mut [Candidate], w: &Workload, slo: &Slo) {
    let full = w.requests.min(CAPACITY_REQUESTS);
    if full <= w.requests.min(SEARCH_REQUESTS) {
        return;
    }
    let mut refined = vec![false; out.len()];
    loop {
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by(|&a, &b| rank(&out[a], &out[b]).then(a.cmp(&b)));
        let todo: Vec<usize> = order
            .into_iter()
            .take(REFINED_TOP)
            .filter(|&i| !refined[i])
            .collect();
        if todo.is_empty() {
            return;
        }
        let again: Vec<Candidate> = todo
            .par_iter()
            .map(|&i| evaluate(&cands[i].0, w, slo, cands[i].1.clone(), full))
            .collect();
        for (i, c) in todo.into_iter().zip(again) {
            out[i] = c;
            refined[i] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Precisions;
    use crate::sim::{Arrivals, LengthDist};
    use myriad_scenario::Precision;

    /// One Llama 3 8B instance on one H100 (bf16), batch limit 64.
    fn llama8b_h100() -> Deployment {
        let cat = myriad_catalog::catalog();
        let text = r#"{"format":"myriad/1","cluster":{"accelerator":"h100-sxm","count":8}}"#;
        let s = myriad_scenario::parse_scenario("t", text, cat).unwrap();
        let levels = myriad_cluster::build(&s, cat).unwrap().levels;
        let im = InstanceModel::new(
            cat.accelerator("h100-sxm").unwrap(),
            &levels,
            &cat.model("llama3-8b").unwrap().model,
            Parallel::new(1, 1, 1),
            Precisions::new(Precision::Bf16, Precision::Bf16, Precision::Bf16),
            0.0,
            false,
            None,
        )
        .unwrap();
        let kv = im.kv_capacity_tokens(0.9);
        Deployment::Aggregated(RoleSpec {
            model: im,
            instances: 1,
            max_batch: 64,
            max_tokens: 8192,
            chunked_prefill: true,
            kv_tokens: kv,
            policy: Default::default(),
        })
    }

    /// Hand-worked: 19 of every 20 requests have one output token (no time per output
    /// token: they meet any TPOT SLO) and one has 1,000, which misses a 1 ns TPOT SLO at any
    /// rate. Attainment is 95% at every rate, and the requests that met the SLOs carry one
    /// token each: goodput is the rate × 0.95 tokens/s. Rate × mean output (50.95) ×
    /// attainment gave 48.4 tokens a request, all but 0.95 of them the misses'.
    #[test]
    fn goodput_counts_only_the_tokens_of_requests_that_met_the_slos() {
        let mut lengths = vec![(0.0, 100u32, 1u32); 19];
        lengths.push((0.0, 100, 1000));
        let w = Workload {
            arrivals: Arrivals::Trace(lengths),
            input: LengthDist::Fixed(100),
            output: LengthDist::Fixed(1),
            requests: 200,
            prefix_hit: 0.0,
            seed: 1,
        };
        let slo = Slo {
            ttft_s: None,
            tpot_s: Some(1e-9),
        };
        let c = evaluate(
            &llama8b_h100(),
            &w,
            &slo,
            "t".into(),
            w.requests.min(SEARCH_REQUESTS),
        );
        assert!(c.max_rate > 0.0, "{c:?}");
        let per_req = c.goodput_tokens_per_s_per_accelerator * c.accelerators as f64 / c.max_rate;
        assert!(
            per_req > 0.0 && per_req < 1.2,
            "{per_req} tokens a request: {c:?}"
        );
    }

    /// A TTFT SLO of 1 ns no run can meet: the candidate is infeasible, says so, and its
    /// shortfall names the TTFT SLO and how far its p90 was over it (every request missed:
    /// 0% attainment); the TPOT SLO, unset, is not missed.
    #[test]
    fn an_infeasible_candidate_says_which_slo_it_missed_and_by_how_much() {
        let w = Workload {
            arrivals: Arrivals::Poisson(1.0),
            input: LengthDist::Fixed(100),
            output: LengthDist::Fixed(10),
            requests: 50,
            prefix_hit: 0.0,
            seed: 1,
        };
        let slo = Slo {
            ttft_s: Some(1e-9),
            tpot_s: None,
        };
        let c = evaluate(
            &llama8b_h100(),
            &w,
            &slo,
            "t".into(),
            w.requests.min(SEARCH_REQUESTS),
        );
        assert!(!c.feasible && c.max_rate == 0.0, "{c:?}");
        let s = c.shortfall.as_ref().unwrap();
        assert_eq!(s.slo_attainment, 0.0);
        assert_eq!(s.ttft_slo_s, Some(1e-9));
        assert!((s.ttft_p90_over_s.unwrap() - (s.ttft_p90_s - 1e-9)).abs() < 1e-15);
        assert!(s.ttft_p90_s > 1e-3 && s.tpot_p90_over_s.is_none(), "{s:?}");
        let ranked = vec![c.clone()];
        assert_eq!(no_feasible(&ranked).unwrap().description, "t");
        let ok = Candidate {
            feasible: true,
            shortfall: None,
            ..c
        };
        assert!(no_feasible(&[ok]).is_none());
    }

    /// Infeasible candidates rank by how close they came: at equal attainment (0%), the
    /// one whose p90 TTFT is 2× its SLO before the one 80× over (by description, "a"
    /// came first); a feasible one before both.
    #[test]
    fn infeasible_candidates_rank_closest_first() {
        let miss = |d: &str, ttft: f64| Candidate {
            description: d.into(),
            accelerators: 1,
            requests: 1000,
            deployment: None,
            max_rate: 0.0,
            goodput_tokens_per_s_per_accelerator: 0.0,
            ttft_p90_s: None,
            tpot_p90_s: None,
            feasible: false,
            shortfall: Some(Shortfall {
                rate: 1.0,
                slo_attainment: 0.0,
                rejected: 0,
                ttft_p90_s: ttft,
                tpot_p90_s: 0.01,
                ttft_slo_s: Some(0.001),
                tpot_slo_s: None,
                ttft_p90_over_s: Some(ttft - 0.001),
                tpot_p90_over_s: None,
            }),
        };
        let mut v = vec![miss("a", 0.08), miss("b", 0.002)];
        v.sort_by(rank);
        assert_eq!(v[0].description, "b");
        assert_eq!(no_feasible(&v).unwrap().description, "b");
        v.push(Candidate {
            feasible: true,
            shortfall: None,
            ..miss("c", 0.0)
        });
        v.sort_by(rank);
        assert_eq!(v[0].description, "c");
        assert!(no_feasible(&v).is_none());
    }
}
