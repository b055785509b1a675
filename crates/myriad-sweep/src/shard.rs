//! Shard files: evaluate the rows of one shard into `DIR/shard-K-of-N.csv` (resuming what is
//! there), and merge a directory of shard files into one CSV ordered by row.
//!
//! The directory also holds `sweep.json`, the manifest: the spec's digest, the row count and
//! the columns. A run refuses a directory whose manifest is of another sweep; merge uses it
//! to check that every row is present.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
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
                // Name what differs: the digest alone reads the same when only the name or
                // the manifest's layout (another Myriad version) changed.
                let mut diff = Vec::new();
                if (&have.spec_digest, have.rows) != (&want.spec_digest, want.rows) {
                    diff.push(format!(
                        "spec digest {}, {} rows; this spec: {}, {} rows",
                        have.spec_digest, have.rows, want.spec_digest, want.rows
                    ));
                }
                if have.name != want.name {
                    diff.push(format!("name `{}`; this spec: `{}`", have.name, want.name));
                }
                if (&have.format, &have.columns, &have.types)
                    != (&want.format, &want.columns, &want.types)
                {
                    diff.push(format!(
                        "format {} with columns {:?}; this spec: {} with {:?}",
                        have.format, have.columns, want.format, want.columns
                    ));
                }
                return Err(SweepError(format!(
                    "{}: written by another sweep ({}); use another --out or delete the directory",
                    path.display(),
                    diff.join("; ")
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

/// What a shard file holds, read line by line (memory: one bit per row of the shard).
struct Scan {
    /// Which rows of the shard are present (bit `id / N`).
    present: Vec<u64>,
    count: u64,
    /// Rows with `error` set.
    errors: u64,
    /// Byte length of the header and the complete lines (a last line without its line break
    /// is not counted).
    clean_len: u64,
    /// Whether the file has a last line without its line break.
    partial: bool,
    /// Whether the file exists with a header.
    has_header: bool,
    /// Byte offsets where a run of increasing row ids starts (the first after the header).
    runs: Vec<u64>,
    last_id: Option<u64>,
}

impl Scan {
    fn has(&self, shard: Shard, id: u64) -> bool {
        let j = id / shard.n;
        self.present[(j / 64) as usize] & (1 << (j % 64)) != 0
    }
}

/// A row line's id (its first field).
fn line_id(line: &str) -> Option<u64> {
    line.split(',').next().and_then(|f| f.parse().ok())
}

/// Whether a row line has `error` set: the error is the last field, so a line with an empty
/// one ends in a comma.
fn is_error_line(line: &str) -> bool {
    !line.ends_with(',')
}

/// Reads a shard file: checks the header and that every row belongs to the shard and appears
/// once; records the runs of increasing ids.
fn scan(path: &Path, header: &str, rows_total: u64, shard: Shard) -> Result<Scan, SweepError> {
    let mut sc = Scan {
        present: vec![0; shard.len(rows_total).div_ceil(64) as usize],
        count: 0,
        errors: 0,
        clean_len: 0,
        partial: false,
        has_header: false,
        runs: Vec::new(),
        last_id: None,
    };
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(sc),
        Err(e) => return Err(io(path, "read", e)),
    };
    let mut r = BufReader::new(f);
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        line.clear();
        let len = r.read_line(&mut line).map_err(|e| io(path, "read", e))? as u64;
        if len == 0 {
            break;
        }
        n += 1;
        if !line.ends_with('\n') {
            sc.partial = true;
            break;
        }
        let start = sc.clean_len;
        sc.clean_len += len;
        let l = line.trim_end_matches(['\n', '\r']);
        if n == 1 {
            if l != header {
                return Err(SweepError(format!(
                    "{}: its header `{l}` is not this sweep's `{header}`; use another --out or delete the file",
                    path.display()
                )));
            }
            sc.has_header = true;
            continue;
        }
        if l.is_empty() {
            continue;
        }
        let id = line_id(l).ok_or_else(|| {
            SweepError(format!(
                "{}: line {n}: does not start with a row id",
                path.display()
            ))
        })?;
        if id >= rows_total || !shard.has(id) {
            return Err(SweepError(format!(
                "{}: line {n}: row {id} is not in shard {}/{} of {rows_total} rows",
                path.display(),
                shard.k,
                shard.n,
            )));
        }
        if sc.has(shard, id) {
            return Err(SweepError(format!(
                "{}: line {n}: row {id} appears twice",
                path.display()
            )));
        }
        let j = id / shard.n;
        sc.present[(j / 64) as usize] |= 1 << (j % 64);
        sc.count += 1;
        sc.errors += is_error_line(l) as u64;
        if sc.last_id.is_none_or(|p| id < p) {
            sc.runs.push(start);
        }
        sc.last_id = Some(id);
    }
    if n == 1 && !sc.has_header {
        // Only a partial header: as good as no file.
        sc.partial = true;
    }
    Ok(sc)
}

/// The lines of a shard file between two byte offsets.
struct RunReader {
    r: BufReader<File>,
    left: u64,
    next: Option<(u64, String)>,
}

impl RunReader {
    fn new(path: &Path, start: u64, end: u64) -> Result<RunReader, SweepError> {
        let mut f = File::open(path).map_err(|e| io(path, "read", e))?;
        f.seek(SeekFrom::Start(start))
            .map_err(|e| io(path, "read", e))?;
        let mut rr = RunReader {
            r: BufReader::new(f),
            left: end - start,
            next: None,
        };
        rr.advance(path)?;
        Ok(rr)
    }

    fn advance(&mut self, path: &Path) -> Result<(), SweepError> {
        self.next = None;
        while self.left > 0 {
            let mut line = String::new();
            let len = self
                .r
                .read_line(&mut line)
                .map_err(|e| io(path, "read", e))? as u64;
            if len == 0 {
                break;
            }
            self.left = self.left.saturating_sub(len);
            let l = line.trim_end_matches(['\n', '\r']);
            if let Some(id) = line_id(l) {
                let l = l.to_string();
                self.next = Some((id, l));
                break;
            }
        }
        Ok(())
    }
}

/// Rewrites a shard file whose rows form several increasing runs into one, in row order
/// (a k-way merge of the runs, streamed; then an atomic rename).
fn sort_runs(
    path: &Path,
    header: &str,
    runs: &[u64],
    end: u64,
    tag: &str,
) -> Result<(), SweepError> {
    let mut readers = Vec::with_capacity(runs.len());
    for (i, &start) in runs.iter().enumerate() {
        let stop = runs.get(i + 1).copied().unwrap_or(end);
        readers.push(RunReader::new(path, start, stop)?);
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.{tag}.{}.tmp", std::process::id()));
    let mut w = BufWriter::new(File::create(&tmp).map_err(|e| io(&tmp, "write", e))?);
    let werr = |e| io(&tmp, "write", e);
    writeln!(w, "{header}").map_err(werr)?;
    loop {
        let best = readers
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.next.as_ref().map(|(id, _)| (*id, i)))
            .min();
        let Some((_, i)) = best else { break };
        let (_, l) = readers[i].next.take().expect("peeked");
        writeln!(w, "{l}").map_err(werr)?;
        readers[i].advance(path)?;
    }
    w.into_inner()
        .map_err(|e| io(&tmp, "write", e.into_error()))?
        .sync_all()
        .map_err(werr)?;
    fs::rename(&tmp, path).map_err(|e| io(path, "rename into place", e))
}

/// Evaluates shard `shard` of `sweep` into `dir/shard-K-of-N.csv`: rows already in the file
/// are kept, the missing ones are evaluated (in parallel, `CHUNK` rows at a time, each chunk
/// appended in row order as it finishes), and the file ends sorted by row. Same inputs, same
/// bytes. Memory stays bounded: one bit per row of the shard plus one chunk.
pub fn run(sweep: &Sweep, shard: Shard, dir: &Path) -> Result<Summary, SweepError> {
    let start = Instant::now();
    fs::create_dir_all(dir).map_err(|e| io(dir, "create the directory", e))?;
    let tag = format!("{}-of-{}", shard.k, shard.n);
    check_manifest(dir, sweep, &tag)?;
    let path = dir.join(shard.file_name());
    let header = csv::line(&sweep.header());
    let sc = scan(&path, &header, sweep.rows, shard)?;
    if !sc.has_header {
        write_atomic(&path, &tag, &format!("{header}\n"))?;
    } else if sc.partial {
        // Drop the line a killed run left half-written.
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| io(&path, "open", e))?;
        f.set_len(sc.clean_len)
            .map_err(|e| io(&path, "truncate", e))?;
    }
    let mut runs = sc.runs.clone();
    let mut last_id = sc.last_id;
    let mut end = if sc.has_header {
        sc.clean_len
    } else {
        header.len() as u64 + 1
    };
    let ev = Evaluator::new(sweep);
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| io(&path, "open for appending", e))?;
    let mut missing = shard.rows(sweep.rows).filter(|&id| !sc.has(shard, id));
    let (mut evaluated, mut errors) = (0u64, sc.errors);
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        chunk.extend(missing.by_ref().take(CHUNK));
        if chunk.is_empty() {
            break;
        }
        let rows: Vec<(bool, String)> = chunk
            .par_iter()
            .map(|&id| {
                let r = ev.row(id);
                (r.error.is_some(), r.csv_line())
            })
            .collect();
        let mut buf = String::new();
        for (err, l) in &rows {
            buf.push_str(l);
            buf.push('\n');
            errors += *err as u64;
        }
        f.write_all(buf.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| io(&path, "append to", e))?;
        if last_id.is_none_or(|p| chunk[0] < p) {
            runs.push(end);
        }
        last_id = chunk.last().copied();
        end += buf.len() as u64;
        evaluated += chunk.len() as u64;
    }
    drop(f);
    if runs.len() > 1 {
        sort_runs(&path, &header, &runs, end, &tag)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Summary {
        format: "myriad-sweep-summary/1",
        name: sweep.name.clone(),
        file: path.display().to_string(),
        shard: format!("{}/{}", shard.k, shard.n),
        rows_total: sweep.rows,
        rows_in_shard: shard.len(sweep.rows),
        evaluated,
        skipped_present: sc.count,
        errors,
        seconds,
        rows_per_s: if seconds > 0.0 {
            evaluated as f64 / seconds
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
/// when `out` ends in `.parquet` (column types from the manifest). Fails, writing nothing,
/// when the files are of different shard counts, a header differs from the manifest's
/// columns, a row appears twice, a file ends in a partial line, or a row of the grid is
/// missing. Streams: one pass checks every file, a second interleaves them (row `i` is the
/// next line of shard `i % N + 1`), so memory does not grow with the rows. A merge of
/// complete shards is byte-identical to a `1/1` run.
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
    // Pass 1: every file whole, sorted, of its shard.
    let mut missing = 0u64;
    let mut errors = 0u64;
    let mut first_missing: Vec<u64> = Vec::new();
    // Shards past the last row (K > rows, when N > rows) hold no rows: their files may be
    // absent, and only the first `min(N, rows)` are read in pass 2.
    let need = n.min(m.rows);
    let mut by_k: Vec<Option<&PathBuf>> = vec![None; need as usize];
    for (k, _, p) in &files {
        if *k == 0 || *k > n {
            return Err(SweepError(format!(
                "{}: K out of range (expected 1 to {n})",
                p.display()
            )));
        }
        if *k <= need {
            by_k[(*k - 1) as usize] = Some(p);
        }
        let shard = Shard { k: *k, n };
        let sc = scan(p, &header, m.rows, shard)?;
        if sc.partial {
            return Err(SweepError(format!(
                "{}: ends in a partial line (a run was interrupted); rerun that shard to resume it",
                p.display()
            )));
        }
        if sc.runs.len() > 1 {
            return Err(SweepError(format!(
                "{}: rows out of order (a resumed run was interrupted); rerun that shard to finish it",
                p.display()
            )));
        }
        errors += sc.errors;
        let want = shard.len(m.rows);
        if sc.count < want {
            missing += want - sc.count;
            first_missing.extend(shard.rows(m.rows).filter(|&id| !sc.has(shard, id)).take(5));
        }
    }
    let absent: Vec<u64> = (1..=need)
        .filter(|k| by_k[(*k - 1) as usize].is_none())
        .collect();
    for &k in &absent {
        missing += Shard { k, n }.len(m.rows);
        first_missing.extend(Shard { k, n }.rows(m.rows).take(5));
    }
    if missing > 0 {
        first_missing.sort_unstable();
        first_missing.truncate(5);
        let first: Vec<String> = first_missing.iter().map(|i| i.to_string()).collect();
        let absent: Vec<String> = absent
            .iter()
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
    // Pass 2: interleave.
    let mut readers = Vec::with_capacity(n as usize);
    for p in by_k.iter().map(|p| p.expect("complete")) {
        // The header has no row id: the reader skips it.
        let end = fs::metadata(p).map_err(|e| io(p, "read", e))?.len();
        readers.push((RunReader::new(p, 0, end)?, p));
    }
    let mut next_line = |i: u64| -> Result<String, SweepError> {
        let (r, p) = &mut readers[(i % n) as usize];
        match r.next.take() {
            Some((id, l)) if id == i => {
                r.advance(p)?;
                Ok(l)
            }
            _ => Err(SweepError(format!(
                "{}: row {i} is not where it belongs (the file changed during the merge?)",
                p.display()
            ))),
        }
    };
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| io(parent, "create the directory", e))?;
    }
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = out.with_file_name(format!(".{name}.merge.{}.tmp", std::process::id()));
    let written = if out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
    {
        if m.types.len() != m.columns.len() {
            return Err(SweepError(format!(
                "{}: `types` does not match `columns`",
                mpath.display()
            )));
        }
        crate::parquet::write(&tmp, &m.columns, &m.types, (0..m.rows).map(&mut next_line))
    } else {
        (|| {
            let werr = |e| io(&tmp, "write", e);
            let mut w = BufWriter::new(File::create(&tmp).map_err(werr)?);
            writeln!(w, "{header}").map_err(werr)?;
            for i in 0..m.rows {
                writeln!(w, "{}", next_line(i)?).map_err(werr)?;
            }
            w.into_inner()
                .map_err(|e| io(&tmp, "write", e.into_error()))?
                .sync_all()
                .map_err(werr)
        })()
    };
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, out).map_err(|e| io(out, "rename into place", e))?;
    Ok(MergeSummary {
        format: "myriad-sweep-merge/1",
        file: out.display().to_string(),
        shard_files: files.iter().map(|f| f.2.display().to_string()).collect(),
        rows: m.rows,
        errors,
    })
}
