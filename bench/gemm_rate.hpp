// lowbit benchmarks: the float32 multiply's measured rate, the yardstick of the transforms'
// benchmarks (bench_gptq, bench_transforms): their time quoted as a multiple of what their own
// multiply flops take at this rate.
#ifndef LOWBIT_BENCH_GEMM_RATE_HPP
#define LOWBIT_BENCH_GEMM_RATE_HPP

#include <chrono>
#include <cstddef>
#include <vector>

#include <lowbit/linalg.hpp>
#include <lowbit/linalg/std_thread_exec.hpp>

namespace lowbit_bench {

// The multiply's rate at 1024^3 on `threads` (1 or 2) threads, GFLOP/s, measured once per
// thread count (a warm-up call, then the mean of `reps` calls).
inline double gemm_rate(int threads, int reps = 5) {
  static double rate[3] = {0.0, 0.0, 0.0};
  if (rate[threads] != 0.0) return rate[threads];
  const std::size_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  lowbit::std_thread_exec pool(static_cast<std::size_t>(threads));
  const lowbit::linalg_exec exec = threads > 1 ? pool.exec() : lowbit::linalg_exec{};
  (void)lowbit::gemm(a.data(), n, b.data(), n, n, n, n, {}, c.data(), n, exec);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) (void)lowbit::gemm(a.data(), n, b.data(), n, n, n, n, {}, c.data(), n, exec);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rate[threads] = reps * 2.0 * n * n * n / s * 1e-9;
  return rate[threads];
}

}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_GEMM_RATE_HPP
