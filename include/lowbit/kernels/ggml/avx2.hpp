// lowbit: AVX2 kernels of the ggml Q4_0 / Q8_0 blocks, bit-identical to the scalar reference
// beside them (kernels/ggml/reference.hpp); tests/test_kernels_integer.cpp (KernelsIntegerGgml)
// proves them equal. Shares the integer kernels' vector helpers (kernels/integer/).
#ifndef LOWBIT_KERNELS_GGML_AVX2_HPP
#define LOWBIT_KERNELS_GGML_AVX2_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../core/status.hpp"
#include "../integer/avx2_dequantize.hpp"
#include "reference.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace ggml_detail {
using namespace int_detail;  // the integer kernels' vector helpers

// Batches of 8 blocks, one lane per block for the scale arithmetic.

// The quantizers read each group of 8 blocks twice (amax, then the codes): from DRAM the out-of-
// order window alone keeps too few lines in flight, so group g, while it is worked on, fetches
// group g + 3 (1 KiB, 16 lines): two groups ahead of group g + 1, whose amax quantize_blocks
// reads during group g. Measured on Q8_0 from DRAM: 69 -> 86 % of the trivial float32 -> int8
// loop (two groups ahead of the amax). Inputs under 1 MiB (in L2, as integer/avx2_symmetric.hpp's
// prefetches_batches says) ask for nothing: there the 16 requests per group cost Q8_0 7 % on
// AVX-512 and 2 % on AVX2 in cache (16K values, Zen 5, medians of four alternating runs).
LOWBIT_AVX2_INLINE void prefetch_group_ahead(const float* xb0, std::size_t b0, std::size_t blocks) {
  if (b0 + 32 > blocks || blocks * 32 * sizeof(float) < (std::size_t{1} << 20)) return;
  for (int line = 0; line < 16; ++line) _mm_prefetch(reinterpret_cast<const char*>(xb0 + 768 + 16 * line), _MM_HINT_T0);
}

// Lane k: the largest |x| of block k (bits), for up to 8 blocks of 32 (the others 0).
LOWBIT_AVX2_INLINE __m256i block_absmax8(const float* x, std::size_t m) {
  __m256i v[8];
  for (std::size_t k = 0; k < 8; ++k) {
    if (k < m) {
      const float* xb = x + k * 32;
      v[k] = _mm256_max_epi32(_mm256_max_epi32(abs_bits(_mm256_loadu_ps(xb)), abs_bits(_mm256_loadu_ps(xb + 8))),
                              _mm256_max_epi32(abs_bits(_mm256_loadu_ps(xb + 16)), abs_bits(_mm256_loadu_ps(xb + 24))));
    } else {
      v[k] = _mm256_setzero_si256();
    }
  }
  return reduce8_max_epi32(v);
}

// ggml's Q4_0 scale comes from the first element of largest magnitude, sign included. Lane k of
// `smax` / `umax`: the largest bit pattern of block k as signed / unsigned 32-bit integers (the
// others 0). A positive element of magnitude a exists iff smax = a; a negative one iff
// umax = a | sign (every negative pattern is above every positive one unsigned, and ordered by
// magnitude among them); a = max(|smax|, |umax|).
LOWBIT_AVX2_INLINE void block_extremes8(const float* x, std::size_t m, __m256i* smax, __m256i* umax) {
  __m256i s[8];
  __m256i u[8];
  for (std::size_t k = 0; k < 8; ++k) {
    if (k < m) {
      const float* xb = x + k * 32;
      const __m256i v0 = _mm256_castps_si256(_mm256_loadu_ps(xb));
      const __m256i v1 = _mm256_castps_si256(_mm256_loadu_ps(xb + 8));
      const __m256i v2 = _mm256_castps_si256(_mm256_loadu_ps(xb + 16));
      const __m256i v3 = _mm256_castps_si256(_mm256_loadu_ps(xb + 24));
      s[k] = _mm256_max_epi32(_mm256_max_epi32(v0, v1), _mm256_max_epi32(v2, v3));
      u[k] = _mm256_max_epu32(_mm256_max_epu32(v0, v1), _mm256_max_epu32(v2, v3));
    } else {
      s[k] = _mm256_setzero_si256();
      u[k] = _mm256_setzero_si256();
    }
  }
  *smax = reduce8_max_epi32(s);
  *umax = reduce8(u, max_epu32_op{});
}

// The first element of a block whose magnitude has the bits `amax`: the scalar search for a block
// that holds both +a and -a.
LOWBIT_AVX2_INLINE float first_with_magnitude(const float* xb, std::uint32_t amax) {
  const __m256i t = _mm256_set1_epi32(static_cast<int>(amax));
  const std::uint32_t hit = lanes_of(_mm256_cmpeq_epi32(abs_bits(_mm256_loadu_ps(xb)), t)) |
                            lanes_of(_mm256_cmpeq_epi32(abs_bits(_mm256_loadu_ps(xb + 8)), t)) << 8 |
                            lanes_of(_mm256_cmpeq_epi32(abs_bits(_mm256_loadu_ps(xb + 16)), t)) << 16 |
                            lanes_of(_mm256_cmpeq_epi32(abs_bits(_mm256_loadu_ps(xb + 24)), t)) << 24;
  return xb[lowest_bit(hit)];
}

// 8 Q4_0 codes: min(15, trunc(x * id + 8.5)) with NaN and negatives 0, in 32-bit lanes where a
// NaN or a negative is left as a negative integer (the unsigned pack in q4_nibbles makes it 0).
// min(15, t) with 15 first keeps a NaN t, which converts to INT_MIN.
LOWBIT_AVX2_INLINE __m256i q4_codes8(const float* x, __m256 id) {
  const __m256 t = _mm256_add_ps(no_fma(_mm256_mul_ps(_mm256_loadu_ps(x), id)), _mm256_set1_ps(8.5f));
  return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_set1_ps(15.0f), t));
}

// A block's 32 codes (element 8i + j in lane j of q_i, at most 15) -> ggml's 16 bytes: element j
// in the low nibble of byte j, element j + 16 in the high one. After the packs, each 128-bit lane
// holds four dwords of four codes (elements 0-3, 8-11, 16-19, 24-27 in the low lane, 4-7, 12-15,
// 20-23, 28-31 in the high one): dwords 2 and 3 are the high nibbles of dwords 0 and 1.
LOWBIT_AVX2_INLINE __m128i q4_nibbles(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  const __m256i n = _mm256_or_si256(b, _mm256_slli_epi16(_mm256_srli_si256(b, 8), 4));
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(n, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)));
}

// ------------------------------------------------------------------------------------------------
// The quantizers: per batch of 8 blocks the scales (shared with the AVX-512 kernels, avx512.hpp),
// then each block's codes.

// A batch's fp16 scales and the multipliers of its codes, and where it stops.
struct batch8 {
  alignas(32) float id[8];
  alignas(16) std::uint16_t d[8];
  std::size_t done;  // the blocks to write: those before the first error
  errc stop;         // errc::ok, or the error of block `done`
};

// id = 1/d (0 where d is 0) and the fp16 bits of d for the first `valid` of m blocks (the blocks
// from `valid` on, if any, hold NaN or Inf). Stops at the first block whose scale overflows
// fp16 (ggml would store Inf).
LOWBIT_AVX2_INLINE void finish_batch(__m256 d, std::size_t valid, std::size_t m, batch8* r) {
  const __m256 nonzero = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  _mm256_store_ps(r->id, _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), nonzero));
  const __m128i h = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_store_si128(reinterpret_cast<__m128i*>(r->d), h);
  const std::uint32_t overflow =
      lanes_of(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7FFF)),
                                  _mm256_set1_epi32(0x7C00))) & ((1u << valid) - 1u);
  r->done = overflow != 0 ? lowest_bit(overflow) : valid;
  r->stop = r->done < valid ? errc::scale_overflow : valid < m ? errc::non_finite_input : errc::ok;
}

// The first of m blocks whose lane of `amax` (largest |x| as bits) is NaN or Inf, or m.
LOWBIT_AVX2_INLINE std::size_t finite_blocks(__m256i amax, std::size_t m) {
  const std::uint32_t bad = lanes_of(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7F7FFFFF))) & ((1u << m) - 1u);
  return bad != 0 ? lowest_bit(bad) : m;
}

// ggml_quantize_q4_0: max = the first element of largest magnitude, d = max / -8, id = 1/d;
// smax / umax as block_extremes8 gives them.
LOWBIT_AVX2_INLINE void q4_0_batch(const float* xb0, std::size_t m, __m256i smax, __m256i umax, batch8* r) {
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i zero = _mm256_setzero_si256();
  const __m256i amax = _mm256_max_epi32(abs_bits(_mm256_castsi256_ps(smax)), abs_bits(_mm256_castsi256_ps(umax)));
  const std::size_t valid = finite_blocks(amax, m);
  // max = +a where a positive element reaches a (or a = 0: ggml's max starts at +0), else -a.
  const __m256i plus = _mm256_cmpeq_epi32(smax, amax);
  const __m256i a_zero = _mm256_cmpeq_epi32(amax, zero);
  __m256 mv = _mm256_castsi256_ps(_mm256_or_si256(amax, _mm256_andnot_si256(_mm256_or_si256(plus, a_zero), sign)));
  const __m256i minus = _mm256_cmpeq_epi32(umax, _mm256_or_si256(amax, sign));
  std::uint32_t both = lanes_of(_mm256_andnot_si256(a_zero, _mm256_and_si256(plus, minus))) & ((1u << valid) - 1u);
  if (both != 0) {  // +a and -a: the first one counts
    alignas(32) float mf[8];
    _mm256_store_ps(mf, mv);
    alignas(32) std::uint32_t av[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(av), amax);
    for (; both != 0; both &= both - 1u) {
      const std::size_t k = lowest_bit(both);
      mf[k] = first_with_magnitude(xb0 + k * 32, av[k]);
    }
    mv = _mm256_load_ps(mf);
  }
  finish_batch(_mm256_div_ps(mv, _mm256_set1_ps(-8.0f)), valid, m, r);
}

// ggml_quantize_q8_0: d = amax / 127, id = 1/d (0 for d = 0); amax as block_absmax8 gives it.
LOWBIT_AVX2_INLINE void q8_0_batch(__m256i amax, std::size_t m, batch8* r) {
  finish_batch(_mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(127.0f)), finite_blocks(amax, m), m, r);
}

// Q4_0 codes: min(15, trunc(x * id + 8.5)) (NaN and negatives 0).
LOWBIT_AVX2_INLINE void q4_0_block(const float* xb, float id, std::uint8_t* qs) {
  const __m256 idv = _mm256_set1_ps(id);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), q4_nibbles(q4_codes8(xb, idv), q4_codes8(xb + 8, idv),
                                                             q4_codes8(xb + 16, idv), q4_codes8(xb + 24, idv)));
}

// Q8_0 codes: q = roundf(x * id), which the reference clamps to +-127. roundf is
// trunc(v + copysign(0.49999997, v)): exact for |v| < 2^23 under nearest-even (a fraction below
// 1/2 stays more than half an ulp short of the next integer). With id finite, |x| <= amax and
// id = 1/d, d = amax/127 each rounded once (relative error 2^-24, or 2^-21 where d is a float
// subnormal above 2^-128), so |x * id| < 127 (1 + 2^-20) and |q| <= 127: the clamp has nothing
// to do.
LOWBIT_AVX2_INLINE __m256i q8_codes8(const float* x, __m256 id) {
  const __m256 t = no_fma(_mm256_mul_ps(_mm256_loadu_ps(x), id));
  const __m256 bias = _mm256_or_ps(_mm256_and_ps(t, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0.49999997f));
  return _mm256_cvttps_epi32(_mm256_add_ps(t, bias));
}

// A block whose id overflows (amax below 127 * 2^-128): the products are +-Inf or NaN, rounded
// literally and clamped to +-127. (The AVX-512 kernel takes it too.)
LOWBIT_AVX2_INLINE void q8_0_block_inf(const float* xb, float id, std::int8_t* qs) {
  const __m256 idv = _mm256_set1_ps(id);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256 t = _mm256_mul_ps(_mm256_loadu_ps(xb + 8 * i), idv);
    t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));  // NaN (0 * Inf) -> 0
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    const __m256 tr = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_castsi256_ps(abs_bits(_mm256_sub_ps(t, tr)));
    const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
    const __m256i sgn = _mm256_or_si256(_mm256_srai_epi32(_mm256_castps_si256(t), 31), _mm256_set1_epi32(1));
    q[i] = _mm256_add_epi32(_mm256_cvttps_epi32(tr), _mm256_and_si256(up, sgn));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_signed32(q[0], q[1], q[2], q[3]));
}

LOWBIT_AVX2_INLINE void q8_0_block(const float* xb, float id, std::int8_t* qs) {
  if ((float_bits(id) & 0x7F800000u) == 0x7F800000u) return q8_0_block_inf(xb, id, qs);
  const __m256 idv = _mm256_set1_ps(id);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_signed32(q8_codes8(xb, idv), q8_codes8(xb + 8, idv),
                                                                    q8_codes8(xb + 16, idv), q8_codes8(xb + 24, idv)));
}

// The two formats for quantize_blocks: a batch's scales, then each block's codes.
struct q4_0_kernel {
  using block = ggml_block_q4_0;
  static LOWBIT_AVX2_INLINE void batch(const float* xb0, std::size_t m, batch8* r) {
    __m256i smax;
    __m256i umax;
    block_extremes8(xb0, m, &smax, &umax);
    q4_0_batch(xb0, m, smax, umax, r);
  }
  static LOWBIT_AVX2_INLINE void codes(const float* xb, float id, block* y) { q4_0_block(xb, id, y->qs); }
};
struct q8_0_kernel {
  using block = ggml_block_q8_0;
  static LOWBIT_AVX2_INLINE void batch(const float* xb0, std::size_t m, batch8* r) {
    q8_0_batch(block_absmax8(xb0, m), m, r);
  }
  static LOWBIT_AVX2_INLINE void codes(const float* xb, float id, block* y) { q8_0_block(xb, id, y->qs); }
};

// Stops at the first block with NaN or Inf (non_finite_input) or whose scale overflows fp16
// (scale_overflow): that block and the ones after it are not written. Batch b + 1's scales are
// computed before batch b's codes (two batch8 in turn), so that its reductions overlap the two
// divisions (d, then 1/d) the codes wait for: Q8_0 +33 % in cache on Zen 5. (avx512.hpp has the
// same loop over its own kernels: a target attribute cannot depend on a template argument.)
template <class K>
LOWBIT_TARGET_AVX2 inline errc quantize_blocks(const float* x, std::size_t blocks, typename K::block* y) noexcept {
  if (blocks == 0) return errc::ok;
  batch8 batches[2];
  K::batch(x, blocks < 8 ? blocks : 8, &batches[0]);
  for (std::size_t b0 = 0; b0 < blocks; b0 += 8) {
    const float* xb0 = x + b0 * 32;
    prefetch_group_ahead(xb0, b0, blocks);
    const batch8& r = batches[(b0 / 8) % 2];
    if (b0 + 8 < blocks) K::batch(xb0 + 256, blocks - b0 - 8 < 8 ? blocks - b0 - 8 : 8, &batches[(b0 / 8 + 1) % 2]);
    for (std::size_t k = 0; k < r.done; ++k) {
      y[b0 + k].d = r.d[k];
      K::codes(xb0 + k * 32, r.id[k], y + b0 + k);
    }
    if (r.stop != errc::ok) return r.stop;
  }
  return errc::ok;
}

template <bool Stream>
LOWBIT_TARGET_AVX2 inline void dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m256 d = _mm256_set1_ps(half_to_float(x[b].d));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low), _mm_and_si128(qs, low));
    values32_small<Stream>(codes, eight, d, y + b * 32);
  }
}

template <bool Stream>
LOWBIT_TARGET_AVX2 inline void dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m256 d = _mm256_set1_ps(half_to_float(x[b].d));
    const std::int8_t* qs = x[b].qs;
    float* yb = y + b * 32;
    for (int k = 0; k < 4; k += 2) {
      const __m128i q0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * k));
      const __m128i q1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 + 8 * k));
      put16<Stream>(yb + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), d),
                    _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)), d));
    }
  }
}

}  // namespace ggml_detail

namespace ggml {
// The entry points (plain functions, no target attribute). The caller holds the IEEE scope
// (kernels/fp_env.hpp). The quantizers return errc::ok or the reference's error for the first
// block they stop at, leaving that block and the ones after it unwritten.
inline errc quantize_q4_0(const float* x, std::size_t blocks, ggml_block_q4_0* y) noexcept {
  return ggml_detail::quantize_blocks<ggml_detail::q4_0_kernel>(x, blocks, y);
}
inline void dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
  if (int_detail::streams_f32(y, blocks * 32, 32)) {
    ggml_detail::dequantize_q4_0<true>(x, blocks, y);
    _mm_sfence();
  } else {
    ggml_detail::dequantize_q4_0<false>(x, blocks, y);
  }
}
inline errc quantize_q8_0(const float* x, std::size_t blocks, ggml_block_q8_0* y) noexcept {
  return ggml_detail::quantize_blocks<ggml_detail::q8_0_kernel>(x, blocks, y);
}
inline void dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
  if (int_detail::streams_f32(y, blocks * 32, 32)) {
    ggml_detail::dequantize_q8_0<true>(x, blocks, y);
    _mm_sfence();
  } else {
    ggml_detail::dequantize_q8_0<false>(x, blocks, y);
  }
}
}  // namespace ggml
}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_GGML_AVX2_HPP
