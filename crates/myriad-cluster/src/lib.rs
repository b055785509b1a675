//! Scenario -> built cluster.
//!
//! `build(&Scenario, &Catalog)` is a pure function returning a `BuiltCluster`: the
//! hierarchy (site, pod/island, rack, scale-up domain, node, accelerator), the scale-out
//! topology as data (switches, links, capacities, latencies) that the network simulation can
//! route over, and the bill of materials, power and cost derived from that same data.
//!
//! Invariants:
//! - Every accelerator belongs to exactly one scale-up domain.
//! - BOM counts follow from the built structure (switches and links of the graph), not from
//!   a separate formula table.
//! - More accelerators never means fewer switches, cables or transceivers (a partly filled
//!   pod or island is cabled as a full one, `topology`), also across a change in the number
//!   of tiers, except that a one-switch site with fibre to every NIC becoming top-of-rack
//!   leaves on DACs can hold fewer transceiver modules (never less transceiver power or
//!   price: a NIC's module is priced at its rate).
//! - `levels` is ordered innermost first and sizes divide each other where they can.
//!
//! Rules and assumptions (each one a choice, documented here and in the README):
//! - Topology. Each site, and each plane of a site, is its own folded Clos tree (see
//!   `topology`). Non-blocking tiers use half their ports down, half up (`k/2`); the top tier
//!   uses all `k` ports down: 2 tiers reach `k^2/2` NIC ports, 3 tiers `k^3/4`, 4 tiers
//!   `k^4/8`. Tiers: leaf, spine, core, super-spine. Only the switches the ports need are
//!   built (a 1,024-GPU DGX H100 SuperPOD on 64-port NDR switches: 32 leaves, 16 spines).
//! - Oversubscription `r` > 1 with an `island`: the island is a full-bisection subtree of the
//!   fewest tiers that hold it; its top tier keeps `ceil(down / r)` up ports, and the tiers
//!   above are non-blocking over those uplinks, so bandwidth leaving an island is `1/r` of
//!   the island's. With `r` > 1 and no island (and always for `spine-leaf`), the leaves are
//!   the oversubscribed boundary (e.g. 48 down / 16 up at 3:1 on 64 ports).
//! - Planes `P` > 1 (Alibaba HPN, SIGCOMM'24: each 400G NIC is 2 x 200G, one port to each of
//!   two planes, and "dual-plane" aggregation so that each plane is a separate Clos): each
//!   NIC's bandwidth splits evenly over the planes, and each plane is a tree whose switch
//!   ports are broken out to the per-plane rate (a 64 x 400G switch is 128 x 200G ports in a
//!   dual-plane fabric). The same breakout applies when a NIC is slower than a switch port
//!   (400G NICs on 800G switch ports: 2 x 400G per port); a NIC faster than a port takes
//!   several ports.
//! - Rail-optimized: leaf `(group, i)` takes NIC port `i` of each of the `d1` nodes of a rail
//!   group (`d1` = leaf down ports), spines as in the fat-tree. Rail-only (Wang et al. 2023):
//!   rail `i` holds port slot `i` of every scale-up domain and is its own tree (usually one
//!   tier); no spine joins rails, cross-rail traffic goes over the scale-up fabric first.
//! - Sites > 1: every site is its own tree; its top tier keeps `ceil(dci.gbps_per_site /
//!   link rate)` up ports for the DCI (at most as many as the site's NIC ports in that
//!   plane, 1:1 with what its accelerators send, so a site that outgrows its island and
//!   takes only the islands' oversubscribed uplinks at its top keeps its DCI; at least one
//!   per peer site, and one more where an odd number of sites would leave a port unpaired,
//!   so every pair of sites is joined and every site gets what it asked). A top switch
//!   takes at most `k` minus its share of the DCI in a full tree of that many tiers (so a
//!   larger site never fits fewer tiers), and the top gets the switches its uplinks and the
//!   DCI ports need, the whole top together (so a larger site never has fewer). The DCI ports are long-haul optical links to the
//!   same-position top switch of every other site, split evenly over the peers (5 us/km);
//!   what a position cannot split evenly (three sites with one port each there) is paired
//!   across positions, evenly over the peers.
//! - Cables: every switch-to-switch link is optical (a transceiver at each end). A
//!   NIC-to-leaf link is a copper DAC only when the leaf is a top-of-rack switch: an Ethernet
//!   (RoCE) fat-tree or spine-leaf, a server rack (the scale-up system takes less than one
//!   rack) and all of the leaf's ports in that rack. InfiniBand reference designs (DGX
//!   SuperPOD RA) and rail designs put leaves in network racks and use optics from the node.
//!   DCI cables count two fabric transceivers each (long-haul optics are dearer; the catalog
//!   has no price for them). Transceivers are counted per physical port: a switch port
//!   broken out to `breakout` cables (400G NICs on an 800G port, or one port per plane)
//!   holds one transceiver for all of them, and each NIC-side end holds one. A NIC faster
//!   than a switch port (an 800G NIC on 400G ports) holds one module in each plane, broken
//!   out to its `ports_per_nic` switch ports: one 800G twin-port module at the NIC, a 400G
//!   transceiver at each switch port, two fibres. Optical cables are counted per fibre
//!   run. Likewise a top-of-rack port broken out to several NICs takes one breakout DAC,
//!   and a NIC broken out to several top-of-rack ports one: copper cables are counted at
//!   the broken-out end. The catalog's transceiver is one switch port's; a NIC-end module
//!   at another rate draws and costs in proportion to its rate.
//! - Racks: compute racks = domains x `racks_per_domain` (rounded up per site); network racks
//!   = one per 16 switches outside compute racks, per site.
//! - Power: IT = nodes x `node_power_kw` + domains x `fabric_power_kw_per_domain` + switches x
//!   switch power + transceivers x transceiver power. NICs are inside `node_power_kw` and
//!   `node_price_usd` (the catalog defines node power as including NICs; DGX prices include
//!   the ConnectX-7s), so they are counted but add no power or price. Facility = IT x PUE;
//!   energy cost per year = facility MW x 8,760 h x USD/kWh.

// `!(x > 0.0)` rejects NaN with the bad values; `x <= 0.0` would let it through.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod summary;
pub mod topology;

use myriad_catalog::{Accelerator, Catalog, Fabric, FabricKind, ScaleUpSystem, UnknownId};
use myriad_scenario::{Scenario, TopologyKind, MAX_ACCELERATORS, MAX_SITES, MAX_TIERS};
use serde::{Serialize, Serializer};

pub use summary::{ClusterReport, GraphSize, IdName, ScaleUpReport};
use topology::{dci_ports_wanted, ratio_down, up_ports, LeafKind, Plan, Rule, Scope};
pub use topology::{LinkKind, Links, Switches, Topology, Vertex, NO_RACK};

/// One level of the hierarchy, as the step-time model sees it: a group of `size`
/// accelerators, and the bandwidth each accelerator has to peers inside the group but
/// outside its child group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// `domain`, `leaf`, `pod`, `superpod`, `island`, `rail`, `site`, `cluster`.
    pub name: String,
    /// Accelerators in one group at this level.
    pub size: u64,
    /// Bandwidth per accelerator per direction to peers in this group (GB/s), after
    /// oversubscription, before protocol efficiency.
    pub gbps_per_accelerator: f64,
    /// One-way latency of a small message between two members, microseconds.
    pub latency_us: f64,
    /// Fraction of `gbps_per_accelerator` that NCCL-style collectives reach for large
    /// messages at this level (scale-up: the system's `collective_efficiency`; scale-out:
    /// the fabric's `link_efficiency`).
    pub efficiency: f64,
    /// In-network reduction available at this level (NVLS, SHARP).
    pub in_network_reduction: bool,
    /// Extra latency of a crossing at this level whose sender is not on the receiver's
    /// rail, microseconds: on `rail-optimized` and `rail-only` fabrics NCCL's PXN sends
    /// through the NIC of the receiver's rail twin in the sender's domain, so the data
    /// first crosses the scale-up fabric to it (the domain's latency; a ring over several
    /// members of each domain leaves every domain from a member off the next one's entry
    /// rail). 0 on the scale-up level and on other fabrics, where the sender's own NIC
    /// sends.
    #[serde(skip_serializing_if = "is_zero")]
    pub pxn_us: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A build error: the scenario field path and what is wrong, with the numbers.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{path}: {message}")]
pub struct BuildError {
    pub path: String,
    pub message: String,
}

impl BuildError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `(name, value)` pairs that serialize as a JSON object in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Ordered<T> {
    pub fn get(&self, k: &str) -> Option<&T> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }
}

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The resolved scale-out network.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Network {
    pub fabric: String,
    pub topology: TopologyKind,
    pub switch_model: String,
    /// Ports per switch at the fabric's port rate.
    pub switch_radix: u32,
    /// Ports per switch in one plane after breakout (`switch_radix * breakout`).
    pub plane_radix: u32,
    /// Each switch port split into this many ports (planes, or NICs slower than a port).
    pub breakout: u32,
    pub port_gbps: f64,
    /// Rate of one switch-to-switch cable in a plane, Gb/s.
    pub link_gbps: f64,
    /// Rate of one NIC-to-leaf cable, Gb/s.
    pub nic_link_gbps: f64,
    /// Switch ports each NIC takes in each plane.
    pub ports_per_nic: u32,
    pub planes: u32,
    pub tiers: u32,
    /// Tiers inside one full-bisection island (when islands are oversubscribed above).
    pub island_tiers: Option<u32>,
    pub oversubscription: f64,
    /// Where the oversubscription applies: `none`, `leaf` or `island`.
    pub oversubscribed_at: String,
    /// Accelerators per full-bisection island, when islands are oversubscribed above.
    pub island: Option<u64>,
    /// NIC-to-leaf cables are in-rack copper (top-of-rack leaves).
    pub top_of_rack_leaves: bool,
    /// Scale-out bandwidth per accelerator per direction, GB/s (NICs x rate / 8 / GPUs
    /// per node). Gigabytes, unlike the Gb/s `port_gbps` and `link_gbps`; kept under this
    /// name for JSON users, `gbytes_per_s_per_accelerator` says its unit.
    pub gbps_per_accelerator: f64,
    /// The same bandwidth as `gbps_per_accelerator`, named for its unit (GB/s).
    pub gbytes_per_s_per_accelerator: f64,
    /// DCI bandwidth leaving each site, Gb/s, and one-way latency, us.
    pub dci_gbps_per_site: Option<f64>,
    pub dci_latency_us: Option<f64>,
    /// Flows per NIC-to-NIC connection (`cluster.scale_out.qps_per_connection`).
    pub qps_per_connection: u32,
}

/// Counts of the physical hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hierarchy {
    pub sites: u32,
    pub accelerators_per_site: u64,
    /// Full-bisection islands (all sites) and their size, when islands are used.
    pub islands: u64,
    pub accelerators_per_island: Option<u64>,
    pub compute_racks: u64,
    pub domains: u64,
    pub accelerators_per_domain: u32,
    pub nodes: u64,
    pub nodes_per_domain: u32,
    pub accelerators_per_node: u32,
}

/// One scale-up domain: accelerators `first_accelerator..first_accelerator+accelerators`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Domain {
    pub first_accelerator: u64,
    pub accelerators: u32,
    pub site: u32,
    /// Island within the site (0 when there are no islands).
    pub island: u32,
    /// First compute rack (global index) the domain sits in.
    pub rack: u32,
}

/// One tier of the scale-out network, summed over planes and sites.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierBom {
    pub tier: u32,
    pub name: String,
    pub switches: u64,
    pub switch_model: String,
    pub ports_used: u64,
    pub down_ports: u64,
    pub up_ports: u64,
    /// Cables from the level below into this tier (NIC-to-leaf for the leaf tier).
    pub cables: u64,
    pub optical_cables: u64,
    pub copper_cables: u64,
    /// Down capacity / up capacity of the tier as built; `None` at the top.
    pub oversubscription: Option<f64>,
}

/// Bill of materials, all counted from the graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bom {
    pub tiers: Vec<TierBom>,
    pub switches_total: u64,
    /// Switches housed in compute racks (top-of-rack leaves).
    pub switches_in_compute_racks: u64,
    pub nics: u64,
    pub nic_ports: u64,
    pub cables: u64,
    pub optical_cables: u64,
    pub copper_cables: u64,
    pub dci_cables: u64,
    /// Optical transceivers, one per physical port at each optical cable end (switch
    /// ends, DCI ends and NIC ends).
    pub transceivers: u64,
    /// Of `transceivers`, those at NICs: one per NIC and plane, each at the NIC's rate in
    /// that plane (`nic_transceiver_gbps`).
    pub nic_transceivers: u64,
    /// Rate of one NIC-end transceiver, Gb/s (NIC rate / planes); the others run at the
    /// fabric's port rate.
    pub nic_transceiver_gbps: f64,
    pub compute_racks: u64,
    pub network_racks: u64,
    pub racks: u64,
    /// Scale-up switch chips (NVSwitch, UB switches) over all domains.
    pub scale_up_switch_chips: u64,
    pub transceiver_model: String,
    pub copper_cable_model: String,
    pub nic_model: String,
}

/// Power, from the BOM.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Power {
    pub nodes_kw: f64,
    pub scale_up_fabric_kw: f64,
    pub switches_kw: f64,
    pub transceivers_kw: f64,
    /// NIC power is inside `node_power_kw`: 0 here.
    pub nics_kw: f64,
    pub it_mw: f64,
    pub pue: f64,
    pub facility_mw: f64,
    pub energy_mwh_per_year: f64,
    pub usd_per_kwh: f64,
    pub energy_cost_usd_per_year: f64,
}

/// Capital cost, from the BOM.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capex {
    /// Nodes with their accelerators (and NICs).
    pub servers_usd: f64,
    pub scale_up_fabric_usd: f64,
    pub switches_usd: f64,
    pub transceivers_usd: f64,
    pub copper_cables_usd: f64,
    /// Transceivers plus copper cables.
    pub optics_and_cables_usd: f64,
    /// NICs are inside the node price: 0 here.
    pub nics_usd: f64,
    pub total_usd: f64,
}

/// Peak compute and memory totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compute {
    /// Dense PFLOP/s per precision (datasheet peaks x count).
    pub peak_pflops: Ordered<f64>,
    pub hbm_tib: f64,
    /// Total HBM bandwidth, TB/s.
    pub hbm_tbps: f64,
}

/// The built cluster.
#[derive(Debug, Clone, Serialize)]
pub struct BuiltCluster {
    pub name: String,
    pub accelerator: Accelerator,
    pub scale_up: ScaleUpSystem,
    pub fabric: Fabric,
    pub accelerators: u64,
    /// Hierarchy levels, innermost (scale-up domain) first, outermost (whole cluster) last.
    pub levels: Vec<Level>,
    pub network: Network,
    pub hierarchy: Hierarchy,
    pub domains: Vec<Domain>,
    pub topology: Topology,
    pub bom: Bom,
    pub power: Power,
    pub capex: Capex,
    pub compute: Compute,
}

impl BuiltCluster {
    /// The printable summary.
    pub fn report(&self) -> ClusterReport {
        ClusterReport::new(self)
    }
}

/// The printable summary of a built cluster (what `myriad cluster` prints). The scenario is
/// accepted for callers that have it at hand; everything comes from the built cluster.
pub fn report(b: &BuiltCluster, _s: &Scenario) -> ClusterReport {
    ClusterReport::new(b)
}

/// Tier names, innermost first.
pub const TIER_NAMES: [&str; 4] = ["leaf", "spine", "core", "super-spine"];
/// Switches per network rack.
pub const SWITCHES_PER_NETWORK_RACK: u64 = 16;
/// Fibre latency between sites, us per km.
pub const DCI_US_PER_KM: f64 = 5.0;

pub fn tier_name(t: u32) -> &'static str {
    TIER_NAMES
        .get(t.saturating_sub(1) as usize)
        .copied()
        .unwrap_or("tier")
}

fn unknown(path: &str, e: UnknownId) -> BuildError {
    BuildError::new(path, e.message())
}

/// `n` to one decimal.
fn one_decimal(x: f64) -> String {
    format!("{x:.1}")
}

/// "use 1008 or 936" (the next multiple of `m` up, then down when positive).
fn nearest_multiples(n: u64, m: u64) -> String {
    let up = n.div_ceil(m) * m;
    let down = n / m * m;
    if down == 0 || down == up {
        format!("use {up}")
    } else {
        format!("use {up} or {down}")
    }
}

/// Builds the cluster of a scenario. Pure; errors name the field path.
pub fn build(s: &Scenario, cat: &Catalog) -> Result<BuiltCluster, BuildError> {
    let c = &s.cluster;
    let so = &c.scale_out;
    let acc = cat
        .accelerator(&c.accelerator)
        .map_err(|e| unknown("cluster.accelerator", e))?;
    let su = cat
        .scale_up_for(&acc.id, c.scale_up.as_deref())
        .map_err(|m| BuildError::new("cluster.scale_up", m))?;
    // A system that also holds a variant with fewer scale-up links (an H800, 8 NVLinks, in
    // an HGX H100 chassis built for 18) runs its domain at the accelerator's own rate.
    let su_own;
    let su = if acc.scale_up_gbps < su.bandwidth_gbps {
        su_own = ScaleUpSystem {
            bandwidth_gbps: acc.scale_up_gbps,
            ..su.clone()
        };
        &su_own
    } else {
        su
    };
    let fabric = match &so.fabric {
        Some(id) => cat
            .fabric(id)
            .map_err(|e| unknown("cluster.scale_out.fabric", e))?,
        None => acc
            .typical_fabrics
            .iter()
            .find_map(|f| cat.fabric(f).ok())
            .ok_or_else(|| {
                BuildError::new(
                    "cluster.scale_out.fabric",
                    format!(
                        "not given, and none of `{}`'s typical fabrics ({}) is in the catalog; name one",
                        acc.id,
                        acc.typical_fabrics.join(", ")
                    ),
                )
            })?,
    };

    // ---- counts -------------------------------------------------------------------
    let count = c.count;
    if count == 0 {
        return Err(BuildError::new("cluster.count", "must be at least 1"));
    }
    if count > MAX_ACCELERATORS {
        return Err(BuildError::new(
            "cluster.count",
            format!("{count} is more than the {MAX_ACCELERATORS} accelerators supported"),
        ));
    }
    let sites = c.sites;
    if sites == 0 {
        return Err(BuildError::new("cluster.sites", "must be at least 1"));
    }
    if sites > MAX_SITES {
        return Err(BuildError::new(
            "cluster.sites",
            format!("{sites} is more than the {MAX_SITES} supported"),
        ));
    }
    let apd = su.accelerators_per_domain as u64;
    let apn = su.accelerators_per_node as u64;
    if apd == 0 || apn == 0 || !apd.is_multiple_of(apn) {
        return Err(BuildError::new(
            "cluster.scale_up",
            format!(
                "`{}` has {} accelerators per domain and {} per node; a domain must hold whole nodes",
                su.id, apd, apn
            ),
        ));
    }
    if !count.is_multiple_of(apd) {
        return Err(BuildError::new(
            "cluster.count",
            format!(
                "{count} does not fill whole scale-up domains of {apd} ({} domains); {}",
                one_decimal(count as f64 / apd as f64),
                nearest_multiples(count, apd)
            ),
        ));
    }
    if sites > 1 && !count.is_multiple_of(apd * sites as u64) {
        return Err(BuildError::new(
            "cluster.count",
            format!(
                "{count} over {sites} sites is {} per site, which does not fill whole scale-up domains of {apd} ({} domains per site); {}",
                one_decimal(count as f64 / sites as f64),
                one_decimal(count as f64 / sites as f64 / apd as f64),
                nearest_multiples(count, apd * sites as u64)
            ),
        ));
    }
    let dci = if sites > 1 {
        let d = c.dci.as_ref().ok_or_else(|| {
            BuildError::new(
                "cluster.dci",
                format!("{sites} sites need a DCI link: {{gbps_per_site, distance_km}}"),
            )
        })?;
        if !(d.gbps_per_site > 0.0) {
            return Err(BuildError::new(
                "cluster.dci.gbps_per_site",
                "must be positive",
            ));
        }
        if !(d.distance_km >= 0.0) {
            return Err(BuildError::new(
                "cluster.dci.distance_km",
                "must not be negative",
            ));
        }
        Some(d.clone())
    } else if c.dci.is_some() {
        return Err(BuildError::new(
            "cluster.dci",
            "a DCI link joins sites, but cluster.sites is 1; give sites: 2 or more, or drop dci",
        ));
    } else {
        None
    };
    let acc_per_site = count / sites as u64;
    if let Some(i) = so.island {
        if i > acc_per_site && i != count {
            return Err(BuildError::new(
                "cluster.scale_out.island",
                format!(
                    "{i} is more than the {acc_per_site} accelerators of a site ({sites} sites); an island sits inside one site (or give the whole cluster, {count})"
                ),
            ));
        }
    }
    let domains = count / apd;
    let domains_per_site = acc_per_site / apd;
    let nodes_per_domain = apd / apn;
    let nodes = count / apn;
    let nodes_per_site = acc_per_site / apn;

    // ---- scale-out resolution -------------------------------------------------------
    let radix = so.switch_radix.unwrap_or(fabric.switch.radix);
    if !(4..=1024).contains(&radix) || !radix.is_multiple_of(2) {
        return Err(BuildError::new(
            "cluster.scale_out.switch_radix",
            format!("{radix} is not an even port count between 4 and 1024"),
        ));
    }
    if let Some(t) = so.tiers {
        if t == 0 {
            return Err(BuildError::new(
                "cluster.scale_out.tiers",
                "0: at least 1 tier",
            ));
        }
        if t > MAX_TIERS {
            return Err(BuildError::new(
                "cluster.scale_out.tiers",
                format!("{t} is more than the {MAX_TIERS} supported"),
            ));
        }
    }
    let r = so.oversubscription;
    if !(1.0..=64.0).contains(&r) {
        return Err(BuildError::new(
            "cluster.scale_out.oversubscription",
            format!("{r} is not a ratio between 1.0 and 64"),
        ));
    }
    let planes = so.planes;
    if planes == 0 || planes > 8 {
        return Err(BuildError::new(
            "cluster.scale_out.planes",
            format!("{planes} is not between 1 and 8"),
        ));
    }
    let kind = so.topology;
    let port = fabric.port_gbps;
    let nic_plane = su.nic_gbps / planes as f64;
    let (breakout, ports_per_nic, link_gbps, nic_link_gbps) = if nic_plane >= port * (1.0 - 1e-9) {
        // Enough ports to carry the NIC's share: 266.7 Gb/s (an 800G NIC over 3 planes) on
        // 200G ports takes 2, each cable at 133.3 Gb/s, never one cable over its port's rate.
        let ppn = (nic_plane / port - 1e-9).ceil().max(1.0) as u32;
        (1u32, ppn, port, nic_plane / ppn as f64)
    } else {
        let b = ((port / nic_plane) + 1e-9).floor().max(1.0) as u32;
        let link = port / b as f64;
        (b, 1u32, link, nic_plane.min(link))
    };
    let k = radix * breakout;
    let eps = su.nics_per_node * ports_per_nic; // NIC ports per node per plane
    let ep_per_acc = eps as f64 / apn as f64;
    let gbps_per_acc = su.nics_per_node as f64 * su.nic_gbps / 8.0 / apn as f64;
    let e_site = nodes_per_site * eps as u64; // NIC ports per site per plane

    // An island is whole scale-up domains whatever the oversubscription: at 1:1 it still
    // names the pods that reliability's spares and the planner count in.
    if let Some(i) = so.island {
        if i == 0 || i > count {
            return Err(BuildError::new(
                "cluster.scale_out.island",
                format!("{i} must be between 1 and cluster.count {count}"),
            ));
        }
        if !i.is_multiple_of(apd) {
            return Err(BuildError::new(
                "cluster.scale_out.island",
                format!(
                    "{i} is not a whole number of scale-up domains of {apd} ({} domains); {}",
                    one_decimal(i as f64 / apd as f64),
                    nearest_multiples(i, apd)
                ),
            ));
        }
    }

    // Islands and the oversubscription boundary.
    let mut island_nodes: Option<u64> = None;
    let mut leaf_ratio = false;
    if r > 1.0 {
        match kind {
            TopologyKind::RailOnly => {
                return Err(BuildError::new(
                    "cluster.scale_out.oversubscription",
                    format!("{r}: rail-only has no spine to oversubscribe; use 1.0"),
                ))
            }
            TopologyKind::SpineLeaf => {
                if so.island.is_some() {
                    return Err(BuildError::new(
                        "cluster.scale_out.island",
                        "spine-leaf oversubscribes at the leaves; leave island null or use fat-tree",
                    ));
                }
                leaf_ratio = true;
            }
            TopologyKind::FatTree | TopologyKind::RailOptimized => match so.island {
                None => leaf_ratio = true,
                Some(i) => {
                    if i < acc_per_site {
                        island_nodes = Some(i / apn);
                    }
                }
            },
        }
    }

    // DCI per site-top block, per plane.
    let rails = (nodes_per_domain * eps as u64) as u32;
    let blocks_per_site = if kind == TopologyKind::RailOnly {
        rails.max(1)
    } else {
        1
    };
    let dci_per_block = dci
        .as_ref()
        .map(|d| d.gbps_per_site / planes as f64 / blocks_per_site as f64);
    let k2 = k / 2;
    // Down ports of a site-top switch with DCI, given the tiers below it: the DCI's
    // `ceil(gbps / link)` ports spread over the top switches of the full tree (the product
    // of the up ports of one switch per tier below), at most half the ports. It depends on
    // the DCI and the tiers, not on how many accelerators the site holds, so that a larger
    // site never fits in fewer tiers (a share that grew with the site let 4,000 H100 on two
    // sites fit 2 tiers where 3,984 took 3: 190 switches against 378).
    let dci_top_down = |d: &[u32], rule: &[Rule], t: u32, g: f64| -> u32 {
        let full: u64 = (1..t).fold(1u64, |a, j| {
            let up = match rule[j as usize] {
                Rule::Ratio(r) => up_ports(d[j as usize], r),
                _ => d[j as usize],
            };
            a.saturating_mul(up as u64)
        });
        let share = dci_ports_wanted(g, link_gbps, sites).div_ceil(full.max(1));
        if share >= (k - k2) as u64 {
            k2
        } else {
            k - share as u32
        }
    };
    let rd = ratio_down(k, r);
    let make = |t: u32, island_top: Option<u32>| -> (Vec<u32>, Vec<Rule>) {
        let mut d = vec![0u32; t as usize + 1];
        let mut rule = vec![Rule::Top; t as usize + 1];
        for j in 1..=t {
            let (dj, rj) = if j == t {
                match dci_per_block {
                    Some(g) => (dci_top_down(&d, &rule, t, g), Rule::Dci(g)),
                    None => (k, Rule::Top),
                }
            } else if island_top == Some(j) || (leaf_ratio && j == 1) {
                (rd, Rule::Ratio(r))
            } else {
                (k2, Rule::Equal)
            };
            d[j as usize] = dj;
            rule[j as usize] = rj;
        }
        (d, rule)
    };
    let prod = |d: &[u32], from: u32, to: u32| -> u64 {
        (from..=to).fold(1u64, |a, j| a.saturating_mul(d[j as usize] as u64))
    };
    let radix_text = if breakout > 1 {
        format!(
            "{radix}-port switches (split to {k} ports of {} Gb/s)",
            fmt_num(link_gbps)
        )
    } else {
        format!("{radix}-port switches")
    };
    let per_site = if sites > 1 { " per site" } else { "" };
    let plane_text = if planes > 1 { " per plane" } else { "" };
    let tiers_err = |m: String| BuildError::new("cluster.scale_out.tiers", m);

    let (tiers, scope, scope_tiers, down, rule) = if eps == 0 {
        if domains > 1 {
            return Err(BuildError::new(
                "cluster.count",
                format!(
                    "`{}` has no scale-out NICs, so the cluster can only be one scale-up domain of {apd}; use {apd}",
                    su.id
                ),
            ));
        }
        (0, Scope::Site, 0, vec![0], vec![Rule::Top])
    } else {
        match (kind, island_nodes) {
            (TopologyKind::RailOnly, _) => {
                let need = domains_per_site;
                let fits = |t: u32| {
                    let (d, _) = make(t, None);
                    prod(&d, 1, t) >= need
                };
                let tmin = (1..=MAX_TIERS).find(|&t| fits(t)).ok_or_else(|| {
                    let (d, _) = make(MAX_TIERS, None);
                    tiers_err(format!(
                        "each rail holds one NIC port of each of the {need} scale-up domains{per_site}; that needs more than {MAX_TIERS} tiers of {radix_text} ({MAX_TIERS} tiers reach {}); use a larger switch_radix or fewer accelerators",
                        prod(&d, 1, MAX_TIERS)
                    ))
                })?;
                let t = match so.tiers {
                    Some(t) if t < tmin => {
                        let (d, _) = make(t, None);
                        return Err(tiers_err(format!(
                            "{t} tiers of {radix_text} reach {} ports per rail; each rail needs {need} (one per scale-up domain{per_site}); use tiers: {tmin} or null",
                            prod(&d, 1, t)
                        )));
                    }
                    Some(t) => t,
                    None => tmin,
                };
                let (d, rl) = make(t, None);
                (t, Scope::Rails, t, d, rl)
            }
            (_, None) => {
                let fits = |t: u32| {
                    let (d, _) = make(t, None);
                    prod(&d, 1, t) >= e_site
                };
                let tmin = if kind == TopologyKind::SpineLeaf {
                    if let Some(t) = so.tiers {
                        if t != 2 {
                            return Err(tiers_err(format!(
                                "{t}: spine-leaf has 2 tiers; use 2 (or fat-tree for {t})"
                            )));
                        }
                    }
                    if !fits(2) {
                        let (d, _) = make(2, None);
                        return Err(tiers_err(format!(
                            "spine-leaf (2 tiers) of {radix_text} reaches {} NIC ports{plane_text}; the {acc_per_site} accelerators{per_site} have {e_site}; use fat-tree with 3 tiers or a larger switch_radix",
                            prod(&d, 1, 2)
                        )));
                    }
                    2
                } else {
                    (1..=MAX_TIERS).find(|&t| fits(t)).ok_or_else(|| {
                        let (d, _) = make(MAX_TIERS, None);
                        tiers_err(format!(
                            "{acc_per_site} accelerators{per_site} have {e_site} NIC ports{plane_text}; that needs more than {MAX_TIERS} tiers of {radix_text} ({MAX_TIERS} tiers reach {}); use a larger switch_radix or fewer accelerators",
                            prod(&d, 1, MAX_TIERS)
                        ))
                    })?
                };
                let t = match so.tiers {
                    Some(t) if t < tmin => {
                        let (d, _) = make(t, None);
                        return Err(tiers_err(format!(
                            "{t} tiers of {radix_text} reach {} NIC ports{plane_text}; the {acc_per_site} accelerators{per_site} have {e_site}; use tiers: {tmin} or null",
                            prod(&d, 1, t)
                        )));
                    }
                    Some(t) => t,
                    None => tmin,
                };
                let (d, rl) = make(t, None);
                (t, Scope::Site, t, d, rl)
            }
            (_, Some(inodes)) => {
                let e_isl = inodes * eps as u64;
                let island_acc = inodes * apn;
                // Tiers inside an island: its top keeps ceil(down / r) up ports.
                let ti = (1..=MAX_TIERS)
                    .find(|&t| {
                        let (d, _) = make(t + 1, Some(t));
                        prod(&d, 1, t) >= e_isl
                    })
                    .ok_or_else(|| {
                        tiers_err(format!(
                            "an island of {island_acc} accelerators has {e_isl} NIC ports{plane_text}; that needs more than {MAX_TIERS} tiers of {radix_text}; use a smaller island or a larger switch_radix"
                        ))
                    })?;
                let n_isl = nodes_per_site.div_ceil(inodes);
                let above = |t: u32| {
                    let (d, _) = make(t, Some(ti));
                    prod(&d, ti + 1, t) >= n_isl
                };
                let tmin = (ti + 1..=MAX_TIERS).find(|&t| above(t)).ok_or_else(|| {
                    tiers_err(format!(
                        "{n_isl} islands of {island_acc} accelerators{per_site} need {ti} tiers inside an island and more above it, over the {MAX_TIERS} supported with {radix_text}; use a larger island, a larger switch_radix or fewer accelerators"
                    ))
                })?;
                let t = match so.tiers {
                    Some(t) if t < tmin => {
                        return Err(tiers_err(format!(
                            "{t} tiers are too few: {n_isl} islands of {island_acc} accelerators{per_site} on {radix_text} need {ti} tiers inside an island and {} above; use tiers: {tmin} or null",
                            tmin - ti
                        )));
                    }
                    Some(t) => t,
                    None => tmin,
                };
                let (d, rl) = make(t, Some(ti));
                (t, Scope::Islands { nodes: inodes }, ti, d, rl)
            }
        }
    };

    // ---- racks and top-of-rack rule ---------------------------------------------------
    let rpd = su.racks_per_domain;
    let racks_per_site = (domains_per_site as f64 * rpd - 1e-9).ceil().max(1.0) as u64;
    let tor = fabric.kind == FabricKind::Roce
        && matches!(kind, TopologyKind::FatTree | TopologyKind::SpineLeaf)
        && rpd > 0.0
        && rpd < 1.0;
    let nodes_per_rack = if tor {
        ((1.0 / rpd) + 1e-9).floor().max(1.0) as u64 * nodes_per_domain
    } else {
        0
    };
    let dci_latency_us = dci.as_ref().map(|d| d.distance_km * DCI_US_PER_KM);
    let plan = Plan {
        k,
        breakout,
        link_gbps,
        nic_link_gbps,
        ports_per_nic,
        nics_per_node: su.nics_per_node,
        planes,
        sites,
        nodes_per_site,
        nodes_per_domain,
        nodes_per_rack,
        racks_per_site,
        tiers,
        scope_tiers,
        scope,
        // Rails need a tier above the leaves to join them: where one switch holds the
        // whole scope (a site, or an island) it takes every port, as in a fat-tree (rail
        // leaves there would be disconnected islands of one rail each).
        leaf_kind: if matches!(kind, TopologyKind::RailOptimized) && scope_tiers > 1 {
            LeafKind::Rails
        } else {
            LeafKind::Consecutive
        },
        down: down.clone(),
        rule,
        switch_latency_us: fabric.switch.latency_ns / 1000.0,
        dci_latency_us: dci_latency_us.unwrap_or(0.0),
    };
    let topo = topology::build_graph(&plan);

    let island_acc = island_nodes.map(|n| n * apn);
    let network = Network {
        fabric: fabric.id.clone(),
        topology: kind,
        switch_model: fabric.switch.model.clone(),
        switch_radix: radix,
        plane_radix: k,
        breakout,
        port_gbps: port,
        link_gbps,
        nic_link_gbps,
        ports_per_nic,
        planes,
        tiers,
        island_tiers: island_nodes.map(|_| scope_tiers),
        oversubscription: r,
        oversubscribed_at: if island_nodes.is_some() {
            "island"
        } else if leaf_ratio && tiers > 1 {
            "leaf"
        } else {
            "none"
        }
        .to_string(),
        island: island_acc,
        top_of_rack_leaves: tor && topo.switches.rack.iter().any(|&r| r != NO_RACK),
        gbps_per_accelerator: gbps_per_acc,
        gbytes_per_s_per_accelerator: gbps_per_acc,
        dci_gbps_per_site: dci.as_ref().map(|d| d.gbps_per_site),
        dci_latency_us,
        qps_per_connection: so.qps_per_connection.max(1),
    };

    // ---- hierarchy ----------------------------------------------------------------
    let islands_per_site = island_nodes
        .map(|n| nodes_per_site.div_ceil(n))
        .unwrap_or(0);
    let hierarchy = Hierarchy {
        sites,
        accelerators_per_site: acc_per_site,
        islands: islands_per_site * sites as u64,
        accelerators_per_island: island_acc,
        compute_racks: racks_per_site * sites as u64,
        domains,
        accelerators_per_domain: apd as u32,
        nodes,
        nodes_per_domain: nodes_per_domain as u32,
        accelerators_per_node: apn as u32,
    };
    let mut doms = Vec::with_capacity(domains as usize);
    for d in 0..domains {
        let site = d / domains_per_site;
        let in_site = d % domains_per_site;
        let island = island_acc.map(|i| in_site * apd / i).unwrap_or(0);
        let rack = site * racks_per_site + (in_site as f64 * rpd + 1e-9).floor() as u64;
        doms.push(Domain {
            first_accelerator: d * apd,
            accelerators: apd as u32,
            site: site as u32,
            island: island as u32,
            rack: rack as u32,
        });
    }

    // ---- BOM, power, capex, compute ----------------------------------------------------
    let bom = bill_of_materials(
        &topo,
        fabric,
        su,
        domains,
        nodes,
        racks_per_site,
        sites,
        breakout,
    );
    let dc = &c.datacenter;
    let nodes_kw = nodes as f64 * su.node_power_kw;
    let scale_up_fabric_kw = domains as f64 * su.fabric_power_kw_per_domain;
    let switches_kw = bom.switches_total as f64 * fabric.switch.power_w / 1000.0;
    // The catalog's transceiver is one switch port's (`port_gbps`); a NIC-end module at
    // another rate (a 400G NIC on an 800G port, an 800G NIC on 400G ports) draws and costs
    // in proportion to its rate, as the catalog's twin-port modules halve per port.
    let port_equivalents = (bom.transceivers - bom.nic_transceivers) as f64
        + bom.nic_transceivers as f64 * bom.nic_transceiver_gbps / fabric.port_gbps;
    let transceivers_kw = port_equivalents * fabric.transceiver.power_w / 1000.0;
    let it_mw = (nodes_kw + scale_up_fabric_kw + switches_kw + transceivers_kw) / 1000.0;
    let facility_mw = it_mw * dc.pue;
    let energy_mwh = facility_mw * 8760.0;
    let power = Power {
        nodes_kw,
        scale_up_fabric_kw,
        switches_kw,
        transceivers_kw,
        nics_kw: 0.0,
        it_mw,
        pue: dc.pue,
        facility_mw,
        energy_mwh_per_year: energy_mwh,
        usd_per_kwh: dc.usd_per_kwh,
        energy_cost_usd_per_year: energy_mwh * 1000.0 * dc.usd_per_kwh,
    };
    let servers_usd = nodes as f64 * su.node_price_usd;
    let scale_up_fabric_usd = domains as f64 * su.fabric_price_usd_per_domain;
    let switches_usd = bom.switches_total as f64 * fabric.switch.price_usd;
    let transceivers_usd = port_equivalents * fabric.transceiver.price_usd;
    let copper_cables_usd = bom.copper_cables as f64 * fabric.copper_cable.price_usd;
    let optics_and_cables_usd = transceivers_usd + copper_cables_usd;
    let capex = Capex {
        servers_usd,
        scale_up_fabric_usd,
        switches_usd,
        transceivers_usd,
        copper_cables_usd,
        optics_and_cables_usd,
        nics_usd: 0.0,
        total_usd: servers_usd + scale_up_fabric_usd + switches_usd + optics_and_cables_usd,
    };
    let compute = Compute {
        peak_pflops: Ordered(
            acc.dense_tflops
                .iter()
                .map(|(n, v)| (n.to_string(), count as f64 * v / 1000.0))
                .collect(),
        ),
        hbm_tib: count as f64 * acc.hbm_gib / 1024.0,
        hbm_tbps: count as f64 * acc.hbm_tbps,
    };

    // ---- levels -------------------------------------------------------------------
    let lv = LevelInputs {
        su,
        fabric,
        kind,
        count,
        acc_per_site,
        apn,
        ep_per_acc,
        gbps_per_acc,
        tiers,
        scope,
        scope_tiers,
        down: &down,
        leaf_ratio,
        r,
        island_acc,
        sites,
        dci: dci.as_ref().map(|d| {
            (
                dci_gbps_built(&topo, link_gbps),
                d.distance_km * DCI_US_PER_KM,
            )
        }),
        cross_prop: topo.crossing_propagation_us(),
    };
    let levels = levels(&lv);

    Ok(BuiltCluster {
        name: s.name.clone(),
        accelerator: acc.clone(),
        scale_up: su.clone(),
        fabric: fabric.clone(),
        accelerators: count,
        levels,
        network,
        hierarchy,
        domains: doms,
        topology: topo,
        bom,
        power,
        capex,
        compute,
    })
}

/// A number without a trailing `.0`.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// DCI bandwidth leaving each site as built, Gb/s: the DCI cables with an end in the site
/// times the link rate, the least over the sites (they are built alike). Not the requested
/// `dci.gbps_per_site`: the ports round up to whole links, to one per peer site and to an
/// even total, and are capped at 1:1 with the site's NIC ports.
fn dci_gbps_built(t: &Topology, link_gbps: f64) -> f64 {
    let mut ends = vec![0u64; t.sites as usize];
    let l = &t.links;
    for i in 0..l.len() {
        if l.kind[i] == LinkKind::Dci {
            for v in [l.lower[i], l.upper[i]] {
                ends[t.switches.site[(v - t.endpoints) as usize] as usize] += l.cables[i] as u64;
            }
        }
    }
    ends.iter().copied().min().unwrap_or(0) as f64 * link_gbps
}

/// Vertex id of the NIC port behind NIC port vertex `v`: the `ports_per_nic` vertices of one
/// NIC in one plane are consecutive (`Topology::port_vertex`) and leave it through one
/// physical port, broken out to that many switch ports when the NIC is faster than a port.
fn nic_port_of(t: &Topology, v: u32) -> usize {
    (v / t.ports_per_nic.max(1)) as usize
}

/// Transceivers of the graph's optical cables, one per physical port at each cable end,
/// as `(switch ends and DCI, NIC ends)`. A switch port split `breakout` ways (an 800G port
/// to 2 x 400G NICs, or to two 200G planes) holds one transceiver for its `breakout`
/// cables; a switch's cables are packed into whole physical ports, down and up apart, so
/// `breakout` 1 gives one per cable end. A NIC holds one transceiver per plane: when it is
/// faster than a switch port (an 800G NIC on 400G ports) that one module is broken out to
/// its `ports_per_nic` cables, each into a switch port of its own (one 800G twin-port
/// module at the NIC, two 400G at the switches); when it is slower, one per cable. A DCI
/// cable counts two (long-haul optics are not broken out).
fn transceivers(t: &Topology, breakout: u32) -> (u64, u64) {
    let l = &t.links;
    let b = breakout.max(1) as u64;
    // Per switch: optical cables down, up (fabric).
    let mut ends = vec![[0u64; 2]; t.switches.len()];
    // NIC ports (per NIC and plane) holding an optical cable.
    let mut nic_optical = vec![false; (t.endpoints / t.ports_per_nic.max(1)) as usize + 1];
    let mut dci = 0u64;
    for i in 0..l.len() {
        if !l.optical[i] {
            continue;
        }
        let c = l.cables[i] as u64;
        let up = (l.upper[i] - t.endpoints) as usize;
        match l.kind[i] {
            LinkKind::Nic => {
                ends[up][0] += c;
                nic_optical[nic_port_of(t, l.lower[i])] = true;
            }
            LinkKind::Fabric => {
                ends[up][0] += c;
                ends[(l.lower[i] - t.endpoints) as usize][1] += c;
            }
            LinkKind::Dci => dci += 2 * c,
        }
    }
    let switch_ends: u64 = ends
        .iter()
        .flat_map(|e| e.iter())
        .map(|&n| n.div_ceil(b))
        .sum();
    let nic_ends = nic_optical.iter().filter(|&&x| x).count() as u64;
    (switch_ends + dci, nic_ends)
}

#[allow(clippy::too_many_arguments)]
fn bill_of_materials(
    t: &Topology,
    fabric: &Fabric,
    su: &ScaleUpSystem,
    domains: u64,
    nodes: u64,
    racks_per_site: u64,
    sites: u32,
    breakout: u32,
) -> Bom {
    let nt = t.tiers as usize;
    let mut rows: Vec<TierBom> = (1..=nt as u32)
        .map(|j| TierBom {
            tier: j,
            name: tier_name(j).to_string(),
            switches: 0,
            switch_model: fabric.switch.model.clone(),
            ports_used: 0,
            down_ports: 0,
            up_ports: 0,
            cables: 0,
            optical_cables: 0,
            copper_cables: 0,
            oversubscription: None,
        })
        .collect();
    let sw = &t.switches;
    let mut in_racks = 0u64;
    let mut network_per_site = vec![0u64; sites as usize];
    for i in 0..sw.len() {
        let row = &mut rows[sw.tier[i] as usize - 1];
        row.switches += 1;
        row.down_ports += sw.down_ports[i] as u64;
        row.up_ports += sw.up_ports[i] as u64;
        if sw.rack[i] != NO_RACK {
            in_racks += 1;
        } else {
            network_per_site[sw.site[i] as usize] += 1;
        }
    }
    let mut down_cap = vec![0f64; nt + 1];
    let mut up_cap = vec![0f64; nt + 1];
    let l = &t.links;
    let (mut optical, mut dci) = (0u64, 0u64);
    // Copper NIC links per switch: a broken-out port takes one breakout DAC for its
    // `breakout` NICs, so the DACs are the switch ports they use (a NIC faster than a port
    // takes one breakout DAC to its ports, counted per NIC below).
    let mut copper_at = vec![0u64; sw.len()];
    for i in 0..l.len() {
        let c = l.cables[i] as u64;
        let cap = l.capacity_gbps(i);
        if l.optical[i] {
            optical += c;
        } else {
            copper_at[(l.upper[i] - t.endpoints) as usize] += c;
        }
        let j = l.tier[i] as usize;
        match l.kind[i] {
            LinkKind::Dci => {
                dci += c;
                // Each DCI bundle uses up ports at both ends.
                up_cap[j] += 2.0 * cap;
            }
            _ => {
                let row = &mut rows[j - 1];
                if l.optical[i] {
                    row.cables += c;
                    row.optical_cables += c;
                }
                down_cap[j] += cap;
                if j >= 2 {
                    up_cap[j - 1] += cap;
                }
            }
        }
    }
    let b = breakout.max(1) as u64;
    let mut copper = 0u64;
    if t.ports_per_nic > 1 {
        // A NIC faster than a switch port: one breakout DAC from its port (per plane) to
        // its `ports_per_nic` switch ports, counted at the NIC.
        let mut at_nic = vec![false; (t.endpoints / t.ports_per_nic) as usize + 1];
        for i in 0..l.len() {
            if l.kind[i] == LinkKind::Nic && !l.optical[i] {
                at_nic[nic_port_of(t, l.lower[i])] = true;
            }
        }
        let dacs = at_nic.iter().filter(|&&x| x).count() as u64;
        rows[0].copper_cables += dacs;
        rows[0].cables += dacs;
        copper += dacs;
    } else {
        for (i, &n) in copper_at.iter().enumerate() {
            let dacs = n.div_ceil(b);
            let row = &mut rows[sw.tier[i] as usize - 1];
            row.copper_cables += dacs;
            row.cables += dacs;
            copper += dacs;
        }
    }
    for (j, row) in rows.iter_mut().enumerate() {
        row.ports_used = row.down_ports + row.up_ports;
        let up = up_cap[j + 1];
        if up > 0.0 {
            row.oversubscription = Some(down_cap[j + 1] / up);
        }
    }
    let (switch_ends, nic_ends) = transceivers(t, breakout);
    let network_racks: u64 = network_per_site
        .iter()
        .map(|n| n.div_ceil(SWITCHES_PER_NETWORK_RACK))
        .sum();
    let compute_racks = racks_per_site * sites as u64;
    Bom {
        switches_total: sw.len() as u64,
        switches_in_compute_racks: in_racks,
        nics: nodes * su.nics_per_node as u64,
        nic_ports: t.endpoints as u64,
        cables: optical + copper,
        optical_cables: optical,
        copper_cables: copper,
        dci_cables: dci,
        transceivers: switch_ends + nic_ends,
        nic_transceivers: nic_ends,
        nic_transceiver_gbps: su.nic_gbps / t.planes.max(1) as f64,
        compute_racks,
        network_racks,
        racks: compute_racks + network_racks,
        scale_up_switch_chips: domains * su.switch_chips_per_domain as u64,
        transceiver_model: fabric.transceiver.model.clone(),
        copper_cable_model: fabric.copper_cable.model.clone(),
        nic_model: fabric.nic.model.clone(),
        tiers: rows,
    }
}

/// Level name of the group under one tier-`j` switch block.
fn block_name(j: u32) -> &'static str {
    match j {
        1 => "leaf",
        2 => "pod",
        _ => "superpod",
    }
}

struct LevelInputs<'a> {
    su: &'a ScaleUpSystem,
    fabric: &'a Fabric,
    kind: TopologyKind,
    count: u64,
    acc_per_site: u64,
    apn: u64,
    ep_per_acc: f64,
    gbps_per_acc: f64,
    tiers: u32,
    scope: Scope,
    scope_tiers: u32,
    down: &'a [u32],
    leaf_ratio: bool,
    r: f64,
    island_acc: Option<u64>,
    sites: u32,
    /// (Gb/s per site as built, latency us)
    dci: Option<(f64, f64)>,
    /// Cable propagation of a crossing at tier `j`, up and down, µs, from the built
    /// topology (`Topology::crossing_propagation_us`).
    cross_prop: Vec<f64>,
}

/// Hierarchy levels for the step model (see `Level`): the scale-up domain, then one level
/// per scale-out tier whose group is larger than the one below (sizes rounded down to a
/// multiple of the inner level so that they nest), then the site or cluster, then the
/// multi-site cluster over DCI.
fn levels(x: &LevelInputs) -> Vec<Level> {
    let su = x.su;
    let f = x.fabric;
    let mut out = vec![Level {
        name: "domain".into(),
        size: su.accelerators_per_domain as u64,
        gbps_per_accelerator: su.bandwidth_gbps,
        latency_us: su.latency_us,
        efficiency: su.collective_efficiency,
        in_network_reduction: su.in_network_reduction,
        pxn_us: 0.0,
    }];
    // NCCL's PXN hop to the rail twin, on the fabrics whose NIC i stays on rail i.
    let pxn_us = if matches!(x.kind, TopologyKind::RailOptimized | TopologyKind::RailOnly) {
        su.latency_us
    } else {
        0.0
    };
    if x.tiers == 0 {
        return out;
    }
    let sw = f.switch.latency_ns / 1000.0;
    // One switch and short cables (the catalog's figure, less its own cables), the 2j − 1
    // switches of a tier-`j` crossing, and the cables that crossing runs over, up and down,
    // as the built topology has them (what the flow backend charges per link).
    let base = topology::base_without_cables_us(f.base_latency_us);
    let lat = |j: u32| {
        base + (2 * j - 1) as f64 * sw + x.cross_prop.get(j as usize).copied().unwrap_or(0.0)
    };
    // SHARP exists on InfiniBand switches, but NCCL uses it only with the SHARP plugin
    // (CollNet) configured; the published per-NIC bus bandwidths are ring figures. Off.
    let inr = false;
    let b = x.gbps_per_acc;
    let site_name = if x.sites > 1 { "site" } else { "cluster" };
    // (name, size, GB/s, latency)
    let mut cand: Vec<(&str, u64, f64, f64)> = Vec::new();
    let to_acc = |ports: u64| (ports as f64 / x.ep_per_acc).floor() as u64;
    let d = x.down;
    let cap =
        |from: u32, to: u32| (from..=to).fold(1u64, |a, j| a.saturating_mul(d[j as usize] as u64));
    // Bandwidth and latency of a crossing at the site top: what the DCI level starts from,
    // when the site level itself is priced at a lower block that holds the whole site.
    let mut site_top: Option<(f64, f64)> = None;
    match x.scope {
        Scope::Rails => {
            cand.push(("rail", x.acc_per_site, b, lat(x.tiers) + su.latency_us));
        }
        Scope::Site => {
            let mut under_one: Option<(f64, f64)> = None;
            for j in 1..x.tiers {
                let size = if j == 1 && x.kind == TopologyKind::RailOptimized {
                    d[1] as u64 * x.apn
                } else {
                    to_acc(cap(1, j))
                };
                let bw = if x.leaf_ratio && j >= 2 { b / x.r } else { b };
                if size >= x.acc_per_site && under_one.is_none() {
                    under_one = Some((bw, lat(j)));
                }
                cand.push((block_name(j), size, bw, lat(j)));
            }
            let bw = if x.leaf_ratio && x.tiers >= 2 {
                b / x.r
            } else {
                b
            };
            // A site that one tier-`j` block holds whole (a rail-optimized site of at most
            // one rail group: 16 DGX under leaves of 32 ports) is crossed at that block:
            // the ranks of a collective's channel share a rail, hence a leaf, and the flow
            // backend routes them through it. Priced at the site top it paid a spine
            // crossing no flow takes (256 H100 on RoCE over two sites, a ring over 4 DGX
            // under one leaf: 6.07 µs a hop against the leaf's 3.87 µs).
            match under_one {
                Some((bw_j, lat_j)) => {
                    site_top = Some((bw, lat(x.tiers)));
                    cand.push((site_name, x.acc_per_site, bw_j, lat_j));
                }
                None => cand.push((site_name, x.acc_per_site, bw, lat(x.tiers))),
            }
        }
        Scope::Islands { .. } => {
            let isl = x.island_acc.unwrap_or(x.acc_per_site);
            for j in 1..x.scope_tiers {
                let size = if j == 1 && x.kind == TopologyKind::RailOptimized {
                    d[1] as u64 * x.apn
                } else {
                    to_acc(cap(1, j))
                };
                cand.push((block_name(j), size.min(isl), b, lat(j)));
            }
            cand.push(("island", isl, b, lat(x.scope_tiers)));
            for j in x.scope_tiers + 1..x.tiers {
                cand.push((
                    "superpod",
                    isl.saturating_mul(cap(x.scope_tiers + 1, j)),
                    b / x.r,
                    lat(j),
                ));
            }
            cand.push((site_name, x.acc_per_site, b / x.r, lat(x.tiers)));
        }
    }
    let last = cand.len() - 1;
    // Scale-out bandwidth per accelerator across a whole site: what the DCI level can reach
    // at most (the level before it may be the scale-up domain when a site is one domain).
    let site_bw = site_top.map_or(cand[last].2, |(bw, _)| bw);
    for (i, (name, size, bw, l)) in cand.into_iter().enumerate() {
        let prev = out.last().map(|l| l.size).unwrap_or(1);
        let size = if i == last {
            size
        } else {
            if size >= x.acc_per_site {
                continue;
            }
            size / prev * prev
        };
        if size <= prev {
            continue;
        }
        out.push(Level {
            name: name.to_string(),
            size,
            gbps_per_accelerator: bw,
            latency_us: l,
            efficiency: f.link_efficiency,
            in_network_reduction: inr,
            pxn_us,
        });
    }
    if let Some((gbps_site, dci_lat)) = x.dci {
        let mut prev = out.last().cloned().expect("domain level");
        // DCI traffic leaves through the site top whatever block the site level was priced
        // at (its links hang off the site-top switches).
        if let (Some((bw, l)), true) = (site_top, prev.name == site_name) {
            prev.gbps_per_accelerator = bw;
            prev.latency_us = l;
        }
        let bw = (gbps_site / 8.0 / x.acc_per_site as f64)
            .min(site_bw)
            .min(prev.gbps_per_accelerator);
        if x.count > prev.size {
            out.push(Level {
                name: "cluster".into(),
                size: x.count,
                gbps_per_accelerator: bw,
                latency_us: prev.latency_us + dci_lat,
                efficiency: f.link_efficiency,
                in_network_reduction: false,
                pxn_us,
            });
        }
    }
    out
}
