// lowbit: which kernels the integer schemes run (internal): the scalar reference, the AVX2 or
// the AVX-512 kernels, chosen at run time by lowbit::active_isa() (core/cpu.hpp). All give the
// same bytes.
//
//   kernels::active_int_kernels()   the int_kernels table of the active path:
//                                   avx2::int_table() on the AVX2 and AVX-512 paths (the
//                                   per-group table has no AVX-512 twin), else
//                                   reference_int_kernels()
//
// The rest is for schemes/integer.hpp: whole-matrix paths that replace the per-group loop on the
// SIMD paths: avx512.hpp's on the avx512 path, the AVX2 ones on the avx2 path. Each returns the
// first group it could not do, and the caller finishes with the scalar code. The caller holds the
// IEEE scope (kernels/fp_env.hpp) around all of them.
#ifndef LOWBIT_KERNELS_INTEGER_DISPATCH_HPP
#define LOWBIT_KERNELS_INTEGER_DISPATCH_HPP

#include <cstddef>
#include <cstdint>

#include "../../core/cpu.hpp"
#include "../fp_env.hpp"
#include "avx2_affine.hpp"
#include "avx2_dequantize.hpp"
#include "avx2_symmetric.hpp"
#include "avx2_table.hpp"
#include "avx512.hpp"
#include "jobs.hpp"
#include "reference.hpp"

namespace lowbit {
namespace kernels {

// The int_kernels table for the path active_isa() selects now.
inline const int_kernels& active_int_kernels() noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) return avx2::int_table();
#endif
  return reference_int_kernels();
}

// Whether k is a SIMD table, so that the whole-matrix paths below may stand in for the
// per-group loop run with it.
inline bool int_fused(const int_kernels& k) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  return &k == &avx2::int_table();
#else
  (void)k;
  return false;
#endif
}

// Groups [first, last) of a symmetric minmax quantization; returns the first group left to the
// caller (see avx2::quantize_symmetric), which is `first` when no SIMD path is compiled in.
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::quantize_symmetric(j, first, last);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  return avx2::quantize_symmetric(j, first, last);
#else
  (void)j;
  (void)last;
  return first;
#endif
}

// Groups [first, last) of an affine minmax quantization; the same contract (avx2::quantize_affine).
inline std::size_t quantize_affine(const int_affine_job& j, std::size_t first, std::size_t last) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::quantize_affine(j, first, last);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  return avx2::quantize_affine(j, first, last);
#else
  (void)j;
  (void)last;
  return first;
#endif
}

// Groups [first, last) of a dequantization; returns the first group left to the caller.
inline std::size_t dequantize_groups(const int_dequantize_job& j, std::size_t first, std::size_t last) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::dequantize_groups(j, first, last);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  return avx2::dequantize_groups(j, first, last);
#else
  (void)j;
  (void)last;
  return first;
#endif
}

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_INTEGER_DISPATCH_HPP
