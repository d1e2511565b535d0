// Integer and long double inputs round once, exactly (no trip through double).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include <lowbit/lowbit.hpp>

using namespace lowbit;

TEST(wide_sources, integers_above_2_pow_53_round_once) {
  // 0x5FFF...F = 1.0111...1 * 2^62: below the E8M0 midpoint 1.5 * 2^62, so 2^62 (0xBD).
  // Through double it first becomes exactly 1.5 * 2^62 and then ties up to 2^63 (0xBE).
  EXPECT_EQ(float8_e8m0fnu(std::uint64_t{0x5FFFFFFFFFFFFFFF}).bits(), 0xBD);
  // 2^62 + 2^55 + 2^54 - 1 is just below the bfloat16 midpoint 2^62 + 2^55 + 2^54,
  // so it rounds down to 0x5E81 (1.0000001b * 2^62); via double it would tie up to 0x5E82.
  EXPECT_EQ(bfloat16(std::int64_t{(1ll << 62) + (1ll << 55) + (1ll << 54) - 1}).bits(), 0x5E81);
  EXPECT_EQ(encode<float8_e4m3fn>(std::numeric_limits<std::int64_t>::min()).bits(), 0xFE);  // -2^63 saturates
  EXPECT_EQ(encode<float8_e4m3fn>(std::numeric_limits<std::int64_t>::min(), overflow::non_saturate).bits(), 0xFF);
  EXPECT_EQ(float8_e4m3fn(-2).bits(), 0xC0);
  EXPECT_EQ(float8_e4m3fn(0u).bits(), 0x00);
}

TEST(wide_sources, long_double_rounds_once) {
  if (std::numeric_limits<long double>::digits <= std::numeric_limits<double>::digits)
    GTEST_SKIP() << "long double is double here";
  const long double tiny = std::ldexp(1.0L, -60);
  // 1.0625 is the E4M3 tie between 1 (0x38) and 1.125 (0x39); a hair above must go up even
  // though the nearest double is the tie itself.
  EXPECT_EQ(float8_e4m3fn(1.0625L + tiny).bits(), 0x39);
  EXPECT_EQ(float8_e4m3fn(-1.0625L - tiny).bits(), 0xB9);
  EXPECT_EQ(float8_e4m3fn(1.0625L - tiny).bits(), 0x38);
}

TEST(wide_sources, long_double_beyond_double_range) {
  if (std::numeric_limits<long double>::max_exponent <= std::numeric_limits<double>::max_exponent)
    GTEST_SKIP() << "long double has double's range here";
  const long double huge = std::ldexp(1.0L, 2000);
  const long double small = std::ldexp(1.0L, -2000);
  EXPECT_EQ(float8_e4m3fn(huge).bits(), 0x7E);
  EXPECT_EQ(encode<float8_e4m3fn>(huge, overflow::non_saturate).bits(), 0x7F);
  // A finite value never overflows to NaN under round toward zero.
  EXPECT_EQ(encode<float8_e4m3fn>(huge, overflow::non_saturate, rounding::toward_zero).bits(), 0x7E);
  EXPECT_EQ(encode<float8_e4m3fn>(small, overflow::saturate, rounding::toward_pos_inf).bits(), 0x01);
  EXPECT_EQ(encode<float8_e4m3fn>(-small).bits(), 0x80);
  EXPECT_EQ(encode<float8_e4m3fn>(small).bits(), 0x00);
}

TEST(wide_sources, fnuz_nan_decodes_without_sign) {
  const float f = decode(float8_e4m3fnuz::from_bits(0x80));
  EXPECT_TRUE(std::isnan(f));
  EXPECT_FALSE(std::signbit(f));
}
