// lowbit: AVX-512 (F, BW, DQ, VL) kernels of MXFP4, MXFP6 (E2M3, E3M2), MXFP8 (E4M3, E5M2) and
// MXINT8, quantize and dequantize, float32 or bfloat16 on the float side, planar or (MXFP4)
// ggml's block_mxfp4 layout,
// bit-identical to the scalar reference
// (kernels/mx/scalar.hpp) and to the AVX2 kernel (kernels/mx/avx2.hpp), whose algorithm they
// follow on twice the width: the same integer encoders (scale rules, E2M1 by 16-bit keys, the
// shift encoder for the directed roundings), the same fast range and the same hand-off of NaN
// blocks and of blocks below the fast range to the reference, the same conversion-encoder path for
// MXFP8 and MXFP6 under nearest-even and toward zero (mx_direct, under an ieee_scope_traceless):
// no result depends on MXCSR. The NVFP4 kernels (kernels/nvfp4/avx512.hpp) share the encoders here.
//
// Where the 512-bit code differs from the AVX2 code (and why it is not the same source over a
// width parameter): comparisons land in mask registers (so the blends, the "count the thresholds
// passed" step and the NaN overrides are masked moves instead of vector masks); 16 blocks' scales
// at a time need a 16x16 transpose-max (reduce16_max) instead of 8x8; the E2M1 keys are formed in
// one of two lane orders chosen for the store that follows (vpackssdw order for lowbit's planar
// nibbles, a masked word blend for ggml's split halves) and packed by vpmov* narrowing stores
// (store_e2m1_*), which have no AVX2 counterpart; and the dequantizers look a block's results up
// in a 64-byte table row, 16 float32 with one vpermd (dequantize_fp4) or 32 16-bit halves with
// one vpermw (dequantize_fp6), where AVX2 needs two to four vpshufb and blends; with VBMI, MXFP8
// and MXFP6 dequantize through the conversion decoders' byte tables instead (mx_dequantize_vbmi).
// The lane-wise arithmetic (e8m0_codes16, e2m1_nearest32) is the AVX2 code line for line, and
// the shift encoder (encode_magnitude) the same source (kernels/mx/lanes.hpp). See
// docs/performance.md, "AVX-512 block formats (issue 15)" and "Zen 4".
//
// Coverage: every MX format with blocks that are whole multiples of 32 (mx_avx512_supports);
// other block sizes run the AVX2 kernel on the avx512 path.
#ifndef LOWBIT_KERNELS_MX_AVX512_HPP
#define LOWBIT_KERNELS_MX_AVX512_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../core/cpu.hpp"
#include "../../core/rounding.hpp"
#include "../../formats/types.hpp"
#include "../convert/avx512.hpp"
#include "../vec.hpp"
#include "avx2.hpp"
#include "scalar.hpp"

#if LOWBIT_HAS_AVX512_KERNELS
#include <immintrin.h>

#if defined(__OPTIMIZE__)
#define LOWBIT_BLOCK512_INLINE LOWBIT_TARGET_AVX512 inline __attribute__((always_inline))
#else
#define LOWBIT_BLOCK512_INLINE LOWBIT_TARGET_AVX512 inline
#endif
#endif

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace block {

// What the AVX-512 MX kernels cover (quantize and dequantize): every MX format (MXFP6 quantizes
// through the shift encoder of MXFP8 plus a 6-bit packing store, store_fp6_16) with blocks of 32,
// 64, ...; other block sizes take the AVX2 kernel (or the scalar loop).
template <class Fmt>
inline constexpr bool mx_avx512_has_kernel = is_mx_format<Fmt>::value;
template <class Fmt>
constexpr bool mx_avx512_supports(const mx_options& o) noexcept {
  return mx_avx512_has_kernel<Fmt> && o.block_size % 32 == 0 && o.block_size != 0;
}

#if LOWBIT_HAS_AVX512_KERNELS
namespace avx512 {
namespace detail {

using namespace ::lowbit::kernels::block::detail;

LOWBIT_BLOCK512_INLINE __m512i set1(int v) { return _mm512_set1_epi32(v); }

// 16 source values as float32 bit patterns (bfloat16 widens exactly).
using ::lowbit::kernels::avx512::detail::load16;

// Lane i: the maximum of the 16 lanes of block(i) (signed; used on |x| bit patterns), for
// i < count, 0 for the others. Four rounds of pairwise maxima over interleaved halves: 32-bit,
// 64-bit, then 128-bit lanes twice. Named values throughout, no arrays: GCC -O2 kept arrays of
// vectors here in memory (28 stores and their reloads per 16 blocks, whose 512-bit store
// forwarding Zen 4 pays for).
LOWBIT_BLOCK512_INLINE __m512i max_unpack32(__m512i a, __m512i b) {
  return _mm512_max_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
LOWBIT_BLOCK512_INLINE __m512i max_unpack64(__m512i a, __m512i b) {
  return _mm512_max_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}
LOWBIT_BLOCK512_INLINE __m512i max_lanes128(__m512i a, __m512i b) {
  return _mm512_max_epi32(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xDD));
}
template <class Block>
LOWBIT_BLOCK512_INLINE __m512i block_or_zero(const Block& block, std::size_t j, std::size_t count) {
  return j < count ? block(j) : _mm512_setzero_si512();
}
template <class Block>
LOWBIT_BLOCK512_INLINE __m512i max_unpack32(const Block& b, std::size_t j, std::size_t count) {
  return max_unpack32(block_or_zero(b, j, count), block_or_zero(b, j + 1, count));
}
template <class Block>
LOWBIT_BLOCK512_INLINE __m512i reduce16_max(const Block& b, std::size_t count) {
  const __m512i t0 = max_unpack32(b, 0, count), t1 = max_unpack32(b, 2, count);
  const __m512i t2 = max_unpack32(b, 4, count), t3 = max_unpack32(b, 6, count);
  const __m512i t4 = max_unpack32(b, 8, count), t5 = max_unpack32(b, 10, count);
  const __m512i t6 = max_unpack32(b, 12, count), t7 = max_unpack32(b, 14, count);
  const __m512i u0 = max_unpack64(t0, t1), u1 = max_unpack64(t2, t3);
  const __m512i u2 = max_unpack64(t4, t5), u3 = max_unpack64(t6, t7);
  return max_lanes128(max_lanes128(u0, u1), max_lanes128(u2, u3));
}

// E8M0 codes of 16 blocks from their amax bit patterns (0xFF where amax is NaN or Inf): the AVX2
// e8m0_codes on 16 lanes.
template <class Fmt>
LOWBIT_BLOCK512_INLINE __m512i e8m0_codes16(__m512i amax, ::lowbit::e8m0_rule rule) {
  const std::uint32_t max_bits = lowbit::detail::bit_cast<std::uint32_t>(Fmt::element_max);
  const int k = static_cast<int>(max_bits >> 23) - 127;
  const int c_mantissa = static_cast<int>(max_bits & 0x7FFFFFu);
  const int even_carry = (1 << 23) - (1 << (22 - Fmt::mantissa_bits));
  const __m512i one = set1(1);
  const __m512i field = _mm512_srli_epi32(amax, 23);
  const __m512i fb = _mm512_castps_si512(_mm512_cvtepi32_ps(amax));  // exact for a subnormal amax
  const __mmask16 subnormal = _mm512_cmpeq_epi32_mask(field, _mm512_setzero_si512());
  const __m512i e = _mm512_mask_sub_epi32(field, subnormal, _mm512_srli_epi32(fb, 23), set1(149));
  const __m512i mant = _mm512_and_si512(_mm512_mask_mov_epi32(amax, subnormal, fb), set1(0x7FFFFF));
  __m512i c;
  switch (rule) {
    case ::lowbit::e8m0_rule::ceil:
      c = _mm512_sub_epi32(e, set1(k));
      c = _mm512_mask_add_epi32(c, _mm512_cmpgt_epi32_mask(mant, set1(c_mantissa)), c, one);
      break;
    case ::lowbit::e8m0_rule::even:
      c = _mm512_sub_epi32(e, set1(Fmt::emax));
      c = _mm512_mask_add_epi32(c, _mm512_cmpgt_epi32_mask(mant, set1(even_carry - 1)), c, one);
      break;
    case ::lowbit::e8m0_rule::floor_log2f: {
      const __m512i index = _mm512_max_epi32(_mm512_sub_epi32(e, set1(log2f_threshold_first)), _mm512_setzero_si512());
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"  // GCC's gather macro (unoptimized builds) casts its mask
#endif
      const __m512i t = _mm512_i32gather_epi32(index, log2f_mantissa_thresholds(), 4);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
      c = _mm512_sub_epi32(e, set1(Fmt::emax));
      c = _mm512_mask_add_epi32(c, _mm512_cmpgt_epi32_mask(mant, _mm512_sub_epi32(t, one)), c, one);
      break;
    }
    case ::lowbit::e8m0_rule::floor:
    default: c = _mm512_sub_epi32(e, set1(Fmt::emax)); break;
  }
  c = _mm512_min_epi32(_mm512_max_epi32(c, _mm512_setzero_si512()), set1(254));
  return _mm512_mask_mov_epi32(c, _mm512_cmpgt_epi32_mask(amax, set1(0x7F7FFFFF)), set1(0xFF));
}

// ------------------------------------------------------------------------------------------------
// The shift encoder: |x| * 2^-s rounded into F, kernels/mx/lanes.hpp on 16 lanes.

using V = w512;
#define LOWBIT_VEC_INLINE LOWBIT_BLOCK512_INLINE
#include "lanes.hpp"
#undef LOWBIT_VEC_INLINE

// ------------------------------------------------------------------------------------------------
// E2M1, 32 values at a time (b0: elements 0-15, b1: 16-31), on 16-bit keys held in one of two
// orders, chosen for the store that follows:
//   planar order (Planar = true, vpackssdw): 128-bit lane k holds elements 4k..4k+3 in words 0-3
//     and 16+4k..16+4k+3 in words 4-7, so every dword holds two adjacent elements, the pair a
//     planar byte packs;
//   pair order (Planar = false, a masked word blend): dword j holds element j in its low word and
//     element j + 16 in its high word, the pair a split-halves byte packs (ggml).
// The arithmetic is lane-wise, so the order only matters to the stores.

template <rounding RM>
constexpr bool is_nearest() {
  return RM == rounding::nearest_even || RM == rounding::nearest_away || RM == rounding::nearest_toward_zero;
}

struct e2m1_consts16 {
  __m512i low16, bit16, key16, one16, two16, seven16, eight16;
  __m512i sub_lo, sub_hi, bias;
};

template <rounding RM>
LOWBIT_BLOCK512_INLINE e2m1_consts16 make_e2m1_consts16() {
  constexpr bool even = RM == rounding::nearest_even;
  constexpr bool away = RM == rounding::nearest_away;
  e2m1_consts16 c;
  c.low16 = set1(0xFFFF);
  c.bit16 = set1(0x10000);
  c.key16 = _mm512_set1_epi16(0x7FFF);
  c.one16 = _mm512_set1_epi16(1);
  c.two16 = _mm512_set1_epi16(2);
  c.seven16 = _mm512_set1_epi16(7);
  c.eight16 = _mm512_set1_epi16(8);
  c.sub_lo = _mm512_set1_epi16(static_cast<short>(away ? 0x3E80 - 1 : 0x3E80));
  c.sub_hi = _mm512_set1_epi16(static_cast<short>(even || away ? 0x3F40 - 1 : 0x3F40));
  c.bias = _mm512_set1_epi16(static_cast<short>((away ? 32 : 31) - 252 * 64));
  return c;
}

// The constants with their values hidden from the compiler by an empty asm, for a loop that it
// would otherwise make set them again on every iteration: in NVFP4's pair loop, beside its group
// code, GCC -O2 rebuilt eight16 (mov + vpbroadcastw) and the blend mask per 32 values.
LOWBIT_BLOCK512_INLINE e2m1_consts16 pinned(e2m1_consts16 c) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+v"(c.low16), "+v"(c.bit16), "+v"(c.key16), "+v"(c.one16), "+v"(c.two16), "+v"(c.seven16),
          "+v"(c.eight16), "+v"(c.sub_lo), "+v"(c.sub_hi), "+v"(c.bias));
#endif
  return c;
}

// The high 16-bit halves of 32 values in planar or pair order (vpackssdw of the arithmetic
// shifts keeps each half's bits exactly).
template <bool Planar>
LOWBIT_BLOCK512_INLINE __m512i high_halves32(__m512i b0, __m512i b1) {
  if constexpr (Planar) {
    return _mm512_packs_epi32(_mm512_srai_epi32(b0, 16), _mm512_srai_epi32(b1, 16));
  } else {
    return _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(b0, 16), b1);
  }
}
// The same with "the low half is nonzero" ORed into bit 0 (the sign stays in bit 15).
template <bool Planar>
LOWBIT_BLOCK512_INLINE __m512i sticky_high_halves(__m512i b0, __m512i b1, const e2m1_consts16& c) {
  const __m512i w0 = _mm512_mask_or_epi32(b0, _mm512_test_epi32_mask(b0, c.low16), b0, c.bit16);
  const __m512i w1 = _mm512_mask_or_epi32(b1, _mm512_test_epi32_mask(b1, c.low16), b1, c.bit16);
  return high_halves32<Planar>(w0, w1);
}
// Codes n0 (elements 0-15) and n1 (16-31), one per dword, in planar or pair order.
template <bool Planar>
LOWBIT_BLOCK512_INLINE __m512i codes_in_order(__m512i n0, __m512i n1) {
  if constexpr (Planar) {
    return _mm512_packs_epi32(n0, n1);
  } else {
    return _mm512_or_si512(n0, _mm512_slli_epi32(n1, 16));
  }
}

// The sign of a negative lane is kept unless its code is 0 and zeros are unsigned: one masked
// compare with guard = zero_guard(signed_zero), 0 without signed zeros, all ones (which no code
// equals) with them. (A branch on the option compiled, at -O2, to mask moves through a general
// register per vector.)
LOWBIT_BLOCK512_INLINE __m512i zero_guard(bool signed_zero) {
  return signed_zero ? set1(-1) : _mm512_setzero_si512();
}

// avx2::detail::e2m1_nearest16 on 32 values: b0, b1 the bit patterns of v = x * 2^-s, s7 = s * 128
// in every 16-bit lane. Complete codes (sign in bit 3) in planar or pair order.
template <rounding RM, bool Planar>
LOWBIT_BLOCK512_INLINE __m512i e2m1_nearest32(__m512i b0, __m512i b1, __m512i s7, __m512i guard,
                                               const e2m1_consts16& c) {
  static_assert(is_nearest<RM>(), "a nearest mode");
  const __m512i hw = sticky_high_halves<Planar>(b0, b1, c);
  const __m512i k = _mm512_sub_epi16(_mm512_and_si512(hw, c.key16), s7);
  __m512i t = _mm512_add_epi16(k, c.bias);
  if constexpr (RM == rounding::nearest_even) {
    t = _mm512_add_epi16(t, _mm512_and_si512(_mm512_srli_epi16(k, 6), c.one16));
  }
  const __m512i normal = _mm512_min_epi16(_mm512_srai_epi16(t, 6), c.seven16);
  // 0, 1 or 2: how many of the two thresholds below 1 the value passes
  const __m512i below_one = _mm512_mask_mov_epi16(_mm512_maskz_mov_epi16(_mm512_cmpgt_epi16_mask(k, c.sub_lo), c.one16),
                                                  _mm512_cmpgt_epi16_mask(k, c.sub_hi), c.two16);
  const __m512i n = _mm512_max_epi16(normal, below_one);
  const __mmask32 neg = _mm512_mask_cmpneq_epi16_mask(_mm512_movepi16_mask(hw), n, guard);
  return _mm512_mask_add_epi16(n, neg, n, c.eight16);
}

// The same under a directed rounding, through the shift encoder (e: the block's constants).
template <rounding RM, bool Planar>
LOWBIT_BLOCK512_INLINE __m512i e2m1_directed32(__m512i b0, __m512i b1, const enc_block& e, __m512i guard,
                                                const e2m1_consts16& c) {
  using F = formats::e2m1fn;
  const __m512i abs_mask = set1(0x7FFFFFFF);
  const __m512i n0 = encode_magnitude<F, RM>(_mm512_and_si512(b0, abs_mask), _mm512_movepi32_mask(b0), e);
  const __m512i n1 = encode_magnitude<F, RM>(_mm512_and_si512(b1, abs_mask), _mm512_movepi32_mask(b1), e);
  const __m512i n = codes_in_order<Planar>(n0, n1);
  const __mmask32 neg = _mm512_mask_cmpneq_epi16_mask(_mm512_movepi16_mask(high_halves32<Planar>(b0, b1)), n, guard);
  return _mm512_mask_add_epi16(n, neg, n, c.eight16);
}

// 32 codes in planar order -> 16 bytes of lowbit's planar nibbles (byte i: elements 2i low,
// 2i + 1 high): one shift-or per dword, vpmovdb, and a vpshufb from lane order (planar bytes
// 2k, 2k + 1, 8 + 2k, 9 + 2k in lane k) to byte order. Count 16: the first 8 bytes (elements
// 0-15) only.
template <int Count>
LOWBIT_BLOCK512_INLINE void store_e2m1_planar(std::uint8_t* dst, __m512i w) {
  const __m128i x = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(_mm512_or_si512(w, _mm512_srli_epi32(w, 12))),
                                     _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
  if constexpr (Count == 32) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), x);
  } else {
    static_assert(Count == 16, "16 or 32 codes");
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), x);
  }
}

// 32 codes in pair order -> 16 bytes in split halves of 32 (ggml's block_mxfp4: byte j holds
// element j low and j + 16 high): one shift-or per lane and vpmovdb.
LOWBIT_BLOCK512_INLINE void store_e2m1_split32(std::uint8_t* dst, __m512i w) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(_mm512_or_si512(w, _mm512_srli_epi32(w, 12))));
}

// Two blocks of 16 codes (block A in the low words, B in the high words of pair order) -> 8
// bytes each in split halves of 16 (ggml's block_nvfp4 sub-blocks: byte j holds element j low
// and j + 8 high). Count 16: block A only.
template <int Count>
LOWBIT_BLOCK512_INLINE void store_e2m1_split16(std::uint8_t* dst, __m512i w) {
  const __m512i t = _mm512_or_si512(w, _mm512_slli_epi32(_mm512_shuffle_i64x2(w, w, 0xEE), 4));
  const __m128i b = _mm256_cvtepi16_epi8(_mm512_castsi512_si256(t));  // A'0 B'0 A'1 B'1 ...
  const __m128i x = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  if constexpr (Count == 32) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), x);
  } else {
    static_assert(Count == 16, "16 or 32 codes");
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), x);
  }
}

// ------------------------------------------------------------------------------------------------
// MXFP8 and MXINT8 elements: 16 complete codes (sign, and MXINT8's two's complement) per vector,
// through the shift encoder (avx2::detail::mx_encode8 on 16 lanes), stored with vpmovdb; MXFP8
// and MXFP6 under mx_direct through the conversion encoder, 64 values at a time
// (mx_encode_run_direct).

template <class Fmt, rounding RM>
using mx_direct = block::avx2::detail::mx_direct<Fmt, RM>;

// The complete codes of 16 values under mx_direct, for the scale exponent s (s23 = s << 23).
template <class Fmt, rounding RM>
LOWBIT_BLOCK512_INLINE __m512i mx_direct16(__m512i b, __m512i s23, __m512i guard) {
  using F = typename mx_element_traits<Fmt>::spec;
  const __m512i n = ::lowbit::kernels::avx512::detail::scaled_direct_code<F, RM>(_mm512_and_si512(b, set1(0x7FFFFFFF)), s23);
  return _mm512_mask_or_epi32(n, _mm512_mask_cmpneq_epi32_mask(_mm512_movepi32_mask(b), n, guard), n,
                              set1(static_cast<int>(F::sign_mask)));
}

template <class Fmt, rounding RM>
LOWBIT_BLOCK512_INLINE __m512i mx_encode16(__m512i b, const enc_block& e, __m512i guard) {
  using traits = mx_element_traits<Fmt>;
  using F = typename traits::spec;
  if constexpr (mx_direct<Fmt, RM>::value) {
    return mx_direct16<Fmt, RM>(b, e.s23, guard);
  } else {
    const __m512i a = _mm512_and_si512(b, set1(0x7FFFFFFF));
    const __mmask16 neg = _mm512_movepi32_mask(b);
    const __m512i n = encode_magnitude<F, RM>(a, neg, e);
    if constexpr (traits::is_int8) {
      return _mm512_and_si512(_mm512_mask_sub_epi32(n, neg, _mm512_setzero_si512(), n), set1(0xFF));
    } else {
      return _mm512_mask_or_epi32(n, _mm512_mask_cmpneq_epi32_mask(neg, n, guard), n,
                                  set1(static_cast<int>(F::sign_mask)));
    }
  }
}

template <class Fmt, rounding RM, class Src>
LOWBIT_BLOCK512_INLINE void mx_encode_block_fp8(const Src* x, std::uint8_t* out, std::size_t block_size,
                                                 const std::int32_t& s_pair, __m512i guard) {
  const enc_block e =
      make_enc_block<typename mx_element_traits<Fmt>::spec>(_mm512_srai_epi32(_mm512_set1_epi32(s_pair), 23));
  for (std::size_t i = 0; i < block_size; i += 32) {
    const __m128i c0 = _mm512_cvtepi32_epi8(mx_encode16<Fmt, RM>(load16(x + i), e, guard));
    const __m128i c1 = _mm512_cvtepi32_epi8(mx_encode16<Fmt, RM>(load16(x + i + 16), e, guard));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1));
  }
}

// MXFP6: 16 codes (one per dword, < 64) -> 12 bytes, code k at bits 6k..6k+5 of each 3-byte
// group (core/packing.hpp): each 128-bit lane holds one group of four codes, shifted by 0, 6,
// 12, 18 and ORed into its dword 0, whose low three bytes the shuffles gather.
LOWBIT_BLOCK512_INLINE void store_fp6_16(std::uint8_t* dst, __m512i codes) {
  __m512i x = _mm512_sllv_epi32(codes, _mm512_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18));
  x = _mm512_or_si512(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
  x = _mm512_or_si512(x, _mm512_shuffle_epi32(x, _MM_PERM_CDAB));
  const __m128i w = _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0,
                                                                                       0, 0, 0, 0, 0), x));
  const __m128i b = _mm_shuffle_epi8(w, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  _mm_mask_storeu_epi8(dst, static_cast<__mmask16>(0x0FFF), b);
}

template <class Fmt, rounding RM, class Src>
LOWBIT_BLOCK512_INLINE void mx_encode_block_fp6(const Src* x, std::uint8_t* out, std::size_t block_size,
                                                 const std::int32_t& s_pair, __m512i guard) {
  const enc_block e =
      make_enc_block<typename mx_element_traits<Fmt>::spec>(_mm512_srai_epi32(_mm512_set1_epi32(s_pair), 23));
  for (std::size_t i = 0; i < block_size; i += 16)
    store_fp6_16(out + i / 4 * 3, mx_encode16<Fmt, RM>(load16(x + i), e, guard));
}

// ------------------------------------------------------------------------------------------------
// MX quantize.

// s_pair: the scale exponent s times 128 in both 16-bit halves (a 32-bit broadcast from memory
// costs no shuffle uop, where a 16-bit broadcast would).
template <rounding RM, bool Split, class Src>
LOWBIT_BLOCK512_INLINE void mx_encode_block_fp4(const Src* x, std::uint8_t* out, std::size_t block_size,
                                                 const std::int32_t& s_pair, __m512i guard, const e2m1_consts16& c) {
  if constexpr (is_nearest<RM>()) {
    const __m512i s7 = _mm512_set1_epi32(s_pair);
    for (std::size_t i = 0; i < block_size; i += 32) {
      const __m512i w = e2m1_nearest32<RM, !Split>(load16(x + i), load16(x + i + 16), s7, guard, c);
      if constexpr (Split) {
        store_e2m1_split32(out + i / 2, w);
      } else {
        store_e2m1_planar<32>(out + i / 2, w);
      }
    }
  } else {
    const enc_block e = make_enc_block<formats::e2m1fn>(_mm512_srai_epi32(_mm512_set1_epi32(s_pair), 23));
    for (std::size_t i = 0; i < block_size; i += 32) {
      const __m512i w = e2m1_directed32<RM, !Split>(load16(x + i), load16(x + i + 16), e, guard, c);
      if constexpr (Split) {
        store_e2m1_split32(out + i / 2, w);
      } else {
        store_e2m1_planar<32>(out + i / 2, w);
      }
    }
  }
}

// MXFP8 and MXFP6 under mx_direct: the elements of `count` consecutive blocks of bs values as one
// run (the planar layout keeps their codes contiguous too), 64 values a step, each vector of 16
// with its own block's s << 23 (s23[block]). The 64 codes are packed once, by the conversion
// encoder's packs (bytes_of_codes) and byte or sextet store, instead of per 16 (vpmovdb, or
// store_fp6_16's seven instructions per 16 codes). A last half step (bs an odd multiple of 32)
// takes the per-block code.
template <class Fmt, rounding RM, class Src>
LOWBIT_BLOCK512_INLINE void mx_encode_run_direct(const Src* x, std::uint8_t* out, std::size_t count, std::size_t bs,
                                                 const std::int32_t* s23, const std::int32_t* s_pair, __m512i guard) {
  constexpr bool fp6 = Fmt::element_bits == 6;
  const std::size_t n = count * bs;
  std::size_t i = 0, j = 0, k = 0;  // value i is value k of block j
  const auto advance = [&j, &k, bs] {
    k += 16;
    if (k == bs) k = 0, ++j;
  };
  for (; i + 64 <= n; i += 64) {
    const __m512i c0 = mx_direct16<Fmt, RM>(load16(x + i), _mm512_set1_epi32(s23[j]), guard);
    advance();
    const __m512i c1 = mx_direct16<Fmt, RM>(load16(x + i + 16), _mm512_set1_epi32(s23[j]), guard);
    advance();
    const __m512i c2 = mx_direct16<Fmt, RM>(load16(x + i + 32), _mm512_set1_epi32(s23[j]), guard);
    advance();
    const __m512i c3 = mx_direct16<Fmt, RM>(load16(x + i + 48), _mm512_set1_epi32(s23[j]), guard);
    advance();
    const __m512i b = ::lowbit::kernels::avx512::detail::bytes_of_codes(c0, c1, c2, c3);
    if constexpr (fp6)
      ::lowbit::kernels::avx512::detail::store_bytes<::lowbit::kernels::avx2::detail::layout::sextets>(out + i / 4 * 3, b);
    else
      _mm512_storeu_si512(out + i, b);
  }
  if (i < n) {  // 32 values, the second half of block j
    if constexpr (fp6)
      mx_encode_block_fp6<Fmt, RM>(x + i, out + i / 4 * 3, 32, s_pair[j], guard);
    else
      mx_encode_block_fp8<Fmt, RM>(x + i, out + i, 32, s_pair[j], guard);
  }
}

// The lane-wise maximum of |x| (as bit patterns) over block j of `size` values (a multiple of 32).
template <class Src>
struct block_abs_max {
  const Src* x;
  std::size_t size;
  LOWBIT_BLOCK512_INLINE __m512i operator()(std::size_t j) const {
    const __m512i abs_mask = set1(0x7FFFFFFF);
    const Src* b = x + j * size;
    __m512i acc = _mm512_max_epi32(_mm512_and_si512(load16(b), abs_mask), _mm512_and_si512(load16(b + 16), abs_mask));
    for (std::size_t i = 32; i < size; i += 32)
      acc = _mm512_max_epi32(acc, _mm512_max_epi32(_mm512_and_si512(load16(b + i), abs_mask),
                                                   _mm512_and_si512(load16(b + i + 16), abs_mask)));
    return acc;
  }
};

// The elements of blocks g .. g + count - 1 (at xg) by the per-block encoders, block j with
// scale s_lane[j] (mx_encode_block_fp4's s_pair). Out of line: in mx_quantize_rm's group loop,
// whose rare paths call out (and a call clobbers every zmm), GCC set the E2M1 constants again
// for every block; here they are set once per group. MXFP4 quantize in cache (Zen 5, blocks of
// 32, medians of four alternating runs): 5.98 -> 6.55 G elem/s, into ggml blocks 5.98 -> 6.39;
// MXFP6, MXFP8 and MXINT8 (which come here only outside mx_direct) unchanged.
template <class Fmt, rounding RM, class Src, class Out>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void mx_encode_group(const Src* xg, const Out out, std::size_t g, std::size_t count,
                                                   std::size_t bs, const std::int32_t* s_lane,
                                                   bool signed_zero) noexcept {
  const __m512i guard = zero_guard(signed_zero);
  if constexpr (Fmt::element_bits == 4) {
    const e2m1_consts16 c = make_e2m1_consts16<RM>();
    if (bs == 32) {  // OCP's block of 32 as a constant: one step per block
      for (std::size_t j = 0; j < count; ++j)
        mx_encode_block_fp4<RM, Out::split>(xg + j * 32, out.element_ptr(g + j), 32, s_lane[j], guard, c);
    } else {
      for (std::size_t j = 0; j < count; ++j)
        mx_encode_block_fp4<RM, Out::split>(xg + j * bs, out.element_ptr(g + j), bs, s_lane[j], guard, c);
    }
  } else {
    for (std::size_t j = 0; j < count; ++j) {
      if constexpr (Fmt::element_bits == 6)
        mx_encode_block_fp6<Fmt, RM>(xg + j * bs, out.element_ptr(g + j), bs, s_lane[j], guard);
      else
        mx_encode_block_fp8<Fmt, RM>(xg + j * bs, out.element_ptr(g + j), bs, s_lane[j], guard);
    }
  }
}

// 16 blocks at a time: their amax (reduce16_max), their scales, then every block through the
// fast path with its own scale exponent; NaN blocks and blocks below the fast range are rewritten
// afterwards, as in the AVX2 kernel.
template <class Fmt, rounding RM, class Src, class Out>
LOWBIT_TARGET_AVX512 inline bool mx_quantize_rm(const Src* src, std::size_t blocks, const ::lowbit::mx_options& o,
                                                const Out out) {
  static_assert(mx_avx512_has_kernel<Fmt>, "a format with an AVX-512 quantizer");
  constexpr bool fp4 = Fmt::element_bits == 4;
  constexpr bool split = Out::split;
  static_assert(!split || fp4, "split halves hold FP4 codes");
  const std::size_t bs = o.block_size;
  const ::lowbit::e8m0_rule rule = o.scale_rule;
  const __m512i guard = zero_guard(o.signed_zero);
  const std::size_t block_bytes = bs * Fmt::element_bits / 8;
  bool non_finite = false;
  // From DRAM each batch asks for the lines of the batch after next first, one ahead of the next
  // batch's amax below (2.3-3.0 G elem/s without, 5.4-6.0 with, blocks of 32; docs/performance.md,
  // "Zen 5"), for batches of up to 4 KB (larger ones were not measured, and would crowd L1).
  const bool ahead = 16 * bs * sizeof(Src) <= 4096;
  alignas(64) std::int32_t s_lane[16];
  alignas(64) std::int32_t s23_lane[16];  // s << 23 (mx_encode_run_direct; s_lane's top bits, kept
                                          // apart so that a vector takes it by a broadcast load)
  if (blocks == 0) return false;
  // Group g + 1's amax and scale codes before group g's elements, so that its reductions overlap
  // them.
  __m512i next_amax = reduce16_max(block_abs_max<Src>{src, bs}, blocks < 16 ? blocks : 16);
  __m512i next_codes = e8m0_codes16<Fmt>(next_amax, rule);
  for (std::size_t g = 0; g < blocks; g += 16) {
    const std::size_t count = blocks - g < 16 ? blocks - g : 16;
    const Src* xg = src + g * bs;
    if (ahead && blocks - g >= 48) ::lowbit::kernels::avx2::prefetch_lines(xg + 32 * bs, 16 * bs * sizeof(Src));
    const __m512i amax = next_amax;
    const __m512i codes = next_codes;
    if (g + 16 < blocks) {
      next_amax = reduce16_max(block_abs_max<Src>{xg + 16 * bs, bs}, blocks - g - 16 < 16 ? blocks - g - 16 : 16);
      next_codes = e8m0_codes16<Fmt>(next_amax, rule);
    }
    if (!split && count == 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.scale_ptr(g)), _mm512_cvtepi32_epi8(codes));
    } else {
      alignas(16) std::uint8_t lane[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(lane), _mm512_cvtepi32_epi8(codes));
      for (std::size_t j = 0; j < count; ++j) *out.scale_ptr(g + j) = lane[j];
    }
    const __mmask16 zero_block = _mm512_cmpeq_epi32_mask(amax, _mm512_setzero_si512());
    // s * 128 in both 16-bit halves of each lane (s >= -127: the low half is s * 128 mod 2^16)
    const __m512i s = _mm512_maskz_sub_epi32(static_cast<__mmask16>(~zero_block), codes, set1(127));
    _mm512_store_si512(s_lane, _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi32(s, 7), set1(0xFFFF)),
                                               _mm512_slli_epi32(s, 23)));
    if constexpr (!fp4 && mx_direct<Fmt, RM>::value) {
      _mm512_store_si512(s23_lane, _mm512_slli_epi32(s, 23));
      mx_encode_run_direct<Fmt, RM>(xg, out.element_ptr(g), count, bs, s23_lane, s_lane, guard);
    } else {
      mx_encode_group<Fmt, RM>(xg, out, g, count, bs, s_lane, o.signed_zero);
    }
    const unsigned nan_mask = _mm512_cmpeq_epi32_mask(codes, set1(0xFF));
    const unsigned low_mask = _mm512_cmpgt_epi32_mask(set1(127 + mx_fast_min_exponent), codes) & ~unsigned{zero_block};
    const unsigned special = (nan_mask | low_mask) & ((1u << count) - 1u);
    if (special != 0) {
      for (std::size_t j = 0; j < count; ++j) {
        if (((special >> j) & 1u) == 0) continue;
        if ((nan_mask >> j) & 1u) {
          std::memset(out.element_ptr(g + j), 0, block_bytes);
          non_finite = true;
        } else {
          mx_quantize_block_to<Fmt>(xg + j * bs, o, out, g + j);
        }
      }
    }
  }
  return non_finite;
}

// ------------------------------------------------------------------------------------------------
// MX dequantize tables, per scale code a 64-byte row: MXFP4 float32 (the 16 results, read with
// vpermd), and the 16-bit results as words, read with vpermw (whose index has 5 bits): MXFP4
// bfloat16 (the 16 results twice) and MXFP6 (the top half of the float32 result or the bfloat16
// result of each of the 32 magnitudes; the sign is ORed in).

struct fp4_f32_rows {
  alignas(64) std::uint32_t row[256][16];
};
struct word_rows {
  alignas(64) std::uint16_t row[256][32];
};

template <class F>
inline const fp4_f32_rows& fp4_f32_table() noexcept {
  struct holder {
    fp4_f32_rows t;
    holder() noexcept {
      const half_table<16>& h = mx_half_table<F, 16, false>();
      for (int sc = 0; sc < 256; ++sc)
        for (int c = 0; c < 16; ++c)
          t.row[sc][c] = (static_cast<std::uint32_t>(h.row[sc][c]) << 8 | h.row[sc][16 + c]) << 16;
    }
  };
  static const holder table;
  return table.t;
}
// mx_half_table<F, Entries, Bf16>'s rows as 32 words (Entries 16: repeated).
template <class F, int Entries, bool Bf16>
inline const word_rows& word_table() noexcept {
  struct holder {
    word_rows t;
    holder() noexcept {
      const half_table<Entries>& h = mx_half_table<F, Entries, Bf16>();
      for (int sc = 0; sc < 256; ++sc)
        for (int c = 0; c < 32; ++c)
          t.row[sc][c] = static_cast<std::uint16_t>(h.row[sc][c % Entries] << 8 | h.row[sc][Entries + c % Entries]);
    }
  };
  static const holder table;
  return table.t;
}

template <bool Stream>
LOWBIT_BLOCK512_INLINE void store16(float* dst, __m512i v) {
  if constexpr (Stream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), v);
  } else {
    _mm512_storeu_si512(dst, v);
  }
}

// 32 FP4 codes from 16 bytes -> two vectors of 16 dword indices (low 4 bits: the code; vpermd
// reads no more). Planar: element i is byte i / 2 >> 4 (i % 2); split: element j < 16 is byte j's
// low nibble, j + 16 its high nibble.
template <bool Split>
LOWBIT_BLOCK512_INLINE void fp4_indices32(const std::uint8_t* in, __m512i& i0, __m512i& i1) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  if constexpr (Split) {
    i0 = _mm512_cvtepu8_epi32(b);
    i1 = _mm512_srli_epi32(i0, 4);
  } else {
    const __m512i x = _mm512_broadcast_i32x4(b);
    const __m512i nib = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    // dword 4k + m of 128-bit lane k takes byte 2k + m / 2 (i0) or 8 + 2k + m / 2 (i1)
    i0 = _mm512_srlv_epi32(
        _mm512_shuffle_epi8(x, _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0)), nib);
    i1 = _mm512_srlv_epi32(
        _mm512_shuffle_epi8(x, _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8)), nib);
  }
}

// 32 word indices (low 4 bits the code, bit 4 free: the bfloat16 rows repeat).
template <bool Split>
LOWBIT_BLOCK512_INLINE __m512i fp4_word_indices32(const std::uint8_t* in) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  if constexpr (Split) {
    const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    return _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
  } else {
    // word i takes byte i / 2 (high byte zeroed), then shifts by 4 (i % 2)
    const __m512i x = _mm512_cvtepu8_epi32(b);  // dword j = byte j
    const __m512i w = _mm512_or_si512(x, _mm512_slli_epi32(x, 16));  // both words of dword j = byte j
    return _mm512_srlv_epi16(w, _mm512_set1_epi32(4 << 16));
  }
}

// MXFP4 blocks of bs values into float32: the codes as indices into the scale's row of table.
template <bool Stream, bool Split, class In>
LOWBIT_BLOCK512_INLINE void fp4_f32_blocks(const In in_layout, std::size_t blocks, std::size_t bs,
                                           const fp4_f32_rows& table, float* dst) {
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* in = in_layout.element_ptr(b);
    float* out = dst + b * bs;
    const __m512i row = _mm512_load_si512(table.row[*in_layout.scale_ptr(b)]);
    for (std::size_t i = 0; i < bs; i += 32) {
      __m512i i0, i1;
      fp4_indices32<Split>(in + i / 2, i0, i1);
      store16<Stream>(out + i, _mm512_permutexvar_epi32(i0, row));
      store16<Stream>(out + i + 16, _mm512_permutexvar_epi32(i1, row));
    }
  }
}

template <class Fmt, bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX512 inline void mx_dequantize_fp4(const In in_layout, std::size_t blocks, std::size_t bs, Dst* dst) {
  using F = typename mx_element_traits<Fmt>::spec;
  constexpr bool split = In::split;
  if constexpr (std::is_same<Dst, float>::value) {
    const fp4_f32_rows& table = fp4_f32_table<F>();
    // (OCP's block of 32 as a constant: one step per block, without a loop of its own to count)
    if (bs == 32)
      fp4_f32_blocks<Stream, split>(in_layout, blocks, 32, table, dst);
    else
      fp4_f32_blocks<Stream, split>(in_layout, blocks, bs, table, dst);
  } else {
    static_assert(!Stream, "streaming stores are used for float outputs only");
    const word_rows& table = word_table<F, 16, true>();
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::uint8_t* in = in_layout.element_ptr(b);
      Dst* out = dst + b * bs;
      const __m512i row = _mm512_load_si512(table.row[*in_layout.scale_ptr(b)]);
      for (std::size_t i = 0; i < bs; i += 32)
        _mm512_storeu_si512(out + i, _mm512_permutexvar_epi16(fp4_word_indices32<split>(in + i / 2), row));
    }
  }
}

// MXFP6, planar: 32 codes (24 bytes) at a time, code << 10 in words (the converters'
// sextet_words32); the
// magnitudes looked up in the scale's row with one vpermw of code (it reads an index's low 5
// bits), the sign (code bit 5) already at bit 15; float32 output is the word << 16.
// The NaN scale fills the block with NaN, as the AVX2 kernel does.
template <class Fmt, bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX512 inline void mx_dequantize_fp6(const In in_layout, std::size_t blocks, std::size_t bs, Dst* dst) {
  using F = typename mx_element_traits<Fmt>::spec;
  constexpr bool f32 = std::is_same<Dst, float>::value;
  static_assert(f32 || !Stream, "streaming stores are used for float outputs only");
  const word_rows& table = word_table<F, 32, !f32>();
  const __m512i sign = _mm512_set1_epi16(static_cast<short>(0x8000));
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* in = in_layout.element_ptr(b);
    Dst* out = dst + b * bs;
    const std::uint8_t sc = *in_layout.scale_ptr(b);
    if (sc == 0xFF) {
      ::lowbit::kernels::block::avx2::detail::fill_nan(out, bs);
      continue;
    }
    const __m512i row = _mm512_load_si512(table.row[sc]);
    for (std::size_t i = 0; i < bs; i += 32) {
      const __m512i top = ::lowbit::kernels::avx512::detail::sextet_words32(in + i / 4 * 3);
      const __m512i w =
          _mm512_or_si512(_mm512_permutexvar_epi16(_mm512_srli_epi16(top, 10), row), _mm512_and_si512(top, sign));
      if constexpr (f32) {
        store16<Stream>(out + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(w)), 16));
        store16<Stream>(out + i + 16, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(w, 1)), 16));
      } else {
        _mm512_storeu_si512(out + i, w);
      }
    }
  }
}

// float32 bit patterns -> bfloat16 codes in 32-bit lanes (avx2_common.hpp's bf16_lanes_of_f32).
LOWBIT_BLOCK512_INLINE __m512i bf16_lanes_of_f32_16(__m512i b) {
  const __m512i a = _mm512_and_si512(b, set1(0x7FFFFFFF));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, 16), set1(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(a, _mm512_add_epi32(set1(0x7FFF), lsb)), 16);
  r = _mm512_min_epu32(r, set1(0x7F7F));
  r = _mm512_or_si512(r, _mm512_and_si512(_mm512_srli_epi32(b, 16), set1(0x8000)));
  return _mm512_mask_mov_epi32(r, _mm512_cmpgt_epi32_mask(a, set1(0x7F800000)), set1(0x7FFF));
}

template <bool Stream>
LOWBIT_BLOCK512_INLINE void store16v(float* dst, __m512 v) {
  store16<Stream>(dst, _mm512_castps_si512(v));
}
template <bool Stream>
LOWBIT_BLOCK512_INLINE void store16v(bfloat16* dst, __m512 v) {
  static_assert(!Stream, "streaming stores are used for float outputs only");
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi32_epi16(bf16_lanes_of_f32_16(_mm512_castps_si512(v))));
}


// 16 element bytes -> 16 floats, exactly the element value times 2^-8 (E4M3), times 1 (E5M2),
// or the integer (MXINT8): avx2::detail::widen_fp8 on 16 lanes.
template <class Fmt>
LOWBIT_BLOCK512_INLINE __m512 widen_fp8_16(__m128i x) {
  if constexpr (mx_element_traits<Fmt>::is_int8) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x));
  } else {
    __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(x), 8);  // code << 8
    if constexpr (std::is_same<typename mx_element_traits<Fmt>::spec, formats::e4m3fn>::value) {
      h = _mm256_and_si256(_mm256_srai_epi16(h, 1), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    }
    return _mm512_cvtph_ps(h);
  }
}

// Block of bs elements (a multiple of 32) with scale exponent s in the fast range -> out: the
// exact widening times 2^s (avx2::detail::fp8_block's float32 form), unless one of its codes is
// NaN -> false, out written in part. (Inf times 2^s is Inf, as the reference says.) FP8: 32 codes
// a step, widened to words together (widen_fp8_16 on 32 lanes).
template <class Fmt, bool Stream, class Dst>
LOWBIT_BLOCK512_INLINE bool fp8_block(const std::uint8_t* in, std::size_t bs, int s, Dst* out) {
  constexpr bool is_int8 = mx_element_traits<Fmt>::is_int8;
  constexpr bool e4m3 = !is_int8 && std::is_same<typename mx_element_traits<Fmt>::spec, formats::e4m3fn>::value;
  constexpr int offset = is_int8 ? -6 : e4m3 ? 8 : 0;
  const __m512 p = _mm512_castsi512_ps(set1((s + offset + 127) << 23));
  for (std::size_t i = 0; i < bs; i += 32) {
    if constexpr (is_int8) {
      store16v<Stream>(out + i, _mm512_mul_ps(widen_fp8_16<Fmt>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))), p));
      store16v<Stream>(out + i + 16,
                       _mm512_mul_ps(widen_fp8_16<Fmt>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16))), p));
    } else {
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
      const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi8(0x7F));
      if ((e4m3 ? _mm256_cmpeq_epi8_mask(mag, _mm256_set1_epi8(0x7F)) : _mm256_cmpgt_epi8_mask(mag, _mm256_set1_epi8(0x7C))) != 0)
        return false;
      __m512i h = _mm512_slli_epi16(_mm512_cvtepu8_epi16(c), 8);  // code << 8
      if constexpr (e4m3) h = _mm512_and_si512(_mm512_srai_epi16(h, 1), _mm512_set1_epi16(static_cast<short>(0xBFFF)));
      store16v<Stream>(out + i, _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)), p));
      store16v<Stream>(out + i + 16, _mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), p));
    }
  }
  return true;
}

// MXFP8 and MXINT8 without VBMI (avx2::detail::fp8_blocks on 16 lanes): the blocks in the fast
// range without NaN codes by fp8_block, every other block by the reference.
template <class Fmt, bool Stream, class Dst>
LOWBIT_TARGET_AVX512 inline void mx_dequantize_fp8(const std::uint8_t* elements, const std::uint8_t* scales,
                                                   std::size_t blocks, const ::lowbit::mx_options& o, Dst* dst) {
  const std::size_t bs = o.block_size;
  std::size_t b = 0;
  while (b < blocks) {
    for (; b < blocks; ++b) {
      const int s = static_cast<int>(scales[b]) - 127;  // (the NaN scale 0xFF: s = 128, outside)
      if (!mx_fast_range<Fmt>::holds(s) || !fp8_block<Fmt, Stream>(elements + b * bs, bs, s, dst + b * bs)) break;
    }
    if (b < blocks) {
      ::lowbit::kernels::block::avx2::detail::mx_block_outside<Fmt>(elements + b * bs, scales[b], o, dst + b * bs);
      ++b;
    }
  }
}

// MXFP8 and MXFP6 with VBMI: 64 codes a step (two blocks of 32, or 64 codes of one block), their
// results at s = 0 looked up in byte tables (kernels/convert/avx512.hpp, "Decoding with VBMI")
// built from the reference itself (mx_scaled_float and mx_store at s = 0), then scaled. Inside
// the fast range every finite nonzero element times 2^s is a normal float32 with at most 4
// significant bits, so also a bfloat16 value: float32 results are the product with 2^s (NaN and
// Inf keep theirs), bfloat16 results add s to the exponent field of the lanes whose element is
// finite and nonzero (zero, NaN and Inf elements have the same result at every s). Blocks outside
// the fast range get their results afterwards, from the per-block code.
template <class Fmt>
inline constexpr bool mx_vbmi_dequantizes = !mx_element_traits<Fmt>::is_int8 && Fmt::element_bits >= 6;

template <class Fmt, class Dst>
const ::lowbit::kernels::avx512::detail::vbmi_tables& mx_vbmi_tables() noexcept {
  static const ::lowbit::kernels::avx512::detail::vbmi_tables t = [] {
    std::uint16_t result[256];
    for (unsigned c = 0; c < 256; ++c) {  // (6-bit elements: the bits above the code ignored)
      const auto code = static_cast<std::uint8_t>(c & ((1u << Fmt::element_bits) - 1u));
      Dst v;
      ::lowbit::detail::mx_store(v, ::lowbit::detail::mx_scaled_float(Fmt::unpack_element(code), 0));
      if constexpr (std::is_same<Dst, float>::value)
        result[c] = static_cast<std::uint16_t>(lowbit::detail::bit_cast<std::uint32_t>(v) >> 16);  // low half 0
      else
        result[c] = v.bits();
    }
    ::lowbit::kernels::avx512::detail::vbmi_tables r;
    ::lowbit::kernels::avx512::detail::fill_vbmi_tables(result, r);
    return r;
  }();
  return t;
}

// The codes of elements i .. i + 63 (i + 31 when !whole) in the order the lookup wants:
// vbmi_transposed's for float32 results (vbmi_decode64), vbmi_halves_order's for 16-bit ones. FP8: live gets bit e
// set where element e is finite and nonzero.
template <class Fmt, class Dst>
struct mx_vbmi_codes {
  static constexpr bool f32 = std::is_same<Dst, float>::value;
  const std::uint8_t* elements;
  LOWBIT_AVX512_VBMI_INLINE __m512i operator()(std::size_t i, bool whole, __mmask64* live) const {
    namespace cv = ::lowbit::kernels::avx512::detail;
    if constexpr (Fmt::element_bits == 8) {
      using F = typename mx_element_traits<Fmt>::spec;
      const __m512i c = whole ? _mm512_loadu_si512(elements + i) : _mm512_maskz_loadu_epi8(0xFFFFFFFF, elements + i);
      *live = _mm512_cmple_epu8_mask(_mm512_sub_epi8(_mm512_and_si512(c, _mm512_set1_epi8(0x7F)), _mm512_set1_epi8(1)),
                                     _mm512_set1_epi8(static_cast<char>(F::max_bits - 1)));
      return f32 ? cv::vbmi_transposed(c) : cv::vbmi_halves_order(c);
    } else {
      static_assert(Fmt::element_bits == 6, "FP8 or FP6 elements");
      static constexpr cv::sextet_order order = cv::make_sextet_order(f32);
      *live = 0;  // (from the results: FP6 has no NaN or Inf)
      return cv::sextets_in_order(elements + i / 4 * 3, whole ? __mmask64{0xFFFFFFFFFFFF} : __mmask64{0xFFFFFF}, order);
    }
  }
};

// One step of 64 codes from element i (32 when not whole), the first 32 under scale exponent sa,
// the next 32 under sb.
template <class Fmt, ::lowbit::kernels::avx512::detail::vbmi_index Mode, bool Stream, class Dst>
LOWBIT_AVX512_VBMI_INLINE void mx_vbmi_step(const mx_vbmi_codes<Fmt, Dst>& codes,
                                            const ::lowbit::kernels::avx512::detail::vbmi_registers& k, std::size_t i,
                                            bool whole, int sa, int sb, Dst* dst) {
  namespace cv = ::lowbit::kernels::avx512::detail;
  __mmask64 live;
  const __m512i c = codes(i, whole, &live);
  if constexpr (std::is_same<Dst, float>::value) {
    __m512i o0, o1, o2, o3;
    cv::vbmi_decode64<Mode>(c, k, &o0, &o1, &o2, &o3);
    const __m512 pa = _mm512_castsi512_ps(set1((sa + 127) << 23)), pb = _mm512_castsi512_ps(set1((sb + 127) << 23));
    store16v<Stream>(dst + i, _mm512_mul_ps(_mm512_castsi512_ps(o0), pa));
    store16v<Stream>(dst + i + 16, _mm512_mul_ps(_mm512_castsi512_ps(o1), pa));
    if (whole) {
      store16v<Stream>(dst + i + 32, _mm512_mul_ps(_mm512_castsi512_ps(o2), pb));
      store16v<Stream>(dst + i + 48, _mm512_mul_ps(_mm512_castsi512_ps(o3), pb));
    }
  } else {
    __m512i l, h;
    cv::vbmi_lookup<Mode>(c, k, &l, &h);
    __m512i w0 = _mm512_unpacklo_epi8(l, h), w1 = _mm512_unpackhi_epi8(l, h);
    __mmask32 live0 = static_cast<__mmask32>(live), live1 = static_cast<__mmask32>(live >> 32);
    if constexpr (Fmt::element_bits == 6) {
      live0 = _mm512_test_epi16_mask(w0, _mm512_set1_epi16(0x7FFF));
      live1 = _mm512_test_epi16_mask(w1, _mm512_set1_epi16(0x7FFF));
    }
    _mm512_storeu_si512(dst + i, _mm512_mask_add_epi16(w0, live0, w0, _mm512_set1_epi16(static_cast<short>(sa * 128))));
    if (whole)
      _mm512_storeu_si512(dst + i + 32,
                          _mm512_mask_add_epi16(w1, live1, w1, _mm512_set1_epi16(static_cast<short>(sb * 128))));
  }
}

// Returns whether a block lies outside the fast range (its results are not written yet).
template <class Fmt, ::lowbit::kernels::avx512::detail::vbmi_index Mode, bool Stream, class Dst>
LOWBIT_TARGET_AVX512_VBMI inline bool mx_dequantize_vbmi(const std::uint8_t* elements, const std::uint8_t* scales,
                                                         std::size_t n, std::size_t bs,
                                                         const ::lowbit::kernels::avx512::detail::vbmi_tables& t,
                                                         Dst* dst) {
  namespace cv = ::lowbit::kernels::avx512::detail;
  const cv::vbmi_registers k = cv::vbmi_load(t);
  const mx_vbmi_codes<Fmt, Dst> codes{elements};
  const auto outside_range = [](int sa, int sb) {
    return !mx_fast_range<Fmt>::holds(sa) || !mx_fast_range<Fmt>::holds(sb);
  };
  bool outside = false;
  std::size_t i = 0;
  if (bs == 32) {  // OCP's blocks: the step's scales are those of blocks i / 32 and i / 32 + 1
    for (; i + 64 <= n; i += 64) {
      const int sa = static_cast<int>(scales[i / 32]) - 127, sb = static_cast<int>(scales[i / 32 + 1]) - 127;
      outside = outside || outside_range(sa, sb);
      mx_vbmi_step<Fmt, Mode, Stream>(codes, k, i, true, sa, sb, dst);
    }
  }
  // Otherwise the block of each 32 codes, counted (a division per step by the run-time block size
  // cost a quarter of the time).
  const std::size_t halves = bs / 32;
  std::size_t block = i / bs, half = 0;
  const auto next_scale = [&]() -> int {
    const int e = static_cast<int>(scales[block]) - 127;
    if (++half == halves) {
      half = 0;
      ++block;
    }
    return e;
  };
  for (; i < n; i += 64) {  // n: a multiple of 32
    const bool whole = i + 64 <= n;
    const int sa = next_scale();
    const int sb = whole ? next_scale() : sa;
    outside = outside || outside_range(sa, sb);
    mx_vbmi_step<Fmt, Mode, Stream>(codes, k, i, whole, sa, sb, dst);
  }
  return outside;
}

template <class Fmt, bool Stream, class Dst>
inline void mx_dequantize_vbmi(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t blocks,
                               const ::lowbit::mx_options& o, Dst* dst) {
  const std::size_t bs = o.block_size;
  const auto& t = mx_vbmi_tables<Fmt, Dst>();
  bool outside = false;
  ::lowbit::kernels::avx512::detail::with_vbmi_mode<typename mx_element_traits<Fmt>::spec>(t, [&](auto mode) {
    outside = mx_dequantize_vbmi<Fmt, decltype(mode)::value, Stream>(elements, scales, blocks * bs, bs, t, dst);
  });
  if (!outside) return;
  if (Stream) _mm_sfence();  // the streamed results before the ordinary stores that replace some
  const std::size_t block_bytes = bs * Fmt::element_bits / 8;
  for (std::size_t b = 0; b < blocks; ++b)
    if (!mx_fast_range<Fmt>::holds(static_cast<int>(scales[b]) - 127))
      ::lowbit::kernels::block::avx2::detail::mx_block_outside<Fmt>(elements + b * block_bytes, scales[b], o, dst + b * bs);
}

// Whether a float output is written with streaming stores: as the AVX2 kernels decide, but the
// destination 64-byte aligned.
template <class Dst>
inline bool stream_output64(const Dst* dst, std::size_t n) noexcept {
  return std::is_same<Dst, float>::value && n >= ::lowbit::kernels::avx2::stream_threshold_bytes / sizeof(float) &&
         reinterpret_cast<std::uintptr_t>(dst) % 64 == 0;
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Entry points, as in kernels/mx/avx2.hpp; the options passed the bulk calls' checks and
// mx_avx512_supports<Fmt>.

template <class Fmt, class Src, class Out>
LOWBIT_TARGET_AVX512 inline bool mx_quantize(const Src* src, std::size_t n, const ::lowbit::mx_options& o,
                                             const Out out) {
  const std::size_t blocks = n / o.block_size;
  const ieee_scope_traceless env;  // avx2::detail::mx_direct's vcvtps2dq
  return with_element_rounding(o.element_rounding, [&](auto rm) {
    return detail::mx_quantize_rm<Fmt, decltype(rm)::value>(src, blocks, o, out);
  });
}
template <class Fmt, class Src>
LOWBIT_TARGET_AVX512 inline bool mx_quantize(const Src* src, std::size_t n, const ::lowbit::mx_options& o,
                                             std::uint8_t* elements, std::uint8_t* scales) {
  const planar_layout<std::uint8_t> out{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  return mx_quantize<Fmt>(src, n, o, out);
}

template <class Fmt, class Dst, class In>
LOWBIT_TARGET_AVX512 inline void mx_dequantize(const In in, std::size_t n, const ::lowbit::mx_options& o, Dst* dst) {
  const std::size_t bs = o.block_size;
  const bool stream = detail::stream_output64(dst, n);
  if constexpr (detail::mx_vbmi_dequantizes<Fmt>) {
    if (::lowbit::detail::use_avx512_vbmi()) {
      if (stream) {
        detail::mx_dequantize_vbmi<Fmt, true>(in.elements, in.scales, n / bs, o, dst);
        _mm_sfence();
      } else {
        detail::mx_dequantize_vbmi<Fmt, false>(in.elements, in.scales, n / bs, o, dst);
      }
      return;
    }
  }
  if (stream) {
    if constexpr (std::is_same<Dst, float>::value) {
      if constexpr (Fmt::element_bits == 8) {
        detail::mx_dequantize_fp8<Fmt, true>(in.elements, in.scales, n / bs, o, dst);
      } else if constexpr (Fmt::element_bits == 6) {
        detail::mx_dequantize_fp6<Fmt, true>(in, n / bs, bs, dst);
      } else {
        detail::mx_dequantize_fp4<Fmt, true>(in, n / bs, bs, dst);
      }
      _mm_sfence();
      return;
    }
  }
  if constexpr (Fmt::element_bits == 8) {
    if constexpr (std::is_same<Dst, bfloat16>::value && !detail::mx_element_traits<Fmt>::is_int8) {
      // Without VBMI, the AVX2 kernel's bfloat16 lookup (avx2.hpp) beats this kernel's rounding.
      return avx2::detail::mx_dequantize_fp8<Fmt, false>(in.elements, in.scales, n / bs, o, dst);
    }
    detail::mx_dequantize_fp8<Fmt, false>(in.elements, in.scales, n / bs, o, dst);
  } else if constexpr (Fmt::element_bits == 6) {
    detail::mx_dequantize_fp6<Fmt, false>(in, n / bs, bs, dst);
  } else {
    detail::mx_dequantize_fp4<Fmt, false>(in, n / bs, bs, dst);
  }
}
template <class Fmt, class Dst>
LOWBIT_TARGET_AVX512 inline void mx_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                               const ::lowbit::mx_options& o, Dst* dst) {
  const planar_layout<const std::uint8_t> in{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  mx_dequantize<Fmt>(in, n, o, dst);
}

}  // namespace avx512
#endif  // LOWBIT_HAS_AVX512_KERNELS

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_KERNELS_MX_AVX512_HPP
