// lowbit benchmarks: the bulk format conversions (lowbit/convert.hpp), each on the scalar path, the
// AVX2 path and, where the CPU has it, the AVX-512 path side by side (lowbit::scoped_isa), on a cache-resident input (16384 elements) and
// a DRAM-sized one (4096 x 4096), single-threaded, next to the machine's ceilings (baselines.hpp).
//
// Names: convert/<source>-><destination>[/<mode>]/<isa>/<elements>. Items are elements; bytes are
// source plus destination bytes. docs/performance.md has the table, the command and the ratios.
//
// The encoders again on every input distribution of baselines.hpp (range, unit, weights, tiny,
// log_spread, subnormal), on each SIMD path: inputs/<kernel>/<distribution>/<isa>/<elements>.
// (An operation without an AVX-512 kernel runs its AVX2 one on the avx512 path.)
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <lowbit/convert.hpp>
#include <lowbit/core/cpu.hpp>
#include <lowbit/formats/limits.hpp>

#include "baselines.hpp"

namespace {

using lowbit::isa;
using lowbit::overflow;
using lowbit::rounding;
using lowbit_bench::make_buffer;
using lowbit_bench::set_counters;

// The inputs: Gaussian values with standard deviation max_finite(T) / 4, as a tensor scaled by
// its absolute maximum into T's range would be (about 1 in 16000 values saturates). `Scale` is
// the format whose range sets the scale; the values are then rounded to From.
template <class Scale>
float data_scale() {
  return static_cast<float>(std::numeric_limits<Scale>::max()) / 4.0f;
}

template <class From, class Scale = From>
auto make_source(std::size_t n) {
  auto f = make_buffer<float>(n);
  lowbit_bench::fill_normal(f.get(), n, data_scale<Scale>());
  if constexpr (std::is_same<From, float>::value) {
    return f;
  } else {
    auto s = make_buffer<From>(n);
    lowbit::scoped_isa fast(isa::avx2);
    lowbit::convert(f.get(), s.get(), n);
    return s;
  }
}

// distribution::range's values for other distributions, float32 sources only.
template <class T>
auto make_distribution(std::size_t n, lowbit_bench::distribution d) {
  auto f = make_buffer<float>(n);
  lowbit_bench::fill_distribution(f.get(), n, d, data_scale<T>(), static_cast<float>(std::numeric_limits<T>::min()));
  return f;
}

template <class T, class From>
void encode_bench(benchmark::State& state, std::size_t n, isa which, const lowbit::policy& p) {
  const rounding rm = p.rm;
  auto src = make_source<From, T>(n);
  auto dst = make_buffer<T>(n);
  auto random = make_buffer<std::uint32_t>(rm == rounding::stochastic ? n : 1);
  if (rm == rounding::stochastic) {
    std::uint32_t s = 12345;
    for (std::size_t i = 0; i < n; ++i) random.get()[i] = s = s * 1664525u + 1013904223u;
  }
  const std::uint32_t* r = rm == rounding::stochastic ? random.get() : nullptr;
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::convert(src.get(), dst.get(), n, p, r);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * (sizeof(From) + sizeof(T) + (r != nullptr ? 4 : 0)));
}

template <class T, class From>
void encode_packed_bench(benchmark::State& state, std::size_t n, isa which) {
  auto src = make_source<From, T>(n);
  const std::size_t bytes = lowbit::packed_bytes<T>(n);
  auto dst = make_buffer<std::uint8_t>(bytes);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::convert_packed<T>(src.get(), dst.get(), n);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * sizeof(From) + bytes);
}

// Decoding into float32, or into float16 / bfloat16 (To).
template <class T, class To>
void decode_bench(benchmark::State& state, std::size_t n, isa which) {
  auto src = make_source<T>(n);
  auto dst = make_buffer<To>(n);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::convert(src.get(), dst.get(), n);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * (sizeof(T) + sizeof(To)));
}

template <class T>
void decode_packed_bench(benchmark::State& state, std::size_t n, isa which) {
  auto f = make_source<float, T>(n);
  const std::size_t bytes = lowbit::packed_bytes<T>(n);
  auto src = make_buffer<std::uint8_t>(bytes);
  {
    const lowbit::scoped_isa fast(isa::avx2);
    lowbit::convert_packed<T>(f.get(), src.get(), n);
  }
  auto dst = make_buffer<float>(n);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::convert_packed<T>(src.get(), dst.get(), n);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, bytes + n * sizeof(float));
}

// float32 -> T (Packed: convert_packed) on input distribution d.
template <class T, bool Packed>
void distribution_bench(benchmark::State& state, std::size_t n, isa which, lowbit_bench::distribution d) {
  auto src = make_distribution<T>(n, d);
  const std::size_t bytes = Packed ? lowbit::packed_bytes<T>(n) : n * sizeof(T);
  auto dst = make_buffer<std::uint8_t>(bytes);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    if constexpr (Packed)
      lowbit::convert_packed<T>(src.get(), dst.get(), n);
    else
      lowbit::convert(src.get(), reinterpret_cast<T*>(dst.get()), n);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * sizeof(float) + bytes);
}

// The SIMD paths this CPU has: avx2, avx512.
std::vector<isa> simd_isas() {
  std::vector<isa> v;
  for (const isa i : {isa::avx2, isa::avx512})
    if (lowbit::is_supported(i)) v.push_back(i);
  return v;
}

template <class T, bool Packed = false>
void add_distributions(const std::string& name) {
  using lowbit_bench::distribution;
  for (const std::size_t n : {lowbit_bench::cache_elements, lowbit_bench::dram_elements}) {
    for (const distribution d : {distribution::range, distribution::unit, distribution::weights, distribution::tiny,
                                 distribution::log_spread, distribution::subnormal}) {
      for (const isa which : simd_isas()) {
        const std::string full = "inputs/" + name + "/" + lowbit_bench::distribution_name(d) + "/" +
                                 lowbit::isa_name(which) + "/" + std::to_string(n);
        benchmark::RegisterBenchmark(full.c_str(),
                                     [n, which, d](benchmark::State& s) { distribution_bench<T, Packed>(s, n, which, d); });
      }
    }
  }
}

template <class Fn>
void add(const std::string& name, Fn fn) {
  for (const std::size_t n : {lowbit_bench::cache_elements, lowbit_bench::dram_elements}) {
    std::vector<isa> paths = simd_isas();
    paths.insert(paths.begin(), isa::scalar);
    for (const isa which : paths) {
      const std::string full = "convert/" + name + "/" + lowbit::isa_name(which) + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(full.c_str(), [fn, n, which](benchmark::State& s) { fn(s, n, which); });
    }
  }
}

template <class T, class From = float>
void add_encode(const std::string& name, const lowbit::policy& p) {
  add(name, [p](benchmark::State& s, std::size_t n, isa which) { encode_bench<T, From>(s, n, which, p); });
}

template <class T, class From = float>
void add_encode(const std::string& name, overflow ov = overflow::saturate, rounding rm = rounding::nearest_even) {
  lowbit::policy p;
  p.ov = ov;
  p.rm = rm;
  add_encode<T, From>(name, p);
}

bool register_conversions() {
  using namespace lowbit;
  // float32 -> every format, nearest-even, saturating (the default).
  add_encode<float8_e4m3fn>("f32->e4m3fn");
  add_encode<float8_e5m2>("f32->e5m2");
  add_encode<float8_e4m3fnuz>("f32->e4m3fnuz");
  add_encode<float8_e5m2fnuz>("f32->e5m2fnuz");
  add_encode<float6_e2m3fn>("f32->e2m3fn");
  add_encode<float6_e3m2fn>("f32->e3m2fn");
  add_encode<float4_e2m1fn>("f32->e2m1fn");
  add_encode<float8_e8m0fnu>("f32->e8m0fnu");
  add_encode<float16>("f32->f16");
  add_encode<bfloat16>("f32->bf16");
  // The other modes of the main formats.
  add_encode<float8_e4m3fn>("f32->e4m3fn/non_saturate", overflow::non_saturate);
  add_encode<float8_e5m2>("f32->e5m2/non_saturate", overflow::non_saturate);
  add_encode<float8_e4m3fn>("f32->e4m3fn/stochastic", overflow::saturate, rounding::stochastic);
  add_encode<float8_e5m2>("f32->e5m2/stochastic", overflow::saturate, rounding::stochastic);
  add_encode<bfloat16>("f32->bf16/stochastic", overflow::saturate, rounding::stochastic);
  // Paths 2 and 3 (the per-lane path) on AVX-512 and AVX2.
  add_encode<float4_e2m1fn>("f32->e2m1fn/stochastic", overflow::saturate, rounding::stochastic);
  add_encode<float8_e4m3fn>("f32->e4m3fn/nearest_away", overflow::saturate, rounding::nearest_away);
  // Toward +Inf: saturating, and not (the negative finite lanes' limit is max finite, the others' Inf).
  add_encode<float8_e4m3fn>("f32->e4m3fn/toward_pos_inf", overflow::saturate, rounding::toward_pos_inf);
  add_encode<float8_e4m3fn>("f32->e4m3fn/toward_pos_inf_nosat", overflow::non_saturate, rounding::toward_pos_inf);
  add_encode<bfloat16>("f32->bf16/toward_pos_inf_nosat", overflow::non_saturate, rounding::toward_pos_inf);
  // Presets with NaN codes by sign (and PyTorch's saturation keeping +-Inf): the block paths too.
  add_encode<float8_e4m3fn>("f32->e4m3fn/pytorch", presets::pytorch(overflow::saturate));
  add_encode<float8_e5m2>("f32->e5m2/ml_dtypes", presets::ml_dtypes());
  add_encode<bfloat16>("f32->bf16/pytorch", presets::pytorch());
  // 16-bit sources.
  add_encode<float8_e4m3fn, float16>("f16->e4m3fn");
  add_encode<float8_e4m3fn, bfloat16>("bf16->e4m3fn");
  add_encode<float8_e5m2, bfloat16>("bf16->e5m2");
  // Byte formats into byte formats (re-quantizing a checkpoint's FP8 into another FP8 or FP4).
  add_encode<float8_e4m3fn, float8_e5m2>("e5m2->e4m3fn");
  add_encode<float8_e5m2, float8_e4m3fn>("e4m3fn->e5m2");
  add_encode<float4_e2m1fn, float8_e4m3fn>("e4m3fn->e2m1fn");
  add_encode<float8_e4m3fn, float8_e5m2>("e5m2->e4m3fn/stochastic", overflow::saturate, rounding::stochastic);
  add_encode<float8_e4m3fn, float8_e5m2>("e5m2->e4m3fn/pytorch", presets::pytorch(overflow::saturate));
  // Packed layouts.
  add("f32->e2m1fn/packed", [](benchmark::State& s, std::size_t n, isa w) { encode_packed_bench<float4_e2m1fn, float>(s, n, w); });
  add("f32->e2m3fn/packed", [](benchmark::State& s, std::size_t n, isa w) { encode_packed_bench<float6_e2m3fn, float>(s, n, w); });
  add("f32->e3m2fn/packed", [](benchmark::State& s, std::size_t n, isa w) { encode_packed_bench<float6_e3m2fn, float>(s, n, w); });
  add("e4m3fn->e2m1fn/packed", [](benchmark::State& s, std::size_t n, isa w) { encode_packed_bench<float4_e2m1fn, float8_e4m3fn>(s, n, w); });
  add("bf16->e2m1fn/packed", [](benchmark::State& s, std::size_t n, isa w) { encode_packed_bench<float4_e2m1fn, bfloat16>(s, n, w); });
  // Decoding.
  add("e4m3fn->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e4m3fn, float>(s, n, w); });
  add("e5m2->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e5m2, float>(s, n, w); });
  add("e4m3fnuz->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e4m3fnuz, float>(s, n, w); });
  add("e5m2fnuz->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e5m2fnuz, float>(s, n, w); });
  add("e2m3fn->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float6_e2m3fn, float>(s, n, w); });
  add("e3m2fn->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float6_e3m2fn, float>(s, n, w); });
  add("e2m1fn->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float4_e2m1fn, float>(s, n, w); });
  add("e8m0fnu->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e8m0fnu, float>(s, n, w); });
  add("f16->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float16, float>(s, n, w); });
  add("bf16->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<bfloat16, float>(s, n, w); });
  add("e4m3fn->bf16", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e4m3fn, bfloat16>(s, n, w); });
  add("e4m3fn->f16", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e4m3fn, float16>(s, n, w); });
  add("e4m3fnuz->f16", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e4m3fnuz, float16>(s, n, w); });
  add("e3m2fn->f16", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float6_e3m2fn, float16>(s, n, w); });
  add("e5m2fnuz->bf16", [](benchmark::State& s, std::size_t n, isa w) { decode_bench<float8_e5m2fnuz, bfloat16>(s, n, w); });
  add("e2m1fn/packed->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_packed_bench<float4_e2m1fn>(s, n, w); });
  add("e2m3fn/packed->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_packed_bench<float6_e2m3fn>(s, n, w); });
  add("e3m2fn/packed->f32", [](benchmark::State& s, std::size_t n, isa w) { decode_packed_bench<float6_e3m2fn>(s, n, w); });
  // Every encoder on every input distribution.
  add_distributions<float8_e4m3fn>("f32->e4m3fn");
  add_distributions<float8_e5m2>("f32->e5m2");
  add_distributions<float8_e4m3fnuz>("f32->e4m3fnuz");
  add_distributions<float8_e5m2fnuz>("f32->e5m2fnuz");
  add_distributions<float6_e2m3fn>("f32->e2m3fn");
  add_distributions<float6_e3m2fn>("f32->e3m2fn");
  add_distributions<float6_e2m3fn, true>("f32->e2m3fn/packed");
  add_distributions<float6_e3m2fn, true>("f32->e3m2fn/packed");
  add_distributions<float4_e2m1fn>("f32->e2m1fn");
  add_distributions<float4_e2m1fn, true>("f32->e2m1fn/packed");
  add_distributions<float8_e8m0fnu>("f32->e8m0fnu");
  add_distributions<float16>("f32->f16");
  add_distributions<bfloat16>("f32->bf16");
  return true;
}

const bool registered = register_conversions();

}  // namespace

BENCHMARK_MAIN();
