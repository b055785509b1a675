"""Expert GEMMs with few tokens each (128-512), run one cuBLAS GEMM per expert as
Transformer Engine's `GroupedLinear` does, on one stream and on four. An EP rank's expert
gets EP x micro-batch tokens x top-k / experts rows: 1,024 and up for gpt-oss-120b at
EP 8 (4,096 x 4 / 128 x 8), but 128-512 where few ranks share the experts (gpt-oss-120b or
Qwen3 at EP 1-2, and small micro-batches).

Why (session 35): the GEMM fit (FLOPs / efficient peak + 3.6 us) was fitted on M, N,
K >= 512, and `grouped_gemm_streams_bench.py` covered 2,048 tokens an expert and up. At
128 rows a GEMM against a 2,880 x 5,760 weight streams 33 MB for 4.2 GFLOP: below the
H100's ridge, so bound by memory. (Prepared while looking for gpt-oss-120b's missing
time; its recipes give 1,024+ rows an expert, so these shapes are not theirs.)

Per config (hidden, expert ffn, local experts, tokens per expert), the six GEMMs of the
up (hidden -> 2 x ffn) and down (ffn -> hidden) projections: forward [M,K]x[K,N], data
gradient [M,N]x[N,K], weight gradient [K,M]x[M,N] (bf16 out; TE accumulates into an fp32
buffer, which `gemm_layout_bench.py` measured apart). Variants, each captured in a CUDA
graph so that the host's launches are not timed: `loop1` one GEMM per expert on one stream,
`loop4` round-robin over four streams, `grouped` one `torch._grouped_mm` (forward only);
`eager1`: `loop1` launched from Python without a graph. Timing: CUDA events, median of 10
samples of 20 replays after 3 warm-ups. Writes $OUT/small_expert_gemm_bench.json.
Run on the lent H100 on 2026-11-27 (14 s): h100-small-expert-gemm-measured.json (the
config names there were corrected afterwards to say tokens an expert, not which rows).

Run: `python3 calibration/small_expert_gemm_bench.py`."""
import json, os, traceback
import torch
from common import graphed, median_ms

dt = torch.bfloat16
STREAMS = 4

CONFIGS = [
    # name, hidden, expert ffn, local experts, tokens per expert
    ("gpt-oss-120b shapes, 16 experts x 128 tokens", 2880, 2880, 16, 128),
    ("gpt-oss-120b shapes, 16 experts x 512 tokens", 2880, 2880, 16, 512),
    ("gpt-oss-120b shapes, 2 experts x 512 tokens", 2880, 2880, 2, 512),
    ("qwen3-30b-a3b shapes, 16 experts x 256 tokens", 2048, 768, 16, 256),
    ("qwen3-235b-a22b shapes, 16 experts x 256 tokens", 4096, 1536, 16, 256),
]


def run_config(name, h, ffn, experts, tok):
    dev = "cuda"
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    out = {"name": name, "hidden": h, "expert_ffn": ffn, "experts": experts, "tokens_per_expert": tok}
    for proj, (k, n) in (("up", (h, 2 * ffn)), ("down", (ffn, h))):
        x = [torch.randn(tok, k, device=dev, dtype=dt) for _ in range(experts)]
        w = [torch.randn(k, n, device=dev, dtype=dt) / k**0.5 for _ in range(experts)]
        dy = [torch.randn(tok, n, device=dev, dtype=dt) for _ in range(experts)]
        res = {}
        passes = {
            # C = A @ B with (M, N, K)
            "fwd": ((tok, n, k), lambda i: x[i] @ w[i]),
            "dgrad": ((tok, k, n), lambda i: dy[i] @ w[i].t()),
            "wgrad": ((k, n, tok), lambda i: x[i].t() @ dy[i]),
        }
        for pname, ((m, nn, kk), op) in passes.items():
            r = {"m": m, "n": nn, "k": kk, "flops": 2.0 * m * nn * kk * experts}

            def loop1():
                for i in range(experts):
                    op(i)

            def loop4():
                main = torch.cuda.current_stream()
                ev = torch.cuda.Event()
                ev.record(main)
                used = streams[: min(experts, STREAMS)]
                for i in range(experts):
                    st = streams[i % STREAMS]
                    st.wait_event(ev)
                    with torch.cuda.stream(st):
                        op(i)
                for st in used:
                    main.wait_stream(st)

            variants = {"loop1": graphed(loop1), "loop4": graphed(loop4), "eager1": loop1}
            if pname == "fwd":
                xc = torch.cat(x)
                ws = torch.stack(w)
                offs = torch.arange(1, experts + 1, device=dev, dtype=torch.int32) * tok
                variants["grouped"] = graphed(lambda: torch._grouped_mm(xc, ws, offs=offs))
            for label, fn in variants.items():
                try:
                    med, ts = median_ms(fn, 10, calls=20)
                    r[label] = {"ms": med, "samples_ms": ts}
                except Exception as e:
                    r[label] = {"error": repr(e)}
            res[pname] = r
            print(name, proj, pname, {l: round(v["ms"], 4) for l, v in r.items()
                                      if isinstance(v, dict) and "ms" in v}, flush=True)
        out[proj] = res
    return out


def main():
    res = {"method": __doc__, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "rows": [], "errors": []}
    for c in CONFIGS:
        try:
            res["rows"].append(run_config(*c))
        except Exception:
            res["errors"].append({"config": c[0], "trace": traceback.format_exc()[-3000:]})
            print("failed", c[0], traceback.format_exc()[-800:], flush=True)
    path = os.path.join(os.environ.get("OUT", "."), "small_expert_gemm_bench.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=str)
    print("wrote", path)


if __name__ == "__main__":
    main()
