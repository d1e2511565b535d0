// lowbit: lowbit's own bit stream of integer codes, any width 1..8: code k occupies bits
// b*k .. b*k+b-1 of the little-endian stream b0 | b1 << 8 | b2 << 16 | ...; for b = 4 it is
// "sequential nibbles" (core/packing.hpp), for b = 6 core/packing.hpp's sextets. Also the shape
// check every layout and scheme shares.
//
// Every call follows docs/api.md: options, shape, n = 0 (ok, nothing written), buffers (null,
// misaligned, overlapping), data; nothing is written on an error.
#ifndef LOWBIT_SCHEMES_LAYOUTS_BITSTREAM_HPP
#define LOWBIT_SCHEMES_LAYOUTS_BITSTREAM_HPP

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../../core/checks.hpp"
#include "../../core/packing.hpp"
#include "../../core/span.hpp"
#include "../../core/status.hpp"

namespace lowbit {
namespace detail {

// The element count of a [rows, cols] matrix into *n; bad_argument when rows * cols, or the
// bytes of that many elements of element_bytes (the widest array the call reads or writes),
// do not fit: no object can be larger than PTRDIFF_MAX bytes.
inline status checked_shape(std::size_t rows, std::size_t cols, std::size_t element_bytes, std::size_t* n) noexcept {
  std::size_t bytes = 0;
  if (!checked_mul(rows, cols, n) || !checked_mul(*n, element_bytes, &bytes) ||
      bytes > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    return errc::bad_argument;
  return status{};
}

// Writes n codes of `bits` bits at code position `first` of a pack_codes stream, leaving the
// other bits of the bytes it shares with neighbours as they are.
inline void put_codes(const std::uint8_t* codes, std::size_t n, int bits, std::uint8_t* out,
                      std::size_t first) noexcept {
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) out[first + i] = codes[i];
    return;
  }
  const std::size_t b = static_cast<std::size_t>(bits);
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = b * (first + i);
    const unsigned shift = static_cast<unsigned>(bit % 8u);
    const unsigned v = codes[i] & mask;
    std::uint8_t& lo = out[bit / 8u];
    lo = static_cast<std::uint8_t>((lo & ~(mask << shift)) | (v << shift));
    if (shift + b > 8u) {
      std::uint8_t& hi = out[bit / 8u + 1u];
      hi = static_cast<std::uint8_t>((hi & ~(mask >> (8u - shift))) | (v >> (8u - shift)));
    }
  }
}

// Reads n codes of `bits` bits from code position `first` of a pack_codes stream (arguments
// already checked).
inline void get_codes(const std::uint8_t* packed, std::size_t first, std::size_t n, int bits,
                      std::uint8_t* codes) noexcept {
  if (bits == 4 && first % 2 == 0) {
    unpack_nibbles(packed + first / 2, codes, n);
    return;
  }
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) codes[i] = packed[first + i];
    return;
  }
  const std::size_t b = static_cast<std::size_t>(bits);
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = b * (first + i);
    const unsigned shift = static_cast<unsigned>(bit % 8u);
    unsigned w = packed[bit / 8u];
    if (shift + b > 8u) w |= static_cast<unsigned>(packed[bit / 8u + 1u]) << 8;
    codes[i] = static_cast<std::uint8_t>((w >> shift) & mask);
  }
}
}  // namespace detail

// Packs n codes of `bits` bits (1..8) into packed_bytes(n, bits) bytes of the stream; unused high
// bits of the last byte are zero. Errors: bits outside 1..8 -> bad_bit_width; the buffer errors of
// docs/api.md; a code that does not fit in `bits` bits -> bad_argument (nothing is written).
[[nodiscard]] inline status pack_codes(const std::uint8_t* codes, std::size_t n, int bits,
                                       std::uint8_t* packed) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (n == 0) return status{};
  const std::size_t nbytes = packed_bytes(n, bits);
  if (status s = detail::check_buffers({detail::buffer_of(codes, n)}, {detail::buffer_of(packed, nbytes)}); !s)
    return s;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i)
    if ((codes[i] & ~mask) != 0) return errc::bad_argument;
  if (bits == 4) {
    pack_nibbles(codes, packed, n);  // the same stream, two codes per byte
    return status{};
  }
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) packed[i] = codes[i];
    return status{};
  }
  for (std::size_t i = 0; i < nbytes; ++i) packed[i] = 0;
  detail::put_codes(codes, n, bits, packed, 0);
  return status{};
}

// Reads codes first .. first+n-1 of a stream written by pack_codes (any starting position, so a
// group or a row can be read without unpacking what precedes it); packed holds at least
// packed_bytes(first + n, bits) bytes. Errors: bad_bit_width; first + n overflowing ->
// bad_argument; the buffer errors of docs/api.md.
[[nodiscard]] inline status unpack_codes(const std::uint8_t* packed, std::size_t first, std::size_t n, int bits,
                                         std::uint8_t* codes) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (first > std::numeric_limits<std::size_t>::max() - n) return errc::bad_argument;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({detail::buffer_of(packed, packed_bytes(first + n, bits))},
                                       {detail::buffer_of(codes, n)});
      !s)
    return s;
  detail::get_codes(packed, first, n, bits, codes);
  return status{};
}

// Span forms: packed must hold exactly packed_bytes(codes.size(), bits) bytes (pack_codes), or at
// least packed_bytes(first + codes.size(), bits) (unpack_codes reads part of a longer stream);
// otherwise errc::size_mismatch.
[[nodiscard]] inline status pack_codes(span<const std::uint8_t> codes, int bits, span<std::uint8_t> packed) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (packed.size() != packed_bytes(codes.size(), bits)) return errc::size_mismatch;
  return pack_codes(codes.data(), codes.size(), bits, packed.data());
}
[[nodiscard]] inline status unpack_codes(span<const std::uint8_t> packed, std::size_t first, int bits,
                                         span<std::uint8_t> codes) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (first > std::numeric_limits<std::size_t>::max() - codes.size()) return errc::bad_argument;
  if (packed.size() < packed_bytes(first + codes.size(), bits)) return errc::size_mismatch;
  return unpack_codes(packed.data(), first, codes.size(), bits, codes.data());
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_LAYOUTS_BITSTREAM_HPP
