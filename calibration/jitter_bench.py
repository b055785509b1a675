"""How much does the time of one piece of training work vary from call to call on one GPU?

Synchronous parallel training waits, at every collective, for the slowest rank of the
group: if each rank's time for the same work varies from call to call independently of the
others, a group of g ranks pays E[max of g] - mean at every synchronisation point, on top
of what the slowest chip costs on average (`efficiency.speed_sigma`, which is a fixed
per-chip speed). This measures that call-to-call variation on one GPU, back to back with no
host synchronisation between calls (as a training loop runs), for:
- one Llama-3-8B layer (common.Layer, seq 4096), forward and backward timed apart;
- one Nemotron-4-15B layer on one of 4 TP ranks (16,384 tokens: micro-batch 4 x 4096);
- bf16 GEMMs of 0.2, 1.4 and 6 ms (4096^3, 8192^3 and 16384x16384x8192);
with JITTER_WORKLOADS=fp8, the same GEMM shapes in bf16 and fp8 (`torch._scaled_mm`);
and with JITTER_WORKLOADS=decode (comma-separated with `train`, the default), the serving
regimes: a memory-bound decode GEMM (64 tokens against eight 470 MB weights in turn), the
compute-bound prefill GEMM at the same shape (8,192 tokens) and a 2 GiB copy.
Every call is bracketed by CUDA events recorded on the stream (one event between two calls),
and NVML's SM clock and board power are sampled every ~5 ms from a thread meanwhile.

From the per-call times it reports, per workload: mean, standard deviation, CV,
percentiles, autocorrelation at lags 1-16 (slow drift versus fast jitter), and the mean
excess of the maximum over g calls drawn at random (g = 2, 4, 8, 16, 64): the tax a group
of g ranks pays per synchronisation if the ranks' variations are independent.
Writes $OUT/jitter_bench.json."""
import json, os, random, threading, time
import torch
import pynvml
from common import Layer, rope_tables

OUT = os.environ.get("OUT", ".")
SECONDS = float(os.environ.get("JITTER_S", "8"))
dev, bf16 = "cuda", torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False
pynvml.nvmlInit()
H = pynvml.nvmlDeviceGetHandleByIndex(0)


class Sampler(threading.Thread):
    """SM clock (MHz) and board power (W) every ~5 ms until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.rows, self.stop = [], False

    def run(self):
        t0 = time.time()
        while not self.stop:
            try:
                self.rows.append((round(time.time() - t0, 4),
                                  pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM),
                                  pynvml.nvmlDeviceGetPowerUsage(H) / 1000.0))
            except pynvml.NVMLError:
                pass
            time.sleep(0.005)


def timed(parts, seconds, warmup=5):
    """Calls the functions in `parts` in turn, again and again, for about `seconds`, with a
    CUDA event between every two calls; returns the per-call ms of each part."""
    for _ in range(warmup):
        for f in parts:
            f()
    torch.cuda.synchronize()
    # size the run from one timed round
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for f in parts:
        f()
    e1.record()
    torch.cuda.synchronize()
    rounds = max(50, min(20000, int(seconds * 1000 / max(e0.elapsed_time(e1), 1e-3))))
    events = [torch.cuda.Event(enable_timing=True) for _ in range(rounds * len(parts) + 1)]
    events[0].record()
    i = 1
    for _ in range(rounds):
        for f in parts:
            f()
            events[i].record()
            i += 1
    torch.cuda.synchronize()
    ms = [events[j].elapsed_time(events[j + 1]) for j in range(len(events) - 1)]
    return [ms[p::len(parts)] for p in range(len(parts))]


def stats(ms):
    n = len(ms)
    m = sum(ms) / n
    var = sum((x - m) ** 2 for x in ms) / n
    s = sorted(ms)
    q = lambda p: s[min(n - 1, int(p * n))]
    ac = {}
    for lag in (1, 2, 4, 8, 16):
        if n > lag + 10 and var > 0:
            ac[lag] = round(sum((ms[i] - m) * (ms[i + lag] - m) for i in range(n - lag)) / ((n - lag) * var), 3)
    rng = random.Random(0)
    excess = {}
    for g in (2, 4, 8, 16, 64):
        if n >= 4 * g:
            draws = [max(rng.sample(ms, g)) for _ in range(2000)]
            excess[g] = round(sum(draws) / len(draws) / m - 1, 5)
    return {"calls": n, "mean_ms": round(m, 5), "std_ms": round(var ** 0.5, 5),
            "cv": round(var ** 0.5 / m, 5), "p01": round(q(0.01), 5), "p50": round(q(0.5), 5),
            "p99": round(q(0.99), 5), "max": round(s[-1], 5), "autocorr": ac,
            "max_of_g_excess": excess}


out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
       "seconds_per_workload": SECONDS, "workloads": {}}
torch.manual_seed(0)


def run(name, parts, labels):
    sampler = Sampler()
    sampler.start()
    t0 = time.time()
    per = timed(parts, SECONDS)
    sampler.stop = True
    sampler.join()
    clocks = [r[1] for r in sampler.rows]
    power = [r[2] for r in sampler.rows]
    w = {"wall_s": round(time.time() - t0, 2)}
    for lab, ms in zip(labels, per):
        w[lab] = stats(ms)
        w[lab]["per_call_ms"] = [round(x, 4) for x in ms]
    # what the whole round (e.g. forward + backward) does
    if len(per) > 1:
        tot = [sum(x) for x in zip(*per)]
        w["round"] = stats(tot)
    if clocks:
        cs = sorted(clocks)
        w["sm_mhz"] = {"samples": len(cs), "min": cs[0], "p10": cs[len(cs) // 10],
                       "p50": cs[len(cs) // 2], "p90": cs[9 * len(cs) // 10], "max": cs[-1]}
        w["power_w_mean"] = round(sum(power) / len(power), 1)
    out["workloads"][name] = w
    print(name, {k: (v["mean_ms"], v["cv"], v["max_of_g_excess"].get(8)) for k, v in w.items()
                 if isinstance(v, dict) and "cv" in v}, w.get("sm_mhz"), flush=True)


def layer_parts(h, ffn, heads, kv, d, tp, gated, tokens, seq):
    layer = Layer(h, ffn, heads, kv, d, tp=tp, gated=gated).to(dev)
    b = tokens // seq
    x = torch.randn(b, seq, h, device=dev, dtype=bf16, requires_grad=True)
    cos, sin = rope_tables(seq, d, dev)
    gy = torch.randn(b, seq, h, device=dev, dtype=bf16)
    state = {}

    def fwd():
        state["y"] = layer(x, cos, sin)

    def bwd():
        torch.autograd.backward(state.pop("y"), gy)
        x.grad = None
        for p in layer.parameters():
            p.grad = None

    return layer, (fwd, bwd)


def decode_parts(tokens, rows, cols, copies):
    """A decode-like memory-bound call: `tokens` rows against `copies` bf16 weight
    matrices of rows x cols in turn (together over 4x the L2), each call streaming one."""
    ws = [torch.randn(rows, cols, device=dev, dtype=bf16) for _ in range(copies)]
    x = torch.randn(tokens, cols, device=dev, dtype=bf16)
    y = torch.empty(tokens, rows, device=dev, dtype=bf16)
    state = {"i": 0}

    def call():
        torch.mm(x, ws[state["i"] % copies].t(), out=y)
        state["i"] += 1

    return call


WORKLOADS = os.environ.get("JITTER_WORKLOADS", "train").split(",")
if "train" in WORKLOADS:
    _, parts = layer_parts(4096, 14336, 32, 8, 128, 1, True, 4096, 4096)
    run("llama3_8b_layer_seq4096", parts, ["forward", "backward"])
    del parts
    torch.cuda.empty_cache()
    _, parts = layer_parts(6144, 24576, 48, 8, 128, 4, False, 16384, 4096)
    run("nemotron4_15b_layer_tp4_16k_tokens", parts, ["forward", "backward"])
    del parts
    torch.cuda.empty_cache()
    for (m, n, k) in ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 8192)):
        a = torch.randn(m, k, device=dev, dtype=bf16)
        bm = torch.randn(k, n, device=dev, dtype=bf16)
        c = torch.empty(m, n, device=dev, dtype=bf16)
        run(f"gemm_bf16_{m}x{n}x{k}", [lambda: torch.mm(a, bm, out=c)], ["call"])
        del a, bm, c
if "fp8" in WORKLOADS:
    # The same GEMM shapes in bf16 and in fp8 (`torch._scaled_mm`, e4m3, per-tensor scales,
    # fast accumulation), back to back in one call so that they share the machine state.
    for (m, n, k) in ((8192, 8192, 8192), (16384, 16384, 8192)):
        a = torch.randn(m, k, device=dev, dtype=bf16)
        bm = torch.randn(n, k, device=dev, dtype=bf16)
        c = torch.empty(m, n, device=dev, dtype=bf16)
        run(f"gemm_bf16_{m}x{n}x{k}", [lambda: torch.mm(a, bm.t(), out=c)], ["call"])
        a8, b8 = a.to(torch.float8_e4m3fn), bm.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        run(
            f"gemm_fp8_{m}x{n}x{k}",
            [lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=bf16,
                                      use_fast_accum=True)],
            ["call"],
        )
        del a, bm, c, a8, b8
        torch.cuda.empty_cache()
if "decode" in WORKLOADS:
    # Memory-bound: 64 tokens against Llama-3-70B-sized MLP weights (28672 x 8192, 470 MB
    # each, 8 of them: 3.8 GB streamed in turn), ~0.2 ms a call at the HBM rate.
    run("decode_gemm_64x28672x8192", [decode_parts(64, 28672, 8192, 8)], ["call"])
    torch.cuda.empty_cache()
    # The compute-bound prefill side of serving at the same shapes: 8,192 tokens.
    run("prefill_gemm_8192x28672x8192", [decode_parts(8192, 28672, 8192, 2)], ["call"])
    torch.cuda.empty_cache()
    # A streaming copy of 2 GiB.
    src = torch.empty(1 << 30, device=dev, dtype=bf16)
    dst = torch.empty_like(src)
    run("copy_2gib", [lambda: dst.copy_(src)], ["call"])
    del src, dst
out["end_sm_mhz"] = pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM)
with open(os.path.join(OUT, "jitter_bench.json"), "w") as f:
    json.dump(out, f)
print("wrote", os.path.join(OUT, "jitter_bench.json"))
