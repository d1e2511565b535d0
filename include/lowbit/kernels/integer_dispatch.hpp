// lowbit: which kernels the integer schemes run: the scalar reference or the AVX2 kernels,
// chosen at run time by lowbit::active_isa() (core/cpu.hpp). Both give the same bytes; the AVX2
// ones do so whatever the caller's MXCSR (kernels/fp_env.hpp).
//
//   lowbit::active_int_kernels()   the int_kernels table bulk calls use by default:
//                                  kernels::avx2::int_table() on the AVX2 path, else
//                                  reference_int_kernels()
//
// The rest is for schemes/integer.hpp and schemes/layouts.hpp: whole-matrix paths that replace
// the per-group loop when the table in use is the AVX2 one, and the ggml block kernels. Each
// returns what it could not do, and the caller finishes with the scalar code.
#ifndef LOWBIT_KERNELS_INTEGER_DISPATCH_HPP
#define LOWBIT_KERNELS_INTEGER_DISPATCH_HPP

#include <cstddef>
#include <cstdint>

#include "../core/cpu.hpp"
#include "../core/status.hpp"
#include "avx2_integer.hpp"
#include "fp_env.hpp"
#include "int_group.hpp"

namespace lowbit {

// The int_kernels table for the path active_isa() selects now.
inline const int_kernels& active_int_kernels() noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) return kernels::avx2::int_table();
#endif
  return reference_int_kernels();
}

namespace kernels {

// Whether k is a SIMD table, so that the whole-matrix paths below may stand in for the
// per-group loop run with it (a caller passing reference_int_kernels() gets the reference loop).
inline bool int_fused(const int_kernels& k) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  return &k == &avx2::int_table();
#else
  (void)k;
  return false;
#endif
}

// Holds the IEEE default floating-point environment (kernels/fp_env.hpp) for a whole bulk call,
// with either table, so that the scale and zero-point arithmetic and the reference kernels see the
// same environment as the SIMD kernels: the result does not depend on the caller's MXCSR.
class int_env {
 public:
  explicit int_env(const int_kernels&) noexcept {}

 private:
  ieee_scope scope_;
};

// Groups [first, last) of a symmetric minmax quantization; returns the first group left to the
// caller (see avx2::quantize_symmetric), which is `first` when no SIMD path is compiled in.
inline std::size_t quantize_symmetric(const int_symmetric_job& j, std::size_t first, std::size_t last) noexcept {
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
#if LOWBIT_HAS_AVX2_KERNELS
  return avx2::dequantize_groups(j, first, last);
#else
  (void)j;
  (void)last;
  return first;
#endif
}

// ggml blocks: true when the active path ran the SIMD kernel (*e then holds its result; on an
// error the failing block and those after it are unwritten, as the scalar functions leave them).
inline bool try_ggml_quantize_q4_0(const float* x, std::size_t blocks, void* y, errc* e) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) {
    *e = avx2::ggml_quantize_q4_0(x, blocks, static_cast<unsigned char*>(y));
    return true;
  }
#endif
  (void)x, (void)blocks, (void)y, (void)e;
  return false;
}
inline bool try_ggml_dequantize_q4_0(const void* x, std::size_t blocks, float* y) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) {
    avx2::ggml_dequantize_q4_0(static_cast<const unsigned char*>(x), blocks, y);
    return true;
  }
#endif
  (void)x, (void)blocks, (void)y;
  return false;
}
inline bool try_ggml_quantize_q8_0(const float* x, std::size_t blocks, void* y, errc* e) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) {
    *e = avx2::ggml_quantize_q8_0(x, blocks, static_cast<unsigned char*>(y));
    return true;
  }
#endif
  (void)x, (void)blocks, (void)y, (void)e;
  return false;
}
inline bool try_ggml_dequantize_q8_0(const void* x, std::size_t blocks, float* y) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) {
    avx2::ggml_dequantize_q8_0(static_cast<const unsigned char*>(x), blocks, y);
    return true;
  }
#endif
  (void)x, (void)blocks, (void)y;
  return false;
}

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_INTEGER_DISPATCH_HPP
