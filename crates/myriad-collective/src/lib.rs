//! Collective algorithms (ring, tree, NVLS, hierarchical, direct all-to-all) timed
//! analytically on the cluster hierarchy (`myriad_cluster::Level`).
//!
//! Conventions follow nccl-tests PERFORMANCE.md: `bytes` is the per-rank buffer size as
//! nccl-tests counts it; algbw = bytes / time; busbw = algbw × the op's factor
//! (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, all-to-all (n-1)/n,
//! broadcast and send-recv 1).
//!
//! Invariants: pure functions, no allocation on the timing path; time is monotone
//! non-decreasing in bytes and in group size for a fixed placement shape.

use myriad_cluster::Level;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    SendRecv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    Auto,
    Ring,
    Tree,
    Nvls,
    Hierarchical,
    Direct,
}

/// How a group of ranks lies on the hierarchy. `spans[i]` is the number of distinct
/// level-(i-1) units (accelerators for i = 0) that the group touches inside one level-i
/// unit; `spans.len() == levels.len()` and the product of spans is the group size.
/// Example on HGX H100 (levels: domain 8, island 1024, cluster 4096): a TP group of 8 is
/// `[8, 1, 1]`; the DP group of a TP=8 job on 4096 GPUs is `[1, 128, 4]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupSpan {
    pub spans: Vec<u64>,
}

impl GroupSpan {
    pub fn size(&self) -> u64 {
        self.spans.iter().product()
    }
}

/// The result of timing one collective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CollectiveTime {
    pub time_s: f64,
    /// The algorithm used (resolved when `Auto`).
    pub algorithm: Algorithm,
    /// GB/s (1e9 bytes/s).
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}
