//! The step model's expert-parallel dispatch and combine against the published benchmarks
//! of the kernels Megatron-Core's `flex` dispatcher calls: DeepEP's normal kernels on H800
//! (within one 8-GPU node over NVLink, and across 2-8 nodes over 400 Gb/s InfiniBand) and
//! NVIDIA's HybridEP on B200 and GB200 (within the NVLink domain). Neither was used to set
//! a parameter.
//!
//! Both benchmarks count the bytes a rank receives as one row per token and rank that holds
//! any of the token's experts (DeepEP `tests/test_intranode.py`: `recv_x.numel() * 2`;
//! HybridEP `tests/test_hybrid_ep.py`: `dispatched_hidden.numel() * 2`), and DeepEP's
//! NVLink figure, 153 GB/s, is within a few percent of what the H800's NVLink carries
//! (about 160 GB/s): the kernels move each token once per rank, not once per expert, which
//! is what [`myriad_train::step::ep_copies`] says. The measured time of one call is those
//! bytes over the published bandwidth; the model's is [`myriad_train::step::ep_exchange`].

use myriad_scenario::parse_scenario;
use myriad_train::step::{domain_hit, ep_copies, ep_exchange};

/// One published benchmark row: `ranks` EP ranks of `accelerator` in nodes of `per_node`
/// (the scale-up domain), 4,096 tokens of hidden size 7,168 per rank, top-8 routing over
/// `experts` experts (`groups`: DeepEP's node-limited routing, one group per node, a token
/// drawing from `min(nodes, 4)` of them), the bytes per element of the exchange and the
/// published bandwidth (GB/s) of the bottleneck link.
struct Row {
    name: &'static str,
    accelerator: &'static str,
    per_node: u64,
    ranks: u64,
    experts: u32,
    groups: bool,
    dispatcher: &'static str,
    elem: f64,
    gbps: f64,
    /// The published figure counts bytes over InfiniBand: one row per token and node
    /// holding any of its experts, the token's own node included (DeepEP
    /// `tests/test_internode.py`, `num_rdma_token_sent`).
    rdma: bool,
}

const TOKENS: f64 = 4096.0;
const HIDDEN: f64 = 7168.0;
/// DeepEP's fp8 dispatch: one byte per element plus a 4-byte scale per 128
/// (`fp8_factor = (1 + 4 / 128) / 2` of the bf16 bytes).
const FP8: f64 = 1.0 + 4.0 / 128.0;
const BF16: f64 = 2.0;

/// DeepEP README (deepseek-ai/DeepEP, normal kernels, "H800 (~160 GB/s NVLink maximum
/// bandwidth), each connected to a CX7 InfiniBand 400 Gb/s RDMA network card (~50 GB/s
/// maximum bandwidth)", DeepSeek-V3/R1 pretraining setting: 4,096 tokens per batch, 7,168
/// hidden, top-4 groups, top-8 experts, FP8 dispatch and BF16 combine), bottleneck
/// bandwidth of dispatch / combine: intranode EP 8 153 / 158 GB/s (NVLink); internode EP 16
/// 43 / 43, EP 32 58 / 57, EP 64 51 / 50 GB/s (RDMA); timed through the Python call
/// (`bench(lambda: buffer.dispatch(...))`). Its intranode test routes plain top-8 over 256
/// experts (`tests/test_intranode.py` @59b6bedc), the internode one within `min(nodes, 4)`
/// node groups. HybridEP (DeepEP `hybrid-ep` branch, `Hybrid-EP_Intra-node_Implementation.md`,
/// NVIDIA): 4,096 tokens, hidden 7,168, top-8, uniform random router, 8 local experts per
/// rank, BF16 dispatch and combine with 16 SMs, kernel time: B200 EP 8 734.95 / 673.84 GB/s;
/// GB200 EP 8 750.15 / 684.27, EP 16 661.93 / 600.75, EP 24 637.80 / 565.53, EP 32 629.79 /
/// 547.25, EP 36 612.85 / 543.27 GB/s. Its "Torch API" figures (B200 535.94 / 530.86,
/// GB200 550 down to 418 GB/s) add 0.15-0.24 ms of host time a call in a loop where the GPU
/// waits for it; HybridEP needs no host synchronisation, so in a training step that host
/// work runs ahead behind the GPU's other kernels, and the kernel figures are the ones to
/// meet (the model is 0.61-0.72 of the Torch API times).
fn rows() -> Vec<Row> {
    let mut v = Vec::new();
    let deepep = |name, ranks: u64, elem, gbps, rdma| Row {
        name,
        accelerator: "h800",
        per_node: 8,
        ranks,
        experts: 256,
        groups: ranks > 8,
        dispatcher: "deepep",
        elem,
        gbps,
        rdma,
    };
    v.push(deepep(
        "DeepEP intranode EP8 dispatch fp8",
        8,
        FP8,
        153.0,
        false,
    ));
    v.push(deepep(
        "DeepEP intranode EP8 combine bf16",
        8,
        BF16,
        158.0,
        false,
    ));
    for (ranks, d, c) in [(16, 43.0, 43.0), (32, 58.0, 57.0), (64, 51.0, 50.0)] {
        v.push(deepep("DeepEP internode dispatch fp8", ranks, FP8, d, true));
        v.push(deepep(
            "DeepEP internode combine bf16",
            ranks,
            BF16,
            c,
            true,
        ));
    }
    let hybrid = |name, accelerator, per_node, ranks: u64, gbps| Row {
        name,
        accelerator,
        per_node,
        ranks,
        experts: 8 * ranks as u32,
        groups: false,
        dispatcher: "hybridep",
        elem: BF16,
        gbps,
        rdma: false,
    };
    v.push(hybrid("HybridEP B200 dispatch bf16", "b200", 8, 8, 734.95));
    v.push(hybrid("HybridEP B200 combine bf16", "b200", 8, 8, 673.84));
    for (ranks, d, c) in [
        (8, 750.15, 684.27),
        (16, 661.93, 600.75),
        (24, 637.80, 565.53),
        (32, 629.79, 547.25),
        (36, 612.85, 543.27),
    ] {
        v.push(hybrid(
            "HybridEP GB200 dispatch bf16",
            "gb200",
            72,
            ranks,
            d,
        ));
        v.push(hybrid("HybridEP GB200 combine bf16", "gb200", 72, ranks, c));
    }
    v
}

/// Model time / measured time of one call of `r`, and the copies of a token the model
/// moves within the NVLink domain over its top-k.
fn ratio(r: &Row) -> (f64, f64) {
    let nodes = (r.ranks / r.per_node.min(r.ranks)).max(1);
    // Four NVL72 racks hold every EP size of the GB200 table as a divisor of DP.
    let count = if r.per_node == 72 {
        288
    } else {
        r.ranks.max(r.per_node)
    };
    let cluster = if r.per_node == 72 {
        format!("{{accelerator: {}, count: {count}}}", r.accelerator)
    } else {
        format!(
            "{{accelerator: {}, count: {count}, scale_out: {{fabric: infiniband-ndr}}}}",
            r.accelerator
        )
    };
    let text = format!(
        "format: myriad/1\ncluster: {cluster}\nmodel: {{preset: deepseek-v3}}\ntraining: {{tp: 1, pp: 1, dp: {count}, ep: {}, global_batch: {count}, micro_batch: 1, precision: bf16, ep_dispatcher: {}, recompute: full, distributed_optimizer: true}}\n",
        r.ranks, r.dispatcher
    );
    let cat = myriad_catalog::catalog();
    let s = parse_scenario("t.yaml", &text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let mut m = s.model.as_ref().unwrap().resolve(cat).unwrap();
    let moe = m.moe.as_mut().unwrap();
    moe.experts = r.experts;
    moe.top_k = 8;
    if r.groups {
        moe.router_groups = Some(nodes as u32);
        moe.router_group_topk = Some(nodes.min(4) as u32);
    } else {
        moe.router_groups = None;
        moe.router_group_topk = None;
    }
    let est = myriad_train::train(s.training.as_ref().unwrap(), &m, &c, count).unwrap();
    let moe = m.moe.as_ref().unwrap();
    let model = ep_exchange(&m, &est.plan, &c, TOKENS * HIDDEN * r.elem);
    // Rows a rank receives (NVLink figures) or sends to nodes (InfiniBand figures).
    let rows = if r.rdma {
        TOKENS * nodes as f64 * domain_hit(moe, nodes)
    } else {
        TOKENS * ep_copies(moe, est.plan.ep_dispatcher, r.ranks)
    };
    let measured = rows * HIDDEN * r.elem / (r.gbps * 1e9);
    let copies = ep_copies(moe, est.plan.ep_dispatcher, r.ranks) / moe.top_k as f64;
    (model / measured, copies)
}

#[test]
fn ep_dispatch_and_combine_match_deepep_and_hybridep_benchmarks() {
    for r in rows() {
        let (q, copies) = ratio(&r);
        eprintln!(
            "{:34} EP {:3}: model / measured {:.3} (copies {:.2} of top-k)",
            r.name, r.ranks, q, copies
        );
        // Within −25…+15% of every published call. The model's links run at their
        // catalog efficiency; the benchmarks' kernels (24 SMs for DeepEP's, 16 for
        // HybridEP's) fall short of them by up to a quarter.
        assert!(
            (0.75..1.15).contains(&q),
            "{} EP {}: {q:.3}",
            r.name,
            r.ranks
        );
        // Moving every top-k copy over NVLink (Megatron's all-to-all dispatcher) instead
        // would put the 8-rank rows 1.3-1.6x over the benchmarks: the kernels send a token
        // once to each rank holding any of its experts (5.3 ranks of 8 on average here).
        if !r.rdma && r.ranks == 8 {
            assert!(copies < 0.7, "{}: {copies:.2}", r.name);
            assert!(q / copies > 1.2, "{}: {:.3}", r.name, q / copies);
        }
    }
}
