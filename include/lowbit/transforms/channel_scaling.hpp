// lowbit: per-input-channel scaling of a linear layer, the equivalence SmoothQuant
// (transforms/smoothquant.hpp) and AWQ (transforms/awq.hpp) are built on:
//
//   Y = X W^T = (X diag(s)^-1) (W diag(s))^T
//
// W [out, in] gets its input channels (columns) multiplied by s; the inverse goes into whatever
// produces X: a LayerNorm or RMSNorm (weight and bias divided by s), a preceding linear layer
// (its output rows and bias divided by s), or the activations themselves. docs/transforms.md
// section 6 has the folding rules; every call here works in place on the weights it changes and
// leaves the other operand alone.
//
// Every call checks in docs/api.md's order: shape (overflow) -> empty -> buffers (null,
// misaligned, s overlapping a tensor it scales) -> data (s: every value finite and > 0, checked
// before anything is written: non_finite_input for NaN/Inf, bad_argument for s <= 0).
#ifndef LOWBIT_TRANSFORMS_CHANNEL_SCALING_HPP
#define LOWBIT_TRANSFORMS_CHANNEL_SCALING_HPP

#include <cmath>
#include <cstddef>
#include <memory>
#include <new>

#include "../core/checks.hpp"
#include "../core/memory.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../schemes/layouts/bitstream.hpp"

namespace lowbit {

// One linear layer's weight as a view: `out` rows of `in` float32 values, row-major (the
// checkpoint's [out, in]); `in` is given by the call. Several layers that read the same input
// (Q, K and V; gate and up) are passed together as a span of these.
struct linear_weight {
  const float* w = nullptr;
  std::size_t out = 0;
};

namespace detail {

// s: n values, finite and > 0.
inline status check_channel_scales(const float* s, std::size_t n) noexcept {
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(s[j])) return errc::non_finite_input;
    if (!(s[j] > 0.0f)) return errc::bad_argument;
  }
  return status{};
}

}  // namespace detail

// W[:, j] *= s[j] for w [rows, cols] in place (s: cols values): the layer that reads the smoothed
// input. Errors: rows * cols overflowing -> bad_argument; rows or cols 0: ok; null ->
// bad_argument; misaligned; s overlapping w -> overlapping_buffers; s not finite ->
// non_finite_input, s <= 0 -> bad_argument (nothing written).
[[nodiscard]] inline status scale_input_channels(const float* s, std::size_t rows, std::size_t cols,
                                                 float* w) noexcept {
  std::size_t n = 0;
  if (status st = detail::checked_shape(rows, cols, sizeof(float), &n); !st) return st;
  if (n == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(s, cols)}, {detail::buffer_of(w, n)}); !st) return st;
  if (status st = detail::check_channel_scales(s, cols); !st) return st;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) w[r * cols + j] *= s[j];
  return status{};
}

// weight[j] /= s[j] and, when bias is not null, bias[j] /= s[j], j < n: the LayerNorm
// (weight and bias) or RMSNorm (weight, bias null) whose output the scaled layers read.
// Errors: n 0: ok; s or weight null -> bad_argument; misaligned; s, weight and bias overlapping
// -> overlapping_buffers; s not finite -> non_finite_input, s <= 0 -> bad_argument (nothing
// written).
[[nodiscard]] inline status fold_inverse_into_norm(const float* s, std::size_t n, float* weight,
                                                   float* bias) noexcept {
  if (n == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(s, n)},
                                        {detail::buffer_of(weight, n), detail::buffer_of(bias, bias != nullptr ? n : 0)});
      !st)
    return st;
  if (status st = detail::check_channel_scales(s, n); !st) return st;
  for (std::size_t j = 0; j < n; ++j) {
    weight[j] /= s[j];
    if (bias != nullptr) bias[j] /= s[j];
  }
  return status{};
}

// Row j of w [rows, cols] /= s[j] and bias[j] /= s[j] (bias may be null), s: rows values: the
// preceding linear layer whose outputs are the scaled layers' inputs (v_proj before o_proj,
// up_proj before down_proj). Errors: as scale_input_channels (rows * cols overflowing ->
// bad_argument; rows or cols 0: ok; ...).
[[nodiscard]] inline status fold_inverse_into_linear(const float* s, std::size_t rows, std::size_t cols, float* w,
                                                     float* bias) noexcept {
  std::size_t n = 0;
  if (status st = detail::checked_shape(rows, cols, sizeof(float), &n); !st) return st;
  if (n == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(s, rows)},
                                        {detail::buffer_of(w, n), detail::buffer_of(bias, bias != nullptr ? rows : 0)});
      !st)
    return st;
  if (status st = detail::check_channel_scales(s, rows); !st) return st;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < cols; ++j) w[r * cols + j] /= s[r];
    if (bias != nullptr) bias[r] /= s[r];
  }
  return status{};
}

// dst[t, j] = x[t, j] / s[j] for activations x [tokens, in]: where nothing before the layer can
// absorb 1/s (a residual stream), the caller divides the activations at run time.
// Errors: tokens * in overflowing -> bad_argument; tokens or in 0: ok; null -> bad_argument;
// misaligned; dst overlapping x or s -> overlapping_buffers; s not finite -> non_finite_input,
// s <= 0 -> bad_argument (nothing written). NaN/Inf in x propagate.
[[nodiscard]] inline status divide_input_channels(const float* x, const float* s, std::size_t tokens, std::size_t in,
                                                  float* dst) noexcept {
  std::size_t n = 0;
  if (status st = detail::checked_shape(tokens, in, sizeof(float), &n); !st) return st;
  if (n == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(x, n), detail::buffer_of(s, in)}, {detail::buffer_of(dst, n)});
      !st)
    return st;
  if (status st = detail::check_channel_scales(s, in); !st) return st;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < in; ++j) dst[t * in + j] = x[t * in + j] / s[j];
  return status{};
}

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_CHANNEL_SCALING_HPP
