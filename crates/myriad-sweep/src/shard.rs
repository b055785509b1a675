//! Shard files: evaluate the rows of one shard into `DIR/shard-K-of-N.csv` (resuming what is
//! there), and merge a directory of shard files into one CSV ordered by row.
//!
//! The directory also holds `sweep.json`, the manifest: the spec's digest, the row count and
//! the columns. A run refuses a directory whose manifest is of another sweep; merge uses it
//! to check that every row is present.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::eval::Evaluator;
use crate::outputs::Kind;
use crate::{csv, Sweep, SweepError};

/// Manifest file name in an output directory.
pub const MANIFEST: &str = "sweep.json";
/// Rows evaluated (in parallel) between two appends to the shard file: what a killed run
/// loses at most.
pub const CHUNK: usize = 256;

/// `K/N`: the rows with `index % N == K - 1` (K is 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { k: 1, n: 1 }
    }
}

impl Shard {
    /// Parses `K/N` with 1 <= K <= N.
    pub fn parse(s: &str) -> Result<Shard, SweepError> {
        let bad = |m: &str| SweepError(format!("--shard: `{s}`: {m}"));
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| bad("expected K/N, e.g. 3/16"))?;
        let k: u64 = k
            .trim()
            .parse()
            .map_err(|_| bad("K is not a whole number"))?;
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| bad("N is not a whole number"))?;
        if n == 0 {
            return Err(bad("N must be at least 1"));
        }
        if k == 0 || k > n {
            return Err(bad(&format!("K must be 1 to {n} (K is 1-based)")));
        }
        Ok(Shard { k, n })
    }

    /// Whether row `id` belongs to this shard.
    pub fn has(&self, id: u64) -> bool {
        id % self.n == self.k - 1
    }

    /// This shard's rows of a grid of `rows`, in order.
    pub fn rows(&self, rows: u64) -> impl Iterator<Item = u64> {
        let n = self.n;
        (self.k - 1..rows).step_by(n as usize)
    }

    /// Rows of this shard in a grid of `rows`.
    pub fn len(&self, rows: u64) -> u64 {
        if rows < self.k {
            0
        } else {
            (rows - self.k) / self.n + 1
        }
    }

    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.csv", self.k, self.n)
    }
}

/// What a shard run did (`myriad sweep --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub format: &'static str,
    pub name: String,
    pub file: String,
    pub shard: String,
    pub rows_total: u64,
    pub rows_in_shard: u64,
    pub evaluated: u64,
    pub skipped_present: u64,
    /// Rows of the shard file (after this run) whose `error` is set.
    pub errors: u64,
    pub seconds: f64,
    /// Rows evaluated now per second of wall time.
    pub rows_per_s: f64,
}

/// The directory manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub name: String,
    pub spec_digest: String,
    pub rows: u64,
    pub columns: Vec<String>,
    /// The type of each column (for Parquet output).
    #[serde(default)]
    pub types: Vec<Kind>,
}

impl Manifest {
    pub fn of(sweep: &Sweep) -> Manifest {
        Manifest {
            format: "myriad-sweep-manifest/1".to_string(),
            name: sweep.name.clone(),
            spec_digest: sweep.digest.clone(),
            rows: sweep.rows,
            columns: sweep.header(),
            types: sweep.kinds(),
        }
    }
}

fn io(path: &Path, what: &str, e: std::io::Error) -> SweepError {
    SweepError(format!("{}: cannot {what}: {e}", path.display()))
}

/// Writes `text` to `path` atomically (a temporary file beside it, then a rename).
fn write_atomic(path: &Path, tag: &str, text: &str) -> Result<(), SweepError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.{tag}.{}.tmp", std::process::id()));
    fs::write(&tmp, text).map_err(|e| io(&tmp, "write", e))?;
    fs::rename(&tmp, path).map_err(|e| io(path, "rename into place", e))
}

fn check_manifest(dir: &Path, sweep: &Sweep, tag: &str) -> Result<(), SweepError> {
    let path = dir.join(MANIFEST);
    let want = Manifest::of(sweep);
    match fs::read_to_string(&path) {
        Ok(text) => {
            let have: Manifest = serde_json::from_str(&text).map_err(|e| {
                SweepError(format!("{}: not a sweep manifest: {e}", path.display()))
            })?;
            if have != want {
                return Err(SweepError(format!(
                    "{}: written by another sweep (spec digest {}, {} rows; this spec: {}, {} rows); \
                     use another --out or delete the directory",
                    path.display(),
                    have.spec_digest,
                    have.rows,
                    want.spec_digest,
                    want.rows
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = serde_json::to_string_pretty(&want).expect("manifest") + "\n";
            write_atomic(&path, tag, &text)
        }
        Err(e) => Err(io(&path, "read", e)),
    }
}

/// Rows already in a shard file: id -> line. Checks the header and that every id belongs
/// to the shard. A last line without a line break (a run killed mid-write) is dropped.
fn read_present(
    path: &Path,
    header: &str,
    rows_total: u64,
    shard: Shard,
) -> Result<(BTreeMap<u64, String>, bool), SweepError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((BTreeMap::new(), false)),
        Err(e) => return Err(io(path, "read", e)),
    };
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut clean = true;
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        lines.pop();
        clean = false;
    }
    let mut it = lines.into_iter().map(|l| l.trim_end_matches(['\n', '\r']));
    match it.next() {
        None => return Ok((BTreeMap::new(), false)),
        Some(h) if h == header => {}
        Some(h) => {
            return Err(SweepError(format!(
                "{}: its header `{h}` is not this sweep's `{header}`; use another --out or delete the file",
                path.display()
            )))
        }
    }
    let mut rows = BTreeMap::new();
    for (n, l) in it.enumerate() {
        if l.is_empty() {
            continue;
        }
        let id: u64 = l
            .split(',')
            .next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| {
                SweepError(format!(
                    "{}: line {}: does not start with a row id",
                    path.display(),
                    n + 2
                ))
            })?;
        if id >= rows_total || !shard.has(id) {
            return Err(SweepError(format!(
                "{}: line {}: row {id} is not in shard {}/{} of {} rows",
                path.display(),
                n + 2,
                shard.k,
                shard.n,
                rows_total
            )));
        }
        if rows.insert(id, l.to_string()).is_some() {
            return Err(SweepError(format!(
                "{}: line {}: row {id} appears twice",
                path.display(),
                n + 2
            )));
        }
    }
    Ok((rows, clean))
}

fn is_error_line(line: &str) -> bool {
    csv::parse(line)
        .and_then(|f| f.last().map(|e| !e.is_empty()))
        .unwrap_or(false)
}

fn file_text(header: &str, rows: &BTreeMap<u64, String>) -> String {
    let mut s =
        String::with_capacity(header.len() + 1 + rows.values().map(|l| l.len() + 1).sum::<usize>());
    s.push_str(header);
    s.push('\n');
    for l in rows.values() {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// Evaluates shard `shard` of `sweep` into `dir/shard-K-of-N.csv`: rows already in the file
/// are kept, the missing ones are evaluated (in parallel, `CHUNK` rows at a time, each chunk
/// appended in row order), and the file ends sorted by row. Same inputs, same bytes.
pub fn run(sweep: &Sweep, shard: Shard, dir: &Path) -> Result<Summary, SweepError> {
    let start = Instant::now();
    fs::create_dir_all(dir).map_err(|e| io(dir, "create the directory", e))?;
    let tag = format!("{}-of-{}", shard.k, shard.n);
    check_manifest(dir, sweep, &tag)?;
    let path = dir.join(shard.file_name());
    let header = csv::line(&sweep.header());
    let (mut present, clean) = read_present(&path, &header, sweep.rows, shard)?;
    let skipped = present.len() as u64;
    let missing: Vec<u64> = shard
        .rows(sweep.rows)
        .filter(|id| !present.contains_key(id))
        .collect();
    // Rows are appended; when an existing row follows a missing one, the file is rewritten
    // in order at the end.
    let holes = missing
        .first()
        .is_some_and(|&m| present.keys().next_back().is_some_and(|&p| p > m));
    if !clean || present.is_empty() {
        write_atomic(&path, &tag, &file_text(&header, &present))?;
    }
    let ev = Evaluator::new(sweep);
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| io(&path, "open for appending", e))?;
    for chunk in missing.chunks(CHUNK) {
        let lines: Vec<String> = chunk.par_iter().map(|&id| ev.row(id).csv_line()).collect();
        let mut buf = String::new();
        for l in &lines {
            buf.push_str(l);
            buf.push('\n');
        }
        f.write_all(buf.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| io(&path, "append to", e))?;
        for (&id, l) in chunk.iter().zip(lines) {
            present.insert(id, l);
        }
    }
    drop(f);
    if holes {
        write_atomic(&path, &tag, &file_text(&header, &present))?;
    }
    let errors = present.values().filter(|l| is_error_line(l)).count() as u64;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Summary {
        format: "myriad-sweep-summary/1",
        name: sweep.name.clone(),
        file: path.display().to_string(),
        shard: format!("{}/{}", shard.k, shard.n),
        rows_total: sweep.rows,
        rows_in_shard: shard.len(sweep.rows),
        evaluated: missing.len() as u64,
        skipped_present: skipped,
        errors,
        seconds,
        rows_per_s: if seconds > 0.0 {
            missing.len() as f64 / seconds
        } else {
            0.0
        },
    })
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeSummary {
    pub format: &'static str,
    pub file: String,
    pub shard_files: Vec<String>,
    pub rows: u64,
    pub errors: u64,
}

/// The shard files in `dir`: (K, N, path), sorted by K.
fn shard_files(dir: &Path) -> Result<Vec<(u64, u64, PathBuf)>, SweepError> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(|e| io(dir, "list", e))? {
        let e = e.map_err(|e| io(dir, "list", e))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(kn) = name
            .strip_prefix("shard-")
            .and_then(|r| r.strip_suffix(".csv"))
        else {
            continue;
        };
        let Some((k, n)) = kn.split_once("-of-") else {
            continue;
        };
        if let (Ok(k), Ok(n)) = (k.parse::<u64>(), n.parse::<u64>()) {
            out.push((k, n, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Concatenates the shard files of `dir` into `out`, ordered by row: a CSV file, or Parquet
/// when `out` ends in `.parquet` (column types from the manifest). Fails when the files
/// are of different shard counts, a header differs from the manifest's columns, a row
/// appears twice, or a row of the grid is missing. A merge of complete shards is
/// byte-identical to a `1/1` run.
pub fn merge(dir: &Path, out: &Path) -> Result<MergeSummary, SweepError> {
    let mpath = dir.join(MANIFEST);
    let text = fs::read_to_string(&mpath).map_err(|e| io(&mpath, "read (run a shard first)", e))?;
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| SweepError(format!("{}: not a sweep manifest: {e}", mpath.display())))?;
    let files = shard_files(dir)?;
    if files.is_empty() {
        return Err(SweepError(format!(
            "{}: no shard-K-of-N.csv files",
            dir.display()
        )));
    }
    let n = files[0].1;
    if let Some((k2, n2, _)) = files.iter().find(|f| f.1 != n) {
        return Err(SweepError(format!(
            "{}: shard files of different shard counts (shard-{}-of-{n}.csv and shard-{k2}-of-{n2}.csv); merge one set",
            dir.display(),
            files[0].0
        )));
    }
    let header = csv::line(&m.columns);
    let mut rows: BTreeMap<u64, String> = BTreeMap::new();
    for (k, _, p) in &files {
        let shard = Shard { k: *k, n };
        if *k == 0 || *k > n {
            return Err(SweepError(format!("{}: K out of range", p.display())));
        }
        let (present, clean) = read_present(p, &header, m.rows, shard)?;
        if !clean {
            return Err(SweepError(format!(
                "{}: ends in a partial line (a run was interrupted); rerun that shard to resume it",
                p.display()
            )));
        }
        rows.extend(present);
    }
    let missing = m.rows - rows.len() as u64;
    if missing > 0 {
        let first: Vec<String> = (0..m.rows)
            .filter(|i| !rows.contains_key(i))
            .take(5)
            .map(|i| i.to_string())
            .collect();
        let absent: Vec<String> = (1..=n)
            .filter(|k| !files.iter().any(|f| f.0 == *k))
            .take(5)
            .map(|k| format!("shard-{k}-of-{n}.csv"))
            .collect();
        return Err(SweepError(format!(
            "{}: {missing} of {} rows missing (first: {}){}; run the missing shards (they resume) and merge again",
            dir.display(),
            m.rows,
            first.join(", "),
            if absent.is_empty() {
                String::new()
            } else {
                format!("; absent files: {}", absent.join(", "))
            }
        )));
    }
    let errors = rows.values().filter(|l| is_error_line(l)).count() as u64;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| io(parent, "create the directory", e))?;
    }
    if out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
    {
        if m.types.len() != m.columns.len() {
            return Err(SweepError(format!(
                "{}: `types` does not match `columns`",
                mpath.display()
            )));
        }
        let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("out");
        let tmp = out.with_file_name(format!(".{name}.merge.{}.tmp", std::process::id()));
        crate::parquet::write(
            &tmp,
            &m.columns,
            &m.types,
            rows.values().map(String::as_str),
        )
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })?;
        fs::rename(&tmp, out).map_err(|e| io(out, "rename into place", e))?;
    } else {
        write_atomic(out, "merge", &file_text(&header, &rows))?;
    }
    Ok(MergeSummary {
        format: "myriad-sweep-merge/1",
        file: out.display().to_string(),
        shard_files: files.iter().map(|f| f.2.display().to_string()).collect(),
        rows: rows.len() as u64,
        errors,
    })
}
