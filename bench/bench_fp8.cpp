// lowbit benchmarks: scaled FP8 (schemes/fp8.hpp) beside the unscaled conversion of the same
// format (convert), which is what the scheme must stay within 15 % of, on a cache-resident matrix
// (16384 elements) and a DRAM-sized one (4096 x 4096), single-threaded.
//
// Names: fp8/<format>/<operation>/<granularity>/<isa>/<elements>, with
//   convert                 convert(x / s) -> codes, the values already divided (the baseline)
//   decode                  convert(codes) -> float, the baseline of dequantize
//   quantize_static         fp8_quantize_fixed: the caller's scales
//   quantize_static_recip   the same with scale_application::multiply_reciprocal
//   quantize_static_up      the same rounding toward +Inf (a mode off the encoders' path 1)
//   quantize_dynamic        fp8_quantize: amax pass + quantize pass
//   dequantize, dequantize_bf16
// <isa>: scalar (in cache, per tensor), avx2, and avx512 where the CPU has it (the convert and
// decode baselines run on the active path, named avx2 for continuity).
// Items are elements; bytes are everything read plus written (values, codes, scales). Input:
// Gaussian values; the scale maps each block's amax to the format's max, so the encoder sees the
// format's whole range (as the integer-free normal(0, max/4) row of docs/performance.md).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <lowbit/convert.hpp>
#include <lowbit/core/cpu.hpp>
#include <lowbit/schemes/fp8.hpp>

#include "baselines.hpp"

namespace {

using lowbit::isa;
using lowbit_bench::make_buffer;
using lowbit_bench::set_counters;

struct shape {
  std::size_t rows, cols;
  std::size_t n() const { return rows * cols; }
};
// In cache: 4 tokens of 4096 features (a 7B-class hidden size), or one 128 x 128 tile for the
// 128 x 128 blocks; from DRAM: 4096 x 4096.
const shape cache_rows{4, 4096};
const shape cache_tile{128, 128};
const shape dram{4096, 4096};

struct granularity {
  const char* name;
  lowbit::fp8_options o;
};
const granularity granularities[] = {
    {"per_tensor", lowbit::fp8_presets::per_tensor()},
    {"per_token", lowbit::fp8_presets::per_token()},
    {"block_1x128", lowbit::fp8_presets::deepseek_v3_activations()},
    {"block_128x128", lowbit::fp8_presets::deepseek_v3_weights()},
};

// Input, its scales (dynamic, computed once) and codes, for o.
template <class T>
struct fixture {
  std::unique_ptr<float[], lowbit_bench::free_deleter> x;
  std::vector<float> scales;
  std::unique_ptr<T[], lowbit_bench::free_deleter> q;
  fixture(shape s, const lowbit::fp8_options& o) : x(make_buffer<float>(s.n())), q(make_buffer<T>(s.n())) {
    lowbit_bench::fill_normal(x.get(), s.n(), 1.0f);
    scales.resize(lowbit::fp8_blocks(o, s.rows, s.cols).value.scale_count());
    if (!lowbit::fp8_quantize(x.get(), s.rows, s.cols, o, q.get(), scales.data())) std::abort();
  }
};

template <class T>
void convert_bench(benchmark::State& state, shape s) {
  fixture<T> f(s, lowbit::fp8_presets::per_tensor());
  auto scaled = make_buffer<float>(s.n());
  for (std::size_t i = 0; i < s.n(); ++i) scaled.get()[i] = f.x.get()[i] / f.scales[0];
  for (auto _ : state) {
    lowbit::convert(scaled.get(), f.q.get(), s.n());
    benchmark::ClobberMemory();
  }
  set_counters(state, s.n(), s.n() * (sizeof(float) + 1));
}

template <class T>
void decode_bench(benchmark::State& state, shape s) {
  fixture<T> f(s, lowbit::fp8_presets::per_tensor());
  auto y = make_buffer<float>(s.n());
  for (auto _ : state) {
    lowbit::convert(f.q.get(), y.get(), s.n());
    benchmark::ClobberMemory();
  }
  set_counters(state, s.n(), s.n() * (sizeof(float) + 1));
}

// Under stochastic rounding with one random word per element (every step divides by the scale).
template <class T>
void quantize_static_bench(benchmark::State& state, shape s, lowbit::fp8_options o, isa which) {
  fixture<T> f(s, o);
  const bool stochastic = o.element_rounding == lowbit::rounding::stochastic;
  auto bits = make_buffer<std::uint32_t>(stochastic ? s.n() : 1);
  std::uint32_t word = 0x9E3779B9u;
  for (std::size_t i = 0; stochastic && i < s.n(); ++i) bits.get()[i] = word = word * 1664525u + 1013904223u;
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::fp8_quantize_fixed(f.x.get(), f.scales.data(), s.rows, s.cols, o, f.q.get(),
                                                         stochastic ? bits.get() : nullptr);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  const std::size_t bits_bytes = stochastic ? s.n() * sizeof(std::uint32_t) : 0;
  set_counters(state, s.n(), s.n() * (sizeof(float) + 1) + bits_bytes + f.scales.size() * sizeof(float));
}

template <class T>
void quantize_dynamic_bench(benchmark::State& state, shape s, lowbit::fp8_options o, isa which) {
  fixture<T> f(s, o);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::fp8_quantize(f.x.get(), s.rows, s.cols, o, f.q.get(), f.scales.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, s.n(), s.n() * (sizeof(float) + 1) + f.scales.size() * sizeof(float));
}

template <class T, class Dst>
void dequantize_bench(benchmark::State& state, shape s, lowbit::fp8_options o, isa which) {
  fixture<T> f(s, o);
  auto y = make_buffer<Dst>(s.n());
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::fp8_dequantize(f.q.get(), f.scales.data(), s.rows, s.cols, o, y.get());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, s.n(), s.n() * (sizeof(Dst) + 1) + f.scales.size() * sizeof(float));
}

template <class T>
void register_format(const std::string& fmt) {
  const std::string avx2 = std::string("/") + lowbit::isa_name(isa::avx2);
  for (const bool in_cache : {true, false}) {
    const shape rows = in_cache ? cache_rows : dram;
    const std::string n = "/" + std::to_string(rows.n());
    benchmark::RegisterBenchmark(("fp8/" + fmt + "/convert/none" + avx2 + n).c_str(), convert_bench<T>, rows);
    benchmark::RegisterBenchmark(("fp8/" + fmt + "/decode/none" + avx2 + n).c_str(), decode_bench<T>, rows);
    for (const granularity& g : granularities) {
      const bool tiles = g.o.block_rows == 128;
      const shape s = in_cache && tiles ? cache_tile : rows;
      for (isa which : {isa::scalar, isa::avx2, isa::avx512}) {
        if (!lowbit::is_supported(which)) continue;
        if (which == isa::scalar && !(in_cache && g.o.granularity == lowbit::fp8_granularity::per_tensor)) continue;
        const std::string tail = std::string("/") + g.name + "/" + lowbit::isa_name(which) + "/" + std::to_string(s.n());
        benchmark::RegisterBenchmark(("fp8/" + fmt + "/quantize_static" + tail).c_str(), quantize_static_bench<T>, s,
                                     g.o, which);
        benchmark::RegisterBenchmark(("fp8/" + fmt + "/quantize_dynamic" + tail).c_str(), quantize_dynamic_bench<T>, s,
                                     g.o, which);
        if (which != isa::scalar && !tiles) {
          lowbit::fp8_options stochastic = g.o;
          stochastic.element_rounding = lowbit::rounding::stochastic;
          benchmark::RegisterBenchmark(("fp8/" + fmt + "/quantize_stochastic" + tail).c_str(),
                                       quantize_static_bench<T>, s, stochastic, which);
        }
        benchmark::RegisterBenchmark(("fp8/" + fmt + "/dequantize" + tail).c_str(), dequantize_bench<T, float>, s, g.o,
                                     which);
        if (which != isa::scalar)
          benchmark::RegisterBenchmark(("fp8/" + fmt + "/dequantize_bf16" + tail).c_str(),
                                       dequantize_bench<T, lowbit::bfloat16>, s, g.o, which);
      }
    }
    lowbit::fp8_options recip = lowbit::fp8_presets::per_tensor();
    recip.application = lowbit::scale_application::multiply_reciprocal;
    lowbit::fp8_options up = lowbit::fp8_presets::per_tensor();
    up.element_rounding = lowbit::rounding::toward_pos_inf;
    for (isa which : {isa::avx2, isa::avx512}) {
      if (!lowbit::is_supported(which)) continue;
      const std::string w = std::string("/") + lowbit::isa_name(which);
      benchmark::RegisterBenchmark(("fp8/" + fmt + "/quantize_static_recip/per_tensor" + w + n).c_str(),
                                   quantize_static_bench<T>, rows, recip, which);
      benchmark::RegisterBenchmark(("fp8/" + fmt + "/quantize_static_up/per_tensor" + w + n).c_str(),
                                   quantize_static_bench<T>, rows, up, which);
    }
  }
}

bool register_all() {
  register_format<lowbit::float8_e4m3fn>("e4m3fn");
  register_format<lowbit::float8_e5m2>("e5m2");
  return true;
}

const bool registered = register_all();

}  // namespace

BENCHMARK_MAIN();
