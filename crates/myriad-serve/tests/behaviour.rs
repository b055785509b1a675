//! Behaviour of the serving model and simulation: queueing laws, memory-traffic scaling,
//! rooflines, determinism, input errors and the validation ratchet.
use myriad_scenario::Precision;
use myriad_serve::{
    simulate, Arrivals, Batch, BusiestRank, Deployment, InstanceModel, LengthDist, Parallel,
    Precisions, RoleSpec, SchedulePolicy, Slo, Workload,
};

fn levels(acc: &str, count: u32) -> Vec<myriad_cluster::Level> {
    let cat = myriad_catalog::catalog();
    let text = format!(
        "{{\"format\":\"myriad/1\",\"cluster\":{{\"accelerator\":\"{acc}\",\"count\":{count}}}}}"
    );
    let s = myriad_scenario::parse_scenario("t", &text, cat).unwrap();
    myriad_cluster::build(&s, cat).unwrap().levels
}

/// Llama 3 8B on one H100, bf16 weights and KV cache, no framework overhead.
fn llama3_8b_h100_bf16() -> InstanceModel {
    instance(
        "h100-sxm",
        "llama3-8b",
        1,
        Precision::Bf16,
        Precision::Bf16,
        0.0,
    )
}

/// An instance of catalog model `preset` on `acc` (the levels of a `count`-accelerator
/// cluster), cut by `par`, with (weights, experts, KV) precisions, or the model's error.
fn try_model(
    (acc, count): (&str, u32),
    preset: &str,
    par: Parallel,
    (weights, experts, kv): (Precision, Precision, Precision),
    overhead_s: f64,
    overlap: bool,
    spec: Option<myriad_serve::Speculative>,
) -> Result<InstanceModel, String> {
    let cat = myriad_catalog::catalog();
    InstanceModel::new(
        cat.accelerator(acc).unwrap(),
        &levels(acc, count),
        &cat.model(preset).unwrap().model,
        par,
        Precisions::new(weights, experts, kv),
        overhead_s,
        overlap,
        spec,
    )
}

fn instance(
    acc: &str,
    preset: &str,
    tp: u32,
    w: Precision,
    kv: Precision,
    overhead_s: f64,
) -> InstanceModel {
    try_model(
        (acc, 8),
        preset,
        Parallel::new(tp, 1, 1),
        (w, w, kv),
        overhead_s,
        false,
        None,
    )
    .unwrap()
}

/// One whole prompt of `tokens` tokens, alone in its iteration (causal pairs counted).
fn one_prompt(tokens: f64) -> Batch {
    Batch {
        prefill_tokens: tokens,
        prefill_pairs: tokens * (tokens + 1.0) / 2.0,
        prefill_done: 1.0,
        prefill_seqs: 1.0,
        ..Batch::default()
    }
}

fn role(m: InstanceModel, instances: u32, max_batch: u32) -> RoleSpec {
    let kv = m.kv_capacity_tokens(0.9);
    RoleSpec {
        model: m,
        instances,
        max_batch,
        max_tokens: 8192,
        chunked_prefill: true,
        kv_tokens: kv,
        policy: Default::default(),
    }
}

fn chat(arrivals: Arrivals, requests: u64, seed: u64) -> Workload {
    Workload {
        arrivals,
        input: LengthDist::LogNormal {
            mean: 600.0,
            std: 400.0,
            min: 8,
            max: 4096,
        },
        output: LengthDist::LogNormal {
            mean: 200.0,
            std: 150.0,
            min: 2,
            max: 1024,
        },
        requests,
        prefix_hit: 0.0,
        seed,
    }
}

/// Llama 3 70B at TP 2 on H100, fp8 weights and KV, 300 µs per-iteration overhead.
fn llama70b_h100_tp2() -> InstanceModel {
    instance(
        "h100-sxm",
        "llama3-70b",
        2,
        Precision::Fp8,
        Precision::Fp8,
        300e-6,
    )
}

const NO_SLO: Slo = Slo {
    ttft_s: None,
    tpot_s: None,
};

#[test]
fn littles_law_holds_in_the_simulation() {
    // Time-averaged requests in the system (integrated from arrival and completion events)
    // against arrival rate × mean time in system (from per-request timestamps).
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 4, 256));
    for rate in [4.0, 10.0] {
        let r = simulate(&d, &chat(Arrivals::Poisson(rate), 20_000, 7), &NO_SLO);
        assert_eq!(r.completed, 20_000);
        let little = r.arrival_rate.unwrap() * r.mean_latency_s;
        let err = r.mean_in_system / little - 1.0;
        assert!(
            err.abs() < 0.03,
            "rate {rate}: L = {} but λW = {} ({:+.1}%)",
            r.mean_in_system,
            little,
            err * 100.0
        );
        // And the measured arrival rate is the configured one.
        assert!(
            (r.arrival_rate.unwrap() / rate - 1.0).abs() < 0.03,
            "{:?}",
            r.arrival_rate
        );
    }
}

/// A closed loop of clients keeps exactly that many requests in flight until the last
/// ones drain: by Little's law the time-averaged number in the system is the clients
/// (less the drain at the end), the run's completion rate × mean latency gives the same,
/// and with more clients than requests the loop is the offline run, byte for byte.
#[test]
fn a_closed_loop_keeps_its_clients_in_flight() {
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 2, 256));
    let n = 6_000;
    for clients in [8u32, 64] {
        let lengths = myriad_serve::sim::generate(&chat(Arrivals::Offline, n, 3))
            .into_iter()
            .map(|(_, i, o)| (i, o))
            .collect();
        let w = chat(Arrivals::Closed { clients, lengths }, n, 3);
        let r = simulate(&d, &w, &NO_SLO);
        assert_eq!(r.completed, n);
        // Requests are sent only as others complete: never more than `clients` at once,
        // and the mean is close to it (a ramp-down of one request's latency at the end).
        assert!(
            r.mean_in_system <= clients as f64 + 1e-9,
            "{clients}: {}",
            r.mean_in_system
        );
        assert!(
            r.mean_in_system > 0.97 * clients as f64,
            "{clients}: {}",
            r.mean_in_system
        );
        let little = n as f64 / r.duration_s * r.mean_latency_s;
        assert!(
            (r.mean_in_system / little - 1.0).abs() < 1e-6,
            "{clients}: L {} vs λW {little}",
            r.mean_in_system
        );
    }
    // More clients than requests: all are sent at once, as an offline run sends them.
    let reqs = myriad_serve::sim::generate(&chat(Arrivals::Offline, 500, 5));
    let open = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
    let closed = myriad_serve::simulate_closed(&d, &reqs, 10_000, 0.0, &NO_SLO);
    assert_eq!(open, closed);
}

/// One client sends its requests one after another: each runs alone, so the run lasts the
/// sum of their latencies, and the per-user rates are each request's own: output over
/// latency (prompt included), and 1/TPOT for the decode speed.
#[test]
fn one_client_runs_its_requests_back_to_back() {
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 1, 256));
    let reqs = vec![(0.0, 1000, 200); 20];
    let r = myriad_serve::simulate_closed(&d, &reqs, 1, 0.0, &NO_SLO);
    assert_eq!(r.completed, 20);
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
    // Identical requests alone: identical latencies, back to back.
    assert!(close(r.latency.p99, r.latency.p50), "{:?}", r.latency);
    assert!(
        close(r.duration_s, 20.0 * r.mean_latency_s),
        "{} vs {}",
        r.duration_s,
        20.0 * r.mean_latency_s
    );
    assert!(close(
        r.per_user_output_tokens_per_s_with_ctx,
        200.0 / r.latency.mean
    ));
    assert!(close(r.per_user_output_tokens_per_s, 1.0 / r.tpot.mean));
    // Decode is faster than the whole request, whose latency includes the prompt.
    assert!(r.per_user_output_tokens_per_s > r.per_user_output_tokens_per_s_with_ctx);
    // The output rate is one request's output per latency.
    assert!(close(r.output_tokens_per_s, 200.0 / r.latency.mean));
}

/// A scenario's `concurrency` runs a closed loop, and its report sweeps the clients from
/// 1 to twice that: more clients never lower the output per accelerator nor raise each
/// user's speed, one client per instance gives every user a whole instance, and a
/// Poisson scenario has no sweep.
#[test]
fn concurrency_sweep_trades_user_speed_for_throughput() {
    let text = |arrivals: &str| {
        format!(
            "format: myriad/1\nname: c\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: llama3-70b}}\nserving:\n  weights: fp8\n  kv_cache: fp8\n  instance: {{tp: 2}}\n  input: {{mean: 1000}}\n  output: {{mean: 200}}\n  requests: 3000\n{arrivals}"
        )
    };
    let setup = setup_of("c.yaml", &text("  concurrency: 48\n"));
    assert!(matches!(
        setup.workload.arrivals,
        Arrivals::Closed { clients: 48, .. }
    ));
    let rep = myriad_serve::run(&setup);
    assert!(rep.result.mean_in_system <= 48.0 + 1e-9);
    let sweep = &rep.concurrency_sweep;
    let clients: Vec<u32> = sweep.iter().map(|p| p.clients).collect();
    assert_eq!(clients, vec![1, 2, 4, 8, 16, 32, 64, 96]);
    for w in sweep.windows(2) {
        assert!(
            w[1].output_tokens_per_s_per_accelerator
                >= w[0].output_tokens_per_s_per_accelerator * (1.0 - 1e-9),
            "{w:?}"
        );
        assert!(
            w[1].per_user_output_tokens_per_s <= w[0].per_user_output_tokens_per_s * (1.0 + 1e-9),
            "{w:?}"
        );
    }
    // Up to four clients on four instances: each has an instance to itself.
    for (a, b) in [
        (sweep[0].tpot.mean, sweep[2].tpot.mean),
        (sweep[0].tpot.p99, sweep[2].tpot.p99),
        (sweep[0].ttft.mean, sweep[2].ttft.mean),
    ] {
        assert!((a / b - 1.0).abs() < 1e-9, "{a} vs {b}");
    }
    let (lo, hi) = (&sweep[0], &sweep[sweep.len() - 1]);
    assert!(hi.output_tokens_per_s_per_accelerator > 10.0 * lo.output_tokens_per_s_per_accelerator);
    assert!(hi.per_user_output_tokens_per_s < lo.per_user_output_tokens_per_s);
    let open = myriad_serve::run(&setup_of("c.yaml", &text("  arrival_rate: 4\n")));
    assert!(open.concurrency_sweep.is_empty());
}

/// The iteration mix accounts for every iteration and every second of them: the two
/// classes add up to the run's iterations, each class's parts add up to its time, one
/// instance is never busy longer than the run, and a prompt-heavy load moves time from
/// decode-only iterations to those carrying prompts.
#[test]
fn iteration_mix_accounts_for_every_iteration() {
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 1, 256));
    let mut shares = Vec::new();
    for (input, output) in [(200.0, 800.0), (3000.0, 100.0)] {
        let w = Workload {
            input: LengthDist::LogNormal {
                mean: input,
                std: input / 2.0,
                min: 8,
                max: 8192,
            },
            output: LengthDist::LogNormal {
                mean: output,
                std: output / 2.0,
                min: 2,
                max: 4096,
            },
            ..chat(Arrivals::Poisson(2.0), 2_000, 3)
        };
        let r = simulate(&d, &w, &NO_SLO);
        let mix = r.iteration_mix;
        let (a, b) = (mix.decode_only, mix.with_prompts);
        assert_eq!(a.iterations + b.iterations, r.iterations);
        assert!(a.iterations > 0 && b.iterations > 0, "{mix:?}");
        for c in [a, b] {
            let t = c.time;
            let parts = t.gemm_s + t.attention_s + t.memory_s + t.comm_s + t.overhead_s;
            assert!((parts / t.total_s - 1.0).abs() < 1e-9, "{c:?}");
        }
        assert_eq!(a.prompt_tokens_per_rank, 0.0);
        assert!(b.mean(b.prompt_tokens_per_rank) > 0.0);
        // One instance: its iterations run back to back, never longer than the run.
        let (ta, tb) = (a.time.total_s, b.time.total_s);
        assert!(ta + tb <= r.duration_s * (1.0 + 1e-9));
        shares.push(tb / (ta + tb));
    }
    assert!(shares[1] > shares[0], "prompt-time shares {shares:?}");
}

/// With attention data parallelism the busiest rank's context sum sets the decode
/// attention: closed form `1 + E[max of dp normals] · σ / (μ √n)`, 1 when every context is
/// equal or without attention DP, smaller with more sequences per rank, and it lengthens
/// only the attention part of the step.
#[test]
fn busiest_attention_rank_follows_the_context_spread() {
    let dp8 = try_model(
        ("b200", 8),
        "deepseek-v3",
        Parallel::new(1, 8, 8),
        (Precision::Fp8, Precision::Fp4, Precision::Fp8),
        0.0,
        false,
        None,
    )
    .unwrap();
    // 8 ranks x 64 sequences, contexts of mean 4000 and standard deviation 3000.
    let (n, mean, sd) = (512.0, 4000.0, 3000.0);
    let b = Batch {
        decode_seqs: n,
        decode_ctx: n * mean,
        decode_ctx_sq: n * (sd * sd + mean * mean),
        ..Default::default()
    };
    let want = 1.0 + myriad_train::step::expected_max_std_normal(8) * (sd / mean) / 8.0;
    let f = dp8.busiest_context_factor(&b);
    assert!((f / want - 1.0).abs() < 1e-9, "{f} vs {want}");
    // Equal contexts: balanced.
    let equal = Batch {
        decode_ctx_sq: n * mean * mean,
        ..b
    };
    assert!((dp8.busiest_context_factor(&equal) - 1.0).abs() < 1e-9);
    // Four times the sequences per rank: half the excess.
    let more = Batch {
        decode_seqs: 4.0 * n,
        decode_ctx: 4.0 * b.decode_ctx,
        decode_ctx_sq: 4.0 * b.decode_ctx_sq,
        ..b
    };
    let g = dp8.busiest_context_factor(&more);
    assert!(((g - 1.0) / (f - 1.0) - 0.5).abs() < 1e-9, "{g} {f}");
    // No attention DP: balanced.
    assert_eq!(llama3_8b_h100_bf16().busiest_context_factor(&b), 1.0);
    // Only attention grows, by the factor's share of it.
    let flat = dp8.iteration(&equal);
    let spread = dp8.iteration(&b);
    assert!(spread.attention_s > flat.attention_s);
    assert_eq!(spread.gemm_s, flat.gemm_s);
    assert!(spread.attention_s <= flat.attention_s * f * (1.0 + 1e-9));
}

/// Llama 3 8B on two H100 as two attention-DP ranks (each holds the whole model and its
/// own sequences), bf16 weights and KV cache, no framework overhead.
fn llama3_8b_h100_dp2() -> InstanceModel {
    try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 2, 1),
        (Precision::Bf16, Precision::Bf16, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap()
}

/// Where the caller knows each rank's sequences (`BusiestRank`), the busiest rank's own
/// context sum sets the decode attention and its own sequence count the host floor, not
/// the statistical estimate from the spread. Hand-worked: two ranks, one decoding a
/// sequence of 8,000 tokens of context, the other one of 1,000. The attention follows
/// the long rank: 3,500 tokens more than the mean rank's 4,500, each 131,072 bytes of KV
/// (32 layers × 8 KV heads × 128 × 2 × 2 bytes) read at 3.35 TB/s × 0.90 = 3.015e12 B/s:
/// 0.1522 ms more. The spread's estimate gave the busiest rank only
/// `1 + 0.5642 · 3500/4500 = 1.439` × the mean, 6,475 tokens.
#[test]
fn the_known_busiest_attention_rank_paces_the_iteration() {
    let m = llama3_8b_h100_dp2();
    let b = Batch {
        decode_seqs: 2.0,
        decode_ctx: 9_000.0,
        decode_ctx_sq: 8_000.0f64.powi(2) + 1_000.0f64.powi(2),
        ..Batch::default()
    };
    let long = BusiestRank {
        decode_ctx: 8_000.0,
        seqs: 1.0,
        ..BusiestRank::default()
    };
    let even = |ctx: f64| {
        m.iteration(&Batch {
            decode_seqs: 2.0,
            decode_ctx: 2.0 * ctx,
            ..Batch::default()
        })
    };
    let known = m.iteration_on_ranks(&b, Some(&long));
    // Exactly the attention of two ranks that each hold 8,000 tokens.
    let both_long = even(8_000.0);
    assert!((known.attention_s / both_long.attention_s - 1.0).abs() < 1e-12);
    assert_eq!(known.gemm_s, both_long.gemm_s);
    let extra = known.attention_s - even(4_500.0).attention_s;
    assert!((extra / 0.1522e-3 - 1.0).abs() < 0.01, "extra {extra}");
    // The spread's estimate (no per-rank assignment) falls short of the long rank.
    let f = 1.0 + myriad_train::step::expected_max_std_normal(2) * 3_500.0 / 4_500.0;
    assert!((m.busiest_context_factor(&b) / f - 1.0).abs() < 1e-9);
    let stat = m.iteration(&b);
    assert!((stat.attention_s / even(4_500.0 * f).attention_s - 1.0).abs() < 1e-12);
    assert!(stat.attention_s < known.attention_s - 0.05e-3);
    // The host floor counts the busiest rank's sequences: 3 on one rank, 1 on the other,
    // against the mean rank's 2.
    let host = m.clone().with_host_per_seq(10_000.0);
    let four = Batch {
        decode_seqs: 4.0,
        decode_ctx: 4_000.0,
        ..Batch::default()
    };
    let three = BusiestRank {
        decode_ctx: 3_000.0,
        seqs: 3.0,
        ..BusiestRank::default()
    };
    assert!((host.iteration(&four).total_s - 0.020).abs() < 1e-12);
    assert!((host.iteration_on_ranks(&four, Some(&three)).total_s - 0.030).abs() < 1e-12);
}

/// The simulation places each request on one attention-DP rank and paces every iteration
/// by the busiest rank's own contexts: a 3,000-token and a 500-token prompt land on the two
/// ranks of an instance and decode in lockstep, and their decode iterations cost the same
/// attention as two 3,000-token requests would (the long rank is the busiest either way);
/// the spread's estimate priced the first pair below the second.
#[test]
fn the_simulation_paces_attention_by_the_rank_holding_the_long_request() {
    let run = |short: u32| {
        let d = Deployment::Aggregated(role(llama3_8b_h100_dp2(), 1, 64));
        let w = Workload {
            arrivals: Arrivals::Trace(vec![(0.0, 3_000, 200), (0.0, short, 200)]),
            ..chat(Arrivals::Offline, 2, 1)
        };
        simulate(&d, &w, &NO_SLO).iteration_mix.decode_only
    };
    let (mixed, long) = (run(500), run(3_000));
    assert_eq!(mixed.iterations, 199);
    assert_eq!(mixed.iterations, long.iterations);
    let (a, b) = (mixed.time.attention_s, long.time.attention_s);
    assert!((a / b - 1.0).abs() < 1e-9, "{a} vs {b}");
}

/// With attention DP each rank runs its own batch through the attention-side GEMMs, norms
/// and LM head, and the iteration waits for the rank with the most rows: 1,024 decodes
/// split 768/256 over two ranks cost what 768 on each rank cost (Llama 3 8B has no MoE
/// layer, so every GEMM is per rank; 768 rows are compute-bound on an H100, so the mean
/// rank's 512 rows priced the GEMMs a third lower). An even split gives the mean rank's
/// iteration, as before.
#[test]
fn uneven_attention_dp_ranks_run_the_busiest_ranks_gemm_rows() {
    let m = llama3_8b_h100_dp2();
    let b = Batch {
        decode_seqs: 1024.0,
        decode_ctx: 1024.0 * 1000.0,
        ..Batch::default()
    };
    let uneven = BusiestRank {
        decode_ctx: 768.0 * 1000.0,
        seqs: 768.0,
        decode_seqs: 768.0,
        tokens: 768.0,
    };
    let known = m.iteration_on_ranks(&b, Some(&uneven));
    let both = m.iteration(&Batch {
        decode_seqs: 1536.0,
        decode_ctx: 1536.0 * 1000.0,
        ..Batch::default()
    });
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
    assert!(close(known.gemm_s, both.gemm_s), "{known:?} vs {both:?}");
    assert!(close(known.memory_s, both.memory_s));
    assert!(close(known.attention_s, both.attention_s));
    assert!(close(known.total_s, both.total_s));
    // Only the contexts known (rows unknown): the mean rank's rows, shorter GEMMs.
    let ctx_only = BusiestRank {
        decode_ctx: 768.0 * 1000.0,
        seqs: 768.0,
        ..BusiestRank::default()
    };
    let mean = m.iteration_on_ranks(&b, Some(&ctx_only));
    assert!(known.gemm_s > 1.2 * mean.gemm_s, "{known:?} vs {mean:?}");
    assert_eq!(mean.attention_s, known.attention_s);
    // A balanced split: the even split's iteration.
    let even = BusiestRank {
        decode_ctx: 512.0 * 1000.0,
        seqs: 512.0,
        decode_seqs: 512.0,
        tokens: 512.0,
    };
    let balanced = m.iteration_on_ranks(&b, Some(&even));
    let before = m.iteration(&b);
    assert!(close(balanced.total_s, before.total_s));
    assert!(close(balanced.gemm_s, before.gemm_s));
    assert!(close(balanced.memory_s, before.memory_s));
}

/// The experts see every rank's tokens after the dispatch, not the busiest rank's rows on
/// every rank: DeepSeek-V3 DEP8 with 512 decodes, 128 of them on one rank. The attention
/// projections and shared experts run that rank's 128 rows (as when every rank holds 128),
/// the routed experts the 512 tokens there are.
#[test]
fn the_busiest_attention_rank_sets_dense_rows_and_the_experts_see_all_tokens() {
    let mut m = deepseek_dep(8);
    m.expert_load_cv = 0.0;
    let decode = |seqs: f64| Batch {
        decode_seqs: seqs,
        decode_ctx: seqs * 2000.0,
        ..Batch::default()
    };
    let skewed = m.moe_stages(&Batch {
        rank_decode_seqs: 128.0,
        rank_tokens: 128.0,
        ..decode(512.0)
    });
    let (mean, all) = (m.moe_stages(&decode(512.0)), m.moe_stages(&decode(1024.0)));
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
    assert!(close(skewed.pre, all.pre), "{skewed:?} vs {all:?}");
    assert!(close(skewed.shared, all.shared));
    assert!(skewed.pre > mean.pre);
    assert!(close(skewed.mlp, mean.mlp), "{skewed:?} vs {mean:?}");
    assert!(skewed.mlp < all.mlp);
    assert!(close(skewed.lm_head, all.lm_head));
}

/// Every attention-DP rank runs the CUDA graph of the next captured size above the busiest
/// rank's batch (SGLang and TensorRT-LLM pick one size for all ranks): 8 decodes split 6/2
/// over two ranks with graphs of 4, 8 and 16 run the 8-row graph on both ranks, 16 rows,
/// where the mean rank's 4 needed no padding.
#[test]
fn cuda_graph_padding_follows_the_busiest_attention_rank() {
    let m = llama3_8b_h100_dp2().with_graph_padding(vec![4, 8, 16]);
    assert_eq!(m.padded_decode_seqs(8.0), 8.0);
    assert_eq!(m.padded_decode_seqs_on(8.0, 6.0), 16.0);
    assert_eq!(m.padded_decode_seqs_on(8.0, 4.0), 8.0);
    // Beyond the largest graph: eager, unpadded.
    assert_eq!(m.padded_decode_seqs_on(40.0, 20.0), 40.0);
    let b = Batch {
        decode_seqs: 8.0,
        decode_ctx: 8.0 * 1000.0,
        ..Batch::default()
    };
    let six = BusiestRank {
        decode_ctx: 6.0 * 1000.0,
        seqs: 6.0,
        decode_seqs: 6.0,
        tokens: 6.0,
    };
    let known = m.iteration_on_ranks(&b, Some(&six));
    let sixteen = m.iteration(&Batch {
        decode_seqs: 16.0,
        decode_ctx: 16.0 * 1000.0,
        ..Batch::default()
    });
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
    assert!(close(known.gemm_s, sixteen.gemm_s));
    assert!(
        close(known.memory_s, sixteen.memory_s),
        "{known:?} vs {sixteen:?}"
    );
    let unpadded = m.iteration(&b);
    assert!(known.memory_s > unpadded.memory_s);
}

/// The iteration memo (`IterMemo`) returns what direct computation gives, bit for bit,
/// for batches that differ only in the busiest rank's rows (a memo keyed on the batch's
/// totals alone would return the first one's parts for the second).
#[test]
fn the_iteration_memo_keys_on_the_busiest_ranks_rows() {
    let dense = llama3_8b_h100_dp2().with_graph_padding(vec![4, 8, 16, 256, 512]);
    let mut moe = deepseek_dep(8);
    moe.expert_load_cv = 0.0;
    let moe = moe.with_graph_padding(vec![8, 64, 128, 256]);
    for m in [&dense, &moe] {
        let mut memo = myriad_serve::IterMemo::new();
        let dp = m.par.attention_dp as f64;
        for (seqs, prompt) in [(8.0, 0.0), (8.0, 0.0), (512.0, 0.0), (64.0, 700.0)] {
            let b = Batch {
                decode_seqs: seqs,
                decode_ctx: seqs * 1500.0,
                decode_ctx_sq: seqs * 1500.0 * 1500.0,
                prefill_tokens: prompt,
                prefill_pairs: prompt * (prompt + 1.0) / 2.0,
                prefill_done: if prompt > 0.0 { 1.0 } else { 0.0 },
                prefill_seqs: if prompt > 0.0 { 1.0 } else { 0.0 },
                ..Batch::default()
            };
            for extra in [0.0, 1.0, 3.0, 0.0] {
                let rank = (seqs / dp).ceil() + extra;
                let r = BusiestRank {
                    decode_ctx: rank * 1500.0,
                    seqs: rank + b.prefill_seqs,
                    decode_seqs: rank,
                    tokens: rank + prompt,
                };
                for busiest in [None, Some(&r)] {
                    let direct = m.iteration_on_ranks(&b, busiest);
                    for _ in 0..2 {
                        assert_eq!(m.iteration_memo(&b, busiest, &mut memo), direct);
                    }
                }
            }
        }
    }
}

/// The simulation prices each iteration at its busiest rank's rows: three requests on two
/// ranks (two on one, one on the other) decode with the norms and activations of two rows
/// on every rank, as four requests (two on each) do; the mean rank's 1.5 rows priced them
/// lower.
#[test]
fn the_simulation_runs_the_busiest_ranks_rows() {
    let run = |n: usize| {
        let d = Deployment::Aggregated(role(llama3_8b_h100_dp2(), 1, 64));
        let w = Workload {
            arrivals: Arrivals::Trace(vec![(0.0, 500, 200); n]),
            ..chat(Arrivals::Offline, n as u64, 1)
        };
        simulate(&d, &w, &NO_SLO).iteration_mix.decode_only
    };
    let (three, four) = (run(3), run(4));
    assert_eq!(three.iterations, 199);
    assert_eq!(three.iterations, four.iterations);
    let (a, b) = (three.time.memory_s, four.time.memory_s);
    assert!((a / b - 1.0).abs() < 1e-9, "{a} vs {b}");
}

/// Each attention-DP rank schedules the prompts it holds into its own token budget: four
/// 600-token prompts placed on ranks 0, 1, 0, 1 of an instance with 1,000 tokens a rank
/// (2,000 in all) and chunked prefill run 600 + 400 on each rank in the first iteration
/// and the last 200 of each second prompt in the next (1,000 + 200 tokens per prompted
/// rank summed over the two). Packing the instance's budget in queue order ran the
/// first three whole (rank 0 then held 1,200 tokens, above its budget) and the last 400
/// alone next (1,000 + 400).
#[test]
fn each_attention_rank_packs_its_own_prompts_into_its_own_budget() {
    let d = Deployment::Aggregated(RoleSpec {
        max_tokens: 2_000,
        ..role(llama3_8b_h100_dp2(), 1, 64)
    });
    let w = Workload {
        arrivals: Arrivals::Trace(vec![(0.0, 600, 20); 4]),
        ..chat(Arrivals::Offline, 4, 1)
    };
    let mix = simulate(&d, &w, &NO_SLO).iteration_mix.with_prompts;
    assert_eq!(mix.iterations, 2);
    assert!(
        (mix.prompt_tokens_per_rank - 1_200.0).abs() < 1e-9,
        "{}",
        mix.prompt_tokens_per_rank
    );
}

/// Each framework places a new request on an attention-DP rank by its own rule
/// (`DpPlacement`). Four prompts of 100, 1,000, 200 and 300 tokens arrive together at an
/// instance of two ranks with 1,000 prompt tokens a rank and no chunking.
/// TensorRT-LLM (`_balance_requests_across_ranks`) caps each rank at two and hands them out
/// longest first to the rank with the fewest tokens: 1,000 then 300 and 200 (rank 1 has
/// fewer tokens) then 100 (rank 1 is full), so rank 0 holds 1,000 + 100 and runs the 100
/// in a second iteration. SGLang's round robin (0, 1, 0, 1) and vLLM's lowest
/// `4 × waiting + running` (the same turns) leave 1,000 + 300 on rank 1: two iterations as
/// well. Placing each at admission on the rank with the most free cache (no framework's
/// rule) put 100, 200 and 300 on rank 0 beside the 1,000 on rank 1: one iteration.
#[test]
fn each_framework_places_requests_on_attention_ranks_by_its_own_rule() {
    let run = |placement: myriad_serve::DpPlacement| {
        let d = Deployment::Aggregated(RoleSpec {
            max_tokens: 2_000,
            chunked_prefill: false,
            policy: SchedulePolicy {
                dp_placement: placement,
                ..SchedulePolicy::default()
            },
            ..role(llama3_8b_h100_dp2(), 1, 64)
        });
        let reqs = [
            (0.0, 100, 20),
            (0.0, 1000, 20),
            (0.0, 200, 20),
            (0.0, 300, 20),
        ];
        let rep = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
        assert_eq!(rep.completed, 4);
        rep.iteration_mix.with_prompts.iterations
    };
    use myriad_serve::DpPlacement::*;
    assert_eq!(run(MostFreeKv), 1);
    assert_eq!(run(FewestTokens), 2);
    assert_eq!(run(RoundRobin), 2);
    assert_eq!(run(LeastLoaded), 2);
    assert_eq!(
        myriad_serve::framework("tensorrt-llm").dp_placement,
        FewestTokens
    );
    assert_eq!(myriad_serve::framework("sglang").dp_placement, RoundRobin);
    assert_eq!(
        myriad_serve::framework("sglang").dp_placement_prefill,
        BootstrapRoom
    );
    assert_eq!(myriad_serve::framework("vllm").dp_placement, LeastLoaded);
}

#[test]
fn decode_step_grows_with_context_as_kv_traffic_predicts() {
    // Llama 3 8B on one H100, bf16 weights and KV cache, no framework overhead. One decode
    // sequence is memory-bound; each extra token of context adds its KV bytes:
    // 32 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 bytes = 131,072 bytes, read at
    // 3.35 TB/s × 0.90 = 3.015e12 B/s. 10,000 more tokens: 1.31072e9 / 3.015e12 = 0.4347 ms.
    let m = llama3_8b_h100_bf16();
    assert_eq!(m.kv_bytes_per_token_per_gpu(), 131_072.0);
    let step = |b: f64, ctx: f64| {
        m.iteration(&Batch {
            decode_seqs: b,
            decode_ctx: b * ctx,
            ..Batch::default()
        })
        .total_s
    };
    let slope = step(1.0, 12_000.0) - step(1.0, 2_000.0);
    assert!((slope / 0.4347e-3 - 1.0).abs() < 0.01, "slope {slope}");
    // With 8 sequences the same context growth moves 8× the bytes.
    let slope8 = step(8.0, 12_000.0) - step(8.0, 2_000.0);
    assert!(
        (slope8 / (8.0 * 0.4347e-3) - 1.0).abs() < 0.02,
        "slope8 {slope8}"
    );
    // One sequence at short context: the weights stream once. Llama 3 8B has 8.03e9
    // parameters (7.5e9 in the layers and 2 × 0.525e9 in embedding and output); the step
    // reads the layers and the output layer in bf16 at the skinny-GEMM stream rate,
    // 3.35 TB/s × 0.80 = 2.68e12 B/s (measured, `efficiency.hbm_gemm`): ~1.6e10 bytes /
    // 2.68e12 = 6.0 ms, plus fixed per-kernel costs (≤ 32 layers × 9 kernels × 3.6 µs ≈
    // 1 ms). (Measured on an H100: 6.4 ms for the GEMMs and attention of this step,
    // calibration/h100-decode-measured.json.)
    let t1 = step(1.0, 100.0);
    assert!(t1 > 5.8e-3 && t1 < 7.1e-3, "B=1 step {t1}");
    // Memory-bound: doubling a small batch barely changes the step; the time per token
    // falls. At large batch the GEMMs become compute-bound and the step grows.
    let per_token = |b: f64| step(b, 1000.0) / b;
    assert!(per_token(2.0) < 0.6 * per_token(1.0));
    assert!(step(2.0, 1000.0) < 1.05 * step(1.0, 1000.0));
    assert!(step(1024.0, 1000.0) > 2.0 * step(1.0, 1000.0));
    let mut last = 0.0;
    for b in [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0] {
        let t = step(b, 2000.0);
        assert!(t > last, "step must grow with batch: {b} -> {t}");
        last = t;
    }
}

#[test]
fn throughput_never_exceeds_the_roofline() {
    // Every token processed (prompt or output) costs at least 2 × parameters FLOPs, and
    // every decode step streams the weights at least once.
    let cat = myriad_catalog::catalog();
    let acc = cat.accelerator("h200").unwrap();
    for (preset, tp) in [("llama3-8b", 1u32), ("llama3-70b", 2)] {
        let model = &cat.model(preset).unwrap().model;
        let params = model.params().total;
        for (isl, osl, mb) in [
            (128u32, 128u32, 2048u32),
            (1000, 1000, 512),
            (128, 2048, 64),
            (4000, 200, 256),
        ] {
            let m = instance("h200", preset, tp, Precision::Fp8, Precision::Fp8, 0.0);
            let d = Deployment::Aggregated(role(m, 1, mb));
            let w = Workload {
                arrivals: Arrivals::Offline,
                input: LengthDist::Fixed(isl),
                output: LengthDist::Fixed(osl),
                requests: 3000,
                prefix_hit: 0.0,
                seed: 1,
            };
            let r = simulate(&d, &w, &NO_SLO);
            let tokens = r.output_tokens_per_s * (1.0 + isl as f64 / osl as f64);
            let flops_bound = acc.dense_tflops.fp8.unwrap() * 1e12 * tp as f64 / (2.0 * params);
            assert!(
                tokens < flops_bound,
                "{preset} {isl}/{osl}: {tokens} tokens/s above the compute roofline {flops_bound}"
            );
            // Memory: at most max_batch tokens per weight read.
            let weights = params; // fp8: one byte per parameter
            let mem_bound = mb as f64 * acc.hbm_tbps * 1e12 * tp as f64 / weights;
            assert!(
                r.output_tokens_per_s < mem_bound,
                "{preset}: above the memory roofline"
            );
            // And below the cache-aware memory roofline: whole requests cached from
            // admission, their cache read with the weights every step.
            let (m, kv) = match &d {
                Deployment::Aggregated(x) => (&x.model, x.kv_tokens),
                _ => unreachable!(),
            };
            let roof = m
                .decode_roofline(kv, mb as f64, isl as f64, osl as f64)
                .unwrap();
            assert!(
                r.output_tokens_per_s_per_accelerator < roof,
                "{preset} {isl}/{osl}: {} above the cache roofline {roof}",
                r.output_tokens_per_s_per_accelerator
            );
        }
    }
}

#[test]
fn a_seed_fixes_the_run() {
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 4, 256));
    let run = |seed| {
        serde_json::to_string(&simulate(
            &d,
            &chat(Arrivals::Poisson(8.0), 5000, seed),
            &NO_SLO,
        ))
        .unwrap()
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

#[test]
fn kv_capacity_makes_requests_wait() {
    // A tiny KV cache admits few requests at a time: the decode batch stays small and
    // requests queue, so TTFT grows against a large cache.
    let m = llama70b_h100_tp2();
    let mut small = role(m.clone(), 1, 512);
    small.kv_tokens = 8.0 * 1200.0;
    let big = role(m, 1, 512);
    let w = Workload {
        arrivals: Arrivals::Poisson(3.0),
        input: LengthDist::Fixed(1000),
        output: LengthDist::Fixed(200),
        requests: 2000,
        prefix_hit: 0.0,
        seed: 1,
    };
    let rs = simulate(&Deployment::Aggregated(small), &w, &NO_SLO);
    let rb = simulate(&Deployment::Aggregated(big), &w, &NO_SLO);
    assert!(
        rs.mean_decode_batch <= 8.0 + 1e-9,
        "{}",
        rs.mean_decode_batch
    );
    assert!(
        rs.ttft.p50 > 2.0 * rb.ttft.p50,
        "{} vs {}",
        rs.ttft.p50,
        rb.ttft.p50
    );
    assert!(rs.kv_use_peak <= 1.0 + 1e-9);
}

#[test]
fn prefix_cache_hits_cut_prefill() {
    let m = llama70b_h100_tp2();
    let d = Deployment::Aggregated(role(m, 1, 256));
    let mut w = Workload {
        arrivals: Arrivals::Offline,
        input: LengthDist::Fixed(4000),
        output: LengthDist::Fixed(100),
        requests: 1000,
        prefix_hit: 0.0,
        seed: 1,
    };
    let cold = simulate(&d, &w, &NO_SLO);
    w.prefix_hit = 0.75;
    let warm = simulate(&d, &w, &NO_SLO);
    assert!(warm.output_tokens_per_s > 1.5 * cold.output_tokens_per_s);
}

/// Parses a scenario text, builds its cluster and sets up its serving deployment.
fn setup_of(name: &str, text: &str) -> myriad_serve::Setup {
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario(name, text, cat).unwrap();
    let b = myriad_cluster::build(&s, cat).unwrap();
    myriad_serve::setup(&s, &b, cat, None).unwrap()
}

/// The setup of 8 H100 serving Llama 3 70B with fp8 weights, `serving` the rest of the
/// serving section (two-space indented lines).
fn h100x8_llama3_70b_fp8(serving: &str) -> myriad_serve::Setup {
    setup_of(
        "h100x8.yaml",
        &format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: llama3-70b}}\nserving:\n  weights: fp8\n{serving}"
        ),
    )
}

/// The instance model of a scenario whose deployment is aggregated.
fn aggregated_model(text: &str) -> myriad_serve::InstanceModel {
    match setup_of("s.yaml", text).deployment {
        myriad_serve::Deployment::Aggregated(r) => r.model,
        _ => panic!("aggregated"),
    }
}

fn bad(yaml: &str) -> String {
    let cat = myriad_catalog::catalog();
    let text = format!(
        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: llama3-70b}}\nserving:\n{yaml}"
    );
    match myriad_scenario::parse_scenario("s.yaml", &text, cat) {
        Ok(s) => {
            let b = myriad_cluster::build(&s, cat).unwrap();
            myriad_serve::setup(&s, &b, cat, None).expect_err("setup should fail")
        }
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_serving_values_name_the_field() {
    let base = "  input: {mean: 100}\n  output: {mean: 100}\n";
    let cases = [
        (
            format!("{base}  instance: {{tp: 0}}\n"),
            "serving.instance.tp",
        ),
        (
            format!("{base}  instnce: {{tp: 2}}\n"),
            "did you mean instance",
        ),
        (
            format!("{base}  kv_cache_fraction: 1.5\n"),
            "serving.kv_cache_fraction",
        ),
        (
            format!("{base}  attention_out: fp6\n"),
            "serving.attention_out: unknown variant `fp6`",
        ),
        (
            format!("{base}  prefill_first: true\n"),
            "serving.prefill_first: true needs chunked_prefill: false",
        ),
        (
            format!("{base}  decode_steps_per_round: 0\n"),
            "serving.decode_steps_per_round",
        ),
        (
            format!("{base}  mode: disaggregated\n  prefill: {{tp: 2}}\n  decode: {{tp: 2}}\n  decode_steps_per_round: 4\n"),
            "serving.decode_steps_per_round: applies to aggregated instances only",
        ),
        (
            format!("{base}  mode: disaggregated\n  prefill: {{tp: 2}}\n  decode: {{tp: 2}}\n  adp_balance_timeout_iters: 6\n"),
            "serving.adp_balance_timeout_iters: applies to aggregated instances only",
        ),
        (
            format!("{base}  adp_balance_timeout_iters: -1\n"),
            "serving.adp_balance_timeout_iters",
        ),
        (
            format!("{base}  mode: disaggregated\n  prefill: {{tp: 2}}\n"),
            "serving.decode",
        ),
        (
            "  input: {dist: normal, mean: 100}\n  output: {mean: 10}\n".to_string(),
            "serving.input.std",
        ),
        ("  input: {mean: 100}\n".to_string(), "serving.output"),
        (
            "  input: {mean: 100}\n  output: {mean: 1e30}\n".to_string(),
            "serving.output.mean: 1e30 tokens is more than the 1000000000 supported",
        ),
        (
            "  dataset: sharegpt\n".to_string(),
            "serving.dataset: unknown dataset 'sharegpt'; expected one of mlperf-deepseek-r1",
        ),
        (
            "  dataset: mlperf-llama2-70b\n  input: {mean: 100}\n".to_string(),
            "serving.input: not used with dataset 'mlperf-llama2-70b'",
        ),
        (
            format!("{base}  arrival_rate: -1\n"),
            "serving.arrival_rate",
        ),
        (
            format!("{base}  concurrency: 0\n"),
            "serving.concurrency: 0 must be a whole number of clients from 1",
        ),
        (
            format!("{base}  concurrency: 8\n  target_rate: 20\n"),
            "serving.target_rate: a closed loop's request rate is set by its clients",
        ),
        (
            format!("{base}  concurrency: 8\n  arrival_rate: 2\n"),
            "serving.concurrency: give either concurrency (a closed loop) or arrival_rate, not both",
        ),
        (format!("{base}  weights: fp5\n"), "serving.weights"),
        (
            format!("{base}  instance: {{tp: 3}}\n"),
            "tp 3 does not divide",
        ),
        (
            format!("{base}  instance: {{tp: 1, instances: 8}}\n  weights: bf16\n"),
            "no room for a KV cache",
        ),
        (
            format!("{base}  instance: {{tp: 8, instances: 2}}\n"),
            "needs 16 accelerators",
        ),
        (
            format!("{base}  instance: {{tp: 65536, attention_dp: 65536}}\n"),
            "serving.instance: tp × attention_dp × pp = 4294967296 accelerators in one instance, more than the 4294967295 supported",
        ),
    ];
    for (yaml, want) in cases {
        let e = bad(&yaml);
        assert!(e.contains(want), "{yaml}: `{e}` should contain `{want}`");
    }
}

fn validation() -> myriad_serve::validate::Report {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/serving-public.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap()
}

#[test]
fn validation_mae_ratchet() {
    // Ratchet: the figures reached so far (docs/serving.md), rounded up a little. Lower
    // them when the model improves; never raise them to hide a worse fit. (Raised once,
    // 0.150 -> 0.164, when TensorRT-LLM's sliding-window layers were costed over their
    // window as its docs state: a physical correction that exposes the gpt-oss-20b miss.
    // Raised again, 0.1310 -> 0.1330, when MLPerf Server rows were scored as MLPerf scores
    // them, at the highest rate meeting the p99 latency limits, instead of at the run's
    // own target rate, which matched any model that kept up by construction. Raised a
    // third time, 0.1330 -> 0.1345 and median 0.0755 -> 0.0840, when decode GEMMs were
    // made to stream their weights at the rate measured on H100 and H200, 0.80 and 0.76
    // of the HBM peak (`efficiency.hbm_gemm`), instead of a copy's 0.90: the measured
    // decode step moved from 4-10% fast to within 0-6%, and the rows already predicted
    // too slow for other reasons moved further off. Raised a fourth time, 0.1345 ->
    // 0.1350, when Server rows were simulated over MLPerf's 600 s minimum run and scored at
    // their steady output rate, rate × output per query, which is what LoadGen reports for
    // a valid run (within 2% of target × mean output on every Server row in the files),
    // instead of over a 20,000-request burst whose drain tail lowered the rate: the two
    // over-predicted Server rows here moved from +15%/+5% to +18%/+8%. Raised a fifth
    // time, 0.1340 -> 0.1420 and median 0.0840 -> 0.0860, when decode attention over an
    // fp8 KV cache on Blackwell was costed at the fp8 peak, as the trtllm-gen kernels
    // TensorRT-LLM and SGLang call compute it: a measured GB200 decode iteration (test
    // iteration_trace.rs) put the model's attention at +93% with bf16 math and +8% with
    // fp8; the same trace shows the memory-bound kernels and DeepEP's all-to-all costing
    // 2.2x and 1.6x the model, which the bf16 attention had been hiding, so the DeepSeek
    // rows on Blackwell with fp8 KV moved up by 4-20 points. Lowered, 0.1420 -> 0.1380
    // and median 0.0860 -> 0.0850, when the small memory-bound kernels of a decode step on
    // Blackwell were costed at the bandwidth the same trace measured for them
    // (`efficiency.hbm_small_kernels`, 0.52 of the peak) and MLA layers were given the
    // three extra kernels it shows. Lowered, 0.1380 -> 0.1270 and median 0.0850 -> 0.0750,
    // when the TensorRT-LLM 1.0-era trtllm-bench rows got the FP8 KV cache that release's
    // mapping gives every FP8 and NVFP4 checkpoint: Llama 3.1 405B FP4 on B200 moved from
    // -11...-32% to -18...+9%. Raised, 0.1270 -> 0.1320 and median 0.0750 -> 0.0825, when
    // TensorRT-LLM's attention-DP MoE was given the NVFP4 all-gather and bf16
    // reduce-scatter its `select_alltoall_method_type` runs whenever EP is not wider than
    // top-k on multi-node NVLink, instead of an all-to-all of k copies per token that it
    // never runs: the DeepSeek-R1 DEP4/DEP8 rows, already short of a cost the GB200 trace
    // shows, lost the stand-in that had absorbed it. Lowered, 0.1320 -> 0.1305, when
    // Llama 4 Maverick's chunked attention (its preset: chunks of 8,192, every fourth layer
    // global) was lent to its rows. Lowered, 0.1305 -> 0.1230 and median 0.0825 -> 0.0760,
    // when NVFP4 experts got the activation-quantisation kernels the GB200 SGLang trace
    // shows (12 rows better, 3 worse). Lowered, 0.1230 -> 0.1180 and median 0.0760 ->
    // 0.0655, when an instance's compute-bound work runs at the pace of its slowest chip
    // and its momentarily slowest clock (`InstanceModel::compute_pace`, `speed_jitter`
    // measured on the lent H100). Lowered, 0.1180 -> 0.1150, when NVIDIA's NVFP4
    // DeepSeek-R1 checkpoints kept their attention projections in bf16, as they ship;
    // 0.1150 -> 0.1140 when a row that refers to another row's deployment shape runs it;
    // 0.1140 -> 0.1130 when the performance overview's 1000/1000 rows ran the 3000 requests
    // its dataset table lists for 1K/1K instead of three max batches' worth. Raised, median
    // 0.0655 -> 0.0665 (MAE 0.1109 -> 0.1116), when the H200's GEMM and attention rates were
    // measured on the lent H200 instead of taken from the H100: its Llama 3.1 8B and
    // Mixtral rows, predicted fast, gain 1-2 points; its Llama 3.1 405B and gpt-oss-120b
    // rows, predicted slow, lose 1-2.)
    let r = validation();
    let s = &r.summary;
    assert!(s.count >= 81, "rows predicted: {}", s.count);
    assert!(s.mae < 0.1130, "MAE {:.3}", s.mae);
    assert!(
        s.median_abs_error < 0.0665,
        "median {:.3}",
        s.median_abs_error
    );
    // The latencies the rows measured, summarised per quantity (session 38's figures,
    // rounded up: docs/serving.md). Server rows compare them at the run's own rate, near
    // its capacity, so a throughput miss shows here magnified; ratcheted all the same.
    // ttft_p99 0.060 -> 0.085 in session 41: the H200's measured GEMM and attention rates
    // (2-5% below the H100's, calibration/h200-sxm-measured.json) take the Mixtral Server
    // row's throughput error from +8.2% to +6.7% and its p99 TTFT from 523 to 495 ms
    // against 540 measured. That tail is chaotic in the rates: the fp8 fits' second pass
    // (+0.8%) alone moved it 513 -> 495 ms, so the two rows' MAE is a loose guard.
    let metric = |name: &str| {
        r.metrics
            .iter()
            .find(|m| m.group == name)
            .unwrap_or_else(|| panic!("no summary of {name}"))
    };
    for (name, rows, mae) in [
        ("ttft_p99_ms", 2, 0.085),
        ("tpot_p50_ms", 2, 0.700),
        ("request_latency_mean_ms", 7, 0.430),
        ("per_user_output_tokens_per_s", 2, 0.110),
        // 0.105 -> 0.125 in session 45: every TP rank computes MLA's replicated down
        // projections (SGLang's `fused_qkv_a_proj_with_mqa` is a `ReplicatedLinear`) for all
        // its tokens; the Ant Group H20 row prefills at TP 8 on a compute-poor chip and goes
        // from about -11% to -18.6% (the code, not a fit).
        ("prefill_input_tokens_per_s_per_gpu", 4, 0.125),
    ] {
        let m = metric(name);
        assert_eq!(m.count, rows, "{name}: rows");
        assert!(m.mae < mae, "{name}: MAE {:.3} (ratchet {mae})", m.mae);
    }
}

#[test]
#[ignore = "issue 8 bar not met yet: see docs/serving.md (validation)"]
fn validation_meets_the_issue_bar() {
    let s = validation().summary;
    assert!(s.mae < 0.15 && s.worst_abs_error < 0.40, "{s:?}");
}

#[test]
fn deepseek_large_ep_per_node_within_20_percent() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/inference-public.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let r = myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap();
    for c in &r.cases {
        for (k, p, m) in &c.extra {
            if k.contains("per_node") {
                assert!((p / m - 1.0).abs() < 0.20, "{} {k}: {p} vs {m}", c.id);
            }
        }
    }
}

fn gpt_oss_like() -> myriad_model::Transformer {
    // gpt-oss-20b's shape (24 layers, hidden 2880, 64 heads of 64, 8 KV heads, 32 experts
    // top-4): only the architecture matters here.
    myriad_model::Transformer {
        name: "gpt-oss-20b".into(),
        layers: 24,
        hidden: 2880,
        ffn_hidden: 2880,
        heads: 64,
        kv_heads: 8,
        head_dim: Some(64),
        vocab: 201_088,
        seq_len: 4096,
        gated_mlp: true,
        tied_embeddings: false,
        moe: Some(myriad_model::Moe::routed(32, 4, 2880)),
        mla: None,
        sliding_window: None,
        attention_sinks: true,
        mtp_layers: 0,
    }
}

fn gpt_oss_instance(window: Option<bool>) -> InstanceModel {
    let cat = myriad_catalog::catalog();
    let m = InstanceModel::new(
        cat.accelerator("h100-sxm").unwrap(),
        &levels("h100-sxm", 8),
        &gpt_oss_like(),
        Parallel::new(1, 1, 1),
        Precisions::new(Precision::Bf16, Precision::Fp4, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    match window {
        Some(bounds) => m.with_sliding_window(128, 12, bounds),
        None => m,
    }
}

#[test]
fn sliding_window_kv_need_closed_form() {
    // Half the layers keep at most 128 tokens: a 1000-token sequence needs
    // 1000·0.5 + 128·0.5 = 564 all-layer tokens; shorter than the window, all of it.
    let m = gpt_oss_instance(Some(true));
    assert_eq!(m.kv_need(1000.0), 564.0);
    assert_eq!(m.kv_need(100.0), 100.0);
    // A framework that keeps the whole sequence for every layer reserves all of it.
    assert_eq!(gpt_oss_instance(Some(false)).kv_need(1000.0), 1000.0);
    assert_eq!(gpt_oss_instance(None).kv_need(1000.0), 1000.0);
}

#[test]
fn sliding_window_cuts_long_context_attention_only() {
    let full = gpt_oss_instance(None);
    let win = gpt_oss_instance(Some(true));
    let at = |m: &InstanceModel, seqs: f64, ctx: f64| {
        m.iteration(&Batch {
            decode_seqs: seqs,
            decode_ctx: seqs * ctx,
            ..Batch::default()
        })
        .attention_s
    };
    // Contexts within the window: identical.
    assert!((at(&full, 64.0, 100.0) - at(&win, 64.0, 100.0)).abs() < 1e-12);
    // Long contexts: the windowed half of the layers reads 128 tokens instead of 8192,
    // so the memory-bound attention time nearly halves (kernel overheads aside).
    let (f, w) = (at(&full, 64.0, 8192.0), at(&win, 64.0, 8192.0));
    let ideal = 0.5 + 0.5 * 128.0 / 8192.0;
    assert!(w < f * (ideal + 0.05) && w > f * ideal * 0.95, "{w} vs {f}");
    // Prefill: a 4096-token prompt's windowed layers attend to at most 128 positions, a
    // sixteenth of a full layer's pairs (516,032 of 8,390,656), but as a band, whose
    // kernel runs at 0.28 of causal attention's efficiency at 4,096 tokens on the H100
    // (0.130 against 0.458 of the peak at head dim 64, the step model's band form): a
    // windowed layer costs 0.22 of a full one, and the model (1 + 0.22) / 2 = 0.61 of
    // all-full attention.
    let pf = |m: &InstanceModel| m.iteration(&one_prompt(4096.0)).attention_s;
    let r = pf(&win) / pf(&full);
    assert!(r > 0.58 && r < 0.64, "{r}");
}

#[test]
fn widened_weights_floor_closed_form() {
    use myriad_serve::model::widened_gemm_floor;
    let cat = myriad_catalog::catalog();
    let h100 = cat.accelerator("h100-sxm").unwrap();
    // 1 PFLOP of W4A16 work on Hopper (no fp4 tensor cores): at 254 TFLOP/s, 3.94 s.
    let t = widened_gemm_floor(h100, Precision::Fp4, 1e15);
    assert!((t - 1e15 / 254e12).abs() < 1e-9, "{t}");
    // Weights the tensor cores read natively, or 16-bit weights: no floor.
    assert_eq!(widened_gemm_floor(h100, Precision::Fp8, 1e15), 0.0);
    assert_eq!(widened_gemm_floor(h100, Precision::Bf16, 1e15), 0.0);
    // Blackwell reads fp4 natively.
    assert_eq!(
        widened_gemm_floor(cat.accelerator("b200").unwrap(), Precision::Fp4, 1e15),
        0.0
    );
    // No measured ceiling (A100 widens fp8, but nobody published the rate): none applied.
    assert_eq!(
        widened_gemm_floor(
            cat.accelerator("a100-sxm-80gb").unwrap(),
            Precision::Fp8,
            1e15
        ),
        0.0
    );
}

#[test]
fn widened_expert_gemms_slow_prefill_not_decode() {
    // The same gpt-oss-shaped instance with and without Hopper's weight-only ceiling.
    let capped = gpt_oss_instance(None);
    let mut acc = capped.acc.clone();
    acc.efficiency.weight_only_gemm_tflops = None;
    let free = InstanceModel::new(
        &acc,
        &capped.levels,
        &capped.model,
        capped.par,
        capped.prec,
        0.0,
        false,
        None,
    )
    .unwrap();
    // Decode at batch 8: 32 tokens over 32 experts, bound by the weight stream; the
    // ceiling (8 tokens' FLOPs at 254 TFLOP/s) is far below it, so nothing changes.
    let decode = Batch {
        decode_seqs: 8.0,
        decode_ctx: 8.0 * 1024.0,
        ..Batch::default()
    };
    assert_eq!(capped.iteration(&decode), free.iteration(&decode));
    // An 8192-token prompt: 24 layers x 4 experts x 3 matrices of 2880 x 2880 per token,
    // 2 FLOPs each = 4.78 GFLOP per token, 39.1 TFLOP in all: at least 0.154 s of GEMMs.
    let prefill = one_prompt(8192.0);
    let flops = 8192.0 * 24.0 * 4.0 * 3.0 * 2880.0 * 2880.0 * 2.0;
    let (c, f) = (capped.iteration(&prefill), free.iteration(&prefill));
    assert!(
        c.gemm_s >= flops / 254e12,
        "{} < {}",
        c.gemm_s,
        flops / 254e12
    );
    assert!(f.gemm_s < 0.6 * c.gemm_s, "{} vs {}", f.gemm_s, c.gemm_s);
}

#[test]
fn trtllm_bench_reads_packed_fp4_parameters() {
    use myriad_serve::validate::{trtllm_bench_param_count, QuantAlgo};
    let cat = myriad_catalog::catalog();
    let llama = cat.model("llama3-70b").unwrap().model.clone();
    for t in [llama, gpt_oss_like()] {
        let p = t.params();
        let bf16 = Precisions::new(Precision::Bf16, Precision::Bf16, Precision::Bf16);
        // Unquantised: the header lists every parameter.
        assert_eq!(trtllm_bench_param_count(&t, bf16, QuantAlgo::None), p.total);
        // NVFP4: linear weights appear as 0.5 packed bytes + 1/16 fp8 scales per parameter;
        // embeddings, output layer and norms stay whole.
        let fp4 = Precisions::new(Precision::Fp4, Precision::Fp4, Precision::Bf16);
        let whole = p.embedding + p.output + t.layers as f64 * p.norms_per_layer + t.hidden as f64;
        let router = t.moe.as_ref().map_or(0.0, |m| {
            t.moe_layers() as f64 * t.hidden as f64 * m.experts as f64
        });
        let linear = p.total - whole - router;
        let got = trtllm_bench_param_count(&t, fp4, QuantAlgo::Nvfp4);
        let want = whole + router + linear * 0.5625;
        assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    }
    // trtllm-bench's BYTES_PER_ELEM has no MXFP4 entry: the default 2 bytes applies.
    let fp4 = Precisions::new(Precision::Bf16, Precision::Fp4, Precision::Bf16);
    assert_eq!(QuantAlgo::Mxfp4.bench_bytes_per_elem(), 2.0);
    assert_eq!(QuantAlgo::Nvfp4.bench_bytes_per_elem(), 0.5);
    assert_eq!(QuantAlgo::of(fp4, true), QuantAlgo::Mxfp4);
    assert_eq!(QuantAlgo::of(fp4, false), QuantAlgo::Nvfp4);
}

#[test]
fn named_checkpoint_with_fp8_kv_gets_fp8_kv() {
    let row = |fw: &str, ckpt: &str, weights: &str| {
        serde_json::json!({
            "id": "t",
            "hardware": {"accelerator": "gb200", "count": 1},
            "model": {"name": "Llama 3.3 70B", "layers": 80, "hidden": 8192, "ffn_hidden": 28672,
                      "heads": 64, "kv_heads": 8, "head_dim": 128, "vocab": 128256},
            "serving": {"framework": fw, "checkpoint": ckpt,
                        "weight_precision": weights, "tp": 1, "isl": 1024, "osl": 1024,
                        "scenario": "offline", "num_requests": 200},
            "measured": {"output_tokens_per_s_per_gpu": 1000.0}
        })
    };
    let cat = myriad_catalog::catalog();
    let mut w = Vec::new();
    let mut kv = |fw: &str, ckpt: &str, weights: &str| {
        let p = myriad_serve::validate::predict_row(cat, &row(fw, ckpt, weights), &mut w);
        let fp8 = p.notes.iter().any(|n| n.contains("kv fp8"));
        assert!(
            fp8 || p.notes.iter().any(|n| n.contains("kv bf16")),
            "{:?}",
            p.notes
        );
        (fp8, p.predicted.unwrap())
    };
    let bench = "TensorRT-LLM trtllm-bench (v1.0)";
    let later = "TensorRT-LLM trtllm-bench (release not stated)";
    let serve = "TensorRT-LLM trtllm-serve";
    // A checkpoint whose hf_quant_config names an FP8 KV cache gets it wherever it runs.
    let (named, fast) = kv(serve, "nvidia/Llama-3.3-70B-Instruct-FP4", "nvfp4");
    assert!(named);
    // The 1.0-era trtllm-bench gives every FP8 or NVFP4 checkpoint an FP8 cache (its
    // mapping table); a later or unnamed release follows the checkpoint, as does any other
    // front end, so an unnamed checkpoint keeps the model's 16-bit cache there, and
    // trtllm-bench keeps it for an unquantised one.
    assert!(kv(bench, "someone/other-fp4", "nvfp4").0);
    assert!(!kv(later, "someone/other-fp4", "nvfp4").0);
    let (other, slow) = kv(serve, "someone/other-fp4", "nvfp4");
    assert!(!other);
    assert!(!kv(bench, "someone/other-bf16", "bf16").0);
    // Half the KV bytes per token: more sequences fit, so more throughput.
    assert!(fast > slow);
}

#[test]
fn whole_prompts_are_packed_per_attention_dp_rank() {
    // Two attention-DP ranks with 1536 tokens each and no chunking: a 1024-token prompt
    // fills a rank (the other 512 cannot hold a second one), so six prompts take three
    // iterations of two, not two iterations of three as one pooled 3072-token budget would.
    let bf16 = Precision::Bf16;
    let m = try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 2, 1),
        (bf16, bf16, bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    let kv = m.kv_capacity_tokens(0.9);
    let run = |chunked: bool| {
        let d = Deployment::Aggregated(RoleSpec {
            model: m.clone(),
            instances: 1,
            max_batch: 64,
            max_tokens: 3072,
            chunked_prefill: chunked,
            kv_tokens: kv,
            policy: Default::default(),
        });
        let reqs = vec![(0.0, 1024u32, 1u32); 6];
        myriad_serve::simulate_requests(
            &d,
            &reqs,
            0.0,
            &Slo {
                ttft_s: None,
                tpot_s: None,
            },
        )
    };
    let r = run(false);
    assert_eq!(r.completed, 6);
    assert_eq!(r.iterations, 3);
}

#[test]
fn trtllm_bench_without_chunking_fits_the_longest_prompt() {
    // trtllm-bench's heuristic budget (2048 here) is raised to ISL + max batch when chunked
    // prefill is off, its default; a TensorRT-LLM row not run by trtllm-bench keeps it.
    let row = |fw: &str| {
        serde_json::json!({
            "id": "t",
            "hardware": {"accelerator": "h200", "count": 1},
            "model": {"name": "Llama 3.1 8B", "layers": 32, "hidden": 4096, "ffn_hidden": 14336,
                      "heads": 32, "kv_heads": 8, "head_dim": 128, "vocab": 128256},
            "serving": {"framework": fw, "weight_precision": "fp8", "tp": 1,
                        "isl": 20000, "osl": 2000, "scenario": "offline", "num_requests": 100},
            "measured": {"output_tokens_per_s_per_gpu": 1000.0}
        })
    };
    let cat = myriad_catalog::catalog();
    let mut w = Vec::new();
    let a = myriad_serve::validate::predict_row(cat, &row("TensorRT-LLM trtllm-bench"), &mut w);
    let b = myriad_serve::validate::predict_row(cat, &row("TensorRT-LLM"), &mut w);
    let budget = |notes: &[String]| -> u32 {
        let n = notes
            .iter()
            .find(|n| n.starts_with("max_num_tokens:"))
            .unwrap();
        n.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let batch = |notes: &[String]| -> u32 {
        let n = notes.iter().find(|n| n.starts_with("max_batch:")).unwrap();
        n.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(budget(&a.notes), 20000 + batch(&a.notes));
    assert_eq!(budget(&b.notes), 2048);
    assert!(a.notes.iter().any(|n| n.contains("chunked prefill: off")));
    assert!(!b.notes.iter().any(|n| n.contains("chunked prefill: off")));
}

#[test]
fn cuda_graph_sizes_follow_tensorrt_llm() {
    use myriad_serve::validate::trtllm_graph_batch_sizes as sizes;
    let small: Vec<u32> = [1, 2, 4]
        .into_iter()
        .chain((1..=16).map(|i| i * 8))
        .collect();
    let with = |tail: &[u32]| -> Vec<u32> { small.iter().chain(tail).copied().collect() };
    // Powers of two from 256 while below 2^floor(log2 max): 768 gets 256 only, then 768.
    assert_eq!(sizes(768), with(&[256, 768]));
    assert_eq!(sizes(1024), with(&[256, 512, 1024]));
    assert_eq!(sizes(128), small);
    assert_eq!(
        sizes(100),
        [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 100]
    );
}

#[test]
fn graph_padding_costs_gemm_rows_not_context() {
    let m = instance("h200", "llama3-8b", 1, Precision::Fp8, Precision::Fp8, 0.0);
    let p = m.clone().with_graph_padding(vec![1, 2, 4, 256, 512, 1024]);
    // 600 sequences pad to 1024; 1024 and batches beyond the largest graph stay as is.
    assert_eq!(p.padded_decode_seqs(600.0), 1024.0);
    assert_eq!(p.padded_decode_seqs(1024.0), 1024.0);
    assert_eq!(p.padded_decode_seqs(3000.0), 3000.0);
    assert_eq!(m.padded_decode_seqs(600.0), 600.0);
    let it = |m: &InstanceModel, seqs: f64, prefill: f64| {
        m.iteration(&Batch {
            decode_seqs: seqs,
            decode_ctx: seqs * 1000.0,
            decode_ctx_sq: 0.0,
            decode_ctx_seqs: 0.0,
            prefill_tokens: prefill,
            prefill_pairs: prefill * (prefill + 1.0) / 2.0,
            prefill_done: if prefill > 0.0 { 1.0 } else { 0.0 },
            prefill_seqs: if prefill > 0.0 { 1.0 } else { 0.0 },
            ..Batch::default()
        })
    };
    // A padded decode step costs what 1024 rows of GEMM cost, with 600 sequences' KV.
    let (a, b) = (it(&p, 600.0, 0.0), it(&m, 600.0, 0.0));
    let full = it(&m, 1024.0, 0.0);
    assert!(a.gemm_s > b.gemm_s);
    assert!((a.gemm_s - full.gemm_s).abs() < 1e-12);
    assert!((a.attention_s - b.attention_s).abs() < 1e-12);
    // Mixed iterations run eagerly: no padding.
    let (c, d) = (it(&p, 600.0, 512.0), it(&m, 600.0, 512.0));
    assert!((c.total_s - d.total_s).abs() < 1e-12);
}

#[test]
fn framework_named_by_its_developers_blog() {
    // LMSYS Org develops SGLang: a row sourced from its blog is an SGLang run.
    let f = myriad_serve::framework("LMSYS blog 2025-05-05 'Deploying DeepSeek ...'");
    assert_eq!(f.id, "sglang");
    assert_eq!(myriad_serve::framework("vLLM 0.11").id, "vllm");
    assert_eq!(
        myriad_serve::framework("TensorRT-LLM v1.0").id,
        "tensorrt-llm"
    );
}

/// An instance with attention data parallelism and expert parallelism over `ep` ranks (tp 1)
/// of `preset` on `count` accelerators, with weights, routed-expert and KV precisions.
#[allow(clippy::too_many_arguments)]
fn dep_instance(
    acc: &str,
    count: u32,
    preset: &str,
    ep: u32,
    (weights, experts, kv): (Precision, Precision, Precision),
    overhead_s: f64,
    overlap: bool,
) -> InstanceModel {
    try_model(
        (acc, count),
        preset,
        Parallel::new(1, ep, ep),
        (weights, experts, kv),
        overhead_s,
        overlap,
        None,
    )
    .unwrap()
}

/// DeepSeek-V3 as TensorRT-LLM serves it on Blackwell: fp8 weights and KV cache, NVFP4
/// experts, attention DP = EP = `ep` on `count` accelerators of `acc`.
fn deepseek_nvfp4_dep(acc: &str, count: u32, ep: u32, overhead_s: f64) -> InstanceModel {
    let fp8 = Precision::Fp8;
    dep_instance(
        acc,
        count,
        "deepseek-v3",
        ep,
        (fp8, Precision::Fp4, fp8),
        overhead_s,
        false,
    )
}

fn deepseek_dep(ep: u32) -> InstanceModel {
    let fp8 = Precision::Fp8;
    dep_instance(
        "h100-sxm",
        ep.max(8),
        "deepseek-v3",
        ep,
        (fp8, fp8, fp8),
        0.0,
        false,
    )
}

#[test]
fn busiest_ep_rank_closed_form() {
    use myriad_model::moe_balance::DEEPSEEK_R1_EXPERT_LOAD_CV;
    // DeepSeek-V3 at EP8 (32 experts per rank), 3072 assignments per rank: static CV
    // √(1.282²/32 + 1/3072) = 0.2273, E[max of 8 normals] (Blom) = 1.4338: 1.326.
    let m = deepseek_dep(8);
    assert_eq!(m.expert_load_cv, DEEPSEEK_R1_EXPERT_LOAD_CV);
    let f = m.busiest_rank_factor(3072.0);
    assert!((f - 1.326).abs() < 0.003, "{f}");
    // EPLB: residual 0.0400 and sampling 0.0180 in quadrature, 0.0439: 1.063.
    let e = deepseek_dep(8).with_placement(myriad_model::Placement::Eplb);
    let fe = e.busiest_rank_factor(3072.0);
    assert!((fe - 1.063).abs() < 0.003, "{fe}");
    // No EP, no imbalance; a model without a published router statistic only samples.
    assert_eq!(deepseek_dep(1).busiest_rank_factor(3072.0), 1.0);
    let mut other = myriad_catalog::catalog()
        .model("deepseek-v3")
        .unwrap()
        .model
        .clone();
    other.name = "some-moe".into();
    assert_eq!(myriad_serve::model::published_expert_load_cv(&other), 0.0);
}

#[test]
fn expert_imbalance_slows_the_step_and_eplb_recovers_it() {
    let b = Batch {
        decode_seqs: 8.0 * 256.0,
        decode_ctx: 8.0 * 256.0 * 2000.0,
        ..Batch::default()
    };
    let stat = deepseek_dep(8).iteration(&b).total_s;
    let eplb = deepseek_dep(8)
        .with_placement(myriad_model::Placement::Eplb)
        .iteration(&b)
        .total_s;
    let mut uniform = deepseek_dep(8);
    uniform.expert_load_cv = 0.0;
    let uni = uniform.iteration(&b).total_s;
    assert!(uni < eplb && eplb < stat, "{uni} {eplb} {stat}");
}

#[test]
fn measured_mtp_acceptance_length_is_reproduced() {
    use myriad_serve::model::DEEPSEEK_R1_MTP_TOKENS_PER_STEP as TAU;
    use myriad_serve::Speculative;
    // MTP1: 1 + a = 1.92 gives a = 0.92 exactly; every depth reproduces its mean.
    let s1 = Speculative::with_mean_tokens(1, TAU[0]);
    assert!((s1.acceptance - 0.92).abs() < 1e-9);
    for (i, &tau) in TAU.iter().enumerate() {
        let s = Speculative::with_mean_tokens(i as u32 + 1, tau);
        assert!((s.tokens_per_step() - tau).abs() < 1e-9, "depth {}", i + 1);
    }
    // MTP3 2.82: 1 + a + a² + a³ = 2.82 at a = 0.7705 (hand: 1 + 0.7705 + 0.5937 + 0.4574).
    let s3 = Speculative::with_mean_tokens(3, TAU[2]);
    assert!((s3.acceptance - 0.7705).abs() < 5e-4, "{}", s3.acceptance);
    // Deeper drafts accept less per token (the one MTP module reused).
    let a: Vec<f64> = TAU
        .iter()
        .enumerate()
        .map(|(i, &t)| Speculative::with_mean_tokens(i as u32 + 1, t).acceptance)
        .collect();
    assert!(a.windows(2).all(|w| w[1] < w[0]), "{a:?}");
    // Out-of-range input is clamped, not a panic.
    assert!((Speculative::with_mean_tokens(2, 9.0).tokens_per_step() - 3.0).abs() < 1e-9);
    assert!(Speculative::with_mean_tokens(2, f64::NAN).acceptance < 1e-9);
}

#[test]
fn sglang_disaggregated_large_ep_runs_eplb_and_search_keeps_it() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/serve-deepseek-v3-disagg.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let setup = setup_of(path, &text);
    match &setup.deployment {
        Deployment::Disaggregated {
            prefill, decode, ..
        } => {
            assert_eq!(prefill.model.placement, myriad_model::Placement::Eplb);
            assert_eq!(decode.model.placement, myriad_model::Placement::Eplb);
            // EP144 of 256 experts: EPLB's busiest rank is within 20% of the mean, static
            // placement's far beyond (1.28/√1.78 · E[max of 144] ≈ 0.96 · 2.62 ≈ 2.5 above the mean).
            let m = &decode.model;
            assert!(m.busiest_rank_factor(800.0) < 1.2);
            let stat = m.clone().with_placement(myriad_model::Placement::Static);
            assert!(stat.busiest_rank_factor(800.0) > 3.0);
        }
        _ => panic!("disaggregated expected"),
    }
}

/// DeepSeek-V3 decode as SGLang ran it on 96 H100 (LMSYS blog 2025-05-05): EP72 over 9
/// nodes, DP attention, fp8 weights, bf16 KV, EPLB, two-batch overlap.
fn sglang_ep72(overlap: bool) -> InstanceModel {
    let (fp8, bf16) = (Precision::Fp8, Precision::Bf16);
    dep_instance(
        "h100-sxm",
        72,
        "deepseek-v3",
        72,
        (fp8, fp8, bf16),
        myriad_serve::framework::SGLANG.iteration_overhead_us * 1e-6,
        overlap,
    )
    .with_placement(myriad_model::Placement::Eplb)
}

#[test]
fn decode_two_batch_overlap_follows_deepseeks_schedule() {
    // The post's decode point: 256 sequences per GPU at KV length 2,000 (its profile table).
    let per_gpu = 256.0;
    let b = Batch {
        decode_seqs: per_gpu * 72.0,
        decode_ctx: per_gpu * 72.0 * 2000.0,
        ..Batch::default()
    };
    let half = Batch {
        decode_seqs: b.decode_seqs / 2.0,
        decode_ctx: b.decode_ctx / 2.0,
        ..b
    };
    let m = sglang_ep72(true);
    assert!(m.ep_over_rdma());
    let st = m.moe_stages(&half);
    // At 128 tokens per micro-batch the all-to-alls outlast what hides them: the dispatch
    // is longer than shared experts + MLA projections, the combine longer than core
    // attention + output projection + gate (the post: SGLang's combine busy-waits because
    // its attention is short).
    assert!(st.dispatch > st.shared + st.pre, "{st:?}");
    assert!(st.combine > st.core, "{st:?}");
    // Closed form: per MoE layer 2·(dispatch + mlp + combine); the rest (dense layers,
    // draft, TP) in turn for both halves; the LM head once over the whole batch.
    let moe_layers = 58.0;
    let full = m.moe_stages(&b).lm_head;
    let h = sglang_ep72(false).iteration(&half);
    let moe_compute = moe_layers * (st.pre + st.core + st.shared + st.mlp);
    let other = h.gemm_s + h.attention_s + h.memory_s - moe_compute - st.lm_head;
    let want =
        2.0 * (moe_layers * (st.dispatch + st.mlp + st.combine) + other) + full + m.overhead_s;
    let got = m.iteration(&b).total_s;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    // Bounds: no shorter than either resource's serial work, no longer than no overlap.
    let seq = sglang_ep72(false).iteration(&b).total_s;
    assert!(got < seq, "{got} vs sequential {seq}");
    assert!(got > 2.0 * moe_layers * (st.dispatch + st.combine));
    // The post measured 22,282 tokens/s per node at this point: 2,048 sequences per node
    // per step, 91.9 ms. The model's step is within 20% of it (it was 61 ms, -34%, when any
    // communication could hide under any compute).
    let measured = 8.0 * per_gpu / 22_282.0;
    assert!((got / measured - 1.0).abs() < 0.20, "{got} vs {measured}");
}

#[test]
fn deepep_low_latency_kernels_reproduced() {
    // DeepEP's published low-latency kernels (README, now docs/legacy.md; H800, ConnectX-7
    // 400 Gb/s InfiniBand, 128 tokens per rank, hidden 7168, top-8, fp8 dispatch, bf16
    // combine): (EP, dispatch µs, combine µs). The serving model times the same bytes per
    // rank (tokens·top-k·hidden, 1 byte dispatched, 2 combined) with myriad-collective's
    // all-to-all over the EP group laid on H800 nodes (NVLink 8, NDR InfiniBand).
    // EP8 (one node) is left out: the published kernel sends over RDMA even within a node.
    const DEEPEP_LL: [(u64, f64, f64); 5] = [
        (16, 118.0, 195.0),
        (32, 155.0, 273.0),
        (64, 173.0, 314.0),
        (128, 192.0, 369.0),
        (256, 194.0, 360.0),
    ];
    use myriad_collective::{time, Algorithm, Op};
    let lv = levels("h800", 256);
    let bytes = 128.0 * 8.0 * 7168.0;
    let mut sum = 0.0;
    for (ep, d_us, c_us) in DEEPEP_LL {
        let g = myriad_serve::model::span(ep, &lv);
        let d = time(Op::AllToAll, Algorithm::Auto, bytes, &g, &lv)
            .unwrap()
            .time_s
            * 1e6;
        let c = time(Op::AllToAll, Algorithm::Auto, 2.0 * bytes, &g, &lv)
            .unwrap()
            .time_s
            * 1e6;
        for (got, want) in [(d, d_us), (c, c_us)] {
            let e = got / want - 1.0;
            assert!(
                e.abs() < 0.30,
                "EP{ep}: {got:.0} µs vs published {want:.0} µs"
            );
            sum += e.abs();
        }
    }
    let mean = sum / (2.0 * DEEPEP_LL.len() as f64);
    assert!(mean < 0.15, "mean abs error {mean:.3}");
}

#[test]
fn flashmla_decode_figures_reproduced() {
    // FlashMLA (deepseek-ai/FlashMLA README): dense MLA decode on H800 SXM5 reaches 3000 GB/s
    // memory-bound and 580 TFLOPS compute-bound (Feb 2025, CUDA 12.6), 660 TFLOPS after the
    // 2025-04-22 update. Its benchmark shapes: batch 128, KV length 4096, d_qk 576, d_v 512;
    // 128 query heads with two query tokens (MTP) is compute-bound, 16 heads (TP8) with one
    // is memory-bound. The serving model's decode attention (bf16 peak × attention_fwd,
    // KV bytes at HBM × hbm) on the h800 record:
    let cat = myriad_catalog::catalog();
    let h800 = cat.accelerator("h800").unwrap();
    let e = &h800.efficiency;
    let ov = e.gemm_overhead_us * 1e-6;
    let (b, s_k, dqk, dv) = (128.0, 4096.0, 576.0, 512.0);
    // Compute-bound: FLOPs 2·b·s_q·h·s_k·(d_qk + d_v).
    let flops = 2.0 * b * 2.0 * 128.0 * s_k * (dqk + dv);
    let t = flops / (h800.dense_tflops.bf16.unwrap() * 1e12 * e.attention_fwd) + ov;
    let tflops = flops / t / 1e12;
    assert!((560.0..=680.0).contains(&tflops), "{tflops:.0} TFLOPS");
    // Memory-bound: the latent KV cache (576 bf16 values per token) read once.
    let bytes = b * s_k * dqk * 2.0;
    let t = bytes / (h800.hbm_tbps * 1e12 * e.hbm) + ov;
    let gbps = bytes / t / 1e9;
    assert!((gbps / 3000.0 - 1.0).abs() < 0.05, "{gbps:.0} GB/s");
}

#[test]
fn deepgemm_masked_grouped_gemm_figures_within_30_percent() {
    // DeepGEMM's published masked-layout grouped GEMMs (the decode MoE kernel; README of
    // 2025-02-25/03-25, H800 SXM5, NVCC 12.8): (groups, m per group, n, k, TFLOPS). The
    // step model's GEMM form (fp8 peak × gemm_fp8 + overhead + input quantisation) puts
    // each within 30%; it is 12-27% fast on the K = 2048 down projections (DeepGEMM's
    // smaller K has less reuse per tile), within 15% on the K = 7168 gate/up ones.
    const MASKED: [(f64, f64, f64, f64, f64); 6] = [
        (1.0, 1024.0, 4096.0, 7168.0, 1233.0),
        (1.0, 1024.0, 7168.0, 2048.0, 925.0),
        (2.0, 512.0, 4096.0, 7168.0, 1040.0),
        (2.0, 512.0, 7168.0, 2048.0, 916.0),
        (4.0, 256.0, 4096.0, 7168.0, 932.0),
        (4.0, 256.0, 7168.0, 2048.0, 815.0),
    ];
    let h800 = myriad_catalog::catalog().accelerator("h800").unwrap();
    for (g, m, n, k, published) in MASKED {
        let t = myriad_train::step::gemm_time(h800, Precision::Fp8, m, n, k, g);
        let tflops = 2.0 * g * m * n * k / t / 1e12;
        let e = tflops / published - 1.0;
        assert!(
            e.abs() < 0.30,
            "{g}x{m} n{n} k{k}: {tflops:.0} vs {published}"
        );
    }
}

#[test]
fn prefill_first_scheduling_stalls_decodes_and_rounds_delay_prompts() {
    // vLLM V0 without chunked prefill: prompts run in iterations of their own, and every
    // running sequence waits them out, so the time per output token rises against mixed
    // iterations at the same load; multi-step rounds hold waiting prompts until a round
    // ends, so the time to first token rises. Every request completes either way.
    let m = llama3_8b_h100_bf16();
    let w = chat(Arrivals::Poisson(20.0), 3000, 7);
    let reqs = myriad_serve::sim::generate(&w);
    let run = |policy: SchedulePolicy| {
        let mut r = role(m.clone(), 1, 256);
        r.chunked_prefill = false;
        r.policy = policy;
        myriad_serve::simulate_requests(
            &Deployment::Aggregated(r),
            &reqs,
            0.0,
            &Slo {
                ttft_s: None,
                tpot_s: None,
            },
        )
    };
    let mixed = run(SchedulePolicy::default());
    let first = run(SchedulePolicy {
        prefill_first: true,
        decode_steps_per_round: 1,
        adp_balance_timeout_iters: 0,
        adp_balance_batching_wait_iters: 0,
        ..SchedulePolicy::default()
    });
    let rounds = run(SchedulePolicy {
        prefill_first: true,
        decode_steps_per_round: 8,
        adp_balance_timeout_iters: 0,
        adp_balance_batching_wait_iters: 0,
        ..SchedulePolicy::default()
    });
    for r in [&mixed, &first, &rounds] {
        eprintln!(
            "TTFT mean {:.1} ms, TPOT mean {:.2} ms",
            r.ttft.mean * 1e3,
            r.tpot.mean * 1e3
        );
        assert_eq!(r.completed, 3000);
    }
    assert!(
        first.tpot.mean > 1.05 * mixed.tpot.mean,
        "TPOT {} vs {}",
        first.tpot.mean,
        mixed.tpot.mean
    );
    assert!(
        rounds.ttft.mean > first.ttft.mean,
        "TTFT {} vs {}",
        rounds.ttft.mean,
        first.ttft.mean
    );
}

/// `serving.dataset` draws every request's lengths from the named MLPerf set's samples
/// (seeded), and the long-tailed real requests keep an attention-data-parallel instance
/// slower than the same number of requests at the set's mean lengths: equal requests
/// admitted together finish together, so all eight ranks prefill in the same iterations,
/// while real requests free one rank's slot at a time and every rank waits for that
/// rank's prompt (TensorRT-LLM tech blog 10 measured 1.33x from re-aligning them).
#[test]
fn dataset_requests_follow_the_samples_and_desynchronise_attention_dp_ranks() {
    let scenario = |lengths: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: b200, count: 8}}\nmodel: {{preset: deepseek-v3}}\nserving:\n  framework: tensorrt-llm\n  weights: fp8\n  experts: fp4\n  kv_cache: fp8\n  chunked_prefill: false\n  instance: {{tp: 1, attention_dp: 8, ep: 8, max_batch: 2048, max_num_tokens: 16384}}\n  requests: 6000\n{lengths}"
        );
        setup_of("s.yaml", &text)
    };
    let real = scenario("  dataset: mlperf-deepseek-r1\n");
    let myriad_serve::Arrivals::Trace(reqs) = &real.workload.arrivals else {
        panic!("dataset requests come as a trace");
    };
    assert_eq!(reqs.len(), 6000);
    let mean = |f: fn(&(f64, u32, u32)) -> u32| {
        reqs.iter().map(|r| f(r) as f64).sum::<f64>() / reqs.len() as f64
    };
    // 4,388 samples, mean 803.8 in / 4,043.4 out (output CV 1.25: 1.6% standard error).
    assert!(
        (mean(|r| r.1) / 803.8 - 1.0).abs() < 0.03,
        "{}",
        mean(|r| r.1)
    );
    assert!(
        (mean(|r| r.2) / 4043.4 - 1.0).abs() < 0.06,
        "{}",
        mean(|r| r.2)
    );
    assert!(reqs.iter().all(|r| r.0 == 0.0));
    let again = scenario("  dataset: mlperf-deepseek-r1\n");
    assert!(matches!(&again.workload.arrivals, myriad_serve::Arrivals::Trace(r) if r == reqs));
    let equal = scenario(&format!(
        "  input: {{mean: {:.0}}}\n  output: {{mean: {:.0}}}\n",
        mean(|r| r.1),
        mean(|r| r.2)
    ));
    let run = |s: &myriad_serve::Setup| {
        myriad_serve::simulate(&s.deployment, &s.workload, &s.slo)
            .output_tokens_per_s_per_accelerator
    };
    let (r, e) = (run(&real), run(&equal));
    assert!(
        e > 1.15 * r,
        "equal lengths {e:.0} vs dataset {r:.0} tokens/s/GPU"
    );
}

/// gpt-oss-120b on GB200 with attention DP 2 and EP 2: TensorRT-LLM PR #10273's
/// host-bound configuration (max batch 1536 per rank, 1k/1k).
fn gpt_oss_gb200_adp2(host_us: f64) -> InstanceModel {
    let (fp8, fp4) = (Precision::Fp8, Precision::Fp4);
    dep_instance(
        "gb200",
        72,
        "gpt-oss-120b",
        2,
        (fp8, fp4, fp8),
        300e-6,
        false,
    )
    .with_host_per_seq(host_us)
}

#[test]
fn host_loop_binds_only_when_slower_than_the_gpu() {
    let fw = myriad_serve::framework::TRTLLM;
    // The source figure: 45.11 ms per iteration at 1536 sequences per rank.
    let at_source = fw.host_us_per_seq * 1536.0 * 1e-6;
    assert!((at_source / 45.11e-3 - 1.0).abs() < 0.005, "{at_source}");
    let with = gpt_oss_gb200_adp2(fw.host_us_per_seq);
    let without = gpt_oss_gb200_adp2(0.0);
    let decode = |per_rank: f64| Batch {
        decode_seqs: 2.0 * per_rank,
        decode_ctx: 2.0 * per_rank * 1536.0,
        ..Default::default()
    };
    // Small batch: the GPU step is longer than the host's work, which hides under it.
    let (g, h) = (
        without.iteration(&decode(32.0)),
        with.iteration(&decode(32.0)),
    );
    assert!(g.total_s > 32.0 * fw.host_us_per_seq * 1e-6);
    assert_eq!(g, h);
    // The source's batch: the GPU step (modelled) is shorter than the host's 45 ms (the PR
    // calls this configuration host-bound), so the iteration takes the host's time and the
    // excess shows as overhead; the parts still add up.
    let (g, h) = (
        without.iteration(&decode(1536.0)),
        with.iteration(&decode(1536.0)),
    );
    assert!(g.total_s < at_source, "GPU step {:.4} s", g.total_s);
    assert!((h.total_s - at_source).abs() < 1e-12);
    let parts = h.gemm_s + h.attention_s + h.memory_s + h.comm_s + h.overhead_s;
    assert!((parts - h.total_s).abs() < 1e-12);
    // A rank then emits at most 1 / host-per-sequence tokens per second.
    for n in [256.0, 1024.0, 1536.0, 4096.0] {
        let t = with.iteration(&decode(n)).total_s;
        assert!(n / t <= 1e6 / fw.host_us_per_seq * (1.0 + 1e-9));
    }
}

#[test]
fn a_prompt_on_one_attention_rank_makes_it_the_busiest_all_to_all_sender() {
    // DeepSeek-V3 DEP8 on one HGX H100 node, uniform routing (only sampling noise): 64
    // decode sequences on every rank, and one 1024-token prompt on rank 0 only. That rank
    // sends (64 + 1024) tokens x top-8 copies at the dispatch, 3.5x the mean of
    // (8·64 + 1024)/8 = 192 tokens, so the all-to-all lasts as long as when every rank
    // carries such a prompt (same bytes per sender), less only that case's receive-side
    // imbalance, and longer than when the same prompt tokens are spread evenly.
    let mut m = deepseek_dep(8);
    m.expert_load_cv = 0.0;
    let one = |prompts: f64, per_prompt: f64| Batch {
        decode_seqs: 8.0 * 64.0,
        decode_ctx: 8.0 * 64.0 * 2000.0,
        decode_ctx_sq: 0.0,
        decode_ctx_seqs: 0.0,
        prefill_tokens: prompts * per_prompt,
        prefill_pairs: prompts * per_prompt * per_prompt / 2.0,
        prefill_done: prompts,
        prefill_seqs: prompts,
        ..Batch::default()
    };
    let skewed = m.moe_stages(&one(1.0, 1024.0));
    let spread = m.moe_stages(&one(8.0, 128.0));
    let every = m.moe_stages(&one(8.0, 1024.0));
    assert!(
        skewed.dispatch > 1.5 * spread.dispatch,
        "{skewed:?} {spread:?}"
    );
    assert!(skewed.combine > 1.5 * spread.combine);
    // Every rank with a prompt: 1088 tokens per rank, 8704 x 8 / 8 assignments per rank.
    let f = m.busiest_rank_factor(1088.0 * 8.0);
    assert!(f > 1.0 && f < 1.1, "{f}");
    for (s, e) in [
        (skewed.dispatch, every.dispatch),
        (skewed.combine, every.combine),
    ] {
        assert!(s <= e * 1.000_001 && s >= e / f, "{s} {e} {f}");
    }
}

#[test]
fn adp_balance_holds_prompts_so_attention_dp_ranks_prefill_together() {
    // DeepSeek-V3 DEP8 on B200 (fp8 attention, fp4 experts), Poisson arrivals of chat requests, no chunking.
    // Without ADP balance a prompt runs on its rank as soon as it arrives and the seven
    // other ranks wait for it at every MoE layer; with TensorRT-LLM's context wait a prompt
    // is held until every rank has one (or the timeout), so prompts cost fewer iterations:
    // the time per output token falls and the time to first token rises by the holding.
    // Without attention data parallelism there is nothing to balance: the same run.
    let w = chat(Arrivals::Poisson(12.0), 2000, 3);
    let reqs = myriad_serve::sim::generate(&w);
    let run = |m: InstanceModel, timeout: u32| {
        let mut r = role(m, 1, 2048);
        r.chunked_prefill = false;
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            ..SchedulePolicy::default()
        };
        myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.0, &NO_SLO)
    };
    let dep8 = || deepseek_nvfp4_dep("b200", 8, 8, 300e-6);
    let base = run(dep8(), 0);
    let held = run(dep8(), 50);
    eprintln!(
        "TTFT {:.1} -> {:.1} ms, TPOT {:.2} -> {:.2} ms",
        base.ttft.mean * 1e3,
        held.ttft.mean * 1e3,
        base.tpot.mean * 1e3,
        held.tpot.mean * 1e3
    );
    assert_eq!(base.completed, 2000);
    assert_eq!(held.completed, 2000);
    assert!(held.tpot.mean < 0.97 * base.tpot.mean);
    assert!(held.ttft.mean > 1.5 * base.ttft.mean);
    let plain = run(llama3_8b_h100_bf16(), 0);
    let plain_held = run(llama3_8b_h100_bf16(), 50);
    assert_eq!(plain.tpot.mean, plain_held.tpot.mean);
    assert_eq!(plain.ttft.mean, plain_held.ttft.mean);
}

#[test]
fn adp_balance_batching_wait_gathers_larger_context_batches() {
    // TensorRT-LLM's ADP balance, second stage (`batching_wait_iters`): once every
    // attention rank has a new prompt, the prompts wait that many iterations more, so they
    // run in fewer iterations, each with more prompt tokens per rank, and wait longer for
    // their first token. With the wait at 0 the context wait alone runs them as soon as
    // every rank has one; TensorRT-LLM runs them on the iteration whose count reaches the
    // timeout, so a timeout of 1 holds nothing.
    let w = chat(Arrivals::Poisson(40.0), 2000, 3);
    let reqs = myriad_serve::sim::generate(&w);
    let run = |timeout: u32, batching: u32| {
        let mut r = role(deepseek_nvfp4_dep("b200", 8, 8, 300e-6), 1, 2048);
        r.chunked_prefill = false;
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            adp_balance_batching_wait_iters: batching,
            ..SchedulePolicy::default()
        };
        myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.0, &NO_SLO)
    };
    let wait = run(50, 0);
    let batched = run(50, 10);
    let (pw, pb) = (
        &wait.iteration_mix.with_prompts,
        &batched.iteration_mix.with_prompts,
    );
    eprintln!(
        "prompted iterations {} -> {}, prompt tokens per rank {:.0} -> {:.0}, TTFT {:.0} -> {:.0} ms",
        pw.iterations,
        pb.iterations,
        pw.mean(pw.prompt_tokens_per_rank),
        pb.mean(pb.prompt_tokens_per_rank),
        wait.ttft.mean * 1e3,
        batched.ttft.mean * 1e3
    );
    assert_eq!((wait.completed, batched.completed), (2000, 2000));
    assert!(pb.iterations < pw.iterations);
    assert!(pb.mean(pb.prompt_tokens_per_rank) > pw.mean(pw.prompt_tokens_per_rank));
    assert!(batched.ttft.mean > wait.ttft.mean);
    let off = run(0, 0);
    let one = run(1, 0);
    assert_eq!(off.ttft.mean, one.ttft.mean);
    assert_eq!(off.tpot.mean, one.tpot.mean);
}

#[test]
fn a_request_larger_than_one_attention_rank_cache_is_rejected() {
    // Under attention data parallelism each sequence's KV cache lives on one rank, so the
    // largest request an instance can run is one rank's share of its cache, not the sum.
    // DeepSeek-V3 DEP8 on H100: cap the cache at 8 × 10,000 tokens; a 15,000-token request
    // fits the sum (80,000) but no rank (10,000) and is rejected, a 9,000-token one runs.
    let mut r = role(deepseek_dep(8), 1, 64);
    r.kv_tokens = 80_000.0;
    let run = |r: &RoleSpec, input: u32| {
        let w = Workload {
            arrivals: Arrivals::Poisson(1.0),
            input: LengthDist::Fixed(input),
            output: LengthDist::Fixed(100),
            requests: 20,
            prefix_hit: 0.0,
            seed: 1,
        };
        simulate(&Deployment::Aggregated(r.clone()), &w, &NO_SLO)
    };
    let big = run(&r, 15_000);
    assert_eq!((big.completed, big.rejected), (0, 20));
    let fits = run(&r, 8_900);
    assert_eq!((fits.completed, fits.rejected), (20, 0));
}

#[test]
fn adp_padding_costs_the_experts_as_if_every_rank_prefilled() {
    // DeepSeek-V3 with NVFP4 experts on 8 B200, attention DP 8: 256 decode sequences per
    // rank, and one 1,024-token prompt on one rank or on every rank.
    let fp8 = Precision::Fp8;
    let dep = || deepseek_nvfp4_dep("b200", 8, 8, 0.0);
    let batch = |prompts: f64| Batch {
        decode_seqs: 8.0 * 256.0,
        decode_ctx: 8.0 * 256.0 * 2000.0,
        decode_ctx_sq: 0.0,
        decode_ctx_seqs: 0.0,
        prefill_tokens: prompts * 1024.0,
        prefill_pairs: prompts * 1024.0 * 1025.0 / 2.0,
        prefill_done: prompts,
        prefill_seqs: prompts,
        ..Batch::default()
    };
    let moe = |m: &InstanceModel, b: &Batch| {
        let s = m.moe_stages(b);
        (s.mlp, s.dispatch, s.combine)
    };
    let trt = dep().with_framework(&myriad_serve::framework::TRTLLM);
    assert!(trt.moe_dp_padding);
    // Padded: the experts and the all-to-alls see 8 x (256 + 1024) tokens either way.
    assert_eq!(moe(&trt, &batch(1.0)), moe(&trt, &batch(8.0)));
    // Unpadded (SGLang): one prompt moves fewer tokens through the experts than eight.
    let sgl = dep().with_framework(&myriad_serve::framework::SGLANG);
    assert!(!sgl.moe_dp_padding);
    let (one, eight) = (moe(&sgl, &batch(1.0)), moe(&sgl, &batch(8.0)));
    assert!(one.0 < eight.0 && one.2 < eight.2, "{one:?} {eight:?}");
    // Decode-only batches are balanced: padding changes nothing.
    let mut unpadded = trt.clone();
    unpadded.moe_dp_padding = false;
    let t = |m: &InstanceModel, p: f64| m.iteration(&batch(p)).total_s;
    assert_eq!(t(&trt, 0.0), t(&unpadded, 0.0));
    assert!(t(&trt, 1.0) > t(&unpadded, 1.0));
    // Only NVFP4 experts pad (CUTLASS fp8 experts take each rank's own tokens).
    let fp8_experts = dep_instance("b200", 8, "deepseek-v3", 8, (fp8, fp8, fp8), 0.0, false)
        .with_framework(&myriad_serve::framework::TRTLLM);
    assert!(!fp8_experts.moe_dp_padding);
}

#[test]
fn tensorrt_llm_gathers_moe_tokens_unless_ep_is_wide_on_multi_node_nvlink() {
    use myriad_serve::framework::{SGLANG, TRTLLM};
    let dep = |acc: &str, count: u32, ep: u32| deepseek_nvfp4_dep(acc, count, ep, 0.0);
    // 8 B200 of one HGX node, EP 8 = top-k: all-gather / reduce-scatter.
    let trt = dep("b200", 8, 8).with_framework(&TRTLLM);
    assert!(trt.moe_gather_comm);
    // SGLang's DeepEP path keeps the all-to-all.
    assert!(!dep("b200", 8, 8).with_framework(&SGLANG).moe_gather_comm);
    // On an NVL72 domain an EP group wider than top-k runs the MNNVL all-to-all; EP 8 does
    // not; off an NVL72 domain even EP 16 gathers (no MNNVL, DeepEP only on request).
    let nvl = |ep: u32| {
        dep("gb200", 72, ep)
            .with_multi_node_nvlink(true)
            .with_framework(&TRTLLM)
            .moe_gather_comm
    };
    assert!(!nvl(16));
    assert!(nvl(8));
    assert!(
        dep("h100-sxm", 16, 16)
            .with_framework(&TRTLLM)
            .moe_gather_comm
    );
    // Gathered traffic is balanced whatever the routing: the expert-load imbalance that
    // stretches the all-to-all (the busiest rank receives more) leaves it unchanged.
    let b = Batch {
        decode_seqs: 8.0 * 256.0,
        decode_ctx: 8.0 * 256.0 * 2000.0,
        ..Default::default()
    };
    let comm = |m: &InstanceModel| {
        let s = m.moe_stages(&b);
        (s.dispatch, s.combine)
    };
    let mut skewed = trt.clone();
    skewed.expert_load_cv = 2.0 * trt.expert_load_cv + 0.5;
    assert_eq!(comm(&trt), comm(&skewed));
    let mut a2a = trt.clone();
    a2a.moe_gather_comm = false;
    let mut a2a_skewed = a2a.clone();
    a2a_skewed.expert_load_cv = skewed.expert_load_cv;
    assert!(comm(&a2a_skewed).0 > comm(&a2a).0);
    // The reduce-scatter carries bf16 outputs, the all-gather NVFP4 inputs (0.5625 bytes
    // an element): on the same 8 ranks the combine moves 3.6x the dispatch's bytes.
    let (d, c) = comm(&trt);
    assert!(c > 2.0 * d && c < 5.0 * d, "dispatch {d} combine {c}");
}

/// Llama 3 70B on H100s, fp8 weights and KV cache, tp `tp` over `pp` pipeline stages.
fn llama3_70b_pp(tp: u32, pp: u32, overhead_s: f64) -> InstanceModel {
    let fp8 = Precision::Fp8;
    try_model(
        ("h100-sxm", 8),
        "llama3-70b",
        Parallel::new(tp, 1, 1).with_pp(pp),
        (fp8, fp8, fp8),
        overhead_s,
        false,
        None,
    )
    .unwrap()
}

fn decode(seqs: f64, ctx: f64) -> Batch {
    Batch {
        decode_seqs: seqs,
        decode_ctx: seqs * ctx,
        ..Default::default()
    }
}

#[test]
fn pipeline_stages_cut_weights_and_kv_by_layer() {
    let one = llama3_70b_pp(2, 1, 0.0);
    let two = llama3_70b_pp(2, 2, 0.0);
    assert_eq!(two.par.gpus(), 4);
    assert_eq!(two.stage_layers(), 40);
    // 80 layers over 2 stages: each accelerator holds half the layers' weights and one of
    // the two (untied) embedding matrices instead of both.
    let m = &one.model;
    let embed = m.vocab as f64 * m.hidden as f64 * 2.0 / 2.0;
    let layers_one = one.weight_bytes_per_gpu() - 2.0 * embed;
    let layers_two = two.weight_bytes_per_gpu() - embed;
    assert!((layers_two / layers_one - 0.5).abs() < 1e-9);
    // A token's KV on one accelerator: half the layers.
    assert!(
        (two.kv_bytes_per_token_per_gpu() / one.kv_bytes_per_token_per_gpu() - 0.5).abs() < 1e-12
    );
    // Moved between instances, a token's KV is the whole model's either way.
    assert_eq!(two.kv_bytes_per_token(), one.kv_bytes_per_token());
    // Freed weight memory on top of halved KV per token: more than twice the tokens.
    assert!(two.kv_capacity_tokens(0.9) > 2.0 * one.kv_capacity_tokens(0.9));
}

#[test]
fn a_pipeline_cycle_costs_one_micro_batch_pass_plus_the_busiest_stage_surplus() {
    let ov = 300e-6;
    let one = llama3_70b_pp(2, 1, ov);
    for pp in [2u32, 4] {
        let m = llama3_70b_pp(2, pp, ov);
        let q = pp as f64;
        for (seqs, ctx) in [(64.0, 2000.0), (512.0, 4000.0)] {
            // Every sequence advances one token per cycle: pp micro-batches of seqs / pp.
            let cycle = m.iteration(&decode(seqs, ctx));
            let pass = one.iteration(&decode(seqs / q, ctx));
            // The layers of one micro-batch cost one tp-2 pass over the whole model; the
            // busiest stage adds the LM head pp - 1 more times; each of the pp micro-batch
            // steps pays the host overhead.
            let layers = pass.total_s - pass.overhead_s;
            assert!((cycle.overhead_s - q * ov).abs() < 1e-12);
            assert!(
                cycle.total_s >= layers + q * ov - 1e-12,
                "pp {pp} seqs {seqs}"
            );
            // The LM head is a small share of a 70B pass: the surplus stays under 10%.
            assert!(
                cycle.total_s <= 1.1 * layers + q * ov,
                "pp {pp} seqs {seqs}: {} vs {}",
                cycle.total_s,
                layers
            );
            let parts = cycle.gemm_s + cycle.attention_s + cycle.memory_s + cycle.comm_s;
            assert!((parts + cycle.overhead_s - cycle.total_s).abs() < 1e-12);
        }
    }
    // Memory-bound decode: each stage streams its weights once per micro-batch, so a cycle
    // of pp 2 over 2 x 2 accelerators is slower than one tp-4 iteration of the same batch.
    let tp4 = llama3_70b_pp(4, 1, ov);
    let pp2 = llama3_70b_pp(2, 2, ov);
    assert!(
        pp2.iteration(&decode(32.0, 1000.0)).total_s > tp4.iteration(&decode(32.0, 1000.0)).total_s
    );
}

#[test]
fn pipeline_parallelism_is_checked_against_the_model() {
    let bf16 = Precision::Bf16;
    let err = try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 1, 1).with_pp(64),
        (bf16, bf16, bf16),
        0.0,
        false,
        None,
    )
    .unwrap_err();
    assert!(
        err.contains("pp 64 is more than the model's 32 layers"),
        "{err}"
    );
}

/// With speculative decoding a sequence ends after a whole number of steps of `tps`
/// tokens, so its context can pass `input + output`; what leaves the running context sum
/// must be what the steps added, or every completion leaves a residue and the attention of
/// the sequences still running is charged for contexts nobody holds.
#[test]
fn speculative_completions_leave_no_context_behind() {
    let spec = myriad_serve::Speculative {
        draft_tokens: 3,
        acceptance: 0.77,
    };
    let fp8 = Precision::Fp8;
    let m = try_model(
        ("h100-sxm", 8),
        "llama3-70b",
        Parallel::new(2, 1, 1),
        (fp8, fp8, fp8),
        300e-6,
        false,
        Some(spec),
    )
    .unwrap();
    let tps = m.tokens_per_step();
    let d = Deployment::Aggregated(role(m, 1, 256));
    let w = Workload {
        arrivals: Arrivals::Poisson(4.0),
        input: LengthDist::Fixed(1000),
        output: LengthDist::Fixed(300),
        requests: 20_000,
        prefix_hit: 0.0,
        seed: 3,
    };
    let r = simulate(&d, &w, &NO_SLO);
    assert_eq!(r.completed, 20_000);
    let mix = r.iteration_mix;
    let (dec, pre) = (mix.decode_only, mix.with_prompts);
    let mean_ctx =
        (dec.decode_context + pre.decode_context) / (dec.iterations + pre.iterations) as f64;
    // No running sequence holds more than its prompt, its output and one step's overshoot.
    assert!(
        mean_ctx <= 1000.0 + 300.0 + tps,
        "mean decode context {mean_ctx:.0}"
    );
    // And the running sequences are spread over their lives: about the midpoint.
    assert!(
        mean_ctx > 1000.0 + 0.3 * 300.0,
        "mean decode context {mean_ctx:.0}"
    );
}

/// Llama 3.1 405B in bf16 (810 GB of weights) does not fit one 8-GPU H100 node, however it
/// is cut by tensor parallelism within the node: on two nodes the search has to find pipeline
/// stages, and every aggregated candidate it keeps spans at least 16 accelerators.
#[test]
fn search_reaches_for_pipeline_stages_when_a_node_cannot_hold_the_model() {
    let text = "format: myriad/1
cluster: {accelerator: h100-sxm, count: 16}
model: {preset: llama3-405b}
serving:
  weights: bf16
  kv_cache: bf16
  instance: {instances: 1, tp: 8, pp: 2}
  input: {mean: 1000}
  output: {mean: 500}
  slo: {ttft_ms: 5000, tpot_ms: 200}
  requests: 300
";
    let setup = setup_of("405b.yaml", text);
    let Deployment::Aggregated(r) = &setup.deployment else {
        panic!("aggregated expected")
    };
    assert_eq!(r.model.par.gpus(), 16);
    let found =
        myriad_serve::search::search(&setup.deployment, &setup.workload, &setup.slo, 8, 16, 0.9);
    assert!(!found.is_empty());
    let best = &found[0];
    assert!(best.description.contains("PP"), "{}", best.description);
    assert!(best.goodput_tokens_per_s_per_accelerator > 0.0);
    for c in found
        .iter()
        .filter(|c| c.description.starts_with("aggregated"))
    {
        assert!(
            c.accelerators >= 16,
            "{} on {}",
            c.description,
            c.accelerators
        );
    }
}

/// A scenario whose lengths come from a dataset is searched with those lengths: the same
/// search over the dataset's samples and over fixed lengths at the dataset's means lands
/// within a factor of two, every kept candidate's goodput is its rate × about the samples'
/// mean output per accelerator, and its TPOT is a real step. (The search once drew the
/// scenario's unset `input`/`output` instead: one-token requests, zero goodput.)
#[test]
fn search_runs_a_dataset_scenario_on_its_samples() {
    let text = |lengths: &str| {
        format!(
            "format: myriad/1
cluster: {{accelerator: h100-sxm, count: 8}}
model: {{preset: llama3-70b}}
serving:
  weights: fp8
  kv_cache: fp8
  instance: {{instances: 1, tp: 4}}
{lengths}  slo: {{ttft_ms: 2000, tpot_ms: 100}}
  requests: 400
"
        )
    };
    let run = |lengths: &str| {
        let setup = setup_of("d.yaml", &text(lengths));
        myriad_serve::search::search(&setup.deployment, &setup.workload, &setup.slo, 8, 8, 0.9)
    };
    let set = myriad_serve::datasets::by_key("mlperf-llama2-70b").unwrap();
    let (mi, mo) = (set.mean_input(), set.mean_output());
    let samples = run("  dataset: mlperf-llama2-70b\n");
    let fixed = run(&format!(
        "  input: {{mean: {mi:.0}}}\n  output: {{mean: {mo:.0}}}\n"
    ));
    let (a, b) = (&samples[0], &fixed[0]);
    assert!(a.max_rate > 0.0 && a.tpot_p90_s.unwrap() > 1e-3, "{a:?}");
    let ratio = a.goodput_tokens_per_s_per_accelerator / b.goodput_tokens_per_s_per_accelerator;
    assert!((0.5..2.0).contains(&ratio), "{a:?} vs {b:?}");
    for c in samples.iter().filter(|c| c.max_rate > 0.0) {
        let per_req = c.goodput_tokens_per_s_per_accelerator * c.accelerators as f64 / c.max_rate;
        // Rate × the SLO-met requests' tokens per request (at least 90% met): about the
        // samples' mean, not 1 token.
        assert!(
            per_req > 0.85 * mo && per_req < 1.15 * mo,
            "{}: {per_req} tokens a request against the samples' {mo}",
            c.description
        );
    }
}

/// The model's sliding windows reach `myriad serve` through the framework: vLLM attends
/// over and caches only the window, TensorRT-LLM and SGLang attend over it but keep the
/// whole sequence's cache (`framework.rs`).
#[test]
fn a_preset_with_sliding_windows_serves_them_per_framework() {
    let decode_of = |fw: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: gpt-oss-120b}}\nserving:\n  framework: {fw}\n  weights: bf16\n  experts: fp4\n  kv_cache: bf16\n  instance: {{tp: 1}}\n  input: {{mean: 1000}}\n  output: {{mean: 1000}}\n  requests: 10\n"
        );
        aggregated_model(&text)
    };
    // gpt-oss: 18 of 36 layers windowed at 128 tokens.
    let v = decode_of("vllm");
    assert_eq!(v.window, Some((128.0, 0.5)));
    assert_eq!(v.kv_need(1000.0), 1000.0 * 0.5 + 128.0 * 0.5);
    let t = decode_of("tensorrt-llm");
    assert_eq!(t.window, Some((128.0, 0.5)));
    assert_eq!(t.kv_need(1000.0), 1000.0);
    let g = decode_of("sglang");
    assert_eq!(g.window, Some((128.0, 0.5)));
    assert_eq!(g.kv_need(1000.0), 1000.0);
}

/// Llama 4 Maverick's chunked attention (the preset: chunks of 8,192, every fourth layer
/// global) reaches serving: past the first chunk a decoding query of a local layer reads
/// half a chunk on average, so a long context's decode iteration costs less than with
/// every layer global; inside the first chunk nothing changes.
#[test]
fn chunked_attention_bounds_long_context_decode_reads() {
    let model_of = |extra: &str| {
        let text = format!(
            "format: myriad/1\ncluster: {{accelerator: h200, count: 8}}\nmodel: {{preset: llama4-maverick{extra}}}\nserving:\n  framework: tensorrt-llm\n  weights: fp8\n  experts: fp8\n  kv_cache: fp8\n  instance: {{tp: 1, attention_dp: 8, ep: 8}}\n  input: {{mean: 1000}}\n  output: {{mean: 1000}}\n  requests: 10\n"
        );
        aggregated_model(&text)
    };
    let chunked = model_of("");
    assert!(chunked.window_chunked);
    assert_eq!(chunked.window, Some((8192.0, 0.75)));
    let global = model_of(", sliding_window: {window: 1000000}");
    let step = |m: &myriad_serve::InstanceModel, ctx: f64| {
        let n = 8.0 * 64.0;
        let b = Batch {
            decode_seqs: n,
            decode_ctx: n * ctx,
            ..Default::default()
        };
        m.iteration(&b).total_s
    };
    // Short contexts: the same iteration.
    let (a, b) = (step(&chunked, 4000.0), step(&global, 4000.0));
    assert!((a / b - 1.0).abs() < 1e-12, "{a} {b}");
    // 32K contexts: cheaper, but not below a quarter of the layers' full reads.
    let (a, b) = (step(&chunked, 32000.0), step(&global, 32000.0));
    assert!(a < 0.8 * b && a > 0.25 * b, "{a} {b}");
}

#[test]
fn nvfp4_experts_pay_their_activation_quantisation_kernels() {
    // DeepSeek-V3 DEP8 on B200, 64 decode sequences a rank. NVFP4 experts run on FP4 tensor
    // cores, whose inputs a kernel of its own quantises before the up and the down
    // projection: every routed copy's bf16 input (7,168, then 2,048 wide) is read and
    // written as NVFP4 (0.5625 bytes), at the small-kernel bandwidth, plus two fixed
    // kernel costs, on each of the 58 MoE layers. FP8 experts pay none of it, and nothing
    // else memory-bound differs between the two.
    let fp8 = Precision::Fp8;
    let fp4 = deepseek_nvfp4_dep("b200", 8, 8, 0.0);
    let f8 = dep_instance("b200", 8, "deepseek-v3", 8, (fp8, fp8, fp8), 0.0, false);
    let b = Batch {
        decode_seqs: 512.0,
        decode_ctx: 512.0 * 2000.0,
        decode_ctx_sq: 512.0 * 2000.0 * 2000.0,
        ..Default::default()
    };
    let acc = myriad_catalog::catalog().accelerator("b200").unwrap();
    let small = acc.hbm_tbps * 1e12 * acc.efficiency.small_kernel_hbm();
    let ov = acc.efficiency.gemm_overhead_us * 1e-6;
    let hot = 512.0 * 8.0 / 8.0 * fp4.busiest_rank_factor(512.0);
    let per_layer = hot * (7168.0 + 2048.0) * (2.0 + 0.5625) / small + 2.0 * ov;
    let d = fp4.iteration(&b).memory_s - f8.iteration(&b).memory_s;
    assert!(
        (d / (58.0 * per_layer) - 1.0).abs() < 1e-9,
        "{d} vs {}",
        58.0 * per_layer
    );
}

/// The ranks of an instance synchronise within every layer, so compute-bound work (prefill
/// GEMMs and attention) runs at the pace of the slowest of its chips (`speed_sigma`) and
/// waits for the one whose clock the power controller holds lowest: at TP 8 on H100
/// (1 + 0.012 · 1.43)(1 + 0.030 · 1.43) = 1.061 (`speed_jitter` measured on the lent H100
/// with calibration/jitter_bench.py). A decode GEMM streams its weights below the power cap
/// at a steady 1,980 MHz (measured: 1.2% call-to-call, the clock never moved), so
/// memory-bound decode pays nothing; nor does a single GPU.
#[test]
fn prefill_compute_waits_for_the_slowest_clock_of_the_instance_and_decode_does_not() {
    let m8 = instance(
        "h100-sxm",
        "llama3-70b",
        8,
        Precision::Fp8,
        Precision::Fp8,
        0.0,
    );
    let pace = m8.compute_pace;
    let acc = myriad_catalog::catalog().accelerator("h100-sxm").unwrap();
    let want =
        myriad_train::step::sync_jitter_pace(acc, 8) * myriad_train::step::straggler_pace(acc, 8);
    assert!((pace - want).abs() < 1e-12);
    assert!(pace > 1.055 && pace < 1.065, "{pace}");
    let mut steady = m8.clone();
    steady.compute_pace = 1.0;
    let prefill = one_prompt(8192.0);
    let (a, b) = (m8.iteration(&prefill), steady.iteration(&prefill));
    assert!(
        (a.gemm_s / b.gemm_s - pace).abs() < 0.005,
        "{} {}",
        a.gemm_s,
        b.gemm_s
    );
    assert!(a.attention_s > b.attention_s);
    assert_eq!(a.comm_s, b.comm_s);
    let decode = Batch {
        decode_seqs: 8.0,
        decode_ctx: 8.0 * 2048.0,
        ..Batch::default()
    };
    assert_eq!(
        m8.iteration(&decode).total_s,
        steady.iteration(&decode).total_s
    );
    assert_eq!(llama3_8b_h100_bf16().compute_pace, 1.0);
}

/// NVIDIA's NVFP4 DeepSeek-R1 checkpoints keep the attention projections in bf16 (v2 adds
/// `o_proj` to the NVFP4 layers). At a large decode batch the projections are
/// compute-bound: bf16 doubles their time and leaves the experts' and the exchange's
/// alone; the weights grow by one byte per attention parameter, and v2's output
/// projection saves 2 − 0.5625 bytes of each of its 7168·128·128 parameters.
#[test]
fn attention_precision_prices_only_the_attention_projections() {
    let cat = myriad_catalog::catalog();
    let model = &cat.model("deepseek-v3").unwrap().model;
    let fp8 = Precision::Fp8;
    let with = |attention: Precision, attention_out: Precision| {
        let mut p = Precisions::new(fp8, Precision::Fp4, fp8);
        p.attention = attention;
        p.attention_out = attention_out;
        InstanceModel::new(
            cat.accelerator("b200").unwrap(),
            &levels("b200", 8),
            model,
            Parallel::new(1, 8, 8),
            p,
            0.0,
            false,
            None,
        )
        .unwrap()
    };
    let (f8, b16, v2) = (
        with(fp8, fp8),
        with(Precision::Bf16, Precision::Bf16),
        with(Precision::Bf16, Precision::Fp4),
    );
    let seqs = 8.0 * 896.0;
    let b = Batch {
        decode_seqs: seqs,
        decode_ctx: seqs * 2048.0,
        ..Default::default()
    };
    let (s8, s16) = (f8.moe_stages(&b), b16.moe_stages(&b));
    // The stage also holds norms, rotary and the KV append, which precision leaves
    // alone: against an NVFP4 run of the projections, bf16 adds twice what fp8 saves.
    let s4 = with(Precision::Fp4, Precision::Fp4).moe_stages(&b);
    let ratio = (s16.pre - s8.pre) / (s8.pre - s4.pre);
    assert!(
        (1.8..=2.2).contains(&ratio),
        "bf16 over fp8 against fp8 over fp4: {ratio}"
    );
    assert!(s16.core > s8.core, "the output projection is bf16 too");
    for (a, c) in [
        (s8.mlp, s16.mlp),
        (s8.shared, s16.shared),
        (s8.dispatch, s16.dispatch),
        (s8.combine, s16.combine),
    ] {
        assert_eq!(a, c);
    }
    // The v2 checkpoint's NVFP4 output projection: the core gets faster, the rest not.
    let sv2 = v2.moe_stages(&b);
    assert_eq!(sv2.pre, s16.pre);
    assert!(sv2.core < s16.core);
    let layers = model.layers as f64;
    let grow = b16.weight_bytes_per_gpu() - f8.weight_bytes_per_gpu();
    let want = layers * model.attention_params();
    assert!((grow / want - 1.0).abs() < 1e-9, "{grow} vs {want}");
    let o_proj = 7168.0 * 128.0 * 128.0;
    let save = b16.weight_bytes_per_gpu() - v2.weight_bytes_per_gpu();
    let want = layers * o_proj * (2.0 - 0.5625);
    assert!((save / want - 1.0).abs() < 1e-9, "{save} vs {want}");
}

/// Every TP rank holds MLA's down projections and latent norms whole (SGLang's
/// `fused_qkv_a_proj_with_mqa` is a `ReplicatedLinear`), and the MoE router; the rest of an
/// instance's weights split over TP (experts over expert TP, EP 1 here). So a rank's
/// weights are `S/tp + R` and `R = 2·W(TP 2) − W(TP 1)` is, for DeepSeek-V3 in bf16,
/// 61 layers × (7,168 × 1,536 + 7,168 × 576 + 2,048) × 2 bytes + 58 MoE layers × 7,168 ×
/// 256 × 2 bytes.
#[test]
fn mla_down_projections_are_whole_on_every_tp_rank_in_serving() {
    let cat = myriad_catalog::catalog();
    let model = &cat.model("deepseek-v3").unwrap().model;
    let bf16 = Precision::Bf16;
    let at = |tp: u32| {
        InstanceModel::new(
            cat.accelerator("h200").unwrap(),
            &levels("h200", 8),
            model,
            Parallel::new(tp, 1, 1),
            Precisions::new(bf16, bf16, bf16),
            0.0,
            false,
            None,
        )
        .unwrap()
    };
    let r = 2.0 * at(2).weight_bytes_per_gpu() - at(1).weight_bytes_per_gpu();
    let want =
        61.0 * (7168.0 * 1536.0 + 7168.0 * 576.0 + 2048.0) * 2.0 + 58.0 * 7168.0 * 256.0 * 2.0;
    assert!((r / want - 1.0).abs() < 1e-9, "{r} vs {want}");
}

/// A DeepSeek row that names NVIDIA's NVFP4 checkpoint gets its layout (bf16 attention,
/// NVFP4 MLPs; v2 also an NVFP4 `o_proj`), and the bf16 projections cost throughput
/// against a checkpoint the row does not name (fp8 attention, as DeepSeek released it).
#[test]
fn nvidia_deepseek_fp4_checkpoints_keep_bf16_attention() {
    let row = |ckpt: &str| {
        serde_json::json!({
            "id": "t",
            "hardware": {"accelerator": "b200", "count": 8},
            "model": {"name": "DeepSeek-R1", "layers": 61, "hidden": 7168, "ffn_hidden": 18432,
                      "heads": 128, "vocab": 129280, "gated_mlp": true,
                      "moe": {"experts": 256, "top_k": 8, "expert_ffn_hidden": 2048,
                              "shared_experts": 1, "shared_expert_ffn_hidden": 2048,
                              "dense_layers": 3},
                      "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                              "qk_rope_head_dim": 64, "v_head_dim": 128}},
            "serving": {"framework": "TensorRT-LLM trtllm-bench", "checkpoint": ckpt,
                        "weight_precision": "nvfp4 (MoE)", "kv_cache_precision": "fp8",
                        "tp": 8, "ep": 8, "attention_dp": 8, "max_batch": 256,
                        "isl": 1024, "osl": 1024, "scenario": "offline", "num_requests": 4096},
            "measured": {"output_tokens_per_s_per_gpu": 1000.0}
        })
    };
    let cat = myriad_catalog::catalog();
    let mut w = Vec::new();
    let mut run = |ckpt: &str| {
        let p = myriad_serve::validate::predict_row(cat, &row(ckpt), &mut w);
        let layout = p
            .notes
            .iter()
            .find(|n| n.starts_with("weights: NVFP4 MLPs"))
            .cloned();
        (layout, p.predicted.unwrap())
    };
    let (v1, slow) = run("nvidia/DeepSeek-R1-0528-FP4");
    assert!(v1.unwrap().contains("bf16 o_proj"));
    let (v2, _) = run("nvidia/DeepSeek-R1-0528-NVFP4-v2");
    assert!(v2.unwrap().contains("fp4 o_proj"));
    let (other, fast) = run("someone/deepseek-fp4");
    assert!(other.is_none());
    assert!(slow < fast, "{slow} vs {fast}");
}

/// A row that says it has "the same deployment shape as" another row of its source, and
/// states no groups of its own, runs that row's prefill and decode groups (the LMSYS GB200
/// part II rows: the BF16-attention row shares the FP8-attention row's 48 decode GPUs); a
/// row without the phrase keeps the default layout.
#[test]
fn a_row_takes_the_deployment_shape_it_refers_to() {
    let model = serde_json::json!({"name": "DeepSeek-R1", "layers": 61, "hidden": 7168,
        "ffn_hidden": 18432, "heads": 128, "vocab": 129280, "gated_mlp": true,
        "moe": {"experts": 256, "top_k": 8, "expert_ffn_hidden": 2048, "shared_experts": 1,
                "shared_expert_ffn_hidden": 2048, "dense_layers": 3},
        "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                "qk_rope_head_dim": 64, "v_head_dim": 128}});
    let row = |id: &str, notes: &str, groups: bool| {
        let mut serving = serde_json::json!({"framework": "SGLang", "weight_precision": "FP8",
            "isl": 2000, "scenario": "disaggregated, large-scale EP",
            "aggregation": "disaggregated (prefill/decode)"});
        if groups {
            serving["prefill"] = serde_json::json!({"gpus": 8});
            serving["decode"] = serde_json::json!({"gpus": 48});
        }
        serde_json::json!({"id": id, "source": {"url": "https://example.org/blog"},
            "hardware": {"accelerator": "gb200", "per_node": 4, "notes": notes},
            "model": model.clone(), "serving": serving,
            "measured": {"decode_output_tokens_per_s_per_gpu": 1000.0}})
    };
    let doc = serde_json::json!({"format": "myriad-measurements/1", "rows": [
        row("a", "decode group = 48 GPUs", true),
        row("b", "same deployment shape as the a row", false),
        row("c", "GB200 NVL72", false),
    ]});
    let r = myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap();
    let by = |id: &str| r.cases.iter().find(|c| c.id == id).unwrap();
    let (a, b, c) = (by("a"), by("b"), by("c"));
    assert!(
        b.notes.iter().any(|n| n.contains("groups: those of a")),
        "{:?}",
        b.notes
    );
    assert_eq!(a.predicted, b.predicted);
    assert!(c.notes.iter().all(|n| !n.contains("groups: those of")));
    assert_ne!(a.predicted, c.predicted, "eight decode GPUs are not 48");
}

/// Why `CHECKPOINT_KV_FP8` gives the Llama 3.3 70B FP8, Llama 4 Maverick NVFP4 and Qwen3
/// 30B-A3B NVFP4 checkpoints an FP8 cache: with a 16-bit one their published figures
/// (TensorRT-LLM perf overview, output tokens/s per GPU: 2,009 on H200 TP2 and 5,174 on
/// B200 DEP4 at 1024/8192, 4,494 on one B200 at 1024/32768) are out of reach. trtllm-bench
/// admits a request only with cache room for its whole prompt and output
/// (GUARANTEED_NO_EVICT), so even all free memory (fraction 1) holds at most
/// `C / (isl + osl)` requests; their live contexts average `isl + osl/2`, and every step
/// reads that cache and the weights it needs (`InstanceModel::decode_roofline`: the share
/// of experts the batch hits; here all weights at the smallest precision), at the
/// accelerator's full peak bandwidth, with no prefill. With an fp8 cache the same bound
/// clears all three figures.
#[test]
fn a_16_bit_cache_cannot_reach_three_published_figures() {
    let cat = myriad_catalog::catalog();
    let bound = |acc: &str, preset: &str, par: Parallel, w: Precision, kv: Precision, osl: f64| {
        let m = InstanceModel::new(
            cat.accelerator(acc).unwrap(),
            &levels(acc, 8),
            &cat.model(preset).unwrap().model,
            par,
            Precisions::new(w, w, kv),
            0.0,
            false,
            None,
        )
        .unwrap();
        m.decode_roofline(m.kv_capacity_tokens(1.0), f64::INFINITY, 1024.0, osl)
            .unwrap()
    };
    let (fp8, fp4, b16) = (Precision::Fp8, Precision::Fp4, Precision::Bf16);
    let published = [
        (
            "h200",
            "llama3-70b",
            Parallel::new(2, 1, 1),
            fp8,
            8192.0,
            2009.0,
        ),
        (
            "b200",
            "llama4-maverick",
            Parallel::new(1, 4, 4),
            fp4,
            8192.0,
            5174.0,
        ),
        (
            "b200",
            "qwen3-30b-a3b",
            Parallel::new(1, 1, 1),
            fp4,
            32768.0,
            4494.0,
        ),
    ];
    for (acc, preset, par, w, osl, measured) in published {
        let b16_bound = bound(acc, preset, par, w, b16, osl);
        let fp8_bound = bound(acc, preset, par, w, fp8, osl);
        assert!(
            b16_bound < 0.95 * measured,
            "{preset}: 16-bit bound {b16_bound:.0} vs {measured}"
        );
        assert!(fp8_bound > measured, "{preset}: fp8 bound {fp8_bound:.0}");
    }
}

/// `serve --validate` notes a measurement its deployment's decode roofline cannot reach
/// (a misread setting), and only then.
#[test]
fn a_measurement_beyond_the_roofline_is_noted() {
    let row = |measured: f64| {
        serde_json::json!({
            "id": "t",
            "hardware": {"accelerator": "h200", "count": 2},
            "model": {"name": "Llama 3.3 70B", "layers": 80, "hidden": 8192, "ffn_hidden": 28672,
                      "heads": 64, "kv_heads": 8, "head_dim": 128, "vocab": 128256},
            "serving": {"framework": "TensorRT-LLM trtllm-bench", "weight_precision": "fp8",
                        "kv_cache_precision": "bf16", "tp": 2, "isl": 1024, "osl": 8192,
                        "scenario": "offline", "num_requests": 300},
            "measured": {"output_tokens_per_s_per_gpu": measured}
        })
    };
    let cat = myriad_catalog::catalog();
    let mut w = Vec::new();
    let noted = |p: myriad_serve::validate::CaseResult| {
        p.notes.iter().any(|n| n.starts_with("out of reach"))
    };
    assert!(noted(myriad_serve::validate::predict_row(
        cat,
        &row(2009.0),
        &mut w
    )));
    assert!(!noted(myriad_serve::validate::predict_row(
        cat,
        &row(900.0),
        &mut w
    )));
}

/// Chunked attention (Llama 4: a layer's query sees only its own chunk) reads, per
/// sequence, the part of its chunk its context has reached: 1,024 tokens generated after
/// 8,192-token prompts read 512 keys on average in the chunked layers, not half a chunk,
/// while the other layers read all 8,704. Half the layers chunked: the KV read is
/// (8,704 + 512) / 2 / 8,704 = 0.529 of full attention's. And the rows a CUDA graph pads
/// the batch with read no cache, windowed or not.
#[test]
fn chunked_layers_read_their_chunk_and_padding_reads_nothing() {
    let full = gpt_oss_instance(None);
    let mut chunked = gpt_oss_instance(None).with_sliding_window(8192, 12, false);
    chunked.window_chunked = true;
    let (n, mean, sd) = (600.0, 8704.0, 1024.0 / 12f64.sqrt());
    let b = Batch {
        decode_seqs: n,
        decode_ctx: n * mean,
        decode_ctx_sq: n * (sd * sd + mean * mean),
        ..Batch::default()
    };
    let (f, c) = (full.iteration(&b), chunked.iteration(&b));
    let ratio = c.attention_s / f.attention_s;
    assert!((ratio - 0.529).abs() < 0.02, "{ratio}");
    for m in [&full, &chunked] {
        let padded = m.clone().with_graph_padding(vec![1, 256, 1024]);
        let (p, u) = (padded.iteration(&b), m.iteration(&b));
        assert!(p.gemm_s > u.gemm_s);
        assert!((p.attention_s - u.attention_s).abs() < 1e-12 * u.attention_s.max(1.0));
    }
}

/// A row whose measured throughput is zero or negative has nothing to compare against: it is
/// not predicted, with the reason, rather than scored at an error of ±inf (found by mutating
/// the public file's rows: `measured.output_tokens_per_s_per_gpu: 0` printed "+inf%").
#[test]
fn a_row_without_a_positive_measured_rate_is_not_scored() {
    let row = serde_json::json!({
        "id": "zero-rate",
        "hardware": {"accelerator": "h100-sxm", "count": 1},
        "model": {"name": "Llama 3.1 8B", "layers": 32, "hidden": 4096, "ffn_hidden": 14336,
                  "heads": 32, "kv_heads": 8, "head_dim": 128, "vocab": 128256,
                  "gated_mlp": true},
        "serving": {"framework": "vLLM", "tp": 1, "isl": 128, "osl": 128},
        "measured": {"output_tokens_per_s_per_gpu": 0.0}
    });
    let mut warnings = Vec::new();
    let r = myriad_serve::validate::predict_row(myriad_catalog::catalog(), &row, &mut warnings);
    assert!(r.error.is_none() && r.measured.is_none(), "{r:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("0 is not a positive rate")),
        "{:?}",
        r.notes
    );
}

/// A candidate that misses the SLOs at its offline rate is bisected down to a rate that
/// meets them. (The bisection once probed the offline rate again after every miss, eight
/// times, so such a candidate got no goodput at all: on this scenario TP2 with a batch of
/// 2048 meets the SLOs for 98% of requests at 5 requests/s and the search reported 0.)
#[test]
fn search_bisects_a_candidate_that_misses_the_slos_at_its_offline_rate() {
    let text = "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-70b}
serving:
  weights: fp8
  kv_cache: fp8
  instance: {instances: 1, tp: 2, max_batch: 2048, max_num_tokens: 8192}
  input: {dist: lognormal, mean: 1000, std: 800, min: 16, max: 8192}
  output: {dist: lognormal, mean: 300, std: 250, min: 4, max: 2048}
  prefix_cache_hit: 0.2
  slo: {ttft_ms: 300, tpot_ms: 40}
  requests: 1000
";
    let setup = setup_of("tight.yaml", text);
    // At the deployment's offline throughput as a Poisson rate, TTFT misses. (The search
    // below is over units of at most 2 accelerators, to keep it short.)
    let w = &setup.workload;
    let off = myriad_serve::simulate_requests(
        &setup.deployment,
        &w.requests_at(None, 1000),
        w.prefix_hit,
        &setup.slo,
    );
    let offline_rate = off.completed as f64 / off.duration_s;
    let at = |rate: f64| {
        myriad_serve::simulate_requests(
            &setup.deployment,
            &w.requests_at(Some(rate), 1000),
            w.prefix_hit,
            &setup.slo,
        )
    };
    assert!(at(offline_rate).slo_attainment < myriad_serve::search::ATTAINMENT);
    assert!(at(offline_rate / 2.0).slo_attainment >= myriad_serve::search::ATTAINMENT);
    let found =
        myriad_serve::search::search(&setup.deployment, &setup.workload, &setup.slo, 2, 2, 0.9);
    let c = found
        .iter()
        .find(|c| c.description == "aggregated 1×(TP2 DP1 EP1) mb2048")
        .expect("the scenario's own shape is a candidate");
    assert!(
        c.max_rate >= offline_rate / 2.0 && c.max_rate < offline_rate,
        "{c:?}, offline {offline_rate}"
    );
    assert!(at(c.max_rate).slo_attainment >= myriad_serve::search::ATTAINMENT);
    assert!(c.goodput_tokens_per_s_per_accelerator > 0.0 && c.ttft_p90_s.unwrap() <= 0.3);
}

/// A candidate that meets the SLOs at its offline rate is searched above it. The offline
/// rate of a short run (completions over first arrival to last completion) counts the
/// drain of its last long outputs, so it is no upper bound; the search stopped there. The
/// example's four TP2 Llama 3 70B instances complete 1,000 requests offline at 18.67/s
/// (1000 / 53.6 s; their steady output is 2,160 tokens/s per accelerator against 716 over
/// the whole run), yet at 30 requests/s every request meets TTFT 2 s and TPOT 100 ms (p99
/// 380 ms and 39.5 ms): the search reported 18.67, now at least 30.
#[test]
fn search_looks_above_an_offline_rate_that_meets_the_slos() {
    let setup = h100x8_llama3_70b_fp8(
        "  kv_cache: fp8
  instance: {instances: 4, tp: 2, max_batch: 256, max_num_tokens: 8192}
  requests: 1000
  input: {dist: lognormal, mean: 1000, std: 800, min: 16, max: 8192}
  output: {dist: lognormal, mean: 300, std: 250, min: 4, max: 2048}
  prefix_cache_hit: 0.2
  slo: {ttft_ms: 2000, tpot_ms: 100}
",
    );
    let w = &setup.workload;
    let off = myriad_serve::simulate_requests(
        &setup.deployment,
        &w.requests_at(None, 1000),
        w.prefix_hit,
        &setup.slo,
    );
    let offline_rate = off.completed as f64 / off.duration_s;
    assert!((offline_rate - 18.67).abs() < 0.01, "{offline_rate}");
    let at_30 = myriad_serve::simulate_requests(
        &setup.deployment,
        &w.requests_at(Some(30.0), 1000),
        w.prefix_hit,
        &setup.slo,
    );
    assert_eq!((at_30.slo_attainment, at_30.rejected), (1.0, 0));
    let c = myriad_serve::search::capacity(&setup.deployment, w, &setup.slo);
    assert!(c.feasible && c.max_rate >= 30.0, "{c:?}");
    // Within the SLOs at the rate found, and not far beyond what a long run holds (at 45
    // requests/s over 20,000 requests only 21% meet them).
    let at = myriad_serve::simulate_requests(
        &setup.deployment,
        &w.requests_at(Some(c.max_rate), 1000),
        w.prefix_hit,
        &setup.slo,
    );
    assert!(at.slo_attainment >= myriad_serve::search::ATTAINMENT);
    assert!(c.max_rate < 75.0, "{c:?}");
}

/// The search's best candidates hold their rates over the workload's whole run, not only
/// over the 1,000-request screening runs: a screening run lasts 1,000 / rate seconds, less
/// than a long request takes at load, so its batch never fills and rates a deployment
/// cannot sustain pass (four TP2 Llama 3 70B instances met the SLOs for 99.9% of 1,000
/// requests at 50 requests/s and for 10.9% of 20,000). Each of the top
/// `REFINED_TOP` is re-simulated at its `max_rate` over all 5,000 requests and must meet
/// the SLOs there.
#[test]
fn search_rates_hold_over_the_workloads_whole_run() {
    let setup = h100x8_llama3_70b_fp8(
        "  kv_cache: fp8
  instance: {instances: 4, tp: 2, max_batch: 256, max_num_tokens: 8192}
  requests: 5000
  input: {dist: lognormal, mean: 1000, std: 800, min: 16, max: 6144}
  output: {dist: lognormal, mean: 300, std: 250, min: 4, max: 2048}
  prefix_cache_hit: 0.2
  slo: {ttft_ms: 2000, tpot_ms: 100}
",
    );
    let w = &setup.workload;
    let found = myriad_serve::search::search(&setup.deployment, w, &setup.slo, 8, 8, 0.9);
    let top = myriad_serve::search::REFINED_TOP;
    for c in found.iter().take(top).filter(|c| c.feasible) {
        assert_eq!(c.requests, 5000, "{}", c.description);
        let d = c
            .deployment
            .as_ref()
            .expect("the search keeps its deployments");
        let r = myriad_serve::simulate_requests(
            d,
            &w.requests_at(Some(c.max_rate), 5000),
            w.prefix_hit,
            &setup.slo,
        );
        assert!(
            r.slo_attainment >= myriad_serve::search::ATTAINMENT,
            "{} at {:.2} req/s: {:.1}% within the SLOs over 5,000 requests",
            c.description,
            c.max_rate,
            r.slo_attainment * 100.0
        );
    }
    // The rest were screened over 1,000.
    assert!(found[top..].iter().any(|c| c.requests == 1000));
}

/// Every deployment the search returns fits in the cluster it searched: a disaggregated
/// pair of the best shapes at 1:2 or 2:1 instances can need more accelerators than the
/// cluster has. (On 8 H100s it once listed pairs of 12, e.g. `P 2×(TP2 DP1 EP1 PP2) / D
/// 1×(TP2 DP1 EP1 PP2)`.)
#[test]
fn search_keeps_only_deployments_that_fit_in_the_cluster() {
    let text = "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-70b}
serving:
  weights: fp8
  kv_cache: fp8
  instance: {instances: 4, tp: 2}
  input: {mean: 1000}
  output: {mean: 300}
  slo: {ttft_ms: 2000, tpot_ms: 100}
  requests: 200
";
    let setup = setup_of("fit.yaml", text);
    let found =
        myriad_serve::search::search(&setup.deployment, &setup.workload, &setup.slo, 8, 8, 0.9);
    assert!(found
        .iter()
        .any(|c| c.description.starts_with("disaggregated")));
    for c in &found {
        assert!(
            c.accelerators <= 8,
            "{} on {}",
            c.description,
            c.accelerators
        );
    }
}

/// Instances not given fill the cluster with instances of `tp × attention_dp × pp`
/// accelerators. (The default once divided the cluster by `tp × attention_dp` only, so
/// any pipeline-parallel instance without `instances` asked for `pp` times the cluster:
/// "the deployment needs 16 accelerators but cluster.count is 8".)
#[test]
fn default_instances_fill_the_cluster_with_pipeline_parallel_instances() {
    let setup = h100x8_llama3_70b_fp8(
        "  instance: {tp: 2, pp: 2}
  input: {mean: 1000}
  output: {mean: 200}
",
    );
    let Deployment::Aggregated(r) = &setup.deployment else {
        panic!("aggregated expected")
    };
    assert_eq!((r.instances, r.model.par.gpus()), (2, 4));
    assert_eq!(setup.deployment.accelerators(), 8);
    assert!(setup
        .notes
        .iter()
        .any(|n| n == "instance.instances: 2 (not given)"));
}

/// A token budget per micro-batch of 2^31 with two pipeline stages is a budget past u32
/// for the cycle: unlimited, not wrapped to none. (It wrapped to 0, no prompt was ever
/// scheduled, and the run reported 0 of its requests completed.)
#[test]
fn a_token_budget_past_u32_over_pipeline_stages_saturates() {
    let setup = h100x8_llama3_70b_fp8(
        "  instance: {instances: 2, tp: 2, pp: 2, max_num_tokens: 2147483648}
  input: {mean: 1000}
  output: {mean: 20}
  requests: 50
",
    );
    let Deployment::Aggregated(r) = &setup.deployment else {
        panic!("aggregated expected")
    };
    assert_eq!(r.max_tokens, u32::MAX);
    let rep = myriad_serve::run(&setup);
    assert_eq!(rep.result.completed, 50);
}

/// With speculative decoding a request's last step can verify more tokens than it has
/// left; those were never its output. Output tokens/s counts the requests' outputs, so
/// with no SLO (every request good) it equals the goodput's. (It counted the whole last
/// step: 3.2 tokens where one was left, 2.1× the output of these two-token requests.)
#[test]
fn speculative_decoding_counts_only_the_requests_output_tokens() {
    let setup = h100x8_llama3_70b_fp8(
        "  instance: {instances: 4, tp: 2}
  speculative: {draft_tokens: 3}
  input: {mean: 100}
  output: {mean: 2}
  requests: 40
",
    );
    let r = myriad_serve::run(&setup).result;
    assert_eq!(r.completed, 40);
    let tokens = r.output_tokens_per_s * r.duration_s;
    assert!((tokens - 80.0).abs() < 1e-6, "{tokens} output tokens");
    assert!(
        (r.goodput_output_tokens_per_s - r.output_tokens_per_s).abs()
            <= 1e-9 * r.output_tokens_per_s
    );
}

/// The accelerators for a target rate are whole units of the deployment's prefill:decode
/// ratio: with one TP2 prefill and two TP2 decode instances, multiples of 6. (They were
/// rounded to one prefill and one decode instance's 4, a ratio the run never simulated.)
#[test]
fn disaggregated_sizing_rounds_to_the_deployments_own_ratio() {
    let setup = setup_of(
        "pd.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-70b}
serving:
  weights: fp8
  kv_cache: fp8
  mode: disaggregated
  prefill: {instances: 1, tp: 2}
  decode: {instances: 2, tp: 2}
  arrival_rate: 4
  input: {mean: 1000}
  output: {mean: 200}
  slo: {ttft_ms: 2000, tpot_ms: 100}
  target_rate: 50
  requests: 300
",
    );
    let rep = myriad_serve::run(&setup);
    let c = myriad_serve::search::capacity(&setup.deployment, &setup.workload, &setup.slo);
    assert!(c.feasible && c.accelerators == 6);
    let per_acc = c.max_rate / 6.0;
    let units = (50.0 / per_acc / 6.0).ceil() as u64;
    assert_eq!(
        rep.accelerators_for_target_rate,
        Some(units * 6),
        "{per_acc}"
    );
}

/// Guards the sizing for `target_rate`: it comes from the deployment's capacity (the
/// highest Poisson rate at which 90% of requests meet both SLOs, `search::capacity`), not
/// from the goodput of the run at the scenario's own rate. Four TP2 Llama 3 70B instances
/// keep up at 1 and at 12 requests/s, so each run's goodput was its arrival rate (1.02 and
/// 10.83 req/s over 3,000 requests) and the sizing for 100 requests/s was 8 × 100 / 1.02 →
/// 784 accelerators at 1 request/s and 8 × 100 / 10.83 → 74 at 12: the same deployment,
/// ten times apart. Now both are ⌈100 / (capacity / 8)⌉ rounded up to TP2 instances, the
/// same number, and far below the 74 that a run at 12 requests/s (a tenth of what it
/// holds at 20%+ KV use) had extrapolated.
#[test]
fn target_rate_sizing_uses_capacity_not_the_scenarios_own_rate() {
    let sizing = |rate: f64| {
        let setup = h100x8_llama3_70b_fp8(&format!(
            "  kv_cache: fp8
  instance: {{instances: 4, tp: 2, max_batch: 256, max_num_tokens: 8192}}
  arrival_rate: {rate}
  requests: 3000
  input: {{dist: lognormal, mean: 1000, std: 800, min: 16, max: 8192}}
  output: {{dist: lognormal, mean: 300, std: 250, min: 4, max: 2048}}
  prefix_cache_hit: 0.2
  slo: {{ttft_ms: 2000, tpot_ms: 100}}
  target_rate: 100
"
        ));
        let rep = myriad_serve::run(&setup);
        let c = myriad_serve::search::capacity(&setup.deployment, &setup.workload, &setup.slo);
        (rep.accelerators_for_target_rate.unwrap(), c.max_rate)
    };
    let (at_1, cap) = sizing(1.0);
    let (at_12, cap_12) = sizing(12.0);
    assert_eq!(
        cap, cap_12,
        "the capacity does not depend on the scenario's rate"
    );
    // By hand: ⌈100 / (cap / 8)⌉ accelerators, rounded up to an even count.
    let by_hand = ((100.0 / (cap / 8.0)).ceil() as u64).div_ceil(2) * 2;
    assert_eq!((at_1, at_12), (by_hand, by_hand), "capacity {cap} req/s");
    // Well above the 12 req/s the old sizing took as the capacity of 8 accelerators.
    assert!(
        cap > 20.0 && by_hand < 40,
        "capacity {cap} req/s, {by_hand} accelerators"
    );
}

/// Guards the length draws' bounds: a uniform length from `min: 0` stays within `max`
/// (the one-token floor used to shift the whole range up by one, so `{min: 0, max: 1}`
/// drew 2-token prompts), and a normal length whose `min` is above its `max` raises the
/// range to `min` instead of panicking in `f64::clamp`.
#[test]
fn length_draws_stay_within_their_bounds() {
    let draw = |input: LengthDist| {
        myriad_serve::sim::generate(&Workload {
            arrivals: Arrivals::Offline,
            input,
            output: LengthDist::Fixed(1),
            requests: 500,
            prefix_hit: 0.0,
            seed: 1,
        })
    };
    let u = draw(LengthDist::Uniform { min: 0, max: 1 });
    assert!(u.iter().all(|r| r.1 == 1), "uniform 0..=1 drew above 1");
    let u = draw(LengthDist::Uniform { min: 0, max: 3 });
    assert!(u.iter().all(|r| (1..=3).contains(&r.1)));
    assert!((1..=3).all(|k| u.iter().any(|r| r.1 == k)));
    let n = draw(LengthDist::Normal {
        mean: 10.0,
        std: 1.0,
        min: 1000,
        max: 40,
    });
    assert!(n.iter().all(|r| r.1 == 1000));
}

/// Guards the scenario check of a normal or lognormal `min` above the default `max`
/// (4 × mean): it used to pass the check and panic in the length draw (`min > max` in
/// `f64::clamp`); now it is an error naming `serving.input.min`.
#[test]
fn a_min_above_the_default_max_is_an_error_not_a_panic() {
    let e = bad("  input: {dist: normal, mean: 10, std: 1, min: 1000}\n  output: {mean: 10}\n");
    assert!(
        e.contains("serving.input.min: 1000 is larger than the default max 40 (4 × mean 10)"),
        "{e}"
    );
    let e = bad("  input: {mean: 10}\n  output: {dist: lognormal, mean: 3, std: 1, min: 13}\n");
    assert!(e.contains("serving.output.min: 13"), "{e}");
}

/// The ADP-balance context wait holds prompts only while every attention rank decodes:
/// TensorRT-LLM runs them at once, and restarts its count, when not every rank has
/// generation requests (`_balance_adp_requests`: `timeout_reached or not
/// all_ranks_have_gen_requests`). Two ranks, A decoding a long output on rank 0; B arrives
/// and goes to rank 1, which decodes nothing, so it runs at once with the balance on (a
/// timeout of 200) as with it off. (Any decode anywhere held it: B waited the whole
/// timeout behind A's decodes.)
#[test]
fn adp_balance_holds_nothing_while_a_rank_has_no_decodes() {
    let m = || {
        try_model(
            ("h100-sxm", 8),
            "llama3-8b",
            Parallel::new(1, 2, 1),
            (Precision::Bf16, Precision::Bf16, Precision::Bf16),
            0.0,
            false,
            None,
        )
        .unwrap()
    };
    let run = |timeout: u32| {
        let mut r = role(m(), 1, 64);
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            adp_balance_batching_wait_iters: 0,
            ..SchedulePolicy::default()
        };
        let reqs = [(0.0, 100, 2000), (0.1, 100, 20)];
        let rep = myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.0, &NO_SLO);
        assert_eq!(rep.completed, 2);
        rep
    };
    let (off, held) = (run(0), run(200));
    assert_eq!(off.ttft.p99, held.ttft.p99);
    assert_eq!(off.tpot.mean, held.tpot.mean);
}

/// TensorRT-LLM's ADP balance waits until every attention rank has a prompt of its own
/// (`_balance_adp_requests`: `all(num_ctx > 0 for num_ctx in all_ranks_num_scheduled_context_requests)`),
/// not until there are as many waiting prompts as ranks. Two ranks, each decoding a long
/// request (A on rank 0, the 5,000-token B on rank 1); then two short prompts arrive, both
/// placed on rank 0 (the one with more free cache). Rank 1 has none, so they are held to
/// the timeout (200 iterations), not run at once because two prompts wait for two ranks.
#[test]
fn adp_balance_waits_for_a_prompt_on_every_rank() {
    let run = |timeout: u32| {
        let mut r = role(llama3_8b_h100_dp2(), 1, 64);
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            adp_balance_batching_wait_iters: 0,
            ..SchedulePolicy::default()
        };
        let reqs = [
            (0.0, 100, 2000),
            (0.0, 5000, 2000),
            (0.5, 100, 10),
            (0.5, 100, 10),
        ];
        let rep = myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.0, &NO_SLO);
        assert_eq!(rep.completed, 4);
        rep
    };
    let (off, held) = (run(0), run(200));
    eprintln!(
        "TTFT p99 {:.1} -> {:.1} ms, step {:.2} ms",
        off.ttft.p99 * 1e3,
        held.ttft.p99 * 1e3,
        off.tpot.mean * 1e3
    );
    assert!(
        held.ttft.p99 > 100.0 * off.tpot.mean && held.ttft.p99 > 4.0 * off.ttft.p99,
        "TTFT p99 {} -> {} (step {})",
        off.ttft.p99,
        held.ttft.p99,
        off.tpot.mean
    );
}

/// TensorRT-LLM's ADP-balance count is of iterations, not of one prompt's wait: it grows in
/// every iteration in which every rank decodes and not every rank has a prompt, none
/// waiting included, and restarts when it reaches the timeout (`_balance_adp_requests`:
/// `adp_ctx_waiting_iters_count += 1` whatever the ranks' context counts). Two ranks
/// each decode a long request from the start. A prompt C arrives about 130 iterations in,
/// so it waits out the remaining ~70 of the 200-iteration timeout, not all 200. (The count
/// used to start with C, so C waited the whole timeout.)
#[test]
fn adp_balance_count_runs_whether_or_not_a_prompt_waits() {
    let run = |timeout: u32| {
        let mut r = role(llama3_8b_h100_dp2(), 1, 64);
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            adp_balance_batching_wait_iters: 0,
            ..SchedulePolicy::default()
        };
        let reqs = [(0.0, 100, 4000), (0.0, 100, 4000), (0.8, 100, 10)];
        let rep = myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.0, &NO_SLO);
        assert_eq!(rep.completed, 3);
        rep
    };
    let (off, held) = (run(0), run(200));
    // C's wait, in decode steps (the TTFTs are sorted: A's and B's first).
    let step = off.tpot.mean;
    let waited = (held.ttft.p99 - off.ttft.p99) / step;
    eprintln!("step {:.2} ms, C waited {waited:.1} steps", step * 1e3);
    assert!(waited > 20.0 && waited < 150.0, "{waited}");
}

/// Guards the routing of KV caches to decode instances: requests whose prompts finish
/// together go to the least-loaded decode instance counting the transfers already on
/// their way to it. Before, a decode instance's load counted only the requests that had
/// arrived, so every prompt one prefill iteration finished (and every one until the
/// first transfer landed) went to the same instance: here 64 prompts finish in one
/// iteration and all 64 decoded on the first of two decode instances (a mean decode batch
/// of 64, and the second idle) instead of 32 on each.
#[test]
fn kv_transfers_in_flight_count_toward_a_decode_instances_load() {
    let m = llama3_8b_h100_bf16;
    let mut p = role(m(), 1, 256);
    p.max_tokens = 16_384;
    let d = Deployment::Disaggregated {
        prefill: p,
        decode: Box::new(role(m(), 2, 64)),
        kv_bps: 50e9,
        kv_latency_s: 5e-6,
    };
    let reqs: Vec<(f64, u32, u32)> = (0..64).map(|_| (0.0, 100, 200)).collect();
    let r = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
    assert_eq!(r.completed, 64);
    assert!(
        r.mean_decode_batch < 33.0,
        "mean decode batch {}",
        r.mean_decode_batch
    );
}

/// Guards the start of a decode instance when several KV caches land at the same instant
/// (prompts of equal length prefilled together on separate prefill instances, each
/// sending over its own links): all of them are queued before the instance starts its
/// iteration, as requests arriving together are. Before, the first landing started an
/// iteration of one sequence and the others waited it out: a mean decode batch below 64.
#[test]
fn kv_caches_landing_together_start_one_decode_batch() {
    let m = llama3_8b_h100_bf16;
    let mut p = role(m(), 64, 256);
    p.max_tokens = 16_384;
    let d = Deployment::Disaggregated {
        prefill: p,
        decode: Box::new(role(m(), 1, 64)),
        kv_bps: 50e9,
        kv_latency_s: 5e-6,
    };
    let reqs: Vec<(f64, u32, u32)> = (0..64).map(|_| (0.0, 100, 200)).collect();
    let r = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
    assert_eq!(r.completed, 64);
    assert_eq!(r.mean_decode_batch, 64.0);
}

/// Guards the set the TPOT percentiles run over: only requests of more than one output
/// token (vLLM's and SGLang's benchmarks append a TPOT only when `output_len > 1`). A
/// one-token request has no time per output token; it used to count as a TPOT of 0, so
/// here, with 60 of 100 requests one token long, the median TPOT was 0 and the mean 40%
/// of the decoding requests' mean.
#[test]
fn tpot_percentiles_leave_out_single_token_requests() {
    let d = Deployment::Aggregated(role(llama3_8b_h100_bf16(), 1, 256));
    let reqs: Vec<(f64, u32, u32)> = (0..100)
        .map(|k| (0.0, 500, if k % 5 < 3 { 1 } else { 100 }))
        .collect();
    let r = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
    assert_eq!(r.completed, 100);
    assert!(r.tpot.p50 > 0.0, "{:?}", r.tpot);
    // Every decoding request's TPOT is at least its steps' time: the mean is no smaller
    // than the smallest of them.
    assert!(r.tpot.mean >= 0.5 * r.tpot.p50, "{:?}", r.tpot);
    // The per-user speed (1/TPOT over the same requests) agrees with the TPOT scale.
    assert!(r.per_user_output_tokens_per_s * r.tpot.p50 > 0.5);
}

/// Guards speculative decoding with an absurd draft length (a scenario's
/// `speculative.draft_tokens` is any u32): the expected tokens per step were summed term
/// by term on every iteration, so four billion draft tokens hung `myriad serve`, and past
/// 2^31 `powi`'s exponent wrapped negative. Now a long draft's geometric series is summed
/// in closed form, and short drafts keep their term-by-term sums.
#[test]
fn a_huge_speculative_draft_has_a_closed_form_tokens_per_step() {
    let s = |draft_tokens, acceptance| {
        myriad_serve::Speculative {
            draft_tokens,
            acceptance,
        }
        .tokens_per_step()
    };
    assert!((s(u32::MAX, 0.85) - 1.0 / 0.15).abs() < 1e-9);
    assert_eq!(s(u32::MAX, 1.0), u32::MAX as f64 + 1.0);
    assert_eq!(s(u32::MAX, 0.0), 1.0);
    assert!((s(2000, 0.5) - 2.0).abs() < 1e-12);
    assert_eq!(s(3, 0.5), 1.875);
}

/// A disaggregated request whose prompt and output no decode rank's KV cache can hold is
/// turned away at the prefill instance: no prefill iteration, no input or output tokens
/// counted. (It was prefilled, its prompt and first token counted as throughput, its KV
/// cache sent, and only then rejected at the decode instance.) The engine's context limit is
/// raised past the request, so that the KV cache is what turns it away.
#[test]
fn a_request_too_large_to_decode_is_rejected_before_its_prefill() {
    let setup = h100x8_llama3_70b_fp8(
        "  mode: disaggregated
  prefill: {instances: 1, tp: 2}
  decode: {instances: 1, tp: 2}
  input: {mean: 100}
  output: {mean: 100000000}
  requests: 3
  max_context: 200000000
",
    );
    let r = myriad_serve::run(&setup).result;
    assert_eq!((r.completed, r.rejected), (0, 3));
    assert_eq!(r.iterations, 0);
    assert_eq!(r.input_tokens_per_s, 0.0);
    assert_eq!(r.output_tokens_per_s, 0.0);
}

/// SLO attainment is over every request: a rejected one met no SLO. Two requests, one
/// larger than the KV cache: half of them met the (absent) SLOs. (It was over the
/// completed ones only: 100%.)
#[test]
fn slo_attainment_counts_rejected_requests_as_missed() {
    let setup = h100x8_llama3_70b_fp8(
        "  instance: {instances: 1, tp: 2}\n  input: {mean: 100}\n  output: {mean: 10}\n",
    );
    let reqs = [(0.0, 100, 10), (0.0, 100, 100_000_000)];
    let r = myriad_serve::simulate_requests(&setup.deployment, &reqs, 0.0, &NO_SLO);
    assert_eq!((r.completed, r.rejected), (1, 1));
    assert_eq!(r.slo_attainment, 0.5);
}

/// A MoE model's search offers EP 1 and EP over the whole stage; where the stage is one
/// accelerator those are the same plan, offered once. (Every one-accelerator shape was a
/// candidate twice, with the same description and goodput.) Searched as for one
/// accelerator: one-accelerator shapes with the four batch limits.
#[test]
fn search_offers_each_moe_shape_once() {
    let setup = setup_of(
        "q.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: qwen3-30b-a3b}
serving:
  weights: fp8
  input: {mean: 200}
  output: {mean: 20}
  requests: 40
  slo: {ttft_ms: 2000, tpot_ms: 200}
",
    );
    let c = myriad_serve::search::search(&setup.deployment, &setup.workload, &setup.slo, 8, 1, 0.9);
    let mut names: Vec<&str> = c.iter().map(|x| x.description.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// With attention DP and chunked prefill a prompt gets one rank's share of the token
/// budget an iteration (8192 / 4 = 2048), so short prompts behind a long one finish their
/// prefill first, and start decoding then. A prompt of 8000 and two of 100 at once: the
/// short ones' first tokens come after the first iteration, the long one's after the
/// fourth. (Prompts left the prefill queue only from its front: the short ones waited for
/// the long one, all three with the same TTFT.)
#[test]
fn a_short_prompt_behind_a_long_one_starts_decoding_when_its_prefill_ends() {
    let setup = setup_of(
        "adp.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-8b}
serving:
  instance: {instances: 1, tp: 1, attention_dp: 4, max_num_tokens: 8192}
  chunked_prefill: true
  input: {mean: 100}
  output: {mean: 10}
",
    );
    let reqs = [(0.0, 8000, 10), (0.0, 100, 10), (0.0, 100, 10)];
    let r = myriad_serve::simulate_requests(&setup.deployment, &reqs, 0.0, &NO_SLO);
    assert_eq!(r.completed, 3);
    // Sorted TTFTs: p50 is a short prompt's, p99 the long one's.
    assert!(
        r.ttft.p50 < 0.5 * r.ttft.p99,
        "short TTFT {} vs long {}",
        r.ttft.p50,
        r.ttft.p99
    );
    // Four prompt iterations of the long one: three more chunks after the first, each with
    // the two short requests decoding beside it.
    assert_eq!(r.iteration_mix.with_prompts.iterations, 4);
}

/// ADP balance holds new prompts whatever their prefix-cache hit: a prompt whose cached
/// prefix is counted as done has not started its prefill. With half of every prompt
/// cached the held run still waits for its first tokens as the uncached one does. (Any
/// cached prefix counted as a started prompt, which is never held: the balance was off.)
#[test]
fn adp_balance_holds_prompts_with_a_cached_prefix() {
    let w = chat(Arrivals::Poisson(12.0), 2000, 3);
    let reqs = myriad_serve::sim::generate(&w);
    let run = |timeout: u32| {
        let mut r = role(deepseek_nvfp4_dep("b200", 8, 8, 300e-6), 1, 2048);
        r.chunked_prefill = false;
        r.policy = SchedulePolicy {
            adp_balance_timeout_iters: timeout,
            ..SchedulePolicy::default()
        };
        myriad_serve::simulate_requests(&Deployment::Aggregated(r), &reqs, 0.5, &NO_SLO)
    };
    let (base, held) = (run(0), run(50));
    assert_eq!((base.completed, held.completed), (2000, 2000));
    assert!(
        held.ttft.mean > 1.5 * base.ttft.mean,
        "TTFT {} -> {}",
        base.ttft.mean,
        held.ttft.mean
    );
}

/// A search candidate of the scenario's own shape is the scenario's instance: the cluster's
/// multi-node NVLink domain and the framework's MoE padding and token gathering, which
/// depend on the shape, carry over. DeepSeek-V3 with NVFP4 experts, TensorRT-LLM DEP8 on
/// a GB200 NVL72: its candidate prices a mixed iteration as `myriad serve` does. (They
/// were dropped: every searched candidate ran without them.)
#[test]
fn a_search_candidate_of_the_scenarios_shape_is_its_instance() {
    let setup = setup_of(
        "dep.yaml",
        "format: myriad/1
cluster: {accelerator: gb200, count: 72, scale_up: gb200-nvl72}
model: {preset: deepseek-v3}
serving:
  framework: tensorrt-llm
  weights: fp8
  experts: fp4
  kv_cache: fp8
  instance: {instances: 1, tp: 1, attention_dp: 16, ep: 16, max_batch: 1024}
  input: {mean: 1000}
  output: {mean: 100}
",
    );
    let Deployment::Aggregated(base) = &setup.deployment else {
        panic!("aggregated")
    };
    assert!(base.model.moe_dp_padding && base.model.multi_node_nvlink);
    let c = myriad_serve::search::with(base, base.model.par, base.max_batch, 0.9).unwrap();
    assert_eq!(c.model.moe_dp_padding, base.model.moe_dp_padding);
    assert_eq!(c.model.moe_gather_comm, base.model.moe_gather_comm);
    assert_eq!(c.model.multi_node_nvlink, base.model.multi_node_nvlink);
    let b = Batch {
        decode_seqs: 512.0,
        decode_ctx: 512.0 * 1500.0,
        decode_ctx_sq: 512.0 * 1500.0 * 1500.0,
        ..one_prompt(2000.0)
    };
    assert_eq!(
        c.model.iteration(&b).total_s,
        base.model.iteration(&b).total_s
    );
}

/// A disaggregated request's KV cache leaves the prefill instance over the NICs of the one
/// attention-DP rank that holds it (tp × pp accelerators), not of the whole instance. One
/// request of 2000 tokens (within one rank's 2048 of the budget) on a prefill instance of
/// attention DP 4: its TTFT is the prefill iteration, the link latency, and the cache's
/// bytes at one accelerator's bandwidth. (The bytes were spread over all four ranks'
/// NICs: the transfer took a quarter of its time.)
#[test]
fn a_kv_transfer_leaves_over_the_prefilling_rank_only() {
    let setup = setup_of(
        "pd-adp.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-8b}
serving:
  mode: disaggregated
  prefill: {instances: 1, tp: 1, attention_dp: 4}
  decode: {instances: 1, tp: 1}
  input: {mean: 100}
  output: {mean: 10}
",
    );
    let Deployment::Disaggregated {
        prefill,
        kv_bps,
        kv_latency_s,
        ..
    } = &setup.deployment
    else {
        panic!("disaggregated")
    };
    let input = 2000u32;
    let r = myriad_serve::simulate_requests(&setup.deployment, &[(0.0, input, 10)], 0.0, &NO_SLO);
    assert_eq!(r.completed, 1);
    let prompts = &r.iteration_mix.with_prompts;
    assert_eq!(prompts.iterations, 1);
    let transfer = input as f64 * prefill.model.kv_bytes_per_token() / kv_bps;
    let want = prompts.time.total_s + kv_latency_s + transfer;
    assert!(
        (r.ttft.mean / want - 1.0).abs() < 1e-9,
        "TTFT {} vs {want} (transfer {transfer})",
        r.ttft.mean
    );
}

/// Chunked prefill under attention data parallelism: a rank's token budget holds its own
/// decode tokens and its prompt chunk together (vLLM's, SGLang's and TensorRT-LLM's
/// schedulers). Two ranks share 2048 tokens, 1024 each. 400 one-token prompts prefill in
/// the first iteration and then decode, 200 per rank; a 4000-token prompt arriving during
/// that iteration gets chunks of 1024 − 200 = 824 tokens: five of them (4 × 824 + 704),
/// not four of a whole rank's 1024 (each chunk ignored the rank's decode tokens).
#[test]
fn an_attention_rank_chunk_leaves_room_for_its_decode_tokens() {
    let bf16 = Precision::Bf16;
    let m = try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 2, 1),
        (bf16, bf16, bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    let kv = m.kv_capacity_tokens(0.9);
    let d = Deployment::Aggregated(RoleSpec {
        model: m,
        instances: 1,
        max_batch: 1024,
        max_tokens: 2048,
        chunked_prefill: true,
        kv_tokens: kv,
        policy: Default::default(),
    });
    let mut reqs = vec![(0.0, 1u32, 2000u32); 400];
    reqs.push((1e-6, 4000, 2));
    let r = myriad_serve::simulate_requests(&d, &reqs, 0.0, &NO_SLO);
    assert_eq!(r.completed, 401);
    let prompts = &r.iteration_mix.with_prompts;
    // The first iteration's 400 one-token prompts, then five chunks of the long one.
    assert_eq!(prompts.iterations, 6);
    // Prompt tokens per prompted rank: 400 over two ranks, then 824 four times and 704.
    assert_eq!(prompts.prompt_tokens_per_rank, 200.0 + 4.0 * 824.0 + 704.0);
}

/// Disaggregated: a prefill instance holds a prompt's KV cache until its transfer to the
/// decode instance lands (Dynamo, SGLang's PD senders and Mooncake free it on the
/// transfer's completion). A prefill cache of 1500 tokens holds one 1000-token prompt, so
/// of two arriving together the second starts once the first's cache has left: after one
/// prefill P and one transfer T. Its first token comes at 2P + 2T; freeing the cache when
/// the prefill ended gave 2P + T.
#[test]
fn a_prefill_instance_holds_the_kv_cache_until_its_transfer_lands() {
    let setup = setup_of(
        "pd-hold.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-8b}
serving:
  mode: disaggregated
  prefill: {instances: 1, tp: 1}
  decode: {instances: 1, tp: 1}
  input: {mean: 100}
  output: {mean: 10}
",
    );
    let Deployment::Disaggregated {
        prefill,
        decode,
        kv_latency_s,
        ..
    } = setup.deployment
    else {
        panic!("disaggregated")
    };
    let mut prefill = prefill;
    prefill.kv_tokens = 1500.0;
    // A slow link: 1 GB/s per accelerator, so the transfer dwarfs nothing else.
    let kv_bps = 1e9;
    let d = Deployment::Disaggregated {
        prefill: prefill.clone(),
        decode,
        kv_bps,
        kv_latency_s,
    };
    let r = myriad_serve::simulate_requests(&d, &[(0.0, 1000, 2), (0.0, 1000, 2)], 0.0, &NO_SLO);
    assert_eq!(r.completed, 2);
    let prompts = &r.iteration_mix.with_prompts;
    assert_eq!(prompts.iterations, 2);
    let p = prompts.time.total_s / 2.0;
    let t = kv_latency_s + 1000.0 * prefill.model.kv_bytes_per_token() / kv_bps;
    // The mean of P + T and 2P + 2T.
    let want = 1.5 * (p + t);
    assert!(
        (r.ttft.mean / want - 1.0).abs() < 1e-9,
        "mean TTFT {} vs (P + T + 2P + 2T) / 2 = {want} (P {p}, T {t})",
        r.ttft.mean
    );
}

/// Disaggregated: the KV caches of prompts prefilled together leave over the same links,
/// one after another. Two 1000-token prompts prefilled in one iteration P on a one-rank
/// prefill instance each take X to send: the first lands at P + X + L, the second at
/// P + 2X + L (both landed at P + X + L when every transfer had the links to itself).
#[test]
fn kv_transfers_from_one_rank_share_its_links() {
    let setup = setup_of(
        "pd-links.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-8b}
serving:
  mode: disaggregated
  prefill: {instances: 1, tp: 1}
  decode: {instances: 1, tp: 1}
  input: {mean: 100}
  output: {mean: 10}
",
    );
    let Deployment::Disaggregated {
        prefill,
        decode,
        kv_latency_s,
        ..
    } = setup.deployment
    else {
        panic!("disaggregated")
    };
    let kv_bps = 1e9;
    let x = 1000.0 * prefill.model.kv_bytes_per_token() / kv_bps;
    let d = Deployment::Disaggregated {
        prefill,
        decode,
        kv_bps,
        kv_latency_s,
    };
    let r = myriad_serve::simulate_requests(&d, &[(0.0, 1000, 2), (0.0, 1000, 2)], 0.0, &NO_SLO);
    assert_eq!(r.completed, 2);
    let prompts = &r.iteration_mix.with_prompts;
    assert_eq!(prompts.iterations, 1);
    let p = prompts.time.total_s;
    let (first, second) = (p + x + kv_latency_s, p + 2.0 * x + kv_latency_s);
    let p99 = first + 0.99 * (second - first);
    assert!(
        (r.ttft.p99 / p99 - 1.0).abs() < 1e-9,
        "p99 TTFT {} vs {p99}, second P + 2X + L = {second}",
        r.ttft.p99
    );
    let mean = (first + second) / 2.0;
    assert!(
        (r.ttft.mean / mean - 1.0).abs() < 1e-9,
        "mean TTFT {} vs {mean}",
        r.ttft.mean
    );
}

/// Disaggregated: a decode instance reserves a request's cache before it is sent (SGLang's
/// decode pre-allocation queue, Dynamo's decode worker), so a request that finds the decode
/// instance full waits with its cache on the prefill instance, and that wait is time to its
/// first token, not time between its tokens. One decode slot, two 1000-token prompts of 50
/// output tokens prefilled together (P): the first is sent at once (X, then L) and decodes
/// 49 steps at TPOT τ; the second is sent when the first completes, so its first token comes
/// at P + 2X + 2L + 49τ and its TPOT is τ too. Before, its cache was sent at once and it
/// waited at the decode instance after its "first token": a TPOT of 2τ − X/49.
#[test]
fn a_full_decode_instance_delays_the_transfer_not_the_tokens() {
    let setup = setup_of(
        "pd-full.yaml",
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-8b}
serving:
  mode: disaggregated
  prefill: {instances: 1, tp: 1}
  decode: {instances: 1, tp: 1, max_batch: 1}
  input: {mean: 100}
  output: {mean: 10}
",
    );
    let Deployment::Disaggregated {
        prefill,
        decode,
        kv_latency_s: l,
        ..
    } = setup.deployment
    else {
        panic!("disaggregated")
    };
    let kv_bps = 1e9;
    let x = 1000.0 * prefill.model.kv_bytes_per_token() / kv_bps;
    let d = Deployment::Disaggregated {
        prefill,
        decode,
        kv_bps,
        kv_latency_s: l,
    };
    let r = myriad_serve::simulate_requests(&d, &[(0.0, 1000, 50), (0.0, 1000, 50)], 0.0, &NO_SLO);
    assert_eq!(r.completed, 2);
    let prompts = &r.iteration_mix.with_prompts;
    assert_eq!(prompts.iterations, 1);
    let p = prompts.time.total_s;
    // The p99 of two TPOTs (0.99 of the way from the smaller) is their mean only when
    // they are equal.
    let tau = r.tpot.mean;
    assert!(
        (r.tpot.p99 / tau - 1.0).abs() < 1e-9,
        "TPOT mean {tau}, largest {}",
        r.tpot.p99
    );
    let second = p + 2.0 * x + 2.0 * l + 49.0 * tau;
    let want = (p + x + l + second) / 2.0;
    assert!(
        (r.ttft.mean / want - 1.0).abs() < 1e-9,
        "mean TTFT {} vs {want}, the second's P + 2X + 2L + 49τ = {second}",
        r.ttft.mean
    );
}

/// Under attention data parallelism each rank has its own KV cache (`kv_tokens /
/// attention_dp`): a request goes to one rank and waits while no rank can hold it, however
/// much the instance holds in all. Hand-worked: a cache of 2,000 tokens over 2 ranks, 1,000
/// each; requests of 590 + 10 tokens need 600, so one fits per rank: at most 2 run at once,
/// 1,200 tokens, a peak of 0.6. (Admission once checked the whole instance's cache, 3 × 600
/// ≤ 2,000, and ran 3 at once: a peak of 0.9, one rank holding 1,200 tokens of its 1,000.)
#[test]
fn attention_dp_admission_checks_the_ranks_own_cache() {
    let m = try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 2, 1),
        (Precision::Bf16, Precision::Bf16, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    let mut r = role(m, 1, 64);
    r.kv_tokens = 2000.0;
    let w = Workload {
        arrivals: Arrivals::Offline,
        input: LengthDist::Fixed(590),
        output: LengthDist::Fixed(10),
        requests: 6,
        prefix_hit: 0.0,
        seed: 1,
    };
    let rep = simulate(&Deployment::Aggregated(r), &w, &NO_SLO);
    assert_eq!((rep.completed, rep.rejected), (6, 0));
    assert!((rep.kv_use_peak - 0.6).abs() < 1e-9, "{}", rep.kv_use_peak);
    assert!(
        rep.mean_decode_batch <= 2.0 + 1e-9,
        "{}",
        rep.mean_decode_batch
    );
}

/// A prefill instance holding a finished prompt's KV cache until its transfer lands is not
/// idle: a new prompt goes to the other, empty prefill instance. Hand-worked: each prefill
/// instance's cache holds one 1,000-token prompt (1,500 tokens); the transfer takes 10 s
/// (its latency); the first prompt arrives at 0 and the second at 1 s, when the first's
/// cache is in transfer. Each then waits its own prefill (~0.1 s) and the 10 s transfer: a
/// TTFT near 10 s. (The load that routes prompts once left the held caches out: both
/// instances looked idle, the first took the second prompt, and it waited there for the
/// first's transfer to free the cache, a TTFT near 19 s.)
#[test]
fn a_prefill_instance_holding_caches_in_transfer_is_not_idle() {
    let m = llama70b_h100_tp2();
    let mut prefill = role(m.clone(), 2, 64);
    prefill.kv_tokens = 1500.0;
    let d = Deployment::Disaggregated {
        prefill,
        decode: Box::new(role(m, 1, 64)),
        kv_bps: 1e11,
        kv_latency_s: 10.0,
    };
    let w = Workload {
        arrivals: Arrivals::Trace(vec![(0.0, 1000, 100), (1.0, 1000, 100)]),
        input: LengthDist::Fixed(1000),
        output: LengthDist::Fixed(100),
        requests: 2,
        prefix_hit: 0.0,
        seed: 1,
    };
    let r = simulate(&d, &w, &NO_SLO);
    assert_eq!((r.completed, r.rejected), (2, 0));
    assert!(r.ttft.p50 > 10.0, "{:?}", r.ttft);
    assert!(r.ttft.p99 < 11.0, "{:?}", r.ttft);
}

/// An offline run or a single request has no measurable arrival rate: it is `None` (JSON
/// `null`), never an infinite rate (which JSON cannot hold: serde wrote it as `null` while
/// the field claimed a number). Two requests 0.5 s apart arrive at 2 per second.
#[test]
fn arrival_rate_is_absent_where_it_cannot_be_measured() {
    let d = Deployment::Aggregated(role(llama70b_h100_tp2(), 1, 64));
    let at = |arrivals: Arrivals, requests: u64| {
        let w = Workload {
            arrivals,
            input: LengthDist::Fixed(100),
            output: LengthDist::Fixed(10),
            requests,
            prefix_hit: 0.0,
            seed: 1,
        };
        simulate(&d, &w, &NO_SLO)
    };
    let offline = at(Arrivals::Offline, 8);
    assert_eq!(offline.arrival_rate, None);
    let json = serde_json::to_value(&offline).unwrap();
    assert!(json["arrival_rate"].is_null(), "{}", json["arrival_rate"]);
    assert_eq!(
        at(Arrivals::Trace(vec![(3.0, 100, 10)]), 1).arrival_rate,
        None
    );
    let two = at(Arrivals::Trace(vec![(1.0, 100, 10), (1.5, 100, 10)]), 2);
    assert_eq!(two.arrival_rate, Some(2.0));
}

/// Each attention-DP rank admits its own line first come, first served: a request no rank
/// can hold yet waits at the head of one rank's line and holds up only that rank. Hand-worked:
/// 2 ranks of 1,000 tokens; requests of 600, 600, 600 and 300 tokens at once: the first two
/// take a rank each (400 free on both), the third waits on the first rank, and the fourth
/// fits beside the second (1,500 tokens, a peak of 0.75). (One line for the instance held
/// the fourth behind the third: a peak of 0.6, the second rank's room idle.)
#[test]
fn a_waiting_request_holds_up_only_its_own_attention_rank() {
    let m = try_model(
        ("h100-sxm", 8),
        "llama3-8b",
        Parallel::new(1, 2, 1),
        (Precision::Bf16, Precision::Bf16, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    let mut r = role(m, 1, 64);
    r.kv_tokens = 2000.0;
    let trace = vec![
        (0.0, 590, 10),
        (0.0, 590, 10),
        (0.0, 590, 10),
        (0.0, 290, 10),
    ];
    let w = Workload {
        arrivals: Arrivals::Trace(trace),
        input: LengthDist::Fixed(1),
        output: LengthDist::Fixed(1),
        requests: 4,
        prefix_hit: 0.0,
        seed: 1,
    };
    let rep = simulate(&Deployment::Aggregated(r), &w, &NO_SLO);
    assert_eq!((rep.completed, rep.rejected), (4, 0));
    assert!((rep.kv_use_peak - 0.75).abs() < 1e-9, "{}", rep.kv_use_peak);
}

/// A search candidate keeps the base's token budget per attention rank and micro-batch,
/// as it keeps a per-rank batch limit: from a TP1 base of 8,192 tokens, a shape of 4
/// attention ranks gets 32,768 (8,192 a rank), and one of 2 ranks in 2 pipeline stages
/// 8,192 × 2 × 2. (The instance's budget was kept whole and split over the candidate's
/// ranks: 2,048 a rank at DP4, which starved the prefill of every wide attention-DP shape.)
#[test]
fn search_candidates_keep_the_token_budget_per_attention_rank() {
    let base = role(llama3_8b_h100_bf16(), 1, 256);
    assert_eq!(base.max_tokens, 8192);
    let dp4 = myriad_serve::search::with(&base, Parallel::new(1, 4, 1), 1024, 0.9).unwrap();
    assert_eq!(dp4.max_tokens, 4 * 8192);
    let dp2pp2 =
        myriad_serve::search::with(&base, Parallel::new(1, 2, 1).with_pp(2), 512, 0.9).unwrap();
    assert_eq!(dp2pp2.max_tokens, 4 * 8192);
    let same = myriad_serve::search::with(&dp4, Parallel::new(1, 1, 1), 256, 0.9).unwrap();
    assert_eq!(same.max_tokens, 8192);
}

/// Guards the model's maximum context: a request whose prompt + output exceed it is
/// turned away on arrival and counted (`rejected_too_long`), as vLLM, SGLang and
/// TensorRT-LLM reject it; lengths that can never fit are an error naming the limit, and
/// lengths that sometimes exceed it a warning. Llama 3 70B holds 8,192 tokens (its
/// config.json); before, an 8,500-token request ran whenever a KV cache held it.
/// Requests longer than the model's maximum context are turned away by every deployment
/// alike, so they do not count against a deployment's SLO attainment in sizing and the
/// search: with 30.8% of the requests too long (prompts of 7,000-8,000 tokens and 500
/// output on Llama 3 70B's 8,192), attainment over all requests cannot reach 90%, and the
/// capacity came out infeasible (rate 0) under SLOs every admitted request meets.
#[test]
fn requests_past_the_context_do_not_fail_a_deployment() {
    let cat = myriad_catalog::catalog();
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-70b}\nserving:\n  weights: fp8\n  instance: {instances: 4, tp: 2}\n  requests: 1000\n  input: {dist: uniform, min: 7000, max: 8000}\n  output: {mean: 500}\n  slo: {ttft_ms: 20000, tpot_ms: 500}\n";
    let s = myriad_scenario::parse_scenario("ctx.yaml", text, cat).unwrap();
    let b = myriad_cluster::build(&s, cat).unwrap();
    let setup = myriad_serve::setup(&s, &b, cat, None).unwrap();
    let c = myriad_serve::search::capacity(&setup.deployment, &setup.workload, &setup.slo);
    assert!(c.feasible && c.max_rate > 0.0, "{c:?}");
}

#[test]
fn requests_longer_than_the_models_context_are_rejected() {
    let cat = myriad_catalog::catalog();
    let scenario = |serving: &str| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 8}}\nmodel: {{preset: llama3-70b}}\nserving:\n  weights: fp8\n  instance: {{instances: 4, tp: 2}}\n  requests: 2000\n{serving}"
        )
    };
    let setup_of = |text: &str, trace: Option<Vec<(f64, u32, u32)>>| {
        let s = myriad_scenario::parse_scenario("ctx.yaml", text, cat).unwrap();
        let b = myriad_cluster::build(&s, cat).unwrap();
        myriad_serve::setup(&s, &b, cat, trace)
    };
    // Every request 8,000 + 500 = 8,500 tokens: nothing could run.
    let err = setup_of(
        &scenario("  input: {mean: 8000}\n  output: {mean: 500}\n"),
        None,
    )
    .unwrap_err();
    assert!(
        err.contains("8000 + 500 = 8500")
            && err.contains("8192")
            && err.contains("llama3-70b")
            && err.contains("serving.input + serving.output"),
        "{err}"
    );
    // Uniform prompts of 7,000-8,000 and 500 output tokens: a prompt past 8,192 − 500 =
    // 7,692 exceeds it, 308 of the 1,001 lengths (7,693-8,000), 30.8% of the requests.
    let text = scenario("  input: {dist: uniform, min: 7000, max: 8000}\n  output: {mean: 500}\n");
    let setup = setup_of(&text, None).unwrap();
    assert!(
        setup
            .warnings
            .iter()
            .any(|w| w.contains("8000 + 500 = 8500")),
        "{:?}",
        setup.warnings
    );
    let drawn = myriad_serve::sim::generate(&setup.workload);
    let over = drawn.iter().filter(|r| r.1 > 7692).count() as u64;
    assert!(
        (over as f64 / 2000.0 - 308.0 / 1001.0).abs() < 0.03,
        "{over} of 2000"
    );
    let r = myriad_serve::run(&setup).result;
    assert_eq!((r.rejected_too_long, r.rejected), (over, over));
    assert_eq!(r.completed, 2000 - over);
    // Only requests that fit were served: the mean prompt of the completed ones is that
    // of prompts up to 7,692, (7,000 + 7,692) / 2 = 7,346 (input tokens over completions).
    let mean_in = r.input_tokens_per_s * r.duration_s / r.completed as f64;
    assert!((mean_in - 7346.0).abs() < 40.0, "{mean_in}");
    // A stated limit replaces the preset's (Llama 3.1 70B's 131,072), with a warning that
    // it passes the preset's; then every request runs.
    let setup = setup_of(&format!("{text}  max_context: 131072\n"), None).unwrap();
    assert!(setup
        .warnings
        .iter()
        .any(|w| w.contains("serving.max_context: 131072")));
    let r = myriad_serve::run(&setup).result;
    assert_eq!((r.rejected, r.completed), (0, 2000));
    // A trace names its first request past the limit, and how many are.
    let trace = vec![
        (0.0, 1000, 100),
        (0.5, 9000, 100),
        (1.0, 8000, 500),
        (2.0, 10, 10),
    ];
    let text = scenario("  trace: t.csv\n  input: {mean: 1}\n  output: {mean: 1}\n");
    let setup = setup_of(&text, Some(trace)).unwrap();
    assert!(
        setup.warnings.iter().any(|w| w.contains("2 of 4 requests")
            && w.contains("request 2 holds 9000 + 100 = 9100 tokens")),
        "{:?}",
        setup.warnings
    );
    let r = myriad_serve::run(&setup).result;
    assert_eq!((r.completed, r.rejected_too_long), (2, 2));
    // A model without a known limit (no preset) runs them all, as before.
    let custom = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {layers: 80, hidden: 8192, ffn_hidden: 28672, heads: 64, kv_heads: 8, vocab: 128256, seq_len: 8192, gated_mlp: true}\nserving:\n  weights: fp8\n  instance: {instances: 4, tp: 2}\n  requests: 200\n  input: {mean: 8000}\n  output: {mean: 500}\n";
    let setup = setup_of(custom, None).unwrap();
    assert!(setup.warnings.is_empty());
    assert_eq!(myriad_serve::run(&setup).result.completed, 200);
}

#[test]
fn widened_expert_tiles_follow_triton_block_m() {
    use myriad_serve::model::widened_expert_tile_rows;
    // triton_kernels: block_m = max(16, min(next_power_of_2(m // n_expts_tot), 128)).
    for (tpe, rows) in [
        (0.3, 16.0),
        (4.9, 16.0),
        (16.0, 16.0),
        (17.0, 32.0),
        (36.8, 64.0),
        (64.0, 64.0),
        (64.9, 64.0),
        (65.0, 128.0),
        (1040.0, 128.0),
    ] {
        assert_eq!(widened_expert_tile_rows(tpe), rows, "{tpe}");
    }
}

#[test]
fn gpt_oss_120b_decode_reads_experts_in_small_tiles() {
    // gpt-oss-120b's MoE (128 experts of 3 x 2880 x 2880, top-4) on one H200 at 157
    // decode sequences: 628 routed rows, ~4.9 an expert, so Triton's 16-row tiles. The
    // batch touches 128 (1 - (1 - 4/128)^157) = 127.12 experts: 127.12 x 24.88 M params x
    // 0.5625 bytes = 1.779 GB, 0.488 ms at 0.76 x 4.8 TB/s. Their bf16 MMAs over 16-row
    // tiles (0.10 PFLOP, 0.15 ms) and the useful FLOPs at the widening ceiling (0.13 ms)
    // stay below that, so the routed experts are bound by the weight stream: 0.512 ms with
    // the fixed kernel costs and the activation traffic. With 64-row tiles the bf16 MMAs
    // alone took 0.59 ms (0.617 ms in all).
    let cat = myriad_catalog::catalog();
    let mut t = gpt_oss_like();
    t.layers = 36;
    t.moe = Some(myriad_model::Moe::routed(128, 4, 2880));
    let m = InstanceModel::new(
        cat.accelerator("h200").unwrap(),
        &levels("h200", 8),
        &t,
        Parallel::new(1, 1, 1),
        Precisions::new(Precision::Bf16, Precision::Fp4, Precision::Bf16),
        0.0,
        false,
        None,
    )
    .unwrap();
    let s = m.moe_stages(&Batch {
        decode_seqs: 157.0,
        decode_ctx: 157.0 * 1540.0,
        ..Batch::default()
    });
    let distinct = 128.0 * (1.0 - (1.0f64 - 4.0 / 128.0).powf(157.0));
    let stream = distinct * 3.0 * 2880.0 * 2880.0 * 0.5625 / (4.8e12 * 0.76);
    assert!((stream - 0.488e-3).abs() < 0.002e-3, "{stream}");
    assert!(
        s.mlp > stream && s.mlp < stream + 0.03e-3,
        "{} vs {stream}",
        s.mlp
    );
}
