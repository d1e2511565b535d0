// lowbit: the portable kernels of the linear-algebra calls (linalg/): the matrix-multiply
// microkernel and the row operations of the triangular solves. The blocking, packing and every
// loop above these live in kernels/linalg/driver.hpp, shared with the AVX2 path (avx2.hpp beside
// this file), which differs only in the microkernel's shape and its vector arithmetic.
//
// The microkernel contract (both paths): a and b point to packed panels (driver.hpp: pack_a,
// pack_b): a holds kc columns of MR values (a[p * MR + r] = row r, step p), b holds kc rows of NR
// values (b[p * NR + j]), both zero-padded. The kernel forms acc[r][j] = sum over p in order of
// a[p][r] * b[p][j], then for r < mr, j < nr writes
//     c[r * ldc + j] = alpha * acc[r][j] + beta * c[r * ldc + j],
// reading c only when beta != 0 (beta == 0 writes alpha * acc even over NaN).
#ifndef LOWBIT_KERNELS_LINALG_SCALAR_HPP
#define LOWBIT_KERNELS_LINALG_SCALAR_HPP

#include <cstddef>

namespace lowbit {
namespace kernels {
namespace linalg {

struct scalar_kernel {
  static constexpr std::size_t mr = 4;   // rows of a microtile
  static constexpr std::size_t nr = 8;   // columns of a microtile
  static constexpr std::size_t kc = 256;  // depth of a packed panel
  static constexpr std::size_t mc = 128;  // rows of a packed block of A
  static constexpr std::size_t nc = 2048;  // columns of a packed panel of B
  static constexpr bool simd_packing = false;  // the driver's portable pack_a / pack_b

  static void micro(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc, std::size_t m_valid,
                    std::size_t n_valid, float alpha, float beta) noexcept {
    float acc[mr][nr] = {};
    for (std::size_t p = 0; p < k; ++p, a += mr, b += nr)
      for (std::size_t r = 0; r < mr; ++r)
        for (std::size_t j = 0; j < nr; ++j) acc[r][j] += a[r] * b[j];
    for (std::size_t r = 0; r < m_valid; ++r) {
      float* row = c + r * ldc;
      for (std::size_t j = 0; j < n_valid; ++j) {
        const float t = alpha * acc[r][j];
        row[j] = beta == 0.0f ? t : t + beta * row[j];
      }
    }
  }

  // y[j] -= f * x[j], j < n.
  static void axpy_neg(std::size_t n, float f, const float* x, float* y) noexcept {
    for (std::size_t j = 0; j < n; ++j) y[j] -= f * x[j];
  }
  // y[j] -= f[q * fs] * x[q * ldx + j] for q = 0 .. n - 1 in turn, j < w.
  static void axpy_neg_rows(std::size_t n, const float* f, std::size_t fs, const float* x, std::size_t ldx,
                            std::size_t w, float* y) noexcept {
    for (std::size_t q = 0; q < n; ++q) axpy_neg(w, f[q * fs], x + q * ldx, y);
  }
  // sum of x[j] * y[j], j < n, in index order.
  static float dot(std::size_t n, const float* x, const float* y) noexcept {
    float s = 0.0f;
    for (std::size_t j = 0; j < n; ++j) s += x[j] * y[j];
    return s;
  }
  // y[j] /= d, j < n.
  static void divide(std::size_t n, float d, float* y) noexcept {
    for (std::size_t j = 0; j < n; ++j) y[j] /= d;
  }
};

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_LINALG_SCALAR_HPP
