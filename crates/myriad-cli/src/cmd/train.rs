//! `myriad train`: step time, breakdown, memory and time to train.
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table};
use myriad_report::num::{fixed, grouped};

/// The `--backend flow` section: each exposed communication term and the step time from
/// the flow backend beside the analytical model's for the same plan, and every distinct
/// collective the simulation ran (the JSON's `flow`: `myriad_api::FlowTrain::json`).
fn flow_report(f: &myriad_api::FlowTrain) -> String {
    let (plan, timer, flow, analytical, faults) = (
        &f.run.result.plan,
        &f.timer,
        &f.run.result.estimate,
        &f.analytical,
        &f.faults,
    );
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let ratio = |a: f64, f: f64| {
        if a > 0.0 {
            format!("{:+.2}%", 100.0 * (f / a - 1.0))
        } else if f > 0.0 {
            "new".into()
        } else {
            "-".into()
        }
    };
    let log = timer.log();
    let mut tc = Table::new();
    tc.set_header(vec![
        "collective (every group at once)",
        "groups x ranks",
        "bytes",
        "beside",
        "analytical (s)",
        "flow (s)",
        "flow / analytical",
    ]);
    // Which parallel dimension a group is, from its size and stride.
    let dim = |n: u64, stride: u64| -> &'static str {
        use myriad_scenario::Dim;
        for (d, name) in [
            (Dim::Tp, "TP"),
            (Dim::Cp, "CP"),
            (Dim::Ep, "EP"),
            (Dim::Pp, "PP"),
            (Dim::Dp, "DP"),
        ] {
            if plan.group_layout(d) == (n, stride) {
                return name;
            }
        }
        if n == plan.dp as u64 * plan.cp as u64 {
            "DP+CP"
        } else {
            "expert DP"
        }
    };
    for c in &log {
        tc.add_row(vec![
            Cell::new(format!(
                "{} {} ({})",
                dim(c.group_size, c.stride),
                c.op.name(),
                c.algorithm.name()
            )),
            right(format!("{} x {}", c.groups, c.group_size)),
            right(format!("{:.3e}", c.bytes)),
            Cell::new(c.background.join(", ")),
            right(format!("{:.6}", c.analytical_s)),
            right(format!("{:.6}", c.flow_s)),
            right(format!("{:.3}", c.flow_s / c.analytical_s)),
        ]);
    }
    let (a, f) = (&analytical.breakdown, &flow.breakdown);
    let mut tb = Table::new();
    tb.set_header(vec![
        "exposed per step",
        "analytical (s)",
        "flow (s)",
        "change",
    ]);
    for (name, x, y) in [
        ("TP/SP comm", a.tp_comm_s, f.tp_comm_s),
        ("CP comm", a.cp_comm_s, f.cp_comm_s),
        ("EP comm", a.ep_comm_s, f.ep_comm_s),
        ("PP comm", a.pp_comm_s, f.pp_comm_s),
        ("DP comm", a.dp_comm_s, f.dp_comm_s),
        ("pipeline bubble", a.pipeline_bubble_s, f.pipeline_bubble_s),
        ("step time", analytical.step_time_s, flow.step_time_s),
    ] {
        if x == 0.0 && y == 0.0 {
            continue;
        }
        tb.add_row(vec![
            Cell::new(name),
            right(format!("{x:.4}")),
            right(format!("{y:.4}")),
            right(ratio(x, y)),
        ]);
    }
    format!(
        "flow-level network simulation{} (the step above is timed with it):\n{tc}\n{tb}",
        if faults.is_empty() {
            String::new()
        } else {
            format!(" with {} fault(s)", faults.len())
        }
    )
}

pub fn run(
    path: &Path,
    backend: &str,
    trace: Option<&Path>,
    json: bool,
    html: Option<&Path>,
) -> Result<(), String> {
    let flow =
        myriad_api::parse_backend(backend, myriad_api::Naming::Cli)? == myriad_api::Backend::Flow;
    if trace.is_some() && !flow {
        return Err("--trace needs --backend flow".into());
    }
    let s = super::load_scenario(path)?;
    let file = path.display().to_string();
    let input = myriad_api::train_input(&s, &file)?;
    let (model, cluster, accelerators) = (&input.model, &input.cluster, input.accelerators);
    // The flow backend times every collective of the step by simulation (all groups of a
    // dimension at once, DP beside PP, the scenario's faults); the analytical estimate of
    // the same plan is kept for comparison.
    let net = flow.then(|| myriad_netsim::Network::from_cluster(cluster));
    let flow_run = net
        .as_ref()
        .map(|net| myriad_api::train_flow(&s, &file, &input, net, trace.is_some()))
        .transpose()?;
    let analytical_run = match &flow_run {
        Some(_) => None,
        None => Some(myriad_api::train(&s, &file, &input, None)?),
    };
    let run = flow_run
        .as_ref()
        .map(|f| &f.run)
        .or(analytical_run.as_ref())
        .expect("one backend ran");
    let (t, ttt) = (&run.result, run.time_to_train);
    let e = &t.estimate;
    if let (Some(out), Some(f)) = (trace, &flow_run) {
        let b = &e.breakdown;
        let timeline: Vec<(String, f64)> = b
            .parts()
            .iter()
            .map(|(_, n, v)| (n.to_string(), *v))
            .collect();
        std::fs::write(out, f.timer.chrome_trace(&timeline))
            .map_err(|e| format!("{}: cannot write the trace: {e}", out.display()))?;
        eprintln!("trace written to {}", out.display());
    }
    let report = match &flow_run {
        Some(f) => f.json(&s, &input),
        None => run.json(&s, &input),
    };
    super::write_report(html, &report, myriad_report::train)?;
    if json {
        super::print_json(&report)?;
        return Ok(());
    }
    println!(
        "{} — {} on {} × {}",
        s.name, model.name, accelerators, cluster.accelerator.name
    );
    print_step(t, accelerators, cluster.scale_up.host_memory_gib);
    if let Some(t) = ttt {
        // Millions of dollars for a frontier run, thousands for a small one.
        // Each figure in scientific form where it would run past 12 digits (`tokens: 1e300`).
        let cost = if t.energy_cost_usd >= 1e5 {
            format!("{} M USD", fixed(t.energy_cost_usd / 1e6, 2))
        } else {
            format!("{} k USD", fixed(t.energy_cost_usd / 1e3, 1))
        };
        println!(
            "\ntime to train {:.3e} tokens: {} steps, {} days, {} GPU-hours, {} MWh at the facility, {cost} of energy",
            t.tokens,
            grouped(t.steps, 0),
            grouped(t.days, 1),
            grouped(t.gpu_hours, 0),
            grouped(t.energy_mwh, 0)
        );
    }
    if let Some(f) = &flow_run {
        println!("\n{}", flow_report(f));
    }
    Ok(())
}

/// The plan line, the choices made, the step-time breakdown, MFU, pace and memory of one
/// estimate, as `myriad train` prints them (`myriad validate --case` prints the same).
pub(super) fn print_step(
    t: &myriad_train::TrainEstimate,
    accelerators: u64,
    host_memory_gib: Option<f64>,
) {
    let p = &t.plan;
    let e = &t.estimate;
    // In the scenario's spelling, as `search` and `plan` print it.
    let recompute = p.recompute_label();
    let cp = match (p.cp, p.cp_comm) {
        (1, _) => "1".to_string(),
        (c, myriad_model::CpComm::P2p) => format!("{c} (ring)"),
        (c, myriad_model::CpComm::AllGather) => format!("{c} (all-gather)"),
    };
    // fp8 names its scaling recipe where it is not Transformer Engine's default.
    let precision = match (p.precision, p.fp8_recipe) {
        (myriad_scenario::Precision::Fp8, r) if r != myriad_model::Fp8Recipe::Delayed => {
            format!("fp8 ({} scaling)", r.name())
        }
        (prec, _) => prec.as_str().to_string(),
    };
    println!(
        "plan: TP {} · PP {} (VPP {}) · CP {} · DP {} · EP {} · micro-batch {} · global batch {} · {} · {} · SP {} · {} micro-batches",
        p.tp, p.pp, p.vpp, cp, p.dp, p.ep, p.micro_batch, p.global_batch, precision,
        recompute, p.sequence_parallel, e.micro_batches
    );
    if let Some((first, last)) = p.edge_stage_layers {
        println!("  pipeline split: {first} layers on the first stage, {last} on the last, the rest evenly");
    }
    for n in &t.notes {
        println!("  chose {n}");
    }
    println!();
    let mut tb = Table::new();
    tb.set_header(vec!["step time", "seconds", "share"]);
    let b = &e.breakdown;
    let rows = [
        ("forward compute", b.forward_s),
        ("backward compute", b.backward_s),
        ("recompute", b.recompute_s),
        ("MoE eager overhead", b.moe_overhead_s),
        ("TP/SP comm (exposed)", b.tp_comm_s),
        ("CP comm (exposed)", b.cp_comm_s),
        ("EP comm (exposed)", b.ep_comm_s),
        ("PP comm (exposed)", b.pp_comm_s),
        ("DP comm (exposed)", b.dp_comm_s),
        ("pipeline bubble", b.pipeline_bubble_s),
        ("optimizer step", b.optimizer_s),
        ("activation offload (exposed)", b.offload_s),
    ];
    for (name, v) in rows {
        tb.add_row(vec![
            Cell::new(name),
            Cell::new(format!("{v:.4}")).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.1}%", 100.0 * v / e.step_time_s))
                .set_alignment(CellAlignment::Right),
        ]);
    }
    tb.add_row(vec![
        Cell::new("total"),
        Cell::new(format!("{:.4}", e.step_time_s)).set_alignment(CellAlignment::Right),
        Cell::new("100%").set_alignment(CellAlignment::Right),
    ]);
    println!("{tb}");
    // Eager MoE layers' overhead worth naming: what a full-iteration CUDA graph would save.
    let moe_share = e.breakdown.moe_overhead_s / e.step_time_s;
    if moe_share >= 0.03 {
        println!(
            "MoE eager overhead is {:.1}% of the step: a full-iteration CUDA graph with a static expert capacity (`training.moe_full_graph: true`; Megatron's `cuda_graph_impl: full_iteration` + `moe_paged_stash`) removes its {:.2} s{}",
            100.0 * moe_share,
            e.breakdown.moe_overhead_s,
            if p.moe_grouped_kernel {
                ""
            } else {
                ", and runs the experts as one grouped GEMM instead of one kernel per local expert"
            }
        );
    }
    // The bf16 figure only says something new when the plan computes in another precision.
    let bf16_too = if (e.mfu - e.mfu_bf16).abs() > 1e-12 {
        format!("; {:.1}% of bf16 peak", 100.0 * e.mfu_bf16)
    } else {
        String::new()
    };
    println!(
        "MFU {:.1}% (of {} peak{bf16_too}) · HFU {:.1}% · {} tokens/s · {} tokens/s per accelerator",
        100.0 * e.mfu,
        p.precision.as_str(),
        100.0 * e.hfu,
        grouped(e.tokens_per_s, 0),
        grouped(e.tokens_per_s / accelerators as f64, 0)
    );
    // What stretches compute beyond the median chip's speed.
    let pc = &e.pace;
    let mut why = vec![format!(
        "the slowest of {accelerators} chips +{:.1}%",
        100.0 * (pc.slowest_chip - 1.0)
    )];
    if pc.lockstep > 1.0 {
        why.push(format!(
            "{} ranks in lockstep within every layer wait for the momentarily slowest clock +{:.1}%",
            pc.lockstep_ranks,
            100.0 * (pc.lockstep - 1.0)
        ));
    }
    println!(
        "compute paced ×{:.3}: {}",
        pc.slowest_chip * pc.lockstep,
        why.join(", ")
    );
    let m = &e.memory;
    let mut tm = Table::new();
    tm.set_header(vec!["memory per accelerator", "GiB"]);
    for (name, v) in [
        ("weights", m.weights_gib),
        ("gradients", m.gradients_gib),
        ("optimizer state", m.optimizer_gib),
        ("activations", m.activations_gib),
        ("buffers (context, NCCL, fragmentation)", m.buffers_gib),
        ("total", m.total_gib),
        ("HBM capacity", m.capacity_gib),
    ] {
        tm.add_row(vec![
            Cell::new(name),
            Cell::new(format!("{v:.1}")).set_alignment(CellAlignment::Right),
        ]);
    }
    println!("\n{tm}");
    println!(
        "activations: {:.1} micro-batches in flight on pipeline stage {} (the peak stage)",
        m.in_flight_micro_batches, m.peak_stage
    );
    if m.host_offload_gib > 0.0 {
        println!(
            "offloaded to host memory: {:.1} GiB of activations on pipeline stage {} (the most; of {:.0} GiB per accelerator)",
            m.host_offload_gib,
            m.host_offload_stage,
            host_memory_gib.unwrap_or(0.0)
        );
    }
    // Needed and capacity at the same precision: a capacity rounded to whole GiB could
    // print below what is needed.
    if e.fits {
        println!(
            "fits: yes ({:.1} GiB of {:.1})",
            m.total_gib, m.capacity_gib
        );
    } else if m.total_gib > m.capacity_gib {
        println!(
            "fits: NO — does not fit: {:.1} GiB needed of {:.1}",
            m.total_gib, m.capacity_gib
        );
    } else {
        // HBM holds the rest; the activations sent to host memory are what does not fit.
        println!(
            "fits: NO — host memory: {:.1} GiB of offloaded activations on pipeline stage {}, {:.0} GiB per accelerator (HBM holds its {:.1} GiB of {:.1})",
            m.host_offload_gib,
            m.host_offload_stage,
            host_memory_gib.unwrap_or(0.0),
            m.total_gib,
            m.capacity_gib
        );
    }
}
