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
