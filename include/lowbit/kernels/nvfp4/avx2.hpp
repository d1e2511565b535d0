// lowbit: AVX2 kernels of NVFP4, quantize and dequantize, float32 or bfloat16 on the float side.
// The reference (kernels/nvfp4/scalar.hpp) is float32 arithmetic (amax / (6 t), scale_b * t,
// x / D), so these kernels perform the same IEEE operations in the same order (vdivps and vmulps
// round exactly as divss and mulss, and honour FTZ/DAZ the same way); only the encodings (E4M3
// scale, E2M1 elements, shared with MXFP4 in kernels/mx/avx2.hpp) are integer code. In a given
// MXCSR state the AVX2 path therefore writes what the scalar path writes in that state (the bulk
// calls run both in the IEEE default). tests/test_kernels_block.cpp (Nvfp4Kernel) compares them.
// The quantizer computes the next group's scales before the current group's elements, so the
// integer work overlaps the divider, which is not pipelined. More in docs/kernels.md.
#ifndef LOWBIT_KERNELS_NVFP4_AVX2_HPP
#define LOWBIT_KERNELS_NVFP4_AVX2_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../mx/avx2.hpp"
#include "scalar.hpp"

namespace lowbit {
namespace kernels {
namespace block {

#if LOWBIT_HAS_AVX2_KERNELS
namespace avx2 {
namespace detail {

// Whether o's tensor scale is the multiplier g (D = scale_b / g) rather than the divisor t.
inline bool is_multiplier(const ::lowbit::nvfp4_options& o) noexcept {
  return o.tensor_scale_convention == ::lowbit::nvfp4_scale_convention::multiplier;
}

// E4M3 codes (any byte) -> their float values, exactly (codec.hpp's pack_float: NaN is the quiet
// NaN with the code's sign).
LOWBIT_AVX2_INLINE __m256 decode_e4m3(__m256i c) {
  const __m256i mag = _mm256_and_si256(c, set1(0x7F));
  const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 20), set1(120 << 23));
  // subnormals k * 2^-9, k = 0..7 (float bits)
  const __m256i sub = _mm256_permutevar8x32_epi32(
      _mm256_setr_epi32(0, 0x3B000000, 0x3B800000, 0x3BC00000, 0x3C000000, 0x3C200000, 0x3C400000, 0x3C600000), mag);
  __m256i r = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(set1(8), mag));
  r = _mm256_blendv_epi8(r, set1(0x7FC00000), _mm256_cmpeq_epi32(mag, set1(0x7F)));
  return _mm256_castsi256_ps(_mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(c, set1(0x80)), 24)));
}

// E4M3 codes 0x00..0x7E -> their float values (decode_e4m3 without NaN and sign).
LOWBIT_AVX2_INLINE __m256 decode_e4m3_finite(__m256i c) {
  const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(c, 20), set1(120 << 23));
  const __m256i sub = _mm256_permutevar8x32_epi32(
      _mm256_setr_epi32(0, 0x3B000000, 0x3B800000, 0x3BC00000, 0x3C000000, 0x3C200000, 0x3C400000, 0x3C600000), c);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(set1(8), c)));
}

// E4M3 codes of 8 non-negative float targets under rm, saturating at 448 (nvfp4_block_scale).
LOWBIT_AVX2_INLINE __m256i encode_scale_e4m3(__m256i target, rounding rm) {
  using F = formats::e4m3fn;
  const enc_block e = make_enc_block<F>(_mm256_setzero_si256());
  const __m256i pos = _mm256_setzero_si256();
  switch (rm) {
    case rounding::toward_zero: return encode_magnitude<F, rounding::toward_zero>(target, pos, e);
    case rounding::toward_pos_inf: return encode_magnitude<F, rounding::toward_pos_inf>(target, pos, e);
    case rounding::nearest_away: return encode_magnitude<F, rounding::nearest_away>(target, pos, e);
    case rounding::nearest_toward_zero: return encode_magnitude<F, rounding::nearest_toward_zero>(target, pos, e);
    case rounding::nearest_even:
    case rounding::stochastic:
    default: return encode_magnitude<F, rounding::nearest_even>(target, pos, e);
  }
}

// E2M1 codes of the 16 values v0, v1 (bit patterns) of a block with effective scale d > 0, in
// pair order: encode(v / d) with the float32 division of the reference.
template <rounding RM>
LOWBIT_AVX2_INLINE __m256i nvfp4_encode16(__m256i v0, __m256i v1, __m256 d, bool signed_zero, const e2m1_consts& c) {
  const __m256i q0 = _mm256_castps_si256(_mm256_div_ps(_mm256_castsi256_ps(v0), d));
  const __m256i q1 = _mm256_castps_si256(_mm256_div_ps(_mm256_castsi256_ps(v1), d));
  if constexpr (RM == rounding::nearest_even || RM == rounding::nearest_away || RM == rounding::nearest_toward_zero) {
    return e2m1_nearest16<RM>(q0, q1, _mm256_setzero_si256(), signed_zero, c);
  } else {
    using F = formats::e2m1fn;
    const enc_block e = make_enc_block<F>(_mm256_setzero_si256());
    const __m256i abs_mask = set1(0x7FFFFFFF);
    const __m256i n0 = encode_magnitude<F, RM>(_mm256_and_si256(q0, abs_mask), _mm256_srai_epi32(q0, 31), e);
    const __m256i n1 = encode_magnitude<F, RM>(_mm256_and_si256(q1, abs_mask), _mm256_srai_epi32(q1, 31), e);
    const __m256i n = _mm256_blend_epi16(n0, _mm256_slli_epi32(n1, 16), 0xAA);
    __m256i sign = _mm256_and_si256(_mm256_srai_epi16(high_halves(q0, q1), 15), _mm256_set1_epi16(8));
    if (!signed_zero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi16(n, _mm256_setzero_si256()), sign);
    return _mm256_or_si256(n, sign);
  }
}

// The codes of a block whose scale is 0 (x * 0 keeps the sign) or NaN (all 0), pair order.
LOWBIT_AVX2_INLINE __m256i nvfp4_zero16(__m256i v0, __m256i v1, bool keep_sign) {
  return keep_sign ? _mm256_and_si256(_mm256_srai_epi16(high_halves(v0, v1), 15), _mm256_set1_epi16(8))
                   : _mm256_setzero_si256();
}

// The scales of a group of up to 8 blocks: the block-scale target, nvfp4_block_scale and
// nvfp4_effective_scale, eight at a time.
struct nvfp4_group {
  __m256 d;       // effective scales D
  __m256i codes;  // E4M3 scale codes (0x7F for NaN/Inf blocks)
  unsigned bad;   // blocks holding NaN or Inf
  unsigned usable;  // blocks with D > 0 (as the reference tests it) and no NaN or Inf
};

template <class Src>
LOWBIT_AVX2_INLINE nvfp4_group nvfp4_group_scales(const Src* xg, std::size_t count, const ::lowbit::nvfp4_options& o,
                                                   float six_t) {
  const __m256i abs_mask = set1(0x7FFFFFFF);
  __m256i m[8];
  if (count == 8) {
    for (std::size_t j = 0; j < 8; ++j)
      m[j] = _mm256_max_epi32(_mm256_and_si256(load8(xg + 16 * j), abs_mask),
                              _mm256_and_si256(load8(xg + 16 * j + 8), abs_mask));
  } else {
    for (std::size_t j = 0; j < 8; ++j) {
      m[j] = j < count ? _mm256_max_epi32(_mm256_and_si256(load8(xg + 16 * j), abs_mask),
                                          _mm256_and_si256(load8(xg + 16 * j + 8), abs_mask))
                       : _mm256_setzero_si256();
    }
  }
  const __m256i amax = transpose_max8(m);
  const __m256i bad = _mm256_cmpgt_epi32(amax, set1(0x7F7FFFFF));
  const __m256 a = _mm256_castsi256_ps(_mm256_andnot_si256(bad, amax));
  const __m256 t = _mm256_set1_ps(o.tensor_scale);
  const __m256 target = is_multiplier(o) ? _mm256_mul_ps(_mm256_div_ps(a, _mm256_set1_ps(6.0f)), t)
                                     : _mm256_div_ps(a, _mm256_set1_ps(six_t));
  const __m256i finite_codes = encode_scale_e4m3(_mm256_castps_si256(target), o.scale_rounding);
  const __m256 dec = decode_e4m3_finite(finite_codes);
  nvfp4_group r;
  r.d = is_multiplier(o) ? _mm256_div_ps(dec, t) : _mm256_mul_ps(dec, t);
  r.codes = _mm256_blendv_epi8(finite_codes, set1(0x7F), bad);
  r.bad = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(bad)));
  // d > 0.0f, as the reference tests it (a compare, so DAZ applies as it does there)
  r.usable = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(r.d, _mm256_setzero_ps(), _CMP_GT_OQ))) & ~r.bad;
  return r;
}

// Two blocks of codes (pair order) to their 16 element bytes, or one block (Count 16) to 8, in
// Out's order: planar (store_e2m1_pairs) or split halves (ggml's block_nvfp4).
template <class Out, int Count>
LOWBIT_AVX2_INLINE void nvfp4_store_pair(std::uint8_t* dst, __m256i w0, __m256i w1) {
  if constexpr (Out::split) {
    store_e2m1_split16<Count>(dst, w0, w1);
  } else {
    store_e2m1_pairs<Count>(dst, w0, w1);
  }
}

// Out: planar_layout or nvfp4_ggml_layout (kernels/nvfp4/scalar.hpp). Blocks 2i and 2i + 1 are
// adjacent in both, so each pair is one 16-byte store.
template <rounding RM, class Src, class Out>
LOWBIT_TARGET_AVX2 inline bool nvfp4_quantize_rm(const Src* src, std::size_t blocks, const Out out,
                                                 const ::lowbit::nvfp4_options& o) {
  const e2m1_consts c = make_e2m1_consts<RM>();
  const float six_t = 6.0f * o.tensor_scale;  // the reference's (6.0f * t.value)
  bool non_finite = false;
  alignas(32) float d_lane[8];
  alignas(32) std::int32_t code_lane[8];
  if (blocks == 0) return false;
  // Group g + 1's scales are computed before group g's elements, so that their integer work
  // overlaps the element divisions.
  nvfp4_group next = nvfp4_group_scales(src, blocks < 8 ? blocks : 8, o, six_t);
  for (std::size_t g = 0; g < blocks; g += 8) {
    const std::size_t count = blocks - g < 8 ? blocks - g : 8;
    const Src* xg = src + g * 16;
    const nvfp4_group cur = next;
    if (g + 8 < blocks) {
      const std::size_t next_count = blocks - g - 8 < 8 ? blocks - g - 8 : 8;
      next = nvfp4_group_scales(xg + 128, next_count, o, six_t);
    }
    _mm256_store_ps(d_lane, cur.d);
    non_finite = non_finite || (cur.bad & ((1u << count) - 1u)) != 0;
    if (count == 8) {
      const __m256i p = _mm256_packus_epi32(cur.codes, cur.codes);
      const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p, p), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
      if constexpr (Out::split) {
        // blocks g .. g + 3 and g + 4 .. g + 7: the d[4] of two ggml blocks
        alignas(8) std::uint8_t d[8];
        _mm_storel_epi64(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(b));
        std::memcpy(out.scale_ptr(g), d, 4);
        std::memcpy(out.scale_ptr(g + 4), d + 4, 4);
      } else {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out.scale_ptr(g)), _mm256_castsi256_si128(b));
      }
      if (cur.usable == 0xFFu) {
        // The common case: eight blocks with a positive effective scale, straight through.
        for (std::size_t k = 0; k < 8; k += 2) {
          const __m256i w0 = nvfp4_encode16<RM>(load8(xg + 16 * k), load8(xg + 16 * k + 8),
                                                _mm256_broadcast_ss(d_lane + k), o.signed_zero, c);
          const __m256i w1 = nvfp4_encode16<RM>(load8(xg + 16 * k + 16), load8(xg + 16 * k + 24),
                                                _mm256_broadcast_ss(d_lane + k + 1), o.signed_zero, c);
          nvfp4_store_pair<Out, 32>(out.element_ptr(g + k), w0, w1);
        }
        continue;
      }
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(code_lane), cur.codes);
    if (count != 8) {
      for (std::size_t j = 0; j < count; ++j) *out.scale_ptr(g + j) = static_cast<std::uint8_t>(code_lane[j]);
    }
    // Two blocks (32 codes, 16 bytes) at a time.
    for (std::size_t j = 0; j < count; j += 2) {
      __m256i w[2];
      const std::size_t pair = count - j < 2 ? 1 : 2;
      for (std::size_t h = 0; h < pair; ++h) {
        const std::size_t k = j + h;
        const __m256i v0 = load8(xg + 16 * k);
        const __m256i v1 = load8(xg + 16 * k + 8);
        if ((cur.usable >> k) & 1u) {
          w[h] = nvfp4_encode16<RM>(v0, v1, _mm256_broadcast_ss(d_lane + k), o.signed_zero, c);
        } else {
          w[h] = nvfp4_zero16(v0, v1, o.signed_zero && ((cur.bad >> k) & 1u) == 0);
        }
      }
      std::uint8_t* e = out.element_ptr(g + j);
      if (pair == 2) {
        nvfp4_store_pair<Out, 32>(e, w[0], w[1]);
      } else {
        nvfp4_store_pair<Out, 16>(e, w[0], w[0]);
      }
    }
  }
  return non_finite;
}

// 16 elements (8 bytes at `in`: planar, or Split halves) times their effective scale, the
// products tp = pos * D and tn = neg * D (the reference multiplies each E2M1 value by D) looked
// up per element. vpermps reads the low 3 bits of a lane's index (the magnitude) and the blend
// bit 31, where the code's sign bit lands after << 28.
template <bool Stream, bool Split, class Dst>
LOWBIT_AVX2_INLINE void nvfp4_decode16(const std::uint8_t* in, Dst* out, __m256 dk, __m256 pos, __m256 neg) {
  const __m256 tp = _mm256_mul_ps(pos, dk);
  const __m256 tn = _mm256_mul_ps(neg, dk);
  __m256i idx[2];
  std::int32_t w0, w1;
  std::memcpy(&w0, in, 4);
  std::memcpy(&w1, in + 4, 4);
  if constexpr (Split) {
    // byte j holds element j low and element j + 8 high: lane j takes byte j (two broadcasts,
    // a blend and a shift, no shuffle-port work beyond the vpermps)
    idx[0] = _mm256_srlv_epi32(_mm256_blend_epi32(_mm256_set1_epi32(w0), _mm256_set1_epi32(w1), 0xF0),
                               _mm256_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24));
    idx[1] = _mm256_srli_epi32(idx[0], 4);
  } else {
    // lane j of the 8 elements held by 4 packed bytes w: w >> 4j
    const __m256i nibble_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    idx[0] = _mm256_srlv_epi32(_mm256_set1_epi32(w0), nibble_shift);
    idx[1] = _mm256_srlv_epi32(_mm256_set1_epi32(w1), nibble_shift);
  }
  for (std::size_t q = 0; q < 2; ++q) {
    const __m256 r = _mm256_blendv_ps(_mm256_permutevar8x32_ps(tp, idx[q]), _mm256_permutevar8x32_ps(tn, idx[q]),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(idx[q], 28)));
    store8<Stream>(out + 8 * q, r);
  }
}

// Into bfloat16, a group of 8 blocks whose scales are tame: 2^-125 <= |D| < 2^124 (the AVX-512
// kernel's tame_scales). An E2M1 magnitude is 2^k or 1.5 * 2^k (k = -1..2), so its product with
// D is D or 1.5 D (each rounded to float once) times 2^k, exactly, and normal below 2^127, where
// the bfloat16 rounding commutes with 2^k as well. So the group's D and 1.5 D are rounded to
// bfloat16 once (8 blocks a vector), a block's 8 magnitude results are those two with k added to
// the exponent field (and 0 * D the sign of D), and each code's result is looked up by vpshufb on
// byte pairs, its sign XORed in: the reference multiplies the negative value itself, which gives
// -(v D) exactly. 24 instructions per 32 results, where rounding each product took about 80.

// 16 bytes of a pair of blocks -> their 32 codes, block A's in the low 128-bit lane and B's in the
// high one, in element order.
template <bool Split>
LOWBIT_AVX2_INLINE __m256i pair_codes(const std::uint8_t* in) {
  if constexpr (Split) {  // ggml's sub-blocks: byte j holds element j low and j + 8 high
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
    return _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
  } else {
    return ::lowbit::kernels::avx2::load_nibbles(in);
  }
}

// q: dword j = the bfloat16 of block j's D | that of its 1.5 D << 16. Blocks k and k + 1 (16 bytes
// at in) -> 32 bfloat16 at out.
template <bool Split>
LOWBIT_AVX2_INLINE void nvfp4_pair_bf16(const std::uint8_t* in, bfloat16* out, __m256i q, int k) {
  const __m256i pick = _mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1);
  // Magnitudes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6 -> D's bytes 0-1 or 1.5 D's 2-3, 2^k as k << 7,
  // and 0 * D the sign of D (the mask).
  const __m256i from = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3,  //
                                        0, 1, 0, 1, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  const __m256i exponent = _mm256_setr_epi16(0, -128, 0, 0, 128, 128, 256, 256, 0, -128, 0, 0, 128, 128, 256, 256);
  const __m256i zero_sign = _mm256_setr_epi16(static_cast<short>(0x8000), -1, -1, -1, -1, -1, -1, -1,
                                              static_cast<short>(0x8000), -1, -1, -1, -1, -1, -1, -1);
  const __m256i table = _mm256_and_si256(
      _mm256_add_epi16(_mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(q, pick), from), exponent), zero_sign);
  // Per code n: the byte pair 2 (n & 7), 2 (n & 7) + 1 of its magnitude's word, and its sign.
  const __m256i c = pair_codes<Split>(in);
  const __m256i low = _mm256_shuffle_epi8(_mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14,  //
                                                           0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14),
                                          c);
  const __m256i sign = _mm256_and_si256(_mm256_slli_epi16(c, 4), _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i high = _mm256_add_epi8(low, _mm256_set1_epi8(1));
  const __m256i zero = _mm256_setzero_si256();
  // Elements 0-7 of A | of B, and 8-15 of A | of B.
  const __m256i w0 = _mm256_xor_si256(_mm256_shuffle_epi8(table, _mm256_unpacklo_epi8(low, high)), _mm256_unpacklo_epi8(zero, sign));
  const __m256i w1 = _mm256_xor_si256(_mm256_shuffle_epi8(table, _mm256_unpackhi_epi8(low, high)), _mm256_unpackhi_epi8(zero, sign));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(w0, w1, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm256_permute2x128_si256(w0, w1, 0x31));
}

// In: planar_layout or nvfp4_ggml_layout. Returns false when a ggml block holds the scale byte
// 0xFF (nvfp4_dequantize_scalar): the blocks before that ggml block are written, no later one.
template <bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX2 inline bool nvfp4_dequantize_impl(const In in_layout, std::size_t blocks, Dst* dst,
                                                     const ::lowbit::nvfp4_options& o) {
  const __m256 pos = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  __m256 neg = _mm256_setr_ps(-0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
#if defined(__GNUC__) || defined(__clang__)
  // Keep the compiler from turning neg * d into -(pos * d): the two differ in the sign of a NaN
  // product, and the reference multiplies the negative value itself.
  __asm__("" : "+x"(neg));
#endif
  const __m256 t = _mm256_set1_ps(o.tensor_scale);
  alignas(32) float d_lane[8];
  bool stop = false;  // a ggml scale byte 0xFF in the second ggml block of this group
  for (std::size_t g = 0; g < blocks; g += 8) {
    std::size_t count = blocks - g < 8 ? blocks - g : 8;
    __m256i codes;
    if constexpr (In::split) {
      // count is 4 or 8 (whole ggml blocks): their d[4], then nvfp4_scale_from_ggml
      std::int32_t d0 = 0, d1 = 0;
      std::memcpy(&d0, in_layout.scale_ptr(g), 4);
      if (count == 8) std::memcpy(&d1, in_layout.scale_ptr(g + 4), 4);
      const __m128i sb = _mm_unpacklo_epi32(_mm_cvtsi32_si128(d0), _mm_cvtsi32_si128(d1));
      const unsigned ff = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(sb, _mm_set1_epi8(-1)))) & 0xFFu;
      if (ff != 0) {
        if ((ff & 0x0Fu) != 0) return false;
        count = 4;  // the first ggml block, then stop
        stop = true;
      }
      const __m256i c = _mm256_and_si256(_mm256_cvtepu8_epi32(sb), set1(0x7F));
      codes = _mm256_andnot_si256(_mm256_cmpeq_epi32(c, set1(0x7F)), c);
    } else {
      __m128i sb;
      if (count == 8) {
        sb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in_layout.scale_ptr(g)));
      } else {
        std::uint8_t tmp[16] = {};
        std::memcpy(tmp, in_layout.scale_ptr(g), count);
        sb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp));
      }
      codes = _mm256_cvtepu8_epi32(sb);
    }
    const __m256 dec = decode_e4m3(codes);
    const __m256 d = is_multiplier(o) ? _mm256_div_ps(dec, t) : _mm256_mul_ps(dec, t);
    if constexpr (std::is_same<Dst, bfloat16>::value) {
      const __m256i a = _mm256_and_si256(_mm256_castps_si256(d), set1(0x7FFFFFFF));
      const __m256i wild = _mm256_or_si256(_mm256_cmpgt_epi32(set1(0x01000000), a),   // below 2^-125
                                           _mm256_cmpgt_epi32(a, set1(0x7D7FFFFF)));  // 2^124 and up
      if (count == 8 && _mm256_testz_si256(wild, wild)) {
        const __m256i q = _mm256_or_si256(::lowbit::kernels::avx2::bf16_lanes_of_f32(_mm256_castps_si256(d)),
                                          _mm256_slli_epi32(::lowbit::kernels::avx2::bf16_lanes_of_f32(_mm256_castps_si256(
                                                                _mm256_mul_ps(d, _mm256_set1_ps(1.5f)))),
                                                            16));
        for (int k = 0; k < 8; k += 2)
          nvfp4_pair_bf16<In::split>(in_layout.element_ptr(g + static_cast<std::size_t>(k)), dst + (g + static_cast<std::size_t>(k)) * 16, q, k);
        if (stop) return false;
        continue;
      }
    }
    _mm256_store_ps(d_lane, d);
    if constexpr (In::split) {
      // ggml block by ggml block: its four sub-blocks at fixed offsets
      for (std::size_t k = 0; k < count; k += 4) {
        const std::uint8_t* in = in_layout.element_ptr(g + k);
        for (std::size_t s = 0; s < 4; ++s)
          nvfp4_decode16<Stream, true>(in + 8 * s, dst + (g + k + s) * 16, _mm256_broadcast_ss(d_lane + k + s), pos, neg);
      }
    } else {
      for (std::size_t j = 0; j < count; ++j)
        nvfp4_decode16<Stream, false>(in_layout.element_ptr(g + j), dst + (g + j) * 16, _mm256_broadcast_ss(d_lane + j),
                                      pos, neg);
    }
    if (stop) return false;
  }
  return true;
}

}  // namespace detail

// Entry points. n is a multiple of 16 and the options passed the bulk calls' checks. Quantize
// returns whether a block held NaN or Inf.

// Out: planar_layout or nvfp4_ggml_layout (n then a multiple of 64).
template <class Src, class Out>
LOWBIT_TARGET_AVX2 inline bool nvfp4_quantize(const Src* src, std::size_t n, const ::lowbit::nvfp4_options& o,
                                              const Out out) {
  const std::size_t blocks = n / 16;
  return with_element_rounding(o.element_rounding, [&](auto rm) {
    return detail::nvfp4_quantize_rm<decltype(rm)::value>(src, blocks, out, o);
  });
}
template <class Src>
LOWBIT_TARGET_AVX2 inline bool nvfp4_quantize(const Src* src, std::size_t n, const ::lowbit::nvfp4_options& o,
                                              std::uint8_t* elements, std::uint8_t* scales) {
  return nvfp4_quantize(src, n, o, planar_layout<std::uint8_t>{elements, scales, 8});
}

// In: planar_layout or nvfp4_ggml_layout (n then a multiple of 64). Returns false for a ggml
// scale byte 0xFF (see nvfp4_dequantize_impl).
template <class Dst, class In>
LOWBIT_TARGET_AVX2 inline bool nvfp4_dequantize(const In in, std::size_t n, const ::lowbit::nvfp4_options& o,
                                                Dst* dst) {
  if (detail::stream_output(dst, n)) {
    if constexpr (std::is_same<Dst, float>::value) {
      const bool ok = detail::nvfp4_dequantize_impl<true>(in, n / 16, dst, o);
      _mm_sfence();
      return ok;
    }
  }
  return detail::nvfp4_dequantize_impl<false>(in, n / 16, dst, o);
}
template <class Dst>
LOWBIT_TARGET_AVX2 inline void nvfp4_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                                const ::lowbit::nvfp4_options& o, Dst* dst) {
  (void)nvfp4_dequantize(planar_layout<const std::uint8_t>{elements, scales, 8}, n, o, dst);
}

}  // namespace avx2
#endif  // LOWBIT_HAS_AVX2_KERNELS

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_NVFP4_AVX2_HPP
