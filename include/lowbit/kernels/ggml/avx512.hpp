// lowbit: AVX-512 kernels of the ggml Q4_0 / Q8_0 blocks (internal), taken on the avx512 path
// (core/cpu.hpp). The bytes are the AVX2 kernels' and so the scalar reference's;
// tests/test_kernels_integer.cpp (KernelsIntegerGgml) runs every SIMD path against it.
//
// What differs from avx2.hpp, in one place: the passes over the elements, a block of 32 as two
// zmm. Each block's largest |x| (Q8_0) or signed and unsigned maxima (Q4_0) fold from 16 lanes to
// 8 and go to avx2.hpp's batch code (8 blocks' scales, one block per lane, and its checks); a
// block's codes are two vectors of 16, narrowed by vpmovsdb (Q8_0) or paired into nibbles and
// narrowed by vpmovdb (Q4_0). A Q8_0 block whose id overflows takes avx2.hpp's literal path.
// Dequantizing, a Q4_0 block is two lookups in a 16-entry table of its values (vpermps reads the
// low 4 bits of each index, so the low nibbles need no mask), a Q8_0 block two widenings.
#ifndef LOWBIT_KERNELS_GGML_AVX512_HPP
#define LOWBIT_KERNELS_GGML_AVX512_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/cpu.hpp"
#include "../integer/avx512.hpp"
#include "avx2.hpp"

#if LOWBIT_HAS_AVX512_KERNELS

#include <immintrin.h>

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace avx512 {
namespace ggml_detail {

namespace a2 = avx2::ggml_detail;

// avx2.hpp's no_fma for zmm: the product is rounded before the addition that follows.
LOWBIT_AVX512_INLINE __m512 no_fma(__m512 product) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+v"(product));
#endif
  return product;
}

LOWBIT_AVX512_INLINE __m256i fold_max_epi32(__m512i v) {
  return _mm256_max_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}
LOWBIT_AVX512_INLINE __m256i fold_max_epu32(__m512i v) {
  return _mm256_max_epu32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// Lane k: the largest |x| of block k (bits), for up to 8 blocks of 32 (the others 0): avx2.hpp's
// block_absmax8.
LOWBIT_AVX512_INLINE __m256i block_absmax(const float* xb) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i a = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(xb)), magnitude);
  const __m512i b = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(xb + 16)), magnitude);
  return fold_max_epi32(_mm512_max_epi32(a, b));
}
LOWBIT_AVX512_INLINE __m256i block_absmax8(const float* x, std::size_t m) {
  if (m == 8) {  // written out: in a loop over k, v stayed in memory (Q8_0 quantize 1.09x so)
    const __m256i v[8] = {block_absmax(x),       block_absmax(x + 32),  block_absmax(x + 64),  block_absmax(x + 96),
                          block_absmax(x + 128), block_absmax(x + 160), block_absmax(x + 192), block_absmax(x + 224)};
    return avx2::reduce8_max_epi32(v);
  }
  __m256i v[8];
  for (std::size_t k = 0; k < 8; ++k) v[k] = k < m ? block_absmax(x + k * 32) : _mm256_setzero_si256();
  return avx2::reduce8_max_epi32(v);
}

// avx2.hpp's block_extremes8: the signed and unsigned maxima of each block's bit patterns.
LOWBIT_AVX512_INLINE void block_extremes(const float* xb, __m256i& s, __m256i& u) {
  const __m512i a = _mm512_castps_si512(_mm512_loadu_ps(xb));
  const __m512i b = _mm512_castps_si512(_mm512_loadu_ps(xb + 16));
  s = fold_max_epi32(_mm512_max_epi32(a, b));
  u = fold_max_epu32(_mm512_max_epu32(a, b));
}
LOWBIT_AVX512_INLINE void block_extremes8(const float* x, std::size_t m, __m256i* smax, __m256i* umax) {
  __m256i s[8];
  __m256i u[8];
  if (m == 8) {  // written out (block_absmax8)
    block_extremes(x, s[0], u[0]);
    block_extremes(x + 32, s[1], u[1]);
    block_extremes(x + 64, s[2], u[2]);
    block_extremes(x + 96, s[3], u[3]);
    block_extremes(x + 128, s[4], u[4]);
    block_extremes(x + 160, s[5], u[5]);
    block_extremes(x + 192, s[6], u[6]);
    block_extremes(x + 224, s[7], u[7]);
  } else {
    for (std::size_t k = 0; k < 8; ++k) {
      if (k < m) {
        block_extremes(x + k * 32, s[k], u[k]);
      } else {
        s[k] = u[k] = _mm256_setzero_si256();
      }
    }
  }
  *smax = avx2::reduce8_max_epi32(s);
  *umax = avx2::reduce8(u, avx2::max_epu32_op{});
}

// 16 Q4_0 codes: min(15, trunc(x * id + 8.5)), NaN and negatives 0 (min with 15 first keeps a NaN,
// which converts to INT_MIN).
LOWBIT_AVX512_INLINE __m512i q4_codes16(const float* x, __m512 id) {
  const __m512 t = _mm512_add_ps(no_fma(_mm512_mul_ps(_mm512_loadu_ps(x), id)), _mm512_set1_ps(8.5f));
  return _mm512_max_epi32(_mm512_cvttps_epi32(_mm512_min_ps(_mm512_set1_ps(15.0f), t)), _mm512_setzero_si512());
}

// ggml's order: element j in the low nibble of byte j, element j + 16 in the high one.
LOWBIT_AVX512_INLINE void q4_0_block(const float* xb, float id, std::uint8_t* qs) {
  const __m512 idv = _mm512_set1_ps(id);
  const __m512i nibbles = _mm512_or_si512(q4_codes16(xb, idv), _mm512_slli_epi32(q4_codes16(xb + 16, idv), 4));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(nibbles));
}

// 16 Q8_0 codes before the clamp: trunc(x * id + copysign(0.49999997, x * id)) (avx2.hpp's
// q8_codes8; the bias is one ternary-logic operation: (t & sign) | 0.49999997).
LOWBIT_AVX512_INLINE __m512i q8_codes16(const float* x, __m512 id) {
  const __m512 t = no_fma(_mm512_mul_ps(_mm512_loadu_ps(x), id));
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i bias = _mm512_ternarylogic_epi32(_mm512_castps_si512(t), sign, _mm512_set1_epi32(0x3EFFFFFF), 0xEA);
  return _mm512_cvttps_epi32(_mm512_add_ps(t, _mm512_castsi512_ps(bias)));
}

// The codes lie in -127..127 already (avx2.hpp's q8_codes8).
LOWBIT_AVX512_INLINE void q8_0_block(const float* xb, float id, std::int8_t* qs) {
  if ((a2::float_bits(id) & 0x7F800000u) == 0x7F800000u) return a2::q8_0_block_inf(xb, id, qs);
  const __m512 idv = _mm512_set1_ps(id);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(q8_codes16(xb, idv)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtepi32_epi8(q8_codes16(xb + 16, idv)));
}

// Two Q8_0 blocks (64 values at xb, ids a and b, both finite) into y[0].qs and y[1].qs: the 64
// codes narrowed by two signed saturating packs (the codes lie in -127..127) and one vpermd
// (integer/avx512.hpp's narrow64), where q8_0_block narrows by two vpmovsdb per block.
LOWBIT_AVX512_INLINE void q8_0_pair(const float* xb, float a, float b, ggml_block_q8_0* y) {
  const __m512 ia = _mm512_set1_ps(a), ib = _mm512_set1_ps(b);
  const __m512i w01 = _mm512_packs_epi32(q8_codes16(xb, ia), q8_codes16(xb + 16, ia));
  const __m512i w23 = _mm512_packs_epi32(q8_codes16(xb + 32, ib), q8_codes16(xb + 48, ib));
  const __m512i c = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                                             _mm512_packs_epi16(w01, w23));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[0].qs), _mm512_castsi512_si256(c));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[1].qs), _mm512_extracti64x4_epi64(c, 1));
}

struct q4_0_kernel {
  using block = ggml_block_q4_0;
  static LOWBIT_AVX512_INLINE void batch(const float* xb0, std::size_t m, a2::batch8* r) {
    __m256i smax;
    __m256i umax;
    block_extremes8(xb0, m, &smax, &umax);
    a2::q4_0_batch(xb0, m, smax, umax, r);
  }
  static LOWBIT_AVX512_INLINE void codes(const float* xb, float id, block* y) { q4_0_block(xb, id, y->qs); }
  static LOWBIT_AVX512_INLINE bool batch_codes(const float*, const a2::batch8&, block*) { return false; }
};
struct q8_0_kernel {
  using block = ggml_block_q8_0;
  static LOWBIT_AVX512_INLINE void batch(const float* xb0, std::size_t m, a2::batch8* r) {
    a2::q8_0_batch(block_absmax8(xb0, m), m, r);
  }
  static LOWBIT_AVX512_INLINE void codes(const float* xb, float id, block* y) { q8_0_block(xb, id, y->qs); }
  // A whole batch of 8 blocks whose ids are all finite, scales and codes, two blocks a step; false:
  // not such a batch, nothing written. (The scales stored here, unrolled, rather than by the
  // caller's loop over r.done: Q8_0 quantize +5 % in cache on Zen 5.)
  static LOWBIT_AVX512_INLINE bool batch_codes(const float* xb0, const a2::batch8& r, block* y) {
    const __m256i e = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(r.id)), _mm256_set1_epi32(0x7F800000));
    if (r.done != 8 || _mm256_cmpeq_epi32_mask(e, _mm256_set1_epi32(0x7F800000)) != 0) return false;
    for (std::size_t k = 0; k < 8; ++k) y[k].d = r.d[k];
    for (std::size_t k = 0; k < 8; k += 2) q8_0_pair(xb0 + 32 * k, r.id[k], r.id[k + 1], y + k);
    return true;
  }
};

// avx2.hpp's quantize_blocks over these kernels (the next batch's scales before this batch's
// codes, as there).
template <class K>
LOWBIT_TARGET_AVX512 inline errc quantize_blocks(const float* x, std::size_t blocks, typename K::block* y) noexcept {
  if (blocks == 0) return errc::ok;
  a2::batch8 batches[2];
  K::batch(x, blocks < 8 ? blocks : 8, &batches[0]);
  for (std::size_t b0 = 0; b0 < blocks; b0 += 8) {
    const float* xb0 = x + b0 * 32;
    a2::prefetch_group_ahead(xb0, b0, blocks);
    const a2::batch8& r = batches[(b0 / 8) % 2];
    if (b0 + 8 < blocks) K::batch(xb0 + 256, blocks - b0 - 8 < 8 ? blocks - b0 - 8 : 8, &batches[(b0 / 8 + 1) % 2]);
    if (!K::batch_codes(xb0, r, y + b0))
      for (std::size_t k = 0; k < r.done; ++k) {
        y[b0 + k].d = r.d[k];
        K::codes(xb0 + k * 32, r.id[k], y + b0 + k);
      }
    if (r.stop != errc::ok) return r.stop;
  }
  return errc::ok;
}

// dequantize_row_q4_0: y[j] = (code(j) - 8) * d, each product as the reference rounds it (one
// multiplication of the same two floats; exact, as d has 11 significant bits).
template <bool Stream>
LOWBIT_TARGET_AVX512 inline void dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
  const __m512 steps = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m512 table = _mm512_mul_ps(steps, _mm512_set1_ps(a2::half_to_float(x[b].d)));
    const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs)));
    int_detail::put16<Stream>(y + b * 32, _mm512_permutexvar_ps(c, table));
    int_detail::put16<Stream>(y + b * 32 + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(c, 4), table));
  }
}

// dequantize_row_q8_0: y[j] = q[j] * d.
template <bool Stream>
LOWBIT_TARGET_AVX512 inline void dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m512 d = _mm512_set1_ps(a2::half_to_float(x[b].d));
    for (std::size_t h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs + 16 * h));
      int_detail::put16<Stream>(y + b * 32 + 16 * h, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
    }
  }
}

// Large outputs are streamed where every store is an aligned zmm (y 64-byte aligned; a block is
// 128 bytes of floats); one that only the AVX2 kernel can stream (32-byte aligned) goes there.
template <class Block>
inline void dequantize(const Block* x, std::size_t blocks, float* y, void (*stream)(const Block*, std::size_t, float*),
                       void (*plain)(const Block*, std::size_t, float*),
                       void (*avx2_stream)(const Block*, std::size_t, float*)) noexcept {
  if (blocks * 32 >= avx2::stream_threshold_bytes / sizeof(float)) {
    if (reinterpret_cast<std::uintptr_t>(y) % 64 == 0) {
      stream(x, blocks, y);
      _mm_sfence();
      return;
    }
    if (reinterpret_cast<std::uintptr_t>(y) % 32 == 0) return avx2_stream(x, blocks, y);
  }
  plain(x, blocks, y);
}

}  // namespace ggml_detail

namespace ggml {
// The entry points (plain functions, no target attribute), as avx2::ggml's.
inline errc quantize_q4_0(const float* x, std::size_t blocks, ggml_block_q4_0* y) noexcept {
  return ggml_detail::quantize_blocks<ggml_detail::q4_0_kernel>(x, blocks, y);
}
inline errc quantize_q8_0(const float* x, std::size_t blocks, ggml_block_q8_0* y) noexcept {
  return ggml_detail::quantize_blocks<ggml_detail::q8_0_kernel>(x, blocks, y);
}
inline void dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
  ggml_detail::dequantize(x, blocks, y, ggml_detail::dequantize_q4_0<true>, ggml_detail::dequantize_q4_0<false>,
                          avx2::ggml::dequantize_q4_0);
}
inline void dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
  ggml_detail::dequantize(x, blocks, y, ggml_detail::dequantize_q8_0<true>, ggml_detail::dequantize_q8_0<false>,
                          avx2::ggml::dequantize_q8_0);
}
}  // namespace ggml

}  // namespace avx512
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_KERNELS

#endif  // LOWBIT_KERNELS_GGML_AVX512_HPP
