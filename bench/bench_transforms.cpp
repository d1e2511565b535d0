// lowbit benchmarks: SmoothQuant's alpha search and AWQ's scale and clip search
// (transforms/smoothquant.hpp, transforms/awq.hpp), single-threaded unless the name says
// threads:2.
//
//   transforms/smoothquant/<out>x<in>/t<tokens>/a21   smoothquant_search, 21 alphas, W8A8 per token
//   transforms/awq/<out>x<in>/t<tokens>/g128/<clip|noclip>   awq_quantize, W4 g128 (20 ratios)
//
// Counters: mult_GF, the multiply flops of the call (SmoothQuant: 23 products tokens x out x in,
// the reference, the unsmoothed score and 21 alphas; AWQ: 22 for the reference, the 20 ratios (the
// first is round to nearest) and the result, plus 10 clip candidates over the sampled rows, as
// 32 products of k = 128); gemm_GFLOPS, the multiply's measured
// rate at 1024 on the same thread count; gemm_fraction, the time those flops take at that rate over
// the call's time (1 = nothing but multiplies at full speed; the rest is quantize-dequantize
// passes, elementwise scaling, and the clip search's per-group products of k = 128, which run
// below the multiply's rate at k = 1024); mult_s and mult_fraction, the same with each product
// timed at its own shape right after the call (see report_products). Inputs: activations with a few outlier / salient
// channels, weights normal. bench/transforms_reference.py times the same searches in PyTorch.
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

// Seconds one product X[:, c0:c0+k] W[:, c0:c0+k]^T of the search takes (tokens x out x k, the
// call's own shape, strides and thread count): the fastest of 3 after a warm-up, measured right
// after the search so that the machine's load is about the same.
double product_seconds(const layer_data& d, std::size_t k, const lowbit::linalg_exec& exec) {
  std::vector<float> y(d.tokens * d.out);
  lowbit::gemm_options nt;
  nt.op_b = lowbit::matrix_op::transpose;
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)lowbit::gemm(d.x.data(), d.in, d.w.data(), d.in, d.tokens, d.out, k, nt, y.data(), d.out, exec);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0 && s < best) best = s;
  }
  return best;
}

// mult_s: the seconds the call's products take at their own shapes' measured speed (k = in, and
// for AWQ's clip search k = 128); mult_fraction: mult_s over the call's time.
void report_products(benchmark::State& state, double seconds, double full, double groups,
                     const layer_data& d, const lowbit::linalg_exec& exec) {
  double s = full * product_seconds(d, d.in, exec);
  if (groups > 0.0) s += groups * product_seconds(d, 128, exec);
  state.counters["mult_s"] = s;
  state.counters["mult_fraction"] = s / seconds;
}

void BM_smoothquant(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)), tokens = static_cast<std::size_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const layer_data& d = layer(n, n, tokens);
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  const lowbit::linear_weight lw{d.w.data(), n};
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = lowbit::smoothquant_search(d.x.data(), d.amax.data(), lowbit::span<const lowbit::linear_weight>(&lw, 1),
                                        tokens, n, {}, exec);
    if (!r.ok()) state.SkipWithError(r.status.message());
    benchmark::DoNotOptimize(r.value.alpha);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  report(state, 23.0 * 2.0 * static_cast<double>(tokens) * n * n, threads);
  report_products(state, seconds, 23.0, 0.0, d, exec);
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
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = lowbit::awq_quantize(d.x.data(), d.mean.data(), lowbit::span<const lowbit::linear_weight>(&lw, 1), tokens, n,
                                  lowbit::int_presets::awq(4, 128), o, exec);
    if (!r.ok()) state.SkipWithError(r.status.message());
    benchmark::DoNotOptimize(r.value.error);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  report(state, (22.0 + (clip ? 10.0 : 0.0)) * 2.0 * static_cast<double>(tokens) * n * n, threads);
  report_products(state, seconds, 22.0, clip ? 10.0 * static_cast<double>(n / 128) : 0.0, d, exec);
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
