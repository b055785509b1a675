#!/usr/bin/env python3
"""Refreshes the README's quickstart output (and the docs' examples) from the commands.

Each line shown under a `$ cargo run --release -- ARGS` or `$ myriad ARGS` command in a
```text block of README.md or docs/*.md is replaced
by the line the command prints now that starts the same way (its label: the text before the
first number), so the README keeps showing real output. A line with no such match is left as
it is and reported. `crates/myriad-cli/tests/readme.rs` checks the result.

Run from the repository root after `cargo build --release`: python3 docs/quickstart.py
"""
import glob
import os
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


PREFIXES = ("$ cargo run --release -- ", "$ myriad ")


def timed(line):
    """Wall-clock figures of the machine that ran it: refreshed by hand."""
    return (line.startswith("space ") and "configurations/s" in line) or (
        " policies in " in line and line.rstrip().endswith(" s"))


def main():
    for path in [README] + sorted(glob.glob("docs/*.md")):
        refresh(path)


def refresh(path):
    lines = open(path).read().split("\n")
    in_text, args, printed = False, None, []
    unmatched = []
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_text, args = line == "```text", None
            continue
        if not in_text:
            continue
        prefix = next((p for p in PREFIXES if line.startswith(p)), None)
        if prefix:
            cmd = line[len(prefix):].split("#")[0].split()
            # Reports write files; error illustrations name files not in the repository.
            missing = any(a.endswith((".yaml", ".json", ".csv")) and not os.path.exists(a)
                          for a in cmd)
            args = None if "--report" in cmd or missing else cmd
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
        if timed(line):
            continue
        key = label(line)
        same = [p for p in printed if label(p) == key]
        if len(same) > 1:
            # Rows of different tables share a first cell: keep the same table shape.
            same = [p for p in same if p.count("|") == line.count("|")]
        if len(same) == 1:
            lines[i] = same[0]
        else:
            unmatched.append(f"{' '.join(args)}: {line}")
    open(path, "w").write("\n".join(lines))
    for u in unmatched:
        print(f"{path}: not refreshed:", u, file=sys.stderr)


if __name__ == "__main__":
    main()
