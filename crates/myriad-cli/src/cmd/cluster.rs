//! `myriad cluster`: build the scenario's cluster and print its hierarchy, network tiers,
//! bill of materials, power and cost (tables, or one JSON object with `--json`).
use std::path::Path;

use comfy_table::{presets, CellAlignment, Table};
use myriad_cluster::ClusterReport;
use myriad_report::num::given;

pub fn run(path: &Path, json: bool, report: Option<&Path>) -> Result<(), String> {
    let s = super::load_scenario(path)?;
    let built = myriad_cluster::build(&s, myriad_catalog::catalog())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let r = built.report();
    if report.is_some() {
        let v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
        super::write_report(report, &v, myriad_report::cluster)?;
    }
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", render(&r));
    }
    Ok(())
}

/// `1234567` -> `1,234,567`.
fn int(n: u64) -> String {
    digits(&n.to_string())
}

/// A string of digits with thousands separators.
fn digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A float with `d` decimals and thousands separators.
/// From 1e12 up in scientific form (`{:.3e}`): a `count` or price at its limit made
/// hundreds of digits.
fn num(x: f64, d: usize) -> String {
    if x.is_finite() && x.abs() >= 1e12 {
        return myriad_report::num::fixed(x, d);
    }
    let neg = x < 0.0;
    let s = format!("{:.*}", d, x.abs());
    let (i, f) = s.split_once('.').unwrap_or((&s, ""));
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    // The digits as printed: past u64 (1.8e19) a parse would fail and print 0.
    out.push_str(&digits(i));
    if !f.is_empty() {
        out.push('.');
        out.push_str(f);
    }
    out
}

fn usd(x: f64) -> String {
    if x >= 1e9 {
        format!("{} B", num(x / 1e9, 2))
    } else if x >= 1e6 {
        format!("{} M", num(x / 1e6, 2))
    } else {
        num(x, 0)
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_MARKDOWN);
    if !header.is_empty() {
        t.set_header(header.to_vec());
    }
    t
}

fn right(t: &mut Table, cols: &[usize]) {
    for &i in cols {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn render(r: &ClusterReport) -> String {
    let n = &r.network;
    let h = &r.hierarchy;
    let mut out = String::new();
    let title = if r.name.is_empty() {
        "(unnamed)"
    } else {
        &r.name
    };
    out.push_str(&format!("Cluster: {title}\n\n"));

    let mut t = table(&[]);
    t.add_row(vec![
        "Accelerators".to_string(),
        format!(
            "{} x {} ({})",
            int(r.accelerators),
            r.accelerator.name,
            r.accelerator.id
        ),
    ]);
    t.add_row(vec![
        "Scale-up domains".to_string(),
        format!(
            "{} x {} ({} accelerators each, {} GB/s per accelerator)",
            int(r.scale_up_domains),
            r.scale_up.name,
            r.scale_up.accelerators_per_domain,
            num(r.scale_up.bandwidth_gbps, 0)
        ),
    ]);
    t.add_row(vec![
        "Nodes".to_string(),
        format!(
            "{} ({} accelerators each, {} per domain)",
            int(r.nodes),
            h.accelerators_per_node,
            h.nodes_per_domain
        ),
    ]);
    if h.sites > 1 {
        t.add_row(vec![
            "Sites".to_string(),
            format!(
                "{} x {} accelerators, DCI {} Gb/s per site, {} us one way",
                h.sites,
                int(h.accelerators_per_site),
                num(n.dci_gbps_per_site.unwrap_or(0.0), 0),
                num(n.dci_latency_us.unwrap_or(0.0), 0)
            ),
        ]);
    }
    if let Some(i) = h.accelerators_per_island {
        // An island size that does not divide a site leaves a smaller last island in each
        // site (1,000 on 1,024: one of 1,000 and one of 24, once shown as "2 x 1,000").
        let per_site = h.islands / h.sites.max(1) as u64;
        let last = h.accelerators_per_site - per_site.saturating_sub(1) * i;
        let islands = if per_site == 0 || last == i {
            format!("{} x {}", int(h.islands), int(i))
        } else if h.sites > 1 {
            format!(
                "{} x {} and {} x {} (the last of each site)",
                int(h.islands - h.sites as u64),
                int(i),
                h.sites,
                int(last)
            )
        } else {
            format!("{} x {} and 1 x {}", int(h.islands - 1), int(i), int(last))
        };
        t.add_row(vec![
            "Islands".to_string(),
            format!(
                "{islands} accelerators at full bisection, {}:1 above",
                num(n.oversubscription, 2)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            ),
        ]);
    }
    let planes = if n.planes > 1 {
        format!(", {} planes", n.planes)
    } else {
        String::new()
    };
    let breakout = if n.breakout > 1 {
        format!(" (as {} x {} Gb/s)", n.plane_radix, num(n.link_gbps, 0))
    } else {
        String::new()
    };
    t.add_row(vec![
        "Scale-out".to_string(),
        format!(
            "{}, {}, {} tiers{}, {}-port {}{}; {} GB/s per accelerator",
            n.fabric,
            serde_json::to_value(n.topology)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            n.tiers,
            planes,
            n.switch_radix,
            n.switch_model,
            breakout,
            num(n.gbps_per_accelerator, 1)
        ),
    ]);
    out.push_str(&format!("{t}\n\nScale-out network\n"));

    let mut t = table(&[
        "tier",
        "switches",
        "switch model",
        "ports used",
        "cables in",
        "optical",
        "copper",
        "oversubscription",
    ]);
    for row in &r.tiers {
        t.add_row(vec![
            row.name.clone(),
            int(row.switches),
            row.switch_model.clone(),
            int(row.ports_used),
            int(row.cables),
            int(row.optical_cables),
            int(row.copper_cables),
            row.oversubscription
                .map(|o| format!("{}:1", num(o, 2)))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    if r.dci_cables > 0 {
        t.add_row(vec![
            "dci".to_string(),
            "-".into(),
            "-".into(),
            "-".into(),
            int(r.dci_cables),
            int(r.dci_cables),
            "0".into(),
            "-".into(),
        ]);
    }
    t.add_row(vec![
        "total".to_string(),
        int(r.switches_total),
        String::new(),
        int(r.tiers.iter().map(|t| t.ports_used).sum()),
        int(r.cables),
        int(r.optical_cables),
        int(r.copper_cables),
        String::new(),
    ]);
    right(&mut t, &[1, 3, 4, 5, 6, 7]);
    out.push_str(&format!("{t}\n\nBill of materials\n"));

    let mut t = table(&["item", "count"]);
    t.add_row(vec!["NICs (in nodes)".to_string(), int(r.nics)]);
    t.add_row(vec!["NIC ports (all planes)".to_string(), int(r.nic_ports)]);
    t.add_row(vec!["switches".to_string(), int(r.switches_total)]);
    t.add_row(vec!["transceivers".to_string(), int(r.transceivers)]);
    t.add_row(vec!["optical cables".to_string(), int(r.optical_cables)]);
    t.add_row(vec![
        "copper cables (DAC)".to_string(),
        int(r.copper_cables),
    ]);
    t.add_row(vec![
        "scale-up switch chips".to_string(),
        int(r.scale_up.switch_chips),
    ]);
    t.add_row(vec![
        "racks".to_string(),
        format!(
            "{} ({} compute + {} network)",
            int(r.racks),
            int(r.compute_racks),
            int(r.network_racks)
        ),
    ]);
    right(&mut t, &[1]);
    out.push_str(&format!("{t}\n\nCompute and memory\n"));

    let mut t = table(&["compute and memory", "total"]);
    for (p, v) in &r.peak_pflops.0 {
        t.add_row(vec![
            format!("peak {p} (dense)"),
            format!("{} PFLOP/s", num(*v, 1)),
        ]);
    }
    t.add_row(vec![
        "HBM capacity".to_string(),
        if r.hbm_tib >= 1024.0 {
            format!("{} PiB", num(r.hbm_tib / 1024.0, 2))
        } else {
            format!("{} TiB", num(r.hbm_tib, 1))
        },
    ]);
    t.add_row(vec![
        "HBM bandwidth".to_string(),
        format!("{} PB/s", num(r.hbm_tbps / 1000.0, 2)),
    ]);
    right(&mut t, &[1]);
    out.push_str(&format!("{t}\n\nPower and cost\n"));

    let p = &r.power;
    let c = &r.capex_breakdown;
    let mut t = table(&["power and cost", "value"]);
    t.add_row(vec![
        "IT power".to_string(),
        format!("{} MW", num(p.it_mw, 2)),
    ]);
    t.add_row(vec![
        "  nodes / scale-up fabric / switches / optics".to_string(),
        format!(
            "{} / {} / {} / {} kW",
            num(p.nodes_kw, 0),
            num(p.scale_up_fabric_kw, 0),
            num(p.switches_kw, 0),
            num(p.transceivers_kw, 0)
        ),
    ]);
    t.add_row(vec![
        "facility power".to_string(),
        format!("{} MW (PUE {})", num(p.facility_mw, 2), given(p.pue)),
    ]);
    t.add_row(vec![
        "energy per year".to_string(),
        format!(
            "{} MWh, {} USD at {} USD/kWh",
            num(p.energy_mwh_per_year, 0),
            usd(p.energy_cost_usd_per_year),
            given(p.usd_per_kwh)
        ),
    ]);
    t.add_row(vec!["capex: servers".to_string(), usd(c.servers_usd)]);
    t.add_row(vec![
        "capex: scale-up fabric".to_string(),
        usd(c.scale_up_fabric_usd),
    ]);
    t.add_row(vec![
        "capex: scale-out switches".to_string(),
        usd(c.switches_usd),
    ]);
    t.add_row(vec![
        "capex: optics and cables".to_string(),
        usd(c.optics_and_cables_usd),
    ]);
    t.add_row(vec![
        "capex: NICs (in servers)".to_string(),
        usd(c.nics_usd),
    ]);
    t.add_row(vec!["capex total (USD)".to_string(), usd(c.total_usd)]);
    right(&mut t, &[1]);
    out.push_str(&format!("{t}\n\nHierarchy levels (for the step model)\n"));

    let mut t = table(&[
        "level",
        "accelerators",
        "GB/s per accelerator",
        "latency us",
        "efficiency",
        "in-network reduction",
    ]);
    for l in &r.levels {
        t.add_row(vec![
            l.name.clone(),
            int(l.size),
            num(l.gbps_per_accelerator, 2),
            num(l.latency_us, 2),
            num(l.efficiency, 2),
            if l.in_network_reduction { "yes" } else { "no" }.to_string(),
        ]);
    }
    right(&mut t, &[1, 2, 3, 4]);
    out.push_str(&format!("{t}\n"));
    out
}
