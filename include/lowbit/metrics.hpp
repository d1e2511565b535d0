// lowbit: how much a quantization loses. MSE, SQNR, max error, relative Frobenius error and cosine
// similarity of a test vector (dequantized values) against a reference, accumulated in double.
//
//   mse                      sum (r - t)^2 / n
//   sqnr_db                  10 log10( sum r^2 / sum (r - t)^2 )   (+inf when t == r)
//   max_abs_error            max |r - t|
//   relative_frobenius_error sqrt( sum (r - t)^2 / sum r^2 )       (0 when t == r)
//   cosine_similarity        sum r t / sqrt( sum r^2 * sum t^2 )
//
// Every metric is one pass of error_sums_ref, the reduction a SIMD kernel replaces (the AVX2 one
// in kernels/metrics/avx2.hpp runs when lowbit::active_isa() selects it): lane k
// (k = 0..7) accumulates the elements i with i % 8 == k in index order, then the lanes combine as
// s_k = lane_k + lane_{k+4} (k < 4) and total = (s_0 + s_2) + (s_1 + s_3), which is what two
// 4-wide double accumulators and the usual horizontal sum give. Differences are taken in double
// ((double)r - (double)t). Products are never fused into the additions (kernels/metrics/scalar.hpp), so
// both paths give the same bits under any compiler flags, -march=native -ffp-contract=fast too.
//
// Errors (result<double>, never NaN), in docs/api.md's order: inputs of different lengths ->
// size_mismatch; an empty input -> empty_input (a statistic of nothing); a null pointer ->
// bad_argument; a pointer not aligned to float -> misaligned; NaN or Inf in either input ->
// non_finite_input (detected from the sums: squares of finite floats cannot overflow a double
// sum). Every metric also takes two lowbit::span<const float> (std::vector, std::array, ...).
// Degenerate cases: identical inputs give sqnr_db = +inf and relative error 0 even when both are
// all zeros; a zero reference with a nonzero test gives sqnr_db = -inf and relative error +inf;
// cosine similarity is 1 when both vectors are zero and 0 when only one is.
#ifndef LOWBIT_METRICS_HPP
#define LOWBIT_METRICS_HPP

#include <cmath>
#include <cstddef>
#include <limits>

#include "core/checks.hpp"
#include "core/cpu.hpp"
#include "core/span.hpp"
#include "core/status.hpp"
#include "kernels/metrics/avx2.hpp"
#include "kernels/metrics/scalar.hpp"
#include "kernels/fp_env.hpp"

namespace lowbit {

// The sums every metric is made of.
struct error_sums {
  std::size_t n = 0;
  double ref_sq = 0.0;   // sum r^2
  double test_sq = 0.0;  // sum t^2
  double err_sq = 0.0;   // sum (r - t)^2
  double dot = 0.0;      // sum r t
  double max_abs = 0.0;  // max |r - t|
};

namespace detail {
// Adds one reduction's lanes into acc, combined as the file comment says.
inline void add_error_lanes(const kernels::error_lanes& l, std::size_t n, error_sums& acc) noexcept {
  auto combine = [](const double* v) {
    const double s0 = v[0] + v[4];
    const double s1 = v[1] + v[5];
    const double s2 = v[2] + v[6];
    const double s3 = v[3] + v[7];
    return (s0 + s2) + (s1 + s3);
  };
  acc.n += n;
  acc.ref_sq += combine(l.rr);
  acc.test_sq += combine(l.tt);
  acc.err_sq += combine(l.ee);
  acc.dot += combine(l.rt);
  const double mx = l.nan_seen ? std::numeric_limits<double>::quiet_NaN() : l.max_abs;
  acc.max_abs = (mx > acc.max_abs || mx != mx) ? mx : acc.max_abs;
}
}  // namespace detail

// The reference reduction (see the file comment for its exact order). Adds the sums of
// ref[0..n) and test[0..n) into acc; NaN/Inf make the sums non-finite.
inline void error_sums_ref(const float* ref, const float* test, std::size_t n, error_sums& acc) noexcept {
  kernels::error_lanes l;
  kernels::error_lanes_ref(ref, test, n, l);
  detail::add_error_lanes(l, n, acc);
}

// The same sums, from the AVX2 kernel when lowbit::active_isa() selects it
// (kernels/metrics/avx2.hpp: the same lanes in the same order, so the same bits), else from
// error_sums_ref; either way in the IEEE default environment (kernels/fp_env.hpp), so subnormal
// inputs count whatever the caller's MXCSR says.
inline void add_error_sums(const float* ref, const float* test, std::size_t n, error_sums& acc) noexcept {
  const kernels::ieee_scope env;  // the combining additions too
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    kernels::error_lanes l;
    kernels::avx2::error_lanes(ref, test, n, l);
    detail::add_error_lanes(l, n, acc);
    return;
  }
#endif
  error_sums_ref(ref, test, n, acc);
}

// Validated sums of ref[0..n_ref) against test[0..n_test).
[[nodiscard]] inline result<error_sums> error_statistics(const float* ref, std::size_t n_ref, const float* test,
                                                         std::size_t n_test) noexcept {
  result<error_sums> r;
  if (n_ref != n_test) {
    r.status = errc::size_mismatch;
  } else if (n_ref == 0) {
    r.status = errc::empty_input;
  } else if (status c = detail::check_buffers({detail::buffer_of(ref, n_ref), detail::buffer_of(test, n_test)}, {}); !c) {
    r.status = c;
  } else {
    add_error_sums(ref, test, n_ref, r.value);
    const error_sums& s = r.value;
    if (!std::isfinite(s.ref_sq) || !std::isfinite(s.test_sq) || !std::isfinite(s.err_sq) ||
        !std::isfinite(s.dot) || !std::isfinite(s.max_abs))
      r.status = errc::non_finite_input;
  }
  return r;
}

// Metrics from sums (already validated).
inline double mse(const error_sums& s) noexcept { return s.n == 0 ? 0.0 : s.err_sq / static_cast<double>(s.n); }

inline double sqnr_db(const error_sums& s) noexcept {
  if (s.err_sq == 0.0) return std::numeric_limits<double>::infinity();
  if (s.ref_sq == 0.0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(s.ref_sq / s.err_sq);
}

inline double relative_frobenius_error(const error_sums& s) noexcept {
  if (s.err_sq == 0.0) return 0.0;
  if (s.ref_sq == 0.0) return std::numeric_limits<double>::infinity();
  return std::sqrt(s.err_sq / s.ref_sq);
}

inline double cosine_similarity(const error_sums& s) noexcept {
  if (s.ref_sq == 0.0 || s.test_sq == 0.0) return s.ref_sq == s.test_sq ? 1.0 : 0.0;
  const double c = s.dot / (std::sqrt(s.ref_sq) * std::sqrt(s.test_sq));
  return c > 1.0 ? 1.0 : c < -1.0 ? -1.0 : c;  // rounding can step just past +-1
}

namespace detail {
template <class F>
inline result<double> metric(const float* ref, std::size_t n_ref, const float* test, std::size_t n_test,
                             F f) noexcept {
  const result<error_sums> s = error_statistics(ref, n_ref, test, n_test);
  result<double> r;
  r.status = s.status;
  if (s.ok()) r.value = f(s.value);
  return r;
}
}  // namespace detail

[[nodiscard]] inline result<double> mse(const float* ref, std::size_t n_ref, const float* test,
                                        std::size_t n_test) noexcept {
  return detail::metric(ref, n_ref, test, n_test, [](const error_sums& s) { return mse(s); });
}

[[nodiscard]] inline result<double> sqnr_db(const float* ref, std::size_t n_ref, const float* test,
                                            std::size_t n_test) noexcept {
  return detail::metric(ref, n_ref, test, n_test, [](const error_sums& s) { return sqnr_db(s); });
}

[[nodiscard]] inline result<double> max_abs_error(const float* ref, std::size_t n_ref, const float* test,
                                                  std::size_t n_test) noexcept {
  return detail::metric(ref, n_ref, test, n_test, [](const error_sums& s) { return s.max_abs; });
}

[[nodiscard]] inline result<double> relative_frobenius_error(const float* ref, std::size_t n_ref, const float* test,
                                                             std::size_t n_test) noexcept {
  return detail::metric(ref, n_ref, test, n_test, [](const error_sums& s) { return relative_frobenius_error(s); });
}

[[nodiscard]] inline result<double> cosine_similarity(const float* ref, std::size_t n_ref, const float* test,
                                                      std::size_t n_test) noexcept {
  return detail::metric(ref, n_ref, test, n_test, [](const error_sums& s) { return cosine_similarity(s); });
}

// The same metrics of two contiguous views (std::vector<float>, std::array<float, N>, ...).
[[nodiscard]] inline result<double> mse(span<const float> ref, span<const float> test) noexcept {
  return mse(ref.data(), ref.size(), test.data(), test.size());
}
[[nodiscard]] inline result<double> sqnr_db(span<const float> ref, span<const float> test) noexcept {
  return sqnr_db(ref.data(), ref.size(), test.data(), test.size());
}
[[nodiscard]] inline result<double> max_abs_error(span<const float> ref, span<const float> test) noexcept {
  return max_abs_error(ref.data(), ref.size(), test.data(), test.size());
}
[[nodiscard]] inline result<double> relative_frobenius_error(span<const float> ref, span<const float> test) noexcept {
  return relative_frobenius_error(ref.data(), ref.size(), test.data(), test.size());
}
[[nodiscard]] inline result<double> cosine_similarity(span<const float> ref, span<const float> test) noexcept {
  return cosine_similarity(ref.data(), ref.size(), test.data(), test.size());
}

}  // namespace lowbit

#endif  // LOWBIT_METRICS_HPP
