//! The checked-in JSON Schema must match the one generated from the types.
//! Regenerate with `UPDATE_SCHEMA=1 cargo test -p myriad-scenario --test schema`.

#[test]
fn checked_in_schema_is_current() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/myriad-1.schema.json"
    );
    let generated = serde_json::to_string_pretty(&myriad_scenario::schema()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "schema/myriad-1.schema.json is stale: run UPDATE_SCHEMA=1 cargo test -p myriad-scenario --test schema"
    );
}

#[test]
fn schema_names_the_documented_keys() {
    let s = serde_json::to_string(&myriad_scenario::schema()).unwrap();
    for key in [
        "switch_radix",
        "oversubscription",
        "island",
        "gbps_per_site",
        "distance_km",
        "pue",
        "usd_per_kwh",
        "global_batch",
        "distributed_optimizer",
        "tokens",
    ] {
        assert!(s.contains(&format!("\"{key}\"")), "schema lacks {key}");
    }
}

/// Every integer field has the range the parser enforces: `tp: 1e42` passed a schema
/// validator (`format: uint32` alone) and failed the parser.
#[test]
fn integers_have_the_parser_s_range() {
    fn walk(v: &serde_json::Value, at: &str, n: &mut usize) {
        if let Some(o) = v.as_object() {
            if o.get("type").is_some_and(|t| {
                t == "integer" || t.as_array().is_some_and(|a| a.contains(&"integer".into()))
            }) {
                assert!(
                    o.get("minimum").is_some() && o.get("maximum").is_some(),
                    "{at}: {v}"
                );
                *n += 1;
            }
            for (k, c) in o {
                walk(c, &format!("{at}/{k}"), n);
            }
        } else if let Some(a) = v.as_array() {
            for (i, c) in a.iter().enumerate() {
                walk(c, &format!("{at}/{i}"), n);
            }
        }
    }
    let s = myriad_scenario::schema();
    let mut n = 0;
    walk(&s, "", &mut n);
    assert!(n > 50, "{n} integers");
    let tp = &s["$defs"]["TrainingSpec"]["properties"]["tp"];
    assert_eq!(tp["maximum"], u32::MAX, "{tp}");
    // Where the parser checks a tighter range, the schema gives it.
    let c = &s["$defs"]["ClusterSpec"]["properties"];
    assert_eq!(c["count"]["maximum"], myriad_scenario::MAX_ACCELERATORS);
    assert_eq!(c["sites"]["maximum"], myriad_scenario::MAX_SITES);
    let so = &s["$defs"]["ScaleOutSpec"]["properties"];
    assert_eq!(so["tiers"]["maximum"], myriad_scenario::MAX_TIERS);
    assert_eq!(so["planes"]["maximum"], 8);
}
