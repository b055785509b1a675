//! The validation runner: predicts every case of a `myriad-validation/1` file.
//!
//! Each case's `system` becomes a cluster: the catalog scale-up system built with the
//! accelerator whose node and domain sizes match (among equals, the one built for it:
//! `hgx-h200` for H200, not `hgx-h100`, which also lists it), the fabric of the stated kind and rate,
//! and enough whole scale-up domains to hold the job. Nulls in `training` take the
//! defaults of [`crate::plan::resolve`]; each choice is reported in the case's notes. Two
//! framework-era defaults depend on the source's date. ZeRO-3 in sources from before 2022
//! gathers parameters on demand, one tensor at a time (DeepSpeed 0.3 synchronised the
//! device before each gather); later ones prefetch (FSDP). An unstated recompute in a
//! source from before 2022 is none if it fits, else full on every layer: selective
//! recompute (Korthikanti et al., 2022) and recomputing some layers only came later.
//!
//! Superseded rows: a row is marked `superseded` when another row of the same benchmark
//! (same model name, letters and digits only, case aside; accelerator, accelerator count
//! and precision) carries a newer software
//! release (`YY.MM[.PP]` in its id or source). They count in the mean and per-group figures
//! but not in the worst case.

use myriad_catalog::{Catalog, FabricKind};
use myriad_model::{CrossEntropy, Recompute};
use myriad_scenario::validation::ValidationCase;
use myriad_scenario::{ClusterSpec, DatacenterSpec, ScaleOutSpec, Scenario, FORMAT};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub group: String,
    pub predicted_step_time_s: Option<f64>,
    pub measured_step_time_s: f64,
    /// predicted / measured - 1.
    pub error: Option<f64>,
    pub superseded: bool,
    pub mfu: Option<f64>,
    pub fits: Option<bool>,
    pub breakdown: Option<crate::Breakdown>,
    pub notes: Vec<String>,
    /// Why no prediction was made.
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    pub count: usize,
    pub mae: f64,
    /// Mean signed error (predicted / measured − 1): the bias, apart from the scatter.
    pub mean_error: f64,
    pub worst_abs_error: f64,
    pub worst_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Cases with a prediction.
    pub count: usize,
    pub failed: usize,
    pub mae: f64,
    /// Mean signed error (predicted / measured − 1): the bias, apart from the scatter.
    pub mean_error: f64,
    pub median_abs_error: f64,
    /// Worst over current (not superseded) rows: the accuracy bar.
    pub worst_abs_error: f64,
    pub worst_id: String,
    /// Worst over all rows.
    pub worst_abs_error_all: f64,
    pub worst_id_all: String,
    pub superseded: usize,
    pub groups: Vec<GroupSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ValidationReport {
    pub cases: Vec<CaseResult>,
    pub summary: Summary,
}

/// The cluster scenario for a case's system, with notes on what was chosen.
pub fn case_scenario(
    case: &ValidationCase,
    cat: &Catalog,
) -> Result<(Scenario, Vec<String>), String> {
    let sys = &case.system;
    check_system(sys)?;
    let acc = cat
        .accelerator(&sys.accelerator)
        .map_err(|e| format!("system.accelerator: {}", e.message()))?;
    let mut notes = Vec::new();
    // Scale-up system: holds the accelerator; prefer matching node size, then the smallest
    // domain at least as large as the stated one, then the system built for the
    // accelerator (the one whose list starts with it: `hgx-h800` for H800, `hgx-h200` for
    // H200) over one that also takes it (`hgx-h100` lists both, with H100's NVLink
    // efficiency), as the catalog's own default does.
    let want_domain = sys.scale_up_domain.unwrap_or(0) as u64;
    let su = cat
        .scale_up
        .iter()
        .filter(|s| s.accelerators.iter().any(|a| a == &acc.id))
        .min_by_key(|s| {
            let node_mismatch = sys
                .per_node
                .map(|n| n != s.accelerators_per_node)
                .unwrap_or(false);
            let dom = s.accelerators_per_domain as u64;
            let too_small = dom < want_domain;
            (
                node_mismatch,
                too_small,
                dom.abs_diff(want_domain),
                !s.is_built_for(&acc.id),
            )
        })
        .ok_or_else(|| format!("no scale-up system in the catalog holds `{}`", acc.id))?;
    notes.push(su.choice_note(&acc.id, cat));
    // Fabric: the stated kind (checked by `check_system`) and per-accelerator rate.
    let kind = match sys.scale_out_fabric.as_deref() {
        Some("infiniband") => Some(FabricKind::Infiniband),
        Some("roce") => Some(FabricKind::Roce),
        _ => None,
    };
    let per_acc = su.nics_per_node as f64 * su.nic_gbps / su.accelerators_per_node as f64;
    let gbps = sys.scale_out_gbps_per_accelerator.unwrap_or(per_acc);
    let default_fabric = acc.typical_fabrics.first().and_then(|f| cat.fabric(f).ok());
    let kind = kind.or(default_fabric.map(|f| f.kind));
    let fabric = cat
        .fabrics
        .iter()
        .filter(|f| kind.map(|k| f.kind == k).unwrap_or(true))
        .min_by(|a, b| {
            let da = (a.port_gbps - gbps).abs();
            let db = (b.port_gbps - gbps).abs();
            da.total_cmp(&db).then(a.id.cmp(&b.id))
        })
        .ok_or_else(|| "no fabric in the catalog".to_string())?;
    if sys.scale_out_gbps_per_accelerator.is_none() {
        notes.push(format!(
            "scale_out_gbps_per_accelerator: {gbps} (not given; {}'s {} NICs of {} Gb/s per {} accelerators)",
            su.id, su.nics_per_node, su.nic_gbps, su.accelerators_per_node
        ));
    }
    if sys.scale_out_fabric.is_none() {
        notes.push(format!("scale_out_fabric: {} (not given)", fabric.id));
    }
    let dom = su.accelerators_per_domain as u64;
    let count = sys.count.div_ceil(dom) * dom;
    let scenario = Scenario {
        format: FORMAT.to_string(),
        name: case.id.clone(),
        cluster: ClusterSpec {
            accelerator: acc.id.clone(),
            count,
            scale_up: Some(su.id.clone()),
            scale_out: ScaleOutSpec {
                fabric: Some(fabric.id.clone()),
                ..ScaleOutSpec::default()
            },
            sites: 1,
            dci: None,
            datacenter: DatacenterSpec::default(),
            faults: Vec::new(),
        },
        model: Some(case.model.clone()),
        training: Some(case.training.clone()),
        planning: None,
        reliability: None,
        serving: None,
        scheduling: None,
    };
    Ok((scenario, notes))
}

/// Range checks on a case's `system` block, as `system.<field>: <why>`: a zero count,
/// node or domain size, a rate that is not a positive number and a fabric other than
/// `infiniband` or `roce` were taken silently (a count of 0 as the cluster's
/// `cluster.count`, a field the validation format does not have; `ib` as no fabric stated).
fn check_system(sys: &myriad_scenario::validation::ValidationSystem) -> Result<(), String> {
    if sys.count == 0 {
        return Err("system.count: must be at least 1, got 0".into());
    }
    for (name, v) in [
        ("per_node", sys.per_node),
        ("scale_up_domain", sys.scale_up_domain),
    ] {
        if v == Some(0) {
            return Err(format!(
                "system.{name}: must be at least 1, got 0 (leave it out or null if unknown)"
            ));
        }
    }
    if let Some(g) = sys.scale_out_gbps_per_accelerator {
        if !(g > 0.0 && g.is_finite()) {
            return Err(format!(
                "system.scale_out_gbps_per_accelerator: {g} is not a positive number of Gb/s"
            ));
        }
    }
    if let Some(f) = sys.scale_out_fabric.as_deref() {
        if f != "infiniband" && f != "roce" {
            return Err(format!(
                "system.scale_out_fabric: `{f}` is not `infiniband` or `roce` (or null)"
            ));
        }
    }
    Ok(())
}

/// Megatron-Bridge's performance recipes of the MoE models per release
/// (`validation/mbridge-recipes.json`, written by `validation/tools/mbridge_recipes.py`):
/// each release tag's `scripts/performance/configs/*/*workload_base_configs.py`, for 25.09
/// v0.1.0rc4's YAML plan matrices with `run_script.py`'s MoE settings, and for 26.08 the
/// `perf_recipes` functions at the public file's snapshot 067f987df. The
/// dispatcher backend, EP overlap, CUDA graph and selective recompute each applies.
const MBRIDGE_RECIPES: &str = include_str!("../../../validation/mbridge-recipes.json");

/// The MoE settings of the Megatron-Bridge recipe a row ran.
struct Recipe {
    dispatcher: myriad_model::EpDispatcher,
    ep_overlap: bool,
    full_graph: bool,
    /// Selective recompute's modules (`recompute_modules`), where the config sets them.
    recompute_modules: Option<Vec<myriad_model::RecomputeModule>>,
    tag: String,
    config: String,
}

/// Megatron-Bridge's recipe table (`MBRIDGE_RECIPES`), parsed once.
fn recipe_table() -> &'static serde_json::Value {
    static TABLE: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(MBRIDGE_RECIPES).unwrap_or_default())
}

/// A Megatron-Bridge row's release in the recipe table, and its model's and GPU's names as
/// the recipe names spell them.
fn recipe_release(
    case: &ValidationCase,
    model_name: &str,
) -> Option<(&'static serde_json::Value, String, String)> {
    let (y, m, p) = release(case)?;
    let key = if p > 0 {
        format!("{y}.{m:02}.{p:02}")
    } else {
        format!("{y}.{m:02}")
    };
    let rel = recipe_table().get("releases")?.get(&key)?;
    // "DeepSeek-V3 (w/o MTP)" ran DeepSeek-V3's recipe: a parenthesised qualifier is not
    // part of the recipe's model name.
    let model_name = model_name.split(" (").next().unwrap_or(model_name);
    let model: String = model_name
        .to_ascii_uppercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let gpu = case
        .system
        .accelerator
        .trim_end_matches("-sxm")
        .to_ascii_uppercase();
    Some((rel, model, gpu))
}

/// The recipe kind (`BF16`, `FP8_CS`, `FP8_SC`, `FP8_MX`, `NVFP4`) a Megatron-Bridge row
/// ran: the one its id names, or for a bare "fp8" the one its release's footnote (25.09)
/// or recipe table (a single fp8 recipe for the model, system and GPU count) leaves.
fn recipe_kind(case: &ValidationCase, model_name: &str) -> Option<&'static str> {
    let id = case.id.to_ascii_lowercase();
    let (y, m, _) = release(case)?;
    Some(if (y, m) == (25, 9) && id.contains("fp8") {
        // The 25.09 summary names its fp8 recipes in a footnote: the plain figures are the
        // default (current scaling), the parenthesised ones (the rows' "-alt") 128x128/1x128
        // blocks on H100 and 32x32 (MXFP8) on Blackwell.
        if !id.contains("-alt") {
            "FP8_CS"
        } else if case.system.accelerator.starts_with("h100") {
            "FP8_SC"
        } else {
            "FP8_MX"
        }
    } else if id.contains("nvfp4") {
        "NVFP4"
    } else if ["mxfp8", "fp8mx", "fp8-mx"].iter().any(|s| id.contains(s)) {
        "FP8_MX"
    } else if ["fp8cs", "fp8-cs"].iter().any(|s| id.contains(s)) {
        "FP8_CS"
    } else if ["fp8sc", "fp8-sc"].iter().any(|s| id.contains(s)) {
        "FP8_SC"
    } else if id.contains("bf16") {
        "BF16"
    } else if id.contains("fp8") {
        // A bare "fp8" names the release's fp8 recipe where it has exactly one for the
        // row's model, system and GPU count (H100's are current-scaling only from 26.02).
        let (rel, model, gpu) = recipe_release(case, model_name)?;
        unique_fp8_kind(rel, &model, &gpu, case.system.count)?
    } else {
        return None;
    })
}

/// The fp8 scaling of a Megatron-Bridge recipe kind.
fn kind_fp8_recipe(kind: &str) -> Option<myriad_model::Fp8Recipe> {
    match kind {
        "FP8_CS" => Some(myriad_model::Fp8Recipe::Current),
        "FP8_SC" => Some(myriad_model::Fp8Recipe::Blockwise),
        "FP8_MX" => Some(myriad_model::Fp8Recipe::Mxfp8),
        _ => None,
    }
}

/// The recipe of kind `kind` ([`recipe_kind`]) of a Megatron-Bridge row's release, model
/// and system with the row's GPU count (the variant whose plan the row states, else the
/// default `V1` first, as the launcher's `config_variant`); from 26.02, when no config of
/// the release has the stated plan, the nearest release's config that has it. `None` where
/// the table has no such config.
fn mbridge_recipe(case: &ValidationCase, kind: &str, model_name: &str) -> Option<Recipe> {
    let (rel, model, gpu) = recipe_release(case, model_name)?;
    let mut found = recipe_configs(rel, &model, &gpu, kind, case.system.count);
    // The variant whose plan the row states (V1 and V2 of a system can differ in global
    // batch and EP, and with them in dispatcher and overlap); among equals, V1 (the
    // launcher's default), then V2, then any other.
    let t = &case.training;
    let mismatches = |c: &serde_json::Value| -> usize {
        let stated: [(&str, Option<u64>); 7] = [
            ("global_batch_size", t.global_batch),
            ("micro_batch_size", t.micro_batch),
            ("tensor_model_parallel_size", t.tp.map(u64::from)),
            ("pipeline_model_parallel_size", t.pp.map(u64::from)),
            ("context_parallel_size", t.cp.map(u64::from)),
            ("expert_model_parallel_size", t.ep.map(u64::from)),
            ("virtual_pipeline_model_parallel_size", t.vpp.map(u64::from)),
        ];
        stated
            .iter()
            .filter(|(key, row)| {
                let Some(row) = row else { return false };
                // Absent from the file (an older table) says nothing; null is the default, 1.
                c.get(*key).is_some_and(|v| v.as_u64().unwrap_or(1) != *row)
            })
            .count()
    };
    let order = |found: &mut Vec<(&String, &serde_json::Value)>| {
        found.sort_by_key(|(name, c)| {
            (
                mismatches(c),
                !name.ends_with("_V1") && !name.ends_with("_BASE_CONFIG"),
                !name.ends_with("_V2"),
                name.to_string(),
            )
        })
    };
    order(&mut found);
    let (mut name, mut c) = *found.first()?;
    let tag_of = |r: &serde_json::Value| {
        r.get("tag")
            .and_then(|t| t.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut tag = tag_of(rel);
    // From 26.02 a summary row is a run of one named config. When none of its release's
    // configs has the plan the row states, the row ran a config its release's tag does not
    // hold yet: take the nearest release whose config of the same model, system and kind
    // has that plan (later releases first, where such a config lands), and say so. Not for
    // 25.09 (its plan matrices list plans, not configs) nor 25.11 (its launcher scales one
    // base config to the plan on its command line).
    let versioned = release(case).is_some_and(|(y, m, _)| (y, m) >= (26, 2));
    if mismatches(c) > 0 && versioned {
        let releases = recipe_table().get("releases")?.as_object()?;
        let keys: Vec<&String> = releases.keys().collect();
        let here = keys.iter().position(|k| std::ptr::eq(&releases[*k], rel))?;
        let nearest = keys[here + 1..]
            .iter()
            .chain(keys[..here].iter().rev())
            .find_map(|k| {
                let other = &releases[*k];
                let mut f = recipe_configs(other, &model, &gpu, kind, case.system.count);
                order(&mut f);
                f.first()
                    .filter(|(_, c)| mismatches(c) == 0)
                    .map(|&(n, c)| (*k, other, n, c))
            });
        if let Some((key, other, n, cfg)) = nearest {
            tag = format!(
                "{} ({key}: no config of the row's release has its plan)",
                tag_of(other)
            );
            (name, c) = (n, cfg);
        }
    }
    let backend = c
        .get("moe_flex_dispatcher_backend")
        .and_then(|b| b.as_str());
    let dispatcher = match backend {
        Some("deepep") => myriad_model::EpDispatcher::Deepep,
        Some("hybridep") => myriad_model::EpDispatcher::Hybridep,
        _ => myriad_model::EpDispatcher::Alltoall,
    };
    let impl_ = c
        .get("cuda_graph_impl")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let scope_full = c
        .get("cuda_graph_scope")
        .and_then(|s| s.as_array())
        .is_some_and(|a| a.iter().any(|x| x == "full_iteration"));
    Some(Recipe {
        dispatcher,
        ep_overlap: c.get("moe_a2a_overlap").and_then(|v| v.as_bool()) == Some(true),
        full_graph: impl_ == "full_iteration" || (impl_ == "local" && scope_full),
        recompute_modules: c
            .get("recompute_modules")
            .filter(|m| m.is_array())
            .and_then(|m| serde_json::from_value(m.clone()).ok()),
        tag,
        config: name.to_string(),
    })
}

/// A release's configs of one recipe kind at a GPU count: `{MODEL}_PRETRAIN_CONFIG_{GPU}_{KIND}`
/// with or without a variant suffix (`_V1`, `_256GPU`, ...), or at any count the v0.2.0
/// (25.11) `_BASE_CONFIG`, one per model, system and kind, which its launcher scales to the
/// GPU count and plan given on its command line.
fn recipe_configs<'a>(
    rel: &'a serde_json::Value,
    model: &str,
    gpu: &str,
    kind: &str,
    count: u64,
) -> Vec<(&'a String, &'a serde_json::Value)> {
    let versioned = format!("{model}_PRETRAIN_CONFIG_{gpu}_{kind}");
    let legacy = format!("{model}_{gpu}_{kind}_BASE_CONFIG");
    let Some(configs) = rel.get("configs").and_then(|c| c.as_object()) else {
        return Vec::new();
    };
    configs
        .iter()
        .filter(|(name, c)| {
            **name == legacy
                || ((**name == versioned || name.starts_with(&format!("{versioned}_")))
                    && c.get("num_gpus").and_then(|g| g.as_u64()) == Some(count))
        })
        .collect()
}

/// The one fp8 recipe kind a release has for a model, system and GPU count, if only one.
fn unique_fp8_kind(
    rel: &serde_json::Value,
    model: &str,
    gpu: &str,
    count: u64,
) -> Option<&'static str> {
    let mut kinds = ["FP8_CS", "FP8_SC", "FP8_MX"]
        .into_iter()
        .filter(|k| !recipe_configs(rel, model, gpu, k, count).is_empty());
    let kind = kinds.next()?;
    kinds.next().is_none().then_some(kind)
}

fn release(case: &ValidationCase) -> Option<(u32, u32, u32)> {
    let text = format!("{} {}", case.id, case.source.as_deref().unwrap_or(""));
    let b = text.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_digit());
    let num = |i: usize| ((b[i] - b'0') * 10 + (b[i + 1] - b'0')) as u32;
    for i in 0..b.len() {
        // YY.MM or YY.MM.PP, not inside a longer number.
        if (i == 0 || !(b[i - 1].is_ascii_digit() || b[i - 1] == b'.'))
            && digit(i)
            && digit(i + 1)
            && b.get(i + 2) == Some(&b'.')
            && digit(i + 3)
            && digit(i + 4)
            && !digit(i + 5)
        {
            let (y, m) = (num(i), num(i + 3));
            if !(20..=40).contains(&y) || !(1..=12).contains(&m) {
                continue;
            }
            let p = if b.get(i + 5) == Some(&b'.') && digit(i + 6) && digit(i + 7) {
                num(i + 6)
            } else {
                0
            };
            return Some((y, m, p));
        }
    }
    None
}

fn group_of(id: &str) -> String {
    id.split('-').next().unwrap_or(id).to_string()
}

/// Predicts every case.
pub fn validate(cases: &[ValidationCase], cat: &Catalog) -> ValidationReport {
    let keys: Vec<(String, String, u64, String)> = cases
        .iter()
        .map(|c| {
            (
                // The benchmark's model, however the source spells it ("LLAMA3-8B",
                // "Llama 3 8B").
                c.model
                    .name
                    .as_deref()
                    .unwrap_or_default()
                    .chars()
                    .filter(|ch| ch.is_ascii_alphanumeric())
                    .collect::<String>()
                    .to_ascii_lowercase(),
                c.system.accelerator.clone(),
                c.system.count,
                format!("{:?}", c.training.precision),
            )
        })
        .collect();
    let releases: Vec<_> = cases.iter().map(release).collect();
    let mut results = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let superseded = releases[i].is_some()
            && (0..cases.len()).any(|j| j != i && keys[j] == keys[i] && releases[j] > releases[i]);
        let mut r = CaseResult {
            id: case.id.clone(),
            group: group_of(&case.id),
            predicted_step_time_s: None,
            measured_step_time_s: case.measured.step_time_s,
            error: None,
            superseded,
            mfu: None,
            fits: None,
            breakdown: None,
            notes: Vec::new(),
            failure: None,
        };
        let measured = case.measured.step_time_s;
        if !(measured > 0.0 && measured.is_finite()) {
            // Nothing to compare against: an error of ±inf or NaN would poison the summary.
            r.failure = Some(format!(
                "measured.step_time_s: {measured} is not a positive number of seconds"
            ));
            results.push(r);
            continue;
        }
        match explain(case, cat) {
            Ok((t, notes)) => {
                r.predicted_step_time_s = Some(t.estimate.step_time_s);
                r.error = Some(t.estimate.step_time_s / case.measured.step_time_s - 1.0);
                r.mfu = Some(t.estimate.mfu);
                r.fits = Some(t.estimate.fits);
                r.breakdown = Some(t.estimate.breakdown);
                r.notes = notes;
            }
            Err(e) => r.failure = Some(e),
        }
        results.push(r);
    }
    let summary = summarize(&results);
    ValidationReport {
        cases: results,
        summary,
    }
}

/// The case's model, with fields the validation format cannot state (`head_dim`,
/// `sliding_window`, `attention_sinks`) taken from a built-in preset of the same architecture;
/// returns the notes saying so.
pub fn case_model_noted(
    case: &ValidationCase,
    cat: &Catalog,
) -> Result<(myriad_model::Transformer, Vec<String>), String> {
    let mut model = case
        .model
        .resolve(cat)
        .map_err(|(p, m)| format!("model.{p}: {m}"))?;
    let mut notes = Vec::new();
    if case.model.preset.is_none() {
        if let Some(p) = cat.model_like(&model) {
            if case.model.head_dim.is_none()
                && p.model.head_dim.is_some()
                && p.model.head_dim != model.head_dim
            {
                model.head_dim = p.model.head_dim;
                notes.push(format!(
                    "head_dim: {} (from the matching preset {})",
                    model.head_dim(),
                    p.id
                ));
            }
        }
        if case.model.sliding_window.is_none() {
            notes.extend(cat.lend_sliding_window(&mut model));
        }
        if case.model.attention_sinks.is_none() {
            notes.extend(cat.lend_attention_sinks(&mut model));
        }
        notes.extend(cat.lend_router_groups(&mut model));
    }
    Ok((model, notes))
}

/// The case's model (see [`case_model_noted`]).
pub fn case_model(
    case: &ValidationCase,
    cat: &Catalog,
) -> Result<myriad_model::Transformer, String> {
    case_model_noted(case, cat).map(|(m, _)| m)
}

/// The estimate and notes the validator computes for one case (the plan, breakdown and
/// every setting it filled), for explaining a prediction.
pub fn explain(
    case: &ValidationCase,
    cat: &Catalog,
) -> Result<(crate::TrainEstimate, Vec<String>), String> {
    let (scenario, mut notes) = case_scenario(case, cat)?;
    let cluster = myriad_cluster::build(&scenario, cat).map_err(|e| e.to_string())?;
    let (model, note) = case_model_noted(case, cat)?;
    notes.extend(note);
    // ZeRO-3 before 2022 was DeepSpeed 0.3-0.5, which synchronised the device before each
    // parameter's all-gather (`_allgather_param` in `partition_parameters.py`): no prefetch.
    let mut training = case.training.clone();
    training
        .check()
        .map_err(|(field, msg)| format!("training.{field}: {msg}"))?;
    if training.zero3_prefetch.is_none() && source_year(case).is_some_and(|y| y < 2022) {
        training.zero3_prefetch = Some(false);
    }
    // Meta's Llama 3 context parallelism all-gathers the keys and values (arXiv:2407.21783
    // §3.3.2) rather than running Transformer Engine's ring.
    let meta_llama3 = case
        .source
        .as_deref()
        .is_some_and(|s| s.contains("2407.21783"));
    // DeepSeek-V3's framework quantises the tokens to fp8 before the EP dispatch
    // (arXiv:2412.19437 §3.3.2); Megatron-Core dispatches bf16 (the default).
    let fp8_run = matches!(
        training.precision,
        Some(myriad_scenario::Precision::Fp8 | myriad_scenario::Precision::Fp4)
    );
    let deepseek_v3_own = case
        .source
        .as_deref()
        .is_some_and(|s| s.contains("2412.19437"));
    if training.fp8_dispatch.is_none() && fp8_run && deepseek_v3_own {
        training.fp8_dispatch = Some(true);
        notes.push("fp8_dispatch: true (not given; DeepSeek-V3 dispatches fp8 tokens, arXiv:2412.19437 §3.3.2)".into());
    }
    if training.fp8_recipe.is_none()
        && training.precision == Some(myriad_scenario::Precision::Fp8)
        && deepseek_v3_own
    {
        training.fp8_recipe = Some(myriad_model::Fp8Recipe::Blockwise);
        notes.push("fp8_recipe: blockwise (not given; DeepSeek-V3 scales 1x128 activation tiles and 128x128 weight blocks, arXiv:2412.19437 §3.3.2)".into());
    }
    if training.moe_grouped_kernel.is_none() && deepseek_v3_own {
        training.moe_grouped_kernel = Some(true);
        notes.push("moe_grouped_kernel: true (not given; DeepSeek's own framework runs its experts as grouped GEMMs, DeepGEMM's \"MoE grouped GEMMs\" for V3/R1 training, not Transformer Engine's per-expert GEMMs)".into());
    }
    if training.cp_comm.is_none() && training.cp.is_some_and(|c| c > 1) && meta_llama3 {
        training.cp_comm = Some(myriad_model::CpComm::AllGather);
        notes.push("cp_comm: all_gather (not given; Meta's Llama 3 gathers keys and values, arXiv:2407.21783 §3.3.2)".into());
    }
    // Sequence parallelism (Korthikanti et al., arXiv:2205.05198) reached Megatron-LM in
    // 2022: before, TP ranks all-reduced and each ran the norms and dropouts whole.
    let pre_sp = training.sequence_parallel.is_none()
        && training.tp.is_some_and(|t| t > 1)
        && source_year(case).is_some_and(|y| y < 2022);
    if pre_sp {
        training.sequence_parallel = Some(false);
        notes.push("sequence_parallel: false (not given; a source from before 2022, when Megatron-LM had no sequence parallelism)".into());
    }
    // Megatron-LM split pipeline sends over the TP ranks and all-gathered them on arrival
    // (`scatter_gather_tensors_in_pipeline`, on by default from Feb 2021 until the pipeline
    // moved into Megatron-Core in Mar 2023, which dropped it), wherever sequence parallelism
    // was off: sources from 2021 and 2022.
    let sg_era = source_year(case).is_some_and(|y| (2021..=2022).contains(&y));
    let sp_off = training.sequence_parallel == Some(false);
    if training.pp_scatter_gather.is_none()
        && sg_era
        && sp_off
        && training.tp.is_some_and(|t| t > 1)
        && training.pp.is_some_and(|p| p > 1)
    {
        training.pp_scatter_gather = Some(true);
        notes.push("pp_scatter_gather: true (not given; Megatron-LM's default in 2021-2022 without sequence parallelism: each TP rank sends 1/TP of a pipeline tensor, SC'21 §4.1)".into());
    }
    // NVIDIA's published benchmark recipes reduce gradients in bf16: NeMo 1.x's
    // `distributed_fused_adam` with `grad_sync_dtype: bf16` (every DGX Cloud benchmarking
    // recipe of v24.11), NeMo 2.0's performance recipes and Megatron-Bridge's performance
    // scripts (`grad_reduce_in_fp32 = False`).
    let source = case.source.as_deref().unwrap_or("");
    let bridge = source.contains("Megatron-Bridge");
    let nvidia_recipe = bridge || source.contains("NeMo") || source.contains("dgxc-benchmarking");
    // Megatron-LM reduced gradients after the backward pass (its default `--DDP-impl local`
    // all-reduced the contiguous gradient buffer in `train_step`) until Megatron-Core's DDP
    // gained `--overlap-grad-reduce` (commit 2d5220a, 2023-08-16): Megatron-LM sources from
    // before 2023 reduce unoverlapped. NeMo's own recipes overlapped through Apex's
    // `DistributedFusedAdam` (`overlap_grad_sync`), so they keep the default.
    let pre_overlap = !nvidia_recipe && source_year(case).is_some_and(|y| y < 2023);
    if pre_overlap && training.overlap_grad_reduce.is_none() {
        training.overlap_grad_reduce = Some(false);
        notes.push("overlap_grad_reduce: false (not given; Megatron-LM reduced gradients after the backward pass until --overlap-grad-reduce, 2023)".into());
    }
    if nvidia_recipe && training.grad_reduce_in_fp32.is_none() {
        training.grad_reduce_in_fp32 = Some(false);
        notes.push("grad_reduce_in_fp32: false (not given; NVIDIA's benchmark recipes reduce gradients in bf16)".into());
    }
    // DGX Cloud benchmarking's recipes of the v24.11.1 release (commit 35a9aec) store fp8
    // parameters in fp8 runs: `+model.fp8_params=${FP8_ENABLED^}` in nemotron/configure.sh
    // and `+model.fp8_params=$FP8_ENABLED` in llama3.1/configure.sh, `fp8_params: true` in
    // nemo_megatron/gpt3_175b_hydra.yaml (whose launch.sh sets `model.fp8` by DTYPE).
    let dgxc_35a9aec = source.contains("dgxc-benchmarking") && source.contains("35a9aec");
    let dgxc_recipe = ["nemotron/", "llama3.1/", "nemo_megatron/"]
        .into_iter()
        .find(|r| source.contains(r));
    if let (true, true, None, Some(recipe)) =
        (dgxc_35a9aec, fp8_run, training.fp8_params, dgxc_recipe)
    {
        let file = match recipe {
            "nemotron/" => "nemotron/configure.sh",
            "llama3.1/" => "llama3.1/configure.sh",
            _ => "nemo_megatron/gpt3_175b_hydra.yaml",
        };
        training.fp8_params = Some(true);
        notes.push(format!("fp8_params: true (not given; the DGX Cloud recipe stores parameters in fp8 in fp8 runs, {file} @ 35a9aec)"));
    }
    // Its Nemotron-4 340B recipe keeps the whole optimizer state in bf16
    // (nemotron/nemotron4-340b-synth.yaml @ 35a9aec: `optim: {name: distributed_fused_adam,
    // dtype: bf16}`; Apex's DistributedFusedAdam stores the master copy and both moments
    // in `dtype`). The release's other recipes leave it at fp32.
    // NeMo 1.x's own performance summary ran the NeMo Framework Launcher's training configs,
    // whose Nemotron-4 340B config keeps the optimizer state in bf16 in every stored version
    // (launcher_scripts/conf/training/nemotron/nemotron_340b.yaml: `optim: {name:
    // distributed_fused_adam, dtype: bf16}` @ 6daee02, `{name: mcore_distributed_optim,
    // dtype: bf16}` @ 3be81fc). Its 15B and smaller configs leave it at fp32.
    let nemo_summary = source.contains("NVIDIA/NeMo docs/source/performance");
    let nemotron_340b = case.model.name.as_deref().is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n.contains("nemotron") && n.contains("340")
    });
    let bf16_state = if nemo_summary && nemotron_340b {
        Some("the NeMo Framework Launcher's Nemotron-4 340B config keeps the optimizer state in bf16, optim.dtype in conf/training/nemotron/nemotron_340b.yaml")
    } else if dgxc_35a9aec && source.contains("nemotron/README_340b") {
        Some("the DGX Cloud Nemotron-4 340B recipe keeps the optimizer state in bf16, optim.dtype in nemotron/nemotron4-340b-synth.yaml @ 35a9aec")
    } else {
        None
    };
    if let Some(why) = bf16_state {
        if training.bf16_optimizer_moments.is_none() && training.bf16_master_weights.is_none() {
            training.bf16_optimizer_moments = Some(true);
            training.bf16_master_weights = Some(true);
            notes.push(format!(
                "bf16_optimizer_moments, bf16_master_weights: true (not given; {why})"
            ));
        }
    }
    // Megatron-Bridge's DeepSeek-V3 recipes (`set_deepseek_v3_pipeline_model_parallel_layout`,
    // recipes/deepseek/deepseek_v3.py, v0.2-v0.4) give every virtual pipeline chunk
    // ceil(layers / chunks) layers and the last chunk the remainder, with the MTP module and
    // the loss: PP 8 x VPP 2 holds 4 layers a chunk and 1 in the last, so the last stage 5.
    // Taken for the multi-head-latent-attention models of that repository (DeepSeek-V3,
    // Kimi K2) whose layers the pipeline does not divide.
    let pp = training.pp.unwrap_or(1);
    let vpp = training.vpp.unwrap_or(1);
    let chunks = pp * vpp;
    if bridge
        && model.mla.is_some()
        && pp > 1
        && model.layers % chunks != 0
        && training.first_stage_layers.is_none()
        && training.last_stage_layers.is_none()
    {
        let per_chunk = model.layers.div_ceil(chunks);
        let others = (pp - 1) * vpp * per_chunk;
        if model.layers > others {
            let last = model.layers - others;
            training.last_stage_layers = Some(last);
            notes.push(format!(
                "last_stage_layers: {last} (not given; Megatron-Bridge's DeepSeek-V3 layout: every one of the {chunks} pipeline chunks holds {per_chunk} layers, the last the remainder with the MTP module and the loss)"
            ));
        }
    }
    // The loss kernel: Megatron-Bridge's performance scripts set Transformer Engine's
    // (`cross_entropy_fusion_impl: te`) since they appeared (August 2025); Megatron-Core's
    // `cross_entropy_loss_fusion` came in 2024, so earlier sources ran the unfused one.
    if training.cross_entropy.is_none() {
        if bridge {
            training.cross_entropy = Some(CrossEntropy::Te);
            notes.push("cross_entropy: te (not given; Megatron-Bridge performance recipes)".into());
        } else if source_year(case).is_some_and(|y| y < 2024) {
            training.cross_entropy = Some(CrossEntropy::Unfused);
            notes.push("cross_entropy: unfused (not given; a source from before 2024, when Megatron had no fused loss)".into());
        }
    }
    // Megatron-Bridge rows: the recipe kind the row ran, its fp8 scaling.
    let kind = bridge.then(|| recipe_kind(case, &model.name)).flatten();
    if training.fp8_recipe.is_none() && training.precision == Some(myriad_scenario::Precision::Fp8)
    {
        if let Some((kind, r)) = kind.and_then(|k| Some((k, kind_fp8_recipe(k)?))) {
            training.fp8_recipe = Some(r);
            notes.push(format!(
                "fp8_recipe: {} (not given; Megatron-Bridge's {} recipe)",
                r.name(),
                kind.to_ascii_lowercase()
            ));
        }
    }
    // Megatron-Bridge rows: the MoE settings of the performance recipe the row ran
    // (`mbridge_recipe`: each release's, the current one's from the public file's
    // snapshot), for the settings the row leaves unstated.
    if model.moe.is_some() {
        if let Some(r) = kind.and_then(|k| mbridge_recipe(case, k, &model.name)) {
            if training.ep_dispatcher.is_none() {
                training.ep_dispatcher = Some(r.dispatcher);
                notes.push(format!(
                    "ep_dispatcher: {} (not given; Megatron-Bridge {} recipe {})",
                    r.dispatcher.name(),
                    r.tag,
                    r.config
                ));
            }
            if r.ep_overlap && training.ep_overlap.is_none() {
                training.ep_overlap = Some(true);
                notes.push(format!(
                    "ep_overlap: true (not given; moe_a2a_overlap in Megatron-Bridge {} recipe {})",
                    r.tag, r.config
                ));
            }
            // `_set_recompute_overrides`: a config's modules make the recompute selective.
            if let Some(mods) = &r.recompute_modules {
                if training.recompute.is_none()
                    && training.recompute_modules.is_none()
                    && training.recompute_layers.is_none()
                {
                    training.recompute = Some(Recompute::Selective);
                    training.recompute_modules = Some(mods.clone());
                    // The label `train`, `search` and `plan` print (`Plan::recompute_label`).
                    let label = crate::plan::recompute_label(
                        Recompute::Selective,
                        1.0,
                        myriad_model::RecomputeModules::of(mods),
                    );
                    notes.push(format!(
                        "recompute: {label} (not given; recompute_modules in Megatron-Bridge {} recipe {})",
                        r.tag, r.config
                    ));
                }
            }
            if r.full_graph && training.moe_full_graph.is_none() {
                training.moe_full_graph = Some(true);
                notes.push(format!(
                    "moe_full_graph: true (not given; full-iteration CUDA graph in Megatron-Bridge {} recipe {})",
                    r.tag, r.config
                ));
            }
        }
    }
    // Selective recompute (Korthikanti et al., 2022) and recomputing only some layers came
    // later: before 2022 a run recomputed every layer or none.
    // Megatron-Core's `recompute_modules` (norms, MoE activation, MLA up-projections, whole
    // MLPs) came in 2025; before, selective recompute meant the attention core only.
    //
    // Megatron-Bridge runs Megatron-Core, whose optimizer sharding is the distributed
    // optimizer (ZeRO-1) or Megatron FSDP (ZeRO-3, `use_megatron_fsdp`): no ZeRO-2.
    let choices = crate::Choices {
        recompute_modules: source_year(case)
            .or(release(case).map(|(y, _, _)| 2000 + y))
            .is_none_or(|y| y >= 2025),
        zero2: !bridge,
        // Megatron-LM's distributed optimizer came in 2022: before, a run kept the whole
        // optimizer state on every data-parallel replica, or sharded everything with
        // DeepSpeed's ZeRO-3.
        zero1: source_year(case).is_none_or(|y| y >= 2022),
    };
    let timer = crate::Analytical {
        levels: &cluster.levels,
    };
    let run = |t: &myriad_scenario::TrainingSpec| {
        crate::train_choosing(t, &model, &cluster, case.system.count, &timer, choices)
    };
    let era_recompute = training.recompute.is_none()
        && training.recompute_layers.is_none()
        && source_year(case).is_some_and(|y| y < 2022);
    let t = if era_recompute {
        training.recompute = Some(Recompute::None);
        let none = run(&training);
        // Named by the plan's own label (`Plan::recompute_label`), as `train` names it.
        match none {
            Ok(t) if t.estimate.fits => {
                notes.push(format!(
                    "recompute: {} (not given; fits)",
                    t.plan.recompute_label()
                ));
                t
            }
            _ => {
                training.recompute = Some(Recompute::Full);
                let t = run(&training).map_err(|e| e.to_string())?;
                notes.push(format!(
                    "recompute: {} (not given; no-recompute does not fit, and a source from before 2022 had no selective or partial recompute)",
                    t.plan.recompute_label()
                ));
                t
            }
        }
    } else {
        run(&training).map_err(|e| e.to_string())?
    };
    if t.plan.zero_stage >= 3 && !t.plan.zero3_prefetch && case.training.zero3_prefetch.is_none() {
        notes.push(
            "zero3_prefetch: false (a source from before 2022: DeepSpeed then gathered each parameter after a device synchronisation)"
                .into(),
        );
    }
    notes.extend(t.notes.iter().cloned());
    Ok((t, notes))
}

/// The year a case's source was published: an arXiv identifier (`arXiv:YYMM.NNNNN`) or the
/// first year 2015-2039 written in its source or id.
fn source_year(case: &ValidationCase) -> Option<u32> {
    let text = format!("{} {}", case.source.as_deref().unwrap_or(""), case.id);
    if let Some(i) = text.find("arXiv:") {
        let d = &text.as_bytes()[i + 6..];
        if d.len() >= 4 && d[..4].iter().all(u8::is_ascii_digit) {
            return Some(2000 + ((d[0] - b'0') * 10 + (d[1] - b'0')) as u32);
        }
    }
    let b = text.as_bytes();
    (0..b.len().saturating_sub(3)).find_map(|i| {
        let four = &b[i..i + 4];
        let bounded = (i == 0 || !b[i - 1].is_ascii_digit())
            && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit());
        if bounded && four.iter().all(u8::is_ascii_digit) {
            let y: u32 = std::str::from_utf8(four).ok()?.parse().ok()?;
            (2015..2040).contains(&y).then_some(y)
        } else {
            None
        }
    })
}

fn summarize(results: &[CaseResult]) -> Summary {
    let ok: Vec<&CaseResult> = results.iter().filter(|r| r.error.is_some()).collect();
    let abs = |r: &CaseResult| r.error.map(f64::abs).unwrap_or(0.0);
    let mut errs: Vec<f64> = ok.iter().map(|r| abs(r)).collect();
    errs.sort_by(f64::total_cmp);
    let mae = if errs.is_empty() {
        0.0
    } else {
        errs.iter().sum::<f64>() / errs.len() as f64
    };
    let median = if errs.is_empty() {
        0.0
    } else if errs.len() % 2 == 1 {
        errs[errs.len() / 2]
    } else {
        (errs[errs.len() / 2 - 1] + errs[errs.len() / 2]) / 2.0
    };
    let worst = |it: &mut dyn Iterator<Item = &&CaseResult>| {
        it.max_by(|a, b| abs(a).total_cmp(&abs(b)))
            .map(|r| (abs(r), r.id.clone()))
            .unwrap_or((0.0, String::new()))
    };
    let (w, wid) = worst(&mut ok.iter().filter(|r| !r.superseded));
    let (wa, waid) = worst(&mut ok.iter());
    let mut names: Vec<String> = ok.iter().map(|r| r.group.clone()).collect();
    names.sort();
    names.dedup();
    let groups = names
        .into_iter()
        .map(|g| {
            let rs: Vec<&&CaseResult> = ok.iter().filter(|r| r.group == g).collect();
            let (w, wid) = worst(&mut rs.iter().copied());
            GroupSummary {
                count: rs.len(),
                mae: rs.iter().map(|r| abs(r)).sum::<f64>() / rs.len() as f64,
                mean_error: rs.iter().filter_map(|r| r.error).sum::<f64>() / rs.len() as f64,
                worst_abs_error: w,
                worst_id: wid,
                group: g,
            }
        })
        .collect();
    let mean_error = if ok.is_empty() {
        0.0
    } else {
        ok.iter().filter_map(|r| r.error).sum::<f64>() / ok.len() as f64
    };
    Summary {
        count: ok.len(),
        failed: results.len() - ok.len(),
        mae,
        mean_error,
        median_abs_error: median,
        worst_abs_error: w,
        worst_id: wid,
        worst_abs_error_all: wa,
        worst_id_all: waid,
        superseded: results.iter().filter(|r| r.superseded).count(),
        groups,
    }
}
