// lowbit: AWQ GEMM checkpoints (AutoAWQ "GEMM" version, read by vLLM's awq loaders): 4-bit only.
// qweight int32 [in, out/8]: words run along `out`; slot i (bits 4i..4i+3) of word w holds output
// channel 8w + awq_order[i]. qzeros int32 [groups, out/8] the same way (true zero-points).
//
// Every call follows docs/api.md (options, shape, n = 0 ok, buffers, data); nothing is written on
// an error. docs/integer-schemes.md draws the layout.
#ifndef LOWBIT_SCHEMES_LAYOUTS_AWQ_HPP
#define LOWBIT_SCHEMES_LAYOUTS_AWQ_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/checks.hpp"
#include "../../core/status.hpp"
#include "bitstream.hpp"

namespace lowbit {

inline constexpr int awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
// The slot of output channel 8w + c: the inverse permutation.
inline constexpr int awq_reverse_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};

namespace detail {
// bits must be 4 (bad_bit_width), out_features a multiple of 8 (bad_block_size), out * other
// must fit (bad_argument).
inline status check_awq_shape(int bits, std::size_t out_features, std::size_t other, std::size_t* n) noexcept {
  if (bits != 4) return errc::bad_bit_width;
  if (out_features % 8 != 0) return errc::bad_block_size;
  return checked_shape(out_features, other, 1, n);
}

// Packs a [rows, cols] matrix whose rows run along the AWQ word direction: get(r, c) is the code
// for word row r and output channel c; out is [rows, cols/8].
template <class Get>
inline void awq_pack_rows(std::size_t rows, std::size_t cols, Get get, std::uint32_t* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t w = 0; w < cols / 8; ++w) {
      std::uint32_t word = 0;
      for (unsigned i = 0; i < 8; ++i)
        word |= static_cast<std::uint32_t>(get(r, w * 8 + static_cast<std::size_t>(awq_order[i])) & 0xFu) << (4u * i);
      out[r * (cols / 8) + w] = word;
    }
}

// The reverse: put(r, c, code) for every code of a [rows, cols/8] word matrix.
template <class Put>
inline void awq_unpack_rows(const std::uint32_t* in, std::size_t rows, std::size_t cols, Put put) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t w = 0; w < cols / 8; ++w) {
      const std::uint32_t word = in[r * (cols / 8) + w];
      for (unsigned i = 0; i < 8; ++i)
        put(r, w * 8 + static_cast<std::size_t>(awq_order[i]), static_cast<std::uint8_t>((word >> (4u * i)) & 0xFu));
    }
}

inline bool all_nibbles(const std::uint8_t* v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] > 15) return false;
  return true;
}
}  // namespace detail

// codes is [out, in]; qweight is [in, out/8]. Errors: bits != 4 -> bad_bit_width; out_features
// not a multiple of 8 -> bad_block_size; out * in overflowing -> bad_argument; the buffer
// errors; a code above 15 -> bad_argument.
[[nodiscard]] inline status awq_pack_qweight(const std::uint8_t* codes, std::size_t out_features,
                                             std::size_t in_features, int bits, std::uint32_t* qweight) noexcept {
  std::size_t n = 0;
  if (status s = detail::check_awq_shape(bits, out_features, in_features, &n); !s) return s;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({detail::buffer_of(codes, n)}, {detail::buffer_of(qweight, n / 8)}); !s)
    return s;
  if (!detail::all_nibbles(codes, n)) return errc::bad_argument;
  detail::awq_pack_rows(
      in_features, out_features, [&](std::size_t k, std::size_t o) { return codes[o * in_features + k]; }, qweight);
  return status{};
}

[[nodiscard]] inline status awq_unpack_qweight(const std::uint32_t* qweight, std::size_t out_features,
                                               std::size_t in_features, int bits, std::uint8_t* codes) noexcept {
  std::size_t n = 0;
  if (status s = detail::check_awq_shape(bits, out_features, in_features, &n); !s) return s;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({detail::buffer_of(qweight, n / 8)}, {detail::buffer_of(codes, n)}); !s)
    return s;
  detail::awq_unpack_rows(qweight, in_features, out_features,
                          [&](std::size_t k, std::size_t o, std::uint8_t c) { codes[o * in_features + k] = c; });
  return status{};
}

// zeros is [out, groups] (true zero-points, 0..15); qzeros is [groups, out/8]: the layout of
// qweight with groups in place of in_features, so the same packing. The errors of
// awq_pack_qweight.
[[nodiscard]] inline status awq_pack_qzeros(const std::uint8_t* zeros, std::size_t out_features, std::size_t groups,
                                            int bits, std::uint32_t* qzeros) noexcept {
  return awq_pack_qweight(zeros, out_features, groups, bits, qzeros);
}

[[nodiscard]] inline status awq_unpack_qzeros(const std::uint32_t* qzeros, std::size_t out_features,
                                              std::size_t groups, int bits, std::uint8_t* zeros) noexcept {
  return awq_unpack_qweight(qzeros, out_features, groups, bits, zeros);
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_LAYOUTS_AWQ_HPP
