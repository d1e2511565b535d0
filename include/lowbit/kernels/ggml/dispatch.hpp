// lowbit: which ggml block kernels run: the AVX-512 ones (kernels/ggml/avx512.hpp) on the avx512
// path, the AVX2 ones (kernels/ggml/avx2.hpp) on the avx2 path, else the scalar reference
// (kernels/ggml/reference.hpp).
// All give the same bytes. Internal: schemes/layouts/ggml.hpp checks the arguments and holds the
// IEEE scope (kernels/fp_env.hpp) around these calls.
#ifndef LOWBIT_KERNELS_GGML_DISPATCH_HPP
#define LOWBIT_KERNELS_GGML_DISPATCH_HPP

#include <cstddef>

#include "../../core/cpu.hpp"
#include "../../core/status.hpp"
#include "avx2.hpp"
#include "avx512.hpp"
#include "reference.hpp"

namespace lowbit {
namespace kernels {

inline errc ggml_quantize_q4_0(const float* x, std::size_t blocks, ggml_block_q4_0* y) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::ggml::quantize_q4_0(x, blocks, y);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) return avx2::ggml::quantize_q4_0(x, blocks, y);
#endif
  return ggml_ref::quantize_q4_0(x, blocks, y);
}
inline void ggml_dequantize_q4_0(const ggml_block_q4_0* x, std::size_t blocks, float* y) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::ggml::dequantize_q4_0(x, blocks, y);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) return avx2::ggml::dequantize_q4_0(x, blocks, y);
#endif
  ggml_ref::dequantize_q4_0(x, blocks, y);
}
inline errc ggml_quantize_q8_0(const float* x, std::size_t blocks, ggml_block_q8_0* y) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::ggml::quantize_q8_0(x, blocks, y);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) return avx2::ggml::quantize_q8_0(x, blocks, y);
#endif
  return ggml_ref::quantize_q8_0(x, blocks, y);
}
inline void ggml_dequantize_q8_0(const ggml_block_q8_0* x, std::size_t blocks, float* y) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (lowbit::detail::use_avx512()) return avx512::ggml::dequantize_q8_0(x, blocks, y);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (lowbit::detail::use_avx2()) return avx2::ggml::dequantize_q8_0(x, blocks, y);
#endif
  ggml_ref::dequantize_q8_0(x, blocks, y);
}

}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_GGML_DISPATCH_HPP
