//! One replica: an exact event-by-event simulation of a training job under failures.
//!
//! Events (failures, planned stops, repairs, the end of recovery, the end of the run) sit
//! in a `BinaryHeap` keyed by `(time, sequence)`, so ties resolve in scheduling order and a
//! replica is a pure function of its inputs and its random stream. Between two events the
//! job either trains or is down. While it trains, checkpoints follow a fixed cycle from the
//! moment it resumed (compute `tau`, stall `stall`), so where the job stands at any instant
//! (work done, stall time, which checkpoints are restorable) is computed exactly in closed
//! form instead of being stepped: checkpoints need no events.
//!
//! The random stream is used only by the failure and planned-stop processes, in time order,
//! and the same number of draws is made at every event whatever the job's state. The
//! arrival times, causes and struck domains of a replica are therefore the same under every
//! checkpoint policy (common random numbers), which makes policy sweeps smooth.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Blast, Job, Policy, N_COMPONENTS};

/// Longest checkpoint interval simulated (about 30 years): "never" without failures.
pub const MAX_INTERVAL_S: f64 = 1e9;

/// A whole-run replica stops at this many times its failure-free duration (an ETTR under
/// 5%, a plan nobody would run); what it kept by then gives its ETTR, and its time to train
/// is projected from that ETTR ([`ReplicaStats::projected_wall_s`]).
pub const MAX_WALL_FACTOR: f64 = 20.0;

/// A replica stops after this many events (failures, planned stops, repairs, resumptions),
/// as at [`MAX_WALL_FACTOR`]. At the Llama 3 rates a 16,384-accelerator job has about 8
/// interruptions a day, three events each: 20,000 events is over two years of it, and
/// about 90 days of a 100,000-accelerator one. Beyond that the ETTR over what was simulated
/// is already known to a fraction of a percent, and the rest of the run is projected from it.
pub const MAX_EVENTS: u64 = 20_000;

/// How long a replica runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Horizon {
    /// A fixed window of wall-clock seconds.
    Window(f64),
    /// Until this many seconds of training compute are done and kept (the whole run).
    Work(f64),
}

/// What one replica measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaStats {
    /// Wall-clock seconds simulated (the window, or the time to finish the run).
    pub wall_s: f64,
    /// Seconds of training compute done and kept.
    pub work_s: f64,
    /// Unexpected interruptions, by component (`Component::ALL` order).
    pub by_component: [u32; N_COMPONENTS],
    pub unexpected: u32,
    pub planned: u32,
    /// Unexpected interruptions that struck while the job was training.
    pub struck_training: u32,
    /// Unexpected interruptions that sent the job back to a checkpoint, losing work: those
    /// that struck while it trained, and those during recovery that also lost the in-memory
    /// copy of work not yet on storage (the denominator of the lost work per failure).
    pub rollbacks: u32,
    /// Seconds of training compute lost (redone after restarts).
    pub lost_s: f64,
    /// Seconds down: detection, diagnosis, waiting for spares, restart, restore, planned
    /// downtime.
    pub down_s: f64,
    /// Part of `down_s` spent waiting for a spare domain.
    pub wait_s: f64,
    /// Seconds training was stalled by checkpoints (including the one before a planned stop).
    pub stall_s: f64,
    /// Checkpoints started (a float: a long window of nanosecond intervals outgrows a u64).
    pub checkpoints: f64,
    /// Restarts that had to read persistent storage because the in-memory copy was lost
    /// (multi-level checkpoints only).
    pub storage_restores: u32,
    /// Most whole domains out of the job for repair at once (spare domains needed so that
    /// the job never waits).
    pub peak_domains_out: u32,
    /// Accelerator-seconds held in repair within the simulated time (a repair that outlasts
    /// the replica counts until its end).
    pub repair_accelerator_s: f64,
    /// A whole-run replica stopped before the end of the run, at [`MAX_WALL_FACTOR`] or
    /// [`MAX_EVENTS`].
    pub capped: bool,
    /// Wall-clock seconds to finish the run: `wall_s`, or for a capped replica the run's
    /// work over its ETTR so far (infinite if it kept nothing). For a window, `wall_s`.
    pub projected_wall_s: f64,
}

impl ReplicaStats {
    /// Effective training time ratio: kept training compute over wall-clock time.
    pub fn ettr(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.work_s / self.wall_s
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ev {
    Failure,
    Planned,
    /// A pool domain back from repair (it failed at `since`).
    RepairDomain {
        since: f64,
    },
    /// In-domain spares of job slot `slot` back from repair (they failed at `since`).
    RepairInDomain {
        slot: u32,
        n: u32,
        since: f64,
    },
    /// Recovery done; valid if `gen` is still current.
    Resume {
        gen: u64,
    },
    /// The run reaches its target work; valid if `gen` is still current.
    Finish {
        gen: u64,
    },
    End,
}

struct Entry {
    t: f64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and the earliest event must come first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.t.total_cmp(&self.t).then(o.seq.cmp(&self.seq))
    }
}

struct Queue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl Queue {
    fn push(&mut self, t: f64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }
}

/// The checkpoint cycle of a policy, with the deferrals a slow background write forces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cycle {
    /// Compute seconds between checkpoints.
    pub tau: f64,
    /// Stall per checkpoint.
    pub stall: f64,
    /// `tau + stall`.
    pub period: f64,
    /// After a checkpoint's stall, seconds until it can be restored (first level).
    pub lag: f64,
    /// Multi-level: every `every`-th checkpoint reaches storage `lag2` after its stall.
    pub persist: Option<(u64, f64)>,
}

impl Cycle {
    pub(crate) fn new(p: &Policy) -> Self {
        // A background write must finish before the next snapshot starts: the snapshot is
        // deferred (training goes on) until it has.
        let tau = p.effective_interval_s();
        let stall = p.stall_s;
        let period = tau + stall;
        let persist = p.persist.map(|q| {
            let need = (q.lag_s / period).ceil() as u64;
            (u64::from(q.every).max(need).max(1), q.lag_s)
        });
        Cycle {
            tau,
            stall,
            period,
            lag: p.lag_s,
            persist,
        }
    }

    /// Work done, stall time and checkpoints started `e` seconds after training resumed.
    fn at(&self, e: f64) -> (f64, f64, f64) {
        let k = (e / self.period).floor();
        let r = e - k * self.period;
        let work = k * self.tau + r.min(self.tau);
        let stall = k * self.stall + (r - self.tau).max(0.0);
        (work, stall, k + f64::from(u8::from(r > self.tau)))
    }

    /// Checkpoints restorable `e` seconds after training resumed, `lag` after their stall.
    fn restorable(&self, e: f64, lag: f64) -> u64 {
        let n = (e - lag) / self.period;
        if n >= 1.0 {
            n.floor() as u64
        } else {
            0
        }
    }

    /// The newest checkpoint on storage `e` seconds after training resumed from checkpoint
    /// index `c0`: checkpoints since resuming that reached storage, counted as the run's
    /// `every`-th checkpoints (`c0 + i` a multiple of `every`); `None` before the first.
    fn storage_point(&self, c0: u64, e: f64) -> Option<u64> {
        let (every, lag2) = self.persist?;
        let n = self.restorable(e, lag2);
        let m = (c0 + n) / every * every;
        (m > c0).then(|| m - c0)
    }

    /// Seconds after resuming at which `w` seconds of work are done.
    fn time_for(&self, w: f64) -> f64 {
        if w <= 0.0 {
            return 0.0;
        }
        let k = ((w / self.tau).ceil() - 1.0).max(0.0);
        k * self.period + (w - k * self.tau)
    }
}

/// A uniform draw in (0, 1].
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// An exponential draw with the given rate.
fn next_exp(rng: &mut ChaCha8Rng, rate: f64) -> f64 {
    -uniform(rng).ln() / rate
}

/// The random stream of replica `index`: one ChaCha8 stream per replica, so results do not
/// depend on how replicas are spread over threads.
pub(crate) fn stream(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

enum State {
    Training {
        since: f64,
        /// Work at `since` (restored from a checkpoint).
        w0: f64,
        /// Periodic checkpoints in the work's history at `since` (the index of the one
        /// restored): the storage level takes every `every`-th of them, counted over the whole
        /// run, not from the last restart.
        c0: u64,
    },
    Down {
        since: f64,
        /// When detection and diagnosis (or the planned downtime) end.
        ready: f64,
        /// Spare domains still missing.
        waiting: u32,
        /// Seconds from `ready` (or the last spare's arrival) to training.
        restart: f64,
        /// When the last missing spare arrived (`ready` if none was missing; infinite
        /// while one still is).
        wait_until: f64,
        /// A planned stop's checkpoint, written until `since`: before then a failure finds
        /// it unwritten and restores what was restorable when the stop began (first level,
        /// storage), each with its checkpoint index.
        unsaved: Option<((f64, u64), (f64, u64))>,
    },
}

/// Closes a down period at `t`: down time, and the part of it spent waiting for spares.
/// A planned stop's down period begins after its checkpoint stall, which was counted whole
/// when the stop began; closed inside that stall (a failure, the window's end), only the
/// part of the stall that ran counts, and there was no down time yet.
fn close_down(st: &mut ReplicaStats, since: f64, ready: f64, wait_until: f64, t: f64) {
    if t < since {
        st.stall_s -= since - t;
        return;
    }
    st.down_s += t - since;
    st.wait_s += (t.min(wait_until) - ready.max(since)).max(0.0);
}

/// Simulates one replica.
pub fn replica(
    job: &Job,
    policy: &Policy,
    horizon: Horizon,
    seed: u64,
    index: u64,
) -> ReplicaStats {
    let cyc = Cycle::new(policy);
    let mut rng = stream(seed, index);
    let mut st = ReplicaStats::default();
    let mut q = Queue {
        heap: BinaryHeap::with_capacity(64),
        seq: 0,
    };
    let total_rate = job.unexpected_rate_per_s();
    let cum: Vec<f64> = job
        .causes
        .iter()
        .scan(0.0, |a, c| {
            *a += c.rate_per_s(job.scale);
            Some(*a)
        })
        .collect();
    if total_rate > 0.0 {
        let dt = next_exp(&mut rng, total_rate);
        q.push(dt, Ev::Failure);
    }
    if job.planned_per_s > 0.0 {
        let dt = next_exp(&mut rng, job.planned_per_s);
        q.push(dt, Ev::Planned);
    }
    let target = match horizon {
        Horizon::Window(w) => {
            q.push(w, Ev::End);
            f64::INFINITY
        }
        Horizon::Work(w) => w,
    };
    let horizon_t = match horizon {
        Horizon::Window(w) => w,
        Horizon::Work(_) => f64::INFINITY,
    };
    if target.is_finite() {
        q.push(MAX_WALL_FACTOR * cyc.time_for(target), Ev::End);
    }
    let mut events: u64 = 0;

    let mut gen: u64 = 0;
    // Work restorable from persistent storage (multi-level only).
    let mut w_storage: f64 = 0.0;
    // Checkpoint index of the work on storage, and of the work kept (`st.work_s`).
    let mut c_storage: u64 = 0;
    let mut c_work: u64 = 0;
    let mut pool = job.pool_domains;
    let mut domains_out: u32 = 0;
    let mut in_domain: Vec<u32> = if job.spares_per_domain > 0 {
        vec![job.spares_per_domain; job.domains as usize]
    } else {
        Vec::new()
    };
    let mut state = State::Training {
        since: 0.0,
        w0: 0.0,
        c0: 0,
    };
    if target.is_finite() {
        q.push(cyc.time_for(target), Ev::Finish { gen });
    }

    // Closes a training segment at `t`: adds its stalls and checkpoints, returns work done.
    let close = |st: &mut ReplicaStats, since: f64, t: f64| -> (f64, f64) {
        let e = t - since;
        let (w, s, n) = cyc.at(e);
        st.stall_s += s;
        st.checkpoints += n;
        (w, e)
    };

    while let Some(Entry { t, ev, .. }) = q.heap.pop() {
        events += 1;
        let ev = if events > MAX_EVENTS {
            // The event it replaces stays unhandled, but a repair ending now still counts.
            q.push(t, ev);
            Ev::End
        } else {
            ev
        };
        match ev {
            Ev::End | Ev::Finish { .. } => {
                if let Ev::Finish { gen: g } = ev {
                    if g != gen {
                        continue;
                    }
                }
                st.capped = events > MAX_EVENTS || (matches!(ev, Ev::End) && target.is_finite());
                match state {
                    State::Training { since, w0, .. } => {
                        let (w, _) = close(&mut st, since, t);
                        st.work_s = w0 + w;
                    }
                    State::Down {
                        since,
                        ready,
                        wait_until,
                        ..
                    } => close_down(&mut st, since, ready, wait_until, t),
                }
                st.wall_s = t;
                // Repairs still under way count until now.
                for e in q.heap.iter() {
                    match e.ev {
                        Ev::RepairDomain { since } => {
                            st.repair_accelerator_s += job.domain_size as f64 * (t - since)
                        }
                        Ev::RepairInDomain { n, since, .. } => {
                            st.repair_accelerator_s += n as f64 * (t - since)
                        }
                        _ => {}
                    }
                }
                break;
            }
            Ev::Failure => {
                // Fixed draws per failure: next arrival, cause, domain, memory copy.
                let dt = next_exp(&mut rng, total_rate);
                q.push(t + dt, Ev::Failure);
                let u = uniform(&mut rng) * total_rate;
                let ci = cum.iter().position(|&c| u <= c).unwrap_or(cum.len() - 1);
                let slot = ((uniform(&mut rng) * job.domains as f64) as u64).min(job.domains - 1);
                let mem_lost = uniform(&mut rng) <= policy.persist.map_or(0.0, |p| p.lost_fraction);
                if t >= horizon_t {
                    continue;
                }
                let cause = &job.causes[ci];
                st.unexpected += 1;
                st.by_component[cause.component as usize] += 1;
                // Where the job restarts from.
                let (restore_s, from_storage) = match policy.persist {
                    Some(_) if mem_lost => (policy.restore_storage_s, true),
                    Some(_) => (policy.restore_s, false),
                    None => (policy.restore_s, true),
                };
                let prev_wait = match state {
                    State::Training { since, w0, c0 } => {
                        let (w, e) = close(&mut st, since, t);
                        let n1 = cyc.restorable(e, cyc.lag);
                        let first = (w0 + cyc.tau * n1 as f64, c0 + n1);
                        if let Some(i) = cyc.storage_point(c0, e) {
                            let w2 = w0 + cyc.tau * i as f64;
                            if w2 > w_storage {
                                (w_storage, c_storage) = (w2, c0 + i);
                            }
                        }
                        // The newest checkpoint that survives: storage only when the memory
                        // copy is lost, else the newer of the two levels.
                        let kept = if from_storage && policy.persist.is_some() {
                            st.storage_restores += 1;
                            (w_storage, c_storage)
                        } else if policy.persist.is_some() && w_storage > first.0 {
                            (w_storage, c_storage)
                        } else {
                            first
                        };
                        st.struck_training += 1;
                        st.rollbacks += 1;
                        st.lost_s += w0 + w - kept.0;
                        (st.work_s, c_work) = kept;
                        0
                    }
                    State::Down {
                        since,
                        waiting,
                        ready,
                        wait_until,
                        unsaved,
                        ..
                    } => {
                        close_down(&mut st, since, ready, wait_until, t);
                        if let Some((first, storage)) = unsaved.filter(|_| t < since) {
                            // The planned stop's checkpoint was still being written: it is
                            // lost with the work it was saving.
                            (w_storage, c_storage) = storage;
                            let kept = if from_storage && policy.persist.is_some() {
                                st.storage_restores += 1;
                                storage
                            } else if policy.persist.is_some() && storage.0 > first.0 {
                                storage
                            } else {
                                first
                            };
                            st.struck_training += 1;
                            st.rollbacks += 1;
                            st.lost_s += st.work_s - kept.0;
                            (st.work_s, c_work) = kept;
                        } else if from_storage && policy.persist.is_some() && st.work_s > w_storage
                        {
                            // The in-memory copy is gone too: back to storage.
                            st.lost_s += st.work_s - w_storage;
                            (st.work_s, c_work) = (w_storage, c_storage);
                            st.storage_restores += 1;
                            st.rollbacks += 1;
                        }
                        waiting
                    }
                };
                if from_storage {
                    (w_storage, c_storage) = (st.work_s, c_work);
                }
                // Hardware to replace.
                let mut waiting = prev_wait;
                let d = job.domain_size;
                let need = match cause.blast {
                    Blast::None => None,
                    Blast::Accelerators(n) => Some(n.min(d)),
                    Blast::Domain => Some(d),
                };
                if let Some(n) = need {
                    let s = slot as usize;
                    if n < d && !in_domain.is_empty() && in_domain[s] >= n {
                        in_domain[s] -= n;
                        q.push(
                            t + job.repair_s,
                            Ev::RepairInDomain {
                                slot: slot as u32,
                                n,
                                since: t,
                            },
                        );
                    } else {
                        // The whole domain leaves the job; a spare domain takes its place.
                        domains_out += 1;
                        st.peak_domains_out = st.peak_domains_out.max(domains_out);
                        q.push(t + job.repair_s, Ev::RepairDomain { since: t });
                        if !in_domain.is_empty() {
                            in_domain[s] = job.spares_per_domain;
                        }
                        if pool > 0 {
                            pool -= 1;
                        } else {
                            waiting += 1;
                        }
                    }
                }
                gen += 1;
                let ready = t + job.detect_s + job.diagnose_s;
                let restart = job.restart_s + restore_s;
                if waiting == 0 {
                    q.push(ready + restart, Ev::Resume { gen });
                }
                state = State::Down {
                    since: t,
                    ready,
                    waiting,
                    restart,
                    wait_until: if waiting == 0 { ready } else { f64::INFINITY },
                    unsaved: None,
                };
            }
            Ev::Planned => {
                let dt = next_exp(&mut rng, job.planned_per_s);
                q.push(t + dt, Ev::Planned);
                if t >= horizon_t {
                    continue;
                }
                if let State::Training { since, w0, c0 } = state {
                    let (w, e) = close(&mut st, since, t);
                    // Restorable should the stop's own checkpoint not get written.
                    let n1 = cyc.restorable(e, cyc.lag);
                    let first = (w0 + cyc.tau * n1 as f64, c0 + n1);
                    let storage = match cyc.storage_point(c0, e) {
                        _ if cyc.persist.is_none() => first,
                        Some(i) if w0 + cyc.tau * i as f64 > w_storage => {
                            (w0 + cyc.tau * i as f64, c0 + i)
                        }
                        _ => (w_storage, c_storage),
                    };
                    st.planned += 1;
                    st.work_s = w0 + w;
                    // The stop's checkpoint is not one of the periodic ones: the count goes
                    // on from the periodic checkpoints completed before it.
                    c_work = c0 + (e / cyc.period).floor() as u64;
                    (w_storage, c_storage) = (st.work_s, c_work);
                    // A full synchronous checkpoint to storage, then the stop.
                    st.stall_s += policy.planned_stall_s;
                    st.checkpoints += 1.0;
                    gen += 1;
                    let ready = t + policy.planned_stall_s + job.planned_downtime_s;
                    let restart = job.restart_s + policy.restore_storage_s;
                    q.push(ready + restart, Ev::Resume { gen });
                    // The checkpoint stall is counted as a stall, not as down time.
                    state = State::Down {
                        since: t + policy.planned_stall_s,
                        ready,
                        waiting: 0,
                        restart,
                        wait_until: ready,
                        unsaved: Some((first, storage)),
                    };
                }
            }
            Ev::RepairDomain { since } => {
                st.repair_accelerator_s += job.domain_size as f64 * (t - since);
                domains_out -= 1;
                match &mut state {
                    State::Down {
                        ready,
                        waiting,
                        restart,
                        wait_until,
                        ..
                    } if *waiting > 0 => {
                        *waiting -= 1;
                        if *waiting == 0 {
                            let go = ready.max(t);
                            *wait_until = go;
                            q.push(go + *restart, Ev::Resume { gen });
                        }
                    }
                    _ => pool += 1,
                }
            }
            Ev::RepairInDomain { slot, n, since } => {
                st.repair_accelerator_s += n as f64 * (t - since);
                let s = &mut in_domain[slot as usize];
                *s = (*s + n).min(job.spares_per_domain);
            }
            Ev::Resume { gen: g } => {
                if g != gen {
                    continue;
                }
                if let State::Down {
                    since,
                    ready,
                    wait_until,
                    ..
                } = state
                {
                    close_down(&mut st, since, ready, wait_until, t);
                }
                gen += 1;
                let w0 = st.work_s;
                state = State::Training {
                    since: t,
                    w0,
                    c0: c_work,
                };
                if target.is_finite() {
                    q.push(t + cyc.time_for(target - w0), Ev::Finish { gen });
                }
            }
        }
    }
    st.projected_wall_s = if !st.capped || !target.is_finite() {
        // A window stopped at the event cap has no run to project.
        st.wall_s
    } else if st.work_s > 0.0 {
        // The run's work over the ETTR so far; in this order, since `wall × target`
        // overflows for a run near f64::MAX seconds that its ETTR does not.
        target * (st.wall_s / st.work_s)
    } else {
        f64::INFINITY
    };
    st
}
