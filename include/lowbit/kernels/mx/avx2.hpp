// lowbit: AVX2 kernels of the MX block formats (MXFP8 E4M3/E5M2, MXFP6 E2M3/E3M2, MXFP4,
// MXINT8), quantize and dequantize, float32 or bfloat16 on the float side, bit-identical to the
// scalar reference beside them (kernels/mx/scalar.hpp), to which they hand the rare blocks outside
// their fast range; tests/test_kernels_block.cpp (MxKernel) compares the two byte for byte. The
// element encoders here are shared with the NVFP4 kernels (kernels/nvfp4/avx2.hpp). Integer
// arithmetic only, but for the MXFP8 and MXFP6 elements under nearest-even and toward zero
// (mx_direct), whose vcvtps2dq runs under an ieee_scope_traceless: no result depends on MXCSR.
//
// Every kernel takes a layout (kernels/mx/scalar.hpp: planar_layout, or ggml_fp4_layout for
// ggml's block_mxfp4 and block_nvfp4), so the same code writes and reads lowbit's planar arrays
// and ggml's interleaved blocks.
//
// Why the integer encodings equal the reference (scale rules, element rounding by shifts, the
// 16-bit MXFP4 path, the dequantization tables and fast ranges): docs/kernels.md, "Block formats".
#ifndef LOWBIT_KERNELS_MX_AVX2_HPP
#define LOWBIT_KERNELS_MX_AVX2_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../core/cpu.hpp"
#include "../../core/packing.hpp"
#include "../../core/rounding.hpp"
#include "../../formats/types.hpp"
#include "scalar.hpp"

#if LOWBIT_HAS_AVX2_KERNELS
#include <immintrin.h>

#include "../avx2_common.hpp"
#include "../convert/avx2.hpp"
#include "../fp_env.hpp"
#include "../vec.hpp"
#endif

namespace lowbit {
namespace kernels {
namespace block {

// What the AVX2 MX kernels cover; other block sizes take the scalar loop. Blocks must be whole
// vectors of 8 elements (8, 16, 24, 32, 64, ...). The options are otherwise those the bulk calls
// accept (no stochastic rounding).
constexpr bool mx_avx2_supports(const mx_options& o) noexcept { return o.block_size % 8 == 0; }
// Quantizing covers every scale rule, so the same set (dequantizing does not read the rule).
constexpr bool mx_avx2_supports_quantize(const mx_options& o) noexcept { return mx_avx2_supports(o); }

namespace detail {

template <class Fmt, class = void>
struct mx_element_traits {
  using spec = typename Fmt::element::format;
  static constexpr bool is_int8 = false;
};
template <class Fmt>
struct mx_element_traits<Fmt, std::enable_if_t<std::is_same<typename Fmt::element, std::int8_t>::value>> {
  using spec = ::lowbit::detail::mxint8_magnitude_spec;
  static constexpr bool is_int8 = true;
};

// The quantizer's fast path is exact for blocks with scale exponent s >= this (see the header).
inline constexpr int mx_fast_min_exponent = -100;

// The scale exponents s for which every finite nonzero element times 2^s is a normal float32
// (exact): the fast range of the MXFP8, MXFP6 and MXINT8 dequantizers. A minifloat element's
// smallest value is 2^(min_exponent - mantissa_bits), its largest below 2^(max_exponent + 1).
template <class Fmt>
struct mx_fast_range {
  using F = typename mx_element_traits<Fmt>::spec;
  static constexpr bool is_int8 = mx_element_traits<Fmt>::is_int8;
  static constexpr int lo = is_int8 ? -120 : -126 - (F::min_exponent - F::mantissa_bits);
  static constexpr int hi = is_int8 ? 126 : 127 - F::max_exponent;
  static constexpr bool holds(int s) noexcept { return s >= lo && s <= hi; }
};

// Dequantization tables of the MXFP4 / MXFP6 kernels: for every E8M0 scale code, the 16-bit
// result of each element code: the top half of the float32 result (whose low half is always
// zero) or the bfloat16 result (mx_store of kernels/mx/scalar.hpp: round to nearest even, saturate, NaN 0x7FFF).
// Row layout: Entries high bytes, then Entries low bytes. MXFP4 rows hold all 16 codes (sign
// included; the NaN scale row is NaN everywhere); MXFP6 rows hold the 32 magnitudes (the kernel
// ORs the sign in and treats the NaN scale itself).
template <int Entries>
struct half_table {
  alignas(64) std::uint8_t row[256][static_cast<std::size_t>(2 * Entries)];
};

template <class F, int Entries, bool Bf16>
inline half_table<Entries> make_half_table() noexcept {
  half_table<Entries> t{};
  for (int sc = 0; sc < 256; ++sc) {
    for (int c = 0; c < Entries; ++c) {
      const float v = sc == 0xFF ? lowbit::detail::bit_cast<float>(0x7FC00000u)
                                 : lowbit::detail::mx_scaled_float(
                                       lowbit::detail::unpack_bits<F>(static_cast<std::uint32_t>(c)), sc - 127);
      std::uint32_t h = lowbit::detail::bit_cast<std::uint32_t>(v) >> 16;
      if (Bf16) h = encode<bfloat16>(v).bits();
      t.row[sc][c] = static_cast<std::uint8_t>(h >> 8);
      t.row[sc][Entries + c] = static_cast<std::uint8_t>(h & 0xFFu);
    }
  }
  return t;
}

template <class F, int Entries, bool Bf16>
inline const half_table<Entries>& mx_half_table() noexcept {
  static const half_table<Entries> t = make_half_table<F, Entries, Bf16>();
  return t;
}

// The float32 bits a 16-bit table entry stands for, and what the bfloat16 output stores.
inline void store_half(float& dst, std::uint32_t h) noexcept { dst = lowbit::detail::bit_cast<float>(h << 16); }

// e8m0_rule::floor_log2f per binade. For amax in [2^(k-1), 2^k), float32's log2 rounds up to k
// exactly when amax's 23 mantissa bits are at least a threshold that depends on k alone
// (mx_log2f_rounds_up is monotone in amax within a binade). Entry e + 22 holds it for
// e = k + 126 = floor(log2 amax) + 127, from -22 (2^-149) to 254; 2^23 where it never rounds up.
// Found once by bisection on the scalar rule itself, so both paths share one definition.
inline constexpr int log2f_threshold_first = -22;
inline constexpr int log2f_threshold_count = 254 - log2f_threshold_first + 1;

inline const std::int32_t* log2f_mantissa_thresholds() noexcept {
  struct table {
    std::int32_t t[log2f_threshold_count];
    table() noexcept {
      for (int i = 0; i < log2f_threshold_count; ++i) {
        const int k = i + log2f_threshold_first - 126;
        const auto rounds_up = [k](std::int32_t mant) {
          return ::lowbit::detail::mx_log2f_rounds_up(
              static_cast<double>((1 << 23) + mant) * ::lowbit::detail::mx_pow2(k - 24), k);
        };
        std::int32_t lo = 0, hi = 1 << 23;  // the answer lies in [lo, hi]; hi: never
        while (lo < hi) {
          const std::int32_t mid = lo + (hi - lo) / 2;
          if (rounds_up(mid)) hi = mid; else lo = mid + 1;
        }
        t[i] = lo;
      }
    }
  };
  static const table thresholds;
  return thresholds.t;
}
inline void store_half(bfloat16& dst, std::uint32_t h) noexcept {
  dst = bfloat16::from_bits(static_cast<std::uint16_t>(h));
}

}  // namespace detail

#if LOWBIT_HAS_AVX2_KERNELS
namespace avx2 {


namespace detail {

using namespace ::lowbit::kernels::block::detail;

LOWBIT_AVX2_INLINE __m256i set1(int v) { return _mm256_set1_epi32(v); }

// 8 source values as float32 bit patterns (bfloat16 widens exactly).
LOWBIT_AVX2_INLINE __m256i load8(const float* p) { return _mm256_castps_si256(_mm256_loadu_ps(p)); }
LOWBIT_AVX2_INLINE __m256i load8(const bfloat16* p) {
  return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
}

// Lane i: the maximum of the 8 lanes of m[i] (signed; used on |x| bit patterns).
LOWBIT_AVX2_INLINE __m256i transpose_max8(const __m256i m[8]) { return ::lowbit::kernels::avx2::reduce8_max_epi32(m); }

// ------------------------------------------------------------------------------------------------
// The element encoder: |x| * 2^-s rounded into format F (see the header for the derivation).

// The shift encoder (enc_block, make_enc_block, encode_magnitude), shared with the AVX-512
// kernels.
using V = w256;
#define LOWBIT_VEC_INLINE LOWBIT_AVX2_INLINE
#include "lanes.hpp"
#undef LOWBIT_VEC_INLINE

// The constants of e2m1_nearest16, built once per call and passed down (so that the compiler
// keeps them across blocks instead of rebuilding them for every block).
struct e2m1_consts {
  __m256i abs16, one16, eight, seven;
  __m256i sub_lo, sub_hi;  // the two subnormal-range thresholds, as compared (see e2m1_nearest16)
  __m256i bias;            // rounding bias of the normal binades, minus 252 * 64
};

template <rounding RM>
LOWBIT_AVX2_INLINE e2m1_consts make_e2m1_consts() {
  constexpr bool even = RM == rounding::nearest_even;
  constexpr bool away = RM == rounding::nearest_away;
  e2m1_consts c;
  c.abs16 = _mm256_set1_epi16(0x7FFF);
  c.one16 = _mm256_set1_epi16(1);
  c.eight = _mm256_set1_epi16(8);
  c.seven = _mm256_set1_epi16(7);
  // 0.25 (hi16 0x3E80) rounds up only when away; 0.75 (0x3F40) up unless toward zero.
  c.sub_lo = _mm256_set1_epi16(static_cast<short>(away ? 0x3E80 - 1 : 0x3E80));
  c.sub_hi = _mm256_set1_epi16(static_cast<short>(even || away ? 0x3F40 - 1 : 0x3F40));
  c.bias = _mm256_set1_epi16(static_cast<short>((away ? 32 : 31) - 252 * 64));
  return c;
}

// 16 float bit patterns b0 (elements 0-7) and b1 (8-15) -> their high or low 16-bit halves in
// "pair order": 32-bit lane j holds element j in its low word and element j + 8 in its high word.
LOWBIT_AVX2_INLINE __m256i high_halves(__m256i b0, __m256i b1) {
  return _mm256_blend_epi16(_mm256_srli_epi32(b0, 16), b1, 0xAA);
}
LOWBIT_AVX2_INLINE __m256i low_halves(__m256i b0, __m256i b1) {
  return _mm256_blend_epi16(b0, _mm256_slli_epi32(b1, 16), 0xAA);
}

// E2M1 under a nearest mode, 16 values at a time, from their float bit patterns b0, b1 (values
// v = x * 2^-s; s7 = s * 128 in every 16-bit lane). Everything happens on one 16-bit key per
// value: k = hi16(|v|) with "the low half is nonzero" ORed into its bit 0. hi16(|x| * 2^-s) is
// hi16(|x|) - s * 128 while that is a normal float; anything below 2^-126 (a negative key, or a
// float subnormal with s >= -100) rounds to 0, as it must. Every E2M1 rounding threshold
// (0.25 0.75 1.25 1.75 2.5 3.5 5) has a zero low half and an even high half, so |v| > t is
// k > hi16(t) and |v| >= t is k >= hi16(t). From 1 up, the code is k rounded at bit 6 (the kept
// mantissa bit; the sticky bit 0 stands in for everything below), minus 252: the binades
// [1, 2), [2, 4), [4, 8) give codes 2-3, 4-5, 6-7 and a carry moves up by itself; past 6 it
// saturates at 7. Below 1 that formula undercounts, and two threshold comparisons give the
// codes 0, 1, 2 instead; the larger of the two is the code. Returns complete codes (sign in
// bit 3) in pair order.
template <rounding RM>
LOWBIT_AVX2_INLINE __m256i e2m1_nearest16(__m256i b0, __m256i b1, __m256i s7, bool signed_zero,
                                           const e2m1_consts& c) {
  static_assert(RM == rounding::nearest_even || RM == rounding::nearest_away || RM == rounding::nearest_toward_zero,
                "a nearest mode");
  const __m256i hb = high_halves(b0, b1);
  const __m256i sticky = _mm256_min_epu16(low_halves(b0, b1), c.one16);
  const __m256i k = _mm256_sub_epi16(_mm256_or_si256(_mm256_and_si256(hb, c.abs16), sticky), s7);
  __m256i t = _mm256_add_epi16(k, c.bias);
  if constexpr (RM == rounding::nearest_even) {
    t = _mm256_add_epi16(t, _mm256_and_si256(_mm256_srli_epi16(k, 6), c.one16));
  }
  const __m256i normal = _mm256_min_epi16(_mm256_srai_epi16(t, 6), c.seven);
  const __m256i below_one = _mm256_add_epi16(_mm256_cmpgt_epi16(k, c.sub_lo), _mm256_cmpgt_epi16(k, c.sub_hi));
  const __m256i n = _mm256_max_epi16(normal, _mm256_sub_epi16(_mm256_setzero_si256(), below_one));
  __m256i sign = _mm256_and_si256(_mm256_srai_epi16(hb, 15), c.eight);
  if (!signed_zero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi16(n, _mm256_setzero_si256()), sign);
  return _mm256_or_si256(n, sign);
}

// 32 E2M1 codes in pair order (w0: elements 0-15, w1: 16-31) -> 16 packed bytes; with
// Count = 16 only w0 (8 bytes).
template <int Count>
LOWBIT_AVX2_INLINE void store_e2m1_pairs(std::uint8_t* dst, __m256i w0, __m256i w1) {
  // bytes: lane 0 = e0 e8 e1 e9 e2 e10 e3 e11 | e16 e24 ..., lane 1 = e4 e12 ... | e20 e28 ...
  const __m256i p = _mm256_packus_epi16(w0, w1);
  // byte 4d of dword d: e(2i) | e(2i+1) << 4 for its first element pair, byte 4d+1 the second
  const __m256i q = _mm256_or_si256(p, _mm256_srli_epi32(p, 12));
  const __m256i r = _mm256_shuffle_epi8(q, _mm256_setr_epi8(0, 4, 1, 5, 8, 12, 9, 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                            0, 4, 1, 5, 8, 12, 9, 13, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m128i out = _mm_unpacklo_epi16(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  if constexpr (Count == 32) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), out);
  } else {
    static_assert(Count == 16, "16 or 32 codes");
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), out);
  }
}

// The same 32 codes (w0: elements 0-15, w1: 16-31, pair order) -> 16 bytes in split halves
// (ggml's block_mxfp4): byte j holds element j in its low nibble and element j + 16 in its high.
LOWBIT_AVX2_INLINE void store_e2m1_split32(std::uint8_t* dst, __m256i w0, __m256i w1) {
  // 16-bit lanes: element j | j+16 << 4 (low word of dword j), element j+8 | j+24 << 4 (high word)
  const __m256i v = _mm256_or_si256(w0, _mm256_slli_epi16(w1, 4));
  const __m256i r = _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, 2, 6, 10, 14, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                            0, 4, 8, 12, 2, 6, 10, 14, -1, -1, -1, -1, -1, -1, -1, -1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm_unpacklo_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

// Two blocks of 16 E2M1 codes (w0, w1, each in pair order) -> 8 bytes each in split halves
// (ggml's block_nvfp4 sub-blocks): byte j holds element j low and element j + 8 high. Count 16:
// w0 only (8 bytes).
template <int Count>
LOWBIT_AVX2_INLINE void store_e2m1_split16(std::uint8_t* dst, __m256i w0, __m256i w1) {
  // dword j: byte 0 = w0's j | j+8 << 4, byte 1 = w1's j | j+8 << 4
  const __m256i t = _mm256_or_si256(w0, _mm256_slli_epi16(w1, 8));
  const __m256i u = _mm256_or_si256(t, _mm256_srli_epi32(t, 12));
  const __m256i r = _mm256_shuffle_epi8(u, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                            0, 4, 8, 12, 1, 5, 9, 13, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m128i out = _mm_unpacklo_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  if constexpr (Count == 32) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), out);
  } else {
    static_assert(Count == 16, "16 or 32 codes");
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), out);
  }
}

// MXFP8 and MXFP6 elements under nearest-even and toward zero take the conversion encoder's path
// 1 instead (kernels/convert/lanes.hpp: scaled_direct_code over direct_code; fewer instructions
// than the shift encoder, and on Zen 4, where a 512-bit instruction costs two 256-bit ones, the
// count is the speed). Its input is |x| * 2^-s computed as max(|x| - (s << 23), 0) on the bit
// patterns, which is exact wherever the exponent field of |x| exceeds s (every finite element
// of a block whose amax gave s is below 2^(s + emax + 1): no overflow). Elsewhere it is not, but
// both it and the true product lie below 2^-125 (field <= s, s >= 0: a float subnormal pattern
// or 0) or below 2^(-s - 126) <= 2^-26 (a zero or float subnormal element and s < 0, the fast
// range's s >= -100), and every FP8 and FP6 element rounds such values to 0 under both modes.
// vcvtps2dq rounds the subnormal codes as MXCSR says: the entry point holds an
// ieee_scope_traceless.
template <class Fmt, rounding RM, bool Int8 = mx_element_traits<Fmt>::is_int8>
struct mx_direct : std::false_type {};
template <class Fmt, rounding RM>
struct mx_direct<Fmt, RM, false>
    : std::bool_constant<::lowbit::kernels::avx2::detail::direct_path<typename mx_element_traits<Fmt>::spec, RM>::available> {
};

// Complete MX element codes (sign, and MXINT8's two's complement) of 8 values with bits b.
template <class Fmt, rounding RM>
LOWBIT_AVX2_INLINE __m256i mx_encode8(__m256i b, const enc_block& e, bool signed_zero) {
  using traits = mx_element_traits<Fmt>;
  using F = typename traits::spec;
  const __m256i a = _mm256_and_si256(b, set1(0x7FFFFFFF));
  const __m256i neg = _mm256_srai_epi32(b, 31);
  __m256i n;
  if constexpr (mx_direct<Fmt, RM>::value) {
    n = ::lowbit::kernels::avx2::detail::scaled_direct_code<F, RM>(a, e.s23);
  } else {
    n = encode_magnitude<F, RM>(a, neg, e);
  }
  if constexpr (traits::is_int8) {
    return _mm256_and_si256(_mm256_sub_epi32(_mm256_xor_si256(n, neg), neg), set1(0xFF));
  } else {
    __m256i sign = _mm256_and_si256(neg, set1(static_cast<int>(F::sign_mask)));
    if (!signed_zero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi32(n, _mm256_setzero_si256()), sign);
    return _mm256_or_si256(n, sign);
  }
}

// ------------------------------------------------------------------------------------------------
// Packing codes held one per 32-bit lane into the storage layouts of core/packing.hpp.

// 32 codes (0..255) in c0..c3 -> Bits * 4 bytes in the layouts of core/packing.hpp, through the
// shared packers of avx2_common.hpp.
// Split: FP4 in split halves (byte j: code j low, code j + 16 high).
template <int Bits, bool Split = false>
LOWBIT_AVX2_INLINE void store_codes32(std::uint8_t* dst, __m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  if constexpr (Split) {
    static_assert(Bits == 4, "split halves hold FP4 codes");
    const __m256i p = _mm256_packus_epi32(_mm256_or_si256(c0, _mm256_slli_epi32(c2, 4)),
                                          _mm256_or_si256(c1, _mm256_slli_epi32(c3, 4)));
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p, p), _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(b));
    return;
  }
  const __m256i c[4] = {c0, c1, c2, c3};
  const __m256i bytes = ::lowbit::kernels::avx2::pack_dwords_to_bytes(c);
  if constexpr (Bits == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), bytes);
  } else if constexpr (Bits == 4) {
    ::lowbit::kernels::avx2::store_nibbles(dst, bytes);
  } else {
    static_assert(Bits == 6, "4, 6 or 8 bits");
    ::lowbit::kernels::avx2::store_sextets(dst, bytes);
  }
}

// 8 codes (0..255) -> Bits bytes.
template <int Bits>
LOWBIT_AVX2_INLINE void store_codes8(std::uint8_t* dst, __m256i c) {
  const __m256i p = _mm256_packus_epi32(c, c);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p, p), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
  const __m128i x = _mm256_castsi256_si128(b);  // bytes 0..7: the codes
  if constexpr (Bits == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), x);
  } else if constexpr (Bits == 4) {
    const __m128i w = _mm_maddubs_epi16(x, _mm_set1_epi16(0x1001));
    const std::uint32_t v = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(w, w)));
    std::memcpy(dst, &v, 4);
  } else {
    static_assert(Bits == 6, "4, 6 or 8 bits");
    const __m128i d = _mm_madd_epi16(_mm_maddubs_epi16(x, _mm_set1_epi16(0x4001)), _mm_set1_epi32(0x10000001));
    const std::uint32_t d0 = static_cast<std::uint32_t>(_mm_cvtsi128_si32(d));
    const std::uint32_t d1 = static_cast<std::uint32_t>(_mm_extract_epi32(d, 1));
    const std::uint8_t bytes[6] = {static_cast<std::uint8_t>(d0), static_cast<std::uint8_t>(d0 >> 8),
                                   static_cast<std::uint8_t>(d0 >> 16), static_cast<std::uint8_t>(d1),
                                   static_cast<std::uint8_t>(d1 >> 8), static_cast<std::uint8_t>(d1 >> 16)};
    std::memcpy(dst, bytes, 6);
  }
}

// 16 bytes of packed nibbles -> 32 codes, one per byte. WidenOrder: lane 0 holds elements
// 0-3, 8-11, 16-19, 24-27 and lane 1 the others (the order store_halves_f32 expects); otherwise
// element order.
template <bool WidenOrder>
LOWBIT_AVX2_INLINE __m256i load_nibbles32(const std::uint8_t* src) {
  const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  __m256i p;
  if constexpr (WidenOrder) {
    p = _mm256_shuffle_epi8(x, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                 2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1));
  } else {
    p = _mm256_shuffle_epi8(x, _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                 8, 9, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1));
  }
  const __m256i m = _mm256_set1_epi8(0x0F);
  return _mm256_unpacklo_epi8(_mm256_and_si256(p, m), _mm256_and_si256(_mm256_srli_epi16(p, 4), m));
}

// The same from 16 bytes in split halves (ggml's block_mxfp4: byte j holds element j low and
// element j + 16 high), in the same two orders.
template <bool WidenOrder>
LOWBIT_AVX2_INLINE __m256i load_nibbles32_split(const std::uint8_t* src) {
  const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  const __m256i m = _mm256_set1_epi8(0x0F);
  if constexpr (WidenOrder) {
    // lane 0: bytes 0-3, 8-11 (elements 0-3, 8-11 low; 16-19, 24-27 high), lane 1: bytes 4-7, 12-15
    const __m256i p = _mm256_shuffle_epi8(x, _mm256_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11,  //
                                                              4, 5, 6, 7, 12, 13, 14, 15, 4, 5, 6, 7, 12, 13, 14, 15));
    return _mm256_and_si256(_mm256_srlv_epi32(p, _mm256_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4)), m);
  } else {
    return _mm256_and_si256(_mm256_srlv_epi32(x, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), m);
  }
}

// Stores 8 floats; Stream: a non-temporal store (dst 32-byte aligned), for outputs far larger than
// the caches, which they would only evict (the caller fences).
template <bool Stream>
LOWBIT_AVX2_INLINE void store_f32(float* dst, __m256i v) {
  if constexpr (Stream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  }
}

// 32 16-bit halves given as high bytes hb and low bytes lb in widen order -> 32 floats.
template <bool Stream>
LOWBIT_AVX2_INLINE void store_halves_f32(float* dst, __m256i hb, __m256i lb) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i w0 = _mm256_unpacklo_epi8(lb, hb);
  const __m256i w1 = _mm256_unpackhi_epi8(lb, hb);
  store_f32<Stream>(dst, _mm256_unpacklo_epi16(zero, w0));
  store_f32<Stream>(dst + 8, _mm256_unpackhi_epi16(zero, w0));
  store_f32<Stream>(dst + 16, _mm256_unpacklo_epi16(zero, w1));
  store_f32<Stream>(dst + 24, _mm256_unpackhi_epi16(zero, w1));
}

// The same in element order -> 32 bfloat16.
LOWBIT_AVX2_INLINE void store_halves_bf16(bfloat16* dst, __m256i hb, __m256i lb) {
  const __m256i w0 = _mm256_unpacklo_epi8(lb, hb);  // elements 0-7 | 16-23
  const __m256i w1 = _mm256_unpackhi_epi8(lb, hb);  // elements 8-15 | 24-31
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute2x128_si256(w0, w1, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16), _mm256_permute2x128_si256(w0, w1, 0x31));
}

template <bool Stream = false>
LOWBIT_AVX2_INLINE void store8(float* dst, __m256 v) {
  store_f32<Stream>(dst, _mm256_castps_si256(v));
}
template <bool Stream = false>
LOWBIT_AVX2_INLINE void store8(bfloat16* dst, __m256 v) {
  static_assert(!Stream, "streaming stores are used for float outputs only");
  const __m256i r = ::lowbit::kernels::avx2::bf16_lanes_of_f32(_mm256_castps_si256(v));
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(w));
}

// n copies of the NaN the reference writes for a NaN scale (float: 0x7FC00000; bfloat16: 0x7FFF).
inline void fill_nan(float* dst, std::size_t n) noexcept {
  const float v = lowbit::detail::bit_cast<float>(0x7FC00000u);
  for (std::size_t i = 0; i < n; ++i) dst[i] = v;
}
inline void fill_nan(bfloat16* dst, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bfloat16::from_bits(0x7FFF);
}

// ------------------------------------------------------------------------------------------------
// MX quantize.

// The reference decoder, for the blocks outside the fast range of mx_dequantize_fp8: kept out
// of line, so that the short loop around it is compiled as if it were not there.
template <class Fmt, class Dst>
LOWBIT_NOINLINE void dequantize_block_cold(const std::uint8_t* elements, std::uint8_t scale,
                                           const ::lowbit::mx_options& o, Dst* out) {
  ::lowbit::mx_dequantize_block<Fmt>(elements, scale, o, out);
}

// A block outside the fast range: the NaN scale's block of NaN, or the reference.
template <class Fmt, class Dst>
inline void mx_block_outside(const std::uint8_t* in, std::uint8_t sc, const ::lowbit::mx_options& o, Dst* out) {
  if (sc == 0xFF)
    fill_nan(out, o.block_size);
  else
    dequantize_block_cold<Fmt>(in, sc, o, out);
}

// E8M0 codes of 8 blocks from their amax bit patterns (0xFF where amax is NaN or Inf).
template <class Fmt>
LOWBIT_AVX2_INLINE __m256i e8m0_codes(__m256i amax, ::lowbit::e8m0_rule rule) {
  const std::uint32_t max_bits = lowbit::detail::bit_cast<std::uint32_t>(Fmt::element_max);
  const int k = static_cast<int>(max_bits >> 23) - 127;            // element_max = c * 2^k
  const int c_mantissa = static_cast<int>(max_bits & 0x7FFFFFu);  // c's mantissa bits
  const int even_carry = (1 << 23) - (1 << (22 - Fmt::mantissa_bits));
  const __m256i field = _mm256_srli_epi32(amax, 23);
  // A subnormal amax (field 0) is an integer below 2^23: converting it to float normalises it.
  const __m256i fb = _mm256_castps_si256(_mm256_cvtepi32_ps(amax));
  const __m256i subnormal = _mm256_cmpeq_epi32(field, _mm256_setzero_si256());
  // floor(log2 amax) + 127 (-149 for amax = 0) and amax's normalised mantissa
  const __m256i e = _mm256_blendv_epi8(field, _mm256_sub_epi32(_mm256_srli_epi32(fb, 23), set1(149)), subnormal);
  const __m256i mant = _mm256_and_si256(_mm256_blendv_epi8(amax, fb, subnormal), set1(0x7FFFFF));
  __m256i c;
  switch (rule) {
    case ::lowbit::e8m0_rule::ceil:
      c = _mm256_sub_epi32(_mm256_sub_epi32(e, set1(k)), _mm256_cmpgt_epi32(mant, set1(c_mantissa)));
      break;
    case ::lowbit::e8m0_rule::even:
      c = _mm256_sub_epi32(_mm256_sub_epi32(e, set1(Fmt::emax)), _mm256_cmpgt_epi32(mant, set1(even_carry - 1)));
      break;
    case ::lowbit::e8m0_rule::floor_log2f: {
      // One above the floor where the float32 log2 rounds up (log2f_mantissa_thresholds). An
      // amax of 0 (e = -149) reads entry 0 through the clamp; its code clamps to 0 either way.
      const __m256i index = _mm256_max_epi32(_mm256_sub_epi32(e, set1(log2f_threshold_first)), _mm256_setzero_si256());
      const __m256i t = _mm256_i32gather_epi32(log2f_mantissa_thresholds(), index, 4);
      c = _mm256_sub_epi32(_mm256_sub_epi32(e, set1(Fmt::emax)), _mm256_cmpgt_epi32(mant, _mm256_sub_epi32(t, set1(1))));
      break;
    }
    case ::lowbit::e8m0_rule::floor:
    default: c = _mm256_sub_epi32(e, set1(Fmt::emax)); break;
  }
  c = _mm256_min_epi32(_mm256_max_epi32(c, _mm256_setzero_si256()), set1(254));
  return _mm256_blendv_epi8(c, set1(0xFF), _mm256_cmpgt_epi32(amax, set1(0x7F7FFFFF)));
}

// MXFP4 under a nearest mode (see e2m1_nearest16); sv: the scale exponent in every lane.
template <rounding RM, bool Split, class Src>
LOWBIT_AVX2_INLINE void mx_encode_block_fp4(const Src* x, std::uint8_t* out, std::size_t block_size, __m256i sv,
                                             bool signed_zero, const e2m1_consts& c) {
  const __m256i s7 = _mm256_blend_epi16(_mm256_slli_epi32(sv, 7), _mm256_slli_epi32(sv, 23), 0xAA);  // s * 128
  for (std::size_t i = 0; i < block_size; i += 32) {
    const __m256i w0 = e2m1_nearest16<RM>(load8(x + i), load8(x + i + 8), s7, signed_zero, c);
    const __m256i w1 = e2m1_nearest16<RM>(load8(x + i + 16), load8(x + i + 24), s7, signed_zero, c);
    if constexpr (Split) {
      store_e2m1_split32(out + i / 2, w0, w1);
    } else {
      store_e2m1_pairs<32>(out + i / 2, w0, w1);
    }
  }
}

// Split: FP4 blocks of 32 in split halves (ggml's block_mxfp4).
template <class Fmt, rounding RM, bool Split, class Src>
LOWBIT_AVX2_INLINE void mx_encode_block(const Src* x, std::uint8_t* out, std::size_t block_size, __m256i sv,
                                         bool signed_zero, const e2m1_consts& c) {
  constexpr int bits = Fmt::element_bits;
  if constexpr (bits == 4 && (RM == rounding::nearest_even || RM == rounding::nearest_away ||
                              RM == rounding::nearest_toward_zero)) {
    if (block_size % 32 == 0) {
      mx_encode_block_fp4<RM, Split>(x, out, block_size, sv, signed_zero, c);
      return;
    }
  }
  const enc_block e = make_enc_block<typename mx_element_traits<Fmt>::spec>(sv);
  std::size_t i = 0;
  for (; i + 32 <= block_size; i += 32) {
    const __m256i c0 = mx_encode8<Fmt, RM>(load8(x + i), e, signed_zero);
    const __m256i c1 = mx_encode8<Fmt, RM>(load8(x + i + 8), e, signed_zero);
    const __m256i c2 = mx_encode8<Fmt, RM>(load8(x + i + 16), e, signed_zero);
    const __m256i c3 = mx_encode8<Fmt, RM>(load8(x + i + 24), e, signed_zero);
    store_codes32<bits, Split>(out + i * bits / 8, c0, c1, c2, c3);
  }
  static_assert(!Split || bits == 4, "split halves hold FP4 codes");
  for (; !Split && i < block_size; i += 8) store_codes8<bits>(out + i * bits / 8, mx_encode8<Fmt, RM>(load8(x + i), e, signed_zero));
}

// The amax of `count` (<= 8) blocks of bs values at xg as bit patterns, one block per lane (the
// others 0).
template <class Src>
LOWBIT_AVX2_INLINE __m256i group_amax8(const Src* xg, std::size_t count, std::size_t bs) {
  const __m256i abs_mask = set1(0x7FFFFFFF);
  __m256i m[8];
  for (std::size_t j = 0; j < 8; ++j) {
    __m256i acc = _mm256_setzero_si256();
    if (j < count) {
      const Src* x = xg + j * bs;
      std::size_t i = 0;
      for (; i + 32 <= bs; i += 32) {
        const __m256i m01 = _mm256_max_epi32(_mm256_and_si256(load8(x + i), abs_mask),
                                             _mm256_and_si256(load8(x + i + 8), abs_mask));
        const __m256i m23 = _mm256_max_epi32(_mm256_and_si256(load8(x + i + 16), abs_mask),
                                             _mm256_and_si256(load8(x + i + 24), abs_mask));
        acc = _mm256_max_epi32(acc, _mm256_max_epi32(m01, m23));
      }
      for (; i < bs; i += 8) acc = _mm256_max_epi32(acc, _mm256_and_si256(load8(x + i), abs_mask));
    }
    m[j] = acc;
  }
  return transpose_max8(m);
}

// Out: where block b goes (planar_layout or ggml_fp4_layout, kernels/mx/scalar.hpp).
template <class Fmt, rounding RM, class Src, class Out>
LOWBIT_TARGET_AVX2 inline bool mx_quantize_rm(const Src* src, std::size_t blocks, const ::lowbit::mx_options& o,
                                              const Out out) {
  constexpr int bits = Fmt::element_bits;
  constexpr bool split = Out::split;
  // The options in locals: the stores below may alias o as far as the compiler knows.
  const std::size_t bs = o.block_size;
  const ::lowbit::e8m0_rule rule = o.scale_rule;
  const bool signed_zero = o.signed_zero;
  const std::size_t block_bytes = bs * bits / 8;
  const e2m1_consts c = make_e2m1_consts<RM>();
  bool non_finite = false;
  if (blocks == 0) return false;
  // Group g + 1's amax and scale codes before group g's elements, so that its reductions overlap
  // them.
  __m256i next_amax = group_amax8(src, blocks < 8 ? blocks : 8, bs);
  __m256i next_codes = e8m0_codes<Fmt>(next_amax, rule);
  for (std::size_t g = 0; g < blocks; g += 8) {
    const std::size_t count = blocks - g < 8 ? blocks - g : 8;
    const Src* xg = src + g * bs;
    const __m256i amax = next_amax;
    const __m256i codes = next_codes;
    if (g + 8 < blocks) {
      next_amax = group_amax8(xg + 8 * bs, blocks - g - 8 < 8 ? blocks - g - 8 : 8, bs);
      next_codes = e8m0_codes<Fmt>(next_amax, rule);
    }
    if (!split && count == 8) {
      const __m256i p = _mm256_packus_epi32(codes, codes);
      const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p, p), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out.scale_ptr(g)), _mm256_castsi256_si128(b));
    } else {
      alignas(32) std::int32_t lane[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lane), codes);
      for (std::size_t j = 0; j < count; ++j) *out.scale_ptr(g + j) = static_cast<std::uint8_t>(lane[j]);
    }
    // Every block through the fast path with its own scale exponent; the NaN blocks and the
    // blocks below the fast range are rewritten afterwards. An all-zero block encodes its signed
    // zeros with s = 0 (its codes do not depend on the scale, and s = -127 is outside the range).
    const __m256i zero_block = _mm256_cmpeq_epi32(amax, _mm256_setzero_si256());
    const __m256i s = _mm256_andnot_si256(zero_block, _mm256_sub_epi32(codes, set1(127)));
    for (std::size_t j = 0; j < count; ++j) {
      const __m256i sj = _mm256_permutevar8x32_epi32(s, set1(static_cast<int>(j)));
      mx_encode_block<Fmt, RM, split>(xg + j * bs, out.element_ptr(g + j), bs, sj, signed_zero, c);
    }
    const __m256i nan_block = _mm256_cmpeq_epi32(codes, set1(0xFF));
    const __m256i low_block = _mm256_andnot_si256(zero_block, _mm256_cmpgt_epi32(set1(127 + mx_fast_min_exponent), codes));
    const unsigned nan_mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(nan_block)));
    const unsigned special =
        (nan_mask | static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(low_block)))) & ((1u << count) - 1u);
    if (special != 0) {
      for (std::size_t j = 0; j < count; ++j) {
        if (((special >> j) & 1u) == 0) continue;
        if ((nan_mask >> j) & 1u) {
          std::memset(out.element_ptr(g + j), 0, block_bytes);
          non_finite = true;
        } else {
          mx_quantize_block_to<Fmt>(xg + j * bs, o, out, g + j);
        }
      }
    }
  }
  return non_finite;
}

// ------------------------------------------------------------------------------------------------
// MX dequantize.

// MXFP4 and MXFP6 through the per-scale tables. In: where block b is (planar_layout, or for
// MXFP4 blocks of 32 ggml_fp4_layout).
template <class Fmt, bool Stream, class Dst, class In>
LOWBIT_TARGET_AVX2 inline void mx_dequantize_table(const In in_layout, std::size_t blocks, std::size_t bs, Dst* dst) {
  using F = typename mx_element_traits<Fmt>::spec;
  constexpr bool fp4 = Fmt::element_bits == 4;
  constexpr int entries = fp4 ? 16 : 32;
  constexpr bool f32 = std::is_same<Dst, float>::value;
  const half_table<entries>& table = mx_half_table<F, entries, !f32>();
  constexpr bool split = In::split;
  static_assert(!split || fp4, "split halves hold FP4 codes");
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* in = in_layout.element_ptr(b);
    Dst* out = dst + b * bs;
    const std::uint8_t sc = *in_layout.scale_ptr(b);
    if (!fp4 && sc == 0xFF) {
      fill_nan(out, bs);
      continue;
    }
    const std::uint8_t* row = table.row[sc];
    std::size_t i = 0;
    if constexpr (fp4) {
      const __m256i th = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row)));
      const __m256i tl = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16)));
      for (; i + 32 <= bs; i += 32) {
        __m256i c;
        if constexpr (split) {
          c = load_nibbles32_split<f32>(in + i / 2);
        } else {
          c = load_nibbles32<f32>(in + i / 2);
        }
        const __m256i hb = _mm256_shuffle_epi8(th, c);
        const __m256i lb = _mm256_shuffle_epi8(tl, c);
        if constexpr (f32) {
          store_halves_f32<Stream>(out + i, hb, lb);
        } else {
          store_halves_bf16(out + i, hb, lb);
        }
      }
      for (; !split && i < bs; ++i) {
        const unsigned c = (in[i / 2] >> (4 * (i % 2))) & 0x0Fu;
        store_half(out[i], static_cast<std::uint32_t>(row[c]) << 8 | row[16 + c]);
      }
    } else {
      const __m256i th0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row)));
      const __m256i th1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16)));
      const __m256i tl0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 32)));
      const __m256i tl1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 48)));
      for (; i + 32 <= bs; i += 32) {
        __m256i c = ::lowbit::kernels::avx2::load_sextets(in + i * 6 / 8);
        if constexpr (f32) c = ::lowbit::kernels::avx2::prepare_widen(c);
        const __m256i upper = _mm256_slli_epi16(c, 3);  // magnitude bit 4 -> byte bit 7
        __m256i hb = _mm256_blendv_epi8(_mm256_shuffle_epi8(th0, c), _mm256_shuffle_epi8(th1, c), upper);
        const __m256i lb = _mm256_blendv_epi8(_mm256_shuffle_epi8(tl0, c), _mm256_shuffle_epi8(tl1, c), upper);
        hb = _mm256_or_si256(hb, _mm256_and_si256(_mm256_slli_epi16(c, 2), _mm256_set1_epi8(static_cast<char>(0x80))));
        if constexpr (f32) {
          store_halves_f32<Stream>(out + i, hb, lb);
        } else {
          store_halves_bf16(out + i, hb, lb);
        }
      }
      if (i < bs) {
        std::uint8_t codes[32];
        unpack_sextets(in + i * 6 / 8, codes, bs - i);
        for (std::size_t j = 0; i + j < bs; ++j) {
          const unsigned c = codes[j] & 0x1Fu;
          const std::uint32_t sign = (codes[j] & 0x20u) != 0 ? 0x8000u : 0u;
          store_half(out[i + j], sign | static_cast<std::uint32_t>(row[c]) << 8 | row[32 + c]);
        }
      }
    }
  }
}

// 8 element bytes (low half of x) -> 8 floats, exactly the element value times 2^-8 (E4M3),
// times 1 (E5M2), or the integer (MXINT8).
template <class Fmt>
LOWBIT_AVX2_INLINE __m256 widen_fp8(__m128i x) {
  if constexpr (mx_element_traits<Fmt>::is_int8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
  } else {
    __m128i h = _mm_unpacklo_epi8(_mm_setzero_si128(), x);  // code << 8
    if constexpr (std::is_same<typename mx_element_traits<Fmt>::spec, formats::e4m3fn>::value) {
      h = _mm_and_si128(_mm_srai_epi16(h, 1), _mm_set1_epi16(static_cast<short>(0xBFFF)));
    }
    return _mm256_cvtph_ps(h);
  }
}

// How mx_dequantize_fp8 makes bfloat16 results: split_tables' nibble or affine split of the
// element codes (convert's split32), or the float32 product rounded (store8; exact too).
enum class fp8_bf16 { nibble, affine, product };

// 32 element bytes at in, loaded in c (MXFP8: none NaN or Inf), of a block with scale exponent s
// in the fast range -> out. p: 2^(s + offset) as a float, undoing widen_fp8's offset; add: s * 128.
// float32: the exact widening times p. bfloat16 (bfloat16 holds every element value exactly, and
// inside the fast range every product 2^s v exactly, as a normal number): the element's bfloat16
// with s added to the exponent field of the nonzero lanes.
template <class Fmt, bool Stream, fp8_bf16 K, class Dst>
LOWBIT_AVX2_INLINE void fp8_step32(const std::uint8_t* in, __m256i c, __m256 p, __m256i add,
                                   const ::lowbit::kernels::avx2::detail::split_registers& split, Dst* out) {
  using E = typename mx_element_traits<Fmt>::spec;
  if constexpr (std::is_same<Dst, bfloat16>::value && K != fp8_bf16::product) {
    __m256i w0, w1;
    ::lowbit::kernels::avx2::detail::split32<E, K == fp8_bf16::affine>(c, split, &w0, &w1);
    const __m256i magnitude = _mm256_set1_epi16(0x7FFF);
    const __m256i z0 = _mm256_cmpeq_epi16(_mm256_and_si256(w0, magnitude), _mm256_setzero_si256());
    const __m256i z1 = _mm256_cmpeq_epi16(_mm256_and_si256(w1, magnitude), _mm256_setzero_si256());
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi16(w0, _mm256_andnot_si256(z0, add)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm256_add_epi16(w1, _mm256_andnot_si256(z1, add)));
  } else if constexpr (mx_element_traits<Fmt>::is_int8) {
    // Sign-extending loads (vpmovsxbd from memory), written out: GCC kept a loop of four with
    // its counter on the stack (0.56x).
    const auto at = [in](int k) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8 * k)); };
    store8<Stream>(out, _mm256_mul_ps(widen_fp8<Fmt>(at(0)), p));
    store8<Stream>(out + 8, _mm256_mul_ps(widen_fp8<Fmt>(at(1)), p));
    store8<Stream>(out + 16, _mm256_mul_ps(widen_fp8<Fmt>(at(2)), p));
    store8<Stream>(out + 24, _mm256_mul_ps(widen_fp8<Fmt>(at(3)), p));
  } else {
    // widen_fp8 on 32 codes: code << 8 in the words of bytes 0-7 and 16-23 (lo), 8-15 and 24-31 (hi).
    __m256i lo = _mm256_unpacklo_epi8(_mm256_setzero_si256(), c);
    __m256i hi = _mm256_unpackhi_epi8(_mm256_setzero_si256(), c);
    if constexpr (std::is_same<E, formats::e4m3fn>::value) {
      lo = _mm256_and_si256(_mm256_srai_epi16(lo, 1), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
      hi = _mm256_and_si256(_mm256_srai_epi16(hi, 1), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    }
    store8<Stream>(out, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(lo)), p));
    store8<Stream>(out + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(hi)), p));
    store8<Stream>(out + 16, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(lo, 1)), p));
    store8<Stream>(out + 24, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(hi, 1)), p));
  }
}

// Block of bs elements (a multiple of 8) with scale exponent s in the fast range -> out, unless
// one of its codes is NaN or Inf: then false, with out written in part.
template <class Fmt, bool Stream, fp8_bf16 K, class Dst>
LOWBIT_AVX2_INLINE bool fp8_block(const std::uint8_t* in, std::size_t bs, int s,
                                  const ::lowbit::kernels::avx2::detail::split_registers& split, Dst* out) {
  using E = typename mx_element_traits<Fmt>::spec;
  constexpr bool is_int8 = mx_element_traits<Fmt>::is_int8;
  constexpr int offset = is_int8 ? -6 : std::is_same<E, formats::e4m3fn>::value ? 8 : 0;
  const __m256 p = _mm256_castsi256_ps(set1((s + offset + 127) << 23));
  const __m256i add = _mm256_set1_epi16(static_cast<short>(s * 128));
  std::size_t i = 0;
  for (; i + 32 <= bs; i += 32) {
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    if (!is_int8 && ::lowbit::kernels::avx2::detail::special_codes32<E>(c)) return false;
    fp8_step32<Fmt, Stream, K>(in + i, c, p, add, split, out + i);
  }
  for (; i < bs; i += 8) {  // the last 8..24 of a block size that is not a multiple of 32
    std::uint8_t codes[32] = {};
    std::memcpy(codes, in + i, 8);
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
    if (!is_int8 && ::lowbit::kernels::avx2::detail::special_codes32<E>(c)) return false;
    Dst part[32];
    fp8_step32<Fmt, false, K>(codes, c, p, add, split, part);
    std::memcpy(out + i, part, 8 * sizeof(Dst));
  }
  return true;
}

// MXFP8 and MXINT8: the blocks in the fast range (mx_fast_range) without NaN or Inf codes by
// fp8_block, every other block by the reference (mx_block_outside), which writes all of it. The
// inner loop holds no call, so its constants stay in registers from block to block.
template <class Fmt, bool Stream, fp8_bf16 K, class Dst>
LOWBIT_TARGET_AVX2 inline void fp8_blocks(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t blocks,
                                          const ::lowbit::mx_options& o, Dst* dst,
                                          const ::lowbit::kernels::avx2::detail::split_registers& split) {
  const std::size_t bs = o.block_size;
  std::size_t b = 0;
  while (b < blocks) {
    for (; b < blocks; ++b) {
      const int s = static_cast<int>(scales[b]) - 127;  // (the NaN scale 0xFF: s = 128, outside)
      if (!mx_fast_range<Fmt>::holds(s) || !fp8_block<Fmt, Stream, K>(elements + b * bs, bs, s, split, dst + b * bs))
        break;
    }
    if (b < blocks) {
      mx_block_outside<Fmt>(elements + b * bs, scales[b], o, dst + b * bs);
      ++b;
    }
  }
}

template <class Fmt, bool Stream, class Dst>
LOWBIT_TARGET_AVX2 inline void mx_dequantize_fp8(const std::uint8_t* elements, const std::uint8_t* scales,
                                                 std::size_t blocks, const ::lowbit::mx_options& o, Dst* dst) {
  namespace cv = ::lowbit::kernels::avx2::detail;
  if constexpr (!mx_element_traits<Fmt>::is_int8 && std::is_same<Dst, bfloat16>::value) {
    using E = typename mx_element_traits<Fmt>::spec;
    static_assert(cv::holds_exactly<E, formats::bfloat16>::value, "exact elements");
    const auto& t = cv::split_tables<E, formats::bfloat16>::get();
    const cv::split_registers split = cv::split_load(t);
    if (t.shift >= 0) return fp8_blocks<Fmt, Stream, fp8_bf16::nibble>(elements, scales, blocks, o, dst, split);
    if (t.affine_shift >= 0) return fp8_blocks<Fmt, Stream, fp8_bf16::affine>(elements, scales, blocks, o, dst, split);
  }
  fp8_blocks<Fmt, Stream, fp8_bf16::product>(elements, scales, blocks, o, dst, cv::split_registers{});
}

// Whether a dequantization writes its output with streaming stores: float output of at least
// avx2_common.hpp's stream_threshold_bytes (far beyond the per-core caches, where the stores
// would only evict what the caller keeps there) to a 32-byte aligned destination.

template <class Dst>
inline bool stream_output(const Dst* dst, std::size_t n) noexcept {
  return std::is_same<Dst, float>::value && n >= ::lowbit::kernels::avx2::stream_threshold_bytes / sizeof(float) &&
         reinterpret_cast<std::uintptr_t>(dst) % 32 == 0;
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Entry points. n is a multiple of the block size and the options passed the bulk calls' checks
// and mx_avx2_supports (quantizing: mx_avx2_supports_quantize). Quantize returns whether a block
// held NaN or Inf.

// Out: planar_layout, or for MXFP4 with blocks of 32 mxfp4_ggml_layout (kernels/mx/scalar.hpp).
template <class Fmt, class Src, class Out>
LOWBIT_TARGET_AVX2 inline bool mx_quantize(const Src* src, std::size_t n, const ::lowbit::mx_options& o,
                                           const Out out) {
  const std::size_t blocks = n / o.block_size;
  const ieee_scope_traceless env;  // mx_direct's vcvtps2dq
  return with_element_rounding(o.element_rounding, [&](auto rm) {
    return detail::mx_quantize_rm<Fmt, decltype(rm)::value>(src, blocks, o, out);
  });
}
template <class Fmt, class Src>
LOWBIT_TARGET_AVX2 inline bool mx_quantize(const Src* src, std::size_t n, const ::lowbit::mx_options& o,
                                           std::uint8_t* elements, std::uint8_t* scales) {
  const planar_layout<std::uint8_t> out{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  return mx_quantize<Fmt>(src, n, o, out);
}

// In: planar_layout, or for MXFP4 with blocks of 32 mxfp4_ggml_layout.
template <class Fmt, class Dst, class In>
LOWBIT_TARGET_AVX2 inline void mx_dequantize(const In in, std::size_t n, const ::lowbit::mx_options& o, Dst* dst) {
  const std::size_t block_size = o.block_size;
  if (detail::stream_output(dst, n)) {
    if constexpr (std::is_same<Dst, float>::value) {
      if constexpr (Fmt::element_bits == 8) {
        detail::mx_dequantize_fp8<Fmt, true>(in.elements, in.scales, n / block_size, o, dst);
      } else {
        detail::mx_dequantize_table<Fmt, true>(in, n / block_size, block_size, dst);
      }
      _mm_sfence();
      return;
    }
  }
  if constexpr (Fmt::element_bits == 8) {
    detail::mx_dequantize_fp8<Fmt, false>(in.elements, in.scales, n / block_size, o, dst);
  } else {
    detail::mx_dequantize_table<Fmt, false>(in, n / block_size, block_size, dst);
  }
}
template <class Fmt, class Dst>
LOWBIT_TARGET_AVX2 inline void mx_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                             const ::lowbit::mx_options& o, Dst* dst) {
  const planar_layout<const std::uint8_t> in{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  mx_dequantize<Fmt>(in, n, o, dst);
}
}  // namespace avx2
#endif  // LOWBIT_HAS_AVX2_KERNELS

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_MX_AVX2_HPP
