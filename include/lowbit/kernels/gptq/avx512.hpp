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
#include "../integer/avx512.hpp"
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

// r[i][j] <- r[j][i]: a 16 x 16 transpose in registers, four rounds of 16 shuffles (pairs of
// floats, pairs of pairs, then the 128-bit lanes twice). Every loop over the arrays here and in
// the callers runs a constant 16 (or 4) times and is unrolled, so that each array element is a
// register: GCC -O2 left the loops rolled and the arrays on the stack, each round stored and
// reloaded (slow wherever a 512-bit store is forwarded in halves, as on Zen 4).
LOWBIT_AVX512_INLINE void gptq_transpose16(__m512 r[16]) noexcept {
  __m512 t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {  // t[i]: columns 0,1 | 4,5 | 8,9 | 12,13 of rows i, i + 1
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];  // u[4b + c]: rows 4b .. 4b + 3 of columns c, c + 4, c + 8, c + 12, one per lane
#pragma GCC unroll 4
  for (int b = 0; b < 16; b += 4) {
    u[b] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[b]), _mm512_castps_pd(t[b + 2])));
    u[b + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[b]), _mm512_castps_pd(t[b + 2])));
    u[b + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[b + 1]), _mm512_castps_pd(t[b + 3])));
    u[b + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[b + 1]), _mm512_castps_pd(t[b + 3])));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // column 4L + c: lane L of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

// wt[jj][l] = w[l * ldw + jj] for l < nl (0 for the lanes beyond), jj < nb: 16 rows of a block
// transposed, 16 columns at a time in registers.
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE inline void gptq_load16(const float* w, std::size_t ldw, std::size_t nl,
                                                             std::size_t nb, float* wt) noexcept {
  for (std::size_t j0 = 0; j0 < nb; j0 += 16) {
    const std::size_t nc = nb - j0 < 16 ? nb - j0 : 16;
    const __mmask16 tail = kernels::avx512::int_detail::tail16(nc);
    __m512 r[16];
#pragma GCC unroll 16
    for (std::size_t l = 0; l < 16; ++l)
      r[l] = l < nl ? _mm512_maskz_loadu_ps(tail, w + l * ldw + j0) : _mm512_setzero_ps();
    gptq_transpose16(r);
#pragma GCC unroll 16
    for (std::size_t c = 0; c < 16; ++c)
      if (c < nc) _mm512_store_ps(wt + (j0 + c) * 16, r[c]);
  }
}

// Lanes back to rows: dst[l * ld + jj] = src[jj * 16 + l] for l < nl, jj < nb, 16 columns at a
// time in registers: the values (float -> float) or the codes (int32 -> each lane's low byte).
LOWBIT_AVX512_INLINE void gptq_store_row(float* d, __mmask16 m, __m512 x) noexcept { _mm512_mask_storeu_ps(d, m, x); }
LOWBIT_AVX512_INLINE void gptq_store_row(std::uint8_t* d, __mmask16 m, __m512 x) noexcept {
  _mm512_mask_cvtepi32_storeu_epi8(d, m, _mm512_castps_si512(x));
}
template <class Src, class Dst>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void gptq_rows16(const Src* src, std::size_t nb, std::size_t nl, Dst* dst,
                                                      std::size_t ld) noexcept {
  static_assert(sizeof(Src) == 4, "16 lanes of 32 bits");
  const auto* s = reinterpret_cast<const float*>(src);
  for (std::size_t j0 = 0; j0 < nb; j0 += 16) {
    const std::size_t nc = nb - j0 < 16 ? nb - j0 : 16;
    __m512 r[16];
#pragma GCC unroll 16
    for (std::size_t c = 0; c < 16; ++c) r[c] = c < nc ? _mm512_load_ps(s + (j0 + c) * 16) : _mm512_setzero_ps();
    gptq_transpose16(r);
    const __mmask16 tail = kernels::avx512::int_detail::tail16(nc);
#pragma GCC unroll 16
    for (std::size_t l = 0; l < 16; ++l)
      if (l < nl) gptq_store_row(dst + l * ld + j0, tail, r[l]);
  }
}

// hw[i * n + j] = h[(n - 1 - j) * n + (n - 1 - i)] for i <= j: the upper triangle of J H J (J
// reverses the order) read from H's upper triangle, 16 x 16 tiles through registers (each read
// row reversed, the rows taken in reverse order, then transposed); the tiles on the diagonal and
// the edges element by element, so that H's lower triangle is never read.
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE inline void gptq_reversed_upper(const float* h, std::size_t n,
                                                                     float* hw) noexcept {
  const std::size_t nn = n - 1, full = n / 16 * 16;
  const __m512i rev = _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (std::size_t i0 = 0; i0 < n; i0 += 16)
    for (std::size_t j0 = i0; j0 < n; j0 += 16) {
      if (j0 == i0 || j0 + 16 > full) {
        for (std::size_t i = i0; i < i0 + 16 && i < n; ++i)
          for (std::size_t j = i > j0 ? i : j0; j < j0 + 16 && j < n; ++j) hw[i * n + j] = h[(nn - j) * n + (nn - i)];
        continue;
      }
      __m512 r[16];  // r[b][a] = h[nn - j0 - b][nn - i0 - a]
#pragma GCC unroll 16
      for (std::size_t b = 0; b < 16; ++b)
        r[b] = _mm512_permutexvar_ps(rev, _mm512_loadu_ps(h + (nn - j0 - b) * n + (nn - i0 - 15)));
      gptq_transpose16(r);
#pragma GCC unroll 16
      for (std::size_t a = 0; a < 16; ++a) _mm512_storeu_ps(hw + (i0 + a) * n + j0, r[a]);
    }
}

// wt: nb x 16 (the block's weights, transposed), updated in place; v + j * ldv: row j of V;
// refresh(j, lp) is called before column j is quantized and returns whether it changed *lp (it
// may read wt, which holds the current weights). Writes et (errors), ut (codes), qt (values),
// each nb x 16, and adds e^2 of each lane, in column order, in double, to loss[16]. next (ld
// ldn, next_rows rows; null for none): the block of the next 16 rows, fetched into L2 a cache
// line per column while this one is swept, so that its loads do not wait on memory.
template <class Refresh>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void gptq_sweep16(float* wt, std::size_t i1, std::size_t nb, const float* v,
                                                       std::size_t ldv, rounding rm, gptq_lanes* lp,
                                                       Refresh& refresh, float* et, std::int32_t* ut, float* qt,
                                                       double* loss, const float* next,
                                                       std::size_t ldn, std::size_t next_rows) noexcept {
  __m512d loss_lo = _mm512_loadu_pd(loss), loss_hi = _mm512_loadu_pd(loss + 8);
  __m512 sv = _mm512_set1_ps(1.0f), ssafe = sv, ov = _mm512_setzero_ps();
  __m512i lov = _mm512_setzero_si512(), hiv = lov, zpv = lov, zfv = lov;
  __mmask16 offm = 0, zerom = 0;
  const __m512 half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  const __m512i one = _mm512_set1_epi32(1);
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
    if (next != nullptr && jj % 16 < next_rows)
      _mm_prefetch(reinterpret_cast<const char*>(next + jj % 16 * ldn + jj / 16 * 16), _MM_HINT_T1);
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
    for (std::size_t kk = jj + 1; kk < nb; ++kk)
      _mm512_store_ps(wt + kk * 16, _mm512_fnmadd_ps(e, _mm512_set1_ps(vr[kk]), _mm512_load_ps(wt + kk * 16)));
  }
  _mm512_storeu_pd(loss, loss_lo);
  _mm512_storeu_pd(loss + 8, loss_hi);
}

}  // namespace detail
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_LINALG

#endif  // LOWBIT_KERNELS_GPTQ_AVX512_HPP
