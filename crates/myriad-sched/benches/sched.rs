//! Scheduling speed. Bars: the openb replay (1,523 nodes, 8,152 tasks) under 2 s; a
//! synthetic 100,000-accelerator cluster with 1,000,000 jobs under 60 s (2 cores).
use myriad_scenario::scheduling::SchedulingSpec;
use myriad_sched::{preset, setup, simulate, workload, Topology};

fn main() {
    divan::main();
}

fn openb_texts() -> (String, String) {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/alibaba-openb-2023"
    );
    (
        std::fs::read_to_string(format!("{dir}/openb_node_list_all_node.csv")).unwrap(),
        std::fs::read_to_string(format!("{dir}/openb_pod_list_default.csv")).unwrap(),
    )
}

/// Time replay of the whole trace under FGD placement (the costlier one), parsing included.
#[divan::bench(sample_count = 3)]
fn openb_replay_fgd(b: divan::Bencher) {
    let (n, p) = openb_texts();
    b.bench(|| {
        let names = vec!["fgd".to_string()];
        let s = setup::openb(&n, &p, &SchedulingSpec::default(), Some(&names), None).unwrap();
        simulate(&s.topology, &s.workload, &s.policies[0], &s.options).completed
    });
}

/// The same under best-fit.
#[divan::bench(sample_count = 3)]
fn openb_replay_best_fit(b: divan::Bencher) {
    let (n, p) = openb_texts();
    b.bench(|| {
        let names = vec!["best-fit".to_string()];
        let s = setup::openb(&n, &p, &SchedulingSpec::default(), Some(&names), None).unwrap();
        simulate(&s.topology, &s.workload, &s.policies[0], &s.options).completed
    });
}

/// 100,008 GB200 (NVL72: 18 nodes of 4 per domain, pods of 54 domains), 1,000,000 jobs at
/// offered load 0.9, FIFO + EASY backfill with topology-aware placement.
#[divan::bench(sample_count = 1)]
fn synthetic_100k_accelerators_1m_jobs(b: divan::Bencher) {
    let t = Topology::uniform(&["r0".to_string()], 1389, 54, 18, 4, "gb200");
    let spec: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 1_000_000, "load": 0.9},
        "classes": [
            {"name": "dev", "kind": "dev", "share": 6, "size": {"dist": "empirical", "values": [1, 2, 4]},
             "duration_h": {"dist": "exponential", "mean": 0.5}},
            {"name": "train", "share": 3, "size": {"dist": "lognormal", "median": 64, "sigma": 1.5, "max": 4096},
             "duration_h": {"dist": "lognormal", "median": 2, "sigma": 1}},
            {"name": "nvl72", "share": 1, "segment": 72, "size": {"dist": "empirical", "values": [72, 144, 576]},
             "duration_h": {"dist": "lognormal", "median": 4, "sigma": 1}}
        ]
    }))
    .unwrap();
    let w = workload::generate(&spec, &t, 1);
    let p = preset("topology").unwrap();
    let o = myriad_sched::Options::default();
    b.bench(|| simulate(&t, &w, &p, &o).completed);
}
