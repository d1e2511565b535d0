// lowbit tests: GPTQ (transforms/gptq.hpp), written from the spec: the lesson's two-weight
// example with its numbers, a column-by-column float64 GPTQ with explicit H^-1 updates against
// the blocked one, GPTQ against round-to-nearest on correlated inputs, the non-positive-definite
// retry and fallback, the checkpoint export, and bad input.
#include <gtest/gtest.h>

#include <lowbit/linalg/std_thread_exec.hpp>
#include <lowbit/transforms.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;
using lowbit::gptq_options;
using lowbit::int_params;

// ---------------------------------------------------------------------------------------------
// The lesson: two correlated inputs, three samples, w = [0.62, 0.37], a grid of step 0.25.

int_params step_grid() {  // symmetric 8-bit per channel, fp32 scale: the scale is the step
  int_params p;
  p.bits = 8;
  p.granularity = lowbit::granularity::per_channel;
  return p;
}

TEST(Gptq, LessonTwoWeightExample) {
  // activations [tokens, in]: the lesson's X (two inputs x three samples) transposed
  const std::vector<float> x{2.4f, 2.4f, 0.5f, 0.5f, 0.5f, 0.2f};
  const std::vector<float> w{0.62f, 0.37f};
  const float step = 0.25f;
  // H = X X^T of the lesson (sum of outputs squared), no 2/n
  std::vector<float> h(4, 0.0f);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) h[i * 2 + j] += x[t * 2 + i] * x[t * 2 + j];
  EXPECT_NEAR(h[1] / h[3], 1.0099, 1e-4);  // H12 / H22
  gptq_options o;
  o.percdamp = 0.0;
  auto r = lowbit::gptq_quantize_fixed(w.data(), h.data(), &step, nullptr, 1, 2, step_grid(), o);
  ASSERT_TRUE(r.ok()) << r.status.message();
  const int z = lowbit::symmetric_zero_point(8);
  // GPTQ: w1 -> 0.5, its error 0.12 pushed onto w2 (0.37 + 0.12 * 1.0099 = 0.491) -> 0.5
  EXPECT_EQ(r.value.codes.values()[0], z + 2);
  EXPECT_EQ(r.value.codes.values()[1], z + 2);
  const lowbit::gptq_report& rep = r.value.report;
  EXPECT_NEAR(rep.output_error_rtn, 0.353232, 1e-5);  // RTN [0.5, 0.25]
  EXPECT_NEAR(rep.output_error, 0.001757, 1e-6);      // GPTQ [0.5, 0.5]
  EXPECT_EQ(std::round(rep.output_error_rtn * 1000) / 1000, 0.353);
  EXPECT_EQ(std::round(rep.output_error * 100000) / 100000, 0.00176);
  EXPECT_FALSE(rep.fell_back);
  EXPECT_EQ(rep.retries, 0);
  EXPECT_EQ(rep.damp, 0.0);

  // the same through the accumulator (H = (2/3) X^T X) and the default 1 % dampening
  auto acc = lowbit::hessian_accumulator::create(2);
  ASSERT_TRUE(acc.ok());
  ASSERT_TRUE(acc.value.add(x.data(), 3, 2).ok());
  std::vector<float> h3(4);
  ASSERT_TRUE(acc.value.hessian(lowbit::span<float>(h3)).ok());
  auto r2 = lowbit::gptq_quantize_fixed(w.data(), h3.data(), &step, nullptr, 1, 2, step_grid());
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.value.codes.values()[1], z + 2);
  EXPECT_NEAR(r2.value.report.output_error_rtn * 1.5, 0.353232, 1e-5);
  EXPECT_NEAR(r2.value.report.output_error * 1.5, 0.001757, 1e-6);
  EXPECT_NEAR(r2.value.report.relative_error, rep.relative_error, 1e-6);
  EXPECT_NEAR(r2.value.report.damp, 0.01 * (h3[0] + h3[3]) / 2, 1e-7);
  // and straight from the accumulator: the same result
  auto r3 = lowbit::gptq_quantize_fixed(w.data(), acc.value, &step, nullptr, 1, 2, step_grid());
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3.value.codes.values()[0], r2.value.codes.values()[0]);
  EXPECT_EQ(r3.value.codes.values()[1], r2.value.codes.values()[1]);
  EXPECT_EQ(r3.value.report.output_error, r2.value.report.output_error);
  EXPECT_EQ(r3.value.report.damp, r2.value.report.damp);
}

// ---------------------------------------------------------------------------------------------
// Layers with correlated inputs.

struct layer {
  std::size_t rows, cols;
  std::vector<float> w;
  std::vector<float> h;
};

// Inputs from a few shared factors plus noise, with channel scales spread over 10x (so
// act-order has something to sort); weights normal with a few outliers.
layer make_layer(std::size_t rows, std::size_t cols, unsigned seed, std::size_t dead = 0) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::size_t factors = 6, tokens = 4 * cols;
  std::vector<float> mix(factors * cols), scale(cols);
  for (float& v : mix) v = nd(gen);
  for (std::size_t c = 0; c < cols; ++c) scale[c] = std::pow(10.0f, static_cast<float>(c * 7 % cols) / cols);
  std::vector<float> x(tokens * cols);
  for (std::size_t t = 0; t < tokens; ++t) {
    float lat[factors];
    for (float& v : lat) v = nd(gen);
    for (std::size_t c = 0; c < cols; ++c) {
      float v = 0.3f * nd(gen);
      for (std::size_t f = 0; f < factors; ++f) v += lat[f] * mix[f * cols + c];
      x[t * cols + c] = c < dead ? 0.0f : v * scale[c];
    }
  }
  auto acc = lowbit::hessian_accumulator::create(cols);
  EXPECT_TRUE(acc.ok());
  EXPECT_TRUE(acc.value.add(x.data(), tokens, cols).ok());
  layer l{rows, cols, std::vector<float>(rows * cols), std::vector<float>(cols * cols)};
  EXPECT_TRUE(acc.value.hessian(lowbit::span<float>(l.h)).ok());
  for (float& v : l.w) v = 0.05f * nd(gen) * (gen() % 50 == 0 ? 6.0f : 1.0f);
  return l;
}

// tr(D H D^T) in float64 for D = W - Q.
double quad(const layer& l, const std::vector<double>& q) {
  double s = 0.0;
  for (std::size_t r = 0; r < l.rows; ++r)
    for (std::size_t i = 0; i < l.cols; ++i) {
      const double di = l.w[r * l.cols + i] - q[r * l.cols + i];
      double hi = 0.0;
      for (std::size_t j = 0; j < l.cols; ++j)
        hi += static_cast<double>(l.h[i * l.cols + j]) * (l.w[r * l.cols + j] - q[r * l.cols + j]);
      s += di * hi;
    }
  return s;
}

std::vector<double> dequantized(const lowbit::gptq_output& g) {
  std::vector<double> q(g.rows * g.cols);
  for (std::size_t r = 0; r < g.rows; ++r)
    for (std::size_t c = 0; c < g.cols; ++c) {
      const std::size_t grp = static_cast<std::size_t>(g.g_idx.values()[c]);
      const float s = g.scales.values()[r * g.groups() + grp];
      const float z = lowbit::has_zero_points(g.params) ? g.zeros.values()[r * g.groups() + grp]
                                                          : static_cast<float>(lowbit::symmetric_zero_point(g.params.bits));
      q[r * g.cols + c] = (static_cast<double>(g.codes.values()[r * g.cols + c]) - z) * s;
    }
  return q;
}

// A straightforward float64 GPTQ: column by column, no lazy batches, the inverse Hessian of the
// remaining columns updated explicitly after each column (the OBS update), parameters of a group
// from the current weights when its first column is reached. Where the two disagree and x / s
// lies within `tie` of a rounding boundary (or a group's scale within one fp16 ulp, 1e-3
// relative, of the blocked one's) it takes the blocked result's choice (`hint`), so both follow
// the same path; those places are counted and bounded. The float32 sweep on an H whose channel
// scales span 10x (condition ~1e5) lands up to ~0.7 % of a step away from float64.
struct reference_result {
  std::vector<std::uint8_t> codes;
  std::size_t near_ties = 0;    // codes where the two disagree, x / s within `tie` of a boundary
  double worst_tie = 0.0;       // the largest such distance
  std::size_t near_scales = 0;  // group scales that differ in their last bits (fp32 scales)
};

reference_result reference_gptq(const layer& l, const int_params& p, double percdamp, bool act_order,
                                const lowbit::gptq_output& hint, double tie) {
  const std::size_t R = l.rows, C = l.cols;
  const std::size_t G = p.granularity == lowbit::granularity::per_group ? p.group_size : C;
  std::vector<double> H(C * C);
  for (std::size_t i = 0; i < C * C; ++i) H[i] = l.h[i];
  std::vector<double> W(R * C);
  std::vector<bool> dead(C);
  for (std::size_t i = 0; i < C; ++i) {
    dead[i] = H[i * C + i] == 0.0;
    if (dead[i]) H[i * C + i] = 1.0;
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) W[r * C + c] = dead[c] ? 0.0 : l.w[r * C + c];
  std::vector<std::size_t> perm(C);
  std::iota(perm.begin(), perm.end(), 0);
  if (act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) { return H[a * C + a] > H[b * C + b]; });
  double mean = 0.0;
  for (std::size_t i = 0; i < C; ++i) mean += H[i * C + i];
  mean /= C;
  // Hp = permuted, damped H; Hinv by Gauss-Jordan
  std::vector<double> A(C * 2 * C, 0.0);
  for (std::size_t i = 0; i < C; ++i) {
    for (std::size_t j = 0; j < C; ++j) A[i * 2 * C + j] = H[perm[i] * C + perm[j]];
    A[i * 2 * C + i] += percdamp * mean;
    A[i * 2 * C + C + i] = 1.0;
  }
  for (std::size_t k = 0; k < C; ++k) {
    const double piv = A[k * 2 * C + k];
    for (std::size_t j = 0; j < 2 * C; ++j) A[k * 2 * C + j] /= piv;
    for (std::size_t i = 0; i < C; ++i) {
      if (i == k) continue;
      const double f = A[i * 2 * C + k];
      if (f != 0.0)
        for (std::size_t j = 0; j < 2 * C; ++j) A[i * 2 * C + j] -= f * A[k * 2 * C + j];
    }
  }
  reference_result out;
  out.codes.assign(R * C, 0);
  for (std::size_t r = 0; r < R; ++r) {
    std::vector<double> Hinv(C * C);
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j < C; ++j) Hinv[i * C + j] = A[i * 2 * C + C + j];
    std::vector<double> w(C);
    for (std::size_t j = 0; j < C; ++j) w[j] = W[r * C + perm[j]];
    lowbit::int_group_codec codec;
    for (std::size_t j = 0; j < C; ++j) {
      if (j % G == 0) {
        const std::size_t len = std::min(G, C - j);
        float lo = static_cast<float>(w[j]), hi = lo;
        for (std::size_t m = j; m < j + len; ++m) {
          lo = std::min(lo, static_cast<float>(w[m]));
          hi = std::max(hi, static_cast<float>(w[m]));
        }
        auto c = lowbit::make_int_codec(lo, hi, p);
        EXPECT_TRUE(c.ok());
        codec = c.value;
        const std::size_t g = j / G;
        const float hs = hint.scales.values()[r * hint.groups() + g];
        if (codec.scale != hs && std::fabs(codec.scale - hs) <= 1e-3 * std::fabs(hs)) {
          ++out.near_scales;
          codec.scale = hs;
          if (lowbit::has_zero_points(p)) codec.zero_point = static_cast<int>(hint.zeros.values()[r * hint.groups() + g]);
        }
      }
      const double y = w[j] / codec.scale + codec.zero_point;  // code before rounding
      int u = static_cast<int>(std::nearbyint(y));
      u = std::min(std::max(u, codec.code_min), codec.code_max);
      const int blocked = hint.codes.values()[r * C + perm[j]];
      const double distance = std::fabs(y - std::floor(y) - 0.5);  // from the rounding boundary
      if (u != blocked && distance < tie) {
        ++out.near_ties;
        out.worst_tie = std::max(out.worst_tie, distance);
        u = blocked;
      }
      out.codes[r * C + perm[j]] = static_cast<std::uint8_t>(u);
      const double q = (u - codec.zero_point) * static_cast<double>(codec.scale);
      const double d = Hinv[j * C + j];
      const double e = (w[j] - q) / d;
      for (std::size_t m = j + 1; m < C; ++m) w[m] -= e * Hinv[j * C + m];
      // remove column j from the inverse: Hinv -= Hinv[:, j] Hinv[j, :] / d
      for (std::size_t a = j + 1; a < C; ++a) {
        const double f = Hinv[a * C + j] / d;
        for (std::size_t b = j + 1; b < C; ++b) Hinv[a * C + b] -= f * Hinv[j * C + b];
      }
    }
  }
  return out;
}

struct blocked_case {
  int_params p;
  std::size_t block;
  bool act_order;
};

TEST(Gptq, BlockedAgreesWithColumnByColumnFloat64) {
  int_params affine = lowbit::int_presets::awq(4, 32);
  affine.scale_format = lowbit::scale_storage::fp32;
  int_params per_channel = lowbit::int_presets::gptq(3, 0);
  per_channel.granularity = lowbit::granularity::per_channel;
  const std::vector<blocked_case> cases{
      {lowbit::int_presets::gptq(4, 32), 64, false}, {lowbit::int_presets::gptq(4, 32), 32, true},
      {affine, 64, false},                          {affine, 128, true},
      {per_channel, 16, false},                     {lowbit::int_presets::gptq(2, 64), 64, true}};
  // 157 columns: a partial 16-column tile at every edge (per channel: no group divides 157)
  const std::vector<blocked_case> odd_cases{{per_channel, 32, true}, {per_channel, 64, false}};
  // three dead input channels; under the sanitizers 20 rows (a task of 16 and a partial one) for 48
  for (const std::size_t width : {std::size_t{192}, std::size_t{157}}) {
    const layer l = make_layer(lowbit_test::sanitized_size(48, 20), width, 21, 3);
    // only H's upper triangle may be read: the lower one is NaN in the call
    std::vector<float> upper = l.h;
    for (std::size_t i = 0; i < l.cols; ++i)
      for (std::size_t j = 0; j < i; ++j) upper[i * l.cols + j] = std::numeric_limits<float>::quiet_NaN();
    for (const blocked_case& k : width % 16 == 0 ? cases : odd_cases) {
      gptq_options o;
      o.block_size = k.block;
      o.act_order = k.act_order;
      auto g = lowbit::gptq_quantize(l.w.data(), upper.data(), l.rows, l.cols, k.p, o);
      ASSERT_TRUE(g.ok()) << g.status.message();
      EXPECT_EQ(g.value.report.dead_columns, 3u);
      const reference_result ref = reference_gptq(l, k.p, o.percdamp, k.act_order, g.value, 1e-2);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < ref.codes.size(); ++i) differ += ref.codes[i] != g.value.codes.values()[i];
      EXPECT_EQ(differ, 0u) << "bits " << k.p.bits << " block " << k.block << " act-order " << k.act_order
                            << " width " << width;
      // disagreements only at near-ties (within 1 % of a step), and few
      EXPECT_LE(ref.near_ties, l.rows * l.cols / 1000) << ref.near_ties;
      EXPECT_LT(ref.worst_tie, 1e-2) << ref.worst_tie << " ties " << ref.near_ties;
      if (k.p.scale_format == lowbit::scale_storage::fp16) {
        EXPECT_LE(ref.near_scales, 2u);
      }
      const std::vector<double> q = dequantized(g.value);
      const double exact = quad(l, q);
      EXPECT_NEAR(g.value.report.output_error, exact, 1e-5 * exact);
      for (std::size_t r = 0; r < l.rows; ++r)
        for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(q[r * l.cols + c], 0.0);  // dead channels quantize to zero
    }
  }
}

TEST(Gptq, BeatsRoundToNearestOnCorrelatedInputs) {
  const layer l = make_layer(64, 256, 33);
  for (int bits : {3, 4})
    for (std::size_t group : {std::size_t{32}, std::size_t{128}})
      for (int mode = 0; mode < 3; ++mode) {  // plain, act-order, act-order + static groups
        gptq_options o;
        o.act_order = mode > 0;
        o.static_groups = mode == 2;
        const int_params p = lowbit::int_presets::gptq(bits, group);
        auto g = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o);
        ASSERT_TRUE(g.ok());
        const lowbit::gptq_report& r = g.value.report;
        EXPECT_LT(r.relative_error, 0.6 * r.relative_error_rtn)
            << "bits " << bits << " G " << group << " mode " << mode << ": " << r.relative_error << " vs "
            << r.relative_error_rtn;
        // the RTN figure is that of quantize_int on the same grid
        std::vector<std::uint8_t> codes(l.rows * l.cols);
        std::vector<float> scales(l.rows * l.cols / group), deq(l.rows * l.cols);
        ASSERT_TRUE(lowbit::quantize_int(l.w.data(), l.rows, l.cols, p, codes.data(), scales.data(), nullptr).ok());
        ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), nullptr, l.rows, l.cols, p, deq.data()).ok());
        const double rtn = quad(l, std::vector<double>(deq.begin(), deq.end()));
        EXPECT_NEAR(r.output_error_rtn, rtn, 1e-5 * rtn);
        EXPECT_NEAR(r.output_energy, quad(l, std::vector<double>(l.rows * l.cols, 0.0)), 1e-5 * r.output_energy);
        EXPECT_EQ(g.value.trivial_g_idx(), mode != 1);
      }
}

TEST(Gptq, ThreadsGiveTheSameResult) {
  const layer l = make_layer(40, 160, 41);
  lowbit::std_thread_exec pool(2);
  const int_params p = lowbit::int_presets::gptq(4, 32);
  gptq_options o;
  o.act_order = true;
  auto a = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o);
  auto b = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o, pool.exec());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::equal(a.value.codes.values().begin(), a.value.codes.values().end(), b.value.codes.values().begin()));
  EXPECT_EQ(a.value.report.loss, b.value.report.loss);
}

// The AVX-512 path quantizes 16 rows at once (one lane per row, each with its own scale and zero);
// it must give the bits of the row-by-row sweep of the AVX2 path (the multiplies of the two paths
// give the same bits too: one FMA chain per element in the same order): every scheme, rounding,
// group layout, act-order and static groups, block sizes, rows not a multiple of 16.
TEST(Gptq, SixteenRowSweepMatchesRowByRow) {
  if (!lowbit::is_supported(lowbit::isa::avx512) || !LOWBIT_HAS_AVX512_LINALG) GTEST_SKIP() << "no AVX-512";
  const layer l = make_layer(37, 96, 43);
  for (int scheme = 0; scheme < 3; ++scheme)
    for (lowbit::rounding rm : {lowbit::rounding::nearest_even, lowbit::rounding::nearest_away,
                                lowbit::rounding::toward_zero, lowbit::rounding::toward_pos_inf,
                                lowbit::rounding::nearest_toward_zero})
      for (std::size_t g : {std::size_t{0}, std::size_t{32}, std::size_t{40}})
        for (int variant = 0; variant < 4; ++variant) {
          int_params p;
          p.bits = scheme == 1 ? 3 : 4;
          p.scheme = static_cast<lowbit::int_scheme>(scheme);
          p.element_rounding = rm;
          if (scheme == 0 && variant == 1) p.range = lowbit::int_range::full;
          if (scheme == 1 && variant == 2) p.scale_format = lowbit::scale_storage::fp16;
          if (g != 0) {
            p.granularity = lowbit::granularity::per_group;
            p.group_size = g;
            p.partial_groups = true;
          }
          gptq_options o;
          o.act_order = variant % 2 == 1;
          o.static_groups = variant == 3;
          o.block_size = variant == 2 ? 24 : 64;
          SCOPED_TRACE(testing::Message() << "scheme " << scheme << " rm " << int(rm) << " g " << g << " variant "
                                          << variant);
          const bool previous = lowbit::set_linalg_avx512(true);
          auto a = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o);
          (void)lowbit::set_linalg_avx512(false);
          auto b = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o);
          (void)lowbit::set_linalg_avx512(previous);
          ASSERT_TRUE(a.ok() && b.ok());
          EXPECT_TRUE(std::equal(a.value.codes.values().begin(), a.value.codes.values().end(),
                                 b.value.codes.values().begin()));
          EXPECT_TRUE(std::equal(a.value.scales.values().begin(), a.value.scales.values().end(),
                                 b.value.scales.values().begin()));
          EXPECT_TRUE(std::equal(a.value.zeros.values().begin(), a.value.zeros.values().end(),
                                 b.value.zeros.values().begin()));
          EXPECT_EQ(a.value.report.loss, b.value.report.loss);
          EXPECT_EQ(a.value.report.output_error, b.value.report.output_error);
        }
}

// ---------------------------------------------------------------------------------------------
// Non-positive-definite Hessians.

TEST(Gptq, IndefiniteHessianRetriesWithMoreDampening) {
  // eigenvalues -2 and 4: fractions 0.01, 0.1 and 1 leave it indefinite, 10 succeeds
  const std::vector<float> h{1.0f, 3.0f, 3.0f, 1.0f};
  const std::vector<float> w{0.3f, -0.2f, 0.1f, 0.25f};
  int_params p = lowbit::int_presets::gptq(4, 2);
  auto r = lowbit::gptq_quantize(w.data(), h.data(), 2, 2, p);
  ASSERT_TRUE(r.ok()) << r.status.message();
  EXPECT_EQ(r.value.report.retries, 3);
  EXPECT_FALSE(r.value.report.fell_back);
  EXPECT_NEAR(r.value.report.damp_fraction, 10.0, 1e-9);
  EXPECT_NEAR(r.value.report.damp, 10.0, 1e-9);
}

TEST(Gptq, HopelessHessianFallsBackToRoundToNearest) {
  const layer l = make_layer(16, 64, 51);
  std::vector<float> h = l.h;
  h[5 * 64 + 5] = -1e6f;  // far beyond what the dampening may reach
  const int_params p = lowbit::int_presets::gptq(4, 32);
  gptq_options o;
  o.max_retries = 2;
  auto r = lowbit::gptq_quantize(l.w.data(), h.data(), l.rows, l.cols, p, o);
  ASSERT_TRUE(r.ok()) << r.status.message();
  EXPECT_TRUE(r.value.report.fell_back);
  EXPECT_EQ(r.value.report.retries, 2);
  // round to nearest on the same grid: quantize_int's codes
  std::vector<std::uint8_t> codes(l.rows * l.cols);
  std::vector<float> scales(l.rows * 2);
  ASSERT_TRUE(lowbit::quantize_int(l.w.data(), l.rows, l.cols, p, codes.data(), scales.data(), nullptr).ok());
  EXPECT_TRUE(std::equal(codes.begin(), codes.end(), r.value.codes.values().begin()));
  EXPECT_EQ(r.value.report.output_error, r.value.report.output_error_rtn);
  o.fallback_to_rtn = false;
  auto s = lowbit::gptq_quantize(l.w.data(), h.data(), l.rows, l.cols, p, o);
  EXPECT_EQ(s.status, errc::not_positive_definite);
  EXPECT_EQ(s.value.codes.size(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Outputs: the quantized matrix and the GPTQ checkpoint tensors.

TEST(Gptq, ExportsCheckpointTensors) {
  const layer l = make_layer(32, 128, 61);
  const int_params p = lowbit::int_presets::gptq(4, 32);
  for (bool act : {false, true}) {
    gptq_options o;
    o.act_order = act;
    auto g = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p, o);
    ASSERT_TRUE(g.ok());
    auto t = lowbit::export_gptq(g.value);
    ASSERT_TRUE(t.ok()) << t.status.message();
    EXPECT_EQ(t.value.qweight.rows(), 128u * 4 / 32);
    EXPECT_EQ(t.value.qweight.cols(), 32u);
    EXPECT_EQ(t.value.scales.rows(), 4u);
    std::vector<std::uint8_t> codes(l.rows * l.cols);
    ASSERT_TRUE(lowbit::gptq_unpack_qweight(reinterpret_cast<const std::uint32_t*>(t.value.qweight.values().data()),
                                            l.rows, l.cols, 4, codes.data())
                    .ok());
    EXPECT_TRUE(std::equal(codes.begin(), codes.end(), g.value.codes.values().begin()));
    std::vector<std::uint8_t> zeros(l.rows * 4);
    ASSERT_TRUE(lowbit::gptq_unpack_qzeros(reinterpret_cast<const std::uint32_t*>(t.value.qzeros.values().data()),
                                           l.rows, 4, 4, lowbit::gptq_format::v1, zeros.data())
                    .ok());
    for (std::uint8_t z : zeros) EXPECT_EQ(z, 8);
    for (std::size_t r = 0; r < l.rows; ++r)
      for (std::size_t grp = 0; grp < 4; ++grp)
        EXPECT_EQ(static_cast<float>(t.value.scales.values()[grp * l.rows + r]), g.value.scales.values()[r * 4 + grp]);
    for (std::size_t c = 0; c < l.cols; ++c) EXPECT_EQ(t.value.g_idx.values()[c], g.value.g_idx.values()[c]);
    if (!act) {  // the same bytes as the quantized_matrix export
      auto m = g.value.to_matrix();
      ASSERT_TRUE(m.ok());
      auto t2 = lowbit::export_gptq(m.value);
      ASSERT_TRUE(t2.ok());
      EXPECT_TRUE(std::equal(t2.value.qweight.values().begin(), t2.value.qweight.values().end(),
                             t.value.qweight.values().begin()));
      EXPECT_TRUE(std::equal(t2.value.qzeros.values().begin(), t2.value.qzeros.values().end(),
                             t.value.qzeros.values().begin()));
      EXPECT_TRUE(std::equal(t2.value.g_idx.values().begin(), t2.value.g_idx.values().end(),
                             t.value.g_idx.values().begin()));
    } else {
      EXPECT_EQ(g.value.to_matrix().status, errc::bad_argument);
      std::vector<int> per_group(4, 0);  // every group holds G columns
      for (std::int32_t v : g.value.g_idx.values()) ++per_group[static_cast<std::size_t>(v)];
      for (int c : per_group) EXPECT_EQ(c, 32);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bad input: a status and an empty output.

TEST(Gptq, BadInput) {
  const layer l = make_layer(8, 64, 71);
  const int_params p = lowbit::int_presets::gptq(4, 32);
  const auto call = [&](const int_params& q, const gptq_options& o, const float* w = nullptr, const float* h = nullptr) {
    auto r = lowbit::gptq_quantize(w != nullptr ? w : l.w.data(), h != nullptr ? h : l.h.data(), 8, 64, q, o);
    EXPECT_EQ(r.value.codes.size(), 0u);
    return r.status;
  };
  int_params q = p;
  q.bits = 9;
  EXPECT_EQ(call(q, {}), errc::bad_bit_width);
  q = p;
  q.group_size = 48;
  EXPECT_EQ(call(q, {}), errc::bad_group_size);
  q = p;
  q.granularity = lowbit::granularity::per_tensor;
  q.group_size = 0;
  EXPECT_EQ(call(q, {}), errc::bad_group_size);
  q = p;
  q.element_rounding = lowbit::rounding::stochastic;
  EXPECT_EQ(call(q, {}), errc::bad_argument);
  gptq_options o;
  o.block_size = 0;
  EXPECT_EQ(call(p, o), errc::bad_block_size);
  o = {};
  o.percdamp = -0.01;
  EXPECT_EQ(call(p, o), errc::bad_argument);
  o = {};
  o.damp_growth = 1.0;
  EXPECT_EQ(call(p, o), errc::bad_argument);
  o = {};
  o.max_retries = lowbit::gptq_max_retries + 1;
  EXPECT_EQ(call(p, o), errc::bad_argument);
  std::vector<float> w = l.w;
  w[100] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(call(p, {}, w.data()), errc::non_finite_input);
  std::vector<float> h = l.h;
  h[3 * 64 + 10] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(call(p, {}, nullptr, h.data()), errc::non_finite_input);
  h = l.h;
  h[10 * 64 + 3] = std::numeric_limits<float>::infinity();  // lower triangle: not read
  EXPECT_TRUE(lowbit::gptq_quantize(l.w.data(), h.data(), 8, 64, p).ok());
  EXPECT_EQ(lowbit::gptq_quantize(nullptr, l.h.data(), 8, 64, p).status, errc::bad_argument);
  std::vector<char> raw((l.w.size() + 1) * sizeof(float));
  EXPECT_EQ(lowbit::gptq_quantize(reinterpret_cast<const float*>(raw.data() + 1), l.h.data(), 8, 64, p).status,
            errc::misaligned);
  // a Hessian of the wrong size
  EXPECT_EQ(lowbit::gptq_quantize(lowbit::span<const float>(l.w), lowbit::span<const float>(l.h.data(), 63 * 63), 8,
                                  64, p)
                .status,
            errc::size_mismatch);
  EXPECT_EQ(lowbit::gptq_quantize(lowbit::span<const float>(l.w.data(), 8 * 63), lowbit::span<const float>(l.h), 8, 64,
                                  p)
                .status,
            errc::size_mismatch);
  auto acc = lowbit::hessian_accumulator::create(65);
  ASSERT_TRUE(acc.ok());
  EXPECT_EQ(lowbit::gptq_quantize(l.w.data(), acc.value, 8, 64, p).status, errc::size_mismatch);
  auto empty = lowbit::hessian_accumulator::create(64);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(lowbit::gptq_quantize(l.w.data(), empty.value, 8, 64, p).status, errc::empty_input);
  std::vector<float> grid16(16, 0.25f);
  EXPECT_EQ(lowbit::gptq_quantize_fixed(l.w.data(), acc.value, grid16.data(), nullptr, 8, 64, p).status,
            errc::size_mismatch);
  EXPECT_EQ(lowbit::gptq_quantize_fixed(l.w.data(), empty.value, grid16.data(), nullptr, 8, 64, p).status,
            errc::empty_input);
  // n = 0: ok, an empty output
  auto z = lowbit::gptq_quantize(nullptr, nullptr, 0, 64, p);
  EXPECT_TRUE(z.ok());
  EXPECT_EQ(z.value.codes.size(), 0u);
  EXPECT_EQ(lowbit::export_gptq(z.value).status, errc::bad_argument);
  // a fixed grid with a scale it cannot store
  std::vector<float> scales(16, 0.01f);
  EXPECT_EQ(lowbit::gptq_quantize_fixed(l.w.data(), l.h.data(), scales.data(), nullptr, 8, 64, p).status,
            errc::bad_argument);  // 0.01 is not an fp16 value
  // the checkpoint export of a scheme it cannot hold
  int_params f32 = p;
  f32.scale_format = lowbit::scale_storage::fp32;
  auto g = lowbit::gptq_quantize(l.w.data(), l.h.data(), 8, 64, f32);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(lowbit::export_gptq(g.value).status, errc::bad_argument);
}

TEST(Gptq, AffineAndOffsetSchemes) {
  const layer l = make_layer(24, 128, 81);
  int_params kivi = lowbit::int_presets::kivi(4, 32);
  for (const int_params& p : {lowbit::int_presets::awq(4, 32), kivi, lowbit::int_presets::gptq(8, 64)}) {
    auto g = lowbit::gptq_quantize(l.w.data(), l.h.data(), l.rows, l.cols, p);
    ASSERT_TRUE(g.ok()) << g.status.message();
    EXPECT_LT(g.value.report.relative_error, g.value.report.relative_error_rtn);
    auto m = g.value.to_matrix();
    ASSERT_TRUE(m.ok()) << m.status.message();
    std::vector<float> deq(l.rows * l.cols);
    ASSERT_TRUE(m.value.dequantize(lowbit::span<float>(deq)).ok());
    if (p.scheme != lowbit::int_scheme::affine_offset) {
      const std::vector<double> q = dequantized(g.value);
      for (std::size_t i = 0; i < deq.size(); ++i) ASSERT_NEAR(deq[i], q[i], 1e-6 * (1 + std::fabs(q[i])));
    }
  }
}

}  // namespace
