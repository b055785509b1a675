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
        (BASE.replace("count: 1024", "count: -3"), "s.yaml: cluster.count: invalid value: integer `-3`, expected u64"),
        (BASE.replace("format: myriad/1", "format: myriad/2"), "s.yaml: format: `myriad/2` is not supported; expected `myriad/1`"),
        (BASE.replace("  count: 1024\n", ""), "s.yaml: cluster.count: missing required key"),
        (format!("{BASE}  sites: 2\n"), "s.yaml: cluster.dci: 2 sites need a DCI link: {gbps_per_site, distance_km}"),
        (format!("{BASE}training: {{zero_stage: 4}}\n"), "s.yaml: training.zero_stage: 4 is not 0, 1, 2 or 3"),
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
