//! `myriad search`: the fastest parallel plans for the scenario's model on its cluster.
use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_search::Ranked;

pub(crate) fn plan_summary(p: &myriad_train::Plan) -> String {
    format!(
        "TP{} PP{}{} CP{} DP{}{} mb{} {}{} ZeRO-{}{}",
        p.tp,
        p.pp,
        match (p.vpp > 1, p.edge_stage_layers) {
            (true, _) => format!("x{}", p.vpp),
            // Layers of the first stage / of each other stage.
            (false, Some((first, rest))) => format!("[{first}/{rest}]"),
            _ => String::new(),
        },
        p.cp,
        p.dp,
        if p.ep_folded() {
            // Wider than DP: the expert layers re-factor the stage's TP x CP x DP ranks.
            format!(" EP{} folded", p.ep)
        } else if p.ep > 1 {
            format!(" EP{}", p.ep)
        } else {
            String::new()
        },
        p.micro_batch,
        // Lowercase, in the scenario's own spelling, as `train` prints it.
        p.recompute_label(),
        if p.offload_fraction > 0.0 {
            format!(
                "{} offload{:.0}%",
                if p.sequence_parallel { " SP" } else { "" },
                100.0 * p.offload_fraction
            )
        } else if p.sequence_parallel {
            " SP".to_string()
        } else {
            String::new()
        },
        p.zero_stage,
        if p.placement[3] == myriad_scenario::Dim::Pp {
            " (DP outermost)"
        } else {
            ""
        },
    )
}

pub fn run(
    path: &Path,
    top: usize,
    batches: Option<&str>,
    json: bool,
    report: Option<&Path>,
) -> Result<(), String> {
    if top == 0 {
        // An empty table and a comparison of plans it does not list.
        return Err("--top: 0 plans to list; give at least 1".into());
    }
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    let batches = batches
        .map(|b| myriad_api::parse_global_batches(b, "--global-batch"))
        .transpose()?;
    let start = Instant::now();
    let bar = if !json && std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{elapsed} [{bar:40}] {pos}/{len} plans")
                .expect("template"),
        );
        b.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        Some(b)
    } else {
        None
    };
    let progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            if b.is_hidden() && start.elapsed().as_secs_f64() > 1.0 {
                b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            b.set_length(total);
            b.set_position(done);
        }
    };
    let run = myriad_api::search(&s, &file, top, batches, &progress)?;
    let (r, model, cluster, accelerators) =
        (&run.result, &run.model, &run.cluster, run.accelerators);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = r.evaluated as f64 / secs.max(1e-9);
    if json || report.is_some() {
        let out = run.json(&s, top, secs);
        super::write_report(report, &out, myriad_report::search)?;
        if json {
            super::print_json(&out)?;
            return Ok(());
        }
    }
    println!(
        "{} — {} on {} × {}: global batch {:?}, {}",
        s.name,
        model.name,
        accelerators,
        cluster.accelerator.name,
        run.global_batches,
        s.training
            .as_ref()
            .and_then(|t| t.precision)
            .map_or("bf16", |p| p.as_str())
    );
    for n in &run.notes {
        println!("note: {n}");
    }
    println!(
        "space {} configurations; {} divide and were estimated, {} fit in memory; {:.3} s ({:.0} configurations/s)",
        r.space, r.evaluated, r.feasible, secs, rate
    );
    let mut t = Table::new();
    t.set_header(vec!["reason rejected", "configurations"]);
    for (k, v) in &r.infeasible {
        t.add_row(vec![
            Cell::new(k),
            Cell::new(v).set_alignment(CellAlignment::Right),
        ]);
    }
    println!("{t}");
    if r.top.is_empty() {
        // An answer, as `train`'s "fits: NO" and `plan`'s "no candidate meets every
        // constraint" are, and as `--json`'s `"best": null` is: exit status 0.
        if r.evaluated == 0 {
            println!("no parallel plan divides this cluster and global batch (reasons above)");
        } else {
            println!("no parallel plan fits in memory on this cluster");
        }
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header(vec!["#", "plan", "step s", "MFU", "memory GiB", "tokens/s"]);
    for (i, b) in r.top.iter().take(top).enumerate() {
        let e = &b.estimate;
        let r = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(i + 1),
            Cell::new(plan_summary(&b.plan)),
            r(format!("{:.3}", e.step_time_s)),
            r(format!("{:.1}%", 100.0 * e.mfu)),
            r(format!("{:.1}", e.memory.total_gib)),
            r(format!("{:.0}", e.tokens_per_s)),
        ]);
    }
    println!("{t}");
    if r.top.len() >= 2 {
        why(&r.top[0], &r.top[1]);
    }
    Ok(())
}

/// The best plan's breakdown beside the runner-up's.
fn why(a: &Ranked, b: &Ranked) {
    let (x, y) = (&a.estimate.breakdown, &b.estimate.breakdown);
    let rows = x
        .parts()
        .into_iter()
        .zip(y.parts())
        .map(|((_, n, p), (_, _, q))| (n, p, q))
        .chain([("step", a.estimate.step_time_s, b.estimate.step_time_s)]);
    let mut t = Table::new();
    t.set_header(vec!["why #1 wins (seconds)", "#1", "#2", "#2 - #1"]);
    for (n, p, q) in rows {
        if p == 0.0 && q == 0.0 {
            continue;
        }
        let r = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(n),
            r(format!("{p:.4}")),
            r(format!("{q:.4}")),
            r(format!("{:+.4}", q - p)),
        ]);
    }
    println!("{t}");
}
