#!/usr/bin/env bash
# Regenerates the report screenshots shown in the README (docs/report-*.png): each report
# kind written by the CLI on a built-in example, rendered by headless Chromium.
# Run from the repository root: bash docs/screenshots.sh
set -euo pipefail
cargo build --release -q
out=$(mktemp -d)
shot() {
  local kind=$1; shift
  ./target/release/myriad "$@" --report "$out/$kind.html" >/dev/null 2>&1
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,"$H" \
    --screenshot="docs/report-$kind.png" "file://$out/$kind.html" >/dev/null 2>&1
  echo "docs/report-$kind.png"
}
H=1750 shot cluster cluster examples/dgx-superpod-h100.yaml
H=1650 shot train train examples/dgx-superpod-h100.yaml
H=1250 shot search search examples/dgx-superpod-h100.yaml --top 8
H=1300 shot plan plan examples/plan-llama3-70b.yaml
H=1900 shot reliability reliability examples/reliability-llama3.yaml --days 54 --replicas 200
H=1700 shot serve serve examples/serve-llama3-70b-h100.yaml
H=1650 shot sched sched examples/sched-nvl72-mixed.yaml
rm -rf "$out"
