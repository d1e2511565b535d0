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
// gets. The per-group operations go through an int_kernels table; a SIMD kernel replaces them and
// must match reference_int_kernels() bit for bit.
//
// Errors (never exceptions): see the table in docs/integer-schemes.md. On error the outputs are
// unspecified (groups before the failing one may have been written).
#ifndef LOWBIT_SCHEMES_INTEGER_HPP
#define LOWBIT_SCHEMES_INTEGER_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/packing.hpp"
#include "../core/rounding.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../kernels/int_group.hpp"
#include "../kernels/integer_dispatch.hpp"
#include "layouts.hpp"

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

// Storage format of scales and float offsets. Codes are computed against the stored value.
enum class scale_storage : std::uint8_t { float32, float16, bfloat16 };

// How the range [lo, hi] behind a scale is chosen.
//  minmax    the group's amax (symmetric) or min/max (affine).
//  mse_grid  GPTQ's search (quant.py, mse=True): candidates p = 1 - i/grid for i = 0 ..
//            floor(maxshrink*grid) - 1 (defaults: 100, 0.8 -> 80 candidates 1.00 .. 0.21); a range
//            containing 0 shrinks to [p*lo, p*hi], one that does not shrinks about its midpoint;
//            each candidate's codes are computed against its stored scale and scored by
//            sum |x^ - x|^norm in double (norm 2.4 as GPTQ; norm 2 is plain MSE, computed as d*d);
//            the smallest score wins, the earlier (larger p) on ties.
enum class scale_search : std::uint8_t { minmax, mse_grid };

struct int_params {
  int bits = 8;                                   // 2..8
  int_scheme scheme = int_scheme::symmetric;
  int_range range = int_range::restricted;        // symmetric only
  bool range_includes_zero = true;                // affine only: widen [min, max] to contain 0
                                                  // (GPTQ, FBGEMM); false: true min/max (AWQ)
  lowbit::granularity granularity = lowbit::granularity::per_channel;
  std::size_t group_size = 0;                     // per_group only: must divide cols
  rounding rm = rounding::nearest_even;           // rounding of x / s to a code
  scale_storage scale_format = scale_storage::float32;
  scale_search search = scale_search::minmax;
  int search_grid = 100;                          // mse_grid only
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
  p.scale_format = scale_storage::float16;
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
inline int_params int8_per_channel(scale_storage fmt = scale_storage::float32) noexcept {
  int_params p;
  p.scale_format = fmt;
  return p;
}
// SmoothQuant W8A8 activations: INT8 symmetric per token.
inline int_params int8_per_token(scale_storage fmt = scale_storage::float32) noexcept {
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

// Bytes of one stored scale.
constexpr std::size_t scale_bytes(scale_storage f) noexcept { return f == scale_storage::float32 ? 4u : 2u; }

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

// Validates p for a [rows, cols] row-major matrix. Errors: bits outside 2..8 -> bad_bit_width;
// rows or cols 0 -> empty_input; per_group with group_size 0 or not dividing cols ->
// bad_group_size; rows*cols overflowing size_t, an enumerator out of range or a bad search
// setting (grid < 1, maxshrink outside (0, 1], norm not > 0) -> bad_argument.
[[nodiscard]] inline result<int_grouping> int_groups(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  result<int_grouping> r;
  if (p.bits < 2 || p.bits > 8) {
    r.status = errc::bad_bit_width;
    return r;
  }
  if (rows == 0 || cols == 0) {
    r.status = errc::empty_input;
    return r;
  }
  if (p.granularity == granularity::per_group && (p.group_size == 0 || cols % p.group_size != 0)) {
    r.status = errc::bad_group_size;
    return r;
  }
  const bool bad_enum = static_cast<unsigned>(p.scheme) > 2u || static_cast<unsigned>(p.range) > 2u ||
                        static_cast<unsigned>(p.granularity) > 3u || static_cast<unsigned>(p.scale_format) > 2u ||
                        static_cast<unsigned>(p.search) > 1u || static_cast<unsigned>(p.rm) > 5u;
  const bool bad_search = p.search == scale_search::mse_grid &&
                          (p.search_grid < 1 || !(p.search_maxshrink > 0.0f && p.search_maxshrink <= 1.0f) ||
                           !(p.search_norm > 0.0f && p.search_norm < std::numeric_limits<float>::infinity()));
  if (bad_enum || bad_search || rows > std::numeric_limits<std::size_t>::max() / cols) {
    r.status = errc::bad_argument;
    return r;
  }
  const std::size_t n = rows * cols;
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
// kernels/int_group.hpp, shared with the SIMD kernels.

// Rounds a computed scale or offset to its storage format. A value beyond the format's range
// (fp16 above 65504) is errc::scale_overflow: the checkpoint could not hold it.
[[nodiscard]] inline result<float> store_scale(double v, scale_storage fmt) noexcept {
  result<float> r;
  float s = 0.0f;
  switch (fmt) {
    case scale_storage::float32: s = static_cast<float>(v); break;
    case scale_storage::float16: s = static_cast<float>(encode<float16>(v, overflow::non_saturate)); break;
    case scale_storage::bfloat16: s = static_cast<float>(encode<bfloat16>(v, overflow::non_saturate)); break;
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
    case scale_storage::float32: return true;
    case scale_storage::float16: return static_cast<float>(encode<float16>(v)) == v;
    case scale_storage::bfloat16: return static_cast<float>(encode<bfloat16>(v)) == v;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// One group's codec

// The codec of a group whose values span [lo, hi] (finite, lo <= hi), with the range shrunk by
// `shrink` in (0, 1] (1 = minmax; see scale_search). Errors: a scale or offset beyond the storage
// format's range -> scale_overflow.
[[nodiscard]] inline result<int_group_codec> make_int_codec(float lo, float hi, const int_params& p,
                                                            double shrink = 1.0) noexcept {
  result<int_group_codec> r;
  int_group_codec& c = r.value;
  c.rm = p.rm;
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
      dlo = mid - shrink * (mid - dlo);
      dhi = mid + shrink * (dhi - mid);
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
    return r;
  }
  // z = round(-lo / s) against the stored scale, nearest even whatever p.rm says, in 0..2^b-1.
  if (c.scale != 0.0f)
    c.zero_point = round_to_code(static_cast<float>(-dlo) / c.scale, 0, c.code_max, rounding::nearest_even);
  return r;
}

// Chooses the codec of one group (minmax or the mse_grid search). x holds the group's n values
// (finite), spanning [lo, hi].
[[nodiscard]] inline result<int_group_codec> choose_int_codec(const float* x, std::size_t n, float lo, float hi,
                                                              const int_params& p, const std::uint32_t* random_bits,
                                                              const int_kernels& k = active_int_kernels()) noexcept {
  const kernels::int_env env(k);
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

// The codec that stored parameters describe (scale, and zero-point or offset for the affine
// schemes). Errors: a scale or offset that is not finite or not exactly representable in
// p.scale_format, or an affine zero-point that is not an integer in 0..2^b-1 -> bad_argument.
[[nodiscard]] inline result<int_group_codec> stored_int_codec(float scale, float zero, const int_params& p) noexcept {
  result<int_group_codec> r;
  int_group_codec& c = r.value;
  c.rm = p.rm;
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
// Each takes the int_kernels table to run (default: active_int_kernels(), the AVX2 table on the
// AVX2 path). With the AVX2 table, whole-matrix kernels stand in for the per-group loop where they
// apply (symmetric and affine minmax quantization, dequantization); they give the same bytes, and
// leave the groups they cannot do exactly (NaN, Inf, scale overflow, tiny values) to the loop
// below, which reports the error or does the group and hands back.

namespace detail {

inline kernels::int_scale_format kernel_scale_format(scale_storage f) noexcept {
  switch (f) {
    case scale_storage::float32: break;
    case scale_storage::float16: return kernels::int_scale_format::float16;
    case scale_storage::bfloat16: return kernels::int_scale_format::bfloat16;
  }
  return kernels::int_scale_format::float32;
}

// The parts of a whole-matrix quantization job that come from p and the group length.
inline void set_job_params(const int_params& p, std::size_t len, kernels::int_quantize_io* j) noexcept {
  j->group_length = len;
  j->code_max = max_code(p.bits);
  j->scale_format = kernel_scale_format(p.scale_format);
  j->rm = p.rm;
}

// The whole-matrix job for the symmetric minmax schemes (restricted or full range), when k is a
// SIMD table; false otherwise.
inline bool symmetric_job(const int_params& p, const int_kernels& k, std::size_t len,
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
inline bool affine_job(const int_params& p, const int_kernels& k, std::size_t len, kernels::int_affine_job* j) noexcept {
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
  fused_quantize(const int_params& p, const int_kernels& k, std::size_t len, bool packed, std::uint8_t* codes,
                 const float* x, const std::uint32_t* random_bits, float* scales, float* zeros) noexcept {
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
inline bool dequantize_job(const int_params& p, const int_kernels& k, std::size_t len, const float* scales,
                           const float* zeros, kernels::int_dequantize_job* j) noexcept {
  if (!kernels::int_fused(k)) return false;
  j->group_length = len;
  j->scales = scales;
  j->zeros = has_zero_points(p) ? zeros : nullptr;
  j->zeros_are_offsets = p.scheme == int_scheme::affine_offset;
  j->zero_point = symmetric_zero_point(p.bits);
  j->code_min = p.scheme == int_scheme::symmetric && p.range == int_range::restricted ? 1 : 0;
  j->code_max = max_code(p.bits);
  j->scale_format = kernel_scale_format(p.scale_format);
  return true;
}

// The codec of one group of quantize_int (range, then choose_int_codec).
inline result<int_group_codec> group_codec(const float* xg, std::size_t len, const int_params& p,
                                           const std::uint32_t* rg, const int_kernels& k) noexcept {
  float lo = 0.0f;
  float hi = 0.0f;
  if (!k.range(xg, len, &lo, &hi)) {
    result<int_group_codec> r;
    r.status = errc::non_finite_input;
    return r;
  }
  return choose_int_codec(xg, len, lo, hi, p, rg, k);
}

// Writes n codes of `bits` bits at code position `first` of a pack_codes stream, leaving the
// other bits of the bytes it shares with neighbours as they are.
inline void put_codes(const std::uint8_t* codes, std::size_t n, int bits, std::uint8_t* out,
                      std::size_t first) noexcept {
  if (bits == 8) {
    for (std::size_t i = 0; i < n; ++i) out[first + i] = codes[i];
    return;
  }
  const std::size_t b = static_cast<std::size_t>(bits);
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = b * (first + i);
    const unsigned shift = static_cast<unsigned>(bit % 8u);
    const unsigned v = codes[i] & mask;
    std::uint8_t& lo = out[bit / 8u];
    lo = static_cast<std::uint8_t>((lo & ~(mask << shift)) | (v << shift));
    if (shift + b > 8u) {
      std::uint8_t& hi = out[bit / 8u + 1u];
      hi = static_cast<std::uint8_t>((hi & ~(mask >> (8u - shift))) | (v >> (8u - shift)));
    }
  }
}

// Writes y[0..n) from floats: the floats themselves, or bfloat16 rounded to nearest even.
inline void store_values(float* y, const float* v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = v[i];
}
inline void store_values(bfloat16* y, const float* v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = encode<bfloat16>(v[i]);
}

// The grouping of a bulk call, after its arguments are checked: int_groups' errors first, then a
// null input, output or scale buffer, or null zeros for a scheme that has them -> bad_argument.
inline result<int_grouping> checked_groups(const int_params& p, std::size_t rows, std::size_t cols, const void* in,
                                           const void* out, const float* scales, const float* zeros) noexcept {
  result<int_grouping> g = int_groups(p, rows, cols);
  if (g.ok() && (in == nullptr || out == nullptr || scales == nullptr || (has_zero_points(p) && zeros == nullptr)))
    g.status = errc::bad_argument;
  return g;
}

// The group loop of quantize_int and quantize_int_packed: the fused SIMD job takes the groups it
// can, the per-group codec the rest; write_codes(i, x_i, random_i, codec) stores group i's codes,
// then the scale and zero-point are stored here. On an error, the groups before the failing one
// are written (by either path) and nothing after.
template <class WriteCodes>
inline status quantize_groups(const float* x, const int_params& p, const int_grouping& g,
                              const std::uint32_t* rb, const int_kernels& k, const fused_quantize& fused,
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
    if (zeros != nullptr && has_zero_points(p))
      zeros[i] = c.value.has_offset ? c.value.offset : static_cast<float>(c.value.zero_point);
  }
  return status{};
}

// The random bits the rounding uses: the caller's for stochastic rounding, else none.
inline const std::uint32_t* rounding_bits(const int_params& p, const std::uint32_t* random_bits) noexcept {
  return p.rm == rounding::stochastic ? random_bits : nullptr;
}
}  // namespace detail

// Quantizes x: codes gets rows*cols codes (one per byte, row-major), scales and zeros one value
// per group (int_groups().group_count, groups in row-major order: [rows, cols/G] for per_group).
// zeros receives the integer zero-point (affine) or the offset m (affine_offset) and may be null
// for symmetric schemes. random_bits: rows*cols values for rounding::stochastic, else ignored.
// Errors: those of int_groups; a null buffer -> bad_argument; NaN or Inf in a group ->
// non_finite_input; a scale or offset beyond the storage format -> scale_overflow.
[[nodiscard]] inline status quantize_int(const float* x, std::size_t rows, std::size_t cols, const int_params& p,
                                         std::uint8_t* codes, float* scales, float* zeros,
                                         const std::uint32_t* random_bits = nullptr,
                                         const int_kernels& k = active_int_kernels()) noexcept {
  const kernels::int_env env(k);  // MXCSR-independent, whichever table
  const result<int_grouping> g = detail::checked_groups(p, rows, cols, x, codes, scales, zeros);
  if (!g.ok()) return g.status;
  const std::size_t len = g.value.group_length;
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  const detail::fused_quantize fused(p, k, len, false, codes, x, rb, scales, zeros);
  return detail::quantize_groups(x, p, g.value, rb, k, fused, scales, zeros,
                                 [&](std::size_t i, const float* xg, const std::uint32_t* rg, const int_group_codec& c) {
                                   k.quantize(xg, len, c, rg, codes + i * len);
                                 });
}

// quantize_int followed by pack_codes, in one pass and without the one-code-per-byte buffer:
// packed gets packed_bytes(rows*cols, p.bits) bytes in pack_codes' layout (INT4: sequential
// nibbles; INT8: the codes). Same parameters and errors as quantize_int.
[[nodiscard]] inline status quantize_int_packed(const float* x, std::size_t rows, std::size_t cols,
                                                const int_params& p, std::uint8_t* packed, float* scales,
                                                float* zeros, const std::uint32_t* random_bits = nullptr,
                                                const int_kernels& k = active_int_kernels()) noexcept {
  const kernels::int_env env(k);  // MXCSR-independent, whichever table
  const result<int_grouping> g = detail::checked_groups(p, rows, cols, x, packed, scales, zeros);
  if (!g.ok()) return g.status;
  const std::size_t len = g.value.group_length;
  packed[packed_bytes(rows * cols, p.bits) - 1] = 0;  // its unused high bits stay zero
  const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
  const detail::fused_quantize fused(p, k, len, true, packed, x, rb, scales, zeros);
  return detail::quantize_groups(
      x, p, g.value, rb, k, fused, scales, zeros,
      [&](std::size_t i, const float* xg, const std::uint32_t* rg, const int_group_codec& c) {
        constexpr std::size_t chunk = 256;
        std::uint8_t buffer[chunk];
        for (std::size_t done = 0; done < len; done += chunk) {
          const std::size_t m = len - done < chunk ? len - done : chunk;
          k.quantize(xg + done, m, c, rg != nullptr ? rg + done : nullptr, buffer);
          detail::put_codes(buffer, m, p.bits, packed, i * len + done);
        }
      });
}

// Quantizes x against given scales and zero-points (for example a checkpoint's, or ones a GPTQ
// solver chose), laid out as quantize_int writes them. Errors: those of int_groups, a null
// buffer, the stored_int_codec errors (bad_argument), NaN or Inf in x (non_finite_input).
[[nodiscard]] inline status quantize_int_fixed(const float* x, std::size_t rows, std::size_t cols,
                                               const int_params& p, const float* scales, const float* zeros,
                                               std::uint8_t* codes, const std::uint32_t* random_bits = nullptr,
                                               const int_kernels& k = active_int_kernels()) noexcept {
  const kernels::int_env env(k);  // MXCSR-independent, whichever table
  const result<int_grouping> g = detail::checked_groups(p, rows, cols, x, codes, scales, zeros);
  if (!g.ok()) return g.status;
  const std::size_t len = g.value.group_length;
  const std::uint32_t* rb = p.rm == rounding::stochastic ? random_bits : nullptr;
  for (std::size_t i = 0; i < g.value.group_count; ++i) {
    const result<int_group_codec> c = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!c.ok()) return c.status;
    float lo = 0.0f;
    float hi = 0.0f;
    if (!k.range(x + i * len, len, &lo, &hi)) return errc::non_finite_input;
    k.quantize(x + i * len, len, c.value, rb != nullptr ? rb + i * len : nullptr, codes + i * len);
  }
  return status{};
}

// y = the values of the codes (rows*cols, one per byte). Codes are not range-checked here (a code
// above 2^b-1 just gives a value off the grid); the stored parameters are, as stored_int_codec.
[[nodiscard]] inline status dequantize_int(const std::uint8_t* codes, std::size_t rows, std::size_t cols,
                                           const int_params& p, const float* scales, const float* zeros, float* y,
                                           const int_kernels& k = active_int_kernels()) noexcept {
  const kernels::int_env env(k);  // MXCSR-independent, whichever table
  const result<int_grouping> g = detail::checked_groups(p, rows, cols, codes, y, scales, zeros);
  if (!g.ok()) return g.status;
  const std::size_t len = g.value.group_length;
  kernels::int_dequantize_job job;
  const bool fused = detail::dequantize_job(p, k, len, scales, zeros, &job);
  job.codes = codes;
  job.y = y;
  for (std::size_t i = 0; i < g.value.group_count; ++i) {
    if (fused && (i = kernels::dequantize_groups(job, i, g.value.group_count)) == g.value.group_count) break;
    const result<int_group_codec> c = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!c.ok()) return c.status;
    k.dequantize(codes + i * len, len, c.value, y + i * len);
  }
  return status{};
}

namespace detail {
template <class T>
inline status dequantize_int_packed(const std::uint8_t* packed, std::size_t rows, std::size_t cols,
                                    const int_params& p, const float* scales, const float* zeros, T* y,
                                    const int_kernels& k) noexcept {
  const kernels::int_env env(k);  // MXCSR-independent, whichever table
  const result<int_grouping> g = detail::checked_groups(p, rows, cols, packed, y, scales, zeros);
  if (!g.ok()) return g.status;
  const std::size_t len = g.value.group_length;
  kernels::int_dequantize_job job;
  const bool fused = (p.bits == 8 || (p.bits == 4 && len % 2 == 0)) && dequantize_job(p, k, len, scales, zeros, &job);
  job.codes = packed;
  job.packed_nibbles = p.bits == 4;
  if constexpr (std::is_same<T, float>::value) {
    job.y = y;
  } else {
    job.y_bf16 = reinterpret_cast<std::uint16_t*>(y);  // written by memcpy and vector stores only
  }
  constexpr std::size_t chunk = 256;
  std::uint8_t codes[chunk];
  float vals[chunk];
  for (std::size_t i = 0; i < g.value.group_count; ++i) {
    if (fused && (i = kernels::dequantize_groups(job, i, g.value.group_count)) == g.value.group_count) break;
    const result<int_group_codec> c = stored_int_codec(scales[i], has_zero_points(p) ? zeros[i] : 0.0f, p);
    if (!c.ok()) return c.status;
    for (std::size_t done = 0; done < len; done += chunk) {
      const std::size_t m = len - done < chunk ? len - done : chunk;
      const std::size_t first = i * len + done;
      if (status s = unpack_codes(packed, first, m, p.bits, codes); !s) return s;
      k.dequantize(codes, m, c.value, vals);
      store_values(y + first, vals, m);
    }
  }
  return status{};
}
}  // namespace detail

// The values of codes packed as quantize_int_packed writes them (what dequantize_int gives for
// the unpacked codes), as float32, or as bfloat16 rounded to nearest even. Same parameters and
// errors as dequantize_int.
[[nodiscard]] inline status dequantize_int_packed(const std::uint8_t* packed, std::size_t rows, std::size_t cols,
                                                  const int_params& p, const float* scales, const float* zeros,
                                                  float* y, const int_kernels& k = active_int_kernels()) noexcept {
  return detail::dequantize_int_packed(packed, rows, cols, p, scales, zeros, y, k);
}
[[nodiscard]] inline status dequantize_int_packed(const std::uint8_t* packed, std::size_t rows, std::size_t cols,
                                                  const int_params& p, const float* scales, const float* zeros,
                                                  bfloat16* y, const int_kernels& k = active_int_kernels()) noexcept {
  return detail::dequantize_int_packed(packed, rows, cols, p, scales, zeros, y, k);
}

// ---------------------------------------------------------------------------------------------
// Byte accounting

// What a checkpoint stores for a [rows, cols] matrix: codes packed at b bits with no padding
// except at the very end; one scale per group in its storage format; integer zero-points packed
// at b bits (GPTQ/AWQ qzeros); float offsets in the scale's format.
struct int_storage {
  std::size_t elements = 0;
  std::size_t payload_bytes = 0;
  std::size_t scale_bytes = 0;
  std::size_t zero_point_bytes = 0;

  constexpr std::size_t metadata_bytes() const noexcept { return scale_bytes + zero_point_bytes; }
  constexpr std::size_t total_bytes() const noexcept { return payload_bytes + metadata_bytes(); }
  // metadata / payload, in percent (INT4 G=128 with fp16 scales: 3.125).
  double overhead_percent() const noexcept {
    return payload_bytes == 0 ? 0.0 : 100.0 * static_cast<double>(metadata_bytes()) / static_cast<double>(payload_bytes);
  }
  double bits_per_weight() const noexcept {
    return elements == 0 ? 0.0 : 8.0 * static_cast<double>(total_bytes()) / static_cast<double>(elements);
  }
  // 2 bytes per element over total bytes (INT4 G=128 with fp16 scales: 3.878...).
  double compression_vs_fp16() const noexcept {
    return total_bytes() == 0 ? 0.0 : 2.0 * static_cast<double>(elements) / static_cast<double>(total_bytes());
  }
  double total_mib() const noexcept { return static_cast<double>(total_bytes()) / 1048576.0; }
};

[[nodiscard]] inline result<int_storage> int_storage_for(const int_params& p, std::size_t rows,
                                                         std::size_t cols) noexcept {
  result<int_storage> r;
  const result<int_grouping> g = int_groups(p, rows, cols);
  if (!g.ok()) {
    r.status = g.status;
    return r;
  }
  const std::size_t n = rows * cols;
  if (n > std::numeric_limits<std::size_t>::max() / 8u) {
    r.status = errc::bad_argument;
    return r;
  }
  r.value.elements = n;
  r.value.payload_bytes = packed_bytes(n, p.bits);
  r.value.scale_bytes = g.value.group_count * scale_bytes(p.scale_format);
  switch (p.scheme) {
    case int_scheme::symmetric: r.value.zero_point_bytes = 0; break;
    case int_scheme::affine: r.value.zero_point_bytes = packed_bytes(g.value.group_count, p.bits); break;
    case int_scheme::affine_offset: r.value.zero_point_bytes = g.value.group_count * scale_bytes(p.scale_format); break;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// The quantized matrix: shape, scheme, packed codes, scales and zero-points

// Owns its storage. Codes are packed at b bits in lowbit's bit stream (pack_codes: row-major,
// element k at bits b*k; for INT4 two per byte, the first in the low nibble); scales and
// zero-points/offsets are kept as floats holding exactly the stored values, [rows, cols/G]
// row-major (one per group). Creation returns a result and never throws on bad input.
class quantized_matrix {
 public:
  quantized_matrix() = default;

  // Quantizes n = rows*cols float32 values (errc::size_mismatch otherwise; the other errors are
  // quantize_int's).
  [[nodiscard]] static result<quantized_matrix> quantize(const float* x, std::size_t n, std::size_t rows,
                                                         std::size_t cols, const int_params& p,
                                                         const std::uint32_t* random_bits = nullptr) {
    result<quantized_matrix> r;
    const result<int_grouping> g = int_groups(p, rows, cols);
    if (!g.ok()) {
      r.status = g.status;
      return r;
    }
    if (n != rows * cols) {
      r.status = errc::size_mismatch;
      return r;
    }
    if (x == nullptr) {
      r.status = errc::bad_argument;
      return r;
    }
    quantized_matrix& m = r.value;
    m.init(rows, cols, p, g.value);
    r.status = quantize_int_packed(x, rows, cols, p, m.codes_.data(), m.scales_.data(),
                                   has_zero_points(p) ? m.zeros_.data() : nullptr, random_bits);
    if (!r.ok()) m = quantized_matrix{};
    return r;
  }

  // Quantizes bfloat16 values (each decoded exactly to float32 first).
  [[nodiscard]] static result<quantized_matrix> quantize(const bfloat16* x, std::size_t n, std::size_t rows,
                                                         std::size_t cols, const int_params& p,
                                                         const std::uint32_t* random_bits = nullptr) {
    if (x == nullptr || n != rows * cols || n == 0) return quantize(static_cast<const float*>(nullptr), n, rows, cols, p);
    std::vector<float> f(n);
    for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(x[i]);
    return quantize(f.data(), n, rows, cols, p, random_bits);
  }

  // Builds a matrix from codes (rows*cols, one per byte), scales and zero-points as quantize_int
  // writes them (a checkpoint being read, a GPTQ solver's output). Errors: size_mismatch when a
  // count differs from the shape's; bad_argument for a code above 2^b-1 (or 0 under the
  // restricted symmetric range) or a parameter stored_int_codec rejects.
  [[nodiscard]] static result<quantized_matrix> from_codes(std::size_t rows, std::size_t cols, const int_params& p,
                                                           const std::uint8_t* codes, std::size_t n_codes,
                                                           const float* scales, std::size_t n_scales,
                                                           const float* zeros, std::size_t n_zeros) {
    result<quantized_matrix> r;
    const result<int_grouping> g = int_groups(p, rows, cols);
    if (!g.ok()) {
      r.status = g.status;
      return r;
    }
    const std::size_t want_zeros = has_zero_points(p) ? g.value.group_count : 0;
    if (n_codes != rows * cols || n_scales != g.value.group_count || n_zeros != want_zeros) {
      r.status = errc::size_mismatch;
      return r;
    }
    if (codes == nullptr || scales == nullptr || (want_zeros != 0 && zeros == nullptr)) {
      r.status = errc::bad_argument;
      return r;
    }
    const int lo = p.scheme == int_scheme::symmetric && p.range == int_range::restricted ? 1 : 0;
    for (std::size_t i = 0; i < n_codes; ++i)
      if (codes[i] < lo || codes[i] > max_code(p.bits)) {
        r.status = errc::bad_argument;
        return r;
      }
    for (std::size_t i = 0; i < n_scales; ++i) {
      const result<int_group_codec> c = stored_int_codec(scales[i], want_zeros != 0 ? zeros[i] : 0.0f, p);
      if (!c.ok()) {
        r.status = c.status;
        return r;
      }
    }
    quantized_matrix& m = r.value;
    m.init(rows, cols, p, g.value);
    for (std::size_t i = 0; i < n_scales; ++i) m.scales_[i] = scales[i];
    for (std::size_t i = 0; i < want_zeros; ++i) m.zeros_[i] = zeros[i];
    r.status = pack_codes(codes, n_codes, p.bits, m.codes_.data());
    return r;
  }

  // Writes the rows*cols dequantized values (n must equal size(): errc::size_mismatch; an empty
  // matrix: errc::empty_input).
  [[nodiscard]] status dequantize(float* y, std::size_t n) const { return dequantize_values(y, n); }

  // The same, rounded to bfloat16 (nearest even).
  [[nodiscard]] status dequantize(bfloat16* y, std::size_t n) const { return dequantize_values(y, n); }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  bool empty() const noexcept { return size() == 0; }
  const int_params& params() const noexcept { return params_; }
  std::size_t group_length() const noexcept { return grouping_.group_length; }
  std::size_t group_count() const noexcept { return grouping_.group_count; }

  // packed_bytes(size(), bits) bytes in pack_codes' layout.
  const std::vector<std::uint8_t>& packed_codes() const noexcept { return codes_; }
  // One per group, exactly the stored values.
  const std::vector<float>& scales() const noexcept { return scales_; }
  // One per group for the affine schemes (integer zero-points as floats, or offsets); empty for
  // symmetric ones.
  const std::vector<float>& zeros() const noexcept { return zeros_; }

  // The code of element (r, c); 0 out of range.
  std::uint8_t code(std::size_t r, std::size_t c) const noexcept {
    std::uint8_t u = 0;
    if (r < rows_ && c < cols_) (void)unpack_codes(codes_.data(), r * cols_ + c, 1, params_.bits, &u);
    return u;
  }

  // All codes, one per byte (n must equal size()).
  [[nodiscard]] status unpack(std::uint8_t* codes, std::size_t n) const noexcept {
    if (empty()) return errc::empty_input;
    if (n != size()) return errc::size_mismatch;
    return unpack_codes(codes_.data(), 0, n, params_.bits, codes);
  }

  // Byte accounting of this matrix (int_storage_for its shape and parameters).
  int_storage storage() const noexcept {
    const result<int_storage> s = int_storage_for(params_, rows_, cols_);
    return s.ok() ? s.value : int_storage{};
  }

 private:
  void init(std::size_t rows, std::size_t cols, const int_params& p, const int_grouping& g) {
    rows_ = rows;
    cols_ = cols;
    params_ = p;
    grouping_ = g;
    codes_.assign(packed_bytes(rows * cols, p.bits), 0);
    scales_.assign(g.group_count, 0.0f);
    zeros_.assign(has_zero_points(p) ? g.group_count : 0, 0.0f);
  }

  template <class T>
  status dequantize_values(T* y, std::size_t n) const noexcept {
    if (empty()) return errc::empty_input;
    if (n != size()) return errc::size_mismatch;
    if (y == nullptr) return errc::bad_argument;
    return dequantize_int_packed(codes_.data(), rows_, cols_, params_, scales_.data(),
                                 zeros_.empty() ? nullptr : zeros_.data(), y);
  }

  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  int_params params_{};
  int_grouping grouping_{};
  std::vector<std::uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<float> zeros_;
};

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_INTEGER_HPP
