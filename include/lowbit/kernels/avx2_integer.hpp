// lowbit: AVX2 kernels of the integer schemes, bit-identical to the scalar reference
// (kernels/int_group.hpp's int_ref, and the ggml block functions of schemes/layouts.hpp).
//
//   int_table()            an int_kernels table: range, quantize, dequantize, error
//   quantize_symmetric()   whole groups of a symmetric minmax scheme in one pass per group:
//                          absmax, scale, codes, optionally packed into nibbles
//   dequantize_groups()    codes (one per byte, or nibbles) of consecutive groups to float32 or
//                          bfloat16, scales and zero-points validated on the way
//   ggml_*()               Q4_0 / Q8_0 blocks
//
// Exactness. The reference divides: y = x / s in IEEE float (round to nearest even, subnormals
// honoured), then rounds y to a code with round_to_code. Every entry point here runs inside an
// ieee_scope (kernels/fp_env.hpp), so the vector float instructions do the same IEEE operations
// whatever the caller's MXCSR (FTZ, DAZ, rounding control) is. Roundings to an integer use
// _mm256_round_ps with an explicit mode, which ignores MXCSR anyway.
//
// Dividing costs a vdivps per 8 elements; the nearest modes multiply by r = 1/s instead and prove
// the result: with s normal and |s| < 2^126, y0 = RN(x * RN(1/s)) is within 3.01 * 2^-24 |y| of
// y = RN(x / s). y0 is first clamped to [lo - 1, hi + 1] (|y0| <= 257), so |y0 - y| < 4.7e-5, and
// unless y0 lies within 2^-12 of a half-integer, y0 and y round to the same integer in every
// nearest mode (ties only matter at half-integers). When any element of a 32-element chunk is that
// close, the chunk is redone with the division. Random data hits this about once per 2000 values.
//
// Nothing here inlines the scalar reference code into an AVX2 function: the reference's a * b + c
// compiles without FMA under the default flags, and would be contracted inside a target("fma")
// function. The few products whose rounding must stay separate go through no_fma().
#ifndef LOWBIT_KERNELS_AVX2_INTEGER_HPP
#define LOWBIT_KERNELS_AVX2_INTEGER_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/cpu.hpp"
#include "../core/rounding.hpp"
#include "../core/status.hpp"
#include "int_group.hpp"

namespace lowbit {
namespace kernels {

// Storage format of a scale, as the fused kernels see it (schemes/integer.hpp's scale_storage).
enum class int_scale_format : std::uint8_t { float32, float16, bfloat16 };

// One call of quantize_symmetric: groups of group_length consecutive values of x, symmetric
// minmax scheme: scale = stored(amax / divisor), codes u = clamp(round(x / scale) + zero_point,
// code_min, code_max) (schemes/integer.hpp's make_int_codec and int_ref::quantize).
struct int_symmetric_job {
  const float* x = nullptr;
  std::size_t group_length = 0;
  float divisor = 1.0f;          // 2^(b-1) - 1 (restricted) or 2^(b-1) - 1/2 (full)
  int zero_point = 0;            // 2^(b-1)
  int code_min = 0;              // 1 for the restricted range, else 0
  int code_max = 255;            // 2^b - 1
  int_scale_format scale_format = int_scale_format::float32;
  rounding rm = rounding::nearest_even;
  const std::uint32_t* random_bits = nullptr;  // stochastic: one per element of x, else null
  std::uint8_t* codes = nullptr;  // one per byte, or (pack_nibbles) two per byte as pack_codes(4)
  bool pack_nibbles = false;      // needs code_max <= 15 and an even group_length
  float* scales = nullptr;        // one per group
};

// One call of dequantize_groups: y = the values of the codes of consecutive groups, validating
// each group's stored parameters as schemes/integer.hpp's stored_int_codec does.
struct int_dequantize_job {
  const std::uint8_t* codes = nullptr;  // one per byte, or nibbles (packed_nibbles)
  bool packed_nibbles = false;          // needs an even group_length
  std::size_t group_length = 0;
  const float* scales = nullptr;
  const float* zeros = nullptr;      // null: symmetric with zero_point below; else per group
  bool zeros_are_offsets = false;    // affine_offset: x = u * s + m
  int zero_point = 0;                // symmetric
  int code_min = 0;                  // symmetric restricted: 1 (not checked, as the reference)
  int code_max = 255;
  int_scale_format scale_format = int_scale_format::float32;
  float* y = nullptr;                // exactly one of y and y_bf16
  std::uint16_t* y_bf16 = nullptr;   // bfloat16 bits, nearest even, saturating (encode<bfloat16>)
};

}  // namespace kernels
}  // namespace lowbit

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include "avx2_common.hpp"
#include "fp_env.hpp"

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

// a * b, kept apart from a following addition (GCC contracts intrinsics under fp-contract=fast).
LOWBIT_AVX2_INLINE __m256 no_fma(__m256 p) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+x"(p));
#endif
  return p;
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
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i inf = _mm256_cmpeq_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7FFF)), _mm256_set1_epi32(0x7F80));
  return _mm256_add_epi32(r, inf);  // Inf -> max finite (0x7F80 - 1 = 0x7F7F)
}

// float -> fp16 bits, nearest even (F16C; the explicit mode ignores MXCSR), and fp16 bits -> float.
LOWBIT_AVX2_INLINE std::uint16_t to_half(float f) {
  return static_cast<std::uint16_t>(
      _mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)) & 0xFFFF);
}
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

// Largest |x| of n >= 1 values as bits (0x7F800000 or more: NaN or Inf present).
LOWBIT_AVX2_INLINE std::uint32_t absmax_bits(const float* x, std::size_t n) {
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_epi32(m0, abs_bits(_mm256_loadu_ps(x + i)));
    m1 = _mm256_max_epi32(m1, abs_bits(_mm256_loadu_ps(x + i + 8)));
    m2 = _mm256_max_epi32(m2, abs_bits(_mm256_loadu_ps(x + i + 16)));
    m3 = _mm256_max_epi32(m3, abs_bits(_mm256_loadu_ps(x + i + 24)));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_epi32(m0, abs_bits(_mm256_loadu_ps(x + i)));
  if (i < n) m1 = _mm256_max_epi32(m1, abs_bits(_mm256_maskload_ps(x + i, lane_mask(n - i))));
  return static_cast<std::uint32_t>(hmax_epi32(_mm256_max_epi32(_mm256_max_epi32(m0, m1), _mm256_max_epi32(m2, m3))));
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

// Writes 8 results: floats, or bfloat16 bits.
LOWBIT_AVX2_INLINE void put8(float* y, __m256 v) { _mm256_storeu_ps(y, v); }
LOWBIT_AVX2_INLINE void put8(std::uint16_t* y, __m256 v) {
  const __m256i w = pack_dwords_to_words(to_bf16_bits(v), _mm256_setzero_si256());
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm256_castsi256_si128(w));
}

// 32 codes (bytes in element order) -> 32 results.
template <class Out>
LOWBIT_AVX2_INLINE void values32(__m256i codes, const dctx& d, Out* y) {
  put8(y, values(widen8<0>(codes), d));
  put8(y + 8, values(widen8<1>(codes), d));
  put8(y + 16, values(widen8<2>(codes), d));
  put8(y + 24, values(widen8<3>(codes), d));
}

// n codes (bytes, or nibbles from an even element position) -> n results.
template <bool Nibbles, class Out>
LOWBIT_AVX2_INLINE void dequantize_run(const std::uint8_t* codes, std::size_t n, const dctx& d, Out* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = Nibbles ? load_nibbles(codes + i / 2)
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
    values32(c, d, y + i);
  }
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[32] = {};
    Out yb[32];
    if (Nibbles) {
      std::memcpy(cb, codes + i / 2, (m + 1) / 2);
      values32(load_nibbles(cb), d, yb);
    } else {
      std::memcpy(cb, codes + i, m);
      values32(_mm256_load_si256(reinterpret_cast<const __m256i*>(cb)), d, yb);
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
// Fused symmetric quantization

// How the scale of one group came out.
enum class scale_outcome { ok, zero, refer };  // refer: leave the group to the reference path

// stored(amax / divisor) for a finite amax >= 2^-100, exactly as make_int_codec + store_scale
// (which divide in double and round once to the format): the float quotient RN24(a/D) is the
// double's RN24(RN53(a/D)) (53 >= 2*24 + 2), and RN11 / RN8 of it equal the single rounding of
// a/D because a/D (a on a 2^-23-relative grid, D = N/2^j with N < 2^(k+1)) never lies within
// half a float ulp of a half-way point of fp16 or bfloat16 without being on it.
LOWBIT_AVX2_INLINE scale_outcome symmetric_scale(std::uint32_t amax, float divisor, int_scale_format fmt, float* s) {
  const float q = bits_float(amax) / divisor;
  switch (fmt) {
    case int_scale_format::float32: *s = q; break;
    case int_scale_format::float16: {
      const std::uint16_t h = to_half(q);
      if ((h & 0x7FFFu) >= 0x7C00u) return scale_outcome::refer;  // beyond fp16: the reference's error
      *s = from_half(h);
      break;
    }
    case int_scale_format::bfloat16: {
      const std::uint32_t b = float_bits(q);
      const std::uint32_t r = ((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16) << 16;
      if (r >= 0x7F800000u) return scale_outcome::refer;  // rounds past bfloat16's largest: the reference's error
      *s = bits_float(r);
      break;
    }
  }
  return *s == 0.0f ? scale_outcome::zero : scale_outcome::ok;
}

template <bool Nibbles>
LOWBIT_TARGET_AVX2 inline std::size_t quantize_symmetric_impl(const int_symmetric_job& j, std::size_t first,
                                                              std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  int_group_codec c;
  c.zero_point = j.zero_point;
  c.code_min = j.code_min;
  c.code_max = j.code_max;
  c.rm = j.rm;
  const std::uint32_t* rb_all = j.rm == rounding::stochastic ? j.random_bits : nullptr;
  for (std::size_t g = first; g < last; ++g) {
    const float* x = j.x + g * len;
    const std::uint32_t amax = absmax_bits(x, len);
    if (amax >= 0x7F800000u) return g;                      // NaN or Inf: the reference reports it
    if (amax != 0u && amax < 0x0D800000u) return g;         // below 2^-100: subnormal territory
    float s = 0.0f;
    const scale_outcome o = amax == 0u ? scale_outcome::zero : symmetric_scale(amax, j.divisor, j.scale_format, &s);
    if (o == scale_outcome::refer) return g;
    std::uint8_t* out = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
    j.scales[g] = s;
    if (o == scale_outcome::zero) {
      c.scale = 0.0f;
      const std::uint8_t z = zero_code(c);
      std::memset(out, Nibbles ? (z | z << 4) : z, Nibbles ? len / 2 : len);
      continue;
    }
    c.scale = s;
    const qctx q = make_qctx(c);
    const std::uint32_t* rb = rb_all != nullptr ? rb_all + g * len : nullptr;
    if ((float_bits(s) >> 23) > 252u) {  // 1/s not normal: divide (never with minmax scales of finite data)
      quantize_run<false, Nibbles>(x, len, rb, q, out);
    } else {
      quantize_run<true, Nibbles>(x, len, rb, q, out);
    }
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
// Fused dequantization of groups

// Whether v is finite and exactly representable in fmt (is_stored_scale).
LOWBIT_AVX2_INLINE bool stored_ok(float v, int_scale_format fmt) {
  const std::uint32_t b = float_bits(v);
  if ((b & 0x7F800000u) == 0x7F800000u) return false;
  switch (fmt) {
    case int_scale_format::float32: return true;
    case int_scale_format::float16:
      return from_half(to_half(v)) == v;
    case int_scale_format::bfloat16: return (b & 0xFFFFu) == 0u;
  }
  return false;
}

template <bool Nibbles, class Out>
LOWBIT_TARGET_AVX2 inline std::size_t dequantize_groups_impl(const int_dequantize_job& j, Out* y, std::size_t first,
                                                             std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  for (std::size_t g = first; g < last; ++g) {
    const float s = j.scales[g];
    if (!stored_ok(s, j.scale_format)) return g;
    int zp = j.zero_point;
    float m = 0.0f;
    if (j.zeros != nullptr) {
      const float z = j.zeros[g];
      if (j.zeros_are_offsets) {
        if (!stored_ok(z, j.scale_format)) return g;
        m = z;
        zp = 0;
      } else {
        if (!(z >= 0.0f && z <= static_cast<float>(j.code_max) && std::floor(z) == z)) return g;
        zp = static_cast<int>(z);
      }
    }
    const dctx d = make_dctx(s, zp, j.zeros_are_offsets && j.zeros != nullptr, m);
    const std::uint8_t* codes = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
    dequantize_run<Nibbles>(codes, len, d, y + g * len);
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
// ggml blocks (schemes/layouts.hpp): Q4_0 = {fp16 d; 16 bytes}, Q8_0 = {fp16 d; 32 int8}

constexpr std::size_t q4_0_bytes = 18;
constexpr std::size_t q8_0_bytes = 34;

LOWBIT_AVX2_INLINE std::uint16_t load_u16(const unsigned char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
LOWBIT_AVX2_INLINE void store_u16(unsigned char* p, std::uint16_t v) { std::memcpy(p, &v, sizeof v); }


// ggml_quantize_q4_0: max = the first element of largest magnitude, d = max / -8, id = 1/d,
// code = min(15, trunc(x * id + 8.5)) (NaN and negatives 0).
LOWBIT_TARGET_AVX2 inline errc ggml_quantize_q4_0(const float* x, std::size_t blocks, unsigned char* y) noexcept {
  const __m256 c85 = _mm256_set1_ps(8.5f);
  const __m256 c15 = _mm256_set1_ps(15.0f);
  const __m256 zero = _mm256_setzero_ps();
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * 32;
    const __m256 v[4] = {_mm256_loadu_ps(xb), _mm256_loadu_ps(xb + 8), _mm256_loadu_ps(xb + 16),
                         _mm256_loadu_ps(xb + 24)};
    const __m256i a[4] = {abs_bits(v[0]), abs_bits(v[1]), abs_bits(v[2]), abs_bits(v[3])};
    const __m256i m = _mm256_max_epi32(_mm256_max_epi32(a[0], a[1]), _mm256_max_epi32(a[2], a[3]));
    const int amax = hmax_epi32(m);
    if (static_cast<std::uint32_t>(amax) >= 0x7F800000u) return errc::non_finite_input;
    float max = 0.0f;
    if (amax != 0) {
      const __m256i t = _mm256_set1_epi32(amax);
      const std::uint32_t hit =
          static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a[0], t)))) |
          static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a[1], t)))) << 8 |
          static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a[2], t)))) << 16 |
          static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a[3], t)))) << 24;
      max = xb[lowest_bit(hit)];
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t h = to_half(d);
    if ((h & 0x7FFFu) == 0x7C00u) return errc::bad_argument;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 t = _mm256_add_ps(no_fma(_mm256_mul_ps(v[k], idv)), c85);
      q[k] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(t, zero), c15));  // NaN -> 0
    }
    const __m256i lo = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));  // bytes 0..7
    const __m256i hi = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));  // bytes 8..15
    const __m256i w = _mm256_packus_epi32(lo, hi);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w, w), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    unsigned char* yb = y + b * q4_0_bytes;
    store_u16(yb, h);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(yb + 2), _mm256_castsi256_si128(bytes));
  }
  return errc::ok;
}

LOWBIT_TARGET_AVX2 inline void ggml_dequantize_q4_0(const unsigned char* x, std::size_t blocks, float* y) noexcept {
  const __m128i low = _mm_set1_epi8(0x0F);
  for (std::size_t b = 0; b < blocks; ++b) {
    const unsigned char* xb = x + b * q4_0_bytes;
    const __m256 d = _mm256_set1_ps(half_to_float(load_u16(xb)));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb + 2));
    const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low), _mm_and_si128(qs, low));
    const __m256i z = _mm256_set1_epi32(8);
    float* yb = y + b * 32;
    _mm256_storeu_ps(yb, values8(widen8<0>(codes), d, z));
    _mm256_storeu_ps(yb + 8, values8(widen8<1>(codes), d, z));
    _mm256_storeu_ps(yb + 16, values8(widen8<2>(codes), d, z));
    _mm256_storeu_ps(yb + 24, values8(widen8<3>(codes), d, z));
  }
}

// ggml_quantize_q8_0: d = amax / 127, id = 1/d, q = roundf(x * id) clamped to +-127 (NaN 0).
LOWBIT_TARGET_AVX2 inline errc ggml_quantize_q8_0(const float* x, std::size_t blocks, unsigned char* y) noexcept {
  const __m256 lim = _mm256_set1_ps(127.0f);
  const __m256 nlim = _mm256_set1_ps(-127.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * 32;
    const __m256 v[4] = {_mm256_loadu_ps(xb), _mm256_loadu_ps(xb + 8), _mm256_loadu_ps(xb + 16),
                         _mm256_loadu_ps(xb + 24)};
    const __m256i m = _mm256_max_epi32(_mm256_max_epi32(abs_bits(v[0]), abs_bits(v[1])),
                                       _mm256_max_epi32(abs_bits(v[2]), abs_bits(v[3])));
    const std::uint32_t amax = static_cast<std::uint32_t>(hmax_epi32(m));
    if (amax >= 0x7F800000u) return errc::non_finite_input;
    const float d = bits_float(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t h = to_half(d);
    if ((h & 0x7FFFu) == 0x7C00u) return errc::bad_argument;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      __m256 t = _mm256_mul_ps(v[k], idv);
      t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));  // NaN (0 * Inf) -> 0
      t = _mm256_min_ps(_mm256_max_ps(t, nlim), lim);
      const __m256 tr = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 frac = _mm256_castsi256_ps(abs_bits(_mm256_sub_ps(t, tr)));
      const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_GE_OQ));
      const __m256i sgn = _mm256_or_si256(_mm256_srai_epi32(_mm256_castps_si256(t), 31), _mm256_set1_epi32(1));
      q[k] = _mm256_add_epi32(_mm256_cvttps_epi32(tr), _mm256_and_si256(up, sgn));  // half away from zero
    }
    unsigned char* yb = y + b * q8_0_bytes;
    store_u16(yb, h);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(yb + 2), pack_signed32(q[0], q[1], q[2], q[3]));
  }
  return errc::ok;
}

LOWBIT_TARGET_AVX2 inline void ggml_dequantize_q8_0(const unsigned char* x, std::size_t blocks, float* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const unsigned char* xb = x + b * q8_0_bytes;
    const __m256 d = _mm256_set1_ps(half_to_float(load_u16(xb)));
    float* yb = y + b * 32;
    for (int k = 0; k < 4; ++k) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(xb + 2 + 8 * k));
      _mm256_storeu_ps(yb + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
  }
}

}  // namespace int_detail

// ------------------------------------------------------------------------------------------------
// Entry points: plain functions (no target attribute) that open the IEEE scope and call in.

inline bool int_range(const float* x, std::size_t n, float* lo, float* hi) noexcept {
  return int_detail::range(x, n, lo, hi);  // integer comparisons only: no scope needed
}

inline void int_quantize(const float* x, std::size_t n, const int_group_codec& c, const std::uint32_t* random_bits,
                         std::uint8_t* codes) noexcept {
  const ieee_scope env;
  int_detail::quantize(x, n, c, random_bits, codes);
}

inline void int_dequantize(const std::uint8_t* codes, std::size_t n, const int_group_codec& c, float* y) noexcept {
  const ieee_scope env;
  int_detail::dequantize(codes, n, c, y);
}

// The sum runs here, outside any AVX2 function, as the same expression as int_ref::error, so it
// is rounded (and contracted or not) the same way.
inline double int_error(const float* x, std::size_t n, const int_group_codec& c, double norm,
                        const std::uint32_t* random_bits) noexcept {
  const ieee_scope env;
  double sum = 0.0;
  float xh[256];
  const std::uint32_t* rb = c.rm == rounding::stochastic ? random_bits : nullptr;
  for (std::size_t i = 0; i < n; i += 256) {
    const std::size_t m = n - i < 256 ? n - i : 256;
    int_detail::roundtrip(x + i, m, c, rb != nullptr ? rb + i : nullptr, xh);
    for (std::size_t k = 0; k < m; ++k) {
      const double d = std::fabs(static_cast<double>(xh[k]) - static_cast<double>(x[i + k]));
      sum += norm == 2.0 ? d * d : std::pow(d, norm);
    }
  }
  return sum;
}

// The AVX2 int_kernels table.
inline const int_kernels& int_table() noexcept {
  static constexpr int_kernels k{&int_range, &int_quantize, &int_dequantize, &int_error};
  return k;
}

// Quantizes groups [first, last) of j; returns the first group it leaves to the caller (a group
// with NaN or Inf, one whose scale the format cannot hold, or one whose largest magnitude is below
// 2^-100), or last. The caller runs the reference path on that group and calls again after it.
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
  const ieee_scope env;
  return j.pack_nibbles ? int_detail::quantize_symmetric_impl<true>(j, first, last)
                        : int_detail::quantize_symmetric_impl<false>(j, first, last);
}

// Dequantizes groups [first, last) of j; returns the first group whose stored parameters are not
// valid (the caller reports the reference's error), or last.
inline std::size_t dequantize_groups(const int_dequantize_job& j, std::size_t first, std::size_t last) noexcept {
  const ieee_scope env;
  if (j.y_bf16 != nullptr) {
    return j.packed_nibbles ? int_detail::dequantize_groups_impl<true>(j, j.y_bf16, first, last)
                            : int_detail::dequantize_groups_impl<false>(j, j.y_bf16, first, last);
  }
  return j.packed_nibbles ? int_detail::dequantize_groups_impl<true>(j, j.y, first, last)
                          : int_detail::dequantize_groups_impl<false>(j, j.y, first, last);
}

// ggml blocks on their bytes (18 per Q4_0 block, 34 per Q8_0 block). The quantizers return
// errc::ok or the reference's error for the first block they stop at, leaving that block and the
// ones after it unwritten.
inline errc ggml_quantize_q4_0(const float* x, std::size_t blocks, unsigned char* y) noexcept {
  const ieee_scope env;
  return int_detail::ggml_quantize_q4_0(x, blocks, y);
}
inline void ggml_dequantize_q4_0(const unsigned char* x, std::size_t blocks, float* y) noexcept {
  const ieee_scope env;
  int_detail::ggml_dequantize_q4_0(x, blocks, y);
}
inline errc ggml_quantize_q8_0(const float* x, std::size_t blocks, unsigned char* y) noexcept {
  const ieee_scope env;
  return int_detail::ggml_quantize_q8_0(x, blocks, y);
}
inline void ggml_dequantize_q8_0(const unsigned char* x, std::size_t blocks, float* y) noexcept {
  const ieee_scope env;
  int_detail::ggml_dequantize_q8_0(x, blocks, y);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_AVX2_INTEGER_HPP
