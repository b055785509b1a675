//! Search speed: configurations estimated per second on a 1,024-GPU and a 100,000-GPU cluster.
use myriad_search::{search, Fixed, Space};

fn main() {
    divan::main();
}

fn run(text: &str) -> u64 {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("bench.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let fixed = Fixed::from_spec(s.training.as_ref().unwrap(), s.cluster.count);
    search(&m, &c, &fixed, &Space::full(&m), 10, &|_, _| {}).evaluated
}

#[divan::bench(sample_count = 10)]
fn gpt3_175b_1024_a100() -> u64 {
    run("format: myriad/1\ncluster: {accelerator: a100-sxm-80gb, count: 1024, scale_out: {fabric: infiniband-hdr}}\nmodel: {preset: gpt3-175b}\ntraining: {global_batch: 1536, precision: bf16}\n")
}

#[divan::bench(sample_count = 10)]
fn llama3_405b_100k_gb200() -> u64 {
    run("format: myriad/1\ncluster: {accelerator: gb200, count: 100008, scale_out: {fabric: roce-800g}}\nmodel: {preset: llama3-405b}\ntraining: {global_batch: 16668, precision: fp8}\n")
}
