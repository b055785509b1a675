#!/usr/bin/env python3
"""Build validation/serving-heldout-mlperf6.json: kept-aside MLPerf Inference v6.0 (closed
division, datacenter) serving rows, in the row shape of validation/serving-heldout-mlperf5.json.

Every number below was read from the raw LoadGen summaries
(results/<system>/<benchmark>/<scenario>/performance/run_1/mlperf_log_summary.txt), the
accuracy logs (accuracy/accuracy.txt, tokens_per_sample) and the submitters' harness configs in
gbeezybez/inference_results_v6.0 @ 232fbf90 (fetched snapshot; a fork of
mlcommons/inference_results_v6.0, whose own snapshot could not be fetched here; the fork's
later commits touch only open/Lattix). The model block and dataset fields of each row are
copied from the matching v5.1 row of serving-heldout-mlperf5.json, so rows differ only in what
the runs differ in. Never used to tune the model.

v6.1 (mlcommons/inference_results_v6.1) could not be fetched; its search-index copy
(intel-ai-tce fork) holds the NVIDIA result logs but not NVIDIA's configs/, so no v6.1 row
states its deployment and none is added. gpt-oss-120b rows are not added: no file read states
the performance dataset's mean input length (NVIDIA's README gives only max ISL 15,330 for the
6,396-sample set) and the validator, rightly, will not guess one.

Run from the repository root: python3 validation/tools/mlperf6_heldout.py
"""
import copy
import json

REPO = "gbeezybez/inference_results_v6.0"
COMMIT = "232fbf90fceb1d55b633030556fb02deddb4517b"
KIND = "MLPerf Inference v6.0 (closed division, datacenter)"
VERIFICATION = ("primary (raw MLPerf LoadGen summary + submitter harness config read in the "
                "fetched snapshot of a fork of mlcommons/inference_results_v6.0)")

# Read from each run's mlperf_log_summary.txt (latencies in ns), its mlperf_log_detail.txt
# (req_min_query_count: the 'requested_min_query_count' key) and accuracy/accuracy.txt.
RUNS = [
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'llama2-70b-99', 'scenario': 'Offline', 'samples_per_s': '413.714', 'tokens_per_s': '112954', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '440', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '2400000', 'min_query_count': '1', 'req_min_query_count': '24576', 'lat_mean': '1393285786798', 'lat_p50': '1393513698276', 'lat_p99': '2727613100462', 'tokens_per_sample': '273.1'},
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'llama2-70b-99', 'scenario': 'Server', 'samples_per_s': '393.11', 'tokens_per_s': '107317.80', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '400', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '1800000', 'min_query_count': '100', 'req_min_query_count': '100', 'lat_mean': '34069935081', 'lat_p50': '28844328916', 'lat_p99': '118635390649', 'ttft_mean': '327482428', 'ttft_p50': '325949172', 'ttft_p90': '421506802', 'ttft_p99': '471928571', 'tpot_mean': '123937588', 'tpot_p50': '118743142', 'tpot_p90': '149926513', 'tpot_p99': '154875532', 'tokens_per_sample': '271.7'},
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'llama3.1-405b', 'scenario': 'Offline', 'samples_per_s': '3.067', 'tokens_per_s': '1951.6', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '3', 'ttft_ns': '6000000000', 'tpot_ns': '175000000', 'min_duration_ms': '600000', 'min_query_count': '1', 'req_min_query_count': '8313', 'lat_mean': '1408217873467', 'lat_p50': '1412910309798', 'lat_p99': '2648962105246', 'tokens_per_sample': '636.0'},
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'llama3.1-405b', 'scenario': 'Server', 'samples_per_s': '2.29', 'tokens_per_s': '1460.25', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '2.3', 'ttft_ns': '6000000000', 'tpot_ns': '175000000', 'min_duration_ms': '600000', 'min_query_count': '8313', 'req_min_query_count': '8313', 'lat_mean': '77461144955', 'lat_p50': '82853412710', 'lat_p99': '134397708128', 'ttft_mean': '1839542050', 'ttft_p50': '1748698504', 'ttft_p90': '3027177752', 'ttft_p99': '4454488268', 'tpot_mean': '118816719', 'tpot_p50': '119858475', 'tpot_p90': '124263139', 'tpot_p99': '128003104', 'tokens_per_sample': '638.6'},
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Offline', 'samples_per_s': '18.7489', 'tokens_per_s': '70325.7', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '9.5', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '600000', 'min_query_count': '1', 'req_min_query_count': '105312', 'lat_mean': '2508573048324', 'lat_p50': '2493133944872', 'lat_p99': '5335926606257', 'tokens_per_sample': '3775.6280765724705'},
    {'submitter': 'NVIDIA', 'system': 'B300-SXM-270GBx8_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Server', 'samples_per_s': '11.39', 'tokens_per_s': '42721.39', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '11.5', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '600000', 'min_query_count': '105312', 'req_min_query_count': '105312', 'lat_mean': '222444312406', 'lat_p50': '124717209107', 'lat_p99': '1204174065894', 'ttft_mean': '516344243', 'ttft_p50': '512144735', 'ttft_p90': '737061452', 'ttft_p99': '806000185', 'tpot_mean': '59389965', 'tpot_p50': '60684414', 'tpot_p90': '61168954', 'tpot_p99': '61657362', 'tokens_per_sample': '3741.4772105742936'},
    {'submitter': 'NVIDIA', 'system': 'GB300-NVL72_GB300-288GB_aarch64x72_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Offline', 'samples_per_s': '172.442', 'tokens_per_s': '647076', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '180', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '2000000', 'min_query_count': '1', 'req_min_query_count': '877600', 'lat_mean': '2172883450844', 'lat_p50': '2149292525238', 'lat_p99': '4661896972134', 'tokens_per_sample': '3775.2474931631723'},
    {'submitter': 'NVIDIA', 'system': 'GB300-NVL72_GB300-288GB_aarch64x72_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Server', 'samples_per_s': '106.66', 'tokens_per_s': '400436.77', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '110', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '600000', 'min_query_count': '219400', 'req_min_query_count': '219400', 'lat_mean': '207405891707', 'lat_p50': '118529589833', 'lat_p99': '1073320310103', 'ttft_mean': '464469834', 'ttft_p50': '434281469', 'ttft_p90': '710059246', 'ttft_p99': '1001885257', 'tpot_mean': '56151598', 'tpot_p50': '57680634', 'tpot_p90': '68778033', 'tpot_p99': '76061582', 'tokens_per_sample': '3771.458979033728'},
    {'submitter': 'NVIDIA', 'system': 'GB300-NVL72_GB300-288GB_aarch64x72_TRT', 'benchmark': 'llama2-70b-99', 'scenario': 'Offline', 'samples_per_s': '4126.88', 'tokens_per_s': '1.12685e+06', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '4320', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '2400000', 'min_query_count': '1', 'req_min_query_count': '24576', 'lat_mean': '1325372849363', 'lat_p50': '1325153794104', 'lat_p99': '2599764060927', 'tokens_per_sample': '272.0'},
    {'submitter': 'NVIDIA', 'system': 'GB200-NVL72_GB200-186GB_aarch64x72_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Offline', 'samples_per_s': '129.533', 'tokens_per_s': '486141', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '10', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '600000', 'min_query_count': '1', 'req_min_query_count': '561664', 'lat_mean': '1800416199990', 'lat_p50': '1783735954030', 'lat_p99': '3861240274018', 'tokens_per_sample': '3761.302415679125'},
    {'submitter': 'NVIDIA', 'system': 'GB200-NVL72_GB200-186GB_aarch64x72_TRT', 'benchmark': 'deepseek-r1', 'scenario': 'Server', 'samples_per_s': '89.59', 'tokens_per_s': '336106.48', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '110', 'ttft_ns': '2000000000', 'tpot_ns': '80000000', 'min_duration_ms': '600000', 'min_query_count': '210624', 'req_min_query_count': '210624', 'lat_mean': '215076807821', 'lat_p50': '122715305459', 'lat_p99': '1105593800663', 'ttft_mean': '609060053', 'ttft_p50': '455363392', 'ttft_p90': '756909568', 'ttft_p99': '1158921553', 'tpot_mean': '58306669', 'tpot_p50': '59960879', 'tpot_p90': '70429783', 'tpot_p99': '79343615', 'tokens_per_sample': '3737.3990428441202'},
    {'submitter': 'NVIDIA', 'system': 'GB200-NVL72_GB200-186GB_aarch64x72_TRT', 'benchmark': 'llama2-70b-99', 'scenario': 'Offline', 'samples_per_s': '3270.2', 'tokens_per_s': '888054', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '3528', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '2400000', 'min_query_count': '1', 'req_min_query_count': '24576', 'lat_mean': '1346371233397', 'lat_p50': '1345887956761', 'lat_p99': '2651314345626', 'tokens_per_sample': '271.5'},
    {'submitter': 'AMD', 'system': '8xMI355X_2xEPYC_9575F', 'benchmark': 'llama2-70b-99', 'scenario': 'Offline', 'samples_per_s': '365.738', 'tokens_per_s': '103480', 'validity': 'VALID', 'scenario_line': 'Offline', 'target_qps': '370', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '3600000', 'min_query_count': '1', 'req_min_query_count': '24576', 'lat_mean': '4004257081878', 'lat_p50': '4007366560006', 'lat_p99': '4031644062306', 'tokens_per_sample': '284.2'},
    {'submitter': 'AMD', 'system': '8xMI355X_2xEPYC_9575F', 'benchmark': 'llama2-70b-99', 'scenario': 'Server', 'samples_per_s': '354.41', 'tokens_per_s': '100282.36', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '360', 'ttft_ns': '2000000000', 'tpot_ns': '200000000', 'min_duration_ms': '1800000', 'min_query_count': '100', 'req_min_query_count': '100', 'lat_mean': '41319947501', 'lat_p50': '35850130747', 'lat_p99': '136596635604', 'ttft_mean': '616415078', 'ttft_p50': '637051878', 'ttft_p90': '850114882', 'ttft_p99': '1019241339', 'tpot_mean': '144435776', 'tpot_p50': '153201297', 'tpot_p90': '157543008', 'tpot_p99': '161051159', 'tokens_per_sample': '283.0'},
    {'submitter': 'AMD', 'system': '8xMI355X_2xEPYC_9575F', 'benchmark': 'llama2-70b-99', 'scenario': 'Interactive', 'samples_per_s': '260.10', 'tokens_per_s': '73608.25', 'validity': 'VALID', 'scenario_line': 'Server', 'target_qps': '263', 'ttft_ns': '450000000', 'tpot_ns': '40000000', 'min_duration_ms': '600000', 'min_query_count': '100', 'req_min_query_count': '100', 'lat_mean': '10121546184', 'lat_p50': '8825377806', 'lat_p99': '32974558540', 'ttft_mean': '241975280', 'ttft_p50': '227905995', 'ttft_p90': '363500186', 'ttft_p99': '447556635', 'tpot_mean': '34999429', 'tpot_p50': '35971914', 'tpot_p90': '37702735', 'tpot_p99': '38889954', 'tokens_per_sample': '282.9'},
]

C = "closed/NVIDIA/configs/"
SYS = "closed/NVIDIA/systems/"
NV_FW = ("NVIDIA TensorRT-LLM (MLPerf v6.0 NVIDIA harness; TensorRT-LLM feat/1.2-mlpinf, "
         "TensorRT 10.14, CUDA 13.1 per systems json)")
NV_FW_DS = ("NVIDIA TensorRT-LLM PyTorch backend (MLPerf v6.0 NVIDIA harness; TensorRT-LLM "
            "feat/1.2-mlpinf, TensorRT 10.14, CUDA 13.1 per systems json)")
AGG_NOTE = ("the x8/x72 harness config carries only LoadGen and runtime overrides; per "
            "code/main.py its EXPORTS are 'harness system configs, may aggregate multiple "
            "atomic systems', so the per-instance settings are those of the atomic config")

HW = {
    "B300-SXM-270GBx8_TRT": {
        "accelerator": "b300", "count": 8, "per_node": 8, "nodes": 1,
        "notes": "NVIDIA DGX B300, 8x B300-SXM-270GB, 18x 5th-gen NVLink (14.4 TB/s aggregate); "
                 "B300 TGP 1100W; software TensorRT 10.14, CUDA 13.1, driver 580.126, "
                 "TensorRT-LLM feat/1.2-mlpinf (systems/B300-SXM-270GBx8_TRT.json, status available)",
    },
    "GB300-NVL72_GB300-288GB_aarch64x72_TRT": {
        "accelerator": "gb300", "count": 72, "per_node": 4, "nodes": 18, "scale_up_domain": 72,
        "notes": "NVIDIA GB300 NVL72: 72x GB300-288GB, 4 per node x 18 nodes, 5th-gen NVLink and "
                 "NVLink Switches, NVLink-C2C to Grace; 1400W TGP per GPU; software TensorRT 10.14, "
                 "CUDA 13.1, driver 580.105, TensorRT-LLM feat/1.2-mlpinf "
                 "(systems/GB300-NVL72_GB300-288GB_aarch64x72_TRT.json, status available)",
    },
    "GB200-NVL72_GB200-186GB_aarch64x72_TRT": {
        "accelerator": "gb200", "count": 72, "per_node": 4, "nodes": 18, "scale_up_domain": 72,
        "notes": "NVIDIA GB200 NVL72: 72x GB200-186GB, 4 per node x 18 nodes, 5th-gen NVLink and "
                 "NVLink Switches, NVLink-C2C to Grace; 1200W TGP per GPU; software TensorRT 10.14, "
                 "CUDA 13.1, driver 580.126, TensorRT-LLM feat/1.2-mlpinf "
                 "(systems/GB200-NVL72_GB200-186GB_aarch64x72_TRT.json, status available)",
    },
    "8xMI355X_2xEPYC_9575F": {
        "accelerator": "mi355x", "count": 8, "per_node": 8, "nodes": 1,
        "notes": "AMD Instinct MI355X 288GB HBM3e x8 (2x EPYC 9575F), XGMI; software PyTorch "
                 "2.9.1, ROCm 7.0.0, hipblaslt 1.0.0, vllm-11b6af52, aiter-6af8b687 "
                 "(systems/8xMI355X_2xEPYC_9575F.json, status available)",
    },
}

# Per (system, benchmark, scenario): the deployment as the harness configs state it.
DEPLOY = {
    ("B300-SXM-270GBx8_TRT", "llama2-70b-99", "Offline"): dict(
        config=[C + "B300-SXM-270GBx8/Offline/llama2-70b.py (offline_expected_qps 440, max_concurrency 3072, kv_cache_dtype fp8, precision fp4, min_duration 2,400,000 ms)",
                C + "B300-SXM-270GBx1/Offline/llama2-70b.py (atomic system: TP1 PP1, gpu_batch_size 3072, max_num_tokens 4608, use_fp8_context_fmha, enable_chunked_context True, kvcache_free_gpu_mem_frac 0.95, batch_scheduler_policy max_util)"],
        tp=1, gpus=1, inst=8, batch=3072, mnt=4608, kvf=0.95, chunked=True,
        notes="8 TP1 instances (" + AGG_NOTE + ": B300-SXM-270GBx1); config offline_expected_qps 440"),
    ("B300-SXM-270GBx8_TRT", "llama2-70b-99", "Server"): dict(
        config=[C + "B300-SXM-270GBx8/Server/llama2-70b.py (server_target_qps 400, max_concurrency 3072, kv_cache_dtype fp8, precision fp4, min_duration 1,800,000 ms)",
                C + "B300-SXM-270GBx1/Server/llama2-70b.py (atomic system: TP1 PP1, gpu_batch_size 3072, max_num_tokens 4608, enable_chunked_context True, kvcache_free_gpu_mem_frac 0.95, stream_interval 50)"],
        tp=1, gpus=1, inst=8, batch=3072, mnt=4608, kvf=0.95, chunked=True,
        notes="8 TP1 instances (" + AGG_NOTE + ": B300-SXM-270GBx1); config server_target_qps 400"),
    ("B300-SXM-270GBx8_TRT", "llama3.1-405b", "Offline"): dict(
        config=[C + "B300-SXM-270GBx8/Offline/llama3_1-405b.py (offline_expected_qps 3, min_query_count 8313, kv_cache_dtype fp8, precision fp4)",
                C + "B300-SXM-270GBx2/Offline/llama3_1-405b.py (atomic system: TP2 PP1, gpu_batch_size 2048, max_num_tokens 1536, use_fp8_context_fmha, enable_chunked_context True, kvcache_free_gpu_mem_frac 0.95)"],
        tp=2, gpus=2, inst=4, batch=2048, mnt=1536, kvf=0.95, chunked=True,
        notes="4 TP2 instances (" + AGG_NOTE + ": B300-SXM-270GBx2)"),
    ("B300-SXM-270GBx8_TRT", "llama3.1-405b", "Server"): dict(
        config=[C + "B300-SXM-270GBx8/Server/llama3_1-405b.py (server_target_qps 2.3, min_query_count 8313, kv_cache_dtype fp8, precision fp4)",
                C + "B300-SXM-270GBx2/Server/llama3_1-405b.py (atomic system: TP2 PP1, gpu_batch_size 2048, max_num_tokens 1024 '#reducing this to 1024 to meet tpot', enable_chunked_context True, kvcache_free_gpu_mem_frac 0.95)"],
        tp=2, gpus=2, inst=4, batch=2048, mnt=1024, kvf=0.95, chunked=True,
        notes="4 TP2 instances (" + AGG_NOTE + ": B300-SXM-270GBx2)"),
    ("B300-SXM-270GBx8_TRT", "deepseek-r1", "Offline"): dict(
        config=[C + "B300-SXM-270GBx8/Offline/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, enable_attention_dp True, gpu_batch_size 1024, runtime max_num_tokens 6144, enable_chunked_context False, kvcache_free_gpu_mem_frac 0.95, moe_backend CUTEDSL, adp_balancing_enable True / batching_wait_iters 10 / timeout_iters 500, cuda_graph_batch_sizes up to 1024, kv_cache_dtype fp8, offline_expected_qps 9.5)"],
        tp=8, ep=8, adp=8, gpus=8, inst=1, batch=1024, mnt=6144, kvf=0.95, chunked=False,
        moe="CUTEDSL", adp_cfg=(10, 500),
        notes="one TP8/EP8 attention-DP instance; no MTP/speculative setting in the config"),
    ("B300-SXM-270GBx8_TRT", "deepseek-r1", "Server"): dict(
        config=[C + "B300-SXM-270GBx8/Server/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, enable_attention_dp True, gpu_batch_size 640, runtime max_num_tokens 4608, enable_chunked_context False, kvcache_free_gpu_mem_frac 0.95, moe_backend CUTEDSL, adp_balancing_enable True / batching_wait_iters 3 / timeout_iters 9, stream_interval 20, kv_cache_dtype fp8, server_target_qps 9.5)"],
        tp=8, ep=8, adp=8, gpus=8, inst=1, batch=640, mnt=4608, kvf=0.95, chunked=False,
        moe="CUTEDSL", adp_cfg=(3, 9),
        notes="one TP8/EP8 attention-DP instance; no MTP/speculative setting in the config; config server_target_qps 9.5 vs log target_qps 11.5"),
    ("GB300-NVL72_GB300-288GB_aarch64x72_TRT", "deepseek-r1", "Offline"): dict(
        config=[C + "GB300-NVL72_GB300-288GB_aarch64x72/Offline/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, enable_attention_dp True, gpu_batch_size 1536, runtime max_num_tokens 6656, moe_backend CUTLASS, adp_balancing_enable True / batching_wait_iters 2 / timeout_iters 6, kv_cache_dtype fp8, offline_expected_qps 10 * 18, min_query_count 150 * 4388)"],
        tp=8, ep=8, adp=8, gpus=8, inst=9, batch=1536, mnt=6656, kvf=None, chunked=None,
        moe="CUTLASS", adp_cfg=(2, 6),
        notes="9 TP8/EP8 attention-DP instances (72 GPUs / 8); no MTP/speculative setting in the config"),
    ("GB300-NVL72_GB300-288GB_aarch64x72_TRT", "deepseek-r1", "Server"): dict(
        config=[C + "GB300-NVL72_GB300-288GB_aarch64x72/Server/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, enable_attention_dp True, gpu_batch_size 640, runtime max_num_tokens 4608, enable_chunked_context False, kvcache_free_gpu_mem_frac 0.95, moe_backend CUTEDSL, adp_balancing_enable True / batching_wait_iters 3 / timeout_iters 9, stream_interval 100, kv_cache_dtype fp8, server_target_qps 110, min_query_count 50 * 4388)"],
        tp=8, ep=8, adp=8, gpus=8, inst=9, batch=640, mnt=4608, kvf=0.95, chunked=False,
        moe="CUTEDSL", adp_cfg=(3, 9),
        notes="9 TP8/EP8 attention-DP instances (72 GPUs / 8); no MTP/speculative setting in the config (the Interactive run, not added, is disaggregated with MTP)"),
    ("GB300-NVL72_GB300-288GB_aarch64x72_TRT", "llama2-70b-99", "Offline"): dict(
        config=[C + "GB300-NVL72_GB300-288GB_aarch64x72/Offline/llama2-70b.py (offline_expected_qps 4320, kv_cache_dtype fp8, precision fp4, min_duration 2,400,000 ms)",
                C + "GB300-NVL72_GB300-288GB_aarch64x1/Offline/llama2-70b.py (atomic system: TP1 PP1, gpu_batch_size 3072, max_num_tokens 4608, kvcache_free_gpu_mem_frac 0.95)"],
        tp=1, gpus=1, inst=72, batch=3072, mnt=4608, kvf=0.95, chunked=None,
        notes="72 TP1 instances (" + AGG_NOTE + ": GB300-NVL72_GB300-288GB_aarch64x1)"),
    ("GB200-NVL72_GB200-186GB_aarch64x72_TRT", "deepseek-r1", "Offline"): dict(
        config=[C + "GB200-NVL72_GB200-186GB_aarch64x72/Offline/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, gpu_batch_size 512, max_num_tokens 4608, enable_chunked_context False, moe_backend WIDEEP, adp_balancing_enable True / batching_wait_iters 10 / timeout_iters 50, offline_expected_qps 12 * 9, min_query_count 70208 * 8)"],
        tp=8, ep=8, adp=8, gpus=8, inst=9, batch=512, mnt=4608, kvf=None, chunked=False,
        moe="WIDEEP", adp_cfg=(10, 50),
        notes="9 TP8/EP8 attention-DP instances (72 GPUs / 8); config offline_expected_qps 108 vs log target_qps 10; no MTP/speculative setting in the config"),
    ("GB200-NVL72_GB200-186GB_aarch64x72_TRT", "deepseek-r1", "Server"): dict(
        config=[C + "GB200-NVL72_GB200-186GB_aarch64x72/Server/deepseek-r1.py (tensor_parallelism 8, moe_expert_parallelism 8, gpu_batch_size 512, max_num_tokens 3456, enable_chunked_context False, moe_backend WIDEEP, adp_balancing_enable True / batching_wait_iters 3 / timeout_iters 9, server_target_qps 110, min_query_count 26328 * 8)"],
        tp=8, ep=8, adp=8, gpus=8, inst=9, batch=512, mnt=3456, kvf=None, chunked=False,
        moe="WIDEEP", adp_cfg=(3, 9),
        notes="9 TP8/EP8 attention-DP instances (72 GPUs / 8); no MTP/speculative setting in the config"),
    ("GB200-NVL72_GB200-186GB_aarch64x72_TRT", "llama2-70b-99", "Offline"): dict(
        config=[C + "GB200-NVL72_GB200-186GB_aarch64x72/Offline/llama2-70b.py (offline_expected_qps 3528, kv_cache_dtype fp8, precision fp4, min_duration 2,400,000 ms)",
                C + "GB200-NVL72_GB200-186GB_aarch64x1/Offline/llama2-70b.py (atomic system: TP1 PP1, gpu_batch_size 2048, max_num_tokens 3584, kvcache_free_gpu_mem_frac 0.95)"],
        tp=1, gpus=1, inst=72, batch=2048, mnt=3584, kvf=0.95, chunked=None,
        notes="72 TP1 instances (" + AGG_NOTE + ": GB200-NVL72_GB200-186GB_aarch64x1)"),
}
A = "closed/AMD/src/llama2-70b-99/"
AMD_FW = ("vLLM vllm-11b6af52 (V1 engine, VLLM_USE_V1 1; AMD MLPerf v6.0 harness_llm, one "
          "engine per GPU; ROCm 7.0.0, aiter-6af8b687)")
for scen, yml, batch, mnt, extra in [
        ("Offline", "offline_mi355x.yaml", 3392, 65536, "engine_version sync, VLLM_MIN_REQUEST_DECODE_STEP 3840, VLLM_SUBSEQUENT_DECODE_STEPS 17"),
        ("Server", "server_mi355x.yaml", 3096, 40960, "engine_version async, VLLM_MIN_REQUEST_DECODE_STEP 1216, VLLM_SUBSEQUENT_DECODE_STEPS 2"),
        ("Interactive", "interactive_mi355x.yaml", 4096, 8192, "engine_version async, VLLM_SUBSEQUENT_DECODE_STEPS 6")]:
    DEPLOY[("8xMI355X_2xEPYC_9575F", "llama2-70b-99", scen)] = dict(
        config=[A + yml + f" (tensor_parallel_size 1, quantization quark, model fp4_quantized_gptq, kv_cache_dtype fp8, dtype bfloat16, max_num_seqs {batch}, max_num_batched_tokens {mnt}, enable_chunked_prefill True, gpu_memory_utilization 0.95, async_scheduling True, cudagraph_mode FULL_AND_PIECEWISE)",
                A + "user_mi355x.conf (Offline target_qps 370 / min_duration 3,600,000; Server 360 / 1,800,000; Interactive 263 / 600,000)"],
        tp=1, gpus=1, inst=8, batch=batch, mnt=mnt, kvf=None, chunked=True, amd=True,
        notes=f"8 single-GPU vLLM engines (device_count 8); {extra}; block_size 16")

TEMPLATE = {
    ("llama2-70b-99", "nvidia", "Offline"): "mlperf-inf-v5.1-nvidia-b200-sxm-180gbx8-llama2-70b-offline",
    ("llama2-70b-99", "nvidia", "Server"): "mlperf-inf-v5.1-nvidia-b200-sxm-180gbx8-llama2-70b-server",
    ("llama2-70b-99", "amd", "Offline"): "mlperf-inf-v5.1-amd-8xmi300x_2xepyc_9575f-llama2-70b-offline",
    ("llama2-70b-99", "amd", "Server"): "mlperf-inf-v5.1-amd-8xmi300x_2xepyc_9575f-llama2-70b-server",
    ("llama2-70b-99", "amd", "Interactive"): "mlperf-inf-v5.1-amd-8xmi300x_2xepyc_9575f-llama2-70b-interactive",
    ("llama3.1-405b", "nvidia", "Offline"): "mlperf-inf-v5.1-nvidia-gb300-nvl72_gb300-288gb_aarch64x72-llama3.1-405b-offline",
    ("llama3.1-405b", "nvidia", "Server"): "mlperf-inf-v5.1-nvidia-gb300-nvl72_gb300-288gb_aarch64x72-llama3.1-405b-server",
    ("deepseek-r1", "nvidia", "Offline"): "mlperf-inf-v5.1-nvidia-gb300-nvl72_gb300-288gb_aarch64x72-deepseek-r1-offline",
    ("deepseek-r1", "nvidia", "Server"): "mlperf-inf-v5.1-nvidia-gb300-nvl72_gb300-288gb_aarch64x72-deepseek-r1-server",
}


def ms(ns):
    return round(int(ns) / 1e6, 3)


def num(x):
    return float(x)


def build(run, cases):
    sysn, bench, scen = run["system"], run["benchmark"], run["scenario"]
    vendor = "amd" if run["submitter"] == "AMD" else "nvidia"
    dep = DEPLOY[(sysn, bench, scen)]
    tmpl = cases[TEMPLATE[(bench, vendor, scen)]]
    row = copy.deepcopy(tmpl)
    hw = HW[sysn]
    sysid = sysn.lower()
    row["id"] = f"mlperf-inf-v6.0-{vendor}-{sysid}-{bench}-{scen.lower()}"
    row["group"] = "mlperf_inference_v6_heldout"
    base = f"closed/{run['submitter']}/results/{sysn}/{bench}/{scen}"
    server = run["scenario_line"] == "Server"
    tok, smp = num(run["tokens_per_s"]), num(run["samples_per_s"])
    read = (f"mlperf_log_summary.txt (Scenario : {run['scenario_line']}): "
            + (f"'Completed samples per second : {run['samples_per_s']}', 'Completed tokens per second: {run['tokens_per_s']}'"
               if server else f"'Samples per second: {run['samples_per_s']}', 'Tokens per second: {run['tokens_per_s']}'")
            + f", 'Result is : {run['validity']}', target_qps {run['target_qps']}, ttft_latency (ns) {run['ttft_ns']}, "
            f"tpot_latency (ns) {run['tpot_ns']}, min_duration (ms) {run['min_duration_ms']}, min_query_count {run['min_query_count']}")
    if server:
        read += (f"; 99.00 percentile first token latency (ns) {run['ttft_p99']}, "
                 f"99.00 percentile time to output token (ns) {run['tpot_p99']}")
    read += (f"; mlperf_log_detail.txt requested_min_query_count {run['req_min_query_count']} (the summary's "
             f"'min_query_count' is LoadGen's effective value)")
    read += f"; accuracy.txt tokens_per_sample {run['tokens_per_sample']}"
    sysjson = (f"closed/AMD/systems/{sysn}.json" if vendor == "amd" else SYS + sysn + ".json")
    row["source"] = {
        "kind": KIND,
        "repo": REPO,
        "commit": COMMIT,
        "result_log": run["result_log"] if "result_log" in run else base + "/performance/run_1/mlperf_log_summary.txt",
        "config": dep["config"],
        "accuracy_log": base + "/accuracy/accuracy.txt",
        "system_json": sysjson,
        "read": read,
    }
    row["verification"] = VERIFICATION
    row["hardware"] = copy.deepcopy(hw)
    s = row["serving"]
    gpus = hw["count"]
    if vendor == "amd":
        s["framework"] = AMD_FW
        s["weight_precision"] = "fp4 (Quark-quantised checkpoint fp4_quantized_gptq; yaml quantization quark; VLLM_ROCM_USE_AITER_FP4_ASM_GEMM 1)"
        s["activation_precision"] = None
        s["kv_cache_precision"] = "fp8 (yaml kv_cache_dtype fp8)"
        s["instances_note"] = "yaml tensor_parallel_size 1, device_count 8"
        s["max_batch_note"] = "vLLM max_num_seqs from the yaml"
        s["max_num_tokens_note"] = "vLLM max_num_batched_tokens; enable_chunked_prefill True"
        s["kv_cache_note"] = "vLLM gpu_memory_utilization 0.95 (fraction of total memory, not TRT-LLM's free-memory fraction)"
        s.pop("num_scheduler_steps", None)
        s["kv_cache_free_gpu_mem_frac"] = None
    else:
        s["framework"] = NV_FW_DS if bench == "deepseek-r1" else NV_FW
        if bench != "deepseek-r1":
            s["kv_cache_precision"] = "fp8 (config trtllm_checkpoint_flags kv_cache_dtype 'fp8')"
            s["instances_note"] = f"derived: {gpus} GPUs / TP{dep['tp']}"
            s["max_batch_note"] = "gpu_batch_size from the atomic config"
        s["kv_cache_free_gpu_mem_frac"] = dep["kvf"]
    s["tp"] = dep["tp"]
    s["pp"] = 1
    s["ep"] = dep.get("ep")
    s["attention_dp"] = dep.get("adp")
    s["gpus_per_instance"] = dep["gpus"]
    s["instances"] = dep["inst"]
    s["max_batch_per_instance"] = dep["batch"]
    s["max_num_tokens"] = dep["mnt"]
    if dep.get("chunked") is not None:
        s["chunked_prefill"] = dep["chunked"]
    else:
        s.pop("chunked_prefill", None)
    s["notes"] = dep["notes"]
    if bench == "deepseek-r1":
        s["parallel_note"] = "config tensor_parallelism 8, moe_expert_parallelism 8, enable_attention_dp True (attention data-parallel over the 8 ranks)"
        s["instances_note"] = f"derived: {gpus} GPUs / 8"
        s["max_batch_note"] = "gpu_batch_size from the config (per attention-DP rank in TensorRT-LLM's PyTorch backend)"
        s["max_num_tokens_note"] = "trtllm_runtime_flags max_num_tokens"
        s["moe_backend"] = dep["moe"]
        s["speculative_decoding"] = None
        s["speculative_decoding_note"] = "no MTP/speculative setting in the harness config"
        s["cuda_graph_batch_sizes"] = None
        s["cuda_graph_note"] = "config cuda_graph_batch_sizes with padding (not read by the validator)"
        w, t = dep["adp_cfg"]
        s["attention_dp_config"] = {"enable_balance": True, "timeout_iters": t, "batching_wait_iters": w}
        s["attention_dp_config_note"] = f"config trtllm_runtime_flags adp_balancing_enable True, adp_balancing_batching_wait_iters {w}, adp_balancing_timeout_iters {t}"
        s["checkpoint"] = "DeepSeek-R1 NVFP4 (config precision 'fp4'; the checkpoint's quantisation config was not read for v6.0 - the v5.1 row's hf_quant_config note is kept for the attention projections)"
    s["target_qps"] = num(run["target_qps"])
    s["ttft_limit_ms"] = ms(run["ttft_ns"])
    s["tpot_limit_ms"] = ms(run["tpot_ns"])
    key = "requested_server_target_qps" if server else "requested_offline_expected_qps"
    s["loadgen_requested"] = {
        key: num(run["target_qps"]),
        "requested_min_duration_ms": num(run["min_duration_ms"]),
        "requested_min_query_count": num(run["req_min_query_count"]),
    }
    m = {
        "scenario": scen.lower(),
        "result_validity": run["validity"],
        "output_tokens_per_s_total": tok,
        "output_tokens_per_s_per_gpu": round(tok / gpus, 2),
        "per_gpu_note": f"computed here = total / accelerator count ({gpus})",
        "samples_per_s": smp,
        "mean_output_tokens_per_sample_accuracy_run": round(num(run["tokens_per_sample"]), 2),
    }
    if server:
        for k in ["ttft_p50", "ttft_p90", "ttft_p99", "ttft_mean", "tpot_p50", "tpot_p90", "tpot_p99", "tpot_mean"]:
            m[k + "_ms"] = ms(run[k])
    m["request_latency_p50_ms"] = ms(run["lat_p50"])
    m["request_latency_p99_ms"] = ms(run["lat_p99"])
    m["request_latency_mean_ms"] = ms(run["lat_mean"])
    m["metric_note"] = tmpl["measured"]["metric_note"]
    row["measured"] = m
    return row


def main():
    src = json.load(open("validation/serving-heldout-mlperf5.json"))
    cases = {c["id"]: c for c in src["cases"]}
    rows = [build(r, cases) for r in RUNS]
    out = {
        "format": "myriad-measurements/1",
        "kind": "inference",
        "description": "Kept-aside serving measurements from MLPerf Inference v6.0 (closed division, "
                       "datacenter): Llama 2 70B (99) on B300, GB300 NVL72, GB200 NVL72 and MI355X "
                       "(Offline/Server/Interactive), Llama 3.1 405B and DeepSeek-R1 on B300 and "
                       "DeepSeek-R1 on GB300/GB200 NVL72 (Offline/Server). Every number is read from "
                       "the raw LoadGen summary and accuracy log and the submitter's harness config in "
                       f"{REPO} @{COMMIT[:8]} (fetched snapshot of a fork of "
                       "mlcommons/inference_results_v6.0); built by validation/tools/mlperf6_heldout.py. "
                       "Model blocks and dataset fields copied from the matching v5.1 rows of "
                       "serving-heldout-mlperf5.json. Disaggregated (Dynamo) Interactive runs, runs "
                       "whose per-instance deployment is not stated in a config read (B300 Llama 3.1 "
                       "8B), gpt-oss-120b (dataset mean input length not stated in any file read) and "
                       "v6.1 (configs not readable) are left out. Never used to tune the model.",
        "cases": rows,
    }
    with open("validation/serving-heldout-mlperf6.json", "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
