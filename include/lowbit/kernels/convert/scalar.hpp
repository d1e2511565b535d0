// lowbit: the scalar reference loops of the bulk conversions. Every SIMD kernel must produce the
// same bytes as these for every input; they are the codec (formats/codec.hpp) applied element by
// element, plus the packing layouts of core/packing.hpp.
#ifndef LOWBIT_KERNELS_CONVERT_SCALAR_HPP
#define LOWBIT_KERNELS_CONVERT_SCALAR_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../core/packing.hpp"
#include "../../formats/minifloat.hpp"

namespace lowbit {
namespace kernels {
namespace scalar {

// Rounds n values of src (float, double or a lowbit type) into dst under policy p. With
// rounding::stochastic, random_bits holds one value per element; null means all zero.
template <class From, class T>
void encode(const From* src, T* dst, std::size_t n, const policy& p, const std::uint32_t* random_bits) noexcept {
  using F = typename T::format;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = random_bits != nullptr ? random_bits[i] : 0u;
    dst[i] = T::from_bits(static_cast<typename F::storage>(lowbit::detail::encode_bits<F>(lowbit::detail::unpack(src[i]), p, r)));
  }
}

// Decodes n values exactly.
template <class F>
void decode(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// Rounds n values into format T and packs the codes: two per byte for 4-bit formats, four in
// three bytes for 6-bit formats, one per byte for 8-bit formats (core/packing.hpp). Writes
// packed_bytes(n, T::format::bits) bytes.
template <class T, class From>
void encode_packed(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                   const std::uint32_t* random_bits) noexcept {
  using F = typename T::format;
  static_assert(F::bits == 4 || F::bits == 6 || F::bits == 8, "packed layouts exist for 4, 6 and 8 bits");
  constexpr std::size_t chunk = 192;  // a multiple of 8 codes: whole bytes in every layout
  std::uint8_t codes[chunk];
  for (std::size_t i = 0; i < n; i += chunk) {
    const std::size_t m = n - i < chunk ? n - i : chunk;
    for (std::size_t k = 0; k < m; ++k) {
      const std::uint32_t r = random_bits != nullptr ? random_bits[i + k] : 0u;
      codes[k] = static_cast<std::uint8_t>(lowbit::detail::encode_bits<F>(lowbit::detail::unpack(src[i + k]), p, r));
    }
    std::uint8_t* out = dst + i * F::bits / 8;
    if constexpr (F::bits == 4) {
      pack_nibbles(codes, out, m);
    } else if constexpr (F::bits == 6) {
      pack_sextets(codes, out, m);
    } else {
      for (std::size_t k = 0; k < m; ++k) out[k] = codes[k];
    }
  }
}

// Unpacks n codes of format T from the layout encode_packed writes and decodes them exactly.
template <class T>
void decode_packed(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  using F = typename T::format;
  static_assert(F::bits == 4 || F::bits == 6 || F::bits == 8, "packed layouts exist for 4, 6 and 8 bits");
  constexpr std::size_t chunk = 192;
  std::uint8_t codes[chunk];
  for (std::size_t i = 0; i < n; i += chunk) {
    const std::size_t m = n - i < chunk ? n - i : chunk;
    const std::uint8_t* in = src + i * F::bits / 8;
    if constexpr (F::bits == 4) {
      unpack_nibbles(in, codes, m);
    } else if constexpr (F::bits == 6) {
      unpack_sextets(in, codes, m);
    } else {
      for (std::size_t k = 0; k < m; ++k) codes[k] = in[k];
    }
    for (std::size_t k = 0; k < m; ++k) dst[i + k] = static_cast<float>(T::from_bits(codes[k]));
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_CONVERT_SCALAR_HPP
