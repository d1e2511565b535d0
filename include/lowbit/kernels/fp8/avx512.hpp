// lowbit: AVX-512 kernels of the scaled FP8 scheme (F, BW, DQ, VL), bit-identical to
// kernels/fp8/scalar.hpp. The same algorithms as kernels/fp8/avx2.hpp (read its header first), 64
// elements per step in four zmm of 16 lanes:
//
//  amax_tile        an unsigned maximum of the float bits with the sign cleared, 16 lanes.
//  quantize_tile    x * r (vmulps), or x / s as x * r checked by near_decision over the 64 lanes
//                   and redone with vdivps where a lane might encode differently, or x / s in every
//                   step (stochastic rounding, where every discarded bit counts, and scales above
//                   2^126, whose reciprocals are subnormal); the quotients go straight into the
//                   AVX-512 conversion encoder's block (kernels/convert/avx512.hpp: path 1,
//                   encode_block, under nearest-even and toward zero; path 2, encode_fast_block,
//                   or path 3 from a copy under the other modes), never to memory. Every rounding
//                   mode and policy the AVX2 kernel takes.
//  dequantize_tile  with VBMI, the codes' exact values looked up in byte tables (the conversion
//                   decoder's vbmi_decode64) times the scale; without, the float16-twin widening
//                   (vcvtph2ps of 16 lanes) times the scale with the twin's power of two folded in.
//                   Stored as float32 (streaming from DRAM), or rounded to bfloat16 / float16 as
//                   encode() rounds (into bfloat16 with VBMI and AVX512_BF16: vcvtne2ps2bf16
//                   where a block's products cannot be subnormal or overflow).
//
// Callers run them inside an IEEE scope (kernels/fp_env.hpp), as for the scalar reference.
#ifndef LOWBIT_KERNELS_FP8_AVX512_HPP
#define LOWBIT_KERNELS_FP8_AVX512_HPP

#include "avx2.hpp"

#if LOWBIT_HAS_AVX512_KERNELS

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../convert/avx512.hpp"

LOWBIT_AVX512_WARNINGS_BEGIN

namespace lowbit {
namespace kernels {
namespace fp8_avx512 {

namespace detail {

// 16 source values -> their float32 values (exact widening for the 16-bit types).
template <class From>
LOWBIT_AVX512_INLINE __m512 load16(const From* p) {
  return _mm512_castsi512_ps(avx512::detail::load16(p));
}

template <class From>
LOWBIT_AVX512_INLINE std::uint32_t amax_bits(const From* x, std::size_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(load16(x + i)), abs_mask));
    m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(load16(x + i + 16)), abs_mask));
    m2 = _mm512_max_epu32(m2, _mm512_and_si512(_mm512_castps_si512(load16(x + i + 32)), abs_mask));
    m3 = _mm512_max_epu32(m3, _mm512_and_si512(_mm512_castps_si512(load16(x + i + 48)), abs_mask));
  }
  for (; i + 16 <= n; i += 16) m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(load16(x + i)), abs_mask));
  std::uint32_t r = _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3)));
  for (; i < n; ++i) {
    const std::uint32_t b = fp8_ref::magnitude_bits(x[i]);
    r = b > r ? b : r;
  }
  return r;
}

// fp8_avx2::detail::near_decision over 64 lanes: whether a lane of q0..q3 lies within 4 of a
// multiple of 2^K (K = 22 - M), i.e. (q + 4) << (32 - K) below 2^(35 - K) as an unsigned value.
template <int M>
LOWBIT_AVX512_INLINE bool near_decision(__m512i q0, __m512i q1, __m512i q2, __m512i q3) {
  constexpr int K = 22 - M;
  const __m512i four = _mm512_set1_epi32(4);
  const __m512i a = _mm512_min_epu32(_mm512_slli_epi32(_mm512_add_epi32(q0, four), 32 - K),
                                     _mm512_slli_epi32(_mm512_add_epi32(q1, four), 32 - K));
  const __m512i b = _mm512_min_epu32(_mm512_slli_epi32(_mm512_add_epi32(q2, four), 32 - K),
                                     _mm512_slli_epi32(_mm512_add_epi32(q3, four), 32 - K));
  return _mm512_cmplt_epu32_mask(_mm512_min_epu32(a, b), _mm512_set1_epi32(static_cast<int>(1u << (35 - K)))) != 0;
}

// 64 quotients (float32 bit patterns) -> their codes at dst, as the conversion encoder's encode_at
// takes them: path 1 under the modes vcvtps2dq rounds in, else path 2 where the block qualifies,
// else path 3 from a copy (rb: the 64 random words; zeros under the modes that read none).
template <class F, rounding RM>
LOWBIT_AVX512_INLINE void encode_quotients(__m512i q0, __m512i q1, __m512i q2, __m512i q3, const std::uint32_t* rb,
                                           std::uint8_t* dst, const avx512::detail::encode_vectors& v) {
  constexpr auto bytes = avx2::detail::layout::bytes;
  if constexpr (avx512::detail::path1_mode<RM>) {
    avx512::detail::encode_block<F, RM, bytes>(q0, q1, q2, q3, dst, v);
  } else {
    if constexpr (avx2::detail::fast_path<F, RM>::available)
      if (avx512::detail::encode_fast_block<F, RM, bytes>(q0, q1, q2, q3, rb, dst, v)) return;
    alignas(64) float quotients[64];
    _mm512_store_si512(quotients, q0);
    _mm512_store_si512(quotients + 16, q1);
    _mm512_store_si512(quotients + 32, q2);
    _mm512_store_si512(quotients + 48, q3);
    avx512::detail::encode_general_outlined<F, RM, bytes>(quotients, rb, dst, v);
  }
}

// The quotients x / s of the 64 values x0..x3.
LOWBIT_AVX512_INLINE void divide4(__m512 x0, __m512 x1, __m512 x2, __m512 x3, __m512 s, __m512i* q0, __m512i* q1,
                                  __m512i* q2, __m512i* q3) {
  *q0 = _mm512_castps_si512(_mm512_div_ps(x0, s));
  *q1 = _mm512_castps_si512(_mm512_div_ps(x1, s));
  *q2 = _mm512_castps_si512(_mm512_div_ps(x2, s));
  *q3 = _mm512_castps_si512(_mm512_div_ps(x3, s));
}

// 64 values at p, scaled and encoded into dst: x * r; with Divide, x / s where near_decision says
// so, or in every step (always).
template <class F, rounding RM, bool Divide, class From>
LOWBIT_AVX512_INLINE void scaled_step(const From* p, __m512 s, __m512 r, bool always, const std::uint32_t* rb,
                                      std::uint8_t* dst, const avx512::detail::encode_vectors& v) {
  const __m512 x0 = load16(p), x1 = load16(p + 16), x2 = load16(p + 32), x3 = load16(p + 48);
  __m512i q0, q1, q2, q3;
  if (Divide && always) {
    divide4(x0, x1, x2, x3, s, &q0, &q1, &q2, &q3);
  } else {
    q0 = _mm512_castps_si512(_mm512_mul_ps(x0, r));
    q1 = _mm512_castps_si512(_mm512_mul_ps(x1, r));
    q2 = _mm512_castps_si512(_mm512_mul_ps(x2, r));
    q3 = _mm512_castps_si512(_mm512_mul_ps(x3, r));
    if (Divide && near_decision<F::mantissa_bits>(q0, q1, q2, q3)) divide4(x0, x1, x2, x3, s, &q0, &q1, &q2, &q3);
  }
  encode_quotients<F, RM>(q0, q1, q2, q3, rb, dst, v);
}

// One run of n values at x, scaled and encoded into q (always: x / s in every step, with Divide).
// indexed: the scale of the 64 values at x + i is scales[i >> shift] (runs of whole steps in
// blocks of 2^shift >= 64 elements). stream: the 64-byte aligned steps go out with non-temporal
// stores. rb: the run's random bits under stochastic rounding (null: all zero).
template <class F, rounding RM, bool Divide, class From>
LOWBIT_AVX512_INLINE void quantize_run(const From* x, std::size_t n, const float* scales, const float* reciprocals,
                                       bool always, bool indexed, unsigned shift, const std::uint32_t* rb,
                                       std::uint8_t* q, bool stream, std::size_t next,
                                       const avx512::detail::encode_vectors& v) {
  using avx512::detail::random_at;
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(From);
  // The source's lines a few steps ahead (as the conversion encoders do), into L2, or, from DRAM,
  // one run or band ahead (next: fp8_avx2::detail::run_distance): one request per line and step,
  // whose distance and end are set here (a second test in the loop cost 7-12 % in cache).
  const std::size_t distance = next != 0 ? next : ahead;
  const std::size_t prefetch_end = next != 0 ? n : n > ahead ? n - ahead : 0;
  __m512 s = _mm512_set1_ps(scales[0]), r = _mm512_set1_ps(reciprocals[0]);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (indexed) {
      const std::size_t j = i >> shift;
      s = _mm512_set1_ps(scales[j]);
      r = _mm512_set1_ps(reciprocals[j]);
    }
    if (i + 64 <= prefetch_end) avx2::prefetch_lines_l2(x + i + distance, 64 * sizeof(From));
    if (RM == rounding::stochastic && rb != nullptr && i + ahead + 64 <= n)
      for (std::size_t b = 0; b < 64 * sizeof(std::uint32_t); b += 64)
        _mm_prefetch(reinterpret_cast<const char*>(rb + i + ahead) + b, _MM_HINT_T0);
    if (stream && (reinterpret_cast<std::uintptr_t>(q + i) & 63u) == 0) {
      alignas(64) std::uint8_t stage[64];
      scaled_step<F, RM, Divide>(x + i, s, r, always, random_at(rb, i), stage, v);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(q + i), _mm512_load_si512(stage));
    } else {
      scaled_step<F, RM, Divide>(x + i, s, r, always, random_at(rb, i), q + i, v);
    }
  }
  if (i < n) {  // not indexed: the zero-padded tail (its padding codes are not copied back)
    From in[64] = {};
    std::uint32_t bits[64] = {};
    alignas(64) std::uint8_t out[64];
    std::memcpy(static_cast<void*>(in), x + i, (n - i) * sizeof(From));
    if (RM == rounding::stochastic && rb != nullptr) std::memcpy(bits, rb + i, (n - i) * sizeof(std::uint32_t));
    scaled_step<F, RM, Divide>(in, s, r, always, bits, out, v);
    std::memcpy(q + i, out, n - i);
  }
}

template <class F, rounding RM, bool Divide, class From>
LOWBIT_TARGET_AVX512 void quantize_runs(const From* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                        std::size_t block_cols, const float* scales, const float* reciprocals,
                                        bool always, unsigned shift, const policy& p, const std::uint32_t* random_bits,
                                        std::uint8_t* q, fp8_traffic traffic) noexcept {
  const bool stream = traffic != fp8_traffic::cached;
  avx2::detail::encode_setup setup = avx2::detail::make_setup<F>(p);  // as the encoder's encode_mode
  if constexpr (avx512::detail::path1_mode<RM>)
    avx2::detail::make_direct_setup<F, RM>(setup);
  else if constexpr (avx2::detail::fast_path<F, RM>::available)
    setup.t_top = avx2::detail::fast_t_top<F, RM>(setup);
  const avx512::detail::encode_vectors v = avx512::detail::vectors_of(setup);
  // vcvtps2dq rounds as MXCSR.RC says (as in the conversion encoder).
  const ieee_scope_traceless env;
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t at = row * ld;
    const std::uint32_t* rb = random_bits != nullptr ? random_bits + at : nullptr;
    if (shift != 0) {
      quantize_run<F, RM, Divide>(x + at, cols, scales, reciprocals, always, true, shift, rb, q + at, stream,
                                  fp8_avx2::detail::run_distance<From>(cols, ld, rows, cols, traffic), v);
      continue;
    }
    for (std::size_t c = 0, j = 0; c < cols; c += block_cols, ++j) {
      const std::size_t n = cols - c < block_cols ? cols - c : block_cols;
      quantize_run<F, RM, Divide>(x + at + c, n, scales + j, reciprocals + j, always, false, 0,
                                  rb != nullptr ? rb + c : nullptr, q + at + c, stream,
                                  fp8_avx2::detail::run_distance<From>(n, ld, rows, cols, traffic), v);
    }
  }
  if (stream) _mm_sfence();
}

// (The masked form: GCC's unmasked _mm512_cvtps_ph passes -1 as a mask, which -Wsign-conversion flags.)
constexpr __mmask16 all16 = static_cast<__mmask16>(0xFFFF);

// 16 float products -> the destination, rounded as fp8_ref::store_value does.
template <bool Stream>
LOWBIT_AVX512_INLINE void store16(float* y, __m512 v) {
  if constexpr (Stream)
    _mm512_stream_ps(y, v);
  else
    _mm512_storeu_ps(y, v);
}
template <bool Stream>
LOWBIT_AVX512_INLINE void store16(bfloat16* y, __m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i a = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(a, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)), 16);
  r = _mm512_min_epu32(r, _mm512_set1_epi32(0x7F7F));
  r = _mm512_or_si512(r, _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x8000)));
  r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7F800000)), _mm512_set1_epi32(0x7FFF));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm512_cvtepi32_epi16(r));
}
template <bool Stream>
LOWBIT_AVX512_INLINE void store16(float16* y, __m512 v) {
  // Saturate first (min keeps a NaN, its second operand), round to nearest even, NaN -> 0x7FFF.
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(v)));
  const __m512 clamped = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_min_ps(_mm512_set1_ps(65504.0f), a)), sign));
  __m256i h = _mm512_maskz_cvtps_ph(all16, clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  h = _mm256_mask_mov_epi16(h, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm256_set1_epi16(0x7FFF));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), h);
}

// The same for products known finite and below the destination's overflow threshold.
LOWBIT_AVX512_INLINE void store16_finite(bfloat16* y, __m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)), 16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm512_cvtepi32_epi16(r));
}
LOWBIT_AVX512_INLINE void store16_finite(float16* y, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm512_maskz_cvtps_ph(all16, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Whether one of 64 codes is NaN or Inf.
template <class F>
LOWBIT_AVX512_INLINE bool special_codes(__m512i c) {
  if constexpr (F::specials == special_values::fnuz)
    return _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(static_cast<char>(0x80))) != 0;
  else
    return _mm512_cmpgt_epi8_mask(_mm512_and_si512(c, _mm512_set1_epi8(0x7F)),
                                  _mm512_set1_epi8(static_cast<char>(F::max_bits))) != 0;
}

// 64 values times s into y; finite: the products are known finite and below a 16-bit
// destination's overflow unless one of the codes c is NaN or Inf.
template <bool Stream, class F, class Dst>
LOWBIT_AVX512_INLINE void store64(Dst* y, __m512i c, __m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512 s,
                                  bool finite) {
  if constexpr (!std::is_same<Dst, float>::value) {
    if (finite && !special_codes<F>(c)) {
      store16_finite(y, _mm512_mul_ps(v0, s));
      store16_finite(y + 16, _mm512_mul_ps(v1, s));
      store16_finite(y + 32, _mm512_mul_ps(v2, s));
      store16_finite(y + 48, _mm512_mul_ps(v3, s));
      return;
    }
  }
  store16<Stream>(y, _mm512_mul_ps(v0, s));
  store16<Stream>(y + 16, _mm512_mul_ps(v1, s));
  store16<Stream>(y + 32, _mm512_mul_ps(v2, s));
  store16<Stream>(y + 48, _mm512_mul_ps(v3, s));
}

// The first m < 64 of them.
template <class Dst>
LOWBIT_AVX512_INLINE void store_last(Dst* y, std::size_t m, __m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512 s) {
  Dst out[64];
  store16<false>(out, _mm512_mul_ps(v0, s));
  store16<false>(out + 16, _mm512_mul_ps(v1, s));
  store16<false>(out + 32, _mm512_mul_ps(v2, s));
  store16<false>(out + 48, _mm512_mul_ps(v3, s));
  std::memcpy(static_cast<void*>(y), out, m * sizeof(Dst));
}

// How one block of a row is stored: its first `head` values with plain stores, the rest
// streamed (a float output streams from its first 64-byte aligned element; head = n when the call
// does not stream), and whether a 16-bit output is `finite` (the block's largest value times its
// scale cannot overflow it).
struct block_stores {
  std::size_t head;
  bool finite;
};
template <class T, class Dst>
inline block_stores stores_of(const Dst* y, std::size_t n, float scale, bool stream) noexcept {
  if constexpr (std::is_same<Dst, float>::value) {
    if (!stream) return {n, false};
    std::size_t head = 0;
    while (head < n && (reinterpret_cast<std::uintptr_t>(y + head) & 63u) != 0) ++head;
    return {head, false};
  } else {
    (void)stream;  // 16-bit outputs are not streamed
    const float largest = static_cast<float>(std::numeric_limits<T>::max()) * scale;
    return {n, std::is_same<Dst, float16>::value ? largest < 0x1p15f : largest < 0x1p127f};
  }
}

// y = decode(q) * scale for one block of n codes, through the float16 twins (scale folded with
// the twin's power of two; a folded scale that would overflow runs the reference's loop).
template <bool Stream, class T, class Dst>
LOWBIT_AVX512_INLINE void dequantize_block(const T* q, std::size_t n, float scale, Dst* y, bool finite) {
  using F = typename T::format;
  constexpr float factor = avx2::detail::half_twin<F>::scale;
  if (!(scale * factor <= 0x1p127f)) return fp8_ref::dequantize_tile(q, n, 1, n, n, &scale, y);
  const __m512 s = _mm512_set1_ps(scale * factor);
  std::size_t i = 0;
  __m512 v0, v1, v2, v3;
  for (; i + 64 <= n; i += 64) {
    const __m512i c = _mm512_loadu_si512(q + i);
    avx512::detail::twin_values<F>(c, &v0, &v1, &v2, &v3);
    store64<Stream, F>(y + i, c, v0, v1, v2, v3, s, finite);
  }
  if (i < n) {
    avx512::detail::twin_values<F>(_mm512_maskz_loadu_epi8((__mmask64{1} << (n - i)) - 1u, q + i), &v0, &v1, &v2, &v3);
    store_last(y + i, n - i, v0, v1, v2, v3, s);
  }
}

// The same with VBMI: the codes' exact float32 values looked up (kernels/convert/avx512.hpp,
// "Decoding with VBMI"), times the scale itself: the reference's product, operand for operand,
// for every finite scale.
template <bool Stream, avx512::detail::vbmi_index Mode, class T, class Dst>
LOWBIT_AVX512_VBMI_INLINE void dequantize_block_vbmi(const T* q, std::size_t n, float scale, Dst* y, bool finite,
                                                     const avx512::detail::vbmi_registers& k) {
  using F = typename T::format;
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  __m512i v0, v1, v2, v3;
  for (; i + 64 <= n; i += 64) {
    const __m512i c = _mm512_loadu_si512(q + i);
    avx512::detail::vbmi_decode64<Mode>(avx512::detail::vbmi_transposed(c), k, &v0, &v1, &v2, &v3);
    store64<Stream, F>(y + i, c, _mm512_castsi512_ps(v0), _mm512_castsi512_ps(v1), _mm512_castsi512_ps(v2),
                       _mm512_castsi512_ps(v3), s, finite);
  }
  if (i < n) {
    const __m512i c = _mm512_maskz_loadu_epi8((__mmask64{1} << (n - i)) - 1u, q + i);
    avx512::detail::vbmi_decode64<Mode>(avx512::detail::vbmi_transposed(c), k, &v0, &v1, &v2, &v3);
    store_last(y + i, n - i, _mm512_castsi512_ps(v0), _mm512_castsi512_ps(v1), _mm512_castsi512_ps(v2),
               _mm512_castsi512_ps(v3), s);
  }
}

// One row of a tile, n values in blocks of block_cols with their scales: one call per row, not
// per block (a 1 x 128 blocking has a block every 128 values; the VBMI tables load once a row).
template <class T, class Dst>
LOWBIT_TARGET_AVX512 inline void dequantize_row(const T* q, std::size_t n, std::size_t block_cols, const float* scales,
                                                Dst* y, bool stream) noexcept {
  for (std::size_t c = 0, j = 0; c < n; c += block_cols, ++j) {
    const std::size_t m = n - c < block_cols ? n - c : block_cols;
    const block_stores b = stores_of<T>(y + c, m, scales[j], stream);
    dequantize_block<false>(q + c, b.head, scales[j], y + c, b.finite);
    if (b.head < m) dequantize_block<true>(q + c + b.head, m - b.head, scales[j], y + c + b.head, false);
  }
}
template <avx512::detail::vbmi_index Mode, class T, class Dst>
LOWBIT_TARGET_AVX512_VBMI inline void dequantize_row_vbmi(const T* q, std::size_t n, std::size_t block_cols,
                                                          const float* scales, Dst* y, bool stream,
                                                          const avx512::detail::vbmi_tables& t) noexcept {
  const avx512::detail::vbmi_registers k = avx512::detail::vbmi_load(t);
  for (std::size_t c = 0, j = 0; c < n; c += block_cols, ++j) {
    const std::size_t m = n - c < block_cols ? n - c : block_cols;
    const block_stores b = stores_of<T>(y + c, m, scales[j], stream);
    dequantize_block_vbmi<false, Mode>(q + c, b.head, scales[j], y + c, b.finite, k);
    if (b.head < m) dequantize_block_vbmi<true, Mode>(q + c + b.head, m - b.head, scales[j], y + c + b.head, false, k);
  }
}

// Into bfloat16 with AVX512_BF16 as well: where a block's products can be neither subnormal
// (scale times the format's least positive value is at least 2^-126) nor beyond bfloat16's
// overflow threshold (`finite`), vcvtne2ps2bf16 rounds them as encode() does (nearest even on
// the bits; it reads no MXCSR, and it takes subnormals for zero, which such a block has none
// of), two instructions per 64 products instead of six per 16. A step holding a NaN or Inf code,
// and every other block, keeps the F/BW rounding.
template <avx512::detail::vbmi_index Mode, class T>
LOWBIT_TARGET_AVX512_VBMI_BF16 inline void dequantize_row_vbmi_bf16(const T* q, std::size_t n, std::size_t block_cols,
                                                                    const float* scales, bfloat16* y,
                                                                    const avx512::detail::vbmi_tables& t) noexcept {
  using F = typename T::format;
  const avx512::detail::vbmi_registers k = avx512::detail::vbmi_load(t);
  for (std::size_t c = 0, j = 0; c < n; c += block_cols, ++j) {
    const std::size_t m = n - c < block_cols ? n - c : block_cols;
    const float scale = scales[j];
    const bool finite = stores_of<T>(y + c, m, scale, false).finite;
    if (!finite || !fp8_avx2::detail::normal_products<T>(scale)) {
      dequantize_block_vbmi<false, Mode>(q + c, m, scale, y + c, finite, k);
      continue;
    }
    const __m512 s = _mm512_set1_ps(scale);
    std::size_t i = 0;
    __m512i v0, v1, v2, v3;
    for (; i + 64 <= m; i += 64) {
      const __m512i codes = _mm512_loadu_si512(q + c + i);
      avx512::detail::vbmi_decode64<Mode>(avx512::detail::vbmi_transposed(codes), k, &v0, &v1, &v2, &v3);
      const __m512 p0 = _mm512_mul_ps(_mm512_castsi512_ps(v0), s), p1 = _mm512_mul_ps(_mm512_castsi512_ps(v1), s);
      const __m512 p2 = _mm512_mul_ps(_mm512_castsi512_ps(v2), s), p3 = _mm512_mul_ps(_mm512_castsi512_ps(v3), s);
      bfloat16* out = y + c + i;
      if (special_codes<F>(codes)) {
        store16<false>(out, p0);
        store16<false>(out + 16, p1);
        store16<false>(out + 32, p2);
        store16<false>(out + 48, p3);
      } else {
        _mm512_storeu_si512(out, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
        _mm512_storeu_si512(out + 32, (__m512i)_mm512_cvtne2ps_pbh(p3, p2));
      }
    }
    if (i < m) dequantize_block_vbmi<false, Mode>(q + c + i, m - i, scale, y + c + i, finite, k);
  }
}

// The tile's rows as the AVX2 kernel walks them (fp8_avx2::walk_of): row(q, n, block_cols, y) per
// row; the row functions above take it from there.
template <class T, class Dst, class Row>
void dequantize_walk(const T* q, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols, Dst* y,
                     bool stream, Row row) noexcept {
  const fp8_avx2::tile_walk t = fp8_avx2::walk_of(ld, rows, cols, block_cols);
  for (std::size_t r = 0; r < t.rows; ++r) row(q + r * ld, t.cols, t.block_cols, y + r * ld);
  if (stream) _mm_sfence();
}

}  // namespace detail

using fp8_avx2::tile_scales;
using fp8_avx2::tile_walk;
using fp8_avx2::walk_of;

template <class From>
LOWBIT_TARGET_AVX512 void amax_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                    std::size_t block_cols, std::uint32_t* amax) noexcept {
  const tile_walk t = walk_of(ld, rows, cols, block_cols);
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t c = 0, j = 0; c < t.cols; c += t.block_cols, ++j) {
      const std::uint32_t b = detail::amax_bits(x + r * ld + c, t.cols - c < t.block_cols ? t.cols - c : t.block_cols);
      amax[j] = b > amax[j] ? b : amax[j];
    }
}

// The AVX2 kernel's contract; a policy the encoders do not cover goes to the AVX2 kernel.
template <class T, class From>
void quantize_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols,
                   const float* scales, scale_application a, const policy& p, const std::uint32_t* random_bits, T* q,
                   fp8_traffic traffic) noexcept {
  using F = typename T::format;
  if constexpr (avx512::can_encode<float, T>::value) {
    if (avx512::covers<F>(p)) {
      const tile_walk t = walk_of(ld, rows, cols, block_cols);
      const tile_scales ts(scales, (t.cols - 1) / t.block_cols + 1);
      const bool reciprocal = a == scale_application::multiply_reciprocal || (ts.powers_of_two && !ts.huge);
      // x / s in every step: under stochastic rounding every discarded bit counts, and a scale
      // above 2^126 has a subnormal reciprocal, for which near_decision's bound on x * r fails.
      const bool always = !reciprocal && (p.rm == rounding::stochastic || ts.huge);
      const unsigned shift = fp8_avx2::row_run_shift(t, 64);
      std::uint8_t* out = reinterpret_cast<std::uint8_t*>(q);
      const auto run = [&](auto rm) {
        constexpr rounding RM = decltype(rm)::value;
        if (reciprocal)
          detail::quantize_runs<F, RM, false>(x, ld, t.rows, t.cols, t.block_cols, scales, ts.reciprocals, false,
                                              shift, p, random_bits, out, traffic);
        else
          detail::quantize_runs<F, RM, true>(x, ld, t.rows, t.cols, t.block_cols, scales, ts.reciprocals, always,
                                             shift, p, random_bits, out, traffic);
      };
      switch (p.rm) {
        case rounding::nearest_even: return run(std::integral_constant<rounding, rounding::nearest_even>{});
        case rounding::toward_zero: return run(std::integral_constant<rounding, rounding::toward_zero>{});
        case rounding::toward_pos_inf: return run(std::integral_constant<rounding, rounding::toward_pos_inf>{});
        case rounding::stochastic: return run(std::integral_constant<rounding, rounding::stochastic>{});
        case rounding::nearest_away: return run(std::integral_constant<rounding, rounding::nearest_away>{});
        case rounding::nearest_toward_zero:
          return run(std::integral_constant<rounding, rounding::nearest_toward_zero>{});
      }
    }
  }
  fp8_avx2::quantize_tile(x, ld, rows, cols, block_cols, scales, a, p, random_bits, q, traffic);
}

template <class T, class Dst>
void dequantize_tile(const T* q, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols,
                     const float* scales, Dst* y, bool stream) noexcept {
  using F = typename T::format;
  if constexpr (std::is_same<Dst, bfloat16>::value) {
    // Into bfloat16 without VBMI and AVX512_BF16, the AVX2 kernel's lookup
    // (fp8_avx2::detail::bf16_lookup) rounds faster than the F/BW code (docs/performance.md).
    if (!avx512::detail::vbmi_decodable<F>::value || !::lowbit::detail::use_avx512_vbmi() ||
        !::lowbit::detail::use_avx512_bf16())
      return fp8_avx2::dequantize_tile(q, ld, rows, cols, block_cols, scales, y, stream);
  }
  if constexpr (avx512::detail::vbmi_decodable<F>::value) {
    if (::lowbit::detail::use_avx512_vbmi()) {
      const avx512::detail::vbmi_tables& t = avx512::detail::vbmi_tables_of<F>();
      if constexpr (std::is_same<Dst, bfloat16>::value) {
        avx512::detail::with_vbmi_mode<F>(t, [&](auto mode) {
          detail::dequantize_walk(q, ld, rows, cols, block_cols, y, stream,
                                  [&](const T* qr, std::size_t n, std::size_t bc, Dst* yr) {
                                    detail::dequantize_row_vbmi_bf16<decltype(mode)::value>(qr, n, bc, scales, yr, t);
                                  });
        });
        return;
      }
      avx512::detail::with_vbmi_mode<F>(t, [&](auto mode) {
        detail::dequantize_walk(q, ld, rows, cols, block_cols, y, stream,
                                [&](const T* qr, std::size_t n, std::size_t bc, Dst* yr) {
                                  detail::dequantize_row_vbmi<decltype(mode)::value>(qr, n, bc, scales, yr, stream, t);
                                });
      });
      return;
    }
  }
  detail::dequantize_walk(q, ld, rows, cols, block_cols, y, stream, [&](const T* qr, std::size_t n, std::size_t bc, Dst* yr) {
    detail::dequantize_row(qr, n, bc, scales, yr, stream);
  });
}

}  // namespace fp8_avx512
}  // namespace kernels
}  // namespace lowbit

LOWBIT_AVX512_WARNINGS_END

#endif  // LOWBIT_HAS_AVX512_KERNELS

#endif  // LOWBIT_KERNELS_FP8_AVX512_HPP
