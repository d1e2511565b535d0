// lowbit: AVX-512 kernels of the integer schemes (internal): the whole-matrix paths of
// dispatch.hpp (quantize_symmetric, quantize_affine, dequantize_groups) with 16 floats per zmm,
// taken on the avx512 path (core/cpu.hpp). The bytes are the AVX2 paths' and so the reference's.
//
// What differs from AVX2, in one place: the passes that write the elements, and the affine
// reductions. Everything else per batch of 8 groups (one group per 32-bit lane: the symmetric
// reduction, the scales, zero-points, offsets and their checks, the decision which groups the
// grid may take) and everything rare (a group in a mode or length the grid does not take:
// stochastic or directed rounding, lengths not a multiple of 32, tiny or huge scales) is the AVX2
// code, inlined or called from here: avx2_symmetric.hpp's symmetric_batch and symmetric_group,
// avx2_affine.hpp's affine_params and affine_group, avx2_dequantize.hpp's dequant_params. Here:
//   - the affine reductions (min, max, NaN/Inf) read 16 floats per load (affine_batch);
//   - the grid rounding (avx2_table.hpp's group_grid; the proof is docs/kernels.md's) runs on
//     16 lanes, 64 values (one group, or two groups of 32) at a time; codes narrow by the same
//     saturating packs as on AVX2 and one vpermd (not vpmovusdb: two port-5 uops per 16 lanes);
//     nibbles pair up by vpmaddubsw and narrow by vpmovwb. A batch whose 8 groups the grid takes
//     runs as straight-line code (grid_batch); a lane that came near a half-integer is coded
//     by division (fix_near: the vector, before the narrowing, in groups of 32 and 64; in longer
//     groups the whole group again after it; AVX2 redoes its 32-value chunk by division);
//   - dequantization widens 16 codes with vpmovzxbd, masked loads and stores for the last partial
//     vector, and streams 64-byte stores where the AVX2 path streams 32-byte ones; nibbles with an
//     integer zero-point are looked up in the group's 16 values (vpermps) instead, and into
//     bfloat16 in those values rounded once (vpermw: 32 results per lookup);
//   - into bfloat16 with AVX512_BF16 (dequantize_groups_bf16), vcvtne2ps2bf16 rounds where
//     to_bf16 took about 7 instructions per 16 values: two nibble groups' tables at once, or 32
//     values of one code per byte, in groups whose scale keeps every value normal and small.
// Why not one template over the vector width: the target attribute (LOWBIT_TARGET_AVX2 or
// LOWBIT_TARGET_AVX512) is per function and cannot depend on a template parameter, and GCC and
// clang refuse to inline an AVX-512 intrinsic into an AVX2 function. A width-generic kernel would
// need its body stamped out twice by a macro, or its AVX2 instance compiled with AVX-512 enabled
// (which lets the compiler emit EVEX code on the AVX2 path). Instead, the per-batch code, which
// is most of the lines and all of the subtle ones, is shared as it is, and this file holds only
// the element loops (about 600 lines with their comments, against 1400 for the AVX2 kernels).
#ifndef LOWBIT_KERNELS_INTEGER_AVX512_HPP
#define LOWBIT_KERNELS_INTEGER_AVX512_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/cpu.hpp"
#include "avx2_affine.hpp"
#include "avx2_dequantize.hpp"
#include "avx2_symmetric.hpp"
#include "avx2_table.hpp"
#include "jobs.hpp"

#if LOWBIT_HAS_AVX512_KERNELS

#include <immintrin.h>


LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace avx512 {
namespace int_detail {

namespace a2 = avx2::int_detail;

// Lanes 0..n-1 (n <= 16).
LOWBIT_AVX512_INLINE __mmask16 tail16(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// ------------------------------------------------------------------------------------------------
// The reductions of a batch. Symmetric: each group's largest |x| is the AVX2 code's
// (a2::symmetric_batch): with 16 floats per load it measured 0.95-1.04x of it on Zen 5 and
// 0.88-0.95x on Zen 4 (docs/performance.md, "Zen 5"). Affine: each group's min, max and NaN/Inf
// with 16 floats per load, each group's vector folded to 8 lanes, then the AVX2 code's
// parameters (a2::affine_params): INT8 affine per token 9.2 -> 13.4 G elem/s in cache on Zen 5
// (there the AVX2 reduction's three accumulators per 8 values cost most). Groups whose length is
// not a multiple of 32, and long rows from DRAM (wide_reduction), take the AVX2 reduction whole
// (a2::affine_batch).

// Lane-wise min, max and x * 0 summed (+-0, or NaN where the group holds NaN or Inf) of a group
// of len values, len a multiple of 32, folded to 8 lanes: a2's lane_range with 16 floats per load.
LOWBIT_AVX512_INLINE void lane_range(const float* x, std::size_t len, __m256i& mn, __m256i& mx, __m256i& nf) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  __m512 mn0 = a, mx0 = a, nf0 = _mm512_mul_ps(a, zero);
  __m512 mn1 = b, mx1 = b, nf1 = _mm512_mul_ps(b, zero);
  for (std::size_t i = 32; i < len; i += 32) {
    const __m512 c = _mm512_loadu_ps(x + i), d = _mm512_loadu_ps(x + i + 16);
    mn0 = _mm512_min_ps(mn0, c);
    mx0 = _mm512_max_ps(mx0, c);
    nf0 = _mm512_fmadd_ps(c, zero, nf0);
    mn1 = _mm512_min_ps(mn1, d);
    mx1 = _mm512_max_ps(mx1, d);
    nf1 = _mm512_fmadd_ps(d, zero, nf1);
  }
  const __m512 lo = _mm512_min_ps(mn0, mn1), hi = _mm512_max_ps(mx0, mx1), f = _mm512_add_ps(nf0, nf1);
  mn = _mm256_castps_si256(_mm256_min_ps(_mm512_castps512_ps256(lo), _mm512_extractf32x8_ps(lo, 1)));
  mx = _mm256_castps_si256(_mm256_max_ps(_mm512_castps512_ps256(hi), _mm512_extractf32x8_ps(hi, 1)));
  nf = _mm256_castps_si256(_mm256_add_ps(_mm512_castps512_ps256(f), _mm512_extractf32x8_ps(f, 1)));
}

// The batch's parameters from its groups' folded reductions (a2::affine_batch's last step).
LOWBIT_AVX512_INLINE a2::aff_batch affine_params8(const int_affine_job& j, const __m256i mn[8], const __m256i mx[8],
                                                  const __m256i nf[8], std::size_t m) {
  return a2::affine_params(j, avx2::reduce8(mn, a2::min_ps_op{}), avx2::reduce8(mx, a2::max_ps_op{}),
                           avx2::reduce8(nf, a2::or_op{}), m);
}

// Whether the affine reductions of groups [first, last) read 16 floats per load: groups of a
// multiple of 32 values, and not rows beyond 512 values of an input beyond 1 MiB. Those (per
// token from DRAM) read 15 % slower that way than by the AVX2 reduction on Zen 5 (INT8 affine per
// token at 16M elements, 4.3 against 5.0 G elem/s, three alternating runs); in cache they gain
// the most (9.2 -> 13.4).
inline bool wide_reduction(std::size_t first, std::size_t last, std::size_t len) noexcept {
  return len % 32 == 0 && (len <= 512 || (last - first) * len * sizeof(float) < (std::size_t{1} << 20));
}

// wide: reduce 16 floats per load (wide_reduction), else the AVX2 code's reduction.
LOWBIT_AVX512_INLINE a2::aff_batch affine_batch(const int_affine_job& j, std::size_t g0, std::size_t m, bool wide) {
  const std::size_t len = j.group_length;
  if (!wide) return a2::affine_batch(j, g0, m);
  const float* x = j.x + g0 * len;
  __m256i mn[8], mx[8], nf[8];
  if (m == 8) {  // written out: in a loop over k the arrays stayed in memory, and 64-byte stores
                 // forward slowly to the reduction's loads (seen on the symmetric twin: 0.9x)
    lane_range(x, len, mn[0], mx[0], nf[0]);
    lane_range(x + len, len, mn[1], mx[1], nf[1]);
    lane_range(x + 2 * len, len, mn[2], mx[2], nf[2]);
    lane_range(x + 3 * len, len, mn[3], mx[3], nf[3]);
    lane_range(x + 4 * len, len, mn[4], mx[4], nf[4]);
    lane_range(x + 5 * len, len, mn[5], mx[5], nf[5]);
    lane_range(x + 6 * len, len, mn[6], mx[6], nf[6]);
    lane_range(x + 7 * len, len, mn[7], mx[7], nf[7]);
    return affine_params8(j, mn, mx, nf, m);
  }
  for (std::size_t k = 0; k < 8; ++k) {
    if (k < m) {
      lane_range(x + k * len, len, mn[k], mx[k], nf[k]);
    } else {
      mn[k] = mx[k] = nf[k] = _mm256_setzero_si256();
    }
  }
  return affine_params8(j, mn, mx, nf, m);
}

// ------------------------------------------------------------------------------------------------
// The grid rounding (avx2_table.hpp's grid_round and group_grid, 16 lanes)

struct grid_consts {
  __m512 grid;     // 1536.0f: its ulp is 2^-13
  __m512i bias;    // bits(1536) - w.half - zero_point * 2^13
  __m512i low;     // 0x1FFF
  __m512i cmax8;   // code_max as bytes
  __m512i limit;   // w.limit: the low bits of a word to code again lie below it
};

LOWBIT_AVX512_INLINE grid_consts make_grid16(a2::grid_window w, int zero_point, int code_max) {
  return grid_consts{_mm512_set1_ps(1536.0f), _mm512_set1_epi32(0x44C00000 - w.half - zero_point * 0x2000),
                     _mm512_set1_epi32(0x1FFF), _mm512_set1_epi8(static_cast<char>(code_max)),
                     _mm512_set1_epi32(w.limit)};
}

// The grid word of 16 values: code + zero-point in bits 13 up, the distance from a half-integer
// below.
LOWBIT_AVX512_INLINE __m512i grid_word(__m512 x, __m512 r, const grid_consts& k) {
  return _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_mul_ps(x, r), k.grid)), k.bias);
}

// 64 codes (element order) from four grid words: the code + zero-point of each lane, clamped to
// 0..255 by the same two saturating packs as avx2's pack_codes32, then to code_max; the packs
// leave dword j of 128-bit lane k holding elements 4k..4k+3 of vector j, which one vpermd puts
// back in order. (vpmovusdb narrows 16 lanes in two uops of port 5; this is four for 64.)
LOWBIT_AVX512_INLINE __m512i narrow64(__m512i u0, __m512i u1, __m512i u2, __m512i u3, const grid_consts& k) {
  const __m512i w01 = _mm512_packus_epi32(_mm512_srai_epi32(u0, 13), _mm512_srai_epi32(u1, 13));
  const __m512i w23 = _mm512_packus_epi32(_mm512_srai_epi32(u2, 13), _mm512_srai_epi32(u3, 13));
  const __m512i b = _mm512_min_epu8(_mm512_packus_epi16(w01, w23), k.cmax8);
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
}

// Stores 64 codes: bytes, or nibbles (pack_codes(4): c[2i] | c[2i+1] << 4).
template <bool Nibbles>
LOWBIT_AVX512_INLINE void store64(std::uint8_t* out, __m512i codes) {
  if (Nibbles) {
    const __m512i w = _mm512_maddubs_epi16(codes, _mm512_set1_epi16(0x1001));  // c[2i] + 16 c[2i+1]
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi16_epi8(w));
  } else {
    _mm512_storeu_si512(out, codes);
  }
}
template <bool Nibbles>
LOWBIT_AVX512_INLINE void store32(std::uint8_t* out, __m512i codes) {
  if (Nibbles) {
    const __m512i w = _mm512_maddubs_epi16(codes, _mm512_set1_epi16(0x1001));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(_mm512_cvtepi16_epi8(w)));
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(codes));
  }
}

// The lanes near a half-integer (the call's a2::grid_window) are rare but not negligible: with
// fp16 scales and the narrow window about one group of 32 in forty has one (the largest |x| / s
// lies within 2^-11 of D, and of a half-integer when D is one). Their codes are redone by
// division, as the reference defines them: y = (x - m) / s rounded once (m = 0 without an offset:
// x - 0 is x), then round_to_code's nearest mode on y, and put back into the grid word before the
// narrowing (a rounded integer, so the clamps after it are round_to_code's).

// The grid parameters of the 8 groups of a batch, one per lane: reciprocal, offset (0 without
// one), grid bias (bits(1536) - the window's half - zero_point * 2^13), and for the near lanes
// the scale and zero-point; and the call's mode (a nearest one: the grid takes no other). (The
// bias follows from the zero-point, but computed per group from it and broadcast from a general
// register the quantizers ran 6-10 % slower than broadcast from here.)
struct batch_grid {
  alignas(32) float r[8];
  alignas(32) float m[8];
  alignas(32) float s[8];
  alignas(32) std::int32_t bias[8];
  alignas(32) std::int32_t zp[8];
  rounding rm;
};

// What the near lanes of a group need: group g of batch p, whose scale, zero-point and offset
// fix_near reads only when a lane came near. (Passed as values, they were loaded for every 64
// values, ahead of the rare branch: INT4 g32 read 4-8 % slower on Zen 5.)
struct group_fix {
  const batch_grid* p;
  unsigned g;
};
LOWBIT_AVX512_INLINE group_fix fix_of(const batch_grid& p, unsigned g) { return group_fix{&p, g}; }

// Lanes of a grid word whose low bits say "near a half-integer" (avx2 group_grid's test).
LOWBIT_AVX512_INLINE __mmask16 near_lanes(__m512i u, const grid_consts& k) {
  return _mm512_cmplt_epi32_mask(_mm512_and_si512(u, k.low), k.limit);
}

// u with the near lanes (of the 16 values at x) replaced by the reference's code, in bits 13 up:
// round_to_code on |y| < 2^22, where n = trunc(y) and y - n are exact; the magnitude goes up past
// a half, and at a half as the mode says (nearest even: n odd; away: always; toward zero: never).
LOWBIT_AVX512_INLINE __m512i fix_near(__m512i u, const float* x, const grid_consts& k, const group_fix& f) {
  const __mmask16 near = near_lanes(u, k);
  if (near == 0) return u;
  const batch_grid& p = *f.p;
  const __m512 y =
      _mm512_div_ps(_mm512_sub_ps(_mm512_loadu_ps(x), _mm512_set1_ps(p.m[f.g])), _mm512_set1_ps(p.s[f.g]));
  const __m512i n = _mm512_cvttps_epi32(y);
  const __m512 a = _mm512_abs_ps(_mm512_sub_ps(y, _mm512_cvtepi32_ps(n)));
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512i one = _mm512_set1_epi32(1);
  __mmask16 up = _mm512_cmp_ps_mask(a, half, _CMP_GT_OQ);
  const __mmask16 tie = _mm512_cmp_ps_mask(a, half, _CMP_EQ_OQ);
  if (p.rm == rounding::nearest_even) up |= static_cast<__mmask16>(tie & _mm512_test_epi32_mask(n, one));
  if (p.rm == rounding::nearest_away) up |= tie;
  const __m512i step = _mm512_or_si512(_mm512_srai_epi32(_mm512_castps_si512(y), 31), one);  // sign(y) 1
  const __m512i code = _mm512_add_epi32(_mm512_mask_add_epi32(n, up, n, step), _mm512_set1_epi32(p.zp[f.g]));
  return _mm512_mask_mov_epi32(u, near, _mm512_slli_epi32(code, 13));
}

// The grid words of 64 consecutive values, the first 32 under (ra, ma, ka), the last 32 under
// (rb, mb, kb) (one group, or two groups of 32).
template <bool Offset>
LOWBIT_AVX512_INLINE void grid_words64(const float* x, __m512 ra, __m512 rb, __m512 ma, __m512 mb,
                                       const grid_consts& ka, const grid_consts& kb, __m512i u[4]) {
  __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
  __m512 v2 = _mm512_loadu_ps(x + 32), v3 = _mm512_loadu_ps(x + 48);
  if (Offset) {
    v0 = _mm512_sub_ps(v0, ma);
    v1 = _mm512_sub_ps(v1, ma);
    v2 = _mm512_sub_ps(v2, mb);
    v3 = _mm512_sub_ps(v3, mb);
  }
  u[0] = grid_word(v0, ra, ka);
  u[1] = grid_word(v1, ra, ka);
  u[2] = grid_word(v2, rb, kb);
  u[3] = grid_word(v3, rb, kb);
}

// The smaller low bits (near_lanes' distance) of two grid words, lane-wise.
LOWBIT_AVX512_INLINE __m512i nearness(__m512i a, __m512i b, const grid_consts& k) {
  return _mm512_min_epi32(_mm512_and_si512(a, k.low), _mm512_and_si512(b, k.low));
}

// 64 values as grid_words64 takes them: their codes by the grid, the near lanes by fix_near.
template <bool Nibbles, bool Offset>
LOWBIT_AVX512_INLINE void grid64(const float* x, __m512 ra, __m512 rb, __m512 ma, __m512 mb, const grid_consts& ka,
                                 const grid_consts& kb, const group_fix& fa, const group_fix& fb, std::uint8_t* out) {
  __m512i u[4];
  grid_words64<Offset>(x, ra, rb, ma, mb, ka, kb, u);
  const __m512i near = _mm512_min_epi32(nearness(u[0], u[1], ka), nearness(u[2], u[3], ka));
  if (__builtin_expect(_mm512_cmplt_epi32_mask(near, ka.limit) != 0, 0)) {
    u[0] = fix_near(u[0], x, ka, fa);
    u[1] = fix_near(u[1], x + 16, ka, fa);
    u[2] = fix_near(u[2], x + 32, kb, fb);
    u[3] = fix_near(u[3], x + 48, kb, fb);
  }
  store64<Nibbles>(out, narrow64(u[0], u[1], u[2], u[3], ka));
}

// avx2 group_grid on 16 lanes: the codes of one group of 32k values (64 at a time).
template <bool Nibbles, bool Offset>
LOWBIT_AVX512_INLINE void group_grid(const float* x, std::size_t len, __m512 r, __m512 m, const grid_consts& k,
                                     const group_fix& f, std::uint8_t* out) {
  constexpr std::size_t step = Nibbles ? 32 : 64;  // output bytes per 64 values
  std::size_t i = 0;
  for (; i + 64 <= len; i += 64) grid64<Nibbles, Offset>(x + i, r, r, m, m, k, k, f, f, out + i / 64 * step);
  if (i < len) {  // 32 left
    __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    if (Offset) {
      v0 = _mm512_sub_ps(v0, m);
      v1 = _mm512_sub_ps(v1, m);
    }
    const __m512i u0 = fix_near(grid_word(v0, r, k), x + i, k, f);
    const __m512i u1 = fix_near(grid_word(v1, r, k), x + i + 16, k, f);
    store32<Nibbles>(out + i / 64 * step, narrow64(u0, u1, u0, u1, k));
  }
}

// ------------------------------------------------------------------------------------------------
// The hot case: a batch of 8 groups of 32k values, each of which the grid takes, as
// straight-line code without calls (a call clobbers every zmm, and the general group loop below,
// which calls the long way for the groups the grid does not take, reloads its constants and
// spills around those calls). Groups of 32 and 64 fix their near lanes in place (grid64);
// longer ones note them over the whole group and code it again if any (in place, INT8 g128 read
// 0.92x; coded again in groups of 64, INT4 g64 0.86x: Zen 5, alternating runs).

LOWBIT_AVX512_INLINE __m256i grid_bias8(a2::grid_window w, __m256i zero_points) {
  return _mm256_sub_epi32(_mm256_set1_epi32(0x44C00000 - w.half), _mm256_slli_epi32(zero_points, 13));
}

// Group g of the batch at x (its len values) into out, by group_grid.
template <bool Nibbles, bool Offset>
LOWBIT_AVX512_INLINE void grid_group(const float* x, std::size_t len, const batch_grid& p, unsigned g, grid_consts k,
                                     std::uint8_t* out) {
  k.bias = _mm512_set1_epi32(p.bias[g]);
  group_grid<Nibbles, Offset>(x, len, _mm512_set1_ps(p.r[g]), _mm512_set1_ps(p.m[g]), k, fix_of(p, g), out);
}

template <bool Nibbles, bool Offset>
LOWBIT_AVX512_INLINE void grid_batch(const float* x, std::size_t len, const batch_grid& p, grid_consts ka,
                                     std::uint8_t* out) {
  constexpr std::size_t shift = Nibbles ? 1 : 0;  // output bytes = values >> shift
  if (len == 64) {  // one group per 64 values, its near lanes fixed in place (grid64)
    for (unsigned g = 0; g < 8; ++g) {
      ka.bias = _mm512_set1_epi32(p.bias[g]);
      const __m512 r = _mm512_set1_ps(p.r[g]), m = _mm512_set1_ps(p.m[g]);
      grid64<Nibbles, Offset>(x + 64 * g, r, r, m, m, ka, ka, fix_of(p, g), fix_of(p, g), out + (64 * g >> shift));
    }
    return;
  }
  if (len != 32) {  // each group coded as the grid gives it, then again by group_grid if a lane came near
    const __m512i none = _mm512_set1_epi32(0x7FFFFFFF);
    for (unsigned g = 0; g < 8; ++g) {
      const float* xg = x + g * len;
      std::uint8_t* og = out + (g * len >> shift);
      const __m512 r = _mm512_set1_ps(p.r[g]);
      const __m512 m = _mm512_set1_ps(p.m[g]);
      ka.bias = _mm512_set1_epi32(p.bias[g]);
      __m512i near = none;
      std::size_t i = 0;
      for (; i + 64 <= len; i += 64) {
        __m512i u[4];
        grid_words64<Offset>(xg + i, r, r, m, m, ka, ka, u);
        near = _mm512_min_epi32(near, _mm512_min_epi32(nearness(u[0], u[1], ka), nearness(u[2], u[3], ka)));
        store64<Nibbles>(og + (i >> shift), narrow64(u[0], u[1], u[2], u[3], ka));
      }
      if (i < len) {  // 32 left: the last 64 values, of which u[2], u[3] are these
        __m512i u[4];
        grid_words64<Offset>(xg + i - 32, r, r, m, m, ka, ka, u);
        near = _mm512_min_epi32(near, nearness(u[2], u[3], ka));
        store32<Nibbles>(og + (i >> shift), narrow64(u[2], u[3], u[2], u[3], ka));
      }
      if (__builtin_expect(_mm512_cmplt_epi32_mask(near, ka.limit) != 0, 0))
        group_grid<Nibbles, Offset>(xg, len, r, m, ka, fix_of(p, g), og);
    }
    return;
  }
  grid_consts kb = ka;
  for (unsigned g = 0; g < 8; g += 2) {  // two groups per 64 values
    ka.bias = _mm512_set1_epi32(p.bias[g]);
    kb.bias = _mm512_set1_epi32(p.bias[g + 1]);
    grid64<Nibbles, Offset>(x + 32 * g, _mm512_set1_ps(p.r[g]), _mm512_set1_ps(p.r[g + 1]), _mm512_set1_ps(p.m[g]),
                            _mm512_set1_ps(p.m[g + 1]), ka, kb, fix_of(p, g), fix_of(p, g + 1), out + (32 * g >> shift));
  }
}

// One group of a batch by group_grid, out of line (for the general loop, whose calls clobber the
// registers anyway).
template <bool Nibbles, bool Offset>
LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE void grid_one(const float* x, std::size_t len, const batch_grid& p, unsigned g,
                                                   const grid_consts& k, std::uint8_t* out) noexcept {
  grid_group<Nibbles, Offset>(x, len, p, g, k, out);
}

// Whether a quantization asks for each batch's lines ahead: as on AVX2 (a2::prefetches_batches),
// and here for groups of 32 too. With grid_batch the AVX-512 kernels outran the memory there: from
// DRAM (16M elements, Zen 5, medians of three alternating runs) INT8 g32 4.8 -> 5.2, INT4 g32
// 4.0 -> 4.1, INT4 affine g32 3.6 -> 3.8 G elem/s with the requests, against AVX2's 4.7-4.9 for
// INT8 g32.
inline bool prefetches_batches(std::size_t first, std::size_t last, std::size_t len) noexcept {
  return a2::prefetches_batches(first, last, len) ||
         (len == 32 && (last - first) * len * sizeof(float) >= (std::size_t{1} << 20));
}

// Where group g's codes go.
template <bool Nibbles>
LOWBIT_AVX512_INLINE std::uint8_t* codes_at(const int_quantize_io& j, std::size_t g) {
  return Nibbles ? j.codes + g * j.group_length / 2 : j.codes + g * j.group_length;
}

template <bool Nibbles>
LOWBIT_TARGET_AVX512 inline std::size_t quantize_symmetric_impl(const int_symmetric_job& j, std::size_t first,
                                                                std::size_t last) noexcept {
  if (first >= last) return last;
  const std::size_t len = j.group_length;
  int_group_codec c;
  c.scale = 1.0f;
  c.zero_point = j.zero_point;
  c.code_min = j.code_min;
  c.code_max = j.code_max;
  c.rm = j.rm;
  const a2::qctx q = a2::make_qctx(c);
  const a2::grid_window window = a2::window_for(true, j.code_max);
  const grid_consts gk = make_grid16(window, j.zero_point, j.code_max);
  const __m256 divisor = _mm256_set1_ps(j.divisor);
  const bool grid = q.fast && len % 32 == 0;  // a nearest mode
  batch_grid bg;
  bg.rm = j.rm;
  _mm256_store_ps(bg.m, _mm256_setzero_ps());
  _mm256_store_si256(reinterpret_cast<__m256i*>(bg.zp), _mm256_set1_epi32(j.zero_point));
  _mm256_store_si256(reinterpret_cast<__m256i*>(bg.bias), grid_bias8(window, _mm256_set1_epi32(j.zero_point)));
  a2::sym_batch next = a2::symmetric_batch(j, first, last - first < 8 ? last - first : 8, divisor);
  const bool ahead = prefetches_batches(first, last, len);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    if (ahead) a2::prefetch_batch_after_next(j.x, g0, last, len);
    const a2::sym_batch b = next;
    if (b.stop == 0 && g0 + 8 < last) next = a2::symmetric_batch(j, g0 + 8, last - g0 - 8 < 8 ? last - g0 - 8 : 8, divisor);
    const std::size_t done = b.stop != 0 ? a2::lowest_bit(b.stop) : m;
    const float* const sv = bg.s;
    const float* const rv = bg.r;
    _mm256_store_ps(bg.s, b.s);
    _mm256_store_ps(bg.r, b.r);
    _mm256_mask_storeu_ps(j.scales + g0, static_cast<__mmask8>((1u << done) - 1u), b.s);
    const std::uint32_t tight = grid ? b.tight : 0u;
    if (done == 8 && tight == 0xFFu) {
      grid_batch<Nibbles, false>(j.x + g0 * len, len, bg, gk, codes_at<Nibbles>(j, g0));
      continue;
    }
    for (unsigned k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      if (((tight >> k) & 1u) != 0) {
        grid_one<Nibbles, false>(j.x + g * len, len, bg, k, gk, codes_at<Nibbles>(j, g));
      } else {
        a2::symmetric_group<Nibbles>(j, g, sv[k], rv[k], codes_at<Nibbles>(j, g));
      }
    }
    if (b.stop != 0) return g0 + done;
  }
  return last;
}

template <bool Nibbles>
LOWBIT_TARGET_AVX512 inline std::size_t quantize_affine_impl(const int_affine_job& j, std::size_t first,
                                                             std::size_t last) noexcept {
  if (first >= last) return last;
  const std::size_t len = j.group_length;
  const bool nearest =
      j.rm == rounding::nearest_even || j.rm == rounding::nearest_away || j.rm == rounding::nearest_toward_zero;
  const bool grid = nearest && len % 32 == 0;
  const a2::grid_window window = a2::window_for(false, j.code_max);
  const grid_consts gk = make_grid16(window, 0, j.code_max);
  batch_grid bg;
  bg.rm = j.rm;
  const bool wide = wide_reduction(first, last, len);
  a2::aff_batch next = affine_batch(j, first, last - first < 8 ? last - first : 8, wide);
  const bool ahead = prefetches_batches(first, last, len);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    if (ahead) a2::prefetch_batch_after_next(j.x, g0, last, len);
    const a2::aff_batch b = next;
    if (b.stop == 0 && g0 + 8 < last) next = affine_batch(j, g0 + 8, last - g0 - 8 < 8 ? last - g0 - 8 : 8, wide);
    const std::size_t done = b.stop != 0 ? a2::lowest_bit(b.stop) : m;
    const float* const sv = bg.s;
    const float* const mv = bg.m;
    const std::int32_t* const zi = bg.zp;
    _mm256_store_ps(bg.s, b.s);
    _mm256_store_ps(bg.r, b.r);
    _mm256_store_ps(bg.m, b.m);
    _mm256_store_si256(reinterpret_cast<__m256i*>(bg.zp), b.zp);
    const __mmask8 stored = static_cast<__mmask8>((1u << done) - 1u);
    _mm256_mask_storeu_ps(j.scales + g0, stored, b.s);
    _mm256_mask_storeu_ps(j.zeros + g0, stored, b.z);
    const std::uint32_t tight = grid ? b.tight : 0u;
    _mm256_store_si256(reinterpret_cast<__m256i*>(bg.bias), grid_bias8(window, b.zp));
    if (done == 8 && tight == 0xFFu) {
      const float* x = j.x + g0 * len;
      if (j.offset) {
        grid_batch<Nibbles, true>(x, len, bg, gk, codes_at<Nibbles>(j, g0));
      } else {
        grid_batch<Nibbles, false>(x, len, bg, gk, codes_at<Nibbles>(j, g0));
      }
      continue;
    }
    for (unsigned k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      if (((tight >> k) & 1u) == 0) {
        a2::affine_group<Nibbles>(j, g, sv[k], zi[k], mv[k], codes_at<Nibbles>(j, g));
      } else if (j.offset) {
        grid_one<Nibbles, true>(j.x + g * len, len, bg, k, gk, codes_at<Nibbles>(j, g));
      } else {
        grid_one<Nibbles, false>(j.x + g * len, len, bg, k, gk, codes_at<Nibbles>(j, g));
      }
    }
    if (b.stop != 0) return g0 + done;
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
// Dequantization: avx2's dequantize_groups_impl (parameters checked by its dequant_params) with
// 16 values per vector.

// 16 codes (bytes) -> values, with an integer zero-point: (u - z) * s, as avx2 values8.
struct values_zp {
  __m512 s;
  __m512i z;
  LOWBIT_AVX512_INLINE __m512 operator()(__m128i codes) const {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(codes), z)), s);
  }
};

// ... with a float offset: u * s + m in double (u * s exact there), rounded once (avx2
// values8_offset).
struct values_offset {
  __m512d s, m;
  LOWBIT_AVX512_INLINE __m512 operator()(__m128i codes) const {
    const __m256 lo = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_cvtepu8_epi32(codes)), s), m));
    const __m256 hi = _mm512_cvtpd_ps(
        _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8))), s), m));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
  }
};

// bfloat16 bits of 16 finite-or-infinite values as avx2 to_bf16_bits rounds them (nearest even,
// +-Inf and overflow to +-max). Tame: values that cannot round to Inf (avx2 tame_scale), without
// the check.
template <bool Tame = false>
LOWBIT_AVX512_INLINE __m256i to_bf16(__m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  if constexpr (Tame) return _mm512_cvtepi32_epi16(r);
  const __mmask16 inf = _mm512_cmpeq_epi32_mask(_mm512_and_si512(r, _mm512_set1_epi32(0x7FFF)), _mm512_set1_epi32(0x7F80));
  r = _mm512_mask_sub_epi32(r, inf, r, _mm512_set1_epi32(1));  // Inf -> max finite
  return _mm512_cvtepi32_epi16(r);
}

template <bool Stream, bool Tame = false>
LOWBIT_AVX512_INLINE void put16(float* y, __m512 v) {
  if constexpr (Stream) {
    _mm512_stream_ps(y, v);
  } else {
    _mm512_storeu_ps(y, v);
  }
}
// Tame: bfloat16 results that cannot round to Inf (to_bf16<true>).
template <bool Stream, bool Tame = false>
LOWBIT_AVX512_INLINE void put16(std::uint16_t* y, __m512 v) {
  static_assert(!Stream, "bfloat16 outputs are not streamed");
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), to_bf16<Tame>(v));
}
template <bool Tame = false>
LOWBIT_AVX512_INLINE void put_masked(float* y, __mmask16 k, __m512 v) {
  _mm512_mask_storeu_ps(y, k, v);
}
template <bool Tame = false>
LOWBIT_AVX512_INLINE void put_masked(std::uint16_t* y, __mmask16 k, __m512 v) {
  _mm256_mask_storeu_epi16(y, k, to_bf16<Tame>(v));
}

// 16 bytes of nibbles -> 32 codes, element order (avx2 load_nibbles on a register).
LOWBIT_AVX512_INLINE __m256i nibbles_of(__m128i x) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(x, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), mask);
  return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

// n codes (bytes, or nibbles from an even element position) of one group -> n results. Tame:
// bfloat16 results that cannot round to Inf.
template <bool Nibbles, bool Stream, bool Tame = false, class Out, class F>
LOWBIT_AVX512_INLINE void dequantize_run(const std::uint8_t* codes, std::size_t n, const F& f, Out* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = Nibbles ? nibbles_of(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i / 2)))
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
    put16<Stream, Tame>(y + i, f(_mm256_castsi256_si128(c)));
    put16<Stream, Tame>(y + i + 16, f(_mm256_extracti128_si256(c, 1)));
  }
  if (i < n) {  // 1..31 left: masked loads and stores
    const std::size_t m = n - i;
    const __m256i c = Nibbles ? nibbles_of(_mm_maskz_loadu_epi8(tail16((m + 1) / 2), codes + i / 2))
                              : _mm256_maskz_loadu_epi8(static_cast<__mmask32>((std::uint64_t{1} << m) - 1u), codes + i);
    put_masked<Tame>(y + i, tail16(m < 16 ? m : 16), f(_mm256_castsi256_si128(c)));
    if (m > 16) put_masked<Tame>(y + i + 16, tail16(m - 16), f(_mm256_extracti128_si256(c, 1)));
  }
}

// One group of nibbles (from an even element) with an integer zero-point: the 16 possible values
// (u - z) * s are computed once, as values_zp computes each, and every code is looked up with
// vpermps (which reads the low 4 bits of its index: the low nibble of a zero-extended byte
// directly, the high one after a shift); vpermt2ps interleaves the two halves.
// 32 codes (16 bytes of nibbles) -> their 32 values in table.
template <bool Stream>
LOWBIT_AVX512_INLINE void nibbles32(const std::uint8_t* codes, __m512 table, float* y) {
  const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
  const __m512 even = _mm512_permutexvar_ps(d, table);
  const __m512 odd = _mm512_permutexvar_ps(_mm512_srli_epi32(d, 4), table);
  put16<Stream>(y, _mm512_permutex2var_ps(even, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), odd));
  put16<Stream>(y + 16,
                _mm512_permutex2var_ps(even, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), odd));
}

template <bool Stream>
LOWBIT_AVX512_INLINE void dequantize_nibbles(const std::uint8_t* codes, std::size_t n, __m512 table, float* y) {
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) nibbles32<Stream>(codes + i / 2, table, y + i);
  if (i < n) {  // 1..31 left
    const std::size_t m = n - i;
    const __m512i d = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(tail16((m + 1) / 2), codes + i / 2));
    const __m512 even = _mm512_permutexvar_ps(d, table);
    const __m512 odd = _mm512_permutexvar_ps(_mm512_srli_epi32(d, 4), table);
    put_masked(y + i, tail16(m < 16 ? m : 16), _mm512_permutex2var_ps(even, first, odd));
    if (m > 16) put_masked(y + i + 16, tail16(m - 16), _mm512_permutex2var_ps(even, second, odd));
  }
}

// The same into bfloat16, from a 32-word table of results: Upper selects its words 16..31, else
// 0..15 (the F/BW path repeats one group's table in both halves; the AVX512_BF16 one holds two
// groups' tables). vpermw reads the low 5 bits of a word index, bit 4 the half. A dword per byte
// b, plus b << 12, holds b's low nibble in its low word and its high nibble in its high word
// (the 32 indices of 16 bytes in element order); one vpternlogd sets both words' bit 4.
template <bool Upper>
LOWBIT_AVX512_INLINE __m512i nibble_words(__m512i d) {
  const __m512i t = _mm512_slli_epi32(d, 12);
  if constexpr (Upper) return _mm512_ternarylogic_epi32(d, t, _mm512_set1_epi32(0x00100010), 0xFE);  // d | t | 16
  return _mm512_ternarylogic_epi32(d, t, _mm512_set1_epi32(~0x00100010), 0xA8);                  // (d | t) & ~16
}

template <bool Upper>
LOWBIT_AVX512_INLINE void lookup_nibbles(const std::uint8_t* codes, std::size_t n, __m512i words, std::uint16_t* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i / 2)));
    _mm512_storeu_si512(y + i, _mm512_permutexvar_epi16(nibble_words<Upper>(d), words));
  }
  if (i < n) {  // 1..31 left
    const std::size_t m = n - i;
    const __m512i d = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(tail16((m + 1) / 2), codes + i / 2));
    _mm512_mask_storeu_epi16(y + i, static_cast<__mmask32>((std::uint64_t{1} << m) - 1u),
                             _mm512_permutexvar_epi16(nibble_words<Upper>(d), words));
  }
}

// The 16 values (u - z) * s of a nibble group with an integer zero-point, as values_zp computes
// each.
LOWBIT_AVX512_INLINE __m512 nibble_values(const values_zp& f) {
  const __m512i all = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(all, f.z)), f.s);
}

// Group k's parameters, with an integer zero-point (or none).
LOWBIT_AVX512_INLINE values_zp zp_values(const int_dequantize_job& j, const a2::dq_batch& b, std::size_t k) {
  const int zp = j.zeros == nullptr ? j.zero_point : static_cast<int>(b.zf[k]);
  return values_zp{_mm512_set1_ps(b.sv[k]), _mm512_set1_epi32(zp)};
}

// Group k of batch b (group g of the job) into y, the job's output (avx2 dequantize_groups_impl's
// loop body with 16 values per vector).
template <bool Nibbles, bool Stream, class Out>
LOWBIT_AVX512_INLINE void dequantize_group(const int_dequantize_job& j, const a2::dq_batch& b, std::size_t k,
                                           std::size_t g, Out* y) {
  const std::size_t len = j.group_length;
  const std::uint8_t* codes = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
  if (j.zeros != nullptr && j.zeros_are_offsets) {
    const values_offset f{_mm512_set1_pd(static_cast<double>(b.sv[k])), _mm512_set1_pd(static_cast<double>(b.zf[k]))};
    dequantize_run<Nibbles, Stream>(codes, len, f, y + g * len);
    return;
  }
  const values_zp f = zp_values(j, b, k);
  if constexpr (!Nibbles) {
    if constexpr (std::is_same<Out, std::uint16_t>::value) {
      if (a2::tame_scale(b.sv[k])) return dequantize_run<Nibbles, Stream, true>(codes, len, f, y + g * len);
    }
    dequantize_run<Nibbles, Stream>(codes, len, f, y + g * len);
  } else if constexpr (std::is_same<Out, float>::value) {
    dequantize_nibbles<Stream>(codes, len, nibble_values(f), y + g * len);
  } else {  // the 16 values rounded once (to_bf16, as put16 rounds each), in both halves
    lookup_nibbles<false>(codes, len, _mm512_broadcast_i64x4(to_bf16(nibble_values(f))), y + g * len);
  }
}

template <bool Nibbles, bool Stream, class Out>
LOWBIT_TARGET_AVX512 inline std::size_t dequantize_groups_impl(const int_dequantize_job& j, Out* y, std::size_t first,
                                                               std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  const bool offsets = j.zeros != nullptr && j.zeros_are_offsets;
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    a2::dq_batch b;
    a2::dequant_params(j, g0, m, b);
    if constexpr (Nibbles && std::is_same<Out, float>::value) {
      // The hot case (GPTQ, AWQ) without dequantize_group's tests; groups of 32 as one step each
      // (a loop of one pass per group measured 0.65x of this).
      if (!offsets && len == 32) {
        for (std::size_t k = 0; k < b.done; ++k)
          nibbles32<Stream>(j.codes + (g0 + k) * 16, nibble_values(zp_values(j, b, k)), y + (g0 + k) * 32);
        if (b.stop != 0) return g0 + b.done;
        continue;
      }
    }
    for (std::size_t k = 0; k < b.done; ++k) dequantize_group<Nibbles, Stream>(j, b, k, g0 + k, y);
    if (b.stop != 0) return g0 + b.done;
  }
  return last;
}

// Into bfloat16 with AVX512_BF16 (use_avx512_bf16): vcvtne2ps2bf16 rounds 32 values where to_bf16
// rounds 16 in about 7 instructions. It rounds as to_bf16 does (nearest even on the bits) but for
// float subnormals, which it reads as zero, and magnitudes from 0x7F7F8000 up, which it takes to
// Inf where to_bf16 saturates (docs/kernels.md, "float32 -> bfloat16 with AVX512_BF16"). With an integer
// zero-point a value is (u - z) * s with u - z an integer of magnitude at most 255, so a scale
// with s = 0 or 2^-126 <= |s| < 2^119 (tame_scales) gives neither. Those groups go through here,
// the others (offsets, tiny or huge scales) through dequantize_group:
//   - nibbles: two groups' 16 values rounded by one instruction into one 32-word table (a lone
//     group's twice), looked up as on the F/BW path;
//   - bytes: 32 values a time, rounded by one instruction.

// The lanes of the batch's scales that are tame.
LOWBIT_AVX512_INLINE unsigned tame_scales(const a2::dq_batch& b) {
  const __m256i a = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.sv)), _mm256_set1_epi32(0x7FFFFFFF));
  const __mmask8 normal = _mm256_cmpge_epu32_mask(a, _mm256_set1_epi32(0x00800000)) &
                          _mm256_cmplt_epu32_mask(a, _mm256_set1_epi32(0x7B000000));  // 2^-126, 2^119
  return static_cast<unsigned>(normal | _mm256_cmpeq_epi32_mask(a, _mm256_setzero_si256()));
}

LOWBIT_AVX512_BF16_INLINE void dequantize_bytes_bf16(const std::uint8_t* codes, std::size_t n, const values_zp& f,
                                                     std::uint16_t* y) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
    _mm512_storeu_si512(y + i, (__m512i)_mm512_cvtne2ps_pbh(f(_mm256_extracti128_si256(c, 1)), f(_mm256_castsi256_si128(c))));
  }
  if (i < n) {  // 1..31 left
    const __mmask32 k = static_cast<__mmask32>((std::uint64_t{1} << (n - i)) - 1u);
    const __m256i c = _mm256_maskz_loadu_epi8(k, codes + i);
    _mm512_mask_storeu_epi16(y + i, k,
                             (__m512i)_mm512_cvtne2ps_pbh(f(_mm256_extracti128_si256(c, 1)), f(_mm256_castsi256_si128(c))));
  }
}

template <bool Nibbles>
LOWBIT_TARGET_AVX512_BF16 inline std::size_t dequantize_groups_bf16(const int_dequantize_job& j, std::size_t first,
                                                                    std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  std::uint16_t* y = j.y_bf16;
  const bool offsets = j.zeros != nullptr && j.zeros_are_offsets;
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    a2::dq_batch b;
    a2::dequant_params(j, g0, m, b);
    const unsigned tame = offsets ? 0u : tame_scales(b);
    for (std::size_t k = 0; k < b.done;) {
      const std::size_t g = g0 + k;
      if ((tame >> k & 1u) == 0) {
        dequantize_group<Nibbles, false>(j, b, k++, g, y);
        continue;
      }
      if constexpr (Nibbles) {
        const __m512 t0 = nibble_values(zp_values(j, b, k));
        if (k + 1 < b.done && (tame >> (k + 1) & 1u) != 0) {
          const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(nibble_values(zp_values(j, b, k + 1)), t0);
          lookup_nibbles<false>(j.codes + g * len / 2, len, words, y + g * len);
          lookup_nibbles<true>(j.codes + (g + 1) * len / 2, len, words, y + (g + 1) * len);
          k += 2;
        } else {
          lookup_nibbles<false>(j.codes + g * len / 2, len, (__m512i)_mm512_cvtne2ps_pbh(t0, t0), y + g * len);
          ++k;
        }
      } else {
        dequantize_bytes_bf16(j.codes + g * len, len, zp_values(j, b, k), y + g * len);
        ++k;
      }
    }
    if (b.stop != 0) return g0 + b.done;
  }
  return last;
}

}  // namespace int_detail

// The entry points (dispatch.hpp), in the caller's IEEE scope as the AVX2 ones.

// avx2::quantize_symmetric's contract. (INT4 in groups of 32 packed to nibbles went to the AVX2
// kernel while the AVX-512 one read 0.83-0.98x of it on Zen 4; with grid_batch it reads 1.06x on
// Zen 5: docs/performance.md, "Zen 5".)
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_symmetric_impl<true>(j, first, last)
                        : int_detail::quantize_symmetric_impl<false>(j, first, last);
}

// avx2::quantize_affine's contract.
inline std::size_t quantize_affine(const int_affine_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_affine_impl<true>(j, first, last)
                        : int_detail::quantize_affine_impl<false>(j, first, last);
}

// avx2::dequantize_groups's contract. Large float outputs are written with non-temporal stores
// when every store is a whole aligned zmm (y 64-byte aligned, groups a multiple of 16); one that
// only the AVX2 path can stream (32-byte alignment) goes there.
inline std::size_t dequantize_groups(const int_dequantize_job& j, std::size_t first, std::size_t last) noexcept {
  if (j.y_bf16 != nullptr) {
    if (::lowbit::detail::use_avx512_bf16())
      return j.packed_nibbles ? int_detail::dequantize_groups_bf16<true>(j, first, last)
                              : int_detail::dequantize_groups_bf16<false>(j, first, last);
    return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y_bf16, first, last)
                            : int_detail::dequantize_groups_impl<false, false>(j, j.y_bf16, first, last);
  }
  if ((last - first) * j.group_length >= avx2::stream_threshold_bytes / sizeof(float)) {
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(j.y);
    if (a % 64 == 0 && j.group_length % 16 == 0) {
      const std::size_t r = j.packed_nibbles ? int_detail::dequantize_groups_impl<true, true>(j, j.y, first, last)
                                             : int_detail::dequantize_groups_impl<false, true>(j, j.y, first, last);
      _mm_sfence();
      return r;
    }
    if (avx2::int_detail::streams_f32(j.y, (last - first) * j.group_length, j.group_length))
      return avx2::dequantize_groups(j, first, last);
  }
  return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y, first, last)
                          : int_detail::dequantize_groups_impl<false, false>(j, j.y, first, last);
}

}  // namespace avx512
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_KERNELS

#endif  // LOWBIT_KERNELS_INTEGER_AVX512_HPP
