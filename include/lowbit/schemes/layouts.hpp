// lowbit: storage layouts of integer codes, and the checkpoint formats that engines read.
//
// A "code" here is the unsigned b-bit value an engine stores (0..2^b-1): the integer schemes of
// schemes/integer.hpp produce exactly these (symmetric codes in offset binary, q + 2^(b-1)).
// docs/integer-schemes.md draws every layout below.
//
//   bit stream    code k at bits b*k .. b*k+b-1 of a little-endian stream (lowbit's own layout;
//                 for b = 4 it is "sequential nibbles", core/packing.hpp, and for b = 6 it is
//                 core/packing.hpp's sextets).
//   GPTQ          qweight uint32 [in*b/32, out]: 32/b codes per word along `in`, low bits first;
//                 qzeros uint32 [groups, out*b/32] packed the same way along `out`, storing
//                 zero-1 (format v1: AutoGPTQ and most checkpoints) or the zero (v2: GPTQModel).
//   AWQ (GEMM)    qweight uint32 [in, out/8]: 8 codes per word along `out`, in the interleaved
//                 order awq_order; qzeros uint32 [groups, out/8] the same way (true zero).
//   ggml Q4_0     32-element blocks {fp16 d; 16 bytes}: byte j = code(j) | code(j+16) << 4.
//   ggml Q8_0     32-element blocks {fp16 d; 32 int8}.
//
// Nothing here allocates or throws; every function that can reject its input returns a status.
// The ggml block functions run AVX2 kernels when lowbit::active_isa() selects them
// (kernels/integer_dispatch.hpp); the loops below are the reference, and both give the same bytes.
#ifndef LOWBIT_SCHEMES_LAYOUTS_HPP
#define LOWBIT_SCHEMES_LAYOUTS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../core/packing.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/integer_dispatch.hpp"

namespace lowbit {

// ---------------------------------------------------------------------------------------------
// Little-endian bit stream, any width 1..8.

// Packs n codes of `bits` bits (1..8) into packed_bytes(n, bits) bytes: code k occupies bits
// b*k .. b*k+b-1 of the stream b0 | b1 << 8 | b2 << 16 | ...; unused high bits of the last byte
// are zero. Codes must fit in `bits` bits (errc::bad_argument otherwise; nothing is written).
[[nodiscard]] inline status pack_codes(const std::uint8_t* codes, std::size_t n, int bits,
                                       std::uint8_t* out) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (n == 0) return status{};
  if (codes == nullptr || out == nullptr) return errc::bad_argument;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i)
    if ((codes[i] & ~mask) != 0) return errc::bad_argument;
  if (bits == 4) {
    pack_nibbles(codes, out, n);  // the same stream, two codes per byte
    return status{};
  }
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) out[i] = codes[i];
    return status{};
  }
  const std::size_t nbytes = packed_bytes(n, bits);
  for (std::size_t i = 0; i < nbytes; ++i) out[i] = 0;
  const std::size_t b = static_cast<std::size_t>(bits);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = b * i;
    const unsigned shift = static_cast<unsigned>(bit % 8u);
    const unsigned v = codes[i];
    out[bit / 8u] = static_cast<std::uint8_t>(out[bit / 8u] | ((v << shift) & 0xFFu));
    if (shift + b > 8u) out[bit / 8u + 1u] = static_cast<std::uint8_t>(out[bit / 8u + 1u] | (v >> (8u - shift)));
  }
  return status{};
}

// Reads codes first .. first+n-1 of a stream written by pack_codes (any starting position, so a
// group or a row can be read without unpacking what precedes it).
[[nodiscard]] inline status unpack_codes(const std::uint8_t* packed, std::size_t first, std::size_t n, int bits,
                                         std::uint8_t* codes) noexcept {
  if (bits < 1 || bits > 8) return errc::bad_bit_width;
  if (n == 0) return status{};
  if (packed == nullptr || codes == nullptr) return errc::bad_argument;
  if (bits == 4 && first % 2 == 0) {
    unpack_nibbles(packed + first / 2, codes, n);
    return status{};
  }
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) codes[i] = packed[first + i];
    return status{};
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
  return status{};
}

// ---------------------------------------------------------------------------------------------
// GPTQ checkpoints (AutoGPTQ / GPTQModel / vLLM "gptq" loaders), for widths that divide 32.
// Weights are [out, in] row-major codes, as lowbit's per-group schemes lay them out.

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
}  // namespace detail

// qweight[r][o] (r < in*bits/32) holds codes[o][r*k + j] at bits bits*j, k = 32/bits.
// in_features must be a multiple of k (errc::bad_block_size).
[[nodiscard]] inline status gptq_pack_qweight(const std::uint8_t* codes, std::size_t out_features,
                                              std::size_t in_features, int bits, std::uint32_t* qweight) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (out_features == 0 || in_features == 0) return errc::empty_input;
  if (in_features % k != 0) return errc::bad_block_size;
  if (codes == nullptr || qweight == nullptr) return errc::bad_argument;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < out_features * in_features; ++i)
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

[[nodiscard]] inline status gptq_unpack_qweight(const std::uint32_t* qweight, std::size_t out_features,
                                                std::size_t in_features, int bits, std::uint8_t* codes) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (out_features == 0 || in_features == 0) return errc::empty_input;
  if (in_features % k != 0) return errc::bad_block_size;
  if (codes == nullptr || qweight == nullptr) return errc::bad_argument;
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
// qzeros[g][w] holds the stored zero of output channel w*k + j at bits bits*j.
// out_features must be a multiple of k = 32/bits (errc::bad_block_size).
[[nodiscard]] inline status gptq_pack_qzeros(const std::uint8_t* zeros, std::size_t out_features, std::size_t groups,
                                             int bits, gptq_format fmt, std::uint32_t* qzeros) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (out_features == 0 || groups == 0) return errc::empty_input;
  if (out_features % k != 0) return errc::bad_block_size;
  if (zeros == nullptr || qzeros == nullptr) return errc::bad_argument;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < out_features * groups; ++i) {
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
// code range (what an AutoGPTQ zero of 0 turned into): errc::bad_argument.
[[nodiscard]] inline status gptq_unpack_qzeros(const std::uint32_t* qzeros, std::size_t out_features,
                                               std::size_t groups, int bits, gptq_format fmt,
                                               std::uint8_t* zeros) noexcept {
  if (status s = detail::check_word_width(bits); !s) return s;
  const std::size_t k = 32u / static_cast<std::size_t>(bits);
  if (out_features == 0 || groups == 0) return errc::empty_input;
  if (out_features % k != 0) return errc::bad_block_size;
  if (zeros == nullptr || qzeros == nullptr) return errc::bad_argument;
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
// g_idx[i] = i / group_size.
[[nodiscard]] inline status gptq_g_idx(std::size_t in_features, std::size_t group_size, std::int32_t* g_idx) noexcept {
  if (in_features == 0) return errc::empty_input;
  if (group_size == 0 || in_features % group_size != 0) return errc::bad_group_size;
  if (g_idx == nullptr) return errc::bad_argument;
  if (in_features / group_size > 0x7FFFFFFFu) return errc::bad_argument;
  for (std::size_t i = 0; i < in_features; ++i) g_idx[i] = static_cast<std::int32_t>(i / group_size);
  return status{};
}

// Checkpoints store scales (and float zeros) as [groups, out]; lowbit keeps them [out, groups].
// Writes dst[c][r] = src[r][c] for a [rows, cols] source.
[[nodiscard]] inline status transpose_group_params(const float* src, std::size_t rows, std::size_t cols,
                                                   float* dst) noexcept {
  if (rows == 0 || cols == 0) return errc::empty_input;
  if (src == nullptr || dst == nullptr) return errc::bad_argument;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  return status{};
}

// ---------------------------------------------------------------------------------------------
// AWQ GEMM checkpoints (AutoAWQ "GEMM" version, read by vLLM's awq loaders): 4-bit only.
// Words run along `out`; slot i (bits 4i..4i+3) of word w holds output channel 8w + awq_order[i].

inline constexpr int awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
// The slot of output channel 8w + c: the inverse permutation.
inline constexpr int awq_reverse_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};

namespace detail {
// Packs a [rows, cols] matrix whose rows run along the AWQ word direction: src(r, c) is the code
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
}  // namespace detail

// codes is [out, in]; qweight is [in, out/8]. out_features must be a multiple of 8.
[[nodiscard]] inline status awq_pack_qweight(const std::uint8_t* codes, std::size_t out_features,
                                             std::size_t in_features, std::uint32_t* qweight) noexcept {
  if (out_features == 0 || in_features == 0) return errc::empty_input;
  if (out_features % 8 != 0) return errc::bad_block_size;
  if (codes == nullptr || qweight == nullptr) return errc::bad_argument;
  for (std::size_t i = 0; i < out_features * in_features; ++i)
    if (codes[i] > 15) return errc::bad_argument;
  detail::awq_pack_rows(
      in_features, out_features, [&](std::size_t k, std::size_t o) { return codes[o * in_features + k]; }, qweight);
  return status{};
}

[[nodiscard]] inline status awq_unpack_qweight(const std::uint32_t* qweight, std::size_t out_features,
                                               std::size_t in_features, std::uint8_t* codes) noexcept {
  if (out_features == 0 || in_features == 0) return errc::empty_input;
  if (out_features % 8 != 0) return errc::bad_block_size;
  if (codes == nullptr || qweight == nullptr) return errc::bad_argument;
  for (std::size_t k = 0; k < in_features; ++k)
    for (std::size_t w = 0; w < out_features / 8; ++w) {
      const std::uint32_t word = qweight[k * (out_features / 8) + w];
      for (unsigned i = 0; i < 8; ++i)
        codes[(w * 8 + static_cast<std::size_t>(awq_order[i])) * in_features + k] =
            static_cast<std::uint8_t>((word >> (4u * i)) & 0xFu);
    }
  return status{};
}

// zeros is [out, groups] (true zero-points, 0..15); qzeros is [groups, out/8].
[[nodiscard]] inline status awq_pack_qzeros(const std::uint8_t* zeros, std::size_t out_features, std::size_t groups,
                                            std::uint32_t* qzeros) noexcept {
  if (out_features == 0 || groups == 0) return errc::empty_input;
  if (out_features % 8 != 0) return errc::bad_block_size;
  if (zeros == nullptr || qzeros == nullptr) return errc::bad_argument;
  for (std::size_t i = 0; i < out_features * groups; ++i)
    if (zeros[i] > 15) return errc::bad_argument;
  detail::awq_pack_rows(
      groups, out_features, [&](std::size_t g, std::size_t o) { return zeros[o * groups + g]; }, qzeros);
  return status{};
}

[[nodiscard]] inline status awq_unpack_qzeros(const std::uint32_t* qzeros, std::size_t out_features,
                                              std::size_t groups, std::uint8_t* zeros) noexcept {
  if (out_features == 0 || groups == 0) return errc::empty_input;
  if (out_features % 8 != 0) return errc::bad_block_size;
  if (zeros == nullptr || qzeros == nullptr) return errc::bad_argument;
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t w = 0; w < out_features / 8; ++w) {
      const std::uint32_t word = qzeros[g * (out_features / 8) + w];
      for (unsigned i = 0; i < 8; ++i)
        zeros[(w * 8 + static_cast<std::size_t>(awq_order[i])) * groups + g] =
            static_cast<std::uint8_t>((word >> (4u * i)) & 0xFu);
    }
  return status{};
}

// ---------------------------------------------------------------------------------------------
// ggml / llama.cpp Q4_0 and Q8_0 blocks (ggml-common.h). `d` holds the IEEE binary16 bits of the
// block scale; on a little-endian host these structs have the byte layout of GGUF tensor data.

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

namespace detail {
inline status check_ggml_args(const void* a, const void* b, std::size_t n) noexcept {
  if (n == 0) return errc::empty_input;
  if (n % ggml_block_size != 0) return errc::bad_block_size;
  if (a == nullptr || b == nullptr) return errc::bad_argument;
  return status{};
}
inline bool block_finite(const float* x) noexcept {
  for (std::size_t j = 0; j < ggml_block_size; ++j)
    if (!std::isfinite(x[j])) return false;
  return true;
}
// fp16 bits of a block scale; false when it overflows binary16 (ggml would store Inf).
inline bool ggml_scale_bits(float d, std::uint16_t* bits) noexcept {
  const float16 h = encode<float16>(d, overflow::non_saturate);
  *bits = h.bits();
  return !h.is_inf();
}
inline float ggml_scale_value(std::uint16_t bits) noexcept { return static_cast<float>(float16::from_bits(bits)); }
}  // namespace detail

// quantize_row_q4_0_ref, bit for bit: per block, max = the element of largest magnitude (the
// first one on ties), d = max / -8 in FP32, id = 1/d (0 when d is 0), code = min(15,
// trunc(x*id + 8.5)) (round half up of x*id, computed against the FP32 d, not the stored fp16 d),
// d stored as fp16 (round to nearest even). Differences from ggml, all on input ggml leaves
// undefined: NaN/Inf in a block is errc::non_finite_input (nothing written for that block and
// the ones after it); a scale beyond fp16's range is errc::scale_overflow (ggml stores Inf); an id
// that overflows to Inf (|max| < 2^-125) gives codes clamped to 0..15 instead of an undefined
// conversion. n must be a multiple of 32.
[[nodiscard]] inline status ggml_quantize_q4_0(const float* x, std::size_t n, ggml_block_q4_0* y) noexcept {
  if (status s = detail::check_ggml_args(x, y, n); !s) return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  if (errc e = errc::ok; kernels::try_ggml_quantize_q4_0(x, n / ggml_block_size, y, &e)) return e;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float* xb = x + b * ggml_block_size;
    if (!detail::block_finite(xb)) return errc::non_finite_input;
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
    if (!detail::ggml_scale_bits(d, &dbits)) return errc::scale_overflow;
    ggml_block_q4_0 blk{};
    blk.d = dbits;
    for (std::size_t j = 0; j < 16; ++j) {
      int q[2];
      for (int h = 0; h < 2; ++h) {
        const float v = xb[j + 16 * static_cast<std::size_t>(h)] * id + 8.5f;
        q[h] = v >= 15.0f ? 15 : v >= 0.0f ? static_cast<int>(v) : 0;  // trunc = floor here
      }
      blk.qs[j] = static_cast<std::uint8_t>(q[0] | q[1] << 4);
    }
    y[b] = blk;
  }
  return status{};
}

// dequantize_row_q4_0: y[j] = (code(j) - 8) * d.
[[nodiscard]] inline status ggml_dequantize_q4_0(const ggml_block_q4_0* x, std::size_t n, float* y) noexcept {
  if (status s = detail::check_ggml_args(x, y, n); !s) return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  if (kernels::try_ggml_dequantize_q4_0(x, n / ggml_block_size, y)) return status{};
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float d = detail::ggml_scale_value(x[b].d);
    float* yb = y + b * ggml_block_size;
    for (std::size_t j = 0; j < 16; ++j) {
      yb[j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * d;
      yb[j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
  return status{};
}

// quantize_row_q8_0_ref, bit for bit: d = amax / 127 in FP32, id = 1/d (0 when d is 0),
// q = roundf(x * id) (round half away from zero), d stored as fp16. Same differences from ggml
// as ggml_quantize_q4_0 (q is clamped to -127..127 where ggml's conversion would be undefined).
[[nodiscard]] inline status ggml_quantize_q8_0(const float* x, std::size_t n, ggml_block_q8_0* y) noexcept {
  if (status s = detail::check_ggml_args(x, y, n); !s) return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  if (errc e = errc::ok; kernels::try_ggml_quantize_q8_0(x, n / ggml_block_size, y, &e)) return e;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float* xb = x + b * ggml_block_size;
    if (!detail::block_finite(xb)) return errc::non_finite_input;
    float amax = 0.0f;
    for (std::size_t j = 0; j < ggml_block_size; ++j) amax = amax > std::fabs(xb[j]) ? amax : std::fabs(xb[j]);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint16_t dbits = 0;
    if (!detail::ggml_scale_bits(d, &dbits)) return errc::scale_overflow;
    ggml_block_q8_0 blk{};
    blk.d = dbits;
    for (std::size_t j = 0; j < ggml_block_size; ++j) {
      const float r = std::round(xb[j] * id);  // half away from zero, like roundf
      blk.qs[j] = static_cast<std::int8_t>(r >= 127.0f ? 127 : r <= -127.0f ? -127 : r == r ? static_cast<int>(r) : 0);
    }
    y[b] = blk;
  }
  return status{};
}

// dequantize_row_q8_0: y[j] = q[j] * d.
[[nodiscard]] inline status ggml_dequantize_q8_0(const ggml_block_q8_0* x, std::size_t n, float* y) noexcept {
  if (status s = detail::check_ggml_args(x, y, n); !s) return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  if (kernels::try_ggml_dequantize_q8_0(x, n / ggml_block_size, y)) return status{};
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float d = detail::ggml_scale_value(x[b].d);
    for (std::size_t j = 0; j < ggml_block_size; ++j)
      y[b * ggml_block_size + j] = static_cast<float>(x[b].qs[j]) * d;
  }
  return status{};
}

// Writing and reading blocks from lowbit codes: `codes` are 4-bit codes in offset binary (the
// element is (code - 8) * d, lowbit's symmetric INT4 with zero-point 8) and `scales` holds one
// value per block that must be exactly representable in fp16 (errc::bad_argument otherwise), as
// lowbit's schemes produce with scale_storage::float16. Round trips are exact both ways.
[[nodiscard]] inline status ggml_pack_q4_0(const std::uint8_t* codes, const float* scales, std::size_t n,
                                           ggml_block_q4_0* y) noexcept {
  if (status s = detail::check_ggml_args(codes, y, n); !s) return s;
  if (scales == nullptr) return errc::bad_argument;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float16 h = encode<float16>(scales[b], overflow::non_saturate);
    if (!(static_cast<float>(h) == scales[b])) return errc::bad_argument;
    const std::uint8_t* cb = codes + b * ggml_block_size;
    for (std::size_t j = 0; j < ggml_block_size; ++j)
      if (cb[j] > 15) return errc::bad_argument;
    y[b].d = h.bits();
    for (std::size_t j = 0; j < 16; ++j) y[b].qs[j] = static_cast<std::uint8_t>(cb[j] | cb[j + 16] << 4);
  }
  return status{};
}

[[nodiscard]] inline status ggml_unpack_q4_0(const ggml_block_q4_0* x, std::size_t n, std::uint8_t* codes,
                                             float* scales) noexcept {
  if (status s = detail::check_ggml_args(x, codes, n); !s) return s;
  if (scales == nullptr) return errc::bad_argument;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    scales[b] = detail::ggml_scale_value(x[b].d);
    std::uint8_t* cb = codes + b * ggml_block_size;
    for (std::size_t j = 0; j < 16; ++j) {
      cb[j] = static_cast<std::uint8_t>(x[b].qs[j] & 0x0F);
      cb[j + 16] = static_cast<std::uint8_t>(x[b].qs[j] >> 4);
    }
  }
  return status{};
}

// Q8_0 from lowbit's symmetric INT8 codes: code = q + 128 (offset binary), so q = code - 128.
[[nodiscard]] inline status ggml_pack_q8_0(const std::uint8_t* codes, const float* scales, std::size_t n,
                                           ggml_block_q8_0* y) noexcept {
  if (status s = detail::check_ggml_args(codes, y, n); !s) return s;
  if (scales == nullptr) return errc::bad_argument;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    const float16 h = encode<float16>(scales[b], overflow::non_saturate);
    if (!(static_cast<float>(h) == scales[b])) return errc::bad_argument;
    y[b].d = h.bits();
    for (std::size_t j = 0; j < ggml_block_size; ++j)
      y[b].qs[j] = static_cast<std::int8_t>(static_cast<int>(codes[b * ggml_block_size + j]) - 128);
  }
  return status{};
}

[[nodiscard]] inline status ggml_unpack_q8_0(const ggml_block_q8_0* x, std::size_t n, std::uint8_t* codes,
                                             float* scales) noexcept {
  if (status s = detail::check_ggml_args(x, codes, n); !s) return s;
  if (scales == nullptr) return errc::bad_argument;
  for (std::size_t b = 0; b < n / ggml_block_size; ++b) {
    scales[b] = detail::ggml_scale_value(x[b].d);
    for (std::size_t j = 0; j < ggml_block_size; ++j)
      codes[b * ggml_block_size + j] = static_cast<std::uint8_t>(x[b].qs[j] + 128);
  }
  return status{};
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_LAYOUTS_HPP
