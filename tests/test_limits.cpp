// The value types as types: std::numeric_limits of every format (hand-written expectations from
// the OCP FP8 and MX v1.0 layouts, cross-checked against C's own float16 / float conventions),
// the layout and special encodings docs/formats.md tabulates, constant-expression use,
// comparison, negation, from_bits, stream output and construction.
#include <lowbit/lowbit.hpp>

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using lowbit::overflow;
using lowbit::rounding;

// ---------------------------------------------------------------------------------------------
// Constant expressions: encode, decode, from_bits, construction, comparison and numeric_limits.

static_assert(lowbit::encode<lowbit::float8_e4m3fn>(464.0f).bits() == 0x7E, "464 ties to 448");
static_assert(lowbit::encode<lowbit::float8_e4m3fn>(470.0f, overflow::non_saturate).bits() == 0x7F, "NaN");
static_assert(lowbit::encode<lowbit::float8_e4m3fn>(1.0625 + 0x1p-30).bits() == 0x39, "double, no double rounding");
static_assert(lowbit::encode<lowbit::float8_e4m3fn>(lowbit::float16::from_bits(0x3C00)).bits() == 0x38, "from float16");
static_assert(lowbit::encode<lowbit::float4_e2m1fn>(0.75f, overflow::saturate, rounding::toward_zero).bits() == 0x1,
              "toward_zero");
static_assert(lowbit::encode<lowbit::float8_e4m3fn>(1.03125f, overflow::saturate, rounding::stochastic, 0xC0000000u)
                      .bits() == 0x39,
              "stochastic");
static_assert(lowbit::encode<lowbit::float8_e8m0fnu>(-1.0f, lowbit::presets::ml_dtypes()).bits() == 0xFF, "preset");
static_assert(lowbit::decode(lowbit::float8_e4m3fn::from_bits(0x7E)) == 448.0f, "decode");
static_assert(lowbit::decode(lowbit::float8_e8m0fnu::from_bits(0x00)) == 0x1p-127f, "decode to a float subnormal");
static_assert(lowbit::decode(lowbit::float6_e3m2fn::from_bits(0x01)) == 0.0625f, "decode a subnormal");
static_assert(lowbit::float4_e2m1fn::from_bits(0xF7).bits() == 0x7, "from_bits masks");
static_assert(lowbit::float8_e4m3fn(1.5f).bits() == 0x3C, "constructor");
static_assert(static_cast<float>(lowbit::float8_e5m2::from_bits(0x7B)) == 57344.0f, "conversion operator");
static_assert(lowbit::float8_e4m3fn::from_bits(0x00) == lowbit::float8_e4m3fn::from_bits(0x80), "+0 == -0");
static_assert(lowbit::float8_e4m3fn::from_bits(0x38) < lowbit::float8_e4m3fn::from_bits(0x39), "ordering");
static_assert((-lowbit::float8_e4m3fn::from_bits(0x3C)).bits() == 0xBC, "negation");
static_assert(std::numeric_limits<lowbit::float8_e4m3fn>::max().bits() == 0x7E, "limits");
static_assert(std::numeric_limits<lowbit::float8_e5m2>::infinity().bits() == 0x7C, "limits");
static_assert(std::numeric_limits<lowbit::float8_e8m0fnu>::min().bits() == 0x00, "limits");
static_assert(std::numeric_limits<lowbit::float16>::digits == 11, "limits");
static_assert(std::numeric_limits<lowbit::bfloat16>::max_exponent10 == 38, "limits");
static_assert(static_cast<float>(std::numeric_limits<lowbit::float6_e2m3fn>::max()) == 7.5f, "limits");

// ---------------------------------------------------------------------------------------------
// numeric_limits: one row per type, written from the layouts (OCP 8-bit FP, OCP MX v1.0 section
// 5.3, IEEE 754 binary16, bfloat16 = binary32's exponent with 8 significand bits). Values are
// exact powers of two or short dyadic numbers, so comparing the decoded float with == is exact.

struct limits_row {
  const char* name;
  unsigned max_code;
  float max;
  unsigned lowest_code;
  float lowest;
  unsigned min_code;  // smallest positive normal
  float min;
  unsigned denorm_min_code;
  float denorm_min;
  float epsilon;
  int digits, digits10, max_digits10, min_exponent, max_exponent, min_exponent10, max_exponent10;
  bool has_infinity;
  unsigned infinity_code;  // when has_infinity
  bool has_quiet_NaN;
  unsigned quiet_NaN_code;  // when has_quiet_NaN
  bool has_signaling_NaN;
  std::float_denorm_style has_denorm;
  bool is_signed;
};

template <class T>
void expect_code(T v, unsigned bits, float value, const std::string& what) {
  EXPECT_EQ(v.bits(), bits) << what;
  EXPECT_EQ(static_cast<float>(v), value) << what;
}

template <class T>
void expect_limits(const limits_row& r) {
  using L = std::numeric_limits<T>;
  const std::string name = r.name;
  EXPECT_TRUE(L::is_specialized) << name;
  expect_code(L::max(), r.max_code, r.max, name + " max");
  expect_code(L::lowest(), r.lowest_code, r.lowest, name + " lowest");
  expect_code(L::min(), r.min_code, r.min, name + " min");
  expect_code(L::denorm_min(), r.denorm_min_code, r.denorm_min, name + " denorm_min");
  EXPECT_EQ(static_cast<float>(L::epsilon()), r.epsilon) << name;
  EXPECT_EQ(static_cast<float>(L::round_error()), 0.5f) << name;
  EXPECT_EQ(L::digits, r.digits) << name;
  EXPECT_EQ(L::digits10, r.digits10) << name;
  EXPECT_EQ(L::max_digits10, r.max_digits10) << name;
  EXPECT_EQ(L::min_exponent, r.min_exponent) << name;
  EXPECT_EQ(L::max_exponent, r.max_exponent) << name;
  EXPECT_EQ(L::min_exponent10, r.min_exponent10) << name;
  EXPECT_EQ(L::max_exponent10, r.max_exponent10) << name;
  EXPECT_EQ(L::has_infinity, r.has_infinity) << name;
  EXPECT_EQ(L::has_quiet_NaN, r.has_quiet_NaN) << name;
  EXPECT_EQ(L::has_signaling_NaN, r.has_signaling_NaN) << name;
  EXPECT_EQ(L::has_denorm, r.has_denorm) << name;
  EXPECT_EQ(L::is_signed, r.is_signed) << name;
  if (r.has_infinity) {
    EXPECT_EQ(L::infinity().bits(), r.infinity_code) << name;
    EXPECT_EQ(static_cast<float>(L::infinity()), std::numeric_limits<float>::infinity()) << name;
  } else {
    EXPECT_EQ(L::infinity().bits(), T().bits()) << name << ": the standard asks for T()";
  }
  if (r.has_quiet_NaN) {
    EXPECT_EQ(L::quiet_NaN().bits(), r.quiet_NaN_code) << name;
    EXPECT_TRUE(L::quiet_NaN().is_nan()) << name;
  } else {
    EXPECT_EQ(L::quiet_NaN().bits(), T().bits()) << name << ": the standard asks for T()";
  }
  if (r.has_signaling_NaN) {
    EXPECT_TRUE(L::signaling_NaN().is_nan()) << name;
    EXPECT_NE(L::signaling_NaN().bits(), L::quiet_NaN().bits()) << name;
  }
}

constexpr auto present = std::denorm_present;

TEST(NumericLimits, EveryFormat) {
  // name, max, lowest, min (normal), denorm_min, epsilon, digits, digits10, max_digits10,
  // min/max_exponent, min/max_exponent10, Inf, quiet NaN, signaling NaN, denormals, signed.
  expect_limits<lowbit::float8_e4m3fn>({"e4m3fn", 0x7E, 448.0f, 0xFE, -448.0f, 0x08, 0x1p-6f, 0x01, 0x1p-9f, 0.125f,
                                        4, 0, 3, -5, 9, -1, 2, false, 0, true, 0x7F, false, present, true});
  expect_limits<lowbit::float8_e5m2>({"e5m2", 0x7B, 57344.0f, 0xFB, -57344.0f, 0x04, 0x1p-14f, 0x01, 0x1p-16f, 0.25f,
                                      3, 0, 2, -13, 16, -4, 4, true, 0x7C, true, 0x7E, true, present, true});
  expect_limits<lowbit::float8_e4m3fnuz>({"e4m3fnuz", 0x7F, 240.0f, 0xFF, -240.0f, 0x08, 0x1p-7f, 0x01, 0x1p-10f,
                                          0.125f, 4, 0, 3, -6, 8, -2, 2, false, 0, true, 0x80, false, present, true});
  expect_limits<lowbit::float8_e5m2fnuz>({"e5m2fnuz", 0x7F, 57344.0f, 0xFF, -57344.0f, 0x04, 0x1p-15f, 0x01,
                                          0x1p-17f, 0.25f, 3, 0, 2, -14, 16, -4, 4, false, 0, true, 0x80, false,
                                          present, true});
  expect_limits<lowbit::float6_e2m3fn>({"e2m3fn", 0x1F, 7.5f, 0x3F, -7.5f, 0x08, 1.0f, 0x01, 0.125f, 0.125f, 4, 0, 3,
                                        1, 3, 0, 0, false, 0, false, 0, false, present, true});
  expect_limits<lowbit::float6_e3m2fn>({"e3m2fn", 0x1F, 28.0f, 0x3F, -28.0f, 0x04, 0.25f, 0x01, 0.0625f, 0.25f, 3, 0,
                                        2, -1, 5, 0, 1, false, 0, false, 0, false, present, true});
  expect_limits<lowbit::float4_e2m1fn>({"e2m1fn", 0x7, 6.0f, 0xF, -6.0f, 0x2, 1.0f, 0x1, 0.5f, 0.5f, 2, 0, 2, 1, 3,
                                        0, 0, false, 0, false, 0, false, present, true});
  // E8M0: no sign, no zero, no subnormals; every code but 0xFF is a power of two, so lowest ==
  // min == denorm_min = 2^-127 (code 0x00), and the value after 1 is 2 (epsilon 1).
  expect_limits<lowbit::float8_e8m0fnu>({"e8m0fnu", 0xFE, 0x1p127f, 0x00, 0x1p-127f, 0x00, 0x1p-127f, 0x00, 0x1p-127f,
                                         1.0f, 1, 0, 2, -126, 128, -38, 38, false, 0, true, 0xFF, false,
                                         std::denorm_absent, false});
  expect_limits<lowbit::float16>({"float16", 0x7BFF, 65504.0f, 0xFBFF, -65504.0f, 0x0400, 0x1p-14f, 0x0001, 0x1p-24f,
                                  0x1p-10f, 11, 3, 5, -13, 16, -4, 4, true, 0x7C00, true, 0x7E00, true, present, true});
  expect_limits<lowbit::bfloat16>({"bfloat16", 0x7F7F, 0x1.fep127f, 0xFF7F, -0x1.fep127f, 0x0080, 0x1p-126f, 0x0001,
                                   0x1p-133f, 0x1p-7f, 8, 2, 4, -125, 128, -37, 38, true, 0x7F80, true, 0x7FC0, true,
                                   present, true});
}

// E5M2's NaNs: the quiet one sets the top mantissa bit (S.11111.10), the signaling one does not.
TEST(NumericLimits, E5M2SignalingNaN) {
  using L = std::numeric_limits<lowbit::float8_e5m2>;
  EXPECT_EQ(L::signaling_NaN().bits(), 0x7Du);
}

// bfloat16 is binary32 with a shorter significand: the exponent range is float's.
TEST(NumericLimits, BFloat16SharesFloatsExponentRange) {
  using L = std::numeric_limits<lowbit::bfloat16>;
  EXPECT_EQ(L::min_exponent, FLT_MIN_EXP);
  EXPECT_EQ(L::max_exponent, FLT_MAX_EXP);
  EXPECT_EQ(L::min_exponent10, FLT_MIN_10_EXP);
  EXPECT_EQ(L::max_exponent10, FLT_MAX_10_EXP);
  EXPECT_EQ(static_cast<float>(L::min()), FLT_MIN);
}

// The same numbers from the compiler's own description of IEEE binary16 (GCC and newer clang
// predefine these for _Float16; C23 <float.h> names them FLT16_*).
TEST(NumericLimits, Float16MatchesTheCompilersBinary16) {
  using L = std::numeric_limits<lowbit::float16>;
  // Derived the way C derives FLT_MAX, FLT_EPSILON and FLT_MIN from the parameters.
  EXPECT_EQ(static_cast<float>(L::max()), std::ldexp(1.0f - std::ldexp(1.0f, -L::digits), L::max_exponent));
  EXPECT_EQ(static_cast<float>(L::epsilon()), std::ldexp(1.0f, 1 - L::digits));
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, L::min_exponent - 1));
#if defined(__FLT16_MANT_DIG__)
  EXPECT_EQ(L::digits, __FLT16_MANT_DIG__);
  EXPECT_EQ(L::digits10, __FLT16_DIG__);
  EXPECT_EQ(L::max_digits10, __FLT16_DECIMAL_DIG__);
  EXPECT_EQ(L::min_exponent, __FLT16_MIN_EXP__);
  EXPECT_EQ(L::max_exponent, __FLT16_MAX_EXP__);
  EXPECT_EQ(L::min_exponent10, __FLT16_MIN_10_EXP__);
  EXPECT_EQ(L::max_exponent10, __FLT16_MAX_10_EXP__);
#else
  GTEST_SKIP() << "this compiler does not describe _Float16; only the derived values were checked";
#endif
}

// ---------------------------------------------------------------------------------------------
// Layout and special encodings (docs/formats.md, "The formats").

TEST(Layout, FieldsAndBias) {
  struct row {
    const char* name;
    int bits, exponent_bits, mantissa_bits, bias;
  };
  using namespace lowbit::formats;
  const auto actual = [](auto spec) {
    using S = decltype(spec);
    return row{S::name, S::bits, S::exponent_bits, S::mantissa_bits, S::bias};
  };
  const row expected[] = {
      {"float8_e4m3fn", 8, 4, 3, 7},    {"float8_e5m2", 8, 5, 2, 15},      {"float8_e4m3fnuz", 8, 4, 3, 8},
      {"float8_e5m2fnuz", 8, 5, 2, 16}, {"float6_e2m3fn", 6, 2, 3, 1},     {"float6_e3m2fn", 6, 3, 2, 3},
      {"float4_e2m1fn", 4, 2, 1, 1},    {"float8_e8m0fnu", 8, 8, 0, 127},  {"float16", 16, 5, 10, 15},
      {"bfloat16", 16, 8, 7, 127},
  };
  const row got[] = {actual(e4m3fn{}), actual(e5m2{}), actual(e4m3fnuz{}), actual(e5m2fnuz{}), actual(e2m3fn{}),
                     actual(e3m2fn{}), actual(e2m1fn{}), actual(e8m0fnu{}),  actual(binary16{}), actual(bfloat16{})};
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_STREQ(got[i].name, expected[i].name);
    EXPECT_EQ(got[i].bits, expected[i].bits) << expected[i].name;
    EXPECT_EQ(got[i].exponent_bits, expected[i].exponent_bits) << expected[i].name;
    EXPECT_EQ(got[i].mantissa_bits, expected[i].mantissa_bits) << expected[i].name;
    EXPECT_EQ(got[i].bias, expected[i].bias) << expected[i].name;
  }
  EXPECT_FALSE(e8m0fnu::is_signed);
  EXPECT_FALSE(e8m0fnu::has_subnormals);
  EXPECT_EQ(sizeof(lowbit::float8_e4m3fn), 1u);
  EXPECT_EQ(sizeof(lowbit::float4_e2m1fn), 1u);
  EXPECT_EQ(sizeof(lowbit::float16), 2u);
  EXPECT_EQ(sizeof(lowbit::bfloat16), 2u);
}

// Every code of a format, sorted into NaN and Inf.
template <class T>
void special_codes(std::vector<unsigned>& nans, std::vector<unsigned>& infs) {
  const unsigned n = 1u << T::format::bits;
  for (unsigned c = 0; c < n; ++c) {
    const T v = T::from_bits(static_cast<typename T::storage_type>(c));
    if (v.is_nan()) nans.push_back(c);
    if (v.is_inf()) infs.push_back(c);
    EXPECT_EQ(v.is_nan(), std::isnan(static_cast<float>(v))) << c;
    EXPECT_EQ(v.is_inf(), std::isinf(static_cast<float>(v))) << c;
  }
}

TEST(Layout, NanAndInfEncodings) {
  using V = std::vector<unsigned>;
  V nan, inf;
  special_codes<lowbit::float8_e4m3fn>(nan, inf);
  EXPECT_EQ(nan, (V{0x7F, 0xFF}));
  EXPECT_EQ(inf, V{});
  nan.clear(), inf.clear();
  special_codes<lowbit::float8_e5m2>(nan, inf);
  EXPECT_EQ(nan, (V{0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}));
  EXPECT_EQ(inf, (V{0x7C, 0xFC}));
  nan.clear(), inf.clear();
  special_codes<lowbit::float8_e4m3fnuz>(nan, inf);
  EXPECT_EQ(nan, V{0x80});
  EXPECT_EQ(inf, V{});
  nan.clear(), inf.clear();
  special_codes<lowbit::float8_e5m2fnuz>(nan, inf);
  EXPECT_EQ(nan, V{0x80});
  EXPECT_EQ(inf, V{});
  for (int f = 0; f < 3; ++f) {
    nan.clear(), inf.clear();
    if (f == 0) special_codes<lowbit::float6_e2m3fn>(nan, inf);
    if (f == 1) special_codes<lowbit::float6_e3m2fn>(nan, inf);
    if (f == 2) special_codes<lowbit::float4_e2m1fn>(nan, inf);
    EXPECT_EQ(nan, V{}) << f;
    EXPECT_EQ(inf, V{}) << f;
  }
  nan.clear(), inf.clear();
  special_codes<lowbit::float8_e8m0fnu>(nan, inf);
  EXPECT_EQ(nan, V{0xFF});
  EXPECT_EQ(inf, V{});
  nan.clear(), inf.clear();
  special_codes<lowbit::float16>(nan, inf);
  EXPECT_EQ(nan.size(), 2u * 1023u);  // S.11111.(anything but 0)
  EXPECT_EQ(nan.front(), 0x7C01u);
  EXPECT_EQ(nan.back(), 0xFFFFu);
  EXPECT_EQ(inf, (V{0x7C00, 0xFC00}));
  nan.clear(), inf.clear();
  special_codes<lowbit::bfloat16>(nan, inf);
  EXPECT_EQ(nan.size(), 2u * 127u);
  EXPECT_EQ(nan.front(), 0x7F81u);
  EXPECT_EQ(nan.back(), 0xFFFFu);
  EXPECT_EQ(inf, (V{0x7F80, 0xFF80}));
}

// ---------------------------------------------------------------------------------------------
// Comparison: numeric, NaN unordered, +0 == -0.

TEST(Comparison, NanIsUnordered) {
  const auto check = [](auto nan, auto one, const char* what) {
    EXPECT_FALSE(nan == nan) << what;
    EXPECT_TRUE(nan != nan) << what;
    EXPECT_FALSE(nan == one) << what;
    EXPECT_TRUE(nan != one) << what;
    EXPECT_FALSE(nan < one) << what;
    EXPECT_FALSE(nan > one) << what;
    EXPECT_FALSE(nan <= one) << what;
    EXPECT_FALSE(nan >= one) << what;
    EXPECT_FALSE(one < nan) << what;
    EXPECT_FALSE(one >= nan) << what;
  };
  check(lowbit::float8_e4m3fn::from_bits(0x7F), lowbit::float8_e4m3fn::from_bits(0x38), "e4m3fn +NaN");
  check(lowbit::float8_e4m3fn::from_bits(0xFF), lowbit::float8_e4m3fn::from_bits(0x38), "e4m3fn -NaN");
  check(lowbit::float8_e5m2::from_bits(0x7D), lowbit::float8_e5m2::from_bits(0x3C), "e5m2 NaN");
  check(lowbit::float8_e4m3fnuz::from_bits(0x80), lowbit::float8_e4m3fnuz::from_bits(0x40), "e4m3fnuz NaN");
  check(lowbit::float8_e8m0fnu::from_bits(0xFF), lowbit::float8_e8m0fnu::from_bits(0x7F), "e8m0 NaN");
  check(lowbit::bfloat16::from_bits(0x7FC0), lowbit::bfloat16::from_bits(0x3F80), "bfloat16 NaN");
}

TEST(Comparison, SignedZerosAreEqual) {
  const auto pz = lowbit::float8_e4m3fn::from_bits(0x00);
  const auto nz = lowbit::float8_e4m3fn::from_bits(0x80);
  EXPECT_TRUE(pz == nz);
  EXPECT_FALSE(pz != nz);
  EXPECT_FALSE(nz < pz);
  EXPECT_TRUE(nz <= pz);
  EXPECT_TRUE(pz >= nz);
  EXPECT_TRUE(lowbit::float4_e2m1fn::from_bits(0x0) == lowbit::float4_e2m1fn::from_bits(0x8));
  EXPECT_TRUE(lowbit::float16::from_bits(0x0000) == lowbit::float16::from_bits(0x8000));
}

TEST(Comparison, Ordering) {
  using T = lowbit::float8_e4m3fn;
  const T chain[] = {T::from_bits(0xFE), T::from_bits(0xB8), T::from_bits(0x81), T::from_bits(0x00),
                     T::from_bits(0x01), T::from_bits(0x08), T::from_bits(0x38), T::from_bits(0x7E)};
  for (std::size_t i = 0; i + 1 < sizeof chain / sizeof chain[0]; ++i) {
    EXPECT_TRUE(chain[i] < chain[i + 1]) << i;
    EXPECT_TRUE(chain[i + 1] > chain[i]) << i;
    EXPECT_FALSE(chain[i + 1] < chain[i]) << i;
  }
  using E = lowbit::float8_e5m2;
  EXPECT_TRUE(E::from_bits(0xFC) < E::from_bits(0xFB));  // -Inf < lowest
  EXPECT_TRUE(E::from_bits(0x7B) < E::from_bits(0x7C));  // max < +Inf
  using S = lowbit::float8_e8m0fnu;
  EXPECT_TRUE(S::from_bits(0x00) < S::from_bits(0x01));
  EXPECT_TRUE(S::from_bits(0x7F) < S::from_bits(0xFE));
  // Subnormals that a denormals-are-zero FPU would call equal to zero.
  EXPECT_TRUE(lowbit::bfloat16::from_bits(0x0000) < lowbit::bfloat16::from_bits(0x0001));
  EXPECT_TRUE(lowbit::bfloat16::from_bits(0x8001) < lowbit::bfloat16::from_bits(0x0000));
}

// Every pair of codes of every 8-bit-or-smaller format: the operators agree with the decoded
// floats (this process runs without denormals-are-zero).
template <class T>
void all_pairs_agree_with_float(const char* what) {
  const unsigned n = 1u << T::format::bits;
  int mismatches = 0;
  for (unsigned a = 0; a < n; ++a) {
    for (unsigned b = 0; b < n; ++b) {
      const T x = T::from_bits(static_cast<typename T::storage_type>(a));
      const T y = T::from_bits(static_cast<typename T::storage_type>(b));
      const float fx = static_cast<float>(x), fy = static_cast<float>(y);
      const bool ok = (x == y) == (fx == fy) && (x != y) == (fx != fy) && (x < y) == (fx < fy) &&
                      (x > y) == (fx > fy) && (x <= y) == (fx <= fy) && (x >= y) == (fx >= fy);
      if (!ok && ++mismatches <= 5) ADD_FAILURE() << what << ": codes " << a << ", " << b;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

TEST(Comparison, EveryPairAgreesWithFloat) {
  all_pairs_agree_with_float<lowbit::float8_e4m3fn>("e4m3fn");
  all_pairs_agree_with_float<lowbit::float8_e5m2>("e5m2");
  all_pairs_agree_with_float<lowbit::float8_e4m3fnuz>("e4m3fnuz");
  all_pairs_agree_with_float<lowbit::float8_e5m2fnuz>("e5m2fnuz");
  all_pairs_agree_with_float<lowbit::float6_e2m3fn>("e2m3fn");
  all_pairs_agree_with_float<lowbit::float6_e3m2fn>("e3m2fn");
  all_pairs_agree_with_float<lowbit::float4_e2m1fn>("e2m1fn");
  all_pairs_agree_with_float<lowbit::float8_e8m0fnu>("e8m0fnu");
}

// ---------------------------------------------------------------------------------------------
// Unary minus.

TEST(Negation, FlipsTheSignBit) {
  EXPECT_EQ((-lowbit::float8_e4m3fn::from_bits(0x3C)).bits(), 0xBCu);
  EXPECT_EQ((-lowbit::float8_e4m3fn::from_bits(0xFE)).bits(), 0x7Eu);
  EXPECT_EQ((-lowbit::float8_e4m3fn::from_bits(0x00)).bits(), 0x80u);  // +0 -> -0
  EXPECT_EQ((-lowbit::float8_e4m3fn::from_bits(0x80)).bits(), 0x00u);
  EXPECT_EQ((-lowbit::float8_e5m2::from_bits(0x7C)).bits(), 0xFCu);  // +Inf -> -Inf
  EXPECT_EQ((-lowbit::float4_e2m1fn::from_bits(0x7)).bits(), 0xFu);
  EXPECT_EQ((-lowbit::float6_e3m2fn::from_bits(0x1F)).bits(), 0x3Fu);
  EXPECT_EQ((-lowbit::float16::from_bits(0x3C00)).bits(), 0xBC00u);
  EXPECT_EQ((-lowbit::float8_e4m3fnuz::from_bits(0x40)).bits(), 0xC0u);
}

TEST(Negation, FnuzZeroStaysPositiveAndNanStaysNan) {
  EXPECT_EQ((-lowbit::float8_e4m3fnuz::from_bits(0x00)).bits(), 0x00u);  // 0x80 would be NaN
  EXPECT_EQ((-lowbit::float8_e5m2fnuz::from_bits(0x00)).bits(), 0x00u);
  EXPECT_EQ((-lowbit::float8_e4m3fnuz::from_bits(0x80)).bits(), 0x80u);  // NaN, not zero
  EXPECT_TRUE((-lowbit::float8_e4m3fnuz::from_bits(0x80)).is_nan());
  EXPECT_TRUE((-lowbit::float8_e4m3fn::from_bits(0x7F)).is_nan());
  EXPECT_TRUE((-lowbit::float8_e4m3fn::from_bits(0xFF)).is_nan());
  EXPECT_TRUE((-lowbit::float8_e5m2::from_bits(0x7E)).is_nan());
  EXPECT_TRUE((-lowbit::float8_e8m0fnu::from_bits(0xFF)).is_nan());
  // E8M0 has no sign bit: negation cannot change the code.
  EXPECT_EQ((-lowbit::float8_e8m0fnu::from_bits(0x7F)).bits(), 0x7Fu);
}

// ---------------------------------------------------------------------------------------------
// from_bits keeps only the format's bits.

TEST(FromBits, MasksHighBitsOfNarrowFormats) {
  EXPECT_EQ(lowbit::float4_e2m1fn::from_bits(0xF7).bits(), 0x7u);
  EXPECT_EQ(lowbit::float4_e2m1fn::from_bits(0x1F).bits(), 0xFu);
  EXPECT_EQ(lowbit::float4_e2m1fn::from_bits(0x10).bits(), 0x0u);
  EXPECT_EQ(lowbit::float6_e2m3fn::from_bits(0xFF).bits(), 0x3Fu);
  EXPECT_EQ(lowbit::float6_e2m3fn::from_bits(0xC5).bits(), 0x05u);
  EXPECT_EQ(lowbit::float6_e3m2fn::from_bits(0x47).bits(), 0x07u);
  EXPECT_EQ(lowbit::float6_e3m2fn::from_bits(0x80).bits(), 0x00u);
  // The 8- and 16-bit formats use every bit.
  for (unsigned c = 0; c < 256; ++c) {
    EXPECT_EQ(lowbit::float8_e4m3fn::from_bits(static_cast<std::uint8_t>(c)).bits(), c);
    EXPECT_EQ(lowbit::float8_e8m0fnu::from_bits(static_cast<std::uint8_t>(c)).bits(), c);
  }
  EXPECT_EQ(lowbit::float16::from_bits(0xFFFF).bits(), 0xFFFFu);
  EXPECT_EQ(lowbit::bfloat16::from_bits(0x8001).bits(), 0x8001u);
}

// ---------------------------------------------------------------------------------------------
// operator<<: the value printed as float would print it.

template <class T>
std::string streamed(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string streamed_float(float f) {
  std::ostringstream os;
  os << f;
  return os.str();
}

TEST(Stream, PrintsTheValueAsAFloat) {
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0x7E)), "448");
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0xFE)), "-448");
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0x3C)), "1.5");
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0x80)), "-0");
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0x00)), "0");
  EXPECT_EQ(streamed(lowbit::float4_e2m1fn::from_bits(0x1)), "0.5");
  EXPECT_EQ(streamed(lowbit::float8_e5m2::from_bits(0x7B)), "57344");
  EXPECT_EQ(streamed(lowbit::float8_e5m2::from_bits(0x7C)), streamed_float(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(streamed(lowbit::float8_e5m2::from_bits(0xFC)), streamed_float(-std::numeric_limits<float>::infinity()));
  EXPECT_EQ(streamed(lowbit::float8_e8m0fnu::from_bits(0x00)), streamed_float(0x1p-127f));
  // NaN prints whatever the standard library prints for a float NaN of the same sign
  // ("nan" and "-nan" with libstdc++).
  const std::string pos_nan = streamed_float(std::numeric_limits<float>::quiet_NaN());
  const std::string neg_nan = streamed_float(std::copysign(std::numeric_limits<float>::quiet_NaN(), -1.0f));
  EXPECT_NE(pos_nan.find("nan"), std::string::npos);
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0x7F)), pos_nan);
  EXPECT_EQ(streamed(lowbit::float8_e4m3fn::from_bits(0xFF)), neg_nan);
  EXPECT_EQ(streamed(lowbit::float8_e8m0fnu::from_bits(0xFF)), pos_nan);
  // Stream state applies, as for float.
  std::ostringstream os;
  os.precision(3);
  os << std::fixed << lowbit::float8_e4m3fn::from_bits(0x01);  // 2^-9 = 0.001953125
  EXPECT_EQ(os.str(), "0.002");
}

// ---------------------------------------------------------------------------------------------
// Decoding is exact; a NaN code decodes to a float NaN with the code's sign (as ml_dtypes and
// c10 do; CUDA's host fp8 -> half canonicalises every NaN to +0x7FFF).

TEST(Decode, NanKeepsTheCodesSign) {
  EXPECT_TRUE(std::isnan(lowbit::decode(lowbit::float8_e4m3fn::from_bits(0x7F))));
  EXPECT_FALSE(std::signbit(lowbit::decode(lowbit::float8_e4m3fn::from_bits(0x7F))));
  EXPECT_TRUE(std::isnan(lowbit::decode(lowbit::float8_e4m3fn::from_bits(0xFF))));
  EXPECT_TRUE(std::signbit(lowbit::decode(lowbit::float8_e4m3fn::from_bits(0xFF))));
  EXPECT_TRUE(std::signbit(lowbit::decode(lowbit::float8_e5m2::from_bits(0xFD))));
  EXPECT_FALSE(std::signbit(lowbit::decode(lowbit::float8_e5m2::from_bits(0x7E))));
  EXPECT_TRUE(std::isnan(lowbit::decode(lowbit::float8_e4m3fnuz::from_bits(0x80))));
  EXPECT_FALSE(std::signbit(lowbit::decode(lowbit::float8_e8m0fnu::from_bits(0xFF))));
}

// ---------------------------------------------------------------------------------------------
// Construction from numbers: round to nearest even, saturate (lowbit's default policy).

TEST(Construction, FromFloatIntAndDouble) {
  using T = lowbit::float8_e4m3fn;
  EXPECT_EQ(T(1.5f).bits(), 0x3Cu);
  EXPECT_EQ(T(2).bits(), 0x40u);
  EXPECT_EQ(T(-3).bits(), 0xC4u);
  EXPECT_EQ(T(1.5).bits(), 0x3Cu);
  EXPECT_EQ(T(0).bits(), 0x00u);
  EXPECT_EQ(T(465).bits(), 0x7Eu);      // beyond the tie: saturates, not NaN
  EXPECT_EQ(T(100000L).bits(), 0x7Eu);  // long
  EXPECT_EQ(T(-1000.0f).bits(), 0xFEu);
  EXPECT_EQ(T(1.0625 + 0x1p-30).bits(), 0x39u);  // double converts directly
  EXPECT_EQ(T(std::numeric_limits<float>::infinity()).bits(), 0x7Eu);
  EXPECT_EQ(T(std::numeric_limits<double>::quiet_NaN()).bits(), 0x7Fu);
  EXPECT_EQ(lowbit::float4_e2m1fn(3).bits(), 0x5u);
  EXPECT_EQ(lowbit::float8_e8m0fnu(8).bits(), 0x82u);
  EXPECT_EQ(lowbit::float16(65504.0).bits(), 0x7BFFu);
  EXPECT_EQ(lowbit::bfloat16(1.0f).bits(), 0x3F80u);
  // A default-constructed value is +0 (E8M0: its 0x00, 2^-127).
  EXPECT_EQ(T().bits(), 0x00u);
  EXPECT_EQ(static_cast<float>(T()), 0.0f);
  // And back.
  EXPECT_EQ(static_cast<float>(T::from_bits(0x3C)), 1.5f);
  EXPECT_EQ(static_cast<double>(T::from_bits(0x3C)), 1.5);
}

}  // namespace
