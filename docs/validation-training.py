#!/usr/bin/env python3
"""Regenerates docs/validation-training.md from `myriad validate --json`.

Run from the repository root: python3 docs/validation-training.py
"""
import json
import subprocess

FILE = "../shared/validation/training-public.json"


def validate(path):
    """`myriad validate PATH --json`, parsed."""
    return json.loads(subprocess.run(
        ["cargo", "run", "--release", "-q", "--", "validate", path, "--json"],
        check=True, capture_output=True, text=True,
    ).stdout)


d = validate(FILE)
lines = [
    "# Training validation: every case of `../shared/validation/training-public.json`",
    "",
    "Generated with `python3 docs/validation-training.py` (runs `myriad validate "
    "../shared/validation/training-public.json --json`; error = predicted / measured - 1).",
    "Rows marked *superseded* repeat a benchmark under an older software release; they count "
    "in the mean but not in the worst case.",
    "",
    "| id | predicted s | measured s | error | MFU | note |",
    "|---|---:|---:|---:|---:|---|",
]
for c in d["cases"]:
    if c.get("error") is None:
        lines.append(f"| {c['id']} | - | {c['measured_step_time_s']:.3f} | failed | - | {c.get('failure') or ''} |")
        continue
    note = "superseded" if c.get("superseded") else ""
    lines.append(
        f"| {c['id']} | {c['predicted_step_time_s']:.3f} | {c['measured_step_time_s']:.3f} | "
        f"{100 * c['error']:+.1f}% | {100 * c['mfu']:.1f}% | {note} |"
    )
s = d["summary"]
lines += [
    "",
    f"Summary: {s['count']} cases, mean |error| {100 * s['mae']:.1f}%, median "
    f"{100 * s['median_abs_error']:.1f}%, worst current {100 * s['worst_abs_error']:.1f}% ({s['worst_id']}).",
    "",
]
WHY = """
## Why the worst rows miss

What in each source's setup the model does not capture (the model has no per-case or
per-source parameter; these are explanations, not corrections):

- **The sign of the error follows the software stack, not the hardware.** Signed mean error
  (predicted / measured − 1) by source, with the same model: Megatron-LM SC'21 −6.4%,
  Korthikanti 2022 −2.3%, NeMo 24.07 −3.7%, DGX Cloud 24.11 −5.4%, Megatron-Bridge −13.1%
  (MoE rows included; public-file figures of 2026-11-26, the kept-aside ones that follow
  are older), MegaScale's Megatron-LM baseline −11.3%, MLPerf GPT-3 v3.0 −9.3%,
  v3.1 −4.1%, v4.0 −11.0%, v4.1 +10.0%, Meta's Llama 3 +0.8%. MLPerf's own GPT-3 runs got 26%
  faster from v3.0 to v4.1 on the same 512 H100 (12.12 s → 9.59 s at batch 2048; Myriad
  moves 8% for the v4.1 layout), so between software generations the same hardware spans
  more than the whole error budget. Transformer Engine's userbuffers overlap runs the
  reduce-scatter-overlapped forward GEMMs (attention projection, second MLP GEMM) on the SMs
  left after `num_sm` (`set_sm_margin`; TE's default 16, the recipes' tuned configs 16-24,
  e.g. `userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048`: 24 for the projection): now
  modelled with TE's default (`training.tp_comm_overlap_sms`, catalog `sm_count`), it moved
  this file from 9.8% to 9.6% (median 7.3% to 6.6%), the MLPerf GPT-3 worst case from
  −14.6% to −14.0%, MLPerf v5 from 8.9% to 8.8% and Llama 3 from 2.7% to 2.8%. Mechanisms
  read in the frameworks' source that would slow NVIDIA-recipe runs and are not modelled
  yet, with their expected size: the recipes' larger margins (24 SMs instead of 16 on some
  GEMMs), about +0.5%. On Hopper, TE's fp8 forward GEMMs accumulate in the MMA (fast
  accumulation) and its dgrad and wgrad GEMMs promote to fp32 (`_2X_ACC_DGRAD`,
  `_2X_ACC_WGRAD`); ../shared/calibration measured both on 126 shapes each (0.676 and
  0.627 of the fp8 peak; the blended 0.65 fitted both before). With each GEMM at its own
  rate (catalog `gemm_fp8_fast_acc`, `gemm_fp8_split_acc`; serving keeps the blend) this
  file went from 9.6% to 9.5%, MLPerf GPT-3 from 8.2% to 8.1% (worst −14.0% → −13.4%) and
  MLPerf v5 from 8.8% to 8.6%. Not modelled either:
  attention dropout in GPT-3 recipes (0.1 in DGX Cloud, 0 in MLPerf) costs cuDNN's fused
  kernel only 3% of attention time on Hopper (TransformerEngine issue #3312, H200, sbhd).
  None of these reaches the −7…−14%. Four measurements on a lent H100 (2026-11-26,
  `calibration/README.md`) narrowed where the rest is. (1) One layer with its element-wise
  work fused (`torch.compile`, the closest stand-in for Transformer Engine in that image):
  Llama 3 8B and Nemotron-4 15B forward+backward in 21.5 and 18.2 ms, the op sum 1.8% and
  1.0% less, so one GPU's layer compute is not where the dense H100 rows lose 5-7%.
  (2) A GPU training for 150 s: from 47 to 70 °C the layer lost 0.7% of its speed and
  back-to-back GEMMs none, so the hours of a real run do not explain it either. (3) The
  gradient GEMMs: in bf16 the data- and weight-gradient GEMMs of seven training shapes run
  at the forward GEMM's speed (median time ratio 0.99-1.00). (4) GEMMs beside a copy kernel
  of NCCL's 16-32 channels lose 13-35% of their speed (mean 0.24): the slowdown hidden
  communication inflicts, assumed 0.2 before, is now that measurement
  (`efficiency.comm_overlap_slowdown`), which moved this file from 9.5% to 9.3% and the
  kept-aside MLPerf files from 8.1% to 7.7% and 8.6% to 8.2%. Transformer Engine's
  context-parallel ring (`AttnFuncWithCPAndKVP2P`) runs one attention kernel per KV block
  and merges the partial outputs, and the dQ, dK and dV, in separate passes over them; now
  charged (op `cp_merge`), it moved this file to 9.2% and MLPerf v5 to 7.6%. The
  interleaved schedule's steady-state pipeline sends run beside compute too and now slow it
  by the same measured share: 9.0%, MLPerf GPT-3 7.5%, MLPerf v5 7.2%. What remains
  is outside one GPU: the rows that miss most interleave one layer per virtual stage
  (GPT-3 175B and Nemotron-4 340B at VPP 12, −11…−17% then, −3…−14% on 2026-11-28; Llama 2 70B
  at VPP 20, −10% then, −4% on 2026-11-28) and
  lose a roughly constant share of their compute rather than a fixed time per chunk
  (0.4-0.7 ms per chunk and micro-batch for GPT-3, 1.3-1.6 ms for Nemotron-4 340B), which
  points at communication beside compute on eight GPUs (TP userbuffers, PP sends, DP) that
  a one-GPU machine cannot show.
- **Clocks that move under the power cap (2026-11-27).** One GPU's speed is not steady: on
  the lent H100 the same layer's forward or backward, run back to back at the 700 W cap,
  varies from call to call by 2.8-3.3% (CV; the H200: 3.0-3.5%), the SM clock moving
  between 1,320 and 1,980 MHz as the power controller works, with successive calls
  correlated over about 0.1-0.2 s (`calibration/jitter_bench.py`,
  `calibration/h100-jitter-measured.json`). Ranks that synchronise within every layer (TP,
  CP, and EP in MoE layers) wait at each collective for whichever is momentarily slowest:
  with each chip's controller on its own (assumed: one GPU was lent), that costs
  `speed_jitter · E[max of g normals]` of compute, 4.3% for TP 8 and 3.1% for TP 4 on
  H100, on top of the fixed chip-to-chip spread (`speed_sigma`) the model already charged.
  Drawing 8 calls at random from the measured ones gives 4.7-5.1% (the spread has a long
  upper tail). Now charged (`efficiency.speed_jitter`: H100 0.030 and H200 0.033 measured,
  the H100 figure for parts not measured), it moved this file from 8.5% to 7.7% (median
  5.7% to 4.7%; DGX Cloud from 6.1% to 4.4%). Kept aside, pooled over all 92 rows, 12.0%
  to 11.9%: MegaScale 11.3% to 8.1%, DeepSeek-V3 −19.7% to −15.0%, the MoE dispatcher
  A/B 9.8% to 7.1%, MLPerf v5 7.2% to 6.7%, but MLPerf GPT-3 7.5% to 8.0% (its v4.1 rows,
  already slow, to +14…+17%), Megatron-Bridge 16.0% to 16.6% (16.8% with the later
  changes below) and Meta's Llama 3 4.4% to
  7.9% (TP 8 × CP 16 = 128 ranks in lockstep pay 8%: +13.5%). Whether jitter is as
  independent across the chips of a node as assumed is the open question; if the
  controllers of ranks that run the same kernels in step fall into phase, the charge is
  smaller. Under ZeRO-3 every layer waits for its parameters' all-gather across the data-
  parallel ranks, so those ranks are in lockstep too: the SC'21 ZeRO-3 rows moved from
  −10…−31% to −5…−29% (mean 19.9% to 15.7%), the file to 7.6%. Counting the pipeline
  stages in too (1F1B couples neighbours every micro-batch) was tried and is not adopted:
  the file 7.9%, MLPerf GPT-3 9.2%, Llama 3 10.8%, Megatron-Bridge 17.1% (MegaScale 6.2%
  and DeepSeek-V3 −13.2% better): a stage can run a micro-batch ahead, which seems to absorb
  clock swings that last about as long as a few micro-batches.
- **DeepSpeed ZeRO-3, SC'21 Table 2 (−5…−29%, was −22…−72%).** The measured step stays
  flat from 768 to 1,536 GPUs (66.7 s) while compute halves, so the cost grows with the
  number of ranks. DeepSpeed v0.3.13-0.3.15 (the spring-2021 releases, `deepspeed/runtime/
  zero/partition_parameters.py` and `stage3.py`) gathers every weight matrix with its own
  `torch.distributed.all_gather(list_of_n_views, ...)` after a `torch.cuda.synchronize()`
  (tensors under `stage3_param_persistence_threshold` = 1e5 elements stay whole; the default
  reuse distance of 1e9 elements releases each matrix between forward, recompute and
  backward), and reduces every gradient with `torch.distributed.reduce_scatter(out,
  list_of_n_views)`. DeepSpeed builds the n views in a Python loop, and PyTorch 1.8's list
  APIs copy each of the n rank chunks in or out with its own `copy_` (the copies
  `_all_gather_base` was added to remove, PyTorch PRs #56315 and #57769; PR #33924 measured
  the flatten copies making an 8-GPU all-gather 4.6x slower). Myriad models exactly this
  when `training.zero3_prefetch` is false (the validator's default for sources before 2022):
  each collective on the critical path with its own latency, plus per rank one Python view
  op (3.35 µs, PyTorch's eager operator micro-benchmark) and one launch (5 µs, the
  collective model's calibrated launch cost). With the era's recompute (every layer or
  none; selective recompute came in 2022) that moved these six rows from 46% to 17% mean
  error. They are still under-predicted, the 530B model more (−16…−29%) than the 175B
  (−5…−15%): the rank-dependent cost measured for 530B is about twice the 175B's,
  which a per-collective host cost cannot give, and no measured 2021 host costs exist to
  settle it.
- **fp8 parameters.** DGX Cloud's Nemotron-4 recipe (nemotron/configure.sh @ 35a9aec) runs its
  fp8 rows with `model.fp8_params`: weights kept in fp8 only, the distributed optimizer
  gathering 1 byte per parameter (`training.fp8_params`). The 340B fp8 row on 128 GPUs then
  fits without recompute or gradient sharding, as NVIDIA ran it: +13.4% → −8.8%; the other
  Nemotron fp8 rows moved 0.2-1.0 points faster, the file's mean 9.12% → 9.11%. The
  release's other recipes, read since (2026-11-27, session 28), do the same in their fp8
  runs (`+model.fp8_params=$FP8_ENABLED` in llama3.1/configure.sh, `fp8_params: true` in
  nemo_megatron/gpt3_175b_hydra.yaml), so the validator fills it for all of them (GPT-3 and
  Llama fp8 rows 0.1-1.0 points faster).
- **Nemotron-4 340B at DP 2 (dgxc and NeMo 24.07, +19…+22%).** Myriad's memory model needs
  93 GiB per GPU without recompute (bf16: weights 10.7, fp32 gradients 21.5, optimizer 32.2,
  activations 25.7, buffers 3), so it picks full recompute; the published step times are
  flat from 128 to 2,048 GPUs (4.61-4.84 s), so the 128-GPU run did not recompute. NVIDIA's
  performance recipes keep gradients in bf16 (`grad_reduce_in_fp32 = False` in the NeMo and
  Megatron-Bridge perf configs; `training.grad_reduce_in_fp32: false` models it), which
  saves 10.7 GiB; the rest is within the uncertainty of fixed buffers and fragmentation.
  With bf16 gradients the peak stage still needs 82 GiB (8.6 interleaved micro-batches of
  12 layers at 254 MB, 10 bytes per parameter on 5.75 B parameters). Keeping only the 16-bit
  remainders of the fp32 master weights (`store_param_remainders` in Apex
  DistributedFusedAdam and Megatron-core's precision-aware optimizer) would save 5.4 GiB at
  DP 2 and make it fit, but no source says the NeMo 24.07 run enabled it, so it is not
  assumed. The DGX Cloud recipe file does say more (read 2026-11-27, session 28):
  nemotron/nemotron4-340b-synth.yaml keeps the whole optimizer state in bf16
  (`optim: {name: distributed_fused_adam, dtype: bf16}`: Apex keeps the master copy and both
  moments in `dtype`), 6 bytes per parameter instead of 12 (`training.bf16_master_weights`
  with `bf16_optimizer_moments`). With it the dgxc 128-GPU row fits with the distributed
  optimizer and no recompute, as its flat scaling says it ran (+4.6% → −5.8%, in line with
  the same recipe's 256-2,048-GPU rows at −6…−9%); the NeMo 24.07 row ran the NeMo
  Framework Launcher's config (read 2026-11-27, session 29:
  launcher_scripts/conf/training/nemotron/nemotron_340b.yaml keeps `optim.dtype: bf16` in
  every stored version, with `distributed_fused_adam` @ 6daee02 and `mcore_distributed_optim`
  @ 3be81fc), so it now takes the same bf16 state and fits with ZeRO-1: +15.7% → −4.5%,
  within 2% of the DGX Cloud prediction for the same plan, as the two measurements (3.14 and
  3.16 s) are of each other.
- **Llama 3 70B at TP 1 on GB200 (now +2%, and +5% for the superseded 25.11 row).** Megatron-Bridge's recipe for this row
  (`LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2` in `scripts/performance/configs/llama/
  llama3_workload_base_configs.py`: micro-batch 2, Megatron FSDP, `cpu_offloading_num_layers
  = 40`) offloads the activations of 40 of the 80 layers to the Grace CPU's LPDDR5X over
  NVLink-C2C and prefetches FSDP parameters under compute; Myriad's free choice finds 36 of
  80 (`training.offload_layers`; 34 before the memory model counted FSDP's gathered working
  set, two whole layers and one layer's gradient) and prefetches (`training.zero3_prefetch`, on by default;
  the validator turns it off only for sources from before 2022, the DeepSpeed 0.3 era).
- **Dense Blackwell runs.** With the B200 GEMM efficiency fitted to 1,304 measured B200
  GEMMs (nod-ai/iree-kernel-benchmark) and Blackwell attention from NVIDIA's cuDNN benchmark
  CSVs, the dense B200/GB200 rows are within −14…+8%; GB200's GEMM efficiency is still the
  B200 fit scaled by a best-shape ratio, and the remaining fp8 rows (Llama 3 8B −7…−14%)
  point at it.
- **MoE runs.** gpt-oss bf16 on B200 and GB200 (−26/−27% now; the token-dropping Qwen3 rows,
  −27/−30% when this was written, are now −5…+2%) run much slower than the same models in later releases (gpt-oss on GB200:
  16,640 tokens/s per GPU in bf16 with 26.04.01 against 28,672 in MXFP8 with 26.08, 1.72×
  for a precision change the model puts at 1.32×; the 26.06.01 container lost 37% of its
  MXFP8 speed to a cuDNN grouped-GEMM regression, cudnn-frontend issue #256, so these
  kernels moved a lot between releases). gpt-oss's 128-token sliding-window layers (every
  other layer) are modelled (`model.sliding_window`, the gpt-oss presets): they took its
  three rows from −33/−34/−12% to −35/−36/−17%, physics that widens the gap rather than
  closes it; the same Qwen3-30B plan ran in 9.66 s
  on B200 (26.04.01) and 6.56 s on GB200 (26.08), a 47% gap against 11% more peak. Routing
  imbalance, permutation kernels and the grouped-GEMM padding of those releases are not
  captured. One GPU's layer is not where the time goes. Measured on a lent H100, one EP
  rank's MoE block (Qwen3-30B-A3B, Qwen3-235B, gpt-oss-120b, Mixtral, a DeepSeek-V3-sized
  layer, with Transformer Engine's gather-style permutes; `calibration/h100-moe-fused-measured.json`)
  takes what the model's MoE ops give (−8.6…+13.5%), and a whole gpt-oss-120b layer
  (`calibration/h100-gptoss-layer-measured.json`: biases, rotary, GQA 64/8 of head dim 64, the
  128-token band and the learned sink, the clamped SwiGLU) takes 7.88 ms (full) and 7.30 ms
  (banded) of GPU time at the H100 row's 4,096 tokens, against 7.82 ms modelled (+3.1%; −1.9%
  at 16,384 tokens), with 1.05 ms a layer of eager host time above the kernels, the model's
  MoE overhead. The H100 row (−31.7%, kept aside) needs about 19 ms per layer and micro-batch
  on its slowest pipeline stage; the model gives 12-13 with communication. So the missing
  5-10 ms a layer (16,384 tokens on B200/GB200: ~10 ms) lies outside one GPU's kernels: in
  the expert-parallel exchange, the framework between them, or kernels PyTorch cannot run.
  Session 35 measured the last candidates it could on the lent H100: cuDNN's sink attention
  (`calibration/h100-sink-attention-measured.json`, through the cuDNN frontend) costs what
  the model says for the causal and banded kernels and adds 0.4 ms a sequence backward for
  the sink's gradient on full and banded layers alike, on the H100 and the H200 (1.5 ns a
  query row and head whatever the memory bandwidth), and one cuBLAS GEMM per expert
  (`calibration/h100-grouped-gemm-streams-measured.json`) runs as the model charges it.
  Session 36 made the sink part of the model (`model.attention_sinks`, on in the gpt-oss
  presets and lent to rows of the same architecture; `efficiency.attention_sink_bwd_ns`,
  measured on H100 and H200, on other parts the H100's scaled by SM count): the three
  public rows went from −32/−29/−17% to −26/−25/−8%, the file from 6.98% to 6.80% (with the
  band costed as a band, `Ctx::attention_band`, −27/−25/−9% and 6.81%). On
  Blackwell the sink costs more of the step than on the H100 (−29.8% → −27.5%) because the
  rest of the layer runs twice as fast there; how cuDNN's Blackwell kernels form that
  gradient is not measured. NVIDIA's published cuDNN 9.26/9.27 training runs of the
  128-token band without the sink (checked in session 37,
  `band_training_on_blackwell_matches_cudnn_published_runs_together`) put the band's
  forward and backward together within −6…+23% on GB200 and GB300, the model's backward
  over-stating GB200 by 21-33%: the model is, if anything, slow there, so the band's
  kernels are not where these rows' missing time is. The eager rows still miss by a share of their compute, not a
  constant: the missing time is 0.40-0.47 of the modelled compute on H100 (4,096 tokens a
  micro-batch), B200, GB200 and B300 (16,384), bf16 and MXFP8 alike (0.53-0.57 before the
  sink); 0.17 on GB300 bf16; −0.02…0.09 where a full-iteration CUDA graph runs the step. A per-call host cost would not grow fourfold with the tokens;
  something that scales with the work (kernels of the real stack, or the exchange's
  interference with them) is missing, and a profile of the real step is what would show it.
  Megatron-Bridge's gpt-oss-120b recipes recompute only the layernorms and the
  MoE activation (`recompute_modules = ["layernorm", "moe_act"]`); Myriad models that
  module-level selective recompute (`training.recompute_modules`, and the ladder of sets it
  tries when recompute is not given, for sources from 2025 on); with the recipe's bf16
  gradient buffers (which the validator fills for NVIDIA's recipes) the B200 row fits without
  any recompute, but the validator now fills the recipe's modules for it
  (`validation/mbridge-recipes.json`), so it recomputes the layernorms and the MoE activation
  as the recipe does (4.45 s against 6.04 s measured).
  Checked in session 37, not adopted: Megatron-Bridge's TE-scoped CUDA graphs
  (`cuda_graph_impl: transformer_engine` with `moe_router` and `moe_preprocess`, which most
  26.x MoE recipes set) capture the router's and the dispatch preprocessing's small kernels.
  Its CUDA-graph skill card measured 623 → 484 ms per iteration for Qwen3-30B-A3B on 16 H100
  (about the whole eager overhead the model charges, 1.09 ms a layer and micro-batch) and no
  gain with the `alltoall` dispatcher (42.00 s against 41.36 s eager). Charging only the
  host's read of the token counts (0.18 ms of the measured 1.09) where such a recipe runs a
  `flex` dispatcher moves the public file 6.71% → 6.69% and the Megatron-Bridge rows kept
  aside 13.97% → 13.46%, but the verification cards 8.75% → 9.91% and the eager gpt-oss and
  Qwen3 30B-A3B Blackwell rows further from their measurements; with one measured run
  behind it, it stays out.
- **Korthikanti 1T (+8/+11%).** PP 64 with 512 micro-batches and no stated interleaving:
  Myriad charges the 1F1B bubble (63/512 of the step); the paper may have interleaved.
"""
lines.append(WHY)

# Kept aside: MLPerf Training GPT-3 175B (nothing in the model was tuned on these runs).
MLPERF = "validation/training-heldout-mlperf.json"
m = validate(MLPERF)
ms = m["summary"]
lines += [
    "",
    "## Kept aside: MLPerf Training GPT-3 175B",
    "",
    f"`{MLPERF}` holds {ms['count']} closed-division GPT-3 175B submissions from "
    "mlcommons/training_results_v3.0 to v4.1 (NVIDIA, CoreWeave, Azure and Oracle on H100; "
    "NVIDIA's 64-GPU B200 preview), all FP8 with NeMo/Megatron. Layouts (TP, PP, interleaving, "
    "micro-batch, distributed optimizer) come from each submission's `config_*.sh` and "
    "`conf/custom.yaml`, fabrics from its `systems/*.json`. The step time is measured from the "
    "`:::MLLOG` timestamps of the three `result_*.txt` logs: training time between `block_start` "
    "and `block_stop` (evaluation runs between blocks, so it is excluded; each run's first block "
    "is dropped) divided by the steps in those blocks (`epoch_count` tokens / (global batch x "
    "2048)), pooled over the logs; the v3.0 logs have no `block_stop`, so there consecutive "
    "per-step `tracked_stats` timestamps are used, skipping pairs with an evaluation between "
    "them. Each case's `basis` gives the per-log figures.",
    "",
    "| id | GPUs | global batch | TP/PP/VPP/mb | predicted s | measured s | error |",
    "|---|---:|---:|---|---:|---:|---:|",
]
spec = {c["id"]: c for c in json.load(open(MLPERF))["cases"]}
for c in m["cases"]:
    t = spec[c["id"]]["training"]
    layout = f"{t['tp']}/{t['pp']}/{t['vpp']}/{t['micro_batch']}"
    n = spec[c["id"]]["system"]["count"]
    if c.get("error") is None:
        lines.append(f"| {c['id']} | {n} | {t['global_batch']} | {layout} | - | "
                     f"{c['measured_step_time_s']:.4f} | failed |")
        continue
    lines.append(
        f"| {c['id']} | {n} | {t['global_batch']} | {layout} | {c['predicted_step_time_s']:.3f} | "
        f"{c['measured_step_time_s']:.4f} | {100 * c['error']:+.1f}% |"
    )
met = ms["mae"] < 0.10 and ms["worst_abs_error_all"] < 0.25
lines += [
    "",
    f"Summary: {ms['count']} cases, mean |error| {100 * ms['mae']:.1f}%, median "
    f"{100 * ms['median_abs_error']:.1f}%, worst |error| {100 * ms['worst_abs_error_all']:.1f}% "
    f"({ms['worst_id_all']}).",
    "",
    ("The issue's bar for kept-aside data (mean under 10%, no case worse than 25%) is met, "
     "and `crates/myriad-train/tests/heldout_mlperf.rs` holds it. The 11,616-GPU v4.0 run "
     "reduces gradients in bf16, as its submission's optimizer config states (`grad_sync_dtype: "
     "bf16` in `conf/optim/distributed_fused_adam.yaml`; `training.grad_reduce_in_fp32: false`); "
     "the other submissions do not state it and keep the fp32 default. Read as fp32, that run "
     "was +27.8%. Each model chunk of the interleaved schedule now synchronises on its own, as "
     "Megatron's schedule drives it (`param_sync_func` gathers chunk j+1's parameters from "
     "chunk j's first forward on, `grad_sync_func` reduces chunk j's gradients after its last "
     "backward; `step::dp_overlap_exposed`). Before, one window (the last micro-batch's "
     "backward, the first one's forward) over-counted exposed traffic where it is most of "
     "the step, and the runs at 4,096-11,616 GPUs were over-predicted by 3-11% (mean 7.2%, "
     "worst +11.2%). With that removed the v3.x/v4.0 runs are predicted faster than measured "
     "(−5…−16%, but +1% at 768 GPUs; the same sign as the public NeMo rows), while the v4.1 "
     "runs stay +3…+10% (the figures of that change; the table above has today's)."
     if met else
     "**The issue's bar for kept-aside data (mean under 10%, no case worse than 25%) is not "
     "met**: the mean is under 10% but the worst case is not. In the worst case (11,616 H100, "
     "TP 4, PP 6, VPP 8, 6 micro-batches of 1 per step) Myriad leaves 0.42 s of data-parallel "
     "traffic exposed in a 0.92 s step (0.31 s at 10,752 GPUs in v3.1, +8…+11%): it overlaps "
     "the gradient reduce-scatter only with the last micro-batch's backward and the parameter "
     "all-gather with the first forward. The runs used NeMo's distributed Adam with "
     "`overlap_grad_sync` and `overlap_param_sync`, bf16 gradient reduction (`grad_sync_dtype`) "
     "and, from v4.0, FP8 parameters (`FP8_PARAMS=True`); which of these hides the traffic is "
     "not established, and nothing was changed to fit these runs. "
     "`crates/myriad-train/tests/heldout_mlperf.rs` holds a ratchet just above these figures "
     "and states the bar in an ignored test."),
    "",
]

# Kept aside: MLPerf Training v5.0/v5.1 Llama 3.1 pretraining (nothing tuned on these runs).
MLPERF5 = "validation/training-heldout-mlperf5.json"
m5 = validate(MLPERF5)
s5 = m5["summary"]
lines += [
    "## Kept aside: MLPerf Training v5.0 and v5.1 (Llama 3.1 405B and 8B)",
    "",
    f"`{MLPERF5}` holds {s5['count']} closed-division pretraining submissions from "
    "mlcommons/training_results_v5.0 and v5.1: Llama 3.1 405B on 256 to 8,192 H100, H200, B200, "
    "GB200 and GB300 (fp8, and fp4 in v5.1) and Llama 3.1 8B on 8 to 512 B200, GB200, GB300 and "
    "AMD MI355X. Plans come from each submission's config script and `pretrain.py`, step times "
    "from the `:::MLLOG` block times as above (per-file figures in each `basis`).",
    "",
    "| id | GPUs | TP/PP/CP/VPP/mb | global batch | predicted s | measured s | error |",
    "|---|---:|---|---:|---:|---:|---:|",
]
spec5 = {c["id"]: c for c in json.load(open(MLPERF5))["cases"]}
for c in m5["cases"]:
    t = spec5[c["id"]]["training"]
    n = spec5[c["id"]]["system"]["count"]
    layout = f"{t['tp']}/{t['pp']}/{t['cp']}/{t['vpp']}/{t['micro_batch']}"
    pred = "-" if c.get("error") is None else f"{c['predicted_step_time_s']:.3f}"
    err = "failed" if c.get("error") is None else f"{100 * c['error']:+.1f}%"
    lines.append(f"| {c['id']} | {n} | {layout} | {t['global_batch']} | {pred} | "
                 f"{c['measured_step_time_s']:.4f} | {err} |")
lines += [
    "",
    f"Summary: {s5['count']} cases, mean |error| {100 * s5['mae']:.1f}%, median "
    f"{100 * s5['median_abs_error']:.1f}%, worst |error| {100 * s5['worst_abs_error_all']:.1f}% "
    f"({s5['worst_id_all']}).",
    "",
    "The mean meets the kept-aside bar (under 10%); the worst case does not (over 25%), so "
    "`crates/myriad-train/tests/heldout_mlperf5.rs` holds a ratchet and states the bar in an "
    "ignored test. 11 of the 20 runs are predicted too fast (18 on 2026-11-23), as the public "
    "NVIDIA rows are: every 8B run on NVIDIA's stack (−10…−44%) and the 405B runs with the "
    "fewest micro-batches. The miss grows as the work per GPU per step shrinks: the 8B on 512 "
    "GB300 does 1,024 tokens per GPU per step (TP 2 × CP 4) in 87 ms measured against 49 ms "
    "predicted, and the 405B error follows the micro-batches per pipeline (8 stages): 288 at "
    "512 H100, +4.1%; 48, +1.0%; 32, −0.4%; 24, −1.5% and −2.2%; 16 at 5,120 GB200, −12.3% "
    "(−3.0%, −5.0%, −7.2%, −8.7%/−9.6% and −20.9% on 2026-11-23). That is "
    "the signature of a fixed per-step or per-kernel cost the model lacks, the same one "
    "MegaScale's Table 2/Table 3 split shows (2.2 s per step measured, 0.8 s modelled) and "
    "the MLPerf Inference Interactive rows show for small-batch decode "
    "([serving.md](serving.md)). It is not fitted here: what it is (kernel launch gaps between "
    "the small kernels, fp8 cast and amax kernels, host work in the training loop) needs a "
    "profile of such a step. One part of it is now modelled from the calibration already in the "
    "catalog: every memory-bound kernel (norms, activations, residual adds, RoPE) pays the fixed "
    "per-kernel cost the H100 GEMM fit gives (`gemm_overhead_us`, 3.6 µs), once forward and once "
    "backward, and so does each fp8 cast of a GEMM input (a Transformer Engine kernel of its "
    "own); that moved this file from 9.8% to 8.9% (worst 45.9% to 43.7%) and the public file "
    "from 10.2% to 9.8%.",
    "",
    "Two readings were tried on the kept-aside files and not adopted. With the flow-level "
    "backend instead of the analytical one (the validator's chosen plan re-timed with "
    "`myriad_netsim::FlowTimer`; measured before the fp8 casts paid the kernel cost), MegaScale's "
    "baseline went from 11.3% to 5.0% and this file from 9.3% to 8.0%, but the MLPerf GPT-3 file "
    "from 8.3% to 12.7% (+74% on NVIDIA's "
    "11,616-GPU v4.0 run) and Llama 3 from 4.6% to 8.7%: the flow result depends on wiring the "
    "cases do not state (at 11,616 GPUs the built 3-tier fat-tree has a partial last pod that "
    "only 11 of a leaf's 32 uplinks can reach, which static d-mod-k routing then crowds: PP "
    "sends 5.9x and DP collectives 4x their analytical time), so it is not a validation "
    "default. And reading MegaScale's baseline as running Megatron-LM 285068c8's unfused "
    "attention (flash attention is opt-in there) gives 5.0%, but the same paper's text "
    "('we adopt FlashAttention-2, which improves work partitioning') fits a FlashAttention-1 "
    "baseline as well, so choosing the reading by its fit would be tuning.",
    "",
]
# Kept aside: the MoE token dispatcher, NVIDIA's own A/B (nothing tuned on these runs).
MOE = "validation/training-heldout-moe-dispatch.json"
mo = validate(MOE)
smo = mo["summary"]
lines += [
    "## Kept aside: the MoE token dispatcher (Qwen3 30B-A3B on 16 H100)",
    "",
    f"`{MOE}` holds the four runs Megatron-Bridge's skills report for Qwen3 30B-A3B on 16 H100 "
    "(two 8-GPU NVLink domains), BF16, EP 16, 1,024 sequences of 4,096 tokens, expert-parallel "
    "overlap off and on (skills/nemo-mbridge-perf-expert-parallel-overlap, commit "
    "7ded17dae, 2026-07-25): the `alltoall` dispatcher (CUDA graphs and permute fusion off) "
    "and the `flex` dispatcher with HybridEP (CUDA graphs on the router and preprocess), "
    "each without and with Megatron's EP overlap (`overlap_moe_expert_parallel_comm`). Each "
    "row states its dispatcher and overlap (`training.ep_dispatcher`, "
    "`training.ep_overlap`).",
    "",
    "| id | dispatcher | EP overlap | predicted s | exposed EP s | measured s | error |",
    "|---|---|---|---:|---:|---:|---:|",
]
specmo = {c["id"]: c for c in json.load(open(MOE))["cases"]}
for c in mo["cases"]:
    t = specmo[c["id"]]["training"]
    lines.append(f"| {c['id']} | {t['ep_dispatcher']} | {'on' if t.get('ep_overlap') else 'off'} | "
                 f"{c['predicted_step_time_s']:.3f} | "
                 f"{c['breakdown']['ep_comm_s']:.2f} | {c['measured_step_time_s']:.4f} | "
                 f"{100 * c['error']:+.1f}% |")
lines += [
    "",
    f"Summary: {smo['count']} cases, mean |error| {100 * smo['mae']:.1f}%, worst |error| "
    f"{100 * smo['worst_abs_error_all']:.1f}% ({smo['worst_id_all']}).",
    "",
    "EP overlap saves 9.94 s (`alltoall`) and 3.72 s (HybridEP) measured, 10.4 s and 3.4 s "
    "in Myriad, which hides each all-to-all of one micro-batch under one block of the paired "
    "one (combined 1F1B, DeepSeek-V3's pairing) and slows that block by the measured "
    "`comm_overlap_slowdown`; the source's profile of the HybridEP pair agrees: 3.96 s of "
    "communication ran beside GEMMs or attention with overlap on, 0.01 s without. Stating the "
    "overlap that Megatron-Bridge's recipes turn on for five public rows (25.09 B200 and "
    "25.11 H100 Qwen3 235B, 26.08 GB200 Qwen3 235B and 30B and gpt-oss 120B) would take them "
    "from -29.4/+0.1/+18.2/+20.8/-12.5% to -36.8/-27.1/+3.7/+2.1/-20.8%; the public rows do "
    "not state it, so they keep the default (off).",
    "",
    "Without overlap both rows are predicted about 20% too fast, and the ratio of the two (1.67 measured) is "
    "reproduced by what the dispatchers send alone: with top-8 of 128 experts spread over two "
    "domains a token's copies reach the other domain 4 times on average under `alltoall` and "
    "once under HybridEP, which forwards them over NVLink there "
    "(`myriad_train::step::domain_miss`). Costed as an all-to-all of every copy, the HybridEP "
    "row was +33.8%. The common gap is in the source's own Nsight profile of the HybridEP run: "
    "10.8 s of communication on rank 0 (Myriad's EP all-to-all 4.5 s, against 4.25 s of "
    "'dispatch-with-permute' ranges) including 3.1 s of routing-metadata preprocessing that "
    "Myriad does not model, and about 12 s of compute (GPU-active 22.8 s less the "
    "communication) where Myriad has 16.7 s (15.3 s when this was written). The public file's rows do not state their "
    "dispatcher and keep Megatron's default, `alltoall`: Megatron-Bridge 26.06's recipe for "
    "the public Qwen3 30B-A3B 16-H100 fp8 row ran HybridEP, which would take that row from "
    "+20.4% to -24.1% (measured 29.7 s, 5 s slower than the bf16 HybridEP run above and "
    "9.6 s slower than the bf16 HybridEP run with EP overlap of Megatron-Bridge's "
    "verification card, 20.1 s; its recipe has no CUDA graphs), so what ran, or what the "
    "model lacks there, is not known. `crates/myriad-train/tests/heldout_moe_dispatch.rs` holds a ratchet and "
    "the ratio.",
    "",
    "Inside a scale-up domain the dispatchers differ too (since session 37): Megatron's "
    "`alltoall` sends each of a token's top-k copies, DeepEP and HybridEP send it once to "
    "each rank holding any of its experts and the combine returns one partial sum per rank "
    "(`myriad_train::step::ep_copies`; 5.3 of 8 copies for this model at EP 8). The kernels' "
    "own published benchmarks count exactly those rows, and the model's time for every one "
    "of them is 0.77-0.98 of the measured: DeepEP's normal kernels on H800, EP 8 over NVLink "
    "(153 / 158 GB/s dispatch / combine) and EP 16-64 over InfiniBand (43-58 GB/s), and "
    "NVIDIA's HybridEP kernels on B200 and GB200 at EP 8-36 (test "
    "`ep_dispatch_and_combine_match_deepep_and_hybridep_benchmarks` in "
    "`crates/myriad-train/tests/ep_dispatch_kernels.rs`; HybridEP's 'Torch API' figures add "
    "0.15-0.24 ms of host time a call, which a training step's kernels hide, so its kernel "
    "figures are the ones compared). Counting every copy would have put the 8-rank rows "
    "1.3-1.5x over them.",
    "",
    "The busiest EP rank (since session 37): even an even router draws each token's top-k "
    "experts at random, so one rank of every MoE layer receives more than the mean, and the "
    "expert GEMMs and the exchange wait for it. The model runs them at that rank's share: "
    "the hypergeometric spread of top-k draws (`moe_balance::routing_sampling_cv`) at the "
    "expected maximum over the EP ranks (`step::busiest_expert_rank_factor`; 1.007 for this "
    "model at EP 8, 4,096 tokens a rank). It moves these four rows by 0.2-0.5 point and the "
    "files by under half a point (this one 5.6% to 5.3%, Megatron-Bridge kept aside 13.97% to "
    "14.06%, the cards 8.75% to 9.23%, DeepSeek-V3's report 18.3% to 17.9%, the public file "
    "unchanged at 6.71%). A trained router spreads its load further, and serving uses "
    "DeepSeek-R1's measured per-expert spread (CV 1.28). These benchmarks start from a random "
    "router. With a per-expert spread of a quarter of that (CV 0.3), the public file would be "
    "about 7.1% and Megatron-Bridge kept aside about 17%, and the cards about 19% (checked, "
    "not adopted); at CV 0.6 they would be about 8.0%, 22% and 29%. Their routers are near "
    "even, so no trained spread is added.",
    "",
]
# Kept aside: the Megatron-Bridge rows the public file leaves out (nothing tuned on them).
MB = "validation/training-heldout-mbridge.json"
mb = validate(MB)
smb = mb["summary"]
specmb = {c["id"]: c for c in json.load(open(MB))["cases"]}
lines += [
    "## Kept aside: Megatron-Bridge rows without a public counterpart",
    "",
    f"`{MB}` (built by `validation/tools/mbridge_heldout.py` from the two performance "
    "summaries at the snapshot the public file names) holds every benchmark of those tables "
    "(model, system, GPU count, precision) that has no row in the public file, at its newest "
    "release: DGX GB300 and B300, which the public file lacks; DeepSeek-V3 and Kimi K2 "
    "(stated with their multi-token-prediction module, `model.mtp_layers`, except the "
    "'w/o MTP' rows); and the H100, B200 and GB200 rows it left out. The rows state what the "
    "tables state and nothing else, as the public rows do: the MoE dispatcher stays "
    "Megatron's default all-to-all where the DeepSeek-V3 recipes run HybridEP or DeepEP. "
    "DeepSeek-style models are laid out as Megatron-Bridge's DeepSeek-V3 recipes do "
    "(`set_deepseek_v3_pipeline_model_parallel_layout`: ceil(61 / chunks) layers a chunk, "
    "the remainder in the last one with the MTP module and the loss).",
    "",
    "| id | GPUs | TP/PP/VPP/EP/mb | predicted s | measured s | error |",
    "|---|---:|---|---:|---:|---:|",
]
for c in mb["cases"]:
    sp = specmb[c["id"]]
    t = sp["training"]
    layout = f"{t['tp']}/{t['pp']}/{t['vpp'] or 1}/{t['ep']}/{t['micro_batch']}"
    mark = " (superseded)" if c.get("superseded") else ""
    lines.append(f"| {c['id']}{mark} | {sp['system']['count']} | {layout} | "
                 f"{c['predicted_step_time_s']:.3f} | {c['measured_step_time_s']:.3f} | "
                 f"{100 * c['error']:+.1f}% |")
lines += [
    "",
    f"Summary: {smb['count']} cases, mean |error| {100 * smb['mae']:.1f}%, median "
    f"{100 * smb['median_abs_error']:.1f}%, worst |error| {100 * smb['worst_abs_error_all']:.1f}% "
    f"({smb['worst_id_all']}). The kept-aside bar (mean under 10%, no case worse than 25%) is "
    "not met. What the misses share: GB300 fp8 rows were predicted 16-33% slow while NVIDIA "
    "measured GB300 19-31% faster than GB200 on the same benchmarks at the same fp8 peak, "
    "with the catalog's GB300 fp8 GEMM rate then assumed equal to GB200's. Azure's cuBLASLt "
    "runs of both parts in one harness (the catalog's `gemm_fp8` source) measure GB300 at "
    "0.65-0.66 of the fp8 peak against GB200's 0.54-0.56, and GB300's fp4 GEMMs at 0.56 of "
    "the fp4 peak (`gemm_fp4`); with them the file went from 14.1% to 12.2% and the GB300 "
    "fp8 rows to -6…+24%, the MoE models (DeepSeek-V3, Kimi K2, Qwen3 235B) still the "
    "slowest at +16…+24%; gpt-oss-120b "
    "(but its GB300 MXFP8 row, -8%) and Qwen3 235B on B200 are predicted 15-35% fast, as "
    "their public counterparts, and the 25.09 token-drop rows of DeepSeek-V3 on B200 17-24% "
    "fast. DeepSeek-V3 on 1,024 H100 (25.09) ran DeepEP with the EP all-to-all overlap "
    "(v0.1.0rc4's `run_script.py`; `validation/mbridge-recipes.json` carries the 25.09 "
    "recipes since this session): with them it is predicted 11% fast, without them 47% "
    "slow, so the model hides more of that exchange over eight nodes' InfiniBand than the "
    "run did. `crates/myriad-train/tests/heldout_mbridge.rs` holds a ratchet.",
    "",
]
# Kept aside: DeepSeek-V3's own pretraining (nothing tuned on it).
DS = "validation/training-heldout-deepseek-v3.json"
ds = validate(DS)
c = ds["cases"][0]
lines += [
    "## Kept aside: DeepSeek-V3 pretraining on 2,048 H800",
    "",
    f"`{DS}`: the DeepSeek-V3 report's throughput (arXiv:2412.19437, section 1 and Table 1: "
    "180K H800 GPU-hours per trillion tokens on 2,048 H800) with the layout it describes "
    "(section 3.2: PP 16 under DualPipe, EP 64 over eight nodes, ZeRO-1, no TP; FP8; RMSNorm, "
    "MLA up-projections and SwiGLU outputs recomputed; AdamW moments in BF16; MTP depth 1; "
    "batch 15,360 of 4,096 tokens): "
    f"measured {c['measured_step_time_s']:.2f} s per step, predicted "
    f"{c['predicted_step_time_s']:.2f} s ({100 * c['error']:+.1f}%, MFU {100 * c['mfu']:.1f}%). "
    "DualPipe feeds the pipeline from both ends, so the first rank holds the embedding and "
    "the first layer and also the deepest chunk: the MTP module and the output head twice "
    "(section 2.2: the shallowest and deepest layers share a rank so that the MTP module "
    "shares the embedding and head physically); that rank is the critical one. With the head "
    "on the last rank, as a one-directional pipeline would place it, the same plan was "
    "+14.7%. With the report's memory savings (SwiGLU recompute, BF16 moments) the plan fits "
    "in 80 GB (79.5 GiB; 80.8 with fp32 moments), as it did. The remaining gap has the sign "
    "every MoE row of the public file and of the "
    "dispatcher A/Bs shows. `crates/myriad-train/tests/heldout_deepseek.rs` holds a ratchet.",
    "",
]
# Kept aside: Megatron-Bridge's model verification cards (H100 runs no summary lists).
CARDS = "validation/training-heldout-mbridge-cards.json"
cards = validate(CARDS)
lines += [
    "## Kept aside: Megatron-Bridge model verification cards on H100",
    "",
    f"`{CARDS}`: the H100 pretraining-performance results of Megatron-Bridge's model "
    "verification cards (`examples/model_verification_cards/*/card.yaml` at 067f987df; "
    "performance items: 50 steps, steps 41-50 averaged, mock data, forced expert balance) "
    "whose benchmark no performance summary lists, and the dense Qwen3-8B's functional "
    "pretraining item (100 steps on RedPajama-2, steps 91-100), each with every setting its "
    "recipe sets stated in the row (TP/PP/VPP/EP, batch, recompute modules, dispatcher, EP "
    "overlap):",
    "",
    "| case | predicted s | measured s | error |",
    "|---|---:|---:|---:|",
]
for c in cards["cases"]:
    lines.append(
        f"| {c['id']} | {c['predicted_step_time_s']:.3f} | {c['measured_step_time_s']:.3f} | "
        f"{100 * c['error']:+.1f}% |"
    )
sc = cards["summary"]
lines += [
    "",
    f"Mean {100 * sc['mae']:.1f}%, worst {100 * sc['worst_abs_error']:.1f}%: inside the "
    "kept-aside bar, which `crates/myriad-train/tests/heldout_mbridge_cards.rs` holds. "
    "Qwen3-8B is predicted fast as the public file's small dense H100 runs without context "
    "parallelism are (NeMo 24.07 Llama 3 8B, Megatron-Bridge 25.09 Llama 3 8B): about 1.2 ms "
    "per layer and micro-batch beyond a fused layer's GPU time, which the calibration "
    "matches within 2%. The "
    "gpt-oss-120b card re-measured the public 64-GB200 bf16 benchmark at 4,995.6 ms "
    "(2026-08-17, the 26.06 container) against the 26.04.01 summary's 4.92 s: its gap to "
    "the model is reproducible, not a one-off run.",
    "",
]
open("docs/validation-training.md", "w").write("\n".join(lines))
