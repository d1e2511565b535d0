// lowbit: the one barrier against floating-point contraction in scalar code.
//
// A scalar reference that a SIMD kernel must match bit for bit cannot let the compiler fuse
// a * b + c into one FMA: GCC does so at -O2 whenever the target has FMA (-march=native,
// -mfma) because its default is -ffp-contract=fast, and clang does so under -ffp-contract=fast or
// on. no_contract(a * b) hands the rounded product through an empty asm statement, which the
// compiler cannot see through, so the addition that follows is a separate operation whatever the
// flags. It costs nothing at run time: the value stays in its register. (The AVX2 kernels use the
// vector form, kernels/avx2_common.hpp:no_fma.)
#ifndef LOWBIT_CORE_NO_CONTRACT_HPP
#define LOWBIT_CORE_NO_CONTRACT_HPP

#include "config.hpp"

namespace lowbit {
namespace detail {

template <class T>
LOWBIT_HD inline T no_contract(T v) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__)
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(v));
#elif defined(__aarch64__)
  __asm__("" : "+w"(v));
#else
  __asm__("" : "+m"(v));
#endif
#elif defined(__CUDA_ARCH__)
  volatile T barrier = v;  // device code: nvcc does not fuse through a volatile
  v = barrier;
#endif
  return v;
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_CORE_NO_CONTRACT_HPP
