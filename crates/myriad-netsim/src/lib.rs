//! Flow-level network simulation of collectives on a built cluster (issue 6).
//!
//! The analytical model (`myriad-collective`) assumes every link is free. This crate
//! routes each flow of a collective over the cluster's actual scale-out graph
//! (`myriad_cluster::Topology`) and scale-up domains, shares link bandwidth max-min fairly
//! between the flows that are active at each moment, and moves time from event to event:
//! oversubscription, ECMP collisions, DCI bottlenecks, and failed links, switches, NICs and
//! domains become traffic effects instead of constants.
//!
//! - [`Network`] (`net`): directed links with capacities and latencies, routing (folded
//!   Clos up-down with a documented ECMP hash, rail-aware, DCI), from a `BuiltCluster`, or
//!   hand-built for tests.
//! - [`Program`] (`program`): a collective as phases of flows (ring steps, all-to-all
//!   rounds, NVLS, send-recv); any traffic can be written the same way.
//! - [`simulate`] (`engine`): the discrete-event loop and max-min fair rates, with faults.
//! - [`chrome_trace`] (`trace`): a Chrome/Perfetto trace of a run.
//!
//! - [`FlowTimer`] (`timer`): the flow backend behind `myriad_collective::CollectiveTimer`,
//!   so `myriad_train::estimate_with` times a whole training step by simulation.
//!
//! [`time_collective`] puts them together for one collective and reports what
//! `myriad_collective::time` does (time, algorithm and bus bandwidth) plus the most loaded
//! links. Pure: no IO.
//!
//! ```
//! use myriad_netsim::{simulate, FlowSpec, Network, Phase, Program, SimOptions};
//!
//! // Two flows of 1 GB on one 100 GB/s link: each gets half, both end at 20 ms.
//! let net = Network::custom(vec![100e9], vec![0.0]);
//! let prog = Program {
//!     name: "two flows".into(),
//!     paths: vec![vec![0]],
//!     phases: vec![Phase::once(vec![FlowSpec::on_path(0, 1e9), FlowSpec::on_path(0, 1e9)])],
//!     ..Default::default()
//! };
//! let r = simulate(&net, &[prog], &SimOptions::default()).unwrap();
//! assert!((r.time_s - 0.02).abs() < 1e-12);
//! ```

pub mod engine;
pub mod net;
pub mod program;
mod queue;
pub mod timer;
pub mod trace;

pub use engine::{
    simulate, Fault, FaultTarget, ProgramResult, SimError, SimOptions, SimResult, Slice,
};
pub use net::{flow_hash, LinkRef, Network, Routing, MAX_PATH};
pub use program::{
    collective, collective_variant, FlowSpec, Hier, LatencyRule, Phase, PhaseFlows, Program,
    LAUNCH_S,
};
pub use timer::{FlowTimer, TimedCollective};
pub use trace::{chrome_trace, chrome_trace_parts};

use myriad_cluster::Level;
use myriad_collective::{
    bus_factor, time_group, Algorithm, GroupSpan, Op, Protocol, ProtocolCost, RankGroup, PROTOCOLS,
};
use serde::Serialize;

/// Ranks `first, first + stride, …` (`n` of them): a parallel group laid out as
/// `myriad_train::Plan::group` places it (the group holding `first`).
pub fn strided(first: u64, n: u64, stride: u64) -> Vec<u32> {
    (0..n).map(|k| (first + k * stride.max(1)) as u32).collect()
}

/// What the flow backend runs: an algorithm and NCCL's wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// For `Hierarchical`: NVLS or a ring inside the domains, a tree or a ring across.
    pub hier: Hier,
}

impl Choice {
    /// `algorithm` with the Simple protocol.
    pub fn simple(algorithm: Algorithm) -> Choice {
        Choice {
            algorithm,
            protocol: Protocol::Simple,
            hier: Hier::default(),
        }
    }
}

/// The algorithm and protocol the flow backend runs for `algorithm`: `Auto` takes the
/// analytical model's choice (NCCL's tuner) for this op, size and group. The protocol is
/// the one the analytical model picks for that algorithm: its `bw` factor inflates the
/// bytes on the wire and its `hop` factor scales path latencies, so both backends price
/// protocols alike.
pub fn flow_choice(
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    span: &GroupSpan,
    levels: &[Level],
) -> Choice {
    let fallback = match op {
        Op::AllToAll | Op::SendRecv => Algorithm::Direct,
        _ => Algorithm::Ring,
    };
    let analytical = |a| myriad_collective::time(op, a, bytes, span, levels).ok();
    let algo = match algorithm {
        Algorithm::Auto => analytical(Algorithm::Auto)
            .map(|t| t.algorithm)
            .unwrap_or(fallback),
        // A hierarchical all-reduce asked of a group without several members in each of
        // several domains runs the ring (as `time_collective` falls back to it), on the
        // ring's protocol: not on Simple, which the refused algorithm left (a 64 KiB
        // fallback ring over 16 nodes took 879 µs against the ring's 257 µs on LL).
        Algorithm::Hierarchical
            if analytical(Algorithm::Hierarchical).is_none()
                && program::op_support(op, Algorithm::Hierarchical).is_ok() =>
        {
            Algorithm::Ring
        }
        a => a,
    };
    let protocol = p2p_protocol(
        op,
        algo,
        analytical(algo)
            .map(|t| t.protocol)
            .unwrap_or(Protocol::Simple),
    );
    // The hierarchical halves the analytical model picks, with the protocol it priced
    // them at: weighing each half on its own (NVLS against a ring inside, a tree against a
    // ring across) ran NVLS inside at the 32 MiB all-reduce over 8 DGX where the model's
    // best was a ring inside on LL128 (NVLS is Simple only): 284 µs against 241, and 235
    // at 16 MiB on the other variant. Where the model takes an in-network reduction
    // across, which the flow backend does not run, the halves are weighed apart.
    let mut hier = Hier::default();
    let picked = (algo == Algorithm::Hierarchical)
        .then(|| myriad_collective::hierarchical_variant(op, bytes, span, levels).ok())
        .flatten()
        .filter(|v| v.outer != myriad_collective::Outer::InNetwork);
    if let Some(v) = picked {
        hier.inner_nvls = v.inner_nvls;
        hier.outer_tree = v.outer == myriad_collective::Outer::Tree;
    } else if algo == Algorithm::Hierarchical && span.spans.len() > 1 {
        let s0 = span.spans[0];
        let shard = bytes / s0 as f64;
        let mut inner = vec![1; span.spans.len()];
        inner[0] = s0;
        let inner = GroupSpan::new(inner);
        let mut outer = span.spans.clone();
        outer[0] = 1;
        let outer = GroupSpan::new(outer);
        let t = |a, b, s: &GroupSpan| {
            myriad_collective::time(op, a, b, s, levels)
                .map(|t| t.time_s)
                .unwrap_or(f64::INFINITY)
        };
        hier.inner_nvls = t(Algorithm::Nvls, bytes, &inner) < t(Algorithm::Ring, bytes, &inner);
        hier.outer_tree = t(Algorithm::Tree, shard, &outer) < t(Algorithm::Ring, shard, &outer);
    }
    Choice {
        algorithm: algo,
        protocol,
        hier,
    }
}

/// [`flow_choice`] for an explicit group of ranks, which may be uneven (`0-8` on 8-GPU
/// domains). The algorithm is the one the flow backend will run on these ranks (`Auto`:
/// the analytical choice for this group; hierarchical on a group without the same number of
/// members in each domain: the ring, as [`time_collective`] falls back to it) and the
/// protocol the one NCCL's tuner picks for that algorithm on these ranks
/// ([`myriad_collective::time_group`]), not for the rounded-up symmetric group or for an
/// algorithm that does not run.
pub fn flow_choice_for(
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    group: &RankGroup,
    levels: &[Level],
) -> Choice {
    let span = group.span();
    let mut choice = flow_choice(op, algorithm, bytes, &span, levels);
    if group.is_symmetric() {
        return choice;
    }
    let algo = match algorithm {
        Algorithm::Auto => time_group(op, Algorithm::Auto, bytes, group, levels)
            .map(|(t, _)| t.algorithm)
            .unwrap_or(choice.algorithm),
        a => a,
    };
    choice.algorithm = match algo {
        Algorithm::Hierarchical if !group.holds_hierarchical() => Algorithm::Ring,
        a => a,
    };
    // The halves of a hierarchical run the span's Auto did not pick (an uneven group whose
    // hierarchical beats its exact ring), weighed as for the span.
    if choice.algorithm == Algorithm::Hierarchical {
        choice.hier = flow_choice(op, Algorithm::Hierarchical, bytes, &span, levels).hier;
    }
    choice.protocol = p2p_protocol(
        op,
        choice.algorithm,
        time_group(op, choice.algorithm, bytes, group, levels)
            .map(|(t, _)| t.protocol)
            .unwrap_or(Protocol::Simple),
    );
    choice
}

/// Whether `op` on `algorithm` is NCCL's point-to-point traffic (a direct all-to-all),
/// whose protocol is LL below a size and Simple above it, never LL128
/// (`NCCL_P2P_LL_THRESHOLD`).
pub fn runs_p2p_protocols(op: Op, algorithm: Algorithm) -> bool {
    op == Op::AllToAll && algorithm == Algorithm::Direct
}

/// `protocol` as point-to-point traffic runs it: LL128 is Simple there.
fn p2p_protocol(op: Op, algorithm: Algorithm, protocol: Protocol) -> Protocol {
    match protocol {
        Protocol::Ll128 if runs_p2p_protocols(op, algorithm) => Protocol::Simple,
        p => p,
    }
}

/// A point-to-point collective (see [`runs_p2p_protocols`]) on whichever of LL and Simple
/// the flow simulation finds faster, `run` timing it on a protocol (and returning its
/// setup and end). The analytical model prices an all-to-all's latency per peer and the
/// flow backend per round, so taking the analytical switch point made a flow all-to-all
/// faster as it grew (64 ranks: 19.85 µs at 256 KiB on LL, 19.29 µs at 512 KiB); each
/// protocol's time grows with the size, and so does their minimum. The tuner's protocol
/// (`first`) runs first; with `prune` (no faults, no other traffic) the other is skipped
/// where a bound says it cannot be faster: LL moves 1/`bw` of Simple's bytes on the same
/// links, so it takes at least the setup plus Simple's busiest link time over LL's `bw`;
/// Simple takes at least the setup plus `simple_floor` (its rounds' sampled path
/// latencies, [`p2p_latency_floor`]) and LL's busiest link time times LL's `bw`.
pub(crate) fn fastest_p2p<T>(
    net: &Network,
    first: Protocol,
    prune: bool,
    simple_floor: f64,
    run: impl Fn(Protocol) -> Result<(T, SimResult, f64, f64), Error>,
) -> Result<(T, SimResult, f64, Protocol), Error> {
    let (first, other) = if first == Protocol::Ll {
        (Protocol::Ll, Protocol::Simple)
    } else {
        (Protocol::Simple, Protocol::Ll)
    };
    let ll_bw = protocol_cost(Protocol::Ll).bw;
    let (a, sim, setup, t) = run(first)?;
    if prune {
        let busiest = (0..sim.link_bytes.len() as u32)
            .map(|l| {
                let c = net.capacity(l);
                let b = sim.link_bytes[l as usize];
                if b > 0.0 && c > 0.0 {
                    b / c
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max);
        let floor = match other {
            Protocol::Ll => setup + busiest / ll_bw,
            _ => setup + simple_floor.max(busiest * ll_bw),
        };
        if floor >= t {
            return Ok((a, sim, t, first));
        }
    }
    let (b, sim_b, _, t_b) = run(other)?;
    Ok(if t_b < t {
        (b, sim_b, t_b, other)
    } else {
        (a, sim, t, first)
    })
}

/// Whether the second protocol of a point-to-point collective may be skipped when a lower
/// bound says it cannot win (only on an intact network, whose routes the floor samples),
/// and that floor: [`p2p_latency_floor`] of one group's program on `ranks`.
fn p2p_pruning(
    net: &Network,
    op: Op,
    algorithm: Algorithm,
    bytes: f64,
    ranks: &[u32],
    opts: &SimOptions,
) -> (bool, f64) {
    let prune = opts.faults.is_empty();
    let floor = match prune {
        true => collective(net, op, algorithm, bytes, ranks)
            .map(|p| p2p_latency_floor(net, &p))
            .unwrap_or(0.0),
        false => 0.0,
    };
    (prune, floor)
}

/// A floor on a point-to-point program's time on Simple, past its setup: every round
/// lasts at least its slowest flow's path latency plus its issue latencies
/// (`Phase::extra_latency_s`) at Simple's hop cost, the path latency sampled here on the
/// round's first and last flows of its first rank (routes on the intact network).
pub(crate) fn p2p_latency_floor(net: &Network, prog: &Program) -> f64 {
    let hop = protocol_cost(Protocol::Simple).hop;
    let alive = vec![true; net.links()];
    let mut buf = Vec::new();
    let n = prog.ranks.len();
    let mut floor = 0.0;
    for ph in &prog.phases {
        let pairs: Vec<(u32, u32, u32)> = match &ph.flows {
            PhaseFlows::AllToAll { first, last, .. } if n > 0 => [*first, *last]
                .iter()
                .map(|&o| (prog.ranks[0], prog.ranks[o as usize % n], 0))
                .collect(),
            PhaseFlows::List(v) => [v.first(), v.last()]
                .into_iter()
                .flatten()
                .filter(|f| f.path.is_none())
                .map(|f| (f.src, f.dst, f.flow_id))
                .collect(),
            _ => Vec::new(),
        };
        let worst = pairs
            .iter()
            .filter_map(|&(a, b, id)| net.route(&alive, a, b, id, &mut buf).ok())
            .fold(0.0, f64::max);
        floor += hop * (worst + ph.extra_latency_s) * f64::from(ph.repeat.max(1));
    }
    floor
}

fn protocol_cost(p: Protocol) -> ProtocolCost {
    PROTOCOLS
        .iter()
        .copied()
        .find(|c| c.protocol == p)
        .expect("every protocol has a cost")
}

/// One directed link's load in a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkLoad {
    pub link: u32,
    pub name: String,
    pub bytes: f64,
    /// Time the link would need at its effective capacity for those bytes, seconds.
    pub busy_s: f64,
    /// `busy_s` / simulated time.
    pub utilization: f64,
}

/// The `k` most loaded directed links: by time at full (effective) capacity, i.e. bytes
/// carried / capacity, then by link id.
pub fn top_links(
    net: &Network,
    topo: Option<&myriad_cluster::Topology>,
    res: &SimResult,
    k: usize,
) -> Vec<LinkLoad> {
    let mut idx: Vec<u32> = (0..res.link_bytes.len() as u32)
        .filter(|&l| res.link_bytes[l as usize] > 0.0)
        .collect();
    let by = |l: &u32| {
        let c = net.capacity(*l);
        if c > 0.0 {
            res.link_bytes[*l as usize] / c
        } else {
            f64::INFINITY
        }
    };
    idx.sort_by(|a, b| by(b).total_cmp(&by(a)).then(a.cmp(b)));
    idx.truncate(k);
    idx.into_iter()
        .map(|l| {
            let bytes = res.link_bytes[l as usize];
            let cap = net.capacity(l);
            let busy = if cap > 0.0 {
                bytes / cap
            } else {
                f64::INFINITY
            };
            LinkLoad {
                link: l,
                name: net.describe(l, topo),
                bytes,
                busy_s: busy,
                utilization: if res.time_s > 0.0 {
                    busy / res.time_s
                } else {
                    0.0
                },
            }
        })
        .collect()
}

/// A collective timed by the flow backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowTime {
    pub time_s: f64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// The hierarchical variant simulated (`NVLS inside, tree across`).
    pub variant: Option<&'static str>,
    /// GB/s (1e9 bytes/s), nccl-tests conventions as in `myriad_collective`.
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    pub group_size: u64,
    #[serde(skip)]
    pub sim: SimResult,
}

impl FlowTime {
    /// The nccl-tests figures of a simulated collective of `bytes` over `n` ranks.
    fn from_sim(
        sim: SimResult,
        op: Op,
        bytes: f64,
        n: u64,
        algorithm: Algorithm,
        protocol: Protocol,
        variant: Option<&'static str>,
    ) -> Self {
        let time_s = sim.time_s;
        let algbw = if time_s > 0.0 {
            bytes / time_s * 1e-9
        } else {
            0.0
        };
        FlowTime {
            time_s,
            algorithm,
            protocol,
            variant,
            algbw_gbps: algbw,
            busbw_gbps: algbw * bus_factor(op, n),
            group_size: n,
            sim,
        }
    }
}

/// Why the flow backend could not time a collective.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    Build(String),
    Sim(SimError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Build(s) => f.write_str(s),
            Error::Sim(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<SimError> for Error {
    fn from(e: SimError) -> Self {
        Error::Sim(e)
    }
}

/// Simulate one collective (algorithm and protocol resolved, see [`flow_choice`]) on
/// `ranks` of `net`. Returns the program too (for traces). A direct all-to-all runs on
/// the faster of LL and Simple in this simulation, as NCCL's point-to-point protocols
/// (see [`runs_p2p_protocols`]); `choice.protocol` is then only what the tuner would say.
pub fn time_collective(
    net: &Network,
    op: Op,
    choice: Choice,
    bytes: f64,
    ranks: &[u32],
    opts: &SimOptions,
) -> Result<(FlowTime, Program), Error> {
    if !runs_p2p_protocols(op, choice.algorithm) {
        return time_one(net, op, choice, bytes, ranks, opts);
    }
    let (prune, floor) = p2p_pruning(net, op, choice.algorithm, bytes, ranks, opts);
    let first = choice.protocol;
    let ((ft, prog), _, _, _) = fastest_p2p(net, first, prune, floor, |protocol| {
        let (ft, prog) = time_one(net, op, Choice { protocol, ..choice }, bytes, ranks, opts)?;
        let sim = ft.sim.clone();
        let (setup, t) = (prog.start_s + prog.setup_s, ft.time_s);
        Ok(((ft, prog), sim, setup, t))
    })?;
    Ok((ft, prog))
}

fn time_one(
    net: &Network,
    op: Op,
    choice: Choice,
    bytes: f64,
    ranks: &[u32],
    opts: &SimOptions,
) -> Result<(FlowTime, Program), Error> {
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(Error::Build(format!(
            "message size must be a finite number >= 0 bytes, got {bytes}"
        )));
    }
    if let Some(r) = ranks.iter().find(|&&r| r >= net.accelerators()) {
        return Err(Error::Build(format!(
            "rank {r} is outside the cluster's {} accelerators",
            net.accelerators()
        )));
    }
    let mut algorithm = choice.algorithm;
    let cost = protocol_cost(choice.protocol);
    let wire = bytes / cost.bw;
    let hier = choice.hier;
    let mut prog = match collective_variant(net, op, algorithm, hier, wire, ranks) {
        Ok(p) => p,
        // A tree or hierarchical shape the group does not have: the ring (as NCCL falls
        // back to it). An op the algorithm never runs (a tree all-gather) stays an error.
        Err(_)
            if matches!(algorithm, Algorithm::Tree | Algorithm::Hierarchical)
                && program::op_support(op, algorithm).is_ok() =>
        {
            algorithm = Algorithm::Ring;
            collective(net, op, algorithm, wire, ranks).map_err(|e| Error::Build(e.0))?
        }
        Err(e) => return Err(Error::Build(e.0)),
    };
    prog.latency_scale = cost.hop;
    let sim = simulate(net, std::slice::from_ref(&prog), opts)?;
    check_finite(&sim, bytes)?;
    let n = prog.ranks.len() as u64;
    let variant = (algorithm == Algorithm::Hierarchical).then(|| hier.describe());
    Ok((
        FlowTime::from_sim(sim, op, bytes, n, algorithm, choice.protocol, variant),
        prog,
    ))
}

/// A finite size whose traffic overflows (an all-reduce of 1.7e308 bytes moves about twice
/// that over a link) is an error naming the size, as `myriad_collective::time` makes it,
/// not a result with links of infinite load.
fn check_finite(sim: &SimResult, bytes: f64) -> Result<(), Error> {
    if sim.time_s.is_finite() && sim.link_bytes.iter().all(|b| b.is_finite()) {
        return Ok(());
    }
    Err(Error::Build(format!(
        "message size {bytes:e} bytes is too large to time: the bytes it moves overflow"
    )))
}

/// Several groups running the same collective at once (every DP replica's gradient
/// reduce-scatter, every EP group's all-to-all): one program whose steps hold the flows of
/// every group, so they share NICs and fabric links, each step over when the slowest
/// group's step is (the groups are launched together and the step waits for all).
/// `choice` as for [`time_collective`]; every group must have the same shape.
pub fn time_groups(
    net: &Network,
    op: Op,
    choice: Choice,
    bytes: f64,
    groups: &[Vec<u32>],
    opts: &SimOptions,
) -> Result<(FlowTime, Program), Error> {
    let Some(first) = groups.first() else {
        return Err(Error::Build("no groups to simulate".into()));
    };
    if groups.len() == 1 {
        return time_collective(net, op, choice, bytes, first, opts);
    }
    let run = |protocol| -> Result<((Program, Algorithm), SimResult, f64, f64), Error> {
        let (prog, algorithm) =
            groups_program(net, op, Choice { protocol, ..choice }, bytes, groups)?;
        let sim = simulate(net, std::slice::from_ref(&prog), opts)?;
        check_finite(&sim, bytes)?;
        let (setup, t) = (prog.start_s + prog.setup_s, sim.time_s);
        Ok(((prog, algorithm), sim, setup, t))
    };
    let ((prog, algorithm), sim, _, protocol) = if runs_p2p_protocols(op, choice.algorithm) {
        // One group's rounds: every group's run together, each over with the slowest.
        let (prune, floor) = p2p_pruning(net, op, choice.algorithm, bytes, first, opts);
        fastest_p2p(net, choice.protocol, prune, floor, run)?
    } else {
        let (p, sim, _, t) = run(choice.protocol)?;
        (p, sim, t, choice.protocol)
    };
    let variant = (algorithm == Algorithm::Hierarchical).then(|| choice.hier.describe());
    let n = first.len() as u64;
    Ok((
        FlowTime::from_sim(sim, op, bytes, n, algorithm, protocol, variant),
        prog,
    ))
}

/// The program of [`time_groups`] without running it (to run it beside other programs),
/// and the algorithm it uses (a tree or hierarchical shape the groups lack falls back to
/// the ring, as NCCL does).
pub fn groups_program(
    net: &Network,
    op: Op,
    choice: Choice,
    bytes: f64,
    groups: &[Vec<u32>],
) -> Result<(Program, Algorithm), Error> {
    let Some(first) = groups.first() else {
        return Err(Error::Build("no groups to simulate".into()));
    };
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(Error::Build(format!(
            "message size must be a finite number >= 0 bytes, got {bytes}"
        )));
    }
    if let Some(r) = groups.iter().flatten().find(|&&r| r >= net.accelerators()) {
        return Err(Error::Build(format!(
            "rank {r} is outside the cluster's {} accelerators",
            net.accelerators()
        )));
    }
    let cost = protocol_cost(choice.protocol);
    let wire = bytes / cost.bw;
    let mut algorithm = choice.algorithm;
    let build = |a: Algorithm, g: &[u32]| collective_variant(net, op, a, choice.hier, wire, g);
    if build(algorithm, first).is_err()
        && matches!(algorithm, Algorithm::Tree | Algorithm::Hierarchical)
        && program::op_support(op, algorithm).is_ok()
    {
        algorithm = Algorithm::Ring;
    }
    let mut merged: Option<Program> = None;
    let mut scratch = Vec::new();
    for g in groups {
        let p = build(algorithm, g).map_err(|e| Error::Build(e.0))?;
        let Some(m) = merged.as_mut() else {
            let mut p = p;
            if groups.len() > 1 {
                for ph in &mut p.phases {
                    if let PhaseFlows::AllToAll { .. } = ph.flows {
                        ph.materialize(&p.ranks, &mut scratch);
                        ph.flows = PhaseFlows::List(std::mem::take(&mut scratch));
                    }
                }
            }
            merged = Some(p);
            continue;
        };
        if p.phases.len() != m.phases.len()
            || p.phases
                .iter()
                .zip(&m.phases)
                .any(|(a, b)| a.repeat != b.repeat)
        {
            return Err(Error::Build(format!(
                "groups of different shapes cannot run as one program ({} and {} ranks)",
                first.len(),
                g.len()
            )));
        }
        let off = m.paths.len() as u32;
        m.paths.extend(p.paths.iter().cloned());
        for (mp, ph) in m.phases.iter_mut().zip(&p.phases) {
            mp.extra_latency_s = mp.extra_latency_s.max(ph.extra_latency_s);
            ph.materialize(&p.ranks, &mut scratch);
            if let PhaseFlows::List(v) = &mut mp.flows {
                v.extend(scratch.iter().map(|f| FlowSpec {
                    path: f.path.map(|i| i + off),
                    ..*f
                }));
            }
        }
        m.ranks.extend_from_slice(&p.ranks);
    }
    let mut prog = merged.expect("at least one group");
    if groups.len() > 1 {
        prog.name = format!(
            "{} {} x{} groups of {}",
            op.name(),
            algorithm.name(),
            groups.len(),
            first.len()
        );
    }
    prog.latency_scale = cost.hop;
    Ok((prog, algorithm))
}
