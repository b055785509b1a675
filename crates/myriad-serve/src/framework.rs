//! Serving-framework defaults: what a framework does when a setting is not stated.
//!
//! These are framework-level parameters (one value per framework, never per measurement),
//! each with its derivation. `iteration_overhead_us` is the host-side time per iteration
//! that the GPU does not hide: scheduling, sampling, detokenisation and launch of the
//! captured graph.

use serde::Serialize;

/// How a framework gives a new request its attention-DP rank. Each rank has its own
/// scheduler, batch limit (`max_batch / attention_dp`) and share of the KV cache, so once
/// placed a request waits in its rank's line until that rank can hold it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum DpPlacement {
    /// At admission, the rank with the most free KV cache; a request that rank cannot yet
    /// hold waits at the head of its line. No framework's rule: the placement of callers
    /// that name no framework.
    #[default]
    MostFreeKv,
    /// TensorRT-LLM's PyTorch executor, whether or not `attention_dp_config.enable_balance`
    /// is set (`ExecutorRequestQueue._fetch_new_requests_attention_dp`,
    /// `_schedule_attention_dp_requests` and `_balance_requests_across_ranks` in
    /// tensorrt_llm/_torch/pyexecutor/executor_request_queue.py; `DefaultADPRouter` in
    /// pyexecutor/scheduler/adp_router.py since): every executor iteration it takes waiting
    /// requests, FIFO, up to `attention_dp × max_num_active_requests` active ones, caps
    /// every rank at `max(ceil((active + new) / ranks), the fullest rank's active)` requests
    /// and hands the new ones out longest prompt first (`sorted(…, reverse=True)`), each to
    /// the rank at the top of a min-heap on (active prompt tokens, active requests, rank);
    /// a rank's active tokens are the prompt lengths (`py_orig_prompt_len`) of all its
    /// active requests, queued for its cache, prefilling or decoding. No KV check: the
    /// rank's own capacity scheduler admits them.
    FewestTokens,
    /// SGLang's data-parallel controller, `load_balance_method` `round_robin` (its default
    /// without disaggregation and on decode instances: `auto` resolves to it in
    /// `ServerArgs._handle_load_balance_method`): each request, as it arrives, to the next
    /// rank in turn (`round_robin_scheduler`, python/sglang/srt/managers/
    /// data_parallel_controller.py), whatever the ranks hold.
    RoundRobin,
    /// SGLang's prefill instances (`auto` resolves to `follow_bootstrap_room`): the rank is
    /// the request's `bootstrap_room` modulo the ranks, a random 63-bit id the router draws
    /// per request; here a hash of the request's index stands for it.
    BootstrapRoom,
    /// vLLM's data-parallel load balancer (`DPLBAsyncMPClient.get_core_engine_for_request`,
    /// vllm/v1/engine/core_client.py): each request, as it arrives, to the engine with the
    /// lowest `4 × waiting + running`, the first such from rank 0, and that engine's
    /// waiting count raised at once (the coordinator's counts, refreshed every 100 ms, are
    /// taken as current here).
    LeastLoaded,
}

/// Defaults of one serving framework.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Framework {
    pub id: &'static str,
    /// Host time per iteration not overlapped with GPU work, microseconds.
    pub iteration_overhead_us: f64,
    /// Host time per sequence per iteration, microseconds, of a host loop that runs one
    /// iteration ahead of the GPU: an iteration lasts at least this times the busiest
    /// rank's running sequences. 0: not measured for this framework (never binds).
    pub host_us_per_seq: f64,
    /// Share of the memory left after weights that goes to the KV cache.
    pub kv_fraction: f64,
    /// Prefill is chunked and mixed with decode under the token budget.
    pub chunked_prefill: bool,
    /// Default token budget per iteration (`max_num_tokens`).
    pub max_num_tokens: u32,
    /// Default maximum running sequences per instance.
    pub max_batch: u32,
    /// MoE all-to-all overlapped with compute (two micro-batches) by default.
    pub overlap_comm: bool,
    /// Decode attention reads each K/V head once for its whole query group (GQA-aware,
    /// e.g. TensorRT-LLM's XQA kernel); false: once per query head.
    pub gqa_decode_kernel: bool,
    /// With an fp8 KV cache, on accelerators that have such kernels (catalog
    /// `efficiency.fp8_attention`), the decode attention kernel quantises the queries and
    /// runs QK^T and PV in fp8 (at the fp8 tensor peak); false: it computes in bf16.
    /// TensorRT-LLM and SGLang (its `trtllm_mla` backend) call the trtllm-gen kernels;
    /// vLLM: not established, so bf16.
    pub fp8_decode_attention: bool,
    /// Sliding-window layers attend (read K/V and compute scores) over their window only;
    /// false: the window only masks scores, windowed layers cost full attention.
    pub sliding_window_attention: bool,
    /// The KV cache of sliding-window layers holds (and admission reserves) only the
    /// window; false: every layer keeps the whole sequence.
    pub sliding_window_kv: bool,
    /// With attention data parallelism and NVFP4 experts, every rank pads its MoE input
    /// to the busiest rank's token count before the all-gather, so the experts compute
    /// (and the collectives move) `attention_dp x` the busiest rank's tokens, whatever the
    /// other ranks hold. TensorRT-LLM's DeepSeek-V3 and Qwen3-MoE modules set
    /// `use_dp_padding` unless the experts run the CUTLASS backend without NVFP4
    /// (`Deepseekv3MoE.forward`, `Qwen3MoE.forward`, 2025).
    pub adp_pads_fp4_moe: bool,
    /// With attention data parallelism the MoE moves tokens by an all-gather over the EP
    /// ranks (quantised to NVFP4 first when the experts are NVFP4, else 16-bit) and the
    /// expert outputs back by a bf16 reduce-scatter, unless the EP group is larger than the
    /// router's top-k on a multi-node NVLink domain, where it runs an all-to-all:
    /// TensorRT-LLM's `CutlassFusedMoE.select_alltoall_method_type` returns `NotEnabled`
    /// (all-gather / reduce-scatter) when `moe_ep_size <= top_k`, and `MNNVL` only where
    /// `MnnvlMemory.supports_mnnvl()` (DeepEP only on request, `TRTLLM_CAN_USE_DEEP_EP`);
    /// its max-throughput mode is "routing + dynamic quant + fp4_allgather + FusedMoe +
    /// reducescatter, with AttentionDP on" (`fused_moe_cutlass.py`, 2025 releases). Its
    /// tech blog 3 (DeepSeek-R1 1K/2K max throughput, DEP8 on B200) lists "FP4 Allgather
    /// for better communication bandwidth utilization", about 3x the BF16 all-gather's
    /// speed at kernel level.
    pub moe_allgather_unless_wide_mnnvl: bool,
    /// How a new request gets its attention-DP rank (aggregated and decode instances).
    pub dp_placement: DpPlacement,
    /// The same on a disaggregated prefill instance.
    pub dp_placement_prefill: DpPlacement,
    pub source: &'static str,
}

pub const TRTLLM: Framework = Framework {
    id: "tensorrt-llm",
    iteration_overhead_us: 300.0,
    host_us_per_seq: 29.4,
    kv_fraction: 0.90,
    chunked_prefill: true,
    max_num_tokens: 8192,
    max_batch: 2048,
    overlap_comm: false,
    gqa_decode_kernel: true,
    fp8_decode_attention: true,
    sliding_window_attention: true,
    sliding_window_kv: false,
    adp_pads_fp4_moe: true,
    moe_allgather_unless_wide_mnnvl: true,
    dp_placement: DpPlacement::FewestTokens,
    dp_placement_prefill: DpPlacement::FewestTokens,
    source: "TensorRT-LLM: kv_cache_free_gpu_mem_fraction 0.9 (KvCacheConfig default); max_num_tokens 8192 and max_batch_size 2048 (BuildConfig defaults); trtllm-bench replaces both with its calc_engine_setting heuristic when ISL/OSL are known (validate.rs). Iteration overhead 0.3 ms: an assumption, not a measurement — the PyTorch backend's overlap scheduler prepares iteration n+1 while the GPU runs n, leaving the sampling/bookkeeping hand-off (a few hundred microseconds of Python per step) exposed. Host per sequence 29.4 us: TensorRT-LLM PR #10273 (Dec 2025) measured the PyTorch executor's host_step_time at 45.11 ms per iteration for gpt-oss-120b on GB200 (attention DP 2, max_batch_size 1536 per rank, 3,072 concurrent 1k/1k requests), a configuration it calls host-bound (Myriad's GPU step there: 28 ms); 45.11 ms / 1536 = 29.4 us per running sequence per iteration, the loop's Python per-request work (input preparation, sampling, responses; the scheduler itself 4.4%). Measured on a Grace host behind trtllm-serve (a client at 3,072 concurrent requests) and taken for x86 hosts and for trtllm-bench's in-process runs as well; where the latter skip per-token response work the figure may overstate them. Sliding window: KV not bounded - 'the memory allocation for the kv cache still relies on the buffer's maximum value' (docs/source/features/long-sequence.md) and since PR #6768 (Aug 2025) sliding-window blocks are written linearly for the whole sequence, so admission reserves full-length KV for every layer. Attention: the same doc says each token 'will only attend to the past N tokens', 'dramatically reducing the amount of computation and memory' (the kernels read only the last N cached tokens), so windowed layers are costed over their window. This moves gpt-oss-120b on H200 within -25..+15% but gpt-oss-20b on H100 to +25..+97%: the 20b rows' excess is not understood (docs/serving.md) and is left visible rather than hidden by costing the window as full attention",
};

pub const VLLM: Framework = Framework {
    id: "vllm",
    iteration_overhead_us: 1000.0,
    host_us_per_seq: 0.0,
    kv_fraction: 0.90,
    chunked_prefill: true,
    max_num_tokens: 8192,
    max_batch: 1024,
    overlap_comm: false,
    gqa_decode_kernel: true,
    fp8_decode_attention: false,
    sliding_window_attention: true,
    sliding_window_kv: true,
    adp_pads_fp4_moe: false,
    moe_allgather_unless_wide_mnnvl: false,
    dp_placement: DpPlacement::LeastLoaded,
    dp_placement_prefill: DpPlacement::LeastLoaded,
    source: "vLLM: gpu_memory_utilization 0.9; V1 engine defaults max_num_batched_tokens 8192 and max_num_seqs 1024 on large GPUs. Iteration overhead 1 ms: an assumption — vLLM's V1 redesign (2025) names host scheduling and sampling as the bottleneck it reduced; without measurements here 1 ms per step is taken. Sliding window exploited: the hybrid KV-cache manager gives sliding-window layers only their window (vLLM v0.10+), and the Triton unified-attention kernel prunes out-of-window tiles (vLLM PR #24390, Sep 2025, measured on gpt-oss)",
};

pub const SGLANG: Framework = Framework {
    id: "sglang",
    iteration_overhead_us: 500.0,
    host_us_per_seq: 0.0,
    kv_fraction: 0.85,
    chunked_prefill: true,
    max_num_tokens: 16384,
    max_batch: 4096,
    overlap_comm: true,
    gqa_decode_kernel: true,
    fp8_decode_attention: true,
    sliding_window_attention: true,
    sliding_window_kv: false,
    adp_pads_fp4_moe: false,
    moe_allgather_unless_wide_mnnvl: false,
    dp_placement: DpPlacement::RoundRobin,
    dp_placement_prefill: DpPlacement::BootstrapRoom,
    source: "SGLang: mem_fraction_static about 0.85-0.88 on 80-192 GB GPUs; chunked_prefill_size up to 16384; two-batch overlap for large-EP DeepSeek deployments (LMSYS blog 2025-05-05). Iteration overhead 0.5 ms: an assumption — the zero-overhead (overlap) scheduler hides batch preparation, leaving sampling and synchronisation. Sliding window: its attention backends take the window (gpt-oss needs it for correctness; the kernels skip out-of-window tiles), so windowed layers are costed over it; the KV cache is not bounded to the window: python/sglang/srt/mem_cache/swa_memory_pool.py (SWAKVPool, commit 00381c02) keeps windowed layers in a second pool sized as a ratio of the full pool (swa_full_tokens_ratio) rather than per sequence, so admission is counted against whole sequences as before",
};

/// TensorRT-LLM before v0.7: the same defaults, but a decode attention kernel (masked
/// multi-head attention) that reads K/V once per query head. The GQA-aware XQA decode
/// kernel came after v0.6 (recalled from NVIDIA's late-2023 TensorRT-LLM material on
/// Llama 2 70B; not re-checked against release notes in this work). The v0.6.1 static-batch
/// rows of serving-public.json are consistent with it (within 9%; 120% off without).
pub const TRTLLM_PRE_XQA: Framework = Framework {
    id: "tensorrt-llm<0.7",
    gqa_decode_kernel: false,
    ..TRTLLM
};

/// The framework a free-text name refers to (TensorRT-LLM when it names none we know).
pub fn framework(name: &str) -> &'static Framework {
    let n = name.to_ascii_lowercase();
    // LMSYS Org develops SGLang: its blog's serving measurements are SGLang runs.
    if n.contains("sglang") || n.contains("rtp-llm") || n.contains("lmsys") {
        &SGLANG
    } else if n.contains("vllm") {
        &VLLM
    } else if n.contains("v0.5") || n.contains("v0.6") {
        &TRTLLM_PRE_XQA
    } else {
        &TRTLLM
    }
}
