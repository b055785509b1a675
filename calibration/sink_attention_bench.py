"""cuDNN's fused attention with gpt-oss's learned sink and 128-token sliding window, the
kernels Transformer Engine runs for Megatron's gpt-oss (`softmax_type="learnable"`,
`window_size=(127, 0)` on every other layer: TE's FusedAttention, F16 arbitrary-seqlen
backend, cuDNN >= 9.13.1 for non-vanilla softmax), which PyTorch's own SDPA cannot run.

Why (session 35): Megatron-Bridge's eager gpt-oss-120b rows run about 1.55x the model's
compute time on H100, B200, GB200 and B300 alike (the gap scales with tokens per
micro-batch and GPU speed, not with host calls), while one GPU's layer in PyTorch
(FlexAttention for the band and sink, `gptoss_layer_bench.py`) takes what the model says.
If cuDNN's sink or band kernels were much slower than the plain causal kernel, that would
be where the time goes. This measures them.

Shapes: gpt-oss-120b attention of one rank (64 query heads, 8 KV heads, head dim 64,
bf16), one and four 4,096-token sequences, BSHD layout as TE's sbhd/bshd. Variants:
causal (full layers) and causal with a 128-token band (sliding-window layers), each
without and with the learned sink (a float32 logit per head); forward and backward
(with the sink's gradient). Timing: CUDA events, median of 10 samples of 10
back-to-back `execute` calls after 3 warm-ups. A check first: at 512 tokens, the
forward output against a float32 PyTorch reference of the same masked softmax with the
sink in its denominator.

Needs the cuDNN frontend (`nvidia-cudnn-frontend`, carried as a wheel) and cuDNN >= 9.13.1
(PyTorch's bundled one). Writes $OUT/sink_attention_bench.json.

Run: `python3 calibration/sink_attention_bench.py`."""
import json, math, os, traceback
import torch
import cudnn
from common import median_ms

H, HKV, D = 64, 8, 64
WINDOW = 128
dt = torch.bfloat16


def bshd(b, h, s, d):
    """A (b, h, s, d) logical tensor with BSHD physical layout."""
    return torch.randn(b, s, h, d, device="cuda", dtype=dt).permute(0, 2, 1, 3)


MASKS = (
    # cuDNN frontend spellings of a causal 128-token band, tried in turn.
    dict(use_causal_mask=True, sliding_window_length=WINDOW),
    dict(diagonal_band_left_bound=WINDOW, diagonal_band_right_bound=0),
)


def build(b, s, band, sink, backward):
    """Forward (and backward) graphs; returns a dict with the callables and tensors."""
    scale = 1.0 / math.sqrt(D)
    q, k, v = bshd(b, H, s, D), bshd(b, HKV, s, D), bshd(b, HKV, s, D)
    o = torch.empty_like(q)
    stats = torch.empty(b, H, s, 1, device="cuda", dtype=torch.float32)
    sink_t = (torch.randn(1, H, 1, 1, device="cuda", dtype=torch.float32) if sink else None)
    mask_opts = MASKS if band else (dict(use_causal_mask=True),)
    last = None
    for mask in mask_opts:
        try:
            g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                              intermediate_data_type=cudnn.data_type.FLOAT,
                              compute_data_type=cudnn.data_type.FLOAT)
            tq, tk, tv = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
            kw = dict(mask)
            ts = None
            if sink:
                ts = g.tensor_like(sink_t)
                kw["sink_token"] = ts
            to, tst = g.sdpa(name="sdpa", q=tq, k=tk, v=tv, is_inference=False,
                             attn_scale=scale, **kw)
            to.set_output(True).set_dim(o.size()).set_stride(o.stride())
            tst.set_output(True).set_dim(stats.size()).set_stride(stats.stride())
            tst.set_data_type(cudnn.data_type.FLOAT)
            g.validate(); g.build_operation_graph()
            g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
            g.check_support(); g.build_plans()
            pack = {tq: q, tk: k, tv: v, to: o, tst: stats}
            if sink:
                pack[ts] = sink_t
            r = {"mask": dict(mask), "q": q, "k": k, "v": v, "o": o, "sink": sink_t, "fwd_graph": g, "fwd_pack": pack}
            ws = g.get_workspace_size()
            if backward:
                gb = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                                   intermediate_data_type=cudnn.data_type.FLOAT,
                                   compute_data_type=cudnn.data_type.FLOAT)
                do = torch.randn_like(o)
                dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
                bq, bk, bv = gb.tensor_like(q), gb.tensor_like(k), gb.tensor_like(v)
                bo, bdo, bst = gb.tensor_like(o), gb.tensor_like(do), gb.tensor_like(stats)
                kwb = dict(mask)
                dsink = None
                if sink:
                    bs = gb.tensor_like(sink_t)
                    dsink = torch.zeros_like(sink_t)
                    bds = gb.tensor_like(dsink)
                    kwb["sink_token"] = bs
                    kwb["dSink_token"] = bds
                tdq, tdk, tdv = gb.sdpa_backward(name="sdpa_backward", q=bq, k=bk, v=bv, o=bo,
                                                 dO=bdo, stats=bst, attn_scale=scale, **kwb)
                tdq.set_output(True).set_dim(dq.size()).set_stride(dq.stride())
                tdk.set_output(True).set_dim(dk.size()).set_stride(dk.stride())
                tdv.set_output(True).set_dim(dv.size()).set_stride(dv.stride())
                gb.validate(); gb.build_operation_graph()
                gb.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
                gb.check_support(); gb.build_plans()
                bpack = {bq: q, bk: k, bv: v, bo: o, bdo: do, bst: stats, tdq: dq, tdk: dk, tdv: dv}
                if sink:
                    bpack[bs] = sink_t
                    bpack[bds] = dsink
                r.update(bwd_graph=gb, bwd_pack=bpack, dsink=dsink)
                ws = max(ws, gb.get_workspace_size())
            r["workspace"] = torch.empty(max(ws, 1), device="cuda", dtype=torch.uint8)
            return r
        except Exception as e:
            last = e
    raise last


def reference(q, k, v, sink, band):
    """float32 masked softmax attention with the sink logit in the denominator."""
    rep = H // HKV
    qf, kf, vf = q.float(), k.float().repeat_interleave(rep, 1), v.float().repeat_interleave(rep, 1)
    s = q.shape[2]
    sc = qf @ kf.transpose(-1, -2) / math.sqrt(D)
    i = torch.arange(s, device="cuda")
    allowed = i[None, :] <= i[:, None]
    if band:
        allowed &= i[None, :] > i[:, None] - WINDOW
    sc = sc.masked_fill(~allowed, float("-inf"))
    if sink is not None:
        sk = sink.view(1, H, 1, 1).expand(sc.shape[0], H, s, 1)
        p = torch.softmax(torch.cat([sc, sk], -1), -1)[..., :s]
    else:
        p = torch.softmax(sc, -1)
    return p @ vf


def main():
    res = {"method": __doc__, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cudnn_frontend": cudnn.__version__, "cudnn_backend": cudnn.backend_version(),
           "checks": [], "rows": [], "errors": []}
    print("cudnn backend", cudnn.backend_version(), "frontend", cudnn.__version__, flush=True)
    for band in (False, True):
        for sink in (False, True):
            try:
                r = build(1, 512, band, sink, backward=False)
                r["fwd_graph"].execute(r["fwd_pack"], r["workspace"])
                torch.cuda.synchronize()
                ref = reference(r["q"], r["k"], r["v"], r["sink"], band)
                err = (r["o"].float() - ref).abs().max().item()
                res["checks"].append({"band": band, "sink": sink, "mask": r["mask"], "max_abs_err": err,
                                      "ref_max": ref.abs().max().item()})
                print("check", band, sink, r["mask"], err, flush=True)
            except Exception:
                res["errors"].append({"check": [band, sink], "trace": traceback.format_exc()[-3000:]})
                print("check failed", band, sink, traceback.format_exc()[-600:], flush=True)
    for b in (1, 4):
        for band in (False, True):
            for sink in (False, True):
                row = {"seqs": b, "seq_len": 4096, "band": WINDOW if band else None, "sink": sink}
                try:
                    r = build(b, 4096, band, sink, backward=True)
                    f = lambda: r["fwd_graph"].execute(r["fwd_pack"], r["workspace"])
                    g = lambda: r["bwd_graph"].execute(r["bwd_pack"], r["workspace"])
                    row["mask"] = r["mask"]
                    row["fwd_ms"], row["fwd_samples"] = median_ms(f, 10, calls=10)
                    row["bwd_ms"], row["bwd_samples"] = median_ms(g, 10, calls=10)
                    if sink:
                        row["dsink_abs_mean"] = r["dsink"].abs().mean().item()
                    print(json.dumps({k: v for k, v in row.items() if not k.endswith("samples")}), flush=True)
                except Exception:
                    row["error"] = traceback.format_exc()[-3000:]
                    print("failed", row["seqs"], band, sink, row["error"][-600:], flush=True)
                res["rows"].append(row)
                torch.cuda.empty_cache()
    path = os.path.join(os.environ.get("OUT", "."), "sink_attention_bench.json")
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1, default=str)
    print("wrote", path)


if __name__ == "__main__":
    main()
