// lowbit fuzz targets: what every target shares.
//
// Each tests/fuzz/fuzz_<family>.cpp defines LLVMFuzzerTestOneInput. Built with clang and
// -fsanitize=fuzzer it is a libFuzzer binary; otherwise driver.cpp supplies main() (see there).
// A target decodes its input into options, a shape and data with `input`, calls the family on
// the scalar path and on the SIMD path, and checks invariants with LOWBIT_FUZZ_CHECK, which
// prints what failed and calls abort(): libFuzzer then saves the input as a reproducer.
#ifndef LOWBIT_TESTS_FUZZ_FUZZ_HPP
#define LOWBIT_TESTS_FUZZ_FUZZ_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <lowbit/core/cpu.hpp>

#define LOWBIT_FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                               \
      std::fprintf(stderr, "\n");                                                      \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace lowbit_fuzz {

// Reads the fuzz input front to back; past the end every read returns zeros, so any input,
// the empty one included, decodes to something.
class input {
 public:
  input(const std::uint8_t* data, std::size_t size) noexcept : p_(data), end_(data + size) {}

  std::uint8_t u8() noexcept { return p_ < end_ ? *p_++ : 0; }
  std::uint16_t u16() noexcept { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() noexcept { return static_cast<std::uint32_t>(u16()) | (static_cast<std::uint32_t>(u16()) << 16); }
  std::uint64_t u64() noexcept { return static_cast<std::uint64_t>(u32()) | (static_cast<std::uint64_t>(u32()) << 32); }
  bool flag() noexcept { return (u8() & 1u) != 0; }
  // A value in [0, n) (n > 0).
  std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(u16()) % n; }

  // A float that is often interesting: raw bits, a small integer, a power of two near the
  // format boundaries, a tie, zero, Inf, NaN, a subnormal.
  float f32() noexcept {
    const std::uint8_t kind = u8();
    switch (kind % 8) {
      case 0:
      case 1:
      case 2: return bits_to_float(u32());
      case 3: return static_cast<float>(static_cast<std::int8_t>(u8())) * 0.25f;
      case 4: return bits_to_float((static_cast<std::uint32_t>(u8()) << 23) | (u8() & 0x7u) << 20 | ((kind & 0x80u) ? 0x80000000u : 0u));
      case 5: return bits_to_float((u32() & 0x807FFFFFu));  // subnormal or zero
      case 6: {
        static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, 464.0f, 57344.0f, 6.0f, 7.5f, 28.0f,
                                        3.4028235e38f, -3.4028235e38f, 1e-45f, 0x1p-126f, 0x1p-127f, 0x1p127f};
        return special[u8() % (sizeof(special) / sizeof(special[0]))];
      }
      default: {
        const std::uint32_t inf_nan[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u};
        return bits_to_float(inf_nan[u8() % 5]);
      }
    }
  }

  // n floats; finite_only keeps Inf and NaN out.
  std::vector<float> floats(std::size_t n, bool finite_only = false) noexcept {
    std::vector<float> v(n);
    for (float& x : v) {
      x = f32();
      if (finite_only && !(x - x == 0.0f)) x = 0.0f;
    }
    return v;
  }

  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

  static float bits_to_float(std::uint32_t b) noexcept {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

inline std::uint32_t float_bits(float f) noexcept {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Fills a buffer of trivially copyable T with the canary byte 0xA5 and checks it is still there.
constexpr std::uint8_t canary = 0xA5;
template <class T>
std::vector<T> canary_buffer(std::size_t n) {
  std::vector<T> v(n);
  if (n != 0) std::memset(static_cast<void*>(v.data()), canary, n * sizeof(T));
  return v;
}
template <class T>
bool untouched(const std::vector<T>& v) noexcept {
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(T); ++i)
    if (b[i] != canary) return false;
  return true;
}
template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) noexcept {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
template <class T>
std::size_t first_difference(const std::vector<T>& a, const std::vector<T>& b) noexcept {
  const auto* x = reinterpret_cast<const unsigned char*>(a.data());
  const auto* y = reinterpret_cast<const unsigned char*>(b.data());
  const std::size_t n = (a.size() < b.size() ? a.size() : b.size()) * sizeof(T);
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return i / sizeof(T);
  return n / sizeof(T);
}

// Runs f on the scalar reference, then on the best path the CPU has (the same when that is
// scalar), and returns both results.
template <class F>
auto on_both_paths(F f) -> std::pair<decltype(f()), decltype(f())> {
  auto ref = [&] {
    lowbit::scoped_isa s{lowbit::isa::scalar};
    return f();
  }();
  auto simd = f();
  return {std::move(ref), std::move(simd)};
}

// A pointer that is never dereferenced: for calls that must reject a shape before they touch
// memory. Aligned for any element type.
template <class T>
T* fake_pointer() noexcept {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(0x1000));
}

// The bytes of one block-format quantization (MX, NVFP4), with canary guards past both ends.
struct block_outputs {
  std::vector<std::uint8_t> elements, scales;
  lowbit::status st;
};

// What the block-format targets check of a quantization run on both paths: the same status and
// bytes, nothing written past e_bytes / s_bytes, and nothing written by an empty call. Returns
// false when there is nothing more to check (n == 0).
inline bool check_block_quantize(const block_outputs& ref, const block_outputs& simd, std::size_t e_bytes,
                                 std::size_t s_bytes, std::size_t guard, std::size_t n) {
  LOWBIT_FUZZ_CHECK(ref.st.code() == simd.st.code(), "status: scalar %s, SIMD %s", ref.st.message(), simd.st.message());
  LOWBIT_FUZZ_CHECK(same_bytes(ref.elements, simd.elements), "elements: SIMD differs at byte %zu of %zu",
                    first_difference(ref.elements, simd.elements), e_bytes);
  LOWBIT_FUZZ_CHECK(same_bytes(ref.scales, simd.scales), "scales: SIMD differs at byte %zu of %zu",
                    first_difference(ref.scales, simd.scales), s_bytes);
  for (std::size_t i = 0; i < guard; ++i) {
    LOWBIT_FUZZ_CHECK(ref.elements[e_bytes + i] == canary && ref.scales[s_bytes + i] == canary,
                      "wrote past %zu element bytes / %zu scale bytes", e_bytes, s_bytes);
  }
  if (n != 0) return true;
  LOWBIT_FUZZ_CHECK(ref.st.ok() && untouched(ref.elements) && untouched(ref.scales), "an empty call wrote or failed");
  return false;
}

// A size whose byte count overflows size_t whatever the element size.
inline std::size_t huge_size(input& in) noexcept {
  static const std::size_t sizes[] = {static_cast<std::size_t>(-1), static_cast<std::size_t>(-1) / 2 + 1,
                                      std::size_t{1} << 61, (std::size_t{1} << 62) + 32, std::size_t{1} << 63};
  return sizes[in.u8() % (sizeof(sizes) / sizeof(sizes[0]))];
}

// A matrix shape for a family whose groups or blocks are `unit` values long. Mostly valid and
// small; sometimes not a multiple of unit, empty, or so large that rows * cols * elem_bytes
// overflows size_t. `fake` is set when the shape is too large to allocate: the call must reject
// it before touching memory (it always overflows then), so the target passes fake_pointer()s.
struct shape {
  std::size_t rows = 0, cols = 0;
  bool fake = false;
  std::size_t n() const noexcept { return rows * cols; }
};

inline bool mul_overflows(std::size_t a, std::size_t b, std::size_t c) noexcept {
  std::size_t ab = 0, abc = 0;
  return __builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc);
}

inline shape read_shape(input& in, std::size_t unit, std::size_t elem_bytes = 4,
                        std::size_t max_elements = std::size_t{1} << 18) noexcept {
  shape s;
  const std::size_t u = unit == 0 ? 1 : unit;
  const unsigned kind = in.u8() % 16u;
  if (kind < 11) {
    s.rows = 1 + in.below(4);
    if (__builtin_mul_overflow(u, 1 + in.below(6), &s.cols)) s.cols = u;
  } else if (kind < 13) {
    s.rows = 1 + in.below(3);
    s.cols = 1 + (u > 1 ? in.below(u - 1) : 0);  // 1 .. u-1 past a multiple of u
    std::size_t whole = 0;
    if (u > 1 && !__builtin_mul_overflow(u, in.below(3), &whole) && whole < whole + s.cols) s.cols += whole;
  } else if (kind == 13) {
    s.rows = in.flag() ? 0 : 1 + in.below(4);
    s.cols = s.rows == 0 ? u * in.below(3) : 0;
  } else if (kind == 14) {
    s.rows = huge_size(in);
    if (__builtin_mul_overflow(u, 1 + in.below(4), &s.cols)) s.cols = u;
  } else {
    s.rows = 1 + in.below(3);
    s.cols = huge_size(in);
  }
  if (mul_overflows(s.rows, s.cols, 1) || s.rows * s.cols > max_elements) {
    s.fake = true;
    // Too large to allocate: make sure the byte count overflows, so a correct call rejects it.
    if (!mul_overflows(s.rows, s.cols, elem_bytes)) s.rows = static_cast<std::size_t>(-1);
  }
  return s;
}

}  // namespace lowbit_fuzz

#endif  // LOWBIT_TESTS_FUZZ_FUZZ_HPP
