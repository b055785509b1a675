//! Multi-job cluster scheduling: a seeded discrete-event simulation of many jobs on the
//! cluster hierarchy (nodes in scale-up domains in pods in regions), policies side by side.
//!
//! Invariants:
//! - Pure: no IO, no printing. The CLI reads files (scenario, openb CSV text) and passes data
//!   in; `openb::parse_*` take text.
//! - Deterministic: the workload is drawn from one ChaCha8 stream of the seed; the event
//!   queue is a binary heap keyed by `(time, sequence number)`, so equal times break ties
//!   in insertion order; queues and running sets are ordered sets. Same input, same report.
//! - Gang: a job starts with all of its accelerators or not at all; multi-node jobs take
//!   whole free nodes (`ceil(gpus / gpus_per_node)` of them).
//! - Capacity: a GPU never has more than 1,000 milli-GPU allocated; CPU and memory of a node
//!   are never over-committed; the per-level segment counts always equal the sums of the
//!   per-GPU state (`cluster::State::check`, run after every event with `Options::check`).
//! - Work conservation: after every scheduling pass, the job at the head of a queue does not
//!   fit in the free capacity (checked with `Options::check`).
//! - Placement reads aggregated counts (region -> pod -> domain -> node histograms), so a
//!   placement costs the fan-out of the levels, not a scan of the cluster (heterogeneous
//!   clusters and FGD scan the region's nodes; openb has 1,523).
//!
//! Model choices are documented in `docs/scheduling.md`: runtimes are known to the
//! scheduler (backfill uses the true duration), a preempted job resumes from its last
//! state after `restart_s`, a job moved to another region first stages `data_gb` over the
//! inter-region link (its allocation held meanwhile; wall-clock seconds, not scaled by the
//! placement's speed), a job that could never run is rejected with a [`RejectReason`], and
//! inference services and the arrivals' daily cycle follow each region's local time
//! (`Topology::utc_offset_s`).

pub mod cluster;
pub mod frag;
pub mod openb;
pub mod setup;
mod sim;
pub mod workload;

pub use cluster::{Mode, Node, Piece, State, Topology};
pub use frag::Fgd;
pub use sim::{
    simulate, ClassStats, Options, Rejection, Report, Sample, ServiceStats, Stat, MAX_BINS,
    MAX_REJECTIONS_LISTED,
};

use serde::Serialize;

/// What a job is, for reporting and for day-night sharing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Training,
    Inference,
    Dev,
}

/// Why a job could never run: even its empty region (the one it was routed to) holds no
/// place for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectReason {
    /// No accelerator of its allowed types in the region.
    GpuType,
    /// More accelerators (of its allowed types) than the region has.
    TooLarge,
    /// Larger than its required place: one scale-up domain (`constraint: domain`, or one
    /// segment), or one pod.
    Constraint,
    /// More CPU or memory than any node of the region with room for its accelerators.
    CpuMemory,
    /// None of the above, yet no place (e.g. a gang needing more whole nodes of a size).
    NoPlace,
}

impl RejectReason {
    /// What the reason means, for tables.
    pub fn describe(self) -> &'static str {
        match self {
            RejectReason::GpuType => "no accelerator of its allowed types in its region",
            RejectReason::TooLarge => "more accelerators than its region has",
            RejectReason::Constraint => "larger than its required scale-up domain, segment or pod",
            RejectReason::CpuMemory => "more CPU or memory than any node",
            RejectReason::NoPlace => "no place even in the empty region",
        }
    }
}

/// Where a job's accelerators must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Constraint {
    /// Anywhere (placement modes may still prefer compact places: Kueue "preferred").
    None,
    /// Inside one scale-up domain (Kueue required, Slurm topology/block with one block).
    Domain,
    /// Inside one pod.
    Pod,
    /// Segments of this many accelerators, each inside one scale-up domain (Slurm
    /// topology/block `--segment`, e.g. 72 on NVL72).
    Segment(u32),
}

/// One job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: u32,
    /// Index into the workload's class names.
    pub class: u16,
    pub kind: Kind,
    /// Seconds.
    pub arrival: f64,
    /// Seconds of work once started.
    pub duration: f64,
    /// GPUs (0: a CPU-only task).
    pub gpus: u32,
    /// Share of each GPU in milli-GPU (1000 = whole GPUs; below 1000 only with `gpus == 1`).
    pub milli: u16,
    pub cpu_milli: u32,
    pub memory_mib: u32,
    pub constraint: Constraint,
    /// Allowed GPU types, bits over `Topology::gpu_types`; 0 = any.
    pub gpu_types: u64,
    /// Higher runs first under the priority policy and may preempt lower.
    pub priority: i32,
    /// Home region (where its data is).
    pub region: u16,
    /// Data to move when run outside its home region, GB.
    pub data_gb: f64,
    /// Share of the run time (placed inside one pod) spent communicating across nodes; that
    /// share scales with the bandwidth of the smallest level holding the job (0: placement
    /// does not change speed).
    pub comm_share: f64,
}

impl Job {
    /// A whole-GPU job with defaults for everything else.
    pub fn new(id: u32, arrival: f64, duration: f64, gpus: u32) -> Job {
        Job {
            id,
            class: 0,
            kind: Kind::Training,
            arrival,
            duration,
            gpus,
            milli: 1000,
            cpu_milli: 0,
            memory_mib: 0,
            constraint: Constraint::None,
            gpu_types: 0,
            priority: 0,
            region: 0,
            data_gb: 0.0,
            comm_share: 0.0,
        }
    }
    /// Whether the job may run on GPUs of type `gpu_type` (an index into
    /// `Topology::gpu_types`): every type when `gpu_types` is 0.
    pub fn allows_type(&self, gpu_type: u8) -> bool {
        self.gpu_types == 0 || (gpu_type < 64 && self.gpu_types >> gpu_type & 1 == 1)
    }
    /// Milli-GPU the job holds.
    pub fn milli_total(&self) -> u64 {
        self.gpus as u64 * self.milli as u64
    }
}

/// Where a job runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub pieces: Vec<Piece>,
    /// The node that carries the job's CPU and memory request.
    pub cpu_node: u32,
}

/// Queue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueOrder {
    Fifo,
    /// Shortest job first (by duration).
    Sjf,
    /// Highest priority first, FIFO within a priority.
    Priority,
}

/// A scheduling policy: queue order, backfill, preemption, placement, sharing, regions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    pub name: String,
    pub queue: QueueOrder,
    /// EASY backfill: a reservation for the head job, later jobs may start if they do not
    /// delay it.
    pub backfill: bool,
    /// The head job may preempt running jobs of lower priority.
    pub preemption: bool,
    pub placement: Mode,
    /// Inference services follow their daily curve (and with preemption take capacity back
    /// from training by day); otherwise they hold their peak all day.
    pub day_night: bool,
    /// Jobs go to the region with the lowest expected wait plus data-transfer time.
    pub cross_region: bool,
}

/// Named policies.
pub const PRESETS: &[&str] = &[
    "fifo",
    "backfill",
    "sjf",
    "priority",
    "best-fit",
    "topology",
    "fgd",
    "day-night",
    "cross-region",
];

/// A named policy, or `None`.
pub fn preset(name: &str) -> Option<Policy> {
    let p = |queue, backfill, preemption, placement, day_night, cross_region| Policy {
        name: name.to_string(),
        queue,
        backfill,
        preemption,
        placement,
        day_night,
        cross_region,
    };
    use Mode::*;
    use QueueOrder::*;
    Some(match name {
        "fifo" => p(Fifo, false, false, FirstFit, false, false),
        "backfill" => p(Fifo, true, false, FirstFit, false, false),
        "sjf" => p(Sjf, true, false, FirstFit, false, false),
        "priority" => p(Priority, true, true, FirstFit, false, false),
        "best-fit" => p(Fifo, true, false, BestFit, false, false),
        "topology" => p(Fifo, true, false, Topology, false, false),
        "fgd" => p(Fifo, true, false, Fgd, false, false),
        "day-night" => p(Priority, true, true, Topology, true, false),
        "cross-region" => p(Fifo, true, false, Topology, false, true),
        _ => return None,
    })
}

/// An inference service: replicas of `replica_gpus` whose number follows a daily curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    pub class: u16,
    pub replica_gpus: u32,
    pub peak_replicas: u32,
    /// Share of the peak needed in each hour of the day (0..=1).
    pub curve: [f64; 24],
    pub priority: i32,
    pub region: u16,
}

impl Service {
    /// Replicas needed at local time `t` (seconds; the hour of the curve is `t`'s hour of
    /// the day: pass UTC time plus the region's offset, `Topology::utc_offset_s`).
    pub fn demand(&self, t: f64) -> u32 {
        let h = ((t / 3600.0).floor() as i64).rem_euclid(24) as usize;
        (self.peak_replicas as f64 * self.curve[h]).ceil() as u32
    }
}

/// Jobs, their class names and the inference services.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workload {
    pub jobs: Vec<Job>,
    pub classes: Vec<String>,
    pub services: Vec<Service>,
}
