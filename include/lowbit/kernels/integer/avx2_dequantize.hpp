// lowbit: AVX2 kernels of the integer schemes, part 4 (internal): the fused dequantization of
// consecutive groups (dequantize_groups) to float32 or bfloat16, the stored parameters checked on
// the way as stored_int_codec does. Its 32-code helpers also serve kernels/ggml/avx2.hpp.
#ifndef LOWBIT_KERNELS_INTEGER_AVX2_DEQUANTIZE_HPP
#define LOWBIT_KERNELS_INTEGER_AVX2_DEQUANTIZE_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "avx2_table.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

namespace lowbit {
namespace kernels {
namespace avx2 {
namespace int_detail {

// ------------------------------------------------------------------------------------------------
// Fused dequantization of groups, 8 at a time: the stored parameters are checked as
// stored_int_codec does (finite and representable in the format; an integer zero-point in
// 0..2^b-1), then each group is dequantized with its broadcast parameters.

// Lanes of v that are finite and exactly representable in fmt (is_stored_scale).
LOWBIT_AVX2_INLINE __m256i stored_ok(__m256 v, scale_storage fmt) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i exp = _mm256_set1_epi32(0x7F800000);
  const __m256i finite = _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(b, exp), exp), _mm256_set1_epi32(-1));
  switch (fmt) {
    case scale_storage::fp32: return finite;
    case scale_storage::fp16: {
      const __m256 back = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      return _mm256_and_si256(finite, _mm256_castps_si256(_mm256_cmp_ps(back, v, _CMP_EQ_OQ)));
    }
    case scale_storage::bf16:
      return _mm256_and_si256(finite, _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0xFFFF)),
                                                         _mm256_setzero_si256()));
  }
  return finite;
}

// 32 nibble codes minus an integer zero-point (both 0..15, so the difference fits a signed byte)
// -> 32 results.
template <bool Stream, class Out>
LOWBIT_AVX2_INLINE void values32_small(__m256i codes, __m256i z8, __m256 s, Out* y) {
  const __m256i d = _mm256_sub_epi8(codes, z8);
  const __m128i lo = _mm256_castsi256_si128(d);
  const __m128i hi = _mm256_extracti128_si256(d, 1);
  put16<Stream>(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), s),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), s));
  put16<Stream>(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), s),
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), s));
}

// One group of nibbles (starting at an even element) with an integer zero-point.
template <bool Stream>
LOWBIT_AVX2_INLINE void dequantize_nibbles(const std::uint8_t* codes, std::size_t n, int zero_point, __m256 s,
                                           float* y) {
  const __m256i z8 = _mm256_set1_epi8(static_cast<char>(zero_point));
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) values32_small<Stream>(load_nibbles(codes + i / 2), z8, s, y + i);
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[16] = {};
    float yb[32];
    std::memcpy(cb, codes + i / 2, (m + 1) / 2);
    values32_small<false>(load_nibbles(cb), z8, s, yb);
    std::memcpy(y + i, yb, m * sizeof(float));
  }
}

// 32 codes (bytes 0..15, element order) -> their bfloat16 results, looked up in the low bytes and
// the high bytes of the 16 results (vpshufb reads the low 4 bits of each index byte).
LOWBIT_AVX2_INLINE void lookup32(__m256i codes, __m256i lo_bytes, __m256i hi_bytes, std::uint16_t* y) {
  __m256i w0, w1;
  words_of_bytes(_mm256_shuffle_epi8(lo_bytes, codes), _mm256_shuffle_epi8(hi_bytes, codes), &w0, &w1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), w0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 16), w1);
}

// The same group into bfloat16: its 16 values (u - z) * s, computed as values32_small computes
// each, rounded once as put16 rounds them, then every code looked up (lookup32): 8 instructions
// per 32 codes where rounding each result took about 40.
LOWBIT_AVX2_INLINE void dequantize_nibbles(const std::uint8_t* codes, std::size_t n, int zero_point, __m256 s,
                                           std::uint16_t* y) {
  const __m256i z = _mm256_set1_epi32(zero_point);
  const __m256 t0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), z)), s);
  const __m256 t1 =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15), z)), s);
  __m256i lo_bytes, hi_bytes;
  word_tables(pack_dwords_to_words(to_bf16_bits(t0), to_bf16_bits(t1)), &lo_bytes, &hi_bytes);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) lookup32(load_nibbles(codes + i / 2), lo_bytes, hi_bytes, y + i);
  if (i < n) {
    const std::size_t m = n - i;
    alignas(32) std::uint8_t cb[16] = {};
    std::uint16_t yb[32];
    std::memcpy(cb, codes + i / 2, (m + 1) / 2);
    lookup32(load_nibbles(cb), lo_bytes, hi_bytes, yb);
    std::memcpy(y + i, yb, m * sizeof(std::uint16_t));
  }
}

// The stored parameters of a batch of m <= 8 groups, checked: done groups from g0 are valid (the
// first invalid one is g0 + done, where stop != 0). Shared with the AVX-512 path (avx512.hpp).
struct dq_batch {
  alignas(32) float sv[8];  // scales
  alignas(32) float zf[8];  // zero-points or offsets as stored (0 without zeros)
  std::size_t done;
  std::uint32_t stop;
};

LOWBIT_AVX2_INLINE void dequant_params(const int_dequantize_job& j, std::size_t g0, std::size_t m, dq_batch& b) {
  const bool offsets = j.zeros != nullptr && j.zeros_are_offsets;
  const __m256i lanes = lane_mask(m);
  const __m256 s = _mm256_maskload_ps(j.scales + g0, lanes);
  __m256i ok = stored_ok(s, j.scale_format);
  __m256 zv = _mm256_setzero_ps();
  if (j.zeros != nullptr) {
    zv = _mm256_maskload_ps(j.zeros + g0, lanes);
    if (offsets) {
      ok = _mm256_and_si256(ok, stored_ok(zv, j.scale_format));
    } else {  // an integer in 0..code_max
      const __m256 in_range = _mm256_and_ps(_mm256_cmp_ps(zv, _mm256_setzero_ps(), _CMP_GE_OQ),
                                            _mm256_cmp_ps(zv, _mm256_set1_ps(static_cast<float>(j.code_max)), _CMP_LE_OQ));
      const __m256 integral =
          _mm256_cmp_ps(_mm256_round_ps(zv, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), zv, _CMP_EQ_OQ);
      ok = _mm256_and_si256(ok, _mm256_castps_si256(_mm256_and_ps(in_range, integral)));
    }
  }
  b.stop = ~lanes_of(ok) & ((1u << m) - 1u);
  b.done = b.stop != 0 ? lowest_bit(b.stop) : m;
  _mm256_store_ps(b.sv, s);
  _mm256_store_ps(b.zf, zv);
}

template <bool Nibbles, bool Stream, class Out>
LOWBIT_TARGET_AVX2 inline std::size_t dequantize_groups_impl(const int_dequantize_job& j, Out* y, std::size_t first,
                                                             std::size_t last) noexcept {
  const std::size_t len = j.group_length;
  const bool offsets = j.zeros != nullptr && j.zeros_are_offsets;
  for (std::size_t g0 = first; g0 < last; g0 += 8) {
    const std::size_t m = last - g0 < 8 ? last - g0 : 8;
    dq_batch b;
    dequant_params(j, g0, m, b);
    const std::size_t done = b.done;
    const float* sv = b.sv;
    const float* zf = b.zf;
    for (std::size_t k = 0; k < done; ++k) {
      const std::size_t g = g0 + k;
      const int zp = j.zeros == nullptr ? j.zero_point : offsets ? 0 : static_cast<int>(zf[k]);
      if (Nibbles && !offsets) {
        if constexpr (std::is_same<Out, float>::value)
          dequantize_nibbles<Stream>(j.codes + g * len / 2, len, zp, _mm256_set1_ps(sv[k]), y + g * len);
        else
          dequantize_nibbles(j.codes + g * len / 2, len, zp, _mm256_set1_ps(sv[k]), y + g * len);
      } else {
        const dctx d = make_dctx(sv[k], zp, offsets, zf[k]);
        const std::uint8_t* codes = Nibbles ? j.codes + g * len / 2 : j.codes + g * len;
        if constexpr (std::is_same<Out, std::uint16_t>::value) {
          if (!offsets && tame_scale(sv[k])) {
            dequantize_run<Nibbles, false, true>(codes, len, d, y + g * len);
            continue;
          }
        }
        dequantize_run<Nibbles, Stream>(codes, len, d, y + g * len);
      }
    }
    if (b.stop != 0) return g0 + done;
  }
  return last;
}

}  // namespace int_detail

// Dequantizes groups [first, last) of j; returns the first group whose stored parameters are not
// valid (the caller reports the reference's error), or last.
inline std::size_t dequantize_groups(const int_dequantize_job& j, std::size_t first, std::size_t last) noexcept {
  if (j.y_bf16 != nullptr) {
    return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y_bf16, first, last)
                            : int_detail::dequantize_groups_impl<false, false>(j, j.y_bf16, first, last);
  }
  if (int_detail::streams_f32(j.y, (last - first) * j.group_length, j.group_length)) {
    const std::size_t r = j.packed_nibbles ? int_detail::dequantize_groups_impl<true, true>(j, j.y, first, last)
                                           : int_detail::dequantize_groups_impl<false, true>(j, j.y, first, last);
    _mm_sfence();
    return r;
  }
  return j.packed_nibbles ? int_detail::dequantize_groups_impl<true, false>(j, j.y, first, last)
                          : int_detail::dequantize_groups_impl<false, false>(j, j.y, first, last);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_INTEGER_AVX2_DEQUANTIZE_HPP
