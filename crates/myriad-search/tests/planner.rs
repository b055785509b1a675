//! The planner's front and choice follow from its candidates.
#[test]
fn pareto_front_and_choice_are_consistent() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 512, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, b200], counts: [256, 512, 1024], deadline_days: 20}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    assert_eq!(r.candidates.len(), 6);
    let c = &r.candidates;
    for (i, a) in c.iter().enumerate() {
        let dominated = c.iter().enumerate().any(|(j, b)| {
            j != i
                && b.days.is_some()
                && b.days <= a.days
                && b.capex_usd <= a.capex_usd
                && (b.days < a.days || b.capex_usd < a.capex_usd)
        });
        assert_eq!(
            a.pareto,
            a.days.is_some() && !dominated,
            "{}x{}",
            a.accelerators,
            a.accelerator
        );
        // The deadline is enforced.
        if let Some(d) = a.days {
            assert_eq!(a.violations.is_empty(), d <= 20.0);
        }
    }
    // Chosen: the cheapest candidate that meets the deadline.
    let chosen = &c[r.chosen.expect("some candidate meets 20 days")];
    assert!(c
        .iter()
        .filter(|x| x.violations.is_empty())
        .all(|x| x.capex_usd >= chosen.capex_usd));
    // More of the same accelerator trains faster and costs more.
    let h100: Vec<_> = c.iter().filter(|x| x.accelerator == "h100-sxm").collect();
    assert!(h100
        .windows(2)
        .all(|w| w[1].days < w[0].days && w[1].capex_usd > w[0].capex_usd));
}

#[test]
fn a_missing_token_budget_is_an_error() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let e = myriad_search::planner::plan(&s, cat).unwrap_err();
    assert_eq!(
        e,
        "training.tokens: missing; `myriad plan` needs the token budget"
    );
}

/// Two counts built as the same whole scale-up domains cost the same: the choice under a
/// deadline is the faster of them, never the one the front drops.
#[test]
fn equal_capex_choice_is_the_faster_and_on_the_front() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm], counts: [1020, 1024], deadline_days: 100}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    let c = &r.candidates;
    assert_eq!(c[0].capex_usd, c[1].capex_usd);
    assert!(c[1].days < c[0].days, "{:?} {:?}", c[0].days, c[1].days);
    let chosen = &c[r.chosen.expect("both meet 100 days")];
    assert_eq!(chosen.accelerators, 1024);
    assert!(chosen.pareto);
}

/// A count past the largest cluster (here past what 64 bits round up to whole scale-up
/// domains) is refused by the parser, naming its entry, before any candidate is planned
/// (`plan` used to skip it).
#[test]
fn a_count_beyond_the_largest_cluster_is_an_error_naming_its_entry() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm], counts: [18446744073709551615]}\n";
    let cat = myriad_catalog::catalog();
    let e = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.yaml: planning.counts[0]: 18446744073709551615 must be an accelerator count from 1 to 16777216, the most a cluster holds"
    );
}

/// A count that whole scale-up domains take past the largest cluster is skipped naming
/// `planning.counts`, the field it came from (the build said `cluster.count: 16777224 is
/// more than...`, a field the scenario gives as 1,024).
#[test]
fn a_count_rounded_past_the_largest_cluster_names_planning_counts() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [gb200], counts: [16777216]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    assert!(r.candidates.is_empty());
    assert_eq!(
        r.skipped,
        ["16777216 x gb200: planning.counts[0]: 16777216 rounded up to whole scale-up domains of 72 is more than the 16777216 accelerators supported"]
    );
}

/// The settings every candidate's search takes as given are checked as `train` checks them:
/// fp8-only settings on a bf16 plan, and a CUDA graph without the grouped GEMM, are errors
/// naming the field (they used to be planned with their savings).
#[test]
fn settings_train_refuses_are_errors_in_the_planner() {
    let cat = myriad_catalog::catalog();
    for (training, want) in [
        (
            "{fp8_params: true, tokens: 1.0e12}",
            "training.fp8_params: parameters are stored in fp8 only with fp8 or fp4 training, not bf16",
        ),
        (
            "{precision: bf16, fp8_recipe: blockwise, tokens: 1.0e12}",
            "training.fp8_recipe: ",
        ),
        (
            "{moe_full_graph: true, moe_grouped_kernel: false, tokens: 1.0e12}",
            "training.moe_grouped_kernel: false cannot replay",
        ),
        // The TP overlap's SMs (they used to be ignored: every plan reserved 16).
        (
            "{tp_comm_overlap: false, tp_comm_overlap_sms: 8, tokens: 1.0e12}",
            "training.tp_comm_overlap_sms: applies only when TP communication is overlapped (tp_comm_overlap, which needs TP > 1 and sequence parallelism); leave it out",
        ),
        (
            "{tp_comm_overlap_sms: 132, tokens: 1.0e12}",
            "training.tp_comm_overlap_sms: 132 SMs leave none of the 132 of h100-sxm for the GEMM (candidate accelerator `h100-sxm`)",
        ),
    ] {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64}}\nmodel: {{preset: llama3-8b}}\ntraining: {training}\nplanning: {{accelerators: [h100-sxm], counts: [64]}}\n");
        let s = myriad_scenario::parse_scenario("p.yaml", &text, cat).unwrap();
        let e = myriad_search::planner::plan(&s, cat).unwrap_err();
        assert!(e.starts_with(want), "{training}: {e}");
        if want.contains("leave it out") {
            assert_eq!(e, want);
        }
    }
}

/// The scenario's island is the user's size of a full-bisection island, not a count of the
/// base system's domains: a candidate of another system gets about as many accelerators per
/// island in whole domains of its own system (gb200 candidates of 4,096 and more used to be
/// skipped: "island: 3072 is not a whole number of scale-up domains of 72"), and a cluster
/// smaller than the island is one full-bisection island (it used to lose the island and be
/// oversubscribed at its leaves). Each change is in the candidate's notes.
#[test]
fn the_island_follows_each_candidates_domains_and_size() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 24576, scale_up: hgx-h100, scale_out: {fabric: roce-400g, topology: fat-tree, island: 3072, oversubscription: 7}}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 2048, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, gb200], counts: [2048, 4096, 8192]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.candidates.len(), 6);
    let find = |acc: &str, n: u64| {
        r.candidates
            .iter()
            .find(|c| c.accelerator == acc && c.accelerators == n)
            .unwrap()
    };
    for n in [4096, 8192] {
        let c = find("gb200", n);
        assert_eq!(
            c.notes,
            ["cluster.scale_out.island: 3072 is not a whole number of `gb200-nvl72` domains of 72; islands of 3096 (43 domains)"]
        );
        assert!(c.best.is_some());
    }
    assert!(find("h100-sxm", 4096).notes.is_empty());
    let small = find("h100-sxm", 2048);
    assert_eq!(
        small.notes,
        ["cluster.scale_out.island: 3072 is more than the cluster's 2048 accelerators; one full-bisection island of 2048"]
    );
    // Built as the scenario with one island of the whole cluster: full bisection.
    let mut one = s.clone();
    one.cluster.count = 2048;
    one.cluster.scale_out.island = Some(2048);
    let full = myriad_cluster::build(&one, cat).unwrap();
    assert_eq!(
        small.switches,
        myriad_cluster::report(&full, &one).switches_total
    );
    one.cluster.scale_out.island = None;
    let leaves = myriad_cluster::build(&one, cat).unwrap();
    assert!(small.switches > myriad_cluster::report(&leaves, &one).switches_total);
}

/// A global batch holding more tokens than `training.tokens` is an error naming both fields
/// (it used to be planned as one step of 43,566 days); the default global batch (one
/// sequence per accelerator) beyond the budget leaves that candidate without a time to train.
#[test]
fn one_step_beyond_the_token_budget_is_named() {
    let cat = myriad_catalog::catalog();
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 1099511627776, precision: bf16, tokens: 15.0e12}\nplanning: {accelerators: [h100-sxm], counts: [1024]}\n";
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    assert_eq!(
        myriad_search::planner::plan(&s, cat).unwrap_err(),
        "training.global_batch: one step of 1099511627776 sequences of 8192 tokens is 9007199254740992 tokens, more than the budget training.tokens: 15000000000000 tokens; use a global batch of at most 1831054687 sequences or a larger training.tokens"
    );
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 256}\nmodel: {preset: llama3-8b}\ntraining: {precision: bf16, tokens: 1.0e6}\nplanning: {accelerators: [h100-sxm], counts: [64, 256]}\n";
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    let (small, big) = (&r.candidates[0], &r.candidates[1]);
    assert!(small.days.is_some() && small.violations.is_empty());
    assert!(big.best.is_some());
    assert_eq!(big.days, None);
    assert!(!big.pareto);
    assert_eq!(
        big.violations,
        ["training.global_batch: not given, one sequence per accelerator: one step of 256 sequences of 8192 tokens is 2097152 tokens, more than the budget training.tokens: 1000000 tokens; use a global batch of at most 122 sequences or a larger training.tokens"]
    );
    assert_eq!(r.chosen, Some(0));
}

/// Over several sites every site holds the same whole number of scale-up domains: a count
/// is rounded up to whole domains × sites, with a note (it used to be rounded to whole
/// domains only, and 1,032 H100 or 1,080 GB200 over two sites were skipped: "does not fill
/// whole scale-up domains of 72 (7.5 domains per site)").
#[test]
fn counts_over_several_sites_are_whole_domains_in_every_site() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 32768, scale_up: hgx-h100, scale_out: {fabric: roce-400g, topology: rail-optimized}, sites: 2, dci: {gbps_per_site: 102400, distance_km: 80}}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 1024, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, gb200], counts: [1032, 2048]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.candidates.len(), 4);
    // In the order asked: accelerators, then counts.
    let find = |acc: &str, n: u64| {
        let i = ["h100-sxm", "gb200"]
            .iter()
            .position(|a| *a == acc)
            .unwrap()
            * 2
            + [1032, 2048].iter().position(|&c| c == n).unwrap();
        assert_eq!(r.candidates[i].accelerator, acc);
        &r.candidates[i]
    };
    let h = find("h100-sxm", 1032);
    assert_eq!(h.cluster_accelerators, 1040);
    // No plan divides 1,032 with a global batch of 1,024: the job runs on 1,024 of them.
    assert_eq!(h.accelerators, 1024);
    assert_eq!(
        h.notes,
        ["cluster.sites: 1032 accelerators in whole `hgx-h100` domains of 8 over 2 sites is 1040 (65 domains per site)", "no parallel plan divides 1032 accelerators and global batch 1024; the job runs on 1024 of the 1040 built"]
    );
    // 2,048 H100 are already 128 domains per site.
    let h = find("h100-sxm", 2048);
    assert_eq!(h.cluster_accelerators, 2048);
    assert!(h.notes.is_empty(), "{:?}", h.notes);
    for (n, built, per_site, job) in [(1032, 1152, 8, 1024), (2048, 2160, 15, 2048)] {
        let g = find("gb200", n);
        assert_eq!(g.cluster_accelerators, built);
        assert_eq!(
            g.notes[0],
            format!("cluster.sites: {n} accelerators in whole `gb200-nvl72` domains of 72 over 2 sites is {built} ({per_site} domains per site)")
        );
        assert_eq!(g.accelerators, job);
    }
}

/// A candidate accelerator without the scenario's precision (fp8 on A100) has no plan
/// because of the precision, and says so as `train` does (it said "no parallel plan divides
/// 256 accelerators and global batch 512", which a different global batch would not fix).
#[test]
fn a_candidate_without_the_precision_says_so() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 512, precision: fp8, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, a100-sxm-80gb], counts: [256]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    let a100 = r
        .candidates
        .iter()
        .find(|c| c.accelerator == "a100-sxm-80gb")
        .unwrap();
    assert!(a100.best.is_none() && a100.days.is_none());
    assert_eq!(a100.violations.len(), 1);
    assert!(
        a100.violations[0]
            .starts_with("training.precision: fp8 is not supported by a100-sxm-80gb (it has "),
        "{:?}",
        a100.violations
    );
    let h100 = r
        .candidates
        .iter()
        .find(|c| c.accelerator == "h100-sxm")
        .unwrap();
    assert!(h100.days.is_some() && h100.violations.is_empty());
    assert_eq!(
        r.chosen.map(|i| &r.candidates[i].accelerator),
        Some(&h100.accelerator)
    );
}

/// Time, GPU-hours, energy and its cost follow from the best plan's step time by hand:
/// 1e12 tokens in steps of 512 × 8,192 tokens is 238,419 steps (the last one partial but
/// whole); energy is the facility power (PUE included) over that time, and GPU-hours are
/// every built accelerator's over that time, as the energy is every built one's: 256 GB200
/// are built as four NVL72 racks, 288 GPUs (the GPU-hours counted the job's 256, 11% less
/// than the accelerators held, powered and paid for).
#[test]
fn time_energy_and_cost_follow_from_the_step_time() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, datacenter: {pue: 1.5, usd_per_kwh: 0.1}}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 512, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm, gb200], counts: [256, 512]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    assert_eq!(r.candidates.len(), 4);
    for c in &r.candidates {
        let b = c.best.as_ref().expect("a plan");
        let secs = 238_419.0 * b.estimate.step_time_s;
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
        assert!(close(c.days.unwrap(), secs / 86_400.0), "{}", c.accelerator);
        assert!(close(
            c.gpu_hours.unwrap(),
            secs / 3600.0 * c.cluster_accelerators as f64
        ));
        if c.accelerator == "gb200" {
            // 256 and 512 GPUs in whole racks of 72: 288 and 576 held.
            assert_eq!(c.cluster_accelerators, c.accelerators.next_multiple_of(72));
            assert!(c.cluster_accelerators > c.accelerators);
        }
        assert!(close(
            c.energy_mwh.unwrap(),
            c.facility_power_mw * secs / 3600.0
        ));
        assert!(close(
            c.energy_cost_usd.unwrap(),
            c.energy_mwh.unwrap() * 1000.0 * 0.1
        ));
        // The facility power is the IT power times the PUE.
        let mut sc = s.clone();
        sc.cluster.accelerator = c.accelerator.clone();
        sc.cluster.count = c.cluster_accelerators;
        if c.accelerator != "h100-sxm" {
            sc.cluster.scale_up = None;
            sc.cluster.scale_out.fabric = None;
        }
        let rep = myriad_cluster::report(&myriad_cluster::build(&sc, cat).unwrap(), &sc);
        assert!(
            close(c.facility_power_mw, rep.it_power_mw * 1.5),
            "{}",
            c.accelerator
        );
    }
}

/// A violated constraint reads as one: the value and its limit are printed with the same
/// decimals, as many as tell them apart (a capex of 10.92 M over a budget of 10.9 M read
/// "capex 11 M USD > budget 11 M", and 0.533 MW over 0.53 MW read "0.5 MW > limit 0.53 MW").
#[test]
fn a_violation_shows_the_value_above_its_limit() {
    let cat = myriad_catalog::catalog();
    let run = |planning: &str| {
        let text = format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 256}}\nmodel: {{preset: llama3-8b}}\ntraining: {{global_batch: 512, precision: bf16, tokens: 1.0e12}}\nplanning: {{accelerators: [h100-sxm], counts: [256], {planning}}}\n");
        let s = myriad_scenario::parse_scenario("p.yaml", &text, cat).unwrap();
        myriad_search::planner::plan(&s, cat)
            .unwrap()
            .candidates
            .remove(0)
    };
    let c = run("budget_usd: 1.0e12");
    assert!(c.violations.is_empty());
    let (capex, mw, days) = (c.capex_usd, c.facility_power_mw, c.days.unwrap());
    assert!((capex - 10_917_600.0).abs() < 1.0, "{capex}");
    let c = run("budget_usd: 10.9e6");
    assert_eq!(c.violations, ["capex 10.92 M USD > budget 10.90 M"]);
    // The power and the deadline, just below the candidate's.
    let limit = (mw * 100.0).floor() / 100.0;
    let c = run(&format!("max_mw: {limit}"));
    let (v, l) = c.violations[0].split_once(" MW > limit ").unwrap();
    assert!(
        v.parse::<f64>().unwrap() > l.trim_end_matches(" MW").parse::<f64>().unwrap(),
        "{:?}",
        c.violations
    );
    let dl = days - 1e-4;
    let c = run(&format!("deadline_days: {dl}"));
    let (v, l) = c.violations[0].split_once(" days > deadline ").unwrap();
    assert!(
        v.parse::<f64>().unwrap() > l.parse::<f64>().unwrap(),
        "{:?}",
        c.violations
    );
}

/// A count or an accelerator given twice was planned twice: two identical rows, both on
/// the Pareto front (neither strictly dominates the other). Now an error naming the entry:
/// the count from the parser (a scenario check), the accelerator (which only the catalog
/// resolves to one id) from the planner.
#[test]
fn a_candidate_given_twice_is_an_error() {
    let cat = myriad_catalog::catalog();
    let text = |planning: &str| {
        format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 256}}\nmodel: {{preset: llama3-8b}}\ntraining: {{global_batch: 512, precision: bf16, tokens: 1.0e12}}\nplanning: {planning}\n")
    };
    let e = myriad_scenario::parse_scenario(
        "p.yaml",
        &text("{accelerators: [h100-sxm], counts: [256, 512, 256]}"),
        cat,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.yaml: planning.counts[2]: 256 is given twice (also [0]); give each count once"
    );
    let planning = "{accelerators: [h100-sxm, b200, h100-sxm], counts: [256]}";
    let s = myriad_scenario::parse_scenario("p.yaml", &text(planning), cat).unwrap();
    match myriad_search::planner::plan(&s, cat) {
        Ok(r) => panic!("{planning}: {} candidates", r.candidates.len()),
        Err(e) => assert_eq!(
            e,
            "planning.accelerators[2]: `h100-sxm` is given twice (also [0]); give each accelerator once"
        ),
    }
}

/// Guards against the planner running only the exact count asked: 1,031 H100 (built as
/// 1,032, 129 HGX) with a global batch of 512 has no parallel plan (1,031 is prime, and
/// 1,032 = 8 x 129 puts 129 data-parallel ranks on 512 sequences), and the candidate was
/// dropped with "no parallel plan divides". A real job runs on the largest subset that
/// divides: 1,024 of the 1,032, the same plan and step time as a 1,024 candidate.
#[test]
fn a_count_no_plan_divides_runs_on_the_largest_subset_that_does() {
    let text = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 512, precision: bf16, tokens: 1.0e12}\nplanning: {accelerators: [h100-sxm], counts: [1024, 1031]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    let full = &r.candidates[0];
    let odd = &r.candidates[1];
    assert_eq!(odd.cluster_accelerators, 1032);
    assert_eq!(odd.accelerators, 1024, "{:?}", odd.violations);
    assert!(odd.violations.is_empty(), "{:?}", odd.violations);
    assert_eq!(
        odd.notes,
        ["no parallel plan divides 1031 accelerators and global batch 512; the job runs on 1024 of the 1032 built"]
    );
    let (a, b) = (full.best.as_ref().unwrap(), odd.best.as_ref().unwrap());
    assert_eq!(a.estimate.step_time_s, b.estimate.step_time_s);
    assert_eq!(full.days, odd.days);
    // The idle node still costs: one more HGX server than the 1,024, its capital, its power
    // and its GPU-hours (held for the run as the energy counts it).
    assert!(odd.capex_usd > full.capex_usd);
    assert!(odd.facility_power_mw > full.facility_power_mw);
    let ratio = odd.gpu_hours.unwrap() / full.gpu_hours.unwrap();
    assert!((ratio - 1032.0 / 1024.0).abs() < 1e-12, "{ratio}");
}

/// `offload_layers` needs a host memory link: a candidate system without one says so
/// (it read "no parallel plan divides"), and a GB200 candidate keeps the stated offload.
#[test]
fn a_candidate_without_a_host_link_for_offloading_says_so() {
    let text = "format: myriad/1\ncluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 576, precision: bf16, tokens: 1.0e12, offload_layers: 1}\nplanning: {accelerators: [gb200, h100-sxm], counts: [72]}\n";
    let cat = myriad_catalog::catalog();
    let s = myriad_scenario::parse_scenario("p.yaml", text, cat).unwrap();
    let r = myriad_search::planner::plan(&s, cat).unwrap();
    let h100 = r
        .candidates
        .iter()
        .find(|c| c.accelerator == "h100-sxm")
        .unwrap();
    assert!(h100.best.is_none());
    assert_eq!(h100.violations.len(), 1);
    assert!(
        h100.violations[0].starts_with("training.offload_layers: the scale-up system `"),
        "{:?}",
        h100.violations
    );
    let gb200 = r
        .candidates
        .iter()
        .find(|c| c.accelerator == "gb200")
        .unwrap();
    let best = gb200.best.as_ref().unwrap();
    let chunk = best.plan.chunk_layers(32) as f64;
    assert_eq!(best.plan.offload_fraction, 1.0 / chunk);
}
