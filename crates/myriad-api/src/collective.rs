//! `myriad collective`: parsing a request (op, sizes, group, algorithm) against a scenario,
//! and timing it with the analytical model (the flow backend lives in `myriad-netsim`).

use myriad_collective::{time, time_group, Algorithm, CollectiveTime, GroupSpan, Op, RankGroup};
use myriad_scenario::{Dim, Scenario};
use serde_json::{json, Value};

/// How errors name the request's arguments: the CLI's flags (`--group`) or the Python
/// package's keywords (`group`, and the file for a group the scenario cannot hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    Cli,
    Keywords,
}

impl Naming {
    /// `--name` or `name`.
    pub(crate) fn arg(self, name: &str) -> String {
        match self {
            Naming::Cli => format!("--{name}"),
            Naming::Keywords => name.to_string(),
        }
    }

    /// A size error of argument `name`, named first (`--bytes: ...`, `bytes: ...`).
    fn size(self, name: &str, e: String) -> String {
        format!("{}: {e}", self.arg(name))
    }

    /// A group error that depends on the scenario: with its file for Python (the CLI's
    /// message is as it was).
    fn scenario(self, file: &str, e: String) -> String {
        match self {
            Naming::Cli => e,
            Naming::Keywords => format!("{file}: {e}"),
        }
    }
}

/// Ranks `0, stride, …` (`n` of them).
fn strided(n: u64, stride: u64) -> Vec<u32> {
    (0..n).map(|i| (i * stride.max(1)) as u32).collect()
}

/// The ranks of the group holding rank 0 that is made of placement dimensions `dims`
/// ((size, stride) each), in rank order.
fn group_ranks(dims: &[(u64, u64)]) -> Vec<u32> {
    let mut ranks = vec![0u64];
    for &(n, stride) in dims.iter().filter(|d| d.0 > 1) {
        ranks = ranks
            .iter()
            .flat_map(|&r| (0..n).map(move |i| r + i * stride))
            .collect();
    }
    ranks.sort_unstable();
    ranks.into_iter().map(|r| r as u32).collect()
}

pub fn parse_op(s: &str) -> Result<Op, String> {
    parse_op_named(s, Naming::Cli)
}

fn parse_op_named(s: &str, n: Naming) -> Result<Op, String> {
    Ok(match s {
        "all-reduce" | "allreduce" => Op::AllReduce,
        "all-gather" | "allgather" => Op::AllGather,
        "reduce-scatter" | "reducescatter" => Op::ReduceScatter,
        "all-to-all" | "alltoall" => Op::AllToAll,
        "broadcast" => Op::Broadcast,
        "send-recv" | "sendrecv" => Op::SendRecv,
        _ => {
            return Err(format!(
                "{}: `{s}` is not one of all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, send-recv",
                n.arg("op")
            ))
        }
    })
}

pub fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    parse_algorithm_named(s, Naming::Cli)
}

fn parse_algorithm_named(s: &str, n: Naming) -> Result<Algorithm, String> {
    Ok(match s {
        "auto" => Algorithm::Auto,
        "ring" => Algorithm::Ring,
        "tree" => Algorithm::Tree,
        "nvls" => Algorithm::Nvls,
        "hierarchical" => Algorithm::Hierarchical,
        "direct" => Algorithm::Direct,
        _ => {
            return Err(format!(
                "{}: `{s}` is not one of ring, tree, nvls, hierarchical, direct, auto",
                n.arg("algorithm")
            ))
        }
    })
}

/// `8`, `8B`, `64KiB`, `1MiB`, `16GiB`, `1e9`.
pub fn parse_bytes(s: &str) -> Result<f64, String> {
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
    // Finite after the unit too: `1e300GiB` is infinite, and a sweep up to it never ended.
    let exact = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * mult)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("`{s}` is not a size (8B, 64KiB, 1MiB, 16GiB)"))?;
    if exact > MAX_BYTES {
        return Err(format!("`{s}` is more than 8 PiB, the largest size"));
    }
    // Whole bytes, so the JSON gives every size as an exact integer: `0.1KB` is 100 B (not
    // 100.00000000000001: a few units in the last place are the decimal's rounding), but
    // `1.5` was rounded to 2 B without a word; a fraction of a byte is an error.
    let v = exact.round();
    if (exact - v).abs() > 8.0 * f64::EPSILON * exact.max(1.0) {
        let bytes = if mult == 1.0 {
            String::new()
        } else {
            format!("{exact} bytes, ")
        };
        return Err(format!("`{s}` is {bytes}not a whole number of bytes"));
    }
    Ok(v)
}

/// The largest buffer size: 2^53 B (8 PiB), the last integer a float holds exactly.
pub const MAX_BYTES: f64 = 9_007_199_254_740_992.0;

/// The group's span on the hierarchy: a parallel dimension of the scenario's plan, `all`,
/// or explicit ranks (`0-7`, `0,8,16,24`).
/// With the group's ranks (accelerator ids): the group holding rank 0 for a plan
/// dimension, as `Plan::group` lays it out.
pub fn group_span(
    group: &str,
    cluster: &myriad_cluster::BuiltCluster,
    plan: Option<&myriad_train::Plan>,
) -> Result<(GroupSpan, Vec<u32>), String> {
    group_span_named(group, cluster, plan, "", Naming::Cli)
}

fn group_span_named(
    group: &str,
    cluster: &myriad_cluster::BuiltCluster,
    plan: Option<&myriad_train::Plan>,
    file: &str,
    n: Naming,
) -> Result<(GroupSpan, Vec<u32>), String> {
    let flag = n.arg("group");
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
        // The missing block is the file's: named in every naming (a flag's own errors
        // name only the flag).
        let plan = plan.ok_or_else(|| {
            let e = format!(
                "{flag} {group}: the scenario has no training plan (a group by dimension needs its model and training blocks)"
            );
            if file.is_empty() {
                e
            } else {
                format!("{file}: {e}")
            }
        })?;
        return Ok((plan.group(levels, d), group_ranks(&plan.group_dims(d))));
    }
    if group == "all" {
        return Ok((
            myriad_train::Plan::span(levels, cluster.accelerators, 1),
            strided(cluster.accelerators, 1),
        ));
    }
    // Explicit ranks.
    let outside = |r: u64| {
        n.scenario(
            file,
            format!(
                "{flag}: rank {r} is outside the cluster's {} accelerators",
                cluster.accelerators
            ),
        )
    };
    let mut ranks = Vec::new();
    for part in group.split(',') {
        let bad = || {
            format!("{flag}: `{group}` is not tp, dp, ep, pp, cp, all, or ranks like 0-7 or 0,8,16")
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
                // Checked before the range is expanded: `0-18446744073709551615` is not
                // a list to build.
                if b >= cluster.accelerators {
                    return Err(outside(b));
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    ranks.sort_unstable();
    if let Some(w) = ranks.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "{flag}: rank {} is given twice in `{group}`; a group holds each rank once",
            w[0]
        ));
    }
    if let Some(&r) = ranks.iter().find(|r| **r >= cluster.accelerators) {
        return Err(outside(r));
    }
    // spans[i]: distinct level-(i-1) units per level-i unit (the largest over units).
    let ranks: Vec<u32> = ranks.iter().map(|&r| r as u32).collect();
    Ok((RankGroup::new(&ranks, levels).span(), ranks))
}

/// A collective request resolved against a scenario.
pub struct CollectiveInput {
    pub cluster: myriad_cluster::BuiltCluster,
    pub op: Op,
    pub algorithm: Algorithm,
    /// The group on the hierarchy, and its ranks (accelerator ids). For explicit ranks
    /// `span` is the smallest symmetric group that holds them.
    pub span: GroupSpan,
    pub ranks: Vec<u32>,
    /// Explicit ranks (`0-8`) as they lie on the hierarchy, which may be uneven; `None` for
    /// a plan dimension or `all` (symmetric, timed on `span`).
    pub group: Option<RankGroup>,
    /// Buffer sizes in bytes (one, or a doubling sweep).
    pub sizes: Vec<f64>,
}

/// Resolves `op` (all-reduce, …), `bytes` (`1GiB`) or `sweep` (`8B..16GiB`), `group` (tp,
/// dp, ep, pp, cp, all, or ranks `0-7`) and `algorithm` (auto, ring, …) on the scenario.
pub fn collective_input(
    s: &Scenario,
    file: &str,
    op: &str,
    bytes: Option<&str>,
    sweep: Option<&str>,
    group: &str,
    algorithm: &str,
) -> Result<CollectiveInput, String> {
    collective_input_named(s, file, op, bytes, sweep, group, algorithm, Naming::Cli)
}

/// [`collective_input`] with errors naming the arguments as `naming` says (the Python
/// package's keywords rather than the CLI's flags).
#[allow(clippy::too_many_arguments)]
pub fn collective_input_named(
    s: &Scenario,
    file: &str,
    op: &str,
    bytes: Option<&str>,
    sweep: Option<&str>,
    group: &str,
    algorithm: &str,
    n: Naming,
) -> Result<CollectiveInput, String> {
    let cat = myriad_catalog::catalog();
    let cluster = myriad_cluster::build(s, cat).map_err(|e| format!("{file}: {e}"))?;
    // The training plan places a parallel dimension's group; `all` and explicit ranks need
    // none, so a plan the cluster cannot run is no error for them.
    let dimension = matches!(group, "tp" | "dp" | "ep" | "pp" | "cp");
    let plan = match (&s.model, &s.training) {
        (Some(m), Some(t)) if dimension => {
            let model = m
                .resolve(cat)
                .map_err(|(p, e)| format!("{file}: model.{p}: {e}"))?;
            // As `train` reads it: more than the cluster holds is an error, not a plan laid
            // over accelerators that do not exist.
            let n = super::training_accelerators(s, t, file)?;
            Some(
                myriad_train::resolve(t, &model, &cluster, n)
                    .map_err(|e| format!("{file}: {e}"))?
                    .0,
            )
        }
        _ => None,
    };
    let op = parse_op_named(op, n)?;
    let algorithm = parse_algorithm_named(algorithm, n)?;
    let (span, ranks) = group_span_named(group, &cluster, plan.as_ref(), file, n)?;
    // `all` on a cluster that no symmetric group covers (1,000 accelerators on leaves of
    // 32: a last leaf of 8) is timed over its ranks as they lie, like explicit ranks, not
    // as the 1,024 of the span that holds them.
    let explicit = !dimension && (group != "all" || span.size() != ranks.len() as u64);
    let group = explicit.then(|| RankGroup::new(&ranks, &cluster.levels));
    let (bytes_arg, sweep_arg) = (n.arg("bytes"), n.arg("sweep"));
    let sizes: Vec<f64> = match (sweep, bytes) {
        (Some(sw), Some(b)) => {
            return Err(format!(
                "{bytes_arg} {b} and {sweep_arg} {sw}: give one size or one range, not both"
            ))
        }
        (Some(sw), None) => {
            let (lo, hi) = sw
                .split_once("..")
                .ok_or_else(|| format!("{sweep_arg}: `{sw}` is not a range like 8B..16GiB"))?;
            let size = |t: &str| parse_bytes(t).map_err(|e| n.size("sweep", e));
            let (lo, hi) = (size(lo)?.max(1.0), size(hi)?);
            // A sweep doubles from at least 1 B: a range that ends below it holds no size
            // (`0B..0B` was told to give its smaller size first).
            if hi < 1.0 {
                return Err(format!(
                    "{sweep_arg}: `{sw}` ends below 1 B; a sweep doubles from 1 B up (one size of 0 B: {bytes_arg} 0B)"
                ));
            }
            if lo > hi {
                return Err(format!(
                    "{sweep_arg}: `{sw}` runs from {lo} B down to {hi} B; give the smaller size first"
                ));
            }
            let mut v = Vec::new();
            let mut x = lo;
            while x <= hi {
                v.push(x);
                x *= 2.0;
            }
            v
        }
        (None, Some(b)) => vec![parse_bytes(b).map_err(|e| n.size("bytes", e))?],
        (None, None) => {
            return Err(match n {
                Naming::Cli => "give --bytes SIZE or --sweep FROM..TO".into(),
                Naming::Keywords => "give bytes (a size) or sweep (FROM..TO)".into(),
            })
        }
    };
    Ok(CollectiveInput {
        cluster,
        op,
        algorithm,
        span,
        ranks,
        group,
        sizes,
    })
}

/// Times every size with the analytical model; the JSON is one point (with `group_size`
/// and `spans`) or `{"group_size", "spans", "points": […]}` for a sweep. `group_size` is
/// the group asked for; an uneven explicit group (`0-8` on 8-GPU domains) runs its ring
/// exactly (`myriad_collective::time_group`), and what the model cannot time on it (another
/// algorithm or op) is timed on the smallest symmetric group that holds it, which
/// `timed_as` then gives (`{"group_size", "spans", "note"}`).
pub fn collective_analytical(
    input: &CollectiveInput,
    file: &str,
) -> Result<(Vec<(f64, CollectiveTime)>, Value), String> {
    let mut points = Vec::with_capacity(input.sizes.len());
    let mut approximated = false;
    for b in &input.sizes {
        let levels = &input.cluster.levels;
        let t = match &input.group {
            Some(g) => time_group(input.op, input.algorithm, *b, g, levels).map(|(t, exact)| {
                approximated |= !exact;
                t
            }),
            None => time(input.op, input.algorithm, *b, &input.span, levels),
        }
        .map_err(|e| format!("{file}: {e}"))?;
        points.push((*b, t));
    }
    let pts: Vec<Value> = points
        .iter()
        .map(|(b, t)| {
            json!({
                "bytes": *b as u64, "time_s": t.time_s, "algbw_gbps": t.algbw_gbps, "busbw_gbps": t.busbw_gbps,
                "algorithm": t.algorithm, "protocol": t.protocol.name(),
            })
        })
        .collect();
    let span = &input.span;
    let size = input.group.as_ref().map_or(span.size(), |g| g.n);
    let mut out = shaped(pts, json!(size), json!(span.spans));
    if approximated {
        out["timed_as"] = json!({
            "group_size": span.size(),
            "spans": span.spans,
            "note": timed_as_note(size, span),
        });
    }
    Ok((points, out))
}

/// The output of one size or a sweep: `format` (`myriad-collective/1`), then one size's
/// keys at the top level with `group_size` and `spans`, or for a sweep `group_size`,
/// `spans` and the sizes under `points` (`shape` says which: `point` or `sweep`).
pub fn shaped(points: Vec<Value>, group_size: Value, spans: Value) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("format".into(), json!("myriad-collective/1"));
    let one = points.len() == 1;
    o.insert("shape".into(), json!(if one { "point" } else { "sweep" }));
    if one {
        if let Some(Value::Object(p)) = points.into_iter().next() {
            o.extend(p);
        }
        o.insert("group_size".into(), group_size);
        o.insert("spans".into(), spans);
    } else {
        o.insert("group_size".into(), group_size);
        o.insert("spans".into(), spans);
        o.insert("points".into(), Value::Array(points));
    }
    Value::Object(o)
}

/// An algorithm's name as the JSON and the command line spell it (`ring`, `nvls`).
pub fn algorithm_name(a: Algorithm) -> String {
    a.name().to_string()
}

/// How the analytical model approximates an uneven group it cannot time as it is.
pub fn timed_as_note(size: u64, span: &GroupSpan) -> String {
    format!(
        "the {size} ranks are uneven over the hierarchy; timed as the smallest symmetric group that holds them: {} ranks ({})",
        span.size(),
        span.spans
            .iter()
            .filter(|&&s| s > 1)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" × ")
    )
}

#[cfg(test)]
mod tests {
    use super::{collective_input, parse_bytes};

    /// Guards sizes with a fraction of a byte: `1.5` was rounded to 2 B without a word
    /// (Python's `collective(bytes=1.5)` too); the decimal's own rounding is not a fraction.
    #[test]
    fn a_fraction_of_a_byte_is_an_error() {
        assert_eq!(parse_bytes("0.1KB"), Ok(100.0));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536.0));
        assert_eq!(parse_bytes("1e9"), Ok(1e9));
        assert_eq!(parse_bytes("1000000000.0"), Ok(1e9));
        assert_eq!(parse_bytes("0.3GB"), Ok(3e8));
        assert_eq!(
            parse_bytes("1.5"),
            Err("`1.5` is not a whole number of bytes".into())
        );
        assert_eq!(
            parse_bytes("1.3KiB"),
            Err("`1.3KiB` is 1331.2 bytes, not a whole number of bytes".into())
        );
        assert!(parse_bytes("0.5B").is_err());
    }

    fn scenario(training: &str) -> myriad_scenario::Scenario {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64, scale_up: hgx-h100}}\n\
             model: {{preset: llama3-8b}}\ntraining: {training}\n"
        );
        crate::scenario("s.yaml", &text).unwrap()
    }

    /// `training.accelerators` past `cluster.count` laid the plan over 128 accelerators of
    /// a 64-accelerator cluster and timed its DP group; `train` refuses it.
    #[test]
    fn a_plan_on_more_accelerators_than_the_cluster_is_an_error() {
        let s = scenario("{accelerators: 128, global_batch: 512, micro_batch: 1}");
        let e = collective_input(&s, "s.yaml", "all-reduce", Some("1MiB"), None, "dp", "auto")
            .err()
            .expect("an error");
        assert_eq!(
            e,
            "s.yaml: training.accelerators: 128 is more than cluster.count 64"
        );
        let s = scenario("{accelerators: 32, global_batch: 512, micro_batch: 1}");
        let i = collective_input(&s, "s.yaml", "all-reduce", Some("1MiB"), None, "dp", "auto")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(i.ranks.len(), 32);
    }

    /// `--json` spells protocols as it spells algorithms, lowercase (`ll`, `ll128`,
    /// `simple`, `NCCL_PROTO`'s names): they were printed Debug-cased (`Ll`, `Ll128`,
    /// `Simple`) beside `ring` and `nvls`.
    #[test]
    fn json_protocols_are_lowercase_as_the_algorithms() {
        let s = crate::scenario(
            "s.yaml",
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64, scale_up: hgx-h100, scale_out: {fabric: infiniband-ndr}}\n",
        )
        .unwrap();
        let i = collective_input(
            &s,
            "s.yaml",
            "all-reduce",
            None,
            Some("8B..1GiB"),
            "all",
            "ring",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (_, out) = super::collective_analytical(&i, "s.yaml").unwrap();
        let protocols: Vec<&str> = out["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert_eq!(p["algorithm"], "ring");
                p["protocol"].as_str().unwrap()
            })
            .collect();
        // The smallest ring all-reduce runs LL, the largest Simple.
        assert_eq!(protocols.first(), Some(&"ll"), "{protocols:?}");
        assert_eq!(protocols.last(), Some(&"simple"), "{protocols:?}");
        assert!(
            protocols
                .iter()
                .all(|p| ["ll", "ll128", "simple"].contains(p)),
            "{protocols:?}"
        );
    }

    /// `--group tp` on a scenario without a training block said so without naming the file.
    #[test]
    fn a_dimension_group_without_a_training_block_names_the_file() {
        let s = crate::scenario(
            "s.yaml",
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64, scale_up: hgx-h100}\n",
        )
        .unwrap();
        let e = collective_input(&s, "s.yaml", "all-reduce", Some("1MiB"), None, "tp", "auto")
            .err()
            .expect("an error");
        assert_eq!(
            e,
            "s.yaml: --group tp: the scenario has no training plan (a group by dimension needs its model and training blocks)"
        );
    }

    /// A sweep ending below 1 B holds no size; `0B..0B` was said to run "from 1 B down to
    /// 0 B" and told to give the smaller size first, which it did.
    #[test]
    fn a_sweep_ending_below_one_byte_says_so() {
        let s = scenario("{global_batch: 512, micro_batch: 1}");
        for sw in ["0B..0B", "0..0"] {
            let e = collective_input(&s, "s.yaml", "all-reduce", None, Some(sw), "0-7", "auto")
                .err()
                .expect("an error");
            assert_eq!(
                e,
                format!("--sweep: `{sw}` ends below 1 B; a sweep doubles from 1 B up (one size of 0 B: --bytes 0B)")
            );
        }
        let i = collective_input(
            &s,
            "s.yaml",
            "all-reduce",
            None,
            Some("0B..4B"),
            "0-7",
            "auto",
        )
        .unwrap();
        assert_eq!(i.sizes, vec![1.0, 2.0, 4.0]);
    }

    /// `all` on 1,000 accelerators (31 full leaves of 32 and one of 8) was timed as the
    /// 1,024-rank span holding it: a group of 1,024, a hierarchical all-reduce its last leaf
    /// cannot run, a bus factor of 2·1023/1024; it is the 1,000 ranks, as `0-999` is.
    #[test]
    fn all_on_a_cluster_no_symmetric_group_covers_is_its_ranks() {
        let text =
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1000, scale_up: hgx-h100, \
                    scale_out: {fabric: infiniband-ndr, topology: fat-tree}}\n";
        let s = crate::scenario("s.yaml", text).unwrap();
        let run = |group: &str| {
            let i = collective_input(
                &s,
                "s.yaml",
                "all-reduce",
                Some("1GiB"),
                None,
                group,
                "auto",
            )
            .unwrap_or_else(|e| panic!("{group}: {e}"));
            assert_eq!(i.ranks.len(), 1000, "{group}");
            let (points, out) = super::collective_analytical(&i, "s.yaml").unwrap();
            assert_eq!(out["group_size"], 1000, "{group}: {out}");
            points[0].1
        };
        let (all, explicit) = (run("all"), run("0-999"));
        assert_eq!(all, explicit);
        // nccl-tests' bus factor of the 1,000 ranks.
        assert!((all.busbw_gbps / all.algbw_gbps - 2.0 * 999.0 / 1000.0).abs() < 1e-12);
    }

    /// `all` and explicit ranks use no plan, yet a training block the cluster cannot run
    /// (TP 3 does not divide 64) made every collective on the scenario an error.
    #[test]
    fn a_group_without_a_plan_dimension_needs_no_valid_plan() {
        let s = scenario("{tp: 3, global_batch: 512, micro_batch: 1}");
        for (group, n) in [("all", 64), ("0-7", 8), ("0,8", 2)] {
            let i = collective_input(
                &s,
                "s.yaml",
                "all-reduce",
                Some("1MiB"),
                None,
                group,
                "auto",
            )
            .unwrap_or_else(|e| panic!("{group}: {e}"));
            assert_eq!(i.ranks.len(), n, "{group}");
        }
        let e = collective_input(&s, "s.yaml", "all-reduce", Some("1MiB"), None, "tp", "auto")
            .err()
            .expect("an error");
        assert!(e.starts_with("s.yaml: training."), "{e}");
    }
}
