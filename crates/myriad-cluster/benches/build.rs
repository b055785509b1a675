//! `cargo bench -p myriad-cluster`: building the cluster (hierarchy, topology graph, BOM,
//! power, cost, levels) for the 1,024-GPU DGX SuperPOD and the 100,008-GPU GB200 NVL72
//! cluster. Speed bar: the 100k build under 100 ms.

use myriad_catalog::{catalog, Catalog};
use myriad_scenario::{parse_scenario, Scenario};

fn main() {
    divan::main();
}

fn load(name: &str, text: &str) -> (Scenario, &'static Catalog) {
    let cat = catalog();
    (
        parse_scenario(name, text, cat).expect("example parses"),
        cat,
    )
}

#[divan::bench]
fn superpod_1024_h100(bencher: divan::Bencher) {
    let (s, cat) = load(
        "dgx-superpod-h100.yaml",
        include_str!("../../../examples/dgx-superpod-h100.yaml"),
    );
    bencher.bench(|| myriad_cluster::build(divan::black_box(&s), cat).unwrap());
}

#[divan::bench]
fn gb200_nvl72_100k(bencher: divan::Bencher) {
    let (s, cat) = load(
        "gb200-nvl72-100k.yaml",
        include_str!("../../../examples/gb200-nvl72-100k.yaml"),
    );
    bencher.bench(|| myriad_cluster::build(divan::black_box(&s), cat).unwrap());
}

#[divan::bench]
fn cloudmatrix384_165k(bencher: divan::Bencher) {
    let (s, cat) = load(
        "cloudmatrix384-165k.yaml",
        include_str!("../../../examples/cloudmatrix384-165k.yaml"),
    );
    bencher.bench(|| myriad_cluster::build(divan::black_box(&s), cat).unwrap());
}

#[divan::bench]
fn gb200_nvl72_100k_report(bencher: divan::Bencher) {
    let (s, cat) = load(
        "gb200-nvl72-100k.yaml",
        include_str!("../../../examples/gb200-nvl72-100k.yaml"),
    );
    let b = myriad_cluster::build(&s, cat).unwrap();
    bencher.bench(|| divan::black_box(&b).report());
}
