// The AVX2 kernels of the integer schemes against the scalar reference, byte for byte: the
// per-group table (range, quantize, dequantize, error), the whole-matrix paths behind
// quantize_int / quantize_int_packed / dequantize_int / dequantize_int_packed / quantized_matrix
// (the fused symmetric and affine quantization kernels among them), and the ggml Q4_0 / Q8_0
// blocks. Random tensors of many shapes and group sizes, unaligned
// pointers, every scheme, range rule, rounding mode and scale format, and the edge cases (ties,
// near-ties, all-zero groups, NaN / Inf, subnormals, huge values).
//
// Floating-point environment: the reference result is the scalar path with MXCSR at its default.
// The AVX2 path must give it with FTZ+DAZ set, with them clear, and with a directed rounding
// control. The scalar path is also compared with the AVX2 path in the same MXCSR state, on data
// where the scalar reference does not depend on FTZ/DAZ (it does where subnormals appear: see
// ScalarReferenceUnderFtzDaz, which reports what differs instead of asserting).
#include <gtest/gtest.h>

#include <lowbit/core/cpu.hpp>
#include <lowbit/schemes/integer.hpp>
#include <lowbit/schemes/layouts.hpp>

#include "support.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using lowbit::errc;
using lowbit::granularity;
using lowbit::int_params;
using lowbit::int_range;
using lowbit::int_scheme;
using lowbit::isa;
using lowbit::rounding;
using lowbit::scale_search;
using lowbit::scale_storage;

// ---------------------------------------------------------------------------------------------
// MXCSR states (tests/support.hpp sets them)

enum class fpenv { clear, ftz_daz, round_down };
constexpr fpenv all_envs[] = {fpenv::clear, fpenv::ftz_daz, fpenv::round_down};

// Every SIMD path this build and CPU have (avx2, avx512) in every MXCSR state.
struct path_env {
  lowbit::isa path;
  fpenv e;
};
std::vector<path_env> simd_envs() {
  std::vector<path_env> v;
  for (const lowbit::isa i : lowbit_test::simd_paths())
    for (const fpenv e : all_envs) v.push_back({i, e});
  return v;
}

// The scalar path, then the SIMD ones.
std::vector<lowbit::isa> paths_with_scalar() {
  std::vector<lowbit::isa> v{lowbit::isa::scalar};
  for (const lowbit::isa i : lowbit_test::simd_paths()) v.push_back(i);
  return v;
}

const char* env_name(fpenv e) {
  switch (e) {
    case fpenv::clear: return "default MXCSR";
    case fpenv::ftz_daz: return "FTZ+DAZ";
    case fpenv::round_down: return "RC=down";
  }
  return "?";
}

// Sets the state for its lifetime.
class env_scope {
 public:
  explicit env_scope(fpenv e) : scope_(bits(e)) {}

 private:
  static unsigned bits(fpenv e) {
    using namespace lowbit_test;
    return e == fpenv::ftz_daz ? mxcsr_ftz | mxcsr_daz : e == fpenv::round_down ? mxcsr_round_down : 0u;
  }
  lowbit_test::mxcsr_scope scope_;
};

// Runs f on path i in environment e.
template <class F>
auto run_on(isa i, fpenv e, F f) {
  const lowbit::scoped_isa s(i);
  const env_scope env(e);
  return f();
}

// ---------------------------------------------------------------------------------------------
// Data

using lowbit_test::float_bits;
std::uint32_t bits_of(float f) { return float_bits(f); }
float from_bits(std::uint32_t u) { return lowbit_test::float_from_bits(u); }

template <class T>
std::vector<std::uint8_t> bytes_of(const T* p, std::size_t n) {
  std::vector<std::uint8_t> b(n * sizeof(T));
  if (n != 0) std::memcpy(b.data(), p, b.size());
  return b;
}

// A buffer whose data() is `offset` elements past a fresh allocation, to test unaligned access.
template <class T>
class offset_buffer {
 public:
  offset_buffer(std::size_t n, std::size_t offset, T fill = T{}) : store_(n + offset + 1, fill), offset_(offset), n_(n) {}
  T* data() { return store_.data() + offset_; }
  const T* data() const { return store_.data() + offset_; }
  std::size_t size() const { return n_; }
  std::vector<T> vec() const { return std::vector<T>(data(), data() + n_); }

 private:
  std::vector<T> store_;
  std::size_t offset_;
  std::size_t n_;
};

enum class data_kind {
  normal,       // per-row spread over 10^-3 .. 10^3
  integers,     // small integers: many zeros, repeats, exact ties against power-of-two scales
  ties,         // per group: amax = D * 2^e and elements on the half-integer grid, and neighbours
  wide,         // any exponent, subnormals included (FTZ/DAZ-sensitive for the scalar path)
  subnormal,    // groups of subnormals only (FTZ/DAZ-sensitive)
  huge,         // magnitudes up to FLT_MAX (fp16 scales overflow)
};
constexpr data_kind all_kinds[] = {data_kind::normal, data_kind::integers, data_kind::ties,
                                   data_kind::wide,   data_kind::subnormal, data_kind::huge};

bool ftz_sensitive(data_kind k) { return k == data_kind::wide || k == data_kind::subnormal; }

const char* kind_name(data_kind k) {
  switch (k) {
    case data_kind::normal: return "normal";
    case data_kind::integers: return "integers";
    case data_kind::ties: return "ties";
    case data_kind::wide: return "wide";
    case data_kind::subnormal: return "subnormal";
    case data_kind::huge: return "huge";
  }
  return "?";
}

float random_wide(std::mt19937& gen, int emin, int emax) {
  std::uniform_int_distribution<int> e(emin, emax);
  std::uniform_int_distribution<std::uint32_t> m(0, 0x7FFFFF);
  std::uniform_int_distribution<int> s(0, 1);
  const int ex = e(gen);
  float v = 0.0f;
  if (ex < -126) {
    v = from_bits(m(gen) >> static_cast<unsigned>(-126 - ex < 23 ? -126 - ex : 23));  // subnormal
  } else {
    v = from_bits(static_cast<std::uint32_t>(ex + 127) << 23 | m(gen));
  }
  return s(gen) != 0 ? -v : v;
}

// Fills x (rows x cols, groups of `group` along rows) with data of kind k.
void fill(std::vector<float>& x, std::size_t rows, std::size_t cols, std::size_t group, data_kind k, unsigned seed,
          float divisor = 7.0f) {
  std::mt19937 gen(seed);
  x.assign(rows * cols, 0.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-9, 9);
  std::uniform_int_distribution<int> pick(0, 9);
  switch (k) {
    case data_kind::normal:
      for (std::size_t r = 0; r < rows; ++r) {
        const float sigma = std::pow(10.0f, static_cast<float>(r % 7) - 3.0f);
        for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] = nd(gen) * sigma;
      }
      break;
    case data_kind::integers:
      for (float& v : x) v = static_cast<float>(small(gen)) * (pick(gen) == 0 ? 0.5f : 1.0f);
      if (!x.empty()) x[0] = -0.0f;
      break;
    case data_kind::ties: {
      std::uniform_int_distribution<int> ed(-20, 20);
      const std::size_t g = group == 0 ? x.size() : group;
      for (std::size_t start = 0; start < x.size(); start += g) {
        const float unit = std::ldexp(1.0f, ed(gen));
        for (std::size_t i = start; i < start + g && i < x.size(); ++i) {
          const int q = small(gen) % 8;
          float v = (static_cast<float>(q) + 0.5f) * unit;
          switch (pick(gen)) {
            case 0: v = std::nextafter(v, 0.0f); break;
            case 1: v = std::nextafter(v, 100.0f * v); break;
            case 2: v = static_cast<float>(q) * unit; break;
            default: break;
          }
          x[i] = v;
        }
        x[start] = (pick(gen) < 5 ? 1.0f : -1.0f) * divisor * unit;  // amax / divisor = unit exactly
      }
      break;
    }
    case data_kind::wide:
      for (float& v : x) v = random_wide(gen, -149, 100);
      break;
    case data_kind::subnormal:
      for (float& v : x) v = random_wide(gen, -160, -127);
      if (x.size() > 3) x[3] = 0.0f;
      break;
    case data_kind::huge:
      for (float& v : x) v = random_wide(gen, 100, 127);
      break;
  }
}

std::vector<std::uint32_t> random_bits(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint32_t> r(n);
  for (auto& v : r) v = static_cast<std::uint32_t>(gen());
  return r;
}

// ---------------------------------------------------------------------------------------------
// The per-group table

constexpr rounding all_modes[] = {rounding::nearest_even,  rounding::toward_zero,  rounding::toward_pos_inf,
                                  rounding::stochastic,    rounding::nearest_away, rounding::nearest_toward_zero};

const lowbit::kernels::int_kernels& ref_table() { return lowbit::kernels::reference_int_kernels(); }
const lowbit::kernels::int_kernels& simd_table() {
#if LOWBIT_HAS_AVX2_KERNELS
  return lowbit::kernels::avx2::int_table();
#else
  return lowbit::kernels::reference_int_kernels();
#endif
}

TEST(KernelsIntegerTable, ActiveTableFollowsTheIsa) {
  REQUIRE_AVX2();
  {
    const lowbit::scoped_isa s(isa::scalar);
    EXPECT_EQ(&lowbit::kernels::active_int_kernels(), &lowbit::kernels::reference_int_kernels());
  }
  {
    const lowbit::scoped_isa s(isa::avx2);
    EXPECT_EQ(&lowbit::kernels::active_int_kernels(), &simd_table());
    EXPECT_NE(&simd_table(), &lowbit::kernels::reference_int_kernels());
  }
}

struct range_out {
  bool finite;
  std::uint32_t lo, hi;
  bool operator==(const range_out& o) const { return finite == o.finite && (!finite || (lo == o.lo && hi == o.hi)); }
};

range_out run_range(const lowbit::kernels::int_kernels& k, fpenv e, const float* x, std::size_t n) {
  const env_scope env(e);
  float lo = 0.0f, hi = 0.0f;
  const bool f = k.range(x, n, &lo, &hi);
  return {f, bits_of(lo), bits_of(hi)};
}

TEST(KernelsIntegerTable, RangeMatchesTheReference) {
  REQUIRE_AVX2();
  std::mt19937 gen(11);
  int cases = 0;
  for (std::size_t n = 1; n <= 200; n += (n < 40 ? 1 : 13)) {
    for (int variant = 0; variant < 12; ++variant) {
      for (std::size_t off = 0; off < 3; ++off) {
        offset_buffer<float> x(n, off);
        for (std::size_t i = 0; i < n; ++i) {
          switch (variant % 6) {
            case 0: x.data()[i] = random_wide(gen, -30, 30); break;
            case 1: x.data()[i] = random_wide(gen, -149, 127); break;
            case 2: x.data()[i] = (gen() % 3 == 0) ? 0.0f : ((gen() % 2) ? -0.0f : std::fabs(random_wide(gen, -5, 5))); break;
            case 3: x.data()[i] = (gen() % 2) ? 0.0f : -0.0f; break;
            case 4: x.data()[i] = -std::fabs(random_wide(gen, -149, -120)) * ((gen() % 4) ? 1.0f : 0.0f); break;
            default: x.data()[i] = static_cast<float>(static_cast<int>(gen() % 5) - 2); break;
          }
        }
        if (variant >= 6) {  // a non-finite value somewhere
          const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
          x.data()[gen() % n] = specials[variant % 4];
        }
        const range_out want = run_range(ref_table(), fpenv::clear, x.data(), n);
        for (fpenv e : all_envs) {
          ASSERT_EQ(run_range(simd_table(), e, x.data(), n), want)
              << "n=" << n << " variant=" << variant << " " << env_name(e) << " lo=" << std::hex << want.lo
              << " hi=" << want.hi;
        }
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 500);
}

TEST(KernelsIntegerTable, RangeKeepsTheFirstZerosSign) {
  REQUIRE_AVX2();
  for (std::size_t n : {1u, 5u, 8u, 9u, 31u, 64u}) {
    for (std::size_t pos = 0; pos < n; ++pos) {
      std::vector<float> x(n, 1.0f);
      for (std::size_t i = pos; i < n; ++i) x[i] = (i - pos) % 2 == 0 ? -0.0f : 0.0f;
      for (int neg = 0; neg < 2; ++neg) {
        if (neg) for (float& v : x) v = v == 1.0f ? -1.0f : -v;
        const range_out want = run_range(ref_table(), fpenv::clear, x.data(), n);
        ASSERT_EQ(run_range(simd_table(), fpenv::ftz_daz, x.data(), n), want) << n << " " << pos << " " << neg;
      }
    }
  }
}

// A codec for the table tests: scale of every kind, zero-points over the whole byte.
lowbit::int_group_codec random_codec(std::mt19937& gen, rounding rm, int variant) {
  lowbit::int_group_codec c;
  c.rm = rm;
  const int bits = 2 + static_cast<int>(gen() % 7);
  c.code_max = (1 << bits) - 1;
  switch (variant % 4) {
    case 0:  // symmetric
      c.zero_point = 1 << (bits - 1);
      c.code_min = gen() % 2;
      break;
    case 1:  // affine
      c.zero_point = static_cast<int>(gen() % static_cast<unsigned>(c.code_max + 1));
      break;
    case 2:  // offset
      c.has_offset = true;
      c.offset = random_wide(gen, -10, 10);
      break;
    default:  // a zero-point outside the code range (only reachable by hand)
      c.zero_point = static_cast<int>(gen() % 300);
      c.code_min = gen() % 2;
      break;
  }
  switch ((variant / 4) % 6) {
    case 0: c.scale = random_wide(gen, -12, 4); break;
    case 1: c.scale = std::ldexp(1.0f + static_cast<float>(gen() % 8) / 8.0f, static_cast<int>(gen() % 20) - 10); break;
    case 2: c.scale = random_wide(gen, -149, -127); break;  // subnormal
    case 3: c.scale = random_wide(gen, 120, 127); break;    // reciprocal subnormal
    case 4: c.scale = random_wide(gen, -126, -110); break;  // tiny normal: quotients of subnormals matter
    default: c.scale = 0.0f; break;
  }
  return c;
}

// x for a codec: values around the code range in units of the scale, exact ties, neighbours.
void codec_data(std::mt19937& gen, const lowbit::int_group_codec& c, float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float q = static_cast<float>(static_cast<int>(gen() % 600) - 300) * 0.5f;
    float v = q * c.scale + (c.has_offset ? c.offset : 0.0f);
    switch (gen() % 8) {
      case 0: v = std::nextafter(v, std::numeric_limits<float>::infinity()); break;
      case 1: v = std::nextafter(v, -std::numeric_limits<float>::infinity()); break;
      case 2: v = random_wide(gen, -149, 40); break;
      case 3: v = random_wide(gen, -149, -120); break;
      case 4: v = 0.0f; break;
      default: break;
    }
    if (!std::isfinite(v)) v = 1.0f;
    x[i] = v;
  }
}

TEST(KernelsIntegerTable, QuantizeDequantizeAndErrorMatchTheReference) {
  REQUIRE_AVX2();
  std::mt19937 gen(5);
  int checked = 0;
  for (rounding rm : all_modes) {
    for (int variant = 0; variant < 48; ++variant) {
      for (std::size_t n : {1u, 7u, 8u, 13u, 32u, 33u, 64u, 100u, 257u, 600u}) {
        const lowbit::int_group_codec c = random_codec(gen, rm, variant);
        const std::size_t off = gen() % 4;
        offset_buffer<float> x(n, off);
        codec_data(gen, c, x.data(), n);
        const std::vector<std::uint32_t> rb = random_bits(n + off, static_cast<unsigned>(variant));
        const std::uint32_t* rbp = rm == rounding::stochastic ? rb.data() + off : nullptr;
        offset_buffer<std::uint8_t> want(n, off), got(n, 3 - off % 4);
        run_on(isa::scalar, fpenv::clear, [&] {
          ref_table().quantize(x.data(), n, c, rbp, want.data());
          return 0;
        });
        std::vector<std::uint8_t> codes_any(n);
        for (std::size_t i = 0; i < n; ++i) codes_any[i] = static_cast<std::uint8_t>(gen());
        offset_buffer<float> yw(n, off), yg(n, (off + 1) % 4);
        run_on(isa::scalar, fpenv::clear, [&] {
          ref_table().dequantize(codes_any.data(), n, c, yw.data());
          return 0;
        });
        const double norms[] = {2.0, 2.4, 1.0};
        double ew[3];
        run_on(isa::scalar, fpenv::clear, [&] {
          for (int k = 0; k < 3; ++k) ew[k] = ref_table().error(x.data(), n, c, norms[k], rbp);
          return 0;
        });
        for (fpenv e : all_envs) {
          const env_scope env(e);
          const lowbit::kernels::ieee_scope ieee;  // as every bulk call holds it around the table
          simd_table().quantize(x.data(), n, c, rbp, got.data());
          simd_table().dequantize(codes_any.data(), n, c, yg.data());
          double eg[3];
          for (int k = 0; k < 3; ++k) eg[k] = simd_table().error(x.data(), n, c, norms[k], rbp);
          const std::string where = std::string(env_name(e)) + " rm=" + std::to_string(static_cast<int>(rm)) +
                                    " variant=" + std::to_string(variant) + " n=" + std::to_string(n) +
                                    " scale=" + std::to_string(bits_of(c.scale));
          ASSERT_EQ(got.vec(), want.vec()) << "codes, " << where;
          ASSERT_EQ(bytes_of(yg.data(), n), bytes_of(yw.data(), n)) << "values, " << where;
          for (int k = 0; k < 3; ++k) ASSERT_EQ(bytes_of(&eg[k], 1), bytes_of(&ew[k], 1)) << "error, " << where;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 48 * 10);
}

// x / s = k + 1/2 exactly, and the floats next to those points: where multiplying by 1/s could
// round to the other side, the kernel must see it and divide.
TEST(KernelsIntegerTable, TiesAndNearTiesOfEveryNearestMode) {
  REQUIRE_AVX2();
  std::mt19937 gen(9);
  for (rounding rm : all_modes) {
    for (int trial = 0; trial < 300; ++trial) {
      lowbit::int_group_codec c;
      c.rm = rm;
      c.zero_point = 128;
      c.code_max = 255;
      c.scale = trial % 2 ? std::ldexp(static_cast<float>(1 + 2 * (gen() % 8)), static_cast<int>(gen() % 30) - 20)
                          : random_wide(gen, -20, 10);
      std::vector<float> x(96);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float k = static_cast<float>(static_cast<int>(gen() % 256) - 128) + 0.5f;
        float v = k * c.scale;  // exact when the scale has few bits
        if (i % 3 == 1) v = std::nextafter(v, 0.0f);
        if (i % 3 == 2) v = std::nextafter(v, 2.0f * v);
        x[i] = v;
      }
      std::vector<std::uint8_t> want(x.size()), got(x.size());
      ref_table().quantize(x.data(), x.size(), c, nullptr, want.data());
      for (fpenv e : all_envs) {
        const env_scope env(e);
        const lowbit::kernels::ieee_scope ieee;  // as every bulk call holds it around the table
        simd_table().quantize(x.data(), x.size(), c, nullptr, got.data());
        ASSERT_EQ(got, want) << "rm=" << static_cast<int>(rm) << " trial=" << trial << " " << env_name(e);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bulk functions, scalar path against the AVX2 path

struct shape {
  std::size_t rows, cols;
};
// {8, 160}: per token, a whole batch of 8 groups whose length leaves 32 values after the last 64
// (the AVX-512 grid_batch's tail).
constexpr shape shapes[] = {{1, 1},   {1, 7},   {3, 13},  {2, 32},   {4, 64},
                            {5, 96},  {3, 128}, {7, 100}, {2, 384},  {1, 1030}, {8, 160}};

std::vector<int_params> parameter_sets(std::size_t cols, bool with_search) {
  std::vector<int_params> out;
  std::vector<std::size_t> groups;
  for (std::size_t g : {8u, 12u, 32u, 64u, 128u, 33u, 48u})
    if (cols % g == 0 && g != cols) groups.push_back(g);
  const granularity grans[] = {granularity::per_tensor, granularity::per_channel, granularity::per_token,
                               granularity::per_group};
  const scale_storage fmts[] = {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16};
  int counter = 0;
  for (int bits : {4, 8, 2, 3, 5, 6, 7}) {
    for (int scheme = 0; scheme < 5; ++scheme) {
      for (granularity gr : grans) {
        const std::vector<std::size_t> gs = gr == granularity::per_group ? groups : std::vector<std::size_t>{0};
        for (std::size_t gsz : gs) {
          int_params p;
          p.bits = bits;
          p.granularity = gr;
          p.group_size = gsz;
          switch (scheme) {
            case 0: p.range = int_range::restricted; break;
            case 1: p.range = int_range::full; break;
            case 2: p.range = int_range::signed_extreme; break;
            case 3:
              p.scheme = int_scheme::affine;
              p.range_includes_zero = counter % 2 == 0;
              break;
            default: p.scheme = int_scheme::affine_offset; break;
          }
          p.scale_format = fmts[counter % 3];
          p.element_rounding = (bits == 4 || bits == 8) && counter % 2 == 0 ? rounding::nearest_even : all_modes[counter % 6];
          if (with_search && counter % 5 == 0) {
            p.search = scale_search::mse_grid;
            p.search_grid = static_cast<int>(lowbit_test::sanitized_size(20, 5));  // sanitized: 4 candidates, not 16
            p.search_norm = counter % 2 ? 2.0f : 2.4f;
          }
          out.push_back(p);
          ++counter;
        }
      }
    }
  }
  return out;
}

std::string describe(const int_params& p, shape s, data_kind k) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "bits=%d scheme=%d range=%d gran=%d G=%zu fmt=%d rm=%d search=%d shape=%zux%zu data=%s",
                p.bits, static_cast<int>(p.scheme), static_cast<int>(p.range), static_cast<int>(p.granularity),
                p.group_size, static_cast<int>(p.scale_format), static_cast<int>(p.element_rounding), static_cast<int>(p.search),
                s.rows, s.cols, kind_name(k));
  return buf;
}

struct quantized {
  errc st = errc::ok;
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> packed;
  std::vector<std::uint8_t> scales;  // bytes
  std::vector<std::uint8_t> zeros;
  errc packed_st = errc::ok;
  std::vector<std::uint8_t> packed_scales;
  bool operator==(const quantized& o) const {
    if (st != o.st || packed_st != o.packed_st) return false;
    if (st == errc::ok && (codes != o.codes || scales != o.scales || zeros != o.zeros)) return false;
    if (packed_st == errc::ok && (packed != o.packed || packed_scales != o.packed_scales)) return false;
    return true;
  }
};

quantized quantize_both_ways(const float* x, shape s, const int_params& p, const std::uint32_t* rb) {
  const auto g = lowbit::int_groups(p, s.rows, s.cols);
  const std::size_t n = s.rows * s.cols;
  quantized q;
  offset_buffer<std::uint8_t> codes(n, 1, 0xEE);
  offset_buffer<float> scales(g.value.group_count, 3, -1.0f), zeros(g.value.group_count, 2, -1.0f);
  q.st = lowbit::quantize_int(x, s.rows, s.cols, p, codes.data(), scales.data(), zeros.data(), rb).code();
  q.codes = codes.vec();
  q.scales = bytes_of(scales.data(), scales.size());
  q.zeros = lowbit::has_zero_points(p) ? bytes_of(zeros.data(), zeros.size()) : std::vector<std::uint8_t>{};
  offset_buffer<std::uint8_t> packed(lowbit::packed_bytes(n, p.bits), 3, 0xA5);
  offset_buffer<float> pscales(g.value.group_count, 1, -1.0f), pzeros(g.value.group_count, 1, -1.0f);
  q.packed_st = lowbit::quantize_int_packed(x, s.rows, s.cols, p, packed.data(), pscales.data(), pzeros.data(), rb).code();
  q.packed = packed.vec();
  q.packed_scales = bytes_of(pscales.data(), pscales.size());
  return q;
}

void check_quantize(data_kind kind, bool with_search, unsigned seed) {
  int checked = 0;
  for (shape s : shapes) {
    for (const int_params& p : parameter_sets(s.cols, with_search)) {
      if (with_search && p.search != scale_search::mse_grid) continue;
      const auto g = lowbit::int_groups(p, s.rows, s.cols);
      ASSERT_TRUE(g.ok());
      const float divisor = p.scheme == int_scheme::symmetric && p.range == int_range::full
                                ? static_cast<float>(1 << (p.bits - 1)) - 0.5f
                                : static_cast<float>((1 << (p.bits - 1)) - 1);
      std::vector<float> base;
      fill(base, s.rows, s.cols, g.value.group_length, kind, seed + static_cast<unsigned>(checked), divisor);
      offset_buffer<float> x(base.size(), static_cast<std::size_t>(checked % 5));
      std::memcpy(x.data(), base.data(), base.size() * sizeof(float));
      const std::vector<std::uint32_t> rb = random_bits(base.size(), seed + 77u);
      const quantized want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_both_ways(x.data(), s, p, rb.data()); });
      // The packed result is the unpacked one, packed.
      if (want.st == errc::ok) {
        ASSERT_EQ(want.packed_st, errc::ok);
        std::vector<std::uint8_t> repacked(lowbit::packed_bytes(base.size(), p.bits));
        ASSERT_TRUE(lowbit::pack_codes(want.codes.data(), base.size(), p.bits, repacked.data()).ok());
        ASSERT_EQ(want.packed, repacked) << describe(p, s, kind);
        ASSERT_EQ(want.packed_scales, want.scales);
      }
      for (const auto& [path, e] : simd_envs()) {
        const quantized got = run_on(path, e, [&] { return quantize_both_ways(x.data(), s, p, rb.data()); });
        ASSERT_TRUE(got == want) << describe(p, s, kind) << " " << env_name(e) << " " << lowbit::isa_name(path) << " status " << static_cast<int>(got.st)
                                 << " vs " << static_cast<int>(want.st);
        if (e != fpenv::round_down && !ftz_sensitive(kind)) {  // both paths in the same MXCSR state
          const quantized same = run_on(isa::scalar, e, [&] { return quantize_both_ways(x.data(), s, p, rb.data()); });
          ASSERT_TRUE(same == got) << describe(p, s, kind) << " scalar under " << env_name(e) << " " << lowbit::isa_name(path);
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, with_search ? 20 : 300);
}

TEST(KernelsIntegerBulk, QuantizeNormalData) {
  REQUIRE_AVX2();
  check_quantize(data_kind::normal, false, 100);
}
TEST(KernelsIntegerBulk, QuantizeSmallIntegers) {
  REQUIRE_AVX2();
  check_quantize(data_kind::integers, false, 200);
}
TEST(KernelsIntegerBulk, QuantizeTies) {
  REQUIRE_AVX2();
  check_quantize(data_kind::ties, false, 300);
}

// Groups of `group` values under a nearest mode, as the grid takes them: scheme 0 symmetric
// restricted, 1 symmetric full range, 2 affine, 3 affine with an offset.
int_params grid_params(int bits, int scheme, scale_storage fmt, std::size_t group, rounding rm) {
  int_params p;
  p.bits = bits;
  p.granularity = granularity::per_group;
  p.group_size = group;
  p.scale_format = fmt;
  p.element_rounding = rm;
  if (scheme == 0) p.range = int_range::restricted;
  if (scheme == 1) p.range = int_range::full;
  if (scheme == 2) p.scheme = int_scheme::affine;
  if (scheme == 3) p.scheme = int_scheme::affine_offset;
  return p;
}

// Whether every SIMD path, in every MXCSR state, quantizes x as the scalar path does (which must
// succeed): the tests of values at and around the grid's half-integers.
testing::AssertionResult every_path_as_scalar(const std::vector<float>& x, shape s, const int_params& p) {
  const quantized want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_both_ways(x.data(), s, p, nullptr); });
  if (want.st != errc::ok) return testing::AssertionFailure() << describe(p, s, data_kind::ties) << ": scalar failed";
  for (const auto& [path, e] : simd_envs()) {
    const quantized got = run_on(path, e, [&] { return quantize_both_ways(x.data(), s, p, nullptr); });
    if (!(got == want))
      return testing::AssertionFailure() << describe(p, s, data_kind::ties) << " " << env_name(e) << " "
                                         << lowbit::isa_name(path);
  }
  return testing::AssertionSuccess();
}

// Exact ties of every nearest mode in groups the grid takes (lengths of 32k, whole batches of 8
// groups): the scale a power of two, each group's extremes set so that the scheme gives exactly
// that scale (and an integer zero-point or offset), the other values (k + 1/2) s, some one float
// step off. The AVX-512 path redoes such lanes by division after the grid (fix_near); a tie rule
// of any mode left out there fails here.
TEST(KernelsIntegerBulk, ExactTiesOfEveryNearestModeOnTheGrid) {
  REQUIRE_AVX2();
  std::mt19937 gen(31);
  const shape s{8, 128};
  int checked = 0;
  for (rounding rm : {rounding::nearest_even, rounding::nearest_away, rounding::nearest_toward_zero}) {
    for (int bits : {4, 8}) {
      for (int scheme = 0; scheme < 4; ++scheme) {
        for (scale_storage fmt : {scale_storage::fp16, scale_storage::bf16}) {
          for (std::size_t group : {32u, 128u}) {
            const int_params p = grid_params(bits, scheme, fmt, group, rm);
            const int code_max = (1 << bits) - 1;
            std::vector<float> x(s.rows * s.cols);
            for (std::size_t g0 = 0; g0 < x.size(); g0 += group) {
              const float sc = std::ldexp(1.0f, static_cast<int>(gen() % 18) - 10);  // offsets within fp16
              int lo_k, hi_k;  // the extremes, in units of sc: the codes' range
              if (scheme < 2) {
                const float d = scheme == 0 ? static_cast<float>((1 << (bits - 1)) - 1) : static_cast<float>(1 << (bits - 1)) - 0.5f;
                x[g0] = (gen() % 2 ? d : -d) * sc;  // amax / divisor = sc
                hi_k = static_cast<int>(d) - 1;
                lo_k = -static_cast<int>(d);
              } else {
                const int z = static_cast<int>(gen() % static_cast<unsigned>(code_max + 1));
                x[g0] = static_cast<float>(-z) * sc;
                x[g0 + 1] = static_cast<float>(code_max - z) * sc;  // (hi - lo) / code_max = sc
                lo_k = -z;
                hi_k = code_max - z - 1;
              }
              for (std::size_t i = g0 + 2; i < g0 + group; ++i) {
                const int k = lo_k + static_cast<int>(gen() % static_cast<unsigned>(hi_k - lo_k + 1));
                float v = (static_cast<float>(k) + 0.5f) * sc;
                if (gen() % 8 == 0) v = std::nextafter(v, gen() % 2 ? 1e9f : -1e9f);
                x[i] = v;
              }
            }
            ASSERT_TRUE(every_path_as_scalar(x, s, p));
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 96);
}

// The grid's near window (docs/kernels.md, "The grid rounding"): values whose x / s lies 0 to 3
// steps of 2^-13 from a half-integer, give or take less than a step, under scales that are not
// powers of two (so 1/s and x * (1/s) round), for every window: the symmetric schemes and 4-bit
// affine codes take the narrow one, 8-bit affine codes the wide one. Each path's bytes must be
// the scalar path's. (The exact ties are the test above.)
TEST(KernelsIntegerBulk, ValuesAroundTheGridWindow) {
  REQUIRE_AVX2();
  std::mt19937 gen(47);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const shape s{4, 512};
  int checked = 0;
  for (rounding rm : {rounding::nearest_even, rounding::nearest_away, rounding::nearest_toward_zero}) {
    for (int bits : {4, 8}) {
      for (int scheme = 0; scheme < 3; ++scheme) {
        for (scale_storage fmt : {scale_storage::fp16, scale_storage::bf16, scale_storage::fp32}) {
          for (std::size_t group : {32u, 64u, 128u}) {
            const int_params p = grid_params(bits, scheme + 1, fmt, group, rm);
            const double top = scheme == 0 ? (1 << (bits - 1)) - 0.5 : (1 << bits) - 1;  // D, or code_max
            std::vector<float> x(s.rows * s.cols);
            for (std::size_t g0 = 0; g0 < x.size(); g0 += group) {
              const double amax = std::ldexp(1.0 + 0.5 * unit(gen), static_cast<int>(gen() % 12) - 6);
              const double sc = amax / top;  // about the group's scale
              const double lo = scheme == 0 ? -top : 0.0;
              for (std::size_t i = g0; i < g0 + group; ++i) {
                const double k = std::floor(lo + (top - lo) * 0.5 * (unit(gen) + 1.0)) + 0.5;
                const double d = static_cast<double>(static_cast<int>(gen() % 7) - 3) * 0x1p-13 +
                                 unit(gen) * std::ldexp(1.0, -13 - static_cast<int>(gen() % 12));
                x[i] = static_cast<float>((k + d) * sc);
              }
              x[g0] = static_cast<float>(scheme == 0 && gen() % 2 ? -amax : amax);
              if (scheme != 0) x[g0 + 1] = 0.0f;
            }
            ASSERT_TRUE(every_path_as_scalar(x, s, p));
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 162);
}

// Calls of 16 MiB of float32, where the dequantizers stream their stores: INT8 in groups of 128
// (codes a byte each) and GPTQ INT4 in groups of 32 (nibbles), outputs at 64-byte aligned
// addresses and one element past them, every path against the scalar one
// (support.hpp's check_large_call).
TEST(KernelsIntegerBulk, LargeCallsAlignedAndNot) {
  const std::size_t rows = 1024, cols = 4096, n = rows * cols;
  const std::vector<float> x = lowbit_test::large_input(n, 23);
  for (const bool nibbles : {false, true}) {
    SCOPED_TRACE(nibbles ? "INT4 g32, nibbles" : "INT8 g128");
    int_params p = lowbit::int_presets::gptq(nibbles ? 4 : 8, nibbles ? 32 : 128);
    if (!nibbles) p.range = int_range::restricted;
    const std::size_t groups = n / p.group_size;
    lowbit_test::check_large_call<float>(paths_with_scalar(), nibbles ? n / 2 : n, groups, n,
                                         [&](std::uint8_t* codes, float* scales, float* y) {
      if (nibbles) {
        return lowbit::quantize_int_packed(x.data(), rows, cols, p, codes, scales, nullptr).ok() &&
               lowbit::dequantize_int_packed(codes, scales, nullptr, rows, cols, p, y).ok();
      }
      return lowbit::quantize_int(x.data(), rows, cols, p, codes, scales, nullptr).ok() &&
             lowbit::dequantize_int(codes, scales, nullptr, rows, cols, p, y).ok();
    });
  }
}

TEST(KernelsIntegerBulk, QuantizeWideRangeWithSubnormals) {
  REQUIRE_AVX2();
  check_quantize(data_kind::wide, false, 400);
}
TEST(KernelsIntegerBulk, QuantizeSubnormalGroups) {
  REQUIRE_AVX2();
  check_quantize(data_kind::subnormal, false, 500);
}
TEST(KernelsIntegerBulk, QuantizeHugeValues) {
  REQUIRE_AVX2();
  check_quantize(data_kind::huge, false, 600);
}
TEST(KernelsIntegerBulk, QuantizeWithMseGridSearch) {
  REQUIRE_AVX2();
  check_quantize(data_kind::normal, true, 700);
  check_quantize(data_kind::ties, true, 710);
}

// Groups that stop the whole-matrix path: NaN, Inf, all zeros, a scale fp16 cannot hold, a group
// of subnormals, between ordinary ones. Same status, and the same bytes up to the failing group.
TEST(KernelsIntegerBulk, SpecialGroupsInTheMiddle) {
  REQUIRE_AVX2();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, 1e6f, 1e-41f, -0.0f, 3e38f};
  for (int bits : {4, 8}) {
    for (int range = 0; range < 2; ++range) {
      for (scale_storage fmt : {scale_storage::fp16, scale_storage::fp32, scale_storage::bf16}) {
        for (float sp : specials) {
          for (int how = 0; how < 2; ++how) {  // one element, or the whole group
            int_params p = lowbit::int_presets::gptq(bits, 32);
            p.range = range ? int_range::full : int_range::restricted;
            p.scale_format = fmt;
            std::vector<float> x;
            fill(x, 4, 128, 32, data_kind::normal, 17);
            if (how == 0) {
              x[2 * 32 + 5] = sp;
            } else {
              for (std::size_t i = 64; i < 96; ++i) x[i] = sp * (i % 2 ? 1.0f : 0.5f);
            }
            const quantized want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_both_ways(x.data(), {4, 128}, p, nullptr); });
            for (const auto& [path, e] : simd_envs()) {
              const quantized got = run_on(path, e, [&] { return quantize_both_ways(x.data(), {4, 128}, p, nullptr); });
              ASSERT_TRUE(got == want) << "bits=" << bits << " range=" << range << " fmt=" << static_cast<int>(fmt)
                                       << " special=" << sp << " how=" << how << " " << env_name(e) << " " << lowbit::isa_name(path);
              if (got.st != errc::ok) {  // groups before the failing one are written identically
                ASSERT_EQ(std::vector<std::uint8_t>(got.codes.begin(), got.codes.begin() + 64),
                          std::vector<std::uint8_t>(want.codes.begin(), want.codes.begin() + 64));
              }
            }
          }
        }
      }
    }
  }
}

TEST(KernelsIntegerBulk, QuantizeFixedScales) {
  REQUIRE_AVX2();
  std::mt19937 gen(3);
  for (shape s : shapes) {
    for (const int_params& p : parameter_sets(s.cols, false)) {
      const auto g = lowbit::int_groups(p, s.rows, s.cols);
      std::vector<float> x;
      fill(x, s.rows, s.cols, g.value.group_length, data_kind::normal, static_cast<unsigned>(gen()));
      std::vector<std::uint8_t> codes(x.size());
      std::vector<float> scales(g.value.group_count), zeros(g.value.group_count);
      ASSERT_TRUE(run_on(isa::scalar, fpenv::clear, [&] {
                    return lowbit::quantize_int(x.data(), s.rows, s.cols, p, codes.data(), scales.data(), zeros.data(),
                                                nullptr);
                  }).ok() ||
                  true);
      // Requantize other data against those parameters.
      fill(x, s.rows, s.cols, g.value.group_length, data_kind::wide, static_cast<unsigned>(gen()));
      const std::vector<std::uint32_t> rb = random_bits(x.size(), 4);
      std::vector<std::uint8_t> want(x.size()), got(x.size());
      const errc sw = run_on(isa::scalar, fpenv::clear, [&] {
        return lowbit::quantize_int_fixed(x.data(), scales.data(), zeros.data(), s.rows, s.cols, p, want.data(), rb.data()).code();
      });
      for (const auto& [path, e] : simd_envs()) {
        const errc sg = run_on(path, e, [&] {
          return lowbit::quantize_int_fixed(x.data(), scales.data(), zeros.data(), s.rows, s.cols, p, got.data(), rb.data()).code();
        });
        ASSERT_EQ(sg, sw) << describe(p, s, data_kind::wide);
        if (sw == errc::ok) {
          ASSERT_EQ(got, want) << describe(p, s, data_kind::wide) << " " << env_name(e) << " " << lowbit::isa_name(path);
        }
      }
    }
  }
}

// Dequantization: codes of every value, stored parameters of every kind (including invalid ones:
// the same error), float32 and bfloat16 results, one code per byte and packed.
struct dequantized {
  errc st = errc::ok, packed_st = errc::ok, bf_st = errc::ok;
  std::vector<std::uint8_t> y, yp, yb;
  bool operator==(const dequantized& o) const {
    return st == o.st && packed_st == o.packed_st && bf_st == o.bf_st && (st != errc::ok || y == o.y) &&
           (packed_st != errc::ok || yp == o.yp) && (bf_st != errc::ok || yb == o.yb);
  }
};

dequantized dequantize_both_ways(const std::uint8_t* codes, const std::uint8_t* packed, shape s, const int_params& p,
                                 const float* scales, const float* zeros) {
  const std::size_t n = s.rows * s.cols;
  dequantized d;
  offset_buffer<float> y(n, 1, -7.0f), yp(n, 2, -7.0f);
  offset_buffer<lowbit::bfloat16> yb(n, 3);
  d.st = lowbit::dequantize_int(codes, scales, zeros, s.rows, s.cols, p, y.data()).code();
  d.packed_st = lowbit::dequantize_int_packed(packed, scales, zeros, s.rows, s.cols, p, yp.data()).code();
  d.bf_st = lowbit::dequantize_int_packed(packed, scales, zeros, s.rows, s.cols, p, yb.data()).code();
  // With the element after the last (offset_buffer's guard): a kernel writes nothing past n.
  d.y = bytes_of(y.data(), n + 1);
  d.yp = bytes_of(yp.data(), n + 1);
  d.yb = bytes_of(yb.data(), n + 1);
  return d;
}

TEST(KernelsIntegerBulk, DequantizeMatchesTheReference) {
  REQUIRE_AVX2();
  std::mt19937 gen(21);
  int checked = 0;
  for (shape s : shapes) {
    for (const int_params& p : parameter_sets(s.cols, false)) {
      const auto g = lowbit::int_groups(p, s.rows, s.cols);
      const std::size_t n = s.rows * s.cols;
      for (int variant = 0; variant < 3; ++variant) {
        std::vector<std::uint8_t> codes(n);
        for (auto& c : codes) c = static_cast<std::uint8_t>(gen() & static_cast<unsigned>(lowbit::max_code(p.bits)));
        std::vector<std::uint8_t> packed(lowbit::packed_bytes(n, p.bits));
        ASSERT_TRUE(lowbit::pack_codes(codes.data(), n, p.bits, packed.data()).ok());
        std::vector<float> scales(g.value.group_count), zeros(g.value.group_count);
        for (std::size_t i = 0; i < scales.size(); ++i) {
          float sc = variant == 1 ? random_wide(gen, -149, 127) : random_wide(gen, -20, 10);
          if (p.scale_format == scale_storage::fp16) sc = static_cast<float>(lowbit::encode<lowbit::float16>(sc));
          if (p.scale_format == scale_storage::bf16) sc = static_cast<float>(lowbit::encode<lowbit::bfloat16>(sc));
          if (variant == 2 && gen() % 8 == 0) sc = std::nextafter(sc, 1e30f);  // not storable in fp16/bf16
          if (variant == 2 && gen() % 16 == 0) sc = std::numeric_limits<float>::infinity();
          scales[i] = sc;
          if (p.scheme == int_scheme::affine) {
            zeros[i] = static_cast<float>(gen() % static_cast<unsigned>(lowbit::max_code(p.bits) + 1));
            if (variant == 2 && gen() % 8 == 0) zeros[i] += 0.5f;
          } else {
            float m = random_wide(gen, -20, 10);
            if (p.scale_format == scale_storage::fp16) m = static_cast<float>(lowbit::encode<lowbit::float16>(m));
            if (p.scale_format == scale_storage::bf16) m = static_cast<float>(lowbit::encode<lowbit::bfloat16>(m));
            zeros[i] = m;
          }
        }
        const dequantized want = run_on(isa::scalar, fpenv::clear, [&] {
          return dequantize_both_ways(codes.data(), packed.data(), s, p, scales.data(), zeros.data());
        });
        for (const auto& [path, e] : simd_envs()) {
          const dequantized got = run_on(path, e, [&] {
            return dequantize_both_ways(codes.data(), packed.data(), s, p, scales.data(), zeros.data());
          });
          ASSERT_TRUE(got == want) << describe(p, s, data_kind::normal) << " variant=" << variant << " " << env_name(e) << " " << lowbit::isa_name(path)
                                   << " status " << static_cast<int>(got.st) << "/" << static_cast<int>(want.st);
          if (e == fpenv::ftz_daz && variant != 1) {
            const dequantized same = run_on(isa::scalar, e, [&] {
              return dequantize_both_ways(codes.data(), packed.data(), s, p, scales.data(), zeros.data());
            });
            ASSERT_TRUE(same == got) << describe(p, s, data_kind::normal) << " scalar under FTZ+DAZ";
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// quantized_matrix goes through the packed paths; INT4 group 32/64/128 and INT8 per token are
// the hot cases.
TEST(KernelsIntegerBulk, QuantizedMatrixRoundTrip) {
  REQUIRE_AVX2();
  const std::vector<int_params> ps = {lowbit::int_presets::gptq(4, 32), lowbit::int_presets::gptq(4, 64),
                                      lowbit::int_presets::gptq(4, 128), lowbit::int_presets::awq(4, 128),
                                      lowbit::int_presets::int8_per_token(), lowbit::int_presets::ggml_q4_0(),
                                      lowbit::int_presets::kivi(2, 32), lowbit::int_presets::int8_per_channel(scale_storage::bf16)};
  for (const int_params& p : ps) {
    for (data_kind k : all_kinds) {
      std::vector<float> x;
      fill(x, 6, 256, p.group_size, k, 8, 7.5f);
      auto make = [&] { return lowbit::quantized_matrix::quantize(x.data(), 6, 256, p); };
      const auto want = run_on(isa::scalar, fpenv::clear, make);
      for (const auto& [path, e] : simd_envs()) {
        const auto got = run_on(path, e, make);
        ASSERT_EQ(got.status.code(), want.status.code()) << kind_name(k);
        if (!want.ok()) continue;
        ASSERT_EQ(bytes_of(got.value.packed_codes().data(), got.value.packed_codes().size()),
                  bytes_of(want.value.packed_codes().data(), want.value.packed_codes().size()))
            << kind_name(k) << " " << env_name(e) << " " << lowbit::isa_name(path);
        ASSERT_EQ(bytes_of(got.value.scales().data(), got.value.scales().size()),
                  bytes_of(want.value.scales().data(), want.value.scales().size()));
        ASSERT_EQ(bytes_of(got.value.zeros().data(), got.value.zeros().size()),
                  bytes_of(want.value.zeros().data(), want.value.zeros().size()));
        std::vector<float> yw(x.size()), yg(x.size());
        std::vector<lowbit::bfloat16> bw(x.size()), bg(x.size());
        run_on(isa::scalar, fpenv::clear, [&] { return want.value.dequantize(yw).code(); });
        run_on(isa::scalar, fpenv::clear, [&] { return want.value.dequantize(bw).code(); });
        ASSERT_TRUE(run_on(path, e, [&] { return got.value.dequantize(yg); }).ok());
        ASSERT_TRUE(run_on(path, e, [&] { return got.value.dequantize(bg); }).ok());
        ASSERT_EQ(bytes_of(yg.data(), yg.size()), bytes_of(yw.data(), yw.size())) << kind_name(k) << " " << env_name(e) << " " << lowbit::isa_name(path);
        ASSERT_EQ(bytes_of(bg.data(), bg.size()), bytes_of(bw.data(), bw.size())) << kind_name(k) << " " << env_name(e) << " " << lowbit::isa_name(path);
      }
    }
  }
}

// bfloat16 results round as encode<bfloat16> does, saturating: dequantized values near FLT_MAX.
TEST(KernelsIntegerBulk, BfloatResultsSaturateLikeTheCodec) {
  REQUIRE_AVX2();
  int_params p = lowbit::int_presets::gptq(4, 32);
  p.scale_format = scale_storage::fp32;
  std::vector<std::uint8_t> codes(64);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i % 16);
  std::vector<std::uint8_t> packed(32);
  ASSERT_TRUE(lowbit::pack_codes(codes.data(), 64, 4, packed.data()).ok());
  const float scales[2] = {std::numeric_limits<float>::max() / 7.0f, from_bits(0x7E7FFFFF)};
  std::vector<lowbit::bfloat16> want(64), got(64);
  ASSERT_TRUE(run_on(isa::scalar, fpenv::clear, [&] {
                return lowbit::dequantize_int_packed(packed.data(), scales, nullptr, 1, 64, p, want.data());
              }).ok());
  for (const auto& [path, e] : simd_envs()) {
    ASSERT_TRUE(run_on(path, e, [&] {
                  return lowbit::dequantize_int_packed(packed.data(), scales, nullptr, 1, 64, p, got.data());
                }).ok());
    ASSERT_EQ(bytes_of(got.data(), 64), bytes_of(want.data(), 64)) << env_name(e) << " " << lowbit::isa_name(path);
  }
}

// bfloat16 results at the bounds of the AVX512_BF16 form (scales with s = 0 or 2^-126 <= |s| <
// 2^119 are rounded by vcvtne2ps2bf16, the others as each value is): scales on both sides of each
// bound, beside each other so that a pair of nibble groups mixes them, codes at 0 and at the top
// of the range, integer zero-points at both ends, groups of 16, 32 and 48 (a partial lookup) and
// INT8 rows of 40 (a partial step of 32). The same scales cover the AVX2 form for byte codes
// (|s| < 2^119 rounded without the Inf check; 255 * 2^120 rounds to Inf, which the reference
// saturates).
TEST(KernelsIntegerBulk, BfloatResultsAtTheScaleBounds) {
  REQUIRE_AVX2();
  const float scales_seen[] = {0.0f, -0.0f, std::ldexp(1.0f, -126), -std::ldexp(1.0f, -126), from_bits(0x007FFFFF),
                               from_bits(1), std::nextafter(std::ldexp(1.0f, 119), 0.0f), std::ldexp(1.0f, 119),
                               -std::ldexp(1.0f, 119), std::nextafter(std::ldexp(1.0f, 123), 0.0f),
                               std::ldexp(1.0f, 123), 1.5f, -3.25f, std::ldexp(1.0f, -100), 1e-38f,
                               std::ldexp(1.0f, 120), -std::nextafter(std::ldexp(1.0f, 121), 0.0f)};
  const std::size_t kinds = sizeof(scales_seen) / sizeof(scales_seen[0]);
  struct config {
    int_params p;
    std::size_t rows, cols;
  };
  std::vector<config> configs;
  for (std::size_t g : {16u, 32u, 48u}) {
    configs.push_back({lowbit::int_presets::gptq(4, g), 10, 3 * g});
    configs.push_back({lowbit::int_presets::awq(4, g), 10, 3 * g});
  }
  int_params affine8 = lowbit::int_presets::int8_per_token();
  affine8.scheme = int_scheme::affine;
  configs.push_back({lowbit::int_presets::int8_per_token(), 2 * kinds, 40});
  configs.push_back({affine8, 2 * kinds, 72});
  std::mt19937 gen(77);
  for (config& c : configs) {
    c.p.scale_format = scale_storage::fp32;
    const auto g = lowbit::int_groups(c.p, c.rows, c.cols);
    ASSERT_TRUE(g.ok());
    const std::size_t n = c.rows * c.cols, len = g.value.group_length;
    const unsigned top = static_cast<unsigned>(lowbit::max_code(c.p.bits));
    for (std::size_t shift = 0; shift < 3; ++shift) {
      std::vector<float> scales(g.value.group_count), zeros(g.value.group_count);
      std::vector<std::uint8_t> codes(n);
      for (std::size_t k = 0; k < scales.size(); ++k) {
        scales[k] = scales_seen[(k * (shift + 1) + shift) % kinds];
        zeros[k] = static_cast<float>(k % 3 == 0 ? 0u : k % 3 == 1 ? top : gen() % (top + 1));
      }
      // Group k's elements (rows of a per-token group, runs of a row otherwise) hold 0 and top.
      for (std::size_t i = 0; i < n; ++i) codes[i] = static_cast<std::uint8_t>(i % len < 2 ? (i % 2) * top : gen() % (top + 1));
      std::vector<std::uint8_t> packed(lowbit::packed_bytes(n, c.p.bits));
      ASSERT_TRUE(lowbit::pack_codes(codes.data(), n, c.p.bits, packed.data()).ok());
      const float* z = c.p.scheme == int_scheme::affine ? zeros.data() : nullptr;
      auto run = [&] {
        offset_buffer<lowbit::bfloat16> y(n, 3);
        const errc st = lowbit::dequantize_int_packed(packed.data(), scales.data(), z, c.rows, c.cols, c.p, y.data()).code();
        EXPECT_EQ(st, errc::ok);
        return bytes_of(y.data(), n + 1);
      };
      const auto want = run_on(isa::scalar, fpenv::clear, run);
      for (const auto& [path, e] : simd_envs()) {
        ASSERT_EQ(run_on(path, e, run), want) << describe(c.p, {c.rows, c.cols}, data_kind::normal) << " shift " << shift
                                             << " " << env_name(e) << " " << lowbit::isa_name(path);
      }
    }
  }
}

// The scalar reference is not independent of FTZ/DAZ where subnormals appear (its float division,
// conversions and comparisons follow MXCSR); the AVX2 path is. This reports the differences for
// the lead instead of asserting (the AVX2 path is checked against the default-MXCSR reference
// above).
TEST(KernelsIntegerBulk, ScalarReferenceUnderFtzDaz) {
  REQUIRE_AVX2();
  int differ = 0, total = 0;
  for (data_kind k : {data_kind::wide, data_kind::subnormal}) {
    for (shape s : shapes) {
      for (const int_params& p : parameter_sets(s.cols, false)) {
        const auto g = lowbit::int_groups(p, s.rows, s.cols);
        std::vector<float> x;
        fill(x, s.rows, s.cols, g.value.group_length, k, 42);
        const quantized clear = run_on(isa::scalar, fpenv::clear, [&] { return quantize_both_ways(x.data(), s, p, nullptr); });
        const quantized ftz = run_on(isa::scalar, fpenv::ftz_daz, [&] { return quantize_both_ways(x.data(), s, p, nullptr); });
        for (const isa path : lowbit_test::simd_paths()) {
          const quantized simd = run_on(path, fpenv::ftz_daz, [&] { return quantize_both_ways(x.data(), s, p, nullptr); });
          EXPECT_TRUE(simd == clear) << describe(p, s, k) << " " << lowbit::isa_name(path);
        }
        differ += clear == ftz ? 0 : 1;
        ++total;
      }
    }
  }
  std::printf("[   NOTE   ] scalar quantize_int under FTZ+DAZ differs from default MXCSR in %d of %d subnormal-bearing cases\n",
              differ, total);
}

// ---------------------------------------------------------------------------------------------
// The fused affine path (kernels::quantize_affine behind quantize_int and quantize_int_packed):
// integer zero-points (AWQ, GPTQ asym; with and without range_includes_zero) and float offsets
// (KIVI), against the scalar reference. Unlike quantize_both_ways above, every output buffer is
// compared whole, whatever the status: on an error both paths must have written the groups
// before the failing one and nothing else.

// Kinds of group the affine schemes treat specially.
enum class agroup {
  normal,           // Gaussian, a random scale
  zeros,            // +0 and -0: scale 0
  one_positive,     // one value: the range widens to [0, v] for an integer zero-point
  one_negative,
  positive,         // lo > 0: zero-point clamps to 0 without range_includes_zero; |x / s| large
  negative,         // hi < 0
  ties,             // s = 2^e exactly, zero-point a, values on and next to half-integers
  far_narrow,       // [1000, 1000 + a few ulp]: tiny scale, large x / s
  subnormal,        // subnormal values: fp16 scales underflow to 0, float32 ones are subnormal
  huge,             // +-3e38: hi - lo overflows float, not double
  fp16_overflow,    // (hi - lo) / qmax beyond fp16: scale_overflow with fp16 scales
  offset_overflow,  // lo = -FLT_MAX (bf16, fp16 offsets overflow) with a small spread
  nan,
  inf,
  minus_inf,
  double_round_f16,   // (hi - lo) / qmax just above an fp16 half-way point that a float rounds onto
  double_round_bf16,  // the same for bfloat16
};
constexpr agroup finite_groups[] = {agroup::normal,     agroup::zeros,     agroup::one_positive, agroup::one_negative,
                                    agroup::positive,   agroup::negative,  agroup::ties,         agroup::far_narrow,
                                    agroup::subnormal,  agroup::huge,      agroup::double_round_f16,
                                    agroup::double_round_bf16};
constexpr agroup all_groups[] = {agroup::normal,        agroup::zeros,           agroup::one_positive,
                                 agroup::one_negative,  agroup::positive,        agroup::negative,
                                 agroup::ties,          agroup::far_narrow,      agroup::subnormal,
                                 agroup::huge,          agroup::fp16_overflow,   agroup::offset_overflow,
                                 agroup::nan,           agroup::inf,             agroup::minus_inf,
                                 agroup::double_round_f16, agroup::double_round_bf16};

const char* agroup_name(agroup k) {
  switch (k) {
    case agroup::normal: return "normal";
    case agroup::zeros: return "zeros";
    case agroup::one_positive: return "one_positive";
    case agroup::one_negative: return "one_negative";
    case agroup::positive: return "positive";
    case agroup::negative: return "negative";
    case agroup::ties: return "ties";
    case agroup::far_narrow: return "far_narrow";
    case agroup::subnormal: return "subnormal";
    case agroup::huge: return "huge";
    case agroup::fp16_overflow: return "fp16_overflow";
    case agroup::offset_overflow: return "offset_overflow";
    case agroup::nan: return "nan";
    case agroup::inf: return "inf";
    case agroup::minus_inf: return "minus_inf";
    case agroup::double_round_f16: return "double_round_f16";
    case agroup::double_round_bf16: return "double_round_bf16";
  }
  return "?";
}

// Fills g[0..len) with a group of kind k for codes 0..code_max.
void fill_affine_group(float* g, std::size_t len, agroup k, int code_max, std::mt19937& gen) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  const float sigma = std::ldexp(1.0f, static_cast<int>(gen() % 21) - 10);
  auto at = [&](std::size_t i) -> float& { return g[i % len]; };
  switch (k) {
    case agroup::normal:
      for (std::size_t i = 0; i < len; ++i) g[i] = nd(gen) * sigma;
      break;
    case agroup::zeros:
      for (std::size_t i = 0; i < len; ++i) g[i] = gen() % 2 ? -0.0f : 0.0f;
      break;
    case agroup::one_positive:
    case agroup::one_negative: {
      const float v = (k == agroup::one_positive ? 1.0f : -1.0f) * std::fabs(nd(gen)) * sigma * 100.0f;
      for (std::size_t i = 0; i < len; ++i) g[i] = v;
      break;
    }
    case agroup::positive:
    case agroup::negative: {
      const float base = (k == agroup::positive ? 1.0f : -1.0f) * sigma * 10.0f;
      for (std::size_t i = 0; i < len; ++i) g[i] = base + std::fabs(nd(gen)) * sigma;
      break;
    }
    case agroup::ties: {
      // lo = -a u, hi = (code_max - a) u: s = u exactly (e kept where fp16 and bf16 hold u),
      // zero-point a; values (q + 1/2) u, their neighbours and integers.
      const float u = std::ldexp(1.0f, static_cast<int>(gen() % 17) - 8);
      const int a = static_cast<int>(gen() % static_cast<unsigned>(code_max + 1));
      for (std::size_t i = 0; i < len; ++i) {
        const int q = static_cast<int>(gen() % static_cast<unsigned>(code_max)) - a;
        float v = (static_cast<float>(q) + 0.5f) * u;
        switch (pick(gen)) {
          case 0: v = std::nextafter(v, -1e30f); break;
          case 1: v = std::nextafter(v, 1e30f); break;
          case 2: v = static_cast<float>(q) * u; break;
          default: break;
        }
        g[i] = v;
      }
      at(gen()) = -static_cast<float>(a) * u;
      at(gen() + 1) = static_cast<float>(code_max - a) * u;
      break;
    }
    case agroup::far_narrow:
      for (std::size_t i = 0; i < len; ++i) g[i] = std::nextafter(1000.0f, 1000.0f + static_cast<float>(gen() % 5));
      at(gen()) = 1000.0f;
      for (std::size_t i = 0; i < len; i += 3) g[i] = std::nextafter(std::nextafter(g[i], 2000.0f), 2000.0f);
      break;
    case agroup::subnormal:
      for (std::size_t i = 0; i < len; ++i) g[i] = random_wide(gen, -149, -127);
      break;
    case agroup::huge:
      for (std::size_t i = 0; i < len; ++i) g[i] = nd(gen) * 1e37f;
      at(gen()) = 3e38f;
      at(gen() + 1) = -3e38f;
      break;
    case agroup::fp16_overflow:
      for (std::size_t i = 0; i < len; ++i) g[i] = nd(gen) * 1e5f;
      at(gen()) = 1e6f;
      at(gen() + 1) = -1e6f;
      break;
    case agroup::offset_overflow:
      for (std::size_t i = 0; i < len; ++i) g[i] = -std::numeric_limits<float>::max();
      at(gen()) = std::nextafter(-std::numeric_limits<float>::max(), 0.0f);
      break;
    case agroup::nan:
    case agroup::inf:
    case agroup::minus_inf:
      for (std::size_t i = 0; i < len; ++i) g[i] = nd(gen) * sigma;
      at(gen()) = k == agroup::nan ? std::numeric_limits<float>::quiet_NaN()
                                   : (k == agroup::inf ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity();
      break;
    case agroup::double_round_f16:
    case agroup::double_round_bf16: {
      // hi = qmax * h, h = 1 + 2^-(p+1) the half-way point between 1 and its fp16 / bf16 successor
      // (the tie rounds down to the even 1); lo = -2^-22 (hi - lo stays exact in double) puts
      // (hi - lo) / qmax just above h, within half a float ulp of it.
      const int p = k == agroup::double_round_f16 ? 10 : 7;
      const float h = 1.0f + std::ldexp(1.0f, -(p + 1));
      const float lo = -std::ldexp(1.0f, -22);
      const float hi = static_cast<float>(code_max) * h;  // exact: at most 8 + p + 2 bits
      for (std::size_t i = 0; i < len; ++i) g[i] = lo + (hi - lo) * static_cast<float>(gen() % 1000) / 1000.0f;
      at(gen()) = lo;
      at(gen() + 1) = hi;
      break;
    }
  }
}

struct affine_out {
  errc st = errc::ok, packed_st = errc::ok;
  std::vector<std::uint8_t> codes, scales, zeros, packed, pscales, pzeros;
  bool operator==(const affine_out& o) const {
    return st == o.st && packed_st == o.packed_st && codes == o.codes && scales == o.scales && zeros == o.zeros &&
           packed == o.packed && pscales == o.pscales && pzeros == o.pzeros;
  }
};

// quantize_int and quantize_int_packed into prefilled, misaligned buffers, all kept whole.
affine_out quantize_affine_both(const float* x, shape s, const int_params& p, const std::uint32_t* rb) {
  const auto g = lowbit::int_groups(p, s.rows, s.cols);
  const std::size_t n = s.rows * s.cols;
  const std::size_t count = g.value.group_count;
  affine_out o;
  offset_buffer<std::uint8_t> codes(n, 1, 0xEE), packed(lowbit::packed_bytes(n, p.bits), 3, 0xA5);
  offset_buffer<float> scales(count, 3, -1.0f), zeros(count, 2, -2.0f), pscales(count, 1, -3.0f), pzeros(count, 1, -4.0f);
  o.st = lowbit::quantize_int(x, s.rows, s.cols, p, codes.data(), scales.data(), zeros.data(), rb).code();
  o.packed_st =
      lowbit::quantize_int_packed(x, s.rows, s.cols, p, packed.data(), pscales.data(), pzeros.data(), rb).code();
  o.codes = codes.vec();
  o.packed = packed.vec();
  o.scales = bytes_of(scales.data(), count);
  o.zeros = bytes_of(zeros.data(), count);
  o.pscales = bytes_of(pscales.data(), count);
  o.pzeros = bytes_of(pzeros.data(), count);
  return o;
}

std::string describe_affine(const int_params& p, shape s, const char* what) {
  return describe(p, s, data_kind::normal) + " incl=" + std::to_string(p.range_includes_zero) + " " + what;
}

// The reference (scalar path, default MXCSR) against the AVX2 path in every MXCSR state.
void check_affine(const std::vector<float>& base, shape s, const int_params& p, std::size_t misalign, unsigned seed,
                  const char* what) {
  offset_buffer<float> x(base.size(), misalign);
  std::memcpy(x.data(), base.data(), base.size() * sizeof(float));
  const std::vector<std::uint32_t> rb = random_bits(base.size(), seed);
  const affine_out want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_affine_both(x.data(), s, p, rb.data()); });
  for (const auto& [path, e] : simd_envs()) {
    const affine_out got = run_on(path, e, [&] { return quantize_affine_both(x.data(), s, p, rb.data()); });
    ASSERT_TRUE(got == want) << describe_affine(p, s, what) << " " << env_name(e) << " " << lowbit::isa_name(path) << " status "
                             << static_cast<int>(got.st) << "/" << static_cast<int>(got.packed_st) << " vs "
                             << static_cast<int>(want.st) << "/" << static_cast<int>(want.packed_st)
                             << (got.codes != want.codes ? " codes" : "") << (got.packed != want.packed ? " packed" : "")
                             << (got.scales != want.scales ? " scales" : "") << (got.zeros != want.zeros ? " zeros" : "");
  }
}

int_params affine_params(int bits, int variant, granularity gr, std::size_t group, scale_storage fmt, rounding rm) {
  int_params p;
  p.bits = bits;
  p.scheme = variant == 2 ? int_scheme::affine_offset : int_scheme::affine;
  p.range_includes_zero = variant == 0;
  p.granularity = gr;
  p.group_size = gr == granularity::per_group ? group : 0;
  p.scale_format = fmt;
  p.element_rounding = rm;
  return p;
}

// Random tensors: shapes, group lengths (32/64/128 and odd ones), per-row and per-tensor,
// misaligned pointers, every format and rounding mode, finite special groups mixed in.
TEST(KernelsIntegerAffine, RandomTensorsMatchTheReference) {
  REQUIRE_AVX2();
  const shape ashapes[] = {{1, 7}, {3, 13}, {2, 32}, {4, 64}, {5, 96}, {3, 128}, {7, 100}, {2, 384}, {1, 1030}, {9, 256}, {16, 128}, {3, 4096}};
  const scale_storage fmts[] = {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16};
  std::mt19937 gen(1234);
  int checked = 0;
  for (shape s : ashapes) {
    std::vector<std::pair<granularity, std::size_t>> grans = {{granularity::per_token, 0}, {granularity::per_channel, 0}};
    if (s.rows * s.cols <= 1030) grans.push_back({granularity::per_tensor, 0});
    for (std::size_t g : {32u, 64u, 128u, 8u, 12u, 33u, 48u, 2u, 50u})
      if (s.cols % g == 0 && g != s.cols) grans.push_back({granularity::per_group, g});
    for (const auto& gr : grans) {
      for (int bits : {4, 8, 3}) {
        for (int variant = 0; variant < 3; ++variant) {
          for (scale_storage fmt : fmts) {
            const rounding rm = all_modes[(checked / 3 + static_cast<int>(fmt)) % 6];
            const int_params p = affine_params(bits, variant, gr.first, gr.second, fmt, rm);
            const auto grouping = lowbit::int_groups(p, s.rows, s.cols);
            ASSERT_TRUE(grouping.ok());
            const std::size_t len = grouping.value.group_length;
            std::vector<float> x(s.rows * s.cols);
            for (std::size_t i = 0; i < grouping.value.group_count; ++i) {
              const agroup k = gen() % 3 != 0 ? agroup::normal : finite_groups[gen() % std::size(finite_groups)];
              fill_affine_group(x.data() + i * len, len, k, lowbit::max_code(bits), gen);
            }
            check_affine(x, s, p, static_cast<std::size_t>(checked % 7), static_cast<unsigned>(checked), "random");
            if (::testing::Test::HasFatalFailure()) return;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 800);
}

// Each special group between ordinary ones, for every scheme variant, format, rounding mode and
// both packed widths: the same status and the same bytes everywhere (on an error, up to the
// failing group and nothing after).
TEST(KernelsIntegerAffine, SpecialGroupsMatchTheReference) {
  REQUIRE_AVX2();
  const scale_storage fmts[] = {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16};
  std::mt19937 gen(99);
  int errors = 0;
  for (agroup kind : all_groups) {
    for (int bits : {4, 8}) {
      for (int variant = 0; variant < 3; ++variant) {
        for (scale_storage fmt : fmts) {
          for (rounding rm : all_modes) {
            for (std::size_t len : {32u, 128u, 100u}) {
              const shape s{4, len == 100 ? 100u : 256u};
              const int_params p = affine_params(bits, variant, len == 100 ? granularity::per_token : granularity::per_group,
                                                 len, fmt, rm);
              const auto grouping = lowbit::int_groups(p, s.rows, s.cols);
              std::vector<float> x(s.rows * s.cols);
              const std::size_t special = grouping.value.group_count / 2;
              for (std::size_t i = 0; i < grouping.value.group_count; ++i)
                fill_affine_group(x.data() + i * len, len, i == special ? kind : agroup::normal, lowbit::max_code(bits), gen);
              check_affine(x, s, p, len % 3, 7, agroup_name(kind));
              if (::testing::Test::HasFatalFailure()) return;
              const affine_out want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_affine_both(x.data(), s, p, nullptr); });
              errors += want.st != errc::ok ? 1 : 0;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(errors, 100);  // the error groups did fail
}

// make_int_codec rounds (hi - lo) / qmax from double to fp16 / bfloat16 once: a float rounded to
// nearest on the way would land on the half-way point and round to even, one ulp low.
TEST(KernelsIntegerAffine, ScalesAreRoundedOnceFromDouble) {
  REQUIRE_AVX2();
  for (scale_storage fmt : {scale_storage::fp16, scale_storage::bf16}) {
    for (int bits : {4, 8}) {
      for (int variant = 0; variant < 3; ++variant) {
        const int p_bits = fmt == scale_storage::fp16 ? 10 : 7;
        const int_params p = affine_params(bits, variant, granularity::per_group, 32, fmt, rounding::nearest_even);
        std::mt19937 gen(5);
        std::vector<float> x(64);
        for (std::size_t i = 0; i < 2; ++i)
          fill_affine_group(x.data() + 32 * i, 32,
                            fmt == scale_storage::fp16 ? agroup::double_round_f16 : agroup::double_round_bf16,
                            lowbit::max_code(bits), gen);
        const float want_scale = 1.0f + std::ldexp(1.0f, -p_bits);  // rounded up, away from the tie
        for (isa i : paths_with_scalar()) {
          for (fpenv e : all_envs) {
            std::vector<std::uint8_t> codes(64);
            std::vector<float> scales(2), zeros(2);
            ASSERT_TRUE(run_on(i, e, [&] {
                          return lowbit::quantize_int(x.data(), 1, 64, p, codes.data(), scales.data(), zeros.data());
                        }).ok());
            EXPECT_EQ(bits_of(scales[0]), bits_of(want_scale)) << lowbit::isa_name(i) << " " << env_name(e);
            EXPECT_EQ(bits_of(scales[1]), bits_of(want_scale)) << lowbit::isa_name(i) << " " << env_name(e);
          }
        }
      }
    }
  }
}

#if LOWBIT_HAS_AVX2_KERNELS
// The kernel itself: it takes every group up to the first one the reference rejects, and returns
// that group's index; the bytes it wrote are the reference's. (Guards against the bulk functions
// silently falling back to the per-group loop, which the comparisons above cannot see.)
TEST(KernelsIntegerAffine, TheFusedKernelDoesTheGroupsAndStopsAtTheFirstError) {
  REQUIRE_AVX2();
  std::mt19937 gen(11);
  for (agroup kind : all_groups) {
    for (int variant = 0; variant < 3; ++variant) {
      for (scale_storage fmt : {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16}) {
        for (bool nibbles : {false, true}) {
          const int bits = nibbles ? 4 : 8;
          const std::size_t len = 64, count = 11;
          const int_params p = affine_params(bits, variant, granularity::per_group, len, fmt, rounding::nearest_even);
          std::vector<float> x(len * count);
          for (std::size_t i = 0; i < count; ++i)
            fill_affine_group(x.data() + i * len, len, i == 9 ? kind : agroup::normal, lowbit::max_code(bits), gen);
          const shape s{1, len * count};
          const affine_out want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_affine_both(x.data(), s, p, nullptr); });
          lowbit::kernels::int_affine_job j;
          j.x = x.data();
          j.group_length = len;
          j.offset = variant == 2;
          j.widen_to_zero = variant == 0;
          j.code_max = lowbit::max_code(bits);
          j.scale_format = fmt;
          j.pack_nibbles = nibbles;
          std::vector<std::uint8_t> codes(nibbles ? len * count / 2 : len * count, 0xEE);
          std::vector<float> scales(count, -1.0f), zeros(count, -2.0f);
          j.codes = codes.data();
          j.scales = scales.data();
          j.zeros = zeros.data();
          const std::size_t stop = [&] {
            const lowbit::kernels::ieee_scope env;  // the bulk calls hold it around the fused kernels
            return lowbit::kernels::quantize_affine(j, 0, count);
          }();
          // A (widened) range of 2^126 or more goes back to the reference, which decides whether
          // its grid overflows float (scale_overflow) or not.
          float lo = x[9 * len], hi = x[9 * len];
          for (std::size_t i = 9 * len; i < 10 * len; ++i) {
            lo = std::fmin(lo, x[i]);
            hi = std::fmax(hi, x[i]);
          }
          if (variant == 0 || (variant == 1 && lo == hi)) {
            lo = std::fmin(lo, 0.0f);
            hi = std::fmax(hi, 0.0f);
          }
          const bool handed_back = !(hi - lo < 0x1p126f);
          const std::size_t expect = want.st == errc::ok && !handed_back ? count : 9;
          ASSERT_EQ(stop, expect) << agroup_name(kind) << " variant " << variant;
          const std::size_t code_bytes = stop * (nibbles ? len / 2 : len);
          const std::vector<std::uint8_t>& want_codes = nibbles ? want.packed : want.codes;
          ASSERT_EQ(std::vector<std::uint8_t>(codes.begin(), codes.begin() + code_bytes),
                    std::vector<std::uint8_t>(want_codes.begin(), want_codes.begin() + code_bytes))
              << agroup_name(kind) << " variant " << variant;
          ASSERT_EQ(bytes_of(scales.data(), stop), std::vector<std::uint8_t>(want.scales.begin(), want.scales.begin() + 4 * stop));
          ASSERT_EQ(bytes_of(zeros.data(), stop), std::vector<std::uint8_t>(want.zeros.begin(), want.zeros.begin() + 4 * stop));
          for (std::size_t b = code_bytes; b < codes.size(); ++b) ASSERT_EQ(codes[b], 0xEE);  // nothing after
        }
      }
    }
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// ggml Q4_0 / Q8_0

template <class Block>
std::vector<std::uint8_t> block_bytes(const std::vector<Block>& b) {
  return bytes_of(reinterpret_cast<const std::uint8_t*>(b.data()), b.size() * sizeof(Block));
}

// Block kinds of fill_blocks; kinds 3, 4 and 12 hold subnormals.
constexpr int block_kinds = 13;
bool subnormal_kind(std::size_t kind) { return kind == 3 || kind == 4 || kind == 12; }
void fill_blocks(std::vector<float>& x, std::size_t blocks, int variant, std::mt19937& gen) {
  x.assign(blocks * 32, 0.0f);
  for (std::size_t b = 0; b < blocks; ++b) {
    float* xb = x.data() + b * 32;
    const int kind = (variant + static_cast<int>(b)) % block_kinds;
    for (std::size_t j = 0; j < 32; ++j) {
      switch (kind) {
        case 0: xb[j] = random_wide(gen, -10, 10); break;
        case 1: xb[j] = static_cast<float>(static_cast<int>(gen() % 33) - 16) * 0.25f; break;  // ties, equal maxima
        case 2: xb[j] = 0.0f; break;
        case 3: xb[j] = random_wide(gen, -149, -110); break;
        case 4: xb[j] = random_wide(gen, -149, 20); break;
        case 5: xb[j] = (j % 2 ? -1.0f : 1.0f) * 8.0f; break;  // +max and -max of equal magnitude
        case 6: xb[j] = static_cast<float>(static_cast<int>(gen() % 255) - 127) / 127.0f * 3.0f; break;
        case 7: xb[j] = j == 0 ? -0.0f : 0.0f; break;
        case 9: xb[j] = -0.0f; break;  // Q4_0's max stays +0
        case 10: xb[j] = j == 5 ? -6.0f : j == 20 ? 6.0f : random_wide(gen, -3, 1); break;  // -max first
        case 11: xb[j] = j == 30 ? -6.0f : static_cast<float>(j % 7) - 3.0f; break;  // negative max only
        case 12: xb[j] = j % 3 == 0 ? 0.0f : random_wide(gen, -149, -135); break;  // id = Inf, 0 * id NaN
        default: xb[j] = std::nextafter(static_cast<float>(static_cast<int>(gen() % 17) - 8) + 0.5f, 0.0f); break;
      }
    }
  }
}

TEST(KernelsIntegerGgml, QuantizeAndDequantizeMatchTheReference) {
  REQUIRE_AVX2();
  std::mt19937 gen(13);
  for (int variant = 0; variant < 40; ++variant) {
    // Up to 13 blocks, or 25..37 (several batches of 8, so that a stop lands in a later one).
    const std::size_t blocks = 1 + static_cast<std::size_t>(variant % 13) + (variant % 4 == 3 ? 24 : 0);
    std::vector<float> xs;
    fill_blocks(xs, blocks, variant, gen);
    const float inf = std::numeric_limits<float>::infinity();
    if (variant % 10 == 7) xs[gen() % xs.size()] = variant % 20 == 7 ? inf : std::numeric_limits<float>::quiet_NaN();
    if (variant % 10 == 8) xs[gen() % xs.size()] = 1e7f;  // fp16 scale overflow
    offset_buffer<float> x(xs.size(), static_cast<std::size_t>(variant % 3));
    std::memcpy(x.data(), xs.data(), xs.size() * sizeof(float));
    const std::size_t n = xs.size();
    auto q4 = [&] {
      std::vector<lowbit::ggml_block_q4_0> y(blocks);
      std::memset(static_cast<void*>(y.data()), 0x5A, y.size() * sizeof(lowbit::ggml_block_q4_0));
      const errc e = lowbit::ggml_quantize_q4_0(x.data(), 1, n, y.data()).code();
      return std::make_pair(e, block_bytes(y));
    };
    auto q8 = [&] {
      std::vector<lowbit::ggml_block_q8_0> y(blocks);
      std::memset(static_cast<void*>(y.data()), 0x5A, y.size() * sizeof(lowbit::ggml_block_q8_0));
      const errc e = lowbit::ggml_quantize_q8_0(x.data(), 1, n, y.data()).code();
      return std::make_pair(e, block_bytes(y));
    };
    const auto w4 = run_on(isa::scalar, fpenv::clear, q4);
    const auto w8 = run_on(isa::scalar, fpenv::clear, q8);
    for (const auto& [path, e] : simd_envs()) {
      ASSERT_EQ(run_on(path, e, q4), w4) << "Q4_0 variant " << variant << " " << env_name(e) << " " << lowbit::isa_name(path);
      ASSERT_EQ(run_on(path, e, q8), w8) << "Q8_0 variant " << variant << " " << env_name(e) << " " << lowbit::isa_name(path);
    }
    // Dequantize arbitrary blocks: every fp16 scale pattern class, NaN and Inf included.
    std::vector<lowbit::ggml_block_q4_0> b4(blocks);
    std::vector<lowbit::ggml_block_q8_0> b8(blocks);
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::uint16_t specials[] = {0x7C00, 0xFC00, 0x7E01, 0xFD00, 0x0001, 0x8200, 0x0000, 0x8000, 0x7BFF};
      const std::uint16_t d = gen() % 3 == 0 ? specials[gen() % 9] : static_cast<std::uint16_t>(gen());
      b4[b].d = d;
      b8[b].d = d;
      for (auto& q : b4[b].qs) q = static_cast<std::uint8_t>(gen());
      for (auto& q : b8[b].qs) q = static_cast<std::int8_t>(gen());
    }
    offset_buffer<float> yw(n, 1), yg(n, 2);
    run_on(isa::scalar, fpenv::clear, [&] { return lowbit::ggml_dequantize_q4_0(b4.data(), 1, n, yw.data()).code(); });
    for (const auto& [path, e] : simd_envs()) {
      ASSERT_TRUE(run_on(path, e, [&] { return lowbit::ggml_dequantize_q4_0(b4.data(), 1, n, yg.data()); }).ok());
      ASSERT_EQ(bytes_of(yg.data(), n), bytes_of(yw.data(), n)) << "Q4_0 dequantize " << variant << " " << env_name(e) << " " << lowbit::isa_name(path);
    }
    run_on(isa::scalar, fpenv::clear, [&] { return lowbit::ggml_dequantize_q8_0(b8.data(), 1, n, yw.data()).code(); });
    for (const auto& [path, e] : simd_envs()) {
      ASSERT_TRUE(run_on(path, e, [&] { return lowbit::ggml_dequantize_q8_0(b8.data(), 1, n, yg.data()); }).ok());
      ASSERT_EQ(bytes_of(yg.data(), n), bytes_of(yw.data(), n)) << "Q8_0 dequantize " << variant << " " << env_name(e) << " " << lowbit::isa_name(path);
    }
  }
}

// Calls of 4M values (16 MiB of float32), where the ggml dequantizers stream their stores: the
// floats at a 64-byte aligned address (both paths stream), 32 bytes past one (the AVX-512 path
// hands those to the AVX2 kernel, whose stores are aligned there) and one float past one (no
// stream). Every path must write the scalar path's blocks and floats, and nothing next to them.
TEST(KernelsIntegerGgml, LargeCallsAlignedAndNot) {
  const std::size_t n = std::size_t{1} << 22, blocks = n / 32;
  const std::vector<float> x = lowbit_test::large_input(n, 29);
  std::vector<lowbit::ggml_block_q4_0> b4(blocks);
  std::vector<lowbit::ggml_block_q8_0> b8(blocks);
  for (const std::size_t shift : {std::size_t{0}, std::size_t{8}, std::size_t{1}}) {
    std::vector<std::uint8_t> want4, want8;
    std::vector<float> want_y4, want_y8;
    for (const isa path : paths_with_scalar()) {
      SCOPED_TRACE(testing::Message() << lowbit::isa_name(path) << ", shift " << shift);
      const lowbit::scoped_isa use(path);
      ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, n, b4.data()).ok());
      ASSERT_TRUE(lowbit::ggml_quantize_q8_0(x.data(), 1, n, b8.data()).ok());
      std::vector<float> y4(n + 32, -1.0f), y8(n + 32, -1.0f);
      const std::size_t at4 = lowbit_test::to_line(y4.data()) + shift, at8 = lowbit_test::to_line(y8.data()) + shift;
      ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(b4.data(), 1, n, y4.data() + at4).ok());
      ASSERT_TRUE(lowbit::ggml_dequantize_q8_0(b8.data(), 1, n, y8.data() + at8).ok());
      const std::vector<float> w4 = lowbit_test::written(y4, at4, n), w8 = lowbit_test::written(y8, at8, n);
      EXPECT_EQ(w4.front(), -1.0f);
      EXPECT_EQ(w4.back(), -1.0f);
      EXPECT_EQ(w8.front(), -1.0f);
      EXPECT_EQ(w8.back(), -1.0f);
      if (want4.empty()) {
        want4 = block_bytes(b4);
        want8 = block_bytes(b8);
        want_y4 = w4;
        want_y8 = w8;
        continue;
      }
      EXPECT_TRUE(block_bytes(b4) == want4);
      EXPECT_TRUE(block_bytes(b8) == want8);
      EXPECT_EQ(std::memcmp(w4.data(), want_y4.data(), w4.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(w8.data(), want_y8.data(), w8.size() * sizeof(float)), 0);
    }
  }
}

// The scalar ggml quantizers in the same FTZ+DAZ state, on blocks without subnormals.
TEST(KernelsIntegerGgml, SameStateOnNormalBlocks) {
  REQUIRE_AVX2();
  std::mt19937 gen(77);
  std::vector<float> x;
  fill_blocks(x, 64, 0, gen);
  for (std::size_t b = 0; b < 64; ++b) {
    if (subnormal_kind(b % static_cast<std::size_t>(block_kinds))) {
      for (std::size_t j = 0; j < 32; ++j) x[b * 32 + j] = 1.5f;
    }
  }
  std::vector<lowbit::ggml_block_q4_0> a(64), c(64);
  std::vector<lowbit::ggml_block_q8_0> a8(64), c8(64);
  ASSERT_TRUE(run_on(isa::scalar, fpenv::ftz_daz, [&] { return lowbit::ggml_quantize_q4_0(x.data(), 1, x.size(), a.data()); }).ok());
  ASSERT_TRUE(run_on(isa::scalar, fpenv::ftz_daz, [&] { return lowbit::ggml_quantize_q8_0(x.data(), 1, x.size(), a8.data()); }).ok());
  for (const isa path : lowbit_test::simd_paths()) {
    ASSERT_TRUE(run_on(path, fpenv::ftz_daz, [&] { return lowbit::ggml_quantize_q4_0(x.data(), 1, x.size(), c.data()); }).ok());
    ASSERT_TRUE(run_on(path, fpenv::ftz_daz, [&] { return lowbit::ggml_quantize_q8_0(x.data(), 1, x.size(), c8.data()); }).ok());
    EXPECT_EQ(block_bytes(a), block_bytes(c)) << lowbit::isa_name(path);
    EXPECT_EQ(block_bytes(a8), block_bytes(c8)) << lowbit::isa_name(path);
  }
}

// Random shapes for the vector widths: group lengths around multiples of 16 and 32 (the AVX-512
// and AVX2 grid chunks, masked tails of 1..31), rows up to 4096 and more, every scheme, scale
// format and rounding mode, misaligned inputs; quantization and dequantization on every SIMD
// path against the scalar reference.
TEST(KernelsIntegerBulk, RandomShapesOnEverySimdPath) {
  REQUIRE_AVX2();
  std::mt19937 gen(2024);
  const std::size_t lengths[] = {16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256, 17, 31, 33, 47, 63, 65, 2, 6, 1};
  const scale_storage fmts[] = {scale_storage::fp32, scale_storage::fp16, scale_storage::bf16};
  const rounding modes[] = {rounding::nearest_even, rounding::nearest_away, rounding::nearest_toward_zero,
                            rounding::nearest_even, rounding::toward_zero, rounding::stochastic};
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t len = lengths[gen() % std::size(lengths)];
    const std::size_t rows = 1 + gen() % 6;
    int_params p;
    p.bits = trial % 3 == 0 ? 8 : trial % 3 == 1 ? 4 : static_cast<int>(2 + gen() % 6);
    std::size_t cols = len * (1 + gen() % 4);
    switch (gen() % 4) {
      case 0: p.granularity = granularity::per_group; p.group_size = len; break;
      case 1: p.granularity = granularity::per_token; cols += (gen() % 2) * (4096 / len) * len; break;
      case 2: p.granularity = granularity::per_channel; break;
      default: p.granularity = granularity::per_tensor; break;
    }
    if (p.granularity == granularity::per_group && cols == len) cols *= 2;
    switch (gen() % 5) {
      case 0: p.range = int_range::restricted; break;
      case 1: p.range = int_range::full; break;
      case 2: p.scheme = int_scheme::affine; p.range_includes_zero = true; break;
      case 3: p.scheme = int_scheme::affine; p.range_includes_zero = false; break;
      default: p.scheme = int_scheme::affine_offset; break;
    }
    p.scale_format = fmts[gen() % 3];
    p.element_rounding = modes[gen() % std::size(modes)];
    const shape s{rows, cols};
    const auto g = lowbit::int_groups(p, rows, cols);
    ASSERT_TRUE(g.ok()) << describe(p, s, data_kind::normal);
    const data_kind kind = all_kinds[gen() % std::size(all_kinds)];
    std::vector<float> base;
    const float divisor = p.scheme == int_scheme::symmetric && p.range == int_range::full
                              ? static_cast<float>(1 << (p.bits - 1)) - 0.5f
                              : static_cast<float>((1 << (p.bits - 1)) - 1);
    fill(base, rows, cols, g.value.group_length, kind, static_cast<unsigned>(gen()), divisor);
    offset_buffer<float> x(base.size(), gen() % 16);
    std::memcpy(x.data(), base.data(), base.size() * sizeof(float));
    const std::vector<std::uint32_t> rb = random_bits(base.size(), static_cast<unsigned>(trial));
    const quantized want = run_on(isa::scalar, fpenv::clear, [&] { return quantize_both_ways(x.data(), s, p, rb.data()); });
    // Dequantization of random codes with the reference's parameters (or made-up ones).
    const std::size_t n = rows * cols;
    std::vector<std::uint8_t> codes(n);
    for (auto& c : codes) c = static_cast<std::uint8_t>(gen() & static_cast<unsigned>(lowbit::max_code(p.bits)));
    std::vector<std::uint8_t> packed(lowbit::packed_bytes(n, p.bits));
    ASSERT_TRUE(lowbit::pack_codes(codes.data(), n, p.bits, packed.data()).ok());
    std::vector<float> scales(g.value.group_count, 0.5f), zeros(g.value.group_count, 1.0f);
    if (want.st == errc::ok) {
      std::memcpy(scales.data(), want.scales.data(), want.scales.size());
      if (!want.zeros.empty()) std::memcpy(zeros.data(), want.zeros.data(), want.zeros.size());
    }
    const dequantized dwant = run_on(isa::scalar, fpenv::clear, [&] {
      return dequantize_both_ways(codes.data(), packed.data(), s, p, scales.data(), zeros.data());
    });
    for (const isa path : lowbit_test::simd_paths()) {
      for (const fpenv e : {fpenv::clear, fpenv::ftz_daz}) {
        const quantized got = run_on(path, e, [&] { return quantize_both_ways(x.data(), s, p, rb.data()); });
        ASSERT_TRUE(got == want) << describe(p, s, kind) << " " << env_name(e) << " " << lowbit::isa_name(path);
        const dequantized dgot = run_on(path, e, [&] {
          return dequantize_both_ways(codes.data(), packed.data(), s, p, scales.data(), zeros.data());
        });
        ASSERT_TRUE(dgot == dwant) << describe(p, s, kind) << " dequantize " << env_name(e) << " "
                                   << lowbit::isa_name(path);
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

// Float outputs of 16 MiB or more are written with non-temporal stores when the destination is
// 32-byte aligned (kernels/integer/avx2_table.hpp's streams_f32; 64-byte on the AVX-512 path): the
// same values as the scalar path, for the group dequantizers (bytes and nibbles, symmetric and
// affine) on every SIMD path and the ggml blocks, with the destination aligned to 64 and to 32
// bytes (streamed) and misaligned by one float (not streamed).
TEST(KernelsIntegerBulk, LargeOutputsStreamTheSameValues) {
  REQUIRE_AVX2();
  constexpr std::size_t rows = 1024, cols = 4096 + 32;  // 16.5 MiB of floats
  constexpr std::size_t n = rows * cols;
  std::mt19937 gen(77);
  std::vector<std::uint8_t> codes(n);
  for (auto& c : codes) c = static_cast<std::uint8_t>(gen() & 15u);
  std::vector<std::uint8_t> packed(n / 2);
  for (std::size_t i = 0; i < n / 2; ++i) packed[i] = static_cast<std::uint8_t>(codes[2 * i] | codes[2 * i + 1] << 4);
  for (const int_scheme scheme : {int_scheme::symmetric, int_scheme::affine}) {
    // GPTQ-style INT4 g32 with fp16 scales: symmetric (zero-point 8) or affine (stored zeros).
    int_params p = lowbit::int_presets::gptq(4, 32);
    p.scheme = scheme;
    const std::size_t groups = n / 32;
    std::vector<float> scales(groups), zeros(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      scales[g] = static_cast<float>(lowbit::encode<lowbit::float16>(0.01f + 0.001f * static_cast<float>(gen() % 100)));
      zeros[g] = static_cast<float>(gen() % 16);
    }
    const float* z = scheme == int_scheme::affine ? zeros.data() : nullptr;
    std::vector<float> want(n);
    ASSERT_TRUE(run_on(isa::scalar, fpenv::clear, [&] {
      return lowbit::dequantize_int(codes.data(), scales.data(), z, rows, cols, p, want.data());
    }).ok());
    // 64-byte aligned (both paths stream), 32 (the AVX2 stores stream), and unaligned (none).
    std::vector<float> buffer(n + 32);
    float* aligned = buffer.data();
    while (reinterpret_cast<std::uintptr_t>(aligned) % 64 != 0) ++aligned;
    for (const isa path : lowbit_test::simd_paths())
    for (float* y : {aligned, aligned + 8, aligned + 1}) {
      std::fill(buffer.begin(), buffer.end(), -1.0f);
      ASSERT_TRUE(run_on(path, fpenv::ftz_daz, [&] {
        return lowbit::dequantize_int(codes.data(), scales.data(), z, rows, cols, p, y);
      }).ok());
      ASSERT_EQ(std::memcmp(y, want.data(), n * sizeof(float)), 0)
          << "bytes, offset " << (y - aligned) << " " << lowbit::isa_name(path);
      std::fill(buffer.begin(), buffer.end(), -1.0f);
      ASSERT_TRUE(run_on(path, fpenv::clear, [&] {
        return lowbit::dequantize_int_packed(packed.data(), scales.data(), z, rows, cols, p, y);
      }).ok());
      ASSERT_EQ(std::memcmp(y, want.data(), n * sizeof(float)), 0)
          << "nibbles, offset " << (y - aligned) << " " << lowbit::isa_name(path);
      EXPECT_EQ(y[n], -1.0f);
    }
  }
  const std::size_t blocks = n / 32;
  std::vector<lowbit::ggml_block_q4_0> b4(blocks);
  std::vector<lowbit::ggml_block_q8_0> b8(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    b4[b].d = b8[b].d = lowbit::encode<lowbit::float16>(0.001f * static_cast<float>(1 + gen() % 1000)).bits();
    for (auto& q : b4[b].qs) q = static_cast<std::uint8_t>(gen());
    for (auto& q : b8[b].qs) q = static_cast<std::int8_t>(gen());
  }
  std::vector<float> w4(n), w8(n);
  run_on(isa::scalar, fpenv::clear, [&] { return lowbit::ggml_dequantize_q4_0(b4.data(), 1, n, w4.data()).code(); });
  run_on(isa::scalar, fpenv::clear, [&] { return lowbit::ggml_dequantize_q8_0(b8.data(), 1, n, w8.data()).code(); });
  std::vector<float> buffer(n + 32);
  float* aligned = buffer.data();
  while (reinterpret_cast<std::uintptr_t>(aligned) % 64 != 0) ++aligned;
  for (const isa path : lowbit_test::simd_paths())
  for (float* y : {aligned, aligned + 8, aligned + 1}) {
    std::fill(buffer.begin(), buffer.end(), -1.0f);
    ASSERT_TRUE(run_on(path, fpenv::clear, [&] { return lowbit::ggml_dequantize_q4_0(b4.data(), 1, n, y); }).ok());
    ASSERT_EQ(std::memcmp(y, w4.data(), n * sizeof(float)), 0) << "Q4_0, offset " << (y - aligned) << " " << lowbit::isa_name(path);
    ASSERT_TRUE(run_on(path, fpenv::clear, [&] { return lowbit::ggml_dequantize_q8_0(b8.data(), 1, n, y); }).ok());
    ASSERT_EQ(std::memcmp(y, w8.data(), n * sizeof(float)), 0) << "Q8_0, offset " << (y - aligned) << " " << lowbit::isa_name(path);
    EXPECT_EQ(y[n], -1.0f);
  }
}

}  // namespace
