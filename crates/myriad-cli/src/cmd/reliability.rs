//! `myriad reliability`: interruptions, recovery, checkpointing, ETTR and goodput
//! (seeded Monte Carlo), with comparisons over cluster size, scale-up domain and policy.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_reliability::{CompareRow, Report, Setup};

/// Parses `--compare size,domain,checkpoint` (or `all`).
fn compare_kinds(list: &[String]) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for item in list.iter().flat_map(|s| s.split(',')) {
        let k = match item.trim() {
            "size" => "size",
            "domain" => "domain",
            "checkpoint" => "checkpoint",
            "all" => {
                for k in ["size", "domain", "checkpoint"] {
                    if !out.contains(&k) {
                        out.push(k);
                    }
                }
                continue;
            }
            "" => continue,
            other => {
                return Err(format!(
                    "--compare: `{other}` is not one of size, domain, checkpoint, all"
                ))
            }
        };
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

pub fn run(
    path: &Path,
    days: Option<f64>,
    replicas: Option<u32>,
    seed: Option<u64>,
    compare: &[String],
    json: bool,
    report: Option<&Path>,
) -> Result<(), String> {
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    let mut kinds = compare_kinds(compare)?;
    // The report shows ETTR against cluster size: run that comparison for it.
    if report.is_some() && !kinds.contains(&"size") {
        kinds.push("size");
    }
    if replicas == Some(0) {
        return Err("--replicas: must be at least 1".into());
    }
    if let Some(d) = days.filter(|d| !(*d > 0.0 && d.is_finite())) {
        return Err(format!("--days {d}: must be a positive number of days"));
    }
    let run = myriad_api::reliability(&s, &file, days, replicas, seed, &kinds)?;
    if json || report.is_some() {
        let out = run.json();
        super::write_report(report, &out, myriad_report::reliability)?;
        if json {
            super::print_json(&out)?;
            return Ok(());
        }
    }
    let (setup, r, tables) = (&run.setup, &run.report, &run.tables);
    print_text(setup, r, tables);
    Ok(())
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

use myriad_report::num::{fix, given};

/// Days to train: `never` when a replica (or a window's ETTR bound) kept no work.
fn days(x: f64) -> String {
    if x.is_finite() {
        fix(x, 1)
    } else {
        "never".into()
    }
}

/// An MTBF in hours with `prec` decimals, or `-` for a rate of 0 (JSON: null).
fn mtbf(h: f64, prec: usize) -> String {
    if h.is_finite() {
        format!("{h:.prec$}")
    } else {
        "-".into()
    }
}

/// An MTBF in the causes table, one format down the column: hours with one decimal, in
/// scientific form from 10,000 h (a device's) or below 0.1 h; `-` for no failures.
fn mtbf_cell(h: f64) -> String {
    if !h.is_finite() {
        "-".into()
    } else if !(0.1..1e4).contains(&h) {
        format!("{h:.3e}")
    } else {
        format!("{h:.1}")
    }
}

/// An MTBF in a sentence: `3.08 h`, or `none` for a rate of 0 (no failures).
fn mtbf_h(h: f64) -> String {
    if h.is_finite() {
        format!("{} h", fix(h, 2))
    } else {
        "none".into()
    }
}

fn print_text(s: &Setup, r: &Report, tables: &[(&str, Vec<CompareRow>)]) {
    let m = &r.summary;
    let j = &s.job;
    let ck = &s.checkpoint;
    let window = match r.days {
        Some(d) => format!("{d} days"),
        None => format!(
            "the whole run ({} failure-free days)",
            fix(r.failure_free_days.unwrap_or(0.0), 1)
        ),
    };
    println!(
        "{} — {} on {} × {} ({}, domains of {}): {} replicas of {}, seed {}",
        s.name,
        s.model,
        j.accelerators,
        s.accelerator,
        s.scale_up,
        j.domain_size,
        r.replicas,
        window,
        r.seed
    );
    let total = m.unexpected + m.planned;
    println!(
        "\ninterruptions: {:.1} ({:.1} unexpected, {:.1} planned) · job MTBF {} (rates: {})",
        total,
        m.unexpected,
        m.planned,
        mtbf_h(m.job_mtbf_hours),
        mtbf_h(j.mtbf_hours())
    );
    let mut t = Table::new();
    t.set_header(vec![
        "cause",
        "per device",
        "devices",
        "MTBF per device (h)",
        "expected / day",
        "interruptions",
        "share",
    ]);
    for (c, n) in &m.by_component {
        let cause = j.causes.iter().find(|x| x.component == *c);
        let per_day = r
            .expected_per_day
            .iter()
            .find(|x| x.0 == *c)
            .map_or(0.0, |x| x.1);
        if cause.is_none() && *n == 0.0 {
            continue;
        }
        t.add_row(vec![
            Cell::new(c.name()),
            Cell::new(c.population()),
            right(cause.map_or("-".into(), |x| format!("{:.0}", x.population))),
            right(cause.map_or("-".into(), |x| {
                // With `failures.scale`, as the expected count per day beside it.
                mtbf_cell(1.0 / (x.per_hour * j.scale))
            })),
            right(format!("{per_day:.3}")),
            right(format!("{n:.1}")),
            right(pct(n / total.max(1e-12))),
        ]);
    }
    t.add_row(vec![
        Cell::new("planned"),
        Cell::new("job"),
        right("1".into()),
        right(mtbf_cell(1.0 / (j.planned_per_s * 3600.0))),
        right(format!("{:.3}", r.expected_planned_per_day)),
        right(format!("{:.1}", m.planned)),
        right(pct(m.planned / total.max(1e-12))),
    ]);
    println!("{t}");

    println!(
        "\ncheckpoint: {} TB ({} MB per accelerator), {} to {}; write {} s at {} TB/s, restore {} s at {} TB/s; stall {} s per checkpoint",
        fix(ck.size_bytes / 1e12, 2),
        fix(ck.bytes_per_accelerator / 1e6, 0),
        ck.mode,
        ck.levels,
        fix(ck.write_s, 2),
        given(ck.sustained_tbps),
        fix(ck.restore_storage_s, 2),
        given(ck.peak_tbps),
        fix(r.policy.stall_s, 2)
    );
    println!(
        "interval: {} s used ({}) · simulated optimum {} s · Young/Daly sqrt(2·δ·M) {} s (δ {} s, M {})",
        fix(r.interval_s, 0),
        match ck.interval_s {
            Some(g) if g < r.interval_s => format!(
                "given {} s; the next snapshot waits for the previous write, {} s",
                fix(g, 0),
                fix(r.policy.lag_s, 0)
            ),
            Some(_) => "given".into(),
            None => "auto: the simulated optimum".into(),
        },
        fix(r.optimal_checkpoint_interval_s, 0),
        fix(r.young_daly_interval_s, 0),
        fix(r.policy.stall_s, 2),
        mtbf_h(j.mtbf_hours())
    );
    let mut t = Table::new();
    t.set_header(vec![
        "where the time goes (mean per replica)",
        "hours",
        "share",
    ]);
    let wall_h = m.simulated_days * 24.0;
    let work_h = m.ettr.mean * wall_h;
    for (name, h) in [
        ("training kept", work_h),
        ("training lost (redone)", m.lost_work_hours),
        ("checkpoint stalls", m.checkpoint_stall_hours),
        (
            "down: detect, diagnose, restart, restore",
            m.down_hours - m.waiting_for_spares_hours,
        ),
        ("down: waiting for spares", m.waiting_for_spares_hours),
        ("wall clock", wall_h),
    ] {
        t.add_row(vec![
            Cell::new(name),
            right(fix(h, 1)),
            right(pct(h / wall_h.max(1e-12))),
        ]);
    }
    println!("{t}");
    println!(
        "lost work {} s per interruption during training · {} checkpoints · restart {} s + restore {} s after detect {} s + diagnose {} s",
        fix(m.lost_work_per_failure_s, 0),
        fix(m.checkpoints, 0),
        fix(j.restart_s, 0),
        fix(r.policy.restore_s, 2),
        fix(j.detect_s, 0),
        fix(j.diagnose_s, 0)
    );
    println!(
        "spares: {} per domain ({} accelerators), {} spare domains in the pool ({} accelerators), repair {:.0} h · {:.1} accelerators in repair on average · spare domains needed never to wait: {:.0} (median), {:.0} (p99)",
        j.spares_per_domain,
        j.domains * j.spares_per_domain as u64,
        j.pool_domains,
        j.pool_domains * j.domain_size as u64,
        j.repair_s / 3600.0,
        m.accelerators_in_repair,
        m.spare_domains_needed_p50,
        m.spare_domains_needed_p99
    );
    println!(
        "\nETTR {} (95% of replicas {} – {}) · goodput {:.0} tokens/s of {:.0} failure-free ({:.0} – {:.0})",
        pct(m.ettr.mean),
        pct(m.ettr.lo),
        pct(m.ettr.hi),
        r.goodput_tokens_per_s.mean,
        s.tokens_per_step / s.step_time_s,
        r.goodput_tokens_per_s.lo,
        r.goodput_tokens_per_s.hi
    );
    if let (Some(t), Some(ff)) = (r.time_to_train_days, r.failure_free_days) {
        if t.mean.is_finite() {
            println!(
                "time to train: {} days (95% of replicas {} – {}); failure-free {} days",
                days(t.mean),
                days(t.lo),
                days(t.hi),
                fix(ff, 1)
            );
        } else {
            println!(
                "time to train: never (some replicas kept no work at all); failure-free {} days",
                fix(ff, 1)
            );
        }
    }
    if m.capped > 0 {
        println!(
            "note: {} of {} replicas stopped before the end of the {} ({}x its failure-free time or {} events, after {:.1} days on average): their ETTR is over what they simulated, their time to train projected from it",
            m.capped,
            m.replicas,
            r.horizon,
            myriad_reliability::sim::MAX_WALL_FACTOR,
            myriad_reliability::sim::MAX_EVENTS,
            m.simulated_days
        );
    }
    for (k, rows) in tables {
        print_compare(k, rows);
    }
}

type Column = (&'static str, fn(&CompareRow) -> String);

fn print_compare(kind: &str, rows: &[CompareRow]) {
    let (title, cols): (&str, &[&str]) = match kind {
        "size" => (
            "cluster size (the job is the whole cluster; spares in the scenario's proportion; network, NICs and rates per accelerator as in the scenario; days to train assume the failure-free time scales inversely with size)",
            &["accelerators", "spares", "interval s", "interruptions/day", "MTBF h", "ETTR", "ETTR 95%", "lost s/failure", "spares needed p99", "days to train"],
        ),
        "domain" => (
            "scale-up domain (the same job, rates and checkpoints; the scenario's number of spare accelerators, in-domain first, the rest as whole spare domains; node size from the catalog)",
            &["domain", "accelerators", "spares", "interruptions/day", "ETTR", "ETTR 95%", "waiting h", "in repair", "spares needed p99", "days to train"],
        ),
        _ => (
            "checkpoint policy",
            &["interval s", "stall s", "ETTR", "ETTR 95%", "lost s/failure", "stalls h/day", "days to train"],
        ),
    };
    let all: [Column; 14] = [
        ("accelerators", |x| x.accelerators.to_string()),
        ("domain", |x| x.domain_size.to_string()),
        ("spares", |x| x.spare_accelerators.to_string()),
        ("interval s", |x| format!("{:.0}", x.interval_s)),
        ("stall s", |x| format!("{:.2}", x.stall_s)),
        ("interruptions/day", |x| {
            format!("{:.1}", x.interruptions_per_day)
        }),
        ("MTBF h", |x| mtbf(x.job_mtbf_hours, 2)),
        ("ETTR", |x| pct(x.ettr.mean)),
        ("ETTR 95%", |x| {
            format!("{} – {}", pct(x.ettr.lo), pct(x.ettr.hi))
        }),
        ("lost s/failure", |x| {
            format!("{:.0}", x.lost_work_per_failure_s)
        }),
        ("waiting h", |x| {
            format!("{:.1}", x.waiting_for_spares_hours)
        }),
        ("in repair", |x| format!("{:.0}", x.accelerators_in_repair)),
        ("spares needed p99", |x| {
            format!(
                "{:.0} ({:.0} domains)",
                x.spare_accelerators_needed_p99, x.spare_domains_needed_p99
            )
        }),
        ("days to train", |x| {
            x.time_to_train_days.map_or("-".into(), days)
        }),
    ];
    let stalls: Column = ("stalls h/day", |x| {
        format!("{:.2}", x.checkpoint_stall_hours_per_day)
    });
    let chosen: Vec<&Column> = cols
        .iter()
        .filter_map(|c| all.iter().chain([&stalls]).find(|x| x.0 == *c))
        .collect();
    println!("\nETTR versus {title}");
    let mut t = Table::new();
    let mut header = vec![""];
    header.extend(chosen.iter().map(|c| c.0));
    t.set_header(header);
    for x in rows {
        let mut cells = vec![Cell::new(&x.label)];
        cells.extend(chosen.iter().map(|c| right((c.1)(x))));
        t.add_row(cells);
    }
    println!("{t}");
}
