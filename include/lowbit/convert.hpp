// lowbit: bulk conversions between float and the lowbit formats.
//
// Each call is bit-identical to encode/decode applied element by element (the scalar codec is the
// reference). The loops here are the portable path; kernels/ adds SIMD paths chosen at run time.
#ifndef LOWBIT_CONVERT_HPP
#define LOWBIT_CONVERT_HPP

#include <cstddef>
#include <cstdint>

#include "formats/types.hpp"

namespace lowbit {

// Rounds n values of src (float, double, or any lowbit type) into dst under policy p.
// With rounding::stochastic, random_bits must hold n values (one per element); when it is null,
// every element gets 0, which is round toward zero.
template <class From, class T, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert(const From* src, T* dst, std::size_t n, const policy& p,
             const std::uint32_t* random_bits = nullptr) noexcept {
  using F = typename T::format;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = random_bits != nullptr ? random_bits[i] : 0u;
    dst[i] = T::from_bits(static_cast<typename F::storage>(detail::encode_bits<F>(detail::unpack(src[i]), p, r)));
  }
}

template <class From, class T, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert(const From* src, T* dst, std::size_t n, overflow ov = overflow::saturate,
             rounding rm = rounding::nearest_even, const std::uint32_t* random_bits = nullptr) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  convert(src, dst, n, p, random_bits);
}

// Decodes n values exactly.
template <class F>
void convert(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace lowbit

#endif  // LOWBIT_CONVERT_HPP
