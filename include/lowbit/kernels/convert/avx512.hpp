// lowbit: AVX-512 kernels of the format conversions (F, BW, DQ, VL). Bit-identical to
// kernels/convert/scalar.hpp for every input, like the AVX2 kernels they extend (avx2.hpp: read
// its header first).
//
// What they cover, the rest staying on the AVX2 kernels (which the avx512 path runs too):
//  - encoding float32, bfloat16 and float16 into every format with path 1 (direct_path: FP8, FP6,
//    FP4 unpacked and packed, E8M0, float16, bfloat16) for round-to-nearest-even and toward-zero
//    under every policy;
//    16-bit sources are widened exactly to float32 as they are loaded (load16);
//  - the same, under the other rounding modes (stochastic, toward +Inf, the nearest variants):
//    path 3 (lanes.hpp: magnitude_lanes) over 64 lanes, after path 2 where avx2.hpp offers it
//    (encode_fast_at, encode_general_at);
//  - decoding the float16-twin formats (FP8, FP6 one code per byte or packed four in three
//    bytes), and float16 and bfloat16 themselves (decode_halves_range), into float32;
//  - decoding FP4 (E2M1: one code per byte, and two per byte) with a 16-entry vpermd table, and
//    E8M0 (code << 23, codes 0 and 0xFF from the scalar decoder) into float32;
//  - with AVX-512 VBMI (use_avx512_vbmi), decoding FP8 and FP6 (unpacked and packed) into
//    float32, and byte codes into float16 and bfloat16, by byte-table lookups ("Decoding with
//    VBMI" below; the scaled FP8 and the MX dequantizers use the same lookups).
//  - with AVX512_BF16 (use_avx512_bf16), encoding float32 into bfloat16 under nearest-even by
//    vcvtne2ps2bf16 (encode_bf16_loop; the argument is docs/kernels.md's).
//  - float16 under nearest-even by vcvtps2ph on zmm, as the AVX2 kernel does on ymm
//    (avx2.hpp: encode_block_f16c).
//
// The per-lane arithmetic is avx2.hpp's, the same source compiled for 512 bits (lanes.hpp over
// kernels/vec.hpp's w512): direct_code for the codes, half_twin_bits for the decoders. What AVX-512
// does differently is all in this file:
//  - 64 elements per step (four zmm of 16 lanes). The codes are narrowed to bytes (words) first,
//    by two levels of saturating packs and one vpermd that undoes their in-lane interleave, and
//    the limit is one unsigned byte (word) minimum, as on AVX2.
//  - The sign and NaN come from mask registers (vpmovd2m, vpcmpgtd into k, joined by kunpck): the
//    sign is a masked add of the sign bit (the magnitude codes are below it; FNUZ drops it where
//    the magnitude is 0 or the 0x80 overflow code, by a masked vptestmb), NaN a masked move of the
//    NaN code, made only when the block's largest |x| is a NaN (one compare of three maxima),
//    which the byte layouts under a limit below 0xFF ask only when a code is above the limit (a
//    NaN's code saturates the packs). The codes of NaN lanes are computed like any other
//    and then replaced: no fallback path.
//  - The shared lane arithmetic (lanes.hpp) takes the masked forms of kernels/vec.hpp where they
//    save an instruction: the kept lsb of nearest-even is a vptestmd and a masked add (two
//    shifts and an add on AVX2), E8M0's float-subnormal correction a masked subtract.
//  - Tails are masked loads (zeros past the end, which encode to code 0 in every format) and an
//    exact copy of the output bytes; the decoders' tails are masked loads and stores.
// Path 1's subnormal codes use vcvtps2dq, which rounds as MXCSR says: the encoders run under the
// same ieee_scope_traceless as AVX2's, so no MXCSR state (FTZ, DAZ, RC) changes a result.
#ifndef LOWBIT_KERNELS_CONVERT_AVX512_HPP
#define LOWBIT_KERNELS_CONVERT_AVX512_HPP

#include "avx2.hpp"

#if LOWBIT_HAS_AVX512_KERNELS

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../formats/types.hpp"
#include "../vec.hpp"
#include "scalar.hpp"

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace avx512 {
namespace detail {

using avx2::detail::code_form;
using avx2::detail::direct_path;
using avx2::detail::encode_setup;
using avx2::detail::half_twin;
using avx2::detail::layout;
using avx2::detail::layout_bytes;
using avx2::detail::normal_range;

using V = w512;
#define LOWBIT_VEC_INLINE LOWBIT_AVX512_INLINE
#include "lanes.hpp"
#undef LOWBIT_VEC_INLINE

// ------------------------------------------------------------------------------------------------
// Encoding: 64 float32 -> 64 codes in layout L.

struct encode_vectors {
  __m512i d0, d1, d2;                            // direct_code's constants (make_direct_setup)
  __m512i abs_mask, inf;                         // 0x7FFFFFFF, Inf's bits
  __m512i special_top;                           // |x| above it: a special lane (encode_setup)
  __m512i t_top;                                 // path 2: the largest t it takes (fast_t_top)
  __m512i limit_bytes, sign_bytes;               // byte layouts
  __m512i limit_words, sign_words;               // float16, bfloat16
  __m512i magnitude_bytes;                       // 0x7F (FNUZ: no sign on 0 and 0x80)
  __m512i max_bytes, max_words;                  // cap_negative: the negative finite lanes' limit
  // The special lanes' complete codes, for a positive and a negative input: NaN, and +-Inf where
  // the limit mode is not constant (inf_lanes).
  __m512i nan_bytes, nan_neg_bytes, inf_bytes, inf_neg_bytes;
  __m512i nan_words, nan_neg_words, inf_words, inf_neg_words;
  bool nan_above_limit;                          // byte layouts: limit < 0xFF (encode_block)
  bool inf_lanes;
  bool cap_negative;                             // limit_mode::inf_or_positive (toward +Inf, not saturating)
};

LOWBIT_AVX512_INLINE encode_vectors vectors_of(const encode_setup& s) {
  encode_vectors v;
  v.d0 = _mm512_set1_epi32(static_cast<int>(s.direct[0]));
  v.d1 = _mm512_set1_epi32(static_cast<int>(s.direct[1]));
  v.d2 = _mm512_set1_epi32(static_cast<int>(s.direct[2]));
  v.abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  v.inf = _mm512_set1_epi32(0x7F800000);
  v.special_top = _mm512_set1_epi32(static_cast<int>(s.special_top));
  v.t_top = _mm512_set1_epi32(static_cast<int>(s.t_top));
  v.limit_bytes = _mm512_set1_epi8(static_cast<char>(s.limit < 0xFF ? s.limit : 0xFF));
  v.sign_bytes = _mm512_set1_epi8(static_cast<char>(s.sign_byte));
  v.limit_words = _mm512_set1_epi16(static_cast<short>(s.limit));
  v.sign_words = _mm512_set1_epi16(static_cast<short>(0x8000));
  v.magnitude_bytes = _mm512_set1_epi8(0x7F);
  v.max_bytes = _mm512_set1_epi8(static_cast<char>(s.max_bits));
  v.max_words = _mm512_set1_epi16(static_cast<short>(s.max_bits));
  v.nan_bytes = _mm512_set1_epi8(static_cast<char>(s.nan_pos));
  v.nan_neg_bytes = _mm512_set1_epi8(static_cast<char>(s.nan_neg));
  v.inf_bytes = _mm512_set1_epi8(static_cast<char>(s.inf_pos));
  v.inf_neg_bytes = _mm512_set1_epi8(static_cast<char>(s.inf_neg));
  v.nan_words = _mm512_set1_epi16(static_cast<short>(s.nan_pos));
  v.nan_neg_words = _mm512_set1_epi16(static_cast<short>(s.nan_neg));
  v.inf_words = _mm512_set1_epi16(static_cast<short>(s.inf_pos));
  v.inf_neg_words = _mm512_set1_epi16(static_cast<short>(s.inf_neg));
  v.nan_above_limit = s.limit < 0xFF;
  v.inf_lanes = s.mode != avx2::detail::limit_mode::constant;
  v.cap_negative = s.mode == avx2::detail::limit_mode::inf_or_positive;
  return v;
}

// 16 float32 bit patterns x -> their magnitude codes (unlimited); the negative lanes as a mask,
// |x| in *a.
template <class F, rounding RM>
LOWBIT_AVX512_INLINE __m512i codes16(__m512i x, const encode_vectors& v, __mmask16* neg, __m512i* a) {
  *a = _mm512_and_si512(x, v.abs_mask);
  *neg = _mm512_movepi32_mask(x);
  return direct_code<F, RM>(*a, v.d0, v.d1, v.d2);
}

// The lanes of 64 inputs (|x| = a0..a3) whose bits compare as Cmp (_MM_CMPINT_NLE: above, or
// _MM_CMPINT_EQ) with b's, as one mask in element order.
template <int Cmp>
LOWBIT_AVX512_INLINE __mmask64 lanes_where(__m512i a0, __m512i a1, __m512i a2, __m512i a3, __m512i b) {
  const __mmask32 lo = _mm512_kunpackw(_mm512_cmp_epi32_mask(a1, b, Cmp), _mm512_cmp_epi32_mask(a0, b, Cmp));
  const __mmask32 hi = _mm512_kunpackw(_mm512_cmp_epi32_mask(a3, b, Cmp), _mm512_cmp_epi32_mask(a2, b, Cmp));
  return _mm512_kunpackd(hi, lo);
}

// Whether one of 64 inputs (|x| = a0..a3) is special (NaN; +-Inf too under inf_lanes): one compare
// of the largest decides whether the lanes are needed (three maxima and a compare instead of four
// compares and three mask joins).
LOWBIT_AVX512_INLINE bool any_special(__m512i a0, __m512i a1, __m512i a2, __m512i a3, const encode_vectors& v) {
  return _mm512_cmpgt_epi32_mask(_mm512_max_epi32(_mm512_max_epi32(a0, a1), _mm512_max_epi32(a2, a3)), v.special_top) !=
         0;
}

// Lanes m of 64 codes (`codes`: bytes in element order, or, for the 16-bit formats, the 32 words
// of one half, Half 0: elements 0-31, 1: 32-63) set to pos, or to neg_code where the input is
// negative (neg).
template <int Half>
LOWBIT_AVX512_INLINE __m512i set_by_sign(__m512i codes, __mmask64 m, __mmask64 neg, __m512i pos, __m512i neg_code) {
  if constexpr (Half < 0) {
    codes = _mm512_mask_mov_epi8(codes, m & ~neg, pos);
    return _mm512_mask_mov_epi8(codes, m & neg, neg_code);
  } else {
    const __mmask32 h = static_cast<__mmask32>(m >> (32 * Half)), n = static_cast<__mmask32>(neg >> (32 * Half));
    codes = _mm512_mask_mov_epi16(codes, h & ~n, pos);
    return _mm512_mask_mov_epi16(codes, h & n, neg_code);
  }
}

// The special lanes of 64 inputs (|x| = a0..a3; neg: the negative ones) given their codes, in
// codes as set_by_sign takes them: NaN, and +-Inf under inf_lanes.
template <int Half = -1>
LOWBIT_AVX512_INLINE __m512i with_specials(__m512i codes, __m512i a0, __m512i a1, __m512i a2, __m512i a3,
                                           __mmask64 neg, const encode_vectors& v) {
  const __mmask64 nan = lanes_where<_MM_CMPINT_NLE>(a0, a1, a2, a3, v.inf);
  codes = Half < 0 ? set_by_sign<Half>(codes, nan, neg, v.nan_bytes, v.nan_neg_bytes)
                   : set_by_sign<Half>(codes, nan, neg, v.nan_words, v.nan_neg_words);
  if (v.inf_lanes) {
    const __mmask64 inf = lanes_where<_MM_CMPINT_EQ>(a0, a1, a2, a3, v.inf);
    codes = Half < 0 ? set_by_sign<Half>(codes, inf, neg, v.inf_bytes, v.inf_neg_bytes)
                     : set_by_sign<Half>(codes, inf, neg, v.inf_words, v.inf_neg_words);
  }
  return codes;
}

// 64 16-bit codes (w0: elements 0-31, w1: 32-63), each with its input's sign in its top bit ->
// dst, the special lanes (|x| = a0..a3) holding the policy's codes for them.
LOWBIT_AVX512_INLINE void store_words(std::uint8_t* dst, __m512i w0, __m512i w1, __m512i a0, __m512i a1, __m512i a2,
                                      __m512i a3, const encode_vectors& v) {
  if (any_special(a0, a1, a2, a3, v)) {
    const __mmask64 neg = _mm512_kunpackd(_mm512_movepi16_mask(w1), _mm512_movepi16_mask(w0));
    w0 = with_specials<0>(w0, a0, a1, a2, a3, neg, v);
    w1 = with_specials<1>(w1, a0, a1, a2, a3, neg, v);
  }
  _mm512_storeu_si512(dst, w0);
  _mm512_storeu_si512(dst + 64, w1);
}

// 64 codes below 256 in c0..c3 (element 16k + j in lane j of c[k]) -> one byte each, in element
// order: two levels of saturating packs leave, per 128-bit lane l, 4 codes of each c[k], and
// dword 4l + k -> dword 4k + l puts them in order. (Larger codes saturate to 0xFF.)
LOWBIT_AVX512_INLINE __m512i bytes_of_codes(__m512i c0, __m512i c1, __m512i c2, __m512i c3) {
  const __m512i b = _mm512_packus_epi16(_mm512_packus_epi32(c0, c1), _mm512_packus_epi32(c2, c3));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
}

// 64 codes in element order, one per byte -> layout L at dst.
template <layout L>
LOWBIT_AVX512_INLINE void store_bytes(std::uint8_t* dst, __m512i b) {
  if constexpr (L == layout::bytes) {
    _mm512_storeu_si512(dst, b);
  } else if constexpr (L == layout::nibbles) {
    const __m512i w = _mm512_maddubs_epi16(b, _mm512_set1_epi16(0x1001));  // c[2i] + 16 c[2i+1]
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi16_epi8(w));
  } else {
    static_assert(L == layout::sextets, "byte layouts");
    const __m512i w = _mm512_maddubs_epi16(b, _mm512_set1_epi16(0x4001));  // c0 + 64 c1: 12 bits
    const __m512i d = _mm512_madd_epi16(w, _mm512_set1_epi32(0x10000001));  // + 4096 (c2 + 64 c3)
    const __m512i squeezed = _mm512_shuffle_epi8(
        d, _mm512_set4_epi32(-1, 0x0E0D0C0A, 0x09080605, 0x04020100));      // 12 bytes per lane
    const __m512i joined =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 15, 15, 15), squeezed);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_castsi512_si256(joined));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32), _mm512_extracti32x4_epi32(joined, 2));
  }
}

// 64 magnitude codes c0..c3 (element 16k + j in lane j of c[k]; Form: the code itself, or the
// code - 2^M), the negative lanes s0..s3 and |x| = a0..a3 -> layout L at dst: limited, signed, and
// the special lanes given their codes (MayNaN: some input may be NaN, or +-Inf under inf_lanes;
// a0..a3 are read only then). MayCap: the policy may be cap_negative's.
template <class F, layout L, code_form Form, bool MayNaN, bool MayCap = false>
LOWBIT_AVX512_INLINE void finish_block(__m512i c0, __m512i c1, __m512i c2, __m512i c3, __mmask16 s0, __mmask16 s1,
                                       __mmask16 s2, __mmask16 s3, __m512i a0, __m512i a1, __m512i a2, __m512i a3,
                                       std::uint8_t* dst, const encode_vectors& v) {
  constexpr int base = 1 << F::mantissa_bits;
  if constexpr (L == layout::words) {
    static_assert(F::is_signed && F::specials == special_values::ieee, "16-bit formats: float16 and bfloat16");
    // packus: per 128-bit lane, 4 words of each; the qword permutation puts them in order.
    const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    __m512i w0 = _mm512_permutexvar_epi64(order, _mm512_packus_epi32(c0, c1));  // saturates at 0xFFFF
    __m512i w1 = _mm512_permutexvar_epi64(order, _mm512_packus_epi32(c2, c3));
    if constexpr (Form == code_form::minus_base) {
      w0 = _mm512_adds_epu16(w0, _mm512_set1_epi16(static_cast<short>(base)));
      w1 = _mm512_adds_epu16(w1, _mm512_set1_epi16(static_cast<short>(base)));
    }
    w0 = _mm512_min_epu16(w0, v.limit_words);  // below 0x8000: the sign bit adds
    w1 = _mm512_min_epu16(w1, v.limit_words);
    if (MayCap && v.cap_negative) {
      w0 = _mm512_mask_min_epu16(w0, _mm512_kunpackw(s1, s0), w0, v.max_words);
      w1 = _mm512_mask_min_epu16(w1, _mm512_kunpackw(s3, s2), w1, v.max_words);
    }
    w0 = _mm512_mask_add_epi16(w0, _mm512_kunpackw(s1, s0), w0, v.sign_words);
    w1 = _mm512_mask_add_epi16(w1, _mm512_kunpackw(s3, s2), w1, v.sign_words);
    if constexpr (MayNaN) {
      store_words(dst, w0, w1, a0, a1, a2, a3, v);
    } else {
      _mm512_storeu_si512(dst, w0);
      _mm512_storeu_si512(dst + 64, w1);
    }
  } else {
    __m512i b = bytes_of_codes(c0, c1, c2, c3);
    if constexpr (Form == code_form::minus_base) b = _mm512_adds_epu8(b, _mm512_set1_epi8(static_cast<char>(base)));
    // The code the formulas give a NaN or an Inf is at least 0x100 in every byte format (its
    // exponent field would be 128 + bias; the codes stay below 0x8000, so the packs saturate it
    // to 0xFF): under a limit below 0xFF, one byte compare says whether a lane might be special,
    // and only then (NaN, Inf or overflow in the block) do the three maxima and the compare run.
    const bool maybe_special = MayNaN && (!v.nan_above_limit || _mm512_cmpgt_epu8_mask(b, v.limit_bytes) != 0);
    b = _mm512_min_epu8(b, v.limit_bytes);
    __mmask64 neg = 0;
    if constexpr (F::is_signed) {
      neg = _mm512_kunpackd(_mm512_kunpackw(s3, s2), _mm512_kunpackw(s1, s0));
      if (MayCap && v.cap_negative) b = _mm512_mask_min_epu8(b, neg, b, v.max_bytes);
      // FNUZ: no sign on 0 (no negative zero) nor on 0x80 (the NaN code non-saturating overflow
      // gives, which absorbs the sign). Every other magnitude code is below the sign bit.
      __mmask64 signed_lanes = neg;
      if constexpr (!F::has_negative_zero) signed_lanes = _mm512_mask_test_epi8_mask(neg, b, v.magnitude_bytes);
      b = _mm512_mask_add_epi8(b, signed_lanes, b, v.sign_bytes);
    }
    if (maybe_special && any_special(a0, a1, a2, a3, v)) b = with_specials(b, a0, a1, a2, a3, neg, v);
    store_bytes<L>(dst, b);
  }
}

// 64 float32 bit patterns x[0..3] (element 16k + j in lane j of x[k]) -> layout L at dst.
template <class F, rounding RM, layout L>
LOWBIT_AVX512_INLINE void encode_block(__m512i x0, __m512i x1, __m512i x2, __m512i x3, std::uint8_t* dst,
                                       const encode_vectors& v) {
  if constexpr (avx2::detail::f16c_path<F, RM>) {  // float16 by vcvtps2ph (avx2.hpp: encode_block_f16c)
    // (The maskz form with all lanes: GCC's unmasked macro, used without optimisation, passes
    // -1 as the mask, which -Wsign-conversion rejects.)
    constexpr int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __mmask16 all = 0xFFFF;
    const __m512i sign = _mm512_set1_epi16(static_cast<short>(0x8000));
    __m512i w0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_maskz_cvtps_ph(all, _mm512_castsi512_ps(x0), rn)),
                                    _mm512_maskz_cvtps_ph(all, _mm512_castsi512_ps(x1), rn), 1);
    __m512i w1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_maskz_cvtps_ph(all, _mm512_castsi512_ps(x2), rn)),
                                    _mm512_maskz_cvtps_ph(all, _mm512_castsi512_ps(x3), rn), 1);
    w0 = _mm512_or_si512(_mm512_min_epu16(_mm512_andnot_si512(sign, w0), v.limit_words), _mm512_and_si512(w0, sign));
    w1 = _mm512_or_si512(_mm512_min_epu16(_mm512_andnot_si512(sign, w1), v.limit_words), _mm512_and_si512(w1, sign));
    const __m512i a0 = _mm512_and_si512(x0, v.abs_mask), a1 = _mm512_and_si512(x1, v.abs_mask);
    const __m512i a2 = _mm512_and_si512(x2, v.abs_mask), a3 = _mm512_and_si512(x3, v.abs_mask);
    store_words(dst, w0, w1, a0, a1, a2, a3, v);
    return;
  }
  __mmask16 s0, s1, s2, s3;
  __m512i a0, a1, a2, a3;
  const __m512i c0 = codes16<F, RM>(x0, v, &s0, &a0);
  const __m512i c1 = codes16<F, RM>(x1, v, &s1, &a1);
  const __m512i c2 = codes16<F, RM>(x2, v, &s2, &a2);
  const __m512i c3 = codes16<F, RM>(x3, v, &s3, &a3);
  finish_block<F, L, code_form::exact, true>(c0, c1, c2, c3, s0, s1, s2, s3, a0, a1, a2, a3, dst, v);
}

// 16 source elements -> their float32 bit patterns: float32 as it is, bfloat16 by a shift, float16
// by vcvtph2ps (exact; its half-precision input ignores MXCSR.DAZ). With a mask: the lanes it
// selects, zeros elsewhere (nothing else is read).
LOWBIT_AVX512_INLINE __m512i load16(const float* p) { return _mm512_loadu_si512(p); }
LOWBIT_AVX512_INLINE __m512i load16(const bfloat16* p) {
  return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
}
LOWBIT_AVX512_INLINE __m512i load16(const float16* p) {
  return _mm512_castps_si512(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
}
LOWBIT_AVX512_INLINE __m512i load16(const float* p, __mmask16 k) { return _mm512_maskz_loadu_epi32(k, p); }
LOWBIT_AVX512_INLINE __m512i load16(const bfloat16* p, __mmask16 k) {
  return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p)), 16);
}
LOWBIT_AVX512_INLINE __m512i load16(const float16* p, __mmask16 k) {
  return _mm512_castps_si512(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)));
}

// ------------------------------------------------------------------------------------------------
// The other rounding modes, under every policy. Path 3: lanes.hpp's magnitude_lanes
// (the per-lane encoding of any input, every mode) over 64 lanes, finished as path 1's codes are.
// Path 2 first where avx2.hpp offers it (fast_path: FP8, float16 and bfloat16, the modes but
// toward +Inf), with path 3 out of line for the steps it does not take (a NaN, a zero, a value
// below the normal range).

// The random bits of a call without any (all zero, as the reference reads a null pointer).
inline constexpr std::uint32_t no_random_bits[64] = {};

// 16 random words at r under stochastic rounding; zeros (nothing read) under the other modes.
template <rounding RM>
LOWBIT_AVX512_INLINE __m512i random16(const std::uint32_t* r) {
  if constexpr (RM == rounding::stochastic)
    return _mm512_loadu_si512(r);
  else
    return _mm512_setzero_si512();
}

// Path 3's magnitude codes of 16 float32 bit patterns x; the negative lanes as a mask, |x| in *a.
template <class F, rounding RM>
LOWBIT_AVX512_INLINE __m512i general_codes16(__m512i x, const std::uint32_t* r, const encode_vectors& v,
                                             __mmask16* neg, __m512i* a) {
  *a = _mm512_and_si512(x, v.abs_mask);
  *neg = _mm512_movepi32_mask(x);
  return magnitude_lanes<F, RM>(x, *a, random16<RM>(r));
}

// 64 elements at src (their random bits at r) -> layout L at dst, by path 3.
template <class F, rounding RM, layout L, class From>
LOWBIT_AVX512_INLINE void encode_general_at(const From* src, const std::uint32_t* r, std::uint8_t* dst,
                                            const encode_vectors& v) {
  __mmask16 s0, s1, s2, s3;
  __m512i a0, a1, a2, a3;
  const __m512i c0 = general_codes16<F, RM>(load16(src), r, v, &s0, &a0);
  const __m512i c1 = general_codes16<F, RM>(load16(src + 16), r + 16, v, &s1, &a1);
  const __m512i c2 = general_codes16<F, RM>(load16(src + 32), r + 32, v, &s2, &a2);
  const __m512i c3 = general_codes16<F, RM>(load16(src + 48), r + 48, v, &s3, &a3);
  finish_block<F, L, code_form::exact, true, RM == rounding::toward_pos_inf>(c0, c1, c2, c3, s0, s1, s2, s3, a0, a1,
                                                                            a2, a3, dst, v);
}

template <class F, rounding RM, layout L, class From>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void encode_general_outlined(const From* src, const std::uint32_t* r,
                                                                  std::uint8_t* dst, const encode_vectors& v) noexcept {
  encode_general_at<F, RM, L>(src, r, dst, v);
}

// Path 2's codes minus 2^M of 16 float32 bit patterns x; the negative lanes as a mask, and
// t = normal_t folded into *top (unsigned maximum).
template <class F, rounding RM>
LOWBIT_AVX512_INLINE __m512i fast_codes16(__m512i x, const std::uint32_t* r, const encode_vectors& v, __mmask16* neg,
                                          __m512i* top) {
  using nr = normal_range<F, RM>;
  *neg = _mm512_movepi32_mask(x);
  const __m512i t = normal_t<F, RM>(_mm512_and_si512(x, v.abs_mask), _mm512_set1_epi32(static_cast<int>(nr::bias - nr::mn)));
  *top = _mm512_max_epu32(*top, t);
  return fast_code<F, RM>(t, random16<RM>(r));
}

// 64 float32 bit patterns x0..x3 (their random bits at r) -> layout L at dst by path 2, or false,
// writing nothing, where the block needs path 3.
template <class F, rounding RM, layout L>
LOWBIT_AVX512_INLINE bool encode_fast_block(__m512i x0, __m512i x1, __m512i x2, __m512i x3, const std::uint32_t* r,
                                            std::uint8_t* dst, const encode_vectors& v) {
  __mmask16 s0, s1, s2, s3;
  __m512i top = _mm512_setzero_si512();
  const __m512i c0 = fast_codes16<F, RM>(x0, r, v, &s0, &top);
  const __m512i c1 = fast_codes16<F, RM>(x1, r + 16, v, &s1, &top);
  const __m512i c2 = fast_codes16<F, RM>(x2, r + 32, v, &s2, &top);
  const __m512i c3 = fast_codes16<F, RM>(x3, r + 48, v, &s3, &top);
  // A NaN has t above t(Inf), a value below the normal range a negative t (avx2.hpp: fast_path);
  // t_top is below t(Inf) where Inf lanes need their own codes (fast_t_top).
  if (_mm512_cmpgt_epu32_mask(top, v.t_top) != 0) return false;
  finish_block<F, L, code_form::minus_base, false>(c0, c1, c2, c3, s0, s1, s2, s3, top, top, top, top, dst, v);
  return true;
}

// 64 elements at src (their random bits at r) -> layout L at dst, by path 2 where it applies.
template <class F, rounding RM, layout L, class From>
LOWBIT_AVX512_INLINE void encode_fast_at(const From* src, const std::uint32_t* r, std::uint8_t* dst,
                                         const encode_vectors& v) {
  if (!encode_fast_block<F, RM, L>(load16(src), load16(src + 16), load16(src + 32), load16(src + 48), r, dst, v))
    encode_general_outlined<F, RM, L>(src, r, dst, v);
}

// The modes path 1 takes (vcvtps2dq reads MXCSR: the loop runs under ieee_scope_traceless).
template <rounding RM>
constexpr bool path1_mode = RM == rounding::nearest_even || RM == rounding::toward_zero;

// 64 elements at src -> layout L at dst; r: their random bits (read under stochastic rounding).
template <class F, rounding RM, layout L, class From>
LOWBIT_AVX512_INLINE void encode_at(const From* src, const std::uint32_t* r, std::uint8_t* dst,
                                    const encode_vectors& v) {
  if constexpr (path1_mode<RM>)
    encode_block<F, RM, L>(load16(src), load16(src + 16), load16(src + 32), load16(src + 48), dst, v);
  else if constexpr (avx2::detail::fast_path<F, RM>::available)
    encode_fast_at<F, RM, L>(src, r, dst, v);
  else
    encode_general_at<F, RM, L>(src, r, dst, v);
}

// The cache lines of 64 source elements from p on.
template <class From>
LOWBIT_AVX512_INLINE void prefetch64(const From* p) {
  const char* b = reinterpret_cast<const char*>(p);
  for (std::size_t line = 0; line < sizeof(From); ++line) _mm_prefetch(b + 64 * line, _MM_HINT_T0);
}

// Element i's random bits: rb + i, or zeros where the call has none (rb null).
inline const std::uint32_t* random_at(const std::uint32_t* rb, std::size_t i) noexcept {
  return rb != nullptr ? rb + i : no_random_bits;
}

// Elements [0, n) of src into dst; Stream: whole chunks through an L1 staging buffer and
// non-temporal stores (dst and every chunk 32-byte aligned: avx2's encode_stream_start). rb: the
// random bits of stochastic rounding (null: all zero), unread under the other modes.
template <class F, rounding RM, layout L, bool Stream, class From>
LOWBIT_AVX512_INLINE void encode_range(const From* src, std::uint8_t* dst, std::size_t n, const encode_vectors& v,
                                       const std::uint32_t* rb = nullptr) {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(From);
  constexpr std::size_t chunk = avx2::detail::stream_chunk;
  static_assert(chunk % 64 == 0, "whole steps");
  std::size_t i = 0;
  if constexpr (Stream) {
    alignas(64) std::uint8_t stage[layout_bytes<L>(chunk)];
    static_assert(sizeof stage % 32 == 0, "whole lines");
    for (; i + chunk + ahead <= n; i += chunk) {
      for (std::size_t b = 0; b < chunk; b += 64) {
        prefetch64(src + i + b + ahead);
        if (RM == rounding::stochastic && rb != nullptr) prefetch64(rb + i + b + ahead);
        encode_at<F, RM, L>(src + i + b, random_at(rb, i + b), stage + layout_bytes<L>(b), v);
      }
      std::uint8_t* out = dst + layout_bytes<L>(i);
      for (std::size_t k = 0; k < sizeof stage; k += 32)
        _mm256_stream_si256(reinterpret_cast<__m256i*>(out + k),
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(stage + k)));
    }
  }
  for (; i + 64 + ahead <= n; i += 64) {
    prefetch64(src + i + ahead);
    if (RM == rounding::stochastic && rb != nullptr) prefetch64(rb + i + ahead);
    encode_at<F, RM, L>(src + i, random_at(rb, i), dst + layout_bytes<L>(i), v);
  }
  for (; i + 64 <= n; i += 64) encode_at<F, RM, L>(src + i, random_at(rb, i), dst + layout_bytes<L>(i), v);
  if (i < n) {
    const std::size_t m = n - i;
    alignas(64) std::uint8_t d[128];
    if constexpr (!path1_mode<RM>) {
      // Zero-padded copies (path 3 out of line reads the inputs again from memory).
      From in[64] = {};
      std::uint32_t r[64] = {};
      std::memcpy(static_cast<void*>(in), src + i, m * sizeof(From));
      if (RM == rounding::stochastic) std::memcpy(r, random_at(rb, i), m * sizeof(std::uint32_t));
      encode_at<F, RM, L>(in, r, d, v);
      std::memcpy(dst + layout_bytes<L>(i), d, layout_bytes<L>(m));
      return;
    }
    // Masked loads: zeros past the end, which encode to code 0 (a shared last byte stays clean).
    __m512i x[4];
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t have = m > 16 * k ? m - 16 * k : 0;
      const __mmask16 mask = have >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << have) - 1u);
      x[k] = load16(src + i + 16 * k, mask);
    }
    encode_block<F, RM, L>(x[0], x[1], x[2], x[3], d, v);
    std::memcpy(dst + layout_bytes<L>(i), d, layout_bytes<L>(m));
  }
}

// float32 -> bfloat16 under nearest-even with AVX512_BF16 (use_avx512_bf16): vcvtne2ps2bf16
// rounds 32 floats to bfloat16 in one instruction, nearest-even on the bits as the reference
// does, without consulting MXCSR. Where it differs from the reference:
//  - float subnormals, which it reads as zero. A lane whose exponent field is 0 (zero included)
//    is moved up one binade first (+0x00800000 on the bits): the same mantissa bits then round
//    at the same place, and its code comes out 0x80 above the reference's (0x0080 for zero),
//    which a masked subtract takes back. No carry reaches the sign: the magnitude stays below
//    2^-125.
//  - NaN (the reference gives the policy's NaN code) and magnitudes from 0x7F7F8000 up, which
//    round to Inf (the reference gives the policy's limit). Their codes are at least 0x7F80 in
//    magnitude, which one compare of the step's largest code finds; such a step of 64 is
//    encoded again by encode_block.
// Calls large enough to stream their output (encode_stream_start) keep encode_range: the memory
// bounds both forms there.
// The codes of 32 float32 patterns, in order (x0: elements 0-15, x1: 16-31); low0 / low1: the
// lanes whose exponent field is 0.
LOWBIT_AVX512_BF16_INLINE __m512i bf16_codes32(__m512i x0, __m512i x1, __mmask16 low0, __mmask16 low1) {
  const __m512i one_binade = _mm512_set1_epi32(0x00800000);
  const __m512 y0 = _mm512_castsi512_ps(_mm512_mask_add_epi32(x0, low0, x0, one_binade));
  const __m512 y1 = _mm512_castsi512_ps(_mm512_mask_add_epi32(x1, low1, x1, one_binade));
  const __m512i c = (__m512i)_mm512_cvtne2ps_pbh(y1, y0);
  return _mm512_mask_sub_epi16(c, _mm512_kunpackw(low1, low0), c, _mm512_set1_epi16(0x80));
}

template <class F>
LOWBIT_TARGET_AVX512_BF16 void encode_bf16_loop(const float* src, std::uint8_t* dst, std::size_t n,
                                                const encode_vectors& v) noexcept {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(float);
  const __m512i magnitude = _mm512_set1_epi16(0x7FFF);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (i + 64 + ahead <= n) {
      const char* p = reinterpret_cast<const char*>(src + i + ahead);
      for (int line = 0; line < 4; ++line) _mm_prefetch(p + 64 * line, _MM_HINT_T0);
    }
    const __m512i x0 = _mm512_loadu_si512(src + i), x1 = _mm512_loadu_si512(src + i + 16);
    const __m512i x2 = _mm512_loadu_si512(src + i + 32), x3 = _mm512_loadu_si512(src + i + 48);
    const __m512i exponent = _mm512_set1_epi32(0x7F800000);
    const __mmask16 low0 = _mm512_testn_epi32_mask(x0, exponent), low1 = _mm512_testn_epi32_mask(x1, exponent);
    const __mmask16 low2 = _mm512_testn_epi32_mask(x2, exponent), low3 = _mm512_testn_epi32_mask(x3, exponent);
    __m512i c0, c1;
    if ((low0 | low1 | low2 | low3) == 0) {  // no zero or subnormal: the instruction alone
      c0 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(x1), _mm512_castsi512_ps(x0));
      c1 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(x3), _mm512_castsi512_ps(x2));
    } else {
      c0 = bf16_codes32(x0, x1, low0, low1);
      c1 = bf16_codes32(x2, x3, low2, low3);
    }
    const __m512i top = _mm512_max_epu16(_mm512_and_si512(c0, magnitude), _mm512_and_si512(c1, magnitude));
    std::uint8_t* out = dst + 2 * i;
    if (_mm512_cmpgt_epu16_mask(top, _mm512_set1_epi16(0x7F7F)) == 0) {
      _mm512_storeu_si512(out, c0);
      _mm512_storeu_si512(out + 64, c1);
    } else {
      encode_block<F, rounding::nearest_even, layout::words>(x0, x1, x2, x3, out, v);
    }
  }
  if (i < n) encode_range<F, rounding::nearest_even, layout::words, false>(src + i, dst + 2 * i, n - i, v);
}

template <class F, rounding RM, layout L, class From>
LOWBIT_TARGET_AVX512 void encode_loop(const From* src, std::uint8_t* dst, std::size_t n, const encode_setup& setup,
                                      const std::uint32_t* rb) noexcept {
  const encode_vectors v = vectors_of(setup);
  const std::size_t m = avx2::detail::encode_stream_start<L, From>(dst, n);
  if constexpr (std::is_same<F, formats::bfloat16>::value && RM == rounding::nearest_even &&
                std::is_same<From, float>::value) {
    if (m == n && ::lowbit::detail::use_avx512_bf16()) return encode_bf16_loop<F>(src, dst, n, v);
  }
  // Streaming for the common modes only (as on AVX2): the others are rare enough not to double.
  if constexpr (path1_mode<RM> || RM == rounding::stochastic) {
    if (m < n) {
      encode_range<F, RM, L, false>(src, dst, m, v, rb);
      encode_range<F, RM, L, true>(src + m, dst + layout_bytes<L>(m), n - m, v, rb != nullptr ? rb + m : nullptr);
      _mm_sfence();
      return;
    }
  }
  encode_range<F, RM, L, false>(src, dst, n, v, rb);
}

template <class F, rounding RM, layout L, class From>
void encode_mode(const From* src, std::uint8_t* dst, std::size_t n, const policy& p, const std::uint32_t* rb) noexcept {
  encode_setup s = avx2::detail::make_setup<F>(p);
  if constexpr (path1_mode<RM>) {
    avx2::detail::make_direct_setup<F, RM>(s);
    // vcvtps2dq rounds as MXCSR.RC says; both conversions raise the precision flag.
    const ieee_scope_traceless env;
    encode_loop<F, RM, L>(src, dst, n, s, nullptr);
  } else {
    if constexpr (avx2::detail::fast_path<F, RM>::available) s.t_top = avx2::detail::fast_t_top<F, RM>(s);
    encode_loop<F, RM, L>(src, dst, n, s, rb);  // integer arithmetic only: no MXCSR to set
  }
}

template <class F, layout L, class From>
void encode_dispatch(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                     const std::uint32_t* random_bits) noexcept {
  switch (p.rm) {
    case rounding::nearest_even: return encode_mode<F, rounding::nearest_even, L>(src, dst, n, p, nullptr);
    case rounding::toward_zero: return encode_mode<F, rounding::toward_zero, L>(src, dst, n, p, nullptr);
    case rounding::toward_pos_inf: return encode_mode<F, rounding::toward_pos_inf, L>(src, dst, n, p, nullptr);
    case rounding::stochastic: return encode_mode<F, rounding::stochastic, L>(src, dst, n, p, random_bits);
    case rounding::nearest_away: return encode_mode<F, rounding::nearest_away, L>(src, dst, n, p, nullptr);
    case rounding::nearest_toward_zero:
      return encode_mode<F, rounding::nearest_toward_zero, L>(src, dst, n, p, nullptr);
  }
}

// ------------------------------------------------------------------------------------------------
// Decoding: 64 codes of a float16-twin format -> 64 float32.

// 64 codes (one per byte, element order, masked to the code) -> their float16-twin values
// (v * 2^(15 - bias) for the E4M3 formats: f32_from_codes multiplies half_twin's scale back in,
// the scaled FP8 kernels fold it into their own), 16 per output vector in element order, NaN
// canonical. (Written out, no arrays: GCC -O2 keeps a loop's array in memory.)
template <class F>
LOWBIT_AVX512_INLINE void twin_values(__m512i codes, __m512* o0, __m512* o1, __m512* o2, __m512* o3) {
  if constexpr (F::specials == special_values::ieee) {
    // E5M2: NaN magnitudes 0x7D..0x7F become 0x7E, which widens to the canonical NaN.
    const __m512i mag = _mm512_and_si512(codes, _mm512_set1_epi8(0x7F));
    const __mmask64 is_nan = _mm512_cmpgt_epi8_mask(mag, _mm512_set1_epi8(0x7C));
    codes = _mm512_xor_si512(codes, _mm512_maskz_mov_epi8(is_nan, _mm512_xor_si512(mag, _mm512_set1_epi8(0x7E))));
  }
  // Qwords 0 2 1 3 | 4 6 5 7: unpack{lo,hi}_epi8 then give elements 0-15, 32-47 (lo) and 16-31,
  // 48-63 (hi), as code << 8.
  const __m512i q = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 1, 3, 4, 6, 5, 7), codes);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i lo = half_twin_bits<F>(_mm512_unpacklo_epi8(zero, q));
  const __m512i hi = half_twin_bits<F>(_mm512_unpackhi_epi8(zero, q));
  *o0 = _mm512_cvtph_ps(_mm512_castsi512_si256(lo));  // exact
  *o1 = _mm512_cvtph_ps(_mm512_castsi512_si256(hi));
  *o2 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(lo, 1));
  *o3 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(hi, 1));
}

// The same codes -> float32 bit patterns: the twin values times 2^(15 - bias) (exact and normal).
template <class F>
LOWBIT_AVX512_INLINE __m512i f32_of_twin(__m512 v) {
  constexpr float scale = half_twin<F>::scale;
  return _mm512_castps_si512(scale == 1.0f ? v : _mm512_mul_ps(v, _mm512_set1_ps(scale)));
}

template <class F>
LOWBIT_AVX512_INLINE void f32_from_codes(__m512i codes, __m512i* o0, __m512i* o1, __m512i* o2, __m512i* o3) {
  __m512 v0, v1, v2, v3;
  twin_values<F>(codes, &v0, &v1, &v2, &v3);
  *o0 = f32_of_twin<F>(v0);
  *o1 = f32_of_twin<F>(v1);
  *o2 = f32_of_twin<F>(v2);
  *o3 = f32_of_twin<F>(v3);
}

template <bool Stream>
LOWBIT_AVX512_INLINE void store16(float* dst, __m512i v) {
  if constexpr (Stream)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), v);
  else
    _mm512_storeu_si512(dst, v);
}

// 24 bytes of packed FP6 -> their 32 codes << 10 in 16-bit lanes, in order (the 512-bit form of
// the AVX2 converters' load_sextet_words): 128-bit lane k takes bytes 6k..6k+7, the 8 codes it
// holds (vpermw), each word the two bytes its code starts in (vpshufb), and a multiply moves the
// code to the top: codes 4g + {0, 1, 2, 3} of a 3-byte group start at bits 0, 6, 4, 2 of their
// first byte: 3 instructions per 32 codes. Reads the bytes `in` selects (24 when whole; the codes
// of a tail beyond the loaded bytes come out as 0).
LOWBIT_AVX512_INLINE __m512i sextet_words32(const std::uint8_t* src, __mmask64 in = 0xFFFFFF) {
  const __m512i x = _mm512_permutexvar_epi16(
      _mm512_setr_epi32(0x00010000, 0x00030002, 0, 0, 0x00040003, 0x00060005, 0, 0,  //
                        0x00070006, 0x00090008, 0, 0, 0x000A0009, 0x000C000B, 0, 0),
      _mm512_maskz_loadu_epi8(in, src));
  const __m512i pairs = _mm512_shuffle_epi8(
      x, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 5, 6)));
  return _mm512_mullo_epi16(pairs, _mm512_broadcast_i32x4(_mm_setr_epi16(1024, 16, 64, 256, 1024, 16, 64, 256)));
}

// Where a decoder's streaming stores start: the first 64-byte aligned element of dst when it is
// a multiple of `granule` (the elements a step may start at) and the output is beyond the
// caches; n when not.
inline std::size_t stream_start(const float* dst, std::size_t n, std::size_t granule) noexcept {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(dst);
  if (n < avx2::stream_threshold_bytes / sizeof(float) || a % sizeof(float) != 0) return n;
  const std::size_t k = ((64 - a % 64) % 64) / sizeof(float);
  return k % granule == 0 ? k : n;
}

// The first m < 16 * Count of Count result vectors (a tail), masked.
template <std::size_t Count>
LOWBIT_AVX512_INLINE void store_tail(float* dst, std::size_t m, const __m512i (&out)[Count]) {
  for (std::size_t k = 0; k < Count; ++k) {
    const std::size_t have = m > 16 * k ? m - 16 * k : 0;
    const __mmask16 mk = have >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << have) - 1u);
    _mm512_mask_storeu_epi32(dst + 16 * k, mk, out[k]);
  }
}

// The codes of elements i .. i + m - 1 (m <= 64), a byte each (masked to the format's bits),
// zero beyond m.
template <class F>
LOWBIT_AVX512_INLINE __m512i code_bytes(const std::uint8_t* src, std::size_t i, std::size_t m) {
  const __mmask64 in = m >= 64 ? ~__mmask64{0} : (__mmask64{1} << m) - 1u;
  return _mm512_and_si512(_mm512_maskz_loadu_epi8(in, src + i), _mm512_set1_epi8(static_cast<char>(F::code_mask)));
}

template <class F, bool Stream>
LOWBIT_AVX512_INLINE void decode_range(const std::uint8_t* src, float* dst, std::size_t i, std::size_t n) {
  __m512i o0, o1, o2, o3;
  for (; i + 64 <= n; i += 64) {
    f32_from_codes<F>(code_bytes<F>(src, i, 64), &o0, &o1, &o2, &o3);
    store16<Stream>(dst + i, o0);
    store16<Stream>(dst + i + 16, o1);
    store16<Stream>(dst + i + 32, o2);
    store16<Stream>(dst + i + 48, o3);
  }
  if (i < n) {
    f32_from_codes<F>(code_bytes<F>(src, i, n - i), &o0, &o1, &o2, &o3);
    const __m512i out[4] = {o0, o1, o2, o3};
    store_tail(dst + i, n - i, out);
  }
}

// float16 and bfloat16 into float32, 64 values a step: vcvtph2ps (exact; it ignores MXCSR.DAZ)
// or the bfloat16 shift, each NaN made the quiet NaN with its sign and no payload, as the scalar
// decode does. One unsigned maximum of the 64 magnitudes says whether a step holds a NaN; only
// then are its NaN words replaced by the canonical one (the exponent field all ones and the top
// mantissa bit: float16 0x7E00, bfloat16 0x7FC0), whose widening is 0x7FC00000.
template <class F>
struct half_bits {
  static constexpr bool binary16 = std::is_same<F, formats::binary16>::value;
  static constexpr unsigned inf_bits = ((1u << F::exponent_bits) - 1u) << F::mantissa_bits;
  static constexpr short inf = static_cast<short>(inf_bits);
  static constexpr short quiet = static_cast<short>(inf_bits | (1u << (F::mantissa_bits - 1)));
};

template <class F>
LOWBIT_AVX512_INLINE __m512i canonical_nan_words(__m512i w, __mmask32 nan) {
  const __m512i quiet = _mm512_or_si512(_mm512_and_si512(w, _mm512_set1_epi16(static_cast<short>(0x8000))),
                                        _mm512_set1_epi16(half_bits<F>::quiet));
  return _mm512_mask_mov_epi16(w, nan, quiet);
}

// 16 patterns (a ymm of words) -> their float32 patterns.
template <class F>
LOWBIT_AVX512_INLINE __m512i f32_from_half_words(__m256i w) {
  if constexpr (half_bits<F>::binary16)
    return _mm512_castps_si512(_mm512_cvtph_ps(w));
  else
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(w), 16);
}

// Elements [i, n) of a decoding of 16-bit patterns.
template <class F, bool Stream>
LOWBIT_AVX512_INLINE void decode_halves_range(const std::uint16_t* src, float* dst, std::size_t i, std::size_t n) {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(std::uint16_t);
  const __m512i magnitude = _mm512_set1_epi16(0x7FFF);
  const __m512i inf = _mm512_set1_epi16(half_bits<F>::inf);
  for (; i < n; i += 64) {
    const std::size_t m = n - i;
    // From DRAM the lines ahead (without, 0.53x of the AVX2 kernel, which reads half as much a step).
    if (m >= ahead + 64) prefetch64(src + i + ahead);
    const __mmask32 in0 = m >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((std::uint64_t{1} << m) - 1u);
    const __mmask32 in1 = m >= 64 ? ~__mmask32{0} : m <= 32 ? __mmask32{0} : static_cast<__mmask32>((std::uint64_t{1} << (m - 32)) - 1u);
    __m512i w0 = _mm512_maskz_loadu_epi16(in0, src + i);
    __m512i w1 = _mm512_maskz_loadu_epi16(in1, src + i + 32);
    const __m512i a0 = _mm512_and_si512(w0, magnitude), a1 = _mm512_and_si512(w1, magnitude);
    if (_mm512_cmpgt_epu16_mask(_mm512_max_epu16(a0, a1), inf) != 0) {
      w0 = canonical_nan_words<F>(w0, _mm512_cmpgt_epu16_mask(a0, inf));
      w1 = canonical_nan_words<F>(w1, _mm512_cmpgt_epu16_mask(a1, inf));
    }
    const __m512i o0 = f32_from_half_words<F>(_mm512_castsi512_si256(w0));
    const __m512i o1 = f32_from_half_words<F>(_mm512_extracti64x4_epi64(w0, 1));
    const __m512i o2 = f32_from_half_words<F>(_mm512_castsi512_si256(w1));
    const __m512i o3 = f32_from_half_words<F>(_mm512_extracti64x4_epi64(w1, 1));
    if (m < 64) {
      const __m512i out[4] = {o0, o1, o2, o3};
      store_tail(dst + i, m, out);
      return;
    }
    store16<Stream>(dst + i, o0);
    store16<Stream>(dst + i + 16, o1);
    store16<Stream>(dst + i + 32, o2);
    store16<Stream>(dst + i + 48, o3);
  }
}

// The decoder of a float16-twin format (decode_range) or of float16 / bfloat16
// (decode_halves_range), streaming from the first 64-byte aligned output of a large call.
template <class F, bool Stream>
LOWBIT_AVX512_INLINE void decode_any_range(const void* src, float* dst, std::size_t i, std::size_t n) {
  if constexpr (F::bits == 16)
    decode_halves_range<F, Stream>(static_cast<const std::uint16_t*>(src), dst, i, n);
  else
    decode_range<F, Stream>(static_cast<const std::uint8_t*>(src), dst, i, n);
}

template <class F>
LOWBIT_TARGET_AVX512 void decode_loop(const void* src, float* dst, std::size_t n) noexcept {
  const std::size_t k = stream_start(dst, n, 1);
  decode_any_range<F, false>(src, dst, 0, k);
  if (k < n) {
    decode_any_range<F, true>(src, dst, k, n);
    _mm_sfence();
  }
}

// Packed FP6: 32 codes (24 bytes) a step as code << 10 in words (sextet_words32), the high half of
// each code's float32 pattern from a 64-word table (vpermi2w reads 6 index bits; sign included;
// from the scalar decoder: every FP6 value is a bfloat16 value), widened by vpmovzxwd and a
// shift. About 10 instructions per 32 codes, where unpacking to bytes and the float16-twin route
// took about 28 per 64. (With VBMI, decode_sextets_vbmi below: 13 per 64.)
// The 256 codes of F (bits above the code ignored), as minifloats.
template <class F>
void every_code(minifloat<F> (&codes)[256]) noexcept {
  for (unsigned c = 0; c < 256; ++c) codes[c] = minifloat<F>::from_bits(static_cast<typename F::storage>(c & F::code_mask));
}

// The high 16 bits of each code's float32 value, from the scalar decoder (the low 16 are zero
// for the formats that use them: FP8 and FP6, whose values are all bfloat16 values).
template <class F>
struct high_halves {
  alignas(64) std::uint16_t w[256];
};
template <class F>
high_halves<F> float32_high_halves() noexcept {
  static_assert(F::bits <= 8 && F::mantissa_bits <= 7, "codes with bfloat16 values");
  high_halves<F> r;
  minifloat<F> codes[256];
  float values[256];
  every_code(codes);
  scalar::decode(codes, values, 256);
  for (unsigned c = 0; c < 256; ++c)
    r.w[c] = static_cast<std::uint16_t>(lowbit::detail::bit_cast<std::uint32_t>(values[c]) >> 16);
  return r;
}

template <class F>
const high_halves<F>& fp6_words_of() noexcept {
  static_assert(F::bits == 6, "FP6 codes: the first 64 entries");
  static const high_halves<F> t = float32_high_halves<F>();
  return t;
}

template <bool Stream>
LOWBIT_AVX512_INLINE void decode_sextets_range(const std::uint8_t* src, float* dst, std::size_t i, std::size_t n,
                                               __m512i t0, __m512i t1) {
  for (; i < n; i += 32) {  // i: a multiple of 4
    const std::size_t m = n - i;
    const __mmask64 in = m >= 32 ? __mmask64{0xFFFFFF} : (__mmask64{1} << packed_bytes(m, 6)) - 1u;
    const __m512i w = _mm512_permutex2var_epi16(t0, _mm512_srli_epi16(sextet_words32(src + i / 4 * 3, in), 10), t1);
    const __m512i f0 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(w)), 16);
    const __m512i f1 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(w, 1)), 16);
    if (m >= 32) {
      store16<Stream>(dst + i, f0);
      store16<Stream>(dst + i + 16, f1);
    } else {
      const __m512i out[2] = {f0, f1};
      store_tail(dst + i, m, out);
    }
  }
}

template <class F>
LOWBIT_TARGET_AVX512 void decode_sextets_loop(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  const high_halves<F>& t = fp6_words_of<F>();
  const __m512i t0 = _mm512_load_si512(t.w), t1 = _mm512_load_si512(t.w + 32);
  const std::size_t k = stream_start(dst, n, 4);  // a step starts a group of four codes
  decode_sextets_range<false>(src, dst, 0, k, t0, t1);
  if (k < n) {
    decode_sextets_range<true>(src, dst, k, n, t0, t1);
    _mm_sfence();
  }
}

// ------------------------------------------------------------------------------------------------
// Decoding with VBMI: the FP8 formats and FP6 (unpacked, and packed through vbmi_sextet_codes).
// Every value of theirs is a bfloat16 value (at most 3 mantissa bits, exponents inside float32's
// normal range), so a code's float32 pattern is two bytes followed by two zero bytes. Those two
// bytes come from byte tables built from the scalar decoder, 64 codes per vpermi2b (128 entries,
// 7 index bits): for 6-bit codes the table repeats every 64 entries (the bits above the code are
// ignored), for 8-bit codes it holds the 128 magnitudes and the sign is ORed in; where code 0x80
// alone is not the negated code 0 (FNUZ: it is the NaN) a masked move puts its pattern in, and
// where other codes differ too (tables of 16-bit results under some policies) a second pair of
// tables serves codes 128-255 (vbmi_index). A dword transpose
// (vpermd) first puts the codes where two unpack levels (bytes to words, words to dwords) leave
// them in element order. The twin route above spends two vcvtph2ps halves and a multiply per 16
// values; this one is 10 instructions per 64 codes, at 84-113 % of the AVX-512 int8 -> float32
// loop on Zen 4 (E4M3FN 16.6 G elem/s in cache against 11.5; docs/performance.md "Zen 4").

struct vbmi_tables {
  alignas(64) std::uint8_t lo[256];  // bits 16-23 of each code's float32 pattern
  alignas(64) std::uint8_t hi[256];  // bits 24-31
  bool signed_symmetric = true;      // 8-bit codes: code | 0x80 gives the code's pattern | sign
  bool symmetric_but_0x80 = false;   // ... for every code but 0x80 (FNUZ: the NaN)
};

template <class F>
struct vbmi_decodable : std::integral_constant<bool, F::is_signed && (F::bits == 8 || F::bits == 6) &&
                                                         F::mantissa_bits <= 7> {};

// The tables of 16-bit results, one per code.
inline void fill_vbmi_tables(const std::uint16_t* result, vbmi_tables& r) noexcept {
  for (unsigned c = 0; c < 256; ++c) {
    r.lo[c] = static_cast<std::uint8_t>(result[c]);
    r.hi[c] = static_cast<std::uint8_t>(result[c] >> 8);
  }
  const auto symmetric = [&r](unsigned c) { return r.lo[c | 0x80] == r.lo[c] && r.hi[c | 0x80] == (r.hi[c] | 0x80); };
  bool rest = true;
  for (unsigned c = 1; c < 128; ++c) rest = rest && symmetric(c);
  r.signed_symmetric = rest && symmetric(0);
  r.symmetric_but_0x80 = rest && !symmetric(0);
}

template <class F>
const vbmi_tables& vbmi_tables_of() noexcept {
  static const vbmi_tables t = [] {
    vbmi_tables r;
    fill_vbmi_tables(float32_high_halves<F>().w, r);
    return r;
  }();
  return t;
}

// How the byte of a code selects its pattern: a 7-bit table (6-bit codes), 128 magnitudes and
// the sign, the same with code 0x80's own pattern put in by a masked move (FNUZ, whose 0x80 is
// the NaN: three instructions where two more lookups and two blends took five), or two 128-entry
// halves.
enum class vbmi_index { seven_bits, magnitude_and_sign, magnitude_sign_and_0x80, two_halves };

// The tables in registers, and the low and high result bytes of 64 codes.
struct vbmi_registers {
  __m512i lo0, lo1, hi0, hi1, lo2, lo3, hi2, hi3;
};
LOWBIT_AVX512_VBMI_INLINE vbmi_registers vbmi_load(const vbmi_tables& t) {
  return {_mm512_load_si512(t.lo),       _mm512_load_si512(t.lo + 64),  _mm512_load_si512(t.hi),
          _mm512_load_si512(t.hi + 64),  _mm512_load_si512(t.lo + 128), _mm512_load_si512(t.lo + 192),
          _mm512_load_si512(t.hi + 128), _mm512_load_si512(t.hi + 192)};
}
template <vbmi_index Mode>
LOWBIT_AVX512_VBMI_INLINE void vbmi_lookup(__m512i c, const vbmi_registers& k, __m512i* lo, __m512i* hi) {
  __m512i l = _mm512_permutex2var_epi8(k.lo0, c, k.lo1);
  __m512i h = _mm512_permutex2var_epi8(k.hi0, c, k.hi1);
  if constexpr (Mode == vbmi_index::magnitude_and_sign || Mode == vbmi_index::magnitude_sign_and_0x80) {
    h = _mm512_ternarylogic_epi32(h, c, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);  // h | (c & 0x80)
  }
  if constexpr (Mode == vbmi_index::magnitude_sign_and_0x80) {
    const __mmask64 at = _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(static_cast<char>(0x80)));
    l = _mm512_mask_mov_epi8(l, at, _mm512_broadcastb_epi8(_mm512_castsi512_si128(k.lo2)));  // entry 0x80
    h = _mm512_mask_mov_epi8(h, at, _mm512_broadcastb_epi8(_mm512_castsi512_si128(k.hi2)));
  } else if constexpr (Mode == vbmi_index::two_halves) {
    const __mmask64 upper = _mm512_movepi8_mask(c);
    l = _mm512_mask_blend_epi8(upper, l, _mm512_permutex2var_epi8(k.lo2, c, k.lo3));
    h = _mm512_mask_blend_epi8(upper, h, _mm512_permutex2var_epi8(k.hi2, c, k.hi3));
  }
  *lo = l;
  *hi = h;
}

// The lookup's order: dword d holds the four codes of dword (d % 4) * 4 + d / 4 of the input, so
// that the two unpack levels below leave 16 results per vector in element order.
LOWBIT_AVX512_INLINE __m512i vbmi_transposed(__m512i codes) {
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), codes);
}

// The order for 16-bit results: qwords 0 4 1 5 2 6 3 7, which two byte unpacks (low and high
// result bytes to words) undo, giving elements 0-31 and 32-63 in order.
LOWBIT_AVX512_INLINE __m512i vbmi_halves_order(__m512i codes) {
  return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), codes);
}

// 64 codes in the lookup's order -> the float32 patterns of their values, 16 per vector in
// element order.
template <vbmi_index Mode>
LOWBIT_AVX512_VBMI_INLINE void vbmi_decode64(__m512i transposed, const vbmi_registers& k, __m512i* o0, __m512i* o1,
                                             __m512i* o2, __m512i* o3) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i l, h;
  vbmi_lookup<Mode>(transposed, k, &l, &h);
  const __m512i w0 = _mm512_unpacklo_epi8(l, h), w1 = _mm512_unpackhi_epi8(l, h);
  *o0 = _mm512_unpacklo_epi16(zero, w0);
  *o1 = _mm512_unpackhi_epi16(zero, w0);
  *o2 = _mm512_unpacklo_epi16(zero, w1);
  *o3 = _mm512_unpackhi_epi16(zero, w1);
}

// Where the codes of a decode step come from: codes(i, m) gives the codes of elements i .. i + m
// - 1 (m <= 64) in the lookup's order, reading no byte beyond them.
struct vbmi_byte_codes {  // a byte each
  const std::uint8_t* src;
  LOWBIT_AVX512_VBMI_INLINE __m512i operator()(std::size_t i, std::size_t m) const {
    const __mmask64 in = m >= 64 ? ~__mmask64{0} : (__mmask64{1} << m) - 1u;
    return vbmi_transposed(_mm512_maskz_loadu_epi8(in, src + i));
  }
  void prefetch(std::size_t i) const noexcept { _mm_prefetch(reinterpret_cast<const char*>(src + i), _MM_HINT_T0); }
};

// Packed FP6 (i a multiple of 4): the 48 bytes of 64 codes, vpermb giving each qword the two
// 3-byte groups whose codes an order puts in its two dwords, then vpmultishiftqb taking byte k of
// each qword from its bits 6k .. 6k + 7: code k of the eight, in the low 6 bits (the bits above
// are the next code's, which a 64-entry lookup ignores). Three instructions per 64 codes, where
// the word unpack (sextet_words32) takes three per 32 and a widening after. The orders: the
// lookup's (vbmi_transposed) for float32 results, vbmi_halves_order's for 16-bit results.
struct sextet_order {
  alignas(64) std::uint8_t index[64]{};
};
constexpr sextet_order make_sextet_order(bool transposed) {
  sextet_order r;
  constexpr unsigned qwords[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (unsigned d = 0; d < 16; ++d) {  // dword d takes the codes of 3-byte group `group`
    const unsigned group = transposed ? (d % 4) * 4 + d / 4 : 2 * qwords[d / 2] + d % 2;
    for (unsigned b = 0; b < 3; ++b) r.index[d / 2 * 8 + d % 2 * 3 + b] = static_cast<std::uint8_t>(3 * group + b);
  }
  return r;
}
// The codes of the bytes `in` selects (48 when whole) at src, in `order`.
LOWBIT_AVX512_VBMI_INLINE __m512i sextets_in_order(const std::uint8_t* src, __mmask64 in, const sextet_order& order) {
  const __m512i groups = _mm512_permutexvar_epi8(_mm512_load_si512(order.index), _mm512_maskz_loadu_epi8(in, src));
  return _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x2A241E18120C0600), groups);  // bytes 0, 6, ..., 42
}
struct vbmi_sextet_codes {
  const std::uint8_t* src;
  LOWBIT_AVX512_VBMI_INLINE __m512i operator()(std::size_t i, std::size_t m) const {
    static constexpr sextet_order order = make_sextet_order(true);
    const __mmask64 in = m >= 64 ? __mmask64{0xFFFFFFFFFFFF} : (__mmask64{1} << packed_bytes(m, 6)) - 1u;
    return sextets_in_order(src + i / 4 * 3, in, order);
  }
  void prefetch(std::size_t i) const noexcept {
    _mm_prefetch(reinterpret_cast<const char*>(src + i / 4 * 3), _MM_HINT_T0);
  }
};

template <vbmi_index Mode, bool Stream, class Codes>
LOWBIT_TARGET_AVX512_VBMI inline void decode_vbmi_range(Codes codes, float* dst, std::size_t i, std::size_t n,
                                                        const vbmi_tables& t) {
  const vbmi_registers k = vbmi_load(t);
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES;  // codes: the line of a step that far ahead
  for (; i < n; i += 64) {
    const std::size_t m = n - i;
    if (Stream && m >= ahead + 64) codes.prefetch(i + ahead);
    __m512i o0, o1, o2, o3;
    vbmi_decode64<Mode>(codes(i, m < 64 ? m : 64), k, &o0, &o1, &o2, &o3);
    if (m >= 64) {  // (named, not an array: GCC -O2 keeps a loop's array in memory)
      store16<Stream>(dst + i, o0);
      store16<Stream>(dst + i + 16, o1);
      store16<Stream>(dst + i + 32, o2);
      store16<Stream>(dst + i + 48, o3);
    } else {
      const __m512i out[4] = {o0, o1, o2, o3};
      store_tail(dst + i, m, out);
    }
  }
}

// granule: the elements a step may start at (stream_start).
template <vbmi_index Mode, class Codes>
LOWBIT_TARGET_AVX512_VBMI void decode_vbmi_loop(Codes codes, float* dst, std::size_t n, std::size_t granule,
                                                const vbmi_tables& t) noexcept {
  const std::size_t k = stream_start(dst, n, granule);
  decode_vbmi_range<Mode, false>(codes, dst, 0, k, t);
  if (k < n) {
    decode_vbmi_range<Mode, true>(codes, dst, k, n, t);
    _mm_sfence();
  }
}

// Runs loop(mode) with the lookup mode F's codes and the tables call for.
template <class F, class Loop>
void with_vbmi_mode(const vbmi_tables& t, Loop loop) noexcept {
  if constexpr (F::bits < 8)
    loop(std::integral_constant<vbmi_index, vbmi_index::seven_bits>{});
  else if (t.signed_symmetric)
    loop(std::integral_constant<vbmi_index, vbmi_index::magnitude_and_sign>{});
  else if (t.symmetric_but_0x80)
    loop(std::integral_constant<vbmi_index, vbmi_index::magnitude_sign_and_0x80>{});
  else
    loop(std::integral_constant<vbmi_index, vbmi_index::two_halves>{});
}

template <class F>
void decode_vbmi(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  const vbmi_tables& t = vbmi_tables_of<F>();
  with_vbmi_mode<F>(t, [&](auto mode) { decode_vbmi_loop<decltype(mode)::value>(vbmi_byte_codes{src}, dst, n, 1, t); });
}

template <class F>
void decode_sextets_vbmi(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  static_assert(F::bits == 6, "packed FP6");
  decode_vbmi_loop<vbmi_index::seven_bits>(vbmi_sextet_codes{src}, dst, n, 4, vbmi_tables_of<F>());
}

// Byte codes -> float16, bfloat16 or a byte format under any policy (the AVX2 path's "decoding
// into 16 bits" and its byte reader): the table is the scalar converter's result for each of the
// 256 codes under that policy, so it is the reference by construction; the default policy's
// table is built once, any other's when a thread's call names a policy other than its previous
// one (256 scalar conversions, about a microsecond: a call that would build tables takes the
// kernel from vbmi_build_min_elements on, the AVX2 kernels below). With its tables ready a call
// of any length takes it (on Zen 4, 64 codes into bfloat16: 6 ns against the AVX2 kernel's 8;
// into a byte format: 4 ns against the float32 stage's 34). 16-bit results: a vpermq puts qwords
// 0 4 1 5 2 6 3 7 in order for the byte unpacks, then two vpermi2b, two unpacks and two stores
// per 64 codes. Byte results: two vpermi2b (codes 0-127 and 128-255) and a blend on the code's
// top bit.
constexpr std::size_t vbmi_build_min_elements = 4096;

inline bool same_policy(const policy& p, const policy& d) noexcept {
  return p.ov == d.ov && p.rm == d.rm && p.nan_sign == d.nan_sign && p.nan_pattern == d.nan_pattern &&
         p.inf == d.inf && p.nan_to_finite == d.nan_to_finite && p.unsigned_input == d.unsigned_input &&
         p.unsigned_range == d.unsigned_range;
}
static_assert(sizeof(policy) == 8 * sizeof(rounding), "same_policy compares every field of policy");

// Whether every code of From is exactly a value of T (avx2.hpp's holds_exactly, which also asks
// for normal numbers to stay normal), so that no random bit can change a result.
template <class From, class T>
struct exact_codes : std::false_type {};
template <class F, class T>
struct exact_codes<minifloat<F>, T> : avx2::detail::holds_exactly<F, typename T::format> {};

// The results of the 256 codes under p (a byte result's high table is zero).
template <class F, class T>
void fill_result_tables(const policy& p, vbmi_tables& r) noexcept {
  minifloat<F> codes[256];
  T results[256];
  std::uint16_t bits[256];
  every_code(codes);
  scalar::encode(codes, results, 256, p, nullptr);
  for (unsigned c = 0; c < 256; ++c) bits[c] = results[c].bits();
  fill_vbmi_tables(bits, r);
}

// The tables of F -> T under p for a call of n elements: the default policy's, or those of the
// thread's last other policy (a model's tensors converted one call each under one preset build
// them once); null where the call is too small for the kernel (above). last.p stays the default
// policy until the first fill, and the default policy never reads last.t.
template <class F, class T>
const vbmi_tables* result_tables(const policy& p, std::size_t n) noexcept {
  static const vbmi_tables defaults = [] {
    vbmi_tables r;
    fill_result_tables<F, T>(policy{}, r);
    return r;
  }();
  struct last_tables {
    policy p;
    vbmi_tables t;
  };
  thread_local last_tables last{policy{}, vbmi_tables{}};
  policy q = p;
  if (exact_codes<minifloat<F>, T>::value) q.rm = rounding::nearest_even;  // nothing rounds: the mode cannot matter
  if (same_policy(q, policy{})) return &defaults;
  if (!same_policy(last.p, q)) {
    if (n < vbmi_build_min_elements) return nullptr;
    fill_result_tables<F, T>(q, last.t);
    last.p = q;
  }
  return &last.t;
}

// The 16-bit results of elements i .. i + m - 1 (m <= 64); Stream: m = 64 and dst + i 64-byte
// aligned, non-temporal stores.
template <vbmi_index Mode, bool Stream>
LOWBIT_AVX512_VBMI_INLINE void convert16_step(const std::uint8_t* src, std::uint16_t* dst, std::size_t i, std::size_t m,
                                              const vbmi_registers& k) {
  const __mmask64 in = m >= 64 ? ~__mmask64{0} : (__mmask64{1} << m) - 1u;
  __m512i l, h;
  vbmi_lookup<Mode>(vbmi_halves_order(_mm512_maskz_loadu_epi8(in, src + i)), k, &l, &h);
  const __m512i w0 = _mm512_unpacklo_epi8(l, h), w1 = _mm512_unpackhi_epi8(l, h);
  if constexpr (Stream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), w0);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 32), w1);
  } else if (m >= 64) {
    _mm512_storeu_si512(dst + i, w0);
    _mm512_storeu_si512(dst + i + 32, w1);
  } else {
    _mm512_mask_storeu_epi16(dst + i, m >= 32 ? ~__mmask32{0} : (__mmask32{1} << m) - 1u, w0);
    if (m > 32) _mm512_mask_storeu_epi16(dst + i + 32, (__mmask32{1} << (m - 32)) - 1u, w1);
  }
}

// Beyond the caches (source and output at least stream_threshold_bytes) the output streams from
// its first 64-byte line on, as the AVX2 kernel's does.
template <vbmi_index Mode>
LOWBIT_TARGET_AVX512_VBMI void convert16_vbmi_loop(const std::uint8_t* src, std::uint16_t* dst, std::size_t n,
                                                   const vbmi_tables& t) noexcept {
  const vbmi_registers k = vbmi_load(t);
  std::size_t i = 0;
  if (3 * n >= avx2::stream_threshold_bytes) {
    i = (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64 / 2;  // (dst is 2-byte aligned)
    convert16_step<Mode, false>(src, dst, 0, i, k);
    for (; i + 64 <= n; i += 64) convert16_step<Mode, true>(src, dst, i, 64, k);
    _mm_sfence();
  }
  for (; i < n; i += 64) convert16_step<Mode, false>(src, dst, i, n - i < 64 ? n - i : 64, k);
}

// Byte results in layout L (one per byte, or packed: the padding of a last partial step is
// cleared before the packing, so that no table entry leaks into a shared last byte).
struct byte_table {
  __m512i t0, t1, t2, t3;  // entries 0-63, 64-127, 128-191, 192-255
};
// The results of elements i .. i + m - 1 (m <= 64), in layout L; Stream: one code per byte, m =
// 64 and dst + i 64-byte aligned, a non-temporal store.
template <layout L, bool Stream = false>
LOWBIT_AVX512_VBMI_INLINE void convert8_step(const std::uint8_t* src, std::uint8_t* dst, std::size_t i, std::size_t m,
                                             const byte_table& k) {
  const __mmask64 in = m >= 64 ? ~__mmask64{0} : (__mmask64{1} << m) - 1u;
  const __m512i c = _mm512_maskz_loadu_epi8(in, src + i);
  const __m512i r = _mm512_maskz_mov_epi8(in, _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), _mm512_permutex2var_epi8(k.t0, c, k.t1),
                                                                     _mm512_permutex2var_epi8(k.t2, c, k.t3)));
  if constexpr (Stream) {
    static_assert(L == layout::bytes, "streams one code per byte");
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), r);
  } else if constexpr (L == layout::bytes) {
    _mm512_mask_storeu_epi8(dst + i, in, r);
  } else if (m >= 64) {
    store_bytes<L>(dst + layout_bytes<L>(i), r);
  } else {
    std::uint8_t stage[48];
    store_bytes<L>(stage, r);
    std::memcpy(dst + layout_bytes<L>(i), stage, layout_bytes<L>(m));
  }
}

// One code per byte beyond the caches (source and output at least stream_threshold_bytes)
// streams its output from the first 64-byte line of dst on, as convert16_vbmi_loop does: an
// ordinary store would first read the line it writes, 3 bytes of traffic per element instead of 2.
template <layout L>
LOWBIT_TARGET_AVX512_VBMI void convert8_vbmi_loop(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                                  const vbmi_tables& t) noexcept {
  const byte_table k{_mm512_load_si512(t.lo), _mm512_load_si512(t.lo + 64), _mm512_load_si512(t.lo + 128),
                     _mm512_load_si512(t.lo + 192)};
  std::size_t i = 0;
  if constexpr (L == layout::bytes) {
    if (2 * n >= avx2::stream_threshold_bytes) {
      i = (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64;
      convert8_step<L>(src, dst, 0, i, k);
      for (; i + 64 <= n; i += 64) convert8_step<L, true>(src, dst, i, 64, k);
      _mm_sfence();
    }
  }
  for (; i < n; i += 64) convert8_step<L>(src, dst, i, n - i < 64 ? n - i : 64, k);
}

template <class F, class T>
bool convert_vbmi(const minifloat<F>* src, T* dst, std::size_t n, const policy& p) noexcept {
  const vbmi_tables* t = result_tables<F, T>(p, n);
  if (t == nullptr) return false;
  const auto* s = reinterpret_cast<const std::uint8_t*>(src);
  if constexpr (sizeof(T) == 1) {
    convert8_vbmi_loop<layout::bytes>(s, reinterpret_cast<std::uint8_t*>(dst), n, *t);
  } else {
    auto* d = reinterpret_cast<std::uint16_t*>(dst);
    with_vbmi_mode<F>(*t, [&](auto mode) { convert16_vbmi_loop<decltype(mode)::value>(s, d, n, *t); });
  }
  return true;
}

// ------------------------------------------------------------------------------------------------
// Decoding: the formats of at most 16 codes (FP4: one vpermd of a 16-entry table of float32 bit
// patterns, from the scalar decoder) and E8M0 (code << 23, with code 0 (2^-127) and 0xFF (NaN)
// from the scalar decoder), one code per byte or (FP4) two per byte, low nibble first.

template <class F>
struct table_format : std::integral_constant<bool, F::bits <= 4> {};
template <class F>
struct exponent_format
    : std::integral_constant<bool, F::bits == 8 && F::mantissa_bits == 0 && !F::is_signed> {};

struct code_constants {
  __m512i table;      // table formats: the 16 decoded patterns
  __m512i zero, nan;  // E8M0: the patterns of codes 0 and 0xFF
};

// 16 codes, one per 32-bit lane (any bits above the code's are ignored) -> float32 patterns.
template <class F>
LOWBIT_AVX512_INLINE __m512i f32_of_lanes(__m512i d, const code_constants& k) {
  if constexpr (table_format<F>::value) {
    return _mm512_permutexvar_epi32(d, k.table);  // the low 4 bits index
  } else {
    d = _mm512_and_si512(d, _mm512_set1_epi32(0xFF));
    __m512i r = _mm512_slli_epi32(d, 23);
    r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(d, _mm512_setzero_si512()), k.zero);
    return _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(d, _mm512_set1_epi32(0xFF)), k.nan);
  }
}

// The 16 codes of elements i .. i+15 (Packed: nibbles, i even) as 32-bit lanes; m < 16: only m.
template <bool Packed>
LOWBIT_AVX512_INLINE __m512i code_lanes(const std::uint8_t* src, std::size_t i, std::size_t m = 16) {
  if constexpr (Packed) {
    const std::uint8_t* p = src + i / 2;
    const __m128i x = m >= 16 ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))
                              : _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << ((m + 1) / 2)) - 1u), p);
    const __m512i d = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(x, x));  // byte j/2 in lane j
    return _mm512_srlv_epi32(d, _mm512_set4_epi32(4, 0, 4, 0));       // odd lanes: the high nibble
  } else {
    const std::uint8_t* p = src + i;
    const __m128i x = m >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
                              : _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << m) - 1u), p);
    return _mm512_cvtepu8_epi32(x);
  }
}

template <class F, bool Packed, bool Stream>
LOWBIT_AVX512_INLINE void decode_table_range(const std::uint8_t* src, float* dst, std::size_t i, std::size_t n,
                                             const code_constants& k) {
  for (; i + 64 <= n; i += 64) {
    if constexpr (exponent_format<F>::value && !Packed) {
      // E8M0: 64 codes without 0 or 0xFF (one byte compare: code + 1 <= 1) are code << 23, a
      // widening load and a shift per 16; codes 0 and 0xFF (rare in scales) take the masked moves.
      const __m512i c = _mm512_loadu_si512(src + i);
      if (_mm512_cmple_epu8_mask(_mm512_add_epi8(c, _mm512_set1_epi8(1)), _mm512_set1_epi8(1)) == 0) {
        store16<Stream>(dst + i, _mm512_slli_epi32(code_lanes<false>(src, i), 23));
        store16<Stream>(dst + i + 16, _mm512_slli_epi32(code_lanes<false>(src, i + 16), 23));
        store16<Stream>(dst + i + 32, _mm512_slli_epi32(code_lanes<false>(src, i + 32), 23));
        store16<Stream>(dst + i + 48, _mm512_slli_epi32(code_lanes<false>(src, i + 48), 23));
        continue;
      }
    }
    store16<Stream>(dst + i, f32_of_lanes<F>(code_lanes<Packed>(src, i), k));
    store16<Stream>(dst + i + 16, f32_of_lanes<F>(code_lanes<Packed>(src, i + 16), k));
    store16<Stream>(dst + i + 32, f32_of_lanes<F>(code_lanes<Packed>(src, i + 32), k));
    store16<Stream>(dst + i + 48, f32_of_lanes<F>(code_lanes<Packed>(src, i + 48), k));
  }
  for (; i + 16 <= n; i += 16) store16<Stream>(dst + i, f32_of_lanes<F>(code_lanes<Packed>(src, i), k));
  if (i < n) {
    const std::size_t m = n - i;
    _mm512_mask_storeu_epi32(dst + i, static_cast<__mmask16>((1u << m) - 1u),
                             f32_of_lanes<F>(code_lanes<Packed>(src, i, m), k));
  }
}

template <class F, bool Packed>
LOWBIT_TARGET_AVX512 void decode_table_loop(const std::uint8_t* src, float* dst, std::size_t n,
                                            const float* values) noexcept {
  code_constants k;
  k.table = _mm512_loadu_si512(values);
  k.zero = _mm512_set1_epi32(static_cast<int>(lowbit::detail::bit_cast<std::uint32_t>(values[0])));
  k.nan = _mm512_set1_epi32(static_cast<int>(lowbit::detail::bit_cast<std::uint32_t>(values[1])));
  const std::size_t s = stream_start(dst, n, Packed ? 2 : 1);  // Packed: a step starts a byte
  decode_table_range<F, Packed, false>(src, dst, 0, s, k);
  if (s < n) {
    decode_table_range<F, Packed, true>(src, dst, s, n, k);
    _mm_sfence();
  }
}

template <class F, bool Packed>
void decode_table(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  // The constants from the scalar decoder: the same values by construction. Table formats: the
  // 16 codes (index & code_mask); E8M0: codes 0 and 0xFF in values[0] and values[1].
  float values[16] = {};
  minifloat<F> codes[16];
  for (unsigned c = 0; c < 16; ++c)
    codes[c] = minifloat<F>::from_bits(static_cast<typename F::storage>(
        table_format<F>::value ? (c & F::code_mask) : c == 0 ? 0u : 0xFFu));
  scalar::decode(codes, values, 16);
  decode_table_loop<F, Packed>(src, dst, n, values);
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Entry points. Callers check can_encode / covers (can_decode), and that the CPU runs AVX-512
// (lowbit::detail::use_avx512()); convert.hpp does, and sends everything else to the AVX2 kernels.

// float32, bfloat16, float16 -> T in the unpacked (and, for 4, 6 and 8 bits, packed) layouts.
template <class From, class T>
struct can_encode : std::false_type {};
template <class From, class F>
struct can_encode<From, minifloat<F>>
    : std::integral_constant<bool, (std::is_same<From, float>::value || std::is_same<From, bfloat16>::value ||
                                    std::is_same<From, float16>::value) &&
                                       detail::direct_path<F, rounding::nearest_even>::available &&
                                       detail::direct_path<F, rounding::toward_zero>::available> {};

// The policies the encoders take: every policy the AVX2 kernels take (avx2::supports_policy),
// under every rounding mode.
template <class F>
inline bool covers(const policy& p) noexcept {
  return avx2::supports_policy<F>(p);
}

template <class F>
struct can_decode : std::integral_constant<bool, detail::half_twin<F>::value || detail::table_format<F>::value ||
                                                     detail::exponent_format<F>::value || F::bits == 16> {};

// random_bits: one per element under rounding::stochastic (null: all zero), else unread.
template <class From, class T>
void encode(const From* src, T* dst, std::size_t n, const policy& p, const std::uint32_t* random_bits) noexcept {
  using F = typename T::format;
  static_assert(can_encode<From, T>::value, "no AVX-512 kernel for this pair");
  detail::encode_dispatch<F, avx2::detail::layout_of<F>()>(src, reinterpret_cast<std::uint8_t*>(dst), n, p,
                                                           random_bits);
}

template <class T, class From>
void encode_packed(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                   const std::uint32_t* random_bits) noexcept {
  using F = typename T::format;
  static_assert(can_encode<From, T>::value && F::bits <= 8, "no AVX-512 kernel for this pair");
  detail::encode_dispatch<F, avx2::detail::packed_layout_of<F>()>(src, dst, n, p, random_bits);
}

template <class F>
void decode(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
  static_assert(can_decode<F>::value, "no AVX-512 kernel for this format");
  if constexpr (detail::vbmi_decodable<F>::value) {
    if (::lowbit::detail::use_avx512_vbmi()) {
      detail::decode_vbmi<F>(reinterpret_cast<const std::uint8_t*>(src), dst, n);
      return;
    }
  }
  if constexpr (F::bits == 16 || detail::half_twin<F>::value)
    detail::decode_loop<F>(src, dst, n);
  else
    detail::decode_table<F, false>(reinterpret_cast<const std::uint8_t*>(src), dst, n);
}

// Byte codes (FP8, unpacked FP6 and FP4, E8M0) into float16, bfloat16 or a byte format (one code
// per byte) with VBMI, under every policy but stochastic rounding where a code may round (the
// callers check use of VBMI): one table of results, built with zero random bits. false: the call
// is too small for the kernel in the thread's state (detail::result_tables), nothing written.
template <class From, class T>
struct can_convert_vbmi : std::false_type {};
template <class F, class T>
struct can_convert_vbmi<minifloat<F>, T>
    : std::integral_constant<bool, (F::bits <= 8) && (avx2::is_half_type<T>::value || avx2::is_byte_minifloat<T>::value)> {};

template <class From, class T>
constexpr bool convert_vbmi_takes(const policy& p) noexcept {
  return p.rm != rounding::stochastic || detail::exact_codes<From, T>::value;
}

template <class F, class T>
bool convert_vbmi(const minifloat<F>* src, T* dst, std::size_t n, const policy& p) noexcept {
  static_assert(can_convert_vbmi<minifloat<F>, T>::value, "no VBMI kernel for this pair");
  return detail::convert_vbmi<F, T>(src, dst, n, p);
}

// The same into the packed layouts of the 4- and 6-bit formats.
template <class T, class F>
bool convert_vbmi_packed(const minifloat<F>* src, std::uint8_t* dst, std::size_t n, const policy& p) noexcept {
  static_assert(can_convert_vbmi<minifloat<F>, T>::value && T::format::bits < 8, "no VBMI kernel for this pair");
  const detail::vbmi_tables* t = detail::result_tables<F, T>(p, n);
  if (t == nullptr) return false;
  detail::convert8_vbmi_loop<avx2::detail::packed_layout_of<typename T::format>()>(
      reinterpret_cast<const std::uint8_t*>(src), dst, n, *t);
  return true;
}

// Packed FP4 (two codes per byte, low nibble first) and packed FP6 (four codes in three bytes).
template <class T>
struct can_decode_packed
    : std::integral_constant<bool, T::format::bits == 4 || T::format::bits == 6> {};

template <class T>
void decode_packed(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  using F = typename T::format;
  static_assert(can_decode_packed<T>::value, "no AVX-512 kernel for this layout");
  if constexpr (F::bits == 6) {
    if (::lowbit::detail::use_avx512_vbmi())
      detail::decode_sextets_vbmi<F>(src, dst, n);
    else
      detail::decode_sextets_loop<F>(src, dst, n);
  } else {
    detail::decode_table<F, true>(src, dst, n);
  }
}

}  // namespace avx512
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_KERNELS

#endif  // LOWBIT_KERNELS_CONVERT_AVX512_HPP
