#!/usr/bin/env python3
r"""Compares two runs of the same benchmark binary (before and after a change), kernel by kernel.

    bench_integer --benchmark_filter='avx2/16384|baseline/.*/16384' --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true --benchmark_out=before.json --benchmark_out_format=json
    ... the same with the changed build into after.json ...
    python3 bench/compare.py before.json after.json

The machine is shared and its speed drifts between runs, so each figure is first divided by the
same run's baseline/memcpy of the same size (the machine's copy speed at that moment); the
column "after/before" is the ratio of those normalised figures, and 1.00 means no change. Rows
whose ratio is below 0.95 are marked.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/report.py: the same median rule)


def medians(path):
    """{name: items per second}: the medians of a run (report.medians without the bytes)."""
    return {name: v[0] for name, v in report.medians(path)[1].items()}


def normalised(m):
    out = {}
    for name, v in m.items():
        size = name.rsplit("/", 1)[-1]
        base = m.get("baseline/memcpy/" + size)
        if base:
            out[name] = v / base
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = medians(sys.argv[1]), medians(sys.argv[2])
    nb, na = normalised(before), normalised(after)
    print("| kernel | before (G el/s) | after (G el/s) | after/before (vs memcpy) |")
    print("|---|---:|---:|---:|")
    worst = None
    for name in sorted(set(nb) & set(na)):
        if name.startswith("baseline/memcpy"):
            continue
        r = na[name] / nb[name] if nb[name] else float("nan")
        worst = r if worst is None or r < worst else worst
        mark = " **slower**" if r < 0.95 else ""
        print(f"| {name} | {before[name] / 1e9:.2f} | {after[name] / 1e9:.2f} | {r:.2f}{mark} |")
    missing = sorted(set(before) ^ set(after))
    if missing:
        print("\nonly in one run: " + ", ".join(missing))
    if worst is not None:
        print(f"\nworst ratio: {worst:.2f}")


if __name__ == "__main__":
    main()
