//! `myriad collective`: one collective (or a size sweep, like nccl-tests) on a parallel group
//! of the scenario's cluster, timed by the analytical collective model.
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
fn group_span(
    group: &str,
    cluster: &myriad_cluster::BuiltCluster,
    plan: Option<&myriad_train::Plan>,
) -> Result<GroupSpan, String> {
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
        return Ok(plan.group(levels, d));
    }
    if group == "all" {
        return Ok(myriad_train::Plan::span(levels, cluster.accelerators, 1));
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
    Ok(GroupSpan { spans })
}

pub struct Args<'a> {
    pub op: &'a str,
    pub bytes: Option<&'a str>,
    pub sweep: Option<&'a str>,
    pub group: &'a str,
    pub algorithm: &'a str,
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
    let span = group_span(a.group, &cluster, plan.as_ref())?;
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
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
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
    let mut t = Table::new();
    t.set_header(vec![
        "size (B)",
        "time (us)",
        "algbw (GB/s)",
        "busbw (GB/s)",
        "algorithm",
        "protocol",
    ]);
    for (b, c) in &points {
        let r = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            r(format!("{b:.0}")),
            r(format!("{:.2}", c.time_s * 1e6)),
            r(format!("{:.2}", c.algbw_gbps)),
            r(format!("{:.2}", c.busbw_gbps)),
            Cell::new(format!("{:?}", c.algorithm)),
            Cell::new(format!("{:?}", c.protocol)),
        ]);
    }
    println!("{t}");
    Ok(())
}
