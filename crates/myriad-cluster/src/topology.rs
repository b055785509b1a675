//! The scale-out network as data: switches and link bundles in struct-of-arrays form,
//! built tier by tier as folded Clos "stripes".
//!
//! Vertices: NIC ports are vertices `0..endpoints` (node-major:
//! `node * endpoints_per_node + plane * endpoints_per_node_per_plane + nic * ports_per_nic + port`),
//! switches follow
//! (`endpoints + switch index`). A link is a bundle of `cables` parallel cables of `gbps`
//! each between a lower vertex and an upper switch (for DCI: two site-top switches).
//!
//! Construction (per site, per plane; every plane and site is its own tree):
//! - Leaves (tier 1) take NIC ports: consecutive ports (fat-tree, spine-leaf), or port `i`
//!   of each node of a rail group (rail-optimized, rail-only).
//! - A tier-`j` switch group ("block") gathers up to `fan-in` lower blocks. For each switch
//!   position `p` of the lower blocks, a stripe of `ceil(L_p / d_j)` switches takes the
//!   `L_p` uplinks of the position-`p` switches, spread round-robin so that loads differ by
//!   at most one port: this is the folded Clos (k-ary fat-tree when full), with parallel
//!   cables where a block is small (the DGX SuperPOD 2-tier: 32 leaves x 32 uplinks over
//!   16 spines = 2 cables per leaf-spine pair).
//! - A partly filled block (the last pod of a site, the last island) is cabled as a full
//!   one: its lower switches spread their uplinks over the switches of a full block's
//!   stripe (`Plan::targets`) as they do in a full block, so each reaches as many planes
//!   of the tier above, the stripe's switches added as the block grows, never past the
//!   load they carry in a full block. So a switch's load, and the uplinks it passes to the
//!   tier above, only grow with the cluster: more accelerators never mean fewer switches,
//!   cables or transceivers (an island of 248 NIC ports spreading them evenly over 3
//!   spines, where a full one of 256 takes 4 of 64, passed 83 uplinks per spine up: 1,016
//!   H100 in islands of 256 took 7 core switches, 1,024 took 4). Filling the stripe's
//!   switches front-first instead cabled a pod of 2 leaves (of 32 uplinks) to 2 spines of
//!   32, 16 cables each: its traffic reached 2 of the 32 core planes, and so only 2 of the
//!   32 uplinks of any leaf in another pod (a ring over 4,160 H100 on NDR ran 3.2x slower
//!   than over 4,096). A site or rail top has no full size: its
//!   stripes stay even, and with DCI (and broken-out ports) take whole physical ports, so
//!   the ports used, and their transceivers, are `ceil(L_p / breakout)`.
//! - Uplinks of a new switch: equal to its used down ports (non-blocking), `ceil(down / r)`
//!   at an oversubscribed boundary (island top, oversubscribed leaf, site top with DCI), or
//!   none at the top.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::Serialize;

/// `rack` value of a switch that sits in a network rack, not in a compute rack.
pub const NO_RACK: u32 = u32::MAX;

/// Switches, one entry per switch in each column.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Switches {
    /// 1 = leaf, 2 = spine, 3 = core, 4 = super-spine.
    pub tier: Vec<u8>,
    pub plane: Vec<u8>,
    pub site: Vec<u16>,
    /// Ports used toward NICs or lower tiers.
    pub down_ports: Vec<u32>,
    /// Ports used toward the tier above (or DCI links at the site top).
    pub up_ports: Vec<u32>,
    /// Global compute rack index when the switch is a top-of-rack switch inside a compute
    /// rack; `NO_RACK` when it sits in a network rack.
    pub rack: Vec<u32>,
}

impl Switches {
    pub fn len(&self) -> usize {
        self.tier.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tier.is_empty()
    }
}

/// What a link connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKind {
    /// NIC port to leaf.
    Nic,
    /// Switch to switch inside a site.
    Fabric,
    /// Between site-top switches of two sites.
    Dci,
}

/// Link bundles, one entry per bundle in each column.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Links {
    /// Lower end: a NIC port or a switch vertex.
    pub lower: Vec<u32>,
    /// Upper end: a switch vertex.
    pub upper: Vec<u32>,
    /// Parallel cables in the bundle.
    pub cables: Vec<u32>,
    /// Rate of one cable, Gb/s, per direction.
    pub gbps: Vec<f32>,
    /// One-way propagation latency, microseconds (switch latency is per switch hop,
    /// `Topology::switch_latency_us`).
    pub latency_us: Vec<f32>,
    /// Optical (two transceivers per cable) or copper DAC.
    pub optical: Vec<bool>,
    /// Tier of the upper switch (1 for NIC-to-leaf); DCI links carry the site-top tier.
    pub tier: Vec<u8>,
    pub kind: Vec<LinkKind>,
}

impl Links {
    pub fn len(&self) -> usize {
        self.lower.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }
    /// Capacity of bundle `i`, Gb/s per direction.
    pub fn capacity_gbps(&self, i: usize) -> f64 {
        self.cables[i] as f64 * self.gbps[i] as f64
    }
}

/// One vertex of the graph, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vertex {
    /// A NIC port: node (global), plane, NIC index within the node, port within the NIC's
    /// share of that plane.
    Port {
        node: u64,
        plane: u32,
        nic: u32,
        port: u32,
    },
    Switch(u32),
}

/// The scale-out graph of the whole cluster (all sites and planes).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Topology {
    /// NIC port vertices (`0..endpoints`).
    pub endpoints: u32,
    /// NIC port vertices per node over all planes.
    pub endpoints_per_node: u32,
    /// NIC port vertices per node in one plane (`nics_per_node * ports_per_nic`).
    pub endpoints_per_node_per_plane: u32,
    /// Switch ports each NIC has in each plane (more than 1 when the NIC is faster than a
    /// switch port).
    pub ports_per_nic: u32,
    pub planes: u32,
    pub sites: u32,
    pub tiers: u32,
    /// Port-to-port latency of one switch hop, microseconds.
    pub switch_latency_us: f64,
    pub switches: Switches,
    pub links: Links,
}

impl Topology {
    /// Vertex id of switch `i`.
    pub fn switch_vertex(&self, i: u32) -> u32 {
        self.endpoints + i
    }

    /// Vertex id of a NIC port.
    pub fn port_vertex(&self, node: u64, plane: u32, nic: u32, port: u32) -> u32 {
        (node * self.endpoints_per_node as u64
            + (plane * self.endpoints_per_node_per_plane + nic * self.ports_per_nic + port) as u64)
            as u32
    }

    pub fn vertex(&self, v: u32) -> Vertex {
        if v >= self.endpoints {
            return Vertex::Switch(v - self.endpoints);
        }
        let node = (v / self.endpoints_per_node) as u64;
        let r = v % self.endpoints_per_node;
        let plane = r / self.endpoints_per_node_per_plane;
        let s = r % self.endpoints_per_node_per_plane;
        Vertex::Port {
            node,
            plane,
            nic: s / self.ports_per_nic,
            port: s % self.ports_per_nic,
        }
    }

    /// Mean one-way cable propagation, µs, of the bundles into each tier: index `j` for
    /// tier `j` (1: NIC to leaf, 2: leaf to spine, 3 and 4: above; index 0 unused), DCI
    /// links left out; 0 for a tier without bundles. A tier mixing cable kinds (top-of-rack
    /// leaves on in-rack copper beside out-of-rack ones) gives the mean over its bundles.
    /// The per-link figures are the ones the flow backend charges (`Links::latency_us`).
    pub fn tier_propagation_us(&self) -> Vec<f64> {
        let l = &self.links;
        let mut sum = vec![0.0f64; self.tiers as usize + 1];
        let mut n = vec![0u64; self.tiers as usize + 1];
        for i in 0..l.len() {
            let t = l.tier[i] as usize;
            if l.kind[i] == LinkKind::Dci || t >= sum.len() {
                continue;
            }
            sum[t] += l.latency_us[i] as f64;
            n[t] += 1;
        }
        sum.iter()
            .zip(&n)
            .map(|(&s, &c)| if c == 0 { 0.0 } else { s / c as f64 })
            .collect()
    }

    /// One-way cable propagation, µs, of a crossing at tier `j`, by tier (index `j`, 0 for
    /// none): up from a NIC port to a tier-`j` switch and down again, each tier's cables at
    /// their mean (`tier_propagation_us`), `2 · Σ_{i ≤ j} prop(i)`.
    pub fn crossing_propagation_us(&self) -> Vec<f64> {
        let mut acc = 0.0;
        self.tier_propagation_us()
            .iter()
            .enumerate()
            .map(|(j, &p)| {
                if j > 0 {
                    acc += 2.0 * p;
                }
                acc
            })
            .collect()
    }

    /// Vertices in all: NIC ports then switches.
    pub fn vertices(&self) -> u32 {
        self.endpoints + self.switches.len() as u32
    }

    /// Compressed adjacency: for vertex `v`, `ids[offsets[v]..offsets[v+1]]` are the link
    /// bundles touching it. For routing.
    pub fn adjacency(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.vertices() as usize;
        let mut deg = vec![0u32; n + 1];
        for i in 0..self.links.len() {
            deg[self.links.lower[i] as usize + 1] += 1;
            deg[self.links.upper[i] as usize + 1] += 1;
        }
        for v in 0..n {
            deg[v + 1] += deg[v];
        }
        let offsets = deg;
        let mut fill = offsets.clone();
        let mut ids = vec![0u32; offsets[n] as usize];
        for i in 0..self.links.len() {
            for v in [self.links.lower[i], self.links.upper[i]] {
                ids[fill[v as usize] as usize] = i as u32;
                fill[v as usize] += 1;
            }
        }
        (offsets, ids)
    }

    fn add_switch(&mut self, tier: u32, plane: u32, site: u32, rack: u32) -> u32 {
        let s = &mut self.switches;
        s.tier.push(tier as u8);
        s.plane.push(plane as u8);
        s.site.push(site as u16);
        s.down_ports.push(0);
        s.up_ports.push(0);
        s.rack.push(rack);
        (s.tier.len() - 1) as u32
    }

    #[allow(clippy::too_many_arguments)]
    fn add_link(
        &mut self,
        lower: u32,
        upper: u32,
        cables: u32,
        gbps: f64,
        latency_us: f64,
        optical: bool,
        tier: u32,
        kind: LinkKind,
    ) {
        let l = &mut self.links;
        l.lower.push(lower);
        l.upper.push(upper);
        l.cables.push(cables);
        l.gbps.push(gbps as f32);
        l.latency_us.push(latency_us as f32);
        l.optical.push(optical);
        l.tier.push(tier as u8);
        l.kind.push(kind);
    }
}

/// Light in fibre: 5 ns per metre (also used for copper).
pub const NS_PER_M: f64 = 5.0;
/// Cable lengths assumed for propagation latency: in-rack copper, NIC to an out-of-rack
/// leaf, leaf to spine, and above.
pub const IN_RACK_M: f64 = 3.0;
pub const NIC_TO_LEAF_M: f64 = 30.0;
pub const LEAF_TO_SPINE_M: f64 = 100.0;
pub const UPPER_TIER_M: f64 = 300.0;

/// One-way propagation, µs, that a fabric's `base_latency_us` already holds: the catalog's
/// figure is a small-message latency measured across one switch, both NICs on short
/// cables, taken as in-rack ones (`IN_RACK_M` each). Both backends charge
/// `base_latency_us` less this (`base_without_cables_us`) plus every cable of the built
/// path, so a path of two in-rack cables through one switch costs exactly the catalog's
/// figure and no cable is counted twice.
pub const BASE_CABLES_US: f64 = 2.0 * IN_RACK_M * NS_PER_M / 1000.0;

/// A fabric's `base_latency_us` without the propagation of its own two short cables
/// (`BASE_CABLES_US`), µs; never below 0.
pub fn base_without_cables_us(base_latency_us: f64) -> f64 {
    (base_latency_us - BASE_CABLES_US).max(0.0)
}

/// How a tier's switches size their uplinks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    /// Non-blocking: as many up ports as used down ports.
    Equal,
    /// Oversubscribed boundary: `ceil(down / r)` up ports.
    Ratio(f64),
    /// Top of the tree: no uplinks.
    Top,
    /// Site top with DCI: `ceil(gbps / link rate)` up ports for the DCI of this block
    /// (Gb/s), spread over the block's switches.
    Dci(f64),
}

/// How the NIC ports of one site and plane are grouped under tiers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scope {
    /// One tree over the whole site.
    Site,
    /// Full-bisection islands of `nodes` nodes, joined by oversubscribed tiers above.
    Islands { nodes: u64 },
    /// One tree per rail (rail-only): rail `i` holds port slot `i` of every domain.
    Rails,
}

/// How leaves take NIC ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeafKind {
    /// Consecutive ports (node-major).
    Consecutive,
    /// Rail groups of `d1` nodes: leaf `(group, slot)` takes port slot `slot` of each node.
    Rails,
}

/// Everything the graph construction needs, resolved by the builder.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Ports per switch in one plane (after breakout).
    pub k: u32,
    /// Cables one physical switch port is split into (`k / switch_radix`).
    pub breakout: u32,
    pub link_gbps: f64,
    pub nic_link_gbps: f64,
    pub ports_per_nic: u32,
    pub nics_per_node: u32,
    pub planes: u32,
    pub sites: u32,
    pub nodes_per_site: u64,
    pub nodes_per_domain: u64,
    /// Nodes in one compute rack when top-of-rack leaves are allowed (copper NIC links);
    /// 0 when leaves sit in network racks.
    pub nodes_per_rack: u64,
    pub racks_per_site: u64,
    pub tiers: u32,
    /// Tiers built inside one scope (island or rail); `tiers` for `Scope::Site`.
    pub scope_tiers: u32,
    pub scope: Scope,
    pub leaf_kind: LeafKind,
    /// `down[j]`, `rule[j]` for tier `j` in `1..=tiers` (index 0 unused). For tiers below a
    /// scope top `down` is also the fan-in (lower blocks per block).
    pub down: Vec<u32>,
    pub rule: Vec<Rule>,
    pub switch_latency_us: f64,
    pub dci_latency_us: f64,
}

impl Plan {
    pub fn endpoints_per_node_per_plane(&self) -> u32 {
        self.nics_per_node * self.ports_per_nic
    }
}

/// A group of switches of one tier, in position order.
struct Block {
    switches: Vec<u32>,
}

/// The largest `d` with `d + ceil(d / r) <= k`: down ports of a switch at an `r`:1
/// oversubscribed boundary.
pub(crate) fn ratio_down(k: u32, r: f64) -> u32 {
    let r = r.max(1.0);
    let mut d = k.saturating_sub(1).max(1);
    while d > 1 && d as u64 + up_ports(d, r) as u64 > k as u64 {
        d -= 1;
    }
    d
}

/// DCI ports a site-top block keeps for `gbps` of DCI on links of `link_gbps`, with
/// `sites` sites: at least `ceil(gbps / link)`, at least one per peer site (a site with
/// fewer ports than peers leaves pairs of sites unjoined: 4 sites of one port each are two
/// islands of two), and rounded to an even total over the sites (every cable takes a port
/// at each end: 3 sites of one port each left one site out).
pub(crate) fn dci_ports_wanted(gbps: f64, link_gbps: f64, sites: u32) -> u64 {
    let want = ((gbps / link_gbps - 1e-9).ceil().max(1.0) as u64).max(sites as u64 - 1);
    pair_up(want, sites)
}

/// `ports` per site, plus one where an odd number of sites would leave a port unpaired.
pub(crate) fn pair_up(ports: u64, sites: u32) -> u64 {
    if !sites.is_multiple_of(2) && !ports.is_multiple_of(2) {
        // A DCI far beyond the ports (1e30 Gb/s) asks u64::MAX, odd: one fewer, not a wrap.
        ports.checked_add(1).unwrap_or(ports - 1)
    } else {
        ports
    }
}

pub(crate) fn up_ports(down: u32, r: f64) -> u32 {
    if down == 0 {
        return 0;
    }
    ((down as f64 / r) - 1e-9).ceil().max(1.0) as u32
}

/// Up ports of a switch with `down` used down ports under `rule` (the DCI's are allotted
/// after the site top is built, `Ctx::dci_ports`).
pub(crate) fn uplinks(rule: Rule, down: u32) -> u32 {
    match rule {
        Rule::Equal => down,
        Rule::Ratio(r) => up_ports(down, r),
        Rule::Top | Rule::Dci(_) => 0,
    }
}

/// `l` cables over `s` switches, loads differing by at most one, the larger first: what
/// laying them round-robin from switch 0 gives.
fn even_loads(l: u64, s: u64) -> Vec<u32> {
    let s = s.max(1);
    (0..s)
        .map(|t| (l / s + (t < l % s) as u64) as u32)
        .collect()
}

/// `l` cables of a partly filled block over the `full.len()` switches of a full block's
/// stripe, spread as a full block spreads them (round-robin from switch 0, the larger
/// first: each lower switch reaches as many switches, and so as many planes of the tier
/// above, with the same cables to each, as it does in a full block), the switches left
/// without cables not built. Every switch's load grows with `l` and stays within a full
/// block's (`full` is itself even), so the tiers above never lose ports when a block fills.
fn partial_loads(l: u64, full: &[u32]) -> Vec<u32> {
    let mut out = even_loads(l, full.len() as u64);
    out.retain(|&x| x > 0);
    out
}

/// `l` cables over `s` switches in whole physical ports of `b` cables: whole ports spread
/// evenly (the larger first), the part port after them. Every switch's ports stay full but
/// one, so the ports used (and the transceivers in them) are `ceil(l / b)`, and each
/// switch's load grows with `l`.
fn grouped_loads(l: u64, s: u64, b: u32) -> Vec<u32> {
    let b = b.max(1) as u64;
    let s = s.max(1);
    let (g, r) = (l / b, l % b);
    (0..s)
        .map(|t| {
            let whole = g / s + (t < g % s) as u64;
            (whole * b + if t == g % s { r } else { 0 }) as u32
        })
        .collect()
}

/// Target loads of the stripes of a full block of one tier, `[position][switch]`.
type Targets = Vec<Vec<u32>>;

impl Plan {
    /// Loads of the switches of one stripe taking `l` uplinks: spread over a full block's
    /// switches as a full block spreads them where the tier's blocks have a full size
    /// (`full`, `partial_loads`), else `ceil(l / d)` switches evenly.
    fn stripe_loads(&self, tier: u32, l: u64, full: Option<&[u32]>) -> Vec<u32> {
        if let Some(f) = full {
            if l <= f.iter().map(|&x| x as u64).sum::<u64>() {
                return partial_loads(l, f);
            }
        }
        let d = self.down[tier as usize].max(1) as u64;
        even_loads(l, l.div_ceil(d))
    }

    /// Stripe loads of one block over `chunk` (the up ports of each lower block's
    /// switches, in position order), `[position][switch]`.
    fn block_loads(&self, tier: u32, chunk: &[Vec<u32>], full: Option<&Targets>) -> Targets {
        let positions = chunk.iter().map(|b| b.len()).max().unwrap_or(0);
        let ls: Vec<u64> = (0..positions)
            .map(|p| {
                chunk
                    .iter()
                    .filter_map(|b| b.get(p))
                    .map(|&u| u as u64)
                    .sum()
            })
            .collect();
        if let Rule::Dci(g) = self.rule[tier as usize] {
            return self.dci_top_loads(g, &ls);
        }
        ls.iter()
            .enumerate()
            .map(|(p, &l)| {
                if l == 0 {
                    return Vec::new();
                }
                let f = full.and_then(|f| f.get(p)).map(|v| v.as_slice());
                self.stripe_loads(tier, l, f)
            })
            .collect()
    }

    /// Stripe loads of a site-top block with `gbps` of DCI, over its positions' uplinks
    /// `ls`. Each stripe takes at least `ceil(l / d)` switches, `d` the top's down ports
    /// (`dci_top_down`); the block as a whole takes enough for its uplinks and the DCI ports
    /// it keeps (`dci_ports_kept`: at most 1:1 with the NIC ports under it),
    /// `ceil((L + W) / k)` for `L` uplinks and `W` DCI ports, but never so many that a
    /// switch has fewer than half its ports down (unless `W` is more than `L`, a site
    /// oversubscribed below its top: then at least one down). The switches beyond `ceil(l / d)` go one at a time to the stripe
    /// whose switches carry the most. Every term grows with the uplinks, so a larger site
    /// never has fewer top switches (per stripe, the share of the DCI a stripe's uplinks
    /// asked for shrank when another stripe grew: 2 sites of 184 H100 on 16-port switches
    /// with 25.6 Tb/s of DCI took 46 top switches, of 192, 32). Loads are spread in whole
    /// physical ports (`grouped_loads`).
    fn dci_top_loads(&self, gbps: f64, ls: &[u64]) -> Targets {
        let k = self.k.max(2) as u64;
        let d = self.down[self.tiers as usize].max(1) as u64;
        let total: u64 = ls.iter().sum();
        let w = self.dci_ports_kept(gbps);
        let mut s: Vec<u64> = ls.iter().map(|&l| l.div_ceil(d)).collect();
        // At least half of a top switch's ports down, unless the DCI kept is more than the
        // uplinks into the top (an oversubscribed site: islands, or leaves at `r`:1), where
        // a top switch may hold more DCI ports than down ports (at least one down).
        let most: Vec<u64> = ls
            .iter()
            .map(|&l| {
                if w > total {
                    l
                } else {
                    l.div_ceil(k / 2).max(l.div_ceil(d))
                }
            })
            .collect();
        let need = (total.saturating_add(w)).div_ceil(k).min(most.iter().sum());
        let mut extra = need.saturating_sub(s.iter().sum());
        while extra > 0 {
            // The stripe whose switches carry the most, that may still take one more.
            let Some(p) = (0..ls.len()).filter(|&p| s[p] < most[p]).max_by(|&a, &b| {
                // ls[a] / s[a] against ls[b] / s[b], the first on ties.
                (ls[a] as u128 * s[b] as u128)
                    .cmp(&(ls[b] as u128 * s[a] as u128))
                    .then(b.cmp(&a))
            }) else {
                break;
            };
            s[p] += 1;
            extra -= 1;
        }
        ls.iter()
            .zip(&s)
            .map(|(&l, &n)| {
                if l == 0 {
                    Vec::new()
                } else {
                    grouped_loads(l, n, self.breakout)
                }
            })
            .collect()
    }

    /// NIC ports under one site-top block in one plane: a site's, or a rail's (one per
    /// scale-up domain) under rail-only.
    fn block_nic_ports(&self) -> u64 {
        match self.scope {
            Scope::Rails => self.nodes_per_site / self.nodes_per_domain.max(1),
            _ => self.nodes_per_site * self.endpoints_per_node_per_plane() as u64,
        }
    }

    /// DCI ports a site-top block keeps for `gbps` of DCI: `dci_ports_wanted`, at most 1:1
    /// with the NIC ports under the block (a DCI beyond what the site's NICs send adds
    /// nothing, and a small site's free top ports would give it more DCI than a larger
    /// one's), still one per peer and an even total over the sites. The cap is the NICs',
    /// not the top's down ports: those fall by `r` when a site outgrows its island (or
    /// its one leaf) and the tiers above it are oversubscribed, which dropped the DCI (2 x
    /// 584 GB200 in islands of 576 at 3:1 on NDR, asking 102.4 Tb/s: 256 DCI cables at 2 x
    /// 576, 195 at 2 x 584).
    pub(crate) fn dci_ports_kept(&self, gbps: f64) -> u64 {
        let want = dci_ports_wanted(gbps, self.link_gbps, self.sites);
        pair_up(
            want.min(self.block_nic_ports()).max(self.sites as u64 - 1),
            self.sites,
        )
    }

    /// Up ports of the switches a block's stripe loads give, in position order.
    fn block_ups(&self, tier: u32, loads: &Targets) -> Vec<u32> {
        let rule = self.rule[tier as usize];
        loads.iter().flatten().map(|&x| uplinks(rule, x)).collect()
    }

    /// Leaf sizes (NIC ports) for nodes `0..nodes` of a scope, in leaf order.
    fn leaf_sizes(&self, nodes: u64) -> Vec<u32> {
        let eps = self.endpoints_per_node_per_plane() as u64;
        let d1 = self.down[1].max(1) as u64;
        let mut out = Vec::new();
        match self.leaf_kind {
            LeafKind::Consecutive => {
                let mut left = nodes * eps;
                while left > 0 {
                    let c = left.min(d1);
                    out.push(c as u32);
                    left -= c;
                }
            }
            LeafKind::Rails => {
                let mut g0 = 0;
                while g0 < nodes {
                    let g1 = (g0 + d1).min(nodes);
                    out.extend((0..eps).map(|_| (g1 - g0) as u32));
                    g0 = g1;
                }
            }
        }
        out
    }

    /// The stripe loads of a full block at each tier whose blocks have a full size: below
    /// a scope's top, `down[j]` full blocks of the tier below; an island's top, a full
    /// island; between the islands and the site top, `down[j]` full islands' tops. `None`
    /// at the top of a site or rail, which has no full size. A partly filled block spreads
    /// its uplinks over these switches as a full block does (`partial_loads`), so the
    /// loads a block's switches pass up only grow as it fills, and a full block is built as
    /// before.
    fn targets(&self) -> Vec<Option<Targets>> {
        let mut out: Vec<Option<Targets>> = vec![None; self.tiers as usize + 1];
        if self.tiers == 0 {
            return out;
        }
        // Up ports of the switches of a full block of the tier below, in position order.
        let mut lower = vec![uplinks(self.rule[1], self.down[1])];
        if let (Scope::Islands { nodes }, 1) = (self.scope, self.scope_tiers) {
            // One leaf per island.
            let ports = nodes * self.endpoints_per_node_per_plane() as u64;
            lower = vec![uplinks(self.rule[1], ports as u32)];
        }
        for j in 2..self.tiers {
            let loads =
                if let (Scope::Islands { nodes }, true) = (self.scope, j == self.scope_tiers) {
                    // A full island, built as the tree builds it: leaves, then blocks of
                    // `down[i]` (the last one partly filled), then its top over all of them.
                    let mut blocks: Vec<Vec<u32>> = self
                        .leaf_sizes(nodes)
                        .into_iter()
                        .map(|n| vec![uplinks(self.rule[1], n)])
                        .collect();
                    for i in 2..j {
                        let n = self.down[i as usize].max(1) as usize;
                        blocks = blocks
                            .chunks(n)
                            .map(|c| {
                                let l = self.block_loads(i, c, out[i as usize].as_ref());
                                self.block_ups(i, &l)
                            })
                            .collect();
                    }
                    self.block_loads(j, &blocks, None)
                } else {
                    let n = self.down[j as usize].max(1) as u64;
                    let d = self.down[j as usize].max(1) as u64;
                    lower
                        .iter()
                        .map(|&u| {
                            let l = n * u as u64;
                            if l == 0 {
                                Vec::new()
                            } else {
                                even_loads(l, l.div_ceil(d))
                            }
                        })
                        .collect()
                };
            lower = self.block_ups(j, &loads);
            out[j as usize] = Some(loads);
        }
        out
    }
}

struct Ctx<'a> {
    plan: &'a Plan,
    /// `Plan::targets`, per tier.
    targets: Vec<Option<Targets>>,
    topo: Topology,
    site: u32,
    plane: u32,
}

impl Ctx<'_> {
    fn uplinks(&self, tier: u32, down: u32) -> u32 {
        uplinks(self.plan.rule[tier as usize], down)
    }

    /// Up ports for the DCI on a site-top block: `ceil(gbps / link_gbps)` ports, spread over
    /// the block's switches in proportion to their used down ports (at most the free ports).
    fn dci_ports(&mut self, block: &Block, gbps: f64) {
        let sw = &mut self.topo.switches;
        let k = self.plan.k;
        let want = self.plan.dci_ports_kept(gbps);
        let total: u64 = block
            .switches
            .iter()
            .map(|&x| sw.down_ports[x as usize] as u64)
            .sum();
        if total == 0 {
            return;
        }
        let mut given = 0u64;
        for &x in &block.switches {
            let d = sw.down_ports[x as usize];
            // In u128: `want` reaches u64::MAX for a DCI far beyond the ports (1e30 Gb/s).
            let share = want as u128 * d as u128 / total as u128;
            let u = share.min((k - d) as u128) as u32;
            sw.up_ports[x as usize] = u;
            given += u as u64;
        }
        // Remainder one port at a time to switches with free ports, in position order.
        let mut left = want.saturating_sub(given);
        while left > 0 {
            let mut placed = false;
            for &x in &block.switches {
                if left == 0 {
                    break;
                }
                let i = x as usize;
                if sw.down_ports[i] + sw.up_ports[i] < k {
                    sw.up_ports[i] += 1;
                    left -= 1;
                    placed = true;
                }
            }
            if !placed {
                break;
            }
        }
    }

    /// Leaves for one scope: `ports` in leaf order, cut into leaves of `chunks[i]` ports.
    fn leaves(&mut self, ports: &[u32], chunks: &[u32]) -> Vec<Block> {
        let p = self.plan;
        let mut out = Vec::with_capacity(chunks.len());
        let mut at = 0usize;
        for &n in chunks {
            let leaf_ports = &ports[at..at + n as usize];
            at += n as usize;
            // Top-of-rack when every port's node sits in one compute rack.
            let mut rack = NO_RACK;
            if p.nodes_per_rack > 0 {
                let r0 = self.rack_of(leaf_ports[0]);
                if leaf_ports.iter().all(|&v| self.rack_of(v) == r0) {
                    rack = r0 as u32;
                }
            }
            let sw = self.topo.add_switch(1, self.plane, self.site, rack);
            let sv = self.topo.switch_vertex(sw);
            let optical = rack == NO_RACK;
            let lat = if optical { NIC_TO_LEAF_M } else { IN_RACK_M } * NS_PER_M / 1000.0;
            for &v in leaf_ports {
                self.topo
                    .add_link(v, sv, 1, p.nic_link_gbps, lat, optical, 1, LinkKind::Nic);
            }
            let up = self.uplinks(1, n);
            self.topo.switches.down_ports[sw as usize] = n;
            self.topo.switches.up_ports[sw as usize] = up;
            out.push(Block { switches: vec![sw] });
        }
        out
    }

    fn rack_of(&self, port_vertex: u32) -> u64 {
        let node = (port_vertex / self.topo.endpoints_per_node) as u64;
        let site = node / self.plan.nodes_per_site;
        site * self.plan.racks_per_site
            + (node % self.plan.nodes_per_site) / self.plan.nodes_per_rack
    }

    /// Tier `tier` over `blocks`: blocks of `fanin` lower blocks (all when `None`).
    fn tier(&mut self, blocks: Vec<Block>, tier: u32, fanin: Option<usize>) -> Vec<Block> {
        let n = fanin.unwrap_or(blocks.len()).max(1);
        blocks.chunks(n).map(|c| self.combine(c, tier)).collect()
    }

    fn combine(&mut self, chunk: &[Block], tier: u32) -> Block {
        let ups: Vec<Vec<u32>> = chunk
            .iter()
            .map(|b| {
                b.switches
                    .iter()
                    .map(|&s| self.topo.switches.up_ports[s as usize])
                    .collect()
            })
            .collect();
        let loads = self
            .plan
            .block_loads(tier, &ups, self.targets[tier as usize].as_ref());
        let len_m = if tier == 2 {
            LEAF_TO_SPINE_M
        } else {
            UPPER_TIER_M
        };
        let lat = len_m * NS_PER_M / 1000.0;
        let link_gbps = self.plan.link_gbps;
        let mut out = Vec::new();
        let mut got: Vec<u32> = Vec::new();
        for (p, stripe) in loads.iter().enumerate() {
            if stripe.is_empty() {
                continue;
            }
            let s = stripe.len();
            let first = self.topo.switches.len() as u32;
            for _ in 0..s {
                self.topo.add_switch(tier, self.plane, self.site, NO_RACK);
            }
            // Each lower switch's uplinks round-robin over the stripe, continuing where the
            // last one stopped and passing over switches already at their load: in a full
            // block (even loads) no switch is passed over and the loads differ by at most
            // one; a partly filled one's loads are even too (`partial_loads`), so its lower
            // switches are cabled as in a full block.
            let mut room = stripe.clone();
            let mut off = 0usize;
            for (b, u) in chunk.iter().zip(&ups) {
                let (Some(&x), Some(&u)) = (b.switches.get(p), u.get(p)) else {
                    continue;
                };
                let xv = self.topo.switch_vertex(x);
                let start = off;
                got.clear();
                got.resize(s, 0);
                let (base, extra) = (u as usize / s, u as usize % s);
                let fits = (0..s)
                    .all(|t| base + (((t + s - off) % s) < extra) as usize <= room[t] as usize);
                if fits {
                    for t in 0..s {
                        got[t] = (base + (((t + s - off) % s) < extra) as usize) as u32;
                        room[t] -= got[t];
                    }
                    off = (off + u as usize) % s;
                } else {
                    let mut left = u;
                    while left > 0 {
                        if room.iter().all(|&r| r == 0) {
                            break;
                        }
                        if room[off] > 0 {
                            room[off] -= 1;
                            got[off] += 1;
                            left -= 1;
                        }
                        off = (off + 1) % s;
                    }
                }
                let add = |topo: &mut Topology, t: usize| {
                    let c = got[t];
                    if c == 0 {
                        return;
                    }
                    let up = first + t as u32;
                    let uv = topo.switch_vertex(up);
                    topo.add_link(xv, uv, c, link_gbps, lat, true, tier, LinkKind::Fabric);
                    topo.switches.down_ports[up as usize] += c;
                };
                // Bundles in the order the cables were laid: from `start` round the stripe
                // when a switch has fewer uplinks than the stripe has switches.
                if (u as usize) < s {
                    for i in 0..s {
                        add(&mut self.topo, (start + i) % s);
                    }
                } else {
                    for t in 0..s {
                        add(&mut self.topo, t);
                    }
                }
            }
            for t in 0..s {
                let sw = (first + t as u32) as usize;
                let down = self.topo.switches.down_ports[sw];
                self.topo.switches.up_ports[sw] = self.uplinks(tier, down);
            }
            out.extend(first..first + s as u32);
        }
        Block { switches: out }
    }

    /// Builds one site's tree(s) in one plane; returns the site-top blocks (one, or one
    /// per rail for rail-only), with DCI up ports allotted when the site has a DCI.
    fn site_plane(&mut self) -> Vec<Block> {
        let tops = self.site_plane_tree();
        if let Rule::Dci(gbps) = self.plan.rule[self.plan.tiers as usize] {
            for b in &tops {
                self.dci_ports(b, gbps);
            }
        }
        tops
    }

    fn site_plane_tree(&mut self) -> Vec<Block> {
        let p = self.plan;
        let node0 = self.site as u64 * p.nodes_per_site;
        let eps = p.endpoints_per_node_per_plane();
        let d1 = p.down[1];
        let plane = self.plane;
        let topo_eppn = self.topo.endpoints_per_node;
        let vertex = |node: u64, slot: u32| -> u32 {
            (node * topo_eppn as u64 + (plane * eps + slot) as u64) as u32
        };
        // NIC port order and leaf sizes for a node range.
        let leaf_ports =
            |n0: u64, n1: u64, ports: &mut Vec<u32>, chunks: &mut Vec<u32>| match p.leaf_kind {
                LeafKind::Consecutive => {
                    for node in n0..n1 {
                        for slot in 0..eps {
                            ports.push(vertex(node, slot));
                        }
                    }
                    let total = (n1 - n0) * eps as u64;
                    let mut left = total;
                    while left > 0 {
                        let c = left.min(d1 as u64);
                        chunks.push(c as u32);
                        left -= c;
                    }
                }
                LeafKind::Rails => {
                    let mut g0 = n0;
                    while g0 < n1 {
                        let g1 = (g0 + d1 as u64).min(n1);
                        for slot in 0..eps {
                            for node in g0..g1 {
                                ports.push(vertex(node, slot));
                            }
                            chunks.push((g1 - g0) as u32);
                        }
                        g0 = g1;
                    }
                }
            };
        let scope_top_fanin = |j: u32| -> Option<usize> {
            if j == p.scope_tiers {
                None
            } else {
                Some(p.down[j as usize] as usize)
            }
        };
        let mut ports = Vec::new();
        let mut chunks = Vec::new();
        match p.scope {
            Scope::Site | Scope::Islands { .. } => {
                let per_scope = match p.scope {
                    Scope::Islands { nodes } => nodes,
                    _ => p.nodes_per_site,
                };
                let mut tops = Vec::new();
                let mut n0 = node0;
                while n0 < node0 + p.nodes_per_site {
                    let n1 = (n0 + per_scope).min(node0 + p.nodes_per_site);
                    ports.clear();
                    chunks.clear();
                    leaf_ports(n0, n1, &mut ports, &mut chunks);
                    let mut blocks = self.leaves(&ports, &chunks);
                    for j in 2..=p.scope_tiers {
                        blocks = self.tier(blocks, j, scope_top_fanin(j));
                    }
                    tops.extend(blocks);
                    n0 = n1;
                }
                let mut blocks = tops;
                for j in p.scope_tiers + 1..=p.tiers {
                    let fanin = if j == p.tiers {
                        None
                    } else {
                        Some(p.down[j as usize] as usize)
                    };
                    blocks = self.tier(blocks, j, fanin);
                }
                blocks
            }
            Scope::Rails => {
                let domains = p.nodes_per_site / p.nodes_per_domain;
                let rails = p.nodes_per_domain as u32 * eps;
                let mut tops = Vec::with_capacity(rails as usize);
                for rail in 0..rails {
                    let in_domain = (rail / eps) as u64;
                    let slot = rail % eps;
                    ports.clear();
                    chunks.clear();
                    for d in 0..domains {
                        ports.push(vertex(node0 + d * p.nodes_per_domain + in_domain, slot));
                    }
                    let mut left = domains;
                    while left > 0 {
                        let c = left.min(d1 as u64);
                        chunks.push(c as u32);
                        left -= c;
                    }
                    let mut blocks = self.leaves(&ports, &chunks);
                    for j in 2..=p.tiers {
                        blocks = self.tier(blocks, j, scope_top_fanin(j));
                    }
                    tops.extend(blocks);
                }
                tops
            }
        }
    }
}

/// Builds the whole graph.
// Index loops: `plane` and `bi` index the same position in every site's tree.
#[allow(clippy::needless_range_loop)]
pub(crate) fn build_graph(p: &Plan) -> Topology {
    let eps = p.endpoints_per_node_per_plane();
    let nodes = p.nodes_per_site * p.sites as u64;
    let topo = Topology {
        endpoints: (nodes * (eps * p.planes) as u64) as u32,
        endpoints_per_node: eps * p.planes,
        endpoints_per_node_per_plane: eps,
        ports_per_nic: p.ports_per_nic,
        planes: p.planes,
        sites: p.sites,
        tiers: p.tiers,
        switch_latency_us: p.switch_latency_us,
        switches: Switches::default(),
        links: Links::default(),
    };
    let mut ctx = Ctx {
        plan: p,
        targets: p.targets(),
        topo,
        site: 0,
        plane: 0,
    };
    if eps == 0 {
        return ctx.topo;
    }
    // tops[site][plane] = site-top blocks
    let mut tops: Vec<Vec<Vec<Block>>> = Vec::with_capacity(p.sites as usize);
    for site in 0..p.sites {
        let mut per_plane = Vec::with_capacity(p.planes as usize);
        for plane in 0..p.planes {
            ctx.site = site;
            ctx.plane = plane;
            per_plane.push(ctx.site_plane());
        }
        tops.push(per_plane);
    }
    if p.sites > 1 {
        // DCI: the site-top switch at position q of block i in site a links to the same
        // position in every other site. Its DCI ports split evenly over the peers (floor),
        // never past a switch's allotted ports; what a position leaves over is paired
        // across positions below.
        let peers = p.sites - 1;
        let lat = p.dci_latency_us;
        let mut pairs = Vec::new();
        for a in 0..p.sites as usize {
            for b in a + 1..p.sites as usize {
                pairs.push((a, b));
            }
        }
        let mut left = vec![0u32; p.sites as usize];
        for plane in 0..p.planes as usize {
            for bi in 0..tops[0][plane].len() {
                // Up ports the same-position pairing leaves, per site: (switch, ports).
                let mut rest: Vec<Vec<(u32, u32)>> = vec![Vec::new(); p.sites as usize];
                for q in 0..tops[0][plane][bi].switches.len() {
                    let sw_at = |site: usize| tops[site][plane][bi].switches.get(q).copied();
                    for (site, l) in left.iter_mut().enumerate() {
                        *l = sw_at(site)
                            .map(|x| ctx.topo.switches.up_ports[x as usize])
                            .unwrap_or(0);
                    }
                    // An even split over the peers; what it leaves is paired below.
                    let per = left[0] / peers;
                    for k in 0..pairs.len() {
                        let (a, b) = pairs[(k + q) % pairs.len()];
                        let c = per.min(left[a]).min(left[b]);
                        let (Some(x), Some(y)) = (sw_at(a), sw_at(b)) else {
                            continue;
                        };
                        if c == 0 {
                            continue;
                        }
                        left[a] -= c;
                        left[b] -= c;
                        let (xv, yv) = (ctx.topo.switch_vertex(x), ctx.topo.switch_vertex(y));
                        ctx.topo.add_link(
                            xv,
                            yv,
                            c,
                            p.link_gbps,
                            lat,
                            true,
                            p.tiers,
                            LinkKind::Dci,
                        );
                    }
                    for (site, &l) in left.iter().enumerate() {
                        if let (Some(x), true) = (sw_at(site), l > 0) {
                            rest[site].push((x, l));
                        }
                    }
                }
                // What the even split leaves (fewer ports at a position than peers: one DCI
                // port on each of three sites' position-q switches) is paired across
                // positions. The sites are alike, so each has the same number left, `R`:
                // every pair takes `R / (S - 1)` cables and the rest goes round a circulant
                // (site i to i +- 1, i +- 2, ..., and to i + S/2 for an odd rest), so that
                // every site gets the ports its DCI asked for, spread evenly over its peers.
                // Anything still left (an odd rest on an odd number of sites) is paired one
                // cable at a time from the site with the most left to the peer it has the
                // fewest cables with.
                let n = p.sites as usize;
                let mut total: Vec<u64> = rest
                    .iter()
                    .map(|r| r.iter().map(|&(_, l)| l as u64).sum())
                    .collect();
                let mut at = vec![0usize; n];
                let mut extra: BTreeMap<(u32, u32), u32> = BTreeMap::new();
                let mut between: BTreeMap<(usize, usize), u64> = BTreeMap::new();
                if total[0] > 0 && total.iter().all(|&t| t == total[0]) {
                    let (base, odd) = (total[0] / peers as u64, total[0] % peers as u64);
                    for i in 0..n {
                        for j in i + 1..n {
                            if base > 0 {
                                between.insert((i, j), base);
                            }
                        }
                        for o in 1..=(odd / 2) as usize {
                            let j = (i + o) % n;
                            *between.entry((i.min(j), i.max(j))).or_insert(0) += 1;
                        }
                        if odd % 2 == 1 && n.is_multiple_of(2) && i < n / 2 {
                            *between.entry((i, i + n / 2)).or_insert(0) += 1;
                        }
                    }
                    for (&(a, b), &c) in &between {
                        let mut c = c;
                        while c > 0 && at[a] < rest[a].len() && at[b] < rest[b].len() {
                            let m = c.min(rest[a][at[a]].1 as u64).min(rest[b][at[b]].1 as u64);
                            *extra
                                .entry((rest[a][at[a]].0, rest[b][at[b]].0))
                                .or_insert(0) += m as u32;
                            c -= m;
                            for site in [a, b] {
                                total[site] -= m;
                                let r = &mut rest[site][at[site]];
                                r.1 -= m as u32;
                                if r.1 == 0 {
                                    at[site] += 1;
                                }
                            }
                        }
                    }
                }
                while let Some(a) = (0..total.len())
                    .filter(|&i| total[i] > 0)
                    .max_by_key(|&i| (total[i], Reverse(i)))
                {
                    let pair = |i: usize| between.get(&(a.min(i), a.max(i))).copied().unwrap_or(0);
                    let Some(b) = (0..total.len())
                        .filter(|&i| i != a && total[i] > 0)
                        .min_by_key(|&i| (pair(i), Reverse(total[i]), i))
                    else {
                        break;
                    };
                    let (lo, hi) = (a.min(b), a.max(b));
                    let (x, y) = (rest[lo][at[lo]].0, rest[hi][at[hi]].0);
                    *extra.entry((x, y)).or_insert(0) += 1;
                    *between.entry((lo, hi)).or_insert(0) += 1;
                    for site in [a, b] {
                        total[site] -= 1;
                        let r = &mut rest[site][at[site]];
                        r.1 -= 1;
                        if r.1 == 0 {
                            at[site] += 1;
                        }
                    }
                }
                for ((x, y), c) in extra {
                    let (xv, yv) = (ctx.topo.switch_vertex(x), ctx.topo.switch_vertex(y));
                    ctx.topo
                        .add_link(xv, yv, c, p.link_gbps, lat, true, p.tiers, LinkKind::Dci);
                }
            }
        }
        // Up ports actually used by DCI.
        let sw = &mut ctx.topo.switches;
        for site_tops in &tops {
            for blocks in site_tops {
                for b in blocks {
                    for &x in &b.switches {
                        sw.up_ports[x as usize] = 0;
                    }
                }
            }
        }
        let l = &ctx.topo.links;
        for i in 0..l.len() {
            if l.kind[i] == LinkKind::Dci {
                let c = l.cables[i];
                sw.up_ports[(l.lower[i] - ctx.topo.endpoints) as usize] += c;
                sw.up_ports[(l.upper[i] - ctx.topo.endpoints) as usize] += c;
            }
        }
    }
    ctx.topo
}
