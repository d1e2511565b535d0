// lowbit tests: AWQ (transforms/awq.hpp): on a layer with a few salient input channels the W4 g128
// output error is below round-to-nearest's; r = 0 is round to nearest; the result's weights and
// scales reproduce the reported error and export as AWQ checkpoint tensors; layers sharing an
// input share s; the clip grid; bad input.
#include <gtest/gtest.h>

#include <lowbit/transforms/awq.hpp>

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

// A layer whose inputs have a few salient channels (mean |x| 20x the others, as AWQ's 1 %).
struct salient_layer {
  static constexpr std::size_t tokens = 128, in = 256, out = 64;
  std::vector<float> x = gaussian(tokens * in, 1.0f, 51);
  std::vector<float> w = gaussian(out * in, 0.02f, 52);
  std::vector<float> mean = std::vector<float>(in);
  salient_layer() {
    for (std::size_t j : {5u, 77u, 130u, 131u, 240u})
      for (std::size_t t = 0; t < tokens; ++t) x[t * in + j] *= 20.0f;
    for (std::size_t j = 0; j < in; ++j) {
      double s = 0.0;
      for (std::size_t t = 0; t < tokens; ++t) s += std::fabs(x[t * in + j]);
      mean[j] = static_cast<float>(s / tokens);
    }
  }
};

// ||X W^T - X V^T||^2 / ||X W^T||^2 in double.
double relative_output_error(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& v,
                             std::size_t tokens, std::size_t in, std::size_t out) {
  double e = 0.0, y = 0.0;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double a = 0.0, b = 0.0;
      for (std::size_t j = 0; j < in; ++j) {
        a += static_cast<double>(x[t * in + j]) * w[o * in + j];
        b += static_cast<double>(x[t * in + j]) * v[o * in + j];
      }
      e += (a - b) * (a - b);
      y += a * a;
    }
  return e / y;
}

TEST(Awq, BeatsRoundToNearestOnSalientChannels) {
  const salient_layer L;
  const linear_weight layer{L.w.data(), L.out};
  auto r = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(&layer, 1), L.tokens, L.in);
  ASSERT_TRUE(r.ok()) << r.status.message();
  const lowbit::awq_output& a = r.value;
  std::printf("W4 g128: RTN %.4g, scaled (r = %.2f) %.4g, clipped %.4g (relative output error)\n", a.error_rtn, a.alpha,
              a.error_scaled, a.error);
  ASSERT_EQ(a.alphas.size(), 20u);
  EXPECT_FLOAT_EQ(a.alphas.values()[19], 0.95f);
  EXPECT_EQ(a.errors.values()[0], a.error_rtn);  // r = 0: s = 1, round to nearest
  EXPECT_EQ(a.error_scaled, *std::min_element(a.errors.values().begin(), a.errors.values().end()));
  EXPECT_GT(a.alpha, 0.0f);
  EXPECT_LT(a.error_scaled * 1.5, a.error_rtn);  // the ordering with a margin
  EXPECT_LT(a.error * 1.5, a.error_rtn);
  EXPECT_LE(a.error, a.error_scaled * 1.02);  // the clip search does not make it worse (beyond its proxy)
  ASSERT_EQ(a.layers.size(), 1u);
  EXPECT_EQ(a.layers.values()[0].error, a.error);
  EXPECT_EQ(a.layers.values()[0].error_rtn, a.error_rtn);

  // The normalisation: max(s) * min(s) = 1.
  const lowbit::span<const float> s = a.scales.values();
  const float smax = *std::max_element(s.begin(), s.end()), smin = *std::min_element(s.begin(), s.end());
  EXPECT_NEAR(static_cast<double>(smax) * smin, 1.0, 1e-5);
  EXPECT_GT(s[5], 1.0f);  // salient channels scaled up

  // The result reproduces the reported error: X (Q diag(s)^-1)^T against X W^T.
  const lowbit::quantized_matrix& q = a.layers.values()[0].weight;
  EXPECT_EQ(q.rows(), L.out);
  EXPECT_EQ(q.cols(), L.in);
  std::vector<float> v(L.out * L.in);
  ASSERT_TRUE(q.dequantize(lowbit::span<float>(v)).ok());
  for (std::size_t o = 0; o < L.out; ++o)
    for (std::size_t j = 0; j < L.in; ++j) v[o * L.in + j] /= s[j];
  EXPECT_NEAR(relative_output_error(L.x, L.w, v, L.tokens, L.in, L.out), a.error, 1e-4 * a.error + 1e-9);

  // clip ratios from the grid 1.00 .. 0.55
  const lowbit::span<const float> clip = a.layers.values()[0].clip.values();
  ASSERT_EQ(clip.size(), L.out * 2);
  for (float c : clip) {
    EXPECT_GE(c, 0.549f);
    EXPECT_LE(c, 1.0f);
  }

  // AWQ checkpoint tensors
  auto t = lowbit::export_awq(q);
  ASSERT_TRUE(t.ok()) << t.status.message();
  EXPECT_EQ(t.value.qweight.rows(), L.in);
  EXPECT_EQ(t.value.qweight.cols(), L.out / 8);
  EXPECT_EQ(t.value.scales.rows(), 2u);
}

TEST(Awq, ClipOffAndStatisticsOverload) {
  const salient_layer L;
  const linear_weight layer{L.w.data(), L.out};
  lowbit::awq_options o;
  o.clip = false;
  auto r = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(&layer, 1), L.tokens, L.in,
                                lowbit::int_presets::awq(4, 128), o);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r.value.error, r.value.error_scaled, 1e-6 * r.value.error);  // no clip: the scaled layer quantized
  for (float c : r.value.layers.values()[0].clip.values()) EXPECT_EQ(c, 1.0f);

  // activation_stats: mean |x| and the reservoir (all rows: capacity 512 > 128)
  auto st = lowbit::activation_stats::create(L.in);
  ASSERT_TRUE(st.ok() && st.value.add(L.x.data(), L.tokens, L.in).ok());
  auto a = lowbit::awq_quantize(st.value, lowbit::span<const linear_weight>(&layer, 1), L.in);
  auto b = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(&layer, 1), L.tokens, L.in);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value.alpha, b.value.alpha);
  EXPECT_NEAR(a.value.error, b.value.error, 1e-6 * b.value.error);
}

TEST(Awq, LayersSharingAnInputShareTheSearch) {
  const salient_layer L;
  const std::vector<float> w2 = gaussian(32 * L.in, 0.05f, 61);
  const linear_weight layers[] = {{L.w.data(), L.out}, {w2.data(), 32}};
  auto r = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(layers), L.tokens, L.in,
                                lowbit::int_presets::awq(4, 64));
  ASSERT_TRUE(r.ok()) << r.status.message();
  ASSERT_EQ(r.value.layers.size(), 2u);
  EXPECT_EQ(r.value.scales.size(), L.in);
  for (std::size_t li = 0; li < 2; ++li) {
    const lowbit::awq_layer_output& lay = r.value.layers.values()[li];
    EXPECT_EQ(lay.weight.rows(), li == 0 ? L.out : 32u);
    EXPECT_EQ(lay.clip.cols(), L.in / 64);
    EXPECT_LT(lay.error, lay.error_rtn) << li;
  }
  EXPECT_LT(r.value.error, r.value.error_rtn);
  // per-channel 8-bit and partial groups work too
  lowbit::int_params p8 = lowbit::int_presets::int8_per_channel();
  auto r8 = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(layers), L.tokens, L.in, p8);
  ASSERT_TRUE(r8.ok());
  EXPECT_LE(r8.value.error_scaled, r8.value.error_rtn);
  lowbit::int_params pp = lowbit::int_presets::awq(3, 100);
  pp.partial_groups = true;
  auto rp = lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(layers), L.tokens, L.in, pp);
  ASSERT_TRUE(rp.ok());
  EXPECT_EQ(rp.value.layers.values()[0].clip.cols(), 3u);
}

TEST(Awq, BadInputReturnsAStatusAndNothing) {
  const salient_layer L;
  const linear_weight layer{L.w.data(), L.out};
  const lowbit::span<const linear_weight> one(&layer, 1);
  const lowbit::int_params p = lowbit::int_presets::awq(4, 128);
  lowbit::awq_options o;
  o.grid = 0;  // an empty grid
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), one, L.tokens, L.in, p, o).status.code(), errc::bad_argument);
  o = {};
  o.max_shrink = 1.0f;
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), one, L.tokens, L.in, p, o).status.code(), errc::bad_argument);
  o = {};
  lowbit::int_params pt = p;
  pt.granularity = lowbit::granularity::per_tensor;
  pt.group_size = 0;
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), one, L.tokens, L.in, pt).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), one, L.tokens, L.in, lowbit::int_presets::awq(4, 96)).status.code(),
            errc::bad_group_size);  // 96 does not divide 256
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), one, 0, L.in, p).status.code(), errc::empty_input);
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), {}, L.tokens, L.in, p).status.code(), errc::empty_input);
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), nullptr, one, L.tokens, L.in, p).status.code(), errc::bad_argument);
  std::vector<float> x = L.x;
  x[3 * L.in + 9] = std::numeric_limits<float>::infinity();
  auto r = lowbit::awq_quantize(x.data(), L.mean.data(), one, L.tokens, L.in, p);
  EXPECT_EQ(r.status.code(), errc::non_finite_input);
  EXPECT_EQ(r.value.layers.size(), 0u);
  EXPECT_EQ(r.value.scales.size(), 0u);
  std::vector<float> w = L.w;
  w[100] = std::numeric_limits<float>::quiet_NaN();
  const linear_weight bad{w.data(), L.out};
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), L.mean.data(), lowbit::span<const linear_weight>(&bad, 1), L.tokens, L.in, p)
                .status.code(),
            errc::non_finite_input);
  std::vector<float> mean = L.mean;
  mean[0] = -1.0f;
  EXPECT_EQ(lowbit::awq_quantize(L.x.data(), mean.data(), one, L.tokens, L.in, p).status.code(), errc::bad_argument);
  auto st = lowbit::activation_stats::create(L.in / 2);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(lowbit::awq_quantize(st.value, one, L.in, p).status.code(), errc::size_mismatch);
  auto empty = lowbit::activation_stats::create(L.in);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(lowbit::awq_quantize(empty.value, one, L.in, p).status.code(), errc::empty_input);
}

}  // namespace
