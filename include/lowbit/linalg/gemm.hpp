// lowbit: single-precision matrix multiply and symmetric rank-k update (docs/linalg.md).
//
//   gemm: C = alpha * op(A) op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n
//   syrk: C = alpha * A^T A + beta * C on one triangle (or both), A tokens x n, C n x n
//
// Row-major with leading dimensions (linalg/types.hpp). No BLAS: packed panels and a
// register-blocked microkernel (kernels/linalg/), AVX2 + FMA where the CPU has it, portable
// C++ otherwise. Each path's result is deterministic (a fixed summation order, independent of the
// threads of linalg_exec); the paths differ from each other by rounding only.
//
//   std::vector<float> a(m * k), b(k * n), c(m * n);
//   lowbit::status s = lowbit::gemm(a.data(), k, b.data(), n, m, n, k, {}, c.data(), n);  // C = A B
//   lowbit::gemm_options o;
//   o.op_a = lowbit::matrix_op::transpose;  // A stored k x m
#ifndef LOWBIT_LINALG_GEMM_HPP
#define LOWBIT_LINALG_GEMM_HPP

#include <atomic>
#include <cmath>
#include <cstddef>

#include "../core/checks.hpp"
#include "../core/cpu.hpp"
#include "../core/status.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/linalg/avx2.hpp"
#include "../kernels/linalg/avx512.hpp"
#include "../kernels/linalg/driver.hpp"
#include "../kernels/linalg/scalar.hpp"
#include "exec.hpp"
#include "types.hpp"

namespace lowbit {

struct gemm_options {
  matrix_op op_a = matrix_op::identity;  // transpose: A is stored k x m
  matrix_op op_b = matrix_op::identity;  // transpose: B is stored n x k
  float alpha = 1.0f;                    // finite
  float beta = 0.0f;                     // finite; 0: C is written without being read
};

struct syrk_options {
  float alpha = 1.0f;               // finite
  float beta = 1.0f;                // finite; the default accumulates (C += A^T A); 0: C not read
  triangle fill = triangle::upper;  // upper or lower: that triangle only; both: upper, then mirrored
};

namespace detail {
inline std::atomic<bool> linalg_avx512_enabled{true};
}  // namespace detail

// On the avx512 path, the linear-algebra calls use an AVX-512F microkernel (docs/linalg.md)
// unless this is set to false (process-wide, like set_isa; for tests
// and benchmarks that compare the kernels). Returns the previous setting.
inline bool set_linalg_avx512(bool enabled) noexcept { return detail::linalg_avx512_enabled.exchange(enabled); }

// The kernel the linear-algebra calls take now: "scalar", "avx2" or "avx512".
inline const char* linalg_kernel_name() noexcept {
  if (!detail::use_avx2()) return "scalar";
  return LOWBIT_HAS_AVX512_LINALG && detail::use_avx512() && detail::linalg_avx512_enabled.load() ? "avx512"
                                                                                                  : "avx2";
}

namespace detail {

// Runs f with the kernel of the active path.
template <class F>
status linalg_dispatch(F&& f) {
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2()) {
#if LOWBIT_HAS_AVX512_LINALG
    if (use_avx512() && linalg_avx512_enabled.load(std::memory_order_relaxed))
      return f(kernels::linalg::avx512_kernel{});
#endif
    return f(kernels::linalg::avx2_kernel{});
  }
#endif
  return f(kernels::linalg::scalar_kernel{});
}

inline void mirror_upper(std::size_t n, float* c, std::size_t ldc) noexcept {
  for (std::size_t i = 1; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j) c[i * ldc + j] = c[j * ldc + i];
}

}  // namespace detail

// C = alpha * op(A) op(B) + beta * C. A is stored m x k (op_a identity) or k x m (transpose) with
// leading dimension lda; B is stored k x n or n x k with ldb; C is m x n with ldc.
// Errors, in order: bad_argument (an op out of range, alpha or beta not finite; a leading
// dimension below its row length or a span that overflows); m = 0 or n = 0: ok, nothing written
// (pointers may be null); k = 0 or alpha = 0: C = beta * C, A and B not read (may be null when
// k = 0); bad_argument (null), misaligned, overlapping_buffers (C's span overlapping A's or B's);
// out_of_memory (packing buffers, C untouched). NaN and Inf propagate as IEEE arithmetic says.
inline status gemm(const float* a, std::size_t lda, const float* b, std::size_t ldb, std::size_t m, std::size_t n,
                   std::size_t k, const gemm_options& o, float* c, std::size_t ldc, const linalg_exec& exec = {}) noexcept {
  if (!detail::valid(o.op_a) || !detail::valid(o.op_b) || !std::isfinite(o.alpha) || !std::isfinite(o.beta))
    return errc::bad_argument;
  const bool ta = o.op_a == matrix_op::transpose, tb = o.op_b == matrix_op::transpose;
  std::size_t a_span = 0, b_span = 0, c_span = 0;
  if (!detail::matrix_span(ta ? k : m, ta ? m : k, lda, &a_span) ||
      !detail::matrix_span(tb ? n : k, tb ? k : n, ldb, &b_span) || !detail::matrix_span(m, n, ldc, &c_span))
    return errc::bad_argument;
  if (m == 0 || n == 0) return status{};
  const bool reads_ab = k != 0 && o.alpha != 0.0f;
  if (!reads_ab) a_span = b_span = 0;
  const status buffers =
      detail::check_buffers({detail::buffer_of(a, a_span), detail::buffer_of(b, b_span)}, {detail::buffer_of(c, c_span)});
  if (!buffers) return buffers;

  const kernels::ieee_scope fp;
  using kernels::linalg::cview;
  const cview va = ta ? cview{a, 1, lda} : cview{a, lda, 1};
  const cview vb = tb ? cview{b, 1, ldb} : cview{b, ldb, 1};
  return detail::linalg_dispatch([&](auto kernel) {
    using K = decltype(kernel);
    return kernels::linalg::gemm<K>(m, n, k, o.alpha, va, vb, o.beta, {c, ldc, 1}, kernels::linalg::tri_mask::none,
                                    exec);
  });
}

// C = alpha * A^T A + beta * C on o.fill: the Gram matrix of the rows of A (tokens x n, lda),
// e.g. a Hessian X^T X of activations. C is n x n with ldc. upper / lower: only that triangle is
// read and written; both: the upper triangle is computed and copied to the lower one (C exactly
// symmetric; the lower triangle is not read).
// Errors, in order: bad_argument (fill out of range, alpha or beta not finite; lda < n, ldc < n,
// a span that overflows); n = 0: ok, nothing written; tokens = 0 or alpha = 0: C = beta * C on the
// triangle, A not read; bad_argument (null), misaligned, overlapping_buffers; out_of_memory.
inline status syrk(const float* a, std::size_t lda, std::size_t tokens, std::size_t n, const syrk_options& o, float* c,
                   std::size_t ldc, const linalg_exec& exec = {}) noexcept {
  if (!detail::valid(o.fill) || !std::isfinite(o.alpha) || !std::isfinite(o.beta)) return errc::bad_argument;
  std::size_t a_span = 0, c_span = 0;
  if (!detail::matrix_span(tokens, n, lda, &a_span) || !detail::matrix_span(n, n, ldc, &c_span))
    return errc::bad_argument;
  if (n == 0) return status{};
  if (tokens == 0 || o.alpha == 0.0f) a_span = 0;
  const status buffers = detail::check_buffers({detail::buffer_of(a, a_span)}, {detail::buffer_of(c, c_span)});
  if (!buffers) return buffers;

  const kernels::ieee_scope fp;
  using kernels::linalg::cview;
  using kernels::linalg::tri_mask;
  const cview va{a, lda, 1};
  const tri_mask mask = o.fill == triangle::lower ? tri_mask::lower : tri_mask::upper;
  const status s = detail::linalg_dispatch([&](auto kernel) {
    using K = decltype(kernel);
    return kernels::linalg::gemm<K>(n, n, tokens, o.alpha, va.t(), va, o.beta, {c, ldc, 1}, mask, exec);
  });
  if (s && o.fill == triangle::both) detail::mirror_upper(n, c, ldc);
  return s;
}

}  // namespace lowbit

#endif  // LOWBIT_LINALG_GEMM_HPP
