//! Generated workloads: a Poisson arrival process (optionally with a daily cycle, by
//! thinning), job classes with size and duration distributions, and inference services.
//! Everything is drawn from one ChaCha8 stream of the seed.

use myriad_scenario::scheduling::{
    ConstraintSpec, DistKind, DistSpec, JobKindSpec, SchedulingSpec,
};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Constraint, Job, Kind, Service, Topology, Workload};

/// A seeded random stream.
pub struct Rng(ChaCha8Rng);

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        Rng(r)
    }
    /// Uniform in (0, 1].
    pub fn uniform(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.uniform().ln()
    }
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    pub fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n.saturating_sub(1))
    }
    /// Index drawn with the given weights.
    pub fn weighted(&mut self, w: &[f64]) -> usize {
        let total: f64 = w.iter().sum();
        let mut x = self.uniform() * total;
        for (i, &wi) in w.iter().enumerate() {
            if x <= wi {
                return i;
            }
            x -= wi;
        }
        w.len() - 1
    }
}

/// One draw of `d` (a checked spec).
pub fn sample(d: &DistSpec, rng: &mut Rng) -> f64 {
    let x = match d.dist {
        DistKind::Fixed => d.value.unwrap_or(1.0),
        DistKind::Uniform => {
            let (a, b) = (d.min.unwrap_or(0.0), d.max.unwrap_or(1.0));
            a + (b - a) * rng.uniform()
        }
        DistKind::Exponential => rng.exp(d.mean.unwrap_or(1.0)),
        DistKind::Lognormal => {
            d.median.unwrap_or(1.0) * (d.sigma.unwrap_or(0.0) * rng.normal()).exp()
        }
        DistKind::Empirical => {
            let i = if d.weights.is_empty() {
                rng.below(d.values.len())
            } else {
                rng.weighted(&d.weights)
            };
            d.values[i]
        }
    };
    x.max(d.min.unwrap_or(f64::MIN))
        .min(d.max.unwrap_or(f64::MAX))
}

/// The default daily curve of an inference service: 0.3 of the peak at 04:00, 1.0 at 16:00.
pub fn diurnal(h: usize) -> f64 {
    0.65 - 0.35 * (2.0 * std::f64::consts::PI * (h as f64 - 16.0) / 24.0).cos()
}

fn default_classes() -> Vec<myriad_scenario::scheduling::ClassSpec> {
    let s: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "classes": [{"name": "training", "size": {"dist": "lognormal", "median": 16, "sigma": 1.5, "min": 1}}]
    }))
    .expect("default class parses");
    s.classes
}

/// Generates the workload of `spec` for topology `t`.
pub fn generate(spec: &SchedulingSpec, t: &Topology, seed: u64) -> Workload {
    let classes = if spec.classes.is_empty() {
        default_classes()
    } else {
        spec.classes.clone()
    };
    let gpn = t.uniform_gpus.unwrap_or(1).max(1) as u32;
    let region_max = (0..t.regions())
        .map(|r| t.region_gpus(r))
        .min()
        .unwrap_or(0) as u32;
    let domain_gpus = t.max_nodes_per_domain * gpn;
    let pod_gpus = (0..t.pods())
        .map(|p| {
            let d0 = t.pod_first_domain[p] as usize;
            let d1 = t.pod_first_domain[p + 1] as usize;
            (t.domain_first_node[d1] - t.domain_first_node[d0]) * gpn
        })
        .max()
        .unwrap_or(0);
    // Size of one job of class c, rounded and clamped to what the cluster can hold.
    let size_of = |c: &myriad_scenario::scheduling::ClassSpec, rng: &mut Rng| -> u32 {
        let mut g = sample(&c.size, rng).round().max(1.0) as u32;
        let cap = match c.constraint {
            ConstraintSpec::Domain => domain_gpus,
            ConstraintSpec::Pod => pod_gpus,
            ConstraintSpec::None => region_max,
        };
        if let Some(k) = c.segment {
            let k = k.div_ceil(gpn) * gpn;
            g = g.div_ceil(k) * k;
            let cap = region_max / k * k;
            return g.min(cap.max(k));
        }
        if g > gpn {
            g = g.div_ceil(gpn) * gpn;
        }
        g.min((cap / gpn * gpn).max(gpn.min(cap)))
    };
    let shares: Vec<f64> = classes.iter().map(|c| c.share).collect();
    let a = &spec.arrivals;
    let gpus = t.gpus() as f64;
    let rate_per_s = match a.rate_per_hour {
        Some(r) => r / 3600.0,
        None => {
            // Offered load: rate = load * GPUs / E[GPUs * seconds], E by 20,000 draws.
            let mut rng = Rng::new(seed, 1);
            let mut m = 0.0;
            let n = 20_000;
            for _ in 0..n {
                let c = &classes[rng.weighted(&shares)];
                m += size_of(c, &mut rng) as f64 * sample(&c.duration_h, &mut rng) * 3600.0;
            }
            a.load.unwrap_or(0.8) * gpus / (m / n as f64).max(1e-9)
        }
    };
    let amp = a.daily_amplitude;
    let homes: Vec<f64> = match &spec.regions {
        Some(r) if !r.home_shares.is_empty() => (0..t.regions())
            .map(|i| r.home_shares.get(i).copied().unwrap_or(0.0))
            .collect(),
        _ => vec![1.0; t.regions()],
    };
    let homes = if homes.iter().sum::<f64>() > 0.0 {
        homes
    } else {
        vec![1.0; t.regions()]
    };
    let mut rng = Rng::new(seed, 0);
    let mut jobs = Vec::with_capacity(a.jobs as usize);
    let mut now = 0.0;
    let lmax = rate_per_s * (1.0 + amp);
    while (jobs.len() as u64) < a.jobs {
        now += rng.exp(1.0 / lmax);
        if amp > 0.0 {
            let h = (now / 3600.0) % 24.0;
            let l = rate_per_s
                * (1.0 + amp * (2.0 * std::f64::consts::PI * (h - a.peak_hour) / 24.0).cos());
            if rng.uniform() * lmax > l {
                continue;
            }
        }
        let ci = rng.weighted(&shares);
        let c = &classes[ci];
        let size = size_of(c, &mut rng);
        let dur = (sample(&c.duration_h, &mut rng) * 3600.0).max(1.0);
        let region = rng.weighted(&homes) as u16;
        let kind = match c.kind {
            JobKindSpec::Training => Kind::Training,
            JobKindSpec::Inference => Kind::Inference,
            JobKindSpec::Dev => Kind::Dev,
        };
        let constraint = match (c.segment, c.constraint) {
            (Some(k), _) => Constraint::Segment(k.div_ceil(gpn) * gpn),
            (None, ConstraintSpec::Domain) => Constraint::Domain,
            (None, ConstraintSpec::Pod) => Constraint::Pod,
            (None, ConstraintSpec::None) => Constraint::None,
        };
        let pieces: Vec<u32> = if c.gang || size <= gpn {
            vec![size]
        } else {
            vec![gpn; (size / gpn) as usize]
        };
        for g in pieces {
            if (jobs.len() as u64) >= a.jobs {
                break;
            }
            let mut j = Job::new(jobs.len() as u32, now, dur, g);
            j.class = ci as u16;
            j.kind = kind;
            j.constraint = if c.gang { constraint } else { Constraint::None };
            j.priority = c.priority;
            j.region = region;
            j.data_gb = c.data_gb;
            j.comm_share = c.comm_share;
            jobs.push(j);
        }
    }
    let mut names: Vec<String> = classes.iter().map(|c| c.name.clone()).collect();
    let services = spec
        .inference
        .iter()
        .map(|s| {
            names.push(s.name.clone());
            let mut curve = [0.0; 24];
            for (h, c) in curve.iter_mut().enumerate() {
                *c = s.curve.get(h).copied().unwrap_or_else(|| diurnal(h));
            }
            Service {
                name: s.name.clone(),
                class: (names.len() - 1) as u16,
                replica_gpus: s.replica_size,
                peak_replicas: s.peak_replicas,
                curve,
                priority: s.priority,
                region: s.region.min(t.regions().saturating_sub(1) as u32) as u16,
            }
        })
        .collect();
    Workload {
        jobs,
        classes: names,
        services,
    }
}
