// lowbit tests: the helpers several test files share. Header-only, test code only.
//
//   mxcsr_scope     sets MXCSR's FTZ, DAZ and rounding-control bits for its lifetime
//   mxcsr_states    the states every bit-identity test runs under, with their names
//   float_from_bits / float_bits / double_bits   exact bit views
//   misaligned<T>   a buffer whose data() is one byte off T's alignment
//   gaussian        reproducible normal samples
//   REQUIRE_AVX2()  skips a test where the AVX2 path cannot run
//   sanitized_size  a smaller size or count for the builds under the sanitizers
#ifndef LOWBIT_TESTS_SUPPORT_HPP
#define LOWBIT_TESTS_SUPPORT_HPP

#include <gtest/gtest.h>

#include <lowbit/core/cpu.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#include <xmmintrin.h>
#define LOWBIT_TEST_HAS_MXCSR 1
#else
#define LOWBIT_TEST_HAS_MXCSR 0
#endif

namespace lowbit_test {

// MXCSR bits: FTZ 0x8000, DAZ 0x0040, rounding control 0x6000 (0x2000 down, 0x4000 up, 0x6000
// toward zero).
inline constexpr unsigned mxcsr_ftz = 0x8000u;
inline constexpr unsigned mxcsr_daz = 0x0040u;
inline constexpr unsigned mxcsr_round_down = 0x2000u;
inline constexpr unsigned mxcsr_round_up = 0x4000u;
inline constexpr unsigned mxcsr_round_toward_zero = 0x6000u;

struct mxcsr_state {
  const char* name;
  unsigned bits;  // FTZ, DAZ and RC bits; the rest of MXCSR is kept
};

// Builds under AddressSanitizer (CI's sanitize step) run two of the states: the sanitizers look
// for memory and undefined-behaviour errors, which do not depend on MXCSR, and at -O0 the six
// states cost minutes; every other build runs all six.
#if defined(__SANITIZE_ADDRESS__)
#define LOWBIT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOWBIT_TEST_SANITIZED 1
#endif
#endif
#ifndef LOWBIT_TEST_SANITIZED
#define LOWBIT_TEST_SANITIZED 0
#endif

// full in every build, sanitized under the sanitizers: they look for memory and undefined-behaviour
// errors, which need every code path and blocking boundary but not a large n, and at -O0 the float64
// references at n = 1000 cost minutes. A sanitized size must still cross the boundaries full does.
constexpr std::size_t sanitized_size(std::size_t full, std::size_t sanitized) {
  return LOWBIT_TEST_SANITIZED ? sanitized : full;
}

#if LOWBIT_TEST_HAS_MXCSR
inline constexpr mxcsr_state mxcsr_states[] = {
    {"MXCSR default", 0u},
#if !LOWBIT_TEST_SANITIZED
    {"FTZ", mxcsr_ftz},
    {"DAZ", mxcsr_daz},
    {"FTZ+DAZ", mxcsr_ftz | mxcsr_daz},
#endif
    {"FTZ+DAZ, round down", mxcsr_ftz | mxcsr_daz | mxcsr_round_down},
#if !LOWBIT_TEST_SANITIZED
    {"round toward zero", mxcsr_round_toward_zero},
#endif
};

class mxcsr_scope {
 public:
  explicit mxcsr_scope(unsigned bits) : saved_(_mm_getcsr()) { _mm_setcsr((saved_ & ~0xE040u) | bits); }
  ~mxcsr_scope() { _mm_setcsr(saved_); }
  mxcsr_scope(const mxcsr_scope&) = delete;
  mxcsr_scope& operator=(const mxcsr_scope&) = delete;

 private:
  unsigned saved_;
};
#else
inline constexpr mxcsr_state mxcsr_states[] = {{"default environment", 0u}};
class mxcsr_scope {
 public:
  explicit mxcsr_scope(unsigned) {}
};
#endif

inline float float_from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
inline std::uint32_t float_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline double double_from_bits(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
inline std::uint64_t double_bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// n elements of T starting one byte past an aligned address: the pointer a caller gets from a
// byte buffer it did not align. Only its address is meant to be used (the calls must reject it).
template <class T>
class misaligned {
 public:
  explicit misaligned(std::size_t n) : bytes_(n * sizeof(T) + alignof(T) + 1) {}
  T* data() noexcept {
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(bytes_.data());
    const std::uintptr_t aligned = (base + alignof(T) - 1) / alignof(T) * alignof(T);
    return reinterpret_cast<T*>(aligned + 1);
  }

 private:
  std::vector<unsigned char> bytes_;
};

// n values from N(0, sd^2), reproducible from the seed.
inline std::vector<float> gaussian(std::size_t n, float sd, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline bool have_avx2() { return lowbit::is_supported(lowbit::isa::avx2); }
inline bool have_avx512() { return lowbit::is_supported(lowbit::isa::avx512); }

// The SIMD paths this build and CPU can take (avx2, then avx512), to compare with the scalar
// reference; empty under LOWBIT_SCALAR_ONLY or on a CPU without AVX2.
inline std::vector<lowbit::isa> simd_paths() {
  std::vector<lowbit::isa> p;
  for (const lowbit::isa i : {lowbit::isa::avx2, lowbit::isa::avx512})
    if (lowbit::is_supported(i)) p.push_back(i);
  return p;
}

// The exhaustive sweeps: every k-th input (LOWBIT_EXHAUSTIVE_STRIDE, default 1: all of them), on
// every hardware thread.
inline std::uint64_t stride_from_env() {
  const char* s = std::getenv("LOWBIT_EXHAUSTIVE_STRIDE");
  if (s == nullptr) return 1;
  const unsigned long long k = std::strtoull(s, nullptr, 10);
  return k == 0 ? 1 : k;
}
inline unsigned thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

// Large calls (16 MiB and more of float32, where the kernels stream their outputs). The input:
// normal values, every third row of 4096 scaled up, the others down.
inline std::vector<float> large_input(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = nd(gen) * (i / 4096 % 3 == 0 ? 300.0f : 0.02f);
  return x;
}

// Elements from p to the next 64-byte boundary, at least 1 (room for a guard element before).
template <class T>
std::size_t to_line(const T* p) {
  const std::size_t k = (64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64 / sizeof(T);
  return k == 0 ? 64 / sizeof(T) : k;
}

// What a call wrote at p + at (count elements), with the element before and after it.
template <class T>
std::vector<T> written(const std::vector<T>& v, std::size_t at, std::size_t count) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(at - 1), v.begin() + static_cast<std::ptrdiff_t>(at + count + 1));
}

// A quantize-and-dequantize pair of large calls into element bytes, scale_count scales (bytes, or
// Scale: float for the integer schemes) and n floats, each output at a 64-byte aligned address
// (streamed), then one element past it, on every path of `paths` (the scalar one first): every
// path must write the first path's values, and nothing next to them. call(elements, scales,
// values) makes both calls and returns whether both succeeded.
template <class Scale = std::uint8_t, class Call>
void check_large_call(const std::vector<lowbit::isa>& paths, std::size_t element_bytes, std::size_t scale_count,
                      std::size_t n, Call call) {
  const Scale mark = static_cast<Scale>(0x5A);
  for (const std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
    std::vector<std::uint8_t> want_e;
    std::vector<Scale> want_s;
    std::vector<float> want_y;
    for (const lowbit::isa path : paths) {
      SCOPED_TRACE(testing::Message() << lowbit::isa_name(path) << ", shift " << shift);
      const lowbit::scoped_isa use(path);
      std::vector<std::uint8_t> e(element_bytes + 66, 0x5A);
      std::vector<Scale> s(scale_count + 66, mark);
      std::vector<float> y(n + 18, -1.0f);
      const std::size_t ae = to_line(e.data()) + shift, as = to_line(s.data()) + shift, ay = to_line(y.data()) + shift;
      ASSERT_TRUE(call(e.data() + ae, s.data() + as, y.data() + ay));
      const std::vector<std::uint8_t> we = written(e, ae, element_bytes);
      const std::vector<Scale> ws = written(s, as, scale_count);
      const std::vector<float> wy = written(y, ay, n);
      EXPECT_EQ(we.front(), 0x5A);
      EXPECT_EQ(we.back(), 0x5A);
      EXPECT_EQ(ws.front(), mark);
      EXPECT_EQ(ws.back(), mark);
      EXPECT_EQ(wy.front(), -1.0f);
      EXPECT_EQ(wy.back(), -1.0f);
      if (want_e.empty()) {
        want_e = we;
        want_s = ws;
        want_y = wy;
        continue;
      }
      EXPECT_TRUE(we == want_e);
      EXPECT_EQ(std::memcmp(ws.data(), want_s.data(), ws.size() * sizeof(Scale)), 0);
      EXPECT_EQ(std::memcmp(wy.data(), want_y.data(), wy.size() * sizeof(float)), 0);
    }
  }
}

}  // namespace lowbit_test

#define REQUIRE_AVX2()                                                                 \
  do {                                                                                 \
    if (!::lowbit_test::have_avx2()) GTEST_SKIP() << "no AVX2 path on this build/CPU"; \
  } while (0)

#endif  // LOWBIT_TESTS_SUPPORT_HPP
