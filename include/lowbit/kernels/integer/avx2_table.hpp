// lowbit: AVX2 kernels of the integer schemes, part 1 (internal): the vector helpers every
// integer kernel shares, the per-group table (int_table(): range, quantize, dequantize, error)
// bit-identical to kernels::int_ref (kernels/integer/reference.hpp), and the grid rounding the
// fused paths share. The fused paths are avx2_symmetric.hpp, avx2_affine.hpp and
// avx2_dequantize.hpp beside this file; the ggml blocks are kernels/ggml/.
//
// Why these kernels give the reference's bytes (reciprocals proven or redone by division, the
// grid rounding, the scales rounded once): docs/kernels.md, "Integer kernels".
#ifndef LOWBIT_KERNELS_INTEGER_AVX2_TABLE_HPP
#define LOWBIT_KERNELS_INTEGER_AVX2_TABLE_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../core/cpu.hpp"
#include "../../core/rounding.hpp"
#include "../../core/status.hpp"
#include "jobs.hpp"
#include "reference.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>  // _BitScanForward
#endif

#include "../avx2_common.hpp"
#include "../fp_env.hpp"

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace int_detail {

// ------------------------------------------------------------------------------------------------
// Small helpers

LOWBIT_AVX2_INLINE std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
LOWBIT_AVX2_INLINE float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Index of the lowest set bit of m != 0.
LOWBIT_AVX2_INLINE unsigned lowest_bit(std::uint32_t m) {
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<unsigned>(__builtin_ctz(m));
#else
  unsigned long i = 0;
  _BitScanForward(&i, m);
  return static_cast<unsigned>(i);
#endif
}

LOWBIT_AVX2_INLINE __m256i abs_bits(__m256 v) {
  return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7FFFFFFF));
}

LOWBIT_AVX2_INLINE int hmax_epi32(__m256i v) {
  __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  return _mm_cvtsi128_si32(m);
}
LOWBIT_AVX2_INLINE int hmin_epi32(__m256i v) {
  __m128i m = _mm_min_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_min_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_min_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  return _mm_cvtsi128_si32(m);
}

// Float bits -> an int32 in the order of the values (-0 just below +0; NaNs beyond +-Inf).
// The map is its own inverse.
LOWBIT_AVX2_INLINE __m256i sortable(__m256i b) {
  return _mm256_xor_si256(b, _mm256_srli_epi32(_mm256_srai_epi32(b, 31), 1));
}
constexpr std::int32_t sortable_scalar(std::uint32_t b) noexcept {
  return static_cast<std::int32_t>((b & 0x80000000u) != 0 ? b ^ 0x7FFFFFFFu : b);
}

// Lanes 0..m-1 set (m in 0..8).
LOWBIT_AVX2_INLINE __m256i lane_mask(std::size_t m) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(m)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 32 int32 codes (four vectors, each 0..255) -> 32 bytes in element order.
LOWBIT_AVX2_INLINE __m256i pack_codes32(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  const __m256i c[4] = {c0, c1, c2, c3};
  return pack_dwords_to_bytes(c);
}

// 32 int32 values in -2^15..2^15 (four vectors) -> 32 signed bytes, saturated, in element order.
LOWBIT_AVX2_INLINE __m256i pack_signed32(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3));
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Bytes 8k..8k+7 of v, zero-extended to 32-bit lanes.
template <int K>
LOWBIT_AVX2_INLINE __m256i widen8(__m256i v) {
  const __m128i h = K < 2 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1);
  return _mm256_cvtepu8_epi32(K % 2 == 0 ? h : _mm_srli_si128(h, 8));
}

// Round-to-nearest-even of finite float bits to bfloat16 bits, saturating as encode<bfloat16>
// does with its default policy (+-Inf and values rounding past the largest finite give +-max).
// Lanes hold the 16-bit results.
LOWBIT_AVX2_INLINE __m256i to_bf16_bits(__m256 v) {
  const __m256i r = _mm256_srli_epi32(bf16_rounded(v), 16);
  const __m256i inf = _mm256_cmpeq_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7FFF)), _mm256_set1_epi32(0x7F80));
  return _mm256_add_epi32(r, inf);  // Inf -> max finite (0x7F80 - 1 = 0x7F7F)
}

// fp16 bits -> float (F16C, exact).
LOWBIT_AVX2_INLINE float from_half(std::uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }

// The exact value of fp16 bits as the scalar codec decodes them: F16C for everything but NaN,
// which the codec turns into the quiet NaN 0x7FC00000 with the sign (F16C keeps the payload).
LOWBIT_AVX2_INLINE float half_to_float(std::uint16_t h) {
  if ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0u)
    return bits_float(0x7FC00000u | (static_cast<std::uint32_t>(h & 0x8000u) << 16));
  return from_half(h);
}

// ------------------------------------------------------------------------------------------------
// range

LOWBIT_TARGET_AVX2 inline std::uint32_t first_zero_bits(const float* x, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i z = _mm256_cmpeq_epi32(abs_bits(_mm256_loadu_ps(x + i)), _mm256_setzero_si256());
    const int m = _mm256_movemask_ps(_mm256_castsi256_ps(z));
    if (m != 0) {
      float v;
      std::memcpy(&v, x + i + lowest_bit(static_cast<std::uint32_t>(m)), sizeof v);
      return float_bits(v);
    }
  }
  for (; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    if ((b & 0x7FFFFFFFu) == 0) return b;
  }
  return 0;
}

// int_ref::range on the value order of the bit patterns: no float comparison, so DAZ cannot
// merge subnormals with zero. Equal values are bit-identical except +-0, where the reference
// keeps the first zero it meets (x < mn is false between zeros): that zero is looked up.
LOWBIT_TARGET_AVX2 inline bool range(const float* x, std::size_t n, float* lo, float* hi) noexcept {
  __m256i mn, mx;
  if (n >= 8) {
    mn = mx = sortable(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    __m256i mn2 = mn, mx2 = mx;
    std::size_t i = 8;
    for (; i + 16 <= n; i += 16) {
      const __m256i a = sortable(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
      const __m256i b = sortable(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8)));
      mn = _mm256_min_epi32(mn, a);
      mx = _mm256_max_epi32(mx, a);
      mn2 = _mm256_min_epi32(mn2, b);
      mx2 = _mm256_max_epi32(mx2, b);
    }
    for (; i + 8 <= n; i += 8) {
      const __m256i a = sortable(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
      mn = _mm256_min_epi32(mn, a);
      mx = _mm256_max_epi32(mx, a);
    }
    if (i < n) {  // the last 8 again, overlapping: min and max do not mind
      const __m256i a = sortable(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + n - 8)));
      mn = _mm256_min_epi32(mn, a);
      mx = _mm256_max_epi32(mx, a);
    }
    mn = _mm256_min_epi32(mn, mn2);
    mx = _mm256_max_epi32(mx, mx2);
  } else {
    const __m256i m = lane_mask(n);
    const __m256i v = _mm256_castps_si256(_mm256_maskload_ps(x, m));
    const __m256i first = _mm256_set1_epi32(static_cast<int>(float_bits(x[0])));
    mn = mx = sortable(_mm256_blendv_epi8(first, v, m));
  }
  const std::int32_t smin = hmin_epi32(mn);
  const std::int32_t smax = hmax_epi32(mx);
  const bool finite = smax < sortable_scalar(0x7F800000u) && smin > sortable_scalar(0xFF800000u);
  std::uint32_t lo_bits = static_cast<std::uint32_t>(sortable_scalar(static_cast<std::uint32_t>(smin)));
  std::uint32_t hi_bits = static_cast<std::uint32_t>(sortable_scalar(static_cast<std::uint32_t>(smax)));
  if (smin == -1 || smax == 0) {  // the least value is -0 or the greatest +0: first zero decides
    const std::uint32_t z = first_zero_bits(x, n);
    if (smin == -1) lo_bits = z;
    if (smax == 0) hi_bits = z;
  }
  *lo = bits_float(lo_bits);
  *hi = bits_float(hi_bits);
  return finite;
}

// ------------------------------------------------------------------------------------------------
// quantize: one group's codec in vector form

struct qctx {
  __m256 scale, recip, offset, lo1, hi1;  // lo1, hi1: code range minus the zero-point, widened by 1
  __m256i zp, cmin, cmax;
  __m256i lo8, hi8, zp8;  // the same as bytes (symmetric schemes only: -128 <= lo, hi <= 127)
  rounding rm;
  bool has_offset;
  bool fast;  // a nearest mode and a scale whose reciprocal is normal: multiply and check
};

LOWBIT_AVX2_INLINE qctx make_qctx(const int_group_codec& c) {
  qctx q;
  q.scale = _mm256_set1_ps(c.scale);
  q.recip = _mm256_set1_ps(1.0f / c.scale);
  q.offset = _mm256_set1_ps(c.offset);
  q.lo1 = _mm256_set1_ps(static_cast<float>(c.code_min - c.zero_point - 1));
  q.hi1 = _mm256_set1_ps(static_cast<float>(c.code_max - c.zero_point + 1));
  q.zp = _mm256_set1_epi32(c.zero_point);
  q.cmin = _mm256_set1_epi32(c.code_min);
  q.cmax = _mm256_set1_epi32(c.code_max);
  const int lo = c.code_min - c.zero_point;
  const int hi = c.code_max - c.zero_point;
  q.lo8 = _mm256_set1_epi8(static_cast<char>(lo < -128 ? -128 : lo));
  q.hi8 = _mm256_set1_epi8(static_cast<char>(hi > 127 ? 127 : hi));
  q.zp8 = _mm256_set1_epi8(static_cast<char>(static_cast<unsigned char>(c.zero_point & 0xFF)));
  q.rm = c.rm;
  q.has_offset = c.has_offset;
  const std::uint32_t e = (float_bits(c.scale) >> 23) & 0xFFu;  // 1..252: 2^-126 <= |s| < 2^126
  const bool nearest =
      c.rm == rounding::nearest_even || c.rm == rounding::nearest_away || c.rm == rounding::nearest_toward_zero;
  q.fast = nearest && e >= 1u && e <= 252u;
  return q;
}

// round_to_code(x / s) + zero_point for 8 values, by division: exact in every mode.
LOWBIT_AVX2_INLINE __m256i codes_exact(__m256 x, const qctx& q, __m256i rb) {
  const __m256 t = q.has_offset ? _mm256_sub_ps(x, q.offset) : x;
  __m256 y = _mm256_div_ps(t, q.scale);
  y = _mm256_min_ps(_mm256_max_ps(y, q.lo1), q.hi1);  // NaN -> lo - 1, as round_to_code's lo
  const __m256 zero = _mm256_setzero_ps();
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(y, zero, _CMP_LT_OQ));
  const __m256 a = _mm256_castsi256_ps(abs_bits(y));
  const __m256 f = _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_sub_ps(a, f);
  __m256i n = _mm256_cvttps_epi32(f);
  __m256i up = _mm256_setzero_si256();
  switch (q.rm) {
    case rounding::nearest_even: {
      const __m256i odd = _mm256_cmpeq_epi32(_mm256_and_si256(n, _mm256_set1_epi32(1)), _mm256_set1_epi32(1));
      up = _mm256_or_si256(_mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_GT_OQ)),
                           _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_EQ_OQ)), odd));
      break;
    }
    case rounding::nearest_away: up = _mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_GE_OQ)); break;
    case rounding::nearest_toward_zero: up = _mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_GT_OQ)); break;
    case rounding::toward_zero: break;
    case rounding::toward_pos_inf:
      up = _mm256_andnot_si256(neg, _mm256_castps_si256(_mm256_cmp_ps(frac, zero, _CMP_GT_OQ)));
      break;
    case rounding::stochastic: {
      // floor(frac * 2^32) in two exact 16-bit halves, then the carry of frac32 + random bits.
      const __m256 F = _mm256_mul_ps(frac, _mm256_set1_ps(65536.0f));
      const __m256 h = _mm256_round_ps(F, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      const __m256i lo16 = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_sub_ps(F, h), _mm256_set1_ps(65536.0f)));
      const __m256i f32 = _mm256_or_si256(_mm256_slli_epi32(_mm256_cvttps_epi32(h), 16), lo16);
      const __m256i sum = _mm256_add_epi32(f32, rb);
      const __m256i bias = _mm256_set1_epi32(static_cast<int>(0x80000000u));
      up = _mm256_cmpgt_epi32(_mm256_xor_si256(rb, bias), _mm256_xor_si256(sum, bias));  // sum < rb: carry
      break;
    }
  }
  n = _mm256_sub_epi32(n, up);
  __m256i r = _mm256_sub_epi32(_mm256_xor_si256(n, neg), neg);
  r = _mm256_add_epi32(r, q.zp);
  return _mm256_min_epi32(_mm256_max_epi32(r, q.cmin), q.cmax);
}

// Nearest modes by the reciprocal (see the file comment): rounds x * (1/s) to nearest even,
// and raises the lanes of `near` (as a maximum of 2|d|, d the distance to that integer) so the
// caller can tell whether any lane came within 2^-12 of a half-integer. Bounded: |x / s| is known
// to stay below 2^15 (symmetric minmax groups), so no clamp is needed before converting.
template <bool Bounded>
LOWBIT_AVX2_INLINE __m256i nearest_fast(__m256 x, const qctx& q, __m256i& near) {
  const __m256 t = q.has_offset ? _mm256_sub_ps(x, q.offset) : x;
  __m256 y = _mm256_mul_ps(t, q.recip);
  if (!Bounded) y = _mm256_min_ps(_mm256_max_ps(y, q.lo1), q.hi1);
  const __m256 rn = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  near = _mm256_max_epi32(near, _mm256_slli_epi32(_mm256_castps_si256(_mm256_sub_ps(y, rn)), 1));
  return _mm256_cvttps_epi32(rn);
}

// 2|d| above this (d = y - round(y)): within 2^-12 of a half-integer.
LOWBIT_AVX2_INLINE bool any_near_tie(__m256i near) {
  constexpr int limit = static_cast<int>(0x3EFFE000u << 1);  // 0.5 - 2^-12
  return !_mm256_testz_si256(_mm256_cmpgt_epi32(near, _mm256_set1_epi32(limit)), _mm256_set1_epi32(-1));
}

// A rounded value plus the zero-point, clamped to the code range.
LOWBIT_AVX2_INLINE __m256i finish(__m256i v, const qctx& q) {
  return _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, q.zp), q.cmin), q.cmax);
}

// Random bits k..k+7 of rb, or zeros.
LOWBIT_AVX2_INLINE __m256i random8(const std::uint32_t* rb, std::size_t k) {
  return rb != nullptr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rb + k)) : _mm256_setzero_si256();
}

// The 32 codes of x[0..32) as bytes. rb: 32 random values or null.
template <bool Bounded>
LOWBIT_AVX2_INLINE __m256i codes32(const float* x, const std::uint32_t* rb, const qctx& q) {
  if (q.fast) {
    __m256i near = _mm256_setzero_si256();
    const __m256i a = nearest_fast<Bounded>(_mm256_loadu_ps(x), q, near);
    const __m256i b = nearest_fast<Bounded>(_mm256_loadu_ps(x + 8), q, near);
    const __m256i c = nearest_fast<Bounded>(_mm256_loadu_ps(x + 16), q, near);
    const __m256i d = nearest_fast<Bounded>(_mm256_loadu_ps(x + 24), q, near);
    if (!any_near_tie(near)) {
      if (Bounded) {  // symmetric: clamp as signed bytes, then add the zero-point
        const __m256i s = pack_signed32(a, b, c, d);
        return _mm256_add_epi8(_mm256_min_epi8(_mm256_max_epi8(s, q.lo8), q.hi8), q.zp8);
      }
      return pack_codes32(finish(a, q), finish(b, q), finish(c, q), finish(d, q));
    }
  }
  return pack_codes32(codes_exact(_mm256_loadu_ps(x), q, random8(rb, 0)),
                      codes_exact(_mm256_loadu_ps(x + 8), q, random8(rb, 8)),
                      codes_exact(_mm256_loadu_ps(x + 16), q, random8(rb, 16)),
                      codes_exact(_mm256_loadu_ps(x + 24), q, random8(rb, 24)));
}

// Codes of n values into out (one per byte, or nibbles when Nibbles; then n is even or this is
// the end of the output). Works in chunks of 32; the last partial chunk goes through a buffer.
template <bool Bounded, bool Nibbles>
LOWBIT_AVX2_INLINE void quantize_run(const float* x, std::size_t n, const std::uint32_t* rb, const qctx& q,
                                     std::uint8_t* out) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = codes32<Bounded>(x + i, rb != nullptr ? rb + i : nullptr, q);
    if (Nibbles) {
      store_nibbles(out + i / 2, c);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), c);
    }
  }
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) float xb[32] = {};
    alignas(32) std::uint32_t rbuf[32] = {};
    std::memcpy(xb, x + i, m * sizeof(float));
    if (rb != nullptr) std::memcpy(rbuf, rb + i, m * sizeof(std::uint32_t));
    const __m256i c = codes32<Bounded>(xb, rb != nullptr ? rbuf : nullptr, q);
    alignas(32) std::uint8_t cb[32];
    if (Nibbles) {
      store_nibbles(cb, c);
      std::memcpy(out + i / 2, cb, (m + 1) / 2);
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(cb), c);
      std::memcpy(out + i, cb, m);
    }
  }
}

LOWBIT_AVX2_INLINE std::uint8_t zero_code(const int_group_codec& c) {
  const int z = c.zero_point < c.code_min ? c.code_min : c.zero_point > c.code_max ? c.code_max : c.zero_point;
  return static_cast<std::uint8_t>(z);
}

LOWBIT_TARGET_AVX2 inline void quantize(const float* x, std::size_t n, const int_group_codec& c,
                                        const std::uint32_t* random_bits, std::uint8_t* codes) noexcept {
  if (c.scale == 0.0f) {
    std::memset(codes, zero_code(c), n);
    return;
  }
  const qctx q = make_qctx(c);
  quantize_run<false, false>(x, n, c.rm == rounding::stochastic ? random_bits : nullptr, q, codes);
}

// ------------------------------------------------------------------------------------------------
// dequantize

// The values of 8 codes (zero-extended in 32-bit lanes) under (s, z) or (s, m).
LOWBIT_AVX2_INLINE __m256 values8(__m256i u, __m256 s, __m256i z) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(u, z)), s);
}
// u * s + m in double (u * s is exact there), rounded once to float.
LOWBIT_AVX2_INLINE __m256 values8_offset(__m256i u, __m256d s, __m256d m) {
  const __m128 lo = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(u)), s), m));
  const __m128 hi =
      _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(u, 1)), s), m));
  return _mm256_set_m128(hi, lo);
}

struct dctx {
  __m256 s;
  __m256i z;
  __m256d sd, md;
  bool offset;
};

LOWBIT_AVX2_INLINE dctx make_dctx(float scale, int zero_point, bool has_offset, float offset) {
  dctx d;
  d.s = _mm256_set1_ps(scale);
  d.z = _mm256_set1_epi32(zero_point);
  d.sd = _mm256_set1_pd(static_cast<double>(scale));
  d.md = _mm256_set1_pd(static_cast<double>(offset));
  d.offset = has_offset;
  return d;
}

LOWBIT_AVX2_INLINE __m256 values(__m256i u, const dctx& d) {
  return d.offset ? values8_offset(u, d.sd, d.md) : values8(u, d.s, d.z);
}

// Writes 16 results: floats, or bfloat16 bits. Stream: non-temporal stores of floats (y 32-byte
// aligned; see streams_f32).
template <bool Stream = false>
LOWBIT_AVX2_INLINE void put16(float* y, __m256 a, __m256 b) {
  if constexpr (Stream) {
    _mm256_stream_ps(y, a);
    _mm256_stream_ps(y + 8, b);
  } else {
    _mm256_storeu_ps(y, a);
    _mm256_storeu_ps(y + 8, b);
  }
}
template <bool Stream = false>
LOWBIT_AVX2_INLINE void put16(std::uint16_t* y, __m256 a, __m256 b) {
  static_assert(!Stream, "bfloat16 outputs are half the size; they are not streamed");
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), pack_dwords_to_words(to_bf16_bits(a), to_bf16_bits(b)));
}

// The same for results that cannot round to Inf (see tame_scale): to_bf16_bits without its Inf
// check, 5 instructions per 8 where it takes 8.
LOWBIT_AVX2_INLINE void put16_tame(std::uint16_t* y, __m256 a, __m256 b) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), pack_dwords_to_words(_mm256_srli_epi32(bf16_rounded(a), 16),
                                                                          _mm256_srli_epi32(bf16_rounded(b), 16)));
}

// Whether every value (u - z) * s of a group with an integer zero-point (|u - z| <= 255, s a
// valid stored scale) is below 2^127 in magnitude, so that its bfloat16 rounding on the bits
// (subnormals included) cannot reach Inf: |s| < 2^119.
inline bool tame_scale(float s) noexcept {
  return (lowbit::detail::bit_cast<std::uint32_t>(s) & 0x7FFFFFFFu) < 0x7B000000u;
}

// Whether a dequantizer writes n floats to y with non-temporal stores (stream_threshold_bytes,
// kernels/avx2_common.hpp): float output, y 32-byte aligned and every store position a multiple of
// 8 elements (`step`).
template <class Out>
inline bool streams_f32(const Out* y, std::size_t n, std::size_t step) noexcept {
  return std::is_same<Out, float>::value && n >= stream_threshold_bytes / sizeof(float) && step % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(y) % 32 == 0;
}

// 32 codes (bytes in element order) -> 32 results. Tame: bfloat16 results of a tame_scale
// group without offset (put16_tame).
template <bool Stream, bool Tame = false, class Out>
LOWBIT_AVX2_INLINE void values32(__m256i codes, const dctx& d, Out* y) {
  if constexpr (Tame) {
    static_assert(std::is_same<Out, std::uint16_t>::value, "bfloat16 results");
    put16_tame(y, values8(widen8<0>(codes), d.s, d.z), values8(widen8<1>(codes), d.s, d.z));
    put16_tame(y + 16, values8(widen8<2>(codes), d.s, d.z), values8(widen8<3>(codes), d.s, d.z));
  } else {
    put16<Stream>(y, values(widen8<0>(codes), d), values(widen8<1>(codes), d));
    put16<Stream>(y + 16, values(widen8<2>(codes), d), values(widen8<3>(codes), d));
  }
}

// n codes (bytes, or nibbles from an even element position) -> n results.
template <bool Nibbles, bool Stream = false, bool Tame = false, class Out>
LOWBIT_AVX2_INLINE void dequantize_run(const std::uint8_t* codes, std::size_t n, const dctx& d, Out* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = Nibbles ? load_nibbles(codes + i / 2)
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
    values32<Stream, Tame>(c, d, y + i);
  }
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[32] = {};
    Out yb[32];
    if (Nibbles) {
      std::memcpy(cb, codes + i / 2, (m + 1) / 2);
      values32<false, Tame>(load_nibbles(cb), d, yb);
    } else {
      std::memcpy(cb, codes + i, m);
      values32<false, Tame>(_mm256_load_si256(reinterpret_cast<const __m256i*>(cb)), d, yb);
    }
    std::memcpy(y + i, yb, m * sizeof(Out));
  }
}

LOWBIT_TARGET_AVX2 inline void dequantize(const std::uint8_t* codes, std::size_t n, const int_group_codec& c,
                                          float* y) noexcept {
  dequantize_run<false>(codes, n, make_dctx(c.scale, c.zero_point, c.has_offset, c.offset), y);
}

// ------------------------------------------------------------------------------------------------
// error: the values dequantize(quantize(x)) of a chunk, for the wrapper's ordered sum

LOWBIT_TARGET_AVX2 inline void roundtrip(const float* x, std::size_t n, const int_group_codec& c,
                                         const std::uint32_t* random_bits, float* xh) noexcept {
  std::uint8_t codes[256];
  quantize(x, n, c, random_bits, codes);
  dequantize(codes, n, c, xh);
}

// ------------------------------------------------------------------------------------------------
// Batches of 8 groups: one lane per group

// Lane-wise operations for reduce8 (kernels/avx2_common.hpp).
struct min_ps_op {
  LOWBIT_AVX2_INLINE __m256i operator()(__m256i a, __m256i b) const {
    return _mm256_castps_si256(_mm256_min_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
  }
};
struct max_ps_op {
  LOWBIT_AVX2_INLINE __m256i operator()(__m256i a, __m256i b) const {
    return _mm256_castps_si256(_mm256_max_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
  }
};
struct or_op {
  LOWBIT_AVX2_INLINE __m256i operator()(__m256i a, __m256i b) const { return _mm256_or_si256(a, b); }
};

// Whether a quantization of groups [first, last) of len values asks for each batch's lines ahead
// (prefetch_batch_after_next): groups of 64 to 512 values, and an input beyond the L2 cache (in
// cache the requests only cost: 7-15 % for INT8 g128 and INT4 g64 / g128). The next batch's
// reductions run before this batch's codes (software pipelining), and from DRAM their demand
// misses kept too few lines in flight: on both paths INT8 g128 and INT4 g64 / g128 ran at
// 2.8-4.0 G elem/s against 7-12 in cache, 4.4-6.9 with the requests. Groups of 32 moved +10 %
// (INT8) and -7 % (INT4 affine) with them, and long groups (per token) lost 17 %: the hardware
// prefetcher follows their rows, and a batch of them would not fit in L1 (docs/performance.md,
// "Zen 5").
inline bool prefetches_batches(std::size_t first, std::size_t last, std::size_t len) noexcept {
  return len >= 64 && len <= 512 && (last - first) * len * sizeof(float) >= (std::size_t{1} << 20);
}

// Before batch g0 (8 groups), the lines of the batch after next.
LOWBIT_AVX2_INLINE void prefetch_batch_after_next(const float* x, std::size_t g0, std::size_t last, std::size_t len) {
  if (last - g0 >= 24) prefetch_lines(x + (g0 + 16) * len, 8 * len * sizeof(float));
}

// Lane-wise largest |x| of a group of n >= 1 values (as bits; NaN and Inf compare above every
// finite value). Masked loads for the last partial vector.
LOWBIT_AVX2_INLINE __m256i lane_absmax(const float* x, std::size_t n) {
  if (n % 32 == 0) {
    __m256i a = _mm256_max_epi32(abs_bits(_mm256_loadu_ps(x)), abs_bits(_mm256_loadu_ps(x + 8)));
    __m256i b = _mm256_max_epi32(abs_bits(_mm256_loadu_ps(x + 16)), abs_bits(_mm256_loadu_ps(x + 24)));
    for (std::size_t i = 32; i < n; i += 32) {
      a = _mm256_max_epi32(a, _mm256_max_epi32(abs_bits(_mm256_loadu_ps(x + i)), abs_bits(_mm256_loadu_ps(x + i + 8))));
      b = _mm256_max_epi32(b, _mm256_max_epi32(abs_bits(_mm256_loadu_ps(x + i + 16)), abs_bits(_mm256_loadu_ps(x + i + 24))));
    }
    return _mm256_max_epi32(a, b);
  }
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_epi32(m0, abs_bits(_mm256_loadu_ps(x + i)));
    m1 = _mm256_max_epi32(m1, abs_bits(_mm256_loadu_ps(x + i + 8)));
  }
  if (i + 8 <= n) {
    m0 = _mm256_max_epi32(m0, abs_bits(_mm256_loadu_ps(x + i)));
    i += 8;
  }
  if (i < n) m1 = _mm256_max_epi32(m1, abs_bits(_mm256_maskload_ps(x + i, lane_mask(n - i))));
  return _mm256_max_epi32(m0, m1);
}

// Lanes of a mask as bits 0..7.
LOWBIT_AVX2_INLINE std::uint32_t lanes_of(__m256i m) {
  return static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}

// Round-to-nearest-even of positive finite floats to bfloat16 (bits in the high half).
LOWBIT_AVX2_INLINE __m256i round_bf16_high(__m256 v) {
  return _mm256_and_si256(bf16_rounded(v), _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
}


// ------------------------------------------------------------------------------------------------
// Shared by the fused quantizers: scales in their storage format, and the grid rounding

// s = q (finite, >= 0 or -0) rounded to nearest even in fmt; returns the lanes it overflows
// (the reference's scale_overflow).
LOWBIT_AVX2_INLINE __m256i to_scale_format(__m256 q, scale_storage fmt, __m256& s) {
  s = q;
  switch (fmt) {
    case scale_storage::fp32: break;
    case scale_storage::fp16: {
      const __m128i h = _mm256_cvtps_ph(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      s = _mm256_cvtph_ps(h);
      // Beyond fp16: the reference's error (scale_overflow).
      return _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7FFF)),
                                _mm256_set1_epi32(0x7BFF));
    }
    case scale_storage::bf16: {
      const __m256i r = round_bf16_high(q);
      s = _mm256_castsi256_ps(r);
      return _mm256_cmpgt_epi32(r, _mm256_set1_epi32(0x7F7FFFFF));  // rounds past the largest bfloat16
    }
  }
  return _mm256_setzero_si256();
}

LOWBIT_AVX2_INLINE __m256i scales_for(__m256 a, __m256 divisor, scale_storage fmt, __m256& s) {
  return to_scale_format(_mm256_div_ps(a, divisor), fmt, s);
}

// Which grid words group_grid codes again by division (docs/kernels.md, "The grid rounding"):
// those in a window of 2^-13 steps around a half-integer, whose low 13 bits (with the
// half-integer put at `half` of them) lie below `limit`. The narrow window takes the half-integers alone, and holds
// while |y| < 200; the wide one a step either side too, and holds while |y| < 401. A third of the
// wide window's lanes, so a third of its redos: INT4 with fp16 scales on Gaussian data has a near
// lane in 2.7 % of its groups of 32 instead of 7.9 %.
struct grid_window {
  std::int32_t half;   // 0x1000 (narrow) or 0x1001 (wide)
  std::int32_t limit;  // 1 or 3
  float bound;         // the |y| the caller keeps below: 200, or 400 (the wide proof's 401)
};
constexpr grid_window narrow_window{0x1000, 1, 200.0f};
constexpr grid_window wide_window{0x1001, 3, 400.0f};

// The window of a call: narrow for the symmetric schemes (s a normal number of its format, so
// |y| <= D / (1 - 2^-8) < 129) and for affine codes below 128 (a group's |y| reaches about
// code_max; affine_params checks the window's bound and sends a group beyond it the long way);
// wide for 8-bit affine codes, whose |y| reaches 257.
constexpr grid_window window_for(bool symmetric, int code_max) {
  return symmetric || code_max < 128 ? narrow_window : wide_window;
}

// The constants of the grid rounding of group_grid (below; docs/kernels.md has the proof).
struct grid_consts {
  __m256 grid;     // 1536.0f: its ulp is 2^-13
  __m256i bias;    // bits(1536) - w.half - zero_point * 2^13
  __m256i low;     // 0x1FFF
  __m256i cmax8;   // code_max as bytes
  __m256i limit;   // w.limit: the low bits of a word to code again lie below it
};

LOWBIT_AVX2_INLINE grid_consts make_grid(grid_window w, int zero_point, int code_max) {
  return grid_consts{_mm256_set1_ps(1536.0f), _mm256_set1_epi32(0x44C00000 - w.half - zero_point * 0x2000),
                     _mm256_set1_epi32(0x1FFF), _mm256_set1_epi8(static_cast<char>(code_max)),
                     _mm256_set1_epi32(w.limit)};
}

// Whether a lane's low bits (near, as grid_round collects them) say "code again by division".
LOWBIT_AVX2_INLINE bool any_near(__m256i near, const grid_consts& k) {
  return !_mm256_testz_si256(_mm256_cmpgt_epi32(k.limit, near), _mm256_set1_epi32(-1));
}

// code + zero-point of one vector, by the grid (see sym_group_grid); near collects the low bits.
LOWBIT_AVX2_INLINE __m256i grid_round(__m256 x, __m256 r, const grid_consts& k, __m256i& near) {
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(x, r), k.grid);
  const __m256i u = _mm256_sub_epi32(_mm256_castps_si256(t), k.bias);
  near = _mm256_min_epi32(near, _mm256_and_si256(u, k.low));
  return _mm256_srai_epi32(u, 13);
}

// The codes of groups of 32k values by the grid, shared by the symmetric and affine paths.
// r: the broadcast 1/s; m: the broadcast offset subtracted first (Offset; the reference's x - m);
// k.bias carries the group's zero-point; exact(xc, out) redoes a 32-value chunk that came near a
// half-integer by division. The caller guarantees |(x [- m]) * r| < 401. Why the rest rounds as
// RN(x / s) does: docs/kernels.md, "The grid rounding".
template <bool Nibbles, bool Offset, class Exact>
LOWBIT_AVX2_INLINE void group_grid(const float* x, std::size_t chunks, __m256 r, __m256 m, const grid_consts& k,
                                   const Exact& exact, std::uint8_t* out) {
  for (std::size_t c = 0; c < chunks; ++c) {
    const float* xc = x + 32 * c;
    __m256i near = _mm256_set1_epi32(0x7FFFFFFF);
    __m256 v[4];
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(xc + 8 * i);
      if (Offset) v[i] = _mm256_sub_ps(v[i], m);
    }
    const __m256i q0 = grid_round(v[0], r, k, near);
    const __m256i q1 = grid_round(v[1], r, k, near);
    const __m256i q2 = grid_round(v[2], r, k, near);
    const __m256i q3 = grid_round(v[3], r, k, near);
    if (any_near(near, k)) {
      exact(xc, out + (Nibbles ? 16 : 32) * c);
      continue;
    }
    const __m256i codes = _mm256_min_epu8(pack_codes32(q0, q1, q2, q3), k.cmax8);
    if (Nibbles) {
      store_nibbles(out + 16 * c, codes);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * c), codes);
    }
  }
}

}  // namespace int_detail

// ------------------------------------------------------------------------------------------------
// Entry points: plain functions (no target attribute). They run in the caller's IEEE scope
// (kernels/fp_env.hpp): every bulk call of schemes/integer.hpp opens it once, after its checks.

inline bool int_range(const float* x, std::size_t n, float* lo, float* hi) noexcept {
  return int_detail::range(x, n, lo, hi);  // integer comparisons only: no scope needed
}

inline void int_quantize(const float* x, std::size_t n, const int_group_codec& c, const std::uint32_t* random_bits,
                         std::uint8_t* codes) noexcept {
  int_detail::quantize(x, n, c, random_bits, codes);
}

inline void int_dequantize(const std::uint8_t* codes, std::size_t n, const int_group_codec& c, float* y) noexcept {
  int_detail::dequantize(codes, n, c, y);
}

// The sum runs here, outside any AVX2 function, as the same expression as int_ref::error, with
// the same no_contract barrier, so it is rounded the same way whatever the compiler flags.
inline double int_error(const float* x, std::size_t n, const int_group_codec& c, double norm,
                        const std::uint32_t* random_bits) noexcept {
  double sum = 0.0;
  float xh[256];
  const std::uint32_t* rb = c.rm == rounding::stochastic ? random_bits : nullptr;
  for (std::size_t i = 0; i < n; i += 256) {
    const std::size_t m = n - i < 256 ? n - i : 256;
    int_detail::roundtrip(x + i, m, c, rb != nullptr ? rb + i : nullptr, xh);
    for (std::size_t k = 0; k < m; ++k) {
      const double d = std::fabs(static_cast<double>(xh[k]) - static_cast<double>(x[i + k]));
      sum += norm == 2.0 ? no_contract(d * d) : std::pow(d, norm);
    }
  }
  return sum;
}

// The AVX2 int_kernels table.
inline const int_kernels& int_table() noexcept {
  static constexpr int_kernels k{&int_range, &int_quantize, &int_dequantize, &int_error};
  return k;
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_INTEGER_AVX2_TABLE_HPP
