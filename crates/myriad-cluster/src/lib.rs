//! Scenario -> built cluster.
//!
//! `build(&Scenario, &Catalog)` is a pure function returning a `BuiltCluster`: the
//! hierarchy (site, pod/island, rack, scale-up domain, accelerator), the scale-out topology
//! as data (switches, links, capacities, latencies) that the network simulation can route
//! over, and the bill of materials, power and cost derived from that same data.
//!
//! Invariants:
//! - Every accelerator belongs to exactly one scale-up domain.
//! - BOM counts follow from the built structure (switches and links of the graph), not from
//!   a separate formula table.
//! - More accelerators never means fewer switches.
//! - `levels` is ordered innermost first and sizes divide each other.

use myriad_catalog::{Accelerator, Fabric, ScaleUpSystem};
use serde::Serialize;

/// One level of the hierarchy, as the step-time model sees it: a group of `size`
/// accelerators, and the bandwidth each accelerator has to peers inside the group but
/// outside its child group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// `domain`, `leaf`, `island`, `site`, `cluster`.
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
}
