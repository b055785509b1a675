"""Attention efficiency versus head dimension, and grouped (MoE expert) GEMM efficiency
versus tokens per expert, on one GPU with PyTorch. Writes $OUT/moe_attn_bench.json."""
import json, os, torch
import torch.nn.functional as F

dev, dt = "cuda", torch.bfloat16

def timeit(fn, reps=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]

out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "attention": [], "grouped_gemm": []}
# Attention: causal, b*s = 65536 tokens, 32 query heads, GQA 8 KV heads; d in 64, 128, 192 (v=128 for 192).
for s in (4096, 8192):
    for d, dv in ((64, 64), (128, 128), (192, 128)):
        b = 65536 // s
        q = torch.randn(b, 32, s, d, device=dev, dtype=dt, requires_grad=True)
        k = torch.randn(b, 8, s, d, device=dev, dtype=dt, requires_grad=True)
        v = torch.randn(b, 8, s, dv, device=dev, dtype=dt, requires_grad=True)
        flops = 2 * b * 32 * s * s * (d + dv) * 0.5
        try:
            with torch.no_grad():
                f = timeit(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
            g = torch.randn(b, 32, s, dv, device=dev, dtype=dt)
            def fb():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                torch.autograd.grad(o, (q, k, v), g)
            fbt = timeit(fb)
            row = {"seq": s, "head_dim": d, "v_dim": dv, "fwd_ms": f, "fwd_bwd_ms": fbt,
                   "fwd_tflops": flops / f / 1e9, "fwd_bwd_tflops": 3.5 * flops / fbt / 1e9}
        except Exception as e:
            row = {"seq": s, "head_dim": d, "v_dim": dv, "error": str(e)[:200]}
        print(json.dumps(row), flush=True)
        out["attention"].append(row)
# Grouped GEMM: E experts, M tokens each, [M,K] x [K,N] per expert (torch._grouped_mm when present,
# else a loop of matmuls), bf16.
gm = getattr(torch, "_grouped_mm", None)
for (K, N) in ((2048, 1536), (2880, 5760), (7168, 4096)):
    for E in (4, 16, 32):
        for M in (256, 1024, 4096, 8192):
            x = torch.randn(E * M, K, device=dev, dtype=dt)
            w = torch.randn(E, K, N, device=dev, dtype=dt)
            offs = torch.arange(M, E * M + 1, M, device=dev, dtype=torch.int32)
            mode = "grouped_mm"
            try:
                fn = lambda: gm(x, w, offs=offs)
                fn()
            except Exception:
                mode = "loop"
                xs = x.view(E, M, K)
                fn = lambda: [xs[e] @ w[e] for e in range(E)]
            t = timeit(fn)
            fl = 2 * E * M * K * N
            row = {"K": K, "N": N, "experts": E, "tokens_per_expert": M, "mode": mode, "ms": t, "tflops": fl / t / 1e9}
            print(json.dumps(row), flush=True)
            out["grouped_gemm"].append(row)
            del x, w
os.makedirs(os.environ.get("OUT", "."), exist_ok=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "moe_attn_bench.json"), "w"), indent=1)
