// lowbit tests: SmoothQuant (transforms/smoothquant.hpp) and the folding calls
// (transforms/channel_scaling.hpp): the lesson's channel-112 numbers through the public calls,
// shared scales over several layers, exact folding into a LayerNorm / RMSNorm / preceding linear
// layer, the alpha curve on a layer with outlier channels, bad input.
#include <gtest/gtest.h>

#include <lowbit/transforms/smoothquant.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace {

using lowbit::errc;
using lowbit::linear_weight;

std::vector<float> gaussian(std::size_t n, float sd, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

float column_max(const std::vector<float>& m, std::size_t rows, std::size_t cols, std::size_t j) {
  float v = 0.0f;
  for (std::size_t r = 0; r < rows; ++r) v = std::fmax(v, std::fabs(m[r * cols + j]));
  return v;
}

// out[t, o] = sum_j x[t, j] w[o, j] (+ bias[o]) in double.
std::vector<double> linear(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                           std::size_t tokens, std::size_t in, std::size_t out) {
  std::vector<double> y(tokens * out);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double acc = bias != nullptr ? bias[o] : 0.0;
      for (std::size_t j = 0; j < in; ++j) acc += static_cast<double>(x[t * in + j]) * static_cast<double>(w[o * in + j]);
      y[t * out + o] = acc;
    }
  return y;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::fmax(scale, std::fabs(a[i]));
    worst = std::fmax(worst, std::fabs(a[i] - b[i]));
  }
  return worst / scale;
}

// The lesson's synthetic input (section 4.1): 128 x 256 activations around sd 0.5 with channel
// 112 pinned at +80, weights around sd 0.02 with max |W| = 0.02 in column 112.
struct lesson_layer {
  static constexpr std::size_t tokens = 128, in = 256, out = 64, channel = 112;
  std::vector<float> x = gaussian(tokens * in, 0.5f, 11);
  std::vector<float> w = gaussian(out * in, 0.02f, 12);
  lesson_layer() {
    for (std::size_t t = 0; t < tokens; ++t) x[t * in + channel] = 80.0f;
    for (std::size_t o = 0; o < out; ++o) w[o * in + channel] = std::fmax(-0.019f, std::fmin(0.019f, w[o * in + channel]));
    w[5 * in + channel] = -0.02f;
  }
};

TEST(SmoothQuant, LessonChannel112Numbers) {
  const lesson_layer L;
  const std::size_t in = L.in, c = L.channel;
  auto st = lowbit::activation_stats::create(in);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st.value.add(L.x.data(), L.tokens, in).ok());
  std::vector<float> amax(in);
  ASSERT_TRUE(st.value.max_abs(lowbit::span<float>(amax)).ok());
  EXPECT_EQ(amax[c], 80.0f);
  const linear_weight layer{L.w.data(), L.out};
  struct row {
    float alpha, s, act, wt;
  };
  // The lesson's table: s and the maxima after smoothing (activation / weight).
  const row table[] = {{0.0f, 50.0f, 1.6f, 1.0f}, {0.5f, 63.25f, 1.27f, 1.26f}, {0.85f, 74.55f, 1.07f, 1.49f},
                       {1.0f, 80.0f, 1.0f, 1.6f}};
  for (const row& e : table) {
    lowbit::smoothquant_options o;
    o.alpha = e.alpha;
    std::vector<float> s(in);
    ASSERT_TRUE(lowbit::smoothquant_scales(amax.data(), lowbit::span<const linear_weight>(&layer, 1), in, o, s.data()).ok());
    EXPECT_NEAR(s[c], e.s, 0.006f) << e.alpha;
    std::vector<float> w = L.w, x(L.x.size());
    ASSERT_TRUE(lowbit::scale_input_channels(s.data(), L.out, in, w.data()).ok());
    ASSERT_TRUE(lowbit::divide_input_channels(L.x.data(), s.data(), L.tokens, in, x.data()).ok());
    EXPECT_NEAR(column_max(x, L.tokens, in, c), e.act, 0.006f) << e.alpha;
    EXPECT_NEAR(column_max(w, L.out, in, c), e.wt, 0.006f) << e.alpha;
    std::printf("alpha %.2f: s = %.2f, max |X^| = %.3f, max |W^| = %.3f\n", e.alpha, s[c], column_max(x, L.tokens, in, c),
                column_max(w, L.out, in, c));
  }
}

TEST(SmoothQuant, ClosedFormAndClamps) {
  const float act[] = {80.0f, 4.0f, 0.0f, 1.0f, 0.0f};
  const float wmax[] = {0.02f, 0.5f, 0.25f, 0.0f, 0.0f};
  float s[5];
  lowbit::smoothquant_options o;
  o.alpha = 0.5f;
  o.inactive = lowbit::inactive_channel::reference;
  ASSERT_TRUE(lowbit::smoothquant_scales(act, wmax, 5, o, s).ok());
  EXPECT_FLOAT_EQ(s[0], std::sqrt(80.0f / 0.02f));
  EXPECT_FLOAT_EQ(s[1], std::sqrt(4.0f / 0.5f));
  EXPECT_EQ(s[2], lowbit::smoothquant_min_scale);  // 0^0.5 = 0, clamped
  EXPECT_FLOAT_EQ(s[3], static_cast<float>(1.0 / std::sqrt(1e-5)));  // weight max clamped to 1e-5
  EXPECT_EQ(s[4], lowbit::smoothquant_min_scale);
  o.alpha = 0.0f;
  ASSERT_TRUE(lowbit::smoothquant_scales(act, wmax, 5, o, s).ok());
  EXPECT_FLOAT_EQ(s[2], 4.0f);  // 0^0 = 1: 1 / 0.25
}

TEST(SmoothQuant, InactiveChannelsAreLeftAloneByDefault) {
  // Channels 2 and 4 were never active in calibration: s = 1 at every alpha (the reference's
  // 1e-5 would multiply a later input by 1e5); the active channels follow the formula.
  const float act[] = {80.0f, 4.0f, 0.0f, 1.0f, 0.0f};
  const float wmax[] = {0.02f, 0.5f, 0.25f, 0.0f, 0.0f};
  float s[5];
  for (const float alpha : {0.0f, 0.5f, 1.0f}) {
    lowbit::smoothquant_options o;
    o.alpha = alpha;
    ASSERT_TRUE(lowbit::smoothquant_scales(act, wmax, 5, o, s).ok());
    EXPECT_EQ(s[2], 1.0f) << alpha;
    EXPECT_EQ(s[4], 1.0f) << alpha;
    EXPECT_FLOAT_EQ(s[1], static_cast<float>(std::pow(4.0, alpha) / std::pow(0.5, 1.0 - alpha))) << alpha;
  }
}

TEST(SmoothQuant, LayersSharingAnInputShareOneScale) {
  const std::size_t in = 48;
  const std::vector<float> q = gaussian(16 * in, 0.1f, 1), k = gaussian(8 * in, 0.3f, 2), v = gaussian(24 * in, 0.05f, 3);
  const std::vector<float> act = [] {
    std::vector<float> a = gaussian(48, 2.0f, 4);
    for (float& x : a) x = std::fabs(x);
    return a;
  }();
  const linear_weight layers[] = {{q.data(), 16}, {k.data(), 8}, {v.data(), 24}};
  std::vector<float> wmax(in);
  for (std::size_t j = 0; j < in; ++j)
    wmax[j] = std::fmax(column_max(q, 16, in, j), std::fmax(column_max(k, 8, in, j), column_max(v, 24, in, j)));
  lowbit::smoothquant_options o;
  o.alpha = 0.8f;
  std::vector<float> s1(in), s2(in);
  ASSERT_TRUE(lowbit::smoothquant_scales(act.data(), lowbit::span<const linear_weight>(layers), in, o, s1.data()).ok());
  ASSERT_TRUE(lowbit::smoothquant_scales(act.data(), wmax.data(), in, o, s2.data()).ok());
  EXPECT_EQ(s1, s2);
}

// LayerNorm in float: y = gamma * (x - mean) / sqrt(var + eps) + beta.
std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma, const float* beta,
                              std::size_t tokens, std::size_t in, bool rms) {
  std::vector<float> y(x.size());
  for (std::size_t t = 0; t < tokens; ++t) {
    double mean = 0.0, var = 0.0;
    for (std::size_t j = 0; j < in; ++j) mean += x[t * in + j];
    mean = rms ? 0.0 : mean / in;
    for (std::size_t j = 0; j < in; ++j) var += (x[t * in + j] - mean) * (x[t * in + j] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / in + 1e-5));
    for (std::size_t j = 0; j < in; ++j) {
      const float n = static_cast<float>(x[t * in + j] - mean) * inv;
      const float g = gamma[j] * n;  // a product rounded alone: contraction cannot change it
      y[t * in + j] = beta != nullptr ? g + beta[j] : g;
    }
  }
  return y;
}

TEST(SmoothQuant, FoldingIntoANormIsExactToFloatRounding) {
  const std::size_t tokens = 32, in = 96, out = 40;
  std::vector<float> x = gaussian(tokens * in, 1.0f, 21);
  for (std::size_t t = 0; t < tokens; ++t) x[t * in + 7] += 30.0f;  // an outlier channel
  std::vector<float> gamma = gaussian(in, 0.3f, 22), beta = gaussian(in, 0.1f, 23);
  for (float& g : gamma) g += 1.0f;
  gamma[7] = 25.0f;
  const std::vector<float> w = gaussian(out * in, 0.05f, 24), bias = gaussian(out, 0.1f, 25);
  for (bool rms : {false, true}) {
    const float* b = rms ? nullptr : beta.data();
    const std::vector<double> ref = linear(layer_norm(x, gamma, b, tokens, in, rms), w, bias.data(), tokens, in, out);
    // s from the statistics of the norm's output
    const std::vector<float> y = layer_norm(x, gamma, b, tokens, in, rms);
    auto st = lowbit::activation_stats::create(in);
    ASSERT_TRUE(st.ok() && st.value.add(y.data(), tokens, in).ok());
    std::vector<float> amax(in), s(in);
    ASSERT_TRUE(st.value.max_abs(lowbit::span<float>(amax)).ok());
    const linear_weight layer{w.data(), out};
    ASSERT_TRUE(lowbit::smoothquant_scales(amax.data(), lowbit::span<const linear_weight>(&layer, 1), in, {}, s.data()).ok());
    std::vector<float> g2 = gamma, b2 = beta, w2 = w;
    ASSERT_TRUE(lowbit::fold_inverse_into_norm(s.data(), in, g2.data(), rms ? nullptr : b2.data()).ok());
    ASSERT_TRUE(lowbit::scale_input_channels(s.data(), out, in, w2.data()).ok());
    const std::vector<double> got =
        linear(layer_norm(x, g2, rms ? nullptr : b2.data(), tokens, in, rms), w2, bias.data(), tokens, in, out);
    const double d = max_rel_diff(ref, got);
    std::printf("%s: folded output max |diff| / max |y| = %.3g\n", rms ? "RMSNorm" : "LayerNorm", d);
    EXPECT_LT(d, 4 * std::numeric_limits<float>::epsilon());  // a few float32 roundings per element
  }
}

TEST(SmoothQuant, FoldingIntoAPrecedingLinearIsExactToFloatRounding) {
  const std::size_t tokens = 16, k = 24, in = 32, out = 12;
  const std::vector<float> x = gaussian(tokens * k, 1.0f, 31);
  const std::vector<float> w1 = gaussian(in * k, 0.5f, 32), b1 = gaussian(in, 0.2f, 33);
  const std::vector<float> w2 = gaussian(out * in, 0.1f, 34);
  const auto to_float = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<double> ref = linear(to_float(linear(x, w1, b1.data(), tokens, k, in)), w2, nullptr, tokens, in, out);
  std::vector<float> s = gaussian(in, 1.0f, 35);
  for (float& v : s) v = std::exp2(std::fabs(v) * 3.0f) * 1.3f;  // not powers of two: real roundings
  std::vector<float> w1s = w1, b1s = b1, w2s = w2;
  ASSERT_TRUE(lowbit::fold_inverse_into_linear(s.data(), in, k, w1s.data(), b1s.data()).ok());
  ASSERT_TRUE(lowbit::scale_input_channels(s.data(), out, in, w2s.data()).ok());
  const std::vector<double> got =
      linear(to_float(linear(x, w1s, b1s.data(), tokens, k, in)), w2s, nullptr, tokens, in, out);
  const double d = max_rel_diff(ref, got);
  std::printf("linear -> linear: folded output max |diff| / max |y| = %.3g\n", d);
  EXPECT_LT(d, 4 * std::numeric_limits<float>::epsilon());
}

// A layer with a few systematic outlier input channels (every token large there), as the lesson's.
struct outlier_layer {
  static constexpr std::size_t tokens = 64, in = 256, out = 96;
  std::vector<float> x = gaussian(tokens * in, 0.5f, 41);
  std::vector<float> w = gaussian(out * in, 0.02f, 42);
  outlier_layer() {
    const std::size_t channels[] = {3, 112, 200, 201};
    const float size[] = {60.0f, 80.0f, -45.0f, 30.0f};
    for (std::size_t t = 0; t < tokens; ++t)
      for (int i = 0; i < 4; ++i) x[t * in + channels[i]] = size[i] * (1.0f + 0.05f * x[t * in + channels[i]]);
  }
};

TEST(SmoothQuant, AlphaCurveHasItsBestInTheMiddle) {
  const outlier_layer L;
  auto st = lowbit::activation_stats::create(L.in);
  ASSERT_TRUE(st.ok() && st.value.add(L.x.data(), L.tokens, L.in).ok());
  std::vector<float> amax(L.in);
  ASSERT_TRUE(st.value.max_abs(lowbit::span<float>(amax)).ok());
  const linear_weight layer{L.w.data(), L.out};
  for (bool per_tensor : {false, true}) {
    lowbit::smoothquant_search_options o;
    if (per_tensor) o.activations.granularity = lowbit::granularity::per_tensor;
    auto r = lowbit::smoothquant_search(L.x.data(), amax.data(), lowbit::span<const linear_weight>(&layer, 1), L.tokens,
                                        L.in, o);
    ASSERT_TRUE(r.ok()) << r.status.message();
    const auto& v = r.value;
    ASSERT_EQ(v.alphas.size(), 21u);
    EXPECT_EQ(v.alphas.values()[0], 0.0f);
    EXPECT_EQ(v.alphas.values()[20], 1.0f);
    std::printf("%s activations:", per_tensor ? "per-tensor" : "per-token");
    for (std::size_t i = 0; i < 21; i += 4)
      std::printf(" a=%.2f %.1f dB", v.alphas.values()[i], -10.0 * std::log10(v.errors.values()[i]));
    std::printf(" | best a=%.2f %.1f dB, unsmoothed %.1f dB\n", v.alpha, -10.0 * std::log10(v.error),
                -10.0 * std::log10(v.error_unsmoothed));
    const double e0 = v.errors.values()[0], e1 = v.errors.values()[20];
    EXPECT_GT(v.alpha, 0.0f);
    EXPECT_LT(v.alpha, 1.0f);
    EXPECT_LT(v.error * 4.0, e0);  // at least 6 dB better than no migration
    EXPECT_LT(v.error * 2.0, e1);  // at least 3 dB better than all of it
    EXPECT_EQ(v.error, *std::min_element(v.errors.values().begin(), v.errors.values().end()));
    // the reported s is the closed form at the best alpha
    std::vector<float> s(L.in);
    lowbit::smoothquant_options so;
    so.alpha = v.alpha;
    ASSERT_TRUE(lowbit::smoothquant_scales(amax.data(), lowbit::span<const linear_weight>(&layer, 1), L.in, so, s.data()).ok());
    EXPECT_TRUE(std::equal(s.begin(), s.end(), v.scales.values().begin()));
  }
}

TEST(SmoothQuant, SearchOnStatisticsUsesTheReservoir) {
  const outlier_layer L;
  lowbit::activation_stats_options so;
  so.reservoir_capacity = 40;
  auto st = lowbit::activation_stats::create(L.in, so);
  ASSERT_TRUE(st.ok() && st.value.add(L.x.data(), L.tokens, L.in).ok());
  std::vector<float> amax(L.in);
  ASSERT_TRUE(st.value.max_abs(lowbit::span<float>(amax)).ok());
  const linear_weight layer{L.w.data(), L.out};
  const float grid[] = {0.2f, 0.5f, 0.8f};
  lowbit::smoothquant_search_options o;
  o.alphas = lowbit::span<const float>(grid);
  auto a = lowbit::smoothquant_search(st.value, lowbit::span<const linear_weight>(&layer, 1), L.in, o);
  auto b = lowbit::smoothquant_search(st.value.reservoir().data(), amax.data(), lowbit::span<const linear_weight>(&layer, 1),
                                      st.value.reservoir_rows(), L.in, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value.alphas.size(), 3u);
  EXPECT_EQ(a.value.alpha, b.value.alpha);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(a.value.errors.values()[i], b.value.errors.values()[i]);
}

TEST(SmoothQuant, BadInputReturnsAStatusAndWritesNothing) {
  const outlier_layer L;
  std::vector<float> amax(L.in, 1.0f);
  const linear_weight layer{L.w.data(), L.out};
  const lowbit::span<const linear_weight> one(&layer, 1);
  lowbit::smoothquant_search_options o;
  // an empty grid; an alpha out of range
  o.grid_points = 0;
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, L.tokens, L.in, o).status.code(), errc::bad_argument);
  const float bad_alpha[] = {0.5f, 1.5f};
  o = {};
  o.alphas = lowbit::span<const float>(bad_alpha);
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, L.tokens, L.in, o).status.code(), errc::bad_argument);
  o = {};
  o.weights.bits = 1;
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, L.tokens, L.in, o).status.code(),
            errc::bad_bit_width);
  o = {};
  o.weights = lowbit::int_presets::awq(4, 100);  // 100 does not divide 256
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, L.tokens, L.in, o).status.code(),
            errc::bad_group_size);
  o = {};
  // zero rows, zero channels, zero layers: nothing to score
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, 0, L.in, o).status.code(), errc::empty_input);
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), {}, L.tokens, L.in, o).status.code(), errc::empty_input);
  // null, NaN
  EXPECT_EQ(lowbit::smoothquant_search(nullptr, amax.data(), one, L.tokens, L.in, o).status.code(), errc::bad_argument);
  std::vector<float> x = L.x;
  x[17 * L.in + 3] = std::numeric_limits<float>::quiet_NaN();
  auto r = lowbit::smoothquant_search(x.data(), amax.data(), one, L.tokens, L.in, o);
  EXPECT_EQ(r.status.code(), errc::non_finite_input);
  EXPECT_EQ(r.value.scales.size(), 0u);
  amax[4] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(lowbit::smoothquant_search(L.x.data(), amax.data(), one, L.tokens, L.in, o).status.code(),
            errc::non_finite_input);
  // statistics of another width
  auto st = lowbit::activation_stats::create(L.in + 1);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(lowbit::smoothquant_search(st.value, one, L.in, o).status.code(), errc::size_mismatch);
  auto empty = lowbit::activation_stats::create(L.in);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(lowbit::smoothquant_search(empty.value, one, L.in, o).status.code(), errc::empty_input);

  // smoothquant_scales: nothing written on an error
  std::vector<float> s(L.in, -7.0f);
  lowbit::smoothquant_options so;
  so.alpha = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::smoothquant_scales(amax.data(), one, L.in, so, s.data()).code(), errc::bad_argument);
  so.alpha = 0.5f;
  EXPECT_EQ(lowbit::smoothquant_scales(amax.data(), one, L.in, so, s.data()).code(), errc::non_finite_input);
  amax[4] = -1.0f;
  EXPECT_EQ(lowbit::smoothquant_scales(amax.data(), one, L.in, so, s.data()).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::smoothquant_scales(amax.data(), one, L.in, so, amax.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(s, std::vector<float>(L.in, -7.0f));
  EXPECT_TRUE(lowbit::smoothquant_scales(amax.data(), one, 0, so, s.data()).ok());

  // folding: s must be finite and > 0; nothing written otherwise
  std::vector<float> w = L.w, g(L.in, 1.0f), sc(L.in, 2.0f);
  sc[9] = 0.0f;
  EXPECT_EQ(lowbit::scale_input_channels(sc.data(), L.out, L.in, w.data()).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::fold_inverse_into_norm(sc.data(), L.in, g.data(), nullptr).code(), errc::bad_argument);
  sc[9] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::scale_input_channels(sc.data(), L.out, L.in, w.data()).code(), errc::non_finite_input);
  EXPECT_EQ(lowbit::fold_inverse_into_linear(sc.data(), L.in, 1, g.data(), nullptr).code(), errc::non_finite_input);
  EXPECT_EQ(w, L.w);
  EXPECT_EQ(g, std::vector<float>(L.in, 1.0f));
  EXPECT_EQ(lowbit::scale_input_channels(w.data(), 1, L.in, w.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::fold_inverse_into_norm(sc.data(), L.in, nullptr, nullptr).code(), errc::bad_argument);
  std::vector<float> xd(4);
  EXPECT_EQ(lowbit::divide_input_channels(xd.data(), sc.data(), 1, 4, xd.data()).code(), errc::overlapping_buffers);
  EXPECT_TRUE(lowbit::divide_input_channels(nullptr, nullptr, 0, 4, nullptr).ok());
}

}  // namespace
