"""Decode-regime calibration on one GPU (PyTorch only): what the serving model's decode step
rests on, measured rather than assumed.

1. Skinny GEMMs (M = 1..512 tokens against real weight shapes, bf16 and fp8 e4m3), timed as
   CUDA-graph replays with the weights rotated through more than 4x the L2, so each call
   streams its weights from HBM as a decode step does.
2. Decode attention: one new query token per sequence against a KV cache, GQA packed the way
   FlashAttention/FlashInfer decode kernels do (the query heads of one KV head ride as rows
   of one non-causal SDPA call), timed the same way.
3. A whole Llama-3-8B-shaped decode step (random bf16 weights, 32 layers, LM head), captured
   as one CUDA graph, at batch 1..256 and context 1024/4096; and the same step run eagerly
   (host launch cost exposed); and a prefill forward at 2048/8192 tokens.
4. Host cost of one eager PyTorch op (the launch-bound floor of an eager engine).

Writes $OUT/decode_bench.json and prints a summary. Re-run: `OUT=$OUT python3
calibration/decode_bench.py` on the device machine (calibration/README.md)."""
import json, math, os, time, traceback
import torch
import torch.nn.functional as F
from common import graphed

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
bf = torch.bfloat16
OUT = os.environ.get("OUT", ".")
L2 = torch.cuda.get_device_properties(0).L2_cache_size
res = {
    "device": torch.cuda.get_device_name(0),
    "torch": torch.__version__,
    "l2_bytes": L2,
    "method": "CUDA events around CUDA-graph replays (median of 7 replays after 2 warm-ups); "
    "operands rotated through >= 4x L2 so weights/KV stream from HBM; random data",
    "gemm": [],
    "attention": [],
    "step": [],
    "prefill": [],
    "host": {},
    "errors": [],
}


def save():
    with open(os.path.join(OUT, "decode_bench.json"), "w") as f:
        json.dump(res, f, indent=1)


def graph_time(body, calls_per_replay):
    """Median seconds per call of `body` (which issues `calls_per_replay` calls)."""
    replay = graphed(body)
    for _ in range(2):
        replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3)
    del replay
    ts.sort()
    return ts[len(ts) // 2] / calls_per_replay


def copies_for(nbytes):
    return max(1, min(32, math.ceil(4 * L2 / max(nbytes, 1))))


# ---------------------------------------------------------------- 1. skinny GEMMs
SHAPES = [
    # name, N, K  (C[M,N] = A[M,K] W[N,K]^T)
    ("llama3-8b qkv", 6144, 4096),
    ("llama3-8b o", 4096, 4096),
    ("llama3-8b gate_up", 28672, 4096),
    ("llama3-8b down", 4096, 14336),
    ("llama3-70b/tp8 qkv", 1280, 8192),
    ("llama3-70b/tp8 o", 8192, 1024),
    ("llama3-70b/tp8 gate_up", 7168, 8192),
    ("llama3-70b/tp8 down", 8192, 3584),
    ("llama3-8b lm_head", 128256, 4096),
]
MS = [1, 4, 16, 32, 64, 128, 256, 512]


def bench_gemms():
    for name, n, k in SHAPES:
        for dtype in ("bf16", "fp8"):
            wbytes = n * k * (2 if dtype == "bf16" else 1)
            c = copies_for(wbytes)
            try:
                if dtype == "bf16":
                    ws = [torch.randn(n, k, device=dev, dtype=bf) * 0.02 for _ in range(c)]
                else:
                    ws = [
                        (torch.randn(n, k, device=dev) * 0.5).to(torch.float8_e4m3fn)
                        for _ in range(c)
                    ]
                    one = torch.ones((), device=dev)
                for m in MS:
                    if dtype == "bf16":
                        a = torch.randn(m, k, device=dev, dtype=bf)
                        outs = [torch.empty(m, n, device=dev, dtype=bf) for _ in range(c)]

                        def body():
                            for w, o in zip(ws, outs):
                                torch.matmul(a, w.t(), out=o)

                    else:
                        a = (torch.randn(m, k, device=dev) * 0.5).to(torch.float8_e4m3fn)

                        def body():
                            for w in ws:
                                torch._scaled_mm(a, w.t(), one, one, out_dtype=bf)

                    try:
                        t = graph_time(body, c)
                    except Exception as e:
                        res["errors"].append(f"gemm {name} {dtype} m={m}: {e!r}"[:300])
                        continue
                    res["gemm"].append(
                        {
                            "shape": name,
                            "dtype": dtype,
                            "m": m,
                            "n": n,
                            "k": k,
                            "us": t * 1e6,
                            "weight_tbps": wbytes / t / 1e12,
                            "tflops": 2 * m * n * k / t / 1e12,
                            "rotation": c,
                        }
                    )
                del ws
            except Exception as e:
                res["errors"].append(f"gemm {name} {dtype}: {e!r}")
            torch.cuda.empty_cache()
        save()


# ---------------------------------------------------------------- 2. decode attention
def bench_attention():
    d = 128
    for hq, hkv in ((32, 8), (8, 1), (64, 8)):
        grp = hq // hkv
        for b in (1, 8, 32, 128):
            for ctx in (512, 2048, 8192, 32768):
                kvb = 2 * b * hkv * ctx * d * 2
                if kvb > 8e9:
                    continue
                c = copies_for(kvb)
                try:
                    kv = [
                        (
                            torch.randn(b, hkv, ctx, d, device=dev, dtype=bf),
                            torch.randn(b, hkv, ctx, d, device=dev, dtype=bf),
                        )
                        for _ in range(c)
                    ]
                    q = torch.randn(b, hkv, grp, d, device=dev, dtype=bf)

                    def body():
                        for kk, vv in kv:
                            F.scaled_dot_product_attention(q, kk, vv)

                    t = graph_time(body, c)
                    res["attention"].append(
                        {
                            "q_heads": hq,
                            "kv_heads": hkv,
                            "head_dim": d,
                            "batch": b,
                            "ctx": ctx,
                            "us": t * 1e6,
                            "kv_tbps": kvb / t / 1e12,
                            "rotation": c,
                        }
                    )
                    del kv
                except Exception as e:
                    res["errors"].append(f"attn {hq}/{hkv} b{b} ctx{ctx}: {e!r}")
                torch.cuda.empty_cache()
    save()


# ---------------------------------------------------------------- 3. Llama-3-8B step
H, FFN, HQ, HKV, D, LAYERS, VOCAB = 4096, 14336, 32, 8, 128, 32, 128256


class Model:
    def __init__(s):
        r = lambda *sh: torch.randn(*sh, device=dev, dtype=bf) * 0.02
        s.embed = r(VOCAB, H)
        s.layers = [
            dict(
                n1=torch.ones(H, device=dev, dtype=bf),
                qkv=r((HQ + 2 * HKV) * D, H),
                o=r(H, HQ * D),
                n2=torch.ones(H, device=dev, dtype=bf),
                gu=r(2 * FFN, H),
                down=r(H, FFN),
            )
            for _ in range(LAYERS)
        ]
        s.norm = torch.ones(H, device=dev, dtype=bf)
        s.head = r(VOCAB, H)

    def rope(s, x, cos, sin):
        x1, x2 = x[..., : D // 2], x[..., D // 2 :]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def decode(s, ids, kcache, vcache, pos, cos, sin, elementwise=True):
        """One decode step: ids [b], caches [layers][b, HKV, ctx, D]; writes slot `pos`."""
        b = ids.shape[0]
        x = s.embed[ids]
        for i, L in enumerate(s.layers):
            hN = F.rms_norm(x, (H,), L["n1"]) if elementwise else x
            y = (hN @ L["qkv"].t()).view(b, HQ + 2 * HKV, D)
            q, k, v = y.split([HQ, HKV, HKV], dim=1)
            if elementwise:
                q, k = s.rope(q, cos, sin), s.rope(k, cos, sin)
            kcache[i][:, :, pos] = k
            vcache[i][:, :, pos] = v
            qq = q.reshape(b, HKV, HQ // HKV, D)
            a = F.scaled_dot_product_attention(qq, kcache[i], vcache[i])
            x2 = a.reshape(b, HQ * D) @ L["o"].t()
            x = x + x2 if elementwise else x2
            hN = F.rms_norm(x, (H,), L["n2"]) if elementwise else x
            gu = hN @ L["gu"].t()
            if elementwise:
                g, u = gu.chunk(2, dim=-1)
                m = F.silu(g) * u
            else:
                m = gu[:, :FFN]
            x2 = m @ L["down"].t()
            x = x + x2 if elementwise else x2
        x = F.rms_norm(x, (H,), s.norm) if elementwise else x
        return (x @ s.head.t()).argmax(-1)

    def prefill(s, x):
        t = x.shape[1]
        cos = torch.randn(t, 1, D, device=dev, dtype=bf)
        sin = torch.randn(t, 1, D, device=dev, dtype=bf)
        for L in s.layers:
            y = (F.rms_norm(x, (H,), L["n1"]) @ L["qkv"].t()).view(1, t, HQ + 2 * HKV, D)
            q, k, v = y.split([HQ, HKV, HKV], dim=2)
            q, k = s.rope(q, cos, sin), s.rope(k, cos, sin)
            q, k, v = (z.transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(1, t, HQ * D) @ L["o"].t()
            g, u = (F.rms_norm(x, (H,), L["n2"]) @ L["gu"].t()).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ L["down"].t()
        return F.rms_norm(x[:, -1], (H,), s.norm) @ s.head.t()


def bench_step():
    torch.manual_seed(0)
    mdl = Model()
    weight_bytes = sum(v.numel() * 2 for L in mdl.layers for v in L.values()) + mdl.head.numel() * 2
    res["step_weight_bytes"] = weight_bytes
    for b, ctx in ((1, 1024), (1, 4096), (8, 1024), (8, 4096), (32, 1024), (32, 4096),
                   (64, 1024), (64, 4096), (128, 1024), (256, 1024)):
        try:
            kc = [torch.randn(b, HKV, ctx, D, device=dev, dtype=bf) for _ in range(LAYERS)]
            vc = [torch.randn(b, HKV, ctx, D, device=dev, dtype=bf) for _ in range(LAYERS)]
            ids = torch.randint(0, VOCAB, (b,), device=dev)
            cos = torch.randn(1, 1, D, device=dev, dtype=bf)
            sin = torch.randn(1, 1, D, device=dev, dtype=bf)
            pos = ctx - 1
            row = {"batch": b, "ctx": ctx, "kv_bytes": 2 * LAYERS * b * HKV * ctx * D * 2}
            for ew in (True, False):
                t = graph_time(lambda: mdl.decode(ids, kc, vc, pos, cos, sin, ew), 1)
                row["graph_ms" if ew else "graph_gemm_attn_only_ms"] = t * 1e3
            # Eager: host launches exposed.
            for _ in range(2):
                mdl.decode(ids, kc, vc, pos, cos, sin)
            torch.cuda.synchronize()
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                mdl.decode(ids, kc, vc, pos, cos, sin)
                torch.cuda.synchronize()
                ts.append(time.perf_counter() - t0)
            ts.sort()
            row["eager_ms"] = ts[2] * 1e3
            res["step"].append(row)
            del kc, vc
        except Exception as e:
            res["errors"].append(f"step b{b} ctx{ctx}: {traceback.format_exc()[-400:]}")
        torch.cuda.empty_cache()
        save()
    for t in (2048, 8192):
        try:
            x = torch.randn(1, t, H, device=dev, dtype=bf)
            for _ in range(2):
                mdl.prefill(x)
            torch.cuda.synchronize()
            ts = []
            for _ in range(5):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                mdl.prefill(x)
                e1.record()
                torch.cuda.synchronize()
                ts.append(e0.elapsed_time(e1))
            ts.sort()
            res["prefill"].append({"tokens": t, "ms": ts[2]})
        except Exception as e:
            res["errors"].append(f"prefill {t}: {e!r}")
    save()


# ---------------------------------------------------------------- 0. HBM streams
def bench_hbm():
    """Copy (read+write) and read-only (sum) of 1 GiB: the ceilings the GEMM and
    attention streams are compared with."""
    n = 1 << 30
    src = torch.randn(n // 2, device=dev, dtype=bf)
    dst = torch.empty_like(src)
    t = graph_time(lambda: dst.copy_(src), 1)
    res["hbm"] = {"copy_tbps": 2 * n / t / 1e12}
    out = torch.empty((), device=dev, dtype=torch.float32)
    t = graph_time(lambda: torch.sum(src, dtype=torch.float32), 1)
    res["hbm"]["read_tbps"] = n / t / 1e12
    del src, dst
    torch.cuda.empty_cache()
    save()


# ---------------------------------------------------------------- 4. eager host cost
def bench_host():
    x = torch.randn(64, device=dev)
    w = torch.randn(64, 64, device=dev)
    for name, fn in (("add_", lambda: x.add_(1.0)), ("linear", lambda: F.linear(x, w)),
                     ("rms_norm", lambda: F.rms_norm(x, (64,)))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        n = 5000
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        res["host"][name + "_us"] = (time.perf_counter() - t0) / n * 1e6
    save()


if __name__ == "__main__":
    t0 = time.time()
    for part in (bench_host, bench_gemms, bench_hbm, bench_attention, bench_step):
        try:
            part()
        except Exception:
            res["errors"].append(traceback.format_exc()[-800:])
        print(f"{part.__name__} done at {time.time() - t0:.0f} s", flush=True)
    res["runtime_s"] = time.time() - t0
    save()
    print("hbm", res.get("hbm"))
    print("host", res["host"])
    print("gemm (us, weight TB/s):")
    for r in res["gemm"]:
        if r["m"] in (1, 64, 256):
            print(f"  {r['shape']:24} {r['dtype']} m={r['m']:4} {r['us']:8.1f} us {r['weight_tbps']:.2f} TB/s")
    print("attention:")
    for r in res["attention"]:
        print(f"  {r['q_heads']}/{r['kv_heads']} b={r['batch']:4} ctx={r['ctx']:6} {r['us']:8.1f} us {r['kv_tbps']:.2f} TB/s")
    print("step:")
    for r in res["step"]:
        print("  ", r)
    print("prefill", res["prefill"])
    print("errors", res["errors"])
