//! The simulated network: directed links and routing.
//!
//! Directed link ids: scale-out link bundle `b` of the topology is two directed links,
//! `2b` (lower to upper end; for a DCI bundle, from its `lower` site-top switch to its
//! `upper`) and `2b + 1` (upper to lower). Then two per accelerator `a` for the scale-up
//! domain, modelled as one non-blocking switch per domain: `su + 2a` (accelerator to the
//! domain switch) and `su + 2a + 1` (switch to accelerator), where `su = 2 * bundles`.
//!
//! Capacities are effective (goodput) rates in bytes/s: line rate × the catalog's
//! efficiency (`fabric.link_efficiency` for scale-out links, `scale_up.collective_efficiency`
//! for scale-up links), the fraction of line rate that NCCL's Simple protocol reaches; a
//! bundle of `c` parallel cables is one link of `c` × the cable rate (its cables share load
//! perfectly, as with packet spraying or adaptive routing inside a bundle).
//!
//! # Routing
//!
//! - Same accelerator: no links. Same scale-up domain: `[up(src), down(dst)]` through the
//!   domain switch.
//! - Different domains: through a NIC port of each end. On rail topologies
//!   (`rail-optimized`, `rail-only`) the flow leaves the source domain through the NIC of the
//!   *rail twin* of the destination (the accelerator at the destination's position in the
//!   source domain; NCCL's PXN): when that is not the sender, the flow first crosses the
//!   source's scale-up switch to it (`up(src), down(twin)`). On `fat-tree` and `spine-leaf`
//!   the sender's own NIC is used. Both ends use the same NIC slot (NIC, plane, port) of
//!   their accelerator, so a flow stays in one plane and, with the twin rule, on one rail.
//!   Several slots (planes, several NICs or ports per accelerator) are chosen by the flow
//!   hash, skipping dead ones.
//! - Inside a site, folded Clos up-down routing: up from the source leaf to the lowest tier
//!   whose switch block holds both ends (same leaf: no switch above it), then down. Going
//!   up, each switch picks one of its live uplink bundles by the ECMP hash, weighted by
//!   cables; going down the path is fixed (a switch of a stripe has one link to each lower
//!   block). If a choice leads to no live path (a failed link or switch, or a partial
//!   block), the next uplink in hash order is tried (depth-first, so a route is found
//!   whenever a live up-down path exists).
//! - Between sites: up to the site-top tier, across a DCI link to the destination's site,
//!   then down.
//!
//! # Uplink choice
//!
//! Two documented models, by fabric (`Routing`):
//!
//! - **Hash** (Ethernet/RoCE ECMP): `h = splitmix64(splitmix64(src | dst << 32) ^
//!   flow_id)` for the flow, and at switch vertex `v`: `splitmix64(h ^ v *
//!   0x9E3779B97F4A7C15)`; the uplink is the one holding cable number `hash % cables`
//!   (the switch's uplink cables in bundle order). Flows can collide on an uplink while
//!   others idle, as ECMP does.
//! - **Destination** (InfiniBand static routing, OpenSM's fat-tree "d-mod-k"): the uplink
//!   is bundle number `(q / D) % bundles`, where `q` is the destination NIC port vertex and
//!   `D` the product of the bundle counts chosen from at the tiers below: destinations
//!   spread over the switches above (OpenSM's port groups), whatever the cables per
//!   bundle; flows to different destinations under one leaf spread over distinct uplinks.
//!   From a leaf to the spines above both ends, toward a leaf with fewer uplinks than the
//!   source's (a partial last leaf), the spine is the one of bundle `q % bundles` of the
//!   *destination's* leaf (OpenSM assigns each destination one of its own leaf's uplinks),
//!   reached over the source leaf's bundle to it, so every uplink of the partial leaf is in
//!   use. When the choice leads to no live path (a stripe that does not reach a partial
//!   block, a failed element), d-mod-k picks among the uplinks that do lead there.
//!
//! In both, the NIC slot is `(flow id + flow_hash(source, destination, 0)) % slots` (the
//! host's choice: a connection's flows are split one per slot, with consecutive ids,
//! `program::split_connections`). Under hash routing, when the chosen uplink leads
//! to no live path (a failed link or switch, or a stripe that does not reach a partial
//! block), the choice is re-drawn by a per-attempt hash of the flow, destination and switch
//! (so displaced flows spread over the remaining uplinks, as ECMP re-hashing over the live
//! next hops does), and last every uplink is tried in order.
//! Pure functions of the flow's (source, destination, flow id): the same input always
//! takes the same path, and a collective's channel keeps its path across steps (NCCL's
//! connections are persistent).

use myriad_cluster::{BuiltCluster, LinkKind, Topology};
use myriad_scenario::TopologyKind;

/// Longest path a flow can take, in directed links.
pub const MAX_PATH: usize = 16;
const NONE: u32 = u32::MAX;

#[inline]
pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The flow hash of (source, destination, flow id).
#[inline]
pub fn flow_hash(src: u32, dst: u32, flow_id: u32) -> u64 {
    splitmix64(splitmix64(src as u64 | (dst as u64) << 32) ^ flow_id as u64)
}

/// What a directed link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkRef {
    /// Topology link bundle `bundle`, in the direction lower-to-upper (`up`) or back.
    ScaleOut { bundle: u32, up: bool },
    /// Accelerator `accelerator` to its domain switch (`out`) or back.
    ScaleUp { accelerator: u32, out: bool },
    /// A link of a hand-built network (`Network::custom`).
    Custom(u32),
}

/// How a switch picks among its uplinks (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Routing {
    /// ECMP hash of (source, destination, flow id): Ethernet/RoCE.
    Hash,
    /// Destination-based static routing (d-mod-k): InfiniBand.
    Destination,
}

/// A route that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoRoute;

/// The network a simulation runs on: directed links with capacities and latencies, and
/// (when built from a cluster) the router.
#[derive(Debug, Clone)]
pub struct Network {
    /// Effective capacity of each directed link, bytes/s.
    pub(crate) cap: Vec<f64>,
    /// Line rate of each directed link, bytes/s.
    pub(crate) line: Vec<f64>,
    /// Propagation latency of each directed link, seconds (custom networks: the link's
    /// whole latency).
    pub(crate) prop: Vec<f64>,
    pub(crate) bundles: u32,
    pub(crate) su: u32,
    pub(crate) accelerators: u32,
    /// Accelerators per scale-up domain.
    pub(crate) apd: u32,
    pub(crate) su_lat: f64,
    /// What NCCL pays to issue one peer's message of an all-to-all, seconds: for a peer in
    /// the same domain, and for one across (the hierarchy's first two level latencies, as
    /// the analytical model charges them; see [`Network::peer_issue_latency`]).
    pub(crate) issue_lat: [f64; 2],
    pub(crate) in_network_reduction: bool,
    pub(crate) router: Option<Router>,
    /// Flows per NIC-to-NIC connection (`cluster.scale_out.qps_per_connection`).
    pub(crate) qps: u32,
    custom: bool,
}

/// Routing tables of a cluster's scale-out graph.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    endpoints: u32,
    eppn: u32,
    eppn_plane: u32,
    ppn: u32,
    nics: u32,
    apn: u32,
    rail_aligned: bool,
    routing: Routing,
    tiers: u32,
    lower: Vec<u32>,
    upper: Vec<u32>,
    sw_tier: Vec<u8>,
    sw_site: Vec<u16>,
    /// Per switch: uplink bundles (fabric) and cumulative cables.
    up_off: Vec<u32>,
    up_b: Vec<u32>,
    up_cum: Vec<u32>,
    /// Per switch: downlink bundles (fabric) sorted by the child's block.
    down_off: Vec<u32>,
    down_key: Vec<u32>,
    down_b: Vec<u32>,
    /// Per switch: DCI bundles.
    dci_off: Vec<u32>,
    dci_b: Vec<u32>,
    /// Per NIC port vertex: its NIC bundle.
    nic_b: Vec<u32>,
    /// Per switch: its block at tier 1..=4 upward from its own tier (index = tier - 1).
    chain: Vec<[u32; 4]>,
    switch_lat: f64,
    base_lat: f64,
}

fn csr(n: usize, items: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
    let mut off = vec![0u32; n + 1];
    for &(k, _) in items {
        off[k as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut ids = vec![0u32; items.len()];
    for &(k, v) in items {
        ids[fill[k as usize] as usize] = v;
        fill[k as usize] += 1;
    }
    (off, ids)
}

fn find(p: &mut [u32], mut x: u32) -> u32 {
    while p[x as usize] != x {
        p[x as usize] = p[p[x as usize] as usize];
        x = p[x as usize];
    }
    x
}

impl Router {
    fn new(t: &Topology, c: &BuiltCluster) -> Router {
        let e = t.endpoints;
        let l = &t.links;
        let ns = t.switches.len();
        let nb = l.len();
        let sw = |v: u32| v - e;
        // Uplinks and downlinks by switch, NIC bundles by port.
        let mut nic_b = vec![NONE; e as usize];
        let mut ups: Vec<(u32, u32)> = Vec::new();
        let mut dcis: Vec<(u32, u32)> = Vec::new();
        for b in 0..nb {
            match l.kind[b] {
                LinkKind::Nic => nic_b[l.lower[b] as usize] = b as u32,
                LinkKind::Fabric => ups.push((sw(l.lower[b]), b as u32)),
                LinkKind::Dci => {
                    dcis.push((sw(l.lower[b]), b as u32));
                    dcis.push((sw(l.upper[b]), b as u32));
                }
            }
        }
        let (up_off, up_b) = csr(ns, &ups);
        let mut up_cum = vec![0u32; up_b.len()];
        for s in 0..ns {
            let mut acc = 0;
            for i in up_off[s]..up_off[s + 1] {
                acc += l.cables[up_b[i as usize] as usize];
                up_cum[i as usize] = acc;
            }
        }
        let (dci_off, dci_b) = csr(ns, &dcis);
        // Blocks: each leaf its own; a tier-j switch joins the block of every tier-j switch
        // that shares a lower block with it.
        let mut blk: Vec<u32> = (0..ns as u32).collect();
        let mut parent: Vec<u32> = (0..ns as u32).collect();
        for tier in 2..=t.tiers as u8 {
            let mut first = vec![NONE; ns];
            for b in 0..nb {
                if l.kind[b] != LinkKind::Fabric || l.tier[b] != tier {
                    continue;
                }
                let (lo, up) = (sw(l.lower[b]), sw(l.upper[b]));
                let key = blk[lo as usize] as usize;
                if first[key] == NONE {
                    first[key] = up;
                } else {
                    let (a, z) = (find(&mut parent, first[key]), find(&mut parent, up));
                    if a != z {
                        parent[a.max(z) as usize] = a.min(z);
                    }
                }
            }
            for (s, b) in blk.iter_mut().enumerate() {
                if t.switches.tier[s] == tier {
                    *b = find(&mut parent, s as u32);
                }
            }
        }
        // Parent block of each block (through any fabric uplink of any of its switches).
        let mut parent_blk = vec![NONE; ns];
        for &(s, b) in &ups {
            parent_blk[blk[s as usize] as usize] = blk[sw(l.upper[b as usize]) as usize];
        }
        let mut chain = vec![[NONE; 4]; ns];
        for s in 0..ns {
            let tier = t.switches.tier[s] as usize;
            let mut cur = blk[s];
            for j in tier..=4 {
                if cur == NONE {
                    break;
                }
                chain[s][j - 1] = cur;
                cur = parent_blk[cur as usize];
            }
        }
        let mut downs: Vec<(u32, u32)> = ups
            .iter()
            .map(|&(_, b)| (sw(l.upper[b as usize]), b))
            .collect();
        downs.sort_by_key(|&(s, b)| (s, blk[sw(l.lower[b as usize]) as usize], b));
        let (down_off, down_b) = csr(ns, &downs);
        let down_key = down_b
            .iter()
            .map(|&b| blk[sw(l.lower[b as usize]) as usize])
            .collect();
        let su = &c.scale_up;
        Router {
            endpoints: e,
            eppn: t.endpoints_per_node,
            eppn_plane: t.endpoints_per_node_per_plane,
            ppn: t.ports_per_nic,
            nics: su.nics_per_node,
            apn: su.accelerators_per_node,
            rail_aligned: matches!(
                c.network.topology,
                TopologyKind::RailOptimized | TopologyKind::RailOnly
            ),
            routing: match c.fabric.kind {
                myriad_catalog::FabricKind::Infiniband => Routing::Destination,
                myriad_catalog::FabricKind::Roce => Routing::Hash,
            },
            tiers: t.tiers,
            lower: l.lower.clone(),
            upper: l.upper.clone(),
            sw_tier: t.switches.tier.clone(),
            sw_site: t.switches.site.clone(),
            up_off,
            up_b,
            up_cum,
            down_off,
            down_key,
            down_b,
            dci_off,
            dci_b,
            nic_b,
            chain,
            switch_lat: t.switch_latency_us * 1e-6,
            // The catalog's one-switch figure holds two short cables; every cable of a
            // route is added in `route` (`prop`), so they are taken out here.
            base_lat: myriad_cluster::topology::base_without_cables_us(c.fabric.base_latency_us)
                * 1e-6,
        }
    }

    /// NIC port slots per accelerator, and the port vertex of slot `i` of accelerator `a`.
    fn slots(&self) -> u32 {
        let owned = if self.nics >= self.apn {
            self.nics / self.apn
        } else {
            1
        };
        owned * (self.eppn / self.eppn_plane.max(1)) * self.ppn
    }

    fn port(&self, a: u32, i: u32) -> u32 {
        let node = a / self.apn;
        let local = a % self.apn;
        let planes = self.eppn / self.eppn_plane.max(1);
        let (nic0, owned) = if self.nics >= self.apn {
            (local * (self.nics / self.apn), self.nics / self.apn)
        } else {
            (local * self.nics / self.apn, 1)
        };
        let port = i % self.ppn;
        let plane = (i / self.ppn) % planes;
        let nic = nic0 + (i / self.ppn / planes) % owned;
        node * self.eppn + plane * self.eppn_plane + nic * self.ppn + port
    }

    /// Up-down route between two NIC ports; appends directed links to `out`, returns the
    /// latency (propagation is added by the caller).
    fn ports(
        &self,
        alive: &[bool],
        p: u32,
        q: u32,
        h: u64,
        out: &mut Vec<u32>,
    ) -> Result<(), NoRoute> {
        let (bp, bq) = (self.nic_b[p as usize], self.nic_b[q as usize]);
        if bp == NONE || bq == NONE || !alive[2 * bp as usize] || !alive[2 * bq as usize + 1] {
            return Err(NoRoute);
        }
        let e = self.endpoints;
        let (lp, lq) = (self.upper[bp as usize] - e, self.upper[bq as usize] - e);
        let base = out.len();
        out.push(2 * bp);
        let cq = self.chain[lq as usize];
        let ok = if self.sw_site[lp as usize] == self.sw_site[lq as usize] {
            let cp = self.chain[lp as usize];
            match (0..4).find(|&j| cp[j] != NONE && cp[j] == cq[j]) {
                Some(j) => self.up(alive, lp, j as u32, h, q, 1, lq, &cq, None, out),
                None => false,
            }
        } else if self.tiers > 0 {
            let site = self.sw_site[lq as usize];
            self.up(alive, lp, self.tiers - 1, h, q, 1, lq, &cq, Some(site), out)
        } else {
            false
        };
        if !ok {
            out.truncate(base);
            return Err(NoRoute);
        }
        out.push(2 * bq + 1);
        Ok(())
    }

    /// Depth-first up phase from switch `s` to tier index `target` (0 = leaf).
    #[allow(clippy::too_many_arguments)]
    fn up(
        &self,
        alive: &[bool],
        s: u32,
        target: u32,
        h: u64,
        q: u32,
        div: u64,
        leaf_q: u32,
        cq: &[u32; 4],
        dci_site: Option<u16>,
        out: &mut Vec<u32>,
    ) -> bool {
        let tier = self.sw_tier[s as usize] as u32 - 1;
        if tier >= target {
            return match dci_site {
                None => self.down(alive, s, leaf_q, cq, out),
                Some(site) => self.dci(alive, s, site, h, leaf_q, cq, out),
            };
        }
        if out.len() + 2 * (target - tier) as usize + 3 > MAX_PATH {
            return false;
        }
        let (a, z) = (
            self.up_off[s as usize] as usize,
            self.up_off[s as usize + 1] as usize,
        );
        if a == z {
            return false;
        }
        let total = self.up_cum[z - 1];
        let n = z - a;
        let pick = |c: u32| (a..z).position(|i| self.up_cum[i] > c).unwrap_or(0);
        // The routing's choice of uplink bundle, and d-mod-k's divisor for the tier above.
        // Destination routing spreads destinations over the switches above (OpenSM's
        // fat-tree routing assigns each destination the least loaded *port group*, all
        // the cables to one switch being one group), not over cables: counted by cable, a
        // partial pod's leaf with 16 cables to each of its 2 spines sent the 8 NICs of a
        // node (consecutive ports) all through its first spine, and on to one core and
        // one spine-to-leaf cable of the destination pod (8 flows on one cable).
        // The destination's index among those this switch's choice spreads.
        let spread = q as u64 / div.max(1);
        let (first, div) = match self.routing {
            Routing::Hash => {
                let hs = splitmix64(
                    h ^ ((s + self.endpoints) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                (
                    pick((hs % total as u64) as u32),
                    div.saturating_mul(total as u64),
                )
            }
            Routing::Destination => (
                ((q as u64 / div) % n as u64) as usize,
                div.saturating_mul(n as u64),
            ),
        };
        // First the routing's choice; if it leads nowhere (a failed link or switch, or a
        // partial block), re-draw among the cables with a per-attempt hash, so that the
        // flows it displaces spread over the remaining uplinks instead of piling onto the
        // next one; finally every uplink in order (a route is found whenever one exists).
        // Up through uplink `i` and on to the destination: the route is left in `out` where
        // one exists, else `out` is as it was.
        let via = |i: usize, out: &mut Vec<u32>| -> bool {
            let b = self.up_b[a + i];
            if !alive[2 * b as usize] {
                return false;
            }
            let base = out.len();
            out.push(2 * b);
            let next = self.upper[b as usize] - self.endpoints;
            if self.up(alive, next, target, h, q, div, leaf_q, cq, dci_site, out) {
                return true;
            }
            out.truncate(base);
            false
        };
        let mut tried = [0u64; 8];
        let mut try_one = |i: usize, out: &mut Vec<u32>| -> bool {
            if i < 512 {
                if tried[i / 64] >> (i % 64) & 1 == 1 {
                    return false;
                }
                tried[i / 64] |= 1 << (i % 64);
            }
            via(i, out)
        };
        // Destination routing from a leaf to the spines above both ends: OpenSM's fat-tree
        // routing assigns each destination port one of its own leaf's uplinks (d-mod-k over
        // the destination leaf's port groups), and every source reaches it through that uplink's
        // spine. On full leaves the source's cable of the same number leads to the same
        // spine; a partial leaf (the last 8 NICs of 1,000 on leaves of 32) has fewer
        // uplinks, and choosing by the source's cables sent its 8 ports through 4 of its
        // 8 spines (2:1 into that leaf).
        if self.routing == Routing::Destination && tier == 0 && target == 1 && dci_site.is_none() {
            let (qa, qz) = (
                self.up_off[leaf_q as usize] as usize,
                self.up_off[leaf_q as usize + 1] as usize,
            );
            // Only toward a leaf with fewer uplinks than this one: between leaves cabled
            // alike the source's cable is the same spine (and, where the builder staggers
            // the cabling, d-mod-k's spread over the source's uplinks is kept); from a
            // partial leaf, its own cables spread its flows over all its uplinks.
            if qa < qz && self.up_cum[qz - 1] < total {
                // At a leaf d-mod-k's divisor is 1; one group per spine, as above.
                let k = (q as u64 % (qz - qa) as u64) as usize;
                let spine = self.upper[self.up_b[qa + k] as usize];
                if let Some(i) = (a..z).position(|i| self.upper[self.up_b[i] as usize] == spine) {
                    if try_one(i, out) {
                        return true;
                    }
                }
            }
        }
        if try_one(first, out) {
            return true;
        }
        if self.routing == Routing::Destination {
            // Where the choice leads nowhere (a stripe that does not reach a partial block,
            // or a failed element), d-mod-k over the uplinks that do lead to the
            // destination, as a fat-tree routing computed on the live fabric would: the
            // destinations stay spread over those uplinks, where a re-drawn hash piled 5
            // of the 8 flows from a full pod's leaf into a 2-leaf pod onto one of its
            // 2 usable uplinks.
            let leads = |i: usize, out: &mut Vec<u32>| -> bool {
                let base = out.len();
                let ok = via(i, out);
                out.truncate(base);
                ok
            };
            let live = (0..n).filter(|&i| leads(i, out)).count();
            if live == 0 {
                return false;
            }
            let k = (spread % live as u64) as usize;
            let i = (0..n)
                .filter(|&i| leads(i, out))
                .nth(k)
                .expect("the k-th uplink that leads to the destination");
            let b = self.up_b[a + i];
            out.push(2 * b);
            let next = self.upper[b as usize] - self.endpoints;
            return self.up(alive, next, target, h, q, div, leaf_q, cq, dci_site, out);
        }
        let h2 = splitmix64(h ^ (q as u64).rotate_left(17) ^ (s as u64).rotate_left(40));
        for k in 1..=n as u64 {
            let ck = (splitmix64(h2 ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % total as u64) as u32;
            if try_one(pick(ck), out) {
                return true;
            }
        }
        (0..n).any(|i| try_one(i, out))
    }

    /// Across a DCI link from site-top switch `s` to a switch of `site` that can reach the
    /// destination leaf, then down.
    #[allow(clippy::too_many_arguments)]
    fn dci(
        &self,
        alive: &[bool],
        s: u32,
        site: u16,
        h: u64,
        leaf_q: u32,
        cq: &[u32; 4],
        out: &mut Vec<u32>,
    ) -> bool {
        let (a, z) = (
            self.dci_off[s as usize] as usize,
            self.dci_off[s as usize + 1] as usize,
        );
        if a == z {
            return false;
        }
        let n = z - a;
        let start = (splitmix64(h ^ 0xD1C1) % n as u64) as usize;
        let sv = s + self.endpoints;
        for k in 0..n {
            let b = self.dci_b[a + (start + k) % n] as usize;
            let (dir, peer) = if self.lower[b] == sv {
                (2 * b as u32, self.upper[b])
            } else {
                (2 * b as u32 + 1, self.lower[b])
            };
            let y = peer - self.endpoints;
            let tier = self.sw_tier[y as usize] as usize;
            if self.sw_site[y as usize] != site
                || !alive[dir as usize]
                || self.chain[y as usize][tier - 1] != cq[tier - 1]
            {
                continue;
            }
            let base = out.len();
            out.push(dir);
            if self.down(alive, y, leaf_q, cq, out) {
                return true;
            }
            out.truncate(base);
        }
        false
    }

    /// The fixed down path from switch `s` to leaf `leaf_q` (whose chain is `cq`).
    fn down(
        &self,
        alive: &[bool],
        mut s: u32,
        leaf_q: u32,
        cq: &[u32; 4],
        out: &mut Vec<u32>,
    ) -> bool {
        let base = out.len();
        loop {
            let tier = self.sw_tier[s as usize] as usize;
            if tier <= 1 {
                if s == leaf_q {
                    return true;
                }
                out.truncate(base);
                return false;
            }
            let key = cq[tier - 2];
            let (a, z) = (
                self.down_off[s as usize] as usize,
                self.down_off[s as usize + 1] as usize,
            );
            let keys = &self.down_key[a..z];
            let Ok(i) = keys.binary_search(&key) else {
                out.truncate(base);
                return false;
            };
            // Several bundles to the same block: take the first live one.
            let mut i = i;
            while i > 0 && keys[i - 1] == key {
                i -= 1;
            }
            let mut found = NONE;
            while i < keys.len() && keys[i] == key {
                let b = self.down_b[a + i];
                if alive[2 * b as usize + 1] {
                    found = b;
                    break;
                }
                i += 1;
            }
            if found == NONE || out.len() + 2 > MAX_PATH {
                out.truncate(base);
                return false;
            }
            out.push(2 * found + 1);
            s = self.lower[found as usize] - self.endpoints;
        }
    }
}

impl Network {
    /// The network of a built cluster: its scale-out graph and one scale-up switch per
    /// domain.
    pub fn from_cluster(c: &BuiltCluster) -> Network {
        let t = &c.topology;
        let l = &t.links;
        let nb = l.len();
        let acc = c.accelerators as u32;
        let su = &c.scale_up;
        let eff_out = c.fabric.link_efficiency;
        let eff_up = su.collective_efficiency;
        let n = 2 * nb + 2 * acc as usize;
        let mut cap = Vec::with_capacity(n);
        let mut line = Vec::with_capacity(n);
        let mut prop = Vec::with_capacity(n);
        for b in 0..nb {
            let bps = l.capacity_gbps(b) * 1e9 / 8.0;
            for _ in 0..2 {
                line.push(bps);
                cap.push(bps * eff_out);
                prop.push(l.latency_us[b] as f64 * 1e-6);
            }
        }
        let su_bps = su.bandwidth_gbps * 1e9;
        for _ in 0..2 * acc {
            line.push(su_bps);
            cap.push(su_bps * eff_up);
            prop.push(0.0);
        }
        let router = (t.endpoints > 0 && t.tiers > 0).then(|| Router::new(t, c));
        Network {
            cap,
            line,
            prop,
            bundles: nb as u32,
            su: 2 * nb as u32,
            accelerators: acc,
            apd: su.accelerators_per_domain,
            su_lat: su.latency_us * 1e-6,
            issue_lat: [true, false]
                .map(|same| myriad_collective::peer_issue_latency_us(&c.levels, same) * 1e-6),
            in_network_reduction: su.in_network_reduction,
            router,
            qps: c.network.qps_per_connection.max(1),
            custom: false,
        }
    }

    /// A hand-built network of directed links with the given capacities (bytes/s) and
    /// latencies (seconds); flows on it must give explicit paths.
    pub fn custom(capacity: Vec<f64>, latency_s: Vec<f64>) -> Network {
        assert_eq!(capacity.len(), latency_s.len());
        Network {
            line: capacity.clone(),
            cap: capacity,
            prop: latency_s,
            bundles: 0,
            su: 0,
            accelerators: 0,
            apd: 1,
            su_lat: 0.0,
            issue_lat: [0.0; 2],
            in_network_reduction: false,
            router: None,
            qps: 1,
            custom: true,
        }
    }

    /// Directed links.
    pub fn links(&self) -> usize {
        self.cap.len()
    }

    /// Effective capacity of directed link `l`, bytes/s.
    pub fn capacity(&self, l: u32) -> f64 {
        self.cap[l as usize]
    }

    /// Line rate of directed link `l`, bytes/s.
    pub fn line_rate(&self, l: u32) -> f64 {
        self.line[l as usize]
    }

    pub fn accelerators(&self) -> u32 {
        self.accelerators
    }

    pub fn accelerators_per_domain(&self) -> u32 {
        self.apd
    }

    /// NIC port slots per accelerator (planes × NICs × ports it owns; 1 without a
    /// scale-out router).
    pub fn nic_slots(&self) -> u32 {
        self.router.as_ref().map_or(1, |r| r.slots().max(1))
    }

    /// Flows per NIC-to-NIC connection (1 unless the scenario sets
    /// `cluster.scale_out.qps_per_connection`).
    pub fn qps_per_connection(&self) -> u32 {
        self.qps
    }

    /// The same network with `qps` flows per NIC-to-NIC connection.
    pub fn with_qps_per_connection(mut self, qps: u32) -> Network {
        self.qps = qps.max(1);
        self
    }

    /// What directed link `l` is.
    pub fn link_ref(&self, l: u32) -> LinkRef {
        if self.custom {
            LinkRef::Custom(l)
        } else if l < self.su {
            LinkRef::ScaleOut {
                bundle: l / 2,
                up: l.is_multiple_of(2),
            }
        } else {
            LinkRef::ScaleUp {
                accelerator: (l - self.su) / 2,
                out: (l - self.su).is_multiple_of(2),
            }
        }
    }

    /// Directed scale-up link of accelerator `a`: to its domain switch (`out`) or from it.
    pub fn scale_up_link(&self, a: u32, out: bool) -> u32 {
        self.su + 2 * a + (!out) as u32
    }

    /// The directed links of a topology bundle (both directions).
    pub(crate) fn bundle_links(&self, b: u32) -> [u32; 2] {
        [2 * b, 2 * b + 1]
    }

    /// Domain of accelerator `a`.
    #[inline]
    pub fn domain(&self, a: u32) -> u32 {
        a / self.apd.max(1)
    }

    /// What NCCL pays to issue `src`'s message to peer `dst` in an all-to-all, seconds:
    /// the scale-up level's latency for a peer in the same domain, the nearest scale-out
    /// level's (NIC, one switch and its cables) for any other, as the analytical model
    /// charges it (`myriad_collective`'s direct all-to-all). NCCL issues the peers' sends
    /// and receives in turn, [`myriad_collective::P2P_CONCURRENCY`] at a time (its proxy
    /// thread posts each network peer's; the kernel's channels walk their peers), so a
    /// round of all-to-all flows pays `Σ issue / P2P_CONCURRENCY` beyond its slowest
    /// flow's path latency; a farther peer's extra hops are in flight meanwhile, and paid
    /// once by that flow. 0 on a hand-built network.
    pub fn peer_issue_latency(&self, src: u32, dst: u32) -> f64 {
        if self.domain(src) == self.domain(dst) {
            self.issue_lat[0]
        } else {
            self.issue_lat[1]
        }
    }

    /// Route a flow from accelerator `src` to `dst` with ECMP id `flow_id` over the live
    /// links; appends the directed links to `out` and returns the one-way latency, seconds.
    pub(crate) fn route(
        &self,
        alive: &[bool],
        src: u32,
        dst: u32,
        flow_id: u32,
        out: &mut Vec<u32>,
    ) -> Result<f64, NoRoute> {
        out.clear();
        if src == dst {
            return Ok(0.0);
        }
        if src >= self.accelerators || dst >= self.accelerators {
            return Err(NoRoute);
        }
        let su_up = |a: u32| self.su + 2 * a;
        let su_down = |a: u32| self.su + 2 * a + 1;
        let (ds, dd) = (self.domain(src), self.domain(dst));
        if ds == dd {
            let (u, d) = (su_up(src), su_down(dst));
            if !alive[u as usize] || !alive[d as usize] {
                return Err(NoRoute);
            }
            out.extend([u, d]);
            return Ok(self.su_lat);
        }
        let r = self.router.as_ref().ok_or(NoRoute)?;
        let h = flow_hash(src, dst, flow_id);
        let mut lat = 0.0;
        let sender = if r.rail_aligned {
            ds * self.apd + (dst - dd * self.apd)
        } else {
            src
        };
        if sender != src {
            let (u, d) = (su_up(src), su_down(sender));
            if !alive[u as usize] || !alive[d as usize] {
                return Err(NoRoute);
            }
            out.extend([u, d]);
            lat += self.su_lat;
        }
        let base = out.len();
        let k = r.slots();
        if k == 0 {
            return Err(NoRoute);
        }
        // The NIC slot (plane, NIC, port) is the host's choice, not the fabric's: NCCL
        // and RoCE LAG place a connection's channels and queue pairs on the ports in turn,
        // so it is a function of the flow id (the program gives each of a connection's
        // `slots` flows consecutive ids, `program::split_connections`, and an all-to-all
        // pair's flows ids `0..slots`, `PhaseFlows::AllToAll`), offset by a hash of the
        // pair, never a hash of the flow id, which put both of a dual-plane NIC's flows on one
        // plane half the time.
        let k64 = k as u64;
        let s0 = ((flow_id as u64 % k64 + flow_hash(src, dst, 0) % k64) % k64) as u32;
        for i in 0..k {
            let slot = (s0 + i) % k;
            let (p, q) = (r.port(sender, slot), r.port(dst, slot));
            out.truncate(base);
            if r.ports(alive, p, q, h, out).is_ok() {
                let net = &out[base..];
                let prop: f64 = net.iter().map(|&l| self.prop[l as usize]).sum();
                let hops = net.len().saturating_sub(1) as f64;
                return Ok(lat + r.base_lat + prop + hops * r.switch_lat);
            }
        }
        out.clear();
        Err(NoRoute)
    }

    /// Human-readable name of directed link `l`: `leaf 3 -> spine 40 (link 1056, 2 x 400G)`.
    /// Switches are named by tier and global switch index (the `switch` of a fault), bundles
    /// by topology link index (the `link` of a fault).
    pub fn describe(&self, l: u32, topo: Option<&Topology>) -> String {
        match self.link_ref(l) {
            LinkRef::Custom(i) => format!("link {i}"),
            LinkRef::ScaleUp { accelerator, out } => {
                let d = self.domain(accelerator);
                if out {
                    format!("accel {accelerator} -> scale-up switch {d}")
                } else {
                    format!("scale-up switch {d} -> accel {accelerator}")
                }
            }
            LinkRef::ScaleOut { bundle, up } => {
                let Some(t) = topo else {
                    return format!("link {bundle} {}", if up { "up" } else { "down" });
                };
                let b = bundle as usize;
                let name = |v: u32| -> String {
                    if v < t.endpoints {
                        match t.vertex(v) {
                            myriad_cluster::Vertex::Port {
                                node,
                                plane,
                                nic,
                                port,
                            } => {
                                let mut s = format!("node {node} nic {nic}");
                                if t.planes > 1 {
                                    s += &format!(" plane {plane}");
                                }
                                if t.ports_per_nic > 1 {
                                    s += &format!(" port {port}");
                                }
                                s
                            }
                            _ => unreachable!(),
                        }
                    } else {
                        let s = v - t.endpoints;
                        let mut n = format!(
                            "{} {}",
                            myriad_cluster::tier_name(t.switches.tier[s as usize] as u32),
                            s
                        );
                        if t.sites > 1 {
                            n += &format!(" (site {})", t.switches.site[s as usize]);
                        }
                        n
                    }
                };
                let (a, z) = (t.links.lower[b], t.links.upper[b]);
                let (from, to) = if up { (a, z) } else { (z, a) };
                format!(
                    "{} -> {} (link {bundle}, {} x {}G)",
                    name(from),
                    name(to),
                    t.links.cables[b],
                    myriad_cluster::fmt_num(t.links.gbps[b] as f64)
                )
            }
        }
    }

    /// Directed links of the NIC port vertex `v` (both directions).
    pub(crate) fn nic_links(&self, v: u32) -> Option<[u32; 2]> {
        let r = self.router.as_ref()?;
        let b = *r.nic_b.get(v as usize)?;
        (b != NONE).then(|| self.bundle_links(b))
    }

    /// Directed links touching switch `s` (both directions of each bundle).
    pub(crate) fn switch_links(&self, s: u32) -> Vec<u32> {
        let Some(r) = self.router.as_ref() else {
            return Vec::new();
        };
        let v = s + r.endpoints;
        let mut out = Vec::new();
        for b in 0..r.lower.len() {
            if r.lower[b] == v || r.upper[b] == v {
                out.extend(self.bundle_links(b as u32));
            }
        }
        out
    }

    /// NIC port vertices of the nodes of domain `d`.
    pub(crate) fn domain_ports(&self, d: u32) -> std::ops::Range<u32> {
        match self.router.as_ref() {
            Some(r) => {
                let nodes_per_domain = self.apd / r.apn.max(1);
                let first = d * nodes_per_domain * r.eppn;
                first..first + nodes_per_domain * r.eppn
            }
            None => 0..0,
        }
    }

    /// NIC port vertices in the topology (`0..nic_ports()`; 0 for custom networks).
    pub(crate) fn nic_ports(&self) -> u32 {
        self.router.as_ref().map_or(0, |r| r.endpoints)
    }

    /// Switches in the topology.
    pub(crate) fn switches(&self) -> u32 {
        self.router
            .as_ref()
            .map(|r| r.sw_tier.len() as u32)
            .unwrap_or(0)
    }

    /// The uplink-choice model (None for custom networks).
    pub fn routing(&self) -> Option<Routing> {
        self.router.as_ref().map(|r| r.routing)
    }

    /// Use another uplink-choice model than the fabric's default.
    pub fn set_routing(&mut self, routing: Routing) {
        if let Some(r) = self.router.as_mut() {
            r.routing = routing;
        }
    }

    pub(crate) fn is_custom(&self) -> bool {
        self.custom
    }
}
