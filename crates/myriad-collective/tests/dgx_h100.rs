//! Accuracy against one DGX H100 (8 GPUs, NVLS): the full nccl-tests all_reduce_perf curve
//! and the NCCL maintainers' single-node figures. Run with `--nocapture` to see the table.

mod common;

use common::*;
use myriad_collective::{time, Algorithm, GroupSpan, Op, Protocol};

#[test]
fn dgx_h100_all_reduce_curve() {
    let Some(v) = load_validation() else { return };
    let c = case(&v, "nccl-allreduce-dgxh100-8gpu-1node");
    let levels = vec![hgx_h100_domain()];
    let group = GroupSpan::new(vec![8]);
    println!(
        "\nDGX H100 all-reduce, 8 GPUs (measured: faster of out-of-place / in-place)\n\
         {:>12} {:>10} {:>10} {:>8} {:>9} {:>9} {:>8}  algorithm/protocol",
        "bytes", "meas us", "model us", "t err", "meas bus", "model bus", "bus err"
    );
    let (mut worst_big, mut worst_small) = (0.0f64, 0.0f64);
    let mut failures = Vec::new();
    for p in c["measured"]["points"].as_array().unwrap() {
        let bytes = p["bytes"].as_f64().unwrap();
        let oop = p["oop_time_us"].as_f64().unwrap();
        let ip = p["ip_time_us"].as_f64().unwrap();
        // The two columns are the same operation; the slower one of a pair is noise
        // (32 B out-of-place took 68 µs against 13.5 µs in place).
        let meas_us = oop.min(ip);
        let meas_bus = bytes / (meas_us * 1e-6) * 1e-9 * 2.0 * 7.0 / 8.0;
        let r = time(Op::AllReduce, Algorithm::Auto, bytes, &group, &levels).unwrap();
        let model_us = r.time_s * 1e6;
        let t_err = model_us / meas_us - 1.0;
        let bus_err = r.busbw_gbps / meas_bus - 1.0;
        println!(
            "{:>12} {:>10.2} {:>10.2} {:>+7.1}% {:>9.2} {:>9.2} {:>+7.1}%  {:?}/{:?}",
            bytes as u64,
            meas_us,
            model_us,
            100.0 * t_err,
            meas_bus,
            r.busbw_gbps,
            100.0 * bus_err,
            r.algorithm,
            r.protocol
        );
        if bytes >= MIB {
            worst_big = worst_big.max(bus_err.abs());
            if bus_err.abs() > 0.15 {
                failures.push(format!(
                    "{bytes} B: busbw error {:.1}% > 15%",
                    100.0 * bus_err
                ));
            }
        } else {
            worst_small = worst_small.max(t_err.abs());
            if t_err.abs() > 0.25 {
                failures.push(format!("{bytes} B: time error {:.1}% > 25%", 100.0 * t_err));
            }
        }
    }
    println!(
        "max |busbw error| >= 1 MiB: {:.1}%; max |time error| < 1 MiB: {:.1}%",
        100.0 * worst_big,
        100.0 * worst_small
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn dgx_h100_large_all_reduce_uses_nvls_and_small_uses_ll() {
    let levels = vec![hgx_h100_domain()];
    let g = GroupSpan::new(vec![8]);
    let big = time(Op::AllReduce, Algorithm::Auto, 8.0 * GIB, &g, &levels).unwrap();
    assert_eq!(big.algorithm, Algorithm::Nvls);
    assert_eq!(big.protocol, Protocol::Simple);
    let small = time(Op::AllReduce, Algorithm::Auto, 8.0, &g, &levels).unwrap();
    assert_eq!(small.algorithm, Algorithm::Ring);
    assert_eq!(small.protocol, Protocol::Ll);
}

#[test]
fn nccl_maintainer_single_node_figures() {
    let Some(v) = load_validation() else { return };
    let m = &case(&v, "nccl-expectations-h100-maintainers")["measured"];
    let levels = vec![hgx_h100_domain()];
    let g = GroupSpan::new(vec![8]);
    // NVLS all-reduce peak: 480 GB/s busbw, 275 GB/s algbw.
    let nvls = time(Op::AllReduce, Algorithm::Nvls, 16.0 * GIB, &g, &levels).unwrap();
    let peak_bus = m["allreduce_nvls_8gpu_peak_busbw_GBps"].as_f64().unwrap();
    let peak_alg = m["allreduce_nvls_8gpu_peak_algbw_GBps"].as_f64().unwrap();
    println!(
        "NVLS 16 GiB: busbw {:.1} (measured {peak_bus}), algbw {:.1} (measured {peak_alg})",
        nvls.busbw_gbps, nvls.algbw_gbps
    );
    assert!((nvls.busbw_gbps / peak_bus - 1.0).abs() < 0.03);
    assert!((nvls.algbw_gbps / peak_alg - 1.0).abs() < 0.03);
    // Ring and the non-all-reduce collectives: ~370 GB/s effective busbw on NVLink.
    let ring_bus = m["nvlink_effective_busbw_ring_or_non_allreduce_GBps"]
        .as_f64()
        .unwrap();
    for op in [Op::AllGather, Op::ReduceScatter] {
        let r = time(op, Algorithm::Auto, 16.0 * GIB, &g, &levels).unwrap();
        println!(
            "{op:?} 16 GiB: busbw {:.1} via {:?} (measured ~{ring_bus})",
            r.busbw_gbps, r.algorithm
        );
        assert!(
            (r.busbw_gbps / ring_bus - 1.0).abs() < 0.05,
            "{op:?} {}",
            r.busbw_gbps
        );
    }
    let ring = time(Op::AllReduce, Algorithm::Ring, 16.0 * GIB, &g, &levels).unwrap();
    assert!(
        (ring.busbw_gbps / ring_bus - 1.0).abs() < 0.05,
        "ring {}",
        ring.busbw_gbps
    );
    // "256 MB is too small to reach peak."
    let mid = time(Op::AllReduce, Algorithm::Auto, 256.0 * MIB, &g, &levels).unwrap();
    assert!(mid.busbw_gbps < 0.95 * peak_bus, "{}", mid.busbw_gbps);
}
