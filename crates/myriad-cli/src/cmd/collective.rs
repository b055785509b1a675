//! `myriad collective`: one collective (or a size sweep, like nccl-tests) on a parallel group
//! of the scenario's cluster, timed by the analytical collective model or (`--backend
//! flow`) simulated flow by flow on the routed topology (`myriad-netsim`).
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_collective::{time, Algorithm, GroupSpan, Op};
use myriad_scenario::Dim;

fn parse_op(s: &str) -> Result<Op, String> {
    Ok(match s {
        "all-reduce" | "allreduce" => Op::AllReduce,
        "all-gather" | "allgather" => Op::AllGather,
        "reduce-scatter" | "reducescatter" => Op::ReduceScatter,
        "all-to-all" | "alltoall" => Op::AllToAll,
        "broadcast" => Op::Broadcast,
        "send-recv" | "sendrecv" => Op::SendRecv,
        _ => {
            return Err(format!(
                "--op: `{s}` is not one of all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, send-recv"
            ))
        }
    })
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    Ok(match s {
        "auto" => Algorithm::Auto,
        "ring" => Algorithm::Ring,
        "tree" => Algorithm::Tree,
        "nvls" => Algorithm::Nvls,
        "hierarchical" => Algorithm::Hierarchical,
        "direct" => Algorithm::Direct,
        _ => {
            return Err(format!(
                "--algorithm: `{s}` is not one of ring, tree, nvls, hierarchical, direct, auto"
            ))
        }
    })
}

/// `8`, `8B`, `64KiB`, `1MiB`, `16GiB`, `1e9`.
pub(crate) fn parse_bytes(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = [
        ("GiB", 1024f64.powi(3)),
        ("MiB", 1024f64.powi(2)),
        ("KiB", 1024.0),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
        ("B", 1.0),
    ]
    .iter()
    .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n, *m)))
    .unwrap_or((t, 1.0));
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v * mult)
        .ok_or_else(|| format!("`{s}` is not a size (8B, 64KiB, 1MiB, 16GiB)"))
}

/// The group's span on the hierarchy: a parallel dimension of the scenario's plan, `all`,
/// or explicit ranks (`0-7`, `0,8,16,24`).
/// With the group's ranks (accelerator ids): the group holding rank 0 for a plan
/// dimension, as `Plan::group` lays it out.
fn group_span(
    group: &str,
    cluster: &myriad_cluster::BuiltCluster,
    plan: Option<&myriad_train::Plan>,
) -> Result<(GroupSpan, Vec<u32>), String> {
    let levels = &cluster.levels;
    let dim = match group {
        "tp" => Some(Dim::Tp),
        "dp" => Some(Dim::Dp),
        "ep" => Some(Dim::Ep),
        "pp" => Some(Dim::Pp),
        "cp" => Some(Dim::Cp),
        _ => None,
    };
    if let Some(d) = dim {
        let plan =
            plan.ok_or_else(|| format!("--group {group}: the scenario has no training plan"))?;
        let (n, stride) = match d {
            Dim::Dp => (
                plan.dp as u64,
                plan.stride(Dim::Ep).min(plan.stride(Dim::Dp)),
            ),
            Dim::Tp => (plan.tp as u64, plan.stride(d)),
            Dim::Cp => (plan.cp as u64, plan.stride(d)),
            Dim::Ep => (plan.ep as u64, plan.stride(d)),
            Dim::Pp => (plan.pp as u64, plan.stride(d)),
        };
        return Ok((plan.group(levels, d), myriad_netsim::strided(0, n, stride)));
    }
    if group == "all" {
        return Ok((
            myriad_train::Plan::span(levels, cluster.accelerators, 1),
            myriad_netsim::strided(0, cluster.accelerators, 1),
        ));
    }
    // Explicit ranks.
    let mut ranks = Vec::new();
    for part in group.split(',') {
        let bad = || {
            format!(
                "--group: `{group}` is not tp, dp, ep, pp, cp, all, or ranks like 0-7 or 0,8,16"
            )
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if b < a {
                    return Err(bad());
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    ranks.sort_unstable();
    ranks.dedup();
    if let Some(r) = ranks.iter().find(|r| **r >= cluster.accelerators) {
        return Err(format!(
            "--group: rank {r} is outside the cluster's {} accelerators",
            cluster.accelerators
        ));
    }
    // spans[i]: distinct level-(i-1) units per level-i unit (the largest over units).
    let mut spans = Vec::with_capacity(levels.len());
    let mut below = 1u64;
    for l in levels.iter() {
        let mut per: std::collections::BTreeMap<u64, std::collections::BTreeSet<u64>> =
            Default::default();
        for r in &ranks {
            per.entry(r / l.size).or_default().insert(r / below);
        }
        spans.push(per.values().map(|s| s.len() as u64).max().unwrap_or(1));
        below = l.size;
    }
    Ok((
        GroupSpan { spans },
        ranks.iter().map(|&r| r as u32).collect(),
    ))
}

pub struct Args<'a> {
    pub op: &'a str,
    pub bytes: Option<&'a str>,
    pub sweep: Option<&'a str>,
    pub group: &'a str,
    pub algorithm: &'a str,
    pub backend: &'a str,
    pub trace: Option<&'a Path>,
    pub json: bool,
}

pub fn run(path: &Path, a: Args) -> Result<(), String> {
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    let cat = myriad_catalog::catalog();
    let cluster = myriad_cluster::build(&s, cat).map_err(|e| format!("{file}: {e}"))?;
    let plan = match (&s.model, &s.training) {
        (Some(m), Some(t)) => {
            let model = m
                .resolve(cat)
                .map_err(|(p, e)| format!("{file}: model.{p}: {e}"))?;
            let n = t.accelerators.unwrap_or(s.cluster.count);
            Some(
                myriad_train::resolve(t, &model, &cluster, n)
                    .map_err(|e| format!("{file}: {e}"))?
                    .0,
            )
        }
        _ => None,
    };
    let op = parse_op(a.op)?;
    let algo = parse_algorithm(a.algorithm)?;
    let (span, ranks) = group_span(a.group, &cluster, plan.as_ref())?;
    let flow = match a.backend {
        "analytical" => false,
        "flow" => true,
        b => return Err(format!("--backend: `{b}` is not analytical or flow")),
    };
    if a.trace.is_some() && !flow {
        return Err("--trace needs --backend flow".into());
    }
    let sizes: Vec<f64> = match (a.sweep, a.bytes) {
        (Some(sw), _) => {
            let (lo, hi) = sw
                .split_once("..")
                .ok_or_else(|| format!("--sweep: `{sw}` is not a range like 8B..16GiB"))?;
            let (lo, hi) = (parse_bytes(lo)?.max(1.0), parse_bytes(hi)?);
            let mut v = Vec::new();
            let mut x = lo;
            while x <= hi {
                v.push(x);
                x *= 2.0;
            }
            v
        }
        (None, Some(b)) => vec![parse_bytes(b)?],
        (None, None) => return Err("give --bytes SIZE or --sweep FROM..TO".into()),
    };
    if flow {
        return run_flow(
            &file,
            &s,
            &cluster,
            FlowRequest {
                op,
                op_name: a.op,
                group: a.group,
                algorithm: algo,
                span: &span,
                ranks: &ranks,
                sizes: &sizes,
                trace: a.trace,
                json: a.json,
            },
        );
    }
    let mut points = Vec::with_capacity(sizes.len());
    for b in &sizes {
        let t = time(op, algo, *b, &span, &cluster.levels).map_err(|e| format!("{file}: {e}"))?;
        points.push((*b, t));
    }
    if a.json {
        let pts: Vec<_> = points
            .iter()
            .map(|(b, t)| serde_json::json!({
                "bytes": b, "time_s": t.time_s, "algbw_gbps": t.algbw_gbps, "busbw_gbps": t.busbw_gbps,
                "algorithm": t.algorithm, "protocol": format!("{:?}", t.protocol),
            }))
            .collect();
        let out = if pts.len() == 1 {
            let mut o = pts[0].clone();
            o["group_size"] = serde_json::json!(span.size());
            o["spans"] = serde_json::json!(span.spans);
            o
        } else {
            serde_json::json!({"group_size": span.size(), "spans": span.spans, "points": pts})
        };
        super::print_json(&out)?;
        return Ok(());
    }
    println!(
        "{} on a group of {} ({}; ranks per level {:?} over {})",
        a.op,
        span.size(),
        a.group,
        span.spans,
        cluster
            .levels
            .iter()
            .map(|l| format!("{} {}", l.name, l.size))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rows: Vec<CurveRow> = points
        .iter()
        .map(|(b, c)| CurveRow {
            bytes: *b,
            time_s: c.time_s,
            algbw_gbps: c.algbw_gbps,
            busbw_gbps: c.busbw_gbps,
            algorithm: format!("{:?}", c.algorithm),
            protocol: format!("{:?}", c.protocol),
        })
        .collect();
    print_curve(&rows);
    Ok(())
}

/// One size of a collective curve, as both backends print it.
struct CurveRow {
    bytes: f64,
    time_s: f64,
    algbw_gbps: f64,
    busbw_gbps: f64,
    algorithm: String,
    protocol: String,
}

/// The nccl-tests-style table of a size sweep.
fn print_curve(rows: &[CurveRow]) {
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let mut t = Table::new();
    t.set_header(vec![
        "size (B)",
        "time (us)",
        "algbw (GB/s)",
        "busbw (GB/s)",
        "algorithm",
        "protocol",
    ]);
    for r in rows {
        t.add_row(vec![
            right(format!("{:.0}", r.bytes)),
            right(format!("{:.2}", r.time_s * 1e6)),
            right(format!("{:.2}", r.algbw_gbps)),
            right(format!("{:.2}", r.busbw_gbps)),
            Cell::new(&r.algorithm),
            Cell::new(&r.protocol),
        ]);
    }
    println!("{t}");
}

struct FlowRequest<'a> {
    op: Op,
    op_name: &'a str,
    group: &'a str,
    algorithm: Algorithm,
    span: &'a GroupSpan,
    ranks: &'a [u32],
    sizes: &'a [f64],
    trace: Option<&'a Path>,
    json: bool,
}

/// The scenario's `cluster.faults`, for the flow backend.
pub(crate) fn faults(s: &myriad_scenario::Scenario) -> Vec<myriad_netsim::Fault> {
    use myriad_netsim::{Fault, FaultTarget};
    s.cluster
        .faults
        .iter()
        .filter_map(|f| {
            let target = match (f.link, f.switch, f.nic, f.domain) {
                (Some(l), ..) => FaultTarget::Link(l),
                (_, Some(x), ..) => FaultTarget::Switch(x),
                (_, _, Some(n), _) => FaultTarget::Nic(n),
                (.., Some(d)) => FaultTarget::Domain(d),
                _ => return None, // rejected by the scenario check
            };
            Some(Fault {
                at_s: f.at_s,
                target,
            })
        })
        .collect()
}

/// `--backend flow`: every size simulated by `myriad-netsim`; the most loaded links and the
/// trace are those of the largest size.
fn run_flow(
    file: &str,
    s: &myriad_scenario::Scenario,
    cluster: &myriad_cluster::BuiltCluster,
    r: FlowRequest,
) -> Result<(), String> {
    use myriad_netsim::{flow_choice, time_collective, top_links, Network, SimOptions};
    let net = Network::from_cluster(cluster);
    let faults = faults(s);
    let mut points = Vec::with_capacity(r.sizes.len());
    let mut last = None;
    for (i, &b) in r.sizes.iter().enumerate() {
        let choice = flow_choice(r.op, r.algorithm, b, r.span, &cluster.levels);
        let opts = SimOptions {
            faults: faults.clone(),
            trace: r.trace.is_some() && i + 1 == r.sizes.len(),
            ..Default::default()
        };
        let (t, prog) = time_collective(&net, r.op, choice, b, r.ranks, &opts)
            .map_err(|e| format!("{file}: {e}"))?;
        if i + 1 == r.sizes.len() {
            last = Some((t.sim.clone(), prog));
        }
        points.push((b, t));
    }
    let (sim, prog) = last.ok_or("no sizes to simulate")?;
    let links = top_links(&net, Some(&cluster.topology), &sim, 5);
    if let Some(path) = r.trace {
        let text = myriad_netsim::chrome_trace(&sim, std::slice::from_ref(&prog));
        std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    }
    let n = r.ranks.len();
    if r.json {
        let pts: Vec<_> = points
            .iter()
            .map(|(b, t)| {
                serde_json::json!({
                    "bytes": b, "time_s": t.time_s, "algbw_gbps": t.algbw_gbps,
                    "busbw_gbps": t.busbw_gbps, "algorithm": t.algorithm,
                    "variant": t.variant, "protocol": format!("{:?}", t.protocol),
                    "flows_simulated": t.sim.flows_simulated, "flows": t.sim.flows_total,
                    "steps_advanced_in_steady_state": t.sim.steps_skipped,
                    "reroutes": t.sim.reroutes,
                })
            })
            .collect();
        let mut out = if pts.len() == 1 {
            let mut o = pts[0].clone();
            o["group_size"] = serde_json::json!(n);
            o["spans"] = serde_json::json!(r.span.spans);
            o
        } else {
            serde_json::json!({"group_size": n, "spans": r.span.spans, "points": pts})
        };
        out["backend"] = serde_json::json!("flow");
        out["links"] = serde_json::json!(links);
        out["faults"] = serde_json::json!(faults);
        super::print_json(&out)?;
        return Ok(());
    }
    println!(
        "{} on a group of {} ({}; ranks per level {:?} over {}), flow-level simulation{}",
        r.op_name,
        n,
        r.group,
        r.span.spans,
        cluster
            .levels
            .iter()
            .map(|l| format!("{} {}", l.name, l.size))
            .collect::<Vec<_>>()
            .join(", "),
        if faults.is_empty() {
            String::new()
        } else {
            format!(" with {} fault(s)", faults.len())
        }
    );
    let rows: Vec<CurveRow> = points
        .iter()
        .map(|(b, c)| CurveRow {
            bytes: *b,
            time_s: c.time_s,
            algbw_gbps: c.algbw_gbps,
            busbw_gbps: c.busbw_gbps,
            algorithm: match &c.variant {
                Some(v) => format!("{:?} ({v})", c.algorithm),
                None => format!("{:?}", c.algorithm),
            },
            protocol: format!("{:?}", c.protocol),
        })
        .collect();
    print_curve(&rows);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let (b, last) = points.last().expect("one point");
    println!(
        "most loaded links at {b:.0} B ({} flows simulated, {} in all; {} steps advanced in steady state; {} rerouted)",
        last.sim.flows_simulated, last.sim.flows_total, last.sim.steps_skipped, last.sim.reroutes
    );
    let mut t = Table::new();
    t.set_header(vec!["link", "GB carried", "busy (us)", "utilisation"]);
    for l in &links {
        t.add_row(vec![
            Cell::new(&l.name),
            right(format!("{:.3}", l.bytes / 1e9)),
            right(format!("{:.2}", l.busy_s * 1e6)),
            right(format!("{:.1}%", 100.0 * l.utilization)),
        ]);
    }
    println!("{t}");
    if let Some(path) = r.trace {
        println!(
            "trace: {} ({} slices; open in chrome://tracing or ui.perfetto.dev)",
            path.display(),
            sim.trace.len()
        );
    }
    Ok(())
}
