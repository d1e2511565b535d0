// The kernel matrix, compiled once per build instead of once per test.
//
// lowbit is header-only, so every test TU that converts or quantizes instantiates the kernels it
// reaches, on every path: in the dev build half of the machine code the tests compiled was such
// duplicates (15.5 of 32.6 MB of text), and test_kernels_convert.cpp alone took over 3 minutes.
// The build force-includes this header into every test but the exhaustive sweeps
// (tests/CMakeLists.txt). It declares the dispatch roots of the convert, MX and NVFP4 families
// as explicit instantiations defined elsewhere (`extern template`); the TUs beside it, in the
// library lowbit_test_instances that the tests link, define them with the same flags.
//
// What is tested does not change: the same templates, compiled with the same flags, in another TU
// of the same program. Header-only use itself is what the consumer, strict and example builds
// test, and the benchmarks include the headers as users do.
//
// A root is a function template above the AVX-512, AVX2 and scalar kernels of one operation that
// is not `inline`, or that cannot be inlined into its callers (another target), since GCC
// instantiates an `inline` function whatever `extern` says, to inline it. A combination missing
// here is still instantiated where it is used, only not shared. Not here: the scaled FP8 scheme's
// tile kernels (one test TU calls nearly all of them, so sharing saves nothing: measured), and
// the integer kernels, plain inline functions that cannot be shared this way.
#ifndef LOWBIT_TESTS_INSTANCES_HPP
#define LOWBIT_TESTS_INSTANCES_HPP

#include <lowbit/convert.hpp>
#include <lowbit/schemes/mx.hpp>
#include <lowbit/schemes/nvfp4.hpp>

// M(args..., T) for each element type T of lowbit::convert.
#define LOWBIT_TEST_EACH_FORMAT(M, ...)                                                                             \
  M(__VA_ARGS__, lowbit::float8_e4m3fn)                                                                             \
  M(__VA_ARGS__, lowbit::float8_e5m2)                                                                               \
  M(__VA_ARGS__, lowbit::float8_e4m3fnuz)                                                                           \
  M(__VA_ARGS__, lowbit::float8_e5m2fnuz)                                                                           \
  M(__VA_ARGS__, lowbit::float6_e2m3fn)                                                                             \
  M(__VA_ARGS__, lowbit::float6_e3m2fn)                                                                             \
  M(__VA_ARGS__, lowbit::float4_e2m1fn)                                                                             \
  M(__VA_ARGS__, lowbit::float8_e8m0fnu)                                                                            \
  M(__VA_ARGS__, lowbit::float16)                                                                                   \
  M(__VA_ARGS__, lowbit::bfloat16)

// KW is `extern template` (the declarations below) or `template` (the definitions).
#define LOWBIT_TEST_ENCODE_ON(KW, From, T)                                                                          \
  KW void lowbit::detail::encode_on<From, T>(lowbit::isa, const From*, T*, std::size_t, const lowbit::policy&,     \
                                             const std::uint32_t*) noexcept;
#define LOWBIT_TEST_ENCODE_PACKED_ON(KW, From, T)                                                                   \
  KW void lowbit::detail::encode_packed_on<T, From>(lowbit::isa, const From*, std::uint8_t*, std::size_t,          \
                                                    const lowbit::policy&, const std::uint32_t*) noexcept;
#define LOWBIT_TEST_DECODE_ON(KW, T)                                                                                \
  KW void lowbit::detail::decode_on<T::format>(lowbit::isa, const T*, float*, std::size_t) noexcept;

// From into every format, unpacked and packed (the 4-, 6- and 8-bit layouts of E2M1, E2M3,
// E3M2 and E4M3FN).
#define LOWBIT_TEST_ENCODE_FROM(KW, From) LOWBIT_TEST_EACH_FORMAT(LOWBIT_TEST_ENCODE_ON, KW, From)
#define LOWBIT_TEST_ENCODE_PACKED_FROM(KW, From)                                                                    \
  LOWBIT_TEST_ENCODE_PACKED_ON(KW, From, lowbit::float4_e2m1fn)                                                     \
  LOWBIT_TEST_ENCODE_PACKED_ON(KW, From, lowbit::float6_e2m3fn)                                                     \
  LOWBIT_TEST_ENCODE_PACKED_ON(KW, From, lowbit::float6_e3m2fn)                                                     \
  LOWBIT_TEST_ENCODE_PACKED_ON(KW, From, lowbit::float8_e4m3fn)
#define LOWBIT_TEST_ENCODE_ALL_FROM(KW, From) LOWBIT_TEST_ENCODE_FROM(KW, From) LOWBIT_TEST_ENCODE_PACKED_FROM(KW, From)

// The convert family, in four parts (one TU each): the byte formats as sources decode into a
// float32 stage and take float32's encoders, so they are cheap.
#define LOWBIT_TEST_CONVERT_FLOAT(KW) LOWBIT_TEST_ENCODE_ALL_FROM(KW, float) LOWBIT_TEST_ENCODE_FROM(KW, double)
#define LOWBIT_TEST_CONVERT_FLOAT16(KW) LOWBIT_TEST_ENCODE_ALL_FROM(KW, lowbit::float16)
#define LOWBIT_TEST_CONVERT_BFLOAT16(KW) LOWBIT_TEST_ENCODE_ALL_FROM(KW, lowbit::bfloat16)
#define LOWBIT_TEST_CONVERT_BYTE_SOURCES(KW)                                                                        \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float8_e4m3fn)                                                                \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float8_e5m2)                                                                  \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float8_e4m3fnuz)                                                              \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float8_e5m2fnuz)                                                              \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float6_e2m3fn)                                                                \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float6_e3m2fn)                                                                \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float4_e2m1fn)                                                                \
  LOWBIT_TEST_ENCODE_FROM(KW, lowbit::float8_e8m0fnu)                                                               \
  LOWBIT_TEST_EACH_FORMAT(LOWBIT_TEST_DECODE_ON, KW)

// The block formats: each MX element format and NVFP4, planar and in ggml's blocks, float32 and
// bfloat16 values. The roots are the kernels' own entries, where the quantizers dispatch to them:
// the schemes' dispatchers are `inline` and small, so GCC inlines them whatever `extern` says.
#define LOWBIT_TEST_L(Byte) lowbit::kernels::block::planar_layout<Byte>
#define LOWBIT_TEST_MXG(Byte) lowbit::kernels::block::mxfp4_ggml_layout<Byte>
#define LOWBIT_TEST_NVG(Byte) lowbit::kernels::block::nvfp4_ggml_layout<Byte>
#define LOWBIT_TEST_MX_SCALAR(KW, Fmt, V, Layout)                                                                   \
  KW bool lowbit::kernels::block::mx_quantize_scalar<Fmt, V, Layout(std::uint8_t)>(                                \
      const V*, std::size_t, const lowbit::mx_options&, const Layout(std::uint8_t)) noexcept;                      \
  KW void lowbit::kernels::block::mx_dequantize_scalar<Fmt, Layout(const std::uint8_t), V>(                        \
      const Layout(const std::uint8_t), std::size_t, const lowbit::mx_options&, V*) noexcept;
#define LOWBIT_TEST_MX_ON(KW, Path, Fmt, V, Layout)                                                                 \
  KW bool lowbit::kernels::block::Path::mx_quantize<Fmt, V, Layout(std::uint8_t)>(                                 \
      const V*, std::size_t, const lowbit::mx_options&, const Layout(std::uint8_t));                              \
  KW void lowbit::kernels::block::Path::mx_dequantize<Fmt, V, Layout(const std::uint8_t)>(                         \
      const Layout(const std::uint8_t), std::size_t, const lowbit::mx_options&, V*);
// The overloads on planar elements and scales too: they share the layout overloads' target, so
// GCC inlines those into them, instantiating the kernels, unless they are external themselves.
#define LOWBIT_TEST_MX_PLANAR_ON(KW, Path, Fmt, V)                                                                  \
  KW bool lowbit::kernels::block::Path::mx_quantize<Fmt, V>(const V*, std::size_t, const lowbit::mx_options&,       \
                                                            std::uint8_t*, std::uint8_t*);                         \
  KW void lowbit::kernels::block::Path::mx_dequantize<Fmt, V>(const std::uint8_t*, const std::uint8_t*,             \
                                                              std::size_t, const lowbit::mx_options&, V*);
#define LOWBIT_TEST_NVFP4_SCALAR(KW, V, Layout)                                                                     \
  KW bool lowbit::kernels::block::nvfp4_quantize_scalar<V, Layout(std::uint8_t)>(                                  \
      const V*, std::size_t, const lowbit::nvfp4_options&, const Layout(std::uint8_t)) noexcept;                   \
  KW bool lowbit::kernels::block::nvfp4_dequantize_scalar<Layout(const std::uint8_t), V>(                          \
      const Layout(const std::uint8_t), std::size_t, const lowbit::nvfp4_options&, V*) noexcept;
#define LOWBIT_TEST_NVFP4_ON(KW, Path, V, Layout)                                                                   \
  KW bool lowbit::kernels::block::Path::nvfp4_quantize<V, Layout(std::uint8_t)>(                                   \
      const V*, std::size_t, const lowbit::nvfp4_options&, const Layout(std::uint8_t));                            \
  KW bool lowbit::kernels::block::Path::nvfp4_dequantize<V, Layout(const std::uint8_t)>(                           \
      const Layout(const std::uint8_t), std::size_t, const lowbit::nvfp4_options&, V*);

#define LOWBIT_TEST_NVFP4_PLANAR_ON(KW, Path, V)                                                                    \
  KW bool lowbit::kernels::block::Path::nvfp4_quantize<V>(const V*, std::size_t, const lowbit::nvfp4_options&,      \
                                                          std::uint8_t*, std::uint8_t*);                           \
  KW void lowbit::kernels::block::Path::nvfp4_dequantize<V>(const std::uint8_t*, const std::uint8_t*, std::size_t, \
                                                            const lowbit::nvfp4_options&, V*);

// Every path this build compiles (LOWBIT_SCALAR_ONLY: none; LOWBIT_AVX2_ONLY: no AVX-512).
#if LOWBIT_HAS_AVX512_KERNELS
#define LOWBIT_TEST_ON_AVX512(M, ...) M(__VA_ARGS__)
#else
#define LOWBIT_TEST_ON_AVX512(M, ...)
#endif
#if LOWBIT_HAS_AVX2_KERNELS
#define LOWBIT_TEST_ON_AVX2(M, ...) M(__VA_ARGS__)
#else
#define LOWBIT_TEST_ON_AVX2(M, ...)
#endif
#define LOWBIT_TEST_MX_ALL(KW, Fmt, V, Layout)                                                                      \
  LOWBIT_TEST_MX_SCALAR(KW, Fmt, V, Layout)                                                                         \
  LOWBIT_TEST_ON_AVX2(LOWBIT_TEST_MX_ON, KW, avx2, Fmt, V, Layout)                                                  \
  LOWBIT_TEST_ON_AVX512(LOWBIT_TEST_MX_ON, KW, avx512, Fmt, V, Layout)
#define LOWBIT_TEST_NVFP4_ALL(KW, V, Layout)                                                                        \
  LOWBIT_TEST_NVFP4_SCALAR(KW, V, Layout)                                                                           \
  LOWBIT_TEST_ON_AVX2(LOWBIT_TEST_NVFP4_ON, KW, avx2, V, Layout)                                                    \
  LOWBIT_TEST_ON_AVX512(LOWBIT_TEST_NVFP4_ON, KW, avx512, V, Layout)
#define LOWBIT_TEST_MX_PLANAR(KW, Fmt, V)                                                                           \
  LOWBIT_TEST_MX_ALL(KW, Fmt, V, LOWBIT_TEST_L)                                                                     \
  LOWBIT_TEST_ON_AVX2(LOWBIT_TEST_MX_PLANAR_ON, KW, avx2, Fmt, V)                                                   \
  LOWBIT_TEST_ON_AVX512(LOWBIT_TEST_MX_PLANAR_ON, KW, avx512, Fmt, V)
#define LOWBIT_TEST_MX_VALUES(KW, Fmt)                                                                              \
  LOWBIT_TEST_MX_PLANAR(KW, Fmt, float)                                                                             \
  LOWBIT_TEST_MX_PLANAR(KW, Fmt, lowbit::bfloat16)
#define LOWBIT_TEST_MX_FP8(KW)                                                                                      \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxfp8_e4m3)                                                                     \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxfp8_e5m2)                                                                     \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxint8)
#define LOWBIT_TEST_MX_FP6_FP4(KW)                                                                                  \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxfp6_e2m3)                                                                     \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxfp6_e3m2)                                                                     \
  LOWBIT_TEST_MX_VALUES(KW, lowbit::mxfp4_e2m1)                                                                     \
  LOWBIT_TEST_MX_ALL(KW, lowbit::mxfp4_e2m1, float, LOWBIT_TEST_MXG)                                                \
  LOWBIT_TEST_MX_ALL(KW, lowbit::mxfp4_e2m1, lowbit::bfloat16, LOWBIT_TEST_MXG)
#define LOWBIT_TEST_NVFP4_PLANAR(KW, V)                                                                             \
  LOWBIT_TEST_NVFP4_ALL(KW, V, LOWBIT_TEST_L)                                                                       \
  LOWBIT_TEST_ON_AVX2(LOWBIT_TEST_NVFP4_PLANAR_ON, KW, avx2, V)                                                     \
  LOWBIT_TEST_ON_AVX512(LOWBIT_TEST_NVFP4_PLANAR_ON, KW, avx512, V)
#define LOWBIT_TEST_NVFP4(KW)                                                                                       \
  LOWBIT_TEST_NVFP4_PLANAR(KW, float)                                                                               \
  LOWBIT_TEST_NVFP4_PLANAR(KW, lowbit::bfloat16)                                                                    \
  LOWBIT_TEST_NVFP4_ALL(KW, float, LOWBIT_TEST_NVG)                                                                 \
  LOWBIT_TEST_NVFP4_ALL(KW, lowbit::bfloat16, LOWBIT_TEST_NVG)

LOWBIT_TEST_CONVERT_FLOAT(extern template)
LOWBIT_TEST_CONVERT_FLOAT16(extern template)
LOWBIT_TEST_CONVERT_BFLOAT16(extern template)
LOWBIT_TEST_CONVERT_BYTE_SOURCES(extern template)
LOWBIT_TEST_MX_FP8(extern template)
LOWBIT_TEST_MX_FP6_FP4(extern template)
LOWBIT_TEST_NVFP4(extern template)

#endif  // LOWBIT_TESTS_INSTANCES_HPP
