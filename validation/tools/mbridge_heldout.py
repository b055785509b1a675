#!/usr/bin/env python3
"""Builds validation/training-heldout-mbridge.json: the Megatron-Bridge performance-summary
rows whose benchmark (model, system, GPU count, precision class) has no row in
../shared/validation/training-public.json, newest release of each.

Input: docs/performance-summary.md and docs/performance-summary-archive.md of
NVIDIA-NeMo/Megatron-Bridge at 067f987df (the snapshot the public file names), given as
two paths. Output on stdout. Rows of models Myriad has no architecture for (Nemotron 3
hybrid Mamba, DeepSeek-V4) are left out; DeepSeek-V3 and Kimi K2 runs state their
multi-token-prediction module (`model.mtp_layers`: 1, or 0 for the "w/o MTP" rows).

usage: mbridge_heldout.py SUMMARY.md ARCHIVE.md PUBLIC.json > training-heldout-mbridge.json
"""
import json
import re
import sys

SNAP = "067f987df"
ARCH = {
    "llama3_8b": {"name": "Llama 3 8B", "layers": 32, "hidden": 4096, "ffn_hidden": 14336,
                  "heads": 32, "kv_heads": 8, "vocab": 128256, "gated_mlp": True, "moe": None, "mla": None},
    "llama3_70b": {"name": "Llama 3 70B", "layers": 80, "hidden": 8192, "ffn_hidden": 28672,
                   "heads": 64, "kv_heads": 8, "vocab": 128256, "gated_mlp": True, "moe": None, "mla": None},
    "llama31_405b": {"name": "Llama 3.1 405B", "layers": 126, "hidden": 16384, "ffn_hidden": 53248,
                     "heads": 128, "kv_heads": 8, "vocab": 128256, "gated_mlp": True, "moe": None, "mla": None},
    "deepseekv3": {"name": "DeepSeek-V3", "layers": 61, "hidden": 7168, "ffn_hidden": 18432,
                   "heads": 128, "kv_heads": 128, "vocab": 129280, "gated_mlp": True,
                   "moe": {"experts": 256, "top_k": 8, "expert_ffn_hidden": 2048, "shared_experts": 1,
                           "dense_layers": 3, "dense_ffn_hidden": 18432},
                   "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                           "qk_rope_head_dim": 64, "v_head_dim": 128}},
    # moonshotai/Kimi-K2 config.json (DeepSeek-V3 architecture with 384 routed experts,
    # 64 heads, one dense layer, vocab 163840).
    "kimi_k2": {"name": "Kimi K2", "layers": 61, "hidden": 7168, "ffn_hidden": 18432,
                "heads": 64, "kv_heads": 64, "vocab": 163840, "gated_mlp": True,
                "moe": {"experts": 384, "top_k": 8, "expert_ffn_hidden": 2048, "shared_experts": 1,
                        "dense_layers": 1, "dense_ffn_hidden": 18432},
                "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                        "qk_rope_head_dim": 64, "v_head_dim": 128}},
    "gpt_oss_120b": {"name": "gpt-oss-120b", "layers": 36, "hidden": 2880, "ffn_hidden": 2880,
                     "heads": 64, "kv_heads": 8, "vocab": 201088, "gated_mlp": True,
                     "moe": {"experts": 128, "top_k": 4, "expert_ffn_hidden": 2880, "shared_experts": 0,
                             "dense_layers": 0, "dense_ffn_hidden": None}, "mla": None},
    "qwen3_30b_a3b": {"name": "Qwen3-30B-A3B", "layers": 48, "hidden": 2048, "ffn_hidden": 6144,
                      "heads": 32, "kv_heads": 4, "vocab": 151936, "gated_mlp": True,
                      "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 768, "shared_experts": 0,
                              "dense_layers": 0, "dense_ffn_hidden": None}, "mla": None},
    "qwen3_235b_a22b": {"name": "Qwen3-235B-A22B", "layers": 94, "hidden": 4096, "ffn_hidden": 12288,
                        "heads": 64, "kv_heads": 4, "vocab": 151936, "gated_mlp": True,
                        "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 1536, "shared_experts": 0,
                                "dense_layers": 0, "dense_ffn_hidden": None}, "mla": None},
}
SYSTEMS = {  # accelerator, per node, scale-up domain, scale-out Gb/s per GPU
    "DGX-H100": ("h100-sxm", 8, 8, 400),
    "DGX-B200": ("b200", 8, 8, 400),
    "DGX-B300": ("b300", 8, 8, 800),
    "DGX-GB200": ("gb200", 4, 72, 400),
    "DGX-GB300": ("gb300", 4, 72, 800),
}


def parse(path, doc):
    rows, release, model, system, cols, pretrain = [], None, None, None, None, False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^## (\S+) NeMo Container", line)
        if m:
            release, model, system, cols = m.group(1), None, None, None
            continue
        if line.startswith("### "):
            # Only pre-training tables (the archive also has SFT and LoRA ones).
            pretrain, model, system, cols = line.startswith("### Pre-Training"), None, None, None
            continue
        m = re.match(r"^#### (Model|System): (.+)$", line)
        if m:
            model, system = (m.group(2).strip(), None) if m.group(1) == "Model" else (None, m.group(2).strip())
            cols = None
            continue
        if line.startswith("| System") or line.startswith("| Model"):
            cols = [c.strip() for c in line.strip("|").split("|")]
            continue
        if line.startswith("|-") or not line.startswith("|") or not cols or not release or not pretrain:
            continue
        vals = [c.strip() for c in line.strip("|").split("|")]
        if len(vals) != len(cols):
            continue
        r = dict(zip(cols, vals), release=release, doc=doc)
        if model:
            r["Model"] = model
        if system:
            r["System"] = system
        rows.append(r)
    return rows


def pick(v, alt):
    m = re.match(r"(\S+)\s*(?:\((\S+)\))?", v or "")
    if not m:
        return v
    return m.group(2) if alt and m.group(2) else m.group(1)


def slug(model):
    variant = re.search(r"\((.*)\)", model)
    base = re.sub(r"\s*\(.*\)", "", model).lower().replace(".", "").replace(" ", "_")
    variant = variant.group(1).lower() if variant else ""
    # DeepSeek-V3 runs train with MTP unless the table says "w/o MTP"; "(dropless)" is the
    # default too (token-drop rows say so).
    return base, ("" if variant in ("w/ mtp", "dropless") else variant)


def pclass(p):
    p = p.upper()
    return "bf16" if "BF16" in p else "fp4" if "FP4" in p else "fp8"


def release_key(r):
    return tuple(int(x) for x in r.split("."))


def main():
    summary, archive, public = sys.argv[1:4]
    rows = parse(summary, "performance-summary.md") + parse(archive, "performance-summary-archive.md")
    expanded = []
    for r in rows:
        prec = r.get("Precision", "FP8")
        for alt in ([False, True] if "(" in r["Tokens / sec / GPU"] else [False]):
            d = {k: pick(r.get(k), alt) for k in
                 ["GBS", "MBS", "Sequence Length", "FSDP", "TP", "PP", "CP", "VP", "EP", "Tokens / sec / GPU"]}
            d.update(release=r["release"], doc=r["doc"], model=r["Model"], system=r["System"],
                     n=int(r["#-GPUs"]), prec=pick(prec, alt), alt=alt)
            expanded.append(d)
    pub = set()
    for c in json.load(open(public))["cases"]:
        m = re.match(r"mb-[\d.]+-(.+?)-dgx-(\w+)-(\d+)gpu", c["id"])
        if m:
            name = re.sub(r"[^a-z0-9]", "", m.group(1).replace("tokendrop", ""))
            pub.add((name, "tokendrop" in m.group(1), m.group(2), int(m.group(3)), c["training"]["precision"]))
    best = {}
    for d in expanded:
        base, variant = slug(d["model"])
        if base not in ARCH:
            continue
        sysname = d["system"].split("-", 1)[1].lower()
        key = (re.sub(r"[^a-z0-9]", "", base), "tokendrop" in variant, sysname, d["n"], pclass(d["prec"]))
        if key in pub:
            continue
        exact = key + (d["prec"], variant, d["alt"])
        tp, pp, cp = int(d["TP"]), int(d["PP"]), int(d["CP"])
        ep = 1 if d["EP"] == "n/a" else int(d["EP"])
        if d["n"] % (tp * pp * cp) or (d["n"] // pp) % ep:
            # Megatron-Core carves the expert-parallel group out of a stage's TP x CP x DP
            # ranks: a row whose EP exceeds them is a typo in the table.
            print(f"left out (EP {ep} does not fit {d['n'] // pp} ranks per stage): {d['release']} {d['model']} {d['system']} {d['prec']}{' alt' if d['alt'] else ''}", file=sys.stderr)
            continue
        if exact not in best or release_key(d["release"]) >= release_key(best[exact]["release"]):
            best[exact] = d
    # Of each benchmark keep only its newest release (older ones would be superseded rows).
    newest = {}
    for exact, d in best.items():
        k = exact[:5] + (exact[6],)  # benchmark and variant, any precision label
        if k not in newest or release_key(d["release"]) > release_key(newest[k]):
            newest[k] = d["release"]
    cases = []
    for exact, d in sorted(best.items()):
        if d["release"] != newest[exact[:5] + (exact[6],)]:
            continue
        base, variant = slug(d["model"])
        acc, per_node, domain, gbps = SYSTEMS[d["system"]]
        n, tp, pp, cp = d["n"], int(d["TP"]), int(d["PP"]), int(d["CP"])
        gbs, mbs, seq = int(d["GBS"]), int(d["MBS"]), int(d["Sequence Length"])
        tok = float(d["Tokens / sec / GPU"])
        vp = None if d["VP"] in ("n/a", "1", None) else int(d["VP"])
        prec_slug = d["prec"].lower().replace("-", "")
        vid = f"mb-{d['release']}-{base}{'-' + variant.replace('/', '').replace(' ', '') if variant else ''}-dgx-{d['system'].split('-', 1)[1].lower()}-{n}gpu-{prec_slug}{'-alt' if d['alt'] else ''}"
        model = dict(ARCH[base], seq_len=seq)
        notes = []
        if base in ("deepseekv3", "kimi_k2"):
            # Megatron-Bridge's DeepSeek-V3 and Kimi K2 models train one MTP module
            # (mtp_num_layers 1) unless the table says "w/o MTP".
            model["mtp_layers"] = 0 if "w/o mtp" in variant else 1
            if "w/o mtp" in variant:
                model["name"] += " (w/o MTP)"
        if d["FSDP"] not in (None, "", "0"):
            notes.append(f"the table's FSDP column reads {d['FSDP']} (Megatron FSDP over that many ranks), which this format cannot state")
        if d["alt"]:
            notes.append("the parenthesised figure of the row (the table's alternative quantisation granularity)")
        if gbps == 800:
            notes.append("scale-out: ConnectX-8, 800 Gb/s per GPU (DGX B300 / GB300 NVL72)")
        cases.append({
            "id": vid,
            "source": f"NVIDIA-NeMo/Megatron-Bridge docs/{d['doc']} (fetched snapshot HEAD {SNAP}), section '{d['release']} NeMo Container', Pre-Training, {d['model']} on {d['system']} ({d['prec']})",
            "system": {"accelerator": acc, "count": n, "per_node": per_node,
                       "scale_up_domain": min(domain, n), "scale_out_gbps_per_accelerator": gbps,
                       "scale_out_fabric": "infiniband"},
            "model": model,
            "training": {"global_batch": gbs, "micro_batch": mbs, "tp": tp, "pp": pp,
                         "dp": n // (tp * pp * cp), "cp": cp, "ep": 1 if d["EP"] == "n/a" else int(d["EP"]), "vpp": vp,
                         "sequence_parallel": None, "recompute": None, "precision": pclass(d["prec"]),
                         "distributed_optimizer": None},
            "measured": {"step_time_s": round(gbs * seq / (tok * n), 4)},
            "basis": f"global batch tokens / (measured tokens per second per GPU x GPUs): {gbs} x {seq} / ({tok:g} x {n})"
                     + ("; " + "; ".join(notes) if notes else ""),
        })
    json.dump({"format": "myriad-validation/1",
               "description": "Kept aside: Megatron-Bridge performance-summary rows (NVIDIA DGX H100, B200, B300, GB200 NVL72, GB300 NVL72) whose benchmark has no row in the public file, newest release of each; built by validation/tools/mbridge_heldout.py. Never used to tune the model.",
               "cases": cases}, sys.stdout, indent=1)
    print()


main()
