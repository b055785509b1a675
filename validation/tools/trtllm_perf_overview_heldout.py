#!/usr/bin/env python3
"""Builds validation/serving-heldout-perf-overview.json: the columns of TensorRT-LLM's
performance overview (docs/source/developer-guide/perf-overview.md at 03e27c7d, the commit
the public serving file transcribes) that the public file leaves out, in its row shape.

Each row copies the public row of the same model as its template (model block, framework,
KV-cache and MoE settings, which the doc states per model, not per GPU) and takes the
column's GPU, parallel layout and precision, the checkpoint the doc lists for that
precision, and the table value. RTX 6000 Pro columns are left out (no catalog entry).
Qwen3 30B-A3B has no public row: its template is the Qwen3 235B one with the 30B
architecture (Qwen/Qwen3-30B-A3B config.json; the training presets' qwen3-30b-a3b).

usage: trtllm_perf_overview_heldout.py PUBLIC.json > serving-heldout-perf-overview.json
"""
import copy
import json
import re
import sys

COMMIT = "03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d"
# (model key, public template id, {column: {isl/osl: value}}) transcribed from the doc.
TABLES = [
    ("deepseek-r1", "trtllm-perfoverview-perGPU-deepseek-r1-b200-dep4-fp4-1000-1000", {
        "H200<br/>DEP8 (FP8)": {"1000/1000": 1627, "1024/1024": 1620, "1024/8192": 1218, "1024/32768": 438},
    }),
    ("gpt-oss-120b", "trtllm-perfoverview-perGPU-gpt-oss-120b-h200-tp1-fp8-1000-1000", {
        "B200<br/>DEP2 (FP4)": {"1000/1000": 25943, "1024/1024": 25870, "1024/8192": 17289, "1024/32768": 6279, "8192/1024": 6111, "32768/1024": 1392},
        "GB200<br/>TP1 (FP4)": {"1000/1000": 27198, "1024/1024": 26609, "1024/8192": 14800, "1024/32768": 5556, "8192/1024": 6835, "32768/1024": 1645},
        "H100<br/>DEP4 (FP8)": {"1000/1000": 4685, "1024/1024": 4715, "1024/32768": 1177, "8192/1024": 1169, "32768/1024": 333},
    }),
    ("gpt-oss-20b", "trtllm-perfoverview-perGPU-gpt-oss-20b-h100-tp1-fp8-1000-1000", {
        "B200<br/>TP1 (FP4)": {"1000/1000": 53812, "1024/1024": 53491, "1024/8192": 34702, "1024/32768": 14589, "8192/1024": 11904, "32768/1024": 2645},
        "GB200<br/>TP1 (FP4)": {"1000/1000": 55823, "1024/1024": 56528, "1024/8192": 38100, "1024/32768": 16463, "8192/1024": 12941, "32768/1024": 2905},
        "H200<br/>TP1 (FP8)": {"1000/1000": 13858, "1024/1024": 13890, "1024/8192": 12743, "8192/1024": 4015, "32768/1024": 915},
    }),
    ("llama3.3-70b", "trtllm-perfoverview-perGPU-llama3.3-70b-gb200-tp1-fp4-1000-1000", {
        "B200<br/>TP1 (FP4)": {"1000/1000": 6920, "1024/1024": 6842, "1024/8192": 3242, "8192/1024": 1362, "32768/1024": 274},
        "H200<br/>TP2 (FP8)": {"1000/1000": 2587, "1024/1024": 2582, "1024/8192": 2009, "8192/1024": 537, "32768/1024": 120},
        "H100<br/>TP2 (FP8)": {"1000/1000": 2209, "8192/1024": 398},
    }),
    ("llama4-maverick", "trtllm-perfoverview-perGPU-llama4-maverick-h200-dep8-fp8-1000-1000", {
        "B200<br/>DEP4 (FP4)": {"1000/1000": 11337, "1024/1024": 11227, "1024/8192": 5174, "1024/32768": 2204, "8192/1024": 3279, "32768/1024": 859},
        "GB200<br/>DEP4 (FP4)": {"1000/1000": 11828, "1024/1024": 11905, "1024/8192": 5508, "1024/32768": 2300, "8192/1024": 3444, "32768/1024": 963},
    }),
    ("qwen3-235b-a22b", "trtllm-perfoverview-perGPU-qwen3-235b-a22b-h200-dep4-fp8-1000-1000", {
        "B200<br/>DEP4 (FP4)": {"1000/1000": 5764, "1024/1024": 5756, "1024/8192": 3389, "1024/32768": 1255, "8192/1024": 1410, "32768/1024": 319},
        "GB200<br/>DEP4 (FP4)": {"1000/1000": 6172, "1024/1024": 5862, "1024/8192": 3423, "8192/1024": 1464, "32768/1024": 333},
        "H100<br/>DEP8 (FP8)": {"1000/1000": 1932, "1024/1024": 1935, "1024/8192": 873},
    }),
    ("qwen3-30b-a3b", "trtllm-perfoverview-perGPU-qwen3-235b-a22b-h200-dep4-fp8-1000-1000", {
        "B200<br/>TP1 (FP4)": {"1000/1000": 26971, "1024/1024": 26611, "1024/8192": 13497, "1024/32768": 4494, "8192/1024": 5735, "32768/1024": 1265},
        "GB200<br/>TP1 (FP4)": {"1000/1000": 22856, "1024/1024": 22201, "1024/8192": 14272, "1024/32768": 4925, "8192/1024": 6201, "32768/1024": 1380},
    }),
]
CHECKPOINTS = {  # the doc's FP4 / FP8 model lists
    ("deepseek-r1", "FP4"): "nvidia/DeepSeek-R1-0528-NVFP4-v2",
    ("deepseek-r1", "FP8"): "deepseek-ai/DeepSeek-R1-0528",
    ("qwen3-235b-a22b", "FP4"): "nvidia/Qwen3-235B-A22B-FP4",
    ("qwen3-235b-a22b", "FP8"): "nvidia/Qwen3-235B-A22B-FP8",
    ("qwen3-30b-a3b", "FP4"): "nvidia/Qwen3-30B-A3B-FP4",
    ("llama3.3-70b", "FP4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
    ("llama3.3-70b", "FP8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
    ("llama4-maverick", "FP4"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-NVFP4",
    ("llama4-maverick", "FP8"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8",
}
QWEN3_30B = {
    "name": "Qwen3-30B-A3B", "params_b": 30.5, "active_params_b": 3.3, "layers": 48, "hidden": 2048,
    "ffn_hidden": 6144, "heads": 32, "kv_heads": 4, "head_dim": 128, "vocab": 151936, "gated_mlp": True,
    "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 768, "shared_experts": 0, "dense_layers": 0},
    "mla": None,
    "arch_source": "Qwen/Qwen3-30B-A3B config.json (48 layers, hidden 2048, 32 query / 4 KV heads of 128, 128 experts top-8 of 768, vocab 151936); Myriad's qwen3-30b-a3b preset",
}
REQUESTS = {"1024/1024": 3000, "8192/1024": 1500, "1024/8192": 1500, "32768/1024": 1000, "1024/32768": 1000}


def main():
    public = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}
    cases = []
    for model, template_id, columns in TABLES:
        template = public[template_id]
        for column, values in columns.items():
            m = re.match(r"(\w+)<br/>(DEP|TP)(\d+) \((FP\d)\)", column)
            gpu, kind, n, prec = m.group(1), m.group(2), int(m.group(3)), m.group(4)
            acc = {"H100": "h100-sxm"}.get(gpu, gpu.lower())
            for seq, value in values.items():
                isl, osl = (int(x) for x in seq.split("/"))
                c = copy.deepcopy(template)
                if model == "qwen3-30b-a3b":
                    c["model"] = copy.deepcopy(QWEN3_30B)
                par = f"{kind.lower()}{n}"
                c["id"] = f"trtllm-perfoverview-perGPU-{model}-{gpu.lower()}-{par}-{prec.lower()}-{isl}-{osl}"
                c["group"] = "trtllm_perf_overview_heldout"
                c["source"]["table"] = f"{model} / column \"{column}\" / row {seq}"
                c["hardware"] = {
                    "accelerator": acc, "count": n, "per_node": 4 if acc.startswith("gb") else 8, "nodes": 1,
                    "notes": f"{gpu} per the doc's hardware list; per_node = GPUs per chassis (GB200 NVL72 compute tray = 4), not stated in doc",
                }
                s = c["serving"]
                if model.startswith("gpt-oss"):
                    s["weight_precision"] = f"table label {prec}; gpt-oss checkpoints are not in the doc's model lists (upstream gpt-oss ships MXFP4 MoE weights) - exact format unresolved"
                else:
                    s["weight_precision"] = ("nvfp4 (table label FP4)" if prec == "FP4" else "fp8 (table label FP8)")
                    s["checkpoint"] = CHECKPOINTS[(model, prec)]
                s["tp"], s["pp"] = n, 1
                if kind == "DEP":
                    s["ep"], s["attention_dp"] = n, n
                    s["parallel_note"] = "DEPn = n GPUs with attention data-parallel (enable_attention_dp) and expert parallel size n (trtllm-bench --tp n --ep n)"
                else:
                    s["ep"], s["attention_dp"] = None, None
                    s["parallel_note"] = "TPn"
                s["parallel_label"] = f"{kind}{n}"
                s["gpus"] = n
                s["isl"], s["osl"] = isl, osl
                s["num_requests"] = REQUESTS.get(seq)
                c["measured"] = {
                    "scenario": "offline",
                    "output_tokens_per_s_per_gpu": float(value),
                    "output_tokens_per_s_total": float(value * n),
                    "per_gpu_note": "per-GPU value is the table value (doc unit: output tokens/s/GPU incl. first token); total computed here = per-GPU x GPUs",
                }
                cases.append(c)
    json.dump({
        "format": "myriad-measurements/1",
        "kind": "inference",
        "description": f"Kept aside: the columns of TensorRT-LLM's performance overview (docs/source/developer-guide/perf-overview.md @ {COMMIT[:8]}) that ../shared/validation/serving-public.json leaves out (other GPUs for its models, and Qwen3 30B-A3B), in the public row shape; built by validation/tools/trtllm_perf_overview_heldout.py. Never used to tune the model.",
        "cases": cases,
    }, sys.stdout, indent=1)
    print()


main()
