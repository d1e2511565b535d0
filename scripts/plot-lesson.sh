#!/usr/bin/env bash
# Draws the lesson's plots: each docs/plots/NAME.gp reads docs/plots/NAME.csv and writes
# docs/plots/NAME.png. Builds and runs nothing else: the CSVs come from the examples, e.g.
#
#   build/examples/examples/lesson_smoothquant --csv docs/plots/smoothquant_alpha.csv
#
# Needs gnuplot (Debian: gnuplot-nox). Works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

command -v gnuplot >/dev/null || { echo "install gnuplot-nox (apt-get install -y gnuplot-nox)"; exit 1; }

for script in docs/plots/*.gp; do
  csv="${script%.gp}.csv"
  if [[ ! -f "$csv" ]]; then
    echo "missing $csv: run the example that writes it with --csv $csv" >&2
    exit 1
  fi
  gnuplot "$script"
  echo "wrote ${script%.gp}.png"
done
