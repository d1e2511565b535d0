#!/usr/bin/env python3
"""Turns bench_convert's JSON output into the tables of docs/performance.md.

    bench_convert --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
                  --benchmark_out=convert.json --benchmark_out_format=json
    python3 bench/convert_report.py convert.json

Every figure is the median over the repetitions. Ratios are taken within the run: an encoding
against the trivial float32 -> int8 loop (baseline/f32_to_i8) of the same size, a decoding
(names ending in ->f32, ->f16, ->bf16) against the trivial int8 -> float32 loop, and the AVX2
path against the scalar path of the same kernel.
"""
import json
import sys
from collections import defaultdict


def medians(path):
    with open(path) as f:
        data = json.load(f)
    out = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "iteration" and name in out:
            continue  # without aggregates: keep the first run
        out[name] = (b.get("items_per_second", 0.0), b.get("bytes_per_second", 0.0))
    return data.get("context", {}), out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    context, m = medians(sys.argv[1])
    sizes = sorted({int(k.rsplit("/", 1)[1]) for k in m})
    print("Machine: %s CPUs at %s MHz (as reported), %s" % (
        context.get("num_cpus", "?"), context.get("mhz_per_cpu", "?"), context.get("date", "")))
    print()
    print("| baseline | elements | G elem/s | GB/s |")
    print("|---|---:|---:|---:|")
    for n in sizes:
        for b in ("memcpy", "sum_f32", "f32_to_i8", "i8_to_f32"):
            key = "baseline/%s/%d" % (b, n)
            if key in m:
                print("| %s | %d | %.2f | %.1f |" % (b, n, m[key][0] / 1e9, m[key][1] / 1e9))
    print()
    kernels = defaultdict(dict)
    for k, v in m.items():
        if not k.startswith("convert/"):
            continue
        parts = k.split("/")
        n = int(parts[-1])
        isa = parts[-2]
        kernel = "/".join(parts[1:-2])
        kernels[(kernel, n)][isa] = v
    print("| kernel | elements | scalar G elem/s | AVX2 G elem/s | AVX2 GB/s | AVX2 / scalar | AVX2 / trivial loop |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    def is_decode(kernel):
        return kernel.endswith("->f32") or kernel.split("->")[0] not in ("f32", "f16", "bf16")

    # Encodings first, then decodings; within each, by source then destination.
    order = sorted(dict.fromkeys(name for name, _ in kernels), key=lambda k: (is_decode(k), k.split("->")[0] != "f32", k))
    for n in sizes:
        for kernel in order:
            r = kernels.get((kernel, n))
            if not r or "avx2" not in r:
                continue
            decode = is_decode(kernel)
            base = m.get("baseline/%s/%d" % ("i8_to_f32" if decode else "f32_to_i8", n), (0, 0))[0]
            avx2, scalar = r["avx2"], r.get("scalar", (0, 0))
            print("| %s | %d | %.3f | %.2f | %.1f | %s | %s %s |" % (
                kernel, n, scalar[0] / 1e9, avx2[0] / 1e9, avx2[1] / 1e9,
                ("%.0fx" % (avx2[0] / scalar[0])) if scalar[0] else "-",
                ("%.0f%%" % (100 * avx2[0] / base)) if base else "-",
                "(i8->f32)" if decode else "(f32->i8)"))


if __name__ == "__main__":
    main()
