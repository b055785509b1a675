//! Scheduling speed. Bars: the openb replay (1,523 nodes, 8,152 tasks) under 2 s; a
//! synthetic 100,000-accelerator cluster with 1,000,000 jobs under 60 s (2 cores).
use myriad_scenario::scheduling::SchedulingSpec;
use myriad_sched::{setup, simulate};

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

/// `examples/sched-nvl72-100k.yaml`: 100,008 GB200 (NVL72: 18 nodes of 4 per domain, pods of
/// 54 domains), 1,000,000 jobs at offered load 0.9, FIFO + EASY backfill with topology-aware
/// placement. The workload is generated once, outside the timed loop.
#[divan::bench(sample_count = 1)]
fn synthetic_100k_accelerators_1m_jobs(b: divan::Bencher) {
    let text = include_str!("../../../examples/sched-nvl72-100k.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("sched-nvl72-100k.yaml", text, cat).unwrap();
    let su = setup::from_scenario(&s, cat, "sched-nvl72-100k.yaml", None, None, None).unwrap();
    assert_eq!(su.topology.gpus(), 100_008);
    assert_eq!(su.workload.jobs.len(), 1_000_000);
    b.bench(|| simulate(&su.topology, &su.workload, &su.policies[0], &su.options).completed);
}
