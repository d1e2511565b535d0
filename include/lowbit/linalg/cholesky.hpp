// lowbit: Cholesky factorisation, the inverse of a symmetric positive definite matrix from its
// factor, and triangular solves, in single precision (docs/linalg.md).
//
//   cholesky:           A = U^T U (U upper) or A = L L^T (L lower), in place
//   cholesky_inverse:   A^-1 from U or L, into a separate matrix
//   triangular_solve:   op(T) X = B or X op(T) = B, in place in B
//   triangular_inverse: T^-1 in place (upper or lower)
//
// Blocked: the O(n^3) work runs through the multiply of linalg/gemm.hpp, so the run-time ISA
// choice, determinism and linalg_exec are the multiply's. A matrix that is not positive definite
// is reported as errc::not_positive_definite by cholesky.
//
//   std::vector<float> h = ...;  // n x n, symmetric positive definite
//   lowbit::status s = lowbit::cholesky(n, {}, h.data(), n);  // upper triangle now holds U
//   std::vector<float> hinv(n * n);
//   s = lowbit::cholesky_inverse(h.data(), n, n, {}, hinv.data(), n);  // upper triangle of H^-1
#ifndef LOWBIT_LINALG_CHOLESKY_HPP
#define LOWBIT_LINALG_CHOLESKY_HPP

#include <cmath>
#include <cstddef>

#include "../core/checks.hpp"
#include "../core/status.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/linalg/driver.hpp"
#include "exec.hpp"
#include "gemm.hpp"
#include "types.hpp"

namespace lowbit {

struct cholesky_options {
  triangle uplo = triangle::upper;  // upper: A = U^T U; lower: A = L L^T (both is bad_argument)
};

struct triangular_inverse_options {
  triangle uplo = triangle::upper;  // the triangle holding T (both is bad_argument)
};

struct cholesky_inverse_options {
  triangle factor = triangle::upper;  // where the factor lies, as cholesky wrote it (upper or lower)
  triangle fill = triangle::upper;    // which triangle of the inverse is written; both: all of it
};

struct triangular_solve_options {
  solve_side side = solve_side::left;   // left: op(T) X = B (T rows x rows); right: X op(T) = B (T cols x cols)
  triangle uplo = triangle::upper;      // the triangle of T that is read (upper or lower)
  matrix_op op = matrix_op::identity;   // op(T)
};

namespace detail {

inline bool finite_triangle(const float* a, std::size_t lda, std::size_t n, bool upper) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j0 = upper ? i : 0, j1 = upper ? n : i + 1;
    for (std::size_t j = j0; j < j1; ++j)
      if (!std::isfinite(a[i * lda + j])) return false;
  }
  return true;
}

// errc::non_finite_input for a NaN or Inf on the diagonal, bad_argument for a zero.
inline status check_diagonal(const float* t, std::size_t ldt, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(t[i * ldt + i])) return errc::non_finite_input;
  for (std::size_t i = 0; i < n; ++i)
    if (t[i * ldt + i] == 0.0f) return errc::bad_argument;
  return status{};
}

}  // namespace detail

// Factors the symmetric positive definite n x n matrix in a (leading dimension lda) in place.
// upper: reads the upper triangle of A and overwrites it with U, A = U^T U (the factor GPTQ
// uses); lower: reads the lower triangle and overwrites it with L, A = L L^T. The other triangle
// is never read or written.
// Errors, in order: bad_argument (uplo not upper or lower; lda < n or a span that overflows);
// n = 0: ok; bad_argument (null), misaligned; non_finite_input (a NaN or Inf in the triangle,
// nothing written); not_positive_definite (a pivot <= 0 or not finite:
// the triangle then holds partial results and must be restored by the caller before a retry;
// the other triangle is untouched); out_of_memory (also possibly after partial work).
inline status cholesky(std::size_t n, const cholesky_options& o, float* a, std::size_t lda,
                       const linalg_exec& exec = {}) noexcept {
  if (o.uplo != triangle::upper && o.uplo != triangle::lower) return errc::bad_argument;
  std::size_t span = 0;
  if (!detail::matrix_span(n, n, lda, &span)) return errc::bad_argument;
  if (n == 0) return status{};
  const status buffers = detail::check_buffers({}, {detail::buffer_of(a, span)});
  if (!buffers) return buffers;
  const bool upper = o.uplo == triangle::upper;
  if (!detail::finite_triangle(a, lda, n, upper)) return errc::non_finite_input;

  const kernels::ieee_scope fp;
  // L in row-major storage is U = L^T seen through the transposed view.
  const kernels::linalg::mview v = upper ? kernels::linalg::mview{a, lda, 1} : kernels::linalg::mview{a, 1, lda};
  const status s = detail::linalg_dispatch([&](auto kernel) {
    using K = decltype(kernel);
    return kernels::linalg::cholesky_upper<K>(v, n, exec);
  });
  // The driver reports a failed pivot as bad_argument (every argument check is done above).
  return s.code() == errc::bad_argument ? status{errc::not_positive_definite} : s;
}

// Solves op(T) X = B (side left, T rows x rows) or X op(T) = B (side right, T cols x cols) in
// place: B (rows x cols, ldb) is overwritten with X. T (ldt) is triangular: only its uplo
// triangle is read.
// Errors, in order: bad_argument (an option out of range, uplo both; a leading dimension below
// its row length, a span that overflows); rows = 0 or cols = 0: ok; bad_argument (null),
// misaligned, overlapping_buffers (B's span overlapping T's); non_finite_input (NaN or Inf on T's
// diagonal), bad_argument (a zero on T's diagonal: T is singular), both before B is written;
// out_of_memory (possibly after partial work).
inline status triangular_solve(const float* t, std::size_t ldt, std::size_t rows, std::size_t cols,
                               const triangular_solve_options& o, float* b, std::size_t ldb,
                               const linalg_exec& exec = {}) noexcept {
  if (!detail::valid(o.side) || !detail::valid(o.op) || (o.uplo != triangle::upper && o.uplo != triangle::lower))
    return errc::bad_argument;
  const bool left = o.side == solve_side::left;
  const std::size_t tn = left ? rows : cols;
  std::size_t t_span = 0, b_span = 0;
  if (!detail::matrix_span(tn, tn, ldt, &t_span) || !detail::matrix_span(rows, cols, ldb, &b_span))
    return errc::bad_argument;
  if (rows == 0 || cols == 0) return status{};
  const status buffers = detail::check_buffers({detail::buffer_of(t, t_span)}, {detail::buffer_of(b, b_span)});
  if (!buffers) return buffers;
  const status diagonal = detail::check_diagonal(t, ldt, tn);
  if (!diagonal) return diagonal;

  const kernels::ieee_scope fp;
  using kernels::linalg::cview;
  using kernels::linalg::mview;
  // Reduce to the left-side solve T' X' = B' of the driver: a transpose is a transposed view.
  cview tv{t, ldt, 1};
  bool lower = o.uplo == triangle::lower;
  const bool transpose_t = (o.op == matrix_op::transpose) == left;  // right side: op(T)^T
  if (transpose_t) {
    tv = tv.t();
    lower = !lower;
  }
  const mview bv = left ? mview{b, ldb, 1} : mview{b, 1, ldb};
  const std::size_t nrhs = left ? cols : rows;
  return detail::linalg_dispatch([&](auto kernel) {
    using K = decltype(kernel);
    return kernels::linalg::trsm<K>(tv, lower, tn, nrhs, bv, exec);
  });
}

// T := T^-1 in place for the n x n triangular matrix in t (ldt): its o.uplo triangle (upper or
// lower) is read and overwritten, the other one never read or written (in place, as cholesky). Recursive on halves
// (kernels::linalg::trtri_upper): n^3 / 3 flops, nearly all of them in the multiply.
// Errors, in order: bad_argument (uplo not upper or lower; ldt < n or a span that overflows);
// n = 0: ok; bad_argument (null), misaligned; non_finite_input (NaN or Inf on the diagonal),
// bad_argument (a zero on it: T is singular), before t is written; out_of_memory (before
// anything is written, or possibly after partial work).
inline status triangular_inverse(std::size_t n, const triangular_inverse_options& o, float* t, std::size_t ldt,
                                 const linalg_exec& exec = {}) noexcept {
  const triangle uplo = o.uplo;
  if (uplo != triangle::upper && uplo != triangle::lower) return errc::bad_argument;
  std::size_t span = 0;
  if (!detail::matrix_span(n, n, ldt, &span)) return errc::bad_argument;
  if (n == 0) return status{};
  const status buffers = detail::check_buffers({}, {detail::buffer_of(t, span)});
  if (!buffers) return buffers;
  const status diagonal = detail::check_diagonal(t, ldt, n);
  if (!diagonal) return diagonal;

  const kernels::ieee_scope fp;
  // L^-1 = ((L^T)^-1)^T: the lower triangle is the upper one of the transposed view.
  const kernels::linalg::mview v =
      uplo == triangle::upper ? kernels::linalg::mview{t, ldt, 1} : kernels::linalg::mview{t, 1, ldt};
  constexpr std::size_t base = kernels::linalg::trtri_base;
  kernels::linalg::scratch work = kernels::linalg::allocate(base * (base + n));
  if (!work) return errc::out_of_memory;
  return detail::linalg_dispatch([&](auto kernel) {
    using K = decltype(kernel);
    return kernels::linalg::trtri_upper<K>(v, n, work.get(), exec);
  });
}

// A^-1 from the Cholesky factor of A (as cholesky wrote it, in the factor triangle of u, ldu),
// into inv (n x n, ldinv), which must not overlap u: A^-1 = U^-1 U^-T, computed by blocks of
// columns with two triangular solves each (4/3 n^3 flops). fill upper or lower writes that
// triangle of inv only; both writes the upper one and copies it to the lower (exactly symmetric).
// Errors, in order: bad_argument (factor not upper or lower, fill out of range; a leading
// dimension below n or a span that overflows); n = 0: ok; bad_argument (null), misaligned,
// overlapping_buffers; non_finite_input (NaN or Inf on the factor's diagonal), bad_argument (a zero
// on it), before inv is written; out_of_memory (possibly after partial work).
inline status cholesky_inverse(const float* u, std::size_t ldu, std::size_t n, const cholesky_inverse_options& o,
                               float* inv, std::size_t ldinv, const linalg_exec& exec = {}) noexcept {
  if ((o.factor != triangle::upper && o.factor != triangle::lower) || !detail::valid(o.fill))
    return errc::bad_argument;
  std::size_t u_span = 0, inv_span = 0;
  if (!detail::matrix_span(n, n, ldu, &u_span) || !detail::matrix_span(n, n, ldinv, &inv_span))
    return errc::bad_argument;
  if (n == 0) return status{};
  const status buffers = detail::check_buffers({detail::buffer_of(u, u_span)}, {detail::buffer_of(inv, inv_span)});
  if (!buffers) return buffers;
  const status diagonal = detail::check_diagonal(u, ldu, n);
  if (!diagonal) return diagonal;

  const kernels::ieee_scope fp;
  using kernels::linalg::cview;
  using kernels::linalg::mview;
  const cview uv = o.factor == triangle::upper ? cview{u, ldu, 1} : cview{u, 1, ldu};  // U = L^T
  constexpr std::size_t block = 128;
  const std::size_t cb_max = n < block ? n : block;
  kernels::linalg::scratch work = kernels::linalg::allocate(n * cb_max);
  if (!work) return errc::out_of_memory;
  const bool lower_out = o.fill == triangle::lower;
  const status s = detail::linalg_dispatch([&](auto kernel) -> status {
    using K = decltype(kernel);
    for (std::size_t c0 = 0; c0 < n; c0 += cb_max) {
      const std::size_t cb = n - c0 < cb_max ? n - c0 : cb_max;
      const mview x{work.get(), cb, 1};  // n x cb: columns c0 .. c0 + cb of the identity, then of A^-1
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < cb; ++j) x(i, j) = i == c0 + j ? 1.0f : 0.0f;
      // U^T Y = E (rows above c0 of E and Y are zero), then U X = Y.
      status st = kernels::linalg::trsm<K>(uv.sub(c0, c0).t(), true, n - c0, cb, x.sub(c0, 0), exec);
      if (!st) return st;
      st = kernels::linalg::trsm<K>(uv, false, n, cb, x, exec);
      if (!st) return st;
      for (std::size_t j = 0; j < cb; ++j) {
        const std::size_t col = c0 + j;  // A^-1(i, col) = x(i, j); its upper part has i <= col
        if (lower_out) {
          for (std::size_t i = 0; i <= col; ++i) inv[col * ldinv + i] = x(i, j);
        } else {
          for (std::size_t i = 0; i <= col; ++i) inv[i * ldinv + col] = x(i, j);
        }
      }
    }
    return status{};
  });
  if (s && o.fill == triangle::both) detail::mirror_upper(n, inv, ldinv);
  return s;
}

}  // namespace lowbit

#endif  // LOWBIT_LINALG_CHOLESKY_HPP
