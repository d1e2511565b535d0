// lowbit: configuration macros shared by every header.
#ifndef LOWBIT_CORE_CONFIG_HPP
#define LOWBIT_CORE_CONFIG_HPP

// The version has one home: these three lines. CMakeLists.txt reads them (keep the format:
// "#define LOWBIT_VERSION_<PART> <number>") for project(VERSION) and the package files.
#define LOWBIT_VERSION_MAJOR 0
#define LOWBIT_VERSION_MINOR 1
#define LOWBIT_VERSION_PATCH 0
#define LOWBIT_VERSION (LOWBIT_VERSION_MAJOR * 10000 + LOWBIT_VERSION_MINOR * 100 + LOWBIT_VERSION_PATCH)

// LOWBIT_HD marks the scalar codecs usable from CUDA device code.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define LOWBIT_HD __host__ __device__
#define LOWBIT_DEVICE_COMPILER 1
#else
#define LOWBIT_HD
#define LOWBIT_DEVICE_COMPILER 0
#endif

// constexpr bit casts need __builtin_bit_cast (C++17 has no std::bit_cast).
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define LOWBIT_HAS_BUILTIN_BIT_CAST 1
#endif
#endif
#ifndef LOWBIT_HAS_BUILTIN_BIT_CAST
#define LOWBIT_HAS_BUILTIN_BIT_CAST 0
#endif

#if LOWBIT_HAS_BUILTIN_BIT_CAST
#define LOWBIT_CONSTEXPR_BITCAST constexpr
#else
#define LOWBIT_CONSTEXPR_BITCAST inline
#endif

#endif  // LOWBIT_CORE_CONFIG_HPP
