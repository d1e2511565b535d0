// lowbit: AVX2 kernels of the integer schemes, part 3 (internal): the fused affine minmax
// quantization (quantize_affine: integer zero-point or float offset). How its parameters equal
// make_int_codec's: docs/kernels.md, "Fused affine quantization".
#ifndef LOWBIT_KERNELS_INTEGER_AVX2_AFFINE_HPP
#define LOWBIT_KERNELS_INTEGER_AVX2_AFFINE_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "avx2_table.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace int_detail {

// ------------------------------------------------------------------------------------------------
// Per batch of 8 groups: min, max and a NaN/Inf flag, make_int_codec's parameters for all 8 at
// once, then each group's codes (by the grid where it applies, else quantize_run); a group the
// reference must do ends the call. How the parameters equal make_int_codec's: docs/kernels.md,
// "Fused affine quantization".

// Lane-wise min and max of a group of n >= 1 values, and nf: NaN in a lane that met NaN or Inf.
// A short group repeats its first value; a partial last vector is loaded again overlapping the one
// before it (min and max do not mind).
LOWBIT_AVX2_INLINE void lane_range(const float* x, std::size_t n, __m256& mn, __m256& mx, __m256& nf) {
  const __m256 zero = _mm256_setzero_ps();
  if (n < 8) {
    const __m256i m = lane_mask(n);
    mn = mx = _mm256_blendv_ps(_mm256_set1_ps(x[0]), _mm256_maskload_ps(x, m), _mm256_castsi256_ps(m));
    nf = _mm256_mul_ps(mn, zero);
    return;
  }
  __m256 mn0 = _mm256_loadu_ps(x), mx0 = mn0, nf0 = _mm256_mul_ps(mn0, zero);
  __m256 mn1 = n >= 16 ? _mm256_loadu_ps(x + 8) : mn0, mx1 = mn1, nf1 = _mm256_mul_ps(mn1, zero);
  std::size_t i = n >= 16 ? 16 : 8;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 b = _mm256_loadu_ps(x + i + 8);
    mn0 = _mm256_min_ps(mn0, a);
    mx0 = _mm256_max_ps(mx0, a);
    nf0 = _mm256_fmadd_ps(a, zero, nf0);
    mn1 = _mm256_min_ps(mn1, b);
    mx1 = _mm256_max_ps(mx1, b);
    nf1 = _mm256_fmadd_ps(b, zero, nf1);
  }
  if (i + 8 <= n) {
    const __m256 a = _mm256_loadu_ps(x + i);
    mn0 = _mm256_min_ps(mn0, a);
    mx0 = _mm256_max_ps(mx0, a);
    nf0 = _mm256_fmadd_ps(a, zero, nf0);
    i += 8;
  }
  if (i < n) {
    const __m256 b = _mm256_loadu_ps(x + n - 8);
    mn1 = _mm256_min_ps(mn1, b);
    mx1 = _mm256_max_ps(mx1, b);
    nf1 = _mm256_fmadd_ps(b, zero, nf1);
  }
  mn = _mm256_min_ps(mn0, mn1);
  mx = _mm256_max_ps(mx0, mx1);
  nf = _mm256_add_ps(nf0, nf1);
}

// The low 32 bits of each 64-bit lane of a compare mask, as four 32-bit lanes.
LOWBIT_AVX2_INLINE __m128i mask_pd_to_ps(__m256d m) {
  return _mm256_castsi256_si128(
      _mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}

// (hi - lo) / qmax in double, then to a float: nearest even (odd false), or to odd (see above).
LOWBIT_AVX2_INLINE __m128 range_quotient4(__m128 lo, __m128 hi, __m256d qmax, bool odd) {
  const __m256d d = _mm256_div_pd(_mm256_sub_pd(_mm256_cvtps_pd(hi), _mm256_cvtps_pd(lo)), qmax);
  const __m128 f = _mm256_cvtpd_ps(d);
  if (!odd) return f;
  const __m256d back = _mm256_cvtps_pd(f);
  const __m128i above = mask_pd_to_ps(_mm256_cmp_pd(back, d, _CMP_GT_OQ));     // rounded up: d >= 0
  const __m128i inexact = mask_pd_to_ps(_mm256_cmp_pd(back, d, _CMP_NEQ_OQ));
  const __m128i t = _mm_add_epi32(_mm_castps_si128(f), above);  // one ulp down where it went up
  return _mm_castsi128_ps(_mm_or_si128(t, _mm_and_si128(inexact, _mm_set1_epi32(1))));
}

// A batch of up to 8 groups' parameters, one lane each.
struct aff_batch {
  __m256 lo, hi;        // the groups' value ranges
  __m256 s, r;          // stored scale, and its reciprocal
  __m256 m;             // stored offset (0 for an integer zero-point)
  __m256 z;             // what zeros[] gets: the zero-point as a float, or the offset
  __m256i zp;           // the integer zero-point (0 with an offset)
  std::uint32_t stop;   // lanes the reference must do (NaN/Inf, scale or offset overflow)
  std::uint32_t tight;  // lanes group_grid may take (1/s normal, |(x - m) / s| within the window's bound)
};

LOWBIT_AVX2_INLINE aff_batch affine_params(const int_affine_job& j, __m256i lo, __m256i hi, __m256i nfl, std::size_t m);

LOWBIT_AVX2_INLINE aff_batch affine_batch(const int_affine_job& j, std::size_t g0, std::size_t m) {
  const std::size_t len = j.group_length;
  const float* x = j.x + g0 * len;
  __m256i vmn[8], vmx[8], vnf[8];
  for (std::size_t k = 0; k < 8; ++k) {
    __m256 mn = _mm256_setzero_ps(), mx = mn, nf = mn;
    if (k < m) lane_range(x + k * len, len, mn, mx, nf);
    vmn[k] = _mm256_castps_si256(mn);
    vmx[k] = _mm256_castps_si256(mx);
    vnf[k] = _mm256_castps_si256(nf);
  }
  return affine_params(j, reduce8(vmn, min_ps_op{}), reduce8(vmx, max_ps_op{}), reduce8(vnf, or_op{}), m);
}

// The parameters of a batch of m <= 8 groups from their lane-wise reductions (one lane each: min,
// max, and nf, +-0 or NaN where the group holds NaN or Inf): shared with the AVX-512 path
// (avx512.hpp's affine_batch), which reduces 16 floats per load.
LOWBIT_AVX2_INLINE aff_batch affine_params(const int_affine_job& j, __m256i lo, __m256i hi, __m256i nfl, std::size_t m) {
  aff_batch b;
  b.lo = _mm256_castsi256_ps(lo);
  b.hi = _mm256_castsi256_ps(hi);
  const __m256 nf = _mm256_castsi256_ps(nfl);  // +-0, or NaN
  const __m256 zero = _mm256_setzero_ps();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 dlo = b.lo, dhi = b.hi;
  if (!j.offset) {  // widened to contain 0 (a one-valued group always: [3, 3] -> [0, 3])
    const __m256 widen = j.widen_to_zero ? _mm256_castsi256_ps(_mm256_set1_epi32(-1))
                                         : _mm256_cmp_ps(b.lo, b.hi, _CMP_EQ_OQ);
    dlo = _mm256_blendv_ps(dlo, _mm256_min_ps(dlo, zero), widen);
    dhi = _mm256_blendv_ps(dhi, _mm256_max_ps(dhi, zero), widen);
  }
  const __m256d qmax = _mm256_set1_pd(static_cast<double>(j.code_max));
  const bool odd = j.scale_format != scale_storage::fp32;
  const __m128 q_lo = range_quotient4(_mm256_castps256_ps128(dlo), _mm256_castps256_ps128(dhi), qmax, odd);
  const __m128 q_hi = range_quotient4(_mm256_extractf128_ps(dlo, 1), _mm256_extractf128_ps(dhi, 1), qmax, odd);
  __m256 s;
  __m256i refer = to_scale_format(_mm256_set_m128(q_hi, q_lo), j.scale_format, s);
  b.s = _mm256_and_ps(s, abs_mask);  // no -0 (from -0 - +0)
  const __m256 nonzero = _mm256_cmp_ps(b.s, zero, _CMP_NEQ_OQ);
  if (j.offset) {
    __m256 mo;
    refer = _mm256_or_si256(refer, to_scale_format(b.lo, j.scale_format, mo));
    if (j.scale_format == scale_storage::bf16) {  // to_scale_format's test is for positive values
      refer = _mm256_or_si256(refer, _mm256_cmpgt_epi32(_mm256_castps_si256(_mm256_and_ps(mo, abs_mask)),
                                                        _mm256_set1_epi32(0x7F7FFFFF)));
    }
    b.m = _mm256_andnot_ps(_mm256_cmp_ps(mo, zero, _CMP_EQ_OQ), mo);  // no -0
    b.z = b.m;
    b.zp = _mm256_setzero_si256();
  } else {
    const __m256 y = _mm256_div_ps(_mm256_xor_ps(dlo, _mm256_set1_ps(-0.0f)), b.s);
    __m256 zf = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    zf = _mm256_min_ps(_mm256_max_ps(zf, zero), _mm256_set1_ps(static_cast<float>(j.code_max)));
    b.z = _mm256_and_ps(zf, nonzero);  // scale 0: zero-point 0
    b.zp = _mm256_cvttps_epi32(b.z);
    b.m = zero;
  }
  refer = _mm256_or_si256(refer, _mm256_castps_si256(_mm256_cmp_ps(nf, nf, _CMP_UNORD_Q)));
  // A range of 2^126 or more, where the grid or x - m may overflow float: the reference decides
  // (make_int_codec's scale_overflow).
  refer = _mm256_or_si256(refer, _mm256_castps_si256(_mm256_cmp_ps(_mm256_sub_ps(dhi, dlo),
                                                                   _mm256_set1_ps(0x1p126f), _CMP_NLT_UQ)));
  b.stop = lanes_of(refer) & ((1u << m) - 1u);
  b.r = _mm256_div_ps(_mm256_set1_ps(1.0f), b.s);
  // |lo - m| and |hi - m| below B s (one rounding each; B the window's bound, 200 or 400): then
  // |(x - m) * r| < B (1 + 2^-22). Tested against s, not r, to keep the division off the path to
  // the branches.
  const __m256 lim = _mm256_mul_ps(b.s, _mm256_set1_ps(window_for(false, j.code_max).bound));
  const __m256 bounded = _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(b.m, b.lo), lim, _CMP_LT_OQ),
                                       _mm256_cmp_ps(_mm256_sub_ps(b.hi, b.m), lim, _CMP_LT_OQ));
  const __m256i sb = _mm256_castps_si256(b.s);  // 2^-126 <= s < 2^126: 1/s normal
  const __m256i normal = _mm256_and_si256(_mm256_cmpgt_epi32(sb, _mm256_set1_epi32(0x007FFFFF)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7E800000), sb));
  b.tight = lanes_of(_mm256_and_si256(normal, _mm256_castps_si256(bounded)));
  return b;
}

// One group's codec, as make_int_codec gives it.
LOWBIT_AVX2_INLINE int_group_codec affine_codec(const int_affine_job& j, float s, int zp, float m) {
  int_group_codec c;
  c.scale = s;
  c.zero_point = zp;
  c.offset = m;
  c.has_offset = j.offset;
  c.code_min = 0;
  c.code_max = j.code_max;
  c.rm = j.rm;
  return c;
}

// A 32-value chunk of group_grid's that came near a half-integer, by division, stored (out of
// line: the hot loop keeps its registers).
template <bool Nibbles>
LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE void affine_chunk_exact_store(const float* xc, const int_affine_job& j, float s,
                                                                     int zp, float m, std::uint8_t* out) noexcept {
  const qctx q = make_qctx(affine_codec(j, s, zp, m));
  const __m256i z = _mm256_setzero_si256();
  const __m256i codes = pack_codes32(codes_exact(_mm256_loadu_ps(xc), q, z), codes_exact(_mm256_loadu_ps(xc + 8), q, z),
                                     codes_exact(_mm256_loadu_ps(xc + 16), q, z), codes_exact(_mm256_loadu_ps(xc + 24), q, z));
  if (Nibbles) {
    store_nibbles(out, codes);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), codes);
  }
}

template <bool Nibbles>
struct affine_exact {
  const int_affine_job& j;
  float s;
  int zp;
  float m;
  LOWBIT_AVX2_INLINE void operator()(const float* xc, std::uint8_t* out) const {
    affine_chunk_exact_store<Nibbles>(xc, j, s, zp, m, out);
  }
};

// One group the long way (any length and mode, zero scales, wide quotients).
template <bool Nibbles>
LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE void affine_group(const int_affine_job& j, std::size_t g, float s, int zp,
                                                         float m, std::uint8_t* out) noexcept {
  const std::size_t len = j.group_length;
  if (s == 0.0f) {  // all zeros, one value, or a scale that underflows its format: every code 0
    std::memset(out, 0, Nibbles ? len / 2 : len);
    return;
  }
  const qctx q = make_qctx(affine_codec(j, s, zp, m));
  const std::uint32_t* rb = j.rm == rounding::stochastic && j.random_bits != nullptr ? j.random_bits + g * len : nullptr;
  quantize_run<false, Nibbles>(j.x + g * len, len, rb, q, out);
}

template <bool Nibbles>
LOWBIT_TARGET_AVX2 inline std::size_t quantize_affine_impl(const int_affine_job& j, std::size_t first,
                                                           std::size_t last) noexcept {
  if (first >= last) return last;
  const std::size_t len = j.group_length;
  const bool nearest =
      j.rm == rounding::nearest_even || j.rm == rounding::nearest_away || j.rm == rounding::nearest_toward_zero;
  const bool grid = nearest && len % 32 == 0;
  grid_consts gk = make_grid(window_for(false, j.code_max), 0, j.code_max);
  const __m256i bias0 = gk.bias;
  // Software-pipelined as the symmetric path: the next batch's parameters before this one's codes.
  aff_batch next = affine_batch(j, first, last - first < 8 ? last - first : 8);
  const bool ahead = prefetches_batches(first, last, len);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    if (ahead) prefetch_batch_after_next(j.x, g0, last, len);
    const aff_batch b = next;
    if (b.stop == 0 && g0 + 8 < last) next = affine_batch(j, g0 + 8, last - g0 - 8 < 8 ? last - g0 - 8 : 8);
    const std::size_t done = b.stop != 0 ? lowest_bit(b.stop) : m;
    alignas(32) float sv[8];
    alignas(32) float mv[8];
    alignas(32) float zv[8];
    alignas(32) std::int32_t zi[8];
    _mm256_store_ps(sv, b.s);
    _mm256_store_ps(mv, b.m);
    _mm256_store_ps(zv, b.z);
    _mm256_store_si256(reinterpret_cast<__m256i*>(zi), b.zp);
    if (done == 8) {
      _mm256_storeu_ps(j.scales + g0, b.s);
      _mm256_storeu_ps(j.zeros + g0, b.z);
    } else {
      for (std::size_t k = 0; k < done; ++k) {
        j.scales[g0 + k] = sv[k];
        j.zeros[g0 + k] = zv[k];
      }
    }
    const std::uint32_t tight = grid ? b.tight : 0u;
    for (std::size_t k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      const float* x = j.x + g * len;
      std::uint8_t* out = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
      if (((tight >> k) & 1u) == 0) {
        affine_group<Nibbles>(j, g, sv[k], zi[k], mv[k], out);
        continue;
      }
      const __m256i lane = _mm256_set1_epi32(static_cast<int>(k));
      const __m256 r = _mm256_permutevar8x32_ps(b.r, lane);
      gk.bias = _mm256_sub_epi32(bias0, _mm256_slli_epi32(_mm256_permutevar8x32_epi32(b.zp, lane), 13));
      const affine_exact<Nibbles> exact{j, sv[k], zi[k], mv[k]};
      if (j.offset) {
        group_grid<Nibbles, true>(x, len / 32, r, _mm256_permutevar8x32_ps(b.m, lane), gk, exact, out);
      } else {
        group_grid<Nibbles, false>(x, len / 32, r, r, gk, exact, out);
      }
    }
    if (b.stop != 0) return g0 + done;
  }
  return last;
}

}  // namespace int_detail

// Quantizes groups [first, last) of j; returns the first group it leaves to the caller (a group
// with NaN or Inf, or whose scale or offset the format cannot hold: the reference reports the
// error), or last.
inline std::size_t quantize_affine(const int_affine_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_affine_impl<true>(j, first, last)
                        : int_detail::quantize_affine_impl<false>(j, first, last);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_INTEGER_AVX2_AFFINE_HPP
