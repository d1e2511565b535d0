// lowbit: running a kernel in the IEEE 754 default floating-point environment, whatever the
// caller's MXCSR says.
//
// The integer schemes are defined by IEEE float arithmetic in the default environment (round to
// nearest even, subnormals honoured): one division x / s per element, a product (u - z) * s per
// element, conversions of floats to double. Hardware does exactly that only while MXCSR holds its
// default control bits; flush-to-zero (FTZ) and denormals-are-zero (DAZ), which inference engines
// commonly set, change the result wherever an operand or a result is subnormal, and a directed
// rounding control changes every inexact result. So each bulk entry point that does float
// arithmetic (SIMD and scalar path alike) opens an ieee_scope: it reads MXCSR (STMXCSR, under a nanosecond) and only when the
// control bits differ from the default loads the default for the duration of the call and puts
// the caller's control bits back afterwards (two LDMXCSR, a few nanoseconds). The exception
// flags the kernel raised are kept; exception masks are restored (every exception is masked
// inside, so a kernel never traps).
//
// Ordering: the work a scope protects must not be moved across its boundaries by the compiler.
// The scope's constructor and destructor carry a compiler barrier (a memory clobber): the
// protected work reads its inputs from memory after the first and writes its results before the
// second, and the SIMD work is done by functions with a different target attribute
// (LOWBIT_TARGET_AVX2), which the compiler cannot inline into the function holding the scope.
//
// On targets without MXCSR (non-x86, device code) ieee_scope does nothing: there the default
// environment is the caller's responsibility.
#ifndef LOWBIT_KERNELS_FP_ENV_HPP
#define LOWBIT_KERNELS_FP_ENV_HPP

#include "../core/cpu.hpp"

#if !LOWBIT_DEVICE_COMPILER && (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86))
#define LOWBIT_HAS_MXCSR 1
#else
#define LOWBIT_HAS_MXCSR 0
#endif

#if LOWBIT_HAS_MXCSR

#include <xmmintrin.h>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

// STMXCSR/LDMXCSR need SSE, which x86-64 always has; 32-bit builds get it per function.
#if defined(__GNUC__) || defined(__clang__)
#define LOWBIT_TARGET_SSE __attribute__((target("sse")))
#else
#define LOWBIT_TARGET_SSE
#endif

namespace lowbit {
namespace kernels {

namespace detail {
inline void compiler_barrier() noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __asm__ __volatile__("" ::: "memory");
#elif defined(_MSC_VER)
  _ReadWriteBarrier();
#endif
}
}  // namespace detail

// MXCSR fields: flags 0x003F, DAZ 0x0040, exception masks 0x1F80, rounding control 0x6000,
// FTZ 0x8000. The default control word is 0x1F80: all exceptions masked, round to nearest even,
// no FTZ, no DAZ.
class ieee_scope {
 public:
  static constexpr unsigned control_bits = 0xFFC0u;
  static constexpr unsigned flag_bits = 0x003Fu;
  static constexpr unsigned default_control = 0x1F80u;

  // active == false: does nothing (for callers that decide at run time).
  LOWBIT_TARGET_SSE explicit ieee_scope(bool active = true) noexcept
      : saved_(active ? _mm_getcsr() : default_control) {
    if ((saved_ & control_bits) != default_control) _mm_setcsr(default_control | (saved_ & flag_bits));
    detail::compiler_barrier();
  }
  LOWBIT_TARGET_SSE ~ieee_scope() {
    detail::compiler_barrier();
    if ((saved_ & control_bits) != default_control) _mm_setcsr(saved_ | (_mm_getcsr() & flag_bits));
  }
  ieee_scope(const ieee_scope&) = delete;
  ieee_scope& operator=(const ieee_scope&) = delete;

 private:
  unsigned saved_;
};

// An ieee_scope that leaves no trace: the caller's MXCSR comes back whole, exception flags
// included (one more LDMXCSR per call). For kernels whose float instructions only serve integer
// results (the conversions round subnormal codes with vcvtps2dq), so that they raise no flag the
// scalar path, which is integer code, would not.
class ieee_scope_traceless {
 public:
  LOWBIT_TARGET_SSE explicit ieee_scope_traceless(bool active = true) noexcept
      : active_(active), saved_(active ? _mm_getcsr() : ieee_scope::default_control) {
    if ((saved_ & ieee_scope::control_bits) != ieee_scope::default_control) _mm_setcsr(ieee_scope::default_control);
    detail::compiler_barrier();
  }
  LOWBIT_TARGET_SSE ~ieee_scope_traceless() {
    detail::compiler_barrier();
    if (active_) _mm_setcsr(saved_);
  }
  ieee_scope_traceless(const ieee_scope_traceless&) = delete;
  ieee_scope_traceless& operator=(const ieee_scope_traceless&) = delete;

 private:
  bool active_;
  unsigned saved_;
};

}  // namespace kernels
}  // namespace lowbit

#else  // !LOWBIT_HAS_MXCSR

namespace lowbit {
namespace kernels {
class ieee_scope {
 public:
  explicit ieee_scope(bool = true) noexcept {}
  ieee_scope(const ieee_scope&) = delete;
  ieee_scope& operator=(const ieee_scope&) = delete;
};
class ieee_scope_traceless {
 public:
  explicit ieee_scope_traceless(bool = true) noexcept {}
  ieee_scope_traceless(const ieee_scope_traceless&) = delete;
  ieee_scope_traceless& operator=(const ieee_scope_traceless&) = delete;
};
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_HAS_MXCSR

#endif  // LOWBIT_KERNELS_FP_ENV_HPP
