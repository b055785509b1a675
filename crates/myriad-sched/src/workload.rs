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

/// `g` rounded up to a multiple of `k`, at most `u32::MAX`: a size past what `u32` holds is
/// a job no cluster holds (rejected), never one that wraps to a few or no accelerators.
pub fn round_up(g: u32, k: u32) -> u32 {
    let k = u64::from(k.max(1));
    u32::try_from(u64::from(g).div_ceil(k) * k).unwrap_or(u32::MAX)
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

/// The largest job sizes topology `t` can hold: per region, scale-up domain and pod (the
/// largest of each: regions may differ in size, and a job too large for its home region runs
/// in one that holds it under cross-region routing, rejected `too-large` elsewhere).
struct Caps {
    gpn: u32,
    region_max: u32,
    domain_gpus: u32,
    pod_gpus: u32,
}

impl Caps {
    fn of(t: &Topology) -> Caps {
        let gpn = t.uniform_gpus.unwrap_or(1).max(1) as u32;
        let region_max = (0..t.regions())
            .map(|r| t.region_gpus(r))
            .max()
            .unwrap_or(0)
            .min(u64::from(u32::MAX)) as u32;
        let domain_gpus = t.max_nodes_per_domain.saturating_mul(gpn);
        let pod_gpus = (0..t.pods())
            .map(|p| {
                let d0 = t.pod_first_domain[p] as usize;
                let d1 = t.pod_first_domain[p + 1] as usize;
                (t.domain_first_node[d1] - t.domain_first_node[d0]).saturating_mul(gpn)
            })
            .max()
            .unwrap_or(0);
        Caps {
            gpn,
            region_max,
            domain_gpus,
            pod_gpus,
        }
    }

    /// The largest job of class `c` and what bounds it.
    fn cap(&self, c: &myriad_scenario::scheduling::ClassSpec) -> (u32, &'static str) {
        if let Some(k) = c.segment {
            let k = round_up(k, self.gpn);
            return (
                (self.region_max / k * k).max(k),
                "region (in whole segments)",
            );
        }
        let (cap, what) = match c.constraint {
            ConstraintSpec::Domain => (self.domain_gpus, "scale-up domain"),
            ConstraintSpec::Pod => (self.pod_gpus, "pod"),
            ConstraintSpec::None => (self.region_max, "region"),
        };
        ((cap / self.gpn * self.gpn).max(self.gpn.min(cap)), what)
    }

    /// The size of a job of class `c` drawn as `x`: rounded up to whole nodes (or
    /// segments), then clamped to the class's cap.
    fn fit(&self, c: &myriad_scenario::scheduling::ClassSpec, x: f64) -> u32 {
        let mut g = x.round().max(1.0) as u32;
        if let Some(k) = c.segment {
            g = round_up(g, round_up(k, self.gpn));
        } else if g > self.gpn {
            g = round_up(g, self.gpn);
        }
        g.min(self.cap(c).0)
    }
}

/// The smallest value distribution `d` can draw.
fn smallest_draw(d: &DistSpec) -> f64 {
    let x = match d.dist {
        DistKind::Fixed => d.value.unwrap_or(1.0),
        DistKind::Uniform => d.min.unwrap_or(0.0),
        DistKind::Exponential | DistKind::Lognormal => 0.0,
        DistKind::Empirical => d.values.iter().copied().fold(f64::INFINITY, f64::min),
    };
    x.max(d.min.unwrap_or(f64::MIN))
        .min(d.max.unwrap_or(f64::MAX))
}

/// Refuses a class whose every job is larger than the cluster could hold (a fixed size, or a
/// distribution's `min`, past its region, scale-up domain or pod): such a class was silently
/// shrunk to the cap. Draws from a distribution's tail past the cap are clamped to it.
/// Errors are `(path under scheduling, message)`.
pub fn check_sizes(spec: &SchedulingSpec, t: &Topology) -> Result<(), (String, String)> {
    let caps = Caps::of(t);
    for (i, c) in spec.classes.iter().enumerate() {
        // Each segment sits inside one scale-up domain: a larger one has no place, and every
        // job of the class was rejected (`constraint`).
        if let Some(k) = c.segment {
            let k = round_up(k, caps.gpn);
            if k > caps.domain_gpus {
                return Err((
                    format!("classes[{i}].segment"),
                    format!(
                        "{k} accelerators per segment, but the largest scale-up domain holds {}; a segment must fit in one",
                        caps.domain_gpus
                    ),
                ));
            }
        }
        let (cap, what) = caps.cap(c);
        let least = smallest_draw(&c.size);
        if least.round() > f64::from(cap) {
            return Err((
                format!("classes[{i}].size"),
                format!(
                    "every job of this class needs at least {least} accelerators, but the largest {what} holds {cap}"
                ),
            ));
        }
    }
    Ok(())
}

/// Generates the workload of `spec` for topology `t`.
pub fn generate(spec: &SchedulingSpec, t: &Topology, seed: u64) -> Workload {
    let classes = if spec.classes.is_empty() {
        default_classes()
    } else {
        spec.classes.clone()
    };
    let caps = Caps::of(t);
    // Size of one job of class c, rounded and clamped to what the cluster can hold (a draw
    // from a distribution's tail; a class whose every draw is too large is refused by
    // `check_sizes`).
    let size_of = |c: &myriad_scenario::scheduling::ClassSpec, rng: &mut Rng| -> u32 {
        caps.fit(c, sample(&c.size, rng))
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
    // The daily cycle runs in each home region's local time: with regions in other time
    // zones the home is drawn first and thins by its own hour (regions in UTC keep the draw
    // order of one cycle).
    let local = (0..t.regions()).any(|r| t.utc_offset_s(r) != 0.0);
    while (jobs.len() as u64) < a.jobs {
        now += rng.exp(1.0 / lmax);
        let mut home = None;
        if amp > 0.0 {
            let off = if local {
                let r = rng.weighted(&homes);
                home = Some(r);
                t.utc_offset_s(r)
            } else {
                0.0
            };
            let h = ((now + off) / 3600.0).rem_euclid(24.0);
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
        let region = home.unwrap_or_else(|| rng.weighted(&homes)) as u16;
        let kind = match c.kind {
            JobKindSpec::Training => Kind::Training,
            JobKindSpec::Inference => Kind::Inference,
            JobKindSpec::Dev => Kind::Dev,
        };
        let constraint = match (c.segment, c.constraint) {
            (Some(k), _) => Constraint::Segment(round_up(k, caps.gpn)),
            (None, ConstraintSpec::Domain) => Constraint::Domain,
            (None, ConstraintSpec::Pod) => Constraint::Pod,
            (None, ConstraintSpec::None) => Constraint::None,
        };
        let pieces: Vec<u32> = if c.gang || size <= caps.gpn {
            vec![size]
        } else {
            vec![caps.gpn; (size / caps.gpn) as usize]
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
    let services = services(spec, t, &mut names);
    Workload {
        jobs,
        classes: names,
        services,
    }
}

/// The inference services of `spec`; their classes are appended to `names`.
pub fn services(spec: &SchedulingSpec, t: &Topology, names: &mut Vec<String>) -> Vec<Service> {
    spec.inference
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
        .collect()
}

/// Parses a CSV job trace (see `TraceSpec::csv`) for topology `t`: sizes above one node
/// are rounded up to whole nodes (whole segments with `segment`). Errors name the line and
/// column. Returns the jobs (by arrival) and the class names in order of first appearance.
pub fn parse_csv(text: &str, t: &Topology) -> Result<(Vec<Job>, Vec<String>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or("empty file")?;
    let cols: Vec<String> = head.split(',').map(|c| c.trim().to_string()).collect();
    const KNOWN: [&str; 11] = [
        "arrival_s",
        "duration_s",
        "accelerators",
        "class",
        "kind",
        "priority",
        "constraint",
        "segment",
        "region",
        "data_gb",
        "comm_share",
    ];
    for c in &cols {
        if !KNOWN.contains(&c.as_str()) {
            return Err(format!(
                "line 1: unknown column `{c}`; expected {}",
                KNOWN.join(", ")
            ));
        }
    }
    for need in &KNOWN[..3] {
        if !cols.iter().any(|c| c == need) {
            return Err(format!("line 1: missing column `{need}`"));
        }
    }
    let gpn = t.uniform_gpus.unwrap_or(1).max(1) as u32;
    let mut classes: Vec<String> = vec![];
    let mut jobs = vec![];
    for (i, line) in lines {
        let ln = i + 1;
        let v: Vec<&str> = line.split(',').map(|x| x.trim()).collect();
        if v.len() != cols.len() {
            return Err(format!(
                "line {ln}: {} fields for {} columns",
                v.len(),
                cols.len()
            ));
        }
        let get = |name: &str| cols.iter().position(|c| c == name).map(|k| v[k]);
        let num = |name: &str, pos: bool| -> Result<Option<f64>, String> {
            match get(name) {
                None | Some("") => Ok(None),
                Some(x) => match x.parse::<f64>() {
                    Ok(f) if f.is_finite() && f >= 0.0 && (!pos || f > 0.0) => Ok(Some(f)),
                    _ => Err(format!(
                        "line {ln}: {name}: `{x}` is not a {} number",
                        if pos { "positive" } else { "non-negative" }
                    )),
                },
            }
        };
        let arrival = num("arrival_s", false)?.ok_or(format!("line {ln}: arrival_s: empty"))?;
        let duration = num("duration_s", true)?.ok_or(format!("line {ln}: duration_s: empty"))?;
        let mut gpus = num("accelerators", true)?
            .ok_or(format!("line {ln}: accelerators: empty"))?
            .ceil() as u32;
        let class = get("class").filter(|c| !c.is_empty()).unwrap_or("jobs");
        let ci = match classes.iter().position(|c| c == class) {
            Some(p) => p,
            None => {
                classes.push(class.to_string());
                classes.len() - 1
            }
        };
        let kind = match get("kind").unwrap_or("") {
            "" | "training" => Kind::Training,
            "inference" => Kind::Inference,
            "dev" => Kind::Dev,
            k => {
                return Err(format!(
                    "line {ln}: kind: `{k}` is not one of training, inference, dev"
                ))
            }
        };
        let segment = num("segment", true)?.map(|k| round_up(k.ceil() as u32, gpn));
        let constraint = match (segment, get("constraint").unwrap_or("")) {
            (Some(k), "" | "none") => Constraint::Segment(k),
            (Some(_), c) => {
                return Err(format!(
                    "line {ln}: constraint: `{c}` cannot be combined with segment"
                ))
            }
            (None, "" | "none") => Constraint::None,
            (None, "domain") => Constraint::Domain,
            (None, "pod") => Constraint::Pod,
            (None, c) => {
                return Err(format!(
                    "line {ln}: constraint: `{c}` is not one of none, domain, pod"
                ))
            }
        };
        if let Some(k) = segment {
            gpus = round_up(gpus, k);
        } else if gpus > gpn {
            gpus = round_up(gpus, gpn);
        }
        let priority = match get("priority").unwrap_or("") {
            "" => 0,
            p => p
                .parse::<i32>()
                .map_err(|_| format!("line {ln}: priority: `{p}` is not a whole number"))?,
        };
        let comm = num("comm_share", false)?.unwrap_or(0.0);
        if comm > 1.0 {
            return Err(format!("line {ln}: comm_share: {comm} is more than 1"));
        }
        let region = num("region", false)?.unwrap_or(0.0);
        if region.fract() != 0.0 {
            return Err(format!(
                "line {ln}: region: `{region}` is not a whole number (regions count from 0)"
            ));
        }
        let region = region as usize;
        if region >= t.regions() {
            return Err(format!(
                "line {ln}: region: {region} but the cluster has {} region(s)",
                t.regions()
            ));
        }
        let mut j = Job::new(0, arrival, duration, gpus);
        j.class = ci as u16;
        j.kind = kind;
        j.constraint = constraint;
        j.priority = priority;
        j.region = region as u16;
        j.data_gb = num("data_gb", false)?.unwrap_or(0.0);
        j.comm_share = comm;
        jobs.push(j);
    }
    jobs.sort_by(|a, b| a.arrival.total_cmp(&b.arrival));
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i as u32;
    }
    Ok((jobs, classes))
}
