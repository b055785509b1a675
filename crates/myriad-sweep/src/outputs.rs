//! The outputs a sweep can record per row: step-model results (need a `model` block) and
//! built-cluster results (need only `cluster`).

use myriad_cluster::BuiltCluster;
use myriad_train::TrainEstimate;

/// One CSV cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    F(f64),
    U(u64),
    B(bool),
    S(String),
    /// Not computed (the row failed before it, or it needs `training.tokens`).
    Empty,
}

impl Cell {
    /// The cell's text. Floats use Rust's shortest round-trip form, so a value reads back
    /// exactly and the same input gives the same bytes on every platform, always with a
    /// decimal point or an exponent (`{:?}`: `1071360000.0`, `4.234495475886273e19`,
    /// `1e-7`): with `{}` a whole float read as an integer and a large one as 20 digits
    /// (`42344954758862730000` FLOPs per step), which CSV readers type as integers or,
    /// past 2^64, as text.
    pub fn text(&self) -> String {
        match self {
            Cell::F(x) => format!("{x:?}"),
            Cell::U(x) => x.to_string(),
            Cell::B(b) => b.to_string(),
            Cell::S(s) => s.clone(),
            Cell::Empty => String::new(),
        }
    }
}

/// What an output is computed from.
pub struct Ctx<'a> {
    pub cluster: &'a BuiltCluster,
    /// Present when the row ran the step model.
    pub train: Option<&'a TrainEstimate>,
    pub accelerators: u64,
    pub seq_len: u64,
    /// `training.tokens`.
    pub tokens: Option<f64>,
}

impl Ctx<'_> {
    fn t(&self) -> &TrainEstimate {
        self.train
            .expect("training outputs are computed only after the step model ran")
    }

    /// Seconds to train on `training.tokens`.
    fn train_secs(&self) -> Option<f64> {
        let t = self.t();
        let tokens = self.tokens?;
        let per_step = t.plan.global_batch as f64 * self.seq_len as f64;
        Some((tokens / per_step).ceil() * t.estimate.step_time_s)
    }
}

/// A column's type (for typed output formats; CSV cells are text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// 64-bit float.
    Float,
    /// Unsigned 64-bit integer (stored as signed 64-bit in Parquet).
    Int,
    Bool,
    Str,
}

/// A recordable output.
pub struct Output {
    pub name: &'static str,
    /// The type of its cells (every cell is this variant or `Empty`).
    pub kind: Kind,
    /// Needs the step model (a `model` block); otherwise only the built cluster.
    pub train: bool,
    pub doc: &'static str,
    pub get: fn(&Ctx) -> Cell,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Outputs recorded when the spec has no `outputs:`.
pub const DEFAULT: &[&str] = &[
    "step_time_s",
    "mfu",
    "tokens_per_s",
    "memory_gib_per_accelerator",
    "fits",
    "forward_s",
    "backward_s",
    "recompute_s",
    "moe_overhead_s",
    "tp_comm_s",
    "cp_comm_s",
    "ep_comm_s",
    "pp_comm_s",
    "dp_comm_s",
    "pipeline_bubble_s",
    "optimizer_s",
    "offload_s",
    "capex_usd",
    "it_power_mw",
    "switches_total",
];

fn ser(v: impl serde::Serialize) -> Cell {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => Cell::S(s),
        Ok(other) => Cell::S(other.to_string()),
        Err(_) => Cell::Empty,
    }
}

macro_rules! t {
    ($kind:ident, $name:literal, $doc:literal, |$c:ident| $e:expr) => {
        Output {
            name: $name,
            kind: Kind::$kind,
            train: true,
            doc: $doc,
            get: |$c| $e,
        }
    };
}
macro_rules! c {
    ($kind:ident, $name:literal, $doc:literal, |$c:ident| $e:expr) => {
        Output {
            name: $name,
            kind: Kind::$kind,
            train: false,
            doc: $doc,
            get: |$c| $e,
        }
    };
}

/// Every output, in documentation order.
pub static ALL: &[Output] = &[
    t!(Float, "step_time_s", "seconds per training step", |c| {
        Cell::F(c.t().estimate.step_time_s)
    }),
    t!(
        Float,
        "mfu",
        "model FLOPs utilisation (of the training precision's dense peak)",
        |c| { Cell::F(c.t().estimate.mfu) }
    ),
    t!(Float, "mfu_bf16", "MFU against the bf16 dense peak", |c| {
        Cell::F(c.t().estimate.mfu_bf16)
    }),
    t!(
        Float,
        "hfu",
        "hardware FLOPs utilisation (recompute counted)",
        |c| { Cell::F(c.t().estimate.hfu) }
    ),
    t!(Float, "tokens_per_s", "tokens per second, whole job", |c| {
        Cell::F(c.t().estimate.tokens_per_s)
    }),
    t!(
        Float,
        "tokens_per_s_per_accelerator",
        "tokens per second per accelerator",
        |c| Cell::F(c.t().estimate.tokens_per_s / c.accelerators as f64)
    ),
    t!(Float, "model_flops_per_step", "model FLOPs per step", |c| {
        Cell::F(c.t().estimate.model_flops_per_step)
    }),
    t!(
        Float,
        "pace_slowest_chip",
        "compute multiplier of the job's slowest chip (speed_sigma)",
        |c| Cell::F(c.t().estimate.pace.slowest_chip)
    ),
    t!(
        Float,
        "pace_lockstep",
        "compute multiplier of the ranks in lockstep waiting for the momentarily slowest clock (speed_jitter)",
        |c| Cell::F(c.t().estimate.pace.lockstep)
    ),
    t!(
        Float,
        "memory_gib_per_accelerator",
        "GiB per accelerator on the peak stage",
        |c| Cell::F(c.t().estimate.memory.total_gib)
    ),
    t!(
        Bool,
        "fits",
        "whether that memory fits in HBM",
        |c| Cell::B(c.t().estimate.fits)
    ),
    t!(Float, "forward_s", "breakdown: forward compute", |c| {
        Cell::F(c.t().estimate.breakdown.forward_s)
    }),
    t!(Float, "backward_s", "breakdown: backward compute", |c| {
        Cell::F(c.t().estimate.breakdown.backward_s)
    }),
    t!(
        Float,
        "recompute_s",
        "breakdown: activation recompute",
        |c| { Cell::F(c.t().estimate.breakdown.recompute_s) }
    ),
    t!(
        Float,
        "moe_overhead_s",
        "breakdown: eager MoE layers' time beyond their kernels",
        |c| { Cell::F(c.t().estimate.breakdown.moe_overhead_s) }
    ),
    t!(
        Float,
        "tp_comm_s",
        "breakdown: exposed TP/SP communication",
        |c| { Cell::F(c.t().estimate.breakdown.tp_comm_s) }
    ),
    t!(
        Float,
        "cp_comm_s",
        "breakdown: exposed CP communication",
        |c| { Cell::F(c.t().estimate.breakdown.cp_comm_s) }
    ),
    t!(
        Float,
        "ep_comm_s",
        "breakdown: exposed EP communication",
        |c| { Cell::F(c.t().estimate.breakdown.ep_comm_s) }
    ),
    t!(
        Float,
        "pp_comm_s",
        "breakdown: exposed PP communication",
        |c| { Cell::F(c.t().estimate.breakdown.pp_comm_s) }
    ),
    t!(
        Float,
        "dp_comm_s",
        "breakdown: exposed DP communication",
        |c| { Cell::F(c.t().estimate.breakdown.dp_comm_s) }
    ),
    t!(
        Float,
        "pipeline_bubble_s",
        "breakdown: pipeline bubble",
        |c| { Cell::F(c.t().estimate.breakdown.pipeline_bubble_s) }
    ),
    t!(Float, "optimizer_s", "breakdown: optimizer step", |c| {
        Cell::F(c.t().estimate.breakdown.optimizer_s)
    }),
    t!(
        Float,
        "offload_s",
        "breakdown: activation offload, exposed",
        |c| { Cell::F(c.t().estimate.breakdown.offload_s) }
    ),
    t!(Float, "weights_gib", "memory: weights", |c| Cell::F(
        c.t().estimate.memory.weights_gib
    )),
    t!(Float, "gradients_gib", "memory: gradients", |c| Cell::F(
        c.t().estimate.memory.gradients_gib
    )),
    t!(Float, "optimizer_gib", "memory: optimizer state", |c| {
        Cell::F(c.t().estimate.memory.optimizer_gib)
    }),
    t!(
        Float,
        "activations_gib",
        "memory: activations",
        |c| Cell::F(c.t().estimate.memory.activations_gib)
    ),
    t!(
        Float,
        "buffers_gib",
        "memory: context, NCCL buffers, fragmentation",
        |c| { Cell::F(c.t().estimate.memory.buffers_gib) }
    ),
    t!(Float, "capacity_gib", "HBM capacity per accelerator", |c| {
        Cell::F(c.t().estimate.memory.capacity_gib)
    }),
    t!(Int, "accelerators", "accelerators the job uses", |c| {
        Cell::U(c.accelerators)
    }),
    t!(Int, "tp", "plan: tensor parallel", |c| Cell::U(
        c.t().plan.tp as u64
    )),
    t!(Int, "pp", "plan: pipeline parallel", |c| Cell::U(
        c.t().plan.pp as u64
    )),
    t!(Int, "cp", "plan: context parallel", |c| Cell::U(
        c.t().plan.cp as u64
    )),
    t!(Int, "dp", "plan: data parallel", |c| Cell::U(
        c.t().plan.dp as u64
    )),
    t!(Int, "ep", "plan: expert parallel", |c| Cell::U(
        c.t().plan.ep as u64
    )),
    t!(Int, "etp", "plan: expert tensor parallel", |c| Cell::U(
        c.t().plan.etp as u64
    )),
    t!(Int, "vpp", "plan: virtual pipeline stages", |c| Cell::U(
        c.t().plan.vpp as u64
    )),
    t!(Int, "micro_batch", "plan: sequences per micro-batch", |c| {
        Cell::U(c.t().plan.micro_batch as u64)
    }),
    t!(
        Int,
        "global_batch",
        "plan: sequences per step",
        |c| Cell::U(c.t().plan.global_batch)
    ),
    t!(
        Int,
        "micro_batches",
        "micro-batches per pipeline per step",
        |c| { Cell::U(c.t().estimate.micro_batches) }
    ),
    t!(
        Str,
        "recompute",
        "plan: recompute (chosen when not given)",
        |c| ser(c.t().plan.recompute)
    ),
    t!(
        Int,
        "zero_stage",
        "plan: ZeRO stage (chosen when not given)",
        |c| { Cell::U(c.t().plan.zero_stage as u64) }
    ),
    t!(
        Bool,
        "distributed_optimizer",
        "plan: distributed optimizer",
        |c| { Cell::B(c.t().plan.distributed_optimizer) }
    ),
    t!(
        Bool,
        "sequence_parallel",
        "plan: sequence parallelism",
        |c| { Cell::B(c.t().plan.sequence_parallel) }
    ),
    t!(Str, "precision", "plan: GEMM precision", |c| Cell::S(
        c.t().plan.precision.as_str().to_string()
    )),
    t!(Str, "schedule", "plan: pipeline schedule", |c| ser(c
        .t()
        .plan
        .schedule)),
    t!(
        Str,
        "placement",
        "plan: placement order, innermost first",
        |c| {
            Cell::S(
                c.t()
                    .plan
                    .placement
                    .iter()
                    .map(|d| match ser(d) {
                        Cell::S(s) => s,
                        _ => String::new(),
                    })
                    .collect::<Vec<_>>()
                    .join("-"),
            )
        }
    ),
    t!(
        Float,
        "days",
        "days to train on training.tokens (empty without it)",
        |c| c.train_secs().map_or(Cell::Empty, |s| Cell::F(s / 86400.0))
    ),
    t!(
        Float,
        "gpu_hours",
        "accelerator-hours to train on training.tokens",
        |c| c
            .train_secs()
            .map_or(Cell::Empty, |s| Cell::F(s / 3600.0 * c.accelerators as f64))
    ),
    t!(
        Float,
        "energy_mwh",
        "facility MWh to train on training.tokens (the job's share of the cluster)",
        |c| c.train_secs().map_or(Cell::Empty, |s| {
            let share = c.accelerators as f64 / c.cluster.accelerators as f64;
            Cell::F(c.cluster.power.facility_mw * share * s / 3600.0)
        })
    ),
    c!(Float, "capex_usd", "cluster capital cost", |c| Cell::F(
        c.cluster.capex.total_usd
    )),
    c!(Float, "it_power_mw", "cluster IT power", |c| Cell::F(
        c.cluster.power.it_mw
    )),
    c!(
        Float,
        "facility_power_mw",
        "cluster facility power (IT x PUE)",
        |c| { Cell::F(c.cluster.power.facility_mw) }
    ),
    c!(
        Float,
        "energy_cost_usd_per_year",
        "cluster energy cost per year",
        |c| Cell::F(c.cluster.power.energy_cost_usd_per_year)
    ),
    c!(
        Int,
        "switches_total",
        "scale-out switches, all tiers",
        |c| { Cell::U(c.cluster.bom.switches_total) }
    ),
    c!(Int, "transceivers", "optical transceivers", |c| Cell::U(
        c.cluster.bom.transceivers
    )),
    c!(Int, "cables", "cables, optical plus copper", |c| Cell::U(
        c.cluster.bom.cables
    )),
    c!(Int, "optical_cables", "optical cables", |c| Cell::U(
        c.cluster.bom.optical_cables
    )),
    c!(Int, "copper_cables", "copper cables", |c| Cell::U(
        c.cluster.bom.copper_cables
    )),
    c!(Int, "nics", "NICs", |c| Cell::U(c.cluster.bom.nics)),
    c!(Int, "racks", "racks, compute plus network", |c| Cell::U(
        c.cluster.bom.racks
    )),
    c!(Int, "scale_up_domains", "scale-up domains", |c| Cell::U(
        c.cluster.hierarchy.domains
    )),
    c!(
        Int,
        "cluster_accelerators",
        "accelerators in the cluster",
        |c| { Cell::U(c.cluster.accelerators) }
    ),
];

/// The output called `name`.
pub fn find(name: &str) -> Option<&'static Output> {
    ALL.iter().find(|o| o.name == name)
}
