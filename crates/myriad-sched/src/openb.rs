//! The Alibaba openb trace (Weng et al., ATC'23; `clusterdata/cluster-trace-gpu-v2023`):
//! parsing from text, the time replay's jobs, and the paper's load sweep.
//!
//! Replay: arrival = `creation_time`, run time = `deletion_time - scheduled_time`
//! (`deletion_time - creation_time` for the 897 tasks never scheduled), at least 1 s.
//! `num_gpu == 1` with `gpu_milli < 1000` shares one GPU; other GPU tasks take `num_gpu`
//! whole GPUs on one node; `gpu_spec` (`A|B`) restricts the GPU type.
//!
//! Load sweep (the paper's Figure 7 protocol): tasks are drawn at random, with replacement,
//! from the trace and submitted one after another without departures; a task that cannot
//! be placed fails. At each arrived load (GPU requested by arrived tasks / GPU capacity)
//! the sweep records the GPUs allocated, the GPUs left idle and the fragmentation.

use serde::Serialize;

use crate::cluster::{Mode, Node, State, Topology};
use crate::frag::Fgd;
use crate::workload::Rng;
use crate::{Job, Kind};

/// Class names of replayed tasks.
pub const CLASSES: [&str; 4] = ["cpu-only", "gpu-share", "one-gpu", "multi-gpu"];

fn header(text: &str, want: &[&str], file: &str) -> Result<Vec<usize>, String> {
    let h: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .split(',')
        .collect();
    want.iter()
        .map(|w| {
            h.iter()
                .position(|x| x == w)
                .ok_or_else(|| format!("{file}: header has no column `{w}`"))
        })
        .collect()
}

fn num(s: &str, file: &str, line: usize, col: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("{file}: line {line}: {col}: `{s}` is not a whole number"))
}

/// A whole number that fits a `u32` (a larger one would wrap to a small request or node).
fn num32(s: &str, file: &str, line: usize, col: &str) -> Result<u32, String> {
    let v = num(s, file, line, col)?;
    u32::try_from(v)
        .map_err(|_| format!("{file}: line {line}: {col}: {v} is more than {}", u32::MAX))
}

/// Parses `openb_node_list_all_node.csv`: the nodes and the GPU type names.
pub fn parse_nodes(text: &str) -> Result<(Vec<Node>, Vec<String>), String> {
    let f = "openb_node_list_all_node.csv";
    let c = header(text, &["cpu_milli", "memory_mib", "gpu", "model"], f)?;
    let mut types: Vec<String> = vec![];
    let mut nodes = vec![];
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<&str> = line.split(',').collect();
        let get = |k: usize| v.get(c[k]).copied().unwrap_or("");
        let gpus = num(get(2), f, i + 1, "gpu")?;
        if gpus > 8 {
            return Err(format!("{f}: line {}: gpu: {gpus} is more than 8", i + 1));
        }
        let model = get(3).trim().to_string();
        let ty = match types.iter().position(|t| *t == model) {
            Some(p) => p,
            None => {
                types.push(model);
                types.len() - 1
            }
        };
        nodes.push(Node {
            gpus: gpus as u8,
            gpu_type: ty as u8,
            cpu_milli: num32(get(0), f, i + 1, "cpu_milli")?,
            memory_mib: num32(get(1), f, i + 1, "memory_mib")?,
        });
    }
    if nodes.is_empty() {
        return Err(format!("{f}: no nodes"));
    }
    if nodes.iter().all(|n| n.gpus == 0) {
        return Err(format!(
            "{f}: no node has a GPU (column gpu); the scheduler measures GPU capacity"
        ));
    }
    if types.len() > 63 {
        return Err(format!("{f}: more than 63 GPU types"));
    }
    Ok((nodes, types))
}

/// Parses an `openb_pod_list_*.csv` into jobs (times in seconds from the first creation).
pub fn parse_pods(text: &str, types: &[String]) -> Result<Vec<Job>, String> {
    let f = "openb_pod_list";
    let c = header(
        text,
        &[
            "cpu_milli",
            "memory_mib",
            "num_gpu",
            "gpu_milli",
            "gpu_spec",
            "creation_time",
            "deletion_time",
            "scheduled_time",
        ],
        f,
    )?;
    let mut jobs = vec![];
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<&str> = line.split(',').collect();
        let get = |k: usize| v.get(c[k]).copied().unwrap_or("").trim();
        let ln = i + 1;
        let gpus = num32(get(2), f, ln, "num_gpu")?;
        let milli = num(get(3), f, ln, "gpu_milli")?;
        if milli > 1000 {
            return Err(format!(
                "{f}: line {ln}: gpu_milli: {milli} is more than 1000"
            ));
        }
        let created = num(get(5), f, ln, "creation_time")? as f64;
        let deleted = num(get(6), f, ln, "deletion_time")? as f64;
        let sched = match get(7) {
            "" => created,
            s => num(s, f, ln, "scheduled_time")? as f64,
        };
        let mut mask = 0u64;
        for t in get(4).split('|').filter(|s| !s.is_empty()) {
            match types.iter().position(|x| x == t) {
                Some(p) => mask |= 1 << p,
                // A type no node has: the bit past every node type, so it never fits.
                None => mask |= 1 << 63,
            }
        }
        let mut j = Job::new(jobs.len() as u32, created, (deleted - sched).max(1.0), gpus);
        j.kind = Kind::Dev;
        j.milli = if gpus == 1 && milli > 0 && milli < 1000 {
            milli as u16
        } else {
            1000
        };
        j.class = match (gpus, j.milli) {
            (0, _) => 0,
            (1, m) if m < 1000 => 1,
            (1, _) => 2,
            _ => 3,
        };
        j.cpu_milli = num32(get(0), f, ln, "cpu_milli")?;
        j.memory_mib = num32(get(1), f, ln, "memory_mib")?;
        j.gpu_types = mask;
        jobs.push(j);
    }
    if jobs.is_empty() {
        return Err(format!("{f}: no pods"));
    }
    let t0 = jobs.iter().map(|j| j.arrival).fold(f64::INFINITY, f64::min);
    for j in &mut jobs {
        j.arrival -= t0;
    }
    Ok(jobs)
}

/// One point of the load sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadPoint {
    /// GPU requested by arrived tasks / GPU capacity.
    pub arrived: f64,
    /// GPU allocated / capacity.
    pub allocated: f64,
    /// Capacity not allocated, GPUs.
    pub unallocated_gpus: f64,
    /// GPU requested by tasks that failed to place, GPUs.
    pub failed_gpus: f64,
    /// FGD's expected fragment, GPUs.
    pub frag_gpus: f64,
    pub failed_tasks: u64,
}

/// The paper's load sweep for placement `mode`: tasks drawn from `jobs` with seed `seed`
/// (no points when no task requests a GPU: the arrived load would never grow).
pub fn load_sweep(
    t: &Topology,
    jobs: &[Job],
    mode: Mode,
    fgd: &Fgd,
    loads: &[f64],
    seed: u64,
) -> Vec<LoadPoint> {
    let cap = t.gpus() as f64 * 1000.0;
    // No task requests a GPU (or there is none): the arrived load never grows.
    if cap <= 0.0 || jobs.iter().all(|j| j.milli_total() == 0) {
        return vec![];
    }
    let mut s = State::new(t);
    let mut rng = Rng::new(seed, 7);
    let mut loads: Vec<f64> = loads.to_vec();
    loads.sort_by(f64::total_cmp);
    let (mut arrived, mut failed, mut failed_n) = (0.0, 0.0, 0u64);
    let mut out = vec![];
    let mut next = 0;
    let mut guard = 0u64;
    while next < loads.len() && guard < 10_000_000 {
        guard += 1;
        let j = &jobs[rng.below(jobs.len())];
        arrived += j.milli_total() as f64;
        match s.find(t, j, mode, 0, Some(fgd)) {
            Some(p) => {
                s.apply(t, &p.pieces, true);
                s.apply_cpu(p.cpu_node as usize, j.cpu_milli, j.memory_mib, true);
            }
            None => {
                failed += j.milli_total() as f64;
                failed_n += 1;
            }
        }
        while next < loads.len() && arrived >= loads[next] * cap {
            let used = s.reg_used_milli[0] as f64;
            out.push(LoadPoint {
                arrived: loads[next],
                allocated: used / cap,
                unallocated_gpus: (cap - used) / 1000.0,
                failed_gpus: failed / 1000.0,
                frag_gpus: fgd.cluster(t, &s, 0),
                failed_tasks: failed_n,
            });
            next += 1;
        }
    }
    out
}
