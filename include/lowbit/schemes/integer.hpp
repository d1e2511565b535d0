// lowbit: integer quantization schemes, q = clamp(round(x / s) + z).
//
// Widths 2..8 bits; symmetric (restricted, full or signed-extreme range), affine with an integer
// zero-point, or affine with a float offset (KIVI: x = q*s + m); one scale per tensor, per row
// (channel of a [out, in] weight, or token of an activation matrix) or per group of G consecutive
// elements along a row. docs/integer-schemes.md has the formulas, the tables and the diagrams.
//
// Codes. Every scheme produces unsigned b-bit codes u in 0..2^b-1, one per byte, and every scheme
// dequantizes as x^ = (u - z) * s (+ m for the float offset). Symmetric schemes use the fixed
// zero-point z = 2^(b-1), i.e. offset binary: u = q + 2^(b-1), which is what GPTQ (zero 8) and
// ggml Q4_0 (q + 8) store; symmetric_value() gives the two's complement q.
//
// Determinism. x / s is one IEEE float division; the rounding of the quotient to an integer is
// done explicitly (round_to_code below), so it does not depend on the FPU rounding mode; scales
// are computed in double and rounded once to their storage format. Codes are always computed
// against the stored scale, so dequantize(quantize(x)) is what an engine reading the checkpoint
// gets. Each bulk call runs the AVX2 kernels when lowbit::active_isa() selects them, else the
// scalar reference (kernels/integer/reference.hpp); both give the same bytes.
//
// Calls follow docs/api.md: f(inputs, shape, options, outputs, random_bits); the checks run
// options -> shape -> n = 0 (ok, nothing written) -> buffers (null, misaligned, overlapping) ->
// data, and nothing is written before the data errors; a data error leaves the groups before the
// failing one written. Never an exception. docs/integer-schemes.md has the error table.
//
// quantized_matrix, the owning container, is in schemes/quantized_matrix.hpp (included below).
#ifndef LOWBIT_SCHEMES_INTEGER_HPP
#define LOWBIT_SCHEMES_INTEGER_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/checks.hpp"
#include "../core/memory.hpp"
#include "../core/packing.hpp"
#include "../core/rounding.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/integer/dispatch.hpp"
#include "../kernels/integer/reference.hpp"
#include "layouts/bitstream.hpp"
#include "storage.hpp"

namespace lowbit {

// ---------------------------------------------------------------------------------------------
// Parameters

enum class int_scheme : std::uint8_t {
  symmetric,      // x^ = (u - 2^(b-1)) * s; range rule from int_range
  affine,         // x^ = (u - z) * s, integer z in 0..2^b-1 (GPTQ asym, AWQ, FBGEMM)
  affine_offset,  // x^ = u * s + m, float offset m = min (KIVI; ggml Q4_1 and FBGEMM row-wise are alike)
};

// Symmetric range rules, with amax = max |x| over the group:
//  restricted     s = amax / (2^(b-1) - 1), q in -(2^(b-1)-1)..2^(b-1)-1 (INT4 -7..7, INT8 -127..127):
//                 AWQ without zero-point, QuaRot, SmoothQuant, ggml Q8_0.
//  full           s = amax / (2^(b-1) - 1/2) = 2*amax / (2^b - 1), q in -2^(b-1)..2^(b-1)-1
//                 (INT4 -8..7, s = amax/7.5: +amax lands on 7.5 and clamps to 7, -amax on -7.5
//                 and rounds to -8): GPTQ, AutoGPTQ, compressed-tensors.
//  signed_extreme s = m / -2^(b-1) with m the signed value of largest magnitude, so m maps exactly
//                 to -2^(b-1) and s is negative when m is positive (ggml Q4_0). On a tie between
//                 +a and -a, m = -a (positive scale); ggml's own writer takes the first in memory.
enum class int_range : std::uint8_t { restricted, full, signed_extreme };

enum class granularity : std::uint8_t {
  per_tensor,   // one scale for the whole matrix
  per_channel,  // one per row of a [out, in] weight (output channel)
  per_token,    // one per row of a [tokens, features] activation (the same mechanics)
  per_group,    // one per group_size consecutive elements of a row (groups along `in`)
};

// scale_storage (fp32, fp16, bf16), the storage format of scales and float offsets, and
// bytes_per_scale() are defined in kernels/integer/reference.hpp, shared with the kernels.

// How the range [lo, hi] behind a scale is chosen.
//  minmax    the group's amax (symmetric) or min/max (affine).
//  mse_grid  GPTQ's search (quant.py, mse=True): candidates p = 1 - i/grid for i = 0 ..
//            floor(maxshrink*grid) - 1 (defaults: 100, 0.8 -> 80 candidates 1.00 .. 0.21); a range
//            containing 0 shrinks to [p*lo, p*hi], one that does not shrinks about its midpoint;
//            each candidate's codes are computed against its stored scale and scored by
//            sum |x^ - x|^norm in double (norm 2.4 as GPTQ; norm 2 is plain MSE, computed as d*d);
//            the smallest score wins, the earlier (larger p) on ties. search_grid is at most
//            max_search_grid (10000): each candidate costs a pass over the group.
enum class scale_search : std::uint8_t { minmax, mse_grid };

// How a signed grid's codes are stored (symmetric and affine schemes; docs/integer-schemes.md §1).
//  offset_binary    u = q + 2^(b-1) in 0..2^b-1, zero-points z in 0..2^b-1 (GPTQ, AWQ, ggml Q4_0).
//  twos_complement  q = u - 2^(b-1) in -2^(b-1)..2^(b-1)-1: one code per byte as the sign-extended
//                   int8 byte uint8_t(int8_t(q)); packed codes hold its low b bits (an INT4 nibble
//                   is the offset code XOR 0x8, an INT8 byte the offset code XOR 0x80); integer
//                   zero-points are stored as z - 2^(b-1) (ONNX INT8/INT4 with int8 zero points).
//                   A float offset (affine_offset) has no signed form: bad_argument.
enum class int_code_storage : std::uint8_t { offset_binary, twos_complement };

// The axis groups run along in a row-major [rows, cols] matrix.
//  cols  a group is consecutive elements of one row (along `in` of a [out, in] weight); scales
//        [rows, ceil(cols/G)]; per_channel / per_token: one scale per row. ONNX blocked axis 1.
//  rows  a group is consecutive elements of one column; scales [ceil(rows/G), cols] row-major
//        (ONNX's blocked scale tensor with axis 0); per_channel / per_token: one scale per column
//        (ONNX per-axis with axis 1), scales [cols]. per_tensor is one group either way.
enum class int_group_axis : std::uint8_t { cols, rows };

// The largest int_params::search_grid (a larger one is errc::bad_argument).
inline constexpr int max_search_grid = 10000;

// The options of every integer call. Validated before anything else (int_groups): bits outside
// 2..8 -> bad_bit_width; a group_size with a granularity other than per_group, or per_group
// without one -> bad_group_size; an enumerator out of range or a search setting outside its
// bounds -> bad_argument.
struct int_params {
  int bits = 8;                                   // 2..8
  int_scheme scheme = int_scheme::symmetric;
  int_range range = int_range::restricted;        // symmetric only
  bool range_includes_zero = true;                // affine only: widen [min, max] to contain 0
                                                  // (GPTQ, FBGEMM); false: true min/max (AWQ)
  lowbit::granularity granularity = lowbit::granularity::per_channel;
  std::size_t group_size = 0;                     // per_group only (and then required): divides cols
  rounding element_rounding = rounding::nearest_even;  // rounding of x / s to a code
  scale_storage scale_format = scale_storage::fp32;
  scale_search search = scale_search::minmax;
  int search_grid = 100;                          // mse_grid only, 1..max_search_grid
  float search_maxshrink = 0.8f;                  // mse_grid only, in (0, 1]
  float search_norm = 2.4f;                       // mse_grid only, > 0
  int_code_storage code_storage = int_code_storage::offset_binary;  // signed codes: offset or two's complement
  int_group_axis group_axis = int_group_axis::cols;  // groups along a row (cols) or down a column (rows)
  bool partial_groups = false;                    // per_group: G need not divide the grouped axis;
                                                  // ceil(len/G) groups, the last one shorter
  float zero_group_scale = 0.0f;                  // 0: off; else the scale stored for a group whose range
                                                  // gives scale 0 (its codes stay the zero code); > 0,
                                                  // exactly representable in scale_format
};

// ONNX QuantizeLinear / DequantizeLinear's integer output types.
enum class onnx_type : std::uint8_t { int8, uint8, int4, uint4 };

// Named settings of the engines lowbit reads and writes.
namespace int_presets {
// GPTQ / AutoGPTQ: symmetric full range (s = 2*amax/15, zero 8), groups along `in`, fp16 scales.
inline int_params gptq(int bits = 4, std::size_t group_size = 128) noexcept {
  int_params p;
  p.bits = bits;
  p.range = int_range::full;
  p.granularity = granularity::per_group;
  p.group_size = group_size;
  p.scale_format = scale_storage::fp16;
  return p;
}
// AWQ (llm-awq / AutoAWQ default): affine with integer zero-point, true min/max, fp16 scales.
inline int_params awq(int bits = 4, std::size_t group_size = 128) noexcept {
  int_params p = gptq(bits, group_size);
  p.scheme = int_scheme::affine;
  p.range_includes_zero = false;
  return p;
}
// ggml Q4_0's grid (signed extreme, 32-element groups, fp16 scales). lowbit rounds x/s to nearest
// even against the stored scale; ggml_quantize_q4_0 in layouts.hpp is ggml's own rule.
inline int_params ggml_q4_0() noexcept {
  int_params p = gptq(4, 32);
  p.range = int_range::signed_extreme;
  return p;
}
// ggml Q8_0's grid (amax/127, 32-element groups, fp16 scales).
inline int_params ggml_q8_0() noexcept {
  int_params p = gptq(8, 32);
  p.range = int_range::restricted;
  return p;
}
// SmoothQuant W8A8 weights: INT8 symmetric -127..127 per output channel.
inline int_params int8_per_channel(scale_storage fmt = scale_storage::fp32) noexcept {
  int_params p;
  p.scale_format = fmt;
  return p;
}
// One INT8 symmetric scale for the whole tensor (the lesson's per-tensor activation scale,
// amax / 127; SmoothQuant's O3 setting).
inline int_params int8_per_tensor(scale_storage fmt = scale_storage::fp32) noexcept {
  int_params p = int8_per_channel(fmt);
  p.granularity = granularity::per_tensor;
  return p;
}
// SmoothQuant W8A8 activations: INT8 symmetric per token.
inline int_params int8_per_token(scale_storage fmt = scale_storage::fp32) noexcept {
  int_params p = int8_per_channel(fmt);
  p.granularity = granularity::per_token;
  return p;
}
// KIVI: float offset m = min, s = (max - min)/(2^b - 1), per group, fp16 metadata. Keys are
// grouped per channel: for a [tokens, channels] cache set group_axis = int_group_axis::rows (a
// group runs down a channel over group_size tokens); values per token, the default axis.
inline int_params kivi(int bits = 2, std::size_t group_size = 32) noexcept {
  int_params p = gptq(bits, group_size);
  p.scheme = int_scheme::affine_offset;
  return p;
}
// ONNX QuantizeLinear conventions (y = saturate(round_half_even(x / y_scale) + y_zero_point),
// x^ = (y - y_zero_point) * y_scale) for a 2-D [rows, cols] tensor, with ONNX's own `axis` (0 or
// 1, or -2 / -1) and `block_size`: block_size 0 is per-axis (axis 0: one scale per row; axis 1:
// one scale per column), block_size > 0 blocked along `axis` (axis 1: groups along a row; axis 0:
// down a column, scales [ceil(rows/B), cols]); the last block may be shorter. Signed types
// (int8, int4): symmetric, full range (s = 2*amax/(2^b - 1), codes saturate to -2^(b-1)..2^(b-1)-1
// as ONNX does, zero point 0: store none or zeros), codes in two's complement. Unsigned types
// (uint8, uint4): affine with an integer zero-point, the range widened to contain 0. fp32 scales;
// an all-zero group stores the scale 1 (ONNX would otherwise compute 0 / 0). For per-tensor set
// granularity = per_tensor afterwards; for a signed zero point, scheme = affine. An axis outside
// -2..1 gives params check_int_params rejects (bad_argument).
inline int_params onnx(onnx_type t, int axis = 1, std::size_t block_size = 0) noexcept {
  int_params p;
  const bool is_signed = t == onnx_type::int8 || t == onnx_type::int4;
  p.bits = t == onnx_type::int8 || t == onnx_type::uint8 ? 8 : 4;
  p.scheme = is_signed ? int_scheme::symmetric : int_scheme::affine;
  p.range = int_range::full;
  p.code_storage = is_signed ? int_code_storage::twos_complement : int_code_storage::offset_binary;
  p.partial_groups = true;
  p.zero_group_scale = 1.0f;
  if (axis < 0) axis += 2;
  if (axis != 0 && axis != 1) {
    p.group_axis = static_cast<int_group_axis>(0xFF);  // rejected by check_int_params
    return p;
  }
  if (block_size == 0) {  // per-axis: one scale per index of `axis`, the group runs along the other
    p.granularity = granularity::per_channel;
    p.group_axis = axis == 0 ? int_group_axis::cols : int_group_axis::rows;
  } else {                // blocked along `axis`
    p.granularity = granularity::per_group;
    p.group_size = block_size;
    p.group_axis = axis == 0 ? int_group_axis::rows : int_group_axis::cols;
  }
  return p;
}
}  // namespace int_presets

// Largest code 2^b - 1, and the fixed zero-point 2^(b-1) of the symmetric schemes.
constexpr int max_code(int bits) noexcept { return (1 << bits) - 1; }
constexpr int symmetric_zero_point(int bits) noexcept { return 1 << (bits - 1); }
// The signed integer q = u - 2^(b-1) that a symmetric code stands for (two's complement INT4/INT8).
constexpr int symmetric_value(std::uint8_t code, int bits) noexcept { return static_cast<int>(code) - (1 << (bits - 1)); }

// Whether the scheme stores one float per group besides the scale (zero-point or offset).
constexpr bool has_zero_points(const int_params& p) noexcept { return p.scheme != int_scheme::symmetric; }

// ---------------------------------------------------------------------------------------------
// Shape and validation

struct int_grouping {
  std::size_t group_length = 0;  // elements per scale (the last group of a row or column may be
                                 // shorter under partial_groups); contiguous in row-major order
                                 // along cols, strided by cols along rows
  std::size_t group_count = 0;   // number of scales (and zero-points)
};

// Whether v is exactly representable in fmt (and finite).
inline bool is_stored_scale(float v, scale_storage fmt) noexcept {
  if (!std::isfinite(v)) return false;
  switch (fmt) {
    case scale_storage::fp32: return true;
    case scale_storage::fp16: return static_cast<float>(encode<float16>(v)) == v;
    case scale_storage::bf16: return static_cast<float>(encode<bfloat16>(v)) == v;
  }
  return false;
}

namespace detail {
// Where the groups of p lie in a [rows, cols] matrix of n elements (options and shape checked).
// Group k holds `length` elements first, first + stride, ...; `regular` when every group is a
// contiguous run of group_length (groups along cols that divide cols, or one per tensor): the
// fused SIMD paths take those, a general path (gather, codec, scatter) the others.
struct int_layout {
  std::size_t rows = 0, cols = 0;
  bool along_rows = false;  // group_axis rows (not per_tensor)
  std::size_t len = 0;      // nominal group length
  std::size_t lines = 0;    // groups per row (along cols) / blocks per column (along rows)
  std::size_t count = 0;
  bool regular = true;
  bool twos = false;        // two's complement code storage
  void group(std::size_t k, std::size_t* first, std::size_t* length, std::size_t* stride) const noexcept {
    if (along_rows) {
      const std::size_t blk = k / cols, c = k % cols;
      *first = blk * len * cols + c;
      *length = rows - blk * len < len ? rows - blk * len : len;
      *stride = cols;
      return;
    }
    if (lines == 0) {  // per_tensor
      *first = 0;
      *length = len;
      *stride = 1;
      return;
    }
    const std::size_t line = k / lines, j = k % lines;
    *first = line * cols + j * len;
    *length = cols - j * len < len ? cols - j * len : len;
    *stride = 1;
  }
};

constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return a / b + (a % b != 0 ? 1u : 0u); }

// The layout of a non-empty [rows, cols] matrix under checked p.
inline int_layout make_layout(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  int_layout L;
  L.rows = rows;
  L.cols = cols;
  L.twos = p.code_storage == int_code_storage::twos_complement;
  if (p.granularity == granularity::per_tensor) {
    L.len = rows * cols;
    L.count = 1;
    return L;
  }
  const bool per_group = p.granularity == granularity::per_group;
  if (p.group_axis == int_group_axis::rows) {
    L.along_rows = true;
    L.len = per_group ? p.group_size : rows;
    L.lines = ceil_div(rows, L.len);
    L.count = L.lines * cols;
    L.regular = false;
    return L;
  }
  L.len = per_group ? p.group_size : cols;
  L.lines = ceil_div(cols, L.len);
  L.count = L.lines * rows;
  L.regular = cols % L.len == 0;
  return L;
}
}  // namespace detail

// Validates p alone (the options checks of docs/api.md, in its order).
[[nodiscard]] inline status check_int_params(const int_params& p) noexcept {
  if (p.bits < 2 || p.bits > 8) return errc::bad_bit_width;
  if ((p.granularity == granularity::per_group) != (p.group_size != 0)) return errc::bad_group_size;
  const bool bad_enum = static_cast<unsigned>(p.scheme) > 2u || static_cast<unsigned>(p.range) > 2u ||
                        static_cast<unsigned>(p.granularity) > 3u || static_cast<unsigned>(p.scale_format) > 2u ||
                        static_cast<unsigned>(p.search) > 1u || static_cast<unsigned>(p.element_rounding) > 5u;
  const bool bad_search = p.search == scale_search::mse_grid &&
                          (p.search_grid < 1 || p.search_grid > max_search_grid ||
                           !(p.search_maxshrink > 0.0f && p.search_maxshrink <= 1.0f) ||
                           !(p.search_norm > 0.0f && p.search_norm < std::numeric_limits<float>::infinity()));
  const bool bad_storage = static_cast<unsigned>(p.code_storage) > 1u || static_cast<unsigned>(p.group_axis) > 1u ||
                           (p.code_storage == int_code_storage::twos_complement &&
                            p.scheme == int_scheme::affine_offset);
  const bool bad_placeholder = p.zero_group_scale != 0.0f &&
                               !(p.zero_group_scale > 0.0f && is_stored_scale(p.zero_group_scale, p.scale_format));
  if (bad_enum || bad_search || bad_storage || bad_placeholder) return errc::bad_argument;
  return status{};
}

// Validates p for a [rows, cols] row-major matrix and gives its grouping. Errors: those of
// check_int_params; per_group with group_size not dividing cols -> bad_group_size; rows * cols,
// or its bytes as float, beyond what an object can hold -> bad_argument. An empty matrix (rows
// or cols 0) is ok, with group_count 0.
[[nodiscard]] inline result<int_grouping> int_groups(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  result<int_grouping> r;
  if (status s = check_int_params(p); !s) {
    r.status = s;
    return r;
  }
  if (p.granularity == granularity::per_group && !p.partial_groups &&
      (p.group_axis == int_group_axis::rows ? rows : cols) % p.group_size != 0) {
    r.status = errc::bad_group_size;
    return r;
  }
  std::size_t n = 0;
  if (status s = detail::checked_shape(rows, cols, sizeof(float), &n); !s) {
    r.status = s;
    return r;
  }
  if (n == 0) {
    r.value = {p.granularity == granularity::per_group ? p.group_size : 0, 0};
    return r;
  }
  const detail::int_layout L = detail::make_layout(p, rows, cols);
  r.value = {L.len, L.count};
  return r;
}

// ---------------------------------------------------------------------------------------------
// Rounding. round_to_code (x / s to a code), int_group_codec (one group's parameters), the
// scalar reference kernels int_ref and the int_kernels table they fill are in
// kernels/integer/reference.hpp, shared with the SIMD kernels.

namespace detail {
// Whether every value of the codec's grid is a finite float as the dequantizer computes it
// (int_ref::dequantize_one: (u - z) * s, or u * s + m), and, with an offset, whether x - m stays
// finite for every x up to hi. The products grow with |u - z|, so the extreme codes decide.
inline bool grid_is_finite(const int_group_codec& c, float hi) noexcept {
  if (c.has_offset)
    return std::isfinite(kernels::int_ref::dequantize_one(static_cast<std::uint8_t>(c.code_max), c)) &&
           std::isfinite(hi - c.offset);
  const int below = c.zero_point - c.code_min;
  const int above = c.code_max - c.zero_point;
  return std::isfinite(static_cast<float>(below > above ? below : above) * c.scale);
}
}  // namespace detail

// Rounds a computed scale or offset to its storage format. A value beyond the format's range
// (fp16 above 65504) is errc::scale_overflow: the checkpoint could not hold it.
[[nodiscard]] inline result<float> store_scale(double v, scale_storage fmt) noexcept {
  result<float> r;
  float s = 0.0f;
  switch (fmt) {
    case scale_storage::fp32: s = static_cast<float>(v); break;
    case scale_storage::fp16: s = static_cast<float>(encode<float16>(v, overflow::non_saturate)); break;
    case scale_storage::bf16: s = static_cast<float>(encode<bfloat16>(v, overflow::non_saturate)); break;
  }
  if (!std::isfinite(s)) {
    r.status = errc::scale_overflow;
    return r;
  }
  r.value = s == 0.0f ? 0.0f : s;  // no -0
  return r;
}

// ---------------------------------------------------------------------------------------------
// One group's codec

// The codec of a group whose values span [lo, hi] (finite, lo <= hi), with the range shrunk by
// `shrink` in (0, 1] (1 = minmax; see scale_search). Errors: a scale or offset beyond the storage
// format's range, or a grid whose values (u - z) * s (u * s + m) or differences x - m overflow
// float (a group reaching +-FLT_MAX) -> scale_overflow.
[[nodiscard]] inline result<int_group_codec> make_int_codec(float lo, float hi, const int_params& p,
                                                            double shrink = 1.0) noexcept {
  result<int_group_codec> r;
  int_group_codec& c = r.value;
  c.rm = p.element_rounding;
  c.code_max = max_code(p.bits);
  const double qmax = c.code_max;
  const double half = symmetric_zero_point(p.bits);
  double dlo = lo;
  double dhi = hi;
  double scale = 0.0;
  if (p.scheme == int_scheme::symmetric) {
    c.zero_point = symmetric_zero_point(p.bits);
    c.code_min = p.range == int_range::restricted ? 1 : 0;
    const double amax = (dhi > -dlo ? dhi : -dlo) * shrink;
    switch (p.range) {
      case int_range::restricted: scale = amax / (half - 1.0); break;
      case int_range::full: scale = amax / (half - 0.5); break;
      case int_range::signed_extreme: scale = (dhi > -dlo ? dhi : dlo) * shrink / -half; break;
    }
    result<float> s = store_scale(scale, p.scale_format);
    if (!s.ok()) {
      r.status = s.status;
      return r;
    }
    c.scale = s.value;
    if (!detail::grid_is_finite(c, hi)) r.status = errc::scale_overflow;
    return r;
  }
  const bool widen = p.scheme == int_scheme::affine && (p.range_includes_zero || lo == hi);
  if (widen) {  // a one-valued group falls back to the widened range: [3, 3] -> [0, 3]
    dlo = dlo < 0.0 ? dlo : 0.0;
    dhi = dhi > 0.0 ? dhi : 0.0;
  }
  if (shrink != 1.0) {
    if (dlo <= 0.0 && dhi >= 0.0) {
      dlo *= shrink;
      dhi *= shrink;
    } else {
      const double mid = 0.5 * (dlo + dhi);
      dlo = mid - kernels::no_contract(shrink * (mid - dlo));
      dhi = mid + kernels::no_contract(shrink * (dhi - mid));
    }
  }
  result<float> s = store_scale((dhi - dlo) / qmax, p.scale_format);
  if (!s.ok()) {
    r.status = s.status;
    return r;
  }
  c.scale = s.value;
  if (p.scheme == int_scheme::affine_offset) {
    result<float> m = store_scale(dlo, p.scale_format);
    if (!m.ok()) {
      r.status = m.status;
      return r;
    }
    c.has_offset = true;
    c.offset = m.value;
    if (!detail::grid_is_finite(c, hi)) r.status = errc::scale_overflow;
    return r;
  }
  // z = round(-lo / s) against the stored scale, nearest even whatever p.element_rounding says, in 0..2^b-1.
  if (c.scale != 0.0f)
    c.zero_point = round_to_code(static_cast<float>(-dlo) / c.scale, 0, c.code_max, rounding::nearest_even);
  if (!detail::grid_is_finite(c, hi)) r.status = errc::scale_overflow;
  return r;
}

namespace detail {
// choose_int_codec with the table of the active path, inside the caller's IEEE scope.
// error(codec) scores a candidate over the whole group.
template <class Error>
inline result<int_group_codec> choose_codec_by(float lo, float hi, const int_params& p, Error error) noexcept {
  result<int_group_codec> best = make_int_codec(lo, hi, p);
  if (!best.ok() || p.search != scale_search::mse_grid || best.value.scale == 0.0f) return best;
  double best_err = error(best.value);
  const int steps = static_cast<int>(static_cast<double>(p.search_maxshrink) * p.search_grid);
  for (int i = 1; i < steps; ++i) {
    const double shrink = 1.0 - static_cast<double>(i) / p.search_grid;
    result<int_group_codec> c = make_int_codec(lo, hi, p, shrink);
    if (!c.ok()) continue;
    const double e = error(c.value);
    if (e < best_err) {
      best_err = e;
      best = c;
    }
  }
  return best;
}

inline result<int_group_codec> choose_codec(const float* x, std::size_t n, float lo, float hi, const int_params& p,
                                            const std::uint32_t* random_bits, const kernels::int_kernels& k) noexcept {
  const double norm = p.search_norm;
  return choose_codec_by(lo, hi, p, [&](const int_group_codec& c) { return k.error(x, n, c, norm, random_bits); });
}
}  // namespace detail

// Chooses the codec of one group (minmax or the mse_grid search). x holds the group's n values
// (finite), spanning [lo, hi]; random_bits: n values for stochastic rounding, or null. p must have
// passed check_int_params (search_grid bounded).
[[nodiscard]] inline result<int_group_codec> choose_int_codec(const float* x, std::size_t n, float lo, float hi,
                                                              const int_params& p,
                                                              const std::uint32_t* random_bits) noexcept {
  const kernels::ieee_scope env;
  return detail::choose_codec(x, n, lo, hi, p, random_bits, kernels::active_int_kernels());
}

// The codec that stored parameters describe (scale, and zero-point or offset for the affine
// schemes; the zero-point as stored: z, or z - 2^(b-1) under twos_complement). Errors: a scale or
// offset that is not finite or not exactly representable in p.scale_format, or an affine
// zero-point that is not an integer in 0..2^b-1 (-2^(b-1)..2^(b-1)-1) -> bad_argument.
[[nodiscard]] inline result<int_group_codec> stored_int_codec(float scale, float zero, const int_params& p) noexcept {
  result<int_group_codec> r;
  int_group_codec& c = r.value;
  c.rm = p.element_rounding;
  c.code_max = max_code(p.bits);
  if (!is_stored_scale(scale, p.scale_format)) {
    r.status = errc::bad_argument;
    return r;
  }
  c.scale = scale;
  switch (p.scheme) {
    case int_scheme::symmetric:
      c.zero_point = symmetric_zero_point(p.bits);
      c.code_min = p.range == int_range::restricted ? 1 : 0;
      break;
    case int_scheme::affine: {
      // Two's complement stores z - 2^(b-1): the stored value lies in -2^(b-1)..2^(b-1)-1.
      const float bias = p.code_storage == int_code_storage::twos_complement
                             ? static_cast<float>(symmetric_zero_point(p.bits)) : 0.0f;
      if (!(zero >= -bias && zero <= static_cast<float>(c.code_max) - bias && std::floor(zero) == zero)) {
        r.status = errc::bad_argument;
        return r;
      }
      c.zero_point = static_cast<int>(zero + bias);
      break;
    }
    case int_scheme::affine_offset:
      if (!is_stored_scale(zero, p.scale_format)) {
        r.status = errc::bad_argument;
        return r;
      }
      c.has_offset = true;
      c.offset = zero;
      break;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Bulk operations on a [rows, cols] row-major matrix: the allocation-free core
//
// One pattern per call: check the arguments (docs/api.md order), open the IEEE scope once, run
// the path lowbit::active_isa() selects. On the AVX2 path, whole-matrix kernels stand in for the
// per-group loop where they apply (symmetric and affine minmax quantization, dequantization);
// they give the same bytes, and leave the groups they cannot do exactly (NaN, Inf, scale
// overflow, tiny or huge values) to the loop below, which reports the error or does the group
// and hands back.

namespace detail {

// The parts of a whole-matrix quantization job that come from p and the group length.
inline void set_job_params(const int_params& p, std::size_t len, kernels::int_quantize_io* j) noexcept {
  j->group_length = len;
  j->code_max = max_code(p.bits);
  j->scale_format = p.scale_format;
  j->rm = p.element_rounding;
}

// The whole-matrix job for the symmetric minmax schemes (restricted or full range), when k is a
// SIMD table; false otherwise.
inline bool symmetric_job(const int_params& p, const kernels::int_kernels& k, std::size_t len,
                          kernels::int_symmetric_job* j) noexcept {
  if (!kernels::int_fused(k) || p.scheme != int_scheme::symmetric || p.range == int_range::signed_extreme ||
      p.search != scale_search::minmax)
    return false;
  const double half = symmetric_zero_point(p.bits);
  set_job_params(p, len, j);
  j->divisor = static_cast<float>(p.range == int_range::restricted ? half - 1.0 : half - 0.5);  // exact
  j->zero_point = symmetric_zero_point(p.bits);
  j->code_min = p.range == int_range::restricted ? 1 : 0;
  return true;
}

// The whole-matrix job for the affine minmax schemes (integer zero-point or float offset), when k
// is a SIMD table; false otherwise.
inline bool affine_job(const int_params& p, const kernels::int_kernels& k, std::size_t len,
                       kernels::int_affine_job* j) noexcept {
  if (!kernels::int_fused(k) || p.scheme == int_scheme::symmetric || p.search != scale_search::minmax) return false;
  set_job_params(p, len, j);
  j->offset = p.scheme == int_scheme::affine_offset;
  j->widen_to_zero = p.range_includes_zero;
  return true;
}

// The whole-matrix quantization job of p, if any: run(first, last) quantizes groups from first on
// and returns the first group it leaves to the per-group loop (first when there is no job).
class fused_quantize {
 public:
  // codes: one per byte, or (bits 4, pack_nibbles) as pack_codes; packed output takes bits 8, or
  // bits 4 with an even group length.
  fused_quantize(const int_params& p, const kernels::int_kernels& k, std::size_t len, bool packed,
                 std::uint8_t* codes, const float* x, const std::uint32_t* random_bits, float* scales,
                 float* zeros) noexcept {
    if (packed && !(p.bits == 8 || (p.bits == 4 && len % 2 == 0))) return;
    kernels::int_quantize_io* io = nullptr;
    if (symmetric_job(p, k, len, &sym_)) {
      kind_ = job_kind::symmetric;
      io = &sym_;
    } else if (affine_job(p, k, len, &aff_)) {
      kind_ = job_kind::affine;
      aff_.zeros = zeros;
      io = &aff_;
    } else {
      return;
    }
    io->x = x;
    io->random_bits = random_bits;
    io->codes = codes;
    io->pack_nibbles = packed && p.bits == 4;
    io->scales = scales;
  }

  std::size_t run(std::size_t first, std::size_t last) const noexcept {
    switch (kind_) {
      case job_kind::none: break;
      case job_kind::symmetric: return kernels::quantize_symmetric(sym_, first, last);
      case job_kind::affine: return kernels::quantize_affine(aff_, first, last);
    }
    return first;
  }

 private:
  enum class job_kind : std::uint8_t { none, symmetric, affine };
  job_kind kind_ = job_kind::none;
  kernels::int_symmetric_job sym_;
  kernels::int_affine_job aff_;
};

// The whole-matrix dequantization job, when k is a SIMD table; false otherwise.
inline bool dequantize_job(const int_params& p, const kernels::int_kernels& k, std::size_t len, const float* scales,
                           const float* zeros, kernels::int_dequantize_job* j) noexcept {
  if (!kernels::int_fused(k)) return false;
  j->group_length = len;
  j->scales = scales;
  j->zeros = has_zero_points(p) ? zeros : nullptr;
  j->zeros_are_offsets = p.scheme == int_scheme::affine_offset;
  j->zero_point = symmetric_zero_point(p.bits);
  j->code_min = p.scheme == int_scheme::symmetric && p.range == int_range::restricted ? 1 : 0;
  j->code_max = max_code(p.bits);
  j->scale_format = p.scale_format;
  return true;
}

// The codec of one group of quantize_int (range, then choose_codec).
inline result<int_group_codec> group_codec(const float* xg, std::size_t len, const int_params& p,
                                           const std::uint32_t* rg, const kernels::int_kernels& k) noexcept {
  float lo = 0.0f;
  float hi = 0.0f;
  if (!k.range(xg, len, &lo, &hi)) {
    result<int_group_codec> r;
    r.status = errc::non_finite_input;
    return r;
  }
  return choose_codec(xg, len, lo, hi, p, rg, k);
}

// Writes y[0..n) from floats: the floats themselves, or bfloat16 rounded to nearest even.
inline void store_values(float* y, const float* v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = v[i];
}
inline void store_values(bfloat16* y, const float* v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = encode<bfloat16>(v[i]);
}

// The random bits the rounding uses: the caller's for stochastic rounding, else none.
inline const std::uint32_t* rounding_bits(const int_params& p, const std::uint32_t* random_bits) noexcept {
  return p.element_rounding == rounding::stochastic ? random_bits : nullptr;
}

// What a bulk call has checked: its grouping, element count and the zero-points it reads or
// writes (group_count for the affine schemes, 0 for symmetric ones).
struct int_call {
  int_grouping g;
  std::size_t n = 0;
  std::size_t zero_count = 0;
  int_layout layout;  // where the groups lie (n > 0)
};

// The options and shape checks of a bulk call (int_groups), in docs/api.md's order.
inline result<int_call> int_call_shape(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  result<int_call> r;
  const result<int_grouping> g = int_groups(p, rows, cols);
  if (!g.ok()) {
    r.status = g.status;
    return r;
  }
  r.value.g = g.value;
  r.value.n = rows * cols;
  r.value.zero_count = has_zero_points(p) ? g.value.group_count : 0;
  if (r.value.n != 0) r.value.layout = make_layout(p, rows, cols);
  return r;
}

// ---- Storage of codes and parameters (int_code_storage, zero_group_scale)

// One code per byte: the stored byte of offset code u (two's complement: uint8_t(int8_t(u - h)))
// and back. A packed field is the low b bits of the stored byte, i.e. u XOR h.
inline std::uint8_t stored_code(std::uint8_t u, int bits) noexcept {
  return static_cast<std::uint8_t>(u - (1u << (bits - 1)));
}
inline std::uint8_t offset_code(std::uint8_t t, int bits) noexcept {
  return static_cast<std::uint8_t>(t + (1u << (bits - 1)));
}

// The scale and zero-point a group stores for its codec: zero_group_scale in place of a zero
// scale, the zero-point as a float (less 2^(b-1) under twos_complement) or the offset.
inline void store_group_params(const int_params& p, const int_group_codec& c, std::size_t g, float* scales,
                               float* zeros) noexcept {
  scales[g] = c.scale == 0.0f && p.zero_group_scale != 0.0f ? p.zero_group_scale : c.scale;
  if (!has_zero_points(p)) return;
  const int bias = p.code_storage == int_code_storage::twos_complement ? symmetric_zero_point(p.bits) : 0;
  zeros[g] = c.has_offset ? c.offset : static_cast<float>(c.zero_point - bias);
}

// What the regular path does after codes and parameters of groups [a, b) were written in offset
// binary with zero scales (by the fused SIMD job, or per group): the placeholder scale, the
// stored zero-points and (codes_too) the codes in two's complement, in place, while they are in
// cache. Packed codes come only from the fused job here: 8 bits, or 4 bits with an even group
// length, so the groups start on byte boundaries and the conversion is one XOR per byte.
struct int_fixup {
  const int_params& p;
  std::size_t len;
  float* scales;
  float* zeros;
  std::uint8_t* codes;
  bool packed;
  bool needed() const noexcept {
    return p.zero_group_scale != 0.0f || p.code_storage == int_code_storage::twos_complement;
  }
  void operator()(std::size_t a, std::size_t b, bool codes_too) const noexcept {
    const bool twos = p.code_storage == int_code_storage::twos_complement;
    if (p.zero_group_scale != 0.0f)
      for (std::size_t g = a; g < b; ++g)
        if (scales[g] == 0.0f) scales[g] = p.zero_group_scale;
    if (!twos) return;
    if (p.scheme == int_scheme::affine)
      for (std::size_t g = a; g < b; ++g) zeros[g] -= static_cast<float>(symmetric_zero_point(p.bits));
    if (!codes_too) return;
    if (packed) {
      const std::uint8_t flip = p.bits == 8 ? 0x80u : 0x88u;
      const std::size_t per_group = p.bits == 8 ? len : len / 2;
      for (std::size_t i = a * per_group, e = b * per_group; i < e; ++i)
        codes[i] = static_cast<std::uint8_t>(codes[i] ^ flip);
      return;
    }
    for (std::size_t i = a * len, e = b * len; i < e; ++i) codes[i] = stored_code(codes[i], p.bits);
  }
};

// ---- The general path: groups of any layout (partial, along rows), one chunk at a time through
// stack buffers, with the per-group kernels of the active table (so both paths give the same bytes).

constexpr std::size_t general_chunk = 256;

// f(done, m, x, r) for each chunk of group (first, length, stride): pointers into src and rb for a
// contiguous group, gathered copies for a strided one; r null without random bits.
template <class F>
inline void for_group_chunks(const float* src, const std::uint32_t* rb, std::size_t first, std::size_t length,
                             std::size_t stride, F f) noexcept {
  float xb[general_chunk];
  std::uint32_t rbb[general_chunk];
  for (std::size_t done = 0; done < length; done += general_chunk) {
    const std::size_t m = length - done < general_chunk ? length - done : general_chunk;
    if (stride == 1) {
      f(done, m, src + first + done, rb != nullptr ? rb + first + done : nullptr);
      continue;
    }
    for (std::size_t i = 0; i < m; ++i) xb[i] = src[first + (done + i) * stride];
    if (rb != nullptr)
      for (std::size_t i = 0; i < m; ++i) rbb[i] = rb[first + (done + i) * stride];
    f(done, m, xb, rb != nullptr ? rbb : nullptr);
  }
}

// Writes offset codes as stored: one per byte or packed, contiguous or strided.
struct code_sink {
  std::uint8_t* out;
  bool packed;
  int bits;
  bool twos;
  void put(const std::uint8_t* u, std::size_t m, std::size_t pos, std::size_t stride) const noexcept {
    std::uint8_t buf[general_chunk];
    const std::uint8_t* c = u;
    if (twos) {
      for (std::size_t i = 0; i < m; ++i) buf[i] = stored_code(u[i], bits);
      c = buf;
    }
    if (!packed) {
      for (std::size_t i = 0; i < m; ++i) out[pos + i * stride] = c[i];
    } else if (stride == 1) {
      put_codes(c, m, bits, out, pos);  // keeps the low b bits: u XOR h under twos_complement
    } else {
      for (std::size_t i = 0; i < m; ++i) put_codes(c + i, 1, bits, out, pos + i * stride);
    }
  }
};

// Reads stored codes back to offset codes.
struct code_source {
  const std::uint8_t* in;
  bool packed;
  int bits;
  bool twos;
  void get(std::size_t pos, std::size_t stride, std::size_t m, std::uint8_t* u) const noexcept {
    if (!packed) {
      for (std::size_t i = 0; i < m; ++i) {
        const std::uint8_t t = in[pos + i * stride];
        u[i] = twos ? offset_code(t, bits) : t;
      }
      return;
    }
    if (stride == 1) {
      get_codes(in, pos, m, bits, u);
    } else {
      for (std::size_t i = 0; i < m; ++i) get_codes(in, pos + i * stride, 1, bits, u + i);
    }
    if (twos) {
      const std::uint8_t h = static_cast<std::uint8_t>(1u << (bits - 1));
      for (std::size_t i = 0; i < m; ++i) u[i] = static_cast<std::uint8_t>(u[i] ^ h);
    }
  }
};

// Whether group (first, length, stride) is finite; its range into lo, hi.
inline bool group_range(const float* src, std::size_t first, std::size_t length, std::size_t stride,
                        const kernels::int_kernels& k, float* lo, float* hi) noexcept {
  if (stride == 1) return k.range(src + first, length, lo, hi);
  bool finite = true;
  for_group_chunks(src, nullptr, first, length, stride,
                   [&](std::size_t done, std::size_t m, const float* x, const std::uint32_t*) {
                     float l = 0.0f, h = 0.0f;
                     finite = k.range(x, m, &l, &h) && finite;
                     if (done == 0 || l < *lo) *lo = l;
                     if (done == 0 || h > *hi) *hi = h;
                   });
  return finite;
}

// quantize_int / quantize_int_packed for any layout: per group, its range, codec and codes.
inline status quantize_general(const float* src, const int_params& p, const int_layout& L, const std::uint32_t* rb,
                               const kernels::int_kernels& k, const code_sink& sink, float* scales,
                               float* zeros) noexcept {
  const double norm = p.search_norm;
  for (std::size_t g = 0; g < L.count; ++g) {
    std::size_t first = 0, length = 0, stride = 0;
    L.group(g, &first, &length, &stride);
    float lo = 0.0f, hi = 0.0f;
    if (!group_range(src, first, length, stride, k, &lo, &hi)) return errc::non_finite_input;
    const result<int_group_codec> c = choose_codec_by(lo, hi, p, [&](const int_group_codec& cc) {
      if (stride == 1) return k.error(src + first, length, cc, norm, rb != nullptr ? rb + first : nullptr);
      double sum = 0.0;  // strided: chunk sums, in order
      for_group_chunks(src, rb, first, length, stride,
                       [&](std::size_t, std::size_t m, const float* x, const std::uint32_t* r) {
                         sum += k.error(x, m, cc, norm, r);
                       });
      return sum;
    });
    if (!c.ok()) return c.status;
    std::uint8_t u[general_chunk];
    for_group_chunks(src, rb, first, length, stride,
                     [&](std::size_t done, std::size_t m, const float* x, const std::uint32_t* r) {
                       k.quantize(x, m, c.value, r, u);
                       sink.put(u, m, first + done * stride, stride);
                     });
    store_group_params(p, c.value, g, scales, zeros);
  }
  return status{};
}

// quantize_int_fixed for any layout or code storage.
inline status quantize_fixed_general(const float* src, const float* scales, const float* zeros, const int_params& p,
                                     const int_layout& L, const std::uint32_t* rb, const kernels::int_kernels& k,
                                     const code_sink& sink) noexcept {
  for (std::size_t g = 0; g < L.count; ++g) {
    const result<int_group_codec> c = stored_int_codec(scales[g], has_zero_points(p) ? zeros[g] : 0.0f, p);
    if (!c.ok()) return c.status;
    std::size_t first = 0, length = 0, stride = 0;
    L.group(g, &first, &length, &stride);
    float lo = 0.0f, hi = 0.0f;
    if (!group_range(src, first, length, stride, k, &lo, &hi)) return errc::non_finite_input;
    std::uint8_t u[general_chunk];
    for_group_chunks(src, rb, first, length, stride,
                     [&](std::size_t done, std::size_t m, const float* x, const std::uint32_t* r) {
                       k.quantize(x, m, c.value, r, u);
                       sink.put(u, m, first + done * stride, stride);
                     });
  }
  return status{};
}

// Writes y[pos + i * stride] for i < m from floats (float, or bfloat16 rounded to nearest even).
inline void scatter_values(float* y, const float* v, std::size_t m, std::size_t pos, std::size_t stride) noexcept {
  for (std::size_t i = 0; i < m; ++i) y[pos + i * stride] = v[i];
}
inline void scatter_values(bfloat16* y, const float* v, std::size_t m, std::size_t pos, std::size_t stride) noexcept {
  for (std::size_t i = 0; i < m; ++i) y[pos + i * stride] = encode<bfloat16>(v[i]);
}

// dequantize_int / dequantize_int_packed for any layout or code storage.
template <class T>
inline status dequantize_general(const code_source& src, const float* scales, const float* zeros, const int_params& p,
                                 const int_layout& L, const kernels::int_kernels& k, T* dst,
                                 std::size_t first_group = 0) noexcept {
  std::uint8_t u[general_chunk];
  float v[general_chunk];
  for (std::size_t g = first_group; g < L.count; ++g) {
    const result<int_group_codec> c = stored_int_codec(scales[g], has_zero_points(p) ? zeros[g] : 0.0f, p);
    if (!c.ok()) return c.status;
    std::size_t first = 0, length = 0, stride = 0;
    L.group(g, &first, &length, &stride);
    for (std::size_t done = 0; done < length; done += general_chunk) {
      const std::size_t m = length - done < general_chunk ? length - done : general_chunk;
      const std::size_t pos = first + done * stride;
      src.get(pos, stride, m, u);
      k.dequantize(u, m, c.value, v);
      scatter_values(dst, v, m, pos, stride);
    }
  }
  return status{};
}

// The group loop of quantize_int and quantize_int_packed: the fused SIMD job takes the groups it
// can, the per-group codec the rest; write_codes(i, x_i, random_i, codec) stores group i's codes,
// then the scale and zero-point are stored here. On an error, the groups before the failing one
// are written (by either path) and nothing after.
// With a fixup (two's complement, placeholder scale) the groups go in slices of about 16 KiB of
// codes, each fixed up right after it is written; otherwise in one slice, as before.
template <class WriteCodes>
inline status quantize_groups(const float* x, const int_params& p, const int_grouping& g,
                              const std::uint32_t* rb, const kernels::int_kernels& k, const fused_quantize& fused,
                              float* scales, float* zeros, const int_fixup& fixup, bool per_group_codes_fixed,
                              WriteCodes write_codes) noexcept {
  const std::size_t len = g.group_length;
  const std::size_t count = g.group_count;
  const bool fix = fixup.needed();
  const std::size_t slice = !fix ? count : len >= 16384 ? 1 : 16384 / len;
  for (std::size_t i = 0; i < count;) {
    const std::size_t end = count - i <= slice ? count : i + slice;
    const std::size_t j = fused.run(i, end);
    if (fix && j > i) fixup(i, j, true);
    if (j == end) {
      i = end;
      continue;
    }
    const float* xg = x + j * len;
    const std::uint32_t* rg = rb != nullptr ? rb + j * len : nullptr;
    const result<int_group_codec> c = group_codec(xg, len, p, rg, k);
    if (!c.ok()) return c.status;
    write_codes(j, xg, rg, c.value);
    scales[j] = c.value.scale;
    if (has_zero_points(p)) zeros[j] = c.value.has_offset ? c.value.offset : static_cast<float>(c.value.zero_point);
    if (fix) fixup(j, j + 1, !per_group_codes_fixed);
    i = j + 1;
  }
  return status{};
}

// Two's complement codes of a regular layout on the fused path: slices of whole groups (at most
// 4 KiB of codes) are converted to offset binary in a stack buffer, their zero-points to the
// offset grid (NaN where stored_int_codec would reject one, so that the job stops there), and the
// fused job dequantizes the slice. False when it does not apply (the caller takes the general path).
template <class T>
inline bool dequantize_twos_fused(const std::uint8_t* codes, bool packed, const float* scales, const float* zeros,
                                  const int_params& p, const int_layout& L, const kernels::int_kernels& k, T* dst,
                                  status* st) noexcept {
  constexpr std::size_t cap = 4096;
  constexpr std::size_t max_groups = 512;
  const std::size_t len = L.len;
  if (!kernels::int_fused(k) || !L.regular || !L.twos || (packed && !(p.bits == 8 || (p.bits == 4 && len % 2 == 0))))
    return false;
  const std::size_t group_bytes = packed && p.bits == 4 ? len / 2 : len;
  if (group_bytes > cap) return false;
  const std::size_t per = cap / group_bytes < max_groups ? cap / group_bytes : max_groups;
  std::uint8_t cb[cap];
  float zb[max_groups];
  kernels::int_dequantize_job job;
  dequantize_job(p, k, len, scales, zeros, &job);
  job.packed_nibbles = packed && p.bits == 4;
  const int h = symmetric_zero_point(p.bits);
  const std::uint8_t flip = p.bits == 4 ? 0x88u : 0x80u;
  for (std::size_t a = 0; a < L.count; a += per) {
    const std::size_t m = L.count - a < per ? L.count - a : per;
    const std::uint8_t* in = codes + a * group_bytes;
    for (std::size_t i = 0; i < m * group_bytes; ++i)
      cb[i] = packed ? static_cast<std::uint8_t>(in[i] ^ flip) : offset_code(in[i], p.bits);
    job.codes = cb;
    job.scales = scales + a;
    if (has_zero_points(p)) {
      const float lo = static_cast<float>(-h), hi = static_cast<float>(h - 1);
      for (std::size_t g = 0; g < m; ++g) {
        const float z = zeros[a + g];
        zb[g] = z >= lo && z <= hi && std::floor(z) == z ? z + static_cast<float>(h)
                                                          : std::numeric_limits<float>::quiet_NaN();
      }
      job.zeros = zb;
    }
    if constexpr (std::is_same<T, float>::value) {
      job.y = dst + a * len;
    } else {
      job.y_bf16 = reinterpret_cast<std::uint16_t*>(dst + a * len);
    }
    const std::size_t r = kernels::dequantize_groups(job, 0, m);
    if (r < m) {  // stored parameters the job refused: the reference reports them
      *st = dequantize_general(code_source{codes, packed, p.bits, true}, scales, zeros, p, L, k, dst, a + r);
      return true;
    }
  }
  *st = status{};
  return true;
}

template <class T>
inline status dequantize_packed(const std::uint8_t* packed, const float* scales, const float* zeros, std::size_t rows,
                                std::size_t cols, const int_params& p, T* dst) noexcept {
  const result<int_call> c = int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  if (c.value.n == 0) return status{};
  const std::size_t count = c.value.g.group_count;
  if (status s = check_buffers({buffer_of(packed, packed_bytes(c.value.n, p.bits)), buffer_of(scales, count),
                                buffer_of(zeros, c.value.zero_count)},
                               {buffer_of(dst, c.value.n)});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const int_layout& L = c.value.layout;
  status st;
  if (dequantize_twos_fused(packed, true, scales, zeros, p, L, k, dst, &st)) return st;
  if (!L.regular || L.twos) return dequantize_general(code_source{packed, true, p.bits, L.twos}, scales, zeros, p, L, k, dst);
  const std::size_t len = c.value.g.group_length;
  kernels::int_dequantize_job job;
  const bool fused = (p.bits == 8 || (p.bits == 4 && len % 2 == 0)) && dequantize_job(p, k, len, scales, zeros, &job);
  job.codes = packed;
  job.packed_nibbles = p.bits == 4;
  if constexpr (std::is_same<T, float>::value) {
    job.y = dst;
  } else {
    job.y_bf16 = reinterpret_cast<std::uint16_t*>(dst);  // written by memcpy and vector stores only
  }
  constexpr std::size_t chunk = 256;
  std::uint8_t codes[chunk];
  float vals[chunk];
  for (std::size_t i = 0; i < count; ++i) {
    if (fused && (i = kernels::dequantize_groups(job, i, count)) == count) break;
    const result<int_group_codec> g = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!g.ok()) return g.status;
    for (std::size_t done = 0; done < len; done += chunk) {
      const std::size_t m = len - done < chunk ? len - done : chunk;
      const std::size_t first = i * len + done;
      get_codes(packed, first, m, p.bits, codes);
      k.dequantize(codes, m, g.value, vals);
      store_values(dst + first, vals, m);
    }
  }
  return status{};
}

// The size checks of the span forms: the counts a call reads or writes for its shape.
inline status int_span_sizes(const int_params& p, std::size_t rows, std::size_t cols, std::size_t values,
                             std::size_t codes, bool packed, std::size_t scales, std::size_t zeros,
                             std::size_t random_bits) noexcept {
  const result<int_call> c = int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t want_codes = packed ? packed_bytes(c.value.n, p.bits) : c.value.n;
  if (values != c.value.n || codes != want_codes || scales != c.value.g.group_count ||
      zeros != c.value.zero_count || (random_bits != 0 && random_bits != c.value.n))
    return errc::size_mismatch;
  return status{};
}
}  // namespace detail

// Quantizes src [rows, cols]: codes gets rows*cols codes (one per byte, row-major), scales and
// zeros one value per group (int_groups().group_count, groups in row-major order: [rows, cols/G]
// for per_group). zeros receives the integer zero-point (affine) or the offset m (affine_offset);
// symmetric schemes neither read nor write it (it may be null). random_bits: rows*cols values for
// rounding::stochastic (null: all zero), else ignored.
// Errors, in order: the options and shape errors of int_groups; n = 0 -> ok, nothing written; a
// null, misaligned or overlapping buffer -> bad_argument, misaligned, overlapping_buffers
// (nothing written); NaN or Inf in a group -> non_finite_input; a scale or offset beyond its
// storage format, or a grid that overflows float -> scale_overflow (groups before the failing one
// written).
[[nodiscard]] inline status quantize_int(const float* src, std::size_t rows, std::size_t cols, const int_params& p,
                                         std::uint8_t* codes, float* scales, float* zeros,
                                         const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  if (status s = detail::check_buffers(
          {detail::buffer_of(src, n), detail::buffer_of(rb, rb != nullptr ? n : 0)},
          {detail::buffer_of(codes, n), detail::buffer_of(scales, c.value.g.group_count),
           detail::buffer_of(zeros, c.value.zero_count)});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const detail::int_layout& L = c.value.layout;
  if (!L.regular)
    return detail::quantize_general(src, p, L, rb, k, {codes, false, p.bits, L.twos}, scales, zeros);
  const std::size_t len = c.value.g.group_length;
  const detail::fused_quantize fused(p, k, len, false, codes, src, rb, scales, zeros);
  const detail::int_fixup fixup{p, len, scales, zeros, codes, false};
  return detail::quantize_groups(src, p, c.value.g, rb, k, fused, scales, zeros, fixup, false,
                                 [&](std::size_t i, const float* xg, const std::uint32_t* rg, const int_group_codec& g) {
                                   k.quantize(xg, len, g, rg, codes + i * len);
                                 });
}

// quantize_int followed by pack_codes, in one pass and without the one-code-per-byte buffer:
// packed gets packed_bytes(rows*cols, p.bits) bytes in pack_codes' layout (INT4: sequential
// nibbles; INT8: the codes). Same parameters and errors as quantize_int.
[[nodiscard]] inline status quantize_int_packed(const float* src, std::size_t rows, std::size_t cols,
                                                const int_params& p, std::uint8_t* packed, float* scales,
                                                float* zeros, const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  const std::size_t nbytes = packed_bytes(n, p.bits);
  if (status s = detail::check_buffers(
          {detail::buffer_of(src, n), detail::buffer_of(rb, rb != nullptr ? n : 0)},
          {detail::buffer_of(packed, nbytes), detail::buffer_of(scales, c.value.g.group_count),
           detail::buffer_of(zeros, c.value.zero_count)});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const detail::int_layout& L = c.value.layout;
  packed[nbytes - 1] = 0;  // its unused high bits stay zero
  const detail::code_sink sink{packed, true, p.bits, L.twos};
  if (!L.regular) return detail::quantize_general(src, p, L, rb, k, sink, scales, zeros);
  const std::size_t len = c.value.g.group_length;
  const detail::fused_quantize fused(p, k, len, true, packed, src, rb, scales, zeros);
  const detail::int_fixup fixup{p, len, scales, zeros, packed, true};
  return detail::quantize_groups(
      src, p, c.value.g, rb, k, fused, scales, zeros, fixup, true,
      [&](std::size_t i, const float* xg, const std::uint32_t* rg, const int_group_codec& g) {
        std::uint8_t buffer[detail::general_chunk];
        for (std::size_t done = 0; done < len; done += detail::general_chunk) {
          const std::size_t m = len - done < detail::general_chunk ? len - done : detail::general_chunk;
          k.quantize(xg + done, m, g, rg != nullptr ? rg + done : nullptr, buffer);
          sink.put(buffer, m, i * len + done, 1);  // converted here, in the chunk
        }
      });
}

// Quantizes src against given scales and zero-points (for example a checkpoint's, or ones a GPTQ
// solver chose), laid out as quantize_int writes them. Errors: those of quantize_int before the
// data; then per group, a stored parameter stored_int_codec rejects -> bad_argument, NaN or Inf
// in src -> non_finite_input (groups before the failing one written).
[[nodiscard]] inline status quantize_int_fixed(const float* src, const float* scales, const float* zeros,
                                               std::size_t rows, std::size_t cols, const int_params& p,
                                               std::uint8_t* codes,
                                               const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  if (status s = detail::check_buffers(
          {detail::buffer_of(src, n), detail::buffer_of(scales, c.value.g.group_count),
           detail::buffer_of(zeros, c.value.zero_count), detail::buffer_of(rb, rb != nullptr ? n : 0)},
          {detail::buffer_of(codes, n)});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const detail::int_layout& L = c.value.layout;
  if (!L.regular || L.twos)
    return detail::quantize_fixed_general(src, scales, zeros, p, L, rb, k, {codes, false, p.bits, L.twos});
  const std::size_t len = c.value.g.group_length;
  for (std::size_t i = 0; i < c.value.g.group_count; ++i) {
    const result<int_group_codec> g = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!g.ok()) return g.status;
    float lo = 0.0f;
    float hi = 0.0f;
    if (!k.range(src + i * len, len, &lo, &hi)) return errc::non_finite_input;
    k.quantize(src + i * len, len, g.value, rb != nullptr ? rb + i * len : nullptr, codes + i * len);
  }
  return status{};
}

// dst = the values of the codes (rows*cols, one per byte). Codes are not range-checked here (a
// code above 2^b-1 just gives a value off the grid); the stored parameters are, per group, as
// stored_int_codec does (bad_argument; groups before the failing one written). Errors before
// those: quantize_int's.
[[nodiscard]] inline status dequantize_int(const std::uint8_t* codes, const float* scales, const float* zeros,
                                           std::size_t rows, std::size_t cols, const int_params& p,
                                           float* dst) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  if (status s = detail::check_buffers({detail::buffer_of(codes, n), detail::buffer_of(scales, c.value.g.group_count),
                                        detail::buffer_of(zeros, c.value.zero_count)},
                                       {detail::buffer_of(dst, n)});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const detail::int_layout& L = c.value.layout;
  status st;
  if (detail::dequantize_twos_fused(codes, false, scales, zeros, p, L, k, dst, &st)) return st;
  if (!L.regular || L.twos)
    return detail::dequantize_general(detail::code_source{codes, false, p.bits, L.twos}, scales, zeros, p, L, k, dst);
  const std::size_t len = c.value.g.group_length;
  const std::size_t count = c.value.g.group_count;
  kernels::int_dequantize_job job;
  const bool fused = detail::dequantize_job(p, k, len, scales, zeros, &job);
  job.codes = codes;
  job.y = dst;
  for (std::size_t i = 0; i < count; ++i) {
    if (fused && (i = kernels::dequantize_groups(job, i, count)) == count) break;
    const result<int_group_codec> g = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!g.ok()) return g.status;
    k.dequantize(codes + i * len, len, g.value, dst + i * len);
  }
  return status{};
}

// The values of codes packed as quantize_int_packed writes them (what dequantize_int gives for
// the unpacked codes), as float32, or as bfloat16 rounded to nearest even. Same errors as
// dequantize_int.
[[nodiscard]] inline status dequantize_int_packed(const std::uint8_t* packed, const float* scales, const float* zeros,
                                                  std::size_t rows, std::size_t cols, const int_params& p,
                                                  float* dst) noexcept {
  return detail::dequantize_packed(packed, scales, zeros, rows, cols, p, dst);
}
[[nodiscard]] inline status dequantize_int_packed(const std::uint8_t* packed, const float* scales, const float* zeros,
                                                  std::size_t rows, std::size_t cols, const int_params& p,
                                                  bfloat16* dst) noexcept {
  return detail::dequantize_packed(packed, scales, zeros, rows, cols, p, dst);
}

// Span forms of the five calls: the shape is given, every span must hold exactly what the call
// reads or writes (src, codes, dst: rows*cols; packed: packed_bytes(rows*cols, bits); scales:
// group_count; zeros: group_count for the affine schemes, empty for symmetric ones; random_bits:
// empty or rows*cols), otherwise errc::size_mismatch after the options and shape errors.
[[nodiscard]] inline status quantize_int(span<const float> src, std::size_t rows, std::size_t cols,
                                         const int_params& p, span<std::uint8_t> codes, span<float> scales,
                                         span<float> zeros, span<const std::uint32_t> random_bits = {}) noexcept {
  if (status s = detail::int_span_sizes(p, rows, cols, src.size(), codes.size(), false, scales.size(), zeros.size(),
                                        random_bits.size());
      !s)
    return s;
  return quantize_int(src.data(), rows, cols, p, codes.data(), scales.data(), zeros.data(), random_bits.data());
}
[[nodiscard]] inline status quantize_int_packed(span<const float> src, std::size_t rows, std::size_t cols,
                                                const int_params& p, span<std::uint8_t> packed, span<float> scales,
                                                span<float> zeros, span<const std::uint32_t> random_bits = {}) noexcept {
  if (status s = detail::int_span_sizes(p, rows, cols, src.size(), packed.size(), true, scales.size(), zeros.size(),
                                        random_bits.size());
      !s)
    return s;
  return quantize_int_packed(src.data(), rows, cols, p, packed.data(), scales.data(), zeros.data(), random_bits.data());
}
[[nodiscard]] inline status quantize_int_fixed(span<const float> src, span<const float> scales,
                                               span<const float> zeros, std::size_t rows, std::size_t cols,
                                               const int_params& p, span<std::uint8_t> codes,
                                               span<const std::uint32_t> random_bits = {}) noexcept {
  if (status s = detail::int_span_sizes(p, rows, cols, src.size(), codes.size(), false, scales.size(), zeros.size(),
                                        random_bits.size());
      !s)
    return s;
  return quantize_int_fixed(src.data(), scales.data(), zeros.data(), rows, cols, p, codes.data(), random_bits.data());
}
[[nodiscard]] inline status dequantize_int(span<const std::uint8_t> codes, span<const float> scales,
                                           span<const float> zeros, std::size_t rows, std::size_t cols,
                                           const int_params& p, span<float> dst) noexcept {
  if (status s = detail::int_span_sizes(p, rows, cols, dst.size(), codes.size(), false, scales.size(), zeros.size(), 0);
      !s)
    return s;
  return dequantize_int(codes.data(), scales.data(), zeros.data(), rows, cols, p, dst.data());
}
namespace detail {
template <class T>
inline status dequantize_packed(span<const std::uint8_t> packed, span<const float> scales, span<const float> zeros,
                                std::size_t rows, std::size_t cols, const int_params& p, span<T> dst) noexcept {
  if (status s = int_span_sizes(p, rows, cols, dst.size(), packed.size(), true, scales.size(), zeros.size(), 0); !s)
    return s;
  return dequantize_packed(packed.data(), scales.data(), zeros.data(), rows, cols, p, dst.data());
}
}  // namespace detail
[[nodiscard]] inline status dequantize_int_packed(span<const std::uint8_t> packed, span<const float> scales,
                                                  span<const float> zeros, std::size_t rows, std::size_t cols,
                                                  const int_params& p, span<float> dst) noexcept {
  return detail::dequantize_packed(packed, scales, zeros, rows, cols, p, dst);
}
[[nodiscard]] inline status dequantize_int_packed(span<const std::uint8_t> packed, span<const float> scales,
                                                  span<const float> zeros, std::size_t rows, std::size_t cols,
                                                  const int_params& p, span<bfloat16> dst) noexcept {
  return detail::dequantize_packed(packed, scales, zeros, rows, cols, p, dst);
}

// ---------------------------------------------------------------------------------------------
// Quantize, then dequantize: what a kernel computes with ("fake quantization")

// dst [rows, cols] gets the values src's codes decode to: quantize_int then dequantize_int, with
// the codes, scales and zeros in buffers of its own (allocated here, freed on return). This is
// how an error is measured before choosing a scheme, or how a W8A8 layer is simulated in float.
// dst must not overlap src. Errors: those of quantize_int, in its order, then out_of_memory; on
// any error dst is untouched (a data error is found before anything is decoded).
[[nodiscard]] inline status quantize_dequantize_int(const float* src, std::size_t rows, std::size_t cols,
                                                    const int_params& p, float* dst,
                                                    const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  if (status s = detail::check_buffers({detail::buffer_of(src, n), detail::buffer_of(rb, rb != nullptr ? n : 0)},
                                       {detail::buffer_of(dst, n)});
      !s)
    return s;
  const std::unique_ptr<std::uint8_t[]> codes = detail::allocate_buffer<std::uint8_t>(n);
  const std::unique_ptr<float[]> scales = detail::allocate_buffer<float>(c.value.g.group_count);
  const std::unique_ptr<float[]> zeros = detail::allocate_buffer<float>(c.value.zero_count);
  if (!codes || !scales || !zeros) return status(errc::out_of_memory);
  if (status s = quantize_int(src, rows, cols, p, codes.get(), scales.get(), zeros.get(), rb); !s) return s;
  return dequantize_int(codes.get(), scales.get(), zeros.get(), rows, cols, p, dst);
}
// Span form: src and dst hold rows*cols values, random_bits none or rows*cols (size_mismatch).
[[nodiscard]] inline status quantize_dequantize_int(span<const float> src, std::size_t rows, std::size_t cols,
                                                    const int_params& p, span<float> dst,
                                                    span<const std::uint32_t> random_bits = {}) noexcept {
  const result<detail::int_call> c = detail::int_call_shape(p, rows, cols);
  if (!c.ok()) return c.status;
  if (src.size() != c.value.n || dst.size() != c.value.n || (!random_bits.empty() && random_bits.size() != c.value.n))
    return status(errc::size_mismatch);
  return quantize_dequantize_int(src.data(), rows, cols, p, dst.data(), random_bits.data());
}

// ---------------------------------------------------------------------------------------------
// Byte accounting

// What a checkpoint stores for a [rows, cols] matrix (storage, schemes/storage.hpp): codes
// packed at b bits with no padding except at the very end; one scale per group in its storage
// format; integer zero-points packed at b bits (GPTQ/AWQ qzeros); float offsets in the scale's
// format. Errors: those of int_groups (an empty matrix stores nothing: all counts 0).
[[nodiscard]] inline result<storage> int_storage_for(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  result<storage> r;
  const result<int_grouping> g = int_groups(p, rows, cols);
  if (!g.ok()) {
    r.status = g.status;
    return r;
  }
  const std::size_t n = rows * cols;  // int_groups checked that it fits
  r.value.elements = n;
  r.value.payload_bytes = packed_bytes(n, p.bits);
  r.value.scale_bytes = g.value.group_count * bytes_per_scale(p.scale_format);
  switch (p.scheme) {
    case int_scheme::symmetric: r.value.zero_point_bytes = 0; break;
    case int_scheme::affine: r.value.zero_point_bytes = packed_bytes(g.value.group_count, p.bits); break;
    case int_scheme::affine_offset: r.value.zero_point_bytes = g.value.group_count * bytes_per_scale(p.scale_format); break;
  }
  return r;
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_INTEGER_HPP

#include "quantized_matrix.hpp"  // the owning container, built on the calls above
