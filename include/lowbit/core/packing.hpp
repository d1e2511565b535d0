// lowbit: packing of sub-byte codes into bytes. These are the storage layouts shared by the
// integer (INT4, INT2) and floating-point (FP4, FP6) schemes; docs/block-formats.md and
// docs/integer-schemes.md draw them.
//
//  4-bit, "sequential nibbles": element 2i in the low nibble of byte i, element 2i+1 in the high
//  nibble (CUDA __nv_fp4x2_e2m1, PyTorch float4_e2m1fn_x2, ONNX INT4).
//  6-bit: four codes in three bytes, as a little-endian bit stream: code k occupies bits 6k..6k+5
//  of the 24-bit word b0 | b1 << 8 | b2 << 16. OCP MX v1.0 leaves packing to the implementation
//  (CUDA's __nv_fp6x4 keeps one code per byte); lowbit picks the order that matches the nibbles:
//  first element in the lowest bits.
#ifndef LOWBIT_CORE_PACKING_HPP
#define LOWBIT_CORE_PACKING_HPP

#include <cstddef>
#include <cstdint>

#include "config.hpp"

namespace lowbit {

// Bytes needed to hold n codes of `bits` bits each (1..8), packed with no padding except at the
// end. Exact for every n: whole octets of codes are counted before the remainder, so n * bits
// is never formed (n = 2^61 at 4 bits is 2^60 bytes, not a wrapped product).
LOWBIT_HD constexpr std::size_t packed_bytes(std::size_t n, int bits) noexcept {
  const std::size_t b = static_cast<std::size_t>(bits);
  return (n / 8u) * b + ((n % 8u) * b + 7u) / 8u;
}

// Packs n 4-bit codes (low nibble of each input byte used) into packed_bytes(n, 4) bytes.
// An odd n leaves the last high nibble zero.
inline void pack_nibbles(const std::uint8_t* codes, std::uint8_t* out, std::size_t n) noexcept {
  const std::size_t pairs = n / 2;
  for (std::size_t i = 0; i < pairs; ++i)
    out[i] = static_cast<std::uint8_t>((codes[2 * i] & 0x0Fu) | ((codes[2 * i + 1] & 0x0Fu) << 4));
  if (n % 2 != 0) out[pairs] = static_cast<std::uint8_t>(codes[n - 1] & 0x0Fu);
}

inline void unpack_nibbles(const std::uint8_t* packed, std::uint8_t* codes, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned shift = i % 2 != 0 ? 4u : 0u;  // an unsigned shift: GCC's -Wsign-conversion under UBSan
    codes[i] = static_cast<std::uint8_t>((packed[i / 2] >> shift) & 0x0Fu);
  }
}

// Packs n 6-bit codes into packed_bytes(n, 6) bytes (four codes per three bytes).
inline void pack_sextets(const std::uint8_t* codes, std::uint8_t* out, std::size_t n) noexcept {
  std::size_t i = 0;
  std::size_t o = 0;
  for (; i + 4 <= n; i += 4, o += 3) {
    const std::uint32_t w = (codes[i] & 0x3Fu) | (codes[i + 1] & 0x3Fu) << 6 | (codes[i + 2] & 0x3Fu) << 12 |
                            (codes[i + 3] & 0x3Fu) << 18;
    out[o] = static_cast<std::uint8_t>(w);
    out[o + 1] = static_cast<std::uint8_t>(w >> 8);
    out[o + 2] = static_cast<std::uint8_t>(w >> 16);
  }
  if (i < n) {
    std::uint32_t w = 0;
    for (std::size_t k = 0; i + k < n; ++k) w |= (codes[i + k] & 0x3Fu) << (6 * k);
    for (std::size_t b = 0; o + b < packed_bytes(n, 6); ++b) out[o + b] = static_cast<std::uint8_t>(w >> (8 * b));
  }
}

inline void unpack_sextets(const std::uint8_t* packed, std::uint8_t* codes, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = 6 * i;
    const std::size_t byte = bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    std::uint32_t w = packed[byte];
    if (shift > 2) w |= static_cast<std::uint32_t>(packed[byte + 1]) << 8;
    codes[i] = static_cast<std::uint8_t>((w >> shift) & 0x3Fu);
  }
}

}  // namespace lowbit

#endif  // LOWBIT_CORE_PACKING_HPP
