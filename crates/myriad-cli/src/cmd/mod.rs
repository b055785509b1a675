//! One module per subcommand.
pub mod cluster;
pub mod collective;
pub mod plan;
pub mod reliability;
pub mod sched;
pub mod search;
pub mod serve;
pub mod sweep;
pub mod train;
pub mod validate;

use std::path::Path;

/// Reads and parses a scenario file, mapping IO errors to a message naming the file.
pub fn load_scenario(path: &Path) -> Result<myriad_scenario::Scenario, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    // A scenario without a `name` is named after its file (`sweep.yaml`: `sweep`), so the
    // commands' headers (`NAME — ...`) and JSON never start with an empty name.
    myriad_api::scenario(&name, &text)
}

/// Writes `--report FILE.html` (the page built from the command's JSON output).
pub fn write_report(
    path: Option<&Path>,
    json: &serde_json::Value,
    page: fn(&serde_json::Value) -> String,
) -> Result<(), String> {
    if let Some(p) = path {
        std::fs::write(p, page(json))
            .map_err(|e| format!("{}: cannot write the report: {e}", p.display()))?;
        eprintln!("report written to {}", p.display());
    }
    Ok(())
}

/// Reads a file a scenario refers to (traces): the CLI's reader for `myriad_api`.
pub fn read_file(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: cannot read: {e}", p.display()))
}

/// Prints `v` as pretty JSON on stdout (`--json`).
pub fn print_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string_pretty(v).map_err(|e| e.to_string())?
    );
    Ok(())
}
