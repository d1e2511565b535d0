// lowbit: the scalar reference of the error-sum reduction behind every metric (metrics.hpp): eight
// lanes, lane k summing in index order the elements i with i % 8 == k. The AVX2 twin beside it
// (kernels/metrics/avx2.hpp) keeps the same lanes in the same order, so the same bits;
// tests/test_kernels_metrics.cpp compares the two. Products are never fused into the sums
// (core/no_contract.hpp), whatever the compiler flags.
#ifndef LOWBIT_KERNELS_METRICS_SCALAR_HPP
#define LOWBIT_KERNELS_METRICS_SCALAR_HPP

#include <cmath>
#include <cstddef>

#include "../../core/no_contract.hpp"

namespace lowbit {
namespace kernels {

// The eight per-lane partial sums, before metrics.hpp combines them.
struct error_lanes {
  double rr[8] = {};  // sum r^2
  double tt[8] = {};  // sum t^2
  double ee[8] = {};  // sum (r - t)^2
  double rt[8] = {};  // sum r t
  double max_abs = 0.0;   // max |r - t| over the non-NaN differences
  bool nan_seen = false;  // a difference was NaN
};

// Adds ref[0..n) and test[0..n) into the lanes of l (differences taken in double).
inline void error_lanes_ref(const float* ref, const float* test, std::size_t n, error_lanes& l) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = i % 8;
    const double r = ref[i];
    const double t = test[i];
    const double e = r - t;
    l.rr[k] += lowbit::detail::no_contract(r * r);
    l.tt[k] += lowbit::detail::no_contract(t * t);
    l.ee[k] += lowbit::detail::no_contract(e * e);
    l.rt[k] += lowbit::detail::no_contract(r * t);
    const double a = std::fabs(e);
    l.nan_seen = l.nan_seen || a != a;
    l.max_abs = a > l.max_abs ? a : l.max_abs;
  }
}

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_METRICS_SCALAR_HPP
