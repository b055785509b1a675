//! The discrete-event flow simulator.
//!
//! # Events
//!
//! A priority queue of events keyed by `(time, sequence)` (`queue.rs`: a radix heap, as
//! time only moves forward): the sequence number is the order in which events were
//! created, so ties break the same way on every run. Events: a flow
//! drains (its last byte leaves the source), a program is ready for its next step (every
//! flow of its step has arrived), a fault. Events within `1e-9 × t + 1 ps` of the first of
//! a batch are handled together and rates are recomputed once per batch.
//!
//! # Rates: max-min fairness, recomputed where something changed
//!
//! Rates change only when a flow starts or drains or a link fails. Those links are marked
//! dirty; the flows that share a link with them, transitively (the connected component of
//! the flow-link graph), are re-rated by progressive filling: the link with the smallest
//! fair share `remaining capacity / unfrozen flows` fixes the rate of its unfrozen flows at
//! that share, which is removed from every link they cross, and so on (a heap of links by
//! share, lazily updated). Flows outside the component keep their rates and their drain
//! events; a flow whose rate did not change keeps its event too. A flow of weight `w`
//! stands for `w` identical flows on the same path.
//!
//! # Only the flows at or above the lowest drained rate
//!
//! When flows only drain (no flow started, none rerouted, no link failed), a flow whose
//! rate is below every drained flow's rate `r` keeps its rate exactly: progressive filling
//! of the new state freezes the same flows at the same levels up to `r` (every link a
//! drained flow crossed was still below saturation there, and now carries less). So a
//! re-rating after drains (`floor`, the lowest drained rate) keeps the flows below
//! `cut = floor × (1 − 1e-9)` (the margin absorbs the rounding between rates of one level
//! computed in different re-ratings) at their rates, takes the capacity they use off each
//! link, and re-rates by progressive filling only the component, in the graph of the
//! flows at or above `cut`, of the dirty links. In an all-to-all started at once, flows
//! drain fastest first with the flows that share their bottleneck, so nothing is left to
//! re-rate: with hash ECMP on RoCE (hundreds of distinct finish times) each flow is rated
//! once instead of once per finish. A dirty link with no flow at or above `cut` is not
//! even scanned: `carries` answers from the link's highest rate, kept as a bound (exact
//! after a scan, still an upper bound as flows drain) and, when that is not enough twice,
//! from its flows sorted by rate with the drained ones skipped (cleared when a rate on the
//! link changes). A starting or rerouted flow or a failed link re-rates the whole
//! component (`floor = 0`), as does any re-rating after a flow of a fixed-rate phase
//! drained (its drain re-rates nothing, so the rates in force need not be max-min fair)
//! until no flow is left. `SimOptions::full_rerate` re-rates whole components always;
//! tests check both give the same times, link bytes and flow finishes.
//!
//! # Latency
//!
//! A flow's bytes flow at its rate from its start; it arrives one path latency (switch hops
//! × switch latency + propagation + the fabric's per-message base latency, or the scale-up
//! latency) after its last byte leaves. Bandwidth is released when the last byte leaves.
//!
//! # Steady state
//!
//! A phase that repeats (a ring step) is the same flows every time. When every running
//! program has just finished a step that started at the same time `t0`, no flow is in
//! flight, and no fault happened since `t0`, the state at `now` equals the state at `t0`,
//! so the next steps take exactly `now - t0` each: the engine advances as many as fit
//! before the next fault (or all of them) in one go, crediting each link the step's bytes
//! times the count. Set `SimOptions::no_skip` to simulate every step (tests check both agree).
//!
//! # Faults
//!
//! A fault kills directed links at a time: a topology link bundle (both directions), every
//! bundle of a switch, a NIC port's link, or a whole scale-up domain (its accelerators'
//! scale-up links and its nodes' NIC links). Flows crossing a dead link are rerouted at that
//! moment over the remaining ECMP paths (their delivered bytes kept); later steps are routed
//! on the surviving graph. A flow with no remaining path is an error that names it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use crate::net::{Network, MAX_PATH};
use crate::program::{FlowSpec, LatencyRule, Program};
use crate::queue::EventQueue;

const MAXP: usize = MAX_PATH;
/// Relative margin below the lowest drained rate under which flows keep their rates: rates
/// of one bottleneck level computed in different re-ratings differ by rounding only.
const CUT_REL: f64 = 1e-9;
const NOT_ROUTED: u64 = u64::MAX;

/// What fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultTarget {
    /// Topology link bundle (index into `Topology::links`), both directions.
    Link(u32),
    /// Switch (index into `Topology::switches`): every bundle touching it.
    Switch(u32),
    /// NIC port vertex (`0..Topology::endpoints`): its link to the leaf.
    Nic(u32),
    /// Scale-up domain: its accelerators' scale-up links and its nodes' NIC links.
    Domain(u32),
    /// One directed link of the simulated network (any network, including custom ones).
    Directed(u32),
}

/// A failure at a time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fault {
    pub at_s: f64,
    pub target: FaultTarget,
}

#[derive(Debug, Clone, Default)]
pub struct SimOptions {
    pub faults: Vec<Fault>,
    /// Record a trace slice per flow (and per rank for steps advanced in steady state).
    pub trace: bool,
    /// Most trace slices kept (default 2,000,000).
    pub trace_limit: Option<usize>,
    /// Simulate every repeated step instead of advancing steady states.
    pub no_skip: bool,
    /// Re-rate the whole connected component of the changed links at every change, also
    /// the flows below the lowest drained rate (module docs): the same rates up to
    /// rounding, with far more work; tests check both agree.
    pub full_rerate: bool,
}

/// Why a simulation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    NoRoute {
        program: String,
        src: u32,
        dst: u32,
        flow_id: u32,
        at_s: f64,
    },
    BadFault {
        index: usize,
        reason: String,
    },
    BadPath {
        program: String,
        reason: String,
    },
    Stalled {
        flows: usize,
    },
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::NoRoute {
                program,
                src,
                dst,
                flow_id,
                at_s,
            } => write!(
                f,
                "no route for the flow from accelerator {src} to accelerator {dst} (flow id {flow_id}) of `{program}` at {at_s:.9} s: every path crosses a failed link, switch, NIC or domain"
            ),
            SimError::BadFault { index, reason } => {
                write!(f, "cluster.faults[{index}]: {reason}")
            }
            SimError::BadPath { program, reason } => write!(f, "`{program}`: {reason}"),
            SimError::Stalled { flows } => write!(
                f,
                "{flows} flows can never finish (a zero-capacity link on their path)"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// One trace slice: a flow from `src` (its track) to `dst`, or `steps` > 1 steps of a rank
/// advanced in steady state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slice {
    pub program: u32,
    pub src: u32,
    pub dst: u32,
    pub start_s: f64,
    pub end_s: f64,
    /// Bytes of the flow (of each of its `weight` flows).
    pub bytes: f64,
    pub weight: u32,
    /// Phase index and the first step (repeat) it covers.
    pub phase: u32,
    pub step: u32,
    pub steps: u32,
    pub label: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramResult {
    pub name: String,
    pub end_s: f64,
}

/// The outcome of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimResult {
    /// When the last program finished, seconds.
    pub time_s: f64,
    pub programs: Vec<ProgramResult>,
    /// Bytes injected (Σ flow bytes × weight, skipped steps included).
    pub bytes_sent: f64,
    /// Bytes moved: the integral of every flow's rate over time (skipped steps included).
    pub bytes_delivered: f64,
    /// Bytes carried by each directed link.
    pub link_bytes: Vec<f64>,
    /// Flows simulated event by event (a weighted flow counts once).
    pub flows_simulated: u64,
    /// Flows in all (weights counted, skipped steps included).
    pub flows_total: u64,
    /// Steps advanced in steady state instead of simulated.
    pub steps_skipped: u64,
    pub events: u64,
    /// Max-min recomputations and flows re-rated in them.
    pub rate_updates: u64,
    pub flows_rerated: u64,
    pub reroutes: u64,
    pub trace: Vec<Slice>,
    pub trace_truncated: bool,
}

/// What `Sim::carries` knows of a link's highest rate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Top {
    /// A flow on the link changed rate or was rerouted onto it.
    Unknown,
    /// `top_hi` bounds it (flows may have drained since it was exact); the number of
    /// times it was rescanned since it was `Unknown`.
    Bound(u8),
    /// `top` holds the flows by rate.
    Sorted,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Drain { slot: u32, gen: u32 },
    Ready { prog: u32 },
    Fault { idx: u32 },
}

#[derive(Default)]
struct ProgState {
    started: bool,
    finished: bool,
    running: bool,
    phase: usize,
    done: u32,
    outstanding: u64,
    phase_end: f64,
    drain_end: f64,
    lat_w: f64,
    w_sum: f64,
    step_start: f64,
    step_epoch: u64,
    /// `Sim::mix` when the step started.
    step_mix: u64,
    end: f64,
    tmpl_phase: usize,
    tmpl: Vec<FlowSpec>,
    t_path: Vec<u32>,
    t_len: Vec<u8>,
    t_lat: Vec<f64>,
    t_epoch: u64,
}

/// Merges routed template flows that are identical (same ends, bytes, path) into one
/// flow of summed weight: exact under max-min fairness, and it keeps the flow count of a
/// connection split into several queue pairs down to its distinct paths.
// Index loops: `target` and the template arrays are read and written by the same index.
#[allow(clippy::needless_range_loop)]
fn coalesce(st: &mut ProgState) {
    let n = st.tmpl.len();
    let mut first: std::collections::HashMap<(u32, u32, u64, bool, &[u32]), usize> =
        std::collections::HashMap::with_capacity(n);
    let mut target = vec![usize::MAX; n];
    for i in 0..n {
        let fs = &st.tmpl[i];
        if fs.path.is_some() {
            continue;
        }
        let path = &st.t_path[i * MAXP..i * MAXP + st.t_len[i] as usize];
        let key = (fs.src, fs.dst, fs.bytes.to_bits(), fs.timed, path);
        let j = *first.entry(key).or_insert(i);
        if j != i {
            target[i] = j;
        }
    }
    drop(first);
    if target.iter().all(|&t| t == usize::MAX) {
        return;
    }
    for i in 0..n {
        if target[i] != usize::MAX {
            let w = st.tmpl[i].weight;
            st.tmpl[target[i]].weight += w;
        }
    }
    let mut k = 0;
    for i in 0..n {
        if target[i] != usize::MAX {
            continue;
        }
        if k != i {
            st.tmpl[k] = st.tmpl[i];
            st.t_path.copy_within(i * MAXP..(i + 1) * MAXP, k * MAXP);
            st.t_len[k] = st.t_len[i];
            st.t_lat[k] = st.t_lat[i];
        }
        k += 1;
    }
    st.tmpl.truncate(k);
    st.t_path.truncate(k * MAXP);
    st.t_len.truncate(k);
    st.t_lat.truncate(k);
}

/// A flow slot's hot state (one cache line): everything rating and draining read.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Flow {
    rate: f64,
    rem: f64,
    last: f64,
    moved: f64,
    /// Recompute scratch: the rate progressive filling gives.
    new_rate: f64,
    w: u32,
    gen: u32,
    apos: u32,
    /// Recompute scratch: in the component / frozen at this stamp.
    stamp: u32,
    frozen: u32,
    len: u8,
}

#[derive(Clone, Copy, Default)]
struct FlowCold {
    prog: u32,
    tmpl: u32,
    /// The flow's order among the flows in flight (`Sim::alloc`).
    lid: u32,
    lat: f64,
    start: f64,
}

/// A flow's links and, for each, its entry's position in `Sim::link_flows`; an entry is
/// `slot * MAXP + j`.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct FlowPath([[u32; 2]; MAXP]);

struct Sim<'a> {
    net: &'a Network,
    progs: &'a [Program],
    opts: &'a SimOptions,
    alive: Vec<bool>,
    cap: Vec<f64>,
    epoch: u64,
    /// Bumped whenever a program starts or finishes: a step that saw the set of running
    /// programs change is not a period of the steady state (another program's flows
    /// shared its links for part of it).
    mix: u64,
    now: f64,
    // Flow slots (struct of arrays).
    /// Per-slot state touched on every rating and drain, one cache line per flow.
    fl: Vec<Flow>,
    /// Per-slot state read when a flow starts or drains.
    fc: Vec<FlowCold>,
    /// Per-slot path and entry positions, interleaved.
    fp: Vec<FlowPath>,
    free: Vec<u32>,
    /// Logical ids: handed out as slots were before the slots were recycled in order
    /// (`Sim::alloc`), they order the flows a fault reroutes.
    lfree: Vec<u32>,
    active: Vec<u32>,
    link_flows: Vec<Vec<u32>>,
    dirty: Vec<u32>,
    /// The lowest rate of a flow that drained (releasing bandwidth) since the last
    /// re-rating; 0 when a flow started, a flow was rerouted or a link failed (module docs,
    /// "Only the flows at or above the lowest drained rate").
    floor: f64,
    /// A flow of a fixed-rate phase drained without a re-rating since the flows were last
    /// all gone: the rates in force need not be max-min fair, so re-ratings are not
    /// restricted by `floor`.
    stale: bool,
    /// What is known of the highest rate on each directed link (`Top`), for `carries`.
    top_state: Vec<Top>,
    /// Under `Top::Bound`, at least the highest rate of a flow on the link.
    top_hi: Vec<f64>,
    /// Under `Top::Sorted`, the link's flows of positive rate as (rate bits, slot,
    /// generation), highest rate first, from `top_at` on; an entry whose flow's generation
    /// moved on (the flow drained) is skipped.
    top: Vec<Vec<(u64, u32, u32)>>,
    top_at: Vec<u32>,
    // Recompute scratch.
    stamp: u32,
    l_stamp: Vec<u32>,
    rem: Vec<f64>,
    cnt: Vec<u64>,
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    queue: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    events: EventQueue<Kind>,
    ps: Vec<ProgState>,
    ready: Vec<u32>,
    route_buf: Vec<u32>,
    next_fault: usize,
    fault_order: Vec<usize>,
    res: SimResult,
    trace_limit: usize,
}

/// Run `programs` concurrently on `net`.
pub fn simulate(
    net: &Network,
    programs: &[Program],
    opts: &SimOptions,
) -> Result<SimResult, SimError> {
    let nl = net.links();
    let mut fault_order: Vec<usize> = (0..opts.faults.len()).collect();
    for (i, f) in opts.faults.iter().enumerate() {
        if !(f.at_s.is_finite() && f.at_s >= 0.0) {
            return Err(SimError::BadFault {
                index: i,
                reason: format!("at_s must be a time >= 0 s, got {}", f.at_s),
            });
        }
    }
    fault_order.sort_by(|&a, &b| {
        opts.faults[a]
            .at_s
            .total_cmp(&opts.faults[b].at_s)
            .then(a.cmp(&b))
    });
    let mut sim = Sim {
        net,
        progs: programs,
        opts,
        alive: vec![true; nl],
        cap: net.cap.clone(),
        epoch: 0,
        mix: 0,
        now: 0.0,
        fl: Vec::new(),
        fc: Vec::new(),
        fp: Vec::new(),
        free: Vec::new(),
        lfree: Vec::new(),
        active: Vec::new(),
        link_flows: vec![Vec::new(); nl],
        dirty: Vec::new(),
        floor: f64::INFINITY,
        stale: false,
        top_state: vec![Top::Unknown; nl],
        top_hi: vec![0.0; nl],
        top: vec![Vec::new(); nl],
        top_at: vec![0; nl],
        stamp: 0,
        l_stamp: vec![0; nl],
        rem: vec![0.0; nl],
        cnt: vec![0; nl],
        comp_links: Vec::new(),
        comp_flows: Vec::new(),
        queue: Vec::new(),
        heap: BinaryHeap::new(),
        events: EventQueue::new(),
        ps: (0..programs.len()).map(|_| ProgState::default()).collect(),
        ready: Vec::new(),
        route_buf: Vec::with_capacity(MAXP),
        next_fault: 0,
        fault_order,
        res: SimResult {
            time_s: 0.0,
            programs: Vec::new(),
            bytes_sent: 0.0,
            bytes_delivered: 0.0,
            link_bytes: vec![0.0; nl],
            flows_simulated: 0,
            flows_total: 0,
            steps_skipped: 0,
            events: 0,
            rate_updates: 0,
            flows_rerated: 0,
            reroutes: 0,
            trace: Vec::new(),
            trace_truncated: false,
        },
        trace_limit: opts.trace_limit.unwrap_or(2_000_000),
    };
    // Validate fault targets up front.
    for (i, f) in opts.faults.iter().enumerate() {
        sim.fault_links(f.target)
            .map_err(|reason| SimError::BadFault { index: i, reason })?;
    }
    for (p, prog) in programs.iter().enumerate() {
        sim.push(prog.start_s + prog.setup_s, Kind::Ready { prog: p as u32 });
    }
    for k in 0..sim.fault_order.len() {
        let i = sim.fault_order[k];
        sim.push(opts.faults[i].at_s, Kind::Fault { idx: i as u32 });
    }
    sim.run()?;
    Ok(sim.res)
}

impl<'a> Sim<'a> {
    fn push(&mut self, t: f64, kind: Kind) {
        self.events.push(t, kind);
    }

    fn run(&mut self) -> Result<(), SimError> {
        while let Some((now, ev)) = self.events.pop() {
            self.now = now;
            let tol = now.abs() * 1e-9 + 1e-12;
            self.handle(now, ev)?;
            while let Some(t) = self.events.peek_time() {
                if t > now + tol {
                    break;
                }
                let (t, ev) = self.events.pop().expect("peeked");
                self.handle(t, ev)?;
            }
            self.process_ready()?;
            if !self.dirty.is_empty() {
                self.recompute();
            }
        }
        if !self.active.is_empty() {
            return Err(SimError::Stalled {
                flows: self.active.len(),
            });
        }
        self.res.programs = self
            .progs
            .iter()
            .zip(&self.ps)
            .map(|(p, s)| ProgramResult {
                name: p.name.clone(),
                end_s: s.end,
            })
            .collect();
        self.res.time_s = self.ps.iter().map(|s| s.end).fold(0.0, f64::max);
        Ok(())
    }

    fn handle(&mut self, t: f64, ev: Kind) -> Result<(), SimError> {
        self.res.events += 1;
        match ev {
            Kind::Drain { slot, gen } => {
                if self.fl[slot as usize].gen == gen && self.fl[slot as usize].apos != u32::MAX {
                    self.drain(slot, t);
                }
            }
            Kind::Ready { prog } => self.ready.push(prog),
            Kind::Fault { idx } => {
                self.next_fault += 1;
                self.fault(idx as usize)?;
            }
        }
        Ok(())
    }

    fn next_fault_time(&self) -> Option<f64> {
        self.fault_order
            .get(self.next_fault)
            .map(|&i| self.opts.faults[i].at_s)
    }

    // ---- flows --------------------------------------------------------------------

    /// A free slot for a new flow. When no flow is in flight, slots are handed out in
    /// increasing order again (`drain`), so a step's flows lie in memory in the order they
    /// start. The flow's logical id is the slot the last-freed-first-reused order gives
    /// (the order faults reroute flows in does not depend on the memory layout).
    fn alloc(&mut self) -> u32 {
        let lid = self.lfree.pop().unwrap_or(self.fl.len() as u32);
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = self.fl.len() as u32;
                self.fl.push(Flow {
                    apos: u32::MAX,
                    ..Flow::default()
                });
                self.fc.push(FlowCold::default());
                self.fp.push(FlowPath([[0; 2]; MAXP]));
                s
            }
        };
        self.fc[s as usize].lid = lid;
        s
    }

    fn insert_entries(&mut self, f: u32) {
        self.floor = 0.0;
        let base = f as usize * MAXP;
        for j in 0..self.fl[f as usize].len as usize {
            let l = self.fp[f as usize].0[j][0] as usize;
            self.fp[f as usize].0[j][1] = self.link_flows[l].len() as u32;
            self.link_flows[l].push((base + j) as u32);
            self.dirty.push(l as u32);
        }
        // A rerouted flow keeps its rate (a new one has none yet).
        if self.fl[f as usize].rate > 0.0 {
            self.forget_tops(f as usize);
        }
    }

    /// Clear the rate order of flow `f`'s links (its rate changed or it was rerouted).
    fn forget_tops(&mut self, f: usize) {
        for j in 0..self.fl[f].len as usize {
            self.top_state[self.fp[f].0[j][0] as usize] = Top::Unknown;
        }
    }

    /// Whether a flow on link `l` has a rate of at least `cut` (> 0). A query after the
    /// link's rates changed scans its flows for the highest rate, which stays an upper
    /// bound as flows drain; when the bound cannot answer twice, the flows are sorted by
    /// rate, and later queries skip the drained flows at the front.
    fn carries(&mut self, l: usize, cut: f64) -> bool {
        match self.top_state[l] {
            Top::Unknown | Top::Bound(0) => {
                if self.top_state[l] == Top::Bound(0) && self.top_hi[l] < cut {
                    return false;
                }
                let mut hi = 0.0f64;
                for &e in &self.link_flows[l] {
                    hi = hi.max(self.fl[e as usize / MAXP].rate);
                }
                self.top_hi[l] = hi;
                self.top_state[l] = Top::Bound(if self.top_state[l] == Top::Unknown {
                    0
                } else {
                    1
                });
                return hi >= cut;
            }
            Top::Bound(_) => {
                if self.top_hi[l] < cut {
                    return false;
                }
                let mut v = std::mem::take(&mut self.top[l]);
                v.clear();
                for &e in &self.link_flows[l] {
                    let f = e as usize / MAXP;
                    if self.fl[f].rate > 0.0 {
                        v.push((self.fl[f].rate.to_bits(), f as u32, self.fl[f].gen));
                    }
                }
                v.sort_unstable_by(|a, b| b.cmp(a));
                self.top[l] = v;
                self.top_at[l] = 0;
                self.top_state[l] = Top::Sorted;
            }
            Top::Sorted => {}
        }
        let v = &self.top[l];
        let mut i = self.top_at[l] as usize;
        while i < v.len() && self.fl[v[i].1 as usize].gen != v[i].2 {
            i += 1;
        }
        self.top_at[l] = i as u32;
        v.get(i).is_some_and(|e| f64::from_bits(e.0) >= cut)
    }

    fn remove_entries(&mut self, f: u32, mark_dirty: bool) {
        for j in 0..self.fl[f as usize].len as usize {
            let [l, pos] = self.fp[f as usize].0[j];
            let (l, pos) = (l as usize, pos as usize);
            let v = &mut self.link_flows[l];
            let last = v.pop().expect("entry present");
            if pos < v.len() {
                v[pos] = last;
                self.fp[last as usize / MAXP].0[last as usize % MAXP][1] = pos as u32;
            }
            if mark_dirty {
                self.dirty.push(l as u32);
            }
        }
    }

    /// Move flow `f`'s bytes up to time `t`.
    #[inline]
    fn advance(&mut self, f: usize, t: f64) {
        let dt = t - self.fl[f].last;
        if dt > 0.0 {
            let mv = (self.fl[f].rate * dt).min(self.fl[f].rem.max(0.0));
            self.fl[f].moved += mv;
            self.fl[f].rem -= mv;
            self.res.bytes_delivered += mv * self.fl[f].w as f64;
        }
        self.fl[f].last = t;
    }

    fn credit_links(&mut self, f: usize) {
        let b = self.fl[f].moved * self.fl[f].w as f64;
        for j in 0..self.fl[f].len as usize {
            self.res.link_bytes[self.fp[f].0[j][0] as usize] += b;
        }
        self.fl[f].moved = 0.0;
    }

    fn drain(&mut self, slot: u32, t: f64) {
        let f = slot as usize;
        // The last byte leaves at `t`: all of the flow's remaining bytes move.
        let dt = (t - self.fl[f].last).max(0.0);
        let mv = self.fl[f].rate * dt;
        self.fl[f].moved += mv;
        self.res.bytes_delivered += mv * self.fl[f].w as f64;
        self.fl[f].rem = 0.0;
        self.fl[f].last = t;
        self.credit_links(f);
        let p = self.fc[f].prog as usize;
        let fixed = self.progs[p].phases[self.ps[p].phase].fixed_rates;
        self.remove_entries(slot, !fixed);
        if fixed {
            self.stale = true;
        } else {
            self.floor = self.floor.min(self.fl[f].rate);
        }
        // Remove from the active list.
        let ap = self.fl[f].apos as usize;
        let last = self.active.pop().expect("active");
        if ap < self.active.len() {
            self.active[ap] = last;
            self.fl[last as usize].apos = ap as u32;
        }
        self.fl[f].apos = u32::MAX;
        if self.active.is_empty() {
            self.stale = false;
        }
        self.fl[f].gen = self.fl[f].gen.wrapping_add(1);
        self.free.push(slot);
        self.lfree.push(self.fc[f].lid);
        if self.active.is_empty() {
            // Every slot is free: reuse them in memory order.
            debug_assert_eq!(self.free.len(), self.fl.len());
            self.free.clear();
            self.free.extend((0..self.fl.len() as u32).rev());
        }
        let p = self.fc[f].prog as usize;
        let arrive = t + self.fc[f].lat;
        if self.opts.trace {
            let st = &self.ps[p];
            let spec = st.tmpl[self.fc[f].tmpl as usize];
            let phase = &self.progs[p].phases[st.phase];
            let s = Slice {
                program: p as u32,
                src: spec.src,
                dst: spec.dst,
                start_s: self.fc[f].start,
                end_s: arrive,
                bytes: spec.bytes,
                weight: spec.weight,
                phase: st.phase as u32,
                step: st.done,
                steps: 1,
                label: phase.label,
            };
            self.record(s);
        }
        let w = self.fl[f].w as f64;
        let lat = self.fc[f].lat;
        let spec = &self.ps[p].tmpl[self.fc[f].tmpl as usize];
        let timed = spec.timed;
        // Queue pairs of one connection weigh as one connection in the latency average.
        let w = w / spec.split.max(1) as f64;
        let st = &mut self.ps[p];
        st.outstanding -= 1;
        st.drain_end = st.drain_end.max(t);
        if timed {
            st.phase_end = st.phase_end.max(arrive);
            st.lat_w += lat * w;
            st.w_sum += w;
        }
        if st.outstanding == 0 {
            let at = self.step_end(p);
            self.push(at.max(self.now), Kind::Ready { prog: p as u32 });
        }
    }

    /// When program `p`'s current step is over (all its flows drained), by the phase's
    /// latency rule, plus the phase's fixed time.
    fn step_end(&self, p: usize) -> f64 {
        let st = &self.ps[p];
        let ph = &self.progs[p].phases[st.phase];
        let t = match ph.latency {
            LatencyRule::Max => st.phase_end,
            LatencyRule::Mean => {
                st.drain_end
                    + if st.w_sum > 0.0 {
                        st.lat_w / st.w_sum
                    } else {
                        0.0
                    }
            }
            LatencyRule::SumPerChain(c) => st.drain_end + st.lat_w / c.max(1) as f64,
            LatencyRule::Scaled(k) => {
                st.drain_end
                    + if st.w_sum > 0.0 {
                        k * st.lat_w / st.w_sum
                    } else {
                        0.0
                    }
            }
        };
        // Untimed flows still hold the step until their last byte.
        let t = t.max(st.drain_end) + ph.extra_latency_s * self.progs[p].latency_scale;
        t + ph.extra_s
    }

    fn record(&mut self, s: Slice) {
        if self.res.trace.len() < self.trace_limit {
            self.res.trace.push(s);
        } else {
            self.res.trace_truncated = true;
        }
    }

    // ---- programs -------------------------------------------------------------------

    fn process_ready(&mut self) -> Result<(), SimError> {
        if self.ready.is_empty() {
            return Ok(());
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.sort_unstable();
        ready.dedup();
        // Count the step each ready program just finished.
        for &p in &ready {
            let st = &mut self.ps[p as usize];
            if st.running {
                st.running = false;
                st.done += 1;
            }
        }
        self.try_skip(&ready);
        let now = self.now;
        for &p in &ready {
            let pi = p as usize;
            let prog = &self.progs[pi];
            let st = &mut self.ps[pi];
            if st.finished {
                continue;
            }
            if !st.started {
                st.started = true;
                st.phase = 0;
                st.done = 0;
                self.mix += 1;
            }
            while st.phase < prog.phases.len() && st.done >= prog.phases[st.phase].repeat {
                st.phase += 1;
                st.done = 0;
            }
            if st.phase >= prog.phases.len() {
                st.finished = true;
                st.end = now;
                self.mix += 1;
                continue;
            }
            self.start_step(pi)?;
        }
        ready.clear();
        self.ready = ready;
        Ok(())
    }

    /// Advance identical steps in one go when the whole system is periodic (module docs).
    fn try_skip(&mut self, ready: &[u32]) {
        if self.opts.no_skip || !self.active.is_empty() {
            return;
        }
        let mut t0 = None;
        let mut m = u64::MAX;
        let mut any = false;
        for (pi, st) in self.ps.iter().enumerate() {
            if st.finished {
                continue;
            }
            if ready.binary_search(&(pi as u32)).is_err() || !st.started {
                return;
            }
            let prog = &self.progs[pi];
            let Some(ph) = prog.phases.get(st.phase) else {
                return;
            };
            if st.done == 0
                || st.done >= ph.repeat
                || st.step_epoch != self.epoch
                || st.step_mix != self.mix
                || st.tmpl_phase != st.phase
            {
                return;
            }
            match t0 {
                None => t0 = Some(st.step_start),
                Some(t) if t == st.step_start => {}
                _ => return,
            }
            m = m.min((ph.repeat - st.done) as u64);
            any = true;
        }
        let (Some(t0), true) = (t0, any) else {
            return;
        };
        let d = self.now - t0;
        if let Some(tf) = self.next_fault_time() {
            if d > 0.0 {
                let k = ((tf - self.now) / d - 1e-9).floor();
                m = m.min(k.max(0.0) as u64);
            }
        }
        if m == 0 {
            return;
        }
        let mf = m as f64;
        let start = self.now;
        let mut slices = Vec::new();
        for pi in 0..self.ps.len() {
            let st = &mut self.ps[pi];
            if st.finished {
                continue;
            }
            let first = st.done;
            st.done += m as u32;
            let mut srcs = Vec::new();
            for (i, fs) in st.tmpl.iter().enumerate() {
                if fs.bytes <= 0.0 || fs.weight == 0 {
                    continue;
                }
                let b = fs.bytes * fs.weight as f64 * mf;
                self.res.bytes_sent += b;
                self.res.bytes_delivered += b;
                self.res.flows_total += fs.weight as u64 * m;
                let base = i * MAXP;
                for j in 0..st.t_len[i] as usize {
                    self.res.link_bytes[st.t_path[base + j] as usize] += b;
                }
                if self.opts.trace {
                    srcs.push(fs.src);
                }
            }
            if self.opts.trace {
                srcs.sort_unstable();
                srcs.dedup();
                let label = self.progs[pi].phases[st.phase].label;
                for s in srcs {
                    slices.push(Slice {
                        program: pi as u32,
                        src: s,
                        dst: s,
                        start_s: start,
                        end_s: start + mf * d,
                        bytes: 0.0,
                        weight: 0,
                        phase: st.phase as u32,
                        step: first,
                        steps: m as u32,
                        label,
                    });
                }
            }
        }
        for sl in slices {
            self.record(sl);
        }
        self.res.steps_skipped += m;
        self.now = start + mf * d;
    }

    fn route_templates(&mut self, pi: usize) -> Result<(), SimError> {
        let prog = &self.progs[pi];
        let st = &mut self.ps[pi];
        let n = st.tmpl.len();
        st.t_path.resize(n * MAXP, 0);
        st.t_len.resize(n, 0);
        st.t_lat.resize(n, 0.0);
        for i in 0..n {
            let fs = st.tmpl[i];
            let lat = match fs.path {
                Some(pidx) => {
                    let Some(path) = prog.paths.get(pidx as usize) else {
                        return Err(SimError::BadPath {
                            program: prog.name.clone(),
                            reason: format!("flow names path {pidx}, which does not exist"),
                        });
                    };
                    if path.len() > MAXP || path.iter().any(|&l| l as usize >= self.alive.len()) {
                        return Err(SimError::BadPath {
                            program: prog.name.clone(),
                            reason: format!(
                                "path {pidx} has more than {MAXP} links or a link outside the network"
                            ),
                        });
                    }
                    if path.iter().any(|&l| !self.alive[l as usize]) {
                        return Err(SimError::NoRoute {
                            program: prog.name.clone(),
                            src: fs.src,
                            dst: fs.dst,
                            flow_id: fs.flow_id,
                            at_s: self.now,
                        });
                    }
                    self.route_buf.clear();
                    self.route_buf.extend_from_slice(path);
                    let su = path.iter().any(|&l| l >= self.net.su);
                    path.iter().map(|&l| self.net.prop[l as usize]).sum::<f64>()
                        + if su && !self.net.is_custom() {
                            self.net.su_lat
                        } else {
                            0.0
                        }
                }
                None => self
                    .net
                    .route(&self.alive, fs.src, fs.dst, fs.flow_id, &mut self.route_buf)
                    .map_err(|_| SimError::NoRoute {
                        program: prog.name.clone(),
                        src: fs.src,
                        dst: fs.dst,
                        flow_id: fs.flow_id,
                        at_s: self.now,
                    })?,
            };
            let base = i * MAXP;
            let len = self.route_buf.len();
            st.t_path[base..base + len].copy_from_slice(&self.route_buf);
            st.t_len[i] = len as u8;
            st.t_lat[i] = lat * prog.latency_scale;
        }
        if self.net.qps_per_connection() > 1 {
            coalesce(st);
        }
        st.t_epoch = self.epoch;
        Ok(())
    }

    fn start_step(&mut self, pi: usize) -> Result<(), SimError> {
        let now = self.now;
        {
            let prog = &self.progs[pi];
            let st = &mut self.ps[pi];
            // A fault re-routes from the phase's own flows (coalesced ones split again).
            if st.done == 0 || st.tmpl_phase != st.phase || st.t_epoch != self.epoch {
                prog.phases[st.phase].materialize(&prog.ranks, &mut st.tmpl);
                st.tmpl_phase = st.phase;
                st.t_epoch = NOT_ROUTED;
            }
        }
        if self.ps[pi].t_epoch != self.epoch {
            self.route_templates(pi)?;
        }
        let st = &mut self.ps[pi];
        st.running = true;
        st.step_start = now;
        st.step_epoch = self.epoch;
        st.step_mix = self.mix;
        st.outstanding = 0;
        st.phase_end = now;
        st.drain_end = now;
        st.lat_w = 0.0;
        st.w_sum = 0.0;
        let n = st.tmpl.len();
        for i in 0..n {
            let st = &self.ps[pi];
            let fs = st.tmpl[i];
            if fs.bytes <= 0.0 || fs.weight == 0 {
                continue;
            }
            let b = fs.bytes * fs.weight as f64;
            self.res.bytes_sent += b;
            self.res.flows_total += fs.weight as u64;
            let len = st.t_len[i] as usize;
            let lat = st.t_lat[i];
            if len == 0 {
                // Nothing to cross (a rank to itself): arrives at once.
                self.res.bytes_delivered += b;
                let st = &mut self.ps[pi];
                if fs.timed {
                    st.phase_end = st.phase_end.max(now + lat);
                    st.lat_w += lat * fs.weight as f64;
                    st.w_sum += fs.weight as f64;
                }
                continue;
            }
            let f = self.alloc();
            let fu = f as usize;
            {
                let st = &self.ps[pi];
                let dst = &mut self.fp[fu].0;
                for (d, &l) in dst.iter_mut().zip(&st.t_path[i * MAXP..i * MAXP + len]) {
                    d[0] = l;
                }
            }
            self.fc[fu].prog = pi as u32;
            self.fc[fu].tmpl = i as u32;
            self.fl[fu].w = fs.weight;
            self.fl[fu].rem = fs.bytes;
            self.fl[fu].rate = 0.0;
            self.fl[fu].last = now;
            self.fc[fu].lat = lat;
            self.fc[fu].start = now;
            self.fl[fu].moved = 0.0;
            self.fl[fu].len = len as u8;
            self.fl[fu].apos = self.active.len() as u32;
            self.active.push(f);
            self.insert_entries(f);
            self.res.flows_simulated += 1;
            self.ps[pi].outstanding += 1;
        }
        if self.ps[pi].outstanding == 0 {
            let at = self.step_end(pi);
            self.push(at, Kind::Ready { prog: pi as u32 });
        }
        Ok(())
    }

    // ---- faults ---------------------------------------------------------------------

    fn fault_links(&self, t: FaultTarget) -> Result<Vec<u32>, String> {
        let net = self.net;
        let nl = net.links() as u32;
        Ok(match t {
            FaultTarget::Directed(l) => {
                if l >= nl {
                    return Err(format!(
                        "directed link {l} does not exist (the network has {nl})"
                    ));
                }
                vec![l]
            }
            FaultTarget::Link(b) => {
                if b >= net.bundles {
                    return Err(format!(
                        "link {b} does not exist (the topology has {} links)",
                        net.bundles
                    ));
                }
                net.bundle_links(b).to_vec()
            }
            FaultTarget::Switch(s) => {
                if s >= net.switches() {
                    return Err(format!(
                        "switch {s} does not exist (the topology has {} switches)",
                        net.switches()
                    ));
                }
                net.switch_links(s)
            }
            FaultTarget::Nic(v) => net
                .nic_links(v)
                .ok_or_else(|| {
                    format!(
                        "NIC port {v} does not exist (the topology has {} NIC ports)",
                        net.nic_ports()
                    )
                })?
                .to_vec(),
            FaultTarget::Domain(d) => {
                let domains = net.accelerators / net.apd.max(1);
                if d >= domains || net.is_custom() {
                    return Err(format!(
                        "domain {d} does not exist (the cluster has {domains} scale-up domains)"
                    ));
                }
                let mut v = Vec::new();
                for a in d * net.apd..(d + 1) * net.apd {
                    v.push(net.scale_up_link(a, true));
                    v.push(net.scale_up_link(a, false));
                }
                for p in net.domain_ports(d) {
                    if let Some(l) = net.nic_links(p) {
                        v.extend(l);
                    }
                }
                v
            }
        })
    }

    fn fault(&mut self, idx: usize) -> Result<(), SimError> {
        let f = self.opts.faults[idx];
        let links = self
            .fault_links(f.target)
            .map_err(|reason| SimError::BadFault { index: idx, reason })?;
        for l in links {
            if self.alive[l as usize] {
                self.alive[l as usize] = false;
                self.cap[l as usize] = 0.0;
                self.dirty.push(l);
                self.floor = 0.0;
            }
        }
        self.epoch += 1;
        let now = self.now;
        // Reroute flows that cross a dead link (in slot order, for determinism).
        let mut hit: Vec<u32> = self
            .active
            .iter()
            .copied()
            .filter(|&f| {
                (0..self.fl[f as usize].len as usize)
                    .any(|j| !self.alive[self.fp[f as usize].0[j][0] as usize])
            })
            .collect();
        hit.sort_unstable_by_key(|&f| self.fc[f as usize].lid);
        for f in hit {
            let fu = f as usize;
            self.advance(fu, now);
            self.credit_links(fu);
            self.remove_entries(f, true);
            let p = self.fc[fu].prog as usize;
            let fs = self.ps[p].tmpl[self.fc[fu].tmpl as usize];
            let err = || SimError::NoRoute {
                program: self.progs[p].name.clone(),
                src: fs.src,
                dst: fs.dst,
                flow_id: fs.flow_id,
                at_s: now,
            };
            if fs.path.is_some() {
                return Err(err());
            }
            let lat = self
                .net
                .route(&self.alive, fs.src, fs.dst, fs.flow_id, &mut self.route_buf)
                .map_err(|_| err())?;
            let len = self.route_buf.len();
            for (d, &l) in self.fp[fu].0.iter_mut().zip(&self.route_buf) {
                d[0] = l;
            }
            self.fl[fu].len = len as u8;
            self.fc[fu].lat = lat * self.progs[p].latency_scale;
            self.insert_entries(f);
            self.res.reroutes += 1;
        }
        Ok(())
    }

    // ---- max-min fair rates -----------------------------------------------------------

    fn recompute(&mut self) {
        let now = self.now;
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.l_stamp.iter_mut().for_each(|x| *x = 0);
            self.fl.iter_mut().for_each(|x| {
                x.stamp = 0;
                x.frozen = 0;
            });
            self.stamp = 1;
        }
        let stamp = self.stamp;
        // Flows below `cut` keep their rates (module docs); 0 re-rates the whole component.
        let cut = if self.stale || self.opts.full_rerate || self.floor == f64::INFINITY {
            0.0
        } else {
            self.floor * (1.0 - CUT_REL)
        };
        self.floor = f64::INFINITY;
        self.comp_links.clear();
        self.comp_flows.clear();
        self.queue.clear();
        for i in 0..self.dirty.len() {
            let l = self.dirty[i] as usize;
            if self.l_stamp[l] != stamp {
                self.l_stamp[l] = stamp;
                self.queue.push(l as u32);
            }
        }
        self.dirty.clear();
        // The connected component of the dirty links in the graph of the flows at or above
        // `cut` and their links; each link's capacity left by the flows below `cut` and
        // the weight of those above.
        while let Some(l) = self.queue.pop() {
            let lu = l as usize;
            if cut > 0.0 && !self.carries(lu, cut) {
                // No flow to re-rate here (a dirty link: the flows of every other link
                // reached are at or above `cut`).
                continue;
            }
            self.comp_links.push(l);
            let mut kept = 0.0;
            let mut c = 0u64;
            for &e in &self.link_flows[lu] {
                let f = e as usize / MAXP;
                let w = self.fl[f].w;
                if self.fl[f].rate < cut {
                    kept += self.fl[f].rate * w as f64;
                    continue;
                }
                c += w as u64;
                if self.fl[f].stamp == stamp {
                    continue;
                }
                self.fl[f].stamp = stamp;
                self.comp_flows.push(f as u32);
                for j in 0..self.fl[f].len as usize {
                    let l2 = self.fp[f].0[j][0] as usize;
                    if self.l_stamp[l2] != stamp {
                        self.l_stamp[l2] = stamp;
                        self.queue.push(l2 as u32);
                    }
                }
            }
            self.rem[lu] = self.cap[lu] - kept;
            self.cnt[lu] = c;
        }
        if self.comp_flows.is_empty() {
            return;
        }
        self.res.rate_updates += 1;
        self.res.flows_rerated += self.comp_flows.len() as u64;
        for i in 0..self.comp_flows.len() {
            let f = self.comp_flows[i] as usize;
            self.advance(f, now);
        }
        // Progressive filling. A link's fair share only grows as flows elsewhere freeze,
        // so heap keys are lower bounds: a popped link whose share has grown is pushed
        // back with its current share (no push per decrement). Keys are the bits of the
        // (non-negative) share, which order like the shares.
        let mut init = std::mem::take(&mut self.heap).into_vec();
        init.clear();
        for i in 0..self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            let c = self.cnt[l];
            if c > 0 {
                let share = self.rem[l].max(0.0) / c as f64;
                init.push(Reverse((share.to_bits(), l as u32)));
            }
        }
        self.heap = BinaryHeap::from(init);
        while let Some(Reverse((key, l))) = self.heap.pop() {
            let l = l as usize;
            if self.cnt[l] == 0 {
                continue;
            }
            let share = self.rem[l].max(0.0) / self.cnt[l] as f64;
            if share > f64::from_bits(key) * (1.0 + 1e-12) {
                self.heap.push(Reverse((share.to_bits(), l as u32)));
                continue;
            }
            for k in 0..self.link_flows[l].len() {
                let f = self.link_flows[l][k] as usize / MAXP;
                if self.fl[f].frozen == stamp || self.fl[f].stamp != stamp {
                    continue;
                }
                self.fl[f].frozen = stamp;
                self.fl[f].new_rate = share;
                let w = self.fl[f].w;
                for j in 0..self.fl[f].len as usize {
                    let l2 = self.fp[f].0[j][0] as usize;
                    self.rem[l2] -= share * w as f64;
                    self.cnt[l2] -= w as u64;
                }
            }
        }
        for i in 0..self.comp_flows.len() {
            let f = self.comp_flows[i] as usize;
            let r = self.fl[f].new_rate;
            let old = self.fl[f].rate;
            if old > 0.0 && (r - old).abs() <= 1e-12 * old {
                continue;
            }
            self.fl[f].rate = r;
            self.forget_tops(f);
            self.fl[f].gen = self.fl[f].gen.wrapping_add(1);
            if r > 0.0 {
                let t = now + self.fl[f].rem.max(0.0) / r;
                let gen = self.fl[f].gen;
                self.push(
                    t,
                    Kind::Drain {
                        slot: f as u32,
                        gen,
                    },
                );
            }
        }
        // Drop superseded drain events when they dominate the queue.
        if self.events.len() > 4 * self.active.len() + 4096 {
            let fl = &self.fl;
            self.events.retain(|ev| match *ev {
                Kind::Drain { slot, gen: g } => {
                    fl[slot as usize].gen == g && fl[slot as usize].apos != u32::MAX
                }
                _ => true,
            });
        }
    }
}
