// lowbit tests: streaming activation statistics (transforms/activation_stats.hpp): per-channel
// max |x| and mean |x| against direct loops, batches against one batch, the seeded reservoir
// (deterministic, uniform, independent of batch boundaries), merge, NaN rows named, bad input.
#include <gtest/gtest.h>

#include <lowbit/transforms/activation_stats.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using lowbit::activation_stats;
using lowbit::activation_stats_options;
using lowbit::errc;

std::vector<float> rows_of(std::size_t tokens, std::size_t features, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(tokens * features);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t f = 0; f < features; ++f) x[t * features + f] = d(gen) * (f % 5 == 0 ? 8.0f : 1.0f);
  return x;
}

std::vector<float> max_of(const activation_stats& a) {
  std::vector<float> v(a.features());
  EXPECT_TRUE(a.max_abs(lowbit::span<float>(v)).ok());
  return v;
}

std::vector<float> mean_of(const activation_stats& a) {
  std::vector<float> v(a.features());
  EXPECT_TRUE(a.mean_abs(lowbit::span<float>(v)).ok());
  return v;
}

std::vector<float> reservoir_of(const activation_stats& a) {
  const lowbit::span<const float> r = a.reservoir();
  return std::vector<float>(r.data(), r.data() + r.size());
}

// Whether every reservoir row is one of x's rows.
bool rows_come_from(const std::vector<float>& res, const std::vector<float>& x, std::size_t f) {
  for (std::size_t i = 0; i < res.size() / f; ++i) {
    bool found = false;
    for (std::size_t t = 0; t < x.size() / f && !found; ++t) {
      bool same = true;
      for (std::size_t j = 0; j < f && same; ++j) same = res[i * f + j] == x[t * f + j];
      found = same;
    }
    if (!found) return false;
  }
  return true;
}

TEST(ActivationStats, MaxAndMeanMatchDirectLoops) {
  const std::size_t tokens = 300, f = 37;
  const std::vector<float> x = rows_of(tokens, f, 1);
  auto a = activation_stats::create(f);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a.value.add(x.data(), tokens, f).ok());
  EXPECT_EQ(a.value.tokens(), tokens);
  const std::vector<float> mx = max_of(a.value), mean = mean_of(a.value);
  for (std::size_t j = 0; j < f; ++j) {
    float m = 0.0f;
    double s = 0.0;
    for (std::size_t t = 0; t < tokens; ++t) {
      m = std::fmax(m, std::fabs(x[t * f + j]));
      s += std::fabs(static_cast<double>(x[t * f + j]));
    }
    EXPECT_EQ(mx[j], m) << j;
    EXPECT_EQ(mean[j], static_cast<float>(s / tokens)) << j;
  }
}

TEST(ActivationStats, BatchesGiveTheOneBatchResult) {
  const std::size_t tokens = 1000, f = 16;
  const std::vector<float> x = rows_of(tokens, f, 2);
  activation_stats_options o;
  o.reservoir_capacity = 64;
  auto one = activation_stats::create(f, o);
  auto many = activation_stats::create(f, o);
  ASSERT_TRUE(one.ok() && many.ok());
  ASSERT_TRUE(one.value.add(lowbit::span<const float>(x)).ok());
  for (std::size_t t0 = 0, step = 1; t0 < tokens; t0 += step, step = step * 2 + 1) {
    const std::size_t nt = tokens - t0 < step ? tokens - t0 : step;
    ASSERT_TRUE(many.value.add(x.data() + t0 * f, nt, f).ok());
  }
  EXPECT_EQ(many.value.tokens(), tokens);
  EXPECT_EQ(max_of(one.value), max_of(many.value));
  EXPECT_EQ(mean_of(one.value), mean_of(many.value));  // the same float64 additions in the same order
  EXPECT_EQ(reservoir_of(one.value), reservoir_of(many.value));  // per row, not per batch
}

TEST(ActivationStats, ReservoirIsSeededBoundedAndFromTheRows) {
  const std::size_t tokens = 200, f = 3;
  const std::vector<float> x = rows_of(tokens, f, 3);
  activation_stats_options o;
  o.reservoir_capacity = 20;
  auto a = activation_stats::create(f, o), b = activation_stats::create(f, o);
  o.seed = 7;
  auto c = activation_stats::create(f, o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // Under capacity: every row, in order.
  ASSERT_TRUE(a.value.add(x.data(), 5, f).ok());
  EXPECT_EQ(a.value.reservoir_rows(), 5u);
  EXPECT_EQ(reservoir_of(a.value), std::vector<float>(x.begin(), x.begin() + 5 * f));
  ASSERT_TRUE(a.value.add(x.data() + 5 * f, tokens - 5, f).ok());
  ASSERT_TRUE(b.value.add(x.data(), tokens, f).ok());
  ASSERT_TRUE(c.value.add(x.data(), tokens, f).ok());
  EXPECT_EQ(a.value.reservoir_rows(), 20u);
  EXPECT_EQ(reservoir_of(a.value), reservoir_of(b.value));  // same seed: same sample
  EXPECT_NE(reservoir_of(a.value), reservoir_of(c.value));  // another seed: another sample
  EXPECT_TRUE(rows_come_from(reservoir_of(a.value), x, f));
  EXPECT_TRUE(rows_come_from(reservoir_of(c.value), x, f));
  // reset restarts the stream
  a.value.reset();
  EXPECT_EQ(a.value.tokens(), 0u);
  EXPECT_EQ(a.value.reservoir_rows(), 0u);
  ASSERT_TRUE(a.value.add(x.data(), tokens, f).ok());
  EXPECT_EQ(reservoir_of(a.value), reservoir_of(b.value));
}

TEST(ActivationStats, ReservoirIsUniform) {
  // Row t's value is t; over many seeds each of 100 rows is kept with probability 10 / 100.
  const std::size_t tokens = 100, seeds = 2000;
  std::vector<float> x(tokens);
  for (std::size_t t = 0; t < tokens; ++t) x[t] = static_cast<float>(t);
  std::vector<int> kept(tokens, 0);
  std::vector<int> kept_merged(tokens, 0);
  for (std::size_t s = 0; s < seeds; ++s) {
    activation_stats_options o;
    o.reservoir_capacity = 10;
    o.seed = s;
    auto a = activation_stats::create(1, o);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(a.value.add(x.data(), tokens, 1).ok());
    for (float v : reservoir_of(a.value)) ++kept[static_cast<std::size_t>(v)];
    // two shards of 30 and 70 rows merged
    o.seed = s + 100000;
    auto p = activation_stats::create(1, o);
    o.seed = s + 200000;
    auto q = activation_stats::create(1, o);
    ASSERT_TRUE(p.ok() && q.ok());
    ASSERT_TRUE(p.value.add(x.data(), 30, 1).ok());
    ASSERT_TRUE(q.value.add(x.data() + 30, 70, 1).ok());
    ASSERT_TRUE(p.value.merge(q.value).ok());
    ASSERT_EQ(p.value.reservoir_rows(), 10u);
    for (float v : reservoir_of(p.value)) ++kept_merged[static_cast<std::size_t>(v)];
  }
  // expected 200 each; binomial sd about 13.4: 5 sd either side
  for (std::size_t t = 0; t < tokens; ++t) {
    EXPECT_GT(kept[t], 133) << t;
    EXPECT_LT(kept[t], 267) << t;
    EXPECT_GT(kept_merged[t], 133) << t;
    EXPECT_LT(kept_merged[t], 267) << t;
  }
}

TEST(ActivationStats, MergeGivesTheOneStreamStatistics) {
  const std::size_t tokens = 500, f = 9;
  const std::vector<float> x = rows_of(tokens, f, 4);
  activation_stats_options o;
  o.reservoir_capacity = 32;
  auto all = activation_stats::create(f, o), a = activation_stats::create(f, o);
  o.seed = 9;
  auto b = activation_stats::create(f, o);
  ASSERT_TRUE(all.ok() && a.ok() && b.ok());
  ASSERT_TRUE(all.value.add(x.data(), tokens, f).ok());
  ASSERT_TRUE(a.value.add(x.data(), 180, f).ok());
  ASSERT_TRUE(b.value.add(x.data() + 180 * f, tokens - 180, f).ok());
  ASSERT_TRUE(a.value.merge(b.value).ok());
  EXPECT_EQ(a.value.tokens(), tokens);
  EXPECT_EQ(b.value.tokens(), tokens - 180);  // other unchanged
  EXPECT_EQ(max_of(a.value), max_of(all.value));
  const std::vector<float> m1 = mean_of(a.value), m2 = mean_of(all.value);
  for (std::size_t j = 0; j < f; ++j) EXPECT_NEAR(m1[j], m2[j], 1e-6f * m2[j]) << j;
  EXPECT_EQ(a.value.reservoir_rows(), 32u);
  EXPECT_TRUE(rows_come_from(reservoir_of(a.value), x, f));
  // merging into an empty accumulator copies
  auto e = activation_stats::create(f, o);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e.value.merge(b.value).ok());
  EXPECT_EQ(reservoir_of(e.value), reservoir_of(b.value));
  EXPECT_EQ(max_of(e.value), max_of(b.value));
  // mismatches
  auto g = activation_stats::create(f + 1, o);
  o.reservoir_capacity = 8;
  auto h = activation_stats::create(f, o);
  ASSERT_TRUE(g.ok() && h.ok());
  EXPECT_EQ(a.value.merge(g.value).code(), errc::size_mismatch);
  EXPECT_EQ(a.value.merge(h.value).code(), errc::size_mismatch);
  EXPECT_EQ(a.value.merge(a.value).code(), errc::size_mismatch);
}

TEST(ActivationStats, NonFiniteBatchIsRejectedNamingTheRow) {
  const std::size_t tokens = 10, f = 6;
  std::vector<float> x = rows_of(tokens, f, 5);
  auto a = activation_stats::create(f);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a.value.add(x.data(), 3, f).ok());
  const std::vector<float> before_max = max_of(a.value), before_mean = mean_of(a.value);
  const std::vector<float> before_res = reservoir_of(a.value);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> y = x;
    y[7 * f + 2] = bad;
    y[8 * f + 0] = bad;
    std::size_t row = 12345;
    EXPECT_EQ(a.value.add(y.data(), tokens, f, &row).code(), errc::non_finite_input);
    EXPECT_EQ(row, 7u);
    EXPECT_EQ(a.value.add(y.data(), tokens, f).code(), errc::non_finite_input);  // no out-parameter
    EXPECT_EQ(a.value.tokens(), 3u);
    EXPECT_EQ(max_of(a.value), before_max);
    EXPECT_EQ(mean_of(a.value), before_mean);
    EXPECT_EQ(reservoir_of(a.value), before_res);
  }
  std::size_t row = 12345;
  ASSERT_TRUE(a.value.add(x.data(), tokens, f, &row).ok());
  EXPECT_EQ(row, 12345u);  // written only on the error
}

TEST(ActivationStats, Bfloat16RowsDecodeExactly) {
  const std::size_t tokens = 40, f = 8;
  std::vector<float> x = rows_of(tokens, f, 6);
  std::vector<lowbit::bfloat16> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = lowbit::encode<lowbit::bfloat16>(x[i]);
    x[i] = static_cast<float>(xb[i]);
  }
  auto a = activation_stats::create(f), b = activation_stats::create(f);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a.value.add(x.data(), tokens, f).ok());
  ASSERT_TRUE(b.value.add(lowbit::span<const lowbit::bfloat16>(xb)).ok());
  EXPECT_EQ(max_of(a.value), max_of(b.value));
  EXPECT_EQ(mean_of(a.value), mean_of(b.value));
  EXPECT_EQ(reservoir_of(a.value), reservoir_of(b.value));
}

TEST(ActivationStats, BadInput) {
  EXPECT_EQ(activation_stats::create(0).status.code(), errc::bad_argument);
  activation_stats_options huge;
  huge.reservoir_capacity = static_cast<std::size_t>(-1) / 2;
  EXPECT_EQ(activation_stats::create(4, huge).status.code(), errc::bad_argument);
  auto a = activation_stats::create(4);
  ASSERT_TRUE(a.ok());
  std::vector<float> out(4, -1.0f), x(8, 1.0f);
  EXPECT_EQ(a.value.max_abs(lowbit::span<float>(out)).code(), errc::empty_input);
  EXPECT_EQ(a.value.mean_abs(lowbit::span<float>(out)).code(), errc::empty_input);
  EXPECT_EQ(out, std::vector<float>(4, -1.0f));
  EXPECT_EQ(a.value.add(x.data(), 2, 3).code(), errc::size_mismatch);
  EXPECT_EQ(a.value.add(lowbit::span<const float>(x.data(), 7)).code(), errc::size_mismatch);
  EXPECT_TRUE(a.value.add(static_cast<const float*>(nullptr), 0, 4).ok());  // no rows
  EXPECT_EQ(a.value.add(static_cast<const float*>(nullptr), 2, 4).code(), errc::bad_argument);
  EXPECT_EQ(a.value.add(x.data(), static_cast<std::size_t>(-1) / 2, 4).code(), errc::bad_argument);
  EXPECT_EQ(a.value.tokens(), 0u);
  ASSERT_TRUE(a.value.add(x.data(), 2, 4).ok());
  std::vector<float> small(3);
  EXPECT_EQ(a.value.max_abs(lowbit::span<float>(small)).code(), errc::size_mismatch);
  activation_stats moved;
  EXPECT_EQ(moved.add(x.data(), 2, 4).code(), errc::bad_argument);
  EXPECT_EQ(moved.merge(a.value).code(), errc::size_mismatch);
}

}  // namespace
