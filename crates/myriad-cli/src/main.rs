//! `myriad`: a thin command line over the Myriad libraries. Reads files, prints tables or
//! JSON; all computation lives in the library crates.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "myriad",
    version,
    about = "Simulator and planner for AI clusters of 10,000 to 100,000+ accelerators"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the scenario's cluster and print its hierarchy, network tiers, bill of materials, power and cost.
    Cluster {
        scenario: PathBuf,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Estimate one training step: time and where it goes, MFU, memory, time to train.
    Train {
        scenario: PathBuf,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// analytical | flow (time every collective of the step, every group of a dimension
        /// at once, with the flow-level network simulation; see docs/netsim.md).
        #[arg(long, default_value = "analytical")]
        backend: String,
        /// With --backend flow: write a Chrome/Perfetto trace (JSON) of the step's phases and
        /// every simulated collective.
        #[arg(long)]
        trace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Predict every case of a myriad-validation/1 file and compare with the measurements.
    Validate {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// Explain the cases whose id contains this text: the plan, every filled or chosen
        /// setting, the step-time breakdown and the memory, as `myriad train` prints them.
        #[arg(long, value_name = "ID")]
        case: Option<String>,
    },
    /// Search every valid parallel plan for the scenario's model and cluster; print the fastest.
    Search {
        scenario: PathBuf,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// How many plans to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Global batches to consider instead of the scenario's: `512,1024` or `512..4096`.
        #[arg(long)]
        global_batch: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Which cluster to build for the model and token budget: candidates, Pareto front, choice.
    Plan {
        scenario: PathBuf,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Evaluate shard K/N of a myriad-sweep/1 grid into OUT/shard-K-of-N.csv (resumes);
    /// with --merge, SPEC is a directory of shard files and OUT the merged CSV.
    Sweep {
        spec: PathBuf,
        /// K/N (1-based): the rows with index % N == K-1; default 1/1.
        #[arg(long)]
        shard: Option<String>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
        /// Merge the shard files of directory SPEC into the file OUT (CSV, or Parquet for .parquet), ordered by row.
        #[arg(long)]
        merge: bool,
    },
    /// Time a collective on a group of the scenario's cluster (analytical model or flow-level simulation; nccl-tests conventions).
    Collective {
        scenario: PathBuf,
        /// all-reduce | all-gather | reduce-scatter | all-to-all | broadcast | send-recv
        #[arg(long)]
        op: String,
        /// Buffer size: 8B, 64KiB, 1MiB, 16GiB.
        #[arg(long)]
        bytes: Option<String>,
        /// A size range, doubling: 8B..16GiB.
        #[arg(long)]
        sweep: Option<String>,
        /// tp | dp | ep | pp | cp | all | explicit ranks (0-7 or 0,8,16,24).
        #[arg(long, default_value = "all")]
        group: String,
        /// ring | tree | nvls | hierarchical | direct | auto
        #[arg(long, default_value = "auto")]
        algorithm: String,
        /// analytical | flow (flow-level simulation on the routed topology, with the
        /// scenario's cluster.faults; see docs/netsim.md).
        #[arg(long, default_value = "analytical")]
        backend: String,
        /// With --backend flow: write a Chrome/Perfetto trace (JSON) of the largest size.
        #[arg(long)]
        trace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Failures, recovery and checkpointing: interruptions by cause, ETTR, goodput, the
    /// optimal checkpoint interval and time to train (seeded Monte Carlo).
    Reliability {
        scenario: PathBuf,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Simulate a fixed window of N days instead of the whole run.
        #[arg(long)]
        days: Option<f64>,
        /// Monte Carlo replicas (default: reliability.replicas or 1000).
        #[arg(long)]
        replicas: Option<u32>,
        /// Random seed (default: reliability.seed or 1).
        #[arg(long)]
        seed: Option<u64>,
        /// Comparisons: size, domain, checkpoint (comma-separated, or all).
        #[arg(long)]
        compare: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Inference serving: simulate requests on the scenario's `serving` deployment (TTFT,
    /// TPOT, throughput, goodput), search deployments, or validate against measurements.
    Serve {
        scenario: Option<PathBuf>,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Predict every row of a myriad-measurements/1 serving file instead.
        #[arg(long)]
        validate: Option<PathBuf>,
        /// With --validate: explain the rows whose id contains this text (prediction,
        /// measurement, every setting filled, where each simulated step's time goes).
        #[arg(long, value_name = "ID", requires = "validate")]
        case: Option<String>,
        /// Search roles, TP/EP and batch limits for the most goodput per accelerator.
        #[arg(long)]
        search: bool,
        /// Random seed (default: serving.seed or 1).
        #[arg(long)]
        seed: Option<u64>,
        /// Requests to simulate (default: serving.requests or 10,000).
        #[arg(long)]
        requests: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Many jobs on the cluster under several scheduling policies, side by side (seeded
    /// discrete-event simulation); --openb DIR replays the Alibaba openb trace.
    Sched {
        scenario: Option<PathBuf>,
        /// Also write a self-contained HTML report with charts to this file.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Replay the Alibaba openb trace in DIR (node list and default pod list).
        #[arg(long)]
        openb: Option<PathBuf>,
        /// Comma-separated policies (presets or the scenario's): fifo,backfill,sjf,...
        #[arg(long)]
        policies: Option<String>,
        /// Random seed (default: scheduling.seed or 1).
        #[arg(long)]
        seed: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the myriad/1 scenario format.
    Schema,
}

fn main() -> ExitCode {
    #[cfg(unix)]
    // SAFETY: called once at startup before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Cluster {
            scenario,
            json,
            report,
        } => cmd::cluster::run(&scenario, json, report.as_deref()),
        Command::Train {
            scenario,
            backend,
            trace,
            json,
            report,
        } => cmd::train::run(
            &scenario,
            &backend,
            trace.as_deref(),
            json,
            report.as_deref(),
        ),
        Command::Validate { file, json, case } => cmd::validate::run(&file, json, case.as_deref()),
        Command::Search {
            scenario,
            top,
            global_batch,
            json,
            report,
        } => cmd::search::run(
            &scenario,
            top,
            global_batch.as_deref(),
            json,
            report.as_deref(),
        ),
        Command::Plan {
            scenario,
            json,
            report,
        } => cmd::plan::run(&scenario, json, report.as_deref()),
        Command::Sweep {
            spec,
            shard,
            out,
            json,
            merge,
        } => cmd::sweep::run(&spec, shard.as_deref(), &out, json, merge),
        Command::Collective {
            scenario,
            op,
            bytes,
            sweep,
            group,
            algorithm,
            backend,
            trace,
            json,
        } => cmd::collective::run(
            &scenario,
            cmd::collective::Args {
                op: &op,
                bytes: bytes.as_deref(),
                sweep: sweep.as_deref(),
                group: &group,
                algorithm: &algorithm,
                backend: &backend,
                trace: trace.as_deref(),
                json,
            },
        ),
        Command::Reliability {
            scenario,
            days,
            replicas,
            seed,
            compare,
            json,
            report,
        } => cmd::reliability::run(
            &scenario,
            days,
            replicas,
            seed,
            &compare,
            json,
            report.as_deref(),
        ),
        Command::Serve {
            scenario,
            validate,
            case,
            search,
            seed,
            requests,
            json,
            report,
        } => cmd::serve::run(
            scenario.as_deref(),
            validate.as_deref(),
            case.as_deref(),
            search,
            seed,
            requests,
            json,
            report.as_deref(),
        ),
        Command::Sched {
            scenario,
            openb,
            policies,
            seed,
            json,
            report,
        } => cmd::sched::run(
            scenario.as_deref(),
            openb.as_deref(),
            json,
            seed,
            policies.as_deref(),
            report.as_deref(),
        ),
        Command::Schema => {
            println!(
                "{}",
                serde_json::to_string_pretty(&myriad_scenario::schema()).expect("schema")
            );
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
