// lowbit: the value type shared by every floating-point format, and encode/decode.
#ifndef LOWBIT_FORMATS_MINIFLOAT_HPP
#define LOWBIT_FORMATS_MINIFLOAT_HPP

#include <cstdint>
#include <type_traits>

#include "codec.hpp"

namespace lowbit {

// One value of format F, stored in the low F::bits bits of a byte (two bytes for the 16-bit
// formats). Construction from a number rounds to nearest-even and saturates (lowbit's default);
// use encode() for any other policy.
template <class F>
class minifloat {
 public:
  using format = F;
  using storage_type = typename F::storage;

  constexpr minifloat() noexcept = default;

  // Bits above F::bits are ignored, so every storage value names a valid code.
  LOWBIT_HD static constexpr minifloat from_bits(storage_type bits) noexcept {
    minifloat v;
    v.bits_ = static_cast<storage_type>(bits & F::code_mask);
    return v;
  }
  LOWBIT_HD constexpr storage_type bits() const noexcept { return bits_; }

  // From any arithmetic type, exactly rounded (integers and long double included).
  template <class T, std::enable_if_t<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value, int> = 0>
  LOWBIT_HD explicit LOWBIT_CONSTEXPR_BITCAST minifloat(T x) noexcept
      : bits_(static_cast<storage_type>(detail::encode_bits<F>(detail::unpack(x), policy{}))) {}

  LOWBIT_HD explicit LOWBIT_CONSTEXPR_BITCAST operator float() const noexcept {
    return detail::pack_float(detail::unpack_bits<F>(bits_));
  }
  LOWBIT_HD explicit LOWBIT_CONSTEXPR_BITCAST operator double() const noexcept {
    return static_cast<double>(static_cast<float>(*this));
  }

  LOWBIT_HD constexpr bool is_nan() const noexcept {
    return detail::unpack_bits<F>(bits_).kind == detail::value_kind::nan;
  }
  LOWBIT_HD constexpr bool is_inf() const noexcept {
    return detail::unpack_bits<F>(bits_).kind == detail::value_kind::inf;
  }
  LOWBIT_HD constexpr bool is_zero() const noexcept {
    return detail::unpack_bits<F>(bits_).kind == detail::value_kind::zero;
  }
  LOWBIT_HD constexpr bool signbit() const noexcept { return (bits_ & F::sign_mask) != 0; }

  // Negation flips the sign bit; for FNUZ zero stays +0 (no -0) and NaN stays NaN.
  LOWBIT_HD constexpr minifloat operator-() const noexcept {
    if (!F::is_signed || is_nan() || (is_zero() && !F::has_negative_zero)) return *this;
    return from_bits(static_cast<storage_type>(bits_ ^ F::sign_mask));
  }

  // Numeric comparisons: NaN is unordered, +0 == -0. Done on the codes (magnitude codes are
  // monotonic in value), so the result does not depend on denormals-are-zero.
  friend LOWBIT_HD constexpr bool operator==(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order_key() == b.order_key();
  }
  friend LOWBIT_HD constexpr bool operator!=(minifloat a, minifloat b) noexcept { return !(a == b); }
  friend LOWBIT_HD constexpr bool operator<(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order_key() < b.order_key();
  }
  friend LOWBIT_HD constexpr bool operator>(minifloat a, minifloat b) noexcept { return b < a; }
  friend LOWBIT_HD constexpr bool operator<=(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order_key() <= b.order_key();
  }
  friend LOWBIT_HD constexpr bool operator>=(minifloat a, minifloat b) noexcept { return b <= a; }

 private:
  // Signed magnitude as an integer: same order as the values, both zeros map to 0.
  LOWBIT_HD constexpr std::int32_t order_key() const noexcept {
    const auto mag = static_cast<std::int32_t>(bits_ & F::magnitude_mask);
    return signbit() ? -mag : mag;
  }

  storage_type bits_ = 0;
};

template <class T>
struct is_minifloat : std::false_type {};
template <class F>
struct is_minifloat<minifloat<F>> : std::true_type {};

namespace detail {
template <class F>
LOWBIT_HD constexpr unpacked unpack(minifloat<F> v) noexcept {
  return unpack_bits<F>(v.bits());
}

template <class From>
struct is_encode_source
    : std::integral_constant<bool, (std::is_arithmetic<From>::value && !std::is_same<From, bool>::value) ||
                                       is_minifloat<From>::value> {};
}  // namespace detail

// Rounds x into T under policy p. From is float, double, long double, an integer, or another lowbit
// type (float16, bfloat16, ...): the input is decoded exactly, so there is no double rounding.
// random_bits is used only by rounding::stochastic.
template <class T, class From, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST T encode(From x, const policy& p, std::uint32_t random_bits = 0) noexcept {
  using F = typename T::format;
  return T::from_bits(static_cast<typename F::storage>(detail::encode_bits<F>(detail::unpack(x), p, random_bits)));
}

template <class T, class From, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST T encode(From x, overflow ov = overflow::saturate,
                                            rounding rm = rounding::nearest_even,
                                            std::uint32_t random_bits = 0) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  return encode<T>(x, p, random_bits);
}

// The exact value of v as a float (every lowbit format fits in binary32). NaN decodes to a quiet
// NaN with v's sign bit.
template <class F>
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST float decode(minifloat<F> v) noexcept {
  return static_cast<float>(v);
}

}  // namespace lowbit

#endif  // LOWBIT_FORMATS_MINIFLOAT_HPP
