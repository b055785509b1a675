//! `ClusterReport`: the serializable summary that `myriad cluster` prints (tables or JSON).

use serde::Serialize;

use crate::{BuiltCluster, Capex, Compute, Hierarchy, Level, Network, Ordered, Power, TierBom};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdName {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleUpReport {
    pub id: String,
    pub name: String,
    pub domains: u64,
    pub accelerators_per_domain: u32,
    pub nodes_per_domain: u32,
    pub accelerators_per_node: u32,
    pub bandwidth_gbps: f64,
    /// Scale-up switch chips over all domains.
    pub switch_chips: u64,
}

/// What `myriad cluster --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    pub name: String,
    pub accelerator: IdName,
    pub accelerators: u64,
    pub scale_up: ScaleUpReport,
    pub scale_up_domains: u64,
    pub nodes: u64,
    pub hierarchy: Hierarchy,
    pub network: Network,
    /// Switches per tier name (leaf, spine, core, super-spine).
    pub switches: Ordered<u64>,
    pub switches_total: u64,
    pub tiers: Vec<TierBom>,
    pub nics: u64,
    pub nic_ports: u64,
    pub transceivers: u64,
    /// Of `transceivers`, those at the NICs (one per NIC and plane).
    pub nic_transceivers: u64,
    /// All cables: optical plus copper.
    pub cables: u64,
    pub optical_cables: u64,
    pub copper_cables: u64,
    pub dci_cables: u64,
    pub racks: u64,
    pub compute_racks: u64,
    pub network_racks: u64,
    pub peak_pflops: Ordered<f64>,
    pub hbm_tib: f64,
    pub hbm_tbps: f64,
    pub it_power_mw: f64,
    pub facility_power_mw: f64,
    pub pue: f64,
    pub power: Power,
    pub capex_usd: f64,
    pub capex_breakdown: Capex,
    pub energy_cost_usd_per_year: f64,
    pub levels: Vec<Level>,
    pub graph: GraphSize,
}

/// Size of the topology graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphSize {
    pub vertices: u64,
    pub switches: u64,
    pub link_bundles: u64,
}

impl ClusterReport {
    pub fn new(b: &BuiltCluster) -> Self {
        let bom = &b.bom;
        let Compute {
            peak_pflops,
            hbm_tib,
            hbm_tbps,
        } = b.compute.clone();
        ClusterReport {
            name: b.name.clone(),
            accelerator: IdName {
                id: b.accelerator.id.clone(),
                name: b.accelerator.name.clone(),
            },
            accelerators: b.accelerators,
            scale_up: ScaleUpReport {
                id: b.scale_up.id.clone(),
                name: b.scale_up.name.clone(),
                domains: b.hierarchy.domains,
                accelerators_per_domain: b.scale_up.accelerators_per_domain,
                nodes_per_domain: b.hierarchy.nodes_per_domain,
                accelerators_per_node: b.scale_up.accelerators_per_node,
                bandwidth_gbps: b.scale_up.bandwidth_gbps,
                switch_chips: bom.scale_up_switch_chips,
            },
            scale_up_domains: b.hierarchy.domains,
            nodes: b.hierarchy.nodes,
            hierarchy: b.hierarchy.clone(),
            network: b.network.clone(),
            switches: Ordered(
                bom.tiers
                    .iter()
                    .map(|t| (t.name.clone(), t.switches))
                    .collect(),
            ),
            switches_total: bom.switches_total,
            tiers: bom.tiers.clone(),
            nics: bom.nics,
            nic_ports: bom.nic_ports,
            transceivers: bom.transceivers,
            nic_transceivers: bom.nic_transceivers,
            cables: bom.cables,
            optical_cables: bom.optical_cables,
            copper_cables: bom.copper_cables,
            dci_cables: bom.dci_cables,
            racks: bom.racks,
            compute_racks: bom.compute_racks,
            network_racks: bom.network_racks,
            peak_pflops,
            hbm_tib,
            hbm_tbps,
            it_power_mw: b.power.it_mw,
            facility_power_mw: b.power.facility_mw,
            pue: b.power.pue,
            power: b.power.clone(),
            capex_usd: b.capex.total_usd,
            capex_breakdown: b.capex.clone(),
            energy_cost_usd_per_year: b.power.energy_cost_usd_per_year,
            levels: b.levels.clone(),
            graph: GraphSize {
                vertices: b.topology.vertices() as u64,
                switches: b.topology.switches.len() as u64,
                link_bundles: b.topology.links.len() as u64,
            },
        }
    }
}
