// lowbit: the one generic codec. Every format conversion in lowbit goes through these
// functions, driven by a format_spec; there is no per-format conversion routine.
//
// Integer arithmetic only: the result never depends on the FPU rounding mode or on
// flush-to-zero / denormals-are-zero, and everything is constexpr.
#ifndef LOWBIT_FORMATS_CODEC_HPP
#define LOWBIT_FORMATS_CODEC_HPP

#include <cstdint>
#include <type_traits>

#include "../core/bits.hpp"
#include "../core/rounding.hpp"
#include "spec.hpp"

namespace lowbit {
namespace detail {

enum class value_kind : std::uint8_t { zero, finite, inf, nan };

// An exactly decoded value: (-1)^negative * sig * 2^exp for finite values (sig != 0).
struct unpacked {
  bool negative = false;
  value_kind kind = value_kind::zero;
  std::uint64_t sig = 0;
  int exp = 0;
};

// Decodes the bit pattern of any format_spec, exactly.
template <class F>
LOWBIT_HD constexpr unpacked unpack_bits(std::uint32_t code) noexcept {
  unpacked u;
  code &= F::code_mask;
  u.negative = (code & F::sign_mask) != 0;
  const std::uint32_t mag = code & F::magnitude_mask;
  if (F::has_nan && code == (F::specials == special_values::fnuz ? F::nan_bits : (code & F::sign_mask) | F::nan_bits)) {
    u.kind = value_kind::nan;
    u.negative = u.negative && F::specials != special_values::fnuz;  // FNUZ's NaN 0x80 has no sign
    return u;
  }
  if (F::specials == special_values::ieee && mag > F::max_bits) {
    u.kind = mag == F::inf_bits ? value_kind::inf : value_kind::nan;
    return u;
  }
  const std::uint32_t field = mag >> F::mantissa_bits;
  const std::uint32_t mantissa = mag & F::mantissa_mask;
  if (field == 0 && F::has_subnormals) {
    if (mantissa == 0) return u;  // +-0
    u.kind = value_kind::finite;
    u.sig = mantissa;
    u.exp = F::min_exponent - F::mantissa_bits;
    return u;
  }
  u.kind = value_kind::finite;
  u.sig = mantissa | (std::uint64_t{1} << F::mantissa_bits);
  u.exp = static_cast<int>(field) - F::bias - F::mantissa_bits;
  return u;
}

LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST unpacked unpack(float x) noexcept {
  const std::uint32_t b = bit_cast<std::uint32_t>(x);
  unpacked u;
  u.negative = (b >> 31) != 0;
  const std::uint32_t field = (b >> 23) & 0xFFu;
  const std::uint32_t mantissa = b & 0x7FFFFFu;
  if (field == 0xFFu) {
    u.kind = mantissa == 0 ? value_kind::inf : value_kind::nan;
  } else if (field == 0) {
    if (mantissa != 0) {
      u.kind = value_kind::finite;
      u.sig = mantissa;
      u.exp = -149;
    }
  } else {
    u.kind = value_kind::finite;
    u.sig = mantissa | 0x800000u;
    u.exp = static_cast<int>(field) - 150;
  }
  return u;
}

LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST unpacked unpack(double x) noexcept {
  const std::uint64_t b = bit_cast<std::uint64_t>(x);
  unpacked u;
  u.negative = (b >> 63) != 0;
  const std::uint32_t field = static_cast<std::uint32_t>(b >> 52) & 0x7FFu;
  const std::uint64_t mantissa = b & 0xFFFFFFFFFFFFFull;
  if (field == 0x7FFu) {
    u.kind = mantissa == 0 ? value_kind::inf : value_kind::nan;
  } else if (field == 0) {
    if (mantissa != 0) {
      u.kind = value_kind::finite;
      u.sig = mantissa;
      u.exp = -1074;
    }
  } else {
    u.kind = value_kind::finite;
    u.sig = mantissa | (std::uint64_t{1} << 52);
    u.exp = static_cast<int>(field) - 1075;
  }
  return u;
}

// Integers are exact: |x| < 2^64 is a 64-bit significand.
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
LOWBIT_HD constexpr unpacked unpack(I x) noexcept {
  unpacked u;
  if (x == 0) return u;
  u.negative = x < 0;
  const auto ux = static_cast<std::uint64_t>(x);  // two's complement: negate as unsigned, no overflow
  u.kind = value_kind::finite;
  u.sig = u.negative ? (~ux + 1u) : ux;
  return u;
}

// long double (x87 80-bit, binary128, or plain double) goes through double with round-to-odd:
// truncate, then set the last bit if anything was lost. Double keeps at least two more bits than
// any lowbit format, so the final rounding is the one a direct conversion would make
// (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", IEEE TC 2008). Out-of-range values become +-DBL_MAX or +-2^-1074, still odd.
// Host only: device code has no long double.
inline unpacked unpack(long double x) noexcept {
  const double t = static_cast<double>(x);
  const long double back = t;
  if (t != t || back == x) return unpack(t);  // NaN or exact
  std::uint64_t b = bit_cast<std::uint64_t>(t);
  if (t == 0) b = x < 0 ? 0x8000000000000000ull : 0u;  // underflow: +-0, made odd below
  const bool rounded_away = x < 0 ? back < x : back > x;
  if (rounded_away) --b;  // one step toward zero; Inf becomes DBL_MAX
  return unpack(bit_cast<double>(b | 1u));
}

// Builds the float holding an unpacked value. Exact for every lowbit format (all of them fit in
// binary32); a NaN becomes the quiet NaN 0x7FC00000 with the input's sign.
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST float pack_float(const unpacked& u) noexcept {
  std::uint32_t b = u.negative ? 0x80000000u : 0u;
  if (u.kind == value_kind::nan) {
    b |= 0x7FC00000u;
  } else if (u.kind == value_kind::inf) {
    b |= 0x7F800000u;
  } else if (u.kind == value_kind::finite) {
    const int top = bit_width_minus_one(u.sig);
    const int e = u.exp + top;  // value in [2^e, 2^(e+1))
    if (e >= -126) {
      const std::uint64_t m = top <= 23 ? u.sig << (23 - top) : u.sig >> (top - 23);
      b |= static_cast<std::uint32_t>(e + 127) << 23 | (static_cast<std::uint32_t>(m) & 0x7FFFFFu);
    } else {
      b |= static_cast<std::uint32_t>(u.sig << (u.exp + 149));
    }
  }
  return bit_cast<float>(b);
}

// The NaN code that a NaN input becomes.
template <class F>
LOWBIT_HD constexpr std::uint32_t nan_code(bool negative, const policy& p) noexcept {
  if (!F::has_nan) {
    switch (p.nan_to_finite) {
      case nan_to_finite::positive_max: return F::max_bits;
      case nan_to_finite::signed_max: return (negative ? F::sign_mask : 0u) | F::max_bits;
      case nan_to_finite::flipped_zero: return negative ? 0u : F::sign_mask;
    }
  }
  if (F::specials == special_values::fnuz) return F::nan_bits;
  const std::uint32_t code = p.nan_pattern == nan_pattern::quiet ? F::quiet_nan_bits : F::nan_bits;
  return (negative && p.nan_sign == nan_sign::preserve ? F::sign_mask : 0u) | code;
}

// The code of +-Inf, or of what stands in for it: NaN (fn, fnuz), max (finite formats).
template <class F>
LOWBIT_HD constexpr std::uint32_t inf_code(bool negative) noexcept {
  const std::uint32_t sign = negative ? F::sign_mask : 0u;
  switch (F::specials) {
    case special_values::ieee: return sign | F::inf_bits;
    case special_values::fn: return sign | F::nan_bits;
    case special_values::fnuz: return F::nan_bits;
    case special_values::finite: break;
  }
  return sign | F::max_bits;
}

// Whether to add one unit in the last place to the truncated significand. `shift` > 0 bits of
// `sig` are discarded; `negative` only matters for toward_pos_inf.
LOWBIT_HD constexpr bool round_up(std::uint64_t sig, int shift, std::uint64_t truncated, bool negative,
                                  rounding rm, std::uint32_t random_bits) noexcept {
  // rem: the discarded bits; with shift >= 64 every bit of sig is discarded.
  const std::uint64_t rem = shift >= 64 ? sig : sig & ((std::uint64_t{1} << shift) - 1u);
  switch (rm) {
    case rounding::nearest_even:
    case rounding::nearest_away:
    case rounding::nearest_toward_zero: {
      if (shift > 64) return false;  // rem < 2^64 <= half
      const std::uint64_t half = std::uint64_t{1} << (shift - 1);
      if (rem != half) return rem > half;
      return rm == rounding::nearest_away || (rm == rounding::nearest_even && (truncated & 1u) != 0);
    }
    case rounding::toward_zero: return false;
    case rounding::toward_pos_inf: return !negative && rem != 0;
    case rounding::stochastic: {
      // floor(fraction * 2^32), fraction = rem / 2^shift.
      std::uint64_t frac32 = 0;
      if (shift <= 32)
        frac32 = rem << (32 - shift);
      else if (shift - 32 < 64)
        frac32 = rem >> (shift - 32);
      return frac32 + random_bits >= (std::uint64_t{1} << 32);
    }
  }
  return false;
}

// Whether a finite or zero value lies outside the range of unsigned format F: below its smallest
// value (zero included; F has no zero) or above max. Exact: no rounding happens here.
template <class F>
LOWBIT_HD constexpr bool outside_unsigned_range(const unpacked& u) noexcept {
  if (u.kind == value_kind::zero) return true;
  const int top = bit_width_minus_one(u.sig);
  const int e = u.exp + top;  // value in [2^e, 2^(e+1))
  if (e < F::min_exponent) return true;
  const unpacked m = unpack_bits<F>(F::max_bits);
  const int m_top = bit_width_minus_one(m.sig);
  const int m_e = m.exp + m_top;
  if (e != m_e) return e > m_e;
  // Same binade: compare the significands with their leading bits aligned at bit 63.
  return (u.sig << (63 - top)) > (m.sig << (63 - m_top));
}

// Rounds an exactly known value into format F under policy p. This is the reference every other
// path (bulk loops, SIMD kernels, block quantizers) must match bit for bit.
template <class F>
LOWBIT_HD constexpr std::uint32_t encode_bits(const unpacked& u, const policy& p,
                                              std::uint32_t random_bits = 0) noexcept {
  const bool negative = u.negative && F::is_signed;  // unsigned formats convert |x|
  const std::uint32_t sign = negative ? F::sign_mask : 0u;
  if (u.kind == value_kind::nan) return nan_code<F>(u.negative, p);
  if (u.kind == value_kind::inf) {
    if (p.ov == overflow::saturate && p.inf == inf_policy::saturate) return sign | F::max_bits;
    return inf_code<F>(negative);
  }
  if (!F::is_signed && p.unsigned_input == unsigned_input::invalid && (u.negative || u.kind == value_kind::zero))
    return p.ov == overflow::saturate ? 0u : F::nan_bits;
  // ONNX's E8M0 rule: out of range is NaN before any rounding (saturate clamps below, as usual).
  if (!F::is_signed && p.unsigned_range == unsigned_range::before_rounding && p.ov == overflow::non_saturate &&
      outside_unsigned_range<F>(u))
    return F::nan_bits;
  if (u.kind == value_kind::zero) return F::has_negative_zero ? sign : 0u;

  constexpr int M = F::mantissa_bits;
  const int e = u.exp + bit_width_minus_one(u.sig);  // value in [2^e, 2^(e+1))
  if (!F::has_subnormals && e < F::min_exponent) return sign;  // no zero: the smallest value

  std::uint32_t code = 0;
  bool overflowed = e > F::max_exponent + 1;  // beyond the next binade: no rounding can save it
  if (!overflowed) {
    const int q = (e > F::min_exponent ? e : F::min_exponent) - M;  // exponent of one ulp
    const int shift = q - u.exp;
    std::uint64_t n = 0;  // the value in ulps, at most 2^(M+1)
    if (shift <= 0) {
      n = u.sig << -shift;
    } else {
      n = shift >= 64 ? 0 : u.sig >> shift;
      if (round_up(u.sig, shift, n, negative, p.rm, random_bits)) ++n;
    }
    // Codes are contiguous: the significand's carry moves into the exponent field by itself.
    const std::uint64_t c = (static_cast<std::uint64_t>(q - (F::min_exponent - M)) << M) + n -
                            (F::has_subnormals ? 0u : (std::uint64_t{1} << M));
    overflowed = c > F::max_bits;
    code = static_cast<std::uint32_t>(c);
  }
  if (overflowed) {
    const bool toward_max = p.rm == rounding::toward_zero || (p.rm == rounding::toward_pos_inf && negative);
    if (p.ov == overflow::saturate || toward_max) return sign | F::max_bits;
    return inf_code<F>(negative);
  }
  if (code == 0 && !F::has_negative_zero) return 0u;  // FNUZ: underflow gives +0 (0x80 is NaN)
  return sign | code;
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_FORMATS_CODEC_HPP
