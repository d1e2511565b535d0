// lowbit: which instruction set the bulk operations use, decided at run time.
//
// The kernels under kernels/ exist in a portable scalar version (the reference that defines every
// result) and, on x86-64, AVX2 and AVX-512 versions compiled with function-level target
// attributes, so a program built with the compiler's default flags still runs the SIMD code on a
// CPU that has it. The CPU is queried once; every bulk call then reads one atomic. An operation
// without an AVX-512 kernel runs its AVX2 one on the avx512 path (each path can run everything
// the one below it can).
//
//   lowbit::active_isa()            the path bulk calls take now
//   lowbit::set_isa(lowbit::isa::scalar)    force the reference path (process-wide)
//   lowbit::scoped_isa s{lowbit::isa::avx2};    the AVX2 kernels until s goes out of scope
//   LOWBIT_FORCE_ISA=scalar|avx2|avx512  environment variable, read once: start on at most that
//                                   path (the detected one when the CPU lacks it)
//   LOWBIT_FORCE_SCALAR=1           the same as LOWBIT_FORCE_ISA=scalar (kept for old scripts)
//   LOWBIT_NO_VBMI=1                on the avx512 path, leave AVX-512 VBMI unused (read once): the
//                                   kernels that have a VBMI form (vpermi2b byte tables) take
//                                   their F/BW/DQ/VL form, as on a CPU without VBMI
//   LOWBIT_NO_AVX512BF16=1          the same for AVX512_BF16 (vcvtne2ps2bf16): float32 ->
//                                   bfloat16 encoding and the NVFP4, scaled FP8 and integer
//                                   dequantizers into bfloat16 take their F/BW/DQ/VL form
//
// Compile-time switches (define before including any lowbit header, the same in every TU):
//   LOWBIT_SCALAR_ONLY   never compile or run SIMD code.
//   LOWBIT_AVX2_ONLY     assume AVX2+FMA+F16C without asking the CPU (for builds with -mavx2;
//                        set_isa(isa::scalar) still works); the AVX-512 kernels are not compiled.
// Under nvcc/hipcc (host and device passes alike) and on non-x86 targets everything is scalar.
// MSVC has no function-level target attribute: there the AVX2 kernels are compiled only under
// /arch:AVX2 (which defines __AVX2__), and then used without a CPU check.
#ifndef LOWBIT_CORE_CPU_HPP
#define LOWBIT_CORE_CPU_HPP

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "config.hpp"

#if defined(LOWBIT_SCALAR_ONLY) && defined(LOWBIT_AVX2_ONLY)
#error "lowbit: LOWBIT_SCALAR_ONLY and LOWBIT_AVX2_ONLY exclude each other"
#endif

// LOWBIT_HAS_AVX2_KERNELS: 1 when this translation unit compiles the AVX2 kernels.
// LOWBIT_TARGET_AVX2: the attribute every function that uses AVX2 intrinsics carries.
// LOWBIT_AVX2_ASSUMED: 1 when no run-time check is made.
// LOWBIT_HAS_AVX512_KERNELS, LOWBIT_TARGET_AVX512: the same for the AVX-512 kernels (F, BW, DQ,
// VL, with AVX2, FMA and F16C), always behind a run-time check; GCC and clang only.
#if !defined(LOWBIT_SCALAR_ONLY) && !LOWBIT_DEVICE_COMPILER && \
    (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86))
#if defined(__GNUC__) || defined(__clang__)
#define LOWBIT_HAS_AVX2_KERNELS 1
#define LOWBIT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#if defined(LOWBIT_AVX2_ONLY)
#define LOWBIT_AVX2_ASSUMED 1
#endif
#elif defined(_MSC_VER) && defined(__AVX2__)
#define LOWBIT_HAS_AVX2_KERNELS 1
#define LOWBIT_TARGET_AVX2
#define LOWBIT_AVX2_ASSUMED 1
#endif
#endif

#ifndef LOWBIT_HAS_AVX2_KERNELS
#define LOWBIT_HAS_AVX2_KERNELS 0
#endif
#if LOWBIT_HAS_AVX2_KERNELS && !defined(LOWBIT_AVX2_ASSUMED) && (defined(__GNUC__) || defined(__clang__))
#define LOWBIT_HAS_AVX512_KERNELS 1
#define LOWBIT_TARGET_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")))
// The helpers of the AVX-512 kernels: inlined into their callers when optimising (as
// LOWBIT_AVX2_INLINE, kernels/avx2_common.hpp).
#if defined(__OPTIMIZE__)
#define LOWBIT_AVX512_INLINE LOWBIT_TARGET_AVX512 inline __attribute__((always_inline))
#else
#define LOWBIT_AVX512_INLINE LOWBIT_TARGET_AVX512 inline
#endif
// The kernels that also use AVX-512 VBMI (Intel Ice Lake, AMD Zen 4 and later), behind
// detail::use_avx512_vbmi().
#define LOWBIT_TARGET_AVX512_VBMI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))
#if defined(__OPTIMIZE__)
#define LOWBIT_AVX512_VBMI_INLINE LOWBIT_TARGET_AVX512_VBMI inline __attribute__((always_inline))
#else
#define LOWBIT_AVX512_VBMI_INLINE LOWBIT_TARGET_AVX512_VBMI inline
#endif
// The kernels that also use AVX512_BF16 (Intel Cooper Lake, Sapphire Rapids, AMD Zen 4 and
// later), behind detail::use_avx512_bf16().
#define LOWBIT_TARGET_AVX512_BF16 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#if defined(__OPTIMIZE__)
#define LOWBIT_AVX512_BF16_INLINE LOWBIT_TARGET_AVX512_BF16 inline __attribute__((always_inline))
#else
#define LOWBIT_AVX512_BF16_INLINE LOWBIT_TARGET_AVX512_BF16 inline
#endif
// The kernels that use both (Zen 4, Sapphire Rapids), behind use_avx512_vbmi() and
// use_avx512_bf16(); they may call the helpers of either.
#define LOWBIT_TARGET_AVX512_VBMI_BF16 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512bf16")))
#else
#define LOWBIT_HAS_AVX512_KERNELS 0
#endif

// GCC 12 reports -Wmaybe-uninitialized and -Wuninitialized inside its own AVX-512 headers (the
// placeholders of _mm512_undefined_*, GCC bug 105593, fixed in GCC 13) once they are inlined into
// code outside a system header; every lowbit header that uses AVX-512 intrinsics sits between
// these two.
#if defined(__GNUC__) && !defined(__clang__)
#define LOWBIT_AVX512_WARNINGS_BEGIN                                                         \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define LOWBIT_AVX512_WARNINGS_END _Pragma("GCC diagnostic pop")
#else
#define LOWBIT_AVX512_WARNINGS_BEGIN
#define LOWBIT_AVX512_WARNINGS_END
#endif
#if LOWBIT_HAS_AVX2_KERNELS && !LOWBIT_AVX2_ASSUMED
#include <cpuid.h>  // the compiler's CPUID wrapper (GCC and clang)
#endif
#ifndef LOWBIT_AVX2_ASSUMED
#define LOWBIT_AVX2_ASSUMED 0
#endif

namespace lowbit {

// An instruction-set path of the bulk kernels. Ordered: a later one can run everything an
// earlier one can. Reserved for later: neon (AArch64) as a separate branch of the same scheme.
enum class isa : std::uint8_t {
  scalar,  // portable C++, the reference
  avx2,    // x86-64 AVX2 + FMA + F16C (Intel Haswell, AMD Zen and later)
  avx512   // avx2 + AVX-512 F, BW, DQ, VL (Intel Skylake-SP, AMD Zen 4 and later)
};

constexpr const char* isa_name(isa i) noexcept {
  switch (i) {
    case isa::scalar: return "scalar";
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
  }
  return "unknown";
}

namespace detail {

// The best path this build and this CPU support, ignoring overrides. Queried once.
inline isa query_cpu_isa() noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
#if LOWBIT_AVX2_ASSUMED
  return isa::avx2;
#else
  // libgcc / compiler-rt check that the OS saves the YMM state (XGETBV) before reporting AVX2.
  // clang 14 knows no "f16c" feature string, so F16C comes from CPUID leaf 1, ECX bit 29.
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  if (!avx2) return isa::scalar;
  // The same checks of the ZMM and opmask state for the AVX-512 features.
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 && LOWBIT_HAS_AVX512_KERNELS ? isa::avx512 : isa::avx2;
#endif
#else
  return isa::scalar;
#endif
}

inline isa cpu_isa() noexcept {
  static const isa best = query_cpu_isa();
  return best;
}

// The ceiling the environment sets: LOWBIT_FORCE_ISA (a path name), or LOWBIT_FORCE_SCALAR set
// to anything but "" or "0" (scalar). -1 when neither is set; a name not listed is ignored.
inline const char* environment_value(const char* name) noexcept {
#if defined(_MSC_VER)
#pragma warning(push)
#pragma warning(disable : 4996)  // getenv: we only read, once
#endif
  return std::getenv(name);
#if defined(_MSC_VER)
#pragma warning(pop)
#endif
}

inline bool same_text(const char* a, const char* b) noexcept {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

// Whether a flag variable is set: to anything but "" or "0".
inline bool environment_flag(const char* name) noexcept {
  const char* v = environment_value(name);
  return v != nullptr && v[0] != '\0' && !(v[0] == '0' && v[1] == '\0');
}

inline int isa_forced_by_environment() noexcept {
  if (const char* v = environment_value("LOWBIT_FORCE_ISA")) {
    for (int i = 0; i <= static_cast<int>(isa::avx512); ++i)
      if (same_text(v, isa_name(static_cast<isa>(i)))) return i;
  }
  if (environment_flag("LOWBIT_FORCE_SCALAR")) return static_cast<int>(isa::scalar);
  return -1;
}

inline isa default_isa() noexcept {
  static const isa d = [] {
    const int forced = isa_forced_by_environment();
    const isa best = cpu_isa();
    return forced >= 0 && forced < static_cast<int>(best) ? static_cast<isa>(forced) : best;
  }();
  return d;
}

// -1: no override (use default_isa()); otherwise the isa's value. Constant-initialised.
inline std::atomic<int> isa_override{-1};

}  // namespace detail

// The best path this build and this CPU support (what active_isa() is without overrides and
// without LOWBIT_FORCE_ISA / LOWBIT_FORCE_SCALAR).
inline isa detected_isa() noexcept { return detail::cpu_isa(); }

// Whether bulk operations can run on path i here.
inline bool is_supported(isa i) noexcept { return static_cast<int>(i) <= static_cast<int>(detail::cpu_isa()); }

// The path bulk operations take now.
inline isa active_isa() noexcept {
  const int v = detail::isa_override.load(std::memory_order_relaxed);
  return v < 0 ? detail::default_isa() : static_cast<isa>(v);
}

// Selects the path for the whole process and returns the previous one. A path this build or CPU
// does not support selects the best supported one instead (so set_isa(isa::avx512) is "the
// fastest available", never a crash). Calls in flight on other threads finish on the path they started.
inline isa set_isa(isa i) noexcept {
  const isa previous = active_isa();
  const isa chosen = is_supported(i) ? i : detail::cpu_isa();
  detail::isa_override.store(static_cast<int>(chosen), std::memory_order_relaxed);
  return previous;
}

// Back to the default: the detected path, or the one LOWBIT_FORCE_ISA / LOWBIT_FORCE_SCALAR set.
inline void reset_isa() noexcept { detail::isa_override.store(-1, std::memory_order_relaxed); }

// Selects a path until the end of the scope, then restores the previous selection (an override
// or the default). Not thread-local: meant for tests and benchmarks that compare paths.
class scoped_isa {
 public:
  explicit scoped_isa(isa i) noexcept : saved_(detail::isa_override.load(std::memory_order_relaxed)) {
    (void)set_isa(i);
  }
  ~scoped_isa() { detail::isa_override.store(saved_, std::memory_order_relaxed); }
  scoped_isa(const scoped_isa&) = delete;
  scoped_isa& operator=(const scoped_isa&) = delete;

 private:
  int saved_;
};

namespace detail {
// True when a bulk call should take the AVX2 kernels (or, on the avx512 path, the AVX-512 ones
// where an operation has them): they are compiled in and selected.
inline bool use_avx2() noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  return active_isa() >= isa::avx2;
#else
  return false;
#endif
}

// True when a bulk call should take its AVX-512 kernel, where it has one.
inline bool use_avx512() noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  return active_isa() >= isa::avx512;
#else
  return false;
#endif
}

// Whether the CPU has AVX-512 VBMI and LOWBIT_NO_VBMI does not forbid it. Queried once.
inline bool vbmi_allowed() noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  static const bool allowed =
      cpu_isa() >= isa::avx512 && __builtin_cpu_supports("avx512vbmi") && !environment_flag("LOWBIT_NO_VBMI");
  return allowed;
#else
  return false;
#endif
}

// True when a bulk call on the avx512 path should take its VBMI form, where it has one.
inline bool use_avx512_vbmi() noexcept { return use_avx512() && vbmi_allowed(); }

// Whether the CPU has AVX512_BF16 and LOWBIT_NO_AVX512BF16 does not forbid it. Queried once.
inline bool avx512_bf16_allowed() noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  static const bool allowed = cpu_isa() >= isa::avx512 && __builtin_cpu_supports("avx512bf16") &&
                              !environment_flag("LOWBIT_NO_AVX512BF16");
  return allowed;
#else
  return false;
#endif
}

// True when a bulk call on the avx512 path should take its AVX512_BF16 form, where it has one.
inline bool use_avx512_bf16() noexcept { return use_avx512() && avx512_bf16_allowed(); }
}  // namespace detail

}  // namespace lowbit

#endif  // LOWBIT_CORE_CPU_HPP
