// lowbit: OCP Microscaling (MX v1.0) block formats: MXFP8 (E4M3, E5M2), MXFP6 (E2M3, E3M2),
// MXFP4 (E2M1) and MXINT8. Every block of k elements (k = 32 unless configured) shares one E8M0
// scale X = 2^s; element i stores P_i and decodes as X * P_i.
//
//   scale   (e8m0_rule::floor, the spec's rule, OCP MX v1.0 section 6.3)
//           s = floor(log2(amax)) - emax_elem, clamped to [-127, 127] (codes 0x00..0xFE)
//   element P_i = element format of (v_i / X), rounded (nearest-even by default) and saturated
//           to +-element max
//
// Special cases (the spec's, with the choices it leaves open stated):
//  - A block holding a NaN or an Inf gets the NaN scale 0xFF and every element code 0; it decodes
//    to NaN in every position (the spec: a NaN scale makes the whole block NaN). The call still
//    succeeds unless mx_options::non_finite_is_error is set.
//  - An all-zero block (amax = 0) gets scale 0x00 (2^-127) and element codes of +-0; it decodes
//    to zeros with the input's signs (MXINT8: +0).
//  - Scales outside [2^-127, 2^127] are clamped to 0x00 / 0xFE; elements then round or saturate.
//
// Storage ("planar", the layout of torchao MXTensor, ModelOpt and compressed-tensors): two
// arrays, elements and scales. A row of n elements takes packed_bytes(n, bits) element bytes
// (core/packing.hpp: FP8/INT8 one byte each; FP6 four codes in three bytes, first code in the
// lowest bits; FP4 two per byte, first in the low nibble) and n / k scale bytes. A matrix
// [rows, cols] is stored as rows of that, blocks running along cols (`in`). ggml's interleaved
// block_mxfp4 is written and read directly by mxfp4_quantize_ggml / mxfp4_dequantize_ggml (the same
// kernels), and converted from and to the planar arrays by mxfp4_to_ggml / mxfp4_from_ggml.
// docs/block-formats.md draws both and compares every producer's choices.
//
// The format tags, mx_options and the per-block functions (mx_block_scale, mx_quantize_block,
// mx_dequantize_block), which define the results, live in kernels/mx/scalar.hpp beside their AVX2
// twins (kernels/mx/avx2.hpp); this header adds the presets, the checked bulk calls, byte
// accounting and ggml interop. The bulk functions only loop over blocks, and a SIMD kernel
// replacing the loop must be bit-identical to the per-block functions. They use no float arithmetic that can round (exact products by powers of
// two, integer exponent arithmetic, the codec), so neither MXCSR nor floating-point contraction
// (-ffp-contract=fast, -march=native) can change a result.
#ifndef LOWBIT_SCHEMES_MX_HPP
#define LOWBIT_SCHEMES_MX_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/bits.hpp"
#include "../core/checks.hpp"
#include "../core/packing.hpp"
#include "../core/rounding.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../kernels/mx/avx2.hpp"
#include "../kernels/mx/avx512.hpp"
#include "../kernels/mx/scalar.hpp"
#include "storage.hpp"

namespace lowbit {

// Named producer settings; each differs from the spec default only where stated.
namespace mx_presets {
// OCP MX v1.0 as written: floor, ties to even. Also torchao FLOOR and compressed-tensors.
constexpr mx_options ocp(std::size_t block_size = mx_default_block_size) noexcept {
  mx_options o;
  o.block_size = block_size;
  return o;
}
// microsoft/microxcaling, round="nearest": floor, ties away from zero. This is microxcaling's
// intended rule, the exact floor(log2 amax); its code takes torch.log2 of a float32 amax, which
// rounds up to the integer for an amax a few ulps below a power of two (0x427FFFFF: exponent 6
// there, 5 exactly; MXFP4 scale 2^4 against 2^3). To match scales that code wrote, also set
// o.scale_rule = e8m0_rule::floor_log2f. (Its e > 127 -> NaN is not reproduced: lowbit clamps.)
constexpr mx_options microxcaling(std::size_t block_size = mx_default_block_size) noexcept {
  mx_options o;
  o.block_size = block_size;
  o.element_rounding = rounding::nearest_away;
  return o;
}
// ggml quantize_row_mxfp4_ref: floor, ties to the smaller magnitude, no -0 (for scales in range:
// ggml does not clamp an amax below 2^-125). ggml takes floorf(log2f(amax)) in float, which is one
// higher for an amax a few ulps below a power of two: set o.scale_rule = e8m0_rule::floor_log2f
// for that too.
constexpr mx_options ggml() noexcept {
  mx_options o;
  o.element_rounding = rounding::nearest_toward_zero;
  o.signed_zero = false;
  return o;
}
// torchao RCEIL (= Blackwell cvt.rp E8M0) and ModelOpt MXFP4: ceil, ties to even.
constexpr mx_options rceil(std::size_t block_size = mx_default_block_size) noexcept {
  mx_options o;
  o.block_size = block_size;
  o.scale_rule = e8m0_rule::ceil;
  return o;
}
}  // namespace mx_presets

// ---------------------------------------------------------------------------------------------
// Bulk conversion: flat arrays and row-major matrices. The checks of docs/api.md, in its order;
// every one of them is made before anything is written:
//   options  bad_argument (a rounding or scale rule out of range, rounding::stochastic),
//            bad_block_size (0, or not byte-aligned for the format: mx_valid_block_size)
//   shape    bad_block_size (n, or cols, not a multiple of the block size), bad_argument (a
//            size that overflows size_t)
//   empty    n = 0 (rows or cols 0) is ok and writes nothing; its pointers may be null
//   buffers  bad_argument (null), misaligned (a pointer not aligned to its type),
//            overlapping_buffers (an output overlapping an input or the other output)
//   data     non_finite_input only with non_finite_is_error, after every block is written

namespace detail {

constexpr bool mx_valid_rounding(rounding r) noexcept {
  return static_cast<unsigned>(r) <= static_cast<unsigned>(rounding::nearest_toward_zero) &&
         r != rounding::stochastic;
}

// The options, shape and empty checks of a call on a [rows, cols] matrix of Value (float or
// bfloat16) blocked along cols; *n receives rows * cols. ok with *n = 0 means: write nothing.
template <class Fmt, class Value>
constexpr status mx_check_shape(std::size_t rows, std::size_t cols, const mx_options& o, std::size_t* n) noexcept {
  if (!mx_valid_rounding(o.element_rounding) || static_cast<unsigned>(o.scale_rule) > 3u) return errc::bad_argument;
  if (!mx_valid_block_size<Fmt>(o.block_size)) return errc::bad_block_size;
  if (cols % o.block_size != 0) return errc::bad_block_size;
  std::size_t bytes = 0;
  if (!checked_mul(rows, cols, n) || !checked_mul(*n, sizeof(Value), &bytes)) return errc::bad_argument;
  return errc::ok;
}

// The buffer checks of n values at `values` and their elements and scales.
template <class Fmt, class Value>
inline status mx_check_buffers(const Value* values, bool values_written, const std::uint8_t* elements,
                               const std::uint8_t* scales, std::size_t n, std::size_t block_size) noexcept {
  const buffer v = buffer_of(values, n);
  const buffer e = buffer_of(elements, packed_bytes(n, Fmt::element_bits));
  const buffer s = buffer_of(scales, n / block_size);
  return values_written ? check_buffers({e, s}, {v}) : check_buffers({v}, {e, s});
}

template <class Fmt, class Src>
inline status mx_quantize_impl(const Src* src, std::size_t rows, std::size_t cols, std::uint8_t* elements,
                               std::uint8_t* scales, const mx_options& o) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  std::size_t n = 0;
  status st = mx_check_shape<Fmt, Src>(rows, cols, o, &n);
  if (!st || n == 0) return st;
  st = mx_check_buffers<Fmt>(src, false, elements, scales, n, o.block_size);
  if (!st) return st;
  // The AVX2 kernel (kernels/mx/avx2.hpp) writes the same bytes as the reference loop beside it
  // (kernels/mx/scalar.hpp). Both are integer (or exact) arithmetic that no MXCSR setting can
  // change, so MX opens no FP-environment guard here (NVFP4, which computes in float32, does);
  // the SIMD quantizers' one rounding conversion (mx_direct) holds its own.
  bool nan_block = false;
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::block::mx_avx512_has_kernel<Fmt>) {
    if (use_avx512() && kernels::block::mx_avx512_supports<Fmt>(o)) {
      nan_block = kernels::block::avx512::mx_quantize<Fmt>(src, n, o, elements, scales);
      return nan_block && o.non_finite_is_error ? status{errc::non_finite_input} : status{errc::ok};
    }
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2() && kernels::block::mx_avx2_supports_quantize(o)) {
    nan_block = kernels::block::avx2::mx_quantize<Fmt>(src, n, o, elements, scales);
  } else
#endif
  {
    nan_block = kernels::block::mx_quantize_scalar<Fmt>(src, n / o.block_size, o, elements, scales);
  }
  return nan_block && o.non_finite_is_error ? status{errc::non_finite_input} : status{errc::ok};
}

template <class Fmt, class Dst>
inline status mx_dequantize_impl(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t rows,
                                 std::size_t cols, Dst* dst, const mx_options& o) noexcept {
  static_assert(std::is_same<Dst, float>::value || std::is_same<Dst, bfloat16>::value, "float or bfloat16 output");
  std::size_t n = 0;
  status st = mx_check_shape<Fmt, Dst>(rows, cols, o, &n);
  if (!st || n == 0) return st;
  st = mx_check_buffers<Fmt>(dst, true, elements, scales, n, o.block_size);
  if (!st) return st;
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::block::mx_avx512_has_kernel<Fmt>) {
    if (use_avx512() && kernels::block::mx_avx512_supports<Fmt>(o)) {
      kernels::block::avx512::mx_dequantize<Fmt>(elements, scales, n, o, dst);
      return errc::ok;
    }
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2() && kernels::block::mx_avx2_supports(o)) {
    kernels::block::avx2::mx_dequantize<Fmt>(elements, scales, n, o, dst);
    return errc::ok;
  }
#endif
  kernels::block::mx_dequantize_scalar<Fmt>(elements, scales, n / o.block_size, o, dst);
  return errc::ok;
}

}  // namespace detail

// Quantizes n values (float or bfloat16) into packed_bytes(n, Fmt::element_bits) element bytes
// and n / o.block_size scales.
template <class Fmt>
[[nodiscard]] inline status mx_quantize(const float* src, std::size_t n, const mx_options& o, std::uint8_t* elements,
                                        std::uint8_t* scales) noexcept {
  return detail::mx_quantize_impl<Fmt>(src, 1, n, elements, scales, o);
}
template <class Fmt>
[[nodiscard]] inline status mx_quantize(const bfloat16* src, std::size_t n, const mx_options& o,
                                        std::uint8_t* elements, std::uint8_t* scales) noexcept {
  return detail::mx_quantize_impl<Fmt>(src, 1, n, elements, scales, o);
}

// Decodes n values; o must be the options the data was quantized with (only its block size is
// read).
template <class Fmt>
[[nodiscard]] inline status mx_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                          const mx_options& o, float* dst) noexcept {
  return detail::mx_dequantize_impl<Fmt>(elements, scales, 1, n, dst, o);
}
template <class Fmt>
[[nodiscard]] inline status mx_dequantize(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                          const mx_options& o, bfloat16* dst) noexcept {
  return detail::mx_dequantize_impl<Fmt>(elements, scales, 1, n, dst, o);
}

// A row-major matrix [rows, cols] (weights as checkpoints store them: [out, in]) blocked along
// cols: row r's elements start at byte r * packed_bytes(cols, Fmt::element_bits), its scales at
// r * (cols / block_size). cols must be a multiple of the block size.
template <class Fmt, class Src>
[[nodiscard]] inline status mx_quantize_matrix(const Src* src, std::size_t rows, std::size_t cols,
                                               const mx_options& o, std::uint8_t* elements,
                                               std::uint8_t* scales) noexcept {
  return detail::mx_quantize_impl<Fmt>(src, rows, cols, elements, scales, o);
}

template <class Fmt, class Dst>
[[nodiscard]] inline status mx_dequantize_matrix(const std::uint8_t* elements, const std::uint8_t* scales,
                                                 std::size_t rows, std::size_t cols, const mx_options& o,
                                                 Dst* dst) noexcept {
  return detail::mx_dequantize_impl<Fmt>(elements, scales, rows, cols, dst, o);
}

// ---------------------------------------------------------------------------------------------
// Byte accounting: what a checkpoint stores for a [rows, cols] tensor. Errors: the options and
// shape checks of the bulk calls (bad_argument, bad_block_size). With the default block of 32,
// bits_per_weight() is 4.25 for MXFP4, 6.25 for MXFP6, 8.25 for MXFP8 and MXINT8.

template <class Fmt>
[[nodiscard]] inline result<storage> mx_storage_for(std::size_t rows, std::size_t cols,
                                                   const mx_options& o = {}) noexcept {
  static_assert(is_mx_format<Fmt>::value, "Fmt must be one of the MX format tags");
  result<storage> r;
  std::size_t n = 0;
  r.status = detail::mx_check_shape<Fmt, std::uint8_t>(rows, cols, o, &n);
  if (!r.ok()) return r;
  r.value.elements = n;
  r.value.payload_bytes = packed_bytes(n, Fmt::element_bits);
  r.value.scale_bytes = n / o.block_size;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Run-time format selection: the same functions, dispatched on mx_format.

namespace detail {
inline status mx_bad_format(status*) noexcept { return errc::bad_argument; }
template <class T>
inline result<T> mx_bad_format(result<T>*) noexcept {
  result<T> r;
  r.status = errc::bad_argument;
  return r;
}

template <class Visitor>
inline auto mx_visit(mx_format f, Visitor&& v) noexcept -> decltype(v(mxfp4_e2m1{})) {
  switch (f) {
    case mx_format::mxfp8_e4m3: return v(mxfp8_e4m3{});
    case mx_format::mxfp8_e5m2: return v(mxfp8_e5m2{});
    case mx_format::mxfp6_e2m3: return v(mxfp6_e2m3{});
    case mx_format::mxfp6_e3m2: return v(mxfp6_e3m2{});
    case mx_format::mxfp4_e2m1: return v(mxfp4_e2m1{});
    case mx_format::mxint8: return v(mxint8{});
  }
  return mx_bad_format(static_cast<decltype(v(mxfp4_e2m1{}))*>(nullptr));
}
}  // namespace detail

// The element width of f (0 for a value outside the enumeration), for sizing buffers with
// packed_bytes(n, mx_element_bits(f)).
constexpr int mx_element_bits(mx_format f) noexcept {
  switch (f) {
    case mx_format::mxfp8_e4m3:
    case mx_format::mxfp8_e5m2:
    case mx_format::mxint8: return 8;
    case mx_format::mxfp6_e2m3:
    case mx_format::mxfp6_e3m2: return 6;
    case mx_format::mxfp4_e2m1: return 4;
  }
  return 0;
}

// A format value outside the enumeration is bad_argument.
template <class Src>
[[nodiscard]] inline status mx_quantize(mx_format f, const Src* src, std::size_t n, const mx_options& o,
                                        std::uint8_t* elements, std::uint8_t* scales) noexcept {
  return detail::mx_visit(f, [&](auto tag) { return mx_quantize<decltype(tag)>(src, n, o, elements, scales); });
}
template <class Dst>
[[nodiscard]] inline status mx_dequantize(mx_format f, const std::uint8_t* elements, const std::uint8_t* scales,
                                          std::size_t n, const mx_options& o, Dst* dst) noexcept {
  return detail::mx_visit(f, [&](auto tag) { return mx_dequantize<decltype(tag)>(elements, scales, n, o, dst); });
}
template <class Src>
[[nodiscard]] inline status mx_quantize_matrix(mx_format f, const Src* src, std::size_t rows, std::size_t cols,
                                               const mx_options& o, std::uint8_t* elements,
                                               std::uint8_t* scales) noexcept {
  return detail::mx_visit(
      f, [&](auto tag) { return mx_quantize_matrix<decltype(tag)>(src, rows, cols, o, elements, scales); });
}
template <class Dst>
[[nodiscard]] inline status mx_dequantize_matrix(mx_format f, const std::uint8_t* elements,
                                                 const std::uint8_t* scales, std::size_t rows, std::size_t cols,
                                                 const mx_options& o, Dst* dst) noexcept {
  return detail::mx_visit(
      f, [&](auto tag) { return mx_dequantize_matrix<decltype(tag)>(elements, scales, rows, cols, o, dst); });
}
inline result<storage> mx_storage_for(mx_format f, std::size_t rows, std::size_t cols,
                                      const mx_options& o = {}) noexcept {
  return detail::mx_visit(f, [&](auto tag) { return mx_storage_for<decltype(tag)>(rows, cols, o); });
}

// ---------------------------------------------------------------------------------------------
// Container overloads (docs/api.md section 8): the counts come from the spans, which must hold
// exactly what the call reads and writes (size_mismatch otherwise, after the options and shape
// checks). The flat calls take n from the values (src or dst); the matrix calls check
// rows * cols against it.

namespace detail {

// The options and shape checks, then the spans' sizes against the shape.
template <class Fmt, class Value>
inline status mx_check_spans(std::size_t rows, std::size_t cols, const mx_options& o, std::size_t values,
                             std::size_t elements, std::size_t scales) noexcept {
  std::size_t n = 0;
  const status st = mx_check_shape<Fmt, Value>(rows, cols, o, &n);
  if (!st) return st;
  if (values != n || elements != packed_bytes(n, Fmt::element_bits) || scales != n / o.block_size)
    return errc::size_mismatch;
  return errc::ok;
}

template <class Fmt, class Src>
inline status mx_quantize_span(span<const Src> src, std::size_t rows, std::size_t cols, const mx_options& o,
                               span<std::uint8_t> elements, span<std::uint8_t> scales) noexcept {
  const status st = mx_check_spans<Fmt, Src>(rows, cols, o, src.size(), elements.size(), scales.size());
  if (!st) return st;
  return mx_quantize_impl<Fmt>(src.data(), rows, cols, elements.data(), scales.data(), o);
}

template <class Fmt, class Dst>
inline status mx_dequantize_span(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                 std::size_t rows, std::size_t cols, const mx_options& o, span<Dst> dst) noexcept {
  const status st = mx_check_spans<Fmt, Dst>(rows, cols, o, dst.size(), elements.size(), scales.size());
  if (!st) return st;
  return mx_dequantize_impl<Fmt>(elements.data(), scales.data(), rows, cols, dst.data(), o);
}

}  // namespace detail

template <class Fmt>
[[nodiscard]] inline status mx_quantize(span<const float> src, const mx_options& o, span<std::uint8_t> elements,
                                        span<std::uint8_t> scales) noexcept {
  return detail::mx_quantize_span<Fmt>(src, 1, src.size(), o, elements, scales);
}
template <class Fmt>
[[nodiscard]] inline status mx_quantize(span<const bfloat16> src, const mx_options& o, span<std::uint8_t> elements,
                                        span<std::uint8_t> scales) noexcept {
  return detail::mx_quantize_span<Fmt>(src, 1, src.size(), o, elements, scales);
}
template <class Fmt>
[[nodiscard]] inline status mx_dequantize(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                          const mx_options& o, span<float> dst) noexcept {
  return detail::mx_dequantize_span<Fmt>(elements, scales, 1, dst.size(), o, dst);
}
template <class Fmt>
[[nodiscard]] inline status mx_dequantize(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                          const mx_options& o, span<bfloat16> dst) noexcept {
  return detail::mx_dequantize_span<Fmt>(elements, scales, 1, dst.size(), o, dst);
}
template <class Fmt>
[[nodiscard]] inline status mx_quantize_matrix(span<const float> src, std::size_t rows, std::size_t cols,
                                               const mx_options& o, span<std::uint8_t> elements,
                                               span<std::uint8_t> scales) noexcept {
  return detail::mx_quantize_span<Fmt>(src, rows, cols, o, elements, scales);
}
template <class Fmt>
[[nodiscard]] inline status mx_quantize_matrix(span<const bfloat16> src, std::size_t rows, std::size_t cols,
                                               const mx_options& o, span<std::uint8_t> elements,
                                               span<std::uint8_t> scales) noexcept {
  return detail::mx_quantize_span<Fmt>(src, rows, cols, o, elements, scales);
}
template <class Fmt>
[[nodiscard]] inline status mx_dequantize_matrix(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                                 std::size_t rows, std::size_t cols, const mx_options& o,
                                                 span<float> dst) noexcept {
  return detail::mx_dequantize_span<Fmt>(elements, scales, rows, cols, o, dst);
}
template <class Fmt>
[[nodiscard]] inline status mx_dequantize_matrix(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                                 std::size_t rows, std::size_t cols, const mx_options& o,
                                                 span<bfloat16> dst) noexcept {
  return detail::mx_dequantize_span<Fmt>(elements, scales, rows, cols, o, dst);
}

// ---------------------------------------------------------------------------------------------
// ggml interop: block_mxfp4 (ggml-common.h), 32 elements in 17 bytes, the scale first.
// Element j of the block sits in qs[j] low nibble for j < 16 and in qs[j - 16] high nibble
// otherwise ("split halves"); lowbit's planar rows keep elements 2i, 2i+1 in byte i. The 4-bit
// codes are the same E2M1 codes (ggml's kvalues_mxfp4 table is E2M1 times 2, read with half the
// scale), and e is the same E8M0 code. ggml has no NaN scale: it reads 0xFF as 2^128.

struct ggml_block_mxfp4 {
  std::uint8_t e;
  std::uint8_t qs[16];
};
static_assert(sizeof(ggml_block_mxfp4) == 17, "ggml block_mxfp4 is 17 bytes");

// n must be a multiple of 32 (bad_block_size). Writes n / 32 blocks. Returns non_finite_input
// (after writing everything) if a NaN scale was copied, since ggml will not read it as NaN.
[[nodiscard]] inline status mxfp4_to_ggml(const std::uint8_t* elements, const std::uint8_t* scales, std::size_t n,
                                          ggml_block_mxfp4* blocks) noexcept {
  if (n % 32 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 32)},
                                          {detail::buffer_of(blocks, n / 32)});
  if (!st) return st;
  bool nan = false;
  for (std::size_t b = 0; b < n / 32; ++b) {
    blocks[b].e = scales[b];
    nan = nan || scales[b] == mx_nan_scale;
    kernels::block::fp4_planar_to_split(elements + 16 * b, blocks[b].qs, 32);
  }
  return nan ? errc::non_finite_input : errc::ok;
}

// n must be a multiple of 32 (bad_block_size). Reads n / 32 blocks.
[[nodiscard]] inline status mxfp4_from_ggml(const ggml_block_mxfp4* blocks, std::size_t n, std::uint8_t* elements,
                                            std::uint8_t* scales) noexcept {
  if (n % 32 != 0) return errc::bad_block_size;
  if (n == 0) return errc::ok;
  const status st = detail::check_buffers({detail::buffer_of(blocks, n / 32)},
                                          {detail::buffer_of(elements, n / 2), detail::buffer_of(scales, n / 32)});
  if (!st) return st;
  for (std::size_t b = 0; b < n / 32; ++b) {
    scales[b] = blocks[b].e;
    kernels::block::fp4_split_to_planar(blocks[b].qs, elements + 16 * b, 32);
  }
  return errc::ok;
}

// Container overloads: n = 32 * blocks.size(); elements must hold n / 2 bytes and scales n / 32
// (size_mismatch otherwise).
[[nodiscard]] inline status mxfp4_to_ggml(span<const std::uint8_t> elements, span<const std::uint8_t> scales,
                                          span<ggml_block_mxfp4> blocks) noexcept {
  const std::size_t b = blocks.size();
  if (b > static_cast<std::size_t>(-1) / 32) return errc::bad_argument;
  if (elements.size() != 16 * b || scales.size() != b) return errc::size_mismatch;
  return mxfp4_to_ggml(elements.data(), scales.data(), 32 * b, blocks.data());
}
[[nodiscard]] inline status mxfp4_from_ggml(span<const ggml_block_mxfp4> blocks, span<std::uint8_t> elements,
                                            span<std::uint8_t> scales) noexcept {
  const std::size_t b = blocks.size();
  if (b > static_cast<std::size_t>(-1) / 32) return errc::bad_argument;
  if (elements.size() != 16 * b || scales.size() != b) return errc::size_mismatch;
  return mxfp4_from_ggml(blocks.data(), 32 * b, elements.data(), scales.data());
}

// ---------------------------------------------------------------------------------------------
// Quantizing straight into ggml's blocks, and dequantizing straight out of them: the kernels of
// mx_quantize / mx_dequantize (AVX2 and scalar), writing and reading block_mxfp4 in place of the
// planar arrays. The results are those of the planar call plus the conversion, byte for byte and
// float for float, without the temporaries:
//   mxfp4_quantize_ggml(src, n, o, blocks)   == mx_quantize<mxfp4>(src, n, o, e, s), then
//                                               mxfp4_to_ggml(e, s, n, blocks)
//   mxfp4_dequantize_ggml(blocks, n, o, dst) == mxfp4_from_ggml(blocks, n, e, s), then
//                                               mx_dequantize<mxfp4>(e, s, n, o, dst)
// Src / Dst: float or bfloat16. Errors, in the order of docs/api.md:
//   options  bad_argument (a rounding or scale rule out of range, stochastic), bad_block_size
//            (o.block_size other than 32, ggml's block)
//   shape    bad_block_size (n not a multiple of 32), bad_argument (n * sizeof overflows)
//   empty    n = 0 is ok and writes nothing; its pointers may be null
//   buffers  bad_argument (null), misaligned, overlapping_buffers
//   data     quantize: non_finite_input when a block held NaN or Inf, after writing every block
//            (scale 0xFF, which ggml reads as 2^128, elements 0), whatever o.non_finite_is_error
//            says: mxfp4_to_ggml reports it so
// A [rows, cols] matrix as ggml stores it (each row cols / 32 blocks, rows one after the other) is
// the flat call with n = rows * cols, cols a multiple of 32.

namespace detail {

// The planar calls' checks on a one-row matrix, then ggml's block of 32 (as nvfp4_ggml_check_shape).
template <class Value>
constexpr status mxfp4_ggml_check_shape(std::size_t n, const mx_options& o) noexcept {
  std::size_t unused = 0;
  const status st = mx_check_shape<mxfp4, Value>(1, n, o, &unused);
  if (!st) return st;
  return o.block_size != 32 ? status{errc::bad_block_size} : status{errc::ok};
}

}  // namespace detail

template <class Src>
[[nodiscard]] inline status mxfp4_quantize_ggml(const Src* src, std::size_t n, const mx_options& o,
                                                ggml_block_mxfp4* blocks) noexcept {
  static_assert(std::is_same<Src, float>::value || std::is_same<Src, bfloat16>::value, "float or bfloat16 input");
  status st = detail::mxfp4_ggml_check_shape<Src>(n, o);
  if (!st || n == 0) return st;
  st = detail::check_buffers({detail::buffer_of(src, n)}, {detail::buffer_of(blocks, n / 32)});
  if (!st) return st;
  const kernels::block::mxfp4_ggml_layout<std::uint8_t> out{reinterpret_cast<std::uint8_t*>(blocks)};
  bool nan_block = false;
#if LOWBIT_HAS_AVX512_KERNELS
  if (detail::use_avx512()) {
    nan_block = kernels::block::avx512::mx_quantize<mxfp4>(src, n, o, out);
  } else
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2() && kernels::block::mx_avx2_supports_quantize(o)) {
    nan_block = kernels::block::avx2::mx_quantize<mxfp4>(src, n, o, out);
  } else
#endif
  {
    nan_block = kernels::block::mx_quantize_scalar<mxfp4>(src, n / 32, o, out);
  }
  return nan_block ? errc::non_finite_input : errc::ok;
}

template <class Dst>
[[nodiscard]] inline status mxfp4_dequantize_ggml(const ggml_block_mxfp4* blocks, std::size_t n,
                                                  const mx_options& o, Dst* dst) noexcept {
  static_assert(std::is_same<Dst, float>::value || std::is_same<Dst, bfloat16>::value, "float or bfloat16 output");
  status st = detail::mxfp4_ggml_check_shape<Dst>(n, o);
  if (!st || n == 0) return st;
  st = detail::check_buffers({detail::buffer_of(blocks, n / 32)}, {detail::buffer_of(dst, n)});
  if (!st) return st;
  const kernels::block::mxfp4_ggml_layout<const std::uint8_t> in{reinterpret_cast<const std::uint8_t*>(blocks)};
#if LOWBIT_HAS_AVX512_KERNELS
  if (detail::use_avx512()) {
    kernels::block::avx512::mx_dequantize<mxfp4>(in, n, o, dst);
    return errc::ok;
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    kernels::block::avx2::mx_dequantize<mxfp4>(in, n, o, dst);
    return errc::ok;
  }
#endif
  kernels::block::mx_dequantize_scalar<mxfp4>(in, n / 32, o, dst);
  return errc::ok;
}

// Container overloads: n = src.size() (dst.size()); blocks must hold n / 32 blocks (size_mismatch
// otherwise, after the options and shape checks).
namespace detail {
template <class Value>
inline status mxfp4_ggml_check_spans(std::size_t n, const mx_options& o, std::size_t blocks) noexcept {
  const status st = mxfp4_ggml_check_shape<Value>(n, o);
  if (!st) return st;
  return blocks == n / 32 ? errc::ok : errc::size_mismatch;
}
}  // namespace detail

[[nodiscard]] inline status mxfp4_quantize_ggml(span<const float> src, const mx_options& o,
                                                span<ggml_block_mxfp4> blocks) noexcept {
  const status st = detail::mxfp4_ggml_check_spans<float>(src.size(), o, blocks.size());
  return st ? mxfp4_quantize_ggml(src.data(), src.size(), o, blocks.data()) : st;
}
[[nodiscard]] inline status mxfp4_quantize_ggml(span<const bfloat16> src, const mx_options& o,
                                                span<ggml_block_mxfp4> blocks) noexcept {
  const status st = detail::mxfp4_ggml_check_spans<bfloat16>(src.size(), o, blocks.size());
  return st ? mxfp4_quantize_ggml(src.data(), src.size(), o, blocks.data()) : st;
}
[[nodiscard]] inline status mxfp4_dequantize_ggml(span<const ggml_block_mxfp4> blocks, const mx_options& o,
                                                  span<float> dst) noexcept {
  const status st = detail::mxfp4_ggml_check_spans<float>(dst.size(), o, blocks.size());
  return st ? mxfp4_dequantize_ggml(blocks.data(), dst.size(), o, dst.data()) : st;
}
[[nodiscard]] inline status mxfp4_dequantize_ggml(span<const ggml_block_mxfp4> blocks, const mx_options& o,
                                                  span<bfloat16> dst) noexcept {
  const status st = detail::mxfp4_ggml_check_spans<bfloat16>(dst.size(), o, blocks.size());
  return st ? mxfp4_dequantize_ggml(blocks.data(), dst.size(), o, dst.data()) : st;
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_MX_HPP
