// Fuzz target: convert and convert_packed (lowbit/convert.hpp), every format, every policy.
//
// Input: format, source type, operation, the policy's seven fields, a count, then the data.
// Checks, each on any input:
//  - the SIMD path writes the same bytes as the scalar reference (encode, decode, packed);
//  - convert equals encode<T>/decode element by element (the design contract);
//  - nothing is written past n elements (a canary tail), and n = 0 writes nothing;
//  - decode then encode gives the code back for every finite code (exact values are fixed points);
//  - under overflow::saturate a finite input never becomes Inf or NaN;
//  - convert_packed holds the same codes as convert, and a partial last byte has zero high bits;
//  - in place (src == dst, same element size, docs/api.md section 5) equals out of place;
//  - the container overloads: ok and the same bytes on valid input; size_mismatch, misaligned
//    and overlapping_buffers on bad input, with nothing written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include <lowbit/convert.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t guard = 8;  // canary elements after the n a call may write

policy read_policy(input& in) {
  policy p;
  p.rm = static_cast<rounding>(in.below(6));
  p.ov = static_cast<overflow>(in.below(2));
  p.nan_sign = static_cast<nan_sign>(in.below(2));
  p.nan_pattern = static_cast<nan_pattern>(in.below(2));
  p.inf = static_cast<inf_policy>(in.below(2));
  p.nan_to_finite = static_cast<nan_to_finite>(in.below(3));
  p.unsigned_input = static_cast<unsigned_input>(in.below(2));
  p.unsigned_range = static_cast<unsigned_range>(in.below(2));
  return p;
}

template <class S>
std::vector<S> read_source(input& in, std::size_t n) {
  std::vector<S> v(n);
  if constexpr (std::is_same<S, float>::value) {
    v = in.floats(n);
  } else if constexpr (std::is_same<S, double>::value) {
    for (auto& x : v) {
      // A float widened, or raw double bits (values between floats, beyond float's range).
      if (in.flag()) {
        x = static_cast<double>(in.f32());
      } else {
        const std::uint64_t b = in.u64();
        std::memcpy(&x, &b, sizeof x);
      }
    }
  } else {
    using storage = typename S::format::storage;
    for (auto& x : v) x = S::from_bits(static_cast<storage>(sizeof(storage) == 1 ? in.u8() : in.u16()));
  }
  return v;
}

template <class S>
double as_double(S v) {
  if constexpr (std::is_arithmetic<S>::value) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

template <class T>
auto code_of(T v) {
  return static_cast<std::uint32_t>(v.bits());
}

template <class T, class S>
void check_encode(input& in, std::size_t n) {
  const policy p = read_policy(in);
  const std::vector<S> src = read_source<S>(in, n);
  std::vector<std::uint32_t> random_bits;
  const bool with_bits = p.rm == rounding::stochastic && in.flag();
  if (with_bits) {
    random_bits.resize(n);
    for (auto& r : random_bits) r = in.u32();
  }
  const std::uint32_t* rb = with_bits ? random_bits.data() : nullptr;

  auto run = [&] {
    std::vector<T> dst = lowbit_fuzz::canary_buffer<T>(n + guard);
    convert(src.data(), dst.data(), n, p, rb);
    return dst;
  };
  const auto ref_simd = lowbit_fuzz::on_both_paths(run);
  const auto& ref = ref_simd.first;
  const auto& simd = ref_simd.second;
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref, simd), "encode: SIMD differs from scalar at element %zu of %zu",
                    lowbit_fuzz::first_difference(ref, simd), n);
  for (std::size_t i = 0; i < guard; ++i) {
    std::vector<T> tail(ref.begin() + static_cast<std::ptrdiff_t>(n + i), ref.begin() + static_cast<std::ptrdiff_t>(n + i + 1));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(tail), "encode: wrote element %zu past n = %zu", i, n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const T one = encode<T>(src[i], p, rb != nullptr ? rb[i] : 0u);
    LOWBIT_FUZZ_CHECK(one.bits() == ref[i].bits(), "encode: convert gives 0x%x, encode<T> 0x%x at %zu", code_of(ref[i]),
                      code_of(one), i);
    const float back = decode(ref[i]);
    if (std::isfinite(back)) {
      const T again = encode<T>(back);
      LOWBIT_FUZZ_CHECK(again.bits() == ref[i].bits(), "decode(0x%x) = %a does not encode back (0x%x)", code_of(ref[i]),
                        static_cast<double>(back), code_of(again));
    }
    const double x = as_double(src[i]);
    if (p.ov == overflow::saturate && std::isfinite(x)) {
      LOWBIT_FUZZ_CHECK(std::isfinite(back), "saturate: finite %a became %a (code 0x%x)", x, static_cast<double>(back),
                        code_of(ref[i]));
    }
  }

  // In place: the source reinterpreted as the destination, when the element sizes agree.
  if constexpr (sizeof(S) == sizeof(T) && !std::is_same<S, T>::value && !std::is_arithmetic<S>::value) {
    if (in.flag()) {
      auto in_place = [&] {
        std::vector<S> buf = src;
        convert(buf.data(), reinterpret_cast<T*>(buf.data()), n, p, rb);
        std::vector<T> out(n);
        if (n != 0) std::memcpy(static_cast<void*>(out.data()), buf.data(), n * sizeof(T));
        return out;
      };
      const auto ref_ip_simd_ip = lowbit_fuzz::on_both_paths(in_place);
      const auto& ref_ip = ref_ip_simd_ip.first;
      const auto& simd_ip = ref_ip_simd_ip.second;
      const std::vector<T> expected(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(n));
      LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref_ip, expected), "in place (scalar) differs at %zu",
                        lowbit_fuzz::first_difference(ref_ip, expected));
      LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(simd_ip, expected), "in place (SIMD) differs at %zu",
                        lowbit_fuzz::first_difference(simd_ip, expected));
    }
  }

  // Packed layouts: the same codes, two or four-in-three per byte.
  if constexpr (T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8) {
    const std::size_t bytes = lowbit::packed_bytes(n, T::format::bits);
    auto run_packed = [&] {
      std::vector<std::uint8_t> packed = lowbit_fuzz::canary_buffer<std::uint8_t>(bytes + guard);
      convert_packed<T>(src.data(), packed.data(), n, p, rb);
      return packed;
    };
    const auto pref_psimd = lowbit_fuzz::on_both_paths(run_packed);
    const auto& pref = pref_psimd.first;
    const auto& psimd = pref_psimd.second;
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(pref, psimd), "encode packed: SIMD differs from scalar at byte %zu of %zu",
                      lowbit_fuzz::first_difference(pref, psimd), bytes);
    for (std::size_t i = bytes; i < bytes + guard; ++i)
      LOWBIT_FUZZ_CHECK(pref[i] == lowbit_fuzz::canary, "encode packed: wrote byte %zu, %zu bytes expected", i, bytes);
    if constexpr (T::format::bits == 4) {
      if (n % 2 == 1) LOWBIT_FUZZ_CHECK((pref[bytes - 1] & 0xF0u) == 0, "packed FP4: high nibble of the last byte set");
    }
    // Decode both layouts: the same floats.
    auto decode_both = [&] {
      std::vector<float> a = lowbit_fuzz::canary_buffer<float>(n + guard), b = lowbit_fuzz::canary_buffer<float>(n + guard);
      convert_packed<T>(pref.data(), a.data(), n);
      convert(ref.data(), b.data(), n);
      return std::make_pair(a, b);
    };
    const auto dref_dsimd = lowbit_fuzz::on_both_paths(decode_both);
    const auto& dref = dref_dsimd.first;
    const auto& dsimd = dref_dsimd.second;
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(dref.first, dref.second), "packed and unpacked codes decode differently at %zu",
                      lowbit_fuzz::first_difference(dref.first, dref.second));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(dref.first, dsimd.first), "decode packed: SIMD differs at %zu",
                      lowbit_fuzz::first_difference(dref.first, dsimd.first));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(dref.second, dsimd.second), "decode: SIMD differs at %zu",
                      lowbit_fuzz::first_difference(dref.second, dsimd.second));
  }
}

// Decoding arbitrary codes (every bit pattern, NaNs included).
template <class T>
void check_decode(input& in, std::size_t n) {
  const std::vector<T> codes = read_source<T>(in, n);
  auto run = [&] {
    std::vector<float> dst = lowbit_fuzz::canary_buffer<float>(n + guard);
    convert(codes.data(), dst.data(), n);
    return dst;
  };
  const auto ref_simd = lowbit_fuzz::on_both_paths(run);
  const auto& ref = ref_simd.first;
  const auto& simd = ref_simd.second;
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ref, simd), "decode: SIMD differs from scalar at element %zu of %zu",
                    lowbit_fuzz::first_difference(ref, simd), n);
  for (std::size_t i = 0; i < n + guard; ++i) {
    if (i >= n) {
      LOWBIT_FUZZ_CHECK(lowbit_fuzz::float_bits(ref[i]) == 0xA5A5A5A5u, "decode: wrote element %zu past n = %zu", i, n);
      continue;
    }
    const float one = decode(codes[i]);
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::float_bits(one) == lowbit_fuzz::float_bits(ref[i]),
                      "decode: convert gives %a, decode %a for code 0x%x", static_cast<double>(ref[i]),
                      static_cast<double>(one), code_of(codes[i]));
  }
  if constexpr (T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8) {
    // Arbitrary packed bytes, unused high bits included.
    std::vector<std::uint8_t> packed(lowbit::packed_bytes(n, T::format::bits));
    for (auto& b : packed) b = in.u8();
    auto run_packed = [&] {
      std::vector<float> dst = lowbit_fuzz::canary_buffer<float>(n + guard);
      convert_packed<T>(packed.data(), dst.data(), n);
      return dst;
    };
    const auto pref_psimd = lowbit_fuzz::on_both_paths(run_packed);
    const auto& pref = pref_psimd.first;
    const auto& psimd = pref_psimd.second;
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(pref, psimd), "decode packed: SIMD differs from scalar at element %zu of %zu",
                      lowbit_fuzz::first_difference(pref, psimd), n);
  }
}

// The container overloads (docs/api.md section 7): a status, and nothing written on an error.
template <class T>
void check_container(input& in, std::size_t n) {
  const policy p = read_policy(in);
  const std::vector<float> src = in.floats(n);
  const std::size_t kind = in.below(4);
  if (kind == 0) {  // valid: the same bytes as the pointer overload
    std::vector<T> a = lowbit_fuzz::canary_buffer<T>(n), b = lowbit_fuzz::canary_buffer<T>(n);
    const status s = convert(src, a, p);
    LOWBIT_FUZZ_CHECK(s.ok(), "container convert of %zu values: %s", n, s.message());
    convert(src.data(), b.data(), n, p);
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(a, b), "container and pointer convert differ at %zu",
                      lowbit_fuzz::first_difference(a, b));
    std::vector<float> back = lowbit_fuzz::canary_buffer<float>(n), back_ptr = lowbit_fuzz::canary_buffer<float>(n);
    LOWBIT_FUZZ_CHECK(convert(a, back).ok(), "container decode failed");
    convert(a.data(), back_ptr.data(), n);
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(back, back_ptr), "container and pointer decode differ");
  } else if (kind == 1) {  // counts differ
    const std::size_t m = in.flag() ? n + 1 + in.below(5) : (n == 0 ? 1 : n - 1 - in.below(n));
    std::vector<T> dst = lowbit_fuzz::canary_buffer<T>(m);
    const status s = convert(src, dst, p);
    LOWBIT_FUZZ_CHECK(s.code() == errc::size_mismatch, "%zu values into %zu: %s", n, m, s.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(dst), "size mismatch wrote the destination");
    std::vector<std::uint8_t> packed = lowbit_fuzz::canary_buffer<std::uint8_t>(packed_bytes(m, 8));
    if constexpr (T::format::bits == 4 || T::format::bits == 6 || T::format::bits == 8) {
      if (packed_bytes(m, T::format::bits) != packed_bytes(n, T::format::bits)) {
        packed.assign(packed_bytes(m, T::format::bits), lowbit_fuzz::canary);
        const status sp = convert_packed<T>(src, span<std::uint8_t>(packed), p);
        LOWBIT_FUZZ_CHECK(sp.code() == errc::size_mismatch, "packed: %zu values into %zu bytes: %s", n, packed.size(),
                          sp.message());
        LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(packed), "packed size mismatch wrote the destination");
      }
    }
  } else if (kind == 2 && n > 0) {  // a float source one byte off its alignment
    std::vector<std::uint8_t> raw(n * sizeof(float) + 1);
    const span<const float> bad(reinterpret_cast<const float*>(raw.data() + 1), n);
    std::vector<T> dst = lowbit_fuzz::canary_buffer<T>(n);
    const status s = convert(bad, dst, p);
    LOWBIT_FUZZ_CHECK(s.code() == errc::misaligned, "misaligned source: %s", s.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(dst), "misaligned source: destination written");
  } else if (kind == 3 && n > 1) {  // destination overlapping the source, not in place
    std::vector<float> buf = src;
    buf.resize(n + n);
    const std::size_t shift = 1 + in.below(n - 1);
    const span<T> dst(reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(buf.data()) + shift * sizeof(float)), n);
    const std::vector<float> before = buf;
    const status s = convert(span<const float>(buf.data(), n), dst, p);
    LOWBIT_FUZZ_CHECK(s.code() == errc::overlapping_buffers, "overlap by %zu floats: %s", shift, s.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(buf, before), "overlapping call wrote");
  }
}

template <class T>
void check_format(input& in, std::size_t n) {
  switch (in.below(8)) {
    case 6: check_container<T>(in, n); break;
    case 0: check_encode<T, float>(in, n); break;
    case 1: check_encode<T, double>(in, n); break;
    case 2: check_encode<T, float16>(in, n); break;
    case 3: check_encode<T, bfloat16>(in, n); break;
    case 4: check_encode<T, float8_e4m3fn>(in, n); break;
    case 5: check_encode<T, float8_e8m0fnu>(in, n); break;  // the byte source without a zero code
    default: check_decode<T>(in, n); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const std::size_t format = in.below(10);
  // Mostly short runs (every tail length of the vector loops), sometimes a few thousand.
  const std::size_t n = in.flag() ? in.below(40) : in.below(3000);
  switch (format) {
    case 0: check_format<float8_e4m3fn>(in, n); break;
    case 1: check_format<float8_e5m2>(in, n); break;
    case 2: check_format<float8_e4m3fnuz>(in, n); break;
    case 3: check_format<float8_e5m2fnuz>(in, n); break;
    case 4: check_format<float6_e2m3fn>(in, n); break;
    case 5: check_format<float6_e3m2fn>(in, n); break;
    case 6: check_format<float4_e2m1fn>(in, n); break;
    case 7: check_format<float8_e8m0fnu>(in, n); break;
    case 8: check_format<float16>(in, n); break;
    default: check_format<bfloat16>(in, n); break;
  }
  return 0;
}
