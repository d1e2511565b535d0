// Fuzz target: the integer schemes (lowbit/schemes/integer.hpp): quantize_int,
// quantize_int_packed, quantize_int_fixed, dequantize_int, dequantize_int_packed.
//
// Input: every int_params field (widths 0..255, enumerators out of range, group sizes from 0 to
// 2^64 - 1, search settings beyond their bounds), a shape (valid, indivisible, empty or
// overflowing), a buffer mode, random bits, then the data.
// Checks, each on any input:
//  - options and shape errors are the ones int_groups reports, found before anything is written
//    (canaries intact; overflowing shapes get pointers that are never valid);
//  - null, misaligned and overlapping buffers are errors and nothing is written;
//  - the SIMD path gives the scalar reference's status and bytes (codes, packed codes, scales,
//    zeros, dequantized values), and nothing is written past what the shape needs; on an AVX-512
//    CPU both SIMD paths (AVX-512, the best, and AVX2) do;
//  - symmetric schemes never write zeros; a valid call fails only on its data
//    (non_finite_input, scale_overflow);
//  - the packed and unpacked codes dequantize to the same values;
//  - re-quantizing the dequantized values against the stored scales and zero-points gives the
//    codes back (integer zero-points; round to nearest).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <lowbit/schemes/integer.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t guard = 8;

template <class E>
E read_enum(input& in, unsigned count) {
  const std::uint8_t v = in.u8();
  return static_cast<E>(v < 248 ? v % count : v);
}

int_params read_params(input& in) {
  int_params p;
  const std::uint8_t b = in.u8();
  p.bits = b < 224 ? 2 + b % 7 : (b < 240 ? static_cast<int>(b % 4 == 0 ? 0 : b % 4 == 1 ? 1 : b % 4 == 2 ? 9 : -1)
                                           : static_cast<int>(in.u32()));
  p.scheme = read_enum<int_scheme>(in, 3);
  p.range = read_enum<int_range>(in, 3);
  p.range_includes_zero = in.flag();
  p.granularity = read_enum<granularity>(in, 4);
  static const std::size_t groups[] = {32, 64, 128, 16, 8, 4, 2, 1, 3, 0, 48, std::size_t{1} << 32,
                                       std::size_t{1} << 62, static_cast<std::size_t>(-1)};
  const std::uint8_t g = in.u8();
  p.group_size = g < 200 ? groups[g % 14] : in.u16();
  // A group size only goes with per_group; mostly keep the pair consistent.
  if (in.u8() < 200) {
    if (p.granularity == granularity::per_group && p.group_size == 0) p.group_size = 32;
    if (p.granularity != granularity::per_group) p.group_size = 0;
  }
  p.element_rounding = read_enum<rounding>(in, 6);
  p.scale_format = read_enum<scale_storage>(in, 3);
  if (in.u8() < 24) {
    p.search = read_enum<scale_search>(in, 2);
    const std::uint8_t k = in.u8();
    p.search_grid = k < 200 ? 1 + k % 20 : (k < 230 ? static_cast<int>(in.u32()) : (k % 2 ? 0 : max_search_grid + 1));
    p.search_maxshrink = in.flag() ? 0.8f : in.f32();
    p.search_norm = in.flag() ? 2.4f : in.f32();
  }
  return p;
}

struct outputs {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales, zeros;
  status st;
};

void check(input& in) {
  const int_params p = read_params(in);
  const lowbit_fuzz::shape sh =
      lowbit_fuzz::read_shape(in, p.granularity == granularity::per_group ? p.group_size : 1, sizeof(float),
                              std::size_t{1} << 16);
  const unsigned mode = in.u8() % 12u;
  const bool packed = in.flag();

  if (sh.fake) {
    std::uint8_t* codes = lowbit_fuzz::fake_pointer<std::uint8_t>();
    float* scales = lowbit_fuzz::fake_pointer<float>() + 1024;
    float* zeros = lowbit_fuzz::fake_pointer<float>() + 2048;
    const float* x = lowbit_fuzz::fake_pointer<const float>() + 4096;
    const status a = packed ? quantize_int_packed(x, sh.rows, sh.cols, p, codes, scales, zeros)
                            : quantize_int(x, sh.rows, sh.cols, p, codes, scales, zeros);
    LOWBIT_FUZZ_CHECK(!a.ok(), "quantize: shape %zu x %zu accepted", sh.rows, sh.cols);
    const status b = packed ? dequantize_int_packed(codes, scales, zeros, sh.rows, sh.cols, p, const_cast<float*>(x))
                            : dequantize_int(codes, scales, zeros, sh.rows, sh.cols, p, const_cast<float*>(x));
    LOWBIT_FUZZ_CHECK(!b.ok(), "dequantize: shape %zu x %zu accepted", sh.rows, sh.cols);
    const status c = quantize_int_fixed(x, scales, zeros, sh.rows, sh.cols, p, codes);
    LOWBIT_FUZZ_CHECK(!c.ok(), "quantize_int_fixed: shape %zu x %zu accepted", sh.rows, sh.cols);
    return;
  }

  const result<int_grouping> g = int_groups(p, sh.rows, sh.cols);
  const std::size_t n = sh.n();
  const std::vector<float> src = in.floats(n, in.u8() < 200);
  std::vector<std::uint32_t> random_bits;
  if (p.element_rounding == rounding::stochastic && in.flag()) {
    random_bits.resize(n);
    for (auto& r : random_bits) r = in.u32();
  }
  const std::uint32_t* rb = random_bits.empty() ? nullptr : random_bits.data();
  const std::size_t groups = g.ok() ? g.value.group_count : 0;
  const bool symmetric = p.scheme == int_scheme::symmetric;
  const std::size_t code_bytes = g.ok() ? (packed ? packed_bytes(n, p.bits) : n) : 0;

  auto run = [&](unsigned m) {
    outputs out;
    out.codes = lowbit_fuzz::canary_buffer<std::uint8_t>(code_bytes + guard);
    out.scales = lowbit_fuzz::canary_buffer<float>(groups + guard);
    out.zeros = lowbit_fuzz::canary_buffer<float>(groups + guard);
    std::vector<float> shifted(n + 1);
    const float* x = src.data();
    std::uint8_t* c = out.codes.data();
    float* s = out.scales.data();
    float* z = out.zeros.data();
    if (m == 4) x = nullptr;
    if (m == 5) c = nullptr;
    if (m == 6) s = nullptr;
    if (m == 7) z = nullptr;
    if (m == 8) {
      if (n != 0) std::memcpy(reinterpret_cast<unsigned char*>(shifted.data()) + 1, src.data(), (n - 1) * sizeof(float));
      x = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(shifted.data()) + 1);
    }
    if (m == 9) z = s;  // zeros over scales
    out.st = packed ? quantize_int_packed(x, sh.rows, sh.cols, p, c, s, z, rb)
                    : quantize_int(x, sh.rows, sh.cols, p, c, s, z, rb);
    return out;
  };
  auto untouched = [](const outputs& o) {
    return lowbit_fuzz::untouched(o.codes) && lowbit_fuzz::untouched(o.scales) && lowbit_fuzz::untouched(o.zeros);
  };

  if (!g.ok()) {
    const outputs out = run(0);
    LOWBIT_FUZZ_CHECK(out.st.code() == g.status.code(), "quantize says %s, int_groups %s", out.st.message(),
                      g.status.message());
    LOWBIT_FUZZ_CHECK(untouched(out), "an options or shape error (%s) wrote", out.st.message());
    return;
  }

  // Buffer errors: null (zeros only matter to the affine schemes), misaligned, overlapping.
  const bool zeros_used = !symmetric;
  if (n > 0 && mode >= 4 && mode <= 9 && !(mode == 7 && !zeros_used) && !(mode == 9 && (!zeros_used || groups == 0))) {
    const outputs out = run(mode);
    const errc want = mode == 8 ? errc::misaligned : mode == 9 ? errc::overlapping_buffers : errc::bad_argument;
    LOWBIT_FUZZ_CHECK(out.st.code() == want, "buffer mode %u: %s, expected %s", mode, out.st.message(),
                      lowbit::message(want));
    LOWBIT_FUZZ_CHECK(untouched(out), "buffer mode %u wrote", mode);
    return;
  }

  const auto both = lowbit_fuzz::on_both_paths([&] { return run(0); });
  const outputs& ref = both.first;
  const outputs& simd = both.second;
  LOWBIT_FUZZ_CHECK(ref.st.code() == simd.st.code(), "status: scalar %s, SIMD %s", ref.st.message(), simd.st.message());
  LOWBIT_FUZZ_CHECK(ref.st.ok() || ref.st.code() == errc::non_finite_input || ref.st.code() == errc::scale_overflow,
                    "a valid call failed: %s", ref.st.message());
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref.codes, simd.codes), "codes: SIMD differs at byte %zu of %zu",
                    lowbit_fuzz::first_difference(ref.codes, simd.codes), code_bytes);
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref.scales, simd.scales), "scales: SIMD differs at %zu of %zu",
                    lowbit_fuzz::first_difference(ref.scales, simd.scales), groups);
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref.zeros, simd.zeros), "zeros: SIMD differs at %zu of %zu",
                    lowbit_fuzz::first_difference(ref.zeros, simd.zeros), groups);
  if (lowbit::is_supported(lowbit::isa::avx512)) {  // the best path was AVX-512: AVX2 must agree too
    const outputs mid = [&] {
      const lowbit::scoped_isa s{lowbit::isa::avx2};
      return run(0);
    }();
    LOWBIT_FUZZ_CHECK(ref.st.code() == mid.st.code() && lowbit_fuzz::same_bytes(ref.codes, mid.codes) &&
                          lowbit_fuzz::same_bytes(ref.scales, mid.scales) && lowbit_fuzz::same_bytes(ref.zeros, mid.zeros),
                      "the AVX2 path differs from the scalar one (status %s)", mid.st.message());
  }
  for (std::size_t i = 0; i < guard; ++i)
    LOWBIT_FUZZ_CHECK(ref.codes[code_bytes + i] == lowbit_fuzz::canary &&
                          lowbit_fuzz::float_bits(ref.scales[groups + i]) == 0xA5A5A5A5u &&
                          lowbit_fuzz::float_bits(ref.zeros[groups + i]) == 0xA5A5A5A5u,
                      "wrote past %zu code bytes / %zu groups", code_bytes, groups);
  if (symmetric) LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(ref.zeros), "a symmetric scheme wrote zeros");
  if (n == 0) {
    LOWBIT_FUZZ_CHECK(ref.st.ok() && untouched(ref), "an empty call wrote or failed");
    return;
  }
  if (!ref.st.ok()) return;

  // Dequantize on both paths; packed and unpacked agree.
  auto dequant = [&](const std::vector<std::uint8_t>& codes, bool is_packed) {
    std::vector<float> y = lowbit_fuzz::canary_buffer<float>(n + guard);
    const float* z = symmetric ? nullptr : ref.zeros.data();
    const status s = is_packed ? dequantize_int_packed(codes.data(), ref.scales.data(), z, sh.rows, sh.cols, p, y.data())
                               : dequantize_int(codes.data(), ref.scales.data(), z, sh.rows, sh.cols, p, y.data());
    LOWBIT_FUZZ_CHECK(s.ok(), "dequantize of valid codes: %s", s.message());
    return y;
  };
  const auto ys = lowbit_fuzz::on_both_paths([&] { return dequant(ref.codes, packed); });
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, ys.second), "dequantize: SIMD differs at %zu",
                    lowbit_fuzz::first_difference(ys.first, ys.second));
  if (lowbit::is_supported(lowbit::isa::avx512)) {
    const std::vector<float> mid = [&] {
      const lowbit::scoped_isa s{lowbit::isa::avx2};
      return dequant(ref.codes, packed);
    }();
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, mid), "dequantize: AVX2 differs at %zu",
                      lowbit_fuzz::first_difference(ys.first, mid));
  }
  for (std::size_t i = n; i < n + guard; ++i)
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::float_bits(ys.first[i]) == 0xA5A5A5A5u, "dequantize wrote past n");

  std::vector<std::uint8_t> codes = ref.codes;  // one code per byte, for the round trip
  if (packed) {
    // The same call unpacked must give these values too.
    std::vector<std::uint8_t> unpacked = lowbit_fuzz::canary_buffer<std::uint8_t>(n);
    std::vector<float> s2(groups), z2(groups);
    const status s = quantize_int(src.data(), sh.rows, sh.cols, p, unpacked.data(), s2.data(), z2.data(), rb);
    LOWBIT_FUZZ_CHECK(s.ok(), "quantize_int fails where quantize_int_packed did not: %s", s.message());
    const std::vector<float> y2 = dequant(unpacked, false);
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, y2), "packed and unpacked codes dequantize differently at %zu",
                      lowbit_fuzz::first_difference(ys.first, y2));
    codes = unpacked;
  }
  codes.resize(n);

  if (p.scheme != int_scheme::affine_offset) {
    int_params q = p;
    q.element_rounding = rounding::nearest_even;
    const auto again = lowbit_fuzz::on_both_paths([&] {
      std::vector<std::uint8_t> c = lowbit_fuzz::canary_buffer<std::uint8_t>(n);
      const status s = quantize_int_fixed(ys.first.data(), ref.scales.data(), symmetric ? nullptr : ref.zeros.data(),
                                          sh.rows, sh.cols, q, c.data());
      LOWBIT_FUZZ_CHECK(s.ok(), "quantize_int_fixed of dequantized values: %s", s.message());
      return c;
    });
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(again.first, again.second), "quantize_int_fixed: SIMD differs at %zu",
                      lowbit_fuzz::first_difference(again.first, again.second));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(again.first, codes),
                      "re-quantizing dequantized values changes code %zu: %u -> %u (scheme %u, bits %d)",
                      lowbit_fuzz::first_difference(again.first, codes),
                      codes[lowbit_fuzz::first_difference(again.first, codes)],
                      again.first[lowbit_fuzz::first_difference(again.first, codes)],
                      static_cast<unsigned>(p.scheme), p.bits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  check(in);
  return 0;
}
