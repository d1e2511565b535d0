// Exhaustive: the SIMD conversion paths (AVX2, and AVX-512 where the CPU has it) against the scalar
// path on every float32 input.
//
// For each FP8 / FP6 / FP4 / E8M0 format, float16 and bfloat16, all 2^32 float32 bit patterns go
// through the bulk conversion on every SIMD path (lowbit::detail::encode_on, the dispatch of
// lowbit::convert with the path given, so that the threads need no process-wide switch) and
// through the scalar reference loop
// (kernels/convert/scalar.hpp, the codec element by element) under lowbit's default policy
// (round to nearest even, saturating), and the codes must be equal bit for bit. Four more
// policies are swept on every 7th pattern (an odd stride: every residue of the low mantissa bits
// occurs, at a seventh of the cost): non-saturating overflow (the same kernel with another limit),
// round toward zero (saturating), the other mode of encode_block_direct, and the PyTorch and
// ml_dtypes presets (NaN codes by the input's sign; PyTorch's saturation keeps +-Inf, which the
// block paths then set apart from the finite lanes). The reference runs once per
// chunk and every SIMD path is compared with it, so AVX-512 adds its own conversions only (about a
// second per format and mode). The SIMD calls run with MXCSR's
// flush-to-zero and denormals-are-zero set and rounding toward +Inf, the scalar ones with MXCSR at
// its default, so the sweep also shows that the environment changes nothing.
// (exhaustive_formats.cpp checks the scalar codec against an independent reference on the same
// inputs; together they cover the SIMD paths against the formats' definitions.)
//
// Consecutive bit patterns go through in chunks of 2^16, one contiguous range per thread, so
// every block shape the kernels distinguish (all normal, subnormal results, zeros, NaN, Inf,
// overflow) occurs. The cost is the scalar reference: about 15 s per format and mode on one core
// of a 2.6 GHz Xeon; each SIMD path does 2^32 in about a second.
//
// Prints, per format, mode and SIMD path, the conversions checked, the mismatches, the first (smallest
// input) mismatch in hex, and the elapsed time. LOWBIT_EXHAUSTIVE_STRIDE=k multiplies every
// mode's stride by k (development runs); default 1.
#include <gtest/gtest.h>

#include <lowbit/convert.hpp>
#include <lowbit/core/cpu.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::overflow;

using lowbit_test::stride_from_env;
using lowbit_test::thread_count;

struct tally {
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  bool any = false;
  std::uint32_t input = 0;  // the smallest mismatching input
  std::uint32_t got = 0, expected = 0;

  void add(std::uint32_t in, std::uint32_t g, std::uint32_t e) {
    ++mismatches;
    if (!any || in < input) {
      input = in;
      got = g;
      expected = e;
    }
    any = true;
  }
  void merge(const tally& o) {
    checked += o.checked;
    mismatches += o.mismatches;
    if (o.any && (!any || o.input < input)) {
      input = o.input;
      got = o.got;
      expected = o.expected;
      any = true;
    }
  }
};

// The environment of the AVX2 calls: flush-to-zero, denormals-are-zero and rounding toward +Inf
// for the calling thread while alive.
struct hostile_env {
  lowbit_test::mxcsr_scope scope{lowbit_test::mxcsr_ftz | lowbit_test::mxcsr_daz | lowbit_test::mxcsr_round_up};
};

// The modes swept, each on every `stride`-th pattern (times LOWBIT_EXHAUSTIVE_STRIDE).
struct mode {
  const char* name;
  lowbit::policy p;
  std::uint64_t stride;
};
constexpr lowbit::policy toward_zero() {
  lowbit::policy p;
  p.rm = lowbit::rounding::toward_zero;
  return p;
}
// Toward +Inf without saturation: the limit of a finite lane depends on its sign
// (limit_mode::inf_or_positive), with PyTorch's signed NaN codes.
constexpr lowbit::policy up_nosat() {
  lowbit::policy p = lowbit::presets::pytorch();
  p.rm = lowbit::rounding::toward_pos_inf;
  return p;
}
constexpr mode modes[] = {{"saturate", lowbit::presets::cuda_satfinite(), 1},
                          {"non_saturate/7", lowbit::presets::cuda_nosat(), 7},
                          {"toward_zero/7", toward_zero(), 7},
                          {"pytorch(sat)/7", lowbit::presets::pytorch(overflow::saturate), 7},
                          {"ml_dtypes/7", lowbit::presets::ml_dtypes(), 7},
                          {"up_nosat/7", up_nosat(), 7}};
constexpr int mode_count = sizeof modes / sizeof modes[0];

// Sweeps [begin, end) of the stride-spaced patterns under mode m, on every path of `paths`
// (out[k] tallies paths[k]).
template <class T>
void sweep(const mode& m, std::uint64_t begin, std::uint64_t end, std::uint64_t stride,
           const std::vector<lowbit::isa>& paths, std::vector<tally>& out) {
  constexpr std::size_t chunk = 1 << 16;
  std::vector<float> x(chunk);
  std::vector<T> simd(chunk), scalar(chunk);
  const lowbit::policy& p = m.p;
  for (std::uint64_t k = begin; k < end; k += chunk) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - k));
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t b = static_cast<std::uint32_t>((k + i) * stride);
      std::memcpy(&x[i], &b, sizeof b);
    }
    lowbit::kernels::scalar::encode(x.data(), scalar.data(), n, p, nullptr);
    for (std::size_t j = 0; j < paths.size(); ++j) {
      {
        const hostile_env env;
        lowbit::detail::encode_on(paths[j], x.data(), simd.data(), n, p, nullptr);
      }
      if (std::memcmp(simd.data(), scalar.data(), n * sizeof(T)) != 0) {
        for (std::size_t i = 0; i < n; ++i)
          if (simd[i].bits() != scalar[i].bits()) {
            std::uint32_t b;
            std::memcpy(&b, &x[i], sizeof b);
            out[j].add(b, simd[i].bits(), scalar[i].bits());
          }
      }
      out[j].checked += n;
    }
  }
}

template <class T>
void run_format() {
  const std::vector<lowbit::isa> paths = lowbit_test::simd_paths();
  if (paths.empty()) GTEST_SKIP() << "no SIMD path on this build/CPU";

  const unsigned threads = thread_count();
  const auto start = std::chrono::steady_clock::now();
  for (const mode& m : modes) {
    const std::uint64_t stride = stride_from_env() * m.stride;
    const std::uint64_t count = ((std::uint64_t{1} << 32) + stride - 1) / stride;
    std::vector<std::vector<tally>> parts(threads, std::vector<tally>(paths.size()));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      const std::uint64_t begin = count * t / threads, end = count * (t + 1) / threads;
      pool.emplace_back([&parts, &m, &paths, t, begin, end, stride] { sweep<T>(m, begin, end, stride, paths, parts[t]); });
    }
    for (std::thread& th : pool) th.join();
    for (std::size_t j = 0; j < paths.size(); ++j) {
      tally all;
      for (const auto& part : parts) all.merge(part[j]);
      const char* path = lowbit::isa_name(paths[j]);
      std::printf("[ %-16s] %-14s %-6s %11" PRIu64 " inputs, %" PRIu64 " mismatches\n", T::format::name, m.name, path,
                  all.checked, all.mismatches);
      if (all.any)
        std::printf("    first mismatch: input 0x%08" PRIX32 ": %s 0x%02" PRIX32 ", scalar 0x%02" PRIX32 "\n", all.input,
                    path, all.got, all.expected);
      EXPECT_EQ(all.checked, count) << T::format::name << " " << m.name << " " << path;
      EXPECT_EQ(all.mismatches, 0u) << T::format::name << " " << m.name << " " << path;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ %-16s] %d modes, %zu SIMD paths, %u threads: %.1f s\n", T::format::name, mode_count, paths.size(),
              threads, seconds);
  std::fflush(stdout);
}

TEST(ExhaustiveSimd, Float8E4M3FN) { run_format<lowbit::float8_e4m3fn>(); }
TEST(ExhaustiveSimd, Float8E5M2) { run_format<lowbit::float8_e5m2>(); }
TEST(ExhaustiveSimd, Float8E4M3FNUZ) { run_format<lowbit::float8_e4m3fnuz>(); }
TEST(ExhaustiveSimd, Float8E5M2FNUZ) { run_format<lowbit::float8_e5m2fnuz>(); }
TEST(ExhaustiveSimd, Float6E2M3FN) { run_format<lowbit::float6_e2m3fn>(); }
TEST(ExhaustiveSimd, Float6E3M2FN) { run_format<lowbit::float6_e3m2fn>(); }
TEST(ExhaustiveSimd, Float4E2M1FN) { run_format<lowbit::float4_e2m1fn>(); }
TEST(ExhaustiveSimd, Float8E8M0FNU) { run_format<lowbit::float8_e8m0fnu>(); }
TEST(ExhaustiveSimd, Float16) { run_format<lowbit::float16>(); }
TEST(ExhaustiveSimd, BFloat16) { run_format<lowbit::bfloat16>(); }

}  // namespace
