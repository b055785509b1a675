//! Chrome / Perfetto trace (the JSON "trace event" format, viewable in chrome://tracing
//! or ui.perfetto.dev): one process per program, one track (thread) per source rank, one
//! complete (`X`) slice per flow from its start to its arrival, and one slice per rank for
//! steps advanced in steady state. Timestamps in microseconds with nanosecond decimals;
//! the same result always gives the same bytes.

use std::fmt::Write;

use crate::engine::SimResult;
use crate::program::Program;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// The trace of a simulation run with `SimOptions::trace`.
pub fn chrome_trace(res: &SimResult, programs: &[Program]) -> String {
    chrome_trace_parts(&[], &[(res, programs)])
}

/// One trace of several simulations (each with its programs) and, first, a `timeline` of
/// named consecutive phases (seconds) in a process of its own: a training step's
/// breakdown above the collectives that were simulated for it. Each simulation's programs
/// get their own processes, numbered after the previous simulation's.
pub fn chrome_trace_parts(
    timeline: &[(String, f64)],
    parts: &[(&SimResult, &[Program])],
) -> String {
    let mut out = String::with_capacity(
        128 + parts
            .iter()
            .map(|(r, _)| r.trace.len() * 160)
            .sum::<usize>(),
    );
    out.push_str("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"myriad-netsim\"");
    if parts.iter().any(|(r, _)| r.trace_truncated) {
        out.push_str(",\"truncated\":true");
    }
    out.push_str("},\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
    };
    let mut base = 0u32;
    if !timeline.is_empty() {
        base = 1;
        sep(&mut out);
        out.push_str("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"step (model timeline)\"}}");
        let mut t = 0.0;
        for (name, d) in timeline {
            if *d <= 0.0 {
                continue;
            }
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":{:.3},\"dur\":{:.3},\"name\":\"{}\",\"cat\":\"step\"}}",
                t * 1e6,
                d * 1e6,
                esc(name)
            );
            t += d;
        }
    }
    for (res, programs) in parts {
        for (p, prog) in programs.iter().enumerate() {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"{}\"}}}}",
                base + p as u32 + 1,
                esc(&prog.name)
            );
        }
        let mut tracks: Vec<(u32, u32)> = res.trace.iter().map(|s| (s.program, s.src)).collect();
        tracks.sort_unstable();
        tracks.dedup();
        for (p, src) in tracks {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"pid\":{},\"tid\":{src},\"name\":\"thread_name\",\"args\":{{\"name\":\"rank {src}\"}}}}",
                base + p + 1
            );
        }
        for s in &res.trace {
            sep(&mut out);
            let ts = s.start_s * 1e6;
            let dur = (s.end_s - s.start_s).max(0.0) * 1e6;
            if s.steps > 1 || s.weight == 0 {
                let _ = write!(
                    out,
                    "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{ts:.3},\"dur\":{dur:.3},\"name\":\"{} {}-{} (steady state)\",\"cat\":\"steady\",\"args\":{{\"phase\":{},\"steps\":{}}}}}",
                    base + s.program + 1,
                    s.src,
                    s.label,
                    s.step,
                    s.step + s.steps - 1,
                    s.phase,
                    s.steps
                );
            } else {
                let _ = write!(
                    out,
                    "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{ts:.3},\"dur\":{dur:.3},\"name\":\"{} {} -> {}\",\"cat\":\"flow\",\"args\":{{\"phase\":{},\"dst\":{},\"bytes\":{:.0},\"weight\":{}}}}}",
                    base + s.program + 1,
                    s.src,
                    s.label,
                    s.step,
                    s.dst,
                    s.phase,
                    s.dst,
                    s.bytes,
                    s.weight
                );
            }
        }
        base += programs.len() as u32;
    }
    out.push_str("\n]}\n");
    out
}
