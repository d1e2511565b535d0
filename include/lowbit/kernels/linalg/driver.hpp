// lowbit: the blocked algorithms behind linalg/ (docs/linalg.md), written once and instantiated
// with a kernel (scalar.hpp: scalar_kernel, avx2.hpp: avx2_kernel).
//
// Matrices here are strided views: element (i, j) at p[i * rs + j * cs]. A transpose is a view
// with rs and cs swapped, so one multiply serves A B, A^T B, A B^T, and a lower-triangular
// problem is the upper one on the transposed view.
//
// The multiply is the Goto/BLIS loop nest: for each panel of nc columns of C, for each depth
// slice of kc, pack that slice of B into slivers of nr columns and each block of mc rows of A
// into micro-panels of mr rows (one parallel_for; the SIMD kernels bring vectorised packing),
// then run the microkernel over every mr x nr tile (a second parallel_for over blocks of mc rows
// x chunk_of<K> columns; in a block, micro-panel of A outer, slivers of B inner, so the A
// micro-panel stays in L1 and the B chunk in L2). Every element of C
// is one chain of FMAs per depth slice, and the slices are added in order: the result does not
// depend on how the tasks are scheduled.
#ifndef LOWBIT_KERNELS_LINALG_DRIVER_HPP
#define LOWBIT_KERNELS_LINALG_DRIVER_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <memory>
#include <new>

#include "../../core/status.hpp"
#include "../../linalg/exec.hpp"

namespace lowbit {
namespace kernels {
namespace linalg {

template <class T>
struct view {
  T* p = nullptr;
  std::size_t rs = 0, cs = 0;
  T& operator()(std::size_t i, std::size_t j) const noexcept { return p[i * rs + j * cs]; }
  view sub(std::size_t i, std::size_t j) const noexcept { return view{p + i * rs + j * cs, rs, cs}; }
  view t() const noexcept { return view{p, cs, rs}; }
  // A mutable view reads as a const one (only for non-const T: a conversion to the own type is
  // never used, and nvcc warns about it).
  template <class U = T, std::enable_if_t<!std::is_const<U>::value, int> = 0>
  operator view<const U>() const noexcept {
    return view<const U>{p, rs, cs};
  }
};
using cview = view<const float>;
using mview = view<float>;

// Which elements of C a multiply writes: all, those with j >= i (upper) or j <= i (lower), in
// C's own indices.
enum class tri_mask : std::uint8_t { none, upper, lower };

inline constexpr std::size_t gemm_chunk = 480;  // columns of C per compute task, rounded up to a multiple of nr
template <class K>
inline constexpr std::size_t chunk_of = (gemm_chunk + K::nr - 1) / K::nr * K::nr;

struct aligned_free {
  void operator()(float* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
};
using scratch = std::unique_ptr<float, aligned_free>;
inline scratch allocate(std::size_t count) noexcept {
  return scratch(static_cast<float*>(::operator new(count * sizeof(float), std::align_val_t{64}, std::nothrow)));
}

inline bool tile_outside(tri_mask mask, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) noexcept {
  if (mask == tri_mask::upper) return j0 + cols <= i0;  // every j < every i
  if (mask == tri_mask::lower) return i0 + rows <= j0;
  return false;
}
inline bool tile_inside(tri_mask mask, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) noexcept {
  if (mask == tri_mask::upper) return j0 >= i0 + rows - 1;
  if (mask == tri_mask::lower) return i0 >= j0 + cols - 1;
  return true;
}
inline bool in_mask(tri_mask mask, std::size_t i, std::size_t j) noexcept {
  return mask == tri_mask::none || (mask == tri_mask::upper ? j >= i : j <= i);
}

// mc x kc of A (view at the block's origin) -> micro-panels of K::mr rows, zero-padded.
template <class K>
void pack_a(cview a, std::size_t rows, std::size_t depth, float* dst) noexcept {
  for (std::size_t i0 = 0; i0 < rows; i0 += K::mr, dst += K::mr * depth) {
    const std::size_t mr = rows - i0 < K::mr ? rows - i0 : K::mr;
    if (a.rs == 1) {
      for (std::size_t p = 0; p < depth; ++p) {
        const float* src = &a(i0, p);
        float* d = dst + p * K::mr;
        for (std::size_t r = 0; r < mr; ++r) d[r] = src[r];
        for (std::size_t r = mr; r < K::mr; ++r) d[r] = 0.0f;
      }
    } else {
      for (std::size_t r = 0; r < mr; ++r) {
        const float* src = &a(i0 + r, 0);
        for (std::size_t p = 0; p < depth; ++p) dst[p * K::mr + r] = src[p * a.cs];
      }
      for (std::size_t r = mr; r < K::mr; ++r)
        for (std::size_t p = 0; p < depth; ++p) dst[p * K::mr + r] = 0.0f;
    }
  }
}

// kc x cols of B -> slivers of K::nr columns, zero-padded.
template <class K>
void pack_b(cview b, std::size_t depth, std::size_t cols, float* dst) noexcept {
  for (std::size_t j0 = 0; j0 < cols; j0 += K::nr, dst += K::nr * depth) {
    const std::size_t nr = cols - j0 < K::nr ? cols - j0 : K::nr;
    if (b.cs == 1) {
      for (std::size_t p = 0; p < depth; ++p) {
        const float* src = &b(p, j0);
        float* d = dst + p * K::nr;
        for (std::size_t j = 0; j < nr; ++j) d[j] = src[j];
        for (std::size_t j = nr; j < K::nr; ++j) d[j] = 0.0f;
      }
    } else {
      for (std::size_t j = 0; j < nr; ++j) {
        const float* src = &b(0, j0 + j);
        for (std::size_t p = 0; p < depth; ++p) dst[p * K::nr + j] = src[p * b.rs];
      }
      for (std::size_t j = nr; j < K::nr; ++j)
        for (std::size_t p = 0; p < depth; ++p) dst[p * K::nr + j] = 0.0f;
    }
  }
}

// The kernel's own packing where it has one (the same layout, vectorised), else the loops above.
template <class K>
void pack_a_block(cview a, std::size_t rows, std::size_t depth, float* dst) noexcept {
  if constexpr (K::simd_packing) {
    K::template pack_a<K::mr>(a.p, a.rs, a.cs, rows, depth, dst);
  } else {
    pack_a<K>(a, rows, depth, dst);
  }
}
template <class K>
void pack_b_panel(cview b, std::size_t depth, std::size_t cols, float* dst) noexcept {
  if constexpr (K::simd_packing) {
    K::template pack_b<K::nr>(b.p, b.rs, b.cs, depth, cols, dst);
  } else {
    pack_b<K>(b, depth, cols, dst);
  }
}

// C = beta * C on the masked elements (beta == 0: zeros, C not read). c.cs == 1.
inline void scale_c(std::size_t m, std::size_t n, float beta, mview c, tri_mask mask) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (in_mask(mask, i, j)) c(i, j) = beta == 0.0f ? 0.0f : beta * c(i, j);
}

// C = alpha * A B + beta * C on the masked elements; A is m x k, B is k x n, C is m x n with
// c.cs == 1 or c.rs == 1. A and B must not overlap C. Returns out_of_memory if the packing
// buffers cannot be allocated (C untouched).
template <class K>
status gemm(std::size_t m, std::size_t n, std::size_t k, float alpha, cview a, cview b, float beta, mview c,
            tri_mask mask, const linalg_exec& exec) noexcept {
  if (m == 0 || n == 0) return status{};
  if (c.cs != 1) {  // C^T = B^T A^T on the transposed view, which has unit column stride
    const tri_mask flipped = mask == tri_mask::upper ? tri_mask::lower
                             : mask == tri_mask::lower ? tri_mask::upper
                                                       : tri_mask::none;
    return gemm<K>(n, m, k, alpha, b.t(), a.t(), beta, c.t(), flipped, exec);
  }
  if (k == 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, mask);
    return status{};
  }
  const std::size_t kc_max = k < K::kc ? k : K::kc;
  const std::size_t nc_max = n < K::nc ? n : K::nc;
  const std::size_t nc_pad = (nc_max + K::nr - 1) / K::nr * K::nr;
  const std::size_t a_blocks = (m + K::mc - 1) / K::mc;
  const std::size_t a_block_floats = K::mc * kc_max;  // mc is a multiple of mr
  scratch buffer = allocate(kc_max * nc_pad + a_blocks * a_block_floats);
  if (!buffer) return errc::out_of_memory;
  float* const packed_b = buffer.get();
  float* const packed_a = packed_b + kc_max * nc_pad;
  const std::size_t ldc = c.rs;

  for (std::size_t jc = 0; jc < n; jc += K::nc) {
    const std::size_t ncur = n - jc < K::nc ? n - jc : K::nc;
    const std::size_t b_slivers = (ncur + K::nr - 1) / K::nr;
    constexpr std::size_t chunk = chunk_of<K>;  // 480 columns (512 for nr = 64)
    const std::size_t chunks = (ncur + chunk - 1) / chunk;
    for (std::size_t pc = 0; pc < k; pc += K::kc) {
      const std::size_t kcur = k - pc < K::kc ? k - pc : K::kc;
      const float beta_now = pc == 0 ? beta : 1.0f;
      // Packing: tasks [0, a_blocks) pack A's blocks, the rest pack groups of B slivers (256
      // columns).
      constexpr std::size_t slivers_per_task = K::nr < 256 ? 256 / K::nr : 1;
      const std::size_t b_tasks = (b_slivers + slivers_per_task - 1) / slivers_per_task;
      auto pack = [&](std::size_t t) {
        if (t < a_blocks) {
          const std::size_t i0 = t * K::mc;
          const std::size_t rows = m - i0 < K::mc ? m - i0 : K::mc;
          // A block needed only if some tile of it is inside the mask.
          if (tile_outside(mask, i0, rows, jc, ncur)) return;
          pack_a_block<K>(a.sub(i0, pc), rows, kcur, packed_a + t * a_block_floats);
        } else {
          const std::size_t s0 = (t - a_blocks) * slivers_per_task;
          const std::size_t j0 = s0 * K::nr;
          const std::size_t cols_left = ncur - j0;
          const std::size_t cols = cols_left < slivers_per_task * K::nr ? cols_left : slivers_per_task * K::nr;
          pack_b_panel<K>(b.sub(pc, jc + j0), kcur, cols, packed_b + s0 * K::nr * kcur);
        }
      };
      lowbit::detail::linalg_parallel_for(exec, a_blocks + b_tasks, pack);
      auto compute = [&](std::size_t t) {
        const std::size_t ib = t / chunks, jb = t % chunks;
        const std::size_t i0 = ib * K::mc;
        const std::size_t rows = m - i0 < K::mc ? m - i0 : K::mc;
        const std::size_t j0 = jb * chunk;
        const std::size_t cols = ncur - j0 < chunk ? ncur - j0 : chunk;
        if (tile_outside(mask, i0, rows, jc + j0, cols)) return;
        const float* pa = packed_a + ib * a_block_floats;
        // A micro-panel (mr x kc) stays in L1 while the slivers of B's chunk (kc x chunk, in L2)
        // stream past it.
        for (std::size_t ir = 0; ir < rows; ir += K::mr) {
          const std::size_t mr = rows - ir < K::mr ? rows - ir : K::mr;
          const std::size_t ig = i0 + ir;
          for (std::size_t jr = 0; jr < cols; jr += K::nr) {
            const std::size_t nr = cols - jr < K::nr ? cols - jr : K::nr;
            const std::size_t jg = jc + j0 + jr;  // column in C
            const float* pb = packed_b + (j0 + jr) * kcur;
            if (tile_outside(mask, ig, mr, jg, nr)) continue;
            float* ct = &c(ig, jg);
            if (tile_inside(mask, ig, mr, jg, nr)) {
              K::micro(kcur, pa + ir * kcur, pb, ct, ldc, mr, nr, alpha, beta_now);
            } else {  // straddles the diagonal: compute the whole tile, keep the masked part
              alignas(64) float tile[K::mr * K::nr];
              K::micro(kcur, pa + ir * kcur, pb, tile, K::nr, mr, nr, alpha, 0.0f);
              for (std::size_t r = 0; r < mr; ++r) {  // row r's masked columns: one run [first, last)
                const std::size_t i = ig + r;
                std::size_t first = 0, last = nr;
                if (mask == tri_mask::upper) {
                  first = i <= jg ? 0 : i - jg < nr ? i - jg : nr;
                } else {
                  last = i < jg ? 0 : i - jg + 1 < nr ? i - jg + 1 : nr;
                }
                float* x = ct + r * ldc;
                const float* y = tile + r * K::nr;
                if (beta_now == 0.0f) {
                  for (std::size_t j = first; j < last; ++j) x[j] = y[j];
                } else {
                  for (std::size_t j = first; j < last; ++j) x[j] = y[j] + beta_now * x[j];
                }
              }
            }
          }
        }
      };
      lowbit::detail::linalg_parallel_for(exec, a_blocks * chunks, compute);
    }
  }
  return status{};
}

// Solves T X = B in place in B, T an n x n triangular view (its lower triangle when lower, else
// its upper one; the other triangle is never read), B n x nrhs with b.cs == 1 or b.rs == 1.
// T's diagonal must be nonzero (checked by the callers). Blocks of trsm_block rows are solved
// directly, the rest of B is updated by the multiply.
inline constexpr std::size_t trsm_block = 32;

template <class K>
void solve_block(cview t, bool lower, std::size_t n, std::size_t nrhs, mview b) noexcept {
  if (b.cs == 1) {  // rows of B are contiguous: row operations, on 64 columns at a time (n x 64 in L1)
    constexpr std::size_t cw = 64;
    for (std::size_t c0 = 0; c0 < nrhs; c0 += cw) {
      const std::size_t w = nrhs - c0 < cw ? nrhs - c0 : cw;
      for (std::size_t s = 0; s < n; ++s) {
        const std::size_t i = lower ? s : n - 1 - s;
        float* row = &b(i, c0);
        const std::size_t q0 = lower ? 0 : i + 1, q1 = lower ? i : n;  // row i -= t(i, q) row q, q in order
        if (q1 > q0) K::axpy_neg_rows(q1 - q0, &t(i, q0), t.cs, &b(q0, c0), b.rs, w, row);
        K::divide(w, t(i, i), row);
      }
    }
    return;
  }
  for (std::size_t j = 0; j < nrhs; ++j) {  // columns of B are contiguous: substitution per column
    float* x = &b(0, j);
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t i = lower ? s : n - 1 - s;
      const std::size_t q0 = lower ? 0 : i + 1, q1 = lower ? i : n;
      float dot = 0.0f;
      if (t.cs == 1) {
        dot = K::dot(q1 - q0, &t(i, q0), x + q0);
      } else {
        for (std::size_t q = q0; q < q1; ++q) dot += t(i, q) * x[q];
      }
      x[i] = (x[i] - dot) / t(i, i);
    }
  }
}

// Recursive on halves (split at a multiple of trsm_block), so that the update of the second half
// by the first is one multiply of depth n / 2 rather than n / trsm_block multiplies of depth
// trsm_block: lower, T11 X1 = B1, B2 -= T21 X1, T22 X2 = B2; upper, the same from the bottom.
template <class K>
status trsm(cview t, bool lower, std::size_t n, std::size_t nrhs, mview b, const linalg_exec& exec) noexcept {
  if (n == 0 || nrhs == 0) return status{};
  if (n <= trsm_block) {
    solve_block<K>(t, lower, n, nrhs, b);
    return status{};
  }
  const std::size_t half = (n / 2 + trsm_block - 1) / trsm_block * trsm_block;
  const std::size_t n1 = half < n ? half : n / 2, n2 = n - n1;
  status st;
  if (lower) {
    if (!(st = trsm<K>(t, true, n1, nrhs, b, exec))) return st;
    if (!(st = gemm<K>(n2, nrhs, n1, -1.0f, t.sub(n1, 0), b, 1.0f, b.sub(n1, 0), tri_mask::none, exec))) return st;
    return trsm<K>(t.sub(n1, n1), true, n2, nrhs, b.sub(n1, 0), exec);
  }
  if (!(st = trsm<K>(t.sub(n1, n1), false, n2, nrhs, b.sub(n1, 0), exec))) return st;
  if (!(st = gemm<K>(n1, nrhs, n2, -1.0f, t.sub(0, n1), b.sub(n1, 0), 1.0f, b, tri_mask::none, exec))) return st;
  return trsm<K>(t, false, n1, nrhs, b, exec);
}

// Triangular inverse and triangular multiply by recursion on halves, so that almost all of the
// n^3 / 3 flops run in large multiplies (the blocked solves' multiplies have a depth of
// trsm_block only). Blocks of at most trtri_base rows are done directly: the inverse by the
// unblocked column algorithm, a multiply by a triangle through the multiply with the triangle
// copied out, zero-padded, into work.
inline constexpr std::size_t trtri_base = 64;

// The split of n > trtri_base rows: a multiple of trtri_base near the middle.
inline std::size_t trtri_split(std::size_t n) noexcept {
  const std::size_t h = (n / 2 + trtri_base - 1) / trtri_base * trtri_base;
  return h < n ? h : n / 2;
}

// dst[0 .. n) = the n elements of a row of a view from its origin (a block copy when the row is
// contiguous: a strided element loop does not vectorise).
inline void copy_row(cview a, std::size_t n, float* dst) noexcept {
  if (a.cs == 1) {
    std::copy(a.p, a.p + n, dst);
  } else {
    for (std::size_t j = 0; j < n; ++j) dst[j] = a(0, j);
  }
}

// X := alpha * T X (left) or alpha * X T (right), T an n x n upper triangular view (its lower
// triangle never read), X n x m (left) or m x n (right), in place. work: trtri_base * (trtri_base
// + m) floats.
template <class K>
status trmm_upper(bool left, cview t, std::size_t n, std::size_t m, float alpha, mview x, float* work,
                  const linalg_exec& exec) noexcept {
  if (n == 0 || m == 0) return status{};
  if (n <= trtri_base) {
    float* tt = work;                 // n x n, ld n: T's upper triangle, zeros below
    float* xt = work + trtri_base * trtri_base;  // a copy of X, contiguous
    for (std::size_t i = 0; i < n; ++i) {
      std::fill(tt + i * n, tt + i * n + i, 0.0f);
      copy_row(t.sub(i, i), n - i, tt + i * n + i);
    }
    const std::size_t rows = left ? n : m, cols = left ? m : n;  // X
    for (std::size_t i = 0; i < rows; ++i) copy_row(cview(x).sub(i, 0), cols, xt + i * cols);
    if (left) return gemm<K>(n, m, n, alpha, cview{tt, n, 1}, cview{xt, m, 1}, 0.0f, x, tri_mask::none, exec);
    return gemm<K>(m, n, n, alpha, cview{xt, n, 1}, cview{tt, n, 1}, 0.0f, x, tri_mask::none, exec);
  }
  const std::size_t n1 = trtri_split(n), n2 = n - n1;
  status st;
  if (left) {  // [T11 T12; 0 T22] [X1; X2]: X1 = T11 X1 + T12 X2, then X2 = T22 X2
    if (!(st = trmm_upper<K>(true, t, n1, m, alpha, x, work, exec))) return st;
    if (!(st = gemm<K>(n1, m, n2, alpha, t.sub(0, n1), x.sub(n1, 0), 1.0f, x, tri_mask::none, exec))) return st;
    return trmm_upper<K>(true, t.sub(n1, n1), n2, m, alpha, x.sub(n1, 0), work, exec);
  }
  // [X1 X2] [T11 T12; 0 T22]: X2 = X2 T22 + X1 T12, then X1 = X1 T11
  if (!(st = trmm_upper<K>(false, t.sub(n1, n1), n2, m, alpha, x.sub(0, n1), work, exec))) return st;
  if (!(st = gemm<K>(m, n2, n1, alpha, x, t.sub(0, n1), 1.0f, x.sub(0, n1), tri_mask::none, exec))) return st;
  return trmm_upper<K>(false, t, n1, m, alpha, x, work, exec);
}

// U := U^-1 in place on the upper triangle of the n x n view (its diagonal nonzero; the lower
// triangle never read or written). work: trtri_base * (trtri_base + n) floats.
// [A B; 0 C]^-1 = [A^-1, -A^-1 B C^-1; 0, C^-1].
template <class K>
status trtri_upper(mview a, std::size_t n, float* work, const linalg_exec& exec) noexcept {
  if (n <= trtri_base) {
    for (std::size_t j = 0; j < n; ++j) {  // column j of the inverse from the inverted columns before it
      const float d = 1.0f / a(j, j);
      a(j, j) = d;
      for (std::size_t i = 0; i < j; ++i) {  // (A^-1)(0:j, 0:j) a(0:j, j), rows in order: a(p, j), p > i, still old
        float s = 0.0f;
        for (std::size_t q = i; q < j; ++q) s += a(i, q) * a(q, j);
        a(i, j) = s;
      }
      for (std::size_t i = 0; i < j; ++i) a(i, j) = -d * a(i, j);
    }
    return status{};
  }
  const std::size_t n1 = trtri_split(n), n2 = n - n1;
  status st;
  if (!(st = trtri_upper<K>(a, n1, work, exec))) return st;
  if (!(st = trtri_upper<K>(a.sub(n1, n1), n2, work, exec))) return st;
  if (!(st = trmm_upper<K>(false, a.sub(n1, n1), n2, n1, 1.0f, a.sub(0, n1), work, exec))) return st;  // B C^-1
  return trmm_upper<K>(true, a, n1, n2, -1.0f, a.sub(0, n1), work, exec);                           // -A^-1 (B C^-1)
}

// Upper Cholesky factor in place: A = U^T U on the view's upper triangle (the lower one is
// never read or written). Returns bad_argument at the first pivot that is not positive and
// finite.
inline constexpr std::size_t cholesky_block = 64;

inline bool cholesky_unblocked(mview a, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = a(i, i);
    if (!(d > 0.0f) || !std::isfinite(d)) return false;
    const float r = std::sqrt(d);
    a(i, i) = r;
    for (std::size_t j = i + 1; j < n; ++j) a(i, j) /= r;
    for (std::size_t q = i + 1; q < n; ++q) {
      const float f = a(i, q);
      for (std::size_t j = q; j < n; ++j) a(q, j) -= f * a(i, j);
    }
  }
  return true;
}

// Recursive on halves (split at a multiple of cholesky_block): U11 from A11, U12 = U11^-T A12,
// A22 -= U12^T U12 (one multiply of depth n / 2 on the upper triangle), U22 from A22; blocks of
// at most cholesky_block rows unblocked.
template <class K>
status cholesky_upper(mview a, std::size_t n, const linalg_exec& exec) noexcept {
  if (n <= cholesky_block) return cholesky_unblocked(a, n) ? status{} : status{errc::bad_argument};
  const std::size_t half = (n / 2 + cholesky_block - 1) / cholesky_block * cholesky_block;
  const std::size_t n1 = half < n ? half : n / 2, n2 = n - n1;
  status st;
  if (!(st = cholesky_upper<K>(a, n1, exec))) return st;
  if (!(st = trsm<K>(a.t(), true, n1, n2, a.sub(0, n1), exec))) return st;
  if (!(st = gemm<K>(n2, n2, n1, -1.0f, a.sub(0, n1).t(), a.sub(0, n1), 1.0f, a.sub(n1, n1), tri_mask::upper, exec)))
    return st;
  return cholesky_upper<K>(a.sub(n1, n1), n2, exec);
}

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_LINALG_DRIVER_HPP
