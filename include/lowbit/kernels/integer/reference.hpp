// lowbit: the per-group contract of the integer schemes, shared by the scalar reference and the
// SIMD kernels: the storage format of scales (scale_storage), one group's codec
// (int_group_codec), the rounding of x / s to a code (round_to_code), the scalar reference
// kernels (kernels::int_ref) and the internal table a SIMD path replaces them with
// (kernels::int_kernels). schemes/integer.hpp builds the schemes on top; avx2_table.hpp beside
// this file implements the same table with AVX2, avx2_{symmetric,affine,dequantize}.hpp the
// whole-matrix paths (docs/kernels.md: why they give these bytes). This file knows only core/: kernels sit below schemes.
#ifndef LOWBIT_KERNELS_INTEGER_REFERENCE_HPP
#define LOWBIT_KERNELS_INTEGER_REFERENCE_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../../core/no_contract.hpp"
#include "../../core/rounding.hpp"

namespace lowbit {

// Storage format of integer scales and float offsets (float32, IEEE binary16, bfloat16): the
// schemes round every computed scale to it, and codes are computed against the stored value.
enum class scale_storage : std::uint8_t { fp32, fp16, bf16 };

// Bytes of one stored scale.
constexpr std::size_t bytes_per_scale(scale_storage f) noexcept { return f == scale_storage::fp32 ? 4u : 2u; }

namespace kernels {
// a * b + c is written no_contract(a * b) + c in the scalar references (core/no_contract.hpp).
using lowbit::detail::no_contract;
}  // namespace kernels

// ---------------------------------------------------------------------------------------------
// Rounding

// Rounds y to an integer under rm and clamps it to [lo, hi] (lo <= hi, both within +-2^20).
// Ties and directions follow lowbit::rounding on y itself; stochastic rounds the magnitude up iff
// floor(frac * 2^32) + random_bits >= 2^32. Uses only exact float operations (floor, a Sterbenz
// subtraction, a power-of-two product), so the result does not depend on the FPU rounding mode.
// NaN gives lo.
inline int round_to_code(float y, int lo, int hi, rounding rm, std::uint32_t random_bits = 0) noexcept {
  if (!(y > static_cast<float>(lo))) return lo;  // rounding is monotone: round(y) <= lo
  if (!(y < static_cast<float>(hi))) return hi;
  const bool negative = y < 0.0f;
  const float a = negative ? -y : y;  // < 2^20: floor and the fraction are exact
  const float f = std::floor(a);
  const float frac = a - f;
  int n = static_cast<int>(f);
  bool up = false;
  switch (rm) {
    case rounding::nearest_even: up = frac > 0.5f || (frac == 0.5f && (n & 1) != 0); break;
    case rounding::nearest_away: up = frac >= 0.5f; break;
    case rounding::nearest_toward_zero: up = frac > 0.5f; break;
    case rounding::toward_zero: up = false; break;
    case rounding::toward_pos_inf: up = !negative && frac > 0.0f; break;
    case rounding::stochastic: {
      const std::uint64_t frac32 = static_cast<std::uint64_t>(frac * 4294967296.0f);  // exact
      up = frac32 + random_bits >= (std::uint64_t{1} << 32);
      break;
    }
  }
  n += up ? 1 : 0;
  const int r = negative ? -n : n;
  return r < lo ? lo : r > hi ? hi : r;
}

// ---------------------------------------------------------------------------------------------
// One group's parameters, and the per-group operations a SIMD kernel replaces

// Everything the inner loops need for one group: u = clamp(round((x - offset) / scale) + zero_point,
// code_min, code_max); x^ = (u - zero_point) * scale, or u * scale + offset when has_offset.
// A scale of 0 (all-zero group, or a scale that underflows its storage format) gives every code
// the zero-point (clamped to the code range) and dequantizes to 0 (to the offset when has_offset).
struct int_group_codec {
  float scale = 0.0f;
  int zero_point = 0;   // symmetric: 2^(b-1); affine: 0..2^b-1; offset: 0
  float offset = 0.0f;  // affine_offset only
  bool has_offset = false;
  int code_min = 0;     // symmetric restricted: 1; otherwise 0
  int code_max = 255;   // 2^b - 1
  rounding rm = rounding::nearest_even;
};

namespace kernels {
namespace int_ref {

// Scalar reference kernels; int_kernels documents each contract.
inline bool range(const float* x, std::size_t n, float* lo, float* hi) noexcept {
  float mn = x[0];
  float mx = x[0];
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  *lo = mn;
  *hi = mx;
  return finite;
}

inline std::uint8_t quantize_one(float x, const int_group_codec& c, std::uint32_t random_bits) noexcept {
  if (c.scale == 0.0f) {
    const int z = c.zero_point < c.code_min ? c.code_min : c.zero_point > c.code_max ? c.code_max : c.zero_point;
    return static_cast<std::uint8_t>(z);
  }
  const float y = c.has_offset ? (x - c.offset) / c.scale : x / c.scale;
  return static_cast<std::uint8_t>(
      round_to_code(y, c.code_min - c.zero_point, c.code_max - c.zero_point, c.rm, random_bits) + c.zero_point);
}

inline float dequantize_one(std::uint8_t u, const int_group_codec& c) noexcept {
  // The offset form goes through double: u * scale is exact there, so the one rounding of the sum
  // cannot be changed by FMA contraction.
  if (c.has_offset)
    return static_cast<float>(static_cast<double>(u) * static_cast<double>(c.scale) + static_cast<double>(c.offset));
  return static_cast<float>(static_cast<int>(u) - c.zero_point) * c.scale;
}

inline void quantize(const float* x, std::size_t n, const int_group_codec& c, const std::uint32_t* random_bits,
                     std::uint8_t* codes) noexcept {
  for (std::size_t i = 0; i < n; ++i) codes[i] = quantize_one(x[i], c, random_bits != nullptr ? random_bits[i] : 0u);
}

inline void dequantize(const std::uint8_t* codes, std::size_t n, const int_group_codec& c, float* y) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = dequantize_one(codes[i], c);
}

inline double error(const float* x, std::size_t n, const int_group_codec& c, double norm,
                    const std::uint32_t* random_bits) noexcept {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float xh = dequantize_one(quantize_one(x[i], c, random_bits != nullptr ? random_bits[i] : 0u), c);
    const double d = std::fabs(static_cast<double>(xh) - static_cast<double>(x[i]));
    sum += norm == 2.0 ? no_contract(d * d) : std::pow(d, norm);
  }
  return sum;
}

}  // namespace int_ref

// The per-group inner operations (internal: a public call never takes a table). Every bulk
// function of schemes/integer.hpp goes through one of these tables; a SIMD table must give the
// same results as reference_int_kernels() bit for bit.
struct int_kernels {
  // min and max of x[0..n) (n >= 1); returns false when any element is NaN or +-Inf.
  bool (*range)(const float* x, std::size_t n, float* lo, float* hi) noexcept;
  // codes[i] = the code of x[i] under c (x finite); random_bits (n values) only for stochastic,
  // null meaning 0.
  void (*quantize)(const float* x, std::size_t n, const int_group_codec& c, const std::uint32_t* random_bits,
                   std::uint8_t* codes) noexcept;
  // y[i] = the value of codes[i] under c.
  void (*dequantize)(const std::uint8_t* codes, std::size_t n, const int_group_codec& c, float* y) noexcept;
  // sum over i of |dequantize(quantize(x[i])) - x[i]|^norm, accumulated in double in index order
  // (the mse_grid score; norm == 2 squares).
  double (*error)(const float* x, std::size_t n, const int_group_codec& c, double norm,
                  const std::uint32_t* random_bits) noexcept;
};

inline const int_kernels& reference_int_kernels() noexcept {
  static constexpr int_kernels k{&int_ref::range, &int_ref::quantize, &int_ref::dequantize, &int_ref::error};
  return k;
}

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_INTEGER_REFERENCE_HPP
