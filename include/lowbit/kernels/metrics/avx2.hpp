// lowbit: the error-sum reduction of metrics.hpp in AVX2, bit-identical to error_lanes_ref
// (kernels/metrics/scalar.hpp, beside this file).
//
// error_lanes_ref accumulates in eight lanes: lane k sums, in index order, the elements i with
// i % 8 == k. Here those eight lanes are two __m256d accumulators per sum (lanes 0-3 and 4-7):
// 8 floats are loaded, widened to double (exactly: the kernel runs in the IEEE default
// environment, so DAZ cannot zero a subnormal on the way), and each lane gets the same
// r*r, t*t, (r-t)^2 and r*t as the scalar loop, added in the same order. The products are kept
// apart from the additions (no FMA), as the scalar loop keeps them apart (core/no_contract.hpp). A
// partial last vector is loaded under a mask; its empty lanes add +0.0, which changes no sum
// (a sum of this kind never holds -0). The lanes are then combined by metrics.hpp exactly as
// for the scalar lanes. max |r - t| is order-independent (no -0; a NaN difference is seen in
// the sums of squares).
#ifndef LOWBIT_KERNELS_METRICS_AVX2_HPP
#define LOWBIT_KERNELS_METRICS_AVX2_HPP

#include <cstddef>

#include "../../core/cpu.hpp"
#include "scalar.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include "../avx2_common.hpp"
#include "../fp_env.hpp"

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace metrics_detail {

LOWBIT_AVX2_INLINE __m256d product(__m256d a, __m256d b) { return no_fma(_mm256_mul_pd(a, b)); }

struct acc4 {
  __m256d rr, tt, ee, rt, mx;
};

LOWBIT_AVX2_INLINE void step(acc4& a, __m128 r4, __m128 t4) {
  const __m256d r = _mm256_cvtps_pd(r4);
  const __m256d t = _mm256_cvtps_pd(t4);
  const __m256d e = _mm256_sub_pd(r, t);
  a.rr = _mm256_add_pd(a.rr, product(r, r));
  a.tt = _mm256_add_pd(a.tt, product(t, t));
  a.ee = _mm256_add_pd(a.ee, product(e, e));
  a.rt = _mm256_add_pd(a.rt, product(r, t));
  // abs > mx ? abs : mx, as the scalar loop (a NaN leaves mx alone; it shows in ee, below).
  a.mx = _mm256_max_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), e), a.mx);
}

LOWBIT_TARGET_AVX2 inline void error_lanes(const float* ref, const float* test, std::size_t n,
                                           kernels::error_lanes& out) noexcept {
  const __m256d z = _mm256_setzero_pd();
  acc4 lo{z, z, z, z, z};
  acc4 hi{z, z, z, z, z};
  std::size_t i = 0;
  // Prefetch both inputs 2 KiB ahead: the loop spends about 15 cycles per pair of cache lines,
  // too slow for the hardware prefetcher alone to keep enough lines in flight from DRAM.
  constexpr std::size_t ahead = 512;
  for (; i + 16 + ahead <= n; i += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(ref + i + ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(test + i + ahead), _MM_HINT_T0);
    for (std::size_t k = 0; k < 16; k += 8) {
      const __m256 r = _mm256_loadu_ps(ref + i + k);
      const __m256 t = _mm256_loadu_ps(test + i + k);
      step(lo, _mm256_castps256_ps128(r), _mm256_castps256_ps128(t));
      step(hi, _mm256_extractf128_ps(r, 1), _mm256_extractf128_ps(t, 1));
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_loadu_ps(ref + i);
    const __m256 t = _mm256_loadu_ps(test + i);
    step(lo, _mm256_castps256_ps128(r), _mm256_castps256_ps128(t));
    step(hi, _mm256_extractf128_ps(r, 1), _mm256_extractf128_ps(t, 1));
  }
  if (i < n) {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 r = _mm256_maskload_ps(ref + i, m);
    const __m256 t = _mm256_maskload_ps(test + i, m);
    step(lo, _mm256_castps256_ps128(r), _mm256_castps256_ps128(t));
    step(hi, _mm256_extractf128_ps(r, 1), _mm256_extractf128_ps(t, 1));
  }
  _mm256_storeu_pd(out.rr, lo.rr);
  _mm256_storeu_pd(out.rr + 4, hi.rr);
  _mm256_storeu_pd(out.tt, lo.tt);
  _mm256_storeu_pd(out.tt + 4, hi.tt);
  _mm256_storeu_pd(out.ee, lo.ee);
  _mm256_storeu_pd(out.ee + 4, hi.ee);
  _mm256_storeu_pd(out.rt, lo.rt);
  _mm256_storeu_pd(out.rt + 4, hi.rt);
  const __m256d mx = _mm256_max_pd(lo.mx, hi.mx);
  __m128d m2 = _mm_max_pd(_mm256_castpd256_pd128(mx), _mm256_extractf128_pd(mx, 1));
  m2 = _mm_max_pd(m2, _mm_unpackhi_pd(m2, m2));
  out.max_abs = _mm_cvtsd_f64(m2);
  // A NaN difference makes its lane's sum of squares NaN for good; nothing else can (the terms
  // are >= 0 or +Inf), so the scalar loop's nan_seen is "some ee lane is NaN".
  out.nan_seen = _mm256_movemask_pd(_mm256_or_pd(_mm256_cmp_pd(lo.ee, lo.ee, _CMP_UNORD_Q),
                                                 _mm256_cmp_pd(hi.ee, hi.ee, _CMP_UNORD_Q))) != 0;
}

}  // namespace metrics_detail

// The lanes of error_sums_ref(ref, test, n) (metrics.hpp combines them).
inline void error_lanes(const float* ref, const float* test, std::size_t n, kernels::error_lanes& out) noexcept {
  const ieee_scope env;
  metrics_detail::error_lanes(ref, test, n, out);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_METRICS_AVX2_HPP
