// Error metrics (metrics.hpp): hand-computed values, the degenerate cases (identical inputs give
// SQNR +inf, never NaN), the lesson's 8-weight MSE, the error codes, and the lane order of the
// reference reduction that SIMD kernels must reproduce.
#include <lowbit/metrics.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;

TEST(Metrics, HandComputed) {
  // r = [1, 2, 3], t = [1, 2, 5]: errors 0, 0, -2.
  const std::vector<float> r = {1.0f, 2.0f, 3.0f};
  const std::vector<float> t = {1.0f, 2.0f, 5.0f};
  EXPECT_DOUBLE_EQ(lowbit::mse(r, t).value, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(lowbit::sqnr_db(r, t).value, 10.0 * std::log10(14.0 / 4.0));  // 5.4407 dB
  EXPECT_NEAR(lowbit::sqnr_db(r, t).value, 5.44068, 1e-5);
  EXPECT_EQ(lowbit::max_abs_error(r, t).value, 2.0);
  EXPECT_DOUBLE_EQ(lowbit::relative_frobenius_error(r, t).value, std::sqrt(4.0 / 14.0));
  EXPECT_DOUBLE_EQ(lowbit::cosine_similarity(r, t).value, 20.0 / std::sqrt(14.0 * 30.0));  // 0.97590
  // Pointer forms and error_statistics agree.
  const auto s = lowbit::error_statistics(r.data(), 3, t.data(), 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value.n, 3u);
  EXPECT_EQ(s.value.ref_sq, 14.0);
  EXPECT_EQ(s.value.test_sq, 30.0);
  EXPECT_EQ(s.value.err_sq, 4.0);
  EXPECT_EQ(s.value.dot, 20.0);
  EXPECT_EQ(s.value.max_abs, 2.0);
  EXPECT_EQ(lowbit::mse(r.data(), 3, t.data(), 3).value, 4.0 / 3.0);  // the pointer form on its own
}

TEST(Metrics, LessonEightWeights) {
  // The 8-weight example quantized to INT4 with s = 0.2 (codes 2,-2,2,-3,3,-3,4,7): MSE 0.0042.
  const std::array<float, 8> w = {0.35f, -0.40f, 0.49f, -0.51f, 0.53f, -0.68f, 0.74f, 1.40f};
  const std::array<float, 8> q = {0.4f, -0.4f, 0.4f, -0.6f, 0.6f, -0.6f, 0.8f, 1.4f};
  EXPECT_NEAR(lowbit::mse(w, q).value, 0.0042, 1e-8);
}

TEST(Metrics, IdenticalAndZeroInputs) {
  const std::vector<float> a = {0.5f, -1.0f, 3.0f};
  EXPECT_EQ(lowbit::sqnr_db(a, a).value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(lowbit::mse(a, a).value, 0.0);
  EXPECT_EQ(lowbit::relative_frobenius_error(a, a).value, 0.0);
  EXPECT_EQ(lowbit::max_abs_error(a, a).value, 0.0);
  EXPECT_NEAR(lowbit::cosine_similarity(a, a).value, 1.0, 1e-15);
  const std::vector<float> z(3, 0.0f);
  EXPECT_EQ(lowbit::sqnr_db(z, z).value, std::numeric_limits<double>::infinity());  // identical: +inf, not NaN
  EXPECT_EQ(lowbit::relative_frobenius_error(z, z).value, 0.0);
  EXPECT_EQ(lowbit::cosine_similarity(z, z).value, 1.0);
  EXPECT_EQ(lowbit::sqnr_db(z, a).value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(lowbit::relative_frobenius_error(z, a).value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(lowbit::cosine_similarity(z, a).value, 0.0);
  EXPECT_EQ(lowbit::cosine_similarity(a, z).value, 0.0);
  // Everything quantized to zero: SQNR 0 dB, relative error 1.
  EXPECT_EQ(lowbit::sqnr_db(a, z).value, 0.0);
  EXPECT_EQ(lowbit::relative_frobenius_error(a, z).value, 1.0);
  // Opposite vectors.
  std::vector<float> neg;
  for (float v : a) neg.push_back(-v);
  EXPECT_NEAR(lowbit::cosine_similarity(a, neg).value, -1.0, 1e-15);
}

TEST(Metrics, Errors) {
  const std::vector<float> a = {1.0f, 2.0f};
  const std::vector<float> b = {1.0f, 2.0f, 3.0f};
  const std::vector<float> e;
  EXPECT_EQ(lowbit::mse(a, b).status.code(), errc::size_mismatch);
  EXPECT_EQ(lowbit::sqnr_db(e, e).status.code(), errc::empty_input);
  // docs/api.md's order: the shapes first (a non-empty and an empty input differ in length),
  // then emptiness, then the pointers.
  EXPECT_EQ(lowbit::cosine_similarity(a, e).status.code(), errc::size_mismatch);
  EXPECT_EQ(lowbit::mse(nullptr, 0, nullptr, 0).status.code(), errc::empty_input);
  EXPECT_EQ(lowbit::max_abs_error(a.data(), 2, nullptr, 2).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::max_abs_error(a.data(), 2, nullptr, 3).status.code(), errc::size_mismatch);
  lowbit_test::misaligned<float> odd(2);
  EXPECT_EQ(lowbit::sqnr_db(a.data(), 2, odd.data(), 2).status.code(), errc::misaligned);
  EXPECT_EQ(lowbit::sqnr_db(odd.data(), 2, nullptr, 2).status.code(), errc::bad_argument);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    const std::vector<float> c = {1.0f, bad};
    EXPECT_EQ(lowbit::mse(a, c).status.code(), errc::non_finite_input);
    EXPECT_EQ(lowbit::sqnr_db(c, a).status.code(), errc::non_finite_input);
    EXPECT_EQ(lowbit::max_abs_error(c, a).status.code(), errc::non_finite_input);
    EXPECT_EQ(lowbit::relative_frobenius_error(c, c).status.code(), errc::non_finite_input);
  }
  // The largest finite floats are fine: squares cannot overflow the double sums.
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> m = {big, -big};
  const std::vector<float> n = {-big, big};
  const auto s = lowbit::sqnr_db(m, n);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s.value, 10.0 * std::log10(0.25), 1e-12);
  EXPECT_EQ(lowbit::max_abs_error(m, n).value, 2.0 * static_cast<double>(big));
}

// The reduction order, written out independently: lane k takes i % 8 == k, then
// (l0+l4 + l2+l6) + (l1+l5 + l3+l7). The inputs make the order visible: a large value in lane 0
// and small ones that a different association would absorb differently.
TEST(Metrics, LaneOrderOfTheReference) {
  std::vector<float> r(37), t(37, 0.0f);
  std::uint32_t st = 11u;
  for (auto& v : r) {
    st = st * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(st)) / 2147483648.0f;
  }
  r[0] = 1.0e8f;
  double lane[8] = {};
  for (std::size_t i = 0; i < r.size(); ++i) lane[i % 8] += static_cast<double>(r[i]) * r[i];
  const double expect = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  lowbit::error_sums s;
  lowbit::error_sums_ref(r.data(), t.data(), r.size(), s);
  EXPECT_EQ(s.ref_sq, expect);
  EXPECT_EQ(s.err_sq, expect);
  EXPECT_EQ(s.test_sq, 0.0);
  // Accumulating in two calls adds the per-call totals.
  lowbit::error_sums two;
  lowbit::error_sums_ref(r.data(), t.data(), 16, two);
  lowbit::error_sums_ref(r.data() + 16, t.data() + 16, 21, two);
  EXPECT_EQ(two.n, 37u);
  EXPECT_NEAR(two.ref_sq, expect, 1e-6);
}

}  // namespace
