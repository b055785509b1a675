//! The event loop: arrivals, completions and hourly inference scaling over every region's
//! queue, with metrics integrated between events.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use serde::Serialize;

use crate::cluster::{Piece, State, Topology};
use crate::frag::Fgd;
use crate::{Constraint, Job, Kind, Placement, Policy, QueueOrder, RejectReason, Workload};

/// Simulation options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Width of the allocation time series bins, seconds (0: span / 100, at least one hour).
    pub sample_s: f64,
    /// Most queued jobs examined for backfill after the head (Slurm `bf_max_job_test`).
    pub backfill_depth: usize,
    /// Seconds a preempted job loses when it resumes.
    pub restart_s: f64,
    /// Inference services run until this time, seconds (0: the last arrival, whole days).
    pub horizon_s: f64,
    /// Inter-region bandwidth for staging data, Gbit/s, and one-way latency, seconds.
    pub inter_region_gbps: f64,
    pub inter_region_latency_s: f64,
    /// FGD task-type distribution (needed by the `fgd` placement and the FGD fragment measure).
    pub fgd: Option<Fgd>,
    /// Check invariants after every event (capacity, aggregates, work conservation, gang).
    pub check: bool,
    /// Interruptions per accelerator-second of a running job (0: no failures).
    pub failure_per_gpu_s: f64,
    /// Checkpoint interval: a failure loses the work since the last one, seconds.
    pub checkpoint_s: f64,
    /// Seed of the failure draws (job `i`'s `k`-th start uses its own stream).
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sample_s: 0.0,
            backfill_depth: 500,
            restart_s: 300.0,
            horizon_s: 0.0,
            inter_region_gbps: 100.0,
            inter_region_latency_s: 0.05,
            fgd: None,
            check: false,
            failure_per_gpu_s: 0.0,
            checkpoint_s: 3600.0,
            seed: 1,
        }
    }
}

/// Mean, p50 and p99 of a sample (percentiles interpolated linearly between the order
/// statistics, numpy's default: the p50 of 0 and 100 s is 50 s, not 100 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stat {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
}

impl Stat {
    fn of(mut v: Vec<f64>) -> Stat {
        if v.is_empty() {
            return Stat::default();
        }
        v.sort_by(f64::total_cmp);
        Stat {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: myriad_reliability::quantile(&v, 0.5),
            p99: myriad_reliability::quantile(&v, 0.99),
        }
    }
}

/// Per job class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassStats {
    pub class: String,
    pub jobs: u64,
    pub completed: u64,
    /// Could never run on this cluster (too large, GPU type absent).
    pub rejected: u64,
    /// Seconds from arrival to first start.
    pub wait_s: Stat,
    /// Seconds from arrival to completion.
    pub jct_s: Stat,
    /// Mean over multi-GPU jobs of the share of ring traffic inside one scale-up domain.
    pub in_domain: f64,
    /// The same inside one pod.
    pub in_pod: f64,
    /// Mean over multi-GPU jobs of run time / run time inside one pod (placement speed:
    /// below 1 inside a scale-up domain, above 1 across oversubscribed pods).
    pub slowdown: f64,
    pub preemptions: u64,
}

/// Most bins the allocation time series keeps. Past it neighbouring bins merge and the width
/// doubles: a run far longer than its arrivals (one job of a million hours) would otherwise
/// step through, and store, every empty bin of the requested width.
pub const MAX_BINS: usize = 100_000;

/// One bin of the allocation time series (plus fragmentation at the bin's start).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub t_s: f64,
    /// Time-average allocated share of GPU capacity in the bin (milli-GPU precise).
    pub allocated: f64,
    /// Free whole GPUs that are not on a wholly free node (cannot host a one-node gang), as
    /// a share of free GPUs.
    pub frag_node: f64,
    /// Free whole GPUs outside wholly free scale-up domains, share of free GPUs.
    pub frag_domain: f64,
    /// FGD's expected fragment, GPUs (with a task-type distribution).
    pub frag_fgd: Option<f64>,
    pub queued: u64,
}

/// Per inference service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceStats {
    pub service: String,
    /// Replica-hours served / replica-hours demanded by the daily curve.
    pub slo_attainment: f64,
    /// Share of time with every demanded replica running.
    pub time_fully_served: f64,
    pub replica_hours: f64,
}

/// Most rejected jobs listed one by one in [`Report::rejected_jobs`] (all are counted).
pub const MAX_REJECTIONS_LISTED: usize = 100;

/// A job that could never run, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// Index of the job in the workload (a trace's jobs in arrival order).
    pub job: u32,
    pub class: String,
    pub arrival_s: f64,
    pub accelerators: u32,
    /// The region it was routed to (its home unless cross-region routing moved it).
    pub region: String,
    pub reason: RejectReason,
}

/// The outcome of one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub policy: Policy,
    pub jobs: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Rejected jobs by reason (they add up to `rejected`).
    pub rejections: BTreeMap<RejectReason, u64>,
    /// The first [`MAX_REJECTIONS_LISTED`] rejected jobs (by index), each with its reason.
    pub rejected_jobs: Vec<Rejection>,
    pub makespan_s: f64,
    /// Time-average allocated share of GPU capacity over the arrival window (first to last
    /// arrival; to the makespan when every job arrives at once; to the services' horizon when
    /// no job runs), at the resolution of the
    /// time-series bins.
    pub allocation: f64,
    pub mean_frag_node: f64,
    pub mean_frag_domain: f64,
    pub mean_frag_fgd: Option<f64>,
    pub classes: Vec<ClassStats>,
    pub all: ClassStats,
    pub services: Vec<ServiceStats>,
    /// Jobs run outside their home region, and the data they moved (GB).
    pub moved_jobs: u64,
    pub moved_gb: f64,
    pub preemptions: u64,
    /// Job interruptions by failures, and the accelerator-hours they lost (the time the
    /// lost work held its accelerators, at the speed of its placement).
    pub failures: u64,
    pub lost_gpu_hours: f64,
    pub series: Vec<Sample>,
    /// Invariant violations found with `Options::check` (empty when none).
    pub violations: Vec<String>,
    pub events: u64,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    jobs: u64,
    completed: u64,
    rejected: u64,
    multi: u64,
    in_domain: f64,
    in_pod: f64,
    slowdown: f64,
    preemptions: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Pending,
    Queued,
    Running,
    Done,
    Rejected,
    Cancelled,
}

#[derive(Debug, Clone)]
struct Run {
    st: St,
    region: u16,
    first_start: f64,
    end: f64,
    remaining: f64,
    /// Restart seconds at the head of `remaining` (owed since the last failure or
    /// preemption, or a moved job's data staging): a start that stops before they are paid
    /// still owes one restart, not two (and the rest of its staging, when that is longer).
    /// They take wall-clock seconds; only the work after them runs at the placement's speed.
    owed: f64,
    gen: u32,
    key: (u64, u64),
    place: Option<Placement>,
    preempted: u32,
    in_domain: f64,
    in_pod: f64,
    finished: f64,
    vkey: (i64, u64),
    factor: f64,
    slowdown: f64,
    last_start: f64,
    starts: u32,
    /// Why it was rejected (with `St::Rejected`).
    reason: Option<RejectReason>,
}

/// (time bits, sequence, kind, job or hour, generation).
type Event = (u64, u64, u8, u32, u32);

const ARRIVE: u8 = 0;
const FINISH: u8 = 1;
const HOUR: u8 = 2;
const FAIL: u8 = 3;

fn bits(t: f64) -> u64 {
    // Non-negative finite times order like their bit patterns.
    t.max(0.0).to_bits()
}

/// EASY reservation of a region's blocked head: the earliest time it fits if running jobs end
/// as planned (the shadow time), and where: the GPUs (marked `id` in `Sim::resv_mark`) and
/// the CPU and memory its CPU node will have to spare then. A backfilled job that runs past
/// the shadow time may use none of those GPUs and only the spare CPU and memory.
#[derive(Debug, Clone)]
struct Resv {
    head: u32,
    at: f64,
    id: u32,
    pieces: Vec<Piece>,
    cpu_node: u32,
    spare_cpu: u32,
    spare_mem: u32,
    /// Job shapes that found no place off the reserved GPUs. Free capacity only shrinks
    /// until the next reservation (jobs start, none stops), so neither they nor any larger
    /// job of the same constraint and GPU types would find one.
    no_room: Vec<Shape>,
    /// Wholly free GPUs among the reserved ones, and nodes wholly free now that hold
    /// reserved GPUs (`None`: to count again).
    free_in: Option<(u64, u64)>,
}

/// What `State::find` looks at in a job: constraint, GPU types, then the demands (GPUs,
/// milli-GPU each, CPU, memory), in each of which a larger job is harder to place.
type Shape = (crate::Constraint, u64, [u32; 4]);

fn shape(j: &Job) -> Shape {
    (
        j.constraint,
        j.gpu_types,
        [j.gpus, j.milli as u32, j.cpu_milli, j.memory_mib],
    )
}

/// `s` is at least as hard to place as the failed shape `f`.
fn no_smaller(s: &Shape, f: &Shape) -> bool {
    s.0 == f.0 && s.1 == f.1 && s.2.iter().zip(&f.2).all(|(a, b)| a >= b)
}

struct Svc {
    live: Vec<u32>,
    running: u32,
    served: f64,
    demanded: f64,
    full_time: f64,
    total_time: f64,
    last: f64,
    replica_s: f64,
}

struct Sim<'a> {
    t: &'a Topology,
    p: &'a Policy,
    o: &'a Options,
    jobs: Vec<Job>,
    runs: Vec<Run>,
    state: State,
    empty: State,
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    queue: Vec<BTreeSet<(u64, u64, u32)>>,
    running: Vec<BTreeSet<(u64, u32)>>,
    victims: Vec<BTreeSet<(i64, u64, u32)>>,
    queued_gpu_s: Vec<f64>,
    shadow: Vec<Option<Resv>>,
    /// The blocked head whose reservation is computed when a backfill candidate first fits.
    resv_for: Vec<Option<u32>>,
    /// Since its reservation was computed, every job of the region that stopped ended as
    /// planned (none failed, was preempted or cancelled) and every job that started was
    /// backfilled behind it.
    resv_valid: Vec<bool>,
    /// Per GPU: the id of the reservation holding it (`Resv::id`).
    resv_mark: Vec<u32>,
    resv_next: u32,
    /// Scratch list of the jobs released while computing a reservation.
    released: Vec<u32>,
    region_gpus: Vec<u64>,
    total_milli: f64,
    svcs: Vec<Svc>,
    services: &'a [crate::Service],
    horizon: f64,
    now: f64,
    last_t: f64,
    bin_w: f64,
    bin_start: f64,
    bin_acc: f64,
    first_t: f64,
    /// An event changed the state since the last fragmentation snapshot.
    dirty: bool,
    series: Vec<Sample>,
    violations: Vec<String>,
    moved: u64,
    moved_gb: f64,
    preemptions: u64,
    failures: u64,
    lost_gpu_s: f64,
    events: u64,
    /// Reasons found for rejected job shapes, per region (rejections are rare, a trace may
    /// repeat one shape many times).
    reasons: Vec<(Shape, usize, RejectReason)>,
}

/// When inference services stop: `o.horizon_s`, or the last arrival rounded up to whole days.
pub fn horizon_s(w: &Workload, o: &Options) -> f64 {
    if o.horizon_s > 0.0 {
        o.horizon_s
    } else {
        let last_arrival = w.jobs.iter().map(|j| j.arrival).fold(0.0, f64::max);
        ((last_arrival / 86400.0).ceil().max(1.0)) * 86400.0
    }
}

/// Runs `w` under policy `p` on `t`.
pub fn simulate(t: &Topology, w: &Workload, p: &Policy, o: &Options) -> Report {
    let regions = t.regions();
    let last_arrival = w.jobs.iter().map(|j| j.arrival).fold(0.0, f64::max);
    let horizon = horizon_s(w, o);
    let span_guess = last_arrival.max(if w.services.is_empty() { 0.0 } else { horizon });
    let bin_w = if o.sample_s > 0.0 {
        o.sample_s
    } else {
        (span_guess / 100.0).max(3600.0)
    };
    let state = State::new(t);
    let mut s = Sim {
        t,
        p,
        o,
        jobs: w.jobs.clone(),
        runs: Vec::with_capacity(w.jobs.len()),
        empty: state.clone(),
        state,
        heap: BinaryHeap::with_capacity(w.jobs.len() + 1024),
        seq: 0,
        queue: vec![BTreeSet::new(); regions],
        running: vec![BTreeSet::new(); regions],
        victims: vec![BTreeSet::new(); regions],
        queued_gpu_s: vec![0.0; regions],
        shadow: vec![None; regions],
        resv_for: vec![None; regions],
        resv_valid: vec![false; regions],
        resv_mark: vec![0; t.gpus() as usize],
        resv_next: 0,
        released: vec![],
        region_gpus: (0..regions).map(|r| t.region_gpus(r)).collect(),
        total_milli: t.gpus() as f64 * 1000.0,
        svcs: w
            .services
            .iter()
            .map(|_| Svc {
                live: vec![],
                running: 0,
                served: 0.0,
                demanded: 0.0,
                full_time: 0.0,
                total_time: 0.0,
                last: 0.0,
                replica_s: 0.0,
            })
            .collect(),
        services: &w.services,
        horizon,
        now: 0.0,
        last_t: 0.0,
        bin_w,
        bin_start: 0.0,
        bin_acc: 0.0,
        first_t: 0.0,
        dirty: true,
        series: vec![],
        violations: vec![],
        moved: 0,
        moved_gb: 0.0,
        preemptions: 0,
        failures: 0,
        lost_gpu_s: 0.0,
        events: 0,
        reasons: vec![],
    };
    for j in 0..s.jobs.len() {
        s.runs.push(Run::new());
        let a = s.jobs[j].arrival;
        s.push(a, ARRIVE, j as u32, 0);
    }
    if !w.services.is_empty() {
        let hours = (horizon / 3600.0).ceil() as u32;
        // Every hour of every service region's local clock (a region at UTC+5:30 changes
        // hour at half past each UTC hour: its curve steps there, and its demand is
        // accounted per local hour), and the last step at the horizon itself (where
        // services stop) when it falls inside an hour.
        let mut phases: Vec<f64> = w
            .services
            .iter()
            .map(|sv| (-t.utc_offset_s(sv.region as usize)).rem_euclid(3600.0))
            .collect();
        phases.push(0.0);
        phases.sort_by(f64::total_cmp);
        phases.dedup();
        let mut ticks: Vec<f64> = vec![];
        for h in 0..=hours {
            for &p in &phases {
                ticks.push((h as f64 * 3600.0 + p).min(horizon));
            }
        }
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        for (i, &at) in ticks.iter().enumerate() {
            s.push(at, HOUR, i as u32, 0);
        }
    }
    s.run(horizon);
    s.report(w)
}

impl Run {
    /// After `stop` (which left `remaining` = what was left at the start less `done`): give
    /// back the part of the owed restart this start paid and the `lost` work, and owe one
    /// restart. A start that stopped before its restart was paid still owes one, not two.
    fn owe_restart(&mut self, done: f64, lost: f64, restart_s: f64) {
        // What is owed beyond one restart (the rest of a data staging) stays owed.
        let owed = restart_s.max(self.owed - done);
        self.remaining += done.min(self.owed) + lost - self.owed + owed;
        self.owed = owed;
    }

    /// Seconds a start at run-time `factor` takes: the owed restart, then the work.
    fn wall(&self, factor: f64) -> f64 {
        self.owed + (self.remaining - self.owed) * factor
    }

    /// What the current start has done by `now`, in the units of `remaining`: the restart
    /// paid (seconds) and the work after it (in-pod seconds).
    fn progress(&self, now: f64) -> f64 {
        let e = (now - self.last_start).max(0.0);
        let paid = e.min(self.owed);
        paid + (e - paid) / self.factor
    }

    fn new() -> Run {
        Run {
            st: St::Pending,
            region: 0,
            first_start: f64::NAN,
            end: f64::INFINITY,
            remaining: 0.0,
            owed: 0.0,
            gen: 0,
            key: (0, 0),
            place: None,
            preempted: 0,
            in_domain: 1.0,
            in_pod: 1.0,
            finished: f64::NAN,
            vkey: (0, 0),
            factor: 1.0,
            slowdown: 1.0,
            last_start: 0.0,
            starts: 0,
            reason: None,
        }
    }
}

impl Sim<'_> {
    fn push(&mut self, t: f64, kind: u8, id: u32, gen: u32) {
        self.seq += 1;
        self.heap.push(Reverse((bits(t), self.seq, kind, id, gen)));
    }

    fn run(&mut self, horizon: f64) {
        while let Some(Reverse((tb, _, kind, id, gen))) = self.heap.pop() {
            let t = f64::from_bits(tb);
            self.advance(t);
            self.events += 1;
            match kind {
                ARRIVE => self.arrive(id as usize),
                FINISH => {
                    let j = id as usize;
                    if self.runs[j].gen != gen || self.runs[j].st != St::Running {
                        continue;
                    }
                    self.stop(j, St::Done);
                    self.runs[j].finished = t;
                    let r = self.runs[j].region as usize;
                    self.pass(r);
                }
                FAIL => {
                    let j = id as usize;
                    if self.runs[j].gen != gen || self.runs[j].st != St::Running {
                        continue;
                    }
                    self.fail(j);
                    let r = self.runs[j].region as usize;
                    self.pass(r);
                }
                _ => self.hour(horizon),
            }
            self.dirty = true;
            if self.o.check {
                self.check_all();
            }
        }
        self.advance(self.now);
        self.flush_bin();
    }

    /// Integrates allocation up to `t`, closing bins on the way.
    fn advance(&mut self, t: f64) {
        if self.series.is_empty() {
            self.bin_start = (t / self.bin_w).floor() * self.bin_w;
            self.last_t = t;
            self.first_t = t;
            self.open_bin(self.bin_start);
        }
        let used: u64 = self.state.reg_used_milli.iter().sum();
        let used = used as f64 / self.total_milli;
        while t >= self.bin_start + self.bin_w {
            let end = self.bin_start + self.bin_w;
            self.bin_acc += used * (end - self.last_t);
            self.last_t = end;
            self.flush_bin();
            if self.series.len() >= MAX_BINS && self.series.len().is_multiple_of(2) {
                self.merge_bins();
            }
            self.bin_start = end;
            self.open_bin(end);
        }
        self.bin_acc += used * (t - self.last_t);
        self.last_t = t;
        self.now = t;
    }

    /// Merges neighbouring closed bins pairwise (allocation weighted by the time each
    /// covers, fragmentation and queue at the first's start) and doubles the width.
    fn merge_bins(&mut self) {
        let (w, first) = (self.bin_w, self.first_t);
        let covered = |s: &Sample| (s.t_s + w - s.t_s.max(first)).max(0.0);
        let merged: Vec<Sample> = self
            .series
            .chunks(2)
            .map(|pair| {
                let mut m = pair[0];
                if let Some(b) = pair.get(1) {
                    let (wa, wb) = (covered(&pair[0]), covered(b));
                    if wa + wb > 0.0 {
                        m.allocated = (pair[0].allocated * wa + b.allocated * wb) / (wa + wb);
                    }
                }
                m
            })
            .collect();
        self.series = merged;
        self.bin_w = 2.0 * w;
    }

    fn open_bin(&mut self, t0: f64) {
        // Fragmentation at the bin's start. The state is constant between events, so bins
        // opened with no event since the last snapshot reuse it.
        if let (false, Some(prev)) = (self.dirty, self.series.last()) {
            let mut s = *prev;
            s.t_s = t0;
            s.allocated = 0.0;
            self.series.push(s);
            return;
        }
        self.dirty = false;
        let t = self.t;
        let (mut free, mut in_nodes, mut in_doms) = (0u64, 0u64, 0u64);
        let mut fgd = None;
        for r in 0..t.regions() {
            free += self.state.reg_free_full[r];
            in_nodes += self.state.free_in_free_nodes(t, r);
            in_doms += self.state.free_in_free_domains(t, r);
            if let Some(f) = &self.o.fgd {
                *fgd.get_or_insert(0.0) += f.cluster(t, &self.state, r);
            }
        }
        let share = |x: u64| {
            if free == 0 {
                0.0
            } else {
                (free - x.min(free)) as f64 / free as f64
            }
        };
        self.series.push(Sample {
            t_s: t0,
            allocated: 0.0,
            frag_node: share(in_nodes),
            frag_domain: share(in_doms),
            frag_fgd: fgd,
            queued: self.queue.iter().map(|q| q.len() as u64).sum(),
        });
    }

    fn flush_bin(&mut self) {
        if let Some(s) = self.series.last_mut() {
            // The first bin is averaged from the first event, not from its start.
            let w = (self.last_t - s.t_s.max(self.first_t)).max(0.0);
            let w = if w > 0.0 { w.min(self.bin_w) } else { 0.0 };
            s.allocated = if w > 0.0 { self.bin_acc / w } else { 0.0 };
        }
        self.bin_acc = 0.0;
    }

    fn queue_key(&self, j: usize) -> (u64, u64) {
        let job = &self.jobs[j];
        match self.p.queue {
            QueueOrder::Fifo => (bits(job.arrival), j as u64),
            QueueOrder::Sjf => (bits(job.duration), j as u64),
            // Higher first: i32::MAX - priority is 0..2^32 for every i32 (i64::MAX - priority
            // overflowed for negative priorities, a panic in debug builds).
            QueueOrder::Priority => (
                (i64::from(i32::MAX) - i64::from(job.priority)) as u64,
                j as u64,
            ),
        }
    }

    fn arrive(&mut self, j: usize) {
        let job = &self.jobs[j];
        let home = (job.region as usize).min(self.t.regions() - 1);
        let mut r = home;
        if self.p.cross_region && self.t.regions() > 1 {
            let transfer = job.data_gb * 8.0 / self.o.inter_region_gbps.max(1e-9)
                + self.o.inter_region_latency_s;
            // Only regions that could ever hold the job (home first, when it can): a job
            // routed to one it does not fit in would be rejected although its home runs it.
            let fits = |x: usize, s: &Sim| {
                s.empty
                    .find(s.t, &s.jobs[j], s.p.placement, x, None)
                    .is_some()
            };
            let mut best: Option<(usize, f64)> = None;
            for x in std::iter::once(home).chain((0..self.t.regions()).filter(|&x| x != home)) {
                let cost = self.expected_wait(j, x) + if x == home { 0.0 } else { transfer };
                if best.is_none_or(|(_, b)| cost < b) && fits(x, self) {
                    best = Some((x, cost));
                }
            }
            r = best.map_or(home, |b| b.0);
            if r != home {
                self.moved += 1;
                self.moved_gb += job.data_gb;
                self.jobs[j].duration += transfer;
                // The staging is a WAN copy, paid in wall-clock seconds at the head of the
                // run like a restart: the placement's speed scales only the work after it.
                self.runs[j].owed = transfer;
            }
        }
        let job = &self.jobs[j];
        self.runs[j].region = r as u16;
        self.runs[j].remaining = job.duration;
        if self
            .empty
            .find(self.t, job, self.p.placement, r, None)
            .is_none()
        {
            self.runs[j].st = St::Rejected;
            self.runs[j].reason = Some(self.reject_reason(j, r));
            return;
        }
        let key = self.queue_key(j);
        self.runs[j].key = key;
        self.enqueue(j);
        let head = self.queue[r].first().map(|e| e.2 as usize);
        if head == Some(j) {
            self.pass(r);
        } else if self.p.backfill && (self.shadow[r].is_some() || self.resv_for[r].is_some()) {
            self.try_backfill(j, r);
            self.after_pass(r);
        }
    }

    /// Why job `j`, which has no place in empty region `r`, could never run there.
    fn reject_reason(&mut self, j: usize, r: usize) -> RejectReason {
        let job = &self.jobs[j];
        let sh = shape(job);
        if let Some(&(_, _, why)) = self.reasons.iter().find(|e| e.0 == sh && e.1 == r) {
            return why;
        }
        let t = self.t;
        let (a, b) = t.region_nodes(r);
        let typed = |n: &crate::Node| job.allows_type(n.gpu_type);
        let why = 'why: {
            let gpus = |n: &crate::Node| if typed(n) { u64::from(n.gpus) } else { 0 };
            let total: u64 = t.nodes[a..b].iter().map(gpus).sum();
            if job.gpus > 0 {
                if total == 0 {
                    break 'why RejectReason::GpuType;
                }
                if u64::from(job.gpus) > total {
                    break 'why RejectReason::TooLarge;
                }
                // Accelerators of its types per domain and per pod of the region.
                let mut dom: BTreeMap<u32, u64> = BTreeMap::new();
                let mut pod: BTreeMap<u32, u64> = BTreeMap::new();
                for n in a..b {
                    let d = t.node_domain[n];
                    let g = gpus(&t.nodes[n]);
                    *dom.entry(d).or_default() += g;
                    *pod.entry(t.domain_pod[d as usize]).or_default() += g;
                }
                let need = u64::from(job.gpus);
                let too_big = match job.constraint {
                    Constraint::None => false,
                    Constraint::Domain => dom.values().all(|&g| g < need),
                    Constraint::Pod => pod.values().all(|&g| g < need),
                    Constraint::Segment(k) => {
                        let k = u64::from(k.max(1));
                        dom.values().map(|&g| g / k).sum::<u64>() * k < need
                    }
                };
                if too_big {
                    break 'why RejectReason::Constraint;
                }
            }
            let roomy = t.nodes[a..b].iter().any(|n| {
                (job.gpus == 0 || (typed(n) && n.gpus > 0))
                    && n.cpu_milli >= job.cpu_milli
                    && n.memory_mib >= job.memory_mib
            });
            if !roomy {
                break 'why RejectReason::CpuMemory;
            }
            RejectReason::NoPlace
        };
        if self.reasons.len() < 64 {
            self.reasons.push((sh, r, why));
        }
        why
    }

    /// Seconds job `j` would expect to wait in region `r`, for cross-region routing: until
    /// the running jobs, released in planned-end order, leave enough free accelerators for
    /// it (0 if there are now; infinite if only service replicas, which never end, would),
    /// plus the region's queued work over its accelerators. (Counting the queue alone made
    /// a full region with an empty queue look idle.) Counts, not places: fragmentation and
    /// constraints are not looked at.
    fn expected_wait(&self, j: usize, r: usize) -> f64 {
        let job = &self.jobs[j];
        let queued = self.queued_gpu_s[r] / self.region_gpus[r].max(1) as f64;
        // Whole free GPUs for whole-GPU jobs (a sharing job's release frees no whole GPU
        // for certain), free milli-GPU for a sharing job.
        let whole = job.milli == 1000;
        let (need, mut free) = if whole {
            (u64::from(job.gpus), self.state.reg_free_full[r])
        } else {
            (
                job.milli_total(),
                (self.region_gpus[r] * 1000).saturating_sub(self.state.reg_used_milli[r]),
            )
        };
        if free >= need {
            return queued;
        }
        for &(eb, k) in &self.running[r] {
            let end = f64::from_bits(eb);
            if !end.is_finite() {
                break;
            }
            let rk = &self.jobs[k as usize];
            free += match (whole, rk.milli == 1000) {
                (true, true) => u64::from(rk.gpus),
                (true, false) => 0,
                (false, _) => rk.milli_total(),
            };
            if free >= need {
                return (end - self.now).max(0.0) + queued;
            }
        }
        f64::INFINITY
    }

    /// GPU-seconds job `j` adds to its region's expected-wait estimate while queued (0 for
    /// service replicas: they never end).
    fn queued_work(&self, j: usize) -> f64 {
        let rem = self.runs[j].remaining;
        if rem.is_finite() {
            rem * self.jobs[j].milli_total() as f64 / 1000.0
        } else {
            0.0
        }
    }

    fn enqueue(&mut self, j: usize) {
        let r = self.runs[j].region as usize;
        let (a, b) = self.runs[j].key;
        self.queue[r].insert((a, b, j as u32));
        self.runs[j].st = St::Queued;
        self.queued_gpu_s[r] += self.queued_work(j);
    }

    fn dequeue(&mut self, j: usize) {
        let r = self.runs[j].region as usize;
        let (a, b) = self.runs[j].key;
        self.queue[r].remove(&(a, b, j as u32));
        self.queued_gpu_s[r] -= self.queued_work(j);
        if self.queue[r].is_empty() {
            self.queued_gpu_s[r] = 0.0;
        }
    }

    fn try_start(&mut self, j: usize) -> bool {
        let r = self.runs[j].region as usize;
        let job = &self.jobs[j];
        if job.milli == 1000 && self.state.reg_free_full[r] < job.gpus as u64 {
            return false;
        }
        let Some(pl) = self
            .state
            .find(self.t, job, self.p.placement, r, self.o.fgd.as_ref())
        else {
            return false;
        };
        self.start(j, pl);
        true
    }

    fn start(&mut self, j: usize, pl: Placement) {
        let t = self.t;
        let job = self.jobs[j].clone();
        if self.o.check {
            let held: u64 = pl.pieces.iter().map(|p| p.milli as u64).sum();
            if held < job.milli_total() || (job.milli < 1000 && pl.pieces.len() > 1) {
                self.violations.push(format!(
                    "job {j}: gang of {} milli-GPU placed with {held}",
                    job.milli_total()
                ));
            }
        }
        self.state.apply(t, &pl.pieces, true);
        self.state
            .apply_cpu(pl.cpu_node as usize, job.cpu_milli, job.memory_mib, true);
        self.dequeue(j);
        let n = pl.pieces.len();
        let (nd, np) = self.spans(&pl);
        let factor = self.factor(&job, &pl, nd, np);
        let run = &mut self.runs[j];
        run.factor = factor;
        if run.first_start.is_nan() {
            run.first_start = self.now;
            if n > 1 {
                let share = |k: usize| {
                    if k <= 1 {
                        1.0
                    } else {
                        (n - k) as f64 / n as f64
                    }
                };
                run.in_domain = share(nd);
                run.in_pod = share(np);
                run.slowdown = factor;
            }
        }
        run.st = St::Running;
        run.gen += 1;
        run.end = self.now + run.wall(run.factor);
        let (end, gen, r, prio) = (run.end, run.gen, run.region as usize, job.priority);
        self.running[r].insert((bits(end), j as u32));
        run.vkey = (prio as i64, u64::MAX - bits(self.now));
        self.victims[r].insert((run.vkey.0, run.vkey.1, j as u32));
        run.place = Some(pl);
        run.last_start = self.now;
        run.starts += 1;
        let starts = run.starts;
        // A failure before the end interrupts the job, whatever its kind (one stream per job
        // and start). Service replicas (no end) are not interrupted: their capacity is
        // measured by the SLO attainment, and a lost replica is replaced at once.
        let rate = self.o.failure_per_gpu_s * job.gpus as f64;
        let fail_at = if rate > 0.0 && job.duration.is_finite() {
            let mut rng = crate::workload::Rng::new(
                self.o.seed ^ 0x5EED_FA11,
                ((j as u64) << 20) | starts as u64,
            );
            self.now + rng.exp(1.0 / rate)
        } else {
            f64::INFINITY
        };
        if fail_at < end {
            self.push(fail_at, FAIL, j as u32, gen);
        } else if end.is_finite() {
            self.push(end, FINISH, j as u32, gen);
        }
        if job.kind == Kind::Inference {
            self.svc_change(j, 1);
        }
    }

    /// Topology quality: a ring over the job's GPUs crosses each domain (pod) boundary once
    /// per domain (pod) it spans. Returns the domains and pods `pl` spans.
    fn spans(&self, pl: &Placement) -> (usize, usize) {
        let t = self.t;
        if pl.pieces.len() <= 1 {
            return (1, 1);
        }
        let mut doms: Vec<u32> = pl
            .pieces
            .iter()
            .map(|p| t.node_domain[p.node as usize])
            .collect();
        doms.dedup();
        doms.sort_unstable();
        doms.dedup();
        let mut pods: Vec<u32> = doms.iter().map(|&d| t.domain_pod[d as usize]).collect();
        pods.dedup();
        pods.sort_unstable();
        pods.dedup();
        (doms.len(), pods.len())
    }

    /// Speed: the communicating share of the run time moves at the bandwidth of the smallest
    /// level holding the job, relative to one pod (where `duration` is given). Returns the
    /// run-time factor of `job` placed at `pl`, spanning `nd` domains and `np` pods.
    fn factor(&self, job: &Job, pl: &Placement, nd: usize, np: usize) -> f64 {
        let t = self.t;
        let n = pl.pieces.len();
        let bw = if np > 1 {
            t.gbps[2]
        } else if nd > 1 || n <= 1 {
            t.gbps[1]
        } else {
            t.gbps[0]
        };
        if job.comm_share > 0.0 && n > 1 {
            (1.0 - job.comm_share) + job.comm_share * t.gbps[1] / bw.max(1e-9)
        } else {
            1.0
        }
    }

    /// When job `j` would end if started now at `pl` (at the speed it has there).
    fn end_at(&self, j: usize, pl: &Placement) -> f64 {
        let job = &self.jobs[j];
        let f = if job.comm_share > 0.0 && pl.pieces.len() > 1 {
            let (nd, np) = self.spans(pl);
            self.factor(job, pl, nd, np)
        } else {
            1.0
        };
        self.now + self.runs[j].wall(f)
    }

    /// Takes a running job off the cluster (finished, preempted or scaled down).
    fn stop(&mut self, j: usize, to: St) {
        let run = &mut self.runs[j];
        let pl = run.place.take().expect("running job has a placement");
        let r = run.region as usize;
        self.running[r].remove(&(bits(run.end), j as u32));
        let job = &self.jobs[j];
        self.victims[r].remove(&(run.vkey.0, run.vkey.1, j as u32));
        if to != St::Done {
            self.resv_valid[r] = false;
        }
        run.remaining = (run.remaining - run.progress(self.now)).max(0.0);
        run.st = to;
        run.gen += 1;
        self.state.apply(self.t, &pl.pieces, false);
        self.state
            .apply_cpu(pl.cpu_node as usize, job.cpu_milli, job.memory_mib, false);
        if job.kind == Kind::Inference {
            self.svc_change(j, -1);
        }
    }

    /// A running job fails: it loses the work since its last checkpoint (checkpoints every
    /// `checkpoint_s` of progress after its restart), pays `restart_s` again, and queues.
    fn fail(&mut self, j: usize) {
        let (factor, owed) = (self.runs[j].factor, self.runs[j].owed);
        let done = self.runs[j].progress(self.now);
        let work = (done - owed).max(0.0);
        let lost = work % self.o.checkpoint_s.max(1e-9);
        self.stop(j, St::Queued);
        self.runs[j].owe_restart(done, lost, self.o.restart_s);
        self.failures += 1;
        // The GPUs were held for the lost work at the speed of this placement (`lost` is in
        // in-pod seconds of work).
        self.lost_gpu_s += lost * factor * self.jobs[j].milli_total() as f64 / 1000.0;
        self.enqueue(j);
    }

    /// Schedules region `r`: start jobs from the head while they fit (preempting if the
    /// policy allows), then EASY backfill behind a blocked head.
    fn pass(&mut self, r: usize) {
        self.resv_for[r] = None;
        // EASY's guarantee, checked: a head whose reservation still holds (every job since
        // ended as planned) starts by the reservation's time.
        let promised = match &self.shadow[r] {
            Some(res) if self.o.check && self.resv_valid[r] => Some((res.head, res.at)),
            _ => None,
        };
        while let Some(&(_, _, h)) = self.queue[r].first() {
            let h = h as usize;
            let started = self.try_start(h) || (self.p.preemption && self.try_preempt(h, r));
            if !started {
                break;
            }
            // A job started from the head of the queue is not bound by a reservation (a later
            // arrival may queue ahead under SJF or priority): the reservation is computed anew.
            self.resv_valid[r] = false;
            if let Some((ph, at)) = promised {
                if ph as usize == h && self.now > at {
                    self.violations.push(format!(
                        "t={}: head job {h} starts after its reservation at {at}",
                        self.now
                    ));
                }
            }
        }
        if let Some((ph, at)) = promised {
            // Still waiting at its time, with no other event left at this time.
            let last_now = self
                .heap
                .peek()
                .is_none_or(|Reverse(e)| f64::from_bits(e.0) > self.now);
            let waits = self.queue[r].first().is_some_and(|e| e.2 == ph);
            if waits && self.resv_valid[r] && self.now >= at && last_now {
                self.violations.push(format!(
                    "t={}: head job {ph} still waits past its reservation at {at}",
                    self.now
                ));
            }
        }
        let head = self.queue[r].first().map(|e| e.2);
        // A reservation stays valid while its head waits and running jobs end as planned:
        // jobs ending earlier than they would have in its plan never (it was the earliest
        // fit), and its GPUs are free at its time (backfill kept off them).
        let keep = self.p.backfill
            && self.resv_valid[r]
            && matches!((&self.shadow[r], head), (Some(res), Some(h)) if res.head == h && self.now < res.at);
        if keep {
            if let Some(res) = self.shadow[r].as_mut() {
                // Jobs ended since: what found no room may find some now.
                res.no_room.clear();
                res.free_in = None;
            }
        } else {
            self.shadow[r] = None;
        }
        if self.p.backfill {
            if let Some(h) = head {
                if !keep {
                    self.resv_for[r] = Some(h);
                }
                let cands: Vec<u32> = self.queue[r]
                    .iter()
                    .skip(1)
                    .take(self.o.backfill_depth)
                    .map(|e| e.2)
                    .collect();
                for c in cands {
                    self.try_backfill(c as usize, r);
                }
            }
        }
        self.after_pass(r);
    }

    /// Starts queued job `j` now if that cannot delay region `r`'s reservation: it ends by
    /// the shadow time (at the speed it has where it is placed), or it stays off the reserved
    /// GPUs and within the CPU and memory the reservation leaves to spare.
    fn try_backfill(&mut self, j: usize, r: usize) {
        let job = &self.jobs[j];
        if job.milli == 1000 && self.state.reg_free_full[r] < job.gpus as u64 {
            return;
        }
        let Some(pl) = self
            .state
            .find(self.t, job, self.p.placement, r, self.o.fgd.as_ref())
        else {
            return;
        };
        // The reservation is computed when first needed, before anything starts behind the
        // head: the state is still the one the pass left.
        let res = match (self.shadow[r].take(), self.resv_for[r]) {
            (Some(res), _) => res,
            (None, Some(h)) => self.reserve(h as usize, r),
            (None, None) => return,
        };
        let res = self.backfill_at(j, r, pl, res);
        self.shadow[r] = Some(res);
    }

    fn backfill_at(&mut self, j: usize, r: usize, pl: Placement, mut res: Resv) -> Resv {
        let clear = |s: &Self, pl: &Placement, res: &Resv| {
            pl.pieces
                .iter()
                .all(|p| s.resv_mark[s.state.gpu_index(p.node as usize, p.gpu)] != res.id)
        };
        if self.end_at(j, &pl) <= res.at {
            if !clear(self, &pl, &res) {
                res.free_in = None;
            }
            self.start(j, pl);
            return res;
        }
        let pl = if clear(self, &pl, &res) {
            pl
        } else if res.pieces.is_empty() || {
            let s = shape(&self.jobs[j]);
            res.no_room.iter().any(|f| no_smaller(&s, f))
        } {
            return res;
        } else if !self.room_off(r, j, &mut res) {
            res.no_room.push(shape(&self.jobs[j]));
            return res;
        } else {
            // Look again with the reserved GPUs held back.
            let mask: Vec<Piece> = res
                .pieces
                .iter()
                .map(|p| Piece {
                    milli: self.state.gpus_of(p.node as usize)[p.gpu as usize],
                    ..*p
                })
                .filter(|p| p.milli > 0)
                .collect();
            self.state.apply(self.t, &mask, true);
            let found = self.state.find(
                self.t,
                &self.jobs[j],
                self.p.placement,
                r,
                self.o.fgd.as_ref(),
            );
            self.state.apply(self.t, &mask, false);
            match found {
                Some(pl) => pl,
                None => {
                    res.no_room.push(shape(&self.jobs[j]));
                    return res;
                }
            }
        };
        let job = &self.jobs[j];
        if pl.cpu_node == res.cpu_node {
            if job.cpu_milli > res.spare_cpu || job.memory_mib > res.spare_mem {
                return res;
            }
            res.spare_cpu -= job.cpu_milli;
            res.spare_mem -= job.memory_mib;
        }
        self.start(j, pl);
        res
    }

    /// Whether enough whole GPUs (and whole nodes, for a multi-node job on a uniform
    /// cluster) are free off the reserved ones for job `j`: a quick test before a search with
    /// the reserved GPUs held back.
    fn room_off(&self, r: usize, j: usize, res: &mut Resv) -> bool {
        let (gpus_in, nodes_in) = *res.free_in.get_or_insert_with(|| {
            let (mut g, mut n, mut last) = (0u64, 0u64, u32::MAX);
            for p in &res.pieces {
                g += u64::from(self.state.gpus_of(p.node as usize)[p.gpu as usize] == 1000);
                let node = p.node as usize;
                if p.node != last && self.state.node_full[node] == self.t.nodes[node].gpus {
                    n += 1;
                }
                last = p.node;
            }
            (g, n)
        });
        let job = &self.jobs[j];
        if job.milli == 1000
            && self.state.reg_free_full[r].saturating_sub(gpus_in) < job.gpus as u64
        {
            return false;
        }
        match self.t.uniform_gpus {
            Some(g) if job.gpus > g as u32 => {
                self.state.reg_free_nodes[r].saturating_sub(nodes_in)
                    >= job.gpus.div_ceil(g as u32) as u64
            }
            _ => true,
        }
    }

    /// EASY reservation for head `h` of region `r`: running jobs are released in end order
    /// (as planned) until `h` fits where the placement would put it; never, if it does not
    /// fit once every job with a planned end is off.
    fn reserve(&mut self, h: usize, r: usize) -> Resv {
        self.resv_next = self.resv_next.wrapping_add(1).max(1);
        let id = self.resv_next;
        let t = self.t;
        let mut released = std::mem::take(&mut self.released);
        released.clear();
        let job = &self.jobs[h];
        self.resv_valid[r] = true;
        let mut res = Resv {
            head: h as u32,
            at: f64::INFINITY,
            id,
            pieces: vec![],
            cpu_node: u32::MAX,
            spare_cpu: 0,
            spare_mem: 0,
            no_room: vec![],
            free_in: None,
        };
        for &(eb, j) in &self.running[r] {
            let end = f64::from_bits(eb);
            if !end.is_finite() {
                break;
            }
            let pl = self.runs[j as usize].place.as_ref().expect("running");
            let rj = &self.jobs[j as usize];
            self.state.apply(t, &pl.pieces, false);
            self.state
                .apply_cpu(pl.cpu_node as usize, rj.cpu_milli, rj.memory_mib, false);
            released.push(j);
            if job.milli == 1000 && self.state.reg_free_full[r] < job.gpus as u64 {
                continue;
            }
            if let Some(p) = self
                .state
                .find(t, job, self.p.placement, r, self.o.fgd.as_ref())
            {
                let n = p.cpu_node as usize;
                res.at = end;
                res.cpu_node = p.cpu_node;
                res.spare_cpu = self.state.cpu_free[n].saturating_sub(job.cpu_milli);
                res.spare_mem = self.state.mem_free[n].saturating_sub(job.memory_mib);
                for pc in &p.pieces {
                    self.resv_mark[self.state.gpu_index(pc.node as usize, pc.gpu)] = id;
                }
                res.pieces = p.pieces;
                break;
            }
        }
        for &j in released.iter().rev() {
            let pl = self.runs[j as usize].place.as_ref().expect("running");
            let rj = &self.jobs[j as usize];
            self.state.apply(t, &pl.pieces, true);
            self.state
                .apply_cpu(pl.cpu_node as usize, rj.cpu_milli, rj.memory_mib, true);
        }
        self.released = released;
        res
    }

    /// Preempts running jobs of lower priority than `h` until `h` fits: candidates are
    /// taken lowest priority, latest started first, and of those the ones `h` does not need
    /// (its place is found without their accelerators) keep running. Returns whether `h`
    /// started.
    fn try_preempt(&mut self, h: usize, r: usize) -> bool {
        let prio = self.jobs[h].priority as i64;
        let cands: Vec<u32> = self.victims[r].range(..(prio, 0, 0)).map(|e| e.2).collect();
        let avail: u64 = cands
            .iter()
            .map(|&c| self.jobs[c as usize].milli_total())
            .sum::<u64>()
            + self.state.reg_free_full[r] * 1000;
        if cands.is_empty() || avail < self.jobs[h].milli_total() {
            return false;
        }
        // Preempt only if `h` fits once candidates are off: enough free GPUs in the region
        // may still be on the wrong nodes (or domains, pods), and a preemption that does not
        // start `h` costs its victims a restart for nothing. Candidates are released in
        // order until `h` fits; then each released one but the last is taken back if `h`
        // still fits without it (a victim whose GPUs `h` would not use keeps running).
        let t = self.t;
        let toggle = |s: &mut State, runs: &[Run], jobs: &[Job], c: u32, give: bool| {
            let pl = runs[c as usize].place.as_ref().expect("running");
            let job = &jobs[c as usize];
            s.apply(t, &pl.pieces, !give);
            s.apply_cpu(pl.cpu_node as usize, job.cpu_milli, job.memory_mib, !give);
        };
        let fits = |s: &Self| {
            s.state
                .find(t, &s.jobs[h], s.p.placement, r, s.o.fgd.as_ref())
                .is_some()
        };
        let mut off: Vec<u32> = vec![];
        for &c in &cands {
            toggle(&mut self.state, &self.runs, &self.jobs, c, true);
            off.push(c);
            let job = &self.jobs[h];
            let enough = job.milli != 1000 || self.state.reg_free_full[r] >= job.gpus as u64;
            if enough && fits(self) {
                break;
            }
        }
        if !fits(self) {
            for &c in off.iter().rev() {
                toggle(&mut self.state, &self.runs, &self.jobs, c, false);
            }
            return false;
        }
        let mut victims: Vec<u32> = vec![];
        let last = off.len() - 1;
        for (i, &c) in off.iter().enumerate() {
            if i < last {
                toggle(&mut self.state, &self.runs, &self.jobs, c, false);
                if fits(self) {
                    continue;
                }
                toggle(&mut self.state, &self.runs, &self.jobs, c, true);
            }
            victims.push(c);
        }
        for &c in victims.iter().rev() {
            toggle(&mut self.state, &self.runs, &self.jobs, c, false);
        }
        for c in victims {
            let c = c as usize;
            let done = self.runs[c].progress(self.now);
            self.stop(c, St::Queued);
            self.runs[c].owe_restart(done, 0.0, self.o.restart_s);
            self.runs[c].preempted += 1;
            self.preemptions += 1;
            self.enqueue(c);
        }
        self.try_start(h)
    }

    fn after_pass(&mut self, r: usize) {
        if !self.o.check {
            return;
        }
        if let Some(&(_, _, h)) = self.queue[r].first() {
            let job = &self.jobs[h as usize];
            if self
                .state
                .find(self.t, job, self.p.placement, r, self.o.fgd.as_ref())
                .is_some()
            {
                self.violations.push(format!(
                    "t={}: head job {h} fits but waits (work conservation)",
                    self.now
                ));
            }
        }
    }

    fn check_all(&mut self) {
        if let Err(e) = self.state.check(self.t) {
            self.violations.push(format!("t={}: {e}", self.now));
        }
    }

    fn svc_account(&mut self, i: usize) {
        // Services are accounted up to the horizon, where they stop.
        let now = self.now.min(self.horizon);
        let s = &mut self.svcs[i];
        let dt = now - s.last;
        if dt > 0.0 && s.last < self.horizon {
            let sv = &self.services[i];
            let local = s.last + self.t.utc_offset_s(sv.region as usize);
            let demand = sv.demand(local) as f64;
            s.served += (s.running as f64).min(demand) * dt;
            s.demanded += demand * dt;
            s.total_time += dt;
            if s.running as f64 >= demand {
                s.full_time += dt;
            }
            s.replica_s += s.running as f64 * dt;
        }
        s.last = s.last.max(now);
    }

    fn svc_change(&mut self, j: usize, d: i32) {
        let class = self.jobs[j].class;
        if let Some(i) = self.services.iter().position(|s| s.class == class) {
            self.svc_account(i);
            let s = &mut self.svcs[i];
            s.running = (s.running as i32 + d).max(0) as u32;
        }
    }

    /// Hourly: each service scales to its target (the curve under day-night sharing, its
    /// peak otherwise); stops at the horizon.
    fn hour(&mut self, horizon: f64) {
        let now = self.now;
        let mut touched = vec![false; self.t.regions()];
        for i in 0..self.services.len() {
            self.svc_account(i);
            let sv = &self.services[i];
            let target = if now >= horizon {
                0
            } else if self.p.day_night {
                sv.demand(now + self.t.utc_offset_s(sv.region as usize))
            } else {
                sv.peak_replicas
            } as usize;
            let r = (sv.region as usize).min(self.t.regions() - 1);
            // No more replicas queue than the region could ever run at once (one, to be
            // rejected, if none fits): a peak past the cluster cannot make millions of them.
            let fit = (self.region_gpus[r] / u64::from(sv.replica_gpus.max(1))).max(1);
            let target = target.min(usize::try_from(fit).unwrap_or(usize::MAX));
            touched[r] = true;
            while self.svcs[i].live.len() > target {
                // Scale down: newest replica first (queued ones before running ones).
                let pos = self.svcs[i]
                    .live
                    .iter()
                    .rposition(|&j| self.runs[j as usize].st == St::Queued)
                    .unwrap_or(self.svcs[i].live.len() - 1);
                let j = self.svcs[i].live.remove(pos) as usize;
                match self.runs[j].st {
                    St::Queued => {
                        self.dequeue(j);
                        self.runs[j].st = St::Cancelled;
                    }
                    St::Running => self.stop(j, St::Cancelled),
                    _ => {}
                }
            }
            while self.svcs[i].live.len() < target {
                let sv = &self.services[i];
                let id = self.jobs.len();
                let mut job = Job::new(id as u32, now, f64::INFINITY, sv.replica_gpus);
                job.class = sv.class;
                job.kind = Kind::Inference;
                job.priority = sv.priority;
                job.region = r as u16;
                self.jobs.push(job);
                let mut run = Run::new();
                run.region = r as u16;
                run.remaining = f64::INFINITY;
                self.runs.push(run);
                if self
                    .empty
                    .find(self.t, &self.jobs[id], self.p.placement, r, None)
                    .is_none()
                {
                    self.runs[id].st = St::Rejected;
                    break;
                }
                self.runs[id].key = self.queue_key(id);
                // Replicas are not part of the expected-wait estimate (they never end).
                self.queue[r].insert((self.runs[id].key.0, self.runs[id].key.1, id as u32));
                self.runs[id].st = St::Queued;
                self.svcs[i].live.push(id as u32);
            }
        }
        for (r, t) in touched.into_iter().enumerate() {
            if t {
                self.pass(r);
            }
        }
    }

    fn report(mut self, w: &Workload) -> Report {
        let n_classes = w.classes.len().max(1);
        let mut wait: Vec<Vec<f64>> = vec![vec![]; n_classes];
        let mut jct: Vec<Vec<f64>> = vec![vec![]; n_classes];
        let mut counts = vec![Acc::default(); n_classes];
        let mut makespan: f64 = 0.0;
        let mut rejections: BTreeMap<RejectReason, u64> = BTreeMap::new();
        let mut rejected_jobs = vec![];
        let first = w
            .jobs
            .iter()
            .map(|j| j.arrival)
            .fold(f64::INFINITY, f64::min);
        let first = if first.is_finite() { first } else { 0.0 };
        for (j, job) in self.jobs.iter().enumerate() {
            let run = &self.runs[j];
            let c = (job.class as usize).min(n_classes - 1);
            let k = &mut counts[c];
            let replica = job.kind == Kind::Inference && !job.duration.is_finite();
            if !replica {
                k.jobs += 1;
            }
            k.preemptions += run.preempted as u64;
            match run.st {
                // Replicas are not jobs: one that cannot fit is retried every hour and shows
                // in its service's SLO attainment, not as a rejected job per hour.
                St::Rejected if !replica => {
                    k.rejected += 1;
                    let reason = run.reason.unwrap_or(RejectReason::NoPlace);
                    *rejections.entry(reason).or_default() += 1;
                    if rejected_jobs.len() < MAX_REJECTIONS_LISTED {
                        rejected_jobs.push(Rejection {
                            job: j as u32,
                            class: w.classes.get(c).cloned().unwrap_or_else(|| "jobs".into()),
                            arrival_s: job.arrival,
                            accelerators: job.gpus,
                            region: self
                                .t
                                .region_names
                                .get(run.region as usize)
                                .cloned()
                                .unwrap_or_default(),
                            reason,
                        });
                    }
                }
                St::Rejected => {}
                // Nor are their waits and placements job statistics (the SLO attainment
                // measures them): mixed in, a replica's wait of 0 diluted every job's.
                _ if replica => {}
                _ if !run.first_start.is_nan() => {
                    wait[c].push(run.first_start - job.arrival);
                    if job.gpus > 1 {
                        k.multi += 1;
                        k.in_domain += run.in_domain;
                        k.in_pod += run.in_pod;
                        k.slowdown += run.slowdown;
                    }
                    if run.st == St::Done {
                        k.completed += 1;
                        jct[c].push(run.finished - job.arrival);
                        makespan = makespan.max(run.finished);
                    }
                }
                _ => {}
            }
        }
        let mk = |name: String, k: &Acc, w: Vec<f64>, j: Vec<f64>| {
            let mean = |x: f64| if k.multi > 0 { x / k.multi as f64 } else { 1.0 };
            ClassStats {
                class: name,
                jobs: k.jobs,
                completed: k.completed,
                rejected: k.rejected,
                wait_s: Stat::of(w),
                jct_s: Stat::of(j),
                in_domain: mean(k.in_domain),
                in_pod: mean(k.in_pod),
                slowdown: mean(k.slowdown),
                preemptions: k.preemptions,
            }
        };
        let mut all_k = Acc::default();
        for k in &counts {
            all_k.jobs += k.jobs;
            all_k.completed += k.completed;
            all_k.rejected += k.rejected;
            all_k.multi += k.multi;
            all_k.in_domain += k.in_domain;
            all_k.in_pod += k.in_pod;
            all_k.slowdown += k.slowdown;
            all_k.preemptions += k.preemptions;
        }
        let all = mk(
            "all".into(),
            &all_k,
            wait.iter().flatten().copied().collect(),
            jct.iter().flatten().copied().collect(),
        );
        let classes: Vec<ClassStats> = counts
            .into_iter()
            .zip(wait)
            .zip(jct)
            .enumerate()
            .map(|(i, ((k, w_), j))| {
                mk(
                    w.classes.get(i).cloned().unwrap_or_else(|| "jobs".into()),
                    &k,
                    w_,
                    j,
                )
            })
            .collect();
        for i in 0..self.services.len() {
            self.svc_account(i);
        }
        let services = self
            .services
            .iter()
            .zip(&self.svcs)
            .map(|(sv, s)| ServiceStats {
                service: sv.name.clone(),
                slo_attainment: if s.demanded > 0.0 {
                    s.served / s.demanded
                } else {
                    1.0
                },
                time_fully_served: if s.total_time > 0.0 {
                    s.full_time / s.total_time
                } else {
                    1.0
                },
                replica_hours: s.replica_s / 3600.0,
            })
            .collect();
        // Allocation and fragmentation: time averages over the arrival window (first to last
        // arrival of a job; to the makespan when all arrive at once), where the offered load
        // applies, not over the drain after the last arrival.
        let last = w.jobs.iter().map(|j| j.arrival).fold(first, f64::max);
        // With no job that arrives and runs (an empty trace, only rejected jobs) beside
        // services, the window is the services' run, up to the horizon.
        let end = if last > first {
            last
        } else if makespan > first || self.services.is_empty() {
            makespan.max(first)
        } else {
            self.horizon.max(first)
        };
        let (mut acc, mut wsum) = (0.0, 0.0);
        let (mut fnode, mut fdom, mut ffgd, mut nf) = (0.0, 0.0, 0.0, 0.0);
        for s in &self.series {
            let a = s.t_s.max(first);
            let b = (s.t_s + self.bin_w).min(end);
            if b > a {
                acc += s.allocated * (b - a);
                wsum += b - a;
                fnode += s.frag_node;
                fdom += s.frag_domain;
                ffgd += s.frag_fgd.unwrap_or(0.0);
                nf += 1.0;
            }
        }
        let has_fgd = self.o.fgd.is_some();
        Report {
            policy: self.p.clone(),
            jobs: all.jobs,
            completed: all.completed,
            rejected: all.rejected,
            rejections,
            rejected_jobs,
            makespan_s: makespan,
            allocation: if wsum > 0.0 { acc / wsum } else { 0.0 },
            mean_frag_node: if nf > 0.0 { fnode / nf } else { 0.0 },
            mean_frag_domain: if nf > 0.0 { fdom / nf } else { 0.0 },
            mean_frag_fgd: has_fgd.then(|| if nf > 0.0 { ffgd / nf } else { 0.0 }),
            classes,
            all,
            services,
            moved_jobs: self.moved,
            moved_gb: self.moved_gb,
            preemptions: self.preemptions,
            failures: self.failures,
            lost_gpu_hours: self.lost_gpu_s / 3600.0,
            series: self.series,
            violations: self.violations,
            events: self.events,
        }
    }
}
