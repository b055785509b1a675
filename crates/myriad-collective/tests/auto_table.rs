//! Prints what `Auto` picks across sizes and placements on DGX H100 clusters (run with
//! `--nocapture`), and checks the broad shape of NCCL's choices.

mod common;

use common::*;
use myriad_collective::{time, Algorithm, GroupSpan, Op};

#[test]
fn auto_choices_table() {
    let levels = dgx_h100_cluster(128);
    let groups: [(&str, Vec<u64>); 5] = [
        ("tp8", vec![8, 1]),
        ("2 nodes", vec![8, 2]),
        ("16 nodes", vec![8, 16]),
        ("dp128 (1/node)", vec![1, 128]),
        ("128 nodes", vec![8, 128]),
    ];
    for op in [Op::AllReduce, Op::AllGather] {
        println!("\n{op:?}: time us / busbw GB/s / algorithm-protocol");
        print!("{:>10}", "bytes");
        for (name, _) in &groups {
            print!(" {name:>30}");
        }
        println!();
        let mut s = 1024.0;
        while s <= 16.0 * GIB {
            print!("{:>10}", s as u64);
            for (_, spans) in &groups {
                let r = time(
                    op,
                    Algorithm::Auto,
                    s,
                    &GroupSpan::new(spans.clone()),
                    &levels,
                )
                .unwrap();
                let tag = format!("{:?}-{:?}", r.algorithm, r.protocol);
                print!(" {:>9.1} {:>6.1} {:>13}", r.time_s * 1e6, r.busbw_gbps, tag);
            }
            println!();
            s *= 8.0;
        }
    }
    // Broad shape: tree for small all-reduces at 128 nodes, NVLS for large in one node.
    let g = GroupSpan::new(vec![8, 128]);
    let r = time(Op::AllReduce, Algorithm::Auto, 32.0 * 1024.0, &g, &levels).unwrap();
    assert!(
        matches!(r.algorithm, Algorithm::Tree | Algorithm::Hierarchical),
        "{r:?}"
    );
}
