//! `myriad collective`: one collective (or a size sweep, like nccl-tests) on a parallel group
//! of the scenario's cluster, timed by the analytical collective model or (`--backend
//! flow`) simulated flow by flow on the routed topology (`myriad-netsim`).
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};

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
    let flow =
        myriad_api::parse_backend(a.backend, myriad_api::Naming::Cli)? == myriad_api::Backend::Flow;
    if a.trace.is_some() && !flow {
        return Err("--trace needs --backend flow".into());
    }
    let input =
        myriad_api::collective_input(&s, &file, a.op, a.bytes, a.sweep, a.group, a.algorithm)?;
    let (cluster, span) = (&input.cluster, &input.span);
    if flow {
        return run_flow(&file, &s, &input, a);
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

/// `--backend flow`: every size simulated by `myriad-netsim`; the most loaded links and the
/// trace are those of the largest size.
fn run_flow(
    file: &str,
    s: &myriad_scenario::Scenario,
    input: &myriad_api::CollectiveInput,
    a: Args,
) -> Result<(), String> {
    let f = myriad_api::collective_flow(s, input, file, a.trace.is_some())?;
    if let Some(path) = a.trace {
        let text = myriad_netsim::chrome_trace(&f.sim, std::slice::from_ref(&f.program));
        std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    }
    if a.json {
        super::print_json(&f.json)?;
        return Ok(());
    }
    let (cluster, span, n) = (&input.cluster, &input.span, input.ranks.len());
    let (points, links, faults, sim) = (&f.points, &f.links, &f.faults, &f.sim);
    println!(
        "{} on a group of {} ({}; ranks per level {:?} over {}), flow-level simulation{}",
        a.op,
        n,
        a.group,
        span.spans,
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
    for l in links {
        t.add_row(vec![
            Cell::new(&l.name),
            right(format!("{:.3}", l.bytes / 1e9)),
            right(format!("{:.2}", l.busy_s * 1e6)),
            right(format!("{:.1}%", 100.0 * l.utilization)),
        ]);
    }
    println!("{t}");
    if let Some(path) = a.trace {
        println!(
            "trace: {} ({} slices; open in chrome://tracing or ui.perfetto.dev)",
            path.display(),
            sim.trace.len()
        );
    }
    Ok(())
}
