// lowbit: the scalar reference of the OCP MX v1.0 block formats (MXFP8 E4M3/E5M2, MXFP6
// E2M3/E3M2, MXFP4, MXINT8): the format tags, the options, the E8M0 scale rule and the per-block
// functions that define every result. The AVX2 kernels beside it (kernels/mx/avx2.hpp) must be
// bit-identical to these functions; tests/test_kernels_block.cpp compares them byte for byte.
// The public bulk calls, their argument checks and the ggml interop are in schemes/mx.hpp.
//
//   scale   (e8m0_rule::floor, the spec's rule, OCP MX v1.0 section 6.3)
//           s = floor(log2(amax)) - emax_elem, clamped to [-127, 127] (codes 0x00..0xFE)
//   element P_i = element format of (v_i / X), rounded (nearest-even by default) and saturated
//           to +-element max
//
// Nothing here is float arithmetic that can round (exact products by powers of two, integer
// exponent arithmetic, the codec), so neither MXCSR nor floating-point contraction
// (-ffp-contract=fast, -march=native) can change a result.
#ifndef LOWBIT_KERNELS_MX_SCALAR_HPP
#define LOWBIT_KERNELS_MX_SCALAR_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../core/packing.hpp"
#include "../../core/rounding.hpp"
#include "../../formats/types.hpp"

namespace lowbit {

// How the shared E8M0 exponent is chosen from the block's largest magnitude amax.
//  floor : s = floor(log2(amax)) - emax_elem. The OCP MX v1.0 rule (section 6.3), microxcaling,
//          torchao ScaleCalculationMode.FLOOR, compressed-tensors, ggml. The block max lands in
//          [2^emax, 2^(emax+1)), which can exceed the element max (6 for FP4, 448 for E4M3):
//          such values saturate.
//  ceil  : s = ceil(log2(amax / elem_max)), the smallest power of two with amax / X <= elem_max,
//          so nothing saturates. torchao RCEIL and NVIDIA's cvt.rp.satfinite.ue8m0x2.f32 applied
//          to amax / elem_max, ModelOpt MXFP4 (ceil(log2(amax / 6))). Bit-identical to the fp32
//          quotient plus cvt.rp except for one amax per FP element format, where that quotient is
//          a float32 subnormal and rounds down onto a power of two: MXFP4 amax 0x01400001 gives
//          0x01 here (the exact ceiling), 0x00 from the fp32 quotient. Never for MXINT8.
//  even  : torchao ScaleCalculationMode.EVEN: amax is first rounded to the element's mantissa
//          width (ties away from zero, carrying into the exponent), then the floor rule applies.
//          (Ties to even would give the same scales: the only tie that changes the exponent is
//          against an all-ones mantissa, which is odd.)
//  floor_log2f : s = floor(log2f(amax)) - emax_elem, where log2f is log2 rounded to the nearest
//          float32, as microxcaling's code computes it (torch.log2 on a float32 tensor) and ggml's
//          floorf(log2f(amax)). For an amax a few float ulps below 2^k, k >= 2 or k <= -2, the
//          float32 log2 rounds up to the integer k and s is one higher than the floor rule's: MXFP4
//          amax 0x427FFFFF (64 - 2^-18) gets s = 4 here, 3 under floor. For users who must match
//          scales such code wrote; the correctly rounded log2 is the reference (a libm log2f with
//          an error near 1 ulp may differ from it on those few amax values).
enum class e8m0_rule : std::uint8_t { floor, ceil, even, floor_log2f };

// The six concrete formats of OCP MX v1.0 (Table 1), for run-time dispatch.
enum class mx_format : std::uint8_t { mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4_e2m1, mxint8 };

inline constexpr std::size_t mx_default_block_size = 32;

// The E8M0 code of a NaN scale.
inline constexpr std::uint8_t mx_nan_scale = 0xFF;

struct mx_options {
  std::size_t block_size = mx_default_block_size;
  e8m0_rule scale_rule = e8m0_rule::floor;
  // Any mode but rounding::stochastic: nearest_even (the spec, torchao, ModelOpt), nearest_away
  // (microxcaling's default "nearest"), nearest_toward_zero (ggml's first-best table search).
  rounding element_rounding = rounding::nearest_even;
  // false: an element that rounds to zero is written as +0 even when the input is negative
  // (ggml's table search finds +0 first). true keeps the sign, as the codec does.
  bool signed_zero = true;
  // When set, a block holding NaN or Inf is still written as the NaN block but the call returns
  // errc::non_finite_input (after converting every block).
  bool non_finite_is_error = false;
};


namespace detail {

// MXINT8 elements as data for the generic codec: sign-magnitude, one exponent bit, bias 1 and
// subnormals give exactly the magnitudes k/64, k = 0..127, evenly spaced: the spec's 1.6
// fixed point (OCP MX v1.0 section 5.3.3, implicit scale 2^-6) restricted to the symmetric range
// microxcaling uses. Rounding and saturation of MXINT8 elements therefore go through the same
// codec as the float elements.
struct mxint8_magnitude_spec : format_spec<1, 6, 1, special_values::finite> {
  static constexpr const char* name = "mxint8_element";
};
using mxint8_magnitude = minifloat<mxint8_magnitude_spec>;

// The float32 exponent range with M mantissa bits plus one exponent bit more, so that any float
// scaled by 2^-emax stays normal: used to round amax to the element's mantissa width (even rule).
template <int M>
struct mx_amax_rounding_spec : format_spec<9, M, 255, special_values::ieee> {
  static constexpr const char* name = "mx_amax_rounding";
};

// 2^k as a double, exact for -1022 <= k <= 1023.
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST double mx_pow2(int k) noexcept {
  return bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// Whether log2(a), rounded to the nearest float32, is the integer k, for 2^(k-1) <= a < 2^k: that
// is, whether log2(a) lies within half a float32 spacing below k. With d that spacing and
// t = 1 - a / 2^k (exact in double), the test log2(1 - t) > -d/2 reads t < 1 - 2^(-d/2) =
// -expm1(-x), x = d ln(2) / 2 <= 2^-17: three terms of its series leave an error below 2^-60.
// t is a whole number of float spacings below 2^k, and every threshold lies at least a tenth of
// a spacing from a whole number (it is 2^i ln 2 spacings), so the comparison is exact.
inline bool mx_log2f_rounds_up(double a, int k) noexcept {
  if (k == 0) return false;  // float32 is dense near 0: log2 of a < 1 never rounds to 0
  const int mag = k > 0 ? k : -k;
  int j = 0;
  while ((mag >> (j + 1)) != 0) ++j;  // 2^j <= |k| < 2^(j+1)
  // Spacing of float32 on k's side toward -infinity: below k for k > 0 (halved at a power of
  // two), beyond |k| for k < 0.
  const int d_exp = k > 0 && mag == (1 << j) ? j - 24 : j - 23;
  const double x = mx_pow2(d_exp) * 0.6931471805599453 / 2;
  const double threshold = x - x * x / 2 + x * x * x / 6;
  const double t = 1.0 - a * mx_pow2(-k);
  return t < threshold;
}

// The exact value of a finite float as a double, read from its bits: no float arithmetic, so
// a subnormal input means the same with denormals-are-zero set.
LOWBIT_CONSTEXPR_BITCAST double mx_exact_double(float x) noexcept {
  const unpacked u = unpack(x);
  const double m = u.kind == value_kind::finite ? static_cast<double>(u.sig) * mx_pow2(u.exp) : 0.0;
  return u.negative ? -m : m;
}

// v * 2^s as a float, by moving the exponent of the exact value: exact and independent of
// flush-to-zero for every product the quantizer can produce (all lie on float's grid); a
// magnitude of 2^128 or more becomes +-Inf.
LOWBIT_CONSTEXPR_BITCAST float mx_scaled_float(unpacked u, int s) noexcept {
  if (u.kind == value_kind::finite) {
    u.exp += s;
    if (u.exp + bit_width_minus_one(u.sig) > 127) u.kind = value_kind::inf;
  }
  return pack_float(u);
}

template <class T, mx_format Id>
struct mx_minifloat_element {
  using element = T;
  static constexpr mx_format id = Id;
  static constexpr int element_bits = T::format::bits;
  // Exponent of the largest normal: the spec's emax_elem, read from the format's spec.
  static constexpr int emax = T::format::max_exponent;
  static constexpr int mantissa_bits = T::format::mantissa_bits;
  static constexpr unsigned negative_zero_code = T::format::sign_mask;
  // The element's largest finite value (448 for E4M3, 6 for E2M1), read from the format's spec.
  static constexpr float element_max = static_cast<float>(T::from_bits(T::format::max_bits));

  static LOWBIT_CONSTEXPR_BITCAST std::uint8_t encode_element(double scaled, const policy& p) noexcept {
    return static_cast<std::uint8_t>(encode<T>(scaled, p).bits());
  }
  static LOWBIT_CONSTEXPR_BITCAST float decode_element(std::uint8_t code) noexcept {
    return static_cast<float>(T::from_bits(code));
  }
  // The element's exact value (sig * 2^exp), for scaling without float arithmetic.
  static constexpr detail::unpacked unpack_element(std::uint8_t code) noexcept {
    return detail::unpack_bits<typename T::format>(code);
  }
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The formats. Each tag names the element type, its width in bits, emax_elem (the exponent of
// the element's largest normal, which the floor rule subtracts) and the element max.

struct mxfp8_e4m3 : detail::mx_minifloat_element<float8_e4m3fn, mx_format::mxfp8_e4m3> {
  static constexpr const char* name = "mxfp8_e4m3";
};
struct mxfp8_e5m2 : detail::mx_minifloat_element<float8_e5m2, mx_format::mxfp8_e5m2> {
  static constexpr const char* name = "mxfp8_e5m2";
};
struct mxfp6_e2m3 : detail::mx_minifloat_element<float6_e2m3fn, mx_format::mxfp6_e2m3> {
  static constexpr const char* name = "mxfp6_e2m3";
};
struct mxfp6_e3m2 : detail::mx_minifloat_element<float6_e3m2fn, mx_format::mxfp6_e3m2> {
  static constexpr const char* name = "mxfp6_e3m2";
};
struct mxfp4_e2m1 : detail::mx_minifloat_element<float4_e2m1fn, mx_format::mxfp4_e2m1> {
  static constexpr const char* name = "mxfp4_e2m1";
};
using mxfp4 = mxfp4_e2m1;

// MXINT8: each element byte is a two's complement integer q read as q / 64 (the spec's 1.6
// fixed point). emax_elem = 0: the floor rule puts the block max in [1, 2). Quantization
// saturates to +-127 (+-1.984375), as microxcaling does; the code -128 (-2.0) is never written
// but decodes. Zero has one code, so MXINT8 does not keep the sign of zero.
struct mxint8 {
  using element = std::int8_t;
  static constexpr mx_format id = mx_format::mxint8;
  static constexpr int element_bits = 8;
  static constexpr int emax = 0;
  static constexpr int mantissa_bits = 6;
  static constexpr unsigned negative_zero_code = 0x100;  // none: zero has one code
  static constexpr float element_max = 127.0f / 64.0f;
  static constexpr const char* name = "mxint8";

  static LOWBIT_CONSTEXPR_BITCAST std::uint8_t encode_element(double scaled, const policy& p) noexcept {
    const unsigned c = encode<detail::mxint8_magnitude>(scaled, p).bits();
    const unsigned k = c & 0x7Fu;
    return static_cast<std::uint8_t>((c & 0x80u) != 0 ? (256u - k) & 0xFFu : k);
  }
  static constexpr float decode_element(std::uint8_t code) noexcept {
    return static_cast<float>(code < 128 ? static_cast<int>(code) : static_cast<int>(code) - 256) / 64.0f;
  }
  static constexpr detail::unpacked unpack_element(std::uint8_t code) noexcept {
    detail::unpacked u;
    u.negative = code >= 128;
    u.sig = u.negative ? 256u - code : code;
    u.kind = u.sig == 0 ? detail::value_kind::zero : detail::value_kind::finite;
    u.exp = -6;
    return u;
  }
};

static_assert(mxfp8_e4m3::emax == 8 && mxfp8_e5m2::emax == 15 && mxfp6_e2m3::emax == 2 && mxfp6_e3m2::emax == 4 &&
                  mxfp4_e2m1::emax == 2 && mxint8::emax == 0,
              "emax_elem as tabulated in OCP MX v1.0 Table 1");

template <class T>
struct is_mx_format : std::false_type {};
template <>
struct is_mx_format<mxfp8_e4m3> : std::true_type {};
template <>
struct is_mx_format<mxfp8_e5m2> : std::true_type {};
template <>
struct is_mx_format<mxfp6_e2m3> : std::true_type {};
template <>
struct is_mx_format<mxfp6_e3m2> : std::true_type {};
template <>
struct is_mx_format<mxfp4_e2m1> : std::true_type {};
template <>
struct is_mx_format<mxint8> : std::true_type {};

// Whether a block size is usable for Fmt: nonzero, and each block starts on a byte boundary
// (FP4: even; FP6: a multiple of 4).
template <class Fmt>
constexpr bool mx_valid_block_size(std::size_t block_size) noexcept {
  return block_size != 0 && (block_size * static_cast<std::size_t>(Fmt::element_bits)) % 8 == 0;
}

// ---------------------------------------------------------------------------------------------
// The per-block reference.

// The E8M0 code of the shared scale for a block whose largest magnitude is amax (finite, >= 0;
// NaN or Inf give mx_nan_scale). amax = 0 gives 0x00. Every rule goes through the E8M0 codec:
// the quotients below are exact in double or, for the ceil rule, never cross a power of two.
template <class Fmt>
inline std::uint8_t mx_block_scale(float amax, e8m0_rule rule = e8m0_rule::floor) noexcept {
  static_assert(is_mx_format<Fmt>::value, "Fmt must be one of the MX format tags");
  const std::uint32_t mag = detail::bit_cast<std::uint32_t>(amax) & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) return mx_nan_scale;
  const double a = detail::mx_exact_double(detail::bit_cast<float>(mag));
  policy down;
  down.rm = rounding::toward_zero;  // floor(log2), saturating to 0xFE; below 2^-127 gives 0x00
  switch (rule) {
    case e8m0_rule::floor: break;
    case e8m0_rule::ceil: {
      policy up;
      up.rm = rounding::toward_pos_inf;
      return encode<float8_e8m0fnu>(a / static_cast<double>(Fmt::element_max), up).bits();
    }
    case e8m0_rule::even: {
      // Rounding the mantissa commutes with the exact scaling by 2^-emax below.
      using wide = minifloat<detail::mx_amax_rounding_spec<Fmt::mantissa_bits>>;
      const wide r = encode<wide>(a * detail::mx_pow2(-Fmt::emax), overflow::saturate, rounding::nearest_away);
      return encode<float8_e8m0fnu>(r, down).bits();
    }
    case e8m0_rule::floor_log2f: {
      if (a == 0.0) break;  // amax = 0 gives 0x00, as every rule
      const detail::unpacked u = detail::unpack(detail::bit_cast<float>(mag));
      const int k = u.exp + detail::bit_width_minus_one(u.sig) + 1;  // 2^(k-1) <= a < 2^k
      if (detail::mx_log2f_rounds_up(a, k)) return encode<float8_e8m0fnu>(detail::mx_pow2(k - Fmt::emax), down).bits();
      break;
    }
  }
  return encode<float8_e8m0fnu>(a * detail::mx_pow2(-Fmt::emax), down).bits();
}

namespace detail {

inline float mx_to_float(float x) noexcept { return x; }
inline float mx_to_float(bfloat16 x) noexcept { return static_cast<float>(x); }

inline void mx_store(float& dst, float x) noexcept { dst = x; }
// Nearest-even; the float is exact, so this is the only rounding.
inline void mx_store(bfloat16& dst, float x) noexcept { dst = encode<bfloat16>(x); }

struct mx_amax_result {
  float amax = 0.0f;
  bool finite = true;
};

// Largest magnitude of n values, and whether all of them are finite. Magnitudes are compared
// as bit patterns (their order is the order of the values), so subnormals count with DAZ set.
template <class Src>
inline mx_amax_result mx_block_amax(const Src* x, std::size_t n) noexcept {
  mx_amax_result r;
  std::uint32_t best = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t m = bit_cast<std::uint32_t>(mx_to_float(x[i])) & 0x7FFFFFFFu;
    if (m >= 0x7F800000u) {
      r.finite = false;
    } else if (m > best) {
      best = m;
    }
  }
  r.amax = bit_cast<float>(best);
  return r;
}

// Packs m codes of `bits` bits (m a multiple of 8 / gcd(8, bits)).
inline void mx_pack(int bits, const std::uint8_t* codes, std::uint8_t* out, std::size_t m) noexcept {
  if (bits == 4) {
    pack_nibbles(codes, out, m);
  } else if (bits == 6) {
    pack_sextets(codes, out, m);
  } else {
    for (std::size_t j = 0; j < m; ++j) out[j] = codes[j];
  }
}
inline void mx_unpack(int bits, const std::uint8_t* in, std::uint8_t* codes, std::size_t m) noexcept {
  if (bits == 4) {
    unpack_nibbles(in, codes, m);
  } else if (bits == 6) {
    unpack_sextets(in, codes, m);
  } else {
    for (std::size_t j = 0; j < m; ++j) codes[j] = in[j];
  }
}

// Codes are produced and consumed this many at a time: a multiple of every packing group.
inline constexpr std::size_t mx_chunk = 8;

}  // namespace detail

// Quantizes one block of o.block_size values (float or bfloat16), writing
// packed_bytes(o.block_size, Fmt::element_bits) element bytes to `elements`; returns the E8M0 scale
// code. o.block_size must satisfy mx_valid_block_size<Fmt> and o.element_rounding must not be
// stochastic (the bulk functions check both). Element i is Fmt's encoding of v_i * 2^-s under
// o.element_rounding with overflow::saturate; the product is formed exactly (in double), so
// there is one rounding. (With a nearest mode the float product gives the same codes: it is
// exact unless it falls below 2^-126, where every element format rounds to zero anyway.)
// Nothing here is float arithmetic, so FTZ/DAZ change no result.
template <class Fmt, class Src>
inline std::uint8_t mx_quantize_block(const Src* x, const mx_options& o, std::uint8_t* elements) noexcept {
  static_assert(is_mx_format<Fmt>::value, "Fmt must be one of the MX format tags");
  const std::size_t block_size = o.block_size;
  const std::size_t bytes = packed_bytes(block_size, Fmt::element_bits);
  const detail::mx_amax_result a = detail::mx_block_amax(x, block_size);
  if (!a.finite) {
    for (std::size_t j = 0; j < bytes; ++j) elements[j] = 0;
    return mx_nan_scale;
  }
  const std::uint8_t scale = mx_block_scale<Fmt>(a.amax, o.scale_rule);
  // 1 / X = 2^(127 - code), exact in double for every code 0x00..0xFE.
  const double inv_scale = detail::mx_pow2(127 - static_cast<int>(scale));
  policy p;
  p.rm = o.element_rounding;
  p.ov = overflow::saturate;
  std::uint8_t codes[detail::mx_chunk];
  for (std::size_t i = 0; i < block_size; i += detail::mx_chunk) {
    const std::size_t m = block_size - i < detail::mx_chunk ? block_size - i : detail::mx_chunk;
    for (std::size_t j = 0; j < m; ++j) {
      const std::uint8_t c = Fmt::encode_element(detail::mx_exact_double(detail::mx_to_float(x[i + j])) * inv_scale, p);
      codes[j] = !o.signed_zero && c == Fmt::negative_zero_code ? std::uint8_t{0} : c;
    }
    detail::mx_pack(Fmt::element_bits, codes, elements + i * static_cast<std::size_t>(Fmt::element_bits) / 8, m);
  }
  return scale;
}

// Decodes one block of o.block_size values (only the block size is read): out[i] =
// element_i * 2^(scale - 127), exactly (the product always lies on
// float's grid, subnormals included; it is formed by exponent arithmetic, so FTZ/DAZ do not
// matter; a plain float multiply gives the same bits in the default FP environment). A value of
// 2^128 or more, which only hand-made input can hold (E5M2 elements with a scale near 2^127),
// becomes +-Inf. Scale 0xFF gives NaN everywhere. Dst is float or bfloat16 (rounded once, to
// nearest even).
template <class Fmt, class Dst>
inline void mx_dequantize_block(const std::uint8_t* elements, std::uint8_t scale, const mx_options& o,
                                Dst* out) noexcept {
  static_assert(is_mx_format<Fmt>::value, "Fmt must be one of the MX format tags");
  const std::size_t block_size = o.block_size;
  if (scale == mx_nan_scale) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i = 0; i < block_size; ++i) detail::mx_store(out[i], nan);
    return;
  }
  const int s = static_cast<int>(scale) - 127;
  std::uint8_t codes[detail::mx_chunk];
  for (std::size_t i = 0; i < block_size; i += detail::mx_chunk) {
    const std::size_t m = block_size - i < detail::mx_chunk ? block_size - i : detail::mx_chunk;
    detail::mx_unpack(Fmt::element_bits, elements + i * static_cast<std::size_t>(Fmt::element_bits) / 8, codes, m);
    for (std::size_t j = 0; j < m; ++j)
      detail::mx_store(out[i + j], detail::mx_scaled_float(Fmt::unpack_element(codes[j]), s));
  }
}

namespace kernels {
namespace block {

// f(std::integral_constant<rounding, RM>{}) for the element rounding of a block kernel: the
// SIMD quantizers are compiled per mode. Stochastic rounding never reaches them (the bulk calls
// keep it on the scalar loop), so it shares nearest-even's instance.
template <class F>
inline auto with_element_rounding(rounding rm, F&& f) {
  switch (rm) {
    case rounding::toward_zero: return f(std::integral_constant<rounding, rounding::toward_zero>{});
    case rounding::toward_pos_inf: return f(std::integral_constant<rounding, rounding::toward_pos_inf>{});
    case rounding::nearest_away: return f(std::integral_constant<rounding, rounding::nearest_away>{});
    case rounding::nearest_toward_zero: return f(std::integral_constant<rounding, rounding::nearest_toward_zero>{});
    case rounding::nearest_even:
    case rounding::stochastic:
    default: return f(std::integral_constant<rounding, rounding::nearest_even>{});
  }
}

// ---------------------------------------------------------------------------------------------
// Where a bulk kernel puts (quantize) or finds (dequantize) block b: its element bytes and its
// scale byte. Every kernel takes one of these, so one kernel serves each storage layout.
//   planar_layout    lowbit's storage: two arrays, block_bytes element bytes per block and one
//                    scale byte per block (docs/block-formats.md 2.4 and 3.4).
//   ggml_fp4_layout  ggml's interleaved FP4 blocks of BlockBytes bytes: Sub scale bytes, then Sub
//                    runs of SubElements / 2 bytes, one per sub-block of SubElements elements, in
//                    which byte j holds element j in its low nibble and element j + SubElements / 2
//                    in its high nibble ("split halves"). A kernel's block b is sub-block b % Sub
//                    of ggml block b / Sub. block_mxfp4: <17, 1, 32>; block_nvfp4: <36, 4, 16>.
// Byte is std::uint8_t (writing) or const std::uint8_t (reading).
template <class Byte>
struct planar_layout {
  static constexpr bool split = false;
  Byte* elements;
  Byte* scales;
  std::size_t block_bytes;
  Byte* element_ptr(std::size_t b) const noexcept { return elements + b * block_bytes; }
  Byte* scale_ptr(std::size_t b) const noexcept { return scales + b; }
};

template <class Byte, std::size_t BlockBytes, std::size_t Sub, std::size_t SubElements>
struct ggml_fp4_layout {
  static constexpr bool split = true;
  static constexpr std::size_t sub_blocks = Sub;
  static constexpr std::size_t sub_elements = SubElements;
  Byte* base;
  Byte* element_ptr(std::size_t b) const noexcept {
    return base + b / Sub * BlockBytes + Sub + b % Sub * (SubElements / 2);
  }
  Byte* scale_ptr(std::size_t b) const noexcept { return base + b / Sub * BlockBytes + b % Sub; }
};

// ggml's block_mxfp4 (the scale e, then qs[16]) seen as MXFP4 blocks of 32.
template <class Byte>
using mxfp4_ggml_layout = ggml_fp4_layout<Byte, 17, 1, 32>;

// m packed FP4 codes (m even, at most 64) from lowbit's order (codes 2i, 2i+1 in byte i, first in the low
// nibble) to split halves (byte j: code j low, code j + m/2 high), and back.
inline void fp4_planar_to_split(const std::uint8_t* planar, std::uint8_t* split, std::size_t m) noexcept {
  std::uint8_t codes[64];
  unpack_nibbles(planar, codes, m);
  for (std::size_t j = 0; j < m / 2; ++j) split[j] = static_cast<std::uint8_t>(codes[j] | codes[j + m / 2] << 4);
}
inline void fp4_split_to_planar(const std::uint8_t* split, std::uint8_t* planar, std::size_t m) noexcept {
  std::uint8_t codes[64];
  for (std::size_t j = 0; j < m / 2; ++j) {
    codes[j] = static_cast<std::uint8_t>(split[j] & 0x0Fu);
    codes[j + m / 2] = static_cast<std::uint8_t>(split[j] >> 4);
  }
  pack_nibbles(codes, planar, m);
}

// mx_quantize_block into block b of `out`; returns the scale code it stored.
template <class Fmt, class Src, class Out>
inline std::uint8_t mx_quantize_block_to(const Src* x, const mx_options& o, const Out out, std::size_t b) noexcept {
  std::uint8_t* e = out.element_ptr(b);
  std::uint8_t scale = 0;
  if constexpr (Out::split) {
    static_assert(Fmt::element_bits == 4, "split halves hold FP4 codes");
    std::uint8_t planar[Out::sub_elements / 2];
    scale = mx_quantize_block<Fmt>(x, o, planar);
    fp4_planar_to_split(planar, e, Out::sub_elements);
  } else {
    scale = mx_quantize_block<Fmt>(x, o, e);
  }
  *out.scale_ptr(b) = scale;
  return scale;
}

// mx_dequantize_block of block b of `in`.
template <class Fmt, class In, class Dst>
inline void mx_dequantize_block_from(const In in, std::size_t b, const mx_options& o, Dst* out) noexcept {
  if constexpr (In::split) {
    static_assert(Fmt::element_bits == 4, "split halves hold FP4 codes");
    std::uint8_t planar[In::sub_elements / 2];
    fp4_split_to_planar(in.element_ptr(b), planar, In::sub_elements);
    mx_dequantize_block<Fmt>(planar, *in.scale_ptr(b), o, out);
  } else {
    mx_dequantize_block<Fmt>(in.element_ptr(b), *in.scale_ptr(b), o, out);
  }
}

// The scalar bulk loops over `blocks` whole blocks of o.block_size values (a split layout: blocks of
// its sub_elements). Quantize returns whether a block held NaN or Inf.
template <class Fmt, class Src, class Out>
inline bool mx_quantize_scalar(const Src* src, std::size_t blocks, const mx_options& o, const Out out) noexcept {
  bool non_finite = false;
  for (std::size_t b = 0; b < blocks; ++b)
    non_finite = mx_quantize_block_to<Fmt>(src + b * o.block_size, o, out, b) == mx_nan_scale || non_finite;
  return non_finite;
}
template <class Fmt, class Src>
inline bool mx_quantize_scalar(const Src* src, std::size_t blocks, const mx_options& o, std::uint8_t* elements,
                               std::uint8_t* scales) noexcept {
  const planar_layout<std::uint8_t> out{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  return mx_quantize_scalar<Fmt>(src, blocks, o, out);
}

template <class Fmt, class In, class Dst>
inline void mx_dequantize_scalar(const In in, std::size_t blocks, const mx_options& o, Dst* dst) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) mx_dequantize_block_from<Fmt>(in, b, o, dst + b * o.block_size);
}
template <class Fmt, class Dst>
inline void mx_dequantize_scalar(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t blocks,
                                 const mx_options& o, Dst* dst) noexcept {
  const planar_layout<const std::uint8_t> in{elements, scales, packed_bytes(o.block_size, Fmt::element_bits)};
  mx_dequantize_scalar<Fmt>(in, blocks, o, dst);
}

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_MX_SCALAR_HPP
