// lowbit: std::numeric_limits for every lowbit format, computed from its spec.
#ifndef LOWBIT_FORMATS_LIMITS_HPP
#define LOWBIT_FORMATS_LIMITS_HPP

#include <limits>

#include "minifloat.hpp"

namespace lowbit {
namespace detail {

// floor(log10(x)) for x >= 1 and ceil(log10(x)) for 0 < x < 1, by repeated scaling.
constexpr int floor_log10(double x) noexcept {
  int k = 0;
  for (double p = 10.0; p <= x; p *= 10.0) ++k;
  return k;
}
constexpr int ceil_log10(double x) noexcept {
  int k = 0;
  for (double p = 0.1; p >= x; p /= 10.0) --k;
  return k;
}

template <class F>
struct minifloat_limits {
  using T = minifloat<F>;
  static constexpr T make(std::uint32_t bits) noexcept { return T::from_bits(static_cast<typename F::storage>(bits)); }
  // The code of the exact value 2^e (which must be representable).
  static constexpr std::uint32_t power_of_two_bits(int e) noexcept {
    unpacked u;
    u.kind = value_kind::finite;
    u.sig = 1;
    u.exp = e;
    return encode_bits<F>(u, policy{});
  }
  static constexpr std::uint32_t min_normal_bits = F::has_subnormals ? (1u << F::mantissa_bits) : 0u;
  // log10(2) = 0.30103 to five digits: enough for digits10 of formats up to 16 bits.
  static constexpr int digits10 = F::mantissa_bits * 30103 / 100000;
  static constexpr int max_digits10 = 2 + (F::mantissa_bits + 1) * 30103 / 100000;
};

}  // namespace detail
}  // namespace lowbit

namespace std {
template <class F>
class numeric_limits<lowbit::minifloat<F>> {
  using T = lowbit::minifloat<F>;
  using L = lowbit::detail::minifloat_limits<F>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = F::is_signed;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = F::has_inf;
  static constexpr bool has_quiet_NaN = F::has_nan;
  static constexpr bool has_signaling_NaN = F::specials == lowbit::special_values::ieee && F::mantissa_bits >= 2;
  static constexpr std::float_denorm_style has_denorm = F::has_subnormals ? std::denorm_present : std::denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = F::mantissa_bits + 1;
  static constexpr int digits10 = L::digits10;
  static constexpr int max_digits10 = L::max_digits10;
  static constexpr int radix = 2;
  // C convention: the smallest normal is 2^(min_exponent - 1), max() < 2^max_exponent.
  static constexpr int min_exponent = F::min_exponent + 1;
  static constexpr int max_exponent = F::max_exponent + 1;
  static constexpr int min_exponent10 = lowbit::detail::ceil_log10(static_cast<double>(T::from_bits(L::min_normal_bits)));
  static constexpr int max_exponent10 = lowbit::detail::floor_log10(static_cast<double>(T::from_bits(F::max_bits)));
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr T min() noexcept { return L::make(L::min_normal_bits); }
  static constexpr T max() noexcept { return L::make(F::max_bits); }
  static constexpr T lowest() noexcept { return F::is_signed ? L::make(F::sign_mask | F::max_bits) : min(); }
  // 2^-M: the gap between 1 and the next value (1 for E8M0, whose next value after 1 is 2).
  static constexpr T epsilon() noexcept {
    return L::make(L::power_of_two_bits(-F::mantissa_bits));
  }
  static constexpr T round_error() noexcept { return L::make(L::power_of_two_bits(-1)); }
  // Meaningful only where has_infinity / has_quiet_NaN / has_signaling_NaN are true; otherwise
  // the zero bit pattern, as the standard asks of non-floating types (ml_dtypes returns NaN or max).
  static constexpr T infinity() noexcept { return L::make(F::inf_bits); }
  static constexpr T quiet_NaN() noexcept { return L::make(F::quiet_nan_bits); }
  static constexpr T signaling_NaN() noexcept { return has_signaling_NaN ? L::make(F::inf_bits | 1u) : quiet_NaN(); }
  static constexpr T denorm_min() noexcept { return F::has_subnormals ? L::make(1u) : min(); }
};
}  // namespace std

#endif  // LOWBIT_FORMATS_LIMITS_HPP
