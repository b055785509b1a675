//! `myriad validate`: predicts every case of a myriad-validation/1 file.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};

pub fn run(path: &Path, json: bool, case: Option<&str>) -> Result<(), String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let file =
        myriad_scenario::validation::parse_validation(&name, &text).map_err(|e| e.to_string())?;
    if let Some(pattern) = case {
        return explain(&name, &file.cases, pattern);
    }
    let report = myriad_train::validate::validate(&file.cases, myriad_catalog::catalog());
    if json {
        let out = myriad_api::validation_json(&name, &file.warnings, &report);
        super::print_json(&out)?;
        return Ok(());
    }
    for w in &file.warnings {
        eprintln!("warning: {w}");
    }
    let mut t = Table::new();
    t.set_header(vec![
        "id",
        "predicted s",
        "measured s",
        "error",
        "MFU",
        "note",
    ]);
    for c in &report.cases {
        let r = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(&c.id),
            r(c.predicted_step_time_s
                .map(|p| format!("{p:.3}"))
                .unwrap_or("-".into())),
            r(format!("{:.3}", c.measured_step_time_s)),
            r(c.error
                .map(|e| format!("{:+.1}%", 100.0 * e))
                .unwrap_or("-".into())),
            r(c.mfu
                .map(|m| format!("{:.1}%", 100.0 * m))
                .unwrap_or("-".into())),
            Cell::new(if let Some(f) = &c.failure {
                format!("failed: {f}")
            } else if c.superseded {
                "older release (superseded)".into()
            } else {
                String::new()
            }),
        ]);
    }
    println!("{t}");
    let s = &report.summary;
    let mut g = Table::new();
    g.set_header(vec![
        "source group",
        "cases",
        "mean |error|",
        "mean error",
        "worst |error|",
        "worst case",
    ]);
    for grp in &s.groups {
        g.add_row(vec![
            Cell::new(&grp.group),
            Cell::new(grp.count),
            Cell::new(format!("{:.1}%", 100.0 * grp.mae)),
            Cell::new(format!("{:+.1}%", 100.0 * grp.mean_error)),
            Cell::new(format!("{:.1}%", 100.0 * grp.worst_abs_error)),
            Cell::new(&grp.worst_id),
        ]);
    }
    println!("{g}");
    if s.count == 0 {
        println!(
            "no case scored ({} failed: see the note column for why)",
            s.failed
        );
    } else {
        println!(
        "{} cases ({} failed, {} superseded): mean |error| {:.1}% (signed {:+.1}%), median {:.1}%, worst {:.1}% ({}) — over all rows {:.1}% ({})",
        s.count,
        s.failed,
        s.superseded,
        100.0 * s.mae,
        100.0 * s.mean_error,
        100.0 * s.median_abs_error,
        100.0 * s.worst_abs_error,
        s.worst_id,
        100.0 * s.worst_abs_error_all,
        s.worst_id_all
    );
    }
    let notes: std::collections::BTreeSet<&String> =
        report.cases.iter().flat_map(|c| c.notes.iter()).collect();
    if !notes.is_empty() {
        println!("defaults chosen for null fields (per case in --json or with --case ID):");
        for n in notes.iter().take(20) {
            println!("  {n}");
        }
    }
    Ok(())
}

/// `--case`: every case whose id contains `pattern`, predicted as `validate` predicts it,
/// printed as `myriad train` prints a scenario, with the measurement beside it.
fn explain(
    name: &str,
    cases: &[myriad_scenario::validation::ValidationCase],
    pattern: &str,
) -> Result<(), String> {
    let cat = myriad_catalog::catalog();
    let chosen: Vec<_> = cases.iter().filter(|c| c.id.contains(pattern)).collect();
    if chosen.is_empty() {
        return Err(format!("{name}: no case id contains `{pattern}`"));
    }
    for (i, c) in chosen.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let acc = &c.system.accelerator;
        println!(
            "{} — {} on {} × {acc} ({})",
            c.id,
            c.model.name.as_deref().unwrap_or("unnamed model"),
            c.system.count,
            c.source.as_deref().unwrap_or("no source")
        );
        match myriad_train::validate::explain(c, cat) {
            Ok((t, notes)) => {
                let measured = c.measured.step_time_s;
                let predicted = t.estimate.step_time_s;
                println!(
                    "predicted {predicted:.3} s, measured {measured:.3} s: {:+.1}%",
                    100.0 * (predicted / measured - 1.0)
                );
                // The plan's own choices are printed with the plan below.
                for n in notes.iter().filter(|n| !t.notes.contains(n)) {
                    println!("  filled {n}");
                }
                // Host memory (for activation offload) of the scale-up system the case built.
                let host = myriad_train::validate::case_scenario(c, cat)
                    .ok()
                    .and_then(|(s, _)| {
                        cat.scale_up_for(acc, s.cluster.scale_up.as_deref())
                            .ok()
                            .and_then(|su| su.host_memory_gib)
                    });
                super::train::print_step(&t, c.system.count, host);
            }
            Err(e) => println!("not predicted: {e}"),
        }
    }
    Ok(())
}
