// lowbit: helpers shared by the AVX2 kernels: moving 32 codes between bytes, 32-bit lanes and the
// packed layouts of core/packing.hpp. Everything here carries LOWBIT_TARGET_AVX2 and is compiled
// only when LOWBIT_HAS_AVX2_KERNELS is 1 (see core/cpu.hpp); callers dispatch on
// lowbit::detail::use_avx2() before calling in. How a public call reaches a kernel (check the
// arguments, open the floating-point guard once, run AVX2 or scalar) is docs/api.md section 9;
// where each rule's scalar reference and SIMD twin live is docs/map.md.
#ifndef LOWBIT_KERNELS_AVX2_COMMON_HPP
#define LOWBIT_KERNELS_AVX2_COMMON_HPP

#include "../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

// Helpers are forced inline when optimising (the kernels depend on it); an unoptimised build
// (Debug, sanitizers) keeps them as calls, which keeps its code size and compile memory small.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__OPTIMIZE__)
#define LOWBIT_AVX2_INLINE LOWBIT_TARGET_AVX2 inline __attribute__((always_inline))
#define LOWBIT_NOINLINE __attribute__((noinline))
#elif defined(__GNUC__) || defined(__clang__)
#define LOWBIT_AVX2_INLINE LOWBIT_TARGET_AVX2 inline
#define LOWBIT_NOINLINE __attribute__((noinline))
#else
#define LOWBIT_AVX2_INLINE inline
#define LOWBIT_NOINLINE __declspec(noinline)
#endif

namespace lowbit {
namespace kernels {
namespace avx2 {

// Float outputs of at least this many bytes are written with non-temporal stores: far beyond the
// per-core caches, ordinary stores would only evict what the caller keeps there, and streaming
// raises the write bandwidth to DRAM (the decoders, the integer and ggml dequantizers;
// the MX and NVFP4 dequantizers use the same size).
inline constexpr std::size_t stream_threshold_bytes = std::size_t{16} << 20;

// Requests the lines of [p, p + bytes) into L1: the quantizers that read each batch twice (its
// largest magnitudes, then its elements) ask for a later batch first, where from DRAM their
// demand misses alone left too few lines in flight (the AVX-512 MX quantizer, the integer ones
// in groups of 64-512: docs/performance.md, "Zen 5"). Forced inline: GCC 12 dropped the call, and
// with it the prefetches, when it was reached through an always-inline AVX-512 helper.
LOWBIT_AVX2_INLINE void prefetch_lines(const void* p, std::size_t bytes) noexcept {
  const char* c = static_cast<const char*>(p);
  for (std::size_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T0);
}

// The same into L2 (the FP8 quantizers, which ask for lines a whole run ahead).
LOWBIT_AVX2_INLINE void prefetch_lines_l2(const void* p, std::size_t bytes) noexcept {
  const char* c = static_cast<const char*>(p);
  for (std::size_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T1);
}

// Lane-wise signed 32-bit maximum, for reduce8.
struct max_epi32_op {
  LOWBIT_AVX2_INLINE __m256i operator()(__m256i a, __m256i b) const { return _mm256_max_epi32(a, b); }
};
// Lane-wise unsigned 32-bit maximum, for reduce8.
struct max_epu32_op {
  LOWBIT_AVX2_INLINE __m256i operator()(__m256i a, __m256i b) const { return _mm256_max_epu32(a, b); }
};

// Lane k of the result = op folded over the lanes of v[k] (an 8x8 transpose folded into op, which
// must be commutative and associative on the values at hand).
template <class Op>
LOWBIT_AVX2_INLINE __m256i reduce8(const __m256i v[8], Op op) {
  const __m256i a = op(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
  const __m256i b = op(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
  const __m256i c = op(_mm256_unpacklo_epi32(v[4], v[5]), _mm256_unpackhi_epi32(v[4], v[5]));
  const __m256i d = op(_mm256_unpacklo_epi32(v[6], v[7]), _mm256_unpackhi_epi32(v[6], v[7]));
  const __m256i ab = op(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
  const __m256i cd = op(_mm256_unpacklo_epi64(c, d), _mm256_unpackhi_epi64(c, d));
  return op(_mm256_permute2x128_si256(ab, cd, 0x20), _mm256_permute2x128_si256(ab, cd, 0x31));
}
LOWBIT_AVX2_INLINE __m256i reduce8_max_epi32(const __m256i v[8]) { return reduce8(v, max_epi32_op{}); }

// A product the compiler may not fuse into the addition that follows (GCC contracts intrinsics
// too under -ffp-contract=fast): the vector twin of core/no_contract.hpp, for the kernels whose
// scalar reference rounds the product and the sum separately.
template <class V>
LOWBIT_AVX2_INLINE V no_fma(V product) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+x"(product));
#endif
  return product;
}

// float32 bit patterns -> bfloat16 codes in 32-bit lanes, as encode<bfloat16>(x) rounds with the
// default policy: nearest even, saturating (Inf too), NaN 0x7FFF. (The MX and scaled-FP8
// dequantizers' 16-bit outputs.)
LOWBIT_AVX2_INLINE __m256i bf16_lanes_of_f32(__m256i b) {
  const __m256i a = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(a, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
  r = _mm256_min_epu32(r, _mm256_set1_epi32(0x7F7F));
  r = _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x8000)));
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FFF), _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000)));
}

// 32 codes held one per 32-bit lane in c[0..3] (element k in lane k % 8 of c[k / 8]) -> 32 bytes
// in element order. Values must lie in 0..255.
LOWBIT_AVX2_INLINE __m256i pack_dwords_to_bytes(const __m256i c[4]) {
  const __m256i c01 = _mm256_packus_epi32(c[0], c[1]);  // per lane: c0 half, c1 half
  const __m256i c23 = _mm256_packus_epi32(c[2], c[3]);
  const __m256i b = _mm256_packus_epi16(c01, c23);  // dwords: c0lo c1lo c2lo c3lo | c0hi c1hi c2hi c3hi
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// 16 values in 32-bit lanes (a, b) -> 16 words in element order. Values must lie in 0..65535.
LOWBIT_AVX2_INLINE __m256i pack_dwords_to_words(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
}

// Float bits with the low 16 bits rounded to nearest even into the high half (finite values;
// the low half is garbage): the bfloat16 rounding of the integer and scaled FP8 kernels.
LOWBIT_AVX2_INLINE __m256i bf16_rounded(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), lsb);
}

// 32 low bytes and the 32 high bytes of 32 words, both in element order -> the words, elements
// 0-15 in w0 and 16-31 in w1.
LOWBIT_AVX2_INLINE void words_of_bytes(__m256i lo, __m256i hi, __m256i* w0, __m256i* w1) {
  const __m256i a = _mm256_unpacklo_epi8(lo, hi);  // elements 0-7 | 16-23
  const __m256i b = _mm256_unpackhi_epi8(lo, hi);  // elements 8-15 | 24-31
  *w0 = _mm256_permute2x128_si256(a, b, 0x20);
  *w1 = _mm256_permute2x128_si256(a, b, 0x31);
}

// 16 words in order (words 0-7 | 8-15) -> a vpshufb table of their low bytes and one of their high
// bytes, each in both 128-bit lanes (looked up by byte indices 0..15, then words_of_bytes).
LOWBIT_AVX2_INLINE void word_tables(__m256i words, __m256i* lo_bytes, __m256i* hi_bytes) {
  // Per lane: the 8 low bytes, then the 8 high bytes; then each table is both lanes' half, twice.
  const __m256i split = _mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                                                    0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  *lo_bytes = _mm256_permute4x64_epi64(split, 0x88);  // qwords 0 2 0 2
  *hi_bytes = _mm256_permute4x64_epi64(split, 0xDD);  // qwords 1 3 1 3
}

// Reorders 32 bytes so that zero-extending them with unpack{lo,hi}_epi8 and then
// unpack{lo,hi}_epi16 yields the elements in order (see widen_bytes). The dword permutation
// (0 2 4 6 | 1 3 5 7) undoes the in-lane interleaving of the two unpack levels.
LOWBIT_AVX2_INLINE __m256i prepare_widen(__m256i bytes) {
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

// 32 bytes in element order -> the 32 values zero-extended into four vectors of 32-bit lanes.
LOWBIT_AVX2_INLINE void widen_bytes(__m256i bytes, __m256i out[4]) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i p = prepare_widen(bytes);
  const __m256i w0 = _mm256_unpacklo_epi8(p, zero);
  const __m256i w1 = _mm256_unpackhi_epi8(p, zero);
  out[0] = _mm256_unpacklo_epi16(w0, zero);
  out[1] = _mm256_unpackhi_epi16(w0, zero);
  out[2] = _mm256_unpacklo_epi16(w1, zero);
  out[3] = _mm256_unpackhi_epi16(w1, zero);
}

// 32 4-bit codes (low nibble of each byte, element order) -> 16 bytes, element 2i in the low
// nibble of byte i (pack_nibbles).
LOWBIT_AVX2_INLINE void store_nibbles(std::uint8_t* dst, __m256i codes) {
  const __m256i w = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x1001));  // c[2i] + 16 c[2i+1]
  const __m256i b = _mm256_permute4x64_epi64(_mm256_packus_epi16(w, w), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(b));
}

// 16 bytes of packed nibbles -> 32 codes, one per byte, element order (unpack_nibbles).
LOWBIT_AVX2_INLINE __m256i load_nibbles(const std::uint8_t* src) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(x, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
  return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

// 32 6-bit codes (one per byte, element order) -> 24 bytes, four codes per three bytes as a
// little-endian bit stream (pack_sextets).
LOWBIT_AVX2_INLINE void store_sextets(std::uint8_t* dst, __m256i codes) {
  const __m256i w = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x4001));  // c0 + 64 c1: 12 bits
  const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi32(0x10000001));     // + 4096 (c2 + 64 c3)
  const __m256i squeezed = _mm256_shuffle_epi8(
      d, _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                          0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  const __m256i joined = _mm256_permutevar8x32_epi32(squeezed, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(joined));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + 16), _mm256_extracti128_si256(joined, 1));
}

// 24 bytes of packed sextets -> 32 codes, one per byte, element order (unpack_sextets).
// Reads exactly 24 bytes.
LOWBIT_AVX2_INLINE __m256i load_sextets(const std::uint8_t* src) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));       // bytes 0..15
  const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 16));  // bytes 16..23
  const __m256i x = _mm256_set_m128i(_mm_alignr_epi8(hi, lo, 12), lo);             // 0..11 | 12..23
  // Each dword gets one 3-byte group: four codes at bits 0, 6, 12, 18.
  const __m256i g = _mm256_shuffle_epi8(
      x, _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                          0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
  const __m256i c0 = _mm256_and_si256(g, _mm256_set1_epi32(0x3F));
  const __m256i c1 = _mm256_and_si256(_mm256_slli_epi32(g, 2), _mm256_set1_epi32(0x3F00));
  const __m256i c2 = _mm256_and_si256(_mm256_slli_epi32(g, 4), _mm256_set1_epi32(0x3F0000));
  const __m256i c3 = _mm256_and_si256(_mm256_slli_epi32(g, 6), _mm256_set1_epi32(0x3F000000));
  return _mm256_or_si256(_mm256_or_si256(c0, c1), _mm256_or_si256(c2, c3));
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_AVX2_COMMON_HPP
