"""How much a communication-like kernel running beside GEMMs slows them on one GPU.
NCCL runs a collective as one CTA per channel (16-32 channels, each on an SM of its own)
streaming through HBM; the GEMMs it overlaps get the SMs that are left. Here a copy kernel
of K CTAs (K = 8, 16, 32; Triton, grid-stride over a 512 MiB buffer, looped to outlast
the GEMMs) runs on a second stream while 20 bf16 GEMMs of a training shape run on the
first. Reported: GEMM time alone and beside the copy, the copy's rate, and the fraction f
of the GEMMs' speed lost while the copy runs (f = 1 - alone/beside).
Writes $OUT/overlap_bench.json."""
import json, math, os, statistics, torch
import triton
import triton.language as tl

OUT = os.environ.get("OUT", ".")
dev, bf16 = "cuda", torch.bfloat16


@triton.jit
def spin_copy(src, dst, n, reps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    nblk = tl.cdiv(n, BLOCK)
    for r in range(reps):
        for b in range(pid, nblk, nprog):
            offs = b * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


def ev():
    return torch.cuda.Event(enable_timing=True)


n = 256 * 1024 * 1024  # bf16 elements: 512 MiB
src = torch.randn(n, device=dev, dtype=bf16)
dst = torch.empty_like(src)
SHAPES = [("llama3-8b fc1 8192x28672x4096", 8192, 28672, 4096), ("llama3-70b tp4 qkv 8192x2560x8192", 8192, 2560, 8192)]
out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
s2 = torch.cuda.Stream()


def copy(k, reps):
    spin_copy[(k,)](src, dst, n, reps, BLOCK=4096, num_warps=8)


for name, m, nn, kk in SHAPES:
    a = torch.randn(m, kk, device=dev, dtype=bf16)
    w = torch.randn(nn, kk, device=dev, dtype=bf16)
    c = torch.empty(m, nn, device=dev, dtype=bf16)
    G = 20

    def gemms():
        for _ in range(G):
            torch.mm(a, w.t(), out=c)

    for _ in range(3):
        gemms()
    torch.cuda.synchronize()
    alone = []
    for _ in range(5):
        e0, e1 = ev(), ev(); e0.record(); gemms(); e1.record(); torch.cuda.synchronize()
        alone.append(e0.elapsed_time(e1))
    t_alone = statistics.median(alone)
    row = {"shape": name, "m": m, "n": nn, "k": kk, "gemms": G, "gemm_alone_ms": t_alone, "tflops_alone": 2 * m * nn * kk * G / t_alone / 1e9, "by_ctas": []}
    for k in (8, 16, 32):
        copy(k, 1); torch.cuda.synchronize()
        e0, e1 = ev(), ev(); e0.record(); copy(k, 1); e1.record(); torch.cuda.synchronize()
        t1 = e0.elapsed_time(e1)
        reps = max(1, math.ceil(1.5 * t_alone / t1))
        beside = []
        for _ in range(5):
            c0, c1, g0, g1 = ev(), ev(), ev(), ev()
            with torch.cuda.stream(s2):
                c0.record(); copy(k, reps); c1.record()
            g0.record(); gemms(); g1.record()
            torch.cuda.synchronize()
            beside.append((g0.elapsed_time(g1), c0.elapsed_time(c1)))
        tb = statistics.median([b[0] for b in beside])
        tc = statistics.median([b[1] for b in beside])
        r = {"ctas": k, "copy_alone_ms_per_pass": t1, "copy_rate_GBps_alone": 2 * n * 2 / t1 / 1e6, "copy_passes": reps,
             "copy_ms_beside": tc, "gemm_beside_ms": tb, "slowdown": tb / t_alone - 1, "f_lost": 1 - t_alone / tb,
             "copy_outlasted_gemms": tc > tb}
        row["by_ctas"].append(r)
        print(name, k, {x: (round(y, 4) if isinstance(y, float) else y) for x, y in r.items()}, flush=True)
    print(name, "alone", round(t_alone, 3), "ms", round(row["tflops_alone"], 1), "TFLOP/s", flush=True)
    out["rows"].append(row)
with open(os.path.join(OUT, "overlap_bench.json"), "w") as fh:
    json.dump(out, fh, indent=1)
