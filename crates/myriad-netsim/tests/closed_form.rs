//! Closed-form checks of the engine on hand-built networks: one flow, fair sharing, the
//! textbook max-min examples, latency, conservation, phases.

use myriad_netsim::{
    simulate, Fault, FaultTarget, FlowSpec, LatencyRule, Network, Phase, Program, SimError,
    SimOptions,
};

fn prog(paths: Vec<Vec<u32>>, flows: Vec<FlowSpec>) -> Program {
    Program {
        name: "test".into(),
        paths,
        phases: vec![Phase::once(flows)],
        ..Default::default()
    }
}

fn traced() -> SimOptions {
    SimOptions {
        trace: true,
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

#[test]
fn one_flow_on_one_link_takes_bytes_over_capacity_plus_latency() {
    let net = Network::custom(vec![50e9], vec![3e-6]);
    let r = simulate(
        &net,
        &[prog(vec![vec![0]], vec![FlowSpec::on_path(0, 1e9)])],
        &SimOptions::default(),
    )
    .unwrap();
    assert!(close(r.time_s, 1e9 / 50e9 + 3e-6), "{}", r.time_s);
    // Latency adds up over the links of a path.
    let net = Network::custom(vec![50e9, 25e9], vec![3e-6, 1e-6]);
    let r = simulate(
        &net,
        &[prog(vec![vec![0, 1]], vec![FlowSpec::on_path(0, 1e9)])],
        &SimOptions::default(),
    )
    .unwrap();
    assert!(close(r.time_s, 1e9 / 25e9 + 4e-6), "{}", r.time_s);
}

#[test]
fn two_flows_sharing_a_link_each_get_half() {
    let net = Network::custom(vec![100e9], vec![0.0]);
    let p = prog(
        vec![vec![0]],
        vec![FlowSpec::on_path(0, 1e9), FlowSpec::on_path(0, 1e9)],
    );
    let r = simulate(&net, &[p], &traced()).unwrap();
    assert!(close(r.time_s, 2e9 / 100e9));
    for s in &r.trace {
        assert!(close(s.end_s, 0.02), "{s:?}");
    }
    // Unequal sizes: the short one ends at 2·S1/C, then the long one has the link alone.
    let p = prog(
        vec![vec![0]],
        vec![FlowSpec::on_path(0, 1e9), FlowSpec::on_path(0, 3e9)],
    );
    let r = simulate(&net, &[p], &traced()).unwrap();
    let ends: Vec<f64> = r.trace.iter().map(|s| s.end_s).collect();
    assert!(close(ends[0], 0.02), "{ends:?}");
    assert!(close(ends[1], 0.04), "{ends:?}");
}

/// Each flow's size is its max-min rate × 1 s, so every flow ends at exactly 1 s if and
/// only if the engine gives each its textbook rate (any other rate ends some flow earlier
/// and changes the rest).
fn all_end_at_one_second(caps: Vec<f64>, paths: Vec<Vec<u32>>, rates: &[f64]) {
    let n = caps.len();
    let net = Network::custom(caps, vec![0.0; n]);
    let flows = rates
        .iter()
        .enumerate()
        .map(|(i, &r)| FlowSpec::on_path(i as u32, r))
        .collect();
    let r = simulate(&net, &[prog(paths, flows)], &traced()).unwrap();
    for s in &r.trace {
        assert!(close(s.end_s, 1.0), "flow {} ended at {} s", s.src, s.end_s);
    }
}

#[test]
fn max_min_parking_lot() {
    // Three unit links in a row; one flow crosses all three, one short flow on each link:
    // every flow gets 1/2 (Bertsekas & Gallager, Data Networks, section 6.5.2).
    all_end_at_one_second(
        vec![1e9; 3],
        vec![vec![0, 1, 2], vec![0], vec![1], vec![2]],
        &[0.5e9, 0.5e9, 0.5e9, 0.5e9],
    );
}

#[test]
fn max_min_three_links_textbook_rates() {
    // Links L0 = 1, L1 = 1.5, L2 = 3 (GB/s). Flows: A over L0 and L1, B over L0, C over
    // L1 and L2, D over L2. Progressive filling: L0 saturates first at 1/2 (A = B = 0.5);
    // L1 then has 1.0 left for C alone; L2 has 3 - 1 = 2 for D. Rates 0.5, 0.5, 1, 2.
    all_end_at_one_second(
        vec![1e9, 1.5e9, 3e9],
        vec![vec![0, 1], vec![0], vec![1, 2], vec![2]],
        &[0.5e9, 0.5e9, 1.0e9, 2.0e9],
    );
}

/// A deterministic generator (no dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn random_traffic(seed: u64) -> (Network, Program) {
    let mut g = Lcg(seed);
    let nl = 12;
    let caps = (0..nl).map(|_| (1 + g.next() % 8) as f64 * 1e9).collect();
    let lats = (0..nl).map(|_| (g.next() % 5) as f64 * 1e-6).collect();
    let net = Network::custom(caps, lats);
    let mut paths = Vec::new();
    for _ in 0..40 {
        let len = 1 + g.next() % 4;
        let mut p: Vec<u32> = (0..len).map(|_| (g.next() % nl) as u32).collect();
        p.sort_unstable();
        p.dedup();
        paths.push(p);
    }
    let mut phases = Vec::new();
    for k in 0..5 {
        let flows = (0..30)
            .map(|_| {
                let mut f =
                    FlowSpec::on_path((g.next() % 40) as u32, (1 + g.next() % 1000) as f64 * 1e6);
                f.weight = 1 + (g.next() % 3) as u32;
                f
            })
            .collect();
        phases.push(Phase {
            repeat: 1 + k % 3,
            latency: if k % 2 == 0 {
                LatencyRule::Max
            } else {
                LatencyRule::Mean
            },
            ..Phase::once(flows)
        });
    }
    (
        net,
        Program {
            name: format!("random {seed}"),
            paths,
            phases,
            ..Default::default()
        },
    )
}

#[test]
fn bytes_are_conserved() {
    for seed in 1..6 {
        let (net, p) = random_traffic(seed);
        // Two programs at once, the second starting later.
        let mut q = p.clone();
        q.start_s = 0.05;
        let r = simulate(&net, &[p.clone(), q], &SimOptions::default()).unwrap();
        let sent: f64 = 2.0
            * p.phases
                .iter()
                .map(|ph| match &ph.flows {
                    myriad_netsim::PhaseFlows::List(v) => {
                        v.iter().map(|f| f.bytes * f.weight as f64).sum::<f64>() * ph.repeat as f64
                    }
                    _ => unreachable!(),
                })
                .sum::<f64>();
        assert!(
            (r.bytes_sent - sent).abs() <= 1e-9 * sent,
            "{} vs {sent}",
            r.bytes_sent
        );
        // Delivered bytes are the integral of the rates over time.
        assert!(
            (r.bytes_delivered - r.bytes_sent).abs() <= 1e-9 * sent,
            "seed {seed}: delivered {} sent {}",
            r.bytes_delivered,
            r.bytes_sent
        );
        // Every link carries the bytes of the flows that cross it.
        let mut expect = vec![0.0; net.links()];
        for ph in &p.phases {
            if let myriad_netsim::PhaseFlows::List(v) = &ph.flows {
                for f in v {
                    for &l in &p.paths[f.path.unwrap() as usize] {
                        expect[l as usize] += 2.0 * f.bytes * f.weight as f64 * ph.repeat as f64;
                    }
                }
            }
        }
        for (l, (a, b)) in r.link_bytes.iter().zip(&expect).enumerate() {
            assert!((a - b).abs() <= 1e-9 * b.max(1.0), "link {l}: {a} vs {b}");
        }
    }
}

/// Re-rating only the flows a change can affect (at or above the lowest drained rate,
/// connected to the changed links) gives the rates of re-rating the whole component every
/// time: flows of many sizes and weights, two programs overlapping, every flow's finish.
#[test]
fn rerating_what_changed_equals_rerating_everything() {
    let (mut fast_work, mut full_work) = (0, 0);
    for seed in 1..40 {
        let (net, p) = random_traffic(seed);
        let mut q = p.clone();
        q.start_s = 0.02 * (seed % 4) as f64;
        let progs = [p, q];
        let run = |full_rerate| {
            let opts = SimOptions {
                full_rerate,
                ..traced()
            };
            simulate(&net, &progs, &opts).unwrap()
        };
        let (fast, full) = (run(false), run(true));
        assert!(
            close(fast.time_s, full.time_s),
            "seed {seed}: {} vs {}",
            fast.time_s,
            full.time_s
        );
        for (a, b) in fast.link_bytes.iter().zip(&full.link_bytes) {
            assert!(
                (a - b).abs() <= 1e-9 * b.max(1.0),
                "seed {seed}: {a} vs {b}"
            );
        }
        let ends = |r: &myriad_netsim::SimResult| {
            let mut v: Vec<f64> = r.trace.iter().map(|s| s.end_s).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (a, b) = (ends(&fast), ends(&full));
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(close(*x, *y), "seed {seed}: a flow ends at {x} vs {y}");
        }
        fast_work += fast.flows_rerated;
        full_work += full.flows_rerated;
    }
    assert!(fast_work < full_work, "{fast_work} vs {full_work}");
}

#[test]
fn steady_state_advance_equals_step_by_step() {
    for seed in 1..6 {
        let (net, p) = random_traffic(seed);
        let fast = simulate(&net, std::slice::from_ref(&p), &SimOptions::default()).unwrap();
        let slow = simulate(
            &net,
            &[p],
            &SimOptions {
                no_skip: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            close(fast.time_s, slow.time_s),
            "{} vs {}",
            fast.time_s,
            slow.time_s
        );
        assert!(fast.steps_skipped > 0);
        assert_eq!(slow.steps_skipped, 0);
        for (a, b) in fast.link_bytes.iter().zip(&slow.link_bytes) {
            assert!((a - b).abs() <= 1e-9 * b.max(1.0));
        }
    }
}

#[test]
fn phases_run_in_sequence_and_repeat() {
    let net = Network::custom(vec![10e9], vec![1e-6]);
    let p = Program {
        name: "steps".into(),
        paths: vec![vec![0]],
        phases: vec![
            Phase {
                repeat: 4,
                ..Phase::once(vec![FlowSpec::on_path(0, 1e8)])
            },
            Phase {
                extra_s: 5e-6,
                ..Phase::once(vec![FlowSpec::on_path(0, 2e8)])
            },
        ],
        setup_s: 2e-6,
        ..Default::default()
    };
    let r = simulate(&net, &[p], &SimOptions::default()).unwrap();
    let expect = 2e-6 + 4.0 * (0.01 + 1e-6) + (0.02 + 1e-6) + 5e-6;
    assert!(close(r.time_s, expect), "{} vs {expect}", r.time_s);
}

#[test]
fn a_failed_link_on_a_fixed_path_is_an_error_naming_the_flow() {
    let net = Network::custom(vec![10e9, 10e9], vec![0.0, 0.0]);
    let p = prog(vec![vec![0, 1]], vec![FlowSpec::on_path(0, 1e9)]);
    let opts = SimOptions {
        faults: vec![Fault {
            at_s: 0.01,
            target: FaultTarget::Directed(1),
        }],
        ..Default::default()
    };
    let e = simulate(&net, &[p], &opts).unwrap_err();
    assert!(matches!(e, SimError::NoRoute { .. }), "{e}");
    assert!(e.to_string().contains("test"), "{e}");
    let bad = SimOptions {
        faults: vec![Fault {
            at_s: 0.0,
            target: FaultTarget::Directed(9),
        }],
        ..Default::default()
    };
    let p = prog(vec![vec![0]], vec![FlowSpec::on_path(0, 1e9)]);
    let e = simulate(&net, &[p], &bad).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cluster.faults[0]: directed link 9"),
        "{e}"
    );
}
