//! The flow backend (`--backend flow`, Python's `backend="flow"`): `train` with every
//! collective of the step simulated by `myriad-netsim`, and `collective` simulated flow by
//! flow on the routed topology, each with the scenario's `cluster.faults`.

use myriad_netsim::{
    flow_choice, flow_choice_for, time_collective, top_links, Fault, FaultTarget, FlowTime,
    FlowTimer, LinkLoad, Network, Program, SimOptions, SimResult,
};
use myriad_scenario::Scenario;
use myriad_train::{CollectiveTimer, StepEstimate};
use serde_json::{json, Value};

use crate::{CollectiveInput, Naming, TrainInput, TrainRun};

/// The backend a command times collectives with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Analytical,
    Flow,
}

/// `analytical` or `flow`; an error naming `--backend` or `backend` as `naming` says.
pub fn parse_backend(b: &str, naming: Naming) -> Result<Backend, String> {
    match b {
        "analytical" => Ok(Backend::Analytical),
        "flow" => Ok(Backend::Flow),
        b => Err(format!(
            "{}: `{b}` is not analytical or flow",
            naming.arg("backend")
        )),
    }
}

/// The scenario's `cluster.faults`, for the flow backend.
pub fn faults(s: &Scenario) -> Vec<Fault> {
    s.cluster
        .faults
        .iter()
        .filter_map(|f| {
            let target = match (f.link, f.switch, f.nic, f.domain) {
                (Some(l), ..) => FaultTarget::Link(l),
                (_, Some(x), ..) => FaultTarget::Switch(x),
                (_, _, Some(n), _) => FaultTarget::Nic(n),
                (.., Some(d)) => FaultTarget::Domain(d),
                _ => return None, // rejected by the scenario check
            };
            Some(Fault {
                at_s: f.at_s,
                target,
            })
        })
        .collect()
}

/// `myriad train --backend flow`: the step of `input` with every collective simulated
/// (every group of a dimension at once, DP beside PP, the scenario's faults), beside the
/// analytical estimate of the same plan.
pub struct FlowTrain<'n> {
    pub run: TrainRun,
    /// The timer the step ran on: its log of collectives, and its trace with `trace`.
    pub timer: FlowTimer<'n>,
    pub analytical: StepEstimate,
    pub faults: Vec<Fault>,
}

/// Runs [`FlowTrain`] on `net` (`Network::from_cluster(&input.cluster)`); a collective the
/// simulation could not time is an error naming `file`.
pub fn train_flow<'n>(
    s: &Scenario,
    file: &str,
    input: &'n TrainInput,
    net: &'n Network,
    trace: bool,
) -> Result<FlowTrain<'n>, String> {
    let faults = faults(s);
    let timer = FlowTimer::new(
        net,
        &input.cluster.levels,
        SimOptions {
            faults: faults.clone(),
            trace,
            ..Default::default()
        },
    );
    let run = crate::train(s, file, input, Some(&timer as &dyn CollectiveTimer))?;
    let errors = timer.errors();
    if !errors.is_empty() {
        return Err(format!("{file}: flow backend: {}", errors.join("; ")));
    }
    let analytical = myriad_train::estimate(&input.model, &run.result.plan, &input.cluster);
    Ok(FlowTrain {
        run,
        timer,
        analytical,
        faults,
    })
}

impl FlowTrain<'_> {
    /// The `myriad-train/1` object with its `flow` section: every distinct collective
    /// simulated, the analytical step and breakdown of the same plan, the faults.
    pub fn json(&self, s: &Scenario, input: &TrainInput) -> Value {
        let mut out = self.run.json(s, input);
        out["flow"] = json!({
            "backend": "flow",
            "collectives": self.timer.log(),
            "analytical": {
                "step_time_s": self.analytical.step_time_s,
                "breakdown": self.analytical.breakdown,
            },
            "faults": self.faults,
        });
        out
    }
}

/// `myriad collective --backend flow`: every size simulated; the most loaded links and the
/// simulation (for a trace) are the largest size's.
pub struct CollectiveFlow {
    pub points: Vec<(f64, FlowTime)>,
    pub links: Vec<LinkLoad>,
    pub faults: Vec<Fault>,
    /// The largest size's simulation and program.
    pub sim: SimResult,
    pub program: Program,
    pub json: Value,
}

/// Simulates every size of `input` on the scenario's routed topology (with its faults);
/// `trace` records the largest size's flows for a Chrome trace.
pub fn collective_flow(
    s: &Scenario,
    input: &CollectiveInput,
    file: &str,
    trace: bool,
) -> Result<CollectiveFlow, String> {
    let cluster = &input.cluster;
    let net = Network::from_cluster(cluster);
    let faults = faults(s);
    let mut points = Vec::with_capacity(input.sizes.len());
    let mut last = None;
    for (i, &b) in input.sizes.iter().enumerate() {
        // The protocol for the algorithm and ranks actually simulated (an uneven group runs
        // the ring).
        let choice = match &input.group {
            Some(g) => flow_choice_for(input.op, input.algorithm, b, g, &cluster.levels),
            None => flow_choice(input.op, input.algorithm, b, &input.span, &cluster.levels),
        };
        let opts = SimOptions {
            faults: faults.clone(),
            trace: trace && i + 1 == input.sizes.len(),
            ..Default::default()
        };
        let (t, prog) = time_collective(&net, input.op, choice, b, &input.ranks, &opts)
            .map_err(|e| format!("{file}: {e}"))?;
        if i + 1 == input.sizes.len() {
            last = Some((t.sim.clone(), prog));
        }
        points.push((b, t));
    }
    let (sim, program) = last.ok_or("no sizes to simulate")?;
    let links = top_links(&net, Some(&cluster.topology), &sim, 5);
    let pts: Vec<_> = points
        .iter()
        .map(|(b, t)| {
            json!({
                "bytes": *b as u64, "time_s": t.time_s, "algbw_gbps": t.algbw_gbps,
                "busbw_gbps": t.busbw_gbps, "algorithm": t.algorithm,
                "variant": t.variant, "protocol": t.protocol.name(),
                "flows_simulated": t.sim.flows_simulated, "flows": t.sim.flows_total,
                "steps_advanced_in_steady_state": t.sim.steps_skipped,
                "reroutes": t.sim.reroutes,
            })
        })
        .collect();
    let mut out = crate::shaped(pts, json!(input.ranks.len()), json!(input.span.spans));
    out["backend"] = json!("flow");
    out["links"] = json!(links);
    out["faults"] = json!(faults);
    Ok(CollectiveFlow {
        points,
        links,
        faults,
        sim,
        program,
        json: out,
    })
}
