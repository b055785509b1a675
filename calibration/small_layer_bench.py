"""One Llama-3-8B layer's forward+backward at small per-GPU token counts (the regime of
large-scale runs that split a sequence over TP x CP ranks), fused by torch.compile, timed
eagerly launched and replayed as a CUDA graph (Inductor "reduce-overhead": host launch cost
removed, as MLPerf submissions do), beside the plain eager layer. Per-kernel GPU time by
class from torch.profiler for the compiled layer. Writes $OUT/small_layer_bench.json."""
import json, os, statistics, time, torch
from torch.profiler import profile, ProfilerActivity
from common import BF16, Layer, by_class, kernel_times, rope_tables, sample_ms

OUT = os.environ.get("OUT", ".")
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
SEQS = [int(s) for s in os.environ.get("SEQS", "1024,2048,4096").split(",")]
H, FFN, HEADS, KV, D = 4096, 14336, 32, 8, 128

out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
t0 = time.time()
for seq in SEQS:
    torch.manual_seed(0)
    layer = Layer(H, FFN, HEADS, KV, D).to(dev)
    x = torch.randn(1, seq, H, device=dev, dtype=BF16, requires_grad=True)
    cos, sin = rope_tables(seq, D, dev)
    gy = torch.randn(1, seq, H, device=dev, dtype=BF16)
    row = {"seq": seq}
    for mode in ("eager", "compiled", "compiled_graph"):
        try:
            if mode == "eager":
                f = layer
            elif mode == "compiled":
                f = torch.compile(layer)
            else:
                f = torch.compile(layer, mode="reduce-overhead")

            def fb():
                torch.autograd.backward(f(x, cos, sin), gy)

            row[mode + "_ms"] = statistics.median(sample_ms(fb, 20, calls=5, warmup=5))
            if mode == "compiled":
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(3):
                        fb()
                    torch.cuda.synchronize()
                ks, n = kernel_times(prof, 3)
                row["compiled_kernel_ms_by_class"] = by_class(ks)
                row["compiled_kernels_per_fwd_bwd"] = n
        except Exception as e:
            row[mode + "_error"] = repr(e)[:400]
        print(seq, mode, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "seq"}, flush=True)
    out["rows"].append(row)
    with open(os.path.join(OUT, "small_layer_bench.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    torch._dynamo.reset()
print("done", round(time.time() - t0, 1))
