//! `myriad sweep`: evaluate one shard of a `myriad-sweep/1` grid into `DIR/shard-K-of-N.csv`
//! (resuming what is there), or merge a directory of shard files (`--merge`).
use std::path::Path;

use myriad_sweep::{Shard, Sweep};

/// `spec` is the sweep spec, or with `merge` the directory of shard files; `out` is the
/// output directory, or with `merge` the merged CSV file.
pub fn run(
    spec: &Path,
    shard: Option<&str>,
    out: &Path,
    json: bool,
    merge: bool,
) -> Result<(), String> {
    if merge {
        if shard.is_some() {
            return Err("--merge takes no --shard".to_string());
        }
        let m = myriad_sweep::merge(spec, out).map_err(|e| e.to_string())?;
        if json {
            super::print_json(&m)?;
        } else {
            println!(
                "merged {} shard files: {} rows ({} with errors) -> {}",
                m.shard_files.len(),
                m.rows,
                m.errors,
                m.file
            );
        }
        return Ok(());
    }
    let shard = match shard {
        Some(s) => Shard::parse(s).map_err(|e| e.to_string())?,
        None => Shard::default(),
    };
    let sweep = Sweep::load(spec).map_err(|e| e.to_string())?;
    let s = myriad_sweep::run(&sweep, shard, out).map_err(|e| e.to_string())?;
    if json {
        super::print_json(&s)?;
    } else {
        println!(
            "{}: shard {} holds {} of {} rows: evaluated {}, {} already present, {} with errors; {:.2} s ({:.0} rows/s) -> {}",
            if sweep.name.is_empty() { "sweep" } else { &sweep.name },
            s.shard,
            s.rows_in_shard,
            s.rows_total,
            s.evaluated,
            s.skipped_present,
            s.errors,
            s.seconds,
            s.rows_per_s,
            s.file
        );
    }
    Ok(())
}
