//! The flow backend behind the step model's collective timer (`FlowTimer`), and
//! concurrent programs in the engine.

use myriad_collective::{Algorithm, Analytical, CollectiveTimer, Concurrent, Layout, Op};
use myriad_netsim::{
    flow_choice, groups_program, simulate, strided, FlowTimer, Network, SimOptions,
};

fn scenario(path: &str) -> (myriad_scenario::Scenario, myriad_cluster::BuiltCluster) {
    let cat = myriad_catalog::catalog();
    let text = std::fs::read_to_string(path).unwrap();
    let s = myriad_scenario::parse_scenario(path, &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    (s, c)
}

fn groups(l: &Layout) -> Vec<Vec<u32>> {
    l.group_starts()
        .map(|r| strided(r, l.n, l.stride))
        .collect()
}

/// A long ring beside a short background program: the steady-state shortcut must not
/// take a step that overlapped the background as the period (it did once: 60% too slow).
#[test]
fn steady_state_skip_is_exact_beside_a_finished_background_program() {
    let (_, c) = scenario("../../examples/dgx-superpod-h100.yaml");
    let net = Network::from_cluster(&c);
    let dp = Layout {
        n: 32,
        stride: 32,
        accelerators: 1024,
    };
    let pp = Layout {
        n: 8,
        stride: 4,
        accelerators: 1024,
    };
    let span = myriad_train::Plan::span(&c.levels, dp.n, dp.stride);
    let ch = flow_choice(Op::ReduceScatter, Algorithm::Ring, 4e9, &span, &c.levels);
    let (main, _) = groups_program(&net, Op::ReduceScatter, ch, 4e9, &groups(&dp)).unwrap();
    let pspan = myriad_train::Plan::span(&c.levels, pp.n, pp.stride);
    let pch = flow_choice(Op::SendRecv, Algorithm::Auto, 5e7, &pspan, &c.levels);
    let (bg, _) = groups_program(&net, Op::SendRecv, pch, 5e7, &groups(&pp)).unwrap();
    let progs = [main, bg];
    let fast = simulate(&net, &progs, &SimOptions::default()).unwrap();
    let exact = simulate(
        &net,
        &progs,
        &SimOptions {
            no_skip: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(fast.steps_skipped > 0);
    for (a, b) in fast.programs.iter().zip(&exact.programs) {
        assert!(
            (a.end_s / b.end_s - 1.0).abs() < 1e-9,
            "{}: {} with the shortcut, {} step by step",
            a.name,
            a.end_s,
            b.end_s
        );
    }
    assert!((fast.bytes_delivered / exact.bytes_delivered - 1.0).abs() < 1e-9);
}

/// On an idle non-blocking fabric the timer agrees with the analytical model, the
/// background can only slow the timed collective, and answers are memoised.
#[test]
fn flow_timer_agrees_on_an_idle_fabric_and_background_only_slows() {
    let (_, c) = scenario("../../examples/dgx-superpod-h100.yaml");
    let net = Network::from_cluster(&c);
    let timer = FlowTimer::new(&net, &c.levels, SimOptions::default());
    let an = Analytical { levels: &c.levels };
    let dp = Layout {
        n: 32,
        stride: 32,
        accelerators: 1024,
    };
    let span = myriad_train::Plan::span(&c.levels, dp.n, dp.stride);
    for op in [Op::ReduceScatter, Op::AllGather, Op::AllReduce] {
        let f = timer.time(op, 2e9, &span, &dp);
        let a = an.time(op, 2e9, &span, &dp);
        assert!(
            (f / a - 1.0).abs() < 0.10,
            "{op:?}: flow {f} analytical {a}"
        );
    }
    let pp = Layout {
        n: 8,
        stride: 4,
        accelerators: 1024,
    };
    let bg = [Concurrent {
        op: Op::SendRecv,
        bytes: 2e9,
        layout: pp,
    }];
    let alone = timer.time(Op::ReduceScatter, 2e9, &span, &dp);
    let during = timer.time_during(Op::ReduceScatter, 2e9, &span, &dp, &bg);
    assert!(during >= alone * (1.0 - 1e-12), "{during} < {alone}");
    // The background is named as `myriad collective` spells ops (it read `SendRecv x …`).
    let beside: Vec<String> = timer.log().into_iter().flat_map(|c| c.background).collect();
    assert_eq!(beside, ["send-recv x 128 groups of 8"]);
    let simulated = timer.log().len();
    assert_eq!(timer.time(Op::ReduceScatter, 2e9, &span, &dp), alone);
    assert_eq!(
        timer.log().len(),
        simulated,
        "a repeated request is memoised"
    );
    assert!(timer.errors().is_empty());
}

/// The whole step through the flow timer: on the non-blocking SuperPOD it matches the
/// analytical step; across 7:1 islands it is slower, by the communication only.
#[test]
fn step_estimate_with_the_flow_timer() {
    for (path, idle) in [
        ("../../examples/dgx-superpod-h100.yaml", true),
        ("../../examples/netsim-moe-islands.yaml", false),
    ] {
        let (s, c) = scenario(path);
        let cat = myriad_catalog::catalog();
        let model = s.model.as_ref().unwrap().resolve(cat).unwrap();
        let spec = s.training.clone().unwrap();
        let t = myriad_train::train(&spec, &model, &c, s.cluster.count).unwrap();
        let net = Network::from_cluster(&c);
        let timer = FlowTimer::new(&net, &c.levels, SimOptions::default());
        let f = myriad_train::estimate_with(&model, &t.plan, &c, &timer);
        let a = &t.estimate;
        assert!(timer.errors().is_empty(), "{:?}", timer.errors());
        assert!(!timer.log().is_empty());
        // Compute is the same; only communication terms may differ.
        assert_eq!(f.breakdown.forward_s, a.breakdown.forward_s);
        assert_eq!(f.breakdown.backward_s, a.breakdown.backward_s);
        let r = f.step_time_s / a.step_time_s;
        if idle {
            assert!((r - 1.0).abs() < 0.03, "{path}: flow/analytical step {r}");
        } else {
            assert!(r > 1.0, "{path}: flow/analytical step {r}");
        }
    }
}

/// Hash ECMP with one flow per ring connection collides on leaf uplinks (the single-QP
/// worst case); splitting each connection into queue pairs (`qps_per_connection`, Meta's
/// 16 on the Llama 3 cluster) spreads it back to the analytical figure, and where nothing
/// collides splitting changes nothing (the latency of a connection is not multiplied).
#[test]
fn queue_pairs_per_connection_spread_hash_ecmp_collisions() {
    let time = |count: u32, qps: u32| -> (f64, f64) {
        let text = format!(
            "format: myriad/1\ncluster:\n  accelerator: h100-sxm\n  count: {count}\n  scale_up: hgx-h100\n  scale_out: {{fabric: roce-400g, topology: fat-tree, qps_per_connection: {qps}}}\n"
        );
        let cat = myriad_catalog::catalog();
        let s = myriad_scenario::parse_scenario("roce.yaml", &text, cat).unwrap();
        let c = myriad_cluster::build(&s, cat).unwrap();
        let net = Network::from_cluster(&c);
        assert_eq!(net.qps_per_connection(), qps);
        let ranks: Vec<u32> = (0..count).collect();
        let span = myriad_train::Plan::span(&c.levels, count as u64, 1);
        let ch = flow_choice(
            Op::ReduceScatter,
            Algorithm::Ring,
            (1u64 << 30) as f64,
            &span,
            &c.levels,
        );
        let (f, _) = myriad_netsim::time_collective(
            &net,
            Op::ReduceScatter,
            ch,
            (1u64 << 30) as f64,
            &ranks,
            &SimOptions::default(),
        )
        .unwrap();
        let a = myriad_collective::time(
            Op::ReduceScatter,
            Algorithm::Ring,
            (1u64 << 30) as f64,
            &span,
            &c.levels,
        )
        .unwrap()
        .time_s;
        (f.time_s, a)
    };
    let (one, a) = time(1024, 1);
    let (sixteen, _) = time(1024, 16);
    assert!(one / a > 1.15, "single QP: {one} vs analytical {a}");
    assert!(
        (sixteen / a - 1.0).abs() < 0.03,
        "16 QPs: {sixteen} vs analytical {a}"
    );
    let (one, _) = time(512, 1);
    let (sixteen, _) = time(512, 16);
    assert!(
        (sixteen / one - 1.0).abs() < 0.005,
        "no collisions: {one} vs {sixteen}"
    );
}

/// A background collective (the pipeline's sends beside the DP reduce-scatter) runs what
/// NCCL's tuner picks for its size on its group as the hierarchy places it: it was chosen
/// with no hierarchy levels, so it always ran on the Simple protocol (64 KiB sends moved
/// 64 KiB on the wire where LL128 moves 64 KiB / 0.89). The trace's background flows carry
/// the bytes of the analytical choice's protocol.
#[test]
fn a_background_collective_runs_the_protocol_nccl_picks() {
    let (_, c) = scenario("../../examples/dgx-superpod-h100.yaml");
    let net = Network::from_cluster(&c);
    let timer = FlowTimer::new(
        &net,
        &c.levels,
        SimOptions {
            trace: true,
            ..Default::default()
        },
    );
    let dp = Layout {
        n: 32,
        stride: 32,
        accelerators: 1024,
    };
    let pp = Layout {
        n: 8,
        stride: 4,
        accelerators: 1024,
    };
    let bytes = 65536.0;
    let span = myriad_train::Plan::span(&c.levels, dp.n, dp.stride);
    let pspan = myriad_train::Plan::span(&c.levels, pp.n, pp.stride);
    let want = flow_choice(Op::SendRecv, Algorithm::Auto, bytes, &pspan, &c.levels);
    assert_ne!(want.protocol, myriad_collective::Protocol::Simple);
    let bw = myriad_collective::PROTOCOLS
        .iter()
        .find(|p| p.protocol == want.protocol)
        .unwrap()
        .bw;
    let bg = [Concurrent {
        op: Op::SendRecv,
        bytes,
        layout: pp,
    }];
    timer.time_during(Op::ReduceScatter, 2e9, &span, &dp, &bg);
    let trace: serde_json::Value = serde_json::from_str(&timer.chrome_trace(&[])).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let pid = events
        .iter()
        .find(|e| {
            e["name"] == "process_name"
                && e["args"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("send-recv "))
        })
        .map(|e| e["pid"].clone())
        .expect("the background program is traced");
    let sends: Vec<f64> = events
        .iter()
        .filter(|e| e["pid"] == pid && e["cat"] == "flow")
        .map(|e| e["args"]["bytes"].as_f64().unwrap())
        .collect();
    assert!(!sends.is_empty());
    for b in sends {
        assert!(
            (b - bytes / bw).abs() <= 1.0,
            "{b} B on the wire, want {}",
            bytes / bw
        );
    }
}
