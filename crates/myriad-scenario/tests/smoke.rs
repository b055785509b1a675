#[test]
fn unknown_key_names_path_and_suggestion() {
    let text = "format: myriad/1\ncluster:\n  accelerator: h100-sxm\n  count: 1024\n  scale_out: {fabric: infiniband-ndr, topolgy: fat-tree}\n";
    let e = myriad_scenario::parse_scenario("t.yaml", text, myriad_catalog::catalog()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.yaml: cluster.scale_out.topolgy: unknown key; did you mean topology?"
    );
}
