//! Evaluating one row: base scenario + the row's values -> checked scenario -> built
//! cluster -> step estimate -> output cells. A row that cannot be evaluated records an
//! error naming the field instead of failing the sweep.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use myriad_cluster::BuiltCluster;
use myriad_scenario::Scenario;
use serde_json::Value;

use crate::outputs::{Cell, Ctx};
use crate::Sweep;

/// One evaluated row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: u64,
    /// The varied values as written in the CSV.
    pub varied: Vec<String>,
    /// One cell per output; `Empty` for outputs the row did not get to.
    pub outputs: Vec<Cell>,
    /// `field.path: message` when the row could not be evaluated (fully).
    pub error: Option<String>,
}

impl Row {
    /// The row's CSV line (no line break).
    pub fn csv_line(&self) -> String {
        let mut f: Vec<String> = Vec::with_capacity(2 + self.varied.len() + self.outputs.len());
        f.push(self.id.to_string());
        f.extend(self.varied.iter().cloned());
        f.extend(self.outputs.iter().map(Cell::text));
        f.push(self.error.clone().unwrap_or_default());
        crate::csv::line(&f)
    }
}

/// A varied value as a CSV cell: strings and numbers as written, anything else as compact
/// JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

type Built = Result<Arc<BuiltCluster>, String>;

/// Most distinct clusters kept; the cache is emptied when full (it only saves time).
const CACHE_CAP: usize = 64;

/// Evaluates rows of one sweep. Rows that share a `cluster` block share one built cluster.
pub struct Evaluator<'a> {
    sweep: &'a Sweep,
    needs_train: bool,
    clusters: Mutex<HashMap<String, Arc<OnceLock<Built>>>>,
}

impl<'a> Evaluator<'a> {
    pub fn new(sweep: &'a Sweep) -> Self {
        Evaluator {
            sweep,
            needs_train: sweep.outputs.iter().any(|o| o.train),
            clusters: Mutex::new(HashMap::new()),
        }
    }

    fn cluster(&self, s: &Scenario) -> Built {
        let key = serde_json::to_string(&s.cluster).unwrap_or_default();
        let cell = {
            let mut m = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
            if m.len() >= CACHE_CAP && !m.contains_key(&key) {
                m.clear();
            }
            m.entry(key).or_default().clone()
        };
        cell.get_or_init(|| {
            myriad_cluster::build(s, myriad_catalog::catalog())
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
    }

    /// Evaluates row `id` (< `sweep.rows`).
    pub fn row(&self, id: u64) -> Row {
        let sw = self.sweep;
        let varied = sw.row_values(id).into_iter().map(value_text).collect();
        let mut outputs = vec![Cell::Empty; sw.outputs.len()];
        // A panic in the models is a bug, but it should cost one row, not a shard of hours.
        let error = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.fill(id, &mut outputs)
        })) {
            Ok(r) => r.err(),
            Err(p) => {
                outputs.iter_mut().for_each(|c| *c = Cell::Empty);
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Some(format!("(internal error, please report): panicked: {msg}"))
            }
        };
        Row {
            id,
            varied,
            outputs,
            error,
        }
    }

    fn fill(&self, id: u64, out: &mut [Cell]) -> Result<(), String> {
        let sw = self.sweep;
        let cat = myriad_catalog::catalog();
        let value = sw
            .scenario_value(id)
            .map_err(|(p, m)| format!("{p}: {m}"))?;
        let s: Scenario = myriad_scenario::from_value(&sw.file, "", value)
            .map_err(|e| format!("{}: {}", e.path, e.message))?;
        s.check(&sw.file, cat)
            .map_err(|e| format!("{}: {}", e.path, e.message))?;
        let cluster = self.cluster(&s)?;
        let spec = s.training.clone().unwrap_or_default();
        let accelerators = spec.accelerators.unwrap_or(s.cluster.count);
        let cluster_only = |out: &mut [Cell]| {
            let ctx = Ctx {
                cluster: &cluster,
                train: None,
                accelerators,
                seq_len: 0,
                tokens: None,
            };
            for (o, cell) in sw.outputs.iter().zip(out.iter_mut()) {
                if !o.train {
                    *cell = (o.get)(&ctx);
                }
            }
        };
        if !self.needs_train {
            cluster_only(out);
            return Ok(());
        }
        // From here on a failure still records the cluster's outputs.
        let trained = (|| {
            let model = s
                .model
                .as_ref()
                .ok_or("model: missing; training outputs need a model block")?
                .resolve(cat)
                .map_err(|(p, m)| format!("model.{p}: {m}"))?;
            if accelerators > s.cluster.count {
                return Err(format!(
                    "training.accelerators: {accelerators} is more than cluster.count {}",
                    s.cluster.count
                ));
            }
            let t = myriad_train::train(&spec, &model, &cluster, accelerators)
                .map_err(|e| e.to_string())?;
            Ok((model, t))
        })();
        let (model, t) = match trained {
            Ok(x) => x,
            Err(e) => {
                cluster_only(out);
                return Err(e);
            }
        };
        let ctx = Ctx {
            cluster: &cluster,
            train: Some(&t),
            accelerators,
            seq_len: model.seq_len as u64,
            tokens: spec.tokens,
        };
        for (o, cell) in sw.outputs.iter().zip(out.iter_mut()) {
            *cell = (o.get)(&ctx);
        }
        Ok(())
    }
}
