"""Times one transformer layer (forward, and forward+backward) on one GPU with PyTorch
eager ops, at the per-rank shapes of real training runs. Used to check Myriad's op-sum
compute model (calibration/README.md). Writes JSON to $OUT/layer_bench.json."""
import json, os, time, torch
from common import Layer, rope_tables, sample_ms

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
dt = torch.bfloat16

CONFIGS = [
    # name, hidden, ffn, heads, kv_heads, head_dim, seq, micro_batch, tp, gated
    ("llama3-8b tp1 s8192 b1", 4096, 14336, 32, 8, 128, 8192, 1, 1, True),
    ("llama3-8b tp1 s4096 b1", 4096, 14336, 32, 8, 128, 4096, 1, 1, True),
    ("llama3-70b tp4 s8192 b1", 8192, 28672, 64, 8, 128, 8192, 1, 4, True),
    ("gpt3-175b tp4 s2048 b1", 12288, 49152, 96, 96, 128, 2048, 1, 4, False),
    ("gpt3-175b tp8 s2048 b1", 12288, 49152, 96, 96, 128, 2048, 1, 8, False),
    ("nemotron4-15b tp4 s4096 b4", 6144, 24576, 48, 8, 128, 4096, 4, 4, False),
    ("llama3-405b tp8 s8192 b1", 16384, 53248, 128, 8, 128, 8192, 1, 8, True),
]

def timeit(fn, reps=10):
    return sorted(sample_ms(fn, reps))[reps // 2]

out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "method": "PyTorch eager, bf16, median of 10 after 3 warm-ups; one layer at per-rank TP shapes, no communication; SDPA causal (default backend)", "rows": []}
for name, h, ffn, heads, kv, d, seq, b, tp, gated in CONFIGS:
    torch.manual_seed(0)
    layer = Layer(h, ffn, heads, kv, d, tp, gated).to(dev)
    x = torch.randn(b, seq, h, device=dev, dtype=dt, requires_grad=True)
    cos, sin = rope_tables(seq, d, dev)
    gy = torch.randn(b, seq, h, device=dev, dtype=dt)
    with torch.no_grad():
        fwd = timeit(lambda: layer(x, cos, sin))
    def fb():
        y = layer(x, cos, sin)
        y.backward(gy)
    fwdbwd = timeit(fb)
    tokens = b * seq
    hq, hkv = heads // tp, max(kv // tp, 1)
    gemm = 2 * tokens * (h * (hq + 2 * hkv) * d + hq * d * h + h * (2 if gated else 1) * ffn // tp + ffn // tp * h)
    attn = 2 * b * hq * seq * seq * 2 * d * 0.5
    row = {"name": name, "hidden": h, "ffn": ffn, "heads": heads, "kv_heads": kv, "head_dim": d, "seq": seq,
           "micro_batch": b, "tp": tp, "gated": gated, "fwd_ms": fwd, "fwd_bwd_ms": fwdbwd,
           "gemm_flops_fwd": gemm, "attention_flops_fwd": attn,
           "fwd_tflops": (gemm + attn) / fwd / 1e9, "fwd_bwd_tflops": 3 * (gemm + attn) / fwdbwd / 1e9}
    print(json.dumps(row), flush=True)
    out["rows"].append(row)
    del layer, x, gy
    torch.cuda.empty_cache()
os.makedirs(os.environ.get("OUT", "."), exist_ok=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "layer_bench.json"), "w"), indent=1)
