#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz/fuzz_*.cpp) with the `fuzz` preset: clang++, libFuzzer,
# ASan + UBSan. Then runs each for a share of SECONDS (default 300) of wall time, two at a time
# on two cores, from a small seed corpus this script generates under build/fuzz/corpus.
#
#   bash scripts/run-fuzz.sh [SECONDS] [TARGET...]
#
# A crash stops nothing else; at the end every reproducer found is listed (path and hex) and
# the script fails. Replay one with: build/fuzz/tests/fuzz/fuzz_<family> <reproducer>.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

budget="${1:-300}"
shift || true

# shellcheck source=scripts/ensure-packages.sh
source scripts/ensure-packages.sh
# libclang-rt-dev holds libFuzzer and clang's sanitizer runtimes (only recommended by clang).
ensure_packages cmake ninja-build g++ clang libclang-rt-dev

jobs="$(nproc 2>/dev/null || echo 2)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}"
cmake --workflow --preset fuzz

bin="$root/build/fuzz/tests/fuzz"
work="$root/build/fuzz"
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in "$bin"/fuzz_*; do
    [ -x "$f" ] && targets+=("$(basename "$f")")
  done
fi
if [ "${#targets[@]}" -eq 0 ]; then
  echo "lowbit: no fuzz targets in $bin" >&2
  exit 1
fi

# Seed corpus: 24 small deterministic inputs per target (an LCG), plus the target's checked-in
# seeds in tests/fuzz/corpus/TARGET when it has some.
# Byte 0 of each walks the first choice a target makes (format, family, scheme).
# printf -v, not $(printf ...): a subshell per byte made this 19 s per target (8 targets: 2.5
# minutes of CI), where it now takes a tenth of a second; the files are the same bytes.
make_corpus() {
  local dir="$1" k i x bytes hex
  mkdir -p "$dir"
  for (( k = 0; k < 24; ++k )); do
    x=$(( k * 2654435761 + 12345 ))
    printf -v bytes '\\x%02x' "$k"
    for (( i = 1; i <= 16 + k * 24; ++i )); do
      x=$(( (x * 1103515245 + 12345) & 0x7fffffff ))
      printf -v hex '\\x%02x' $(( (x >> 16) & 255 ))
      bytes+="$hex"
    done
    printf "%b" "$bytes" > "$dir/seed-$k"
  done
}

parallel="${LOWBIT_FUZZ_PARALLEL:-$jobs}"
[ "$parallel" -ge 1 ] || parallel=1
# Each target gets budget * parallel / targets seconds of its own core.
per_target=$(( budget * parallel / ${#targets[@]} ))
[ "$per_target" -ge 5 ] || per_target=5
echo "lowbit: fuzzing ${#targets[@]} targets, ${per_target} s each, ${parallel} at a time"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

run_one() {
  local t="$1" corpus="$work/corpus/$1" artifacts="$work/artifacts/$1"
  rm -rf "$artifacts"
  mkdir -p "$artifacts"
  [ -n "$(ls -A "$corpus" 2>/dev/null)" ] || make_corpus "$corpus"
  # Checked-in seeds (tests/fuzz/corpus/TARGET: hand-made valid and malformed files) join them.
  if [ -d "$root/tests/fuzz/corpus/$t" ]; then
    cp -n "$root/tests/fuzz/corpus/$t"/* "$corpus"/ 2>/dev/null || true
  fi
  local start end cpu
  start=$(date +%s)
  # The CPU time (user + sys) of the fuzzer goes to $t.cpu.
  ( TIMEFORMAT='%U %S'
    time "$bin/$t" -max_total_time="$per_target" -timeout=60 -rss_limit_mb=4096 -max_len=8192 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" > "$work/$t.log" 2>&1 ) 2> "$work/$t.cpu" || true
  end=$(date +%s)
  cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$work/$t.cpu" 2>/dev/null || echo '?')
  local execs
  execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$' || echo '?')
  echo "$t: $(( end - start )) s wall, $cpu CPU-s, $execs inputs, corpus $(ls "$corpus" | wc -l) files"
}

mkdir -p "$work"
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$(( running + 1 ))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$(( running - 1 ))
  fi
done
wait

status=0
for t in "${targets[@]}"; do
  for a in "$work/artifacts/$t"/*; do
    [ -e "$a" ] || continue
    status=1
    echo
    echo "==> $t found $(basename "$a") ($(wc -c < "$a") bytes); log: $work/$t.log"
    od -An -v -tx1 "$a" | tr -d ' \n' | head -c 4096
    echo
    grep -m1 -B2 -A25 "ERROR\|fuzz check failed\|runtime error" "$work/$t.log" || true
  done
done
exit "$status"
