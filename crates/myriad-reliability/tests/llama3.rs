//! Validation against the Llama 3 405B run: 466 interruptions in 54 days on 16,384 H100
//! (47 planned, 419 unexpected, by cause in ../shared/validation/reliability-llama3.json),
//! effective training time above 90%.
use myriad_reliability::{analyze, setup, Component, Options};

fn llama3() -> myriad_reliability::Setup {
    let text = include_str!("../../../examples/reliability-llama3.yaml");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("reliability-llama3.yaml", text, cat).unwrap();
    setup(&s, cat).unwrap()
}

fn published() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/reliability-llama3.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("../shared/validation")).unwrap()
}

#[test]
fn llama3_54_days_interruptions_and_ettr() {
    let pubd = published();
    let total = pubd["interruptions"]["total"].as_f64().unwrap();
    let unexpected = pubd["interruptions"]["unexpected"].as_f64().unwrap();
    let planned = pubd["interruptions"]["planned"].as_f64().unwrap();
    let days = pubd["period_days"].as_f64().unwrap();
    let s = llama3();
    assert_eq!(s.job.accelerators, 16384);
    let r = analyze(
        &s,
        &Options {
            days: Some(days),
            replicas: 1000,
            seed: 1,
        },
    )
    .unwrap();
    let m = &r.summary;
    eprintln!("{:#?}", m);
    eprintln!(
        "interval {} yd {} opt {}",
        r.interval_s, r.young_daly_interval_s, r.optimal_checkpoint_interval_s
    );
    let got_total = m.unexpected + m.planned;
    assert!(
        (got_total / total - 1.0).abs() < 0.15,
        "total {got_total} vs {total}"
    );
    assert!(
        (m.unexpected / unexpected - 1.0).abs() < 0.15,
        "unexpected {} vs {unexpected}",
        m.unexpected
    );
    assert!(
        (m.planned / planned - 1.0).abs() < 0.25,
        "planned {} vs {planned}",
        m.planned
    );
    assert!(
        m.ettr.mean
            > pubd["effective_training_time_fraction_at_least"]
                .as_f64()
                .unwrap(),
        "ETTR {}",
        m.ettr.mean
    );
    // Per-cause split: the published causes grouped by component.
    let mut want = std::collections::BTreeMap::<Component, f64>::new();
    for c in pubd["unexpected_by_cause"].as_array().unwrap() {
        let comp = match c["component"].as_str().unwrap() {
            "Faulty GPU"
            | "GPU SRAM memory"
            | "GPU system processor"
            | "Silent data corruption"
            | "GPU thermal interface and sensor" => Component::Accelerator,
            "GPU HBM3 memory" => Component::Hbm,
            "Software bug" | "Dependency" => Component::Software,
            "Network switch/cable" => Component::Switch,
            "Host maintenance" | "SSD" | "Power supply" | "Server chassis"
            | "IO expansion board" | "CPU" | "System memory" => Component::Host,
            "NIC" => Component::Nic,
            "NCCL watchdog timeouts" => Component::Unknown,
            other => panic!("unmapped cause {other}"),
        };
        *want.entry(comp).or_default() += c["count"].as_f64().unwrap();
    }
    let got = |c: Component| m.by_component.iter().find(|x| x.0 == c).unwrap().1;
    for (c, n) in &want {
        let g = if *c == Component::Switch {
            got(Component::Switch) + got(Component::Link)
        } else {
            got(*c)
        };
        // Poisson spread of one 54-day run is sqrt(n); the mean of 1,000 is far tighter.
        let tol = 0.10 * n + 1.0;
        assert!((g - n).abs() < tol, "{c:?}: {g:.1} vs {n}");
    }
}
