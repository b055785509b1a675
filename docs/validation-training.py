#!/usr/bin/env python3
"""Regenerates docs/validation-training.md from `myriad validate --json`.

Run from the repository root: python3 docs/validation-training.py
"""
import json
import subprocess

FILE = "../shared/validation/training-public.json"
out = subprocess.run(
    ["cargo", "run", "--release", "-q", "--", "validate", FILE, "--json"],
    check=True, capture_output=True, text=True,
).stdout
d = json.loads(out)
lines = [
    "# Training validation: every case of `../shared/validation/training-public.json`",
    "",
    "Generated with `python3 docs/validation-training.py` (runs `myriad validate "
    "../shared/validation/training-public.json --json`; error = predicted / measured - 1).",
    "Rows marked *superseded* repeat a benchmark under an older software release; they count "
    "in the mean but not in the worst case.",
    "",
    "| id | predicted s | measured s | error | MFU | note |",
    "|---|---:|---:|---:|---:|---|",
]
for c in d["cases"]:
    if c.get("error") is None:
        lines.append(f"| {c['id']} | - | {c['measured_step_time_s']:.3f} | failed | - | {c.get('failure') or ''} |")
        continue
    note = "superseded" if c.get("superseded") else ""
    lines.append(
        f"| {c['id']} | {c['predicted_step_time_s']:.3f} | {c['measured_step_time_s']:.3f} | "
        f"{100 * c['error']:+.1f}% | {100 * c['mfu']:.1f}% | {note} |"
    )
s = d["summary"]
lines += [
    "",
    f"Summary: {s['count']} cases, mean |error| {100 * s['mae']:.1f}%, median "
    f"{100 * s['median_abs_error']:.1f}%, worst current {100 * s['worst_abs_error']:.1f}% ({s['worst_id']}).",
    "",
]
open("docs/validation-training.md", "w").write("\n".join(lines))
