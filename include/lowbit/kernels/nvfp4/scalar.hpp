// lowbit: the scalar reference of NVFP4 (NVIDIA's Blackwell 4-bit block format): its options
// (the tensor scale and the convention it is stored in, the roundings) and the per-block
// functions that define every result. The AVX2 kernels beside it (kernels/nvfp4/avx2.hpp) perform
// the same float32 operations in the same order and must write the same bytes;
// tests/test_kernels_block.cpp compares them. The formulas, conventions, special cases and the
// public bulk calls are described in schemes/nvfp4.hpp.
//
// Every formula is one multiplication or division per rounding, never a * b + c, so
// floating-point contraction (-ffp-contract=fast, FMA under -march=native) has nothing to fuse.
#ifndef LOWBIT_KERNELS_NVFP4_SCALAR_HPP
#define LOWBIT_KERNELS_NVFP4_SCALAR_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "../../core/packing.hpp"
#include "../../core/rounding.hpp"
#include "../../formats/types.hpp"
#include "../mx/scalar.hpp"

namespace lowbit {

inline constexpr std::size_t nvfp4_block_size = 16;
inline constexpr float nvfp4_tensor_scale_denominator = 2688.0f;  // 448 * 6
inline constexpr std::uint8_t nvfp4_nan_scale = 0x7F;              // E4M3 NaN
inline constexpr float nvfp4_min_tensor_scale = 0x1p-119f;
inline constexpr float nvfp4_max_tensor_scale = 0x1p119f;

// How a checkpoint stores the per-tensor scale.
enum class nvfp4_scale_convention : std::uint8_t {
  divisor,    // t = amax / 2688; x ~= q * scale_b * t (ModelOpt weight_scale_2, torchao)
  multiplier  // g = 2688 / amax; x ~= q * scale_b / g (compressed-tensors global_scale)
};

// Everything a quantizer and its dequantizer share; pass the same object to both. The defaults
// are single level (tensor scale 1) with NVIDIA's roundings.
struct nvfp4_options {
  // The tensor scale, in tensor_scale_convention: t (divisor) or g = 1 / t (multiplier). 1 is
  // single level. Must lie in [2^-119, 2^119] (nvfp4_valid_tensor_scale); compute it from the
  // data with nvfp4_compute_tensor_scale.
  float tensor_scale = 1.0f;
  nvfp4_scale_convention tensor_scale_convention = nvfp4_scale_convention::divisor;
  // Any mode but rounding::stochastic, for the E2M1 elements and for the E4M3 block scale.
  rounding element_rounding = rounding::nearest_even;
  rounding scale_rounding = rounding::nearest_even;
  // false: an element that rounds to zero is written as +0 even when the input is negative (ggml).
  bool signed_zero = true;
  // When set, a block holding NaN or Inf is still written as the NaN block but the call returns
  // errc::non_finite_input (after converting every block).
  bool non_finite_is_error = false;
};

// ---------------------------------------------------------------------------------------------
// The per-block reference. o must pass the bulk calls' options check (a valid tensor scale, no
// stochastic rounding); these functions do not check it.

// The E4M3 code of the block scale: amax(block) / 6 / t, in the convention's float32 arithmetic
// (see the header comment), rounded under o.scale_rounding and saturated at 448 (an overflowing
// target is 448 too). NaN or Inf block_amax gives nvfp4_nan_scale.
inline std::uint8_t nvfp4_block_scale(float block_amax, const nvfp4_options& o) noexcept {
  const float a = std::fabs(block_amax);
  if (!(a <= std::numeric_limits<float>::max())) return nvfp4_nan_scale;
  const float target = o.tensor_scale_convention == nvfp4_scale_convention::divisor
                           ? a / (6.0f * o.tensor_scale)
                           : (a / 6.0f) * o.tensor_scale;
  policy p;
  p.rm = o.scale_rounding;
  p.ov = overflow::saturate;
  return encode<float8_e4m3fn>(target, p).bits();
}

// D = scale_b * t (divisor) or scale_b / g (multiplier), one float32 operation. NaN for a NaN
// scale code.
inline float nvfp4_effective_scale(std::uint8_t scale_code, const nvfp4_options& o) noexcept {
  const float d = static_cast<float>(float8_e4m3fn::from_bits(scale_code));
  return o.tensor_scale_convention == nvfp4_scale_convention::divisor ? d * o.tensor_scale : d / o.tensor_scale;
}

// Quantizes 16 values (float or bfloat16) into 8 bytes of packed E2M1 codes; returns the E4M3
// block scale code.
template <class Src>
inline std::uint8_t nvfp4_quantize_block(const Src* x, const nvfp4_options& o, std::uint8_t* elements) noexcept {
  const detail::mx_amax_result a = detail::mx_block_amax(x, nvfp4_block_size);
  if (!a.finite) {
    for (std::size_t j = 0; j < nvfp4_block_size / 2; ++j) elements[j] = 0;
    return nvfp4_nan_scale;
  }
  const std::uint8_t scale = nvfp4_block_scale(a.amax, o);
  const float d = nvfp4_effective_scale(scale, o);
  policy p;
  p.rm = o.element_rounding;
  p.ov = overflow::saturate;  // x / D beyond 6, Inf included, becomes +-6
  std::uint8_t codes[nvfp4_block_size];
  for (std::size_t i = 0; i < nvfp4_block_size; ++i) {
    const float v = detail::mx_to_float(x[i]);
    // Scale 0: keep only the sign (v * 0 is +-0 for finite v).
    const std::uint8_t c = encode<float4_e2m1fn>(d > 0.0f ? v / d : v * 0.0f, p).bits();
    codes[i] = !o.signed_zero && c == 0x8u ? std::uint8_t{0} : c;
  }
  pack_nibbles(codes, elements, nvfp4_block_size);
  return scale;
}

// Decodes 16 values: out[i] = E2M1(code_i) * D in float32, then (bfloat16 output) rounded once
// to nearest even. Only the tensor scale and its convention are read from o.
template <class Dst>
inline void nvfp4_dequantize_block(const std::uint8_t* elements, std::uint8_t scale, const nvfp4_options& o,
                                   Dst* out) noexcept {
  const float d = nvfp4_effective_scale(scale, o);
  std::uint8_t codes[nvfp4_block_size];
  unpack_nibbles(elements, codes, nvfp4_block_size);
  for (std::size_t i = 0; i < nvfp4_block_size; ++i)
    detail::mx_store(out[i], static_cast<float>(float4_e2m1fn::from_bits(codes[i])) * d);
}

namespace kernels {
namespace block {

// ggml's block_nvfp4 (d[4], then qs[32]) seen as NVFP4 blocks of 16 (kernels/mx/scalar.hpp).
template <class Byte>
using nvfp4_ggml_layout = ggml_fp4_layout<Byte, 36, 4, 16>;

// The E4M3 code of ggml's scale byte d, as nvfp4_from_ggml reads it: 0x7F (ggml's zero) is 0x00,
// the top bit is ignored. 0xFF (ggml's 480) has no code; the callers reject it first.
constexpr std::uint8_t nvfp4_scale_from_ggml(std::uint8_t d) noexcept {
  return d == nvfp4_nan_scale ? std::uint8_t{0} : static_cast<std::uint8_t>(d & 0x7Fu);
}

// Whether the ggml block holding block b (b a multiple of 4) has the scale byte 0xFF.
template <class In>
inline bool nvfp4_ggml_scale_overflow(const In in, std::size_t b) noexcept {
  const std::uint8_t* d = in.scale_ptr(b);
  return d[0] == 0xFFu || d[1] == 0xFFu || d[2] == 0xFFu || d[3] == 0xFFu;
}

// The scalar bulk loops over whole blocks of 16, into or out of a planar_layout or an
// nvfp4_ggml_layout. Quantize returns whether a block held NaN or Inf (its scale is 0x7F in both
// layouts: nvfp4_to_ggml writes it so). Dequantize returns false when a ggml block holds the scale
// byte 0xFF (scale_overflow): the blocks before that ggml block are written, it and those after it
// are not.
template <class Src, class Out>
inline bool nvfp4_quantize_scalar(const Src* src, std::size_t blocks, const nvfp4_options& o, const Out out) noexcept {
  bool non_finite = false;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint8_t scale = 0;
    if constexpr (Out::split) {
      std::uint8_t planar[nvfp4_block_size / 2];
      scale = nvfp4_quantize_block(src + b * nvfp4_block_size, o, planar);
      fp4_planar_to_split(planar, out.element_ptr(b), nvfp4_block_size);
    } else {
      scale = nvfp4_quantize_block(src + b * nvfp4_block_size, o, out.element_ptr(b));
    }
    *out.scale_ptr(b) = scale;
    non_finite = non_finite || scale == nvfp4_nan_scale;
  }
  return non_finite;
}
template <class Src>
inline bool nvfp4_quantize_scalar(const Src* src, std::size_t blocks, const nvfp4_options& o, std::uint8_t* elements,
                                  std::uint8_t* scales) noexcept {
  return nvfp4_quantize_scalar(src, blocks, o, planar_layout<std::uint8_t>{elements, scales, nvfp4_block_size / 2});
}

template <class In, class Dst>
inline bool nvfp4_dequantize_scalar(const In in, std::size_t blocks, const nvfp4_options& o, Dst* dst) noexcept {
  for (std::size_t b = 0; b < blocks; ++b) {
    if constexpr (In::split) {
      if (b % In::sub_blocks == 0 && nvfp4_ggml_scale_overflow(in, b)) return false;
      std::uint8_t planar[nvfp4_block_size / 2];
      fp4_split_to_planar(in.element_ptr(b), planar, nvfp4_block_size);
      nvfp4_dequantize_block(planar, nvfp4_scale_from_ggml(*in.scale_ptr(b)), o, dst + b * nvfp4_block_size);
    } else {
      nvfp4_dequantize_block(in.element_ptr(b), *in.scale_ptr(b), o, dst + b * nvfp4_block_size);
    }
  }
  return true;
}
template <class Dst>
inline void nvfp4_dequantize_scalar(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t blocks,
                                    const nvfp4_options& o, Dst* dst) noexcept {
  (void)nvfp4_dequantize_scalar(planar_layout<const std::uint8_t>{elements, scales, nvfp4_block_size / 2}, blocks, o,
                                dst);
}

}  // namespace block
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_NVFP4_SCALAR_HPP
