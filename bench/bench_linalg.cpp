// lowbit benchmarks: the linear algebra of linalg/ (docs/linalg.md) next to a peak-FMA loop of the
// same ISA, measured in the same binary, so every figure is quoted as a ratio.
//
//   linalg/peak_fma/<isa>                  independent FMA chains on registers (the ceiling)
//   <isa> of the calls: scalar, avx2, avx512 (where the CPU has it)
//   linalg/gemm/<isa>/<n>[/threads:2]      C = A B, n x n x n (2 n^3 flops)
//   linalg/syrk/<isa>/<tokens>x<n>         C += X^T X on the upper triangle (tokens n^2 flops)
//   linalg/cholesky/<isa>/<n>              A = U^T U (n^3 / 3 flops)
//   linalg/cholesky_inverse/<isa>/<n>      A^-1 from U (the n^3 flops of U^-1 U^-T; the call does 4/3 n^3)
//   linalg/triangular_inverse/<isa>/<n>    U^-1 in place (n^3 / 3 flops; GPTQ's inverse)
//
// The counter GFLOPS is the useful flop count above per second. Single-threaded unless the
// name says threads:2 (linalg/std_thread_exec.hpp). Input: uniform values in [-1, 1); the SPD
// matrices are X^T X / t + I.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <lowbit/core/cpu.hpp>
#include <lowbit/linalg.hpp>
#include <lowbit/linalg/std_thread_exec.hpp>

#include "baselines.hpp"

namespace {

using lowbit::isa;
using lowbit_bench::make_buffer;

// scalar, avx2 (AVX-512 kernel off) or avx512 (the avx512 path with the AVX-512 kernel).
struct kernel_path {
  isa path;
  bool avx512;
  std::string name;
};
class scoped_path {
 public:
  explicit scoped_path(const kernel_path& p) : isa_(p.path), previous_(lowbit::set_linalg_avx512(p.avx512)) {}
  ~scoped_path() { (void)lowbit::set_linalg_avx512(previous_); }
  scoped_path(const scoped_path&) = delete;
  scoped_path& operator=(const scoped_path&) = delete;

 private:
  lowbit::scoped_isa isa_;
  bool previous_;
};

void set_flops(benchmark::State& state, double flops_per_pass) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flops_per_pass * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

void fill_uniform(float* x, std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = d(gen);
}

// ---- peak FMA loops: 12 independent accumulator chains, operands in registers --------------

constexpr std::size_t peak_steps = 1 << 20;

__attribute__((target("avx2,fma"))) __attribute__((noinline)) float peak_avx2(std::size_t steps) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f);
  __asm__("" : "+x"(x), "+x"(y));
  for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) __attribute__((noinline)) float peak_avx512(std::size_t steps) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
  __asm__("" : "+v"(x), "+v"(y));
  for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0] + lanes[15];
}

// The scalar path's ceiling: 12 independent multiply-add chains in plain C++ (the build's
// default flags: no FMA instruction, no vectors).
__attribute__((noinline)) float peak_scalar(std::size_t steps) {
  float acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = static_cast<float>(i);
  float x = 0.999f, y = 1e-3f;
  __asm__("" : "+x"(x), "+x"(y));
  for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * x + y;
  }
  float sum = 0;
  for (int i = 0; i < 12; ++i) sum += acc[i];
  return sum;
}

void bench_peak(benchmark::State& state, isa which) {  // the loops do not depend on the kernel
  double lanes = 1;
  float (*f)(std::size_t) = peak_scalar;
  if (which == isa::avx2) {
    lanes = 8;
    f = peak_avx2;
  }
  for (auto _ : state) {
    std::size_t steps = peak_steps;
    benchmark::DoNotOptimize(steps);  // the loop functions are pure: keep the call in the loop
    benchmark::DoNotOptimize(f(steps));
  }
  set_flops(state, 2.0 * lanes * 12.0 * static_cast<double>(peak_steps));
}

void bench_peak_avx512(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512F");
    return;
  }
  for (auto _ : state) {
    std::size_t steps = peak_steps;
    benchmark::DoNotOptimize(steps);
    benchmark::DoNotOptimize(peak_avx512(steps));
  }
  set_flops(state, 2.0 * 16 * 12.0 * static_cast<double>(peak_steps));
}

// ---- the calls ------------------------------------------------------------------------------

void bench_gemm(benchmark::State& state, kernel_path which, std::size_t n, std::size_t threads) {
  auto a = make_buffer<float>(n * n), b = make_buffer<float>(n * n), c = make_buffer<float>(n * n);
  fill_uniform(a.get(), n * n, 1);
  fill_uniform(b.get(), n * n, 2);
  lowbit::std_thread_exec pool(threads);
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  scoped_path path(which);
  for (auto _ : state) {
    const lowbit::status s = lowbit::gemm(a.get(), n, b.get(), n, n, n, n, {}, c.get(), n, exec);
    if (!s) state.SkipWithError(s.message());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n));
}

void bench_syrk(benchmark::State& state, kernel_path which, std::size_t tokens, std::size_t n) {
  auto x = make_buffer<float>(tokens * n), c = make_buffer<float>(n * n);
  fill_uniform(x.get(), tokens * n, 3);
  scoped_path path(which);
  for (auto _ : state) {
    const lowbit::status s = lowbit::syrk(x.get(), n, tokens, n, {}, c.get(), n);
    if (!s) state.SkipWithError(s.message());
    benchmark::ClobberMemory();
  }
  set_flops(state, static_cast<double>(tokens) * static_cast<double>(n) * static_cast<double>(n + 1));
}

// X^T X / t + I, t = n.
std::vector<float> make_spd(std::size_t n) {
  auto x = make_buffer<float>(n * n);
  fill_uniform(x.get(), n * n, 4);
  std::vector<float> a(n * n, 0.0f);
  lowbit::syrk_options o;
  o.alpha = 1.0f / static_cast<float>(n);
  o.fill = lowbit::triangle::both;
  if (!lowbit::syrk(x.get(), n, n, n, o, a.data(), n)) std::abort();
  for (std::size_t i = 0; i < n; ++i) a[i * n + i] += 1.0f;
  return a;
}

void bench_cholesky(benchmark::State& state, kernel_path which, std::size_t n) {
  const std::vector<float> a = make_spd(n);
  std::vector<float> work(n * n);
  scoped_path path(which);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(work.data(), a.data(), n * n * sizeof(float));
    state.ResumeTiming();
    const lowbit::status s = lowbit::cholesky(n, {}, work.data(), n);
    if (!s) state.SkipWithError(s.message());
    benchmark::ClobberMemory();
  }
  set_flops(state, static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 3.0);
}

void bench_cholesky_inverse(benchmark::State& state, kernel_path which, std::size_t n) {
  std::vector<float> u = make_spd(n);
  if (!lowbit::cholesky(n, {}, u.data(), n)) std::abort();
  std::vector<float> inv(n * n);
  scoped_path path(which);
  for (auto _ : state) {
    const lowbit::status s = lowbit::cholesky_inverse(u.data(), n, n, {}, inv.data(), n);
    if (!s) state.SkipWithError(s.message());
    benchmark::ClobberMemory();
  }
  set_flops(state, static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n));
}

void bench_triangular_inverse(benchmark::State& state, kernel_path which, std::size_t n) {
  std::vector<float> u = make_spd(n);
  if (!lowbit::cholesky(n, {}, u.data(), n)) std::abort();
  std::vector<float> work(n * n);
  scoped_path path(which);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(work.data(), u.data(), n * n * sizeof(float));
    state.ResumeTiming();
    const lowbit::status s = lowbit::triangular_inverse(n, {lowbit::triangle::upper}, work.data(), n);
    if (!s) state.SkipWithError(s.message());
    benchmark::ClobberMemory();
  }
  set_flops(state, static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 3.0);
}

void register_all() {
  std::vector<kernel_path> paths{{isa::scalar, false, "scalar"}};
  if (lowbit::is_supported(isa::avx2)) {
    paths.push_back({isa::avx2, false, "avx2"});
    if (lowbit::is_supported(isa::avx512) && LOWBIT_HAS_AVX512_LINALG) paths.push_back({isa::avx512, true, "avx512"});
  }
  benchmark::RegisterBenchmark("linalg/peak_fma/scalar", bench_peak, isa::scalar)->Unit(benchmark::kMillisecond);
  if (lowbit::is_supported(isa::avx2))
    benchmark::RegisterBenchmark("linalg/peak_fma/avx2", bench_peak, isa::avx2)->Unit(benchmark::kMillisecond);
  if (lowbit::is_supported(isa::avx512))
    benchmark::RegisterBenchmark("linalg/peak_fma/avx512", bench_peak_avx512)->Unit(benchmark::kMillisecond);
  for (const kernel_path& p : paths) {
    const std::string& name = p.name;
    const bool scalar = p.path == isa::scalar;
    for (std::size_t n : {std::size_t{512}, std::size_t{1024}, std::size_t{4096}}) {
      if (scalar && n > 1024) continue;  // minutes per pass
      auto* b = benchmark::RegisterBenchmark(("linalg/gemm/" + name + "/" + std::to_string(n)).c_str(), bench_gemm, p,
                                             n, std::size_t{1});
      b->Unit(benchmark::kMillisecond);
      if (n == 4096 || scalar) b->Iterations(n == 4096 ? 3 : 2);
      if (!scalar && n >= 1024) {
        auto* t = benchmark::RegisterBenchmark(("linalg/gemm/" + name + "/" + std::to_string(n) + "/threads:2").c_str(),
                                               bench_gemm, p, n, std::size_t{2});
        t->Unit(benchmark::kMillisecond)->UseRealTime();
        if (n == 4096) t->Iterations(3);
      }
    }
    if (scalar) continue;
    benchmark::RegisterBenchmark(("linalg/syrk/" + name + "/2048x4096").c_str(), bench_syrk, p, std::size_t{2048},
                                 std::size_t{4096})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    benchmark::RegisterBenchmark(("linalg/cholesky/" + name + "/4096").c_str(), bench_cholesky, p, std::size_t{4096})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    benchmark::RegisterBenchmark(("linalg/cholesky_inverse/" + name + "/4096").c_str(), bench_cholesky_inverse, p,
                                 std::size_t{4096})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(2);
    benchmark::RegisterBenchmark(("linalg/triangular_inverse/" + name + "/4096").c_str(), bench_triangular_inverse, p,
                                 std::size_t{4096})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
