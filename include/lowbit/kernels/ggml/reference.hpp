// lowbit: ggml / llama.cpp Q4_0 and Q8_0 blocks (ggml-common.h) and the scalar reference of
// their quantizers and dequantizers (quantize_row_q4_0_ref and friends, bit for bit). The AVX2
// twin is kernels/ggml/avx2.hpp; tests/test_kernels_integer.cpp (KernelsIntegerGgml) proves them
// equal, and tests/test_layouts.cpp compares this reference with ggml's own C code.
//
// `d` holds the IEEE binary16 bits of the block scale; on a little-endian host these structs have
// the byte layout of GGUF tensor data. Every size below comes from sizeof, never a literal.
#ifndef LOWBIT_KERNELS_GGML_REFERENCE_HPP
#define LOWBIT_KERNELS_GGML_REFERENCE_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../../core/status.hpp"
#include "../../formats/types.hpp"
#include "../integer/reference.hpp"

namespace lowbit {

// Elements per ggml block.
inline constexpr std::size_t ggml_block_size = 32;

struct ggml_block_q4_0 {
  std::uint16_t d;        // fp16 scale
  std::uint8_t qs[16];    // low nibble of byte j: element j; high nibble: element j + 16
};
struct ggml_block_q8_0 {
  std::uint16_t d;        // fp16 scale
  std::int8_t qs[32];     // element j
};
static_assert(sizeof(ggml_block_q4_0) == 18, "block_q4_0 is 18 bytes");
static_assert(sizeof(ggml_block_q8_0) == 34, "block_q8_0 is 34 bytes");

namespace kernels {
namespace ggml_ref {

inline bool block_finite(const float* x) noexcept {
  for (std::size_t j = 0; j < ggml_block_size; ++j)
    if (!std::isfinite(x[j])) return false;
  return true;
}
// fp16 bits of a block scale; false when it overflows binary16 (ggml would store Inf).
inline bool scale_bits(float d, std::uint16_t* bits) noexcept {
  const float16 h = encode<float16>(d, overflow::non_saturate);
  *bits = h.bits();
  return !h.is_inf();
}
inline float scale_value(std::uint16_t bits) noexcept { return static_cast<float>(float16::from_bits(bits)); }

// quantize_row_q4_0_ref on `blocks` blocks (the contract is schemes/layouts/ggml.hpp's
// ggml_quantize_q4_0). x * id + 8.5 is two roundings, as ggml's reference and the AVX2 kernel
// compute it: no_contract keeps a compiler from fusing it into one FMA.
inline errc quantize_q4_0(const float* x, std::size_t blocks, ggml_block_q4_0* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * ggml_block_size;
    if (!block_finite(xb)) return errc::non_finite_input;
    float amax = 0.0f;
    float max = 0.0f;
    for (std::size_t j = 0; j < ggml_block_size; ++j)
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint16_t dbits = 0;
    if (!scale_bits(d, &dbits)) return errc::scale_overflow;
    ggml_block_q4_0 blk{};
    blk.d = dbits;
    for (std::size_t j = 0; j < 16; ++j) {
      int q[2];
      for (std::size_t h = 0; h < 2; ++h) {
        const float v = no_contract(xb[j + 16 * h] * id) + 8.5f;
        q[h] = v >= 15.0f ? 15 : v >= 0.0f ? static_cast<int>(v) : 0;  // trunc = floor here
      }
      blk.qs[j] = static_cast<std::uint8_t>(q[0] | q[1] << 4);
    }
    y[b] = blk;
  }
  return errc::ok;
}

// dequantize_row_q4_0: y[j] = (code(j) - 8) * d.
inline void dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const float d = scale_value(x[b].d);
    float* yb = y + b * ggml_block_size;
    for (std::size_t j = 0; j < 16; ++j) {
      yb[j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * d;
      yb[j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

// quantize_row_q8_0_ref: d = amax / 127, id = 1/d (0 when d is 0), q = roundf(x * id).
inline errc quantize_q8_0(const float* x, std::size_t blocks, ggml_block_q8_0* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * ggml_block_size;
    if (!block_finite(xb)) return errc::non_finite_input;
    float amax = 0.0f;
    for (std::size_t j = 0; j < ggml_block_size; ++j) amax = amax > std::fabs(xb[j]) ? amax : std::fabs(xb[j]);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint16_t dbits = 0;
    if (!scale_bits(d, &dbits)) return errc::scale_overflow;
    ggml_block_q8_0 blk{};
    blk.d = dbits;
    for (std::size_t j = 0; j < ggml_block_size; ++j) {
      const float r = std::round(xb[j] * id);  // half away from zero, like roundf
      blk.qs[j] = static_cast<std::int8_t>(r >= 127.0f ? 127 : r <= -127.0f ? -127 : r == r ? static_cast<int>(r) : 0);
    }
    y[b] = blk;
  }
  return errc::ok;
}

// dequantize_row_q8_0: y[j] = q[j] * d.
inline void dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    const float d = scale_value(x[b].d);
    for (std::size_t j = 0; j < ggml_block_size; ++j) y[b * ggml_block_size + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

}  // namespace ggml_ref
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_GGML_REFERENCE_HPP
