//! End-to-end: the `myriad` binary on the built-in examples, as a user runs it.
use std::process::Command;

fn myriad(args: &[&str]) -> (i32, String, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new(env!("CARGO_BIN_EXE_myriad"))
        .args(args)
        .current_dir(root)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = myriad(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn cluster_json_has_the_documented_keys_and_superpod_counts() {
    let v = json(&["cluster", "examples/dgx-superpod-h100.yaml", "--json"]);
    for k in [
        "accelerators",
        "scale_up_domains",
        "switches",
        "switches_total",
        "transceivers",
        "cables",
        "racks",
        "it_power_mw",
        "facility_power_mw",
        "capex_usd",
        "peak_pflops",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["accelerators"], 1024);
    assert_eq!(v["scale_up_domains"], 128);
    assert_eq!(v["switches"]["leaf"], 32);
    assert_eq!(v["switches"]["spine"], 16);
    assert_eq!(v["switches_total"], 48);
    // 1,024 H100 × 989.4 dense bf16 TFLOP/s.
    let bf16 = v["peak_pflops"]["bf16"].as_f64().unwrap();
    assert!((bf16 - 1024.0 * 989.4 / 1000.0).abs() < 0.5, "{bf16}");
}

/// Every key of `myriad cluster --json` is documented in docs/cluster.md (it was documented
/// nowhere), and the scale-out bandwidth, GB/s under a `gbps` name beside Gb/s line rates,
/// has a key that says its unit.
#[test]
fn cluster_json_keys_are_all_documented_with_an_unambiguous_bandwidth() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/cluster.md"
    ))
    .expect("docs/cluster.md");
    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    // Maps keyed by tier or precision name hold no further keys.
                    if k != "switches" && k != "peak_pflops" {
                        keys(x, out);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    for f in ["examples/dgx-superpod-h100.yaml", "examples/two-site.yaml"] {
        let v = json(&["cluster", f, "--json"]);
        let mut ks = vec![];
        keys(&v, &mut ks);
        for k in ks {
            // A whole word: not part of a longer key (`cables` in `optical_cables`).
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            let found = doc.match_indices(k.as_str()).any(|(i, _)| {
                !doc[..i].chars().next_back().is_some_and(ident)
                    && !doc[i + k.len()..].chars().next().is_some_and(ident)
            });
            assert!(found, "{f}: `{k}` is not in docs/cluster.md");
        }
        let n = &v["network"];
        assert_eq!(
            n["gbytes_per_s_per_accelerator"], n["gbps_per_accelerator"],
            "{f}"
        );
    }
    // 8 × 400 Gb/s NICs per 8-GPU node: 50 GB/s per GPU.
    let v = json(&["cluster", "examples/dgx-superpod-h100.yaml", "--json"]);
    assert_eq!(v["network"]["gbytes_per_s_per_accelerator"], 50.0);
}

/// A plan without recompute was labelled `None`, which reads as a missing value; the plan
/// table's `MW` column is facility power and now says so.
#[test]
fn plan_labels_spell_no_recompute_and_the_power_column_says_facility() {
    let (code, out, err) = myriad(&["search", "examples/dgx-superpod-h100.yaml", "--top", "3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" mb4 no-recompute SP "), "{out}");
    assert!(!out.contains(" None "), "{out}");
    let (code, out, err) = myriad(&["plan", "examples/plan-llama3-70b.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| facility MW "), "{out}");
    assert!(!out.contains("| MW "), "{out}");
}

#[test]
fn every_example_builds() {
    for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            let (code, _, err) = myriad(&["cluster", p.to_str().unwrap()]);
            assert_eq!(code, 0, "{}: {err}", p.display());
        }
    }
}

#[test]
fn train_json_has_the_documented_keys() {
    let v = json(&["train", "examples/dgx-superpod-h100.yaml", "--json"]);
    for k in [
        "step_time_s",
        "mfu",
        "tokens_per_s",
        "memory_gib_per_accelerator",
        "fits",
        "breakdown",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let b = &v["breakdown"];
    let sum: f64 = b
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((sum / v["step_time_s"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert!(v["time_to_train"]["days"].as_f64().unwrap() > 0.0);
}

#[test]
fn validate_json_has_the_documented_shape() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/training-public.json"
    );
    if std::fs::metadata(path).is_err() {
        return;
    }
    let v = json(&["validate", path, "--json"]);
    let c = &v["cases"][0];
    for k in [
        "id",
        "predicted_step_time_s",
        "measured_step_time_s",
        "error",
    ] {
        assert!(c.get(k).is_some(), "case lacks {k}");
    }
    for k in [
        "count",
        "mae",
        "median_abs_error",
        "worst_abs_error",
        "worst_id",
    ] {
        assert!(v["summary"].get(k).is_some(), "summary lacks {k}");
    }
    assert_eq!(v["summary"]["count"], 105);
}

/// `validate --case` explains one case: the same prediction as the table, the settings
/// the validator filled, the plan and the step breakdown whose parts add up to the total;
/// an id no case contains is an error that names it.
#[test]
fn validate_case_explains_one_case() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/training-heldout-mbridge.json"
    );
    let id = "mb-25.09-deepseekv3-dgx-h100-1024gpu-fp8";
    let (code, out, err) = myriad(&["validate", path, "--case", id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(id), "{out}");
    let v = json(&["validate", path, "--json"]);
    let case = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap();
    let predicted = case["predicted_step_time_s"].as_f64().unwrap();
    assert!(
        out.contains(&format!("predicted {predicted:.3} s")),
        "{predicted}: {out}"
    );
    assert!(
        out.contains("filled ep_dispatcher: deepep (not given; Megatron-Bridge v0.1.0rc4"),
        "{out}"
    );
    assert!(out.contains("plan: TP 2 · PP 8 (VPP 4)"), "{out}");
    // The breakdown's rows sum to its total.
    let rows: Vec<f64> = out
        .lines()
        .filter(|l| l.starts_with("| ") && l.ends_with('|') && l.contains('%'))
        .filter_map(|l| l.split('|').nth(2)?.trim().parse().ok())
        .collect();
    let (total, parts) = rows.split_last().unwrap();
    let sum: f64 = parts.iter().sum();
    assert!((sum - total).abs() < 1e-3, "{parts:?} {total}");
    assert!((total - predicted).abs() < 1e-3, "{total} {predicted}");
    let (code, _, err) = myriad(&["validate", path, "--case", "no-such-case"]);
    assert_ne!(code, 0);
    assert!(err.contains("no case id contains `no-such-case`"), "{err}");
}

/// `serve --validate FILE --case ID` explains the matching rows: the prediction and the
/// measurement (the same figures as the JSON report), then every filled setting, one a line.
#[test]
fn serve_validate_case_explains_a_row() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/validation/serving-public.json"
    );
    if std::fs::metadata(path).is_err() {
        return;
    }
    let id = "trtllm-dsr1-bestperf-b200-max-tput-r1-0528-fp8kv-dep8";
    let (code, out, err) = myriad(&["serve", "--validate", path, "--case", id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(id), "{out}");
    let v = json(&["serve", "--validate", path, "--json"]);
    let row = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap();
    let predicted = row["predicted"].as_f64().unwrap();
    assert!(
        out.contains(&format!("predicted {predicted:.0} output tokens/s")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("  iterations: ")),
        "{out}"
    );
    let (code, _, err) = myriad(&["serve", "--validate", path, "--case", "no-such-row"]);
    assert_ne!(code, 0);
    assert!(err.contains("no row id contains `no-such-row`"), "{err}");
}

#[test]
fn search_and_plan_json() {
    let v = json(&[
        "search",
        "examples/dgx-superpod-h100.yaml",
        "--top",
        "3",
        "--json",
    ]);
    for k in ["evaluated", "feasible", "seconds", "best", "top"] {
        assert!(v.get(k).is_some(), "search lacks {k}");
    }
    assert!(v["best"]["step_time_s"].as_f64().unwrap() > 0.0);
    assert_eq!(v["top"].as_array().unwrap().len(), 3);
    let p = json(&["plan", "examples/plan-llama3-70b.yaml", "--json"]);
    assert!(p["chosen"].is_object());
}

/// "fits: yes (X GiB of N)" rounded the capacity to whole GiB, so it could print less
/// capacity than it needed; both now have one decimal.
#[test]
fn train_prints_memory_needed_and_capacity_at_the_same_precision() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-fits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nofit = dir.join("nofit.yaml");
    std::fs::write(
        &nofit,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-405b}\ntraining: {global_batch: 8}\n",
    )
    .unwrap();
    let one_decimal = |t: &str| {
        let t = t.trim_end_matches(')');
        t.split_once('.')
            .is_some_and(|(a, b)| !a.is_empty() && b.len() == 1 && t.parse::<f64>().is_ok())
    };
    for (f, prefix) in [
        ("examples/dgx-superpod-h100.yaml", "fits: yes ("),
        (nofit.to_str().unwrap(), "fits: NO — does not fit: "),
    ] {
        let (code, out, err) = myriad(&["train", f]);
        assert_eq!(code, 0, "{err}");
        let line = out
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{f}: no `{prefix}` line:\n{out}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let gib = words.iter().position(|w| *w == "GiB").unwrap();
        let (needed, capacity) = (
            words[gib - 1].trim_start_matches('('),
            *words.last().unwrap(),
        );
        assert!(one_decimal(needed) && one_decimal(capacity), "{f}: {line}");
    }
}

/// The plan table's recompute labels are lowercase, in the scenario's own spelling: they
/// mixed `Full2%`, `Selective(core_attn)` and `no-recompute`.
#[test]
fn search_recompute_labels_are_lowercase_in_the_scenarios_spelling() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-labels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("labels.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: gb200, count: 100008, scale_out: {fabric: roce-800g}}\nmodel: {preset: llama3-405b}\ntraining: {global_batch: 16668, precision: fp8}\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&["search", f.to_str().unwrap(), "--top", "5"]);
    assert_eq!(code, 0, "{err}");
    for label in [
        " mb1 no-recompute ",
        " mb1 full 2% ",
        " mb1 selective(core_attn) ",
        " mb1 selective(core_attn+layernorm) ",
    ] {
        assert!(out.contains(label), "{label}: {out}");
    }
    assert!(!out.contains("Full") && !out.contains("Selective"), "{out}");
}

/// No plan fitting is an answer, as `train`'s "fits: NO" and `plan`'s unmet constraints
/// are: `search` exits 0 in both modes (text mode used to exit 2, `--json` 0 with
/// `"best": null`).
#[test]
fn search_with_no_fitting_plan_exits_0_in_both_modes() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-nofit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("nofit.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-405b}\ntraining: {global_batch: 8}\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let (code, out, err) = myriad(&["search", f]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l == "no parallel plan fits in memory on this cluster"),
        "{out}"
    );
    assert!(out.contains("does not fit in memory"), "{out}");
    let v = json(&["search", f, "--json"]);
    assert!(v["best"].is_null());
    assert_eq!(v["feasible"], 0);
    // `train` on the same scenario: an estimate that does not fit, status 0 too.
    let t = json(&["train", f, "--json"]);
    assert_eq!(t["fits"], false);
}

#[test]
fn collective_reaches_the_nvls_plateau_on_one_dgx() {
    // Measured on a DGX H100: 480 GB/s bus bandwidth at 8-16 GiB (collective-public.json).
    let v = json(&[
        "collective",
        "examples/dgx-h100-node.yaml",
        "--op",
        "all-reduce",
        "--bytes",
        "8GiB",
        "--json",
    ]);
    let bus = v["busbw_gbps"].as_f64().unwrap();
    assert!((bus / 480.0 - 1.0).abs() < 0.15, "{bus}");
}

/// The collective JSON names its format and shape, gives sizes as whole bytes, and the
/// table spells the algorithm as the JSON does (it printed `Nvls` where the JSON has `nvls`).
#[test]
fn collective_json_has_a_format_integer_bytes_and_the_table_its_algorithm_names() {
    let base = [
        "collective",
        "examples/dgx-h100-node.yaml",
        "--op",
        "all-reduce",
    ];
    let one = json(&[&base[..], &["--bytes", "0.1KB", "--json"]].concat());
    assert_eq!(one["format"], "myriad-collective/1");
    assert_eq!(one["shape"], "point");
    assert!(one["bytes"].is_u64(), "{}", one["bytes"]);
    assert_eq!(one["bytes"], 100);
    let sweep = json(&[&base[..], &["--sweep", "1KiB..1GiB", "--json"]].concat());
    assert_eq!(sweep["format"], "myriad-collective/1");
    assert_eq!(sweep["shape"], "sweep");
    let points = sweep["points"].as_array().unwrap();
    assert!(points.iter().all(|p| p["bytes"].is_u64()));
    let (code, out, err) = myriad(&[&base[..], &["--sweep", "1KiB..1GiB"]].concat());
    assert_eq!(code, 0, "{err}");
    let algos: Vec<&str> = points
        .iter()
        .map(|p| p["algorithm"].as_str().unwrap())
        .collect();
    assert!(algos.contains(&"nvls"), "{algos:?}");
    for a in algos {
        assert!(
            out.contains(&format!("| {a} ")),
            "`{a}` not in the table:\n{out}"
        );
    }
    assert!(!out.contains("Nvls") && !out.contains("Ring"), "{out}");
    // Larger than a float holds as an exact integer: refused, naming the flag.
    let (code, _, err) = myriad(&[&base[..], &["--bytes", "1e30B"]].concat());
    assert_eq!(code, 2);
    assert!(err.contains("--bytes: `1e30B` is more than 8 PiB"), "{err}");
}

#[test]
fn mi300x_all_reduce_follows_rccl_measured_on_eight_gpus() {
    // RCCL 2.22.3 all_reduce_perf (ring, in place) on the 8 MI300X of an Azure ND MI300X v5
    // VM (egmsft/AI-benchmarking-guide Azure_Results/ND_MI300X_v5_results.md): bus
    // bandwidth at 256 MiB .. 8 GiB. The 8 GiB point sets the catalog's xGMI
    // collective_efficiency (0.71); the rest of the curve is a check of the ring's shape.
    let measured = [302.80, 308.89, 313.92, 315.06, 314.85, 316.82];
    let dir = std::env::temp_dir().join(format!("myriad-cli-mi300x-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("mi300x-8.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: mi300x, count: 8}\n",
    )
    .unwrap();
    let v = json(&[
        "collective",
        f.to_str().unwrap(),
        "--op",
        "all-reduce",
        "--sweep",
        "256MiB..8GiB",
        "--json",
    ]);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), measured.len());
    for (p, m) in points.iter().zip(measured) {
        let bus = p["busbw_gbps"].as_f64().unwrap();
        assert_eq!(p["algorithm"], "ring");
        assert!(
            (bus / m - 1.0).abs() < 0.04,
            "{} B: {bus:.1} against {m}",
            p["bytes"]
        );
    }
}

#[test]
fn bad_input_exits_2_with_file_and_field() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 1024, scale_out: {tiers: 5}}\n",
    )
    .unwrap();
    let (code, _, err) = myriad(&["cluster", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad.yaml: cluster.scale_out.tiers: 5 is more than the 4 supported"),
        "{err}"
    );
    let (code, _, err) = myriad(&["train", "examples/no-such-file.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("no-such-file.yaml: cannot read"), "{err}");
}

#[test]
fn out_of_range_training_values_are_errors_not_panics() {
    // Found by mutating the examples' fields: a micro-batch beyond u32 used to wrap to 0
    // (division by zero in the plan), and `search` did not check training.accelerators
    // against the cluster.
    let dir = std::env::temp_dir().join(format!("myriad-cli-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nmodel: {preset: llama3-8b}\n";
    for (training, field) in [
        (
            "{micro_batch: 1099511627776}",
            "training.micro_batch: 1099511627776 is more than",
        ),
        (
            "{accelerators: 1099511627776}",
            "training.accelerators: 1099511627776 is more than cluster.count 64",
        ),
        (
            "{moe_full_graph: true, moe_grouped_kernel: false}",
            "training.moe_grouped_kernel: false cannot replay in a full-iteration CUDA graph",
        ),
        // `search` used to take these as given and rank bf16 plans with fp8-only savings.
        (
            "{fp8_params: true}",
            "training.fp8_params: parameters are stored in fp8 only with fp8 or fp4 training, not bf16",
        ),
        (
            "{precision: bf16, fp8_dispatch: true}",
            "training.fp8_dispatch: tokens are dispatched in fp8 only with fp8 or fp4 training, not bf16",
        ),
    ] {
        let f = dir.join("range.yaml");
        std::fs::write(&f, format!("{base}training: {training}\n")).unwrap();
        for cmd in ["train", "search"] {
            let (code, _, err) = myriad(&[cmd, f.to_str().unwrap()]);
            assert_eq!(code, 2, "{cmd} {training}: {err}");
            assert!(err.contains(field), "{cmd} {training}: {err}");
        }
    }
}

#[test]
fn out_of_range_validation_rows_fail_with_the_field() {
    // Found by mutating the public files' rows: a zero micro-batch or EP in a training case
    // divided by zero, and 1e30 serving instances ran for ever.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/validation/");
    let dir = std::env::temp_dir().join(format!("myriad-cli-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{root}{f}")).unwrap()).unwrap()
    };
    let mut t = read("training-public.json");
    let mut case = t["cases"][0].clone();
    case["training"]["micro_batch"] = 0.into();
    t["cases"] = serde_json::json!([case]);
    let f = dir.join("train.json");
    std::fs::write(&f, t.to_string()).unwrap();
    let v = json(&["validate", f.to_str().unwrap(), "--json"]);
    let out = v.to_string();
    assert!(
        out.contains("training.micro_batch: must be at least 1, got 0"),
        "{out}"
    );

    let mut s = read("serving-public.json");
    let mut row = s["cases"][1].clone();
    row["serving"]["instances"] = serde_json::json!(1e30);
    s["cases"] = serde_json::json!([row]);
    let f = dir.join("serve.json");
    std::fs::write(&f, s.to_string()).unwrap();
    let (_, out, err) = myriad(&["serve", "--validate", f.to_str().unwrap(), "--json"]);
    assert!(
        (out.clone() + &err)
            .contains("serving.instances: 1000000000000000000000000000000 is not a whole number"),
        "{out}{err}"
    );
}

#[test]
fn flow_backend_agrees_with_the_analytical_model_on_an_idle_fabric() {
    // DP group of the SuperPOD example on a non-blocking fat-tree: no congestion, so the
    // flow simulation and the analytical ring must agree closely.
    let args = |b: &'static str| {
        vec![
            "collective",
            "examples/dgx-superpod-h100.yaml",
            "--op",
            "all-reduce",
            "--bytes",
            "1GiB",
            "--group",
            "dp",
            "--algorithm",
            "ring",
            "--backend",
            b,
            "--json",
        ]
    };
    let a = json(&args("analytical"));
    let f = json(&args("flow"));
    let (ta, tf) = (a["time_s"].as_f64().unwrap(), f["time_s"].as_f64().unwrap());
    assert!((tf / ta - 1.0).abs() < 0.10, "flow {tf} vs analytical {ta}");
}

/// Guards `myriad collective` on an uneven explicit group (`--group 0-8` on 8-GPU DGX
/// nodes: 8 ranks in one node, 1 in the next). Both backends report the 9 ranks asked for
/// (the analytical one said 16, the smallest symmetric group holding them), both time the
/// ring over them with the protocol chosen for it (the flow backend once kept the
/// hierarchical algorithm's protocol, or the 16-rank ring's), so time never falls as the
/// message grows (flow: 237 µs at 2 MiB, 213 µs at 4 MiB), and the two agree closely; an
/// op the model cannot time on the uneven group says what it timed instead.
#[test]
fn uneven_group_is_reported_as_asked_and_monotone_on_both_backends() {
    let args = |b: &'static str, alg: &'static str| {
        vec![
            "collective",
            "examples/dgx-superpod-h100.yaml",
            "--op",
            "all-reduce",
            "--sweep",
            "64KiB..32MiB",
            "--group",
            "0-8",
            "--algorithm",
            alg,
            "--backend",
            b,
            "--json",
        ]
    };
    for alg in ["auto", "ring"] {
        let a = json(&args("analytical", alg));
        let f = json(&args("flow", alg));
        assert_eq!(a["group_size"], 9, "{alg}");
        assert_eq!(f["group_size"], 9, "{alg}");
        assert!(
            a.get("timed_as").is_none(),
            "{alg}: the ring is timed exactly"
        );
        let times = |v: &serde_json::Value| -> Vec<f64> {
            v["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["time_s"].as_f64().unwrap())
                .collect()
        };
        let (ta, tf) = (times(&a), times(&f));
        for (name, t) in [("analytical", &ta), ("flow", &tf)] {
            assert!(
                t.windows(2).all(|w| w[1] >= w[0]),
                "{alg} {name}: time falls as the size grows: {t:?}"
            );
        }
        // Auto picks NCCL's tree here (the lone rank's NIC carries S, not the ring's
        // 1.78 S); the analytical tree keeps its 0.9 bandwidth factor, which the flow
        // backend does not apply, so the tree's band is wider than the ring's.
        let band = if alg == "auto" { 0.11 } else { 0.05 };
        for (x, y) in ta.iter().zip(&tf) {
            assert!(
                (y / x - 1.0).abs() < band,
                "{alg}: flow {y} vs analytical {x}"
            );
        }
    }
    let a2a = json(&[
        "collective",
        "examples/dgx-superpod-h100.yaml",
        "--op",
        "all-to-all",
        "--bytes",
        "1MiB",
        "--group",
        "0-8",
        "--json",
    ]);
    assert_eq!(a2a["group_size"], 9);
    assert_eq!(a2a["timed_as"]["group_size"], 16);
    let (code, out, err) = myriad(&[
        "collective",
        "examples/dgx-superpod-h100.yaml",
        "--op",
        "all-to-all",
        "--bytes",
        "1MiB",
        "--group",
        "0-8",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("a group of 9"), "{out}");
    assert!(out.contains("16 ranks (8 × 2)"), "{out}");
}

#[test]
fn train_flow_backend_times_every_collective_of_the_step() {
    let a = json(&["train", "examples/dgx-superpod-h100.yaml", "--json"]);
    let f = json(&[
        "train",
        "examples/dgx-superpod-h100.yaml",
        "--backend",
        "flow",
        "--json",
    ]);
    let flow = &f["flow"];
    assert_eq!(flow["backend"], "flow");
    let ops: Vec<&str> = flow["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    // TP (all-gather, reduce-scatter), PP send-recv, DP reduce-scatter and all-gather.
    for op in ["all-gather", "reduce-scatter", "send-recv"] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    let (ta, tf) = (
        a["step_time_s"].as_f64().unwrap(),
        f["step_time_s"].as_f64().unwrap(),
    );
    assert_eq!(flow["analytical"]["step_time_s"].as_f64().unwrap(), ta);
    // Non-blocking fabric, no faults: the simulated step is the analytical one within 3%.
    assert!((tf / ta - 1.0).abs() < 0.03, "flow {tf} vs analytical {ta}");
    // The table names each collective as `myriad collective` and the JSON spell it
    // (`DP reduce-scatter (ring)`, `send-recv x …`), not Debug-cased (`ReduceScatter (Ring)`).
    let (code, out, err) = myriad(&[
        "train",
        "examples/dgx-superpod-h100.yaml",
        "--backend",
        "flow",
    ]);
    assert_eq!(code, 0, "{err}");
    for c in flow["collectives"].as_array().unwrap() {
        let row = format!(
            " {} ({}) ",
            c["op"].as_str().unwrap(),
            c["algorithm"].as_str().unwrap()
        );
        assert!(out.contains(&row), "`{row}` not in the table:\n{out}");
        for b in c["background"].as_array().unwrap() {
            assert!(b.as_str().unwrap().starts_with("send-recv x "), "{b}");
        }
    }
    for debug in [
        "ReduceScatter",
        "AllGather",
        "SendRecv",
        "(Ring)",
        "(Nvls)",
        "(Tree)",
    ] {
        assert!(!out.contains(debug), "{debug} in:\n{out}");
    }

    // A dead scale-up domain leaves part of the DP group unreachable: a clear error.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/dgx-superpod-h100.yaml"
    ))
    .unwrap()
    .replace(
        "  datacenter:",
        "  faults:\n    - {at_s: 0.0, domain: 3}\n  datacenter:",
    );
    let path = std::env::temp_dir().join(format!("myriad-flow-fault-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let (code, _, err) = myriad(&["train", path.to_str().unwrap(), "--backend", "flow"]);
    std::fs::remove_file(&path).ok();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("flow backend") && err.contains("no route"),
        "{err}"
    );
}

#[test]
fn serve_example_reports_throughput_latency_and_goodput() {
    let v = json(&[
        "serve",
        "examples/serve-llama3-70b-h100.yaml",
        "--requests",
        "3000",
        "--json",
    ]);
    let r = &v["result"];
    assert_eq!(r["completed"].as_u64(), Some(3000));
    let out = r["output_tokens_per_s_per_accelerator"].as_f64().unwrap();
    assert!(out > 100.0 && out < 5000.0, "{out}");
    for k in ["ttft", "tpot", "latency"] {
        for q in ["p50", "p90", "p99"] {
            assert!(r[k][q].as_f64().unwrap() > 0.0, "{k}.{q}");
        }
    }
    assert!(r["ttft"]["p99"].as_f64() >= r["ttft"]["p50"].as_f64());
    assert!(v["accelerators_for_target_rate"].as_u64().unwrap() >= 8);
    // Same seed, same bytes; the text form names the percentiles.
    let again = json(&[
        "serve",
        "examples/serve-llama3-70b-h100.yaml",
        "--requests",
        "3000",
        "--json",
    ]);
    assert_eq!(v, again);
    // MLPerf's DeepSeek-R1 requests on a DEP8 DGX B200 (the Offline run measured 4,172
    // output tokens/s per GPU with its model's shorter outputs).
    let r1 = json(&[
        "serve",
        "examples/serve-deepseek-r1-b200-mlperf.yaml",
        "--json",
    ]);
    let out = r1["result"]["output_tokens_per_s_per_accelerator"]
        .as_f64()
        .unwrap();
    assert!(out > 3000.0 && out < 6500.0, "{out}");
    // The simulation never beats its deployment's memory roofline.
    let roof = r1["decode_memory_roofline_output_tokens_per_s_per_accelerator"]
        .as_f64()
        .unwrap();
    assert!(out < roof, "{out} vs roofline {roof}");
    assert!(
        r1["notes"].to_string().contains("MLPerf DeepSeek-R1"),
        "{}",
        r1["notes"]
    );
    let (code, text, err) = myriad(&["serve", "examples/serve-deepseek-v3-disagg.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("TTFT") && text.contains("TPOT"), "{text}");
}

#[test]
fn serve_validate_json_has_cases_and_summary() {
    let v = json(&[
        "serve",
        "--validate",
        "../shared/validation/serving-public.json",
        "--json",
    ]);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 84);
    for c in cases {
        for k in ["id", "predicted", "measured", "error"] {
            assert!(c.get(k).is_some(), "case lacks {k}");
        }
    }
    let s = &v["summary"];
    for k in [
        "count",
        "mae",
        "median_abs_error",
        "worst_abs_error",
        "worst_id",
    ] {
        assert!(s.get(k).is_some(), "summary lacks {k}");
    }
    assert!(s["count"].as_u64().unwrap() >= 81);
    // A file it has never seen, with an unknown key: a warning, not an error.
    let dir = std::env::temp_dir().join("myriad-serve-cli-test");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("one.json");
    std::fs::write(
        &f,
        r#"{"format":"myriad-measurements/1","rows":[{"id":"x","group":"g",
        "hardware":{"accelerator":"h100-sxm","count":8},
        "model":{"layers":80,"hidden":8192,"ffn_hidden":28672,"heads":64,"kv_heads":8,"vocab":128256,"gated_mlp":true},
        "serving":{"framework":"vLLM","weight_precision":"fp8","tp":8,"isl":1000,"osl":1000,"scenario":"offline","colour":"blue"},
        "measured":{"output_tokens_per_s_per_gpu":1000}}]}"#,
    )
    .unwrap();
    let (code, out, err) = myriad(&["serve", "--validate", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("serving.colour"), "{err}");
    assert!(out.contains("| x "), "{out}");
}

#[test]
fn serve_bad_input_names_the_field() {
    let dir = std::env::temp_dir().join("myriad-serve-cli-test");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-70b}\nserving:\n  input: {mean: 100}\n  output: {mean: 100}\n  slo: {ttft_ms: 0}\n",
    )
    .unwrap();
    let (code, _, err) = myriad(&["serve", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("serving.slo.ttft_ms"), "{err}");
    // More requests than a simulation takes (a billion would need some 70 GB): the key, or
    // the flag, and the bound.
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-70b}\nserving:\n  requests: 1000000000\n",
    )
    .unwrap();
    let (code, _, err) = myriad(&["serve", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("serving.requests: 1000000000 is more than the 10000000 a simulation takes"),
        "{err}"
    );
    let (code, _, err) = myriad(&[
        "serve",
        "examples/serve-llama3-70b-h100.yaml",
        "--requests",
        "10000001",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--requests: 10000001 is more than the 10000000"),
        "{err}"
    );
}

#[test]
fn serve_reads_a_trace_of_arrivals() {
    let dir = std::env::temp_dir().join("myriad-serve-cli-trace");
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("arrival_s,input_tokens,output_tokens\n");
    for i in 0..200 {
        csv.push_str(&format!(
            "{},{},{}\n",
            i as f64 * 0.05,
            200 + (i % 7) * 50,
            50 + (i % 5) * 20
        ));
    }
    std::fs::write(dir.join("trace.csv"), csv).unwrap();
    let f = dir.join("s.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-8b}\nserving:\n  weights: fp8\n  instance: {instances: 2, tp: 1}\n  trace: trace.csv\n  input: {mean: 1}\n  output: {mean: 1}\n",
    )
    .unwrap();
    let v = json(&["serve", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["result"]["requests"].as_u64(), Some(200));
    assert_eq!(v["result"]["completed"].as_u64(), Some(200));
    // 200 requests over 10 s.
    let rate = v["result"]["arrival_rate"].as_f64().unwrap();
    assert!((rate - 20.0).abs() < 0.5, "{rate}");
    // `--requests` runs the trace's first rows.
    let v = json(&["serve", f.to_str().unwrap(), "--json", "--requests", "50"]);
    assert_eq!(v["result"]["completed"].as_u64(), Some(50));
}

/// `--requests` and `--seed` reach a dataset scenario's draw of samples, as they reach
/// drawn lengths: the count is the run's, and another seed draws other samples.
#[test]
fn serve_overrides_reach_a_dataset_scenario() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "serve",
            "examples/serve-deepseek-r1-b200-mlperf.yaml",
            "--json",
        ];
        a.extend_from_slice(extra);
        json(&a)["result"].clone()
    };
    let few = run(&["--requests", "600"]);
    assert_eq!(few["requests"].as_u64(), Some(600));
    assert_eq!(few["completed"].as_u64(), Some(600));
    let a = run(&["--requests", "600", "--seed", "7"]);
    let b = run(&["--requests", "600", "--seed", "7"]);
    assert_eq!(a, b, "same seed, same run");
    assert_ne!(
        a["output_tokens_per_s"], few["output_tokens_per_s"],
        "another seed draws other samples"
    );
}

#[test]
fn sched_compares_policies_side_by_side() {
    let args = [
        "sched",
        "examples/sched-nvl72-mixed.yaml",
        "--policies",
        "fifo,backfill,day-night",
        "--json",
    ];
    let v = json(&args);
    let p = v["policies"].as_array().unwrap();
    assert_eq!(p.len(), 3);
    for k in [
        "allocation",
        "all",
        "classes",
        "services",
        "series",
        "mean_frag_domain",
    ] {
        assert!(p[0].get(k).is_some(), "missing {k}");
    }
    let wait = |i: usize| p[i]["all"]["wait_s"]["mean"].as_f64().unwrap();
    assert!(
        wait(1) < wait(0),
        "backfill {} vs fifo {}",
        wait(1),
        wait(0)
    );
    assert!(p[2]["services"][0]["slo_attainment"].as_f64().unwrap() > 0.99);
    // Same seed, same bytes.
    assert_eq!(v, json(&args));
    let (code, out, _) = myriad(&["sched", "examples/sched-two-regions.yaml"]);
    assert_eq!(code, 0);
    assert!(out.contains("jobs moved / GB staged"), "{out}");
}

#[test]
fn sched_openb_replay_fgd_leaves_fewer_gpus_unallocated() {
    let v = json(&[
        "sched",
        "--openb",
        "../shared/traces/alibaba-openb-2023",
        "--json",
    ]);
    assert_eq!(v["accelerators"], 6212);
    assert_eq!(v["jobs"], 8152);
    let sweep = v["load_sweep"].as_array().unwrap();
    let at_full = |i: usize| {
        let pts = sweep[i]["points"].as_array().unwrap();
        pts.last().unwrap()["unallocated_gpus"].as_f64().unwrap()
    };
    assert_eq!(sweep[0]["policy"], "best-fit");
    assert_eq!(sweep[1]["policy"], "fgd");
    assert!(
        at_full(1) < at_full(0),
        "fgd {} vs best-fit {}",
        at_full(1),
        at_full(0)
    );
    let (code, out, err) = myriad(&["sched", "examples/sched-openb.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("load sweep"), "{out}");
}

#[test]
fn sched_bad_policy_names_the_nearest() {
    let (code, _, err) = myriad(&[
        "sched",
        "examples/sched-nvl72-mixed.yaml",
        "--policies",
        "fifo,backfil",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--policies: `backfil` is not a policy; did you mean backfill?"),
        "{err}"
    );
    let (code, _, err) = myriad(&["sched"]);
    assert_eq!(code, 2);
    assert!(err.contains("give a SCENARIO or --openb DIR"), "{err}");
}

#[test]
fn sched_replays_a_csv_job_trace_by_hand() {
    // examples/sched-trace.csv on 1,024 GPUs: the 256-GPU job finishes at 16,200 s under FIFO
    // (after both whole-cluster jobs) and at 9,000 s under EASY backfill (arrived at 180 s).
    let v = json(&["sched", "examples/sched-trace.yaml", "--json"]);
    let small = |i: usize| {
        let c = &v["policies"][i]["classes"][3];
        assert_eq!(c["class"], "small");
        c["jct_s"]["mean"].as_f64().unwrap()
    };
    assert_eq!(small(0), 16_200.0 - 180.0);
    assert_eq!(small(1), 9_000.0 - 180.0);
    // A bad trace line names the scenario field, the file, the line and the column.
    let dir = std::env::temp_dir().join(format!("myriad-sched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.csv"),
        "arrival_s,duration_s,accelerators\n0,10,8\n5,-1,8\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.yaml"),
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nscheduling: {trace: {csv: t.csv}}\n",
    )
    .unwrap();
    let (code, _, err) = myriad(&["sched", dir.join("s.yaml").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("s.yaml: scheduling.trace.csv: t.csv: line 3: duration_s: `-1` is not a positive number"),
        "{err}"
    );
}

/// A job that can never run is counted by reason, in the table and in `--json`.
#[test]
fn sched_rejected_jobs_show_their_reason() {
    let dir = std::env::temp_dir().join(format!("myriad-sched-rej-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.csv"),
        "arrival_s,duration_s,accelerators,constraint\n0,3600,8,\n10,3600,4096,\n20,3600,16,domain\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.yaml"),
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64}\nscheduling: {trace: {csv: t.csv}, policies: [{name: fifo}]}\n",
    )
    .unwrap();
    let s = dir.join("s.yaml");
    let (code, out, err) = myriad(&["sched", s.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| completed / rejected"), "{out}");
    for row in [
        "| rejected: more accelerators than its region has",
        "| rejected: larger than its required scale-up domain, segment or pod",
    ] {
        assert!(out.contains(row), "{row} missing:\n{out}");
    }
    let v = json(&["sched", s.to_str().unwrap(), "--json"]);
    let p = &v["policies"][0];
    assert_eq!(p["rejected"], 2);
    assert_eq!(p["rejections"]["too-large"], 1);
    assert_eq!(p["rejections"]["constraint"], 1);
    assert_eq!(p["rejected_jobs"][0]["job"], 1);
    assert_eq!(p["rejected_jobs"][0]["accelerators"], 4096);
    assert_eq!(p["rejected_jobs"][0]["reason"], "too-large");
}

#[test]
fn every_sched_example_runs() {
    for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("sched-") && name.ends_with(".yaml") {
            let (code, out, err) = myriad(&["sched", p.to_str().unwrap()]);
            assert_eq!(code, 0, "{name}: {err}");
            assert!(out.contains("completed / rejected"), "{name}: {out}");
        }
    }
}

#[test]
fn train_flow_backend_writes_a_step_trace() {
    let dir = std::env::temp_dir().join(format!("myriad-step-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut texts = Vec::new();
    for i in 0..2 {
        let out = dir.join(format!("step-{i}.json"));
        let (code, _, err) = myriad(&[
            "train",
            "examples/dgx-superpod-h100.yaml",
            "--backend",
            "flow",
            "--trace",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        texts.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(texts[0], texts[1], "same input, same trace bytes");
    let v: serde_json::Value = serde_json::from_str(&texts[0]).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "step (model timeline)");
    assert!(
        names.iter().any(|n| n.starts_with("reduce-scatter ")),
        "{names:?}"
    );
    // The step's phases add up to the step time.
    let step: f64 = ev
        .iter()
        .filter(|e| e["cat"] == "step")
        .map(|e| e["dur"].as_f64().unwrap())
        .sum();
    let t = json(&[
        "train",
        "examples/dgx-superpod-h100.yaml",
        "--backend",
        "flow",
        "--json",
    ]);
    let want = t["step_time_s"].as_f64().unwrap() * 1e6;
    assert!((step / want - 1.0).abs() < 1e-6, "{step} vs {want}");
    let (code, _, err) = myriad(&[
        "train",
        "examples/dgx-superpod-h100.yaml",
        "--trace",
        "x.json",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--trace needs --backend flow"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `training.cp_comm` picks how context-parallel ranks share keys and values: the plan line
/// names it, the JSON carries it, and gathering exposes more CP time than the ring hides
/// (Llama 3 70B, 32K context over CP 4) while skipping the ring's merges, so the compute
/// shrinks.
#[test]
fn cp_comm_choice_shows_in_the_plan_and_moves_the_step() {
    let dir = std::env::temp_dir().join(format!("myriad-cp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |comm: &str| {
        let path = dir.join(format!("{comm}.yaml"));
        std::fs::write(
            &path,
            format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 1024, scale_out: {{fabric: infiniband-ndr}}}}\nmodel: {{preset: llama3-70b, seq_len: 32768}}\ntraining: {{global_batch: 512, micro_batch: 1, tp: 8, pp: 4, cp: 4, dp: 8, cp_comm: {comm}}}\n"),
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let (code, out, err) = myriad(&["train", p]);
        assert_eq!(code, 0, "{err}");
        (out, json(&["train", p, "--json"]))
    };
    let (ring_out, ring) = run("p2p");
    let (gather_out, gather) = run("all_gather");
    assert!(ring_out.contains("CP 4 (ring)"), "{ring_out}");
    assert!(gather_out.contains("CP 4 (all-gather)"), "{gather_out}");
    assert_eq!(gather["plan"]["cp_comm"], "all_gather");
    let b = |v: &serde_json::Value, k: &str| v["breakdown"][k].as_f64().unwrap();
    assert!(b(&gather, "cp_comm_s") > b(&ring, "cp_comm_s"));
    assert!(b(&gather, "forward_s") < b(&ring, "forward_s"));
    std::fs::remove_dir_all(&dir).ok();
}

/// DeepSeek-V3's own pretraining layout (`examples/deepseek-v3-h800.yaml`) runs with its
/// MTP module, the 64-slot pipeline split and DualPipe, fits, and lands within the report's
/// order: 180K H800 GPU-hours per trillion tokens (2.664M for 14.8T).
#[test]
fn deepseek_v3_example_trains_with_mtp_and_dualpipe() {
    let v = json(&["train", "examples/deepseek-v3-h800.yaml", "--json"]);
    assert_eq!(v["fits"], true, "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("MTP 1 + loss = 64"), "{notes}");
    let hours = v["time_to_train"]["gpu_hours"].as_f64().expect("gpu_hours");
    assert!((hours / 2.664e6 - 1.0).abs() < 0.3, "{hours}");
}

#[test]
fn train_names_the_eager_moe_overhead_and_what_removes_it() {
    // DeepSeek-V3 on 2,048 H800: 3.3% of the step is eager MoE overhead, on its own line,
    // with the setting that removes it; a dense model has none and no such line.
    let (code, out, err) = myriad(&["train", "examples/deepseek-v3-h800.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| MoE eager overhead"), "{out}");
    assert!(out.contains("`training.moe_full_graph: true`"), "{out}");
    let v = json(&["train", "examples/deepseek-v3-h800.yaml", "--json"]);
    let s = v["breakdown"]["moe_overhead_s"]
        .as_f64()
        .expect("moe_overhead_s");
    assert!(s > 0.0, "{v}");
    let (code, out, err) = myriad(&["train", "examples/dgx-superpod-h100.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("moe_full_graph"), "{out}");
}

/// The gpt-oss example end to end: its sinks cost the backward pass their gradient and its
/// banded layers cost less than full ones, through the CLI.
#[test]
fn gpt_oss_example_pays_for_its_sinks_and_saves_on_its_bands() {
    let step = |text: &str| -> f64 {
        let dir = std::env::temp_dir().join(format!("myriad-gpt-oss-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("s{}.yaml", text.len()));
        std::fs::write(&p, text).unwrap();
        let v = json(&["train", p.to_str().unwrap(), "--json"]);
        v["step_time_s"].as_f64().unwrap()
    };
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/gpt-oss-120b-b200.yaml"
    ))
    .unwrap();
    let with = step(&base);
    let without_sinks = step(&base.replace(
        "  preset: gpt-oss-120b\n",
        "  preset: gpt-oss-120b\n  attention_sinks: false\n",
    ));
    let all_full = step(&base.replace(
        "  preset: gpt-oss-120b\n",
        "  preset: gpt-oss-120b\n  sliding_window: {window: 4096, full_every: 2}\n",
    ));
    // The sinks' gradient: 64 heads × 16,384 query rows × 36 layers × 5 micro-batches at
    // 1.52 × 132 / 148 ns on the B200, about 0.26 s of backward, paced with the step.
    assert!(with > without_sinks, "{with} vs {without_sinks}");
    let d = with - without_sinks;
    assert!(d > 0.2 && d < 0.4, "the sinks cost {d:.3} s");
    // A window as long as the sequence is full attention: the bands save time.
    assert!(all_full > with, "{all_full} vs {with}");
}

#[test]
fn collective_sizes_are_one_size_or_one_increasing_range() {
    // --bytes beside --sweep used to be ignored silently, and a range given largest first
    // printed an empty table.
    let base = [
        "collective",
        "examples/dgx-h100-node.yaml",
        "--op",
        "all-reduce",
    ];
    let run = |extra: &[&str]| myriad(&[&base[..], extra].concat());
    let (code, out, err) = run(&["--bytes", "1MiB", "--sweep", "8B..1KiB"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("--bytes 1MiB and --sweep 8B..1KiB: give one size or one range, not both"),
        "{err}"
    );
    let (code, out, err) = run(&["--sweep", "1GiB..1KiB"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("--sweep: `1GiB..1KiB` runs from"), "{err}");
    // A size infinite only after its unit passed the check: `--bytes` failed later without
    // naming the flag, and a sweep up to it doubled until memory ran out.
    let (code, out, err) = run(&["--sweep", "8B..1e300GiB"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("--sweep: `1e300GiB` is not a size"), "{err}");
    let (code, out, err) = run(&["--bytes", "1e300GiB"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("--bytes: `1e300GiB` is not a size"), "{err}");
    // A fraction of a byte was rounded without a word (`1.5` ran 2 B).
    let (code, out, err) = run(&["--bytes", "1.5"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("--bytes: `1.5` is not a whole number of bytes"),
        "{err}"
    );
    // A rank twice was dropped silently (`0,0,1` ran on 2 ranks).
    let (code, out, err) = run(&["--bytes", "1MiB", "--group", "0,0,1"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("--group: rank 0 is given twice in `0,0,1`; a group holds each rank once"),
        "{err}"
    );
    let (code, _, err) = run(&["--bytes", "1MiB", "--group", "0-3,2-5"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--group: rank 2 is given twice in `0-3,2-5`"),
        "{err}"
    );
    let v = json(
        &[
            &base[..],
            &["--bytes", "1MiB", "--group", "0-3,4-5", "--json"],
        ]
        .concat(),
    );
    assert_eq!(v["group_size"], 6, "{v}");
    let v = json(&[&base[..], &["--sweep", "1KiB..4KiB", "--json"]].concat());
    let sizes: Vec<f64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bytes"].as_f64().unwrap())
        .collect();
    assert_eq!(sizes, vec![1024.0, 2048.0, 4096.0]);
}

/// Absurd but finite values (`sustained_tbps: 1e-300`: a write of ~1e300 s) were printed in
/// full decimal, a Young/Daly line of some 300 digits; they are in scientific form.
#[test]
fn reliability_text_writes_huge_and_tiny_values_in_scientific_form() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-rel-sci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tiny.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\nname: r\ncluster: {accelerator: h100-sxm, count: 1024, scale_up: hgx-h100, scale_out: {fabric: roce-400g, topology: fat-tree}}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {accelerators: 1024, tp: 8, pp: 4, dp: 32, global_batch: 512, micro_batch: 1, precision: bf16, tokens: 1e12}\nreliability: {storage: {sustained_tbps: 1e-300}}\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&[
        "reliability",
        f.to_str().unwrap(),
        "--days",
        "1",
        "--replicas",
        "10",
    ]);
    assert_eq!(code, 0, "{err}");
    let longest = out.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest < 400, "a line of {longest} characters:\n{out}");
    assert!(out.contains("at 1e-300 TB/s"), "{out}");
    // No number runs past 15 digits (the checkpoint stall, δ, was 300).
    let digits = out
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(digits <= 15, "a number of {digits} digits:\n{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("interval: ") && l.contains("e299 s")),
        "{out}"
    );
}

/// A whole run of `tokens: 1e300` printed its failure-free days and time to train as
/// 300-digit numbers (`{:.1}`), in the header and the time-to-train line.
#[test]
fn reliability_whole_run_of_absurd_tokens_prints_short_days() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-rel-days-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("long.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\nname: r\ncluster: {accelerator: h100-sxm, count: 1024, scale_up: hgx-h100, scale_out: {fabric: roce-400g, topology: fat-tree}}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {accelerators: 1024, tp: 8, pp: 4, dp: 32, global_batch: 512, micro_batch: 1, precision: bf16, tokens: 1e300}\nreliability: {}\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&["reliability", f.to_str().unwrap(), "--replicas", "2"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 0, "{err}");
    let digits = out
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(digits <= 15, "a number of {digits} digits:\n{out}");
    assert!(out.contains("e289 failure-free days)"), "{out}");
}

#[test]
fn reliability_text_never_prints_inf() {
    // A window where many replicas keep no work (a 10 h interval, no spare servers, a
    // day's repair) has no upper bound on the time to train, and rates of 0 have no MTBF:
    // the text said `inf` (JSON: null) where it now says `never`, `none` or `-`.
    let dir = std::env::temp_dir().join(format!("myriad-cli-rel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = "format: myriad/1\nname: r\ncluster: {accelerator: h100-sxm, count: 1024, scale_up: hgx-h100, scale_out: {fabric: roce-400g, topology: fat-tree}}\nmodel: {preset: llama3-70b, seq_len: 8192}\ntraining: {accelerators: 1024, tp: 8, pp: 4, dp: 32, global_batch: 512, micro_batch: 1, precision: bf16, tokens: 1e12}\n";
    let slow = dir.join("slow.yaml");
    std::fs::write(
        &slow,
        format!("{base}reliability: {{planned: {{rate: {{mtbf_hours: 2}}}}, storage: {{sustained_tbps: 0.001}}, checkpoint: {{interval_s: 36000}}}}\n"),
    )
    .unwrap();
    let none = dir.join("none.yaml");
    std::fs::write(
        &none,
        format!(
            "{base}reliability: {{failures: {{scale: 0}}, planned: {{rate: {{per_hour: 0}}}}}}\n"
        ),
    )
    .unwrap();
    let inf = |s: &str| s.split(|c: char| !c.is_alphanumeric()).any(|w| w == "inf");
    let (code, out, err) = myriad(&[
        "reliability",
        slow.to_str().unwrap(),
        "--days",
        "1",
        "--replicas",
        "200",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!inf(&out), "{out}");
    assert!(out.contains("– never); failure-free"), "{out}");
    let (code, out, err) = myriad(&[
        "reliability",
        none.to_str().unwrap(),
        "--days",
        "1",
        "--replicas",
        "10",
        "--compare",
        "size",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!inf(&out), "{out}");
    assert!(out.contains("job MTBF none (rates: none)"), "{out}");
}

/// A scenario without `name` printed an empty name in the headers (" — 64 accelerators");
/// it is named after its file.
#[test]
fn a_scenario_without_a_name_is_named_after_its_file() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-noname-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sched-two-regions.yaml"
    ))
    .unwrap();
    let unnamed: String = text
        .lines()
        .filter(|l| !l.starts_with("name:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let f = dir.join("two-regions.yaml");
    std::fs::write(&f, unnamed).unwrap();
    let f = f.to_str().unwrap();
    for cmd in ["sched", "cluster"] {
        let (code, out, err) = myriad(&[cmd, f]);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(!out.starts_with(" — "), "{cmd}: {out}");
    }
    let (_, out, _) = myriad(&["sched", f]);
    assert!(out.starts_with("two-regions — "), "{out}");
    assert_eq!(json(&["cluster", f, "--json"])["name"], "two-regions");
}

#[test]
fn sched_allocation_over_time_shows_8_spans() {
    // 4.5 h of FIFO in bins of 0.45 h: 10 bins, shown as 8 spans (chunks of
    // ceil(10 / 8) = 2 bins gave 5), each the mean of its bins.
    let dir = std::env::temp_dir().join(format!("myriad-cli-spans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
    std::fs::copy(
        format!("{root}sched-trace.csv"),
        dir.join("sched-trace.csv"),
    )
    .unwrap();
    let f = dir.join("spans.yaml");
    std::fs::write(
        &f,
        std::fs::read_to_string(format!("{root}sched-trace.yaml"))
            .unwrap()
            .replace("  pod: 512\n", "  pod: 512\n  sample_h: 0.45\n"),
    )
    .unwrap();
    let (code, out, err) = myriad(&["sched", f.to_str().unwrap(), "--policies", "fifo"]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.contains("allocation over time"))
        .unwrap_or_else(|| panic!("{out}"));
    let spans: Vec<&str> = row.split('|').nth(2).unwrap().split_whitespace().collect();
    // FIFO: 100% to 7,200 s, 50% to 10,800 s, 100% to 14,400 s, 25% to 16,200 s. Bins of
    // 1,620 s: 100 100 100 100 72.2 50 66.7 100 91.7 25; spans of bins 0, 1, 2, 3-4, 5, 6,
    // 7, 8-9.
    assert_eq!(
        spans,
        ["100", "100", "100", "86", "50", "67", "100", "58"],
        "{row}"
    );
}

#[test]
fn cluster_text_prints_numbers_past_u64_as_json_does() {
    // The thousands separator parsed the integer part as u64: 1e30 Gb/s of DCI printed
    // as `DCI 0 Gb/s per site, 0 us one way` while --json said 1e30 and 5e30.
    let dir = std::env::temp_dir().join(format!("myriad-cli-dci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("dci.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\nname: t\ncluster: {accelerator: h100-sxm, count: 1024, sites: 2, dci: {gbps_per_site: 1e20, distance_km: 20000}}\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&["cluster", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // (From 1e12 up in scientific form: a rate at its limit once printed hundreds of digits.)
    assert!(
        out.contains("DCI 1.000e20 Gb/s per site, 100,000 us one way"),
        "{out}"
    );
    let v = json(&["cluster", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["network"]["dci_gbps_per_site"], 1e20);
    // (A distance past the Earth's circumference is an error now: only the rate is
    // past u64 here.)
    assert_eq!(v["network"]["dci_latency_us"], 1e5);
}

/// A serving search where no rate meets the SLOs prints no latency ("-"), never NaN, and
/// its JSON gives null for it.
#[test]
fn serve_search_prints_no_nan_where_no_rate_meets_the_slos() {
    let path = std::env::temp_dir().join(format!("myriad-serve-slo-{}.yaml", std::process::id()));
    std::fs::write(
        &path,
        "format: myriad/1
cluster: {accelerator: h100-sxm, count: 8}
model: {preset: llama3-70b}
serving:
  weights: fp8
  instance: {instances: 4, tp: 2}
  input: {mean: 1000}
  output: {mean: 100}
  slo: {ttft_ms: 1, tpot_ms: 1}
  requests: 100
",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let (code, out, err) = myriad(&["serve", p, "--search"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("NaN"), "{out}");
    assert!(out.contains("|           - |           - |"), "{out}");
    let v = json(&["serve", p, "--search", "--json"]);
    std::fs::remove_file(&path).ok();
    let c = &v["candidates"][0];
    assert_eq!(c["max_rate"], 0.0);
    assert!(
        c["ttft_p90_s"].is_null() && c["tpot_p90_s"].is_null(),
        "{c}"
    );
    // And it says that no candidate met the SLOs, which is closest and what it missed (the
    // table's top row used to read as the pick, at 0 goodput).
    assert!(out.contains("no candidate met the SLOs"), "{out}");
    assert!(out.contains("over its SLO of 1.0 ms by"), "{out}");
    assert_eq!(c["feasible"], false);
    let n = &v["no_feasible_candidate"];
    assert_eq!(n["closest"], c["description"], "{n}");
    assert_eq!(n["shortfall"]["ttft_slo_s"], 1e-3, "{n}");
    assert!(
        n["shortfall"]["ttft_p90_over_s"].as_f64().unwrap() > 0.0,
        "{n}"
    );
}

/// A serving search where candidates met the SLOs says nothing of infeasibility: the
/// best is feasible and `no_feasible_candidate` is null.
#[test]
fn serve_search_with_a_feasible_candidate_has_no_infeasibility_note() {
    let (code, out, err) = myriad(&["serve", "examples/serve-llama3-70b-h100.yaml", "--search"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("no candidate met the SLOs"), "{out}");
    let v = json(&[
        "serve",
        "examples/serve-llama3-70b-h100.yaml",
        "--search",
        "--json",
    ]);
    assert_eq!(v["candidates"][0]["feasible"], true);
    assert!(
        v["no_feasible_candidate"].is_null(),
        "{}",
        v["no_feasible_candidate"]
    );
}

#[test]
fn train_says_host_memory_when_offloaded_activations_do_not_fit() {
    // Llama 2 70B at 128k tokens on one NVL72 fits nowhere: the smallest footprint offloads
    // every layer's activations, which leaves HBM with room (82 of 184 GiB) but needs far
    // more host memory than Grace has. The verdict used to blame HBM ("82.4 GiB needed of
    // 184").
    let dir = std::env::temp_dir().join(format!("myriad-cli-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("host.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\ncluster: {accelerator: gb200, count: 72}\nmodel: {preset: llama2-70b, seq_len: 131072}\ntraining: {tokens: 1.0e12}\n",
    )
    .unwrap();
    let v = json(&["train", f.to_str().unwrap(), "--json"]);
    let m = &v["memory"];
    assert_eq!(v["fits"], false);
    assert!(m["total_gib"].as_f64().unwrap() <= m["capacity_gib"].as_f64().unwrap());
    let (code, out, err) = myriad(&["train", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let verdict = out.lines().find(|l| l.starts_with("fits:")).unwrap();
    assert!(verdict.starts_with("fits: NO — host memory: "), "{verdict}");
}

#[test]
fn too_many_reliability_replicas_is_an_error_not_an_abort() {
    // 2^32 - 1 replicas once asked for 584 GB of results and aborted the process (the
    // Python binding too); the flag and the scenario key are capped with the numbers.
    let (code, _, err) = myriad(&[
        "reliability",
        "examples/reliability-llama3.yaml",
        "--replicas",
        "4294967295",
        "--days",
        "0.001",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("replicas: 4294967295 is more than the 1000000 replicas one analysis runs"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("myriad-cli-reps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("r.yaml");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/reliability-llama3.yaml"
    ))
    .unwrap();
    assert!(
        text.contains("\nreliability: {}\n"),
        "the example's reliability block"
    );
    let text = text.replacen(
        "\nreliability: {}\n",
        "\nreliability: {replicas: 2000000}\n",
        1,
    );
    std::fs::write(&f, text).unwrap();
    let (code, _, err) = myriad(&["reliability", f.to_str().unwrap(), "--days", "0.001"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("reliability.replicas: 2000000 is more than"),
        "{err}"
    );
}

#[test]
fn a_huge_rank_range_is_refused_before_it_is_built() {
    // `--group 0-<2^64-1>` once expanded the range into a list before checking it against
    // the cluster, which exhausted memory.
    let (code, _, err) = myriad(&[
        "collective",
        "examples/dgx-h100-node.yaml",
        "--op",
        "all-reduce",
        "--bytes",
        "1MiB",
        "--group",
        "0-18446744073709551615",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("rank 18446744073709551615 is outside the cluster's 8 accelerators"),
        "{err}"
    );
}

/// `--top 0` lists nothing: an error naming the option (it printed an empty table and then
/// explained why plan #1 beats #2, neither of them listed).
#[test]
fn search_top_0_is_an_error() {
    let (code, out, err) = myriad(&["search", "examples/dgx-superpod-h100.yaml", "--top", "0"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("--top: 0 plans to list; give at least 1"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

#[test]
fn reliability_spares_line_splits_in_domain_and_pool_accelerators() {
    // 8 idle GPUs in each of the job's 256 NVL72 racks and no spare rack: the line said
    // "0 spare domains in the pool (2048 accelerators)", the in-rack spares counted as the
    // pool's.
    let (code, out, err) = myriad(&[
        "reliability",
        "examples/reliability-nvl72-spares.yaml",
        "--days",
        "1",
        "--replicas",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("spares: 8 per domain (2048 accelerators), 0 spare domains in the pool (0 accelerators), repair 24 h"),
        "{out}"
    );
}

#[test]
fn reliability_mtbf_per_device_includes_the_failure_scale() {
    // `failures.scale: 2` doubles every rate: the expected interruptions per day doubled
    // but the MTBF per device beside them stayed at the unscaled 1.083e5 h (Llama 3's 196
    // accelerator faults in 54 days on 16,384 GPUs), so the two columns disagreed.
    let dir = std::env::temp_dir().join(format!("myriad-cli-rel-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/reliability-llama3.yaml"
    ))
    .unwrap()
    .replace(
        "\nreliability: {}\n",
        "\nreliability: {failures: {scale: 2}}\n",
    );
    let f = dir.join("scaled.yaml");
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = myriad(&[
        "reliability",
        f.to_str().unwrap(),
        "--days",
        "1",
        "--replicas",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| accelerator "))
        .expect("accelerator row");
    // 16,384 x 54 x 24 / 196 / 2 = 54,166 h; 2 x 196 / 54 = 7.259 a day.
    assert!(row.contains("5.417e4") && row.contains("7.259"), "{row}");
}

#[test]
fn reliability_mtbf_column_has_one_format() {
    // The causes' MTBFs were all in scientific form and the planned row's in hours with a
    // decimal: the job-level software cause (Llama 3: 1.037 a day, 24 / 1.037 = 23.14 h)
    // read `2.314e1` above the planned stops' `27.6` (0.870 a day: 27.6 h).
    let (code, out, err) = myriad(&[
        "reliability",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/reliability-llama3.yaml"
        ),
        "--days",
        "1",
        "--replicas",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    let cell = |name: &str| {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("{name} row: {out}"));
        row.split('|').nth(4).unwrap().trim().to_string()
    };
    assert_eq!(cell("software"), "23.1");
    assert_eq!(cell("planned"), "27.6");
    // A device's MTBF stays in scientific form: 16,384 x 54 x 24 / 196 = 1.083e5 h.
    assert_eq!(cell("accelerator"), "1.083e5");
}

/// An island size that does not divide the cluster leaves a smaller last island: 1,000 on
/// 1,024 accelerators was reported as "2 x 1,000 accelerators at full bisection" (2,000).
#[test]
fn a_partial_last_island_is_reported_as_it_is() {
    let dir = std::env::temp_dir().join(format!("myriad-island-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("island.yaml");
    let text = |island: u32| {
        format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 1024, scale_out: {{island: {island}, oversubscription: 4}}}}\n")
    };
    let islands = |island: u32| {
        std::fs::write(&f, text(island)).unwrap();
        let (code, out, err) = myriad(&["cluster", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .find(|l| l.contains("Islands"))
            .unwrap()
            .split('|')
            .nth(2)
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(
        islands(1000),
        "1 x 1,000 and 1 x 24 accelerators at full bisection, 4:1 above"
    );
    assert_eq!(
        islands(256),
        "4 x 256 accelerators at full bisection, 4:1 above"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Absurd but accepted inputs (`tokens: 1e300`, a price per kWh of 1e-300, the highest price
/// taken, 10) once printed hundreds of digits (`{:.2}` of 1e300, `{}` of 1e-300): every line
/// stays short and no number runs past 21 digits. (A price of 1e12 USD per kWh was accepted
/// too; it is now an error naming `cluster.datacenter.usd_per_kwh`.)
#[test]
fn absurd_values_print_in_scientific_form_not_hundreds_of_digits() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-absurd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = |price: &str, tokens: &str| {
        format!(
            "format: myriad/1\nname: absurd\ncluster:\n  accelerator: h100-sxm\n  count: 1024\n  datacenter: {{pue: 1.2, usd_per_kwh: {price}}}\n  scale_out: {{fabric: infiniband-ndr}}\nmodel:\n  preset: llama3-8b\ntraining:\n  global_batch: 1024\n  precision: bf16\n  tokens: {tokens}\nplanning:\n  accelerators: [h100-sxm]\n  counts: [64]\n"
        )
    };
    let cases = [
        (
            "huge.yaml",
            scenario("10", "1.0e300"),
            &["train", "cluster", "plan"][..],
        ),
        (
            "tiny.yaml",
            scenario("1.0e-300", "1.0e7"),
            &["train", "cluster"][..],
        ),
    ];
    for (name, text, commands) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let file = path.to_str().unwrap();
        for cmd in commands {
            let (code, out, err) = myriad(&[cmd, file]);
            assert_eq!(code, 0, "{cmd} {name}: {err}");
            for line in out.lines() {
                assert!(
                    line.chars().count() <= 300,
                    "{cmd} {name}: a line of {} characters: {line:.200}",
                    line.chars().count()
                );
                // Digits in each run of digits, separators and decimal points.
                let longest = line
                    .split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
                    .map(|w| w.chars().filter(|c| c.is_ascii_digit()).count())
                    .max()
                    .unwrap_or(0);
                assert!(
                    longest <= 21,
                    "{cmd} {name}: a {longest}-digit number: {line:.200}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A token budget below one sequence is an error naming the budget as given: `tokens:
/// 1e-300` once printed 300 zeros.
#[test]
fn a_tiny_token_budget_is_named_in_scientific_form() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-tiny-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tiny.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\nname: t\ncluster: {accelerator: h100-sxm, count: 8}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 64, tokens: 1.0e-300}\n",
    )
    .unwrap();
    let (code, _, err) = myriad(&["train", f.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("training.tokens: 1e-300 tokens"), "{err}");
    assert!(err.len() < 400, "{} characters: {err:.300}", err.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job of 1e300 s (accepted) made sched's makespan, waits and JCTs 296-digit hours: they
/// print in scientific form.
#[test]
fn sched_hours_past_1e12_print_in_scientific_form() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-longjob-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.csv"),
        "arrival_s,duration_s,accelerators,class,kind,priority,constraint\n0,1e300,1024,whole,training,0,\n60,3600,512,half,training,0,pod\n",
    )
    .unwrap();
    let f = dir.join("s.yaml");
    std::fs::write(
        &f,
        "format: myriad/1\nname: t\ncluster: {accelerator: h100-sxm, count: 1024, scale_out: {fabric: infiniband-ndr}}\nscheduling:\n  trace: {csv: t.csv}\n  pod: 512\n  policies: [{name: fifo}]\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&["sched", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let row = out.lines().find(|l| l.contains("makespan")).unwrap();
    assert!(row.contains("2.778e296 h"), "{row:.300}");
    assert!(out.lines().all(|l| l.len() <= 300), "{out:.2000}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `train` names the plan's recompute as `search` and the scenario spell it, through one
/// label (`Plan::recompute_label`), in its plan line, its notes and `--json` notes: it
/// printed `recompute None`, `recompute Full (25% of layers)` and `recompute Selective
/// (core_attn)` where `search` printed `no-recompute`, `full 25%` and `selective(core_attn)`.
#[test]
fn train_prints_recompute_as_search_and_the_scenario_spell_it() {
    let dir = std::env::temp_dir().join(format!("myriad-cli-rc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("rc.yaml");
    let f = f.to_str().unwrap();
    for (given, label) in [
        ("recompute: none", "no-recompute"),
        ("recompute: full, recompute_layers: 8", "full 25%"),
        ("recompute: selective", "selective(core_attn)"),
        (
            "recompute: selective, recompute_modules: [core_attn, layernorm]",
            "selective(core_attn+layernorm)",
        ),
    ] {
        std::fs::write(
            f,
            format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 64, scale_up: hgx-h100}}\nmodel: {{preset: llama3-8b}}\ntraining: {{tp: 2, pp: 1, dp: 32, global_batch: 256, micro_batch: 1, zero_stage: 1, {given}}}\n"),
        )
        .unwrap();
        let (code, out, err) = myriad(&["train", f]);
        assert_eq!(code, 0, "{err}");
        let plan = out.lines().find(|l| l.starts_with("plan: ")).unwrap();
        assert!(
            plan.contains(&format!(" · {label} · SP true ·")),
            "{given}: {plan}"
        );
        assert!(!out.contains("Full") && !out.contains("Selective"), "{out}");
    }
    // Chosen by `train`: the note and `--json`'s notes use the label too.
    std::fs::write(
        f,
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 16384, scale_up: hgx-h100, scale_out: {fabric: infiniband-ndr}}\nmodel: {preset: llama3-405b}\ntraining: {tp: 8, pp: 16, dp: 128, vpp: 4, global_batch: 2048, micro_batch: 1, zero_stage: 1}\n",
    )
    .unwrap();
    let (code, out, err) = myriad(&["train", f]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(" · selective(core_attn+layernorm) · SP true ·")
            && out.contains("  chose recompute: selective(core_attn+layernorm) (not given; the fastest that fits)"),
        "{out}"
    );
    let v = json(&["train", f, "--json"]);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.contains(
            &"recompute: selective(core_attn+layernorm) (not given; the fastest that fits)"
        ),
        "{notes:?}"
    );
}
