// lowbit: SmoothQuant (Xiao et al., "SmoothQuant: Accurate and Efficient Post-Training
// Quantization for Large Language Models", ICML 2023) for W8A8 layers, with the alpha search the
// paper leaves to the user. docs/transforms.md section 7 has every step, default and folding rule.
//
// Per input channel j, over the layers that read the same input (their weight maxima combined,
// as the reference's smooth_ln_fcs does for Q, K and V):
//
//   w_j = max(max over layers and rows |W_ij|, 1e-5)            (the reference's clamp)
//   s_j = max(max|X_j|^alpha / w_j^(1 - alpha), 1e-5)           (the reference's clamp)
//
// computed in double and rounded once to float. The layers then compute X diag(s)^-1 (W diag(s))^T:
// scale_input_channels on every W, and 1/s folded into the op before (channel_scaling.hpp:
// fold_inverse_into_norm, fold_inverse_into_linear) or applied to the activations.
//
// smoothquant_search scores each alpha of a grid (21 points 0, 0.05, ..., 1 by default) by the
// W8A8 output error on calibration rows: ||X W^T - Qa(X / s) Qw(W s)^T||^2 / ||X W^T||^2 over every
// layer's output, with Qa and Qw the integer schemes' quantize-dequantize (default INT8 symmetric
// per token and per output channel, int_params for both), the products through linalg's gemm.
//
// Never throws; buffers are allocated with new (std::nothrow) (errc::out_of_memory).
#ifndef LOWBIT_TRANSFORMS_SMOOTHQUANT_HPP
#define LOWBIT_TRANSFORMS_SMOOTHQUANT_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>

#include "../core/checks.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../linalg/exec.hpp"
#include "../linalg/gemm.hpp"
#include "../schemes/export.hpp"
#include "../schemes/integer.hpp"
#include "activation_stats.hpp"
#include "channel_scaling.hpp"

namespace lowbit {

// The reference's guards (mit-han-lab/smoothquant smooth.py): the weight maximum of a channel and
// the smoothing factor are both clamped below at 1e-5.
inline constexpr float smoothquant_min_weight_max = 1e-5f;
inline constexpr float smoothquant_min_scale = 1e-5f;

// A channel whose calibration maximum max|X_j| is 0: never active in the calibration rows.
enum class inactive_channel : std::uint8_t {
  unit,       // s_j = 1: the channel is left as it is (lowbit's default)
  reference,  // the reference's formula: 0^alpha / w^(1 - alpha) clamped to 1e-5 for alpha > 0, so an
              // input the calibration never saw is multiplied by 1e5 at run time (on a real model's
              // held-out tokens this took W8A8's relative error to 1.0: docs/real-model.md)
};

// The paper's default migration strength (OPT, BLOOM; the reference recommends 0.8-0.9 for Llama).
struct smoothquant_options {
  float alpha = 0.5f;  // in [0, 1]
  inactive_channel inactive = inactive_channel::unit;
};

struct smoothquant_search_options {
  // The grid: alphas i / (grid_points - 1), i = 0 .. grid_points - 1 (21: 0, 0.05, ..., 1); 1
  // point: alpha 0.5. Ignored when `alphas` is not empty. An empty grid is bad_argument.
  std::size_t grid_points = 21;
  span<const float> alphas{};  // an explicit grid, each in [0, 1]
  int_params activations = int_presets::int8_per_token();  // Qa, on [tokens, in]
  int_params weights = int_presets::int8_per_channel();    // Qw, on each layer's [out, in]
  inactive_channel inactive = inactive_channel::unit;      // as in smoothquant_options
};

// Every alpha's score and the best. The errors are relative: ||Y - Y^||^2 / ||Y||^2 over the
// calibration rows and every layer's outputs (0 when Y is 0 and the error too, Inf when only Y is).
struct smoothquant_search_result {
  float alpha = 0.0f;                // the best alpha (the first of equal scores)
  double error = 0.0;                // its error
  double error_unsmoothed = 0.0;     // W8A8 without smoothing (s = 1)
  tensor<float> scales;              // [1, in]: s at the best alpha
  tensor<float> alphas;              // [1, points]
  tensor<double> errors;             // [1, points]
};

namespace detail {

inline status sq_check_maxima(const float* v, std::size_t n) noexcept {
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(v[j])) return errc::non_finite_input;
    if (v[j] < 0.0f) return errc::bad_argument;
  }
  return status{};
}

// s from checked maxima (act_max, wmax unclamped).
inline void sq_scales(const float* act_max, const float* wmax, std::size_t in, double alpha, inactive_channel inactive,
                      float* s) noexcept {
  for (std::size_t j = 0; j < in; ++j) {
    if (act_max[j] == 0.0f && inactive == inactive_channel::unit) {
      s[j] = 1.0f;
      continue;
    }
    const double w = wmax[j] > smoothquant_min_weight_max ? static_cast<double>(wmax[j])
                                                          : static_cast<double>(smoothquant_min_weight_max);
    const double v = std::pow(static_cast<double>(act_max[j]), alpha) / std::pow(w, 1.0 - alpha);
    const float f = static_cast<float>(v);
    s[j] = f > smoothquant_min_scale ? f : smoothquant_min_scale;  // NaN cannot occur: both > 0 or pow(0, a)
  }
}

// Total rows of the layers; shape checks of each (overflow). out == 0 layers allowed.
inline status layers_shape(span<const linear_weight> layers, std::size_t in, std::size_t* total) noexcept {
  std::size_t t = 0;
  for (const linear_weight& l : layers) {
    std::size_t n = 0;
    if (status s = checked_shape(l.out, in, sizeof(float), &n); !s) return s;
    if (l.out > static_cast<std::size_t>(-1) - t) return errc::bad_argument;
    t += l.out;
  }
  std::size_t n = 0;
  if (status s = checked_shape(t, in, sizeof(float), &n); !s) return s;
  *total = t;
  return status{};
}

inline status layers_buffers(span<const linear_weight> layers, std::size_t in) noexcept {
  for (const linear_weight& l : layers)
    if (status s = check_buffers({buffer_of(l.w, l.out * in)}, {}); !s) return s;
  return status{};
}

inline status layers_finite(span<const linear_weight> layers, std::size_t in) noexcept {
  for (const linear_weight& l : layers)
    for (std::size_t i = 0; i < l.out * in; ++i)
      if (!std::isfinite(l.w[i])) return errc::non_finite_input;
  return status{};
}

// max over layers and rows of |W_ij| per column j (checked, finite weights).
inline void layers_column_max(span<const linear_weight> layers, std::size_t in, float* wmax) noexcept {
  for (std::size_t j = 0; j < in; ++j) wmax[j] = 0.0f;
  for (const linear_weight& l : layers)
    for (std::size_t r = 0; r < l.out; ++r)
      for (std::size_t j = 0; j < in; ++j) {
        const float a = std::fabs(l.w[r * in + j]);
        if (a > wmax[j]) wmax[j] = a;
      }
}

// The buffers of a quantize-dequantize of a [rows, cols] matrix on p (fake_quant_rows): codes
// rows*cols, scales and zeros of the grouping.
struct fake_quant_work {
  std::unique_ptr<std::uint8_t[]> codes;
  std::unique_ptr<float[]> scales;
  std::unique_ptr<float[]> zeros;
  bool allocate(std::size_t n, std::size_t groups) noexcept {
    codes = allocate_buffer<std::uint8_t>(n);
    scales = allocate_buffer<float>(groups);
    zeros = allocate_buffer<float>(groups);
    return codes && scales && zeros;
  }
};

inline std::size_t group_count_of(const int_params& p, std::size_t rows, std::size_t cols) noexcept {
  const result<int_grouping> g = int_groups(p, rows, cols);
  return g.ok() ? g.value.group_count : 0;
}

// Whether p quantizes every row of a matrix on its own (per channel, per token, groups along
// cols), so that blocks of rows can be quantized apart with the same result.
inline bool rows_apart(const int_params& p) noexcept {
  return p.granularity != granularity::per_tensor && p.group_axis == int_group_axis::cols;
}

// Quantize-dequantize (quantize_int, dequantize_int) of rows [r0, r1) of a [rows, cols] matrix on
// p into dst (src and dst point at row 0), on the part of w that belongs to those rows (w sized
// for the whole matrix): blocks of rows can be done concurrently when rows_apart(p); otherwise
// rows [r0, r1) are one matrix (one per-tensor scale).
inline status fake_quant_rows(const float* src, std::size_t r0, std::size_t r1, std::size_t cols, const int_params& p,
                              fake_quant_work& w, float* dst) noexcept {
  const std::size_t g0 = rows_apart(p) ? r0 * group_count_of(p, 1, cols) : 0;
  if (status s = quantize_int(src + r0 * cols, r1 - r0, cols, p, w.codes.get() + r0 * cols, w.scales.get() + g0,
                              w.zeros.get() + g0);
      !s)
    return s;
  return dequantize_int(w.codes.get() + r0 * cols, w.scales.get() + g0, w.zeros.get() + g0, r1 - r0, cols, p,
                        dst + r0 * cols);
}

// Rows per block for passes over a matrix with `cols` columns: about 64K values (256 KB of
// float), so that the several passes made over one block stay in cache.
inline std::size_t block_rows(std::size_t cols) noexcept { return cols < 65536 ? 65536 / cols : 1; }

// f(r0, r1) -> status on the blocks [0, per), [per, 2 per), ... of [0, rows), through exec.
// Returns the status of the first block that failed, in order; out_of_memory.
template <class F>
status for_row_blocks(std::size_t rows, std::size_t per, const linalg_exec& exec, const F& f) noexcept {
  if (per == 0) per = 1;
  const std::size_t blocks = (rows + per - 1) / per;
  std::unique_ptr<status[]> st = allocate_buffer<status>(blocks);
  if (!st) return errc::out_of_memory;
  auto task = [&](std::size_t b) { st[b] = f(b * per, b + 1 == blocks ? rows : (b + 1) * per); };
  linalg_parallel_for(exec, blocks, task);
  for (std::size_t b = 0; b < blocks; ++b)
    if (!st[b]) return st[b];
  return status{};
}

inline double relative_of(double err, double energy) noexcept {
  if (energy > 0.0) return err / energy;
  return err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

// sum of squares of a - b and of a, in double.
inline void error_energy(const float* a, const float* b, std::size_t n, double* err, double* energy) noexcept {
  double e = 0.0, y = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    e += d * d;
    y += static_cast<double>(a[i]) * static_cast<double>(a[i]);
  }
  *err = e;
  *energy = y;
}

inline bool sq_valid_alpha(float a) noexcept { return std::isfinite(a) && a >= 0.0f && a <= 1.0f; }

inline status sq_check_search_options(const smoothquant_search_options& o) noexcept {
  bool alphas_ok = o.alphas.size() != 0 || o.grid_points != 0;
  for (std::size_t i = 0; i < o.alphas.size(); ++i) alphas_ok = alphas_ok && sq_valid_alpha(o.alphas[i]);
  if (!alphas_ok) return errc::bad_argument;
  if (status s = check_int_params(o.activations); !s) return s;
  if (status s = check_int_params(o.weights); !s) return s;
  if (o.activations.element_rounding == rounding::stochastic || o.weights.element_rounding == rounding::stochastic)
    return errc::bad_argument;
  return status{};
}

}  // namespace detail

// s[j] for one alpha from the per-channel maxima: act_max (max |X_j| over the calibration tokens,
// activation_stats::max_abs) and weight_max (max |W_ij| over the rows of every layer reading X),
// both `in` values. The clamps of the header comment apply.
// Errors, in order: alpha outside [0, 1] or NaN -> bad_argument; in 0: ok, nothing written; null
// -> bad_argument; misaligned; s overlapping an input -> overlapping_buffers; a NaN or Inf
// maximum -> non_finite_input, a negative one -> bad_argument (nothing written).
[[nodiscard]] inline status smoothquant_scales(const float* act_max, const float* weight_max, std::size_t in,
                                               const smoothquant_options& o, float* s) noexcept {
  if (!detail::sq_valid_alpha(o.alpha)) return errc::bad_argument;
  if (in == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(act_max, in), detail::buffer_of(weight_max, in)},
                                        {detail::buffer_of(s, in)});
      !st)
    return st;
  if (status st = detail::sq_check_maxima(act_max, in); !st) return st;
  if (status st = detail::sq_check_maxima(weight_max, in); !st) return st;
  detail::sq_scales(act_max, weight_max, in, o.alpha, o.inactive, s);
  return status{};
}

// The same with the weight maxima taken over layers (each [out, in], sharing the input): one s for
// all of them, as the reference computes for Q, K and V. Errors: smoothquant_scales', plus a
// layer whose size overflows -> bad_argument (after the options), a null layer -> bad_argument, a
// NaN or Inf weight -> non_finite_input; out_of_memory.
[[nodiscard]] inline status smoothquant_scales(const float* act_max, span<const linear_weight> layers, std::size_t in,
                                               const smoothquant_options& o, float* s) noexcept {
  if (!detail::sq_valid_alpha(o.alpha)) return errc::bad_argument;
  std::size_t total = 0;
  if (status st = detail::layers_shape(layers, in, &total); !st) return st;
  if (in == 0) return status{};
  if (status st = detail::check_buffers({detail::buffer_of(act_max, in)}, {detail::buffer_of(s, in)}); !st) return st;
  if (status st = detail::layers_buffers(layers, in); !st) return st;
  for (const linear_weight& l : layers)
    if (status st = detail::check_buffers({detail::buffer_of(l.w, l.out * in)}, {detail::buffer_of(s, in)}); !st)
      return st;
  if (status st = detail::sq_check_maxima(act_max, in); !st) return st;
  if (status st = detail::layers_finite(layers, in); !st) return st;
  std::unique_ptr<float[]> wmax = detail::allocate_buffer<float>(in);
  if (!wmax) return errc::out_of_memory;
  detail::layers_column_max(layers, in, wmax.get());
  detail::sq_scales(act_max, wmax.get(), in, o.alpha, o.inactive, s);
  return status{};
}

// The alpha search on calibration rows x [tokens, in] with act_max the per-channel max |x| of the
// whole calibration stream (activation_stats::max_abs; it may cover more rows than x), for the
// layers sharing the input. Returns every alpha's W8A8 error, the best alpha and its s (the
// caller then applies s: scale_input_channels on each layer, fold_inverse_into_norm or
// fold_inverse_into_linear on the op before).
// Errors, in order: an empty grid (grid_points 0 and no alphas), an alpha outside [0, 1] ->
// bad_argument; check_int_params' errors of o.activations and o.weights, stochastic rounding ->
// bad_argument; the shape errors of int_groups for x [tokens, in] and each layer [out, in], a
// size that overflows -> bad_argument; tokens, in or the layers' total rows 0 -> empty_input; null
// -> bad_argument; misaligned; NaN or Inf in x, act_max or a weight -> non_finite_input, a
// negative act_max -> bad_argument; a scale the params' storage cannot hold -> scale_overflow;
// out_of_memory. On an error the result is empty.
[[nodiscard]] inline result<smoothquant_search_result> smoothquant_search(
    const float* x, const float* act_max, span<const linear_weight> layers, std::size_t tokens, std::size_t in,
    const smoothquant_search_options& o = {}, const linalg_exec& exec = {}) noexcept {
  result<smoothquant_search_result> r;
  // options
  if (!(r.status = detail::sq_check_search_options(o))) return r;
  const std::size_t points = o.alphas.size() != 0 ? o.alphas.size() : o.grid_points;
  // shape
  std::size_t total = 0;
  if (!(r.status = detail::layers_shape(layers, in, &total))) return r;
  {
    const result<int_grouping> g = int_groups(o.activations, tokens, in);
    if (!(r.status = g.status)) return r;
    for (const linear_weight& l : layers) {
      const result<int_grouping> gw = int_groups(o.weights, l.out, in);
      if (!(r.status = gw.status)) return r;
    }
  }
  std::size_t ny = 0;
  if (!(r.status = detail::checked_shape(tokens, total, sizeof(float), &ny))) return r;
  // empty: a statistic of nothing
  if (tokens == 0 || in == 0 || total == 0) {
    r.status = errc::empty_input;
    return r;
  }
  // buffers
  if (!(r.status = detail::check_buffers({detail::buffer_of(x, tokens * in), detail::buffer_of(act_max, in)}, {})) ||
      !(r.status = detail::layers_buffers(layers, in)))
    return r;
  // data
  for (std::size_t i = 0; i < tokens * in; ++i)
    if (!std::isfinite(x[i])) {
      r.status = errc::non_finite_input;
      return r;
    }
  if (!(r.status = detail::sq_check_maxima(act_max, in)) || !(r.status = detail::layers_finite(layers, in))) return r;

  const std::size_t nw = total * in, nx = tokens * in;
  std::size_t wgroups = 0;
  for (const linear_weight& l : layers) wgroups += detail::group_count_of(o.weights, l.out, in);
  const std::size_t xgroups = detail::group_count_of(o.activations, tokens, in);
  std::unique_ptr<float[]> w = detail::allocate_buffer<float>(nw);   // the layers, concatenated
  std::unique_ptr<float[]> ws = detail::allocate_buffer<float>(nw);  // W diag(s), then Qw of it
  std::unique_ptr<float[]> xs = detail::allocate_buffer<float>(nx);  // X / s, then Qa of it
  std::unique_ptr<float[]> y = detail::allocate_buffer<float>(ny);
  std::unique_ptr<float[]> yq = detail::allocate_buffer<float>(ny);
  std::unique_ptr<float[]> wmax = detail::allocate_buffer<float>(in);
  std::unique_ptr<float[]> s = detail::allocate_buffer<float>(in);
  detail::fake_quant_work fw, fx;
  smoothquant_search_result& out = r.value;
  if (!w || !ws || !xs || !y || !yq || !wmax || !s || !fw.allocate(nw, wgroups) || !fx.allocate(nx, xgroups) ||
      !(r.status = out.scales.allocate(1, in)) || !(r.status = out.alphas.allocate(1, points)) ||
      !(r.status = out.errors.allocate(1, points))) {
    r.status = errc::out_of_memory;
    out = smoothquant_search_result{};
    return r;
  }
  {
    std::size_t row = 0;
    for (const linear_weight& l : layers) {
      for (std::size_t i = 0; i < l.out * in; ++i) w[row * in + i] = l.w[i];
      row += l.out;
    }
  }
  detail::layers_column_max(layers, in, wmax.get());

  gemm_options nt;
  nt.op_b = matrix_op::transpose;
  if (!(r.status = gemm(x, in, w.get(), in, tokens, total, in, nt, y.get(), total, exec))) {
    out = smoothquant_search_result{};
    return r;
  }
  // The W8A8 error for the s in s[] (s == nullptr: no smoothing). X / s and W diag(s) are formed and
  // quantized a block of rows at a time (in cache, the blocks through exec) when the scheme
  // quantizes rows apart; a per-tensor scheme takes the whole X, or each layer whole.
  const bool w_apart = detail::rows_apart(o.weights);
  const auto score = [&](const float* sc, double* rel) -> status {
    const auto x_rows = [&](std::size_t r0, std::size_t r1) -> status {
      for (std::size_t t = r0; t < r1; ++t)
        for (std::size_t j = 0; j < in; ++j) xs[t * in + j] = sc != nullptr ? x[t * in + j] / sc[j] : x[t * in + j];
      return detail::fake_quant_rows(xs.get(), r0, r1, in, o.activations, fx, xs.get());
    };
    const auto w_rows = [&](std::size_t r0, std::size_t r1) -> status {
      for (std::size_t rr = r0; rr < r1; ++rr)
        for (std::size_t j = 0; j < in; ++j) ws[rr * in + j] = sc != nullptr ? w[rr * in + j] * sc[j] : w[rr * in + j];
      return detail::fake_quant_rows(ws.get(), r0, r1, in, o.weights, fw, ws.get());
    };
    const std::size_t x_per = detail::rows_apart(o.activations) ? detail::block_rows(in) : tokens;
    if (status st = detail::for_row_blocks(tokens, x_per, exec, x_rows); !st) return st;
    if (w_apart) {
      if (status st = detail::for_row_blocks(total, detail::block_rows(in), exec, w_rows); !st) return st;
    } else {
      std::size_t row = 0;
      for (const linear_weight& l : layers) {
        if (l.out != 0)
          if (status st = w_rows(row, row + l.out); !st) return st;
        row += l.out;
      }
    }
    if (status st = gemm(xs.get(), in, ws.get(), in, tokens, total, in, nt, yq.get(), total, exec); !st) return st;
    double err = 0.0, energy = 0.0;
    detail::error_energy(y.get(), yq.get(), ny, &err, &energy);
    *rel = detail::relative_of(err, energy);
    return status{};
  };
  if (!(r.status = score(nullptr, &out.error_unsmoothed))) {
    out = smoothquant_search_result{};
    return r;
  }
  std::size_t best = 0;
  for (std::size_t i = 0; i < points; ++i) {
    float a = 0.5f;
    if (o.alphas.size() != 0)
      a = o.alphas[i];
    else if (points > 1)
      a = static_cast<float>(static_cast<double>(i) / static_cast<double>(points - 1));
    out.alphas.values()[i] = a;
    detail::sq_scales(act_max, wmax.get(), in, a, o.inactive, s.get());
    double e = 0.0;
    if (!(r.status = score(s.get(), &e))) {
      out = smoothquant_search_result{};
      return r;
    }
    out.errors.values()[i] = e;
    if (i == 0 || e < out.errors.values()[best]) best = i;
  }
  out.alpha = out.alphas.values()[best];
  out.error = out.errors.values()[best];
  detail::sq_scales(act_max, wmax.get(), in, out.alpha, o.inactive, out.scales.values().data());
  return r;
}

// The search on an accumulator's statistics: act_max = stats.max_abs(), x = its reservoir.
// Errors: smoothquant_search's; an accumulator of another width -> size_mismatch (after the
// options); no token -> empty_input.
[[nodiscard]] inline result<smoothquant_search_result> smoothquant_search(
    const activation_stats& stats, span<const linear_weight> layers, std::size_t in,
    const smoothquant_search_options& o = {}, const linalg_exec& exec = {}) noexcept {
  result<smoothquant_search_result> r;
  if (!(r.status = detail::sq_check_search_options(o))) return r;
  if (stats.features() != in) {
    r.status = errc::size_mismatch;
    return r;
  }
  if (stats.tokens() == 0 || stats.reservoir_rows() == 0) {
    r.status = errc::empty_input;
    return r;
  }
  std::unique_ptr<float[]> amax = detail::allocate_buffer<float>(in);
  if (!amax) {
    r.status = errc::out_of_memory;
    return r;
  }
  if (!(r.status = stats.max_abs(span<float>(amax.get(), in)))) return r;
  return smoothquant_search(stats.reservoir().data(), amax.get(), layers, stats.reservoir_rows(), in, o, exec);
}

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_SMOOTHQUANT_HPP
