// lowbit tests: the streaming Hessian accumulator (transforms/hessian.hpp): H = (2 / n) sum x^T x
// against a float64 sum, batches against one batch, merge, NaN rows, empty, bfloat16 rows.
#include <gtest/gtest.h>

#include <lowbit/transforms/hessian.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace {

using lowbit::errc;
using lowbit::hessian_accumulator;

std::vector<float> activations(std::size_t tokens, std::size_t features, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(tokens * features);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float shared = d(gen);  // correlated features
    for (std::size_t f = 0; f < features; ++f) x[t * features + f] = shared + 0.5f * d(gen) + (f % 3 == 0 ? 1.0f : 0.0f);
  }
  return x;
}

std::vector<double> reference(const std::vector<float>& x, std::size_t tokens, std::size_t f) {
  std::vector<double> h(f * f, 0.0);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t i = 0; i < f; ++i)
      for (std::size_t j = 0; j < f; ++j)
        h[i * f + j] += static_cast<double>(x[t * f + i]) * static_cast<double>(x[t * f + j]);
  for (double& v : h) v *= 2.0 / static_cast<double>(tokens);
  return h;
}

std::vector<double> hessian_of(const hessian_accumulator& a) {
  std::vector<double> h(a.features() * a.features());
  EXPECT_TRUE(a.hessian(lowbit::span<double>(h)).ok());
  return h;
}

double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0.0, worst = 0.0;
  for (double v : b) scale = std::fmax(scale, std::fabs(v));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::fmax(worst, std::fabs(a[i] - b[i]));
  return worst / scale;
}

TEST(Hessian, MatchesFloat64Sum) {
  for (std::size_t f : {std::size_t{1}, std::size_t{7}, std::size_t{129}}) {
    const std::size_t tokens = 3000;  // more than one float32 chunk
    const std::vector<float> x = activations(tokens, f, 3);
    auto a = hessian_accumulator::create(f);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(a.value.add(x.data(), tokens, f).ok());
    EXPECT_EQ(a.value.tokens(), tokens);
    EXPECT_LT(max_rel(hessian_of(a.value), reference(x, tokens, f)), 1e-5) << f;
    std::vector<float> h32(f * f);
    ASSERT_TRUE(a.value.hessian(lowbit::span<float>(h32)).ok());
    for (std::size_t i = 0; i < f; ++i)
      for (std::size_t j = 0; j < f; ++j) ASSERT_EQ(h32[i * f + j], h32[j * f + i]);
  }
}

TEST(Hessian, BatchesGiveOneBatchResult) {
  const std::size_t f = 33, tokens = 1000;
  const std::vector<float> x = activations(tokens, f, 5);
  auto one = hessian_accumulator::create(f);
  auto many = hessian_accumulator::create(f);
  ASSERT_TRUE(one.ok() && many.ok());
  ASSERT_TRUE(one.value.add(x.data(), tokens, f).ok());
  std::size_t t0 = 0;
  for (std::size_t b : {std::size_t{1}, std::size_t{17}, std::size_t{300}, std::size_t{682}}) {
    ASSERT_TRUE(many.value.add(x.data() + t0 * f, b, f).ok());
    t0 += b;
  }
  ASSERT_EQ(t0, tokens);
  EXPECT_EQ(many.value.tokens(), tokens);
  EXPECT_LT(max_rel(hessian_of(many.value), hessian_of(one.value)), 1e-6);
}

TEST(Hessian, MergeGivesOneAccumulator) {
  const std::size_t f = 20, tokens = 600;
  const std::vector<float> x = activations(tokens, f, 7);
  auto all = hessian_accumulator::create(f);
  auto a = hessian_accumulator::create(f);
  auto b = hessian_accumulator::create(f);
  ASSERT_TRUE(all.ok() && a.ok() && b.ok());
  ASSERT_TRUE(all.value.add(x.data(), tokens, f).ok());
  ASSERT_TRUE(a.value.add(x.data(), 250, f).ok());
  ASSERT_TRUE(b.value.add(lowbit::span<const float>(x.data() + 250 * f, (tokens - 250) * f)).ok());
  ASSERT_TRUE(a.value.merge(b.value).ok());
  EXPECT_EQ(a.value.tokens(), tokens);
  EXPECT_EQ(b.value.tokens(), tokens - 250);
  EXPECT_LT(max_rel(hessian_of(a.value), hessian_of(all.value)), 1e-6);
  auto other = hessian_accumulator::create(f + 1);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(a.value.merge(other.value), errc::size_mismatch);
  EXPECT_EQ(a.value.merge(a.value), errc::size_mismatch);
  EXPECT_EQ(a.value.tokens(), tokens);
}

TEST(Hessian, NonFiniteRowsLeaveItUnchanged) {
  const std::size_t f = 9;
  std::vector<float> x = activations(40, f, 9);
  auto a = hessian_accumulator::create(f);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a.value.add(x.data(), 20, f).ok());
  const std::vector<double> before = hessian_of(a.value);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> y(x.begin() + 20 * f, x.end());
    y[19 * f + 4] = bad;  // the last row
    EXPECT_EQ(a.value.add(y.data(), 20, f), errc::non_finite_input);
    EXPECT_EQ(a.value.tokens(), 20u);
    EXPECT_EQ(hessian_of(a.value), before);
  }
  std::vector<lowbit::bfloat16> yb(f, lowbit::bfloat16{});
  yb[2] = lowbit::encode<lowbit::bfloat16>(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(a.value.add(yb.data(), 1, f), errc::non_finite_input);
  EXPECT_EQ(a.value.tokens(), 20u);
}

TEST(Hessian, EmptyAndBadArguments) {
  auto a = hessian_accumulator::create(4);
  ASSERT_TRUE(a.ok());
  std::vector<float> h(16, -1.0f);
  EXPECT_EQ(a.value.hessian(lowbit::span<float>(h)), errc::empty_input);
  EXPECT_EQ(h[0], -1.0f);
  EXPECT_TRUE(a.value.add(static_cast<const float*>(nullptr), 0, 4).ok());  // no token: ok
  EXPECT_EQ(a.value.tokens(), 0u);
  EXPECT_EQ(a.value.hessian(lowbit::span<float>(h)), errc::empty_input);
  std::vector<float> x(8, 1.0f);
  EXPECT_EQ(a.value.add(x.data(), 2, 3), errc::size_mismatch);
  EXPECT_EQ(a.value.add(static_cast<const float*>(nullptr), 2, 4), errc::bad_argument);
  EXPECT_EQ(a.value.add(lowbit::span<const float>(x.data(), 7)), errc::size_mismatch);
  std::vector<float> wrong(15);
  ASSERT_TRUE(a.value.add(x.data(), 2, 4).ok());
  EXPECT_EQ(a.value.hessian(lowbit::span<float>(wrong)), errc::size_mismatch);
  std::vector<char> raw(4 * sizeof(float) + 1);
  EXPECT_EQ(a.value.add(reinterpret_cast<const float*>(raw.data() + 1), 1, 4), errc::misaligned);
  EXPECT_EQ(hessian_accumulator::create(0).status, errc::bad_argument);
  EXPECT_EQ(hessian_accumulator::create(std::size_t{1} << 40).status, errc::bad_argument);
  hessian_accumulator moved = std::move(a.value);
  EXPECT_EQ(moved.tokens(), 2u);
  ASSERT_TRUE(moved.hessian(lowbit::span<float>(h)).ok());
  EXPECT_EQ(h[0], 2.0f);  // (2 / 2) * (1 + 1)
  moved.reset();
  EXPECT_EQ(moved.hessian(lowbit::span<float>(h)), errc::empty_input);
}

TEST(Hessian, BFloat16RowsAreTheirFloatValues) {
  const std::size_t f = 17, tokens = 300;
  const std::vector<float> x = activations(tokens, f, 11);
  std::vector<lowbit::bfloat16> xb(x.size());
  std::vector<float> xr(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = lowbit::encode<lowbit::bfloat16>(x[i]);
    xr[i] = static_cast<float>(xb[i]);
  }
  auto a = hessian_accumulator::create(f);
  auto b = hessian_accumulator::create(f);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a.value.add(xb.data(), tokens, f).ok());
  ASSERT_TRUE(b.value.add(xr.data(), tokens, f).ok());
  EXPECT_EQ(hessian_of(a.value), hessian_of(b.value));
}

}  // namespace
