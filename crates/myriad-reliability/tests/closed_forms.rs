//! Closed-form checks: with exponential failures and fixed costs the simulated optimal
//! checkpoint interval matches Young/Daly, lost work per failure averages half an
//! interval, goodput falls monotonically with the failure rate, and the time accounting of
//! every replica adds up.
use myriad_reliability::{
    monte_carlo, replica, setup, sweep, young_daly, Blast, Cause, Checkpoint, Component, Horizon,
    Job, Options, Persist, Policy,
};

/// One exponential failure process of mean `mtbf_s`, nothing to replace, fixed restart.
fn job(mtbf_s: f64, restart_s: f64) -> Job {
    Job {
        accelerators: 1024,
        domain_size: 8,
        accelerators_per_node: 8,
        domains: 128,
        causes: vec![Cause {
            component: Component::Software,
            population: 1.0,
            per_hour: 3600.0 / mtbf_s,
            blast: Blast::None,
        }],
        scale: 1.0,
        planned_per_s: 0.0,
        planned_downtime_s: 0.0,
        detect_s: 0.0,
        diagnose_s: 0.0,
        restart_s,
        spares_per_domain: 0,
        pool_domains: 0,
        repair_s: 0.0,
    }
}

/// A synchronous single-level checkpoint costing `delta_s` per checkpoint.
fn ckpt(delta_s: f64) -> Checkpoint {
    Checkpoint {
        size_bytes: delta_s * 1e12,
        bytes_per_accelerator: delta_s * 1e12 / 1024.0,
        mode: "sync",
        levels: "storage",
        interval_s: None,
        write_s: delta_s,
        restore_storage_s: 0.0,
        snapshot_s: 0.0,
        peer_copy_s: 0.0,
        overhead_s: 0.0,
        storage_every: 1,
        memory_lost_fraction: 0.0,
        sustained_tbps: 1.0,
        peak_tbps: 1.0,
    }
}

#[test]
fn simulated_optimal_interval_matches_young_daly() {
    for (mtbf_s, delta_s) in [(3600.0, 30.0), (4.0 * 3600.0, 60.0), (10_000.0, 3.0)] {
        let j = job(mtbf_s, 120.0);
        let c = ckpt(delta_s);
        let yd = young_daly(delta_s, mtbf_s);
        let horizon = Horizon::Window(3000.0 * mtbf_s);
        let (points, opt) = sweep(&j, &c, horizon, 7, 64, yd, false, false);
        assert_eq!(points.len(), 17);
        let err = opt / yd - 1.0;
        eprintln!(
            "M {mtbf_s} δ {delta_s}: Young/Daly {yd:.1} s, simulated {opt:.1} s ({:+.1}%)",
            100.0 * err
        );
        assert!(
            err.abs() < 0.10,
            "simulated optimum {opt:.1} s vs Young/Daly {yd:.1} s"
        );
    }
}

#[test]
fn lost_work_per_failure_is_half_an_interval() {
    let tau = 600.0;
    let j = job(10.0 * 3600.0, 60.0);
    let p = ckpt(1.0).policy(tau);
    let runs = monte_carlo(&j, &p, Horizon::Window(2000.0 * 86400.0), 3, 16);
    let lost: f64 = runs.iter().map(|r| r.lost_s).sum();
    let n: f64 = runs.iter().map(|r| r.struck_training as f64).sum();
    let per = lost / n;
    eprintln!("{n} failures, lost {per:.1} s each (tau {tau})");
    assert!(n > 5000.0);
    assert!(
        (per / (tau / 2.0) - 1.0).abs() < 0.03,
        "lost {per:.1} s per failure, expected ~{}",
        tau / 2.0
    );
}

#[test]
fn goodput_falls_monotonically_with_failure_rate() {
    let text = include_str!("../../../examples/reliability-llama3.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("reliability-llama3.yaml", text, cat).unwrap();
    let base = setup(&s, cat).unwrap();
    let mut last = f64::INFINITY;
    for scale in [0.25, 0.5, 1.0, 2.0, 4.0, 8.0] {
        let mut su = base.clone();
        su.job.scale = scale;
        // At a fixed interval and at each rate's own optimum.
        let fixed = su.checkpoint.policy(600.0);
        let runs = monte_carlo(&su.job, &fixed, Horizon::Window(30.0 * 86400.0), 5, 200);
        let ettr_fixed = runs.iter().map(|r| r.ettr()).sum::<f64>() / runs.len() as f64;
        let r = myriad_reliability::analyze(
            &su,
            &Options {
                days: Some(30.0),
                replicas: 200,
                seed: 5,
            },
        )
        .unwrap();
        eprintln!("scale {scale}: ETTR {ettr_fixed:.4} at 600 s, {:.4} at the optimum {:.0} s, goodput {:.0}", r.summary.ettr.mean, r.interval_s, r.goodput_tokens_per_s.mean);
        assert!(
            r.goodput_tokens_per_s.mean < last,
            "goodput rose at scale {scale}"
        );
        assert!(ettr_fixed <= r.summary.ettr.mean + 0.002);
        last = r.goodput_tokens_per_s.mean;
    }
}

#[test]
fn time_adds_up_in_every_replica() {
    let text = include_str!("../../../examples/reliability-llama3.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("reliability-llama3.yaml", text, cat).unwrap();
    let su = setup(&s, cat).unwrap();
    let policies: Vec<Policy> = vec![
        su.checkpoint.policy_as(300.0, false, false),
        su.checkpoint.policy_as(120.0, true, false),
        su.checkpoint.policy_as(60.0, true, true),
    ];
    let mut tight = su.job.clone();
    tight.pool_domains = 2;
    tight.repair_s = 48.0 * 3600.0;
    for job in [&su.job, &tight] {
        for p in &policies {
            for horizon in [
                Horizon::Window(54.0 * 86400.0),
                Horizon::Work(40.0 * 86400.0),
            ] {
                for i in 0..20 {
                    let r = replica(job, p, horizon, 11, i);
                    let sum = r.work_s + r.lost_s + r.stall_s + r.down_s;
                    assert!(
                        (sum - r.wall_s).abs() < 1e-6 * r.wall_s,
                        "wall {} != work {} + lost {} + stall {} + down {} ({p:?})",
                        r.wall_s,
                        r.work_s,
                        r.lost_s,
                        r.stall_s,
                        r.down_s
                    );
                    if let Horizon::Work(w) = horizon {
                        if r.capped {
                            // `tight` waits days for each repair: an ETTR near 0.1%, stopped
                            // at 20 times its failure-free time and projected from its ETTR.
                            assert!(r.work_s < w);
                            assert!(
                                (r.projected_wall_s - r.wall_s * w / r.work_s).abs()
                                    < 1e-6 * r.projected_wall_s
                            );
                        } else {
                            assert!((r.work_s - w).abs() < 1e-6 * w);
                            assert_eq!(r.projected_wall_s, r.wall_s);
                        }
                    }
                    assert!(r.wait_s <= r.down_s + 1e-9);
                }
            }
        }
    }
}

#[test]
fn a_run_past_the_event_cap_is_projected_from_its_ettr() {
    // One failure an hour, a 60 s restart, 10 s checkpoints at Young/Daly's interval: twenty
    // years of work is about 350,000 events, far past `MAX_EVENTS`. Each replica stops a bit
    // over a year in; its projected time must agree with a one-year window's ETTR.
    let (mtbf_s, delta_s) = (3600.0, 10.0);
    let j = job(mtbf_s, 60.0);
    let p = ckpt(delta_s).policy(young_daly(delta_s, mtbf_s));
    let target = 20.0 * 365.0 * 86400.0;
    let capped = monte_carlo(&j, &p, Horizon::Work(target), 5, 8);
    let window = monte_carlo(&j, &p, Horizon::Window(365.0 * 86400.0), 6, 8);
    assert!(window.iter().all(|r| !r.capped));
    let ettr = window.iter().map(|r| r.ettr()).sum::<f64>() / 8.0;
    for r in &capped {
        assert!(r.capped, "a 20-year run must stop at the event cap");
        assert!(r.wall_s < 2.0 * 365.0 * 86400.0 && r.work_s < target);
        let projected = r.projected_wall_s / target;
        eprintln!(
            "stopped at {:.0} days, ETTR {:.4}; projected {projected:.4} of the work vs 1/ETTR of a window {:.4}",
            r.wall_s / 86400.0,
            r.ettr(),
            1.0 / ettr
        );
        assert!((projected * ettr - 1.0).abs() < 0.01);
    }
    // A window past the event cap stops early too; with no run to project, its projected
    // wall time is what it simulated.
    let long = replica(&j, &p, Horizon::Window(5.0 * 365.0 * 86400.0), 7, 0);
    assert!(long.capped && long.wall_s < 2.0 * 365.0 * 86400.0);
    assert_eq!(long.projected_wall_s, long.wall_s);
    assert!((long.ettr() * (1.0 / ettr) - 1.0).abs() < 0.01);
}

#[test]
fn a_stop_inside_a_planned_checkpoint_counts_only_the_stall_that_ran() {
    // A planned stop every ~100 s whose synchronous checkpoint takes 1,000 s: windows and
    // failures keep landing inside that stall, before the downtime it precedes begins.
    // Only the part of the stall that ran is a stall, and no down time is negative.
    let mut j = job(400.0, 60.0);
    j.planned_per_s = 0.01;
    j.planned_downtime_s = 30.0;
    let p = ckpt(1000.0).policy(3600.0);
    assert_eq!(p.planned_stall_s, 1000.0);
    let no_failures = {
        let mut k = j.clone();
        k.causes.clear();
        k
    };
    for (job, horizon) in [
        (&no_failures, Horizon::Window(500.0)),
        (&j, Horizon::Window(86400.0)),
        (&j, Horizon::Work(86400.0)),
    ] {
        for i in 0..50 {
            let r = replica(job, &p, horizon, 3, i);
            let sum = r.work_s + r.lost_s + r.stall_s + r.down_s;
            assert!((sum - r.wall_s).abs() < 1e-6 * r.wall_s);
            assert!(
                r.down_s >= 0.0 && r.stall_s >= 0.0 && r.stall_s <= r.wall_s,
                "down {} stall {} wall {} ({horizon:?}, replica {i})",
                r.down_s,
                r.stall_s,
                r.wall_s
            );
            if job.causes.is_empty() && r.planned > 0 {
                // The 500 s window ends inside the first planned checkpoint.
                assert_eq!(r.down_s, 0.0);
                assert!((r.work_s + r.stall_s - 500.0).abs() < 1e-9);
            }
        }
    }
}

#[test]
fn a_failure_during_a_planned_checkpoint_loses_the_work_it_was_saving() {
    // No periodic checkpoints (interval past the window): the only checkpoints are the
    // synchronous ones before planned stops, rate p, each taking S. Failures at rate λ,
    // recovery instantaneous. From a restart the job trains X ~ Exp(p + λ); a failure first
    // loses X; a planned stop first saves X only if no failure strikes during its S-second
    // write (probability e^(-λS)), else X is lost with the unwritten checkpoint. So
    // ETTR = (p/(p+λ))·e^(-λS)/(p+λ) / (1/(p+λ) + (p/(p+λ))·(1 - e^(-λS))/λ).
    // Before the fix a failure inside the write kept X as if the checkpoint had been written
    // (ETTR ~0.31 here instead of ~0.11).
    let (lambda, p_rate, s) = (1e-3, 1e-3, 1000.0);
    let mut j = job(1.0 / lambda, 0.0);
    j.planned_per_s = p_rate;
    j.planned_downtime_s = 0.0;
    let p = ckpt(s).policy(1e9);
    assert_eq!(p.planned_stall_s, s);
    let rate = p_rate + lambda;
    let planned_first = p_rate / rate;
    let saved = (-lambda * s).exp();
    let want = planned_first * saved / rate / (1.0 / rate + planned_first * (1.0 - saved) / lambda);
    let runs = monte_carlo(&j, &p, Horizon::Window(1e7), 9, 32);
    let e: Vec<f64> = runs.iter().map(|r| r.ettr()).collect();
    let n = e.len() as f64;
    let mean = e.iter().sum::<f64>() / n;
    let se = (e.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    eprintln!("ETTR {mean:.4} ± {se:.4}, closed form {want:.4}");
    assert!(
        (mean - want).abs() < 4.0 * se + 0.002,
        "ETTR {mean:.4} ± {se:.4} vs closed form {want:.4}"
    );
    for r in &runs {
        let sum = r.work_s + r.lost_s + r.stall_s + r.down_s;
        assert!((sum - r.wall_s).abs() < 1e-6 * r.wall_s);
    }
}

#[test]
fn checkpoint_counts_past_u64_do_not_wrap() {
    // Nothing fails, a checkpoint every nanosecond (the shortest interval run) costing a
    // picosecond, for 1e12 s: about 1e21 checkpoints, more than a u64 holds. The count
    // saturated at 2^64 (and `+ 1` on it wrapped to 0, a panic in debug builds).
    let mut j = job(1.0, 0.0);
    j.causes.clear();
    let mut c = ckpt(1e-12);
    c.write_s = 1e-12;
    let p = c.policy(1e-9);
    let r = replica(&j, &p, Horizon::Window(1e12), 1, 0);
    let period: f64 = 1e-9 + 1e-12;
    let want = (1e12 / period).floor();
    assert!(
        (r.checkpoints / want - 1.0).abs() < 1e-9,
        "{} checkpoints, want {want}",
        r.checkpoints
    );
    let sum = r.work_s + r.lost_s + r.stall_s + r.down_s;
    assert!((sum - r.wall_s).abs() < 1e-6 * r.wall_s);
}

#[test]
fn ettr_matches_dalys_expected_time_per_segment() {
    // Exponential failures of mean M, synchronous checkpoints of δ every τ, recovery R
    // (restarted by a failure during it): each segment of τ work takes on average
    // M e^(R/M) (e^((τ+δ)/M) - 1) (Daly 2006, exact for this model), so ETTR is τ over
    // that. Windows and whole runs, from restarts short and long against M.
    for (m, d, r, tau) in [
        (3600.0, 30.0, 120.0, 450.0),
        (3600.0, 300.0, 600.0, 1500.0),
        (1000.0, 100.0, 2000.0, 700.0),
    ] {
        let j = job(m, r);
        let p = ckpt(d).policy(tau);
        let want = tau / (m * (r / m).exp() * (((tau + d) / m).exp() - 1.0));
        for h in [Horizon::Window(2000.0 * m), Horizon::Work(500.0 * m)] {
            let e: Vec<f64> = monte_carlo(&j, &p, h, 3, 64)
                .iter()
                .map(|x| x.ettr())
                .collect();
            let n = e.len() as f64;
            let mean = e.iter().sum::<f64>() / n;
            let se = (e.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
            eprintln!("M {m} δ {d} R {r} τ {tau} {h:?}: ETTR {mean:.5} ± {se:.5}, Daly {want:.5}");
            assert!(
                (mean - want).abs() < 4.0 * se + 1e-3,
                "ETTR {mean} ± {se} vs Daly {want}"
            );
        }
    }
}

#[test]
fn a_run_near_f64_max_is_projected_without_overflow() {
    // A run of 1e307 s of work stops at the event cap; its time to train is the work over
    // its ETTR. `wall × work / kept` overflowed to infinity (printed "never" beside an ETTR
    // of 93%); the projection is finite and equals target / ETTR.
    let j = job(3600.0, 60.0);
    let p = ckpt(10.0).policy(300.0);
    let target = 1e307;
    let r = replica(&j, &p, Horizon::Work(target), 2, 0);
    assert!(r.capped && r.ettr() > 0.5);
    assert!(r.projected_wall_s.is_finite(), "{}", r.projected_wall_s);
    assert!((r.projected_wall_s * r.ettr() / target - 1.0).abs() < 1e-9);
}

#[test]
fn a_window_too_long_for_seconds_is_an_error() {
    // 1e305 days is 8.6e309 s, infinite in f64: with nothing failing the replica ran a
    // window of infinity and reported ETTR NaN.
    let text = include_str!("../../../examples/reliability-llama3.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("reliability-llama3.yaml", text, cat).unwrap();
    let su = setup(&s, cat).unwrap();
    let e = su.horizon(Some(1e305)).unwrap_err();
    assert!(e.starts_with("days: 1e305 is more than"), "{e}");
    assert!(su.horizon(Some(1e300)).is_ok());
}

/// Guards against multi-level checkpoints counting the storage level from the last restart:
/// a restart from the in-memory copy made the work it restored count as on storage, and the
/// next storage checkpoint came `storage_every` checkpoints after the restart rather than
/// at the run's next `storage_every`-th checkpoint (M = 300 s, 10-checkpoint storage, 20%
/// of failures losing memory: 64.4 s lost per failure against the 78.7 s below).
///
/// Closed form with no stall, lag or down time: the storage window is `E` intervals of `τ`;
/// an interval completes with `p = e^(-τ/M)`; a failure in it loses `s` (mean
/// `M - τ p / (1 - p)`) and, with probability `f`, also the `j τ` done since the window
/// began. Entering interval `j` of a window happens `a^j` times per window start, with
/// `a = p / (p + (1 - p) f)`, and every entry sees the same failures, so the lost work per
/// failure is `E[s] + f τ Σ j a^j / Σ a^j` (j < E).
#[test]
fn multi_level_lost_work_counts_from_the_runs_storage_checkpoints() {
    let closed = |m: f64, tau: f64, e: u32, f: f64| {
        let p = (-tau / m).exp();
        let q = 1.0 - p;
        let a = p / (p + q * f);
        let (s0, s1) = (0..e).fold((0.0, 0.0), |(s0, s1), j| {
            (s0 + a.powi(j as i32), s1 + j as f64 * a.powi(j as i32))
        });
        m - tau * p / q + f * tau * s1 / s0
    };
    let tau = 60.0;
    for (mtbf_s, every, f) in [
        (300.0, 10u32, 0.2),
        (600.0, 10, 0.5),
        (6000.0, 10, 0.5),
        (200.0, 4, 0.3),
        (600.0, 10, 1.0),
    ] {
        let p = Policy {
            interval_s: tau,
            stall_s: 1e-6,
            lag_s: 0.0,
            persist: Some(Persist {
                every,
                lag_s: 0.0,
                lost_fraction: f,
            }),
            restore_s: 0.0,
            restore_storage_s: 0.0,
            planned_stall_s: 0.0,
        };
        let runs = monte_carlo(&job(mtbf_s, 0.0), &p, Horizon::Window(1e4 * mtbf_s), 3, 32);
        let lost: f64 = runs.iter().map(|r| r.lost_s).sum();
        let n: f64 = runs.iter().map(|r| r.struck_training as f64).sum();
        let (per, want) = (lost / n, closed(mtbf_s, tau, every, f));
        eprintln!("M {mtbf_s} E {every} f {f}: {per:.2} s lost per failure, closed form {want:.2}");
        assert!(n > 300_000.0);
        assert!(
            (per / want - 1.0).abs() < 0.01,
            "M {mtbf_s}, every {every}, memory lost {f}: {per:.2} s per failure, closed form {want:.2}"
        );
    }
}

/// Guards against the lost work per failure dividing by the interruptions that struck
/// training only, while the lost work also held what interruptions during recovery lost
/// (multi-level: one that loses the in-memory copy sends the job back to storage).
///
/// Closed form for the count: checkpoints to memory every few milliseconds (a training
/// strike that keeps memory loses almost nothing), recovery `D` restarted by every failure.
/// After a strike that kept memory (probability `1 - f`) the recovery sees `K` failures,
/// `P(K = k) = q^k (1 - q)` with `q = 1 - e^(-D/M)`, and rolls back to storage at the first
/// that loses memory: probability `g = 1 - (1 - q) / (1 - q (1 - f))`. So there are
/// `1 + (1 - f) g` rollbacks per training strike, and the lost work per failure is the lost
/// work over them, not over the strikes alone (which read `1 + (1 - f) g` times too much).
#[test]
fn lost_work_per_failure_counts_rollbacks_during_recovery() {
    let (mtbf_s, down_s, f) = (600.0, 600.0, 0.4);
    let mut j = job(mtbf_s, down_s);
    j.restart_s = down_s;
    let p = Policy {
        interval_s: 1e-3,
        stall_s: 0.0,
        lag_s: 0.0,
        persist: Some(Persist {
            every: 300_000,
            lag_s: 0.0,
            lost_fraction: f,
        }),
        restore_s: 0.0,
        restore_storage_s: 0.0,
        planned_stall_s: 0.0,
    };
    let runs = monte_carlo(&j, &p, Horizon::Window(2e4 * mtbf_s), 5, 16);
    let q: f64 = 1.0 - (-down_s / mtbf_s).exp();
    let g = 1.0 - (1.0 - q) / (1.0 - q * (1.0 - f));
    let per_strike = 1.0 + (1.0 - f) * g;
    let strikes: f64 = runs.iter().map(|r| r.struck_training as f64).sum();
    let rollbacks: f64 = runs.iter().map(|r| r.rollbacks as f64).sum();
    eprintln!(
        "{strikes} strikes, {rollbacks} rollbacks: {:.4} per strike, closed form {per_strike:.4}",
        rollbacks / strikes
    );
    assert!(strikes > 50_000.0);
    assert!((rollbacks / strikes / per_strike - 1.0).abs() < 0.01);
    let lost: f64 = runs.iter().map(|r| r.lost_s).sum();
    let sm = myriad_reliability::Summary::of(&runs, 1e-3);
    let want = lost / strikes / per_strike;
    assert!(
        (sm.lost_work_per_failure_s / want - 1.0).abs() < 0.01,
        "{} s lost per failure, {want:.1} s by the closed-form count",
        sm.lost_work_per_failure_s
    );
}
