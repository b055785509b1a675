//! Builds one scenario file and prints the build time and graph size; for measuring peak
//! memory: `/usr/bin/time -v target/release/examples/build_scenario examples/gb200-nvl72-100k.yaml`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: build_scenario FILE");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario(&path, &text, cat).unwrap_or_else(|e| panic!("{e}"));
    let t = Instant::now();
    let b = myriad_cluster::build(&s, cat).unwrap_or_else(|e| panic!("{path}: {e}"));
    let dt = t.elapsed();
    println!(
        "{path}: {} accelerators, {} switches, {} link bundles, {} vertices, built in {:.2} ms",
        b.accelerators,
        b.topology.switches.len(),
        b.topology.links.len(),
        b.topology.vertices(),
        dt.as_secs_f64() * 1e3
    );
}
