// Scaled FP8 (include/lowbit/schemes/fp8.hpp). Every bulk result is compared byte for byte with
// a straightforward loop written here from the scheme's definition (amax per block, s = amax /
// max, x / s encoded, decode(q) * s), on both paths and under every MXCSR state; the lesson's
// per-tensor example is checked against hand-derived codes; then the scale rules, the errors of
// docs/api.md, byte accounting and the checkpoint tensors.
#include <lowbit/schemes/fp8.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

namespace {

namespace lb = lowbit;
using lb::errc;
using lb::fp8_options;

const float nan_f = std::numeric_limits<float>::quiet_NaN();
const float inf_f = std::numeric_limits<float>::infinity();

template <class T>
float max_of() {
  return static_cast<float>(std::numeric_limits<T>::max());
}

// The test's own picture of the blocks: block (i, j) covers rows [i*br, ...) and columns
// [j*bc, ...), clipped to the matrix.
struct grid {
  std::size_t br, bc, sr, sc;
};
grid grid_of(const fp8_options& o, std::size_t rows, std::size_t cols) {
  std::size_t br = rows, bc = cols;
  if (o.granularity == lb::fp8_granularity::per_channel || o.granularity == lb::fp8_granularity::per_token) br = 1;
  if (o.granularity == lb::fp8_granularity::per_block) br = std::min(o.block_rows, rows), bc = std::min(o.block_cols, cols);
  return {br, bc, (rows + br - 1) / br, (cols + bc - 1) / bc};
}

// The scale of a block, from the scheme's definition: amax * h / max in exact arithmetic, rounded
// once (to float: for h = 1 this is the float32 quotient amax / max), a zero block 1, raised to
// the least normal-as-float value of the storage format.
template <class T>
float reference_scale(float amax, const fp8_options& o) {
  const double a = std::max<double>(amax, o.min_amax);
  if (a == 0.0) return 1.0f;
  double q = a * o.headroom / max_of<T>();
  if (o.power_of_two_scales) q = std::exp2(std::ceil(std::log2(q)));
  float s = static_cast<float>(q);
  if (o.scale_format == lb::scale_storage::fp16) s = static_cast<float>(lb::encode<lb::float16>(q, lb::overflow::non_saturate));
  if (o.scale_format == lb::scale_storage::bf16) s = static_cast<float>(lb::encode<lb::bfloat16>(q, lb::overflow::non_saturate));
  const float least = o.scale_format == lb::scale_storage::fp16 ? std::ldexp(1.0f, -24) : std::ldexp(1.0f, -126);
  return std::max(s, least);
}

template <class T>
struct reference_result {
  std::vector<T> q;
  std::vector<float> scales;
};

// The straightforward loop: per block, amax, scale, then x / s (or x * (1/s)) encoded.
template <class T, class From>
reference_result<T> reference_quantize(const std::vector<From>& x, std::size_t rows, std::size_t cols,
                                       const fp8_options& o, const std::uint32_t* rb = nullptr) {
  const grid g = grid_of(o, rows, cols);
  reference_result<T> r{std::vector<T>(rows * cols), std::vector<float>(g.sr * g.sc)};
  lb::policy p;
  p.ov = o.element_overflow;
  p.rm = o.element_rounding;
  for (std::size_t bi = 0; bi < g.sr; ++bi)
    for (std::size_t bj = 0; bj < g.sc; ++bj) {
      float amax = 0.0f;
      for (std::size_t i = bi * g.br; i < std::min(rows, (bi + 1) * g.br); ++i)
        for (std::size_t j = bj * g.bc; j < std::min(cols, (bj + 1) * g.bc); ++j)
          amax = std::max(amax, std::fabs(static_cast<float>(x[i * cols + j])));
      const float s = reference_scale<T>(amax, o);
      r.scales[bi * g.sc + bj] = s;
      for (std::size_t i = bi * g.br; i < std::min(rows, (bi + 1) * g.br); ++i)
        for (std::size_t j = bj * g.bc; j < std::min(cols, (bj + 1) * g.bc); ++j) {
          const float v = static_cast<float>(x[i * cols + j]);
          const float y = o.application == lb::scale_application::divide ? v / s : v * (1.0f / s);
          r.q[i * cols + j] = lb::encode<T>(y, p, rb != nullptr ? rb[i * cols + j] : 0u);
        }
    }
  return r;
}

template <class T>
std::vector<float> reference_dequantize(const std::vector<T>& q, const std::vector<float>& scales, std::size_t rows,
                                        std::size_t cols, const fp8_options& o) {
  const grid g = grid_of(o, rows, cols);
  std::vector<float> y(rows * cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      y[i * cols + j] = lb::decode(q[i * cols + j]) * scales[(i / g.br) * g.sc + j / g.bc];
  return y;
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = static_cast<std::uint8_t>(v[i].bits());
  return b;
}
std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = lowbit_test::float_bits(v[i]);
  return b;
}

// A matrix that exercises every part of the encoders: Gaussian rows of very different
// magnitudes (raw weights, unit activations, outliers, tiny values that give subnormal codes),
// exact zeros, and values that land near the overflow boundary.
std::vector<float> mixed_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float magnitudes[] = {0.02f, 1.0f, 112.0f, 1e-3f, 3e4f, 1e-30f};
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      float v = nd(gen) * magnitudes[(i + j / 37) % 6];
      if ((i * 7 + j) % 29 == 0) v = 0.0f;
      if ((i * 13 + j) % 101 == 0) v = -v * 40.0f;  // outliers inside their block
      x[i * cols + j] = v;
    }
  return x;
}

std::vector<fp8_options> granularities() {
  std::vector<fp8_options> v = {lb::fp8_presets::per_tensor(), lb::fp8_presets::per_channel(),
                                lb::fp8_presets::per_token(), lb::fp8_presets::deepseek_v3_activations(),
                                lb::fp8_presets::deepseek_v3_weights(), lb::fp8_presets::blockwise(3, 40),
                                lb::fp8_presets::blockwise(5, 1)};
  return v;
}

std::vector<lb::isa> paths() {
  std::vector<lb::isa> v = {lb::isa::scalar};
  for (lb::isa i : lowbit_test::simd_paths()) v.push_back(i);  // avx2, then avx512
  return v;
}

template <class T>
void check_against_reference(std::size_t rows, std::size_t cols, const fp8_options& o, unsigned seed) {
  const std::vector<float> x = mixed_matrix(rows, cols, seed);
  const reference_result<T> want = reference_quantize<T>(x, rows, cols, o);
  const std::vector<float> want_y = reference_dequantize(want.q, want.scales, rows, cols, o);
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    for (const auto& state : lowbit_test::mxcsr_states) {
      SCOPED_TRACE(testing::Message() << lb::isa_name(path) << ", " << state.name << ", " << rows << "x" << cols
                                      << ", block " << o.block_rows << "x" << o.block_cols << ", granularity "
                                      << static_cast<int>(o.granularity));
      std::vector<T> q(rows * cols);
      std::vector<float> s(want.scales.size(), -1.0f);
      std::vector<float> y(rows * cols);
      std::vector<T> q2(rows * cols);
      {
        const lowbit_test::mxcsr_scope env(state.bits);
        ASSERT_TRUE(lb::fp8_quantize(x.data(), rows, cols, o, q.data(), s.data()).ok());
        ASSERT_TRUE(lb::fp8_dequantize(q.data(), s.data(), rows, cols, o, y.data()).ok());
        ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s.data(), rows, cols, o, q2.data()).ok());
      }
      EXPECT_EQ(bytes_of(q), bytes_of(want.q));
      EXPECT_EQ(bits_of(s), bits_of(want.scales));
      EXPECT_EQ(bits_of(y), bits_of(want_y));
      EXPECT_EQ(bytes_of(q2), bytes_of(want.q));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The lesson: [0.02, -0.3, 1.7, 12] per tensor with s = amax / 448 (003, the INT8-versus-FP8
// paragraph): 0.02 keeps 0.45 % error in E4M3, 1.7 gets 0.840 %.

TEST(Fp8Lesson, PerTensorExample) {
  const float x[] = {0.02f, -0.3f, 1.7f, 12.0f};
  lb::float8_e4m3fn q[4];
  float s = 0.0f;
  ASSERT_TRUE(lb::fp8_quantize(x, 1, 4, lb::fp8_presets::per_tensor(), q, &s).ok());
  EXPECT_EQ(s, 12.0f / 448.0f);
  // x / s = 0.7467, -11.2, 63.47, 448. E4M3 has 8 steps per binade: 0.7467 -> 0.75 = 1.100b x 2^-1
  // (exponent field 6, mantissa 100b: 0x34); -11.2 -> -11 = 1.011b x 2^3 (0x80 | 10 << 3 | 3 =
  // 0xD3); 63.47 lies in [32, 64) where the step is 4: -> 64 = 2^6 (field 13: 0x68); 448 -> 0x7E.
  EXPECT_EQ(q[0].bits(), 0x34);
  EXPECT_EQ(q[1].bits(), 0xD3);
  EXPECT_EQ(q[2].bits(), 0x68);
  EXPECT_EQ(q[3].bits(), 0x7E);
  float y[4];
  ASSERT_TRUE(lb::fp8_dequantize(q, &s, 1, 4, lb::fp8_presets::per_tensor(), y).ok());
  const double e0 = std::fabs(y[0] - 0.02) / 0.02;
  const double e2 = std::fabs(y[2] - 1.7) / 1.7;
  EXPECT_LT(e0, 0.0045);  // 0.446 %
  EXPECT_GT(e0, 0.0044);
  EXPECT_NEAR(e2 * 100.0, 0.840, 0.0005);  // 64/63.4667 - 1 = 0.8403 %
  EXPECT_EQ(y[3], 12.0f);                   // 448 * (12/448) rounds back to 12
}

// ---------------------------------------------------------------------------------------------
// Byte for byte against the straightforward loop.

TEST(Fp8Reference, EveryGranularityE4M3) {
  for (const fp8_options& o : granularities()) {
    check_against_reference<lb::float8_e4m3fn>(37, 300, o, 1);
    check_against_reference<lb::float8_e4m3fn>(130, 257, o, 2);
  }
}

TEST(Fp8Reference, EveryGranularityE5M2) {
  for (const fp8_options& o : granularities()) check_against_reference<lb::float8_e5m2>(37, 300, o, 3);
}

// Rows of whole 64-element steps with power-of-two column blocks: the AVX-512 kernel's one run
// per row with a scale per step (indexed), and the AVX2 kernel's per 32.
TEST(Fp8Reference, WholeStepRows) {
  std::vector<fp8_options> v = granularities();
  v.push_back(lb::fp8_presets::blockwise(4, 64));
  v.push_back(lb::fp8_presets::blockwise(2, 256));
  for (const fp8_options& o : v) {
    check_against_reference<lb::float8_e4m3fn>(19, 512, o, 11);
    check_against_reference<lb::float8_e5m2>(7, 384, o, 12);
    check_against_reference<lb::float8_e4m3fnuz>(5, 256, o, 13);
    check_against_reference<lb::float8_e5m2fnuz>(5, 256, o, 14);
  }
}

TEST(Fp8Reference, FnuzFormats) {
  for (const fp8_options& o : {lb::fp8_presets::per_token(), lb::fp8_presets::blockwise(4, 64)}) {
    check_against_reference<lb::float8_e4m3fnuz>(33, 190, o, 4);
    check_against_reference<lb::float8_e5m2fnuz>(33, 190, o, 5);
  }
}

TEST(Fp8Reference, OptionsThatChangeTheScaleOrTheElements) {
  std::vector<fp8_options> variants;
  for (fp8_options o : {lb::fp8_presets::per_token(), lb::fp8_presets::deepseek_v3_weights()}) {
    fp8_options v = o;
    v.headroom = 2.0f;  // TransformerEngine margin 1
    variants.push_back(v);
    v = o;
    v.headroom = 0.5f;  // clips: the largest values saturate (or overflow)
    variants.push_back(v);
    v.element_overflow = lb::overflow::non_saturate;
    variants.push_back(v);
    v = o;
    v.power_of_two_scales = true;
    variants.push_back(v);
    v = o;
    v.scale_format = lb::scale_storage::bf16;
    variants.push_back(v);
    v = o;
    v.scale_format = lb::scale_storage::fp16;
    v.min_amax = 1e-3f;  // keeps the 3e4-magnitude rows' scales small enough, raises the tiny ones
    variants.push_back(v);
    v = o;
    v.application = lb::scale_application::multiply_reciprocal;
    variants.push_back(v);
    for (lb::rounding rm : {lb::rounding::toward_zero, lb::rounding::toward_pos_inf, lb::rounding::nearest_away,
                            lb::rounding::nearest_toward_zero}) {
      v = o;
      v.element_rounding = rm;
      variants.push_back(v);
    }
  }
  variants.push_back(lb::fp8_presets::fbgemm_rowwise());
  for (const fp8_options& o : variants) {
    SCOPED_TRACE(testing::Message() << "headroom " << o.headroom << ", pow2 " << o.power_of_two_scales << ", format "
                                    << static_cast<int>(o.scale_format) << ", application "
                                    << static_cast<int>(o.application) << ", rounding "
                                    << static_cast<int>(o.element_rounding) << ", overflow "
                                    << static_cast<int>(o.element_overflow));
    check_against_reference<lb::float8_e4m3fn>(29, 260, o, 6);
    check_against_reference<lb::float8_e5m2>(29, 260, o, 7);
  }
}

// The rounding modes but stochastic rounding.
const lb::rounding deterministic_modes[] = {lb::rounding::nearest_even, lb::rounding::toward_zero,
                                            lb::rounding::toward_pos_inf, lb::rounding::nearest_away,
                                            lb::rounding::nearest_toward_zero};

// The reference codes of x: each x[i] divided by its block's scale scale_of(i) (or times its
// reciprocal), encoded under p.
template <class T, class ScaleOf>
std::vector<std::uint8_t> expected_codes(const std::vector<float>& x, ScaleOf scale_of, lb::scale_application a,
                                         const lb::policy& p) {
  std::vector<std::uint8_t> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float sc = scale_of(i);
    want[i] = lb::encode<T>(a == lb::scale_application::divide ? x[i] / sc : x[i] * (1.0f / sc), p).bits();
  }
  return want;
}

// T's positive finite values, ascending, and the index of the first normal one.
template <class T>
std::vector<float> positive_values() {
  std::vector<float> values;
  for (unsigned c = 1; c < 128; ++c) {
    const float v = lb::decode(T::from_bits(static_cast<std::uint8_t>(c)));
    if (std::isfinite(v) && v > 0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  return values;
}
template <class T>
std::size_t first_normal_index(const std::vector<float>& values) {
  const float least = static_cast<float>(std::numeric_limits<T>::min());
  return static_cast<std::size_t>(std::lower_bound(values.begin(), values.end(), least) - values.begin());
}

// Values whose quotient x / s lies on, or a few float steps from, a point where the code changes
// (a value of T, a midpoint between two, the overflow threshold), for many scales: where x * (1/s)
// and x / s can encode differently. Both applications, every rounding mode, in blocks of 1 x 64
// (one run per row) and as one block per row of 100 (zero-padded tails).
// The options of the tests below, blocks of 1 x 64, and the policy of their reference.
struct near_decision_case {
  fp8_options o;
  lb::policy p;
};
near_decision_case near_decision_options(lb::rounding rm, lb::overflow ov) {
  near_decision_case c{lb::fp8_presets::blockwise(1, 64), {}};
  c.o.element_rounding = rm;
  c.o.element_overflow = ov;
  c.p.ov = ov;
  c.p.rm = rm;
  return c;
}

template <class T>
void check_near_decisions(unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  const std::size_t rows = 24, cols = 640;
  std::vector<float> x(rows * cols);
  std::vector<float> s(rows * (cols / 64));
  for (float& v : s) v = unit(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 40) - 20);
  std::vector<std::uint8_t> codes;
  for (unsigned c = 0; c < 256; ++c) {
    const float v = lb::decode(T::from_bits(static_cast<std::uint8_t>(c)));
    if (std::isfinite(v)) codes.push_back(static_cast<std::uint8_t>(c));
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    // A value of T or the midpoint above it, times the block's scale, moved a few float steps.
    const float a = lb::decode(T::from_bits(codes[gen() % codes.size()]));
    const float b = std::nextafter(a, a < 0 ? -inf_f : inf_f);
    const float target = gen() % 2 ? a : a + (lb::decode(lb::encode<T>(b, lb::overflow::saturate, lb::rounding::toward_pos_inf)) - a) / 2;
    float v = target * s[(i / cols) * (cols / 64) + (i % cols) / 64];
    for (int k = static_cast<int>(gen() % 9) - 4; k != 0; k += k < 0 ? 1 : -1)
      v = std::nextafter(v, k < 0 ? -inf_f : inf_f);
    x[i] = v;
  }
  for (lb::scale_application a : {lb::scale_application::divide, lb::scale_application::multiply_reciprocal})
    for (lb::rounding rm : deterministic_modes)
      for (lb::overflow ov : {lb::overflow::saturate, lb::overflow::non_saturate}) {
        auto [o, p] = near_decision_options(rm, ov);
        o.application = a;
        const std::vector<std::uint8_t> want =
            expected_codes<T>(x, [&](std::size_t i) { return s[(i / cols) * (cols / 64) + (i % cols) / 64]; }, a, p);
        fp8_options per_row = o;
        per_row.block_cols = 100;  // 100-element blocks: runs that end in a padded tail
        std::vector<float> s_row(rows * 7);
        for (std::size_t i = 0; i < s_row.size(); ++i) s_row[i] = s[(i / 7) * 10];
        for (lb::isa path : paths()) {
          const lb::scoped_isa use(path);
          std::vector<T> q(x.size());
          ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s.data(), rows, cols, o, q.data()).ok());
          EXPECT_EQ(bytes_of(q), want) << lb::isa_name(path) << " application " << static_cast<int>(a) << " rounding "
                                       << static_cast<int>(rm);
          // Rows quantized again with one scale per 100 elements: the first block's scale.
          ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s_row.data(), rows, cols, per_row, q.data()).ok());
          for (std::size_t i = 0; i < x.size(); ++i) {
            const float sc = s_row[(i / cols) * 7 + (i % cols) / 100];
            ASSERT_EQ(q[i].bits(), lb::encode<T>(a == lb::scale_application::divide ? x[i] / sc : x[i] * (1.0f / sc), p).bits())
                << i << " " << lb::isa_name(path);
          }
        }
      }
}

// The same points, one lane per block of 64 (a SIMD step), the other 63 lanes at quarter points
// between two codes of T (far from every decision): whether a step is divided then rests on that
// lane alone, where above nearly every step holds a lane near a decision. The lone lane is a code
// of T or the midpoint above it (subnormal codes included), or T's largest value (a 1 x 128
// block's largest element lands there), moved up to 4 float steps after scaling.
template <class T>
void check_lone_decisions(unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  const std::size_t rows = 32, cols = 64 * 32;
  std::vector<float> s(rows * (cols / 64));
  for (float& v : s) v = unit(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 24) - 12);
  const std::vector<float> values = positive_values<T>();
  const float largest = values.back();
  // The quarter points lie in T's normal range: below it every step would be divided anyway.
  const std::size_t first_normal = first_normal_index<T>(values);
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float sc = s[i / 64];
    const float sign = gen() % 2 ? 1.0f : -1.0f;
    if (i % 64 != (i / 64 * 37) % 64) {  // a quarter point
      const std::size_t k = first_normal + gen() % (values.size() - 1 - first_normal);
      x[i] = sign * (0.75f * values[k] + 0.25f * values[k + 1]) * sc;
      continue;
    }
    const std::size_t k = gen() % (values.size() - 1);
    const unsigned kind = gen() % 3;
    float target = kind == 0 ? values[k] : kind == 1 ? (values[k] + values[k + 1]) / 2 : largest;
    float v = sign * target * sc;
    for (int m = static_cast<int>(gen() % 9) - 4; m != 0; m += m < 0 ? 1 : -1) v = std::nextafter(v, m < 0 ? -inf_f : inf_f);
    x[i] = v;
  }
  for (lb::rounding rm : deterministic_modes)
    for (lb::overflow ov : {lb::overflow::saturate, lb::overflow::non_saturate}) {
      const auto [o, p] = near_decision_options(rm, ov);
      const std::vector<std::uint8_t> want =
          expected_codes<T>(x, [&](std::size_t i) { return s[i / 64]; }, lb::scale_application::divide, p);
      for (lb::isa path : paths()) {
        const lb::scoped_isa use(path);
        std::vector<T> q(x.size());
        ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s.data(), rows, cols, o, q.data()).ok());
        EXPECT_EQ(bytes_of(q), want) << lb::isa_name(path) << " rounding " << static_cast<int>(rm) << " overflow "
                                     << static_cast<int>(ov);
      }
    }
}

// Lanes x whose product x * (1/s) lies 4 or more float steps from the quotient x / s and encodes
// differently under some mode: codes of T and midpoints between them, times s, moved up to 3
// float steps.
template <class T>
std::vector<float> far_products(float s, const std::vector<float>& values) {
  std::vector<float> found;
  const float r = 1.0f / s;
  for (std::size_t k = 0; k + 1 < values.size(); ++k)
    for (const float t : {values[k], (values[k] + values[k + 1]) / 2}) {
      if (static_cast<double>(t) * s > 0x1p127) continue;
      float x = t * s;
      for (int m = 0; m < 3; ++m) x = std::nextafter(x, 0.0f);
      for (int m = 0; m < 7; ++m, x = std::nextafter(x, inf_f)) {
        const float q = x / s, p = x * r;
        const std::uint32_t a = lowbit_test::float_bits(q), b = lowbit_test::float_bits(p);
        if ((a > b ? a - b : b - a) < 4) continue;
        const auto differs = [&](lb::rounding rm) {
          const lb::overflow sat = lb::overflow::saturate;
          return lb::encode<T>(q, sat, rm).bits() != lb::encode<T>(p, sat, rm).bits();
        };
        if (std::any_of(std::begin(deterministic_modes), std::end(deterministic_modes), differs)) found.push_back(x);
      }
    }
  return found;
}

// Scales above 2^126, whose reciprocals are subnormal: near 2^128 such a reciprocal keeps 22
// bits, and x * (1/s) can land 4 float steps from x / s and encode differently, beyond the SIMD
// kernels' near-decision test (up to 3 steps above a decision), so they divide every step. In
// the layout of the lone-lane test above: per block of 64 one lane from far_products, the other
// 63 at quarter points between two codes of T (far from every decision), so that no other lane
// makes the step divide; every fourth block has an ordinary scale. Every mode but stochastic
// rounding, both overflow policies, both applications.
template <class T>
void check_huge_scales(unsigned seed) {
  std::mt19937 gen(seed);
  const std::vector<float> values = positive_values<T>();
  const std::size_t first_normal = first_normal_index<T>(values);
  std::vector<float> huge;  // scales just below 2^128 that have such lanes, and the lanes
  std::vector<std::vector<float>> lanes;
  for (std::uint32_t j = 0; huge.size() < 8 && j < 512; ++j) {
    const float sc = lowbit_test::float_from_bits(0x7F7FFFFFu - j);
    std::vector<float> f = far_products<T>(sc, values);
    if (f.empty()) continue;
    huge.push_back(sc);
    lanes.push_back(f);
  }
  ASSERT_EQ(huge.size(), 8u) << "too few scales whose reciprocal misses by enough";
  const std::size_t rows = 16, cols = 64 * 8;
  std::vector<float> s(rows * (cols / 64));
  std::vector<float> x(rows * cols);
  for (std::size_t j = 0; j < s.size(); ++j) {
    const bool ordinary = j % 4 == 3;
    s[j] = ordinary ? std::ldexp(1.0f + static_cast<float>(gen() % 256) / 256, 3) : huge[j % 8];
    const double bound = static_cast<double>(std::numeric_limits<float>::max()) / s[j] / 2;
    for (std::size_t l = 0; l < 64; ++l) {
      const float sign = gen() % 2 ? 1.0f : -1.0f;
      float v;
      if (l == j * 37 % 64) {
        v = ordinary ? values[gen() % values.size()] * s[j] : lanes[j % 8][gen() % lanes[j % 8].size()];
      } else {
        std::size_t k;  // (in T's normal range: quarter points below it would make the step divide)
        do k = first_normal + gen() % (values.size() - 1 - first_normal); while (values[k + 1] >= bound);
        v = (0.75f * values[k] + 0.25f * values[k + 1]) * s[j];
      }
      x[j * 64 + l] = sign * v;
    }
  }
  for (lb::scale_application a : {lb::scale_application::divide, lb::scale_application::multiply_reciprocal})
    for (lb::rounding rm : deterministic_modes)
      for (lb::overflow ov : {lb::overflow::saturate, lb::overflow::non_saturate}) {
        auto [o, p] = near_decision_options(rm, ov);
        o.application = a;
        const std::vector<std::uint8_t> want = expected_codes<T>(x, [&](std::size_t i) { return s[i / 64]; }, a, p);
        for (lb::isa path : paths()) {
          const lb::scoped_isa use(path);
          std::vector<T> q(x.size());
          ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s.data(), rows, cols, o, q.data()).ok());
          EXPECT_EQ(bytes_of(q), want) << lb::isa_name(path) << " application " << static_cast<int>(a) << " rounding "
                                       << static_cast<int>(rm) << " overflow " << static_cast<int>(ov);
        }
      }
}

TEST(Fp8Reference, HugeScalesInEveryMode) {
  check_huge_scales<lb::float8_e4m3fn>(41);
  check_huge_scales<lb::float8_e5m2>(42);
  check_huge_scales<lb::float8_e4m3fnuz>(43);
  check_huge_scales<lb::float8_e5m2fnuz>(44);
}

TEST(Fp8Reference, QuotientsNearEveryDecision) {
  check_near_decisions<lb::float8_e4m3fn>(21);
  check_near_decisions<lb::float8_e5m2>(22);
  check_near_decisions<lb::float8_e4m3fnuz>(23);
}

TEST(Fp8Reference, LoneQuotientsNearADecision) {
  check_lone_decisions<lb::float8_e4m3fn>(31);
  check_lone_decisions<lb::float8_e5m2>(32);
  check_lone_decisions<lb::float8_e4m3fnuz>(33);
  check_lone_decisions<lb::float8_e5m2fnuz>(34);
}

// Stochastic rounding reads the caller's bit of each element, on every path, in every shape of
// run: blocks narrower than a SIMD step, runs of whole steps with a tail (per token, 150
// columns), rows of whole steps whose blocks the kernel indexes (1 x 128 over 384 columns), one
// scale for all; both applications of the scale, with and without power-of-two scales. mixed_matrix
// has a zero or a tiny value in every step (the AVX-512 encoder's path 3); the Gaussian rows have
// none, so nearly every step takes its path 2.
// fp8_quantize with the random bits rb on every path against the reference loop: codes and scales.
template <class T>
void expect_stochastic_paths(const std::vector<float>& x, std::size_t rows, std::size_t cols, const fp8_options& o,
                             const std::vector<std::uint32_t>& rb) {
  const reference_result<T> want = reference_quantize<T>(x, rows, cols, o, rb.data());
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    std::vector<T> q(rows * cols);
    std::vector<float> s(want.scales.size());
    ASSERT_TRUE(lb::fp8_quantize(x.data(), rows, cols, o, q.data(), s.data(), rb.data()).ok());
    EXPECT_EQ(bytes_of(q), bytes_of(want.q)) << lb::isa_name(path);
    EXPECT_EQ(bits_of(s), bits_of(want.scales)) << lb::isa_name(path);
  }
}

template <class T>
void check_stochastic(const std::vector<float>& x, std::size_t rows, std::size_t cols, unsigned seed) {
  std::vector<std::uint32_t> rb(rows * cols);
  std::mt19937 gen(seed);
  for (auto& r : rb) r = gen();
  for (fp8_options o : {lb::fp8_presets::blockwise(4, 32), lb::fp8_presets::per_token(),
                        lb::fp8_presets::blockwise(1, 128), lb::fp8_presets::per_tensor()})
    for (bool pow2 : {false, true})
      for (lb::scale_application a : {lb::scale_application::divide, lb::scale_application::multiply_reciprocal}) {
        o.element_rounding = lb::rounding::stochastic;
        o.power_of_two_scales = pow2;
        o.application = a;
        SCOPED_TRACE(testing::Message() << "block " << o.block_rows << " x " << o.block_cols << " granularity "
                                        << static_cast<int>(o.granularity) << " pow2 " << pow2 << " application "
                                        << static_cast<int>(a));
        expect_stochastic_paths<T>(x, rows, cols, o, rb);
      }
}

std::vector<float> gaussian_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(gen);
  return x;
}

// Random bits at the carry boundary of each element's quotient under the options' application
// (the least r that rounds it up, by bisection on the scalar encoder): a quotient one float step
// lower (x * (1/s) where the options say x / s, or the other way round) rounds down instead, so
// the test fails where a kernel divides when it should multiply, or multiplies when it should
// divide. Random bits alone almost never tell the two apart (a float step moves the discarded
// fraction by 2^-12 of its range in E4M3's normal range).
template <class T>
void check_carry_boundaries(lb::scale_application a) {
  const std::size_t rows = 6, cols = 384;
  const std::vector<float> x = gaussian_matrix(rows, cols, 20);
  fp8_options o = lb::fp8_presets::blockwise(1, 128);
  o.element_rounding = lb::rounding::stochastic;
  o.application = a;
  const std::vector<float> scales = reference_quantize<T>(x, rows, cols, o).scales;
  lb::policy p;
  p.rm = lb::rounding::stochastic;
  std::vector<std::uint32_t> rb(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float sc = scales[(i / cols) * (cols / 128) + (i % cols) / 128];
    const float y = a == lb::scale_application::divide ? x[i] / sc : x[i] * (1.0f / sc);
    const auto down = lb::encode<T>(y, p, 0u).bits();
    std::uint64_t lo = 0, hi = std::uint64_t{1} << 32;  // the least r in [lo, hi] that rounds up (2^32: none)
    while (lo < hi) {
      const std::uint64_t mid = (lo + hi) / 2;
      if (lb::encode<T>(y, p, static_cast<std::uint32_t>(mid)).bits() != down)
        hi = mid;
      else
        lo = mid + 1;
    }
    rb[i] = static_cast<std::uint32_t>(lo == (std::uint64_t{1} << 32) ? 0 : lo);
  }
  SCOPED_TRACE(testing::Message() << "application " << static_cast<int>(a));
  expect_stochastic_paths<T>(x, rows, cols, o, rb);
}

TEST(Fp8Reference, StochasticBitsAtTheCarryBoundary) {
  for (lb::scale_application a : {lb::scale_application::divide, lb::scale_application::multiply_reciprocal}) {
    check_carry_boundaries<lb::float8_e4m3fn>(a);
    check_carry_boundaries<lb::float8_e5m2>(a);
  }
}

TEST(Fp8Reference, StochasticRoundingUsesTheCallersBits) {
  check_stochastic<lb::float8_e4m3fn>(mixed_matrix(17, 150, 8), 17, 150, 9);
  check_stochastic<lb::float8_e4m3fn>(mixed_matrix(6, 384, 10), 6, 384, 11);
  check_stochastic<lb::float8_e4m3fn>(gaussian_matrix(6, 384, 12), 6, 384, 13);
  check_stochastic<lb::float8_e5m2>(mixed_matrix(17, 150, 14), 17, 150, 15);
  check_stochastic<lb::float8_e5m2>(gaussian_matrix(6, 384, 16), 6, 384, 17);
}

// Outputs of 16 MiB and more are written with non-temporal stores on the SIMD paths, from the
// first aligned element of each block (here the output starts 4 bytes past an aligned address):
// one block per row, and rows of 21 blocks of 100 (blocks that start anywhere).
TEST(Fp8Reference, LargeDequantizationStreams) {
  const std::size_t rows = 2049, cols = 2049;  // 16.8 MB of float output
  std::vector<lb::float8_e4m3fn> q(rows * cols);
  std::mt19937 gen(14);
  for (auto& c : q) c = lb::float8_e4m3fn::from_bits(static_cast<std::uint8_t>(gen()));
  std::vector<float> buffer(rows * cols + 8);
  float* y = buffer.data() + 1;
  for (const fp8_options& o : {lb::fp8_presets::per_channel(), lb::fp8_presets::blockwise(1, 100)}) {
    const std::size_t bc = o.granularity == lb::fp8_granularity::per_block ? o.block_cols : cols;
    const std::size_t per_row = (cols - 1) / bc + 1;
    std::vector<float> s(rows * per_row);
    for (auto& v : s) v = std::ldexp(1.0f + static_cast<float>(gen() % 1000) / 1000.0f, static_cast<int>(gen() % 20) - 10);
    for (lb::isa path : paths()) {
      const lb::scoped_isa use(path);
      std::fill(buffer.begin(), buffer.end(), 0.0f);
      ASSERT_TRUE(lb::fp8_dequantize(q.data(), s.data(), rows, cols, o, y).ok());
      for (std::size_t i = 0; i < q.size(); ++i) {
        const float want = lb::decode(q[i]) * s[i / cols * per_row + i % cols / bc];
        ASSERT_EQ(lowbit_test::float_bits(y[i]), lowbit_test::float_bits(want)) << i << " " << lb::isa_name(path);
      }
      EXPECT_EQ(buffer[0], 0.0f);
      EXPECT_EQ(buffer[rows * cols + 1], 0.0f);
    }
  }
}

// Quantizations whose source and codes come to 16 MiB and more stream their codes out with
// non-temporal stores, and their runs longer than the encoders' prefetch distance ask for the
// next run's lines (the next row here, past the last row at the end): rows of one run (per
// token; 1 x 128 with a scale per step), of runs per block (1 x 100), into codes that start one
// byte past an aligned address.
TEST(Fp8Reference, LargeQuantizationStreams) {
  const std::size_t rows = 1025, cols = 3328;  // 3.4 M values: 17 MB of source and codes
  const std::vector<float> x = mixed_matrix(rows, cols, 15);
  for (const fp8_options& o : {lb::fp8_presets::per_token(), lb::fp8_presets::deepseek_v3_activations(),
                               lb::fp8_presets::blockwise(1, 100)}) {
    const reference_result<lb::float8_e4m3fn> want = reference_quantize<lb::float8_e4m3fn>(x, rows, cols, o);
    for (lb::isa path : paths()) {
      const lb::scoped_isa use(path);
      std::vector<lb::float8_e4m3fn> buffer(rows * cols + 2);
      lb::float8_e4m3fn* q = buffer.data() + 1;
      std::vector<float> s(want.scales.size());
      ASSERT_TRUE(lb::fp8_quantize(x.data(), rows, cols, o, q, s.data()).ok());
      EXPECT_EQ(bits_of(s), bits_of(want.scales)) << lb::isa_name(path);
      EXPECT_EQ(std::memcmp(q, want.q.data(), rows * cols), 0) << lb::isa_name(path) << " " << o.block_cols;
      std::fill(buffer.begin(), buffer.end(), lb::float8_e4m3fn::from_bits(0x55));
      ASSERT_TRUE(lb::fp8_quantize_fixed(x.data(), s.data(), rows, cols, o, q).ok());
      EXPECT_EQ(std::memcmp(q, want.q.data(), rows * cols), 0) << lb::isa_name(path) << " " << o.block_cols;
      EXPECT_EQ(buffer[0].bits(), 0x55);
      EXPECT_EQ(buffer[rows * cols + 1].bits(), 0x55);
    }
  }
}

TEST(Fp8Reference, SixteenBitSources) {
  const std::size_t rows = 19, cols = 200;
  const std::vector<float> x = mixed_matrix(rows, cols, 10);
  std::vector<lb::bfloat16> xb(x.size());
  std::vector<lb::float16> xh(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = lb::encode<lb::bfloat16>(x[i]);
    xh[i] = lb::encode<lb::float16>(x[i]);
  }
  const fp8_options o = lb::fp8_presets::blockwise(1, 64);
  const auto want_b = reference_quantize<lb::float8_e4m3fn>(xb, rows, cols, o);
  const auto want_h = reference_quantize<lb::float8_e4m3fn>(xh, rows, cols, o);
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    std::vector<lb::float8_e4m3fn> q(x.size());
    std::vector<float> s(want_b.scales.size());
    ASSERT_TRUE(lb::fp8_quantize(xb.data(), rows, cols, o, q.data(), s.data()).ok());
    EXPECT_EQ(bytes_of(q), bytes_of(want_b.q)) << lb::isa_name(path);
    EXPECT_EQ(bits_of(s), bits_of(want_b.scales));
    ASSERT_TRUE(lb::fp8_quantize(xh.data(), rows, cols, o, q.data(), s.data()).ok());
    EXPECT_EQ(bytes_of(q), bytes_of(want_h.q)) << lb::isa_name(path);
  }
}

// Dequantization is decode(q) * s in float, and into 16-bit types that product rounded as
// encode() does: nearest even, saturating, the all-ones NaN. Every code of the format, under
// scales that keep the products in range (the fast path), push them past float16's range, deep
// into its subnormals or float32's, or near float32's overflow (where the float16-twin route
// cannot fold its power of two into the scale).
template <class T>
void check_every_code_dequantized() {
  // 1 + 2^-8 and 1 + 2^-11 put products of short codes exactly halfway between two bfloat16 or
  // float16 values: the ties of the rounding.
  const std::vector<float> s = {1.0f,
                                3.0f,
                                std::ldexp(1.0f, -20),
                                0.013f,
                                1.0f + std::ldexp(1.0f, -8),
                                1.0f + std::ldexp(1.0f, -11),
                                std::ldexp(1.25f, -126),
                                std::ldexp(1.0f, 120),
                                std::ldexp(1.5f, 127),
                                std::numeric_limits<float>::max()};
  const std::size_t rows = s.size(), cols = 256;
  std::vector<T> q(rows * cols);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = T::from_bits(static_cast<std::uint8_t>(i * 7 + i / cols));
  const fp8_options o = lb::fp8_presets::per_channel();
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    std::vector<float> y(q.size());
    std::vector<lb::bfloat16> yb(q.size());
    std::vector<lb::float16> yh(q.size());
    ASSERT_TRUE(lb::fp8_dequantize(q.data(), s.data(), rows, cols, o, y.data()).ok());
    ASSERT_TRUE(lb::fp8_dequantize(q.data(), s.data(), rows, cols, o, yb.data()).ok());
    ASSERT_TRUE(lb::fp8_dequantize(q.data(), s.data(), rows, cols, o, yh.data()).ok());
    for (std::size_t i = 0; i < q.size(); ++i) {
      const float v = lb::decode(q[i]) * s[i / cols];
      ASSERT_EQ(lowbit_test::float_bits(y[i]), lowbit_test::float_bits(v)) << i << " " << lb::isa_name(path);
      ASSERT_EQ(yb[i].bits(), lb::encode<lb::bfloat16>(v).bits()) << i << " " << lb::isa_name(path);
      ASSERT_EQ(yh[i].bits(), lb::encode<lb::float16>(v).bits()) << i << " " << lb::isa_name(path);
    }
  }
}

TEST(Fp8Reference, EveryCodeEveryDestination) {
  check_every_code_dequantized<lb::float8_e4m3fn>();
  check_every_code_dequantized<lb::float8_e5m2>();
  check_every_code_dequantized<lb::float8_e4m3fnuz>();
  check_every_code_dequantized<lb::float8_e5m2fnuz>();
  // Spot values: E5M2 57344 * 3 is beyond float16: its max 0x7BFF; Inf saturates too, as
  // encode's default policy does; a NaN code gives 0x7FFF.
  const lb::float8_e5m2 q[3] = {lb::float8_e5m2::from_bits(0x7B), lb::float8_e5m2::from_bits(0x7C),
                                lb::float8_e5m2::from_bits(0x7F)};
  const float s = 3.0f;
  lb::float16 y[3];
  ASSERT_TRUE(lb::fp8_dequantize(q, &s, 1, 3, lb::fp8_presets::per_tensor(), y).ok());
  EXPECT_EQ(y[0].bits(), 0x7BFF);
  EXPECT_EQ(y[1].bits(), 0x7BFF);
  EXPECT_EQ(y[2].bits(), 0x7FFF);
}

// ---------------------------------------------------------------------------------------------
// Special blocks

TEST(Fp8Special, ZeroBlockGetsScaleOneAndZeroCodes) {
  std::vector<float> x(2 * 128, 0.0f);
  x[128 + 5] = -3.0f;
  x[7] = -0.0f;
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    std::vector<lb::float8_e4m3fn> q(x.size());
    float s[2];
    ASSERT_TRUE(lb::fp8_quantize(x.data(), 2, 128, lb::fp8_presets::per_token(), q.data(), s).ok());
    EXPECT_EQ(s[0], 1.0f);
    EXPECT_EQ(s[1], 3.0f / 448.0f);
    EXPECT_EQ(q[0].bits(), 0x00);
    EXPECT_EQ(q[7].bits(), 0x80);  // -0 keeps its sign
    EXPECT_EQ(q[128 + 5].bits(), 0xFE);
  }
}

TEST(Fp8Special, NonFiniteBlocksAreDataErrorsWithEarlierBlocksWritten) {
  for (float bad : {nan_f, inf_f, -inf_f}) {
    for (lb::isa path : paths()) {
      const lb::scoped_isa use(path);
      // Blocks of 1 x 64 in a 2 x 192 matrix: block (0, 1) holds the bad value.
      std::vector<float> x = mixed_matrix(2, 192, 11);
      x[64 + 10] = bad;
      std::vector<lb::float8_e4m3fn> q(x.size(), lb::float8_e4m3fn::from_bits(0x11));
      std::vector<float> s(6, -7.0f);
      EXPECT_EQ(lb::fp8_quantize(x.data(), 2, 192, lb::fp8_presets::blockwise(1, 64), q.data(), s.data()).code(),
                errc::non_finite_input);
      const auto want = reference_quantize<lb::float8_e4m3fn>(std::vector<float>(x.begin(), x.begin() + 64), 1, 64,
                                                               lb::fp8_presets::per_tensor());
      for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(q[i].bits(), want.q[i].bits());
      EXPECT_EQ(s[0], want.scales[0]);
      for (std::size_t i = 64; i < q.size(); ++i) ASSERT_EQ(q[i].bits(), 0x11) << i;
      for (std::size_t j = 1; j < 6; ++j) EXPECT_EQ(s[j], -7.0f);
    }
  }
}

// Under a static scale NaN and Inf are encoded as convert() encodes them, under both overflow
// modes; values beyond max saturate or overflow.
TEST(Fp8Special, StaticScaleEncodesNonFiniteLikeConvert) {
  const float x[] = {nan_f, -nan_f, inf_f, -inf_f, 1000.0f, -1000.0f, 0.0f, 1.0f};
  const float s = 2.0f;  // 1000 / 2 = 500 is beyond E4M3's 448 but short of E5M2's max
  for (lb::overflow ov : {lb::overflow::saturate, lb::overflow::non_saturate}) {
    fp8_options o;
    o.element_overflow = ov;
    for (lb::isa path : paths()) {
      const lb::scoped_isa use(path);
      lb::float8_e4m3fn q[8];
      lb::float8_e5m2 r[8];
      ASSERT_TRUE(lb::fp8_quantize_fixed(x, &s, 1, 8, o, q).ok());
      ASSERT_TRUE(lb::fp8_quantize_fixed(x, &s, 1, 8, o, r).ok());
      for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(q[i].bits(), lb::encode<lb::float8_e4m3fn>(x[i] / s, ov).bits()) << i;
        EXPECT_EQ(r[i].bits(), lb::encode<lb::float8_e5m2>(x[i] / s, ov).bits()) << i;
      }
    }
    // Spot values from the OCP spec: E4M3FN saturates to 0x7E / overflows to NaN 0x7F; E5M2 has Inf 0x7C.
    lb::float8_e4m3fn q[8];
    ASSERT_TRUE(lb::fp8_quantize_fixed(x, &s, 1, 8, o, q).ok());
    EXPECT_EQ(q[4].bits(), ov == lb::overflow::saturate ? 0x7E : 0x7F);
    EXPECT_EQ(q[5].bits(), ov == lb::overflow::saturate ? 0xFE : 0xFF);
    EXPECT_EQ(q[0].bits() & 0x7F, 0x7F);
  }
}

// ---------------------------------------------------------------------------------------------
// Scale rules

TEST(Fp8Scale, Rules) {
  fp8_options o;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(448.0f, o).value, 1.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e5m2>(57344.0f, o).value, 1.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fnuz>(240.0f, o).value, 1.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(12.0f, o).value, 12.0f / 448.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(0.0f, o).value, 1.0f);
  o.headroom = 4.0f;  // TransformerEngine margin 2
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(448.0f, o).value, 4.0f);
  o = {};
  o.power_of_two_scales = true;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(448.0f, o).value, 1.0f);  // exactly 2^0 stays
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(449.0f, o).value, 2.0f);  // rounds up
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(12.0f, o).value, 0.03125f);  // 0.0268 -> 2^-5
  o = {};
  o.min_amax = 1.0f;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(0.0f, o).value, 1.0f / 448.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(0.5f, o).value, 1.0f / 448.0f);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(2.0f, o).value, 2.0f / 448.0f);
  // Tiny amax: raised to the least normal float (fp32) or 2^-24 (fp16).
  o = {};
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1e-40f, o).value, std::ldexp(1.0f, -126));
  o.scale_format = lb::scale_storage::fp16;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1e-6f, o).value, std::ldexp(1.0f, -24));
  // fp16 storage: rounded to nearest. 1/448 = 2^-9 * 1.142857: exponent field 6, mantissa
  // round(0.142857 * 1024) = 146 = 0x92: 0x1892 (0.0022316).
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1.0f, o).value,
            static_cast<float>(lb::float16::from_bits(0x1892)));
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1e8f, o).status.code(), errc::scale_overflow);
  // A scale beyond float32 (headroom 1e30 on amax 1e12): scale_overflow, not an undefined conversion.
  o = {};
  o.headroom = 1e30f;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1e12f, o).status.code(), errc::scale_overflow);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(1e-10f, o).value,
            static_cast<float>(static_cast<double>(1e-10f) * static_cast<double>(1e30f) / 448.0));
  // The edge of float32: with headroom 448 * 2^100 the quotient is amax * 2^100 exactly; FLT_MAX
  // itself is a scale, 2^128 is not.
  o.headroom = 0x1.cp+108f;
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(0x1.fffffep+27f, o).value, std::numeric_limits<float>::max());
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(0x1p+28f, o).status.code(), errc::scale_overflow);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(nan_f, {}).status.code(), errc::non_finite_input);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(inf_f, {}).status.code(), errc::non_finite_input);
  EXPECT_EQ(lb::fp8_scale_from_amax<lb::float8_e4m3fn>(-1.0f, {}).status.code(), errc::bad_argument);
}

// fp8_quantize computes a chunk's scales apart from fp8_scale_from_amax (all of them first, with
// fp32 scales): every block's scale is still the one the rules above give, in every storage
// format, and the first block without one stops the call with its error, the blocks before it
// written and the ones after it not.
TEST(Fp8Scale, BulkScalesAreTheRulesScales) {
  const float amaxes[] = {0.0f,  1e-40f, 0x1p-118f, 0x1.8p-117f, 12.0f, 448.0f,
                          449.0f, 1e-10f, 3.0e5f,    1e8f,        0x1.fffffep+27f, 1e12f};
  constexpr std::size_t nb = sizeof(amaxes) / sizeof(amaxes[0]);
  std::vector<float> x(nb * 32);
  for (std::size_t j = 0; j < nb; ++j)
    for (std::size_t i = 0; i < 32; ++i) x[j * 32 + i] = amaxes[j] * (i % 2 == 0 ? -1.0f : 0.25f);
  std::vector<fp8_options> cases(7, lb::fp8_presets::blockwise(1, 32));
  cases[1].min_amax = 1e-3f;
  cases[2].headroom = 1e30f;  // 1e12 * 1e30 / 448 is beyond float32: scale_overflow at the last block
  cases[3].scale_format = lb::scale_storage::fp16;  // 1e8 / 448 is beyond float16
  cases[4].scale_format = lb::scale_storage::bf16;
  cases[5].power_of_two_scales = true;
  cases[6].headroom = 0x1.cp+108f;  // 448 * 2^100: 0x1.fffffep+27 gives FLT_MAX exactly, 1e12 overflows
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const fp8_options& o = cases[c];
    std::vector<lb::float8_e4m3fn> q(x.size());
    std::vector<float> s(nb + 1, -1.0f);  // one more: nothing written past the blocks
    const lb::status st = lb::fp8_quantize(x.data(), 1, x.size(), o, q.data(), s.data());
    std::size_t j = 0;
    for (; j < nb; ++j) {
      const lb::result<float> want = lb::fp8_scale_from_amax<lb::float8_e4m3fn>(amaxes[j], o);
      if (!want.ok()) {
        EXPECT_EQ(st.code(), want.status.code()) << j;
        break;
      }
      EXPECT_EQ(s[j], want.value) << j << " " << amaxes[j];
    }
    EXPECT_EQ(j < nb, !st.ok());
    EXPECT_EQ(j < nb, c == 2 || c == 3 || c == 6) << c;  // those stop: at 1e12, 1e8 and 1e12
    for (std::size_t k = j; k <= nb; ++k) EXPECT_EQ(s[k], -1.0f) << k;
  }
  // NaN and Inf stop the fast path as they stop the others.
  x[3 * 32 + 5] = nan_f;
  std::vector<lb::float8_e4m3fn> q(x.size());
  std::vector<float> s(nb, -1.0f);
  EXPECT_EQ(lb::fp8_quantize(x.data(), 1, x.size(), cases[0], q.data(), s.data()).code(), errc::non_finite_input);
  EXPECT_NE(s[2], -1.0f);
  EXPECT_EQ(s[3], -1.0f);
}

// The two ways of applying a scale differ where the quotient's last bit decides a rounding; each
// call reproduces its own loop (checked at large above), and here on a value where they differ.
TEST(Fp8Scale, DivideAndReciprocalDiffer) {
  // Search a value whose quotient and reciprocal product encode differently under s = 3/448.
  const float s = 3.0f / 448.0f;
  const float r = 1.0f / s;
  float found = 0.0f;
  for (std::uint32_t b = lowbit_test::float_bits(0.01f); b < lowbit_test::float_bits(3.0f); b += 7) {
    const float v = lowbit_test::float_from_bits(b);
    if (lb::encode<lb::float8_e4m3fn>(v / s).bits() != lb::encode<lb::float8_e4m3fn>(v * r).bits()) {
      found = v;
      break;
    }
  }
  ASSERT_NE(found, 0.0f) << "no value tells the two apart";
  fp8_options o;
  for (lb::isa path : paths()) {
    const lb::scoped_isa use(path);
    lb::float8_e4m3fn q;
    o.application = lb::scale_application::divide;
    ASSERT_TRUE(lb::fp8_quantize_fixed(&found, &s, 1, 1, o, &q).ok());
    EXPECT_EQ(q.bits(), lb::encode<lb::float8_e4m3fn>(found / s).bits());
    o.application = lb::scale_application::multiply_reciprocal;
    ASSERT_TRUE(lb::fp8_quantize_fixed(&found, &s, 1, 1, o, &q).ok());
    EXPECT_EQ(q.bits(), lb::encode<lb::float8_e4m3fn>(found * r).bits());
  }
}

// ---------------------------------------------------------------------------------------------
// Shapes, errors (docs/api.md order), byte accounting, checkpoint tensors

TEST(Fp8Shape, Blocks) {
  auto b = lb::fp8_blocks(lb::fp8_presets::deepseek_v3_weights(), 7168, 2112);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value.scale_rows, 56u);
  EXPECT_EQ(b.value.scale_cols, 17u);  // 2112 = 16.5 blocks: the last is partial
  b = lb::fp8_blocks(lb::fp8_presets::per_channel(), 10, 3);
  EXPECT_EQ(b.value.scale_rows, 10u);
  EXPECT_EQ(b.value.scale_cols, 1u);
  b = lb::fp8_blocks(lb::fp8_presets::per_tensor(), 10, 3);
  EXPECT_EQ(b.value.scale_count(), 1u);
  b = lb::fp8_blocks(lb::fp8_presets::blockwise(128, 128), 5, 3);  // blocks larger than the matrix
  EXPECT_EQ(b.value.scale_count(), 1u);
  EXPECT_EQ(lb::fp8_blocks(lb::fp8_presets::per_tensor(), 0, 3).value.scale_count(), 0u);
}

TEST(Fp8Errors, OptionsThenShapeThenEmptyThenBuffersThenData) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  lb::float8_e4m3fn q[8];
  float s[8];
  fp8_options o;
  o.granularity = lb::fp8_granularity::per_block;  // no block size
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, s).code(), errc::bad_block_size);
  o = {};
  o.block_cols = 4;  // a block size without per_block
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, s).code(), errc::bad_block_size);
  for (float h : {0.0f, -1.0f, nan_f, inf_f}) {
    o = {};
    o.headroom = h;
    EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, s).code(), errc::bad_argument) << h;
  }
  o = {};
  o.min_amax = -1.0f;
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, s).code(), errc::bad_argument);
  o = {};
  o.scale_format = static_cast<lb::scale_storage>(7);
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, s).code(), errc::bad_argument);
  o = {};
  o.element_rounding = static_cast<lb::rounding>(9);
  EXPECT_EQ(lb::fp8_dequantize(q, s, 2, 4, o, x).code(), errc::bad_argument);
  // Shape: rows * cols overflows (checked before the null pointers).
  o = {};
  EXPECT_EQ((lb::fp8_quantize<lb::float8_e4m3fn, float>(nullptr, std::size_t{1} << 40, std::size_t{1} << 40, o, nullptr,
                                                       nullptr)
                 .code()),
            errc::bad_argument);
  // Empty: ok with null pointers, nothing written.
  EXPECT_TRUE((lb::fp8_quantize<lb::float8_e4m3fn, float>(nullptr, 0, 5, o, nullptr, nullptr).ok()));
  EXPECT_TRUE((lb::fp8_dequantize<lb::float8_e4m3fn, float>(nullptr, nullptr, 5, 0, o, nullptr).ok()));
  // Buffers.
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, static_cast<float*>(nullptr)).code(), errc::bad_argument);
  lowbit_test::misaligned<float> mis(8);
  EXPECT_EQ(lb::fp8_quantize(mis.data(), 2, 4, o, q, s).code(), errc::misaligned);
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, reinterpret_cast<lb::float8_e4m3fn*>(x), s).code(),
            errc::overlapping_buffers);
  EXPECT_EQ(lb::fp8_quantize(x, 2, 4, o, q, x + 7).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::fp8_dequantize(q, s, 2, 4, o, reinterpret_cast<float*>(s)).code(), errc::overlapping_buffers);
  // None of the above wrote anything.
  for (float v : x) EXPECT_FALSE(std::isnan(v));
}

TEST(Fp8Errors, BadStoredScalesStopAtTheirBlock) {
  std::vector<float> x = mixed_matrix(1, 96, 12);
  fp8_options o = lb::fp8_presets::blockwise(1, 32);
  o.scale_format = lb::scale_storage::fp16;
  const float third = static_cast<float>(lb::encode<lb::float16>(0.3f));
  for (float bad : {0.0f, -1.0f, nan_f, inf_f, 0.3f /* not an fp16 */, 1e-39f /* below 2^-126 */}) {
    for (lb::isa path : paths()) {
      const lb::scoped_isa use(path);
      const float s[3] = {third, third, bad};
      std::vector<lb::float8_e4m3fn> q(96, lb::float8_e4m3fn::from_bits(0x22));
      EXPECT_EQ(lb::fp8_quantize_fixed(x.data(), s, 1, 96, o, q.data()).code(), errc::bad_argument) << bad;
      for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(q[i].bits(), lb::encode<lb::float8_e4m3fn>(x[i] / third).bits());
      for (std::size_t i = 64; i < 96; ++i) EXPECT_EQ(q[i].bits(), 0x22);
      std::vector<float> y(96, 5.0f);
      EXPECT_EQ(lb::fp8_dequantize(q.data(), s, 1, 96, o, y.data()).code(), errc::bad_argument);
      EXPECT_EQ(y[63], lb::decode(q[63]) * third);
      EXPECT_EQ(y[64], 5.0f);
    }
  }
  // Each other storage rule, in both calls: a bfloat16 scale (0.3 is not one), a power of two
  // (0.375 is not one, nor float16's nearest to 0.3), and the same scale accepted without the rule.
  struct rule {
    lb::scale_storage format;
    bool pow2;
    float good, bad;
  };
  const float third_bf16 = static_cast<float>(lb::encode<lb::bfloat16>(0.3f));
  for (const rule& r : {rule{lb::scale_storage::bf16, false, third_bf16, 0.3f},
                        rule{lb::scale_storage::fp32, true, 0.25f, 0.375f},
                        rule{lb::scale_storage::fp16, true, 0.5f, third}}) {
    o.scale_format = r.format;
    o.power_of_two_scales = r.pow2;
    const float s[3] = {r.good, r.good, r.bad};
    std::vector<lb::float8_e4m3fn> q(96, lb::float8_e4m3fn::from_bits(0x22));
    std::vector<float> y(96, 5.0f);
    EXPECT_EQ(lb::fp8_quantize_fixed(x.data(), s, 1, 96, o, q.data()).code(), errc::bad_argument) << r.bad;
    EXPECT_EQ(q[64].bits(), 0x22);
    EXPECT_EQ(lb::fp8_dequantize(q.data(), s, 1, 96, o, y.data()).code(), errc::bad_argument) << r.bad;
    EXPECT_EQ(y[63], lb::decode(q[63]) * r.good);
    EXPECT_EQ(y[64], 5.0f);
    o.power_of_two_scales = false;
    if (r.pow2) {
      EXPECT_TRUE(lb::fp8_dequantize(q.data(), s, 1, 96, o, y.data()).ok()) << r.bad;
    }
  }
}

TEST(Fp8Errors, ScaleOverflowIsADataError) {
  std::vector<float> x(64, 1.0f);
  x[40] = 1e8f;  // 1e8 / 448 does not fit float16
  fp8_options o = lb::fp8_presets::blockwise(1, 32);
  o.scale_format = lb::scale_storage::fp16;
  std::vector<lb::float8_e4m3fn> q(64, lb::float8_e4m3fn::from_bits(0x22));
  float s[2] = {-1.0f, -1.0f};
  EXPECT_EQ(lb::fp8_quantize(x.data(), 1, 64, o, q.data(), s).code(), errc::scale_overflow);
  EXPECT_EQ(s[1], -1.0f);
  EXPECT_NE(s[0], -1.0f);
  EXPECT_EQ(q[32].bits(), 0x22);
  EXPECT_EQ(q[0].bits(), 0x7E);  // 1 / (1/448) = 448
}

TEST(Fp8Errors, SpanSizes) {
  std::vector<float> x(12, 1.0f);
  std::vector<lb::float8_e4m3fn> q(12);
  std::vector<float> s(3);
  const fp8_options o = lb::fp8_presets::per_token();
  EXPECT_TRUE(lb::fp8_quantize(lb::span<const float>(x), 3, 4, o, lb::span<lb::float8_e4m3fn>(q), lb::span<float>(s)).ok());
  std::vector<float> s2(2);
  EXPECT_EQ(lb::fp8_quantize(lb::span<const float>(x), 3, 4, o, lb::span<lb::float8_e4m3fn>(q), lb::span<float>(s2)).code(),
            errc::size_mismatch);
  std::vector<float> y(11);
  EXPECT_EQ(lb::fp8_dequantize(lb::span<const lb::float8_e4m3fn>(q), lb::span<const float>(s), 3, 4, o,
                               lb::span<float>(y))
                .code(),
            errc::size_mismatch);
  std::vector<lb::float8_e4m3fn> q2(12);
  EXPECT_TRUE(lb::fp8_quantize_fixed(lb::span<const float>(x), lb::span<const float>(s), 3, 4, o,
                                     lb::span<lb::float8_e4m3fn>(q2))
                  .ok());
  EXPECT_EQ(bytes_of(q2), bytes_of(q));
}

TEST(Fp8Storage, BytesPerElement) {
  // 4096 x 4096: one byte per element; per tensor 4 bytes of scale, 128 x 128 blocks 32 x 32
  // fp32 scales, per channel 4096.
  auto st = lb::fp8_storage_for(lb::fp8_presets::per_tensor(), 4096, 4096);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st.value.payload_bytes, 4096u * 4096u);
  EXPECT_EQ(st.value.scale_bytes, 4u);
  st = lb::fp8_storage_for(lb::fp8_presets::deepseek_v3_weights(), 4096, 4096);
  EXPECT_EQ(st.value.scale_bytes, 32u * 32u * 4u);
  EXPECT_NEAR(st.value.bits_per_weight(), 8.0 + 32.0 / (128.0 * 128.0), 1e-12);
  fp8_options o = lb::fp8_presets::per_channel();
  o.scale_format = lb::scale_storage::bf16;
  st = lb::fp8_storage_for(o, 4096, 4096);
  EXPECT_EQ(st.value.scale_bytes, 4096u * 2u);
  EXPECT_EQ(lb::fp8_storage_for(lb::fp8_presets::blockwise(0, 5), 4, 4).status.code(), errc::bad_block_size);
}

TEST(Fp8Export, CheckpointTensors) {
  const std::size_t rows = 300, cols = 260;
  const std::vector<float> x = mixed_matrix(rows, cols, 13);
  struct expected_shape {
    fp8_options o;
    std::size_t sr, sc;
  };
  for (const expected_shape& e : {expected_shape{lb::fp8_presets::per_tensor(), 1, 1},
                                  expected_shape{lb::fp8_presets::per_channel(), rows, 1},
                                  expected_shape{lb::fp8_presets::deepseek_v3_weights(), 3, 3}}) {
    auto t = lb::export_fp8<lb::float8_e4m3fn>(x.data(), rows, cols, e.o);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t.value.weight.rows(), rows);
    EXPECT_EQ(t.value.weight.cols(), cols);
    EXPECT_EQ(t.value.weight_scale.rows(), e.sr);
    EXPECT_EQ(t.value.weight_scale.cols(), e.sc);
    const auto want = reference_quantize<lb::float8_e4m3fn>(x, rows, cols, e.o);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(t.value.weight.values()[i].bits(), want.q[i].bits());
    for (std::size_t i = 0; i < want.scales.size(); ++i) ASSERT_EQ(t.value.weight_scale.values()[i], want.scales[i]);
  }
  EXPECT_EQ(lb::export_fp8<lb::float8_e4m3fn>(x.data(), 0, cols, {}).status.code(), errc::bad_argument);
  std::vector<float> bad = x;
  bad[5] = nan_f;
  EXPECT_EQ(lb::export_fp8<lb::float8_e4m3fn>(bad.data(), rows, cols, {}).status.code(), errc::non_finite_input);
}

TEST(Fp8Export, PowerOfTwoScalesAsE8M0) {
  const float s[] = {1.0f, 0.5f, 0x1p-126f, 0x1p127f, 0x1p-20f};
  lb::float8_e8m0fnu e[5];
  ASSERT_TRUE(lb::fp8_scales_to_e8m0(lb::span<const float>(s), lb::span<lb::float8_e8m0fnu>(e)).ok());
  // E8M0 holds 2^(e - 127) as the byte e.
  EXPECT_EQ(e[0].bits(), 127);
  EXPECT_EQ(e[1].bits(), 126);
  EXPECT_EQ(e[2].bits(), 1);
  EXPECT_EQ(e[3].bits(), 254);
  EXPECT_EQ(e[4].bits(), 107);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(static_cast<float>(e[i]), s[i]);
  const float bad[] = {1.0f, 0.75f};
  lb::float8_e8m0fnu f[2] = {lb::float8_e8m0fnu::from_bits(9), lb::float8_e8m0fnu::from_bits(9)};
  EXPECT_EQ(lb::fp8_scales_to_e8m0(lb::span<const float>(bad), lb::span<lb::float8_e8m0fnu>(f)).code(),
            errc::bad_argument);
  EXPECT_EQ(f[0].bits(), 9);  // nothing written
}

}  // namespace
