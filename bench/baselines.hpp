// lowbit benchmarks: the machine's own ceilings, so every kernel figure can be quoted as a ratio
// measured in the same run. Include this header in a bench_*.cpp to register them there:
//
//   baseline/memcpy/<n>          std::memcpy of n floats (bytes: read + written)
//   baseline/sum_f32/<n>         read-only AVX2 float sum, four accumulators
//   baseline/f32_to_i8/<n>       trivial AVX2 float32 -> int8: multiply, convert, pack, store
//   baseline/i8_to_f32/<n>       its reverse: widen, convert, multiply, store
//   baseline/f32_to_i8_avx512/<n>, baseline/i8_to_f32_avx512/<n>
//                                their AVX-512 twins (where the CPU has AVX-512 F, BW, VL): the
//                                loops every AVX-512 kernel is quoted against
//
// n is 16384 (cache-resident) and 4096 x 4096 (DRAM-sized). Single-threaded. Items are elements;
// bytes are everything read plus everything written.
#ifndef LOWBIT_BENCH_BASELINES_HPP
#define LOWBIT_BENCH_BASELINES_HPP

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <lowbit/core/cpu.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

namespace lowbit_bench {

constexpr std::size_t cache_elements = 16384;
constexpr std::size_t dram_elements = std::size_t{4096} * 4096;

struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

// A 64-byte aligned buffer of n T, filled with zero bytes.
template <class T>
std::unique_ptr<T[], free_deleter> make_buffer(std::size_t n) {
  const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  T* p = static_cast<T*>(std::aligned_alloc(64, bytes));
  if (p == nullptr) std::abort();
  std::memset(static_cast<void*>(p), 0, bytes);
  return std::unique_ptr<T[], free_deleter>(p);
}

// Gaussian values with standard deviation `scale`: spread over many binades of every format,
// with a few values beyond the largest ones (no NaN or Inf).
inline void fill_normal(float* x, std::size_t n, float scale, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (std::size_t i = 0; i < n; ++i) x[i] = dist(gen);
}

// The input distributions the encoders are measured on (issue 15): a tensor scaled into the
// format's range, unit-scale activations, raw weights, tiny values, a log-uniform spread over
// 29 binades, and values below the destination format's normal range only.
enum class distribution { range, unit, weights, tiny, log_spread, subnormal };

inline const char* distribution_name(distribution d) noexcept {
  switch (d) {
    case distribution::range: return "range";
    case distribution::unit: return "unit";
    case distribution::weights: return "weights";
    case distribution::tiny: return "tiny";
    case distribution::log_spread: return "log_spread";
    case distribution::subnormal: return "subnormal";
  }
  return "?";
}

// `range_sd`: the standard deviation of distribution::range (max finite / 4 of the format);
// `min_normal`: the format's smallest normal value (distribution::subnormal draws uniformly
// from (-min_normal, min_normal)).
inline void fill_distribution(float* x, std::size_t n, distribution d, float range_sd, float min_normal,
                              unsigned seed = 1) {
  std::mt19937 gen(seed);
  switch (d) {
    case distribution::range: return fill_normal(x, n, range_sd, seed);
    case distribution::unit: return fill_normal(x, n, 1.0f, seed);
    case distribution::weights: return fill_normal(x, n, 0.02f, seed);
    case distribution::tiny: return fill_normal(x, n, 0.001f, seed);
    case distribution::log_spread: {
      std::uniform_real_distribution<float> e(-20.0f, 9.0f);
      for (std::size_t i = 0; i < n; ++i) x[i] = ((gen() & 1u) != 0 ? -1.0f : 1.0f) * std::exp2(e(gen));
      return;
    }
    case distribution::subnormal: {
      std::uniform_real_distribution<float> u(-min_normal, min_normal);
      for (std::size_t i = 0; i < n; ++i) x[i] = u(gen);
      return;
    }
  }
}

inline void set_counters(benchmark::State& state, std::size_t n, std::size_t bytes_per_pass) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes_per_pass));
}

namespace baseline {

__attribute__((target("avx2,fma"))) inline float sum_f32(const float* x, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  float r = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  for (; i < n; ++i) r += x[i];
  return r;
}

// q = saturate_int8(round(x * scale)) with the current MXCSR rounding: the least work a float to
// 8-bit conversion can do.
__attribute__((target("avx2,fma"))) inline void f32_to_i8(const float* x, std::int8_t* q, std::size_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), s));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), s));
    const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16), s));
    const __m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24), s));
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(p, order));
  }
  for (; i < n; ++i) {
    const float v = x[i] * scale;
    q[i] = static_cast<std::int8_t>(v > 127.f ? 127 : v < -128.f ? -128 : static_cast<int>(v));
  }
}

__attribute__((target("avx2,fma"))) inline void i8_to_f32(const std::int8_t* q, float* x, std::size_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i + 8 * k));
      _mm256_storeu_ps(x + i + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), s));
    }
  }
  for (; i < n; ++i) x[i] = static_cast<float>(q[i]) * scale;
}

LOWBIT_AVX512_WARNINGS_BEGIN  // GCC 12's AVX-512 headers (core/cpu.hpp)

// The AVX-512 twins of the two trivial loops: the baselines every AVX-512 kernel is quoted against
// (64 elements a step). The narrowing is the AVX2 loop's, two levels of saturating packs and one
// vpermd, the fastest form measured: four vpmovsdb (two uops each) ran it at 0.8x on Zen 4.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) inline void f32_to_i8_avx512(const float* x, std::int8_t* q,
                                                                                            std::size_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i a = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), s));
    const __m512i b = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), s));
    const __m512i c = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 32), s));
    const __m512i d = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 48), s));
    const __m512i p = _mm512_packs_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
    _mm512_storeu_si512(q + i, _mm512_permutexvar_epi32(order, p));
  }
  for (; i < n; ++i) {
    const float v = x[i] * scale;
    q[i] = static_cast<std::int8_t>(v > 127.f ? 127 : v < -128.f ? -128 : static_cast<int>(v));
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) inline void i8_to_f32_avx512(const std::int8_t* q, float* x,
                                                                                            std::size_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i + 16 * k));
      _mm512_storeu_ps(x + i + 16 * k, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)), s));
    }
  }
  for (; i < n; ++i) x[i] = static_cast<float>(q[i]) * scale;
}

LOWBIT_AVX512_WARNINGS_END

inline bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

inline void memcpy_bench(benchmark::State& state, std::size_t n) {
  auto src = make_buffer<float>(n);
  auto dst = make_buffer<float>(n);
  fill_normal(src.get(), n, 1.0f);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * n * sizeof(float));
}

inline void sum_bench(benchmark::State& state, std::size_t n) {
  auto src = make_buffer<float>(n);
  fill_normal(src.get(), n, 1.0f);
  for (auto _ : state) benchmark::DoNotOptimize(sum_f32(src.get(), n));
  set_counters(state, n, n * sizeof(float));
}

template <void (*Loop)(const float*, std::int8_t*, std::size_t, float) = f32_to_i8>
inline void f32_to_i8_bench(benchmark::State& state, std::size_t n) {
  auto src = make_buffer<float>(n);
  auto dst = make_buffer<std::int8_t>(n);
  fill_normal(src.get(), n, 1.0f);
  for (auto _ : state) {
    Loop(src.get(), dst.get(), n, 42.0f);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * (sizeof(float) + 1));
}

template <void (*Loop)(const std::int8_t*, float*, std::size_t, float) = i8_to_f32>
inline void i8_to_f32_bench(benchmark::State& state, std::size_t n) {
  auto src = make_buffer<std::int8_t>(n);
  auto dst = make_buffer<float>(n);
  for (std::size_t i = 0; i < n; ++i) src.get()[i] = static_cast<std::int8_t>(i * 37u);
  for (auto _ : state) {
    Loop(src.get(), dst.get(), n, 1.0f / 42.0f);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * (sizeof(float) + 1));
}

inline bool register_all() {
  for (const std::size_t n : {cache_elements, dram_elements}) {
    const std::string size = "/" + std::to_string(n);
    benchmark::RegisterBenchmark(("baseline/memcpy" + size).c_str(), memcpy_bench, n);
    benchmark::RegisterBenchmark(("baseline/sum_f32" + size).c_str(), sum_bench, n);
    benchmark::RegisterBenchmark(("baseline/f32_to_i8" + size).c_str(), f32_to_i8_bench<>, n);
    benchmark::RegisterBenchmark(("baseline/i8_to_f32" + size).c_str(), i8_to_f32_bench<>, n);
    if (cpu_has_avx512()) {
      benchmark::RegisterBenchmark(("baseline/f32_to_i8_avx512" + size).c_str(), f32_to_i8_bench<f32_to_i8_avx512>, n);
      benchmark::RegisterBenchmark(("baseline/i8_to_f32_avx512" + size).c_str(), i8_to_f32_bench<i8_to_f32_avx512>, n);
    }
  }
  return true;
}

// Registered once per program, before main() runs.
inline const bool registered = register_all();

}  // namespace baseline
}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_BASELINES_HPP
