"""Times the MoE block of one expert-parallel rank (router, permutes, grouped expert GEMMs,
activation, un-permutes; forward and backward) with token movement done the way
Transformer Engine's fused permute kernels do it: plain gathers, no atomics. The first MoE
measurement (`moe_layer_bench.py`) used PyTorch's `index_add_`, whose atomics took 25-45%
of the layer, so its whole-layer times could not be compared with Myriad's op sum; this one
can. Writes $OUT/moe_fused_bench.json.

Per config, four variants of the same block:
- `fused`: Triton gather kernels for the permutes and the top-k weighted combine (the
  combine's backward also gives the router-probability gradient in the same pass, as TE's
  `moe_unpermute` does), a Triton SwiGLU forward and backward, `torch._grouped_mm` experts,
  router GEMM + softmax + top-k + a global load-balancing loss in PyTorch ops;
- `sync`: the same plus the device-to-host copy of the per-expert token counts that
  Megatron-Core's all-to-all dispatcher makes each forward (the split sizes of the
  all-to-all);
- `nosync`: counts by scatter-add (`torch.bincount`, used above, reads the maximum on the
  host, a sync of its own), so nothing in the block waits for the GPU;
- `sync1`: `nosync` plus the one host copy of the counts Megatron's dispatcher makes;
- `layers8_<mode>`: eight such blocks back to back, forward then backward, to see what the
  waits cost across layers (the host runs ahead where nothing waits).

Timing: CUDA events, median of 10 after 3 warm-ups (wall), and the per-kernel GPU time from
torch.profiler, summed by class (grouped GEMM, router GEMM, gather/permute kernels, SwiGLU,
sort/top-k/histogram, other element-wise). The all-to-all is the identity (uniform routing:
a rank receives as many routed copies as it sends)."""
import json, os, traceback
import torch
import triton
import triton.language as tl
from common import profile_kernels, sample_ms

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
dev = "cpu" if INTERPRET else "cuda"
dt = torch.bfloat16
BLOCK = 1024

CONFIGS = [
    # name, hidden, experts, top_k, expert_ffn, ep, tokens per rank (micro-batch x seq)
    ("qwen3-30b-a3b ep16 t4096", 2048, 128, 8, 768, 16, 4096),
    ("qwen3-30b-a3b ep8 t4096", 2048, 128, 8, 768, 8, 4096),
    ("qwen3-30b-a3b ep8 t16384", 2048, 128, 8, 768, 8, 16384),
    ("qwen3-235b-a22b ep8 t4096", 4096, 128, 8, 1536, 8, 4096),
    ("gpt-oss-120b ep8 t16384", 2880, 128, 4, 2880, 8, 16384),
    ("gpt-oss-120b ep64 t16384", 2880, 128, 4, 2880, 64, 16384),
    ("deepseek-v3 ep64 t4096", 7168, 256, 8, 2048, 64, 4096),
    ("mixtral-8x7b ep8 t4096", 4096, 8, 2, 14336, 8, 4096),
]
import sys
if len(sys.argv) > 1:
    CONFIGS = [c for c in CONFIGS if any(a in c[0] for a in sys.argv[1:])]
if INTERPRET:
    CONFIGS = [("tiny", 64, 8, 2, 32, 4, 16)]


@triton.jit
def _gather_rows(X, IDX, Y, H, BLOCK: tl.constexpr):
    # Y[r] = X[IDX[r]]: one program per output row.
    r = tl.program_id(0)
    src = tl.load(IDX + r).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    for h0 in range(0, H, BLOCK):
        m = h0 + offs < H
        v = tl.load(X + src * H + h0 + offs, mask=m)
        tl.store(Y + r.to(tl.int64) * H + h0 + offs, v, mask=m)


@triton.jit
def _gather_sum(X, INV, W, Y, H, K: tl.constexpr, HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    # Y[t] = sum_j W[t, j] * X[INV[t, j]]: one program per token.
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for h0 in range(0, H, BLOCK):
        m = h0 + offs < H
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for j in tl.static_range(K):
            r = tl.load(INV + t * K + j).to(tl.int64)
            v = tl.load(X + r * H + h0 + offs, mask=m, other=0.0).to(tl.float32)
            if HAS_W:
                v = v * tl.load(W + t * K + j)
            acc += v
        tl.store(Y + t.to(tl.int64) * H + h0 + offs, acc.to(Y.dtype.element_ty), mask=m)


@triton.jit
def _combine_bwd(GY, X, INV, W, GX, GW, H, K: tl.constexpr, BLOCK: tl.constexpr):
    # For every copy (t, j) at row r = INV[t, j]: GX[r] = W[t, j] * GY[t] and
    # GW[t, j] = <GY[t], X[r]>, one program per token (TE's unpermute backward with probs).
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for j in tl.static_range(K):
        r = tl.load(INV + t * K + j).to(tl.int64)
        w = tl.load(W + t * K + j)
        dot = tl.zeros([BLOCK], dtype=tl.float32)
        for h0 in range(0, H, BLOCK):
            m = h0 + offs < H
            g = tl.load(GY + t.to(tl.int64) * H + h0 + offs, mask=m, other=0.0).to(tl.float32)
            x = tl.load(X + r * H + h0 + offs, mask=m, other=0.0).to(tl.float32)
            tl.store(GX + r * H + h0 + offs, (g * w).to(GX.dtype.element_ty), mask=m)
            dot += g * x
        tl.store(GW + t * K + j, tl.sum(dot, axis=0))


@triton.jit
def _swiglu_fwd(U, Y, F, n, BLOCK: tl.constexpr):
    # U is [rows, 2F] (gate | up), Y is [rows, F]: Y = silu(gate) * up.
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    row = i // F
    col = i % F
    g = tl.load(U + row * 2 * F + col, mask=m, other=0.0).to(tl.float32)
    u = tl.load(U + row * 2 * F + F + col, mask=m, other=0.0).to(tl.float32)
    s = tl.sigmoid(g)
    tl.store(Y + i, (g * s * u).to(Y.dtype.element_ty), mask=m)


@triton.jit
def _swiglu_bwd(U, GY, GU, F, n, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    row = i // F
    col = i % F
    g = tl.load(U + row * 2 * F + col, mask=m, other=0.0).to(tl.float32)
    u = tl.load(U + row * 2 * F + F + col, mask=m, other=0.0).to(tl.float32)
    gy = tl.load(GY + i, mask=m, other=0.0).to(tl.float32)
    s = tl.sigmoid(g)
    dg = gy * u * s * (1.0 + g * (1.0 - s))
    du = gy * g * s
    tl.store(GU + row * 2 * F + col, dg.to(GU.dtype.element_ty), mask=m)
    tl.store(GU + row * 2 * F + F + col, du.to(GU.dtype.element_ty), mask=m)


def gather_rows(x, idx):
    y = torch.empty(idx.numel(), x.shape[1], device=x.device, dtype=x.dtype)
    _gather_rows[(idx.numel(),)](x, idx, y, x.shape[1], BLOCK=BLOCK)
    return y


def gather_sum(x, inv, w, k):
    t = inv.numel() // k
    y = torch.empty(t, x.shape[1], device=x.device, dtype=x.dtype)
    _gather_sum[(t,)](x, inv, w if w is not None else inv, y, x.shape[1], K=k,
                      HAS_W=w is not None, BLOCK=BLOCK)
    return y


class Permute(torch.autograd.Function):
    """Routed copies in expert order: rows = x[src]; backward sums each token's k copies."""

    @staticmethod
    def forward(ctx, x, src, inv, k):
        ctx.save_for_backward(inv)
        ctx.k = k
        return gather_rows(x, src)

    @staticmethod
    def backward(ctx, g):
        (inv,) = ctx.saved_tensors
        return gather_sum(g.contiguous(), inv, None, ctx.k), None, None, None


class Reorder(torch.autograd.Function):
    """A bijective row permutation (sort by local expert and its inverse)."""

    @staticmethod
    def forward(ctx, x, idx, inv):
        ctx.save_for_backward(inv)
        return gather_rows(x, idx)

    @staticmethod
    def backward(ctx, g):
        (inv,) = ctx.saved_tensors
        return gather_rows(g.contiguous(), inv), None, None


class Combine(torch.autograd.Function):
    """Un-permute with the router's top-k weights: out[t] = sum_j w[t, j] * y[inv[t, j]]."""

    @staticmethod
    def forward(ctx, y, w, inv, k):
        ctx.save_for_backward(y, w, inv)
        ctx.k = k
        return gather_sum(y, inv, w, k)

    @staticmethod
    def backward(ctx, g):
        y, w, inv = ctx.saved_tensors
        g = g.contiguous()
        gy = torch.empty_like(y)
        gw = torch.empty_like(w)
        _combine_bwd[(g.shape[0],)](g, y, inv, w, gy, gw, y.shape[1], K=ctx.k, BLOCK=BLOCK)
        return gy, gw, None, None


def make_glu(fwd, bwd, *scalars):
    """An autograd function running the Triton kernels `fwd` (u [rows, 2F] -> y [rows, F])
    and `bwd` (u, dy -> du), each called with `scalars` after the sizes."""

    class Glu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, u):
            ctx.save_for_backward(u)
            f = u.shape[1] // 2
            y = torch.empty(u.shape[0], f, device=u.device, dtype=u.dtype)
            n = y.numel()
            fwd[(triton.cdiv(n, BLOCK),)](u, y, f, n, *scalars, BLOCK=BLOCK)
            return y

        @staticmethod
        def backward(ctx, gy):
            (u,) = ctx.saved_tensors
            gu = torch.empty_like(u)
            f = u.shape[1] // 2
            n = gy.numel()
            bwd[(triton.cdiv(n, BLOCK),)](u, gy.contiguous(), gu, f, n, *scalars, BLOCK=BLOCK)
            return gu

    return Glu


SwiGlu = make_glu(_swiglu_fwd, _swiglu_bwd)


def grouped_mm(x, w, offs):
    if INTERPRET:  # reference path for checking the kernels on a CPU
        outs, start = [], 0
        for e, end in enumerate(offs.tolist()):
            outs.append(x[start:end] @ w[e])
            start = end
        return torch.cat(outs)
    return torch._grouped_mm(x, w, offs=offs)


class MoeBlock(torch.nn.Module):
    def __init__(s, h, experts, top_k, ffn, ep, mode):
        super().__init__()
        s.E, s.k, s.L, s.mode = experts, top_k, max(experts // ep, 1), mode
        s.router = torch.nn.Linear(h, experts, bias=False, dtype=dt, device=dev)
        # Made on the GPU: bf16 randn of 10^8 elements on the host takes seconds.
        s.w_up = torch.nn.Parameter(torch.randn(s.L, h, 2 * ffn, dtype=dt, device=dev) * 0.02)
        s.w_down = torch.nn.Parameter(torch.randn(s.L, ffn, h, dtype=dt, device=dev) * 0.02)
        s.counts_host = None

    def count(s, idx, n):
        # `torch.bincount` reads the maximum on the host (a device sync); the `nosync` and
        # `sync1` modes count with a scatter-add, which does not.
        if s.mode in ("fused", "sync"):
            return torch.bincount(idx, minlength=n)
        return torch.zeros(n, dtype=torch.int64, device=idx.device).scatter_add_(
            0, idx, torch.ones_like(idx))

    def route(s, x):
        """Top-k routing: (weights of the chosen experts, their ids, all experts' probabilities)."""
        probs = torch.softmax(s.router(x).float(), -1)
        topv, topi = torch.topk(probs, s.k, dim=-1)
        return topv / topv.sum(-1, keepdim=True), topi, probs

    act = SwiGlu

    def forward(s, x):
        t = x.shape[0]
        topv, topi, probs = s.route(x)
        flat = topi.reshape(-1)
        counts = s.count(flat, s.E)
        # Global load-balancing loss (Switch/GShard form): E * sum_e f_e * P_e.
        aux = s.E * (counts.float() / (t * s.k) * probs.mean(0)).sum()
        if s.mode in ("sync", "sync1"):  # Megatron's all-to-all dispatcher: split sizes to the host
            s.counts_host = counts.cpu()
        order1 = torch.argsort(flat, stable=True)
        inv1 = torch.empty_like(order1)
        inv1[order1] = torch.arange(order1.numel(), device=x.device)
        rows = Permute.apply(x, order1 // s.k, inv1, s.k)
        # The received copies sorted by local expert (identity all-to-all).
        loc = flat[order1] % s.L
        order2 = torch.argsort(loc, stable=True)
        inv2 = torch.empty_like(order2)
        inv2[order2] = torch.arange(order2.numel(), device=x.device)
        rows = Reorder.apply(rows, order2, inv2)
        offs = torch.cumsum(s.count(loc, s.L), 0).to(torch.int32)
        u = grouped_mm(rows, s.w_up, offs)
        y = grouped_mm(s.act.apply(u), s.w_down, offs)
        y = Reorder.apply(y, inv2, order2)
        out = Combine.apply(y, topv.reshape(-1).contiguous(), inv1, s.k)
        return out, aux


def reference(block, x):
    """The same block with plain PyTorch ops (autograd through index ops), for the check."""
    t = x.shape[0]
    logits = block.router(x).float()
    probs = torch.softmax(logits, -1)
    topv, topi = torch.topk(probs, block.k, dim=-1)
    topv = topv / topv.sum(-1, keepdim=True)
    flat = topi.reshape(-1)
    order1 = torch.argsort(flat, stable=True)
    rows = x[order1 // block.k]
    loc = flat[order1] % block.L
    order2 = torch.argsort(loc, stable=True)
    rows = rows[order2]
    offs = torch.cumsum(torch.bincount(loc, minlength=block.L), 0).to(torch.int32)
    u = grouped_mm(rows, block.w_up, offs)
    g, uu = u.chunk(2, -1)
    y = grouped_mm(torch.nn.functional.silu(g) * uu, block.w_down, offs)
    inv2 = torch.empty_like(order2)
    inv2[order2] = torch.arange(order2.numel(), device=x.device)
    y = y[inv2]
    w = topv.reshape(-1)[order1].to(y.dtype)[:, None]
    out = torch.zeros_like(x).index_add(0, order1 // block.k, y * w)
    return out


def classify(name):
    n = name.lower()
    if "cutlass" in n or "gemm" in n or "sm90" in n or "nvjet" in n:
        return "gemm"
    if "_gather_rows" in n or "_gather_sum" in n or "_combine_bwd" in n:
        return "permute"
    if "swiglu" in n:
        return "swiglu"
    if "sort" in n or "topk" in n or "bincount" in n or "histogram" in n or "scan" in n or "radix" in n:
        return "routing"
    if "memcpy" in n or "memset" in n:
        return "copy"
    return "elementwise"


def median_ms(fn, reps=10):
    """Median wall milliseconds of `reps` calls after 3 warm-ups (CUDA events)."""
    return sorted(sample_ms(fn, reps))[reps // 2]


def profile_ms(fn, reps=3):
    """Kernel GPU time per call: total, by class, and the 16 longest kernels."""
    total, kernels = profile_kernels(fn, reps)
    by = {}
    for name, _, ms in kernels:
        c = classify(name)
        by[c] = by.get(c, 0.0) + ms
    return total, by, [[n[:80], calls, ms] for n, calls, ms in kernels[:16]]


def check_kernels():
    """Forward and input gradient of the fused block against the plain PyTorch block."""
    torch.manual_seed(0)
    h, E, k, F, ep, t = 64, 8, 2, 32, 4, 16
    blk = MoeBlock(h, E, k, F, ep, "fused").to(dev)
    x = torch.randn(t, h, device=dev, dtype=blk.w_up.dtype, requires_grad=True)
    y, _ = blk(x)
    g = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, g)
    x2 = x.detach().clone().requires_grad_()
    y2 = reference(blk, x2)
    (gx2,) = torch.autograd.grad(y2, x2, g)
    return float((y - y2).abs().max()), float((gx - gx2).abs().max()), float(y2.abs().max())


def save():
    o = os.environ.get("OUT", ".")
    os.makedirs(o, exist_ok=True)
    json.dump(out, open(os.path.join(o, "moe_fused_bench.json"), "w"), indent=1)


if __name__ == "__main__":  # importable: gptoss_layer_bench.py reuses the block
    out = {"method": __doc__.split("\n\n")[0], "rows": [], "errors": []}
    try:
        out["check"] = check_kernels()
        print("kernel check (max |fused - reference| forward, input grad; max |reference|):", out["check"], flush=True)
    except Exception:
        out["errors"].append("check: " + traceback.format_exc()[-800:])
        print(out["errors"][-1], flush=True)

    if not INTERPRET:
        out["device"] = torch.cuda.get_device_name()
        out["torch"] = torch.__version__
        out["triton"] = triton.__version__
        for name, h, E, k, F, ep, t in CONFIGS:
            try:
                torch.manual_seed(0)
                row = {"name": name, "hidden": h, "experts": E, "top_k": k, "expert_ffn": F, "ep": ep,
                       "tokens": t}
                x = torch.randn(t, h, device=dev, dtype=dt, requires_grad=True)
                gy = torch.randn(t, h, device=dev, dtype=dt)
                for key in ("fused", "sync", "nosync", "sync1"):
                    blk = MoeBlock(h, E, k, F, ep, key).to(dev)

                    def fb():
                        x.grad = None  # gradients are written, not accumulated (as into Megatron's main_grad)
                        for p in blk.parameters():
                            p.grad = None
                        y, aux = blk(x)
                        torch.autograd.backward([y, aux], [gy, torch.ones((), device=dev)])

                    def fwd():
                        with torch.no_grad():
                            blk(x)

                    row[f"{key}_fwd_bwd_ms"] = median_ms(fb)
                    row[f"{key}_fwd_ms"] = median_ms(fwd)
                    if key == "fused":
                        tot, by, kern = profile_ms(fb)
                        row["fwd_bwd_gpu_ms"], row["fwd_bwd_gpu_by_class"], row["kernels"] = tot, by, kern
                        tot, by, _ = profile_ms(fwd)
                        row["fwd_gpu_ms"], row["fwd_gpu_by_class"] = tot, by
                    # Eight blocks back to back, forward then backward (residual stream).
                    blocks = [MoeBlock(h, E, k, F, ep, key).to(dev) for _ in range(8)]

                    def stack():
                        x.grad = None
                        for b in blocks:
                            for p in b.parameters():
                                p.grad = None
                        z = x
                        auxs = []
                        for b in blocks:
                            o, a = b(z)
                            z = z + o
                            auxs.append(a)
                        torch.autograd.backward([z] + auxs, [gy] + [torch.ones((), device=dev)] * 8)

                    row[f"layers8_{key}_ms"] = median_ms(stack, reps=5)
                    del blocks, blk
                    torch.cuda.empty_cache()
                print(name, {kk: (round(v, 3) if isinstance(v, float) else v) for kk, v in row.items()
                             if kk.endswith("_ms") or kk.endswith("class")}, flush=True)
                for kname, calls, ms in row["kernels"][:8]:
                    print("   %7.3f ms %4.1f x %s" % (ms, calls, kname), flush=True)
                out["rows"].append(row)
                save()
                del x, gy
            except Exception:
                out["errors"].append(f"{name}: " + traceback.format_exc()[-800:])
                print(out["errors"][-1], flush=True)
            torch.cuda.empty_cache()

    save()
