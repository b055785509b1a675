#[test]
fn h_planner_arith() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, datacenter: {pue: 1.5, usd_per_kwh: 0.1}}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 512, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, gb200], counts: [256, 512, 1000], deadline_days: 20}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    for c in &r.candidates {
        let Some(b) = c.best.as_ref() else { eprintln!("{} {} none {:?} mw {}", c.accelerator, c.accelerators, c.violations, c.facility_power_mw); continue };
        let steps = (1.0e12f64 / (512.0 * 8192.0)).ceil();
        let secs = steps * b.estimate.step_time_s;
        eprintln!("{} {} cl{} days {:?} {} gpuh {:?} mwh {:?} cost {:?} mw {} capex {} notes {:?} viol {:?}", c.accelerator, c.accelerators, c.cluster_accelerators, c.days, secs/86400.0, c.gpu_hours, c.energy_mwh, c.energy_cost_usd, c.facility_power_mw, c.capex_usd, c.notes, c.violations);
        assert!((c.days.unwrap() - secs / 86400.0).abs() < 1e-9);
        assert!((c.gpu_hours.unwrap() - secs / 3600.0 * c.accelerators as f64).abs() < 1e-6);
        assert!((c.energy_mwh.unwrap() - c.facility_power_mw * secs / 3600.0).abs() < 1e-6);
        assert!((c.energy_cost_usd.unwrap() - c.energy_mwh.unwrap() * 1000.0 * 0.1).abs() < 1e-3);
    }
    eprintln!("chosen {:?}", r.chosen);
}
