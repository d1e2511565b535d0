// lowbit benchmarks: SmoothQuant's alpha search and AWQ's scale and clip search
// (transforms/smoothquant.hpp, transforms/awq.hpp), single-threaded unless the name says
// threads:2.
//
//   transforms/smoothquant/<out>x<in>/t<tokens>/a21   smoothquant_search, 21 alphas, W8A8 per token
//   transforms/awq/<out>x<in>/t<tokens>/g128/<clip|noclip>   awq_quantize, W4 g128 (20 ratios)
//
// Counters: mult_GF, the multiply flops of the call (SmoothQuant: 22 products tokens x out x in,
// the reference and 21 alphas plus the unsmoothed score; AWQ: 22 for RTN, the 20 ratios and the
// result, plus 10 clip candidates over the sampled rows); gemm_GFLOPS, the multiply's measured
// rate at 1024 on the same thread count; gemm_fraction, the time those flops take at that rate over
// the call's time (1 = nothing but multiplies at full speed; the rest is quantize-dequantize
// passes, elementwise scaling and the clip search's small per-group products). Inputs: activations with a few outlier / salient channels, weights normal.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <lowbit/linalg.hpp>
#include <lowbit/linalg/std_thread_exec.hpp>
#include <lowbit/transforms.hpp>

#include "gemm_rate.hpp"

namespace {

struct layer_data {
  std::size_t out = 0, in = 0, tokens = 0;
  std::vector<float> x, w, amax, mean;
};

const layer_data& layer(std::size_t out, std::size_t in, std::size_t tokens) {
  static layer_data d;
  if (d.out == out && d.in == in && d.tokens == tokens) return d;
  d.out = out;
  d.in = in;
  d.tokens = tokens;
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  d.x.resize(tokens * in);
  d.w.resize(out * in);
  for (float& v : d.x) v = nd(gen);
  for (float& v : d.w) v = 0.02f * nd(gen);
  for (std::size_t j = 0; j < in; j += 97)  // about 1 % outlier channels
    for (std::size_t t = 0; t < tokens; ++t) d.x[t * in + j] *= 30.0f;
  auto st = lowbit::activation_stats::create(in);
  d.amax.assign(in, 0.0f);
  d.mean.assign(in, 0.0f);
  if (st.ok() && st.value.add(d.x.data(), tokens, in).ok()) {
    (void)st.value.max_abs(lowbit::span<float>(d.amax));
    (void)st.value.mean_abs(lowbit::span<float>(d.mean));
  }
  return d;
}

void report(benchmark::State& state, double flops, int threads) {
  const double rate = lowbit_bench::gemm_rate(threads);
  state.counters["mult_GF"] = flops * 1e-9;
  state.counters["gemm_GFLOPS"] = rate;
  state.counters["gemm_fraction"] = benchmark::Counter(flops * 1e-9 / rate, benchmark::Counter::kAvgIterationsRate);
}

void BM_smoothquant(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)), tokens = static_cast<std::size_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const layer_data& d = layer(n, n, tokens);
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  const lowbit::linear_weight lw{d.w.data(), n};
  for (auto _ : state) {
    auto r = lowbit::smoothquant_search(d.x.data(), d.amax.data(), lowbit::span<const lowbit::linear_weight>(&lw, 1),
                                        tokens, n, {}, exec);
    if (!r.ok()) state.SkipWithError(r.status.message());
    benchmark::DoNotOptimize(r.value.alpha);
  }
  report(state, 23.0 * 2.0 * static_cast<double>(tokens) * n * n, threads);
}

void BM_awq(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)), tokens = static_cast<std::size_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const bool clip = state.range(3) != 0;
  const layer_data& d = layer(n, n, tokens);
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  const lowbit::linear_weight lw{d.w.data(), n};
  lowbit::awq_options o;
  o.clip = clip;
  for (auto _ : state) {
    auto r = lowbit::awq_quantize(d.x.data(), d.mean.data(), lowbit::span<const lowbit::linear_weight>(&lw, 1), tokens, n,
                                  lowbit::int_presets::awq(4, 128), o, exec);
    if (!r.ok()) state.SkipWithError(r.status.message());
    benchmark::DoNotOptimize(r.value.error);
  }
  report(state, (23.0 + (clip ? 10.0 : 0.0)) * 2.0 * static_cast<double>(tokens) * n * n, threads);
}

void args_sq(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "tokens", "threads"});
  b->Args({4096, 512, 1})->Args({4096, 512, 2})->Args({1024, 512, 1});
  b->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
}

void args_awq(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "tokens", "threads", "clip"});
  b->Args({4096, 512, 1, 1})->Args({4096, 512, 2, 1})->Args({1024, 512, 1, 1})->Args({1024, 512, 1, 0});
  b->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
}

BENCHMARK(BM_smoothquant)->Apply(args_sq);
BENCHMARK(BM_awq)->Apply(args_awq);

}  // namespace

BENCHMARK_MAIN();
