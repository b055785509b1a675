//! The search finds what a brute force over the same space finds, counts every rejection,
//! and is deterministic.
use myriad_search::{candidates, search, Fixed, Space};

fn setup(
    text: &str,
) -> (
    myriad_model::Transformer,
    myriad_cluster::BuiltCluster,
    Fixed,
) {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let f = Fixed::from_spec(s.training.as_ref().unwrap(), s.cluster.count);
    (m, c, f)
}

const GPT3: &str = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 512, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: gpt3-175b}\ntraining: {global_batch: 512, precision: bf16}\n";

#[test]
fn every_configuration_is_estimated_or_rejected_with_a_reason() {
    let (m, c, f) = setup(GPT3);
    let space = Space::full(&m);
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size());
    // Every candidate divides: tp*pp*cp*dp = accelerators, global batch = mb*dp*k, tp <= 8.
    for p in &plans {
        assert_eq!(p.tp as u64 * p.pp as u64 * p.cp as u64 * p.dp as u64, 512);
        assert_eq!(p.global_batch % (p.micro_batch as u64 * p.dp as u64), 0);
        assert!(p.tp <= 8);
    }
}

#[test]
fn best_equals_brute_force_minimum_and_fits() {
    let (m, c, f) = setup(GPT3);
    let space = Space::full(&m);
    let r = search(&m, &c, &f, &space, 5, &|_, _| {});
    let (plans, _) = candidates(&m, &c, &f, &space);
    let brute = plans
        .iter()
        .map(|p| myriad_train::estimate(&m, p, &c))
        .filter(|e| e.fits)
        .map(|e| e.step_time_s)
        .fold(f64::INFINITY, f64::min);
    let best = &r.top[0];
    assert_eq!(best.estimate.step_time_s, brute);
    assert!(best.estimate.fits);
    assert!(r
        .top
        .windows(2)
        .all(|w| w[0].estimate.step_time_s <= w[1].estimate.step_time_s));
    assert_eq!(r.evaluated, plans.len() as u64);
    assert!(r.feasible <= r.evaluated);
    // GPT-3 175B cannot run with TP 1 and PP 1 on 80 GB without ZeRO-3: the best uses
    // model parallelism.
    assert!(best.plan.tp * best.plan.pp > 1 || best.plan.zero_stage == 3);
}

#[test]
fn search_is_deterministic() {
    let (m, c, f) = setup(GPT3);
    let space = Space::full(&m);
    let a = search(&m, &c, &f, &space, 10, &|_, _| {});
    let b = search(&m, &c, &f, &space, 10, &|_, _| {});
    let key = |r: &myriad_search::SearchResult| {
        r.top
            .iter()
            .map(|x| format!("{:?} {}", x.plan, x.estimate.step_time_s))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
}

#[test]
fn moe_search_uses_expert_parallelism() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 256, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: qwen3-30b-a3b}\ntraining: {global_batch: 512, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let r = search(&m, &c, &f, &Space::full(&m), 3, &|_, _| {});
    assert!(!r.top.is_empty());
    // Every estimated plan's EP divides the 128 experts and the data-parallel size.
    let (plans, _) = candidates(&m, &c, &f, &Space::full(&m));
    assert!(plans.iter().any(|p| p.ep > 1));
    assert!(plans.iter().all(|p| 128 % p.ep == 0 && p.dp % p.ep == 0));
}
