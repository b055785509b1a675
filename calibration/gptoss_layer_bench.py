"""One gpt-oss-120b transformer layer of one expert-parallel rank on one GPU, forward and
backward, bf16: the attention half as the model card describes it (RMSNorm, QKV and output
projections with biases, rotary, GQA 64/8 of head dim 64, a learned sink logit per head,
full causal or a 128-token band) and the MoE half of `moe_fused_bench.py` (router with
bias, top-4, fused permutes, `torch._grouped_mm` experts with gpt-oss's clamped SwiGLU,
un-permute; the all-to-all is the identity). Writes $OUT/gptoss_layer_bench.json.

Why: Megatron-Bridge's gpt-oss-120b rows run 20-34% slower than Myriad predicts on every
GPU (H100, B200, GB200, B300), and the step model leaves out the sinks, the biases and the
clamped activation. This times each piece on the one GPU we can reach, at the H100 row's
micro-batch (one 4,096-token sequence) and the Blackwell rows' (four). Arguments: micro-batch
sizes in tokens, multiples of 4,096 (default 4096 16384).

Attention alone, each forward and forward+backward:
- `sdpa`: PyTorch SDPA, causal (cuDNN on the H100), no sink;
- `flex`: FlexAttention (Triton), full causal or the 128-token band as a block mask
  (fully masked tiles are skipped), no sink;
- `flex_sink`: the same plus the sink, out * sigmoid(lse - sink): the softmax with one extra
  logit per head (what cuDNN's and FlashAttention-3's sink support compute).
Then the whole layer, full (SDPA, the fastest kernel here: the stand-in for cuDNN's) and
banded (`flex_sink`): wall time (CUDA events, median of 10 after 3 warm-ups) and the GPU
time of every kernel by class from torch.profiler; and eight layers back to back as the
model alternates them (banded first), forward then backward, wall and GPU time.

The expert biases are left out: Transformer Engine's grouped GEMM adds them in its
epilogue, and a first run that added them by index spent 2.4 ms a layer in the atomics of
the index backward, which no framework pays."""
import json, os, sys, traceback
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import profile_kernels, rope, rope_tables, sample_ms
import moe_fused_bench as mf

dev, dt = "cuda", torch.bfloat16
H, HQ, HKV, D, E, K, FFN, EP, WINDOW = 2880, 64, 8, 64, 128, 4, 2880, 8, 128
ALPHA, LIMIT = 1.702, 7.0
SEQ = 4096  # gpt-oss's training sequence; a micro-batch of b sequences is b * SEQ tokens
TOKENS = [int(a) for a in sys.argv[1:]] or [4096, 16384]
# Every (mask, length, grad) combination compiles FlexAttention anew; keep them all.
torch._dynamo.config.cache_size_limit = 64


def causal(b, h, qi, ki):
    return qi >= ki


def banded(b, h, qi, ki):
    return (qi >= ki) & (qi - ki < WINDOW)


@triton.jit
def _glu_fwd(U, Y, Fd, n, alpha, limit, BLOCK: tl.constexpr):
    # gpt-oss's activation on [rows, 2F] (gate | linear): g = min(gate, limit),
    # l = clamp(linear, -limit, limit), y = g * sigmoid(alpha * g) * (l + 1).
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    row, col = i // Fd, i % Fd
    g = tl.load(U + row * 2 * Fd + col, mask=m, other=0.0).to(tl.float32)
    l = tl.load(U + row * 2 * Fd + Fd + col, mask=m, other=0.0).to(tl.float32)
    g = tl.minimum(g, limit)
    l = tl.minimum(tl.maximum(l, -limit), limit)
    s = tl.sigmoid(alpha * g)
    tl.store(Y + i, (g * s * (l + 1.0)).to(Y.dtype.element_ty), mask=m)


@triton.jit
def _glu_bwd(U, GY, GU, Fd, n, alpha, limit, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    row, col = i // Fd, i % Fd
    g0 = tl.load(U + row * 2 * Fd + col, mask=m, other=0.0).to(tl.float32)
    l0 = tl.load(U + row * 2 * Fd + Fd + col, mask=m, other=0.0).to(tl.float32)
    gy = tl.load(GY + i, mask=m, other=0.0).to(tl.float32)
    g = tl.minimum(g0, limit)
    l = tl.minimum(tl.maximum(l0, -limit), limit)
    s = tl.sigmoid(alpha * g)
    dg = tl.where(g0 < limit, gy * (l + 1.0) * s * (1.0 + alpha * g * (1.0 - s)), 0.0)
    dl = tl.where((l0 > -limit) & (l0 < limit), gy * g * s, 0.0)
    tl.store(GU + row * 2 * Fd + col, dg.to(GU.dtype.element_ty), mask=m)
    tl.store(GU + row * 2 * Fd + Fd + col, dl.to(GU.dtype.element_ty), mask=m)


ClampedGlu = mf.make_glu(_glu_fwd, _glu_bwd, ALPHA, LIMIT)


class OssMoe(mf.MoeBlock):
    """`moe_fused_bench`'s block (mode `sync1`, Megatron's one host read of the counts) with
    gpt-oss's router (bias; softmax over the top-k logits) and clamped SwiGLU."""

    def __init__(s):
        super().__init__(H, E, K, FFN, EP, "sync1")
        s.router.bias = torch.nn.Parameter(torch.zeros(E, device=dev, dtype=dt))

    act = ClampedGlu

    def route(s, x):
        # gpt-oss: the softmax over the top-k logits weighs the chosen experts.
        logits = s.router(x).float()
        topv, topi = torch.topk(logits, s.k, dim=-1)
        return torch.softmax(topv, -1), topi, torch.softmax(logits, -1)


def make_attn(kind, window, t=SEQ):
    """attn(q, k, v, sink) for q [b, HQ, t, D], k/v [b, HKV, t, D] -> [b, HQ, t, D]."""
    if kind == "sdpa":
        return lambda q, k, v, sink: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    bm = create_block_mask(banded if window else causal, None, None, t, t, device=dev)
    flex = torch.compile(flex_attention, dynamic=False)
    if kind == "flex":
        return lambda q, k, v, sink: flex(q, k, v, block_mask=bm, enable_gqa=True)

    def with_sink(q, k, v, sink):
        o, lse = flex(q, k, v, block_mask=bm, enable_gqa=True, return_lse=True)
        # softmax over the keys plus one sink logit: scale the output by
        # e^lse / (e^lse + e^sink).
        return o * torch.sigmoid(lse - sink[None, :, None]).unsqueeze(-1).to(o.dtype)

    return with_sink


class OssLayer(torch.nn.Module):
    def __init__(s, attn):
        super().__init__()
        s.n1 = torch.nn.RMSNorm(H, dtype=dt, device=dev)
        s.n2 = torch.nn.RMSNorm(H, dtype=dt, device=dev)
        s.qkv = torch.nn.Linear(H, (HQ + 2 * HKV) * D, bias=True, dtype=dt, device=dev)
        s.o = torch.nn.Linear(HQ * D, H, bias=True, dtype=dt, device=dev)
        s.sink = torch.nn.Parameter(torch.zeros(HQ, device=dev, dtype=torch.float32))
        s.attn = attn
        s.moe = OssMoe()

    def forward(s, x, cos, sin):
        b, t, _ = x.shape
        y = s.qkv(s.n1(x)).view(b, t, HQ + 2 * HKV, D)
        q, k, v = y.split([HQ, HKV, HKV], dim=2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        a = s.attn(q, k, v, s.sink)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, HQ * D))
        m, aux = s.moe(s.n2(x).view(b * t, H))
        return x + m.view(b, t, H), aux


def classify(name):
    n = name.lower()
    if "flex" in n or "triton_tem" in n or any(z in n for z in ("flash", "fmha", "cudnn", "attention")):
        return "attention"
    return mf.classify(name)


def profile(fn):
    total, kernels = profile_kernels(fn, 3)
    by = {}
    for name, _, ms in kernels:
        by[classify(name)] = by.get(classify(name), 0.0) + ms
    return total, by, [[n[:90], c, ms] for n, c, ms in kernels[:14]]


def med(fn, reps=10):
    return sorted(sample_ms(fn, reps))[reps // 2]


def save():
    o = os.environ.get("OUT", ".")
    os.makedirs(o, exist_ok=True)
    json.dump(out, open(os.path.join(o, "gptoss_layer_bench.json"), "w"), indent=1)


out = {"method": __doc__.split("\n\n")[0], "device": torch.cuda.get_device_name(),
       "torch": torch.__version__, "triton": triton.__version__,
       "shape": {"hidden": H, "heads": HQ, "kv_heads": HKV, "head_dim": D, "experts": E,
                 "top_k": K, "expert_ffn": FFN, "ep": EP, "window": WINDOW},
       "attention": [], "layers": [], "errors": []}
for t in TOKENS:
    nb = t // SEQ
    print("tokens", t, "=", nb, "x", SEQ, flush=True)
    torch.manual_seed(0)
    q = torch.randn(nb, HQ, SEQ, D, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(nb, HKV, SEQ, D, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(nb, HKV, SEQ, D, device=dev, dtype=dt, requires_grad=True)
    sink = torch.zeros(HQ, device=dev, dtype=torch.float32, requires_grad=True)
    go = torch.randn(nb, HQ, SEQ, D, device=dev, dtype=dt)
    for kind, window in (("sdpa", 0), ("flex", 0), ("flex", WINDOW), ("flex_sink", 0), ("flex_sink", WINDOW)):
        row = {"tokens": t, "sequences": nb, "kind": kind, "window": window}
        try:
            fn = make_attn(kind, window)
            with torch.no_grad():
                row["fwd_ms"] = med(lambda: fn(q, k, v, sink))
            ins = (q, k, v, sink) if kind == "flex_sink" else (q, k, v)
            row["fwd_bwd_ms"] = med(lambda: torch.autograd.grad(fn(q, k, v, sink), ins, go))
        except Exception:
            row["error"] = traceback.format_exc()[-600:]
        print(json.dumps(row)[:400], flush=True)
        out["attention"].append(row)
        save()
    del q, k, v, go
    cos, sin = rope_tables(SEQ, D)
    x = torch.randn(nb, SEQ, H, device=dev, dtype=dt, requires_grad=True)
    gy = torch.randn(nb, SEQ, H, device=dev, dtype=dt)
    # Full layers with PyTorch's SDPA (no sink: the fastest kernel here, the stand-in for
    # cuDNN's); banded layers with FlexAttention and the sink.
    variants = (("full", "sdpa", 0), ("banded", "flex_sink", WINDOW))
    for name, kind, window in variants:
        row = {"tokens": t, "sequences": nb, "layer": name, "attention": kind, "window": window}
        try:
            layer = OssLayer(make_attn(kind, window))

            def fb():
                x.grad = None
                for p in layer.parameters():
                    p.grad = None
                y, aux = layer(x, cos, sin)
                torch.autograd.backward([y, aux], [gy, torch.ones((), device=dev)])

            def fwd():
                with torch.no_grad():
                    layer(x, cos, sin)

            row["fwd_bwd_ms"] = med(fb)
            row["fwd_ms"] = med(fwd)
            row["fwd_bwd_gpu_ms"], row["fwd_bwd_gpu_by_class"], row["kernels"] = profile(fb)
            row["fwd_gpu_ms"], row["fwd_gpu_by_class"], _ = profile(fwd)
            del layer
        except Exception:
            row["error"] = traceback.format_exc()[-800:]
        print(json.dumps({kk: vv for kk, vv in row.items() if kk != "kernels"})[:900], flush=True)
        for kn in row.get("kernels", [])[:12]:
            print("   %7.3f ms %4.1f x %s" % (kn[2], kn[1], kn[0]), flush=True)
        out["layers"].append(row)
        save()
        torch.cuda.empty_cache()
    # Eight layers back to back as the model stacks them (banded, full, ...), forward then
    # backward: wall time per layer against the sum of the single layers' GPU time.
    try:
        stack = [OssLayer(make_attn("flex_sink", WINDOW) if i % 2 == 0 else make_attn("sdpa", 0))
                 for i in range(8)]

        def run8():
            x.grad = None
            for l in stack:
                for p in l.parameters():
                    p.grad = None
            z, auxs = x, []
            for l in stack:
                z, a = l(z, cos, sin)
                auxs.append(a)
            torch.autograd.backward([z] + auxs, [gy] + [torch.ones((), device=dev)] * 8)

        r = {"tokens": t, "sequences": nb, "layers8_ms": med(run8, reps=5)}
        r["layers8_gpu_ms"], r["layers8_gpu_by_class"], _ = profile(run8)
        del stack
    except Exception:
        r = {"tokens": t, "error": traceback.format_exc()[-800:]}
    print(json.dumps(r), flush=True)
    out.setdefault("stacks", []).append(r)
    save()
    del x, gy
    torch.cuda.empty_cache()
save()
