//! `myriad plan`: which cluster to build for a model and a token budget.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_report::num::fixed;

pub fn run(path: &Path, json: bool, report: Option<&Path>) -> Result<(), String> {
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    let (r, out) = myriad_api::plan(&s, &file)?;
    if json || report.is_some() {
        super::write_report(report, &out, myriad_report::plan)?;
        if json {
            super::print_json(&out)?;
            return Ok(());
        }
    }
    println!("{} — training on {:.3e} tokens", s.name, r.tokens);
    let mut t = Table::new();
    t.set_header(vec![
        "accelerator",
        "count",
        "system / fabric",
        "best plan",
        "MFU",
        "days",
        "capex M USD",
        "facility MW",
        "energy M USD",
        "Pareto",
        "qualifies",
    ]);
    for (i, c) in r.candidates.iter().enumerate() {
        let rr = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(format!(
                "{}{}",
                if Some(i) == r.chosen { "► " } else { "" },
                c.accelerator
            )),
            rr(c.accelerators.to_string()),
            Cell::new(format!("{} / {}", c.scale_up, c.fabric)),
            Cell::new(
                c.best
                    .as_ref()
                    .map(|b| super::search::plan_summary(&b.plan))
                    .unwrap_or("-".into()),
            ),
            rr(c.best
                .as_ref()
                .map(|b| format!("{:.1}%", 100.0 * b.estimate.mfu))
                .unwrap_or("-".into())),
            rr(c.days.map(|d| fixed(d, 1)).unwrap_or("-".into())),
            rr(fixed(c.capex_usd / 1e6, 1)),
            rr(fixed(c.facility_power_mw, 1)),
            rr(c.energy_cost_usd
                .map(|e| fixed(e / 1e6, 2))
                .unwrap_or("-".into())),
            Cell::new(if c.pareto { "yes" } else { "" }),
            Cell::new(if c.violations.is_empty() {
                "yes".to_string()
            } else {
                c.violations.join("; ")
            }),
        ]);
    }
    println!("{t}");
    for c in &r.candidates {
        for n in &c.notes {
            println!("note: {} x {}: {n}", c.accelerators, c.accelerator);
        }
    }
    for sk in &r.skipped {
        println!("skipped: {sk}");
    }
    match (r.chosen, &r.chosen_report) {
        (Some(i), Some(rep)) => {
            let c = &r.candidates[i];
            println!(
                "\nchosen: {} × {} ({} / {}), {} days, capex {} M USD, {} MW at the facility",
                c.accelerators,
                c.accelerator,
                c.scale_up,
                c.fabric,
                fixed(c.days.unwrap_or(f64::NAN), 1),
                fixed(c.capex_usd / 1e6, 1),
                fixed(c.facility_power_mw, 1)
            );
            let mut b = Table::new();
            b.set_header(vec!["bill of materials", "count"]);
            b.add_row(vec![
                Cell::new("scale-up domains"),
                Cell::new(rep.scale_up_domains),
            ]);
            b.add_row(vec![Cell::new("nodes"), Cell::new(rep.nodes)]);
            for (tier, n) in rep.switches.0.iter() {
                b.add_row(vec![Cell::new(format!("{tier} switches")), Cell::new(n)]);
            }
            b.add_row(vec![Cell::new("transceivers"), Cell::new(rep.transceivers)]);
            b.add_row(vec![Cell::new("cables"), Cell::new(rep.cables)]);
            b.add_row(vec![Cell::new("racks"), Cell::new(rep.racks)]);
            println!("{b}");
        }
        _ => println!("\nno candidate meets every constraint"),
    }
    Ok(())
}
