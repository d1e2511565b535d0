// lowbit: rounding modes, overflow modes and the special-value policy of a conversion.
//
// The defaults reproduce NVIDIA's conversion instructions (the host code of cuda_fp8.hpp,
// cuda_fp6.hpp and cuda_fp4.hpp); the presets reproduce ml_dtypes, PyTorch and ONNX's Cast.
// docs/formats.md tabulates what each choice does to NaN, Inf, overflow, ties and -0.
#ifndef LOWBIT_CORE_ROUNDING_HPP
#define LOWBIT_CORE_ROUNDING_HPP

#include "config.hpp"

namespace lowbit {

// How a value between two representable neighbours is resolved.
//  nearest_even   : nearest, ties to the neighbour with an even significand (IEEE 754 default).
//  toward_zero    : truncate the magnitude.
//  toward_pos_inf : the neighbour above (for negative values: the one nearer zero).
//  stochastic     : round the magnitude up with probability equal to the discarded fraction, using
//                   32 caller-supplied random bits r: up iff floor(fraction * 2^32) + r >= 2^32.
//  nearest_away   : nearest, ties away from zero (roundf; microxcaling's MX element rounding).
//  nearest_toward_zero : nearest, ties to the smaller magnitude (ggml's MXFP4/NVFP4 element search).
enum class rounding { nearest_even, toward_zero, toward_pos_inf, stochastic, nearest_away, nearest_toward_zero };

// What a finite value beyond the format's range becomes.
//  saturate     : +-max finite (NVIDIA __NV_SATFINITE, current PyTorch E4M3).
//  non_saturate : +-Inf where the format has Inf, otherwise NaN; formats with neither (FP6, FP4)
//                 saturate in both modes. With toward_zero (and toward_pos_inf for negative values)
//                 a finite input never overflows to Inf or NaN, as IEEE 754 section 7.4 says.
enum class overflow { saturate, non_saturate };

// Sign of the NaN produced from a NaN input. (A NaN produced by overflow keeps the value's sign.)
enum class nan_sign {
  positive,  // canonical +NaN: NVIDIA's conversions from float
  preserve   // the input's sign: ml_dtypes, PyTorch
};

// Mantissa of a NaN written into an IEEE-style format (E5M2, float16, bfloat16).
enum class nan_pattern {
  all_ones,  // S.11111.11 = 0x7F for E5M2: NVIDIA, PyTorch
  quiet      // S.11111.10 = 0x7E for E5M2, only the quiet bit: ml_dtypes
};

// What +-Inf becomes under overflow::saturate.
enum class inf_policy {
  saturate,  // +-max finite: NVIDIA __NV_SATFINITE, CUTLASS
  propagate  // Inf where the format has it, else NaN, else max: ml_dtypes
};

// What NaN becomes in a format that has no NaN (FP6 E2M3/E3M2, FP4 E2M1).
enum class nan_to_finite {
  positive_max,  // +max whatever the sign: NVIDIA ("NaN input values result in positive MAXNORM")
  signed_max,    // +-max with the NaN's sign: CUTLASS
  flipped_zero   // the -0 pattern with the NaN's sign applied to it, so +NaN -> -0, -NaN -> +0: ml_dtypes
};

// What zero and negative inputs become in an unsigned format without zero (E8M0).
enum class unsigned_input {
  magnitude,  // convert |x|; zero becomes the smallest value 2^-127: NVIDIA, PyTorch
  invalid     // NaN, or the smallest value under overflow::saturate: ml_dtypes
};

// When an input outside the range of an unsigned format (E8M0: [2^-127, 2^127]) is recognised.
// Only overflow::non_saturate sees a difference; under saturate both give the nearer end.
//  after_rounding  : the value is rounded first; it overflows (to NaN) only when it rounds above
//                    2^127, so toward_zero never overflows (IEEE 754 section 7.4), and below
//                    2^-127 it rounds to 2^-127 or up. NVIDIA, ml_dtypes, PyTorch.
//  before_rounding : x > 2^127, x < 2^-127 and zero become NaN whatever the rounding mode (on |x|
//                    under unsigned_input::magnitude). ONNX Cast to FLOAT8E8M0 with saturate=0.
// Signed formats ignore it: ONNX's FP8 tables test the rounded value, [x] > FLT_MAX.
enum class unsigned_range { after_rounding, before_rounding };

// A complete description of one float-to-format conversion.
struct policy {
  overflow ov = overflow::saturate;
  rounding rm = rounding::nearest_even;
  lowbit::nan_sign nan_sign = lowbit::nan_sign::positive;
  lowbit::nan_pattern nan_pattern = lowbit::nan_pattern::all_ones;
  lowbit::inf_policy inf = lowbit::inf_policy::saturate;
  lowbit::nan_to_finite nan_to_finite = lowbit::nan_to_finite::positive_max;
  lowbit::unsigned_input unsigned_input = lowbit::unsigned_input::magnitude;
  lowbit::unsigned_range unsigned_range = lowbit::unsigned_range::after_rounding;
};

// Named presets. Each reproduces one implementation's conversions bit for bit: NVIDIA's
// cuda_fp8.hpp / cuda_fp4.hpp / cuda_fp6.hpp host code (CUDA 13), ml_dtypes' float8.h and
// mxfloat.h (jax-ml/ml_dtypes), PyTorch's c10 Float8_*.h, and ONNX's Cast operator (opset 25
// tables). tests/test_presets.cpp checks each one on the edge values docs/formats.md section 3.2
// tabulates.
namespace presets {

// NVIDIA __nv_cvt_*(..., __NV_SATFINITE, ...): lowbit's default.
LOWBIT_HD constexpr policy cuda_satfinite(rounding rm = rounding::nearest_even) noexcept {
  policy p;
  p.rm = rm;
  return p;
}

// NVIDIA __nv_cvt_*(..., __NV_NOSAT, ...).
LOWBIT_HD constexpr policy cuda_nosat(rounding rm = rounding::nearest_even) noexcept {
  policy p;
  p.ov = overflow::non_saturate;
  p.rm = rm;
  return p;
}

// ml_dtypes ConvertFrom<kSaturate, kTruncate=false>: the constructors and NumPy casts use
// overflow::non_saturate; overflow::saturate gives ConvertFrom<true, false>.
LOWBIT_HD constexpr policy ml_dtypes(overflow ov = overflow::non_saturate) noexcept {
  policy p;
  p.ov = ov;
  p.nan_sign = nan_sign::preserve;
  p.nan_pattern = nan_pattern::quiet;
  p.inf = inf_policy::propagate;
  p.nan_to_finite = nan_to_finite::flipped_zero;
  p.unsigned_input = unsigned_input::invalid;
  return p;
}

// PyTorch c10 Float8_* constructors from float (before pytorch/pytorch#178817: never
// saturating). Pass overflow::saturate for the E4M3 behaviour after that change.
LOWBIT_HD constexpr policy pytorch(overflow ov = overflow::non_saturate) noexcept {
  policy p;
  p.ov = ov;
  p.nan_sign = nan_sign::preserve;
  p.inf = inf_policy::propagate;
  return p;
}

// ONNX Cast (opset 25) with its `saturate` attribute: overflow::saturate for saturate=1 (the
// default), overflow::non_saturate for saturate=0. That is NVIDIA's rules with the NaN's sign
// kept (onnxruntime's CPU Cast writes S.1111.111 / S.11111.11 with the input's sign), plus
// unsigned_range::before_rounding for E8M0. Per target format:
//  - FP8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ: the Cast tables. rm must stay nearest_even (ONNX
//    rounds FP8 to nearest even only).
//  - FP4 E2M1: saturates in both modes, NaN becomes +6 (ONNX's float4 table).
//  - E8M0: rm is ONNX's round_mode: toward_pos_inf for "up" (ONNX's default), toward_zero for
//    "down", nearest_even for "nearest" (E8M0's significand is the odd implicit 1, so ties go up,
//    as ONNX says). Zero and negative inputs are unspecified by ONNX; lowbit converts |x|, as
//    ONNX's reference implementation does, except that under saturate=0 zero is NaN (the table).
//  - float16, bfloat16: ONNX's float-to-float rule overflows to +-Inf whatever saturate says, so
//    pass overflow::non_saturate.
LOWBIT_HD constexpr policy onnx(overflow ov = overflow::saturate, rounding rm = rounding::nearest_even) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  p.nan_sign = nan_sign::preserve;
  p.unsigned_range = unsigned_range::before_rounding;
  return p;
}

}  // namespace presets
}  // namespace lowbit

#endif  // LOWBIT_CORE_ROUNDING_HPP
