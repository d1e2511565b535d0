// The AVX2 and AVX-512 kernels of the block formats (kernels/mx/avx2.hpp, avx512.hpp,
// kernels/nvfp4/avx2.hpp, avx512.hpp; every path in lowbit_test::simd_paths()) against the scalar
// reference beside them (kernels/mx/scalar.hpp, kernels/nvfp4/scalar.hpp): every MX
// format and NVFP4, every scale rule and element rounding, float32 and bfloat16, flat arrays and
// matrices, unaligned buffers, random blocks and the edge blocks (ties, saturation, subnormal
// elements and inputs, all-zero, NaN, Inf, amax at the E8M0 clamps, scales outside the fast
// range), compared byte for byte: element bytes, scale bytes, status, and dequantized values as
// bit patterns. Each comparison runs with MXCSR at its default and with FTZ+DAZ set and rounding
// toward +Inf; the two paths must agree in the same state.
#include <lowbit/schemes/nvfp4.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace lb = lowbit;
using lb::rounding;

#if LOWBIT_HAS_AVX2_KERNELS

using lowbit_test::float_bits;
using lowbit_test::float_from_bits;

// Each comparison runs with MXCSR at its default (false) and with FTZ+DAZ set and rounding toward
// +Inf (true: the SIMD quantizers that round with vcvtps2dq must hold their own environment).
class fp_env : public lowbit_test::mxcsr_scope {
 public:
  explicit fp_env(bool ftz_daz)
      : lowbit_test::mxcsr_scope(ftz_daz ? lowbit_test::mxcsr_ftz | lowbit_test::mxcsr_daz | lowbit_test::mxcsr_round_up
                                         : 0u) {}
};

const bool ftz_daz_states[] = {false, true};
const rounding element_roundings[] = {rounding::nearest_even, rounding::nearest_away, rounding::nearest_toward_zero,
                                      rounding::toward_zero, rounding::toward_pos_inf};
const lb::e8m0_rule scale_rules[] = {lb::e8m0_rule::floor, lb::e8m0_rule::ceil, lb::e8m0_rule::even,
                                     lb::e8m0_rule::floor_log2f};

// n elements of T stored `offset` elements past the start of their allocation, so the kernels
// see pointers that are not vector aligned.
template <class T>
class offset_buffer {
 public:
  offset_buffer(std::size_t n, std::size_t offset, T fill = T{}) : data_(n + offset, fill), offset_(offset) {}
  T* get() { return data_.data() + offset_; }
  const T* get() const { return data_.data() + offset_; }
  std::size_t size() const { return data_.size() - offset_; }
  std::vector<T> copy() const { return std::vector<T>(data_.begin() + static_cast<std::ptrdiff_t>(offset_), data_.end()); }

 private:
  std::vector<T> data_;
  std::size_t offset_;
};

// ---------------------------------------------------------------------------------------------
// Test data: blocks of many kinds.

// The magnitudes of an element format: value of code c (MXINT8: c / 64).
template <class Fmt>
double element_value(unsigned c) {
  if constexpr (std::is_same<typename Fmt::element, std::int8_t>::value) {
    return static_cast<double>(c) / 64.0;
  } else {
    return static_cast<double>(static_cast<float>(Fmt::element::from_bits(static_cast<std::uint8_t>(c))));
  }
}
template <class Fmt>
unsigned element_max_code() {
  if constexpr (std::is_same<typename Fmt::element, std::int8_t>::value) {
    return 127;
  } else {
    return Fmt::element::format::max_bits;
  }
}

// Fills one block of `bs` values of the given kind. `scale_exp` is the power of two the block's
// values are built around.
template <class Fmt>
void fill_block(float* x, std::size_t bs, int kind, int scale_exp, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  auto sign = [&](double v) { return (rng() & 1u) != 0 ? -v : v; };
  auto finite = [](double v) {
    const double m = std::numeric_limits<float>::max();
    return static_cast<float>(v > m ? m : v < -m ? -m : v);
  };
  const unsigned max_code = element_max_code<Fmt>();
  switch (kind) {
    case 0:  // Gaussian around 2^scale_exp
      for (std::size_t i = 0; i < bs; ++i) x[i] = finite(std::ldexp(normal(rng), scale_exp));
      break;
    case 1:  // any bit pattern: NaN, Inf, subnormals included
      for (std::size_t i = 0; i < bs; ++i) x[i] = float_from_bits(any_bits(rng));
      break;
    case 2:  // all zero, with signs
      for (std::size_t i = 0; i < bs; ++i) x[i] = static_cast<float>(sign(0.0));
      break;
    case 3: {  // a Gaussian block with one NaN or Inf
      for (std::size_t i = 0; i < bs; ++i) x[i] = finite(std::ldexp(normal(rng), scale_exp));
      const std::uint32_t specials[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u};
      x[rng() % bs] = float_from_bits(specials[rng() % 5]);
      break;
    }
    case 4:  // float subnormals only (and zeros)
      for (std::size_t i = 0; i < bs; ++i) x[i] = float_from_bits((any_bits(rng) & 0x807FFFFFu) >> (rng() % 24));
      break;
    case 5:  // near the float maximum
      for (std::size_t i = 0; i < bs; ++i) x[i] = float_from_bits((0x7F000000u + (any_bits(rng) & 0x7FFFFFu)) | static_cast<std::uint32_t>(rng() & 1u) << 31);
      break;
    case 6: {  // ties: midpoints between neighbouring element values, times 2^s; the block's first
               // value is the element max (or just below the next power of two) so the floor
               // rule picks s
      x[0] = static_cast<float>(sign(std::ldexp(element_value<Fmt>(max_code) * ((rng() & 1u) ? 1.0 : 1.3), scale_exp)));
      for (std::size_t i = 1; i < bs; ++i) {
        const unsigned c = static_cast<unsigned>(rng() % max_code);
        const double lo = element_value<Fmt>(c), hi = element_value<Fmt>(c + 1);
        const int pick = static_cast<int>(rng() % 4);
        const double v = pick == 0 ? lo : pick == 1 ? (lo + hi) / 2 : pick == 2 ? hi * 1.25 : (lo + hi) / 2 * (1 + 0x1p-20);
        x[i] = static_cast<float>(sign(std::ldexp(v, scale_exp)));
      }
      break;
    }
    case 7:  // one large value and the rest spread over many binades down to subnormals
      x[0] = finite(sign(std::ldexp(1.0 + (rng() % 1000) / 1000.0, scale_exp)));
      for (std::size_t i = 1; i < bs; ++i)
        x[i] = static_cast<float>(sign(std::ldexp(1.0 + (rng() % 1000) / 1000.0, scale_exp - static_cast<int>(rng() % 40))));
      break;
    default:  // values just below and above the saturation bound
      for (std::size_t i = 0; i < bs; ++i)
        x[i] = static_cast<float>(sign(std::ldexp(element_value<Fmt>(max_code) * (0.9 + 0.3 * (rng() % 100) / 100.0),
                                                  scale_exp)));
      break;
  }
}

constexpr int block_kinds = 9;

// n values in blocks of bs, each block of a random kind around a random power of two in
// [lo_exp, hi_exp].
template <class Fmt>
std::vector<float> make_data(std::size_t n, std::size_t bs, std::uint64_t seed, int lo_exp = -140, int hi_exp = 120) {
  std::mt19937_64 rng(seed);
  std::vector<float> x(n);
  for (std::size_t b = 0; b < n / bs; ++b) {
    const int kind = static_cast<int>(rng() % block_kinds);
    const int e = lo_exp + static_cast<int>(rng() % static_cast<std::uint64_t>(hi_exp - lo_exp + 1));
    fill_block<Fmt>(x.data() + b * bs, bs, kind, e, rng);
  }
  return x;
}

std::vector<lb::bfloat16> to_bf16(const std::vector<float>& x) {
  std::vector<lb::bfloat16> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = lb::bfloat16::from_bits(static_cast<std::uint16_t>(float_bits(x[i]) >> 16));
  return y;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

template <class T>
std::vector<std::uint32_t> bits_of(const std::vector<T>& v) {
  std::vector<std::uint32_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same<T, float>::value) {
      r[i] = float_bits(v[i]);
    } else {
      r[i] = v[i].bits();
    }
  }
  return r;
}

// The first difference between two byte or bit vectors, for the failure message.
template <class T>
std::string first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return "sizes differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return "index " + std::to_string(i) + ": scalar " + std::to_string(a[i]) + ", simd " + std::to_string(b[i]);
    }
  }
  return "";
}

#define EXPECT_SAME(a, b, what) EXPECT_EQ(first_difference(a, b), "") << what

struct mx_result {
  int status = 0;
  std::vector<std::uint8_t> elements, scales;
};

// Quantizes src (n values) on path `isa` with buffers offset by `offset` elements.
template <class Fmt, class Src>
mx_result mx_run_quantize(lb::isa isa, const std::vector<Src>& x, std::size_t rows, const lb::mx_options& o,
                          std::size_t offset) {
  lb::scoped_isa scope(isa);
  const std::size_t n = x.size();
  offset_buffer<Src> src(n, offset);
  std::memcpy(static_cast<void*>(src.get()), x.data(), n * sizeof(Src));
  offset_buffer<std::uint8_t> el(lb::packed_bytes(n, Fmt::element_bits), offset, 0xEE);
  offset_buffer<std::uint8_t> sc(o.block_size ? n / o.block_size : 0, offset, 0xEE);
  lb::status st = rows == 0 ? lb::mx_quantize<Fmt>(src.get(), n, o, el.get(), sc.get())
                            : lb::mx_quantize_matrix<Fmt>(src.get(), rows, n / rows, o, el.get(), sc.get());
  mx_result r;
  r.status = static_cast<int>(st.code());
  r.elements = el.copy();
  r.scales = sc.copy();
  return r;
}

template <class Fmt, class Dst>
std::vector<std::uint32_t> mx_run_dequantize(lb::isa isa, const std::vector<std::uint8_t>& el,
                                             const std::vector<std::uint8_t>& sc, std::size_t n, std::size_t rows,
                                             std::size_t bs, std::size_t offset, int* status) {
  lb::scoped_isa scope(isa);
  offset_buffer<std::uint8_t> e(el.size(), offset);
  offset_buffer<std::uint8_t> s(sc.size(), offset + 3);
  std::memcpy(e.get(), el.data(), el.size());
  std::memcpy(s.get(), sc.data(), sc.size());
  offset_buffer<Dst> out(n, offset, Dst{});
  lb::status st = rows == 0 ? lb::mx_dequantize<Fmt>(e.get(), s.get(), n, lb::mx_presets::ocp(bs), out.get())
                            : lb::mx_dequantize_matrix<Fmt>(e.get(), s.get(), rows, n / rows, lb::mx_presets::ocp(bs), out.get());
  *status = static_cast<int>(st.code());
  return bits_of(out.copy());
}

// Quantizes x both ways under both MXCSR states and compares, then dequantizes the result (and
// random bytes with random scales) both ways into float and bfloat16 and compares.
template <class Fmt, class Src>
void mx_compare(const std::vector<Src>& x, const lb::mx_options& o, std::size_t rows, std::size_t offset,
                const std::string& what) {
  for (bool ftz : ftz_daz_states) for (const lb::isa path : lowbit_test::simd_paths()) {
    fp_env env(ftz);
    const std::string w = what + (ftz ? " [FTZ+DAZ] " : " [no FTZ/DAZ] ") + lb::isa_name(path);
    const mx_result s = mx_run_quantize<Fmt>(lb::isa::scalar, x, rows, o, 0);
    const mx_result v = mx_run_quantize<Fmt>(path, x, rows, o, offset);
    EXPECT_EQ(s.status, v.status) << w;
    EXPECT_SAME(s.elements, v.elements, w + " elements");
    EXPECT_SAME(s.scales, v.scales, w + " scales");
    if (s.status != static_cast<int>(lb::errc::ok) && s.status != static_cast<int>(lb::errc::non_finite_input)) continue;
    const std::size_t n = x.size();
    int st_s = 0, st_v = 0;
    EXPECT_SAME((mx_run_dequantize<Fmt, float>(lb::isa::scalar, s.elements, s.scales, n, rows, o.block_size, 0, &st_s)),
                (mx_run_dequantize<Fmt, float>(path, s.elements, s.scales, n, rows, o.block_size, offset, &st_v)),
                w + " dequantized to float");
    EXPECT_EQ(st_s, st_v) << w;
    EXPECT_SAME(
        (mx_run_dequantize<Fmt, lb::bfloat16>(lb::isa::scalar, s.elements, s.scales, n, rows, o.block_size, 0, &st_s)),
        (mx_run_dequantize<Fmt, lb::bfloat16>(path, s.elements, s.scales, n, rows, o.block_size, offset, &st_v)),
        w + " dequantized to bfloat16");
    // Arbitrary bytes: NaN and Inf element codes, every scale code.
    const std::vector<std::uint8_t> re = random_bytes(s.elements.size(), n + o.block_size);
    const std::vector<std::uint8_t> rs = random_bytes(s.scales.size(), 3 * n + o.block_size);
    EXPECT_SAME((mx_run_dequantize<Fmt, float>(lb::isa::scalar, re, rs, n, rows, o.block_size, 0, &st_s)),
                (mx_run_dequantize<Fmt, float>(path, re, rs, n, rows, o.block_size, offset, &st_v)),
                w + " random bytes to float");
    EXPECT_SAME((mx_run_dequantize<Fmt, lb::bfloat16>(lb::isa::scalar, re, rs, n, rows, o.block_size, 0, &st_s)),
                (mx_run_dequantize<Fmt, lb::bfloat16>(path, re, rs, n, rows, o.block_size, offset, &st_v)),
                w + " random bytes to bfloat16");
  }
}

// ---------------------------------------------------------------------------------------------
// MX, typed over the six formats.

template <class Fmt>
class MxKernel : public ::testing::Test {};
using mx_formats =
    ::testing::Types<lb::mxfp4_e2m1, lb::mxfp6_e2m3, lb::mxfp6_e3m2, lb::mxfp8_e4m3, lb::mxfp8_e5m2, lb::mxint8>;
TYPED_TEST_SUITE(MxKernel, mx_formats);

// Every rule, every rounding, both zero conventions, several block sizes (including ones the
// AVX2 kernel hands back to the scalar loop), block counts that leave partial groups of eight.
TYPED_TEST(MxKernel, RandomBlocksEveryOption) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  std::uint64_t seed = 1;
  // 96: the AVX-512 quantizers' 64-value steps then cross block boundaries.
  for (std::size_t bs : {std::size_t{32}, std::size_t{64}, std::size_t{96}, std::size_t{8}, std::size_t{16},
                         std::size_t{24}, std::size_t{4}}) {
    if (!lb::mx_valid_block_size<Fmt>(bs)) continue;
    for (lb::e8m0_rule rule : scale_rules) {
      for (rounding rm : element_roundings) {
        for (bool signed_zero : {true, false}) {
          lb::mx_options o;
          o.block_size = bs;
          o.scale_rule = rule;
          o.element_rounding = rm;
          o.signed_zero = signed_zero;
          const std::size_t blocks = 1 + (seed * 7) % 45;
          const std::vector<float> x = make_data<Fmt>(blocks * bs, bs, seed++);
          mx_compare<Fmt>(x, o, 0, seed % 8,
                          std::string(Fmt::name) + " bs " + std::to_string(bs) + " rule " +
                              std::to_string(static_cast<int>(rule)) + " rm " + std::to_string(static_cast<int>(rm)) +
                              (signed_zero ? "" : " unsigned zero"));
        }
      }
    }
  }
}

// Long arrays (many full groups), the presets, and non_finite_is_error.
TYPED_TEST(MxKernel, LongArraysAndPresets) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  const std::vector<float> x = make_data<Fmt>(32 * 1000, 32, 99);
  mx_compare<Fmt>(x, lb::mx_presets::ocp(), 0, 1, std::string(Fmt::name) + " ocp");
  mx_compare<Fmt>(x, lb::mx_presets::microxcaling(), 0, 2, std::string(Fmt::name) + " microxcaling");
  mx_compare<Fmt>(x, lb::mx_presets::ggml(), 0, 3, std::string(Fmt::name) + " ggml");
  mx_compare<Fmt>(x, lb::mx_presets::rceil(), 0, 5, std::string(Fmt::name) + " rceil");
  lb::mx_options strict;
  strict.non_finite_is_error = true;
  mx_compare<Fmt>(x, strict, 0, 7, std::string(Fmt::name) + " non_finite_is_error");
  // Typical data: one scale range, no specials.
  mx_compare<Fmt>(make_data<Fmt>(32 * 512, 32, 7, -3, 3), lb::mx_options{}, 0, 0, std::string(Fmt::name) + " typical");
}

TYPED_TEST(MxKernel, Matrices) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  const std::size_t shapes[][2] = {{1, 32}, {3, 96}, {7, 64}, {5, 256}, {17, 32}, {2, 1024}};
  std::uint64_t seed = 500;
  for (const auto& shape : shapes) {
    const std::vector<float> x = make_data<Fmt>(shape[0] * shape[1], 32, seed++);
    mx_compare<Fmt>(x, lb::mx_options{}, shape[0], seed % 5,
                    std::string(Fmt::name) + " matrix " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
  }
  // cols not a multiple of the block size: both paths refuse the same way
  const std::vector<float> x = make_data<Fmt>(3 * 40, 8, 3);
  mx_compare<Fmt>(x, lb::mx_options{}, 3, 1, std::string(Fmt::name) + " matrix 3x40");
}

TYPED_TEST(MxKernel, Bfloat16Input) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  for (rounding rm : {rounding::nearest_even, rounding::toward_pos_inf}) {
    lb::mx_options o;
    o.element_rounding = rm;
    mx_compare<Fmt>(to_bf16(make_data<Fmt>(32 * 77, 32, 11)), o, 0, 1, std::string(Fmt::name) + " bfloat16 input");
    o.block_size = 16;
    mx_compare<Fmt>(to_bf16(make_data<Fmt>(16 * 77, 16, 12)), o, 0, 3, std::string(Fmt::name) + " bfloat16 bs 16");
  }
}

// The E8M0 scale of every amax exponent (float subnormals and zero included) with mantissas at
// and around each rule's decision points: one block per amax, compared by scale byte.
TYPED_TEST(MxKernel, ScaleOfEveryAmaxBinade) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  const std::uint32_t c = float_bits(Fmt::element_max) & 0x7FFFFFu;
  const std::uint32_t carry = (1u << 23) - (1u << (22 - Fmt::mantissa_bits));
  const std::uint32_t mantissas[] = {0,         1,        2,     c - 1,     c,        c + 1,   carry - 1,
                                     carry,     carry + 1, 0x400000, 0x7FFFFF, 0x7FFFFE, 0x12345, 0x654321};
  std::vector<float> x;
  for (std::uint32_t field = 0; field < 255; ++field) {
    for (std::uint32_t m : mantissas) {
      const float amax = float_from_bits(field << 23 | (m & 0x7FFFFFu));
      std::vector<float> block(32, 0.0f);
      block[field % 32] = (m & 1u) != 0 ? -amax : amax;
      block[(field + 5) % 32] = amax / 3.0f;
      x.insert(x.end(), block.begin(), block.end());
    }
  }
  for (lb::e8m0_rule rule : scale_rules) {
    lb::mx_options o;
    o.scale_rule = rule;
    mx_compare<Fmt>(x, o, 0, 1, std::string(Fmt::name) + " amax sweep rule " + std::to_string(static_cast<int>(rule)));
  }
}

// floor_log2f decides on the top mantissas of each binade: float32's log2 of an amax within
// about 90 ulps below 2^k (|k| >= 2) rounds up to k. Every binade, the top 160 mantissas (under
// the sanitizers four of them, 53 apart: both sides of the 90).
TYPED_TEST(MxKernel, Log2fScaleNearEveryPowerOfTwo) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  const auto step = static_cast<std::uint32_t>(lowbit_test::sanitized_size(1, 53));
  std::vector<float> x;
  for (std::uint32_t field = 0; field < 255; ++field) {
    for (std::uint32_t m = 0x7FFFFFu - 159u; m <= 0x7FFFFFu; m += step) {
      std::vector<float> block(32, 0.0f);
      block[(field + m) % 32] = float_from_bits(field << 23 | m);
      x.insert(x.end(), block.begin(), block.end());
    }
  }
  lb::mx_options o;
  o.scale_rule = lb::e8m0_rule::floor_log2f;
  mx_compare<Fmt>(x, o, 0, 1, std::string(Fmt::name) + " log2f scale near powers of two");
  // The test sees the rule at work: some scales differ from the floor rule's.
  const std::size_t blocks = x.size() / 32;
  std::vector<std::uint8_t> e(lb::packed_bytes(x.size(), Fmt::element_bits)), floor_s(blocks), log2f_s(blocks);
  ASSERT_TRUE(lb::mx_quantize<Fmt>(x.data(), x.size(), lb::mx_options{}, e.data(), floor_s.data()));
  ASSERT_TRUE(lb::mx_quantize<Fmt>(x.data(), x.size(), o, e.data(), log2f_s.data()));
  EXPECT_NE(floor_s, log2f_s);
}

// Elements against many scales: every float exponent against each element format's rounding
// points, in blocks whose amax pins the scale exponent s from -127 to 127.
TYPED_TEST(MxKernel, ElementsAcrossScales) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  std::mt19937_64 rng(42);
  std::vector<float> x;
  for (int s = -127; s <= 127; s += 3) {
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<float> block(32);
      // amax = element max * 2^s when that is a finite float, else the float max
      const double amax = std::ldexp(element_value<Fmt>(element_max_code<Fmt>()), s);
      block[0] = amax > std::numeric_limits<float>::max() ? std::numeric_limits<float>::max() : static_cast<float>(amax);
      for (std::size_t i = 1; i < 32; ++i) {
        // hi16 pattern anywhere, low half from {0, 1, 0x8000, 0xFFFF, random}
        const std::uint32_t low_choices[] = {0u, 1u, 0x8000u, 0xFFFFu, static_cast<std::uint32_t>(rng()) & 0xFFFFu};
        std::uint32_t b = (static_cast<std::uint32_t>(rng()) & 0xFFFF0000u) | low_choices[rng() % 5];
        if ((b & 0x7F800000u) == 0x7F800000u) b &= 0xBFFFFFFFu;  // keep it finite
        const float v = float_from_bits(b);
        block[i] = std::fabs(v) > std::fabs(block[0]) ? v * 0x1p-60f : v;
      }
      x.insert(x.end(), block.begin(), block.end());
    }
  }
  for (rounding rm : element_roundings) {
    lb::mx_options o;
    o.element_rounding = rm;
    mx_compare<Fmt>(x, o, 0, 2, std::string(Fmt::name) + " across scales rm " + std::to_string(static_cast<int>(rm)));
  }
}

// A float destination of 16 MiB or more, 32-byte aligned, is written with streaming stores: the
// same bits, from random element bytes and every scale code.
template <class T>
T* aligned32(std::vector<T>& v) {
  const auto a = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (32 - a % 32) % 32 / sizeof(T);
}
// 64-byte aligned (the AVX-512 kernels stream only there) or 32 but not 64 (they must not).
template <class T>
T* aligned_at(std::vector<T>& v, bool to64) {
  const auto a = reinterpret_cast<std::uintptr_t>(v.data());
  T* p = v.data() + (64 - a % 64) % 64 / sizeof(T);
  return to64 ? p : p + 32 / sizeof(T);
}
// The streaming-store tests: every SIMD path, both destination alignments.
struct stream_case {
  lb::isa path;
  bool to64;
  std::string name() const { return std::string(lb::isa_name(path)) + (to64 ? " 64-byte aligned" : " 32-byte aligned"); }
};
inline std::vector<stream_case> stream_cases() {
  std::vector<stream_case> r;
  for (const lb::isa p : lowbit_test::simd_paths())
    for (bool to64 : {true, false}) r.push_back({p, to64});
  return r;
}
constexpr std::size_t large_n = (std::size_t{16} << 20) / sizeof(float) + 256;

TYPED_TEST(MxKernel, LargeOutputStreamingStores) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  const std::vector<std::uint8_t> el = random_bytes(lb::packed_bytes(large_n, Fmt::element_bits), 1);
  const std::vector<std::uint8_t> sc = random_bytes(large_n / 32, 2);
  std::vector<float> a(large_n + 32), b(large_n + 32);
  {
    lb::scoped_isa scalar(lb::isa::scalar);
    ASSERT_TRUE(lb::mx_dequantize<Fmt>(el.data(), sc.data(), large_n, {}, aligned32(a)));
  }
  for (const stream_case& k : stream_cases()) {
    lb::scoped_isa scope(k.path);
    ASSERT_TRUE(lb::mx_dequantize<Fmt>(el.data(), sc.data(), large_n, {}, aligned_at(b, k.to64)));
    EXPECT_EQ(std::memcmp(aligned32(a), aligned_at(b, k.to64), large_n * sizeof(float)), 0) << Fmt::name << " " << k.name();
  }
}

// Errors come back the same way on both paths, and nothing is written.
TYPED_TEST(MxKernel, ArgumentErrors) {
  REQUIRE_AVX2();
  using Fmt = TypeParam;
  for (lb::isa isa : {lb::isa::scalar, lb::isa::avx2, lb::isa::avx512}) {
    lb::scoped_isa scope(isa);
    std::vector<float> x(64, 1.0f);
    std::vector<std::uint8_t> el(64, 0xEE), sc(8, 0xEE);
    lb::mx_options o;
    o.element_rounding = rounding::stochastic;
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), 64, o, el.data(), sc.data()).code(), lb::errc::bad_argument);
    o = lb::mx_options{};
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), 48, o, el.data(), sc.data()).code(), lb::errc::bad_block_size);
    EXPECT_EQ(lb::mx_quantize<Fmt>(static_cast<const float*>(nullptr), 64, o, el.data(), sc.data()).code(),
              lb::errc::bad_argument);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(el.data(), sc.data(), 48, {}, x.data()).code(), lb::errc::bad_block_size);
    EXPECT_EQ(el[0], 0xEE);
    EXPECT_EQ(sc[0], 0xEE);
  }
}

// ---------------------------------------------------------------------------------------------
// NVFP4.

struct nv_result {
  int status = 0;
  std::vector<std::uint8_t> elements, scales;
};

template <class Src>
nv_result nv_run_quantize(lb::isa isa, const std::vector<Src>& x, std::size_t rows, const lb::nvfp4_options& o,
                          std::size_t offset) {
  lb::scoped_isa scope(isa);
  const std::size_t n = x.size();
  offset_buffer<Src> src(n, offset);
  std::memcpy(static_cast<void*>(src.get()), x.data(), n * sizeof(Src));
  offset_buffer<std::uint8_t> el(n / 2, offset, 0xEE);
  offset_buffer<std::uint8_t> sc(n / 16, offset + 1, 0xEE);
  lb::status st = rows == 0 ? lb::nvfp4_quantize(src.get(), n, o, el.get(), sc.get())
                            : lb::nvfp4_quantize_matrix(src.get(), rows, n / rows, o, el.get(), sc.get());
  nv_result r;
  r.status = static_cast<int>(st.code());
  r.elements = el.copy();
  r.scales = sc.copy();
  return r;
}

template <class Dst>
std::vector<std::uint32_t> nv_run_dequantize(lb::isa isa, const std::vector<std::uint8_t>& el,
                                             const std::vector<std::uint8_t>& sc, std::size_t n, std::size_t rows,
                                             lb::nvfp4_options t, std::size_t offset, int* status) {
  lb::scoped_isa scope(isa);
  offset_buffer<std::uint8_t> e(el.size(), offset);
  offset_buffer<std::uint8_t> s(sc.size(), offset + 5);
  std::memcpy(e.get(), el.data(), el.size());
  std::memcpy(s.get(), sc.data(), sc.size());
  offset_buffer<Dst> out(n, offset, Dst{});
  lb::status st = rows == 0 ? lb::nvfp4_dequantize(e.get(), s.get(), n, t, out.get())
                            : lb::nvfp4_dequantize_matrix(e.get(), s.get(), rows, n / rows, t, out.get());
  *status = static_cast<int>(st.code());
  return bits_of(out.copy());
}

template <class Src>
void nv_compare(const std::vector<Src>& x, const lb::nvfp4_options& t, lb::nvfp4_options o, std::size_t rows,
                std::size_t offset, const std::string& what) {
  // The tensor scale and convention of t, the other settings of o.
  o.tensor_scale = t.tensor_scale;
  o.tensor_scale_convention = t.tensor_scale_convention;
  for (bool ftz : ftz_daz_states) for (const lb::isa path : lowbit_test::simd_paths()) {
    fp_env env(ftz);
    const std::string w = what + (ftz ? " [FTZ+DAZ] " : " [no FTZ/DAZ] ") + lb::isa_name(path);
    const nv_result s = nv_run_quantize(lb::isa::scalar, x, rows, o, 0);
    const nv_result v = nv_run_quantize(path, x, rows, o, offset);
    EXPECT_EQ(s.status, v.status) << w;
    EXPECT_SAME(s.elements, v.elements, w + " elements");
    EXPECT_SAME(s.scales, v.scales, w + " scales");
    if (s.status != static_cast<int>(lb::errc::ok) && s.status != static_cast<int>(lb::errc::non_finite_input)) continue;
    const std::size_t n = x.size();
    int st_s = 0, st_v = 0;
    EXPECT_SAME((nv_run_dequantize<float>(lb::isa::scalar, s.elements, s.scales, n, rows, o, 0, &st_s)),
                (nv_run_dequantize<float>(path, s.elements, s.scales, n, rows, o, offset, &st_v)),
                w + " dequantized to float");
    EXPECT_EQ(st_s, st_v) << w;
    EXPECT_SAME((nv_run_dequantize<lb::bfloat16>(lb::isa::scalar, s.elements, s.scales, n, rows, o, 0, &st_s)),
                (nv_run_dequantize<lb::bfloat16>(path, s.elements, s.scales, n, rows, o, offset, &st_v)),
                w + " dequantized to bfloat16");
    const std::vector<std::uint8_t> re = random_bytes(s.elements.size(), n + 1);
    const std::vector<std::uint8_t> rs = random_bytes(s.scales.size(), n + 2);
    EXPECT_SAME((nv_run_dequantize<float>(lb::isa::scalar, re, rs, n, rows, o, 0, &st_s)),
                (nv_run_dequantize<float>(path, re, rs, n, rows, o, offset, &st_v)),
                w + " random bytes to float");
    EXPECT_SAME((nv_run_dequantize<lb::bfloat16>(lb::isa::scalar, re, rs, n, rows, o, 0, &st_s)),
                (nv_run_dequantize<lb::bfloat16>(path, re, rs, n, rows, o, offset, &st_v)),
                w + " random bytes to bfloat16");
  }
}

// The tensor scales to try for data x: single level, both conventions computed from the data,
// the extremes of the valid range, and ones that make block scales land near zero or saturate.
std::vector<lb::nvfp4_options> tensor_scales_for(const std::vector<float>& x) {
  std::vector<lb::nvfp4_options> ts = {lb::nvfp4_options{}};
  for (auto c : {lb::nvfp4_scale_convention::divisor, lb::nvfp4_scale_convention::multiplier}) {
    const lb::nvfp4_options in_c{1.0f, c};
    ts.push_back(lb::nvfp4_options{lb::nvfp4_compute_tensor_scale(x.data(), x.size(), in_c).value, c});
    for (float v : {lb::nvfp4_min_tensor_scale, lb::nvfp4_max_tensor_scale, 0x1p-100f, 0x1p-20f, 3.0f, 0x1p40f})
      ts.push_back(lb::nvfp4_options{v, c});
  }
  return ts;
}

TEST(Nvfp4Kernel, RandomBlocksEveryOption) {
  REQUIRE_AVX2();
  std::uint64_t seed = 1000;
  for (rounding erm : element_roundings) {
    for (rounding srm : element_roundings) {
      for (bool signed_zero : {true, false}) {
        lb::nvfp4_options o;
        o.element_rounding = erm;
        o.scale_rounding = srm;
        o.signed_zero = signed_zero;
        const std::size_t blocks = 1 + (seed * 5) % 41;
        const std::vector<float> x = make_data<lb::mxfp4_e2m1>(blocks * 16, 16, seed++, -135, 120);
        for (const lb::nvfp4_options& t : tensor_scales_for(x)) {
          nv_compare(x, t, o, 0, seed % 8,
                     "nvfp4 rm " + std::to_string(static_cast<int>(erm)) + "/" + std::to_string(static_cast<int>(srm)) +
                         (signed_zero ? "" : " unsigned zero") + " t " + std::to_string(t.tensor_scale) +
                         (t.tensor_scale_convention == lb::nvfp4_scale_convention::divisor ? " divisor" : " multiplier"));
        }
      }
    }
  }
}

TEST(Nvfp4Kernel, LongArraysPresetsMatricesBfloat16) {
  REQUIRE_AVX2();
  const std::vector<float> x = make_data<lb::mxfp4_e2m1>(16 * 2000, 16, 77, -130, 100);
  for (const lb::nvfp4_options& t : tensor_scales_for(x)) {
    nv_compare(x, t, lb::nvfp4_presets::nvidia(), 0, 1, "nvfp4 long nvidia");
    nv_compare(x, t, lb::nvfp4_presets::ggml(), 0, 2, "nvfp4 long ggml");
  }
  lb::nvfp4_options strict;
  strict.non_finite_is_error = true;
  nv_compare(x, lb::nvfp4_options{}, strict, 0, 3, "nvfp4 non_finite_is_error");
  const std::vector<float> typical = make_data<lb::mxfp4_e2m1>(16 * 1024, 16, 78, -3, 3);
  const lb::nvfp4_options tt{lb::nvfp4_compute_tensor_scale(typical.data(), typical.size(), lb::nvfp4_options{}).value};
  nv_compare(typical, tt, lb::nvfp4_options{}, 0, 0, "nvfp4 typical");
  nv_compare(to_bf16(typical), tt, lb::nvfp4_options{}, 0, 5, "nvfp4 bfloat16 input");
  nv_compare(to_bf16(x), lb::nvfp4_options{}, lb::nvfp4_options{}, 0, 6, "nvfp4 bfloat16 input, edge blocks");
  const std::size_t shapes[][2] = {{1, 16}, {3, 48}, {9, 128}, {4, 4096}};
  for (const auto& shape : shapes) {
    const std::vector<float> m = make_data<lb::mxfp4_e2m1>(shape[0] * shape[1], 16, shape[0] * 31 + shape[1]);
    nv_compare(m, lb::nvfp4_options{}, lb::nvfp4_options{}, shape[0], 3,
               "nvfp4 matrix " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
  }
  nv_compare(make_data<lb::mxfp4_e2m1>(3 * 40, 8, 3), lb::nvfp4_options{}, lb::nvfp4_options{}, 3, 1,
             "nvfp4 matrix 3x40");
}

// Every high half of a float (low halves 0, 1, 0x8000, 0xFFFF) as an element of a block whose
// effective scale is exactly 1, so the E2M1 encoder sees each pattern itself: all rounding
// thresholds, their ties and neighbours, subnormals, Inf-sized quotients.
TEST(Nvfp4Kernel, EveryHighHalfAsAnElement) {
  REQUIRE_AVX2();
  std::vector<float> x;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (std::uint32_t lo : {0u, 1u, 0x8000u, 0xFFFFu}) {
      if (x.size() % 16 == 0) x.push_back(6.0f);  // amax 6: scale E4M3(1) = 0x38, D = 1
      std::uint32_t b = hi << 16 | lo;
      if ((b & 0x7F800000u) == 0x7F800000u || std::fabs(float_from_bits(b)) > 6.0f) b = (b & 0x80000000u) | (b & 0x7FFFFFu);
      x.push_back(float_from_bits(b));
    }
  }
  while (x.size() % 16 != 0) x.push_back(0.0f);
  for (rounding rm : element_roundings) {
    lb::nvfp4_options o;
    o.element_rounding = rm;
    nv_compare(x, lb::nvfp4_options{}, o, 0, 1, "nvfp4 every high half rm " + std::to_string(static_cast<int>(rm)));
  }
}

TEST(Nvfp4Kernel, LargeOutputStreamingStores) {
  REQUIRE_AVX2();
  const std::vector<std::uint8_t> el = random_bytes(lb::packed_bytes(large_n, 4), 3);
  const std::vector<std::uint8_t> sc = random_bytes(large_n / 16, 4);
  for (const lb::nvfp4_options t : {lb::nvfp4_options{}, lb::nvfp4_options{0x1p-100f}}) {
    for (bool ftz : ftz_daz_states) {
      fp_env env(ftz);
      std::vector<float> a(large_n + 32), b(large_n + 32);
      {
        lb::scoped_isa scalar(lb::isa::scalar);
        ASSERT_TRUE(lb::nvfp4_dequantize(el.data(), sc.data(), large_n, t, aligned32(a)));
      }
      for (const stream_case& k : stream_cases()) {
        lb::scoped_isa scope(k.path);
        ASSERT_TRUE(lb::nvfp4_dequantize(el.data(), sc.data(), large_n, t, aligned_at(b, k.to64)));
        EXPECT_EQ(std::memcmp(aligned32(a), aligned_at(b, k.to64), large_n * sizeof(float)), 0)
            << (ftz ? "FTZ+DAZ " : "") << k.name();
      }
    }
  }
}

TEST(Nvfp4Kernel, ArgumentErrors) {
  REQUIRE_AVX2();
  for (lb::isa isa : {lb::isa::scalar, lb::isa::avx2, lb::isa::avx512}) {
    lb::scoped_isa scope(isa);
    std::vector<float> x(64, 1.0f);
    std::vector<std::uint8_t> el(32, 0xEE), sc(4, 0xEE);
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), 64, lb::nvfp4_options{0.0f}, el.data(), sc.data()).code(),
              lb::errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), 40, lb::nvfp4_options{}, el.data(), sc.data()).code(),
              lb::errc::bad_block_size);
    lb::nvfp4_options o;
    o.scale_rounding = rounding::stochastic;
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), 64, o, el.data(), sc.data()).code(),
              lb::errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_dequantize(el.data(), sc.data(), 64, lb::nvfp4_options{1e38f}, x.data()).code(),
              lb::errc::bad_argument);
    EXPECT_EQ(el[0], 0xEE);
    EXPECT_EQ(x[0], 1.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// ggml's interleaved FP4 blocks, written and read by the same kernels (mxfp4_quantize_ggml,
// mxfp4_dequantize_ggml, nvfp4_quantize_ggml, nvfp4_dequantize_ggml): the AVX2 path against the
// scalar path and both against the planar call plus the conversion, on the edge blocks, under
// both MXCSR states, with block arrays that start at any byte offset (ggml blocks are 17 and 36
// bytes, so every element run is unaligned anyway).

template <class Block>
std::vector<std::uint8_t> block_bytes(const Block* b, std::size_t count) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(b);
  return std::vector<std::uint8_t>(p, p + count * sizeof(Block));
}

// Quantizes x into ggml blocks on `isa`, the blocks `offset` blocks into their buffer.
template <class Block, class Src, class Options, class Call>
mx_result ggml_run_quantize(lb::isa isa, const std::vector<Src>& x, const Options& o, std::size_t per_block,
                            std::size_t offset, Call call) {
  lb::scoped_isa scope(isa);
  offset_buffer<Src> src(x.size(), offset);
  std::memcpy(static_cast<void*>(src.get()), x.data(), x.size() * sizeof(Src));
  std::vector<Block> buf(x.size() / per_block + offset);
  std::memset(static_cast<void*>(buf.data()), 0xEE, buf.size() * sizeof(Block));
  mx_result r;
  r.status = static_cast<int>(call(src.get(), x.size(), o, buf.data() + offset).code());
  r.elements = block_bytes(buf.data() + offset, x.size() / per_block);
  return r;
}

template <class Dst, class Block, class Options, class Call>
std::vector<std::uint32_t> ggml_run_dequantize(lb::isa isa, const std::vector<std::uint8_t>& bytes, const Options& o,
                                               std::size_t per_block, std::size_t offset, int* status, Call call) {
  lb::scoped_isa scope(isa);
  const std::size_t count = bytes.size() / sizeof(Block);
  std::vector<Block> buf(count + 1);
  std::memcpy(static_cast<void*>(buf.data() + 1), bytes.data(), bytes.size());
  offset_buffer<Dst> out(count * per_block, offset, Dst{});
  *status = static_cast<int>(call(buf.data() + 1, count * per_block, o, out.get()).code());
  return bits_of(out.copy());
}

// The planar call plus the conversion, on the scalar path.
template <class Src>
mx_result mxfp4_ggml_reference(const std::vector<Src>& x, const lb::mx_options& o) {
  lb::scoped_isa scope(lb::isa::scalar);
  std::vector<std::uint8_t> e(x.size() / 2), s(x.size() / 32);
  std::vector<lb::ggml_block_mxfp4> g(x.size() / 32);
  lb::status st = lb::mx_quantize<lb::mxfp4>(x.data(), x.size(), o, e.data(), s.data());
  const lb::status c = lb::mxfp4_to_ggml(e.data(), s.data(), x.size(), g.data());
  if (st) st = c;
  mx_result r;
  r.status = static_cast<int>(st.code());
  r.elements = block_bytes(g.data(), g.size());
  return r;
}
template <class Src>
mx_result nvfp4_ggml_reference(const std::vector<Src>& x, const lb::nvfp4_options& o) {
  lb::scoped_isa scope(lb::isa::scalar);
  std::vector<std::uint8_t> e(x.size() / 2), s(x.size() / 16);
  std::vector<lb::ggml_block_nvfp4> g(x.size() / 64);
  lb::status st = lb::nvfp4_quantize(x.data(), x.size(), o, e.data(), s.data());
  const lb::status c = lb::nvfp4_to_ggml(e.data(), s.data(), x.size(), g.data());
  if (st) st = c;
  mx_result r;
  r.status = static_cast<int>(st.code());
  r.elements = block_bytes(g.data(), g.size());
  return r;
}

struct mxfp4_ggml_calls {
  using block = lb::ggml_block_mxfp4;
  using options = lb::mx_options;
  static constexpr std::size_t per_block = 32;
  template <class Src>
  static mx_result reference(const std::vector<Src>& x, const options& o) { return mxfp4_ggml_reference(x, o); }
  template <class Src>
  static lb::status quantize(const Src* x, std::size_t n, const options& o, block* b) {
    return lb::mxfp4_quantize_ggml(x, n, o, b);
  }
  template <class Dst>
  static lb::status dequantize(const block* b, std::size_t n, const options& o, Dst* y) {
    return lb::mxfp4_dequantize_ggml(b, n, o, y);
  }
};
struct nvfp4_ggml_calls {
  using block = lb::ggml_block_nvfp4;
  using options = lb::nvfp4_options;
  static constexpr std::size_t per_block = 64;
  template <class Src>
  static mx_result reference(const std::vector<Src>& x, const options& o) { return nvfp4_ggml_reference(x, o); }
  template <class Src>
  static lb::status quantize(const Src* x, std::size_t n, const options& o, block* b) {
    return lb::nvfp4_quantize_ggml(x, n, o, b);
  }
  template <class Dst>
  static lb::status dequantize(const block* b, std::size_t n, const options& o, Dst* y) {
    return lb::nvfp4_dequantize_ggml(b, n, o, y);
  }
};

template <class Calls, class Dst>
void ggml_compare_dequantize(lb::isa path, const std::vector<std::uint8_t>& bytes, const typename Calls::options& o,
                             std::size_t offset, const std::string& w) {
  using B = typename Calls::block;
  auto call = [](const B* b, std::size_t n, const typename Calls::options& oo, Dst* y) {
    return Calls::dequantize(b, n, oo, y);
  };
  int st_s = 0, st_v = 0;
  EXPECT_SAME((ggml_run_dequantize<Dst, B>(lb::isa::scalar, bytes, o, Calls::per_block, 0, &st_s, call)),
              (ggml_run_dequantize<Dst, B>(path, bytes, o, Calls::per_block, offset, &st_v, call)), w);
  EXPECT_EQ(st_s, st_v) << w;
}

template <class Calls, class Src>
void ggml_compare(const std::vector<Src>& x, const typename Calls::options& o, std::size_t offset,
                  const std::string& what) {
  using B = typename Calls::block;
  auto call = [](const Src* p, std::size_t n, const typename Calls::options& oo, B* b) {
    return Calls::quantize(p, n, oo, b);
  };
  const mx_result ref = Calls::reference(x, o);
  for (bool ftz : ftz_daz_states) for (const lb::isa path : lowbit_test::simd_paths()) {
    fp_env env(ftz);
    const std::string w = what + (ftz ? " [FTZ+DAZ] " : " [no FTZ/DAZ] ") + lb::isa_name(path);
    const mx_result s = ggml_run_quantize<B>(lb::isa::scalar, x, o, Calls::per_block, 0, call);
    const mx_result v = ggml_run_quantize<B>(path, x, o, Calls::per_block, offset, call);
    EXPECT_EQ(s.status, ref.status) << w;
    EXPECT_EQ(v.status, ref.status) << w;
    EXPECT_SAME(ref.elements, s.elements, w + " blocks, scalar against planar + conversion");
    EXPECT_SAME(s.elements, v.elements, w + " blocks");
    ggml_compare_dequantize<Calls, float>(path, s.elements, o, offset, w + " dequantized to float");
    ggml_compare_dequantize<Calls, lb::bfloat16>(path, s.elements, o, offset, w + " dequantized to bfloat16");
    const std::vector<std::uint8_t> rnd = random_bytes(s.elements.size(), x.size() + offset);
    ggml_compare_dequantize<Calls, float>(path, rnd, o, offset, w + " random bytes to float");
    ggml_compare_dequantize<Calls, lb::bfloat16>(path, rnd, o, offset, w + " random bytes to bfloat16");
  }
}

TEST(GgmlLayoutKernel, Mxfp4EveryOption) {
  REQUIRE_AVX2();
  std::uint64_t seed = 3000;
  const lb::e8m0_rule rules[] = {lb::e8m0_rule::floor, lb::e8m0_rule::ceil, lb::e8m0_rule::even,
                                 lb::e8m0_rule::floor_log2f};
  for (lb::e8m0_rule rule : rules) {
    for (rounding rm : element_roundings) {
      for (bool signed_zero : {true, false}) {
        lb::mx_options o;
        o.scale_rule = rule;
        o.element_rounding = rm;
        o.signed_zero = signed_zero;
        const std::size_t blocks = 1 + (seed * 7) % 45;
        const std::vector<float> x = make_data<lb::mxfp4_e2m1>(blocks * 32, 32, seed++);
        const std::string w = "mxfp4 ggml rule " + std::to_string(static_cast<int>(rule)) + " rm " +
                              std::to_string(static_cast<int>(rm)) + (signed_zero ? "" : " unsigned zero");
        ggml_compare<mxfp4_ggml_calls>(x, o, seed % 8, w);
        if (rm == rounding::nearest_even) ggml_compare<mxfp4_ggml_calls>(to_bf16(x), o, seed % 5, w + " bfloat16");
      }
    }
  }
  lb::mx_options strict;
  strict.non_finite_is_error = true;
  ggml_compare<mxfp4_ggml_calls>(make_data<lb::mxfp4_e2m1>(32 * 1000, 32, 99), strict, 3, "mxfp4 ggml long");
  ggml_compare<mxfp4_ggml_calls>(make_data<lb::mxfp4_e2m1>(32 * 512, 32, 7, -3, 3), lb::mx_presets::ggml(), 1,
                                 "mxfp4 ggml typical");
}

TEST(GgmlLayoutKernel, Nvfp4EveryOption) {
  REQUIRE_AVX2();
  std::uint64_t seed = 4000;
  for (rounding erm : element_roundings) {
    for (rounding srm : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero}) {
      lb::nvfp4_options o;
      o.element_rounding = erm;
      o.scale_rounding = srm;
      o.signed_zero = (seed & 1u) != 0;
      const std::size_t blocks = 1 + (seed * 5) % 23;  // ggml blocks: groups of 8 sub-blocks and a last 4
      const std::vector<float> x = make_data<lb::mxfp4_e2m1>(blocks * 64, 16, seed++, -135, 120);
      for (const lb::nvfp4_options& t : tensor_scales_for(x)) {
        lb::nvfp4_options ot = o;
        ot.tensor_scale = t.tensor_scale;
        ot.tensor_scale_convention = t.tensor_scale_convention;
        ggml_compare<nvfp4_ggml_calls>(x, ot, seed % 8,
                                       "nvfp4 ggml rm " + std::to_string(static_cast<int>(erm)) + "/" +
                                           std::to_string(static_cast<int>(srm)) + " t " + std::to_string(t.tensor_scale));
      }
      ggml_compare<nvfp4_ggml_calls>(to_bf16(x), o, seed % 3, "nvfp4 ggml bfloat16");
    }
  }
  const std::vector<float> x = make_data<lb::mxfp4_e2m1>(64 * 1001, 16, 77, -130, 100);
  ggml_compare<nvfp4_ggml_calls>(x, lb::nvfp4_presets::ggml(), 1, "nvfp4 ggml long ggml preset");
  lb::nvfp4_options strict;
  strict.non_finite_is_error = true;
  ggml_compare<nvfp4_ggml_calls>(x, strict, 2, "nvfp4 ggml long non_finite_is_error");
}

// Streaming stores for a 16 MiB float output: the same bits on both paths; for NVFP4 also with a
// scale byte 0xFF late in the array (scale_overflow, the same prefix written).
TEST(GgmlLayoutKernel, LargeOutputStreamingStores) {
  REQUIRE_AVX2();
  {
    const std::vector<std::uint8_t> g = random_bytes(large_n / 32 * sizeof(lb::ggml_block_mxfp4), 5);
    const auto* b = reinterpret_cast<const lb::ggml_block_mxfp4*>(g.data());
    std::vector<float> a(large_n + 32), c(large_n + 32);
    {
      lb::scoped_isa scalar(lb::isa::scalar);
      ASSERT_TRUE(lb::mxfp4_dequantize_ggml(b, large_n, {}, aligned32(a)));
    }
    for (const stream_case& k : stream_cases()) {
      lb::scoped_isa scope(k.path);
      ASSERT_TRUE(lb::mxfp4_dequantize_ggml(b, large_n, {}, aligned_at(c, k.to64)));
      EXPECT_EQ(std::memcmp(aligned32(a), aligned_at(c, k.to64), large_n * sizeof(float)), 0) << "mxfp4 " << k.name();
    }
  }
  std::vector<std::uint8_t> g = random_bytes(large_n / 64 * sizeof(lb::ggml_block_nvfp4), 6);
  for (std::size_t i = 0; i < g.size(); i += sizeof(lb::ggml_block_nvfp4))
    for (std::size_t k = 0; k < 4; ++k)
      if (g[i + k] == 0xFF) g[i + k] = 0x7F;
  for (bool overflow : {false, true}) {
    if (overflow) g[(large_n / 64 - 3) * sizeof(lb::ggml_block_nvfp4) + 1] = 0xFF;
    const auto* b = reinterpret_cast<const lb::ggml_block_nvfp4*>(g.data());
    std::vector<float> a(large_n + 32, 3.0f);
    lb::status sa;
    {
      lb::scoped_isa scalar(lb::isa::scalar);
      sa = lb::nvfp4_dequantize_ggml(b, large_n, {}, aligned32(a));
    }
    EXPECT_EQ(sa.code(), overflow ? lb::errc::scale_overflow : lb::errc::ok);
    for (const stream_case& k : stream_cases()) {
      lb::scoped_isa scope(k.path);
      std::vector<float> c(large_n + 32, 3.0f);
      const lb::status sc = lb::nvfp4_dequantize_ggml(b, large_n, {}, aligned_at(c, k.to64));
      EXPECT_EQ(sc.code(), sa.code()) << k.name();
      EXPECT_EQ(std::memcmp(aligned32(a), aligned_at(c, k.to64), large_n * sizeof(float)), 0) << "nvfp4 " << k.name();
    }
  }
}

// The kernels really are selected: with AVX2 active the dispatch takes them, and forcing the
// scalar path is visible through active_isa().
TEST(BlockKernelDispatch, PathsAreSelectable) {
  REQUIRE_AVX2();
  {
    lb::scoped_isa s(lb::isa::scalar);
    EXPECT_EQ(lb::active_isa(), lb::isa::scalar);
  }
  {
    lb::scoped_isa v(lb::isa::avx2);
    EXPECT_EQ(lb::active_isa(), lb::isa::avx2);
  }
  if (lowbit_test::have_avx512()) {
    lb::scoped_isa v(lb::isa::avx512);
    EXPECT_EQ(lb::active_isa(), lb::isa::avx512);
  }
}

#else  // !LOWBIT_HAS_AVX2_KERNELS

TEST(BlockKernels, NotCompiled) { GTEST_SKIP() << "this build has no AVX2 kernels (non-x86 or LOWBIT_SCALAR_ONLY)"; }

#endif

}  // namespace
