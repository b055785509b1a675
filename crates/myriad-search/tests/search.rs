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
    // Brute force, including every block-recompute share of the full-recompute plans.
    let brute = plans
        .iter()
        .flat_map(|p| {
            let layers = p.chunk_layers(m.layers);
            let shares: Vec<f64> = if p.recompute == myriad_model::Recompute::Full {
                (1..=layers).map(|k| k as f64 / layers as f64).collect()
            } else {
                vec![1.0]
            };
            shares.into_iter().map(move |f| myriad_train::Plan {
                recompute_fraction: f,
                ..p.clone()
            })
        })
        .map(|p| myriad_train::estimate(&m, &p, &c))
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
    // Every estimated plan's EP divides the 128 experts and the data-parallel size, or
    // (MoE parallel folding, `Plan::ep_folded`) the stage's TP x CP x DP ranks, which its
    // expert groups then tile.
    let (plans, _) = candidates(&m, &c, &f, &Space::full(&m));
    assert!(plans.iter().any(|p| p.ep > 1));
    assert!(plans.iter().all(|p| 128 % p.ep == 0
        && (p.dp % p.ep == 0 || ((p.tp * p.cp * p.dp) % p.ep == 0 && p.expert_dims().is_some()))));
}

/// The search's best plan is never worse than the published plan of any validation case
/// (same model, cluster and batch), both as Myriad predicts them.
#[test]
fn best_is_never_worse_than_any_published_plan() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("skipping: {path} not found");
        return;
    };
    let cat = myriad_catalog::catalog();
    let file = myriad_scenario::validation::parse_validation(path, &text).unwrap();
    let mut compared = 0;
    for case in &file.cases {
        let (scenario, _) = myriad_train::validate::case_scenario(case, cat).unwrap();
        let cluster = myriad_cluster::build(&scenario, cat).unwrap();
        let model = myriad_train::validate::case_model(case, cat).unwrap();
        let published =
            myriad_train::train(&case.training, &model, &cluster, case.system.count).unwrap();
        if !published.estimate.fits {
            continue; // the search only returns plans that fit
        }
        let mut fixed = Fixed::from_spec(&case.training, case.system.count);
        fixed.global_batches = vec![published.plan.global_batch];
        fixed.schedule = published.plan.schedule;
        let r = search(
            &model,
            &cluster,
            &fixed,
            &Space::full(&model),
            1,
            &|_, _| {},
        );
        let best = r
            .top
            .first()
            .unwrap_or_else(|| panic!("{}: no plan found", case.id));
        assert!(
            best.estimate.step_time_s <= published.estimate.step_time_s * (1.0 + 1e-9),
            "{}: search best {:.4} s > published plan {:.4} s ({:?})",
            case.id,
            best.estimate.step_time_s,
            published.estimate.step_time_s,
            published.plan
        );
        compared += 1;
    }
    assert!(compared >= 90, "only {compared} cases compared");
}

/// Pruning against exhaustive evaluation: every combination of the space is sent through
/// `myriad_train::resolve` (the path a user's scenario takes, with its own checks), the
/// valid ones are estimated, and the fastest that fits must be the search's best.
#[test]
fn pruned_search_matches_exhaustive_evaluation() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 64, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let space = Space::full(&m);
    let mut best = f64::INFINITY;
    let mut valid = 0u64;
    for &tp in &space.tp {
        for &cp in &space.cp {
            for &pp in &space.pp {
                for &vpp in &space.vpp {
                    for &mb in &space.micro_batch {
                        for &r in &space.recompute {
                            for &z in &space.zero_stage {
                                let inner = (tp * cp * pp) as u64;
                                if 64 % inner != 0 {
                                    continue;
                                }
                                let spec = myriad_scenario::TrainingSpec {
                                    tp: Some(tp),
                                    cp: Some(cp),
                                    pp: Some(pp),
                                    dp: Some((64 / inner) as u32),
                                    vpp: Some(vpp),
                                    micro_batch: Some(mb as u64),
                                    global_batch: Some(64),
                                    recompute: Some(r),
                                    zero_stage: Some(z),
                                    distributed_optimizer: Some(true),
                                    precision: Some(myriad_scenario::Precision::Bf16),
                                    ..Default::default()
                                };
                                let Ok((mut plan, _)) = myriad_train::resolve(&spec, &m, &c, 64)
                                else {
                                    continue;
                                };
                                if vpp > 1 && pp == 1 {
                                    continue; // not a distinct plan
                                }
                                if plan.dp * plan.cp == 1 {
                                    // Nothing to shard over (a dense model).
                                    plan.zero_stage = 0;
                                    plan.distributed_optimizer = false;
                                }
                                valid += 1;
                                let e = myriad_train::estimate(&m, &plan, &c);
                                if e.fits {
                                    best = best.min(e.step_time_s);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let r = search(&m, &c, &f, &space, 1, &|_, _| {});
    assert!(valid > 100, "{valid}");
    assert_eq!(r.top[0].estimate.step_time_s, best);
}

#[test]
fn tight_memory_finds_the_least_block_recompute() {
    // Llama 3.1 405B at 8K context on 1,024 H100 without context parallelism: nothing fits
    // without recompute, so the best plan recomputes only part of every pipeline chunk.
    let (m, c, f) = setup("format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: llama3-405b, seq_len: 8192}\ntraining: {global_batch: 512, precision: bf16}\n");
    let space = Space {
        tp: vec![8],
        sequence_parallel: vec![true],
        cp: vec![1],
        pp: vec![16],
        vpp: vec![1, 2, 4],
        micro_batch: vec![1],
        recompute: vec![myriad_model::Recompute::None, myriad_model::Recompute::Full],
        zero_stage: vec![1],
        ..Space::full(&m)
    };
    let r = search(&m, &c, &f, &space, 3, &|_, _| {});
    let best = &r.top[0];
    assert!(best.estimate.fits);
    assert_eq!(best.plan.recompute, myriad_model::Recompute::Full);
    let layers = best.plan.chunk_layers(m.layers) as f64;
    let share = best.plan.recompute_fraction;
    assert!(share < 1.0, "{share}");
    // Minimal: one layer fewer per chunk does not fit.
    let fewer = myriad_train::Plan {
        recompute_fraction: share - 1.0 / layers,
        ..best.plan.clone()
    };
    if fewer.recompute_fraction > 0.0 {
        assert!(!myriad_train::estimate(&m, &fewer, &c).fits);
    }
    // And faster than recomputing everything.
    let all = myriad_train::Plan {
        recompute_fraction: 1.0,
        ..best.plan.clone()
    };
    assert!(best.estimate.step_time_s < myriad_train::estimate(&m, &all, &c).step_time_s);
}

#[test]
fn gb200_search_offloads_activations_when_nothing_else_fits() {
    // Llama 3 70B at 8K context with TP 1 and no pipeline on GB200: without recompute only
    // offloading activations to the Grace memory fits; the search finds the least share.
    let (m, c, f) = setup("format: myriad/1\ncluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {global_batch: 288, precision: fp8}\n");
    let space = Space {
        tp: vec![1],
        cp: vec![1],
        pp: vec![1],
        vpp: vec![1],
        micro_batch: vec![2],
        recompute: vec![myriad_model::Recompute::None],
        zero_stage: vec![3],
        ..Space::full(&m)
    };
    let r = search(&m, &c, &f, &space, 1, &|_, _| {});
    let best = &r.top[0];
    assert!(best.estimate.fits);
    let share = best.plan.offload_fraction;
    assert!(share > 0.0 && share < 1.0, "{share}");
    let fewer = myriad_train::Plan {
        offload_fraction: share - 1.0 / 80.0,
        ..best.plan.clone()
    };
    let e = myriad_train::estimate(&m, &fewer, &c);
    assert!(e.memory.total_gib > e.memory.capacity_gib);
}

#[test]
fn layers_that_pp_does_not_divide_get_a_first_stage_remainder() {
    // DeepSeek-V3's 61 layers (without its MTP module): PP 16 is a candidate with 1 layer
    // on the first stage and 4 on each other, and every stage split covers all layers.
    let (m, c, f) = setup("format: myriad/1\ncluster: {accelerator: h800, count: 2048, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: deepseek-v3, mtp_layers: 0}\ntraining: {global_batch: 15360, precision: fp8}\n");
    let space = Space::full(&m);
    let (plans, _) = candidates(&m, &c, &f, &space);
    assert!(plans
        .iter()
        .any(|p| p.pp == 16 && p.edge_stage_layers == Some((1, 4))));
    for p in plans.iter().filter(|p| p.edge_stage_layers.is_some()) {
        assert_eq!(p.vpp, 1);
        let total: f64 = (0..p.pp)
            .map(|s| {
                let (lo, hi) = p.stage_layers(m.layers, s);
                hi - lo
            })
            .sum();
        assert_eq!(total, m.layers as f64, "{p:?}");
    }
}

/// DualPipe pairs the pipeline's stages from both ends: with it fixed, every plan the search
/// offers has an even PP that `train` accepts (it used to offer PP 1, which train refuses),
/// and the odd ones are counted as rejected.
#[test]
fn dualpipe_plans_have_an_even_pp() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 256, precision: bf16, pipeline_schedule: dualpipe}\n";
    let (m, c, f) = setup(text);
    let space = Space::full(&m);
    let (plans, rej) = candidates(&m, &c, &f, &space);
    assert!(!plans.is_empty());
    assert!(plans.iter().all(|p| p.pp % 2 == 0), "odd PP under DualPipe");
    assert!(rej.get("dualpipe needs an even pp").is_some_and(|n| *n > 0));
    // DualPipe has no virtual stages (`train` refuses VPP > 1 with it).
    assert!(plans.iter().all(|p| p.vpp == 1), "VPP under DualPipe");
    assert!(rej
        .get("virtual stages on gpipe or dualpipe")
        .is_some_and(|n| *n > 0));
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size());
    let r = search(&m, &c, &f, &space, 3, &|_, _| {});
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    for t in &r.top {
        let p = &t.plan;
        let spec = myriad_scenario::TrainingSpec {
            tp: Some(p.tp),
            pp: Some(p.pp),
            dp: Some(p.dp),
            cp: Some(p.cp),
            vpp: Some(p.vpp),
            micro_batch: Some(p.micro_batch as u64),
            ..s.training.clone().unwrap()
        };
        myriad_train::plan::resolve(&spec, &m, &c, 64).expect("train accepts the plan");
    }
}

/// `--top` is a count to list, not an allocation: asking for more plans than fit lists them
/// all (a huge `top_n` used to abort on a capacity overflow before any plan was listed).
#[test]
fn a_huge_top_lists_every_feasible_plan() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 8, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let mut space = Space::full(&m);
    space.micro_batch = vec![1];
    let r = search(&m, &c, &f, &space, usize::MAX, &|_, _| {});
    assert!(!r.top.is_empty());
    assert!(r.top.len() as u64 <= r.feasible);
}

/// With several global batches (`--global-batch 64,96,128`), every configuration of every
/// batch is estimated or rejected with a reason: the rejections above the micro-batch loop
/// were counted for one batch only, so the table's counts did not add up to the space.
#[test]
fn rejections_cover_every_global_batch() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 64, precision: bf16}\n";
    let (m, c, mut f) = setup(text);
    f.global_batches = vec![64, 96, 128];
    let space = Space::full(&m);
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size() * 3);
    // TP 16 and more is past the 8-GPU domain for each of the three batches.
    let per_tp = space.size() / space.tp.len() as u64;
    assert_eq!(rej["tp larger than the scale-up domain"], 3 * 3 * per_tp);
    let r = search(&m, &c, &f, &space, 3, &|_, _| {});
    assert_eq!(r.feasible + r.infeasible.values().sum::<u64>(), r.space);
}

/// The plans the search ranks are the plans `train` resolves from the scenario's training
/// block with the same dimensions: `tp_comm_overlap: false` and `tp_comm_overlap_sms` were
/// ignored (every sequence-parallel plan was timed with Transformer Engine's default
/// overlap of 16 SMs), so the search ranked plans `train` would time differently.
#[test]
fn searched_plans_keep_the_scenarios_tp_overlap_settings() {
    for settings in [
        "tp_comm_overlap: false",
        "tp_comm_overlap_sms: 24",
        "tp_comm_overlap: true",
    ] {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64}}\nmodel: {{preset: llama3-8b}}\ntraining: {{global_batch: 128, precision: bf16, {settings}}}\n");
        let cat = myriad_catalog::catalog();
        let s = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap();
        let (m, c, f) = setup(&text);
        let t = s.training.clone().unwrap();
        let mut space = Space::full(&m);
        space.micro_batch = vec![1, 2];
        let r = search(&m, &c, &f, &space, 20, &|_, _| {});
        assert!(r.top.iter().any(|x| x.plan.tp > 1), "{settings}");
        for x in &r.top {
            let p = &x.plan;
            let spec = myriad_scenario::TrainingSpec {
                tp: Some(p.tp),
                pp: Some(p.pp),
                dp: Some(p.dp),
                cp: Some(p.cp),
                vpp: Some(p.vpp),
                micro_batch: Some(p.micro_batch as u64),
                sequence_parallel: Some(p.sequence_parallel),
                recompute: Some(p.recompute),
                zero_stage: Some(p.zero_stage),
                distributed_optimizer: Some(p.distributed_optimizer),
                // Train refuses the SMs for a plan that does not overlap.
                tp_comm_overlap_sms: t.tp_comm_overlap_sms.filter(|_| p.tp_comm_overlap),
                ..t.clone()
            };
            let (mut q, _) = myriad_train::resolve(&spec, &m, &c, 64).expect("train accepts it");
            // What the search alone chooses.
            q.recompute_fraction = p.recompute_fraction;
            q.recompute_modules = p.recompute_modules;
            q.placement = p.placement;
            assert_eq!(q, *p, "{settings}");
            let e = myriad_train::estimate(&m, &q, &c);
            assert_eq!(e.step_time_s, x.estimate.step_time_s, "{settings}");
        }
        if settings.contains("false") {
            assert!(r.top.iter().all(|x| !x.plan.tp_comm_overlap));
        }
        if settings.contains("24") {
            assert!(r
                .top
                .iter()
                .all(|x| !x.plan.tp_comm_overlap || x.plan.tp_comm_overlap_sms == 24));
        }
    }
}

/// With multi-token prediction the pipeline splits layers + embedding + MTP + loss slots
/// (`train` accepts e.g. DeepSeek-V3's 61 + 3 = 64 slots over PP 8 × VPP 2): the space's
/// virtual-stage depths divide those slots too (they were those of layers or layers + 2 only,
/// so DeepSeek-V3 got VPP 3, 7, 9... that divide 63, which no pipeline split uses, and no
/// interleaved plan).
#[test]
fn interleaved_depths_follow_the_pipeline_slots_with_mtp() {
    let text = "format: myriad/1\ncluster: {accelerator: h800, count: 2048, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: deepseek-v3}\ntraining: {global_batch: 4096, precision: fp8}\n";
    let (m, c, f) = setup(text);
    assert_eq!(myriad_train::plan::pipeline_slots(&m), 64);
    let space = Space::full(&m);
    assert!(
        space.vpp.contains(&2) && space.vpp.contains(&4),
        "{:?}",
        space.vpp
    );
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size());
    let p = plans
        .iter()
        .find(|p| p.pp == 8 && p.vpp == 2)
        .expect("PP 8 x VPP 2 over the 64 slots");
    assert!(p.embedding_in_pipeline_split);
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let spec = myriad_scenario::TrainingSpec {
        tp: Some(p.tp),
        pp: Some(p.pp),
        cp: Some(p.cp),
        ep: Some(p.ep),
        vpp: Some(p.vpp),
        micro_batch: Some(p.micro_batch as u64),
        ..s.training.clone().unwrap()
    };
    let (q, _) = myriad_train::resolve(&spec, &m, &c, 2048).expect("train accepts it");
    assert!(q.embedding_in_pipeline_split);
    assert_eq!(q.chunk_layers(m.layers), p.chunk_layers(m.layers));
}

/// A first stage that takes the remainder holds at least one transformer layer, as `train`
/// requires of `first_stage_layers` (Megatron-Core refuses 0): 60 layers over PP 16 (15 stages
/// of 4 and none left) used to be offered as `PP16[0/4]`, a plan `train` refuses. Every
/// remainder plan the search offers is one `train` resolves.
#[test]
fn a_first_stage_remainder_holds_a_layer() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 256}\nmodel: {preset: llama3-8b, layers: 60}\ntraining: {global_batch: 256, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let space = Space::full(&m);
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size());
    assert!(
        plans.iter().all(|p| p.pp != 16),
        "60 layers do not split over PP 16"
    );
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let mut edges = 0;
    for p in plans.iter().filter(|p| p.edge_stage_layers.is_some()) {
        let (first, rest) = p.edge_stage_layers.unwrap();
        assert!(first >= 1, "{p:?}");
        let spec = myriad_scenario::TrainingSpec {
            tp: Some(p.tp),
            pp: Some(p.pp),
            cp: Some(p.cp),
            micro_batch: Some(p.micro_batch as u64),
            first_stage_layers: Some(first),
            ..s.training.clone().unwrap()
        };
        let (q, _) = myriad_train::resolve(&spec, &m, &c, 256).expect("train accepts it");
        assert_eq!(q.chunk_layers(m.layers), rest);
        edges += 1;
    }
    assert!(edges > 0); // PP 8: 4 + 7 x 8
}

/// PP ranges up to the pipeline slots, not the layers: DeepSeek-V3's 61 layers with its
/// MTP module, the embedding and the loss are 64 slots, one per stage over PP 64 (`train`
/// accepts it; the space stopped at PP 61).
#[test]
fn pipeline_depths_reach_the_pipeline_slots() {
    let text = "format: myriad/1\ncluster: {accelerator: h800, count: 256, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: deepseek-v3}\ntraining: {global_batch: 1024, precision: fp8}\n";
    let (m, c, f) = setup(text);
    let space = Space::full(&m);
    assert!(space.pp.contains(&64), "{:?}", space.pp);
    let (plans, _) = candidates(&m, &c, &f, &space);
    let p = plans.iter().find(|p| p.pp == 64).expect("a PP 64 plan");
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let spec = myriad_scenario::TrainingSpec {
        tp: Some(p.tp),
        pp: Some(p.pp),
        cp: Some(p.cp),
        ep: Some(p.ep),
        micro_batch: Some(p.micro_batch as u64),
        ..s.training.clone().unwrap()
    };
    let (q, _) = myriad_train::resolve(&spec, &m, &c, 256).expect("train accepts it");
    assert!(q.embedding_in_pipeline_split && p.embedding_in_pipeline_split);
}

/// `training.etp` is kept as `train` keeps it (the search set ETP 1 with EP and TP
/// without, whatever the scenario said): every plan has the scenario's ETP, those whose
/// stage ranks ETP x EP does not divide are rejected with the reason, and each plan is the
/// one `train` resolves.
#[test]
fn searched_plans_keep_the_scenarios_expert_tensor_parallelism() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: qwen3-30b-a3b}\ntraining: {global_batch: 128, precision: bf16, etp: 2}\n";
    let (m, c, f) = setup(text);
    let mut space = Space::full(&m);
    space.micro_batch = vec![1];
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size());
    assert!(!plans.is_empty() && plans.iter().all(|p| p.etp == 2));
    assert!(rej
        .get("etp*ep does not divide a stage's ranks")
        .is_some_and(|n| *n > 0));
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let r = search(&m, &c, &f, &space, 10, &|_, _| {});
    for x in &r.top {
        let p = &x.plan;
        let spec = myriad_scenario::TrainingSpec {
            tp: Some(p.tp),
            pp: Some(p.pp),
            cp: Some(p.cp),
            ep: Some(p.ep),
            vpp: Some(p.vpp),
            micro_batch: Some(p.micro_batch as u64),
            sequence_parallel: Some(p.sequence_parallel),
            recompute: Some(p.recompute),
            zero_stage: Some(p.zero_stage),
            distributed_optimizer: Some(p.distributed_optimizer),
            ..s.training.clone().unwrap()
        };
        let (mut q, _) = myriad_train::resolve(&spec, &m, &c, 64).expect("train accepts it");
        q.recompute_fraction = p.recompute_fraction;
        q.recompute_modules = p.recompute_modules;
        q.placement = p.placement;
        assert_eq!(q, *p);
        assert_eq!(
            myriad_train::estimate(&m, &q, &c).step_time_s,
            x.estimate.step_time_s
        );
    }
}

/// Expert parallelism wider than data parallelism (Megatron-Core's MoE parallel folding,
/// which `train` accepts where EP divides a stage's TP x CP x DP ranks and its groups tile
/// them) is offered: Qwen3-235B-A22B on 256 H100 has EP 32 over TP 2 x DP 16 (PP 8) among
/// its candidates, every configuration is a candidate or rejected with a reason, and each
/// candidate, folded or not, is the plan `train` resolves and estimates the same.
#[test]
fn folded_expert_parallelism_is_searched_as_train_resolves_it() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 256}\nmodel: {preset: qwen3-235b-a22b}\ntraining: {global_batch: 512, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let mut space = Space::full(&m);
    space.tp = vec![1, 2, 4, 8];
    space.sequence_parallel = vec![true];
    space.cp = vec![1, 2];
    space.vpp = vec![1];
    space.micro_batch = vec![1];
    space.recompute = vec![myriad_model::Recompute::Full];
    space.zero_stage = vec![1];
    let (plans, rej) = candidates(&m, &c, &f, &space);
    let rejected: u64 = rej.values().sum();
    assert_eq!(plans.len() as u64 + rejected, space.size(), "{rej:?}");
    assert!(
        plans
            .iter()
            .any(|p| p.ep == 32 && p.tp == 2 && p.dp == 16 && p.pp == 8 && p.ep_folded()),
        "no EP 32 over TP 2 x DP 16"
    );
    let folded = plans.iter().filter(|p| p.ep_folded()).count();
    assert!(folded > 0 && folded < plans.len());
    // EP 16 on TP 8 x PP 32 (DP 1) divides neither DP nor the stage's 8 ranks.
    assert!(rej
        .get("ep divides neither dp nor a stage's ranks")
        .is_some_and(|n| *n > 0));
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    for p in &plans {
        let placement = p
            .placement
            .iter()
            .map(|d| format!("{d:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join("-");
        let spec = myriad_scenario::TrainingSpec {
            tp: Some(p.tp),
            pp: Some(p.pp),
            cp: Some(p.cp),
            ep: Some(p.ep),
            vpp: Some(p.vpp),
            micro_batch: Some(p.micro_batch as u64),
            sequence_parallel: Some(p.sequence_parallel),
            recompute: Some(p.recompute),
            zero_stage: Some(p.zero_stage),
            distributed_optimizer: Some(p.distributed_optimizer),
            placement: Some(placement),
            ..s.training.clone().unwrap()
        };
        let (mut q, _) = myriad_train::resolve(&spec, &m, &c, 256)
            .unwrap_or_else(|e| panic!("train refuses {p:?}: {e:?}"));
        q.recompute_fraction = p.recompute_fraction;
        q.recompute_modules = p.recompute_modules;
        assert_eq!(q, *p);
        let (a, b) = (
            myriad_train::estimate(&m, &q, &c),
            myriad_train::estimate(&m, p, &c),
        );
        assert_eq!(a.step_time_s.to_bits(), b.step_time_s.to_bits(), "{p:?}");
        assert_eq!(a.fits, b.fits);
    }
}

/// A folded EP group that does not tile its stage's ranks (EP 12 over TP 8 x DP 3 would
/// take all 8 TP ranks and then 1.5 DP replicas) is refused by `train`, and the search
/// rejects it with its own reason instead of estimating it.
#[test]
fn folded_expert_parallelism_that_does_not_tile_the_stage_is_rejected() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 48, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: mixtral-8x7b, seq_len: 4096, moe: {experts: 24, top_k: 2, expert_ffn_hidden: 14336, shared_experts: 0}}\ntraining: {global_batch: 48, precision: bf16}\n";
    let (m, c, f) = setup(text);
    let mut space = Space::full(&m);
    space.tp = vec![8];
    space.sequence_parallel = vec![true];
    space.cp = vec![1];
    space.pp = vec![2];
    space.vpp = vec![1];
    space.ep = vec![12, 24];
    space.micro_batch = vec![1];
    space.recompute = vec![myriad_model::Recompute::Full];
    space.zero_stage = vec![1];
    let (plans, rej) = candidates(&m, &c, &f, &space);
    assert_eq!(plans.len() as u64 + rej.values().sum::<u64>(), space.size());
    // EP 24 tiles TP 8 x DP 3; EP 12 does not, in either placement order.
    assert!(
        plans.iter().all(|p| p.ep == 24 && p.ep_folded()),
        "{plans:?}"
    );
    assert!(!plans.is_empty());
    assert_eq!(rej.get("folded ep does not tile a stage's ranks"), Some(&2));
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let spec = myriad_scenario::TrainingSpec {
        tp: Some(8),
        pp: Some(2),
        ep: Some(12),
        ..s.training.clone().unwrap()
    };
    assert!(myriad_train::resolve(&spec, &m, &c, 48).is_err());
}

/// The training block `train` would need to run `p`, on top of the scenario's own.
/// The search's own choices (a block recompute, an offloaded share) where the scenario
/// leaves them open.
fn spec_of(
    base: &myriad_scenario::TrainingSpec,
    m: &myriad_model::Transformer,
    p: &myriad_train::Plan,
) -> myriad_scenario::TrainingSpec {
    let chunk = p.chunk_layers(m.layers) as f64;
    let layers = |f: f64| (f * chunk).round() as u32;
    let block = p.recompute == myriad_model::Recompute::Full && p.recompute_fraction < 1.0;
    myriad_scenario::TrainingSpec {
        recompute_layers: base
            .recompute_layers
            .or(block.then(|| layers(p.recompute_fraction))),
        offload_layers: base
            .offload_layers
            .or((p.offload_fraction > 0.0).then(|| layers(p.offload_fraction))),
        tp: Some(p.tp),
        pp: Some(p.pp),
        dp: Some(p.dp),
        cp: Some(p.cp),
        ep: Some(p.ep),
        etp: Some(p.etp),
        vpp: Some(p.vpp),
        micro_batch: Some(p.micro_batch as u64),
        global_batch: Some(p.global_batch),
        sequence_parallel: Some(p.sequence_parallel),
        recompute: Some(p.recompute),
        zero_stage: Some(p.zero_stage),
        distributed_optimizer: Some(p.distributed_optimizer),
        ..base.clone()
    }
}

/// Settings the scenario fixes that shape a plan (interleaved groups, edge stage layers,
/// block recompute, offloading) are kept by every candidate and by the best plan: each
/// resolves through `train` to the very plan the search estimated. The search used to set
/// `vpp_group` to PP, split the layers its own way, and choose the recomputed and
/// offloaded layers itself.
#[test]
fn searched_plans_keep_the_scenarios_fixed_plan_shape() {
    let h100 = "cluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\n";
    let gb200 = "cluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama3-8b}\n";
    let cases = [
        (h100, "global_batch: 256, vpp_group: 8"),
        (
            h100,
            "global_batch: 256, first_stage_layers: 2, last_stage_layers: 2",
        ),
        (h100, "global_batch: 256, last_stage_layers: 4"),
        (
            h100,
            "global_batch: 256, recompute: full, recompute_layers: 1",
        ),
        (gb200, "global_batch: 288, offload_layers: 1"),
    ];
    for (cluster, training) in cases {
        let text =
            format!("format: myriad/1\n{cluster}training: {{precision: bf16, {training}}}\n");
        let cat = myriad_catalog::catalog();
        let s = myriad_scenario::parse_scenario("t.yaml", &text, cat).unwrap();
        let (m, c, f) = setup(&text);
        let spec = s.training.clone().unwrap();
        let space = Space {
            recompute: vec![myriad_model::Recompute::None, myriad_model::Recompute::Full],
            placements: vec![myriad_scenario::DEFAULT_PLACEMENT],
            ..Space::full(&m)
        };
        let (plans, rej) = candidates(&m, &c, &f, &space);
        assert!(!plans.is_empty(), "{training}: {rej:?}");
        assert_eq!(plans.len() as u64 + rej.values().sum::<u64>(), space.size());
        let r = search(&m, &c, &f, &space, 3, &|_, _| {});
        assert!(!r.top.is_empty(), "{training}");
        for p in plans.iter().chain(r.top.iter().map(|t| &t.plan)) {
            let (q, _) =
                myriad_train::plan::resolve(&spec_of(&spec, &m, p), &m, &c, p.accelerators)
                    .unwrap_or_else(|e| panic!("{training}: {p:?}: {e}"));
            assert_eq!(&q, p, "{training}");
        }
    }
}

/// Offloading on a system without a host memory link: every plan is rejected with that
/// reason (train refuses it), none estimated.
#[test]
fn fixed_offload_without_a_host_link_is_rejected() {
    let (m, c, f) = setup("format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 256, precision: bf16, offload_layers: 1}\n");
    let space = Space::full(&m);
    let (plans, rej) = candidates(&m, &c, &f, &space);
    assert!(plans.is_empty());
    assert_eq!(
        rej.get("offload_layers given: the scale-up system has no host memory link"),
        Some(&space.size())
    );
}

/// With DP 1 the distributed optimizer still shards over the context-parallel ranks
/// (Megatron's DP x CP group): Llama 3 70B at TP 8, CP 2 on 16 H200 holds 8.75e9 weights
/// a rank, whose unsharded state (2 + 4 + 12 bytes each, 157 GB) does not fit in 141 GB,
/// while ZeRO-1 over the two CP ranks (105 GB before activations) does. The search used
/// to treat every ZeRO stage as irrelevant without DP and found no plan.
#[test]
fn zero_shards_over_context_parallelism_without_dp() {
    let (m, c, f) = setup("format: myriad/1\ncluster: {accelerator: h200, count: 16}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {global_batch: 16, precision: bf16}\n");
    let space = Space {
        tp: vec![8],
        sequence_parallel: vec![true],
        cp: vec![2],
        pp: vec![1],
        vpp: vec![1],
        micro_batch: vec![1],
        recompute: vec![myriad_model::Recompute::Full],
        zero_stage: vec![1, 2, 3],
        ..Space::full(&m)
    };
    let (plans, rej) = candidates(&m, &c, &f, &space);
    assert_eq!(plans.len() as u64 + rej.values().sum::<u64>(), space.size());
    assert_eq!(
        plans.iter().map(|p| p.zero_stage).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(plans.iter().all(|p| p.dp == 1 && p.distributed_optimizer));
    let unsharded = myriad_train::Plan {
        zero_stage: 0,
        distributed_optimizer: false,
        ..plans[0].clone()
    };
    assert!(!myriad_train::estimate(&m, &unsharded, &c).fits);
    let r = search(&m, &c, &f, &space, 3, &|_, _| {});
    let best = r.top.first().expect("a plan sharded over CP fits");
    assert!(best.estimate.fits);
    // The fastest of the three, as a brute force over them finds it.
    let brute = plans
        .iter()
        .flat_map(|p| {
            (1..=80).map(move |k| myriad_train::Plan {
                recompute_fraction: k as f64 / 80.0,
                ..p.clone()
            })
        })
        .map(|p| myriad_train::estimate(&m, &p, &c))
        .filter(|e| e.fits)
        .map(|e| e.step_time_s)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best.estimate.step_time_s, brute);
}

/// The plan dimensions the scenario gives (TP, PP, ...) are the search's to choose: it says
/// it overrides them, naming the fields (it replaced them silently), and says nothing
/// when the scenario gives none.
#[test]
fn the_search_names_the_plan_fields_it_overrides() {
    let cat = myriad_catalog::catalog();
    let spec = |training: &str| {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64}}\nmodel: {{preset: llama3-8b}}\ntraining: {training}\n");
        myriad_scenario::parse_scenario("t.yaml", &text, cat)
            .unwrap()
            .training
            .unwrap()
    };
    let given = spec("{tp: 4, pp: 8, vpp: 2, micro_batch: 1, global_batch: 256, precision: bf16, vpp_group: 8, zero_stage: 1}");
    assert_eq!(
        myriad_search::searched_fields(&given),
        vec!["tp", "pp", "vpp", "micro_batch", "zero_stage"]
    );
    assert_eq!(
        myriad_search::override_note(&given).unwrap(),
        "training.tp, pp, vpp, micro_batch, zero_stage: searched over, not kept (the search chooses them; `myriad train` runs the scenario's own plan)"
    );
    assert_eq!(
        myriad_search::override_note(&spec("{global_batch: 256, precision: bf16, vpp_group: 8}")),
        None
    );
}

/// Selective recompute combines with activation offloading (Megatron-Core's fine-grained
/// offloading): Llama 3 70B at 8K context with TP 1, no pipeline and micro-batch 2 on
/// GB200 does not fit with any selective module set alone; with the least share of
/// layers offloaded to the Grace memory it does, and beats full (block) recompute. The
/// search used to offload only plans without recompute, so it offered full recompute.
#[test]
fn gb200_search_offloads_selective_recompute_plans_that_do_not_fit() {
    let text = "format: myriad/1\ncluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {global_batch: 288, precision: fp8}\n";
    let (m, c, f) = setup(text);
    let space = Space {
        tp: vec![1],
        cp: vec![1],
        pp: vec![1],
        vpp: vec![1],
        micro_batch: vec![2],
        recompute: vec![
            myriad_model::Recompute::Selective,
            myriad_model::Recompute::Full,
        ],
        zero_stage: vec![3],
        ..Space::full(&m)
    };
    let r = search(&m, &c, &f, &space, 10, &|_, _| {});
    let best = &r.top[0];
    assert!(best.estimate.fits);
    assert_eq!(best.plan.recompute, myriad_model::Recompute::Selective);
    let share = best.plan.offload_fraction;
    assert!(share > 0.0 && share < 1.0, "{share}");
    // It needs the offload: without it, and with one layer fewer, HBM overflows.
    for less in [0.0, share - 1.0 / 80.0] {
        let e = myriad_train::estimate(
            &m,
            &myriad_train::Plan {
                offload_fraction: less,
                ..best.plan.clone()
            },
            &c,
        );
        assert!(e.memory.total_gib > e.memory.capacity_gib, "{less}");
    }
    // Faster than the fastest full-recompute plan the search lists.
    let full = r
        .top
        .iter()
        .find(|t| t.plan.recompute == myriad_model::Recompute::Full)
        .expect("a full-recompute plan fits");
    assert!(best.estimate.step_time_s < full.estimate.step_time_s);
    // And `train` runs it as the search estimated it.
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("t.yaml", text, cat).unwrap();
    let spec = myriad_scenario::TrainingSpec {
        recompute_modules: Some(best.plan.recompute_modules.iter().collect()),
        ..spec_of(s.training.as_ref().unwrap(), &m, &best.plan)
    };
    let (q, _) = myriad_train::plan::resolve(&spec, &m, &c, 72).unwrap();
    assert_eq!(q, best.plan);
}
