// lowbit: bulk conversions between float and the lowbit formats.
//
// Each call is bit-identical to encode/decode applied element by element (the scalar codec is the
// reference). The work is done by kernels/: the AVX-512 kernels where the CPU has AVX-512 and the
// operation has one (float32, float16 and bfloat16 into every format under every policy the AVX2
// kernels take; the decoders; with VBMI, byte codes into float16, bfloat16 and the byte formats
// by table: kernels/convert/avx512.hpp), the AVX2 kernels when the CPU has AVX2+FMA+F16C, as
// lowbit::active_isa() says (core/cpu.hpp), the scalar loops otherwise. Which path ran never
// changes the bytes written, whatever the caller's MXCSR (flush-to-zero, denormals-are-zero).
//
// AVX2 coverage: float, float16 and bfloat16 into every format; every format of at most 8 bits
// into float16 and bfloat16 (decoding); every format into float; the packed layouts. A byte
// format into another byte format (unpacked or packed) decodes into a float32 stage and encodes
// from there on the same path; with AVX-512 VBMI it is one table lookup per code instead
// (kernels/convert/avx512.hpp, convert_vbmi). Everything else (double sources, and E8M0 under
// unsigned_input::invalid or unsigned_range::before_rounding, the ml_dtypes and ONNX presets)
// runs the scalar loop.
//
//   float x[n]; lowbit::float8_e4m3fn q[n];
//   lowbit::convert(x, q, n);                        // round to nearest even, saturate
//   lowbit::convert(q, x, n);                        // exact
//
//   std::vector<std::uint8_t> packed(lowbit::packed_bytes<lowbit::float4_e2m1fn>(n));
//   lowbit::convert_packed<lowbit::float4_e2m1fn>(x, packed.data(), n);   // two codes per byte
//   lowbit::convert_packed<lowbit::float4_e2m1fn>(packed.data(), x, n);   // and back
//
// Preconditions (docs/api.md, section 7): src and dst non-null when n > 0, aligned to their
// element types, and not overlapping, except in place (src == dst) when source and destination
// elements have the same size. Builds without NDEBUG check them with LOWBIT_ASSERT. The container
// overloads at the end check the same things and return a status instead.
#ifndef LOWBIT_CONVERT_HPP
#define LOWBIT_CONVERT_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/checks.hpp"
#include "core/cpu.hpp"
#include "core/packing.hpp"
#include "core/span.hpp"
#include "formats/types.hpp"
#include "kernels/convert/avx2.hpp"
#include "kernels/convert/avx512.hpp"
#include "kernels/convert/scalar.hpp"

namespace lowbit {

namespace detail {

// The status of a conversion's arguments (docs/api.md, sections 4-7): null or misaligned
// buffers, then overlap, where in place (the same address, elements of the same size) is allowed.
template <class From, class To>
inline status convert_arguments(const From* src, std::size_t src_count, const To* dst, std::size_t dst_count) noexcept {
  const buffer in = buffer_of(src, src_count);
  const buffer out = buffer_of(dst, dst_count);
  if (sizeof(From) == sizeof(To) && in.address == out.address && in.bytes == out.bytes) {
    if (in.bytes != 0 && in.address == 0) return errc::bad_argument;
    return in.address % alignof(From) != 0 || out.address % alignof(To) != 0 ? errc::misaligned : errc::ok;
  }
  return check_buffers({in}, {out});
}

// The bulk calls on a given path (one that is_supported: active_isa() or below it), for
// convert() and convert_packed() below, and for the tests that compare the paths in one process.
// Each path takes the kernels it has and hands the rest down: AVX-512, then AVX2, then scalar.

// A byte format into another one (float16 and bfloat16 have their own kernels), below.
template <class T, bool Packed, class F>
void encode_through_float(isa path, const minifloat<F>* src, std::uint8_t* dst, std::size_t n, const policy& p,
                          const std::uint32_t* random_bits) noexcept;

template <class From, class T>
void encode_on(isa path, const From* src, T* dst, std::size_t n, const policy& p,
               const std::uint32_t* random_bits) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::avx512::can_encode<From, T>::value) {
    if (path >= isa::avx512 && kernels::avx512::covers<typename T::format>(p)) {
      kernels::avx512::encode(src, dst, n, p, random_bits);
      return;
    }
  }
  if constexpr (kernels::avx512::can_convert_vbmi<From, T>::value) {
    if (path >= isa::avx512 && vbmi_allowed() && kernels::avx512::convert_vbmi_takes<From, T>(p) &&
        kernels::avx512::convert_vbmi(src, dst, n, p))
      return;
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::is_byte_minifloat<From>::value && kernels::avx2::is_byte_minifloat<T>::value) {
    if (path >= isa::avx2) {
      encode_through_float<T, false>(path, src, reinterpret_cast<std::uint8_t*>(dst), n, p, random_bits);
      return;
    }
  }
  if constexpr (kernels::avx2::can_encode<From, T>::value) {
    if (path >= isa::avx2 && kernels::avx2::supports_policy<typename T::format>(p)) {
      kernels::avx2::encode(src, dst, n, p, random_bits);
      return;
    }
  }
#endif
  (void)path;
  kernels::scalar::encode(src, dst, n, p, random_bits);
}

template <class T, class From>
void encode_packed_on(isa path, const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                      const std::uint32_t* random_bits) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::avx512::can_encode<From, T>::value) {
    if (path >= isa::avx512 && kernels::avx512::covers<typename T::format>(p)) {
      kernels::avx512::encode_packed<T>(src, dst, n, p, random_bits);
      return;
    }
  }
  if constexpr (kernels::avx512::can_convert_vbmi<From, T>::value && T::format::bits < 8) {
    if (path >= isa::avx512 && vbmi_allowed() && kernels::avx512::convert_vbmi_takes<From, T>(p) &&
        kernels::avx512::convert_vbmi_packed<T>(src, dst, n, p))
      return;
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::is_byte_minifloat<From>::value && kernels::avx2::is_byte_minifloat<T>::value) {
    if (path >= isa::avx2) {
      encode_through_float<T, true>(path, src, dst, n, p, random_bits);
      return;
    }
  }
  if constexpr (kernels::avx2::can_encode<From, T>::value) {
    if (path >= isa::avx2 && kernels::avx2::supports_policy<typename T::format>(p)) {
      kernels::avx2::encode_packed<T>(src, dst, n, p, random_bits);
      return;
    }
  }
#endif
  (void)path;
  kernels::scalar::encode_packed<T>(src, dst, n, p, random_bits);
}

template <class F>
void decode_on(isa path, const minifloat<F>* src, float* dst, std::size_t n) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::avx512::can_decode<F>::value) {
    if (path >= isa::avx512) {
      kernels::avx512::decode(src, dst, n);
      return;
    }
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if constexpr (kernels::avx2::can_decode<F>::value) {
    if (path >= isa::avx2) {
      kernels::avx2::decode(src, dst, n);
      return;
    }
  }
#endif
  (void)path;
  kernels::scalar::decode(src, dst, n);
}

// Byte codes decoded (exactly) into an L1 stage of float32 and encoded from there on the same
// path: the float32 encoders' result for a code's value is the scalar codec's for the code, and
// each destination format's encoder is instantiated once, not once per source format. In place
// works: a step reads its codes before it writes. The stage is a multiple of 8 elements, whole
// bytes in every packed layout.
template <class T, bool Packed, class F>
void encode_through_float(isa path, const minifloat<F>* src, std::uint8_t* dst, std::size_t n, const policy& p,
                          const std::uint32_t* random_bits) noexcept {
  constexpr std::size_t stage_elements = 1024;
  alignas(64) float stage[stage_elements];
  for (std::size_t i = 0; i < n; i += stage_elements) {
    const std::size_t m = n - i < stage_elements ? n - i : stage_elements;
    const std::uint32_t* r = random_bits != nullptr ? random_bits + i : nullptr;
    decode_on(path, src + i, stage, m);
    if constexpr (Packed)
      encode_packed_on<T>(path, stage, dst + packed_bytes(i, T::format::bits), m, p, r);
    else
      encode_on(path, stage, reinterpret_cast<T*>(dst) + i, m, p, r);
  }
}

}  // namespace detail

// Rounds n values of src (float, double, or any lowbit type) into dst under policy p.
// With rounding::stochastic, random_bits must hold n values (one per element); when it is null,
// every element gets r = 0: the magnitude is truncated, as toward_zero does, except that a value
// at or beyond max + ulp still overflows (to Inf or NaN under overflow::non_saturate).
template <class From, class T, std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert(const From* src, T* dst, std::size_t n, const policy& p,
             const std::uint32_t* random_bits = nullptr) noexcept {
  LOWBIT_ASSERT(detail::convert_arguments(src, n, dst, n).ok());
  detail::encode_on(active_isa(), src, dst, n, p, random_bits);
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
  LOWBIT_ASSERT(detail::convert_arguments(src, n, dst, n).ok());
  detail::decode_on(active_isa(), src, dst, n);
}

// ------------------------------------------------------------------------------------------------
// Packed storage. A 4-bit format (float4_e2m1fn) stores two codes per byte, element 2i in the low
// nibble of byte i; a 6-bit format (float6_e2m3fn, float6_e3m2fn) stores four codes in three
// bytes, code k in bits 6k..6k+5 of the little-endian 24-bit word; an 8-bit format one code per
// byte. These are the layouts of core/packing.hpp (pack_nibbles / pack_sextets), which the MX
// block formats use. A last partial byte has its unused high bits zero.

// Bytes that n packed codes of T occupy (packed_bytes(n, bits) of core/packing.hpp).
template <class T, std::enable_if_t<is_minifloat<T>::value, int> = 0>
constexpr std::size_t packed_bytes(std::size_t n) noexcept {
  return packed_bytes(n, T::format::bits);
}

// Rounds n values of src into format T under p and writes packed_bytes<T>(n) bytes to dst.
template <class T, class From,
          std::enable_if_t<is_minifloat<T>::value && detail::is_encode_source<From>::value, int> = 0>
void convert_packed(const From* src, std::uint8_t* dst, std::size_t n, const policy& p,
                    const std::uint32_t* random_bits = nullptr) noexcept {
  static_assert(T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8,
                "packed layouts exist for the 4-, 6- and 8-bit formats");
  LOWBIT_ASSERT(detail::convert_arguments(src, n, dst, packed_bytes<T>(n)).ok());
  detail::encode_packed_on<T>(active_isa(), src, dst, n, p, random_bits);
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

// Decodes n packed codes of T (packed_bytes<T>(n) bytes at src) exactly into dst.
template <class T, std::enable_if_t<is_minifloat<T>::value, int> = 0>
void convert_packed(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
  static_assert(T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8,
                "packed layouts exist for the 4-, 6- and 8-bit formats");
  LOWBIT_ASSERT(detail::convert_arguments(src, packed_bytes<T>(n), dst, n).ok());
#if LOWBIT_HAS_AVX512_KERNELS
  if constexpr (kernels::avx512::can_decode_packed<T>::value) {
    if (detail::use_avx512()) {
      kernels::avx512::decode_packed<T>(src, dst, n);
      return;
    }
  }
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (detail::use_avx2()) {
    kernels::avx2::decode_packed<T>(src, dst, n);
    return;
  }
#endif
  kernels::scalar::decode_packed<T>(src, dst, n);
}


// ------------------------------------------------------------------------------------------------
// Container overloads: the same conversions, taking any contiguous container or view (a
// std::vector, std::array, lowbit::span, std::span) and returning a status instead of assuming
// the preconditions. dst must hold exactly as many elements as src (packed: packed_bytes<T>(n)
// bytes); random_bits, when given, one value per element. Errors, nothing written:
//   size_mismatch        the counts differ
//   bad_argument         a null container data() with a non-zero size
//   misaligned           a view whose data() is not aligned to its element type
//   overlapping_buffers  src and dst overlap, other than exactly in place with same-size elements

namespace detail {
template <class C>
using element_of = std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<C&>().data())>>;
template <class C, class = void>
struct has_data : std::false_type {};
template <class C>
struct has_data<C, std::void_t<decltype(std::declval<C&>().data()), decltype(std::declval<C&>().size())>>
    : std::true_type {};

template <class Src, class Dst, bool = has_data<const Src>::value && has_data<Dst>::value>
struct is_encode_pair : std::false_type {};
template <class Src, class Dst>
struct is_encode_pair<Src, Dst, true>
    : std::integral_constant<bool, is_minifloat<element_of<Dst>>::value && is_encode_source<element_of<const Src>>::value &&
                                       !std::is_const<std::remove_pointer_t<decltype(std::declval<Dst&>().data())>>::value> {};

template <class Src, class Dst, bool = has_data<const Src>::value && has_data<Dst>::value>
struct is_decode_pair : std::false_type {};
template <class Src, class Dst>
struct is_decode_pair<Src, Dst, true>
    : std::integral_constant<bool, is_minifloat<element_of<const Src>>::value && std::is_same<element_of<Dst>, float>::value &&
                                       !std::is_const<std::remove_pointer_t<decltype(std::declval<Dst&>().data())>>::value> {};
}  // namespace detail

template <class Src, class Dst, std::enable_if_t<detail::is_encode_pair<Src, Dst>::value, int> = 0>
[[nodiscard]] status convert(const Src& src, Dst&& dst, const policy& p, span<const std::uint32_t> random_bits = {}) noexcept {
  const std::size_t n = static_cast<std::size_t>(src.size());
  if (static_cast<std::size_t>(dst.size()) != n || (!random_bits.empty() && random_bits.size() != n))
    return errc::size_mismatch;
  if (status s = detail::convert_arguments(src.data(), n, dst.data(), n); !s) return s;
  // The random bits are an input too: checked, and dst may not overlap them.
  if (status s = detail::check_buffers({detail::buffer_of(random_bits.data(), random_bits.size())},
                                       {detail::buffer_of(dst.data(), n)});
      !s)
    return s;
  convert(src.data(), dst.data(), n, p, random_bits.empty() ? nullptr : random_bits.data());
  return status{};
}

template <class Src, class Dst, std::enable_if_t<detail::is_encode_pair<Src, Dst>::value, int> = 0>
[[nodiscard]] status convert(const Src& src, Dst&& dst, overflow ov = overflow::saturate,
                             rounding rm = rounding::nearest_even, span<const std::uint32_t> random_bits = {}) noexcept {
  policy p;
  p.ov = ov;
  p.rm = rm;
  return convert(src, dst, p, random_bits);
}

template <class Src, class Dst, std::enable_if_t<detail::is_decode_pair<Src, Dst>::value, int> = 0>
[[nodiscard]] status convert(const Src& src, Dst&& dst) noexcept {
  const std::size_t n = static_cast<std::size_t>(src.size());
  if (static_cast<std::size_t>(dst.size()) != n) return errc::size_mismatch;
  if (status s = detail::convert_arguments(src.data(), n, dst.data(), n); !s) return s;
  convert(src.data(), dst.data(), n);
  return status{};
}

// Packed: src holds n values (any contiguous container of an encode source) and dst
// packed_bytes<T>(n) bytes.
template <class T, class Src,
          std::enable_if_t<is_minifloat<T>::value && detail::has_data<const Src>::value, int> = 0,
          std::enable_if_t<detail::is_encode_source<detail::element_of<const Src>>::value, int> = 0>
[[nodiscard]] status convert_packed(const Src& src, span<std::uint8_t> dst, const policy& p = {},
                                    span<const std::uint32_t> random_bits = {}) noexcept {
  const std::size_t n = static_cast<std::size_t>(src.size());
  if (dst.size() != packed_bytes<T>(n) || (!random_bits.empty() && random_bits.size() != n)) return errc::size_mismatch;
  if (status s = detail::convert_arguments(src.data(), n, dst.data(), dst.size()); !s) return s;
  if (status s = detail::check_buffers({detail::buffer_of(random_bits.data(), random_bits.size())},
                                       {detail::buffer_of(dst.data(), dst.size())});
      !s)
    return s;
  convert_packed<T>(src.data(), dst.data(), n, p, random_bits.empty() ? nullptr : random_bits.data());
  return status{};
}

// Unpacking: dst holds n values and src packed_bytes<T>(n) bytes.
template <class T, std::enable_if_t<is_minifloat<T>::value, int> = 0>
[[nodiscard]] status convert_packed(span<const std::uint8_t> src, span<float> dst) noexcept {
  const std::size_t n = dst.size();
  if (src.size() != packed_bytes<T>(n)) return errc::size_mismatch;
  if (status s = detail::convert_arguments(src.data(), src.size(), dst.data(), n); !s) return s;
  convert_packed<T>(src.data(), dst.data(), n);
  return status{};
}

}  // namespace lowbit

#endif  // LOWBIT_CONVERT_HPP
