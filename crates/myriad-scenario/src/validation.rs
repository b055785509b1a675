//! The `myriad-validation/1` format: published training runs with measured step times.
//!
//! Files may carry keys this version does not know (a newer file, a source's extra notes):
//! they are dropped with a warning naming the key, never a failure of the whole file.

use serde::{Deserialize, Serialize};

use crate::{from_value, parse_value, ModelSpec, ScenarioError, TrainingSpec};

pub const FORMAT: &str = "myriad-validation/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationSystem {
    pub accelerator: String,
    /// Accelerators in the job.
    pub count: u64,
    /// Accelerators per server (4 per compute tray on GB200/GB300).
    #[serde(default)]
    pub per_node: Option<u32>,
    /// Accelerators that share one scale-up fabric.
    #[serde(default)]
    pub scale_up_domain: Option<u32>,
    /// Scale-out NIC bandwidth per accelerator, Gb/s.
    #[serde(default)]
    pub scale_out_gbps_per_accelerator: Option<f64>,
    /// `infiniband` | `roce` | null.
    #[serde(default)]
    pub scale_out_fabric: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    pub step_time_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationCase {
    pub id: String,
    #[serde(default)]
    pub source: Option<String>,
    pub system: ValidationSystem,
    pub model: ModelSpec,
    pub training: TrainingSpec,
    pub measured: Measured,
    #[serde(default)]
    pub basis: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValidationFile {
    pub cases: Vec<ValidationCase>,
    /// Keys that were dropped, as `case id: path`.
    pub warnings: Vec<String>,
}

/// Parses a validation file. Unknown keys inside a case are dropped with a warning.
pub fn parse_validation(file: &str, text: &str) -> Result<ValidationFile, ScenarioError> {
    let value = parse_value(file, text)?;
    let obj = value.as_object().ok_or_else(|| {
        ScenarioError::new(
            file,
            "(document)",
            "expected an object with `format` and `cases`",
        )
    })?;
    match obj.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(ScenarioError::new(
                file,
                "format",
                format!("`{other}` is not supported; expected `{FORMAT}`"),
            ))
        }
        None => {
            return Err(ScenarioError::new(
                file,
                "format",
                format!("missing; expected `{FORMAT}`"),
            ))
        }
    }
    let cases = obj
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or_else(|| ScenarioError::new(file, "cases", "expected a list of cases"))?;
    let mut out = Vec::with_capacity(cases.len());
    let mut warnings = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let prefix = format!("cases[{i}]");
        let mut v = case.clone();
        // Drop unknown keys one at a time (bounded by the number of keys).
        for _ in 0..64 {
            match from_value::<ValidationCase>(file, &prefix, v.clone()) {
                Ok(c) => {
                    out.push(c);
                    break;
                }
                Err(e) if e.message.starts_with("unknown key") => {
                    let rel = e
                        .path
                        .strip_prefix(&format!("{prefix}."))
                        .unwrap_or(&e.path);
                    if !remove_path(&mut v, rel) {
                        return Err(e);
                    }
                    let id = v.get("id").and_then(|x| x.as_str()).unwrap_or("?");
                    warnings.push(format!("{id}: ignored unknown key `{rel}`"));
                }
                Err(e) => return Err(e),
            }
        }
        if out.len() != i + 1 {
            return Err(ScenarioError::new(file, prefix, "too many unknown keys"));
        }
    }
    Ok(ValidationFile {
        cases: out,
        warnings,
    })
}

fn remove_path(v: &mut serde_json::Value, path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else {
        return false;
    };
    let mut cur = v;
    for p in parts {
        match cur.get_mut(p) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    cur.as_object_mut()
        .map(|o| o.remove(last).is_some())
        .unwrap_or(false)
}
