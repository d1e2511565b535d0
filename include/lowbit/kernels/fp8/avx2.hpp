// lowbit: AVX2 kernels of the scaled FP8 scheme, bit-identical to kernels/fp8/scalar.hpp.
//
//  amax_tile        the largest |x| bit pattern per column block: an unsigned maximum of the
//                   float bits with the sign cleared (NaN above Inf), no float arithmetic.
//  quantize_tile    x / s (vdivps) or x * r (vmulps), IEEE-exact like the scalar quotient, fed
//                   to the conversion encoder (kernels/convert/avx2.hpp) through its reader
//                   interface: the scaled values never go to memory.
//  dequantize_tile  the conversion decoder's exact widening of the codes, times s (vmulps),
//                   stored as float32, or rounded to bfloat16 / float16 as encode() rounds;
//                   into bfloat16, blocks whose products stay normal look 16 rounded products up
//                   and add the code's exponent (bf16_lookup).
//
// Callers run them inside an IEEE scope (kernels/fp_env.hpp), as for the scalar reference.
#ifndef LOWBIT_KERNELS_FP8_AVX2_HPP
#define LOWBIT_KERNELS_FP8_AVX2_HPP

#include "../../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../formats/limits.hpp"
#include "../../formats/types.hpp"
#include "../avx2_common.hpp"
#include "../convert/avx2.hpp"
#include "scalar.hpp"

namespace lowbit {
namespace kernels {
namespace fp8_avx2 {

namespace detail {

// 8 source values -> their float32 bit patterns (exact widening for the 16-bit types).
LOWBIT_AVX2_INLINE __m256i load8(const float* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
LOWBIT_AVX2_INLINE __m256i load8(const bfloat16* p) {
  return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
}
LOWBIT_AVX2_INLINE __m256i load8(const float16* p) {
  return _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The largest |x| bit pattern of x[0, n).
template <class From>
LOWBIT_AVX2_INLINE std::uint32_t amax_bits(const From* x, std::size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_epu32(m0, _mm256_and_si256(load8(x + i), abs_mask));
    m1 = _mm256_max_epu32(m1, _mm256_and_si256(load8(x + i + 8), abs_mask));
    m2 = _mm256_max_epu32(m2, _mm256_and_si256(load8(x + i + 16), abs_mask));
    m3 = _mm256_max_epu32(m3, _mm256_and_si256(load8(x + i + 24), abs_mask));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_epu32(m0, _mm256_and_si256(load8(x + i), abs_mask));
  __m256i m = _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3));
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
  std::uint32_t r = static_cast<std::uint32_t>(_mm_cvtsi128_si32(h));
  for (; i < n; ++i) {
    const std::uint32_t b = fp8_ref::magnitude_bits(x[i]);
    r = b > r ? b : r;
  }
  return r;
}

// The conversion encoder's readers: 32 source values scaled, as float32 bit patterns.
//
// x * r (multiply_reciprocal) is one product. x / s (divide) is computed as the product q = x * r
// too, with r = RN(1/s), and redone with vdivps for the 32 values when one of them might encode
// differently from the quotient D = RN(x / s). That is decided on q's bits: with r normal,
// |x*r - x/s| <= 2^-24 |x/s|, so q and D are at most 3 apart as float bit patterns (one
// rounding each, and 2^-24 |v| is at most one step at v). Every value where the encoding of T
// changes (a value of T for the directed modes, a midpoint between two for the nearest ones, the
// overflow threshold, zero) is, as a float bit pattern, a multiple of 2^(22 - M) (M: T's mantissa
// bits; values of T have their low 23 - M bits zero, subnormals of T coarser still). So if no
// lane's bits lie within 4 of such a multiple, q and D encode alike. About 8 / 2^(22-M) of the
// lanes (2^-16 for E4M3) trigger the division. Stochastic rounding reads every bit of the
// quotient: it always divides (exact_divider).
// Whether some lane of q0..q3 lies within 4 of a multiple of 2^K, K = 22 - M: (q + 4) mod 2^K < 8,
// i.e. bits 3 .. K-1 of q + 4 all zero. Shifted left by 32 - K, those bits are the top 29 - K
// bits of the lane, all zero exactly when the lane is below 2^(35 - K); one unsigned minimum over
// the 32 lanes answers for all of them.
template <int M>
LOWBIT_AVX2_INLINE bool near_decision(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  constexpr int K = 22 - M;
  const __m256i four = _mm256_set1_epi32(4);
  const __m256i a = _mm256_min_epu32(_mm256_slli_epi32(_mm256_add_epi32(q0, four), 32 - K),
                                     _mm256_slli_epi32(_mm256_add_epi32(q1, four), 32 - K));
  const __m256i b = _mm256_min_epu32(_mm256_slli_epi32(_mm256_add_epi32(q2, four), 32 - K),
                                     _mm256_slli_epi32(_mm256_add_epi32(q3, four), 32 - K));
  const __m256i low = _mm256_cmpeq_epi32(_mm256_srli_epi32(_mm256_min_epu32(a, b), 35 - K), _mm256_setzero_si256());
  return !_mm256_testz_si256(low, low);
}

enum class scaling : std::uint8_t { reciprocal, divide, exact_divider };

// From DRAM (stream), a run longer than the encoders' prefetch distance also asks for the lines
// one run ahead (at most next_run_cap_bytes ahead), into L2. For the dynamic quantizer's chunks
// of one row (per token, 1 x 128) that is the next chunk, whose amax pass then reads it from
// cache instead of DRAM; for the rows of taller blocks the next row; for a tensor walked as one
// run (per tensor) a longer distance than the encoders' own 2 KiB (the AVX-512 kernel then makes
// only these requests). next_run_distance: that distance in elements, 0 for none. docs/performance.md,
// "Zen 5: the FP8 quantizers from DRAM".
inline constexpr std::size_t next_run_cap_bytes = std::size_t{64} << 10;
template <class From>
constexpr std::size_t next_run_distance(std::size_t n, bool stream) noexcept {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(From), cap = next_run_cap_bytes / sizeof(From);
  return stream && n > ahead ? (n < cap ? n : cap) : 0;
}

// The distance for a run of n values of a tile of rows x cols (row stride ld). Where the call
// reads its source twice (fp8_traffic::streamed_twice: the dynamic quantizer), a tile of whole
// rows (cols == ld) more than one row tall is a band of tall blocks (128 x 128), and the next
// chunk is the band below, rows * ld ahead: each run asks for its own columns there, so that the
// amax pass over that band finds its lines in cache (L2, or L3 where L2 let them go: a band of
// 128 rows of 4096 floats is 2 MiB); the next row, which next_run_distance gives, the amax pass
// has just read. Otherwise next_run_distance. (A single pass, the static quantizer, loses a
// quarter of its speed with the band's distance: Zen 5, 128 x 128 from DRAM.)
template <class From>
constexpr std::size_t run_distance(std::size_t n, std::size_t ld, std::size_t rows, std::size_t cols,
                                   fp8_traffic traffic) noexcept {
  const bool stream = traffic != fp8_traffic::cached;
  return traffic == fp8_traffic::streamed_twice && rows > 1 && cols == ld ? rows * ld
                                                                          : next_run_distance<From>(n, stream);
}

// The reader of one run. Divide is x / s (exactly: exact_divider always divides, divide only
// where near_decision says so), else x * r; two reader types per format and source keep the
// encoder's instantiations few. The scale of the 32 values at p: one for the whole run, or
// (indexed) scales[(p - base) >> shift] for runs cut into blocks of 2^shift elements (2^shift a
// multiple of 32, the run a multiple of 32 long, so the encoder's zero-padded tail copy never
// reaches an indexed reader; nor does a streaming call's head, which granule() keeps to whole
// steps: until it did, an output not 32-byte aligned sent the head's copy to this reader, which
// read a scale at an index taken from a stack address). Written out without loops: GCC -O2
// keeps a loop's vector array in memory.
template <class From, int M, bool Divide>
struct scaled_reader {
  bool always_divide;  // exact_divider
  bool indexed;
  bool stream;  // non-temporal stores for every run (the call writes a large output in many runs)
  unsigned shift;
  const From* base;
  const float* scales;
  const float* reciprocals;
  __m256 s, r;       // the single scale and its reciprocal (not indexed)
  std::size_t next;  // next_run_distance of the run (0: none)

  // Indexed: streaming starts at a whole step of 32 (convert/avx2.hpp, reader_granule), or not at
  // all where the output has no 32-byte aligned step.
  std::size_t granule() const noexcept { return indexed ? 32 : 1; }

  LOWBIT_AVX2_INLINE void operator()(const From* p, __m256i out[4]) const {
    if (next != 0) avx2::prefetch_lines_l2(p + next, 32 * sizeof(From));
    const std::size_t j = indexed ? static_cast<std::size_t>(p - base) >> shift : 0;
    const __m256 x0 = _mm256_castsi256_ps(load8(p)), x1 = _mm256_castsi256_ps(load8(p + 8));
    const __m256 x2 = _mm256_castsi256_ps(load8(p + 16)), x3 = _mm256_castsi256_ps(load8(p + 24));
    if (Divide && always_divide) {
      divide(x0, x1, x2, x3, indexed ? _mm256_broadcast_ss(scales + j) : s, out);
      return;
    }
    const __m256 rv = indexed ? _mm256_broadcast_ss(reciprocals + j) : r;
    out[0] = _mm256_castps_si256(_mm256_mul_ps(x0, rv));
    out[1] = _mm256_castps_si256(_mm256_mul_ps(x1, rv));
    out[2] = _mm256_castps_si256(_mm256_mul_ps(x2, rv));
    out[3] = _mm256_castps_si256(_mm256_mul_ps(x3, rv));
    if (Divide && near_decision<M>(out[0], out[1], out[2], out[3]))
      divide(x0, x1, x2, x3, indexed ? _mm256_broadcast_ss(scales + j) : s, out);
  }
  LOWBIT_AVX2_INLINE static void divide(__m256 x0, __m256 x1, __m256 x2, __m256 x3, __m256 sv, __m256i out[4]) {
    out[0] = _mm256_castps_si256(_mm256_div_ps(x0, sv));
    out[1] = _mm256_castps_si256(_mm256_div_ps(x1, sv));
    out[2] = _mm256_castps_si256(_mm256_div_ps(x2, sv));
    out[3] = _mm256_castps_si256(_mm256_div_ps(x3, sv));
  }
};

// 8 float products -> the destination, rounded as fp8_ref::store_value does. Stream: a
// non-temporal store (float outputs only; y 32-byte aligned).
template <bool Stream = false>
LOWBIT_AVX2_INLINE void store8(float* y, __m256 v) {
  if constexpr (Stream)
    _mm256_stream_ps(y, v);
  else
    _mm256_storeu_ps(y, v);
}
template <bool Stream = false>
LOWBIT_AVX2_INLINE void store8(bfloat16* y, __m256 v) {
  static_assert(!Stream, "streaming stores are for float outputs");
  const __m256i r = avx2::bf16_lanes_of_f32(_mm256_castps_si256(v));
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm256_castsi256_si128(w));
}
template <bool Stream = false>
LOWBIT_AVX2_INLINE void store8(float16* y, __m256 v) {
  static_assert(!Stream, "streaming stores are for float outputs");
  // Saturate first (|v| above 65504 -> 65504; min keeps a NaN, its second operand), then round
  // to nearest even, then the canonical NaN 0x7FFF for every NaN.
  const __m256 sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
  const __m256 a = _mm256_andnot_ps(sign, v);
  const __m256 clamped = _mm256_or_ps(_mm256_min_ps(_mm256_set1_ps(65504.0f), a), sign);
  __m128i h = _mm256_cvtps_ph(clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                        _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
  h = _mm_blendv_epi8(h, _mm_set1_epi16(0x7FFF), nan16);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), h);
}

// Nearest-even bfloat16 bits of 8 finite floats below the overflow threshold, in 32-bit lanes.
LOWBIT_AVX2_INLINE __m256i bf16_bits_finite(__m256 v) { return _mm256_srli_epi32(avx2::bf16_rounded(v), 16); }

// The same for products known finite and below the destination's overflow threshold (no NaN or
// Inf code in the step, a scale too small to reach it): the rounding alone.
LOWBIT_AVX2_INLINE void store8_finite(bfloat16* y, __m256 v) {
  const __m256i r = bf16_bits_finite(v);
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm256_castsi256_si128(w));
}
LOWBIT_AVX2_INLINE void store8_finite(float16* y, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Whether one of 32 codes is NaN or Inf.
template <class T>
LOWBIT_AVX2_INLINE bool special_codes(const T* p) {
  return avx2::detail::special_codes32<typename T::format>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The values of 32 codes as floats, times a constant the caller folds into the scale: the
// conversion decoder's float16 route (half_twin: exact, v * 2^(bias - 15) for E4M3FN and
// E4M3FNUZ, v for E5M2 and E5M2FNUZ, NaN canonical).
template <class T>
struct code_values {
  using F = typename T::format;
  static constexpr bool half = avx2::detail::half_twin<F>::value;
  static constexpr float factor = half ? avx2::detail::half_twin<F>::scale : 1.0f;  // the scale is multiplied by it
  avx2::detail::reader<T> read;
  LOWBIT_AVX2_INLINE void operator()(const T* p, __m256 out[4]) const {
    if constexpr (half) {
      __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      if constexpr (F::specials == special_values::ieee) codes = avx2::detail::e5m2_canonical_nan(codes);
      const __m256i lo = avx2::detail::half_twin_bits<F>(_mm256_unpacklo_epi8(_mm256_setzero_si256(), codes));  // 0-7 | 16-23
      const __m256i hi = avx2::detail::half_twin_bits<F>(_mm256_unpackhi_epi8(_mm256_setzero_si256(), codes));  // 8-15 | 24-31
      out[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(lo));
      out[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(hi));
      out[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(lo, 1));
      out[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(hi, 1));
    } else {
      __m256i v[4];
      read(p, v);
      out[0] = _mm256_castsi256_ps(v[0]);
      out[1] = _mm256_castsi256_ps(v[1]);
      out[2] = _mm256_castsi256_ps(v[2]);
      out[3] = _mm256_castsi256_ps(v[3]);
    }
  }
};

// y[0, n) = decode(q) * scale: (v * 2^-8) * (scale * 2^8) for E4M3FN (2^-7 and 2^7 for E4M3FNUZ)
// is the same real product as v * scale, so the same float, as long as the folded scale is finite
// (the caller checks).
// finite: for 16-bit outputs, the scale keeps every finite product below the output's overflow
// threshold, so steps without NaN or Inf codes need the rounding alone.
template <bool Stream, class T, class Dst>
LOWBIT_AVX2_INLINE void dequantize_run(const T* q, std::size_t n, __m256 s, Dst* y, const code_values<T>& values,
                                       bool finite = false) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 v[4];
    values(q + i, v);
    if constexpr (!std::is_same<Dst, float>::value) {
      if (finite && !special_codes(q + i)) {
        store8_finite(y + i, _mm256_mul_ps(v[0], s));
        store8_finite(y + i + 8, _mm256_mul_ps(v[1], s));
        store8_finite(y + i + 16, _mm256_mul_ps(v[2], s));
        store8_finite(y + i + 24, _mm256_mul_ps(v[3], s));
        continue;
      }
    }
    store8<Stream>(y + i, _mm256_mul_ps(v[0], s));
    store8<Stream>(y + i + 8, _mm256_mul_ps(v[1], s));
    store8<Stream>(y + i + 16, _mm256_mul_ps(v[2], s));
    store8<Stream>(y + i + 24, _mm256_mul_ps(v[3], s));
  }
  if (i < n) {
    T in[32] = {};
    Dst out[32];
    std::memcpy(static_cast<void*>(in), q + i, (n - i) * sizeof(T));
    __m256 v[4];
    values(in, v);
    store8(out, _mm256_mul_ps(v[0], s));
    store8(out + 8, _mm256_mul_ps(v[1], s));
    store8(out + 16, _mm256_mul_ps(v[2], s));
    store8(out + 24, _mm256_mul_ps(v[3], s));
    std::memcpy(static_cast<void*>(y + i), out, (n - i) * sizeof(Dst));
  }
}

// Into bfloat16 by lookup, for a block whose products are all normal floats below 2^127 (the
// scale times the format's least positive value at least 2^-126, times its largest below 2^127;
// no NaN or Inf code in the step). A code with exponent field e >= 1 has the value 2^(e - 1)
// times the code of the same sign and mantissa with field 1, so its product is that code's
// product times 2^(e - 1) exactly, and so is the product's bfloat16 (rounding commutes with a
// power of two where nothing is subnormal or overflows): the bfloat16 of the field-1 code plus
// e - 1 in the exponent field. Codes with field 0 (zero, subnormals) are looked up whole. The
// 16 entries (index m for field 1, 8 + m for field 0) are the reference's products, rounded as
// store8_finite rounds them; a step is two vpshufb, the exponent added in 16-bit lanes.
template <class T>
struct bf16_lookup {
  using F = typename T::format;
  static constexpr std::uint32_t mantissa = (1u << F::mantissa_bits) - 1u;
  static constexpr std::uint32_t field = F::magnitude_mask & ~mantissa;
  float values[16] = {};  // the codes' exact values: (1 << M) | m, and m
  bf16_lookup() noexcept {
    for (std::uint32_t m = 0; m <= mantissa; ++m) {
      values[m] = static_cast<float>(T::from_bits(static_cast<std::uint8_t>((1u << F::mantissa_bits) | m)));
      values[8 + m] = static_cast<float>(T::from_bits(static_cast<std::uint8_t>(m)));
    }
  }
  static const bf16_lookup& get() noexcept {
    static const bf16_lookup t;
    return t;
  }
};

// Whether no product of a code of T with scale is a float subnormal: the least positive value
// times the scale is at least 2^-126 (with `finite`, the blocks whose bfloat16 the lookups and
// vcvtne2ps2bf16 may take).
template <class T>
inline bool normal_products(float scale) noexcept {
  return static_cast<float>(std::numeric_limits<T>::denorm_min()) * scale >= 0x1p-126f;
}

template <class T>
LOWBIT_AVX2_INLINE void bf16_lookup32(const T* q, __m256i lo_t, __m256i hi_t, bfloat16* y) {
  using L = bf16_lookup<T>;
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  const __m256i f = _mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(L::field)));
  const __m256i field0 = _mm256_cmpeq_epi8(f, _mm256_setzero_si256());
  const __m256i index = _mm256_or_si256(_mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(L::mantissa))),
                                        _mm256_and_si256(field0, _mm256_set1_epi8(8)));
  const __m256i lo = _mm256_shuffle_epi8(lo_t, index);
  const __m256i hi = _mm256_or_si256(_mm256_shuffle_epi8(hi_t, index), _mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(0x80))));
  // e - 1 (0 for field 0), in bytes: the field's byte shifted down by M (the sign bit cleared first).
  const __m256i e1 = _mm256_subs_epu8(_mm256_srli_epi16(f, L::F::mantissa_bits), _mm256_set1_epi8(1));
  const __m256i z = _mm256_setzero_si256();
  const __m256i a = _mm256_add_epi16(_mm256_unpacklo_epi8(lo, hi), _mm256_slli_epi16(_mm256_unpacklo_epi8(e1, z), 7));
  const __m256i b = _mm256_add_epi16(_mm256_unpackhi_epi8(lo, hi), _mm256_slli_epi16(_mm256_unpackhi_epi8(e1, z), 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_permute2x128_si256(a, b, 0x20));       // 0-15
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 16), _mm256_permute2x128_si256(a, b, 0x31));  // 16-31
}

template <class T>
LOWBIT_AVX2_INLINE void dequantize_run_bf16(const T* q, std::size_t n, float scale, bfloat16* y,
                                            const code_values<T>& values, __m256 folded) {
  const bf16_lookup<T>& l = bf16_lookup<T>::get();
  const __m256 s = _mm256_set1_ps(scale);
  __m256i lo_t, hi_t;
  avx2::word_tables(avx2::pack_dwords_to_words(bf16_bits_finite(_mm256_mul_ps(_mm256_loadu_ps(l.values), s)),
                                               bf16_bits_finite(_mm256_mul_ps(_mm256_loadu_ps(l.values + 8), s))),
                    &lo_t, &hi_t);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (special_codes(q + i)) {
      dequantize_run<false>(q + i, 32, folded, y + i, values, true);
      continue;
    }
    bf16_lookup32(q + i, lo_t, hi_t, y + i);
  }
  if (i < n) dequantize_run<false>(q + i, n - i, folded, y + i, values, true);
}

}  // namespace detail

// How the tile kernels (these and kernels/fp8/avx512.hpp's) walk a tile: row by row, block by
// block; a tile whose rows are contiguous and hold one block each as one run of rows * cols.
struct tile_walk {
  std::size_t rows, cols, block_cols;
};
inline tile_walk walk_of(std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols) noexcept {
  if (ld == cols && block_cols >= cols) return {1, rows * cols, rows * cols};
  return {rows, cols, block_cols};
}

template <class From>
LOWBIT_TARGET_AVX2 void amax_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                  std::size_t block_cols, std::uint32_t* amax) noexcept {
  const tile_walk t = walk_of(ld, rows, cols, block_cols);
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t c = 0, j = 0; c < t.cols; c += t.block_cols, ++j) {
      const std::uint32_t b = detail::amax_bits(x + r * ld + c, t.cols - c < t.block_cols ? t.cols - c : t.block_cols);
      amax[j] = b > amax[j] ? b : amax[j];
    }
}

namespace detail {

// Encodes one run of n values at x with the reader's scaling.
template <class T, class Reader, class From>
LOWBIT_AVX2_INLINE void encode_run(const Reader& read, const From* x, std::size_t n, const policy& p,
                                   const std::uint32_t* random_bits, T* q) {
  avx2::encode_with(read, x, q, n, p, random_bits);
}

// The tile, one run per row (shift != 0: the row's blocks picked by the reader) or per block.
template <bool Divide, class T, class From>
LOWBIT_AVX2_INLINE void quantize_runs(scaling how, const From* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                      std::size_t block_cols, const float* scales, const float* reciprocals,
                                      unsigned shift, const policy& p, const std::uint32_t* random_bits, T* q,
                                      fp8_traffic traffic) {
  constexpr int M = T::format::mantissa_bits;
  const bool stream = traffic != fp8_traffic::cached;
  scaled_reader<From, M, Divide> read{how == scaling::exact_divider, false, stream, shift, nullptr, scales,
                                      reciprocals, _mm256_setzero_ps(), _mm256_setzero_ps(), 0};
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t at = r * ld;
    const std::uint32_t* rb = random_bits != nullptr ? random_bits + at : nullptr;
    if (how != scaling::exact_divider && shift != 0) {
      read.indexed = true;
      read.base = x + at;
      read.next = run_distance<From>(cols, ld, rows, cols, traffic);
      encode_run(read, x + at, cols, p, rb, q + at);
      continue;
    }
    read.indexed = false;
    for (std::size_t c = 0, j = 0; c < cols; c += block_cols, ++j) {
      const std::size_t n = cols - c < block_cols ? cols - c : block_cols;
      read.s = _mm256_set1_ps(scales[j]);
      read.r = _mm256_set1_ps(reciprocals[j]);
      read.next = run_distance<From>(n, ld, rows, cols, traffic);
      encode_run(read, x + at + c, n, p, rb != nullptr ? rb + c : nullptr, q + at + c);
    }
  }
}

}  // namespace detail

// At most max_tile_blocks column blocks per tile (schemes/fp8.hpp hands out chunks of 64).
constexpr std::size_t max_tile_blocks = 64;

// The quantizers' view of a tile's block scales: each 1/s, whether one of them is subnormal
// (huge: the product bound fails) and whether all scales are powers of two (x * (1/s) is then
// x / s exactly: both round the same real number).
struct tile_scales {
  float reciprocals[max_tile_blocks];
  bool huge = false;
  bool powers_of_two = true;
  tile_scales(const float* scales, std::size_t blocks) noexcept {
    for (std::size_t j = 0; j < blocks; ++j) {
      reciprocals[j] = 1.0f / scales[j];
      huge = huge || scales[j] > 0x1p126f;
      powers_of_two = powers_of_two && (lowbit::detail::bit_cast<std::uint32_t>(scales[j]) & 0x007FFFFFu) == 0;
    }
  }
};

// Blocks of 2^shift >= step elements in rows of whole steps: one run per row, the reader picking
// each element's block (0: a run per block).
inline unsigned row_run_shift(const tile_walk& t, std::size_t step) noexcept {
  unsigned shift = 0;
  if (t.cols > t.block_cols && t.cols % step == 0 && t.block_cols % step == 0 && (t.block_cols & (t.block_cols - 1)) == 0)
    while ((std::size_t{1} << shift) < t.block_cols) ++shift;
  return shift;
}

// traffic: whether the whole call writes enough (with its source, at least
// stream_threshold_bytes) that every run's codes go out with non-temporal stores, and whether it
// reads its source twice (fp8_traffic, detail::run_distance).
template <class T, class From>
LOWBIT_TARGET_AVX2 void quantize_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                      std::size_t block_cols, const float* scales, scale_application a,
                                      const policy& p, const std::uint32_t* random_bits, T* q,
                                      fp8_traffic traffic) noexcept {
  const tile_walk t = walk_of(ld, rows, cols, block_cols);
  const tile_scales ts(scales, (t.cols - 1) / t.block_cols + 1);
  const unsigned shift = row_run_shift(t, 32);
  const detail::scaling how = a == scale_application::multiply_reciprocal || (ts.powers_of_two && !ts.huge)
                                  ? detail::scaling::reciprocal
                              : p.rm == rounding::stochastic || ts.huge ? detail::scaling::exact_divider
                                                                        : detail::scaling::divide;
  if (how == detail::scaling::reciprocal)
    detail::quantize_runs<false>(how, x, ld, t.rows, t.cols, t.block_cols, scales, ts.reciprocals, shift, p,
                                 random_bits, q, traffic);
  else
    detail::quantize_runs<true>(how, x, ld, t.rows, t.cols, t.block_cols, scales, ts.reciprocals, shift, p,
                                random_bits, q, traffic);
}

// stream: the call writes enough float output (at least stream_threshold_bytes) that
// non-temporal stores pay; used for float outputs from their first 32-byte aligned element.
template <class T, class Dst>
LOWBIT_TARGET_AVX2 void dequantize_tile(const T* q, std::size_t ld, std::size_t rows, std::size_t cols,
                                        std::size_t block_cols, const float* scales, Dst* y, bool stream) noexcept {
  const tile_walk t = walk_of(ld, rows, cols, block_cols);
  const detail::code_values<T> values{};
  constexpr float factor = detail::code_values<T>::factor;
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t c = 0, j = 0; c < t.cols; c += t.block_cols, ++j) {
      const std::size_t at = r * ld + c;
      const std::size_t n = t.cols - c < t.block_cols ? t.cols - c : t.block_cols;
      if (!(scales[j] * factor <= 0x1p127f)) {  // the folded scale would overflow: decode exactly, then scale
        fp8_ref::dequantize_tile(q + at, n, 1, n, n, scales + j, y + at);
        continue;
      }
      const __m256 s = _mm256_set1_ps(scales[j] * factor);
      if constexpr (std::is_same<Dst, float>::value) {
        if (stream) {
          std::size_t head = 0;  // elements before the first 32-byte aligned output
          while (head < n && (reinterpret_cast<std::uintptr_t>(y + at + head) & 31u) != 0) ++head;
          detail::dequantize_run<false>(q + at, head, s, y + at, values);
          detail::dequantize_run<true>(q + at + head, n - head, s, y + at + head, values);
          continue;
        }
      }
      // 16-bit outputs: the largest finite product max(T) * scale stays below 2^15 (float16:
      // 65504 rounds to 65504) or 2^127 (bfloat16), so only NaN and Inf codes need the full path.
      const float largest = static_cast<float>(std::numeric_limits<T>::max()) * scales[j];
      const bool finite = std::is_same<Dst, float16>::value ? largest < 0x1p15f : largest < 0x1p127f;
      if constexpr (std::is_same<Dst, bfloat16>::value) {
        if (finite && detail::normal_products<T>(scales[j])) {
          detail::dequantize_run_bf16(q + at, n, scales[j], y + at, values, s);
          continue;
        }
      }
      detail::dequantize_run<false>(q + at, n, s, y + at, values, finite);
    }
  if (stream) _mm_sfence();
}

}  // namespace fp8_avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_FP8_AVX2_HPP
