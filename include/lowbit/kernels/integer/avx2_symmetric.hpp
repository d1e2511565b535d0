// lowbit: AVX2 kernels of the integer schemes, part 2 (internal): the fused symmetric minmax
// quantization (quantize_symmetric), whole groups in batches of 8 with the scales computed
// together. The proof that it gives make_int_codec's scales and the reference's codes:
// docs/kernels.md, "Fused symmetric quantization".
#ifndef LOWBIT_KERNELS_INTEGER_AVX2_SYMMETRIC_HPP
#define LOWBIT_KERNELS_INTEGER_AVX2_SYMMETRIC_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "avx2_table.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace int_detail {

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
LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE void sym_chunk_exact_store(const float* xc, const qctx& qc, __m256 scales,
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
  if (any_near(near, k)) return false;
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

LOWBIT_AVX2_INLINE sym_batch symmetric_scales(const int_symmetric_job& j, __m256i amax, std::size_t m, __m256 divisor);

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
  return symmetric_scales(j, amax, m, divisor);
}

// The scales of a batch of m <= 8 groups from their largest magnitudes (as bits, one lane each).
// (The AVX-512 path takes symmetric_batch whole: reading amax 16 floats per load measured no gain
// there, docs/performance.md "Zen 5".)
LOWBIT_AVX2_INLINE sym_batch symmetric_scales(const int_symmetric_job& j, __m256i amax, std::size_t m, __m256 divisor) {
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
LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE void symmetric_group(const int_symmetric_job& j, std::size_t g, float s,
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
  const grid_consts gk = make_grid(window_for(true, j.code_max), j.zero_point, j.code_max);
  const __m256 divisor = _mm256_set1_ps(j.divisor);
  const bool grid = q.fast && len % 32 == 0;  // a nearest mode
  if (first >= last) return last;
  // Software-pipelined: the next batch's absmax and scales are computed before this batch's codes,
  // so their division latency overlaps independent work.
  sym_batch next = symmetric_batch(j, first, last - first < 8 ? last - first : 8, divisor);
  const bool ahead = prefetches_batches(first, last, len);
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    if (ahead) prefetch_batch_after_next(j.x, g0, last, len);
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

}  // namespace int_detail

// The whole-matrix entry points below run inside the caller's IEEE scope (kernels/fp_env.hpp):
// the bulk call opens it once.

// Quantizes groups [first, last) of j; returns the first group it leaves to the caller (a group
// with NaN or Inf, one whose scale the format cannot hold, or one whose largest magnitude is below
// 2^-100 or from 2^126 up), or last. The caller runs the reference path on that group and calls again after it.
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
  return j.pack_nibbles ? int_detail::quantize_symmetric_impl<true>(j, first, last)
                        : int_detail::quantize_symmetric_impl<false>(j, first, last);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_INTEGER_AVX2_SYMMETRIC_HPP
