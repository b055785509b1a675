//! Explicit groups that no `GroupSpan` describes (`0-8` on 8-GPU domains: 8 members in one
//! domain, 1 in the next), timed by `time_group`.

mod common;

use common::*;
use myriad_cluster::Level;
use myriad_collective::{time, time_group, Algorithm, GroupSpan, Op, RankGroup};

fn range(a: u32, b: u32) -> Vec<u32> {
    (a..=b).collect()
}

/// Guards the group the analytical model times: `0-8` is 9 ranks (8 + 1 over two
/// domains), not the 16 of the smallest symmetric group that holds it, and its ring is
/// timed exactly (exact = true).
#[test]
fn uneven_group_is_counted_not_rounded() {
    let levels = dgx_h100_cluster(16);
    let g = RankGroup::new(&range(0, 8), &levels);
    assert_eq!(g.n, 9);
    assert_eq!(g.spans, vec![8, 2]);
    assert_eq!(g.units, vec![9, 2]);
    assert_eq!((g.fewest[1], g.most[1]), (1, 8));
    assert!(!g.is_symmetric());
    assert!(!g.holds_hierarchical());
    assert_eq!(g.span().size(), 16);
    let (t, exact) = time_group(Op::AllReduce, Algorithm::Ring, 1e9, &g, &levels).unwrap();
    assert!(exact);
    assert_eq!(t.algorithm, Algorithm::Ring);
    // Auto takes the tree: over two domains each of its two trees is one edge, so the
    // lone rank's NIC carries S each way, not the ring's 2·8/9 S.
    let (auto, _) = time_group(Op::AllReduce, Algorithm::Auto, 1e9, &g, &levels).unwrap();
    assert_eq!(auto.algorithm, Algorithm::Tree);
    assert!(auto.time_s < t.time_s);
    // The rank alone in its domain sends the ring's 2·8/9 S through its one NIC.
    let nic = 50.0 * 0.94; // ndr_cluster: GB/s per accelerator × efficiency
    let wire = 2.0 * 8.0 / 9.0 * 1e9 / (nic * 1e9);
    assert!(t.time_s > wire && t.time_s < wire * 1.01, "{t:?} vs {wire}");
    // Slower than the 16-rank symmetric group, whose crossings share 8 NICs.
    let sym = time(Op::AllReduce, Algorithm::Auto, 1e9, &g.span(), &levels).unwrap();
    assert!(t.time_s > 2.0 * sym.time_s);
}

/// Guards monotonicity in bytes on uneven groups: the protocol is chosen for the ring over
/// the ranks actually timed, so a larger message never takes less time.
#[test]
fn uneven_ring_is_monotone_in_bytes() {
    let levels = dgx_h100_cluster(16);
    for ranks in [range(0, 8), range(0, 20), vec![0, 1, 8, 16, 17, 18]] {
        let g = RankGroup::new(&ranks, &levels);
        assert!(!g.is_symmetric(), "{ranks:?}");
        for op in [
            Op::AllReduce,
            Op::AllGather,
            Op::ReduceScatter,
            Op::Broadcast,
        ] {
            let mut prev = 0.0;
            let mut b = 8.0;
            while b <= 4.0 * 1024f64.powi(3) {
                let (t, exact) = time_group(op, Algorithm::Auto, b, &g, &levels).unwrap();
                assert!(exact);
                assert!(
                    t.time_s >= prev,
                    "{op:?} {ranks:?} at {b} B: {} < {prev}",
                    t.time_s
                );
                prev = t.time_s;
                b *= 2.0;
            }
        }
    }
}

/// Guards that a symmetric explicit group is timed exactly as its span always was.
#[test]
fn symmetric_group_is_timed_on_its_span() {
    let levels = dgx_h100_cluster(16);
    for (ranks, spans) in [
        (range(0, 7), vec![8, 1]),
        (range(0, 15), vec![8, 2]),
        (vec![0, 8, 16, 24], vec![1, 4]),
    ] {
        let g = RankGroup::new(&ranks, &levels);
        assert!(g.is_symmetric());
        assert_eq!(g.span(), GroupSpan::new(spans.clone()));
        for alg in [Algorithm::Auto, Algorithm::Ring] {
            let (t, exact) = time_group(Op::AllReduce, alg, 3e6, &g, &levels).unwrap();
            let s = time(
                Op::AllReduce,
                alg,
                3e6,
                &GroupSpan::new(spans.clone()),
                &levels,
            )
            .unwrap();
            assert!(exact);
            assert_eq!(t, s);
        }
    }
}

/// Guards that `Auto` on an uneven group with the same members in every domain (ranks
/// 0-999 on 1,000 DGX H100 under 32-GPU leaves: the last leaf holds one domain) weighs
/// the hierarchical algorithm, not only the exact ring: at 1 GiB it is the faster (as on
/// the 1,024-GPU span) and Auto takes it; Auto is never slower than either, and stays
/// monotone in bytes.
#[test]
fn uneven_group_with_even_domains_weighs_hierarchical() {
    let leaf = Level {
        name: "leaf".into(),
        size: 32,
        ..ndr_cluster(32)
    };
    let levels = vec![hgx_h100_domain(), leaf, ndr_cluster(1000)];
    let g = RankGroup::new(&range(0, 999), &levels);
    assert!(!g.is_symmetric());
    assert!(g.holds_hierarchical());
    let mut prev = 0.0;
    let mut b = 8.0;
    let mut hier_taken = false;
    while b <= 4.0 * 1024f64.powi(3) {
        let (t, _) = time_group(Op::AllReduce, Algorithm::Auto, b, &g, &levels).unwrap();
        let (ring, exact) = time_group(Op::AllReduce, Algorithm::Ring, b, &g, &levels).unwrap();
        assert!(exact);
        let hier = time(
            Op::AllReduce,
            Algorithm::Hierarchical,
            b,
            &g.span(),
            &levels,
        )
        .unwrap();
        assert!(
            t.time_s <= ring.time_s.min(hier.time_s) * (1.0 + 1e-12),
            "{b} B"
        );
        assert!(t.time_s >= prev, "{b} B: {} < {prev}", t.time_s);
        hier_taken |= t.algorithm == Algorithm::Hierarchical;
        prev = t.time_s;
        b *= 2.0;
    }
    assert!(hier_taken);
    let (t, _) = time_group(Op::AllReduce, Algorithm::Auto, GIB, &g, &levels).unwrap();
    assert_eq!(t.algorithm, Algorithm::Hierarchical);
}

/// Guards that `Auto` weighs NCCL's tree on an uneven group (it runs on any set of nodes).
/// Ranks 0-1000 on 1,024 H100 under 32-GPU leaves (all latencies 2 µs): 125 full DGX and
/// rank 1000 alone in the next, so most[1] = 8, fewest[1] = 1, spans [8, 4, 32].
/// Tree: one way (8 − 1)·2 + log2(4)·2 + log2(32)·2 = 28 µs, Λ = 56 µs; the lone rank's
/// NIC carries the tree's 2S: W = 2 · 64 KiB / 47 GB/s / 0.9 = 3.10 µs; on LL
/// 5 + 0.35·56 + 3.10/0.36 = 33.2 µs. The exact ring: Λ = 2·2·((1001 − 126) +
/// (126 − 32) + (32 − 1)) = 4,000 µs, 1.4 ms on LL, which Auto took before. At 1 GiB the
/// ring's 2·1000/1001 S through the same NIC beats the tree's 2S/0.9.
#[test]
fn uneven_group_weighs_the_tree() {
    let leaf = Level {
        name: "leaf".into(),
        size: 32,
        ..ndr_cluster(32)
    };
    let levels = vec![hgx_h100_domain(), leaf, ndr_cluster(1024)];
    let g = RankGroup::new(&range(0, 1000), &levels);
    assert_eq!(g.spans, vec![8, 4, 32]);
    assert_eq!((g.fewest[1], g.most[1]), (1, 8));
    assert!(!g.holds_hierarchical());
    let b = 65536.0;
    let (t, exact) = time_group(Op::AllReduce, Algorithm::Auto, b, &g, &levels).unwrap();
    assert!(exact);
    assert_eq!(t.algorithm, Algorithm::Tree);
    let want_us = 5.0 + 0.35 * 56.0 + 2.0 * b / (50.0 * 0.94 * 1e3) / 0.9 / 0.36;
    assert!(
        (t.time_s * 1e6 - want_us).abs() < 1e-9 * want_us,
        "{} µs, want {want_us} µs",
        t.time_s * 1e6
    );
    let (tree, exact) = time_group(Op::AllReduce, Algorithm::Tree, b, &g, &levels).unwrap();
    assert!(exact);
    assert_eq!(tree, t);
    let (ring, _) = time_group(Op::AllReduce, Algorithm::Ring, b, &g, &levels).unwrap();
    assert!(ring.time_s > 1.4e-3, "{ring:?}");
    let (big, _) = time_group(Op::AllReduce, Algorithm::Auto, GIB, &g, &levels).unwrap();
    assert_eq!(big.algorithm, Algorithm::Ring);
}

/// Guards that an uneven ring counts whole channels on the NICs. Ranks 0-100 on DGX H100
/// nodes: 12 full domains and 5 ranks (96-100) in the 13th; NCCL runs C = 8 ring channels
/// (one per member of a full domain), each entering and leaving every domain through one
/// member's NIC, so in the 5-member domain 3 NICs carry 2 channels' crossings: 2/8 of
/// the ring's traffic, not 1/5. All-reduce of 1 GiB, Simple: W = 2 · 100/101 · S · (2/8)
/// / 47 GB/s = 11.310 ms (it was 1/5 of that traffic, 9.048 ms; the flow backend, which
/// runs the 8 channels, took 1.21× the old time), plus the launch, 5 µs, and Simple's
/// 1.25 × Λ, Λ = 2 · ((101 − 13) + (13 − 1)) · 2 µs = 400 µs: 11.815 ms (9.553 before).
#[test]
fn uneven_ring_counts_whole_channels_on_the_nics() {
    let levels = dgx_h100_cluster(16);
    let g = RankGroup::new(&range(0, 100), &levels);
    assert_eq!((g.fewest[1], g.most[1], g.units[1]), (5, 8, 13));
    let (t, exact) = time_group(Op::AllReduce, Algorithm::Ring, GIB, &g, &levels).unwrap();
    assert!(exact);
    assert_eq!(t.protocol, myriad_collective::Protocol::Simple);
    let wire = 2.0 * 100.0 / 101.0 * GIB * (2.0 / 8.0) / (50.0 * 0.94 * 1e9);
    let want = 5e-6 + 1.25 * 400e-6 + wire;
    assert!(
        (t.time_s / want - 1.0).abs() < 1e-9,
        "{} s, want {want} s",
        t.time_s
    );
}
