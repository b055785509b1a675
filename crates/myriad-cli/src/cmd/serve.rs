//! `myriad serve`: request-level serving simulation, deployment search, and validation
//! against published serving measurements.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_report::num::{fixed, given};

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

#[allow(clippy::too_many_arguments)]
pub fn run(
    scenario: Option<&Path>,
    validate: Option<&Path>,
    case: Option<&str>,
    search: bool,
    seed: Option<u64>,
    requests: Option<u64>,
    json: bool,
    report: Option<&Path>,
) -> Result<(), String> {
    if let Some(f) = validate {
        return run_validate(f, json, case);
    }
    let path = scenario.ok_or("serve: give a SCENARIO file or --validate FILE")?;
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    if let Some(n) = requests {
        myriad_scenario::serving::check_requests(n).map_err(|m| format!("--requests: {m}"))?;
    }
    let (setup, cluster) = myriad_api::serve_setup(
        &s,
        &file,
        path.parent().unwrap_or(Path::new(".")),
        &super::read_file,
        seed,
        requests,
    )?;
    // On stderr, so that `--json` stays one document (which carries them too).
    for w in &setup.warnings {
        eprintln!("warning: {file}: {w}");
    }
    if search {
        let (c, v) = myriad_api::serve_search(&s, &setup, &cluster);
        // When no candidate met the SLOs, the closest and where it fell short.
        let none = myriad_serve::search::no_feasible(&c);
        if json {
            super::print_json(&v)?;
            return Ok(());
        }
        println!(
            "{} — serving search: {} candidates, goodput = highest rate with ≥{:.0}% of requests within the SLOs",
            s.name,
            c.len(),
            myriad_serve::search::ATTAINMENT * 100.0
        );
        let screen = c.iter().map(|x| x.requests).min().unwrap_or(0);
        let full = c.iter().map(|x| x.requests).max().unwrap_or(0);
        if full > screen {
            println!(
                "each rate simulated over {screen} requests; the {} best again over {full}",
                c.iter().filter(|x| x.requests == full).count()
            );
        }
        let mut t = Table::new();
        t.set_header(vec![
            "#",
            "deployment",
            "accelerators",
            "max req/s",
            "goodput tok/s/acc",
            "TTFT p90 ms",
            "TPOT p90 ms",
        ]);
        // No latency where no rate met the SLOs.
        let ms = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.1}", s * 1e3));
        for (i, x) in c.iter().take(10).enumerate() {
            t.add_row(vec![
                right(format!("{}", i + 1)),
                Cell::new(&x.description),
                right(format!("{}", x.accelerators)),
                right(fixed(x.max_rate, 2)),
                right(fixed(x.goodput_tokens_per_s_per_accelerator, 0)),
                right(ms(x.ttft_p90_s)),
                right(ms(x.tpot_p90_s)),
            ]);
        }
        println!("{t}");
        if let Some(x) = none {
            let ms = |s: f64| format!("{:.1} ms", s * 1e3);
            let slo = |name: &str, p90: f64, slo: Option<f64>| match slo {
                Some(l) if p90 > l => format!(
                    "{name} p90 {} over its SLO of {} by {}",
                    ms(p90),
                    ms(l),
                    ms(p90 - l)
                ),
                Some(l) => format!("{name} p90 {} within its SLO of {}", ms(p90), ms(l)),
                None => format!("{name} p90 {} (no SLO)", ms(p90)),
            };
            println!(
                "no candidate met the SLOs (≥{:.0}% of requests within both, none rejected)",
                myriad_serve::search::ATTAINMENT * 100.0
            );
            match &x.shortfall {
                Some(f) => println!(
                    "  closest: {} at {:.3} req/s: {:.0}% within the SLOs, {} rejected; {}; {}",
                    x.description,
                    f.rate,
                    f.slo_attainment * 100.0,
                    f.rejected,
                    slo("TTFT", f.ttft_p90_s, f.ttft_slo_s),
                    slo("TPOT", f.tpot_p90_s, f.tpot_slo_s)
                ),
                None => println!("  closest: {}", x.description),
            }
        }
        return Ok(());
    }
    let rep = myriad_serve::run(&setup);
    if report.is_some() {
        let mut v = serde_json::to_value(&rep).map_err(|e| e.to_string())?;
        v["load_sweep"] = myriad_api::serve_load_sweep(&setup);
        super::write_report(report, &v, myriad_report::serve)?;
    }
    if json {
        super::print_json(&rep)?;
        return Ok(());
    }
    let r = &rep.result;
    println!(
        "{} — {} requests on {} accelerators ({}), seed {}",
        s.name, r.requests, r.accelerators, rep.framework, setup.workload.seed
    );
    for n in &rep.notes {
        println!("  chose {n}");
    }
    let mut t = Table::new();
    t.set_header(vec!["throughput", "per accelerator", "per node", "total"]);
    let node = rep.accelerators_per_node as f64;
    t.add_row(vec![
        Cell::new("input tokens/s"),
        right(fixed(r.input_tokens_per_s_per_accelerator, 0)),
        right(fixed(r.input_tokens_per_s_per_accelerator * node, 0)),
        right(fixed(r.input_tokens_per_s, 0)),
    ]);
    t.add_row(vec![
        Cell::new("output tokens/s"),
        right(fixed(r.output_tokens_per_s_per_accelerator, 0)),
        right(fixed(r.output_tokens_per_s_per_accelerator * node, 0)),
        right(fixed(r.output_tokens_per_s, 0)),
    ]);
    t.add_row(vec![
        Cell::new("goodput output tokens/s"),
        right(fixed(
            r.goodput_output_tokens_per_s / r.accelerators as f64,
            0,
        )),
        right(fixed(
            r.goodput_output_tokens_per_s / r.accelerators as f64 * node,
            0,
        )),
        right(fixed(r.goodput_output_tokens_per_s, 0)),
    ]);
    println!("{t}");
    let mut l = Table::new();
    l.set_header(vec!["latency (ms)", "mean", "p50", "p90", "p99"]);
    for (name, p) in [
        ("TTFT", r.ttft),
        ("TPOT", r.tpot),
        ("request latency", r.latency),
    ] {
        l.add_row(vec![
            Cell::new(name),
            right(fixed(p.mean * 1e3, 1)),
            right(fixed(p.p50 * 1e3, 1)),
            right(fixed(p.p90 * 1e3, 1)),
            right(fixed(p.p99 * 1e3, 1)),
        ]);
    }
    println!("{l}");
    println!(
        "per user: {} tokens/s while decoding (mean 1/TPOT), {} tokens/s over the whole request (prompt and queue included)",
        fixed(r.per_user_output_tokens_per_s, 1),
        fixed(r.per_user_output_tokens_per_s_with_ctx, 1)
    );
    let rejected = if r.rejected_too_long > 0 {
        format!(
            "{} rejected: {} larger than a KV cache, {} longer than the maximum context",
            r.rejected,
            r.rejected - r.rejected_too_long,
            r.rejected_too_long
        )
    } else {
        format!("{} rejected: larger than a KV cache", r.rejected)
    };
    println!(
        "completed {} of {} ({rejected}) in {} s · SLO attainment {:.1}% · goodput {} req/s",
        r.completed,
        r.requests,
        fixed(r.duration_s, 1),
        r.slo_attainment * 100.0,
        fixed(r.goodput_requests_per_s, 2)
    );
    println!(
        "KV cache use: mean {:.1}%, peak {:.1}% · mean decode batch {:.1} · {} iterations · mean in system {:.1}",
        r.kv_use_mean * 100.0,
        r.kv_use_peak * 100.0,
        r.mean_decode_batch,
        r.iterations,
        r.mean_in_system
    );
    println!("{}", iteration_table(&r.iteration_mix));
    if let Some(b) = rep.decode_memory_roofline_output_tokens_per_s_per_accelerator {
        println!(
            "decode memory roofline: {b:.0} output tokens/s per accelerator (the KV cache full of whole requests at the mean lengths, read with the touched weights at peak bandwidth every step; no prefill, compute not counted)"
        );
    }
    if let (Some(t), Some(n)) = (setup.target_rate, rep.accelerators_for_target_rate) {
        println!(
            "accelerators for {} requests/s within the SLOs: {n}",
            given(t)
        );
    }
    if !rep.concurrency_sweep.is_empty() {
        println!(
            "concurrency sweep (the scenario's first 16 requests a client, 128 to {} a point; steady throughput between the 10% and 90% completions): throughput per accelerator against each user's speed",
            myriad_serve::SWEEP_REQUESTS
        );
        let mut t = Table::new();
        t.set_header(vec![
            "clients",
            "output tok/s/acc",
            "tok/s per user",
            "TTFT p50 ms",
            "TPOT p50 ms",
            "TPOT p99 ms",
        ]);
        for x in &rep.concurrency_sweep {
            t.add_row(vec![
                right(format!("{}", x.clients)),
                right(fixed(x.output_tokens_per_s_per_accelerator, 0)),
                right(fixed(x.per_user_output_tokens_per_s, 1)),
                right(fixed(x.ttft.p50 * 1e3, 1)),
                right(fixed(x.tpot.p50 * 1e3, 1)),
                right(fixed(x.tpot.p99 * 1e3, 1)),
            ]);
        }
        println!("{t}");
    }
    Ok(())
}

/// Where the iterations' time went: decode-only iterations against those carrying prompts,
/// each as its mean iteration split into the model's parts.
fn iteration_table(mix: &myriad_serve::IterationMix) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        "iterations",
        "count",
        "time share",
        "mean ms",
        "GEMMs",
        "attention",
        "memory-bound",
        "comm",
        "host",
        "decode seqs/rank",
        "context",
        "prompt tokens/rank",
    ]);
    let total = mix.decode_only.time.total_s + mix.with_prompts.time.total_s;
    for (name, c) in [
        ("decode only", &mix.decode_only),
        ("with prompts", &mix.with_prompts),
    ] {
        let ms = |x: f64| right(fixed(c.mean(x) * 1e3, 2));
        t.add_row(vec![
            Cell::new(name),
            right(c.iterations.to_string()),
            right(format!(
                "{:.1}%",
                if total > 0.0 {
                    c.time.total_s / total * 100.0
                } else {
                    0.0
                }
            )),
            ms(c.time.total_s),
            ms(c.time.gemm_s),
            ms(c.time.attention_s),
            ms(c.time.memory_s),
            ms(c.time.comm_s),
            ms(c.time.overhead_s),
            right(fixed(c.mean(c.decode_seqs_per_rank), 1)),
            right(fixed(c.mean(c.decode_context), 0)),
            right(fixed(c.mean(c.prompt_tokens_per_rank), 0)),
        ]);
    }
    t
}

fn run_validate(path: &Path, json: bool, case: Option<&str>) -> Result<(), String> {
    let name = path.display().to_string();
    let text = super::read_file(path)?;
    let (rep, out) = myriad_api::serve_validate(&name, &text)?;
    for w in &rep.warnings {
        eprintln!("warning: {name}: {w}");
    }
    let f = |x: Option<f64>| x.map(|v| format!("{v:.0}")).unwrap_or("-".into());
    if let Some(pattern) = case {
        let chosen: Vec<_> = rep
            .cases
            .iter()
            .filter(|c| c.id.contains(pattern))
            .collect();
        if chosen.is_empty() {
            return Err(format!("{name}: no row id contains `{pattern}`"));
        }
        for (i, c) in chosen.iter().enumerate() {
            if i > 0 {
                println!();
            }
            println!(
                "{} ({}): predicted {} output tokens/s per accelerator, measured {}{}",
                c.id,
                c.group,
                f(c.predicted),
                f(c.measured),
                c.error
                    .map(|e| format!(": {:+.1}%", e * 100.0))
                    .unwrap_or_default()
            );
            for (k, p, m) in &c.extra {
                println!(
                    "  {k}: predicted {}, measured {}: {:+.1}%",
                    figure(*p),
                    figure(*m),
                    (p / m - 1.0) * 100.0
                );
            }
            for n in &c.notes {
                println!("  {n}");
            }
        }
        return Ok(());
    }
    if json {
        super::print_json(&out)?;
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header(vec![
        "case",
        "predicted tok/s/acc",
        "measured",
        "error",
        "other",
    ]);
    for c in &rep.cases {
        let other: Vec<String> = c
            .extra
            .iter()
            .map(|(k, p, m)| format!("{k} {}/{}", figure(*p), figure(*m)))
            .collect();
        t.add_row(vec![
            Cell::new(&c.id),
            right(f(c.predicted)),
            right(f(c.measured)),
            right(
                c.error
                    .map(|e| format!("{:+.1}%", e * 100.0))
                    .unwrap_or("-".into()),
            ),
            Cell::new(other.join(", ")),
        ]);
    }
    println!("{t}");
    println!("\nchosen per row (unstated settings filled the way the framework would):");
    for c in &rep.cases {
        println!("  {}: {}", c.id, c.notes.join("; "));
    }
    println!(
        "{}",
        summary_table(
            "group",
            "cases",
            rep.groups.iter().chain(std::iter::once(&rep.summary))
        )
    );
    if !rep.metrics.is_empty() {
        println!(
            "{}",
            summary_table("other measured quantity", "rows", rep.metrics.iter())
        );
    }
    Ok(())
}

/// One line per summary: count, MAE, signed mean, median and worst error with its row.
fn summary_table<'a>(
    what: &str,
    count: &str,
    rows: impl Iterator<Item = &'a myriad_serve::validate::GroupSummary>,
) -> Table {
    let mut g = Table::new();
    g.set_header(vec![
        what,
        count,
        "MAE",
        "mean error",
        "median",
        "worst",
        "worst case",
    ]);
    for s in rows {
        g.add_row(vec![
            Cell::new(&s.group),
            right(format!("{}", s.count)),
            right(format!("{:.1}%", s.mae * 100.0)),
            right(format!("{:+.1}%", s.mean_error * 100.0)),
            right(format!("{:.1}%", s.median_abs_error * 100.0)),
            right(format!("{:.1}%", s.worst_abs_error * 100.0)),
            Cell::new(&s.worst_id),
        ]);
    }
    g
}

/// A measured or predicted figure with the digits it needs: whole above 100, else three
/// significant ones (per-user rates of a few tokens/s).
fn figure(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}
