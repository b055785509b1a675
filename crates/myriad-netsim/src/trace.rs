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
    let mut out = String::with_capacity(128 + res.trace.len() * 160);
    out.push_str("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"myriad-netsim\"");
    if res.trace_truncated {
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
    for (p, prog) in programs.iter().enumerate() {
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"{}\"}}}}",
            p + 1,
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
            p + 1
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
                s.program + 1,
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
                s.program + 1,
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
    out.push_str("\n]}\n");
    out
}
