// lowbit: NVFP4, NVIDIA's Blackwell 4-bit block format. Blocks of 16 E2M1 elements share one
// E4M3 block scale; a tensor shares one FP32 tensor scale t.
//
//   t        = amax(tensor) / (448 * 6)                    (448: E4M3 max, 6: E2M1 max)
//   scale_b  = E4M3(amax(block) / 6 / t)                   nearest-even, saturating at 448
//   D_b      = scale_b * t                                 the block's effective scale
//   q_i      = E2M1(x_i / D_b)                             nearest-even, saturating at +-6
//   x_i     ~= q_i * D_b
//
// Single-level mode is t = 1 (nvfp4_single_level): scale_b = E4M3(amax(block) / 6). That is the
// lesson's toy example and what ggml's quantizer does.
//
// The tensor scale is stored either as the divisor t (ModelOpt weight_scale_2 / input_scale,
// torchao per_tensor_scale) or as its reciprocal multiplier g = 1 / t = 2688 / amax
// (compressed-tensors weight_global_scale / input_global_scale). The two hold the same
// information, and reading one as the other is a known interop bug, so every function takes an
// nvfp4_tensor_scale that names its convention. Each convention is computed with its producer's
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
// block_nvfp4 is available through nvfp4_to_ggml / nvfp4_from_ggml.
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
#include "mx.hpp"

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

struct nvfp4_tensor_scale {
  float value = 1.0f;
  nvfp4_scale_convention convention = nvfp4_scale_convention::divisor;
};

// t = 1: one E4M3 scale per block and nothing else.
inline constexpr nvfp4_tensor_scale nvfp4_single_level{};

struct nvfp4_options {
  // Any mode but rounding::stochastic, for the E2M1 elements and for the E4M3 block scale.
  rounding element_rounding = rounding::nearest_even;
  rounding scale_rounding = rounding::nearest_even;
  // false: an element that rounds to zero is written as +0 even when the input is negative (ggml).
  bool signed_zero = true;
  // When set, a block holding NaN or Inf is still written as the NaN block but the call returns
  // errc::non_finite_input (after converting every block).
  bool non_finite_is_error = false;
};

namespace nvfp4_presets {
// ModelOpt, torchao and compressed-tensors: ties to even for both.
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
// Byte accounting.

constexpr std::size_t nvfp4_element_bytes(std::size_t n) noexcept { return packed_bytes(n, 4); }
constexpr std::size_t nvfp4_scale_bytes(std::size_t n) noexcept { return n / nvfp4_block_size; }
// Elements and block scales; the tensor scale adds sizeof(float) per tensor.
constexpr std::size_t nvfp4_storage_bytes(std::size_t n) noexcept {
  return nvfp4_element_bytes(n) + nvfp4_scale_bytes(n);
}
constexpr double nvfp4_bits_per_element() noexcept { return 4.0 + 8.0 / static_cast<double>(nvfp4_block_size); }

// ---------------------------------------------------------------------------------------------
// The tensor scale.

// Whether t can be used: a float in [2^-119, 2^119] (NaN, Inf, zero and negatives are not).
constexpr bool nvfp4_valid_tensor_scale(nvfp4_tensor_scale t) noexcept {
  return t.value >= nvfp4_min_tensor_scale && t.value <= nvfp4_max_tensor_scale;
}

// The tensor scale for a tensor whose largest finite magnitude is amax, in convention c:
// amax / 2688 or 2688 / amax (one float32 division), 1 when amax is 0, clamped into
// [2^-119, 2^119]. NaN or Inf amax: errc::non_finite_input.
[[nodiscard]] inline result<nvfp4_tensor_scale> nvfp4_tensor_scale_from_amax(float amax,
                                                                             nvfp4_scale_convention c) noexcept {
  result<nvfp4_tensor_scale> r;
  r.value.convention = c;
  const float a = std::fabs(amax);
  if (!(a <= std::numeric_limits<float>::max())) {
    r.status = errc::non_finite_input;
    return r;
  }
  float v = 1.0f;
  if (a > 0.0f)
    v = c == nvfp4_scale_convention::divisor ? a / nvfp4_tensor_scale_denominator : nvfp4_tensor_scale_denominator / a;
  if (v < nvfp4_min_tensor_scale) v = nvfp4_min_tensor_scale;
  if (v > nvfp4_max_tensor_scale) v = nvfp4_max_tensor_scale;
  r.value.value = v;
  return r;
}

// The tensor scale of n values (float or bfloat16), from their largest finite magnitude;
// non-finite values are skipped (their blocks become NaN blocks when quantized).
// n == 0: errc::empty_input; null src: errc::bad_argument.
template <class Src>
[[nodiscard]] inline result<nvfp4_tensor_scale> nvfp4_compute_tensor_scale(const Src* src, std::size_t n,
                                                                           nvfp4_scale_convention c) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  result<nvfp4_tensor_scale> r;
  r.value.convention = c;
  if (static_cast<unsigned>(c) > 1u) {
    r.status = errc::bad_argument;
  } else if (n == 0) {
    r.status = errc::empty_input;
  } else {
    r.status = detail::check_buffers({detail::buffer_of(src, n)}, {});
  }
  if (!r.ok()) return r;
  return nvfp4_tensor_scale_from_amax(detail::mx_block_amax(src, n).amax, c);
}

// The same scale in the other convention: 1 / value, rounded to float (so converting twice need
// not give back the same float), clamped into the valid range.
[[nodiscard]] inline nvfp4_tensor_scale nvfp4_to_convention(nvfp4_tensor_scale t, nvfp4_scale_convention c) noexcept {
  if (t.convention == c) return t;
  float v = 1.0f / t.value;
  if (v < nvfp4_min_tensor_scale) v = nvfp4_min_tensor_scale;
  if (v > nvfp4_max_tensor_scale) v = nvfp4_max_tensor_scale;
  return nvfp4_tensor_scale{v, c};
}

// ---------------------------------------------------------------------------------------------
// The per-block reference.

// amax(block) / 6 / t, in the convention's float32 arithmetic (see the header comment).
inline float nvfp4_block_scale_target(float block_amax, nvfp4_tensor_scale t) noexcept {
  if (t.convention == nvfp4_scale_convention::divisor) return block_amax / (6.0f * t.value);
  return (block_amax / 6.0f) * t.value;
}

// The E4M3 code of the block scale: the target rounded under rm and saturated at 448 (an
// overflowing target is 448 too). NaN or Inf block_amax gives nvfp4_nan_scale.
inline std::uint8_t nvfp4_block_scale(float block_amax, nvfp4_tensor_scale t,
                                      rounding rm = rounding::nearest_even) noexcept {
  const float a = std::fabs(block_amax);
  if (!(a <= std::numeric_limits<float>::max())) return nvfp4_nan_scale;
  policy p;
  p.rm = rm;
  p.ov = overflow::saturate;
  return encode<float8_e4m3fn>(nvfp4_block_scale_target(a, t), p).bits();
}

// D = scale_b * t (divisor) or scale_b / g (multiplier), one float32 operation. NaN for a NaN
// scale code.
inline float nvfp4_effective_scale(std::uint8_t scale_code, nvfp4_tensor_scale t) noexcept {
  const float d = static_cast<float>(float8_e4m3fn::from_bits(scale_code));
  return t.convention == nvfp4_scale_convention::divisor ? d * t.value : d / t.value;
}

// Quantizes 16 values (float or bfloat16) into 8 bytes of packed E2M1 codes; returns the E4M3
// block scale code. t must satisfy nvfp4_valid_tensor_scale and the roundings must not be
// stochastic (the bulk functions check both).
template <class Src>
inline std::uint8_t nvfp4_quantize_block(const Src* x, std::uint8_t* elements, nvfp4_tensor_scale t,
                                         const nvfp4_options& o = {}) noexcept {
  const detail::mx_amax_result a = detail::mx_block_amax(x, nvfp4_block_size);
  if (!a.finite) {
    for (std::size_t j = 0; j < nvfp4_block_size / 2; ++j) elements[j] = 0;
    return nvfp4_nan_scale;
  }
  const std::uint8_t scale = nvfp4_block_scale(a.amax, t, o.scale_rounding);
  const float d = nvfp4_effective_scale(scale, t);
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
// to nearest even.
template <class Dst>
inline void nvfp4_dequantize_block(const std::uint8_t* elements, std::uint8_t scale, nvfp4_tensor_scale t,
                                   Dst* out) noexcept {
  const float d = nvfp4_effective_scale(scale, t);
  std::uint8_t codes[nvfp4_block_size];
  unpack_nibbles(elements, codes, nvfp4_block_size);
  for (std::size_t i = 0; i < nvfp4_block_size; ++i)
    detail::mx_store(out[i], static_cast<float>(float4_e2m1fn::from_bits(codes[i])) * d);
}

// ---------------------------------------------------------------------------------------------
// Bulk conversion: flat arrays and row-major matrices [rows, cols] blocked along cols. The checks
// of docs/api.md, in its order; every one of them is made before anything is written:
//   options  bad_argument (an invalid tensor scale, a rounding out of range or stochastic)
//   shape    bad_block_size (n, or cols, not a multiple of 16), bad_argument (a size that
//            overflows size_t)
//   empty    n = 0 (rows or cols 0) is ok and writes nothing; its pointers may be null
//   buffers  bad_argument (null), misaligned (a pointer not aligned to its type),
//            overlapping_buffers (an output overlapping an input or the other output)
//   data     non_finite_input only with non_finite_is_error, after every block is written

namespace detail {

// The options, shape and empty checks; *n receives rows * cols. ok with *n = 0: write nothing.
template <class Value>
constexpr status nvfp4_check_shape(std::size_t rows, std::size_t cols, nvfp4_tensor_scale t, const nvfp4_options& o,
                                   std::size_t* n) noexcept {
  if (!nvfp4_valid_tensor_scale(t) || static_cast<unsigned>(t.convention) > 1u ||
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

// The tensor scale and options as the AVX2 kernels take them.
constexpr kernels::block::nvfp4_kernel_options nvfp4_kernel_options_of(nvfp4_tensor_scale t,
                                                                      const nvfp4_options& o) noexcept {
  kernels::block::nvfp4_kernel_options k;
  k.tensor_scale = t.value;
  k.multiplier = t.convention == nvfp4_scale_convention::multiplier;
  k.element_rounding = o.element_rounding;
  k.scale_rounding = o.scale_rounding;
  k.signed_zero = o.signed_zero;
  return k;
}

template <class Src>
inline status nvfp4_quantize_impl(const Src* src, std::size_t rows, std::size_t cols, std::uint8_t* elements,
                                  std::uint8_t* scales, nvfp4_tensor_scale t, const nvfp4_options& o) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  std::size_t n = 0;
  status st = nvfp4_check_shape<Src>(rows, cols, t, o, &n);
  if (!st || n == 0) return st;
  st = nvfp4_check_buffers(src, false, elements, scales, n);
  if (!st) return st;
  // Both paths run in the IEEE default environment, so the bytes do not depend on the caller's
  // MXCSR (FTZ/DAZ would otherwise flush subnormal effective scales).
  const kernels::ieee_scope env;
#if LOWBIT_HAS_AVX2_KERNELS
  // The AVX2 kernel (kernels/avx2_block.hpp) performs the same float32 operations and writes the
  // same bytes as the loop below.
  if (use_avx2()) {
    const bool nan_block = kernels::block::avx2::nvfp4_quantize(src, n, elements, scales, nvfp4_kernel_options_of(t, o));
    return nan_block && o.non_finite_is_error ? status{errc::non_finite_input} : status{errc::ok};
  }
#endif
  bool non_finite = false;
  for (std::size_t b = 0; b < n / nvfp4_block_size; ++b) {
    scales[b] = nvfp4_quantize_block(src + b * nvfp4_block_size, elements + b * (nvfp4_block_size / 2), t, o);
    non_finite = non_finite || scales[b] == nvfp4_nan_scale;
  }
  if (non_finite && o.non_finite_is_error) return errc::non_finite_input;
  return errc::ok;
}

template <class Dst>
inline status nvfp4_dequantize_impl(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t rows,
                                    std::size_t cols, Dst* dst, nvfp4_tensor_scale t) noexcept {
  static_assert(std::is_same<Dst, float>::value || std::is_same<Dst, bfloat16>::value, "float or bfloat16 output");
  std::size_t n = 0;
  status st = nvfp4_check_shape<Dst>(rows, cols, t, nvfp4_options{}, &n);
  if (!st || n == 0) return st;
  st = nvfp4_check_buffers(dst, true, elements, scales, n);
  if (!st) return st;
  const kernels::ieee_scope env;  // see nvfp4_quantize_impl
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2()) {
    kernels::block::avx2::nvfp4_dequantize(elements, scales, n, dst, nvfp4_kernel_options_of(t, nvfp4_options{}));
    return errc::ok;
  }
#endif
  for (std::size_t b = 0; b < n / nvfp4_block_size; ++b)
    nvfp4_dequantize_block(elements + b * (nvfp4_block_size / 2), scales[b], t, dst + b * nvfp4_block_size);
  return errc::ok;
}

}  // namespace detail

// Quantizes n values into n / 2 element bytes and n / 16 scale codes, with tensor scale t
// (nvfp4_single_level, or one from nvfp4_compute_tensor_scale).
template <class Src>
[[nodiscard]] inline status nvfp4_quantize(const Src* src, std::size_t n, std::uint8_t* elements,
                                           std::uint8_t* scales, nvfp4_tensor_scale t,
                                           const nvfp4_options& o = {}) noexcept {
  return detail::nvfp4_quantize_impl(src, 1, n, elements, scales, t, o);
}

template <class Dst>
[[nodiscard]] inline status nvfp4_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                             Dst* dst, nvfp4_tensor_scale t) noexcept {
  return detail::nvfp4_dequantize_impl(elements, scales, 1, n, dst, t);
}

// Row r's elements start at byte r * cols / 2, its scales at r * cols / 16.
template <class Src>
[[nodiscard]] inline status nvfp4_quantize_matrix(const Src* src, std::size_t rows, std::size_t cols,
                                                  std::uint8_t* elements, std::uint8_t* scales, nvfp4_tensor_scale t,
                                                  const nvfp4_options& o = {}) noexcept {
  return detail::nvfp4_quantize_impl(src, rows, cols, elements, scales, t, o);
}

template <class Dst>
[[nodiscard]] inline status nvfp4_dequantize_matrix(const std::uint8_t* elements, const std::uint8_t* scales,
                                                    std::size_t rows, std::size_t cols, Dst* dst,
                                                    nvfp4_tensor_scale t) noexcept {
  return detail::nvfp4_dequantize_impl(elements, scales, rows, cols, dst, t);
}

// ---------------------------------------------------------------------------------------------
// ggml interop: block_nvfp4 (ggml-common.h, QK_NVFP4 = 64), four sub-blocks of 16 in 36 bytes:
// d[4], one UE4M3 scale per sub-block, then qs[32]. In sub-block s, byte qs[8 s + j] holds
// element j in its low nibble and element j + 8 in its high nibble. The nibbles are E2M1 codes
// and d is the E4M3 code with the sign bit clear (ggml's table is E2M1 times 2, read with half
// the scale, so the values agree). ggml is single level: pass nvfp4_single_level, or fold a
// tensor scale into the blocks before converting. ggml reads 0x7F as 0 and has no NaN.

struct ggml_block_nvfp4 {
  std::uint8_t d[4];
  std::uint8_t qs[32];
};
static_assert(sizeof(ggml_block_nvfp4) == 36, "ggml block_nvfp4 is 36 bytes");

// n must be a multiple of 64. NaN scales are written as 0x7F (which ggml reads as a zero block)
// and the call then returns non_finite_input, after writing every block.
[[nodiscard]] inline status nvfp4_to_ggml(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                          ggml_block_nvfp4* out) noexcept {
  if (n % 64 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 16)},
                                          {detail::buffer_of(out, n / 64)});
  if (!st) return st;
  bool nan = false;
  for (std::size_t b = 0; b < n / 64; ++b) {
    std::uint8_t codes[64];
    unpack_nibbles(elements + 32 * b, codes, 64);
    for (std::size_t s = 0; s < 4; ++s) {
      const std::uint8_t d = scales[4 * b + s];
      const bool is_nan = (d & 0x7Fu) == nvfp4_nan_scale;
      nan = nan || is_nan;
      out[b].d[s] = is_nan ? nvfp4_nan_scale : d;
      for (std::size_t j = 0; j < 8; ++j)
        out[b].qs[8 * s + j] = static_cast<std::uint8_t>(codes[16 * s + j] | codes[16 * s + j + 8] << 4);
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
[[nodiscard]] inline status nvfp4_from_ggml(const ggml_block_nvfp4* in, std::size_t n, std::uint8_t* elements,
                                            std::uint8_t* scales) noexcept {
  if (n % 64 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(in, n / 64)},
                                          {detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 16)});
  if (!st) return st;
  for (std::size_t b = 0; b < n / 64; ++b) {
    for (std::size_t s = 0; s < 4; ++s)
      if (in[b].d[s] == 0xFFu) return errc::scale_overflow;
    std::uint8_t codes[64];
    for (std::size_t s = 0; s < 4; ++s) {
      const std::uint8_t d = in[b].d[s];
      scales[4 * b + s] = d == nvfp4_nan_scale ? std::uint8_t{0} : static_cast<std::uint8_t>(d & 0x7Fu);
      for (std::size_t j = 0; j < 8; ++j) {
        codes[16 * s + j] = static_cast<std::uint8_t>(in[b].qs[8 * s + j] & 0x0Fu);
        codes[16 * s + j + 8] = static_cast<std::uint8_t>(in[b].qs[8 * s + j] >> 4);
      }
    }
    pack_nibbles(codes, elements + 32 * b, 64);
  }
  return errc::ok;
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_NVFP4_HPP
