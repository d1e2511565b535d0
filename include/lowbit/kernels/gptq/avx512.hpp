// lowbit: the AVX-512 sweep of GPTQ (transforms/gptq.hpp): one block of columns for 16 rows at
// once, one row per lane, bit for bit what the row-by-row sweep gives. Taken on the avx512 path
// with the linear algebra's AVX-512 kernel (gptq_run); docs/transforms.md.
#ifndef LOWBIT_KERNELS_GPTQ_AVX512_HPP
#define LOWBIT_KERNELS_GPTQ_AVX512_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/cpu.hpp"
#include "../../core/rounding.hpp"
#include "../../schemes/integer.hpp"
#include "../linalg/avx512.hpp"

#if LOWBIT_HAS_AVX512_LINALG

#include <immintrin.h>

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace detail {

// The sweep of one block for 16 rows at once on the AVX-512 path: lane l of a vector is row
// r0 + l, with its own group parameters, and the block's weights are held transposed, wt[jj][l]
// (jj = j - i1). Per column j: the 16 codes, exactly as int_ref::quantize_one and
// dequantize_one compute them (the same IEEE divisions, round_to_code's floor-and-fraction
// rounding, the offset form's dequantization through double), e = (x - q) / V_jj, then the
// block's later columns -= e V_j,k, one fused multiply-subtract per element as the other paths'
// axpy_neg: every lane gets the bits the row-by-row sweep gives.
struct gptq_lanes {
  alignas(64) float scale[16];   // the stored scale (0: every code the clamped zero-point)
  alignas(64) float offset[16];  // affine_offset's offset, else 0 ((x - 0) / s is x / s bit for bit)
  alignas(64) std::int32_t lo[16], hi[16];  // code_min - zero_point, code_max - zero_point
  alignas(64) std::int32_t zp[16];          // the zero-point
  alignas(64) std::int32_t zfix[16];        // a zero scale's code: the zero-point clamped to the range
  std::uint16_t offset_mask = 0;            // lanes of has_offset codecs
  std::uint16_t zero_mask = 0;              // lanes with scale 0
};

inline void gptq_lane_set(gptq_lanes* lp, std::size_t l, const int_group_codec& c) noexcept {
  const auto u = static_cast<unsigned>(l);
  lp->scale[l] = c.scale;
  lp->offset[l] = c.has_offset ? c.offset : 0.0f;
  lp->lo[l] = c.code_min - c.zero_point;
  lp->hi[l] = c.code_max - c.zero_point;
  lp->zp[l] = c.zero_point;
  lp->zfix[l] = c.zero_point < c.code_min ? c.code_min : c.zero_point > c.code_max ? c.code_max : c.zero_point;
  const auto bit = static_cast<std::uint16_t>(1u << u);
  lp->offset_mask = static_cast<std::uint16_t>(c.has_offset ? lp->offset_mask | bit : lp->offset_mask & ~bit);
  lp->zero_mask = static_cast<std::uint16_t>(c.scale == 0.0f ? lp->zero_mask | bit : lp->zero_mask & ~bit);
}

// wt[jj][l] = w[l * ldw + jj] for l < nl (0 for the lanes beyond), jj < nb: 16 rows of a block
// transposed, a gather per column (16 independent loads from 16 rows: they miss together).
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE inline void gptq_load16(const float* w, std::size_t ldw, std::size_t nl,
                                                             std::size_t nb, float* wt) noexcept {
  alignas(64) std::int32_t offsets[16];
  for (std::size_t l = 0; l < 16; ++l) offsets[l] = static_cast<std::int32_t>(l < nl ? l * ldw : 0);
  const __m512i idx = _mm512_load_si512(offsets);
  const __mmask16 valid = static_cast<__mmask16>((1u << nl) - 1u);
  // (without optimisation GCC's gather is a macro that passes the mask as a signed short)
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wconversion"
#endif
  for (std::size_t jj = 0; jj < nb; ++jj)
    _mm512_store_ps(wt + jj * 16, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, idx, w + jj, 4));
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

// Lanes back to rows: dst[l * ld + jj] = src[jj * 16 + l] for l < nl, jj < nb, 16 columns a
// gather (the codes: each int32 lane's low byte, the code).
#if defined(__GNUC__)  // (without optimisation GCC's gathers are macros with signed conversions)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wconversion"
#endif
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE inline void gptq_rows16(const float* src, std::size_t nb, std::size_t nl,
                                                             float* dst, std::size_t ld) noexcept {
  const __m512i idx = _mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 4);
  for (std::size_t l = 0; l < nl; ++l) {
    float* row = dst + l * ld;
    std::size_t jj = 0;
    for (; jj + 16 <= nb; jj += 16) _mm512_storeu_ps(row + jj, _mm512_i32gather_ps(idx, src + jj * 16 + l, 4));
    for (; jj < nb; ++jj) row[jj] = src[jj * 16 + l];
  }
}
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE inline void gptq_rows16(const std::int32_t* src, std::size_t nb, std::size_t nl,
                                                             std::uint8_t* dst, std::size_t ld) noexcept {
  const __m512i idx = _mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 4);
  for (std::size_t l = 0; l < nl; ++l) {
    std::uint8_t* row = dst + l * ld;
    std::size_t jj = 0;
    for (; jj + 16 <= nb; jj += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + jj),
                       _mm512_cvtepi32_epi8(_mm512_i32gather_epi32(idx, src + jj * 16 + l, 4)));
    for (; jj < nb; ++jj) row[jj] = static_cast<std::uint8_t>(src[jj * 16 + l]);
  }
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// The sweep goes through a block in sub-blocks of at most 16 columns: a column's error updates
// the rest of its sub-block at once, and the block's columns after the sub-block when the
// sub-block ends, 16 errors per load and store of a column (gptq_update16). Every element still
// gets its updates one fused multiply-subtract at a time in column order, so the bits are the
// column-at-a-time sweep's. A sub-block also ends before the first column of a group (a multiple
// of group, when group != 0), where the weights must be current.
inline std::size_t gptq_sub_end(std::size_t i1, std::size_t begin, std::size_t nb, std::size_t group) noexcept {
  std::size_t end = nb - begin < 16 ? nb : begin + 16;
  if (group != 0) {
    const std::size_t next = ((i1 + begin) / group + 1) * group - i1;  // the next group start after begin
    if (next < end) end = next;
  }
  return end;
}

// wt[kk] -= sum over t in [t0, t1), in order, of et[t] v[(t - t0) * ldv + kk], for kk in [t1, nb):
// eight columns held in registers while the errors stream past them.
LOWBIT_TARGET_AVX512 inline void gptq_update16(float* wt, const float* et, const float* v, std::size_t ldv,
                                               std::size_t t0, std::size_t t1, std::size_t nb) noexcept {
  std::size_t kk = t1;
  for (; kk + 8 <= nb; kk += 8) {
    __m512 acc[8];
    for (std::size_t c = 0; c < 8; ++c) acc[c] = _mm512_load_ps(wt + (kk + c) * 16);
    const float* vr = v + kk;
    for (std::size_t t = t0; t < t1; ++t, vr += ldv) {
      const __m512 e = _mm512_load_ps(et + t * 16);
      for (std::size_t c = 0; c < 8; ++c) acc[c] = _mm512_fnmadd_ps(e, _mm512_set1_ps(vr[c]), acc[c]);
    }
    for (std::size_t c = 0; c < 8; ++c) _mm512_store_ps(wt + (kk + c) * 16, acc[c]);
  }
  for (; kk < nb; ++kk) {
    __m512 acc = _mm512_load_ps(wt + kk * 16);
    const float* vr = v + kk;
    for (std::size_t t = t0; t < t1; ++t, vr += ldv)
      acc = _mm512_fnmadd_ps(_mm512_load_ps(et + t * 16), _mm512_set1_ps(*vr), acc);
    _mm512_store_ps(wt + kk * 16, acc);
  }
}

// wt: nb x 16 (the block's weights, transposed), updated in place; v + j * ldv: row j of V;
// refresh(j, lp) is called before column j is quantized and returns whether it changed *lp (it
// may read wt, which holds the current weights, only when j is a multiple of group; group 0: it
// never reads wt). Writes et (errors), ut (codes), qt (values), each nb x 16, and adds e^2 of
// each lane, in column order, in double, to loss[16].
template <class Refresh>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void gptq_sweep16(float* wt, std::size_t i1, std::size_t nb, const float* v,
                                                       std::size_t ldv, std::size_t group, rounding rm,
                                                       gptq_lanes* lp, Refresh& refresh, float* et,
                                                       std::int32_t* ut, float* qt, double* loss) noexcept {
  __m512d loss_lo = _mm512_loadu_pd(loss), loss_hi = _mm512_loadu_pd(loss + 8);
  __m512 sv = _mm512_set1_ps(1.0f), ssafe = sv, ov = _mm512_setzero_ps();
  __m512i lov = _mm512_setzero_si512(), hiv = lov, zpv = lov, zfv = lov;
  __mmask16 offm = 0, zerom = 0;
  const __m512 half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  const __m512i one = _mm512_set1_epi32(1);
  std::size_t sub_begin = 0, sub_end = gptq_sub_end(i1, 0, nb, group);
  for (std::size_t jj = 0; jj < nb; ++jj) {
    const std::size_t j = i1 + jj;
    if (refresh(j, lp)) {
      sv = _mm512_load_ps(lp->scale);
      ov = _mm512_load_ps(lp->offset);
      lov = _mm512_load_si512(lp->lo);
      hiv = _mm512_load_si512(lp->hi);
      zpv = _mm512_load_si512(lp->zp);
      zfv = _mm512_load_si512(lp->zfix);
      offm = lp->offset_mask;
      zerom = lp->zero_mask;
      ssafe = _mm512_mask_blend_ps(zerom, sv, _mm512_set1_ps(1.0f));
    }
    const __m512 x = _mm512_load_ps(wt + jj * 16);
    // round_to_code(y, lo, hi, rm)
    const __m512 y = _mm512_div_ps(_mm512_sub_ps(x, ov), ssafe);
    const __m512 lof = _mm512_cvtepi32_ps(lov), hif = _mm512_cvtepi32_ps(hiv);
    const __mmask16 at_lo = static_cast<__mmask16>(~_mm512_cmp_ps_mask(y, lof, _CMP_GT_OQ));  // !(y > lo), NaN too
    const __mmask16 at_hi = static_cast<__mmask16>(~_mm512_cmp_ps_mask(y, hif, _CMP_LT_OQ) & ~at_lo);
    const __m512 yc = _mm512_min_ps(_mm512_max_ps(y, lof), hif);  // the lanes that round: y itself
    const __mmask16 neg = _mm512_cmp_ps_mask(yc, zero, _CMP_LT_OQ);
    const __m512 a = _mm512_abs_ps(yc);
    const __m512 f = _mm512_floor_ps(a);
    const __m512 frac = _mm512_sub_ps(a, f);
    __m512i n = _mm512_cvttps_epi32(f);
    __mmask16 up = 0;
    switch (rm) {
      case rounding::nearest_even:
        up = static_cast<__mmask16>(_mm512_cmp_ps_mask(frac, half, _CMP_GT_OQ) |
                                    (_mm512_cmp_ps_mask(frac, half, _CMP_EQ_OQ) & _mm512_test_epi32_mask(n, one)));
        break;
      case rounding::nearest_away: up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ); break;
      case rounding::nearest_toward_zero: up = _mm512_cmp_ps_mask(frac, half, _CMP_GT_OQ); break;
      case rounding::toward_pos_inf:
        up = static_cast<__mmask16>(_mm512_cmp_ps_mask(frac, zero, _CMP_GT_OQ) & ~neg);
        break;
      default: break;  // toward_zero (stochastic is rejected by gptq_check)
    }
    n = _mm512_mask_add_epi32(n, up, n, one);
    n = _mm512_mask_sub_epi32(n, neg, _mm512_setzero_si512(), n);
    n = _mm512_min_epi32(_mm512_max_epi32(n, lov), hiv);
    n = _mm512_mask_blend_epi32(at_lo, n, lov);
    n = _mm512_mask_blend_epi32(at_hi, n, hiv);
    __m512i u = _mm512_add_epi32(n, zpv);
    u = _mm512_mask_blend_epi32(zerom, u, zfv);
    // dequantize_one
    __m512 q = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(u, zpv)), sv);
    if (offm != 0) {
      const __m512d lo_d = _mm512_add_pd(
          _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(u)), _mm512_cvtps_pd(_mm512_castps512_ps256(sv))),
          _mm512_cvtps_pd(_mm512_castps512_ps256(ov)));
      const __m512d hi_d = _mm512_add_pd(
          _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(u, 1)),
                        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sv), 1)))),
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ov), 1))));
      const __m512 qo = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo_d)), _mm512_cvtpd_ps(hi_d), 1);
      q = _mm512_mask_blend_ps(offm, q, qo);
    }
    const __m512 e = _mm512_div_ps(_mm512_sub_ps(x, q), _mm512_set1_ps(v[j * ldv + j]));
    _mm512_store_ps(et + jj * 16, e);
    const __m512d e_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(e));  // e^2 exact in double
    const __m512d e_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    loss_lo = _mm512_add_pd(loss_lo, _mm512_mul_pd(e_lo, e_lo));
    loss_hi = _mm512_add_pd(loss_hi, _mm512_mul_pd(e_hi, e_hi));
    _mm512_store_si512(ut + jj * 16, u);
    _mm512_store_ps(qt + jj * 16, q);
    const float* vr = v + j * ldv + i1;
    for (std::size_t kk = jj + 1; kk < sub_end; ++kk)
      _mm512_store_ps(wt + kk * 16, _mm512_fnmadd_ps(e, _mm512_set1_ps(vr[kk]), _mm512_load_ps(wt + kk * 16)));
    if (jj + 1 == sub_end) {  // the sub-block's errors onto the block's later columns
      gptq_update16(wt, et, v + (i1 + sub_begin) * ldv + i1, ldv, sub_begin, sub_end, nb);
      sub_begin = sub_end;
      sub_end = gptq_sub_end(i1, sub_begin, nb, group);
    }
  }
  _mm512_storeu_pd(loss, loss_lo);
  _mm512_storeu_pd(loss + 8, loss_hi);
}

}  // namespace detail
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_LINALG

#endif  // LOWBIT_KERNELS_GPTQ_AVX512_HPP
