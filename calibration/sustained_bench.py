"""Runs training-shaped work on one GPU without pause and logs, second by second, its
throughput with the SM clock, board power and temperature (NVML): does a GPU that trains
for hours run slower than the few-second benchmarks the efficiencies are fitted to?
Phase A: one Llama-3-8B layer (layer_bench.py's, seq 8192) forward+backward for LAYER_S
seconds; phase B: back-to-back bf16 8192^3 GEMMs for GEMM_S seconds.
Writes JSON to $OUT/sustained_bench.json."""
import json, os, time, torch
import torch.nn.functional as F
import pynvml

OUT = os.environ.get("OUT", ".")
LAYER_S = float(os.environ.get("LAYER_S", "90"))
GEMM_S = float(os.environ.get("GEMM_S", "45"))
dev, bf16 = "cuda", torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False
pynvml.nvmlInit()
H = pynvml.nvmlDeviceGetHandleByIndex(0)


def nvml():
    return {
        "sm_mhz": pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM),
        "power_w": pynvml.nvmlDeviceGetPowerUsage(H) / 1000.0,
        "temp_c": pynvml.nvmlDeviceGetTemperature(H, pynvml.NVML_TEMPERATURE_GPU),
        "reasons": reasons(),
    }


def reasons():
    f = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    try:
        return hex(f(H))
    except Exception:
        return None


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Layer(torch.nn.Module):
    def __init__(s, h, ffn, heads, kv, d):
        super().__init__()
        s.hq, s.hkv, s.d = heads, kv, d
        s.n1, s.n2 = torch.nn.RMSNorm(h, dtype=bf16), torch.nn.RMSNorm(h, dtype=bf16)
        s.qkv = torch.nn.Linear(h, (heads + 2 * kv) * d, bias=False, dtype=bf16)
        s.o = torch.nn.Linear(heads * d, h, bias=False, dtype=bf16)
        s.up = torch.nn.Linear(h, 2 * ffn, bias=False, dtype=bf16)
        s.down = torch.nn.Linear(ffn, h, bias=False, dtype=bf16)

    def forward(s, x, cos, sin):
        b, t, h = x.shape
        y = s.qkv(s.n1(x)).view(b, t, s.hq + 2 * s.hkv, s.d)
        q, k, v = y.split([s.hq, s.hkv, s.hkv], dim=2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, s.hq * s.d))
        g, u = s.up(s.n2(x)).chunk(2, dim=-1)
        return x + s.down(F.silu(g) * u)


def run_phase(name, fn, seconds, per_check):
    """Calls fn back to back; every ~1 s synchronises and logs iterations/s and NVML."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    log, t0 = [], time.time()
    last, n_last = t0, 0
    n = 0
    while time.time() - t0 < seconds:
        for _ in range(per_check):
            fn()
        n += per_check
        s = nvml()  # read while work is queued on the GPU
        torch.cuda.synchronize()
        now = time.time()
        if now - last >= 1.0:
            s.update({"t_s": round(now - t0, 2), "iters_per_s": (n - n_last) / (now - last)})
            log.append(s)
            last, n_last = now, n
    print(name, "first", log[0], "last", log[-1], flush=True)
    return log


out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "start": nvml()}
torch.manual_seed(0)
layer = Layer(4096, 14336, 32, 8, 128).to(dev)
seq = 8192
x = torch.randn(1, seq, 4096, device=dev, dtype=bf16, requires_grad=True)
pos = torch.arange(seq, device=dev, dtype=torch.float32)[:, None]
inv = 1.0 / (10000 ** (torch.arange(0, 64, device=dev, dtype=torch.float32) / 64))
ang = pos * inv
cos = torch.cat((ang.cos(), ang.cos()), -1)[None, :, None, :].to(bf16)
sin = torch.cat((ang.sin(), ang.sin()), -1)[None, :, None, :].to(bf16)
gy = torch.randn(1, seq, 4096, device=dev, dtype=bf16)


def fb():
    y = layer(x, cos, sin)
    torch.autograd.backward(y, gy)


out["layer_fwd_bwd"] = run_phase("layer", fb, LAYER_S, 8)
del layer, x, gy
a = torch.randn(8192, 8192, device=dev, dtype=bf16)
b = torch.randn(8192, 8192, device=dev, dtype=bf16)
c = torch.empty(8192, 8192, device=dev, dtype=bf16)
out["gemm_8192"] = run_phase("gemm", lambda: torch.mm(a, b, out=c), GEMM_S, 50)
out["gemm_flops"] = 2 * 8192**3
out["end"] = nvml()
with open(os.path.join(OUT, "sustained_bench.json"), "w") as f:
    json.dump(out, f, indent=1)
