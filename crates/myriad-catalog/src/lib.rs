//! The hardware and model catalog.
//!
//! Data lives in `data/*.yaml`, embedded in the binary with `include_str!` and parsed once.
//! One record per item. Every numeric field of a record has an entry in the record's
//! `sources` map (key = the field path, e.g. `dense_tflops.bf16`, or a prefix such as
//! `efficiency` covering all its fields) saying where the number comes from: datasheet,
//! reference architecture or paper, and which one was chosen where sources disagree.
//! A test enforces that.
//!
//! Invariants:
//! - No IO: the data is compiled in.
//! - Ids are unique, lowercase, `[a-z0-9-]`.
//! - Lookups of unknown ids return an error naming the closest ids.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use myriad_model::Transformer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where each number of a record comes from: field path (or prefix) -> source text.
pub type Sources = BTreeMap<String, String>;

/// Dense (no structured sparsity) peak throughput in TFLOP/s (or TOP/s for int8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Precisions {
    #[serde(default)]
    pub fp64: Option<f64>,
    #[serde(default)]
    pub tf32: Option<f64>,
    #[serde(default)]
    pub bf16: Option<f64>,
    #[serde(default)]
    pub fp16: Option<f64>,
    #[serde(default)]
    pub fp8: Option<f64>,
    #[serde(default)]
    pub fp4: Option<f64>,
    #[serde(default)]
    pub int8: Option<f64>,
}

impl Precisions {
    /// `(name, value)` for each precision the accelerator supports, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        [
            ("fp64", self.fp64),
            ("tf32", self.tf32),
            ("bf16", self.bf16),
            ("fp16", self.fp16),
            ("fp8", self.fp8),
            ("fp4", self.fp4),
            ("int8", self.int8),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// How close real kernels come to the datasheet peaks. These are the only compute-model
/// knobs; they belong to the accelerator and carry their provenance (measurement or paper).
///
/// GEMM time = FLOPs / (peak × gemm_*) + gemm_overhead_us. On the measured H100 this form
/// fits all 378 calibration GEMMs (M, N, K from 512 to 16384) with 4–6% rms error: the
/// fixed term is the launch and tail cost that makes small and skinny GEMMs slow. The step
/// model takes the longer of the FLOP term and the operands streamed at `hbm_gemm`, which
/// GEMMs with a dimension of a few hundred or less need.
/// Attention time = FLOPs / (peak × attention_* × s / (s + attention_*_seq_half)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComputeEfficiency {
    /// Fraction of the dense bf16/fp16 peak reached by large GEMMs.
    pub gemm_bf16: f64,
    /// Fraction of the dense fp8 peak reached by large GEMMs.
    pub gemm_fp8: f64,
    /// Where the fp8 tensor cores accumulate below fp32 precision (Hopper), the same with
    /// fast (in-MMA) accumulation, which Transformer Engine uses for the forward GEMMs:
    /// `None` elsewhere (then `gemm_fp8`).
    #[serde(default)]
    pub gemm_fp8_fast_acc: Option<f64>,
    /// ... and with split accumulation (partial sums promoted to fp32 outside the MMA),
    /// which Transformer Engine uses for the data- and weight-gradient GEMMs
    /// (`_2X_ACC_DGRAD`, `_2X_ACC_WGRAD`). `None` elsewhere (then `gemm_fp8`).
    #[serde(default)]
    pub gemm_fp8_split_acc: Option<f64>,
    /// Fraction of the dense fp4 peak reached by large fp4 GEMMs, where measured apart
    /// from fp8: `None` elsewhere (then `gemm_fp8`, [`ComputeEfficiency::fp4_gemm`]).
    #[serde(default)]
    pub gemm_fp4: Option<f64>,
    /// Fixed cost per kernel, microseconds: fitted on GEMMs (the launch-and-drain time
    /// between dependent kernels on one stream), and charged by the step model to every
    /// kernel, memory-bound ones (norms, activations, residual adds, RoPE) included.
    pub gemm_overhead_us: f64,
    /// Fraction of the dense bf16 peak reached by fused causal attention forward at long
    /// sequences.
    pub attention_fwd: f64,
    /// Same for the backward pass.
    pub attention_bwd: f64,
    /// Sequence length at which forward attention efficiency is half of `attention_fwd`.
    pub attention_fwd_seq_half: f64,
    /// Same for backward.
    pub attention_bwd_seq_half: f64,
    /// Query rows one forward attention work unit covers: 128 for a CTA's tile (Hopper and
    /// before), 256 where pairs of CTAs share each key tile (Blackwell's two-CTA MMA). A
    /// sliding window's kernel walks the union of the unit's windows, `(rows + window)/128`
    /// key tiles, so wider units waste more of a narrow band. `None`: 128.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_fwd_tile_rows: Option<f64>,
    /// Fraction of the HBM datasheet bandwidth reached by streaming kernels.
    pub hbm: f64,
    /// Fraction of the HBM datasheet bandwidth at which a skinny GEMM (a few token rows
    /// against a weight matrix: the decode regime) streams its weights. Lower than `hbm`:
    /// measured on H100 and H200, such GEMMs keep fewer bytes in flight than a streaming
    /// kernel (time = `gemm_overhead_us` + weight bytes / (datasheet × this)). The training
    /// step model streams every GEMM's operands at this rate as its memory floor.
    pub hbm_gemm: f64,
    /// Cost of the softmax work of one attention score (the exponential, on the special
    /// function units) in matmul-FLOP equivalents, forward. It makes fused attention less
    /// efficient at small head dimensions: efficiency scales with F / (F + this), where
    /// F = 2·(d_qk + d_v) FLOPs per score; `attention_fwd` is the efficiency at d = 128.
    pub attention_fwd_score_flops: f64,
    /// Same for the backward pass (F = 5·(d_qk + d_v)).
    pub attention_bwd_score_flops: f64,
    /// Chip-to-chip spread of sustained speed: the standard deviation, as a fraction of
    /// the median chip, of how fast identical parts run the same kernels (manufacturing
    /// variation under the power cap). A synchronous job waits for its slowest chip, so
    /// its compute runs `1 + speed_sigma · E[max of N standard normals]` times longer
    /// than on the median chip the other fractions describe.
    pub speed_sigma: f64,
    /// Call-to-call spread of one chip's speed under its power cap: the standard
    /// deviation, as a fraction of the mean, of the time of the same training work (one
    /// layer's forward or backward) run back to back. The power controller moves the clock
    /// over tens to hundreds of milliseconds (the per-call times stay correlated over
    /// 5-20 calls), each chip's on its own, so ranks that synchronise within every layer
    /// (tensor, context and expert parallel groups of g ranks) wait at each collective for
    /// the one the controller has slowed: `1 + speed_jitter · E[max of g standard
    /// normals]` on their compute, on top of `speed_sigma`. `None`: [`SPEED_JITTER`],
    /// measured on H100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_jitter: Option<f64>,
    /// Ceiling, in TFLOP/s of useful work, of GEMMs whose weights are stored in a format the
    /// tensor cores cannot read (4- or 8-bit weights with 16-bit activations, W4A16/W8A16):
    /// the kernel widens every weight tile to bf16 in its main loop, and the decode and
    /// scale instructions share the issue slots with the MMAs. `None` where no measurement
    /// exists (such GEMMs then run at the bf16 GEMM efficiency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_only_gemm_tflops: Option<f64>,
    /// Attention kernels that multiply an fp8 KV cache with fp8 queries on the fp8 tensor
    /// cores exist for this chip (false: fp8 KV is widened and attended in bf16).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fp8_attention: bool,
    /// Fraction of the HBM datasheet bandwidth that the small memory-bound kernels of a
    /// decode step reach (norms, residual adds, rotary + quantise, activation, casts: a
    /// few to a few hundred MB each, launched hundreds of times per step), launch and
    /// tail included. `None` where not measured: such kernels then stream at `hbm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_small_kernels: Option<f64>,
    /// Fraction of its speed that compute loses while a communication kernel runs beside
    /// it: a collective runs as one CTA per channel, each holding an SM (16-32 of them)
    /// and streaming through HBM, so the GEMMs it hides under get the SMs that are left
    /// and finish in more waves. Hidden communication lasting `t` costs the compute it
    /// overlaps `t ×` this. `None`: [`COMM_OVERLAP_SLOWDOWN`], measured on H100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_overlap_slowdown: Option<f64>,
    /// Time the fused attention backward adds per query row and head when the model has
    /// learned attention sinks (`model.attention_sinks`, gpt-oss): the sink's gradient,
    /// nanoseconds. `None` where not measured: see [`Accelerator::sink_grad_ns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_sink_bwd_ns: Option<f64>,
}

/// [`ComputeEfficiency::comm_overlap_slowdown`] where a part has no measurement of its own:
/// the H100 figure (`calibration/h100-overlap-measured.json`: bf16 GEMMs of two training
/// shapes beside a 16- or 32-CTA copy kernel lost 13-35% of their speed, mean 0.24).
pub const COMM_OVERLAP_SLOWDOWN: f64 = 0.24;

/// [`ComputeEfficiency::attention_sink_bwd_ns`] measured on the H100
/// (`calibration/h100-sink-attention-measured.json`: cuDNN 9.19's fused backward with
/// gpt-oss's sink against without it, 64 heads, one and four 4,096-token sequences, full
/// and banded: 0.38-0.43 ms a sequence, 1.52 ns a row and head on average), and the SMs it
/// ran on. The H200 (4.8 against 3.35 TB/s, the same 132 SMs) took the same time, so the
/// cost is not memory traffic: parts without a measurement take it scaled by SM count.
pub const SINK_GRAD_NS_H100: f64 = 1.52;
/// The H100 SXM's SM count, the reference of [`SINK_GRAD_NS_H100`].
pub const SINK_GRAD_H100_SMS: f64 = 132.0;

/// [`ComputeEfficiency::speed_jitter`] where a part has no measurement of its own: the H100
/// figure (`calibration/h100-jitter-measured.json`: the Llama-3-8B and Nemotron-4-15B
/// layers' forward and backward passes, back to back at the 700 W cap, vary from call to
/// call by 2.8-3.3%, mean 3.0%).
pub const SPEED_JITTER: f64 = 0.030;

impl ComputeEfficiency {
    /// [`ComputeEfficiency::speed_jitter`], or [`SPEED_JITTER`].
    pub fn jitter(&self) -> f64 {
        self.speed_jitter.unwrap_or(SPEED_JITTER)
    }

    /// [`ComputeEfficiency::comm_overlap_slowdown`], or [`COMM_OVERLAP_SLOWDOWN`].
    pub fn overlap_slowdown(&self) -> f64 {
        self.comm_overlap_slowdown.unwrap_or(COMM_OVERLAP_SLOWDOWN)
    }

    /// [`ComputeEfficiency::hbm_small_kernels`], or `hbm` where it was not measured.
    pub fn small_kernel_hbm(&self) -> f64 {
        self.hbm_small_kernels.unwrap_or(self.hbm)
    }

    /// [`ComputeEfficiency::gemm_fp4`], or `gemm_fp8` where fp4 was not measured apart.
    pub fn fp4_gemm(&self) -> f64 {
        self.gemm_fp4.unwrap_or(self.gemm_fp8)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Accelerator {
    pub id: String,
    pub name: String,
    pub vendor: String,
    pub dense_tflops: Precisions,
    /// HBM capacity usable by the application, GiB.
    pub hbm_gib: f64,
    /// HBM bandwidth, TB/s (1e12 bytes/s).
    pub hbm_tbps: f64,
    /// Thermal design power of the accelerator (package), W.
    pub tdp_w: f64,
    /// Scale-up (NVLink, xGMI, UB, HCCS, ICI) bandwidth per accelerator per direction, GB/s.
    pub scale_up_gbps: f64,
    /// Streaming multiprocessors (NVIDIA): the unit Transformer Engine's communication
    /// kernels reserve from the GEMMs they overlap. `None` where not applicable or unknown.
    #[serde(default)]
    pub sm_count: Option<u32>,
    /// Its fp8 GEMMs take either operand transposed or not (cuBLAS on compute capability
    /// 10.x, Blackwell; Transformer Engine's `is_non_tn_fp8_gemm_supported()`): a
    /// per-tensor-scaled fp8 tensor then needs no transposed copy for the weight-gradient
    /// GEMM. `false` (Hopper, Ada): fp8 GEMMs are TN only and training writes both copies.
    #[serde(default)]
    pub fp8_gemm_any_layout: bool,
    /// Scale-out fabric ids the accelerator is usually deployed with.
    pub typical_fabrics: Vec<String>,
    /// Street price of one accelerator, USD (used when a scale-up system does not price
    /// whole nodes).
    pub price_usd: f64,
    pub efficiency: ComputeEfficiency,
    pub sources: Sources,
}

impl Accelerator {
    /// Backward time per query row and head of an attention sink's gradient, ns: the
    /// measured `efficiency.attention_sink_bwd_ns`, else [`SINK_GRAD_NS_H100`] × 132 / this
    /// part's SMs (the H100's figure where the SM count is unknown).
    pub fn sink_grad_ns(&self) -> f64 {
        self.efficiency.attention_sink_bwd_ns.unwrap_or_else(|| {
            let sms = self.sm_count.map_or(SINK_GRAD_H100_SMS, f64::from);
            SINK_GRAD_NS_H100 * SINK_GRAD_H100_SMS / sms
        })
    }
}

/// How accelerators inside one scale-up domain are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleUpTopology {
    /// Every accelerator attaches to a layer of switches (NVSwitch): any pair at full bandwidth.
    Switched,
    /// Direct links between every pair (AMD xGMI, Huawei HCCS): bandwidth split across peers.
    FullMesh,
    /// Two-tier switched Clos (Huawei UB in CloudMatrix384).
    #[serde(rename = "clos-2tier", alias = "clos2-tier")]
    Clos2Tier,
    /// 3D torus (Google TPU ICI).
    #[serde(rename = "torus-3d", alias = "torus3d")]
    Torus3d,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleUpSystem {
    pub id: String,
    pub name: String,
    pub vendor: String,
    /// Accelerator ids this system is built with; the first is the default.
    pub accelerators: Vec<String>,
    /// Accelerators sharing one scale-up fabric (8 on HGX, 72 on NVL72, 384 on CloudMatrix384).
    pub accelerators_per_domain: u32,
    /// Accelerators per server or compute tray (a failure and power unit).
    pub accelerators_per_node: u32,
    pub cpus_per_node: u32,
    pub topology: ScaleUpTopology,
    /// Scale-up bandwidth per accelerator per direction inside the domain, GB/s.
    pub bandwidth_gbps: f64,
    /// One-way latency of a small message across the scale-up fabric, microseconds.
    pub latency_us: f64,
    /// In-network reduction in the scale-up switches (NVLink SHARP / NVLS).
    pub in_network_reduction: bool,
    /// Measured fraction of `bandwidth_gbps` that large all-reduce reaches as NCCL bus
    /// bandwidth (protocol and kernel overheads).
    pub collective_efficiency: f64,
    /// Scale-up switch chips per domain (NVSwitch, UB switches); 0 for direct meshes.
    pub switch_chips_per_domain: u32,
    /// Scale-out NICs per node and their rate, Gb/s each (one per accelerator on DGX).
    pub nics_per_node: u32,
    pub nic_gbps: f64,
    /// Rack positions one domain takes (0.25 for a 4-per-rack DGX H100; 1 for NVL72).
    pub racks_per_domain: f64,
    /// IT power of one node at full load, kW (accelerators, CPUs, memory, NICs, fans).
    pub node_power_kw: f64,
    /// Power of the scale-up fabric per domain not inside nodes (switch trays, optics), kW.
    pub fabric_power_kw_per_domain: f64,
    /// Price of one node with its accelerators, USD.
    pub node_price_usd: f64,
    /// Price of the scale-up fabric per domain not inside nodes (switch trays, cables), USD.
    pub fabric_price_usd_per_domain: f64,
    /// Bandwidth from one accelerator to host memory per direction, GB/s, for activation
    /// offloading (Grace NVLink-C2C on GB200/GB300). Absent: offloading is not modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_offload_gbps: Option<f64>,
    /// Host memory per accelerator that offloaded activations may use, GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_memory_gib: Option<f64>,
    pub sources: Sources,
}

impl ScaleUpSystem {
    /// The scale-up domain spans several nodes (multi-node NVLink: GB200/GB300 NVL72).
    pub fn spans_nodes(&self) -> bool {
        self.accelerators_per_domain > self.accelerators_per_node
    }

    /// Whether the system is built for `accelerator`: its list starts with it (`hgx-h200`
    /// for the H200), rather than also taking it (`hgx-h100` lists the H200 after the H100).
    pub fn is_built_for(&self, accelerator: &str) -> bool {
        self.accelerators.first().map(String::as_str) == Some(accelerator)
    }

    /// A case note naming the system chosen for `accelerator` and why, as the validators
    /// report it: `scale_up: hgx-h200 (built for h200; 8 per domain, 8 per node)`.
    pub fn choice_note(&self, accelerator: &str, cat: &Catalog) -> String {
        let why = if self.is_built_for(accelerator) {
            format!("built for {accelerator}")
        } else if cat.scale_up.iter().any(|s| s.is_built_for(accelerator)) {
            format!(
                "holds {accelerator}; the system built for it fits the stated node or domain size worse"
            )
        } else {
            format!("holds {accelerator}; no catalog system is built for it")
        };
        format!(
            "scale_up: {} ({why}; {} per domain, {} per node)",
            self.id, self.accelerators_per_domain, self.accelerators_per_node
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FabricKind {
    Infiniband,
    Roce,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    pub model: String,
    /// Ports at the fabric's port rate.
    pub radix: u32,
    /// Port-to-port latency, nanoseconds.
    pub latency_ns: f64,
    pub power_w: f64,
    pub price_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub model: String,
    pub power_w: f64,
    pub price_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fabric {
    pub id: String,
    pub name: String,
    pub kind: FabricKind,
    /// Line rate of one port / NIC, Gb/s.
    pub port_gbps: f64,
    pub switch: Switch,
    pub nic: Part,
    /// Optical transceiver (one per optical link end).
    pub transceiver: Part,
    /// Passive copper cable (DAC) for in-rack links.
    pub copper_cable: Part,
    /// Fraction of line rate that NCCL-style collectives reach per NIC for large messages.
    pub link_efficiency: f64,
    /// Per-hop latency added by NIC and transport, microseconds (end to end, one message).
    pub base_latency_us: f64,
    pub sources: Sources,
}

/// A built-in model preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPreset {
    pub id: String,
    pub model: Transformer,
    pub source: String,
    /// Most tokens (prompt + output) one sequence may hold, as the checkpoint ships it
    /// (`max_position_embeddings` or the model card's context length; not `seq_len`, the
    /// pretraining sequence): the default of a serving engine's context limit. Its source
    /// is in `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AcceleratorFile {
    accelerators: Vec<Accelerator>,
}
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScaleUpFile {
    scale_up: Vec<ScaleUpSystem>,
}
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FabricFile {
    fabrics: Vec<Fabric>,
}
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    models: Vec<ModelPreset>,
}

/// The whole catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub accelerators: Vec<Accelerator>,
    pub scale_up: Vec<ScaleUpSystem>,
    pub fabrics: Vec<Fabric>,
    pub models: Vec<ModelPreset>,
}

/// An id that is not in the catalog.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown {kind} `{id}`; closest: {}", closest.join(", "))]
pub struct UnknownId {
    pub kind: &'static str,
    pub id: String,
    pub closest: Vec<String>,
}

impl UnknownId {
    /// The message a field-path error carries: "`x` is not a known accelerator; closest: …".
    pub fn message(&self) -> String {
        format!(
            "`{}` is not a known {}; closest: {}",
            self.id,
            self.kind,
            self.closest.join(", ")
        )
    }
}

pub const ACCELERATORS_YAML: &str = include_str!("../data/accelerators.yaml");
pub const SCALE_UP_YAML: &str = include_str!("../data/scale_up.yaml");
pub const FABRICS_YAML: &str = include_str!("../data/fabrics.yaml");
pub const MODELS_YAML: &str = include_str!("../data/models.yaml");

fn parse<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    // The data is compiled in and checked by tests; a failure here is a build defect.
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("catalog data {name} is invalid: {e}"))
}

/// The built-in catalog, parsed once.
pub fn catalog() -> &'static Catalog {
    static CAT: OnceLock<Catalog> = OnceLock::new();
    CAT.get_or_init(|| Catalog {
        accelerators: parse::<AcceleratorFile>("accelerators.yaml", ACCELERATORS_YAML).accelerators,
        scale_up: parse::<ScaleUpFile>("scale_up.yaml", SCALE_UP_YAML).scale_up,
        fabrics: parse::<FabricFile>("fabrics.yaml", FABRICS_YAML).fabrics,
        models: parse::<ModelFile>("models.yaml", MODELS_YAML).models,
    })
}

/// Ids closest to `id` by edit distance (at most 3), best first.
pub fn closest<'a>(id: &str, ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    // Edit similarity, with ids that extend the query (`h100` -> `h100-sxm`) ranked first.
    let mut scored: Vec<(f64, &str)> = ids
        .map(|c| {
            let prefix = if c.starts_with(id) { 1.0 } else { 0.0 };
            (prefix + strsim::normalized_damerau_levenshtein(id, c), c)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

macro_rules! lookup {
    ($fn:ident, $field:ident, $ty:ty, $kind:literal) => {
        pub fn $fn(&self, id: &str) -> Result<&$ty, UnknownId> {
            self.$field
                .iter()
                .find(|x| x.id == id)
                .ok_or_else(|| UnknownId {
                    kind: $kind,
                    id: id.to_string(),
                    closest: closest(id, self.$field.iter().map(|x| x.id.as_str())),
                })
        }
    };
}

impl Catalog {
    /// Gives `t` the sliding windows of the built-in model of its shape ([`Self::model_like`])
    /// when that model has them; returns the note saying so.
    pub fn lend_sliding_window(&self, t: &mut myriad_model::Transformer) -> Option<String> {
        let p = self.model_like(t)?;
        let w = p.model.sliding_window?;
        t.sliding_window = Some(w);
        Some(format!(
            "sliding_window: {} of {} layers attend to the last {} tokens (from the matching preset {})",
            t.windowed_layers(),
            t.layers,
            w.window,
            p.id
        ))
    }

    /// Learned attention sinks from the preset of the same architecture (gpt-oss), where
    /// `t` has none: a validation row's model block has no field for them.
    pub fn lend_attention_sinks(&self, t: &mut myriad_model::Transformer) -> Option<String> {
        let p = self.model_like(t)?;
        if t.attention_sinks || !p.model.attention_sinks {
            return None;
        }
        t.attention_sinks = true;
        Some(format!(
            "attention_sinks: a learned sink logit per head (from the matching preset {})",
            p.id
        ))
    }

    /// Group-limited routing from the preset of the same architecture, where `t`'s experts
    /// state none (DeepSeek-V3's 8 groups, 4 per token): a validation row's model block
    /// names the experts but not how the router limits them.
    pub fn lend_router_groups(&self, t: &mut myriad_model::Transformer) -> Option<String> {
        let p = self.model_like(t)?;
        let from = p.model.moe.as_ref()?;
        let (groups, topk) = (from.router_groups?, from.router_group_topk?);
        let moe = t.moe.as_mut()?;
        if moe.router_groups.is_some() || moe.router_group_topk.is_some() {
            return None;
        }
        moe.router_groups = Some(groups);
        moe.router_group_topk = Some(topk);
        Some(format!(
            "moe.router_groups: {groups}, router_group_topk: {topk} (from the matching preset {})",
            p.id
        ))
    }

    /// The built-in model of the same architecture as `t` (layers, hidden size, query and
    /// KV heads, vocabulary and expert count all equal): where a validation row states a
    /// published model without the fields its format cannot carry (head dimension,
    /// sliding windows), they come from it.
    pub fn model_like(&self, t: &myriad_model::Transformer) -> Option<&ModelPreset> {
        self.models.iter().find(|p| {
            let a = &p.model;
            a.layers == t.layers
                && a.hidden == t.hidden
                && a.heads == t.heads
                && a.kv_heads == t.kv_heads
                && a.vocab == t.vocab
                && a.moe.as_ref().map(|m| m.experts) == t.moe.as_ref().map(|m| m.experts)
        })
    }

    lookup!(accelerator, accelerators, Accelerator, "accelerator");
    lookup!(scale_up_system, scale_up, ScaleUpSystem, "scale-up system");
    lookup!(fabric, fabrics, Fabric, "scale-out fabric");
    lookup!(model, models, ModelPreset, "model preset");

    /// The scale-up system for `accelerator`: the named one, which must hold it, or the
    /// catalog's default. The error is the message for the `cluster.scale_up` field.
    pub fn scale_up_for(
        &self,
        accelerator: &str,
        named: Option<&str>,
    ) -> Result<&ScaleUpSystem, String> {
        match named {
            Some(id) => {
                let su = self.scale_up_system(id).map_err(|e| e.message())?;
                if su.accelerators.iter().any(|a| a == accelerator) {
                    Ok(su)
                } else {
                    Err(format!(
                        "`{}` is built with {}, not `{}`",
                        su.id,
                        su.accelerators.join(", "),
                        accelerator
                    ))
                }
            }
            None => self.default_scale_up_for(accelerator).ok_or_else(|| {
                format!("no scale-up system in the catalog holds `{accelerator}`; name one")
            }),
        }
    }

    /// The scale-up system to use for an accelerator when none is named: the first whose
    /// accelerator list starts with it, else the first that lists it.
    pub fn default_scale_up_for(&self, accelerator: &str) -> Option<&ScaleUpSystem> {
        self.scale_up
            .iter()
            .find(|s| s.is_built_for(accelerator))
            .or_else(|| {
                self.scale_up
                    .iter()
                    .find(|s| s.accelerators.iter().any(|a| a == accelerator))
            })
    }
}
