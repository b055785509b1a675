//! Every example scenario parses and builds, and its report holds together.
use std::path::PathBuf;

use myriad_catalog::catalog;

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_builds() {
    let files = examples();
    assert!(
        files.len() >= 7,
        "expected the 7 example scenarios, got {files:?}"
    );
    for f in files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let s = myriad_scenario::parse_scenario(&name, &text, catalog())
            .unwrap_or_else(|e| panic!("{e}"));
        let b = myriad_cluster::build(&s, catalog()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = b.report();
        assert_eq!(r.accelerators, s.cluster.count, "{name}");
        let total: u64 = b.domains.iter().map(|d| d.accelerators as u64).sum();
        assert_eq!(total, s.cluster.count, "{name}");
        assert_eq!(b.levels.last().unwrap().size, s.cluster.count, "{name}");
        assert!(
            r.capex_usd > 0.0 && r.facility_power_mw > r.it_power_mw,
            "{name}"
        );
        if std::env::var("MYRIAD_PRINT").is_ok() {
            let mut v = serde_json::to_value(&r).unwrap();
            for k in [
                "network",
                "power",
                "hierarchy",
                "capex_breakdown",
                "scale_up",
                "peak_pflops",
                "accelerator",
            ] {
                v.as_object_mut().unwrap().remove(k);
            }
            println!("{name}\n{}\n", serde_json::to_string(&v).unwrap());
        }
    }
}
