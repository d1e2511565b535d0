// Exhaustive: lowbit's encoder against an independent reference on every float32 input.
//
//  * nearest_even: every one of the 2^32 float32 bit patterns, into each of the 8 small formats
//    and float16 / bfloat16, under overflow::saturate and overflow::non_saturate.
//  * the other rounding modes (toward_zero, toward_pos_inf, nearest_away, nearest_toward_zero,
//    stochastic with fixed and hashed random bits): every float16 value as input, and every 97th
//    float32 bit pattern (both signs), both overflow modes.
//
// The reference (tests/format_tables.hpp) knows each format only as the sorted list of its
// finite non-negative values, typed by hand from the specs (float16 and bfloat16: decoded from
// their definition with plain arithmetic), plus hand-written special codes. It rounds |x| by
// locating it between two neighbours and applying the rounding rule with exact double
// arithmetic; nothing in it comes from lowbit's codec.
//
// Speed: the positive patterns are split into one contiguous chunk per thread. Positive floats
// are ordered like their bit patterns, so each thread walks its chunk upward and keeps the floor
// index into the sorted table, advancing it when x passes the next value: O(1) per input. The
// negative pattern of each positive one is checked in the same step; its expected code follows
// from the positive one by symmetry (sign applied, fnuz has no -0, E8M0 converts |x|, the
// non-saturating overflow codes are hand-written per sign).
//
// LOWBIT_EXHAUSTIVE_STRIDE=k checks every k-th pattern only (development runs); default 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include <lowbit/lowbit.hpp>

#include "format_tables.hpp"
#include "support.hpp"

namespace {

using lowbit::overflow;
using lowbit::rounding;
using lowbit_test::ref_format;

using lowbit_test::float_from_bits;

using lowbit_test::stride_from_env;
using lowbit_test::thread_count;

// One checked conversion that went wrong; `what` names the mode.
struct mismatch {
  std::uint32_t input = 0;
  const char* what = "";
  std::uint32_t got = 0;
  std::uint32_t expected = 0;
};

struct tally {
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  bool any = false;
  mismatch first;  // the one with the smallest magnitude bits, then the smallest bits
  static std::uint32_t order(std::uint32_t input) { return (input << 1) | (input >> 31); }  // |x|, then sign
  void keep(const mismatch& m) {
    if (!any || order(m.input) < order(first.input)) first = m;
    any = true;
  }
  void add(std::uint32_t input, const char* what, std::uint32_t got, std::uint32_t expected) {
    ++mismatches;
    keep({input, what, got, expected});
  }
  void merge(const tally& o) {
    checked += o.checked;
    mismatches += o.mismatches;
    if (o.any) keep(o.first);
  }
};

// Runs body(begin, end, tally&) over [0, count) split into one contiguous chunk per thread.
template <class Body>
tally run_chunks(std::uint64_t count, Body body) {
  const unsigned threads = thread_count();
  std::vector<tally> part(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const std::uint64_t begin = count * t / threads, end = count * (t + 1) / threads;
    pool.emplace_back([&, t, begin, end] { body(begin, end, part[t]); });
  }
  for (auto& th : pool) th.join();
  tally all;
  for (const tally& p : part) all.merge(p);
  return all;
}

void report(const ref_format& f, const char* sweep, const tally& t, double seconds) {
  std::printf("[ %-16s] %-28s %12" PRIu64 " conversions, %" PRIu64 " mismatches, %.1f s\n", f.name, sweep,
              t.checked, t.mismatches, seconds);
  if (t.any)
    std::printf("    first mismatch: input 0x%08" PRIX32 " (%a), %s: got 0x%02" PRIX32 ", expected 0x%02" PRIX32 "\n",
                t.first.input, static_cast<double>(float_from_bits(t.first.input)), t.first.what, t.first.got,
                t.first.expected);
  std::fflush(stdout);
}

// The sweeps' inner loops are marked flatten: every call in them (the encoder included) is
// inlined, so the constant overflow and rounding arguments fold into the codec. Without it GCC
// -O2 keeps encode out of line and the sweep takes about 1.6 times as long. Only speed changes.
#if defined(__GNUC__)
#define LOWBIT_TEST_FLATTEN __attribute__((flatten))
#else
#define LOWBIT_TEST_FLATTEN
#endif

template <class T>
std::uint32_t enc(float x, overflow ov, rounding rm = rounding::nearest_even, std::uint32_t r = 0) {
  return lowbit::encode<T>(x, ov, rm, r).bits();
}

// ------------------------------------------------------------------------------------------------
// nearest_even, every float32 bit pattern, both overflow modes.

// The first positive float32 bit pattern whose value is >= v >= 0 (0x7F800000, +Inf, if none).
std::uint32_t first_pattern_at_least(double v) {
  if (v > static_cast<double>(std::numeric_limits<float>::max())) return 0x7F800000u;
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, HUGE_VALF);
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Positive patterns k * stride for k in [begin, end), and their negatives.
template <class T>
LOWBIT_TEST_FLATTEN void check_nearest_even(const ref_format& f, std::uint64_t stride, std::uint64_t begin,
                                            std::uint64_t end, tally& out) {
  const double* ext = f.ext.data();
  const int n = f.n();
  int i = -2;  // floor index of the current |x| in f.ext; -2 until the first finite input
  // The expected codes of +x and -x under saturate / non_saturate, and the first pattern they
  // may stop holding at. Under nearest_even the answer is constant from one tie point to the
  // next (it changes only at a midpoint), so the reference is evaluated at the first input of
  // each such stretch and reused until the next midpoint, the midpoint itself evaluated alone.
  std::uint32_t want_sat = 0, want_non = 0, want_nsat = 0, want_nnon = 0;
  std::uint32_t valid_until = 0;
  for (std::uint64_t k = begin; k < end; ++k) {
    const std::uint32_t b = static_cast<std::uint32_t>(k * stride);
    const std::uint32_t nb = b | 0x80000000u;
    const float x = float_from_bits(b), nx = float_from_bits(nb);
    if (b >= 0x7F800000u) {  // Inf and NaN: the rules are spelled out in ref_encode
      want_sat = lowbit_test::ref_encode(f, x, overflow::saturate, rounding::nearest_even);
      want_non = lowbit_test::ref_encode(f, x, overflow::non_saturate, rounding::nearest_even);
      want_nsat = lowbit_test::ref_encode(f, nx, overflow::saturate, rounding::nearest_even);
      want_nnon = lowbit_test::ref_encode(f, nx, overflow::non_saturate, rounding::nearest_even);
    } else if (b >= valid_until) {
      const double ax = x;
      if (i == -2) i = lowbit_test::floor_index(f, ax);
      while (ax >= ext[i + 1]) ++i;  // walk up: the inputs increase
      const int j = lowbit_test::ref_round_index(f, i, ax, false, rounding::nearest_even, 0);
      want_sat = lowbit_test::ref_code(f, j, false, overflow::saturate, rounding::nearest_even);
      want_non = lowbit_test::ref_code(f, j, false, overflow::non_saturate, rounding::nearest_even);
      want_nsat = lowbit_test::ref_code(f, j, true, overflow::saturate, rounding::nearest_even);
      want_nnon = lowbit_test::ref_code(f, j, true, overflow::non_saturate, rounding::nearest_even);
      if (i < 0) {
        valid_until = first_pattern_at_least(ext[0]);  // E8M0 below 2^-127
      } else if (i >= n) {
        valid_until = 0x7F800000u;  // overflow from here to the largest float
      } else {
        const double mid = ext[i] + (ext[i + 1] - ext[i]) / 2;
        valid_until = ax < mid ? first_pattern_at_least(mid) : ax == mid ? b + 1 : first_pattern_at_least(ext[i + 1]);
      }
    }
    const std::uint32_t got_sat = enc<T>(x, overflow::saturate);
    const std::uint32_t got_non = enc<T>(x, overflow::non_saturate);
    const std::uint32_t got_nsat = enc<T>(nx, overflow::saturate);
    const std::uint32_t got_nnon = enc<T>(nx, overflow::non_saturate);
    if (got_sat != want_sat) out.add(b, "nearest_even saturate", got_sat, want_sat);
    if (got_non != want_non) out.add(b, "nearest_even non_saturate", got_non, want_non);
    if (got_nsat != want_nsat) out.add(nb, "nearest_even saturate", got_nsat, want_nsat);
    if (got_nnon != want_nnon) out.add(nb, "nearest_even non_saturate", got_nnon, want_nnon);
  }
  out.checked += 4 * (end - begin);
}

template <class T>
void sweep_nearest_even(const ref_format& f) {
  const std::uint64_t stride = stride_from_env();
  const std::uint64_t count = ((std::uint64_t{1} << 31) + stride - 1) / stride;  // positive patterns
  const auto start = std::chrono::steady_clock::now();
  const tally t = run_chunks(count, [&](std::uint64_t begin, std::uint64_t end, tally& out) {
    check_nearest_even<T>(f, stride, begin, end, out);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report(f, "nearest_even, all float32", t, seconds);
  EXPECT_EQ(t.mismatches, 0u) << f.name;
}

// ------------------------------------------------------------------------------------------------
// The other rounding modes.

struct variant {
  rounding rm;
  std::uint32_t r;
  bool hashed;  // r = hash32(input bits), different for every input
  const char* name;
};
const variant variants[] = {
    {rounding::toward_zero, 0, false, "toward_zero"},
    {rounding::toward_pos_inf, 0, false, "toward_pos_inf"},
    {rounding::nearest_away, 0, false, "nearest_away"},
    {rounding::nearest_toward_zero, 0, false, "nearest_toward_zero"},
    {rounding::stochastic, 0, false, "stochastic r=0"},
    {rounding::stochastic, 1, false, "stochastic r=1"},
    {rounding::stochastic, 0x7FFFFFFFu, false, "stochastic r=0x7FFFFFFF"},
    {rounding::stochastic, 0x80000000u, false, "stochastic r=0x80000000"},
    {rounding::stochastic, 0xFFFFFFFFu, false, "stochastic r=0xFFFFFFFF"},
    {rounding::stochastic, 0, true, "stochastic r=hash(input)"},
};

// Positive patterns k * stride for k in [begin, end) and their negatives, in every variant and
// overflow mode. No caching here: stochastic rounding depends on each input's exact fraction.
template <class T>
LOWBIT_TEST_FLATTEN void check_other_modes(const ref_format& f, std::uint64_t stride, std::uint64_t begin,
                                           std::uint64_t end, tally& out) {
  const double* ext = f.ext.data();
  int i = -2;
  for (std::uint64_t k = begin; k < end; ++k) {
    const std::uint32_t b = static_cast<std::uint32_t>(k * stride);
    const bool finite = b < 0x7F800000u;
    double ax = 0;
    if (finite) {
      ax = float_from_bits(b);
      if (i == -2) i = lowbit_test::floor_index(f, ax);
      while (ax >= ext[i + 1]) ++i;
    }
    for (const std::uint32_t in : {b, b | 0x80000000u}) {
      const float x = float_from_bits(in);
      const bool negative = in != b && f.sign_mask != 0;  // as the format sees it
      for (const variant& v : variants) {
        const std::uint32_t r = v.hashed ? lowbit_test::hash32(in) : v.r;
        const int j = finite ? lowbit_test::ref_round_index(f, i, ax, negative, v.rm, r) : 0;
        for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
          const std::uint32_t want =
              finite ? lowbit_test::ref_code(f, j, in != b, ov, v.rm) : lowbit_test::ref_encode(f, x, ov, v.rm, r);
          const std::uint32_t got = enc<T>(x, ov, v.rm, r);
          if (got != want) out.add(in, v.name, got, want);
        }
      }
    }
  }
  out.checked += 2 * 2 * (sizeof variants / sizeof variants[0]) * (end - begin);
}

// Every 97th positive float32 pattern (times LOWBIT_EXHAUSTIVE_STRIDE) and its negative.
template <class T>
void sweep_other_modes(const ref_format& f) {
  const std::uint64_t stride = 97 * stride_from_env();
  const std::uint64_t count = ((std::uint64_t{1} << 31) + stride - 1) / stride;
  const auto start = std::chrono::steady_clock::now();
  const tally t = run_chunks(count, [&](std::uint64_t begin, std::uint64_t end, tally& out) {
    check_other_modes<T>(f, stride, begin, end, out);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report(f, "all modes, every 97th float32", t, seconds);
  EXPECT_EQ(t.mismatches, 0u) << f.name;
}

// Every float16 value (decoded by definition, not by lowbit) in every variant and overflow mode.
template <class T>
void sweep_float16_inputs(const ref_format& f) {
  const auto start = std::chrono::steady_clock::now();
  tally t;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t e = (h >> 10) & 0x1Fu;
    const bool neg = (h & 0x8000u) != 0;
    float x = 0;
    if (e != 0x1F)
      x = static_cast<float>(lowbit_test::float16_value(h));  // exact
    else if ((h & 0x3FFu) == 0)
      x = neg ? -HUGE_VALF : HUGE_VALF;
    else
      x = std::copysign(std::numeric_limits<float>::quiet_NaN(), neg ? -1.0f : 1.0f);
    for (const variant& v : variants) {
      const std::uint32_t r = v.hashed ? lowbit_test::hash32(h) : v.r;
      for (overflow ov : {overflow::saturate, overflow::non_saturate}) {
        const std::uint32_t want = lowbit_test::ref_encode(f, x, ov, v.rm, r);
        const std::uint32_t got = enc<T>(x, ov, v.rm, r);
        ++t.checked;
        if (got != want) {
          std::uint32_t xb = 0;
          std::memcpy(&xb, &x, sizeof xb);
          t.add(xb, v.name, got, want);
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report(f, "all modes, every float16", t, seconds);
  EXPECT_EQ(t.mismatches, 0u) << f.name;
}

// The reference formats, built once.
const ref_format& ref_e4m3fn() { static const ref_format f = lowbit_test::make_e4m3fn(); return f; }
const ref_format& ref_e5m2() { static const ref_format f = lowbit_test::make_e5m2(); return f; }
const ref_format& ref_e4m3fnuz() { static const ref_format f = lowbit_test::make_e4m3fnuz(); return f; }
const ref_format& ref_e5m2fnuz() { static const ref_format f = lowbit_test::make_e5m2fnuz(); return f; }
const ref_format& ref_e2m3fn() { static const ref_format f = lowbit_test::make_e2m3fn(); return f; }
const ref_format& ref_e3m2fn() { static const ref_format f = lowbit_test::make_e3m2fn(); return f; }
const ref_format& ref_e2m1fn() { static const ref_format f = lowbit_test::make_e2m1fn(); return f; }
const ref_format& ref_e8m0fnu() { static const ref_format f = lowbit_test::make_e8m0fnu(); return f; }
const ref_format& ref_float16() { static const ref_format f = lowbit_test::make_float16(); return f; }
const ref_format& ref_bfloat16() { static const ref_format f = lowbit_test::make_bfloat16(); return f; }

#define LOWBIT_EXHAUSTIVE_FORMAT(type, ref)                                                   \
  TEST(exhaustive_nearest_even, type) { sweep_nearest_even<lowbit::type>(ref()); }           \
  TEST(exhaustive_float16_inputs, type) { sweep_float16_inputs<lowbit::type>(ref()); }       \
  TEST(exhaustive_other_modes, type) { sweep_other_modes<lowbit::type>(ref()); }

LOWBIT_EXHAUSTIVE_FORMAT(float8_e4m3fn, ref_e4m3fn)
LOWBIT_EXHAUSTIVE_FORMAT(float8_e5m2, ref_e5m2)
LOWBIT_EXHAUSTIVE_FORMAT(float8_e4m3fnuz, ref_e4m3fnuz)
LOWBIT_EXHAUSTIVE_FORMAT(float8_e5m2fnuz, ref_e5m2fnuz)
LOWBIT_EXHAUSTIVE_FORMAT(float6_e2m3fn, ref_e2m3fn)
LOWBIT_EXHAUSTIVE_FORMAT(float6_e3m2fn, ref_e3m2fn)
LOWBIT_EXHAUSTIVE_FORMAT(float4_e2m1fn, ref_e2m1fn)
LOWBIT_EXHAUSTIVE_FORMAT(float8_e8m0fnu, ref_e8m0fnu)
LOWBIT_EXHAUSTIVE_FORMAT(float16, ref_float16)
LOWBIT_EXHAUSTIVE_FORMAT(bfloat16, ref_bfloat16)

// The reference itself, on values whose answers are known by hand: guards against a reference
// that agrees with a wrong encoder by being wrong the same way.
TEST(exhaustive_reference, hand_checked_answers) {
  using lowbit_test::ref_encode;
  const ref_format& e4 = ref_e4m3fn();
  EXPECT_EQ(ref_encode(e4, 464.0, overflow::non_saturate, rounding::nearest_even), 0x7Eu);
  EXPECT_EQ(ref_encode(e4, 470.0, overflow::non_saturate, rounding::nearest_even), 0x7Fu);
  EXPECT_EQ(ref_encode(e4, -470.0, overflow::saturate, rounding::nearest_even), 0xFEu);
  EXPECT_EQ(ref_encode(e4, 1e6, overflow::non_saturate, rounding::toward_zero), 0x7Eu);
  EXPECT_EQ(ref_encode(e4, -1e6, overflow::non_saturate, rounding::toward_pos_inf), 0xFEu);
  EXPECT_EQ(ref_encode(e4, 1e6, overflow::non_saturate, rounding::toward_pos_inf), 0x7Fu);
  EXPECT_EQ(ref_encode(e4, 1.0625, overflow::saturate, rounding::nearest_even), 0x38u);
  EXPECT_EQ(ref_encode(e4, 1.0625, overflow::saturate, rounding::nearest_away), 0x39u);
  EXPECT_EQ(ref_encode(e4, 1.1875, overflow::saturate, rounding::nearest_toward_zero), 0x39u);
  EXPECT_EQ(ref_encode(e4, 1.0625, overflow::saturate, rounding::stochastic, 0x80000000u), 0x39u);
  EXPECT_EQ(ref_encode(e4, 1.0625, overflow::saturate, rounding::stochastic, 0x7FFFFFFFu), 0x38u);
  EXPECT_EQ(ref_encode(e4, -0x1p-11, overflow::saturate, rounding::nearest_even), 0x80u);
  EXPECT_EQ(ref_encode(e4, -0x1p-11, overflow::saturate, rounding::toward_pos_inf), 0x80u);
  EXPECT_EQ(ref_encode(e4, 0x1p-11, overflow::saturate, rounding::toward_pos_inf), 0x01u);
  EXPECT_EQ(ref_encode(ref_e4m3fnuz(), -0x1p-12, overflow::saturate, rounding::nearest_even), 0x00u);
  EXPECT_EQ(ref_encode(ref_e5m2(), 61440.0, overflow::non_saturate, rounding::nearest_even), 0x7Cu);
  EXPECT_EQ(ref_encode(ref_e2m1fn(), 5.0, overflow::saturate, rounding::nearest_even), 0x6u);
  EXPECT_EQ(ref_encode(ref_e2m1fn(), 0.25, overflow::saturate, rounding::nearest_even), 0x0u);
  EXPECT_EQ(ref_encode(ref_e8m0fnu(), 1.5, overflow::saturate, rounding::nearest_even), 0x80u);
  EXPECT_EQ(ref_encode(ref_e8m0fnu(), -0.0, overflow::saturate, rounding::nearest_even), 0x00u);
  EXPECT_EQ(ref_encode(ref_e8m0fnu(), 0x1.8p127, overflow::non_saturate, rounding::nearest_even), 0xFFu);
  EXPECT_EQ(ref_encode(ref_float16(), 65520.0, overflow::non_saturate, rounding::nearest_even), 0x7C00u);
  EXPECT_EQ(ref_encode(ref_bfloat16(), 1.0, overflow::non_saturate, rounding::nearest_even), 0x3F80u);
  EXPECT_EQ(ref_float16().max_code(), 0x7BFFu);
  EXPECT_EQ(ref_bfloat16().max_code(), 0x7F7Fu);
  EXPECT_EQ(ref_e8m0fnu().n(), 255);
  EXPECT_EQ(ref_e4m3fn().n(), 127);
  EXPECT_EQ(ref_e4m3fnuz().n(), 128);
  EXPECT_EQ(ref_e2m1fn().n(), 8);
}

}  // namespace
