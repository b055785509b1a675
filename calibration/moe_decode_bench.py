"""Grouped expert GEMMs in the decode regime: few tokens per expert, many experts per rank,
as MoE decode runs them. `torch._grouped_mm` (bf16) and, where present,
`torch._scaled_grouped_mm` (fp8 e4m3, row-wise scales), timed as CUDA-graph replays with
the expert weights rotated through >= 4x the L2, so every call streams its experts from HBM.
Writes $OUT/moe_decode_bench.json. Re-run: `OUT=$OUT python3 calibration/moe_decode_bench.py`."""
import json, math, os, traceback
import torch

# The timer of decode_bench.py (same directory; its measurements run only under __main__).
from decode_bench import graph_time

dev = "cuda"
bf = torch.bfloat16
OUT = os.environ.get("OUT", ".")
L2 = torch.cuda.get_device_properties(0).L2_cache_size
res = {
    "device": torch.cuda.get_device_name(0),
    "torch": torch.__version__,
    "method": "CUDA-graph replays (median of 7 after 2 warm-ups), expert weights rotated "
    "through >= 4x L2; every expert gets the same token count",
    "rows": [],
    "errors": [],
}

SHAPES = [
    # name, K, N (per expert: [tokens, K] x [K, N])
    ("deepseek-v3 expert up (gate+up)", 7168, 4096),
    ("deepseek-v3 expert down", 2048, 7168),
    ("qwen3-235b expert up (gate+up)", 4096, 3072),
    ("qwen3-235b expert down", 1536, 4096),
]


for name, K, N in SHAPES:
    for E in (8, 16, 32):
        for dtype in ("bf16", "fp8"):
            wbytes = E * K * N * (2 if dtype == "bf16" else 1)
            c = max(1, min(16, math.ceil(4 * L2 / wbytes)))
            try:
                if dtype == "bf16":
                    ws = [torch.randn(E, K, N, device=dev, dtype=bf) * 0.02 for _ in range(c)]
                else:
                    if not hasattr(torch, "_scaled_grouped_mm"):
                        raise RuntimeError("no torch._scaled_grouped_mm")
                    # mat_b is [E, K, N] column-major per expert: transpose of [E, N, K].
                    ws = [
                        (torch.randn(E, N, K, device=dev) * 0.5)
                        .to(torch.float8_e4m3fn)
                        .transpose(-2, -1)
                        for _ in range(c)
                    ]
                    sb = torch.ones(E, N, device=dev, dtype=torch.float32)
                for m in (1, 4, 16, 64, 128):
                    offs = torch.arange(m, E * m + 1, m, device=dev, dtype=torch.int32)
                    if dtype == "bf16":
                        a = torch.randn(E * m, K, device=dev, dtype=bf)

                        def body():
                            for w in ws:
                                torch._grouped_mm(a, w, offs=offs)

                    else:
                        a = (torch.randn(E * m, K, device=dev) * 0.5).to(torch.float8_e4m3fn)
                        sa = torch.ones(E * m, device=dev, dtype=torch.float32)

                        def body():
                            for w in ws:
                                torch._scaled_grouped_mm(a, w, sa, sb, offs=offs, out_dtype=bf)

                    try:
                        t = graph_time(body, c)
                    except Exception as e:
                        res["errors"].append(f"{name} E{E} {dtype} m{m}: {e!r}"[:300])
                        continue
                    res["rows"].append({
                        "shape": name, "k": K, "n": N, "experts": E, "tokens_per_expert": m,
                        "dtype": dtype, "us": t * 1e6, "weight_tbps": wbytes / t / 1e12,
                        "rotation": c,
                    })
                del ws
            except Exception as e:
                res["errors"].append(f"{name} E{E} {dtype}: {e!r}"[:300])
            torch.cuda.empty_cache()

with open(os.path.join(OUT, "moe_decode_bench.json"), "w") as f:
    json.dump(res, f, indent=1)
for r in res["rows"]:
    print(f"{r['shape']:32} E{r['experts']:3} {r['dtype']} m={r['tokens_per_expert']:4} "
          f"{r['us']:8.1f} us {r['weight_tbps']:.2f} TB/s")
print("errors", res["errors"])
