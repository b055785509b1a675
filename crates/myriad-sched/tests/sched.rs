//! Behaviour of the scheduler: hand-checked schedules, invariants under load, determinism,
//! FGD against best-fit on the openb trace, and errors for bad input.
use myriad_scenario::scheduling::SchedulingSpec;
use myriad_sched::{
    preset, setup, simulate, workload, Constraint, Job, Mode, Options, Report, State, Topology,
    Workload,
};

fn two_nodes() -> Topology {
    Topology::uniform(&["r".to_string()], 2, 2, 1, 8, "h100")
}

fn finish_times(r: &Report) -> Vec<f64> {
    // Completion = arrival + JCT; recovered per job from a one-job-per-class workload.
    r.classes.iter().map(|c| c.jct_s.mean).collect()
}

/// 2 nodes of 8 GPUs. J0 (t=0, 8 GPUs, 100 s), J1 (t=1, 16 GPUs, 50 s), J2 (t=2, 8 GPUs,
/// 50 s), J3 (t=3, 8 GPUs, 200 s).
/// FIFO: J1 waits for J0 (starts 100, ends 150); J2 waits behind J1 (150-200); J3 150-350.
/// EASY backfill: J1's reservation is t=100; J2 ends at 52 <= 100 so it backfills on the
/// free node (2-52); J3 would end after 100 and the reservation leaves no spare GPU, so it
/// waits (150-350).
#[test]
fn hand_checked_fifo_and_backfill() {
    let jobs = vec![
        Job::new(0, 0.0, 100.0, 8),
        Job::new(1, 1.0, 50.0, 16),
        Job::new(2, 2.0, 50.0, 8),
        Job::new(3, 3.0, 200.0, 8),
    ];
    let mut w = Workload {
        jobs,
        classes: (0..4).map(|i| format!("j{i}")).collect(),
        services: vec![],
    };
    for (i, j) in w.jobs.iter_mut().enumerate() {
        j.class = i as u16;
    }
    let o = Options {
        check: true,
        ..Options::default()
    };
    let t = two_nodes();
    let fifo = simulate(&t, &w, &preset("fifo").unwrap(), &o);
    let bf = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert!(fifo.violations.is_empty(), "{:?}", fifo.violations);
    assert!(bf.violations.is_empty(), "{:?}", bf.violations);
    let arrivals = [0.0, 1.0, 2.0, 3.0];
    let done = |r: &Report| -> Vec<f64> {
        finish_times(r)
            .iter()
            .zip(arrivals)
            .map(|(jct, a)| jct + a)
            .collect()
    };
    assert_eq!(done(&fifo), vec![100.0, 150.0, 200.0, 350.0]);
    assert_eq!(done(&bf), vec![100.0, 150.0, 52.0, 350.0]);
    assert_eq!(fifo.makespan_s, 350.0);
    // 2 nodes busy 0-100 (one), 100-150 (both), 150-350 (both then one): allocation check.
    let busy_gpu_s = 8.0 * 100.0 + 16.0 * 50.0 + 8.0 * 50.0 + 8.0 * 200.0;
    assert!(
        (fifo.allocation - busy_gpu_s / (16.0 * 350.0)).abs() < 1e-9,
        "{}",
        fifo.allocation
    );
}

fn mixed_spec(jobs: u64) -> SchedulingSpec {
    serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": jobs, "load": 1.1, "daily_amplitude": 0.4},
        "classes": [
            {"name": "dev", "kind": "dev", "share": 5, "size": {"dist": "empirical", "values": [1, 2, 3, 4]},
             "duration_h": {"dist": "exponential", "mean": 0.5}},
            {"name": "train", "share": 3, "priority": 5, "size": {"dist": "lognormal", "median": 32, "sigma": 1.5, "max": 576},
             "duration_h": {"dist": "lognormal", "median": 2, "sigma": 1}},
            {"name": "rack", "share": 1, "segment": 72, "size": {"dist": "empirical", "values": [72, 144]},
             "duration_h": {"dist": "lognormal", "median": 3, "sigma": 0.5}},
            {"name": "in-domain", "share": 1, "constraint": "domain", "size": {"dist": "empirical", "values": [16, 36]},
             "duration_h": {"dist": "exponential", "mean": 1}},
            {"name": "in-pod", "share": 1, "constraint": "pod", "size": {"dist": "empirical", "values": [128, 256]},
             "duration_h": {"dist": "exponential", "mean": 1}}
        ],
        "inference": [{"name": "chat", "replica_size": 8, "peak_replicas": 20}]
    }))
    .unwrap()
}

/// 16 NVL72 domains (18 nodes of 4 GPUs) in 2 pods of 8 domains: 1,152 GPUs.
fn nvl72_small() -> Topology {
    Topology::uniform(&["r".to_string()], 16, 8, 18, 4, "gb200")
}

#[test]
fn invariants_hold_under_every_policy() {
    // Capacity never exceeded and aggregates consistent (after every event), gang jobs whole,
    // and the head of every queue does not fit after each pass (work conservation).
    let t = nvl72_small();
    let w = workload::generate(&mixed_spec(1500), &t, 3);
    let mut o = Options {
        check: true,
        ..Options::default()
    };
    o.fgd = Some(myriad_sched::Fgd::from_jobs(&w.jobs));
    for name in myriad_sched::PRESETS {
        let r = simulate(&t, &w, &preset(name).unwrap(), &o);
        assert!(
            r.violations.is_empty(),
            "{name}: {:?}",
            &r.violations[..r.violations.len().min(3)]
        );
        assert_eq!(r.completed + r.rejected, r.jobs, "{name}: every job ends");
        assert_eq!(r.rejected, 0, "{name}");
        // Domain-constrained jobs keep all their traffic inside one domain.
        let d = r.classes.iter().find(|c| c.class == "in-domain").unwrap();
        assert_eq!(d.in_domain, 1.0, "{name}");
        let p = r.classes.iter().find(|c| c.class == "in-pod").unwrap();
        assert_eq!(p.in_pod, 1.0, "{name}");
        assert!(
            r.allocation > 0.3 && r.allocation <= 1.0,
            "{name}: {}",
            r.allocation
        );
    }
}

#[test]
fn backfill_beats_fifo_and_preemption_serves_priority() {
    let t = nvl72_small();
    let w = workload::generate(&mixed_spec(1500), &t, 3);
    let o = Options::default();
    let fifo = simulate(&t, &w, &preset("fifo").unwrap(), &o);
    let bf = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    let pr = simulate(&t, &w, &preset("priority").unwrap(), &o);
    assert!(bf.all.wait_s.mean < fifo.all.wait_s.mean);
    let train = |r: &Report| {
        r.classes
            .iter()
            .find(|c| c.class == "train")
            .unwrap()
            .wait_s
            .mean
    };
    assert!(train(&pr) < train(&bf), "{} vs {}", train(&pr), train(&bf));
    assert!(pr.preemptions > 0);
    // Inference at priority 100 always gets its replicas under preemption.
    assert!(pr.services[0].slo_attainment > 0.999, "{:?}", pr.services);
    let dn = simulate(&t, &w, &preset("day-night").unwrap(), &o);
    assert!(dn.services[0].slo_attainment > 0.999, "{:?}", dn.services);
    // Day-night: the service gives back capacity at night, so it holds fewer replica-hours.
    assert!(dn.services[0].replica_hours < pr.services[0].replica_hours);
}

#[test]
fn segments_stay_inside_domains_and_gangs_are_whole() {
    let t = nvl72_small();
    let mut s = State::new(&t);
    // Fragment: one 4-GPU node busy in each of the first 12 domains.
    for d in 0..12u32 {
        let n = t.domain_first_node[d as usize];
        let pieces: Vec<_> = (0..4)
            .map(|g| myriad_sched::Piece {
                node: n,
                gpu: g,
                milli: 1000,
            })
            .collect();
        s.apply(&t, &pieces, true);
    }
    let mut j = Job::new(0, 0.0, 1.0, 288);
    j.constraint = Constraint::Segment(72);
    for mode in [Mode::FirstFit, Mode::BestFit, Mode::Topology] {
        let p = s
            .find(&t, &j, mode, 0, None)
            .expect("4 whole domains are free");
        assert_eq!(p.pieces.len(), 288);
        let mut per_domain = std::collections::BTreeMap::new();
        for pc in &p.pieces {
            *per_domain
                .entry(t.node_domain[pc.node as usize])
                .or_insert(0) += 1;
        }
        assert!(
            per_domain.values().all(|&c| c % 72 == 0),
            "{mode:?}: {per_domain:?}"
        );
    }
    // 5 segments cannot fit: only 4 whole domains are free.
    j.gpus = 360;
    assert!(s.find(&t, &j, Mode::Topology, 0, None).is_none());
    assert!(s.check(&t).is_ok());
}

#[test]
fn same_seed_same_report_other_seed_differs() {
    let t = nvl72_small();
    let spec = mixed_spec(800);
    let run = |seed| {
        let w = workload::generate(&spec, &t, seed);
        let r = simulate(&t, &w, &preset("backfill").unwrap(), &Options::default());
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

fn openb(pods: &str) -> Option<(String, String)> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/alibaba-openb-2023"
    );
    Some((
        std::fs::read_to_string(format!("{dir}/openb_node_list_all_node.csv")).ok()?,
        std::fs::read_to_string(format!("{dir}/openb_pod_list_{pods}.csv")).ok()?,
    ))
}

#[test]
fn openb_replay_parses_the_trace_and_fgd_beats_best_fit_under_load() {
    let (n, p) = openb("default").expect("../shared/traces/alibaba-openb-2023");
    let s = setup::openb(&n, &p, &SchedulingSpec::default(), None, None).unwrap();
    assert_eq!(s.topology.nodes.len(), 1523);
    assert_eq!(s.topology.gpus(), 6212);
    assert_eq!(s.workload.jobs.len(), 8152);
    // Time replay: every task runs (the trace is lightly loaded over its 149 days).
    for pol in &s.policies {
        let r = simulate(&s.topology, &s.workload, pol, &s.options);
        assert_eq!(r.completed, 8152, "{}", pol.name);
    }
    // Load sweep at an arrived load of 100% of GPU capacity, three seeds: FGD leaves fewer
    // GPUs unallocated and fails less demand than best-fit.
    let fgd = s.options.fgd.as_ref().unwrap();
    for seed in 1..=3 {
        let sweep = |m| {
            myriad_sched::openb::load_sweep(
                &s.topology,
                &s.workload.jobs,
                m,
                fgd,
                &[0.8, 1.0],
                seed,
            )
        };
        let (b, f) = (sweep(Mode::BestFit), sweep(Mode::Fgd));
        assert_eq!(b[0].failed_gpus, 0.0, "seed {seed}: nothing fails at 80%");
        assert!(
            f[1].unallocated_gpus < b[1].unallocated_gpus,
            "seed {seed}: {f:?} vs {b:?}"
        );
        assert!(f[1].frag_gpus < b[1].frag_gpus, "seed {seed}");
    }
    // GPU-type constraints: the gpuspec33 list parses and every constrained task fits a type.
    let (n, p) = openb("gpuspec33").unwrap();
    let s = setup::openb(&n, &p, &SchedulingSpec::default(), None, None).unwrap();
    assert!(s.workload.jobs.iter().filter(|j| j.gpu_types != 0).count() > 2000);
    let r = simulate(&s.topology, &s.workload, &s.policies[1], &s.options);
    assert_eq!(r.completed + r.rejected, 8152);
}

fn scenario_err(sched: &str) -> String {
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: gb200, count: 1152}}\nscheduling:\n{sched}"
    );
    let cat = myriad_catalog::catalog();
    match myriad_scenario::parse_scenario("s.yaml", &text, cat) {
        Err(e) => e.to_string(),
        Ok(s) => match setup::from_scenario(&s, cat, "s.yaml", None, None, None) {
            Err(e) => e.to_string(),
            Ok(_) => "ok".into(),
        },
    }
}

#[test]
fn bad_values_name_the_field() {
    assert_eq!(
        scenario_err("  clases: []\n"),
        "s.yaml: scheduling.clases: unknown key; did you mean classes?"
    );
    assert!(
        scenario_err("  arrivals: {load: -1}\n")
            .starts_with("s.yaml: scheduling.arrivals.load: -1 must be a positive share"),
        "{}",
        scenario_err("  arrivals: {load: -1}\n")
    );
    assert_eq!(
        scenario_err("  classes: [{name: a, size: {dist: lognormal, median: 8}}]\n"),
        "s.yaml: scheduling.classes[0].size.sigma: missing; `lognormal` needs sigma"
    );
    assert_eq!(
        scenario_err("  policies: [{name: backfil}]\n"),
        "s.yaml: scheduling.policies[0].name: `backfil` is not a preset (and no field overrides one); did you mean backfill?"
    );
    assert!(
        scenario_err("  inference: [{name: x, peak_replicas: 2, curve: [1, 2]}]\n")
            .contains("scheduling.inference[0].curve: 2 values given; expected 24")
    );
    assert!(
        scenario_err("  classes: [{name: a, size: {dist: lognormal}}]\n")
            .contains("scheduling.classes[0].size.median")
    );
    assert!(
        scenario_err("  policies: [{name: mine, placement: topolgy}]\n")
            .contains("scheduling.policies[0].placement")
    );
    assert_eq!(
        scenario_err("  pod: 100\n"),
        "s.yaml: scheduling.pod: 100 accelerators is not a whole number of scale-up domains of 72"
    );
    assert_eq!(
        scenario_err("  policies: [{name: mine, placement: fgd}]\n"),
        "ok"
    );
    // A pod lies within one site: a larger one was silently the whole region.
    assert!(scenario_err("  pod: 2304\n").starts_with(
        "s.yaml: scheduling.pod: 2304 accelerators is more than a site holds (1152 per site)"
    ));
    // A segment sits inside one scale-up domain (NVL72: 72 accelerators): segments of 144
    // ran, and every job of the class was rejected `constraint`.
    assert_eq!(
        scenario_err("  classes: [{name: a, segment: 144, size: {dist: fixed, value: 144}}]\n"),
        "s.yaml: scheduling.classes[0].segment: 144 accelerators per segment, but the largest scale-up domain holds 72; a segment must fit in one"
    );
    assert_eq!(
        scenario_err("  classes: [{name: a, segment: 72, size: {dist: fixed, value: 144}}]\n"),
        "ok"
    );
    // A backfill depth of 0 examined no queued job: backfill quietly did not run.
    assert!(scenario_err("  backfill_depth: 0\n")
        .starts_with("s.yaml: scheduling.backfill_depth: 0 would examine no queued job"));
    assert_eq!(scenario_err("  backfill_depth: 1\n"), "ok");
    assert_eq!(
        scenario_err("  failures: {checkpoint_h: 0}\n"),
        "s.yaml: scheduling.failures.checkpoint_h: 0 must be a positive number of hours"
    );
    assert!(scenario_err(
        "  classes: [{name: a, duration_h: {dist: lognormal, median: 2, sigma: 40}}]\n"
    )
    .contains("scheduling.classes[0].duration_h.sigma: 40 is more than 10"));
    // Hour-by-hour services over decades of arrivals (jobs of 30,000 h at the default load).
    let e = scenario_err(
        "  classes: [{name: a, duration_h: {dist: fixed, value: 30000}}]\n  inference: [{name: chat, peak_replicas: 2}]\n",
    );
    assert!(
        e.starts_with("s.yaml: scheduling.inference: the services would run ")
            && e.contains("at most 3650 days"),
        "{e}"
    );
    // Rates under which the largest job could never keep a checkpoint: named, with numbers.
    let e = scenario_err("  failures: {scale: 100000}\n");
    assert!(
        e.starts_with("s.yaml: scheduling.failures: the largest job (")
            && e.contains("times per checkpoint interval and restart (3900 s)"),
        "{e}"
    );
    assert!(scenario_err("  classes: [{name: a, comm_share: 2}]\n")
        .contains("scheduling.classes[0].comm_share: 2 must be a share"));
    // Home shares past the cluster's sites were ignored, and shares of 0 everywhere made
    // every region equally likely, without a word.
    assert_eq!(
        scenario_err("  regions: {home_shares: [0.8, 0.2]}\n"),
        "s.yaml: scheduling.regions.home_shares: 2 shares for 1 sites (cluster.sites)"
    );
    assert_eq!(
        scenario_err("  regions: {home_shares: [0]}\n"),
        "s.yaml: scheduling.regions.home_shares: shares add up to 0"
    );
    assert_eq!(scenario_err("  regions: {home_shares: [1]}\n"), "ok");
    // 0 was accepted and ran as the default (span / 100 bins, services to the last
    // arrival).
    assert_eq!(
        scenario_err("  sample_h: 0\n"),
        "s.yaml: scheduling.sample_h: 0 must be a positive number (leave it out for the default)"
    );
    assert_eq!(
        scenario_err("  horizon_days: 0\n"),
        "s.yaml: scheduling.horizon_days: 0 must be a positive number (leave it out for the default)"
    );
    assert_eq!(scenario_err("  restart_s: 0\n"), "ok");
    // 2^31 jobs aborted the process allocating the job list.
    assert_eq!(
        scenario_err("  arrivals: {jobs: 2147483648}\n"),
        "s.yaml: scheduling.arrivals.jobs: 2147483648 is more than the 10000000 a simulation takes (about 40 s and 4 GB for one policy at that)"
    );
    // A class every job of which is larger than the cluster was shrunk to fit, silently.
    assert_eq!(
        scenario_err("  classes: [{name: a, size: {dist: fixed, value: 1e300}}]\n"),
        "s.yaml: scheduling.classes[0].size: every job of this class needs at least 1e300 accelerators, but the largest region holds 1152"
    );
    assert_eq!(
        scenario_err("  classes: [{name: a, constraint: domain, size: {dist: uniform, min: 100, max: 200}}]\n"),
        "s.yaml: scheduling.classes[0].size: every job of this class needs at least 100 accelerators, but the largest scale-up domain holds 72"
    );
    // A distribution's tail past the cluster is clamped (documented), not refused.
    assert_eq!(
        scenario_err("  classes: [{name: a, size: {dist: lognormal, median: 64, sigma: 3}}]\n"),
        "ok"
    );
    assert_eq!(
        scenario_err("  classes: [{name: a, size: {dist: fixed, value: 1152}}]\n"),
        "ok"
    );
    // Loads of 1e-300 spread arrivals over 1e300 times the span; below 0.1% the cluster
    // is idle.
    assert_eq!(
        scenario_err("  loads: [0.5, 1e-300]\n"),
        "s.yaml: scheduling.loads[1]: 1e-300 is less than 0.001 (0.1% of capacity), the least load a simulation takes"
    );
    assert_eq!(
        scenario_err("  arrivals: {load: 1e-300}\n"),
        "s.yaml: scheduling.arrivals.load: 1e-300 is less than 0.001 (0.1% of capacity), the least load a simulation takes"
    );
    // `--policies ""` ran no policy and printed an empty table; a name twice ran it twice.
    let names = |n: &[&str]| {
        let n: Vec<String> = n.iter().map(|s| s.to_string()).collect();
        setup::policies(&[], Some(&n)).map(|p| p.len())
    };
    let e = names(&[]).unwrap_err();
    assert_eq!(e.0, "--policies");
    assert!(
        e.1.starts_with("no policy given; name one or more, comma-separated: fifo, backfill"),
        "{}",
        e.1
    );
    assert_eq!(
        names(&["fifo", "sjf", "fifo"]),
        Err((
            "--policies".to_string(),
            "`fifo` is given twice".to_string()
        ))
    );
    assert_eq!(names(&["fifo", "sjf"]), Ok(2));
    // Bad trace text: the file and line.
    let e = myriad_sched::openb::parse_nodes("sn,cpu_milli,memory_mib,gpu,model\nx,1,2,many,T4\n")
        .unwrap_err();
    assert_eq!(
        e,
        "openb_node_list_all_node.csv: line 2: gpu: `many` is not a whole number"
    );
}

/// The bench's scenario (`examples/sched-nvl72-100k.yaml`: 100,008 GB200, 1,000,000 jobs at
/// offered load 0.9): every job runs. `cargo test -p myriad-sched --release -- --ignored`.
#[test]
#[ignore]
fn hundred_thousand_accelerators_million_jobs_all_complete() {
    let text = include_str!("../../../examples/sched-nvl72-100k.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("e.yaml", text, cat).unwrap();
    let su = setup::from_scenario(&s, cat, "e.yaml", None, None, None).unwrap();
    assert_eq!(
        (
            su.topology.gpus(),
            su.topology.domains(),
            su.topology.pods()
        ),
        (100_008, 1389, 26)
    );
    let r = simulate(&su.topology, &su.workload, &su.policies[0], &su.options);
    eprintln!(
        "completed {} rejected {} allocation {:.3} wait mean {:.0} s p99 {:.0} s makespan {:.1} d events {}",
        r.completed,
        r.rejected,
        r.allocation,
        r.all.wait_s.mean,
        r.all.wait_s.p99,
        r.makespan_s / 86400.0,
        r.events
    );
    assert_eq!(r.completed, 1_000_000);
}

/// Placement changes speed through the hierarchy's bandwidths: 6,144 H100 in two islands of
/// 3,072 (50 GB/s per GPU inside, 1:7 above: 7.14 GB/s), HGX domains of 8 (450 GB/s).
/// With half the run time communicating (comm_share 0.5) and 1,000 s given for a placement
/// inside one island: 8 GPUs in one domain take 0.5 + 0.5 * 50/450 = 0.556x; 2,048 GPUs in
/// one island 1x; 4,096 GPUs (two islands) 0.5 + 0.5 * 50/7.14 = 4x.
#[test]
fn placement_speed_follows_the_hierarchy_bandwidth() {
    let text =
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 6144, scale_up: hgx-h100, \
                scale_out: {fabric: roce-400g, island: 3072, oversubscription: 7}}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("s.yaml", text, cat).unwrap();
    let su = setup::from_scenario(&s, cat, "s.yaml", None, None, None).unwrap();
    let t = &su.topology;
    assert_eq!(t.pods(), 2, "pods are the islands");
    assert_eq!(t.gbps[0], 450.0);
    assert_eq!(t.gbps[1], 50.0);
    assert!((t.gbps[2] - 50.0 / 7.0).abs() < 1e-9);
    let mut jobs = vec![
        Job::new(0, 0.0, 1000.0, 8),
        Job::new(1, 0.0, 1000.0, 2048),
        Job::new(2, 2000.0, 1000.0, 4096),
    ];
    for (i, j) in jobs.iter_mut().enumerate() {
        j.comm_share = 0.5;
        j.class = i as u16;
    }
    let w = Workload {
        jobs,
        classes: vec!["a".into(), "b".into(), "c".into()],
        services: vec![],
    };
    let r = simulate(t, &w, &preset("topology").unwrap(), &Options::default());
    let jct: Vec<f64> = r.classes.iter().map(|c| c.jct_s.mean).collect();
    assert!(
        (jct[0] - 1000.0 * (0.5 + 0.5 * 50.0 / 450.0)).abs() < 1e-6,
        "{jct:?}"
    );
    assert!((jct[1] - 1000.0).abs() < 1e-6, "{jct:?}");
    assert!((jct[2] - 4000.0).abs() < 1e-6, "{jct:?}");
    assert!((r.classes[2].slowdown - 4.0).abs() < 1e-9);
}

/// Failures at the reliability crate's Llama 3 rates (scaled up 200x here so that a small
/// run sees many): the count matches rate x accelerator-hours run, every job still completes,
/// invariants hold, and the same seed gives the same run.
#[test]
fn failures_follow_the_reliability_rates() {
    let rate_h = setup::failure_rate_per_accelerator_hour(8);
    // Llama 3: 282 per-accelerator faults + 46 host faults in 54 days on 16,384 GPUs / 2,048 nodes.
    let want = (282.0 / 16384.0 + 46.0 / 2048.0 / 8.0) / (54.0 * 24.0);
    assert!((rate_h / want - 1.0).abs() < 1e-9, "{rate_h} vs {want}");
    let t = Topology::uniform(&["r".to_string()], 64, 16, 1, 8, "h100");
    let spec: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 400, "load": 0.7},
        "classes": [{"name": "train", "size": {"dist": "empirical", "values": [8, 64, 256]},
                     "duration_h": {"dist": "lognormal", "median": 10, "sigma": 0.5}}]
    }))
    .unwrap();
    let w = workload::generate(&spec, &t, 5);
    let o = Options {
        failure_per_gpu_s: 200.0 * rate_h / 3600.0,
        checkpoint_s: 3600.0,
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.completed, 400);
    // Expected interruptions: rate x accelerator-hours actually run (work + redone work).
    let work_gpu_h: f64 = w
        .jobs
        .iter()
        .map(|j| j.gpus as f64 * j.duration / 3600.0)
        .sum();
    let expected = 200.0 * rate_h * (work_gpu_h + r.lost_gpu_hours);
    let got = r.failures as f64;
    assert!(expected > 50.0, "{expected}");
    assert!(
        (got / expected - 1.0).abs() < 0.25,
        "{got} failures, expected {expected:.0}"
    );
    // Each failure loses less than one checkpoint interval of its job's accelerators.
    assert!(r.lost_gpu_hours > 0.0 && r.lost_gpu_hours < got * 256.0);
    let again = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert_eq!(again.failures, r.failures);
    assert_eq!(again.all.jct_s, r.all.jct_s);
}

#[test]
fn cross_region_moves_work_to_the_idle_region_and_counts_the_data() {
    // Two regions of 32 nodes; every job's data is in region 0.
    let names = vec!["home".to_string(), "away".to_string()];
    let t = Topology::uniform(&names, 32, 8, 1, 8, "h100");
    let spec: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 600, "load": 0.8},
        "regions": {"home_shares": [1, 0]},
        "classes": [{"name": "j", "data_gb": 100, "size": {"dist": "empirical", "values": [8, 16, 64]},
                     "duration_h": {"dist": "exponential", "mean": 2}}]
    }))
    .unwrap();
    let w = workload::generate(&spec, &t, 2);
    assert!(w.jobs.iter().all(|j| j.region == 0));
    let o = Options {
        check: true,
        ..Options::default()
    };
    let home = simulate(&t, &w, &preset("topology").unwrap(), &o);
    let cross = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(cross.violations.is_empty(), "{:?}", cross.violations);
    assert_eq!(home.moved_jobs, 0);
    assert!(cross.moved_jobs > 100, "{}", cross.moved_jobs);
    assert_eq!(cross.moved_gb, 100.0 * cross.moved_jobs as f64);
    // Offered 0.8 of both regions lands on one: staying home queues far longer.
    assert!(
        cross.all.wait_s.mean < home.all.wait_s.mean / 4.0,
        "{} vs {}",
        cross.all.wait_s.mean,
        home.all.wait_s.mean
    );
}

#[test]
fn non_gang_jobs_split_into_one_node_tasks() {
    let t = Topology::uniform(&["r".to_string()], 16, 4, 1, 8, "h100");
    let spec: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 40, "rate_per_hour": 10},
        "classes": [{"name": "array", "gang": false, "size": {"dist": "fixed", "value": 64}}]
    }))
    .unwrap();
    let w = workload::generate(&spec, &t, 1);
    assert_eq!(w.jobs.len(), 40);
    assert!(w.jobs.iter().all(|j| j.gpus == 8));
    // Eight tasks per 64-GPU job, all arriving together.
    assert!(w
        .jobs
        .chunks(8)
        .all(|c| c.iter().all(|j| j.arrival == c[0].arrival)));
}

/// A job that fails pays one restart per failure, never more. One 8-GPU job at a time
/// (arrivals 1,000 h apart), 2 h of work, no checkpoint inside it (interval 10 h), a 0.5 h
/// restart, failures at 0.5 per job-hour. The first start needs 2 h without a failure; after
/// a failure each try needs the restart plus the work, L = 2.5 h, without one: an expected
/// (e^{rL} - 1) / r from the first failure (renewal), so
/// E[JCT] = e^{-rW} W + (1 - e^{-rW}) (E[time to the first failure | before W] + (e^{rL} - 1) / r)
/// = 4.41 h. Charging a new restart on top of an unpaid one (as before) grows every try.
#[test]
fn a_failed_job_owes_one_restart_not_one_per_failure() {
    let n = 1500;
    let (w_h, r_h, rate) = (2.0f64, 0.5f64, 0.5f64);
    let jobs: Vec<Job> = (0..n)
        .map(|i| Job::new(i, i as f64 * 1000.0 * 3600.0, w_h * 3600.0, 8))
        .collect();
    let w = Workload {
        jobs,
        classes: vec!["train".into()],
        services: vec![],
    };
    let o = Options {
        failure_per_gpu_s: rate / 8.0 / 3600.0,
        checkpoint_s: 10.0 * 3600.0,
        restart_s: r_h * 3600.0,
        check: true,
        ..Options::default()
    };
    let r = simulate(&two_nodes(), &w, &preset("fifo").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.completed, n as u64);
    let p = (-rate * w_h).exp();
    let first_fail = 1.0 / rate - w_h * p / (1.0 - p);
    let l = w_h + r_h;
    let want = p * w_h + (1.0 - p) * (first_fail + ((rate * l).exp() - 1.0) / rate);
    let got = r.all.jct_s.mean / 3600.0;
    eprintln!("mean JCT {got:.3} h, closed form {want:.3} h");
    assert!((want - 4.41).abs() < 0.01, "{want}");
    assert!(
        (got / want - 1.0).abs() < 0.08,
        "mean JCT {got:.3} h, renewal closed form {want:.3} h"
    );
}

/// Bins finer than the run allows merge pairwise, time-weighted: the hand-checked FIFO
/// schedule at 1 ms bins (350,000 of them) keeps at most `MAX_BINS`, and its allocation over
/// the arrival window (0-3 s, when only J0's 8 of 16 GPUs run) stays exactly one half.
#[test]
fn too_many_bins_merge_without_changing_the_allocation() {
    let jobs = vec![
        Job::new(0, 0.0, 100.0, 8),
        Job::new(1, 1.0, 50.0, 16),
        Job::new(2, 2.0, 50.0, 8),
        Job::new(3, 3.0, 200.0, 8),
    ];
    let w = Workload {
        jobs,
        classes: vec!["j".into()],
        services: vec![],
    };
    let o = Options {
        sample_s: 1e-3,
        ..Options::default()
    };
    let fifo = simulate(&two_nodes(), &w, &preset("fifo").unwrap(), &o);
    assert!(fifo.series.len() <= myriad_sched::MAX_BINS);
    assert!(fifo.series.len() > myriad_sched::MAX_BINS / 4);
    assert!((fifo.allocation - 0.5).abs() < 1e-9, "{}", fifo.allocation);
    assert_eq!(fifo.makespan_s, 350.0);
}

/// Sizes past what a `u32` holds, or that round past it to whole nodes or segments, clamp
/// to the cluster (generated) or make a job no cluster holds (trace): never a job that
/// wraps to no accelerators and runs for free, and never a division by zero.
#[test]
fn huge_sizes_and_segments_never_wrap_to_empty_jobs() {
    let t = nvl72_small();
    let spec = |class: serde_json::Value| -> SchedulingSpec {
        serde_json::from_value(serde_json::json!({
            "arrivals": {"jobs": 20, "rate_per_hour": 1},
            "classes": [class]
        }))
        .unwrap()
    };
    let huge = spec(serde_json::json!({"name": "huge", "size": {"dist": "fixed", "value": 1e12}}));
    let w = workload::generate(&huge, &t, 1);
    assert!(
        w.jobs.iter().all(|j| j.gpus == 1152),
        "clamped to the cluster"
    );
    let seg = spec(serde_json::json!({"name": "seg", "segment": 4294967295u32,
        "size": {"dist": "fixed", "value": 72}}));
    let w = workload::generate(&seg, &t, 1);
    assert!(w.jobs.iter().all(|j| j.gpus == u32::MAX));
    let r = simulate(&t, &w, &preset("backfill").unwrap(), &Options::default());
    assert_eq!((r.completed, r.rejected), (0, 20));

    let t = Topology::uniform(&["r".to_string()], 16, 4, 1, 8, "h100");
    let head = "arrival_s,duration_s,accelerators,segment\n0,100,8,\n";
    for (row, gpus, segment) in [
        ("10,100,4294967295,", u32::MAX, None),
        ("10,100,4294967290,", u32::MAX, None),
        ("10,100,8,4294967295", u32::MAX, Some(u32::MAX)),
        ("10,100,8,0.5", 8, Some(8)),
    ] {
        let (jobs, _) = workload::parse_csv(&format!("{head}{row}\n"), &t).unwrap();
        assert_eq!(jobs[1].gpus, gpus, "{row}");
        let want = segment.map_or(Constraint::None, Constraint::Segment);
        assert_eq!(jobs[1].constraint, want, "{row}");
        let w = Workload {
            jobs,
            classes: vec!["jobs".into()],
            services: vec![],
        };
        let r = simulate(&t, &w, &preset("backfill").unwrap(), &Options::default());
        let fits = gpus <= 128;
        assert_eq!(
            (r.completed, r.rejected),
            (1 + fits as u64, !fits as u64),
            "{row}"
        );
    }
}

/// A service whose peak is past the cluster queues no more replicas than the region could
/// run at once (144 replicas of 8 on 1,152 GPUs): a peak of u32::MAX replicas schedules
/// exactly as a peak of 1,000 (whose daily curve, 0.3 to 1 of it, never asks for fewer
/// than 144 either), instead of creating billions of queued replicas.
#[test]
fn a_service_peak_past_the_cluster_queues_only_what_could_run() {
    let t = nvl72_small();
    let with_peak = |peak: u32| -> Workload {
        let mut spec = mixed_spec(300);
        spec.inference[0].peak_replicas = peak;
        workload::generate(&spec, &t, 4)
    };
    for p in ["fifo", "backfill", "day-night"] {
        let p = preset(p).unwrap();
        let fits = simulate(&t, &with_peak(1000), &p, &Options::default());
        let huge = simulate(&t, &with_peak(u32::MAX), &p, &Options::default());
        assert_eq!(huge.completed, fits.completed);
        assert_eq!(huge.makespan_s, fits.makespan_s, "{}", p.name);
        assert_eq!(huge.all.wait_s.mean, fits.all.wait_s.mean);
        assert_eq!(huge.preemptions, fits.preemptions);
        let (h, f) = (&huge.services[0], &fits.services[0]);
        assert_eq!(h.replica_hours, f.replica_hours);
        assert!(h.replica_hours > 0.0 && h.slo_attainment < 1e-6);
    }
}

/// A service of 8-GPU replicas in region 0 (and a 32-GPU job holding half of it).
fn busy_region_with_a_service(extra: Vec<Job>) -> Workload {
    let mut jobs = vec![Job::new(0, 0.0, 36_000.0, 32)];
    jobs.extend(extra);
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i as u32;
    }
    Workload {
        jobs,
        classes: vec!["jobs".into(), "chat".into()],
        services: vec![myriad_sched::Service {
            name: "chat".into(),
            class: 1,
            replica_gpus: 8,
            peak_replicas: 8,
            curve: [1.0; 24],
            priority: 100,
            region: 0,
        }],
    }
}

/// Guards cross-region routing beside inference services: a replica (which never ends, so
/// never counts in a region's queued work) subtracted infinite work from its region's
/// estimate when it started behind other queued work, so the busy region looked infinitely
/// idle and drew every job homed in the idle region (3 jobs moved, waiting a day). Now the
/// jobs stay in their idle home region and start at once.
#[test]
fn service_replicas_do_not_make_their_region_look_idle_to_cross_region_routing() {
    let t = Topology::uniform(&["a".to_string(), "b".to_string()], 8, 8, 1, 8, "h100");
    let extra = (1..4)
        .map(|i| {
            let mut j = Job::new(0, 100.0 * i as f64, 3600.0, 8);
            j.region = 1;
            j.data_gb = 100.0;
            j
        })
        .collect();
    let w = busy_region_with_a_service(extra);
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.moved_jobs, 0);
    assert_eq!(r.completed, 4);
    assert_eq!(r.classes[0].wait_s.p99, 0.0, "{:?}", r.classes[0].wait_s);
}

/// Guards preemption against evicting jobs for nothing: 2 nodes of 8 GPUs, each holding a
/// priority-5 job (C: 1 GPU on node 0 until 2,000 s, D: 7 GPUs on node 1 until 1,000 s) and
/// node 0 a priority-0 job A (1 GPU, 1,500 s). H (priority 3, 8 GPUs on one node) arrives at
/// 10 s: the region's 7 free GPUs plus A's make 8, but on two nodes, so evicting A cannot
/// start H. A was evicted anyway (a preemption and a 300 s restart for nothing); now nothing
/// is evicted and H starts on node 1 when D ends.
#[test]
fn preemption_evicts_nothing_when_the_head_would_still_not_fit() {
    let mut jobs = vec![
        Job::new(0, 0.0, 2000.0, 1),
        Job::new(1, 0.0, 1500.0, 1),
        Job::new(2, 0.0, 1000.0, 7),
        Job::new(3, 10.0, 100.0, 8),
    ];
    for (i, p) in [5, 0, 5, 3].into_iter().enumerate() {
        jobs[i].priority = p;
        jobs[i].class = i as u16;
    }
    let w = Workload {
        jobs,
        classes: ["C", "A", "D", "H"].map(String::from).to_vec(),
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&two_nodes(), &w, &preset("priority").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.preemptions, 0);
    assert_eq!(r.classes[1].jct_s.mean, 1500.0, "A runs uninterrupted");
    assert_eq!(r.classes[3].wait_s.mean, 990.0, "H starts when D ends");
    assert_eq!(r.completed, 4);
}

/// Guards the job counts beside a service whose replicas cannot fit (24 GPUs on a 16-GPU
/// cluster): every hour's replica that could not fit was counted as a rejected
/// job, so a run of 1 job reported 24 rejected (more rejected than jobs). Now replicas,
/// which are not jobs, are never counted as rejected; the service's SLO attainment is 0.
#[test]
fn replicas_that_cannot_fit_are_not_counted_as_rejected_jobs() {
    let w = Workload {
        jobs: vec![Job::new(0, 0.0, 100.0, 8)],
        classes: vec!["jobs".into(), "big".into()],
        services: vec![myriad_sched::Service {
            name: "big".into(),
            class: 1,
            replica_gpus: 24,
            peak_replicas: 2,
            curve: [1.0; 24],
            priority: 100,
            region: 0,
        }],
    };
    for p in ["fifo", "day-night"] {
        let r = simulate(&two_nodes(), &w, &preset(p).unwrap(), &Options::default());
        assert_eq!((r.jobs, r.completed, r.rejected), (1, 1, 0), "{p}");
        assert_eq!((r.classes[1].jobs, r.classes[1].rejected), (0, 0), "{p}");
        assert_eq!(r.services[0].slo_attainment, 0.0, "{p}");
    }
}

/// Guards the services' field checks: a service region past the cluster's sites was
/// silently moved to the last region, and a replica larger than its region never ran (0%
/// SLO attainment) without a word. Both are now errors naming the field.
#[test]
fn a_service_outside_the_cluster_is_an_error_naming_the_field() {
    assert_eq!(
        scenario_err("  inference: [{name: x, peak_replicas: 2, region: 1}]\n"),
        "s.yaml: scheduling.inference[0].region: 1 but the cluster has 1 site(s) (cluster.sites; regions count from 0)"
    );
    assert_eq!(
        scenario_err("  inference: [{name: x, peak_replicas: 2, replica_size: 1153}]\n"),
        "s.yaml: scheduling.inference[0].replica_size: 1153 accelerators per replica but region 0 has 1152: no replica could ever run"
    );
    assert_eq!(
        scenario_err("  inference: [{name: x, peak_replicas: 2, replica_size: 1152}]\n"),
        "ok"
    );
}

/// Guards the openb parsers and the load sweep on degenerate lists: a pod list with only
/// its header made the load sweep index an empty task list (a panic), and a node list
/// without GPUs made every allocation 0/0 (NaN, `null` in JSON). Both are now errors naming
/// the file; a sweep over no GPU task returns no points at once.
#[test]
fn empty_openb_lists_are_errors_not_panics() {
    let nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,8,V100\n";
    let pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    let (n, types) = myriad_sched::openb::parse_nodes(nodes).unwrap();
    assert_eq!(
        myriad_sched::openb::parse_pods(pods, &types).unwrap_err(),
        "openb_pod_list: no pods"
    );
    assert_eq!(
        myriad_sched::openb::parse_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\n")
            .unwrap_err(),
        "openb_node_list_all_node.csv: no node has a GPU (column gpu); the scheduler measures GPU capacity"
    );
    let t = Topology::from_nodes(n, types, 64);
    let fgd = myriad_sched::Fgd::from_jobs(&[]);
    assert!(myriad_sched::openb::load_sweep(&t, &[], Mode::Fgd, &fgd, &[0.5], 1).is_empty());
    let cpu = {
        let mut j = Job::new(0, 0.0, 1.0, 0);
        j.cpu_milli = 1000;
        j
    };
    assert!(myriad_sched::openb::load_sweep(&t, &[cpu], Mode::Fgd, &fgd, &[0.5], 1).is_empty());
}

/// Guards the priority queue's key for negative priorities: `i64::MAX - priority`
/// overflowed for any priority below 0 (a panic in debug builds, where overflow is
/// checked). The queue still runs higher priorities first, negative ones last.
#[test]
fn negative_priorities_queue_after_higher_ones() {
    // One node: the first job (highest priority: nothing preempts it) holds it; the others
    // queue and start by priority.
    let t = Topology::uniform(&["r".to_string()], 1, 1, 1, 8, "h100");
    let mut jobs = vec![Job::new(0, 0.0, 10.0, 8)];
    jobs[0].priority = i32::MAX;
    for (i, p) in [i32::MIN, -1, 0, i32::MAX].into_iter().enumerate() {
        let mut j = Job::new(i as u32 + 1, 1.0, 10.0, 8);
        j.priority = p;
        j.class = i as u16 + 1;
        jobs.push(j);
    }
    let w = Workload {
        jobs,
        classes: ["first", "min", "minus-one", "zero", "max"]
            .map(String::from)
            .to_vec(),
        services: vec![],
    };
    let r = simulate(&t, &w, &preset("priority").unwrap(), &Options::default());
    let waits: Vec<f64> = r.classes.iter().map(|c| c.wait_s.mean).collect();
    assert_eq!(waits, [0.0, 39.0, 29.0, 19.0, 9.0]);
}

/// Guards the openb parsers against `u32` wrap-around: a task of 4,294,967,297 GPUs (or
/// memory MiB, CPU milli) was read as 1, a small task that ran; a node's CPU or memory
/// likewise. Now such a value is an error naming the file, line and column.
#[test]
fn openb_values_past_u32_are_errors_not_wrapped() {
    let nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,8,V100\n";
    let (_, types) = myriad_sched::openb::parse_nodes(nodes).unwrap();
    let head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    for (row, col) in [
        ("p,1000,100,4294967297,1000,,LS,Running,0,100,0", "num_gpu"),
        ("p,1000,4294967396,1,1000,,LS,Running,0,100,0", "memory_mib"),
        ("p,4294968296,100,1,1000,,LS,Running,0,100,0", "cpu_milli"),
    ] {
        let e = myriad_sched::openb::parse_pods(&format!("{head}{row}\n"), &types).unwrap_err();
        assert!(
            e.starts_with(&format!("openb_pod_list: line 2: {col}: "))
                && e.ends_with("is more than 4294967295"),
            "{e}"
        );
    }
    let e = myriad_sched::openb::parse_nodes(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,4294967297,8,V100\n",
    )
    .unwrap_err();
    assert_eq!(
        e,
        "openb_node_list_all_node.csv: line 2: memory_mib: 4294967297 is more than 4294967295"
    );
}

/// Guards the CSV trace's region column: a fractional region (`1.5`) was truncated to
/// region 1 without a word. Now it is an error naming the line and column.
#[test]
fn a_fractional_csv_region_is_an_error() {
    let t = Topology::uniform(&["a".to_string(), "b".to_string()], 2, 2, 1, 8, "h100");
    let e = workload::parse_csv("arrival_s,duration_s,accelerators,region\n0,10,8,1.5\n", &t)
        .unwrap_err();
    assert_eq!(
        e,
        "line 2: region: `1.5` is not a whole number (regions count from 0)"
    );
    let (jobs, _) =
        workload::parse_csv("arrival_s,duration_s,accelerators,region\n0,10,8,1\n", &t).unwrap();
    assert_eq!(jobs[0].region, 1);
}

/// Guards EASY backfill's reservation against shared-GPU tasks: one node of 8 GPUs, J0 holds
/// 4 until 100 s, the head H needs all 8 (reserved at 100 s, no GPU to spare). A half-GPU
/// task S that runs past 100 s counted as 0 GPUs against the spare, so it backfilled onto
/// a whole free GPU and H waited for S (until 1,002 s). Now S counts as one GPU, waits,
/// and H starts at 100 s as reserved.
#[test]
fn a_shared_gpu_task_does_not_backfill_into_the_heads_reservation() {
    let t = Topology::uniform(&["r".to_string()], 1, 1, 1, 8, "h100");
    let mut jobs = vec![
        Job::new(0, 0.0, 100.0, 4),
        Job::new(1, 1.0, 50.0, 8),
        Job::new(2, 2.0, 1000.0, 1),
    ];
    jobs[2].milli = 500;
    for (i, j) in jobs.iter_mut().enumerate() {
        j.class = i as u16;
    }
    let w = Workload {
        jobs,
        classes: ["J0", "H", "S"].map(String::from).to_vec(),
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(
        r.classes[1].wait_s.mean, 99.0,
        "H starts at its reservation"
    );
    assert_eq!(r.classes[2].wait_s.mean, 148.0, "S starts when H ends");
}

/// Guards where services stop: they run until the horizon, but the hourly step that stops
/// them came at the next whole hour, so with a 1,800 s horizon a replica held its node
/// until 3,600 s and the training job queued behind it waited 3,500 s instead of 1,700 s.
#[test]
fn services_stop_at_a_horizon_inside_an_hour() {
    let t = Topology::uniform(&["r".to_string()], 1, 1, 1, 8, "h100");
    let w = Workload {
        jobs: vec![Job::new(0, 100.0, 600.0, 8)],
        classes: vec!["jobs".into(), "chat".into()],
        services: vec![myriad_sched::Service {
            name: "chat".into(),
            class: 1,
            replica_gpus: 8,
            peak_replicas: 1,
            curve: [1.0; 24],
            priority: 100,
            region: 0,
        }],
    };
    let o = Options {
        horizon_s: 1800.0,
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("fifo").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.classes[0].wait_s.mean, 1700.0);
    assert_eq!(r.services[0].replica_hours, 0.5);
    assert_eq!(r.services[0].slo_attainment, 1.0);
}

/// Guards policy names: two scenario policies of one name ran as two columns of the same
/// name (and `--policies NAME` picked the first); now the second is an error naming it.
#[test]
fn a_policy_name_given_twice_in_the_scenario_is_an_error() {
    assert_eq!(
        scenario_err("  policies: [{name: fifo}, {name: fifo, backfill: true}]\n"),
        "s.yaml: scheduling.policies[1].name: `fifo` is given twice (policies[0]); give each policy its own name"
    );
}

/// Guards the field paths of an openb scenario's errors: every one was put under
/// `scheduling.trace` (`scheduling.trace: policies[0].name: ...`, `scheduling.trace:
/// scheduling.failures: ...`). Now a policy error names `scheduling.policies[i]`, a flag
/// its flag, and only the lists' errors `scheduling.trace`.
#[test]
fn openb_setup_errors_name_their_own_field() {
    let nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,8,V100\n";
    let pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,1000,100,8,1000,,LS,Running,0,100,0\n";
    let spec = |v: serde_json::Value| -> SchedulingSpec { serde_json::from_value(v).unwrap() };
    let err = |sc: &SchedulingSpec, names: Option<&[String]>| {
        setup::openb(nodes, pods, sc, names, None).unwrap_err()
    };
    let (p, m) = err(
        &spec(serde_json::json!({"policies": [{"name": "fgdd"}]})),
        None,
    );
    assert_eq!(p, "scheduling.policies[0].name");
    assert!(m.contains("did you mean fgd?"), "{m}");
    let (p, _) = err(&spec(serde_json::json!({"failures": {"scale": 1e9}})), None);
    assert_eq!(p, "scheduling.failures");
    let (p, _) = err(&SchedulingSpec::default(), Some(&["fgdd".to_string()]));
    assert_eq!(p, "--policies");
    let (p, m) = setup::openb(nodes, "x\n", &SchedulingSpec::default(), None, None).unwrap_err();
    assert_eq!(p, "scheduling.trace");
    assert!(m.starts_with("openb_pod_list: header has no column"), "{m}");
}

/// Guards that backfill never delays the head job's start beyond its reservation, when the
/// head needs GPUs in one place (here one whole node) and not just as many free GPUs.
/// 3 nodes of 8: node 0 holds A (4 GPUs to 1,000 s) and B (4, to 100 s), node 1 the same
/// (C, D), node 2 holds E (6, to 500 s). The head H (8 GPUs, one node) fits only when E ends
/// at 500 s (node 2): at 100 s 8 GPUs are free but 4 + 4 on two nodes. The reservation used
/// to count GPUs (100 s, 2 to spare), so L (2 GPUs, 10,000 s) backfilled onto node 2 and H
/// waited for A and C (1,000 s). Now H is reserved node 2 at 500 s, L may not take it and
/// starts at 100 s on node 0, and H starts at 500 s.
#[test]
fn backfill_respects_the_heads_placement_not_just_its_gpu_count() {
    let t = Topology::uniform(&["r".to_string()], 3, 3, 1, 8, "h100");
    let mut jobs = vec![
        Job::new(0, 0.0, 1000.0, 4),
        Job::new(1, 0.0, 100.0, 4),
        Job::new(2, 0.0, 1000.0, 4),
        Job::new(3, 0.0, 100.0, 4),
        Job::new(4, 0.0, 500.0, 6),
        Job::new(5, 1.0, 100.0, 8),
        Job::new(6, 2.0, 10000.0, 2),
    ];
    for (i, j) in jobs.iter_mut().enumerate() {
        j.class = i as u16;
    }
    let w = Workload {
        jobs,
        classes: ["A", "B", "C", "D", "E", "H", "L"]
            .map(String::from)
            .to_vec(),
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(
        r.classes[5].wait_s.mean, 499.0,
        "H starts at its reservation"
    );
    assert_eq!(
        r.classes[6].wait_s.mean, 98.0,
        "L backfills when node 0 frees"
    );
}

/// Guards that backfill never delays the head job's start beyond its reservation, when the
/// backfilled job runs slower where it is placed. 4 nodes of 4 GPUs, each its own pod, with
/// a quarter of the in-pod bandwidth between pods. J0 holds nodes 0-1 until 100 s; the head
/// H needs all 16 GPUs (reserved at 100 s). S (8 GPUs, 60 s inside a pod, half of it
/// communicating) fits on nodes 2-3, across two pods: 0.5 + 0.5 x 4 = 2.5x, 150 s. It was
/// judged by its 60 s (ends at 62 s, before 100 s), backfilled, and H waited until 152 s.
/// Now it is judged by the 150 s it takes there and waits; H starts at 100 s.
#[test]
fn backfill_judges_a_job_by_its_run_time_where_it_is_placed() {
    let mut t = Topology::uniform(&["r".to_string()], 4, 1, 1, 4, "h100");
    t.gbps = [1.0, 1.0, 0.25];
    let mut jobs = vec![
        Job::new(0, 0.0, 100.0, 8),
        Job::new(1, 1.0, 50.0, 16),
        Job::new(2, 2.0, 60.0, 8),
    ];
    jobs[2].comm_share = 0.5;
    for (i, j) in jobs.iter_mut().enumerate() {
        j.class = i as u16;
    }
    let w = Workload {
        jobs,
        classes: ["J0", "H", "S"].map(String::from).to_vec(),
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("backfill").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(
        r.classes[1].wait_s.mean, 99.0,
        "H starts at its reservation"
    );
    assert_eq!(r.classes[2].wait_s.mean, 148.0, "S starts when H ends");
}

/// Guards the job statistics beside a service: service replicas are not jobs (not counted
/// in `jobs`), but their queueing delay (mostly 0: they preempt or start at once) was
/// mixed into the waits of every job, so under day-night sharing thousands of zero waits
/// cut the reported mean wait of all jobs by a quarter. 2 nodes of 8 GPUs; J0 (8 GPUs,
/// 1,000 s) and a replica of 8 start at 0, J1 (8 GPUs) arrives at 10 s and waits for J0:
/// the jobs wait 0 and 990 s, mean 495 s (not 330 s with the replica's 0).
#[test]
fn service_replicas_are_not_counted_in_the_jobs_wait() {
    let jobs = vec![Job::new(0, 0.0, 1000.0, 8), Job::new(1, 10.0, 100.0, 8)];
    let w = Workload {
        jobs,
        classes: vec!["jobs".into(), "chat".into()],
        services: vec![myriad_sched::Service {
            name: "chat".into(),
            class: 1,
            replica_gpus: 8,
            peak_replicas: 1,
            curve: [1.0; 24],
            priority: 100,
            region: 0,
        }],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    for p in ["fifo", "backfill", "day-night"] {
        let r = simulate(&two_nodes(), &w, &preset(p).unwrap(), &o);
        assert!(r.violations.is_empty(), "{p}: {:?}", r.violations);
        assert_eq!((r.jobs, r.completed), (2, 2), "{p}");
        assert_eq!(r.all.wait_s.mean, 495.0, "{p}: {:?}", r.all.wait_s);
        assert_eq!(r.classes[0].wait_s.mean, 495.0, "{p}");
        // The service's replicas show in its SLO attainment, not as a class of jobs.
        assert_eq!(r.classes[1].wait_s, myriad_sched::Stat::default(), "{p}");
        assert_eq!(r.services[0].slo_attainment, 1.0, "{p}");
    }
}

/// Guards the unit of the GPU-hours failures lose: the work lost since the last checkpoint
/// was counted in in-pod seconds of work, not in the seconds the job held its GPUs, so a
/// job spread over two pods (4x slower there) reported a quarter of the GPU time it wasted.
/// One 16-GPU job on two pods of one node (`comm_share` 1, pods 4x slower between them:
/// 1 h of work takes 4 h), no checkpoints, no restart cost: it holds its GPUs from arrival
/// to its end, and everything but the last, whole run is lost:
/// lost = 16 x (JCT - 4 h).
#[test]
fn failures_lose_the_gpu_hours_the_job_held() {
    let mut t = Topology::uniform(&["r".to_string()], 2, 1, 1, 8, "h100");
    t.gbps = [1.0, 1.0, 0.25];
    let mut job = Job::new(0, 0.0, 3600.0, 16);
    job.comm_share = 1.0;
    let w = Workload {
        jobs: vec![job],
        classes: vec!["j".into()],
        services: vec![],
    };
    for seed in 1..6 {
        let o = Options {
            failure_per_gpu_s: 0.3 / 16.0 / 3600.0,
            checkpoint_s: 1e9,
            restart_s: 0.0,
            check: true,
            seed,
            ..Options::default()
        };
        let r = simulate(&t, &w, &preset("fifo").unwrap(), &o);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.completed, 1);
        assert_eq!(r.all.slowdown, 4.0);
        let want = 16.0 * (r.all.jct_s.mean - 4.0 * 3600.0) / 3600.0;
        assert!(
            (r.lost_gpu_hours - want).abs() < 1e-6,
            "seed {seed}: {} failures lost {} GPU-hours, held {want}",
            r.failures,
            r.lost_gpu_hours
        );
    }
}

/// Guards the allocation of a run with no job to time (an empty trace beside a service):
/// the arrival window was empty, so the allocation and fragmentation read 0% while the
/// service held half the cluster all day (the time series said 50%). 2 nodes of 8 GPUs,
/// one replica of 8 all day: allocation 0.5, and the free 8 GPUs are one whole free node.
#[test]
fn a_service_alone_shows_its_allocation() {
    let w = Workload {
        jobs: vec![],
        classes: vec!["jobs".into(), "chat".into()],
        services: vec![myriad_sched::Service {
            name: "chat".into(),
            class: 1,
            replica_gpus: 8,
            peak_replicas: 1,
            curve: [1.0; 24],
            priority: 100,
            region: 0,
        }],
    };
    for p in ["fifo", "day-night"] {
        let r = simulate(&two_nodes(), &w, &preset(p).unwrap(), &Options::default());
        assert_eq!((r.jobs, r.completed, r.rejected), (0, 0, 0), "{p}");
        assert!((r.allocation - 0.5).abs() < 1e-9, "{p}: {}", r.allocation);
        assert_eq!(r.mean_frag_node, 0.0, "{p}");
        assert_eq!(r.mean_frag_domain, 0.0, "{p}");
        assert!((r.services[0].replica_hours - 24.0).abs() < 1e-9, "{p}");
    }
    // Only a job no region holds (rejected at 5 s): the same window, from its arrival.
    let mut w2 = w.clone();
    w2.jobs.push(Job::new(0, 5.0, 100.0, 64));
    let r = simulate(
        &two_nodes(),
        &w2,
        &preset("fifo").unwrap(),
        &Options::default(),
    );
    assert_eq!((r.jobs, r.rejected), (1, 1));
    assert!((r.allocation - 0.5).abs() < 1e-9, "{}", r.allocation);
}

/// Guards the unit of the restart a preempted job pays: `restart_s` (reloading a
/// checkpoint) was added to the job's work and so scaled by its placement's speed, a job
/// 4x slower across pods paying 4 x 300 s. Two pods of one 8-GPU node, 4x slower between
/// them; A (16 GPUs, 1,000 s of work, `comm_share` 1: 4,000 s there) starts at 0; H
/// (priority 5, 8 GPUs, 100 s) arrives at 400 s and preempts it (100 s of A's work done),
/// runs 400-500; A restarts at 500: 300 s of restart, then 900 s of work at 4x: ends at
/// 500 + 300 + 3,600 = 4,400 s (not 500 + 4 x 1,200 = 5,300).
#[test]
fn a_preempted_job_pays_its_restart_in_seconds_not_at_its_placements_speed() {
    let mut t = Topology::uniform(&["r".to_string()], 2, 1, 1, 8, "h100");
    t.gbps = [1.0, 1.0, 0.25];
    let mut a = Job::new(0, 0.0, 1000.0, 16);
    a.comm_share = 1.0;
    let mut h = Job::new(1, 400.0, 100.0, 8);
    h.priority = 5;
    h.class = 1;
    let w = Workload {
        jobs: vec![a, h],
        classes: vec!["a".into(), "h".into()],
        services: vec![],
    };
    let o = Options {
        check: true,
        sample_s: 100.0,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("priority").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.preemptions, 1);
    assert_eq!(r.classes[1].jct_s.mean, 100.0);
    assert!(
        (r.classes[0].jct_s.mean - 4400.0).abs() < 1e-6,
        "{:?}",
        r.classes[0].jct_s
    );
    // The GPU time it held: 16 x (400 + 300 + 3,600) s.
    let held: f64 = r.series.iter().map(|s| s.allocated * 100.0 * 16.0).sum();
    assert!(
        (held - (16.0 * 4300.0 + 8.0 * 100.0)).abs() < 1e-6,
        "{held}"
    );
}

/// A job moved to another region stages its data over the WAN (wall-clock seconds), then
/// runs at its placement's speed: 8 GPUs in one domain with `comm_share` 0.5 and NVLink 4x
/// the pod's bandwidth take 0.5 + 0.5/4 = 0.625 of `duration`; staging 1,000 GB at 100 Gbit/s
/// plus 0.05 s latency is 80.05 s, which that speed must not scale.
#[test]
fn data_staging_is_not_scaled_by_the_placements_speed() {
    let names = vec!["home".to_string(), "away".to_string()];
    let mut t = Topology::uniform(&names, 2, 2, 1, 8, "h100");
    t.gbps = [4.0, 1.0, 1.0];
    // Region 0: one job holds it all, one more queues behind (10,000 s of expected wait).
    let a = Job::new(0, 0.0, 10_000.0, 16);
    let mut c = Job::new(1, 0.5, 10_000.0, 16);
    c.class = 1;
    // Its data too large to move (80,000 s): it queues at home.
    c.data_gb = 1_000_000.0;
    let mut b = Job::new(2, 1.0, 1000.0, 8);
    b.class = 2;
    b.comm_share = 0.5;
    b.data_gb = 1000.0;
    let w = Workload {
        jobs: vec![a, c, b],
        classes: vec!["a".into(), "c".into(), "b".into()],
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.moved_jobs, 1);
    let want = 80.05 + 1000.0 * 0.625;
    assert!(
        (r.classes[2].jct_s.mean - want).abs() < 1e-6,
        "JCT {} s, want {want} s",
        r.classes[2].jct_s.mean
    );
}

/// Failures interrupt every job that runs, whatever its kind: inference jobs of a trace (a
/// finite run time) fail exactly as the same jobs marked training do (the draws are per job
/// and start, not per kind).
#[test]
fn inference_jobs_of_a_trace_fail_like_training_jobs() {
    let t = Topology::uniform(&["r".to_string()], 8, 4, 1, 8, "h100");
    let jobs: Vec<Job> = (0..40)
        .map(|i| Job::new(i, i as f64 * 600.0, 20.0 * 3600.0, 8))
        .collect();
    let train = Workload {
        jobs: jobs.clone(),
        classes: vec!["j".into()],
        services: vec![],
    };
    let mut infer = train.clone();
    for j in &mut infer.jobs {
        j.kind = myriad_sched::Kind::Inference;
    }
    let o = Options {
        failure_per_gpu_s: 1.0 / (8.0 * 10.0 * 3600.0),
        check: true,
        ..Options::default()
    };
    let p = preset("backfill").unwrap();
    let a = simulate(&t, &train, &p, &o);
    let b = simulate(&t, &infer, &p, &o);
    assert!(b.violations.is_empty(), "{:?}", b.violations);
    assert!(a.failures > 20, "{}", a.failures);
    assert_eq!(b.failures, a.failures);
    assert_eq!(b.lost_gpu_hours, a.lost_gpu_hours);
    assert_eq!(b.completed, 40);
}

/// A job that could never run is rejected with its reason, counted per reason (adding up to
/// `rejected`) and listed: 2 nodes of 8 GPUs, each its own domain, one GPU type.
#[test]
fn rejected_jobs_carry_their_reason() {
    use myriad_sched::RejectReason;
    let t = two_nodes();
    let ok = Job::new(0, 0.0, 100.0, 8);
    let big = Job::new(1, 1.0, 100.0, 24);
    let mut typed = Job::new(2, 2.0, 100.0, 8);
    typed.gpu_types = 1 << 1; // a type the cluster lacks
    let mut dom = Job::new(3, 3.0, 100.0, 16);
    dom.constraint = Constraint::Domain; // domains hold 8
    let mut seg = Job::new(4, 4.0, 100.0, 16);
    seg.constraint = Constraint::Segment(16);
    let w = Workload {
        jobs: vec![ok, big, typed, dom, seg],
        classes: vec!["jobs".into()],
        services: vec![],
    };
    for p in ["fifo", "backfill", "topology"] {
        let r = simulate(&t, &w, &preset(p).unwrap(), &Options::default());
        assert_eq!((r.completed, r.rejected), (1, 4), "{p}");
        assert_eq!(r.rejections.values().sum::<u64>(), r.rejected);
        assert_eq!(r.rejections.get(&RejectReason::TooLarge), Some(&1));
        assert_eq!(r.rejections.get(&RejectReason::GpuType), Some(&1));
        assert_eq!(r.rejections.get(&RejectReason::Constraint), Some(&2));
        let listed: Vec<(u32, u32, RejectReason)> = r
            .rejected_jobs
            .iter()
            .map(|x| (x.job, x.accelerators, x.reason))
            .collect();
        assert_eq!(
            listed,
            vec![
                (1, 24, RejectReason::TooLarge),
                (2, 8, RejectReason::GpuType),
                (3, 16, RejectReason::Constraint),
                (4, 16, RejectReason::Constraint),
            ]
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["rejections"]["too-large"], 1, "{}", v["rejections"]);
        assert_eq!(v["rejected_jobs"][1]["reason"], "gpu-type");
    }
}

/// Services follow their daily curve in their region's local time. The curve wants the peak
/// from local 00:00 to 12:00, nothing after; over the first 12 h UTC a service at UTC+0
/// serves 12 replica-hours, one at UTC−5 (local 19:00 to 07:00) 7, under day-night sharing.
#[test]
fn services_follow_their_regions_local_time() {
    let names = vec!["london".to_string(), "new-york".to_string()];
    let mut t = Topology::uniform(&names, 1, 1, 1, 8, "h100");
    t.utc_offset_s = vec![0.0, -5.0 * 3600.0];
    let mut curve = [0.0; 24];
    curve[..12].fill(1.0);
    let svc = |class: u16, region: u16| myriad_sched::Service {
        name: names[region as usize].clone(),
        class,
        replica_gpus: 8,
        peak_replicas: 1,
        curve,
        priority: 100,
        region,
    };
    let w = Workload {
        jobs: vec![],
        classes: vec!["jobs".into(), "a".into(), "b".into()],
        services: vec![svc(1, 0), svc(2, 1)],
    };
    let o = Options {
        horizon_s: 12.0 * 3600.0,
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("day-night").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        (r.services[0].replica_hours - 12.0).abs() < 1e-9,
        "{:?}",
        r.services
    );
    assert!(
        (r.services[1].replica_hours - 7.0).abs() < 1e-9,
        "{:?}",
        r.services
    );
    assert_eq!(r.services[1].slo_attainment, 1.0);
}

/// `regions.utc_offset_hours` reaches the topology in seconds; a bad offset, or more offsets
/// than sites, is an error naming the field.
#[test]
fn utc_offsets_come_from_the_scenario_and_bad_ones_name_the_field() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 128, sites: 2, dci: {gbps_per_site: 400, distance_km: 5000}}\nscheduling: {regions: {utc_offset_hours: [1, -8]}}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("s.yaml", text, cat).unwrap();
    let su = setup::from_scenario(&s, cat, "s.yaml", None, None, None).unwrap();
    assert_eq!(su.topology.utc_offset_s, vec![3600.0, -8.0 * 3600.0]);
    // Half and quarter hours are real offsets (India, Nepal); a third of an hour is not.
    assert_eq!(scenario_err("  regions: {utc_offset_hours: [5.5]}\n"), "ok");
    assert_eq!(
        scenario_err("  regions: {utc_offset_hours: [5.75]}\n"),
        "ok"
    );
    assert_eq!(
        scenario_err("  regions: {utc_offset_hours: [5.3]}\n"),
        "s.yaml: scheduling.regions.utc_offset_hours[0]: 5.3 must be an offset in -12..=14 hours in steps of 0.25 (e.g. 5.5 for India, 5.75 for Nepal)"
    );
    assert!(scenario_err("  regions: {utc_offset_hours: [14.25]}\n")
        .starts_with("s.yaml: scheduling.regions.utc_offset_hours[0]: 14.25 must be"));
    assert!(
        scenario_err("  regions: {utc_offset_hours: [0, 1]}\n")
            .starts_with("s.yaml: scheduling.regions.utc_offset_hours: 2 offsets for 1 sites"),
        "{}",
        scenario_err("  regions: {utc_offset_hours: [0, 1]}\n")
    );
}

/// A region at UTC+5:30 changes local hour at half past each UTC hour, and its services
/// step there. One node of 8 GPUs, a service of one 8-GPU replica whose curve wants it only
/// in local hour 06 (UTC 00:30-01:30), and a training job holding the node from 0 to UTC
/// 01:00 (no preemption). The replica starts when the job ends at 01:00 and runs until
/// 01:30: served 0.5 h of 1 h demanded, SLO attainment 0.5, 0.5 replica-hours. Stepping on
/// UTC hours only, the service saw local 05:30 (nothing) then 06:30 (one replica) and ran
/// 01:00-02:00, local 06:30-07:30: SLO 1.0 and 1 replica-hour, half of it outside the
/// curve's hour.
#[test]
fn services_step_at_fractional_local_hours() {
    let mut t = Topology::uniform(&["india".to_string()], 1, 1, 1, 8, "h100");
    t.utc_offset_s = vec![5.5 * 3600.0];
    let mut curve = [0.0; 24];
    curve[6] = 1.0;
    let w = Workload {
        jobs: vec![Job::new(0, 0.0, 3600.0, 8)],
        classes: vec!["train".into(), "svc".into()],
        services: vec![myriad_sched::Service {
            name: "svc".into(),
            class: 1,
            replica_gpus: 8,
            peak_replicas: 1,
            curve,
            priority: 100,
            region: 0,
        }],
    };
    let o = Options {
        horizon_s: 86400.0,
        check: true,
        ..Options::default()
    };
    let mut p = preset("day-night").unwrap();
    p.preemption = false;
    let r = simulate(&t, &w, &p, &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let s = &r.services[0];
    assert!((s.slo_attainment - 0.5).abs() < 1e-9, "{s:?}");
    assert!((s.replica_hours - 0.5).abs() < 1e-9, "{s:?}");
    // Whole-hour offsets keep one tick per UTC hour: the same run at UTC+5 wants the
    // replica in UTC 01:00-02:00, after the job, and serves it all.
    t.utc_offset_s = vec![5.0 * 3600.0];
    let r = simulate(&t, &w, &p, &o);
    assert_eq!(r.services[0].slo_attainment, 1.0);
    assert!((r.services[0].replica_hours - 1.0).abs() < 1e-9);
}

/// Preemption takes only the victims the preempting job needs. Two nodes of 8 GPUs: A (low,
/// 8 GPUs, t=0) on node 0, D (high, 4 GPUs, t=1) and B (low, 4 GPUs, t=2) on node 1; H
/// (high, 8 GPUs, t=3, 100 s) needs a whole node. Victims are tried latest started first:
/// B, then A. Only A's node can take H (node 1 keeps D), so B keeps running and ends at
/// 1,002 s (JCT 1,000 s): 1 preemption. It was preempted too, for nothing: 2 preemptions,
/// and B restarted at once on the same GPUs, ending at 3 + 999 + 300 (restart) = 1,302 s.
#[test]
fn preemption_spares_victims_the_job_does_not_need() {
    let mut jobs = vec![
        Job::new(0, 0.0, 1000.0, 8),
        Job::new(1, 1.0, 1000.0, 4),
        Job::new(2, 2.0, 1000.0, 4),
        Job::new(3, 3.0, 100.0, 8),
    ];
    for (i, (j, prio)) in jobs.iter_mut().zip([0, 10, 0, 10]).enumerate() {
        j.class = i as u16;
        j.priority = prio;
    }
    let w = Workload {
        jobs,
        classes: ["a", "d", "b", "h"].iter().map(|s| s.to_string()).collect(),
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&two_nodes(), &w, &preset("priority").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.preemptions, 1);
    assert_eq!(r.classes[2].preemptions, 0, "{:?}", r.classes[2]);
    assert_eq!(r.classes[2].jct_s.mean, 1000.0);
    // H starts at once on A's node; A resumes after H (t=103) with 997 s left + 300 s.
    assert_eq!(r.classes[3].wait_s.mean, 0.0);
    assert_eq!(r.classes[0].jct_s.mean, 103.0 + 997.0 + 300.0);
}

/// The fragmentation figures (GPUs on wholly free nodes and domains) match a recount from
/// the per-GPU state after every event on a heterogeneous cluster (nodes of 8, 4, 2 and 0
/// GPUs: no `uniform_gpus` shortcut), and a topology whose `uniform_gpus` disagrees with
/// its nodes is reported, not used silently.
#[test]
fn free_capacity_figures_match_a_recount() {
    let node = |gpus: u8| myriad_sched::Node {
        gpus,
        gpu_type: 0,
        cpu_milli: 64_000,
        memory_mib: 512_000,
    };
    let nodes: Vec<_> = (0..24).map(|i| node([8, 4, 2, 0][i % 4])).collect();
    let t = Topology::from_nodes(nodes, vec!["h100".into()], 5);
    assert_eq!(t.uniform_gpus, None);
    let mut jobs = vec![];
    for i in 0..300u32 {
        let mut j = Job::new(
            i,
            f64::from(i) * 7.0,
            200.0 + f64::from(i % 13) * 50.0,
            [1, 2, 4, 8, 1][i as usize % 5],
        );
        if i % 5 == 4 {
            j.milli = 250 + (i % 3) as u16 * 250;
        }
        j.cpu_milli = 1000;
        jobs.push(j);
    }
    let w = Workload {
        jobs,
        classes: vec!["jobs".into()],
        services: vec![],
    };
    let mut o = Options {
        check: true,
        ..Options::default()
    };
    o.fgd = Some(myriad_sched::Fgd::from_jobs(&w.jobs));
    for p in ["fifo", "backfill", "best-fit", "fgd"] {
        let r = simulate(&t, &w, &preset(p).unwrap(), &o);
        assert!(r.violations.is_empty(), "{p}: {:?}", &r.violations[..1]);
        assert_eq!(r.completed, 300, "{p}");
    }
    let mut stale = uneven_regions(2, 2);
    stale.nodes[0].gpus = 4;
    let st = State::new(&stale);
    let e = st.check(&stale).unwrap_err();
    assert!(e.contains("node 0 has 4 GPUs"), "{e}");
}

/// Wait percentiles interpolate between order statistics: one 8-GPU node, two 100 s jobs
/// arriving together wait 0 and 100 s, so the p50 is 50 s and the p99 99 s (the rounded
/// rank gave the longer wait, 100 s, for both: a median equal to the maximum).
#[test]
fn wait_percentiles_interpolate_between_jobs() {
    let t = Topology::uniform(&["r".to_string()], 1, 1, 1, 8, "h100");
    let w = Workload {
        jobs: vec![Job::new(0, 0.0, 100.0, 8), Job::new(1, 0.0, 100.0, 8)],
        classes: vec!["jobs".into()],
        services: vec![],
    };
    let r = simulate(&t, &w, &preset("fifo").unwrap(), &Options::default());
    assert_eq!(r.all.wait_s.mean, 50.0);
    assert_eq!(r.all.wait_s.p50, 50.0);
    assert!((r.all.wait_s.p99 - 99.0).abs() < 1e-9, "{:?}", r.all.wait_s);
    assert_eq!(r.all.jct_s.p50, 150.0);
}

/// Generated jobs arrive on the daily cycle of their home region's local time: with the rate
/// `∝ 1 + cos(2π(h − 12)/24)` the mean of `cos(2π(h − 12)/24)` over arrivals is 1/2 at
/// their local hour `h`; a region at UTC+12 peaks at midnight UTC, where its UTC mean is −1/2.
#[test]
fn arrivals_follow_their_home_regions_local_time() {
    let names = vec!["utc".to_string(), "plus-12".to_string()];
    let mut t = Topology::uniform(&names, 4, 4, 1, 8, "h100");
    t.utc_offset_s = vec![0.0, 12.0 * 3600.0];
    let spec: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 4000, "rate_per_hour": 10, "daily_amplitude": 1, "peak_hour": 12},
        "classes": [{"name": "j", "size": {"dist": "fixed", "value": 8},
                     "duration_h": {"dist": "fixed", "value": 1}}]
    }))
    .unwrap();
    let w = workload::generate(&spec, &t, 3);
    let mean_cos = |r: u16| {
        let c: Vec<f64> = w
            .jobs
            .iter()
            .filter(|j| j.region == r)
            .map(|j| (2.0 * std::f64::consts::PI * (j.arrival / 3600.0 - 12.0) / 24.0).cos())
            .collect();
        assert!(c.len() > 1500, "{}", c.len());
        c.iter().sum::<f64>() / c.len() as f64
    };
    let (a, b) = (mean_cos(0), mean_cos(1));
    assert!((a - 0.5).abs() < 0.05, "UTC region: {a}");
    assert!((b + 0.5).abs() < 0.05, "UTC+12 region: {b}");
    // Regions all in UTC draw exactly what one cycle drew before.
    t.utc_offset_s = vec![0.0, 0.0];
    let w0 = workload::generate(&spec, &t, 3);
    t.utc_offset_s = vec![];
    assert_eq!(w0, workload::generate(&spec, &t, 3));
}

/// Cross-region routing sends a job only to a region that could hold it: region 1 has only
/// another GPU type, so a job that needs region 0's type stays home (and runs after the
/// queue there) although region 1 is idle; it was routed there and rejected.
#[test]
fn cross_region_routes_only_to_regions_that_can_hold_the_job() {
    let names = vec!["home".to_string(), "other-type".to_string()];
    let mut t = Topology::uniform(&names, 2, 2, 1, 8, "h100");
    t.gpu_types.push("a100".into());
    let (a, b) = t.region_nodes(1);
    for n in &mut t.nodes[a..b] {
        n.gpu_type = 1;
    }
    let busy = Job::new(0, 0.0, 1000.0, 16);
    let mut queued = Job::new(1, 0.5, 1000.0, 16);
    queued.class = 1;
    // Its data too large to move (8,000 s): with the busy job counted in home's wait it
    // would otherwise move away.
    queued.data_gb = 100_000.0;
    let mut typed = Job::new(2, 1.0, 100.0, 8);
    typed.class = 2;
    typed.gpu_types = 1 << 0; // h100 only
    let w = Workload {
        jobs: vec![busy, queued, typed],
        classes: vec!["busy".into(), "queued".into(), "typed".into()],
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!((r.completed, r.rejected, r.moved_jobs), (3, 0, 0));
    // EASY backfill: the queued 16-GPU job holds the reservation at 1,000 s; the typed job
    // (100 s) cannot end by then on GPUs the reservation does not hold, so it runs after.
    assert!(r.classes[2].wait_s.mean >= 999.0, "{:?}", r.classes[2]);
}

/// Two regions of different sizes, built by hand (scenarios split `cluster.sites` evenly;
/// library callers can build any): region 0 has `small` nodes of 8 GPUs, region 1 `large`,
/// each node its own scale-up domain, each region one pod.
fn uneven_regions(small: u32, large: u32) -> Topology {
    let n = small + large;
    let node = myriad_sched::Node {
        gpus: 8,
        gpu_type: 0,
        cpu_milli: u32::MAX,
        memory_mib: u32::MAX,
    };
    Topology {
        nodes: vec![node; n as usize],
        node_domain: (0..n).collect(),
        domain_first_node: (0..=n).collect(),
        domain_pod: (0..n).map(|d| u32::from(d >= small)).collect(),
        pod_first_domain: vec![0, small, n],
        pod_region: vec![0, 1],
        region_first_pod: vec![0, 1, 2],
        region_names: vec!["small".into(), "large".into()],
        gpu_types: vec!["h100".into()],
        uniform_gpus: Some(8),
        max_nodes_per_domain: 1,
        gbps: [1.0; 3],
        utc_offset_s: vec![],
    }
}

/// Job sizes are capped by the largest region, not the smallest: with regions of 16 and 64
/// GPUs a class of 32-GPU jobs was refused ("the largest region holds 16") and a
/// distribution's draws were clamped to 16, although region 1 runs them. Now the class is
/// accepted, draws reach 64, and cross-region routing runs every job (those homed in the
/// small region move to the large one); staying home rejects them `too-large`.
#[test]
fn job_sizes_are_capped_by_the_largest_region() {
    let t = uneven_regions(2, 8);
    assert_eq!((t.region_gpus(0), t.region_gpus(1)), (16, 64));
    let fixed: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 20, "rate_per_hour": 1},
        "classes": [{"name": "big", "size": {"dist": "fixed", "value": 32},
                     "duration_h": {"dist": "fixed", "value": 0.5}}]
    }))
    .unwrap();
    assert_eq!(workload::check_sizes(&fixed, &t), Ok(()));
    let w = workload::generate(&fixed, &t, 1);
    assert!(w.jobs.iter().all(|j| j.gpus == 32));
    let homed_small = w.jobs.iter().filter(|j| j.region == 0).count() as u64;
    assert!(homed_small > 0);
    let o = Options {
        check: true,
        ..Options::default()
    };
    let cross = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(cross.violations.is_empty(), "{:?}", cross.violations);
    assert_eq!((cross.completed, cross.rejected), (20, 0));
    assert_eq!(cross.moved_jobs, homed_small);
    let home = simulate(&t, &w, &preset("topology").unwrap(), &o);
    assert_eq!(home.rejected, homed_small);
    // A still larger class names the largest region's size.
    let huge: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "classes": [{"name": "huge", "size": {"dist": "fixed", "value": 72}}]
    }))
    .unwrap();
    let e = workload::check_sizes(&huge, &t).unwrap_err();
    assert!(e.1.contains("the largest region holds 64"), "{e:?}");
    // A distribution's tail is clamped to 64, not 16.
    let tail: SchedulingSpec = serde_json::from_value(serde_json::json!({
        "arrivals": {"jobs": 200, "rate_per_hour": 1},
        "classes": [{"name": "tail", "size": {"dist": "uniform", "min": 1, "max": 200}}]
    }))
    .unwrap();
    let w = workload::generate(&tail, &t, 1);
    let biggest = w.jobs.iter().map(|j| j.gpus).max().unwrap();
    assert_eq!(biggest, 64);
}

/// Cross-region routing counts the running jobs, not only the queue: region 0 is full with a
/// 10-hour job and has an empty queue, region 1 is idle. A job homed in region 0 arriving
/// then looked at a zero wait at home (no queued work), stayed and waited 10 hours; now its
/// home's wait is the running job's remaining 10 hours, so it moves and starts at once.
#[test]
fn cross_region_counts_a_full_regions_running_jobs() {
    let t = Topology::uniform(
        &["home".to_string(), "idle".to_string()],
        2,
        2,
        1,
        8,
        "h100",
    );
    let long = Job::new(0, 0.0, 36_000.0, 16);
    let mut new = Job::new(1, 10.0, 3600.0, 8);
    new.class = 1;
    new.data_gb = 100.0;
    let w = Workload {
        jobs: vec![long, new],
        classes: vec!["long".into(), "new".into()],
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let r = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!((r.completed, r.rejected), (2, 0));
    // The long job stays home (it arrived to an idle cluster); the new one moves.
    assert_eq!(r.moved_jobs, 1);
    assert_eq!(r.classes[0].wait_s.mean, 0.0);
    assert_eq!(r.classes[1].wait_s.mean, 0.0, "{:?}", r.classes[1]);
}

/// Two regions of 4 domains (2 per pod) of 2 nodes of 8 GPUs, built uniform as h100 and then
/// given another type where `a100` says (node indices): a cluster whose regions, or nodes in
/// one region, hold different accelerators (library callers can build any).
fn typed_regions(a100: &[usize]) -> Topology {
    let names = vec!["r0".to_string(), "r1".to_string()];
    let mut t = Topology::uniform(&names, 4, 2, 2, 8, "h100");
    t.gpu_types.push("a100".into());
    for &n in a100 {
        t.nodes[n].gpu_type = 1;
    }
    t
}

/// Multi-node placement (`find_multi`) ignored the job's GPU types: a 16-GPU job asking for
/// h100 was placed on a100 nodes (first fit: nodes 0 and 1, both a100; in region 1, on
/// a100 only), where single-node placement skips every node of another type. Now every
/// mode and constraint places it on h100 nodes only, and nowhere in an a100-only region.
#[test]
fn multi_node_placement_respects_gpu_types() {
    // Region 0: nodes 0, 1 (domain 0) and 2 (domain 1) are a100; region 1 (nodes 8..16)
    // is all a100.
    let t = typed_regions(&[0, 1, 2, 8, 9, 10, 11, 12, 13, 14, 15]);
    let s = State::new(&t);
    let modes = [Mode::FirstFit, Mode::BestFit, Mode::Topology, Mode::Fgd];
    let constraints = [
        Constraint::None,
        Constraint::Domain,
        Constraint::Pod,
        Constraint::Segment(8),
        Constraint::Segment(16),
    ];
    for mode in modes {
        for c in constraints {
            let mut job = Job::new(0, 0.0, 100.0, 16);
            job.constraint = c;
            job.gpu_types = 1 << 0; // h100 only
            let pl = s
                .find(&t, &job, mode, 0, None)
                .unwrap_or_else(|| panic!("{mode:?} {c:?}: no place in region 0"));
            assert_eq!(pl.pieces.len(), 16, "{mode:?} {c:?}");
            for p in &pl.pieces {
                assert_eq!(
                    t.nodes[p.node as usize].gpu_type, 0,
                    "{mode:?} {c:?}: placed on node {} (a100): {:?}",
                    p.node, pl.pieces
                );
            }
            // Domain: the first domain with two h100 nodes free is domain 2 (nodes 4, 5).
            if c == Constraint::Domain {
                let mut nodes: Vec<u32> = pl.pieces.iter().map(|p| p.node).collect();
                nodes.dedup();
                assert_eq!(nodes, [4, 5], "{mode:?}");
            }
            assert!(
                s.find(&t, &job, mode, 1, None).is_none(),
                "{mode:?} {c:?}: placed in the a100-only region 1"
            );
            // Either type: region 1 holds it, and an untyped job takes the first nodes.
            job.gpu_types = 0b11;
            assert!(s.find(&t, &job, mode, 1, None).is_some(), "{mode:?} {c:?}");
            job.gpu_types = 0;
            assert!(s.find(&t, &job, mode, 1, None).is_some(), "{mode:?} {c:?}");
        }
        // Region 0's five h100 nodes: node 3 in pod 0, nodes 4-7 in pod 1. Five nodes fit
        // the region but no pod; six do not fit.
        let mut job = Job::new(0, 0.0, 100.0, 40);
        job.gpu_types = 1 << 0;
        assert!(s.find(&t, &job, mode, 0, None).is_some(), "{mode:?}");
        job.constraint = Constraint::Pod;
        assert!(s.find(&t, &job, mode, 0, None).is_none(), "{mode:?}");
        job.constraint = Constraint::None;
        job.gpus = 48; // six nodes: region 0 has five h100
        assert!(s.find(&t, &job, mode, 0, None).is_none(), "{mode:?}");
    }
    // First fit, untyped: the lowest-index free nodes, whatever their type.
    let job = Job::new(0, 0.0, 100.0, 16);
    let pl = s.find(&t, &job, Mode::FirstFit, 0, None).unwrap();
    let mut nodes: Vec<u32> = pl.pieces.iter().map(|p| p.node).collect();
    nodes.dedup();
    assert_eq!(nodes, [0, 1]);
}

/// A 16-GPU job homed in an a100-only region that asks for h100: staying home it is
/// rejected for its GPU type (it ran there on a100), and cross-region routing sends it to
/// the h100 region, where it runs.
#[test]
fn a_typed_gang_job_runs_only_where_its_type_is() {
    use myriad_sched::RejectReason;
    let t = typed_regions(&(0..8).collect::<Vec<_>>());
    let mut job = Job::new(0, 0.0, 100.0, 16);
    job.gpu_types = 1 << 0; // h100: region 1 only
    let w = Workload {
        jobs: vec![job],
        classes: vec!["typed".into()],
        services: vec![],
    };
    let o = Options {
        check: true,
        ..Options::default()
    };
    let home = simulate(&t, &w, &preset("fifo").unwrap(), &o);
    assert_eq!((home.completed, home.rejected), (0, 1));
    assert_eq!(home.rejections.get(&RejectReason::GpuType), Some(&1));
    let routed = simulate(&t, &w, &preset("cross-region").unwrap(), &o);
    assert!(routed.violations.is_empty(), "{:?}", routed.violations);
    assert_eq!(
        (routed.completed, routed.rejected, routed.moved_jobs),
        (1, 0, 1)
    );
}
