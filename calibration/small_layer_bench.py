"""One Llama-3-8B layer's forward+backward at small per-GPU token counts (the regime of
large-scale runs that split a sequence over TP x CP ranks), fused by torch.compile, timed
eagerly launched and replayed as a CUDA graph (Inductor "reduce-overhead": host launch cost
removed, as MLPerf submissions do), beside the plain eager layer. Per-kernel GPU time by
class from torch.profiler for the compiled layer. Writes $OUT/small_layer_bench.json."""
import json, os, statistics, time, torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

OUT = os.environ.get("OUT", ".")
dev, bf16 = "cuda", torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False
SEQS = [int(s) for s in os.environ.get("SEQS", "1024,2048,4096").split(",")]
H, FFN, HEADS, KV, D = 4096, 14336, 32, 8, 128


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Layer(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.n1, s.n2 = torch.nn.RMSNorm(H, dtype=bf16), torch.nn.RMSNorm(H, dtype=bf16)
        s.qkv = torch.nn.Linear(H, (HEADS + 2 * KV) * D, bias=False, dtype=bf16)
        s.o = torch.nn.Linear(HEADS * D, H, bias=False, dtype=bf16)
        s.up = torch.nn.Linear(H, 2 * FFN, bias=False, dtype=bf16)
        s.down = torch.nn.Linear(FFN, H, bias=False, dtype=bf16)

    def forward(s, x, cos, sin):
        b, t, h = x.shape
        y = s.qkv(s.n1(x)).view(b, t, HEADS + 2 * KV, D)
        q, k, v = y.split([HEADS, KV, KV], dim=2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, HEADS * D))
        g, u = s.up(s.n2(x)).chunk(2, dim=-1)
        return x + s.down(F.silu(g) * u)


def timed(fn, samples=20, calls=5):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(samples):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / calls)
    return statistics.median(ts)


def classify(n):
    n = n.lower()
    if any(s in n for s in ("flash", "fmha", "cudnn", "attention", "sdpa")):
        return "attention"
    if any(s in n for s in ("gemm", "xmma", "cutlass", "nvjet", "sm90_")):
        return "gemm"
    return "other"


out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
t0 = time.time()
for seq in SEQS:
    torch.manual_seed(0)
    layer = Layer().to(dev)
    x = torch.randn(1, seq, H, device=dev, dtype=bf16, requires_grad=True)
    pos = torch.arange(seq, device=dev, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, D // 2, device=dev, dtype=torch.float32) / (D // 2)))
    ang = pos * inv
    cos = torch.cat((ang.cos(), ang.cos()), -1)[None, :, None, :].to(bf16)
    sin = torch.cat((ang.sin(), ang.sin()), -1)[None, :, None, :].to(bf16)
    gy = torch.randn(1, seq, H, device=dev, dtype=bf16)
    row = {"seq": seq}
    for mode in ("eager", "compiled", "compiled_graph"):
        try:
            if mode == "eager":
                f = layer
            elif mode == "compiled":
                f = torch.compile(layer)
            else:
                f = torch.compile(layer, mode="reduce-overhead")

            def fb():
                torch.autograd.backward(f(x, cos, sin), gy)

            row[mode + "_ms"] = timed(fb)
            if mode == "compiled":
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(3):
                        fb()
                    torch.cuda.synchronize()
                cls, n = {}, 0
                for ev in prof.key_averages():
                    t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
                    if t > 0 and not ev.key.startswith(("aten::", "cuda", "autograd", "torch", "Profiler", "Torch", "Compiled", "##")):
                        cls[classify(ev.key)] = cls.get(classify(ev.key), 0.0) + t / 1000.0 / 3
                        n += ev.count
                row["compiled_kernel_ms_by_class"] = cls
                row["compiled_kernels_per_fwd_bwd"] = n / 3
        except Exception as e:
            row[mode + "_error"] = repr(e)[:400]
        print(seq, mode, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "seq"}, flush=True)
    out["rows"].append(row)
    with open(os.path.join(OUT, "small_layer_bench.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    torch._dynamo.reset()
print("done", round(time.time() - t0, 1))
