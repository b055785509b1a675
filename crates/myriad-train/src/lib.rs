//! Training step time and memory: model + parallel plan + built cluster -> breakdown,
//! and the validation runner over `myriad-validation/1` files.
//!
//! Invariants:
//! - Pure: no IO; the CLI reads files and prints.
//! - No per-case or per-source parameter: every efficiency comes from the catalog entry of
//!   the accelerator, the scale-up system or the fabric.
//! - `estimate` allocates only two small op lists and the per-stage vector.

pub mod plan;
pub mod step;
pub mod validate;

pub use plan::{resolve, Plan, PlanError};
pub use step::{estimate, Breakdown, Memory, StepEstimate};

use myriad_cluster::BuiltCluster;
use myriad_model::{Recompute, Transformer};
use myriad_scenario::TrainingSpec;
use serde::Serialize;

/// A step estimate with the plan it used and the defaults chosen.
#[derive(Debug, Clone, Serialize)]
pub struct TrainEstimate {
    pub plan: Plan,
    pub notes: Vec<String>,
    pub estimate: StepEstimate,
}

/// Resolves the plan and estimates a step. When `recompute` is not given, tries none,
/// selective, then full, and keeps the first that fits (a user's choice), or full.
pub fn train(
    spec: &TrainingSpec,
    model: &Transformer,
    cluster: &BuiltCluster,
    accelerators: u64,
) -> Result<TrainEstimate, PlanError> {
    let (mut plan, mut notes) = resolve(spec, model, cluster, accelerators)?;
    let est = if spec.recompute.is_some() {
        estimate(model, &plan, cluster)
    } else {
        let mut chosen = None;
        for r in [Recompute::None, Recompute::Selective, Recompute::Full] {
            plan.recompute = r;
            let e = estimate(model, &plan, cluster);
            if e.fits || r == Recompute::Full {
                chosen = Some((r, e));
                break;
            }
        }
        let (r, e) = chosen.expect("full recompute always yields an estimate");
        notes.push(format!(
            "recompute: {} (not given; the cheapest mode that fits)",
            match r {
                Recompute::None => "none",
                Recompute::Selective => "selective",
                Recompute::Full => "full",
            }
        ));
        e
    };
    Ok(TrainEstimate {
        plan,
        notes,
        estimate: est,
    })
}
