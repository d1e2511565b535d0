// lowbit benchmarks: the block formats (schemes/mx.hpp, schemes/nvfp4.hpp), quantize and
// dequantize, each on the scalar, AVX2 and (where the operation has one) AVX-512 paths side by side
// (lowbit::scoped_isa), on a
// cache-resident input (16384 elements) and a DRAM-sized one (4096 x 4096), single-threaded, next
// to the machine's ceilings (baselines.hpp) measured in the same run.
//
// Names: block/<format>/<quantize|dequantize>[/bf16]/<isa>/<elements>. Items are elements; bytes
// are everything read plus everything written (float or bfloat16 values, packed element bytes,
// scale bytes, NVFP4's 4-byte tensor scale: the family's *_storage_for). Input: Gaussian values,
// standard deviation 1 (MX and NVFP4 scale per block, so the spread does not change the work); MX
// blocks of 32 with the OCP defaults, NVFP4 two-level with the divisor tensor scale computed from
// the data. block/<mxfp4|nvfp4>/<quantize|dequantize>_ggml[_via_planar]/...: ggml's interleaved
// blocks, straight or through the planar arrays and the conversion (see ggml_quantize_bench);
// block/<mxfp4|nvfp4>/dequantize_ggml/bf16/...: straight into bfloat16.
// docs/performance.md has the table and ratios.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <lowbit/core/cpu.hpp>
#include <lowbit/schemes/mx.hpp>
#include <lowbit/schemes/nvfp4.hpp>

#include "baselines.hpp"

namespace {

using lowbit::isa;
using lowbit_bench::make_buffer;
using lowbit_bench::set_counters;

template <class T>
auto make_input(std::size_t n) {
  auto f = make_buffer<float>(n);
  lowbit_bench::fill_normal(f.get(), n, 1.0f);
  if constexpr (std::is_same<T, float>::value) {
    return f;
  } else {
    auto b = make_buffer<lowbit::bfloat16>(n);
    for (std::size_t i = 0; i < n; ++i) b.get()[i] = lowbit::encode<lowbit::bfloat16>(f.get()[i]);
    return b;
  }
}

template <class Fmt, class Src>
void mx_quantize_bench(benchmark::State& state, std::size_t n, isa which) {
  const lowbit::storage bytes = lowbit::mx_storage_for<Fmt>(1, n).value;
  auto src = make_input<Src>(n);
  auto el = make_buffer<std::uint8_t>(bytes.payload_bytes);
  auto sc = make_buffer<std::uint8_t>(bytes.scale_bytes);
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::mx_quantize<Fmt>(src.get(), n, {}, el.get(), sc.get());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * sizeof(Src) + bytes.total_bytes());
}

template <class Fmt, class Dst>
void mx_dequantize_bench(benchmark::State& state, std::size_t n, isa which) {
  const lowbit::storage bytes = lowbit::mx_storage_for<Fmt>(1, n).value;
  auto src = make_input<float>(n);
  auto el = make_buffer<std::uint8_t>(bytes.payload_bytes);
  auto sc = make_buffer<std::uint8_t>(bytes.scale_bytes);
  auto dst = make_buffer<Dst>(n);
  {
    lowbit::scoped_isa fast(isa::avx2);
    if (!lowbit::mx_quantize<Fmt>(src.get(), n, {}, el.get(), sc.get())) state.SkipWithError("quantize failed");
  }
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::mx_dequantize<Fmt>(el.get(), sc.get(), n, {}, dst.get());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, bytes.total_bytes() + n * sizeof(Dst));
}

// Two-level options, the divisor tensor scale computed from the data.
lowbit::nvfp4_options two_level_options(const float* x, std::size_t n) {
  lowbit::nvfp4_options o;
  o.tensor_scale = lowbit::nvfp4_compute_tensor_scale(x, n, o).value;
  return o;
}

template <class Src>
void nvfp4_quantize_bench(benchmark::State& state, std::size_t n, isa which) {
  auto f = make_input<float>(n);
  const lowbit::nvfp4_options t = two_level_options(f.get(), n);
  auto src = make_input<Src>(n);
  const lowbit::storage bytes = lowbit::nvfp4_storage_for(1, n).value;  // scale_bytes: n / 16 + 4
  auto el = make_buffer<std::uint8_t>(bytes.payload_bytes);
  auto sc = make_buffer<std::uint8_t>(n / lowbit::nvfp4_block_size);
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::nvfp4_quantize(src.get(), n, t, el.get(), sc.get());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * sizeof(Src) + bytes.total_bytes());
}

template <class Dst>
void nvfp4_dequantize_bench(benchmark::State& state, std::size_t n, isa which) {
  auto src = make_input<float>(n);
  const lowbit::nvfp4_options t = two_level_options(src.get(), n);
  const lowbit::storage bytes = lowbit::nvfp4_storage_for(1, n).value;  // scale_bytes: n / 16 + 4
  auto el = make_buffer<std::uint8_t>(bytes.payload_bytes);
  auto sc = make_buffer<std::uint8_t>(n / lowbit::nvfp4_block_size);
  auto dst = make_buffer<Dst>(n);
  {
    lowbit::scoped_isa fast(isa::avx2);
    if (!lowbit::nvfp4_quantize(src.get(), n, t, el.get(), sc.get())) state.SkipWithError("quantize failed");
  }
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    const lowbit::status st = lowbit::nvfp4_dequantize(el.get(), sc.get(), n, t, dst.get());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, bytes.total_bytes() + n * sizeof(Dst));
}

// ggml's interleaved blocks (block_mxfp4, block_nvfp4): straight into and out of them
// (mxfp4_quantize_ggml, ..., "ggml"), and through the planar arrays plus the conversion
// (mx_quantize then mxfp4_to_ggml, ..., "ggml_via_planar", the only way before issue 15). Bytes
// are the float values plus the ggml blocks, for both. MX: the OCP defaults; NVFP4: single level
// (ggml has no tensor scale; the kernels do the same work for any tensor scale).
struct mxfp4_ggml {
  using block = lowbit::ggml_block_mxfp4;
  using options = lowbit::mx_options;
  static constexpr std::size_t per_block = 32;
  static std::size_t scale_bytes(std::size_t n) { return n / 32; }
  template <class Src>
  static lowbit::status quantize(const Src* x, std::size_t n, const options& o, block* b) {
    return lowbit::mxfp4_quantize_ggml(x, n, o, b);
  }
  template <class Dst>
  static lowbit::status dequantize(const block* b, std::size_t n, const options& o, Dst* y) {
    return lowbit::mxfp4_dequantize_ggml(b, n, o, y);
  }
  static lowbit::status quantize_planar(const float* x, std::size_t n, const options& o, std::uint8_t* e,
                                        std::uint8_t* s) {
    return lowbit::mx_quantize<lowbit::mxfp4>(x, n, o, e, s);
  }
  static lowbit::status to_ggml(const std::uint8_t* e, const std::uint8_t* s, std::size_t n, block* b) {
    return lowbit::mxfp4_to_ggml(e, s, n, b);
  }
  static lowbit::status from_ggml(const block* b, std::size_t n, std::uint8_t* e, std::uint8_t* s) {
    return lowbit::mxfp4_from_ggml(b, n, e, s);
  }
  static lowbit::status dequantize_planar(const std::uint8_t* e, const std::uint8_t* s, std::size_t n,
                                          const options& o, float* y) {
    return lowbit::mx_dequantize<lowbit::mxfp4>(e, s, n, o, y);
  }
};
struct nvfp4_ggml {
  using block = lowbit::ggml_block_nvfp4;
  using options = lowbit::nvfp4_options;
  static constexpr std::size_t per_block = 64;
  static std::size_t scale_bytes(std::size_t n) { return n / 16; }
  template <class Src>
  static lowbit::status quantize(const Src* x, std::size_t n, const options& o, block* b) {
    return lowbit::nvfp4_quantize_ggml(x, n, o, b);
  }
  template <class Dst>
  static lowbit::status dequantize(const block* b, std::size_t n, const options& o, Dst* y) {
    return lowbit::nvfp4_dequantize_ggml(b, n, o, y);
  }
  static lowbit::status quantize_planar(const float* x, std::size_t n, const options& o, std::uint8_t* e,
                                        std::uint8_t* s) {
    return lowbit::nvfp4_quantize(x, n, o, e, s);
  }
  static lowbit::status to_ggml(const std::uint8_t* e, const std::uint8_t* s, std::size_t n, block* b) {
    return lowbit::nvfp4_to_ggml(e, s, n, b);
  }
  static lowbit::status from_ggml(const block* b, std::size_t n, std::uint8_t* e, std::uint8_t* s) {
    return lowbit::nvfp4_from_ggml(b, n, e, s);
  }
  static lowbit::status dequantize_planar(const std::uint8_t* e, const std::uint8_t* s, std::size_t n,
                                          const options& o, float* y) {
    return lowbit::nvfp4_dequantize(e, s, n, o, y);
  }
};

template <class G>
void ggml_quantize_bench(benchmark::State& state, std::size_t n, isa which, bool via_planar) {
  auto src = make_input<float>(n);
  auto blocks = make_buffer<typename G::block>(n / G::per_block);
  auto el = make_buffer<std::uint8_t>(n / 2);
  auto sc = make_buffer<std::uint8_t>(G::scale_bytes(n));
  const typename G::options o{};
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::status st;
    if (via_planar) {
      st = G::quantize_planar(src.get(), n, o, el.get(), sc.get());
      if (st) st = G::to_ggml(el.get(), sc.get(), n, blocks.get());
    } else {
      st = G::quantize(src.get(), n, o, blocks.get());
    }
    if (!st) state.SkipWithError("quantize failed");
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n * sizeof(float) + n / G::per_block * sizeof(typename G::block));
}

template <class G, class Dst = float>
void ggml_dequantize_bench(benchmark::State& state, std::size_t n, isa which, bool via_planar) {
  auto src = make_input<float>(n);
  auto blocks = make_buffer<typename G::block>(n / G::per_block);
  auto el = make_buffer<std::uint8_t>(n / 2);
  auto sc = make_buffer<std::uint8_t>(G::scale_bytes(n));
  auto dst = make_buffer<Dst>(n);
  const typename G::options o{};
  {
    lowbit::scoped_isa fast(isa::avx2);
    if (!G::quantize(src.get(), n, o, blocks.get())) state.SkipWithError("quantize failed");
  }
  lowbit::scoped_isa path(which);
  for (auto _ : state) {
    lowbit::status st;
    if constexpr (std::is_same<Dst, float>::value) {
      if (via_planar) {
        st = G::from_ggml(blocks.get(), n, el.get(), sc.get());
        if (st) st = G::dequantize_planar(el.get(), sc.get(), n, o, dst.get());
      } else {
        st = G::dequantize(blocks.get(), n, o, dst.get());
      }
    } else {  // (bfloat16: straight only)
      (void)via_planar;
      st = G::dequantize(blocks.get(), n, o, dst.get());
    }
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, n / G::per_block * sizeof(typename G::block) + n * sizeof(Dst));
}

// scalar, avx2, and avx512 where the CPU has it and the operation has an AVX-512 kernel (every
// MX format, NVFP4).
std::vector<isa> paths_for(bool has_avx512_kernel) {
  std::vector<isa> p = {isa::scalar, isa::avx2};
  if (has_avx512_kernel && lowbit::is_supported(isa::avx512)) p.push_back(isa::avx512);
  return p;
}
const std::vector<isa> paths = paths_for(true);
const std::size_t sizes[] = {lowbit_bench::cache_elements, lowbit_bench::dram_elements};

std::string suffix(isa which, std::size_t n) { return std::string("/") + lowbit::isa_name(which) + "/" + std::to_string(n); }

template <class Fmt>
void register_mx(const std::string& name) {
  for (std::size_t n : sizes) {
    for (isa which : paths_for(lowbit::kernels::block::mx_avx512_has_kernel<Fmt>)) {
      benchmark::RegisterBenchmark(("block/" + name + "/quantize" + suffix(which, n)).c_str(),
                                   mx_quantize_bench<Fmt, float>, n, which);
      benchmark::RegisterBenchmark(("block/" + name + "/dequantize" + suffix(which, n)).c_str(),
                                   mx_dequantize_bench<Fmt, float>, n, which);
    }
  }
}

template <class Fmt>
void register_mx_bf16(const std::string& name) {
  for (isa which : paths_for(lowbit::kernels::block::mx_avx512_has_kernel<Fmt>)) {
    const std::size_t n = lowbit_bench::cache_elements;
    benchmark::RegisterBenchmark(("block/" + name + "/quantize/bf16" + suffix(which, n)).c_str(),
                                 mx_quantize_bench<Fmt, lowbit::bfloat16>, n, which);
    benchmark::RegisterBenchmark(("block/" + name + "/dequantize/bf16" + suffix(which, n)).c_str(),
                                 mx_dequantize_bench<Fmt, lowbit::bfloat16>, n, which);
  }
}

template <class G>
void register_ggml(const std::string& name) {
  for (std::size_t n : sizes) {
    for (isa which : paths) {
      for (bool via : {false, true}) {
        const std::string kind = via ? "_ggml_via_planar" : "_ggml";
        benchmark::RegisterBenchmark(("block/" + name + "/quantize" + kind + suffix(which, n)).c_str(),
                                     ggml_quantize_bench<G>, n, which, via);
        benchmark::RegisterBenchmark(("block/" + name + "/dequantize" + kind + suffix(which, n)).c_str(),
                                     ggml_dequantize_bench<G>, n, which, via);
      }
    }
  }
}

bool register_all() {
  register_mx<lowbit::mxfp4_e2m1>("mxfp4");
  register_mx<lowbit::mxfp6_e2m3>("mxfp6_e2m3");
  register_mx<lowbit::mxfp6_e3m2>("mxfp6_e3m2");
  register_mx<lowbit::mxfp8_e4m3>("mxfp8_e4m3");
  register_mx<lowbit::mxfp8_e5m2>("mxfp8_e5m2");
  register_mx<lowbit::mxint8>("mxint8");
  for (std::size_t n : sizes) {
    for (isa which : paths) {
      benchmark::RegisterBenchmark(("block/nvfp4/quantize" + suffix(which, n)).c_str(), nvfp4_quantize_bench<float>, n,
                                   which);
      benchmark::RegisterBenchmark(("block/nvfp4/dequantize" + suffix(which, n)).c_str(),
                                   nvfp4_dequantize_bench<float>, n, which);
    }
  }
  register_ggml<mxfp4_ggml>("mxfp4");
  register_ggml<nvfp4_ggml>("nvfp4");
  register_mx_bf16<lowbit::mxfp4_e2m1>("mxfp4");
  register_mx_bf16<lowbit::mxfp8_e4m3>("mxfp8_e4m3");
  for (isa which : paths) {
    const std::size_t n = lowbit_bench::cache_elements;
    benchmark::RegisterBenchmark(("block/nvfp4/quantize/bf16" + suffix(which, n)).c_str(),
                                 nvfp4_quantize_bench<lowbit::bfloat16>, n, which);
    benchmark::RegisterBenchmark(("block/nvfp4/dequantize/bf16" + suffix(which, n)).c_str(),
                                 nvfp4_dequantize_bench<lowbit::bfloat16>, n, which);
    benchmark::RegisterBenchmark(("block/mxfp4/dequantize_ggml/bf16" + suffix(which, n)).c_str(),
                                 ggml_dequantize_bench<mxfp4_ggml, lowbit::bfloat16>, n, which, false);
    benchmark::RegisterBenchmark(("block/nvfp4/dequantize_ggml/bf16" + suffix(which, n)).c_str(),
                                 ggml_dequantize_bench<nvfp4_ggml, lowbit::bfloat16>, n, which, false);
  }
  return true;
}

const bool registered = register_all();

}  // namespace

BENCHMARK_MAIN();
