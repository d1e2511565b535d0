// lowbit: AVX-512 (F, BW, DQ, VL) kernels of NVFP4, quantize and dequantize, float32 or bfloat16
// on the float side, planar or ggml's block_nvfp4 layout. As the AVX2 kernels
// (kernels/nvfp4/avx2.hpp), they perform the reference's float32 operations (amax / (6 t) or
// (amax / 6) * g, scale_b * t or scale_b / g, x / D, E2M1(code) * D) in the same order, 16 lanes
// at a time: vdivps and vmulps on zmm round exactly as divss and mulss, and honour FTZ/DAZ the same
// way, so in a given MXCSR state these kernels write what the scalar path writes in that state.
// The encodings (E4M3 scale, E2M1 elements) are the integer encoders of kernels/mx/avx512.hpp.
// tests/test_kernels_block.cpp (Nvfp4Kernel, GgmlLayoutKernel) compares them with the reference.
//
// One block of 16 is one zmm: a group of 16 blocks shares one transpose-max and one scale
// computation, and a pair of blocks is one 32-value E2M1 encode. The quantizer is bound by the
// divider (one vdivps zmm per block against two vdivps ymm on AVX2, the same divider time on
// Intel cores), see docs/performance.md, "AVX-512 block formats". (Not on Zen 5: there the same
// quotients by x * (1/D) with a near-decision test ran at 0.81x of this; "Zen 5: the integer
// quantizers again".)
// With AVX512_BF16, dequantization into bfloat16 (planar) rounds each pair of blocks' 32
// products once and looks the outputs up (nvfp4_decode32_bf16); vcvtne2ps2bf16 reads no MXCSR,
// and the products it would round differently (subnormal, NaN, overflowing) take the F/BW path.
// So does it from ggml's blocks, their pairs of sub-blocks in split halves. Without it, bfloat16
// outputs run the AVX2 kernel, whose lookup of each block's D and 1.5 D (nvfp4_pair_bf16) beats
// rounding every product here.
#ifndef LOWBIT_KERNELS_NVFP4_AVX512_HPP
#define LOWBIT_KERNELS_NVFP4_AVX512_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../mx/avx512.hpp"
#include "avx2.hpp"
#include "scalar.hpp"

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace block {

#if LOWBIT_HAS_AVX512_KERNELS
namespace avx512 {
namespace detail {

inline bool nv_is_multiplier(const ::lowbit::nvfp4_options& o) noexcept {
  return o.tensor_scale_convention == ::lowbit::nvfp4_scale_convention::multiplier;
}

// E4M3 codes 0x00..0x7E -> their float values; with Signed, any byte (NaN: the quiet NaN with the
// code's sign, as codec.hpp's pack_float).
template <bool Signed>
LOWBIT_BLOCK512_INLINE __m512 decode_e4m3_16(__m512i c) {
  const __m512i mag = Signed ? _mm512_and_si512(c, set1(0x7F)) : c;
  const __m512i normal = _mm512_add_epi32(_mm512_slli_epi32(mag, 20), set1(120 << 23));
  // subnormals k * 2^-9, k = 0..7 (float bits); vpermd reads the low 4 bits of mag
  const __m512i sub_table = _mm512_setr_epi32(0, 0x3B000000, 0x3B800000, 0x3BC00000, 0x3C000000, 0x3C200000,
                                              0x3C400000, 0x3C600000, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512i r = _mm512_mask_mov_epi32(normal, _mm512_cmpgt_epi32_mask(set1(8), mag), _mm512_permutexvar_epi32(mag, sub_table));
  if constexpr (Signed) {
    r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(mag, set1(0x7F)), set1(0x7FC00000));
    r = _mm512_or_si512(r, _mm512_slli_epi32(_mm512_and_si512(c, set1(0x80)), 24));
  }
  return _mm512_castsi512_ps(r);
}

// E4M3 codes of 16 non-negative float targets under rm, saturating at 448 (nvfp4_block_scale).
LOWBIT_BLOCK512_INLINE __m512i encode_scale_e4m3_16(__m512i target, rounding rm) {
  using F = formats::e4m3fn;
  const enc_block e = make_enc_block<F>(_mm512_setzero_si512());
  switch (rm) {
    case rounding::toward_zero: return encode_magnitude<F, rounding::toward_zero>(target, 0, e);
    case rounding::toward_pos_inf: return encode_magnitude<F, rounding::toward_pos_inf>(target, 0, e);
    case rounding::nearest_away: return encode_magnitude<F, rounding::nearest_away>(target, 0, e);
    case rounding::nearest_toward_zero: return encode_magnitude<F, rounding::nearest_toward_zero>(target, 0, e);
    case rounding::nearest_even:
    case rounding::stochastic:
    default: return encode_magnitude<F, rounding::nearest_even>(target, 0, e);
  }
}

// The scales of a group of up to 16 blocks, as avx2::detail::nvfp4_group_scales.
struct nvfp4_group16 {
  __m512 d;         // effective scales D (1 where a block is not usable: never read)
  __m512i codes;    // E4M3 scale codes (0x7F for NaN/Inf blocks)
  unsigned bad;     // blocks holding NaN or Inf
  unsigned usable;  // blocks with D > 0 (as the reference tests it) and no NaN or Inf
};

// |x| of block j (16 values) as bit patterns.
template <class Src>
struct block16_abs {
  const Src* x;
  LOWBIT_BLOCK512_INLINE __m512i operator()(std::size_t j) const {
    return _mm512_and_si512(load16(x + 16 * j), set1(0x7FFFFFFF));
  }
};

template <class Src>
LOWBIT_BLOCK512_INLINE nvfp4_group16 nvfp4_group_scales16(const Src* xg, std::size_t count,
                                                          const ::lowbit::nvfp4_options& o, float six_t) {
  const __m512i amax = reduce16_max(block16_abs<Src>{xg}, count);
  const __mmask16 bad = _mm512_cmpgt_epi32_mask(amax, set1(0x7F7FFFFF));
  const __m512 a = _mm512_castsi512_ps(_mm512_maskz_mov_epi32(static_cast<__mmask16>(~bad), amax));
  const __m512 t = _mm512_set1_ps(o.tensor_scale);
  const __m512 target = nv_is_multiplier(o) ? _mm512_mul_ps(_mm512_div_ps(a, _mm512_set1_ps(6.0f)), t)
                                            : _mm512_div_ps(a, _mm512_set1_ps(six_t));
  const __m512i finite_codes = encode_scale_e4m3_16(_mm512_castps_si512(target), o.scale_rounding);
  const __m512 dec = decode_e4m3_16<false>(finite_codes);
  nvfp4_group16 r;
  const __m512 d = nv_is_multiplier(o) ? _mm512_div_ps(dec, t) : _mm512_mul_ps(dec, t);
  r.codes = _mm512_mask_mov_epi32(finite_codes, bad, set1(0x7F));
  r.bad = bad;
  r.usable = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_GT_OQ) & ~r.bad;
  r.d = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), static_cast<__mmask16>(r.usable), d);
  return r;
}

// Two blocks (v0: block A, v1: block B) with effective scales dA, dB -> their codes in planar
// or pair order (kernels/mx/avx512.hpp): encode(v / D) with the reference's float32 division.
template <rounding RM, bool Planar>
LOWBIT_BLOCK512_INLINE __m512i nvfp4_encode32(__m512i v0, __m512i v1, __m512 d0, __m512 d1, __m512i guard,
                                              const e2m1_consts16& c) {
  const __m512i q0 = _mm512_castps_si512(_mm512_div_ps(_mm512_castsi512_ps(v0), d0));
  const __m512i q1 = _mm512_castps_si512(_mm512_div_ps(_mm512_castsi512_ps(v1), d1));
  if constexpr (is_nearest<RM>()) {
    return e2m1_nearest32<RM, Planar>(q0, q1, _mm512_setzero_si512(), guard, c);
  } else {
    return e2m1_directed32<RM, Planar>(q0, q1, make_enc_block<formats::e2m1fn>(_mm512_setzero_si512()), guard, c);
  }
}

// The codes of two blocks where one or both are not usable: those of a zero scale (keep_sign:
// x * 0 keeps the sign) or of a NaN block (all 0). Planar order: block A in words 0-3 of each
// 128-bit lane; pair order: in the low words.
template <bool Planar>
LOWBIT_BLOCK512_INLINE __m512i nvfp4_fix_unusable(__m512i w, __m512i v0, __m512i v1, unsigned usable_a,
                                                  unsigned usable_b, unsigned keep_a, unsigned keep_b,
                                                  const e2m1_consts16& c) {
  const __mmask32 a_words = Planar ? 0x0F0F0F0Fu : 0x55555555u;
  const __mmask32 b_words = static_cast<__mmask32>(~a_words);
  const __mmask32 neg = _mm512_movepi16_mask(high_halves32<Planar>(v0, v1));
  const __mmask32 unusable = (usable_a ? 0u : a_words) | (usable_b ? 0u : b_words);
  const __mmask32 keep = (keep_a ? a_words : 0u) | (keep_b ? b_words : 0u);
  return _mm512_mask_mov_epi16(w, unusable, _mm512_maskz_mov_epi16(neg & keep, c.eight16));
}

template <class Out, int Count>
LOWBIT_BLOCK512_INLINE void nvfp4_store_pair(std::uint8_t* dst, __m512i w) {
  if constexpr (Out::split) {
    store_e2m1_split16<Count>(dst, w);
  } else {
    store_e2m1_planar<Count>(dst, w);
  }
}

template <rounding RM, class Src, class Out>
LOWBIT_TARGET_AVX512 inline bool nvfp4_quantize_rm(const Src* src, std::size_t blocks, const Out out,
                                                   const ::lowbit::nvfp4_options& o) {
  const e2m1_consts16 c = pinned(make_e2m1_consts16<RM>());
  const float six_t = 6.0f * o.tensor_scale;  // the reference's (6.0f * t.value)
  const bool signed_zero = o.signed_zero;
  const __m512i guard = zero_guard(signed_zero);
  bool non_finite = false;
  alignas(64) float d_lane[16];
  if (blocks == 0) return false;
  // Group g + 1's scales before group g's elements, so that their work overlaps the divisions.
  nvfp4_group16 next = nvfp4_group_scales16(src, blocks < 16 ? blocks : 16, o, six_t);
  for (std::size_t g = 0; g < blocks; g += 16) {
    const std::size_t count = blocks - g < 16 ? blocks - g : 16;
    const Src* xg = src + g * 16;
    const nvfp4_group16 cur = next;
    if (g + 16 < blocks) {
      const std::size_t next_count = blocks - g - 16 < 16 ? blocks - g - 16 : 16;
      next = nvfp4_group_scales16(xg + 256, next_count, o, six_t);
    }
    _mm512_store_ps(d_lane, cur.d);
    const unsigned live = count == 16 ? 0xFFFFu : (1u << count) - 1u;
    non_finite = non_finite || (cur.bad & live) != 0;
    alignas(16) std::uint8_t sc[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(sc), _mm512_cvtepi32_epi8(cur.codes));
    if constexpr (Out::split) {
      // count is a multiple of 4 (whole ggml blocks): each one's d[4]
      for (std::size_t j = 0; j < count; j += 4) std::memcpy(out.scale_ptr(g + j), sc + j, 4);
    } else {
      std::memcpy(out.scale_ptr(g), sc, count);
    }
    const bool all_usable = (cur.usable & live) == live;
    if (count == 16 && all_usable) {  // the common group, as straight pairs
      for (std::size_t k = 0; k < 16; k += 2) {
        const __m512i w = nvfp4_encode32<RM, !Out::split>(load16(xg + 16 * k), load16(xg + 16 * k + 16),
                                                          _mm512_set1_ps(d_lane[k]), _mm512_set1_ps(d_lane[k + 1]), guard, c);
        nvfp4_store_pair<Out, 32>(out.element_ptr(g + k), w);
      }
      continue;
    }
    for (std::size_t k = 0; k < count; k += 2) {
      const bool pair = count - k >= 2;
      const __m512i v0 = load16(xg + 16 * k);
      const __m512i v1 = pair ? load16(xg + 16 * k + 16) : _mm512_setzero_si512();
      __m512i w = nvfp4_encode32<RM, !Out::split>(v0, v1, _mm512_set1_ps(d_lane[k]), _mm512_set1_ps(pair ? d_lane[k + 1] : 1.0f),
                                     guard, c);
      if (!all_usable) {
        const unsigned ua = (cur.usable >> k) & 1u, ub = pair ? (cur.usable >> (k + 1)) & 1u : 1u;
        if (!(ua && ub)) {
          const unsigned ka = signed_zero && ((cur.bad >> k) & 1u) == 0;
          const unsigned kb = signed_zero && ((cur.bad >> (k + 1)) & 1u) == 0;
          w = nvfp4_fix_unusable<!Out::split>(w, v0, v1, ua, ub, ka, kb, c);
        }
      }
      if (pair) {
        nvfp4_store_pair<Out, 32>(out.element_ptr(g + k), w);
      } else {
        nvfp4_store_pair<Out, 16>(out.element_ptr(g + k), w);
      }
    }
  }
  return non_finite;
}

// Two blocks (16 bytes at `in`: planar, or two sub-blocks in split halves) -> 32 values: the
// products E2M1(c) * D for all 16 codes (one vmulps: the reference multiplies each value,
// the negative ones included, by D), looked up with vpermd.
template <bool Stream, bool Split, class Dst>
LOWBIT_BLOCK512_INLINE void nvfp4_decode32(const std::uint8_t* in, Dst* out, __m512 values, float d0, float d1,
                                           bool pair) {
  const __m512 t0 = _mm512_mul_ps(values, _mm512_set1_ps(d0));
  const __m128i b = pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(in))
                         : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in));
  const __m512i x = _mm512_broadcast_i32x4(b);
  __m512i c0, c1;
  if constexpr (Split) {
    // block A: dword j takes byte j % 8 (>> 4 for j >= 8); block B: byte 8 + j % 8
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    c0 = _mm512_srlv_epi32(_mm512_shuffle_epi8(x, _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)), shift);
    c1 = _mm512_srlv_epi32(
        _mm512_shuffle_epi8(x, _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)), shift);
  } else {
    const __m512i shift = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    c0 = _mm512_srlv_epi32(_mm512_shuffle_epi8(x, _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)), shift);
    c1 = _mm512_srlv_epi32(
        _mm512_shuffle_epi8(x, _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)), shift);
  }
  store16v<Stream>(out, _mm512_permutexvar_ps(c0, t0));
  if (pair) store16v<Stream>(out + 16, _mm512_permutexvar_ps(c1, _mm512_mul_ps(values, _mm512_set1_ps(d1))));
}

// The 16 E2M1 values, code order (sign bit 3), in a register the compiler cannot see into: the
// reference multiplies the negative values themselves, and folding (-v) * d into -(v * d) would
// change the sign of a NaN product.
LOWBIT_BLOCK512_INLINE __m512 e2m1_values16() {
  __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,  //
                                 -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+v"(values));
#endif
  return values;
}

// The scales D of the `count` <= 16 planar blocks from g, in d_lane.
template <class In>
LOWBIT_BLOCK512_INLINE __m512 nvfp4_planar_scales(const In in_layout, std::size_t g, std::size_t count,
                                                  const ::lowbit::nvfp4_options& o, float* d_lane) {
  __m512i codes;
  if (count == 16) {
    codes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in_layout.scale_ptr(g))));
  } else {
    alignas(16) std::uint8_t sb[16] = {};
    std::memcpy(sb, in_layout.scale_ptr(g), count);
    codes = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb)));
  }
  const __m512 dec = decode_e4m3_16<true>(codes);
  const __m512 t = _mm512_set1_ps(o.tensor_scale);
  const __m512 d = nv_is_multiplier(o) ? _mm512_div_ps(dec, t) : _mm512_mul_ps(dec, t);
  _mm512_store_ps(d_lane, d);
  return d;
}

// In: planar_layout (ggml's blocks: nvfp4_dequantize_ggml_impl below).
template <bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX512 inline void nvfp4_dequantize_impl(const In in_layout, std::size_t blocks, Dst* dst,
                                                       const ::lowbit::nvfp4_options& o) {
  static_assert(!In::split, "planar layout");
  const __m512 values = e2m1_values16();
  alignas(64) float d_lane[16];
  for (std::size_t g = 0; g < blocks; g += 16) {
    const std::size_t count = blocks - g < 16 ? blocks - g : 16;
    nvfp4_planar_scales(in_layout, g, count, o, d_lane);
    for (std::size_t k = 0; k < count; k += 2) {
      const bool pair = count - k >= 2;
      nvfp4_decode32<Stream, false>(in_layout.element_ptr(g + k), dst + (g + k) * 16, values, d_lane[k],
                                    pair ? d_lane[k + 1] : 0.0f, pair);
    }
  }
}

// Into bfloat16 with AVX512_BF16 (use_avx512_bf16): a pair of blocks' two tables of 16 products
// are rounded together by one vcvtne2ps2bf16 (32 codes: block A's, then B's) and the 32 outputs
// looked up with one vpermw, where nvfp4_decode32 rounds every output. The instruction rounds as
// the reference does (nearest-even on the bits) except on NaN, on magnitudes from 0x7F7F8000 up
// and on float subnormals (docs/kernels.md). The products are D times 0, +-0.5 .. +-6: a D with
// 2^-125 <= |D| < 2^124 gives none of those (tame_scales, one test for 16 blocks). Otherwise
// each pair's tables are checked: one with such a product other than the +-0 of codes 0 and 8
// (D = 0, a tiny or huge D, NaN) sends its pair to nvfp4_decode32.

// The lanes of D that are tame.
LOWBIT_BLOCK512_INLINE __mmask16 tame_scales(__m512 d) {
  const __m512i a = _mm512_and_si512(_mm512_castps_si512(d), set1(0x7FFFFFFF));
  return _mm512_cmpge_epu32_mask(a, set1(0x01000000)) & _mm512_cmplt_epu32_mask(a, set1(0x7D800000));  // 2^-125, 2^124
}

// The lookup, from a pair's two tables of products. Split: the pair is two sub-blocks of ggml's
// block_nvfp4 (split halves: byte j holds element j and element j + 8).
template <bool Split = false>
LOWBIT_AVX512_BF16_INLINE void nvfp4_lookup32_bf16(const std::uint8_t* in, bfloat16* out, __m512 t0, __m512 t1) {
  const __m512i table = (__m512i)_mm512_cvtne2ps_pbh(t1, t0);
  // Word j of block A (B: word 16 + j): the low nibble of byte j / 2 for even j, the high one for
  // odd j. A dword per byte b, plus b << 12, holds b's low nibble in its low word and its high
  // nibble in its high word; masked to the nibbles, B's (dwords 8..15) offset by 16.
  const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  const __m512i w = _mm512_ternarylogic_epi32(d, _mm512_slli_epi32(d, 12), set1(0x000F000F), 0xA8);  // (d | t) & 15
  __m512i index = _mm512_mask_or_epi32(w, 0xFF00, w, set1(0x00100010));
  if constexpr (Split) {
    // Word j of a block is then byte j's low nibble (word 2j above) for j < 8, byte j - 8's high
    // nibble (word 2(j - 8) + 1) from 8 on.
    index = _mm512_permutexvar_epi16(_mm512_setr_epi32(0x00020000, 0x00060004, 0x000A0008, 0x000E000C, 0x00030001, 0x00070005,
                                                       0x000B0009, 0x000F000D, 0x00120010, 0x00160014, 0x001A0018, 0x001E001C,
                                                       0x00130011, 0x00170015, 0x001B0019, 0x001F001D),
                                     index);
  }
  _mm512_storeu_si512(out, _mm512_permutexvar_epi16(index, table));
}

// A pair whose scales were not found tame: returns false, having written nothing, where a table
// holds a product the instruction would round differently.
template <bool Split = false>
LOWBIT_AVX512_BF16_INLINE bool nvfp4_decode32_bf16(const std::uint8_t* in, bfloat16* out, __m512 values, float d0,
                                                    float d1) {
  const __m512 t0 = _mm512_mul_ps(values, _mm512_set1_ps(d0));
  const __m512 t1 = _mm512_mul_ps(values, _mm512_set1_ps(d1));
  const __m512i a0 = _mm512_and_si512(_mm512_castps_si512(t0), set1(0x7FFFFFFF));
  const __m512i a1 = _mm512_and_si512(_mm512_castps_si512(t1), set1(0x7FFFFFFF));
  const __m512i exponent = set1(0x7F800000);
  if ((_mm512_cmpgt_epi32_mask(_mm512_max_epi32(a0, a1), set1(0x7F7F7FFF)) |
       _mm512_mask_testn_epi32_mask(0xFEFE, a0, exponent) | _mm512_mask_testn_epi32_mask(0xFEFE, a1, exponent)) != 0)
    return false;
  nvfp4_lookup32_bf16<Split>(in, out, t0, t1);
  return true;
}

template <class In>
LOWBIT_TARGET_AVX512_BF16 inline void nvfp4_dequantize_bf16_impl(const In in_layout, std::size_t blocks, bfloat16* dst,
                                                                 const ::lowbit::nvfp4_options& o) {
  static_assert(!In::split, "planar layout");
  const __m512 values = e2m1_values16();
  alignas(64) float d_lane[16];
  for (std::size_t g = 0; g < blocks; g += 16) {
    const std::size_t count = blocks - g < 16 ? blocks - g : 16;
    const __m512 d = nvfp4_planar_scales(in_layout, g, count, o, d_lane);
    const __mmask16 used = static_cast<__mmask16>((1u << count) - 1u);
    const bool tame = (tame_scales(d) & used) == used;
    if (tame && count == 16) {  // the common case, without the per-pair tests
      for (std::size_t k = 0; k < 16; k += 2)
        nvfp4_lookup32_bf16(in_layout.element_ptr(g + k), dst + (g + k) * 16, _mm512_mul_ps(values, _mm512_set1_ps(d_lane[k])),
                            _mm512_mul_ps(values, _mm512_set1_ps(d_lane[k + 1])));
      continue;
    }
    for (std::size_t k = 0; k < count; k += 2) {
      const bool pair = count - k >= 2;
      const std::uint8_t* in = in_layout.element_ptr(g + k);
      bfloat16* out = dst + (g + k) * 16;
      if (pair && tame)
        nvfp4_lookup32_bf16(in, out, _mm512_mul_ps(values, _mm512_set1_ps(d_lane[k])),
                            _mm512_mul_ps(values, _mm512_set1_ps(d_lane[k + 1])));
      else if (!pair || !nvfp4_decode32_bf16(in, out, values, d_lane[k], d_lane[k + 1]))
        nvfp4_decode32<false, false>(in, out, values, d_lane[k], pair ? d_lane[k + 1] : 0.0f, pair);
    }
  }
}

// A group of ggml's blocks (below): where it starts, how many of its sub-blocks to decode (all, or
// fewer where a ggml block holds the scale byte 0xFF: then stop), and their scales D.
struct ggml_group {
  const std::uint8_t* p;
  std::size_t count;
  bool stop;
  __m512 d;
};

// The group of sub-blocks g.. (g a multiple of 16) of `blocks`, its D also in d_lane.
LOWBIT_BLOCK512_INLINE ggml_group ggml_group_at(const std::uint8_t* base, std::size_t g, std::size_t blocks,
                                                const ::lowbit::nvfp4_options& o, float* d_lane) {
  const std::uint8_t* p = base + g / 4 * 36;
  std::size_t count = blocks - g < 16 ? blocks - g : 16;  // a multiple of 4
  const __m512i d_index = _mm512_setr_epi32(0, 9, 18, 27, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512i lo, hi;
  if (count == 16) {
    lo = _mm512_loadu_si512(p);
    hi = _mm512_loadu_si512(p + 64);
  } else {
    const unsigned dwords = static_cast<unsigned>(count / 4 * 9);  // 9, 18 or 27
    lo = _mm512_maskz_loadu_epi32(static_cast<__mmask16>(dwords >= 16 ? 0xFFFFu : (1u << dwords) - 1u), p);
    hi = dwords > 16 ? _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << (dwords - 16)) - 1u), p + 64)
                     : _mm512_setzero_si512();
  }
  const __m128i sv = _mm512_castsi512_si128(_mm512_permutex2var_epi32(lo, d_index, hi));
  const unsigned ff = _mm_cmpeq_epi8_mask(sv, _mm_set1_epi8(-1)) & (count == 16 ? 0xFFFFu : (1u << count) - 1u);
  if (ff != 0) count = static_cast<std::size_t>(__builtin_ctz(ff)) / 4 * 4;
  const __m512i cc = _mm512_and_si512(_mm512_cvtepu8_epi32(sv), set1(0x7F));
  const __m512i codes = _mm512_maskz_mov_epi32(_mm512_cmpneq_epi32_mask(cc, set1(0x7F)), cc);
  const __m512 dec = decode_e4m3_16<true>(codes);
  const __m512 t = _mm512_set1_ps(o.tensor_scale);
  const __m512 d = nv_is_multiplier(o) ? _mm512_div_ps(dec, t) : _mm512_mul_ps(dec, t);
  _mm512_store_ps(d_lane, d);
  return {p, count, ff != 0, d};
}

// ggml's block_nvfp4 (d[4], qs[32]: 36 bytes), four ggml blocks (16 sub-blocks of 16) a group.
// The planar-style loop above reads each group's 16 scale bytes with four scalar loads and
// inserts, and derives each pair's address from the block index (b / 4 * 36 + ...): measured at
// 0.69x of the planar kernel. Here the group's 144 bytes come as two 64-byte loads (masked in
// the tail, so nothing past the last block is read) whose dwords 0, 9, 18, 27 are the four d[4]
// (vpermt2d), the 0xFF test is one byte compare, and the eight 16-byte element loads sit at
// constant offsets from the group pointer. Returns false when a ggml block holds the scale byte
// 0xFF (nvfp4_dequantize_scalar): the blocks before that ggml block are written, no later one.
template <bool Stream, class Dst>
LOWBIT_TARGET_AVX512 inline bool nvfp4_dequantize_ggml_impl(const std::uint8_t* base, std::size_t blocks, Dst* dst,
                                                            const ::lowbit::nvfp4_options& o) {
  const __m512 values = e2m1_values16();
  alignas(64) float d_lane[16];
  for (std::size_t g = 0; g < blocks; g += 16) {
    const ggml_group gr = ggml_group_at(base, g, blocks, o, d_lane);
    const std::uint8_t* p = gr.p;
    Dst* out = dst + g * 16;
    for (std::size_t q = 0; q < gr.count / 4; ++q) {
      nvfp4_decode32<Stream, true>(p + 36 * q + 4, out + 64 * q, values, d_lane[4 * q], d_lane[4 * q + 1], true);
      nvfp4_decode32<Stream, true>(p + 36 * q + 20, out + 64 * q + 32, values, d_lane[4 * q + 2], d_lane[4 * q + 3], true);
    }
    if (gr.stop) return false;
  }
  return true;
}

// The same into bfloat16 with AVX512_BF16: each pair of sub-blocks as nvfp4_dequantize_bf16_impl
// does a planar pair (the lookup's indices put in split-halves order by one more vpermw).
LOWBIT_TARGET_AVX512_BF16 inline bool nvfp4_dequantize_ggml_bf16(const std::uint8_t* base, std::size_t blocks,
                                                                 bfloat16* dst, const ::lowbit::nvfp4_options& o) {
  const __m512 values = e2m1_values16();
  alignas(64) float d_lane[16];
  for (std::size_t g = 0; g < blocks; g += 16) {
    const ggml_group gr = ggml_group_at(base, g, blocks, o, d_lane);
    const std::uint8_t* p = gr.p;
    const __mmask16 used = static_cast<__mmask16>((1u << gr.count) - 1u);
    bfloat16* out = dst + g * 16;
    if ((tame_scales(gr.d) & used) == used) {  // the common case, without the per-pair tests
      for (std::size_t q = 0; q < gr.count / 4; ++q) {
        nvfp4_lookup32_bf16<true>(p + 36 * q + 4, out + 64 * q, _mm512_mul_ps(values, _mm512_set1_ps(d_lane[4 * q])),
                                  _mm512_mul_ps(values, _mm512_set1_ps(d_lane[4 * q + 1])));
        nvfp4_lookup32_bf16<true>(p + 36 * q + 20, out + 64 * q + 32, _mm512_mul_ps(values, _mm512_set1_ps(d_lane[4 * q + 2])),
                                  _mm512_mul_ps(values, _mm512_set1_ps(d_lane[4 * q + 3])));
      }
    } else {
      for (std::size_t k = 0; k < gr.count; k += 2) {
        const std::uint8_t* in = p + 36 * (k / 4) + 4 + 8 * (k % 4);
        if (!nvfp4_decode32_bf16<true>(in, out + 16 * k, values, d_lane[k], d_lane[k + 1]))
          nvfp4_decode32<false, true>(in, out + 16 * k, values, d_lane[k], d_lane[k + 1], true);
      }
    }
    if (gr.stop) return false;
  }
  return true;
}

template <bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX512 inline bool nvfp4_dequantize_any(const In in, std::size_t blocks, Dst* dst,
                                                      const ::lowbit::nvfp4_options& o) {
  if constexpr (std::is_same<Dst, bfloat16>::value) {
    // Into bfloat16: the vcvtne2ps2bf16 forms, or else the AVX2 kernel's lookup of D and 1.5 D
    // rounded once per block (6.1-6.8 G elem/s on Zen 4, where this file's F/BW rounding of
    // every product ran at 4.4-4.5).
    if (::lowbit::detail::use_avx512_bf16()) {
      if constexpr (In::split) {
        return nvfp4_dequantize_ggml_bf16(in.base, blocks, dst, o);
      } else {
        nvfp4_dequantize_bf16_impl(in, blocks, dst, o);
        return true;
      }
    }
    return ::lowbit::kernels::block::avx2::detail::nvfp4_dequantize_impl<false>(in, blocks, dst, o);
  } else if constexpr (In::split) {
    return nvfp4_dequantize_ggml_impl<Stream>(in.base, blocks, dst, o);
  } else {
    nvfp4_dequantize_impl<Stream>(in, blocks, dst, o);
    return true;
  }
}

}  // namespace detail

// Entry points, as in kernels/nvfp4/avx2.hpp.

template <class Src, class Out>
LOWBIT_TARGET_AVX512 inline bool nvfp4_quantize(const Src* src, std::size_t n, const ::lowbit::nvfp4_options& o,
                                                const Out out) {
  const std::size_t blocks = n / 16;
  return with_element_rounding(o.element_rounding, [&](auto rm) {
    return detail::nvfp4_quantize_rm<decltype(rm)::value>(src, blocks, out, o);
  });
}
template <class Src>
LOWBIT_TARGET_AVX512 inline bool nvfp4_quantize(const Src* src, std::size_t n, const ::lowbit::nvfp4_options& o,
                                                std::uint8_t* elements, std::uint8_t* scales) {
  return nvfp4_quantize(src, n, o, planar_layout<std::uint8_t>{elements, scales, 8});
}

template <class Dst, class In>
LOWBIT_TARGET_AVX512 inline bool nvfp4_dequantize(const In in, std::size_t n, const ::lowbit::nvfp4_options& o,
                                                  Dst* dst) {
  if (detail::stream_output64(dst, n)) {
    if constexpr (std::is_same<Dst, float>::value) {
      const bool ok = detail::nvfp4_dequantize_any<true>(in, n / 16, dst, o);
      _mm_sfence();
      return ok;
    }
  }
  return detail::nvfp4_dequantize_any<false>(in, n / 16, dst, o);
}
template <class Dst>
LOWBIT_TARGET_AVX512 inline void nvfp4_dequantize(const std::uint8_t* elements, const std::uint8_t* scales,
                                                  std::size_t n, const ::lowbit::nvfp4_options& o, Dst* dst) {
  (void)nvfp4_dequantize(planar_layout<const std::uint8_t>{elements, scales, 8}, n, o, dst);
}

}  // namespace avx512
#endif  // LOWBIT_HAS_AVX512_KERNELS

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_KERNELS_NVFP4_AVX512_HPP
