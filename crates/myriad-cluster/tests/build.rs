//! Hand-computed checks of the cluster builder: switch counts, cables, transceivers,
//! oversubscription in the levels, invariants, and error messages.

use myriad_catalog::catalog;
use myriad_cluster::{build, BuildError, BuiltCluster, LinkKind, Vertex, NO_RACK};
use myriad_scenario::{parse_scenario, Scenario};

fn scenario(yaml: &str) -> Scenario {
    parse_scenario("test.yaml", yaml, catalog()).unwrap_or_else(|e| panic!("{e}"))
}

fn built(yaml: &str) -> BuiltCluster {
    build(&scenario(yaml), catalog()).unwrap_or_else(|e| panic!("{e}"))
}

fn h100(count: u64, scale_out: &str) -> String {
    format!(
        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_up: hgx-h100, scale_out: {{{scale_out}}}}}"
    )
}

fn switches(b: &BuiltCluster, tier: &str) -> u64 {
    b.bom
        .tiers
        .iter()
        .find(|t| t.name == tier)
        .map(|t| t.switches)
        .unwrap_or(0)
}

fn tier_counts(b: &BuiltCluster) -> Vec<u64> {
    b.bom.tiers.iter().map(|t| t.switches).collect()
}

#[test]
fn dgx_superpod_1024_h100() {
    let b = built(&h100(
        1024,
        "fabric: infiniband-ndr, topology: fat-tree, tiers: 2",
    ));
    // 128 DGX H100 x 8 ConnectX-7 = 1,024 NDR ports. Radix 64, non-blocking: a leaf has 32
    // down and 32 up -> 1,024 / 32 = 32 leaves; 32 x 32 = 1,024 uplinks on 64-port spines
    // -> 16 spines (SuperPOD RA: 4 SUs x 8 leaves, spines = leaves x 32 / 64).
    assert_eq!(tier_counts(&b), vec![32, 16]);
    assert_eq!(b.bom.switches_total, 48);
    // Each leaf spreads 32 uplinks over 16 spines: bundles of 2 cables, 32 x 16 bundles.
    let fabric_bundles: Vec<u32> = (0..b.topology.links.len())
        .filter(|&i| b.topology.links.kind[i] == LinkKind::Fabric)
        .map(|i| b.topology.links.cables[i])
        .collect();
    assert_eq!(fabric_bundles.len(), 32 * 16);
    assert!(fabric_bundles.iter().all(|&c| c == 2));
    // Cables: 1,024 NIC-to-leaf + 1,024 leaf-to-spine. Rule: InfiniBand leaves sit in
    // network racks, so NIC-to-leaf is optical too; every optical cable has 2 transceivers.
    assert_eq!(b.bom.cables, 2048);
    assert_eq!(b.bom.optical_cables, 2048);
    assert_eq!(b.bom.copper_cables, 0);
    assert_eq!(b.bom.transceivers, 4096);
    // Racks: 4 DGX per rack -> 32 compute racks; 48 switches / 16 per rack -> 3 network racks.
    assert_eq!(b.bom.compute_racks, 32);
    assert_eq!(b.bom.network_racks, 3);
    assert_eq!(b.bom.racks, 35);
    // Ports used: leaves 32 x 64, spines 16 x 64 (all ports of every switch).
    assert_eq!(b.bom.tiers[0].ports_used, 2048);
    assert_eq!(b.bom.tiers[1].ports_used, 1024);
    assert_eq!(b.bom.scale_up_switch_chips, 128 * 4);

    // Power and cost from the same counts.
    let su = &b.scale_up;
    let f = &b.fabric;
    let it_kw = 128.0 * su.node_power_kw
        + 128.0 * su.fabric_power_kw_per_domain
        + 48.0 * f.switch.power_w / 1000.0
        + 4096.0 * f.transceiver.power_w / 1000.0;
    assert!((b.power.it_mw - it_kw / 1000.0).abs() < 1e-9);
    assert!((b.power.facility_mw - 1.2 * it_kw / 1000.0).abs() < 1e-9);
    let energy = 1.2 * it_kw / 1000.0 * 8760.0 * 1000.0 * 0.08;
    assert!((b.power.energy_cost_usd_per_year - energy).abs() < 1e-3);
    let capex = 128.0 * su.node_price_usd
        + 128.0 * su.fabric_price_usd_per_domain
        + 48.0 * f.switch.price_usd
        + 4096.0 * f.transceiver.price_usd;
    assert!((b.capex.total_usd - capex).abs() < 1e-3);
    // Peak bf16: 1,024 x 989.4 TFLOP/s = 1,013.1 PFLOP/s.
    let bf16 = *b.compute.peak_pflops.get("bf16").unwrap();
    assert!((bf16 - 1024.0 * b.accelerator.dense_tflops.bf16.unwrap() / 1000.0).abs() < 1e-9);
    assert!((b.compute.hbm_tib - 1024.0 * b.accelerator.hbm_gib / 1024.0).abs() < 1e-9);

    // Levels: NVLink domain of 8, a leaf of 32 GPUs (4 nodes), the whole 1,024.
    let sizes: Vec<u64> = b.levels.iter().map(|l| l.size).collect();
    assert_eq!(sizes, vec![8, 32, 1024]);
    assert_eq!(b.levels[0].gbps_per_accelerator, 450.0);
    // NVLS inside the node; no SHARP assumed on the scale-out levels.
    assert!(b.levels[0].in_network_reduction);
    assert!(!b.levels[1].in_network_reduction && !b.levels[2].in_network_reduction);
    // 8 x 400 Gb/s / 8 / 8 GPUs = 50 GB/s per GPU.
    assert_eq!(b.levels[2].gbps_per_accelerator, 50.0);
    // Latency: base (2.0 us across one switch, which holds two 3 m in-rack cables:
    // 2 x 3 x 5 ns = 0.03 us) + 3 switch hops (leaf, spine, leaf: 3 x 0.13 us) + the
    // cables up and down: NIC to an out-of-rack leaf 30 m (150 ns), leaf to spine 100 m
    // (500 ns), 2 x 650 ns = 1.3 us. 2.0 - 0.03 + 0.39 + 1.3 = 3.66 us.
    assert_eq!(f.base_latency_us, 2.0);
    assert_eq!(f.switch.latency_ns, 130.0);
    assert!(
        (b.levels[2].latency_us - 3.66).abs() < 1e-6,
        "{:?}",
        b.levels
    );
    // The leaf: 2.0 - 0.03 + 0.13 + 2 x 0.15 = 2.40 us.
    assert!(
        (b.levels[1].latency_us - 2.40).abs() < 1e-6,
        "{:?}",
        b.levels
    );
}

/// A level's latency holds the propagation of the cables a crossing at that level runs
/// over, up and down, as the built topology has them; the fabric's base (one switch, short
/// cables) is not counted twice. 8,192 H100 on a 3-tier NDR fat-tree (64-port switches):
/// leaf of 32 GPUs, pod of 1,024, cluster.
#[test]
fn level_latency_adds_the_cables_of_the_crossing() {
    let b = built(&h100(8192, "fabric: infiniband-ndr, topology: fat-tree"));
    let names: Vec<&str> = b.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["domain", "leaf", "pod", "cluster"]);
    // Cross-pod: NIC -> leaf 30 m, leaf -> spine 100 m, spine -> core 300 m, and down:
    // 2 x 430 m = 860 m x 5 ns = 4.3 us; 5 switches x 0.13 = 0.65 us; base 2.0 us less its
    // two in-rack cables (0.03 us): 2.0 - 0.03 + 0.65 + 4.3 = 6.92 us (was 2.65 without the
    // cables).
    assert!(
        (b.levels[3].latency_us - 6.92).abs() < 1e-6,
        "{:?}",
        b.levels
    );
    // Cross-leaf inside a pod: 2 x 130 m = 1.3 us + 3 x 0.13: 1.97 + 0.39 + 1.3 = 3.66 us.
    assert!(
        (b.levels[2].latency_us - 3.66).abs() < 1e-6,
        "{:?}",
        b.levels
    );
    // RoCE on a fat-tree: top-of-rack leaves on in-rack copper (3 m), so a crossing at the
    // leaf is exactly the base's one switch and two short cables: 3.0 + 0.6 (Tomahawk 4's
    // 600 ns) = 3.6 us; cross-pod 3.0 - 0.03 + 5 x 0.6 + 2 x (3 + 100 + 300) m x 5 ns
    // (4.03 us) = 10.0 us.
    let r = built(&h100(8192, "fabric: roce-400g, topology: fat-tree"));
    assert_eq!(r.fabric.base_latency_us, 3.0);
    assert_eq!(r.fabric.switch.latency_ns, 600.0);
    assert!(r.network.top_of_rack_leaves);
    assert!(
        (r.levels[1].latency_us - 3.6).abs() < 1e-6,
        "{:?}",
        r.levels
    );
    assert!(
        (r.levels[3].latency_us - 10.0).abs() < 1e-6,
        "{:?}",
        r.levels
    );
    // Rail-optimized leaves sit out of the rack (30 m): cross-rail-group 2 x 430 m again,
    // 3.0 - 0.03 + 3.0 + 4.3 = 10.27 us.
    let o = built(&h100(8192, "fabric: roce-400g, topology: rail-optimized"));
    let top = o.levels.last().unwrap();
    assert!((top.latency_us - 10.27).abs() < 1e-6, "{:?}", o.levels);
}

#[test]
fn superpod_rail_optimized_same_counts_rails_on_leaves() {
    let b = built(&h100(
        1024,
        "fabric: infiniband-ndr, topology: rail-optimized",
    ));
    assert_eq!(tier_counts(&b), vec![32, 16]);
    assert_eq!(b.bom.transceivers, 4096);
    // Every leaf holds one rail: NIC i of the 32 nodes of one scalable unit.
    let t = &b.topology;
    let mut rail_of_leaf = vec![None; t.switches.len()];
    for i in 0..t.links.len() {
        if t.links.kind[i] != LinkKind::Nic {
            continue;
        }
        let Vertex::Port { node, nic, .. } = t.vertex(t.links.lower[i]) else {
            panic!("NIC link from a switch")
        };
        let leaf = (t.links.upper[i] - t.endpoints) as usize;
        let su = node / 32;
        match rail_of_leaf[leaf] {
            None => rail_of_leaf[leaf] = Some((su, nic)),
            Some(x) => assert_eq!(x, (su, nic)),
        }
    }
    // The leaf level is the rail group: 32 nodes x 8 GPUs.
    assert_eq!(b.levels[1].size, 256);
}

#[test]
fn three_tier_16k_h100_ndr() {
    // 16,384 NDR ports; radix 64: 2 tiers reach 64^2/2 = 2,048, 3 tiers 64^3/4 = 65,536.
    let b = built(&h100(16384, "fabric: infiniband-ndr"));
    assert_eq!(b.network.tiers, 3);
    // Leaves 16,384 / 32 = 512. Pods of 32 leaves (1,024 ports) -> 16 pods, each with 32
    // spines (32 x 32 uplinks / 32 down ports) -> 512 spines. Core: for each of the 32 spine
    // positions, 16 pods x 32 uplinks = 512 cables / 64 ports = 8 cores -> 256 cores.
    assert_eq!(tier_counts(&b), vec![512, 512, 256]);
    // 3 x 16,384 cables, all optical.
    assert_eq!(b.bom.cables, 3 * 16384);
    assert_eq!(b.bom.transceivers, 6 * 16384);
    let sizes: Vec<u64> = b.levels.iter().map(|l| l.size).collect();
    assert_eq!(sizes, vec![8, 32, 1024, 16384]);

    // A full 3-tier fat-tree: 65,536 ports -> k^3/4 = 65,536: 2,048 + 2,048 + 1,024.
    let full = built(&h100(65536, "fabric: infiniband-ndr"));
    assert_eq!(tier_counts(&full), vec![2048, 2048, 1024]);
    // One more node and it needs a 4th tier.
    let over = built(&h100(65544, "fabric: infiniband-ndr"));
    assert_eq!(over.network.tiers, 4);
    assert_eq!(over.bom.tiers[3].name, "super-spine");
}

#[test]
fn llama3_islands_oversubscribed_7_to_1() {
    let b = built(&h100(
        24576,
        "fabric: roce-400g, switch_radix: 64, island: 3072, oversubscription: 7",
    ));
    // Per GPU scale-out: 8 NICs x 400 Gb/s / 8 / 8 GPUs = 50 GB/s; above the 3,072-GPU
    // island a seventh of it.
    let top = b.levels.last().unwrap();
    assert_eq!(top.size, 24576);
    assert!((top.gbps_per_accelerator - 50.0 / 7.0).abs() < 1e-12);
    let island = b.levels.iter().find(|l| l.name == "island").unwrap();
    assert_eq!(island.size, 3072);
    assert_eq!(island.gbps_per_accelerator, 50.0);
    // Island top at 7:1 on 64 ports: 56 down + 8 up. In an island: 2 tiers reach
    // 32 x 56 = 1,792 < 3,072, so 3 tiers: 96 leaves, 3 pods x 32 spines, and per spine
    // position 3 x 32 = 96 cables / 56 -> 2 switches (48 down, ceil(48/7) = 7 up each), 64
    // island-top switches. Above: 8 islands <= 64 ports -> one more tier; per position
    // 8 x 7 = 56 cables -> 1 switch -> 64 super-spines.
    assert_eq!(b.network.tiers, 4);
    assert_eq!(b.network.island_tiers, Some(3));
    assert_eq!(tier_counts(&b), vec![768, 768, 512, 64]);
    assert_eq!(b.bom.tiers[2].up_ports, 512 * 7);
    assert_eq!(b.hierarchy.islands, 8);

    // With 128-port switches (as large as Meta's modular cluster switches): 112 down + 16
    // up at the island top; island = 48 leaves of 64 + ceil(3,072 / 112) = 28 spines;
    // above: 8 islands x 16 uplinks per position = 128 -> 1 core per position: 28.
    let b = built(&h100(
        24576,
        "fabric: roce-400g, switch_radix: 128, island: 3072, oversubscription: 7",
    ));
    assert_eq!(tier_counts(&b), vec![384, 224, 28]);
    assert!((b.levels.last().unwrap().gbps_per_accelerator - 50.0 / 7.0).abs() < 1e-12);
}

#[test]
fn spine_leaf_oversubscribed_at_leaves() {
    // 3:1 on 64 ports: 48 down, 16 up. A spine reaches every leaf, so at most 64 leaves:
    // 64 x 48 = 3,072 ports. 3,072 -> 64 leaves; 64 x 16 uplinks / 64 = 16 spines.
    let so = "fabric: roce-400g, switch_radix: 64, topology: spine-leaf, oversubscription: 3";
    let b = built(&h100(3072, so));
    assert_eq!(tier_counts(&b), vec![64, 16]);
    assert_eq!(switches(&b, "spine"), 16);
    assert_eq!(b.bom.tiers[0].up_ports, 64 * 16);
    assert_eq!(b.bom.tiers[0].oversubscription, Some(3.0));
    assert!((b.levels.last().unwrap().gbps_per_accelerator - 50.0 / 3.0).abs() < 1e-12);
    // 2,000 ports: ceil(2000/48) = 42 leaves (41 full, one with 32 -> ceil(32/3) = 11 up);
    // 41 x 16 + 11 = 667 uplinks -> ceil(667/64) = 11 spines.
    let b = built(&h100(2000, so));
    assert_eq!(tier_counts(&b), vec![42, 11]);
    // 4,096 does not fit two tiers.
    let e = build(&scenario(&h100(4096, so)), catalog()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster.scale_out.tiers: spine-leaf (2 tiers) of 64-port switches reaches 3072 NIC ports; the 4096 accelerators have 4096; use fat-tree with 3 tiers or a larger switch_radix"
    );
}

#[test]
fn dual_plane_hpn_pod() {
    // Alibaba HPN pod: 15,360 GPUs, 2 planes of 200G: a 128 x 400G switch is 256 x 200G.
    // Per plane 15,360 ports: leaves 15,360 / 128 = 120, spines 120 x 128 / 256 = 60.
    let s = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/alibaba-hpn.yaml"
    ))
    .unwrap();
    let b = built(&s);
    assert_eq!(b.network.planes, 2);
    assert_eq!(b.network.plane_radix, 256);
    assert_eq!(tier_counts(&b), vec![240, 120]);
    assert_eq!(b.bom.nic_ports, 2 * 15360);
    // Each plane's leaf is a rail of one 1,024-GPU segment (128 hosts).
    assert_eq!(b.levels[1].size, 1024);
    assert_eq!(b.levels[1].gbps_per_accelerator, 50.0);
    // Both planes carry the same number of switches.
    let per_plane: Vec<usize> = (0..2)
        .map(|p| {
            b.topology
                .switches
                .plane
                .iter()
                .filter(|&&x| x == p)
                .count()
        })
        .collect();
    assert_eq!(per_plane, vec![180, 180]);
}

#[test]
fn two_sites_with_dci() {
    let y = "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 32768, scale_up: hgx-h100, scale_out: {fabric: roce-400g, switch_radix: 64}, sites: 2, dci: {gbps_per_site: 102400, distance_km: 80}}";
    let b = built(y);
    // 102,400 Gb/s / 400 Gb/s = 256 DCI cables between the two sites.
    assert_eq!(b.bom.dci_cables, 256);
    let n = b.levels.len();
    let (site, cluster) = (&b.levels[n - 2], &b.levels[n - 1]);
    assert_eq!((site.name.as_str(), site.size), ("site", 16384));
    assert_eq!((cluster.name.as_str(), cluster.size), ("cluster", 32768));
    // 102,400 Gb/s / 8 / 16,384 GPUs per site = 0.78125 GB/s per GPU; 80 km x 5 us/km.
    assert!((cluster.gbps_per_accelerator - 0.78125).abs() < 1e-12);
    assert!((cluster.latency_us - site.latency_us - 400.0).abs() < 1e-9);
    // Each site is its own tree: no fabric link crosses sites.
    let t = &b.topology;
    for i in 0..t.links.len() {
        if t.links.kind[i] == LinkKind::Fabric {
            let a = t.switches.site[(t.links.lower[i] - t.endpoints) as usize];
            let c = t.switches.site[(t.links.upper[i] - t.endpoints) as usize];
            assert_eq!(a, c);
        }
    }
}

#[test]
fn rail_only_has_no_spine_across_rails() {
    // 4,096 H100 = 512 HGX domains; 8 rails of 512 ports each; 64-port switches: 2 tiers
    // per rail (16 leaves + 8 spines) -> 128 leaves + 64 spines.
    let b = built(&h100(4096, "fabric: infiniband-ndr, topology: rail-only"));
    assert_eq!(tier_counts(&b), vec![128, 64]);
    // Every switch serves one rail only.
    let t = &b.topology;
    let mut rail = vec![u32::MAX; t.switches.len()];
    for i in 0..t.links.len() {
        if let Vertex::Port { nic, .. } = t.vertex(t.links.lower[i]) {
            rail[(t.links.upper[i] - t.endpoints) as usize] = nic;
        }
    }
    for i in 0..t.links.len() {
        if t.links.kind[i] == LinkKind::Fabric {
            let lo = rail[(t.links.lower[i] - t.endpoints) as usize];
            let up = (t.links.upper[i] - t.endpoints) as usize;
            if rail[up] == u32::MAX {
                rail[up] = lo;
            }
            assert_eq!(rail[up], lo);
        }
    }
    // 1,024 GPUs at radix 64 fit one rail switch per rail: 8 switches.
    let b = built(&h100(512, "fabric: infiniband-ndr, topology: rail-only"));
    assert_eq!(tier_counts(&b), vec![8]);
}

#[test]
fn copper_only_for_ethernet_top_of_rack() {
    // RoCE fat-tree, 4 servers per rack = 32 ports = one 64-port leaf's 32 down ports:
    // the leaf is the rack's ToR, NIC-to-leaf is copper (8,192 DACs), the rest optical.
    let y = "format: myriad/1\ncluster: {accelerator: mi300x, count: 8192, scale_up: mi300x-oam-8, scale_out: {fabric: roce-400g, switch_radix: 64}}";
    let b = built(y);
    assert_eq!(b.bom.copper_cables, 8192);
    assert_eq!(b.bom.tiers[0].copper_cables, 8192);
    assert_eq!(b.bom.transceivers, 2 * (8192 + 8192));
    assert_eq!(b.bom.switches_in_compute_racks, 256);
    assert!(
        b.topology
            .switches
            .rack
            .iter()
            .filter(|&&r| r != NO_RACK)
            .count()
            == 256
    );
    // Network racks hold the other 384 switches: 24 racks.
    assert_eq!(b.bom.network_racks, 24);
}

/// r = 1: every switch below the top uses as many ports up as down, and the capacity into
/// each tier from below equals the capacity out of the tier below toward it.
fn check_conservation(b: &BuiltCluster) {
    let t = &b.topology;
    let tiers = t.tiers as usize;
    for s in 0..t.switches.len() {
        let tier = t.switches.tier[s] as usize;
        assert!(
            t.switches.down_ports[s] + t.switches.up_ports[s] <= b.network.plane_radix,
            "switch {s} over its ports"
        );
        if tier < tiers {
            assert_eq!(
                t.switches.down_ports[s], t.switches.up_ports[s],
                "switch {s} tier {tier}"
            );
        }
    }
    let mut into = vec![0f64; tiers + 2];
    for i in 0..t.links.len() {
        into[t.links.tier[i] as usize] += t.links.capacity_gbps(i);
    }
    // Into the leaves: every NIC port once.
    let nic: f64 = b.topology.endpoints as f64 * b.network.nic_link_gbps;
    assert!((into[1] - nic).abs() < 1e-6);
    for j in 2..=tiers {
        assert!(
            (into[j] - into[j - 1]).abs() < 1e-6,
            "tier {j}: {} vs {}",
            into[j],
            into[j - 1]
        );
    }
    // Cables counted per switch match the links.
    let mut down = vec![0u64; t.switches.len()];
    for i in 0..t.links.len() {
        if t.links.kind[i] != LinkKind::Dci {
            down[(t.links.upper[i] - t.endpoints) as usize] += t.links.cables[i] as u64;
        }
    }
    for (s, &d) in down.iter().enumerate() {
        assert_eq!(d, t.switches.down_ports[s] as u64);
    }
}

#[test]
fn invariants_domains_and_capacity() {
    for (count, so) in [
        (1024, "fabric: infiniband-ndr"),
        (3000, "fabric: infiniband-ndr"),
        (16384, "fabric: infiniband-ndr"),
        (20000, "fabric: infiniband-ndr, topology: rail-optimized"),
        (9000, "fabric: roce-400g, planes: 2"),
        (70000, "fabric: infiniband-ndr"),
        (4096, "fabric: infiniband-ndr, topology: rail-only"),
    ] {
        let b = built(&h100(count, so));
        // Every accelerator in exactly one domain: domains tile 0..count.
        let mut next = 0;
        for d in &b.domains {
            assert_eq!(d.first_accelerator, next);
            next += d.accelerators as u64;
        }
        assert_eq!(next, count);
        check_conservation(&b);
        // Levels: increasing, last = whole cluster.
        for w in b.levels.windows(2) {
            assert!(w[1].size > w[0].size);
        }
        assert_eq!(b.levels.last().unwrap().size, count);
    }
    // NVL72: domains of 72, trays of 4.
    let y = "format: myriad/1\ncluster: {accelerator: gb200, count: 10008, scale_up: gb200-nvl72, scale_out: {fabric: roce-800g}}";
    let b = built(y);
    assert_eq!(b.domains.len(), 139);
    assert_eq!(
        b.domains.iter().map(|d| d.accelerators as u64).sum::<u64>(),
        10008
    );
    check_conservation(&b);
    for w in b.levels.windows(2) {
        assert!(w[1].size > w[0].size && w[1].size % 72 == 0);
    }
}

/// A cluster of `count` `acc` on `su`, over `sites` sites with a 400 Gb/s DCI each when
/// more than one.
fn cluster(acc: &str, su: &str, count: u64, sites: u32, scale_out: &str) -> String {
    let dci = if sites > 1 {
        format!("sites: {sites}, dci: {{gbps_per_site: 400, distance_km: 10}}, ")
    } else {
        String::new()
    };
    format!(
        "format: myriad/1\ncluster: {{accelerator: {acc}, count: {count}, scale_up: {su}, {dci}scale_out: {{{scale_out}}}}}"
    )
}

/// Builds `yaml(c)` for each count and checks that `metric` never drops from one count to
/// the next.
fn never_drops(
    what: &str,
    metric: &dyn Fn(&BuiltCluster) -> u64,
    yaml: &dyn Fn(u64) -> String,
    counts: impl Iterator<Item = u64>,
) {
    let mut prev: Option<(u64, u64)> = None;
    for c in counts {
        let n = metric(&built(&yaml(c)));
        if let Some((pc, pn)) = prev {
            assert!(
                n >= pn,
                "{}: {pc} -> {c} accelerators take {what} from {pn} to {n}",
                yaml(c)
            );
        }
        prev = Some((c, n));
    }
}

/// Designs whose partly filled pods, islands and site tops the tests below step through one
/// node (one per site) at a time: (accelerator, scale-up, sites, scale_out, counts).
fn partial_pod_designs() -> Vec<(&'static str, &'static str, u32, &'static str, Vec<u64>)> {
    let h = ("h100-sxm", "hgx-h100");
    let a = ("a100-sxm-80gb", "hgx-a100");
    let by = |from: u64, to: u64, step: u64| (from..=to).step_by(step as usize).collect();
    vec![
        // A partial island built ceil(L/d) spines (3 for 248 uplinks, where a full island
        // spreads 256 over 4): 1,016 -> 1,024 H100 took switches from 38 to 36.
        (h.0, h.1, 1, "fabric: roce-800g, island: 256, oversubscription: 2", by(256, 2048, 8)),
        // The same on NDR: 1,784 -> 1,792 took 124 to 123.
        (h.0, h.1, 1, "fabric: infiniband-ndr, island: 256, oversubscription: 2", by(1024, 2560, 8)),
        // Partial pods under a 2-site top: 1,632 -> 1,648 took 274 to 272.
        (a.0, a.1, 2, "fabric: infiniband-ndr, switch_radix: 16", by(16, 2400, 16)),
        // Site tops in 4-way breakout: 2,256 -> 2,272 took transceivers 1,144 to 1,142.
        (a.0, a.1, 2, "fabric: roce-800g, switch_radix: 16", by(128, 2400, 16)),
        // 2,256 -> 2,272 took transceivers 2,284 to 2,280.
        (h.0, h.1, 2, "fabric: roce-800g, switch_radix: 16, planes: 2", by(128, 2400, 16)),
        (h.0, h.1, 1, "fabric: infiniband-ndr", by(8, 6000, 8)),
        (h.0, h.1, 1, "fabric: infiniband-ndr, topology: rail-optimized", by(8, 5000, 8)),
        (h.0, h.1, 1, "fabric: roce-400g, switch_radix: 64, planes: 2", by(8, 5000, 8)),
        (
            h.0,
            h.1,
            1,
            "fabric: roce-400g, switch_radix: 64, topology: spine-leaf, oversubscription: 3",
            by(8, 3072, 8),
        ),
        (
            a.0,
            a.1,
            1,
            "fabric: roce-400g, topology: rail-optimized, switch_radix: 16, island: 128, oversubscription: 3",
            by(128, 2048, 8),
        ),
        (h.0, h.1, 1, "fabric: roce-800g, switch_radix: 16, tiers: 4", by(8, 1536, 8)),
        (h.0, h.1, 1, "fabric: roce-200g, topology: rail-only, switch_radix: 16", by(8, 2048, 8)),
        (h.0, h.1, 3, "fabric: roce-400g, switch_radix: 32, island: 144, oversubscription: 2", by(432, 3600, 24)),
    ]
}

#[test]
fn more_accelerators_never_fewer_switches() {
    for (acc, su, sites, so, counts) in partial_pod_designs() {
        let yaml = |c: u64| cluster(acc, su, c, sites, so);
        never_drops(
            "switches",
            &|b| b.bom.switches_total,
            &yaml,
            counts.iter().copied(),
        );
        never_drops("cables", &|b| b.bom.cables, &yaml, counts.iter().copied());
    }
    // A site top's share of a large DCI: 2 x 368 -> 2 x 384 H100 on 16-port NDR with 25.6
    // Tb/s per site took 138 switches to 128 (46 top switches to 32).
    never_drops(
        "switches",
        &|b| b.bom.switches_total,
        &|c| {
            format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {c}, scale_up: hgx-h100, sites: 2, dci: {{gbps_per_site: 25600, distance_km: 10}}, scale_out: {{fabric: infiniband-ndr, switch_radix: 16}}}}"
        )
        },
        (16..=2400).step_by(16),
    );
    // Large clusters, one step per 256 nodes.
    never_drops(
        "switches",
        &|b| b.bom.switches_total,
        &|c| h100(c, "fabric: infiniband-ndr"),
        (6000..=140000).step_by(2048).map(|c| c / 8 * 8),
    );
    never_drops(
        "switches",
        &|b| b.bom.switches_total,
        &|c| {
            h100(
                c,
                "fabric: roce-400g, switch_radix: 64, island: 1024, oversubscription: 4",
            )
        },
        (1032..=40000).step_by(1024).map(|c| c / 8 * 8),
    );
}

#[test]
fn more_accelerators_never_fewer_transceivers() {
    for (acc, su, sites, so, counts) in partial_pod_designs() {
        let yaml = |c: u64| cluster(acc, su, c, sites, so);
        never_drops(
            "transceivers",
            &|b| b.bom.transceivers,
            &yaml,
            counts.into_iter(),
        );
    }
}

fn err(s: &Scenario) -> BuildError {
    build(s, catalog()).expect_err("must fail")
}

#[test]
fn error_count_not_filling_domains() {
    let mut s = scenario(
        "format: myriad/1\ncluster: {accelerator: gb200, count: 1008, scale_up: gb200-nvl72}",
    );
    s.cluster.count = 1000;
    let e = err(&s);
    assert_eq!(e.path, "cluster.count");
    assert_eq!(
        e.message,
        "1000 does not fill whole scale-up domains of 72 (13.9 domains); use 1008 or 936"
    );
    assert_eq!(
        e.to_string(),
        "cluster.count: 1000 does not fill whole scale-up domains of 72 (13.9 domains); use 1008 or 936"
    );
}

#[test]
fn error_tiers_above_four() {
    let mut s = scenario(&h100(1024, "fabric: infiniband-ndr"));
    s.cluster.scale_out.tiers = Some(5);
    assert_eq!(
        err(&s).to_string(),
        "cluster.scale_out.tiers: 5 is more than the 4 supported"
    );
}

#[test]
fn error_radix_too_small() {
    // 8-port switches: 4 tiers reach 8^4/8 = 512 ports.
    let s = scenario(&h100(16384, "fabric: infiniband-ndr, switch_radix: 8"));
    assert_eq!(
        err(&s).to_string(),
        "cluster.scale_out.tiers: 16384 accelerators have 16384 NIC ports; that needs more than 4 tiers of 8-port switches (4 tiers reach 512); use a larger switch_radix or fewer accelerators"
    );
    // Too few tiers for the count: 2 tiers of 64 ports reach 2,048.
    let s = scenario(&h100(16384, "fabric: infiniband-ndr, tiers: 2"));
    assert_eq!(
        err(&s).to_string(),
        "cluster.scale_out.tiers: 2 tiers of 64-port switches reach 2048 NIC ports; the 16384 accelerators have 16384; use tiers: 3 or null"
    );
}

#[test]
fn error_unknown_fabric() {
    let mut s = scenario(&h100(1024, "fabric: infiniband-ndr"));
    s.cluster.scale_out.fabric = Some("infiniband-ndx".into());
    let e = err(&s);
    assert_eq!(e.path, "cluster.scale_out.fabric");
    assert!(
        e.message.starts_with(
            "`infiniband-ndx` is not a known scale-out fabric; closest: infiniband-ndr"
        ),
        "{e}"
    );
    assert_eq!(
        e.message,
        "`infiniband-ndx` is not a known scale-out fabric; closest: infiniband-ndr, infiniband-hdr, infiniband-xdr"
    );
}

#[test]
fn error_island_not_whole_domains() {
    let s = scenario(
        "format: myriad/1\ncluster: {accelerator: gb200, count: 10008, scale_up: gb200-nvl72, scale_out: {island: 3000, oversubscription: 4}}",
    );
    assert_eq!(
        err(&s).to_string(),
        "cluster.scale_out.island: 3000 is not a whole number of scale-up domains of 72 (41.7 domains); use 3024 or 2952"
    );
}

#[test]
fn report_json_has_the_keys() {
    let b = built(&h100(1024, "fabric: infiniband-ndr, tiers: 2"));
    let v = serde_json::to_value(b.report()).unwrap();
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
        "capex_breakdown",
        "peak_pflops",
        "levels",
        "tiers",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["switches"]["leaf"], 32);
    assert_eq!(v["switches"]["spine"], 16);
    assert_eq!(v["switches_total"], 48);
    assert_eq!(v["transceivers"], 4096);
    assert!(v["peak_pflops"]["bf16"].as_f64().unwrap() > 1000.0);
}

#[test]
fn every_combination_builds_within_port_limits() {
    let topologies = ["fat-tree", "rail-optimized", "rail-only", "spine-leaf"];
    for topo in topologies {
        for planes in [1, 2] {
            for sites in [1u64, 2, 3] {
                for (island, r) in [(None, 1.0), (Some(1024u64), 4.0), (None, 2.0)] {
                    if topo == "rail-only" && r > 1.0 {
                        continue;
                    }
                    if topo == "spine-leaf" && island.is_some() {
                        continue;
                    }
                    let count = 3072 * sites;
                    let mut so = format!(
                        "fabric: roce-400g, switch_radix: 64, topology: {topo}, planes: {planes}, oversubscription: {r}"
                    );
                    if let Some(i) = island {
                        so.push_str(&format!(", island: {i}"));
                    }
                    let dci = if sites > 1 {
                        ", dci: {gbps_per_site: 51200, distance_km: 10}"
                    } else {
                        ""
                    };
                    let y = format!(
                        "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_up: hgx-h100, sites: {sites}{dci}, scale_out: {{{so}}}}}"
                    );
                    let s = scenario(&y);
                    let b = match build(&s, catalog()) {
                        Ok(b) => b,
                        // spine-leaf at 3:1.. may not fit two tiers; that must be the error.
                        Err(e) => {
                            assert_eq!(e.path, "cluster.scale_out.tiers", "{y}: {e}");
                            continue;
                        }
                    };
                    let t = &b.topology;
                    for i in 0..t.switches.len() {
                        assert!(
                            t.switches.down_ports[i] + t.switches.up_ports[i]
                                <= b.network.plane_radix,
                            "{y}: switch {i}"
                        );
                    }
                    assert_eq!(b.levels.last().unwrap().size, count, "{y}");
                    for w in b.levels.windows(2) {
                        assert!(w[1].size > w[0].size, "{y}");
                    }
                    // Every NIC port has exactly one cable.
                    let mut seen = vec![0u8; t.endpoints as usize];
                    for i in 0..t.links.len() {
                        if t.links.kind[i] == LinkKind::Nic {
                            seen[t.links.lower[i] as usize] += 1;
                        }
                    }
                    assert!(seen.iter().all(|&c| c == 1), "{y}");
                    if sites > 1 {
                        // 51,200 / planes per plane at 400 / planes Gb/s -> 128 cables per site
                        // pair and plane (rail-only: at least one per rail).
                        assert!(b.bom.dci_cables >= 128, "{y}: {}", b.bom.dci_cables);
                    }
                }
            }
        }
    }
}

/// Guards against a DCI link on a one-site cluster being built as if it were absent (no
/// DCI cables, no DCI level, no error): `cluster.dci` only means something between sites.
#[test]
fn error_dci_on_one_site() {
    let mut s = scenario(&h100(1024, "fabric: infiniband-ndr"));
    s.cluster.dci = Some(myriad_scenario::DciSpec {
        gbps_per_site: 102400.0,
        distance_km: 80.0,
    });
    assert_eq!(
        err(&s).to_string(),
        "cluster.dci: a DCI link joins sites, but cluster.sites is 1; give sites: 2 or more, or drop dci"
    );
}

/// Guards the builder's own limits for scenarios made in code (the planner's candidate
/// counts): past 2^24 accelerators or 1,024 sites is an error before anything is built.
#[test]
fn error_count_and_sites_past_the_limits() {
    let mut s = scenario(&h100(1024, "fabric: infiniband-ndr, switch_radix: 1024"));
    s.cluster.count = (1 << 24) + 8;
    assert_eq!(
        err(&s).to_string(),
        "cluster.count: 16777224 is more than the 16777216 accelerators supported"
    );
    let mut s = scenario(&h100(1024, "fabric: infiniband-ndr"));
    s.cluster.count = 8 * 1025;
    s.cluster.sites = 1025;
    s.cluster.dci = Some(myriad_scenario::DciSpec {
        gbps_per_site: 400.0,
        distance_km: 10.0,
    });
    assert_eq!(
        err(&s).to_string(),
        "cluster.sites: 1025 is more than the 1024 supported"
    );
}

/// Guards against an island larger than a site (but not the whole cluster) being dropped
/// without a word: 1,536-accelerator islands at 4:1 on two sites of 1,024 built two
/// full-bisection sites with no oversubscription at all.
#[test]
fn error_island_larger_than_a_site() {
    let two_sites = |island: u64| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: 2048, scale_up: hgx-h100, sites: 2, dci: {{gbps_per_site: 1000, distance_km: 1}}, scale_out: {{fabric: infiniband-ndr, oversubscription: 4, island: {island}}}}}"
        )
    };
    let want = "cluster.scale_out.island: 1536 is more than the 1024 accelerators of a site (2 sites); an island sits inside one site (or give the whole cluster, 2048)";
    let e = parse_scenario("test.yaml", &two_sites(1536), catalog()).unwrap_err();
    assert_eq!(e.to_string(), format!("test.yaml: {want}"));
    let mut s = scenario(&two_sites(512));
    s.cluster.scale_out.island = Some(1536);
    assert_eq!(err(&s).to_string(), want);
    // Islands inside a site, and the whole cluster, still build.
    assert_eq!(built(&two_sites(512)).network.island, Some(512));
    built(&two_sites(1024));
    built(&two_sites(2048));
}

/// Guards the DCI port share against overflow: a DCI far beyond the site's ports (1e30
/// Gb/s, which `myriad cluster` prints) multiplied a u64::MAX port count by each switch's
/// down ports (a panic in debug builds, a wrapped share in release); it takes every free
/// port of the site-top switches.
#[test]
fn dci_beyond_the_ports_takes_every_free_top_port() {
    let b = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 2048, scale_up: hgx-h100, sites: 2, dci: {gbps_per_site: 1e30, distance_km: 10}, scale_out: {fabric: infiniband-ndr}}",
    );
    let t = &b.topology;
    let top = t.tiers as u8;
    let mut free = 0u64;
    for i in 0..t.switches.len() {
        if t.switches.tier[i] == top {
            assert_eq!(
                t.switches.down_ports[i] + t.switches.up_ports[i],
                b.network.plane_radix,
                "top switch {i}"
            );
            free += t.switches.up_ports[i] as u64;
        }
    }
    // Two sites: every DCI cable takes one up port at each end.
    assert_eq!(b.bom.dci_cables * 2, free);
    assert!(b.bom.dci_cables > 0);
}

/// Guards against an accelerator with fewer scale-up links than the system it sits in
/// taking the system's rate: `hgx-h100` also holds the H800, whose 8 NVLink4 links give
/// 200 GB/s per direction (not the H100's 18 links, 450 GB/s); the domain level and the
/// built system must say 200, as `hgx-h800` does.
#[test]
fn h800_in_an_hgx_h100_runs_nvlink_at_its_own_rate() {
    let y = |su: &str| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h800, count: 64, scale_up: {su}, scale_out: {{fabric: infiniband-ndr}}}}"
        )
    };
    for su in ["hgx-h100", "hgx-h800"] {
        let b = built(&y(su));
        assert_eq!(b.levels[0].name, "domain");
        assert_eq!(b.levels[0].gbps_per_accelerator, 200.0, "{su}");
        assert_eq!(b.scale_up.bandwidth_gbps, 200.0, "{su}");
        assert_eq!(b.report().scale_up.bandwidth_gbps, 200.0, "{su}");
    }
    // The H100 keeps its 450 GB/s in the same system.
    let b = built(&h100(64, "fabric: infiniband-ndr"));
    assert_eq!(b.levels[0].gbps_per_accelerator, 450.0);
}

/// Guards against an island of part of a scale-up domain being accepted without a word at
/// 1:1 (and on rail-only or spine-leaf, where only 1:1 is built): the island still names
/// the pods reliability's spares are counted in, and 12 H100 are 1.5 HGX domains.
#[test]
fn error_island_not_whole_domains_at_full_bisection() {
    for topo in ["fat-tree", "rail-only", "spine-leaf", "rail-optimized"] {
        let s = scenario(&h100(
            64,
            &format!("fabric: infiniband-ndr, topology: {topo}, island: 12"),
        ));
        assert_eq!(
            err(&s).to_string(),
            "cluster.scale_out.island: 12 is not a whole number of scale-up domains of 8 (1.5 domains); use 16 or 8",
            "{topo}"
        );
    }
    // Whole domains still build at 1:1.
    let b = built(&h100(64, "fabric: infiniband-ndr, island: 16"));
    assert_eq!(b.network.island, None);
}

/// Guards against a NIC-to-leaf cable faster than the switch port it plugs into: an 800G
/// ConnectX-8 split over 3 planes is 266.7 Gb/s per plane, which took round(266.7/200) = 1
/// port of a 200G switch (one 266.7 Gb/s cable on a 200 Gb/s port). It takes 2 ports of
/// 133.3 Gb/s each; the accelerator's bandwidth (4 x 800 / 8 / 4 = 100 GB/s) is unchanged.
#[test]
fn nic_faster_than_a_port_takes_enough_ports() {
    let b = built(
        "format: myriad/1\ncluster: {accelerator: gb300, count: 288, scale_up: gb300-nvl72, scale_out: {fabric: roce-200g, planes: 3}}",
    );
    let n = &b.network;
    assert_eq!(n.ports_per_nic, 2);
    assert!(
        n.nic_link_gbps <= n.port_gbps,
        "{} > {}",
        n.nic_link_gbps,
        n.port_gbps
    );
    assert!((n.nic_link_gbps - 800.0 / 3.0 / 2.0).abs() < 1e-9);
    // 72 trays x 4 NICs x 3 planes x 2 ports.
    assert_eq!(b.bom.nic_ports, 72 * 4 * 3 * 2);
    assert_eq!(n.gbps_per_accelerator, 100.0);
    for i in 0..b.topology.links.len() {
        assert!(b.topology.links.gbps[i] as f64 <= n.port_gbps + 1e-3);
    }
}

/// DCI ports per site: up ports of each site's top switches that DCI cables take.
fn dci_ports_per_site(b: &BuiltCluster) -> Vec<u64> {
    let t = &b.topology;
    let mut per = vec![0u64; b.hierarchy.sites as usize];
    for i in 0..t.links.len() {
        if t.links.kind[i] == LinkKind::Dci {
            for v in [t.links.lower[i], t.links.upper[i]] {
                per[t.switches.site[(v - t.endpoints) as usize] as usize] +=
                    t.links.cables[i] as u64;
            }
        }
    }
    per
}

/// Guards against the DCI of three or more sites being built short of what each site asks
/// for: DCI ports were paired only between same-position top switches, so where a position
/// holds one DCI port on each of three sites only one cable was made. 3 sites of 16,384
/// H100 at 102,400 Gb/s per site (256 x 400G ports each) built 256 cables (2/3 of each
/// site's DCI) instead of 3 x 256 / 2 = 384; 5 sites of 1,024 at 8,000 Gb/s (20 ports each)
/// built 41 instead of 50.
#[test]
fn dci_of_three_or_more_sites_gets_every_port_it_asks_for() {
    for (sites, per_site, gbps, fabric) in [
        (3u64, 16384u64, 102400u64, "roce-400g"),
        (5, 1024, 8000, "infiniband-ndr"),
        (3, 32768, 409600, "infiniband-ndr"),
        (4, 16384, 102400, "roce-400g"),
    ] {
        let y = format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {}, scale_up: hgx-h100, sites: {sites}, dci: {{gbps_per_site: {gbps}, distance_km: 10}}, scale_out: {{fabric: {fabric}}}}}",
            sites * per_site
        );
        let b = built(&y);
        let want = gbps / 400;
        assert_eq!(b.bom.dci_cables, sites * want / 2, "{y}");
        assert_eq!(dci_ports_per_site(&b), vec![want; sites as usize], "{y}");
        let t = &b.topology;
        for i in 0..t.switches.len() {
            assert!(t.switches.down_ports[i] + t.switches.up_ports[i] <= b.network.plane_radix);
        }
        // No DCI cable joins two switches of one site.
        for i in 0..t.links.len() {
            if t.links.kind[i] == LinkKind::Dci {
                let s = |v: u32| t.switches.site[(v - t.endpoints) as usize];
                assert_ne!(s(t.links.lower[i]), s(t.links.upper[i]));
            }
        }
    }
}

/// Guards against a site with DCI fitting in fewer tiers as it grows: the site top's DCI
/// ports were reserved in the ratio of the site's bandwidth to the DCI, so the top's down
/// ports grew with the site and 2 x 2,000 H100 fitted 2 tiers (190 switches) where
/// 2 x 1,992 took 3 (378). Both fit 2 tiers: 63 leaves and 32 spines per site, the spines'
/// 2,048 ports holding the 1,992 or 2,000 uplinks and the 32 DCI ports (12,690 / 400).
#[test]
fn dci_site_never_needs_more_tiers_when_smaller() {
    let y = |count: u64| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_up: hgx-h100, sites: 2, dci: {{gbps_per_site: 12690, distance_km: 10}}, scale_out: {{fabric: infiniband-ndr}}}}"
        )
    };
    for count in [3984, 4000] {
        let b = built(&y(count));
        assert_eq!(b.network.tiers, 2, "{count}");
        assert_eq!(tier_counts(&b), vec![126, 64], "{count}");
        assert_eq!(b.bom.dci_cables, 32, "{count}");
    }
    // More accelerators never mean fewer switches, transceivers, tiers or watts, with DCI.
    for (sites, step, so, dci) in [
        (2u64, 16u64, "fabric: infiniband-ndr", 12690),
        (3, 24, "fabric: infiniband-ndr", 12800),
        (2, 16, "fabric: roce-400g, topology: rail-only", 25600),
        (2, 16, "fabric: roce-400g, oversubscription: 3", 51200),
        (
            4,
            32,
            "fabric: roce-400g, planes: 2, topology: rail-optimized",
            51200,
        ),
    ] {
        let mut prev: Option<(u64, [f64; 4])> = None;
        for count in (1..=250).map(|i| i * step) {
            let b = built(&format!(
                "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_up: hgx-h100, sites: {sites}, dci: {{gbps_per_site: {dci}, distance_km: 10}}, scale_out: {{{so}}}}}"
            ));
            let now = [
                b.network.tiers as f64,
                b.bom.switches_total as f64,
                b.bom.transceivers as f64,
                b.power.it_mw,
            ];
            if let Some((c, was)) = prev {
                for i in 0..4 {
                    assert!(
                        now[i] >= was[i],
                        "{so}, {sites} sites: {count} -> {now:?}, {c} -> {was:?}"
                    );
                }
            }
            prev = Some((count, now));
        }
    }
}

/// Guards against a DCI larger than the site taking every free port of its top: 64 H100
/// on 4 sites, 2 planes, have 32 NIC ports of 200G per site, and each site got 2,016 DCI
/// ports (all the free leaf ports); and, with fewer DCI ports on a switch than peers,
/// against the same-position pass handing them out in a fixed pair order (the first pairs
/// took them all and a later site could be left without): every site alike.
#[test]
fn every_site_gets_its_dci_up_to_one_to_one() {
    let b = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 64, scale_up: hgx-h100, sites: 4, dci: {gbps_per_site: 51200, distance_km: 10}, scale_out: {fabric: roce-400g, planes: 2, topology: rail-optimized}}",
    );
    // 2 nodes x 8 NICs per site, each NIC 2 x 200G (one per plane): 32 ports of 200G per
    // site; the DCI asks for 256 and gets 1:1, 32, every site alike.
    assert_eq!(dci_ports_per_site(&b), vec![32; 4]);
    assert_eq!(b.bom.dci_cables, 64);
    let b = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 16, scale_up: hgx-h100, sites: 2, dci: {gbps_per_site: 51200, distance_km: 10}, scale_out: {fabric: roce-400g}}",
    );
    assert_eq!(dci_ports_per_site(&b), vec![8; 2]);
}

/// Guards against counting two transceivers per cable where a switch port is broken out:
/// 1,024 H100 (400G NICs) on 800G RoCE ports split 2 x 400G counted 4,096 transceivers, two
/// per 400G cable, as if every switch port held one per cable. A broken-out port holds one
/// (twin-port) transceiver for both of its cables, and each NIC its own: 1,024 at the NICs,
/// 16 leaves x (32 ports down + 32 up) and 8 spines x 64 ports down: 2,560.
#[test]
fn a_broken_out_port_holds_one_transceiver() {
    let b = built(&h100(1024, "fabric: roce-800g, tiers: 2"));
    assert_eq!(b.network.breakout, 2);
    assert_eq!(b.network.plane_radix, 128);
    // 1,024 NIC ports of 400G: 16 leaves of 64 down + 64 up (k = 128 half-ports), 1,024
    // uplinks over 128-half-port spines: 8.
    assert_eq!(tier_counts(&b), vec![16, 8]);
    assert_eq!(b.bom.optical_cables, 2048);
    assert_eq!(b.bom.copper_cables, 0);
    assert_eq!(b.bom.transceivers, 1024 + 16 * (32 + 32) + 8 * 64);
    assert_eq!(b.bom.nic_transceivers, 1024);
    // The 1,024 NIC-end modules are 400G, half the catalog's 800G module in power and
    // price: 1,536 + 1,024 / 2 = 2,048 800G-module equivalents.
    let f = &b.fabric;
    assert!(
        (b.power.transceivers_kw - 2048.0 * f.transceiver.power_w / 1000.0).abs() < 1e-9,
        "{}",
        b.power.transceivers_kw
    );
    assert!((b.capex.transceivers_usd - 2048.0 * f.transceiver.price_usd).abs() < 1e-6);
    // Without breakout (400G ports) the same cables take two transceivers each.
    let b = built(&h100(
        1024,
        "fabric: roce-400g, switch_radix: 128, tiers: 2",
    ));
    assert_eq!(b.network.breakout, 1);
    assert_eq!(b.bom.transceivers, 2 * b.bom.optical_cables);
}

/// Every NIC port reaches every other through the scale-out graph (all sites, all planes
/// apart: one plane's ports reach each other).
fn assert_connected(b: &BuiltCluster) {
    let t = &b.topology;
    let (off, ids) = t.adjacency();
    for plane in 0..t.planes {
        let start = t.port_vertex(0, plane, 0, 0);
        let mut seen = vec![false; t.vertices() as usize];
        let mut stack = vec![start];
        seen[start as usize] = true;
        while let Some(v) = stack.pop() {
            for &i in &ids[off[v as usize] as usize..off[v as usize + 1] as usize] {
                for w in [t.links.lower[i as usize], t.links.upper[i as usize]] {
                    if !seen[w as usize] {
                        seen[w as usize] = true;
                        stack.push(w);
                    }
                }
            }
        }
        for v in 0..t.endpoints {
            if let Vertex::Port { plane: p, .. } = t.vertex(v) {
                if p == plane {
                    assert!(seen[v as usize], "port {v} of plane {plane} unreachable");
                }
            }
        }
    }
}

/// Guards against a rail-optimized site that fits one switch being built as one leaf per
/// rail with nothing above: 64 H100 on 64-port RoCE switches made 8 leaves of 8 ports, no
/// path between rails (and, with 2 sites, every rail leaf took the site's whole DCI: 48
/// cables for 1,000 Gb/s per site where 128 GPUs per site built 6).
#[test]
fn a_one_switch_rail_optimized_site_is_one_switch() {
    let b = built(&h100(64, "fabric: roce-400g, topology: rail-optimized"));
    assert_eq!(b.network.tiers, 1);
    assert_eq!(tier_counts(&b), vec![1]);
    assert_connected(&b);
    let y = |per: u64| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {}, scale_up: hgx-h100, sites: 2, dci: {{gbps_per_site: 1000, distance_km: 10}}, scale_out: {{fabric: roce-400g, planes: 2, topology: rail-optimized}}}}",
            2 * per
        )
    };
    // 1,000 Gb/s per site over 2 planes of 200G: ceil(500 / 200) = 3 ports per plane.
    for per in [64, 128, 256] {
        let b = built(&y(per));
        assert_eq!(b.bom.dci_cables, 6, "{per}");
        assert_eq!(dci_ports_per_site(&b), vec![6, 6], "{per}");
        assert_connected(&b);
    }
    // A rail-optimized island of one switch takes all its ports too.
    let b = built(&h100(
        1024,
        "fabric: roce-400g, topology: rail-optimized, island: 32, oversubscription: 2",
    ));
    assert_eq!(b.network.island_tiers, Some(1));
    // 32 islands of 32 NIC ports, one leaf each (not 8 rail leaves of 4 ports).
    assert_eq!(b.bom.tiers[0].switches, 32);
    assert_connected(&b);
}

/// DCI cables between each pair of sites.
fn dci_cables_between(b: &BuiltCluster) -> std::collections::BTreeMap<(u16, u16), u64> {
    let t = &b.topology;
    let mut m = std::collections::BTreeMap::new();
    for i in 0..t.links.len() {
        if t.links.kind[i] == LinkKind::Dci {
            let s = |v: u32| t.switches.site[(v - t.endpoints) as usize];
            let (a, c) = (s(t.links.lower[i]), s(t.links.upper[i]));
            *m.entry((a.min(c), a.max(c))).or_insert(0) += t.links.cables[i] as u64;
        }
    }
    m
}

/// Guards against the DCI port count rounding down over the sites: every cable takes a port
/// at two sites, so an odd number of sites each asking an odd number of ports left one port
/// unpaired (3 sites at 400 Gb/s: one cable, the third site with no DCI at all; at 4,321
/// Gb/s, 11 ports each, 16 cables where 2 sites built 11: a site short of its DCI), and a
/// site with fewer ports than peers left sites unjoined (4 sites of one port: two pairs).
/// Now each site gets at least one port per peer and at least what it asks, one more where
/// the sites' total would be odd, and more sites never build fewer cables.
#[test]
fn dci_joins_every_pair_of_sites_and_never_shrinks_with_more_sites() {
    let y = |sites: u64, gbps: f64| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {}, scale_up: hgx-h100, sites: {sites}, dci: {{gbps_per_site: {gbps}, distance_km: 10}}, scale_out: {{fabric: infiniband-ndr}}}}",
            sites * 1024
        )
    };
    // (sites, Gb/s per site, ports per site, cables)
    for (sites, gbps, ports, cables) in [
        (2u64, 400.0, 1u64, 1u64),
        (3, 400.0, 2, 3),
        (4, 400.0, 3, 6),
        (2, 4321.0, 11, 11),
        (3, 4321.0, 12, 18),
        (4, 4321.0, 11, 22),
    ] {
        let b = built(&y(sites, gbps));
        assert_eq!(b.bom.dci_cables, cables, "{sites} sites, {gbps}");
        assert_eq!(
            dci_ports_per_site(&b),
            vec![ports; sites as usize],
            "{sites} sites, {gbps}"
        );
        let between = dci_cables_between(&b);
        assert_eq!(between.len() as u64, sites * (sites - 1) / 2, "{between:?}");
        assert_connected(&b);
    }
    for gbps in [400.0, 1234.0, 4321.0, 12345.0] {
        let mut last = 0;
        for sites in 2..=9 {
            let b = built(&y(sites, gbps));
            let want = (gbps / 400.0f64).ceil() as u64;
            assert!(
                dci_ports_per_site(&b).iter().all(|&p| p >= want),
                "{sites} sites, {gbps}"
            );
            assert!(b.bom.dci_cables >= last, "{sites} sites, {gbps}");
            last = b.bom.dci_cables;
        }
    }
}

/// Under breakout a DCI cable still counts two transceivers (long-haul optics are not
/// broken out); the switch ports inside a site pack two 400G cables per 800G transceiver.
#[test]
fn dci_cables_keep_two_transceivers_under_breakout() {
    let b = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 2048, scale_up: hgx-h100, sites: 2, dci: {gbps_per_site: 4000, distance_km: 1}, scale_out: {fabric: roce-800g, tiers: 2}}",
    );
    assert_eq!(b.network.breakout, 2);
    // 4,000 / 400 = 10 DCI ports per site: 10 cables between the two sites.
    assert_eq!(b.bom.dci_cables, 10);
    let t = &b.topology;
    let dci = dci_ports_per_site(&b);
    assert_eq!(dci, vec![10, 10]);
    // From the switches' ports: every leaf and spine port pair in one 800G transceiver
    // (down and up apart), the DCI ports (all the spines' up ports) two per cable, and one
    // at each of the 2,048 NICs.
    let inside: u64 = (0..t.switches.len())
        .map(|i| {
            let up = if t.switches.tier[i] == 2 {
                0
            } else {
                t.switches.up_ports[i]
            };
            (t.switches.down_ports[i].div_ceil(2) + up.div_ceil(2)) as u64
        })
        .sum();
    assert_eq!(b.bom.transceivers, 2048 + inside + 2 * 10);
}

/// Guards against a top-of-rack port broken out to two NICs counting a copper cable per NIC:
/// 1,024 H100 (400G NICs) on 32-port 800G RoCE switches split 2 x 400G: each leaf is one
/// rack's ToR (4 HGX = 32 NICs on 16 ports), 32 leaves; its NICs take 16 breakout DACs, not
/// 32: 512 DACs in all, and 512 x the DAC price.
#[test]
fn a_broken_out_top_of_rack_port_takes_one_dac() {
    let b = built(&h100(1024, "fabric: roce-800g, switch_radix: 32"));
    assert_eq!(b.network.breakout, 2);
    assert_eq!(b.bom.switches_in_compute_racks, 32);
    assert_eq!(b.bom.tiers[0].switches, 32);
    assert_eq!(b.bom.copper_cables, 512);
    assert_eq!(b.bom.tiers[0].copper_cables, 512);
    assert_eq!(b.bom.cables, b.bom.optical_cables + 512);
    assert_eq!(
        b.bom.tiers.iter().map(|t| t.cables).sum::<u64>() + b.bom.dci_cables,
        b.bom.cables
    );
    let dac = b.fabric.copper_cable.price_usd;
    assert!((b.capex.copper_cables_usd - 512.0 * dac).abs() < 1e-6);
    // Without breakout (400G ports, 64 of them: 8 HGX per ToR leaf) one DAC per NIC.
    let b = built(&h100(1024, "fabric: roce-400g, switch_radix: 64"));
    assert_eq!(b.network.breakout, 1);
    assert_eq!(b.bom.copper_cables, 1024);
}

/// A DCI far beyond the ports on an odd number of sites asks `u64::MAX` ports (odd): the
/// rounding to an even total must not wrap (in a debug build, an overflow panic; in release,
/// 0 ports wanted and no room kept at the site top). Every site gets its top's down ports.
#[test]
fn dci_beyond_the_ports_on_three_sites_takes_one_to_one() {
    let b = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 3072, scale_up: hgx-h100, sites: 3, dci: {gbps_per_site: 1e30, distance_km: 10}, scale_out: {fabric: infiniband-ndr}}",
    );
    // 1,024 NIC ports per site: 2 tiers (32 leaves, spines with room for 1:1 DCI).
    assert_eq!(dci_ports_per_site(&b), vec![1024; 3]);
    assert_eq!(b.bom.dci_cables, 3 * 1024 / 2);
    let t = &b.topology;
    for i in 0..t.switches.len() {
        assert!(t.switches.down_ports[i] + t.switches.up_ports[i] <= b.network.plane_radix);
    }
}

/// Guards against the DCI level taking the requested `dci.gbps_per_site` instead of the DCI
/// built, and capping it with the level below it even when that is the scale-up domain.
#[test]
fn dci_level_has_the_dci_built() {
    let y = |per: u64, sites: u64, gbps: f64| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {}, scale_up: hgx-h100, sites: {sites}, dci: {{gbps_per_site: {gbps}, distance_km: 10}}, scale_out: {{fabric: infiniband-ndr}}}}",
            per * sites
        )
    };
    // 3 sites asking 400 Gb/s each: one port per peer, 2 x 400G = 800 Gb/s leave each site,
    // 800 / 8 / 1,024 = 0.09765625 GB/s per GPU (was 400 / 8 / 1,024 = 0.048828125).
    let b = built(&y(1024, 3, 400.0));
    assert_eq!(dci_ports_per_site(&b), vec![2; 3]);
    let top = b.levels.last().unwrap();
    assert_eq!((top.name.as_str(), top.size), ("cluster", 3072));
    assert!(
        (top.gbps_per_accelerator - 0.09765625).abs() < 1e-12,
        "{top:?}"
    );
    // One HGX per site, 1e6 Gb/s asked: the DCI is capped 1:1 at the site's 8 NIC ports,
    // 8 x 400 = 3,200 Gb/s, 3,200 / 8 / 8 = 50 GB/s per GPU, the NICs' rate (was
    // min(1e6 / 8 / 8, 450) = 450 GB/s: NVLink's rate, over a DCI of 3.2 Tb/s).
    let b = built(&y(8, 2, 1e6));
    assert_eq!(dci_ports_per_site(&b), vec![8; 2]);
    let top = b.levels.last().unwrap();
    assert_eq!((top.name.as_str(), top.size), ("cluster", 16));
    assert!((top.gbps_per_accelerator - 50.0).abs() < 1e-12, "{top:?}");
    // A larger site never gets more DCI per GPU from the same request: 16 per site, 16
    // ports, 16 x 400 / 8 / 16 = 50 GB/s.
    let b = built(&y(16, 2, 1e6));
    assert!((b.levels.last().unwrap().gbps_per_accelerator - 50.0).abs() < 1e-12);
}

/// Guards against counting a NIC faster than a switch port as one transceiver (and one DAC)
/// per switch port it takes: 1,024 B300 with 800G ConnectX-8 NICs on 400G NDR ports
/// counted 2 transceivers at each NIC (8,192 in all) where the NIC holds one 800G twin-port
/// module broken out to its two 400G switch ports: 1,024 at the NICs, 64 leaves x (32
/// down + 32 up) and 32 spines x 64 down: 7,168. The 800G modules cost and draw two 400G
/// ports' worth, so the optics' price is unchanged. On 400G RoCE top-of-rack leaves the
/// same NIC takes one breakout DAC (800G to 2 x 400G), not two: 1,024 DACs, was 2,048.
#[test]
fn a_nic_faster_than_a_port_holds_one_transceiver() {
    let y = |fabric: &str| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: b300, count: 1024, scale_up: hgx-b300, scale_out: {{fabric: {fabric}, tiers: 2}}}}"
        )
    };
    let b = built(&y("infiniband-ndr"));
    assert_eq!(b.network.ports_per_nic, 2);
    assert_eq!(b.network.breakout, 1);
    assert_eq!(tier_counts(&b), vec![64, 32]);
    // Fibres: 2,048 NIC to leaf (two per NIC), 2,048 leaf to spine.
    assert_eq!(b.bom.optical_cables, 4096);
    assert_eq!(b.bom.nic_transceivers, 1024);
    assert_eq!(b.bom.transceivers, 1024 + 64 * (32 + 32) + 32 * 64);
    assert_eq!(b.bom.nic_transceiver_gbps, 800.0);
    let f = &b.fabric;
    // 6,144 400G ports and 1,024 800G modules: 8,192 400G-port equivalents.
    assert!((b.capex.transceivers_usd - 8192.0 * f.transceiver.price_usd).abs() < 1e-6);
    assert!(
        (b.power.transceivers_kw - 8192.0 * f.transceiver.power_w / 1000.0).abs() < 1e-9,
        "{}",
        b.power.transceivers_kw
    );
    let b = built(&y("roce-400g"));
    assert!(b.network.top_of_rack_leaves);
    assert_eq!(b.bom.copper_cables, 1024);
    assert_eq!(b.bom.nic_transceivers, 0);
    // Leaf-spine only: 2,048 cables, a transceiver at each end.
    assert_eq!(b.bom.optical_cables, 2048);
    assert_eq!(b.bom.transceivers, 4096);
}

/// Guards against a site that outgrows its island losing DCI: the DCI was capped 1:1 at
/// the site top's down ports, which fall by the oversubscription when the site holds a
/// second island (the top then takes the islands' `1/r` uplinks, not every NIC port). 2 x
/// 576 H100 in islands of 576 at 3:1 on NDR, asking 102.4 Tb/s per site (256 ports),
/// built 256 DCI cables; 2 x 584 built 195. The DCI is capped 1:1 at the site's NIC ports,
/// so both build 256, and the DCI never drops as sites grow past islands or past one leaf.
#[test]
fn dci_stays_when_a_site_outgrows_its_island() {
    let y = |count: u64, sites: u32, dci: u64, so: &str| {
        format!(
            "format: myriad/1\ncluster: {{accelerator: h100-sxm, count: {count}, scale_up: hgx-h100, sites: {sites}, dci: {{gbps_per_site: {dci}, distance_km: 10}}, scale_out: {{{so}}}}}"
        )
    };
    let isl = "fabric: infiniband-ndr, island: 576, oversubscription: 3";
    let a = built(&y(1152, 2, 102400, isl));
    let b = built(&y(1168, 2, 102400, isl));
    assert_eq!((a.network.tiers, b.network.tiers), (2, 3));
    assert_eq!(a.bom.dci_cables, 256);
    assert_eq!(b.bom.dci_cables, 256);
    assert_eq!(dci_ports_per_site(&b), vec![256; 2]);
    // The top holds the DCI ports beside the islands' uplinks, within its ports.
    let t = &b.topology;
    for i in 0..t.switches.len() {
        assert!(t.switches.down_ports[i] + t.switches.up_ports[i] <= b.network.plane_radix);
    }
    // The DCI level still runs at the site's 1/r rate: 50 / 3 GB/s per GPU.
    let top = b.levels.last().unwrap();
    assert!(
        (top.gbps_per_accelerator - 50.0 / 3.0).abs() < 1e-9,
        "{top:?}"
    );
    for (sites, dci, so, counts) in [
        (2u32, 102400u64, isl, (1152..=2400).step_by(16)),
        (
            3,
            25600,
            "fabric: roce-400g, island: 256, oversubscription: 2",
            (768..=2400).step_by(24),
        ),
        // Leaves at 3:1: one leaf (1 tier, the top takes every NIC port) to 2 and 3 tiers.
        (
            2,
            51200,
            "fabric: roce-400g, switch_radix: 16, oversubscription: 3",
            (16..=1600).step_by(16),
        ),
    ] {
        for (what, metric) in [
            (
                "DCI cables",
                &(|b: &BuiltCluster| b.bom.dci_cables) as &dyn Fn(&BuiltCluster) -> u64,
            ),
            ("switches", &|b: &BuiltCluster| b.bom.switches_total),
            ("transceivers", &|b: &BuiltCluster| b.bom.transceivers),
        ] {
            never_drops(what, metric, &|c| y(c, sites, dci, so), counts.clone());
        }
    }
}

/// Guards against optics falling when a design changes its number of tiers as it grows
/// (1 -> 2 -> 3 -> 4, islands 1 -> 3, sites with DCI), one node (per site) at a time:
/// switches, cables, DCI cables and the transceivers' power and price never fall; the
/// transceiver count never falls once a site has more than one tier. A one-switch site
/// whose NICs reach it over fibre (its ports span compute racks) becoming top-of-rack
/// leaves on DACs can hold fewer modules (64 H100, 2 planes, on 16-port 800G RoCE: 128
/// 200G modules at the NICs and 32 800G at the switches, 160; 72 H100: 72 800G modules on
/// the leaves' uplinks and the spines), but not fewer 800G ports' worth of optics (64 ->
/// 72): each NIC's module is a quarter of a switch port's. Counted per module at the
/// switch port's power and price, the NICs' small modules made the optics' power fall by
/// more than half there (160 -> 72 modules' worth).
#[test]
fn optics_never_fall_across_tier_changes() {
    let h = ("h100-sxm", "hgx-h100");
    let a = ("a100-sxm-80gb", "hgx-a100");
    let b3 = ("b300", "hgx-b300");
    let by = |from: u64, to: u64, step: u64| (from..=to).step_by(step as usize);
    let designs = [
        // Breakout 4, top-of-rack leaves: 1 -> 2 tiers at 72, 2 -> 3 past 2,048.
        (
            h.0,
            h.1,
            1,
            "fabric: roce-800g, switch_radix: 16, planes: 2",
            by(8, 2400, 8),
        ),
        // Breakout 8.
        (
            a.0,
            a.1,
            1,
            "fabric: roce-800g, switch_radix: 8, planes: 2",
            by(8, 2400, 8),
        ),
        // No breakout: 1 -> 2 -> 3 -> 4 tiers.
        (
            h.0,
            h.1,
            1,
            "fabric: infiniband-ndr, switch_radix: 16",
            by(8, 2400, 8),
        ),
        // An 800G NIC on two 400G ports.
        (
            b3.0,
            b3.1,
            1,
            "fabric: roce-400g, switch_radix: 16",
            by(8, 2400, 8),
        ),
        (
            h.0,
            h.1,
            1,
            "fabric: roce-400g, switch_radix: 16, topology: rail-optimized",
            by(8, 2400, 8),
        ),
        // Islands of 64 at 2:1: 1 -> 3 tiers.
        (
            h.0,
            h.1,
            1,
            "fabric: roce-800g, switch_radix: 16, planes: 2, island: 64, oversubscription: 2",
            by(64, 2400, 8),
        ),
        // Two sites with DCI, breakout 2.
        (
            h.0,
            h.1,
            2,
            "fabric: roce-400g, switch_radix: 32, planes: 2",
            by(16, 2400, 16),
        ),
    ];
    for (acc, su, sites, so, counts) in designs {
        let mut prev: Option<(u64, BuiltCluster)> = None;
        for c in counts {
            let b = built(&cluster(acc, su, c, sites, so));
            if let Some((pc, p)) = &prev {
                let ctx = format!("{acc}, {sites} sites, {so}: {pc} -> {c}");
                let (pb, nb) = (&p.bom, &b.bom);
                assert!(nb.switches_total >= pb.switches_total, "{ctx}: switches");
                assert!(nb.cables >= pb.cables, "{ctx}: cables");
                assert!(nb.dci_cables >= pb.dci_cables, "{ctx}: DCI cables");
                assert!(
                    b.power.transceivers_kw >= p.power.transceivers_kw - 1e-9,
                    "{ctx}: transceiver power {} -> {} kW ({} -> {} modules)",
                    p.power.transceivers_kw,
                    b.power.transceivers_kw,
                    pb.transceivers,
                    nb.transceivers
                );
                assert!(
                    b.capex.optics_and_cables_usd >= p.capex.optics_and_cables_usd - 1e-6,
                    "{ctx}: optics and cables price"
                );
                if p.network.tiers > 1 {
                    assert!(nb.transceivers >= pb.transceivers, "{ctx}: transceivers");
                }
            }
            prev = Some((c, b));
        }
    }
}

/// The most cables one switch of `tier` has in a single bundle to one switch above, for
/// each switch of that tier in switch order.
fn widest_up_bundles(b: &BuiltCluster, tier: u8) -> Vec<(u32, u32)> {
    let t = &b.topology;
    let mut widest = vec![0u32; t.switches.len()];
    for i in 0..t.links.len() {
        if t.links.kind[i] != LinkKind::Fabric || t.links.tier[i] != tier + 1 {
            continue;
        }
        let x = (t.links.lower[i] - t.endpoints) as usize;
        widest[x] = widest[x].max(t.links.cables[i]);
    }
    (0..t.switches.len())
        .filter(|&x| t.switches.tier[x] == tier)
        .map(|x| (x as u32, widest[x]))
        .collect()
}

/// A partly filled pod (or island) is cabled as a full one: each of its leaves spreads its
/// uplinks over as many spines, and so reaches as many planes of the tier above, as a
/// leaf of a full pod. The spines of a partial pod filled front-first: on 4,160 H100 on
/// NDR (4 full pods of 1,024 NIC ports and one of 2 leaves) the last pod's 2 leaves took 2
/// spines, 16 cables to each, where a full pod's leaf takes 1 cable to each of 32; its
/// traffic reached 2 of the 32 core planes, and so 2 of the 32 uplinks of a leaf in
/// another pod (a ring all-reduce over all ranks ran 3.2x slower in the flow backend).
#[test]
fn a_partial_pod_reaches_every_plane_a_full_one_does() {
    for (so, counts) in [
        ("fabric: infiniband-ndr", vec![4104u64, 4160, 4352, 5000]),
        (
            "fabric: roce-800g, island: 256, oversubscription: 2",
            vec![1016, 1280, 1544],
        ),
        (
            "fabric: roce-400g, switch_radix: 16, tiers: 4",
            vec![72, 520, 1160],
        ),
    ] {
        for c in counts {
            let b = built(&h100(c, so));
            for tier in 1..b.topology.tiers as u8 - 1 {
                let w = widest_up_bundles(&b, tier);
                // Switch 0 of each tier sits in the first block, which is full.
                let full = w[0].1;
                for &(x, cables) in &w {
                    assert!(
                        cables <= full,
                        "{c} H100, {so}: tier-{tier} switch {x} has {cables} cables to one \
                         switch above, a full block's {full}"
                    );
                }
            }
        }
    }
}

/// A rail-optimized site of at most one rail group (16 DGX H100 under RoCE leaves of 32
/// ports: every rail's NICs on one leaf) is crossed at the leaf by a collective's channels,
/// which keep to one rail: the site level is priced as a leaf crossing, as the leaf level
/// of a larger rail-optimized site is, and the DCI level still starts from the site top
/// (its links hang off the spines). The site level charged the spine crossing, 6.07 µs
/// against the leaf's 3.87, so rings and trees over DGX under one leaf came out 0.7-0.9 of
/// the analytical time in the flow backend.
#[test]
fn a_site_under_one_rail_group_is_crossed_at_its_leaf() {
    let ro = "fabric: roce-400g, topology: rail-optimized";
    let large = built(&h100(1024, ro));
    let leaf = large.levels.iter().find(|l| l.name == "leaf").unwrap();
    let top = large.levels.last().unwrap();
    assert_eq!(leaf.size, 256);
    assert!(leaf.latency_us < top.latency_us);
    let one = built(&h100(128, ro));
    assert_eq!(one.topology.tiers, 2);
    let names: Vec<&str> = one.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["domain", "cluster"]);
    assert!(
        (one.levels[1].latency_us - leaf.latency_us).abs() < 1e-9,
        "{:?}",
        one.levels
    );
    assert_eq!(
        one.levels[1].gbps_per_accelerator,
        leaf.gbps_per_accelerator
    );
    let two = built(
        "format: myriad/1\ncluster: {accelerator: h100-sxm, count: 256, scale_up: hgx-h100, sites: 2, dci: {gbps_per_site: 102400, distance_km: 80}, scale_out: {fabric: roce-400g, topology: rail-optimized}}",
    );
    let names: Vec<&str> = two.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["domain", "site", "cluster"]);
    let (site, cluster) = (&two.levels[1], &two.levels[2]);
    assert!(
        (site.latency_us - leaf.latency_us).abs() < 1e-9,
        "{:?}",
        two.levels
    );
    // Across sites: up to the spine (the site top), 80 km of DCI (400 µs), down again.
    assert!(
        (cluster.latency_us - top.latency_us - 400.0).abs() < 1e-6,
        "{:?} against a spine crossing of {} µs",
        two.levels,
        top.latency_us
    );
}
