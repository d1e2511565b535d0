// The AVX2 error-sum reduction against error_sums_ref, bit for bit: every sum, the maximum, the
// NaN rule, on vectors of many lengths (not multiples of 8 too), unaligned, with zeros, -0,
// subnormals, huge values, NaN and Inf, under the default MXCSR, FTZ+DAZ and RC=down. The
// public metrics built on it must then agree exactly between the two paths.
#include <gtest/gtest.h>

#include <lowbit/metrics.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::isa;

enum class fpenv { clear, ftz_daz, round_down };
constexpr fpenv all_envs[] = {fpenv::clear, fpenv::ftz_daz, fpenv::round_down};

// Sets the state for its lifetime (no-op where there is no MXCSR).
class env_scope {
 public:
  explicit env_scope(fpenv e)
      : scope_(e == fpenv::ftz_daz      ? lowbit_test::mxcsr_ftz | lowbit_test::mxcsr_daz
               : e == fpenv::round_down ? lowbit_test::mxcsr_round_down
                                        : 0u) {}

 private:
  lowbit_test::mxcsr_scope scope_;
};

float from_bits(std::uint32_t u) { return lowbit_test::float_from_bits(u); }
std::uint64_t bits(double d) { return lowbit_test::double_bits(d); }

float random_value(std::mt19937& gen, int kind) {
  std::uniform_int_distribution<std::uint32_t> mant(0, 0x7FFFFF);
  const std::uint32_t sign = (gen() & 1u) << 31;
  switch (kind) {
    case 0: {  // ordinary
      std::normal_distribution<float> nd(0.0f, 1.0f);
      return nd(gen);
    }
    case 1: return from_bits(sign | static_cast<std::uint32_t>(60 + gen() % 120) << 23 | mant(gen));  // wide
    case 2: return from_bits(sign | mant(gen));                                                    // subnormal
    case 3: return from_bits(sign | static_cast<std::uint32_t>(200 + gen() % 54) << 23 | mant(gen));  // huge
    case 4: return gen() % 2 ? 0.0f : -0.0f;
    default: return static_cast<float>(static_cast<int>(gen() % 9) - 4);
  }
}

void fill(std::vector<float>& r, std::vector<float>& t, std::size_t n, int variant, std::mt19937& gen) {
  r.resize(n);
  t.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int kind = variant % 7 == 6 ? static_cast<int>(gen() % 6) : variant % 7 % 6;
    r[i] = random_value(gen, kind);
    switch (gen() % 4) {
      case 0: t[i] = r[i]; break;
      case 1: t[i] = random_value(gen, kind); break;
      default: t[i] = r[i] * (1.0f + 0.01f * static_cast<float>(static_cast<int>(gen() % 21) - 10)); break;
    }
  }
  if (variant % 5 == 4 && n > 0) {
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN()};
    (gen() % 2 ? r : t)[gen() % n] = specials[gen() % 4];
  }
}

bool subnormal_free(const std::vector<float>& v) {
  for (float f : v)
    if (f != 0.0f && std::fabs(f) < std::numeric_limits<float>::min()) return false;
  return true;
}

struct sums_bits {
  std::size_t n;
  std::uint64_t ref_sq, test_sq, err_sq, dot, max_abs;
  bool operator==(const sums_bits& o) const {
    return n == o.n && ref_sq == o.ref_sq && test_sq == o.test_sq && err_sq == o.err_sq && dot == o.dot &&
           max_abs == o.max_abs;
  }
};

sums_bits as_bits(const lowbit::error_sums& s) {
  return {s.n, bits(s.ref_sq), bits(s.test_sq), bits(s.err_sq), bits(s.dot), bits(s.max_abs)};
}

lowbit::error_sums start_value(int variant) {
  lowbit::error_sums s;
  if (variant % 3 == 1) {  // accumulate onto earlier sums
    s.n = 5;
    s.ref_sq = 1.25;
    s.test_sq = 3.5;
    s.err_sq = 0.125;
    s.dot = -2.0;
    s.max_abs = 0.75;
  }
  return s;
}

TEST(KernelsMetrics, ErrorSumsMatchTheReference) {
  if (!lowbit::is_supported(isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 gen(1);
  int checked = 0;
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) lengths.push_back(n);
  // Around the prefetching main loop (16 per step, from 528 = 16 + 512 elements on).
  for (std::size_t n : {527u, 528u, 529u, 543u, 544u, 551u, 1000u, 4103u}) lengths.push_back(n);
  for (const std::size_t n : lengths) {
    for (int variant = 0; variant < 14; ++variant) {
      std::vector<float> r, t;
      fill(r, t, n, variant, gen);
      const std::size_t off_r = gen() % 4, off_t = gen() % 4;
      std::vector<float> rb(n + off_r + 1), tb(n + off_t + 1);
      std::copy(r.begin(), r.end(), rb.begin() + static_cast<long>(off_r));
      std::copy(t.begin(), t.end(), tb.begin() + static_cast<long>(off_t));
      const float* rp = rb.data() + off_r;
      const float* tp = tb.data() + off_t;
      lowbit::error_sums want = start_value(variant);
      {
        const env_scope env(fpenv::clear);
        lowbit::error_sums_ref(rp, tp, n, want);
      }
      const bool plain = subnormal_free(r) && subnormal_free(t);
      for (fpenv e : all_envs) {
        lowbit::error_sums got = start_value(variant);
        {
          const lowbit::scoped_isa s(isa::avx2);
          const env_scope env(e);
          lowbit::add_error_sums(rp, tp, n, got);
        }
        ASSERT_EQ(as_bits(got), as_bits(want)) << "n=" << n << " variant=" << variant << " env=" << static_cast<int>(e);
        if (e == fpenv::ftz_daz && plain) {  // the reference in the same state, where it does not depend on it
          lowbit::error_sums same = start_value(variant);
          const env_scope env(e);
          lowbit::error_sums_ref(rp, tp, n, same);
          ASSERT_EQ(as_bits(same), as_bits(got)) << "n=" << n << " variant=" << variant;
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

// The public metrics give identical doubles (and statuses) on both paths, with FTZ+DAZ set too.
TEST(KernelsMetrics, PublicMetricsAgree) {
  if (!lowbit::is_supported(isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 gen(2);
  for (std::size_t n : {1u, 7u, 8u, 9u, 100u, 1023u, 4096u}) {
    for (int variant = 0; variant < 7; ++variant) {
      std::vector<float> r, t;
      fill(r, t, n, variant, gen);
      auto all = [&] {
        std::vector<std::uint64_t> out;
        for (auto res : {lowbit::mse(r, t), lowbit::sqnr_db(r, t), lowbit::max_abs_error(r, t),
                         lowbit::relative_frobenius_error(r, t), lowbit::cosine_similarity(r, t)}) {
          out.push_back(static_cast<std::uint64_t>(res.status.code()));
          out.push_back(res.ok() ? bits(res.value) : 0);
        }
        return out;
      };
      std::vector<std::uint64_t> want, got;
      {
        const lowbit::scoped_isa s(isa::scalar);
        want = all();
      }
      for (fpenv e : {fpenv::clear, fpenv::ftz_daz}) {  // (the final log10, sqrt, division follow RC)
        const lowbit::scoped_isa s(isa::avx2);
        const env_scope env(e);
        got = all();
        ASSERT_EQ(got, want) << "n=" << n << " variant=" << variant << " env=" << static_cast<int>(e);
      }
    }
  }
}

// Sums that reach -0 or exact cancellations: products of opposite signs, exact zeros, masked
// tail lanes.
TEST(KernelsMetrics, SignedZerosAndCancellation) {
  if (!lowbit::is_supported(isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  for (std::size_t n = 1; n <= 17; ++n) {
    std::vector<float> r(n), t(n);
    for (std::size_t i = 0; i < n; ++i) {
      r[i] = i % 2 ? -0.0f : 1.0f;
      t[i] = i % 3 ? 0.0f : -1.0f;
    }
    lowbit::error_sums want, got;
    lowbit::error_sums_ref(r.data(), t.data(), n, want);
    {
      const lowbit::scoped_isa s(isa::avx2);
      lowbit::add_error_sums(r.data(), t.data(), n, got);
    }
    ASSERT_EQ(as_bits(got), as_bits(want)) << n;
  }
}

}  // namespace
