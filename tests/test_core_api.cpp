// The pieces of docs/api.md that live in core/: span, the argument checks every bulk call makes,
// overflow-free byte counts, and the error messages.
#include <gtest/gtest.h>

#include <lowbit/core/checks.hpp>
#include <lowbit/core/packing.hpp>
#include <lowbit/core/span.hpp>
#include <lowbit/core/status.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

namespace {

using lowbit::errc;
using lowbit::span;
using lowbit::detail::buffer_of;
using lowbit::detail::check_buffers;

std::size_t count(span<const float> s) { return s.size(); }
const float* first(span<const float> s) { return s.data(); }

TEST(Span, BuiltFromEveryContiguousContainer) {
  std::vector<float> v(3);
  const std::vector<float> cv(4);
  std::array<float, 5> a{};
  float c[6] = {};
  EXPECT_EQ(count(v), 3u);
  EXPECT_EQ(first(v), v.data());
  EXPECT_EQ(count(cv), 4u);
  EXPECT_EQ(count(a), 5u);
  EXPECT_EQ(first(a), a.data());
  EXPECT_EQ(count(c), 6u);
  EXPECT_EQ(first(c), &c[0]);
  span<float> mutable_view(v);
  span<const float> const_view = mutable_view;
  EXPECT_EQ(const_view.data(), v.data());
  EXPECT_EQ(const_view.size(), 3u);
#if __cplusplus >= 202002L && __has_include(<span>)
  std::span<float> s(v);
  EXPECT_EQ(count(s), 3u);
#endif
}

TEST(Span, RefusesContainersOfAnotherTypeAndDroppingConst) {
  static_assert(!std::is_convertible<std::vector<int>&, span<const float>>::value, "int is not float");
  static_assert(!std::is_convertible<std::vector<double>&, span<const float>>::value, "no value conversion");
  static_assert(!std::is_convertible<const std::vector<float>&, span<float>>::value, "const stays const");
  static_assert(!std::is_convertible<span<const float>, span<float>>::value, "const stays const");
  static_assert(std::is_convertible<std::vector<float>&, span<const float>>::value, "adding const is fine");
}

TEST(ArgumentChecks, MultiplicationThatOverflowsIsRefused) {
  std::size_t n = 7;
  const std::size_t big = std::size_t{1} << 62;
  EXPECT_FALSE(lowbit::detail::checked_mul(big, 4, &n));
  EXPECT_EQ(n, 7u);  // untouched
  EXPECT_TRUE(lowbit::detail::checked_mul(big, 2, &n));
  EXPECT_EQ(n, std::size_t{1} << 63);
  EXPECT_TRUE(lowbit::detail::checked_mul(0, std::numeric_limits<std::size_t>::max(), &n));
  EXPECT_EQ(n, 0u);
}

TEST(ArgumentChecks, NullThenMisalignedThenOverlapping) {
  alignas(16) float x[16] = {};
  alignas(16) float y[16] = {};
  const float* null = nullptr;
  // An empty buffer may be null; a non-empty one may not.
  EXPECT_EQ(check_buffers({buffer_of(null, 0)}, {buffer_of(y, 4)}), errc::ok);
  EXPECT_EQ(check_buffers({buffer_of(null, 1)}, {buffer_of(y, 4)}), errc::bad_argument);
  // One byte off a float's alignment.
  const float* odd = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(x) + 1);
  EXPECT_EQ(check_buffers({buffer_of(odd, 2)}, {buffer_of(y, 4)}), errc::misaligned);
  // Null is reported before misalignment, misalignment before overlap.
  EXPECT_EQ(check_buffers({buffer_of(odd, 2)}, {buffer_of(null, 4)}), errc::bad_argument);
  EXPECT_EQ(check_buffers({buffer_of(odd, 2)}, {buffer_of(odd, 2)}), errc::misaligned);
  // Overlap of an output with an input, and of two outputs; adjacent ranges do not overlap.
  EXPECT_EQ(check_buffers({buffer_of(x, 8)}, {buffer_of(x + 7, 4)}), errc::overlapping_buffers);
  EXPECT_EQ(check_buffers({buffer_of(x, 8)}, {buffer_of(x + 8, 4)}), errc::ok);
  EXPECT_EQ(check_buffers({buffer_of(x, 8)}, {buffer_of(y, 8), buffer_of(y + 4, 1)}), errc::overlapping_buffers);
  EXPECT_EQ(check_buffers({buffer_of(x, 8)}, {buffer_of(y, 8), buffer_of(y + 8, 8)}), errc::ok);
  // Inputs may overlap each other (reading twice is harmless).
  EXPECT_EQ(check_buffers({buffer_of(x, 8), buffer_of(x, 8)}, {buffer_of(y, 8)}), errc::ok);
  // Bytes of different element types: a uint8 output inside a float input.
  const auto* bytes = reinterpret_cast<std::uint8_t*>(y);
  EXPECT_EQ(check_buffers({buffer_of(x, 16)}, {buffer_of(bytes + 63, 1)}), errc::ok);
  EXPECT_EQ(check_buffers({buffer_of(y, 16)}, {buffer_of(bytes + 63, 1)}), errc::overlapping_buffers);
}

TEST(ArgumentChecks, ByteCountsSaturateInsteadOfWrapping) {
  const float* p = reinterpret_cast<const float*>(std::uintptr_t{64});
  EXPECT_EQ(buffer_of(p, std::numeric_limits<std::size_t>::max() / 2).bytes, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(buffer_of(p, 10).bytes, 40u);
}

TEST(PackedBytes, EveryWidthAndCountWithoutOverflow) {
  for (int bits = 1; bits <= 8; ++bits)
    for (std::size_t n = 0; n < 200; ++n) {
      const std::size_t want = (n * static_cast<std::size_t>(bits) + 7) / 8;  // no overflow at this n
      ASSERT_EQ(lowbit::packed_bytes(n, bits), want) << "bits " << bits << ", n " << n;
    }
  // 2^61 four-bit codes: 2^60 bytes, where the product n * 4 would have wrapped to 0.
  EXPECT_EQ(lowbit::packed_bytes(std::size_t{1} << 61, 4), std::size_t{1} << 60);
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(lowbit::packed_bytes(max, 8), max);
  EXPECT_EQ(lowbit::packed_bytes(max, 1), max / 8 + 1);
  EXPECT_EQ(lowbit::packed_bytes(max, 4), max / 2 + 1);
}

TEST(Status, EveryCodeHasItsOwnMessage) {
  std::set<std::string> seen;
  for (int c = 0; c <= static_cast<int>(errc::not_positive_definite); ++c) {
    const std::string m = lowbit::message(static_cast<errc>(c));
    EXPECT_NE(m, "unknown error") << c;
    EXPECT_TRUE(seen.insert(m).second) << "duplicate message " << m;
  }
  EXPECT_STREQ(lowbit::message(static_cast<errc>(static_cast<int>(errc::not_positive_definite) + 1)), "unknown error");
  const lowbit::status s = errc::overlapping_buffers;
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), errc::overlapping_buffers);
}

}  // namespace
