"""Runs training-shaped work on one GPU without pause and logs, second by second, its
throughput with the SM clock, board power and temperature (NVML): does a GPU that trains
for hours run slower than the few-second benchmarks the efficiencies are fitted to?
Phase A: one Llama-3-8B layer (layer_bench.py's, seq 8192) forward+backward for LAYER_S
seconds; phase B: back-to-back bf16 8192^3 GEMMs for GEMM_S seconds.
Writes JSON to $OUT/sustained_bench.json."""
import json, os, time, torch
import pynvml
from common import Layer, rope_tables

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
cos, sin = rope_tables(seq, 128, dev)
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
