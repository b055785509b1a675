//! Collective algorithms (ring, tree, NVLS, hierarchical, direct all-to-all) timed
//! analytically on the cluster hierarchy (`myriad_cluster::Level`).
//!
//! Conventions follow nccl-tests PERFORMANCE.md: `bytes` is the per-rank buffer size as
//! nccl-tests counts it (all-reduce: the buffer; all-gather: the output; reduce-scatter:
//! the input; all-to-all: the per-rank send buffer in total; broadcast and send-recv: the
//! message); algbw = bytes / time; busbw = algbw × [`bus_factor`] (all-reduce 2(n-1)/n,
//! all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast and send-recv 1).
//!
//! # The model
//!
//! Every algorithm reduces to three numbers computed from the group's placement:
//!
//! - `Λ`, the latency-weighted step count: Σ over the algorithm's sequential steps of the
//!   one-way latency (`Level::latency_us`) of the level the step crosses;
//! - `W`, the bandwidth term: the bytes that cross the busiest link class per rank divided
//!   by that link's effective bandwidth (`gbps_per_accelerator × efficiency`), maximised
//!   over the levels the group crosses (levels work concurrently, so the slowest wins);
//! - a fixed setup cost (only the in-network-reduction algorithms have one).
//!
//! A protocol (NCCL's LL, LL128, Simple; see [`Protocol`]) turns them into a time:
//!
//! ```text
//! time = LAUNCH_US + fixed + hop(p) · Λ + W / bw(p)
//! ```
//!
//! and, as NCCL's tuner does, the protocol with the smallest predicted time is used. This
//! is a latency term plus a bandwidth term with a protocol switch: LL wins for small
//! messages (cheap steps, a third of the bandwidth), Simple for large ones.
//!
//! ## Where traffic goes (level accounting)
//!
//! Level 0 is the scale-up domain (NVLink); levels ≥ 1 are scale-out, reached through the
//! accelerator's NIC, so traffic that leaves the level-(i-1) unit uses the links of every
//! level from 1 up to where it meets its peer. `spans` give `P_i = Π_{j≥i} spans[j]`, the
//! number of level-(i-1) units the group touches (`P_0 = n`), and `m_i = n / P_i`, the
//! group members inside one level-(i-1) unit. NCCL builds one ring (channel) per NIC and
//! rotates which member leaves the unit, so the members of a unit share the crossings: a
//! ring crosses out of each level-(i-1) unit once, i.e. a fraction `P_i / n = 1/m_i` of a
//! rank's ring traffic uses level-i links, with `m_i` NICs of the unit carrying it. This is
//! why the all-reduce bus bandwidth of DGX nodes (8 GPUs, 8 NICs) across nodes is 8 × the
//! per-NIC figure — the NCCL maintainers' "46-48 GB/s per NDR NIC", and DGX-1's 48 GB/s
//! with 4 × 100G NICs (4 × 12.2 GB/s).
//!
//! # Example
//!
//! ```
//! use myriad_cluster::Level;
//! use myriad_collective::{time, Algorithm, GroupSpan, Op};
//!
//! // One DGX H100 (hgx-h100 catalog numbers) on an NDR fabric of 16 nodes.
//! let levels = vec![
//!     Level { name: "domain".into(), size: 8, gbps_per_accelerator: 450.0, latency_us: 2.0,
//!             efficiency: 0.80, in_network_reduction: true, pxn_us: 0.0 },
//!     Level { name: "cluster".into(), size: 128, gbps_per_accelerator: 50.0, latency_us: 2.0,
//!             efficiency: 0.94, in_network_reduction: false, pxn_us: 0.0 },
//! ];
//! let tp = GroupSpan::new(vec![8, 1]);
//! let r = time(Op::AllReduce, Algorithm::Auto, 8.0 * 1024.0 * 1024.0 * 1024.0, &tp, &levels)?;
//! assert_eq!(r.algorithm, Algorithm::Nvls);
//! assert!((r.busbw_gbps - 480.0).abs() < 10.0);
//! # Ok::<(), myriad_collective::CollectiveError>(())
//! ```
//!
//! Invariants: pure functions, no allocation on the timing path; time is monotone
//! non-decreasing in bytes, and for ring, tree, direct and broadcast in the span of the
//! outermost level (more units of the same shape); busbw never exceeds [`busbw_bound`].

use myriad_cluster::Level;
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    SendRecv,
}

/// Collective algorithms. Each variant's doc gives its cost, in the notation of the crate
/// docs (`S` = bytes, `n` = group size, `bw_i` = effective bandwidth of level i, `lat_i` =
/// its latency, `P_i`, `m_i` as above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Pick what NCCL's tuner would: the cheapest valid algorithm and protocol for this op,
    /// size and placement (NVLS inside an NVLS domain for large all-reduces, ring vs tree by
    /// size and node count, hierarchical for multi-level groups when it wins). The result
    /// names the algorithm chosen.
    Auto,
    /// Ring (all-reduce, all-gather, reduce-scatter, broadcast). All-reduce is a
    /// reduce-scatter then an all-gather: 2(n-1) steps of S/n each, so each rank sends
    /// `2(n-1)/n · S`; all-gather and reduce-scatter n-1 steps, `(n-1)/n · S`; broadcast is
    /// a pipelined chain, n-1 steps, `S` per rank.
    ///
    /// `Λ` is the longest chain of consecutive hops one chunk travels around the closed
    /// loop, which leaves every level-(i-1) unit once (`P_i − P_{i+1}` hops at level i, the
    /// outermost level's `P_top` including the hop that closes the loop): the loop but its
    /// cheapest hop for all-gather and reduce-scatter (`n − 1` steps), twice the loop but
    /// its cheapest two consecutive hops for all-reduce (`2(n − 1)` steps; across two sites
    /// both DCI hops twice, as NCCL's tuner counts `2 · nNodes` network steps), the loop but
    /// the hop into the root for broadcast; `W = sent · max_i(f_i / bw_i)` with `f_0 = 1 − P_1/n` (or 1 in a
    /// single domain) and `f_i = P_i / n` for scale-out levels: the slowest level crossed
    /// limits the ring, with each unit's `m_i` NICs sharing its crossings. Steps are
    /// charged at the latency of the level each one crosses (as NCCL's tuner does: intra-
    /// node steps at NVLink latency, inter-node steps at network latency), not all at the
    /// slowest level's. With several members in each domain, a crossing on a rail fabric
    /// also pays the level's `pxn_us`: each channel enters a domain at one member (through
    /// that member's NIC, on its rail) and leaves it from another, which sends through the
    /// NIC on the next domain's entry rail over the scale-up fabric (NCCL's PXN).
    Ring,
    /// NCCL's double binary tree (all-reduce only): a chain inside the domain, two
    /// complementary binary trees across domains, reduce up then broadcast down, pipelined.
    /// Each rank sends about `2S`; `Λ = 2 · ((spans[0] − 1) · lat_0 + Σ_{i≥1} log2(spans[i])
    /// · lat_i + lat_top − lat_low)` — logarithmic in the number of nodes, which is why NCCL
    /// uses it for small and medium all-reduces at large node counts; the trees follow the
    /// domains' order, so their longest root path crosses the outermost level once more and
    /// the lowest scale-out level once less than a tree built level by level would
    /// (`tree_outer_extra`: a tree over two sites crosses the DCI twice each way). `W = S · max_i(b_i · g_i / bw_i) /
    /// TREE_BANDWIDTH_FACTOR`, `g_0 = 1` (the chain), `g_i = P_i / n`, `b_0 = 2` (a member
    /// in the middle of the chain sends up and down; 1 for a chain of two, which has no
    /// middle: [`tree_chain_factor`]) and `b_i` the trees' busiest NIC over
    /// the `P_1` domains ([`tree_fanout_factor`]: 2 from four domains, 3/2 over three, 1
    /// over two, where each tree is one edge). For large n its bus bandwidth is within
    /// `TREE_BANDWIDTH_FACTOR` of the ring's; with two members it degenerates to the
    /// two-rank ring's `S` each way.
    Tree,
    /// In-switch reduction (NVLink SHARP) inside one scale-up domain whose level has
    /// `in_network_reduction` (all-reduce, all-gather, reduce-scatter). All-reduce is a
    /// multimem load-reduce of each rank's shard (each rank's whole buffer goes up once,
    /// its reduced S/n shard comes down) then a multicast store of the shard (S/n up, the
    /// whole buffer S down): `S · (1 + 1/n)` per direction per rank instead of the ring's
    /// `2S(n-1)/n`, so bus bandwidth can exceed the per-direction link rate (physical
    /// limit `2(n-1)/(n+1) · link`). All-gather and reduce-scatter move `S` in their busy
    /// direction. `W = S·(1+1/n) / (bw_0 · NVLS_BANDWIDTH_FACTOR)`, `Λ = 2 · lat_0`, plus
    /// `NVLS_FIXED_US`; Simple protocol only.
    Nvls,
    /// Two-level (all-reduce, all-gather, reduce-scatter) for groups with several members
    /// per domain spanning several domains: reduce-scatter inside the domain, all-reduce of
    /// the `S / spans[0]` shard across domains (one sub-group per local rank, each on its
    /// own NIC), all-gather inside the domain. The inner phases use a ring or, with
    /// in-network reduction, NVLS (NCCL's NVLSTree); the outer phase a ring, a tree or, when
    /// every outer level crossed has in-network reduction, a SHARP-style in-network
    /// all-reduce (NCCL's CollNet). NCCL pipelines the phases (they use different links),
    /// so `W = max(W_inner, W_outer)`, `Λ = Λ_inner + Λ_outer`.
    Hierarchical,
    /// Point-to-point (all-to-all, send-recv). All-to-all: each rank sends S/n to every
    /// rank; the time of level i is the data that leaves each rank's level-(i-1) unit over
    /// its bandwidth — level 0 carries `S·(spans[0]−1)/n`, scale-out level i carries
    /// `S·(1 − 1/P_i)` — maximised over levels; an oversubscribed level (lower
    /// `gbps_per_accelerator`) pays the oversubscription in full. Latency: the farthest
    /// peer's one-way latency plus `Σ_peers lat / P2P_CONCURRENCY` (NCCL keeps several
    /// peers in flight), each peer's `lat` the issue latency of its link kind: the
    /// domain's, or the nearest scale-out level's for any scale-out peer. Send-recv: each rank sends S to its successor (nccl-tests
    /// sendrecv); the pair meets at the outermost level crossed, `W = S / min(bw_i)` over
    /// the levels on its path, `Λ = lat` of that level.
    Direct,
}

/// NCCL's wire protocols. `hop` multiplies `Level::latency_us` per sequential step; `bw`
/// multiplies the effective bandwidth. See [`PROTOCOLS`] for the values and their basis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// 8-byte stores carrying 4 bytes of data and a 4-byte flag: no fences, lowest latency,
    /// at most half the link rate.
    Ll,
    /// 128-byte lines with 120 bytes of data: near-full bandwidth, moderate latency.
    Ll128,
    /// Bulk copies with a fence and flag handshake per chunk: full bandwidth, the highest
    /// per-step latency.
    Simple,
}

impl Op {
    /// The op as the command line takes it and every output spells it (`all-reduce`).
    pub fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "all-reduce",
            Op::AllGather => "all-gather",
            Op::ReduceScatter => "reduce-scatter",
            Op::AllToAll => "all-to-all",
            Op::Broadcast => "broadcast",
            Op::SendRecv => "send-recv",
        }
    }
}

impl Algorithm {
    /// The algorithm as `--algorithm` takes it and every output spells it (`ring`, `nvls`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Auto => "auto",
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Nvls => "nvls",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Direct => "direct",
        }
    }
}

impl Protocol {
    /// The protocol as every output spells it: lowercase, as the algorithms are, and as
    /// `NCCL_PROTO` takes it (case-insensitively): `ll`, `ll128`, `simple`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "ll",
            Protocol::Ll128 => "ll128",
            Protocol::Simple => "simple",
        }
    }
}

/// One protocol's latency and bandwidth multipliers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProtocolCost {
    pub protocol: Protocol,
    /// Per-step latency as a multiple of the level's `latency_us`.
    pub hop: f64,
    /// Bandwidth as a fraction of the level's effective bandwidth (Simple = 1).
    pub bw: f64,
}

/// Kernel launch plus NCCL's per-collective setup, µs. Calibration, with [`PROTOCOLS`],
/// against the DGX H100 `all_reduce_perf` curve (collective-public.json): the smallest
/// all-reduce (8 B) takes 13.0-13.7 µs = launch + 14 ring steps of LL.
pub const LAUNCH_US: f64 = 5.0;

/// LL, LL128, Simple. Basis: payload fractions (LL 4/8, LL128 120/128, Simple 1) times the
/// throughput each reaches, and step latencies in NCCL's proportions (LL ≪ LL128 < Simple),
/// scaled so that — with hgx-h100's catalog `latency_us` = 2.0, `collective_efficiency` =
/// 0.80 — the DGX H100 all-reduce curve is reproduced: ≤ 512 KiB on LL (≈ 14.8 µs + S/74
/// GB/s), 2-8 MiB on LL128, 16 MiB on Simple, ≥ 32 MiB on NVLS (tests/dgx_h100.rs prints
/// the table).
pub const PROTOCOLS: [ProtocolCost; 3] = [
    ProtocolCost {
        protocol: Protocol::Ll,
        hop: 0.35,
        bw: 0.36,
    },
    ProtocolCost {
        protocol: Protocol::Ll128,
        hop: 0.9,
        bw: 0.89,
    },
    ProtocolCost {
        protocol: Protocol::Simple,
        hop: 1.25,
        bw: 1.0,
    },
];

const SIMPLE: ProtocolCost = PROTOCOLS[2];

/// NVLS (in-switch reduction) bandwidth as a fraction of the level's ring-effective
/// bandwidth (`gbps_per_accelerator × efficiency`). Hardware calibration for hgx-h100
/// (450 GB/s, efficiency 0.80): the measured DGX H100 all-reduce plateau is 274.3 GB/s
/// algbw (480 GB/s busbw) at 8-16 GiB; with `S·(1 + 1/8)` bytes per direction that is
/// 274.3 × 1.125 / (450 × 0.80) = 0.857 of the ring-effective bandwidth (0.686 of line
/// rate) — the NVSwitch reduction/multicast engines, not the links, set it. Proposed
/// catalog field: `scale_up.nvls_efficiency` (fraction of line rate, 0.686 for hgx-h100).
pub const NVLS_BANDWIDTH_FACTOR: f64 = 0.858;

/// Fixed cost of an in-network-reduction collective (multicast object synchronisation
/// across the domain and the fill of NVLS's deep Simple pipeline), µs. Hardware
/// calibration: the DGX H100 curve reaches only 400 GB/s busbw at 128 MiB and 437 at 512
/// MiB ("256 MB is too small to reach peak"), i.e. ≈ 75 µs of fixed time in total at
/// 32 MiB - 512 MiB, of which LAUNCH_US and 2 Simple steps are 10 µs. Proposed catalog
/// field: `scale_up.nvls_latency_us` (65 for hgx-h100). Also used, uncalibrated, for
/// scale-out in-network reduction (SHARP).
pub const NVLS_FIXED_US: f64 = 65.0;

/// Tree bandwidth relative to the ideal `2S` per rank (NCCL's tuning model applies 0.9 to
/// tree bandwidth; trees pipeline less evenly than rings).
pub const TREE_BANDWIDTH_FACTOR: f64 = 0.9;

/// Peers NCCL keeps in flight in an all-to-all (its p2p schedule runs up to 8 peers per
/// round across channels). Uncalibrated.
pub const P2P_CONCURRENCY: f64 = 8.0;

/// The latency, µs, NCCL pays to issue one point-to-point peer of an all-to-all: the
/// scale-up domain's for a peer in the sender's domain, else the nearest scale-out
/// level's (NIC, one switch and its cables); a farther peer's extra hops are in flight
/// while the next message is issued. Both backends charge it (`Network::peer_issue_latency`
/// in the flow simulation). 0 where the hierarchy has no such level.
pub fn peer_issue_latency_us(levels: &[Level], same_domain: bool) -> f64 {
    let i = if same_domain { 0 } else { 1 };
    levels.get(i).map_or(0.0, |l| l.latency_us)
}

/// How a group of ranks lies on the hierarchy. `spans[i]` is the number of distinct
/// level-(i-1) units (accelerators for i = 0) that the group touches inside one level-i
/// unit; `spans.len() == levels.len()` and the product of spans is the group size.
/// Example on HGX H100 (levels: domain 8, island 1024, cluster 4096): a TP group of 8 is
/// `[8, 1, 1]`; the DP group of a TP=8 job on 4096 GPUs is `[1, 128, 4]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupSpan {
    pub spans: Vec<u64>,
}

impl GroupSpan {
    pub fn new(spans: Vec<u64>) -> Self {
        Self { spans }
    }

    pub fn size(&self) -> u64 {
        self.spans.iter().product()
    }
}

/// An explicit group of ranks (accelerator ids) as it lies on the hierarchy, counted
/// exactly. A [`GroupSpan`] describes only symmetric groups (the same number of members in
/// every unit it touches); `0-8` on 8-accelerator domains is 8 members in one domain and 1
/// in the next, which no span describes: the smallest symmetric group that holds it
/// ([`RankGroup::span`]) has 16 ranks. [`time_group`] times a ring over exactly these
/// ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankGroup {
    /// Number of ranks.
    pub n: u64,
    /// `spans[i]`: the most level-(i-1) units the group touches inside one level-i unit,
    /// i.e. the spans of the smallest symmetric group that holds it.
    pub spans: Vec<u64>,
    /// `units[i]`: the level-(i-1) units the group touches in all (`units[0] = n`), the
    /// counted `P_i` of the crate docs.
    pub units: Vec<u64>,
    /// `fewest[i]`, `most[i]`: the fewest and the most members of the group in one touched
    /// level-(i-1) unit (1 at level 0).
    pub fewest: Vec<u64>,
    pub most: Vec<u64>,
}

impl RankGroup {
    /// The group of `ranks` (any order; each once) on `levels`.
    pub fn new(ranks: &[u32], levels: &[Level]) -> Self {
        let mut r: Vec<u64> = ranks.iter().map(|&x| x as u64).collect();
        r.sort_unstable();
        r.dedup();
        let k = levels.len();
        let (mut spans, mut units) = (Vec::with_capacity(k), Vec::with_capacity(k));
        let (mut fewest, mut most) = (Vec::with_capacity(k), Vec::with_capacity(k));
        let mut below = 1u64;
        for l in levels {
            let size = l.size.max(1);
            // (level-i unit, level-(i-1) unit) pairs, and members per level-(i-1) unit.
            let mut pairs: std::collections::BTreeSet<(u64, u64)> = Default::default();
            let mut members: std::collections::BTreeMap<u64, u64> = Default::default();
            for &x in &r {
                pairs.insert((x / size, x / below));
                *members.entry(x / below).or_default() += 1;
            }
            let mut per_unit: std::collections::BTreeMap<u64, u64> = Default::default();
            for &(u, _) in &pairs {
                *per_unit.entry(u).or_default() += 1;
            }
            spans.push(per_unit.values().copied().max().unwrap_or(1));
            units.push(members.len() as u64);
            fewest.push(members.values().copied().min().unwrap_or(1));
            most.push(members.values().copied().max().unwrap_or(1));
            below = size;
        }
        RankGroup {
            n: r.len() as u64,
            spans,
            units,
            fewest,
            most,
        }
    }

    /// The smallest symmetric group that holds it.
    pub fn span(&self) -> GroupSpan {
        GroupSpan::new(self.spans.clone())
    }

    /// Whether [`RankGroup::span`] is exactly this group's size (every touched unit holds
    /// the same number of members), so the symmetric model times it as it is.
    pub fn is_symmetric(&self) -> bool {
        self.spans.iter().product::<u64>() == self.n
    }

    /// Whether NCCL's hierarchical algorithm (and the flow backend's) can run on it: the
    /// same number, at least 2, of members in each of several domains.
    pub fn holds_hierarchical(&self) -> bool {
        self.units.get(1).is_some_and(|&d| d >= 2)
            && self.fewest.get(1) == self.most.get(1)
            && self.most.get(1).is_some_and(|&m| m >= 2)
    }
}

/// Time one collective on an explicit group of ranks. A symmetric group is timed by
/// [`time`] on its span. An uneven group running a ring (`Ring`, or `Auto` for all-reduce,
/// all-gather, reduce-scatter and broadcast: NCCL's hierarchical shapes need the same
/// members in every domain, and the flow backend falls back to the ring on other groups as
/// NCCL does; `Auto` on a group that [`RankGroup::holds_hierarchical`] takes the
/// hierarchical algorithm, timed on the span, where it is faster; `Auto` for all-reduce
/// also weighs the tree, which runs on any group, and `Tree` is timed exactly, see
/// `tree_exact`) is timed exactly: the ring's hops at each level counted over the units it
/// touches (`units[i] − units[i+1]`, the loop closed at the outermost level), `Λ` the
/// longest chain of them a chunk travels as on a span (see [`Algorithm::Ring`]), and each level's share set by its busiest unit,
/// `f_0 = 1 − 1/most[1]` (inside the domain with the most members) and `f_i = 1/fewest[i]`
/// (the unit with the fewest members, whose NICs carry all its crossings), except at the
/// NICs (level 1), where the ring's `C` channels (`most[1]`, or 2 when that is 1) cross
/// whole, `ceil(C / fewest[1]) / C` on the busiest NIC; these are the crate docs'
/// `1 − P_1/n` and `P_i/n` for a symmetric group. Anything else is timed on
/// the smallest symmetric group that holds it ([`RankGroup::span`]). Returns the time and
/// whether it is exact (false: timed on the span).
pub fn time_group(
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    group: &RankGroup,
    levels: &[Level],
) -> Result<(CollectiveTime, bool), CollectiveError> {
    let span = group.span();
    let ring_op = matches!(
        op,
        Op::AllReduce | Op::AllGather | Op::ReduceScatter | Op::Broadcast
    );
    if !group.is_symmetric() && op == Op::AllReduce && algorithm == Algorithm::Tree {
        return tree_exact(bytes, group, levels).map(|t| (t, true));
    }
    if group.is_symmetric() || !(ring_op && matches!(algorithm, Algorithm::Auto | Algorithm::Ring))
    {
        return time(op, algorithm, bytes, &span, levels).map(|t| (t, group.is_symmetric()));
    }
    let mut ring = ring_exact(op, bytes, group, levels)?;
    // Auto weighs NCCL's double binary tree too: it runs on any set of nodes (a chain
    // inside each domain, binary trees over the domains), so the tuner weighs it on uneven
    // groups as on even ones. Ranks 0-1000 of 1,024 H100 (125 full DGX and one rank of the
    // next) took the ring's 1,001 steps, 1.43 ms for 64 KiB, where the tree takes 27 µs.
    if algorithm == Algorithm::Auto && op == Op::AllReduce {
        let tree = tree_exact(bytes, group, levels)?;
        if tree.time_s < ring.time_s {
            ring = tree;
        }
    }
    // Auto on a group that runs the hierarchical algorithm (the same members in each of
    // several domains, uneven higher up: ranks 0-999 of 1,000 H100, whose last leaf holds
    // one domain) weighs it too, timed on the span, as NCCL's tuner would.
    if algorithm == Algorithm::Auto
        && group.holds_hierarchical()
        && matches!(op, Op::AllReduce | Op::AllGather | Op::ReduceScatter)
    {
        if let Ok(mut h) = time(op, Algorithm::Hierarchical, bytes, &span, levels) {
            if h.time_s < ring.time_s {
                // nccl-tests' bus bandwidth counts the group's own ranks, not the span's.
                h.busbw_gbps = h.algbw_gbps * bus_factor(op, group.n);
                return Ok((h, false));
            }
        }
    }
    Ok((ring, true))
}

/// NCCL's double binary tree over exactly `group`'s ranks, as [`Algorithm::Tree`] on a
/// span: a chain inside the domain with the most members, `(most[1] − 1)` steps at
/// `lat_0`, binary trees over the units of each scale-out level, `log2(spans[i])` steps
/// at `lat_i` (one moved from the lowest scale-out level crossed to the outermost, as on a
/// span), up and down; `W = S · max_i(b_i · g_i / bw_i) / TREE_BANDWIDTH_FACTOR` with
/// `g_0 = 1` (the chain) and `g_i = 1/fewest[i]` (the unit with the fewest members, whose
/// NICs carry all its tree traffic), the span's `P_i / n` for a symmetric group, and `b_i`
/// as on a span: the chain's [`tree_chain_factor`] of `most[1]`, the trees'
/// [`tree_fanout_factor`] over the `units[1]` domains.
fn tree_exact(
    bytes: f64,
    group: &RankGroup,
    levels: &[Level],
) -> Result<CollectiveTime, CollectiveError> {
    // The bytes and the group's span checked as `time` checks them.
    Ctx::new(bytes, &group.span(), levels)?;
    let mut steps = 0.0;
    let mut worst = 0.0f64; // max_i b_i · g_i / bw_i
    let m = group.most.get(1).copied().unwrap_or(group.n) as f64;
    let p = group.units.get(1).copied().unwrap_or(1) as f64;
    let fan = tree_fanout_factor(p);
    for (i, l) in levels.iter().enumerate() {
        if i == 0 {
            if m > 1.0 {
                steps += (m - 1.0) * l.latency_us;
                worst = worst.max(tree_chain_factor(m) / bw(l));
            }
        } else {
            if group.spans[i] > 1 {
                steps += (group.spans[i] as f64).log2() * l.latency_us;
            }
            if group.units[i] > 1 {
                worst = worst.max(fan / group.fewest[i] as f64 / bw(l));
            }
        }
    }
    steps += tree_outer_extra(&group.spans, levels, 0);
    let sent = tree_sent(bytes, m, p);
    let ev = if group.n <= 1 || bytes == 0.0 {
        Eval::NOTHING
    } else {
        Cost {
            steps_us: 2.0 * steps,
            fixed_us: 0.0,
            wire_us: bytes * worst / TREE_BANDWIDTH_FACTOR,
            bytes_per_rank: sent,
            simple_only: false,
        }
        .resolve()
    };
    result(Op::AllReduce, bytes, group.n, Algorithm::Tree, ev)
}

/// The ring over exactly `group`'s ranks (see [`time_group`]).
fn ring_exact(
    op: Op,
    bytes: f64,
    group: &RankGroup,
    levels: &[Level],
) -> Result<CollectiveTime, CollectiveError> {
    // The bytes and the group's span checked as `time` checks them.
    Ctx::new(bytes, &group.span(), levels)?;
    let n = group.n as f64;
    let mut worst = 0.0f64; // max_i f_i / bw_i
    for (i, l) in levels.iter().enumerate() {
        let p = group.units[i] as f64;
        let p_next = group.units.get(i + 1).copied().unwrap_or(1) as f64;
        if i == 0 {
            let m = group.most.get(1).copied().unwrap_or(group.n) as f64;
            if m > 1.0 {
                let f0 = if p_next <= 1.0 { 1.0 } else { 1.0 - 1.0 / m };
                worst = worst.max(f0 / bw(l));
            }
        } else if i == 1 && p > 1.0 {
            // The NICs: NCCL runs one ring channel per member of the largest domain (two
            // when it holds one), and a channel enters and leaves a domain through one
            // member's NIC, so the domain with the fewest members has some NICs carrying
            // ceil(C / fewest) channels' crossings: ranks 0-100 on DGX (8 channels, the
            // last domain 5 members) put 2 of the 8 on a NIC, 1/4 of the traffic, not 1/5.
            let most = group.most.get(1).copied().unwrap_or(1);
            let channels = if most > 1 { most } else { 2 };
            let share = channels.div_ceil(group.fewest[1]) as f64 / channels as f64;
            worst = worst.max(share / bw(l));
        } else if p > 1.0 {
            worst = worst.max(1.0 / group.fewest[i] as f64 / bw(l));
        }
    }
    // The loop leaves each touched level-(i-1) unit once.
    let lat = RingLat::new(levels, &group.spans, 0, |i| {
        let u = group.units[i] as f64;
        if u > 1.0 {
            u
        } else {
            0.0
        }
    });
    let (steps, sent) = match op {
        Op::AllReduce => (lat.chain(2.0), 2.0 * (n - 1.0) / n * bytes),
        Op::AllGather | Op::ReduceScatter => (lat.chain(1.0), (n - 1.0) / n * bytes),
        _ => (lat.open, bytes),
    };
    let ev = if n <= 1.0 || bytes == 0.0 {
        Eval::NOTHING
    } else {
        Cost {
            steps_us: steps,
            fixed_us: 0.0,
            wire_us: sent * worst,
            bytes_per_rank: sent,
            simple_only: false,
        }
        .resolve()
    };
    result(op, bytes, group.n, Algorithm::Ring, ev)
}

/// The result of an evaluated collective: its time in µs, with the bandwidths derived; a
/// time or a traffic that is not finite (the bytes overflowed) is an error.
fn result(
    op: Op,
    bytes: f64,
    n: u64,
    algorithm: Algorithm,
    ev: Eval,
) -> Result<CollectiveTime, CollectiveError> {
    if !ev.time_us.is_finite() || !ev.bytes_per_rank.is_finite() {
        return Err(CollectiveError::TooLarge { bytes });
    }
    let time_s = ev.time_us * 1e-6;
    let algbw = if time_s > 0.0 {
        bytes / time_s * 1e-9
    } else {
        0.0
    };
    Ok(CollectiveTime {
        time_s,
        algorithm,
        protocol: ev.protocol,
        algbw_gbps: algbw,
        busbw_gbps: algbw * bus_factor(op, n),
        bytes_per_rank: ev.bytes_per_rank,
    })
}

/// The result of timing one collective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CollectiveTime {
    pub time_s: f64,
    /// The algorithm used (resolved when `Auto`).
    pub algorithm: Algorithm,
    /// The wire protocol the model picked (the cheapest for this size).
    pub protocol: Protocol,
    /// GB/s (1e9 bytes/s). 0 when nothing moves (empty message or a group of one).
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Bytes each rank sends under the algorithm (ring all-reduce: 2(n-1)/n × bytes).
    pub bytes_per_rank: f64,
}

/// Why a collective cannot be timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CollectiveError {
    NoLevels,
    SpanCount {
        spans: usize,
        levels: usize,
    },
    ZeroSpan {
        level: usize,
    },
    SpanTooLarge {
        level: usize,
        span: u64,
        max: u64,
    },
    InvalidBytes {
        bytes: f64,
    },
    /// A finite size whose traffic or time overflows (an all-reduce of 1.7e308 bytes sends
    /// twice that).
    TooLarge {
        bytes: f64,
    },
    InvalidLevel {
        level: usize,
        reason: &'static str,
    },
    Unsupported {
        op: Op,
        algorithm: Algorithm,
        reason: &'static str,
    },
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CollectiveError::NoLevels => write!(f, "no hierarchy levels given"),
            CollectiveError::SpanCount { spans, levels } => write!(
                f,
                "group span has {spans} entries but the hierarchy has {levels} levels \
                 (one span per level is required)"
            ),
            CollectiveError::ZeroSpan { level } => {
                write!(
                    f,
                    "group span at level {level} is 0 (each span must be at least 1)"
                )
            }
            CollectiveError::SpanTooLarge { level, span, max } => write!(
                f,
                "group span {span} at level {level} does not fit: a level-{level} unit holds \
                 only {max} level-{} units",
                level as i64 - 1
            ),
            CollectiveError::InvalidBytes { bytes } => {
                write!(
                    f,
                    "message size must be a finite number >= 0 bytes, got {bytes}"
                )
            }
            CollectiveError::TooLarge { bytes } => write!(
                f,
                "message size {bytes:e} bytes is too large to time: the bytes it moves overflow"
            ),
            CollectiveError::InvalidLevel { level, reason } => {
                write!(f, "hierarchy level {level} is invalid: {reason}")
            }
            CollectiveError::Unsupported {
                op,
                algorithm,
                reason,
            } => {
                write!(f, "{} cannot run {}: {reason}", algorithm.name(), op.name())
            }
        }
    }
}

impl std::error::Error for CollectiveError {}

/// nccl-tests bus-bandwidth factor for `op` on `n` ranks: all-reduce 2(n-1)/n; all-gather,
/// reduce-scatter and all-to-all (n-1)/n; broadcast and send-recv 1 (0 for n = 0).
pub fn bus_factor(op: Op, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let nf = n as f64;
    match op {
        Op::AllReduce => 2.0 * (nf - 1.0) / nf,
        Op::AllGather | Op::ReduceScatter | Op::AllToAll => (nf - 1.0) / nf,
        Op::Broadcast | Op::SendRecv => 1.0,
    }
}

/// Physical upper bound on bus bandwidth (GB/s) that [`time`] never exceeds: each rank's
/// line rate out of it summed over the link classes the group uses (`gbps_per_accelerator`
/// of level 0 if `spans[0] > 1`, plus that of level 1 — the NIC — if the group leaves the
/// domain), since any non-reducing-network algorithm must send at least busbw × time bytes
/// per rank; doubled for all-reduce where some crossed level has in-network reduction
/// (data need go up once and down once: busbw ≤ 2(n-1)/n × line rate).
pub fn busbw_bound(op: Op, group: &GroupSpan, levels: &[Level]) -> Result<f64, CollectiveError> {
    let sh = validate(group, levels)?;
    let mut line = 0.0;
    if group.spans[0] > 1 {
        line += levels[0].gbps_per_accelerator;
    }
    if sh.p1 > 1.0 {
        line += levels[1].gbps_per_accelerator;
    }
    let inr = (group.spans[0] > 1 && levels[0].in_network_reduction)
        || (sh.p1 > 1.0 && levels[1..].iter().any(|l| l.in_network_reduction));
    Ok(if op == Op::AllReduce && inr {
        2.0 * line
    } else {
        line
    })
}

/// Time one collective. See the crate docs for the model and [`Algorithm`] for each
/// algorithm's cost. Pure and allocation-free.
pub fn time(
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    group: &GroupSpan,
    levels: &[Level],
) -> Result<CollectiveTime, CollectiveError> {
    let ctx = Ctx::new(bytes, group, levels)?;
    let (alg, ev) = if algorithm == Algorithm::Auto {
        auto(op, &ctx)?
    } else {
        (algorithm, eval(op, algorithm, &ctx)?)
    };
    result(op, bytes, ctx.sh.n as u64, alg, ev)
}

// ---------------------------------------------------------------------------------------
// Internals. Units: µs, bytes, bytes/µs (= GB/s × 1e3).

#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Group size.
    n: f64,
    /// spans[0].
    s0: f64,
    /// P_1: level-0 units (domains) the group touches.
    p1: f64,
    /// Outermost level the group crosses (0 if it stays in one domain).
    top: usize,
}

struct Ctx<'a> {
    spans: &'a [u64],
    levels: &'a [Level],
    sh: Shape,
    bytes: f64,
}

impl<'a> Ctx<'a> {
    /// `bytes` (finite, not negative) on `group` over `levels`, checked.
    fn new(bytes: f64, group: &'a GroupSpan, levels: &'a [Level]) -> Result<Self, CollectiveError> {
        if !bytes.is_finite() || bytes < 0.0 {
            return Err(CollectiveError::InvalidBytes { bytes });
        }
        Ok(Ctx {
            spans: &group.spans,
            levels,
            sh: validate(group, levels)?,
            bytes,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Eval {
    time_us: f64,
    protocol: Protocol,
    bytes_per_rank: f64,
}

impl Eval {
    /// Nothing moves: NCCL returns at once for a single rank or an empty message.
    const NOTHING: Eval = Eval {
        time_us: 0.0,
        protocol: Protocol::Simple,
        bytes_per_rank: 0.0,
    };
}

/// An algorithm's cost before the protocol is chosen.
#[derive(Debug, Clone, Copy)]
struct Cost {
    /// Λ: Σ steps × level latency, µs.
    steps_us: f64,
    /// Fixed extra setup, µs.
    fixed_us: f64,
    /// W: bandwidth term at the Simple protocol, µs.
    wire_us: f64,
    bytes_per_rank: f64,
    /// Only the Simple protocol exists (NVLS, SHARP).
    simple_only: bool,
}

impl Cost {
    /// Two pipelined phases on different links: latencies add, the slower link sets the
    /// bandwidth term.
    fn pipeline(self, o: Cost) -> Cost {
        Cost {
            steps_us: self.steps_us + o.steps_us,
            fixed_us: self.fixed_us.max(o.fixed_us),
            wire_us: self.wire_us.max(o.wire_us),
            bytes_per_rank: self.bytes_per_rank + o.bytes_per_rank,
            simple_only: self.simple_only || o.simple_only,
        }
    }

    fn resolve(self) -> Eval {
        let base = LAUNCH_US + self.fixed_us;
        let mut best = Eval {
            time_us: base + SIMPLE.hop * self.steps_us + self.wire_us / SIMPLE.bw,
            protocol: Protocol::Simple,
            bytes_per_rank: self.bytes_per_rank,
        };
        if !self.simple_only {
            for p in &PROTOCOLS[..2] {
                let t = base + p.hop * self.steps_us + self.wire_us / p.bw;
                if t < best.time_us {
                    best.time_us = t;
                    best.protocol = p.protocol;
                }
            }
        }
        best
    }
}

#[inline]
fn bw(l: &Level) -> f64 {
    l.gbps_per_accelerator * l.efficiency * 1e3
}

fn validate(group: &GroupSpan, levels: &[Level]) -> Result<Shape, CollectiveError> {
    let spans = &group.spans;
    if levels.is_empty() {
        return Err(CollectiveError::NoLevels);
    }
    if spans.len() != levels.len() {
        return Err(CollectiveError::SpanCount {
            spans: spans.len(),
            levels: levels.len(),
        });
    }
    let mut prev_size = 1u64;
    let mut n = 1.0f64;
    let mut top = 0usize;
    for (i, (l, &s)) in levels.iter().zip(spans.iter()).enumerate() {
        let bad = |reason| Err(CollectiveError::InvalidLevel { level: i, reason });
        if l.size == 0 {
            return bad("size is 0");
        }
        if l.size < prev_size {
            return bad("size is smaller than the level below");
        }
        if !(l.gbps_per_accelerator.is_finite() && l.gbps_per_accelerator > 0.0) {
            return bad("gbps_per_accelerator must be a finite number > 0");
        }
        if !(l.efficiency.is_finite() && l.efficiency > 0.0 && l.efficiency <= 1.0) {
            return bad("efficiency must be in (0, 1]");
        }
        if !(l.latency_us.is_finite() && l.latency_us >= 0.0) {
            return bad("latency_us must be a finite number >= 0");
        }
        // Real clusters have partial units (a last pod that is not full): a level need not
        // be a multiple of the one below; it holds at most ceil(size / below) of them.
        let max = l.size.div_ceil(prev_size);
        if s == 0 {
            return Err(CollectiveError::ZeroSpan { level: i });
        }
        if s > max {
            return Err(CollectiveError::SpanTooLarge {
                level: i,
                span: s,
                max,
            });
        }
        if s > 1 {
            top = i;
        }
        n *= s as f64;
        prev_size = l.size;
    }
    let s0 = spans[0] as f64;
    Ok(Shape {
        n,
        s0,
        p1: n / s0,
        top,
    })
}

fn unsupported(op: Op, algorithm: Algorithm, reason: &'static str) -> CollectiveError {
    CollectiveError::Unsupported {
        op,
        algorithm,
        reason,
    }
}

/// The candidate algorithms `Auto` considers for each op.
fn candidates(op: Op) -> &'static [Algorithm] {
    use Algorithm::*;
    match op {
        Op::AllReduce => &[Ring, Tree, Nvls, Hierarchical],
        Op::AllGather | Op::ReduceScatter => &[Ring, Nvls, Hierarchical],
        Op::Broadcast => &[Ring],
        Op::AllToAll | Op::SendRecv => &[Direct],
    }
}

fn auto(op: Op, c: &Ctx) -> Result<(Algorithm, Eval), CollectiveError> {
    let mut best: Option<(Algorithm, Eval)> = None;
    let mut first_err = None;
    for &a in candidates(op) {
        match eval(op, a, c) {
            Ok(e) => {
                if best.is_none_or(|(_, b)| e.time_us < b.time_us) {
                    best = Some((a, e));
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match (best, first_err) {
        (Some(b), _) => Ok(b),
        (None, Some(e)) => Err(e),
        (None, None) => unreachable!("every op has at least one candidate"),
    }
}

fn eval(op: Op, alg: Algorithm, c: &Ctx) -> Result<Eval, CollectiveError> {
    let cost = match alg {
        Algorithm::Auto => return auto(op, c).map(|(_, e)| e),
        Algorithm::Ring => match op {
            Op::AllReduce | Op::AllGather | Op::ReduceScatter | Op::Broadcast => ring_cost(op, c),
            _ => {
                return Err(unsupported(
                    op,
                    alg,
                    "rings run all-reduce, all-gather, reduce-scatter and broadcast; use \
                     Direct for point-to-point ops",
                ))
            }
        },
        Algorithm::Tree => {
            if op != Op::AllReduce {
                return Err(unsupported(op, alg, "NCCL's trees run all-reduce only"));
            }
            tree_cost(c)
        }
        Algorithm::Nvls => {
            if !matches!(op, Op::AllReduce | Op::AllGather | Op::ReduceScatter) {
                return Err(unsupported(
                    op,
                    alg,
                    "NVLS runs all-reduce, all-gather and reduce-scatter",
                ));
            }
            if !c.levels[0].in_network_reduction {
                return Err(unsupported(
                    op,
                    alg,
                    "the scale-up level (0) has no in-network reduction",
                ));
            }
            if c.sh.p1 > 1.0 {
                return Err(unsupported(
                    op,
                    alg,
                    "NVLS works inside one scale-up domain; the group spans several (use \
                     Hierarchical, which runs NVLS inside each domain)",
                ));
            }
            nvls_cost(op, c.bytes, c.sh.s0, &c.levels[0])
        }
        Algorithm::Hierarchical => {
            if !matches!(op, Op::AllReduce | Op::AllGather | Op::ReduceScatter) {
                return Err(unsupported(
                    op,
                    alg,
                    "hierarchical runs all-reduce, all-gather and reduce-scatter",
                ));
            }
            if c.sh.s0 < 2.0 || c.sh.p1 < 2.0 {
                return Err(unsupported(
                    op,
                    alg,
                    "hierarchical needs several members per scale-up domain (spans[0] > 1) \
                     and several domains (an outer span > 1)",
                ));
            }
            return Ok(hierarchical(op, c));
        }
        Algorithm::Direct => match op {
            Op::AllToAll => alltoall_cost(c),
            Op::SendRecv => sendrecv_cost(c),
            _ => {
                return Err(unsupported(
                    op,
                    alg,
                    "direct (point-to-point) runs all-to-all and send-recv",
                ))
            }
        },
    };
    if c.sh.n <= 1.0 || c.bytes == 0.0 {
        return Ok(Eval::NOTHING);
    }
    Ok(cost.resolve())
}

/// The latency a ring's data waits on, from the links of one of its channels: NCCL's ring
/// is a closed loop (a channel leaves every unit it touches once, the last unit's exit
/// going back to the first), and a step's send can leave only once the previous step's
/// data has come in, so the collective lasts as long as the longest chain of consecutive
/// hops one chunk's data travels: `n − 1` hops for a reduce-scatter or an all-gather (the
/// whole loop but its cheapest hop), `2(n − 1)` for an all-reduce (the loop twice but its
/// cheapest two consecutive hops). A ring over two sites therefore waits on both of its DCI
/// crossings in each half (NCCL's tuner counts `2 · nNodes` network steps for a ring
/// all-reduce for the same reason), not on one.
#[derive(Debug, Clone, Copy)]
struct RingLat {
    /// Σ of the loop's hop latencies but the one that closes it (into the first unit, at
    /// the outermost level): a chain from the first member (broadcast).
    open: f64,
    /// The closing hop's latency.
    closing: f64,
    /// The cheapest hop, and the cheapest two consecutive hops.
    min1: f64,
    min2: f64,
}

impl RingLat {
    /// Over levels `from..` of `levels`, `crossing(i)` being the loop's hops that leave a
    /// level-(i-1) unit (cross level i or higher; 0 where the ring stays inside one) and
    /// `spans[i]` the most level-(i-1) units inside one level-i unit.
    fn new(levels: &[Level], spans: &[u64], from: usize, crossing: impl Fn(usize) -> f64) -> Self {
        let mut r = RingLat {
            open: 0.0,
            closing: 0.0,
            min1: 0.0,
            min2: 0.0,
        };
        // The lowest level with hops, whether two of them follow each other, and the
        // cheapest hop above it.
        let (mut low, mut above) = (None::<usize>, f64::INFINITY);
        let mut min1 = f64::INFINITY;
        for i in from..levels.len() {
            let here = crossing(i);
            let next = if i + 1 < levels.len() {
                crossing(i + 1)
            } else {
                0.0
            };
            let hops = here - next;
            if hops <= 0.0 {
                continue;
            }
            // A loop over several members of each domain leaves every domain from a
            // member off the rail of the next domain's entry member: on rail fabrics each
            // crossing first takes PXN's scale-up hop to the rail twin (`Level::pxn_us`).
            let pxn = if from == 0 && spans[0] > 1 {
                levels[i].pxn_us
            } else {
                0.0
            };
            let lat = levels[i].latency_us + pxn;
            min1 = min1.min(lat);
            match low {
                None => low = Some(i),
                Some(_) => above = above.min(lat),
            }
            if next > 0.0 {
                r.open += hops * lat;
            } else {
                r.open += (hops - 1.0) * lat;
                r.closing = lat;
            }
        }
        let Some(a) = low else { return r };
        let la = levels[a].latency_us;
        r.min1 = min1;
        // Two hops at the lowest level in a row where one of its units holds three or more
        // of the units below (or the whole loop is at that level); else every hop there is
        // followed by one above it.
        r.min2 = if above.is_infinite() {
            2.0 * la
        } else if spans[a] >= 3 {
            (2.0 * la).min(la + above)
        } else {
            la + above
        };
        r
    }

    /// Λ of a ring running `phases` passes (1: reduce-scatter, all-gather; 2: all-reduce).
    fn chain(&self, phases: f64) -> f64 {
        let closed = self.open + self.closing;
        if phases >= 2.0 {
            2.0 * closed - self.min2
        } else {
            closed - self.min1
        }
    }
}

/// Ring latency and bottleneck over `spans[from..]` with one member per level-(from-1)
/// unit (from = 0: the whole group; from = 1: the cross-domain sub-group of the
/// hierarchical algorithm). Returns (the loop's latencies, max_i f_i / bw_i in µs per
/// byte, sub-group size).
fn ring_terms(spans: &[u64], levels: &[Level], from: usize) -> (RingLat, f64, f64) {
    let mut worst = 0.0f64; // max_i c_i / bw_i, with f_i = c_i / n_sub
    let mut p_next = 1.0; // P_{i+1}
    for i in (from..spans.len()).rev() {
        let p = p_next * spans[i] as f64; // P_i
        let l = &levels[i];
        if i == 0 {
            if spans[0] > 1 {
                let c0 = if p_next == 1.0 { p } else { p - p_next };
                worst = worst.max(c0 / bw(l));
            }
        } else if p > 1.0 {
            worst = worst.max(p / bw(l));
        }
        p_next = p;
    }
    let n_sub = p_next;
    // P_i over the sub-group: the loop leaves each of its level-(i-1) units once.
    let lat = RingLat::new(levels, spans, from, |i| {
        let p: f64 = spans[i..].iter().map(|&s| s as f64).product();
        if p > 1.0 {
            p
        } else {
            0.0
        }
    });
    (lat, worst / n_sub, n_sub)
}

/// Bytes per direction, in units of the buffer `S`, on the busiest scale-up link of NCCL's
/// chain of `m` members inside a domain (reduce toward its head, broadcast back): a member
/// in the middle of the chain sends `S` up and `S` down, `2S`; a chain of two has no
/// middle, each member sends `S` once (up, or down): `S`.
pub fn tree_chain_factor(m: f64) -> f64 {
    if m <= 1.0 {
        0.0
    } else if m <= 2.0 {
        1.0
    } else {
        2.0
    }
}

/// Bytes per direction, in units of the data it carries (`S` per member), on the busiest
/// NIC of NCCL's double binary tree over `p` units (two complementary binary trees, half
/// the data each): a node with two children in one tree sends `3/2 · S` there (half up,
/// both halves down) and `S/2` as a leaf in the other, `2S`; over three units no node has
/// two children (`3/2 · S`), and over two the trees are one edge each way (each node
/// sends its half up one tree and the other half down the other): `S`, half the long
/// tree's `2S`.
pub fn tree_fanout_factor(p: f64) -> f64 {
    if p <= 1.0 {
        0.0
    } else if p <= 2.0 {
        1.0
    } else if p <= 3.0 {
        1.5
    } else {
        2.0
    }
}

/// The hop NCCL's in-order binary trees add at the outermost level over the domains'
/// levels: the trees follow the domains' order, not the hierarchy, so the longest root
/// path does not cross each level `log2(spans[i])` times. Going up, each hop of a leaf's
/// root path doubles its length; one that goes right lands on a multiple of twice its
/// length, the first domain of a unit of that size, and so crosses one level more than a
/// left one. Taking every hop to the right but the last (into the root), the path crosses
/// the outermost level `log2(spans[top]) + 1` times and the lowest scale-out level with a
/// span `log2(spans[low]) − 1` times (for unit sizes in powers of two): one hop moves from
/// the lowest scale-out level the trees cross to the outermost. Over two sites of two
/// domains each the in-order tree is 0 ← 2 ← 1, 3: a chunk from domain 1 crosses the DCI
/// twice up and twice down, not once each way. Returns that hop's extra latency, 0 where
/// the trees cross one scale-out level only.
fn tree_outer_extra(spans: &[u64], levels: &[Level], from: usize) -> f64 {
    let mut crossed = (from.max(1)..spans.len()).filter(|&i| spans[i] > 1);
    match (crossed.next(), crossed.next_back()) {
        (Some(low), Some(top)) if top > low => levels[top].latency_us - levels[low].latency_us,
        _ => 0.0,
    }
}

/// Tree steps (one direction) and bottleneck over `spans[from..]`.
/// Returns (Λ one direction, max_i b_i · g_i / bw_i in µs per byte of the buffer, with
/// `b_0` the chain's [`tree_chain_factor`] and `b_i` the trees' [`tree_fanout_factor`]
/// over the units the trees join).
fn tree_terms(spans: &[u64], levels: &[Level], from: usize) -> (f64, f64) {
    let mut steps = 0.0;
    let mut worst = 0.0f64;
    let mut p_next = 1.0;
    let n_sub: f64 = spans[from..].iter().map(|&s| s as f64).product();
    // The trees join the domains (from = 0) or the sub-group's members (from = 1).
    let units: f64 = spans[from.max(1)..].iter().map(|&s| s as f64).product();
    let fan = tree_fanout_factor(units);
    for i in (from..spans.len()).rev() {
        let s = spans[i] as f64;
        let p = p_next * s;
        let l = &levels[i];
        if i == 0 {
            if spans[0] > 1 {
                steps += (s - 1.0) * l.latency_us;
                worst = worst.max(tree_chain_factor(s) / bw(l));
            }
        } else {
            if spans[i] > 1 {
                steps += s.log2() * l.latency_us;
            }
            if p > 1.0 {
                worst = worst.max(fan * p / n_sub / bw(l));
            }
        }
        p_next = p;
    }
    (steps + tree_outer_extra(spans, levels, from), worst)
}

fn ring_cost(op: Op, c: &Ctx) -> Cost {
    let (lat, x, n) = ring_terms(c.spans, c.levels, 0);
    let s = c.bytes;
    let (steps, sent) = match op {
        Op::AllReduce => (lat.chain(2.0), 2.0 * (n - 1.0) / n * s),
        Op::AllGather | Op::ReduceScatter => (lat.chain(1.0), (n - 1.0) / n * s),
        // Broadcast: a pipelined chain from the root, every rank but the root receives and
        // forwards S; no hop goes back into the root.
        _ => (lat.open, s),
    };
    Cost {
        steps_us: steps,
        fixed_us: 0.0,
        wire_us: sent * x,
        bytes_per_rank: sent,
        simple_only: false,
    }
}

/// Bytes the busiest member of a tree all-reduce sends: its chain's and its trees' shares
/// (`2S` for long chains and trees; `S` for two members).
fn tree_sent(bytes: f64, m: f64, p: f64) -> f64 {
    bytes * tree_chain_factor(m).max(tree_fanout_factor(p))
}

fn tree_cost(c: &Ctx) -> Cost {
    let (steps, x) = tree_terms(c.spans, c.levels, 0);
    let sent = tree_sent(c.bytes, c.sh.s0, c.sh.p1);
    Cost {
        steps_us: 2.0 * steps,
        fixed_us: 0.0,
        wire_us: c.bytes * x / TREE_BANDWIDTH_FACTOR,
        bytes_per_rank: sent,
        simple_only: false,
    }
}

/// NVLS inside one domain of `n` members (level `l`).
fn nvls_cost(op: Op, s: f64, n: f64, l: &Level) -> Cost {
    let (busy, sent) = match op {
        // Up: the whole buffer (load-reduce of every shard) + the reduced shard (multicast
        // store); down: the reduced shard + the whole result.
        Op::AllReduce => (s * (1.0 + 1.0 / n), s * (1.0 + 1.0 / n)),
        // Up S/n, down S (multicast delivers every shard, own included).
        Op::AllGather => (s, s / n),
        // Up S (every shard is read by the switch), down S/n.
        _ => (s, s),
    };
    Cost {
        steps_us: 2.0 * l.latency_us,
        fixed_us: NVLS_FIXED_US,
        wire_us: busy / (bw(l) * NVLS_BANDWIDTH_FACTOR),
        bytes_per_rank: sent,
        simple_only: true,
    }
}

fn hierarchical(op: Op, c: &Ctx) -> Eval {
    hierarchical_pick(op, c).0
}

/// The halves of the hierarchical algorithm the model weighs: what runs inside the
/// domains and what across them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HierarchicalVariant {
    /// NVLS inside the domains (else a ring).
    pub inner_nvls: bool,
    /// Across the domains: a ring, a double binary tree or an in-network (SHARP) reduction.
    pub outer: Outer,
}

/// The outer half of [`HierarchicalVariant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outer {
    Ring,
    Tree,
    InNetwork,
}

/// Which halves [`Algorithm::Hierarchical`] runs for `op` and `bytes` on `group`: the
/// combination (and its protocol) with the smallest time, the one [`time`] prices. Errors
/// as [`time`] does where the group cannot run it.
pub fn hierarchical_variant(
    op: Op,
    bytes: f64,
    group: &GroupSpan,
    levels: &[Level],
) -> Result<HierarchicalVariant, CollectiveError> {
    let ctx = Ctx::new(bytes, group, levels)?;
    eval(op, Algorithm::Hierarchical, &ctx)?;
    Ok(hierarchical_pick(op, &ctx).1)
}

fn hierarchical_pick(op: Op, c: &Ctx) -> (Eval, HierarchicalVariant) {
    let ring_ring = HierarchicalVariant {
        inner_nvls: false,
        outer: Outer::Ring,
    };
    let l0 = &c.levels[0];
    let s = c.bytes;
    let (s0, p1) = (c.sh.s0, c.sh.p1);
    let shard = s / s0;
    let (ring_lat, ring_x, _) = ring_terms(c.spans, c.levels, 1);
    let zero = c.sh.n <= 1.0 || s == 0.0;
    if zero {
        return (Eval::NOTHING, ring_ring);
    }
    if op != Op::AllReduce {
        // All-gather: outer all-gather of the S/s0 shard across domains, then inner
        // all-gather of S; reduce-scatter is the mirror image. Same cost.
        let inner_sent = (s0 - 1.0) / s0 * s;
        let inner = Cost {
            steps_us: (s0 - 1.0) * l0.latency_us,
            fixed_us: 0.0,
            wire_us: inner_sent / bw(l0),
            bytes_per_rank: inner_sent,
            simple_only: false,
        };
        let outer_sent = (p1 - 1.0) / p1 * shard;
        let outer = Cost {
            steps_us: ring_lat.chain(1.0),
            fixed_us: 0.0,
            wire_us: outer_sent * ring_x,
            bytes_per_rank: outer_sent,
            simple_only: false,
        };
        return (inner.pipeline(outer).resolve(), ring_ring);
    }
    // Inner reduce-scatter + all-gather of S among s0 members.
    let inner_sent = 2.0 * (s0 - 1.0) / s0 * s;
    let inner_ring = Cost {
        steps_us: 2.0 * (s0 - 1.0) * l0.latency_us,
        fixed_us: 0.0,
        wire_us: inner_sent / bw(l0),
        bytes_per_rank: inner_sent,
        simple_only: false,
    };
    let inner_nvls = l0
        .in_network_reduction
        .then(|| nvls_cost(Op::AllReduce, s, s0, l0));
    // Outer all-reduce of the shard among p1 members, one per domain.
    let outer_sent = 2.0 * (p1 - 1.0) / p1 * shard;
    let outer_ring = Cost {
        steps_us: ring_lat.chain(2.0),
        fixed_us: 0.0,
        wire_us: outer_sent * ring_x,
        bytes_per_rank: outer_sent,
        simple_only: false,
    };
    let (tree_steps, tree_x) = tree_terms(c.spans, c.levels, 1);
    let outer_tree = Cost {
        steps_us: 2.0 * tree_steps,
        fixed_us: 0.0,
        wire_us: shard * tree_x / TREE_BANDWIDTH_FACTOR,
        bytes_per_rank: shard * tree_fanout_factor(p1),
        simple_only: false,
    };
    // In-network (SHARP) all-reduce across domains: each member sends its shard up once
    // and receives the result once; aggregation in the switches means a level-i link
    // carries one stream per unit, as in the ring's accounting.
    let outer_inr = {
        let mut all = true;
        let mut p_next = 1.0;
        for i in (1..c.spans.len()).rev() {
            let p = p_next * c.spans[i] as f64;
            if p > 1.0 && !c.levels[i].in_network_reduction {
                all = false;
            }
            p_next = p;
        }
        all.then(|| Cost {
            steps_us: 2.0 * c.levels[c.sh.top].latency_us,
            fixed_us: NVLS_FIXED_US,
            wire_us: shard * ring_x / NVLS_BANDWIDTH_FACTOR,
            bytes_per_rank: shard,
            simple_only: true,
        })
    };
    let mut best = (inner_ring.pipeline(outer_ring).resolve(), ring_ring);
    let mut consider = |a: Cost, b: Cost, inner_nvls: bool, outer: Outer| {
        let e = a.pipeline(b).resolve();
        if e.time_us < best.0.time_us {
            best = (e, HierarchicalVariant { inner_nvls, outer });
        }
    };
    consider(inner_ring, outer_tree, false, Outer::Tree);
    if let Some(o) = outer_inr {
        consider(inner_ring, o, false, Outer::InNetwork);
    }
    if let Some(i) = inner_nvls {
        consider(i, outer_ring, true, Outer::Ring);
        consider(i, outer_tree, true, Outer::Tree);
        if let Some(o) = outer_inr {
            consider(i, o, true, Outer::InNetwork);
        }
    }
    best
}

fn alltoall_cost(c: &Ctx) -> Cost {
    let n = c.sh.n;
    let s = c.bytes;
    let mut worst = 0.0f64; // max over levels of (traffic fraction / bw)
    let mut peer_lat = 0.0; // Σ over peers of their one-way latency
    let mut p_next = 1.0;
    for i in (0..c.spans.len()).rev() {
        let p = p_next * c.spans[i] as f64;
        let l = &c.levels[i];
        // Peers meeting this rank exactly at level i: n/P_{i+1} − n/P_i. Each costs the
        // issue latency of its kind of link: the scale-up domain's, or the nearest
        // scale-out level's (NIC, one switch and its cables) for every scale-out peer. A
        // farther peer's extra switch hops and cable run are in flight while the next
        // message is issued, so they are paid once, by the farthest peer (the top level's
        // latency below), not per peer: since the levels carry their cables' propagation
        // (4.3 µs of fibre across a three-tier pod boundary), charging them per peer priced
        // DeepEP's EP256 low-latency dispatch at 279 µs against its published 194.
        let issue = peer_issue_latency_us(&c.levels, i == 0);
        peer_lat += (n / p_next - n / p) * issue;
        if i == 0 {
            if c.spans[0] > 1 {
                worst = worst.max((c.sh.s0 - 1.0) / n / bw(l));
            }
        } else if p > 1.0 {
            worst = worst.max((1.0 - 1.0 / p) / bw(l));
        }
        p_next = p;
    }
    let sent = (n - 1.0) / n * s;
    // With several members per domain most peers across domains are off the sender's
    // rail: on rail fabrics NCCL's PXN sends to them through the NIC on the receiver's
    // rail, over the scale-up fabric first, and the slowest flow pays that hop.
    let top = &c.levels[c.sh.top];
    let pxn = if c.spans[0] > 1 { top.pxn_us } else { 0.0 };
    Cost {
        steps_us: top.latency_us + pxn + peer_lat / P2P_CONCURRENCY,
        fixed_us: 0.0,
        wire_us: s * worst,
        bytes_per_rank: sent,
        simple_only: false,
    }
}

fn sendrecv_cost(c: &Ctx) -> Cost {
    // Each rank sends S to its ring successor; the slowest pair crosses the outermost level
    // and every scale-out level below it (its NIC first).
    let mut worst = 0.0f64;
    let mut p_next = 1.0;
    for i in (0..c.spans.len()).rev() {
        let p = p_next * c.spans[i] as f64;
        let crossed = if i == 0 { c.spans[0] > 1 } else { p > 1.0 };
        if crossed {
            worst = worst.max(1.0 / bw(&c.levels[i]));
        }
        p_next = p;
    }
    // The pair that crosses leaves its domain from a member off the receiver's rail
    // (the last member sends to the next domain's first): on rail fabrics NCCL's PXN
    // sends it through the receiver's rail NIC, over the scale-up fabric first.
    let top = &c.levels[c.sh.top];
    let pxn = if c.spans[0] > 1 { top.pxn_us } else { 0.0 };
    Cost {
        steps_us: top.latency_us + pxn,
        fixed_us: 0.0,
        wire_us: c.bytes * worst,
        bytes_per_rank: c.bytes,
        simple_only: false,
    }
}

/// Where every group of one parallel dimension lies on the cluster: groups of `n` ranks at
/// rank stride `stride` (`r, r + stride, …`), tiling the first `accelerators` ranks (the
/// group holding rank 0 is the one [`GroupSpan`] describes). A backend that simulates
/// traffic uses it to run every group of the dimension at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Layout {
    pub n: u64,
    pub stride: u64,
    pub accelerators: u64,
}

impl Layout {
    /// The first rank of every group: ranks `r` with `(r / stride) mod n == 0`.
    pub fn group_starts(&self) -> impl Iterator<Item = u64> + '_ {
        let stride = self.stride.max(1);
        let n = self.n.max(1);
        (0..self.accelerators).filter(move |r| (r / stride).is_multiple_of(n))
    }
}

/// A collective that runs at the same time as the one being timed (it shares links).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Concurrent {
    pub op: Op,
    pub bytes: f64,
    pub layout: Layout,
}

/// Times the collectives of a training step. The step model asks for every collective it
/// needs through this trait, so a second backend (the flow-level simulation in
/// `myriad-netsim`) plugs in without the step model knowing it.
///
/// `span` is the group holding rank 0 placed on the hierarchy, `layout` where all groups of
/// its dimension lie; every group of the dimension runs the collective at once.
pub trait CollectiveTimer {
    /// Seconds for `op` of `bytes` (nccl-tests convention) on each group of `layout`.
    fn time(&self, op: Op, bytes: f64, span: &GroupSpan, layout: &Layout) -> f64;

    /// As [`CollectiveTimer::time`], while `background` collectives run on the same network
    /// (data-parallel gradients and pipeline sends sharing NICs). The analytical model
    /// prices links as if free, so by default the background is ignored.
    fn time_during(
        &self,
        op: Op,
        bytes: f64,
        span: &GroupSpan,
        layout: &Layout,
        background: &[Concurrent],
    ) -> f64 {
        let _ = background;
        self.time(op, bytes, span, layout)
    }
}

/// The analytical model of this crate behind [`CollectiveTimer`] (`Algorithm::Auto`; a
/// group the model cannot time costs infinity, which no plan search picks).
#[derive(Debug, Clone, Copy)]
pub struct Analytical<'a> {
    pub levels: &'a [Level],
}

impl CollectiveTimer for Analytical<'_> {
    fn time(&self, op: Op, bytes: f64, span: &GroupSpan, _layout: &Layout) -> f64 {
        if span.size() <= 1 || bytes <= 0.0 {
            return 0.0;
        }
        time(op, Algorithm::Auto, bytes, span, self.levels)
            .map(|c| c.time_s)
            .unwrap_or(f64::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One spelling per name: the `name()` every table and JSON object prints is the serde
    /// name (`myriad collective --json` printed protocols Debug-cased, `Simple`, `Ll128`,
    /// beside lowercase algorithms).
    #[test]
    fn names_are_the_serde_names_in_lowercase() {
        let serde = |v: serde_json::Value| v.as_str().unwrap().to_string();
        for p in [Protocol::Ll, Protocol::Ll128, Protocol::Simple] {
            assert_eq!(p.name(), serde(serde_json::to_value(p).unwrap()));
        }
        assert_eq!(
            PROTOCOLS.map(|c| c.protocol.name()),
            ["ll", "ll128", "simple"]
        );
        for a in [
            Algorithm::Auto,
            Algorithm::Ring,
            Algorithm::Tree,
            Algorithm::Nvls,
            Algorithm::Hierarchical,
            Algorithm::Direct,
        ] {
            assert_eq!(a.name(), serde(serde_json::to_value(a).unwrap()));
        }
        for o in [
            Op::AllReduce,
            Op::AllGather,
            Op::ReduceScatter,
            Op::AllToAll,
            Op::Broadcast,
            Op::SendRecv,
        ] {
            assert_eq!(o.name(), serde(serde_json::to_value(o).unwrap()));
        }
        // Errors too (`Tree cannot run AllGather` beside `--algorithm tree --op all-gather`).
        let e = CollectiveError::Unsupported {
            op: Op::AllGather,
            algorithm: Algorithm::Tree,
            reason: "why",
        };
        assert_eq!(e.to_string(), "tree cannot run all-gather: why");
    }

    fn level(name: &str, size: u64, gbps: f64, lat: f64, eff: f64) -> Level {
        Level {
            name: name.into(),
            size,
            gbps_per_accelerator: gbps,
            latency_us: lat,
            efficiency: eff,
            in_network_reduction: false,
            pxn_us: 0.0,
        }
    }

    /// Guards `ring_exact`'s counting: on symmetric groups it is the symmetric ring.
    #[test]
    fn exact_ring_is_the_ring_on_symmetric_groups() {
        let levels = vec![
            level("domain", 8, 450.0, 2.0, 0.8),
            level("leaf", 256, 50.0, 2.0, 0.94),
            level("cluster", 4096, 25.0, 3.0, 0.94),
        ];
        let groups: Vec<Vec<u32>> = vec![
            (0..8).collect(),
            (0..4).collect(),
            (0..16).collect(),
            (0..32).map(|k| k * 8).collect(),
            (0..1024).collect(),
            (0..8).flat_map(|k| [k * 256, k * 256 + 1]).collect(),
        ];
        for ranks in groups {
            let g = RankGroup::new(&ranks, &levels);
            assert!(g.is_symmetric(), "{ranks:?}");
            for op in [Op::AllReduce, Op::AllGather, Op::Broadcast] {
                for b in [8.0, 1e5, 3e7, 1e10] {
                    let e = ring_exact(op, b, &g, &levels).unwrap();
                    let s = time(op, Algorithm::Ring, b, &g.span(), &levels).unwrap();
                    assert!(
                        (e.time_s - s.time_s).abs() <= 1e-12 * s.time_s,
                        "{op:?} {b} {:?}: {e:?} vs {s:?}",
                        g.spans
                    );
                    assert_eq!(e.protocol, s.protocol);
                }
            }
        }
    }
}
