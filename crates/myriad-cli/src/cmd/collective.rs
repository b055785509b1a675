//! `myriad collective`: one collective (or a size sweep, like nccl-tests) on a parallel group
//! of the scenario's cluster, timed by the analytical collective model or (`--backend
//! flow`) simulated flow by flow on the routed topology (`myriad-netsim`).
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_collective::{Algorithm, GroupSpan, Op};

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
    let flow = match a.backend {
        "analytical" => false,
        "flow" => true,
        b => return Err(format!("--backend: `{b}` is not analytical or flow")),
    };
    if a.trace.is_some() && !flow {
        return Err("--trace needs --backend flow".into());
    }
    let input =
        myriad_api::collective_input(&s, &file, a.op, a.bytes, a.sweep, a.group, a.algorithm)?;
    let (cluster, op, algo, span, ranks, sizes) = (
        &input.cluster,
        input.op,
        input.algorithm,
        &input.span,
        &input.ranks,
        &input.sizes,
    );
    if flow {
        return run_flow(
            &file,
            &s,
            cluster,
            FlowRequest {
                op,
                op_name: a.op,
                group: a.group,
                algorithm: algo,
                span,
                ranks,
                rank_group: input.group.as_ref(),
                sizes,
                trace: a.trace,
                json: a.json,
            },
        );
    }
    let (points, out) = myriad_api::collective_analytical(&input, &file)?;
    if a.json {
        super::print_json(&out)?;
        return Ok(());
    }
    println!(
        "{} on a group of {} ({}; ranks per level {:?} over {})",
        a.op,
        input.group.as_ref().map_or(span.size(), |g| g.n),
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
            algorithm: myriad_api::algorithm_name(c.algorithm),
            protocol: c.protocol.name().to_string(),
        })
        .collect();
    print_curve(&rows);
    if let Some(note) = out.get("timed_as").and_then(|t| t.get("note")) {
        println!("note: {}", note.as_str().unwrap_or_default());
    }
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
    /// Explicit ranks, which may be uneven (see `myriad_api::CollectiveInput::group`).
    rank_group: Option<&'a myriad_collective::RankGroup>,
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
    use myriad_netsim::{
        flow_choice, flow_choice_for, time_collective, top_links, Network, SimOptions,
    };
    let net = Network::from_cluster(cluster);
    let faults = faults(s);
    let mut points = Vec::with_capacity(r.sizes.len());
    let mut last = None;
    for (i, &b) in r.sizes.iter().enumerate() {
        // The protocol for the algorithm and ranks actually simulated (an uneven group runs
        // the ring).
        let choice = match r.rank_group {
            Some(g) => flow_choice_for(r.op, r.algorithm, b, g, &cluster.levels),
            None => flow_choice(r.op, r.algorithm, b, r.span, &cluster.levels),
        };
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
                    "bytes": *b as u64, "time_s": t.time_s, "algbw_gbps": t.algbw_gbps,
                    "busbw_gbps": t.busbw_gbps, "algorithm": t.algorithm,
                    "variant": t.variant, "protocol": t.protocol.name(),
                    "flows_simulated": t.sim.flows_simulated, "flows": t.sim.flows_total,
                    "steps_advanced_in_steady_state": t.sim.steps_skipped,
                    "reroutes": t.sim.reroutes,
                })
            })
            .collect();
        let mut out =
            myriad_api::shaped(pts, serde_json::json!(n), serde_json::json!(r.span.spans));
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
                Some(v) => format!("{} ({v})", myriad_api::algorithm_name(c.algorithm)),
                None => myriad_api::algorithm_name(c.algorithm),
            },
            protocol: c.protocol.name().to_string(),
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
