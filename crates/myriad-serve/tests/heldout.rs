//! Serving measurements kept aside (`validation/serving-heldout.json`, in this repository):
//! published results that are not rows of `../shared/validation/serving-public.json` —
//! AMD MI300X under vLLM, MLPerf Server (latency-bound) runs, H100/H200/B200/GB200 columns of
//! TensorRT-LLM's perf overview that the public file does not use. Nothing in the model was
//! tuned on them. Issue 8's bar for them is the public file's: mean absolute error under 15%
//! and no row worse than 40%, error = predicted / measured − 1 on output tokens/s per GPU.

fn report() -> myriad_serve::validate::Report {
    report_of("serving-heldout.json")
}

#[test]
fn held_out_rows_meet_the_kept_aside_bar() {
    let r = report();
    for c in &r.cases {
        eprintln!(
            "{:<66} pred {:>9.1} meas {:>9.1} err {:>+6.1}%",
            c.id,
            c.predicted.unwrap_or(f64::NAN),
            c.measured.unwrap_or(f64::NAN),
            100.0 * c.error.unwrap_or(f64::NAN)
        );
    }
    // Every row is predicted and scored (17 rows; none needs a missing feature).
    let unscored: Vec<&str> = r
        .cases
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| c.id.as_str())
        .collect();
    assert!(unscored.is_empty(), "not scored: {unscored:?}");
    let s = &r.summary;
    assert!(s.count >= 17, "rows scored: {}", s.count);
    // Met when written: MAE 13.3%, worst 37.0% (Llama 3.3 70B FP8, H100 TP2, 2048/2048);
    // 10.5% before Server rows were scored at the highest rate meeting their latency limits;
    // 8.8%, worst +29.4% (MI300X Llama 2 70B Server), since the 1.0-era trtllm-bench rows
    // run the FP8 KV cache that release's mapping gives FP8/NVFP4 checkpoints (Llama 3.3
    // 70B FP8 on H100 and H200: -21...-40% -> +2...+4%).
    assert!(s.mae < 0.15, "mean absolute error {:.1}%", 100.0 * s.mae);
    assert!(
        s.worst_abs_error < 0.40,
        "{} at {:.1}%",
        s.worst_id,
        100.0 * s.worst_abs_error
    );
}

fn report_of(file: &str) -> myriad_serve::validate::Report {
    let path = format!("{}/../../validation/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the held-out file is in the repository");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("the held-out file parses");
    myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap()
}

/// MLPerf Inference v5.0/v5.1 rows (`validation/serving-heldout-mlperf5.json`): GB300 and
/// GB200 NVL72, B200, MI300X; Offline, Server and the latency-bound Interactive scenario.
/// Every row is predicted: rows that leave `isl` unset take their dataset's mean prompt
/// length (`validate::dataset_mean_input`) and say which; the Llama 3.1 and DeepSeek-R1
/// rows run their dataset's own per-sample lengths (`myriad_serve::datasets`).
#[test]
fn mlperf5_rows_are_all_scored_with_their_dataset_prompt_length() {
    all_scored_with_per_sample_lengths(
        "serving-heldout-mlperf5.json",
        23,
        &["405b", "deepseek-r1", "3.1-8b"],
    );
}

/// Every row of `file` (`count` of them) is scored, and those whose id names one of
/// `per_sample` run their dataset's own per-sample (input, output) lengths.
fn all_scored_with_per_sample_lengths(file: &str, count: usize, per_sample: &[&str]) {
    let r = report_of(file);
    assert_eq!(r.cases.len(), count);
    for c in &r.cases {
        assert!(c.error.is_some(), "{}: {:?}", c.id, c.notes);
        if per_sample.iter().any(|k| c.id.contains(k)) {
            assert!(
                c.notes
                    .iter()
                    .any(|n| n.starts_with("lengths: drawn from the ")
                        && n.contains("per-sample (input, output) pairs")),
                "{}: {:?}",
                c.id,
                c.notes
            );
        }
    }
}

/// The dataset means the validator fills in are those computed from the per-sample token
/// counts of the official MLCommons files (see `dataset_mean_input`).
#[test]
fn mlperf_dataset_mean_prompt_lengths() {
    use myriad_serve::validate::dataset_mean_input;
    let isl = |ds: &str| dataset_mean_input(ds, "").map(|x| x.0);
    let near = |x: Option<f64>, want: f64| x.is_some_and(|v| (v - want).abs() < 0.5);
    assert!(near(isl("mlperf llama 3.1 405b instruct dataset"), 9428.6));
    assert!(near(
        isl("mlperf deepseek-r1 dataset, 4,388 samples"),
        803.8
    ));
    assert!(near(
        isl("mlperf llama 3.1 8b summarisation dataset (cnn/dailymail)"),
        870.7
    ));
    assert_eq!(isl("mlperf openorca subset"), Some(295.0));
    assert_eq!(isl("sharegpt"), None);
    // The newer sets only when the dataset is named as MLPerf's.
    assert_eq!(isl("llama 3.1 405b eval prompts"), None);
}

/// Ratchet on the MLPerf v5.x rows (23 scored), just above the figures measured: MAE
/// 45.7%, median 13.7%, worst +312.6% (GB300 NVL72 DeepSeek-R1 Server); 44.2%, worst
/// +295.6%, once a rank that runs a prompt bounds the all-to-all as its busiest sender;
/// 46.5%, worst +346.3%, once the two GB300 DeepSeek-R1 rows run the ADP balance their run
/// script enables (TensorRT-LLM `timeout_iters` 6): holding prompts makes the model's
/// mixed steps rarer, and the model already underprices them (docs/serving.md). Drawing the
/// datasets' own per-sample lengths (instead of every request at the mean) brought the three
/// DeepSeek-R1 Offline rows from +99..+141% to -3..+13%: with equal lengths the eight
/// attention-DP ranks of an instance prefill in the same iterations, which real, long-tailed
/// requests never do. The DeepSeek-R1 Server rows stay over-predicted (+277%, +313%; the
/// GB300 one was +246% at mean lengths): at their ~134 running sequences per rank the runs
/// report a 61-66 ms TPOT where the model's step is ~21 ms (docs/serving.md). The
/// Interactive rows are over-predicted +13% to +72% (MI300X +65% with vLLM V0's
/// prefill-first scheduling, +151% without). 50.1%, median 24.3%, worst +373.7%, once
/// decode attention over an fp8 KV cache on Blackwell runs at the fp8 peak, as measured in
/// a GB200 decode trace (tests/iteration_trace.rs): the DeepSeek-R1 rows moved up 13-27
/// points (Offline B200 -4% -> +9%, GB200 +10% -> +25%, GB300 +12% -> +26%) because the
/// memory-bound kernels and the all-to-all the trace also measured are still under-priced.
/// 46.6%, median 17.9%, worst +362.9%, once the small memory-bound kernels on Blackwell
/// run at the bandwidth that trace measured for them (`efficiency.hbm_small_kernels`).
/// 44.4%, median 15.8%, worst +361.4%, once TensorRT-LLM pads every attention-DP rank's
/// NVFP4 MoE input to the busiest rank's tokens (`Framework::adp_pads_fp4_moe`): a step
/// where one rank prefills costs the experts eight prompts (GB200 Server +272% -> +233%,
/// Offline +21% -> +14%; B200 Offline +5% -> 0%). 46.3%, median 21.1%, worst +361.4%, once
/// each Offline row simulates the samples its LoadGen run issued (`max(min_query_count,
/// 1.1 × min duration × expected qps)`, up to 400,000) instead of 24,576 or three batches'
/// worth: the ramp-up and the tail of DeepSeek-R1's 32k-token outputs had hidden that the
/// model's attention-DP-8 DeepSeek-R1 steps are too fast (B200 Offline -0% -> +18%, GB200
/// +14% -> +28%, GB300 +22% -> +38%; the 405B rows moved the other way, -18% -> -15% and
/// -12% -> -6%). 40.2%, median 21.1%, worst +306.2%, once a Server row's arrivals also run
/// to LoadGen's minimum query count (219,400 queries, an hour at 60/s, for the GB300
/// DeepSeek-R1 run; 600 s held only 36,000, much of it ramp-up and drain): GB300 Server
/// +361% -> +306%, GB200 +233% -> +148%. 39.6%, worst +301.6%, once the decode attention
/// waits for the busiest attention-DP rank's context (`busiest_context_factor`: DeepSeek-R1
/// Server +302%/+144%, Offline +17..+37%). 42.6%, median 23.7%, worst +301.6%, once the
/// four Llama 3.1 405B rows that state TP2 × PP2 run two pipeline stages (`Parallel::pp`)
/// instead of being folded into TP4: prefill loses the TP4 all-reduce and the replicated
/// norms, so the three Offline rows went from −15..−6% to +11..+24% (the GB300 row, TP2
/// without PP, was already +30%) and the v5.0 GB200 Server row from +29% to +80%. 43.3%,
/// median 23.7%, worst +309.3%, once TensorRT-LLM's attention-DP 8 MoE moves its tokens by
/// the all-gather and reduce-scatter it runs (EP 8 is not wider than top-8, so no
/// all-to-all): the five DeepSeek-R1 rows rose 1-8 points. 41.2%, worst +289%, once NVFP4
/// experts pay their activation-quantisation kernels. 39.6%, median 21.1%, worst +284%,
/// once an instance's prefill compute runs at the pace of its slowest chip and
/// momentarily slowest clock. 35.5%, worst +252%, once MLPerf's DeepSeek-R1-FP4 runs its
/// attention projections in bf16 (its hf_quant_config excludes them from NVFP4). 35.7%
/// once GB300's fp4 GEMMs run at their measured 0.56 of the fp4 peak (`gemm_fp4`) rather
/// than at the fp8 fraction, 0.55 before and 0.65 measured since: its two Llama 3.1 405B
/// rows +1 point (+28.7%, +53.2%). 37.0% once MI300X's fp8 GEMMs run at their measured 0.43
/// of the peak (hipBLASLt on Azure ND MI300X v5; 0.41 by a rule before): its four rows,
/// already over-predicted, 4-20 points higher (Interactive +64.7% -> +84.2%). 37.3% once
/// GB300's bf16 GEMMs run at least at B300's measured rate (0.61 of its peak, was 0.55 by a
/// rule): its two DeepSeek-R1 rows, over-predicted, 2-7 points higher. 31.8%, median
/// 15.7%, worst +157.8%, once the attention-side GEMM rows, the LM head and the CUDA graph
/// follow the busiest attention-DP rank's own tokens and decodes (`BusiestRank::tokens`):
/// a step in which some ranks prefill waits for the rank holding the most prompt tokens
/// (GB300 DeepSeek-R1 Server +257% -> +158%, Offline +22% -> +6%; GB200 Server +106% ->
/// +92%, Offline +8% -> -2%; B200 Offline -1% -> -10%). Part of that rank's surplus is the
/// simulation's placement (the rank with the most free KV room), which balances prompt
/// tokens less than TensorRT-LLM's `balance_requests_across_ranks`. 32.1%, worst
/// +163.2%, once each rank packs the prompts it holds into its own token budget (its
/// busiest rank no longer runs more prompt tokens than its budget: the DeepSeek-R1 rows
/// 0.2-5 points higher). 33.6%, worst +193.5%, once requests are placed on attention-DP
/// ranks by TensorRT-LLM's own rule (`DpPlacement::FewestTokens`: each rank capped at an
/// even share of the active requests, longest prompt first to the rank with the fewest
/// active prompt tokens) instead of on the rank with the most free KV room, each rank
/// running at most its share of `max_batch`: the framework's rule, kept though it moves the
/// rows away (GB300 Server +163% -> +194%, Offline +8% -> +3%; GB200 Server +93% -> +93%,
/// Offline -2% -> -5%; B200 Offline -9% -> -13%). The earlier guess that the old placement
/// gave the busiest rank the surplus that the DeepSeek-R1 rows lack does not hold. 33.4%,
/// worst +189.6%, once the ADP balance waits for a prompt on every rank as
/// `_balance_adp_requests` does (GB300 Server +194% -> +190%). 34.7%, worst +219.2%, once
/// its count runs in every iteration, prompts waiting or not (a new prompt waits out what
/// is left of the timeout, not all of it), and holds started chunks too: the GB300 Server
/// row +190% -> +219% (shorter holds, a higher rate within the TTFT limit).
#[test]
fn mlperf5_held_out_rows_do_not_regress() {
    let r = report_of("serving-heldout-mlperf5.json");
    let s = &r.summary;
    assert_eq!(s.count, 23);
    assert!(s.mae < 0.35, "MAE {:.3}", s.mae);
    assert!(
        s.median_abs_error < 0.16,
        "median {:.3}",
        s.median_abs_error
    );
    assert!(
        s.worst_abs_error < 2.2,
        "{} {:.3}",
        s.worst_id,
        s.worst_abs_error
    );
}

#[test]
#[ignore = "kept-aside bar not met on MLPerf v5.x rows (MAE 34.7%, worst +219%: DeepSeek-R1 Server rows)"]
fn mlperf5_held_out_rows_meet_the_kept_aside_bar() {
    let s = report_of("serving-heldout-mlperf5.json").summary;
    assert!(s.mae < 0.15 && s.worst_abs_error < 0.40, "{s:?}");
}

/// MLPerf Inference v6.0 rows (`validation/serving-heldout-mlperf6.json`, built by
/// `validation/tools/mlperf6_heldout.py` from the raw LoadGen logs and NVIDIA's and AMD's
/// harness configs): B300 ×8, GB300 and GB200 NVL72, MI355X ×8; Llama 2 70B, Llama 3.1 405B,
/// DeepSeek-R1; Offline, Server and Interactive. Kept aside, never tuned on. Every row is
/// predicted, and the Llama 3.1 and DeepSeek-R1 rows run their dataset's per-sample lengths.
#[test]
fn mlperf6_rows_are_all_scored_with_their_dataset_prompt_length() {
    all_scored_with_per_sample_lengths(
        "serving-heldout-mlperf6.json",
        15,
        &["405b", "deepseek-r1"],
    );
}

/// Ratchet on the MLPerf v6.0 rows (15 scored), just above the figures measured: MAE 18.4%,
/// median 5.3%, worst +90.8% (GB300 NVL72 DeepSeek-R1 Server), since B300's GEMM rates are
/// NVIDIA's measured ones (the B300 Llama rows −2.9..+5.1%; MAE 20.7% when added) and
/// GB300's bf16 rate is bound by B300's (18.6% before). The
/// issue's kept-aside bar (MAE under 15%, no row worse than 40%) is NOT met: the three
/// DeepSeek-R1 Server rows are over-predicted +47..+91% (the runs held 270-320 requests per
/// attention-DP rank at a 56-61 ms mean TPOT, where the model's step is about 10% shorter
/// and the closed loop of arrivals amplifies it; docs/serving.md), the MI355X Llama 2 70B
/// Interactive row +25.6%; the DeepSeek-R1 Offline rows are under-predicted 12-22%. The
/// nine Llama 2 70B / 405B Offline and Server rows are within -3..+5%. MAE 13.0%, median
/// 5.3%, worst +42.1%, once the attention-side GEMM rows, the LM head and the CUDA graph
/// follow the busiest attention-DP rank's own tokens and decodes (`BusiestRank::tokens`):
/// the DeepSeek-R1 Server rows +47..+91% -> +16..+42%, the Offline rows -13..-22% ->
/// -23..-32% (the Server rows gain most where the simulation's placement leaves one rank
/// more prompt tokens than TensorRT-LLM's balancing would; the bar's 40% still not met).
/// 13.7%, worst +48.6%, once each rank packs the prompts it holds into its own token
/// budget (the DeepSeek-R1 rows 0.5-6.5 points higher). 15.9%, worst +62.8%, once requests
/// are placed on attention-DP ranks by TensorRT-LLM's own rule (`DpPlacement::FewestTokens`,
/// each rank within its share of `max_batch`) instead of on the rank with the most free KV
/// room: the framework's rule, kept though every DeepSeek-R1 row moves away (Server
/// +19/+49/+22% -> +29/+63/+25%, Offline -23/-32/-21% -> -26/-34/-24%), so the placement
/// was not where their error came from. 15.3%, worst +64.7%, once the ADP balance waits
/// for a prompt on every rank (and every rank decoding) as `_balance_adp_requests` does,
/// instead of for as many waiting prompts as ranks: the B300 and GB200 Offline rows
/// -26/-24% -> -19/-18%, the GB300 Server row +63% -> +65%.
#[test]
fn mlperf6_held_out_rows_do_not_regress() {
    let r = report_of("serving-heldout-mlperf6.json");
    let s = &r.summary;
    assert_eq!(s.count, 15);
    assert!(s.mae < 0.16, "MAE {:.3}", s.mae);
    assert!(
        s.median_abs_error < 0.07,
        "median {:.3}",
        s.median_abs_error
    );
    assert!(
        s.worst_abs_error < 0.66,
        "{} {:.3}",
        s.worst_id,
        s.worst_abs_error
    );
}

#[test]
#[ignore = "kept-aside bar not met on MLPerf v6.0 rows (MAE 15.3%, worst +64.7%: DeepSeek-R1 Server rows)"]
fn mlperf6_held_out_rows_meet_the_kept_aside_bar() {
    let s = report_of("serving-heldout-mlperf6.json").summary;
    assert!(s.mae < 0.15 && s.worst_abs_error < 0.40, "{s:?}");
}

/// The columns of TensorRT-LLM's performance overview at the commit the public file
/// transcribes that it leaves out (`validation/serving-heldout-perf-overview.json`, built by
/// `validation/tools/trtllm_perf_overview_heldout.py`): the other GPUs of its models and
/// Qwen3 30B-A3B, 88 rows, each copying the public row of its model for what the doc states
/// per model. Measured when added: MAE 29.4%, median 24.8%, worst +87.4% (DeepSeek-R1 H200
/// DEP8 FP8 1000/1000, like the DEP8 B200 blog rows); 28.4% since Llama 4 Maverick's chunked
/// attention is modelled; 27.3% since gpt-oss rows naming MXFP4 run it under an FP4 label
/// too. Llama 4 Maverick on B200/GB200 DEP4 is predicted 27-54% slow and the long-output Qwen3 rows 24-49% slow (the KV cache runs
/// out: the rows leave its dtype to the checkpoint, whose quantisation config was not
/// read), gpt-oss-120b mostly over-predicted (−25…+84%). 19.1%, median 14.1%, once the
/// Llama 3.3 70B FP8, Maverick NVFP4 and Qwen3 30B-A3B NVFP4 checkpoints carry an FP8 cache: under trtllm-bench's
/// full-length admission a 16-bit one cannot reach their published figures even at peak
/// bandwidth (`a_16_bit_cache_cannot_reach_three_published_figures`). Found while reading
/// these rows, so for those three checkpoints this file is no longer an independent check of
/// the cache dtype; the Qwen3-235B and Maverick FP8 checkpoints, whose figures a 16-bit cache can
/// reach, keep it. 18.6%, median 13.7%, worst +77.1% (gpt-oss-120b H100 DEP4), once the 1000/1000 rows run the 3000
/// requests the doc's dataset table lists for 1K/1K (the drain of a single wave weighs more).
/// 18.2%, median 12.8%, worst +77.9% (the same row) once a chunked layer's query reads the
/// part of its own chunk its context has reached rather than half a chunk, and a CUDA
/// graph's padding rows read no cache (Maverick 8192/1024 on GB200 −19.2% → −3.9%; the
/// gpt-oss row +77.1% → +77.9%, its padding rows no longer reading a 128-token window).
#[test]
fn perf_overview_held_out_columns_do_not_regress() {
    let r = report_of("serving-heldout-perf-overview.json");
    let s = &r.summary;
    assert_eq!(s.count, 88);
    assert!(r.cases.iter().all(|c| c.error.is_some()));
    assert!(s.mae < 0.1825, "MAE {:.3}", s.mae);
    assert!(
        s.worst_abs_error < 0.780,
        "{} {:.3}",
        s.worst_id,
        s.worst_abs_error
    );
}

/// A performance-overview row that leaves its request count unset runs the count the doc's
/// dataset table lists for its lengths (1000/1000 is the table's 1024/1024 entry, 3000
/// requests), the same as a row that states it; a row from another source keeps the
/// framework default.
#[test]
fn perf_overview_rows_run_the_request_count_the_doc_lists() {
    let path = format!(
        "{}/../../validation/serving-heldout-perf-overview.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let row = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "trtllm-perfoverview-perGPU-deepseek-r1-h200-dep8-fp8-1000-1000")
        .unwrap()
        .clone();
    assert!(row["serving"]["num_requests"].is_null());
    let cat = myriad_catalog::catalog();
    let predict =
        |r: &serde_json::Value| myriad_serve::validate::predict_row(cat, r, &mut Vec::new());
    let unset = predict(&row);
    assert!(
        unset.notes.iter().any(|n| n.starts_with("requests: 3000")),
        "{:?}",
        unset.notes
    );
    let mut stated = row.clone();
    stated["serving"]["num_requests"] = 3000.into();
    assert_eq!(predict(&stated).predicted, unset.predicted);
    // Three max batches' worth (the default for a trtllm-bench row of unknown source) is a
    // different run: the count matters.
    let mut other = row.clone();
    other["source"]["path"] = "docs/source/blogs/some-blog.md".into();
    let default = predict(&other);
    assert!(!default.notes.iter().any(|n| n.starts_with("requests:")));
    assert_ne!(default.predicted, unset.predicted);
}

#[test]
#[ignore = "kept-aside bar not met on the perf-overview columns the public file leaves out (MAE 18.0%, worst +77.7%: gpt-oss-120b on 4 H100, DEP4)"]
fn perf_overview_held_out_columns_meet_the_kept_aside_bar() {
    let s = report_of("serving-heldout-perf-overview.json").summary;
    assert!(s.mae < 0.15 && s.worst_abs_error < 0.40, "{s:?}");
}

/// gpt-oss ships MXFP4 experts and bf16 attention: a row that names MXFP4 runs that
/// checkpoint whether the perf overview's column says FP8 (Hopper) or FP4 (Blackwell), and a
/// row that names an NVFP4 checkpoint keeps it.
#[test]
fn gpt_oss_rows_naming_mxfp4_run_the_upstream_checkpoint() {
    let r = report_of("serving-heldout-perf-overview.json");
    for id in [
        "trtllm-perfoverview-perGPU-gpt-oss-20b-b200-tp1-fp4-1000-1000",
        "trtllm-perfoverview-perGPU-gpt-oss-120b-h100-dep4-fp8-1000-1000",
    ] {
        let c = r.cases.iter().find(|c| c.id == id).expect("row present");
        assert!(
            c.notes
                .iter()
                .any(|n| n.starts_with("weights: MXFP4 experts + bf16 attention")),
            "{id}: {:?}",
            c.notes
        );
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("weights bf16 experts fp4")),
            "{id}: {:?}",
            c.notes
        );
    }
    // The same row naming an NVFP4 checkpoint instead is read as NVFP4.
    let path = format!(
        "{}/../../validation/serving-heldout-perf-overview.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["cases"].as_array_mut().unwrap();
    cases.retain(|c| c["id"] == "trtllm-perfoverview-perGPU-gpt-oss-20b-b200-tp1-fp4-1000-1000");
    cases[0]["serving"]["weight_precision"] =
        "nvfp4 (a ModelOpt NVFP4 gpt-oss checkpoint, not MXFP4)".into();
    let r = myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap();
    assert!(!r.cases[0]
        .notes
        .iter()
        .any(|n| n.starts_with("weights: MXFP4")));
}

/// The H200 max-throughput result of the TensorRT-LLM DeepSeek-R1 best-practice blog
/// (`validation/serving-heldout-trtllm-dsr1-h200.json`), kept aside beside the public
/// file's two B200 max-throughput rows of the same blog: attention DP 8 + EP 8, ISL 1K /
/// OSL 2K, a full batch per rank. The model over-predicts all three by about the same
/// factor (H200 +60.8%, B200 +63.4% and +71.0% when added), so the gap is the framework
/// configuration's (the same attention-DP deployments of TensorRT-LLM's later performance
/// overview, with ADP balance, sit within −28…+33%), not the B200's. A ratchet on the
/// figure; the kept-aside bar (40%) is not met.
#[test]
fn trtllm_blog_h200_max_throughput_is_over_predicted_like_its_b200_rows() {
    let r = report_of("serving-heldout-trtllm-dsr1-h200.json");
    assert_eq!(r.cases.len(), 1);
    let e = r.cases[0].error.expect("scored");
    assert!(e > 0.0 && e < 0.62, "{e}");
    let public = {
        let path = format!(
            "{}/../../../shared/validation/serving-public.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap()
    };
    for id in [
        "trtllm-dsr1-bestperf-b200-max-tput-r1-0528-fp8kv-dep8",
        "trtllm-dsr1-bestperf-b200-max-tput-bf16kv-dep8-1k2k",
    ] {
        let b = public
            .cases
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.error)
            .unwrap();
        // Within 15 points of each other: one factor, not a per-GPU one.
        assert!((b - e).abs() < 0.15, "{id}: {b} against {e}");
    }
}

/// The validator builds a row's cluster on the scale-up system built for its accelerator
/// (`hgx-h200` for the H200 row, ring all-reduce at 0.82 of NVLink, not `hgx-h100`, which
/// also lists the H200) and says so in the row's notes.
#[test]
fn rows_name_the_system_built_for_their_accelerator() {
    let r = report_of("serving-heldout-trtllm-dsr1-h200.json");
    let n = &r.cases[0].notes;
    assert!(
        n.iter()
            .any(|n| n.starts_with("scale_up: hgx-h200 (built for h200")),
        "{n:?}"
    );
}

/// No validated row, kept aside or public, has a prediction above its own deployment's
/// decode memory roofline (`InstanceModel::decode_roofline`): the iteration model and the
/// bound agree on what a step must read.
#[test]
fn no_prediction_beats_its_roofline() {
    let public = {
        let path = format!(
            "{}/../../../shared/validation/serving-public.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text =
            std::fs::read_to_string(&path).expect("the public file is beside the repository");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        myriad_serve::validate::validate(myriad_catalog::catalog(), &doc).unwrap()
    };
    let kept = [
        "serving-heldout.json",
        "serving-heldout-mlperf5.json",
        "serving-heldout-mlperf6.json",
        "serving-heldout-perf-overview.json",
        "serving-heldout-trtllm-dsr1-h200.json",
    ]
    .map(report_of);
    for r in std::iter::once(&public).chain(kept.iter()) {
        for c in &r.cases {
            assert!(
                !c.notes
                    .iter()
                    .any(|n| n.starts_with(myriad_serve::validate::ABOVE_ROOFLINE)),
                "{}: {:?}",
                c.id,
                c.notes
            );
        }
    }
}

/// TensorRT-LLM's ADP-balance blog (`validation/serving-heldout-trtllm-adp.json`):
/// DeepSeek-V3 NVFP4 on 8 GB200, attention DP 8 + EP 8, a closed loop of 5,120 clients over
/// 16,000 requests of MLPerf DeepSeek-R1-like lengths, without and with the ADP balance
/// context wait. All three rows are scored as closed loops, and the balance raises the
/// predicted throughput, as it raised the measured. Measured 25,664 → 33,499 output
/// tokens/s (1.31×); the model's gain is 1.11× (3,412 → 3,776 per GPU, session 38): it
/// prices an iteration in which some ranks prefill while others decode below what the
/// run paid (docs/serving.md). Ratchet: MAE 9.3% at session 40 (+6.4%, −9.8%, −11.9%: the
/// full strategy's `batching_wait_iters` 10 modelled since then costs it 0.4%, where the
/// blog measured +1.9%); 9.2% at session 38. 13.2% (−2.2%, −17.9%, −19.5%) since the
/// attention-side GEMM rows follow the busiest rank's own tokens (`BusiestRank::tokens`):
/// an iteration with prompts now waits for the rank holding the most prompt tokens, where
/// the mean prompted rank was priced before (mixed iterations 72 → 90 ms, 82 → 183 ms,
/// 101 → 214 ms). 12.5% (−1.4%, −17.4%, −18.6%) once each rank packs the prompts it holds
/// into its own token budget. 14.3% (−4.0%, −19.1%, −19.7%; gain 1.09× -> 1.10×) once
/// requests are placed by TensorRT-LLM's own rule (`DpPlacement::FewestTokens`, from
/// `_balance_requests_across_ranks`) instead of on the rank with the most free KV room,
/// each rank within its share of `max_batch` (512 here): with 5,120 clients on 4,096 slots
/// a new request can only go to a rank whose slot has just freed, so the rule cannot spread
/// the prompts, and the rows move away; kept, as it is the framework's. The model's
/// missing balance gain is not in the placement. 13.7% (−4.0%, −17.6%, −19.7%; gain 1.10×
/// -> 1.12×) once the context wait holds prompts until every rank has one of its own, as
/// `_balance_adp_requests` counts them, not until as many prompts wait as there are ranks.
/// 13.0% (−4.0%, −16.6%, −18.6%; gain 1.12× -> 1.13×) once its count runs in every
/// iteration, prompts waiting or not, and started chunks are held too.
#[test]
fn adp_balance_blog_rows_run_as_closed_loops_and_balance_helps() {
    let r = report_of("serving-heldout-trtllm-adp.json");
    assert_eq!(r.cases.len(), 3);
    for c in &r.cases {
        assert!(c.error.is_some(), "{}: not scored: {:?}", c.id, c.notes);
        assert!(
            c.notes
                .iter()
                .any(|n| n.starts_with("clients: 5120 in a closed loop")),
            "{}: {:?}",
            c.id,
            c.notes
        );
    }
    let p = |suffix: &str| {
        r.cases
            .iter()
            .find(|c| c.id.ends_with(suffix))
            .and_then(|c| c.predicted)
            .unwrap()
    };
    let gain = p("context-wait") / p("baseline");
    assert!(gain > 1.02 && gain < 1.31, "predicted balance gain {gain}");
    assert!(r.summary.mae < 0.145, "MAE {}", r.summary.mae);
}

/// Azure's MLPerf Inference v5.1 Llama 2 70B Offline run on 18 ND GB300 v6 VMs
/// (`validation/serving-heldout-azure-gb300.json`, read from the raw LoadGen summaries; an
/// unofficial submission of NVIDIA's harness): 15,291 output tokens/s per GB300, NVFP4 TP1.
/// It states no mean output, so the row's own run gives it (tokens/s over samples/s, 272.7).
/// Predicted +4.0% when added, with GB300's fp4 GEMMs at their measured 0.56 of the peak
/// (Azure's cuBLASLt runs, the catalog's `gemm_fp4` source; +3% at the fp8 fraction 0.55
/// assumed before): within the kept-aside bar's 40% by far, and held to 8%.
#[test]
fn azure_gb300_llama2_70b_offline_is_predicted_within_eight_percent() {
    let r = report_of("serving-heldout-azure-gb300.json");
    assert_eq!(r.summary.count, 1, "the row is scored");
    let c = &r.cases[0];
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("mean output of the performance run")),
        "{:?}",
        c.notes
    );
    let e = c.error.unwrap();
    assert!(e.abs() < 0.08, "error {:+.1}%", 100.0 * e);
}
