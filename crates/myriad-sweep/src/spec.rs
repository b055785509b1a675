//! The `myriad-sweep/1` spec: a base scenario, the fields to vary, optional zipped groups,
//! and the outputs to record. Parsing is pure (the caller supplies a loader for a `base:`
//! path); [`Sweep::load`] is the file-reading convenience.

use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::outputs::{self, Kind, Output};
use crate::SweepError;

/// The spec format tag.
pub const FORMAT: &str = "myriad-sweep/1";

/// Most rows in a grid. A run keeps a bitmap of its shard's rows (12.5 MB at this limit) and
/// writes a CSV line per row (tens of GB at this limit); a larger grid would run out of
/// memory allocating the bitmap before its first row.
pub const MAX_ROWS: u64 = 100_000_000;

/// The spec file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    format: String,
    #[serde(default)]
    name: String,
    /// A path to a myriad/1 scenario (relative to the spec file) or an inline scenario.
    base: Value,
    /// Dotted scenario field path -> list of values.
    vary: Map<String, Value>,
    /// Groups of `vary` paths that move together (one axis each) instead of as a product.
    #[serde(default)]
    zip: Vec<Vec<String>>,
    /// Output names (default: [`outputs::DEFAULT`]).
    #[serde(default)]
    outputs: Option<Vec<String>>,
}

/// A parsed, checked sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The spec file name, for messages.
    pub file: String,
    pub name: String,
    /// The base scenario as a JSON value (not yet checked: varied fields may complete it).
    pub base: Value,
    /// Varied field paths, in the order the spec writes them: the CSV's varied columns.
    pub paths: Vec<String>,
    /// Values of each path, in list order.
    pub values: Vec<Vec<Value>>,
    /// Axes of the grid, outermost (slowest) first: each a group of indices into `paths`
    /// whose lists have one common length. A path not in a `zip` group is its own axis; a
    /// group sits at the position of its first path.
    pub axes: Vec<Vec<usize>>,
    /// Outputs recorded per row, in order.
    pub outputs: Vec<&'static Output>,
    /// Rows in the grid: the product of the axis lengths.
    pub rows: u64,
    /// FNV-1a 64 of the canonical JSON of base, vary, zip and outputs (hex): tells whether
    /// an output directory was written by this sweep.
    pub digest: String,
}

fn err(file: &str, path: &str, msg: impl std::fmt::Display) -> SweepError {
    SweepError(format!("{file}: {path}: {msg}"))
}

impl Sweep {
    /// Reads a spec file and its `base:` scenario file (relative to the spec's folder).
    pub fn load(path: &Path) -> Result<Sweep, SweepError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| SweepError(format!("{file}: cannot read: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&file, &text, |rel| {
            let p = dir.join(rel);
            let name = p.display().to_string();
            let t = std::fs::read_to_string(&p)
                .map_err(|e| format!("base: {name}: cannot read: {e}"))?;
            myriad_scenario::parse_value(&name, &t).map_err(|e| format!("base: {e}"))
        })
    }

    /// Parses a spec's text. `load_base` turns a `base:` path into the scenario's value.
    pub fn parse(
        file: &str,
        text: &str,
        load_base: impl FnOnce(&str) -> Result<Value, String>,
    ) -> Result<Sweep, SweepError> {
        let value =
            myriad_scenario::parse_value(file, text).map_err(|e| SweepError(e.to_string()))?;
        let spec: SpecFile =
            myriad_scenario::from_value(file, "", value).map_err(|e| SweepError(e.to_string()))?;
        if spec.format != FORMAT {
            return Err(err(
                file,
                "format",
                format!("`{}` is not supported; expected `{FORMAT}`", spec.format),
            ));
        }
        let base = match spec.base {
            Value::String(p) => load_base(&p).map_err(|m| SweepError(format!("{file}: {m}")))?,
            v @ Value::Object(_) => v,
            other => {
                return Err(err(
                    file,
                    "base",
                    format!(
                        "expected a scenario file path or an inline scenario mapping, got {other}"
                    ),
                ))
            }
        };
        if !base.is_object() {
            return Err(err(file, "base", "the scenario is not a mapping"));
        }
        if spec.vary.is_empty() {
            return Err(err(file, "vary", "empty; give at least one field path"));
        }
        let mut paths = Vec::new();
        let mut values = Vec::new();
        for (path, list) in &spec.vary {
            check_field_path(file, path)?;
            let Value::Array(list) = list else {
                return Err(err(
                    file,
                    &format!("vary.{path}"),
                    format!("expected a list of values, got {list}"),
                ));
            };
            if list.is_empty() {
                return Err(err(file, &format!("vary.{path}"), "empty list"));
            }
            paths.push(path.clone());
            values.push(list.clone());
        }
        // Axes: zip groups sit at the position of their first member.
        let mut group_of: Vec<Option<usize>> = vec![None; paths.len()];
        for (g, group) in spec.zip.iter().enumerate() {
            if group.is_empty() {
                return Err(err(file, &format!("zip[{g}]"), "empty group"));
            }
            let mut len = None;
            for p in group {
                let Some(i) = paths.iter().position(|q| q == p) else {
                    return Err(err(
                        file,
                        &format!("zip[{g}]"),
                        format!("`{p}` is not a path under `vary`"),
                    ));
                };
                if let Some(h) = group_of[i] {
                    return Err(err(
                        file,
                        &format!("zip[{g}]"),
                        format!("`{p}` is already in zip[{h}]"),
                    ));
                }
                group_of[i] = Some(g);
                let n = values[i].len();
                match len {
                    None => len = Some((p, n)),
                    Some((q, m)) if m != n => {
                        return Err(err(
                            file,
                            &format!("zip[{g}]"),
                            format!("`{p}` has {n} values but `{q}` has {m}; zipped lists must have the same length"),
                        ))
                    }
                    _ => {}
                }
            }
        }
        let mut axes: Vec<Vec<usize>> = Vec::new();
        let mut placed = vec![false; spec.zip.len()];
        for i in 0..paths.len() {
            match group_of[i] {
                None => axes.push(vec![i]),
                Some(g) if !placed[g] => {
                    placed[g] = true;
                    let mut members: Vec<usize> = (0..paths.len())
                        .filter(|&j| group_of[j] == Some(g))
                        .collect();
                    members.sort_unstable();
                    axes.push(members);
                }
                Some(_) => {}
            }
        }
        // A value listed twice on an axis (a tuple, for a zip group) would evaluate the same
        // scenario twice under two row ids: a typo, refused before any row.
        for a in &axes {
            let mut seen = std::collections::HashMap::new();
            for k in 0..values[a[0]].len() {
                let tuple: Vec<&Value> = a.iter().map(|&i| &values[i][k]).collect();
                let key: Vec<String> = tuple.iter().map(|v| canonical(v)).collect();
                if let Some(j) = seen.insert(key, k) {
                    let (what, at) = if a.len() == 1 {
                        (format!("{}", tuple[0]), format!("vary.{}", paths[a[0]]))
                    } else {
                        let names: Vec<&str> = a.iter().map(|&i| paths[i].as_str()).collect();
                        (
                            format!(
                                "({})",
                                tuple
                                    .iter()
                                    .map(|v| v.to_string())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            format!("vary.{{{}}}", names.join(", ")),
                        )
                    };
                    return Err(err(
                        file,
                        &at,
                        format!("{what} is listed twice (items {j} and {k}); each value of an axis must be distinct"),
                    ));
                }
            }
        }
        let lens: Vec<u128> = axes.iter().map(|a| values[a[0]].len() as u128).collect();
        let product = lens.iter().fold(1u128, |p, &n| p.saturating_mul(n));
        if product > MAX_ROWS as u128 {
            let count = if product == u128::MAX {
                "more than 2^128".to_string()
            } else {
                product.to_string()
            };
            let factors = lens
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" x ");
            return Err(err(
                file,
                "vary",
                format!(
                    "the grid has {count} rows ({factors}, the product of the axis lengths); \
                     at most {MAX_ROWS} rows are supported: split the sweep into several specs \
                     or zip axes that move together"
                ),
            ));
        }
        let rows = product as u64;
        let names: Vec<String> = spec
            .outputs
            .clone()
            .unwrap_or_else(|| outputs::DEFAULT.iter().map(|s| s.to_string()).collect());
        if names.is_empty() {
            return Err(err(file, "outputs", "empty list; omit it for the defaults"));
        }
        let mut outs = Vec::new();
        for (i, n) in names.iter().enumerate() {
            let o = outputs::find(n).ok_or_else(|| {
                let hint = myriad_catalog::closest(n, outputs::ALL.iter().map(|o| o.name));
                err(
                    file,
                    &format!("outputs[{i}]"),
                    match hint.first() {
                        Some(h) => format!("`{n}` is not an output; did you mean {h}? (docs/sweeps.md lists them all)"),
                        None => format!("`{n}` is not an output"),
                    },
                )
            })?;
            if outs.iter().any(|p: &&Output| p.name == o.name) {
                return Err(err(
                    file,
                    &format!("outputs[{i}]"),
                    format!("`{n}` is listed twice"),
                ));
            }
            outs.push(o);
        }
        let canon = serde_json::json!({
            "format": FORMAT,
            "base": base,
            "vary": spec.vary,
            "zip": spec.zip,
            "outputs": names,
        });
        let digest = format!("{:016x}", fnv1a64(canon.to_string().as_bytes()));
        Ok(Sweep {
            file: file.to_string(),
            name: spec.name,
            base,
            paths,
            values,
            axes,
            outputs: outs,
            rows,
            digest,
        })
    }

    /// The varied values of row `id` (< `rows`), one per path in `paths` order.
    pub fn row_values(&self, id: u64) -> Vec<&Value> {
        let mut out: Vec<&Value> = vec![&Value::Null; self.paths.len()];
        let mut rest = id;
        for axis in self.axes.iter().rev() {
            let n = self.values[axis[0]].len() as u64;
            let k = (rest % n) as usize;
            rest /= n;
            for &i in axis {
                out[i] = &self.values[i][k];
            }
        }
        out
    }

    /// The scenario of row `id`: the base with the row's values set. Errors name the field.
    /// Shallower paths are set first, so a varied block (`model`) never overwrites a varied
    /// field inside it (`model.seq_len`) whatever order the spec writes them in.
    pub fn scenario_value(&self, id: u64) -> Result<Value, (String, String)> {
        let mut v = self.base.clone();
        let vals = self.row_values(id);
        let mut order: Vec<usize> = (0..self.paths.len()).collect();
        order.sort_by_key(|&i| self.paths[i].split('.').count());
        for i in order {
            set_path(&mut v, &self.paths[i], vals[i].clone())?;
        }
        Ok(v)
    }

    /// The type of each header column: `row` an integer; a varied path an integer (64-bit
    /// signed, as Parquet stores it: a larger integer makes the column a float), float or
    /// boolean when all its values are, else a string; an output its declared kind;
    /// `error` a string.
    pub fn kinds(&self) -> Vec<Kind> {
        let mut k = vec![Kind::Int];
        for vals in &self.values {
            k.push(if vals.iter().all(Value::is_i64) {
                Kind::Int
            } else if vals.iter().all(Value::is_number) {
                Kind::Float
            } else if vals.iter().all(Value::is_boolean) {
                Kind::Bool
            } else {
                Kind::Str
            });
        }
        k.extend(self.outputs.iter().map(|o| o.kind));
        k.push(Kind::Str);
        k
    }

    /// CSV header: `row`, the varied paths, the outputs, `error`.
    pub fn header(&self) -> Vec<String> {
        let mut h = vec!["row".to_string()];
        h.extend(self.paths.iter().cloned());
        h.extend(self.outputs.iter().map(|o| o.name.to_string()));
        h.push("error".to_string());
        h
    }
}

/// A value's text up to what cannot change the scenario it sets: numbers by value (`1`,
/// `1.0` and `1e0` are one value), mappings with their keys sorted (`{a: 1, b: 2}` and
/// `{b: 2, a: 1}` are one mapping).
fn canonical(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // An integral float within i64 reads as that integer; any other float by its
            // shortest round-trip form.
            (_, _, Some(x)) if x.fract() == 0.0 && x.abs() < 9.2e18 => (x as i64).to_string(),
            (_, _, Some(x)) => format!("{x:?}"),
            _ => n.to_string(),
        },
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => {
            let mut kv: Vec<(&String, String)> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            kv.sort();
            format!(
                "{{{}}}",
                kv.iter()
                    .map(|(k, v)| format!("{}:{v}", Value::String((*k).clone())))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
        other => other.to_string(),
    }
}

/// Sets a dotted field path in a JSON object, creating objects on the way. Errors are
/// `(path, message)`.
pub fn set_path(root: &mut Value, path: &str, val: Value) -> Result<(), (String, String)> {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    for (i, seg) in segs.iter().enumerate() {
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else {
            let at = segs[..i].join(".");
            return Err((
                path.to_string(),
                format!("cannot set: `{at}` is {}, not a mapping", kind(cur)),
            ));
        };
        if i + 1 == segs.len() {
            map.insert(seg.to_string(), val);
            return Ok(());
        }
        cur = map
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// FNV-1a, 64 bits: a stable digest (std's hashers are not stable across releases).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(myriad_scenario::schema)
}

fn deref<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/$defs/")
            .and_then(|n| root.get("$defs").and_then(|d| d.get(n)))
            .unwrap_or(node),
        None => node,
    }
}

/// Whether `segs` is a field path under `node` of the scenario's JSON Schema.
fn schema_has(root: &Value, node: &Value, segs: &[&str]) -> bool {
    if segs.is_empty() {
        return true;
    }
    let node = deref(root, node);
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = node.get(key).and_then(Value::as_array) {
            if branches.iter().any(|b| schema_has(root, b, segs)) {
                return true;
            }
        }
    }
    if let Some(p) = node.get("properties").and_then(|p| p.get(segs[0])) {
        return schema_has(root, p, &segs[1..]);
    }
    match node.get("additionalProperties") {
        Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(sub @ Value::Object(_)) => schema_has(root, sub, &segs[1..]),
        // An open mapping with no declared properties.
        _ => node.get("properties").is_none() && node.get("type") == Some(&"object".into()),
    }
}

/// Every dotted field path of the schema (for "did you mean").
fn schema_paths(root: &Value, node: &Value, prefix: &str, out: &mut Vec<String>, depth: u32) {
    if depth > 5 {
        return;
    }
    let node = deref(root, node);
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = node.get(key).and_then(Value::as_array) {
            for b in branches {
                schema_paths(root, b, prefix, out, depth + 1);
            }
        }
    }
    if let Some(Value::Object(props)) = node.get("properties") {
        for (k, sub) in props {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(p.clone());
            schema_paths(root, sub, &p, out, depth + 1);
        }
    }
}

/// Checks that `path` names a field of the myriad/1 scenario format.
fn check_field_path(file: &str, path: &str) -> Result<(), SweepError> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(err(
            file,
            &format!("vary.{path}"),
            "not a dotted field path",
        ));
    }
    let root = schema();
    if schema_has(root, root, &segs) {
        return Ok(());
    }
    let mut all = Vec::new();
    schema_paths(root, root, "", &mut all, 0);
    all.sort();
    all.dedup();
    let hint = myriad_catalog::closest(path, all.iter().map(String::as_str));
    Err(err(
        file,
        &format!("vary.{path}"),
        match hint.first() {
            Some(h) => format!("not a field of the myriad/1 scenario format; did you mean {h}?"),
            None => "not a field of the myriad/1 scenario format".to_string(),
        },
    ))
}
