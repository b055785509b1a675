//! Model invariants: monotonicity, physical bounds, conservation, consistency between
//! algorithms, and errors.

mod common;

use common::*;
use myriad_cluster::Level;
use myriad_collective::{bus_factor, busbw_bound, time, Algorithm, CollectiveError, GroupSpan, Op};

const OPS: [Op; 6] = [
    Op::AllReduce,
    Op::AllGather,
    Op::ReduceScatter,
    Op::AllToAll,
    Op::Broadcast,
    Op::SendRecv,
];
const ALGS: [Algorithm; 6] = [
    Algorithm::Auto,
    Algorithm::Ring,
    Algorithm::Tree,
    Algorithm::Nvls,
    Algorithm::Hierarchical,
    Algorithm::Direct,
];

/// Three-level hierarchy: DGX H100 domain, 32-node leaf group, 2:1 oversubscribed spine
/// with SHARP.
fn three_levels() -> Vec<Level> {
    let mut leaf = ndr_cluster(8 * 32);
    leaf.name = "leaf".into();
    leaf.in_network_reduction = true;
    let mut top = ndr_cluster(8 * 32 * 16);
    top.gbps_per_accelerator = 25.0;
    top.latency_us = 3.0;
    top.in_network_reduction = true;
    vec![hgx_h100_domain(), leaf, top]
}

fn groups() -> Vec<GroupSpan> {
    [
        vec![1, 1, 1],
        vec![2, 1, 1],
        vec![8, 1, 1],
        vec![1, 2, 1],
        vec![4, 2, 1],
        vec![8, 32, 1],
        vec![1, 32, 16],
        vec![8, 4, 8],
        vec![2, 1, 16],
        vec![8, 32, 16],
    ]
    .into_iter()
    .map(GroupSpan::new)
    .collect()
}

fn sizes() -> Vec<f64> {
    let mut v = vec![0.0, 1.0];
    let mut b = 4.0;
    while b <= 64.0 * GIB {
        v.push(b);
        v.push(b * 1.5);
        b *= 4.0;
    }
    v
}

#[test]
fn time_is_monotone_in_bytes() {
    let levels = three_levels();
    for g in groups() {
        for op in OPS {
            for alg in ALGS {
                let mut prev = 0.0;
                for s in sizes() {
                    let Ok(r) = time(op, alg, s, &g, &levels) else {
                        break;
                    };
                    assert!(
                        r.time_s >= prev,
                        "{op:?} {alg:?} {:?} at {s}: {} < {prev}",
                        g.spans,
                        r.time_s
                    );
                    assert!(r.time_s.is_finite());
                    prev = r.time_s;
                }
            }
        }
    }
}

#[test]
fn busbw_within_physical_bound_and_consistent() {
    let levels = three_levels();
    let single = vec![hgx_h100_domain()];
    for (levels, groups) in [
        (&levels, groups()),
        (
            &single,
            vec![GroupSpan::new(vec![8]), GroupSpan::new(vec![3])],
        ),
    ] {
        for g in &groups {
            for op in OPS {
                let bound = busbw_bound(op, g, levels).unwrap();
                for alg in ALGS {
                    for s in sizes() {
                        let Ok(r) = time(op, alg, s, g, levels) else {
                            break;
                        };
                        assert!(
                            r.busbw_gbps <= bound * (1.0 + 1e-9),
                            "{op:?} {alg:?} {:?} {s}: {} > {bound}",
                            g.spans,
                            r.busbw_gbps
                        );
                        if r.time_s > 0.0 {
                            let alg_bw = s / r.time_s * 1e-9;
                            assert!((r.algbw_gbps - alg_bw).abs() <= 1e-9 * alg_bw);
                            let f = bus_factor(op, g.size());
                            assert!((r.busbw_gbps - f * alg_bw).abs() <= 1e-9 * alg_bw.max(1.0));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn auto_is_the_cheapest_valid_algorithm() {
    let levels = three_levels();
    for g in groups() {
        for op in OPS {
            for s in sizes() {
                let a = time(op, Algorithm::Auto, s, &g, &levels).unwrap();
                let mut found = false;
                for alg in &ALGS[1..] {
                    if let Ok(r) = time(op, *alg, s, &g, &levels) {
                        assert!(
                            a.time_s <= r.time_s,
                            "{op:?} {:?} {s}: auto {} > {alg:?} {}",
                            g.spans,
                            a.time_s,
                            r.time_s
                        );
                        if *alg == a.algorithm && r.time_s == a.time_s {
                            found = true;
                        }
                    }
                }
                assert!(
                    found,
                    "auto's pick {:?} is not one of the algorithms",
                    a.algorithm
                );
            }
        }
    }
}

#[test]
fn ring_all_reduce_conservation_and_rs_plus_ag() {
    let levels = three_levels();
    for g in groups() {
        let n = g.size() as f64;
        if n < 2.0 {
            continue;
        }
        for s in [1e3, 1e6, 1e9, 1e10] {
            let ar = time(Op::AllReduce, Algorithm::Ring, s, &g, &levels).unwrap();
            // Each rank sends 2(n-1)/n × bytes.
            assert!((ar.bytes_per_rank - 2.0 * (n - 1.0) / n * s).abs() <= 1e-9 * s);
            let rs = time(Op::ReduceScatter, Algorithm::Ring, s, &g, &levels).unwrap();
            let ag = time(Op::AllGather, Algorithm::Ring, s, &g, &levels).unwrap();
            assert!((rs.bytes_per_rank + ag.bytes_per_rank - ar.bytes_per_rank).abs() <= 1e-9 * s);
            // Same protocol: RS + AG = AR + one extra launch. The model may pick different
            // protocols for the halves, which can only make the halves cheaper. Each half
            // alone waits on the loop but its cheapest hop, where the all-reduce's one
            // pipeline skips its cheapest two consecutive hops: where no two of the
            // cheapest follow each other ([2, 1, 16]: each domain's hop is followed by a
            // top-level one), the halves pay one top-level hop more in place of one
            // domain hop (at most the Simple protocol's 1.25 × the top level's 3 µs).
            let sum = rs.time_s + ag.time_s;
            assert!(
                sum <= ar.time_s + 5.0e-6 + 1.25 * 3.0e-6 + 1e-12,
                "{:?} {s}: {sum} vs {}",
                g.spans,
                ar.time_s
            );
            if s >= 1e9 {
                assert!(
                    (sum / ar.time_s - 1.0).abs() < 0.02,
                    "{:?} {s}: {sum} vs {}",
                    g.spans,
                    ar.time_s
                );
            }
        }
    }
}

#[test]
fn bus_bandwidth_factors() {
    assert_eq!(bus_factor(Op::AllReduce, 8), 1.75);
    assert_eq!(bus_factor(Op::AllGather, 8), 0.875);
    assert_eq!(bus_factor(Op::ReduceScatter, 4), 0.75);
    assert_eq!(bus_factor(Op::AllToAll, 2), 0.5);
    assert_eq!(bus_factor(Op::Broadcast, 8), 1.0);
    assert_eq!(bus_factor(Op::SendRecv, 2), 1.0);
    assert_eq!(bus_factor(Op::AllReduce, 1), 0.0);
}

#[test]
fn monotone_in_outer_span() {
    // More units of the same shape never makes ring, tree, direct or broadcast faster.
    let levels = dgx_h100_cluster(512);
    for (op, alg) in [
        (Op::AllReduce, Algorithm::Ring),
        (Op::AllReduce, Algorithm::Tree),
        (Op::AllReduce, Algorithm::Hierarchical),
        (Op::AllGather, Algorithm::Ring),
        (Op::AllToAll, Algorithm::Direct),
        (Op::Broadcast, Algorithm::Ring),
        (Op::SendRecv, Algorithm::Direct),
    ] {
        for inner in [1u64, 2, 8] {
            for s in [8.0, 1e5, 1e8, 1e10] {
                let mut prev = 0.0;
                for nodes in [2u64, 3, 4, 8, 16, 64, 100, 512] {
                    let r = time(op, alg, s, &GroupSpan::new(vec![inner, nodes]), &levels);
                    let Ok(r) = r else { continue };
                    assert!(
                        r.time_s >= prev * (1.0 - 1e-12),
                        "{op:?} {alg:?} [{inner},{nodes}] {s}"
                    );
                    prev = r.time_s;
                }
            }
        }
    }
}

#[test]
fn trailing_levels_with_span_one_change_nothing() {
    let one = vec![hgx_h100_domain()];
    let three = three_levels();
    for op in OPS {
        for alg in ALGS {
            for s in [8.0, 1e6, 1e9] {
                let a = time(op, alg, s, &GroupSpan::new(vec![8]), &one);
                let b = time(op, alg, s, &GroupSpan::new(vec![8, 1, 1]), &three);
                match (a, b) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{op:?} {alg:?} {s}"),
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{op:?} {alg:?}: {a:?} vs {b:?}"),
                }
            }
        }
    }
}

#[test]
fn faster_links_never_slow_anything_and_bandwidth_term_scales() {
    let levels = three_levels();
    let mut fast = levels.clone();
    for l in &mut fast {
        l.gbps_per_accelerator *= 2.0;
    }
    for g in groups() {
        for op in OPS {
            for alg in ALGS {
                for s in [8.0, 1e6, 1e9, 1e11] {
                    let (Ok(a), Ok(b)) =
                        (time(op, alg, s, &g, &levels), time(op, alg, s, &g, &fast))
                    else {
                        continue;
                    };
                    assert!(b.time_s <= a.time_s);
                    if s >= 1e11 && a.time_s > 0.0 {
                        let ratio = a.time_s / b.time_s;
                        assert!(
                            ratio > 1.9 && ratio <= 2.0 + 1e-9,
                            "{op:?} {alg:?} {:?}: {ratio}",
                            g.spans
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn nothing_moves_for_one_rank_or_zero_bytes() {
    let levels = three_levels();
    let r = time(
        Op::AllReduce,
        Algorithm::Auto,
        1e9,
        &GroupSpan::new(vec![1, 1, 1]),
        &levels,
    )
    .unwrap();
    assert_eq!((r.time_s, r.algbw_gbps, r.busbw_gbps), (0.0, 0.0, 0.0));
    let r = time(
        Op::AllToAll,
        Algorithm::Auto,
        0.0,
        &GroupSpan::new(vec![8, 4, 1]),
        &levels,
    )
    .unwrap();
    assert_eq!(r.time_s, 0.0);
    assert_eq!(r.algorithm, Algorithm::Direct);
}

#[test]
fn small_messages_pay_base_latency() {
    let levels = three_levels();
    for g in groups().into_iter().filter(|g| g.size() > 1) {
        for op in OPS {
            let r = time(op, Algorithm::Auto, 8.0, &g, &levels).unwrap();
            assert!(r.time_s >= 5e-6, "{op:?} {:?}: {}", g.spans, r.time_s);
        }
    }
}

#[test]
fn errors_are_reported_not_panicked() {
    let levels = three_levels();
    let g = GroupSpan::new(vec![8, 2, 1]);
    let e = time(
        Op::AllReduce,
        Algorithm::Ring,
        1e6,
        &GroupSpan::new(vec![8, 2]),
        &levels,
    )
    .unwrap_err();
    assert_eq!(
        e,
        CollectiveError::SpanCount {
            spans: 2,
            levels: 3
        }
    );
    assert!(
        e.to_string().contains("2 entries") && e.to_string().contains("3 levels"),
        "{e}"
    );
    let e = time(
        Op::AllReduce,
        Algorithm::Ring,
        1e6,
        &GroupSpan::new(vec![16, 1, 1]),
        &levels,
    )
    .unwrap_err();
    assert_eq!(
        e,
        CollectiveError::SpanTooLarge {
            level: 0,
            span: 16,
            max: 8
        }
    );
    let e = time(
        Op::AllReduce,
        Algorithm::Ring,
        1e6,
        &GroupSpan::new(vec![8, 33, 1]),
        &levels,
    )
    .unwrap_err();
    assert_eq!(
        e,
        CollectiveError::SpanTooLarge {
            level: 1,
            span: 33,
            max: 32
        }
    );
    assert!(e.to_string().contains("only 32 level-0 units"), "{e}");
    let e = time(
        Op::AllReduce,
        Algorithm::Ring,
        1e6,
        &GroupSpan::new(vec![8, 0, 1]),
        &levels,
    )
    .unwrap_err();
    assert_eq!(e, CollectiveError::ZeroSpan { level: 1 });
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let e = time(Op::AllReduce, Algorithm::Ring, bad, &g, &levels).unwrap_err();
        assert!(matches!(e, CollectiveError::InvalidBytes { .. }), "{e}");
    }
    // A finite size whose traffic overflows (an all-reduce sends about twice its size) is
    // an error, not an infinite time reported as a result (`time_s: null` in JSON).
    for alg in [Algorithm::Auto, Algorithm::Ring, Algorithm::Hierarchical] {
        let e = time(Op::AllReduce, alg, 1.7e308, &g, &levels).unwrap_err();
        assert_eq!(e, CollectiveError::TooLarge { bytes: 1.7e308 }, "{alg:?}");
        assert!(e.to_string().contains("1.7e308 bytes is too large"), "{e}");
    }
    let t = time(Op::AllGather, Algorithm::Auto, 1.7e308, &g, &levels).unwrap();
    assert!(t.time_s.is_finite());
    // NVLS without in-network reduction, or across domains.
    let mut plain = levels.clone();
    plain[0].in_network_reduction = false;
    let e = time(
        Op::AllReduce,
        Algorithm::Nvls,
        1e6,
        &GroupSpan::new(vec![8, 1, 1]),
        &plain,
    )
    .unwrap_err();
    assert!(e.to_string().contains("no in-network reduction"), "{e}");
    assert!(time(Op::AllReduce, Algorithm::Nvls, 1e6, &g, &levels).is_err());
    // Unknown combinations.
    for (op, alg) in [
        (Op::AllToAll, Algorithm::Ring),
        (Op::AllGather, Algorithm::Tree),
        (Op::AllReduce, Algorithm::Direct),
        (Op::Broadcast, Algorithm::Nvls),
        (Op::SendRecv, Algorithm::Hierarchical),
    ] {
        let e = time(op, alg, 1e6, &g, &levels).unwrap_err();
        assert!(
            matches!(e, CollectiveError::Unsupported { .. }),
            "{op:?} {alg:?}: {e}"
        );
    }
    // Hierarchical needs several members per domain and several domains.
    assert!(time(
        Op::AllReduce,
        Algorithm::Hierarchical,
        1e6,
        &GroupSpan::new(vec![1, 2, 1]),
        &levels
    )
    .is_err());
    assert!(time(
        Op::AllReduce,
        Algorithm::Hierarchical,
        1e6,
        &GroupSpan::new(vec![8, 1, 1]),
        &levels
    )
    .is_err());
    // Bad levels.
    let mut bad = levels.clone();
    bad[1].efficiency = 0.0;
    assert!(matches!(
        time(Op::AllReduce, Algorithm::Ring, 1e6, &g, &bad).unwrap_err(),
        CollectiveError::InvalidLevel { level: 1, .. }
    ));
    let mut bad = levels.clone();
    bad[1].size = 4;
    assert!(time(Op::AllReduce, Algorithm::Ring, 1e6, &g, &bad)
        .unwrap_err()
        .to_string()
        .contains("smaller than the level below"));
    assert_eq!(
        time(
            Op::AllReduce,
            Algorithm::Ring,
            1e6,
            &GroupSpan::new(vec![]),
            &[]
        )
        .unwrap_err(),
        CollectiveError::NoLevels
    );
}
