//! Myriad's commands as library calls: each takes a parsed scenario and returns what the
//! command computes, with `json()` giving the stable JSON object the CLI prints with
//! `--json` (and the Python package returns as plain dicts). No IO: callers read files.
//!
//! ```
//! let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"),
//!     "/../../examples/dgx-superpod-h100.yaml")).unwrap();
//! let s = myriad_api::scenario("superpod.yaml", &text).unwrap();
//! let input = myriad_api::train_input(&s, "superpod.yaml").unwrap();
//! let t = myriad_api::train(&s, "superpod.yaml", &input, None).unwrap();
//! let j = t.json(&s, &input);
//! assert!(j["step_time_s"].as_f64().unwrap() > 0.0);
//! assert_eq!(j["fits"], true);
//! ```
//!
//! Invariant: the JSON shapes here are the contract of `--json` and of the Python package
//! (`format` keys name their version); fields are added, never renamed.

mod collective;
mod flow;

pub use collective::{
    algorithm_name, collective_analytical, collective_input, collective_input_named, group_span,
    parse_algorithm, parse_bytes, parse_op, shaped, timed_as_note, CollectiveInput, Naming,
    MAX_BYTES,
};
pub use flow::{
    collective_flow, faults, parse_backend, train_flow, Backend, CollectiveFlow, FlowTrain,
};
use myriad_cluster::BuiltCluster;
use myriad_model::Transformer;
use myriad_scenario::Scenario;
use myriad_train::{CollectiveTimer, TrainEstimate};
use serde::Serialize;
use serde_json::{json, Value};

/// Parses and validates a `myriad/1` scenario (YAML or JSON text). A scenario without a
/// `name` is named after its file (`runs/sweep.yaml`: `sweep`), as the CLI names it, so
/// reports never start with an empty name; a placeholder such as `<dict>` names nothing.
pub fn scenario(file: &str, text: &str) -> Result<Scenario, String> {
    let mut s = myriad_scenario::parse_scenario(file, text, myriad_catalog::catalog())
        .map_err(|e| e.to_string())?;
    if s.name.trim().is_empty() && !file.starts_with('<') {
        if let Some(stem) = std::path::Path::new(file).file_stem() {
            s.name = stem.to_string_lossy().into_owned();
        }
    }
    Ok(s)
}

/// `myriad cluster`: the built cluster's report.
pub fn cluster(s: &Scenario, file: &str) -> Result<Value, String> {
    let built =
        myriad_cluster::build(s, myriad_catalog::catalog()).map_err(|e| format!("{file}: {e}"))?;
    serde_json::to_value(built.report()).map_err(|e| e.to_string())
}

/// Time, GPU-hours and energy to train on `training.tokens`.
#[derive(Serialize, Clone, Copy, Debug)]
pub struct TimeToTrain {
    pub tokens: f64,
    pub steps: f64,
    pub days: f64,
    pub gpu_hours: f64,
    pub energy_mwh: f64,
    pub energy_cost_usd: f64,
}

/// What `myriad train` runs on: the resolved model, the built cluster, the training block.
pub struct TrainInput {
    pub model: Transformer,
    pub cluster: BuiltCluster,
    pub spec: myriad_scenario::TrainingSpec,
    pub accelerators: u64,
}

/// The accelerators the job runs on: `training.accelerators`, or the whole cluster.
fn training_accelerators(
    s: &Scenario,
    spec: &myriad_scenario::TrainingSpec,
    file: &str,
) -> Result<u64, String> {
    let accelerators = spec.accelerators.unwrap_or(s.cluster.count);
    if accelerators > s.cluster.count {
        return Err(format!(
            "{file}: training.accelerators: {accelerators} is more than cluster.count {}",
            s.cluster.count
        ));
    }
    Ok(accelerators)
}

/// Resolves the scenario's model and training block and builds its cluster.
pub fn train_input(s: &Scenario, file: &str) -> Result<TrainInput, String> {
    let cat = myriad_catalog::catalog();
    let model = s
        .model
        .as_ref()
        .ok_or_else(|| format!("{file}: model: missing; `myriad train` needs a model block"))?
        .resolve(cat)
        .map_err(|(p, m)| format!("{file}: model.{p}: {m}"))?;
    let spec = s.training.clone().unwrap_or_default();
    let cluster = myriad_cluster::build(s, cat).map_err(|e| format!("{file}: {e}"))?;
    let accelerators = training_accelerators(s, &spec, file)?;
    Ok(TrainInput {
        model,
        cluster,
        spec,
        accelerators,
    })
}

/// One `myriad train` estimate and the time to train on `training.tokens`.
pub struct TrainRun {
    pub result: TrainEstimate,
    pub time_to_train: Option<TimeToTrain>,
}

/// `myriad train`: the step of `input` estimated with `timer` (e.g. the flow backend) or
/// the analytical collective model.
pub fn train(
    s: &Scenario,
    file: &str,
    input: &TrainInput,
    timer: Option<&dyn CollectiveTimer>,
) -> Result<TrainRun, String> {
    let i = input;
    let result = match timer {
        Some(t) => myriad_train::train_with(&i.spec, &i.model, &i.cluster, i.accelerators, t),
        None => myriad_train::train(&i.spec, &i.model, &i.cluster, i.accelerators),
    }
    .map_err(|e| format!("{file}: {e}"))?;
    let time_to_train = i.spec.tokens.map(|tokens| {
        let tokens_per_step = result.plan.global_batch as f64 * i.model.seq_len as f64;
        let steps = (tokens / tokens_per_step).ceil();
        let secs = steps * result.estimate.step_time_s;
        let share = i.accelerators as f64 / s.cluster.count as f64;
        let mw = myriad_cluster::report(&i.cluster, s).facility_power_mw * share;
        TimeToTrain {
            tokens,
            steps,
            days: secs / 86400.0,
            gpu_hours: secs / 3600.0 * i.accelerators as f64,
            energy_mwh: mw * secs / 3600.0,
            energy_cost_usd: mw * secs / 3600.0 * 1000.0 * s.cluster.datacenter.usd_per_kwh,
        }
    });
    Ok(TrainRun {
        result,
        time_to_train,
    })
}

impl TrainRun {
    /// The `myriad-train/1` object.
    pub fn json(&self, s: &Scenario, input: &TrainInput) -> Value {
        let e = &self.result.estimate;
        json!({
            "format": "myriad-train/1",
            "name": s.name,
            "model": input.model.name,
            "accelerator": input.cluster.accelerator.id,
            "accelerators": input.accelerators,
            "step_time_s": e.step_time_s,
            "mfu": e.mfu,
            "hfu": e.hfu,
            "mfu_bf16": e.mfu_bf16,
            "tokens_per_s": e.tokens_per_s,
            "memory_gib_per_accelerator": e.memory.total_gib,
            "fits": e.fits,
            "breakdown": e.breakdown,
            "memory": e.memory,
            "pace": e.pace,
            "plan": self.result.plan,
            "notes": self.result.notes,
            "time_to_train": self.time_to_train,
        })
    }
}

/// One `myriad search` run.
pub struct SearchRun {
    pub model: Transformer,
    pub cluster: BuiltCluster,
    pub accelerators: u64,
    pub global_batches: Vec<u64>,
    pub result: myriad_search::SearchResult,
    /// What the search overrides in the scenario's training block, and why.
    pub notes: Vec<String>,
}

/// The most global batches one search estimates every plan at: `1..2^64` expanded to 64 and
/// ran for minutes; 16 span a factor of 32,768 (`1..32768`).
pub const MAX_GLOBAL_BATCHES: usize = 16;

/// Global batches for a search: `512,1024` or `512..4096` (doubling from the first to the
/// last), each at least 1; errors name the argument `name` (`--global-batch` in the CLI,
/// `global_batch` in Python).
/// Global batches to search: at least one, each at least one sequence, none twice (a batch
/// given twice estimated every plan of it twice; 0 made plans of no micro-batch).
pub fn check_global_batches(v: &[u64], name: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err(format!("{name}: no global batch given; give at least one"));
    }
    if v.len() > MAX_GLOBAL_BATCHES {
        return Err(format!(
            "{name}: {} global batches; a search takes at most {MAX_GLOBAL_BATCHES} (every plan is estimated at each: search a narrower range or fewer)",
            v.len()
        ));
    }
    if let Some(i) = v.iter().position(|b| *b == 0) {
        return Err(format!(
            "{name}[{i}]: 0 sequences; a global batch is at least 1"
        ));
    }
    for (i, b) in v.iter().enumerate() {
        if let Some(j) = v[..i].iter().position(|a| a == b) {
            return Err(format!(
                "{name}[{i}]: {b} is given twice (also [{j}]); give each global batch once"
            ));
        }
    }
    Ok(())
}

pub fn parse_global_batches(s: &str, name: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("{name}: `{s}` is not a list (512,1024) or a range (512..4096)");
    if let Some((a, b)) = s.split_once("..") {
        let (a, b): (u64, u64) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if a == 0 || b < a {
            return Err(bad());
        }
        let mut v = Vec::new();
        let mut x = a;
        while x <= b {
            v.push(x);
            // Past u64 the range ends (doubling wrapped to 0 and never ended).
            match x.checked_mul(2) {
                Some(n) => x = n,
                None => break,
            }
        }
        if v.len() > MAX_GLOBAL_BATCHES {
            return Err(format!(
                "{name}: `{s}` doubles through {} global batches; a search takes at most {MAX_GLOBAL_BATCHES} (e.g. {a}..{})",
                v.len(),
                v[MAX_GLOBAL_BATCHES - 1]
            ));
        }
        Ok(v)
    } else {
        let v: Vec<u64> = s
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()?;
        check_global_batches(&v, name)?;
        Ok(v)
    }
}

/// `myriad search`: every valid plan estimated, the `top` fastest kept. `global_batches`
/// replaces the scenario's global batch when given; `progress(done, total)` is called from
/// the worker threads.
pub fn search(
    s: &Scenario,
    file: &str,
    top: usize,
    global_batches: Option<Vec<u64>>,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<SearchRun, String> {
    if top == 0 {
        return Err("top: 0 plans to list; give at least 1".into());
    }
    let cat = myriad_catalog::catalog();
    let model = s
        .model
        .as_ref()
        .ok_or_else(|| format!("{file}: model: missing; `myriad search` needs a model block"))?
        .resolve(cat)
        .map_err(|(p, m)| format!("{file}: model.{p}: {m}"))?;
    let spec = s.training.clone().unwrap_or_default();
    myriad_train::plan::check_moe_graph(&spec).map_err(|e| format!("{file}: {e}"))?;
    let cluster = myriad_cluster::build(s, cat).map_err(|e| format!("{file}: {e}"))?;
    // The SMs of the TP overlap, for the plans that overlap (all of them unless the
    // scenario turns the overlap off).
    myriad_train::plan::check_tp_comm_overlap_sms(
        &spec,
        &cluster.accelerator,
        spec.tp_comm_overlap.unwrap_or(true),
    )
    .map_err(|e| format!("{file}: {e}"))?;
    myriad_train::plan::check_offload_supported(&spec, &cluster.scale_up)
        .map_err(|e| format!("{file}: {e}"))?;
    let accelerators = training_accelerators(s, &spec, file)?;
    let mut fixed = myriad_search::Fixed::from_spec(&spec, accelerators);
    myriad_train::plan::check_precision_settings(&spec, fixed.precision)
        .map_err(|e| format!("{file}: {e}"))?;
    // No plan can train in a precision the accelerator lacks: said as `train` says it (the
    // search answered "no parallel plan divides this cluster and global batch").
    myriad_train::plan::check_precision_supported(&cluster.accelerator, fixed.precision)
        .map_err(|e| format!("{file}: {e}"))?;
    if let Some(b) = global_batches {
        check_global_batches(&b, "global_batches")?;
        fixed.global_batches = b;
    }
    let space = myriad_search::Space::full(&model);
    let result = myriad_search::search(&model, &cluster, &fixed, &space, top.max(2), progress);
    Ok(SearchRun {
        model,
        cluster,
        accelerators,
        global_batches: fixed.global_batches.clone(),
        result,
        notes: myriad_search::override_note(&spec).into_iter().collect(),
    })
}

impl SearchRun {
    /// The `myriad-search/1` object (`seconds`: the caller's wall time for the search).
    pub fn json(&self, s: &Scenario, top: usize, seconds: f64) -> Value {
        let r = &self.result;
        let entry = |b: &myriad_search::Ranked, breakdown: bool| {
            let mut v = json!({
                "plan": b.plan, "step_time_s": b.estimate.step_time_s, "mfu": b.estimate.mfu,
                "memory_gib_per_accelerator": b.estimate.memory.total_gib,
            });
            if breakdown {
                v["breakdown"] = json!(b.estimate.breakdown);
            }
            v
        };
        json!({
            "format": "myriad-search/1",
            "name": s.name,
            "model": self.model.name,
            "accelerators": self.accelerators,
            "space": r.space,
            "evaluated": r.evaluated,
            "feasible": r.feasible,
            "infeasible": r.infeasible,
            "notes": self.notes,
            "seconds": seconds,
            "configs_per_second": r.evaluated as f64 / seconds.max(1e-9),
            "best": r.top.first().map(|b| entry(b, true)),
            "top": r.top.iter().take(top).map(|b| entry(b, false)).collect::<Vec<_>>(),
        })
    }
}

/// `myriad plan`: candidate clusters, the Pareto front and the choice (`myriad-plan/1`).
pub fn plan(
    s: &Scenario,
    file: &str,
) -> Result<(myriad_search::planner::PlanResult, Value), String> {
    let r = myriad_search::planner::plan(s, myriad_catalog::catalog())
        .map_err(|e| format!("{file}: {e}"))?;
    let v = json!({
        "format": "myriad-plan/1",
        "name": s.name,
        "tokens": r.tokens,
        "candidates": r.candidates.iter().map(|c| json!({
            "accelerator": c.accelerator, "scale_up": c.scale_up, "fabric": c.fabric,
            "accelerators": c.accelerators, "cluster_accelerators": c.cluster_accelerators,
            "days": c.days, "gpu_hours": c.gpu_hours,
            "capex_usd": c.capex_usd, "facility_power_mw": c.facility_power_mw,
            "energy_mwh": c.energy_mwh, "energy_cost_usd": c.energy_cost_usd,
            "pareto": c.pareto, "violations": c.violations, "notes": c.notes,
            "step_time_s": c.best.as_ref().map(|b| b.estimate.step_time_s),
            "mfu": c.best.as_ref().map(|b| b.estimate.mfu),
            "plan": c.best.as_ref().map(|b| &b.plan),
        })).collect::<Vec<_>>(),
        "chosen": r.chosen.map(|i| &r.candidates[i]),
        "chosen_cluster": r.chosen_report,
        "skipped": r.skipped,
    });
    Ok((r, v))
}

/// Cluster sizes of the reliability size comparison.
pub const RELIABILITY_SIZES: [u64; 7] = [1024, 4096, 8192, 16384, 32768, 65536, 100_000];

/// One `myriad reliability` run: the setup, the analysis and the comparisons asked for.
pub struct ReliabilityRun {
    pub setup: myriad_reliability::Setup,
    pub report: myriad_reliability::Report,
    pub tables: Vec<(&'static str, Vec<myriad_reliability::CompareRow>)>,
}

/// `myriad reliability`: `compare` holds `size`, `domain` or `checkpoint`.
pub fn reliability(
    s: &Scenario,
    file: &str,
    days: Option<f64>,
    replicas: Option<u32>,
    seed: Option<u64>,
    compare: &[&'static str],
) -> Result<ReliabilityRun, String> {
    let cat = myriad_catalog::catalog();
    let setup = myriad_reliability::setup(s, cat).map_err(|e| format!("{file}: {e}"))?;
    let given = replicas.is_some();
    let replicas = replicas.unwrap_or(setup.replicas);
    if replicas == 0 {
        return Err("replicas: must be at least 1".into());
    }
    if replicas > myriad_reliability::MAX_REPLICAS {
        let field = if given {
            "replicas".to_string()
        } else {
            format!("{file}: reliability.replicas")
        };
        return Err(format!(
            "{field}: {replicas} is more than the {} replicas one analysis runs",
            myriad_reliability::MAX_REPLICAS
        ));
    }
    let o = myriad_reliability::Options {
        days,
        replicas,
        seed: seed.unwrap_or(setup.seed),
    };
    let report = myriad_reliability::analyze(&setup, &o).map_err(|e| format!("{file}: {e}"))?;
    let mut tables = Vec::new();
    for &k in compare {
        let rows = match k {
            "size" => myriad_reliability::compare_size(&setup, &o, &RELIABILITY_SIZES),
            "domain" => myriad_reliability::compare_domain(&setup, &o, cat),
            "checkpoint" => myriad_reliability::compare_checkpoint(&setup, &o)
                .map_err(|e| format!("{file}: {e}"))?,
            other => {
                return Err(format!(
                    "compare: `{other}` is not size, domain or checkpoint"
                ))
            }
        };
        tables.push((k, rows));
    }
    Ok(ReliabilityRun {
        setup,
        report,
        tables,
    })
}

impl ReliabilityRun {
    pub fn json(&self) -> Value {
        let out = myriad_reliability::output::report(&self.setup, &self.report, &self.tables);
        serde_json::to_value(out).unwrap_or(Value::Null)
    }
}

/// Reads a file a scenario refers to (a serving trace, a job trace, the openb CSVs): the
/// caller's IO, so that this crate does none.
pub type Reader<'a> = &'a dyn Fn(&std::path::Path) -> Result<String, String>;

/// Parses a serving trace (`serving.trace`): CSV (`arrival_s,input_tokens,output_tokens`, optional header) or
/// JSON lines (`{"arrival_s":..,"input_tokens":..,"output_tokens":..}`).
pub fn parse_serve_trace(name: &str, text: &str) -> Result<Vec<(f64, u32, u32)>, String> {
    let mut out = Vec::new();
    // The first record (after blank and `#` lines) may be a header.
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let header_may_be_here = std::mem::replace(&mut first, false);
        let row = if l.starts_with('{') {
            let v: serde_json::Value = serde_json::from_str(l)
                .map_err(|e| format!("{name}: line {}: invalid JSON: {e}", i + 1))?;
            let g = |k: &str| {
                v.get(k)
                    .and_then(|x| x.as_f64())
                    .ok_or_else(|| format!("{name}: line {}: missing number `{k}`", i + 1))
            };
            (g("arrival_s")?, g("input_tokens")?, g("output_tokens")?)
        } else {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() < 3 {
                return Err(format!(
                    "{name}: line {}: expected arrival_s,input_tokens,output_tokens",
                    i + 1
                ));
            }
            match (f[0].parse(), f[1].parse(), f[2].parse()) {
                (Ok(a), Ok(b), Ok(c)) => (a, b, c),
                _ if header_may_be_here => continue, // header
                _ => return Err(format!("{name}: line {}: not three numbers: `{l}`", i + 1)),
            }
        };
        let (a, inp, o): (f64, f64, f64) = row;
        // Written so that a NaN (`nan` parses as a number) fails too.
        if !(a >= 0.0 && a.is_finite() && inp >= 1.0 && o >= 1.0) {
            return Err(format!(
                "{name}: line {}: arrival must be >= 0 and lengths >= 1",
                i + 1
            ));
        }
        if inp.fract() != 0.0 || o.fract() != 0.0 {
            return Err(format!(
                "{name}: line {}: token counts must be whole numbers",
                i + 1
            ));
        }
        let most = myriad_scenario::serving::MAX_REQUEST_TOKENS as f64;
        if inp > most || o > most {
            return Err(format!(
                "{name}: line {}: a length is more than the {most} tokens supported",
                i + 1
            ));
        }
        out.push((a, inp as u32, o as u32));
        if out.len() as u64 > myriad_scenario::serving::MAX_REQUESTS {
            return Err(format!(
                "{name}: more than the {} requests supported",
                myriad_scenario::serving::MAX_REQUESTS
            ));
        }
    }
    if out.is_empty() {
        return Err(format!("{name}: no requests in the trace"));
    }
    out.sort_by(|x, y| x.0.total_cmp(&y.0));
    Ok(out)
}

/// `myriad serve`: the resolved serving setup (trace read through `read`, relative to
/// `base`, the scenario's directory) and the built cluster; `seed` and `requests` override
/// the scenario's.
pub fn serve_setup(
    s: &Scenario,
    file: &str,
    base: &std::path::Path,
    read: Reader,
    seed: Option<u64>,
    requests: Option<u64>,
) -> Result<(myriad_serve::Setup, BuiltCluster), String> {
    let cat = myriad_catalog::catalog();
    let cluster = myriad_cluster::build(s, cat).map_err(|e| format!("{file}: {e}"))?;
    let trace = match s.serving.as_ref().and_then(|v| v.trace.as_ref()) {
        Some(t) => {
            let p = base.join(t);
            let name = p.display().to_string();
            Some(parse_serve_trace(&name, &read(&p)?)?)
        }
        None => None,
    };
    if requests == Some(0) {
        return Err("requests: must be at least 1".into());
    }
    // The overrides go into the scenario before the setup is resolved, so that a dataset's
    // samples are drawn with them (their count and seed), as the distributions' are.
    let overridden;
    let s = match (seed, requests, s.serving.as_ref()) {
        (None, None, _) | (_, _, None) => s,
        (_, _, Some(sv)) => {
            let mut sv = sv.clone();
            sv.seed = seed.or(sv.seed);
            sv.requests = requests.or(sv.requests);
            overridden = Scenario {
                serving: Some(sv),
                ..s.clone()
            };
            &overridden
        }
    };
    let mut setup =
        myriad_serve::setup(s, &cluster, cat, trace).map_err(|e| format!("{file}: {e}"))?;
    // A trace runs its first `requests` rows.
    if let (Some(n), myriad_serve::Arrivals::Trace(t)) = (requests, &mut setup.workload.arrivals) {
        t.truncate(n as usize);
        setup.workload.requests = t.len() as u64;
    }
    Ok((setup, cluster))
}

/// `myriad serve --search`: roles, TP/EP and batch limits searched for the most goodput
/// per accelerator on the scenario's cluster (`setup` and `cluster` from `serve_setup`),
/// ranked best first, with the `{"candidates", "no_feasible_candidate"}` object `--json`
/// prints (the closest candidate and its shortfall when none met the SLOs).
pub fn serve_search(
    s: &Scenario,
    setup: &myriad_serve::Setup,
    cluster: &BuiltCluster,
) -> (Vec<myriad_serve::search::Candidate>, Value) {
    let kv = s
        .serving
        .as_ref()
        .and_then(|v| v.kv_cache_fraction)
        .unwrap_or(setup.framework.kv_fraction);
    let c = myriad_serve::search::search(
        &setup.deployment,
        &setup.workload,
        &setup.slo,
        cluster.scale_up.accelerators_per_domain,
        cluster.accelerators,
        kv,
    );
    let none = myriad_serve::search::no_feasible(&c);
    let v = json!({
        "candidates": c,
        "no_feasible_candidate": none.map(|x| json!({
            "closest": x.description,
            "shortfall": x.shortfall,
        })),
    });
    (c, v)
}

/// Latency and throughput at 25%…150% of the scenario's arrival rate (Poisson, or a
/// trace's or dataset's mean rate, with its own lengths; at most 5,000 requests each), for
/// the report's charts against load (`load_sweep` in the serve report's JSON). Empty for
/// offline or closed-loop arrivals.
pub fn serve_load_sweep(setup: &myriad_serve::Setup) -> Value {
    let w = &setup.workload;
    let rate = match &w.arrivals {
        myriad_serve::Arrivals::Poisson(r) => *r,
        myriad_serve::Arrivals::Trace(t) if t.len() >= 2 => {
            let span = t[t.len() - 1].0 - t[0].0;
            if span > 0.0 {
                (t.len() - 1) as f64 / span
            } else {
                return json!([]);
            }
        }
        _ => return json!([]),
    };
    let n = w.requests.min(5000);
    let points: Vec<serde_json::Value> = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
        .iter()
        .map(|f| {
            let reqs = w.requests_at(Some(rate * f), n);
            let r =
                myriad_serve::simulate_requests(&setup.deployment, &reqs, w.prefix_hit, &setup.slo);
            json!({
                "rate": rate * f,
                "ttft": r.ttft,
                "tpot": r.tpot,
                "output_tokens_per_s_per_accelerator": r.output_tokens_per_s_per_accelerator,
                "goodput_output_tokens_per_s_per_accelerator":
                    r.goodput_output_tokens_per_s / r.accelerators.max(1) as f64,
            })
        })
        .collect();
    json!(points)
}

/// `myriad serve --validate`: every row of a `myriad-measurements/1` serving file predicted,
/// with the `{"cases", "summary", "groups", "metrics"}` object (warnings returned beside
/// it): `metrics` summarises each measured latency and rate besides the throughput.
pub fn serve_validate(
    name: &str,
    text: &str,
) -> Result<(myriad_serve::validate::Report, Value), String> {
    // Read as the training files and scenarios are: a key given twice or a number that is
    // not finite is an error at its field, not the last value silently kept.
    let doc: Value = myriad_scenario::parse_value(name, text).map_err(|e| e.to_string())?;
    let rep = myriad_serve::validate::validate(myriad_catalog::catalog(), &doc)
        .map_err(|e| format!("{name}: {e}"))?;
    let cases: Vec<Value> = rep
        .cases
        .iter()
        .map(|c| {
            json!({
                "id": c.id, "predicted": c.predicted, "measured": c.measured, "error": c.error,
                "group": c.group,
                "extra": c.extra.iter().map(|(k, p, m)| json!({"name": k, "predicted": p, "measured": m, "error": p / m - 1.0})).collect::<Vec<_>>(),
                "notes": c.notes,
            })
        })
        .collect();
    let sm = &rep.summary;
    let out = json!({
        "cases": cases,
        "summary": {
            "count": sm.count, "mae": sm.mae, "median_abs_error": sm.median_abs_error,
            "worst_abs_error": sm.worst_abs_error, "worst_id": sm.worst_id,
        },
        "groups": rep.groups,
        "metrics": rep.metrics,
        "warnings": rep.warnings,
    });
    Ok((rep, out))
}

/// One `myriad sched` run: the setup, one report per policy, the openb load sweeps.
pub struct SchedRun {
    pub setup: myriad_sched::setup::Setup,
    pub reports: Vec<myriad_sched::Report>,
    pub sweeps: Vec<(String, Vec<myriad_sched::openb::LoadPoint>)>,
}

/// `myriad sched`: the scenario's `scheduling` block (job traces read through `read`,
/// relative to `base`), or the openb trace in `openb` alone; `policies` picks presets or
/// the scenario's policies by name.
pub fn sched(
    s: Option<(&Scenario, &str)>,
    base: &std::path::Path,
    openb: Option<&std::path::Path>,
    read: Reader,
    policies: Option<&[String]>,
    seed: Option<u64>,
) -> Result<SchedRun, String> {
    sched_named(s, base, openb, read, policies, seed, Naming::Cli)
}

/// [`sched`] with errors naming the policies argument as `naming` says (the Python
/// package's `policies` rather than the CLI's `--policies`).
pub fn sched_named(
    s: Option<(&Scenario, &str)>,
    base: &std::path::Path,
    openb: Option<&std::path::Path>,
    read: Reader,
    policies: Option<&[String]>,
    seed: Option<u64>,
    naming: Naming,
) -> Result<SchedRun, String> {
    sched_run(s, base, openb, read, policies, seed).map_err(|e| match naming {
        Naming::Cli => e,
        // The engine names the argument by the CLI's flag (`--policies: ...`,
        // `FILE: --policies: ...`); a policy name itself is quoted in backticks.
        Naming::Keywords => e.replacen("--policies", "policies", 1),
    })
}

fn sched_run(
    s: Option<(&Scenario, &str)>,
    base: &std::path::Path,
    openb: Option<&std::path::Path>,
    read: Reader,
    policies: Option<&[String]>,
    seed: Option<u64>,
) -> Result<SchedRun, String> {
    let openb_texts = |dir: &std::path::Path, pods: &str| -> Result<(String, String), String> {
        Ok((
            read(&dir.join("openb_node_list_all_node.csv"))?,
            read(&dir.join(format!("openb_pod_list_{pods}.csv")))?,
        ))
    };
    let setup = match (s, openb) {
        (None, None) => return Err("give a scenario or an openb directory".into()),
        (None, Some(dir)) => {
            let (n, p) = openb_texts(dir, "default")?;
            myriad_sched::setup::openb(&n, &p, &Default::default(), policies, seed).map_err(
                |(p, m)| {
                    if p.starts_with("--") {
                        format!("{p}: {m}")
                    } else {
                        format!("{}: {m}", dir.display())
                    }
                },
            )?
        }
        (Some((s, file)), over) => {
            let sc = s.scheduling.clone().unwrap_or_default();
            let trace_dir = match (over, &sc.trace) {
                (Some(d), _) => Some((d.to_path_buf(), "default".to_string())),
                (None, Some(t)) => t.openb.as_ref().map(|o| (base.join(o), t.pods.clone())),
                (None, None) => None,
            };
            let csv = match sc.trace.as_ref().and_then(|t| t.csv.as_ref()) {
                Some(c) if over.is_none() => Some(read(&base.join(c))?),
                _ => None,
            };
            match trace_dir {
                Some((dir, pods)) => {
                    let (n, p) = openb_texts(&dir, &pods)?;
                    myriad_sched::setup::openb(&n, &p, &sc, policies, seed)
                        .map_err(|(p, m)| format!("{file}: {p}: {m}"))?
                }
                None => myriad_sched::setup::from_scenario(
                    s,
                    myriad_catalog::catalog(),
                    file,
                    policies,
                    seed,
                    csv.as_deref(),
                )
                .map_err(|e| e.to_string())?,
            }
        }
    };
    let reports: Vec<myriad_sched::Report> = setup
        .policies
        .iter()
        .map(|p| myriad_sched::simulate(&setup.topology, &setup.workload, p, &setup.options))
        .collect();
    let sweeps = match (setup.trace, setup.options.fgd.as_ref()) {
        (true, Some(fgd)) => setup
            .policies
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    myriad_sched::openb::load_sweep(
                        &setup.topology,
                        &setup.workload.jobs,
                        p.placement,
                        fgd,
                        &setup.loads,
                        setup.seed,
                    ),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(SchedRun {
        setup,
        reports,
        sweeps,
    })
}

impl SchedRun {
    /// The `myriad sched --json` object.
    pub fn json(&self) -> Value {
        let setup = &self.setup;
        json!({
            "name": setup.name,
            "accelerator": setup.accelerator,
            "accelerators": setup.topology.gpus(),
            "nodes": setup.topology.nodes.len(),
            "regions": setup.topology.region_names,
            "seed": setup.seed,
            "jobs": setup.workload.jobs.len(),
            "policies": self.reports,
            "load_sweep": self.sweeps.iter().map(|(n, pts)| json!({"policy": n, "points": pts})).collect::<Vec<_>>(),
        })
    }
}

/// `myriad validate`: every case of a `myriad-validation/1` file predicted
/// (`myriad-validation-report/1`).
pub fn validate(file: &str, text: &str) -> Result<Value, String> {
    let f = myriad_scenario::validation::parse_validation(file, text).map_err(|e| e.to_string())?;
    let report = myriad_train::validate::validate(&f.cases, myriad_catalog::catalog());
    Ok(validation_json(file, &f.warnings, &report))
}

/// The `myriad-validation-report/1` object of a report already computed (`myriad validate
/// --json` prints it without predicting every case a second time).
pub fn validation_json(
    file: &str,
    warnings: &[String],
    report: &myriad_train::validate::ValidationReport,
) -> Value {
    let cases: Vec<Value> = report
        .cases
        .iter()
        .map(|c| {
            json!({
                "id": c.id, "group": c.group,
                "predicted_step_time_s": c.predicted_step_time_s,
                "measured_step_time_s": c.measured_step_time_s,
                "error": c.error, "superseded": c.superseded, "mfu": c.mfu,
                "fits": c.fits,
                "breakdown": c.breakdown, "notes": c.notes, "failure": c.failure,
            })
        })
        .collect();
    json!({
        "format": "myriad-validation-report/1",
        "file": file,
        "warnings": warnings,
        "cases": cases,
        "summary": report.summary,
    })
}

#[cfg(test)]
mod tests {
    use super::{parse_global_batches, parse_serve_trace};

    /// An unnamed scenario takes its file's stem, as the CLI names it (the Python API, going
    /// through here, returned an empty name where the CLI said `llama`); a placeholder file
    /// name such as Python's `<dict>` names nothing, and a given name is kept.
    #[test]
    fn an_unnamed_scenario_is_named_after_its_file() {
        let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\n";
        assert_eq!(
            super::scenario("runs/llama.yaml", text).unwrap().name,
            "llama"
        );
        assert_eq!(super::scenario("<dict>", text).unwrap().name, "");
        let named = format!("name: mine\n{text}");
        assert_eq!(
            super::scenario("runs/llama.yaml", &named).unwrap().name,
            "mine"
        );
    }

    /// Each case of the `--json` validation report says whether its plan fits in memory,
    /// as the validator computes it (`CaseResult::fits` was dropped from the object).
    #[test]
    fn validation_json_cases_say_whether_they_fit() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/validation/training-public.json"
        );
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let one = serde_json::json!({"format": v["format"], "cases": [v["cases"][0]]});
        let j = super::validate("v.json", &one.to_string()).unwrap();
        assert_eq!(j["cases"][0]["fits"], serde_json::Value::Bool(true), "{j}");
    }

    /// Guards the trace's length check against NaN: `nan` parses as a number and passed
    /// `< 1` and `> most` alike, and `NaN as u32` made it a silent one-token request.
    #[test]
    fn a_trace_length_of_nan_is_an_error() {
        for row in ["0.5,nan,10", "0.5,10,NaN"] {
            let e = parse_serve_trace("t.csv", &format!("0,5,5\n{row}\n")).unwrap_err();
            assert_eq!(
                e, "t.csv: line 2: arrival must be >= 0 and lengths >= 1",
                "{row}"
            );
        }
        assert_eq!(
            parse_serve_trace("t.csv", "0,5,5\n0.5,10,10\n").unwrap(),
            [(0.0, 5, 5), (0.5, 10, 10)]
        );
    }

    /// The header was taken on the file's first line only: after a comment or a blank line
    /// (both skipped) it was "line 2: not three numbers". It is still one line, first.
    #[test]
    fn a_trace_header_after_a_comment_is_a_header() {
        for text in [
            "# from a benchmark\narrival_s,input_tokens,output_tokens\n0,5,5\n",
            "\narrival_s,input_tokens,output_tokens\n0,5,5\n",
            "arrival_s,input_tokens,output_tokens\n0,5,5\n",
        ] {
            assert_eq!(
                parse_serve_trace("t.csv", text).unwrap(),
                [(0.0, 5, 5)],
                "{text:?}"
            );
        }
        let e = parse_serve_trace("t.csv", "# c\n0,5,5\na,b,c\n").unwrap_err();
        assert_eq!(e, "t.csv: line 3: not three numbers: `a,b,c`");
    }

    /// A serving measurements file read by serde_json kept the last of two equal keys.
    #[test]
    fn a_serving_file_with_a_key_given_twice_is_an_error() {
        let text = r#"{"format": "myriad-measurements/1", "format": "x", "cases": []}"#;
        let e = super::serve_validate("m.json", text).unwrap_err();
        assert!(e.starts_with("m.json: format: duplicate key"), "{e}");
    }

    /// A fractional token count (1.5) was truncated to 1 without a word.
    #[test]
    fn a_fractional_trace_length_is_an_error() {
        for row in ["0.5,1.5,10", "0.5,10,2.25"] {
            let e = parse_serve_trace("t.csv", &format!("0,5,5\n{row}\n")).unwrap_err();
            assert_eq!(
                e, "t.csv: line 2: token counts must be whole numbers",
                "{row}"
            );
        }
    }

    #[test]
    fn a_batch_range_doubles_to_its_end_and_stops_before_u64_overflows() {
        let p = |s: &str| parse_global_batches(s, "--global-batch");
        assert_eq!(p("512..4096").unwrap(), [512, 1024, 2048, 4096]);
        assert_eq!(p("512,1024").unwrap(), [512, 1024]);
        // The doubling from 2^63 once wrapped to 0, and the loop filled memory; then the
        // 64 batches it stopped at took minutes to search.
        assert_eq!(
            p("1..18446744073709551615").unwrap_err(),
            "--global-batch: `1..18446744073709551615` doubles through 64 global batches; a search takes at most 16 (e.g. 1..32768)"
        );
        let v = p("1..32768").unwrap();
        assert_eq!(v.len(), 16);
        let v = p("9223372036854775808..18446744073709551615").unwrap();
        assert_eq!(v, [1u64 << 63]);
        let many: Vec<String> = (1..=17).map(|b| b.to_string()).collect();
        assert_eq!(
            p(&many.join(",")).unwrap_err(),
            "--global-batch: 17 global batches; a search takes at most 16 (every plan is estimated at each: search a narrower range or fewer)"
        );
        assert_eq!(
            parse_global_batches("0..4", "global_batch").unwrap_err(),
            "global_batch: `0..4` is not a list (512,1024) or a range (512..4096)"
        );
    }

    /// A global batch listed twice estimated (and counted) every plan of it twice; an empty
    /// list or a batch of 0 from the Python API searched nothing, or plans of no
    /// micro-batch.
    #[test]
    fn global_batches_are_given_once_each_and_at_least_one() {
        assert_eq!(
            parse_global_batches("512,1024,512", "--global-batch").unwrap_err(),
            "--global-batch[2]: 512 is given twice (also [0]); give each global batch once"
        );
        let s = myriad_scenario::parse_scenario(
            "t.yaml",
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 16, precision: bf16}\n",
            myriad_catalog::catalog(),
        )
        .unwrap();
        let search = |b: Vec<u64>| super::search(&s, "t.yaml", 3, Some(b), &|_, _| {});
        for (b, want) in [
            (
                vec![],
                "global_batches: no global batch given; give at least one",
            ),
            (
                vec![16, 0],
                "global_batches[1]: 0 sequences; a global batch is at least 1",
            ),
            (
                vec![16, 32, 16],
                "global_batches[2]: 16 is given twice (also [0]); give each global batch once",
            ),
        ] {
            match search(b.clone()) {
                Ok(r) => panic!("{b:?}: searched {} plans", r.result.evaluated),
                Err(e) => assert_eq!(e, want, "{b:?}"),
            }
        }
        assert!(search(vec![16, 32]).unwrap().result.top.len() == 3);
    }

    /// A precision the accelerator lacks is an error naming `training.precision`, as in
    /// `train` (the search rejected every plan and said none divides the cluster).
    #[test]
    fn a_search_in_a_precision_the_accelerator_lacks_is_an_error() {
        let s = myriad_scenario::parse_scenario(
            "t.yaml",
            "format: myriad/1\ncluster: {accelerator: a100-sxm-80gb, count: 8}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 16, precision: fp8}\n",
            myriad_catalog::catalog(),
        )
        .unwrap();
        match super::search(&s, "t.yaml", 3, None, &|_, _| {}) {
            Ok(r) => panic!("searched {} plans", r.result.space),
            Err(e) => assert!(
                e.starts_with(
                    "t.yaml: training.precision: fp8 is not supported by a100-sxm-80gb (it has "
                ),
                "{e}"
            ),
        }
    }
}
