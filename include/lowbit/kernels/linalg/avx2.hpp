// lowbit: the AVX2 + FMA kernels of the linear-algebra calls: a 6 x 16 single-precision
// microkernel (the contract is in scalar.hpp beside this file) and the row operations of the
// triangular solves.
//
// Why 6 x 16: the accumulators are 6 rows x 2 vectors = 12 of the 16 ymm registers; each step
// loads two vectors of B and broadcasts six values of A for 12 FMAs, so the two load ports carry
// 8 loads per 12 FMAs and the two FMA ports stay busy (the shape BLIS uses on Haswell). The
// accumulator chains are 12 independent FMAs deep, above the FMA latency x throughput (4 x 2 = 8).
// Each C element is one chain of FMAs in p order: the summation order is fixed by the packing,
// not by threads.
#ifndef LOWBIT_KERNELS_LINALG_AVX2_HPP
#define LOWBIT_KERNELS_LINALG_AVX2_HPP

#include <cstddef>

#include "../../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS

#include <immintrin.h>

#include "../avx2_common.hpp"

namespace lowbit {
namespace kernels {
namespace linalg {
namespace avx2_detail {

// Lanes [first, first + 8) of a row of n_valid columns: all-ones where the column exists.
LOWBIT_AVX2_INLINE __m256i column_mask(std::size_t first, std::size_t n_valid) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int left = static_cast<int>(n_valid > first ? n_valid - first : 0);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes);
}

// One row of the tile: c = alpha * acc + beta * c (c read only when beta != 0).
LOWBIT_AVX2_INLINE void store_row(float* c, __m256 acc0, __m256 acc1, std::size_t n_valid, __m256 alpha, __m256 beta,
                                  bool read_c) {
  __m256 t0 = _mm256_mul_ps(alpha, acc0);
  __m256 t1 = _mm256_mul_ps(alpha, acc1);
  if (n_valid == 16) {
    if (read_c) {
      t0 = _mm256_fmadd_ps(beta, _mm256_loadu_ps(c), t0);
      t1 = _mm256_fmadd_ps(beta, _mm256_loadu_ps(c + 8), t1);
    }
    _mm256_storeu_ps(c, t0);
    _mm256_storeu_ps(c + 8, t1);
    return;
  }
  const __m256i m0 = column_mask(0, n_valid);
  const __m256i m1 = column_mask(8, n_valid);
  if (read_c) {
    t0 = _mm256_fmadd_ps(beta, _mm256_maskload_ps(c, m0), t0);
    t1 = _mm256_fmadd_ps(beta, _mm256_maskload_ps(c + 8, m1), t1);
  }
  _mm256_maskstore_ps(c, m0, t0);
  _mm256_maskstore_ps(c + 8, m1, t1);
}


// The lanes below `count` (0..8) set.
LOWBIT_AVX2_INLINE __m256i lane_mask(std::size_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Transposes 8 x 8: r[i] holds row i; on return r[j] holds column j.
LOWBIT_AVX2_INLINE void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// The packing of driver.hpp (pack_a, pack_b: the same layout, zero-padded), vectorised for a
// micro-panel of MR <= 8 rows and a sliver of NR (a multiple of 8) columns. Source element (i, j)
// at src[i * rs + j * cs]. Pure copies: the packed values are those of the portable packing.
template <std::size_t MR>
LOWBIT_TARGET_AVX2 void pack_a(const float* src, std::size_t rs, std::size_t cs, std::size_t rows, std::size_t depth,
                               float* dst) noexcept {
  static_assert(MR <= 8, "one vector per step of a micro-panel");
  const __m256i panel = lane_mask(MR);
  for (std::size_t i0 = 0; i0 < rows; i0 += MR, dst += MR * depth) {
    const std::size_t mr = rows - i0 < MR ? rows - i0 : MR;
    const float* a = src + i0 * rs;
    std::size_t p = 0;
    if (rs == 1) {  // the rows of a step are contiguous
      const __m256i valid = lane_mask(mr);
      for (; p < depth; ++p) _mm256_maskstore_ps(dst + p * MR, panel, _mm256_maskload_ps(a + p * cs, valid));
      continue;
    }
    if (cs == 1) {  // each row contiguous in p: 8 x 8 transposes
      for (; p + 8 <= depth; p += 8) {
        __m256 r[8];
        for (std::size_t i = 0; i < 8; ++i) r[i] = i < mr ? _mm256_loadu_ps(a + i * rs + p) : _mm256_setzero_ps();
        transpose8(r);
        for (std::size_t q = 0; q < 8; ++q) _mm256_maskstore_ps(dst + (p + q) * MR, panel, r[q]);
      }
    }
    for (; p < depth; ++p) {
      float* d = dst + p * MR;
      for (std::size_t i = 0; i < mr; ++i) d[i] = a[i * rs + p * cs];
      for (std::size_t i = mr; i < MR; ++i) d[i] = 0.0f;
    }
  }
}

template <std::size_t NR>
LOWBIT_TARGET_AVX2 void pack_b(const float* src, std::size_t rs, std::size_t cs, std::size_t depth, std::size_t cols,
                               float* dst) noexcept {
  static_assert(NR % 8 == 0, "whole vectors per sliver");
  for (std::size_t j0 = 0; j0 < cols; j0 += NR, dst += NR * depth) {
    const std::size_t nr = cols - j0 < NR ? cols - j0 : NR;
    const float* b = src + j0 * cs;
    if (cs == 1) {  // rows contiguous: vector copies (masked on a partial sliver)
      if (nr == NR) {
        for (std::size_t p = 0; p < depth; ++p)
          for (std::size_t v = 0; v < NR; v += 8) _mm256_storeu_ps(dst + p * NR + v, _mm256_loadu_ps(b + p * rs + v));
      } else {
        for (std::size_t p = 0; p < depth; ++p)
          for (std::size_t v = 0; v < NR; v += 8)
            _mm256_storeu_ps(dst + p * NR + v,
                             _mm256_maskload_ps(b + p * rs + v, lane_mask(nr > v ? (nr - v < 8 ? nr - v : 8) : 0)));
      }
      continue;
    }
    std::size_t p = 0;
    if (rs == 1) {  // columns contiguous in p: 8 x 8 transposes
      for (; p + 8 <= depth; p += 8)
        for (std::size_t v = 0; v < NR; v += 8) {
          __m256 r[8];
          for (std::size_t j = 0; j < 8; ++j) r[j] = v + j < nr ? _mm256_loadu_ps(b + (v + j) * cs + p) : _mm256_setzero_ps();
          transpose8(r);
          for (std::size_t q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * NR + v, r[q]);
        }
    }
    for (; p < depth; ++p) {
      float* d = dst + p * NR;
      for (std::size_t j = 0; j < nr; ++j) d[j] = b[p * rs + j * cs];
      for (std::size_t j = nr; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

}  // namespace avx2_detail

struct avx2_kernel {
  static constexpr std::size_t mr = 6;
  static constexpr std::size_t nr = 16;
  static constexpr std::size_t kc = 256;   // the A micro-panel (6 KiB) stays in L1, B's 16 KiB slivers pass
  static constexpr std::size_t mc = 144;   // a 144 KiB block of A stays in L2 beside a 480 KiB chunk of B
  static constexpr std::size_t nc = 4080;  // a panel of B (4 MiB) stays in L3
  // The driver packs with these (vector copies and 8 x 8 transposes) instead of its portable
  // loops; MR and NR are the calling kernel's (avx512_kernel inherits them).
  static constexpr bool simd_packing = true;
  template <std::size_t MR>
  static void pack_a(const float* a, std::size_t rs, std::size_t cs, std::size_t rows, std::size_t depth,
                     float* dst) noexcept {
    avx2_detail::pack_a<MR>(a, rs, cs, rows, depth, dst);
  }
  template <std::size_t NR>
  static void pack_b(const float* b, std::size_t rs, std::size_t cs, std::size_t depth, std::size_t cols,
                     float* dst) noexcept {
    avx2_detail::pack_b<NR>(b, rs, cs, depth, cols, dst);
  }

  LOWBIT_TARGET_AVX2 LOWBIT_NOINLINE static void micro(std::size_t k, const float* a, const float* b, float* c,
                                                       std::size_t ldc, std::size_t m_valid, std::size_t n_valid,
                                                       float alpha, float beta) noexcept {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    for (std::size_t r = 0; r < m_valid; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
// GCC otherwise hoists the next step's loads above this step's FMAs and spills accumulators to
// the stack (measured: 69 % of peak instead of 85 %); an empty asm that takes the twelve
// accumulators in registers at each step boundary keeps them there.
#if defined(__GNUC__) || defined(__clang__)
#define LOWBIT_LINALG_PIN()                                                                                   \
  __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21), "+x"(c30), "+x"(c31), "+x"(c40), \
          "+x"(c41), "+x"(c50), "+x"(c51))
#else
#define LOWBIT_LINALG_PIN() (void)0
#endif
#define LOWBIT_LINALG_STEP(P)                                         \
  do {                                                                \
    const __m256 b0 = _mm256_load_ps(b + (P) * 16);                   \
    const __m256 b1 = _mm256_load_ps(b + (P) * 16 + 8);               \
    __m256 av = _mm256_broadcast_ss(a + (P) * 6 + 0);                 \
    c00 = _mm256_fmadd_ps(av, b0, c00);                               \
    c01 = _mm256_fmadd_ps(av, b1, c01);                               \
    av = _mm256_broadcast_ss(a + (P) * 6 + 1);                        \
    c10 = _mm256_fmadd_ps(av, b0, c10);                               \
    c11 = _mm256_fmadd_ps(av, b1, c11);                               \
    av = _mm256_broadcast_ss(a + (P) * 6 + 2);                        \
    c20 = _mm256_fmadd_ps(av, b0, c20);                               \
    c21 = _mm256_fmadd_ps(av, b1, c21);                               \
    av = _mm256_broadcast_ss(a + (P) * 6 + 3);                        \
    c30 = _mm256_fmadd_ps(av, b0, c30);                               \
    c31 = _mm256_fmadd_ps(av, b1, c31);                               \
    av = _mm256_broadcast_ss(a + (P) * 6 + 4);                        \
    c40 = _mm256_fmadd_ps(av, b0, c40);                               \
    c41 = _mm256_fmadd_ps(av, b1, c41);                               \
    av = _mm256_broadcast_ss(a + (P) * 6 + 5);                        \
    c50 = _mm256_fmadd_ps(av, b0, c50);                               \
    c51 = _mm256_fmadd_ps(av, b1, c51);                               \
    LOWBIT_LINALG_PIN();                                              \
  } while (0)
    std::size_t p = 0;
    for (; p + 4 <= k; p += 4, a += 24, b += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(b + 512), _MM_HINT_T0);
      LOWBIT_LINALG_STEP(0);
      LOWBIT_LINALG_STEP(1);
      LOWBIT_LINALG_STEP(2);
      LOWBIT_LINALG_STEP(3);
    }
    for (; p < k; ++p, a += 6, b += 16) LOWBIT_LINALG_STEP(0);
#undef LOWBIT_LINALG_STEP
#undef LOWBIT_LINALG_PIN
    const __m256 va = _mm256_set1_ps(alpha);
    const __m256 vb = _mm256_set1_ps(beta);
    const bool read_c = beta != 0.0f;
    using avx2_detail::store_row;
    store_row(c, c00, c01, n_valid, va, vb, read_c);
    if (m_valid > 1) store_row(c + ldc, c10, c11, n_valid, va, vb, read_c);
    if (m_valid > 2) store_row(c + 2 * ldc, c20, c21, n_valid, va, vb, read_c);
    if (m_valid > 3) store_row(c + 3 * ldc, c30, c31, n_valid, va, vb, read_c);
    if (m_valid > 4) store_row(c + 4 * ldc, c40, c41, n_valid, va, vb, read_c);
    if (m_valid > 5) store_row(c + 5 * ldc, c50, c51, n_valid, va, vb, read_c);
  }

  // y[j] -= f * x[j], j < n (one FMA per element).
  LOWBIT_TARGET_AVX2 static void axpy_neg(std::size_t n, float f, const float* x, float* y) noexcept {
    const __m256 vf = _mm256_set1_ps(f);
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
      _mm256_storeu_ps(y + j, _mm256_fnmadd_ps(vf, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
    for (; j < n; ++j) y[j] = _mm_cvtss_f32(_mm_fnmadd_ss(_mm_set_ss(f), _mm_set_ss(x[j]), _mm_set_ss(y[j])));
  }
  // y[j] -= f[q * fs] * x[q * ldx + j] for q = 0 .. n - 1 in turn, j < w: axpy_neg n times, bit
  // for bit, with y held in registers across q (the triangular solves' row updates; a call per q
  // costs more than its 64 FMAs).
  LOWBIT_TARGET_AVX2 static void axpy_neg_rows(std::size_t n, const float* f, std::size_t fs, const float* x,
                                               std::size_t ldx, std::size_t w, float* y) noexcept {
    std::size_t j = 0;
    for (; j + 32 <= w; j += 32) {
      __m256 y0 = _mm256_loadu_ps(y + j), y1 = _mm256_loadu_ps(y + j + 8);
      __m256 y2 = _mm256_loadu_ps(y + j + 16), y3 = _mm256_loadu_ps(y + j + 24);
      for (std::size_t q = 0; q < n; ++q) {
        const __m256 vf = _mm256_set1_ps(f[q * fs]);
        const float* xq = x + q * ldx + j;
        y0 = _mm256_fnmadd_ps(vf, _mm256_loadu_ps(xq), y0);
        y1 = _mm256_fnmadd_ps(vf, _mm256_loadu_ps(xq + 8), y1);
        y2 = _mm256_fnmadd_ps(vf, _mm256_loadu_ps(xq + 16), y2);
        y3 = _mm256_fnmadd_ps(vf, _mm256_loadu_ps(xq + 24), y3);
      }
      _mm256_storeu_ps(y + j, y0);
      _mm256_storeu_ps(y + j + 8, y1);
      _mm256_storeu_ps(y + j + 16, y2);
      _mm256_storeu_ps(y + j + 24, y3);
    }
    for (; j + 8 <= w; j += 8) {
      __m256 y0 = _mm256_loadu_ps(y + j);
      for (std::size_t q = 0; q < n; ++q) y0 = _mm256_fnmadd_ps(_mm256_set1_ps(f[q * fs]), _mm256_loadu_ps(x + q * ldx + j), y0);
      _mm256_storeu_ps(y + j, y0);
    }
    if (j < w)
      for (std::size_t q = 0; q < n; ++q) axpy_neg(w - j, f[q * fs], x + q * ldx + j, y + j);
  }
  // sum of x[j] * y[j], j < n: lane k of two accumulators sums j = 16 i + k (in i order), the
  // lanes are then added in a fixed tree, the tail last, in index order.
  LOWBIT_TARGET_AVX2 static float dot(std::size_t n, const float* x, const float* y) noexcept {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    std::size_t j = 0;
    for (; j + 16 <= n; j += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8), s1);
    }
    const __m256 s = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; j < n; ++j) r = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x[j]), _mm_set_ss(y[j]), _mm_set_ss(r)));
    return r;
  }
  // y[j] /= d, j < n.
  LOWBIT_TARGET_AVX2 static void divide(std::size_t n, float d, float* y) noexcept {
    const __m256 vd = _mm256_set1_ps(d);
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_div_ps(_mm256_loadu_ps(y + j), vd));
    for (; j < n; ++j) y[j] /= d;
  }
};

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_AVX2_KERNELS

#endif  // LOWBIT_KERNELS_LINALG_AVX2_HPP
