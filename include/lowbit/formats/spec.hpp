// lowbit: a floating-point format as data. Every codec in lowbit is driven by one of these.
#ifndef LOWBIT_FORMATS_SPEC_HPP
#define LOWBIT_FORMATS_SPEC_HPP

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"

namespace lowbit {

// Which encodings are special.
enum class special_values {
  ieee,   // top exponent reserved: mantissa 0 is +-Inf, anything else NaN (E5M2, float16, bfloat16)
  fn,     // no Inf; only the all-ones magnitude is NaN (E4M3FN S.1111.111, E8M0 0xFF)
  fnuz,   // no Inf, no -0; the -0 pattern 0x80 is the only NaN (E4M3FNUZ, E5M2FNUZ)
  finite  // every pattern is a number (FP6 E2M3/E3M2, FP4 E2M1: OCP MX v1.0)
};

// Compile-time description of a binary floating-point format:
// value = (-1)^s * 2^(E - Bias) * 1.M for E > 0, and 2^(1 - Bias) * 0.M for E = 0 when the format
// has subnormals. A format without subnormals (E8M0) reads E = 0 as the normal 2^-Bias and has no zero.
template <int ExponentBits, int MantissaBits, int Bias, special_values Specials, bool Signed = true,
          bool Subnormals = true>
struct format_spec {
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = MantissaBits;
  static constexpr int bias = Bias;
  static constexpr special_values specials = Specials;
  static constexpr bool is_signed = Signed;
  static constexpr bool has_subnormals = Subnormals;
  static constexpr int bits = ExponentBits + MantissaBits + (Signed ? 1 : 0);

  using storage = std::conditional_t<(bits <= 8), std::uint8_t, std::uint16_t>;

  static constexpr std::uint32_t mantissa_mask = (1u << MantissaBits) - 1u;
  static constexpr std::uint32_t magnitude_mask = (1u << (ExponentBits + MantissaBits)) - 1u;
  static constexpr std::uint32_t sign_mask = Signed ? (1u << (ExponentBits + MantissaBits)) : 0u;
  static constexpr std::uint32_t code_mask = magnitude_mask | sign_mask;

  static constexpr bool has_inf = Specials == special_values::ieee;
  static constexpr bool has_nan = Specials != special_values::finite;
  static constexpr bool has_zero = Subnormals;
  static constexpr bool has_negative_zero = Signed && Subnormals && Specials != special_values::fnuz;

  // Magnitude codes of the special values (sign bit clear); 0 where the format has none.
  static constexpr std::uint32_t inf_bits = has_inf ? (((1u << ExponentBits) - 1u) << MantissaBits) : 0u;
  static constexpr std::uint32_t nan_bits = Specials == special_values::ieee ? (inf_bits | mantissa_mask)
                                            : Specials == special_values::fn ? magnitude_mask
                                            : Specials == special_values::fnuz ? sign_mask
                                                                               : 0u;
  // IEEE formats: the NaN with only the quiet (top mantissa) bit set, 0x7E for E5M2.
  static constexpr std::uint32_t quiet_nan_bits =
      Specials == special_values::ieee ? (inf_bits | (1u << (MantissaBits > 0 ? MantissaBits - 1 : 0))) : nan_bits;
  static constexpr std::uint32_t max_bits = Specials == special_values::ieee ? inf_bits - 1u
                                            : Specials == special_values::fn ? magnitude_mask - 1u
                                                                             : magnitude_mask;

  // Binade exponents: the smallest normal is 2^min_exponent, the largest finite lies in
  // [2^max_exponent, 2^(max_exponent+1)).
  static constexpr int min_exponent = Subnormals ? 1 - Bias : -Bias;
  static constexpr int max_exponent = static_cast<int>(max_bits >> MantissaBits) - Bias;

  static_assert(ExponentBits >= 1 && MantissaBits >= 0 && bits <= 16, "lowbit formats are at most 16 bits");
  static_assert(Specials != special_values::fnuz || Signed, "fnuz keeps its NaN in the sign bit");
  static_assert(Specials != special_values::ieee || MantissaBits >= 1, "IEEE NaN needs a mantissa bit");
};

// The formats lowbit ships. Names follow ml_dtypes / PyTorch; citations are the defining spec.
namespace formats {
// OCP 8-bit Floating Point Specification (OFP8) 1.0, section 5.1.
struct e4m3fn : format_spec<4, 3, 7, special_values::fn> {
  static constexpr const char* name = "float8_e4m3fn";
};
struct e5m2 : format_spec<5, 2, 15, special_values::ieee> {
  static constexpr const char* name = "float8_e5m2";
};
// GraphCore/AMD variants (bias one larger, NaN at 0x80, no -0, no Inf).
struct e4m3fnuz : format_spec<4, 3, 8, special_values::fnuz> {
  static constexpr const char* name = "float8_e4m3fnuz";
};
struct e5m2fnuz : format_spec<5, 2, 16, special_values::fnuz> {
  static constexpr const char* name = "float8_e5m2fnuz";
};
// OCP Microscaling Formats (MX) v1.0, section 5.3: element and scale formats.
struct e2m3fn : format_spec<2, 3, 1, special_values::finite> {
  static constexpr const char* name = "float6_e2m3fn";
};
struct e3m2fn : format_spec<3, 2, 3, special_values::finite> {
  static constexpr const char* name = "float6_e3m2fn";
};
struct e2m1fn : format_spec<2, 1, 1, special_values::finite> {
  static constexpr const char* name = "float4_e2m1fn";
};
struct e8m0fnu : format_spec<8, 0, 127, special_values::fn, false, false> {
  static constexpr const char* name = "float8_e8m0fnu";
};
// IEEE 754 binary16 and Google's bfloat16 (the top half of binary32).
struct binary16 : format_spec<5, 10, 15, special_values::ieee> {
  static constexpr const char* name = "float16";
};
struct bfloat16 : format_spec<8, 7, 127, special_values::ieee> {
  static constexpr const char* name = "bfloat16";
};
}  // namespace formats

}  // namespace lowbit

#endif  // LOWBIT_FORMATS_SPEC_HPP
