// Every code of every small format against its value written by hand from the specs
// (tests/format_tables.hpp), in both directions; the landmark facts of each format (max, min
// normal, min subnormal, ULP at 1, NaN and Inf codes: the lesson's section 2 table, extended);
// float16 and bfloat16 landmarks, and every float16 / bfloat16 code against the hardware / the
// definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <lowbit/lowbit.hpp>

#include "format_tables.hpp"
#include "support.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define LOWBIT_TEST_HAVE_F16C 1
#else
#define LOWBIT_TEST_HAVE_F16C 0
#endif

namespace {

using lowbit::overflow;
using lowbit::rounding;
using lowbit_test::Inf;
using lowbit_test::NaN;

using lowbit_test::float_bits;
using lowbit_test::float_from_bits;
std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(v));
  return buf;
}
std::string hexfloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

template <class T>
T from_bits(std::uint32_t c) {
  return T::from_bits(static_cast<typename T::storage_type>(c));
}
template <class T>
float dec(std::uint32_t c) {
  return lowbit::decode(from_bits<T>(c));
}

// Every rounding mode: an exactly representable value must come back unchanged under each.
struct mode {
  rounding rm;
  std::uint32_t r;
};
const mode all_modes[] = {
    {rounding::nearest_even, 0},        {rounding::toward_zero, 0},
    {rounding::toward_pos_inf, 0},      {rounding::nearest_away, 0},
    {rounding::nearest_toward_zero, 0}, {rounding::stochastic, 0},
    {rounding::stochastic, 0xFFFFFFFFu},
};

// Checks decode(from_bits(c)) == table[c] bit for bit, and encode(table[c]) == c, for every code.
// sign_mask: the format's sign bit (0 for E8M0). A NaN code must decode to a NaN whose sign is
// the table's: the code's sign bit (0xFF of E4M3FN is -NaN), except fnuz's 0x80, which has no
// sign and decodes to +NaN (the table's 0x80 entry is +NaN).
template <class T>
void check_every_code(const double* table, std::uint32_t codes, std::uint32_t sign_mask) {
  const std::uint32_t max_code = [&] {
    std::uint32_t m = 0;
    for (std::uint32_t c = 0; c < codes; ++c)
      if (std::isfinite(table[c]) && !std::signbit(table[c]) && table[c] > table[m]) m = c;
    return m;
  }();
  for (std::uint32_t c = 0; c < codes; ++c) {
    const double v = table[c];
    const float got = dec<T>(c);
    EXPECT_EQ(unsigned(from_bits<T>(c).bits()), c) << "from_bits/bits round trip";
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << hex(c) << " must decode to NaN, got " << hexfloat(got);
      EXPECT_EQ(std::signbit(got), std::signbit(v)) << "sign of the NaN of code " << hex(c);
      continue;
    }
    const float want = static_cast<float>(v);  // exact: every table value fits in binary32
    EXPECT_EQ(float_bits(got), float_bits(want))
        << "decode(" << hex(c) << ") = " << hexfloat(got) << ", table says " << hexfloat(v);

    for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
      std::uint32_t expect = c;
      // +-Inf under saturation clamps to +-max (lowbit's default inf_policy).
      if (std::isinf(v) && ov == overflow::saturate) expect = (c & sign_mask) | max_code;
      for (const mode& m : all_modes) {
        EXPECT_EQ(unsigned(lowbit::encode<T>(want, ov, m.rm, m.r).bits()), expect)
            << "encode(" << hexfloat(v) << ") from code " << hex(c) << ", overflow " << static_cast<int>(ov)
            << ", rounding " << static_cast<int>(m.rm) << ", r " << m.r;
      }
      EXPECT_EQ(unsigned(lowbit::encode<T>(v, ov).bits()), expect) << "encode(double " << hexfloat(v) << ")";
    }
  }
}

// Hand-written landmarks of one format. Codes are the positive ones.
struct facts {
  std::uint32_t max_code;
  double max;
  std::uint32_t min_normal_code;
  double min_normal;
  std::uint32_t min_subnormal_code;  // E8M0 has no subnormals: its min normal again
  double min_subnormal;
  std::uint32_t one_code;  // the code of 1.0; one_code + 1 is 1 + ULP
  double ulp_at_one;
  std::vector<std::uint32_t> nan_codes;
  std::vector<std::uint32_t> inf_codes;  // +Inf, -Inf
  std::uint32_t negative_zero_code;      // what encode(-0.0) gives
  int digits;                            // mantissa bits + 1
};

template <class T>
void check_facts(const facts& f, std::uint32_t sign_mask) {
  using L = std::numeric_limits<T>;
  EXPECT_EQ(double(dec<T>(f.max_code)), f.max);
  EXPECT_EQ(double(dec<T>(f.min_normal_code)), f.min_normal);
  EXPECT_EQ(double(dec<T>(f.min_subnormal_code)), f.min_subnormal);
  EXPECT_EQ(double(dec<T>(f.one_code)), 1.0);
  EXPECT_EQ(double(dec<T>(f.one_code + 1)), 1.0 + f.ulp_at_one);
  for (std::uint32_t c : f.nan_codes) EXPECT_TRUE(std::isnan(dec<T>(c))) << hex(c);
  if (!f.inf_codes.empty()) {
    EXPECT_EQ(double(dec<T>(f.inf_codes[0])), Inf);
    EXPECT_EQ(double(dec<T>(f.inf_codes[1])), -Inf);
  }
  EXPECT_EQ(unsigned(lowbit::encode<T>(-0.0f).bits()), f.negative_zero_code);
  EXPECT_EQ(unsigned(lowbit::encode<T>(-0.0f, overflow::non_saturate).bits()), f.negative_zero_code);
  EXPECT_EQ(unsigned(lowbit::encode<T>(-0.0).bits()), f.negative_zero_code) << "from double";

  // std::numeric_limits, against the same hand-written facts.
  EXPECT_TRUE(L::is_specialized);
  EXPECT_EQ(unsigned(L::max().bits()), f.max_code);
  EXPECT_EQ(unsigned(L::lowest().bits()), sign_mask != 0 ? (sign_mask | f.max_code) : f.min_normal_code);
  EXPECT_EQ(unsigned(L::min().bits()), f.min_normal_code);
  EXPECT_EQ(unsigned(L::denorm_min().bits()), f.min_subnormal_code);
  EXPECT_EQ(double(lowbit::decode(L::epsilon())), f.ulp_at_one);
  EXPECT_EQ(L::is_signed, sign_mask != 0);
  EXPECT_EQ(L::has_infinity, !f.inf_codes.empty());
  EXPECT_EQ(L::has_quiet_NaN, !f.nan_codes.empty());
  EXPECT_EQ(L::digits, f.digits);
  EXPECT_EQ(L::radix, 2);
  if (L::has_infinity) {
    EXPECT_EQ(unsigned(L::infinity().bits()), f.inf_codes[0]);
  }
  if (L::has_quiet_NaN) {
    EXPECT_TRUE(std::isnan(lowbit::decode(L::quiet_NaN())));
  }
}

// One encode, with a readable failure message.
template <class T>
void expect_encode(double x, std::uint32_t want, overflow ov = overflow::saturate,
                   rounding rm = rounding::nearest_even) {
  EXPECT_EQ(unsigned(lowbit::encode<T>(static_cast<float>(x), ov, rm).bits()), want)
      << "encode(" << hexfloat(x) << "), overflow " << static_cast<int>(ov) << ", rounding "
      << static_cast<int>(rm);
}

// ------------------------------------------------------------------------------------------------
// E4M3FN

TEST(format_tables, float8_e4m3fn_every_code) {
  const auto t = lowbit_test::full_table(lowbit_test::e4m3fn_positive, lowbit_test::negative_half::mirror);
  check_every_code<lowbit::float8_e4m3fn>(t.data(), 256, 0x80);
}
TEST(format_tables, float8_e4m3fn_facts) {
  // The lesson: max 448 = 0x7E, min normal 2^-6, ULP at 1 = 2^-3, NaN 0x7F / 0xFF, no Inf.
  check_facts<lowbit::float8_e4m3fn>({0x7E, 448.0, 0x08, 0x1p-6, 0x01, 0x1p-9, 0x38, 0x1p-3, {0x7F, 0xFF}, {}, 0x80, 4},
                                     0x80);
  using T = lowbit::float8_e4m3fn;
  expect_encode<T>(464.0, 0x7E, overflow::non_saturate);  // the tie 448 | 480 goes to even 448
  expect_encode<T>(470.0, 0x7F, overflow::non_saturate);
  expect_encode<T>(470.0, 0x7E, overflow::saturate);
  expect_encode<T>(-470.0, 0xFF, overflow::non_saturate);
  expect_encode<T>(-470.0, 0xFE, overflow::saturate);
  expect_encode<T>(std::nextafter(464.0f, 1000.0f), 0x7F, overflow::non_saturate);
  expect_encode<T>(Inf, 0x7E, overflow::saturate);
  expect_encode<T>(-Inf, 0xFE, overflow::saturate);
  expect_encode<T>(Inf, 0x7F, overflow::non_saturate);
  expect_encode<T>(-Inf, 0xFF, overflow::non_saturate);
  expect_encode<T>(NaN, 0x7F);
  expect_encode<T>(-NaN, 0x7F);
  expect_encode<T>(0x1p-10, 0x00);  // half the min subnormal: tie to even 0
  expect_encode<T>(std::nextafter(0x1p-10f, 1.0f), 0x01);
  expect_encode<T>(0x3p-10, 0x02);  // tie 1 | 2 ulps
  expect_encode<T>(-0x1p-11, 0x80);
  expect_encode<T>(1.0625, 0x38);  // tie 1 | 1.125
  expect_encode<T>(1.1875, 0x3A);  // tie 1.125 | 1.25
}

// ------------------------------------------------------------------------------------------------
// E5M2

TEST(format_tables, float8_e5m2_every_code) {
  const auto t = lowbit_test::full_table(lowbit_test::e5m2_positive, lowbit_test::negative_half::mirror);
  check_every_code<lowbit::float8_e5m2>(t.data(), 256, 0x80);
}
TEST(format_tables, float8_e5m2_facts) {
  // The lesson: max 57344 = 0x7B, Inf 0x7C / 0xFC, NaN S.11111.{01,10,11}, min normal 2^-14.
  check_facts<lowbit::float8_e5m2>({0x7B, 57344.0, 0x04, 0x1p-14, 0x01, 0x1p-16, 0x3C, 0x1p-2,
                                    {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}, {0x7C, 0xFC}, 0x80, 3},
                                   0x80);
  using T = lowbit::float8_e5m2;
  expect_encode<T>(61439.99609375, 0x7B, overflow::non_saturate);  // just below the tie
  expect_encode<T>(61440.0, 0x7C, overflow::non_saturate);  // tie 57344 | 65536: even is 0x7C = Inf
  expect_encode<T>(61440.0, 0x7B, overflow::saturate);
  expect_encode<T>(65536.0, 0x7C, overflow::non_saturate);
  expect_encode<T>(-1e6, 0xFC, overflow::non_saturate);
  expect_encode<T>(-1e6, 0xFB, overflow::saturate);
  expect_encode<T>(Inf, 0x7B, overflow::saturate);
  expect_encode<T>(Inf, 0x7C, overflow::non_saturate);
  expect_encode<T>(NaN, 0x7F);
  expect_encode<T>(0x3p-17, 0x02);
  expect_encode<T>(-1e-30, 0x80);
}

// ------------------------------------------------------------------------------------------------
// E4M3FNUZ, E5M2FNUZ

TEST(format_tables, float8_e4m3fnuz_every_code) {
  const auto t = lowbit_test::full_table(lowbit_test::e4m3fnuz_positive, lowbit_test::negative_half::fnuz);
  check_every_code<lowbit::float8_e4m3fnuz>(t.data(), 256, 0x80);
}
TEST(format_tables, float8_e4m3fnuz_facts) {
  check_facts<lowbit::float8_e4m3fnuz>({0x7F, 240.0, 0x08, 0x1p-7, 0x01, 0x1p-10, 0x40, 0x1p-3, {0x80}, {}, 0x00, 4},
                                       0x80);
  using T = lowbit::float8_e4m3fnuz;
  expect_encode<T>(248.0, 0x80, overflow::non_saturate);  // tie 240 | 256: even is 256, overflow
  expect_encode<T>(248.0, 0x7F, overflow::saturate);
  expect_encode<T>(-248.0, 0x80, overflow::non_saturate);  // the only NaN
  expect_encode<T>(-248.0, 0xFF, overflow::saturate);
  expect_encode<T>(NaN, 0x80);
  expect_encode<T>(-0x1p-12, 0x00);  // negative underflow: +0, there is no -0
  expect_encode<T>(Inf, 0x7F, overflow::saturate);
  expect_encode<T>(-Inf, 0x80, overflow::non_saturate);
}

TEST(format_tables, float8_e5m2fnuz_every_code) {
  const auto t = lowbit_test::full_table(lowbit_test::e5m2fnuz_positive, lowbit_test::negative_half::fnuz);
  check_every_code<lowbit::float8_e5m2fnuz>(t.data(), 256, 0x80);
}
TEST(format_tables, float8_e5m2fnuz_facts) {
  check_facts<lowbit::float8_e5m2fnuz>({0x7F, 57344.0, 0x04, 0x1p-15, 0x01, 0x1p-17, 0x40, 0x1p-2, {0x80}, {}, 0x00, 3},
                                       0x80);
  using T = lowbit::float8_e5m2fnuz;
  expect_encode<T>(61440.0, 0x80, overflow::non_saturate);
  expect_encode<T>(61440.0, 0x7F, overflow::saturate);
  expect_encode<T>(-0x1p-20, 0x00);
}

// ------------------------------------------------------------------------------------------------
// FP6, FP4

TEST(format_tables, float6_e2m3fn_every_code) {
  check_every_code<lowbit::float6_e2m3fn>(lowbit_test::e2m3fn_all, 64, 0x20);
}
TEST(format_tables, float6_e2m3fn_facts) {
  check_facts<lowbit::float6_e2m3fn>({0x1F, 7.5, 0x08, 1.0, 0x01, 0.125, 0x08, 0.125, {}, {}, 0x20, 4}, 0x20);
  using T = lowbit::float6_e2m3fn;
  expect_encode<T>(7.75, 0x1F, overflow::non_saturate);  // no Inf, no NaN: saturates in both modes
  expect_encode<T>(-100.0, 0x3F, overflow::non_saturate);
  expect_encode<T>(NaN, 0x1F);  // NaN -> +max (NVIDIA)
  expect_encode<T>(-NaN, 0x1F);
  expect_encode<T>(-Inf, 0x3F, overflow::non_saturate);
}

TEST(format_tables, float6_e3m2fn_every_code) {
  check_every_code<lowbit::float6_e3m2fn>(lowbit_test::e3m2fn_all, 64, 0x20);
}
TEST(format_tables, float6_e3m2fn_facts) {
  check_facts<lowbit::float6_e3m2fn>({0x1F, 28.0, 0x04, 0.25, 0x01, 0.0625, 0x0C, 0.25, {}, {}, 0x20, 3}, 0x20);
  using T = lowbit::float6_e3m2fn;
  expect_encode<T>(30.0, 0x1F, overflow::non_saturate);  // tie 28 | 32
  expect_encode<T>(NaN, 0x1F);
  expect_encode<T>(Inf, 0x1F, overflow::non_saturate);
}

TEST(format_tables, float4_e2m1fn_every_code) {
  check_every_code<lowbit::float4_e2m1fn>(lowbit_test::e2m1fn_all, 16, 0x8);
}
TEST(format_tables, float4_e2m1fn_facts) {
  check_facts<lowbit::float4_e2m1fn>({0x7, 6.0, 0x2, 1.0, 0x1, 0.5, 0x2, 0.5, {}, {}, 0x8, 2}, 0x8);
  using T = lowbit::float4_e2m1fn;
  // docs/formats.md section 3.2, CUDA RN column (cuda_fp4.hpp host code).
  expect_encode<T>(NaN, 0x7);
  expect_encode<T>(-NaN, 0x7);
  expect_encode<T>(Inf, 0x7, overflow::non_saturate);
  expect_encode<T>(-Inf, 0xF, overflow::non_saturate);
  for (double x : {6.5, 7.0, 1e6}) expect_encode<T>(x, 0x7, overflow::non_saturate);
  expect_encode<T>(0.25, 0x0);
  expect_encode<T>(0.75, 0x2);
  expect_encode<T>(1.25, 0x2);
  expect_encode<T>(2.5, 0x4);
  expect_encode<T>(3.5, 0x6);
  expect_encode<T>(5.0, 0x6);
  expect_encode<T>(-0.1, 0x8);
  expect_encode<T>(0.75, 0x1, overflow::saturate, rounding::toward_zero);
  expect_encode<T>(3.5, 0x5, overflow::saturate, rounding::toward_zero);
}

// ------------------------------------------------------------------------------------------------
// E8M0

TEST(format_tables, float8_e8m0fnu_every_code) {
  check_every_code<lowbit::float8_e8m0fnu>(lowbit_test::e8m0fnu_all, 256, 0x00);
}
TEST(format_tables, float8_e8m0fnu_facts) {
  // 0x00 = 2^-127 (no zero, no subnormals), 0x7F = 1, 0xFE = 2^127, 0xFF = NaN; next after 1 is 2.
  // -0.0 converts as |x| = 0, below 2^-127: the smallest code.
  check_facts<lowbit::float8_e8m0fnu>({0xFE, 0x1p127, 0x00, 0x1p-127, 0x00, 0x1p-127, 0x7F, 1.0, {0xFF}, {}, 0x00, 1},
                                      0x00);
  using T = lowbit::float8_e8m0fnu;
  // docs/formats.md section 3.2, E8M0 table. Default rounding: nearest, the tie at the linear midpoint
  // 1.5 * 2^e going up (ml_dtypes and c10 columns); toward_zero / toward_pos_inf: CUDA RZ / RP.
  expect_encode<T>(0.0, 0x00);
  expect_encode<T>(-1.0, 0x7F);
  expect_encode<T>(-0.5, 0x7E);
  expect_encode<T>(1.25, 0x7F);
  expect_encode<T>(1.5, 0x80);
  expect_encode<T>(0.75, 0x7F);
  expect_encode<T>(3.0, 0x81);
  expect_encode<T>(0x1.8p127, 0xFF, overflow::non_saturate);
  expect_encode<T>(0x1.8p127, 0xFE, overflow::saturate);
  expect_encode<T>(0x1p-127, 0x00);
  expect_encode<T>(0x1.8p-127, 0x01);
  expect_encode<T>(0x1p-128, 0x00);
  expect_encode<T>(0x1p-149, 0x00);
  expect_encode<T>(NaN, 0xFF);
  expect_encode<T>(-NaN, 0xFF);
  expect_encode<T>(Inf, 0xFE, overflow::saturate);
  expect_encode<T>(-Inf, 0xFF, overflow::non_saturate);
  expect_encode<T>(1.5, 0x7F, overflow::saturate, rounding::toward_zero);
  expect_encode<T>(0.75, 0x7E, overflow::saturate, rounding::toward_zero);
  expect_encode<T>(3.0, 0x80, overflow::saturate, rounding::toward_zero);
  expect_encode<T>(std::numeric_limits<float>::max(), 0xFE, overflow::non_saturate, rounding::toward_zero);
  expect_encode<T>(0x1.8p-127, 0x00, overflow::saturate, rounding::toward_zero);
  expect_encode<T>(1.25, 0x80, overflow::saturate, rounding::toward_pos_inf);
  expect_encode<T>(0.75, 0x7F, overflow::saturate, rounding::toward_pos_inf);
  expect_encode<T>(3.0, 0x81, overflow::saturate, rounding::toward_pos_inf);
  expect_encode<T>(std::numeric_limits<float>::max(), 0xFF, overflow::non_saturate, rounding::toward_pos_inf);
  expect_encode<T>(std::numeric_limits<float>::max(), 0xFE, overflow::saturate, rounding::toward_pos_inf);
}

// ------------------------------------------------------------------------------------------------
// float16 and bfloat16: landmarks written by hand, then every code against hardware / definition.

struct landmark {
  std::uint32_t code;
  double value;
};

template <class T>
void check_landmarks(const std::vector<landmark>& marks) {
  for (const landmark& m : marks) {
    const float got = dec<T>(m.code);
    if (std::isnan(m.value)) {
      EXPECT_TRUE(std::isnan(got)) << hex(m.code);
      EXPECT_EQ(std::signbit(got), std::signbit(m.value)) << hex(m.code);
      continue;
    }
    EXPECT_EQ(float_bits(got), float_bits(static_cast<float>(m.value)))
        << "decode(" << hex(m.code) << ") = " << hexfloat(got) << ", expected " << hexfloat(m.value);
    if (std::isinf(m.value)) {
      EXPECT_EQ(unsigned(lowbit::encode<T>(static_cast<float>(m.value), overflow::non_saturate).bits()), m.code);
    } else {
      EXPECT_EQ(unsigned(lowbit::encode<T>(static_cast<float>(m.value)).bits()), m.code) << hexfloat(m.value);
      EXPECT_EQ(unsigned(lowbit::encode<T>(m.value).bits()), m.code) << hexfloat(m.value);
    }
  }
}

TEST(format_tables, float16_landmarks) {
  check_landmarks<lowbit::float16>({
      {0x0000, 0.0},          {0x8000, -0.0},
      {0x0001, 0x1p-24},      {0x0002, 0x1p-23},        // min subnormal, 2 * min subnormal
      {0x03FF, 0x1.ff8p-15},  {0x0400, 0x1p-14},        // max subnormal 1023 * 2^-24, min normal
      {0x3555, 0x1.554p-2},   {0x3800, 0.5},            // nearest to 1/3, one half
      {0x3BFF, 0x1.ffcp-1},   {0x3C00, 1.0},            // 1 - 2^-11, 1
      {0x3C01, 1.0009765625}, {0x4000, 2.0},            // 1 + 2^-10, 2
      {0x4248, 3.140625},     {0xC000, -2.0},           // pi to 11 bits
      {0x7BFF, 65504.0},      {0xFBFF, -65504.0},       // max, lowest
      {0x7C00, Inf},          {0xFC00, -Inf},
      {0x7C01, NaN},          {0x7E00, NaN},  {0x7FFF, NaN},  {0xFE00, -NaN},
  });
  using T = lowbit::float16;
  using L = std::numeric_limits<T>;
  EXPECT_EQ(unsigned(L::max().bits()), 0x7BFFu);
  EXPECT_EQ(unsigned(L::lowest().bits()), 0xFBFFu);
  EXPECT_EQ(unsigned(L::min().bits()), 0x0400u);
  EXPECT_EQ(unsigned(L::denorm_min().bits()), 0x0001u);
  EXPECT_EQ(double(lowbit::decode(L::epsilon())), 0x1p-10);
  EXPECT_EQ(unsigned(L::infinity().bits()), 0x7C00u);
  EXPECT_EQ(L::digits, 11);
  expect_encode<T>(65519.0, 0x7BFF, overflow::non_saturate);
  expect_encode<T>(65520.0, 0x7C00, overflow::non_saturate);  // tie 65504 | 65536: even is Inf
  expect_encode<T>(65520.0, 0x7BFF, overflow::saturate);
  expect_encode<T>(0x1p-25, 0x0000);  // tie 0 | min subnormal
  expect_encode<T>(0x1.000002p-25, 0x0001);
  expect_encode<T>(NaN, 0x7FFF);
}

TEST(format_tables, bfloat16_landmarks) {
  check_landmarks<lowbit::bfloat16>({
      {0x0000, 0.0},          {0x8000, -0.0},
      {0x0001, 0x1p-133},     {0x007F, 0x1.fcp-127},    // min subnormal, max subnormal 127 * 2^-133
      {0x0080, 0x1p-126},     {0x3F80, 1.0},            // min normal, 1
      {0x3F81, 1.0078125},    {0x3F7F, 0x1.fep-1},      // 1 + 2^-7, 1 - 2^-8
      {0x4000, 2.0},          {0xBF80, -1.0},
      {0x4049, 3.140625},     {0x7F7F, 0x1.fep127},     // pi to 8 bits, max
      {0xFF7F, -0x1.fep127},  {0x7F80, Inf},  {0xFF80, -Inf},
      {0x7FC0, NaN},          {0x7F81, NaN},  {0xFFC0, -NaN},
  });
  using T = lowbit::bfloat16;
  using L = std::numeric_limits<T>;
  EXPECT_EQ(unsigned(L::max().bits()), 0x7F7Fu);
  EXPECT_EQ(unsigned(L::min().bits()), 0x0080u);
  EXPECT_EQ(unsigned(L::denorm_min().bits()), 0x0001u);
  EXPECT_EQ(double(lowbit::decode(L::epsilon())), 0x1p-7);
  EXPECT_EQ(L::digits, 8);
  expect_encode<T>(1.00390625, 0x3F80);  // tie 1 | 1 + 2^-7: even is 1
  expect_encode<T>(1.01171875, 0x3F82);  // tie 1 + 2^-7 | 1 + 2^-6: even is 0x3F82
  expect_encode<T>(std::numeric_limits<float>::max(), 0x7F80, overflow::non_saturate);  // above the tie
  expect_encode<T>(std::numeric_limits<float>::max(), 0x7F7F, overflow::saturate);
  expect_encode<T>(0x1.fe8p127, 0x7F7F, overflow::non_saturate);  // below the tie 0x1.ffp127
  expect_encode<T>(0x1.ffp127, 0x7F80, overflow::non_saturate);   // the tie: even is Inf
}

#if LOWBIT_TEST_HAVE_F16C
__attribute__((target("f16c"))) float hardware_half_to_float(std::uint16_t h) { return _cvtsh_ss(h); }

// F16C, and the OS saving the AVX state its VEX instructions need. (clang 14's
// __builtin_cpu_supports does not know "f16c", so ask CPUID: leaf 1, ECX bit 29 F16C, bit 28 AVX,
// bit 27 OSXSAVE; then XCR0 bits 1 and 2, SSE and AVX state enabled.)
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const unsigned need = (1u << 29) | (1u << 28) | (1u << 27);
  if ((c & need) != need) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6u) == 6u;
}
#endif

TEST(format_tables, float16_every_code_matches_f16c) {
#if LOWBIT_TEST_HAVE_F16C
  if (!cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  ASSERT_EQ(hardware_half_to_float(0x3C00), 1.0f);  // the instruction is really there
  ASSERT_EQ(hardware_half_to_float(0xFBFF), -65504.0f);
  long mismatches = 0;
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const float want = hardware_half_to_float(static_cast<std::uint16_t>(c));
    const float got = dec<lowbit::float16>(c);
    const bool ok = std::isnan(want) ? (std::isnan(got) && std::signbit(got) == std::signbit(want))
                                     : float_bits(got) == float_bits(want);
    if (!ok && ++mismatches <= 10)
      ADD_FAILURE() << "float16 " << hex(c) << ": decode " << hexfloat(got) << ", F16C " << hexfloat(want);
  }
  EXPECT_EQ(mismatches, 0);
#else
  GTEST_SKIP() << "not an x86 build";
#endif
}

TEST(format_tables, float16_every_code_matches_definition_and_round_trips) {
  long mismatches = 0;
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const float got = dec<lowbit::float16>(c);
    const std::uint32_t e = (c >> 10) & 0x1F, m = c & 0x3FF;
    const bool neg = (c & 0x8000) != 0;
    bool ok = false;
    if (e == 0x1F) {
      ok = m == 0 ? double(got) == (neg ? -Inf : Inf) : (std::isnan(got) && std::signbit(got) == neg);
    } else {
      const float want = static_cast<float>(lowbit_test::float16_value(c));
      ok = float_bits(got) == float_bits(want) &&
           lowbit::encode<lowbit::float16>(want, overflow::non_saturate).bits() == c;
    }
    if (!ok && ++mismatches <= 10) ADD_FAILURE() << "float16 " << hex(c) << ": decode " << hexfloat(got);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(format_tables, bfloat16_every_code_is_top_half_of_float) {
  long mismatches = 0;
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const float got = dec<lowbit::bfloat16>(c);
    const float want = float_from_bits(c << 16);
    bool ok = false;
    if (std::isnan(want)) {
      ok = std::isnan(got) && std::signbit(got) == std::signbit(want);
    } else {
      ok = float_bits(got) == (c << 16) && lowbit::encode<lowbit::bfloat16>(want, overflow::non_saturate).bits() == c;
      if (!std::isinf(want)) ok = ok && double(want) == lowbit_test::bfloat16_value(c);
    }
    if (!ok && ++mismatches <= 10) ADD_FAILURE() << "bfloat16 " << hex(c) << ": decode " << hexfloat(got);
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
