#!/usr/bin/env bash
# What including lowbit costs a translation unit: for g++ and clang++ at -O2 -std=c++17, the
# median of 3 compile times (-c, to an object file; CPU time of the compiler, user + sys, which
# is its wall time on an idle core and does not depend on what else the machine runs) and the
# preprocessed line count (non-blank lines of -E -P) of
#   - a TU that includes one public header and nothing else, for every public header;
#   - a TU that calls one convert (float -> float8_e4m3fn) through lowbit/convert.hpp, and one
#     through the umbrella lowbit/lowbit.hpp;
#   - an empty TU (the floor every row pays).
# Prints a Markdown table (docs/performance.md, "Compile time").
#
#   bash bench/compile_time/compile_time.sh [--all] [--runs N] [--compilers "g++ clang++"]
#
# --all adds the internal headers (kernels/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
runs=3
all=0
compilers="g++ clang++"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --all) all=1 ;;
    --runs) runs="$2"; shift ;;
    --compilers) compilers="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The TUs: name, then source.
names=()
add_tu() {
  names+=("$1")
  printf '%s\n' "$2" > "$work/tu_${#names[@]}.cpp"
}
add_tu "(empty TU)" "int lowbit_compile_time_probe;"
while IFS= read -r header; do
  case "$header" in
    lowbit/kernels/*) [ "$all" -eq 1 ] || continue ;;
    lowbit/fmt.hpp) [ -f /usr/include/fmt/format.h ] || continue ;;
  esac
  add_tu "$header" "#include <$header>"
done < <(cd "$root/include" && find lowbit -name '*.hpp' | LC_ALL=C sort)
call_one='void lowbit_probe(const float* x, lowbit::float8_e4m3fn* q, std::size_t n) { lowbit::convert(x, q, n); }'
add_tu "one convert call, lowbit/convert.hpp" "#include <lowbit/convert.hpp>
$call_one"
add_tu "one convert call, lowbit/lowbit.hpp" "#include <lowbit/lowbit.hpp>
$call_one"

# CPU seconds (user + sys) of one compile, in milliseconds.
cpu_ms() {
  local t
  t=$( { TIMEFORMAT='%3U %3S'; time "$@" 2>/dev/null; } 2>&1 )
  awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%d", (a[1] + a[2]) * 1000 }'
}

median() {
  LC_ALL=C sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

declare -A seconds lines
for cxx in $compilers; do
  command -v "$cxx" >/dev/null || { echo "no $cxx, skipped" >&2; continue; }
  for i in $(seq 1 "${#names[@]}"); do
    src="$work/tu_$i.cpp"
    flags=(-std=c++17 -O2 -I "$root/include")
    lines[$cxx,$i]=$("$cxx" "${flags[@]}" -E -P "$src" | grep -cv '^[[:space:]]*$' || true)
    times=()
    for _ in $(seq 1 "$runs"); do
      times+=("$(cpu_ms "$cxx" "${flags[@]}" -c "$src" -o "$work/out.o")")
    done
    ms=$(printf '%s\n' "${times[@]}" | median)
    seconds[$cxx,$i]=$(awk -v ms="$ms" 'BEGIN { printf "%.2f", ms / 1000 }')
    echo "$cxx ${names[$((i - 1))]}: ${seconds[$cxx,$i]} s, ${lines[$cxx,$i]} lines" >&2
  done
done

# The table: one row per TU, time and lines per compiler.
header="| TU |"
rule="|---|"
for cxx in $compilers; do
  header+=" $cxx -O2 (CPU s) | lines |"
  rule+="---:|---:|"
done
echo "$header"
echo "$rule"
for i in $(seq 1 "${#names[@]}"); do
  row="| \`${names[$((i - 1))]}\` |"
  case "${names[$((i - 1))]}" in "("*|one*) row="| ${names[$((i - 1))]} |" ;; esac
  for cxx in $compilers; do
    row+=" ${seconds[$cxx,$i]:-} | ${lines[$cxx,$i]:-} |"
  done
  echo "$row"
done
