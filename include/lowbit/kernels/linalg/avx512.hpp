// lowbit: the AVX-512F microkernel of the linear-algebra calls: 12 x 32 single precision (the
// contract is in scalar.hpp beside this file). Taken on the avx2 path when the CPU has AVX-512F
// (core/cpu.hpp: detail::cpu_has_avx512f) unless set_linalg_avx512(false) says otherwise.
//
// 12 rows x 2 zmm = 24 accumulators of the 32 registers; per depth step two loads of B and twelve
// broadcasts of A (folded into the FMAs as embedded broadcasts) for 24 FMAs. kc = 192 keeps the
// 24 KiB B sliver and the 9 KiB A micro-panel in a 48 KiB L1. Each C element is one FMA chain
// in p order, as on the other paths. Not compiled by MSVC (no function-level target attribute).
#ifndef LOWBIT_KERNELS_LINALG_AVX512_HPP
#define LOWBIT_KERNELS_LINALG_AVX512_HPP

#include <cstddef>

#include "../../core/cpu.hpp"

#if LOWBIT_HAS_AVX2_KERNELS && (defined(__GNUC__) || defined(__clang__))
#define LOWBIT_HAS_AVX512_LINALG 1

#include <immintrin.h>

#include "avx2.hpp"

#define LOWBIT_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace lowbit {
namespace kernels {
namespace linalg {

struct avx512_kernel : avx2_kernel {  // the row operations of the solves are the AVX2 ones
  static constexpr std::size_t mr = 12;
  static constexpr std::size_t nr = 32;
  static constexpr std::size_t kc = 192;
  static constexpr std::size_t mc = 144;
  static constexpr std::size_t nc = 4096;

  LOWBIT_TARGET_AVX512 LOWBIT_NOINLINE static void micro(std::size_t k, const float* a, const float* b, float* c,
                                                         std::size_t ldc, std::size_t m_valid, std::size_t n_valid,
                                                         float alpha, float beta) noexcept {
    __m512 acc[12][2];
    for (std::size_t r = 0; r < 12; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::size_t r = 0; r < m_valid; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    for (std::size_t p = 0; p < k; ++p, a += 12, b += 32) {
      _mm_prefetch(reinterpret_cast<const char*>(b + 256), _MM_HINT_T0);
      const __m512 b0 = _mm512_load_ps(b);
      const __m512 b1 = _mm512_load_ps(b + 16);
#if defined(__clang__)
#pragma clang loop unroll(full)
#else
#pragma GCC unroll 12
#endif
      for (std::size_t r = 0; r < 12; ++r) {
        const __m512 av = _mm512_set1_ps(a[r]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
    }
    const __m512 va = _mm512_set1_ps(alpha);
    const __m512 vb = _mm512_set1_ps(beta);
    const bool read_c = beta != 0.0f;
    const unsigned left0 = static_cast<unsigned>(n_valid < 16 ? n_valid : 16);
    const unsigned left1 = static_cast<unsigned>(n_valid > 16 ? n_valid - 16 : 0);
    const __mmask16 m0 = static_cast<__mmask16>((1u << left0) - 1u);
    const __mmask16 m1 = static_cast<__mmask16>((1u << left1) - 1u);
    for (std::size_t r = 0; r < m_valid; ++r) {
      float* row = c + r * ldc;
      __m512 t0 = _mm512_mul_ps(va, acc[r][0]);
      __m512 t1 = _mm512_mul_ps(va, acc[r][1]);
      if (read_c) {
        t0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), t0);
        t1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), t1);
      }
      _mm512_mask_storeu_ps(row, m0, t0);
      _mm512_mask_storeu_ps(row + 16, m1, t1);
    }
  }
};

}  // namespace linalg
}  // namespace kernels
}  // namespace lowbit

#else
#define LOWBIT_HAS_AVX512_LINALG 0
#endif

#endif  // LOWBIT_KERNELS_LINALG_AVX512_HPP
