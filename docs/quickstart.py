#!/usr/bin/env python3
"""Refreshes the README's quickstart output from the commands themselves.

Each line shown under a `$ cargo run --release -- ARGS` command in a ```text block is replaced
by the line the command prints now that starts the same way (its label: the text before the
first number), so the README keeps showing real output. A line with no such match is left as
it is and reported. `crates/myriad-cli/tests/readme.rs` checks the result.

Run from the repository root after `cargo build --release`: python3 docs/quickstart.py
"""
import re
import subprocess
import sys

README = "README.md"
BIN = "./target/release/myriad"


def label(line):
    """What identifies a line: a table row's first cell, else the text before its first
    digit."""
    if line.startswith("|"):
        return "|" + line.split("|")[1].strip()
    m = re.search(r"\d", line)
    return (line[: m.start()] if m else line).rstrip()


def main():
    lines = open(README).read().split("\n")
    in_text, args, printed = False, None, []
    unmatched = []
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_text, args = line == "```text", None
            continue
        if not in_text:
            continue
        if line.startswith("$ cargo run --release -- "):
            cmd = line[len("$ cargo run --release -- "):].split("#")[0].split()
            args = None if "--report" in cmd else cmd
            printed = []
            if args:
                out = subprocess.run([BIN] + args, capture_output=True, text=True, check=True)
                printed = [p.rstrip() for p in out.stdout.split("\n")]
            continue
        if line.startswith("$ "):
            args = None
            continue
        if not args or not line.strip() or line.strip() == "..." or line in printed:
            continue
        if line.startswith("space ") and "configurations/s" in line:
            continue  # wall-clock figures of the machine that ran it: refreshed by hand
        key = label(line)
        same = [p for p in printed if label(p) == key]
        if len(same) == 1:
            lines[i] = same[0]
        else:
            unmatched.append(f"{' '.join(args)}: {line}")
    open(README, "w").write("\n".join(lines))
    for u in unmatched:
        print("not refreshed:", u, file=sys.stderr)


if __name__ == "__main__":
    main()
