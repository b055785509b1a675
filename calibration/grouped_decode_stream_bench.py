"""Can grouped expert GEMMs in decode stream their weights at the dense skinny-GEMM rate?

moe_decode_bench.py found PyTorch's grouped kernels (torch._grouped_mm,
torch._scaled_grouped_mm) streaming expert weights at 1.6-2.9 TB/s on the H200, about
their H100 figure, where its dense skinny GEMMs reach 3.66 TB/s. This script times, on the
same shapes (DeepSeek-V3 and Qwen3-235B experts, 8-32 experts, 1-64 tokens each, bf16):
  - torch._grouped_mm, weights [E, N, K] (nn.Linear's layout) and [E, K, N] row-major (as
    moe_decode_bench.py),
  - one cuBLAS GEMM per expert, the loop captured in a CUDA graph,
  - a plain Triton grouped kernel: one program per (expert, 64-128 output columns), the
    whole K loop software-pipelined, the best of a few tile/stage choices,
and reports each one's weight stream (TB/s). Weights are rotated through two copies, each
larger than the L2, so every call streams from HBM. Writes $OUT/grouped_decode_stream_bench.json.
Re-run: `OUT=$OUT python3 calibration/grouped_decode_stream_bench.py` (about a minute).
"""
import json, os, time
import torch
import triton
import triton.language as tl

OUT = os.environ.get("OUT", ".")
dev = "cuda"
t0 = time.time()


@triton.jit
def grouped_decode(X, W, Y, M, N, K,
                   sxe, sxm, swe, swn, sye, sym,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pn = tl.program_id(0)
    e = tl.program_id(1)
    rm = tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    xp = X + e * sxe + rm[:, None] * sxm + rk[None, :]
    wp = W + e * swe + rn[:, None] * swn + rk[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        x = tl.load(xp, mask=rm[:, None] < M, other=0.0)
        w = tl.load(wp)
        acc += tl.dot(x, tl.trans(w))
        xp += BK
        wp += BK
    yp = Y + e * sye + rm[:, None] * sym + rn[None, :]
    tl.store(yp, acc.to(tl.bfloat16), mask=rm[:, None] < M)


def triton_call(x, w, y, cfg):
    E, M, K = x.shape
    N = w.shape[1]
    BN, BK, stages, warps = cfg
    BM = max(16, triton.next_power_of_2(M))
    grid = (N // BN, E)
    grouped_decode[grid](x, w, y, M, N, K,
                         x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
                         BM=BM, BN=BN, BK=BK, num_stages=stages, num_warps=warps)


def graph_time_us(fn, calls=20, reps=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / calls)
    ts.sort()
    return ts[len(ts) // 2]


SHAPES = [("deepseek-v3 expert up (gate+up)", 7168, 4096), ("deepseek-v3 expert down", 2048, 7168),
          ("qwen3-235b expert up (gate+up)", 4096, 3072), ("qwen3-235b expert down", 1536, 4096)]
CONFIGS = [(64, 128, 4, 4), (64, 256, 3, 4), (128, 128, 4, 4), (32, 256, 4, 4)]
rows, errors = [], []
l2 = torch.cuda.get_device_properties(0).L2_cache_size
for name, K, N in SHAPES:
    for E in (8, 16, 32):
        wbytes = E * N * K * 2
        copies = 2 if wbytes > 2 * l2 else max(2, (4 * l2) // wbytes + 1)
        ws = [torch.randn(E, N, K, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        # moe_decode_bench.py's layout: [E, K, N] row-major.
        ws_kn = [w.transpose(1, 2).contiguous() for w in ws]
        for M in (1, 16, 64):
            x = torch.randn(E, M, K, device=dev, dtype=torch.bfloat16)
            y = torch.empty(E, M, N, device=dev, dtype=torch.bfloat16)
            row = {"shape": name, "k": K, "n": N, "experts": E, "tokens_per_expert": M, "dtype": "bf16",
                   "weight_bytes": wbytes, "rotation": copies}
            # torch._grouped_mm: x as (E*M, K) with offsets, weights as (E, K, N).
            xs = x.reshape(E * M, K)
            offs = torch.arange(1, E + 1, device=dev, dtype=torch.int32) * M
            for key, wl in (("grouped_mm_us", [w.transpose(-2, -1) for w in ws]), ("grouped_mm_kn_us", ws_kn)):
                try:
                    row[key] = graph_time_us(lambda i, wl=wl: torch._grouped_mm(xs, wl[i % copies], offs=offs))
                except Exception as ex:
                    errors.append(f"{name} E{E} M{M} {key}: {ex!r}"[:300])
            # One cuBLAS GEMM per expert.
            def loop(i):
                w = ws[i % copies]
                for e in range(E):
                    torch.matmul(x[e], w[e].t(), out=y[e])
            row["cublas_loop_us"] = graph_time_us(loop, calls=10)
            best = None
            for cfg in CONFIGS:
                if N % cfg[0] or K % cfg[1]:
                    continue
                try:
                    us = graph_time_us(lambda i, c=cfg: triton_call(x, ws[i % copies], y, c))
                except Exception as ex:
                    errors.append(f"{name} E{E} M{M} triton {cfg}: {ex!r}"[:300])
                    continue
                if best is None or us < best[0]:
                    best = (us, cfg)
            if best:
                row["triton_us"], row["triton_config"] = best[0], list(best[1])
                if E == 8 and M == 16:
                    triton_call(x, ws[0], y, best[1])
                    ref = torch.bmm(x.float(), ws[0].float().transpose(1, 2))
                    row["triton_max_rel_err"] = float(((y.float() - ref).abs().max() / ref.abs().max()).item())
            for k in ("grouped_mm_us", "grouped_mm_kn_us", "cublas_loop_us", "triton_us"):
                if k in row:
                    row[k.replace("_us", "_tbps")] = round(wbytes / (row[k] * 1e-6) / 1e12, 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
        del ws, ws_kn
        torch.cuda.empty_cache()

out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
       "method": "CUDA-graph replays (20 calls; the cuBLAS loop 10), median of 10 replays; weights rotated through copies larger than the L2; TB/s = weight bytes / time",
       "rows": rows, "errors": errors, "runtime_s": time.time() - t0}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "grouped_decode_stream_bench.json"), "w") as f:
    json.dump(out, f, indent=1)
print("done", round(time.time() - t0, 1), "s,", len(errors), "errors")
