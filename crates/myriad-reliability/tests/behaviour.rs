//! Determinism, spares and blast radius, multi-level checkpoints, scenario errors, and the
//! reference network counts behind the default rates.
use myriad_reliability::{analyze, llama3, monte_carlo, setup, Horizon, Options};

fn scenario(extra: &str) -> myriad_scenario::Scenario {
    let text =
        include_str!("../../../examples/reliability-llama3.yaml").replace("reliability: {}", extra);
    myriad_scenario::parse_scenario("t.yaml", &text, myriad_catalog::catalog()).unwrap()
}

#[test]
fn same_seed_same_bytes_whatever_the_thread_count() {
    let su = setup(&scenario("reliability: {}"), myriad_catalog::catalog()).unwrap();
    let o = Options {
        days: Some(20.0),
        replicas: 300,
        seed: 42,
    };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| serde_json::to_string(&analyze(&su, &o).unwrap()).unwrap())
    };
    let a = run(1);
    assert_eq!(a, run(2));
    assert_eq!(a, run(2));
    assert_eq!(a, run(3));
    let other = serde_json::to_string(&analyze(&su, &Options { seed: 43, ..o }).unwrap()).unwrap();
    assert_ne!(a, other);
}

#[test]
fn whole_domains_wait_for_spares_and_in_domain_spares_help() {
    // The same job and the same 288 spare accelerators, 3-day repairs: 36 spare 8-GPU
    // servers, or 4 spare NVL72 racks (with and without 8 idle GPUs in each rack).
    let cat = myriad_catalog::catalog();
    let su = setup(
        &scenario("reliability: {spares: {domains: 36, repair_hours: 72}}"),
        cat,
    )
    .unwrap();
    assert_eq!(su.job.pool_domains, 36);
    let p = su.checkpoint.policy(300.0);
    let h = Horizon::Window(30.0 * 86400.0);
    let mean = |runs: &[myriad_reliability::ReplicaStats],
                f: &dyn Fn(&myriad_reliability::ReplicaStats) -> f64| {
        runs.iter().map(f).sum::<f64>() / runs.len() as f64
    };
    let hgx = monte_carlo(&su.job, &p, h, 1, 100);
    let mut big = su.job.clone();
    big.domain_size = 72;
    big.accelerators_per_node = 4;
    big.domains = big.accelerators.div_ceil(72);
    big.pool_domains = 4;
    let nvl = monte_carlo(&big, &p, h, 1, 100);
    let mut spared = big.clone();
    spared.spares_per_domain = 8;
    spared.domains = spared.accelerators.div_ceil(64);
    let sp = monte_carlo(&spared, &p, h, 1, 100);
    let wait = |v: &[myriad_reliability::ReplicaStats]| mean(v, &|r| r.wait_s) / 3600.0;
    eprintln!(
        "waiting h: hgx {:.1}, nvl72 {:.1}, nvl72 with 8 in-domain spares {:.1}",
        wait(&hgx),
        wait(&nvl),
        wait(&sp)
    );
    assert!(
        wait(&nvl) > 10.0 * wait(&hgx).max(0.1),
        "a rack per fault drains the pool"
    );
    assert!(wait(&sp) < wait(&nvl));
    assert!(mean(&sp, &|r| r.ettr()) > mean(&nvl, &|r| r.ettr()));
    assert!(mean(&hgx, &|r| r.ettr()) > mean(&nvl, &|r| r.ettr()));
    assert!(
        mean(&nvl, &|r| r.repair_accelerator_s) > 5.0 * mean(&hgx, &|r| r.repair_accelerator_s)
    );
    // A large pool never waits.
    let mut ample = big.clone();
    ample.pool_domains = 1000;
    assert_eq!(mean(&monte_carlo(&ample, &p, h, 1, 50), &|r| r.wait_s), 0.0);
}

#[test]
fn multi_level_restores_from_storage_only_when_memory_is_lost() {
    let cat = myriad_catalog::catalog();
    let none = setup(
        &scenario(
            "reliability: {checkpoint: {levels: memory-then-storage, memory_lost_fraction: 0}}",
        ),
        cat,
    )
    .unwrap();
    let all = setup(&scenario("reliability: {checkpoint: {levels: memory-then-storage, memory_lost_fraction: 1, storage_every: 5}}"), cat).unwrap();
    let h = Horizon::Window(20.0 * 86400.0);
    let a = monte_carlo(&none.job, &none.checkpoint.policy(120.0), h, 2, 50);
    let b = monte_carlo(&all.job, &all.checkpoint.policy(120.0), h, 2, 50);
    assert!(a.iter().all(|r| r.storage_restores == 0));
    assert!(b.iter().all(|r| r.storage_restores > 0));
    let lost = |v: &[myriad_reliability::ReplicaStats]| {
        v.iter().map(|r| r.lost_s).sum::<f64>()
            / v.iter().map(|r| r.struck_training as f64).sum::<f64>()
    };
    // Memory every 120 s: ~60 s lost; storage every 5th: ~300 s.
    assert!(lost(&a) < 80.0, "{}", lost(&a));
    assert!(lost(&b) > 250.0, "{}", lost(&b));
}

#[test]
fn errors_name_the_field_path() {
    let cat = myriad_catalog::catalog();
    let base = include_str!("../../../examples/reliability-llama3.yaml");
    for (block, path) in [
        (
            "reliability: {failures: {hbm: {per_hour: -1}}}",
            "reliability.failures.hbm",
        ),
        (
            "reliability: {failures: {hbm: {per_hour: 1, mtbf_hours: 2}}}",
            "reliability.failures.hbm",
        ),
        (
            "reliability: {checkpoint: {interval_s: 0}}",
            "reliability.checkpoint.interval_s",
        ),
        (
            "reliability: {checkpoint: {memory_lost_fraction: 2}}",
            "reliability.checkpoint.memory_lost_fraction",
        ),
        (
            "reliability: {storage: {sustained_tbps: 0}}",
            "reliability.storage.sustained_tbps",
        ),
        (
            "reliability: {spares: {domains: 1, per_pod: 2}}",
            "reliability.spares.per_pod",
        ),
        (
            "reliability: {recovery: {restart_s: -5}}",
            "reliability.recovery.restart_s",
        ),
        (
            "reliability: {checkpoint: {intervl_s: 60}}",
            "reliability.checkpoint.intervl_s",
        ),
    ] {
        let text = base.replace("reliability: {}", block);
        let e = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap_err();
        assert_eq!(e.path, path, "{block}: {e}");
    }
    let ok = base.replace("reliability: {}", "reliability: {checkpoint: {interval_s: auto, mode: async}, failures: {accelerator: {mtbf_hours: 50000}}}");
    let s = myriad_scenario::parse_scenario("t.yaml", &ok, cat).unwrap();
    let su = setup(&s, cat).unwrap();
    assert_eq!(su.checkpoint.interval_s, None);
    assert_eq!(su.checkpoint.mode, "async");
    let too_many = base.replace("reliability: {}", "reliability: {spares: {per_domain: 8}}");
    let s = myriad_scenario::parse_scenario("t.yaml", &too_many, cat).unwrap();
    assert!(setup(&s, cat)
        .unwrap_err()
        .starts_with("reliability.spares.per_domain"));
}

#[test]
fn default_network_rate_uses_the_builders_reference_counts() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 16384, scale_up: hgx-h100, scale_out: {fabric: roce-400g}}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("ref.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    assert_eq!(c.bom.switches_total as f64, llama3::SWITCHES);
    assert_eq!(c.bom.cables as f64, llama3::LINKS);
    assert_eq!(c.bom.nics as f64, llama3::NICS);
    assert_eq!(c.hierarchy.nodes as f64, llama3::NODES);
    let sum = llama3::ACCELERATOR
        + llama3::HBM
        + llama3::HOST
        + llama3::NIC
        + llama3::NETWORK
        + llama3::SOFTWARE
        + llama3::UNKNOWN;
    assert_eq!(sum, llama3::UNEXPECTED);
}

#[test]
fn whole_run_time_to_train() {
    let su = setup(&scenario("reliability: {}"), myriad_catalog::catalog()).unwrap();
    let r = analyze(
        &su,
        &Options {
            days: None,
            replicas: 100,
            seed: 1,
        },
    )
    .unwrap();
    let ff = r.failure_free_days.unwrap();
    let t = r.time_to_train_days.unwrap();
    assert!(t.mean > ff && t.mean < ff / 0.85, "{} vs {ff}", t.mean);
    assert!((ff / t.mean - r.summary.ettr.mean).abs() < 0.01);
}

#[test]
fn json_report_has_the_documented_keys_and_adds_up() {
    let su = setup(&scenario("reliability: {}"), myriad_catalog::catalog()).unwrap();
    let o = Options {
        days: Some(54.0),
        replicas: 200,
        seed: 1,
    };
    let r = analyze(&su, &o).unwrap();
    let rows = myriad_reliability::compare_checkpoint(&su, &o).unwrap();
    let tables = vec![("checkpoint", rows)];
    let j = serde_json::to_value(myriad_reliability::output::report(&su, &r, &tables)).unwrap();
    let i = &j["interruptions"];
    let total = i["total"].as_f64().unwrap();
    let sum = i["planned"].as_f64().unwrap() + i["unexpected"].as_f64().unwrap();
    assert!((total - sum).abs() < 1e-9);
    let by: f64 = i["by_cause"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(
        (by - total).abs() < 1e-6,
        "by_cause sums to {by}, total {total}"
    );
    for k in [
        "job_mtbf_hours",
        "ettr",
        "goodput",
        "optimal_checkpoint_interval_s",
        "young_daly_interval_s",
        "time_to_train_days",
    ] {
        assert!(j[k].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(j["ettr_ci95"][0].as_f64().unwrap() <= j["ettr"].as_f64().unwrap());
    // Down time is all of it (it was reported as `restart_hours`), and with the kept and
    // lost work and the stalls it makes the wall clock.
    assert!(j.get("restart_hours").is_none());
    let hours = |k: &str| j[k].as_f64().unwrap();
    let kept = hours("ettr") * 54.0 * 24.0;
    let sum = kept
        + hours("lost_work_hours")
        + j["checkpoint"]["stall_hours"].as_f64().unwrap()
        + hours("down_hours");
    assert!((sum / (54.0 * 24.0) - 1.0).abs() < 1e-9, "{sum} h");
    assert!(j["spares"]["waiting_for_spares_hours"].as_f64().unwrap() <= hours("down_hours"));
    assert_eq!(j["compare"]["checkpoint"].as_array().unwrap().len(), 7);
    let again = serde_json::to_string(&myriad_reliability::output::report(
        &su,
        &analyze(&su, &o).unwrap(),
        &tables,
    ))
    .unwrap();
    assert_eq!(serde_json::to_string(&j).unwrap(), again);
}

#[test]
fn an_async_interval_below_its_write_is_reported_as_the_interval_run() {
    // A 5.7 TB checkpoint written behind training at 10 GB/s takes 568 s, and the next
    // snapshot waits for it: an interval of 60 s runs every 568 s. The report said "60 s
    // used" and put the simulated optimum at 142 s, below anything the policy can run.
    let cat = myriad_catalog::catalog();
    let su = setup(
        &scenario("reliability: {checkpoint: {mode: async, interval_s: 60}, storage: {sustained_tbps: 0.01}}"),
        cat,
    )
    .unwrap();
    let write = su.checkpoint.write_s;
    assert!((write - 568.19).abs() < 0.01, "{write}");
    let o = Options {
        days: Some(2.0),
        replicas: 20,
        seed: 1,
    };
    let r = analyze(&su, &o).unwrap();
    assert_eq!(r.interval_s, write);
    assert_eq!(r.summary.interval_s, write);
    assert!(r.optimal_checkpoint_interval_s >= write);
    assert!(r.sweep.iter().all(|p| p.interval_s >= write));
    // The same failures: the given 60 s and the write time are one policy.
    let at = |tau: f64| {
        monte_carlo(
            &su.job,
            &su.checkpoint.policy(tau),
            Horizon::Window(2.0 * 86400.0),
            1,
            20,
        )
    };
    assert_eq!(at(60.0), at(write));
}

/// Hot-spare domains are racks of the cluster: asking for more than the cluster holds beyond
/// the job is an error naming the numbers (it used to be accepted, so the spares were
/// hardware missing from the cluster's bill of materials). The default pool is exactly
/// the cluster's unused domains, and that many may be asked for.
#[test]
fn spare_domains_beyond_the_cluster_are_an_error() {
    let cat = myriad_catalog::catalog();
    // 24,576 H100 in 8-GPU servers: 3,072 domains, the 16,384-GPU job holds 2,048.
    let all = setup(&scenario("reliability: {spares: {domains: 1024}}"), cat).unwrap();
    assert_eq!(all.job.pool_domains, 1024);
    let default = setup(&scenario("reliability: {}"), cat).unwrap();
    assert_eq!(default.job.pool_domains, 1024);
    let err = setup(&scenario("reliability: {spares: {domains: 1025}}"), cat).unwrap_err();
    assert!(
        err.contains("reliability.spares.domains: 1025 spare domains, but the cluster holds 1024 beyond the job's 2048"),
        "{err}"
    );
    let err = setup(&scenario("reliability: {spares: {per_pod: 5000}}"), cat).unwrap_err();
    assert!(err.starts_with("reliability.spares.per_pod: "), "{err}");
}

/// `spares.per_pod` is unbounded, and its product with the job's pods wrapped in u64 in
/// release builds (2^63 per pod x 6 pods = 0 spare domains), passing the check against the
/// cluster's spare racks; the product is now exact and the error names the field.
#[test]
fn huge_spares_per_pod_do_not_wrap() {
    let cat = myriad_catalog::catalog();
    // Pods of 3,072: the 16,384-GPU job spans 6, and 2^63 x 6 = 3 x 2^64.
    let s = scenario("reliability: {spares: {per_pod: 9223372036854775808}}");
    let err = setup(&s, cat).unwrap_err();
    assert!(
        err.starts_with(
            "reliability.spares.per_pod: 9223372036854775808 per pod x 6 pods = 55340232221128654848 spare domains, but the cluster holds 1024"
        ),
        "{err}"
    );
}

/// Accelerators in repair are averaged over the simulated time: a repair that outlasts the
/// window counts only until the window ends. Every hardware fault of the Llama 3 job on
/// 8-GPU servers (no in-domain spares) takes a server of 8 out; with repairs longer than a
/// T-day window, a server out at time t is in repair for T - t of it, so the mean over the
/// window is 8 × (hardware faults per second) × T / 2. The whole repair time was counted,
/// however far past the window: a 1,000-hour repair in a 1-day window reported 1,000 / 12
/// times too many (and `repair_hours: 1e308` reported `inf`).
#[test]
fn accelerators_in_repair_are_counted_within_the_window() {
    use myriad_reliability::{Blast, Summary};
    let su = setup(&scenario("reliability: {}"), myriad_catalog::catalog()).unwrap();
    let mut job = su.job.clone();
    job.repair_s = 1000.0 * 3600.0;
    let removing: f64 = job
        .causes
        .iter()
        .filter(|c| c.blast != Blast::None)
        .map(|c| c.rate_per_s(job.scale))
        .sum();
    assert!(job.causes.iter().all(|c| match c.blast {
        Blast::Accelerators(n) => n <= 8,
        _ => true,
    }));
    let days = 1.0;
    let t = days * 86400.0;
    let runs = monte_carlo(
        &job,
        &su.checkpoint.policy(300.0),
        Horizon::Window(t),
        4,
        2000,
    );
    let m = Summary::of(&runs, 300.0);
    let want = 8.0 * removing * t / 2.0;
    eprintln!(
        "in repair {:.2}, closed form {want:.2}",
        m.accelerators_in_repair
    );
    assert!(
        (m.accelerators_in_repair / want - 1.0).abs() < 0.05,
        "in repair {} vs {want}",
        m.accelerators_in_repair
    );
    for r in &runs {
        // No more accelerator-seconds than 8 per fault for the whole window.
        assert!(r.repair_accelerator_s <= 8.0 * r.unexpected as f64 * r.wall_s + 1e-6);
    }
}

#[test]
fn an_overflowing_repair_time_is_an_error() {
    let cat = myriad_catalog::catalog();
    let base = include_str!("../../../examples/reliability-llama3.yaml");
    let text = base.replace(
        "reliability: {}",
        "reliability: {spares: {repair_hours: 1e308}}",
    );
    let e = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap_err();
    assert_eq!(e.path, "reliability.spares.repair_hours", "{e}");
}

/// A value of the wrong shape says what the key takes: `interval_s: never` said "data did
/// not match any variant of untagged enum CheckpointInterval", and `hbm: 0.001` "expected
/// struct FailureRate".
#[test]
fn wrong_shapes_say_what_the_key_takes() {
    let cat = myriad_catalog::catalog();
    let base = include_str!("../../../examples/reliability-llama3.yaml");
    for (block, path, want) in [
        (
            "reliability: {checkpoint: {interval_s: never}}",
            "reliability.checkpoint.interval_s",
            "a number of seconds or `auto`",
        ),
        (
            "reliability: {failures: {hbm: 0.001}}",
            "reliability.failures.hbm",
            "`{per_hour: R}` (failures per device-hour) or `{mtbf_hours: M}`",
        ),
    ] {
        let text = base.replace("reliability: {}", block);
        let e = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap_err();
        assert_eq!(e.path, path, "{block}: {e}");
        assert!(e.to_string().contains(want), "{block}: {e}");
    }
}

/// `memory-then-storage` checkpoints stall training only for the snapshot (the peer copy
/// and the storage write run behind it), whatever `mode` said: `mode: sync` with them was
/// silently ignored, and the text and JSON called the policy `sync`.
#[test]
fn multi_level_checkpoints_are_asynchronous() {
    let cat = myriad_catalog::catalog();
    let su = setup(
        &scenario("reliability: {checkpoint: {levels: memory-then-storage}}"),
        cat,
    )
    .unwrap();
    assert_eq!(su.checkpoint.mode, "async");
    let p = su.checkpoint.policy(300.0);
    assert_eq!(
        p.stall_s,
        su.checkpoint.snapshot_s + su.checkpoint.overhead_s
    );
    let base = include_str!("../../../examples/reliability-llama3.yaml");
    let text = base.replace(
        "reliability: {}",
        "reliability: {checkpoint: {mode: sync, levels: memory-then-storage}}",
    );
    let e = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap_err();
    assert_eq!(e.path, "reliability.checkpoint.mode", "{e}");
    assert!(e.to_string().contains("memory-then-storage"), "{e}");
}

/// A per-device rate near f64::MAX times 16,384 accelerators is an infinite job rate: every
/// failure came at time 0 and the text printed `inf` interruptions a day. It is an error
/// naming the rate.
#[test]
fn an_infinite_job_failure_rate_is_an_error() {
    let cat = myriad_catalog::catalog();
    let e = setup(
        &scenario("reliability: {failures: {accelerator: {per_hour: 1e308}}}"),
        cat,
    )
    .unwrap_err();
    assert!(
        e.starts_with(
            "reliability.failures.accelerator: 1e308 per accelerator-hour x 16384 of them"
        ),
        "{e}"
    );
    let e = setup(
        &scenario("reliability: {failures: {software: {per_hour: 1e300}, scale: 1e300}}"),
        cat,
    )
    .unwrap_err();
    assert!(e.starts_with("reliability.failures.software: "), "{e}");
    // 1e308 failures per job-hour is finite per second but not per day.
    let e = setup(
        &scenario("reliability: {failures: {software: {per_hour: 1e308}}}"),
        cat,
    )
    .unwrap_err();
    assert!(e.starts_with("reliability.failures.software: "), "{e}");
    assert!(setup(
        &scenario("reliability: {failures: {accelerator: {per_hour: 1e300}}}"),
        cat
    )
    .is_ok());
    let e = setup(
        &scenario("reliability: {planned: {rate: {per_hour: 1e308}}}"),
        cat,
    )
    .unwrap_err();
    assert!(e.starts_with("reliability.planned.rate: "), "{e}");
}

/// Without failures the job MTBF is infinite, which serde_json wrote as `null` silently
/// and docs/reliability.md did not mention; the JSON says `null` on purpose now and the
/// docs say when.
#[test]
fn mtbf_without_failures_is_null_and_documented_so() {
    let su = setup(
        &scenario("reliability: {failures: {scale: 0}, planned: {rate: {per_hour: 0}}}"),
        myriad_catalog::catalog(),
    )
    .unwrap();
    let o = Options {
        days: Some(1.0),
        replicas: 10,
        seed: 1,
    };
    let r = analyze(&su, &o).unwrap();
    let rows = myriad_reliability::compare_checkpoint(&su, &o).unwrap();
    let tables = vec![("checkpoint", rows)];
    let j = serde_json::to_value(myriad_reliability::output::report(&su, &r, &tables)).unwrap();
    assert!(j["job_mtbf_hours"].is_null(), "{}", j["job_mtbf_hours"]);
    assert!(j["expected_job_mtbf_hours"].is_null());
    assert!(j["compare"]["checkpoint"][0]["job_mtbf_hours"].is_null());
    let doc = include_str!("../../../docs/reliability.md").replace('\n', " ");
    for k in ["`job_mtbf_hours`", "`expected_job_mtbf_hours`"] {
        assert!(doc.contains(k), "{k}");
    }
    assert!(
        doc.contains("null when there is no failure"),
        "docs/reliability.md"
    );
}

/// An interval shorter than one step (`interval_s: 1e-300`) was simulated as given; a
/// checkpoint is taken between steps.
#[test]
fn a_checkpoint_interval_under_one_step_is_an_error() {
    let cat = myriad_catalog::catalog();
    let err = setup(
        &scenario("reliability: {checkpoint: {interval_s: 1e-300}}"),
        cat,
    )
    .unwrap_err();
    assert!(
        err.starts_with(
            "reliability.checkpoint.interval_s: 1e-300 s is shorter than one training step ("
        ),
        "{err}"
    );
    assert!(setup(
        &scenario("reliability: {checkpoint: {interval_s: 3600}}"),
        cat
    )
    .is_ok());
}
