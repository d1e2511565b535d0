// lowbit: NVFP4, NVIDIA's Blackwell 4-bit block format. Blocks of 16 E2M1 elements share one
// E4M3 block scale; a tensor shares one FP32 tensor scale t.
//
//   t        = amax(tensor) / (448 * 6)                    (448: E4M3 max, 6: E2M1 max)
//   scale_b  = E4M3(amax(block) / 6 / t)                   nearest-even, saturating at 448
//   D_b      = scale_b * t                                 the block's effective scale
//   q_i      = E2M1(x_i / D_b)                             nearest-even, saturating at +-6
//   x_i     ~= q_i * D_b
//
// Single-level mode is t = 1 (the default nvfp4_options): scale_b = E4M3(amax(block) / 6). That is the
// lesson's toy example and what ggml's quantizer does.
//
// The tensor scale is stored either as the divisor t (ModelOpt weight_scale_2 / input_scale,
// torchao per_tensor_scale) or as its reciprocal multiplier g = 1 / t = 2688 / amax
// (compressed-tensors weight_global_scale / input_global_scale). The two hold the same
// information, and reading one as the other is a known interop bug, so nvfp4_options holds the
// tensor scale together with the convention it is stored in, and the same options object goes to
// the quantizer and the dequantizer. Each convention is computed with its producer's
// float32 arithmetic, which is the definition the SIMD kernels must match bit for bit:
//
//   divisor    (ModelOpt)           target = block_amax / (6 * t)     D = scale_b * t
//   multiplier (compressed-tensors) target = (block_amax / 6) * g     D = scale_b / g
//   both                            q_i = E2M1(x_i / D)               x_i ~= q_i * D
//
// Being float32 arithmetic, these would depend on FTZ/DAZ where an intermediate is a float
// subnormal (subnormal inputs, or tensor scales far below 2^-100), so the bulk functions run in
// the IEEE default environment (kernels/fp_env.hpp) whatever the caller's MXCSR; the per-block
// functions, called directly, follow the caller's environment. MX is integer-only and needs none.
// Every formula above is one multiplication or division per rounding, never a * b + c, so
// floating-point contraction (-ffp-contract=fast, FMA under -march=native) has nothing to fuse:
// the scalar reference gives the same bytes under any compiler flags (tests/test_kernels_block
// compares it with the AVX2 kernels in a -march=native -ffp-contract=fast build).
//
// Special cases:
//  - A block holding NaN or Inf gets the E4M3 NaN scale 0x7F and element codes 0; it decodes to
//    NaN everywhere (0 * NaN = NaN). The call succeeds unless non_finite_is_error is set.
//  - A block whose scale rounds to 0 (an all-zero block, or amax(block) / 6 / t below 2^-10)
//    gets scale 0x00 and elements of +-0 (the input's sign): it decodes to zeros, never 0/0.
//    (ModelOpt writes scale 1.0 for such blocks and compressed-tensors 0.125; both decode to
//    zeros for an all-zero block, but not for a tiny nonzero one.)
//  - An all-zero tensor gets t = 1 (g = 1), as ModelOpt does, so no scale is 0 or Inf.
//  - Tensor scales are limited to [2^-119, 2^119] in either convention, which keeps every D
//    finite and nonzero; one computed from amax is clamped into that range (it only matters for
//    amax below 2^-107) and one passed in outside it is errc::bad_argument.
//
// Storage (planar, as ModelOpt and compressed-tensors export it): elements packed two per byte,
// first in the low nibble (n / 2 bytes); one E4M3 code per 16 elements (n / 16 bytes); the FP32
// tensor scale: 4 + 8/16 = 4.5 bits per element plus 4 bytes per tensor. ggml's interleaved
// block_nvfp4 is written and read directly by nvfp4_quantize_ggml / nvfp4_dequantize_ggml (the
// same kernels), and converted from and to the planar arrays by nvfp4_to_ggml / nvfp4_from_ggml.
//
// nvfp4_options and the per-block functions that define the results live in
// kernels/nvfp4/scalar.hpp beside their AVX2 twins (kernels/nvfp4/avx2.hpp); this header adds the
// presets, the tensor scale, the checked bulk calls, byte accounting and ggml interop.
#ifndef LOWBIT_SCHEMES_NVFP4_HPP
#define LOWBIT_SCHEMES_NVFP4_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/packing.hpp"
#include "../core/rounding.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/nvfp4/avx2.hpp"
#include "../kernels/nvfp4/avx512.hpp"
#include "../kernels/nvfp4/scalar.hpp"
#include "mx.hpp"

namespace lowbit {

namespace nvfp4_presets {
// ModelOpt, torchao and compressed-tensors: ties to even for both (set the tensor scale and its
// convention from the checkpoint, or compute it).
constexpr nvfp4_options nvidia() noexcept { return nvfp4_options{}; }
// ggml quantize_row_nvfp4_ref (single level): the UE4M3 scale rounds half up (ties away for a
// positive value) and the element search keeps the first best, so ties go to the smaller
// magnitude, and never -0. Two ggml quirks are not copied: a scale in [256, 448) becomes 448,
// and one in [7.5, 8) * 2^-9 becomes 7 * 2^-9.
constexpr nvfp4_options ggml() noexcept {
  nvfp4_options o;
  o.element_rounding = rounding::nearest_toward_zero;
  o.scale_rounding = rounding::nearest_away;
  o.signed_zero = false;
  return o;
}
}  // namespace nvfp4_presets

// ---------------------------------------------------------------------------------------------
// The tensor scale.

// Whether t can be used: a float in [2^-119, 2^119] (NaN, Inf, zero and negatives are not).
constexpr bool nvfp4_valid_tensor_scale(float t) noexcept {
  return t >= nvfp4_min_tensor_scale && t <= nvfp4_max_tensor_scale;
}

// The tensor scale for a tensor whose largest finite magnitude is amax, in
// o.tensor_scale_convention: amax / 2688 or 2688 / amax (one float32 division), 1 when amax is
// 0, clamped into [2^-119, 2^119]. Errors: bad_argument (a convention out of range), then
// non_finite_input (NaN or Inf amax).
[[nodiscard]] inline result<float> nvfp4_tensor_scale_from_amax(float amax, const nvfp4_options& o) noexcept {
  result<float> r;
  if (static_cast<unsigned>(o.tensor_scale_convention) > 1u) {
    r.status = errc::bad_argument;
    return r;
  }
  const float a = std::fabs(amax);
  if (!(a <= std::numeric_limits<float>::max())) {
    r.status = errc::non_finite_input;
    return r;
  }
  float v = 1.0f;
  if (a > 0.0f)
    v = o.tensor_scale_convention == nvfp4_scale_convention::divisor ? a / nvfp4_tensor_scale_denominator
                                                                     : nvfp4_tensor_scale_denominator / a;
  if (v < nvfp4_min_tensor_scale) v = nvfp4_min_tensor_scale;
  if (v > nvfp4_max_tensor_scale) v = nvfp4_max_tensor_scale;
  r.value = v;
  return r;
}

// The tensor scale of n values (float or bfloat16), from their largest finite magnitude, in
// o.tensor_scale_convention (the other fields of o are not read); non-finite values are skipped
// (their blocks become NaN blocks when quantized). Errors, in order: bad_argument (a convention
// out of range), empty_input (n = 0), bad_argument (null src), misaligned.
//
//   lowbit::nvfp4_options o;
//   o.tensor_scale = lowbit::nvfp4_compute_tensor_scale(x, n, o).value;  // check .status first
template <class Src>
[[nodiscard]] inline result<float> nvfp4_compute_tensor_scale(const Src* src, std::size_t n,
                                                              const nvfp4_options& o) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  result<float> r;
  if (static_cast<unsigned>(o.tensor_scale_convention) > 1u) {
    r.status = errc::bad_argument;
  } else if (n == 0) {
    r.status = errc::empty_input;
  } else if (src == nullptr) {  // what check_buffers says too; spelled out so that g++ -O3 sees
    r.status = errc::bad_argument;  // the read below is unreachable (no -Warray-bounds)
  } else {
    r.status = detail::check_buffers({detail::buffer_of(src, n)}, {});
  }
  if (!r.ok()) return r;
  return nvfp4_tensor_scale_from_amax(detail::mx_block_amax(src, n).amax, o);
}
[[nodiscard]] inline result<float> nvfp4_compute_tensor_scale(span<const float> src, const nvfp4_options& o) noexcept {
  return nvfp4_compute_tensor_scale(src.data(), src.size(), o);
}
[[nodiscard]] inline result<float> nvfp4_compute_tensor_scale(span<const bfloat16> src,
                                                              const nvfp4_options& o) noexcept {
  return nvfp4_compute_tensor_scale(src.data(), src.size(), o);
}

// o with its tensor scale stored in convention c: 1 / tensor_scale, rounded to float (so
// converting twice need not give back the same float), clamped into the valid range.
[[nodiscard]] inline nvfp4_options nvfp4_to_convention(const nvfp4_options& o, nvfp4_scale_convention c) noexcept {
  if (o.tensor_scale_convention == c) return o;
  nvfp4_options r = o;
  float v = 1.0f / o.tensor_scale;
  if (v < nvfp4_min_tensor_scale) v = nvfp4_min_tensor_scale;
  if (v > nvfp4_max_tensor_scale) v = nvfp4_max_tensor_scale;
  r.tensor_scale = v;
  r.tensor_scale_convention = c;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Bulk conversion: flat arrays and row-major matrices [rows, cols] blocked along cols. The checks
// of docs/api.md, in its order; every one of them is made before anything is written:
//   options  bad_argument (a tensor scale outside [2^-119, 2^119], a convention or rounding out
//            of range, a stochastic rounding)
//   shape    bad_block_size (n, or cols, not a multiple of 16), bad_argument (a size that
//            overflows size_t)
//   empty    n = 0 (rows or cols 0) is ok and writes nothing; its pointers may be null
//   buffers  bad_argument (null), misaligned (a pointer not aligned to its type),
//            overlapping_buffers (an output overlapping an input or the other output)
//   data     non_finite_input only with non_finite_is_error, after every block is written

namespace detail {

// The options, shape and empty checks; *n receives rows * cols. ok with *n = 0: write nothing.
template <class Value>
constexpr status nvfp4_check_shape(std::size_t rows, std::size_t cols, const nvfp4_options& o,
                                   std::size_t* n) noexcept {
  if (!nvfp4_valid_tensor_scale(o.tensor_scale) || static_cast<unsigned>(o.tensor_scale_convention) > 1u ||
      !mx_valid_rounding(o.element_rounding) || !mx_valid_rounding(o.scale_rounding))
    return errc::bad_argument;
  if (cols % nvfp4_block_size != 0) return errc::bad_block_size;
  std::size_t bytes = 0;
  if (!checked_mul(rows, cols, n) || !checked_mul(*n, sizeof(Value), &bytes)) return errc::bad_argument;
  return errc::ok;
}

template <class Value>
inline status nvfp4_check_buffers(const Value* values, bool values_written, const std::uint8_t* elements,
                                  const std::uint8_t* scales, std::size_t n) noexcept {
  const buffer v = buffer_of(values, n);
  const buffer e = buffer_of(elements, packed_bytes(n, 4));
  const buffer s = buffer_of(scales, n / nvfp4_block_size);
  return values_written ? check_buffers({e, s}, {v}) : check_buffers({v}, {e, s});
}

template <class Src>
inline status nvfp4_quantize_impl(const Src* src, std::size_t rows, std::size_t cols, const nvfp4_options& o,
                                  std::uint8_t* elements, std::uint8_t* scales) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  std::size_t n = 0;
  status st = nvfp4_check_shape<Src>(rows, cols, o, &n);
  if (!st || n == 0) return st;
  st = nvfp4_check_buffers(src, false, elements, scales, n);
  if (!st) return st;
  // Both paths run in the IEEE default environment, so the bytes do not depend on the caller's
  // MXCSR (FTZ/DAZ would otherwise flush subnormal effective scales).
  const kernels::ieee_scope env;
  bool nan_block = false;
#if LOWBIT_HAS_AVX512_KERNELS
  if (use_avx512()) {
    nan_block = kernels::block::avx512::nvfp4_quantize(src, n, o, elements, scales);
  } else
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  // The AVX2 and AVX-512 kernels (kernels/nvfp4/avx2.hpp, avx512.hpp) perform the same float32
  // operations as the reference loop (kernels/nvfp4/scalar.hpp) and write the same bytes.
  if (use_avx2()) {
    nan_block = kernels::block::avx2::nvfp4_quantize(src, n, o, elements, scales);
  } else
#endif
  {
    nan_block = kernels::block::nvfp4_quantize_scalar(src, n / nvfp4_block_size, o, elements, scales);
  }
  return nan_block && o.non_finite_is_error ? status{errc::non_finite_input} : status{errc::ok};
}

template <class Dst>
inline status nvfp4_dequantize_impl(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t rows,
                                    std::size_t cols, const nvfp4_options& o, Dst* dst) noexcept {
  static_assert(std::is_same<Dst, float>::value || std::is_same<Dst, bfloat16>::value, "float or bfloat16 output");
  std::size_t n = 0;
  status st = nvfp4_check_shape<Dst>(rows, cols, o, &n);
  if (!st || n == 0) return st;
  st = nvfp4_check_buffers(dst, true, elements, scales, n);
  if (!st) return st;
  const kernels::ieee_scope env;  // see nvfp4_quantize_impl
#if LOWBIT_HAS_AVX512_KERNELS
  if (use_avx512()) {
    kernels::block::avx512::nvfp4_dequantize(elements, scales, n, o, dst);
    return errc::ok;
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2()) {
    kernels::block::avx2::nvfp4_dequantize(elements, scales, n, o, dst);
    return errc::ok;
  }
#endif
  kernels::block::nvfp4_dequantize_scalar(elements, scales, n / nvfp4_block_size, o, dst);
  return errc::ok;
}

// The options and shape checks, then the spans' sizes against the shape.
template <class Value>
inline status nvfp4_check_spans(std::size_t rows, std::size_t cols, const nvfp4_options& o, std::size_t values,
                                std::size_t elements, std::size_t scales) noexcept {
  std::size_t n = 0;
  const status st = nvfp4_check_shape<Value>(rows, cols, o, &n);
  if (!st) return st;
  if (values != n || elements != packed_bytes(n, 4) || scales != n / nvfp4_block_size) return errc::size_mismatch;
  return errc::ok;
}

template <class Src>
inline status nvfp4_quantize_span(span<const Src> src, std::size_t rows, std::size_t cols, const nvfp4_options& o,
                                  span<std::uint8_t> elements, span<std::uint8_t> scales) noexcept {
  const status st = nvfp4_check_spans<Src>(rows, cols, o, src.size(), elements.size(), scales.size());
  if (!st) return st;
  return nvfp4_quantize_impl(src.data(), rows, cols, o, elements.data(), scales.data());
}

template <class Dst>
inline status nvfp4_dequantize_span(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                    std::size_t rows, std::size_t cols, const nvfp4_options& o,
                                    span<Dst> dst) noexcept {
  const status st = nvfp4_check_spans<Dst>(rows, cols, o, dst.size(), elements.size(), scales.size());
  if (!st) return st;
  return nvfp4_dequantize_impl(elements.data(), scales.data(), rows, cols, o, dst.data());
}

}  // namespace detail

// Quantizes n values (float or bfloat16) into n / 2 element bytes and n / 16 scale codes.
template <class Src>
[[nodiscard]] inline status nvfp4_quantize(const Src* src, std::size_t n, const nvfp4_options& o,
                                           std::uint8_t* elements, std::uint8_t* scales) noexcept {
  return detail::nvfp4_quantize_impl(src, 1, n, o, elements, scales);
}

// Decodes n values; o must hold the tensor scale and convention the data was quantized with.
template <class Dst>
[[nodiscard]] inline status nvfp4_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                             const nvfp4_options& o, Dst* dst) noexcept {
  return detail::nvfp4_dequantize_impl(elements, scales, 1, n, o, dst);
}

// Row r's elements start at byte r * cols / 2, its scales at r * cols / 16.
template <class Src>
[[nodiscard]] inline status nvfp4_quantize_matrix(const Src* src, std::size_t rows, std::size_t cols,
                                                  const nvfp4_options& o, std::uint8_t* elements,
                                                  std::uint8_t* scales) noexcept {
  return detail::nvfp4_quantize_impl(src, rows, cols, o, elements, scales);
}

template <class Dst>
[[nodiscard]] inline status nvfp4_dequantize_matrix(const std::uint8_t* elements, const std::uint8_t* scales,
                                                    std::size_t rows, std::size_t cols, const nvfp4_options& o,
                                                    Dst* dst) noexcept {
  return detail::nvfp4_dequantize_impl(elements, scales, rows, cols, o, dst);
}

// Container overloads (docs/api.md section 8): the counts come from the spans, which must hold
// exactly what the call reads and writes (size_mismatch otherwise, after the options and shape
// checks).
[[nodiscard]] inline status nvfp4_quantize(span<const float> src, const nvfp4_options& o,
                                           span<std::uint8_t> elements, span<std::uint8_t> scales) noexcept {
  return detail::nvfp4_quantize_span(src, 1, src.size(), o, elements, scales);
}
[[nodiscard]] inline status nvfp4_quantize(span<const bfloat16> src, const nvfp4_options& o,
                                           span<std::uint8_t> elements, span<std::uint8_t> scales) noexcept {
  return detail::nvfp4_quantize_span(src, 1, src.size(), o, elements, scales);
}
[[nodiscard]] inline status nvfp4_dequantize(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                             const nvfp4_options& o, span<float> dst) noexcept {
  return detail::nvfp4_dequantize_span(elements, scales, 1, dst.size(), o, dst);
}
[[nodiscard]] inline status nvfp4_dequantize(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                             const nvfp4_options& o, span<bfloat16> dst) noexcept {
  return detail::nvfp4_dequantize_span(elements, scales, 1, dst.size(), o, dst);
}
[[nodiscard]] inline status nvfp4_quantize_matrix(span<const float> src, std::size_t rows, std::size_t cols,
                                                  const nvfp4_options& o, span<std::uint8_t> elements,
                                                  span<std::uint8_t> scales) noexcept {
  return detail::nvfp4_quantize_span(src, rows, cols, o, elements, scales);
}
[[nodiscard]] inline status nvfp4_quantize_matrix(span<const bfloat16> src, std::size_t rows, std::size_t cols,
                                                  const nvfp4_options& o, span<std::uint8_t> elements,
                                                  span<std::uint8_t> scales) noexcept {
  return detail::nvfp4_quantize_span(src, rows, cols, o, elements, scales);
}
[[nodiscard]] inline status nvfp4_dequantize_matrix(span<const std::uint8_t> elements,
                                                    span<const std::uint8_t> scales, std::size_t rows,
                                                    std::size_t cols, const nvfp4_options& o,
                                                    span<float> dst) noexcept {
  return detail::nvfp4_dequantize_span(elements, scales, rows, cols, o, dst);
}
[[nodiscard]] inline status nvfp4_dequantize_matrix(span<const std::uint8_t> elements,
                                                    span<const std::uint8_t> scales, std::size_t rows,
                                                    std::size_t cols, const nvfp4_options& o,
                                                    span<bfloat16> dst) noexcept {
  return detail::nvfp4_dequantize_span(elements, scales, rows, cols, o, dst);
}

// ---------------------------------------------------------------------------------------------
// Byte accounting: what a checkpoint stores for a [rows, cols] tensor: n / 2 element bytes,
// n / 16 E4M3 scales plus the 4-byte FP32 tensor scale (in scale_bytes). Errors: bad_block_size
// (cols not a multiple of 16), bad_argument (rows * cols overflows). bits_per_weight() tends to
// 4.5 for large tensors.
[[nodiscard]] inline result<storage> nvfp4_storage_for(std::size_t rows, std::size_t cols) noexcept {
  result<storage> r;
  std::size_t n = 0;
  r.status = detail::nvfp4_check_shape<std::uint8_t>(rows, cols, nvfp4_options{}, &n);
  if (!r.ok()) return r;
  r.value.elements = n;
  r.value.payload_bytes = packed_bytes(n, 4);
  r.value.scale_bytes = n / nvfp4_block_size + sizeof(float);
  return r;
}

// ---------------------------------------------------------------------------------------------
// ggml interop: block_nvfp4 (ggml-common.h, QK_NVFP4 = 64), four sub-blocks of 16 in 36 bytes:
// d[4], one UE4M3 scale per sub-block, then qs[32]. In sub-block s, byte qs[8 s + j] holds
// element j in its low nibble and element j + 8 in its high nibble. The nibbles are E2M1 codes
// and d is the E4M3 code with the sign bit clear (ggml's table is E2M1 times 2, read with half
// the scale, so the values agree). ggml is single level: use tensor scale 1 (the default options), or fold a
// tensor scale into the blocks before converting. ggml reads 0x7F as 0 and has no NaN.

struct ggml_block_nvfp4 {
  std::uint8_t d[4];
  std::uint8_t qs[32];
};
static_assert(sizeof(ggml_block_nvfp4) == 36, "ggml block_nvfp4 is 36 bytes");

// n must be a multiple of 64. NaN scales are written as 0x7F (which ggml reads as a zero block)
// and the call then returns non_finite_input, after writing every block.
[[nodiscard]] inline status nvfp4_to_ggml(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                          ggml_block_nvfp4* blocks) noexcept {
  if (n % 64 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 16)},
                                          {detail::buffer_of(blocks, n / 64)});
  if (!st) return st;
  bool nan = false;
  for (std::size_t b = 0; b < n / 64; ++b) {
    for (std::size_t s = 0; s < 4; ++s) {
      const std::uint8_t d = scales[4 * b + s];
      const bool is_nan = (d & 0x7Fu) == nvfp4_nan_scale;
      nan = nan || is_nan;
      blocks[b].d[s] = is_nan ? nvfp4_nan_scale : d;
      kernels::block::fp4_planar_to_split(elements + 32 * b + 8 * s, blocks[b].qs + 8 * s, 16);
    }
  }
  return nan ? errc::non_finite_input : errc::ok;
}

// n must be a multiple of 64. ggml decodes a scale byte d with its top bit ignored, except that
// exactly 0x7F is 0 (ggml_ue4m3_to_fp32: `x == 0 || x == 0x7F` -> 0, then exponent (x >> 3) & 0xF
// and mantissa x & 7). So d & 0x7F is the E4M3 code of the same value for every byte but two:
// 0x7F becomes 0x00, and 0xFF, which ggml reads as 1.875 * 2^8 = 480, has no E4M3FN code (0x7F is
// NaN there): a block holding it is errc::scale_overflow; the ggml blocks before it are converted,
// it and those after it are untouched.
[[nodiscard]] inline status nvfp4_from_ggml(const ggml_block_nvfp4* blocks, std::size_t n, std::uint8_t* elements,
                                            std::uint8_t* scales) noexcept {
  if (n % 64 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(blocks, n / 64)},
                                          {detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 16)});
  if (!st) return st;
  for (std::size_t b = 0; b < n / 64; ++b) {
    for (std::size_t s = 0; s < 4; ++s)
      if (blocks[b].d[s] == 0xFFu) return errc::scale_overflow;
    for (std::size_t s = 0; s < 4; ++s) {
      const std::uint8_t d = blocks[b].d[s];
      scales[4 * b + s] = d == nvfp4_nan_scale ? std::uint8_t{0} : static_cast<std::uint8_t>(d & 0x7Fu);
      kernels::block::fp4_split_to_planar(blocks[b].qs + 8 * s, elements + 32 * b + 8 * s, 16);
    }
  }
  return errc::ok;
}

// Container overloads: n = 64 * blocks.size(); elements must hold n / 2 bytes and scales n / 16
// (size_mismatch otherwise).
[[nodiscard]] inline status nvfp4_to_ggml(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                          span<ggml_block_nvfp4> blocks) noexcept {
  const std::size_t b = blocks.size();
  if (b > static_cast<std::size_t>(-1) / 64) return errc::bad_argument;
  if (elements.size() != 32 * b || scales.size() != 4 * b) return errc::size_mismatch;
  return nvfp4_to_ggml(elements.data(), scales.data(), 64 * b, blocks.data());
}
[[nodiscard]] inline status nvfp4_from_ggml(span<const ggml_block_nvfp4> blocks, span<std::uint8_t> elements,
                                            span<std::uint8_t> scales) noexcept {
  const std::size_t b = blocks.size();
  if (b > static_cast<std::size_t>(-1) / 64) return errc::bad_argument;
  if (elements.size() != 32 * b || scales.size() != 4 * b) return errc::size_mismatch;
  return nvfp4_from_ggml(blocks.data(), 64 * b, elements.data(), scales.data());
}

// ---------------------------------------------------------------------------------------------
// Quantizing straight into ggml's blocks, and dequantizing straight out of them: the kernels of
// nvfp4_quantize / nvfp4_dequantize (AVX2 and scalar, in the IEEE default environment), writing
// and reading block_nvfp4 in place of the planar arrays. The results are those of the planar call
// plus the conversion, byte for byte and float for float, without the temporaries:
//   nvfp4_quantize_ggml(src, n, o, blocks)   == nvfp4_quantize(src, n, o, e, s), then
//                                               nvfp4_to_ggml(e, s, n, blocks)
//   nvfp4_dequantize_ggml(blocks, n, o, dst) == nvfp4_from_ggml(blocks, n, e, s), then
//                                               nvfp4_dequantize(e, s, n, o, dst)
// Src / Dst: float or bfloat16. ggml reads its blocks single level: a tensor scale other than 1 is
// applied as the planar calls apply it, and a ggml reader will not know it. Errors, in the order of
// docs/api.md:
//   options  those of nvfp4_quantize (bad_argument)
//   shape    bad_block_size (n not a multiple of 64, ggml's block), bad_argument (n * sizeof
//            overflows)
//   empty    n = 0 is ok and writes nothing; its pointers may be null
//   buffers  bad_argument (null), misaligned, overlapping_buffers
//   data     quantize: non_finite_input when a block held NaN or Inf, after writing every block
//            (scale 0x7F, which ggml reads as 0, elements 0), whatever o.non_finite_is_error says:
//            nvfp4_to_ggml reports it so. dequantize: scale_overflow for a scale byte 0xFF (ggml's
//            480, beyond E4M3FN): the values of the ggml blocks before it are written, those of it
//            and of every later block are not.
// A [rows, cols] matrix as ggml stores it (each row cols / 64 blocks, rows one after the other) is
// the flat call with n = rows * cols, cols a multiple of 64.

namespace detail {

template <class Value>
constexpr status nvfp4_ggml_check_shape(std::size_t n, const nvfp4_options& o) noexcept {
  std::size_t unused = 0;
  const status st = nvfp4_check_shape<Value>(1, n, o, &unused);
  if (!st) return st;
  return n % 64 != 0 ? status{errc::bad_block_size} : status{errc::ok};
}

template <class Value>
inline status nvfp4_ggml_check_spans(std::size_t n, const nvfp4_options& o, std::size_t blocks) noexcept {
  const status st = nvfp4_ggml_check_shape<Value>(n, o);
  if (!st) return st;
  return blocks == n / 64 ? errc::ok : errc::size_mismatch;
}

}  // namespace detail

template <class Src>
[[nodiscard]] inline status nvfp4_quantize_ggml(const Src* src, std::size_t n, const nvfp4_options& o,
                                                ggml_block_nvfp4* blocks) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  status st = detail::nvfp4_ggml_check_shape<Src>(n, o);
  if (!st || n == 0) return st;
  st = detail::check_buffers({detail::buffer_of(src, n)}, {detail::buffer_of(blocks, n / 64)});
  if (!st) return st;
  const kernels::ieee_scope env;  // see nvfp4_quantize_impl
  const kernels::block::nvfp4_ggml_layout<std::uint8_t> out{reinterpret_cast<std::uint8_t*>(blocks)};
  bool nan_block = false;
#if LOWBIT_HAS_AVX512_KERNELS
  if (detail::use_avx512()) {
    nan_block = kernels::block::avx512::nvfp4_quantize(src, n, o, out);
  } else
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    nan_block = kernels::block::avx2::nvfp4_quantize(src, n, o, out);
  } else
#endif
  {
    nan_block = kernels::block::nvfp4_quantize_scalar(src, n / nvfp4_block_size, o, out);
  }
  return nan_block ? errc::non_finite_input : errc::ok;
}

template <class Dst>
[[nodiscard]] inline status nvfp4_dequantize_ggml(const ggml_block_nvfp4* blocks, std::size_t n,
                                                  const nvfp4_options& o, Dst* dst) noexcept {
  static_assert(std::is_same<Dst, float>::value || std::is_same<Dst, bfloat16>::value, "float or bfloat16 output");
  status st = detail::nvfp4_ggml_check_shape<Dst>(n, o);
  if (!st || n == 0) return st;
  st = detail::check_buffers({detail::buffer_of(blocks, n / 64)}, {detail::buffer_of(dst, n)});
  if (!st) return st;
  const kernels::ieee_scope env;
  const kernels::block::nvfp4_ggml_layout<const std::uint8_t> in{reinterpret_cast<const std::uint8_t*>(blocks)};
  bool ok = false;
#if LOWBIT_HAS_AVX512_KERNELS
  if (detail::use_avx512()) {
    ok = kernels::block::avx512::nvfp4_dequantize(in, n, o, dst);
  } else
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    ok = kernels::block::avx2::nvfp4_dequantize(in, n, o, dst);
  } else
#endif
  {
    ok = kernels::block::nvfp4_dequantize_scalar(in, n / nvfp4_block_size, o, dst);
  }
  return ok ? errc::ok : errc::scale_overflow;
}

// Container overloads: n = src.size() (dst.size()); blocks must hold n / 64 blocks (size_mismatch
// otherwise, after the options and shape checks).
[[nodiscard]] inline status nvfp4_quantize_ggml(span<const float> src, const nvfp4_options& o,
                                                span<ggml_block_nvfp4> blocks) noexcept {
  const status st = detail::nvfp4_ggml_check_spans<float>(src.size(), o, blocks.size());
  return st ? nvfp4_quantize_ggml(src.data(), src.size(), o, blocks.data()) : st;
}
[[nodiscard]] inline status nvfp4_quantize_ggml(span<const bfloat16> src, const nvfp4_options& o,
                                                span<ggml_block_nvfp4> blocks) noexcept {
  const status st = detail::nvfp4_ggml_check_spans<bfloat16>(src.size(), o, blocks.size());
  return st ? nvfp4_quantize_ggml(src.data(), src.size(), o, blocks.data()) : st;
}
[[nodiscard]] inline status nvfp4_dequantize_ggml(span<const ggml_block_nvfp4> blocks, const nvfp4_options& o,
                                                  span<float> dst) noexcept {
  const status st = detail::nvfp4_ggml_check_spans<float>(dst.size(), o, blocks.size());
  return st ? nvfp4_dequantize_ggml(blocks.data(), dst.size(), o, dst.data()) : st;
}
[[nodiscard]] inline status nvfp4_dequantize_ggml(span<const ggml_block_nvfp4> blocks, const nvfp4_options& o,
                                                  span<bfloat16> dst) noexcept {
  const status st = detail::nvfp4_ggml_check_spans<bfloat16>(dst.size(), o, blocks.size());
  return st ? nvfp4_dequantize_ggml(blocks.data(), dst.size(), o, dst.data()) : st;
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_NVFP4_HPP
