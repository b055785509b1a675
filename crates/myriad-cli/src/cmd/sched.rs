//! `myriad sched`: many jobs on the cluster under several policies, side by side (seeded
//! discrete-event simulation); `--openb DIR` replays the Alibaba openb trace.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_report::num::fixed;
use myriad_sched::openb::LoadPoint;
use myriad_sched::setup::Setup;
use myriad_sched::Report;

pub fn run(
    scenario: Option<&Path>,
    openb: Option<&Path>,
    json: bool,
    seed: Option<u64>,
    policies: Option<&str>,
    report: Option<&Path>,
) -> Result<(), String> {
    let names: Option<Vec<String>> = policies.map(|p| {
        p.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    });
    let names = names.as_deref();
    if scenario.is_none() && openb.is_none() {
        return Err("give a SCENARIO or --openb DIR".into());
    }
    let started = std::time::Instant::now();
    let loaded = scenario
        .map(|p| super::load_scenario(p).map(|s| (s, p.display().to_string())))
        .transpose()?;
    let base = scenario
        .and_then(Path::parent)
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let run = myriad_api::sched(
        loaded.as_ref().map(|(s, f)| (s, f.as_str())),
        &base,
        openb,
        &super::read_file,
        names,
        seed,
    )?;
    let (setup, reports, sweeps) = (&run.setup, &run.reports, &run.sweeps);
    let secs = started.elapsed().as_secs_f64();
    if json || report.is_some() {
        let v = run.json();
        super::write_report(report, &v, myriad_report::sched)?;
        if json {
            super::print_json(&v)?;
            return Ok(());
        }
    }
    print_text(setup, reports, sweeps, secs);
    Ok(())
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Minutes under an hour, else hours; past 1e12 h (job durations at their limit) in
/// scientific form.
fn hours(s: f64) -> String {
    if s < 3600.0 {
        format!("{} min", fixed(s / 60.0, 1))
    } else {
        format!("{} h", fixed(s / 3600.0, 2))
    }
}

fn print_text(s: &Setup, reports: &[Report], sweeps: &[(String, Vec<LoadPoint>)], secs: f64) {
    let t = &s.topology;
    println!(
        "{} — {} accelerators ({}) in {} nodes, {} scale-up domains, {} pods, {} region(s); {} jobs{}, seed {}; {} policies in {:.2} s",
        s.name,
        t.gpus(),
        s.accelerator,
        t.nodes.len(),
        t.domains(),
        t.pods(),
        t.regions(),
        s.workload.jobs.len(),
        if s.workload.services.is_empty() {
            String::new()
        } else {
            format!(" + {} inference services", s.workload.services.len())
        },
        s.seed,
        reports.len(),
        secs
    );
    let mut tb = Table::new();
    let mut head = vec![Cell::new("metric")];
    head.extend(reports.iter().map(|r| Cell::new(&r.policy.name)));
    tb.set_header(head);
    let mut row = |name: &str, f: &dyn Fn(&Report) -> String| {
        let mut cells = vec![Cell::new(name)];
        cells.extend(reports.iter().map(|r| right(f(r))));
        tb.add_row(cells);
    };
    row("completed / rejected", &|r| {
        format!("{} / {}", r.completed, r.rejected)
    });
    // Why jobs were rejected, one row per reason any policy met.
    let mut reasons: Vec<myriad_sched::RejectReason> = reports
        .iter()
        .flat_map(|r| r.rejections.keys().copied())
        .collect();
    reasons.sort();
    reasons.dedup();
    for why in reasons {
        row(&format!("rejected: {}", why.describe()), &|r| {
            r.rejections.get(&why).copied().unwrap_or(0).to_string()
        });
    }
    row("makespan", &|r| hours(r.makespan_s));
    row("allocation (arrival window)", &|r| pct(r.allocation));
    row("allocation over time (8 spans, %)", &|r| {
        // The series up to the makespan, in 8 spans of (as nearly as they divide) equal
        // numbers of bins; fewer bins than 8, one span each.
        let bins: Vec<f64> = r
            .series
            .iter()
            .filter(|b| b.t_s < r.makespan_s.max(1.0))
            .map(|b| b.allocated)
            .collect();
        if bins.is_empty() {
            return "-".into();
        }
        let (n, m) = (bins.len(), bins.len().min(8));
        (0..m)
            .map(|i| {
                let c = &bins[i * n / m..(i + 1) * n / m];
                format!("{:.0}", 100.0 * c.iter().sum::<f64>() / c.len() as f64)
            })
            .collect::<Vec<_>>()
            .join(" ")
    });
    row("wait mean (all)", &|r| hours(r.all.wait_s.mean));
    row("wait p50 / p99 (all)", &|r| {
        format!("{} / {}", hours(r.all.wait_s.p50), hours(r.all.wait_s.p99))
    });
    row("JCT mean (all)", &|r| hours(r.all.jct_s.mean));
    row("JCT p50 / p99 (all)", &|r| {
        format!("{} / {}", hours(r.all.jct_s.p50), hours(r.all.jct_s.p99))
    });
    let nclass = reports.first().map_or(0, |r| r.classes.len());
    for c in 0..nclass {
        let name = reports[0].classes[c].class.clone();
        if reports[0].classes[c].jobs == 0 {
            continue;
        }
        row(&format!("wait mean / p99 ({name})"), &|r| {
            let k = &r.classes[c];
            format!("{} / {}", hours(k.wait_s.mean), hours(k.wait_s.p99))
        });
        row(&format!("JCT p50 / p99 ({name})"), &|r| {
            let k = &r.classes[c];
            format!("{} / {}", hours(k.jct_s.p50), hours(k.jct_s.p99))
        });
    }
    row("frag: free GPUs off free nodes", &|r| pct(r.mean_frag_node));
    row("frag: free GPUs off free domains", &|r| {
        pct(r.mean_frag_domain)
    });
    if reports.iter().any(|r| r.mean_frag_fgd.is_some()) {
        row("frag: FGD expected fragment (GPUs)", &|r| {
            r.mean_frag_fgd.map_or("-".into(), |x| format!("{x:.0}"))
        });
    }
    row("traffic in one domain / pod", &|r| {
        format!("{} / {}", pct(r.all.in_domain), pct(r.all.in_pod))
    });
    if reports.iter().any(|r| (r.all.slowdown - 1.0).abs() > 1e-9) {
        row("run time from placement (x of in-pod)", &|r| {
            format!("{:.3}", r.all.slowdown)
        });
    }
    row("preemptions", &|r| r.preemptions.to_string());
    if reports.iter().any(|r| r.failures > 0) {
        row("failures / GPU-hours lost", &|r| {
            format!("{} / {}", r.failures, fixed(r.lost_gpu_hours, 0))
        });
    }
    if t.regions() > 1 {
        row("jobs moved / GB staged", &|r| {
            format!("{} / {}", r.moved_jobs, fixed(r.moved_gb, 0))
        });
    }
    let nsvc = reports.first().map_or(0, |r| r.services.len());
    for i in 0..nsvc {
        let name = reports[0].services[i].service.clone();
        row(&format!("SLO attainment ({name})"), &|r| {
            pct(r.services[i].slo_attainment)
        });
    }
    println!("{tb}");
    if !sweeps.is_empty() {
        println!(
            "\nload sweep (FGD paper protocol: tasks drawn from the trace, no departures): GPUs left unallocated / GPU demand of failed tasks, of {} GPUs",
            t.gpus()
        );
        let mut tb = Table::new();
        let mut head = vec![Cell::new("arrived load")];
        head.extend(sweeps.iter().map(|(n, _)| Cell::new(n)));
        tb.set_header(head);
        let n = sweeps[0].1.len();
        for i in 0..n {
            let mut cells = vec![right(pct(sweeps[0].1[i].arrived))];
            for (_, pts) in sweeps {
                let p = &pts[i];
                cells.push(right(format!(
                    "{:.0} unallocated ({}) · {:.0} failed · frag {:.0}",
                    p.unallocated_gpus,
                    pct(p.unallocated_gpus / t.gpus() as f64),
                    p.failed_gpus,
                    p.frag_gpus
                )));
            }
            tb.add_row(cells);
        }
        println!("{tb}");
    }
}
