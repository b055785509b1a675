//! Collectives as programs of flow phases.
//!
//! A [`Program`] is a sequence of [`Phase`]s; a phase's flows all start together, and the
//! next phase starts when every flow of the previous one has arrived (its last byte sent
//! plus its path latency) and the phase's `extra_s` has passed. A phase with `repeat: k`
//! runs k times back to back (the steps of a ring). Several programs run concurrently and
//! share the links.
//!
//! # Algorithms
//!
//! - **Ring** (all-reduce: 2(n-1) steps; all-gather, reduce-scatter: n-1 steps; each step
//!   moves `S/n` per rank). Ranks are ordered by id and grouped by scale-up domain. With
//!   `m` members in the largest domain and several domains, there are `C = m` channels (2
//!   when `m = 1`, NCCL's two channels per NIC): channel `c` visits the domains in order
//!   and, inside each, its members rotated by `c`, so each channel enters and leaves every
//!   domain through a different member and the `m` NICs share the crossings (NCCL's rings
//!   rotate the same way). A channel carries `1/C` of each step's data. Every step of a
//!   ring is the same set of flows (same pairs, same sizes, same ECMP ids), so a step is
//!   one phase with `repeat` = steps; the engine simulates a step and, when nothing
//!   changes between steps, advances the remaining ones in one go (exact for this barrier
//!   model; see the engine docs). The intra-domain hops of all channels between the same
//!   pair share one path, so they are one flow of weight `C - 1` (exact under max-min
//!   fairness, which gives flows on identical paths identical rates). The latency is the
//!   longest chain of consecutive hops a chunk travels around a channel's closed loop
//!   (`ring_chain_latency`: the loop but its cheapest hop, or for all-reduce twice the loop
//!   but its cheapest two consecutive hops), each hop at its route's latency, spread over
//!   the steps: a ring across two sites waits on both DCI hops in every pass.
//! - **Broadcast**: the ring's channels as chains from the root (every flow into the root
//!   dropped), `S / C` per channel, one phase: a pipelined chain is bandwidth-bound by its
//!   slowest hop.
//! - **NVLS** (in-switch reduction inside one scale-up domain): each rank sends through
//!   its own scale-up links `S(1 + 1/n)` (all-reduce) or `S` (all-gather, reduce-scatter) in
//!   the busy direction, scaled by `myriad_collective::NVLS_BANDWIDTH_FACTOR`, plus
//!   `NVLS_FIXED_US`, as in the analytical model.
//! - **Hierarchical** (all-reduce, all-gather, reduce-scatter; the same number `s0 ≥ 2` of
//!   members in each of `p1 ≥ 2` domains): across the domains, member `j` of every domain
//!   runs a ring (`2(p1-1)` steps for all-reduce, `p1-1` otherwise) or, for all-reduce, a
//!   double binary tree on the shard `S / s0`; inside, the reduce-scatter/all-gather bytes
//!   (ring: `2(s0-1)/s0 · S` per rank for all-reduce; NVLS: `S(1 + 1/s0)` per direction)
//!   ride along on the scale-up links, spread evenly over the outer steps: NCCL pipelines
//!   the phases, so the slower link class sets the pace. The inner steps' latency is added
//!   once (pipeline fill). [`Hier`] names the variant; `flow_choice` picks it as the analytical
//!   model weighs the halves.
//! - **Tree** (all-reduce): one tree per channel, as NCCL runs them: with `m` members in
//!   the largest domain, `C = m` channels, channel `c` a chain inside each domain starting
//!   at member `c` (reduce toward it, broadcast back) and, through member `c`'s NIC, both
//!   of NCCL's complementary binary trees over the domains (in-order, and mirrored: the
//!   double binary tree, half of the channel's data on each, so every NIC is interior in
//!   one tree and a leaf in the other), `S/C` each up and down, all concurrently,
//!   pipelined in [`TREE_CHUNKS`] lockstep steps; the latency is the longest root path of
//!   any channel's tree, up and down, each hop at its route's latency (a tree across two
//!   sites pays each DCI crossing on that path), plus the chain's, once.
//! - **Direct all-to-all**: each rank sends `S/n` to every other rank. Rounds of `g` peer
//!   offsets (`rank i` sends to `i + o` for the round's offsets `o`), all of a round's
//!   flows concurrently; `g = n - 1` (everything at once) up to 512 ranks, else
//!   `max(8, 262144 / (n · slots))` so that a round holds about 256k flows. A pair in
//!   different domains is one flow per NIC port slot of the accelerator (`slots`, 2 on a
//!   dual-plane NIC), `S / (n · slots)` each: NCCL spreads a peer's channels, and HPN's
//!   hashing its queue pairs, over both planes (one flow per pair, its plane hashed, left
//!   one plane idle on a NIC whose few peers all hashed to the other: 2.0× the analytical
//!   time for 64 MiB over 16 ranks on the HPN example). A round ends at its last arrival
//!   plus the busiest sender's `Σ issue latency / P2P_CONCURRENCY` over its peers
//!   (`Network::peer_issue_latency`: NCCL issues the peers in turn, a few at a time), the
//!   analytical model's per-peer term, so the two agree on small all-to-alls.
//! - **Send-recv**: rank `i` sends `S` to rank `i + 1` (nccl-tests `sendrecv`).

use crate::net::Network;
use myriad_collective::{
    Algorithm, Op, NVLS_BANDWIDTH_FACTOR, NVLS_FIXED_US, P2P_CONCURRENCY, TREE_BANDWIDTH_FACTOR,
};

/// One flow (or `weight` identical parallel flows) of a phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    /// Source and destination accelerator (labels only for explicit paths).
    pub src: u32,
    pub dst: u32,
    /// Bytes of each of the `weight` flows.
    pub bytes: f64,
    /// ECMP flow id (the channel).
    pub flow_id: u32,
    /// Identical flows on the same path.
    pub weight: u32,
    /// Index into `Program::paths` for a flow with an explicit path (custom networks,
    /// NVLS loops); `None`: routed from `src` to `dst`.
    pub path: Option<u32>,
    /// The flow's latency counts in its phase's latency rule (false for traffic that runs
    /// alongside a pipeline without being on its critical path, e.g. the intra-domain part
    /// of a hierarchical all-reduce).
    pub timed: bool,
    /// Sibling flows one connection was split into (queue pairs, `qps_per_connection`):
    /// each counts `1/split` in its phase's latency average, so splitting changes how
    /// bandwidth is shared but not the connection's latency. 1 for a whole connection.
    pub split: u32,
}

impl FlowSpec {
    pub fn new(src: u32, dst: u32, bytes: f64, flow_id: u32) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            bytes,
            flow_id,
            split: 1,
            weight: 1,
            path: None,
            timed: true,
        }
    }

    /// A flow along explicit path `path` (an index into `Program::paths`).
    pub fn on_path(path: u32, bytes: f64) -> FlowSpec {
        FlowSpec {
            src: path,
            dst: path,
            bytes,
            flow_id: 0,
            split: 1,
            weight: 1,
            path: Some(path),
            timed: true,
        }
    }
}

/// The flows of a phase.
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseFlows {
    List(Vec<FlowSpec>),
    /// All-to-all round: every `Program::ranks[i]` sends `bytes` to `ranks[(i + o) % n]`
    /// for `o` in `first..=last` (generated when the phase starts). A pair in different
    /// scale-up domains (of `apd` accelerators) is `slots` flows of `bytes / slots`, flow
    /// ids `0..slots`, one on each NIC port slot of the sender (both planes of a dual-plane
    /// NIC: NCCL's channels to a peer, and the queue pairs HPN's hashing spreads, use every
    /// port); `slots = 1` leaves every pair one flow.
    AllToAll {
        first: u32,
        last: u32,
        bytes: f64,
        slots: u32,
        apd: u32,
    },
}

/// When a phase is over, given its flows' last bytes (drains) and path latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyRule {
    /// At the last arrival: max over flows of (drain + latency). Concurrent independent
    /// flows (all-to-all rounds, send-recv, NVLS, hand-made traffic).
    Max,
    /// At the last drain plus the weighted mean latency of the phase's flows: one step of a
    /// pipelined ring whose hops have no route to price its chunk chain ahead (a hand-built
    /// network; rings on built clusters pay `ring_chain_latency` instead), so that over a
    /// collective the latency adds up to about the hop latencies a chunk travels, not to
    /// steps × the slowest hop.
    Mean,
    /// At the last drain plus the sum of the flows' latencies (× weight) divided by the
    /// number of chains: a pipelined chain (broadcast) pays every hop once.
    SumPerChain(u32),
    /// At the last drain plus `k` × the weighted mean latency: a pipelined tree whose data
    /// crosses `k` levels in turn.
    Scaled(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub flows: PhaseFlows,
    pub latency: LatencyRule,
    /// Times the phase runs back to back.
    pub repeat: u32,
    /// Fixed time added after the phase's last arrival, seconds.
    pub extra_s: f64,
    /// Latency added after the phase's last arrival, seconds, scaled like path latencies
    /// by `Program::latency_scale` (pipeline fills counted in hops).
    pub extra_latency_s: f64,
    /// Name in traces (`step`, `round`).
    pub label: &'static str,
    /// Rates are set when each run of the phase starts and kept until it ends: a flow that
    /// drains early does not hand its bandwidth to the phase's other flows (one pipelined
    /// chunk step, whose edges are paced by the slowest anyway). Saves the re-rating at
    /// every drain; the engine still re-rates when other programs' flows start or end.
    pub fixed_rates: bool,
}

impl Phase {
    pub fn once(flows: Vec<FlowSpec>) -> Phase {
        Phase {
            flows: PhaseFlows::List(flows),
            latency: LatencyRule::Max,
            repeat: 1,
            extra_s: 0.0,
            label: "phase",
            fixed_rates: false,
            extra_latency_s: 0.0,
        }
    }

    /// Materialise the flows of this phase into `out`.
    pub(crate) fn materialize(&self, ranks: &[u32], out: &mut Vec<FlowSpec>) {
        out.clear();
        match &self.flows {
            PhaseFlows::List(v) => out.extend_from_slice(v),
            PhaseFlows::AllToAll {
                first,
                last,
                bytes,
                slots,
                apd,
            } => {
                let n = ranks.len();
                let (k, apd) = ((*slots).max(1), (*apd).max(1));
                let part = *bytes / k as f64;
                for o in *first..=*last {
                    for i in 0..n {
                        let (a, b) = (ranks[i], ranks[(i + o as usize) % n]);
                        if k == 1 || a / apd == b / apd {
                            out.push(FlowSpec::new(a, b, *bytes, 0));
                            continue;
                        }
                        for s in 0..k {
                            out.push(FlowSpec {
                                split: k,
                                ..FlowSpec::new(a, b, part, s)
                            });
                        }
                    }
                }
            }
        }
    }

    /// Flows per run of the phase (an all-to-all pair split over NIC slots counts once:
    /// the connections, which `MAX_ALLTOALL_FLOWS` bounds).
    pub fn flow_count(&self, ranks: usize) -> u64 {
        match &self.flows {
            PhaseFlows::List(v) => v.len() as u64,
            PhaseFlows::AllToAll { first, last, .. } => (last - first + 1) as u64 * ranks as u64,
        }
    }
}

/// A sequence of phases: one collective on one group, or any hand-made traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub name: String,
    pub phases: Vec<Phase>,
    /// Explicit paths (directed link ids) for flows that name one.
    pub paths: Vec<Vec<u32>>,
    /// The group's ranks (all-to-all rounds read them).
    pub ranks: Vec<u32>,
    /// When the program starts, seconds, and a fixed setup time before its first phase
    /// (kernel launch).
    pub start_s: f64,
    pub setup_s: f64,
    /// Multiplier on every flow's path latency (a wire protocol's per-hop cost, as
    /// `myriad_collective::ProtocolCost::hop`; 1 by default).
    pub latency_scale: f64,
}

impl Default for Program {
    fn default() -> Self {
        Program {
            name: String::new(),
            phases: Vec::new(),
            paths: Vec::new(),
            ranks: Vec::new(),
            start_s: 0.0,
            setup_s: 0.0,
            latency_scale: 1.0,
        }
    }
}

/// Kernel launch and NCCL setup per collective, as in the analytical model.
pub const LAUNCH_S: f64 = myriad_collective::LAUNCH_US * 1e-6;

/// Why a collective cannot be built for the flow backend.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Domains of a sorted rank list: `(start, len)` runs of ranks in the same domain.
fn domain_runs(ranks: &[u32], apd: u32) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let d = ranks[i] / apd;
        let mut j = i + 1;
        while j < ranks.len() && ranks[j] / apd == d {
            j += 1;
        }
        runs.push((i, j - i));
        i = j;
    }
    runs
}

/// Ring channels for `ranks` (sorted): the number of channels.
pub fn ring_channels(ranks: &[u32], apd: u32) -> u32 {
    let runs = domain_runs(ranks, apd.max(1));
    if runs.len() <= 1 {
        return 1;
    }
    let m = runs.iter().map(|r| r.1).max().unwrap_or(1) as u32;
    if m == 1 {
        2
    } else {
        m
    }
}

/// The flows of one ring step over `ranks` (sorted) moving `bytes` per rank in the step,
/// split over the channels (see the module docs). Flows into `skip_into` are dropped
/// (broadcast chains).
pub fn ring_step(ranks: &[u32], apd: u32, bytes: f64, skip_into: Option<u32>) -> Vec<FlowSpec> {
    let apd = apd.max(1);
    let n = ranks.len();
    let mut out = Vec::new();
    if n < 2 {
        return out;
    }
    let runs = domain_runs(ranks, apd);
    let keep = |f: &FlowSpec| Some(f.dst) != skip_into;
    if runs.len() == 1 {
        for i in 0..n {
            let f = FlowSpec::new(ranks[i], ranks[(i + 1) % n], bytes, 0);
            if keep(&f) {
                out.push(f);
            }
        }
        return out;
    }
    let c_n = ring_channels(ranks, apd);
    let per = bytes / c_n as f64;
    // Intra-domain hops: pair (M[i], M[i+1]) in every channel whose exit member is not i.
    for &(s, len) in &runs {
        if len < 2 {
            continue;
        }
        let mem = &ranks[s..s + len];
        for i in 0..len {
            // Channel c enters at member c % len and leaves at (c + len - 1) % len.
            // Channels c < C with c ≡ i + 1 (mod len).
            let r = (i + 1) % len;
            let exits = (c_n as usize / len + usize::from(r < c_n as usize % len)) as u32;
            let w = c_n - exits;
            if w == 0 {
                continue;
            }
            let f = FlowSpec {
                weight: w,
                ..FlowSpec::new(mem[i], mem[(i + 1) % len], per, 0)
            };
            if keep(&f) {
                out.push(f);
            }
        }
    }
    // Domain crossings: one per channel per domain boundary.
    let nd = runs.len();
    for c in 0..c_n {
        for k in 0..nd {
            let (s, len) = runs[k];
            let (s2, len2) = runs[(k + 1) % nd];
            let exit = ranks[s + (c as usize + len - 1) % len];
            let entry = ranks[s2 + c as usize % len2];
            let f = FlowSpec::new(exit, entry, per, c);
            if keep(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// The latency of a ring over `ranks` (sorted) running `phases` passes (2: all-reduce; 1:
/// all-gather, reduce-scatter), as `myriad_collective`'s ring charges it: a step's send
/// leaves once the previous step's data has come in, so the collective waits on the
/// longest chain of consecutive hops one chunk's data travels around a channel's closed
/// loop, each hop at its route's latency: the loop but its cheapest hop (`n − 1` steps),
/// or twice the loop but its cheapest two consecutive hops (`2(n − 1)` steps). The mean
/// hop times the steps paid `(n − 1)/n` of the loop a pass; a ring over two sites waits on
/// both DCI hops in every pass. The most over the channels [`ring_step`] builds; `None`
/// where a hop has no route (a hand-built network).
fn ring_chain_latency(net: &Network, ranks: &[u32], apd: u32, phases: u32) -> Option<f64> {
    let apd = apd.max(1);
    let n = ranks.len();
    if n < 2 {
        return Some(0.0);
    }
    let (alive, mut buf) = (vec![true; net.links()], Vec::new());
    let runs = domain_runs(ranks, apd);
    // Each member's hop to the next member of its domain (the loop inside the domain).
    let mut intra = vec![0.0; n];
    for &(s, len) in &runs {
        if len < 2 && runs.len() > 1 {
            continue;
        }
        for i in 0..len {
            let (a, b) = (ranks[s + i], ranks[s + (i + 1) % len]);
            intra[s + i] = net.route(&alive, a, b, 0, &mut buf).ok()?;
        }
    }
    let chain = |hops: &[f64]| {
        let (mut sum, mut min1, mut min2) = (0.0, f64::INFINITY, f64::INFINITY);
        for (j, &h) in hops.iter().enumerate() {
            sum += h;
            min1 = min1.min(h);
            min2 = min2.min(h + hops[(j + 1) % hops.len()]);
        }
        if phases >= 2 {
            2.0 * sum - min2
        } else {
            sum - min1
        }
    };
    if runs.len() == 1 {
        return Some(chain(&intra));
    }
    let mut hops = Vec::with_capacity(n);
    let mut worst = 0.0f64;
    let nd = runs.len();
    for c in 0..ring_channels(ranks, apd) as usize {
        hops.clear();
        for k in 0..nd {
            // Channel c enters domain k at member c % len, walks its loop and leaves from
            // the member before, to the next domain's entry (as `ring_step`).
            let (s, len) = runs[k];
            let (s2, len2) = runs[(k + 1) % nd];
            for t in 0..len - 1 {
                hops.push(intra[s + (c + t) % len]);
            }
            let exit = ranks[s + (c + len - 1) % len];
            let entry = ranks[s2 + c % len2];
            hops.push(net.route(&alive, exit, entry, c as u32, &mut buf).ok()?);
        }
        worst = worst.max(chain(&hops));
    }
    Some(worst)
}

/// Chunks a tree is pipelined in: a tree runs as this many identical steps, every edge
/// moving `1/TREE_CHUNKS` of its data per step, each step over when its slowest edge is,
/// so all edges advance at the pace of the bottleneck (a pipeline cannot run its edges
/// faster than its slowest), and the engine simulates one step and advances the rest.
/// The tree's latency (its longest root path, up and down) is charged once over the chunks.
pub const TREE_CHUNKS: u32 = 32;

/// Most ranks of one collective the flow backend simulates (2^20): an all-reduce over
/// 1,008,000 GB200 takes 17 s and 3.8 GB on the project's 2-core machine; 7.2 million were
/// killed at 24 GB.
pub const MAX_FLOW_RANKS: usize = 1 << 20;

/// Most flows of one direct all-to-all the flow backend simulates: 4,096 ranks (16.8 M
/// flows in 64 rounds, about 20 s on the project's 2-core machine for 64 MiB over the DGX
/// H100 SuperPOD example). The flows grow with the square of the group; a whole 32,768-GPU
/// cluster would be 1.07 billion, over a quarter of an hour.
pub const MAX_ALLTOALL_FLOWS: u64 = 4096 * 4095;

/// Peer offsets per all-to-all round for a group of `n` whose pairs across domains are
/// `slots` flows each (NIC port slots): all at once up to 512 ranks, else rounds of about
/// 256k flows.
pub fn alltoall_round(n: u32, slots: u32) -> u32 {
    if n <= 512 {
        n.saturating_sub(1).max(1)
    } else {
        (262_144 / (n.saturating_mul(slots.max(1)))).max(8)
    }
}

/// The flow program of one collective on `ranks` (accelerator ids, any order; sorted and
/// deduplicated here) of `net`. Algorithm `Auto` must be resolved by the caller; the flow backend runs
/// ring, direct and NVLS.
pub fn collective(
    net: &Network,
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    ranks: &[u32],
) -> Result<Program, BuildError> {
    collective_variant(net, op, algorithm, Hier::default(), bytes, ranks)
}

/// The two halves of a hierarchical collective: inside the domains (ring or NVLS) and
/// across them (ring or, for all-reduce, NCCL's double binary tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Hier {
    pub inner_nvls: bool,
    pub outer_tree: bool,
}

impl Hier {
    /// The variants a group can run: NVLS inside only with in-network reduction, trees
    /// across only for all-reduce.
    pub fn variants(op: Op, in_network_reduction: bool) -> Vec<Hier> {
        let mut v = Vec::new();
        for inner_nvls in [false, true] {
            for outer_tree in [false, true] {
                if (inner_nvls && !in_network_reduction) || (outer_tree && op != Op::AllReduce) {
                    continue;
                }
                v.push(Hier {
                    inner_nvls,
                    outer_tree,
                });
            }
        }
        v
    }

    pub fn describe(&self) -> &'static str {
        match (self.inner_nvls, self.outer_tree) {
            (false, false) => "ring inside, ring across",
            (false, true) => "ring inside, tree across",
            (true, false) => "NVLS inside, ring across",
            (true, true) => "NVLS inside, tree across",
        }
    }
}

/// NCCL's double binary tree over `p1` domains (`ncclGetBtree`/`ncclGetDtree`): tree 0 is
/// the in-order binary tree (rank `r`'s parent clears `r`'s lowest set bit and sets the
/// next one up, or just clears it past the end), so half the edges join neighbours and
/// edge lengths double per level; tree 1 is the same tree mirrored (`p1 - 1 - r`), or
/// shifted by one when `p1` is odd, so that each domain is a leaf in at least one tree.
/// Returns (tree, child, parent) edges and the depth.
fn double_tree(p1: usize) -> (Vec<(u32, usize, usize)>, u32) {
    let mut e = Vec::new();
    if p1 < 2 {
        return (e, 0);
    }
    let parent = |r: usize| {
        let bit = 1usize << r.trailing_zeros();
        let up = (r ^ bit) | (bit << 1);
        if up >= p1 {
            r ^ bit
        } else {
            up
        }
    };
    let map = |r: usize| {
        if p1.is_multiple_of(2) {
            p1 - 1 - r
        } else {
            (r + 1) % p1
        }
    };
    for tree in 0..2u32 {
        for r in 1..p1 {
            let q = parent(r);
            if tree == 0 {
                e.push((tree, r, q));
            } else {
                e.push((tree, map(r), map(q)));
            }
        }
    }
    (e, usize::BITS - (p1 - 1).leading_zeros())
}

/// The latency of one of [`double_tree`]'s trees, `tree`, over domains whose member `rep(d)`
/// takes part: the reduce climbs every level from the deepest domain to the root and the
/// broadcast comes back down, so a chunk pays the hops of the longest root path up and
/// down, each at its own route's latency (a tree across two sites pays the DCI link once
/// each way; the mean hop times the depth paid a share of it). `None` where a hop has no
/// route (a hand-built network).
#[allow(clippy::too_many_arguments)]
fn tree_path_latency(
    net: &Network,
    edges: &[(u32, usize, usize)],
    tree: u32,
    p1: usize,
    rep: &dyn Fn(usize) -> u32,
    flow_id: u32,
    alive: &[bool],
    buf: &mut Vec<u32>,
) -> Option<f64> {
    let mut parent = vec![usize::MAX; p1];
    let (mut up, mut down) = (vec![0.0; p1], vec![0.0; p1]);
    for &(_, x, q) in edges.iter().filter(|e| e.0 == tree) {
        parent[x] = q;
        up[x] = net.route(alive, rep(x), rep(q), flow_id, buf).ok()?;
        down[x] = net.route(alive, rep(q), rep(x), flow_id, buf).ok()?;
    }
    let mut worst = 0.0f64;
    for x in 0..p1 {
        let (mut sum, mut y, mut hops) = (0.0, x, 0);
        while parent[y] != usize::MAX && hops < p1 {
            sum += up[y] + down[y];
            y = parent[y];
            hops += 1;
        }
        worst = worst.max(sum);
    }
    Some(worst)
}

/// [`collective`] with the hierarchical variant given.
pub fn collective_variant(
    net: &Network,
    op: Op,
    algorithm: Algorithm,
    hier: Hier,
    bytes: f64,
    ranks: &[u32],
) -> Result<Program, BuildError> {
    if ranks.len() > MAX_FLOW_RANKS {
        return Err(BuildError(format!(
            "a collective over {} ranks; the flow backend simulates at most {MAX_FLOW_RANKS} (an all-reduce over 1,008,000 GB200 takes 17 s and 3.8 GB): time a smaller group (--group), or use the analytical backend",
            ranks.len()
        )));
    }
    let mut p = build_variant(net, op, algorithm, hier, bytes, ranks)?;
    split_connections(
        &mut p,
        net.accelerators_per_domain(),
        net.qps_per_connection(),
        net.nic_slots(),
    );
    Ok(p)
}

/// Splits every flow between two scale-up domains into `qps` flows of equal share with
/// their own flow ids (`NCCL_IB_QPS_PER_CONNECTION`): under hash ECMP each is hashed on its
/// own; and each of those into one flow per NIC port slot of the accelerator (`slots`:
/// planes × NICs × ports), whose ids put them on distinct slots (`Network::route` takes
/// slots by `flow id % slots` plus a hash of the pair), as NCCL's channels and RoCE LAG's queue pairs
/// use every port of a dual-plane NIC: one flow per connection used one 200G plane of
/// Alibaba HPN's 2 × 200G NICs, and a send-recv or a one-rank-per-node ring took twice the
/// analytical time. All-to-all rounds (split over the slots, not the queue pairs, when
/// they are generated: `PhaseFlows::AllToAll`) and broadcast chains (whose latency is a
/// sum over flows) are left whole.
fn split_connections(p: &mut Program, apd: u32, qps: u32, slots: u32) {
    let (qps, slots) = (qps.max(1), slots.max(1));
    if qps * slots <= 1 {
        return;
    }
    let apd = apd.max(1);
    for ph in &mut p.phases {
        if matches!(ph.latency, LatencyRule::SumPerChain(_)) {
            continue;
        }
        let PhaseFlows::List(flows) = &mut ph.flows else {
            continue;
        };
        let mut out = Vec::with_capacity(flows.len());
        for f in flows.iter() {
            if f.path.is_some() || f.src / apd == f.dst / apd {
                out.push(*f);
                continue;
            }
            for q in 0..qps {
                let id = f.flow_id.wrapping_mul(qps).wrapping_add(q);
                for s in 0..slots {
                    out.push(FlowSpec {
                        bytes: f.bytes / (qps * slots) as f64,
                        split: f.split * qps * slots,
                        flow_id: id.wrapping_mul(slots).wrapping_add(s),
                        ..*f
                    });
                }
            }
        }
        *flows = out;
    }
}

/// Whether `algorithm` runs `op` at all (the group's shape aside), and why not.
pub(crate) fn op_support(op: Op, algorithm: Algorithm) -> Result<(), &'static str> {
    let ok = match algorithm {
        Algorithm::Ring => matches!(
            op,
            Op::AllReduce | Op::AllGather | Op::ReduceScatter | Op::Broadcast
        ),
        Algorithm::Direct => matches!(op, Op::AllToAll | Op::SendRecv),
        Algorithm::Tree => op == Op::AllReduce,
        Algorithm::Nvls | Algorithm::Hierarchical => {
            matches!(op, Op::AllReduce | Op::AllGather | Op::ReduceScatter)
        }
        Algorithm::Auto => return Err("resolve Auto first (see flow_choice)"),
    };
    if ok {
        return Ok(());
    }
    Err(match algorithm {
        Algorithm::Ring => "rings run all-reduce, all-gather, reduce-scatter and broadcast",
        Algorithm::Direct => "direct runs all-to-all and send-recv",
        Algorithm::Tree => "NCCL's trees run all-reduce only",
        Algorithm::Nvls => "NVLS runs all-reduce, all-gather and reduce-scatter",
        _ => "hierarchical runs all-reduce, all-gather and reduce-scatter",
    })
}

fn build_variant(
    net: &Network,
    op: Op,
    algorithm: Algorithm,
    hier: Hier,
    bytes: f64,
    ranks: &[u32],
) -> Result<Program, BuildError> {
    let apd = net.accelerators_per_domain();
    let in_network_reduction = net.in_network_reduction;
    let scale_up_links = |a: u32| (net.scale_up_link(a, true), net.scale_up_link(a, false));
    let mut r = ranks.to_vec();
    r.sort_unstable();
    r.dedup();
    let n = r.len() as u32;
    let nf = n as f64;
    let name = format!("{} {} n={n}", op.name(), algorithm.name());
    let mut p = Program {
        name,
        setup_s: LAUNCH_S,
        ..Default::default()
    };
    let unsupported = |why: &str| {
        Err(BuildError(format!(
            "the flow backend cannot run {} with {}: {why}",
            op.name(),
            algorithm.name()
        )))
    };
    // What the algorithm cannot run is refused whatever the size and group, before the
    // shortcut for an empty message or a single rank (as the analytical model refuses it).
    if let Err(why) = op_support(op, algorithm) {
        return unsupported(why);
    }
    match algorithm {
        Algorithm::Nvls if !in_network_reduction => {
            return unsupported("the scale-up domain has no in-network reduction")
        }
        Algorithm::Nvls
            if r.first().map(|a| a / apd.max(1)) != r.last().map(|a| a / apd.max(1)) =>
        {
            return unsupported("NVLS works inside one scale-up domain")
        }
        Algorithm::Hierarchical => {
            let runs = domain_runs(&r, apd.max(1));
            if runs.len() < 2 || runs[0].1 < 2 || runs.iter().any(|x| x.1 != runs[0].1) {
                return unsupported(
                    "hierarchical needs the same number (at least 2) of members in each of several domains",
                );
            }
        }
        _ => {}
    }
    if n < 2 || bytes <= 0.0 {
        p.ranks = r;
        p.setup_s = 0.0;
        return Ok(p);
    }
    match algorithm {
        Algorithm::Ring => {
            let chains = ring_channels(&r, apd);
            let (steps, per_step, skip) = match op {
                Op::AllReduce => (2 * (n - 1), bytes / nf, None),
                Op::AllGather | Op::ReduceScatter => (n - 1, bytes / nf, None),
                Op::Broadcast => (1, bytes, Some(r[0])),
                _ => {
                    return unsupported(
                        "rings run all-reduce, all-gather, reduce-scatter and broadcast",
                    )
                }
            };
            // Broadcast chains pay each hop once (the sum over their flows); the other rings
            // their longest chunk chain, spread over the steps.
            let (latency, extra_latency_s) = match skip {
                Some(_) => (LatencyRule::SumPerChain(chains), 0.0),
                None => match ring_chain_latency(net, &r, apd, if steps > n - 1 { 2 } else { 1 }) {
                    Some(l) => (LatencyRule::Scaled(0.0), l / steps as f64),
                    None => (LatencyRule::Mean, 0.0),
                },
            };
            p.phases.push(Phase {
                flows: PhaseFlows::List(ring_step(&r, apd, per_step, skip)),
                latency,
                repeat: steps,
                extra_s: 0.0,
                label: "step",
                fixed_rates: false,
                extra_latency_s,
            });
        }
        Algorithm::Direct => match op {
            Op::AllToAll => {
                let flows = n as u64 * (n as u64 - 1);
                if flows > MAX_ALLTOALL_FLOWS {
                    return Err(BuildError(format!(
                        "an all-to-all over {n} ranks is {flows} flows; the flow backend simulates at most {MAX_ALLTOALL_FLOWS} (4,096 ranks): time a smaller group (--group ep, or explicit ranks), or use the analytical backend"
                    )));
                }
                let slots = net.nic_slots();
                let g = alltoall_round(n, slots);
                let mut o = 1;
                while o < n {
                    let last = (o + g - 1).min(n - 1);
                    // NCCL issues the round's peers in turn, P2P_CONCURRENCY at a time: the
                    // busiest sender's issue latencies, on top of the slowest flow's path.
                    let issue = (0..n as usize)
                        .map(|i| {
                            (o..=last)
                                .map(|k| {
                                    net.peer_issue_latency(r[i], r[(i + k as usize) % n as usize])
                                })
                                .sum::<f64>()
                        })
                        .fold(0.0, f64::max)
                        / P2P_CONCURRENCY;
                    p.phases.push(Phase {
                        flows: PhaseFlows::AllToAll {
                            first: o,
                            last,
                            bytes: bytes / nf,
                            slots,
                            apd: apd.max(1),
                        },
                        latency: LatencyRule::Max,
                        repeat: 1,
                        extra_s: 0.0,
                        label: "round",
                        fixed_rates: false,
                        extra_latency_s: issue,
                    });
                    o = last + 1;
                }
            }
            Op::SendRecv => {
                let flows = (0..n as usize)
                    .map(|i| FlowSpec::new(r[i], r[(i + 1) % n as usize], bytes, 0))
                    .collect();
                p.phases.push(Phase {
                    label: "send",
                    fixed_rates: false,
                    extra_latency_s: 0.0,
                    ..Phase::once(flows)
                });
            }
            _ => return unsupported("direct runs all-to-all and send-recv"),
        },
        Algorithm::Nvls => {
            let (up, down) = match op {
                Op::AllReduce => (bytes * (1.0 + 1.0 / nf), bytes * (1.0 + 1.0 / nf)),
                Op::AllGather => (bytes / nf, bytes),
                Op::ReduceScatter => (bytes, bytes / nf),
                _ => return unsupported("NVLS runs all-reduce, all-gather and reduce-scatter"),
            };
            let mut flows = Vec::new();
            for &a in &r {
                let (u, d) = scale_up_links(a);
                for (link, b) in [(u, up), (d, down)] {
                    p.paths.push(vec![link]);
                    flows.push(FlowSpec {
                        src: a,
                        dst: a,
                        ..FlowSpec::on_path(p.paths.len() as u32 - 1, b / NVLS_BANDWIDTH_FACTOR)
                    });
                }
            }
            p.phases.push(Phase {
                flows: PhaseFlows::List(flows),
                latency: LatencyRule::Max,
                repeat: 1,
                extra_s: NVLS_FIXED_US * 1e-6,
                label: "nvls",
                fixed_rates: false,
                // NVLS's two steps at the scale-up latency: the flows' own path (the
                // multimem load-reduce through the switch) is the first, the multicast
                // store the second.
                extra_latency_s: net.su_lat,
            });
        }
        Algorithm::Hierarchical => {
            if !matches!(op, Op::AllReduce | Op::AllGather | Op::ReduceScatter) {
                return unsupported("hierarchical runs all-reduce, all-gather and reduce-scatter");
            }
            let runs = domain_runs(&r, apd.max(1));
            let (s0, p1) = (runs[0].1, runs.len());
            if s0 < 2 || p1 < 2 || runs.iter().any(|x| x.1 != s0) {
                return unsupported(
                    "hierarchical needs the same number (at least 2) of members in each of several domains",
                );
            }
            if hier.inner_nvls && !in_network_reduction {
                return unsupported(
                    "NVLS inside needs in-network reduction in the scale-up domain",
                );
            }
            if hier.outer_tree && op != Op::AllReduce {
                return unsupported("trees run all-reduce only");
            }
            let (s0f, p1f) = (s0 as f64, p1 as f64);
            let all_reduce = op == Op::AllReduce;
            let phases_n = if all_reduce { 2.0 } else { 1.0 };
            let shard = bytes / s0f;
            let (outer_steps, depth) = if hier.outer_tree {
                (TREE_CHUNKS, double_tree(p1).1)
            } else {
                ((phases_n as usize * (p1 - 1)) as u32, 0)
            };
            let spread = 1.0 / outer_steps as f64;
            let mut flows = Vec::new();
            // The outer trees' fill: the longest root path of any member's tree.
            let mut tree_lat = Some(0.0f64);
            if hier.outer_tree {
                let (edges, _) = double_tree(p1);
                let (alive, mut buf) = (vec![true; net.links()], Vec::new());
                for j in 0..s0 {
                    let rep = |d: usize| r[runs[d].0 + j];
                    for tree in 0..2 {
                        tree_lat = tree_lat.and_then(|w| {
                            tree_path_latency(net, &edges, tree, p1, &rep, tree, &alive, &mut buf)
                                .map(|l| w.max(l))
                        });
                    }
                }
            }
            if hier.outer_tree {
                // Member j of every domain: a double binary tree on the shard S / s0.
                let (edges, _) = double_tree(p1);
                for j in 0..s0 {
                    for &(tree, c, q) in &edges {
                        let (a, b) = (r[runs[c].0 + j], r[runs[q].0 + j]);
                        // At the trees' rate (`TREE_BANDWIDTH_FACTOR`), as in `Tree`.
                        let half = shard / 2.0 / TREE_CHUNKS as f64 / TREE_BANDWIDTH_FACTOR;
                        flows.push(FlowSpec::new(a, b, half, tree));
                        flows.push(FlowSpec::new(b, a, half, tree));
                    }
                }
            } else {
                // Member j of every domain (its own NIC): a ring on the shard.
                for j in 0..s0 {
                    let sub: Vec<u32> = runs.iter().map(|&(s, _)| r[s + j]).collect();
                    flows.extend(ring_step(&sub, apd, shard / p1f, None));
                }
            }
            // The inner reduce-scatter and all-gather run on the scale-up links alongside
            // (pipelined), spread evenly over the outer steps.
            for &(s, len) in &runs {
                let mem = &r[s..s + len];
                if hier.inner_nvls {
                    let (up, down) = match op {
                        Op::AllReduce => (bytes * (1.0 + 1.0 / s0f), bytes * (1.0 + 1.0 / s0f)),
                        Op::AllGather => (bytes / s0f, bytes),
                        _ => (bytes, bytes / s0f),
                    };
                    for &a in mem {
                        let (u, d) = scale_up_links(a);
                        for (link, b) in [(u, up), (d, down)] {
                            p.paths.push(vec![link]);
                            let mut f = FlowSpec::on_path(
                                p.paths.len() as u32 - 1,
                                b / NVLS_BANDWIDTH_FACTOR * spread,
                            );
                            (f.src, f.dst, f.timed) = (a, a, false);
                            flows.push(f);
                        }
                    }
                } else {
                    let per = phases_n * (s0f - 1.0) / s0f * bytes * spread;
                    for mut f in ring_step(mem, apd, per, None) {
                        f.timed = false;
                        flows.push(f);
                    }
                }
            }
            // The outer rings' longest chunk chain (member j of every domain), spread over
            // the steps.
            let mut ring_lat = Some(0.0f64);
            if !hier.outer_tree {
                for j in 0..s0 {
                    let sub: Vec<u32> = runs.iter().map(|&(s, _)| r[s + j]).collect();
                    let phases = if all_reduce { 2 } else { 1 };
                    ring_lat = ring_lat
                        .and_then(|w| ring_chain_latency(net, &sub, apd, phases).map(|l| w.max(l)));
                }
            }
            let (latency, extra_latency_s) = match (hier.outer_tree, tree_lat) {
                (false, _) => match ring_lat {
                    Some(l) => (LatencyRule::Scaled(0.0), l / outer_steps as f64),
                    None => (LatencyRule::Mean, 0.0),
                },
                // Paid once over the chunks.
                (true, Some(l)) => (LatencyRule::Scaled(0.0), l / TREE_CHUNKS as f64),
                (true, None) => (
                    LatencyRule::Scaled(2.0 * depth.max(1) as f64 / TREE_CHUNKS as f64),
                    0.0,
                ),
            };
            p.phases.push(Phase {
                flows: PhaseFlows::List(flows),
                latency,
                repeat: outer_steps,
                extra_s: 0.0,
                label: if hier.outer_tree { "tree" } else { "step" },
                fixed_rates: hier.outer_tree,
                extra_latency_s,
            });
            // Pipeline fill: the inner steps at the scale-up latency (NVLS: its two steps
            // and fixed cost).
            let (fixed, fill) = if hier.inner_nvls {
                (NVLS_FIXED_US * 1e-6, 2.0 * net.su_lat)
            } else {
                (0.0, phases_n * (s0f - 1.0) * net.su_lat)
            };
            p.phases.push(Phase {
                flows: PhaseFlows::List(Vec::new()),
                latency: LatencyRule::Max,
                repeat: 1,
                extra_s: fixed,
                label: "fill",
                fixed_rates: false,
                extra_latency_s: fill,
            });
        }
        Algorithm::Tree => {
            if op != Op::AllReduce {
                return unsupported("NCCL's trees run all-reduce only");
            }
            let runs = domain_runs(&r, apd.max(1));
            let p1 = runs.len();
            let s0 = runs.iter().map(|x| x.1).max().unwrap_or(1);
            // NCCL's trees reach `TREE_BANDWIDTH_FACTOR` of the links' rate (reduce and
            // broadcast in one pipelined kernel; its tuner's tree derating), as the
            // analytical model charges them: the bytes on the wire are inflated by it, as
            // NVLS's are by its factor.
            let chunk = bytes / TREE_CHUNKS as f64 / TREE_BANDWIDTH_FACTOR;
            let mut flows = Vec::new();
            // NCCL runs a tree per channel, each leaving the domain through its own NIC:
            // with m members per domain, m channels, channel c entering and leaving every
            // domain through its member c. Each channel is duplicated over NCCL's two
            // complementary binary trees over the domains (the double binary tree,
            // `ncclTopoPostset`'s second half of the channels on the mirrored tree), half
            // its data on each, so every NIC is interior in one tree and a leaf in the
            // other (3 + 1 edges' sends over two halves, not 3 in an interior domain's
            // tree against 1 in a leaf's). Tree channel 2c + t is channel c on tree t
            // (m = 1: the two trees through the one NIC). Inside each domain, channel c's
            // chain starts at member c: reduce toward it, broadcast back.
            let channels = s0.max(1);
            let per = chunk / channels as f64;
            let (edges, depth) = double_tree(p1);
            // The trees' fill: the longest root path of any channel's trees.
            let mut tree_lat = Some(0.0f64);
            let (alive, mut buf) = (vec![true; net.links()], Vec::new());
            for c in 0..channels {
                let rep = |d: usize| {
                    let (s, len) = runs[d];
                    r[s + c % len]
                };
                for t in 0..2u32 {
                    tree_lat = tree_lat.and_then(|w| {
                        tree_path_latency(
                            net,
                            &edges,
                            t,
                            p1,
                            &rep,
                            2 * c as u32 + t,
                            &alive,
                            &mut buf,
                        )
                        .map(|l| w.max(l))
                    });
                }
            }
            for c in 0..channels {
                for &(s, len) in &runs {
                    let at = |k: usize| r[s + (c + k) % len];
                    for i in 0..len.saturating_sub(1) {
                        for (a, b) in [(at(i + 1), at(i)), (at(i), at(i + 1))] {
                            let mut f = FlowSpec::new(a, b, per, c as u32);
                            f.timed = false;
                            flows.push(f);
                        }
                    }
                }
                let rep = |d: usize| {
                    let (s, len) = runs[d];
                    r[s + c % len]
                };
                for &(t, x, q) in &edges {
                    let id = 2 * c as u32 + t;
                    flows.push(FlowSpec::new(rep(x), rep(q), per / 2.0, id));
                    flows.push(FlowSpec::new(rep(q), rep(x), per / 2.0, id));
                }
            }
            // The chains' hops, up and down, once over the chunks (as the tree's levels):
            // the phase runs TREE_CHUNKS times and adds this at each run.
            let chain = 2.0 * (s0 as f64 - 1.0) * net.su_lat / TREE_CHUNKS as f64;
            // Reduce up the longest root path, then broadcast down it, once over the chunks.
            let (latency, extra_latency_s) = match tree_lat {
                Some(l) => (LatencyRule::Scaled(0.0), chain + l / TREE_CHUNKS as f64),
                None => (
                    LatencyRule::Scaled(2.0 * depth.max(1) as f64 / TREE_CHUNKS as f64),
                    chain,
                ),
            };
            p.phases.push(Phase {
                flows: PhaseFlows::List(flows),
                latency,
                repeat: TREE_CHUNKS,
                extra_s: 0.0,
                label: "tree",
                fixed_rates: true,
                extra_latency_s,
            });
        }
        Algorithm::Auto => return unsupported("resolve Auto first (see flow_choice)"),
    }
    p.ranks = r;
    Ok(p)
}
