// Fuzz target: NVFP4 (lowbit/schemes/nvfp4.hpp), float and bfloat16 input.
//
// Input: the nvfp4_options fields (any float as the tensor scale, either convention, roundings
// out of range), a shape (valid, indivisible, empty or overflowing), a buffer mode, the data.
// Checks, each on any input:
//  - options and shape errors are the documented ones (bad_argument for a tensor scale outside
//    [2^-119, 2^119] or an enumerator out of range, bad_block_size for cols % 16), found before
//    anything is written (canaries intact; overflowing shapes get pointers that are never valid);
//  - null, misaligned and overlapping buffers are errors and nothing is written;
//  - the SIMD path gives the scalar reference's status and bytes, quantizing and dequantizing
//    (the best path, and AVX2 as well where the best is AVX-512);
//  - nothing is written past the elements and scales the shape needs;
//  - a tensor scale computed from the data is the same on both paths, and valid.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <lowbit/schemes/nvfp4.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t guard = 8;

bool valid_rounding(rounding r) {
  return static_cast<unsigned>(r) <= static_cast<unsigned>(rounding::nearest_toward_zero) && r != rounding::stochastic;
}

nvfp4_options read_options(input& in) {
  nvfp4_options o;
  const std::uint8_t t = in.u8();
  if (t < 128) {
    o.tensor_scale = 1.0f;
  } else if (t < 200) {  // a power of two in or just outside [2^-119, 2^119]
    o.tensor_scale = std::ldexp(1.0f, static_cast<int>(in.below(245)) - 122);
  } else if (t < 250) {
    o.tensor_scale = std::fabs(in.f32());
  } else {
    o.tensor_scale = in.f32();
  }
  const std::uint8_t c = in.u8();
  o.tensor_scale_convention = static_cast<nvfp4_scale_convention>(c < 250 ? c % 2 : c);
  const std::uint8_t rm = in.u8();
  o.element_rounding = static_cast<rounding>(rm < 240 ? rm % 6 : rm);
  const std::uint8_t sr = in.u8();
  o.scale_rounding = static_cast<rounding>(sr < 240 ? sr % 6 : sr);
  o.signed_zero = in.flag();
  o.non_finite_is_error = in.flag();
  return o;
}

// The error docs/api.md's order gives for these options and shape (ok when the call may proceed).
template <class Value>
errc expected_error(const nvfp4_options& o, std::size_t rows, std::size_t cols) {
  if (!nvfp4_valid_tensor_scale(o.tensor_scale) || static_cast<unsigned>(o.tensor_scale_convention) > 1u ||
      !valid_rounding(o.element_rounding) || !valid_rounding(o.scale_rounding))
    return errc::bad_argument;
  if (cols % nvfp4_block_size != 0) return errc::bad_block_size;
  if (lowbit_fuzz::mul_overflows(rows, cols, sizeof(Value))) return errc::bad_argument;
  return errc::ok;
}

template <class Src>
std::vector<Src> read_values(input& in, std::size_t n) {
  std::vector<float> f = in.floats(n);
  if constexpr (std::is_same<Src, float>::value) {
    return f;
  } else {
    std::vector<Src> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = encode<Src>(f[i]);
    return v;
  }
}

using outputs = lowbit_fuzz::block_outputs;

template <class Src>
void check(input& in) {
  nvfp4_options o = read_options(in);
  const lowbit_fuzz::shape sh = lowbit_fuzz::read_shape(in, nvfp4_block_size, sizeof(Src));
  const unsigned mode = in.u8() % 10u;
  const errc want_error = expected_error<Src>(o, sh.rows, sh.cols);

  if (sh.fake) {
    // Never allocated: the call must fail on the options or the shape before touching memory.
    const status s = nvfp4_quantize_matrix(lowbit_fuzz::fake_pointer<const Src>(), sh.rows, sh.cols, o,
                                             lowbit_fuzz::fake_pointer<std::uint8_t>(),
                                             lowbit_fuzz::fake_pointer<std::uint8_t>() + 4096);
    LOWBIT_FUZZ_CHECK(s.code() == want_error && !s.ok(), "shape %zu x %zu: %s, expected %s", sh.rows, sh.cols,
                      s.message(), lowbit::message(want_error));
    const status d = nvfp4_dequantize_matrix(lowbit_fuzz::fake_pointer<const std::uint8_t>(),
                                               lowbit_fuzz::fake_pointer<const std::uint8_t>() + 4096, sh.rows,
                                               sh.cols, o, lowbit_fuzz::fake_pointer<float>() + 8192);
    LOWBIT_FUZZ_CHECK(d.code() == expected_error<float>(o, sh.rows, sh.cols), "dequantize: shape %zu x %zu: %s",
                      sh.rows, sh.cols, d.message());
    return;
  }

  const std::size_t n = sh.n();
  const std::vector<Src> src = read_values<Src>(in, n);
  if (mode == 9 && want_error == errc::ok && n > 0) {  // the tensor scale from the data
    const auto t = lowbit_fuzz::on_both_paths([&] { return nvfp4_compute_tensor_scale(src.data(), n, o); });
    LOWBIT_FUZZ_CHECK(t.first.status.code() == t.second.status.code() &&
                          lowbit_fuzz::float_bits(t.first.value) == lowbit_fuzz::float_bits(t.second.value),
                      "tensor scale: scalar %a (%s), SIMD %a (%s)", static_cast<double>(t.first.value),
                      t.first.status.message(), static_cast<double>(t.second.value), t.second.status.message());
    if (t.first.ok()) {
      LOWBIT_FUZZ_CHECK(nvfp4_valid_tensor_scale(t.first.value), "computed tensor scale %a is out of range",
                        static_cast<double>(t.first.value));
      o.tensor_scale = t.first.value;
    }
  }
  const std::size_t e_bytes = want_error == errc::ok ? packed_bytes(n, 4) : 0;
  const std::size_t s_bytes = want_error == errc::ok ? n / nvfp4_block_size : 0;

  auto run = [&](unsigned m) {
    outputs out;
    out.elements = lowbit_fuzz::canary_buffer<std::uint8_t>(e_bytes + guard);
    out.scales = lowbit_fuzz::canary_buffer<std::uint8_t>(s_bytes + guard);
    std::vector<std::uint8_t> raw(n * sizeof(Src) + 1);
    const Src* x = src.data();
    std::uint8_t* e = out.elements.data();
    std::uint8_t* s = out.scales.data();
    if (m == 4) x = nullptr;
    if (m == 5) (in.flag() ? e : s) = nullptr;
    if (m == 6 && sizeof(Src) > 1) {
      if (n != 0) std::memcpy(raw.data() + 1, src.data(), n * sizeof(Src));
      x = reinterpret_cast<const Src*>(raw.data() + 1);
    }
    if (m == 7 && e_bytes > 0 && s_bytes > 0) s = e + (e_bytes > 1 ? 1 : 0);
    out.st = nvfp4_quantize_matrix(x, sh.rows, sh.cols, o, e, s);
    return out;
  };

  if (want_error != errc::ok) {
    const outputs out = run(0);
    LOWBIT_FUZZ_CHECK(out.st.code() == want_error, "quantize says %s, expected %s", out.st.message(),
                      lowbit::message(want_error));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(out.elements) && lowbit_fuzz::untouched(out.scales),
                      "an options or shape error (%s) wrote", out.st.message());
    return;
  }

  if (n > 0 && mode >= 4 && mode <= 7 && !(mode == 6 && sizeof(Src) == 1) && !(mode == 7 && (e_bytes == 0 || s_bytes == 0))) {
    const outputs out = run(mode);
    const errc want = mode == 6 ? errc::misaligned : mode == 7 ? errc::overlapping_buffers : errc::bad_argument;
    LOWBIT_FUZZ_CHECK(out.st.code() == want, "buffer mode %u: %s, expected %s", mode, out.st.message(),
                      lowbit::message(want));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(out.elements) && lowbit_fuzz::untouched(out.scales),
                      "buffer mode %u wrote", mode);
    return;
  }

  const auto both = lowbit_fuzz::on_both_paths([&] { return run(0); });
  const outputs& ref = both.first;
  const outputs& simd = both.second;
  LOWBIT_FUZZ_CHECK(ref.st.ok() || (ref.st.code() == errc::non_finite_input && o.non_finite_is_error),
                    "valid call (%zu x %zu, t %a) failed: %s", sh.rows, sh.cols, static_cast<double>(o.tensor_scale),
                    ref.st.message());
  if (!lowbit_fuzz::check_block_quantize(ref, simd, e_bytes, s_bytes, guard, n)) return;
  // Where the best path is AVX-512, the AVX2 path too (on_both_paths ran scalar and the best).
  const bool also_avx2 = active_isa() == isa::avx512;
  if (also_avx2) {
    const outputs v2 = [&] {
      const scoped_isa s{isa::avx2};
      return run(0);
    }();
    (void)lowbit_fuzz::check_block_quantize(ref, v2, e_bytes, s_bytes, guard, n);
  }

  // Dequantize, both paths; then quantize again.
  auto dequant = [&] {
    std::vector<float> y = lowbit_fuzz::canary_buffer<float>(n + guard);
    const status s = nvfp4_dequantize_matrix(ref.elements.data(), ref.scales.data(), sh.rows, sh.cols, o, y.data());
    LOWBIT_FUZZ_CHECK(s.ok(), "dequantize of valid codes: %s", s.message());
    return y;
  };
  const auto ys = lowbit_fuzz::on_both_paths(dequant);
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, ys.second), "dequantize: SIMD differs at %zu",
                    lowbit_fuzz::first_difference(ys.first, ys.second));
  if (also_avx2) {
    const std::vector<float> y2 = [&] {
      const scoped_isa s{isa::avx2};
      return dequant();
    }();
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, y2), "dequantize: AVX2 differs at %zu",
                      lowbit_fuzz::first_difference(ys.first, y2));
  }
  for (std::size_t i = n; i < n + guard; ++i)
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::float_bits(ys.first[i]) == 0xA5A5A5A5u, "dequantize wrote past n");

  // ggml's block_nvfp4 of arbitrary bytes (scale bytes 0xFF included: scale_overflow, the blocks
  // before the first such ggml block written): every path against the scalar one, status and
  // output with its guard.
  if (n % 64 == 0 && n > 0) {
    std::vector<ggml_block_nvfp4> blocks(n / 64);
    std::uint32_t h = in.u32() | 1u;
    auto next = [&h] {
      h ^= h << 13;
      h ^= h >> 17;
      h ^= h << 5;
      return static_cast<std::uint8_t>(h >> 24);
    };
    for (ggml_block_nvfp4& b : blocks) {
      for (std::uint8_t& d : b.d) d = next();
      for (std::uint8_t& q : b.qs) q = next();
    }
    auto gdeq = [&] {
      std::pair<errc, std::vector<float>> r{errc::ok, lowbit_fuzz::canary_buffer<float>(n + guard)};
      r.first = nvfp4_dequantize_ggml(blocks.data(), n, o, r.second.data()).code();
      return r;
    };
    const auto gs = lowbit_fuzz::on_both_paths(gdeq);
    LOWBIT_FUZZ_CHECK(gs.first.first == gs.second.first && lowbit_fuzz::same_bytes(gs.first.second, gs.second.second),
                      "ggml dequantize: SIMD differs (status %s / %s) at %zu", lowbit::message(gs.first.first),
                      lowbit::message(gs.second.first), lowbit_fuzz::first_difference(gs.first.second, gs.second.second));
    if (also_avx2) {
      const auto g2 = [&] {
        const scoped_isa s{isa::avx2};
        return gdeq();
      }();
      LOWBIT_FUZZ_CHECK(gs.first.first == g2.first && lowbit_fuzz::same_bytes(gs.first.second, g2.second),
                        "ggml dequantize: AVX2 differs at %zu", lowbit_fuzz::first_difference(gs.first.second, g2.second));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  if (in.flag()) {
    check<float>(in);
  } else {
    check<bfloat16>(in);
  }
  return 0;
}
