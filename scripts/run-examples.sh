#!/usr/bin/env bash
# The main job: builds the examples with the `examples` preset and runs every one. The lesson_*
# examples reproduce the numbers of the lesson (docs/lesson.md) and run with --check, so the script
# fails when a number leaves its tolerance; the last line sums them all up. Works from any
# directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/ensure-packages.sh
source scripts/ensure-packages.sh
ensure_packages cmake ninja-build g++ libfmt-dev

jobs="$(nproc 2>/dev/null || echo 2)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}"

cmake --workflow --preset examples

bin="$root/build/examples/examples"

# The format tables first (no lesson numbers: every code of two formats and its exact value).
for format in e4m3fn e2m1fn; do
  echo
  echo "==> format_table ${format}"
  "$bin/format_table" "$format"
done

# Then the lesson, in its order. Each prints its table and one "lesson-numbers:" line.
lessons=(formats overhead block_scaling smoothquant roofline serving smoothing_grid gptq kivi evaluation)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
failed=0
for name in "${lessons[@]}"; do
  echo
  echo "==> lesson_${name} --check"
  "$bin/lesson_${name}" --check | tee -a "$log" || failed=1
done

# One line for all of them: how many of the lesson's numbers came out, and how. Each example's
# line reads "lesson-numbers: N checked, E exact, W within tolerance, K from constructed inputs,
# O outside; tolerances: T..." (examples/lesson/report.hpp).
awk '/^lesson-numbers:/ {
    n += 1; c += $2; e += $4; w += $6; k += $9; o += $13
    for (i = 16; i <= NF; i++) tol[$i] += 1
  }
  END {
    list = ""
    for (t in tol) list = list (list == "" ? "" : ", ") "+-" t " (" tol[t] ")"
    printf "\nThe lesson: %d numbers checked by %d examples: %d exact to the digits the lesson prints, %d within a stated tolerance [%s], %d from constructed inputs (docs/lesson.md says which and why); %d outside.\n", c, n, e, w, list, k, o
  }' "$log"
exit "$failed"
