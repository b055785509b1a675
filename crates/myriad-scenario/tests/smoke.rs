#[test]
fn unknown_key_names_path_and_suggestion() {
    let text = "format: myriad/1\ncluster:\n  accelerator: h100-sxm\n  count: 1024\n  scale_out: {fabric: infiniband-ndr, topolgy: fat-tree}\n";
    let e = myriad_scenario::parse_scenario("t.yaml", text, myriad_catalog::catalog()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.yaml: cluster.scale_out.topolgy: unknown key; did you mean topology?"
    );
}

fn parse(text: &str) -> Result<myriad_scenario::Scenario, myriad_scenario::ScenarioError> {
    myriad_scenario::parse_scenario("s.yaml", text, myriad_catalog::catalog())
}

const BASE: &str = "format: myriad/1\ncluster:\n  accelerator: h100-sxm\n  count: 1024\n";

#[test]
fn documented_defaults_apply() {
    let s = parse(BASE).unwrap();
    let c = &s.cluster;
    assert_eq!(c.sites, 1);
    assert_eq!(c.scale_out.oversubscription, 1.0);
    assert_eq!(c.scale_out.tiers, None);
    assert_eq!(c.scale_out.island, None);
    assert_eq!(c.datacenter.pue, 1.2);
    assert_eq!(c.datacenter.usd_per_kwh, 0.08);
    assert_eq!(c.scale_out.topology, myriad_scenario::TopologyKind::FatTree);
}

#[test]
fn the_format_page_example_parses_with_nulls() {
    let text = r#"format: myriad/1
name: llama3-405b-on-16k-h100
cluster:
  accelerator: h100-sxm
  count: 16384
  scale_up: hgx-h100
  scale_out:
    fabric: infiniband-ndr
    topology: fat-tree
    switch_radix: 64
    tiers: null
    oversubscription: 1.0
    island: null
  sites: 1
  dci: null
  datacenter: {pue: 1.2, usd_per_kwh: 0.08}
model:
  preset: gpt3-175b
training:
  tokens: 15.6e12
"#;
    let s = parse(text).unwrap();
    assert_eq!(s.training.unwrap().tokens, Some(15.6e12));
}

#[test]
fn errors_name_file_path_value_and_expectation() {
    let cases = [
        (format!("{BASE}  scale_out: {{tiers: 5}}\n"), "s.yaml: cluster.scale_out.tiers: 5 is more than the 4 supported"),
        (format!("{BASE}  scale_out: {{qps_per_connection: 0}}\n"), "s.yaml: cluster.scale_out.qps_per_connection: 0 is not between 1 and 64"),
        (format!("{BASE}  scale_out: {{oversubscription: 0.5}}\n"), "s.yaml: cluster.scale_out.oversubscription: 0.5 is not a ratio between 1.0 and 64"),
        (BASE.replace("count: 1024", "count: -3"), "s.yaml: cluster.count: invalid value: integer `-3`, expected a whole number from 0 to 18446744073709551615"),
        (BASE.replace("format: myriad/1", "format: myriad/2"), "s.yaml: format: `myriad/2` is not supported; expected `myriad/1`"),
        (BASE.replace("  count: 1024\n", ""), "s.yaml: cluster.count: missing required key"),
        (format!("{BASE}  sites: 2\n"), "s.yaml: cluster.dci: 2 sites need a DCI link: {gbps_per_site, distance_km}"),
        // A DCI link on one site was accepted and ignored.
        (format!("{BASE}  dci: {{gbps_per_site: 102400, distance_km: 80}}\n"), "s.yaml: cluster.dci: a DCI link joins sites, but cluster.sites is 1; give sites: 2 or more, or drop dci"),
        (format!("{BASE}  sites: 1\n  dci: {{gbps_per_site: 102400, distance_km: 80}}\n"), "s.yaml: cluster.dci: a DCI link joins sites, but cluster.sites is 1; give sites: 2 or more, or drop dci"),
        (format!("{BASE}training: {{zero_stage: 4}}\n"), "s.yaml: training.zero_stage: 4 is not 0, 1, 2 or 3"),
        // A four-billion-token draft ran (after hanging, before a closed form) and meant nothing.
        (format!("{BASE}serving: {{speculative: {{draft_tokens: 4000000000}}}}\n"), "s.yaml: serving.speculative.draft_tokens: 4000000000 is more than the 256 supported"),
        // 1e-310 requests/s overflowed the arrival clock to infinity (5e13 tokens/s reported).
        (format!("{BASE}serving: {{arrival_rate: 1.0e-310}}\n"), "s.yaml: serving.arrival_rate: 1e-310 requests/s is below the 1e-6 supported (one request in about 12 days)"),
        (format!("{BASE}training: {{placement: tp-dp}}\n"), "s.yaml: training.placement: `tp-dp` must name all of tp, cp, ep, dp, pp once (e.g. tp-cp-ep-dp-pp)"),
        (format!("{BASE}modle: {{preset: gpt3-175b}}\n"), "s.yaml: modle: unknown key; did you mean model?"),
        (format!("{BASE}model: {{preset: gpt-oss-120b, sliding_window: {{window: 0}}}}\n"), "s.yaml: model.sliding_window.window: must be positive, got 0"),
        (format!("{BASE}model: {{preset: gpt-oss-120b, sliding_window: {{window: 128, full_every: 1}}}}\n"), "s.yaml: model.sliding_window.full_every: 1 leaves no layer windowed; give 2 or more, or drop sliding_window"),
        (format!("{BASE}model: {{preset: deepseek-v3, moe: {{experts: 256, top_k: 8, expert_ffn_hidden: 2048, router_groups: 7, router_group_topk: 4}}}}\n"), "s.yaml: model.moe.router_groups: 7 must divide the 256 experts"),
        (format!("{BASE}model: {{preset: deepseek-v3, moe: {{experts: 256, top_k: 8, expert_ffn_hidden: 2048, router_groups: 64, router_group_topk: 1}}}}\n"), "s.yaml: model.moe.router_group_topk: 1 groups of 4 experts cannot hold top_k 8"),
        (format!("{BASE}model: {{preset: deepseek-v3, moe: {{experts: 256, top_k: 8, expert_ffn_hidden: 2048, router_groups: 8}}}}\n"), "s.yaml: model.moe.router_group_topk: missing (router_groups is given)"),
    ];
    for (text, expect) in cases {
        let e = parse(&text).unwrap_err();
        assert_eq!(e.to_string(), expect);
    }
}

#[test]
fn unknown_ids_list_the_closest() {
    let e = parse(&BASE.replace("h100-sxm", "h100sxm")).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "s.yaml: cluster.accelerator: `h100sxm` is not a known accelerator; closest: h100-sxm"
        ),
        "{e}"
    );
    let e = parse(&format!("{BASE}model: {{preset: gpt3-176b}}\n")).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "s.yaml: model.preset: `gpt3-176b` is not a built-in model; closest: gpt3-175b"
        ),
        "{e}"
    );
}

#[test]
fn yaml_syntax_errors_give_the_line() {
    let e = parse("format: myriad/1\ncluster: [1, 2\n").unwrap_err();
    assert_eq!(e.path, "(document)");
    assert!(e.message.contains("line"), "{e}");
}

#[test]
fn json_scenarios_are_accepted() {
    let s = parse(r#"{"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 8}}"#)
        .unwrap();
    assert_eq!(s.cluster.count, 8);
}

/// Guards against serde's derived struct deserializers filling fields by position from a
/// list (`cluster: [h100-sxm, 1024]`): a struct must be a mapping, at any depth, in YAML and
/// JSON, and the error names the field path; lists where the format takes lists still parse.
#[test]
fn a_list_where_a_mapping_is_expected_is_an_error() {
    let expect = "expected a mapping (key: value), found a list";
    let cases = [
        (
            "format: myriad/1\ncluster: [h100-sxm, 1024]\n".to_string(),
            "cluster",
        ),
        (
            format!("{BASE}  scale_out: [infiniband-ndr]\n"),
            "cluster.scale_out",
        ),
        (
            format!("{BASE}  datacenter: [1.2, 0.08]\n"),
            "cluster.datacenter",
        ),
        (
            format!("{BASE}  sites: 2\n  dci: [100, 10]\n"),
            "cluster.dci",
        ),
        (format!("{BASE}training: [1024, 1, 8]\n"), "training"),
        (format!("{BASE}model: [gpt3-175b]\n"), "model"),
        (
            format!("{BASE}model: {{preset: deepseek-v3, moe: [256, 8, 2048]}}\n"),
            "model.moe",
        ),
        (
            format!("{BASE}reliability: {{checkpoint: [600]}}\n"),
            "reliability.checkpoint",
        ),
        (
            format!("{BASE}reliability: {{failures: {{hbm: [0.001]}}}}\n"),
            "reliability.failures.hbm",
        ),
        (format!("{BASE}  faults: [[1.0, 3]]\n"), "cluster.faults[0]"),
        (
            r#"{"format": "myriad/1", "cluster": ["h100-sxm", 8]}"#.to_string(),
            "cluster",
        ),
    ];
    for (text, path) in cases {
        let e = parse(&text).unwrap_err();
        assert_eq!(e.to_string(), format!("s.yaml: {path}: {expect}"), "{text}");
    }
    // Unknown-key hints still work beneath the strict deserializer.
    let e = parse(&format!("{BASE}training: {{zero_stgae: 1}}\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: training.zero_stgae: unknown key; did you mean zero_stage?"
    );
    // Lists the format takes stay lists.
    let s = parse(&format!(
        "{BASE}  faults: [{{at_s: 1.0, link: 3}}]\ntraining: {{recompute_modules: [core_attn, mlp]}}\nplanning: {{counts: [1024, 2048]}}\n"
    ))
    .unwrap();
    assert_eq!(s.cluster.faults.len(), 1);
    assert_eq!(s.planning.unwrap().counts, vec![1024, 2048]);
}

/// Guards the validation-file parser against the same positional fill: a case's `system`,
/// `model`, `training` or `measured` given as a list is an error with the case's path.
#[test]
fn validation_cases_need_mappings() {
    let case = |system: &str, measured: &str| {
        format!(
            "format: myriad-validation/1\ncases:\n- id: a\n  system: {system}\n  model: {{preset: gpt3-175b}}\n  training: {{tp: 8}}\n  measured: {measured}\n"
        )
    };
    let ok = myriad_scenario::validation::parse_validation(
        "v.yaml",
        &case("{accelerator: h100-sxm, count: 8}", "{step_time_s: 1.0}"),
    )
    .unwrap();
    assert_eq!(ok.cases.len(), 1);
    for (text, path) in [
        (
            case("[h100-sxm, 8]", "{step_time_s: 1.0}"),
            "cases[0].system",
        ),
        (
            case("{accelerator: h100-sxm, count: 8}", "[1.0]"),
            "cases[0].measured",
        ),
    ] {
        let e = myriad_scenario::validation::parse_validation("v.yaml", &text).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("v.yaml: {path}: expected a mapping (key: value), found a list")
        );
    }
}

/// Guards against cluster sizes the builder cannot hold: a count past 2^24 accelerators
/// (with a large switch radix it passed every check and the topology graph ran the machine
/// out of memory, its 32-bit vertex ids wrapping on the way) and more than 1,024 sites (a
/// DCI link list of every site pair, and switch site numbers wrapping past 65,535).
#[test]
fn cluster_sizes_past_the_supported_limits_are_errors() {
    let cases = [
        (
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 4294967296, scale_out: {switch_radix: 1024}}\n".to_string(),
            "s.yaml: cluster.count: 4294967296 is more than the 16777216 accelerators supported",
        ),
        (
            "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 560000, sites: 70000, dci: {gbps_per_site: 400, distance_km: 10}}\n".to_string(),
            "s.yaml: cluster.sites: 70000 is more than the 1024 supported",
        ),
    ];
    for (text, expect) in cases {
        assert_eq!(parse(&text).unwrap_err().to_string(), expect);
    }
    // At the limits, both parse.
    parse("format: myriad/1\ncluster: {accelerator: h100-sxm, count: 16777216}\n").unwrap();
    parse("format: myriad/1\ncluster: {accelerator: h100-sxm, count: 8192, sites: 1024, dci: {gbps_per_site: 400, distance_km: 10}}\n").unwrap();
}

/// `serde_json::Value` reads a non-finite float as `null`, so `deadline_days: .nan` would
/// have read as no deadline; and the parsers' own errors name a line, not the field. Every
/// non-finite number, in YAML or JSON, at any depth, is an error at its field path.
#[test]
fn non_finite_numbers_are_errors_at_their_field() {
    let plan = |v: &str| {
        format!(
            "{BASE}planning:\n  accelerators: [h100-sxm]\n  counts: [1024]\n  deadline_days: {v}\n"
        )
    };
    for v in [".nan", ".NaN", ".inf", "-.Inf", "1e999", "!!float .nan"] {
        let e = parse(&plan(v)).unwrap_err();
        assert_eq!(e.path, "planning.deadline_days", "{v}: {e}");
        assert!(e.message.contains("expected a finite number"), "{v}: {e}");
    }
    let e = parse(&format!("{BASE}planning:\n  counts: [1024, .inf]\n")).unwrap_err();
    assert_eq!(e.path, "planning.counts[1]", "{e}");
    assert!(e.message.contains("expected a finite number"), "{e}");
    // A required number: the same message, not a type error about null.
    let e = parse("format: myriad/1\ncluster: {accelerator: h100-sxm, count: .nan}\n").unwrap_err();
    assert_eq!(e.path, "cluster.count", "{e}");
    assert!(e.message.contains("expected a finite number"), "{e}");
    // JSON has no literal for them; the syntax error names the field too.
    for v in ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"] {
        let text = format!(
            "{{\"format\": \"myriad/1\",\n \"cluster\": {{\"accelerator\": \"h100-sxm\", \"count\": 8,\n \"datacenter\": {{\"pue\": {v}}}}}}}"
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.path, "cluster.datacenter.pue", "{v}: {e}");
        assert!(e.message.contains("expected a finite number"), "{v}: {e}");
        assert!(e.message.contains("line 3"), "{v}: {e}");
    }
    // Other JSON syntax errors stay document-level.
    let e = parse(r#"{"format": "myriad/1", "cluster": {"count": 8,}}"#).unwrap_err();
    assert_eq!(e.path, "(document)", "{e}");
    // A value that parses to a finite number is untouched.
    let s = parse(&plan("1e2")).unwrap();
    assert_eq!(s.planning.unwrap().deadline_days, Some(100.0));
}

/// JSON kept the last of two equal keys (YAML rejected them, without a field path): a key
/// given twice in one mapping is an error at its path in both.
#[test]
fn duplicate_keys_are_errors_at_their_path() {
    let json = r#"{"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 16, "count": 8}}"#;
    let e = parse(json).unwrap_err();
    assert_eq!(e.path, "cluster.count", "{e}");
    assert!(e.message.contains("duplicate key"), "{e}");
    let e = parse(&format!("{BASE}  count: 8\n")).unwrap_err();
    assert_eq!(e.path, "cluster.count", "{e}");
    assert!(e.message.contains("duplicate key"), "{e}");
    let e = parse(&format!("{BASE}format: myriad/1\n")).unwrap_err();
    assert_eq!(e.path, "format", "{e}");
    // The same key in two different mappings is fine.
    let two = r#"{"format": "myriad/1", "name": "n", "cluster": {"accelerator": "h100-sxm", "count": 8, "name": 1}}"#;
    assert!(!parse(two).unwrap_err().message.contains("duplicate"));
}

/// serde's messages named Rust types (`expected u32`, `expected struct TrainingSpec`,
/// `expected f64`) and, for a choice given as a number or a mapping, no choice at all
/// (`expected string or map`, `expected a map with a single key`, `expected unit`); the
/// number 3 was shown as `floating point 3.0`.
#[test]
fn type_errors_say_what_the_file_must_hold() {
    let cases = [
        (format!("{BASE}training: {{tp: 2.5}}\n"), "s.yaml: training.tp: invalid type: floating point `2.5`, expected a whole number from 0 to 4294967295"),
        (format!("{BASE}training: {{zero_stage: 300}}\n"), "s.yaml: training.zero_stage: invalid value: integer `300`, expected a whole number from 0 to 255"),
        (format!("{BASE}training: 5\n"), "s.yaml: training: invalid type: integer `5`, expected a mapping (key: value)"),
        (format!("{BASE}  datacenter: {{pue: abc}}\n"), "s.yaml: cluster.datacenter.pue: invalid type: string \"abc\", expected a number"),
        (format!("{BASE}training: {{recompute_modules: 3}}\n"), "s.yaml: training.recompute_modules: invalid type: integer `3`, expected a list"),
        (format!("{BASE}training: {{recompute: 3}}\n"), "s.yaml: training.recompute: invalid type: integer `3`, expected one of `none`, `selective`, `full`"),
        (format!("{BASE}  scale_out: {{topology: {{}}}}\n"), "s.yaml: cluster.scale_out.topology: invalid value: map, expected one of `fat-tree`, `rail-optimized`, `rail-only`, `spine-leaf`"),
        (format!("{BASE}  scale_out: {{topology: {{fat-tree: 1, rail-only: 1}}}}\n"), "s.yaml: cluster.scale_out.topology: invalid value: map, expected one of `fat-tree`, `rail-optimized`, `rail-only`, `spine-leaf` (a mapping holds one of them as its only key)"),
        (format!("{BASE}  scale_out: {{topology: {{fat-tree: 1}}}}\n"), "s.yaml: cluster.scale_out.topology.fat-tree: invalid type: integer `1`, expected `fat-tree` alone, with no value"),
        // Every enum is a name; the mapping form was accepted with a null value only.
        (format!("{BASE}  scale_out: {{topology: {{fat-tree: null}}}}\n"), "s.yaml: cluster.scale_out.topology.fat-tree: invalid type: null, expected `fat-tree` alone, with no value"),
        (format!("{BASE}training: {{recompute: {{full: null}}}}\nmodel: {{preset: gpt3-175b}}\n"), "s.yaml: training.recompute.full: invalid type: null, expected `full` alone, with no value"),
        (format!("{BASE}serving: {{mode: -3}}\n"), "s.yaml: serving.mode: invalid type: integer `-3`, expected one of `aggregated`, `disaggregated`"),
    ];
    for (text, expect) in cases {
        let e = parse(&text).unwrap_err();
        assert_eq!(e.to_string(), expect);
    }
}

/// The YAML reader's own messages spoke to a Rust caller ("multiple YAML documents
/// detected; use from_str_multiple or from_str_multiple_with_options", "recursive
/// references require weak recursion types") or printed a Rust value ("budget breached:
/// Nodes { nodes: 250001 }").
#[test]
fn yaml_reader_limits_are_said_in_the_file_s_terms() {
    let two = format!("{BASE}---\n{BASE}");
    assert_eq!(
        parse(&two).unwrap_err().to_string(),
        "s.yaml: (document): invalid YAML: line 6 column 1: a second YAML document (after `---`); a file holds one"
    );
    assert_eq!(
        parse("a: &a [*a]\n").unwrap_err().to_string(),
        "s.yaml: (document): invalid YAML: line 1 column 8: an alias (`*name`) inside the node its anchor names; a value cannot contain itself"
    );
    // Ten levels of ten aliases each: 10^11 values once expanded.
    let mut laughs = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let e = parse(&laughs).unwrap_err().to_string();
    assert!(
        e.starts_with("s.yaml: (document): invalid YAML: line ")
            && e.ends_with(": more than 250000 values (aliases expanded: 250001 so far); the file is too large"),
        "{e}"
    );
    let deep: String = (0..70)
        .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
        .collect();
    let e = parse(&deep).unwrap_err().to_string();
    assert!(
        e.ends_with("nested 65 levels deep; a file may nest at most 64"),
        "{e}"
    );
}

/// u32::MAX layers passed the checks and `myriad train` aborted allocating 32 GiB (one
/// candidate per layer count for block recompute); u32::MAX MTP modules wrapped the
/// pipeline's slot count (layers + 2 + MTP) in u32.
#[test]
fn layer_counts_past_the_supported_limit_are_errors() {
    let e = parse(&format!(
        "{BASE}model: {{preset: llama3-8b, layers: 4294967295}}\n"
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: model.layers: 4294967295 is more than the 16384 layers supported"
    );
    let e = parse(&format!(
        "{BASE}model: {{preset: llama3-8b, mtp_layers: 16385}}\n"
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: model.mtp_layers: 16385 is more than the 16384 layers supported"
    );
    assert!(parse(&format!(
        "{BASE}model: {{preset: llama3-8b, layers: 16384, mtp_layers: 16384}}\n"
    ))
    .is_ok());
}

/// Two job classes (or inference services, or regions) of one name ran and were reported
/// as two rows of that name (`"class": "a"` twice), which no reader could tell apart.
#[test]
fn scheduling_names_are_given_once() {
    let class = |n: &str, size: u32| {
        format!("{{name: {n}, share: 1, size: {{dist: fixed, value: {size}}}, duration_h: {{dist: fixed, value: 1}}}}")
    };
    let sched = |rest: &str| {
        format!("{BASE}scheduling:\n  arrivals: {{jobs: 100, load: 0.9}}\n  policies: [{{name: fifo}}]\n{rest}")
    };
    let e = parse(&sched(&format!(
        "  classes: [{}, {}, {}]\n",
        class("a", 8),
        class("b", 8),
        class("a", 512)
    )))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: scheduling.classes[2].name: `a` is given twice (classes[0]); give each its own name"
    );
    let e = parse(&sched(
        "  inference: [{name: s, replica_size: 8, peak_replicas: 2}, {name: s, replica_size: 8, peak_replicas: 4}]\n",
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: scheduling.inference[1].name: `s` is given twice (inference[0]); give each its own name"
    );
    let e = parse(&sched("  regions: {names: [east, east]}\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: scheduling.regions.names[1]: `east` is given twice (regions.names[0]); give each its own name"
    );
    assert!(parse(&sched(&format!(
        "  classes: [{}, {}]\n",
        class("a", 8),
        class("b", 8)
    )))
    .is_ok());
}

/// A whole number written as a float (`1024.0`, YAML's `1e3`) is an integer to JSON Schema,
/// whose checked-in copy says `integer` for these fields, and to JSON writers (Python's
/// `json.dumps(1024.0)`); the parser refused it (`invalid type: floating point 1024.0,
/// expected u64`). A fraction, or a whole number out of range, is still an error.
#[test]
fn whole_numbers_written_as_floats_are_integers() {
    let s = parse(&BASE.replace("count: 1024", "count: 1024.0")).unwrap();
    assert_eq!(s.cluster.count, 1024);
    let s = parse(&format!(
        "{BASE}training: {{tp: 8.0, global_batch: 2e3, zero_stage: 1.0}}\n"
    ))
    .unwrap();
    let t = s.training.unwrap();
    assert_eq!(
        (t.tp, t.global_batch, t.zero_stage),
        (Some(8), Some(2000), Some(1))
    );
    let json = r#"{"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 1024.0}}"#;
    assert_eq!(parse(json).unwrap().cluster.count, 1024);
    let cases = [
        (format!("{BASE}training: {{tp: 8.5}}\n"), "s.yaml: training.tp: invalid type: floating point `8.5`, expected a whole number from 0 to 4294967295"),
        (format!("{BASE}training: {{tp: 4294967296.0}}\n"), "s.yaml: training.tp: invalid value: integer `4294967296`, expected a whole number from 0 to 4294967295"),
        (format!("{BASE}training: {{tp: -8.0}}\n"), "s.yaml: training.tp: invalid value: integer `-8`, expected a whole number from 0 to 4294967295"),
        (format!("{BASE}training: {{global_batch: 1e20}}\n"), "s.yaml: training.global_batch: invalid type: floating point `1e+20`, expected a whole number from 0 to 18446744073709551615"),
    ];
    for (text, expect) in cases {
        assert_eq!(parse(&text).unwrap_err().to_string(), expect);
    }
}

/// `{}` prints an f64 in full: `mean: 1e300` was echoed as a 1 and 300 zeros.
#[test]
fn huge_and_tiny_numbers_in_messages_are_shown_in_exponent_form() {
    let serve = |out: &str| {
        format!("{BASE}model: {{preset: llama3-8b}}\nserving: {{input: {{mean: 100}}, output: {out}}}\n")
    };
    assert_eq!(
        parse(&serve("{mean: 1e300}")).unwrap_err().to_string(),
        "s.yaml: serving.output.mean: 1e300 tokens is more than the 1000000000 supported"
    );
    assert_eq!(
        parse(&serve("{mean: 1.5e22}")).unwrap_err().to_string(),
        "s.yaml: serving.output.mean: 1.5e22 tokens is more than the 1000000000 supported"
    );
    // Whole u64 values are kept digit for digit.
    assert_eq!(
        parse(&BASE.replace("count: 1024", "count: 18446744073709551615")).unwrap_err().to_string(),
        "s.yaml: cluster.count: 18446744073709551615 is more than the 16777216 accelerators supported"
    );
    assert_eq!(
        parse(&format!("{BASE}  datacenter: {{pue: 1e-300}}\n"))
            .unwrap_err()
            .to_string(),
        "s.yaml: cluster.datacenter.pue: 1e-300 is not between 1.0 and 3.0"
    );
}

/// `name:` left blank (YAML null) was an error (`invalid type: null, expected a string`),
/// although every other optional key of the format page takes null for "not given".
#[test]
fn a_blank_name_is_no_name() {
    let s = parse(&BASE.replace("format: myriad/1\n", "format: myriad/1\nname:\n")).unwrap();
    assert_eq!(s.name, "");
    let s = parse(&BASE.replace("format: myriad/1\n", "format: myriad/1\nname: null\n")).unwrap();
    assert_eq!(s.name, "");
    let e =
        parse(&BASE.replace("format: myriad/1\n", "format: myriad/1\nname: [a]\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.yaml: name: invalid type: sequence, expected a string"
    );
}

/// Null means "not given" for every key: a key with a default takes it given null, as an
/// optional key is absent (`oversubscription`, `sites`, `datacenter`, `planes` were type
/// errors). One entry per key with a default, in every section of the format.
#[test]
fn null_takes_the_default_for_every_defaulted_key() {
    let c = "cluster: {accelerator: h100-sxm, count: 1024, K}";
    let so = "cluster: {accelerator: h100-sxm, count: 1024, scale_out: {K}}";
    let dc = "cluster: {accelerator: h100-sxm, count: 1024, datacenter: {K}}";
    let fault = "cluster: {accelerator: h100-sxm, count: 1024, faults: [{link: 0, K}]}";
    let moe = "cluster: {accelerator: h100-sxm, count: 1024}\nmodel: {preset: mixtral-8x7b, moe: {experts: 8, top_k: 2, expert_ffn_hidden: 14336, K}}";
    let pl = "cluster: {accelerator: h100-sxm, count: 1024}\nplanning: {K}";
    let rel = "cluster: {accelerator: h100-sxm, count: 1024}\nreliability: {K}";
    let sc = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {K}";
    let arr = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {arrivals: {K}}";
    let cls =
        "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {classes: [{name: a, K}]}";
    let dist = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {classes: [{name: a, size: {dist: fixed, value: 8, K}}]}";
    let inf = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {inference: [{name: chat, peak_replicas: 2, K}]}";
    let reg = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {regions: {K}}";
    let fl = "cluster: {accelerator: h100-sxm, count: 1024}\nscheduling: {failures: {K}}";
    let cases: &[(&str, &[&str])] = &[
        (
            c,
            &[
                "scale_out",
                "sites",
                "datacenter",
                "faults",
                "dci",
                "scale_up",
            ],
        ),
        (
            so,
            &[
                "topology",
                "oversubscription",
                "planes",
                "qps_per_connection",
                "tiers",
            ],
        ),
        (dc, &["pue", "usd_per_kwh"]),
        (fault, &["at_s"]),
        (moe, &["shared_experts", "dense_layers"]),
        (pl, &["accelerators", "counts"]),
        (
            rel,
            &[
                "failures",
                "planned",
                "recovery",
                "spares",
                "checkpoint",
                "storage",
            ],
        ),
        (
            sc,
            &["policies", "arrivals", "classes", "inference", "loads"],
        ),
        (arr, &["jobs", "daily_amplitude", "peak_hour"]),
        (
            cls,
            &[
                "kind",
                "share",
                "size",
                "duration_h",
                "gang",
                "constraint",
                "priority",
                "data_gb",
                "comm_share",
            ],
        ),
        (dist, &["values", "weights"]),
        (inf, &["replica_size", "curve", "priority", "region"]),
        (reg, &["names", "home_shares", "utc_offset_hours"]),
        (fl, &["scale", "checkpoint_h"]),
    ];
    for (doc, keys) in cases {
        for key in *keys {
            let with = format!(
                "format: myriad/1\n{}\n",
                doc.replace("K", &format!("{key}: null"))
            );
            let without = format!(
                "format: myriad/1\n{}\n",
                doc.replace(", K", "").replace("K", "")
            );
            let expected = parse(&without).unwrap_or_else(|e| panic!("{without}: {e}"));
            match parse(&with) {
                Ok(s) => assert_eq!(s, expected, "{key}: null"),
                Err(e) => panic!("{key}: null: {e}"),
            }
        }
    }
    // A required key given null is missing, said so.
    assert_eq!(
        parse("format: myriad/1\ncluster: {accelerator: h100-sxm, count: null}\n")
            .unwrap_err()
            .to_string(),
        "s.yaml: cluster.count: null, but this key is required (it has no default)"
    );
    // The schema says the same: every key that is not required takes null.
    fn walk(v: &serde_json::Value, at: &str) {
        if let Some(o) = v.as_object() {
            let req: Vec<&str> = o
                .get("required")
                .and_then(|r| r.as_array())
                .map(|r| r.iter().filter_map(|k| k.as_str()).collect())
                .unwrap_or_default();
            if let Some(props) = o.get("properties").and_then(|p| p.as_object()) {
                for (k, p) in props {
                    if req.contains(&k.as_str()) {
                        continue;
                    }
                    let t = serde_json::to_string(p).unwrap();
                    let takes_null = p["type"]
                        .as_array()
                        .is_some_and(|t| t.contains(&"null".into()))
                        || p["anyOf"]
                            .as_array()
                            .is_some_and(|a| a.contains(&serde_json::json!({"type": "null"})));
                    assert!(takes_null, "{at}.{k} does not take null in the schema: {t}");
                }
            }
            for (k, c) in o {
                walk(c, &format!("{at}/{k}"));
            }
        }
    }
    walk(&myriad_scenario::schema(), "");
}

/// A DCI longer than the Earth's circumference (`distance_km: 1e300`) was accepted, and its
/// latency with it.
#[test]
fn a_dci_longer_than_the_earth_is_an_error() {
    let doc = |km: &str| {
        format!("format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 1024, sites: 2, dci: {{gbps_per_site: 102400, distance_km: {km}}}}}\n")
    };
    assert_eq!(
        parse(&doc("1e300")).unwrap_err().to_string(),
        "s.yaml: cluster.dci.distance_km: 1e300 km is more than the Earth's circumference (40075 km); no fibre between two sites is longer"
    );
    assert!(parse(&doc("40075")).is_ok());
    assert!(parse(&doc("80")).is_ok());
}

/// The energy price was bounded below only, with a message that named neither the value nor
/// the unit (`must not be negative`), and `usd_per_kwh: 1e12` or `1e300` was accepted and
/// priced a year's energy at 1e298 B USD. Now a price from 0 to `MAX_USD_PER_KWH`, and an
/// error naming the file, the field, the value and what it takes.
#[test]
fn energy_price_is_bounded_and_named() {
    let dc = |v: &str| format!("{BASE}  datacenter: {{usd_per_kwh: {v}}}\n");
    for v in ["-0.1", "-1e-9", "10.001", "1e12", "1e300"] {
        let e = parse(&dc(v)).unwrap_err();
        assert_eq!(e.path, "cluster.datacenter.usd_per_kwh", "{v}: {e}");
        assert!(
            e.to_string()
                .starts_with("s.yaml: cluster.datacenter.usd_per_kwh: "),
            "{v}: {e}"
        );
        assert!(
            e.message
                .contains("must be a non-negative price in USD per kWh, at most 10"),
            "{v}: {e}"
        );
    }
    assert_eq!(
        parse(&dc("-0.1")).unwrap_err().to_string(),
        "s.yaml: cluster.datacenter.usd_per_kwh: -0.1 must be a non-negative price in USD per kWh, at most 10"
    );
    // Non-finite prices stop at the reader, naming the field.
    for v in [".nan", ".inf"] {
        let e = parse(&dc(v)).unwrap_err();
        assert_eq!(e.path, "cluster.datacenter.usd_per_kwh", "{v}: {e}");
    }
    for v in ["0", "0.0", "1e-300", "0.08", "10"] {
        let s = parse(&dc(v)).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(s.cluster.datacenter.usd_per_kwh, v.parse::<f64>().unwrap());
    }
}

/// `planning.counts` took any u64 (`[99999999999]`, `[18446744073709551615]`) and only
/// `plan` skipped it; a count given twice passed the parser. Each count is now an error
/// naming its entry unless it is from 1 to `MAX_ACCELERATORS` and given once.
#[test]
fn planning_counts_are_bounded_and_given_once() {
    let pl = |v: &str| format!("{BASE}planning: {{counts: {v}}}\n");
    for (v, path, msg) in [
        (
            "[0]",
            "planning.counts[0]",
            "0 must be an accelerator count from 1 to 16777216, the most a cluster holds",
        ),
        (
            "[1024, 16777217]",
            "planning.counts[1]",
            "16777217 must be an accelerator count from 1 to 16777216, the most a cluster holds",
        ),
        (
            "[18446744073709551615]",
            "planning.counts[0]",
            "18446744073709551615 must be an accelerator count from 1 to 16777216, the most a cluster holds",
        ),
        (
            "[256, 512, 256]",
            "planning.counts[2]",
            "256 is given twice (also [0]); give each count once",
        ),
    ] {
        let e = parse(&pl(v)).unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), (path, msg), "{v}: {e}");
        assert!(e.to_string().starts_with("s.yaml: planning.counts["), "{e}");
    }
    for v in ["[-1]", "[1.5]"] {
        let e = parse(&pl(v)).unwrap_err();
        assert_eq!(e.path, "planning.counts[0]", "{v}: {e}");
    }
    let s = parse(&pl("[1, 16777216]")).unwrap();
    assert_eq!(s.planning.unwrap().counts, [1, 16777216]);
}
