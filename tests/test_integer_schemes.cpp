// Integer quantization schemes (schemes/integer.hpp): the lesson's worked examples, hand-computed
// codes and scales for every range rule and scheme, granularities, scale storage, the rounding
// helper, the MSE search, error reporting, and the error-bound and round-trip properties.
//
// Expected values are written by hand (powers of two where the arithmetic must be exact); none is
// computed by the code under test.
#include <lowbit/schemes/integer.hpp>
#include <lowbit/metrics.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;
using lowbit::granularity;
using lowbit::int_params;
using lowbit::int_range;
using lowbit::int_scheme;
using lowbit::rounding;
using lowbit::scale_storage;

// A null pointer the compiler cannot see through (a literal nullptr makes GCC warn about the
// code behind the check that rejects it).
template <class T>
T* opaque_null() {
  static T* volatile p = nullptr;
  return p;
}

int_params params(int bits, int_scheme scheme, int_range range = int_range::restricted,
                  granularity g = granularity::per_tensor, std::size_t group = 0) {
  int_params p;
  p.bits = bits;
  p.scheme = scheme;
  p.range = range;
  p.granularity = g;
  p.group_size = group;
  return p;
}

// Quantizes one row (per-tensor unless p says otherwise) and returns codes, scales, zeros and the
// dequantized values.
struct run {
  lowbit::status st;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales, zeros, y;
};

run quantize_rows(const std::vector<float>& x, std::size_t rows, const int_params& p) {
  run r;
  const std::size_t cols = x.size() / rows;
  const auto g = lowbit::int_groups(p, rows, cols);
  if (!g.ok()) {
    r.st = g.status;
    return r;
  }
  r.codes.assign(x.size(), 0xEE);
  r.scales.assign(g.value.group_count, -1.0f);
  r.zeros.assign(g.value.group_count, -1.0f);
  r.y.assign(x.size(), -1.0f);
  r.st = lowbit::quantize_int(x.data(), rows, cols, p, r.codes.data(), r.scales.data(), r.zeros.data());
  if (r.st.ok()) {
    const lowbit::status d =
        lowbit::dequantize_int(r.codes.data(), r.scales.data(), r.zeros.data(), rows, cols, p, r.y.data());
    EXPECT_TRUE(d.ok()) << d.message();
  }
  return r;
}

run quantize_row(const std::vector<float>& x, const int_params& p) { return quantize_rows(x, 1, p); }

double mse_of(const std::vector<float>& a, const std::vector<float>& b, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) s += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return s / static_cast<double>(n);
}

// ---------------------------------------------------------------------------------------------
// The lesson (003, second paragraph): 8 weights, INT4 symmetric -7..7.

TEST(LessonExamples, EightWeightsInt4Symmetric) {
  const std::vector<float> w = {0.35f, -0.40f, 0.49f, -0.51f, 0.53f, -0.68f, 0.74f, 1.40f};
  const run r = quantize_row(w, params(4, int_scheme::symmetric));
  ASSERT_TRUE(r.st.ok()) << r.st.message();
  EXPECT_EQ(r.scales[0], 0.2f);  // 1.4 / 7
  // q = 2, -2, 2, -3, 3, -3, 4, 7 (0.35/0.2 = 1.75, 0.49/0.2 = 2.45, -0.51/0.2 = -2.55, ...),
  // stored as q + 8.
  const std::vector<std::uint8_t> codes = {10, 6, 10, 5, 11, 5, 12, 15};
  EXPECT_EQ(r.codes, codes);
  // Squared errors 0.0025, 0, 0.0081, 0.0081, 0.0049, 0.0064, 0.0036, 0: sum 0.0336.
  EXPECT_NEAR(mse_of(w, r.y, 8), 0.0042, 1e-8);
  EXPECT_NEAR(mse_of(w, r.y, 7), 0.0048, 1e-8);  // the seven unchanged values
  const auto m = lowbit::mse(w, r.y);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m.value, 0.0042, 1e-8);
}

TEST(LessonExamples, OneOutlierSetsTheStep) {
  const std::vector<float> w = {0.35f, -0.40f, 0.49f, -0.51f, 0.53f, -0.68f, 0.74f, 14.0f};
  const run r = quantize_row(w, params(4, int_scheme::symmetric));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 2.0f);  // 14 / 7
  const std::vector<std::uint8_t> codes = {8, 8, 8, 8, 8, 8, 8, 15};  // the other seven round to 0
  EXPECT_EQ(r.codes, codes);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(r.y[i], 0.0f);
  EXPECT_EQ(r.y[7], 14.0f);
  // Sum of the seven squares: 0.1225 + 0.16 + 0.2401 + 0.2601 + 0.2809 + 0.4624 + 0.5476 = 2.0736.
  const double mse8 = mse_of(w, r.y, 8);
  const double mse7 = mse_of(w, r.y, 7);
  EXPECT_NEAR(mse8, 0.2592, 1e-7);
  EXPECT_NEAR(mse7, 0.29623, 5e-6);
  EXPECT_NEAR(mse8 / 0.0042, 61.7, 0.05);  // "about 61.7x worse", either denominator
  EXPECT_NEAR(mse7 / 0.0048, 61.7, 0.05);
}

// The lesson (003, third paragraph): per-tensor INT8 against E4M3 on [0.02, -0.3, 1.7, 12].
TEST(LessonExamples, Int8AgainstE4M3PerTensor) {
  const std::vector<float> x = {0.02f, -0.3f, 1.7f, 12.0f};
  const run r = quantize_row(x, params(8, int_scheme::symmetric));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 12.0f / 127.0f);
  // 0.02/s = 0.21 -> 0; -0.3/s = -3.175 -> -3; 1.7/s = 17.99 -> 18; 12/s = 127 (plus 128).
  const std::vector<std::uint8_t> codes = {128, 125, 146, 255};
  EXPECT_EQ(r.codes, codes);
  EXPECT_EQ(r.y[0], 0.0f);  // 0.02 is lost

  const float s8 = 12.0f / 448.0f;  // E4M3 scale amax / 448
  const float e0 = static_cast<float>(lowbit::encode<lowbit::float8_e4m3fn>(x[0] / s8)) * s8;
  const float e2 = static_cast<float>(lowbit::encode<lowbit::float8_e4m3fn>(x[2] / s8)) * s8;
  const double rel0 = std::fabs(e0 - 0.02) / 0.02;  // 0.7467 -> 0.75: 0.45 %
  EXPECT_LT(rel0, 0.0045);
  EXPECT_GT(rel0, 0.0044);
  const double int8_rel2 = std::fabs(r.y[2] - 1.7) / 1.7;  // 18 * 12/127 = 1.70079: 0.046 %
  const double e4m3_rel2 = std::fabs(e2 - 1.7) / 1.7;      // 63.47 -> 64: 0.84 %
  EXPECT_NEAR(int8_rel2, 0.000463, 0.000005);
  EXPECT_NEAR(e4m3_rel2, 0.0084, 0.0001);
  EXPECT_LT(int8_rel2, e4m3_rel2);
}

// ---------------------------------------------------------------------------------------------
// Range rules, by hand, with power-of-two scales so every quotient is exact.

TEST(SymmetricRanges, RestrictedInt4) {
  // amax 3.5 -> s = 0.5; 1.25/0.5 = 2.5 ties to 2; -0.25/0.5 = -0.5 ties to 0; 0.75 -> 1.5 -> 2.
  const run r = quantize_row({3.5f, -3.5f, 1.25f, -0.25f, 0.75f}, params(4, int_scheme::symmetric));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.5f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{15, 1, 10, 8, 10}));
  EXPECT_EQ(r.y, (std::vector<float>{3.5f, -3.5f, 1.0f, 0.0f, 1.0f}));
}

TEST(SymmetricRanges, FullInt4IsGptqs) {
  // s = 2*amax/15 = 3.75/7.5 = 0.5: +amax lands on 7.5 -> 8, clamped to 7; -amax on -7.5 -> -8.
  const run r = quantize_row({3.75f, -3.75f, 1.25f, 0.25f, -0.75f, 2.0f},
                             params(4, int_scheme::symmetric, int_range::full));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.5f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{15, 0, 10, 8, 6, 12}));
  EXPECT_EQ(r.y, (std::vector<float>{3.5f, -4.0f, 1.0f, 0.0f, -1.0f, 2.0f}));
}

TEST(SymmetricRanges, SignedExtremeIsGgmlQ4_0) {
  // m = +4 (largest magnitude) -> s = 4/-8 = -0.5: 4 maps to exactly -8 (code 0).
  const run r = quantize_row({1.0f, -2.0f, 4.0f, 0.25f}, params(4, int_scheme::symmetric, int_range::signed_extreme));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], -0.5f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{6, 12, 0, 8}));
  EXPECT_EQ(r.y, (std::vector<float>{1.0f, -2.0f, 4.0f, 0.0f}));
  // A tie between -4 and +4 takes -4: positive scale 0.5, +4 clamps to 7 * 0.5.
  const run t = quantize_row({-4.0f, 3.5f, 4.0f}, params(4, int_scheme::symmetric, int_range::signed_extreme));
  ASSERT_TRUE(t.st.ok());
  EXPECT_EQ(t.scales[0], 0.5f);
  EXPECT_EQ(t.codes, (std::vector<std::uint8_t>{0, 15, 15}));
}

TEST(SymmetricRanges, Int8AndInt2) {
  const run r8 = quantize_row({127.0f, -63.5f, 0.5f, -1.5f}, params(8, int_scheme::symmetric));
  ASSERT_TRUE(r8.st.ok());
  EXPECT_EQ(r8.scales[0], 1.0f);
  EXPECT_EQ(r8.codes, (std::vector<std::uint8_t>{255, 64, 128, 126}));  // -63.5 -> -64, 0.5 -> 0, -1.5 -> -2
  EXPECT_EQ(lowbit::symmetric_value(r8.codes[1], 8), -64);
  // 2 bits restricted: codes -1..1 (1..3), s = amax.
  const run r2 = quantize_row({2.0f, -1.5f, 0.5f, -0.75f}, params(2, int_scheme::symmetric));
  ASSERT_TRUE(r2.st.ok());
  EXPECT_EQ(r2.scales[0], 2.0f);
  EXPECT_EQ(r2.codes, (std::vector<std::uint8_t>{3, 1, 2, 2}));  // 1, -0.75 -> -1, 0.25 -> 0, -0.375 -> 0
}

// ---------------------------------------------------------------------------------------------
// Affine schemes.

TEST(Affine, IntegerZeroPointRangeIncludesZero) {
  // [-1.5, 6]: s = 7.5/15 = 0.5, z = round(1.5/0.5) = 3.
  const run r = quantize_row({-1.5f, 0.5f, 6.0f, 0.0f}, params(4, int_scheme::affine));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.5f);
  EXPECT_EQ(r.zeros[0], 3.0f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{0, 4, 15, 3}));
  EXPECT_EQ(r.y, (std::vector<float>{-1.5f, 0.5f, 6.0f, 0.0f}));  // 0 is exact
  // One-signed [1, 7.5] widens to [0, 7.5]: s = 0.5, z = 0.
  const run pos = quantize_row({1.0f, 2.5f, 4.0f, 7.5f}, params(4, int_scheme::affine));
  ASSERT_TRUE(pos.st.ok());
  EXPECT_EQ(pos.scales[0], 0.5f);
  EXPECT_EQ(pos.zeros[0], 0.0f);
  EXPECT_EQ(pos.codes, (std::vector<std::uint8_t>{2, 5, 8, 15}));
  // The zero-point rounds to nearest even: [-1.25, 6.25] -> s = 0.5, -min/s = 2.5 -> z = 2.
  const run tie = quantize_row({-1.25f, 6.25f}, params(4, int_scheme::affine));
  ASSERT_TRUE(tie.st.ok());
  EXPECT_EQ(tie.zeros[0], 2.0f);
  EXPECT_EQ(tie.codes, (std::vector<std::uint8_t>{0, 14}));  // -2.5 -> -2; 12.5 -> 12
}

TEST(Affine, TrueMinMaxLikeAwq) {
  int_params p = params(4, int_scheme::affine);
  p.range_includes_zero = false;
  // [2, 5.75]: s = 3.75/15 = 0.25; z = round(-8) clamps to 0, so the top of the range clips:
  // AWQ's behaviour on a one-signed group (the widened range would not clip).
  const run r = quantize_row({2.0f, 5.75f}, p);
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.25f);
  EXPECT_EQ(r.zeros[0], 0.0f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{8, 15}));
  EXPECT_EQ(r.y[1], 3.75f);
  // A group containing 0 is the same either way.
  const run mixed = quantize_row({-2.0f, 1.75f}, p);
  ASSERT_TRUE(mixed.st.ok());
  EXPECT_EQ(mixed.scales[0], 0.25f);
  EXPECT_EQ(mixed.zeros[0], 8.0f);
  EXPECT_EQ(mixed.codes, (std::vector<std::uint8_t>{0, 15}));
  // A one-valued group falls back to the widened range: [3, 3] -> s = 0.2, codes at 15.
  const run flat = quantize_row({3.0f, 3.0f}, p);
  ASSERT_TRUE(flat.st.ok());
  EXPECT_EQ(flat.scales[0], 0.2f);
  EXPECT_EQ(flat.codes, (std::vector<std::uint8_t>{15, 15}));
}

TEST(Affine, FloatOffsetKivi) {
  // 2 bits, m = min = 1, s = (2.5 - 1)/3 = 0.5: x = q*0.5 + 1.
  const run r = quantize_row({1.0f, 1.5f, 2.0f, 2.5f, 1.2f, 2.3f}, params(2, int_scheme::affine_offset));
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.5f);
  EXPECT_EQ(r.zeros[0], 1.0f);  // the offset, not an integer zero-point
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{0, 1, 2, 3, 0, 3}));  // 0.4 -> 0, 2.6 -> 3
  EXPECT_EQ(r.y, (std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f, 1.0f, 2.5f}));
  // 0 is not on this grid: the offset convention does not preserve zero.
  const run z = quantize_row({-0.25f, 0.5f, 1.25f}, params(2, int_scheme::affine_offset));
  ASSERT_TRUE(z.st.ok());
  EXPECT_EQ(z.scales[0], 0.5f);
  EXPECT_EQ(z.zeros[0], -0.25f);
  EXPECT_EQ(z.codes, (std::vector<std::uint8_t>{0, 2, 3}));  // 0.5 -> 1.5 -> 2
}

// ---------------------------------------------------------------------------------------------
// Granularity: groups are contiguous in row-major order.

TEST(Granularity, TensorChannelTokenGroup) {
  // 2 x 8; row 0 has amax 7, row 1 amax 14; groups of 4 have amax 7, 3.5, 14, 1.75.
  const std::vector<float> x = {7.0f,  1.0f, -2.0f, 3.0f, 0.5f, -3.5f, 1.0f, 2.0f,
                                -14.0f, 2.0f, 4.0f,  6.0f, 1.75f, 0.5f, -1.0f, 0.25f};
  const run t = quantize_rows(x, 2, params(4, int_scheme::symmetric, int_range::restricted, granularity::per_tensor));
  ASSERT_TRUE(t.st.ok());
  EXPECT_EQ(t.scales, (std::vector<float>{2.0f}));
  for (granularity g : {granularity::per_channel, granularity::per_token}) {
    const run c = quantize_rows(x, 2, params(4, int_scheme::symmetric, int_range::restricted, g));
    ASSERT_TRUE(c.st.ok());
    EXPECT_EQ(c.scales, (std::vector<float>{1.0f, 2.0f}));
    EXPECT_EQ(c.codes[1], 9);   // 1/1
    EXPECT_EQ(c.codes[9], 9);   // 2/2
    EXPECT_EQ(c.codes[15], 8);  // 0.25/2 = 0.125 -> 0
  }
  const run gr = quantize_rows(x, 2, params(4, int_scheme::symmetric, int_range::restricted, granularity::per_group, 4));
  ASSERT_TRUE(gr.st.ok());
  EXPECT_EQ(gr.scales, (std::vector<float>{1.0f, 0.5f, 2.0f, 0.25f}));
  EXPECT_EQ(gr.codes, (std::vector<std::uint8_t>{15, 9, 6, 11, 9, 1, 10, 12, 1, 9, 10, 11, 15, 10, 4, 9}));
  // Every G that divides the row works.
  for (std::size_t g : {1u, 2u, 4u, 8u}) {
    const run any = quantize_rows(x, 2, params(4, int_scheme::symmetric, int_range::restricted, granularity::per_group, g));
    EXPECT_TRUE(any.st.ok()) << g;
    EXPECT_EQ(any.scales.size(), 16u / g);
  }
}

// ---------------------------------------------------------------------------------------------
// Scale storage: codes are computed against the stored scale.

TEST(ScaleStorage, CodesUseTheStoredScale) {
  // amax 1 -> s = 1/7. In fp16 that is 0.142822265625 (1.0010010010b * 2^-3, rounded down),
  // in bfloat16 0.142578125. x = 3.4995/7 = 0.499928...: against 1/7 it is 3.4995 -> 3, against
  // the fp16 scale 3.5003 -> 4.
  const std::vector<float> x = {1.0f, 0.49992857f};
  int_params p = params(4, int_scheme::symmetric);
  const run f32 = quantize_row(x, p);
  ASSERT_TRUE(f32.st.ok());
  EXPECT_EQ(f32.scales[0], 1.0f / 7.0f);
  EXPECT_EQ(f32.codes[1], 11);
  p.scale_format = scale_storage::fp16;
  const run f16 = quantize_row(x, p);
  ASSERT_TRUE(f16.st.ok());
  EXPECT_EQ(f16.scales[0], 0.142822265625f);
  EXPECT_EQ(f16.codes[1], 12);
  EXPECT_EQ(f16.y[1], 4.0f * 0.142822265625f);
  p.scale_format = scale_storage::bf16;
  const run bf = quantize_row(x, p);
  ASSERT_TRUE(bf.st.ok());
  EXPECT_EQ(bf.scales[0], 0.142578125f);
  EXPECT_EQ(bf.codes[0], 15);  // 1/0.142578125 = 7.01 -> 7
  EXPECT_EQ(bf.codes[1], 12);  // 3.5064 -> 4
}

TEST(ScaleStorage, OverflowingTheFormatIsAnError) {
  int_params p = params(4, int_scheme::symmetric);
  p.scale_format = scale_storage::fp16;
  const run r = quantize_row({1.0e6f, 1.0f}, p);  // 1e6/7 > 65504
  EXPECT_EQ(r.st.code(), errc::scale_overflow);
  p.scale_format = scale_storage::fp32;
  EXPECT_TRUE(quantize_row({1.0e6f, 1.0f}, p).st.ok());
  // Half the largest floats give a finite float32 scale and grid, even for 2-bit affine ranges;
  // the largest ones do not: code 0 would stand for (0 - 2) * (2 max / 3) = -inf (issue 9).
  const float big = std::numeric_limits<float>::max();
  const run huge = quantize_row({-big / 2, big / 2}, params(2, int_scheme::affine));
  ASSERT_TRUE(huge.st.ok());
  EXPECT_TRUE(std::isfinite(huge.scales[0]));
  EXPECT_EQ(huge.codes, (std::vector<std::uint8_t>{0, 3}));
  for (float v : huge.y) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(quantize_row({-big, big}, params(2, int_scheme::affine)).st.code(), errc::scale_overflow);
}

TEST(ScaleStorage, ScaleThatUnderflowsGivesZeroPointCodes) {
  int_params p = params(4, int_scheme::symmetric);
  p.scale_format = scale_storage::fp16;
  const run r = quantize_row({1.0e-9f, -5.0e-10f}, p);  // 1e-9/7 is far below fp16's smallest
  ASSERT_TRUE(r.st.ok());
  EXPECT_EQ(r.scales[0], 0.0f);
  EXPECT_EQ(r.codes, (std::vector<std::uint8_t>{8, 8}));
  EXPECT_EQ(r.y, (std::vector<float>{0.0f, 0.0f}));
}

// ---------------------------------------------------------------------------------------------
// All-zero groups: scale 0, codes at the zero-point, zeros back.

TEST(ZeroGroups, EveryScheme) {
  const std::vector<float> x = {0.0f, -0.0f, 0.0f, 0.0f, 1.0f, -2.0f, 0.5f, 0.25f};
  const int_params g4 = params(4, int_scheme::symmetric, int_range::restricted, granularity::per_group, 4);
  const run s = quantize_row(x, g4);
  ASSERT_TRUE(s.st.ok());
  EXPECT_EQ(s.scales[0], 0.0f);
  EXPECT_FALSE(std::signbit(s.scales[0]));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.codes[i], 8);
    EXPECT_EQ(s.y[i], 0.0f);
  }
  for (int_range rr : {int_range::full, int_range::signed_extreme}) {
    int_params p = g4;
    p.range = rr;
    const run q = quantize_row(x, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.scales[0], 0.0f);
    EXPECT_EQ(q.codes[0], 8);
  }
  int_params a = g4;
  a.scheme = int_scheme::affine;
  const run af = quantize_row(x, a);
  ASSERT_TRUE(af.st.ok());
  EXPECT_EQ(af.scales[0], 0.0f);
  EXPECT_EQ(af.zeros[0], 0.0f);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(af.codes[i], 0);  // at the zero-point
    EXPECT_EQ(af.y[i], 0.0f);
  }
  a.scheme = int_scheme::affine_offset;
  const run off = quantize_row(x, a);
  ASSERT_TRUE(off.st.ok());
  EXPECT_EQ(off.scales[0], 0.0f);
  EXPECT_EQ(off.zeros[0], 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(off.y[i], 0.0f);
  // A constant nonzero group under the offset convention is exact: s = 0, m = 3.
  const run flat = quantize_row({3.0f, 3.0f, 3.0f}, params(4, int_scheme::affine_offset));
  ASSERT_TRUE(flat.st.ok());
  EXPECT_EQ(flat.scales[0], 0.0f);
  EXPECT_EQ(flat.y, (std::vector<float>{3.0f, 3.0f, 3.0f}));
}

// ---------------------------------------------------------------------------------------------
// Rounding of codes.

TEST(Rounding, RoundToCodeModes) {
  using lowbit::round_to_code;
  EXPECT_EQ(round_to_code(2.5f, -8, 7, rounding::nearest_even), 2);
  EXPECT_EQ(round_to_code(3.5f, -8, 7, rounding::nearest_even), 4);
  EXPECT_EQ(round_to_code(-2.5f, -8, 7, rounding::nearest_even), -2);
  EXPECT_EQ(round_to_code(2.5f, -8, 7, rounding::nearest_away), 3);
  EXPECT_EQ(round_to_code(-2.5f, -8, 7, rounding::nearest_away), -3);
  EXPECT_EQ(round_to_code(-2.5f, -8, 7, rounding::nearest_toward_zero), -2);
  EXPECT_EQ(round_to_code(2.51f, -8, 7, rounding::nearest_toward_zero), 3);
  EXPECT_EQ(round_to_code(-2.7f, -8, 7, rounding::toward_zero), -2);
  EXPECT_EQ(round_to_code(2.7f, -8, 7, rounding::toward_zero), 2);
  EXPECT_EQ(round_to_code(-2.7f, -8, 7, rounding::toward_pos_inf), -2);
  EXPECT_EQ(round_to_code(2.1f, -8, 7, rounding::toward_pos_inf), 3);
  EXPECT_EQ(round_to_code(3.0f, -8, 7, rounding::toward_pos_inf), 3);
  // Stochastic: 2.25 rounds up iff 2^30 + r >= 2^32.
  EXPECT_EQ(round_to_code(2.25f, -8, 7, rounding::stochastic, 0xBFFFFFFFu), 2);
  EXPECT_EQ(round_to_code(2.25f, -8, 7, rounding::stochastic, 0xC0000000u), 3);
  EXPECT_EQ(round_to_code(-2.25f, -8, 7, rounding::stochastic, 0xC0000000u), -3);
  EXPECT_EQ(round_to_code(2.0f, -8, 7, rounding::stochastic, 0xFFFFFFFFu), 2);
  // Clamping, infinities and NaN.
  EXPECT_EQ(round_to_code(7.5f, -8, 7, rounding::nearest_even), 7);
  EXPECT_EQ(round_to_code(-1e30f, -8, 7, rounding::nearest_even), -8);
  EXPECT_EQ(round_to_code(std::numeric_limits<float>::infinity(), -8, 7, rounding::nearest_even), 7);
  EXPECT_EQ(round_to_code(std::numeric_limits<float>::quiet_NaN(), -8, 7, rounding::nearest_even), -8);
}

TEST(Rounding, SchemeHonoursTheMode) {
  int_params p = params(4, int_scheme::symmetric);
  const std::vector<float> x = {3.5f, 1.25f, -1.25f, 0.75f};  // s = 0.5: 7, 2.5, -2.5, 1.5
  p.element_rounding = rounding::nearest_even;
  EXPECT_EQ(quantize_row(x, p).codes, (std::vector<std::uint8_t>{15, 10, 6, 10}));
  p.element_rounding = rounding::nearest_away;
  EXPECT_EQ(quantize_row(x, p).codes, (std::vector<std::uint8_t>{15, 11, 5, 10}));
  p.element_rounding = rounding::toward_zero;
  EXPECT_EQ(quantize_row(x, p).codes, (std::vector<std::uint8_t>{15, 10, 6, 9}));
  p.element_rounding = rounding::stochastic;  // random bits: element i gets bits[i]; no bits means 0 (toward zero)
  const std::vector<std::uint32_t> bits = {0u, 0x80000000u, 0x7FFFFFFFu, 0x80000000u};
  std::vector<std::uint8_t> codes(4);
  float s = 0.0f;
  ASSERT_TRUE(lowbit::quantize_int(x.data(), 1, 4, p, codes.data(), &s, nullptr, bits.data()).ok());
  EXPECT_EQ(codes, (std::vector<std::uint8_t>{15, 11, 6, 10}));
  ASSERT_TRUE(lowbit::quantize_int(x.data(), 1, 4, p, codes.data(), &s, nullptr).ok());
  EXPECT_EQ(codes, (std::vector<std::uint8_t>{15, 10, 6, 9}));
}

// ---------------------------------------------------------------------------------------------
// MSE search over clipping ratios.

TEST(MseSearch, FindsTheBestClipOnTheGrid) {
  // 2-bit restricted (q in -1..1), x = [1, 0.4, 0.4, 0.4], norm 2. With scale p (amax 1):
  // error = 3 (p - 0.4)^2 + (1 - p)^2 for p in [0.5, 1), minimal at p = 0.55 (0.27), against
  // 0.48 for minmax (s = 1 sends every 0.4 to 0).
  int_params p = params(2, int_scheme::symmetric);
  const std::vector<float> x = {1.0f, 0.4f, 0.4f, 0.4f};
  const run mm = quantize_row(x, p);
  ASSERT_TRUE(mm.st.ok());
  EXPECT_EQ(mm.scales[0], 1.0f);
  EXPECT_NEAR(4.0 * mse_of(x, mm.y, 4), 0.48, 1e-6);
  p.search = lowbit::scale_search::mse_grid;
  p.search_norm = 2.0f;
  const run s = quantize_row(x, p);
  ASSERT_TRUE(s.st.ok());
  EXPECT_EQ(s.scales[0], 0.55f);
  EXPECT_EQ(s.codes, (std::vector<std::uint8_t>{3, 3, 3, 3}));
  EXPECT_NEAR(4.0 * mse_of(x, s.y, 4), 0.27, 1e-6);
  // A grid that stops above 0.55 (maxshrink 0.4: p = 1.00 .. 0.61) takes its smallest p.
  p.search_maxshrink = 0.4f;
  const run short_grid = quantize_row(x, p);
  ASSERT_TRUE(short_grid.st.ok());
  EXPECT_EQ(short_grid.scales[0], 0.61f);
  // One candidate is minmax.
  p.search_grid = 1;
  EXPECT_EQ(quantize_row(x, p).scales[0], 1.0f);
}

TEST(MseSearch, NeverWorseThanMinmaxUnderItsNorm) {
  std::uint32_t state = 12345u;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f;
  };
  std::vector<float> x(8 * 64);
  for (float& v : x) v = next() * next() * 3.0f;  // heavy-ish tails
  for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset}) {
    int_params p = params(4, sc, int_range::full, granularity::per_group, 32);
    const run base = quantize_rows(x, 8, p);
    p.search = lowbit::scale_search::mse_grid;
    p.search_norm = 2.0f;
    const run best = quantize_rows(x, 8, p);
    ASSERT_TRUE(base.st.ok() && best.st.ok());
    for (std::size_t g = 0; g < 16; ++g) {
      double eb = 0.0;
      double es = 0.0;
      for (std::size_t i = g * 32; i < g * 32 + 32; ++i) {
        eb += (static_cast<double>(base.y[i]) - x[i]) * (static_cast<double>(base.y[i]) - x[i]);
        es += (static_cast<double>(best.y[i]) - x[i]) * (static_cast<double>(best.y[i]) - x[i]);
      }
      EXPECT_LE(es, eb) << static_cast<int>(sc) << " group " << g;
      EXPECT_LE(std::fabs(best.scales[g]), std::fabs(base.scales[g]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(Errors, BadShapesWidthsAndParameters) {
  const std::vector<float> x(16, 1.0f);
  std::vector<std::uint8_t> c(16);
  std::vector<float> s(16), z(16);
  auto q = [&](const int_params& p, std::size_t rows, std::size_t cols) {
    return lowbit::quantize_int(x.data(), rows, cols, p, c.data(), s.data(), z.data()).code();
  };
  int_params p = params(4, int_scheme::symmetric);
  EXPECT_EQ(q(p, 2, 8), errc::ok);
  for (int b : {-1, 0, 1, 9, 16}) {
    int_params w = p;
    w.bits = b;
    EXPECT_EQ(q(w, 2, 8), errc::bad_bit_width) << b;
  }
  EXPECT_EQ(q(p, 0, 8), errc::ok);  // n = 0: nothing to do
  EXPECT_EQ(q(p, 2, 0), errc::ok);
  int_params g = params(4, int_scheme::symmetric, int_range::restricted, granularity::per_group, 3);
  EXPECT_EQ(q(g, 2, 8), errc::bad_group_size);
  g.group_size = 0;
  EXPECT_EQ(q(g, 2, 8), errc::bad_group_size);
  g.group_size = 16;  // larger than the row
  EXPECT_EQ(q(g, 2, 8), errc::bad_group_size);
  int_params bad = p;
  bad.search = lowbit::scale_search::mse_grid;
  bad.search_grid = 0;
  EXPECT_EQ(q(bad, 2, 8), errc::bad_argument);
  bad.search_grid = 100;
  bad.search_maxshrink = 1.5f;
  EXPECT_EQ(q(bad, 2, 8), errc::bad_argument);
  bad.search_maxshrink = 0.8f;
  bad.search_norm = 0.0f;
  EXPECT_EQ(q(bad, 2, 8), errc::bad_argument);
  int_params e = p;
  e.scheme = static_cast<int_scheme>(7);
  EXPECT_EQ(q(e, 2, 8), errc::bad_argument);
  // Null buffers; zeros may be null only for symmetric schemes.
  EXPECT_EQ(lowbit::quantize_int(x.data(), 2, 8, p, c.data(), s.data(), nullptr).code(), errc::ok);
  EXPECT_EQ(lowbit::quantize_int(x.data(), 2, 8, params(4, int_scheme::affine), c.data(), s.data(), nullptr).code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::quantize_int(opaque_null<const float>(), 2, 8, p, c.data(), s.data(), nullptr).code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::quantize_int(x.data(), 2, 8, p, opaque_null<std::uint8_t>(), s.data(), nullptr).code(),
            errc::bad_argument);
  // Overflowing size_t.
  EXPECT_EQ(lowbit::int_groups(p, std::numeric_limits<std::size_t>::max() / 2, 4).status.code(), errc::bad_argument);
}

TEST(Errors, NonFiniteInputInAGroup) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset}) {
      const run r = quantize_row({1.0f, bad, 2.0f, 3.0f}, params(4, sc));
      EXPECT_EQ(r.st.code(), errc::non_finite_input);
    }
    int_params p = params(4, int_scheme::symmetric);
    p.search = lowbit::scale_search::mse_grid;
    EXPECT_EQ(quantize_row({bad, 1.0f}, p).st.code(), errc::non_finite_input);
    // With given scales too.
    const std::vector<float> x = {1.0f, bad};
    std::uint8_t c[2];
    const float s = 0.5f;
    EXPECT_EQ(lowbit::quantize_int_fixed(x.data(), &s, nullptr, 1, 2, params(4, int_scheme::symmetric), c).code(),
              errc::non_finite_input);
  }
  // NaN in a later group of a per-group quantization.
  const run g = quantize_row({1.0f, 2.0f, nan, 0.0f},
                             params(4, int_scheme::symmetric, int_range::restricted, granularity::per_group, 2));
  EXPECT_EQ(g.st.code(), errc::non_finite_input);
}

TEST(Errors, StoredParametersAreChecked) {
  const std::uint8_t codes[2] = {8, 9};
  float y[2];
  const int_params p = params(4, int_scheme::affine);
  const float s = 0.5f;
  float z = 3.5f;  // not an integer
  EXPECT_EQ(lowbit::dequantize_int(codes, &s, &z, 1, 2, p, y).code(), errc::bad_argument);
  z = 16.0f;  // out of range
  EXPECT_EQ(lowbit::dequantize_int(codes, &s, &z, 1, 2, p, y).code(), errc::bad_argument);
  z = 8.0f;
  EXPECT_EQ(lowbit::dequantize_int(codes, &s, &z, 1, 2, p, y).code(), errc::ok);
  EXPECT_EQ(y[1], 0.5f);
  int_params h = params(4, int_scheme::symmetric);
  h.scale_format = scale_storage::fp16;
  const float not_half = 0.1f;  // not representable in fp16
  EXPECT_EQ(lowbit::dequantize_int(codes, &not_half, nullptr, 1, 2, h, y).code(), errc::bad_argument);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::dequantize_int(codes, &nan, nullptr, 1, 2, params(4, int_scheme::symmetric), y).code(),
            errc::bad_argument);
}

// ---------------------------------------------------------------------------------------------
// Properties on pseudo-random data, every width, scheme and range.

std::vector<float> random_matrix(std::size_t n, std::uint32_t seed, float spread) {
  std::vector<float> x(n);
  for (float& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(seed)) / 2147483648.0f * spread;
  }
  return x;
}

TEST(Properties, ErrorAtMostHalfAStepInsideTheRange) {
  const std::size_t rows = 6;
  const std::size_t cols = 64;
  const std::vector<float> x = random_matrix(rows * cols, 7u, 5.0f);
  for (int bits = 2; bits <= 8; ++bits)
    for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset})
      for (int_range rr : {int_range::restricted, int_range::full, int_range::signed_extreme})
        for (scale_storage fmt : {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16}) {
          if (sc != int_scheme::symmetric && rr != int_range::restricted) continue;
          int_params p = params(bits, sc, rr, granularity::per_group, 16);
          p.scale_format = fmt;
          const run r = quantize_rows(x, rows, p);
          ASSERT_TRUE(r.st.ok());
          for (std::size_t i = 0; i < x.size(); ++i) {
            const std::size_t g = i / 16;
            const double s = std::fabs(r.scales[g]);
            int zp = lowbit::symmetric_zero_point(bits);
            int cmin = rr == int_range::restricted ? 1 : 0;
            double offset = 0.0;
            if (sc == int_scheme::affine) {
              zp = static_cast<int>(r.zeros[g]);
              cmin = 0;
            } else if (sc == int_scheme::affine_offset) {
              zp = 0;
              cmin = 0;
              offset = r.zeros[g];
            }
            // The grid's ends, as values (a negative scale swaps them).
            const double e0 = (cmin - zp) * static_cast<double>(r.scales[g]) + offset;
            const double e1 = (lowbit::max_code(bits) - zp) * static_cast<double>(r.scales[g]) + offset;
            const double lo = std::fmin(e0, e1) - s / 2;
            const double hi = std::fmax(e0, e1) + s / 2;
            const double err = std::fabs(static_cast<double>(r.y[i]) - x[i]);
            if (x[i] >= lo && x[i] <= hi) {
              EXPECT_LE(err, s / 2 * (1 + 1e-6) + 2e-7 * (std::fabs(x[i]) + std::fabs(offset)))
                  << "bits " << bits << " scheme " << static_cast<int>(sc) << " range " << static_cast<int>(rr)
                  << " fmt " << static_cast<int>(fmt) << " i " << i;
            }
            EXPECT_LE(r.codes[i], lowbit::max_code(bits));
            EXPECT_GE(r.codes[i], cmin);
          }
        }
}

TEST(Properties, RepresentableValuesRoundTripExactly) {
  // Values on the grid k * 2^-3 (k in range), with the extreme present so the scale is 2^-3 again.
  for (int bits = 2; bits <= 8; ++bits) {
    const int half = 1 << (bits - 1);
    std::vector<float> x;
    for (int k = -(half - 1); k <= half - 1; ++k) x.push_back(static_cast<float>(k) * 0.125f);
    const run r = quantize_row(x, params(bits, int_scheme::symmetric));
    ASSERT_TRUE(r.st.ok());
    EXPECT_EQ(r.scales[0], 0.125f);
    EXPECT_EQ(r.y, x) << bits;
    // Affine: 0 .. 2^b-1 steps of 2^-2 shifted by -3 steps.
    std::vector<float> a;
    for (int k = -3; k <= (1 << bits) - 4; ++k) a.push_back(static_cast<float>(k) * 0.25f);
    const run ra = quantize_row(a, params(bits, int_scheme::affine));
    ASSERT_TRUE(ra.st.ok());
    EXPECT_EQ(ra.scales[0], 0.25f);
    EXPECT_EQ(ra.zeros[0], 3.0f);
    EXPECT_EQ(ra.y, a) << bits;
  }
}

TEST(Properties, QuantizingTheDequantizedValuesIsIdempotent) {
  const std::vector<float> x = random_matrix(4 * 32, 99u, 2.0f);
  for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine}) {
    int_params p = params(4, sc, int_range::restricted, granularity::per_group, 32);
    p.scale_format = scale_storage::fp16;
    const run r = quantize_rows(x, 4, p);
    ASSERT_TRUE(r.st.ok());
    std::vector<std::uint8_t> again(x.size());
    ASSERT_TRUE(lowbit::quantize_int_fixed(r.y.data(), r.scales.data(), r.zeros.data(), 4, 32, p, again.data()).ok());
    EXPECT_EQ(again, r.codes);
    // And quantize_int_fixed on the original data gives quantize_int's codes.
    ASSERT_TRUE(lowbit::quantize_int_fixed(x.data(), r.scales.data(), r.zeros.data(), 4, 32, p, again.data()).ok());
    EXPECT_EQ(again, r.codes);
  }
}

// ---------------------------------------------------------------------------------------------
// The path (lowbit::scoped_isa) never changes a result.

TEST(Paths, ScalarAndSimdGiveTheSameBytes) {
  const std::vector<float> x = random_matrix(4 * 64, 5u, 1.0f);
  for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset}) {
    const int_params p = params(4, sc, int_range::full, granularity::per_group, 32);
    std::vector<std::uint8_t> a(x.size()), b(x.size());
    std::vector<float> sa(8), sb(8), za(8), zb(8);
    {
      const lowbit::scoped_isa scalar(lowbit::isa::scalar);
      ASSERT_TRUE(lowbit::quantize_int(x.data(), 4, 64, p, a.data(), sa.data(), za.data()).ok());
    }
    ASSERT_TRUE(lowbit::quantize_int(x.data(), 4, 64, p, b.data(), sb.data(), zb.data()).ok());
    EXPECT_EQ(a, b);
    EXPECT_EQ(sa, sb);
    EXPECT_EQ(za, zb);
    for (const lowbit::isa simd : lowbit_test::simd_paths()) {  // each SIMD path by name too
      const lowbit::scoped_isa path(simd);
      ASSERT_TRUE(lowbit::quantize_int(x.data(), 4, 64, p, b.data(), sb.data(), zb.data()).ok());
      EXPECT_EQ(a, b) << lowbit::isa_name(simd);
      EXPECT_EQ(sa, sb) << lowbit::isa_name(simd);
      EXPECT_EQ(za, zb) << lowbit::isa_name(simd);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Regression tests of issue 9 (one public API; no bad input that gets past it). Each runs on the
// scalar path and on every SIMD path the CPU has (AVX2, AVX-512).

// Every path: scalar, avx2 and avx512 (path_available skips those this build or CPU lacks).
constexpr lowbit::isa both_paths[] = {lowbit::isa::scalar, lowbit::isa::avx2, lowbit::isa::avx512};

bool path_available(lowbit::isa i) { return lowbit::is_supported(i); }

// Quantizes one group of x under p on path i; the dequantized values when it succeeds.
lowbit::status quantize_on(lowbit::isa i, const std::vector<float>& x, const int_params& p, std::vector<float>* y) {
  const lowbit::scoped_isa path(i);
  std::vector<std::uint8_t> codes(x.size());
  float scale = 0.0f, zero = 0.0f;
  const lowbit::status st = lowbit::quantize_int(x.data(), 1, x.size(), p, codes.data(), &scale, &zero);
  if (st.ok()) {
    y->assign(x.size(), 0.0f);
    EXPECT_TRUE(lowbit::dequantize_int(codes.data(), &scale, &zero, 1, x.size(), p, y->data()).ok());
  }
  return st;
}

// A group reaching +-FLT_MAX quantized with status ok and dequantized to -inf: a computed scale
// whose grid overflows float is scale_overflow, on both paths.
TEST(IntegerIssue9, GroupReachingFltMaxIsScaleOverflowNotInf) {
  const float big = std::numeric_limits<float>::max();
  std::vector<float> x(64);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(static_cast<int>(k % 9) - 4) * 1e37f;
  x[3] = big;
  x[10] = -big;
  struct setting {
    int bits;
    int_scheme scheme;
    int_range range;
    scale_storage fmt;
  };
  const setting settings[] = {
      {4, int_scheme::symmetric, int_range::full, scale_storage::fp32},
      {8, int_scheme::symmetric, int_range::full, scale_storage::fp32},
      {4, int_scheme::affine, int_range::restricted, scale_storage::fp32},
      {2, int_scheme::symmetric, int_range::full, scale_storage::bf16},
      {3, int_scheme::symmetric, int_range::full, scale_storage::bf16},
      {2, int_scheme::affine, int_range::restricted, scale_storage::bf16},
  };
  for (const setting& st : settings) {
    int_params p = params(st.bits, st.scheme, st.range);
    p.scale_format = st.fmt;
    for (lowbit::isa i : both_paths) {
      if (!path_available(i)) continue;
      std::vector<float> y;
      const lowbit::status r = quantize_on(i, x, p, &y);
      if (r.ok()) {  // only if every value it gives back is finite
        for (float v : y) ASSERT_TRUE(std::isfinite(v)) << st.bits << " " << static_cast<int>(st.scheme);
      } else {
        EXPECT_EQ(r.code(), errc::scale_overflow) << st.bits << " " << static_cast<int>(st.scheme);
      }
    }
    // The full range cannot hold -FLT_MAX's code -2^(b-1) * s: an error, not -inf.
    if (st.range == int_range::full && st.scheme == int_scheme::symmetric) {
      std::vector<float> y;
      EXPECT_EQ(quantize_on(lowbit::isa::scalar, x, p, &y).code(), errc::scale_overflow);
    }
  }
  // A group below 2^126 is unaffected (and matches across the paths).
  std::vector<float> small = x;
  small[3] = 0x1p125f;
  small[10] = -0x1p125f;
  std::vector<float> a, b;
  const int_params p = params(4, int_scheme::symmetric, int_range::full);
  ASSERT_TRUE(quantize_on(lowbit::isa::scalar, small, p, &a).ok());
  for (const lowbit::isa simd : lowbit_test::simd_paths()) {
    ASSERT_TRUE(quantize_on(simd, small, p, &b).ok());
    EXPECT_EQ(a, b) << lowbit::isa_name(simd);
  }
}

// affine_offset with a range beyond FLT_MAX (x - m overflows): every positive value got the top
// code, status ok. Now scale_overflow on both paths.
TEST(IntegerIssue9, OffsetRangeBeyondFltMaxIsScaleOverflow) {
  const float big = std::numeric_limits<float>::max();
  std::vector<float> x(32, 0.0f);
  x[0] = -big;
  x[1] = big;
  x[2] = big / 4.0f;
  int_params p = params(4, int_scheme::affine_offset);
  for (scale_storage fmt : {scale_storage::fp32, scale_storage::bf16}) {
    p.scale_format = fmt;
    for (lowbit::isa i : both_paths) {
      if (!path_available(i)) continue;
      std::vector<float> y;
      EXPECT_EQ(quantize_on(i, x, p, &y).code(), errc::scale_overflow) << static_cast<int>(fmt);
    }
  }
}

// quantize_int_packed with rows * cols = 2^61 (packed_bytes used to wrap: the call wrote
// packed[-1]): an error before anything is written.
TEST(IntegerIssue9, HugeShapeIsBadArgumentBeforeWriting) {
  std::vector<float> x(64, 1.0f);
  std::vector<std::uint8_t> packed(64, 0xEE);
  std::vector<float> scales(64, -1.0f);
  int_params p = params(4, int_scheme::symmetric, int_range::full, granularity::per_group, 32);
  const std::size_t rows = std::size_t{1} << 31, cols = std::size_t{1} << 30;
  EXPECT_EQ(lowbit::quantize_int_packed(x.data(), rows, cols, p, packed.data() + 1, scales.data(), nullptr).code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::quantize_int(x.data(), rows, cols, p, packed.data(), scales.data(), nullptr).code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::dequantize_int_packed(packed.data(), scales.data(), nullptr, rows, cols, p, x.data()).code(),
            errc::bad_argument);
  for (std::uint8_t v : packed) ASSERT_EQ(v, 0xEE);
  for (float v : scales) ASSERT_EQ(v, -1.0f);
  EXPECT_EQ(lowbit::int_storage_for(p, rows, cols).status.code(), errc::bad_argument);
  // 2^40 elements fit: the byte accounting is exact.
  const auto st = lowbit::int_storage_for(p, std::size_t{1} << 20, std::size_t{1} << 20);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st.value.payload_bytes, std::size_t{1} << 39);
}

// An output overlapping an input gave different bytes on the two paths (scales over x), and
// in-place dequantization gave garbage: overlapping_buffers, nothing written.
TEST(IntegerIssue9, OverlappingBuffersAreRejectedUntouched) {
  std::vector<float> buf = random_matrix(256, 9u, 2.0f);
  const std::vector<float> before = buf;
  const int_params p = params(4, int_scheme::affine, int_range::restricted, granularity::per_group, 32);
  std::vector<std::uint8_t> codes(128, 0x11);
  std::vector<float> scales(4, -1.0f), zeros(4, -1.0f);
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    // scales over x.
    EXPECT_EQ(lowbit::quantize_int(buf.data(), 1, 128, p, codes.data(), buf.data() + 100, zeros.data()).code(),
              errc::overlapping_buffers);
    // zeros over scales.
    EXPECT_EQ(lowbit::quantize_int(buf.data(), 1, 128, p, codes.data(), scales.data(), scales.data() + 2).code(),
              errc::overlapping_buffers);
    // packed codes over x.
    EXPECT_EQ(lowbit::quantize_int_packed(buf.data(), 1, 128, p, reinterpret_cast<std::uint8_t*>(buf.data() + 64),
                                          scales.data(), zeros.data())
                  .code(),
              errc::overlapping_buffers);
    // In-place dequantization: values over their own codes.
    auto* bytes = reinterpret_cast<std::uint8_t*>(buf.data());
    EXPECT_EQ(lowbit::dequantize_int(bytes, scales.data(), zeros.data(), 1, 128, p, buf.data()).code(),
              errc::overlapping_buffers);
    EXPECT_EQ(lowbit::dequantize_int_packed(bytes, scales.data(), zeros.data(), 1, 128, p, buf.data()).code(),
              errc::overlapping_buffers);
    EXPECT_EQ(lowbit::quantize_int_fixed(buf.data(), scales.data(), zeros.data(), 1, 128, p, bytes + 4).code(),
              errc::overlapping_buffers);
  }
  EXPECT_EQ(buf, before);
  EXPECT_EQ(codes, std::vector<std::uint8_t>(128, 0x11));
  EXPECT_EQ(scales, std::vector<float>(4, -1.0f));
}

// A float* one byte off tripped UBSan on the scalar path: misaligned, nothing written.
TEST(IntegerIssue9, MisalignedPointersAreRejectedUntouched) {
  const std::vector<float> x = random_matrix(64, 3u, 1.0f);
  lowbit_test::misaligned<float> mx(64), ms(2);
  lowbit_test::misaligned<lowbit::bfloat16> mb(64);
  std::vector<std::uint8_t> codes(64, 0x22);
  std::vector<float> scales(2, -1.0f), y(64, -1.0f);
  const int_params p = params(4, int_scheme::symmetric, int_range::full, granularity::per_group, 32);
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    EXPECT_EQ(lowbit::quantize_int(mx.data(), 1, 64, p, codes.data(), scales.data(), nullptr).code(), errc::misaligned);
    EXPECT_EQ(lowbit::quantize_int(x.data(), 1, 64, p, codes.data(), ms.data(), nullptr).code(), errc::misaligned);
    EXPECT_EQ(lowbit::quantize_int_packed(x.data(), 1, 64, p, codes.data(), ms.data(), nullptr).code(),
              errc::misaligned);
    EXPECT_EQ(lowbit::dequantize_int(codes.data(), scales.data(), nullptr, 1, 64, p, mx.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lowbit::dequantize_int_packed(codes.data(), scales.data(), nullptr, 1, 64, p, mb.data()).code(),
              errc::misaligned);
  }
  EXPECT_EQ(codes, std::vector<std::uint8_t>(64, 0x22));
  EXPECT_EQ(scales, std::vector<float>(2, -1.0f));
}

// search_grid = 2e9 ran for minutes on one group: bounded at max_search_grid, bad_argument above.
TEST(IntegerIssue9, SearchGridIsBounded) {
  const std::vector<float> x = random_matrix(64, 4u, 1.0f);
  std::vector<std::uint8_t> codes(64);
  float s = 0.0f;
  int_params p = params(4, int_scheme::symmetric);
  p.search = lowbit::scale_search::mse_grid;
  p.search_grid = 2000000000;
  EXPECT_EQ(lowbit::quantize_int(x.data(), 1, 64, p, codes.data(), &s, nullptr).code(), errc::bad_argument);
  p.search_grid = lowbit::max_search_grid + 1;
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p.search_grid = lowbit::max_search_grid;
  EXPECT_TRUE(lowbit::quantize_int(x.data(), 1, 64, p, codes.data(), &s, nullptr).ok());
}

// bits = 4, group_size = 128 with the default (per-channel) granularity silently quantized per
// channel: a group size needs per_group, and per_group needs a group size.
TEST(IntegerIssue9, GroupSizeWithoutPerGroupGranularityIsBadGroupSize) {
  const std::vector<float> x = random_matrix(256, 6u, 1.0f);
  std::vector<std::uint8_t> codes(256);
  std::vector<float> s(2);
  int_params p;
  p.bits = 4;
  p.group_size = 128;
  EXPECT_EQ(lowbit::quantize_int(x.data(), 1, 256, p, codes.data(), s.data(), nullptr).code(), errc::bad_group_size);
  for (granularity g : {granularity::per_tensor, granularity::per_channel, granularity::per_token}) {
    p.granularity = g;
    EXPECT_EQ(lowbit::int_groups(p, 1, 256).status.code(), errc::bad_group_size);
  }
  p.granularity = granularity::per_group;
  EXPECT_TRUE(lowbit::quantize_int(x.data(), 1, 256, p, codes.data(), s.data(), nullptr).ok());
  p.group_size = 0;
  EXPECT_EQ(lowbit::int_groups(p, 1, 256).status.code(), errc::bad_group_size);
}

// n = 0 is ok for every call and writes nothing; the pointers may be null.
TEST(IntegerIssue9, EmptyShapesAreOk) {
  const int_params p = lowbit::int_presets::awq(4, 128);
  EXPECT_TRUE(lowbit::quantize_int(nullptr, 0, 128, p, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(lowbit::quantize_int_packed(nullptr, 4, 0, p, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(lowbit::quantize_int_fixed(nullptr, nullptr, nullptr, 0, 0, p, nullptr).ok());
  EXPECT_TRUE(lowbit::dequantize_int(nullptr, nullptr, nullptr, 0, 128, p, nullptr).ok());
  EXPECT_TRUE(lowbit::dequantize_int_packed(nullptr, nullptr, nullptr, 0, 128, p, static_cast<float*>(nullptr)).ok());
  // Options and shape are still checked first.
  int_params bad = p;
  bad.bits = 9;
  EXPECT_EQ(lowbit::quantize_int(nullptr, 0, 128, bad, nullptr, nullptr, nullptr).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::quantize_int(nullptr, 0, 100, p, nullptr, nullptr, nullptr).code(), errc::bad_group_size);
}

// The span forms take their counts from the spans: exact sizes or size_mismatch.
TEST(IntegerIssue9, SpanFormsCheckEverySize) {
  const std::vector<float> x = random_matrix(256, 8u, 1.0f);
  const int_params p = lowbit::int_presets::awq(4, 64);
  std::vector<std::uint8_t> codes(256), packed(128);
  std::vector<float> scales(4), zeros(4), y(256), y2(256);
  ASSERT_TRUE(lowbit::quantize_int(x, 2, 128, p, codes, scales, zeros).ok());
  ASSERT_TRUE(lowbit::dequantize_int(codes, scales, zeros, 2, 128, p, y).ok());
  ASSERT_TRUE(lowbit::quantize_int_packed(x, 2, 128, p, packed, scales, zeros).ok());
  ASSERT_TRUE(lowbit::dequantize_int_packed(packed, scales, zeros, 2, 128, p, lowbit::span<float>(y2)).ok());
  EXPECT_EQ(y, y2);
  std::vector<std::uint8_t> again(256);
  ASSERT_TRUE(lowbit::quantize_int_fixed(x, scales, zeros, 2, 128, p, again).ok());
  EXPECT_EQ(again, codes);
  std::vector<float> short_scales(3);
  EXPECT_EQ(lowbit::quantize_int(x, 2, 128, p, codes, short_scales, zeros).code(), errc::size_mismatch);
  EXPECT_EQ(lowbit::quantize_int_packed(x, 2, 128, p, codes, scales, zeros).code(), errc::size_mismatch);
  EXPECT_EQ(lowbit::dequantize_int(codes, scales, lowbit::span<const float>(), 2, 128, p, y).code(),
            errc::size_mismatch);
  EXPECT_EQ(lowbit::quantize_int(x, 2, 100, p, codes, scales, zeros).code(), errc::bad_group_size);  // shape first
}

// quantize_dequantize_int: the values the codes decode to, and nothing written on an error.
TEST(QuantizeDequantize, PerTensorInt8ByHand) {
  // amax 12.7: scale 0.1; 0.26 -> 2.6 -> code 3 -> 0.3; -1.25 -> -12.5 -> -12 (ties to even) -> -1.2.
  const std::vector<float> x = {0.26f, -1.25f, 12.7f, 0.0f};
  std::vector<float> y(x.size(), -99.0f);
  const int_params p = lowbit::int_presets::int8_per_tensor();
  ASSERT_TRUE(lowbit::quantize_dequantize_int(lowbit::span<const float>(x), 1, 4, p, lowbit::span<float>(y)).ok());
  EXPECT_FLOAT_EQ(y[0], 3 * (12.7f / 127));
  EXPECT_FLOAT_EQ(y[1], -12 * (12.7f / 127));
  EXPECT_FLOAT_EQ(y[2], 127 * (12.7f / 127));
  EXPECT_EQ(y[3], 0.0f);
}

TEST(QuantizeDequantize, MatchesTheTwoCallsOnEveryScheme) {
  std::vector<float> x(6 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
  for (const int_params& p : {lowbit::int_presets::gptq(4, 32), lowbit::int_presets::awq(4, 32),
                              lowbit::int_presets::kivi(2, 16), lowbit::int_presets::int8_per_token(),
                              lowbit::int_presets::int8_per_tensor()}) {
    const lowbit::result<lowbit::int_grouping> g = lowbit::int_groups(p, 6, 64);
    ASSERT_TRUE(g.ok());
    std::vector<std::uint8_t> codes(x.size());
    std::vector<float> scales(g.value.group_count), zeros(g.value.group_count), two(x.size()), one(x.size());
    ASSERT_TRUE(lowbit::quantize_int(x.data(), 6, 64, p, codes.data(), scales.data(), zeros.data()).ok());
    ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), zeros.data(), 6, 64, p, two.data()).ok());
    ASSERT_TRUE(lowbit::quantize_dequantize_int(x.data(), 6, 64, p, one.data()).ok());
    EXPECT_EQ(one, two);
  }
}

TEST(QuantizeDequantize, ErrorsWriteNothing) {
  std::vector<float> x = {1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 4.0f};
  std::vector<float> y(4, -99.0f);
  const int_params p = lowbit::int_presets::int8_per_tensor();
  EXPECT_EQ(lowbit::quantize_dequantize_int(x.data(), 1, 4, p, y.data()).code(), errc::non_finite_input);
  EXPECT_EQ(y, std::vector<float>(4, -99.0f));
  x[2] = 3.0f;
  EXPECT_EQ(lowbit::quantize_dequantize_int(x.data(), 1, 4, p, x.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::quantize_dequantize_int(x.data(), 1, 4, p, opaque_null<float>()).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::quantize_dequantize_int(x.data(), 1, 4, lowbit::int_presets::gptq(4, 3), y.data()).code(),
            errc::bad_group_size);
  EXPECT_EQ(lowbit::quantize_dequantize_int(lowbit::span<const float>(x), 1, 3, p, lowbit::span<float>(y)).code(),
            errc::size_mismatch);
  EXPECT_EQ(y, std::vector<float>(4, -99.0f));
  EXPECT_TRUE(lowbit::quantize_dequantize_int(opaque_null<const float>(), 0, 4, p, opaque_null<float>()).ok());
}

}  // namespace
