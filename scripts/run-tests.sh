#!/usr/bin/env bash
# Builds lowbit with the `dev` preset and runs the full test suite, the
# exhaustive sweeps included. Works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/ensure-packages.sh
source scripts/ensure-packages.sh
ensure_packages cmake ninja-build g++ clang libgtest-dev libbenchmark-dev libfmt-dev nlohmann-json3-dev

# Use every core unless the caller says otherwise.
jobs="$(nproc 2>/dev/null || echo 2)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}"
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$jobs}"

cmake --workflow --preset dev
