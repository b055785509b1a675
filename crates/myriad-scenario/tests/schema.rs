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

/// Every bounded number the parser checks carries its bounds in the schema: a schema
/// validator let `pue: 0.5`, `comm_share: 2` or `utc_offset_hours: [5.3]` through, and the
/// parser then refused them.
#[test]
fn numbers_have_the_parser_s_bounds() {
    let s = myriad_scenario::schema();
    let d = &s["$defs"];
    let pue = &d["DatacenterSpec"]["properties"]["pue"];
    assert_eq!(
        (pue["minimum"].as_f64(), pue["maximum"].as_f64()),
        (Some(1.0), Some(3.0)),
        "{pue}"
    );
    let price = &d["DatacenterSpec"]["properties"]["usd_per_kwh"];
    assert_eq!(
        (price["minimum"].as_f64(), price["maximum"].as_f64()),
        (Some(0.0), Some(myriad_scenario::MAX_USD_PER_KWH)),
        "{price}"
    );
    let counts = &d["PlanningSpec"]["properties"]["counts"];
    assert_eq!(counts["uniqueItems"], true, "{counts}");
    assert_eq!(counts["items"]["minimum"], 1, "{counts}");
    assert_eq!(
        counts["items"]["maximum"],
        myriad_scenario::MAX_ACCELERATORS,
        "{counts}"
    );
    let class = &d["ClassSpec"]["properties"];
    assert_eq!(class["comm_share"]["maximum"].as_f64(), Some(1.0));
    assert_eq!(class["share"]["minimum"].as_f64(), Some(0.0));
    let arr = &d["ArrivalSpec"]["properties"];
    assert_eq!(arr["daily_amplitude"]["maximum"].as_f64(), Some(1.0));
    assert_eq!(arr["peak_hour"]["exclusiveMaximum"].as_f64(), Some(24.0));
    assert_eq!(arr["rate_per_hour"]["exclusiveMinimum"].as_f64(), Some(0.0));
    let off = &d["RegionsSpec"]["properties"]["utc_offset_hours"]["items"];
    assert_eq!(off["multipleOf"].as_f64(), Some(0.25), "{off}");
    assert_eq!(off["minimum"].as_f64(), Some(-12.0));
    let curve = &d["ServiceSpec"]["properties"]["curve"]["items"];
    assert_eq!(curve["maximum"].as_f64(), Some(1.0), "{curve}");
    let dist = &d["DistSpec"]["properties"];
    assert_eq!(dist["sigma"]["maximum"].as_f64(), Some(10.0));
    assert_eq!(dist["median"]["exclusiveMinimum"].as_f64(), Some(0.0));
    let ck = &d["CheckpointSpec"]["properties"]["memory_lost_fraction"];
    assert_eq!(ck["maximum"].as_f64(), Some(1.0), "{ck}");
    let dci = &d["DciSpec"]["properties"];
    assert_eq!(
        dci["distance_km"]["maximum"].as_f64(),
        Some(myriad_scenario::EARTH_CIRCUMFERENCE_KM)
    );
    assert_eq!(dci["gbps_per_site"]["exclusiveMinimum"].as_f64(), Some(0.0));
    let sv = &d["ServingSpec"]["properties"];
    assert_eq!(sv["kv_cache_fraction"]["maximum"].as_f64(), Some(1.0));
    assert_eq!(
        sv["prefix_cache_hit"]["exclusiveMaximum"].as_f64(),
        Some(1.0)
    );
}
