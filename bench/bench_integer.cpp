// lowbit benchmarks: the integer schemes (schemes/integer.hpp), the ggml blocks
// (schemes/layouts.hpp) and the metrics reduction (metrics.hpp), each on the scalar, AVX2 and
// (where the CPU has it) AVX-512 paths side by side (lowbit::scoped_isa, or the int_kernels
// tables passed explicitly; operations without an AVX-512 kernel run their AVX2 one there), on a
// cache-resident input (16384 elements, 4 x 4096) and a DRAM-sized one (4096 x 4096),
// single-threaded, next to the machine's ceilings (baselines.hpp).
//
// Names: integer/<operation>/<isa>/<elements>. Items are elements; bytes are everything read
// plus everything written (floats, codes, scales). The data are Gaussian (sigma 1).
//
//   int4_g{32,64,128}_quant_pack   quantize_int_packed, GPTQ INT4 (symmetric full range, fp16
//                                  scales): absmax, scale, codes, sequential nibbles
//   int4_g{32,128}_dequant_f32     dequantize_int_packed of those codes to float32
//   int4_g{32,128}_dequant_bf16    ... to bfloat16
//   int8_g{32,128}_quant           quantize_int, INT8 symmetric restricted, fp16 scales
//   int8_per_token_quant           quantize_int, SmoothQuant activations (fp32 scales per row)
//   int8_per_token_dequant_f32     dequantize_int of those codes
//   int8_per_token_dequant_bf16    dequantize_int_packed of those codes to bfloat16
//   int4_awq_g128_quant_pack       quantize_int_packed, AWQ (affine, integer zero-points, true
//                                  min/max, fp16 scales)
//   int4_affine_g32_quant_pack     the same with 32-element groups
//   int8_affine_per_token_quant    quantize_int, INT8 affine per row (range includes 0, fp32
//                                  scales and zero-points)
//   ggml_q4_0_quant / _dequant, ggml_q8_0_quant / _dequant
//   table_range / table_quantize / table_dequantize / table_error
//                                  the int_kernels entries alone, per 4096-element group
//   mse                            lowbit::mse (one pass of the error-sum reduction)
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <lowbit/core/cpu.hpp>
#include <lowbit/metrics.hpp>
#include <lowbit/schemes/integer.hpp>
#include <lowbit/schemes/layouts.hpp>

#include "baselines.hpp"

namespace {

using lowbit::isa;
using lowbit_bench::make_buffer;
using lowbit_bench::set_counters;

// Every input is rows x 4096: 4 rows in cache, 4096 from DRAM.
constexpr std::size_t cols_for(std::size_t) { return 4096; }
constexpr std::size_t rows_for(std::size_t n) { return n / 4096; }

void check(bool ok, benchmark::State& state) {
  if (!ok) state.SkipWithError("the operation failed");
}

auto make_input(std::size_t n) {
  auto x = make_buffer<float>(n);
  lowbit_bench::fill_normal(x.get(), n, 1.0f);
  return x;
}

// quantize_int_packed with p.
void quant_pack_bench(benchmark::State& state, std::size_t n, isa which, lowbit::int_params p) {
  const std::size_t rows = rows_for(n), cols = cols_for(n);
  const auto g = lowbit::int_groups(p, rows, cols);
  auto x = make_input(n);
  auto packed = make_buffer<std::uint8_t>(lowbit::packed_bytes(n, p.bits));
  auto scales = make_buffer<float>(g.value.group_count);
  auto zeros = make_buffer<float>(g.value.group_count);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    check(lowbit::quantize_int_packed(x.get(), rows, cols, p, packed.get(), scales.get(), zeros.get()).ok(), state);
    benchmark::DoNotOptimize(packed.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * 4 + lowbit::packed_bytes(n, p.bits) + g.value.group_count * 4 * (lowbit::has_zero_points(p) ? 2 : 1));
}

// quantize_int with p (codes one per byte).
void quant_bench(benchmark::State& state, std::size_t n, isa which, lowbit::int_params p) {
  const std::size_t rows = rows_for(n), cols = cols_for(n);
  const auto g = lowbit::int_groups(p, rows, cols);
  auto x = make_input(n);
  auto codes = make_buffer<std::uint8_t>(n);
  auto scales = make_buffer<float>(g.value.group_count);
  auto zeros = make_buffer<float>(g.value.group_count);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    check(lowbit::quantize_int(x.get(), rows, cols, p, codes.get(), scales.get(), zeros.get()).ok(), state);
    benchmark::DoNotOptimize(codes.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * 5 + g.value.group_count * 4 * (lowbit::has_zero_points(p) ? 2 : 1));
}

// dequantize_int_packed (to T) or dequantize_int (Packed false) of p's codes.
template <class T, bool Packed>
void dequant_bench(benchmark::State& state, std::size_t n, isa which, lowbit::int_params p) {
  const std::size_t rows = rows_for(n), cols = cols_for(n);
  const auto g = lowbit::int_groups(p, rows, cols);
  auto x = make_input(n);
  const std::size_t code_bytes = Packed ? lowbit::packed_bytes(n, p.bits) : n;
  auto codes = make_buffer<std::uint8_t>(code_bytes);
  auto scales = make_buffer<float>(g.value.group_count);
  auto zeros = make_buffer<float>(g.value.group_count);
  {
    const lowbit::scoped_isa fast(isa::avx2);
    const bool ok = Packed ? lowbit::quantize_int_packed(x.get(), rows, cols, p, codes.get(), scales.get(), zeros.get()).ok()
                           : lowbit::quantize_int(x.get(), rows, cols, p, codes.get(), scales.get(), zeros.get()).ok();
    check(ok, state);
  }
  auto y = make_buffer<T>(n);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    bool ok = false;
    if constexpr (Packed) {
      ok = lowbit::dequantize_int_packed(codes.get(), scales.get(), zeros.get(), rows, cols, p, y.get()).ok();
    } else {
      ok = lowbit::dequantize_int(codes.get(), scales.get(), zeros.get(), rows, cols, p, y.get()).ok();
    }
    check(ok, state);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, code_bytes + n * sizeof(T) + g.value.group_count * 4);
}

template <class Block, bool Q4>
void ggml_quant_bench(benchmark::State& state, std::size_t n, isa which) {
  auto x = make_input(n);
  std::vector<Block> y(n / 32);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    bool ok = false;
    if constexpr (Q4) {
      ok = lowbit::ggml_quantize_q4_0(x.get(), 1, n, y.data()).ok();
    } else {
      ok = lowbit::ggml_quantize_q8_0(x.get(), 1, n, y.data()).ok();
    }
    check(ok, state);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * 4 + y.size() * sizeof(Block));
}

template <class Block, bool Q4>
void ggml_dequant_bench(benchmark::State& state, std::size_t n, isa which) {
  auto x = make_input(n);
  std::vector<Block> b(n / 32);
  if constexpr (Q4) {
    check(lowbit::ggml_quantize_q4_0(x.get(), 1, n, b.data()).ok(), state);
  } else {
    check(lowbit::ggml_quantize_q8_0(x.get(), 1, n, b.data()).ok(), state);
  }
  auto y = make_buffer<float>(n);
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    if constexpr (Q4) {
      check(lowbit::ggml_dequantize_q4_0(b.data(), 1, n, y.get()).ok(), state);
    } else {
      check(lowbit::ggml_dequantize_q8_0(b.data(), 1, n, y.get()).ok(), state);
    }
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * 4 + b.size() * sizeof(Block));
}

const lowbit::kernels::int_kernels& table(isa which) {
  const lowbit::scoped_isa path(which);
  return lowbit::kernels::active_int_kernels();
}

// INT8 symmetric restricted codec with the scale of sigma-1 data.
lowbit::int_group_codec int8_codec() {
  lowbit::int_group_codec c;
  c.scale = 4.5f / 127.0f;
  c.zero_point = 128;
  c.code_min = 1;
  c.code_max = 255;
  return c;
}

enum class table_op { range, quantize, dequantize, error };

void table_bench(benchmark::State& state, std::size_t n, isa which, table_op op) {
  constexpr std::size_t group = 4096;
  const lowbit::kernels::int_kernels& k = table(which);  // internal: the per-group kernels alone
  const lowbit::int_group_codec c = int8_codec();
  auto x = make_input(n);
  auto codes = make_buffer<std::uint8_t>(n);
  k.quantize(x.get(), n, c, nullptr, codes.get());
  auto y = make_buffer<float>(n);
  double sink = 0.0;
  const lowbit::kernels::ieee_scope ieee;  // the table runs inside the bulk calls' scope
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; i += group) {
      switch (op) {
        case table_op::range: {
          float lo = 0.0f, hi = 0.0f;
          sink += k.range(x.get() + i, group, &lo, &hi) ? lo + hi : 0.0f;
          break;
        }
        case table_op::quantize: k.quantize(x.get() + i, group, c, nullptr, codes.get() + i); break;
        case table_op::dequantize: k.dequantize(codes.get() + i, group, c, y.get() + i); break;
        case table_op::error: sink += k.error(x.get() + i, group, c, 2.0, nullptr); break;
      }
    }
    benchmark::DoNotOptimize(sink);
    benchmark::DoNotOptimize(codes.get());
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = op == table_op::range || op == table_op::error ? n * 4 : n * 5;
  set_counters(state, n, bytes);
}

void mse_bench(benchmark::State& state, std::size_t n, isa which) {
  auto r = make_input(n);
  auto t = make_input(n);
  for (std::size_t i = 0; i < n; ++i) t.get()[i] = r.get()[i] + 0.01f * t.get()[i];
  const lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const auto m = lowbit::mse(r.get(), n, t.get(), n);
    check(m.ok(), state);
    benchmark::DoNotOptimize(m.value);
  }
  set_counters(state, n, n * 8);
}

template <class Fn>
void add(const std::string& name, Fn fn) {
  for (const std::size_t n : {lowbit_bench::cache_elements, lowbit_bench::dram_elements}) {
    for (const isa which : {isa::scalar, isa::avx2, isa::avx512}) {
      if (!lowbit::is_supported(which)) continue;  // no row under another path's name
      const std::string full = "integer/" + name + "/" + lowbit::isa_name(which) + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(full.c_str(), [fn, n, which](benchmark::State& s) { fn(s, n, which); });
    }
  }
}

lowbit::int_params int8_group(std::size_t g) {
  lowbit::int_params p = lowbit::int_presets::ggml_q8_0();  // restricted, fp16 scales
  p.group_size = g;
  return p;
}

lowbit::int_params int8_affine_per_token() {
  lowbit::int_params p = lowbit::int_presets::int8_per_token();
  p.scheme = lowbit::int_scheme::affine;
  return p;
}

bool register_integer() {
  using lowbit::int_presets::gptq;
  using S = benchmark::State;
  for (std::size_t g : {32u, 64u, 128u}) {
    add("int4_g" + std::to_string(g) + "_quant_pack",
        [g](S& s, std::size_t n, isa w) { quant_pack_bench(s, n, w, gptq(4, g)); });
  }
  add("int4_g32_dequant_f32", [](S& s, std::size_t n, isa w) { dequant_bench<float, true>(s, n, w, gptq(4, 32)); });
  add("int4_g128_dequant_f32", [](S& s, std::size_t n, isa w) { dequant_bench<float, true>(s, n, w, gptq(4, 128)); });
  add("int4_g32_dequant_bf16",
      [](S& s, std::size_t n, isa w) { dequant_bench<lowbit::bfloat16, true>(s, n, w, gptq(4, 32)); });
  add("int4_g128_dequant_bf16",
      [](S& s, std::size_t n, isa w) { dequant_bench<lowbit::bfloat16, true>(s, n, w, gptq(4, 128)); });
  add("int8_g32_quant", [](S& s, std::size_t n, isa w) { quant_bench(s, n, w, int8_group(32)); });
  add("int8_g128_quant", [](S& s, std::size_t n, isa w) { quant_bench(s, n, w, int8_group(128)); });
  add("int8_per_token_quant",
      [](S& s, std::size_t n, isa w) { quant_bench(s, n, w, lowbit::int_presets::int8_per_token()); });
  add("int8_per_token_dequant_f32", [](S& s, std::size_t n, isa w) {
    dequant_bench<float, false>(s, n, w, lowbit::int_presets::int8_per_token());
  });
  add("int8_per_token_dequant_bf16", [](S& s, std::size_t n, isa w) {
    dequant_bench<lowbit::bfloat16, true>(s, n, w, lowbit::int_presets::int8_per_token());
  });
  add("int4_awq_g128_quant_pack",
      [](S& s, std::size_t n, isa w) { quant_pack_bench(s, n, w, lowbit::int_presets::awq(4, 128)); });
  add("int4_affine_g32_quant_pack",
      [](S& s, std::size_t n, isa w) { quant_pack_bench(s, n, w, lowbit::int_presets::awq(4, 32)); });
  add("int8_affine_per_token_quant", [](S& s, std::size_t n, isa w) { quant_bench(s, n, w, int8_affine_per_token()); });
  add("ggml_q4_0_quant", [](S& s, std::size_t n, isa w) { ggml_quant_bench<lowbit::ggml_block_q4_0, true>(s, n, w); });
  add("ggml_q4_0_dequant",
      [](S& s, std::size_t n, isa w) { ggml_dequant_bench<lowbit::ggml_block_q4_0, true>(s, n, w); });
  add("ggml_q8_0_quant", [](S& s, std::size_t n, isa w) { ggml_quant_bench<lowbit::ggml_block_q8_0, false>(s, n, w); });
  add("ggml_q8_0_dequant",
      [](S& s, std::size_t n, isa w) { ggml_dequant_bench<lowbit::ggml_block_q8_0, false>(s, n, w); });
  add("table_range", [](S& s, std::size_t n, isa w) { table_bench(s, n, w, table_op::range); });
  add("table_quantize", [](S& s, std::size_t n, isa w) { table_bench(s, n, w, table_op::quantize); });
  add("table_dequantize", [](S& s, std::size_t n, isa w) { table_bench(s, n, w, table_op::dequantize); });
  add("table_error", [](S& s, std::size_t n, isa w) { table_bench(s, n, w, table_op::error); });
  add("mse", [](S& s, std::size_t n, isa w) { mse_bench(s, n, w); });
  return true;
}

const bool registered = register_integer();

}  // namespace

BENCHMARK_MAIN();
