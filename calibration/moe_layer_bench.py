"""Times one MoE transformer layer (forward, and forward+backward) on one GPU as one
expert-parallel rank runs it, without the all-to-all: attention as in layer_bench.py, then
router, top-k, permute of every routed copy by expert (Megatron's all-to-all dispatcher
permutes before sending), a second sort by local expert (the received chunks), grouped
GEMMs (torch._grouped_mm) up, SwiGLU, down, and the two un-permutes (the last a top-k
weighted scatter-add). Under uniform routing a rank receives as many routed copies as it
sends, so the all-to-all is taken as the identity. Used to check Myriad's MoE op-sum
(calibration/README.md). Writes $OUT/moe_layer_bench.json.

Timing: wall time with CUDA events (eager, so host gaps show) and the sum of GPU kernel
times from torch.profiler (what the GPU itself spends)."""
import json, os, traceback
import torch
import torch.nn.functional as F
from common import attention_block, profile_kernels, rope_tables, sample_ms

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
dt = torch.bfloat16

CONFIGS = [
    # name, hidden, heads, kv, head_dim, experts, top_k, expert_ffn, ep, seq, micro_batch
    ("qwen3-30b-a3b ep8 s4096 b1", 2048, 32, 4, 128, 128, 8, 768, 8, 4096, 1),
    ("qwen3-30b-a3b ep8 s4096 b4", 2048, 32, 4, 128, 128, 8, 768, 8, 4096, 4),
    ("gpt-oss-120b ep8 s4096 b4", 2880, 64, 8, 64, 128, 4, 2880, 8, 4096, 4),
    ("mixtral-8x7b ep8 s4096 b1", 4096, 32, 8, 128, 8, 2, 14336, 8, 4096, 1),
    ("deepseek-v3-like ep32 s4096 b1", 7168, 128, 128, 128, 256, 8, 2048, 32, 4096, 1),
]


class MoeLayer(torch.nn.Module):
    def __init__(s, h, heads, kv, d, experts, top_k, ffn, ep):
        super().__init__()
        s.hq, s.hkv, s.d, s.h = heads, kv, d, h
        s.E, s.k, s.ffn, s.local = experts, top_k, ffn, max(experts // ep, 1)
        s.n1 = torch.nn.RMSNorm(h, dtype=dt)
        s.n2 = torch.nn.RMSNorm(h, dtype=dt)
        s.qkv = torch.nn.Linear(h, (heads + 2 * kv) * d, bias=False, dtype=dt)
        s.o = torch.nn.Linear(heads * d, h, bias=False, dtype=dt)
        s.router = torch.nn.Linear(h, experts, bias=False, dtype=dt)
        s.w_up = torch.nn.Parameter(torch.randn(s.local, h, 2 * ffn, dtype=dt) * 0.02)
        s.w_down = torch.nn.Parameter(torch.randn(s.local, ffn, h, dtype=dt) * 0.02)

    def moe(s, x):
        t = x.shape[0]
        logits = s.router(x).float()
        probs, idx = torch.topk(torch.softmax(logits, -1), s.k, dim=-1)
        flat = idx.reshape(-1)
        # Permute 1: every routed copy grouped by global expert (before the all-to-all).
        order1 = torch.argsort(flat, stable=True)
        xs = x.index_select(0, order1 // s.k)
        # Permute 2: the received rows sorted by local expert.
        local = flat[order1] % s.local
        order2 = torch.argsort(local, stable=True)
        xs = xs.index_select(0, order2)
        counts = torch.bincount(local, minlength=s.local)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        u = torch._grouped_mm(xs, s.w_up, offs=offs)
        g, u = u.chunk(2, dim=-1)
        y = torch._grouped_mm(F.silu(g) * u, s.w_down, offs=offs)
        # Un-permute 2 and 1: back to routed-copy order, weighted by the router probability.
        inv2 = torch.empty_like(order2)
        inv2[order2] = torch.arange(order2.numel(), device=x.device)
        y = y.index_select(0, inv2)
        w = probs.reshape(-1)[order1].to(dt)[:, None]
        out = torch.zeros_like(x)
        out.index_add_(0, order1 // s.k, y * w)
        return out

    def forward(s, x, cos, sin):
        b, t, h = x.shape
        x = attention_block(s, x, cos, sin)
        return x + s.moe(s.n2(x).reshape(b * t, h)).view(b, t, h)


def timeit(fn, reps=10):
    """Median wall milliseconds of `reps` calls after 3 warm-ups (CUDA events)."""
    return sorted(sample_ms(fn, reps))[reps // 2]


def gpu_ms(fn, reps=3, breakdown=None):
    """Sum of GPU kernel and memcpy time per call (torch.profiler, CUPTI) and the number of
    kernels per call; with a list in `breakdown`, appends (kernel name, calls, ms) per call
    for every kernel."""
    total, kernels = profile_kernels(fn, reps)
    if breakdown is not None:
        breakdown.extend([n[:90], calls, ms] for n, calls, ms in kernels)
    return total, sum(calls for _, calls, _ in kernels)


out = {
    "device": torch.cuda.get_device_name(),
    "torch": torch.__version__,
    "method": "PyTorch eager, bf16, median of 10 after 3 warm-ups (CUDA events, wall) and the "
    "sum of GPU kernel times (torch.profiler); one MoE layer of one EP rank, all-to-all taken "
    "as the identity (uniform routing); torch._grouped_mm experts; SDPA causal",
    "rows": [],
    "errors": [],
}
for name, h, heads, kv, d, E, k, ffn, ep, seq, b in CONFIGS:
    try:
        torch.manual_seed(0)
        layer = MoeLayer(h, heads, kv, d, E, k, ffn, ep).to(dev)
        x = torch.randn(b, seq, h, device=dev, dtype=dt, requires_grad=True)
        cos, sin = rope_tables(seq, d, dev)
        gy = torch.randn(b, seq, h, device=dev, dtype=dt)

        def f():
            with torch.no_grad():
                layer(x, cos, sin)

        def fb():
            layer(x, cos, sin).backward(gy)

        xm = x.detach().reshape(b * seq, h).clone().requires_grad_()

        def moe_only():
            layer.moe(xm).backward(gy.reshape(b * seq, h))

        row = {
            "name": name, "hidden": h, "heads": heads, "kv_heads": kv, "head_dim": d,
            "experts": E, "top_k": k, "expert_ffn": ffn, "ep": ep, "seq": seq, "micro_batch": b,
            "fwd_ms": timeit(f), "fwd_bwd_ms": timeit(fb),
        }
        row["fwd_gpu_ms"], row["fwd_kernels"] = gpu_ms(f)
        row["fwd_bwd_gpu_ms"], row["fwd_bwd_kernels"] = gpu_ms(fb)
        row["moe_fwd_bwd_ms"] = timeit(moe_only)
        row["moe_kernels"] = []
        row["moe_fwd_bwd_gpu_ms"], row["moe_fwd_bwd_kernels"] = gpu_ms(moe_only, breakdown=row["moe_kernels"])
        print(name, "MoE fwd+bwd GPU %.2f ms" % row["moe_fwd_bwd_gpu_ms"], flush=True)
        for kname, calls, ms in row["moe_kernels"][:14]:
            print("   %7.3f ms %4.1f x %s" % (ms, calls, kname), flush=True)
        out["rows"].append(row)
        del layer, x, gy
    except Exception:
        out["errors"].append(f"{name}: " + traceback.format_exc()[-600:])
        print(out["errors"][-1], flush=True)
    torch.cuda.empty_cache()
os.makedirs(os.environ.get("OUT", "."), exist_ok=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "moe_layer_bench.json"), "w"), indent=1)
