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
//!   fairness, which gives flows on identical paths identical rates).
//! - **Broadcast**: the ring's channels as chains from the root (every flow into the root
//!   dropped), `S / C` per channel, one phase: a pipelined chain is bandwidth-bound by its
//!   slowest hop.
//! - **NVLS** (in-switch reduction inside one scale-up domain): each rank sends through
//!   its own scale-up links `S(1 + 1/n)` (all-reduce) or `S` (all-gather, reduce-scatter) in
//!   the busy direction, scaled by `myriad_collective::NVLS_BANDWIDTH_FACTOR`, plus
//!   `NVLS_FIXED_US`, as in the analytical model.
//! - **Direct all-to-all**: each rank sends `S/n` to every other rank. Rounds of `g` peer
//!   offsets (`rank i` sends to `i + o` for the round's offsets `o`), all of a round's
//!   flows concurrently; `g = n - 1` (everything at once) up to 512 ranks, else
//!   `max(8, 262144 / n)` so that a round holds about 256k flows.
//! - **Send-recv**: rank `i` sends `S` to rank `i + 1` (nccl-tests `sendrecv`).

use crate::net::Network;
use myriad_collective::{Algorithm, Op, NVLS_BANDWIDTH_FACTOR, NVLS_FIXED_US};

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
}

impl FlowSpec {
    pub fn new(src: u32, dst: u32, bytes: f64, flow_id: u32) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            bytes,
            flow_id,
            weight: 1,
            path: None,
        }
    }

    /// A flow along explicit path `path` (an index into `Program::paths`).
    pub fn on_path(path: u32, bytes: f64) -> FlowSpec {
        FlowSpec {
            src: path,
            dst: path,
            bytes,
            flow_id: 0,
            weight: 1,
            path: Some(path),
        }
    }
}

/// The flows of a phase.
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseFlows {
    List(Vec<FlowSpec>),
    /// All-to-all round: every `Program::ranks[i]` sends `bytes` to `ranks[(i + o) % n]`
    /// for `o` in `first..=last` (generated when the phase starts).
    AllToAll {
        first: u32,
        last: u32,
        bytes: f64,
    },
}

/// When a phase is over, given its flows' last bytes (drains) and path latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyRule {
    /// At the last arrival: max over flows of (drain + latency). Concurrent independent
    /// flows (all-to-all rounds, send-recv, NVLS, hand-made traffic).
    Max,
    /// At the last drain plus the weighted mean latency of the phase's flows: one step of a
    /// pipelined ring, whose data crosses each hop in turn, so that over a collective the
    /// latency adds up to the sum of the hop latencies a chunk travels (the analytical
    /// model's `Λ`), not to steps × the slowest hop.
    Mean,
    /// At the last drain plus the sum of the flows' latencies (× weight) divided by the
    /// number of chains: a pipelined chain (broadcast) pays every hop once.
    SumPerChain(u32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub flows: PhaseFlows,
    pub latency: LatencyRule,
    /// Times the phase runs back to back.
    pub repeat: u32,
    /// Fixed time added after the phase's last arrival, seconds.
    pub extra_s: f64,
    /// Name in traces (`step`, `round`).
    pub label: &'static str,
}

impl Phase {
    pub fn once(flows: Vec<FlowSpec>) -> Phase {
        Phase {
            flows: PhaseFlows::List(flows),
            latency: LatencyRule::Max,
            repeat: 1,
            extra_s: 0.0,
            label: "phase",
        }
    }

    /// Materialise the flows of this phase into `out`.
    pub(crate) fn materialize(&self, ranks: &[u32], out: &mut Vec<FlowSpec>) {
        out.clear();
        match &self.flows {
            PhaseFlows::List(v) => out.extend_from_slice(v),
            PhaseFlows::AllToAll { first, last, bytes } => {
                let n = ranks.len();
                for o in *first..=*last {
                    for i in 0..n {
                        let j = (i + o as usize) % n;
                        out.push(FlowSpec::new(ranks[i], ranks[j], *bytes, 0));
                    }
                }
            }
        }
    }

    /// Flows per run of the phase.
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

/// Peer offsets per all-to-all round for a group of `n`.
pub fn alltoall_round(n: u32) -> u32 {
    if n <= 512 {
        n.saturating_sub(1).max(1)
    } else {
        (262_144 / n).max(8)
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
    let apd = net.accelerators_per_domain();
    let in_network_reduction = net.in_network_reduction;
    let scale_up_links = |a: u32| (net.scale_up_link(a, true), net.scale_up_link(a, false));
    let mut r = ranks.to_vec();
    r.sort_unstable();
    r.dedup();
    let n = r.len() as u32;
    let nf = n as f64;
    let name = format!("{op:?} {algorithm:?} n={n}");
    let mut p = Program {
        name,
        setup_s: LAUNCH_S,
        ..Default::default()
    };
    if n < 2 || bytes <= 0.0 {
        p.ranks = r;
        p.setup_s = 0.0;
        return Ok(p);
    }
    let unsupported = |why: &str| {
        Err(BuildError(format!(
            "the flow backend cannot run {op:?} with {algorithm:?}: {why}"
        )))
    };
    match algorithm {
        Algorithm::Ring => {
            let chains = ring_channels(&r, apd);
            let (steps, per_step, skip) = match op {
                Op::AllReduce => (2 * (n - 1), bytes / nf, None),
                Op::AllGather | Op::ReduceScatter => (n - 1, bytes / nf, None),
                Op::Broadcast => (1, bytes, Some(r[0])),
                _ => return unsupported("rings run all-reduce, all-gather, reduce-scatter and broadcast"),
            };
            p.phases.push(Phase {
                flows: PhaseFlows::List(ring_step(&r, apd, per_step, skip)),
                latency: if skip.is_some() {
                    LatencyRule::SumPerChain(chains)
                } else {
                    LatencyRule::Mean
                },
                repeat: steps,
                extra_s: 0.0,
                label: "step",
            });
        }
        Algorithm::Direct => match op {
            Op::AllToAll => {
                let g = alltoall_round(n);
                let mut o = 1;
                while o < n {
                    let last = (o + g - 1).min(n - 1);
                    p.phases.push(Phase {
                        flows: PhaseFlows::AllToAll {
                            first: o,
                            last,
                            bytes: bytes / nf,
                        },
                        latency: LatencyRule::Max,
                        repeat: 1,
                        extra_s: 0.0,
                        label: "round",
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
                    ..Phase::once(flows)
                });
            }
            _ => return unsupported("direct runs all-to-all and send-recv"),
        },
        Algorithm::Nvls => {
            if !in_network_reduction {
                return unsupported("the scale-up domain has no in-network reduction");
            }
            if r[0] / apd.max(1) != r[n as usize - 1] / apd.max(1) {
                return unsupported("NVLS works inside one scale-up domain");
            }
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
                extra_s: NVLS_FIXED_US * 1e-6 + 2.0 * net.su_lat,
                label: "nvls",
            });
        }
        Algorithm::Tree | Algorithm::Hierarchical | Algorithm::Auto => {
            return unsupported(
                "the flow backend simulates ring, direct and NVLS; tree and hierarchical are analytical only",
            )
        }
    }
    p.ranks = r;
    Ok(p)
}
