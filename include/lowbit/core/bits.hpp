// lowbit: bit-level helpers that work in constexpr, on the host and in CUDA device code.
#ifndef LOWBIT_CORE_BITS_HPP
#define LOWBIT_CORE_BITS_HPP

#include <cstdint>
#include <cstring>

#include "config.hpp"

namespace lowbit {
namespace detail {

template <class To, class From>
LOWBIT_HD LOWBIT_CONSTEXPR_BITCAST To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
#if LOWBIT_HAS_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to{};
  std::memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

// Number of leading zero bits of a nonzero 64-bit value. The builtin is constexpr in GCC and
// clang and one instruction at run time (the codec's hot spot); device code and other compilers
// get a binary search that is constexpr everywhere.
LOWBIT_HD constexpr int countl_zero64(std::uint64_t x) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__)
  return __builtin_clzll(x);
#else
  int n = 0;
  for (int step = 32; step > 0; step >>= 1) {
    if ((x >> (64 - step)) == 0) {
      n += step;
      x <<= step;
    }
  }
  return n;
#endif
}

// Index of the most significant set bit of a nonzero value.
LOWBIT_HD constexpr int bit_width_minus_one(std::uint64_t x) noexcept { return 63 - countl_zero64(x); }

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_CORE_BITS_HPP
