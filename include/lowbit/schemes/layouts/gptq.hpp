// lowbit: GPTQ checkpoints (AutoGPTQ / GPTQModel / vLLM "gptq" loaders), for widths that divide
// 32. Weights are [out, in] row-major codes, as lowbit's per-group schemes lay them out.
//
//   qweight int32 [in*b/32, out]: 32/b codes per word along `in`, low bits first;
//   qzeros  int32 [groups, out*b/32] packed the same way along `out`, storing zero-1 (format v1:
//           AutoGPTQ and most checkpoints) or the zero (v2: GPTQModel);
//   scales  [groups, out] (transpose_group_params); g_idx int32 [in] (gptq_g_idx).
//
// Every call follows docs/api.md (options, shape, n = 0 ok, buffers, data); nothing is written on
// an error. docs/integer-schemes.md draws the layout.
#ifndef LOWBIT_SCHEMES_LAYOUTS_GPTQ_HPP
#define LOWBIT_SCHEMES_LAYOUTS_GPTQ_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/checks.hpp"
#include "../../core/status.hpp"
#include "bitstream.hpp"

namespace lowbit {

// How qzeros stores a zero-point z.
//  v1: z - 1 (AutoGPTQ's packer, read back as stored + 1 by exllama, vLLM and others). A zero of 0
//      cannot be written (the engines would read 2^b), so packing one is errc::bad_argument.
//  v2: z itself (GPTQModel's internal "gptq_v2" format).
enum class gptq_format : std::uint8_t { v1, v2 };

namespace detail {
inline status check_word_width(int bits) noexcept {
  if (bits != 2 && bits != 4 && bits != 8) return errc::bad_bit_width;  // 3-bit GPTQ spans words
  return status{};
}

// The options and shape checks of a GPTQ word matrix: `along` (the direction packed into words)
// must be a multiple of 32/bits (bad_block_size), and along * other must fit (bad_argument).
inline status check_gptq_shape(int bits, std::size_t along, std::size_t other, std::size_t* n) noexcept {
  if (status s = check_word_width(bits); !s) return s;
  if (along % (32u / static_cast<std::size_t>(bits)) != 0) return errc::bad_block_size;
  return checked_shape(along, other, 1, n);
}
}  // namespace detail

// qweight[r][o] (r < in*bits/32) holds codes[o][r*k + j] at bits bits*j, k = 32/bits.
// Errors: bits not 2, 4 or 8 -> bad_bit_width; in_features not a multiple of k ->
// bad_block_size; out * in overflowing -> bad_argument; the buffer errors; a code wider than bits
// -> bad_argument.
[[nodiscard]] inline status gptq_pack_qweight(const std::uint8_t* codes, std::size_t out_features,
                                              std::size_t in_features, int bits, std::uint32_t* qweight) noexcept {
  std::size_t n = 0;
  if (status s = detail::check_gptq_shape(bits, in_features, out_features, &n); !s) return s;
  if (n == 0) return status{};
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (status s = detail::check_buffers({detail::buffer_of(codes, n)}, {detail::buffer_of(qweight, n / k)}); !s)
    return s;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i)
    if ((codes[i] & ~mask) != 0) return errc::bad_argument;
  for (std::size_t r = 0; r < in_features / k; ++r)
    for (std::size_t o = 0; o < out_features; ++o) {
      std::uint32_t w = 0;
      for (std::size_t j = 0; j < k; ++j)
        w |= static_cast<std::uint32_t>(codes[o * in_features + r * k + j]) << (static_cast<unsigned>(bits) * j);
      qweight[r * out_features + o] = w;
    }
  return status{};
}

// The reverse of gptq_pack_qweight; the same errors but the code check.
[[nodiscard]] inline status gptq_unpack_qweight(const std::uint32_t* qweight, std::size_t out_features,
                                                std::size_t in_features, int bits, std::uint8_t* codes) noexcept {
  std::size_t n = 0;
  if (status s = detail::check_gptq_shape(bits, in_features, out_features, &n); !s) return s;
  if (n == 0) return status{};
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (status s = detail::check_buffers({detail::buffer_of(qweight, n / k)}, {detail::buffer_of(codes, n)}); !s)
    return s;
  const std::uint32_t mask = (1u << bits) - 1u;
  for (std::size_t r = 0; r < in_features / k; ++r)
    for (std::size_t o = 0; o < out_features; ++o) {
      const std::uint32_t w = qweight[r * out_features + o];
      for (std::size_t j = 0; j < k; ++j)
        codes[o * in_features + r * k + j] =
            static_cast<std::uint8_t>((w >> (static_cast<unsigned>(bits) * j)) & mask);
    }
  return status{};
}

// zeros is [out, groups] (lowbit's order: one row of group zero-points per output channel);
// qzeros[g][w] holds the stored zero of output channel w*k + j at bits bits*j. Errors: those of
// gptq_pack_qweight with out_features the packed direction; fmt out of range -> bad_argument; a
// zero wider than bits, or 0 under v1 -> bad_argument.
[[nodiscard]] inline status gptq_pack_qzeros(const std::uint8_t* zeros, std::size_t out_features, std::size_t groups,
                                             int bits, gptq_format fmt, std::uint32_t* qzeros) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  if (static_cast<unsigned>(fmt) > 1u) return errc::bad_argument;
  std::size_t n = 0;
  if (status s = detail::check_gptq_shape(bits, out_features, groups, &n); !s) return s;
  if (n == 0) return status{};
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (status s = detail::check_buffers({detail::buffer_of(zeros, n)}, {detail::buffer_of(qzeros, n / k)}); !s)
    return s;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i) {
    if ((zeros[i] & ~mask) != 0) return errc::bad_argument;
    if (fmt == gptq_format::v1 && zeros[i] == 0) return errc::bad_argument;  // v1 cannot store 0
  }
  const unsigned bias = fmt == gptq_format::v1 ? 1u : 0u;
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t w = 0; w < out_features / k; ++w) {
      std::uint32_t word = 0;
      for (std::size_t j = 0; j < k; ++j) {
        const unsigned stored = zeros[(w * k + j) * groups + g] - bias;
        word |= static_cast<std::uint32_t>(stored) << (static_cast<unsigned>(bits) * j);
      }
      qzeros[g * (out_features / k) + w] = word;
    }
  return status{};
}

// The reverse of gptq_pack_qzeros. Under v1 a field of all ones would read as 2^b, outside the
// code range (what an AutoGPTQ zero of 0 turned into): errc::bad_argument (zeros is then
// partly written: it is a data error, found on the way).
[[nodiscard]] inline status gptq_unpack_qzeros(const std::uint32_t* qzeros, std::size_t out_features,
                                               std::size_t groups, int bits, gptq_format fmt,
                                               std::uint8_t* zeros) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  if (static_cast<unsigned>(fmt) > 1u) return errc::bad_argument;
  std::size_t n = 0;
  if (status s = detail::check_gptq_shape(bits, out_features, groups, &n); !s) return s;
  if (n == 0) return status{};
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (status s = detail::check_buffers({detail::buffer_of(qzeros, n / k)}, {detail::buffer_of(zeros, n)}); !s)
    return s;
  const std::uint32_t mask = (1u << bits) - 1u;
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t w = 0; w < out_features / k; ++w) {
      const std::uint32_t word = qzeros[g * (out_features / k) + w];
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t stored = (word >> (static_cast<unsigned>(bits) * j)) & mask;
        if (fmt == gptq_format::v1 && stored == mask) return errc::bad_argument;
        zeros[(w * k + j) * groups + g] = static_cast<std::uint8_t>(stored + (fmt == gptq_format::v1 ? 1u : 0u));
      }
    }
  return status{};
}

// GPTQ's g_idx for groups of consecutive input channels (no act-order permutation):
// g_idx[i] = i / group_size. Errors: group_size 0 or not dividing in_features -> bad_group_size;
// more than 2^31 - 1 groups, or in_features int32 values overflowing -> bad_argument; buffers.
[[nodiscard]] inline status gptq_g_idx(std::size_t in_features, std::size_t group_size, std::int32_t* g_idx) noexcept {
  if (group_size == 0 || in_features % group_size != 0) return errc::bad_group_size;
  std::size_t n = 0;
  if (status s = detail::checked_shape(in_features, 1, sizeof(std::int32_t), &n); !s) return s;
  if (in_features / group_size > 0x7FFFFFFFu) return errc::bad_argument;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({}, {detail::buffer_of(g_idx, n)}); !s) return s;
  for (std::size_t i = 0; i < in_features; ++i) g_idx[i] = static_cast<std::int32_t>(i / group_size);
  return status{};
}

// Checkpoints store scales (and float zeros) as [groups, out]; lowbit keeps them [out, groups].
// Writes dst[c][r] = src[r][c] for a [rows, cols] source. Errors: rows * cols overflowing ->
// bad_argument; the buffer errors (dst may not overlap src: no in-place transpose).
[[nodiscard]] inline status transpose_group_params(const float* src, std::size_t rows, std::size_t cols,
                                                   float* dst) noexcept {
  std::size_t n = 0;
  if (status s = detail::checked_shape(rows, cols, sizeof(float), &n); !s) return s;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({detail::buffer_of(src, n)}, {detail::buffer_of(dst, n)}); !s) return s;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  return status{};
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_LAYOUTS_GPTQ_HPP
