"""Pieces the calibration benchmarks share: one transformer layer as PyTorch runs it
(eager ops; `torch.compile` fuses them), its rotary tables, and the kernel classes the
per-kernel profiles are summed into. Import from a script in this folder
(`python3 calibration/<script>.py` puts the folder on the module path)."""
import torch
import torch.nn.functional as F

BF16 = torch.bfloat16


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def rope_tables(seq, d, dev="cuda"):
    """cos and sin of the rotary angles for `seq` positions and head dim `d`, as bf16
    tensors shaped to broadcast over (batch, seq, heads, d)."""
    pos = torch.arange(seq, device=dev, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, device=dev, dtype=torch.float32) / (d // 2)))
    ang = pos * inv
    cos = torch.cat((ang.cos(), ang.cos()), -1)[None, :, None, :].to(BF16)
    sin = torch.cat((ang.sin(), ang.sin()), -1)[None, :, None, :].to(BF16)
    return cos, sin


def attention_block(s, x, cos, sin):
    """The residual attention half of a pre-norm layer `s` (its `n1`, `qkv`, `o`, `hq`,
    `hkv`, `d`): norm, fused QKV projection, rotary, causal GQA SDPA, output projection."""
    b, t, h = x.shape
    y = s.qkv(s.n1(x)).view(b, t, s.hq + 2 * s.hkv, s.d)
    q, k, v = y.split([s.hq, s.hkv, s.hkv], dim=2)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    q, k, v = (z.transpose(1, 2) for z in (q, k, v))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=s.hkv != s.hq)
    return x + s.o(a.transpose(1, 2).reshape(b, t, s.hq * s.d))


class Layer(torch.nn.Module):
    """One pre-norm transformer layer on one TP rank: RMSNorm + SwiGLU when `gated`,
    LayerNorm + GeLU otherwise; GQA attention through SDPA (causal)."""

    def __init__(s, h, ffn, heads, kv, d, tp=1, gated=True):
        super().__init__()
        s.hq, s.hkv, s.d = heads // tp, max(kv // tp, 1), d
        norm = torch.nn.RMSNorm if gated else torch.nn.LayerNorm
        s.n1, s.n2 = norm(h, dtype=BF16), norm(h, dtype=BF16)
        s.qkv = torch.nn.Linear(h, (s.hq + 2 * s.hkv) * d, bias=False, dtype=BF16)
        s.o = torch.nn.Linear(s.hq * d, h, bias=False, dtype=BF16)
        s.gated = gated
        s.up = torch.nn.Linear(h, (2 if gated else 1) * ffn // tp, bias=False, dtype=BF16)
        s.down = torch.nn.Linear(ffn // tp, h, bias=False, dtype=BF16)

    def forward(s, x, cos, sin):
        x = attention_block(s, x, cos, sin)
        u = s.up(s.n2(x))
        if s.gated:
            g, u = u.chunk(2, dim=-1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u)
        return x + s.down(u)


def sample_ms(fn, samples, calls=1, warmup=3):
    """Per-call milliseconds of `samples` samples, each `calls` back-to-back calls of `fn`
    between two CUDA events, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(samples):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / calls)
    return ts


def median_ms(fn, samples, calls=1, warmup=3):
    """Median per-call milliseconds of `sample_ms` and its samples, sorted."""
    ts = sorted(sample_ms(fn, samples, calls, warmup))
    return ts[len(ts) // 2], ts


def graphed(body):
    """`body` captured once in a CUDA graph (multi-stream forks included) after one warm-up
    call on a side stream (cuBLAS handles, autotuning outside the capture); returns the
    graph's replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    return g.replay


def classify(kernel_name):
    """The class a profiled kernel's time counts in: attention, gemm or other."""
    n = kernel_name.lower()
    if any(s in n for s in ("flash", "fmha", "cudnn", "attention", "sdpa")):
        return "attention"
    if any(s in n for s in ("gemm", "xmma", "cutlass", "nvjet", "sm90_", "ampere_")):
        return "gemm"
    return "other"


def kernel_rows(prof, reps):
    """(name, calls, GPU ms) per pass of every kernel a `torch.profiler` run of `reps`
    passes recorded (operator and runtime rows left out)."""
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t > 0 and not ev.key.startswith(("aten::", "cuda", "autograd", "torch", "Profiler", "Torch", "Compiled", "##")):
            rows.append((ev.key, ev.count / reps, t / 1000.0 / reps))
    return rows


def kernel_times(prof, reps):
    """GPU milliseconds per pass of every kernel a `torch.profiler` run of `reps` passes
    recorded (operator and runtime rows left out), and how many kernels ran per pass."""
    ks, n = {}, 0.0
    for name, calls, ms in kernel_rows(prof, reps):
        ks[name] = ks.get(name, 0.0) + ms
        n += calls
    return ks, n


def by_class(kernels):
    cls = {}
    for k, v in kernels.items():
        cls[classify(k)] = cls.get(classify(k), 0.0) + v
    return cls


def profile_kernels(fn, reps=3):
    """GPU time of every kernel (and memcpy) per call of `fn`, from torch.profiler (CUPTI)
    over `reps` calls after one warm-up: (total ms, [(name, calls, ms)] longest first)."""
    from torch.profiler import profile, ProfilerActivity

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    kernels = sorted(kernel_rows(p, reps), key=lambda k: -k[2])
    return sum(k[2] for k in kernels), kernels
