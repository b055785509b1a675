//! `cargo bench -p myriad-netsim`: flow-level simulation of collectives on built clusters.
//! Speed bars (issue 6): one all-reduce on 4,096 GPUs well under 1 s (ASTRA-sim's
//! analytical backend: 340 s, 11.8 GiB); one 1 GiB all-reduce over 100,000 GPUs on a
//! 3-tier fat-tree with a failed spine switch under 10 s and 2 GiB.

use myriad_cluster::BuiltCluster;
use myriad_collective::{Algorithm, Op, Protocol};
use myriad_netsim::{
    flow_choice, strided, time_collective, Choice, Fault, FaultTarget, Network, SimOptions,
};

fn main() {
    divan::main();
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn cluster(name: &str, text: &str) -> BuiltCluster {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario(name, text, cat).expect("example parses");
    myriad_cluster::build(&s, cat).expect("example builds")
}

fn dgx4096() -> BuiltCluster {
    cluster(
        "netsim-dgx-h100-4096.yaml",
        include_str!("../../../examples/netsim-dgx-h100-4096.yaml"),
    )
}

fn ring(p: Protocol) -> Choice {
    Choice {
        algorithm: Algorithm::Ring,
        protocol: p,
        hier: Default::default(),
    }
}

/// Ring all-reduce of 1 GiB over all 4,096 GPUs (512 DGX H100, 3-tier NDR fat-tree):
/// 8,190 steps of 8,192 flows (one step simulated, the rest in steady state).
#[divan::bench]
fn ring_all_reduce_4096_gpus(bencher: divan::Bencher) {
    let c = dgx4096();
    let net = Network::from_cluster(&c);
    let ranks = strided(0, 4096, 1);
    bencher.bench(|| {
        time_collective(
            &net,
            Op::AllReduce,
            ring(Protocol::Simple),
            GIB,
            &ranks,
            &SimOptions::default(),
        )
        .unwrap()
        .0
        .time_s
    });
}

/// The same, including building the cluster and the simulated network.
#[divan::bench]
fn build_and_ring_all_reduce_4096_gpus(bencher: divan::Bencher) {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario(
        "netsim-dgx-h100-4096.yaml",
        include_str!("../../../examples/netsim-dgx-h100-4096.yaml"),
        cat,
    )
    .unwrap();
    let ranks = strided(0, 4096, 1);
    bencher.bench(|| {
        let c = myriad_cluster::build(&s, cat).unwrap();
        let net = Network::from_cluster(&c);
        time_collective(
            &net,
            Op::AllReduce,
            ring(Protocol::Simple),
            GIB,
            &ranks,
            &SimOptions::default(),
        )
        .unwrap()
        .0
        .time_s
    });
}

/// All-to-all of 64 MiB over 512 GPUs of the 4,096 (one per DGX): 261,632 flows, rated
/// max-min at every distinct finish time.
#[divan::bench]
fn all_to_all_512_gpus(bencher: divan::Bencher) {
    let c = dgx4096();
    let net = Network::from_cluster(&c);
    let ranks = strided(0, 512, 8);
    bencher.bench(|| {
        time_collective(
            &net,
            Op::AllToAll,
            Choice {
                algorithm: Algorithm::Direct,
                protocol: Protocol::Simple,
                hier: Default::default(),
            },
            64.0 * 1024.0 * 1024.0,
            &ranks,
            &SimOptions::default(),
        )
        .unwrap()
        .0
        .time_s
    });
}

/// All-to-all of 1 MiB over 384 GPUs of Alibaba's HPN pod (RoCE, hash ECMP): 147,072
/// flows on unevenly shared links, finishing at hundreds of distinct times (the CLI's
/// `collective examples/alibaba-hpn.yaml --op all-to-all --bytes 1MiB --group 0-383
/// --backend flow`; it took 40 s when every finish re-rated every flow).
#[divan::bench(sample_count = 10)]
fn roce_all_to_all_384_gpus(bencher: divan::Bencher) {
    let c = cluster(
        "alibaba-hpn.yaml",
        include_str!("../../../examples/alibaba-hpn.yaml"),
    );
    let net = Network::from_cluster(&c);
    let ranks = strided(0, 384, 1);
    let bytes = 1024.0 * 1024.0;
    let span = myriad_train::Plan::span(&c.levels, 384, 1);
    let choice = flow_choice(Op::AllToAll, Algorithm::Auto, bytes, &span, &c.levels);
    bencher.bench(|| {
        time_collective(
            &net,
            Op::AllToAll,
            choice,
            bytes,
            &ranks,
            &SimOptions::default(),
        )
        .unwrap()
        .0
        .time_s
    });
}

/// 1 GiB ring all-reduce over 100,000 H100 on a 3-tier XDR fat-tree with spine switch
/// 695 failing 5 ms in (examples/netsim-100k-fat-tree.yaml): 200,000 flows per step.
#[divan::bench(sample_count = 5)]
fn ring_all_reduce_100k_gpus_failed_spine(bencher: divan::Bencher) {
    let c = cluster(
        "netsim-100k-fat-tree.yaml",
        include_str!("../../../examples/netsim-100k-fat-tree.yaml"),
    );
    let net = Network::from_cluster(&c);
    let ranks = strided(0, c.accelerators, 1);
    let opts = SimOptions {
        faults: vec![Fault {
            at_s: 0.005,
            target: FaultTarget::Switch(695),
        }],
        ..Default::default()
    };
    bencher.bench(|| {
        time_collective(&net, Op::AllReduce, ring(Protocol::Ll), GIB, &ranks, &opts)
            .unwrap()
            .0
            .time_s
    });
}
