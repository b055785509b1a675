"""How much one expert-parallel rank's expert GEMMs cost when each expert runs its own GEMM
kernel, as Transformer Engine's grouped linear runs them (TE <= 2.12: one cuBLAS GEMM per
expert, spread round-robin over its compute streams, `nvte_multi_stream_cublas_gemm`;
a CUTLASS grouped GEMM only opt-in, bf16, Hopper), against one grouped kernel
(`torch._grouped_mm`, what Myriad's op sum and `moe_fused_bench.py` assume), and what
quantising each expert's input for an fp8 GEMM adds: per-tensor current scaling as TE's
`Float8CurrentScalingQuantizer` does it (an amax kernel, a scale, the cast) per expert.

Why (session 32): charging each expert GEMM the fixed per-kernel cost of the H100 GEMM fit
(3.6 us) brings the Hopper MoE training rows closer and pushes the Blackwell ones further;
the unknown is how much of that fixed cost the streams overlap. This measures it.
Prepared in session 32 without a GPU; run on the lent H100 on 2026-11-27 (32 s):
h100-grouped-gemm-streams-measured.json.

Per config, forward shapes of the two expert GEMMs of one rank (tokens per expert x hidden
-> 2 x expert ffn, and expert ffn -> hidden), bf16 and fp8 (e4m3, `torch._scaled_mm`
with per-tensor scales; Hopper and Blackwell):
- `grouped`: one `torch._grouped_mm` over all local experts (bf16 only);
- `loop1`: one GEMM per expert on the current stream;
- `loop4`: one GEMM per expert, round-robin over four streams, joined by events (TE's
  default of four compute streams);
- `fp8_loop4`: per expert an amax (`abs().amax()`), a scale, a cast to e4m3 of the input,
  then `torch._scaled_mm`, on four streams (weights cast once, outside the timing, as TE
  caches them across micro-batches).

Timing: CUDA events, median of 10 samples of 20 back-to-back calls after 3 warm-ups, wall
time of the whole group (`sample_ms`); also the summed kernel GPU time (torch.profiler) so
that the overlap is visible as wall < sum. Writes $OUT/grouped_gemm_streams_bench.json.

Run: `python3 calibration/grouped_gemm_streams_bench.py [config substrings]`."""
import json, os, sys, traceback
import torch
from common import median_ms, profile_kernels

dt = torch.bfloat16
STREAMS = 4

CONFIGS = [
    # name, hidden, expert ffn, local experts, tokens per expert
    ("qwen3-30b-a3b ep16 mb1", 2048, 768, 8, 4096),
    ("qwen3-30b-a3b ep8 mb4", 2048, 768, 16, 8192),
    ("qwen3-235b-a22b ep8 mb1", 4096, 1536, 16, 2048),
    ("qwen3-235b-a22b ep32 mb1", 4096, 1536, 4, 8192),
    ("gpt-oss-120b ep64 mb4", 2880, 2880, 2, 32768),
    ("mixtral-8x7b ep8 mb1", 4096, 14336, 1, 8192),
]
if len(sys.argv) > 1:
    CONFIGS = [c for c in CONFIGS if any(a in c[0] for a in sys.argv[1:])]

FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def quantise(x):
    """Per-tensor current scaling: amax, scale, cast (three kernels, two reads of x)."""
    amax = x.abs().amax().float().clamp(min=1e-12)
    scale = FP8_MAX / amax
    return (x.float() * scale).to(FP8), (1.0 / scale)


def run_config(name, h, ffn, experts, tok):
    dev = "cuda"
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    main = torch.cuda.current_stream()
    out = {"name": name, "hidden": h, "expert_ffn": ffn, "experts": experts, "tokens_per_expert": tok}
    for gemm, (k, n) in (("up", (h, 2 * ffn)), ("down", (ffn, h))):
        xs = [torch.randn(tok, k, device=dev, dtype=dt) for _ in range(experts)]
        ws = [torch.randn(n, k, device=dev, dtype=dt) / k**0.5 for _ in range(experts)]
        flops = 2.0 * tok * k * n * experts
        r = {"m": tok, "n": n, "k": k, "flops": flops}

        x_cat = torch.cat(xs)
        w_stack = torch.stack([w.t() for w in ws])
        offs = torch.arange(1, experts + 1, device=dev, dtype=torch.int32) * tok

        def grouped():
            return torch._grouped_mm(x_cat, w_stack, offs=offs)

        def loop1():
            return [x @ w.t() for x, w in zip(xs, ws)]

        def on_streams(body):
            def f():
                ev = torch.cuda.Event()
                ev.record(main)
                res = []
                for i in range(experts):
                    s = streams[i % STREAMS]
                    s.wait_event(ev)
                    with torch.cuda.stream(s):
                        res.append(body(i))
                for s in streams[: min(experts, STREAMS)]:
                    main.wait_stream(s)
                return res
            return f

        loop4 = on_streams(lambda i: xs[i] @ ws[i].t())
        wq = [quantise(w) for w in ws]

        def fp8_body(i):
            xq, xs_inv = quantise(xs[i])
            w8, ws_inv = wq[i]
            return torch._scaled_mm(xq, w8.t(), scale_a=xs_inv, scale_b=ws_inv, out_dtype=dt)

        fp8_loop4 = on_streams(fp8_body)
        for label, fn in (("grouped", grouped), ("loop1", loop1), ("loop4", loop4), ("fp8_loop4", fp8_loop4)):
            try:
                med, ms = median_ms(fn, 10, calls=20)
                prof = profile_kernels(fn)
                r[label] = {"wall_ms": med, "samples_ms": ms, "kernels": prof}
            except Exception as e:  # a variant this torch or GPU lacks
                r[label] = {"error": repr(e)}
        out[gemm] = r
    return out


def main():
    res = {
        "method": __doc__,
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "rows": [],
        "errors": [],
    }
    for c in CONFIGS:
        try:
            res["rows"].append(run_config(*c))
            print(json.dumps(res["rows"][-1], default=str)[:400], flush=True)
        except Exception:
            res["errors"].append({"config": c[0], "trace": traceback.format_exc()})
    path = os.path.join(os.environ.get("OUT", "."), "grouped_gemm_streams_bench.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=str)
    print("wrote", path)


if __name__ == "__main__":
    main()
