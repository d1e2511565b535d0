// Encoding from double, float16 and bfloat16 sources rounds once, straight from the source value
// (no double rounding through float); convert() in bulk equals encode/decode element by element.
//
// Expected values come from the reference rounding of tests/format_tables.hpp (hand-written
// tables, exact double arithmetic), never from lowbit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <lowbit/lowbit.hpp>

#include "format_tables.hpp"
#include "support.hpp"

namespace {

using lowbit::overflow;
using lowbit::rounding;
using lowbit_test::ref_format;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%02llX", static_cast<unsigned long long>(v));
  return buf;
}
std::string hexfloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}
using lowbit_test::double_bits;
using lowbit_test::double_from_bits;
using lowbit_test::float_bits;
using lowbit_test::float_from_bits;

struct variant {
  rounding rm;
  std::uint32_t r;
  bool hashed;  // r derived from the input
};
const variant variants[] = {
    {rounding::nearest_even, 0, false},        {rounding::toward_zero, 0, false},
    {rounding::toward_pos_inf, 0, false},      {rounding::nearest_away, 0, false},
    {rounding::nearest_toward_zero, 0, false}, {rounding::stochastic, 0, false},
    {rounding::stochastic, 1, false},          {rounding::stochastic, 0x7FFFFFFFu, false},
    {rounding::stochastic, 0x80000000u, false}, {rounding::stochastic, 0xFFFFFFFFu, false},
    {rounding::stochastic, 0, true},
};

// ------------------------------------------------------------------------------------------------
// Doubles.

// The spacing of float32 at x > 0 (2^-149 in float's subnormal range).
double float_ulp(double x) {
  const int e = std::ilogb(x);
  return std::ldexp(1.0, (e < -126 ? -126 : e) - 23);
}

// 100000 doubles aimed at format f: raw random bit patterns (NaN, Inf, far out of range), random
// values across and just beyond the format's range, and the double-rounding traps: a tie between
// two neighbours (value[i], value[i+1], the last one beyond_max) plus or minus a tiny delta, far
// below half a float ulp, so that (float)x is the tie itself while x is not.
std::vector<double> doubles_for(const ref_format& f, std::mt19937_64& rng) {
  std::vector<double> xs;
  const double smallest = f.value[0] > 0 ? f.value[0] : f.value[1];
  const int emin = std::ilogb(smallest) - 4, emax = std::ilogb(f.value.back()) + 2;
  std::uniform_int_distribution<int> exponent(emin, emax);
  std::uniform_int_distribution<int> pair(0, f.n() - 1);
  std::uniform_int_distribution<int> depth(2, 27);
  for (int k = 0; k < 10000; ++k) xs.push_back(double_from_bits(rng()));
  for (int k = 0; k < 40000; ++k) {
    const double m = 1.0 + std::ldexp(static_cast<double>(rng() >> 12), -52);
    const double x = std::ldexp(m, exponent(rng));
    xs.push_back((rng() & 1) != 0 ? -x : x);
  }
  for (int k = 0; k < 50000; ++k) {
    const int i = pair(rng);
    const double lo = f.ext[static_cast<std::size_t>(i)], hi = f.ext[static_cast<std::size_t>(i) + 1];
    const double mid = lo + (hi - lo) / 2;
    double x = mid;
    switch (rng() % 5) {
      case 0: break;  // the tie itself
      case 1: x = std::nextafter(mid, 0.0); break;
      case 2: x = std::nextafter(mid, HUGE_VAL); break;
      default: {
        const double delta = std::ldexp(float_ulp(mid), -depth(rng));
        x = (rng() & 1) != 0 ? mid + delta : mid - delta;
      }
    }
    xs.push_back((rng() & 1) != 0 ? -x : x);
  }
  return xs;
}

template <class T>
void check_doubles(const ref_format& f, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<double> xs = doubles_for(f, rng);
  long mismatches = 0, traps = 0;
  for (double x : xs) {
    // A trap: rounding x through float first would give another answer (found by the reference
    // alone). The sample must contain plenty of them, or it tests nothing about double rounding.
    if (lowbit_test::ref_encode(f, static_cast<double>(static_cast<float>(x)), overflow::saturate,
                                rounding::nearest_even) !=
        lowbit_test::ref_encode(f, x, overflow::saturate, rounding::nearest_even))
      ++traps;
    for (const variant& v : variants) {
      const std::uint32_t r = v.hashed ? lowbit_test::hash32(static_cast<std::uint32_t>(double_bits(x) >> 17)) : v.r;
      for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
        const std::uint32_t want = lowbit_test::ref_encode(f, x, ov, v.rm, r);
        const std::uint32_t got = lowbit::encode<T>(x, ov, v.rm, r).bits();
        if (got != want && ++mismatches <= 10)
          ADD_FAILURE() << f.name << ": encode(double " << hexfloat(x) << " = " << hex(double_bits(x))
                        << "), rounding " << static_cast<int>(v.rm) << " r " << hex(r) << ", overflow "
                        << static_cast<int>(ov) << ": got " << hex(got) << ", expected " << hex(want);
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << f.name;
  EXPECT_GT(traps, 5000) << f.name << ": too few double-rounding traps in the sample";
}

TEST(conversion_sources, double_rounding_example_from_research) {
  // The double-rounding case (docs/formats.md section 5): 1.0625 + 2^-30 lies just above the E4M3 tie between 1.0
  // (0x38) and 1.125 (0x39), so the correct result is 0x39. Through float, the 2^-30 is lost
  // (float keeps 2^-23 at 1.0), 1.0625 is an exact tie, and ties-to-even gives 0x38.
  const double x = 1.0625 + 0x1p-30;
  EXPECT_EQ(static_cast<float>(x), 1.0625f);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(x).bits(), 0x39u);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(static_cast<float>(x)).bits(), 0x38u);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(1.0625 - 0x1p-30).bits(), 0x38u);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(-1.0625 - 0x1p-30).bits(), 0xB9u);
  // The same for the other formats' ties: E2M1 0.25 (0 | 0.5), bfloat16 1 + 2^-8, float16 1 + 2^-11.
  EXPECT_EQ(lowbit::encode<lowbit::float4_e2m1fn>(0.25 + 0x1p-40).bits(), 0x1u);
  EXPECT_EQ(lowbit::encode<lowbit::bfloat16>(1.0 + 0x1p-8 + 0x1p-40).bits(), 0x3F81u);
  EXPECT_EQ(lowbit::encode<lowbit::float16>(1.0 + 0x1p-11 + 0x1p-40).bits(), 0x3C01u);
  // The constructor from double rounds once too.
  EXPECT_EQ(lowbit::float8_e4m3fn(x).bits(), 0x39u);
  // Doubles far beyond float's range.
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(1e300).bits(), 0x7Eu);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(1e300, overflow::non_saturate).bits(), 0x7Fu);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e4m3fn>(-1e-300).bits(), 0x80u);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e8m0fnu>(1e-300).bits(), 0x00u);
  EXPECT_EQ(lowbit::encode<lowbit::float8_e8m0fnu>(1e300, overflow::non_saturate).bits(), 0xFFu);
}

#define LOWBIT_DOUBLE_TEST(type, make, seed) \
  TEST(conversion_sources, double_to_##type) { check_doubles<lowbit::type>(lowbit_test::make(), seed); }
LOWBIT_DOUBLE_TEST(float8_e4m3fn, make_e4m3fn, 1)
LOWBIT_DOUBLE_TEST(float8_e5m2, make_e5m2, 2)
LOWBIT_DOUBLE_TEST(float8_e4m3fnuz, make_e4m3fnuz, 3)
LOWBIT_DOUBLE_TEST(float8_e5m2fnuz, make_e5m2fnuz, 4)
LOWBIT_DOUBLE_TEST(float6_e2m3fn, make_e2m3fn, 5)
LOWBIT_DOUBLE_TEST(float6_e3m2fn, make_e3m2fn, 6)
LOWBIT_DOUBLE_TEST(float4_e2m1fn, make_e2m1fn, 7)
LOWBIT_DOUBLE_TEST(float8_e8m0fnu, make_e8m0fnu, 8)
LOWBIT_DOUBLE_TEST(float16, make_float16, 9)
LOWBIT_DOUBLE_TEST(bfloat16, make_bfloat16, 10)

// ------------------------------------------------------------------------------------------------
// float16 and bfloat16 sources.
//
// Every float16 and every bfloat16 value is exactly a float32: float16 has an 11-bit significand
// and exponents 2^-24 .. 2^15, bfloat16 is the top half of a float32 bit pattern. So the float
// obtained from the source code (decoded here by definition, not by lowbit) is the same real
// number, and encoding it rounds that number once, like encoding the 16-bit value directly must.
// The two paths must agree bit for bit, and both must agree with the reference.

float float16_as_float(std::uint32_t h) {  // by definition
  const bool neg = (h & 0x8000u) != 0;
  if (((h >> 10) & 0x1Fu) == 0x1Fu) {
    if ((h & 0x3FFu) == 0) return neg ? -HUGE_VALF : HUGE_VALF;
    return std::copysign(std::numeric_limits<float>::quiet_NaN(), neg ? -1.0f : 1.0f);
  }
  return static_cast<float>(lowbit_test::float16_value(h));
}
float bfloat16_as_float(std::uint32_t h) { return float_from_bits(h << 16); }

template <class T, class Source>
void check_16bit_source(const ref_format& f, float (*as_float)(std::uint32_t)) {
  long mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const Source s = Source::from_bits(static_cast<std::uint16_t>(h));
    const float x = as_float(h);
    for (const variant& v : variants) {
      const std::uint32_t r = v.hashed ? lowbit_test::hash32(h) : v.r;
      for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
        const std::uint32_t direct = lowbit::encode<T>(s, ov, v.rm, r).bits();
        const std::uint32_t via_float = lowbit::encode<T>(x, ov, v.rm, r).bits();
        const std::uint32_t want = lowbit_test::ref_encode(f, x, ov, v.rm, r);
        if ((direct != via_float || direct != want) && ++mismatches <= 10)
          ADD_FAILURE() << f.name << " from 16-bit code " << hex(h) << " (" << hexfloat(x) << "), rounding "
                        << static_cast<int>(v.rm) << " r " << hex(r) << ", overflow " << static_cast<int>(ov)
                        << ": direct " << hex(direct) << ", via float " << hex(via_float) << ", reference "
                        << hex(want);
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << f.name;
}

#define LOWBIT_16BIT_SOURCE_TEST(type, make)                                                             \
  TEST(conversion_sources, float16_to_##type) {                                                          \
    check_16bit_source<lowbit::type, lowbit::float16>(lowbit_test::make(), float16_as_float);           \
  }                                                                                                      \
  TEST(conversion_sources, bfloat16_to_##type) {                                                         \
    check_16bit_source<lowbit::type, lowbit::bfloat16>(lowbit_test::make(), bfloat16_as_float);         \
  }
LOWBIT_16BIT_SOURCE_TEST(float8_e4m3fn, make_e4m3fn)
LOWBIT_16BIT_SOURCE_TEST(float8_e5m2, make_e5m2)
LOWBIT_16BIT_SOURCE_TEST(float8_e4m3fnuz, make_e4m3fnuz)
LOWBIT_16BIT_SOURCE_TEST(float8_e5m2fnuz, make_e5m2fnuz)
LOWBIT_16BIT_SOURCE_TEST(float6_e2m3fn, make_e2m3fn)
LOWBIT_16BIT_SOURCE_TEST(float6_e3m2fn, make_e3m2fn)
LOWBIT_16BIT_SOURCE_TEST(float4_e2m1fn, make_e2m1fn)
LOWBIT_16BIT_SOURCE_TEST(float8_e8m0fnu, make_e8m0fnu)
// And across: float16 -> bfloat16 rounds (11 -> 8 bits), bfloat16 -> float16 rounds and overflows.
TEST(conversion_sources, float16_to_bfloat16) {
  check_16bit_source<lowbit::bfloat16, lowbit::float16>(lowbit_test::make_bfloat16(), float16_as_float);
}
TEST(conversion_sources, bfloat16_to_float16) {
  check_16bit_source<lowbit::float16, lowbit::bfloat16>(lowbit_test::make_float16(), bfloat16_as_float);
}

// ------------------------------------------------------------------------------------------------
// convert(): bulk results equal element-wise encode / decode, for odd lengths, every source type
// and policy; nothing is written past n.

const std::size_t odd_lengths[] = {1, 3, 5, 7, 9, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257, 1001, 4097};

// Random floats: raw bit patterns half of the time (NaN, Inf, subnormals, huge), otherwise values
// of magnitude 2^-30 .. 2^20 where every small format has its codes.
float random_float(std::mt19937_64& rng) {
  if ((rng() & 1) != 0) return float_from_bits(static_cast<std::uint32_t>(rng()));
  const double m = 1.0 + std::ldexp(static_cast<double>(rng() >> 40), -24);
  const double x = std::ldexp(m, static_cast<int>(rng() % 51) - 30);
  return static_cast<float>((rng() & 1) != 0 ? -x : x);
}

template <class From>
From source_from(float x, std::mt19937_64& rng);
template <>
float source_from<float>(float x, std::mt19937_64&) {
  return x;
}
template <>
double source_from<double>(float x, std::mt19937_64& rng) {
  // Extra low bits below float precision, so double sources are not just floats.
  return std::isfinite(x) ? static_cast<double>(x) * (1.0 + std::ldexp(static_cast<double>(rng() >> 40), -50)) : x;
}
template <>
lowbit::float16 source_from<lowbit::float16>(float, std::mt19937_64& rng) {
  return lowbit::float16::from_bits(static_cast<std::uint16_t>(rng()));
}
template <>
lowbit::bfloat16 source_from<lowbit::bfloat16>(float, std::mt19937_64& rng) {
  return lowbit::bfloat16::from_bits(static_cast<std::uint16_t>(rng()));
}

template <class T, class From>
void check_bulk(std::uint64_t seed) {
  using storage = typename T::storage_type;
  std::mt19937_64 rng(seed);
  const storage sentinel = static_cast<storage>(0xA5A5u & T::format::code_mask);
  lowbit::policy policies[] = {lowbit::presets::cuda_satfinite(), lowbit::presets::cuda_nosat(),
                               lowbit::presets::ml_dtypes(), lowbit::presets::pytorch()};
  for (std::size_t n : odd_lengths) {
    std::vector<From> src;
    for (std::size_t i = 0; i < n; ++i) src.push_back(source_from<From>(random_float(rng), rng));
    std::vector<std::uint32_t> random_bits(n);
    for (auto& r : random_bits) r = static_cast<std::uint32_t>(rng());

    for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
      for (rounding rm : {rounding::nearest_even, rounding::toward_zero, rounding::toward_pos_inf,
                          rounding::nearest_away, rounding::nearest_toward_zero, rounding::stochastic}) {
        for (const bool with_bits : {true, false}) {
          if (!with_bits && rm != rounding::stochastic) continue;
          std::vector<T> dst(n + 1, T::from_bits(sentinel));
          lowbit::convert(src.data(), dst.data(), n, ov, rm, with_bits ? random_bits.data() : nullptr);
          for (std::size_t i = 0; i < n; ++i) {
            // Documented: a null random_bits means 0 for every element.
            const std::uint32_t r = with_bits ? random_bits[i] : 0u;
            ASSERT_EQ(unsigned(dst[i].bits()), unsigned(lowbit::encode<T>(src[i], ov, rm, r).bits()))
                << "n " << n << ", element " << i << ", overflow " << static_cast<int>(ov) << ", rounding "
                << static_cast<int>(rm) << ", random bits " << (with_bits ? "given" : "null");
          }
          ASSERT_EQ(unsigned(dst[n].bits()), unsigned(sentinel)) << "convert wrote past n = " << n;
        }
      }
    }
    for (const lowbit::policy& p : policies) {
      std::vector<T> dst(n + 1, T::from_bits(sentinel));
      lowbit::convert(src.data(), dst.data(), n, p);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(unsigned(dst[i].bits()), unsigned(lowbit::encode<T>(src[i], p).bits())) << "n " << n << ", i " << i;
      ASSERT_EQ(unsigned(dst[n].bits()), unsigned(sentinel));
    }

    // Decode: every code of the format, in a random order, n at a time.
    std::vector<T> codes(n);
    for (auto& c : codes) c = T::from_bits(static_cast<storage>(rng()));
    std::vector<float> out(n + 1, 12345.0f);
    lowbit::convert(codes.data(), out.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(lowbit::decode(codes[i]))) << "decode, n " << n << ", i " << i;
    ASSERT_EQ(out[n], 12345.0f) << "decode wrote past n = " << n;
  }
}

template <class T>
void check_bulk_all_sources(std::uint64_t seed) {
  check_bulk<T, float>(seed);
  check_bulk<T, double>(seed + 1);
  check_bulk<T, lowbit::float16>(seed + 2);
  check_bulk<T, lowbit::bfloat16>(seed + 3);
}

#define LOWBIT_BULK_TEST(type, seed) \
  TEST(conversion_sources, convert_bulk_##type) { check_bulk_all_sources<lowbit::type>(seed); }
LOWBIT_BULK_TEST(float8_e4m3fn, 100)
LOWBIT_BULK_TEST(float8_e5m2, 200)
LOWBIT_BULK_TEST(float8_e4m3fnuz, 300)
LOWBIT_BULK_TEST(float8_e5m2fnuz, 400)
LOWBIT_BULK_TEST(float6_e2m3fn, 500)
LOWBIT_BULK_TEST(float6_e3m2fn, 600)
LOWBIT_BULK_TEST(float4_e2m1fn, 700)
LOWBIT_BULK_TEST(float8_e8m0fnu, 800)
LOWBIT_BULK_TEST(float16, 900)
LOWBIT_BULK_TEST(bfloat16, 1000)

// Bulk results also match the reference (not just the scalar encode), on one long array.
TEST(conversion_sources, convert_bulk_matches_reference) {
  const ref_format f = lowbit_test::make_e4m3fn();
  std::mt19937_64 rng(42);
  const std::size_t n = 100001;
  std::vector<float> src(n);
  for (auto& x : src) x = random_float(rng);
  std::vector<lowbit::float8_e4m3fn> dst(n);
  for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
    lowbit::convert(src.data(), dst.data(), n, ov, rounding::nearest_even);
    long mismatches = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (dst[i].bits() != lowbit_test::ref_encode(f, src[i], ov, rounding::nearest_even) && ++mismatches <= 10)
        ADD_FAILURE() << "element " << i << " " << hexfloat(src[i]) << ": got " << hex(dst[i].bits());
    EXPECT_EQ(mismatches, 0);
  }
}

}  // namespace
