//! The JSON report of `myriad reliability` (`myriad-reliability-report/1`).
use serde::Serialize;

use crate::{CompareRow, Report, Setup, Spread, SweepPoint};

#[derive(Serialize)]
pub struct Interruptions {
    total: f64,
    planned: f64,
    unexpected: f64,
    by_cause: serde_json::Map<String, serde_json::Value>,
    expected_per_day: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
pub struct CheckpointOut {
    size_bytes: f64,
    bytes_per_accelerator: f64,
    mode: &'static str,
    levels: &'static str,
    interval_s: f64,
    interval_requested: String,
    stall_s: f64,
    write_s: f64,
    restore_s: f64,
    restore_storage_s: f64,
    checkpoints: f64,
    stall_hours: f64,
    storage_tbps_sustained: f64,
    storage_tbps_peak: f64,
}

#[derive(Serialize)]
pub struct SparesOut {
    per_domain: u32,
    pool_domains: u64,
    domain_size: u32,
    spare_accelerators: u64,
    repair_hours: f64,
    accelerators_in_repair: f64,
    waiting_for_spares_hours: f64,
    spare_domains_needed_p50: f64,
    spare_domains_needed_p99: f64,
}

#[derive(Serialize)]
pub struct Out<'a> {
    format: &'static str,
    name: &'a str,
    model: &'a str,
    accelerator: &'a str,
    scale_up: &'a str,
    accelerators: u64,
    horizon: &'static str,
    days: Option<f64>,
    replicas: u32,
    seed: u64,
    interruptions: Interruptions,
    /// `None` (JSON `null`) when no replica had an unexpected failure: no interval between
    /// failures to average.
    job_mtbf_hours: Option<f64>,
    /// `None` when every failure rate is zero.
    expected_job_mtbf_hours: Option<f64>,
    ettr: f64,
    ettr_ci95: [f64; 2],
    goodput: f64,
    goodput_ci95: [f64; 2],
    failure_free_tokens_per_s: f64,
    lost_work_hours: f64,
    lost_work_per_failure_s: f64,
    /// Mean hours down per replica: detection, diagnosis, waiting for spares, restart,
    /// restore and planned downtime (it was `restart_hours`, which it is not).
    down_hours: f64,
    checkpoint: CheckpointOut,
    spares: SparesOut,
    optimal_checkpoint_interval_s: f64,
    young_daly_interval_s: f64,
    sweep: &'a [SweepPoint],
    failure_free_days: Option<f64>,
    time_to_train_days: Option<f64>,
    time_to_train_days_ci95: Option<[f64; 2]>,
    /// Replicas stopped before the end of the run or window (`sim::MAX_WALL_FACTOR`,
    /// `sim::MAX_EVENTS`); their time to train is projected from their ETTR.
    capped_replicas: u32,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    compare: serde_json::Map<String, serde_json::Value>,
}

/// A mean time between failures that is infinite (no failures) as `None`: said, where
/// serde_json would turn the infinity into `null` silently.
fn finite(h: f64) -> Option<f64> {
    h.is_finite().then_some(h)
}

/// Serializes an infinite MTBF as `null` (see `finite`).
pub fn finite_or_null<S: serde::Serializer>(h: &f64, s: S) -> Result<S::Ok, S::Error> {
    finite(*h).serialize(s)
}

fn ci(s: &Spread) -> [f64; 2] {
    [s.lo, s.hi]
}

/// The report as one serializable object; `compare` holds `(kind, rows)` tables.
pub fn report<'a>(s: &'a Setup, r: &'a Report, tables: &[(&str, Vec<CompareRow>)]) -> Out<'a> {
    let m = &r.summary;
    let mut by_cause = serde_json::Map::new();
    for (c, n) in &m.by_component {
        by_cause.insert(c.name().to_string(), (*n).into());
    }
    by_cause.insert("planned".into(), m.planned.into());
    let mut expected = serde_json::Map::new();
    for (c, n) in &r.expected_per_day {
        expected.insert(c.name().to_string(), (*n).into());
    }
    expected.insert("planned".into(), r.expected_planned_per_day.into());
    let mut compare = serde_json::Map::new();
    for (k, rows) in tables {
        compare.insert(
            k.to_string(),
            serde_json::to_value(rows).expect("rows serialize"),
        );
    }
    let ck = &s.checkpoint;
    let j = &s.job;
    Out {
        format: "myriad-reliability-report/1",
        name: &s.name,
        model: &s.model,
        accelerator: &s.accelerator,
        scale_up: &s.scale_up,
        accelerators: j.accelerators,
        horizon: r.horizon,
        days: r.days,
        replicas: r.replicas,
        seed: r.seed,
        interruptions: Interruptions {
            total: m.unexpected + m.planned,
            planned: m.planned,
            unexpected: m.unexpected,
            by_cause,
            expected_per_day: expected,
        },
        job_mtbf_hours: finite(m.job_mtbf_hours),
        expected_job_mtbf_hours: finite(j.mtbf_hours()),
        ettr: m.ettr.mean,
        ettr_ci95: ci(&m.ettr),
        goodput: r.goodput_tokens_per_s.mean,
        goodput_ci95: ci(&r.goodput_tokens_per_s),
        failure_free_tokens_per_s: s.tokens_per_step / s.step_time_s,
        lost_work_hours: m.lost_work_hours,
        lost_work_per_failure_s: m.lost_work_per_failure_s,
        down_hours: m.down_hours,
        checkpoint: CheckpointOut {
            size_bytes: ck.size_bytes,
            bytes_per_accelerator: ck.bytes_per_accelerator,
            mode: ck.mode,
            levels: ck.levels,
            interval_s: r.interval_s,
            interval_requested: ck
                .interval_s
                .map(|x| format!("{x}"))
                .unwrap_or_else(|| "auto".into()),
            stall_s: r.policy.stall_s,
            write_s: ck.write_s,
            restore_s: r.policy.restore_s,
            restore_storage_s: ck.restore_storage_s,
            checkpoints: m.checkpoints,
            stall_hours: m.checkpoint_stall_hours,
            storage_tbps_sustained: ck.sustained_tbps,
            storage_tbps_peak: ck.peak_tbps,
        },
        spares: SparesOut {
            per_domain: j.spares_per_domain,
            pool_domains: j.pool_domains,
            domain_size: j.domain_size,
            spare_accelerators: j.spare_accelerators(),
            repair_hours: j.repair_s / 3600.0,
            accelerators_in_repair: m.accelerators_in_repair,
            waiting_for_spares_hours: m.waiting_for_spares_hours,
            spare_domains_needed_p50: m.spare_domains_needed_p50,
            spare_domains_needed_p99: m.spare_domains_needed_p99,
        },
        optimal_checkpoint_interval_s: r.optimal_checkpoint_interval_s,
        young_daly_interval_s: r.young_daly_interval_s,
        sweep: &r.sweep,
        failure_free_days: r.failure_free_days,
        time_to_train_days: r.time_to_train_days.map(|t| t.mean),
        time_to_train_days_ci95: r.time_to_train_days.as_ref().map(ci),
        capped_replicas: m.capped,
        compare,
    }
}
