//! Hand-checked arithmetic: parameters, FLOPs and activation memory.
use myriad_model::{Mla, Moe, Recompute, Shard, Transformer};

fn gpt(layers: u32, h: u32, heads: u32, seq: u32) -> Transformer {
    Transformer {
        name: "gpt".into(),
        layers,
        hidden: h,
        ffn_hidden: 4 * h,
        heads,
        kv_heads: heads,
        head_dim: None,
        vocab: 51200,
        seq_len: seq,
        gated_mlp: false,
        tied_embeddings: true,
        moe: None,
        mla: None,
        sliding_window: None,
        attention_sinks: false,
        mtp_layers: 0,
    }
}

#[test]
fn gpt3_175b_params_match_megatron_formula() {
    // Megatron SC'21: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) = 174.6B for GPT-3; that
    // counts biases (13/(12h)) and learned position embeddings (s·h), which we do not:
    // 12·96·12288² + 51200·12288 (tied) + norms 2·12288·96 + 12288
    let m = gpt(96, 12288, 96, 2048);
    let p = m.params();
    let expect =
        12.0 * 96.0 * 12288f64.powi(2) + 51200.0 * 12288.0 + 2.0 * 12288.0 * 96.0 + 12288.0;
    assert_eq!(p.total, expect);
    assert!((p.total / 174.6e9 - 1.0).abs() < 0.005, "{}", p.total);
    assert_eq!(p.total, p.active);
}

#[test]
fn gpt_gemm_flops_per_token_are_2x_weights_plus_logits() {
    // Forward GEMM FLOPs per token = 2 × (12 h² per layer × l + V h).
    let m = gpt(24, 2304, 24, 2048);
    let f = m.flops_per_sequence();
    let per_token = 2.0 * (12.0 * 2304f64.powi(2) * 24.0 + 51200.0 * 2304.0);
    assert!((f.gemm / 2048.0 / per_token - 1.0).abs() < 1e-12);
    // Causal attention: per layer 2·s²·h (QK^T and AV, each 2·s²·h, halved by the mask).
    let attn = 2.0 * 2048f64.powi(2) * 2304.0 * 24.0;
    assert!((f.attention / attn - 1.0).abs() < 1e-12);
    assert_eq!(f.training, 3.0 * f.forward);
}

#[test]
fn megatron_eq3_within_attention_convention() {
    // Megatron eq. (3) without recompute: 72 B s l h² (1 + s/(6h) + V/(12 l h)) counts full
    // (non-causal) attention; ours counts the causal half, so ours = eq3 - 6 B s² l h.
    let (l, h, s, v) = (96.0, 12288.0, 2048.0, 51200.0);
    let eq3 = 72.0 * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
    let ours = gpt(96, 12288, 96, 2048).flops_per_sequence().training;
    let expect = eq3 - 6.0 * s * s * l * h;
    assert!((ours / expect - 1.0).abs() < 1e-9, "{ours} vs {expect}");
}

#[test]
fn gqa_swiglu_llama3_70b_params() {
    // Llama 3 70B: 80 layers, h 8192, ffn 28672, 64 heads, 8 KV heads, vocab 128256, untied.
    // Published: 70.6B.
    let m = Transformer {
        name: "llama3-70b".into(),
        layers: 80,
        hidden: 8192,
        ffn_hidden: 28672,
        heads: 64,
        kv_heads: 8,
        head_dim: None,
        vocab: 128256,
        seq_len: 8192,
        gated_mlp: true,
        tied_embeddings: false,
        moe: None,
        mla: None,
        sliding_window: None,
        attention_sinks: false,
        mtp_layers: 0,
    };
    let p = m.params();
    // attention: q 8192², k,v 8192·1024 each, o 8192²
    assert_eq!(
        p.attention_per_layer,
        2.0 * 8192f64.powi(2) + 2.0 * 8192.0 * 1024.0
    );
    assert_eq!(p.dense_mlp_per_layer, 3.0 * 8192.0 * 28672.0);
    assert!((p.total / 70.55e9 - 1.0).abs() < 0.005, "{}", p.total);
}

/// DeepSeek-V3's architecture (report §4.2, config.json) with `mtp` multi-token-prediction
/// modules.
fn dsv3(layers: u32, mtp: u32) -> Transformer {
    Transformer {
        name: "deepseek-v3".into(),
        layers,
        hidden: 7168,
        ffn_hidden: 18432,
        heads: 128,
        kv_heads: 128,
        head_dim: None,
        vocab: 129280,
        seq_len: 4096,
        gated_mlp: true,
        tied_embeddings: false,
        moe: Some(Moe {
            experts: 256,
            top_k: 8,
            expert_ffn_hidden: 2048,
            shared_experts: 1,
            dense_layers: 3,
            dense_ffn_hidden: Some(18432),
            every: None,
            router_groups: None,
            router_group_topk: None,
        }),
        mla: Some(Mla {
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        }),
        sliding_window: None,
        attention_sinks: false,
        mtp_layers: mtp,
    }
}

#[test]
fn deepseek_v3_total_and_active_params() {
    // DeepSeek-V3: 671B total, 37B active for the main model (report §4.2; the Hugging Face
    // checkpoint's 685B adds the 14B MTP module). Within 3% and 5%.
    let p = dsv3(61, 0).params();
    assert!((p.total / 671e9 - 1.0).abs() < 0.03, "total {}", p.total);
    assert!((p.active / 37e9 - 1.0).abs() < 0.05, "active {}", p.active);
    assert_eq!(p.mtp, 0.0);
}

#[test]
fn mtp_module_is_a_layer_a_projection_and_the_head_again() {
    let (m0, m1) = (dsv3(61, 0), dsv3(61, 1));
    let (p0, p1) = (m0.params(), m1.params());
    let h = 7168.0_f64;
    // By hand: one MoE layer (MLA attention, two norms, 256 routed and 1 shared expert of
    // 3 x 7168 x 2048, the router 7168 x 256), eh_proj 2h x h and three norms.
    let attn = p0.attention_per_layer;
    let expert = 3.0 * h * 2048.0;
    let layer = attn + 2.0 * h + 257.0 * expert + h * 256.0;
    let module = layer + 2.0 * h * h + 3.0 * h;
    assert_eq!(p1.mtp, module);
    assert_eq!(p1.mtp_experts, 256.0 * expert);
    assert_eq!(p1.total - p0.total, module);
    // DeepSeek: the MTP module is 14B with the embedding and output head it shares
    // (2 x 129280 x 7168 = 1.85B); without them 12.1B. Within 5%.
    let shared = 2.0 * 129280.0 * h;
    assert!((p1.mtp / (14e9 - shared) - 1.0).abs() < 0.05, "{}", p1.mtp);
    // FLOPs: the module costs what one more MoE layer costs, plus its projection
    // (2 x 2h x h per token) and the output head again (2 x h x vocab per token).
    let s = 4096.0;
    let more_layer = dsv3(62, 0).flops_per_sequence().forward - m0.flops_per_sequence().forward;
    let extra = m1.flops_per_sequence().forward - m0.flops_per_sequence().forward;
    let expect = more_layer + s * 4.0 * h * h + s * 2.0 * h * 129280.0;
    assert!((extra / expect - 1.0).abs() < 1e-12, "{extra} {expect}");
}

#[test]
fn korthikanti_activation_memory_gpt() {
    // Korthikanti Table 2 with SP and no recompute: 34 s b h / t per layer (+5as²b/t for the
    // unfused scores); fused attention and no dropout masks leave 32 s b h / t, plus the
    // fp32 softmax statistics 4·a·s·b/t.
    let m = gpt(96, 12288, 96, 2048);
    let s = Shard {
        tp: 8,
        cp: 1,
        ep: 1,
        etp: 1,
        sp: true,
        micro_batch: 1,
        fused_attention: true,
        cross_entropy: myriad_model::CrossEntropy::Fused,
        cp_comm: myriad_model::CpComm::P2p,
    };
    let a = m.activation_memory(&s, Recompute::None, 2.0);
    let sbh = 2048.0 * 12288.0;
    let expect = 32.0 * sbh / 8.0 + 4.0 * 96.0 * 2048.0 / 8.0;
    assert!(
        (a.dense_layer / expect - 1.0).abs() < 1e-12,
        "{} vs {}",
        a.dense_layer,
        expect
    );
    // Full recompute keeps the layer input: 2 s b h / t with SP.
    let f = m.activation_memory(&s, Recompute::Full, 2.0);
    assert_eq!(f.dense_layer, 2.0 * sbh / 8.0);
    // Without SP the norm and GEMM inputs are replicated across TP.
    let nosp = Shard { sp: false, ..s };
    assert!(m.activation_memory(&nosp, Recompute::None, 2.0).dense_layer > a.dense_layer);
    // fp8 training saves the GEMM inputs in fp8: QKV input h, projection input h, MLP
    // input h and down-projection input 4h are 1 byte instead of 2 (7 s b h / t less).
    let f8 = m.activation_memory(&s, Recompute::None, 1.0);
    assert!((a.dense_layer - f8.dense_layer - 7.0 * sbh / 8.0).abs() < 1.0);
    // Unfused attention adds Korthikanti's 5·a·s²·b/t, which selective recompute removes.
    let unfused = Shard {
        fused_attention: false,
        ..s
    };
    let u = m.activation_memory(&unfused, Recompute::None, 2.0);
    assert_eq!(
        u.dense_layer - a.dense_layer,
        5.0 * 96.0 * 2048.0 * 2048.0 / 8.0
    );
    assert_eq!(
        m.activation_memory(&unfused, Recompute::Selective, 2.0)
            .dense_layer,
        a.dense_layer
    );
}

#[test]
fn sharding_conserves_flops() {
    // TP, CP and EP split the same work: the sum over ranks of a layer's FLOPs is
    // independent of the split (MoE: balanced routing).
    let mut m = gpt(4, 4096, 32, 4096);
    m.gated_mlp = true;
    m.kv_heads = 8;
    m.moe = Some(Moe {
        experts: 64,
        top_k: 4,
        expert_ffn_hidden: 1024,
        shared_experts: 1,
        dense_layers: 1,
        dense_ffn_hidden: None,
        every: None,
        router_groups: None,
        router_group_topk: None,
    });
    let total = |s: Shard, layer: u32| {
        let mut ops = Vec::new();
        m.layer_ops(layer, &s, &mut ops);
        let router: f64 = ops
            .iter()
            .filter(|o| o.name == "router")
            .map(|o| o.flops())
            .sum();
        let rest: f64 = ops
            .iter()
            .filter(|o| o.name != "router")
            .map(|o| o.flops())
            .sum();
        // Ranks of a stage: tp × cp × (dp carved into ep). Without SP every TP rank routes
        // all its tokens (duplicated work, as in Megatron); with SP each routes its share.
        let router_ranks = if s.sp { s.tp * s.cp } else { s.cp };
        rest * (s.tp * s.cp) as f64 + router * router_ranks as f64
    };
    for layer in [0, 3] {
        let base = total(Shard::single(2), layer);
        for (tp, cp, ep, etp, sp) in [(2, 1, 1, 2, false), (4, 2, 8, 1, true), (8, 1, 64, 1, true)]
        {
            let s = Shard {
                tp,
                cp,
                ep,
                etp,
                sp,
                micro_batch: 2,
                fused_attention: true,
                cross_entropy: myriad_model::CrossEntropy::Fused,
                cp_comm: myriad_model::CpComm::P2p,
            };
            let t = total(s, layer);
            assert!(
                (t / base - 1.0).abs() < 1e-9,
                "layer {layer} tp{tp} cp{cp} ep{ep}: {t} vs {base}"
            );
        }
    }
}

#[test]
fn unfused_attention_computes_the_full_square() {
    // The unfused core multiplies the whole s×s score matrix: twice the causal FLOPs.
    let m = gpt(2, 2048, 16, 2048);
    let flops = |fused| {
        let mut ops = Vec::new();
        m.attention_ops(
            &Shard {
                fused_attention: fused,
                ..Shard::single(1)
            },
            &mut ops,
        );
        ops.iter().map(|o| o.flops()).sum::<f64>()
    };
    let proj = 2.0 * 2048.0 * 4.0 * 2048.0 * 2048.0;
    let causal = 2.0 * 2048f64.powi(2) * 2048.0;
    assert!((flops(true) - proj - causal).abs() < 1.0);
    assert!((flops(false) - proj - 2.0 * causal).abs() < 1.0);
}

#[test]
fn tensors_per_layer_follow_the_module_tree() {
    // GPT-style: QKV, projection, fc1, fc2 with a bias each, two LayerNorms (weight, bias).
    let g = gpt(96, 12288, 96, 2048);
    let (t, moe) = g.tensors_per_layer(1);
    assert_eq!((t.matrices, t.vectors), (4.0, 8.0));
    assert_eq!(moe.experts, 0.0);
    // Llama-style (gated MLP, gate and up fused): no biases, two RMSNorm weights.
    let mut l = gpt(80, 8192, 64, 8192);
    l.gated_mlp = true;
    l.moe = Some(Moe {
        experts: 64,
        top_k: 8,
        expert_ffn_hidden: 2048,
        shared_experts: 1,
        dense_layers: 0,
        dense_ffn_hidden: None,
        every: None,
        router_groups: None,
        router_group_topk: None,
    });
    let (t, moe) = l.tensors_per_layer(8);
    assert_eq!((t.matrices, t.vectors), (4.0, 2.0));
    // attention 2 + shared expert 2 + router 1; 64 / 8 experts of 2 matrices on one rank.
    assert_eq!((moe.dense.matrices, moe.dense.vectors), (5.0, 2.0));
    assert_eq!(moe.experts, 16.0);
}

#[test]
fn cross_entropy_moves_forty_bytes_per_logit_and_splits_over_tp() {
    // Megatron-Core's fused vocab-parallel cross-entropy, counted by hand from its source:
    // forward cast+max (2 read, 4 write), exp in place (8), row sum (4), divide in place (8)
    // = 26 bytes per logit; backward scale in place (8) and cast to bf16 (4 read, 2 write)
    // = 14. Llama 3 8B, 8192 tokens, vocab 128256: 26 · 8192 · 128256 = 27.3 GB forward.
    let mut m = gpt(1, 4096, 32, 8192);
    m.vocab = 128_256;
    let bytes = |tp: u32| {
        let mut ops = Vec::new();
        let s = Shard {
            tp,
            sp: tp > 1,
            ..Shard::single(1)
        };
        m.head_ops(&s, &mut ops);
        let ce = ops.iter().find(|o| o.name == "cross_entropy").unwrap();
        match ce.kind {
            myriad_model::OpKind::Memory { bytes, backward } => (bytes, backward),
            _ => panic!("cross-entropy is memory-bound"),
        }
    };
    let (f, b) = bytes(1);
    assert!((f - 27.317e9).abs() < 0.01e9, "forward {f}");
    assert!((b - 14.709e9).abs() < 0.01e9, "backward {b}");
    // Vocabulary-parallel: each of 4 TP ranks handles a quarter of the logits.
    let (f4, b4) = bytes(4);
    assert!((f4 * 4.0 / f - 1.0).abs() < 1e-12 && (b4 * 4.0 / b - 1.0).abs() < 1e-12);
}

#[test]
fn cross_entropy_kernels_order_by_the_passes_they_make() {
    // Transformer Engine's online softmax reads the bf16 logits once forward and once
    // backward (6 bytes per logit); Megatron-Core's fused path keeps an fp32 copy (40);
    // the unfused one adds a max pass and a separate subtraction (52).
    use myriad_model::CrossEntropy;
    let total = |k: CrossEntropy| {
        let (f, b) = k.bytes_per_logit();
        f + b
    };
    assert_eq!(total(CrossEntropy::Te), 6.0);
    assert_eq!(total(CrossEntropy::Fused), 40.0);
    assert_eq!(total(CrossEntropy::Unfused), 52.0);
    // The op the step model times carries the kernel's count.
    let mut m = gpt(1, 4096, 32, 4096);
    m.vocab = 100_000;
    for k in [CrossEntropy::Te, CrossEntropy::Fused, CrossEntropy::Unfused] {
        let mut ops = Vec::new();
        let s = Shard {
            cross_entropy: k,
            ..Shard::single(1)
        };
        m.head_ops(&s, &mut ops);
        let ce = ops.iter().find(|o| o.name == "cross_entropy").unwrap();
        let myriad_model::OpKind::Memory { bytes, backward } = ce.kind else {
            panic!("memory-bound")
        };
        assert!(((bytes + backward) / (4096.0 * 100_000.0) - total(k)).abs() < 1e-9);
        // What the loss keeps for backward: the fp32 softmax and the bf16 logits, or for
        // Transformer Engine's kernel only the bf16 logits it overwrites with the gradient.
        let head = m.activation_memory(&s, Recompute::None, 2.0).head;
        let per_logit = if k == CrossEntropy::Te { 2.0 } else { 6.0 };
        assert_eq!(head, 4096.0 * 100_000.0 * per_logit);
    }
}

#[test]
fn zero_sized_dimensions_are_named_not_computed() {
    // A zero head dimension used to give NaN step times downstream; every size is checked.
    let ok = gpt(24, 2304, 24, 2048);
    assert_eq!(ok.check(), Ok(()));
    let m = Transformer {
        head_dim: Some(0),
        ..ok.clone()
    };
    assert_eq!(m.check().unwrap_err(), "head_dim: must be positive, got 0");
    let m = Transformer {
        moe: Some(Moe::routed(8, 2, 0)),
        ..ok.clone()
    };
    assert_eq!(
        m.check().unwrap_err(),
        "moe.expert_ffn_hidden: must be positive, got 0"
    );
    let m = Transformer {
        mla: Some(Mla {
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 0,
            v_head_dim: 128,
        }),
        ..ok
    };
    assert_eq!(
        m.check().unwrap_err(),
        "mla.qk_rope_head_dim: must be positive, got 0"
    );
}

#[test]
fn context_parallel_ring_merges_partial_attention_results() {
    // Llama-3-8B-like: 32 heads, 8 KV heads of 128, 8192 tokens, CP 2 and 4, TP 1. Each
    // rank holds 8192/cp queries; the forward rescales the first KV block's output into
    // `out` (read + write) and adds every later one (read both, write); the backward does
    // the same for dQ and adds into the travelling dK, dV at each later step.
    let mut m = gpt(2, 4096, 32, 8192);
    m.kv_heads = 8;
    let merge = |cp: u32| {
        let mut ops = Vec::new();
        m.attention_ops(
            &Shard {
                cp,
                fused_attention: true,
                ..Shard::single(1)
            },
            &mut ops,
        );
        ops.iter().find(|o| o.name == "cp_merge").map(|o| o.kind)
    };
    assert_eq!(merge(1), None, "no ring, nothing to merge");
    // Gathered keys and values: one attention kernel, nothing to merge.
    let mut ops = Vec::new();
    m.attention_ops(
        &Shard {
            cp: 4,
            cp_comm: myriad_model::CpComm::AllGather,
            ..Shard::single(1)
        },
        &mut ops,
    );
    assert!(ops.iter().all(|o| o.name != "cp_merge"));
    for cp in [2u32, 4] {
        let t = 8192.0 / cp as f64;
        let q = t * 32.0 * 128.0 * 2.0; // bf16 output (and dQ) of the rank
        let kv = t * 8.0 * 256.0 * 2.0; // bf16 K and V
        let steps = cp as f64 - 1.0;
        let Some(myriad_model::OpKind::Memory { bytes, backward }) = merge(cp) else {
            panic!("cp {cp}: no merge op");
        };
        assert_eq!(bytes, q * (2.0 + 3.0 * steps), "cp {cp} forward");
        assert_eq!(backward, bytes + 3.0 * kv * steps, "cp {cp} backward");
    }
    // CP 2 for this layer: 16.8 M output elements, 5 passes forward = 168 MB.
    let Some(myriad_model::OpKind::Memory { bytes, .. }) = merge(2) else {
        unreachable!()
    };
    assert!((bytes / 1e6 - 167.77).abs() < 0.01, "{bytes}");
}

#[test]
fn sliding_window_pairs_and_layers_by_hand() {
    use myriad_model::SlidingWindow;
    // gpt-oss: 128-token band. Queries 0..127 attend to 1..128 keys, every later one to
    // 128: 128·4096 − 128²/2 = 516,096 pairs of the 4096² square = 0.030762.
    let w = SlidingWindow {
        window: 128,
        full_every: Some(2),
        chunked: false,
    };
    assert!((w.causal_fraction(4096.0) - 516_096.0 / 16_777_216.0).abs() < 1e-12);
    // A window as long as the sequence is plain causal attention.
    assert_eq!(w.causal_fraction(128.0), 0.5);
    assert_eq!(w.causal_fraction(100.0), 0.5);
    // full_every 2: layers 0, 2, 4, ... windowed, 1, 3, 5, ... full.
    assert!(w.windows_layer(0) && !w.windows_layer(1) && w.windows_layer(34));
    // Gemma 3's five local layers to one global; Mistral's every layer.
    let gemma = SlidingWindow {
        window: 1024,
        full_every: Some(6),
        chunked: false,
    };
    let all = SlidingWindow {
        window: 4096,
        full_every: None,
        chunked: false,
    };
    let mut m = gpt(12, 1024, 16, 8192);
    m.sliding_window = Some(gemma);
    assert_eq!(m.windowed_layers(), 10);
    m.sliding_window = Some(all);
    assert_eq!(m.windowed_layers(), 12);
}

#[test]
fn sliding_window_cuts_attention_flops_only() {
    // gpt-oss-120b's attention (64 query heads of 64, 8 KV heads, 36 layers), dense MLP.
    let mut oss = gpt(36, 2880, 64, 4096);
    oss.head_dim = Some(64);
    oss.kv_heads = 8;
    let w = myriad_model::SlidingWindow {
        window: 128,
        full_every: Some(2),
        chunked: false,
    };
    oss.sliding_window = Some(w);
    assert_eq!(oss.windowed_layers(), 18);
    let mut full = oss.clone();
    full.sliding_window = None;
    let (a, b) = (oss.flops_per_sequence(), full.flops_per_sequence());
    // GEMMs untouched; attention: half the layers full (1/2 of the square), half banded.
    assert_eq!(a.gemm, b.gemm);
    let expect = b.attention * (0.5 * 0.5 + 0.5 * w.causal_fraction(4096.0)) / 0.5;
    assert!(
        (a.attention / expect - 1.0).abs() < 1e-12,
        "{} vs {expect}",
        a.attention
    );
    assert!(a.attention < 0.55 * b.attention);
}

#[test]
fn chunked_attention_pairs_and_spans_by_hand() {
    use myriad_model::SlidingWindow;
    // Llama 4: chunks of 8,192, a global layer every fourth.
    let c = SlidingWindow {
        window: 8192,
        full_every: Some(4),
        chunked: true,
    };
    // 32,768 tokens = 4 whole chunks, causal within each: 4 x 8192^2 / 2 of the 32768^2
    // square = 1/8 (a quarter of full causal attention).
    assert_eq!(c.causal_fraction(32768.0), 0.125);
    // 10,000 tokens: one chunk and 1,808 tokens of the next.
    let f = 0.5 * (8192.0_f64.powi(2) + 1808.0_f64.powi(2)) / 1e8;
    assert!((c.causal_fraction(10000.0) - f).abs() < 1e-15);
    // Within one chunk it is plain causal attention.
    assert_eq!(c.causal_fraction(8192.0), 0.5);
    assert!(c.windows_layer(0) && c.windows_layer(2) && !c.windows_layer(3));
    // Decoding one sequence: a context inside the first chunk reads all of it; past it,
    // the part of its own chunk (30,000 = 3 x 8,192 + 5,424); a sliding window the window.
    assert_eq!(c.decode_span(5000.0, 0.0), 5000.0);
    assert_eq!(c.decode_span(30000.0, 0.0), 5424.0);
    let s = SlidingWindow {
        chunked: false,
        ..c
    };
    assert_eq!(s.decode_span(30000.0, 0.0), 8192.0);
    // A batch generating 1,024 tokens after 8,192-token prompts: contexts even over
    // 8,192 … 9,216 (mean 8,704, sd 1,024/√12) read 512 keys of their chunk on average, not
    // half a chunk; the sliding window reads all 8,192.
    let sd = 1024.0 / 12f64.sqrt();
    assert!((c.decode_span(8704.0, sd) - 512.0).abs() < 1e-6);
    assert!((s.decode_span(8704.0, sd) - 8192.0).abs() < 1e-6);
    // Contexts even over 0 … 32,768 (four whole chunks): half a chunk on average; the
    // sliding window (8,192²/2 + 8,192 x 24,576) / 32,768 = 7,168.
    let sd = 32768.0 / 12f64.sqrt();
    assert!((c.decode_span(16384.0, sd) - 4096.0).abs() < 1e-6);
    assert!((s.decode_span(16384.0, sd) - 7168.0).abs() < 1e-6);
    // A spread wider than the mean is taken as 0 … 2 x mean: still the mean below the chunk.
    assert!((c.decode_span(1000.0, 1000.0) - 1000.0).abs() < 1e-9);
    // A 32,768-token prompt's causal pairs (536,887,296) bounded by 4,096 a query.
    let pairs = 32768.0 * 32769.0 / 2.0;
    assert_eq!(c.prefill_pairs(pairs, 32768.0), 32768.0 * 4096.0);
    assert_eq!(s.prefill_pairs(pairs, 32768.0), 32768.0 * 8192.0);
    // And a short prompt keeps its own pairs.
    assert_eq!(
        c.prefill_pairs(500.0 * 501.0 / 2.0, 500.0),
        500.0 * 501.0 / 2.0
    );
}

#[test]
fn interleaved_moe_layers_by_hand() {
    // Llama 4 Maverick: 48 layers, experts in every second (1, 3, 5, ...), none dense first.
    let mut m = gpt(48, 5120, 40, 8192);
    m.moe = Some(Moe {
        experts: 128,
        top_k: 1,
        expert_ffn_hidden: 8192,
        shared_experts: 1,
        dense_layers: 0,
        dense_ffn_hidden: None,
        every: Some(2),
        router_groups: None,
        router_group_topk: None,
    });
    // Kept whole for the parameter and FLOP comparison at the end.
    let maverick = m.clone();
    assert!(!m.is_moe_layer(0) && m.is_moe_layer(1) && !m.is_moe_layer(46) && m.is_moe_layer(47));
    assert_eq!(m.moe_layers(), 24);
    assert_eq!(m.layer_of_kind(true), Some(1));
    assert_eq!(m.layer_of_kind(false), Some(0));
    // Any range holds half dense layers; with 3 dense layers first (DeepSeek-style) and
    // every 3rd after them MoE: layers 5, 8, 11, ... of 12 -> 3 MoE.
    assert_eq!(m.dense_layers_in(0.0, 12.0), 6.0);
    if let Some(x) = m.moe.as_mut() {
        x.dense_layers = 3;
        x.every = Some(3);
    }
    m.layers = 12;
    assert_eq!(m.moe_layers(), 3);
    let moe: Vec<u32> = (0..12).filter(|&i| m.is_moe_layer(i)).collect();
    assert_eq!(moe, vec![5, 8, 11]);
    assert_eq!(m.dense_layers_in(0.0, 12.0), 9.0);
    assert_eq!(m.dense_layers_in(0.0, 3.0), 3.0);
    // Parameters count 24 MoE and 24 dense MLPs, as the same model with 24 dense layers
    // first would.
    let a = maverick;
    let mut b = a.clone();
    if let Some(x) = b.moe.as_mut() {
        x.dense_layers = 24;
        x.every = None;
    }
    assert_eq!(a.params().total, b.params().total);
    assert_eq!(
        a.flops_per_sequence().forward,
        b.flops_per_sequence().forward
    );
    let e = Transformer {
        moe: Some(Moe {
            every: Some(0),
            ..a.moe.clone().unwrap()
        }),
        ..a.clone()
    };
    assert!(e.check().unwrap_err().starts_with("moe.every"));
}

#[test]
fn windowed_attention_ops_are_a_band_or_causal_chunks() {
    use myriad_model::{Op, OpKind, Shard, SlidingWindow};
    // Every layer windowed (no `full_every`), 32 heads of 128, 10,000 tokens.
    let mut m = gpt(4, 4096, 32, 10_000);
    let window = |m: &myriad_model::Transformer| -> Op {
        let mut ops = Vec::new();
        m.layer_ops(0, &Shard::single(1), &mut ops);
        ops.into_iter()
            .find(|o| o.name == "attention_window")
            .expect("a windowed op")
    };
    // Chunks of 4,096: two whole chunks and 1,808 tokens, each causal, run as a batch of
    // chunk-long sequences: no window left on the op, the FLOPs those of the chunks.
    m.sliding_window = Some(SlidingWindow {
        window: 4096,
        full_every: None,
        chunked: true,
    });
    let op = window(&m);
    let OpKind::Attention {
        sq, skv, window: w, ..
    } = op.kind
    else {
        panic!("not attention")
    };
    assert_eq!((sq, skv, w), (4096.0, 4096.0, 0.0));
    let by_hand =
        2.0 * 32.0 * (128.0 + 128.0) * 0.5 * (2.0 * 4096.0f64.powi(2) + 1808.0f64.powi(2));
    assert!(
        (op.flops() / by_hand - 1.0).abs() < 1e-12,
        "{} vs {by_hand}",
        op.flops()
    );
    // A sliding window of 4,096 over the same tokens: a band 4,096 keys wide.
    m.sliding_window = Some(SlidingWindow {
        window: 4096,
        full_every: None,
        chunked: false,
    });
    let OpKind::Attention { window: w, skv, .. } = window(&m).kind else {
        panic!("not attention")
    };
    assert_eq!((w, skv), (4096.0, 10_000.0));
    // A window holding the whole sequence is plain causal attention.
    m.seq_len = 4096;
    let OpKind::Attention {
        window: w,
        causal_fraction,
        ..
    } = window(&m).kind
    else {
        panic!("not attention")
    };
    assert_eq!((w, causal_fraction), (0.0, 0.5));
}

#[test]
fn kv_heads_are_replicated_when_tp_exceeds_them() {
    // Qwen3-235B-A22B's attention: h 4096, 64 query heads of 128, 4 KV heads. At TP 4 each
    // rank holds one KV head; at TP 8 each KV head is replicated on 2 ranks, which each
    // project, store and exchange it whole (never half a head).
    let mut m = gpt(94, 4096, 64, 4096);
    m.kv_heads = 4;
    m.head_dim = Some(128);
    assert_eq!(m.kv_heads_per_rank(1), 4.0);
    assert_eq!(m.kv_heads_per_rank(4), 1.0);
    assert_eq!(m.kv_heads_per_rank(8), 1.0);
    let qkv_width = |tp: u32| {
        let mut ops = Vec::new();
        m.attention_ops(
            &Shard {
                tp,
                sp: true,
                ..Shard::single(1)
            },
            &mut ops,
        );
        match ops.iter().find(|o| o.name == "qkv_proj").unwrap().kind {
            myriad_model::OpKind::Gemm { n, .. } => n,
            k => panic!("{k:?}"),
        }
    };
    // TP 4: 64/4 query heads and 1 K + 1 V head of 128: 16·128 + 2·128 = 2304.
    assert_eq!(qkv_width(4), 2304.0);
    // TP 8: 8 query heads and still 1 K + 1 V: 8·128 + 2·128 = 1280 (the old
    // (64 + 2·4)·128/8 = 1152 held half a K and half a V head).
    assert_eq!(qkv_width(8), 1280.0);
    // Attention weights: Q and O 2·4096·64·128 = 67,108,864 sharded; K and V 2·4096·128 =
    // 1,048,576 per KV head. TP 4: 16,777,216 + 1,048,576 = 17,825,792 (= the whole
    // 71,303,168 / 4); TP 8: 8,388,608 + 1,048,576 = 9,437,184 (not 71,303,168 / 8 =
    // 8,912,896).
    assert_eq!(m.attention_params(), 71_303_168.0);
    assert_eq!(m.attention_params_per_rank(4), 17_825_792.0);
    assert_eq!(m.attention_params_per_rank(8), 9_437_184.0);
    // Summed over ranks, a split holds at least the whole model, exactly where TP ≤ kv.
    for tp in [1u32, 2, 4, 8, 16, 32, 64] {
        let sum = m.attention_params_per_rank(tp) * tp as f64;
        assert!(sum >= m.attention_params() - 1e-6, "tp {tp}");
        assert_eq!(sum == m.attention_params(), tp <= 4, "tp {tp}");
    }
    // Q, K, V activations per token at TP 8 (SP, bf16): 2·(8 + 2)·128 bytes; the same
    // model with 8 KV heads holds exactly the same per rank at TP 8.
    let s8 = Shard {
        tp: 8,
        sp: true,
        fused_attention: true,
        ..Shard::single(1)
    };
    let mut m8 = m.clone();
    m8.kv_heads = 8;
    let a4 = m.activation_memory(&s8, Recompute::None, 2.0).dense_layer;
    let a8 = m8.activation_memory(&s8, Recompute::None, 2.0).dense_layer;
    assert_eq!(a4, a8);
    assert_eq!(qkv_width(8), {
        let mut ops = Vec::new();
        m8.attention_ops(&s8, &mut ops);
        match ops.iter().find(|o| o.name == "qkv_proj").unwrap().kind {
            myriad_model::OpKind::Gemm { n, .. } => n,
            k => panic!("{k:?}"),
        }
    });
    // At TP 4 the 8-KV-head model holds one more K and V head per rank: 2 bytes · 2·128
    // per token more.
    let s4 = Shard { tp: 4, ..s8 };
    let d4 = m8.activation_memory(&s4, Recompute::None, 2.0).dense_layer
        - m.activation_memory(&s4, Recompute::None, 2.0).dense_layer;
    assert_eq!(d4, 4096.0 * 2.0 * 2.0 * 128.0);
    // CP ring at TP 8, CP 2: the backward adds into a whole K and V head per rank.
    let merge_bwd = |m: &Transformer| {
        let mut ops = Vec::new();
        m.attention_ops(&Shard { cp: 2, ..s8 }, &mut ops);
        match ops.iter().find(|o| o.name == "cp_merge").unwrap().kind {
            myriad_model::OpKind::Memory { bytes, backward } => backward - bytes,
            k => panic!("{k:?}"),
        }
    };
    // 3 passes · 1 step · 2048 tokens · 1 head · (128 + 128) · 2 bytes.
    assert_eq!(merge_bwd(&m), 3.0 * 2048.0 * 256.0 * 2.0);
    assert_eq!(merge_bwd(&m), merge_bwd(&m8));
}

#[test]
fn recompute_rebuilds_one_layer_at_a_time() {
    // Llama 3 8B (h 4096, 32 heads and 8 KV heads of 128, SwiGLU 14336), micro-batch 2,
    // seq 8192, TP 1, bf16. Without recompute a layer stores per token: attention 2h norm
    // input + 2h QKV input + 2·(32 + 16)·128 Q/K/V + 2·4096 output + 4·32 softmax
    // statistics = 36,992 bytes; MLP 2h + 2h + 2·2·14336 up output + 2·14336 activation =
    // 102,400: 139,392 bytes a token (Korthikanti's 34·h = 139,264 for a GPT layer with
    // dropout masks), 16,384 tokens.
    let mut m = gpt(32, 4096, 32, 8192);
    m.kv_heads = 8;
    m.ffn_hidden = 14336;
    m.gated_mlp = true;
    m.vocab = 128256;
    let s = Shard::single(2);
    let tokens = 2.0 * 8192.0;
    let none = m.activation_memory(&s, Recompute::None, 2.0);
    assert_eq!(none.dense_layer, 139_392.0 * tokens);
    assert_eq!((none.dense_rebuilt, none.moe_rebuilt), (0.0, 0.0));
    // Full recompute stores the layer input (2h a token) and rebuilds one layer's whole
    // activations in the backward; the input it rebuilds from is the stored one.
    let full = m.activation_memory(&s, Recompute::Full, 2.0);
    assert_eq!(full.dense_layer, 8192.0 * tokens);
    assert_eq!(full.dense_rebuilt, (139_392.0 - 8192.0) * tokens);
    // Unfused attention rebuilds the layer's scores too: Korthikanti's 5·a·s²·b.
    let unfused = Shard {
        fused_attention: false,
        ..s
    };
    let score = 5.0 * 32.0 * 8192.0 * 8192.0 * 2.0;
    let fu = m.activation_memory(&unfused, Recompute::Full, 2.0);
    assert_eq!(fu.dense_rebuilt, (139_392.0 - 8192.0) * tokens + score);
    // Selective recompute of the attention core rebuilds only those scores (nothing with a
    // fused kernel, which keeps none), just before the attention backward, once the
    // layer's MLP block has freed its 102,400 bytes a token.
    let sel = m.activation_memory(&unfused, Recompute::Selective, 2.0);
    assert_eq!(sel.dense_rebuilt, score - 102_400.0 * tokens);
    assert_eq!(
        m.activation_memory(&s, Recompute::Selective, 2.0)
            .dense_rebuilt,
        0.0
    );
    // Recomputing the MLP keeps its norm and GEMM inputs (2h + 2h a token) and rebuilds
    // the rest of it, 102,400 − 16,384 bytes a token, before the MLP backward.
    let mlp = myriad_model::RecomputeModules::of(&[myriad_model::RecomputeModule::Mlp]);
    let sm = m.activation_memory_with(&s, Recompute::Selective, mlp, 2.0);
    assert_eq!(sm.dense_rebuilt, (102_400.0 - 16_384.0) * tokens);
    assert_eq!(sm.dense_layer, (36_992.0 + 16_384.0) * tokens);
}

/// MLA's latent norms and down projections sit whole on every TP rank (Megatron-Core
/// builds `linear_q_down_proj` and `linear_kv_down_proj` as duplicated `TELinear`s; norms
/// are replicated); the up and output projections are split. DeepSeek-V3 (hidden 7,168,
/// q_lora_rank 1,536, kv_lora_rank 512, rope 64): whole per rank = 7,168 × 1,536 +
/// 7,168 × (512 + 64) + 1,536 + 512 = 15,140,864; at TP `t` a rank holds
/// (block − 15,140,864)/t + 15,140,864.
#[test]
fn mla_latent_norms_and_down_projections_are_whole_on_every_tp_rank() {
    let m = dsv3(61, 1);
    assert_eq!(m.latent_norm_params(), 2048.0);
    let whole_per_rank = 7168.0 * 1536.0 + 7168.0 * 576.0 + 2048.0;
    assert_eq!(whole_per_rank, 15_140_864.0);
    assert_eq!(m.tp_replicated_attention_params(), whole_per_rank);
    let block = m.attention_params();
    assert_eq!(m.attention_params_per_rank(1), block);
    for tp in [2u32, 4, 8] {
        let per = m.attention_params_per_rank(tp);
        assert_eq!(
            per,
            (block - whole_per_rank) / tp as f64 + whole_per_rank,
            "tp {tp}"
        );
    }
}

/// Megatron's `TopKRouter` holds its `experts × hidden` weight whole on every TP rank.
#[test]
fn router_weights_are_counted_whole() {
    let m = dsv3(61, 1);
    assert_eq!(m.router_params(), 7168.0 * 256.0);
}
