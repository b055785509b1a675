//! The `myriad/1` scenario format and the `myriad-validation/1` format.
//!
//! Parsing goes text -> `serde_json::Value` (YAML or JSON) -> typed structs through
//! `serde_path_to_error`, so every error names the field path. Unknown keys are errors
//! with the nearest valid key. Semantic checks (`Scenario::check`) follow parsing and also
//! name field paths. Pure: callers pass the file name and text; nothing here reads files.
//!
//! Invariants:
//! - Every key of `../shared/scenario-format.md` is accepted with its documented default.
//! - `schema()` is generated from these types; `schema/myriad-1.schema.json` is a checked-in
//!   copy and a test fails when it is stale.

// `!(x > 0.0)` rejects NaN with the bad values; `x <= 0.0` would let it through.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use myriad_catalog::Catalog;
use myriad_model::{
    CpComm, CrossEntropy, EpDispatcher, Fp8Recipe, Mla, Moe, Recompute, RecomputeModule,
    SlidingWindow, Transformer,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod read;
pub mod scheduling;
pub mod serving;
mod strict;
pub mod validation;

pub use scheduling::SchedulingSpec;
pub use serving::ServingSpec;

pub const FORMAT: &str = "myriad/1";

/// A scenario error: the file, the field path, and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {path}: {message}")]
pub struct ScenarioError {
    pub file: String,
    /// Dotted field path (`cluster.scale_out.tiers`), or `(document)` for syntax errors.
    pub path: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(file: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_string(),
            path: path.into(),
            message: short_numbers(&message.into()),
        }
    }
}

/// Rust prints an f64 in full decimal (`1e300` as a 1 and 300 zeros, `1e-300` as 300 zeros
/// and a 1): a number of more than 21 digits in a message is shown in exponent form. Whole
/// u64 values have at most 20 digits and stay as they are.
fn short_numbers(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        // A sentence's full stop is not part of the number.
        let token = tail[..len].trim_end_matches('.');
        let digits = token.chars().filter(|c| c.is_ascii_digit()).count();
        match token.parse::<f64>() {
            Ok(v) if digits > 21 && token.matches('.').count() <= 1 => {
                out.push_str(&format!("{v:e}"))
            }
            _ => out.push_str(token),
        }
        rest = &tail[token.len()..];
    }
    out.push_str(rest);
    out
}

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must be `myriad/1`.
    pub format: String,
    /// Free text, echoed in reports; null (or left blank in YAML) is no name.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[schemars(with = "Option<String>")]
    pub name: String,
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub model: Option<ModelSpec>,
    #[serde(default)]
    pub training: Option<TrainingSpec>,
    /// Candidate clusters for `myriad plan`.
    #[serde(default)]
    pub planning: Option<PlanningSpec>,
    /// Failures, recovery, spares and checkpointing for `myriad reliability`.
    #[serde(default)]
    pub reliability: Option<ReliabilitySpec>,
    /// Inference serving for `myriad serve` (docs/serving.md).
    #[serde(default)]
    pub serving: Option<ServingSpec>,
    /// Jobs, policies and regions for `myriad sched` (see `scheduling`).
    #[serde(default)]
    pub scheduling: Option<SchedulingSpec>,
}

/// The `planning` block: which clusters `myriad plan` compares, and the constraints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanningSpec {
    /// Accelerator ids to consider (each with its default scale-up system and fabric);
    /// default: h100-sxm, h200, b200, gb200, mi300x.
    #[serde(default)]
    pub accelerators: Vec<String>,
    /// Accelerator counts to consider (rounded up to whole scale-up domains), each from 1 to
    /// 16,777,216 (2^24, `MAX_ACCELERATORS`) and given once; default: powers of two from
    /// 1,024 to 32,768.
    #[serde(default)]
    #[schemars(extend("uniqueItems" = true, "items" = {"type": "integer", "format": "uint64", "minimum": 1, "maximum": 16777216}))]
    pub counts: Vec<u64>,
    /// Training must finish within this many days.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub deadline_days: Option<f64>,
    /// Capital budget, USD.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub budget_usd: Option<f64>,
    /// Facility power limit, MW.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub max_mw: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Catalog id of the accelerator.
    pub accelerator: String,
    /// Accelerators in the cluster.
    #[schemars(range(min = 1, max = 16777216))]
    pub count: u64,
    /// Catalog id of the scale-up system (server or supernode); default: the catalog's
    /// system for the accelerator.
    #[serde(default)]
    pub scale_up: Option<String>,
    #[serde(default)]
    pub scale_out: ScaleOutSpec,
    /// Data centers; accelerators split evenly across them.
    #[serde(default = "one_u32")]
    #[schemars(range(min = 1, max = 1024))]
    pub sites: u32,
    /// Link between sites.
    #[serde(default)]
    pub dci: Option<DciSpec>,
    #[serde(default)]
    pub datacenter: DatacenterSpec,
    /// Failures for the flow-level network simulation (`--backend flow`): each fails one
    /// element for good at a time after the simulated traffic starts.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
}

/// One failure for the flow-level network simulation. Give `at_s` and exactly one of
/// `link`, `switch`, `nic`, `domain` (indices as `myriad collective --backend flow` prints
/// them: topology link bundles, global switch indices, NIC port vertices, scale-up domains).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Seconds after the simulated traffic starts.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub at_s: f64,
    /// A scale-out link bundle (both directions).
    #[serde(default)]
    pub link: Option<u32>,
    /// A switch: every link bundle touching it.
    #[serde(default)]
    pub switch: Option<u32>,
    /// A NIC port (its link to the leaf).
    #[serde(default)]
    pub nic: Option<u32>,
    /// A whole scale-up domain: its accelerators' scale-up links and its NICs.
    #[serde(default)]
    pub domain: Option<u32>,
}

/// A string, or null for the empty string: every other optional key of the format takes
/// null for "not given" (`tiers: null`, `dci: null`), and YAML reads `name:` as null.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

fn one_u32() -> u32 {
    1
}
fn one_f64() -> f64 {
    1.0
}

/// Scale-out network topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// Folded Clos: every NIC port on a leaf, leaves and spines by radix, as many tiers as needed.
    #[default]
    FatTree,
    /// Fat-tree whose leaves are rails: NIC i of every server in a group meets on leaf i.
    RailOptimized,
    /// Rails only, no spine: NIC i of every server on rail switch i; cross-rail goes
    /// over the scale-up fabric (Wang et al. 2023).
    RailOnly,
    /// Two-tier leaf-spine with the given oversubscription at the leaves.
    SpineLeaf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleOutSpec {
    /// Catalog id of the NIC/port generation; default: the accelerator's first typical fabric.
    #[serde(default)]
    pub fabric: Option<String>,
    #[serde(default)]
    pub topology: TopologyKind,
    /// Ports per switch at the fabric's port rate (default: the fabric's switch).
    #[serde(default)]
    #[schemars(range(min = 4, max = 1024))]
    pub switch_radix: Option<u32>,
    /// Switch tiers; null = the fewest that reach `count`.
    #[serde(default)]
    #[schemars(range(min = 1, max = 4))]
    pub tiers: Option<u32>,
    /// Down:up bandwidth ratio above an island (1.0 = full bisection).
    #[serde(default = "one_f64")]
    #[schemars(range(min = 1.0, max = 64.0))]
    pub oversubscription: f64,
    /// Accelerators per full-bisection island; null = the whole cluster.
    #[serde(default)]
    pub island: Option<u64>,
    /// Independent parallel network planes (Alibaba HPN dual-plane: 2). Each NIC port
    /// splits across planes; switches are counted per plane.
    #[serde(default = "one_u32")]
    #[schemars(range(min = 1, max = 8))]
    pub planes: u32,
    /// Network flows (queue pairs) per connection between two NICs, as
    /// `NCCL_IB_QPS_PER_CONNECTION` sets them: with hash ECMP each flow is hashed on its
    /// own, so more flows spread a ring's traffic over more uplinks (Meta's Llama 3 RoCE
    /// cluster used 16). Used by the flow-level simulation; default 1 (NCCL's default).
    #[serde(default = "one_u32")]
    #[schemars(range(min = 1, max = 64))]
    pub qps_per_connection: u32,
}

impl Default for ScaleOutSpec {
    fn default() -> Self {
        Self {
            fabric: None,
            topology: TopologyKind::FatTree,
            switch_radix: None,
            tiers: None,
            oversubscription: 1.0,
            island: None,
            planes: 1,
            qps_per_connection: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DciSpec {
    /// DCI bandwidth leaving each site, Gb/s.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub gbps_per_site: f64,
    /// Fibre distance between sites, km (latency 5 µs/km).
    #[schemars(range(min = 0.0, max = 40075.0))]
    pub distance_km: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatacenterSpec {
    /// Power usage effectiveness (facility power / IT power).
    #[serde(default = "default_pue")]
    #[schemars(range(min = 1.0, max = 3.0))]
    pub pue: f64,
    /// Electricity price, USD per kWh, from 0 to 10 (`MAX_USD_PER_KWH`).
    #[serde(default = "default_usd_per_kwh")]
    #[schemars(range(min = 0.0, max = 10.0))]
    pub usd_per_kwh: f64,
}

fn default_pue() -> f64 {
    1.2
}
fn default_usd_per_kwh() -> f64 {
    0.08
}

impl Default for DatacenterSpec {
    fn default() -> Self {
        Self {
            pue: default_pue(),
            usd_per_kwh: default_usd_per_kwh(),
        }
    }
}

/// The `model` block: a preset and/or explicit fields (fields given beside a preset
/// override it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub layers: Option<u32>,
    #[serde(default)]
    pub hidden: Option<u32>,
    #[serde(default)]
    pub ffn_hidden: Option<u32>,
    #[serde(default)]
    pub heads: Option<u32>,
    #[serde(default)]
    pub kv_heads: Option<u32>,
    #[serde(default)]
    pub head_dim: Option<u32>,
    #[serde(default)]
    pub vocab: Option<u32>,
    #[serde(default)]
    pub seq_len: Option<u32>,
    #[serde(default)]
    pub gated_mlp: Option<bool>,
    #[serde(default)]
    pub tied_embeddings: Option<bool>,
    #[serde(default)]
    pub moe: Option<Moe>,
    #[serde(default)]
    pub mla: Option<Mla>,
    #[serde(default)]
    pub sliding_window: Option<SlidingWindow>,
    /// A learned sink logit per attention head (gpt-oss); the preset's value when absent.
    #[serde(default)]
    pub attention_sinks: Option<bool>,
    /// Multi-token prediction modules trained beside the model (DeepSeek-V3: 1); the
    /// preset's value when absent.
    #[serde(default)]
    pub mtp_layers: Option<u32>,
}

/// Numeric precision of the training GEMMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Tf32,
    Fp16,
    Bf16,
    Fp8,
    Fp4,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Fp4 => "fp4",
        }
    }
}

/// Attention kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKernel {
    /// Fused attention (FlashAttention, cuDNN): scores never reach HBM.
    Flash,
    /// Batched GEMMs around a fused softmax (Megatron-LM before fused attention).
    Unfused,
}

/// Pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PipelineSchedule {
    /// GPipe: all forwards then all backwards.
    Gpipe,
    /// One-forward-one-backward (PipeDream-flush); interleaved when `vpp > 1`.
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Zero-bubble (Qi et al. 2023, ZB-H1): backward split into input and weight gradients.
    ZeroBubble,
    /// DeepSeek-V3 DualPipe: bidirectional, forward/backward of two micro-batches overlapped.
    Dualpipe,
}

/// The `training` block (the `training` block of `myriad-validation/1`, plus extensions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    /// Sequences per optimizer step.
    #[serde(default)]
    pub global_batch: Option<u64>,
    #[serde(default)]
    pub micro_batch: Option<u64>,
    #[serde(default)]
    pub tp: Option<u32>,
    #[serde(default)]
    pub pp: Option<u32>,
    #[serde(default)]
    pub dp: Option<u32>,
    #[serde(default)]
    pub cp: Option<u32>,
    /// Expert parallelism, carved out of the data-parallel ranks (Megatron-LM).
    #[serde(default)]
    pub ep: Option<u32>,
    /// Tensor parallelism of the expert layers (Megatron `expert_tensor_parallel_size`);
    /// default 1 when `ep > 1`, else `tp`.
    #[serde(default)]
    pub etp: Option<u32>,
    /// Virtual pipeline stages per rank (interleaving).
    #[serde(default)]
    pub vpp: Option<u32>,
    /// Micro-batches the interleaved schedule runs through one virtual stage in a row
    /// (Megatron-Core `microbatch_group_size_per_vp_stage`); default PP. Between PP and the
    /// step's micro-batches, and the last group must hold none or at least PP. Larger groups
    /// allow micro-batch counts PP does not divide, at the cost of more activations in flight.
    #[serde(default)]
    pub vpp_group: Option<u32>,
    /// Transformer layers of the first pipeline stage (Megatron-Core
    /// `--decoder-first-pipeline-num-layers`); the other layers split evenly over the other
    /// stages. For layer counts that PP does not divide (DeepSeek-V3's 61 on PP 16). With
    /// `vpp` > 1 every stage's layers must divide by it.
    #[serde(default)]
    pub first_stage_layers: Option<u32>,
    /// Transformer layers of the last pipeline stage (`--decoder-last-pipeline-num-layers`),
    /// as `first_stage_layers`.
    #[serde(default)]
    pub last_stage_layers: Option<u32>,
    #[serde(default)]
    pub sequence_parallel: Option<bool>,
    #[serde(default)]
    pub recompute: Option<Recompute>,
    /// What selective recompute recomputes (Megatron-Core `--recompute-modules`):
    /// `core_attn` (the default), `layernorm`, `moe_act`, `mla_up_proj`, `mlp`, `moe`,
    /// `shared_experts`. Giving it means `recompute: selective`.
    #[serde(default)]
    pub recompute_modules: Option<Vec<RecomputeModule>>,
    /// With `recompute: full`: recompute only the first N layers of every pipeline chunk
    /// (Megatron `--recompute-method block --recompute-num-layers N`); default: all of them.
    #[serde(default)]
    pub recompute_layers: Option<u32>,
    /// Offload the activations of the first N layers of every pipeline chunk to host memory
    /// after their forward pass and reload them for backward (Megatron
    /// `cpu_offloading_num_layers`); needs a scale-up system with a host memory link in the
    /// catalog (GB200/GB300 NVL72). Default: none, or the least that fits when `recompute`
    /// is not given either.
    #[serde(default)]
    pub offload_layers: Option<u32>,
    #[serde(default)]
    pub precision: Option<Precision>,
    /// Gradient buffers and their data-parallel reduction in fp32 (Megatron
    /// `--accumulate-allreduce-grads-in-fp32`, mcore `grad_reduce_in_fp32`); `false` keeps
    /// them in the parameter precision (bf16/fp16), as NVIDIA's NeMo and Megatron-Bridge
    /// performance recipes do. Default `true`, except `false` for fp16 (Megatron forces fp32
    /// accumulation only for bf16).
    #[serde(default)]
    pub grad_reduce_in_fp32: Option<bool>,
    /// Parameters stored in fp8 only (NeMo `fp8_params`, Megatron `--fp8-param-gather`):
    /// the 2-byte copy of every weight is dropped (its fp8 copy and, for the backward pass,
    /// its fp8 transpose remain) and the data-parallel parameter all-gather moves 1 byte per
    /// parameter. Needs fp8 or fp4 precision. Default `false`.
    #[serde(default)]
    pub fp8_params: Option<bool>,
    /// Adam's two moments kept in bf16 instead of fp32 (DeepSeek-V3 report §3.3;
    /// Megatron-Core's precision-aware optimizer, `exp_avg_dtype`/`exp_avg_sq_dtype`
    /// bf16): optimizer state 8 bytes per parameter instead of 12 (the fp32 master copy
    /// stays), and the optimizer step moves 8 bytes less per parameter. Default `false`.
    #[serde(default)]
    pub bf16_optimizer_moments: Option<bool>,
    /// The optimizer's copy of the weights kept in bf16 instead of fp32 (Apex
    /// `DistributedFusedAdam` with `dtype: bf16`, NeMo's `optim.dtype`, which keeps the whole
    /// optimizer state in bf16: set `bf16_optimizer_moments` too): 2 bytes per parameter
    /// less optimizer state, and 4 bytes less optimizer-step traffic. Default `false`.
    #[serde(default)]
    pub bf16_master_weights: Option<bool>,
    /// ZeRO-3 prefetches the next layer's parameters while the current one computes (PyTorch
    /// FSDP, Megatron FSDP, DeepSpeed since 2022); `false` gathers each weight matrix when
    /// it runs, on the critical path, as DeepSpeed 0.3 did (a device synchronisation before
    /// every parameter's all-gather, list collectives whose host work grows with the
    /// number of ranks). Default `true`.
    #[serde(default)]
    pub zero3_prefetch: Option<bool>,
    /// Megatron distributed optimizer (ZeRO-1-like sharding of optimizer state over DP).
    #[serde(default)]
    pub distributed_optimizer: Option<bool>,
    /// ZeRO stage 0-3 (3 = parameters sharded too, gathered per layer).
    #[serde(default)]
    pub zero_stage: Option<u8>,
    #[serde(default)]
    pub pipeline_schedule: Option<PipelineSchedule>,
    /// Attention kernel; default `flash`, except `unfused` for fp16 (the fp16 loss-scaling
    /// recipes of Megatron-LM 2021-2022 ran an unfused attention core).
    #[serde(default)]
    pub attention: Option<AttentionKernel>,
    /// Loss kernel over the logits: `unfused` (Megatron-LM's default), `fused` (Megatron-Core
    /// `cross_entropy_loss_fusion`; NeMo and Megatron-Bridge recipes; the default) or `te`
    /// (Transformer Engine's Triton kernel, `cross_entropy_fusion_impl: te`).
    #[serde(default)]
    pub cross_entropy: Option<CrossEntropy>,
    /// How context-parallel ranks share keys and values (Megatron-Core `cp_comm_type`):
    /// `p2p` (a ring of exchanges overlapped with attention, partial results merged; the
    /// default) or `all_gather` (gather them, attend once, reduce-scatter the gradients;
    /// Meta's Llama 3).
    #[serde(default)]
    pub cp_comm: Option<CpComm>,
    /// How MoE tokens reach experts on other EP ranks: `alltoall` (Megatron's default: an
    /// all-to-all of every token's top-k copies), `deepep` or `hybridep` (Megatron's `flex`
    /// dispatcher: each token crosses the scale-out network once per other scale-up domain
    /// holding any of its experts, then fans out over the scale-up fabric once to each rank
    /// there holding any of them; inside one scale-up domain, once to each such rank).
    #[serde(default)]
    pub ep_dispatcher: Option<EpDispatcher>,
    /// MoE dispatch and combine hidden under another micro-batch's compute (Megatron-Core
    /// `overlap_moe_expert_parallel_comm`, the combined 1F1B schedule after DeepSeek-V3's
    /// DualPipe): the forward of one micro-batch runs beside the backward of the previous one,
    /// each all-to-all of one under a block of the other (attention forward under the
    /// backward combine, backward MLP under the forward dispatch, forward MLP under the
    /// backward dispatch, backward attention under the forward combine). Default `false`.
    #[serde(default)]
    pub ep_overlap: Option<bool>,
    /// The whole iteration replays as one CUDA graph with a static expert capacity
    /// (Megatron's `cuda_graph_impl: full_iteration` with `moe_paged_stash`): MoE layers run
    /// without the per-layer overhead of eager MoE layers (the host's wait for the token
    /// counts, the launch gaps of their many small routing and permutation kernels).
    /// Default `false`.
    #[serde(default)]
    pub moe_full_graph: Option<bool>,
    /// The routed experts' GEMMs run as one grouped kernel per pass (`true`), or as one
    /// kernel per local expert (`false`): Transformer Engine's `GroupedLinear`, which
    /// Megatron-Core's MoE layers use, launches a cuBLAS GEMM per expert over four streams
    /// and, outside delayed fp8 scaling, quantises each expert's input on its own. Default:
    /// `true` with `moe_full_graph` (a CUDA graph needs the grouped GEMM that takes its
    /// split sizes on the device), `false` otherwise.
    #[serde(default)]
    pub moe_grouped_kernel: Option<bool>,
    /// Tensor-parallel communication overlapped with GEMMs (Transformer Engine
    /// userbuffers); default: on with sequence parallelism and fused attention.
    #[serde(default)]
    pub tp_comm_overlap: Option<bool>,
    /// SMs Transformer Engine's userbuffers reserve for each reduce-scatter it overlaps with
    /// a forward GEMM (the attention output projection and the second MLP GEMM, its
    /// `pipeline` method with `set_sm_margin`): those GEMMs run on the remaining SMs.
    /// Default 16 (TE's default `num_sm`); applies only with `tp_comm_overlap`.
    #[serde(default)]
    pub tp_comm_overlap_sms: Option<u32>,
    /// Data-parallel gradient reduce-scatter (all-reduce) overlapped with the backward pass
    /// and the parameter all-gather with the forward pass, bucket by bucket (Megatron-Core
    /// `overlap_grad_reduce` / `overlap_param_gather`, 2023); `false` runs them after the
    /// backward and before the next forward, fully exposed, as Megatron-LM did before.
    /// Default `true`.
    #[serde(default)]
    pub overlap_grad_reduce: Option<bool>,
    /// Pipeline send/receive of the interleaved schedule overlapped with the next chunk's
    /// compute (Megatron `--overlap-p2p-communication`); `false` blocks on every transfer.
    /// Default `true`.
    #[serde(default)]
    pub overlap_p2p_comm: Option<bool>,
    /// Megatron-LM's scatter/gather of pipeline sends without sequence parallelism
    /// (Narayanan et al., SC'21 §4.1; default from Feb 2021 until the pipeline moved into
    /// Megatron-Core in Mar 2023): each tensor-parallel rank sends only its 1/TP slice of
    /// the activation over its own NIC and the receiving stage all-gathers the slices over
    /// the scale-up fabric. Default `false` (Megatron-Core sends the whole tensor from every
    /// rank; with sequence parallelism the activation is already sliced).
    #[serde(default)]
    pub pp_scatter_gather: Option<bool>,
    /// Expert-parallel dispatch in fp8 (fp8/fp4 training only): the tokens are quantised
    /// before the dispatch all-to-all, halving its bytes, as DeepSeek-V3's own framework does
    /// (arXiv:2412.19437 §3.3.2). Default `false`: Megatron-Core dispatches bf16 tokens with
    /// every dispatcher (the all-to-all, DeepEP and HybridEP; fp8 dispatch came with its
    /// NCCL EP backend in August 2026) and quantises them inside the expert GEMMs. The combine
    /// is bf16 either way.
    #[serde(default)]
    pub fp8_dispatch: Option<bool>,
    /// How fp8 training scales its tensors (fp8 training only; Transformer Engine's
    /// recipe): `delayed` (the default, TE's `DelayedScaling`), `current` (per-tensor
    /// current scaling, Megatron-Bridge's `fp8_cs`: the input is read once more for its
    /// amax, in two more kernels), `blockwise` (1×128/128×128 blocks) or `mxfp8`.
    #[serde(default)]
    pub fp8_recipe: Option<Fp8Recipe>,
    /// Order in which parallel dimensions are laid onto the hierarchy, innermost first
    /// (default `tp-cp-ep-dp-pp`).
    #[serde(default)]
    pub placement: Option<String>,
    /// Accelerators the job uses; default: `cluster.count`.
    #[serde(default)]
    pub accelerators: Option<u64>,
    /// Tokens to train on (time to train, energy, cost).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub tokens: Option<f64>,
}

/// Parses a YAML or JSON text into a `serde_json::Value`, mapping syntax errors. A number
/// that is not finite (YAML `.nan`, `.inf`; JSON `NaN`, `Infinity`, `1e999`) and a key
/// given twice in one mapping are errors naming their field path (`read::Build`).
pub fn parse_value(file: &str, text: &str) -> Result<serde_json::Value, ScenarioError> {
    use serde::de::DeserializeSeed;
    let state = std::cell::RefCell::new(read::State::default());
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let mut de = serde_json::Deserializer::from_str(text);
        let out = read::Build::root(&state)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v));
        out.map_err(|e| {
            let at = format!("line {} column {}", e.line(), e.column());
            let st = state.into_inner();
            if let Some((path, message)) = st.problem {
                return ScenarioError::new(file, path, format!("{message} (at {at})"));
            }
            let full = e.to_string();
            let msg = full.strip_suffix(&format!(" at {at}")).unwrap_or(&full);
            let path = st.path();
            if !path.is_empty() && json_non_finite(text, e.line(), e.column(), msg) {
                return ScenarioError::new(
                    file,
                    path,
                    format!("invalid JSON at {at}: not a finite number; expected a finite number"),
                );
            }
            ScenarioError::new(file, "(document)", format!("invalid JSON at {at}: {msg}"))
        })
    } else {
        let mut opts = serde_saphyr::Options::default();
        // Non-finite floats and repeated keys reach `read::Build`, which rejects them
        // naming their field path.
        opts.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
        opts.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
        serde_saphyr::with_deserializer_from_str_with_options(text, opts, |de| {
            read::Build::root(&state).deserialize(de)
        })
        .map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(" (at line {} column {})", l.line(), l.column()))
                .unwrap_or_default();
            if let Some((path, message)) = state.into_inner().problem {
                return ScenarioError::new(file, path, format!("{message}{at}"));
            }
            let msg = e.to_string();
            let first = msg
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            ScenarioError::new(
                file,
                "(document)",
                format!("invalid YAML: {}", yaml_message(first)),
            )
        })
    }
}

/// The YAML parser's messages in the file's terms: some of them speak to a Rust caller
/// ("use from_str_multiple", "require weak recursion types") or print a Rust value
/// (`budget breached: Nodes { nodes: 250001 }`).
fn yaml_message(first: &str) -> String {
    // `line L column C: message`, or the message alone.
    let (at, msg) = match first.find(": ") {
        Some(i) if first.starts_with("line ") => (&first[..i + 2], &first[i + 2..]),
        _ => ("", first),
    };
    let plain = if msg.starts_with("multiple YAML documents") {
        "a second YAML document (after `---`); a file holds one".to_string()
    } else if msg.starts_with("recursive references") {
        "an alias (`*name`) inside the node its anchor names; a value cannot contain itself"
            .to_string()
    } else if let Some(b) = msg.strip_prefix("budget breached: ") {
        // `Kind { field: n }`.
        let kind = b.split_whitespace().next().unwrap_or("");
        let n: String = b.chars().filter(|c| c.is_ascii_digit()).collect();
        match kind {
            "Depth" => format!("nested {n} levels deep; a file may nest at most 64"),
            "Nodes" => format!(
                "more than {} values (aliases expanded: {n} so far); the file is too large",
                n.parse::<u64>().map_or(0, |v| v.saturating_sub(1))
            ),
            "Aliases" => format!("{n} aliases (`*name`); the file uses too many"),
            "Anchors" => format!("{n} anchors (`&name`); the file defines too many"),
            _ => format!("the file is too large for the YAML reader ({kind} {n})"),
        }
    } else {
        return first.to_string();
    };
    format!("{at}{plain}")
}

/// Whether a JSON syntax error at `line`/`column` is a number JSON cannot hold: out of the
/// range of a double (`1e999`), or a literal some writers emit for non-finite floats
/// (`NaN`, `Infinity`, `-Infinity`).
fn json_non_finite(text: &str, line: usize, column: usize, msg: &str) -> bool {
    if msg.starts_with("number out of range") {
        return true;
    }
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return false;
    };
    // serde_json's column is the 1-based byte column of the character it stopped at, or
    // the one after it: look at the token around it.
    let start = l[..column.saturating_sub(1).min(l.len())]
        .rfind(|c: char| c == ':' || c == ',' || c == '[' || c.is_whitespace())
        .map_or(0, |i| i + 1);
    let token = l[start..].trim_start();
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "+Infinity",
        "-NaN",
        "nan",
        "inf",
        "-inf",
    ]
    .iter()
    .any(|t| token.starts_with(t))
}

/// Deserializes a typed value, turning serde errors into field-path errors with a
/// "did you mean" for unknown keys. `prefix` is prepended to paths. A struct must be
/// given as a mapping: a list is an error, never fields filled by position.
pub fn from_value<T: serde::de::DeserializeOwned>(
    file: &str,
    prefix: &str,
    value: serde_json::Value,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(strict::StrictValue(value)).map_err(|e| {
        let mut path = e.path().to_string();
        if path == "." {
            path.clear();
        }
        let inner = e.inner().to_string();
        let full = |p: &str| match (prefix.is_empty(), p.is_empty()) {
            (true, _) => p.to_string(),
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{p}"),
        };
        if let Some(rest) = inner.strip_prefix("unknown field `") {
            let key = rest.split('`').next().unwrap_or("");
            let expected: Vec<&str> = rest
                .split("expected ")
                .nth(1)
                .map(|s| s.split('`').skip(1).step_by(2).collect())
                .unwrap_or_default();
            let hint = myriad_catalog::closest(key, expected.iter().copied());
            let p = if path.ends_with(key) {
                path.clone()
            } else if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            let msg = match hint.first() {
                Some(h) if strsim::normalized_damerau_levenshtein(key, h) >= 0.5 => {
                    format!("unknown key; did you mean {h}?")
                }
                _ => format!("unknown key; expected one of {}", expected.join(", ")),
            };
            return ScenarioError::new(file, full(&p), msg);
        }
        if let Some(rest) = inner.strip_prefix("missing field `") {
            let key = rest.split('`').next().unwrap_or("");
            let p = if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            let msg = if rest.ends_with(strict::NULL_REQUIRED) {
                "null, but this key is required (it has no default)"
            } else {
                "missing required key"
            };
            return ScenarioError::new(file, full(&p), msg);
        }
        let p = if path.is_empty() {
            "(document)".to_string()
        } else {
            full(&path)
        };
        ScenarioError::new(file, p, plain_expected(&inner))
    })
}

/// serde's messages name Rust types (`expected u32`, `expected struct TrainingSpec`): says
/// what a file must hold there instead.
fn plain_expected(msg: &str) -> String {
    let Some((head, what)) = msg.rsplit_once(", expected ") else {
        return msg.to_string();
    };
    let range = |max: u64| format!("a whole number from 0 to {max}");
    let plain = match what {
        "u8" => range(u8::MAX as u64),
        "u16" => range(u16::MAX as u64),
        "u32" => range(u32::MAX as u64),
        "u64" => range(u64::MAX),
        "usize" => range(usize::MAX as u64),
        "i32" | "i64" => "a whole number".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a sequence" => "a list".to_string(),
        w if w.starts_with("struct ") => "a mapping (key: value)".to_string(),
        _ => return msg.to_string(),
    };
    format!("{head}, expected {plain}")
}

/// Parses and checks a scenario file's text.
pub fn parse_scenario(file: &str, text: &str, cat: &Catalog) -> Result<Scenario, ScenarioError> {
    let value = parse_value(file, text)?;
    let s: Scenario = from_value(file, "", value)?;
    s.check(file, cat)?;
    Ok(s)
}

fn err(file: &str, path: &str, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new(file, path, msg)
}

fn unknown(file: &str, path: &str, e: myriad_catalog::UnknownId) -> ScenarioError {
    err(file, path, e.message())
}

/// Most switch tiers a fabric may have.
pub const MAX_TIERS: u32 = 4;
/// Most accelerators in a cluster: the topology graph is built in memory (about 80 MB per
/// million H100) and numbers its vertices in 32 bits; 2^24 is 16 times the largest cluster
/// planned today.
pub const MAX_ACCELERATORS: u64 = 1 << 24;
/// Most sites in a cluster: every pair of sites gets DCI links (a million pairs at this
/// limit) and a switch records its site in 16 bits.
pub const MAX_SITES: u32 = 1024;
/// Highest electricity price, USD per kWh, `cluster.datacenter.usd_per_kwh` takes: ten times
/// the dearest yearly retail prices (about 0.5-1 USD/kWh, Europe 2022); the price is charged
/// on every MWh of a year or a whole run, so only a yearly mean makes sense there.
pub const MAX_USD_PER_KWH: f64 = 10.0;
/// The Earth's equatorial circumference, km: no DCI route between two sites is longer.
pub const EARTH_CIRCUMFERENCE_KM: f64 = 40_075.0;

impl Scenario {
    /// Semantic checks that need no built cluster: ids exist, numbers are in range.
    pub fn check(&self, file: &str, cat: &Catalog) -> Result<(), ScenarioError> {
        if self.format != FORMAT {
            return Err(err(
                file,
                "format",
                format!("`{}` is not supported; expected `{FORMAT}`", self.format),
            ));
        }
        let c = &self.cluster;
        let acc = cat
            .accelerator(&c.accelerator)
            .map_err(|e| unknown(file, "cluster.accelerator", e))?;
        if c.count == 0 {
            return Err(err(file, "cluster.count", "must be at least 1"));
        }
        if c.count > MAX_ACCELERATORS {
            return Err(err(
                file,
                "cluster.count",
                format!(
                    "{} is more than the {MAX_ACCELERATORS} accelerators supported",
                    c.count
                ),
            ));
        }
        cat.scale_up_for(&acc.id, c.scale_up.as_deref())
            .map_err(|m| err(file, "cluster.scale_up", m))?;
        let so = &c.scale_out;
        if let Some(f) = &so.fabric {
            cat.fabric(f)
                .map_err(|e| unknown(file, "cluster.scale_out.fabric", e))?;
        }
        if let Some(r) = so.switch_radix {
            if !(4..=1024).contains(&r) || r % 2 != 0 {
                return Err(err(
                    file,
                    "cluster.scale_out.switch_radix",
                    format!("{r} is not an even port count between 4 and 1024"),
                ));
            }
        }
        if let Some(t) = so.tiers {
            if t == 0 {
                return Err(err(file, "cluster.scale_out.tiers", "0: at least 1 tier"));
            }
            if t > MAX_TIERS {
                return Err(err(
                    file,
                    "cluster.scale_out.tiers",
                    format!("{t} is more than the {MAX_TIERS} supported"),
                ));
            }
        }
        if !(so.oversubscription >= 1.0 && so.oversubscription <= 64.0) {
            return Err(err(
                file,
                "cluster.scale_out.oversubscription",
                format!("{} is not a ratio between 1.0 and 64", so.oversubscription),
            ));
        }
        if let Some(i) = so.island {
            if i == 0 || i > c.count {
                return Err(err(
                    file,
                    "cluster.scale_out.island",
                    format!("{i} must be between 1 and cluster.count {}", c.count),
                ));
            }
        }
        if so.planes == 0 || so.planes > 8 {
            return Err(err(
                file,
                "cluster.scale_out.planes",
                format!("{} is not between 1 and 8", so.planes),
            ));
        }
        if so.qps_per_connection == 0 || so.qps_per_connection > 64 {
            return Err(err(
                file,
                "cluster.scale_out.qps_per_connection",
                format!("{} is not between 1 and 64", so.qps_per_connection),
            ));
        }
        if c.sites == 0 {
            return Err(err(file, "cluster.sites", "must be at least 1"));
        }
        if c.sites > MAX_SITES {
            return Err(err(
                file,
                "cluster.sites",
                format!("{} is more than the {MAX_SITES} supported", c.sites),
            ));
        }
        if c.sites > 1 && c.dci.is_none() {
            return Err(err(
                file,
                "cluster.dci",
                format!(
                    "{} sites need a DCI link: {{gbps_per_site, distance_km}}",
                    c.sites
                ),
            ));
        }
        if c.sites == 1 && c.dci.is_some() {
            return Err(err(
                file,
                "cluster.dci",
                "a DCI link joins sites, but cluster.sites is 1; give sites: 2 or more, or drop dci",
            ));
        }
        if !c.count.is_multiple_of(c.sites as u64) {
            return Err(err(
                file,
                "cluster.sites",
                format!(
                    "{} sites do not split cluster.count {} evenly",
                    c.sites, c.count
                ),
            ));
        }
        if let Some(i) = so.island {
            let per_site = c.count / c.sites as u64;
            if i > per_site && i != c.count {
                return Err(err(
                    file,
                    "cluster.scale_out.island",
                    format!(
                        "{i} is more than the {per_site} accelerators of a site ({} sites); an island sits inside one site (or give the whole cluster, {})",
                        c.sites, c.count
                    ),
                ));
            }
        }
        if let Some(d) = &c.dci {
            if !(d.gbps_per_site > 0.0) {
                return Err(err(file, "cluster.dci.gbps_per_site", "must be positive"));
            }
            if !(d.distance_km >= 0.0) {
                return Err(err(file, "cluster.dci.distance_km", "must not be negative"));
            }
            if d.distance_km > EARTH_CIRCUMFERENCE_KM {
                return Err(err(
                    file,
                    "cluster.dci.distance_km",
                    format!(
                        "{} km is more than the Earth's circumference ({EARTH_CIRCUMFERENCE_KM} km); no fibre between two sites is longer",
                        d.distance_km
                    ),
                ));
            }
        }
        let dc = &c.datacenter;
        if !(dc.pue >= 1.0 && dc.pue <= 3.0) {
            return Err(err(
                file,
                "cluster.datacenter.pue",
                format!("{} is not between 1.0 and 3.0", dc.pue),
            ));
        }
        if !(dc.usd_per_kwh >= 0.0 && dc.usd_per_kwh <= MAX_USD_PER_KWH) {
            return Err(err(
                file,
                "cluster.datacenter.usd_per_kwh",
                format!(
                    "{} must be a non-negative price in USD per kWh, at most {MAX_USD_PER_KWH}",
                    dc.usd_per_kwh
                ),
            ));
        }
        for (i, f) in c.faults.iter().enumerate() {
            if !(f.at_s.is_finite() && f.at_s >= 0.0) {
                return Err(err(
                    file,
                    &format!("cluster.faults[{i}].at_s"),
                    format!("{} is not a time >= 0 s", f.at_s),
                ));
            }
            let given = [f.link, f.switch, f.nic, f.domain]
                .iter()
                .filter(|x| x.is_some())
                .count();
            if given != 1 {
                return Err(err(
                    file,
                    &format!("cluster.faults[{i}]"),
                    format!("give exactly one of link, switch, nic, domain ({given} given)"),
                ));
            }
        }
        if let Some(m) = &self.model {
            m.resolve(cat)
                .map_err(|(p, msg)| err(file, &format!("model.{p}"), msg))?;
        }
        if let Some(t) = &self.training {
            t.check()
                .map_err(|(p, msg)| err(file, &format!("training.{p}"), msg))?;
        }
        if let Some(r) = &self.reliability {
            r.check()
                .map_err(|(p, msg)| err(file, &format!("reliability.{p}"), msg))?;
        }
        if let Some(v) = &self.serving {
            v.check()
                .map_err(|(p, msg)| err(file, &format!("serving.{p}"), msg))?;
        }
        if let Some(sc) = &self.scheduling {
            sc.check()
                .map_err(|(p, msg)| err(file, &format!("scheduling.{p}"), msg))?;
        }
        if let Some(p) = &self.planning {
            for (i, a) in p.accelerators.iter().enumerate() {
                cat.accelerator(a)
                    .map_err(|e| unknown(file, &format!("planning.accelerators[{i}]"), e))?;
            }
            for (i, &c) in p.counts.iter().enumerate() {
                if !(1..=MAX_ACCELERATORS).contains(&c) {
                    return Err(err(
                        file,
                        &format!("planning.counts[{i}]"),
                        format!(
                            "{c} must be an accelerator count from 1 to {MAX_ACCELERATORS}, the most a cluster holds"
                        ),
                    ));
                }
                // A candidate given twice was planned, listed and put on the front twice.
                if let Some(j) = p.counts[..i].iter().position(|x| *x == c) {
                    return Err(err(
                        file,
                        &format!("planning.counts[{i}]"),
                        format!("{c} is given twice (also [{j}]); give each count once"),
                    ));
                }
            }
            for (k, v) in [
                ("deadline_days", p.deadline_days),
                ("budget_usd", p.budget_usd),
                ("max_mw", p.max_mw),
            ] {
                if let Some(v) = v {
                    if !(v > 0.0 && v.is_finite()) {
                        return Err(err(
                            file,
                            &format!("planning.{k}"),
                            format!("{v} must be a positive number"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl ModelSpec {
    /// The resolved architecture; errors are `(field, message)`.
    pub fn resolve(&self, cat: &Catalog) -> Result<Transformer, (String, String)> {
        let base = match &self.preset {
            Some(p) => Some(
                cat.model(p)
                    .map_err(|e| {
                        (
                            "preset".to_string(),
                            format!(
                                "`{}` is not a built-in model; closest: {}",
                                e.id,
                                e.closest.join(", ")
                            ),
                        )
                    })?
                    .model
                    .clone(),
            ),
            None => None,
        };
        macro_rules! field {
            ($f:ident) => {
                match (self.$f.clone(), base.as_ref()) {
                    (Some(v), _) => v,
                    (None, Some(b)) => b.$f.clone(),
                    (None, None) => {
                        return Err((
                            stringify!($f).to_string(),
                            "missing: give it or a `preset`".to_string(),
                        ))
                    }
                }
            };
        }
        let t = Transformer {
            name: self
                .name
                .clone()
                .or_else(|| base.as_ref().map(|b| b.name.clone()))
                .unwrap_or_else(|| "custom".to_string()),
            layers: field!(layers),
            hidden: field!(hidden),
            ffn_hidden: field!(ffn_hidden),
            heads: field!(heads),
            kv_heads: field!(kv_heads),
            head_dim: self.head_dim.or(base.as_ref().and_then(|b| b.head_dim)),
            vocab: field!(vocab),
            seq_len: field!(seq_len),
            gated_mlp: field!(gated_mlp),
            tied_embeddings: self
                .tied_embeddings
                .or(base.as_ref().map(|b| b.tied_embeddings))
                .unwrap_or(false),
            moe: self
                .moe
                .clone()
                .or(base.as_ref().and_then(|b| b.moe.clone())),
            mla: self
                .mla
                .clone()
                .or(base.as_ref().and_then(|b| b.mla.clone())),
            sliding_window: self
                .sliding_window
                .or(base.as_ref().and_then(|b| b.sliding_window)),
            attention_sinks: self
                .attention_sinks
                .or(base.as_ref().map(|b| b.attention_sinks))
                .unwrap_or(false),
            mtp_layers: self
                .mtp_layers
                .or(base.as_ref().map(|b| b.mtp_layers))
                .unwrap_or(0),
        };
        t.check().map_err(|m| {
            let (p, rest) = m.split_once(": ").unwrap_or(("", &m));
            (p.to_string(), rest.to_string())
        })?;
        Ok(t)
    }
}

impl TrainingSpec {
    /// Range checks on the training block; errors are `(field, message)`.
    pub fn check(&self) -> Result<(), (String, String)> {
        let pos32 = [
            ("tp", self.tp),
            ("pp", self.pp),
            ("dp", self.dp),
            ("cp", self.cp),
            ("ep", self.ep),
            ("etp", self.etp),
            ("vpp", self.vpp),
            ("vpp_group", self.vpp_group),
        ];
        for (n, v) in pos32 {
            if v == Some(0) {
                return Err((n.to_string(), "must be at least 1, got 0".to_string()));
            }
        }
        for (n, v) in [
            ("global_batch", self.global_batch),
            ("micro_batch", self.micro_batch),
            ("accelerators", self.accelerators),
        ] {
            if v == Some(0) {
                return Err((n.to_string(), "must be at least 1, got 0".to_string()));
            }
        }
        if let Some(m) = self.micro_batch {
            if m > u32::MAX as u64 {
                return Err((
                    "micro_batch".into(),
                    format!("{m} is more than the {} supported", u32::MAX),
                ));
            }
        }
        if let Some(z) = self.zero_stage {
            if z > 3 {
                return Err(("zero_stage".into(), format!("{z} is not 0, 1, 2 or 3")));
            }
        }
        if let Some(t) = self.tokens {
            if !(t > 0.0 && t.is_finite()) {
                return Err(("tokens".into(), format!("{t} must be a positive number")));
            }
        }
        if let Some(p) = &self.placement {
            parse_placement(p).map_err(|m| ("placement".to_string(), m))?;
        }
        Ok(())
    }
}

/// The `reliability` block (`myriad reliability`). Every key is optional; the defaults
/// (docs/reliability.md) derive the failure rates from the Llama 3 405B run (466
/// interruptions in 54 days on 16,384 H100, Table 5 of the Llama 3 paper).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReliabilitySpec {
    /// Unexpected failure rates per component.
    #[serde(default)]
    pub failures: FailureSpec,
    /// Planned interruptions (maintenance, upgrades, configuration changes).
    #[serde(default)]
    pub planned: PlannedSpec,
    /// Detection, diagnosis and restart times.
    #[serde(default)]
    pub recovery: RecoverySpec,
    /// Hot spares and repair time.
    #[serde(default)]
    pub spares: SparesSpec,
    /// Checkpoint policy and size.
    #[serde(default)]
    pub checkpoint: CheckpointSpec,
    /// Checkpoint storage bandwidth.
    #[serde(default)]
    pub storage: StorageSpec,
    /// Monte Carlo replicas (default 1000; `--replicas` overrides).
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Random seed (default 1; `--seed` overrides).
    #[serde(default)]
    pub seed: Option<u64>,
}

/// A failure rate: `per_hour` (failures per device-hour) or `mtbf_hours`, exactly one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "`{per_hour: R}` (failures per device-hour) or `{mtbf_hours: M}`"
)]
pub struct FailureRate {
    /// Failures per device-hour.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub per_hour: Option<f64>,
    /// Mean time between failures of one device, hours.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub mtbf_hours: Option<f64>,
}

impl FailureRate {
    /// Failures per device-hour.
    pub fn per_hour(&self) -> f64 {
        match (self.per_hour, self.mtbf_hours) {
            (Some(r), _) => r,
            (None, Some(m)) => 1.0 / m,
            (None, None) => 0.0,
        }
    }

    fn check(&self) -> Result<(), String> {
        match (self.per_hour, self.mtbf_hours) {
            (Some(_), Some(_)) => Err("give per_hour or mtbf_hours, not both".into()),
            (None, None) => Err("give per_hour or mtbf_hours".into()),
            (Some(r), None) if !(r >= 0.0 && r.is_finite()) => Err(format!(
                "per_hour {r} must be a non-negative number of failures per device-hour"
            )),
            (None, Some(m)) if !(m > 0.0) => {
                Err(format!("mtbf_hours {m} must be a positive number of hours"))
            }
            _ => Ok(()),
        }
    }
}

/// Unexpected failure rates per component, each per device of its population (default:
/// the Llama 3 counts divided by the population and 54 days; see docs/reliability.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    /// Multiplies every unexpected failure rate (default 1).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub scale: Option<f64>,
    /// Accelerator faults other than HBM (faulty GPU, SRAM, GPU system processor, silent
    /// data corruption, thermal interface), per accelerator-hour.
    #[serde(default)]
    pub accelerator: Option<FailureRate>,
    /// HBM faults, per accelerator-hour.
    #[serde(default)]
    pub hbm: Option<FailureRate>,
    /// Host faults (unplanned host maintenance, SSD, power supply, chassis, IO board, CPU,
    /// DRAM), per node-hour.
    #[serde(default)]
    pub host: Option<FailureRate>,
    /// Scale-out NIC faults, per NIC-hour.
    #[serde(default)]
    pub nic: Option<FailureRate>,
    /// Scale-out switch faults, per switch-hour.
    #[serde(default)]
    pub switch: Option<FailureRate>,
    /// Scale-out cable and optics faults, per link-hour.
    #[serde(default)]
    pub link: Option<FailureRate>,
    /// Software bugs and dependencies, per job-hour.
    #[serde(default)]
    pub software: Option<FailureRate>,
    /// Unattributed hangs (NCCL watchdog timeouts), per accelerator-hour.
    #[serde(default)]
    pub unknown: Option<FailureRate>,
    /// Faults that take out a whole scale-up domain (NVLink switch tray, backplane, power
    /// shelf, liquid cooling), per domain-hour (default 0).
    #[serde(default)]
    pub domain: Option<FailureRate>,
}

/// Planned interruptions of the job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlannedSpec {
    /// Planned interruptions per job-hour (default 47 in 54 days).
    #[serde(default)]
    pub rate: Option<FailureRate>,
    /// Time the job stays stopped for the maintenance, before its restart, seconds
    /// (default 300).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub downtime_s: Option<f64>,
}

/// Times from a failure to training again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverySpec {
    /// From the fault to the job noticing it (watchdogs, heartbeats), seconds (default 60).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub detect_s: Option<f64>,
    /// Locating the faulty component and draining it, seconds (default 120).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub diagnose_s: Option<f64>,
    /// Rescheduling, process start and communicator set-up, before the checkpoint is read,
    /// seconds (default 300).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub restart_s: Option<f64>,
}

/// Hot spares and repair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SparesSpec {
    /// Accelerators held idle inside each scale-up domain (e.g. 8 of an NVL72's 72): a
    /// fault of fewer accelerators is absorbed inside the domain (default 0).
    #[serde(default)]
    pub per_domain: Option<u32>,
    /// Whole spare scale-up domains in the hot pool; default: the cluster's domains that
    /// the job does not use.
    #[serde(default)]
    pub domains: Option<u64>,
    /// Spare domains per pod (pod = `cluster.scale_out.island`, or the whole job); the pool
    /// is this times the job's pods. Give `domains` or `per_pod`, not both.
    #[serde(default)]
    pub per_pod: Option<u64>,
    /// Hours until a failed accelerator, node or domain is back in service (default 24).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub repair_hours: Option<f64>,
}

/// Checkpoint interval: seconds of training between checkpoints, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "expected a number of seconds or `auto`")]
pub enum CheckpointInterval {
    Seconds(f64),
    Keyword(IntervalKeyword),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IntervalKeyword {
    /// The interval that maximises the simulated effective training time ratio.
    Auto,
}

/// Whether training waits for the checkpoint write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointMode {
    /// Training stops until the checkpoint is on storage.
    Sync,
    /// Training stops only for a snapshot to host memory; storage is written behind.
    Async,
}

/// Where checkpoints go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointLevels {
    /// Every checkpoint to persistent storage.
    Storage,
    /// Every checkpoint to host memory with a copy on a peer in another domain; every
    /// `storage_every`-th also to persistent storage.
    MemoryThenStorage,
}

/// Checkpoint policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// Seconds of training between checkpoints, or `auto` (default).
    #[serde(default)]
    pub interval_s: Option<CheckpointInterval>,
    /// `sync` (default) or `async`, for single-level storage checkpoints;
    /// `memory-then-storage` is always `async` (`sync` with it is an error).
    #[serde(default)]
    pub mode: Option<CheckpointMode>,
    /// `storage` (default) or `memory-then-storage`.
    #[serde(default)]
    pub levels: Option<CheckpointLevels>,
    /// With `memory-then-storage`: every n-th checkpoint is also written to storage
    /// (default 10).
    #[serde(default)]
    pub storage_every: Option<u32>,
    /// With `memory-then-storage`: fraction of unexpected interruptions that also lose the
    /// in-memory copy and restart from storage (default 0.1).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub memory_lost_fraction: Option<f64>,
    /// Checkpoint size, bytes; default: parameters × `bytes_per_param`.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub size_bytes: Option<f64>,
    /// Bytes per parameter (default 14: bf16 weights + fp32 master weights, Adam m and v).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub bytes_per_param: Option<f64>,
    /// Device-to-host copy bandwidth per accelerator for snapshots, GB/s (default 25).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub snapshot_gbps: Option<f64>,
    /// Fixed cost of each checkpoint (barrier, metadata), seconds (default 0.5).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub overhead_s: Option<f64>,
}

/// Checkpoint storage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StorageSpec {
    /// Sustained write bandwidth, TB/s (default 2, Llama 3).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub sustained_tbps: Option<f64>,
    /// Peak bandwidth, used to read a checkpoint back, TB/s (default 7, Llama 3).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub peak_tbps: Option<f64>,
}

impl ReliabilitySpec {
    /// Range checks; errors are `(field path below reliability, message)`.
    pub fn check(&self) -> Result<(), (String, String)> {
        let f = &self.failures;
        if let Some(s) = f.scale {
            if !(s >= 0.0 && s.is_finite()) {
                return Err((
                    "failures.scale".into(),
                    format!("{s} must be a non-negative factor"),
                ));
            }
        }
        for (n, r) in [
            ("accelerator", f.accelerator),
            ("hbm", f.hbm),
            ("host", f.host),
            ("nic", f.nic),
            ("switch", f.switch),
            ("link", f.link),
            ("software", f.software),
            ("unknown", f.unknown),
            ("domain", f.domain),
        ] {
            if let Some(r) = r {
                r.check().map_err(|m| (format!("failures.{n}"), m))?;
            }
        }
        if let Some(r) = self.planned.rate {
            r.check().map_err(|m| ("planned.rate".to_string(), m))?;
        }
        let nonneg = |p: &str, v: Option<f64>| -> Result<(), (String, String)> {
            match v {
                Some(x) if !(x >= 0.0 && x.is_finite()) => {
                    Err((p.to_string(), format!("{x} must be a non-negative number")))
                }
                _ => Ok(()),
            }
        };
        let pos = |p: &str, v: Option<f64>| -> Result<(), (String, String)> {
            match v {
                Some(x) if !(x > 0.0 && x.is_finite()) => {
                    Err((p.to_string(), format!("{x} must be a positive number")))
                }
                _ => Ok(()),
            }
        };
        nonneg("planned.downtime_s", self.planned.downtime_s)?;
        nonneg("recovery.detect_s", self.recovery.detect_s)?;
        nonneg("recovery.diagnose_s", self.recovery.diagnose_s)?;
        nonneg("recovery.restart_s", self.recovery.restart_s)?;
        nonneg("spares.repair_hours", self.spares.repair_hours)?;
        if let Some(h) = self.spares.repair_hours {
            // The simulation runs in seconds: 1e308 hours is infinite there.
            if !(h * 3600.0).is_finite() {
                return Err((
                    "spares.repair_hours".into(),
                    format!(
                        "{h} must be a number of hours up to {:.3e} (repairs are timed in seconds)",
                        f64::MAX / 3600.0
                    ),
                ));
            }
        }
        if self.spares.domains.is_some() && self.spares.per_pod.is_some() {
            return Err((
                "spares.per_pod".into(),
                "give spares.domains or spares.per_pod, not both".into(),
            ));
        }
        let c = &self.checkpoint;
        if let Some(CheckpointInterval::Seconds(s)) = c.interval_s {
            pos("checkpoint.interval_s", Some(s))?;
        }
        if c.mode == Some(CheckpointMode::Sync)
            && c.levels == Some(CheckpointLevels::MemoryThenStorage)
        {
            return Err((
                "checkpoint.mode".into(),
                "sync is for levels: storage; with memory-then-storage training stalls only for the snapshot to host memory and the storage write runs behind it (async): drop mode or give async".into(),
            ));
        }
        if c.storage_every == Some(0) {
            return Err((
                "checkpoint.storage_every".into(),
                "must be at least 1, got 0".into(),
            ));
        }
        if let Some(x) = c.memory_lost_fraction {
            if !(0.0..=1.0).contains(&x) {
                return Err((
                    "checkpoint.memory_lost_fraction".into(),
                    format!("{x} is not a fraction between 0 and 1"),
                ));
            }
        }
        pos("checkpoint.size_bytes", c.size_bytes)?;
        pos("checkpoint.bytes_per_param", c.bytes_per_param)?;
        pos("checkpoint.snapshot_gbps", c.snapshot_gbps)?;
        nonneg("checkpoint.overhead_s", c.overhead_s)?;
        pos("storage.sustained_tbps", self.storage.sustained_tbps)?;
        pos("storage.peak_tbps", self.storage.peak_tbps)?;
        if self.replicas == Some(0) {
            return Err(("replicas".into(), "must be at least 1, got 0".into()));
        }
        Ok(())
    }
}

/// A parallel dimension in a placement order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dim {
    Tp,
    Cp,
    Ep,
    Dp,
    Pp,
}

pub const DEFAULT_PLACEMENT: [Dim; 5] = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp];

/// Parses `tp-cp-ep-dp-pp` (innermost first); every dimension exactly once.
pub fn parse_placement(s: &str) -> Result<[Dim; 5], String> {
    let parts: Vec<&str> = s.split(['-', ',', ' ']).filter(|p| !p.is_empty()).collect();
    let mut out = Vec::with_capacity(5);
    for p in &parts {
        let d = match p.to_ascii_lowercase().as_str() {
            "tp" => Dim::Tp,
            "cp" => Dim::Cp,
            "ep" => Dim::Ep,
            "dp" => Dim::Dp,
            "pp" => Dim::Pp,
            other => return Err(format!("`{other}` is not one of tp, cp, ep, dp, pp")),
        };
        if out.contains(&d) {
            return Err(format!("`{p}` appears twice in `{s}`"));
        }
        out.push(d);
    }
    if out.len() != 5 {
        return Err(format!(
            "`{s}` must name all of tp, cp, ep, dp, pp once (e.g. tp-cp-ep-dp-pp)"
        ));
    }
    Ok([out[0], out[1], out[2], out[3], out[4]])
}

/// The JSON Schema of `myriad/1`, generated from the types.
/// Every key that is not required also takes null ("not given": its default), as the
/// parser reads it.
pub fn schema() -> serde_json::Value {
    let mut s = serde_json::to_value(schemars::schema_for!(Scenario)).expect("schema serializes");
    null_for_defaults(&mut s);
    integer_bounds(&mut s);
    s
}

/// Gives every integer the range its type holds, which the parser enforces (`tp: 1e42` is
/// an error there): schemars says only `format: uint32`, which validators need not check.
fn integer_bounds(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(o) => {
            let range: Option<(Value, Value)> = match o.get("format").and_then(|f| f.as_str()) {
                Some("uint8") => Some((0.into(), u8::MAX.into())),
                Some("uint16") => Some((0.into(), u16::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("uint64") | Some("uint") => Some((0.into(), u64::MAX.into())),
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("int64") | Some("int") => Some((i64::MIN.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((lo, hi)) = range {
                // A tighter bound given by the type (`schemars(range)`) stays.
                o.entry("minimum").or_insert(lo);
                o.entry("maximum").or_insert(hi);
            }
            o.values_mut().for_each(integer_bounds);
        }
        Value::Array(a) => a.iter_mut().for_each(integer_bounds),
        _ => {}
    }
}

/// Lets every non-required property of every object schema under `v` be null.
fn null_for_defaults(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(o) => {
            let required: Vec<String> = o
                .get("required")
                .and_then(|r| r.as_array())
                .map(|r| {
                    r.iter()
                        .filter_map(|k| k.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = o.get_mut("properties") {
                for (k, p) in props.iter_mut() {
                    if !required.contains(k) {
                        allow_null(p);
                    }
                }
            }
            for (_, c) in o.iter_mut() {
                null_for_defaults(c);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(null_for_defaults),
        _ => {}
    }
}

/// Adds null to what property schema `p` accepts.
fn allow_null(p: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(o) = p else { return };
    let null = serde_json::json!({"type": "null"});
    if let Some(Value::Array(any)) = o.get_mut("anyOf") {
        if !any.contains(&null) {
            any.push(null);
        }
        return;
    }
    if let Some(Value::Array(e)) = o.get_mut("enum") {
        if !e.contains(&Value::Null) {
            e.push(Value::Null);
        }
    }
    match o.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = Value::String(t.clone());
            o.insert("type".into(), Value::Array(vec![t, "null".into()]));
        }
        Some(Value::Array(ts)) => {
            if !ts.contains(&Value::from("null")) {
                ts.push("null".into());
            }
        }
        Some(_) => {}
        None => {
            // A `$ref`, `oneOf` or `allOf`: the schema itself becomes one branch.
            let keep = ["description", "default", "title"];
            let inner: serde_json::Map<String, Value> = o
                .iter()
                .filter(|(k, _)| !keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            o.retain(|k, _| keep.contains(&k.as_str()));
            o.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(inner), null]),
            );
        }
    }
}
