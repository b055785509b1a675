//! Step-estimate speed: model, plan and built cluster in hand.
use myriad_scenario::parse_scenario;

fn main() {
    divan::main();
}

fn setup(
    text: &str,
    acc: u64,
) -> (
    myriad_model::Transformer,
    myriad_train::Plan,
    myriad_cluster::BuiltCluster,
) {
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("bench.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let (p, _) = myriad_train::resolve(s.training.as_ref().unwrap(), &m, &c, acc).unwrap();
    (m, p, c)
}

#[divan::bench]
fn gpt3_175b_1024_h100(b: divan::Bencher) {
    let (m, p, c) = setup(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: gpt3-175b}\ntraining: {tp: 4, pp: 8, dp: 32, global_batch: 2048, micro_batch: 1, vpp: 12, precision: bf16, recompute: none}\n",
        1024,
    );
    b.bench(|| {
        myriad_train::estimate(
            divan::black_box(&m),
            divan::black_box(&p),
            divan::black_box(&c),
        )
    });
}

#[divan::bench]
fn validate_public_file(b: divan::Bencher) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let file = myriad_scenario::validation::parse_validation(path, &text).unwrap();
    let cat = myriad_catalog::catalog();
    b.bench(|| myriad_train::validate::validate(divan::black_box(&file.cases), cat));
}
