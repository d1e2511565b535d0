// lowbit: AVX2 kernels of the integer schemes, bit-identical to the scalar reference
// (kernels/int_group.hpp's int_ref). The ggml block kernels are in kernels/ggml/.
//
//   int_table()            an int_kernels table: range, quantize, dequantize, error
//   quantize_symmetric()   whole groups of a symmetric minmax scheme in one pass per group:
//                          absmax, scale, codes, optionally packed into nibbles
//   quantize_affine()      the same for the affine minmax schemes: min and max, scale,
//                          zero-point or offset, codes
//   dequantize_groups()    codes (one per byte, or nibbles) of consecutive groups to float32 or
//                          bfloat16, scales and zero-points validated on the way
//
// Why these kernels give the reference's bytes (reciprocals proven or redone by division, the
// grid rounding, the scales rounded once): docs/kernels.md, "Integer kernels".
#ifndef LOWBIT_KERNELS_AVX2_INTEGER_HPP
#define LOWBIT_KERNELS_AVX2_INTEGER_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/cpu.hpp"
#include "../core/rounding.hpp"
#include "../core/status.hpp"
#include "int_group.hpp"

namespace lowbit {
namespace kernels {

// What every whole-matrix quantization job reads and writes: groups of group_length consecutive
// values of x, their codes and their scales.
struct int_quantize_io {
  const float* x = nullptr;
  std::size_t group_length = 0;
  int code_max = 255;  // 2^b - 1
  scale_storage scale_format = scale_storage::fp32;
  rounding rm = rounding::nearest_even;
  const std::uint32_t* random_bits = nullptr;  // stochastic: one per element of x, else null
  std::uint8_t* codes = nullptr;  // one per byte, or (pack_nibbles) two per byte as pack_codes(4)
  bool pack_nibbles = false;      // needs code_max <= 15 and an even group_length
  float* scales = nullptr;        // one per group
};

// One call of quantize_symmetric: symmetric minmax scheme, scale = stored(amax / divisor), codes
// u = clamp(round(x / scale) + zero_point, code_min, code_max) (schemes/integer.hpp's
// make_int_codec and int_ref::quantize).
struct int_symmetric_job : int_quantize_io {
  float divisor = 1.0f;  // 2^(b-1) - 1 (restricted) or 2^(b-1) - 1/2 (full)
  int zero_point = 0;    // 2^(b-1)
  int code_min = 0;      // 1 for the restricted range, else 0
};

// One call of quantize_affine: affine minmax scheme (schemes/integer.hpp's make_int_codec and
// int_ref::quantize): [lo, hi] the group's range, widened to contain 0 for an integer zero-point
// when widen_to_zero or lo == hi; scale = stored((hi - lo) / code_max), computed in double; then an
// integer zero-point z = clamp(round_even(-lo / scale), 0, code_max) and codes
// u = clamp(round(x / scale) + z, 0, code_max), or (offset) a float offset m = stored(lo) and
// u = clamp(round((x - m) / scale), 0, code_max). A scale of 0 gives every code 0.
struct int_affine_job : int_quantize_io {
  bool offset = false;         // affine_offset (KIVI): a float offset instead of a zero-point
  bool widen_to_zero = true;   // integer zero-point: range_includes_zero
  float* zeros = nullptr;      // one per group: the zero-point as a float, or the offset
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
  scale_storage scale_format = scale_storage::fp32;
  float* y = nullptr;                // exactly one of y and y_bf16
  std::uint16_t* y_bf16 = nullptr;   // bfloat16 bits, nearest even, saturating (encode<bfloat16>)
};

}  // namespace kernels
}  // namespace lowbit

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>  // _BitScanForward
#endif

#include "avx2_common.hpp"
#include "fp_env.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define LOWBIT_INT_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define LOWBIT_INT_NOINLINE __declspec(noinline)
#else
#define LOWBIT_INT_NOINLINE
#endif

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

// Float bits with the low 16 bits rounded to nearest even into the high half (finite values;
// the low half is garbage): the one bfloat16 rounding of this file.
LOWBIT_AVX2_INLINE __m256i bf16_rounded(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), lsb);
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

// Whether a dequantizer writes n floats to y with non-temporal stores (stream_threshold_bytes,
// kernels/avx2_common.hpp): float output, y 32-byte aligned and every store position a multiple of
// 8 elements (`step`).
template <class Out>
inline bool streams_f32(const Out* y, std::size_t n, std::size_t step) noexcept {
  return std::is_same<Out, float>::value && n >= stream_threshold_bytes / sizeof(float) && step % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(y) % 32 == 0;
}

// 32 codes (bytes in element order) -> 32 results.
template <bool Stream, class Out>
LOWBIT_AVX2_INLINE void values32(__m256i codes, const dctx& d, Out* y) {
  put16<Stream>(y, values(widen8<0>(codes), d), values(widen8<1>(codes), d));
  put16<Stream>(y + 16, values(widen8<2>(codes), d), values(widen8<3>(codes), d));
}

// n codes (bytes, or nibbles from an even element position) -> n results.
template <bool Nibbles, bool Stream = false, class Out>
LOWBIT_AVX2_INLINE void dequantize_run(const std::uint8_t* codes, std::size_t n, const dctx& d, Out* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = Nibbles ? load_nibbles(codes + i / 2)
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
    values32<Stream>(c, d, y + i);
  }
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[32] = {};
    Out yb[32];
    if (Nibbles) {
      std::memcpy(cb, codes + i / 2, (m + 1) / 2);
      values32<false>(load_nibbles(cb), d, yb);
    } else {
      std::memcpy(cb, codes + i, m);
      values32<false>(_mm256_load_si256(reinterpret_cast<const __m256i*>(cb)), d, yb);
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
// Fused symmetric quantization
//
// Per batch of 8 groups: absmax, the 8 scales at once, then each group's codes; a group the
// reference must do ends the call. The proof that the scales are make_int_codec's:
// docs/kernels.md, "Fused symmetric quantization".

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

// The constants of the grid rounding of group_grid (below; docs/kernels.md has the proof).
struct grid_consts {
  __m256 grid;     // 1536.0f: its ulp is 2^-13
  __m256i bias;    // bits(1536) - (0x1000 + 1) - zero_point * 2^13
  __m256i low;     // 0x1FFF
  __m256i cmax8;   // code_max as bytes
};

// code + zero-point of one vector, by the grid (see sym_group_grid); near collects the low bits.
LOWBIT_AVX2_INLINE __m256i grid_round(__m256 x, __m256 r, const grid_consts& k, __m256i& near) {
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(x, r), k.grid);
  const __m256i u = _mm256_sub_epi32(_mm256_castps_si256(t), k.bias);
  near = _mm256_min_epi32(near, _mm256_and_si256(u, k.low));
  return _mm256_srai_epi32(u, 13);
}

// The 32 codes of a chunk some value of which came near a half-integer: by division, exactly.
LOWBIT_AVX2_INLINE __m256i sym_chunk_exact(const float* xc, const qctx& q) {
  if (q.rm == rounding::nearest_even) {  // RN(x / s) rounded to nearest even: round_ps does just that
    constexpr int ne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256i b = pack_signed32(_mm256_cvttps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(xc), q.scale), ne)),
                                    _mm256_cvttps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(xc + 8), q.scale), ne)),
                                    _mm256_cvttps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(xc + 16), q.scale), ne)),
                                    _mm256_cvttps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(xc + 24), q.scale), ne)));
    return _mm256_add_epi8(_mm256_min_epi8(_mm256_max_epi8(b, q.lo8), q.hi8), q.zp8);
  }
  const __m256i z = _mm256_setzero_si256();
  return pack_codes32(codes_exact(_mm256_loadu_ps(xc), q, z), codes_exact(_mm256_loadu_ps(xc + 8), q, z),
                      codes_exact(_mm256_loadu_ps(xc + 16), q, z), codes_exact(_mm256_loadu_ps(xc + 24), q, z));
}

// The same, stored (out of line: the hot loop keeps its registers).
template <bool Nibbles>
LOWBIT_TARGET_AVX2 LOWBIT_INT_NOINLINE void sym_chunk_exact_store(const float* xc, const qctx& qc, __m256 scales,
                                                                         __m256i lane, std::uint8_t* out) noexcept {
  qctx q = qc;
  q.scale = _mm256_permutevar8x32_ps(scales, lane);
  const __m256i codes = sym_chunk_exact(xc, q);
  if (Nibbles) {
    store_nibbles(out, codes);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), codes);
  }
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
    if (!_mm256_testz_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(3), near), _mm256_set1_epi32(-1))) {
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

template <bool Nibbles>
struct sym_exact {
  const qctx& qc;
  __m256 scales;
  __m256i lane;
  LOWBIT_AVX2_INLINE void operator()(const float* xc, std::uint8_t* out) const {
    sym_chunk_exact_store<Nibbles>(xc, qc, scales, lane, out);
  }
};

// Codes of one symmetric group of 32k values (r: the broadcast 1/s; scales/lane: s, for the
// exact path). The caller guarantees |x / s| <= D (1 + 2^-8) (s a normal number of its format),
// so codes lie in code_min .. code_max + 1 (the full range's +D + 1/2 rounds up to it).
template <bool Nibbles>
LOWBIT_AVX2_INLINE void sym_group_grid(const float* x, std::size_t chunks, __m256 r, __m256 scales, __m256i lane,
                                       const qctx& qc, const grid_consts& k, std::uint8_t* out) {
  group_grid<Nibbles, false>(x, chunks, r, r, k, sym_exact<Nibbles>{qc, scales, lane}, out);
}

// Two groups of 32 into nibbles, 32 bytes at once (the hot case of GPTQ-style INT4 g32): the
// in-lane order the packs leave is undone once for both groups by a qword permute and a byte
// shuffle. False, with nothing written, when some value came near a half-integer.
LOWBIT_AVX2_INLINE bool sym_pair_grid_nibbles(const float* x, __m256 ra, __m256 rb, const grid_consts& k,
                                              std::uint8_t* out) {
  __m256i near = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i a0 = grid_round(_mm256_loadu_ps(x), ra, k, near);
  const __m256i a1 = grid_round(_mm256_loadu_ps(x + 8), ra, k, near);
  const __m256i a2 = grid_round(_mm256_loadu_ps(x + 16), ra, k, near);
  const __m256i a3 = grid_round(_mm256_loadu_ps(x + 24), ra, k, near);
  const __m256i b0 = grid_round(_mm256_loadu_ps(x + 32), rb, k, near);
  const __m256i b1 = grid_round(_mm256_loadu_ps(x + 40), rb, k, near);
  const __m256i b2 = grid_round(_mm256_loadu_ps(x + 48), rb, k, near);
  const __m256i b3 = grid_round(_mm256_loadu_ps(x + 56), rb, k, near);
  if (!_mm256_testz_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(3), near), _mm256_set1_epi32(-1))) return false;
  const __m256i pair = _mm256_set1_epi16(0x1001);
  const __m256i ca = _mm256_min_epu8(_mm256_packus_epi16(_mm256_packus_epi32(a0, a1), _mm256_packus_epi32(a2, a3)), k.cmax8);
  const __m256i cb = _mm256_min_epu8(_mm256_packus_epi16(_mm256_packus_epi32(b0, b1), _mm256_packus_epi32(b2, b3)), k.cmax8);
  // Per lane, ca holds elements 8i..8i+3 (lane 0) or 8i+4..8i+7 (lane 1) of vector i, in pairs.
  const __m256i w = _mm256_packus_epi16(_mm256_maddubs_epi16(ca, pair), _mm256_maddubs_epi16(cb, pair));
  const __m256i v = _mm256_permute4x64_epi64(w, 0xD8);  // lane 0: group a, lane 1: group b
  const __m256i order = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,  //
                                         0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_shuffle_epi8(v, order));
  return true;
}

// The scales of a batch of up to 8 groups, one lane each.
struct sym_batch {
  __m256 s, r;          // stored scale, and its reciprocal
  std::uint32_t stop;   // lanes the reference must do (NaN/Inf, tiny amax, scale overflow)
  std::uint32_t tight;  // lanes sym_group_grid may take (s normal and below 2^126)
};

LOWBIT_AVX2_INLINE sym_batch symmetric_batch(const int_symmetric_job& j, std::size_t g0, std::size_t m,
                                             __m256 divisor) {
  const std::size_t len = j.group_length;
  const float* x = j.x + g0 * len;
  const __m256i z = _mm256_setzero_si256();
  __m256i amax;
  if (m == 8) {
    const __m256i v[8] = {lane_absmax(x, len),           lane_absmax(x + len, len),     lane_absmax(x + 2 * len, len),
                          lane_absmax(x + 3 * len, len), lane_absmax(x + 4 * len, len), lane_absmax(x + 5 * len, len),
                          lane_absmax(x + 6 * len, len), lane_absmax(x + 7 * len, len)};
    amax = reduce8_max_epi32(v);
  } else {
    __m256i v[8];
    for (std::size_t k = 0; k < 8; ++k) v[k] = k < m ? lane_absmax(x + k * len, len) : z;
    amax = reduce8_max_epi32(v);
  }
  sym_batch b;
  b.s = _mm256_setzero_ps();
  __m256i refer = scales_for(_mm256_castsi256_ps(amax), divisor, j.scale_format, b.s);
  // NaN, Inf, and amax >= 2^126, where the grid (u - z) * s may overflow float: the reference
  // decides (make_int_codec's scale_overflow).
  refer = _mm256_or_si256(refer, _mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7E7FFFFF)));
  refer = _mm256_or_si256(refer, _mm256_andnot_si256(_mm256_cmpeq_epi32(amax, _mm256_setzero_si256()),
                                                     _mm256_cmpgt_epi32(_mm256_set1_epi32(0x0D800000), amax)));
  b.stop = lanes_of(refer) & ((1u << m) - 1u);
  b.r = _mm256_div_ps(_mm256_set1_ps(1.0f), b.s);
  // s a normal number of its format (so within 2^-8 relative of amax / D) and below 2^126.
  const __m256i sb = _mm256_castps_si256(b.s);
  const int min_normal = j.scale_format == scale_storage::fp16 ? 0x38800000 : 0x00800000;
  b.tight = lanes_of(_mm256_and_si256(_mm256_cmpgt_epi32(sb, _mm256_set1_epi32(min_normal - 1)),
                                      _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7E800000), sb)));
  return b;
}

// One group of a symmetric job the long way (any length and mode, zero scales, near-ties):
// kept out of line so that the hot loop keeps its registers.
template <bool Nibbles>
LOWBIT_TARGET_AVX2 LOWBIT_INT_NOINLINE void symmetric_group(const int_symmetric_job& j, std::size_t g, float s,
                                                                  float r, std::uint8_t* out) noexcept {
  const std::size_t len = j.group_length;
  int_group_codec c;
  c.zero_point = j.zero_point;
  c.code_min = j.code_min;
  c.code_max = j.code_max;
  c.rm = j.rm;
  if (s == 0.0f) {  // all zeros, or a scale that underflows its format: every code the zero-point
    const std::uint8_t z = zero_code(c);
    std::memset(out, Nibbles ? (z | z << 4) : z, Nibbles ? len / 2 : len);
    return;
  }
  c.scale = s;
  qctx q = make_qctx(c);
  q.recip = _mm256_set1_ps(r);
  const float* x = j.x + g * len;
  const std::uint32_t* rb = j.rm == rounding::stochastic && j.random_bits != nullptr ? j.random_bits + g * len : nullptr;
  if (float_bits(s) < 0x7E800000u) {  // |x / s| stays below 2^15 and 1/s is normal
    quantize_run<true, Nibbles>(x, len, rb, q, out);
  } else {
    q.fast = false;
    quantize_run<false, Nibbles>(x, len, rb, q, out);
  }
}

template <bool Nibbles>
LOWBIT_TARGET_AVX2 inline std::size_t quantize_symmetric_impl(const int_symmetric_job& j, std::size_t first,
                                                              std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  int_group_codec c;
  c.scale = 1.0f;
  c.zero_point = j.zero_point;
  c.code_min = j.code_min;
  c.code_max = j.code_max;
  c.rm = j.rm;
  const qctx q = make_qctx(c);
  const grid_consts gk{_mm256_set1_ps(1536.0f), _mm256_set1_epi32(0x44C00000 - 0x1001 - j.zero_point * 0x2000),
                       _mm256_set1_epi32(0x1FFF), _mm256_set1_epi8(static_cast<char>(j.code_max))};
  const __m256 divisor = _mm256_set1_ps(j.divisor);
  const bool grid = q.fast && len % 32 == 0;  // a nearest mode
  if (first >= last) return last;
  // Software-pipelined: the next batch's absmax and scales are computed before this batch's codes,
  // so their division latency overlaps independent work.
  sym_batch next = symmetric_batch(j, first, last - first < 8 ? last - first : 8, divisor);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    const sym_batch b = next;
    if (b.stop == 0 && g0 + 8 < last) next = symmetric_batch(j, g0 + 8, last - g0 - 8 < 8 ? last - g0 - 8 : 8, divisor);
    const std::size_t done = b.stop != 0 ? lowest_bit(b.stop) : m;
    alignas(32) float sv[8];
    alignas(32) float rv[8];
    _mm256_store_ps(sv, b.s);
    _mm256_store_ps(rv, b.r);
    if (done == 8) {
      _mm256_storeu_ps(j.scales + g0, b.s);
    } else {
      for (std::size_t k = 0; k < done; ++k) j.scales[g0 + k] = sv[k];
    }
    const std::uint32_t tight = grid ? b.tight : 0u;
    if (Nibbles && len == 32 && done == 8 && tight == 0xFFu) {  // the hot case: pairs of groups
      const float* x = j.x + g0 * 32;
      std::uint8_t* out = j.codes + g0 * 16;
      for (int p = 0; p < 4; ++p) {
        const __m256i la = _mm256_set1_epi32(2 * p);
        const __m256i lb = _mm256_set1_epi32(2 * p + 1);
        const __m256 ra = _mm256_permutevar8x32_ps(b.r, la);
        const __m256 rb = _mm256_permutevar8x32_ps(b.r, lb);
        if (sym_pair_grid_nibbles(x + 64 * p, ra, rb, gk, out + 32 * p)) continue;
        sym_group_grid<Nibbles>(x + 64 * p, 1, ra, b.s, la, q, gk, out + 32 * p);
        sym_group_grid<Nibbles>(x + 64 * p + 32, 1, rb, b.s, lb, q, gk, out + 32 * p + 16);
      }
      continue;
    }
    if (len == 32 && done == 8 && tight == 0xFFu) {  // the hot case, unrolled
      const float* x = j.x + g0 * 32;
      std::uint8_t* out = j.codes + g0 * (Nibbles ? 16 : 32);
      constexpr std::size_t step = Nibbles ? 16 : 32;
      sym_group_grid<Nibbles>(x, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(0)), b.s, _mm256_set1_epi32(0), q, gk, out);
      sym_group_grid<Nibbles>(x + 32, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(1)), b.s, _mm256_set1_epi32(1), q, gk, out + step);
      sym_group_grid<Nibbles>(x + 64, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(2)), b.s, _mm256_set1_epi32(2), q, gk, out + 2 * step);
      sym_group_grid<Nibbles>(x + 96, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(3)), b.s, _mm256_set1_epi32(3), q, gk, out + 3 * step);
      sym_group_grid<Nibbles>(x + 128, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(4)), b.s, _mm256_set1_epi32(4), q, gk, out + 4 * step);
      sym_group_grid<Nibbles>(x + 160, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(5)), b.s, _mm256_set1_epi32(5), q, gk, out + 5 * step);
      sym_group_grid<Nibbles>(x + 192, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(6)), b.s, _mm256_set1_epi32(6), q, gk, out + 6 * step);
      sym_group_grid<Nibbles>(x + 224, 1, _mm256_permutevar8x32_ps(b.r, _mm256_set1_epi32(7)), b.s, _mm256_set1_epi32(7), q, gk, out + 7 * step);
      continue;
    }
    for (std::size_t k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      std::uint8_t* out = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
      if (((tight >> k) & 1u) != 0) {
        const __m256i lane = _mm256_set1_epi32(static_cast<int>(k));
        sym_group_grid<Nibbles>(j.x + g * len, len / 32, _mm256_permutevar8x32_ps(b.r, lane), b.s, lane, q, gk, out);
      } else {
        symmetric_group<Nibbles>(j, g, sv[k], rv[k], out);
      }
    }
    if (b.stop != 0) return g0 + done;
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
// Fused affine quantization (integer zero-point, or float offset)
//
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
  std::uint32_t tight;  // lanes group_grid may take (1/s normal, |(x - m) / s| < 400)
};

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
  aff_batch b;
  b.lo = _mm256_castsi256_ps(reduce8(vmn, min_ps_op{}));
  b.hi = _mm256_castsi256_ps(reduce8(vmx, max_ps_op{}));
  const __m256 nf = _mm256_castsi256_ps(reduce8(vnf, or_op{}));  // +-0, or NaN
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
  // |lo - m| and |hi - m| below 400 s (one rounding each): then |(x - m) * r| < 400 (1 + 2^-22).
  // Tested against s, not r, to keep the division off the path to the branches.
  const __m256 lim = _mm256_mul_ps(b.s, _mm256_set1_ps(400.0f));
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
LOWBIT_TARGET_AVX2 LOWBIT_INT_NOINLINE void affine_chunk_exact_store(const float* xc, const int_affine_job& j, float s,
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
LOWBIT_TARGET_AVX2 LOWBIT_INT_NOINLINE void affine_group(const int_affine_job& j, std::size_t g, float s, int zp,
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
  const __m256i bias0 = _mm256_set1_epi32(0x44C00000 - 0x1001);
  grid_consts gk{_mm256_set1_ps(1536.0f), bias0, _mm256_set1_epi32(0x1FFF), _mm256_set1_epi8(static_cast<char>(j.code_max))};
  // Software-pipelined as the symmetric path: the next batch's parameters before this one's codes.
  aff_batch next = affine_batch(j, first, last - first < 8 ? last - first : 8);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
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

// ------------------------------------------------------------------------------------------------
// Fused dequantization of groups, 8 at a time: the stored parameters are checked as
// stored_int_codec does (finite and representable in the format; an integer zero-point in
// 0..2^b-1), then each group is dequantized with its broadcast parameters.

// Lanes of v that are finite and exactly representable in fmt (is_stored_scale).
LOWBIT_AVX2_INLINE __m256i stored_ok(__m256 v, scale_storage fmt) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i exp = _mm256_set1_epi32(0x7F800000);
  const __m256i finite = _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(b, exp), exp), _mm256_set1_epi32(-1));
  switch (fmt) {
    case scale_storage::fp32: return finite;
    case scale_storage::fp16: {
      const __m256 back = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      return _mm256_and_si256(finite, _mm256_castps_si256(_mm256_cmp_ps(back, v, _CMP_EQ_OQ)));
    }
    case scale_storage::bf16:
      return _mm256_and_si256(finite, _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0xFFFF)),
                                                         _mm256_setzero_si256()));
  }
  return finite;
}

// 32 nibble codes minus an integer zero-point (both 0..15, so the difference fits a signed byte)
// -> 32 results.
template <bool Stream, class Out>
LOWBIT_AVX2_INLINE void values32_small(__m256i codes, __m256i z8, __m256 s, Out* y) {
  const __m256i d = _mm256_sub_epi8(codes, z8);
  const __m128i lo = _mm256_castsi256_si128(d);
  const __m128i hi = _mm256_extracti128_si256(d, 1);
  put16<Stream>(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), s),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), s));
  put16<Stream>(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), s),
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), s));
}

// One group of nibbles (starting at an even element) with an integer zero-point.
template <bool Stream, class Out>
LOWBIT_AVX2_INLINE void dequantize_nibbles(const std::uint8_t* codes, std::size_t n, int zero_point, __m256 s,
                                           Out* y) {
  const __m256i z8 = _mm256_set1_epi8(static_cast<char>(zero_point));
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) values32_small<Stream>(load_nibbles(codes + i / 2), z8, s, y + i);
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[16] = {};
    Out yb[32];
    std::memcpy(cb, codes + i / 2, (m + 1) / 2);
    values32_small<false>(load_nibbles(cb), z8, s, yb);
    std::memcpy(y + i, yb, m * sizeof(Out));
  }
}

template <bool Nibbles, bool Stream, class Out>
LOWBIT_TARGET_AVX2 inline std::size_t dequantize_groups_impl(const int_dequantize_job& j, Out* y, std::size_t first,
                                                             std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  const bool offsets = j.zeros != nullptr && j.zeros_are_offsets;
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    const __m256i lanes = lane_mask(m);
    const __m256 s = _mm256_maskload_ps(j.scales + g0, lanes);
    __m256i ok = stored_ok(s, j.scale_format);
    __m256 zv = _mm256_setzero_ps();
    if (j.zeros != nullptr) {
      zv = _mm256_maskload_ps(j.zeros + g0, lanes);
      if (offsets) {
        ok = _mm256_and_si256(ok, stored_ok(zv, j.scale_format));
      } else {  // an integer in 0..code_max
        const __m256 in_range = _mm256_and_ps(_mm256_cmp_ps(zv, _mm256_setzero_ps(), _CMP_GE_OQ),
                                              _mm256_cmp_ps(zv, _mm256_set1_ps(static_cast<float>(j.code_max)), _CMP_LE_OQ));
        const __m256 integral =
            _mm256_cmp_ps(_mm256_round_ps(zv, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), zv, _CMP_EQ_OQ);
        ok = _mm256_and_si256(ok, _mm256_castps_si256(_mm256_and_ps(in_range, integral)));
      }
    }
    const std::uint32_t stop = ~lanes_of(ok) & ((1u << m) - 1u);
    const std::size_t done = stop != 0 ? lowest_bit(stop) : m;
    alignas(32) float sv[8];
    alignas(32) float zf[8];
    _mm256_store_ps(sv, s);
    _mm256_store_ps(zf, zv);
    for (std::size_t k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      const int zp = j.zeros == nullptr ? j.zero_point : offsets ? 0 : static_cast<int>(zf[k]);
      if (Nibbles && !offsets) {
        dequantize_nibbles<Stream>(j.codes + g * len / 2, len, zp, _mm256_set1_ps(sv[k]), y + g * len);
      } else {
        const dctx d = make_dctx(sv[k], zp, offsets, zf[k]);
        const std::uint8_t* codes = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
        dequantize_run<Nibbles, Stream>(codes, len, d, y + g * len);
      }
    }
    if (stop != 0) return g0 + done;
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
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

// The sum runs here, outside any AVX2 function, as the same expression as int_ref::error, with
// the same no_contract barrier, so it is rounded the same way whatever the compiler flags.
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

// The whole-matrix entry points below run inside the caller's IEEE scope (kernels/fp_env.hpp):
// the bulk call opens it once.

// Quantizes groups [first, last) of j; returns the first group it leaves to the caller (a group
// with NaN or Inf, one whose scale the format cannot hold, or one whose largest magnitude is below
// 2^-100 or from 2^126 up), or last. The caller runs the reference path on that group and calls again after it.
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_symmetric_impl<true>(j, first, last)
                        : int_detail::quantize_symmetric_impl<false>(j, first, last);
}

// Quantizes groups [first, last) of j; returns the first group it leaves to the caller (a group
// with NaN or Inf, or whose scale or offset the format cannot hold: the reference reports the
// error), or last.
inline std::size_t quantize_affine(const int_affine_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_affine_impl<true>(j, first, last)
                        : int_detail::quantize_affine_impl<false>(j, first, last);
}

// Dequantizes groups [first, last) of j; returns the first group whose stored parameters are not
// valid (the caller reports the reference's error), or last.
inline std::size_t dequantize_groups(const int_dequantize_job& j, std::size_t first, std::size_t last) noexcept {
  if (j.y_bf16 != nullptr) {
    return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y_bf16, first, last)
                            : int_detail::dequantize_groups_impl<false, false>(j, j.y_bf16, first, last);
  }
  if (int_detail::streams_f32(j.y, (last - first) * j.group_length, j.group_length)) {
    const std::size_t r = j.packed_nibbles ? int_detail::dequantize_groups_impl<true, true>(j, j.y, first, last)
                                           : int_detail::dequantize_groups_impl<false, true>(j, j.y, first, last);
    _mm_sfence();
    return r;
  }
  return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y, first, last)
                          : int_detail::dequantize_groups_impl<false, false>(j, j.y, first, last);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_AVX2_INTEGER_HPP
