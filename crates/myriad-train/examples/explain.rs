//! Prints the plan, breakdown and filled-in settings the validator uses for every case of a
//! myriad-validation/1 file whose id contains a pattern: what `myriad validate` predicts,
//! taken apart.
//!
//! `cargo run --release -p myriad-train --example explain -- FILE [PATTERN] [--ops]`
//!
//! `--ops` also lists the forward and backward time of every op of one layer (the first
//! MoE layer where there is one) for one micro-batch on one rank.
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: explain FILE [PATTERN]")?;
    let ops = args.iter().any(|a| a == "--ops");
    let pat = args
        .iter()
        .skip(2)
        .find(|a| *a != "--ops")
        .map(String::as_str)
        .unwrap_or("");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let file =
        myriad_scenario::validation::parse_validation(path, &text).map_err(|e| e.to_string())?;
    let cat = myriad_catalog::catalog();
    for case in file.cases.iter().filter(|c| c.id.contains(pat)) {
        let measured = case.measured.step_time_s;
        let (t, notes) = match myriad_train::validate::explain(case, cat) {
            Ok(x) => x,
            Err(err) => {
                println!("== {}: {err}", case.id);
                continue;
            }
        };
        let (e, p) = (&t.estimate, &t.plan);
        println!(
            "== {} measured {measured:.3} s predicted {:.3} s ({:+.1}%) mfu {:.1}%",
            case.id,
            e.step_time_s,
            100.0 * (e.step_time_s / measured - 1.0),
            100.0 * e.mfu
        );
        println!(
            "   plan tp {} pp {} vpp {} cp {} ep {} dp {} micro-batch {} x {} recompute {:?} zero {}",
            p.tp, p.pp, p.vpp, p.cp, p.ep, p.dp, p.micro_batch, e.micro_batches, p.recompute, p.zero_stage
        );
        for (_, name, v) in e.breakdown.parts() {
            if v != 0.0 {
                println!("   {name:>18}: {v:.3}");
            }
        }
        for n in notes {
            println!("   note: {n}");
        }
        if ops {
            print_ops(case, cat, p)?;
        }
    }
    Ok(())
}

/// One layer's ops, forward and backward milliseconds each, and their sums.
fn print_ops(
    case: &myriad_scenario::validation::ValidationCase,
    cat: &myriad_catalog::Catalog,
    plan: &myriad_train::Plan,
) -> Result<(), String> {
    let model = myriad_train::validate::case_model(case, cat)?;
    let acc = cat
        .accelerator(&case.system.accelerator)
        .map_err(|e| e.message())?;
    let layer = (0..model.layers)
        .find(|&i| model.is_moe_layer(i))
        .unwrap_or(0);
    let mut list = Vec::new();
    model.layer_ops(layer, &plan.shard(), &mut list);
    println!("   ops of layer {layer}, one micro-batch (ms, forward / backward):");
    let (mut tf, mut tb) = (0.0, 0.0);
    for op in &list {
        let (f, b) = myriad_train::step::op_times(acc, plan.precision, std::slice::from_ref(op));
        tf += f;
        tb += b;
        println!(
            "   {:>24}: {:8.3} {:8.3}  {:?}",
            op.name,
            1e3 * f,
            1e3 * b,
            op.kind
        );
    }
    println!("   {:>24}: {:8.3} {:8.3}", "sum", 1e3 * tf, 1e3 * tb);
    Ok(())
}
