// lowbit: the AVX-512F microkernel of the linear-algebra calls: 6 x 64 single precision (the
// contract is in scalar.hpp beside this file). Taken on the avx512 path (core/cpu.hpp) unless
// set_linalg_avx512(false) says otherwise.
//
// 6 rows x 4 zmm = 24 accumulators of the 32 registers; per depth step four loads of B and six
// broadcasts of A for 24 FMAs (10 loads, the two load ports half busy while the two FMA ports are
// full). The driver keeps the A micro-panel (6 x 256 floats, 6 KiB) in L1 and streams the
// 64 KiB slivers of B past it from L2 (a chunk of 512 columns, 512 KiB, beside the 144 KiB
// block of A): the vector operand, 256 bytes a step, comes from L2, which the L2 hardware
// prefetcher and the prefetch below keep ahead. Measured on an Ice Lake server core against
// 12 x 32 (24 accumulators too, B in L1, A streamed), 8 x 48 and 14 x 32 in docs/linalg.md.
// Each C element is one FMA chain in p order, as on the other paths. Not compiled by MSVC (no
// function-level target attribute).
#ifndef LOWBIT_KERNELS_LINALG_AVX512_HPP
#define LOWBIT_KERNELS_LINALG_AVX512_HPP

#include <cstddef>

#include "../../core/cpu.hpp"

#if LOWBIT_HAS_AVX512_KERNELS
#define LOWBIT_HAS_AVX512_LINALG 1

#include <immintrin.h>

#include "avx2.hpp"


namespace lowbit {
namespace kernels {
namespace linalg {

// The row operations of the solves and the packing (avx2.hpp, with this kernel's mr and nr) are
// the AVX2 ones.
struct avx512_kernel : avx2_kernel {
  static constexpr std::size_t mr = 6;
  static constexpr std::size_t nr = 64;
  static constexpr std::size_t kc = 256;   // the A micro-panel, 6 KiB, in L1; a B sliver 64 KiB
  static constexpr std::size_t mc = 144;   // a 144 KiB block of A in L2 beside a 512 KiB chunk of B
  static constexpr std::size_t nc = 4096;  // a panel of B (4 MiB) in L3

  // One row of the tile: c = alpha * acc + beta * c on the columns of the masks (c read only when
  // beta != 0).
  LOWBIT_TARGET_AVX512 static inline __attribute__((always_inline)) void store_row(
      float* row, __m512 x0, __m512 x1, __m512 x2, __m512 x3, __m512 va, __m512 vb, const __mmask16* m, bool read_c) {
    __m512 t[4] = {_mm512_mul_ps(va, x0), _mm512_mul_ps(va, x1), _mm512_mul_ps(va, x2), _mm512_mul_ps(va, x3)};
    for (std::size_t v = 0; v < 4; ++v) {
      if (read_c) t[v] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m[v], row + v * 16), t[v]);
      _mm512_mask_storeu_ps(row + v * 16, m[v], t[v]);
    }
  }

  LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE static void micro(std::size_t k, const float* a, const float* b, float* c,
                                                         std::size_t ldc, std::size_t m_valid, std::size_t n_valid,
                                                         float alpha, float beta) noexcept {
    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps(), c02 = _mm512_setzero_ps(), c03 = _mm512_setzero_ps();
    __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps(), c12 = _mm512_setzero_ps(), c13 = _mm512_setzero_ps();
    __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps(), c22 = _mm512_setzero_ps(), c23 = _mm512_setzero_ps();
    __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps(), c32 = _mm512_setzero_ps(), c33 = _mm512_setzero_ps();
    __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps(), c42 = _mm512_setzero_ps(), c43 = _mm512_setzero_ps();
    __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps(), c52 = _mm512_setzero_ps(), c53 = _mm512_setzero_ps();
    for (std::size_t r = 0; r < m_valid; ++r) {  // the tile of C, read or written after the loop
      const char* row = reinterpret_cast<const char*>(c + r * ldc);
      _mm_prefetch(row, _MM_HINT_T0);
      _mm_prefetch(row + 64, _MM_HINT_T0);
      _mm_prefetch(row + 128, _MM_HINT_T0);
      _mm_prefetch(row + 192, _MM_HINT_T0);
    }
#define LOWBIT_LINALG_ROW(R)                              \
  do {                                                    \
    const __m512 av = _mm512_set1_ps(a[R]);               \
    c##R##0 = _mm512_fmadd_ps(av, b0, c##R##0);           \
    c##R##1 = _mm512_fmadd_ps(av, b1, c##R##1);           \
    c##R##2 = _mm512_fmadd_ps(av, b2, c##R##2);           \
    c##R##3 = _mm512_fmadd_ps(av, b3, c##R##3);           \
  } while (0)
    for (std::size_t p = 0; p < k; ++p, a += 6, b += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(b + 256), _MM_HINT_T0);  // 4 steps ahead
      const __m512 b0 = _mm512_load_ps(b);
      const __m512 b1 = _mm512_load_ps(b + 16);
      const __m512 b2 = _mm512_load_ps(b + 32);
      const __m512 b3 = _mm512_load_ps(b + 48);
      LOWBIT_LINALG_ROW(0);
      LOWBIT_LINALG_ROW(1);
      LOWBIT_LINALG_ROW(2);
      LOWBIT_LINALG_ROW(3);
      LOWBIT_LINALG_ROW(4);
      LOWBIT_LINALG_ROW(5);
    }
#undef LOWBIT_LINALG_ROW
    const __m512 va = _mm512_set1_ps(alpha);
    const __m512 vb = _mm512_set1_ps(beta);
    const bool read_c = beta != 0.0f;
    __mmask16 m[4];
    for (std::size_t v = 0; v < 4; ++v) {
      const std::size_t lo = v * 16;
      const unsigned left = static_cast<unsigned>(n_valid <= lo ? 0 : n_valid - lo >= 16 ? 16 : n_valid - lo);
      m[v] = static_cast<__mmask16>((1u << left) - 1u);
    }
    store_row(c, c00, c01, c02, c03, va, vb, m, read_c);
    if (m_valid > 1) store_row(c + ldc, c10, c11, c12, c13, va, vb, m, read_c);
    if (m_valid > 2) store_row(c + 2 * ldc, c20, c21, c22, c23, va, vb, m, read_c);
    if (m_valid > 3) store_row(c + 3 * ldc, c30, c31, c32, c33, va, vb, m, read_c);
    if (m_valid > 4) store_row(c + 4 * ldc, c40, c41, c42, c43, va, vb, m, read_c);
    if (m_valid > 5) store_row(c + 5 * ldc, c50, c51, c52, c53, va, vb, m, read_c);
  }
};

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#else
#define LOWBIT_HAS_AVX512_LINALG 0
#endif

#endif  // LOWBIT_KERNELS_LINALG_AVX512_HPP
