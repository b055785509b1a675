//! Benchmarks: one iteration-time estimate, and 1,000,000 requests through the simulation.
use myriad_scenario::Precision;
use myriad_serve::{
    simulate, Arrivals, Batch, Deployment, InstanceModel, LengthDist, Parallel, Precisions,
    RoleSpec, Slo, Workload,
};

fn main() {
    divan::main();
}

fn instance() -> InstanceModel {
    let cat = myriad_catalog::catalog();
    let acc = cat.accelerator("h100-sxm").unwrap();
    let model = cat.model("llama3-70b").unwrap().model.clone();
    let s = myriad_scenario::parse_scenario(
        "bench",
        "{\"format\":\"myriad/1\",\"cluster\":{\"accelerator\":\"h100-sxm\",\"count\":8}}",
        cat,
    )
    .unwrap();
    let b = myriad_cluster::build(&s, cat).unwrap();
    InstanceModel::new(
        acc,
        &b.levels,
        &model,
        Parallel::new(2, 1, 1),
        Precisions::new(Precision::Fp8, Precision::Fp8, Precision::Fp8),
        300e-6,
        false,
        None,
    )
    .unwrap()
}

#[divan::bench]
fn iteration_estimate(bencher: divan::Bencher) {
    let m = instance();
    let b = Batch {
        decode_seqs: 256.0,
        decode_ctx: 256.0 * 1500.0,
        // Contexts spread with a standard deviation of 800 tokens.
        decode_ctx_sq: 256.0 * (1500.0 * 1500.0 + 800.0 * 800.0),
        decode_ctx_seqs: 0.0,
        prefill_tokens: 2048.0,
        prefill_pairs: 2048.0 * 1024.0,
        prefill_done: 2.0,
        prefill_seqs: 2.0,
        ..Batch::default()
    };
    bencher.bench(|| divan::black_box(&m).iteration(divan::black_box(&b)));
}

/// 1,000,000 requests: Poisson at 60 requests/s, or a closed loop of 256 clients.
#[divan::bench(sample_count = 3, args = ["poisson", "closed"])]
fn simulate_1m_requests(bencher: divan::Bencher, arrivals: &str) {
    let m = instance();
    let kv = m.kv_capacity_tokens(0.9);
    let d = Deployment::Aggregated(RoleSpec {
        model: m,
        instances: 4,
        max_batch: 512,
        max_tokens: 8192,
        chunked_prefill: true,
        kv_tokens: kv,
        policy: Default::default(),
    });
    let w = Workload {
        arrivals: if arrivals == "closed" {
            Arrivals::Closed {
                clients: 256,
                lengths: Vec::new(),
            }
        } else {
            Arrivals::Poisson(60.0)
        },
        input: LengthDist::LogNormal {
            mean: 300.0,
            std: 200.0,
            min: 10,
            max: 2000,
        },
        output: LengthDist::LogNormal {
            mean: 250.0,
            std: 150.0,
            min: 5,
            max: 1500,
        },
        requests: 1_000_000,
        prefix_hit: 0.0,
        seed: 1,
    };
    let slo = Slo {
        ttft_s: Some(2.0),
        tpot_s: Some(0.2),
    };
    bencher.bench(|| simulate(&d, &w, &slo));
}
