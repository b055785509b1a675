//! Scenario -> what the simulation needs: the topology from the built cluster (regions =
//! sites, pods, scale-up domains, nodes), the workload, the policies and the options.

use myriad_catalog::Catalog;
use myriad_scenario::scheduling::{PlacementSpec, PolicySpec, QueueSpec, SchedulingSpec};
use myriad_scenario::{Scenario, ScenarioError};

use crate::cluster::{Mode, Topology};
use crate::sim::Options;
use crate::{openb, preset, Fgd, Policy, QueueOrder, Workload, PRESETS};

/// Everything one `myriad sched` run needs.
#[derive(Debug, Clone)]
pub struct Setup {
    pub name: String,
    pub accelerator: String,
    pub topology: Topology,
    pub workload: Workload,
    pub policies: Vec<Policy>,
    pub options: Options,
    pub seed: u64,
    /// The workload is the openb trace (load sweep applies).
    pub trace: bool,
    pub loads: Vec<f64>,
}

/// Default arrived loads of the trace load sweep.
pub const LOADS: [f64; 6] = [0.5, 0.7, 0.8, 0.9, 0.95, 1.0];

/// "; did you mean X?" for the nearest preset (the scenario parser's rule), or the list.
fn closest(name: &str) -> String {
    match myriad_catalog::closest(name, PRESETS.iter().copied()).first() {
        Some(h) if strsim::normalized_damerau_levenshtein(name, h) >= 0.5 => {
            format!("; did you mean {h}?")
        }
        _ => format!("; expected one of {}", PRESETS.join(", ")),
    }
}

/// Policies from the scenario's `policies` (or every preset), or from `--policies` names.
pub fn policies(
    specs: &[PolicySpec],
    names: Option<&[String]>,
) -> Result<Vec<Policy>, (String, String)> {
    if let Some(names) = names {
        if names.is_empty() {
            return Err((
                "--policies".to_string(),
                format!(
                    "no policy given; name one or more, comma-separated: {}",
                    PRESETS.join(", ")
                ),
            ));
        }
        if let Some((_, n)) = names
            .iter()
            .enumerate()
            .find(|(i, n)| names[..*i].contains(n))
        {
            return Err(("--policies".to_string(), format!("`{n}` is given twice")));
        }
        return names
            .iter()
            .map(|n| {
                // A scenario policy of that name wins over the preset.
                if let Some(sp) = specs.iter().find(|s| &s.name == n) {
                    return one(sp, "--policies");
                }
                preset(n).ok_or_else(|| {
                    (
                        "--policies".to_string(),
                        format!("`{n}` is not a policy{}", closest(n)),
                    )
                })
            })
            .collect();
    }
    if specs.is_empty() {
        return Ok(PRESETS.iter().map(|n| preset(n).expect("preset")).collect());
    }
    // Policies are told apart by name (columns, JSON, `--policies`).
    for (i, s) in specs.iter().enumerate() {
        if let Some(k) = specs[..i].iter().position(|o| o.name == s.name) {
            return Err((
                format!("policies[{i}].name"),
                format!(
                    "`{}` is given twice (policies[{k}]); give each policy its own name",
                    s.name
                ),
            ));
        }
    }
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| one(s, &format!("policies[{i}]")))
        .collect()
}

fn one(s: &PolicySpec, path: &str) -> Result<Policy, (String, String)> {
    let custom = s.queue.is_some()
        || s.backfill.is_some()
        || s.preemption.is_some()
        || s.placement.is_some()
        || s.day_night.is_some()
        || s.cross_region.is_some();
    let mut p = match preset(&s.name) {
        Some(p) => p,
        None if custom => Policy {
            name: s.name.clone(),
            ..preset("backfill").expect("preset")
        },
        None => {
            return Err((
                format!("{path}.name"),
                format!(
                    "`{}` is not a preset (and no field overrides one){}",
                    s.name,
                    closest(&s.name)
                ),
            ))
        }
    };
    if let Some(q) = s.queue {
        p.queue = match q {
            QueueSpec::Fifo => QueueOrder::Fifo,
            QueueSpec::Sjf => QueueOrder::Sjf,
            QueueSpec::Priority => QueueOrder::Priority,
        };
    }
    if let Some(m) = s.placement {
        p.placement = match m {
            PlacementSpec::FirstFit => Mode::FirstFit,
            PlacementSpec::BestFit => Mode::BestFit,
            PlacementSpec::Topology => Mode::Topology,
            PlacementSpec::Fgd => Mode::Fgd,
        };
    }
    p.backfill = s.backfill.unwrap_or(p.backfill);
    p.preemption = s.preemption.unwrap_or(p.preemption);
    p.day_night = s.day_night.unwrap_or(p.day_night);
    p.cross_region = s.cross_region.unwrap_or(p.cross_region);
    Ok(p)
}

/// Job interruptions per accelerator-hour from `myriad-reliability`'s default (Llama 3)
/// rates: the per-accelerator components (accelerator, HBM, NIC, unknown) plus the host rate
/// shared by the node's accelerators. Switch, link and software faults are per job or per
/// fabric element in that model and are left out here.
pub fn failure_rate_per_accelerator_hour(accelerators_per_node: u32) -> f64 {
    use myriad_reliability::Component;
    let per_acc: f64 = [
        Component::Accelerator,
        Component::Hbm,
        Component::Nic,
        Component::Unknown,
    ]
    .iter()
    .map(|c| c.default_per_hour())
    .sum();
    per_acc + Component::Host.default_per_hour() / accelerators_per_node.max(1) as f64
}

fn options(sc: &SchedulingSpec, accelerators_per_node: u32) -> Options {
    let (fail, ckpt) = match &sc.failures {
        Some(f) => (
            f.scale * failure_rate_per_accelerator_hour(accelerators_per_node) / 3600.0,
            f.checkpoint_h * 3600.0,
        ),
        None => (0.0, 3600.0),
    };
    Options {
        failure_per_gpu_s: fail,
        checkpoint_s: ckpt,
        seed: sc.seed.unwrap_or(1),
        sample_s: sc.sample_h.unwrap_or(0.0) * 3600.0,
        backfill_depth: sc.backfill_depth.unwrap_or(500) as usize,
        restart_s: sc.restart_s.unwrap_or(300.0),
        horizon_s: sc.horizon_days.unwrap_or(0.0) * 86400.0,
        ..Options::default()
    }
}

/// Most failures a job may expect per checkpoint interval and restart. A job keeps work only
/// when it runs a whole interval without failing, probability `exp(-λ)`: at λ = 5 it keeps
/// one interval in about 150 tries, under 1% of its time is useful, and past that its end
/// (and the simulation's) recedes exponentially.
pub const MAX_FAILURES_PER_INTERVAL: f64 = 5.0;

/// Rejects failure rates under which the largest job could never finish (see
/// [`MAX_FAILURES_PER_INTERVAL`]), with the numbers.
pub fn check_failures(jobs: &[crate::Job], o: &Options) -> Result<(), String> {
    let Some(n) = jobs.iter().map(|j| j.gpus).max() else {
        return Ok(());
    };
    let rate = o.failure_per_gpu_s * n as f64;
    let window = o.checkpoint_s + o.restart_s;
    let lambda = rate * window;
    if lambda > MAX_FAILURES_PER_INTERVAL {
        return Err(format!(
            "the largest job ({n} accelerators) would fail every {:.0} s on average, {lambda:.1} times per checkpoint interval and restart ({window:.0} s); it would keep under 1% of its work and might never finish (at most {MAX_FAILURES_PER_INTERVAL} is simulated): lower failures.scale or failures.checkpoint_h",
            1.0 / rate
        ));
    }
    Ok(())
}

/// Most hours inference services are simulated (ten years): they scale every hour until the
/// horizon (the last arrival, in whole days, or `horizon_days`).
pub const MAX_SERVICE_HOURS: f64 = 87_600.0;

/// Rejects a workload whose services would be stepped hour by hour for longer than
/// [`MAX_SERVICE_HOURS`] (jobs of thousands of hours at a high load spread their arrivals
/// over decades), with the numbers.
pub fn check_service_hours(w: &Workload, o: &Options) -> Result<(), String> {
    if w.services.is_empty() {
        return Ok(());
    }
    let horizon = crate::sim::horizon_s(w, o);
    let hours = horizon / 3600.0;
    if hours > MAX_SERVICE_HOURS {
        let mean_h =
            w.jobs.iter().map(|j| j.duration).sum::<f64>() / w.jobs.len().max(1) as f64 / 3600.0;
        return Err(format!(
            "the services would run {:.0} days ({} jobs arriving over that span, {mean_h:.0} h long on average); services are simulated hour by hour for at most {:.0} days: shorten the jobs, add jobs, or set horizon_days",
            hours / 24.0,
            w.jobs.len(),
            MAX_SERVICE_HOURS / 24.0
        ));
    }
    Ok(())
}

/// The openb trace replay: node list and pod list texts. Errors are `(path, message)`: the
/// scenario path (`scheduling.trace` for the lists, whose messages name the file;
/// `scheduling.policies[i]...`, `scheduling.failures`) or the flag (`--policies`).
pub fn openb(
    nodes_text: &str,
    pods_text: &str,
    sc: &SchedulingSpec,
    names: Option<&[String]>,
    seed: Option<u64>,
) -> Result<Setup, (String, String)> {
    let trace = |m: String| ("scheduling.trace".to_string(), m);
    let (nodes, types) = openb::parse_nodes(nodes_text).map_err(trace)?;
    let jobs = openb::parse_pods(pods_text, &types).map_err(trace)?;
    let topology = Topology::from_nodes(nodes, types, 64);
    let mut options = options(sc, 8);
    options.fgd = Some(Fgd::from_jobs(&jobs));
    check_failures(&jobs, &options).map_err(|m| ("scheduling.failures".to_string(), m))?;
    options.seed = seed.or(sc.seed).unwrap_or(1);
    let names_default: Vec<String> = ["best-fit", "fgd"].iter().map(|s| s.to_string()).collect();
    let names = match (names, sc.policies.is_empty()) {
        (Some(n), _) => Some(n),
        (None, true) => Some(&names_default[..]),
        (None, false) => None,
    };
    let policies = policies(&sc.policies, names).map_err(|(p, m)| {
        if p.starts_with("--") {
            (p, m)
        } else {
            (format!("scheduling.{p}"), m)
        }
    })?;
    Ok(Setup {
        name: "alibaba-openb-2023".into(),
        accelerator: "mixed (openb)".into(),
        topology,
        workload: Workload {
            jobs,
            classes: openb::CLASSES.iter().map(|s| s.to_string()).collect(),
            services: vec![],
        },
        policies,
        options,
        seed: seed.or(sc.seed).unwrap_or(1),
        trace: true,
        loads: if sc.loads.is_empty() {
            LOADS.to_vec()
        } else {
            sc.loads.clone()
        },
    })
}

/// The generated-workload setup of a scenario.
/// `csv`: the text of `scheduling.trace.csv` when the scenario has one (the caller reads it).
pub fn from_scenario(
    s: &Scenario,
    cat: &Catalog,
    file: &str,
    names: Option<&[String]>,
    seed: Option<u64>,
    csv: Option<&str>,
) -> Result<Setup, ScenarioError> {
    let err = |p: &str, m: String| ScenarioError::new(file, p, m);
    let default = SchedulingSpec::default();
    let sc = s.scheduling.as_ref().unwrap_or(&default);
    let b = myriad_cluster::build(s, cat).map_err(|e| err(&e.path, e.message))?;
    let h = &b.hierarchy;
    if h.accelerators_per_node == 0 || h.accelerators_per_node > 64 {
        return Err(err(
            "cluster.scale_up",
            format!(
                "{} accelerators per node: the scheduler supports 1..64",
                h.accelerators_per_node
            ),
        ));
    }
    let dom = h.accelerators_per_domain.max(1) as u64;
    let pod = match sc.pod {
        Some(p) => p,
        None => b
            .levels
            .iter()
            .find(|l| l.name == "island")
            .or_else(|| b.levels.iter().find(|l| l.name == "pod"))
            .or_else(|| {
                b.levels
                    .iter()
                    .rev()
                    .find(|l| l.name != "cluster" && l.name != "site")
            })
            .map(|l| l.size)
            .unwrap_or(dom),
    };
    if pod % dom != 0 {
        return Err(err(
            "scheduling.pod",
            format!("{pod} accelerators is not a whole number of scale-up domains of {dom}"),
        ));
    }
    // A pod is part of one site (region): a larger one was silently the whole region.
    if sc.pod.is_some() && pod > h.accelerators_per_site.max(dom) {
        return Err(err(
            "scheduling.pod",
            format!(
                "{pod} accelerators is more than a site holds ({} per site); a pod lies within one site",
                h.accelerators_per_site
            ),
        ));
    }
    let sites = h.sites.max(1) as usize;
    let names_r: Vec<String> = (0..sites)
        .map(|i| {
            sc.regions
                .as_ref()
                .and_then(|r| r.names.get(i).cloned())
                .unwrap_or_else(|| format!("region-{i}"))
        })
        .collect();
    if let Some(r) = &sc.regions {
        if r.names.len() > sites {
            return Err(err(
                "scheduling.regions.names",
                format!("{} names for {sites} sites (cluster.sites)", r.names.len()),
            ));
        }
        if r.utc_offset_hours.len() > sites {
            return Err(err(
                "scheduling.regions.utc_offset_hours",
                format!(
                    "{} offsets for {sites} sites (cluster.sites)",
                    r.utc_offset_hours.len()
                ),
            ));
        }
        if r.home_shares.len() > sites {
            return Err(err(
                "scheduling.regions.home_shares",
                format!(
                    "{} shares for {sites} sites (cluster.sites)",
                    r.home_shares.len()
                ),
            ));
        }
    }
    for (i, sv) in sc.inference.iter().enumerate() {
        if sv.region as usize >= sites {
            return Err(err(
                &format!("scheduling.inference[{i}].region"),
                format!(
                    "{} but the cluster has {sites} site(s) (cluster.sites; regions count from 0)",
                    sv.region
                ),
            ));
        }
    }
    let mut topology = Topology::uniform(
        &names_r,
        (h.domains / sites as u64) as u32,
        (pod / dom) as u32,
        h.nodes_per_domain,
        h.accelerators_per_node as u8,
        &b.accelerator.id,
    );
    // Bandwidth per accelerator inside a domain, a pod (the largest level that fits in one)
    // and a region (the largest level that fits in a site).
    let per_site = h.accelerators_per_site.max(1);
    let bw_at = |size: u64| {
        b.levels
            .iter()
            .rfind(|l| l.size <= size)
            .map_or(1.0, |l| l.gbps_per_accelerator)
    };
    topology.gbps = [bw_at(dom), bw_at(pod), bw_at(per_site)];
    topology.utc_offset_s = sc
        .regions
        .as_ref()
        .map(|r| r.utc_offset_hours.iter().map(|h| h * 3600.0).collect())
        .unwrap_or_default();
    for (i, sv) in sc.inference.iter().enumerate() {
        let room = topology.region_gpus(sv.region as usize);
        if u64::from(sv.replica_size) > room {
            return Err(err(
                &format!("scheduling.inference[{i}].replica_size"),
                format!(
                    "{} accelerators per replica but region {} has {room}: no replica could ever run",
                    sv.replica_size, sv.region
                ),
            ));
        }
    }
    let policies = policies(&sc.policies, names).map_err(|(p, m)| {
        if p.starts_with("--") {
            err(&p, m)
        } else {
            err(&format!("scheduling.{p}"), m)
        }
    })?;
    let seed = seed.or(sc.seed).unwrap_or(1);
    let workload = match csv {
        Some(text) => {
            let (jobs, classes) = crate::workload::parse_csv(text, &topology).map_err(|m| {
                let f = sc
                    .trace
                    .as_ref()
                    .and_then(|t| t.csv.clone())
                    .unwrap_or_default();
                err("scheduling.trace.csv", format!("{f}: {m}"))
            })?;
            let mut names = classes;
            let services = crate::workload::services(sc, &topology, &mut names);
            Workload {
                jobs,
                classes: names,
                services,
            }
        }
        None => {
            crate::workload::check_sizes(sc, &topology)
                .map_err(|(p, m)| err(&format!("scheduling.{p}"), m))?;
            crate::workload::generate(sc, &topology, seed)
        }
    };
    let mut options = options(sc, h.accelerators_per_node);
    options.seed = seed;
    check_failures(&workload.jobs, &options).map_err(|m| err("scheduling.failures", m))?;
    check_service_hours(&workload, &options).map_err(|m| err("scheduling.inference", m))?;
    if let Some(d) = &s.cluster.dci {
        options.inter_region_gbps = d.gbps_per_site;
        options.inter_region_latency_s = d.distance_km * 5e-6;
    }
    if policies.iter().any(|p| p.placement == Mode::Fgd) {
        options.fgd = Some(Fgd::from_jobs(&workload.jobs));
    }
    Ok(Setup {
        name: if s.name.is_empty() {
            b.name.clone()
        } else {
            s.name.clone()
        },
        accelerator: b.accelerator.id.clone(),
        topology,
        workload,
        policies,
        options,
        seed,
        trace: false,
        loads: vec![],
    })
}
