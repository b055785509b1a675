//! Fragmentation as FGD measures it (Weng et al., "Beware of Fragmentation", USENIX ATC'23).
//!
//! For a node `n` and a task type `m` (GPUs, milli-GPU share, CPU, allowed GPU types) drawn
//! with probability `p_m` from the workload, the fragment `F_n(m)` is the free GPU capacity of
//! `n` that `m` cannot use:
//! - `m` does not fit on `n` at all (GPU type, CPU, not enough GPU), or `m` needs no GPU:
//!   every free milli-GPU of `n`;
//! - `m` shares one GPU (`milli < 1000`): the free milli of GPUs with less than `milli` free;
//! - `m` takes whole GPUs: the free milli of partly used GPUs.
//!
//! The node's expected fragmentation is `F_n = sum_m p_m F_n(m)`; the cluster's is the sum
//! over nodes. FGD places a task on the node (and GPU) that increases `F_n` least. This is
//! the rule of the paper and of Alibaba's open simulator; memory is checked for fit but not
//! scored, as there.

use crate::cluster::{Node, State, Topology};
use crate::Job;

/// One task type of the workload's distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskType {
    pub gpus: u32,
    pub milli: u16,
    pub cpu_milli: u32,
    /// Allowed GPU types (bit mask over `Topology::gpu_types`); 0 = any.
    pub gpu_types: u64,
    pub p: f64,
}

/// The FGD scorer: the workload's task-type distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct Fgd {
    pub types: Vec<TaskType>,
}

impl Fgd {
    /// The distribution of `jobs` by (GPUs, share, allowed types); a type's CPU is its mean.
    pub fn from_jobs(jobs: &[Job]) -> Fgd {
        let mut map: std::collections::BTreeMap<(u32, u16, u64), (u64, u64)> =
            std::collections::BTreeMap::new();
        for j in jobs {
            let e = map.entry((j.gpus, j.milli, j.gpu_types)).or_default();
            e.0 += 1;
            e.1 += j.cpu_milli as u64;
        }
        let total = jobs.len().max(1) as f64;
        Fgd {
            types: map
                .into_iter()
                .map(|((gpus, milli, gpu_types), (c, cpu))| TaskType {
                    gpus,
                    milli,
                    cpu_milli: (cpu / c) as u32,
                    gpu_types,
                    p: c as f64 / total,
                })
                .collect(),
        }
    }

    /// `F_n` in milli-GPU for a node with per-GPU free `free` and `cpu_free` CPU.
    pub fn node(&self, node: &Node, free: &[u16], cpu_free: u32) -> f64 {
        let total: u32 = free.iter().map(|&m| m as u32).sum();
        if total == 0 {
            return 0.0;
        }
        let full = free.iter().filter(|&&m| m == 1000).count() as u32;
        let partial: u32 = free.iter().filter(|&&m| m < 1000).map(|&m| m as u32).sum();
        let mut f = 0.0;
        for m in &self.types {
            let fits_type = m.gpu_types == 0 || m.gpu_types & (1 << node.gpu_type) != 0;
            let frag = if m.gpus == 0 || !fits_type || cpu_free < m.cpu_milli {
                total
            } else if m.milli < 1000 {
                let below: u32 = free
                    .iter()
                    .filter(|&&x| x < m.milli)
                    .map(|&x| x as u32)
                    .sum();
                if below == total {
                    total
                } else {
                    below
                }
            } else if full >= m.gpus {
                partial
            } else {
                total
            };
            f += m.p * frag as f64;
        }
        f
    }

    /// The least increase of `F_n` (scaled to integer micro-milli) over the ways `job` can be
    /// put on `node`, and the GPU to use (the first GPU for whole-GPU tasks).
    pub fn delta(&self, node: &Node, free: &[u16], cpu_free: u32, job: &Job) -> (i64, u8) {
        let before = self.node(node, free, cpu_free);
        let cpu = cpu_free.saturating_sub(job.cpu_milli);
        let mut after_free: Vec<u16> = free.to_vec();
        let mut best = (i64::MAX, 0u8);
        if job.milli < 1000 {
            let mut tried: Vec<u16> = Vec::with_capacity(8);
            for (i, &m) in free.iter().enumerate() {
                if m < job.milli || tried.contains(&m) {
                    continue;
                }
                tried.push(m);
                after_free[i] = m - job.milli;
                let d = self.node(node, &after_free, cpu) - before;
                after_free[i] = m;
                let s = (d * 1000.0).round() as i64;
                if s < best.0 {
                    best = (s, i as u8);
                }
            }
        } else {
            let mut left = job.gpus;
            for x in after_free.iter_mut() {
                if left > 0 && *x == 1000 {
                    *x = 0;
                    left -= 1;
                }
            }
            let d = self.node(node, &after_free, cpu) - before;
            best = ((d * 1000.0).round() as i64, 0);
        }
        best
    }

    /// The cluster's expected fragmentation, in GPUs, over region `r`.
    pub fn cluster(&self, t: &Topology, s: &State, r: usize) -> f64 {
        let (a, b) = t.region_nodes(r);
        (a..b)
            .map(|n| self.node(&t.nodes[n], s.gpus_of(n), s.cpu_free[n]))
            .sum::<f64>()
            / 1000.0
    }
}
