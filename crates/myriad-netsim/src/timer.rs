//! The flow backend behind `myriad_collective::CollectiveTimer`, so the training step model
//! (`myriad_train::estimate_with`) times every collective of a step — TP, CP, EP, PP, DP,
//! ZeRO-3's per-micro-batch gathers — by simulation.
//!
//! Each request runs **every group of its dimension at once** (the layout's groups as one
//! program, [`groups_program`]), so concurrent groups share NICs, leaf uplinks, island links
//! and DCI. Background collectives ([`CollectiveTimer::time_during`]: the pipeline's sends
//! while the gradients reduce) run as further programs in the same simulation and the
//! answer is when the timed program ends.
//!
//! Invariants: results are memoised per (op, bytes, span, layout, background), so one step
//! estimate simulates each distinct collective once; groups that stay inside one scale-up
//! domain cannot share a link with another group (each accelerator has its own scale-up
//! links), so only the group of rank 0 is simulated for them; a collective that cannot be
//! simulated (no route left after faults) costs infinity and is recorded in
//! [`FlowTimer::errors`].

use std::cell::RefCell;
use std::collections::HashMap;

use myriad_cluster::Level;
use myriad_collective::{Algorithm, CollectiveTimer, Concurrent, GroupSpan, Layout, Op, RankGroup};
use serde::Serialize;

use crate::{
    chrome_trace_parts, fastest_p2p, flow_choice, flow_choice_for, groups_program,
    p2p_latency_floor, runs_p2p_protocols, simulate, strided, Choice, Error, Network, Program,
    SimOptions, SimResult,
};

/// One collective the timer simulated, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimedCollective {
    pub op: Op,
    pub bytes: f64,
    /// Groups simulated at once, and ranks per group.
    pub groups: usize,
    pub group_size: u64,
    /// Rank stride inside a group (which parallel dimension it is).
    pub stride: u64,
    pub algorithm: Algorithm,
    /// Collectives running beside it (`send-recv x 16 groups of 8`).
    pub background: Vec<String>,
    pub analytical_s: f64,
    pub flow_s: f64,
}

type Key = (Op, u64, Vec<u64>, Layout, Vec<(Op, u64, Layout)>);

/// Times collectives with the flow-level simulation (see the module docs).
pub struct FlowTimer<'a> {
    net: &'a Network,
    levels: &'a [Level],
    opts: SimOptions,
    cache: RefCell<HashMap<Key, f64>>,
    log: RefCell<Vec<TimedCollective>>,
    errors: RefCell<Vec<String>>,
    /// With `SimOptions::trace`: each simulation and its programs, for [`FlowTimer::chrome_trace`].
    traces: RefCell<Vec<(SimResult, Vec<Program>)>>,
}

impl<'a> FlowTimer<'a> {
    pub fn new(net: &'a Network, levels: &'a [Level], opts: SimOptions) -> Self {
        FlowTimer {
            net,
            levels,
            opts,
            cache: RefCell::default(),
            log: RefCell::default(),
            errors: RefCell::default(),
            traces: RefCell::default(),
        }
    }

    /// Every distinct collective simulated so far, in the order first asked for.
    pub fn log(&self) -> Vec<TimedCollective> {
        self.log.borrow().clone()
    }

    /// A Chrome/Perfetto trace: `timeline` (a step's phases, seconds) in the first process,
    /// then every collective simulated so far with its flows (needs `SimOptions::trace`).
    pub fn chrome_trace(&self, timeline: &[(String, f64)]) -> String {
        let traces = self.traces.borrow();
        let parts: Vec<(&SimResult, &[Program])> =
            traces.iter().map(|(r, p)| (r, p.as_slice())).collect();
        chrome_trace_parts(timeline, &parts)
    }

    /// Collectives that could not be simulated (each timed as infinity).
    pub fn errors(&self) -> Vec<String> {
        self.errors.borrow().clone()
    }

    /// The ranks of the first `limit` groups of `layout` that fit in the cluster.
    fn groups(&self, layout: &Layout, limit: usize) -> Vec<Vec<u32>> {
        let n = layout.n.max(1);
        let stride = layout.stride.max(1);
        let acc = self.net.accelerators() as u64;
        layout
            .group_starts()
            .filter(|&r| r + (n - 1) * stride < acc)
            .take(limit)
            .map(|r| strided(r, n, stride))
            .collect()
    }

    fn simulate(
        &self,
        op: Op,
        bytes: f64,
        span: &GroupSpan,
        layout: &Layout,
        background: &[Concurrent],
    ) -> Result<(f64, TimedCollective), String> {
        // Groups inside one scale-up domain share no link with each other: one is enough.
        let inside_domain = span.spans.iter().skip(1).all(|&s| s <= 1);
        let groups = self.groups(layout, if inside_domain { 1 } else { usize::MAX });
        if groups.is_empty() {
            return Err(format!(
                "{}: no group of {} ranks at stride {} fits the {} accelerators",
                op.name(),
                layout.n,
                layout.stride,
                self.net.accelerators()
            ));
        }
        let choice = flow_choice(op, Algorithm::Auto, bytes, span, self.levels);
        let mut programs = Vec::new();
        let mut names = Vec::new();
        for c in background {
            if c.layout.n <= 1 || c.bytes <= 0.0 {
                continue;
            }
            let bg_groups = self.groups(&c.layout, usize::MAX);
            if bg_groups.is_empty() {
                continue;
            }
            // What NCCL would run for this size on the group holding rank 0 as the
            // hierarchy places it (not ring/direct on Simple, as with no levels).
            let bg_group = RankGroup::new(&bg_groups[0], self.levels);
            let bg_choice = flow_choice_for(c.op, Algorithm::Auto, c.bytes, &bg_group, self.levels);
            let (p, _) = groups_program(self.net, c.op, bg_choice, c.bytes, &bg_groups)
                .map_err(|e| e.to_string())?;
            names.push(format!(
                "{} x {} groups of {}",
                c.op.name(),
                bg_groups.len(),
                c.layout.n
            ));
            programs.push(p);
        }
        // The timed program first, then the background; a direct all-to-all on the faster
        // of NCCL's point-to-point protocols (`fastest_p2p`; the bound on LL holds only
        // for the timed program's own traffic, so not beside a background).
        let run = |protocol| -> Result<((Vec<Program>, Algorithm), SimResult, f64, f64), Error> {
            let (main, algorithm) =
                groups_program(self.net, op, Choice { protocol, ..choice }, bytes, &groups)?;
            let setup = main.start_s + main.setup_s;
            let mut all = Vec::with_capacity(programs.len() + 1);
            all.push(main);
            all.extend(programs.iter().cloned());
            let sim = simulate(self.net, &all, &self.opts)?;
            let end = sim.programs.first().map_or(sim.time_s, |p| p.end_s);
            Ok(((all, algorithm), sim, setup, end))
        };
        let ((programs, algorithm), sim, flow_s, _) = if runs_p2p_protocols(op, choice.algorithm) {
            let prune = self.opts.faults.is_empty() && programs.is_empty();
            let floor = match prune {
                // One group's rounds: all groups run them together.
                true => crate::collective(self.net, op, choice.algorithm, bytes, &groups[0])
                    .map(|p| p2p_latency_floor(self.net, &p))
                    .unwrap_or(0.0),
                false => 0.0,
            };
            fastest_p2p(self.net, choice.protocol, prune, floor, run)
        } else {
            run(choice.protocol).map(|(p, sim, _, end)| (p, sim, end, choice.protocol))
        }
        .map_err(|e| e.to_string())?;
        if self.opts.trace {
            self.traces.borrow_mut().push((sim.clone(), programs));
        }
        let analytical_s = myriad_collective::time(op, Algorithm::Auto, bytes, span, self.levels)
            .map(|t| t.time_s)
            .unwrap_or(f64::NAN);
        Ok((
            flow_s,
            TimedCollective {
                op,
                bytes,
                groups: groups.len(),
                group_size: layout.n,
                stride: layout.stride,
                algorithm,
                background: names,
                analytical_s,
                flow_s,
            },
        ))
    }
}

impl CollectiveTimer for FlowTimer<'_> {
    fn time(&self, op: Op, bytes: f64, span: &GroupSpan, layout: &Layout) -> f64 {
        self.time_during(op, bytes, span, layout, &[])
    }

    fn time_during(
        &self,
        op: Op,
        bytes: f64,
        span: &GroupSpan,
        layout: &Layout,
        background: &[Concurrent],
    ) -> f64 {
        if span.size() <= 1 || bytes <= 0.0 {
            return 0.0;
        }
        let key: Key = (
            op,
            bytes.to_bits(),
            span.spans.clone(),
            *layout,
            background
                .iter()
                .map(|c| (c.op, c.bytes.to_bits(), c.layout))
                .collect(),
        );
        if let Some(&t) = self.cache.borrow().get(&key) {
            return t;
        }
        let t = match self.simulate(op, bytes, span, layout, background) {
            Ok((t, row)) => {
                self.log.borrow_mut().push(row);
                t
            }
            Err(e) => {
                self.errors.borrow_mut().push(e);
                f64::INFINITY
            }
        };
        self.cache.borrow_mut().insert(key, t);
        t
    }
}
