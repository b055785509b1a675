//! Reliability of a training job at 10,000–100,000+ accelerators: failures by component,
//! detection, diagnosis and restart, hot spares and repair, checkpoint policies, and the
//! effective training time ratio (ETTR) and goodput that result.
//!
//! `setup` turns a scenario into a `Setup` (the job's failure populations and rates, the
//! checkpoint costs, the step time from `myriad_train::train`); `analyze` runs a seeded
//! Monte Carlo over replicas of an exact event simulation (`sim`), sweeps the checkpoint
//! interval, and returns a `Report`; `compare_*` answer the designer's comparisons (cluster
//! size, scale-up domain size, checkpoint policy).
//!
//! Model (each rule a choice; docs/reliability.md has the numbers and their sources):
//! - Unexpected failures are independent Poisson processes, one per component, each with a
//!   rate per device-hour times its population in the job: accelerators, nodes, NICs,
//!   scale-out switches and links (the built cluster's, in the job's share), scale-up
//!   domains, and the job itself (software). Defaults: the Llama 3 405B counts (Table 5,
//!   419 unexpected in 54 days on 16,384 H100) over those populations.
//! - Planned interruptions: a Poisson process per job (default 47 in 54 days). The job
//!   writes a synchronous checkpoint to storage, stops for `downtime_s`, restarts; no work
//!   is lost.
//! - Any unexpected failure stops the whole synchronous job. Down time = detection +
//!   diagnosis + (waiting for a spare) + restart + reading the checkpoint back. Work since
//!   the last restorable checkpoint is lost. A failure during recovery starts it again.
//! - Blast radius: an accelerator, HBM or NIC fault removes one accelerator, a host fault
//!   one node, a domain fault the whole scale-up domain; switch, link, software and unknown
//!   faults remove nothing (the job restarts in place). A scale-up domain cannot run with a
//!   hole (its TP/EP groups span it), so a removal is absorbed by in-domain spares if the
//!   domain has enough, and otherwise the whole domain (8 on HGX, 72 on NVL72, 384 on
//!   CloudMatrix384) leaves the job and a hot spare domain from the pool takes its place;
//!   with none left the job waits for the first repair. Repaired hardware returns after
//!   `repair_hours`.
//! - Checkpoints: every `tau` seconds of training the job stalls for the checkpoint:
//!   synchronous = the write to storage at the sustained bandwidth; asynchronous = a
//!   snapshot to host memory, the storage write behind it (restorable only once written; the
//!   next snapshot waits for it); multi-level = snapshot to host memory copied to a peer in
//!   another domain, every n-th also to storage; a configurable fraction of failures also
//!   loses the memory copy and restarts from storage. Size = parameters × 14 bytes (bf16
//!   weights, fp32 master weights, Adam moments) unless given.
//!
//! Invariants:
//! - Pure: no IO. Deterministic for a seed: replica `i` uses ChaCha8 stream `i` of the seed,
//!   replicas run in parallel (rayon) and are reduced in index order, so the result does not
//!   depend on the thread count.
//! - Per replica, wall time = kept work + lost work + checkpoint stalls + down time.

pub mod output;
pub mod sim;

use myriad_catalog::Catalog;
use myriad_cluster::BuiltCluster;
use myriad_scenario::{
    CheckpointInterval, CheckpointLevels, CheckpointMode, FailureRate, ReliabilitySpec, Scenario,
};
use rayon::prelude::*;
use serde::Serialize;

pub use sim::{replica, Horizon, ReplicaStats};

/// The reference run the defaults come from: Llama 3 405B pre-training (Llama Team, "The
/// Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4 and Table 5).
pub mod llama3 {
    /// Days observed.
    pub const DAYS: f64 = 54.0;
    pub const HOURS: f64 = DAYS * 24.0;
    /// GPUs of the job.
    pub const GPUS: f64 = 16_384.0;
    /// Servers of 8 GPUs.
    pub const NODES: f64 = 2_048.0;
    /// One 400G RoCE NIC per GPU.
    pub const NICS: f64 = 16_384.0;
    /// Scale-out switches and links of a 16,384-H100 RoCE 400G fat-tree as built by
    /// `myriad-cluster` (512 leaf + 512 spine + 256 core switches; 16,384 + 16,384 + 16,384
    /// links); a test keeps this equal to the builder's count.
    pub const SWITCHES: f64 = 1_280.0;
    pub const LINKS: f64 = 49_152.0;
    /// Table 5 counts grouped by component (sum 419).
    /// Faulty GPU 148 + GPU SRAM 19 + GPU system processor 17 + silent data corruption 6 +
    /// GPU thermal interface and sensor 6.
    pub const ACCELERATOR: f64 = 196.0;
    /// GPU HBM3 memory.
    pub const HBM: f64 = 72.0;
    /// Host maintenance (unplanned) 32 + SSD 3 + power supply 3 + server chassis 2 + IO
    /// expansion board 2 + CPU 2 + system memory 2.
    pub const HOST: f64 = 46.0;
    pub const NIC: f64 = 7.0;
    /// Network switch/cable.
    pub const NETWORK: f64 = 35.0;
    /// Software bug 54 + dependency 2.
    pub const SOFTWARE: f64 = 56.0;
    /// NCCL watchdog timeouts (cause unknown).
    pub const UNKNOWN: f64 = 7.0;
    pub const UNEXPECTED: f64 = 419.0;
    pub const PLANNED: f64 = 47.0;
}

/// Default recovery and checkpoint constants (docs/reliability.md).
pub mod defaults {
    pub const DETECT_S: f64 = 60.0;
    pub const DIAGNOSE_S: f64 = 120.0;
    pub const RESTART_S: f64 = 300.0;
    pub const PLANNED_DOWNTIME_S: f64 = 300.0;
    pub const REPAIR_HOURS: f64 = 24.0;
    pub const BYTES_PER_PARAM: f64 = 14.0;
    pub const SNAPSHOT_GBPS: f64 = 25.0;
    pub const OVERHEAD_S: f64 = 0.5;
    pub const STORAGE_EVERY: u32 = 10;
    pub const MEMORY_LOST_FRACTION: f64 = 0.1;
    pub const SUSTAINED_TBPS: f64 = 2.0;
    pub const PEAK_TBPS: f64 = 7.0;
    pub const REPLICAS: u32 = 1000;
    pub const SEED: u64 = 1;
}

/// The most Monte Carlo replicas one analysis runs: every replica's result is held until
/// the reduction (about 140 bytes each, and each comparison row runs as many again), and a
/// million already puts the 95% bands within a tenth of a percent.
pub const MAX_REPLICAS: u32 = 1_000_000;

/// Failure components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    Accelerator,
    Hbm,
    Host,
    Nic,
    Switch,
    Link,
    Software,
    Unknown,
    Domain,
}

pub const N_COMPONENTS: usize = 9;

impl Component {
    pub const ALL: [Component; N_COMPONENTS] = [
        Component::Accelerator,
        Component::Hbm,
        Component::Host,
        Component::Nic,
        Component::Switch,
        Component::Link,
        Component::Software,
        Component::Unknown,
        Component::Domain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::Accelerator => "accelerator",
            Component::Hbm => "hbm",
            Component::Host => "host",
            Component::Nic => "nic",
            Component::Switch => "switch",
            Component::Link => "link",
            Component::Software => "software",
            Component::Unknown => "unknown",
            Component::Domain => "domain",
        }
    }

    /// What one device of the population is.
    pub fn population(self) -> &'static str {
        match self {
            Component::Accelerator | Component::Hbm | Component::Unknown => "accelerator",
            Component::Host => "node",
            Component::Nic => "NIC",
            Component::Switch => "switch",
            Component::Link => "link",
            Component::Software => "job",
            Component::Domain => "scale-up domain",
        }
    }

    /// The default rate per device-hour, from the Llama 3 counts.
    pub fn default_per_hour(self) -> f64 {
        use llama3::*;
        let network_elements = SWITCHES + LINKS;
        match self {
            Component::Accelerator => ACCELERATOR / (GPUS * HOURS),
            Component::Hbm => HBM / (GPUS * HOURS),
            Component::Unknown => UNKNOWN / (GPUS * HOURS),
            Component::Host => HOST / (NODES * HOURS),
            Component::Nic => NIC / (NICS * HOURS),
            Component::Switch | Component::Link => NETWORK / (network_elements * HOURS),
            Component::Software => SOFTWARE / HOURS,
            Component::Domain => 0.0,
        }
    }

    fn blast(self, accelerators_per_node: u32) -> Blast {
        match self {
            Component::Accelerator | Component::Hbm | Component::Nic => Blast::Accelerators(1),
            Component::Host => Blast::Accelerators(accelerators_per_node),
            Component::Domain => Blast::Domain,
            Component::Switch | Component::Link | Component::Software | Component::Unknown => {
                Blast::None
            }
        }
    }
}

/// What a failure removes from the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Blast {
    /// Nothing: the job restarts in place.
    None,
    /// This many accelerators of one scale-up domain.
    Accelerators(u32),
    /// A whole scale-up domain.
    Domain,
}

/// One failure cause of the job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    pub component: Component,
    /// Devices of this component in the job.
    pub population: f64,
    /// Failures per device-hour.
    pub per_hour: f64,
    pub blast: Blast,
}

impl Cause {
    /// Failures per second of the whole job.
    pub fn rate_per_s(&self, scale: f64) -> f64 {
        self.population * self.per_hour * scale / 3600.0
    }
}

/// The job under failures: populations, rates, recovery and spares (policy independent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub accelerators: u64,
    /// Accelerators per scale-up domain.
    pub domain_size: u32,
    /// Accelerators per node (a host fault removes one node).
    pub accelerators_per_node: u32,
    /// Scale-up domains the job occupies.
    pub domains: u64,
    pub causes: Vec<Cause>,
    /// Multiplier on every unexpected rate.
    pub scale: f64,
    pub planned_per_s: f64,
    pub planned_downtime_s: f64,
    pub detect_s: f64,
    pub diagnose_s: f64,
    pub restart_s: f64,
    /// Idle accelerators inside each of the job's domains.
    pub spares_per_domain: u32,
    /// Hot spare domains.
    pub pool_domains: u64,
    pub repair_s: f64,
}

impl Job {
    /// Unexpected failures per second of the job.
    pub fn unexpected_rate_per_s(&self) -> f64 {
        self.causes.iter().map(|c| c.rate_per_s(self.scale)).sum()
    }

    /// Expected job MTBF (unexpected failures), hours.
    pub fn mtbf_hours(&self) -> f64 {
        1.0 / (self.unexpected_rate_per_s() * 3600.0)
    }

    /// Spare accelerators held: in-domain spares plus the pool.
    pub fn spare_accelerators(&self) -> u64 {
        self.domains * self.spares_per_domain as u64 + self.pool_domains * self.domain_size as u64
    }
}

/// Multi-level checkpoints: every `every`-th reaches storage `lag_s` after its stall.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Persist {
    pub every: u32,
    pub lag_s: f64,
    /// Fraction of unexpected failures that also lose the in-memory copy.
    pub lost_fraction: f64,
}

/// A checkpoint policy with its costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Policy {
    /// Seconds of training between checkpoints.
    pub interval_s: f64,
    /// Training stalled per checkpoint.
    pub stall_s: f64,
    /// After the stall, seconds until the checkpoint can be restored (async write, peer copy).
    pub lag_s: f64,
    pub persist: Option<Persist>,
    /// Reading back the first level (storage for single-level, host memory for multi-level).
    pub restore_s: f64,
    /// Reading back from storage.
    pub restore_storage_s: f64,
    /// The synchronous storage checkpoint before a planned stop.
    pub planned_stall_s: f64,
}

impl Policy {
    /// The interval the simulation runs: the requested one, but at least the time until a
    /// checkpoint is restorable (`lag_s`: an asynchronous write must finish before the next
    /// snapshot starts), within [`sim::MAX_INTERVAL_S`].
    pub fn effective_interval_s(&self) -> f64 {
        self.interval_s
            .max(self.lag_s)
            .clamp(1e-9, sim::MAX_INTERVAL_S)
    }
}

/// Checkpoint costs and the policy choices of the scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    pub size_bytes: f64,
    pub bytes_per_accelerator: f64,
    pub mode: &'static str,
    pub levels: &'static str,
    /// The requested interval, `None` for `auto`.
    pub interval_s: Option<f64>,
    /// Writing the whole checkpoint to storage at the sustained bandwidth.
    pub write_s: f64,
    /// Reading it back at the peak bandwidth.
    pub restore_storage_s: f64,
    /// Device-to-host snapshot of one accelerator's share.
    pub snapshot_s: f64,
    /// Copy of one accelerator's share to a peer over the scale-out network.
    pub peer_copy_s: f64,
    pub overhead_s: f64,
    pub storage_every: u32,
    pub memory_lost_fraction: f64,
    pub sustained_tbps: f64,
    pub peak_tbps: f64,
}

impl Checkpoint {
    /// The policy at `interval_s` with this scenario's mode and levels.
    pub fn policy(&self, interval_s: f64) -> Policy {
        self.policy_as(interval_s, self.mode == "async", self.levels != "storage")
    }

    /// The policy at `interval_s` with the given mode and levels.
    pub fn policy_as(&self, interval_s: f64, asynchronous: bool, multi_level: bool) -> Policy {
        let sync_write = self.write_s + self.overhead_s;
        let snapshot = self.snapshot_s + self.overhead_s;
        if multi_level {
            Policy {
                interval_s,
                stall_s: snapshot,
                lag_s: self.peer_copy_s,
                persist: Some(Persist {
                    every: self.storage_every,
                    lag_s: self.write_s,
                    lost_fraction: self.memory_lost_fraction,
                }),
                restore_s: self.snapshot_s,
                restore_storage_s: self.restore_storage_s,
                planned_stall_s: sync_write,
            }
        } else if asynchronous {
            Policy {
                interval_s,
                stall_s: snapshot,
                lag_s: self.write_s,
                persist: None,
                restore_s: self.restore_storage_s,
                restore_storage_s: self.restore_storage_s,
                planned_stall_s: sync_write,
            }
        } else {
            Policy {
                interval_s,
                stall_s: sync_write,
                lag_s: 0.0,
                persist: None,
                restore_s: self.restore_storage_s,
                restore_storage_s: self.restore_storage_s,
                planned_stall_s: sync_write,
            }
        }
    }
}

/// Everything `analyze` needs, resolved from a scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setup {
    pub name: String,
    pub model: String,
    pub accelerator: String,
    pub scale_up: String,
    pub job: Job,
    pub checkpoint: Checkpoint,
    /// Failure-free step time, seconds.
    pub step_time_s: f64,
    pub tokens_per_step: f64,
    /// Training compute of the whole run, seconds (from `training.tokens`).
    pub run_work_s: Option<f64>,
    /// Scale-out switches and links per job accelerator (for size comparisons).
    pub switches_per_accelerator: f64,
    pub links_per_accelerator: f64,
    pub nics_per_accelerator: f64,
    /// Per-device rates as resolved (before `scale`), by component.
    pub rates: Vec<(Component, f64)>,
    pub replicas: u32,
    pub seed: u64,
}

fn rate(r: Option<FailureRate>, c: Component) -> f64 {
    r.map(|r| r.per_hour())
        .unwrap_or_else(|| c.default_per_hour())
}

/// Resolves a scenario (with its `reliability` block, or defaults) into a `Setup`. Errors
/// name the field path.
pub fn setup(s: &Scenario, cat: &Catalog) -> Result<Setup, String> {
    let model = s
        .model
        .as_ref()
        .ok_or(
            "model: missing; `myriad reliability` needs a model block (checkpoint size, step time)",
        )?
        .resolve(cat)
        .map_err(|(p, m)| format!("model.{p}: {m}"))?;
    let cluster = myriad_cluster::build(s, cat).map_err(|e| e.to_string())?;
    let spec = s.training.clone().unwrap_or_default();
    let accelerators = spec.accelerators.unwrap_or(s.cluster.count);
    if accelerators > s.cluster.count {
        return Err(format!(
            "training.accelerators: {accelerators} is more than cluster.count {}",
            s.cluster.count
        ));
    }
    let t =
        myriad_train::train(&spec, &model, &cluster, accelerators).map_err(|e| e.to_string())?;
    let step = t.estimate.step_time_s;
    let tokens_per_step = t.plan.global_batch as f64 * model.seq_len as f64;
    let run_work_s = spec.tokens.map(|tok| (tok / tokens_per_step).ceil() * step);
    let rel = s.reliability.clone().unwrap_or_default();
    let params = model.params().total;
    from_parts(
        &s.name,
        &model.name,
        &cluster,
        s,
        accelerators,
        params,
        step,
        tokens_per_step,
        run_work_s,
        &rel,
    )
}

#[allow(clippy::too_many_arguments)]
fn from_parts(
    name: &str,
    model: &str,
    cluster: &BuiltCluster,
    s: &Scenario,
    accelerators: u64,
    params: f64,
    step_time_s: f64,
    tokens_per_step: f64,
    run_work_s: Option<f64>,
    rel: &ReliabilitySpec,
) -> Result<Setup, String> {
    let h = &cluster.hierarchy;
    let d = h.accelerators_per_domain;
    let per_domain = rel.spares.per_domain.unwrap_or(0);
    if per_domain >= d {
        return Err(format!(
            "reliability.spares.per_domain: {per_domain} leaves no accelerator for the job in a domain of {d}"
        ));
    }
    let usable = (d - per_domain) as u64;
    let domains = accelerators.div_ceil(usable);
    if domains > h.domains {
        return Err(format!(
            "reliability.spares.per_domain: the job needs {domains} domains of {usable} usable accelerators; the cluster has {}",
            h.domains
        ));
    }
    // In u128: `per_pod` is unbounded and its product with the pods could wrap in u64.
    let pool = match (rel.spares.domains, rel.spares.per_pod) {
        (Some(n), _) => n as u128,
        (None, Some(p)) => {
            let pod = s.cluster.scale_out.island.unwrap_or(accelerators).max(1);
            p as u128 * accelerators.div_ceil(pod) as u128
        }
        (None, None) => (h.domains - domains) as u128,
    };
    // Hot spares are racks of the cluster: more than the cluster holds beyond the job would
    // be hardware missing from its bill of materials (cost, power, racks).
    if pool > (h.domains - domains) as u128 {
        let (field, what) = match (rel.spares.domains, rel.spares.per_pod) {
            (None, Some(p)) => {
                let pod = s.cluster.scale_out.island.unwrap_or(accelerators).max(1);
                let pods = accelerators.div_ceil(pod);
                ("per_pod", format!("{p} per pod x {pods} pods = {pool}"))
            }
            _ => ("domains", pool.to_string()),
        };
        return Err(format!(
            "reliability.spares.{field}: {what} spare domains, but the cluster holds {} beyond the job's {domains} (cluster.count {} = {} domains of {d}): raise cluster.count to hold them",
            h.domains - domains,
            cluster.accelerators,
            h.domains
        ));
    }
    let pool = pool as u64;
    let apn = h.accelerators_per_node;
    let nics_per_acc = cluster.bom.nics as f64 / cluster.accelerators as f64;
    let switches_per_acc = cluster.bom.switches_total as f64 / cluster.accelerators as f64;
    let links_per_acc = cluster.bom.cables as f64 / cluster.accelerators as f64;
    let f = &rel.failures;
    let rates = vec![
        (
            Component::Accelerator,
            rate(f.accelerator, Component::Accelerator),
        ),
        (Component::Hbm, rate(f.hbm, Component::Hbm)),
        (Component::Host, rate(f.host, Component::Host)),
        (Component::Nic, rate(f.nic, Component::Nic)),
        (Component::Switch, rate(f.switch, Component::Switch)),
        (Component::Link, rate(f.link, Component::Link)),
        (Component::Software, rate(f.software, Component::Software)),
        (Component::Unknown, rate(f.unknown, Component::Unknown)),
        (Component::Domain, rate(f.domain, Component::Domain)),
    ];
    let job = job_for(
        accelerators,
        d,
        apn,
        per_domain,
        pool,
        nics_per_acc,
        switches_per_acc,
        links_per_acc,
        &rates,
        rel,
    );
    // Per day: the report counts interruptions a day.
    if !(job.unexpected_rate_per_s() * 86400.0).is_finite() {
        // Rates near f64::MAX times a population overflow: every failure would come at once.
        let bad = job
            .causes
            .iter()
            .find(|c| !(c.rate_per_s(job.scale) * 86400.0).is_finite());
        return Err(match bad {
            Some(c) => format!(
                "reliability.failures.{}: {:e} per {}-hour x {} of them x scale {} is more failures a day than a float holds; give a smaller rate",
                c.component.name(),
                c.per_hour,
                c.component.population(),
                c.population,
                job.scale
            ),
            None => "reliability.failures: the rates add up to more failures a day than a float holds; give smaller rates".into(),
        });
    }
    if !(job.planned_per_s * 86400.0).is_finite() {
        return Err(format!(
            "reliability.planned.rate: {:e} per hour is more planned stops a day than a float holds; give a smaller rate",
            job.planned_per_s * 3600.0
        ));
    }
    let c = &rel.checkpoint;
    if let Some(CheckpointInterval::Seconds(i)) = c.interval_s {
        // A checkpoint is taken between steps: a shorter interval cannot be kept.
        if i < step_time_s {
            // `{}` writes 1e-300 in 300 digits.
            let shown = if i < 1e-3 {
                format!("{i:e}")
            } else {
                format!("{i}")
            };
            return Err(format!(
                "reliability.checkpoint.interval_s: {shown} s is shorter than one training step ({step_time_s:.3} s); a checkpoint is taken between steps"
            ));
        }
    }
    let bytes_per_param = c.bytes_per_param.unwrap_or(defaults::BYTES_PER_PARAM);
    let size = c.size_bytes.unwrap_or(params * bytes_per_param);
    let sustained = rel
        .storage
        .sustained_tbps
        .unwrap_or(defaults::SUSTAINED_TBPS);
    let peak = rel.storage.peak_tbps.unwrap_or(defaults::PEAK_TBPS);
    let per_acc = size / accelerators as f64;
    let snapshot_gbps = c.snapshot_gbps.unwrap_or(defaults::SNAPSHOT_GBPS);
    let checkpoint = Checkpoint {
        size_bytes: size,
        bytes_per_accelerator: per_acc,
        // Multi-level checkpoints stall only for the snapshot: asynchronous.
        mode: match (c.mode, c.levels) {
            (_, Some(CheckpointLevels::MemoryThenStorage)) => "async",
            (Some(CheckpointMode::Async), _) => "async",
            _ => "sync",
        },
        levels: match c.levels.unwrap_or(CheckpointLevels::Storage) {
            CheckpointLevels::Storage => "storage",
            CheckpointLevels::MemoryThenStorage => "memory-then-storage",
        },
        interval_s: match c.interval_s {
            Some(CheckpointInterval::Seconds(s)) => Some(s),
            _ => None,
        },
        write_s: size / (sustained * 1e12),
        restore_storage_s: size / (peak * 1e12),
        snapshot_s: per_acc / (snapshot_gbps * 1e9),
        peer_copy_s: per_acc / (cluster.network.gbps_per_accelerator.max(1e-9) * 1e9),
        overhead_s: c.overhead_s.unwrap_or(defaults::OVERHEAD_S),
        storage_every: c.storage_every.unwrap_or(defaults::STORAGE_EVERY),
        memory_lost_fraction: c
            .memory_lost_fraction
            .unwrap_or(defaults::MEMORY_LOST_FRACTION),
        sustained_tbps: sustained,
        peak_tbps: peak,
    };
    Ok(Setup {
        name: name.to_string(),
        model: model.to_string(),
        accelerator: cluster.accelerator.id.clone(),
        scale_up: cluster.scale_up.id.clone(),
        job,
        checkpoint,
        step_time_s,
        tokens_per_step,
        run_work_s,
        switches_per_accelerator: switches_per_acc,
        links_per_accelerator: links_per_acc,
        nics_per_accelerator: nics_per_acc,
        rates,
        replicas: rel.replicas.unwrap_or(defaults::REPLICAS),
        seed: rel.seed.unwrap_or(defaults::SEED),
    })
}

/// Builds the job's causes from per-device rates and populations.
#[allow(clippy::too_many_arguments)]
fn job_for(
    accelerators: u64,
    domain_size: u32,
    accelerators_per_node: u32,
    spares_per_domain: u32,
    pool_domains: u64,
    nics_per_acc: f64,
    switches_per_acc: f64,
    links_per_acc: f64,
    rates: &[(Component, f64)],
    rel: &ReliabilitySpec,
) -> Job {
    let usable = (domain_size - spares_per_domain) as u64;
    let domains = accelerators.div_ceil(usable);
    let a = accelerators as f64;
    let causes = rates
        .iter()
        .map(|&(c, per_hour)| Cause {
            component: c,
            population: match c {
                Component::Accelerator | Component::Hbm | Component::Unknown => a,
                Component::Host => (a / accelerators_per_node as f64).ceil(),
                Component::Nic => a * nics_per_acc,
                Component::Switch => a * switches_per_acc,
                Component::Link => a * links_per_acc,
                Component::Software => 1.0,
                Component::Domain => domains as f64,
            },
            per_hour,
            blast: c.blast(accelerators_per_node),
        })
        .filter(|c| c.per_hour > 0.0 && c.population > 0.0)
        .collect();
    let planned = rel
        .planned
        .rate
        .map(|r| r.per_hour())
        .unwrap_or(llama3::PLANNED / llama3::HOURS);
    Job {
        accelerators,
        domain_size,
        accelerators_per_node,
        domains,
        causes,
        scale: rel.failures.scale.unwrap_or(1.0),
        planned_per_s: planned / 3600.0,
        planned_downtime_s: rel
            .planned
            .downtime_s
            .unwrap_or(defaults::PLANNED_DOWNTIME_S),
        detect_s: rel.recovery.detect_s.unwrap_or(defaults::DETECT_S),
        diagnose_s: rel.recovery.diagnose_s.unwrap_or(defaults::DIAGNOSE_S),
        restart_s: rel.recovery.restart_s.unwrap_or(defaults::RESTART_S),
        spares_per_domain,
        pool_domains,
        repair_s: rel.spares.repair_hours.unwrap_or(defaults::REPAIR_HOURS) * 3600.0,
    }
}

/// Young's closed form for the checkpoint interval: `sqrt(2 δ M)`, with `δ` the cost of one
/// checkpoint and `M` the mean time between failures (Young 1974; Daly 2006 to first order).
pub fn young_daly(delta_s: f64, mtbf_s: f64) -> f64 {
    (2.0 * delta_s * mtbf_s).sqrt()
}

/// Runs `replicas` replicas in parallel; the result is in replica order.
pub fn monte_carlo(
    job: &Job,
    policy: &Policy,
    horizon: Horizon,
    seed: u64,
    replicas: u32,
) -> Vec<ReplicaStats> {
    (0..replicas as u64)
        .into_par_iter()
        .map(|i| replica(job, policy, horizon, seed, i))
        .collect()
}

/// Mean and the 2.5 and 97.5 percentiles over replicas.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    /// 95% of replicas fall in `[lo, hi]`.
    pub lo: f64,
    pub hi: f64,
}

impl Spread {
    pub fn of(values: impl Iterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.collect();
        if v.is_empty() {
            return Spread {
                mean: 0.0,
                lo: 0.0,
                hi: 0.0,
            };
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.sort_by(f64::total_cmp);
        Spread {
            mean,
            lo: quantile(&v, 0.025),
            hi: quantile(&v, 0.975),
        }
    }
}

/// Linear-interpolated quantile of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let x = q * (sorted.len() - 1) as f64;
    let i = x.floor() as usize;
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] + (sorted[j] - sorted[i]) * (x - i as f64)
}

/// Nearest-rank quantile of sorted values (one of the values).
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

/// Aggregates over replicas.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub replicas: u32,
    pub interval_s: f64,
    pub ettr: Spread,
    /// Days to finish the run (projected for capped replicas) or the window.
    pub wall_days: Spread,
    /// Mean wall-clock days simulated (`wall_days` less the projection of capped replicas).
    pub simulated_days: f64,
    /// Replicas stopped before the end of the run or window
    /// ([`sim::MAX_WALL_FACTOR`], [`sim::MAX_EVENTS`]).
    pub capped: u32,
    pub unexpected: f64,
    pub planned: f64,
    /// Mean unexpected interruptions per component.
    pub by_component: Vec<(Component, f64)>,
    /// Wall time over unexpected interruptions, hours (over all replicas).
    pub job_mtbf_hours: f64,
    pub lost_work_hours: f64,
    /// Mean lost training compute per interruption that sent the job back to a checkpoint
    /// (`ReplicaStats::rollbacks`: every one that struck during training, and one during
    /// recovery that lost the in-memory copy), seconds.
    pub lost_work_per_failure_s: f64,
    pub down_hours: f64,
    pub waiting_for_spares_hours: f64,
    pub checkpoint_stall_hours: f64,
    pub checkpoints: f64,
    pub storage_restores: f64,
    /// Mean accelerators in repair.
    pub accelerators_in_repair: f64,
    /// Spare domains needed never to wait: 50th and 99th percentile over replicas of the
    /// most domains out at once.
    pub spare_domains_needed_p50: f64,
    pub spare_domains_needed_p99: f64,
}

impl Summary {
    pub fn of(runs: &[ReplicaStats], interval_s: f64) -> Summary {
        let n = runs.len().max(1) as f64;
        let mean = |f: &dyn Fn(&ReplicaStats) -> f64| runs.iter().map(f).sum::<f64>() / n;
        let unexpected_total: f64 = runs.iter().map(|r| r.unexpected as f64).sum();
        let wall_total: f64 = runs.iter().map(|r| r.wall_s).sum();
        let struck: f64 = runs.iter().map(|r| r.rollbacks as f64).sum();
        let lost: f64 = runs.iter().map(|r| r.lost_s).sum();
        let mut peaks: Vec<f64> = runs.iter().map(|r| r.peak_domains_out as f64).collect();
        peaks.sort_by(f64::total_cmp);
        Summary {
            replicas: runs.len() as u32,
            interval_s,
            ettr: Spread::of(runs.iter().map(|r| r.ettr())),
            wall_days: Spread::of(runs.iter().map(|r| r.projected_wall_s / 86400.0)),
            simulated_days: wall_total / n / 86400.0,
            capped: runs.iter().filter(|r| r.capped).count() as u32,
            unexpected: unexpected_total / n,
            planned: mean(&|r| r.planned as f64),
            by_component: Component::ALL
                .iter()
                .map(|&c| (c, mean(&|r| r.by_component[c as usize] as f64)))
                .collect(),
            job_mtbf_hours: if unexpected_total > 0.0 {
                wall_total / unexpected_total / 3600.0
            } else {
                f64::INFINITY
            },
            lost_work_hours: lost / n / 3600.0,
            lost_work_per_failure_s: if struck > 0.0 { lost / struck } else { 0.0 },
            down_hours: mean(&|r| r.down_s) / 3600.0,
            waiting_for_spares_hours: mean(&|r| r.wait_s) / 3600.0,
            checkpoint_stall_hours: mean(&|r| r.stall_s) / 3600.0,
            checkpoints: mean(&|r| r.checkpoints),
            storage_restores: mean(&|r| r.storage_restores as f64),
            accelerators_in_repair: if wall_total > 0.0 {
                runs.iter().map(|r| r.repair_accelerator_s).sum::<f64>() / wall_total
            } else {
                0.0
            },
            spare_domains_needed_p50: nearest_rank(&peaks, 0.5),
            spare_domains_needed_p99: nearest_rank(&peaks, 0.99),
        }
    }
}

/// One point of the checkpoint-interval sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SweepPoint {
    pub interval_s: f64,
    pub ettr: f64,
}

/// Simulated ETTR at intervals `centre × 2^(k/4)`, k = -8..=8 (common random numbers: every
/// interval sees the same failures), and the optimum: the vertex of a least-squares parabola
/// in log(interval) through the best point and its two neighbours on each side.
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    job: &Job,
    ckpt: &Checkpoint,
    horizon: Horizon,
    seed: u64,
    replicas: u32,
    centre_s: f64,
    asynchronous: bool,
    multi_level: bool,
) -> (Vec<SweepPoint>, f64) {
    // Fitted over the requested intervals (distinct); reported as the intervals run.
    let points: Vec<SweepPoint> = (-8..=8)
        .map(|k| {
            let tau = centre_s * 2f64.powf(k as f64 / 4.0);
            let p = ckpt.policy_as(tau, asynchronous, multi_level);
            let runs = monte_carlo(job, &p, horizon, seed, replicas);
            let ettr = runs.iter().map(|r| r.ettr()).sum::<f64>() / runs.len().max(1) as f64;
            SweepPoint {
                interval_s: tau,
                ettr,
            }
        })
        .collect();
    let run = |tau: f64| {
        ckpt.policy_as(tau, asynchronous, multi_level)
            .effective_interval_s()
    };
    let best = points
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.ettr.total_cmp(&b.1.ettr).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let lo = best.saturating_sub(2);
    let hi = (best + 2).min(points.len() - 1);
    let opt = parabola_vertex(&points[lo..=hi]).unwrap_or(points[best].interval_s);
    let points = points
        .into_iter()
        .map(|q| SweepPoint {
            interval_s: run(q.interval_s),
            ettr: q.ettr,
        })
        .collect();
    (points, run(opt))
}

/// Vertex of the least-squares parabola of ETTR over ln(interval); `None` unless it is a
/// maximum inside the points' range.
fn parabola_vertex(p: &[SweepPoint]) -> Option<f64> {
    if p.len() < 3 {
        return None;
    }
    let xs: Vec<f64> = p.iter().map(|q| q.interval_s.ln()).collect();
    let x0 = xs.iter().sum::<f64>() / xs.len() as f64;
    // Normal equations for y = a + b x + c x^2 on centred x.
    let mut s = [0.0f64; 5];
    let mut t = [0.0f64; 3];
    for (x, q) in xs.iter().zip(p) {
        let x = x - x0;
        let mut xp = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += xp;
            if k < 3 {
                t[k] += xp * q.ettr;
            }
            xp *= x;
        }
    }
    let m = [[s[0], s[1], s[2]], [s[1], s[2], s[3]], [s[2], s[3], s[4]]];
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let det = det3(m);
    if det.abs() < 1e-300 {
        return None;
    }
    let col = |i: usize| {
        let mut mm = m;
        for r in 0..3 {
            mm[r][i] = t[r];
        }
        det3(mm) / det
    };
    let (b, c) = (col(1), col(2));
    if c >= 0.0 {
        return None;
    }
    let xv = -b / (2.0 * c);
    let (lo, hi) = (xs[0] - x0, xs[xs.len() - 1] - x0);
    if xv < lo || xv > hi {
        return None;
    }
    Some((xv + x0).exp())
}

/// Options of an analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Simulate a fixed window of this many days instead of the whole run.
    pub days: Option<f64>,
    pub replicas: u32,
    pub seed: u64,
}

impl Setup {
    /// The horizon: the window, or the whole run.
    pub fn horizon(&self, days: Option<f64>) -> Result<Horizon, String> {
        match (days, self.run_work_s) {
            (Some(d), _) => {
                if !(d > 0.0 && d.is_finite()) {
                    return Err(format!("days: {d} is not a positive number of days"));
                }
                if !(d * 86400.0).is_finite() {
                    return Err(format!(
                        "days: {d:e} is more than the {:.3e} days that can be simulated (in seconds)",
                        f64::MAX / 86400.0
                    ));
                }
                Ok(Horizon::Window(d * 86400.0))
            }
            (None, Some(w)) => Ok(Horizon::Work(w)),
            (None, None) => Err(
                "training.tokens: missing; give it (to simulate the whole run) or a window of days (`--days N`, Python `days=N`)".into(),
            ),
        }
    }

    /// Young/Daly's interval for this scenario's policy (at least the async write time).
    pub fn young_daly_s(&self) -> f64 {
        let p = self.checkpoint.policy(1.0);
        young_daly(p.stall_s, self.job.mtbf_hours() * 3600.0).min(sim::MAX_INTERVAL_S)
    }
}

/// What `myriad reliability` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub horizon: &'static str,
    pub days: Option<f64>,
    pub replicas: u32,
    pub seed: u64,
    /// The interval the main simulation used.
    pub interval_s: f64,
    pub young_daly_interval_s: f64,
    pub optimal_checkpoint_interval_s: f64,
    pub sweep: Vec<SweepPoint>,
    pub summary: Summary,
    /// Expected unexpected interruptions per day from the rates.
    pub expected_per_day: Vec<(Component, f64)>,
    pub expected_planned_per_day: f64,
    pub policy: Policy,
    /// Failure-free time to train, days.
    pub failure_free_days: Option<f64>,
    /// Time to train under failures, days (mean and 95% of replicas); for a window, the
    /// failure-free time over the mean ETTR.
    pub time_to_train_days: Option<Spread>,
    /// Useful tokens per second (mean and 95% of replicas).
    pub goodput_tokens_per_s: Spread,
}

/// Replicas the interval sweep uses per point.
pub fn sweep_replicas(replicas: u32) -> u32 {
    replicas.clamp(1, 400)
}

/// The full analysis: sweep, main simulation, summary.
pub fn analyze(s: &Setup, o: &Options) -> Result<Report, String> {
    let horizon = s.horizon(o.days)?;
    let ck = &s.checkpoint;
    let asy = ck.mode == "async";
    let multi = ck.levels != "storage";
    let yd = s.young_daly_s();
    let centre = if asy && !multi {
        yd.max(ck.write_s)
    } else {
        yd
    }
    .max(1.0);
    let (points, opt) = sweep(
        &s.job,
        ck,
        horizon,
        o.seed,
        sweep_replicas(o.replicas),
        centre,
        asy,
        multi,
    );
    let policy = ck.policy(ck.interval_s.unwrap_or(opt));
    let interval = policy.effective_interval_s();
    let runs = monte_carlo(&s.job, &policy, horizon, o.seed, o.replicas);
    let summary = Summary::of(&runs, interval);
    let tokens_per_work_s = s.tokens_per_step / s.step_time_s;
    let goodput = Spread::of(runs.iter().map(|r| r.ettr() * tokens_per_work_s));
    let failure_free_days = s.run_work_s.map(|w| w / 86400.0);
    let time_to_train_days = match horizon {
        Horizon::Work(_) => Some(summary.wall_days),
        Horizon::Window(_) => failure_free_days.map(|d| Spread {
            mean: d / summary.ettr.mean,
            lo: d / summary.ettr.hi,
            hi: d / summary.ettr.lo,
        }),
    };
    Ok(Report {
        horizon: match horizon {
            Horizon::Work(_) => "run",
            Horizon::Window(_) => "window",
        },
        days: o.days,
        replicas: o.replicas,
        seed: o.seed,
        interval_s: interval,
        young_daly_interval_s: yd,
        optimal_checkpoint_interval_s: opt,
        sweep: points,
        expected_per_day: Component::ALL
            .iter()
            .map(|&c| {
                let r: f64 = s
                    .job
                    .causes
                    .iter()
                    .filter(|x| x.component == c)
                    .map(|x| x.rate_per_s(s.job.scale))
                    .sum();
                (c, r * 86400.0 + 0.0)
            })
            .collect(),
        expected_planned_per_day: s.job.planned_per_s * 86400.0,
        policy,
        summary,
        failure_free_days,
        time_to_train_days,
        goodput_tokens_per_s: goodput,
    })
}

/// One row of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    pub label: String,
    pub accelerators: u64,
    pub domain_size: u32,
    pub spare_accelerators: u64,
    pub interval_s: f64,
    pub stall_s: f64,
    pub interruptions_per_day: f64,
    /// Infinite without unexpected failures; JSON `null` then (`output::finite_or_null`).
    #[serde(serialize_with = "output::finite_or_null")]
    pub job_mtbf_hours: f64,
    pub ettr: Spread,
    pub lost_work_per_failure_s: f64,
    pub waiting_for_spares_hours: f64,
    pub accelerators_in_repair: f64,
    pub spare_domains_needed_p99: f64,
    /// The same in accelerators.
    pub spare_accelerators_needed_p99: f64,
    pub checkpoint_stall_hours_per_day: f64,
    /// Time to train, days: for the size comparison, assuming the failure-free time scales
    /// inversely with the accelerators.
    pub time_to_train_days: Option<f64>,
}

#[allow(clippy::too_many_arguments)]
fn row(
    label: String,
    job: &Job,
    ckpt: &Checkpoint,
    interval: Option<f64>,
    asy: bool,
    multi: bool,
    horizon: Horizon,
    o: &Options,
    failure_free_days: Option<f64>,
) -> CompareRow {
    let yd = young_daly(
        ckpt.policy_as(1.0, asy, multi).stall_s,
        job.mtbf_hours() * 3600.0,
    )
    .clamp(1.0, sim::MAX_INTERVAL_S);
    let tau = match interval {
        Some(t) => t,
        None => {
            sweep(
                job,
                ckpt,
                horizon,
                o.seed,
                sweep_replicas(o.replicas).min(100),
                yd,
                asy,
                multi,
            )
            .1
        }
    };
    let p = ckpt.policy_as(tau, asy, multi);
    let tau = p.effective_interval_s();
    let runs = monte_carlo(job, &p, horizon, o.seed, o.replicas.min(400));
    let sm = Summary::of(&runs, tau);
    let sim_days = sm.simulated_days;
    CompareRow {
        label,
        accelerators: job.accelerators,
        domain_size: job.domain_size,
        spare_accelerators: job.spare_accelerators(),
        interval_s: tau,
        stall_s: p.stall_s,
        interruptions_per_day: (sm.unexpected + sm.planned) / sim_days,
        job_mtbf_hours: sm.job_mtbf_hours,
        ettr: sm.ettr,
        lost_work_per_failure_s: sm.lost_work_per_failure_s,
        waiting_for_spares_hours: sm.waiting_for_spares_hours,
        accelerators_in_repair: sm.accelerators_in_repair,
        spare_domains_needed_p99: sm.spare_domains_needed_p99,
        spare_accelerators_needed_p99: sm.spare_domains_needed_p99 * job.domain_size as f64,
        checkpoint_stall_hours_per_day: sm.checkpoint_stall_hours / sim_days,
        time_to_train_days: match horizon {
            Horizon::Work(_) => Some(sm.wall_days.mean),
            Horizon::Window(_) => failure_free_days.map(|d| d / sm.ettr.mean),
        },
    }
}

/// The window comparisons of size and domain simulate: `--days`, or 30 days.
pub fn compare_window(o: &Options) -> Horizon {
    Horizon::Window(o.days.unwrap_or(30.0) * 86400.0)
}

/// ETTR versus cluster size (the job is the whole size; spares in the scenario's proportion;
/// switches, links and NICs per accelerator as in the scenario's cluster).
pub fn compare_size(s: &Setup, o: &Options, sizes: &[u64]) -> Vec<CompareRow> {
    let horizon = compare_window(o);
    let rel = ReliabilitySpec::default();
    let base = &s.job;
    let spare_ratio = base.pool_domains as f64 / base.domains as f64;
    sizes
        .iter()
        .map(|&n| {
            let usable = (base.domain_size - base.spares_per_domain) as u64;
            let n = n.div_ceil(usable) * usable;
            let domains = n / usable;
            let mut job = job_for(
                n,
                base.domain_size,
                base.accelerators_per_node,
                base.spares_per_domain,
                (spare_ratio * domains as f64).round() as u64,
                s.nics_per_accelerator,
                s.switches_per_accelerator,
                s.links_per_accelerator,
                &s.rates,
                &rel,
            );
            copy_times(&mut job, base);
            let mut ck = s.checkpoint.clone();
            ck.bytes_per_accelerator = ck.size_bytes / n as f64;
            ck.snapshot_s *= s.job.accelerators as f64 / n as f64;
            ck.peer_copy_s *= s.job.accelerators as f64 / n as f64;
            let ff = s
                .run_work_s
                .map(|w| w / 86400.0 * s.job.accelerators as f64 / n as f64);
            row(
                format!("{n}"),
                &job,
                &ck,
                s.checkpoint.interval_s,
                ck.mode == "async",
                ck.levels != "storage",
                horizon,
                o,
                ff,
            )
        })
        .collect()
}

fn copy_times(job: &mut Job, base: &Job) {
    job.scale = base.scale;
    job.planned_per_s = base.planned_per_s;
    job.planned_downtime_s = base.planned_downtime_s;
    job.detect_s = base.detect_s;
    job.diagnose_s = base.diagnose_s;
    job.restart_s = base.restart_s;
    job.repair_s = base.repair_s;
}

/// The scale-up systems of the domain comparison: (label, catalog id, in-domain spares).
pub const DOMAIN_VARIANTS: [(&str, &str, u32); 5] = [
    ("HGX 8-GPU server", "hgx-h100", 0),
    ("NVL72", "gb200-nvl72", 0),
    ("NVL72, 64 + 8 spares", "gb200-nvl72", 8),
    ("CloudMatrix384", "cloudmatrix384", 0),
    ("CloudMatrix384, 352 + 32 spares", "cloudmatrix384", 32),
];

/// ETTR versus scale-up domain size: the same job, rates and checkpoints, and the same
/// budget of spare accelerators as the scenario (in-domain spares first, the rest as whole
/// pool domains, rounded down); only the domain (its size, node size and NICs from the
/// catalog) changes.
pub fn compare_domain(s: &Setup, o: &Options, cat: &Catalog) -> Vec<CompareRow> {
    let horizon = compare_window(o);
    let rel = ReliabilitySpec::default();
    let base = &s.job;
    let budget = base.spare_accelerators();
    DOMAIN_VARIANTS
        .iter()
        .filter_map(|&(label, id, spares)| {
            let su = cat.scale_up_system(id).ok()?;
            let d = su.accelerators_per_domain;
            let apn = su.accelerators_per_node;
            let in_domain = base.accelerators.div_ceil((d - spares) as u64) * spares as u64;
            let mut job = job_for(
                base.accelerators,
                d,
                apn,
                spares,
                budget.saturating_sub(in_domain) / d as u64,
                su.nics_per_node as f64 / apn as f64,
                s.switches_per_accelerator,
                s.links_per_accelerator,
                &s.rates,
                &rel,
            );
            copy_times(&mut job, base);
            let ff = s.run_work_s.map(|w| w / 86400.0);
            Some(row(
                format!("{label} ({d})"),
                &job,
                &s.checkpoint,
                s.checkpoint.interval_s,
                s.checkpoint.mode == "async",
                s.checkpoint.levels != "storage",
                horizon,
                o,
                ff,
            ))
        })
        .collect()
}

/// ETTR versus checkpoint policy on the scenario's job: synchronous to storage at the
/// simulated optimum and at fixed intervals, asynchronous, and multi-level.
pub fn compare_checkpoint(s: &Setup, o: &Options) -> Result<Vec<CompareRow>, String> {
    let horizon = s.horizon(o.days)?;
    let ff = s.run_work_s.map(|w| w / 86400.0);
    let variants: [(&str, Option<f64>, bool, bool); 7] = [
        ("sync, storage, optimal interval", None, false, false),
        ("sync, storage, every 10 min", Some(600.0), false, false),
        ("sync, storage, every 30 min", Some(1800.0), false, false),
        ("sync, storage, every 2 h", Some(7200.0), false, false),
        ("async, storage, optimal interval", None, true, false),
        ("memory then storage, optimal interval", None, true, true),
        ("memory then storage, every 10 min", Some(600.0), true, true),
    ];
    Ok(variants
        .iter()
        .map(|&(label, interval, asy, multi)| {
            row(
                label.to_string(),
                &s.job,
                &s.checkpoint,
                interval,
                asy,
                multi,
                horizon,
                o,
                ff,
            )
        })
        .collect())
}
