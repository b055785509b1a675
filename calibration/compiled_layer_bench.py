"""One transformer layer's forward+backward on one GPU with its element-wise work fused by
torch.compile (Inductor: norms, rotary, SiLU x mul or GeLU, residual adds as Triton
kernels; GEMMs through cuBLAS; attention through cuDNN), the closest stand-in for
Transformer Engine's fused layer this image has; eager beside it. Per-kernel GPU time from
torch.profiler, grouped into GEMM, attention and other. Writes $OUT/compiled_layer_bench.json."""
import json, os, statistics, time, torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

OUT = os.environ.get("OUT", ".")
dev, bf16 = "cuda", torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False
CONFIGS = [
    # name, hidden, ffn, heads, kv_heads, head_dim, seq, micro_batch, tp, gated
    ("llama3-8b tp1 s8192 b1", 4096, 14336, 32, 8, 128, 8192, 1, 1, True),
    ("nemotron4-15b tp4 s4096 b4", 6144, 24576, 48, 8, 128, 4096, 4, 4, False),
]


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Layer(torch.nn.Module):
    def __init__(s, h, ffn, heads, kv, d, tp, gated):
        super().__init__()
        s.hq, s.hkv, s.d = heads // tp, max(kv // tp, 1), d
        s.n1 = torch.nn.RMSNorm(h, dtype=bf16) if gated else torch.nn.LayerNorm(h, dtype=bf16)
        s.n2 = torch.nn.RMSNorm(h, dtype=bf16) if gated else torch.nn.LayerNorm(h, dtype=bf16)
        s.qkv = torch.nn.Linear(h, (s.hq + 2 * s.hkv) * d, bias=False, dtype=bf16)
        s.o = torch.nn.Linear(s.hq * d, h, bias=False, dtype=bf16)
        s.gated = gated
        s.up = torch.nn.Linear(h, (2 if gated else 1) * ffn // tp, bias=False, dtype=bf16)
        s.down = torch.nn.Linear(ffn // tp, h, bias=False, dtype=bf16)

    def forward(s, x, cos, sin):
        b, t, h = x.shape
        y = s.qkv(s.n1(x)).view(b, t, s.hq + 2 * s.hkv, s.d)
        q, k, v = y.split([s.hq, s.hkv, s.hkv], dim=2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=s.hkv != s.hq)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, s.hq * s.d))
        u = s.up(s.n2(x))
        if s.gated:
            g, u = u.chunk(2, dim=-1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u)
        return x + s.down(u)


def bench(fn, samples=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(samples):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); fn(); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts)


def classify(n):
    n = n.lower()
    if any(s in n for s in ("flash", "fmha", "cudnn", "attention", "sdpa")):
        return "attention"
    if any(s in n for s in ("gemm", "xmma", "cutlass", "nvjet", "sm90_")):
        return "gemm"
    return "other"


def kernels_of(fn, reps=3):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    ks = {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t > 0 and not ev.key.startswith(("aten::", "cuda", "autograd", "torch", "Profiler", "Torch", "Compiled", "##")):
            ks[ev.key] = ks.get(ev.key, 0.0) + t / 1000.0 / reps
    cls = {}
    for k, v in ks.items():
        cls[classify(k)] = cls.get(classify(k), 0.0) + v
    return cls, sorted(ks.items(), key=lambda kv: -kv[1])[:30]


out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
t0 = time.time()
for name, h, ffn, heads, kv, d, seq, b, tp, gated in CONFIGS:
    torch.manual_seed(0)
    layer = Layer(h, ffn, heads, kv, d, tp, gated).to(dev)
    x = torch.randn(b, seq, h, device=dev, dtype=bf16, requires_grad=True)
    pos = torch.arange(seq, device=dev, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, device=dev, dtype=torch.float32) / (d // 2)))
    ang = pos * inv
    cos = torch.cat((ang.cos(), ang.cos()), -1)[None, :, None, :].to(bf16)
    sin = torch.cat((ang.sin(), ang.sin()), -1)[None, :, None, :].to(bf16)
    gy = torch.randn(b, seq, h, device=dev, dtype=bf16)
    row = {"config": name}
    for mode in ("eager", "compiled"):
        try:
            f = layer if mode == "eager" else torch.compile(layer)

            def fb():
                torch.autograd.backward(f(x, cos, sin), gy)

            tc = time.time()
            fb(); torch.cuda.synchronize()
            row[mode + "_first_call_s"] = time.time() - tc
            wall = bench(fb)
            cls, top = kernels_of(fb)
            row[mode] = {"wall_fwd_bwd_ms": wall, "kernel_ms_by_class": cls, "kernel_ms_total": sum(cls.values()), "top_kernels_ms": top}
            print(name, mode, "wall", round(wall, 3), {c: round(v, 3) for c, v in cls.items()}, flush=True)
            for k, v in top[:14]:
                print(f"   {v:7.3f} ms {k[:110]}", flush=True)
        except Exception as e:
            row[mode] = {"error": repr(e)[:600]}
            print(name, mode, "error", repr(e)[:600], flush=True)
    out["rows"].append(row)
    with open(os.path.join(OUT, "compiled_layer_bench.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    del layer, x, gy
out["runtime_s"] = time.time() - t0
with open(os.path.join(OUT, "compiled_layer_bench.json"), "w") as fh:
    json.dump(out, fh, indent=1)
print("done", round(out["runtime_s"], 1))
