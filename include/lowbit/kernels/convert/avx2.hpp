// lowbit: AVX2 kernels of the format conversions (float32 / float16 / bfloat16 <-> every lowbit
// format, packed E2M1 and FP6). Bit-identical to kernels/convert/scalar.hpp for every input.
//
// Encoding vectorizes formats/codec.hpp's encode_bits on the float's bit pattern, in integer
// arithmetic (but for the one float-to-integer rounding of path 1's subnormal codes, under an
// IEEE scope it installs and removes without a trace), so the result does not depend on MXCSR
// (FTZ, DAZ, rounding control); float16 sources are widened first by vcvtph2ps, which is exact
// and ignores MXCSR too (f32_from_f16). Per block of 32 the data picks one of three paths
// (encode_block_direct, encode_block_fast, encode_block_general; docs/performance.md); float16
// under nearest-even takes vcvtps2ph with its rounding in the immediate instead of path 1
// (encode_block_f16c), inside the same IEEE scope. The
// general one, and the reference for the others, reads nothing but the format_spec constants:
//
//   K = min_exponent + 127      float exponent field of the format's smallest normal
//   m = clamp(field, 1, K)      the float's field, raised to 1 (float subnormals) and capped at K
//   z = |x| - (m - 1) * 2^23    the float's significand, with the exponent above K kept on top
//   s = 23 - M + K - m          bits of z below the format's ulp
//   code = round(z >> s)        the codes are contiguous, so a carry moves into the exponent
//
// For a value in the format's normal range z >> s is the code itself (exponent field and mantissa
// bits); below it z is the significand and s the subnormal shift. The rounding step adds a bias
// before the variable shift (nearest modes) or derives the carry from the discarded bits scaled to
// 32 bits (stochastic, exactly codec.hpp's floor(fraction * 2^32) + r >= 2^32). Overflow is a
// minimum with a per-lane limit (max finite, or the Inf/NaN code right above it), NaN a blend.
//
// Decoding FP8 and FP6 into float32 goes through float16 and F16C's vcvtph2ps (half_twin); the
// 4-bit format uses a 16-entry vpshufb table built from the scalar codec; E8M0, and every byte
// format into float16 / bfloat16, build each value's bfloat16 (or float16) pattern in 16-bit
// lanes (NaN 0x7FC0 with the code's sign, as codec.hpp's pack_float): arithmetic for the normal
// numbers, a vpshufb table for the subnormals (half_from_codes); where a format's codes split into
// a low nibble that gives the result's low byte and bits that give its high byte by a table or by
// byte arithmetic (split_tables: every byte format either holds exactly, E8M0 aside), byte
// lookups and byte arithmetic on 32 codes at a time instead (split32).
//
// The per-lane arithmetic that the AVX-512 kernels (avx512.hpp) share, path 1's direct_code with
// normal_t and the decoders' half_twin_bits, is written once over the vector width in lanes.hpp
// (kernels/vec.hpp's traits) and included below for 256 bits.
//
// Policies: all rounding modes, both overflow modes, and every special-value knob except
// unsigned_input::invalid and unsigned_range::before_rounding on unsigned formats (E8M0), which
// the dispatcher sends to the scalar path (see supports_policy).
#ifndef LOWBIT_KERNELS_CONVERT_AVX2_HPP
#define LOWBIT_KERNELS_CONVERT_AVX2_HPP

#include "../../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/packing.hpp"
#include "../../formats/minifloat.hpp"
#include "../../formats/spec.hpp"
#include "../avx2_common.hpp"
#include "../vec.hpp"
#include "../fp_env.hpp"

#ifndef LOWBIT_PREFETCH_BYTES
#define LOWBIT_PREFETCH_BYTES 2048
#endif

namespace lowbit {
namespace kernels {
namespace avx2 {

// ------------------------------------------------------------------------------------------------
// What the AVX2 path covers.

template <class T>
struct is_half_type : std::integral_constant<bool, std::is_same<T, minifloat<formats::binary16>>::value ||
                                                      std::is_same<T, minifloat<formats::bfloat16>>::value> {};

template <class T, class = void>
struct is_byte_minifloat : std::false_type {};
template <class F>
struct is_byte_minifloat<minifloat<F>, void> : std::integral_constant<bool, (F::bits <= 8)> {};

// Sources read directly: float32, float16 and bfloat16. Byte-sized formats are read too, but only
// for decoding into float16 / bfloat16 (a byte format into another one goes through a float32
// stage: convert.hpp's encode_through_float).
template <class From, class T>
struct can_encode
    : std::integral_constant<bool, is_minifloat<T>::value &&
                                       (std::is_same<From, float>::value || is_half_type<From>::value ||
                                        (is_byte_minifloat<From>::value && is_half_type<T>::value))> {};

template <class F>
struct can_decode : std::integral_constant<bool, (F::bits <= 8) || is_half_type<minifloat<F>>::value> {};

// The knobs the kernels leave to the scalar path: E8M0's invalid inputs (ml_dtypes) and its range
// check before rounding (ONNX).
template <class F>
constexpr bool supports_policy(const policy& p) noexcept {
  return F::is_signed ||
         (p.unsigned_input == unsigned_input::magnitude && p.unsigned_range == unsigned_range::after_rounding);
}

namespace detail {

using lowbit::detail::inf_code;
using lowbit::detail::nan_code;

// ------------------------------------------------------------------------------------------------
// Encoding: 8 float32 bit patterns -> 8 codes in 32-bit lanes.

// How the largest allowed magnitude code is chosen per lane (see encode_lanes).
enum class limit_mode : std::uint8_t {
  constant,        // every lane: `limit`
  inf_lanes,       // max finite, and the Inf code for +-Inf inputs
  inf_or_positive  // max finite for negative finite inputs, else the Inf code
};

// The per-call constants of one conversion, as scalars (built outside the target functions).
struct encode_setup {
  std::uint32_t nan_pos = 0, nan_neg = 0;  // complete codes for +NaN and -NaN
  std::uint32_t limit = 0;                 // largest magnitude code of a finite (inf_or_positive: positive) lane
  std::uint32_t max_bits = 0;              // largest finite magnitude
  std::uint32_t inf_step = 0;              // Inf code - max_bits: 1, or 0 where the format has no Inf/NaN
  limit_mode mode = limit_mode::constant;
  std::uint32_t inf_pos = 0, inf_neg = 0;  // the modes but constant: complete codes for +Inf and -Inf
  std::uint32_t special_top = 0;           // the largest |x| bits a block may hold without special lanes
  std::uint32_t t_top = 0;                 // fast_path: the largest t a block may hold (t(Inf), or below)
  std::uint32_t direct[3] = {0, 0, 0};     // direct_path: normal_t's addend, mn, k << 23
  std::uint8_t sign_byte = 0;              // F::sign_mask
};

template <class F>
constexpr encode_setup make_setup(const policy& p) noexcept {
  encode_setup s;
  s.nan_pos = nan_code<F>(false, p);
  s.nan_neg = nan_code<F>(true, p);
  // Inf stands for NaN in fn/fnuz formats and for max in formats without either; in each case its
  // magnitude code is max_bits or max_bits + 1 (fnuz: 0x80, which absorbs the sign bit).
  const std::uint32_t inf_magnitude = inf_code<F>(false);
  s.max_bits = F::max_bits;
  s.sign_byte = static_cast<std::uint8_t>(F::sign_mask & 0xFFu);
  s.inf_step = inf_magnitude - F::max_bits;
  s.limit = F::max_bits;
  if (p.ov == overflow::saturate) {
    s.mode = p.inf == inf_policy::saturate ? limit_mode::constant : limit_mode::inf_lanes;
  } else if (p.rm == rounding::toward_zero) {
    s.mode = limit_mode::inf_lanes;  // finite values never overflow to Inf when truncated
  } else if (p.rm == rounding::toward_pos_inf) {
    // `limit` is the positive lanes' (the AVX-512 blocks cap the negative finite ones at max_bits).
    s.mode = F::is_signed ? limit_mode::inf_or_positive : limit_mode::constant;
    s.limit = inf_magnitude;
  } else {
    s.limit = inf_magnitude;
  }
  s.inf_pos = inf_code<F>(false);
  s.inf_neg = inf_code<F>(F::is_signed);
  // NaN lanes always take their codes from nan_pos / nan_neg; Inf lanes too in the other modes.
  s.special_top = s.mode == limit_mode::constant ? 0x7F800000u : 0x7F7FFFFFu;
  return s;
}

struct encode_vectors {
  __m256i nan_pos, nan_neg, limit, max_bits, inf_step;
  __m256i limit_bytes, limit_words;  // `limit` and the special codes in 8- and 16-bit lanes (the blocks)
  __m256i nan_bytes, nan_words, nan_neg_bytes, nan_neg_words;
  __m256i inf_bytes, inf_words, inf_neg_bytes, inf_neg_words, special_top;
  // Per-call values rather than constants in the code: GCC rematerialises constant vectors inside
  // a loop that runs short of registers (three instructions each); these it reads from memory.
  __m256i t_top, sign_bytes, direct[3];
  limit_mode mode;
  bool nan_signed;
};

LOWBIT_AVX2_INLINE encode_vectors broadcast(const encode_setup& s) {
  encode_vectors v;
  v.nan_pos = _mm256_set1_epi32(static_cast<int>(s.nan_pos));
  v.nan_neg = _mm256_set1_epi32(static_cast<int>(s.nan_neg));
  v.limit = _mm256_set1_epi32(static_cast<int>(s.limit));
  v.max_bits = _mm256_set1_epi32(static_cast<int>(s.max_bits));
  v.inf_step = _mm256_set1_epi32(static_cast<int>(s.inf_step));
  v.limit_bytes = _mm256_set1_epi8(static_cast<char>(s.limit < 0xFF ? s.limit : 0xFF));
  v.limit_words = _mm256_set1_epi16(static_cast<short>(s.limit));
  v.nan_bytes = _mm256_set1_epi8(static_cast<char>(s.nan_pos));
  v.nan_words = _mm256_set1_epi16(static_cast<short>(s.nan_pos));
  v.nan_neg_bytes = _mm256_set1_epi8(static_cast<char>(s.nan_neg));
  v.nan_neg_words = _mm256_set1_epi16(static_cast<short>(s.nan_neg));
  v.inf_bytes = _mm256_set1_epi8(static_cast<char>(s.inf_pos));
  v.inf_words = _mm256_set1_epi16(static_cast<short>(s.inf_pos));
  v.inf_neg_bytes = _mm256_set1_epi8(static_cast<char>(s.inf_neg));
  v.inf_neg_words = _mm256_set1_epi16(static_cast<short>(s.inf_neg));
  v.special_top = _mm256_set1_epi32(static_cast<int>(s.special_top));
  v.t_top = _mm256_set1_epi32(static_cast<int>(s.t_top));
  for (int k = 0; k < 3; ++k) v.direct[k] = _mm256_set1_epi32(static_cast<int>(s.direct[k]));
  v.sign_bytes = _mm256_set1_epi8(static_cast<char>(s.sign_byte));
  v.mode = s.mode;
  v.nan_signed = s.nan_pos != s.nan_neg;
  return v;
}

// ------------------------------------------------------------------------------------------------
// Decoding: codes -> bfloat16 / float32 bit patterns.

// The bits, in the 16-bit IEEE-style format H (bfloat16 or float16), of m * 2^e for 0 <= m < 16,
// a value H holds exactly (at most 4 significant bits, within H's range).
template <class H>
constexpr std::uint16_t half_bits_of(std::uint32_t m, int e) noexcept {
  if (m == 0) return 0;
  int top = 0;
  while ((m >> (top + 1)) != 0) ++top;
  const int exponent = e + top;  // value in [2^exponent, 2^(exponent+1))
  constexpr int MH = H::mantissa_bits;
  if (exponent < H::min_exponent)  // an H subnormal: m * 2^e in units of 2^(min_exponent - MH)
    return static_cast<std::uint16_t>(m << (e - (H::min_exponent - MH)));
  return static_cast<std::uint16_t>(static_cast<std::uint32_t>(exponent + H::bias) << MH |
                                    ((m << (MH - top)) & H::mantissa_mask));
}

// Whether every value of the byte format F is exactly an H, with F's normal numbers H's normal
// numbers (what half_from_codes needs).
template <class F, class H>
struct holds_exactly
    : std::integral_constant<bool, F::bits <= 8 && F::mantissa_bits <= 3 && F::mantissa_bits <= H::mantissa_bits &&
                                       F::max_exponent <= H::max_exponent &&
                                       (F::has_subnormals ? (F::min_exponent >= H::min_exponent &&
                                                             F::min_exponent - F::mantissa_bits >=
                                                                 H::min_exponent - H::mantissa_bits)
                                                          : F::min_exponent >= H::min_exponent - 1)> {};

// The vpshufb table of the subnormals: for m = 0..7, the H bits of m * 2^(min_exponent - M)
// minus what the normal-number formula gives for the code m (mod 2^16), so that adding it where
// the field is 0 corrects the formula.
template <class F, class H>
struct subnormal_table {
  static constexpr int e = F::min_exponent - F::mantissa_bits;
  static constexpr std::uint16_t normal(std::uint32_t m) noexcept {
    return static_cast<std::uint16_t>((m << (H::mantissa_bits - F::mantissa_bits)) + ((H::bias - F::bias) << H::mantissa_bits));
  }
  static constexpr std::uint16_t fix(std::uint32_t m) noexcept {
    return static_cast<std::uint16_t>(half_bits_of<H>(m, e) - normal(m));
  }
  static constexpr std::uint16_t v[8] = {fix(0), fix(1), fix(2), fix(3), fix(4), fix(5), fix(6), fix(7)};
};

// 16 codes of a byte format F, one per 16-bit lane (already masked to the code) -> their values
// as bit patterns of H (bfloat16 by default), exactly as codec.hpp decodes them. NaN becomes
// H's quiet NaN (bfloat16 0x7FC0, float16 0x7E00) with the code's sign (none for FNUZ).
// Numbers: the caller knows that no code is NaN or Inf (no specials' fix-ups).
template <class F, class H = formats::bfloat16, bool Numbers = false>
LOWBIT_AVX2_INLINE __m256i half_from_codes(__m256i w) {
  constexpr int M = F::mantissa_bits;
  constexpr int MH = H::mantissa_bits;
  static_assert(holds_exactly<F, H>::value, "H holds every value of F");
  const short quiet_nan = static_cast<short>(H::quiet_nan_bits);
  const __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(static_cast<short>(F::magnitude_mask)));
  // Normal numbers: the exponent field rebiased, the mantissa moved to the top.
  __m256i r = _mm256_add_epi16(_mm256_slli_epi16(mag, MH - M), _mm256_set1_epi16(static_cast<short>((H::bias - F::bias) << MH)));
  if constexpr (F::has_subnormals) {
    using t = subnormal_table<F, H>;
    const __m256i table = _mm256_setr_epi16(
        static_cast<short>(t::v[0]), static_cast<short>(t::v[1]), static_cast<short>(t::v[2]),
        static_cast<short>(t::v[3]), static_cast<short>(t::v[4]), static_cast<short>(t::v[5]),
        static_cast<short>(t::v[6]), static_cast<short>(t::v[7]), static_cast<short>(t::v[0]),
        static_cast<short>(t::v[1]), static_cast<short>(t::v[2]), static_cast<short>(t::v[3]),
        static_cast<short>(t::v[4]), static_cast<short>(t::v[5]), static_cast<short>(t::v[6]),
        static_cast<short>(t::v[7]));
    // Byte indices 2m and 2m+1 select word m of the table.
    const __m256i index = _mm256_add_epi16(_mm256_mullo_epi16(mag, _mm256_set1_epi16(0x0202)), _mm256_set1_epi16(0x0100));
    const __m256i fix = _mm256_shuffle_epi8(table, index);
    r = _mm256_add_epi16(r, _mm256_and_si256(fix, _mm256_cmpgt_epi16(_mm256_set1_epi16(1 << M), mag)));
  } else {
    // Field 0 is 2^-bias; below H's normal range that is an H subnormal (E8M0 in bfloat16: 0x0040).
    static_assert(M == 0, "formats without subnormals have no mantissa here");
    if constexpr (F::min_exponent < H::min_exponent) {
      const __m256i smallest = _mm256_set1_epi16(static_cast<short>(half_bits_of<H>(1, F::min_exponent)));
      r = _mm256_blendv_epi8(r, smallest, _mm256_cmpeq_epi16(mag, _mm256_setzero_si256()));
    }
  }
  if constexpr (Numbers) {
  } else if constexpr (F::specials == special_values::fn) {
    // The formula gives `at_nan` for the all-ones magnitude; move it to the quiet NaN.
    constexpr std::uint16_t at_nan = static_cast<std::uint16_t>((F::magnitude_mask << (MH - M)) + ((H::bias - F::bias) << MH));
    const __m256i is_nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(static_cast<short>(F::magnitude_mask)));
    r = _mm256_add_epi16(r, _mm256_and_si256(is_nan, _mm256_set1_epi16(static_cast<short>(H::quiet_nan_bits - at_nan))));
  } else if constexpr (F::specials == special_values::ieee) {
    const __m256i special = _mm256_cmpgt_epi16(mag, _mm256_set1_epi16(static_cast<short>(F::max_bits)));
    const __m256i is_inf = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(static_cast<short>(F::inf_bits)));
    const __m256i value = _mm256_blendv_epi8(_mm256_set1_epi16(quiet_nan), _mm256_set1_epi16(static_cast<short>(H::inf_bits)), is_inf);
    r = _mm256_blendv_epi8(r, value, special);
  }
  if constexpr (F::specials == special_values::fnuz && !Numbers) {
    // The -0 pattern is the NaN, and it has no sign: mag is 0 there, so r is +0 until now.
    const __m256i is_nan = _mm256_cmpeq_epi16(w, _mm256_set1_epi16(static_cast<short>(F::sign_mask)));
    const __m256i sign = _mm256_slli_epi16(_mm256_andnot_si256(is_nan, w), 15 - (F::bits - 1));
    const __m256i sign_only = _mm256_and_si256(sign, _mm256_set1_epi16(static_cast<short>(0x8000)));
    r = _mm256_or_si256(_mm256_or_si256(r, sign_only), _mm256_and_si256(is_nan, _mm256_set1_epi16(quiet_nan)));
  } else if constexpr (F::is_signed) {
    constexpr int sign_shift = 15 - (F::bits - 1);
    r = _mm256_or_si256(r, _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(static_cast<short>(F::sign_mask))), sign_shift));
  }
  return r;
}

// The value of each of the 16 codes of a 4-bit format, as bfloat16 bits, split into the low and
// high byte tables of vpshufb. Built from the scalar codec, once.
template <class F>
struct nibble_tables {
  std::uint8_t lo[16];
  std::uint8_t hi[16];
  nibble_tables() noexcept {
    for (std::uint32_t c = 0; c < 16; ++c) {
      const float x = lowbit::detail::pack_float(lowbit::detail::unpack_bits<F>(c));
      const std::uint32_t bits = lowbit::detail::bit_cast<std::uint32_t>(x);
      lo[c] = static_cast<std::uint8_t>(bits >> 16);
      hi[c] = static_cast<std::uint8_t>(bits >> 24);
    }
  }
  static const nibble_tables& get() noexcept {
    static const nibble_tables t;
    return t;
  }
};

// Every FP8 and FP6 format is a float16 in disguise: a code's exponent and mantissa fields, moved
// so that the exponent field's lowest bit is float16's (bit 10) and the sign put on bit 15, are
// the float16 of the code's value times 2^(bias - 15) (subnormals included: the field-0 binade
// moves with the rest). This needs F's exponent fields to be float16 numbers, or float16's
// Inf/NaN where F's are too: E <= 4, or E = 5 with IEEE specials (E5M2, which is then float16's
// top byte). E5M2FNUZ, whose field 31 holds numbers, spans float16's range one binade lower and
// is float16 itself after a remap (half_twin_bits). vcvtph2ps widens a float16 exactly, and its
// half-precision input ignores MXCSR.DAZ (Intel SDM, VCVTPH2PS); the product by 2^(15 - bias)
// that follows is exact and normal, so no MXCSR state changes it either. F16C keeps a NaN's
// payload where the codec returns the canonical quiet NaN (0x7FC00000 with the sign, none for
// FNUZ), so NaN codes are made the float16 quiet NaN 0x7E00 (with the sign) first.
template <class F>
struct half_twin {
  static constexpr bool e5m2fnuz = F::exponent_bits == 5 && F::specials == special_values::fnuz;
  static constexpr bool value = F::bits <= 8 && F::bits >= 6 && F::is_signed &&
                                (F::exponent_bits <= 4 || F::specials == special_values::ieee || e5m2fnuz);
  static constexpr float scale = e5m2fnuz ? 1.0f : static_cast<float>(1u << (15 - F::bias));  // float16 -> value
};

// 32 E5M2 codes with the NaN codes made the one that widens to the canonical NaN.
LOWBIT_AVX2_INLINE __m256i e5m2_canonical_nan(__m256i codes) {
  // NaN magnitudes 0x7D..0x7F (0x7C is Inf) become 0x7E.
  const __m256i mag = _mm256_and_si256(codes, _mm256_set1_epi8(0x7F));
  const __m256i is_nan = _mm256_cmpgt_epi8(mag, _mm256_set1_epi8(0x7C));
  return _mm256_xor_si256(codes, _mm256_and_si256(is_nan, _mm256_xor_si256(mag, _mm256_set1_epi8(0x7E))));
}

// The normal-range formula. For |x| in [2^min_exponent, Inf] the ulp is 2^(e - M) and the rounding
// position is the constant bit S = 23 - M of |x|. With mn = K * 2^23 (the smallest normal's bits),
//   t = |x| - mn + bias (+ lsb),   code = (t >> S) + 2^M,
// which is magnitude_lanes with z = t + 2^23 - bias and shift = S (the 2^23 carries the implicit
// bit; it is a multiple of 2^S, so it moves out of the rounding as the 2^M).
template <class F, rounding RM>
struct normal_range {
  static constexpr int M = F::mantissa_bits;
  static constexpr int S = 23 - M;
  static constexpr std::uint32_t mn = static_cast<std::uint32_t>(F::min_exponent + 127) << 23;
  static constexpr std::uint32_t bias = (RM == rounding::nearest_even || RM == rounding::nearest_toward_zero)
                                            ? (1u << (S - 1)) - 1u
                                        : RM == rounding::nearest_away ? 1u << (S - 1)
                                                                       : 0u;
  static constexpr std::uint32_t t_inf = 0x7F800000u - mn + bias;  // bit S of Inf is 0
  static constexpr bool rounding_supported = RM != rounding::toward_pos_inf;  // sign-dependent
};

// Path 1, for round-to-nearest-even and toward-zero (lowbit's default and the truncation of
// the CUDA intrinsics), every format with subnormals: any block without a NaN, whatever the
// range of its values (zero, float subnormals, the format's subnormals, normals, overflow, Inf).
// Two codes per lane, and their maximum:
//   normal:    (t >> S) + 2^M with an arithmetic shift (normal_t, the 2^M in its addend).
//              Exact from mn up; below mn it is the same rounding of a smaller value (in the
//              binade under mn the bits fall twice as fast as the value), so at most the true code.
//   subnormal: min(|x|, mn) * 2^(M - min_exponent), rounded to an integer by vcvtps2dq
//              (nearest-even) or truncated by vcvttps2dq (toward zero): the code of a value in the
//              format's subnormal range, and 2^M (the smallest normal's code, at most the true
//              code) from mn up.
// The product by a power of two is an integer addition to the exponent field, so every float
// operand is a normal number and neither DAZ nor FTZ changes a result; vcvtps2dq rounds as
// MXCSR says, so encode_variant runs the path under an ieee_scope_traceless (round to nearest,
// and the caller's MXCSR back whole, flags included). A float subnormal (exponent field 0) comes
// out of the addition as a value below 2^(k - 126), k = M - min_exponent <= 24, which rounds to 0
// as it should. Formats whose smallest normal is float32's (bfloat16: K = 1) need no second
// code: the shift S is the same below mn.
//
// E8M0 (no subnormals, no mantissa, smallest value 2^-127 with code 0) is a third shape: the code
// is the float's exponent field, rounded up on bit 22 for nearest-even (the significand is always
// odd, so a tie goes up). A float subnormal lies between codes 0 and 1 (2^-127 is its bit 22) and
// rounds up from 1.5 * 2^-127 on: bit 21 is taken off such inputs before the same rounding.
template <class F, rounding RM>
struct direct_path {
  static constexpr bool exponent_only = !F::has_subnormals && F::mantissa_bits == 0 && F::min_exponent == -127;
  static constexpr bool available = (F::has_subnormals || exponent_only) && F::bits <= 16 &&
                                    (RM == rounding::nearest_even || RM == rounding::toward_zero);
  static constexpr int K = F::min_exponent + 127;
  static constexpr int k = F::mantissa_bits - F::min_exponent;  // the exponent of the product
  static_assert(!available || exponent_only || K == 1 || (K > 1 && k <= 124), "float subnormals must round to 0");
};

template <class F, rounding RM>
constexpr void make_direct_setup(encode_setup& s) noexcept {
  using nr = normal_range<F, RM>;
  if constexpr (direct_path<F, RM>::exponent_only) {
    s.direct[0] = 1u << 22;
    s.direct[1] = 1u << 23;
    s.direct[2] = 1u << 21;
  } else {
    s.direct[0] = nr::bias - nr::mn + (1u << 23);  // normal_t's addend, with the code's base 2^M
    s.direct[1] = nr::mn;
    s.direct[2] = static_cast<std::uint32_t>(direct_path<F, RM>::k) << 23;
  }
}
template <class F, rounding RM>
constexpr encode_setup direct_setup() noexcept {
  encode_setup s;
  make_direct_setup<F, RM>(s);
  return s;
}

// The per-lane arithmetic shared with the AVX-512 kernels: normal_t, direct_code,
// scaled_direct_code, half_twin_bits.
using V = w256;
#define LOWBIT_VEC_INLINE LOWBIT_AVX2_INLINE
#include "lanes.hpp"
#undef LOWBIT_VEC_INLINE

// Encodes 8 float32 bit patterns `b` into format F under any policy the kernels support (limit
// and NaN codes read from v). Returns complete codes, one per 32-bit lane.
template <class F, rounding RM>
LOWBIT_AVX2_INLINE __m256i encode_lanes(__m256i b, __m256i r, const encode_vectors& v) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i a = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i n = magnitude_lanes<F, RM>(b, a, r);

  // Overflow, Inf: the magnitude code is at most the lane's limit (max finite, or the Inf/NaN
  // code right above it). NaN inputs get a code here too and are replaced below.
  __m256i limit = v.limit;
  if (v.mode != limit_mode::constant) {
    const __m256i is_inf = _mm256_cmpeq_epi32(a, _mm256_set1_epi32(0x7F800000));
    __m256i to_inf = is_inf;
    if (v.mode == limit_mode::inf_or_positive) to_inf = _mm256_andnot_si256(_mm256_andnot_si256(is_inf, b), _mm256_set1_epi32(-1));
    limit = _mm256_add_epi32(v.max_bits, _mm256_and_si256(_mm256_srai_epi32(to_inf, 31), v.inf_step));
  }
  __m256i code = _mm256_min_epu32(n, limit);

  if constexpr (F::is_signed) {
    __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(b, 31), F::bits - 1);
    if constexpr (!F::has_negative_zero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi32(code, zero), sign);  // fnuz
    code = _mm256_or_si256(code, sign);
  }

  const __m256i is_nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
  const __m256i nan = v.nan_signed ? _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(v.nan_pos),
                                                                          _mm256_castsi256_ps(v.nan_neg),
                                                                          _mm256_castsi256_ps(b)))
                                   : v.nan_pos;
  return _mm256_blendv_epi8(code, nan, is_nan);
}

// 8 float16 patterns from half_twin_bits -> the float32 bit patterns of their values.
template <class F>
LOWBIT_AVX2_INLINE __m256i f32_of_half_twin(__m128i h) {
  constexpr float scale = half_twin<F>::scale;
  const __m256 v = _mm256_cvtph_ps(h);
  return _mm256_castps_si256(scale == 1.0f ? v : _mm256_mul_ps(v, _mm256_set1_ps(scale)));
}

// 32 codes in element order, one per byte (masked to the code) -> 32 float32 bit patterns.
template <class F>
LOWBIT_AVX2_INLINE void f32_from_code_bytes(__m256i codes, __m256i out[4], const __m256i* nibble_lo,
                                            const __m256i* nibble_hi) {
  const __m256i zero = _mm256_setzero_si256();
  if constexpr (half_twin<F>::value) {
    // unpack{lo,hi} give elements 0-7 | 16-23 and 8-15 | 24-31, as code << 8.
    if constexpr (F::specials == special_values::ieee) codes = e5m2_canonical_nan(codes);
    const __m256i lo = half_twin_bits<F>(_mm256_unpacklo_epi8(zero, codes));
    const __m256i hi = half_twin_bits<F>(_mm256_unpackhi_epi8(zero, codes));
    // Written out: GCC -O2 keeps a loop's array in memory.
    out[0] = f32_of_half_twin<F>(_mm256_castsi256_si128(lo));
    out[1] = f32_of_half_twin<F>(_mm256_castsi256_si128(hi));
    out[2] = f32_of_half_twin<F>(_mm256_extracti128_si256(lo, 1));
    out[3] = f32_of_half_twin<F>(_mm256_extracti128_si256(hi, 1));
    return;
  }
  const __m256i p = prepare_widen(codes);
  __m256i w0, w1;
  if constexpr (F::bits <= 4) {
    const __m256i lo = _mm256_shuffle_epi8(*nibble_lo, p);
    const __m256i hi = _mm256_shuffle_epi8(*nibble_hi, p);
    w0 = _mm256_unpacklo_epi8(lo, hi);
    w1 = _mm256_unpackhi_epi8(lo, hi);
  } else {
    w0 = half_from_codes<F>(_mm256_unpacklo_epi8(p, zero));
    w1 = half_from_codes<F>(_mm256_unpackhi_epi8(p, zero));
  }
  out[0] = _mm256_unpacklo_epi16(zero, w0);
  out[1] = _mm256_unpackhi_epi16(zero, w0);
  out[2] = _mm256_unpacklo_epi16(zero, w1);
  out[3] = _mm256_unpackhi_epi16(zero, w1);
}

// 8 float16 values -> float32 bit patterns, exactly: vcvtph2ps, which ignores MXCSR.DAZ for its
// half-precision input (see half_twin). It quiets a NaN and keeps its payload; CanonicalNaN
// clears the payload (0x7FC00000 with the sign), as the scalar decode does.
template <bool CanonicalNaN>
LOWBIT_AVX2_INLINE __m256i f32_from_f16(__m128i h) {
  const __m256 v = _mm256_cvtph_ps(h);
  const __m256i r = _mm256_castps_si256(v);
  if constexpr (!CanonicalNaN) return r;
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));  // a quiet compare
  return _mm256_andnot_si256(_mm256_and_si256(is_nan, _mm256_set1_epi32(0x003FFFFF)), r);
}

// 16 bfloat16 bit patterns with every NaN made 0x7FC0 with its sign, as the scalar decode does.
LOWBIT_AVX2_INLINE __m256i bf16_canonical_nan(__m256i w) {
  const __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7FFF));
  const __m256i is_nan = _mm256_cmpgt_epi16(mag, _mm256_set1_epi16(0x7F80));
  return _mm256_xor_si256(w, _mm256_and_si256(is_nan, _mm256_xor_si256(mag, _mm256_set1_epi16(0x7FC0))));
}

// 16 bfloat16 bit patterns -> the float32 bit patterns of elements 0-7 (lo) and 8-15 (hi).
LOWBIT_AVX2_INLINE void f32_from_bf16(__m256i w, __m256i* lo, __m256i* hi) {
  const __m256i q = _mm256_permute4x64_epi64(w, 0xD8);  // elements 0-3 8-11 | 4-7 12-15
  *lo = _mm256_unpacklo_epi16(_mm256_setzero_si256(), q);
  *hi = _mm256_unpackhi_epi16(_mm256_setzero_si256(), q);
}

// ------------------------------------------------------------------------------------------------
// Readers: 32 source elements -> four vectors of float32 bit patterns.

template <class From>
struct reader;

template <>
struct reader<float> {
  LOWBIT_AVX2_INLINE void operator()(const float* p, __m256i out[4]) const {
    out[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    out[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8));
    out[2] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    out[3] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 24));
  }
};

template <class F>
struct reader<minifloat<F>> {
  // Only used for the byte formats and the two 16-bit ones.
  __m256i nibble_lo, nibble_hi;

  LOWBIT_AVX2_INLINE reader() {
    if constexpr (F::bits <= 4) {
      const auto& t = nibble_tables<F>::get();
      nibble_lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.lo)));
      nibble_hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.hi)));
    } else {
      nibble_lo = nibble_hi = _mm256_setzero_si256();
    }
  }

  template <bool CanonicalNaN = false>
  LOWBIT_AVX2_INLINE void read(const minifloat<F>* p, __m256i out[4]) const {
    if constexpr (F::bits <= 8) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i codes = _mm256_and_si256(bytes, _mm256_set1_epi8(static_cast<char>(F::code_mask)));
      f32_from_code_bytes<F>(codes, out, &nibble_lo, &nibble_hi);
    } else if constexpr (std::is_same<F, formats::binary16>::value) {
      out[0] = f32_from_f16<CanonicalNaN>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      out[1] = f32_from_f16<CanonicalNaN>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
      out[2] = f32_from_f16<CanonicalNaN>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
      out[3] = f32_from_f16<CanonicalNaN>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 24)));
    } else {
      static_assert(std::is_same<F, formats::bfloat16>::value, "16-bit sources: float16 and bfloat16");
      __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
      if constexpr (CanonicalNaN) {
        w0 = bf16_canonical_nan(w0);
        w1 = bf16_canonical_nan(w1);
      }
      f32_from_bf16(w0, &out[0], &out[1]);
      f32_from_bf16(w1, &out[2], &out[3]);
    }
  }
  LOWBIT_AVX2_INLINE void operator()(const minifloat<F>* p, __m256i out[4]) const { read<false>(p, out); }
};

// ------------------------------------------------------------------------------------------------
// Writers: 32 codes in 32-bit lanes -> the destination layout.

enum class layout : std::uint8_t { bytes, words, nibbles, sextets };

template <layout L>
constexpr std::size_t layout_bytes(std::size_t n) noexcept {
  return L == layout::words     ? 2 * n
         : L == layout::nibbles ? packed_bytes(n, 4)
         : L == layout::sextets ? packed_bytes(n, 6)
                                : n;
}

template <layout L>
LOWBIT_AVX2_INLINE void write32(std::uint8_t* dst, const __m256i c[4]) {
  if constexpr (L == layout::words) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), pack_dwords_to_words(c[0], c[1]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32), pack_dwords_to_words(c[2], c[3]));
  } else if constexpr (L == layout::bytes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), pack_dwords_to_bytes(c));
  } else if constexpr (L == layout::nibbles) {
    store_nibbles(dst, pack_dwords_to_bytes(c));
  } else {
    store_sextets(dst, pack_dwords_to_bytes(c));
  }
}

// ------------------------------------------------------------------------------------------------
// Loops.

template <rounding RM>
LOWBIT_AVX2_INLINE __m256i load_random(const std::uint32_t* random_bits, int k) {
  if (RM != rounding::stochastic || random_bits == nullptr) return _mm256_setzero_si256();
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(random_bits + 8 * k));
}

// ------------------------------------------------------------------------------------------------
// Blocks of 32, for nearest-even, toward zero and stochastic rounding, under every policy (each has
// one limit for the finite lanes).
// Three ways to get the magnitude codes, one way to finish them: saturate, sign and the special
// lanes' codes are applied to the packed bytes (words for 16-bit formats), 32 (16) at a time.

// How the codes handed to finish_block are expressed.
enum class code_form : std::uint8_t {
  exact,            // the magnitude code, >= 0 (unlimited)
  minus_base        // code - 2^M, >= 0 (unlimited)
};

// The signs of 32 inputs, packed early so the inputs need not stay live: signed saturation
// keeps each float's sign, as 0x80/0x00..0x7F bytes (one vector) or 0x8000-or-less words (two).
template <layout L>
LOWBIT_AVX2_INLINE void pack_signs(const __m256i x[4], __m256i signs[2]) {
  const __m256i w01 = _mm256_packs_epi32(x[0], x[1]);
  const __m256i w23 = _mm256_packs_epi32(x[2], x[3]);
  if constexpr (L == layout::words) {
    signs[0] = w01;
    signs[1] = w23;
  } else {
    signs[0] = _mm256_packs_epi16(w01, w23);
    signs[1] = signs[0];
  }
}

// Completes 32 magnitude codes c (in 32-bit lanes) with their inputs' signs (pack_signs) and
// stores them in layout L. MayNaN: some input x may be NaN or, under limit_mode::inf_lanes, +-Inf
// (such a lane gets v's code for it and its sign; x is read only then). MayZero: some code may be
// 0 (FNUZ: no sign).
template <class F, layout L, code_form Form, bool MayNaN, bool MayZero>
LOWBIT_AVX2_INLINE void finish_block(const __m256i c[4], const __m256i signs[2], const __m256i* x,
                                     std::uint8_t* dst, const encode_vectors& v) {
  constexpr int base = 1 << F::mantissa_bits;
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  if constexpr (L == layout::words) {
    static_assert(F::is_signed && F::specials == special_values::ieee, "16-bit formats: float16 and bfloat16");
    for (int h = 0; h < 2; ++h) {
      __m256i w = _mm256_packus_epi32(c[2 * h], c[2 * h + 1]);  // saturates at 0xFFFF
      if constexpr (Form == code_form::minus_base) w = _mm256_adds_epu16(w, _mm256_set1_epi16(static_cast<short>(base)));
      w = _mm256_min_epu16(w, v.limit_words);
      const __m256i sign = _mm256_and_si256(signs[h], _mm256_set1_epi16(static_cast<short>(0x8000)));
      w = _mm256_or_si256(w, sign);
      if constexpr (MayNaN) {
        const __m256i a0 = _mm256_and_si256(x[2 * h], abs_mask), a1 = _mm256_and_si256(x[2 * h + 1], abs_mask);
        const __m256i neg = _mm256_srai_epi16(signs[h], 15);
        const __m256i nan = _mm256_packs_epi32(_mm256_cmpgt_epi32(a0, inf), _mm256_cmpgt_epi32(a1, inf));
        w = _mm256_blendv_epi8(w, _mm256_blendv_epi8(v.nan_words, v.nan_neg_words, neg), nan);
        if (v.mode == limit_mode::inf_lanes) {
          const __m256i is_inf = _mm256_packs_epi32(_mm256_cmpeq_epi32(a0, inf), _mm256_cmpeq_epi32(a1, inf));
          w = _mm256_blendv_epi8(w, _mm256_blendv_epi8(v.inf_words, v.inf_neg_words, neg), is_inf);
        }
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * h), _mm256_permute4x64_epi64(w, 0xD8));
    }
  } else {
    // Bytes in the in-lane order of the packs; one permutation at the end puts them in order.
    __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(c[0], c[1]), _mm256_packus_epi32(c[2], c[3]));  // saturating
    if constexpr (Form == code_form::minus_base) b = _mm256_adds_epu8(b, _mm256_set1_epi8(static_cast<char>(base)));
    b = _mm256_min_epu8(b, v.limit_bytes);
    if constexpr (F::is_signed) {
      __m256i sign = _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_setzero_si256(), signs[0]), v.sign_bytes);
      if constexpr (!F::has_negative_zero && MayZero)
        sign = _mm256_andnot_si256(_mm256_cmpeq_epi8(b, _mm256_setzero_si256()), sign);  // FNUZ: +0 only
      b = _mm256_or_si256(b, sign);
    }
    if constexpr (MayNaN) {
      // signs[0]: the inputs' signs in the bytes' order, in each byte's top bit (blendv's select).
      __m256i a[4], n[4];
      for (int k = 0; k < 4; ++k) a[k] = _mm256_and_si256(x[k], abs_mask);
      for (int k = 0; k < 4; ++k) n[k] = _mm256_cmpgt_epi32(a[k], inf);
      const __m256i m = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
      b = _mm256_blendv_epi8(b, _mm256_blendv_epi8(v.nan_bytes, v.nan_neg_bytes, signs[0]), m);
      if (v.mode == limit_mode::inf_lanes) {
        for (int k = 0; k < 4; ++k) n[k] = _mm256_cmpeq_epi32(a[k], inf);
        const __m256i i = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
        b = _mm256_blendv_epi8(b, _mm256_blendv_epi8(v.inf_bytes, v.inf_neg_bytes, signs[0]), i);
      }
    }
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    if constexpr (L == layout::bytes)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), b);
    else if constexpr (L == layout::nibbles)
      store_nibbles(dst, b);
    else
      store_sextets(dst, b);
  }
}

// Path 2, for stochastic rounding (the nearest-even and truncating modes take path 1; the AVX-512
// kernel runs it for the other nearest modes too), in formats
// whose inputs are mostly normal numbers (FP8, float16, bfloat16): when every |x| of the block
// lies in [2^min_exponent, Inf] (no NaN), code - 2^M = t >> S for every lane.
// One unsigned maximum checks the block: a NaN has t above t(Inf), a value below mn a negative t.
// The nearest modes let a sliver below mn through (t >= 0 when mn - |x| <= 2^(S-1)): there both
// computations give the smallest normal (the value is within a quarter ulp of it). Returns
// false, writing nothing, when the block does not qualify.
// Offered to formats with at least 4 exponent bits: with fewer, the normal range spans so few
// binades that typical inputs fail the check (and the block would be done twice).
template <class F, rounding RM>
struct fast_path {
  static constexpr bool available =
      F::has_subnormals && F::exponent_bits >= 4 && normal_range<F, RM>::rounding_supported;
};

// The largest t a block may hold to take path 2: t(Inf), or one less under inf_lanes, whose Inf
// lanes finish_block must then see (t is nondecreasing in |x|, so only t(Inf) and perhaps the
// largest finite floats are turned away).
template <class F, rounding RM>
constexpr std::uint32_t fast_t_top(const encode_setup& s) noexcept {
  return normal_range<F, RM>::t_inf - (s.mode == limit_mode::inf_lanes ? 1u : 0u);
}

template <class F, rounding RM, layout L>
LOWBIT_AVX2_INLINE bool encode_block_fast(const __m256i x[4], const __m256i r[4], std::uint8_t* dst,
                                          const encode_vectors& v) {
  __m256i signs[2];
  pack_signs<L>(x, signs);
  // Each code right away (the inputs die early), the range check accumulated and decided last.
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i addend = _mm256_set1_epi32(static_cast<int>(normal_range<F, RM>::bias - normal_range<F, RM>::mn));
  __m256i c[4];
  __m256i t = normal_t<F, RM>(_mm256_and_si256(x[0], abs_mask), addend);
  __m256i top = t;
  c[0] = fast_code<F, RM>(t, r[0]);
  t = normal_t<F, RM>(_mm256_and_si256(x[1], abs_mask), addend);
  top = _mm256_max_epu32(top, t);
  c[1] = fast_code<F, RM>(t, r[1]);
  t = normal_t<F, RM>(_mm256_and_si256(x[2], abs_mask), addend);
  top = _mm256_max_epu32(top, t);
  c[2] = fast_code<F, RM>(t, r[2]);
  t = normal_t<F, RM>(_mm256_and_si256(x[3], abs_mask), addend);
  top = _mm256_max_epu32(top, t);
  c[3] = fast_code<F, RM>(t, r[3]);
  const __m256i t_top = v.t_top;  // fast_t_top
  if (!_mm256_testc_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(top, t_top), t_top), _mm256_set1_epi32(-1))) return false;
  finish_block<F, L, code_form::minus_base, false, false>(c, signs, nullptr, dst, v);
  return true;
}

// float16 under nearest-even: F16C's vcvtps2ph, its rounding given in the immediate (MXCSR.RC is
// not read, and the encoders run under ieee_scope_traceless, so neither FTZ nor DAZ applies),
// is the IEEE conversion, which path 1 computes: every finite float rounds to the same bits,
// float16 subnormals included, and what rounds past the largest finite becomes Inf, which the
// limit turns into the policy's magnitude as it does path 1's codes (Inf too). A block with a NaN
// (vcvtps2ph keeps its payload), or with an Inf under inf_lanes (special_top), goes to path 3.
// One instruction per 8 codes where path 1 takes about 12.
template <class F, rounding RM>
constexpr bool f16c_path = std::is_same<F, formats::binary16>::value && RM == rounding::nearest_even;

LOWBIT_AVX2_INLINE bool encode_block_f16c(const __m256i x[4], std::uint8_t* dst, const encode_vectors& v) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i top = _mm256_max_epu32(_mm256_max_epu32(_mm256_and_si256(x[0], abs_mask), _mm256_and_si256(x[1], abs_mask)),
                                       _mm256_max_epu32(_mm256_and_si256(x[2], abs_mask), _mm256_and_si256(x[3], abs_mask)));
  if (!_mm256_testz_si256(_mm256_cmpgt_epi32(top, v.special_top), _mm256_set1_epi32(-1))) return false;
  const __m256i sign = _mm256_set1_epi16(static_cast<short>(0x8000));
  for (int h = 0; h < 2; ++h) {
    constexpr int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256i w = _mm256_set_m128i(_mm256_cvtps_ph(_mm256_castsi256_ps(x[2 * h + 1]), rn),
                                       _mm256_cvtps_ph(_mm256_castsi256_ps(x[2 * h]), rn));
    const __m256i r = _mm256_or_si256(_mm256_min_epu16(_mm256_andnot_si256(sign, w), v.limit_words), _mm256_and_si256(w, sign));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * h), r);
  }
  return true;
}

template <class F, rounding RM, layout L>
LOWBIT_AVX2_INLINE bool encode_block_direct(const __m256i x[4], std::uint8_t* dst, const encode_vectors& v) {
  if constexpr (f16c_path<F, RM>) return encode_block_f16c(x, dst, v);
  __m256i signs[2];
  pack_signs<L>(x, signs);
  // Each code right away; the check for NaN (|x| above Inf's bits) or, under inf_lanes, Inf
  // (special_top) accumulated and decided last.
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i c[4];
  __m256i a = _mm256_and_si256(x[0], abs_mask);
  __m256i top = a;
  c[0] = direct_code<F, RM>(a, v.direct[0], v.direct[1], v.direct[2]);
  a = _mm256_and_si256(x[1], abs_mask);
  top = _mm256_max_epi32(top, a);
  c[1] = direct_code<F, RM>(a, v.direct[0], v.direct[1], v.direct[2]);
  a = _mm256_and_si256(x[2], abs_mask);
  top = _mm256_max_epi32(top, a);
  c[2] = direct_code<F, RM>(a, v.direct[0], v.direct[1], v.direct[2]);
  a = _mm256_and_si256(x[3], abs_mask);
  top = _mm256_max_epi32(top, a);
  c[3] = direct_code<F, RM>(a, v.direct[0], v.direct[1], v.direct[2]);
  if (!_mm256_testz_si256(_mm256_cmpgt_epi32(top, v.special_top), _mm256_set1_epi32(-1))) return false;
  finish_block<F, L, code_form::exact, false, true>(c, signs, nullptr, dst, v);
  return true;
}

// Path 3: any input, the vectorised encode_bits (magnitude_lanes), finished on the packed codes.
// Kept out of line where it is the fallback of path 1 or 2, so that it does not crowd their
// registers; it reads its 32 inputs again.
template <class F, rounding RM, layout L, class Reader, class From>
LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE void encode_block_general(const Reader& read, const From* src,
                                                             const std::uint32_t* random_bits, std::uint8_t* dst,
                                                             const encode_vectors& v) {
  __m256i x[4], r[4], signs[2];
  read(src, x);
  r[0] = load_random<RM>(random_bits, 0);
  r[1] = load_random<RM>(random_bits, 1);
  r[2] = load_random<RM>(random_bits, 2);
  r[3] = load_random<RM>(random_bits, 3);
  pack_signs<L>(x, signs);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i c[4];
  c[0] = magnitude_lanes<F, RM>(x[0], _mm256_and_si256(x[0], abs_mask), r[0]);
  c[1] = magnitude_lanes<F, RM>(x[1], _mm256_and_si256(x[1], abs_mask), r[1]);
  c[2] = magnitude_lanes<F, RM>(x[2], _mm256_and_si256(x[2], abs_mask), r[2]);
  c[3] = magnitude_lanes<F, RM>(x[3], _mm256_and_si256(x[3], abs_mask), r[3]);
  finish_block<F, L, code_form::exact, true, true>(c, signs, x, dst, v);
}

template <class F, rounding RM, bool General, layout L, class Reader, class From>
LOWBIT_AVX2_INLINE void encode_block(const Reader& read, const From* src, const std::uint32_t* random_bits,
                                     std::uint8_t* dst, const encode_vectors& v) {
  __m256i x[4], r[4];
  read(src, x);
  r[0] = load_random<RM>(random_bits, 0);
  r[1] = load_random<RM>(random_bits, 1);
  r[2] = load_random<RM>(random_bits, 2);
  r[3] = load_random<RM>(random_bits, 3);
  if constexpr (General) {
    __m256i c[4];
    c[0] = encode_lanes<F, RM>(x[0], r[0], v);
    c[1] = encode_lanes<F, RM>(x[1], r[1], v);
    c[2] = encode_lanes<F, RM>(x[2], r[2], v);
    c[3] = encode_lanes<F, RM>(x[3], r[3], v);
    write32<L>(dst, c);
  } else {
    if constexpr (direct_path<F, RM>::available) {
      if (encode_block_direct<F, RM, L>(x, dst, v)) return;
    } else if constexpr (fast_path<F, RM>::available) {
      if (encode_block_fast<F, RM, L>(x, r, dst, v)) return;
    }
    encode_block_general<F, RM, L>(read, src, random_bits, dst, v);
  }
}

// The loop does more work per cache line than a plain copy, so the out-of-order window alone
// keeps too few lines in flight to stream from DRAM: prefetch the source (and random bits).
template <class From>
LOWBIT_AVX2_INLINE void prefetch_ahead(const From* src, const std::uint32_t* random_bits) {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(From);
  _mm_prefetch(reinterpret_cast<const char*>(src + ahead), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(src + ahead) + 64, _MM_HINT_T0);
  if (random_bits != nullptr) {
    _mm_prefetch(reinterpret_cast<const char*>(random_bits + ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(random_bits + ahead) + 64, _MM_HINT_T0);
  }
}

// Blocks encoded per streamed chunk: each chunk goes to an L1 staging buffer, then out with
// non-temporal stores (a whole number of 32-byte lines in every layout).
constexpr std::size_t stream_chunk = 32 * 32;

// Elements [0, n) of src into dst. Stream (dst + every chunk 32-byte aligned; see
// encode_stream_start): whole chunks go out with non-temporal stores, the rest as usual.
template <class F, rounding RM, bool General, layout L, bool Stream, class Reader, class From>
LOWBIT_AVX2_INLINE void encode_range(const Reader& read, const encode_vectors& v, const From* src,
                                     std::uint8_t* dst, std::size_t n, const std::uint32_t* random_bits) {
  constexpr std::size_t ahead = LOWBIT_PREFETCH_BYTES / sizeof(From);
  const std::uint32_t* rb = RM == rounding::stochastic ? random_bits : nullptr;
  std::size_t i = 0;
  if constexpr (Stream) {
    alignas(32) std::uint8_t stage[layout_bytes<L>(stream_chunk)];
    static_assert(sizeof stage % 32 == 0, "whole lines");
    for (; i + stream_chunk + ahead <= n; i += stream_chunk) {
      for (std::size_t b = 0; b < stream_chunk; b += 32) {
        prefetch_ahead(src + i + b, rb != nullptr ? rb + i + b : nullptr);
        encode_block<F, RM, General, L>(read, src + i + b, rb != nullptr ? rb + i + b : nullptr,
                                         stage + layout_bytes<L>(b), v);
      }
      std::uint8_t* out = dst + layout_bytes<L>(i);
      for (std::size_t k = 0; k < sizeof stage; k += 32)
        _mm256_stream_si256(reinterpret_cast<__m256i*>(out + k),
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(stage + k)));
    }
  }
  for (; i + 32 + ahead <= n; i += 32) {
    prefetch_ahead(src + i, rb != nullptr ? rb + i : nullptr);
    encode_block<F, RM, General, L>(read, src + i, rb != nullptr ? rb + i : nullptr, dst + layout_bytes<L>(i), v);
  }
  for (; i + 32 <= n; i += 32)
    encode_block<F, RM, General, L>(read, src + i, rb != nullptr ? rb + i : nullptr, dst + layout_bytes<L>(i), v);
  if (i < n) {
    // The tail goes through the same code on a zero-padded copy (zero encodes to code 0 in
    // every format, so padding never leaks into a shared last byte).
    const std::size_t m = n - i;
    From s[32] = {};
    std::uint32_t r[32] = {};
    std::uint8_t d[64];
    std::memcpy(s, src + i, m * sizeof(From));
    if (rb != nullptr) std::memcpy(r, rb + i, m * sizeof(std::uint32_t));
    encode_block<F, RM, General, L>(read, s, r, d, v);
    std::memcpy(dst + layout_bytes<L>(i), d, layout_bytes<L>(m));
  }
}

// The first element m, a multiple of granule (the element offsets a step may start at), whose
// output byte dst + bytes_of(m) is 32-byte aligned: where streaming starts. n when there is none
// (a float16 output at an odd address, a float one at an address not a multiple of 4).
template <class BytesOf>
inline std::size_t first_aligned_element(const void* dst, std::size_t n, std::size_t granule, BytesOf bytes_of) noexcept {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(dst);
  for (std::size_t m = 0; m < 32 * granule && m < n; m += granule)
    if ((a + bytes_of(m)) % 32 == 0) return m;
  return n;
}

// The element offsets a step of layout L may start at: a whole byte of nibbles or sextets.
template <layout L>
constexpr std::size_t layout_granule() noexcept {
  return L == layout::nibbles ? 2 : L == layout::sextets ? 4 : 1;
}

// The element from which an encoding of n elements into dst streams, or n when the call moves
// fewer than stream_threshold_bytes (source and output together: beyond that the output cannot
// stay in the caches anyway). granule: the layout's, or a multiple of it that a reader asks for.
template <layout L, class From>
inline std::size_t encode_stream_start(const std::uint8_t* dst, std::size_t n,
                                       std::size_t granule = layout_granule<L>()) noexcept {
  if (layout_bytes<L>(n) + n * sizeof(From) < stream_threshold_bytes) return n;
  return first_aligned_element(dst, n, granule, layout_bytes<L>);
}

// The reader encode_dispatch is given for the plain source reader<From>, which holds vectors and
// so is made inside the AVX2 functions (encode_loop).
struct plain_reader {};

// Whether a caller's reader asks for streaming stores whatever the size of this one call (a
// member `bool stream`: a caller that encodes one large tensor in many calls, a row at a time).
template <class Reader>
constexpr auto stream_requested(const Reader& r, int) noexcept -> decltype(static_cast<bool>(r.stream)) {
  return r.stream;
}
template <class Reader>
constexpr bool stream_requested(const Reader&, long) noexcept {
  return false;
}

// The element offsets a caller's reader lets a step start at (a member `granule()`: a reader
// whose blocks of 32 carry their own scales, which a step straddling two blocks, or the
// zero-padded copy of a step cut short, would not find), else every element: where streaming
// may start.
template <class Reader>
inline auto reader_granule(const Reader& r, int) noexcept -> decltype(static_cast<std::size_t>(r.granule())) {
  return r.granule();
}
template <class Reader>
inline std::size_t reader_granule(const Reader&, long) noexcept {
  return 1;
}

template <class F, rounding RM, bool General, layout L, class Reader, class From>
LOWBIT_TARGET_AVX2 void encode_loop(const Reader& read, const From* src, std::uint8_t* dst, std::size_t n,
                                    const encode_setup& setup, const std::uint32_t* random_bits) noexcept {
  const encode_vectors v = broadcast(setup);
  // Streaming for the blocks only: the general (per-lane) variant is rare enough not to double.
  if constexpr (!General) {
    const std::size_t by_reader = reader_granule(read, 0);
    const std::size_t granule = by_reader > layout_granule<L>() ? by_reader : layout_granule<L>();
    const std::size_t m = stream_requested(read, 0) ? first_aligned_element(dst, n, granule, layout_bytes<L>)
                                                    : encode_stream_start<L, From>(dst, n, granule);
    if (m < n) {
      encode_range<F, RM, General, L, false>(read, v, src, dst, m, random_bits);
      encode_range<F, RM, General, L, true>(read, v, src + m, dst + layout_bytes<L>(m), n - m,
                                            random_bits != nullptr ? random_bits + m : nullptr);
      _mm_sfence();
      return;
    }
  }
  encode_range<F, RM, General, L, false>(read, v, src, dst, n, random_bits);
}

template <class F, rounding RM, bool General, layout L, class From>
LOWBIT_TARGET_AVX2 void encode_loop(plain_reader, const From* src, std::uint8_t* dst, std::size_t n,
                                    const encode_setup& setup, const std::uint32_t* random_bits) noexcept {
  const reader<From> read;
  encode_loop<F, RM, General, L>(read, src, dst, n, setup, random_bits);
}

// The blocks are compiled for the common rounding modes only (whose policies all have one limit
// for every finite lane: limit_mode inf_or_positive is toward +Inf's); the other modes take the
// general per-lane completion.
template <class F, rounding RM, layout L, class Reader, class From>
void encode_variant(const Reader& read, const From* src, std::uint8_t* dst, std::size_t n, const encode_setup& s,
                    const std::uint32_t* random_bits) noexcept {
  constexpr bool common_mode =
      RM == rounding::nearest_even || RM == rounding::toward_zero || RM == rounding::stochastic;
  if constexpr (common_mode) {
    encode_setup t = s;
    if constexpr (direct_path<F, RM>::available) {
      make_direct_setup<F, RM>(t);
      // vcvtps2dq rounds as MXCSR.RC says; both conversions raise the precision flag.
      const ieee_scope_traceless env;
      return encode_loop<F, RM, false, L>(read, src, dst, n, t, random_bits);
    } else if constexpr (fast_path<F, RM>::available) {
      t.t_top = fast_t_top<F, RM>(t);
    }
    return encode_loop<F, RM, false, L>(read, src, dst, n, t, random_bits);
  } else {
    encode_loop<F, RM, true, L>(read, src, dst, n, s, random_bits);
  }
}

// read: plain_reader (the source's own reader<From>), or a caller's reader of 32 From elements
// with the same interface (the scaled readers of kernels/fp8/avx2.hpp).
template <class F, layout L, class Reader, class From>
void encode_dispatch(const Reader& read, const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                     const std::uint32_t* random_bits) noexcept {
  const encode_setup s = make_setup<F>(p);
  switch (p.rm) {
    case rounding::nearest_even: return encode_variant<F, rounding::nearest_even, L>(read, src, dst, n, s, random_bits);
    case rounding::toward_zero: return encode_variant<F, rounding::toward_zero, L>(read, src, dst, n, s, random_bits);
    case rounding::toward_pos_inf: return encode_variant<F, rounding::toward_pos_inf, L>(read, src, dst, n, s, random_bits);
    case rounding::stochastic: return encode_variant<F, rounding::stochastic, L>(read, src, dst, n, s, random_bits);
    case rounding::nearest_away: return encode_variant<F, rounding::nearest_away, L>(read, src, dst, n, s, random_bits);
    case rounding::nearest_toward_zero:
      return encode_variant<F, rounding::nearest_toward_zero, L>(read, src, dst, n, s, random_bits);
  }
}

// Stream: non-temporal stores (dst 32-byte aligned; see decode_stream_start).
template <bool Stream = false>
LOWBIT_AVX2_INLINE void store32(float* dst, const __m256i v[4]) {
  if constexpr (Stream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), v[0]);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 8), v[1]);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 16), v[2]);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 24), v[3]);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v[0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8), v[1]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16), v[2]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 24), v[3]);
  }
}

// Byte format F -> 16-bit format H (float16, bfloat16) where H holds every value of F exactly
// (holds_exactly): nothing rounds and no finite value overflows, so the policy only decides what
// NaN becomes (nan_code) and Inf (max under saturate + inf_policy::saturate, else Inf). Works in
// 16-bit lanes throughout, with no detour through float32. Any policy.
struct half_policy {
  __m256i nan_pos, nan_neg, limit;
  bool nan_signed;
};

template <class F, class H>
LOWBIT_AVX2_INLINE void widen_block(const std::uint8_t* src, std::uint8_t* dst, const half_policy& hp) {
  const __m256i bytes = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)),
                                         _mm256_set1_epi8(static_cast<char>(F::code_mask)));
  for (int h = 0; h < 2; ++h) {
    const __m128i half = h == 0 ? _mm256_castsi256_si128(bytes) : _mm256_extracti128_si256(bytes, 1);
    const __m256i v = half_from_codes<F, H>(_mm256_cvtepu8_epi16(half));
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi16(0x7FFF));
    __m256i r = _mm256_or_si256(_mm256_min_epu16(mag, hp.limit), _mm256_and_si256(v, _mm256_set1_epi16(static_cast<short>(0x8000))));
    const __m256i nan = hp.nan_signed ? _mm256_blendv_epi8(hp.nan_pos, hp.nan_neg, _mm256_srai_epi16(v, 15)) : hp.nan_pos;
    r = _mm256_blendv_epi8(r, nan, _mm256_cmpgt_epi16(mag, _mm256_set1_epi16(static_cast<short>(H::inf_bits))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * h), r);
  }
}

// The same by byte-table lookups, 32 codes a vector (split32), where F's codes split for H:
// for every number, the low byte of its H pattern is a function of the low 4 code bits, and the
// high byte is the sign and either
//   - a function of the 4 code bits from bit k up (the nibble split, shift = k), or
//   - ((magnitude + pre) >> k) + add, byte arithmetic (the affine split, affine_shift = k): the
//     FP8 formats into float16, whose high byte holds the whole exponent and mantissa bits, and
//     E5M2FNUZ into bfloat16, whose odd rebias carries out of the low byte where bit 2 is set;
// for the codes whose exponent field is 0 (zero, subnormals) both bytes are functions of the low
// 4 bits and the sign. The tables and pre, add come from the scalar decoder, which also proves
// the split, code by code (no split holds: both shifts < 0). Finite values do not depend on the
// policy (holds_exactly); a step with a NaN or Inf code is done by widen_block.
template <class F, class H>
struct split_tables {
  std::uint8_t lo[16] = {}, hi[16] = {}, sub_lo[16] = {}, sub_hi[16] = {};
  int shift = -1;         // k of the nibble split
  int affine_shift = -1;  // k of the affine split
  std::uint8_t pre = 0, add = 0;
  split_tables() noexcept {
    if constexpr (F::has_subnormals) {
      for (unsigned k = 0; k <= 4 && shift < 0; ++k)
        if (fill(k, -1)) shift = static_cast<int>(k);
      for (unsigned k = 0; k <= 4 && shift < 0 && affine_shift < 0; ++k)
        for (int p = 0; p < (1 << k) && affine_shift < 0; ++p)
          if (fill(k, p)) affine_shift = static_cast<int>(k);
    }
  }
  // Entry i of t becomes v, unless it was given another value before.
  static bool put(std::uint8_t* t, bool* given, std::uint32_t i, std::uint32_t v) noexcept {
    if (given[i] && t[i] != v) return false;
    t[i] = static_cast<std::uint8_t>(v);
    given[i] = true;
    return true;
  }
  // The nibble split from bit k (p < 0), or the affine split with shift k and pre = p.
  bool fill(unsigned k, int p) noexcept {
    bool lo_given[16] = {}, hi_given[16] = {}, sub_lo_given[16] = {}, sub_hi_given[16] = {}, add_given = false;
    if (p >= 0) pre = static_cast<std::uint8_t>(p);
    for (std::uint32_t c = 0; c <= F::code_mask; ++c) {
      const float x = lowbit::detail::pack_float(lowbit::detail::unpack_bits<F>(c));
      if ((lowbit::detail::bit_cast<std::uint32_t>(x) & 0x7F800000u) == 0x7F800000u) continue;  // NaN, Inf
      const std::uint32_t r = lowbit::encode<minifloat<H>>(x).bits();
      if (((r >> 15) != 0) != ((c & F::sign_mask) != 0)) return false;
      const std::uint32_t low = c & 15u, r_lo = r & 0xFFu, r_hi = (r >> 8) & 0x7Fu;
      const bool field0 = ((c >> F::mantissa_bits) & ((1u << F::exponent_bits) - 1u)) == 0;
      bool ok = field0 ? put(sub_lo, sub_lo_given, low, r_lo) && put(sub_hi, sub_hi_given, low, r_hi)
                       : put(lo, lo_given, low, r_lo);
      if (!field0 && p < 0) ok = ok && put(hi, hi_given, (c >> k) & 15u, r_hi);
      if (!field0 && p >= 0) {
        const std::uint32_t shifted = ((c & F::magnitude_mask) + static_cast<std::uint32_t>(p)) >> k;
        ok = ok && shifted <= 0xFFu >> k && put(&add, &add_given, 0, (r_hi - shifted) & 0xFFu);
      }
      if (!ok) return false;
    }
    return true;
  }
  static const split_tables& get() noexcept {
    static const split_tables t;
    return t;
  }
};

LOWBIT_AVX2_INLINE __m256i table_of(const std::uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// Whether one of 32 codes (masked to the code) is NaN or Inf.
template <class F>
LOWBIT_AVX2_INLINE bool special_codes32(__m256i c) {
  __m256i special = _mm256_setzero_si256();
  if constexpr (F::max_bits < F::magnitude_mask) {  // magnitudes above the largest number
    const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(F::magnitude_mask)));
    special = _mm256_cmpeq_epi8(_mm256_max_epu8(mag, _mm256_set1_epi8(static_cast<char>(F::max_bits + 1))), mag);
  }
  if constexpr (F::specials == special_values::fnuz)
    special = _mm256_or_si256(special, _mm256_cmpeq_epi8(c, _mm256_set1_epi8(static_cast<char>(F::sign_mask))));
  return !_mm256_testz_si256(special, special);
}

// split_tables in registers.
struct split_registers {
  __m256i lo, hi, sub_lo, sub_hi, pre, add, shifted_mask;
  __m128i shift;
};
template <class F, class H>
LOWBIT_AVX2_INLINE split_registers split_load(const split_tables<F, H>& t) {
  const int k = t.shift >= 0 ? t.shift : t.affine_shift >= 0 ? t.affine_shift : 0;
  return {table_of(t.lo), table_of(t.hi), table_of(t.sub_lo), table_of(t.sub_hi),
          _mm256_set1_epi8(static_cast<char>(t.pre)), _mm256_set1_epi8(static_cast<char>(t.add)),
          _mm256_set1_epi8(static_cast<char>(0xFF >> k)), _mm_cvtsi32_si128(k)};
}

// 32 codes (bytes masked to the code, none NaN or Inf) -> their H patterns, elements 0-15 in w0
// and 16-31 in w1; Affine: split_tables' affine split, else its nibble split.
template <class F, bool Affine = false>
LOWBIT_AVX2_INLINE void split32(__m256i c, const split_registers& r, __m256i* w0, __m256i* w1) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i field = _mm256_set1_epi8(static_cast<char>(((1u << F::exponent_bits) - 1u) << F::mantissa_bits));
  const __m256i low = _mm256_and_si256(c, nibble);
  const __m256i field0 = _mm256_cmpeq_epi8(_mm256_and_si256(c, field), _mm256_setzero_si256());
  const __m256i r_lo = _mm256_blendv_epi8(_mm256_shuffle_epi8(r.lo, low), _mm256_shuffle_epi8(r.sub_lo, low), field0);
  __m256i number_hi;
  if constexpr (Affine) {  // the shift in 16-bit lanes, then the bits other bytes shifted in masked off
    const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(F::magnitude_mask)));
    number_hi = _mm256_add_epi8(_mm256_and_si256(_mm256_srl_epi16(_mm256_add_epi8(mag, r.pre), r.shift), r.shifted_mask), r.add);
  } else {
    number_hi = _mm256_shuffle_epi8(r.hi, _mm256_and_si256(_mm256_srl_epi16(c, r.shift), nibble));
  }
  __m256i r_hi = _mm256_blendv_epi8(number_hi, _mm256_shuffle_epi8(r.sub_hi, low), field0);
  if constexpr (F::is_signed)  // the sign bit moved to bit 7 of its byte
    r_hi = _mm256_or_si256(r_hi, _mm256_slli_epi16(_mm256_and_si256(c, _mm256_set1_epi8(static_cast<char>(F::sign_mask))),
                                                   8 - F::bits));
  words_of_bytes(r_lo, r_hi, w0, w1);
}

template <class F, class H>
LOWBIT_TARGET_AVX2 void widen_to_half(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                      const policy& p) noexcept {
  half_policy hp;
  hp.nan_pos = _mm256_set1_epi16(static_cast<short>(nan_code<H>(false, p)));
  hp.nan_neg = _mm256_set1_epi16(static_cast<short>(nan_code<H>(true, p)));
  hp.nan_signed = nan_code<H>(false, p) != nan_code<H>(true, p);
  const bool inf_to_max = p.ov == overflow::saturate && p.inf == inf_policy::saturate;
  hp.limit = _mm256_set1_epi16(static_cast<short>(inf_to_max ? H::max_bits : H::inf_bits));
  const split_tables<F, H>& t = split_tables<F, H>::get();
  const bool split = t.shift >= 0, affine = t.affine_shift >= 0;
  const split_registers r = split_load(t);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)),
                                       _mm256_set1_epi8(static_cast<char>(F::code_mask)));
    if (special_codes32<F>(c)) {
      widen_block<F, H>(src + i, dst + 2 * i, hp);
      continue;
    }
    __m256i w0, w1;  // numbers only: no policy applies
    if (split) {
      split32<F>(c, r, &w0, &w1);
    } else if (affine) {
      split32<F, true>(c, r, &w0, &w1);
    } else {
      w0 = half_from_codes<F, H, true>(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(c)));
      w1 = half_from_codes<F, H, true>(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(c, 1)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i), w0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i + 32), w1);
  }
  if (i < n) {
    std::uint8_t in[32] = {};
    std::uint8_t out[64];
    std::memcpy(in, src + i, n - i);
    widen_block<F, H>(in, out, hp);
    std::memcpy(dst + 2 * i, out, 2 * (n - i));
  }
}

// Sources of 32 codes per step as 32 bytes in element order: plain bytes, nibbles, sextets.
// `at(i)` reads the 32 codes from element i on; `tail(i, n)` the n - i < 32 last ones.
struct byte_codes {
  static constexpr std::size_t granule = 1;
  const std::uint8_t* src;
  LOWBIT_AVX2_INLINE __m256i at(std::size_t i) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
  }
  LOWBIT_AVX2_INLINE __m256i tail(std::size_t i, std::size_t n) const {
    std::uint8_t b[32] = {};
    std::memcpy(b, src + i, n - i);
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  }
};

struct nibble_codes {
  static constexpr std::size_t granule = 2;
  const std::uint8_t* src;
  LOWBIT_AVX2_INLINE __m256i at(std::size_t i) const { return load_nibbles(src + i / 2); }
  LOWBIT_AVX2_INLINE __m256i tail(std::size_t i, std::size_t n) const {
    std::uint8_t b[16] = {};
    std::memcpy(b, src + i / 2, packed_bytes(n - i, 4));
    return load_nibbles(b);
  }
};

struct sextet_codes {
  static constexpr std::size_t granule = 4;
  const std::uint8_t* src;
  LOWBIT_AVX2_INLINE __m256i at(std::size_t i) const { return load_sextets(src + i / 4 * 3); }
  LOWBIT_AVX2_INLINE __m256i tail(std::size_t i, std::size_t n) const {
    std::uint8_t b[24] = {};
    std::memcpy(b, src + i / 4 * 3, packed_bytes(n - i, 6));
    return load_sextets(b);
  }
};

// Sources of 32 elements per step for the decoders: codes (byte_codes, nibble_codes,
// sextet_codes) or float16 / bfloat16 values. `at(i, out)` decodes the 32 elements from element i
// on, `tail(i, n, out)` the n - i < 32 last ones (zero-padded). `granule`: the element offsets a
// step may start at are its multiples.
// 24 bytes of packed sextets -> their 32 codes << 10 in 16-bit lanes, in the order
// unpack{lo,hi}_epi8 give a byte vector's elements: lo = elements 0-7 | 16-23, hi = 8-15 | 24-31.
// Each lane takes the two bytes its code starts in (vpshufb) and moves the code to the top by a
// multiply: codes 4g + {0, 1, 2, 3} of a 3-byte group start at bits 0, 6, 12, 18, so at bits 0, 6,
// 4, 2 of their first byte, and go up by 10, 4, 6, 8. Reads exactly 24 bytes.
LOWBIT_AVX2_INLINE void load_sextet_words(const std::uint8_t* src, __m256i* lo, __m256i* hi) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));       // bytes 0..15
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 16));  // bytes 16..23
  const __m256i x = _mm256_set_m128i(_mm_alignr_epi8(b, a, 12), a);              // 0..15 | 12..23, 0
  const __m256i up = _mm256_setr_epi16(1024, 16, 64, 256, 1024, 16, 64, 256, 1024, 16, 64, 256, 1024, 16, 64, 256);
  const __m256i top = _mm256_set1_epi16(static_cast<short>(0xFC00));
  const __m256i l = _mm256_shuffle_epi8(x, _mm256_setr_epi8(0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 5, 6,  //
                                                            0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 5, 6));
  const __m256i h = _mm256_shuffle_epi8(x, _mm256_setr_epi8(6, 7, 6, 7, 7, 8, 8, 9, 9, 10, 9, 10, 10, 11, 11, 12,  //
                                                            6, 7, 6, 7, 7, 8, 8, 9, 9, 10, 9, 10, 10, 11, 11, 12));
  *lo = _mm256_and_si256(_mm256_mullo_epi16(l, up), top);
  *hi = _mm256_and_si256(_mm256_mullo_epi16(h, up), top);
}

template <class F, class Codes>
struct code_source {
  static constexpr std::size_t granule = Codes::granule;
  Codes codes;
  reader<minifloat<F>> tables;
  LOWBIT_AVX2_INLINE void at(std::size_t i, __m256i out[4]) const {
    if constexpr (std::is_same<Codes, sextet_codes>::value && half_twin<F>::value) {
      // FP6 to float32: the packed codes go to the float16 route's lanes directly.
      __m256i lo, hi;
      load_sextet_words(codes.src + i / 4 * 3, &lo, &hi);
      lo = half_twin_bits<F, true>(lo);
      hi = half_twin_bits<F, true>(hi);
      out[0] = f32_of_half_twin<F>(_mm256_castsi256_si128(lo));
      out[1] = f32_of_half_twin<F>(_mm256_castsi256_si128(hi));
      out[2] = f32_of_half_twin<F>(_mm256_extracti128_si256(lo, 1));
      out[3] = f32_of_half_twin<F>(_mm256_extracti128_si256(hi, 1));
    } else {
      decode(codes.at(i), out);
    }
  }
  LOWBIT_AVX2_INLINE void tail(std::size_t i, std::size_t n, __m256i out[4]) const { decode(codes.tail(i, n), out); }
  LOWBIT_AVX2_INLINE void decode(__m256i bytes, __m256i out[4]) const {
    const __m256i mask = _mm256_set1_epi8(static_cast<char>(F::code_mask));
    f32_from_code_bytes<F>(_mm256_and_si256(bytes, mask), out, &tables.nibble_lo, &tables.nibble_hi);
  }
};

template <class F>
struct half_source {
  static constexpr std::size_t granule = 1;
  const minifloat<F>* src;
  reader<minifloat<F>> read;
  LOWBIT_AVX2_INLINE void at(std::size_t i, __m256i out[4]) const { read.template read<true>(src + i, out); }
  LOWBIT_AVX2_INLINE void tail(std::size_t i, std::size_t n, __m256i out[4]) const {
    minifloat<F> s[32] = {};
    std::memcpy(s, src + i, (n - i) * sizeof(minifloat<F>));
    read.template read<true>(s, out);
  }
};

// Elements [i, n) of a decoder's output.
template <bool Stream, class Source>
LOWBIT_AVX2_INLINE void decode_range(const Source& s, float* dst, std::size_t i, std::size_t n) {
  __m256i out[4];
  for (; i + 32 <= n; i += 32) {
    s.at(i, out);
    store32<Stream>(dst + i, out);
  }
  if (i < n) {
    s.tail(i, n, out);
    float d[32];
    store32(d, out);
    std::memcpy(dst + i, d, (n - i) * sizeof(float));
  }
}

// The element from which a decoder of n floats into dst streams, or n when it does not (an output
// below stream_threshold_bytes).
inline std::size_t decode_stream_start(const float* dst, std::size_t n, std::size_t granule) noexcept {
  if (n < stream_threshold_bytes / sizeof(float)) return n;
  return first_aligned_element(dst, n, granule, [](std::size_t m) { return m * sizeof(float); });
}

template <class Source>
LOWBIT_TARGET_AVX2 void decode_all(const Source& s, float* dst, std::size_t n) noexcept {
  const std::size_t k = decode_stream_start(dst, n, Source::granule);
  decode_range<false>(s, dst, 0, k);
  if (k < n) {
    decode_range<true>(s, dst, k, n);
    _mm_sfence();
  }
}

template <class F, class Codes>
LOWBIT_TARGET_AVX2 void decode_codes(Codes codes, float* dst, std::size_t n) noexcept {
  const code_source<F, Codes> s{codes, {}};
  decode_all(s, dst, n);
}

template <class F>
LOWBIT_TARGET_AVX2 void decode_halves(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
  const half_source<F> s{src, {}};
  decode_all(s, dst, n);
}

template <class F>
constexpr layout layout_of() noexcept {
  return F::bits > 8 ? layout::words : layout::bytes;
}

template <class F>
constexpr layout packed_layout_of() noexcept {
  return F::bits == 4 ? layout::nibbles : F::bits == 6 ? layout::sextets : layout::bytes;
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Entry points. Callers check can_encode / can_decode, supports_policy and that the CPU runs AVX2
// (lowbit::detail::use_avx2()); convert.hpp does.

template <class From, class T>
void encode(const From* src, T* dst, std::size_t n, const policy& p, const std::uint32_t* random_bits) noexcept {
  static_assert(can_encode<From, T>::value, "no AVX2 kernel for this pair");
  using F = typename T::format;
  if constexpr (is_byte_minifloat<From>::value && is_half_type<T>::value) {
    using FS = typename From::format;
    if constexpr (detail::holds_exactly<FS, F>::value) {  // exact: no rounding, no overflow
      detail::widen_to_half<FS, F>(reinterpret_cast<const std::uint8_t*>(src), reinterpret_cast<std::uint8_t*>(dst), n, p);
      return;
    }
  }
  detail::encode_dispatch<F, detail::layout_of<F>()>(detail::plain_reader{}, src, reinterpret_cast<std::uint8_t*>(dst), n,
                                                    p, random_bits);
}

// encode() of the values a caller's reader makes of src: read(src + i, out) puts the float32 bit
// patterns of elements i .. i + 31 into out[0..3]. The encoder reads whole steps of 32 from src
// (a zero-padded copy for the tail), so read must give 0 for a zero element: the tail's
// padding is encoded too.
template <class Reader, class From, class T>
void encode_with(const Reader& read, const From* src, T* dst, std::size_t n, const policy& p,
                 const std::uint32_t* random_bits) noexcept {
  static_assert(is_byte_minifloat<T>::value, "a byte format");
  using F = typename T::format;
  detail::encode_dispatch<F, detail::layout_of<F>()>(read, src, reinterpret_cast<std::uint8_t*>(dst), n, p, random_bits);
}

template <class T, class From>
void encode_packed(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                   const std::uint32_t* random_bits) noexcept {
  static_assert(can_encode<From, T>::value && T::format::bits <= 8, "no AVX2 kernel for this pair");
  using F = typename T::format;
  detail::encode_dispatch<F, detail::packed_layout_of<F>()>(detail::plain_reader{}, src, dst, n, p, random_bits);
}

template <class F>
void decode(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
  static_assert(can_decode<F>::value, "no AVX2 kernel for this format");
  if constexpr (F::bits <= 8)
    detail::decode_codes<F>(detail::byte_codes{reinterpret_cast<const std::uint8_t*>(src)}, dst, n);
  else
    detail::decode_halves<F>(src, dst, n);
}

template <class T>
void decode_packed(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  using F = typename T::format;
  static_assert(F::bits == 4 || F::bits == 6 || F::bits == 8, "packed layouts exist for 4, 6 and 8 bits");
  if constexpr (F::bits == 4)
    detail::decode_codes<F>(detail::nibble_codes{src}, dst, n);
  else if constexpr (F::bits == 6)
    detail::decode_codes<F>(detail::sextet_codes{src}, dst, n);
  else
    detail::decode_codes<F>(detail::byte_codes{src}, dst, n);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_CONVERT_AVX2_HPP
