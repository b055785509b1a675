//! The `myriad._myriad` extension module: each command of the CLI as a function taking a
//! scenario as text (YAML or JSON) and returning the command's JSON output as a string.
//! The Python package (`python/myriad`) wraps these into functions on dicts and files that
//! return plain Python objects and pandas tables.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    myriad,
    Error,
    PyValueError,
    "Bad input the engine refuses (a scenario, spec or argument): the CLI's message, naming \
     the file, the field path, the value and what was expected. A `ValueError`."
);

fn err(e: String) -> PyErr {
    Error::new_err(e)
}

fn to_json(v: &serde_json::Value) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| err(e.to_string()))
}

/// `myriad cluster`: the built cluster's report (JSON text).
#[pyfunction]
fn cluster(py: Python<'_>, file: &str, text: &str) -> PyResult<String> {
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        myriad_api::cluster(&s, file)
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// `myriad train --backend BACKEND`: the step estimate (JSON text); with `flow`, every
/// collective of the step simulated, and the `flow` section.
#[pyfunction]
#[pyo3(signature = (file, text, backend="analytical"))]
fn train(py: Python<'_>, file: &str, text: &str, backend: &str) -> PyResult<String> {
    let backend = myriad_api::parse_backend(backend, myriad_api::Naming::Keywords).map_err(err)?;
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        let input = myriad_api::train_input(&s, file)?;
        if backend == myriad_api::Backend::Flow {
            let net = myriad_netsim::Network::from_cluster(&input.cluster);
            let run = myriad_api::train_flow(&s, file, &input, &net, false)?;
            return Ok(run.json(&s, &input));
        }
        let run = myriad_api::train(&s, file, &input, None)?;
        Ok::<_, String>(run.json(&s, &input))
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// `myriad search`: the fastest plans (JSON text).
#[pyfunction]
#[pyo3(signature = (file, text, top=10, global_batches=None))]
fn search(
    py: Python<'_>,
    file: &str,
    text: &str,
    top: usize,
    global_batches: Option<Vec<u64>>,
) -> PyResult<String> {
    // Named by the keyword (the engine's own check names `global_batches`).
    if let Some(b) = &global_batches {
        myriad_api::check_global_batches(b, "global_batch").map_err(err)?;
    }
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        let start = std::time::Instant::now();
        let run = myriad_api::search(&s, file, top, global_batches, &|_, _| {})?;
        Ok::<_, String>(run.json(&s, top, start.elapsed().as_secs_f64()))
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// The CLI's `--global-batch` text (`512,1024` or `512..4096`) as batches, errors naming
/// `global_batch`.
#[pyfunction]
fn parse_global_batches(s: &str) -> PyResult<Vec<u64>> {
    myriad_api::parse_global_batches(s, "global_batch").map_err(err)
}

/// `myriad plan`: candidate clusters and the Pareto front (JSON text).
#[pyfunction]
fn plan(py: Python<'_>, file: &str, text: &str) -> PyResult<String> {
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        myriad_api::plan(&s, file).map(|(_, v)| v)
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// `myriad reliability` (JSON text); `compare` holds `size`, `domain`, `checkpoint`.
#[pyfunction]
#[pyo3(signature = (file, text, days=None, replicas=None, seed=None, compare=Vec::new()))]
fn reliability(
    py: Python<'_>,
    file: &str,
    text: &str,
    days: Option<f64>,
    replicas: Option<u32>,
    seed: Option<u64>,
    compare: Vec<String>,
) -> PyResult<String> {
    // As the CLI's `--compare`: items may be comma-separated or `all`; each comparison
    // runs once.
    let mut kinds: Vec<&'static str> = Vec::new();
    for item in compare.iter().flat_map(|c| c.split(',')) {
        let add: &[&'static str] = match item.trim() {
            "size" => &["size"],
            "domain" => &["domain"],
            "checkpoint" => &["checkpoint"],
            "all" => &["size", "domain", "checkpoint"],
            "" => &[],
            other => {
                return Err(err(format!(
                    "compare: `{other}` is not one of size, domain, checkpoint, all"
                )))
            }
        };
        for k in add {
            if !kinds.contains(k) {
                kinds.push(k);
            }
        }
    }
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        myriad_api::reliability(&s, file, days, replicas, seed, &kinds).map(|r| r.json())
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// `myriad validate`: a `myriad-validation/1` file's cases predicted (JSON text).
#[pyfunction]
fn validate(py: Python<'_>, file: &str, text: &str) -> PyResult<String> {
    py.detach(|| myriad_api::validate(file, text))
        .map_err(err)
        .and_then(|v| to_json(&v))
}

/// The `myriad-sweep/1` spec `text` (from `file`, for messages) with its `base:` scenario
/// file read relative to the folder `base` (through `files`, as `Sweep::load` reads it).
fn sweep_spec(
    file: &str,
    text: &str,
    base: &str,
    files: &Files,
) -> Result<myriad_sweep::Sweep, String> {
    myriad_sweep::Sweep::parse(file, text, |rel| {
        let p = std::path::Path::new(base).join(rel);
        let name = p.display().to_string();
        let t = files.read(&p).map_err(|m| format!("base: {m}"))?;
        myriad_scenario::parse_value(&name, &t).map_err(|e| format!("base: {e}"))
    })
    .map_err(|e| e.to_string())
}

/// Shard `k` of `n` (1-based `k`: the rows `k - 1`, `k - 1 + n`, … of the grid, whose row
/// ids are 0-based) of the sweep spec `text` (its `base:` file relative to the folder
/// `base`), as CSV text with a header (the same columns as `myriad sweep`).
#[pyfunction]
#[pyo3(signature = (file, text, base, k=1, n=1))]
fn sweep_csv(
    py: Python<'_>,
    file: &str,
    text: &str,
    base: &str,
    k: u64,
    n: u64,
) -> PyResult<String> {
    let files = Files::default();
    py.detach(|| {
        let sweep = sweep_spec(file, text, base, &files)?;
        // The CLI's `--shard: `0/2`: ...` names the keyword here.
        let shard = myriad_sweep::Shard::parse(&format!("{k}/{n}")).map_err(|e| {
            let m = e.to_string();
            match m.strip_prefix("--shard: ") {
                Some(rest) => format!("shard: {rest}"),
                None => m,
            }
        })?;
        let ev = myriad_sweep::Evaluator::new(&sweep);
        let mut out = myriad_sweep::csv::line(&sweep.header());
        out.push('\n');
        for id in shard.rows(sweep.rows) {
            out.push_str(&ev.row(id).csv_line());
            out.push('\n');
        }
        Ok::<_, String>(out)
    })
    .map_err(|m| files.error(m))
}

/// The type of each column of the sweep's CSV (`int`, `float`, `bool` or `str`, as its
/// Parquet output stores them), for the DataFrame's dtypes.
#[pyfunction]
fn sweep_kinds(file: &str, text: &str, base: &str) -> PyResult<Vec<&'static str>> {
    let files = Files::default();
    let sweep = sweep_spec(file, text, base, &files).map_err(|m| files.error(m))?;
    Ok(sweep
        .kinds()
        .into_iter()
        .map(|k| match k {
            myriad_sweep::Kind::Int => "int",
            myriad_sweep::Kind::Float => "float",
            myriad_sweep::Kind::Bool => "bool",
            myriad_sweep::Kind::Str => "str",
        })
        .collect())
}

/// Reads the files a scenario names (traces, the openb CSVs) as the CLI does, keeping the
/// first IO error so that it reaches Python as the `OSError` it is (`FileNotFoundError`,
/// `PermissionError`, ...) rather than as a `ValueError`; a file that is not UTF-8 is a
/// `ValueError` naming it.
#[derive(Default)]
struct Files {
    failed: std::sync::Mutex<Option<(std::path::PathBuf, std::io::Error)>>,
}

impl Files {
    fn read(&self, p: &std::path::Path) -> Result<String, String> {
        std::fs::read_to_string(p).map_err(|e| {
            let msg = format!("{}: cannot read: {e}", p.display());
            let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
            failed.get_or_insert((p.to_path_buf(), e));
            msg
        })
    }

    /// The error of a call that read through `self`: the IO error when a read failed (the
    /// engine stops at the first), else `msg` as a `ValueError`.
    fn error(self, msg: String) -> PyErr {
        match self.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some((path, e)) => {
                let text = e.to_string();
                // "No such file or directory (os error 2)" -> "No such file or directory".
                let strerror = match text.rfind(" (os error ") {
                    Some(i) => text[..i].to_string(),
                    None => text,
                };
                // OSError(errno, strerror, filename) is built as its errno's subclass. A
                // read without an errno failed on the text (not UTF-8): a ValueError, as
                // Python's own read of a scenario file gives (UnicodeDecodeError).
                match e.raw_os_error() {
                    Some(code) => pyo3::exceptions::PyOSError::new_err((
                        code,
                        strerror,
                        path.display().to_string(),
                    )),
                    None => err(msg),
                }
            }
            None => err(msg),
        }
    }
}

/// `myriad serve`: the request-level simulation of the scenario's `serving` block (JSON
/// text); a trace it names is read relative to `base`. With `load_sweep`, also the points
/// `--report` charts against load (`load_sweep`, as the report's JSON holds them). With
/// `search`, `myriad serve --search`'s object instead: the deployments searched, ranked.
#[pyfunction]
#[pyo3(signature = (file, text, base, seed=None, requests=None, load_sweep=false, search=false))]
#[allow(clippy::too_many_arguments)]
fn serve(
    py: Python<'_>,
    file: &str,
    text: &str,
    base: &str,
    seed: Option<u64>,
    requests: Option<u64>,
    load_sweep: bool,
    search: bool,
) -> PyResult<String> {
    // As the CLI's `--requests`: past the cap the simulation's buffers would not fit in
    // memory, and a failed allocation aborts the interpreter.
    if let Some(n) = requests {
        myriad_scenario::serving::check_requests(n).map_err(|m| err(format!("requests: {m}")))?;
    }
    if search && load_sweep {
        return Err(err(
            "load_sweep: a deployment search has no load sweep (it is the simulation's, for report(\"serve\", ...)); give search or load_sweep"
                .into(),
        ));
    }
    let files = Files::default();
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        let (setup, cluster) = myriad_api::serve_setup(
            &s,
            file,
            std::path::Path::new(base),
            &|p: &std::path::Path| files.read(p),
            seed,
            requests,
        )?;
        if search {
            return Ok(myriad_api::serve_search(&s, &setup, &cluster).1);
        }
        let mut v = serde_json::to_value(myriad_serve::run(&setup)).map_err(|e| e.to_string())?;
        if load_sweep {
            v["load_sweep"] = myriad_api::serve_load_sweep(&setup);
        }
        Ok::<_, String>(v)
    })
    .map_err(|m| files.error(m))
    .and_then(|v| to_json(&v))
}

/// `myriad serve --validate`: a `myriad-measurements/1` serving file predicted (JSON text).
#[pyfunction]
fn serve_validate(py: Python<'_>, file: &str, text: &str) -> PyResult<String> {
    py.detach(|| myriad_api::serve_validate(file, text).map(|(_, v)| v))
        .map_err(err)
        .and_then(|v| to_json(&v))
}

/// `myriad sched`: policies side by side on the scenario's `scheduling` block, or the
/// openb trace in `openb` when `text` is `None` (JSON text). An empty `text` is an empty
/// scenario file, parsed (and refused) as the CLI parses it.
#[pyfunction]
#[pyo3(signature = (file, text, base, openb=None, policies=None, seed=None))]
fn sched(
    py: Python<'_>,
    file: &str,
    text: Option<&str>,
    base: &str,
    openb: Option<String>,
    policies: Option<Vec<String>>,
    seed: Option<u64>,
) -> PyResult<String> {
    // As the CLI's `--policies`: names may be comma-separated, blanks dropped.
    let policies: Option<Vec<String>> = policies.map(|p| {
        p.iter()
            .flat_map(|x| x.split(','))
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    });
    let files = Files::default();
    py.detach(|| {
        let s = text.map(|t| myriad_api::scenario(file, t)).transpose()?;
        myriad_api::sched_named(
            s.as_ref().map(|s| (s, file)),
            std::path::Path::new(base),
            openb.as_deref().map(std::path::Path::new),
            &|p: &std::path::Path| files.read(p),
            policies.as_deref(),
            seed,
            myriad_api::Naming::Keywords,
        )
        .map(|r| r.json())
    })
    .map_err(|m| files.error(m))
    .and_then(|v| to_json(&v))
}

/// `myriad collective --backend BACKEND`: time, algorithm and bus bandwidth of one size or
/// a doubling sweep (JSON text); with `flow`, simulated flow by flow, with the most loaded
/// links.
#[pyfunction]
#[pyo3(signature = (file, text, op, bytes=None, sweep=None, group="all", algorithm="auto", backend="analytical"))]
#[allow(clippy::too_many_arguments)]
fn collective(
    py: Python<'_>,
    file: &str,
    text: &str,
    op: &str,
    bytes: Option<&str>,
    sweep: Option<&str>,
    group: &str,
    algorithm: &str,
    backend: &str,
) -> PyResult<String> {
    let backend = myriad_api::parse_backend(backend, myriad_api::Naming::Keywords).map_err(err)?;
    py.detach(|| {
        let s = myriad_api::scenario(file, text)?;
        let input = myriad_api::collective_input_named(
            &s,
            file,
            op,
            bytes,
            sweep,
            group,
            algorithm,
            myriad_api::Naming::Keywords,
        )?;
        match backend {
            myriad_api::Backend::Flow => {
                myriad_api::collective_flow(&s, &input, file, false).map(|f| f.json)
            }
            myriad_api::Backend::Analytical => {
                myriad_api::collective_analytical(&input, file).map(|(_, v)| v)
            }
        }
    })
    .map_err(err)
    .and_then(|v| to_json(&v))
}

/// The HTML report of a command's JSON output (`kind`: cluster, train, search, plan,
/// reliability).
#[pyfunction]
fn report(kind: &str, json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| err(e.to_string()))?;
    let page: fn(&serde_json::Value) -> String = match kind {
        "cluster" => myriad_report::cluster,
        "train" => myriad_report::train,
        "search" => myriad_report::search,
        "plan" => myriad_report::plan,
        "reliability" => myriad_report::reliability,
        "serve" => myriad_report::serve,
        "sched" => myriad_report::sched,
        other => {
            return Err(err(format!(
                "report: `{other}` is not cluster, train, search, plan, reliability, serve or sched"
            )))
        }
    };
    Ok(page(&v))
}

#[pymodule]
fn _myriad(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cluster, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(search, m)?)?;
    m.add_function(wrap_pyfunction!(parse_global_batches, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(reliability, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_csv, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(serve_validate, m)?)?;
    m.add_function(wrap_pyfunction!(sched, m)?)?;
    m.add_function(wrap_pyfunction!(collective, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The ranges of `replicas` and `requests`, for the package's messages.
    m.add("MAX_REPLICAS", myriad_reliability::MAX_REPLICAS)?;
    m.add("MAX_REQUESTS", myriad_scenario::serving::MAX_REQUESTS)?;
    Ok(())
}
