//! Prints where one iteration's time goes for a serving scenario's instance (the decode
//! role when disaggregated), for a batch of given size on every attention rank:
//! `cargo run --release -p myriad-serve --example iteration -- SCENARIO SEQS_PER_RANK
//! CONTEXT [PROMPT_TOKENS_PER_RANK [PROMPT_RANKS]]` (prompts on every rank unless
//! PROMPT_RANKS says how many carry one).
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn num(a: &[String], i: usize, what: &str) -> Result<f64, String> {
    a.get(i)
        .ok_or(format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("{what}: expected a number"))
}

fn run() -> Result<(), String> {
    let a: Vec<String> = std::env::args().collect();
    let usage =
        "usage: iteration SCENARIO SEQS_PER_RANK CONTEXT [PROMPT_TOKENS_PER_RANK [PROMPT_RANKS]]";
    let path = a.get(1).ok_or(usage)?;
    let seqs = num(&a, 2, "SEQS_PER_RANK")?;
    let ctx = num(&a, 3, "CONTEXT")?;
    let prompt = if a.len() > 4 {
        num(&a, 4, "PROMPT_TOKENS_PER_RANK")?
    } else {
        0.0
    };
    let cat = myriad_catalog::catalog();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let s = myriad_scenario::parse_scenario(path, &text, cat).map_err(|e| e.to_string())?;
    let c = myriad_cluster::build(&s, cat).map_err(|e| e.to_string())?;
    let st = myriad_serve::setup(&s, &c, cat, None)?;
    let r = match &st.deployment {
        myriad_serve::Deployment::Aggregated(r) => r,
        myriad_serve::Deployment::Disaggregated { decode, .. } => &**decode,
    };
    let dp = r.model.par.attention_dp as f64;
    let ranks = if a.len() > 5 {
        num(&a, 5, "PROMPT_RANKS")?.clamp(1.0, dp)
    } else {
        dp
    };
    let b = myriad_serve::Batch {
        decode_seqs: seqs * dp,
        decode_ctx: seqs * dp * ctx,
        // Every sequence at the same context: no rank holds more than another.
        decode_ctx_sq: 0.0,
        decode_ctx_seqs: 0.0,
        prefill_tokens: prompt * ranks,
        prefill_pairs: prompt * ranks * prompt / 2.0,
        prefill_done: if prompt > 0.0 { ranks } else { 0.0 },
        prefill_seqs: if prompt > 0.0 { ranks } else { 0.0 },
        ..myriad_serve::Batch::default()
    };
    let t = r.model.iteration(&b);
    println!(
        "{seqs} sequences x {ctx} context on each of {dp} attention ranks (+ {prompt} prompt tokens on {ranks} of them):"
    );
    for (k, v) in [
        ("GEMMs", t.gemm_s),
        ("attention", t.attention_s),
        ("memory-bound", t.memory_s),
        ("communication", t.comm_s),
        ("overhead/host", t.overhead_s),
        ("iteration", t.total_s),
    ] {
        println!("  {k:>14}: {:8.3} ms", v * 1e3);
    }
    Ok(())
}
