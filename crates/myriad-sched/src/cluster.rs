//! The cluster as the scheduler sees it: nodes inside scale-up domains (blocks) inside pods
//! inside regions, and the free capacity of each, aggregated per level.
//!
//! Free capacity is kept per GPU in milli-GPU (1000 = a whole free GPU). Above the nodes it is
//! kept as segment counts: for every domain, pod, region and the whole cluster, a histogram
//! of its nodes by number of wholly free GPUs and a histogram of its domains by number of
//! wholly free nodes. A placement therefore descends region -> pod -> domain -> node reading
//! counts, never scanning every node, except on heterogeneous clusters (several GPU types or
//! node sizes, the openb trace), where single-node tasks are placed by a scan over the
//! region's nodes (1,523 nodes: cheap).

use crate::{Constraint, Job, Placement};

/// One server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    pub gpus: u8,
    /// Index into `Topology::gpu_types`.
    pub gpu_type: u8,
    pub cpu_milli: u32,
    pub memory_mib: u32,
}

/// Nodes grouped into scale-up domains, domains into pods, pods into regions; every group is
/// a contiguous index range of the level below.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub nodes: Vec<Node>,
    pub node_domain: Vec<u32>,
    /// `domain_first_node[d]..domain_first_node[d+1]` are domain `d`'s nodes.
    pub domain_first_node: Vec<u32>,
    pub domain_pod: Vec<u32>,
    pub pod_first_domain: Vec<u32>,
    pub pod_region: Vec<u32>,
    pub region_first_pod: Vec<u32>,
    pub region_names: Vec<String>,
    pub gpu_types: Vec<String>,
    /// GPUs per node when every node has the same count and GPU type (the fast path).
    pub uniform_gpus: Option<u8>,
    /// Most nodes in one domain.
    pub max_nodes_per_domain: u32,
    /// Bandwidth per accelerator inside a scale-up domain, a pod and a region (GB/s; the
    /// hierarchy levels of the built cluster). Jobs with a `comm_share` run slower when
    /// spread over a level with less bandwidth. Default 1, 1, 1 (no effect).
    pub gbps: [f64; 3],
    /// Each region's offset from UTC, seconds (missing: 0). Inference services follow their
    /// daily curve in their region's local time; simulation time 0 is midnight UTC.
    pub utc_offset_s: Vec<f64>,
}

impl Topology {
    /// A uniform cluster: `regions` regions of `domains_per_region` domains of
    /// `nodes_per_domain` nodes of `gpus_per_node` GPUs; pods of `domains_per_pod` domains
    /// (the last pod of a region may be smaller).
    pub fn uniform(
        region_names: &[String],
        domains_per_region: u32,
        domains_per_pod: u32,
        nodes_per_domain: u32,
        gpus_per_node: u8,
        gpu_type: &str,
    ) -> Topology {
        let dpp = domains_per_pod.max(1);
        let mut t = Topology::empty(vec![gpu_type.to_string()]);
        for (r, name) in region_names.iter().enumerate() {
            t.region_names.push(name.clone());
            let mut d_in_r = 0;
            while d_in_r < domains_per_region {
                let n = dpp.min(domains_per_region - d_in_r);
                t.pod_region.push(r as u32);
                for _ in 0..n {
                    let nodes = vec![
                        Node {
                            gpus: gpus_per_node,
                            gpu_type: 0,
                            cpu_milli: u32::MAX,
                            memory_mib: u32::MAX,
                        };
                        nodes_per_domain as usize
                    ];
                    t.push_domain(nodes);
                }
                t.pod_first_domain.push(t.domain_pod.len() as u32);
                d_in_r += n;
            }
            t.region_first_pod.push(t.pod_region.len() as u32);
        }
        t.finish();
        t
    }

    /// A heterogeneous single-region cluster from a node list (each node its own scale-up
    /// domain), pods of `nodes_per_pod` nodes.
    pub fn from_nodes(nodes: Vec<Node>, gpu_types: Vec<String>, nodes_per_pod: u32) -> Topology {
        let mut t = Topology::empty(gpu_types);
        t.region_names.push("region-0".into());
        for chunk in nodes.chunks(nodes_per_pod.max(1) as usize) {
            t.pod_region.push(0);
            for n in chunk {
                t.push_domain(vec![*n]);
            }
            t.pod_first_domain.push(t.domain_pod.len() as u32);
        }
        t.region_first_pod.push(t.pod_region.len() as u32);
        t.finish();
        t
    }

    fn empty(gpu_types: Vec<String>) -> Topology {
        Topology {
            nodes: vec![],
            node_domain: vec![],
            domain_first_node: vec![0],
            domain_pod: vec![],
            pod_first_domain: vec![0],
            pod_region: vec![],
            region_first_pod: vec![0],
            region_names: vec![],
            gpu_types,
            uniform_gpus: None,
            max_nodes_per_domain: 0,
            gbps: [1.0; 3],
            utc_offset_s: vec![],
        }
    }

    fn push_domain(&mut self, nodes: Vec<Node>) {
        let d = self.domain_pod.len() as u32;
        self.domain_pod.push(self.pod_region.len() as u32 - 1);
        self.max_nodes_per_domain = self.max_nodes_per_domain.max(nodes.len() as u32);
        for n in nodes {
            self.nodes.push(n);
            self.node_domain.push(d);
        }
        self.domain_first_node.push(self.nodes.len() as u32);
    }

    fn finish(&mut self) {
        let first = self.nodes.first().copied();
        self.uniform_gpus = first.and_then(|f| {
            self.nodes
                .iter()
                .all(|n| n.gpus == f.gpus && n.gpu_type == f.gpu_type && n.gpus > 0)
                .then_some(f.gpus)
        });
    }

    pub fn domains(&self) -> usize {
        self.domain_pod.len()
    }
    pub fn pods(&self) -> usize {
        self.pod_region.len()
    }
    pub fn regions(&self) -> usize {
        self.region_names.len()
    }
    /// GPUs in the cluster.
    pub fn gpus(&self) -> u64 {
        self.nodes.iter().map(|n| n.gpus as u64).sum()
    }
    /// Region `r`'s offset from UTC, seconds.
    pub fn utc_offset_s(&self, r: usize) -> f64 {
        self.utc_offset_s.get(r).copied().unwrap_or(0.0)
    }
    /// GPUs in region `r`.
    pub fn region_gpus(&self, r: usize) -> u64 {
        let (a, b) = self.region_nodes(r);
        self.nodes[a..b].iter().map(|n| n.gpus as u64).sum()
    }
    /// Node index range of region `r`.
    pub fn region_nodes(&self, r: usize) -> (usize, usize) {
        let p0 = self.region_first_pod[r] as usize;
        let p1 = self.region_first_pod[r + 1] as usize;
        let d0 = self.pod_first_domain[p0] as usize;
        let d1 = self.pod_first_domain[p1] as usize;
        (
            self.domain_first_node[d0] as usize,
            self.domain_first_node[d1] as usize,
        )
    }
    fn pod_domains(&self, p: usize) -> std::ops::Range<usize> {
        self.pod_first_domain[p] as usize..self.pod_first_domain[p + 1] as usize
    }
    fn domain_nodes(&self, d: usize) -> std::ops::Range<usize> {
        self.domain_first_node[d] as usize..self.domain_first_node[d + 1] as usize
    }
    fn region_pods(&self, r: usize) -> std::ops::Range<usize> {
        self.region_first_pod[r] as usize..self.region_first_pod[r + 1] as usize
    }
}

/// Placement modes (how a fitting place is chosen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Lowest index that fits.
    FirstFit,
    /// Tightest fit: the node (or domain) with the least free capacity that still fits.
    BestFit,
    /// Slurm topology/tree + block, Kueue "preferred": the smallest level (domain, then pod)
    /// that holds the whole job, best fit at that level; otherwise the fewest pods.
    Topology,
    /// Fragmentation gradient descent (Weng et al., ATC'23) for single-node tasks; multi-node
    /// jobs as `Topology`.
    Fgd,
}

/// One piece of an allocation: `milli` of GPU `gpu` of node `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub node: u32,
    pub gpu: u8,
    pub milli: u16,
}

/// Free capacity with per-level segment counts.
#[derive(Debug, Clone)]
pub struct State {
    first_gpu: Vec<u32>,
    pub gpu_free: Vec<u16>,
    pub node_full: Vec<u8>,
    pub cpu_free: Vec<u32>,
    pub mem_free: Vec<u32>,
    pub dom_free_nodes: Vec<u32>,
    pub pod_free_nodes: Vec<u32>,
    pub reg_free_nodes: Vec<u64>,
    /// Wholly free GPUs per region.
    pub reg_free_full: Vec<u64>,
    /// Allocated milli-GPU per region.
    pub reg_used_milli: Vec<u64>,
    ns: usize,
    nh_dom: Vec<u32>,
    nh_pod: Vec<u32>,
    nh_reg: Vec<u32>,
    ds: usize,
    dh_pod: Vec<u32>,
    dh_reg: Vec<u32>,
}

fn is_free(n: &Node, full: u8) -> bool {
    n.gpus > 0 && full == n.gpus
}

impl State {
    pub fn new(t: &Topology) -> State {
        let ns = t.nodes.iter().map(|n| n.gpus as usize).max().unwrap_or(0) + 1;
        let ds = t.max_nodes_per_domain as usize + 1;
        let mut first_gpu = Vec::with_capacity(t.nodes.len() + 1);
        let mut g = 0u32;
        for n in &t.nodes {
            first_gpu.push(g);
            g += n.gpus as u32;
        }
        first_gpu.push(g);
        let mut s = State {
            first_gpu,
            gpu_free: vec![1000; g as usize],
            node_full: t.nodes.iter().map(|n| n.gpus).collect(),
            cpu_free: t.nodes.iter().map(|n| n.cpu_milli).collect(),
            mem_free: t.nodes.iter().map(|n| n.memory_mib).collect(),
            dom_free_nodes: vec![0; t.domains()],
            pod_free_nodes: vec![0; t.pods()],
            reg_free_nodes: vec![0; t.regions()],
            reg_free_full: vec![0; t.regions()],
            reg_used_milli: vec![0; t.regions()],
            ns,
            nh_dom: vec![0; t.domains() * ns],
            nh_pod: vec![0; t.pods() * ns],
            nh_reg: vec![0; t.regions() * ns],
            ds,
            dh_pod: vec![0; t.pods() * ds],
            dh_reg: vec![0; t.regions() * ds],
        };
        for (i, n) in t.nodes.iter().enumerate() {
            let d = t.node_domain[i] as usize;
            let p = t.domain_pod[d] as usize;
            let r = t.pod_region[p] as usize;
            let k = n.gpus as usize;
            s.nh_dom[d * ns + k] += 1;
            s.nh_pod[p * ns + k] += 1;
            s.nh_reg[r * ns + k] += 1;
            s.reg_free_full[r] += k as u64;
            if n.gpus > 0 {
                s.dom_free_nodes[d] += 1;
                s.pod_free_nodes[p] += 1;
                s.reg_free_nodes[r] += 1;
            }
        }
        for d in 0..t.domains() {
            let p = t.domain_pod[d] as usize;
            let r = t.pod_region[p] as usize;
            let k = s.dom_free_nodes[d] as usize;
            s.dh_pod[p * ds + k] += 1;
            s.dh_reg[r * ds + k] += 1;
        }
        s
    }

    /// Index of GPU `gpu` of node `node` in `gpu_free`.
    pub fn gpu_index(&self, node: usize, gpu: u8) -> usize {
        self.first_gpu[node] as usize + gpu as usize
    }

    pub fn gpus_of(&self, node: usize) -> &[u16] {
        &self.gpu_free[self.first_gpu[node] as usize..self.first_gpu[node + 1] as usize]
    }

    /// Takes (`take = true`) or gives back the GPU pieces.
    pub fn apply(&mut self, t: &Topology, pieces: &[Piece], take: bool) {
        // The region and its milli-GPU total are settled once per run of pieces on a node.
        let mut last = u32::MAX;
        let (mut r, mut sum) = (0usize, 0u64);
        for pc in pieces {
            if pc.node != last {
                if last != u32::MAX {
                    self.settle(t, last as usize, r, sum, take);
                }
                last = pc.node;
                let n = pc.node as usize;
                r = t.pod_region[t.domain_pod[t.node_domain[n] as usize] as usize] as usize;
                sum = 0;
            }
            let g = self.first_gpu[pc.node as usize] as usize + pc.gpu as usize;
            if take {
                self.gpu_free[g] -= pc.milli;
            } else {
                self.gpu_free[g] += pc.milli;
            }
            sum += pc.milli as u64;
        }
        if last != u32::MAX {
            self.settle(t, last as usize, r, sum, take);
        }
    }

    fn settle(&mut self, t: &Topology, n: usize, r: usize, sum: u64, take: bool) {
        if take {
            self.reg_used_milli[r] += sum;
        } else {
            self.reg_used_milli[r] -= sum;
        }
        self.refresh(t, n);
    }

    /// Takes or gives back a task's CPU and memory on `node`.
    pub fn apply_cpu(&mut self, node: usize, cpu: u32, mem: u32, take: bool) {
        if take {
            self.cpu_free[node] -= cpu;
            self.mem_free[node] -= mem;
        } else {
            self.cpu_free[node] += cpu;
            self.mem_free[node] += mem;
        }
    }

    fn refresh(&mut self, t: &Topology, n: usize) {
        let full = self.gpus_of(n).iter().filter(|&&m| m == 1000).count() as u8;
        let old = self.node_full[n];
        if full == old {
            return;
        }
        let node = &t.nodes[n];
        let d = t.node_domain[n] as usize;
        let p = t.domain_pod[d] as usize;
        let r = t.pod_region[p] as usize;
        let ns = self.ns;
        for (h, i) in [
            (&mut self.nh_dom, d),
            (&mut self.nh_pod, p),
            (&mut self.nh_reg, r),
        ] {
            h[i * ns + old as usize] -= 1;
            h[i * ns + full as usize] += 1;
        }
        self.reg_free_full[r] = self.reg_free_full[r] + full as u64 - old as u64;
        self.node_full[n] = full;
        let (was, now) = (is_free(node, old), is_free(node, full));
        if was != now {
            let ds = self.ds;
            let k = self.dom_free_nodes[d] as usize;
            let k2 = if now { k + 1 } else { k - 1 };
            self.dom_free_nodes[d] = k2 as u32;
            for (h, i) in [(&mut self.dh_pod, p), (&mut self.dh_reg, r)] {
                h[i * ds + k] -= 1;
                h[i * ds + k2] += 1;
            }
            if now {
                self.pod_free_nodes[p] += 1;
                self.reg_free_nodes[r] += 1;
            } else {
                self.pod_free_nodes[p] -= 1;
                self.reg_free_nodes[r] -= 1;
            }
        }
    }

    /// Wholly free GPUs of region `r` that sit in wholly free domains.
    pub fn free_in_free_domains(&self, t: &Topology, r: usize) -> u64 {
        let mut s = 0;
        for p in t.region_pods(r) {
            for d in t.pod_domains(p) {
                let nodes = t.domain_nodes(d);
                if self.dom_free_nodes[d] as usize == nodes.len() {
                    s += nodes.map(|n| t.nodes[n].gpus as u64).sum::<u64>();
                }
            }
        }
        s
    }

    /// Wholly free GPUs of region `r` on wholly free nodes.
    pub fn free_in_free_nodes(&self, t: &Topology, r: usize) -> u64 {
        match t.uniform_gpus {
            Some(g) => self.reg_free_nodes[r] * g as u64,
            None => {
                let (a, b) = t.region_nodes(r);
                (a..b)
                    .filter(|&n| is_free(&t.nodes[n], self.node_full[n]))
                    .map(|n| t.nodes[n].gpus as u64)
                    .sum()
            }
        }
    }

    /// Consistency of the aggregates with the per-GPU state; `Err` names the first mismatch.
    pub fn check(&self, t: &Topology) -> Result<(), String> {
        let fresh = {
            let mut s = State::new(t);
            s.gpu_free.clone_from(&self.gpu_free);
            s.cpu_free.clone_from(&self.cpu_free);
            s.mem_free.clone_from(&self.mem_free);
            for n in 0..t.nodes.len() {
                s.refresh(t, n);
            }
            s.reg_used_milli.clone_from(&self.reg_used_milli);
            s
        };
        for (i, &g) in self.gpu_free.iter().enumerate() {
            if g > 1000 {
                return Err(format!("GPU {i} has {g} milli free (more than one GPU)"));
            }
        }
        for (n, node) in t.nodes.iter().enumerate() {
            if self.cpu_free[n] > node.cpu_milli || self.mem_free[n] > node.memory_mib {
                return Err(format!("node {n}: CPU or memory over-released"));
            }
        }
        if fresh.node_full != self.node_full
            || fresh.dom_free_nodes != self.dom_free_nodes
            || fresh.pod_free_nodes != self.pod_free_nodes
            || fresh.reg_free_nodes != self.reg_free_nodes
            || fresh.reg_free_full != self.reg_free_full
            || fresh.nh_dom != self.nh_dom
            || fresh.nh_pod != self.nh_pod
            || fresh.nh_reg != self.nh_reg
            || fresh.dh_pod != self.dh_pod
            || fresh.dh_reg != self.dh_reg
        {
            return Err("aggregated free counts differ from the per-GPU state".into());
        }
        if let Some(g) = t.uniform_gpus {
            if let Some(n) = t.nodes.iter().position(|n| n.gpus != g) {
                return Err(format!(
                    "node {n} has {} GPUs but the topology says every node has {g} (uniform_gpus)",
                    t.nodes[n].gpus
                ));
            }
        }
        for r in 0..t.regions() {
            // The fragmentation figures against a recount from the per-GPU state.
            let whole =
                |n: usize| t.nodes[n].gpus > 0 && self.gpus_of(n).iter().all(|&m| m == 1000);
            let (a, b) = t.region_nodes(r);
            let nodes: u64 = (a..b)
                .filter(|&n| whole(n))
                .map(|n| u64::from(t.nodes[n].gpus))
                .sum();
            let doms: u64 = t
                .region_pods(r)
                .flat_map(|p| t.pod_domains(p))
                .filter(|&d| t.domain_nodes(d).all(whole))
                .map(|d| {
                    t.domain_nodes(d)
                        .map(|n| u64::from(t.nodes[n].gpus))
                        .sum::<u64>()
                })
                .sum();
            let (fn_, fd) = (
                self.free_in_free_nodes(t, r),
                self.free_in_free_domains(t, r),
            );
            if (fn_, fd) != (nodes, doms) {
                return Err(format!(
                    "region {r}: {fn_} GPUs on free nodes and {fd} in free domains counted, {nodes} and {doms} recounted"
                ));
            }
            let used: u64 = (a..b)
                .flat_map(|n| self.gpus_of(n).iter().map(|&m| 1000 - m as u64))
                .sum();
            if used != self.reg_used_milli[r] {
                return Err(format!(
                    "region {r}: {used} milli allocated but {} counted",
                    self.reg_used_milli[r]
                ));
            }
        }
        Ok(())
    }

    fn any_ge(h: &[u32], k: usize) -> bool {
        h.iter().skip(k).any(|&c| c > 0)
    }
    fn smallest_ge(h: &[u32], k: usize) -> Option<usize> {
        (k..h.len()).find(|&i| h[i] > 0)
    }

    /// Where `job` could go in region `r` now, or `None`. Reads only.
    pub fn find(
        &self,
        t: &Topology,
        job: &Job,
        mode: Mode,
        r: usize,
        frag: Option<&crate::frag::Fgd>,
    ) -> Option<Placement> {
        if job.milli < 1000 || job.gpus == 0 {
            return self.find_scan(t, job, mode, r, frag);
        }
        match t.uniform_gpus {
            Some(g) if job.gpus > g as u32 => self.find_multi(t, job, mode, r, g),
            Some(_) if job.gpu_types == 0 && mode != Mode::Fgd => {
                if self.reg_free_full[r] < job.gpus as u64 {
                    return None;
                }
                self.find_node_uniform(t, job.gpus as usize, mode, r)
                    .map(|n| self.whole_gpus(n, job.gpus))
            }
            _ => self.find_scan(t, job, mode, r, frag),
        }
    }

    fn whole_gpus(&self, n: usize, k: u32) -> Placement {
        let mut pieces = Vec::with_capacity(k as usize);
        for (i, &m) in self.gpus_of(n).iter().enumerate() {
            if pieces.len() == k as usize {
                break;
            }
            if m == 1000 {
                pieces.push(Piece {
                    node: n as u32,
                    gpu: i as u8,
                    milli: 1000,
                });
            }
        }
        Placement {
            pieces,
            cpu_node: n as u32,
        }
    }

    /// One node with at least `k` wholly free GPUs on a uniform cluster, via the histograms.
    fn find_node_uniform(&self, t: &Topology, k: usize, mode: Mode, r: usize) -> Option<usize> {
        let ns = self.ns;
        match mode {
            Mode::FirstFit => {
                let p = t
                    .region_pods(r)
                    .find(|&p| Self::any_ge(&self.nh_pod[p * ns..(p + 1) * ns], k))?;
                let d = t
                    .pod_domains(p)
                    .find(|&d| Self::any_ge(&self.nh_dom[d * ns..(d + 1) * ns], k))?;
                t.domain_nodes(d).find(|&n| self.node_full[n] as usize >= k)
            }
            _ => {
                let want = Self::smallest_ge(&self.nh_reg[r * ns..(r + 1) * ns], k)?;
                let p = t.region_pods(r).find(|&p| self.nh_pod[p * ns + want] > 0)?;
                let d = t.pod_domains(p).find(|&d| self.nh_dom[d * ns + want] > 0)?;
                t.domain_nodes(d)
                    .find(|&n| self.node_full[n] as usize == want)
            }
        }
    }

    /// Multi-node gang jobs on a uniform cluster: whole free nodes, `ceil(gpus / g)` of them.
    fn find_multi(
        &self,
        t: &Topology,
        job: &Job,
        mode: Mode,
        r: usize,
        g: u8,
    ) -> Option<Placement> {
        let need = job.gpus.div_ceil(g as u32) as usize;
        // A node the job may take: wholly free and of one of its GPU types (as `find_scan`
        // checks each node; regions, or nodes within one, may hold different types).
        let ok = |n: usize| {
            is_free(&t.nodes[n], self.node_full[n]) && job.allows_type(t.nodes[n].gpu_type)
        };
        // Free nodes the job may take per domain and per pod of region `r`: the aggregates
        // for an untyped job, counted over the region's nodes for a typed one.
        let typed = job.gpu_types != 0;
        let pods = t.region_pods(r);
        let (p0, d0) = (pods.start, t.pod_first_domain[pods.start] as usize);
        let (mut dom_ok, mut pod_ok) = (Vec::new(), Vec::new());
        if typed {
            dom_ok = vec![0u32; t.pod_first_domain[pods.end] as usize - d0];
            pod_ok = vec![0u32; pods.len()];
            for p in t.region_pods(r) {
                for d in t.pod_domains(p) {
                    let k = t.domain_nodes(d).filter(|&n| ok(n)).count() as u32;
                    dom_ok[d - d0] = k;
                    pod_ok[p - p0] += k;
                }
            }
        }
        let dom_free = |d: usize| -> usize {
            if typed {
                dom_ok[d - d0] as usize
            } else {
                self.dom_free_nodes[d] as usize
            }
        };
        let pod_free = |p: usize| -> usize {
            if typed {
                pod_ok[p - p0] as usize
            } else {
                self.pod_free_nodes[p] as usize
            }
        };
        let reg_free = if typed {
            pod_ok.iter().map(|&k| k as usize).sum()
        } else {
            self.reg_free_nodes[r] as usize
        };
        if reg_free < need {
            return None;
        }
        let ds = self.ds;
        let one_domain = |best: bool| -> Option<usize> {
            if need >= ds {
                return None;
            }
            if typed {
                // The same choice as the histograms' below, read from the counts: the first
                // domain (in index order) with the fewest (best fit) or any (first fit)
                // nodes enough.
                let mut doms = t
                    .region_pods(r)
                    .flat_map(|p| t.pod_domains(p))
                    .filter(|&d| dom_free(d) >= need);
                return if best {
                    doms.min_by_key(|&d| dom_free(d))
                } else {
                    doms.next()
                };
            }
            if best {
                let want = Self::smallest_ge(&self.dh_reg[r * ds..(r + 1) * ds], need)?;
                let p = t.region_pods(r).find(|&p| self.dh_pod[p * ds + want] > 0)?;
                t.pod_domains(p).find(|&d| dom_free(d) == want)
            } else {
                let p = t
                    .region_pods(r)
                    .find(|&p| Self::any_ge(&self.dh_pod[p * ds..(p + 1) * ds], need))?;
                t.pod_domains(p).find(|&d| dom_free(d) >= need)
            }
        };
        let mut nodes: Vec<usize> = Vec::with_capacity(need);
        let take_from = |d: usize, max: usize, nodes: &mut Vec<usize>| {
            for n in t.domain_nodes(d) {
                if nodes.len() >= max {
                    break;
                }
                if ok(n) {
                    nodes.push(n);
                }
            }
        };
        let best = mode != Mode::FirstFit;
        match job.constraint {
            Constraint::Domain => {
                let d = one_domain(best)?;
                take_from(d, need, &mut nodes);
            }
            Constraint::Pod => {
                let p = if best {
                    t.region_pods(r)
                        .filter(|&p| pod_free(p) >= need)
                        .min_by_key(|&p| pod_free(p))?
                } else {
                    t.region_pods(r).find(|&p| pod_free(p) >= need)?
                };
                self.fill_pod(t, p, need, mode, &dom_free, &ok, &mut nodes);
            }
            Constraint::Segment(k) => {
                let per = (k / g as u32).max(1) as usize;
                if !need.is_multiple_of(per) {
                    return None;
                }
                let segs = need / per;
                let cap = |p: usize| -> usize { t.pod_domains(p).map(|d| dom_free(d) / per).sum() };
                let mut pods: Vec<usize> =
                    t.region_pods(r).filter(|&p| pod_free(p) >= per).collect();
                if best {
                    // The tightest single pod that holds every segment; else pods fullest of
                    // segments first (fewest pods).
                    let caps: Vec<usize> = pods.iter().map(|&p| cap(p)).collect();
                    if let Some(i) = (0..pods.len())
                        .filter(|&i| caps[i] >= segs)
                        .min_by_key(|&i| caps[i])
                    {
                        pods = vec![pods[i]];
                    } else {
                        let mut idx: Vec<usize> = (0..pods.len()).collect();
                        idx.sort_by_key(|&i| std::cmp::Reverse(caps[i]));
                        pods = idx.into_iter().map(|i| pods[i]).collect();
                    }
                }
                let mut left = segs;
                'outer: for p in pods {
                    let mut doms: Vec<usize> =
                        t.pod_domains(p).filter(|&d| dom_free(d) >= per).collect();
                    if best {
                        doms.sort_by_key(|&d| dom_free(d) % per);
                    }
                    for d in doms {
                        let s = (dom_free(d) / per).min(left);
                        take_from(d, nodes.len() + s * per, &mut nodes);
                        left -= s;
                        if left == 0 {
                            break 'outer;
                        }
                    }
                }
                if left > 0 {
                    return None;
                }
            }
            Constraint::None => {
                if best {
                    if let Some(d) = one_domain(true) {
                        take_from(d, need, &mut nodes);
                    }
                }
                let tightest_pod = || {
                    t.region_pods(r)
                        .filter(|&p| pod_free(p) >= need)
                        .min_by_key(|&p| pod_free(p))
                };
                let done = !nodes.is_empty();
                if done {
                    // One domain holds it.
                } else if mode == Mode::FirstFit || mode == Mode::BestFit {
                    // Lowest-index free nodes, pod by pod.
                    for p in t.region_pods(r) {
                        if pod_free(p) > 0 {
                            self.fill_pod(t, p, need, Mode::FirstFit, &dom_free, &ok, &mut nodes);
                        }
                        if nodes.len() >= need {
                            break;
                        }
                    }
                } else if let Some(p) = tightest_pod() {
                    // Topology: the tightest pod that holds the job.
                    self.fill_pod(t, p, need, mode, &dom_free, &ok, &mut nodes);
                } else {
                    // Topology, no pod holds it: pods with the most free nodes first.
                    let mut pods: Vec<usize> =
                        t.region_pods(r).filter(|&p| pod_free(p) > 0).collect();
                    pods.sort_by_key(|&p| std::cmp::Reverse(pod_free(p)));
                    for p in pods {
                        self.fill_pod(t, p, need, mode, &dom_free, &ok, &mut nodes);
                        if nodes.len() >= need {
                            break;
                        }
                    }
                }
            }
        }
        if nodes.len() < need {
            return None;
        }
        let mut pieces = Vec::with_capacity(need * g as usize);
        for &n in &nodes {
            for gi in 0..g {
                pieces.push(Piece {
                    node: n as u32,
                    gpu: gi,
                    milli: 1000,
                });
            }
        }
        Some(Placement {
            cpu_node: nodes[0] as u32,
            pieces,
        })
    }

    /// Adds the nodes of pod `p` the job may take (`ok`; `dom_free` of them per domain) to
    /// `nodes` until it holds `need`: index order (first-fit), or domains with the most such
    /// nodes first (fewest domains spanned).
    #[allow(clippy::too_many_arguments)]
    fn fill_pod(
        &self,
        t: &Topology,
        p: usize,
        need: usize,
        mode: Mode,
        dom_free: &dyn Fn(usize) -> usize,
        ok: &dyn Fn(usize) -> bool,
        nodes: &mut Vec<usize>,
    ) {
        let mut doms: Vec<usize> = t.pod_domains(p).filter(|&d| dom_free(d) > 0).collect();
        if mode != Mode::FirstFit {
            doms.sort_by_key(|&d| std::cmp::Reverse(dom_free(d)));
        }
        for d in doms {
            for n in t.domain_nodes(d) {
                if nodes.len() >= need {
                    return;
                }
                if ok(n) {
                    nodes.push(n);
                }
            }
        }
    }

    /// Single-node tasks by a scan over the region's nodes (heterogeneous clusters, GPU
    /// sharing, GPU-type constraints, FGD).
    fn find_scan(
        &self,
        t: &Topology,
        job: &Job,
        mode: Mode,
        r: usize,
        frag: Option<&crate::frag::Fgd>,
    ) -> Option<Placement> {
        let (a, b) = t.region_nodes(r);
        let mut best: Option<(i64, i64, usize, u8)> = None;
        let mut seen: std::collections::HashMap<(u8, [u16; 8], u32), (i64, u16)> =
            std::collections::HashMap::new();
        for n in a..b {
            let node = &t.nodes[n];
            if job.gpus > node.gpus as u32
                || self.cpu_free[n] < job.cpu_milli
                || self.mem_free[n] < job.memory_mib
                || (job.gpus > 0 && !job.allows_type(node.gpu_type))
            {
                continue;
            }
            let free = self.gpus_of(n);
            // The GPU for a shared task: the fullest GPU that still fits (best fit), or the
            // first (first fit).
            let gpu = if job.gpus == 0 {
                0
            } else if job.milli < 1000 {
                let mut pick: Option<(u16, u8)> = None;
                for (i, &m) in free.iter().enumerate() {
                    if m >= job.milli && pick.is_none_or(|(pm, _)| mode != Mode::FirstFit && m < pm)
                    {
                        pick = Some((m, i as u8));
                    }
                }
                match pick {
                    Some((_, i)) => i,
                    None => continue,
                }
            } else {
                if (self.node_full[n] as u32) < job.gpus {
                    continue;
                }
                0
            };
            if mode == Mode::FirstFit {
                best = Some((0, 0, n, gpu));
                break;
            }
            let total: i64 = free.iter().map(|&m| m as i64).sum();
            let (score, gpu) = match (mode, frag) {
                (Mode::Fgd, Some(f)) if job.gpus > 0 => {
                    let mut key = [0u16; 8];
                    for (i, &m) in free.iter().enumerate().take(8) {
                        key[i] = m;
                    }
                    key.sort_unstable();
                    let k = (node.gpu_type, key, self.cpu_free[n]);
                    if let Some(&(s, lvl)) = seen.get(&k) {
                        // Same state, same score: the GPU at the same free level on this node.
                        let gi = free.iter().position(|&m| m == lvl).unwrap_or(0) as u8;
                        (s, gi)
                    } else {
                        let (s, gi) = f.delta(node, free, self.cpu_free[n], job);
                        seen.insert(k, (s, free[gi as usize]));
                        (s, gi)
                    }
                }
                _ => {
                    let used = if job.milli < 1000 {
                        job.milli as i64
                    } else {
                        1000 * job.gpus as i64
                    };
                    (total - used, gpu)
                }
            };
            let tie = self.cpu_free[n] as i64 - job.cpu_milli as i64;
            if best.is_none_or(|(s, c, _, _)| (score, tie) < (s, c)) {
                best = Some((score, tie, n, gpu));
            }
        }
        let (_, _, n, gpu) = best?;
        if job.gpus == 0 {
            return Some(Placement {
                pieces: vec![],
                cpu_node: n as u32,
            });
        }
        if job.milli < 1000 {
            return Some(Placement {
                pieces: vec![Piece {
                    node: n as u32,
                    gpu,
                    milli: job.milli,
                }],
                cpu_node: n as u32,
            });
        }
        Some(self.whole_gpus(n, job.gpus))
    }
}
