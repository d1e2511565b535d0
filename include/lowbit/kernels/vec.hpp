// lowbit: the vector-width traits the SIMD kernels are written over: w256 (AVX2, __m256i) and w512
// (AVX-512 F/BW/DQ/VL, __m512i). Each is a struct of static force-inlined functions carrying its
// own target attribute: lane-wise integer arithmetic in 32- and 16-bit lanes, shifts by a constant,
// the float-to-integer conversions, and the few operations whose best form differs between the
// widths (a compare that selects lanes: a vector mask on AVX2, a mask register on AVX-512).
//
// A kernel body written over V is compiled once per width: a function's target attribute cannot
// depend on a template argument, and a function without AVX2 in its target cannot inline an
// intrinsic, so the shared bodies (kernels/convert/lanes.hpp, kernels/mx/lanes.hpp) are included once in each width's
// namespace with V and LOWBIT_VEC_INLINE defined there. The arithmetic is then the same source;
// what differs between the widths is in the two structs below, in one place.
#ifndef LOWBIT_KERNELS_VEC_HPP
#define LOWBIT_KERNELS_VEC_HPP

#include "../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include <cstdint>

#include "avx2_common.hpp"


LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {

// 256 bits: 8 lanes of 32 bits, 16 of 16.
struct w256 {
  using vi = __m256i;
  using vf = __m256;
  static constexpr int lanes32 = 8;

  static LOWBIT_AVX2_INLINE vi set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static LOWBIT_AVX2_INLINE vi set1_16(std::uint16_t x) { return _mm256_set1_epi16(static_cast<short>(x)); }
  static LOWBIT_AVX2_INLINE vi add(vi a, vi b) { return _mm256_add_epi32(a, b); }
  static LOWBIT_AVX2_INLINE vi sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
  static LOWBIT_AVX2_INLINE vi and_(vi a, vi b) { return _mm256_and_si256(a, b); }
  static LOWBIT_AVX2_INLINE vi or_(vi a, vi b) { return _mm256_or_si256(a, b); }
  static LOWBIT_AVX2_INLINE vi min(vi a, vi b) { return _mm256_min_epi32(a, b); }
  static LOWBIT_AVX2_INLINE vi max(vi a, vi b) { return _mm256_max_epi32(a, b); }
  static LOWBIT_AVX2_INLINE vi min_u(vi a, vi b) { return _mm256_min_epu32(a, b); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi srli(vi a) { return _mm256_srli_epi32(a, N); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi slli(vi a) { return _mm256_slli_epi32(a, N); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi srai(vi a) { return _mm256_srai_epi32(a, N); }
  // float32 bit patterns -> int32, rounded as MXCSR.RC says / truncated.
  static LOWBIT_AVX2_INLINE vi cvtps(vi a) { return _mm256_cvtps_epi32(_mm256_castsi256_ps(a)); }
  static LOWBIT_AVX2_INLINE vi cvttps(vi a) { return _mm256_cvttps_epi32(_mm256_castsi256_ps(a)); }
  static LOWBIT_AVX2_INLINE vi srlv(vi a, vi n) { return _mm256_srlv_epi32(a, n); }
  static LOWBIT_AVX2_INLINE vi sllv(vi a, vi n) { return _mm256_sllv_epi32(a, n); }
  // A set of lanes: all ones where set.
  using mask = __m256i;
  static LOWBIT_AVX2_INLINE mask negative(vi a) { return _mm256_srai_epi32(a, 31); }  // sign bit set
  static LOWBIT_AVX2_INLINE mask no_lanes() { return _mm256_setzero_si256(); }
  // x in the lanes where c == 0, y elsewhere.
  static LOWBIT_AVX2_INLINE vi select_eq0(vi c, vi x, vi y) {
    return _mm256_blendv_epi8(y, x, _mm256_cmpeq_epi32(c, _mm256_setzero_si256()));
  }
  // x in the lanes where a > b (signed), y elsewhere.
  static LOWBIT_AVX2_INLINE vi select_gt(vi a, vi b, vi x, vi y) { return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi32(a, b)); }
  // n + 1 in the lanes where z & bits != 0 and not in keep, n elsewhere.
  static LOWBIT_AVX2_INLINE vi add1_where_inexact(vi n, vi z, vi bits, mask keep) {
    const vi exact = _mm256_cmpeq_epi32(_mm256_and_si256(z, bits), _mm256_setzero_si256());
    return _mm256_add_epi32(n, _mm256_add_epi32(_mm256_or_si256(exact, keep), _mm256_set1_epi32(1)));  // -1 + 1: none
  }
  // n + 1 in the lanes where sum < r (unsigned: the addition that gave sum, r plus something,
  // carried out of 32 bits), n elsewhere.
  static LOWBIT_AVX2_INLINE vi add1_where_carry(vi n, vi sum, vi r) {
    const vi no_carry = _mm256_cmpeq_epi32(_mm256_max_epu32(sum, r), sum);
    return _mm256_add_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(1)), no_carry);  // -1 + 1: none
  }
  // t - constant in the lanes where a > b (signed), t elsewhere.
  static LOWBIT_AVX2_INLINE vi sub_where_gt(vi t, vi a, vi b, vi constant) {
    return _mm256_sub_epi32(t, _mm256_and_si256(_mm256_cmpgt_epi32(a, b), constant));
  }
  // t + bit N of a (two shifts isolate it: no mask constant to keep in a register).
  template <int N>
  static LOWBIT_AVX2_INLINE vi add_bit(vi t, vi a) {
    return _mm256_add_epi32(t, _mm256_srli_epi32(_mm256_slli_epi32(a, 31 - N), 31));
  }

  // 16-bit lanes.
  static LOWBIT_AVX2_INLINE vi sub16(vi a, vi b) { return _mm256_sub_epi16(a, b); }
  static LOWBIT_AVX2_INLINE vi max16(vi a, vi b) { return _mm256_max_epi16(a, b); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi srli16(vi a) { return _mm256_srli_epi16(a, N); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi slli16(vi a) { return _mm256_slli_epi16(a, N); }
  template <int N>
  static LOWBIT_AVX2_INLINE vi srai16(vi a) { return _mm256_srai_epi16(a, N); }
  // h ^ bits in the 16-bit lanes where probe == value, h elsewhere.
  static LOWBIT_AVX2_INLINE vi xor16_where_eq(vi h, vi probe, vi value, vi bits) {
    return _mm256_xor_si256(h, _mm256_and_si256(_mm256_cmpeq_epi16(probe, value), bits));
  }
};

#if LOWBIT_HAS_AVX512_KERNELS
// 512 bits: 16 lanes of 32 bits, 32 of 16. Comparisons go to mask registers.
struct w512 {
  using vi = __m512i;
  using vf = __m512;
  static constexpr int lanes32 = 16;

  static LOWBIT_AVX512_INLINE vi set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static LOWBIT_AVX512_INLINE vi set1_16(std::uint16_t x) { return _mm512_set1_epi16(static_cast<short>(x)); }
  static LOWBIT_AVX512_INLINE vi add(vi a, vi b) { return _mm512_add_epi32(a, b); }
  static LOWBIT_AVX512_INLINE vi sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
  static LOWBIT_AVX512_INLINE vi and_(vi a, vi b) { return _mm512_and_si512(a, b); }
  static LOWBIT_AVX512_INLINE vi or_(vi a, vi b) { return _mm512_or_si512(a, b); }
  static LOWBIT_AVX512_INLINE vi min(vi a, vi b) { return _mm512_min_epi32(a, b); }
  static LOWBIT_AVX512_INLINE vi max(vi a, vi b) { return _mm512_max_epi32(a, b); }
  static LOWBIT_AVX512_INLINE vi min_u(vi a, vi b) { return _mm512_min_epu32(a, b); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi srli(vi a) { return _mm512_srli_epi32(a, N); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi slli(vi a) { return _mm512_slli_epi32(a, N); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi srai(vi a) { return _mm512_srai_epi32(a, N); }
  static LOWBIT_AVX512_INLINE vi cvtps(vi a) { return _mm512_cvtps_epi32(_mm512_castsi512_ps(a)); }
  static LOWBIT_AVX512_INLINE vi cvttps(vi a) { return _mm512_cvttps_epi32(_mm512_castsi512_ps(a)); }
  static LOWBIT_AVX512_INLINE vi srlv(vi a, vi n) { return _mm512_srlv_epi32(a, n); }
  static LOWBIT_AVX512_INLINE vi sllv(vi a, vi n) { return _mm512_sllv_epi32(a, n); }
  using mask = __mmask16;
  static LOWBIT_AVX512_INLINE mask negative(vi a) { return _mm512_movepi32_mask(a); }
  static LOWBIT_AVX512_INLINE mask no_lanes() { return 0; }
  static LOWBIT_AVX512_INLINE vi select_eq0(vi c, vi x, vi y) { return _mm512_mask_mov_epi32(y, _mm512_testn_epi32_mask(c, c), x); }
  static LOWBIT_AVX512_INLINE vi select_gt(vi a, vi b, vi x, vi y) { return _mm512_mask_mov_epi32(y, _mm512_cmpgt_epi32_mask(a, b), x); }
  static LOWBIT_AVX512_INLINE vi add1_where_inexact(vi n, vi z, vi bits, mask keep) {
    const __mmask16 inexact = _mm512_test_epi32_mask(z, bits);
    return _mm512_mask_add_epi32(n, static_cast<__mmask16>(inexact & ~keep), n, set1(1));
  }
  static LOWBIT_AVX512_INLINE vi add1_where_carry(vi n, vi sum, vi r) {
    return _mm512_mask_add_epi32(n, _mm512_cmplt_epu32_mask(sum, r), n, set1(1));
  }
  // Masked arithmetic: one instruction fewer than the AVX2 forms (32 registers hold the constants).
  static LOWBIT_AVX512_INLINE vi sub_where_gt(vi t, vi a, vi b, vi constant) {
    return _mm512_mask_sub_epi32(t, _mm512_cmpgt_epi32_mask(a, b), t, constant);
  }
  template <int N>
  static LOWBIT_AVX512_INLINE vi add_bit(vi t, vi a) {
    return _mm512_mask_add_epi32(t, _mm512_test_epi32_mask(a, set1(1u << N)), t, set1(1));
  }

  static LOWBIT_AVX512_INLINE vi sub16(vi a, vi b) { return _mm512_sub_epi16(a, b); }
  static LOWBIT_AVX512_INLINE vi max16(vi a, vi b) { return _mm512_max_epi16(a, b); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi srli16(vi a) { return _mm512_srli_epi16(a, N); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi slli16(vi a) { return _mm512_slli_epi16(a, N); }
  template <int N>
  static LOWBIT_AVX512_INLINE vi srai16(vi a) { return _mm512_srai_epi16(a, N); }
  static LOWBIT_AVX512_INLINE vi xor16_where_eq(vi h, vi probe, vi value, vi bits) {
    return _mm512_xor_si512(h, _mm512_maskz_mov_epi16(_mm512_cmpeq_epi16_mask(probe, value), bits));
  }
};
#endif  // LOWBIT_HAS_AVX512_KERNELS

}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_VEC_HPP
