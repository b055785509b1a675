//! Cost of one `time()` call (called ~100 times per training-step estimate).

use divan::{black_box, Bencher};
use myriad_cluster::Level;
use myriad_collective::{time, Algorithm, GroupSpan, Op};

fn main() {
    divan::main();
}

fn levels() -> Vec<Level> {
    let l = |name: &str, size, gbps, lat, eff, inr| Level {
        name: name.into(),
        size,
        gbps_per_accelerator: gbps,
        latency_us: lat,
        efficiency: eff,
        in_network_reduction: inr,
        pxn_us: 0.0,
    };
    vec![
        l("domain", 8, 450.0, 2.0, 0.8, true),
        l("island", 1024, 50.0, 2.5, 0.94, false),
        l("cluster", 16384, 25.0, 3.5, 0.94, false),
    ]
}

#[divan::bench(args = [
    ("all-reduce auto tp8", Op::AllReduce, [8, 1, 1]),
    ("all-reduce auto dp512", Op::AllReduce, [1, 128, 4]),
    ("all-reduce auto 8x128x4", Op::AllReduce, [8, 128, 4]),
    ("all-gather auto 8x16", Op::AllGather, [8, 16, 1]),
    ("all-to-all auto ep64", Op::AllToAll, [8, 8, 1]),
    ("send-recv auto pp", Op::SendRecv, [1, 2, 1]),
])]
fn time_auto(b: Bencher, (_, op, spans): (&str, Op, [u64; 3])) {
    let levels = levels();
    let g = GroupSpan::new(spans.to_vec());
    let mut bytes = 1.0e3;
    b.bench_local(|| {
        bytes = if bytes > 1e10 { 1.0e3 } else { bytes * 1.7 };
        time(
            black_box(op),
            Algorithm::Auto,
            black_box(bytes),
            black_box(&g),
            black_box(&levels),
        )
    });
}

#[divan::bench]
fn time_ring_all_reduce(b: Bencher) {
    let levels = levels();
    let g = GroupSpan::new(vec![8, 128, 4]);
    b.bench_local(|| {
        time(
            Op::AllReduce,
            Algorithm::Ring,
            black_box(1.0e8),
            black_box(&g),
            black_box(&levels),
        )
    });
}
