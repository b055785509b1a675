"""One transformer layer's forward+backward on one GPU with its element-wise work fused by
torch.compile (Inductor: norms, rotary, SiLU x mul or GeLU, residual adds as Triton
kernels; GEMMs through cuBLAS; attention through cuDNN), the closest stand-in for
Transformer Engine's fused layer this image has; eager beside it. Per-kernel GPU time from
torch.profiler, grouped into GEMM, attention and other. Writes $OUT/compiled_layer_bench.json."""
import json, os, statistics, time, torch
from torch.profiler import profile, ProfilerActivity
from common import BF16, Layer, by_class, kernel_times, rope_tables, sample_ms

OUT = os.environ.get("OUT", ".")
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
CONFIGS = [
    # name, hidden, ffn, heads, kv_heads, head_dim, seq, micro_batch, tp, gated
    ("llama3-8b tp1 s8192 b1", 4096, 14336, 32, 8, 128, 8192, 1, 1, True),
    ("nemotron4-15b tp4 s4096 b4", 6144, 24576, 48, 8, 128, 4096, 4, 4, False),
]


def kernels_of(fn, reps=3):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    ks, _ = kernel_times(prof, reps)
    return by_class(ks), sorted(ks.items(), key=lambda kv: -kv[1])[:30]


out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
t0 = time.time()
for name, h, ffn, heads, kv, d, seq, b, tp, gated in CONFIGS:
    torch.manual_seed(0)
    layer = Layer(h, ffn, heads, kv, d, tp, gated).to(dev)
    x = torch.randn(b, seq, h, device=dev, dtype=BF16, requires_grad=True)
    cos, sin = rope_tables(seq, d, dev)
    gy = torch.randn(b, seq, h, device=dev, dtype=BF16)
    row = {"config": name}
    for mode in ("eager", "compiled"):
        try:
            f = layer if mode == "eager" else torch.compile(layer)

            def fb():
                torch.autograd.backward(f(x, cos, sin), gy)

            tc = time.time()
            fb(); torch.cuda.synchronize()
            row[mode + "_first_call_s"] = time.time() - tc
            wall = statistics.median(sample_ms(fb, 15))
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
