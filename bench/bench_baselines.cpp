// lowbit benchmarks: only the machine's ceilings (memcpy, a read-only AVX2 sum, the trivial
// float32 <-> int8 loops), for a quick look at the machine. Every other bench_*.cpp includes
// baselines.hpp too, so its ratios come from the same run.
#include "baselines.hpp"

BENCHMARK_MAIN();
