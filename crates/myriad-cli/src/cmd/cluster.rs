//! `myriad cluster`.
use std::path::Path;

pub fn run(path: &Path, _json: bool) -> Result<(), String> {
    let _s = super::load_scenario(path)?;
    Err("cluster: not yet implemented".into())
}
