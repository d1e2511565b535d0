// lowbit: GPTQ (Frantar et al., "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers", 2022) on the CPU, on the integer schemes' grids. docs/transforms.md
// describes every step, default and layout; tests/test_gptq.cpp checks it against the lesson's
// two-weight example and a column-by-column float64 implementation.
//
// Given a weight W [out, in] and the Hessian H [in, in] of the layer's inputs
// (transforms/hessian.hpp: H = (2 / n) sum x^T x), GPTQ quantizes W one input column at a time
// and, after each column, moves the column's rounding error onto the columns not yet quantized
// through H^-1, which minimises ||W X^T - Q X^T||^2 for the calibration inputs X. The order of
// operations is the reference's (IST-DASLab/gptq, GPTQ.fasterquant):
//
//   1. dead input channels (H_ii = 0): H_ii = 1, W[:, i] = 0;
//   2. static groups: each group's parameters from W now (before act-order and error feedback);
//   3. act-order: columns sorted by descending H_ii (stable), H permuted with them;
//   4. dampening: H_ii += percdamp * mean(diag H) (1 % by default);
//   5. V, the upper Cholesky factor of H^-1 (H^-1 = V^T V): its rows drive the sweep (computed
//      from one Cholesky factorisation of H in reversed order and a triangular inverse);
//   6. columns in blocks of block_size (128): for each column j, parameters of a group when its
//      first column is reached (from the error-updated weights), q = Q(w_j), e = (w_j - q) / V_jj,
//      the block's later columns -= e V_j,k; after the block, the columns after it -= E V_block,rest
//      in one multiply (the lazy batch update);
//   7. codes back in the original column order; g_idx[k] = the group of input column k.
//
// When a Cholesky factorisation fails (H not positive definite, or too ill-conditioned for
// float32), the dampening fraction is multiplied by damp_growth (10) and the factorisation retried,
// up to max_retries (4) times; if every try fails, the layer is quantized to nearest on the same
// grid (V = I: no error feedback) and the report says so (fell_back), or, with
// fallback_to_rtn = false, the call returns errc::not_positive_definite.
//
// Never throws; every buffer is allocated with new (std::nothrow) (errc::out_of_memory). The
// O(n^3) work runs through linalg (gemm, cholesky, cholesky_inverse) and the optional linalg_exec.
#ifndef LOWBIT_TRANSFORMS_GPTQ_HPP
#define LOWBIT_TRANSFORMS_GPTQ_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../core/checks.hpp"
#include "../core/memory.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/gptq/avx512.hpp"
#include "../linalg/cholesky.hpp"
#include "../linalg/exec.hpp"
#include "../linalg/gemm.hpp"
#include "../schemes/export.hpp"
#include "../schemes/integer.hpp"
#include "../schemes/layouts/gptq.hpp"
#include "../schemes/quantized_matrix.hpp"
#include "hessian.hpp"

namespace lowbit {

// The largest gptq_options::max_retries.
inline constexpr int gptq_max_retries = 16;

// Defaults are the reference's (IST-DASLab/gptq fasterquant: blocksize 128, percdamp .01,
// actorder False, static_groups False); the retry and the fallback are lowbit's (GPTQModel and
// llm-compressor do the like, docs/transforms.md).
struct gptq_options {
  std::size_t block_size = 128;  // columns per lazy batch update; >= 1
  double percdamp = 0.01;        // dampening: this fraction of mean(diag H) added to the diagonal; finite, >= 0
  bool act_order = false;        // quantize columns by descending diag(H) (AutoGPTQ's desc_act)
  bool static_groups = false;    // per-group parameters from the original W, before the sweep
  int max_retries = 4;           // failed factorisations retried with more dampening; 0..gptq_max_retries
  double damp_growth = 10.0;     // the dampening fraction is multiplied by this on each retry; finite, > 1
  bool fallback_to_rtn = true;   // after the last failed retry: round to nearest (true) or not_positive_definite
  bool report_error = true;      // compute the report's output errors (three multiplies of out x in x in)
};

namespace gptq_presets {
// IST-DASLab/gptq's fasterquant defaults (what gptq_options{} is).
inline gptq_options reference() noexcept { return gptq_options{}; }
// AutoGPTQ's BaseQuantizeConfig defaults: desc_act = True (act-order), damp_percent 0.01.
inline gptq_options autogptq() noexcept {
  gptq_options o;
  o.act_order = true;
  return o;
}
// llm-compressor's GPTQModifier default actorder="static": act-order with parameters fetched once
// from the original weights (static groups).
inline gptq_options llm_compressor() noexcept {
  gptq_options o;
  o.act_order = true;
  o.static_groups = true;
  return o;
}
}  // namespace gptq_presets

// What happened to the layer. The output errors are relative to the undamped H given:
// ||W X^T - Q X^T||^2 / ||W X^T||^2 = tr((W - Q) H (W - Q)^T) / tr(W H W^T), computed from H
// without X (NaN when report_error is off).
struct gptq_report {
  double damp = 0.0;            // the value added to H's diagonal (percdamp * growth^retries * mean diag)
  double damp_fraction = 0.0;   // that value over mean(diag H)
  int retries = 0;              // failed factorisations before the one used (or before the fallback)
  bool fell_back = false;       // every factorisation failed: round to nearest, no error feedback
  std::size_t dead_columns = 0; // input channels with H_ii = 0 (their weights quantized as 0)
  double loss = 0.0;            // GPTQ's own estimate, sum over columns of (w - q)^2 / V_jj^2 / 2 (the
                                // reference's Losses), for the damped H
  double output_energy = std::numeric_limits<double>::quiet_NaN();     // tr(W H W^T)
  double output_error_rtn = std::numeric_limits<double>::quiet_NaN();  // tr(D H D^T), D = W - RTN(W)
  double output_error = std::numeric_limits<double>::quiet_NaN();      // tr(D H D^T), D = W - Q
  double relative_error_rtn = std::numeric_limits<double>::quiet_NaN();  // over output_energy
  double relative_error = std::numeric_limits<double>::quiet_NaN();      // over output_energy
};

// GPTQ's result: codes one per byte in the original column order, as quantize_int writes them
// ([out, in] row-major), one scale (and, for the affine schemes, one zero-point or offset) per
// row and group, [out, groups], and g_idx [1, in]: the group of each input column. Without
// act-order (or with static groups), group g holds columns g*G .. g*G + G - 1 and
// g_idx[k] = k / G, which is the layout of a quantized_matrix (to_matrix()); with act-order,
// group g holds the columns quantized g*G-th to (g+1)*G-1-th, g_idx[k] = (position of k in
// the order) / G, as AutoGPTQ's desc_act checkpoints store it.
struct gptq_output {
  std::size_t rows = 0;
  std::size_t cols = 0;
  int_params params{};
  std::size_t group_length = 0; // G (cols for per_channel / per_token)
  tensor<std::uint8_t> codes;   // [rows, cols]
  tensor<float> scales;         // [rows, groups]
  tensor<float> zeros;          // [rows, groups] (affine and affine_offset); empty for symmetric
  tensor<std::int32_t> g_idx;   // [1, cols]
  gptq_report report;

  std::size_t groups() const noexcept { return scales.cols(); }

  // Whether g_idx[k] == k / G for every k (no act-order gather needed).
  bool trivial_g_idx() const noexcept {
    const span<const std::int32_t> gi = g_idx.values();
    for (std::size_t k = 0; k < gi.size(); ++k)
      if (static_cast<std::size_t>(gi[k]) != k / group_length) return false;
    return true;
  }

  // The codes as a quantized_matrix (packed, with the scales and zero-points). Errors: a g_idx
  // that is not trivial (act-order without static groups) -> bad_argument; an empty output ->
  // bad_argument; out_of_memory.
  [[nodiscard]] result<quantized_matrix> to_matrix() const noexcept {
    result<quantized_matrix> r;
    if (rows == 0 || cols == 0 || !trivial_g_idx()) {
      r.status = errc::bad_argument;
      return r;
    }
    return quantized_matrix::from_codes(codes.values(), scales.values(), zeros.values(), rows, cols, params);
  }
};

namespace detail {

// The group layout along `in`: G columns per group (the whole row for per_channel / per_token),
// the last group shorter under partial_groups.
struct gptq_groups {
  std::size_t length = 0;
  std::size_t count = 0;
};

// Options and shape checks of every GPTQ call, docs/api.md's order.
inline status gptq_check(std::size_t rows, std::size_t cols, const int_params& p, const gptq_options& o,
                         gptq_groups* g) noexcept {
  if (status s = check_int_params(p); !s) return s;
  if (p.granularity == granularity::per_tensor || p.group_axis != int_group_axis::cols) return errc::bad_group_size;
  if (p.element_rounding == rounding::stochastic || p.code_storage != int_code_storage::offset_binary)
    return errc::bad_argument;
  if (o.block_size == 0) return errc::bad_block_size;
  if (!(std::isfinite(o.percdamp) && o.percdamp >= 0.0) || o.max_retries < 0 || o.max_retries > gptq_max_retries ||
      !(std::isfinite(o.damp_growth) && o.damp_growth > 1.0))
    return errc::bad_argument;
  const result<int_grouping> ig = int_groups(p, rows, cols);
  if (!ig.ok()) return ig.status;
  std::size_t hh = 0;
  if (status s = checked_shape(cols, cols, sizeof(double), &hh); !s) return s;
  if (rows != 0 && cols != 0) {
    g->length = p.granularity == granularity::per_group ? p.group_size : cols;
    g->count = (cols + g->length - 1) / g->length;
  }
  return status{};
}

// The stored scale and zero of a codec (the zero_group_scale placeholder for a zero scale).
inline void gptq_store_params(const int_group_codec& c, const int_params& p, float* scale, float* zero) noexcept {
  *scale = c.scale == 0.0f && p.zero_group_scale != 0.0f ? p.zero_group_scale : c.scale;
  if (zero != nullptr) *zero = c.has_offset ? c.offset : static_cast<float>(c.zero_point);
}

// tr(A H A^T) for the three [rows, cols] matrices W, W - Qg, W - Qr, with H full [cols, cols]:
// rows in chunks through one multiply each. traces[3].
inline status gptq_traces(const float* w, const float* qg, const float* qr, const float* h, std::size_t rows,
                          std::size_t cols, const linalg_exec& exec, double* traces) noexcept {
  constexpr std::size_t chunk = 64;
  const std::size_t cr = rows < chunk ? rows : chunk;
  const std::size_t parts = qr != nullptr ? 3 : 2;
  std::unique_ptr<float[]> m = allocate_buffer<float>(parts * cr * cols);
  std::unique_ptr<float[]> prod = allocate_buffer<float>(parts * cr * cols);
  if (!m || !prod) return errc::out_of_memory;
  for (std::size_t t = 0; t < 3; ++t) traces[t] = 0.0;
  for (std::size_t r0 = 0; r0 < rows; r0 += cr) {
    const std::size_t nr = rows - r0 < cr ? rows - r0 : cr;
    for (std::size_t i = 0; i < nr * cols; ++i) {
      const std::size_t e = r0 * cols + i;
      m[i] = w[e];
      m[nr * cols + i] = w[e] - qg[e];
      if (qr != nullptr) m[2 * nr * cols + i] = w[e] - qr[e];
    }
    if (status s = gemm(m.get(), cols, h, cols, parts * nr, cols, cols, {}, prod.get(), cols, exec); !s) return s;
    for (std::size_t t = 0; t < parts; ++t) {
      double acc = 0.0;
      for (std::size_t i = 0; i < nr * cols; ++i)
        acc += static_cast<double>(m[t * nr * cols + i]) * static_cast<double>(prod[t * nr * cols + i]);
      traces[t] += acc;
    }
  }
  if (qr == nullptr) traces[2] = std::numeric_limits<double>::quiet_NaN();
  return status{};
}

// V = J R^-T J in place from R^-1 (upper, n x n, ld n): V(nn - c, nn - i) = R^-1(i, c) for i <= c,
// nn = n - 1, the upper triangle reflected about its anti-diagonal (the pairs with i + c < nn
// swap, the anti-diagonal stays). In 64 x 64 tiles; a tile whose partner region lies apart from
// it goes through a buffer, so that every access to the matrix runs along a row (the partner
// of a row of the tile is a column: a page per element).
inline void gptq_reflect_upper(float* a, std::size_t n) noexcept {
  const std::size_t nn = n - 1;
  constexpr std::size_t tile = 64;
  alignas(64) float buf[tile * tile];  // buf[b][e]: the partner of (i0 + b, c0 + e)
  for (std::size_t i0 = 0; i0 < n; i0 += tile)
    for (std::size_t c0 = i0; c0 + i0 < nn; c0 += tile) {
      const std::size_t ti = n - i0 < tile ? n - i0 : tile, tc = n - c0 < tile ? n - c0 : tile;
      if (i0 + ti + c0 + tc - 2 < nn) {  // every i + c < nn: the partner rows lie below the tile's
        for (std::size_t e = 0; e < tc; ++e) {
          const float* prow = a + (nn - c0 - e) * n + (nn - i0);  // (nn - c, nn - i) at prow - b
          for (std::size_t b = 0; b < ti; ++b) buf[b * tile + e] = *(prow - b);
        }
        for (std::size_t b = 0; b < ti; ++b) {
          const std::size_t i = i0 + b, e0 = c0 > i ? 0 : i - c0;  // i <= c
          for (std::size_t e = e0; e < tc; ++e) std::swap(a[i * n + c0 + e], buf[b * tile + e]);
        }
        for (std::size_t e = 0; e < tc; ++e) {  // back, unswapped values too (unchanged)
          float* prow = a + (nn - c0 - e) * n + (nn - i0);
          for (std::size_t b = 0; b < ti; ++b) *(prow - b) = buf[b * tile + e];
        }
        continue;
      }
      for (std::size_t i = i0; i < i0 + ti; ++i) {  // near the anti-diagonal: pair by pair
        float* pair = a + nn * n + nn - i;  // (nn - c, nn - i) at pair - c * n
        for (std::size_t c = c0 > i ? c0 : i; c < c0 + tc && i + c < nn; ++c) std::swap(a[i * n + c], *(pair - c * n));
      }
    }
}

// The upper triangle of Ĥ = J P^T H P J into hw (n x n, ld n) from H's upper triangle alone:
// Ĥ(i, j) = S(q_i, q_j), q_i = perm[n - 1 - i], S = H with its lower triangle taken from the
// upper. slot[s] is the i with q_i = s. The rows of S are assembled 32 at a time in `strip`
// (gptq_strip_rows x (n + 16)): left of the diagonal a row of S is a column of H, read as one
// 128-byte run of each row of H above (prefetched 16 rows ahead); from the diagonal on it is a
// row of H. Each strip row is then gathered into the row of Ĥ it becomes. H is read once, in
// order. The strip's rows are n + 16 floats apart: n alone, a multiple of 1024 (4 KiB), would
// put all 32 in one L1 set. 4096 columns, a random order, Zen 4: 17-23 ms, against 80-85 ms for the
// element-wise gather this replaces (a column of H, a page, per element).
constexpr std::size_t gptq_strip_rows = 32;
inline std::size_t gptq_strip_ld(std::size_t n) noexcept { return n + 16; }

inline void gptq_prefetch(const void* p) noexcept {
#if defined(__GNUC__)
  __builtin_prefetch(p);
#else
  (void)p;  // a hint only
#endif
}

inline void gptq_permuted_upper(const float* h, std::size_t n, const std::size_t* perm, const std::size_t* slot,
                                float* strip, float* hw) noexcept {
  constexpr std::size_t rows = gptq_strip_rows, ahead = 16;
  const std::size_t nn = n - 1, ld = gptq_strip_ld(n);
  for (std::size_t s0 = 0; s0 < n; s0 += rows) {
    const std::size_t m = n - s0 < rows ? n - s0 : rows;
    for (std::size_t c = 0; c < s0; ++c) {
      const float* hr = h + c * n + s0;
      if (c + ahead < s0) gptq_prefetch(hr + ahead * n);
      for (std::size_t k = 0; k < m; ++k) strip[k * ld + c] = hr[k];
    }
    for (std::size_t k = 0; k < m; ++k) {
      const std::size_t s = s0 + k;
      float* t = strip + k * ld;
      for (std::size_t c = s0; c < s; ++c) t[c] = h[c * n + s];
      std::copy(h + s * n + s, h + s * n + n, t + s);
      const std::size_t i = slot[s];
      float* out = hw + i * n;
      for (std::size_t j = i; j < n; ++j) out[j] = t[perm[nn - j]];
    }
  }
}

// The GPTQ sweep and everything around it. w, h checked (shapes, buffers); fixed_scales /
// fixed_zeros: a given grid [rows, groups] in the original group order (static), or null.
inline result<gptq_output> gptq_run(const float* w, const float* h, const float* fixed_scales,
                                    const float* fixed_zeros, std::size_t rows, std::size_t cols,
                                    const int_params& p, const gptq_options& o, const gptq_groups& grp,
                                    const linalg_exec& exec) noexcept {
  result<gptq_output> r;
  gptq_output& out = r.value;
  const kernels::ieee_scope env;
  const kernels::int_kernels& k = kernels::active_int_kernels();
  const std::size_t n = rows * cols;
  const std::size_t G = grp.length, groups = grp.count;
  const bool fixed = fixed_scales != nullptr;
  const bool static_params = fixed || o.static_groups;
  const bool zeros_stored = has_zero_points(p);

  // data checks first: nothing allocated yet (range is false on a NaN or an Inf)
  float lo_w = 0.0f, hi_w = 0.0f;
  bool finite = k.range(w, n, &lo_w, &hi_w);
  for (std::size_t i = 0; finite && i < cols; ++i) finite = k.range(h + i * cols + i, cols - i, &lo_w, &hi_w);
  if (!finite) {
    r.status = errc::non_finite_input;
    return r;
  }

  std::unique_ptr<float[]> wk = allocate_buffer<float>(n);             // working W, permuted columns
  std::unique_ptr<float[]> hw = allocate_buffer<float>(cols * cols);   // permuted damped H, its factor, then V
  std::unique_ptr<std::size_t[]> perm = allocate_buffer<std::size_t>(cols);
  std::unique_ptr<std::size_t[]> slot = allocate_buffer<std::size_t>(cols);  // perm's inverse, reversed
  std::unique_ptr<float[]> strip = allocate_buffer<float>(gptq_strip_rows * gptq_strip_ld(cols));  // gptq_permuted_upper's
  std::unique_ptr<int_group_codec[]> codecs = allocate_buffer<int_group_codec>(rows * groups);
  const std::size_t bs = o.block_size < cols ? o.block_size : cols;
  std::unique_ptr<float[]> err = allocate_buffer<float>(rows * bs);  // a block's errors, [column][row]
  std::unique_ptr<double[]> row_loss = allocate_buffer<double>(rows);
  std::unique_ptr<std::uint8_t[]> row_status = allocate_buffer<std::uint8_t>(rows);
  std::unique_ptr<float[]> qv = o.report_error ? allocate_buffer<float>(n) : nullptr;
  if (!wk || !hw || !perm || !slot || !strip || !codecs || !err || !row_loss || !row_status || (o.report_error && !qv) ||
      !(r.status = out.codes.allocate(rows, cols)) || !(r.status = out.scales.allocate(rows, groups)) ||
      !(r.status = out.g_idx.allocate(1, cols)) ||
      (zeros_stored && !(r.status = out.zeros.allocate(rows, groups)))) {
    r.status = errc::out_of_memory;
    out = gptq_output{};
    return r;
  }

  // 1. dead input channels; the diagonal with H_ii = 1 for them
  std::unique_ptr<double[]> diag = allocate_buffer<double>(cols);
  std::unique_ptr<std::uint8_t[]> dead_cols = allocate_buffer<std::uint8_t>(cols);
  if (!diag || !dead_cols) {
    r.status = errc::out_of_memory;
    out = gptq_output{};
    return r;
  }
  gptq_report& rep = out.report;
  double diag_sum = 0.0;
  for (std::size_t i = 0; i < cols; ++i) {
    diag[i] = h[i * cols + i];
    dead_cols[i] = diag[i] == 0.0 ? 1 : 0;
    if (diag[i] == 0.0) {
      diag[i] = 1.0;
      ++rep.dead_columns;
    }
    diag_sum += std::fabs(diag[i]);
  }
  // (a mask rather than H's diagonal: that lies a row of H apart per column, a page per read)
  const auto dead = [&](std::size_t c) { return dead_cols[c] != 0; };

  // 2. static groups (or the given grid): parameters from W (dead columns zeroed) by original group
  if (static_params) {
    std::unique_ptr<float[]> tmp = allocate_buffer<float>(G);
    if (!tmp) {
      r.status = errc::out_of_memory;
      out = gptq_output{};
      return r;
    }
    for (std::size_t row = 0; row < rows; ++row)
      for (std::size_t g = 0; g < groups; ++g) {
        result<int_group_codec> c;
        if (fixed) {
          c = stored_int_codec(fixed_scales[row * groups + g], zeros_stored ? fixed_zeros[row * groups + g] : 0.0f, p);
        } else {
          const std::size_t c0 = g * G, len = cols - c0 < G ? cols - c0 : G;
          for (std::size_t j = 0; j < len; ++j) tmp[j] = dead(c0 + j) ? 0.0f : w[row * cols + c0 + j];
          float lo = 0.0f, hi = 0.0f;
          (void)k.range(tmp.get(), len, &lo, &hi);  // finite: W was checked
          c = choose_codec(tmp.get(), len, lo, hi, p, nullptr, k);
        }
        if (!c.ok()) {
          r.status = c.status;
          out = gptq_output{};
          return r;
        }
        codecs[row * groups + g] = c.value;
      }
  }

  // 3. act-order: columns by descending diag(H) (dead ones counted as 1), stable
  for (std::size_t i = 0; i < cols; ++i) perm[i] = i;
  if (o.act_order)
    std::stable_sort(perm.get(), perm.get() + cols, [&](std::size_t a, std::size_t b) { return diag[a] > diag[b]; });
  const bool in_order = !o.act_order;  // perm is the identity
  for (std::size_t i = 0; i < cols; ++i) slot[perm[i]] = cols - 1 - i;
  if (in_order && rep.dead_columns == 0) {
    std::copy(w, w + n, wk.get());
  } else {
    for (std::size_t row = 0; row < rows; ++row) {  // a gather within the row, dead columns after
      const float* wr = w + row * cols;
      float* wkr = wk.get() + row * cols;
      for (std::size_t j = 0; j < cols; ++j) wkr[j] = wr[perm[j]];
      if (rep.dead_columns != 0)
        for (std::size_t j = 0; j < cols; ++j)
          if (dead(perm[j])) wkr[j] = 0.0f;
    }
  }

  // 4-5. dampening, H = U^T U, H^-1, H^-1 = V^T V; retried with more dampening on failure
  const double mean_diag = diag_sum > 0.0 ? diag_sum / static_cast<double>(cols) : 1.0;
  bool factored = false;
  double fraction = o.percdamp;
  for (int attempt = 0; attempt <= o.max_retries; ++attempt, fraction *= o.damp_growth) {
    rep.retries = attempt;
    rep.damp_fraction = fraction;
    rep.damp = fraction * mean_diag;
    // Ĥ = J H J (J reverses the order), upper: Ĥ = R^T R. Then H = J R^T R J and
    // H^-1 = (J R^-1 J)(J R^-T J): V = J R^-T J is the upper Cholesky factor of H^-1 (the one the
    // reference gets from cholesky(cholesky_inverse(cholesky(H)), upper)), at n^3 / 3 + n^3 / 3
    // multiply flops instead of 2 n^3, and one factorisation that can fail instead of two.
    const std::size_t nn = cols - 1;
    auto reversed_copy = [&](auto kernel) -> status {
#if LOWBIT_HAS_AVX512_LINALG
      if constexpr (std::is_same<decltype(kernel), kernels::linalg::avx512_kernel>::value) {
        if (in_order) {  // 16 x 16 tiles through registers
          gptq_reversed_upper(h, cols, hw.get());
          return status{};
        }
      }
#else
      (void)kernel;
#endif
      gptq_permuted_upper(h, cols, perm.get(), slot.get(), strip.get(), hw.get());
      return status{};
    };
    (void)detail::linalg_dispatch(reversed_copy);
    for (std::size_t i = 0; i < cols; ++i) {
      if (dead(perm[nn - i])) hw[i * cols + i] = 1.0f;
      hw[i * cols + i] = static_cast<float>(static_cast<double>(hw[i * cols + i]) + rep.damp);
    }
    status s = cholesky(cols, {}, hw.get(), cols, exec);
    // R^-1 in place (the recursive triangular inverse: its flops in large multiplies), then
    // V = J R^-T J in place: V(nn - c, nn - i) = R^-1(i, c), i <= c, a reflection of the upper
    // triangle about its anti-diagonal, done as swaps of the pairs with i + c < nn, in tiles.
    if (s) s = triangular_inverse(cols, {triangle::upper}, hw.get(), cols, exec);
    if (s) gptq_reflect_upper(hw.get(), cols);
    if (s) {
      factored = true;
      break;
    }
    if (s.code() == errc::out_of_memory) {
      r.status = s;
      out = gptq_output{};
      return r;
    }
  }
  if (!factored) {
    if (!o.fallback_to_rtn) {
      r.status = errc::not_positive_definite;
      out = gptq_output{};
      return r;
    }
    rep.fell_back = true;
    for (std::size_t i = 0; i < cols; ++i)
      for (std::size_t j = i; j < cols; ++j) hw[i * cols + j] = i == j ? 1.0f : 0.0f;
  }
  const float* v = hw.get();  // V, upper

  // 6. the sweep, block by block; rows are independent within a block
  std::uint8_t* codes = out.codes.values().data();
  for (std::size_t row = 0; row < rows; ++row) {
    row_loss[row] = 0.0;
    row_status[row] = 0;
  }
  constexpr std::size_t rows_per_task = 16;
  const std::size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  for (std::size_t i1 = 0; i1 < cols; i1 += bs) {
    const std::size_t i2 = cols - i1 < bs ? cols : i1 + bs;
    // K: the linear-algebra kernel of the active path, for the in-block update of each column
    // (its axpy_neg; the AVX2 and AVX-512 ones fuse the multiply and the subtraction).
    auto sweep = [&](auto kernel) -> status {
      using K = decltype(kernel);
#if LOWBIT_HAS_AVX512_LINALG
      if constexpr (std::is_same<K, kernels::linalg::avx512_kernel>::value) {
        // 16 rows a task, one per lane (gptq_sweep16); the same bits as the loop below
        const std::size_t nb = i2 - i1;
        auto task16 = [&](std::size_t t) {
          const std::size_t r0 = t * rows_per_task, nl = rows - r0 < rows_per_task ? rows - r0 : rows_per_task;
          kernels::linalg::scratch buf = kernels::linalg::allocate(4 * nb * 16);
          if (!buf) {
            for (std::size_t l = 0; l < nl; ++l) row_status[r0 + l] = static_cast<std::uint8_t>(errc::out_of_memory);
            return;
          }
          float* wt = buf.get();
          float* et = wt + nb * 16;
          float* qt = et + nb * 16;
          auto* ut = reinterpret_cast<std::int32_t*>(qt + nb * 16);
          gptq_load16(wk.get() + r0 * cols + i1, cols, nl, nb, wt);
          gptq_lanes lp;
          const int_group_codec idle{1.0f, 0, 0.0f, false, 0, 0, rounding::nearest_even};
          for (std::size_t l = 0; l < 16; ++l) gptq_lane_set(&lp, l, idle);
          std::size_t cur = groups;  // the group the lanes hold (none yet)
          auto refresh = [&](std::size_t j, gptq_lanes* q) -> bool {
            const std::size_t g = static_params ? perm[j] / G : j / G;
            if (!static_params && j % G == 0) {  // a group's first column: parameters from the current weights
              const std::size_t len = cols - j < G ? cols - j : G, jj = j - i1;
              for (std::size_t l = 0; l < nl; ++l) {
                const std::size_t row = r0 + l;
                if (row_status[row] != 0) continue;
                float* wr = wk.get() + row * cols;
                for (std::size_t c = jj; jj != 0 && c < nb; ++c) wr[i1 + c] = wt[c * 16 + l];  // the in-block updates
                float lo = 0.0f, hi = 0.0f;
                if (!k.range(wr + j, len, &lo, &hi)) {
                  row_status[row] = static_cast<std::uint8_t>(errc::non_finite_input);
                  gptq_lane_set(q, l, idle);
                  continue;
                }
                const result<int_group_codec> cc = choose_codec(wr + j, len, lo, hi, p, nullptr, k);
                if (!cc.ok()) {
                  row_status[row] = static_cast<std::uint8_t>(cc.status.code());
                  gptq_lane_set(q, l, idle);
                  continue;
                }
                codecs[row * groups + g] = cc.value;
                gptq_lane_set(q, l, cc.value);
              }
              cur = g;
              return true;
            }
            if (g == cur) return false;
            for (std::size_t l = 0; l < nl; ++l) gptq_lane_set(q, l, codecs[(r0 + l) * groups + g]);
            cur = g;
            return true;
          };
          double loss[16] = {};
          const std::size_t r_next = r0 + rows_per_task;
          gptq_sweep16(wt, i1, nb, v, cols, p.element_rounding, &lp, refresh, et, ut, qt, loss,
                       r_next < rows ? wk.get() + r_next * cols + i1 : nullptr, cols,
                       r_next < rows ? rows - r_next : 0);
          for (std::size_t jj = 0; jj < nb; ++jj)  // the errors, [column][row]
            std::copy(et + jj * 16, et + jj * 16 + nl, err.get() + jj * rows + r0);
          // lanes back to rows: the codes (and values) in the sweep's column order (a failed
          // row's are written too: the call then returns its error)
          gptq_rows16(ut, nb, nl, codes + r0 * cols + i1, cols);
          if (qv) gptq_rows16(qt, nb, nl, qv.get() + r0 * cols + i1, cols);
          for (std::size_t l = 0; l < nl; ++l)
            if (row_status[r0 + l] == 0) row_loss[r0 + l] += loss[l];
        };
        detail::linalg_parallel_for(exec, tasks, task16);
        return status{};
      }
#endif
      auto task = [&](std::size_t t) {
        const std::size_t r0 = t * rows_per_task, r1 = rows - r0 < rows_per_task ? rows : r0 + rows_per_task;
        for (std::size_t row = r0; row < r1; ++row) {
          if (row_status[row] != 0) continue;
          float* wr = wk.get() + row * cols;
          float* er = err.get() + row;  // [column][row]
          double loss = 0.0;
          for (std::size_t j = i1; j < i2; ++j) {
            const std::size_t g = static_params ? perm[j] / G : j / G;
            int_group_codec& c = codecs[row * groups + g];
            if (!static_params && j % G == 0) {  // a group's first column: parameters from the current weights
              const std::size_t len = cols - j < G ? cols - j : G;
              float lo = 0.0f, hi = 0.0f;
              if (!k.range(wr + j, len, &lo, &hi)) {
                row_status[row] = static_cast<std::uint8_t>(errc::non_finite_input);
                break;
              }
              const result<int_group_codec> cc = choose_codec(wr + j, len, lo, hi, p, nullptr, k);
              if (!cc.ok()) {
                row_status[row] = static_cast<std::uint8_t>(cc.status.code());
                break;
              }
              c = cc.value;
            }
            const float x = wr[j];
            const std::uint8_t u = kernels::int_ref::quantize_one(x, c, 0u);
            const float q = kernels::int_ref::dequantize_one(u, c);
            codes[row * cols + j] = u;  // in the sweep's column order
            if (qv) qv[row * cols + j] = q;
            const float d = v[j * cols + j];
            const float e = (x - q) / d;
            loss += static_cast<double>(e) * static_cast<double>(e);
            er[(j - i1) * rows] = e;
            K::axpy_neg(i2 - j - 1, e, v + j * cols + j + 1, wr + j + 1);
          }
          row_loss[row] += loss;
        }
      };
      detail::linalg_parallel_for(exec, tasks, task);
      return status{};
    };
    (void)detail::linalg_dispatch(sweep);
    for (std::size_t row = 0; row < rows; ++row)
      if (row_status[row] != 0) {
        r.status = static_cast<errc>(row_status[row]);
        out = gptq_output{};
        return r;
      }
    if (i2 < cols && !rep.fell_back) {
      gemm_options go;
      go.op_a = matrix_op::transpose;  // E is stored [column][row]
      go.alpha = -1.0f;
      go.beta = 1.0f;
      if (status s = gemm(err.get(), rows, v + i1 * cols + i2, cols, rows, cols - i2, i2 - i1, go, wk.get() + i2, cols,
                          exec);
          !s) {
        r.status = s;
        out = gptq_output{};
        return r;
      }
    }
  }
  for (std::size_t row = 0; row < rows; ++row) rep.loss += row_loss[row];
  rep.loss *= 0.5;

  // 7. codes (and values) back in the original column order, a row at a time through a copy
  // (scattering each block's codes across whole rows missed a cache line per code)
  if (!in_order) {
    std::unique_ptr<float[]> row_copy = allocate_buffer<float>(cols);
    if (!row_copy) {
      r.status = errc::out_of_memory;
      out = gptq_output{};
      return r;
    }
    auto* row_codes = reinterpret_cast<std::uint8_t*>(row_copy.get());
    for (std::size_t row = 0; row < rows; ++row) {
      std::uint8_t* cr = codes + row * cols;
      std::copy(cr, cr + cols, row_codes);
      for (std::size_t j = 0; j < cols; ++j) cr[perm[j]] = row_codes[j];
      if (qv) {
        float* qr = qv.get() + row * cols;
        std::copy(qr, qr + cols, row_copy.get());
        for (std::size_t j = 0; j < cols; ++j) qr[perm[j]] = row_copy[j];
      }
    }
  }

  // parameters and g_idx in the output layout
  float* zs = zeros_stored ? out.zeros.values().data() : nullptr;
  for (std::size_t row = 0; row < rows; ++row)
    for (std::size_t g = 0; g < groups; ++g)
      gptq_store_params(codecs[row * groups + g], p, out.scales.values().data() + row * groups + g,
                        zs != nullptr ? zs + row * groups + g : nullptr);
  std::int32_t* gi = out.g_idx.values().data();
  for (std::size_t j = 0; j < cols; ++j) {
    const std::size_t c = perm[j];
    gi[c] = static_cast<std::int32_t>(static_params ? c / G : j / G);
  }
  out.rows = rows;
  out.cols = cols;
  out.params = p;
  out.group_length = G;

  // the report's output errors, against the undamped H
  if (o.report_error) {
    // H in full (hw, V before, is free now), RTN of the original W on the same grid
    for (std::size_t i = 0; i < cols; ++i)
      for (std::size_t j = i; j < cols; ++j) hw[i * cols + j] = hw[j * cols + i] = h[i * cols + j];
    std::unique_ptr<float[]> qr = allocate_buffer<float>(n);
    std::unique_ptr<std::uint8_t[]> rc = allocate_buffer<std::uint8_t>(n);
    std::unique_ptr<float[]> rs = allocate_buffer<float>(rows * groups);
    std::unique_ptr<float[]> rz = allocate_buffer<float>(rows * groups);
    if (!qr || !rc || !rs || !rz) {
      r.status = errc::out_of_memory;
      out = gptq_output{};
      return r;
    }
    bool rtn = false;
    if (fixed) {
      rtn = quantize_int_fixed(w, fixed_scales, zeros_stored ? fixed_zeros : nullptr, rows, cols, p, rc.get()).ok() &&
            dequantize_int(rc.get(), fixed_scales, zeros_stored ? fixed_zeros : nullptr, rows, cols, p, qr.get()).ok();
    } else {
      rtn = quantize_int(w, rows, cols, p, rc.get(), rs.get(), rz.get()).ok() &&
            dequantize_int(rc.get(), rs.get(), rz.get(), rows, cols, p, qr.get()).ok();
    }
    double tr[3] = {0.0, 0.0, 0.0};
    if (status s = gptq_traces(w, qv.get(), rtn ? qr.get() : nullptr, hw.get(), rows, cols, exec, tr); !s) {
      r.status = s;
      out = gptq_output{};
      return r;
    }
    rep.output_energy = tr[0];
    rep.output_error = tr[1];
    rep.output_error_rtn = tr[2];
    const auto relative = [&](double e) {
      if (tr[0] > 0.0) return e / tr[0];
      return e == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    };
    rep.relative_error = relative(tr[1]);
    rep.relative_error_rtn = rtn ? relative(tr[2]) : std::numeric_limits<double>::quiet_NaN();
  }
  return r;
}

// The buffer checks of the pointer calls: w [rows, cols], h [cols, cols], the fixed grid.
inline status gptq_buffers(const float* w, const float* h, const float* scales, const float* zeros, std::size_t rows,
                           std::size_t cols, std::size_t grid) noexcept {
  return check_buffers({buffer_of(w, rows * cols), buffer_of(h, cols * cols), buffer_of(scales, grid),
                        buffer_of(zeros, zeros != nullptr ? grid : 0)},
                       {});
}

}  // namespace detail

// GPTQ of w [rows = out, cols = in] (float32, row-major) against h [cols, cols] (float32; only
// its upper triangle is read: H_ij for i <= j), on the grid of p: granularity per_group (groups
// of G along `in`; partial_groups allowed) or per_channel / per_token (one group per row), any
// scheme (symmetric, affine, affine_offset), bits 2..8, scales rounded to p.scale_format as
// quantize_int does, minmax or mse_grid ranges.
// Errors, in order: check_int_params'; per_tensor or groups along rows -> bad_group_size;
// stochastic rounding or two's complement codes -> bad_argument; block_size 0 -> bad_block_size;
// percdamp, max_retries or damp_growth out of range -> bad_argument; G not dividing cols ->
// bad_group_size; a size that overflows -> bad_argument; rows or cols 0: ok, an empty output;
// null -> bad_argument; misaligned; NaN or Inf in w or in h's upper triangle -> non_finite_input;
// a group whose scale overflows its format -> scale_overflow; every factorisation failed with
// fallback_to_rtn off -> not_positive_definite; out_of_memory. On an error the output is empty.
[[nodiscard]] inline result<gptq_output> gptq_quantize(const float* w, const float* h, std::size_t rows,
                                                       std::size_t cols, const int_params& p,
                                                       const gptq_options& o = {},
                                                       const linalg_exec& exec = {}) noexcept {
  result<gptq_output> r;
  detail::gptq_groups g;
  if (!(r.status = detail::gptq_check(rows, cols, p, o, &g))) return r;
  if (rows == 0 || cols == 0) {
    r.value.rows = rows;
    r.value.cols = cols;
    r.value.params = p;
    return r;
  }
  if (!(r.status = detail::gptq_buffers(w, h, nullptr, nullptr, rows, cols, 0))) return r;
  return detail::gptq_run(w, h, nullptr, nullptr, rows, cols, p, o, g, exec);
}

// GPTQ on a given grid (static parameters, e.g. a checkpoint's or a fixed step): scales and
// zeros [rows, groups] in the original group order, as quantize_int_fixed reads them (zeros
// null for symmetric schemes). Act-order, if on, changes the order of the columns only (g_idx
// stays k / G). Errors: gptq_quantize's; a stored scale or zero that stored_int_codec rejects ->
// bad_argument.
[[nodiscard]] inline result<gptq_output> gptq_quantize_fixed(const float* w, const float* h, const float* scales,
                                                             const float* zeros, std::size_t rows, std::size_t cols,
                                                             const int_params& p, const gptq_options& o = {},
                                                             const linalg_exec& exec = {}) noexcept {
  result<gptq_output> r;
  detail::gptq_groups g;
  if (!(r.status = detail::gptq_check(rows, cols, p, o, &g))) return r;
  if (rows == 0 || cols == 0) {
    r.value.rows = rows;
    r.value.cols = cols;
    r.value.params = p;
    return r;
  }
  const std::size_t grid = rows * g.count;
  if (has_zero_points(p) && zeros == nullptr) {
    r.status = errc::bad_argument;
    return r;
  }
  if (!(r.status = detail::gptq_buffers(w, h, scales, has_zero_points(p) ? zeros : nullptr, rows, cols, grid))) return r;
  return detail::gptq_run(w, h, scales, zeros, rows, cols, p, o, g, exec);
}

// Span forms: w holds rows * cols values, h cols * cols (errc::size_mismatch otherwise, after
// the options and shape checks).
[[nodiscard]] inline result<gptq_output> gptq_quantize(span<const float> w, span<const float> h, std::size_t rows,
                                                       std::size_t cols, const int_params& p,
                                                       const gptq_options& o = {},
                                                       const linalg_exec& exec = {}) noexcept {
  result<gptq_output> r;
  detail::gptq_groups g;
  if (!(r.status = detail::gptq_check(rows, cols, p, o, &g))) return r;
  if (w.size() != rows * cols || h.size() != cols * cols) {
    r.status = errc::size_mismatch;
    return r;
  }
  return gptq_quantize(w.data(), h.data(), rows, cols, p, o, exec);
}

namespace detail {
// The Hessian acc holds, written out in float32 [cols, cols] into h. Errors: an accumulator of
// another width -> size_mismatch; no token seen -> empty_input; out_of_memory.
inline status gptq_hessian(const hessian_accumulator& acc, std::size_t cols, std::unique_ptr<float[]>& h) noexcept {
  if (acc.features() != cols) return errc::size_mismatch;
  if (acc.tokens() == 0) return errc::empty_input;
  h = allocate_buffer<float>(cols * cols);
  if (!h) return errc::out_of_memory;
  return acc.hessian(span<float>(h.get(), cols * cols));
}
}  // namespace detail

// GPTQ against the Hessian an accumulator holds (written out in float32 first, cols^2 floats).
// Errors: gptq_quantize's; an accumulator of another width -> size_mismatch; no token seen ->
// empty_input.
[[nodiscard]] inline result<gptq_output> gptq_quantize(const float* w, const hessian_accumulator& acc,
                                                       std::size_t rows, std::size_t cols, const int_params& p,
                                                       const gptq_options& o = {},
                                                       const linalg_exec& exec = {}) noexcept {
  result<gptq_output> r;
  detail::gptq_groups g;
  if (!(r.status = detail::gptq_check(rows, cols, p, o, &g))) return r;
  std::unique_ptr<float[]> h;
  if (!(r.status = detail::gptq_hessian(acc, cols, h))) return r;
  return gptq_quantize(w, h.get(), rows, cols, p, o, exec);
}

// gptq_quantize_fixed against the Hessian an accumulator holds; errors as the overload above.
[[nodiscard]] inline result<gptq_output> gptq_quantize_fixed(const float* w, const hessian_accumulator& acc,
                                                             const float* scales, const float* zeros, std::size_t rows,
                                                             std::size_t cols, const int_params& p,
                                                             const gptq_options& o = {},
                                                             const linalg_exec& exec = {}) noexcept {
  result<gptq_output> r;
  detail::gptq_groups g;
  if (!(r.status = detail::gptq_check(rows, cols, p, o, &g))) return r;
  std::unique_ptr<float[]> h;
  if (!(r.status = detail::gptq_hessian(acc, cols, h))) return r;
  return gptq_quantize_fixed(w, h.get(), scales, zeros, rows, cols, p, o, exec);
}

// The tensors of a GPTQ checkpoint (AutoGPTQ / GPTQModel / vLLM "gptq"): qweight int32
// [in*b/32, out] from the codes in the original column order, qzeros int32 [groups, out*b/32]
// (the symmetric schemes' fixed zero 2^(b-1); v1 stores zero - 1), scales fp16 [groups, out],
// g_idx int32 [in] as GPTQ computed it (act-order: the desc_act gather), through
// gptq_pack_qweight, gptq_pack_qzeros and a transpose. Errors: an empty output -> bad_argument;
// bits not 2, 4 or 8 -> bad_bit_width; a float offset scheme or scales not fp16 -> bad_argument;
// fmt out of range -> bad_argument; in or out not a multiple of 32/b -> bad_block_size; a v1
// zero-point of 0 -> bad_argument; out_of_memory.
[[nodiscard]] inline result<gptq_tensors> export_gptq(const gptq_output& q, gptq_format fmt = gptq_format::v1) noexcept {
  result<gptq_tensors> r;
  const int_params& p = q.params;
  const std::size_t out = q.rows, in = q.cols, groups = q.groups();
  if (out == 0 || in == 0) {
    r.status = errc::bad_argument;
    return r;
  }
  if (!(r.status = detail::check_word_width(p.bits))) return r;
  if (p.scheme == int_scheme::affine_offset || p.scale_format != scale_storage::fp16 ||
      p.code_storage != int_code_storage::offset_binary || static_cast<unsigned>(fmt) > 1u) {
    r.status = errc::bad_argument;
    return r;
  }
  const std::size_t k = 32u / static_cast<std::size_t>(p.bits);
  if (in % k != 0 || out % k != 0) {
    r.status = errc::bad_block_size;
    return r;
  }
  std::unique_ptr<std::uint8_t[]> z = detail::allocate_buffer<std::uint8_t>(out * groups);
  if (!z) {
    r.status = errc::out_of_memory;
    return r;
  }
  for (std::size_t i = 0; i < out * groups; ++i)
    z[i] = has_zero_points(p) ? static_cast<std::uint8_t>(q.zeros.values()[i])
                              : static_cast<std::uint8_t>(symmetric_zero_point(p.bits));
  gptq_tensors& t = r.value;
  if (!(r.status = t.qweight.allocate(in / k, out)) || !(r.status = t.qzeros.allocate(groups, out / k)) ||
      !(r.status = t.scales.allocate(groups, out)) || !(r.status = t.g_idx.allocate(1, in))) {
    t = gptq_tensors{};
    return r;
  }
  r.status = gptq_pack_qweight(q.codes.values().data(), out, in, p.bits,
                               reinterpret_cast<std::uint32_t*>(t.qweight.values().data()));
  if (r.ok())
    r.status = gptq_pack_qzeros(z.get(), out, groups, p.bits, fmt,
                                reinterpret_cast<std::uint32_t*>(t.qzeros.values().data()));
  if (!r.ok()) {
    t = gptq_tensors{};
    return r;
  }
  const span<const float> sc = q.scales.values();
  span<float16> dst = t.scales.values();
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t g = 0; g < groups; ++g) dst[g * out + o] = encode<float16>(sc[o * groups + g]);
  for (std::size_t i = 0; i < in; ++i) t.g_idx.values()[i] = q.g_idx.values()[i];
  return r;
}

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_GPTQ_HPP
