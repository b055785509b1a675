//! Shared test helpers: hierarchy levels built by hand from catalog numbers, and the
//! measured-data file.
#![allow(dead_code)]

use myriad_cluster::Level;
use std::path::PathBuf;

/// hgx-h100 (crates/myriad-catalog/data/scale_up.yaml): 8 GPUs, NVLink4 450 GB/s per
/// direction, latency_us 2.0, collective_efficiency 0.80, in-network reduction (NVLS).
pub fn hgx_h100_domain() -> Level {
    Level {
        name: "domain".into(),
        size: 8,
        gbps_per_accelerator: 450.0,
        latency_us: 2.0,
        efficiency: 0.80,
        in_network_reduction: true,
        pxn_us: 0.0,
    }
}

/// infiniband-ndr (crates/myriad-catalog/data/fabrics.yaml): 400 Gb/s = 50 GB/s per GPU
/// (one ConnectX-7 per GPU on DGX H100), link_efficiency 0.94, base_latency_us 2.0,
/// non-blocking, no SHARP.
pub fn ndr_cluster(gpus: u64) -> Level {
    Level {
        name: "cluster".into(),
        size: gpus,
        gbps_per_accelerator: 50.0,
        latency_us: 2.0,
        efficiency: 0.94,
        in_network_reduction: false,
        pxn_us: 0.0,
    }
}

/// DGX H100 nodes on a non-blocking NDR fabric.
pub fn dgx_h100_cluster(nodes: u64) -> Vec<Level> {
    vec![hgx_h100_domain(), ndr_cluster(8 * nodes)]
}

pub fn validation_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/validation/collective-public.json")
}

/// The measured data, or None (with a printed note) when the file is absent.
pub fn load_validation() -> Option<serde_json::Value> {
    let p = validation_path();
    match std::fs::read_to_string(&p) {
        Ok(s) => Some(serde_json::from_str(&s).expect("collective-public.json parses")),
        Err(e) => {
            println!("NOTE: skipping: {} not readable ({e})", p.display());
            None
        }
    }
}

pub fn case<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("case {id} in collective-public.json"))
}

pub const MIB: f64 = 1024.0 * 1024.0;
pub const GIB: f64 = 1024.0 * MIB;
