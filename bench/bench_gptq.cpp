// lowbit benchmarks: GPTQ (transforms/gptq.hpp) and the Hessian accumulator, single-threaded
// unless the name says threads:2, beside the multiply's measured rate in the same binary.
//
//   gptq/hessian/<tokens>x<in>                 hessian_accumulator::add (tokens in^2 flops)
//   gptq/<out>x<in>/g<G>/b<B>/<act|noact>/<err|noerr>
//       one GPTQ of a [out, in] weight, 4-bit, groups of G, blocks of B; err: with the report's
//       output errors (three more out x in x in multiplies)
//
// Counters: mult_GF, the multiply flops GPTQ does (Cholesky in^3/3, triangular inverse in^3/3,
// lazy updates ~out in^2, report 2 * 3 * out in^2); gemm_GFLOPS, the
// multiply's measured rate at 1024 (same thread count); ratio, GPTQ's time over the time those
// flops take at that rate (1 = nothing but multiplies at full speed). Inputs: activations from
// a few shared factors plus noise (2048 tokens), weights normal.
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

std::vector<float> activations(std::size_t tokens, std::size_t in, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  constexpr std::size_t factors = 16;
  std::vector<float> mix(factors * in);
  for (float& v : mix) v = d(gen);
  std::vector<float> x(tokens * in);
  for (std::size_t t = 0; t < tokens; ++t) {
    float lat[factors];
    for (float& v : lat) v = d(gen);
    for (std::size_t c = 0; c < in; ++c) {
      float v = 0.5f * d(gen);
      for (std::size_t f = 0; f < factors; ++f) v += lat[f] * mix[f * in + c];
      x[t * in + c] = v;
    }
  }
  return x;
}

struct layer_data {
  std::size_t out = 0, in = 0;
  std::vector<float> w, h;
};

const layer_data& layer(std::size_t out, std::size_t in) {
  static layer_data cached;
  if (cached.out == out && cached.in == in) return cached;
  cached.out = out;
  cached.in = in;
  const std::size_t tokens = 2048;
  const std::vector<float> x = activations(tokens, in, 1);
  auto acc = lowbit::hessian_accumulator::create(in);
  cached.h.assign(in * in, 0.0f);
  if (!acc.ok() || !acc.value.add(x.data(), tokens, in).ok() || !acc.value.hessian(lowbit::span<float>(cached.h)).ok())
    cached.h.clear();
  std::mt19937 gen(2);
  std::normal_distribution<float> d(0.0f, 0.02f);
  cached.w.resize(out * in);
  for (float& v : cached.w) v = d(gen);
  return cached;
}

void BM_hessian(benchmark::State& state) {
  const std::size_t tokens = static_cast<std::size_t>(state.range(0)), in = static_cast<std::size_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const std::vector<float> x = activations(tokens, in, 3);
  auto acc = lowbit::hessian_accumulator::create(in);
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  for (auto _ : state) {
    if (!acc.ok() || !acc.value.add(x.data(), tokens, in, exec).ok()) state.SkipWithError("add failed");
  }
  const double flops = static_cast<double>(tokens) * in * in;  // the upper triangle of X^T X
  state.counters["GFLOPS"] = benchmark::Counter(flops * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
  state.counters["gemm_GFLOPS"] = lowbit_bench::gemm_rate(threads);
}

void BM_gptq(benchmark::State& state) {
  const std::size_t out = static_cast<std::size_t>(state.range(0)), in = static_cast<std::size_t>(state.range(1));
  const std::size_t group = static_cast<std::size_t>(state.range(2));
  lowbit::gptq_options o;
  o.block_size = static_cast<std::size_t>(state.range(3));
  o.act_order = state.range(4) != 0;
  o.report_error = state.range(5) != 0;
  const int threads = static_cast<int>(state.range(6));
  const layer_data& l = layer(out, in);
  if (l.h.empty()) {
    state.SkipWithError("no Hessian");
    return;
  }
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  const lowbit::int_params p = lowbit::int_presets::gptq(4, group);
  double rel = 0.0, rel_rtn = 0.0;
  for (auto _ : state) {
    auto r = lowbit::gptq_quantize(l.w.data(), l.h.data(), out, in, p, o, exec);
    if (!r.ok()) {
      state.SkipWithError(r.status.message());
      return;
    }
    rel = r.value.report.relative_error;
    rel_rtn = r.value.report.relative_error_rtn;
    benchmark::DoNotOptimize(r.value.codes.values().data());
  }
  const double n = static_cast<double>(in), m = static_cast<double>(out);
  double flops = n * n * n / 3 + n * n * n / 3;  // Cholesky of the reversed H, triangular inverse
  flops += 2.0 * m * static_cast<double>(o.block_size) * (n * n / (2.0 * static_cast<double>(o.block_size)));  // ~ m n^2
  if (o.report_error) flops += 2.0 * 3.0 * m * n * n;
  const double seconds_at_rate = flops / (lowbit_bench::gemm_rate(threads) * 1e9);
  state.counters["mult_GF"] = flops * 1e-9;
  state.counters["gemm_GFLOPS"] = lowbit_bench::gemm_rate(threads);
  state.counters["ratio"] = benchmark::Counter(static_cast<double>(state.iterations()) * seconds_at_rate,
                                               benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (o.report_error) {
    state.counters["rel_err"] = rel;
    state.counters["rel_err_rtn"] = rel_rtn;
  }
}

void gptq_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"out", "in", "g", "b", "act", "err", "threads"});
  for (int threads : {1, 2})
    for (int act : {0, 1}) b->Args({4096, 4096, 128, 128, act, 0, threads});
  b->Args({4096, 4096, 128, 128, 0, 1, 1});
  b->Args({11008, 4096, 128, 128, 0, 0, 1});
  b->Args({4096, 11008, 128, 128, 0, 0, 1});
}

BENCHMARK(BM_hessian)->ArgNames({"tokens", "in", "threads"})->Args({2048, 4096, 1})->Args({2048, 4096, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_gptq)->Apply(gptq_args)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
