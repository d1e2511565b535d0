#!/usr/bin/env python3
"""Turns the JSON output of bench_convert, bench_integer or bench_block into the tables of
docs/performance.md.

    bench_convert --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
                  --benchmark_report_aggregates_only=true --benchmark_min_time=0.3 \
                  --benchmark_out=convert.json --benchmark_out_format=json
    python3 bench/report.py convert.json

Every figure is the median over the repetitions. Ratios are taken within the run: the AVX2 path
against the scalar path of the same kernel, and a kernel against the trivial loop of the same
size in the same binary: an encoding or a quantizer against float32 -> int8 (baseline/f32_to_i8),
a decoding or a dequantizer against int8 -> float32 (baseline/i8_to_f32). Where the run has an
avx512 path, a second table quotes each kernel's AVX-512 path against its AVX2 path and against the
AVX-512 trivial loops (baseline/f32_to_i8_avx512, baseline/i8_to_f32_avx512); the input
distribution rows of the avx512 path are quoted against the AVX-512 loop too.

bench_convert gives one row per kernel and size (names convert/<kernel>/<isa>/<n>), and for the
encoders on every input distribution one row per kernel and size with a column per distribution
(inputs/<kernel>/<distribution>/<isa>/<n>); the scheme benchmarks (integer/..., block/...) one row
per kernel with the cache and DRAM sizes side by side.
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


def split(m, prefix):
    """{(kernel, n): {isa: (items/s, bytes/s)}} for the names prefix/<kernel>/<isa>/<n>."""
    kernels = defaultdict(dict)
    for k, v in m.items():
        if not k.startswith(prefix + "/"):
            continue
        parts = k.split("/")
        kernels[("/".join(parts[1:-2]), int(parts[-1]))][parts[-2]] = v
    return kernels


def ratio(a, b, fmt):
    return fmt % (a / b) if a and b else "-"


def baselines(m, sizes):
    print("| baseline | elements | G elem/s | GB/s |")
    print("|---|---:|---:|---:|")
    for n in sizes:
        for b in ("memcpy", "sum_f32", "f32_to_i8", "i8_to_f32", "f32_to_i8_avx512", "i8_to_f32_avx512"):
            key = "baseline/%s/%d" % (b, n)
            if key in m:
                print("| %s | %d | %.2f | %.1f |" % (b, n, m[key][0] / 1e9, m[key][1] / 1e9))
    print()


def convert_table(m, sizes):
    kernels = split(m, "convert")
    is_decode = is_conversion_decode
    print("| kernel | elements | scalar G elem/s | AVX2 G elem/s | AVX2 GB/s | AVX2 / scalar | AVX2 / trivial loop |")
    print("|---|---:|---:|---:|---:|---:|---:|")
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
                kernel, n, scalar[0] / 1e9, avx2[0] / 1e9, avx2[1] / 1e9, ratio(avx2[0], scalar[0], "%.0fx"),
                ratio(100 * avx2[0], base, "%.0f%%"), "(i8->f32)" if decode else "(f32->i8)"))


def is_conversion_decode(kernel):
    return kernel.endswith("->f32") or kernel.split("->")[0] not in ("f32", "f16", "bf16")


def avx512_table(m, prefix, sizes, is_decode):
    """Each kernel's AVX-512 path against its AVX2 path and the AVX-512 trivial loops (a decoder or
    dequantizer against int8 -> float32, everything else against float32 -> int8)."""
    kernels = split(m, prefix)
    if not any("avx512" in r for r in kernels.values()):
        return
    print()
    print("| kernel | elements | AVX2 G elem/s | AVX-512 G elem/s | AVX-512 / AVX2 | AVX-512 / AVX-512 trivial loop |")
    print("|---|---:|---:|---:|---:|---:|")
    names = dict.fromkeys(name for name, _ in kernels)
    order = sorted(names, key=lambda k: (is_decode(k), k.split("->")[0] != "f32", k)) if prefix == "convert" else sorted(names)
    for n in sizes:
        for kernel in order:
            r = kernels.get((kernel, n))
            if not r or "avx512" not in r:
                continue
            loop = "i8_to_f32_avx512" if is_decode(kernel) else "f32_to_i8_avx512"
            base = m.get("baseline/%s/%d" % (loop, n), (0, 0))[0]
            a2, a5 = r.get("avx2", (0, 0))[0], r["avx512"][0]
            print("| %s | %d | %.2f | %.2f | %s | %s |" % (
                kernel, n, a2 / 1e9, a5 / 1e9, ratio(a5, a2, "%.2fx"), ratio(100 * a5, base, "%.0f%%")))


DISTRIBUTIONS = ("range", "unit", "weights", "tiny", "log_spread", "subnormal")


def inputs_table(m, sizes):
    """The encoders on every input distribution (names inputs/<kernel>/<distribution>/<isa>/<n>):
    G elem/s per distribution, the worst against the best, and the worst against f32->i8."""
    rows = defaultdict(dict)
    for k, v in m.items():
        if not k.startswith("inputs/"):
            continue
        parts = k.split("/")
        rows[("/".join(parts[1:-3]), parts[-2], int(parts[-1]))][parts[-3]] = v[0]
    print("| kernel | isa | elements | " + " | ".join(DISTRIBUTIONS) + " | worst / best | worst / trivial loop |")
    print("|---|---|---:|" + "---:|" * len(DISTRIBUTIONS) + "---:|---:|")
    for n in sizes:
        for (kernel, isa, size), r in sorted(rows.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
            if size != n:
                continue
            loop = "f32_to_i8_avx512" if isa == "avx512" else "f32_to_i8"
            base = m.get("baseline/%s/%d" % (loop, n), (0, 0))[0]
            values = [r.get(d, 0.0) for d in DISTRIBUTIONS]
            present = [x for x in values if x]
            worst, best = min(present), max(present)
            print("| %s | %s | %d | %s | %.0f%% | %s |" % (
                kernel, isa, n, " | ".join("%.2f" % (x / 1e9) if x else "-" for x in values), 100 * worst / best,
                ratio(100 * worst, base, "%.0f%%")))


def scheme_table(m, prefix, sizes):
    kernels = split(m, prefix)
    small, large = min(sizes), max(sizes)
    print("| kernel | scalar %d | AVX2 %d | AVX2 / scalar | vs loop | scalar %d | AVX2 %d | AVX2 / scalar | vs loop |"
          % (small, small, large, large))
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kernel in dict.fromkeys(name for name, _ in sorted(kernels)):
        cells = [kernel]
        dequant = "dequant" in kernel
        quant = not dequant and "quant" in kernel
        for n in (small, large):
            r = kernels.get((kernel, n), {})
            avx2, scalar = r.get("avx2", (0, 0))[0], r.get("scalar", (0, 0))[0]
            loop = m.get("baseline/%s/%d" % ("i8_to_f32" if dequant else "f32_to_i8", n), (0, 0))[0]
            cells += ["%.3f" % (scalar / 1e9) if scalar else "-", "%.2f" % (avx2 / 1e9) if avx2 else "-",
                      ratio(avx2, scalar, "%.1fx"), ratio(100 * avx2, loop, "%.0f%%") if quant or dequant else "-"]
        print("| " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    context, m = medians(sys.argv[1])
    sizes = sorted({int(k.rsplit("/", 1)[1]) for k in m})
    print("Machine: %s CPUs at %s MHz (as reported), %s" % (
        context.get("num_cpus", "?"), context.get("mhz_per_cpu", "?"), context.get("date", "")))
    print()
    baselines(m, sizes)
    prefixes = {k.split("/", 1)[0] for k in m} - {"baseline"}
    for prefix in sorted(prefixes):
        if prefix == "convert":
            convert_table(m, sizes)
            avx512_table(m, prefix, sizes, is_conversion_decode)
        elif prefix == "inputs":
            inputs_table(m, sizes)
        else:
            scheme_table(m, prefix, sizes)
            avx512_table(m, prefix, sizes, lambda kernel: "dequant" in kernel)
        print()


if __name__ == "__main__":
    main()
