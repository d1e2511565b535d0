// lowbit: the jobs of the whole-matrix integer kernels (internal): what schemes/integer.hpp hands
// to the fused AVX2 paths (kernels/integer/avx2_{symmetric,affine,dequantize}.hpp). No SIMD here.
#ifndef LOWBIT_KERNELS_INTEGER_JOBS_HPP
#define LOWBIT_KERNELS_INTEGER_JOBS_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/rounding.hpp"
#include "reference.hpp"

namespace lowbit {
namespace kernels {

// What every whole-matrix quantization job reads and writes: groups of group_length consecutive
// values of x, their codes and their scales.
struct int_quantize_io {
  const float* x = nullptr;
  std::size_t group_length = 0;
  int code_max = 255;  // 2^b - 1
  scale_storage scale_format = scale_storage::fp32;
  rounding rm = rounding::nearest_even;
  const std::uint32_t* random_bits = nullptr;  // stochastic: one per element of x, else null
  std::uint8_t* codes = nullptr;  // one per byte, or (pack_nibbles) two per byte as pack_codes(4)
  bool pack_nibbles = false;      // needs code_max <= 15 and an even group_length
  float* scales = nullptr;        // one per group
};

// One call of quantize_symmetric: symmetric minmax scheme, scale = stored(amax / divisor), codes
// u = clamp(round(x / scale) + zero_point, code_min, code_max) (schemes/integer.hpp's
// make_int_codec and int_ref::quantize).
struct int_symmetric_job : int_quantize_io {
  float divisor = 1.0f;  // 2^(b-1) - 1 (restricted) or 2^(b-1) - 1/2 (full)
  int zero_point = 0;    // 2^(b-1)
  int code_min = 0;      // 1 for the restricted range, else 0
};

// One call of quantize_affine: affine minmax scheme (schemes/integer.hpp's make_int_codec and
// int_ref::quantize): [lo, hi] the group's range, widened to contain 0 for an integer zero-point
// when widen_to_zero or lo == hi; scale = stored((hi - lo) / code_max), computed in double; then an
// integer zero-point z = clamp(round_even(-lo / scale), 0, code_max) and codes
// u = clamp(round(x / scale) + z, 0, code_max), or (offset) a float offset m = stored(lo) and
// u = clamp(round((x - m) / scale), 0, code_max). A scale of 0 gives every code 0.
struct int_affine_job : int_quantize_io {
  bool offset = false;         // affine_offset (KIVI): a float offset instead of a zero-point
  bool widen_to_zero = true;   // integer zero-point: range_includes_zero
  float* zeros = nullptr;      // one per group: the zero-point as a float, or the offset
};

// One call of dequantize_groups: y = the values of the codes of consecutive groups, validating
// each group's stored parameters as schemes/integer.hpp's stored_int_codec does.
struct int_dequantize_job {
  const std::uint8_t* codes = nullptr;  // one per byte, or nibbles (packed_nibbles)
  bool packed_nibbles = false;          // needs an even group_length
  std::size_t group_length = 0;
  const float* scales = nullptr;
  const float* zeros = nullptr;      // null: symmetric with zero_point below; else per group
  bool zeros_are_offsets = false;    // affine_offset: x = u * s + m
  int zero_point = 0;                // symmetric
  int code_min = 0;                  // symmetric restricted: 1 (not checked, as the reference)
  int code_max = 255;
  scale_storage scale_format = scale_storage::fp32;
  float* y = nullptr;                // exactly one of y and y_bf16
  std::uint16_t* y_bf16 = nullptr;   // bfloat16 bits, nearest even, saturating (encode<bfloat16>)
};

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_INTEGER_JOBS_HPP
