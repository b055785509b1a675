//! Time one collective with the flow backend and print the simulator's own figures, for
//! measuring speed and peak memory outside the CLI:
//!
//! ```sh
//! cargo build --release -p myriad-netsim --example collective
//! /usr/bin/time -v target/release/examples/collective examples/netsim-dgx-h100-4096.yaml all-reduce 4096 1 1GiB
//! ```
//!
//! Arguments: SCENARIO OP (all-reduce, all-gather, reduce-scatter, all-to-all, send-recv)
//! N STRIDE (the group: N ranks 0, STRIDE, 2·STRIDE, …) BYTES (e.g. 1GiB) [ALGORITHM]
//! (auto, ring, tree, hierarchical, direct, nvls; default auto). The scenario's
//! `cluster.faults` apply; `NO_SKIP=1` simulates every ring step.

use myriad_collective::{Algorithm, Op};
use myriad_netsim::{
    flow_choice, strided, time_collective, Fault, FaultTarget, Network, SimOptions,
};

fn bytes(s: &str) -> f64 {
    for (suf, m) in [
        ("GiB", 1u64 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
        ("B", 1),
    ] {
        if let Some(n) = s.strip_suffix(suf) {
            return n.parse::<f64>().expect("size") * m as f64;
        }
    }
    s.parse().expect("size")
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 6 && a.len() != 7 {
        eprintln!("usage: collective SCENARIO OP N STRIDE BYTES [ALGORITHM]");
        std::process::exit(2);
    }
    let op = match a[2].as_str() {
        "all-reduce" => Op::AllReduce,
        "all-gather" => Op::AllGather,
        "reduce-scatter" => Op::ReduceScatter,
        "all-to-all" => Op::AllToAll,
        "send-recv" => Op::SendRecv,
        o => panic!("op {o}"),
    };
    let (n, stride, size): (u64, u64, f64) =
        (a[3].parse().unwrap(), a[4].parse().unwrap(), bytes(&a[5]));
    let t0 = std::time::Instant::now();
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario(&a[1], &text, cat).unwrap_or_else(|e| panic!("{e}"));
    let c = myriad_cluster::build(&s, cat).unwrap();
    let net = Network::from_cluster(&c);
    let built = t0.elapsed();
    let faults = s
        .cluster
        .faults
        .iter()
        .map(|f| Fault {
            at_s: f.at_s,
            target: match (f.link, f.switch, f.nic, f.domain) {
                (Some(l), ..) => FaultTarget::Link(l),
                (_, Some(x), ..) => FaultTarget::Switch(x),
                (_, _, Some(p), _) => FaultTarget::Nic(p),
                (.., Some(d)) => FaultTarget::Domain(d),
                _ => unreachable!("checked"),
            },
        })
        .collect();
    let span = myriad_train::Plan::span(&c.levels, n, stride);
    let algo = match a.get(6).map(|s| s.as_str()).unwrap_or("auto") {
        "ring" => Algorithm::Ring,
        "tree" => Algorithm::Tree,
        "hierarchical" => Algorithm::Hierarchical,
        "direct" => Algorithm::Direct,
        "nvls" => Algorithm::Nvls,
        _ => Algorithm::Auto,
    };
    let choice = flow_choice(op, algo, size, &span, &c.levels);
    let opts = SimOptions {
        faults,
        no_skip: std::env::var("NO_SKIP").is_ok(),
        ..Default::default()
    };
    let t1 = std::time::Instant::now();
    let (f, _) = time_collective(&net, op, choice, size, &strided(0, n, stride), &opts).unwrap();
    let simulated = t1.elapsed();
    let an = myriad_collective::time(op, algo, size, &span, &c.levels).unwrap();
    println!(
        "{:?} {:?}/{:?} of {size} B on {n} ranks: flow {:.6} s (busbw {:.2} GB/s), analytical {:.6} s ({:?}/{:?})",
        op, f.algorithm, f.protocol, f.time_s, f.busbw_gbps, an.time_s, an.algorithm, an.protocol
    );
    println!(
        "flows simulated {}, in all {}, steps in steady state {}, events {}, rate updates {}, flows re-rated {}, reroutes {}",
        f.sim.flows_simulated,
        f.sim.flows_total,
        f.sim.steps_skipped,
        f.sim.events,
        f.sim.rate_updates,
        f.sim.flows_rerated,
        f.sim.reroutes
    );
    println!(
        "variant {:?}; wall: cluster + network {built:?}, simulation {simulated:?}",
        f.variant
    );
}
