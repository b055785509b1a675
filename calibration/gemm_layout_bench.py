"""Times the three GEMMs of every linear layer of a training step (forward, data
gradient, weight gradient) on one GPU, bf16 through cuBLAS and fp8 through
torch._scaled_mm, at the per-rank shapes of real training runs; then profiles one
transformer layer's forward+backward kernel by kernel. Used to check whether the backward
GEMMs of training run at the forward GEMMs' efficiency (calibration/README.md).
Writes JSON to $OUT/gemm_layout_bench.json."""
import json, os, statistics, time, torch
from torch.profiler import profile, ProfilerActivity
from common import Layer, by_class, kernel_times, rope_tables, sample_ms

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
bf16 = torch.bfloat16
f8 = torch.float8_e4m3fn
OUT = os.environ.get("OUT", ".")

CONFIGS = [
    # name, hidden, ffn, heads, kv_heads, head_dim, tokens (micro_batch x seq), tp, gated
    ("llama3-8b tp1 s8192 b1", 4096, 14336, 32, 8, 128, 8192, 1, True),
    ("llama3-70b tp4 s8192 b1", 8192, 28672, 64, 8, 128, 8192, 4, True),
    ("gpt3-175b tp4 s2048 b1", 12288, 49152, 96, 96, 128, 2048, 4, False),
    ("gpt3-175b tp8 s2048 b1", 12288, 49152, 96, 96, 128, 2048, 8, False),
    ("nemotron4-15b tp4 s4096 b4", 6144, 24576, 48, 8, 128, 16384, 4, False),
    ("llama3-405b tp8 s8192 b1", 16384, 53248, 128, 8, 128, 8192, 8, True),
    ("nemotron4-340b tp8 s4096 b1", 18432, 73728, 96, 8, 192, 4096, 8, False),
]


def linears(h, ffn, heads, kv, d, tp, gated):
    """(name, out_features, in_features) of one layer's linears on one TP rank."""
    hq, hkv = heads // tp, max(kv // tp, 1)
    return [
        ("qkv", (hq + 2 * hkv) * d, h),
        ("proj", h, hq * d),
        ("fc1", (2 if gated else 1) * ffn // tp, h),
        ("fc2", h, ffn // tp),
    ]


def bench(fn, calls=4, samples=9):
    """Median, min and max per-call time (ms) of `calls` back-to-back calls per sample."""
    ts = sample_ms(fn, samples, calls)
    return statistics.median(ts), min(ts), max(ts)


def sm_clock():
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:
        return None


out = {
    "device": torch.cuda.get_device_name(),
    "torch": torch.__version__,
    "cublas": getattr(torch.backends.cuda, "cublas_version", lambda: None)() if hasattr(torch.backends.cuda, "cublas_version") else None,
    "method": (
        "Each linear y = x W^T of a layer on one TP rank (x [M,K], W [N,K], M = tokens): "
        "fwd = x @ W^T, dgrad = dy @ W, wgrad = dy^T @ x (bf16, torch.mm, bf16 out); "
        "wgrad_fp32 = the same into an fp32 buffer (torch.mm out_dtype=float32, where the "
        "build has it); fp8 = torch._scaled_mm on e4m3 operands in the TN layout Hopper needs "
        "(Transformer Engine transposes the operands first), per-tensor scales, bf16 out, "
        "fwd with use_fast_accum=True, dgrad/wgrad with False. Median of 9 samples of 4 "
        "back-to-back calls after 3 warm-ups, CUDA events; the three GEMMs of a linear are "
        "timed one after another so they share the clock state. Then torch.profiler over 3 "
        "forward+backward passes of one layer (the layer of layer_bench.py), GPU time summed "
        "per kernel."
    ),
    "gemm": [],
    "profile": [],
}


def mm_fp32_out(a, b):
    return torch.mm(a, b, out_dtype=torch.float32)


def has_fp32_out():
    try:
        a = torch.randn(64, 64, device=dev, dtype=bf16)
        return mm_fp32_out(a, a).dtype == torch.float32
    except Exception as e:
        out["fp32_out_error"] = repr(e)[:300]
        return False


FP32_OUT = has_fp32_out()
t_start = time.time()
for name, h, ffn, heads, kv, d, m, tp, gated in CONFIGS:
    for lin, n, k in linears(h, ffn, heads, kv, d, tp, gated):
        torch.manual_seed(0)
        x = torch.randn(m, k, device=dev, dtype=bf16)
        w = torch.randn(n, k, device=dev, dtype=bf16)
        dy = torch.randn(m, n, device=dev, dtype=bf16)
        flops = 2.0 * m * n * k
        row = {"config": name, "linear": lin, "m": m, "n": n, "k": k, "flops": flops}
        cases = {
            "fwd": lambda: torch.mm(x, w.t()),
            "dgrad": lambda: torch.mm(dy, w),
            "wgrad": lambda: torch.mm(dy.t(), x),
        }
        if FP32_OUT:
            cases["wgrad_fp32"] = lambda: mm_fp32_out(dy.t(), x)
        # fp8, TN: a [rows, red] row-major, b [red, cols] column-major (= b_t [cols, red]).
        xs, ws, dys = x.to(f8), w.to(f8), dy.to(f8)
        xt, wt, dyt = x.t().contiguous().to(f8), w.t().contiguous().to(f8), dy.t().contiguous().to(f8)
        one = torch.ones((), device=dev, dtype=torch.float32)

        def smm(a, b_t, fast):
            return torch._scaled_mm(a, b_t.t(), scale_a=one, scale_b=one, out_dtype=bf16, use_fast_accum=fast)

        cases["fp8_fwd"] = lambda: smm(xs, ws, True)  # [m,k] x [k,n]
        cases["fp8_dgrad"] = lambda: smm(dys, wt, False)  # [m,n] x [n,k]
        cases["fp8_wgrad"] = lambda: smm(dyt, xt, False)  # [n,m] x [m,k]
        for case, fn in cases.items():
            try:
                med, lo, hi = bench(fn)
                peak = 1979e12 if case.startswith("fp8") else 989e12
                row[case] = {"ms": med, "min_ms": lo, "max_ms": hi, "tflops": flops / med / 1e9, "eff": flops / (med * 1e-3) / peak}
            except Exception as e:
                row[case] = {"error": repr(e)[:300]}
        row["sm_mhz_after"] = sm_clock()
        out["gemm"].append(row)
        print(name, lin, m, n, k, {c: round(v.get("tflops", -1), 1) for c, v in row.items() if isinstance(v, dict)}, flush=True)
        del x, w, dy, xs, ws, dys, xt, wt, dyt
out["gemm_runtime_s"] = time.time() - t_start


# ---- one layer, kernel by kernel ----
PROFILE = [
    ("llama3-8b tp1 s8192 b1", 4096, 14336, 32, 8, 128, 8192, 1, 1, True),
    ("nemotron4-15b tp4 s4096 b4", 6144, 24576, 48, 8, 128, 4096, 4, 4, False),
]

for name, h, ffn, heads, kv, d, seq, b, tp, gated in PROFILE:
    try:
        torch.manual_seed(0)
        layer = Layer(h, ffn, heads, kv, d, tp, gated).to(dev)
        x = torch.randn(b, seq, h, device=dev, dtype=bf16, requires_grad=True)
        cos, sin = rope_tables(seq, d, dev)
        gy = torch.randn(b, seq, h, device=dev, dtype=bf16)

        def fb():
            y = layer(x, cos, sin)
            torch.autograd.backward(y, gy)

        wall, _, _ = bench(fb, calls=1, samples=7)
        reps = 3
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                fb()
            torch.cuda.synchronize()
        kernels, _ = kernel_times(prof, reps)
        classes = by_class(kernels)
        top = sorted(kernels.items(), key=lambda kv: -kv[1])[:40]
        out["profile"].append({
            "config": name, "wall_fwd_bwd_ms": wall, "kernel_ms_by_class": classes,
            "kernel_ms_total": sum(kernels.values()), "top_kernels_ms": top,
        })
        print(name, "wall", round(wall, 3), {c: round(v, 3) for c, v in classes.items()}, flush=True)
        for k, v in top[:25]:
            print(f"  {v:8.3f} ms  {k[:150]}", flush=True)
        del layer, x, gy
    except Exception as e:
        out["profile"].append({"config": name, "error": repr(e)[:500]})
        print("profile error", name, repr(e)[:500], flush=True)

out["runtime_s"] = time.time() - t_start
with open(os.path.join(OUT, "gemm_layout_bench.json"), "w") as f:
    json.dump(out, f, indent=1)
print("done", round(out["runtime_s"], 1), "s")
