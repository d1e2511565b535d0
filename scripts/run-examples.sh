#!/usr/bin/env bash
# Builds the examples with the `examples` preset and runs each one with the
# arguments listed below. Works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/ensure-packages.sh
source scripts/ensure-packages.sh
ensure_packages cmake ninja-build g++ libfmt-dev

# Each entry: an executable in examples/ (the file's stem) and its arguments.
runs=(
  "format_table e4m3fn"
  "format_table e2m1fn"
)

jobs="$(nproc 2>/dev/null || echo 2)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}"

cmake --workflow --preset examples

bin="$root/build/examples/examples"
for run in "${runs[@]}"; do
  read -r -a argv <<<"$run"
  echo
  echo "==> ${argv[*]}"
  "$bin/${argv[0]}" "${argv[@]:1}"
done
