#!/usr/bin/env python3
"""Build validation/serving-heldout-azure-gb300.json: Azure's MLPerf Inference v5.1 Llama 2 70B
Offline run on 18 ND GB300 v6 VMs (72 GB300, an unofficial submission), in the row shape of
validation/serving-heldout-mlperf5.json.

Every number was read from egmsft/AI-benchmarking-guide @ 3371c0c3 (fetched snapshot):
Azure_Results/1M_ND_GB300_v6_Inference/results/ND_GB300_v6_{1..18}/llama2-70b-99/Offline/
mlperf_log_summary.txt ("Tokens per second", "Samples per second", "Result is : VALID"), the
harness config configs/ND_GB300_v6/Offline/llama2-70b.py (AccuracyTarget 0.99 block) and
systems/ND_GB300_v6.json. The model, dataset and LoadGen fields that the run shares with
NVIDIA's B200 Llama 2 70B Offline row are copied from that row, so the two differ only in what
the two runs differ in. Never used to tune the model.

Run from the repository root: python3 validation/tools/azure_gb300_mlperf.py
"""
import copy
import json

REPO = "egmsft/AI-benchmarking-guide"
COMMIT = "3371c0c3a302efe87c3f8c960e896945a51a9a3c"
BASE = "Azure_Results/1M_ND_GB300_v6_Inference"
# Per VM (4 GB300, four TP1 instances): (samples/s, tokens/s), VMs 1..18, all VALID.
PER_VM = [
    (229.863, 62690.8), (228.983, 62451.1), (228.494, 62317.7), (229.505, 62593.4),
    (212.961, 58081.1), (211.632, 57718.7), (224.877, 61331.1), (211.193, 57599.1),
    (229.395, 62563.3), (230.277, 62803.9), (228.86, 62417.3), (227.28, 61986.5),
    (216.49, 59043.8), (225.685, 61551.6), (228.198, 62236.9), (225.616, 61532.7),
    (217.978, 59449.4), (229.456, 62579.9),
]
# The summaries list VMs in the order 1, 10..18, 2..9; PER_VM above is in that order too.
VM_ORDER = [1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 2, 3, 4, 5, 6, 7, 8, 9]


def main():
    src = json.load(open("validation/serving-heldout-mlperf5.json"))
    tmpl = next(c for c in src["cases"]
                if c["id"] == "mlperf-inf-v5.1-nvidia-b200-sxm-180gbx8-llama2-70b-offline")
    total = sum(t for _, t in PER_VM)
    samples = sum(s for s, _ in PER_VM)
    gpus = 4 * len(PER_VM)
    row = copy.deepcopy(tmpl)
    row["id"] = "mlperf-inf-v5.1-azure-18xnd_gb300_v6-llama2-70b-offline"
    row["group"] = "azure_gb300_mlperf_heldout"
    row["source"] = {
        "kind": "MLPerf Inference v5.1 run published by Azure (unofficial submission, closed-division harness)",
        "repo": REPO,
        "commit": COMMIT,
        "result_log": f"{BASE}/results/ND_GB300_v6_{{1..18}}/llama2-70b-99/Offline/mlperf_log_summary.txt",
        "config": [f"{BASE}/configs/ND_GB300_v6/Offline/llama2-70b.py (AccuracyTarget 0.99 block: "
                   "TP1, gpu_batch_size 2048, max_num_tokens 4096, precision fp4, kv_cache_dtype fp8, "
                   "use_fp8_context_fmha, enable_chunked_context, batch_scheduler_policy max_util, "
                   "kvcache_free_gpu_mem_frac 0.95, offline_expected_qps 400, min_duration 2,400,000 ms)"],
        "system_json": f"{BASE}/systems/ND_GB300_v6.json",
        "read": "per VM 'Samples per second' and 'Tokens per second', all 'Result is : VALID': "
                + ", ".join(f"VM {v}: {t}" for v, (_, t) in zip(VM_ORDER, PER_VM)),
    }
    row["verification"] = "primary (raw LoadGen summaries and harness config read in the fetched repository snapshot)"
    row["hardware"] = {
        "accelerator": "gb300",
        "count": 4,
        "per_node": 4,
        "nodes": 1,
        "notes": "one Azure ND GB300 v6 VM (4 GB300, TGP 1400 W, NVLink-C2C to Grace; software "
                 "TensorRT 1.2.0rc1, CUDA 13.0, driver 580.82, systems/ND_GB300_v6.json); the run "
                 "is 18 such VMs, each its own LoadGen run of four TP1 instances, so one VM is modelled",
    }
    s = row["serving"]
    s["framework"] = "NVIDIA TensorRT-LLM (NVIDIA's MLPerf v5.1 harness as run by Azure; TensorRT-LLM 1.1.0rc6 wheel per README, TensorRT 1.2.0rc1 and CUDA 13.0 per systems json)"
    s["instances"] = 4
    s["instances_note"] = "derived: 4 GPUs / TP1"
    s["max_num_tokens"] = 4096
    s["notes"] = "config offline_expected_qps 400, enable_chunked_context True, batch_scheduler_policy max_util"
    s["target_qps"] = 400.0
    s["loadgen_requested"] = {
        "requested_offline_expected_qps": 400.0,
        "requested_min_duration_ms": 2400000.0,
        "requested_min_query_count": 1.0,
    }
    m = {
        "scenario": "offline",
        "result_validity": "VALID",
        "output_tokens_per_s_total": round(total / len(PER_VM), 1),
        "output_tokens_per_s_per_gpu": round(total / gpus, 2),
        "per_gpu_note": f"mean over the 18 VMs: {round(total, 1)} tokens/s on {gpus} GB300 "
                        f"(the published ~1.1M tokens/s) / {gpus}; per VM "
                        f"{min(t for _, t in PER_VM)}-{max(t for _, t in PER_VM)} tokens/s",
        "samples_per_s": round(samples / len(PER_VM), 3),
        "metric_note": tmpl["measured"]["metric_note"],
    }
    row["measured"] = m
    out = {
        "format": "myriad-measurements/1",
        "kind": "inference",
        "description": "Kept aside: Azure's MLPerf Inference v5.1 Llama 2 70B Offline run on 18 ND "
                       "GB300 v6 VMs (72 GB300, unofficial submission), read from the raw LoadGen "
                       "summaries and harness config in egmsft/AI-benchmarking-guide; same row shape "
                       "as serving-heldout-mlperf5.json, built by validation/tools/azure_gb300_mlperf.py. "
                       "Never used to tune the model.",
        "cases": [row],
    }
    with open("validation/serving-heldout-azure-gb300.json", "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
