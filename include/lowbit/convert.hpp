// lowbit: bulk conversions between float and the lowbit formats.
//
// Each call is bit-identical to encode/decode applied element by element (the scalar codec is the
// reference). The work is done by kernels/: the AVX2 kernels when the CPU has AVX2+FMA+F16C and
// lowbit::active_isa() says so (core/cpu.hpp), the scalar loops otherwise. Which path ran never
// changes the bytes written, whatever the caller's MXCSR (flush-to-zero, denormals-are-zero).
//
// AVX2 coverage: float, float16 and bfloat16 into every format; every format of at most 8 bits
// into float16 and bfloat16 (decoding); every format into float; the packed layouts. Everything
// else (double sources, minifloat-to-minifloat between byte formats, and E8M0 under
// unsigned_input::invalid, the ml_dtypes preset) runs the scalar loop.
//
//   float x[n]; lowbit::float8_e4m3fn q[n];
//   lowbit::convert(x, q, n);                        // round to nearest even, saturate
//   lowbit::convert(q, x, n);                        // exact
//
//   std::vector<std::uint8_t> packed(lowbit::packed_size<lowbit::float4_e2m1fn>(n));
//   lowbit::convert_packed<lowbit::float4_e2m1fn>(x, packed.data(), n);   // two codes per byte
//   lowbit::convert_packed<lowbit::float4_e2m1fn>(packed.data(), x, n);   // and back
#ifndef LOWBIT_CONVERT_HPP
#define LOWBIT_CONVERT_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cpu.hpp"
#include "core/packing.hpp"
#include "formats/types.hpp"
#include "kernels/avx2_convert.hpp"
#include "kernels/scalar.hpp"

namespace lowbit {

// Rounds n values of src (float, double, or any lowbit type) into dst under policy p.
// With rounding::stochastic, random_bits must hold n values (one per element); when it is null,
// every element gets r = 0: the magnitude is truncated, as toward_zero does, except that a value
// at or beyond max + ulp still overflows (to Inf or NaN under overflow::non_saturate).
template <class From, class T, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert(const From* src, T* dst, std::size_t n, const policy& p,
             const std::uint32_t* random_bits = nullptr) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::can_encode<From, T>::value) {
    if (detail::use_avx2() && kernels::avx2::supports_policy<typename T::format>(p)) {
      kernels::avx2::encode(src, dst, n, p, random_bits);
      return;
    }
  }
#endif
  kernels::scalar::encode(src, dst, n, p, random_bits);
}

template <class From, class T, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert(const From* src, T* dst, std::size_t n, overflow ov = overflow::saturate,
             rounding rm = rounding::nearest_even, const std::uint32_t* random_bits = nullptr) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  convert(src, dst, n, p, random_bits);
}

// Decodes n values exactly (NaN: the quiet NaN 0x7FC00000 with the code's sign).
template <class F>
void convert(const minifloat<F>* src, float* dst, std::size_t n) noexcept {
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::can_decode<F>::value) {
    if (detail::use_avx2()) {
      kernels::avx2::decode(src, dst, n);
      return;
    }
  }
#endif
  kernels::scalar::decode(src, dst, n);
}

// ------------------------------------------------------------------------------------------------
// Packed storage. A 4-bit format (float4_e2m1fn) stores two codes per byte, element 2i in the low
// nibble of byte i; a 6-bit format (float6_e2m3fn, float6_e3m2fn) stores four codes in three
// bytes, code k in bits 6k..6k+5 of the little-endian 24-bit word; an 8-bit format one code per
// byte. These are the layouts of core/packing.hpp (pack_nibbles / pack_sextets), which the MX
// block formats use. A last partial byte has its unused high bits zero.

// Bytes that n packed codes of T occupy.
template <class T, std::enable_if_t<is_minifloat<T>::value, int> = 0>
constexpr std::size_t packed_size(std::size_t n) noexcept {
  return packed_bytes(n, T::format::bits);
}

// Rounds n values of src into format T under p and writes packed_size<T>(n) bytes to dst.
template <class T, class From,
          std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert_packed(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                    const std::uint32_t* random_bits = nullptr) noexcept {
  static_assert(T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8,
                "packed layouts exist for the 4-, 6- and 8-bit formats");
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::can_encode<From, T>::value) {
    if (detail::use_avx2() && kernels::avx2::supports_policy<typename T::format>(p)) {
      kernels::avx2::encode_packed<T>(src, dst, n, p, random_bits);
      return;
    }
  }
#endif
  kernels::scalar::encode_packed<T>(src, dst, n, p, random_bits);
}

template <class T, class From,
          std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert_packed(const From* src, std::uint8_t* dst, std::size_t n, overflow ov = overflow::saturate,
                    rounding rm = rounding::nearest_even, const std::uint32_t* random_bits = nullptr) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  convert_packed<T>(src, dst, n, p, random_bits);
}

// Decodes n packed codes of T (packed_size<T>(n) bytes at src) exactly into dst.
template <class T, std::enable_if_t<is_minifloat<T>::value, int> = 0>
void convert_packed(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  static_assert(T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8,
                "packed layouts exist for the 4-, 6- and 8-bit formats");
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    kernels::avx2::decode_packed<T>(src, dst, n);
    return;
  }
#endif
  kernels::scalar::decode_packed<T>(src, dst, n);
}

}  // namespace lowbit

#endif  // LOWBIT_CONVERT_HPP
