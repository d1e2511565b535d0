// lowbit: AWQ (Lin et al., "AWQ: Activation-aware Weight Quantization for LLM Compression and
// Acceleration", MLSys 2024) on the integer schemes' grids, as the reference implementation
// (mit-han-lab/llm-awq, auto_scale.py and auto_clip.py) does it. docs/transforms.md
// has every step and default (section 8).
//
// For the layers that read one input X [tokens, in] (Q, K and V; gate and up), with
// x_mean_j = mean_t |x_tj| (activation_stats::mean_abs):
//
//   1. scale search: for r = 0, 1/grid, ..., (grid-1)/grid (20: 0, 0.05, ..., 0.95):
//        s_j = max(x_mean_j^r, 1e-4);  s = s / sqrt(max(s) * min(s))
//        error(r) = ||X W^T - X (Q(W diag(s)) diag(s)^-1)^T||^2 over every layer's outputs,
//      Q the group quantize-dequantize of p (default int_presets::awq(4, 128)); the best r wins
//      (the first of equal errors). r = 0 is s = 1: round to nearest.
//   2. clip search, per layer, on the scaled weight W diag(s) and the scaled rows X diag(s)^-1
//      subsampled with stride max(1, tokens / clip_tokens): for each output row and group, the
//      max value m = max |w| of the group shrunk to m (1 - i / clip_grid), i = 0 ..
//      floor(max_shrink * clip_grid) - 1 (1.00, 0.95, ..., 0.55), the weights clamped to [-m, m]
//      and quantized; the shrink with the least sum over the sampled tokens of
//      (x_group . (Q(clamp(w)) - w)_group)^2 wins (the first of equal errors). The clamp is
//      symmetric even for an affine grid, as in the reference.
//   3. the result: Q(clamp(W diag(s))) per layer as a quantized_matrix (AWQ checkpoints through
//      export_awq), s to fold into the op before (channel_scaling.hpp: fold_inverse_into_norm,
//      fold_inverse_into_linear, or divide_input_channels at run time), the chosen r and shrinks,
//      and the output errors of round-to-nearest, after the scale search and at the end.
//
// Differences from the reference (docs/transforms.md): the errors are the layers' own outputs
// (the reference inspects a whole block, e.g. self-attention, for Q/K/V); the clip search runs
// on every layer unless `clip` is off (the reference skips q and k). Never throws; buffers are
// allocated with new (std::nothrow) (errc::out_of_memory); products through linalg's gemm.
#ifndef LOWBIT_TRANSFORMS_AWQ_HPP
#define LOWBIT_TRANSFORMS_AWQ_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <utility>

#include "../core/checks.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../kernels/fp_env.hpp"
#include "../linalg/exec.hpp"
#include "../linalg/gemm.hpp"
#include "../schemes/export.hpp"
#include "../schemes/integer.hpp"
#include "../schemes/quantized_matrix.hpp"
#include "activation_stats.hpp"
#include "channel_scaling.hpp"
#include "smoothquant.hpp"

namespace lowbit {

// The reference's clamp of the scale before its normalisation (auto_scale.py: clamp(min=1e-4)).
inline constexpr float awq_min_scale = 1e-4f;

// Defaults are llm-awq's (auto_scale n_grid 20; auto_clip n_grid 20, max_shrink 0.5,
// n_sample_token 512).
struct awq_options {
  std::size_t grid = 20;          // scale exponents r = i / grid, i = 0 .. grid - 1; >= 1
  bool clip = true;               // run the clip search (step 2)
  std::size_t clip_grid = 20;     // shrink step 1 / clip_grid; >= 1
  float max_shrink = 0.5f;        // shrinks 1 - i / clip_grid for i < floor(max_shrink * clip_grid); [0, 1)
  std::size_t clip_tokens = 512;  // rows of the clip search: every max(1, tokens / clip_tokens)-th; >= 1
};

// One layer's result.
struct awq_layer_output {
  quantized_matrix weight;   // [out, in]: Q(clamp(W diag(s))) on p
  tensor<float> clip;        // [out, groups]: the chosen shrink of each group's max (1: none)
  double error_rtn = 0.0;    // this layer's relative output error, round to nearest of W
  double error = 0.0;        // the same for the result
};

// The relative errors are ||Y - Y^||^2 / ||Y||^2 on the calibration rows (0 when both are 0, Inf
// when only Y is), over every layer's outputs unless said otherwise.
struct awq_output {
  tensor<awq_layer_output> layers;  // [1, layer count], in the order given
  tensor<float> scales;             // [1, in]: s; the layers hold W diag(s), the op before must divide by s
  float alpha = 0.0f;               // the chosen exponent r
  tensor<float> alphas;             // [1, grid]
  tensor<double> errors;            // [1, grid]: the scale search's errors (before clipping)
  double error_rtn = 0.0;           // round to nearest of the original weights
  double error_scaled = 0.0;        // after the scale search (the best of errors)
  double error = 0.0;               // after the clip search too: the result
};

namespace detail {

inline status awq_check(const int_params& p, const awq_options& o) noexcept {
  if (o.grid == 0 || o.clip_grid == 0 || o.clip_tokens == 0 || !(o.max_shrink >= 0.0f && o.max_shrink < 1.0f))
    return errc::bad_argument;
  if (status s = check_int_params(p); !s) return s;
  if (p.granularity == granularity::per_tensor || p.group_axis != int_group_axis::cols) return errc::bad_group_size;
  if (p.element_rounding == rounding::stochastic) return errc::bad_argument;
  return status{};
}

// Columns [c0, c0 + n) of a [rows, ld] pair: sums of squared differences and of squares.
inline void block_error(const float* y, const float* yq, std::size_t rows, std::size_t ld, std::size_t c0,
                        std::size_t n, double* err, double* energy) noexcept {
  double e = 0.0, v = 0.0;
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t c = c0; c < c0 + n; ++c) {
      const double a = y[t * ld + c], d = a - static_cast<double>(yq[t * ld + c]);
      e += d * d;
      v += a * a;
    }
  *err = e;
  *energy = v;
}

}  // namespace detail

// AWQ of the layers reading x [tokens, in] (float32 calibration rows; all of them score the
// scale search, a subsample the clip search), with x_mean the per-channel mean |x| (of these
// rows or of a larger stream: activation_stats::mean_abs), on the group grid of p (per_group or
// per_channel along `in`; any scheme and width; AWQ checkpoints need int_presets::awq(4, G)).
// Errors, in order: o out of range (grid, clip_grid or clip_tokens 0, max_shrink outside [0, 1))
// -> bad_argument; check_int_params' errors; per_tensor or groups along rows -> bad_group_size;
// stochastic rounding -> bad_argument; G not dividing in (unless partial_groups) ->
// bad_group_size; a size that overflows -> bad_argument; tokens, in or the layers' total rows 0
// -> empty_input; null -> bad_argument; misaligned; NaN or Inf in x, x_mean or a weight ->
// non_finite_input, a negative x_mean -> bad_argument; a scale p's storage cannot hold ->
// scale_overflow; out_of_memory. On an error the output is empty.
[[nodiscard]] inline result<awq_output> awq_quantize(const float* x, const float* x_mean,
                                                     span<const linear_weight> layers, std::size_t tokens,
                                                     std::size_t in, const int_params& p = int_presets::awq(4, 128),
                                                     const awq_options& o = {},
                                                     const linalg_exec& exec = {}) noexcept {
  result<awq_output> r;
  if (!(r.status = detail::awq_check(p, o))) return r;
  std::size_t total = 0;
  if (!(r.status = detail::layers_shape(layers, in, &total))) return r;
  for (const linear_weight& l : layers) {
    const result<int_grouping> g = int_groups(p, l.out, in);
    if (!(r.status = g.status)) return r;
  }
  std::size_t ny = 0;
  if (!(r.status = detail::checked_shape(tokens, total, sizeof(float), &ny)) ||
      !(r.status = detail::checked_shape(tokens, in, sizeof(float), &ny)))
    return r;
  ny = tokens * total;
  if (tokens == 0 || in == 0 || total == 0) {
    r.status = errc::empty_input;
    return r;
  }
  if (!(r.status = detail::check_buffers({detail::buffer_of(x, tokens * in), detail::buffer_of(x_mean, in)}, {})) ||
      !(r.status = detail::layers_buffers(layers, in)))
    return r;
  for (std::size_t i = 0; i < tokens * in; ++i)
    if (!std::isfinite(x[i])) {
      r.status = errc::non_finite_input;
      return r;
    }
  if (!(r.status = detail::sq_check_maxima(x_mean, in)) || !(r.status = detail::layers_finite(layers, in))) return r;

  const kernels::ieee_scope env;
  const std::size_t nw = total * in, G = p.granularity == granularity::per_group ? p.group_size : in;
  const std::size_t groups = (in + G - 1) / G;
  std::size_t wgroups = 0, max_out = 0;
  for (const linear_weight& l : layers) {
    wgroups += detail::group_count_of(p, l.out, in);
    if (l.out > max_out) max_out = l.out;
  }
  const std::size_t stride = tokens / o.clip_tokens > 1 ? tokens / o.clip_tokens : 1;
  const std::size_t ns = (tokens + stride - 1) / stride;
  std::unique_ptr<float[]> w = detail::allocate_buffer<float>(nw);   // the layers, concatenated
  std::unique_ptr<float[]> wq = detail::allocate_buffer<float>(nw);  // a candidate, dequantized / s
  std::unique_ptr<float[]> y = detail::allocate_buffer<float>(ny);
  std::unique_ptr<float[]> yq = detail::allocate_buffer<float>(ny);
  std::unique_ptr<float[]> s = detail::allocate_buffer<float>(in);
  std::unique_ptr<float[]> sbest = detail::allocate_buffer<float>(in);
  detail::fake_quant_work fw;
  awq_output& out = r.value;
  const auto fail = [&](status st) {
    r.status = st;
    out = awq_output{};
    return std::move(r);
  };
  if (!w || !wq || !y || !yq || !s || !sbest || !fw.allocate(nw, wgroups) ||
      !out.layers.allocate(1, layers.size()).ok() || !out.scales.allocate(1, in).ok() ||
      !out.alphas.allocate(1, o.grid).ok() || !out.errors.allocate(1, o.grid).ok())
    return fail(errc::out_of_memory);
  {
    std::size_t row = 0;
    for (const linear_weight& l : layers) {
      for (std::size_t i = 0; i < l.out * in; ++i) w[row * in + i] = l.w[i];
      row += l.out;
    }
  }
  gemm_options nt;
  nt.op_b = matrix_op::transpose;
  if (status st = gemm(x, in, w.get(), in, tokens, total, in, nt, y.get(), total, exec); !st) return fail(st);

  // Q(W diag(s)) diag(s)^-1 of every layer into wq, then X wq^T into yq. p quantizes rows apart
  // (awq_check), so the layers' rows go a block at a time, each block's three passes in cache.
  const auto evaluate = [&](const float* sc) -> status {
    const auto rows = [&](std::size_t r0, std::size_t r1) -> status {
      for (std::size_t rr = r0; rr < r1; ++rr)
        for (std::size_t j = 0; j < in; ++j) wq[rr * in + j] = w[rr * in + j] * sc[j];
      if (status st = detail::fake_quant_rows(wq.get(), r0, r1, in, p, fw, wq.get()); !st) return st;
      for (std::size_t rr = r0; rr < r1; ++rr)
        for (std::size_t j = 0; j < in; ++j) wq[rr * in + j] /= sc[j];
      return status{};
    };
    if (status st = detail::for_row_blocks(total, detail::block_rows(in), exec, rows); !st) return st;
    return gemm(x, in, wq.get(), in, tokens, total, in, nt, yq.get(), total, exec);
  };
  const auto total_error = [&]() {
    double e = 0.0, v = 0.0;
    detail::error_energy(y.get(), yq.get(), ny, &e, &v);
    return detail::relative_of(e, v);
  };
  const auto layer_errors = [&](bool final_result) {
    std::size_t row = 0;
    for (std::size_t li = 0; li < layers.size(); ++li) {
      double e = 0.0, v = 0.0;
      detail::block_error(y.get(), yq.get(), tokens, total, row, layers[li].out, &e, &v);
      (final_result ? out.layers.values()[li].error : out.layers.values()[li].error_rtn) = detail::relative_of(e, v);
      row += layers[li].out;
    }
  };

  // 1. the scale search; r = 0 gives s = 1 exactly (x^0 = 1, normalised by sqrt(1 * 1)): round to
  // nearest, whose errors are error_rtn
  std::size_t best = 0;
  for (std::size_t i = 0; i < o.grid; ++i) {
    const double ratio = static_cast<double>(i) / static_cast<double>(o.grid);
    double smax = 0.0, smin = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < in; ++j) {
      double v = std::pow(static_cast<double>(x_mean[j]), ratio);
      if (v < awq_min_scale) v = awq_min_scale;
      s[j] = static_cast<float>(v);
      smax = v > smax ? v : smax;
      smin = v < smin ? v : smin;
    }
    const double norm = std::sqrt(smax * smin);
    for (std::size_t j = 0; j < in; ++j) s[j] = static_cast<float>(static_cast<double>(s[j]) / norm);
    if (status st = evaluate(s.get()); !st) return fail(st);
    const double e = total_error();
    if (i == 0) {
      out.error_rtn = e;
      layer_errors(false);
    }
    out.alphas.values()[i] = static_cast<float>(ratio);
    out.errors.values()[i] = e;
    if (i == 0 || e < out.errors.values()[best]) {
      best = i;
      for (std::size_t j = 0; j < in; ++j) sbest[j] = s[j];
    }
  }
  out.alpha = out.alphas.values()[best];
  out.error_scaled = out.errors.values()[best];
  for (std::size_t j = 0; j < in; ++j) out.scales.values()[j] = sbest[j];

  // 2. the clip search on W diag(s) (into w, which now holds the scaled, clipped weights)
  for (std::size_t rr = 0; rr < total; ++rr)
    for (std::size_t j = 0; j < in; ++j) w[rr * in + j] *= sbest[j];
  const std::size_t candidates = static_cast<std::size_t>(o.max_shrink * static_cast<float>(o.clip_grid));
  for (std::size_t li = 0; li < layers.size(); ++li) {
    awq_layer_output& lay = out.layers.values()[li];
    if (!lay.clip.allocate(layers[li].out, groups).ok()) return fail(errc::out_of_memory);
    for (float& c : lay.clip.values()) c = 1.0f;
  }
  if (o.clip && candidates > 1) {
    std::unique_ptr<float[]> xs = detail::allocate_buffer<float>(ns * in);   // sampled rows / s
    std::unique_ptr<float[]> amax = detail::allocate_buffer<float>(max_out * groups);
    std::unique_ptr<double[]> best_err = detail::allocate_buffer<double>(max_out * groups);
    std::unique_ptr<float[]> d = detail::allocate_buffer<float>(max_out * in);  // Q(clamp) - w
    std::unique_ptr<float[]> e = detail::allocate_buffer<float>(ns * max_out);
    std::unique_ptr<double[]> acc = detail::allocate_buffer<double>(max_out);
    if (!xs || !amax || !best_err || !d || !e || !acc) return fail(errc::out_of_memory);
    for (std::size_t t = 0; t < ns; ++t)
      for (std::size_t j = 0; j < in; ++j) xs[t * in + j] = x[t * stride * in + j] / sbest[j];
    std::size_t row = 0;
    for (std::size_t li = 0; li < layers.size(); ++li) {
      const std::size_t lo = layers[li].out;
      float* lw = w.get() + row * in;
      float* clip = out.layers.values()[li].clip.values().data();
      for (std::size_t rr = 0; rr < lo; ++rr)
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t c0 = g * G, len = in - c0 < G ? in - c0 : G;
          float m = 0.0f;
          for (std::size_t j = c0; j < c0 + len; ++j) m = std::fabs(lw[rr * in + j]) > m ? std::fabs(lw[rr * in + j]) : m;
          amax[rr * groups + g] = m;
        }
      for (std::size_t c = 0; c < candidates && lo != 0; ++c) {
        const float shrink = static_cast<float>(1.0 - static_cast<double>(c) / static_cast<double>(o.clip_grid));
        // d = Q(clamp(w)) - w, a block of rows at a time
        const auto clamp_rows = [&](std::size_t r0, std::size_t r1) -> status {
          for (std::size_t rr = r0; rr < r1; ++rr)
            for (std::size_t g = 0; g < groups; ++g) {
              const std::size_t c0 = g * G, len = in - c0 < G ? in - c0 : G;
              const float mv = amax[rr * groups + g] * shrink;
              for (std::size_t j = c0; j < c0 + len; ++j) {
                const float v = lw[rr * in + j];
                d[rr * in + j] = v > mv ? mv : (v < -mv ? -mv : v);
              }
            }
          if (status st = detail::fake_quant_rows(d.get(), r0, r1, in, p, fw, d.get()); !st) return st;
          for (std::size_t i = r0 * in; i < r1 * in; ++i) d[i] -= lw[i];
          return status{};
        };
        if (status st = detail::for_row_blocks(lo, detail::block_rows(in), exec, clamp_rows); !st) return fail(st);
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t c0 = g * G, len = in - c0 < G ? in - c0 : G;
          if (status st = gemm(xs.get() + c0, in, d.get() + c0, in, ns, lo, len, nt, e.get(), lo, exec); !st)
            return fail(st);
          // per output row rr, the sum over the tokens (in order) of e[t, rr]^2: the tokens in the
          // outer loop, so that e [ns, lo] is read along its rows (blocks of 1024 rows through exec)
          const auto score_rows = [&](std::size_t r0, std::size_t r1) -> status {
            double* sum = acc.get();
            for (std::size_t rr = r0; rr < r1; ++rr) sum[rr] = 0.0;
            for (std::size_t t = 0; t < ns; ++t) {
              const float* et = e.get() + t * lo;
              for (std::size_t rr = r0; rr < r1; ++rr) sum[rr] += static_cast<double>(et[rr]) * et[rr];
            }
            for (std::size_t rr = r0; rr < r1; ++rr)
              if (c == 0 || sum[rr] < best_err[rr * groups + g]) {
                best_err[rr * groups + g] = sum[rr];
                clip[rr * groups + g] = shrink;
              }
            return status{};
          };
          if (status st = detail::for_row_blocks(lo, 1024, exec, score_rows); !st) return fail(st);
        }
      }
      for (std::size_t rr = 0; rr < lo; ++rr)
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t c0 = g * G, len = in - c0 < G ? in - c0 : G;
          const float mv = amax[rr * groups + g] * clip[rr * groups + g];
          for (std::size_t j = c0; j < c0 + len; ++j) {
            float& v = lw[rr * in + j];
            v = v > mv ? mv : (v < -mv ? -mv : v);
          }
        }
      row += lo;
    }
  }

  // 3. the quantized layers and the final errors
  {
    std::size_t row = 0;
    for (std::size_t li = 0; li < layers.size(); ++li) {
      const std::size_t lo = layers[li].out;
      if (lo != 0) {
        result<quantized_matrix> q = quantized_matrix::quantize(w.get() + row * in, lo, in, p);
        if (!q.ok()) return fail(q.status);
        out.layers.values()[li].weight = std::move(q.value);
        if (status st = out.layers.values()[li].weight.dequantize(span<float>(wq.get() + row * in, lo * in)); !st)
          return fail(st);
      }
      row += lo;
    }
    for (std::size_t rr = 0; rr < total; ++rr)
      for (std::size_t j = 0; j < in; ++j) wq[rr * in + j] /= sbest[j];
    if (status st = gemm(x, in, wq.get(), in, tokens, total, in, nt, yq.get(), total, exec); !st) return fail(st);
    out.error = total_error();
    layer_errors(true);
  }
  return r;
}

// AWQ on an accumulator's statistics: x_mean = stats.mean_abs(), the rows its reservoir.
// Errors: awq_quantize's; an accumulator of another width -> size_mismatch (after the options);
// no token -> empty_input.
[[nodiscard]] inline result<awq_output> awq_quantize(const activation_stats& stats, span<const linear_weight> layers,
                                                     std::size_t in, const int_params& p = int_presets::awq(4, 128),
                                                     const awq_options& o = {},
                                                     const linalg_exec& exec = {}) noexcept {
  result<awq_output> r;
  if (!(r.status = detail::awq_check(p, o))) return r;
  if (stats.features() != in) {
    r.status = errc::size_mismatch;
    return r;
  }
  if (stats.tokens() == 0 || stats.reservoir_rows() == 0) {
    r.status = errc::empty_input;
    return r;
  }
  std::unique_ptr<float[]> mean = detail::allocate_buffer<float>(in);
  if (!mean) {
    r.status = errc::out_of_memory;
    return r;
  }
  if (!(r.status = stats.mean_abs(span<float>(mean.get(), in)))) return r;
  return awq_quantize(stats.reservoir().data(), mean.get(), layers, stats.reservoir_rows(), in, p, o, exec);
}

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_AWQ_HPP
