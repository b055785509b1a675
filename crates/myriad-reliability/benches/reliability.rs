//! Monte Carlo speed: 1,000 replicas of 54 days of the Llama 3 405B job on 16,384 H100
//! (the bar: under 5 s on 2 cores).
use myriad_reliability::{monte_carlo, setup, Horizon};

fn main() {
    divan::main();
}

const LLAMA3: &str = include_str!("../../../examples/reliability-llama3.yaml");

#[divan::bench(sample_count = 5)]
fn llama3_16k_54_days_1000_replicas(b: divan::Bencher) {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("bench.yaml", LLAMA3, cat).unwrap();
    let su = setup(&s, cat).unwrap();
    let policy = su.checkpoint.policy(su.young_daly_s());
    b.bench(|| monte_carlo(&su.job, &policy, Horizon::Window(54.0 * 86400.0), 1, 1000).len());
}

#[divan::bench(sample_count = 3)]
fn llama3_16k_54_days_full_analysis_1000_replicas(b: divan::Bencher) {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("bench.yaml", LLAMA3, cat).unwrap();
    let su = setup(&s, cat).unwrap();
    let o = myriad_reliability::Options {
        days: Some(54.0),
        replicas: 1000,
        seed: 1,
    };
    b.bench(|| {
        myriad_reliability::analyze(&su, &o)
            .unwrap()
            .summary
            .unexpected
    });
}
