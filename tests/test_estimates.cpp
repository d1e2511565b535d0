// Estimates (estimates.hpp): the roofline, KV-cache and paired-evaluation arithmetic, checked
// against the lesson's worked numbers (docs/lesson.md) and against the formulas written out here
// independently, plus every bad argument.
#include <lowbit/estimates.hpp>
#include <lowbit/schemes/integer.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

using lowbit::errc;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

TEST(Roofline, RidgePointsOfTheLesson) {
  // Lesson 000 section 5.2: A100 153 / 306, H100 295 / 591 FLOP/B.
  EXPECT_NEAR(lowbit::ridge_point(312, 2039).value, 153.016, 1e-3);
  EXPECT_NEAR(lowbit::ridge_point(624, 2039).value, 306.032, 1e-3);
  EXPECT_NEAR(lowbit::ridge_point(989, 3350).value, 295.224, 1e-3);
  EXPECT_NEAR(lowbit::ridge_point(1979, 3350).value, 590.746, 1e-3);
}

TEST(Roofline, IntensityAndComputeBoundBatch) {
  // INT4 G=128, symmetric, fp16 scales (no zero-points) reads 0.5 * (1 + 1/32) bytes per weight.
  const lowbit::int_params p = lowbit::int_presets::gptq(4, 128);  // symmetric: no zero-points
  const lowbit::result<lowbit::storage> s = lowbit::int_storage_for(p, 4096, 4096);
  ASSERT_TRUE(s.ok());
  const double w4 = static_cast<double>(s.value.total_bytes()) / static_cast<double>(s.value.elements);
  EXPECT_DOUBLE_EQ(w4, 0.515625);
  EXPECT_NEAR(lowbit::decode_intensity(1, w4).value, 4.0 / 1.03125, 1e-12);    // 3.88
  EXPECT_NEAR(lowbit::decode_intensity(32, w4).value, 124.12, 0.01);           // the 70B exercise
  EXPECT_DOUBLE_EQ(lowbit::decode_intensity(32, 1.0).value, 64.0);
  // W4A16 reaches the FP16 ceiling at B = 39.4 (A100) and 76.1 (H100).
  EXPECT_NEAR(lowbit::compute_bound_batch(w4, 312, 2039).value, 39.45, 0.01);
  EXPECT_NEAR(lowbit::compute_bound_batch(w4, 989, 3350).value, 76.11, 0.01);
  // The crossover B*: an 8-bit format (1 byte per weight) at the 16-bit peak.
  EXPECT_NEAR(lowbit::compute_bound_batch(1.0, 312, 2039).value, 76.508, 1e-3);
  EXPECT_NEAR(lowbit::compute_bound_batch(1.0, 989, 3350).value, 147.612, 1e-3);
  // Written out: B = peak * bpp / (2 * bandwidth).
  EXPECT_DOUBLE_EQ(lowbit::compute_bound_batch(0.75, 500, 1000).value, 500e12 * 0.75 / (2 * 1000e9));
}

TEST(Roofline, DecodeTimeAndPeaks) {
  // Lesson 003: 16 GB at 3,352 GB/s is 4.77 ms; 4.87 GB is 1.45 ms.
  EXPECT_NEAR(lowbit::weight_read_seconds(16e9, 3352).value * 1e3, 4.773, 1e-3);
  EXPECT_NEAR(lowbit::weight_read_seconds(4.87e9, 3352).value * 1e3, 1.4529, 1e-4);
  EXPECT_EQ(lowbit::weight_read_seconds(0, 3352).value, 0.0);
  // H100 SXM5: 132 SMs at 1830 MHz, 4096 dense FP16 and 8192 FP8 FLOPs per clock per SM.
  EXPECT_NEAR(lowbit::tensor_peak_tflops(132, 4096, 1.83).value, 989.4, 0.05);
  EXPECT_NEAR(lowbit::tensor_peak_tflops(132, 8192, 1.83).value, 1978.9, 0.05);
}

TEST(Roofline, BadArguments) {
  for (const double bad : {0.0, -1.0, inf, nan}) {
    EXPECT_EQ(lowbit::ridge_point(bad, 1).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::ridge_point(1, bad).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::decode_intensity(bad, 1).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::decode_intensity(1, bad).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::compute_bound_batch(bad, 1, 1).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::compute_bound_batch(1, bad, 1).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::weight_read_seconds(1, bad).status.code(), errc::bad_argument);
    EXPECT_EQ(lowbit::tensor_peak_tflops(bad, 1, 1).status.code(), errc::bad_argument);
  }
  EXPECT_EQ(lowbit::weight_read_seconds(-1, 1).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::weight_read_seconds(nan, 1).status.code(), errc::bad_argument);
}

TEST(KvCache, Llama3At128kIs16GiB) {
  const lowbit::kv_cache_shape llama3_8b{32, 8, 128};
  const lowbit::result<std::uint64_t> bf16 = lowbit::kv_cache_bytes(llama3_8b, 131072, 16);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16.value, std::uint64_t{16} << 30);
  EXPECT_EQ(lowbit::kv_cache_bytes(llama3_8b, 131072, 8).value, std::uint64_t{8} << 30);
  // One token: 2 x 32 x 8 x 128 x 2 bytes = 131072 bytes.
  EXPECT_EQ(lowbit::kv_cache_bytes(llama3_8b, 1, 16).value, 131072u);
  // Odd bit counts round up to a byte: 2 x 1 x 1 x 1 x 1 x 3 bits = 6 bits -> 1 byte.
  EXPECT_EQ(lowbit::kv_cache_bytes({1, 1, 1}, 1, 3).value, 1u);
  EXPECT_EQ(lowbit::kv_cache_bytes(llama3_8b, 0, 16).value, 0u);
}

TEST(KvCache, OverflowAndBadWidths) {
  const lowbit::kv_cache_shape huge{1u << 20, 1u << 20, 1u << 20};
  EXPECT_EQ(lowbit::kv_cache_bytes(huge, 1u << 20, 16).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::kv_cache_bytes({32, 8, 128}, 1, 0).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::kv_cache_bytes({32, 8, 128}, 1, 65).status.code(), errc::bad_argument);
}

TEST(KvCache, SequencesThatFit) {
  // Lesson 003: an 80 GB GPU, 16 GB of weights, vLLM's 0.9 reserve: 3 sequences of 16 GiB in
  // BF16, 6 in FP8. Without the reserve FP8 would give 7: the reserve is what the lesson assumes.
  const double seq = 17179869184.0;
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 0.9, 16e9, seq).value, 3u);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 0.9, 16e9, seq / 2).value, 6u);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 1.0, 16e9, seq / 2).value, 7u);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 0.9, 80e9, seq).value, 0u);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 1.5, 16e9, seq).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 0.9, -1, seq).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::sequences_that_fit(80e9, 0.9, 16e9, 0).status.code(), errc::bad_argument);
}

TEST(PairedEvaluation, TheLessonsInterval) {
  const lowbit::result<lowbit::paired_counts> c = lowbit::paired_counts_from_flips(1000, 56, -0.4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value.gains, 26u);
  EXPECT_EQ(c.value.losses, 30u);
  const lowbit::result<lowbit::interval> ci = lowbit::paired_difference_interval(c.value);
  ASSERT_TRUE(ci.ok());
  EXPECT_NEAR(ci.value.low, -1.866, 5e-4);
  EXPECT_NEAR(ci.value.high, 1.066, 5e-4);
  // Written out: d = +1 x 26, -1 x 30, 0 x 944; mean -0.004, E[d^2] = 0.056.
  const double half = lowbit::z_95 * std::sqrt((0.056 - 0.004 * 0.004) / 1000);
  EXPECT_NEAR(ci.value.high - ci.value.low, 200 * half, 1e-12);
  // No flips: a zero-width interval at 0.
  const lowbit::result<lowbit::interval> none = lowbit::paired_difference_interval({100, 0, 0});
  EXPECT_EQ(none.value.low, 0.0);
  EXPECT_EQ(none.value.high, 0.0);
}

TEST(PairedEvaluation, BadArguments) {
  EXPECT_EQ(lowbit::paired_counts_from_flips(0, 0, 0).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::paired_counts_from_flips(10, 11, 0).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::paired_counts_from_flips(1000, 56, -0.35).status.code(), errc::bad_argument);  // 3.5 questions
  EXPECT_EQ(lowbit::paired_counts_from_flips(1000, 56, -0.3).status.code(), errc::bad_argument);   // odd: 59/2
  EXPECT_EQ(lowbit::paired_counts_from_flips(1000, 2, 1.0).status.code(), errc::bad_argument);     // net 10 > flips
  EXPECT_EQ(lowbit::paired_counts_from_flips(1000, 56, nan).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::paired_difference_interval({0, 0, 0}).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::paired_difference_interval({10, 6, 5}).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::paired_difference_interval({10, 1, 1}, 0.0).status.code(), errc::bad_argument);
}

}  // namespace
