//! The `scheduling` block (`myriad sched`): the workload (generated, or the Alibaba openb
//! trace), inference services with a daily curve, regions, and the policies to compare.
//! Every key is optional; defaults are given on each field and in docs/scheduling.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `scheduling` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulingSpec {
    /// Random seed of the generated workload (default 1; `--seed` overrides).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Policies compared side by side (default: every preset: fifo, backfill, sjf,
    /// priority, best-fit, topology, fgd, day-night, cross-region; `--policies` overrides).
    #[serde(default)]
    pub policies: Vec<PolicySpec>,
    /// Accelerators per pod (default: the cluster's `pod` level, else its island, else the
    /// largest level below a site).
    #[serde(default)]
    pub pod: Option<u64>,
    /// How jobs arrive (default: 1,000 jobs at an offered load of 0.8, no daily cycle).
    #[serde(default)]
    pub arrivals: ArrivalSpec,
    /// Job classes (default: one training class, lognormal sizes of median 16 accelerators
    /// and durations of median 2 h).
    #[serde(default)]
    pub classes: Vec<ClassSpec>,
    /// Inference services whose replica count follows a daily load curve (default: none).
    #[serde(default)]
    pub inference: Vec<ServiceSpec>,
    /// Region names and where jobs' data lives; the regions are the cluster's `sites`
    /// (inter-region bandwidth and latency from `cluster.dci`).
    #[serde(default)]
    pub regions: Option<RegionsSpec>,
    /// Replay a production trace instead of generating jobs.
    #[serde(default)]
    pub trace: Option<TraceSpec>,
    /// Most queued jobs examined for backfill behind the head (default 500, as Slurm's
    /// `bf_max_job_test`).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub backfill_depth: Option<u32>,
    /// Seconds a preempted job loses when it resumes (checkpoint reload; default 300).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub restart_s: Option<f64>,
    /// Width of the allocation time-series bins, hours (default: the span / 100, at least 1).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub sample_h: Option<f64>,
    /// Inference services run this many days (default: to the last arrival, whole days).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub horizon_days: Option<f64>,
    /// Failures of running jobs (default: none). Present, running jobs fail at the Llama 3
    /// hardware rates per accelerator (`myriad reliability`'s defaults) and lose the work
    /// since their last checkpoint.
    #[serde(default)]
    pub failures: Option<FailuresSpec>,
    /// Arrived loads (share of GPU capacity requested) at which the trace load sweep
    /// reports unallocated GPUs (default 0.5, 0.7, 0.8, 0.9, 0.95, 1.0).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "minimum": 0.001, "maximum": 2.0}))]
    pub loads: Vec<f64>,
}

/// Failures of running jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailuresSpec {
    /// Multiplies the per-accelerator failure rate (default 1: the Llama 3 hardware rates,
    /// 1.55e-5 interruptions per accelerator-hour on 8-GPU nodes).
    #[serde(default = "one")]
    #[schemars(range(min = 0.0))]
    pub scale: f64,
    /// Checkpoint interval of every job, hours (default 1); a failure loses the work since
    /// the last checkpoint.
    #[serde(default = "one")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub checkpoint_h: f64,
}

/// Arrival process: Poisson, optionally modulated by a daily cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArrivalSpec {
    /// Jobs to generate (default 1,000).
    #[serde(default = "default_jobs")]
    pub jobs: u64,
    /// Mean arrivals per hour; give this or `load`.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub rate_per_hour: Option<f64>,
    /// Offered load: accelerator-hours requested per hour over the cluster's accelerators
    /// (the rate follows from the class mix; default 0.8 when no rate is given).
    #[serde(default)]
    #[schemars(range(min = 0.001, max = 100.0))]
    pub load: Option<f64>,
    /// Relative amplitude of the daily cycle, 0..1 (default 0: constant rate). The rate is
    /// `mean * (1 + amplitude * cos(2 pi (hour - peak_hour) / 24))`.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub daily_amplitude: f64,
    /// Hour of the day with the most arrivals (default 14), in each job's home region's
    /// local time (`regions.utc_offset_hours`).
    #[serde(default = "default_peak_hour")]
    #[schemars(range(min = 0.0))]
    #[schemars(extend("exclusiveMaximum" = 24))]
    pub peak_hour: f64,
}

fn default_jobs() -> u64 {
    1000
}

/// Most jobs one generated workload takes: 10 million take about 40 s and 4 GB for one
/// policy on `examples/sched-nvl72-100k.yaml` (memory grows with the jobs: 2^31 of them
/// used to abort the process when the job list was allocated).
pub const MAX_JOBS: u64 = 10_000_000;
fn default_peak_hour() -> f64 {
    14.0
}

impl Default for ArrivalSpec {
    fn default() -> Self {
        ArrivalSpec {
            jobs: default_jobs(),
            rate_per_hour: None,
            load: None,
            daily_amplitude: 0.0,
            peak_hour: default_peak_hour(),
        }
    }
}

/// Kind of job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobKindSpec {
    /// Training (gang, long).
    #[default]
    Training,
    /// Inference (reported apart; services are given under `inference`).
    Inference,
    /// Development and small interactive jobs.
    Dev,
}

/// Where a job's accelerators must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConstraintSpec {
    /// Anywhere.
    #[default]
    None,
    /// Inside one scale-up domain.
    Domain,
    /// Inside one pod.
    Pod,
}

/// One class of generated jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Name in reports.
    pub name: String,
    /// training, inference or dev (default training).
    #[serde(default)]
    pub kind: JobKindSpec,
    /// Relative share of arrivals (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 0.0))]
    pub share: f64,
    /// Accelerators per job (rounded up to whole nodes above one node; default fixed 8).
    #[serde(default = "default_size")]
    pub size: DistSpec,
    /// Run time, hours (default lognormal, median 2, sigma 1).
    #[serde(default = "default_duration")]
    pub duration_h: DistSpec,
    /// All-or-nothing start (default true). `false` splits a job into independent one-node
    /// tasks.
    #[serde(default = "yes")]
    pub gang: bool,
    /// none, domain or pod (default none): required placement (Kueue "required").
    #[serde(default)]
    pub constraint: ConstraintSpec,
    /// Segments of this many accelerators, each inside one scale-up domain (Slurm
    /// topology/block `--segment`); job sizes are rounded up to whole segments.
    #[serde(default)]
    pub segment: Option<u32>,
    /// Higher runs first under the priority policies and may preempt lower (default 0).
    #[serde(default)]
    pub priority: i32,
    /// Data staged when the job runs outside its home region, GB (default 0).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub data_gb: f64,
    /// Share of the run time, placed inside one pod, spent communicating across nodes
    /// (default 0). That share runs at the bandwidth of the smallest level holding the job
    /// (the cluster's hierarchy levels): faster inside one scale-up domain, slower across
    /// oversubscribed pods.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub comm_share: f64,
}

fn one() -> f64 {
    1.0
}
fn yes() -> bool {
    true
}
fn default_size() -> DistSpec {
    DistSpec {
        dist: DistKind::Fixed,
        value: Some(8.0),
        ..DistSpec::default()
    }
}
fn default_duration() -> DistSpec {
    DistSpec {
        dist: DistKind::Lognormal,
        median: Some(2.0),
        sigma: Some(1.0),
        ..DistSpec::default()
    }
}

/// A distribution family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DistKind {
    /// Always `value`.
    #[default]
    Fixed,
    /// Uniform between `min` and `max`.
    Uniform,
    /// Exponential with `mean`.
    Exponential,
    /// Lognormal with `median` and `sigma` (of the log).
    Lognormal,
    /// One of `values`, with `weights` (default equal).
    Empirical,
}

/// A distribution; which keys are needed depends on `dist`. `min`/`max` also clamp the
/// other families.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistSpec {
    /// fixed, uniform, exponential, lognormal or empirical (default fixed).
    #[serde(default)]
    pub dist: DistKind,
    /// The value of `fixed`.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub value: Option<f64>,
    /// Mean of `exponential`.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub mean: Option<f64>,
    /// Median of `lognormal`.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub median: Option<f64>,
    /// Standard deviation of the log for `lognormal`.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 10.0))]
    pub sigma: Option<f64>,
    /// Lower bound (and `uniform`'s low end).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub min: Option<f64>,
    /// Upper bound (and `uniform`'s high end).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub max: Option<f64>,
    /// Values of `empirical`.
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "exclusiveMinimum": 0}))]
    pub values: Vec<f64>,
    /// Weights of `empirical` (default equal).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "minimum": 0}))]
    pub weights: Vec<f64>,
}

/// An inference service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// Name in reports.
    pub name: String,
    /// Accelerators per replica (default 8).
    #[serde(default = "default_replica")]
    pub replica_size: u32,
    /// Replicas at the daily peak.
    pub peak_replicas: u32,
    /// Share of the peak needed in each of the 24 hours (default: a diurnal curve from 0.3
    /// at 04:00 to 1.0 at 16:00).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "minimum": 0, "maximum": 1}))]
    pub curve: Vec<f64>,
    /// Priority of its replicas (default 100: they preempt training under `day-night`).
    #[serde(default = "default_service_priority")]
    pub priority: i32,
    /// Region index (default 0).
    #[serde(default)]
    pub region: u32,
}

fn default_replica() -> u32 {
    8
}
fn default_service_priority() -> i32 {
    100
}

/// Regions (the cluster's sites).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegionsSpec {
    /// One name per site (default region-0, region-1, ...).
    #[serde(default)]
    pub names: Vec<String>,
    /// Share of jobs whose data (home) is in each region (default equal).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "minimum": 0}))]
    pub home_shares: Vec<f64>,
    /// Each region's offset from UTC, hours in -12..=14 in steps of 0.25 (5.5 for India,
    /// 5.75 for Nepal; default 0): inference services follow their daily curve, and jobs
    /// arrive on the daily cycle, in their region's local time (simulation time 0 is
    /// midnight UTC).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "number", "format": "double", "minimum": -12.0, "maximum": 14.0, "multipleOf": 0.25}))]
    pub utc_offset_hours: Vec<f64>,
}

/// A trace to replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Directory of the Alibaba openb trace (`openb_node_list_all_node.csv` and
    /// `openb_pod_list_*.csv`), relative to the scenario file; its node list replaces the
    /// cluster. Give this or `csv`.
    #[serde(default)]
    pub openb: Option<String>,
    /// A job trace for the scenario's cluster, relative to the scenario file: CSV with a
    /// header; columns `arrival_s`, `duration_s`, `accelerators` required; `class`, `kind`,
    /// `priority`, `constraint` (none, domain, pod), `segment`, `region`, `data_gb`,
    /// `comm_share` optional. Give this or `openb`.
    #[serde(default)]
    pub csv: Option<String>,
    /// Which pod list: `default` or `gpuspec33` (default `default`).
    #[serde(default = "default_pods")]
    pub pods: String,
}

fn default_pods() -> String {
    "default".into()
}

/// Queue order of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum QueueSpec {
    /// First come, first served.
    Fifo,
    /// Shortest job first.
    Sjf,
    /// Highest priority first.
    Priority,
}

/// Placement mode of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementSpec {
    /// Lowest-index place that fits.
    FirstFit,
    /// The tightest node (or domain) that fits.
    BestFit,
    /// Smallest level (domain, pod) that holds the job (Slurm tree/block, Kueue preferred).
    Topology,
    /// Fragmentation gradient descent (Alibaba FGD).
    Fgd,
}

/// A policy: a preset name, optionally with fields overridden (a new name with overrides
/// starts from `backfill`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// A preset (fifo, backfill, sjf, priority, best-fit, topology, fgd, day-night,
    /// cross-region) or a new name.
    pub name: String,
    /// Queue order (default: the preset's).
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    /// EASY backfill (default: the preset's).
    #[serde(default)]
    pub backfill: Option<bool>,
    /// Preempt lower-priority jobs (default: the preset's).
    #[serde(default)]
    pub preemption: Option<bool>,
    /// Placement mode (default: the preset's).
    #[serde(default)]
    pub placement: Option<PlacementSpec>,
    /// Inference follows its daily curve; training takes the night (default: the preset's).
    #[serde(default)]
    pub day_night: Option<bool>,
    /// Route jobs by expected wait plus data-transfer time (default: the preset's).
    #[serde(default)]
    pub cross_region: Option<bool>,
}

impl SchedulingSpec {
    /// Range checks; errors are `(field path below scheduling, message)`.
    pub fn check(&self) -> Result<(), (String, String)> {
        let e = |p: String, m: String| Err((p, m));
        if self.backfill_depth == Some(0) {
            return e(
                "backfill_depth".into(),
                "0 would examine no queued job, so backfill would quietly not run; give at least 1 (Slurm's bf_max_job_test, default 500), or leave backfill out of the policies".into(),
            );
        }
        let a = &self.arrivals;
        if a.jobs == 0 {
            return e("arrivals.jobs".into(), "must be at least 1".into());
        }
        if a.jobs > MAX_JOBS {
            return e(
                "arrivals.jobs".into(),
                format!(
                    "{} is more than the {MAX_JOBS} a simulation takes (about 40 s and 4 GB for one policy at that)",
                    a.jobs
                ),
            );
        }
        if let Some(r) = a.rate_per_hour {
            if !(r > 0.0 && r.is_finite()) {
                return e(
                    "arrivals.rate_per_hour".into(),
                    format!("{r} must be a positive rate"),
                );
            }
        }
        if let Some(l) = a.load {
            if !(l > 0.0 && l <= 100.0) {
                return e(
                    "arrivals.load".into(),
                    format!("{l} must be a positive share of capacity (0.8 = 80%)"),
                );
            }
            if l < MIN_LOAD {
                return e("arrivals.load".into(), below_min_load(l));
            }
        }
        if a.rate_per_hour.is_some() && a.load.is_some() {
            return e(
                "arrivals".into(),
                "give rate_per_hour or load, not both".into(),
            );
        }
        if !(0.0..=1.0).contains(&a.daily_amplitude) {
            return e(
                "arrivals.daily_amplitude".into(),
                format!("{} must be between 0 and 1", a.daily_amplitude),
            );
        }
        if !(0.0..24.0).contains(&a.peak_hour) {
            return e(
                "arrivals.peak_hour".into(),
                format!("{} must be an hour in 0..24", a.peak_hour),
            );
        }
        if let Some(p) = self.pod {
            if p == 0 {
                return e("pod".into(), "must be at least 1 accelerator".into());
            }
        }
        if let Some(x) = self.restart_s {
            if !(x >= 0.0 && x.is_finite()) {
                return e(
                    "restart_s".into(),
                    format!("{x} must be a non-negative number"),
                );
            }
        }
        // 0 would silently mean the default (the span / 100, the last arrival).
        for (n, v) in [
            ("sample_h", self.sample_h),
            ("horizon_days", self.horizon_days),
        ] {
            if let Some(x) = v {
                if !(x > 0.0 && x.is_finite()) {
                    return e(
                        n.into(),
                        format!("{x} must be a positive number (leave it out for the default)"),
                    );
                }
            }
        }
        if let Some(f) = &self.failures {
            if !(f.scale >= 0.0 && f.scale.is_finite()) {
                return e(
                    "failures.scale".into(),
                    format!("{} must be a non-negative factor", f.scale),
                );
            }
            if !(f.checkpoint_h > 0.0 && f.checkpoint_h.is_finite()) {
                return e(
                    "failures.checkpoint_h".into(),
                    format!("{} must be a positive number of hours", f.checkpoint_h),
                );
            }
        }
        for (i, l) in self.loads.iter().enumerate() {
            if !(*l > 0.0 && *l <= 2.0) {
                return e(
                    format!("loads[{i}]"),
                    format!("{l} must be a share of capacity in (0, 2]"),
                );
            }
            if *l < MIN_LOAD {
                return e(format!("loads[{i}]"), below_min_load(*l));
            }
        }
        let mut share = 0.0;
        for (i, c) in self.classes.iter().enumerate() {
            let p = format!("classes[{i}]");
            if !(c.share >= 0.0 && c.share.is_finite()) {
                return e(
                    format!("{p}.share"),
                    format!("{} must be a non-negative weight", c.share),
                );
            }
            share += c.share;
            c.size
                .check()
                .map_err(|(f, m)| (format!("{p}.size{f}"), m))?;
            c.duration_h
                .check()
                .map_err(|(f, m)| (format!("{p}.duration_h{f}"), m))?;
            if let Some(s) = c.segment {
                if s == 0 {
                    return e(format!("{p}.segment"), "must be at least 1".into());
                }
                if c.constraint != ConstraintSpec::None {
                    return e(
                        format!("{p}.segment"),
                        "segment and constraint cannot both be given".into(),
                    );
                }
            }
            if !(0.0..=1.0).contains(&c.comm_share) {
                return e(
                    format!("{p}.comm_share"),
                    format!("{} must be a share between 0 and 1", c.comm_share),
                );
            }
            if !(c.data_gb >= 0.0 && c.data_gb.is_finite()) {
                return e(
                    format!("{p}.data_gb"),
                    format!("{} must be non-negative", c.data_gb),
                );
            }
        }
        // The report lists classes, services and regions by name: two of one name were
        // two rows no reader could tell apart.
        let names = [
            (
                "classes",
                self.classes
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
                ".name",
            ),
            (
                "inference",
                self.inference.iter().map(|c| c.name.as_str()).collect(),
                ".name",
            ),
            (
                "regions.names",
                self.regions
                    .as_ref()
                    .map(|r| r.names.iter().map(|n| n.as_str()).collect())
                    .unwrap_or_default(),
                "",
            ),
        ];
        for (list, names, field) in names {
            for (i, n) in names.iter().enumerate() {
                if let Some(j) = names[..i].iter().position(|m| m == n) {
                    return e(
                        format!("{list}[{i}]{field}"),
                        format!("`{n}` is given twice ({list}[{j}]); give each its own name"),
                    );
                }
            }
        }
        if !self.classes.is_empty() && share <= 0.0 {
            return e("classes".into(), "shares add up to 0".into());
        }
        for (i, s) in self.inference.iter().enumerate() {
            let p = format!("inference[{i}]");
            if s.replica_size == 0 {
                return e(format!("{p}.replica_size"), "must be at least 1".into());
            }
            if !s.curve.is_empty() && s.curve.len() != 24 {
                return e(
                    format!("{p}.curve"),
                    format!("{} values given; expected 24 (one per hour)", s.curve.len()),
                );
            }
            for (h, v) in s.curve.iter().enumerate() {
                if !(0.0..=1.0).contains(v) {
                    return e(
                        format!("{p}.curve[{h}]"),
                        format!("{v} must be a share of the peak in 0..1"),
                    );
                }
            }
        }
        if let Some(t) = &self.trace {
            if t.openb.is_some() == t.csv.is_some() {
                return e(
                    "trace".into(),
                    "give exactly one of openb (a directory) and csv (a job file)".into(),
                );
            }
            if t.pods != "default" && t.pods != "gpuspec33" {
                return e(
                    "trace.pods".into(),
                    format!("`{}` is not one of default, gpuspec33", t.pods),
                );
            }
        }
        if let Some(r) = &self.regions {
            if r.home_shares.iter().any(|x| !(*x >= 0.0 && x.is_finite())) {
                return e(
                    "regions.home_shares".into(),
                    "must be non-negative weights".into(),
                );
            }
            if !r.home_shares.is_empty() && r.home_shares.iter().sum::<f64>() <= 0.0 {
                return e("regions.home_shares".into(), "shares add up to 0".into());
            }
            for (i, h) in r.utc_offset_hours.iter().enumerate() {
                // Real offsets are whole hours, or half or quarter hours (India +5.5,
                // Nepal +5.75, central Australia +9.5, Newfoundland -3.5).
                if !((h * 4.0).fract() == 0.0 && (-12.0..=14.0).contains(h)) {
                    return e(
                        format!("regions.utc_offset_hours[{i}]"),
                        format!(
                            "{h} must be an offset in -12..=14 hours in steps of 0.25 (e.g. 5.5 for India, 5.75 for Nepal)"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// The least offered load a simulation takes: 0.1% of the cluster. Below it the cluster is
/// idle and the arrivals are spread so thin (a load of 1e-300 puts them 1e300 times further
/// apart) that the simulated span runs past any horizon.
pub const MIN_LOAD: f64 = 1e-3;

fn below_min_load(l: f64) -> String {
    format!("{l} is less than {MIN_LOAD} (0.1% of capacity), the least load a simulation takes")
}

impl DistSpec {
    /// Checks the keys `dist` needs; errors are `(.field, message)`.
    pub fn check(&self) -> Result<(), (String, String)> {
        let need = |name: &str, v: Option<f64>, pos: bool| -> Result<(), (String, String)> {
            match v {
                None => Err((
                    format!(".{name}"),
                    format!("missing; `{}` needs {name}", kind_name(self.dist)),
                )),
                Some(x) if !x.is_finite() || x < 0.0 || (pos && x <= 0.0) => Err((
                    format!(".{name}"),
                    format!(
                        "{x} must be {}",
                        if pos { "positive" } else { "non-negative" }
                    ),
                )),
                _ => Ok(()),
            }
        };
        for (n, v) in [("min", self.min), ("max", self.max)] {
            if let Some(x) = v {
                if !(x >= 0.0 && x.is_finite()) {
                    return Err((format!(".{n}"), format!("{x} must be non-negative")));
                }
            }
        }
        if let (Some(a), Some(b)) = (self.min, self.max) {
            if a > b {
                return Err((".min".into(), format!("{a} is above max {b}")));
            }
        }
        match self.dist {
            DistKind::Fixed => need("value", self.value, true),
            DistKind::Exponential => need("mean", self.mean, true),
            DistKind::Lognormal => {
                need("median", self.median, true)?;
                need("sigma", self.sigma, false)?;
                match self.sigma {
                    // Job traces' run times spread with sigma 1-3 (Philly, Helios, Acme);
                    // at 10 the middle 98% already spans 20 orders of magnitude.
                    Some(x) if x > 10.0 => {
                        Err((".sigma".into(), format!("{x} is more than 10 (the middle 98% of draws would span over 20 orders of magnitude)")))
                    }
                    _ => Ok(()),
                }
            }
            DistKind::Uniform => {
                need("min", self.min, false)?;
                need("max", self.max, true)
            }
            DistKind::Empirical => {
                if self.values.is_empty() {
                    return Err((".values".into(), "empirical needs values".into()));
                }
                if let Some(v) = self.values.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
                    return Err((".values".into(), format!("{v} must be positive")));
                }
                if !self.weights.is_empty() {
                    if self.weights.len() != self.values.len() {
                        return Err((
                            ".weights".into(),
                            format!(
                                "{} weights for {} values",
                                self.weights.len(),
                                self.values.len()
                            ),
                        ));
                    }
                    if self.weights.iter().any(|w| !(*w >= 0.0 && w.is_finite()))
                        || self.weights.iter().sum::<f64>() <= 0.0
                    {
                        return Err((
                            ".weights".into(),
                            "must be non-negative and not all 0".into(),
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

fn kind_name(k: DistKind) -> &'static str {
    match k {
        DistKind::Fixed => "fixed",
        DistKind::Uniform => "uniform",
        DistKind::Exponential => "exponential",
        DistKind::Lognormal => "lognormal",
        DistKind::Empirical => "empirical",
    }
}
