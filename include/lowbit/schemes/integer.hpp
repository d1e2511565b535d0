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
};

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
// SmoothQuant W8A8 activations: INT8 symmetric per token.
inline int_params int8_per_token(scale_storage fmt = scale_storage::fp32) noexcept {
  int_params p = int8_per_channel(fmt);
  p.granularity = granularity::per_token;
  return p;
}
// KIVI: float offset m = min, s = (max - min)/(2^b - 1), per group (keys: per channel over a
// group of tokens, i.e. rows = channels; values: per token), fp16 metadata.
inline int_params kivi(int bits = 2, std::size_t group_size = 32) noexcept {
  int_params p = gptq(bits, group_size);
  p.scheme = int_scheme::affine_offset;
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
  std::size_t group_length = 0;  // elements per scale; groups are contiguous in row-major order
  std::size_t group_count = 0;   // number of scales (and zero-points)
};

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
  if (bad_enum || bad_search) return errc::bad_argument;
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
  if (p.granularity == granularity::per_group && cols % p.group_size != 0) {
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
  switch (p.granularity) {
    case granularity::per_tensor: r.value = {n, 1}; break;
    case granularity::per_channel:
    case granularity::per_token: r.value = {cols, rows}; break;
    case granularity::per_group: r.value = {p.group_size, n / p.group_size}; break;
  }
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
inline result<int_group_codec> choose_codec(const float* x, std::size_t n, float lo, float hi, const int_params& p,
                                            const std::uint32_t* random_bits, const kernels::int_kernels& k) noexcept {
  result<int_group_codec> best = make_int_codec(lo, hi, p);
  if (!best.ok() || p.search != scale_search::mse_grid || best.value.scale == 0.0f) return best;
  const double norm = p.search_norm;
  double best_err = k.error(x, n, best.value, norm, random_bits);
  const int steps = static_cast<int>(static_cast<double>(p.search_maxshrink) * p.search_grid);
  for (int i = 1; i < steps; ++i) {
    const double shrink = 1.0 - static_cast<double>(i) / p.search_grid;
    result<int_group_codec> c = make_int_codec(lo, hi, p, shrink);
    if (!c.ok()) continue;
    const double e = k.error(x, n, c.value, norm, random_bits);
    if (e < best_err) {
      best_err = e;
      best = c;
    }
  }
  return best;
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
// schemes). Errors: a scale or offset that is not finite or not exactly representable in
// p.scale_format, or an affine zero-point that is not an integer in 0..2^b-1 -> bad_argument.
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
    case int_scheme::affine:
      if (!(zero >= 0.0f && zero <= static_cast<float>(c.code_max) && std::floor(zero) == zero)) {
        r.status = errc::bad_argument;
        return r;
      }
      c.zero_point = static_cast<int>(zero);
      break;
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
  return r;
}

// The group loop of quantize_int and quantize_int_packed: the fused SIMD job takes the groups it
// can, the per-group codec the rest; write_codes(i, x_i, random_i, codec) stores group i's codes,
// then the scale and zero-point are stored here. On an error, the groups before the failing one
// are written (by either path) and nothing after.
template <class WriteCodes>
inline status quantize_groups(const float* x, const int_params& p, const int_grouping& g,
                              const std::uint32_t* rb, const kernels::int_kernels& k, const fused_quantize& fused,
                              float* scales, float* zeros, WriteCodes write_codes) noexcept {
  const std::size_t len = g.group_length;
  for (std::size_t i = 0; i < g.group_count; ++i) {
    if ((i = fused.run(i, g.group_count)) == g.group_count) break;
    const float* xg = x + i * len;
    const std::uint32_t* rg = rb != nullptr ? rb + i * len : nullptr;
    const result<int_group_codec> c = group_codec(xg, len, p, rg, k);
    if (!c.ok()) return c.status;
    write_codes(i, xg, rg, c.value);
    scales[i] = c.value.scale;
    if (has_zero_points(p)) zeros[i] = c.value.has_offset ? c.value.offset : static_cast<float>(c.value.zero_point);
  }
  return status{};
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
  const std::size_t len = c.value.g.group_length;
  const detail::fused_quantize fused(p, k, len, false, codes, src, rb, scales, zeros);
  return detail::quantize_groups(src, p, c.value.g, rb, k, fused, scales, zeros,
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
  const std::size_t len = c.value.g.group_length;
  packed[nbytes - 1] = 0;  // its unused high bits stay zero
  const detail::fused_quantize fused(p, k, len, true, packed, src, rb, scales, zeros);
  return detail::quantize_groups(
      src, p, c.value.g, rb, k, fused, scales, zeros,
      [&](std::size_t i, const float* xg, const std::uint32_t* rg, const int_group_codec& g) {
        constexpr std::size_t chunk = 256;
        std::uint8_t buffer[chunk];
        for (std::size_t done = 0; done < len; done += chunk) {
          const std::size_t m = len - done < chunk ? len - done : chunk;
          k.quantize(xg + done, m, g, rg != nullptr ? rg + done : nullptr, buffer);
          detail::put_codes(buffer, m, p.bits, packed, i * len + done);
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
