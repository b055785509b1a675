//! Prints the plan, breakdown and filled-in settings the validator uses for every case of a
//! myriad-validation/1 file whose id contains a pattern: what `myriad validate` predicts,
//! taken apart.
//!
//! `cargo run --release -p myriad-train --example explain -- FILE [PATTERN]`
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: explain FILE [PATTERN]")?;
    let pat = args.get(2).map(String::as_str).unwrap_or("");
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
    }
    Ok(())
}
