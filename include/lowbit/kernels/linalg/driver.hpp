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
              for (std::size_t r = 0; r < mr; ++r)
                for (std::size_t j = 0; j < nr; ++j)
                  if (in_mask(mask, ig + r, jg + j)) {
                    float& x = ct[r * ldc + j];
                    x = beta_now == 0.0f ? tile[r * K::nr + j] : tile[r * K::nr + j] + beta_now * x;
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
inline constexpr std::size_t trsm_block = 128;

template <class K>
void solve_block(cview t, bool lower, std::size_t n, std::size_t nrhs, mview b) noexcept {
  if (b.cs == 1) {  // rows of B are contiguous: row operations
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t i = lower ? s : n - 1 - s;
      float* row = &b(i, 0);
      if (lower) {
        for (std::size_t q = 0; q < i; ++q) K::axpy_neg(nrhs, t(i, q), &b(q, 0), row);
      } else {
        for (std::size_t q = i + 1; q < n; ++q) K::axpy_neg(nrhs, t(i, q), &b(q, 0), row);
      }
      K::divide(nrhs, t(i, i), row);
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

template <class K>
status trsm(cview t, bool lower, std::size_t n, std::size_t nrhs, mview b, const linalg_exec& exec) noexcept {
  if (n == 0 || nrhs == 0) return status{};
  for (std::size_t s = 0; s < n; s += trsm_block) {
    const std::size_t nb = n - s < trsm_block ? n - s : trsm_block;
    const std::size_t i0 = lower ? s : n - s - nb;  // the block solved now
    solve_block<K>(t.sub(i0, i0), lower, nb, nrhs, b.sub(i0, 0));
    if (lower && i0 + nb < n) {
      const std::size_t rest = n - i0 - nb;
      const status st = gemm<K>(rest, nrhs, nb, -1.0f, t.sub(i0 + nb, i0), b.sub(i0, 0), 1.0f, b.sub(i0 + nb, 0),
                                tri_mask::none, exec);
      if (!st) return st;
    } else if (!lower && i0 > 0) {
      const status st =
          gemm<K>(i0, nrhs, nb, -1.0f, t.sub(0, i0), b.sub(i0, 0), 1.0f, b.sub(0, 0), tri_mask::none, exec);
      if (!st) return st;
    }
  }
  return status{};
}

// Upper Cholesky factor in place: A = U^T U on the view's upper triangle (the lower one is
// never read or written). Returns bad_argument at the first pivot that is not positive and
// finite.
inline constexpr std::size_t cholesky_block = 128;

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

template <class K>
status cholesky_upper(mview a, std::size_t n, const linalg_exec& exec) noexcept {
  for (std::size_t j0 = 0; j0 < n; j0 += cholesky_block) {
    const std::size_t jb = n - j0 < cholesky_block ? n - j0 : cholesky_block;
    if (!cholesky_unblocked(a.sub(j0, j0), jb)) return errc::bad_argument;
    const std::size_t r0 = j0 + jb;
    if (r0 == n) break;
    const std::size_t rest = n - r0;
    // U12 = U11^-T A12, then A22 -= U12^T U12 on the upper triangle.
    status st = trsm<K>(a.sub(j0, j0).t(), true, jb, rest, a.sub(j0, r0), exec);
    if (!st) return st;
    st = gemm<K>(rest, rest, jb, -1.0f, a.sub(j0, r0).t(), a.sub(j0, r0), 1.0f, a.sub(r0, r0), tri_mask::upper, exec);
    if (!st) return st;
  }
  return status{};
}

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_LINALG_DRIVER_HPP
