// lowbit: ggml / llama.cpp Q4_0 and Q8_0 tensors: a [rows, cols] matrix as rows of 32-element
// blocks (ggml_block_q4_0 {fp16 d; 16 bytes}: byte j = code(j) | code(j+16) << 4;
// ggml_block_q8_0 {fp16 d; 32 int8}); blocks never straddle rows, so cols must be a multiple of
// 32. The block structs and the scalar rule are in kernels/ggml/reference.hpp, the AVX2 twin in
// kernels/ggml/avx2.hpp.
//
// Every call follows docs/api.md: cols % 32 != 0 -> bad_block_size; rows * cols overflowing ->
// bad_argument; n = 0 -> ok, nothing written; then the buffer errors (null, misaligned,
// overlapping); then the data errors. The quantizers open the IEEE scope once and run the AVX2
// kernel when lowbit::active_isa() selects it, else the reference: the same bytes.
#ifndef LOWBIT_SCHEMES_LAYOUTS_GGML_HPP
#define LOWBIT_SCHEMES_LAYOUTS_GGML_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/checks.hpp"
#include "../../core/span.hpp"
#include "../../core/status.hpp"
#include "../../formats/types.hpp"
#include "../../kernels/fp_env.hpp"
#include "../../kernels/ggml/dispatch.hpp"
#include "bitstream.hpp"

namespace lowbit {

namespace detail {
// The shape checks of a ggml call: the element count into *n, the block count into *blocks.
inline status check_ggml_shape(std::size_t rows, std::size_t cols, std::size_t* n, std::size_t* blocks) noexcept {
  if (cols % ggml_block_size != 0) return errc::bad_block_size;
  if (status s = checked_shape(rows, cols, sizeof(float), n); !s) return s;
  *blocks = *n / ggml_block_size;
  return status{};
}
// The fp16 bits of a given scale that must be exactly representable in fp16.
inline bool exact_half(float scale, std::uint16_t* bits) noexcept {
  const float16 h = encode<float16>(scale, overflow::non_saturate);
  *bits = h.bits();
  return static_cast<float>(h) == scale;
}

// Per block type: the kernels, and the block <-> lowbit codes rules.
inline errc quantize_blocks(const float* x, std::size_t nb, ggml_block_q4_0* b) noexcept {
  return kernels::ggml_quantize_q4_0(x, nb, b);
}
inline errc quantize_blocks(const float* x, std::size_t nb, ggml_block_q8_0* b) noexcept {
  return kernels::ggml_quantize_q8_0(x, nb, b);
}
inline void dequantize_blocks(const ggml_block_q4_0* b, std::size_t nb, float* y) noexcept {
  kernels::ggml_dequantize_q4_0(b, nb, y);
}
inline void dequantize_blocks(const ggml_block_q8_0* b, std::size_t nb, float* y) noexcept {
  kernels::ggml_dequantize_q8_0(b, nb, y);
}
// Whether lowbit codes fit the block: 4-bit codes for Q4_0; any byte for Q8_0 (q = code - 128).
inline bool codes_fit(const std::uint8_t* codes, std::size_t n, const ggml_block_q4_0*) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (codes[i] > 15) return false;
  return true;
}
inline bool codes_fit(const std::uint8_t*, std::size_t, const ggml_block_q8_0*) noexcept { return true; }
// One block from 32 lowbit codes (offset binary) and its fp16-exact scale, and back.
inline void put_block(const std::uint8_t* codes, float scale, ggml_block_q4_0* b) noexcept {
  (void)exact_half(scale, &b->d);
  for (std::size_t j = 0; j < 16; ++j) b->qs[j] = static_cast<std::uint8_t>(codes[j] | codes[j + 16] << 4);
}
inline void put_block(const std::uint8_t* codes, float scale, ggml_block_q8_0* b) noexcept {
  (void)exact_half(scale, &b->d);
  for (std::size_t j = 0; j < ggml_block_size; ++j) b->qs[j] = static_cast<std::int8_t>(static_cast<int>(codes[j]) - 128);
}
inline void get_block(const ggml_block_q4_0& b, std::uint8_t* codes) noexcept {
  for (std::size_t j = 0; j < 16; ++j) {
    codes[j] = static_cast<std::uint8_t>(b.qs[j] & 0x0F);
    codes[j + 16] = static_cast<std::uint8_t>(b.qs[j] >> 4);
  }
}
inline void get_block(const ggml_block_q8_0& b, std::uint8_t* codes) noexcept {
  for (std::size_t j = 0; j < ggml_block_size; ++j) codes[j] = static_cast<std::uint8_t>(b.qs[j] + 128);
}

// The four calls for either block type, each in docs/api.md's order of checks.
template <class Block>
inline status ggml_quantize(const float* src, std::size_t rows, std::size_t cols, Block* blocks) noexcept {
  std::size_t n = 0, nb = 0;
  if (status s = check_ggml_shape(rows, cols, &n, &nb); !s) return s;
  if (n == 0) return status{};
  if (status s = check_buffers({buffer_of(src, n)}, {buffer_of(blocks, nb)}); !s) return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  return quantize_blocks(src, nb, blocks);
}
template <class Block>
inline status ggml_dequantize(const Block* blocks, std::size_t rows, std::size_t cols, float* dst) noexcept {
  std::size_t n = 0, nb = 0;
  if (status s = check_ggml_shape(rows, cols, &n, &nb); !s) return s;
  if (n == 0) return status{};
  if (status s = check_buffers({buffer_of(blocks, nb)}, {buffer_of(dst, n)}); !s) return s;
  const kernels::ieee_scope env;
  dequantize_blocks(blocks, nb, dst);
  return status{};
}
template <class Block>
inline status ggml_pack(const std::uint8_t* codes, const float* scales, std::size_t rows, std::size_t cols,
                        Block* blocks) noexcept {
  std::size_t n = 0, nb = 0;
  if (status s = check_ggml_shape(rows, cols, &n, &nb); !s) return s;
  if (n == 0) return status{};
  if (status s = check_buffers({buffer_of(codes, n), buffer_of(scales, nb)}, {buffer_of(blocks, nb)}); !s) return s;
  std::uint16_t h = 0;
  for (std::size_t b = 0; b < nb; ++b)
    if (!exact_half(scales[b], &h)) return errc::bad_argument;
  if (!codes_fit(codes, n, blocks)) return errc::bad_argument;
  for (std::size_t b = 0; b < nb; ++b) put_block(codes + b * ggml_block_size, scales[b], &blocks[b]);
  return status{};
}
template <class Block>
inline status ggml_unpack(const Block* blocks, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                          float* scales) noexcept {
  std::size_t n = 0, nb = 0;
  if (status s = check_ggml_shape(rows, cols, &n, &nb); !s) return s;
  if (n == 0) return status{};
  if (status s = check_buffers({buffer_of(blocks, nb)}, {buffer_of(codes, n), buffer_of(scales, nb)}); !s) return s;
  for (std::size_t b = 0; b < nb; ++b) {
    scales[b] = kernels::ggml_ref::scale_value(blocks[b].d);
    get_block(blocks[b], codes + b * ggml_block_size);
  }
  return status{};
}

// The size checks of the span forms.
inline status ggml_sizes(std::size_t rows, std::size_t cols, std::size_t values, std::size_t nblocks,
                         std::size_t nscales) noexcept {
  std::size_t n = 0, nb = 0;
  if (status s = check_ggml_shape(rows, cols, &n, &nb); !s) return s;
  if (values != n || nblocks != nb || nscales != nb) return errc::size_mismatch;
  return status{};
}
}  // namespace detail

// quantize_row_q4_0_ref, bit for bit: per block, max = the element of largest magnitude (the
// first one on ties), d = max / -8 in FP32, id = 1/d (0 when d is 0), code = min(15,
// trunc(x*id + 8.5)) (round half up of x*id, computed against the FP32 d, not the stored fp16 d),
// d stored as fp16 (round to nearest even). Differences from ggml, all on input ggml leaves
// undefined: NaN/Inf in a block is errc::non_finite_input (nothing written for that block and
// the ones after it); a scale beyond fp16's range is errc::scale_overflow (ggml stores Inf); an id
// that overflows to Inf (|max| < 2^-125) gives codes clamped to 0..15 instead of an undefined
// conversion. blocks gets rows * cols / 32 blocks.
[[nodiscard]] inline status ggml_quantize_q4_0(const float* src, std::size_t rows, std::size_t cols,
                                               ggml_block_q4_0* blocks) noexcept {
  return detail::ggml_quantize(src, rows, cols, blocks);
}

// dequantize_row_q4_0: dst[j] = (code(j) - 8) * d.
[[nodiscard]] inline status ggml_dequantize_q4_0(const ggml_block_q4_0* blocks, std::size_t rows, std::size_t cols,
                                                 float* dst) noexcept {
  return detail::ggml_dequantize(blocks, rows, cols, dst);
}

// quantize_row_q8_0_ref, bit for bit: d = amax / 127 in FP32, id = 1/d (0 when d is 0),
// q = roundf(x * id) (round half away from zero), d stored as fp16. Same differences from ggml
// as ggml_quantize_q4_0 (q is clamped to -127..127 where ggml's conversion would be undefined).
[[nodiscard]] inline status ggml_quantize_q8_0(const float* src, std::size_t rows, std::size_t cols,
                                               ggml_block_q8_0* blocks) noexcept {
  return detail::ggml_quantize(src, rows, cols, blocks);
}

// dequantize_row_q8_0: dst[j] = q[j] * d.
[[nodiscard]] inline status ggml_dequantize_q8_0(const ggml_block_q8_0* blocks, std::size_t rows, std::size_t cols,
                                                 float* dst) noexcept {
  return detail::ggml_dequantize(blocks, rows, cols, dst);
}

// Writing and reading blocks from lowbit codes: `codes` are 4-bit codes in offset binary (the
// element is (code - 8) * d, lowbit's symmetric INT4 with zero-point 8) and `scales` holds one
// value per block that must be exactly representable in fp16 (errc::bad_argument otherwise), as
// lowbit's schemes produce with scale_storage::fp16. Round trips are exact both ways. A bad code
// or scale is found before anything is written.
[[nodiscard]] inline status ggml_pack_q4_0(const std::uint8_t* codes, const float* scales, std::size_t rows,
                                           std::size_t cols, ggml_block_q4_0* blocks) noexcept {
  return detail::ggml_pack(codes, scales, rows, cols, blocks);
}
[[nodiscard]] inline status ggml_unpack_q4_0(const ggml_block_q4_0* blocks, std::size_t rows, std::size_t cols,
                                             std::uint8_t* codes, float* scales) noexcept {
  return detail::ggml_unpack(blocks, rows, cols, codes, scales);
}

// Q8_0 from lowbit's symmetric INT8 codes: code = q + 128 (offset binary), so q = code - 128.
[[nodiscard]] inline status ggml_pack_q8_0(const std::uint8_t* codes, const float* scales, std::size_t rows,
                                           std::size_t cols, ggml_block_q8_0* blocks) noexcept {
  return detail::ggml_pack(codes, scales, rows, cols, blocks);
}
[[nodiscard]] inline status ggml_unpack_q8_0(const ggml_block_q8_0* blocks, std::size_t rows, std::size_t cols,
                                             std::uint8_t* codes, float* scales) noexcept {
  return detail::ggml_unpack(blocks, rows, cols, codes, scales);
}

// Span forms: the element count is rows * cols; src / dst / codes must hold exactly that many
// elements, blocks / scales exactly rows * cols / 32 (errc::size_mismatch otherwise, after the
// shape checks).
[[nodiscard]] inline status ggml_quantize_q4_0(span<const float> src, std::size_t rows, std::size_t cols,
                                               span<ggml_block_q4_0> blocks) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, src.size(), blocks.size(), blocks.size()); !s) return s;
  return ggml_quantize_q4_0(src.data(), rows, cols, blocks.data());
}
[[nodiscard]] inline status ggml_dequantize_q4_0(span<const ggml_block_q4_0> blocks, std::size_t rows,
                                                 std::size_t cols, span<float> dst) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, dst.size(), blocks.size(), blocks.size()); !s) return s;
  return ggml_dequantize_q4_0(blocks.data(), rows, cols, dst.data());
}
[[nodiscard]] inline status ggml_quantize_q8_0(span<const float> src, std::size_t rows, std::size_t cols,
                                               span<ggml_block_q8_0> blocks) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, src.size(), blocks.size(), blocks.size()); !s) return s;
  return ggml_quantize_q8_0(src.data(), rows, cols, blocks.data());
}
[[nodiscard]] inline status ggml_dequantize_q8_0(span<const ggml_block_q8_0> blocks, std::size_t rows,
                                                 std::size_t cols, span<float> dst) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, dst.size(), blocks.size(), blocks.size()); !s) return s;
  return ggml_dequantize_q8_0(blocks.data(), rows, cols, dst.data());
}
[[nodiscard]] inline status ggml_pack_q4_0(span<const std::uint8_t> codes, span<const float> scales, std::size_t rows,
                                           std::size_t cols, span<ggml_block_q4_0> blocks) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, codes.size(), blocks.size(), scales.size()); !s) return s;
  return ggml_pack_q4_0(codes.data(), scales.data(), rows, cols, blocks.data());
}
[[nodiscard]] inline status ggml_unpack_q4_0(span<const ggml_block_q4_0> blocks, std::size_t rows, std::size_t cols,
                                             span<std::uint8_t> codes, span<float> scales) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, codes.size(), blocks.size(), scales.size()); !s) return s;
  return ggml_unpack_q4_0(blocks.data(), rows, cols, codes.data(), scales.data());
}
[[nodiscard]] inline status ggml_pack_q8_0(span<const std::uint8_t> codes, span<const float> scales, std::size_t rows,
                                           std::size_t cols, span<ggml_block_q8_0> blocks) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, codes.size(), blocks.size(), scales.size()); !s) return s;
  return ggml_pack_q8_0(codes.data(), scales.data(), rows, cols, blocks.data());
}
[[nodiscard]] inline status ggml_unpack_q8_0(span<const ggml_block_q8_0> blocks, std::size_t rows, std::size_t cols,
                                             span<std::uint8_t> codes, span<float> scales) noexcept {
  if (status s = detail::ggml_sizes(rows, cols, codes.size(), blocks.size(), scales.size()); !s) return s;
  return ggml_unpack_q8_0(blocks.data(), rows, cols, codes.data(), scales.data());
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_LAYOUTS_GGML_HPP
