// The AVX2 format conversions (kernels/convert/avx2.hpp, through lowbit::convert and
// lowbit::convert_packed) against the scalar reference (kernels/convert/scalar.hpp), byte for byte.
//
// Every check computes the expected bytes once with the scalar kernels and MXCSR at its default,
// then runs the public entry points on the AVX2 path and on the scalar path under each MXCSR state
// (FTZ, DAZ, both, and with directed rounding control) and compares: neither path may depend on
// the floating-point environment. Each input set runs whole and as many sub-arrays (lengths that
// are not multiples of the 32-element block, pointers that are not aligned); canary bytes around
// the destination catch writes past the end.
//
// Input sets: random float32 bit patterns (NaN payloads, subnormals, everything), Gaussian values
// scaled to the format's range (so that whole blocks take the kernels' fast paths), and per
// format the edge values: every code's value and its neighbours, every midpoint (a tie) and its
// neighbours, the overflow boundary, Inf, NaNs, +-0 and float subnormals. The edge values run
// sorted, shuffled, and each one repeated over a whole block, so that every fast path meets ties
// and boundaries too. The 16-bit sources and the byte formats' codes are covered exhaustively.
#include <gtest/gtest.h>

#include <lowbit/convert.hpp>
#include <lowbit/core/cpu.hpp>
#include <lowbit/formats/limits.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::isa;
using lowbit::overflow;
using lowbit::policy;
using lowbit::rounding;

using lowbit_test::have_avx2;
using lowbit_test::mxcsr_scope;
using fp_env = lowbit_test::mxcsr_state;
constexpr const auto& environments = lowbit_test::mxcsr_states;

using lowbit_test::float_bits;
using lowbit_test::float_from_bits;

std::vector<float> random_patterns(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float_from_bits(static_cast<std::uint32_t>(gen()));
  return v;
}

// Float subnormals and the smallest normals (exponent field 0..2), random signs, no NaN or Inf,
// every fourth one a tie at bit 15 (bfloat16's rounding position): blocks of inputs that an
// encoder may handle without its NaN and overflow checks.
std::vector<float> tiny_patterns(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t b = static_cast<std::uint32_t>(gen()) & 0x817FFFFFu;  // sign, exponent 0..2, mantissa
    if (i % 4 == 0) b = (b & 0xFFFF0000u) | 0x8000u;
    v[i] = float_from_bits(b);
  }
  return v;
}

using lowbit_test::gaussian;

void add_with_neighbours(std::vector<float>& v, float x) {
  v.push_back(x);
  v.push_back(std::nextafter(x, 0.0f));
  v.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
}

// The edge values of format T (non-negative; negated copies are added by the caller).
template <class T>
std::vector<float> edge_values() {
  using F = typename T::format;
  std::vector<float> v;
  std::vector<float> finite;
  const std::uint32_t codes = 1u << F::bits;
  std::mt19937 gen(7);
  for (std::uint32_t c = 0; c < codes; ++c) {
    if (F::bits > 8 && c % 509 != 0 && c < codes - 64) continue;  // 16-bit formats: a sample
    const float x = static_cast<float>(T::from_bits(static_cast<typename F::storage>(c)));
    if (std::isfinite(x) && !std::signbit(x)) finite.push_back(x);
  }
  std::sort(finite.begin(), finite.end());
  finite.erase(std::unique(finite.begin(), finite.end()), finite.end());
  for (std::size_t i = 0; i < finite.size(); ++i) {
    add_with_neighbours(v, finite[i]);
    if (i + 1 < finite.size()) add_with_neighbours(v, finite[i] + (finite[i + 1] - finite[i]) / 2);  // a tie
  }
  const float max = finite.back();
  const float min_sub = finite.size() > 1 ? finite[1] : finite[0];
  add_with_neighbours(v, min_sub / 2);  // ties to zero
  add_with_neighbours(v, min_sub / 4);
  add_with_neighbours(v, min_sub * 0.75f);
  const float ulp_at_max = finite.size() > 1 ? max - finite[finite.size() - 2] : max;
  add_with_neighbours(v, max + ulp_at_max / 2);  // the overflow tie (464 for E4M3FN)
  add_with_neighbours(v, max + ulp_at_max);
  add_with_neighbours(v, max * 2);
  add_with_neighbours(v, std::numeric_limits<float>::max());
  add_with_neighbours(v, std::numeric_limits<float>::min());
  for (std::uint32_t b : {0x00000001u, 0x00000002u, 0x003FFFFFu, 0x00400000u, 0x00400001u, 0x005FFFFFu, 0x00600000u,
                          0x00600001u, 0x007FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FA00000u, 0x7FC00000u, 0x7FFFFFFFu,
                          0x00000000u, 0x34000000u, 0x3E800000u, 0x3F400000u})
    v.push_back(float_from_bits(b));
  return v;
}

// The edge values and their negatives: sorted by magnitude (neighbours share blocks), shuffled,
// and each value alone over a whole 32-element block.
template <class T>
std::vector<float> edge_set() {
  std::vector<float> e = edge_values<T>();
  const std::size_t k = e.size();
  for (std::size_t i = 0; i < k; ++i) e.push_back(-e[i]);
  std::vector<float> out = e;
  std::sort(out.begin(), out.end(), [](float a, float b) { return (float_bits(a) & 0x7FFFFFFFu) < (float_bits(b) & 0x7FFFFFFFu); });
  std::vector<float> shuffled = e;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(11));
  out.insert(out.end(), shuffled.begin(), shuffled.end());
  for (float x : e) out.insert(out.end(), 32, x);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Running a kernel on sub-arrays.

// The (offset, length) pairs of src each check runs on: the whole array at several offsets, and
// short pieces around the block size.
std::vector<std::pair<std::size_t, std::size_t>> pieces(std::size_t n) {
  std::vector<std::pair<std::size_t, std::size_t>> p;
  for (std::size_t off : {0u, 1u, 3u, 13u})
    if (off <= n) p.emplace_back(off, n - off);
  for (std::size_t len : {0u, 1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 32u, 33u, 47u, 63u, 64u, 65u, 97u, 127u, 129u, 255u, 257u})
    for (std::size_t off : {5u, 32u})
      if (off + len <= n) p.emplace_back(off, len);
  return p;
}

// The paths compared with the scalar reference: every SIMD path this build and CPU have (AVX2,
// AVX-512), then scalar itself through the public dispatch.
std::vector<isa> checked_paths() {
  std::vector<isa> p = lowbit_test::simd_paths();
  p.push_back(isa::scalar);
  return p;
}

constexpr std::uint8_t canary = 0xA5;
constexpr std::size_t guard = 40;  // canary bytes on each side

// Runs `write(dst)` into a buffer shifted by `shift` bytes from 32-byte alignment and guarded by
// canaries; returns the `bytes` written, and fails the test if a canary changed.
template <class Write>
std::vector<std::uint8_t> run_guarded(std::size_t bytes, std::size_t shift, Write write, const std::string& what) {
  std::vector<std::uint8_t> buf(bytes + 2 * guard + 64, canary);
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(buf.data());
  const std::size_t start = guard + (32 - (base + guard) % 32) % 32 + shift;  // 32-byte aligned + shift
  write(buf.data() + start);
  for (std::size_t i = 0; i < start; ++i)
    if (buf[i] != canary) {
      ADD_FAILURE() << what << ": wrote before the destination";
      break;
    }
  for (std::size_t i = start + bytes; i < buf.size(); ++i)
    if (buf[i] != canary) {
      ADD_FAILURE() << what << ": wrote past the end of the destination (" << bytes << " bytes)";
      break;
    }
  return std::vector<std::uint8_t>(buf.begin() + static_cast<std::ptrdiff_t>(start),
                                   buf.begin() + static_cast<std::ptrdiff_t>(start + bytes));
}

std::string hex_bytes(const std::uint8_t* p, std::size_t n) {
  std::string s;
  char b[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02X", p[i]);
    s += b;
  }
  return s;
}

// Compares got with expected; on a mismatch reports the first differing byte, the element that
// owns it (output_bits per element) and that element's input (input(e) gives its bits).
template <class Input>
bool same_bytes(const std::vector<std::uint8_t>& got, const std::uint8_t* expected, std::size_t output_bits,
                Input input, const std::string& what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;
    const std::size_t e = i * 8 / output_bits;
    ADD_FAILURE() << what << ": byte " << i << " (element " << e << ", input 0x" << std::hex << input(e) << std::dec
                  << ") is 0x" << hex_bytes(&got[i], 1) << ", scalar reference 0x" << hex_bytes(expected + i, 1);
    return false;
  }
  return true;
}

template <class From>
std::uint64_t bits_of(const From& x) {
  std::uint64_t b = 0;
  std::memcpy(&b, &x, sizeof(From) < 8 ? sizeof(From) : 8);
  return b;
}

// Encoding: src (float, float16, bfloat16 or a byte format) into T, one code per element (or
// packed when Packed), under policy p; random bits for rounding::stochastic.
template <class T, bool Packed, class From>
void check_encode(const std::vector<From>& src, const policy& p, const std::vector<std::uint32_t>* random,
                  const std::string& name) {
  const std::size_t n = src.size();
  const std::uint32_t* r = random != nullptr ? random->data() : nullptr;
  constexpr std::size_t bits = Packed ? T::format::bits : 8 * sizeof(T);
  auto out_bytes = [](std::size_t len) { return Packed ? lowbit::packed_bytes<T>(len) : len * sizeof(T); };

  for (const auto& piece : pieces(n)) {
    const std::size_t off = piece.first, len = piece.second;
    const From* s = src.data() + off;
    const std::uint32_t* rs = r != nullptr ? r + off : nullptr;
    // The reference, MXCSR untouched.
    const std::vector<std::uint8_t> expected = run_guarded(out_bytes(len), 0, [&](std::uint8_t* d) {
      if constexpr (Packed)
        lowbit::kernels::scalar::encode_packed<T>(s, d, len, p, rs);
      else
        lowbit::kernels::scalar::encode(s, reinterpret_cast<T*>(d), len, p, rs);
    }, name);
    for (const fp_env& env : environments) {
      for (const isa path : checked_paths()) {
        const std::string what = name + ", " + lowbit::isa_name(path) + ", " + env.name + ", offset " +
                                 std::to_string(off) + ", length " + std::to_string(len);
        const std::size_t shift = (off * 7 + len) % (Packed ? 32 : 32 / sizeof(T)) * (Packed ? 1 : sizeof(T));
        const std::vector<std::uint8_t> got = run_guarded(out_bytes(len), shift, [&](std::uint8_t* d) {
          const lowbit::scoped_isa use(path);
          const mxcsr_scope fp(env.bits);
          if constexpr (Packed)
            lowbit::convert_packed<T>(s, d, len, p, rs);
          else
            lowbit::convert(s, reinterpret_cast<T*>(d), len, p, rs);
        }, what);
        if (!same_bytes(got, expected.data(), bits, [&](std::size_t e) { return bits_of(s[e]); }, what)) return;
      }
    }
  }
}

// Decoding: codes of T (one per element, or packed) into float, exactly.
template <class T, bool Packed>
void check_decode(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  constexpr std::size_t bits = Packed ? T::format::bits : 8 * sizeof(T);
  const std::size_t n = bytes.size() * 8 / bits;
  for (const auto& piece : pieces(n)) {
    std::size_t off = piece.first;
    const std::size_t len = piece.second;
    if (Packed) off -= off % (T::format::bits == 6 ? 4 : 2);  // a packed stream starts on a byte
    const std::uint8_t* s = bytes.data() + off * bits / 8;
    const std::vector<std::uint8_t> expected = run_guarded(len * 4, 0, [&](std::uint8_t* d) {
      if constexpr (Packed)
        lowbit::kernels::scalar::decode_packed<T>(s, reinterpret_cast<float*>(d), len);
      else
        lowbit::kernels::scalar::decode(reinterpret_cast<const T*>(s), reinterpret_cast<float*>(d), len);
    }, name);
    for (const fp_env& env : environments) {
      for (const isa path : checked_paths()) {
        const std::string what = name + ", " + lowbit::isa_name(path) + ", " + env.name + ", offset " +
                                 std::to_string(off) + ", length " + std::to_string(len);
        const std::vector<std::uint8_t> got = run_guarded(len * 4, 4 * ((off + len) % 8), [&](std::uint8_t* d) {
          const lowbit::scoped_isa use(path);
          const mxcsr_scope fp(env.bits);
          if constexpr (Packed)
            lowbit::convert_packed<T>(s, reinterpret_cast<float*>(d), len);
          else
            lowbit::convert(reinterpret_cast<const T*>(s), reinterpret_cast<float*>(d), len);
        }, what);
        const auto input = [&](std::size_t e) -> std::uint64_t {  // the code of element e
          const std::size_t bit = e * bits;
          std::uint32_t w = s[bit / 8];
          if (bits > 8 - bit % 8 && bit / 8 + 1 < (len * bits + 7) / 8) w |= static_cast<std::uint32_t>(s[bit / 8 + 1]) << 8;
          return (w >> (bit % 8)) & ((1u << bits) - 1u);
        };
        if (!same_bytes(got, expected.data(), 32, input, what)) return;
      }
    }
  }
}

// The policies every encoding runs under.
struct named_policy {
  std::string name;
  policy p;
  bool random;  // pass random bits (rounding::stochastic)
};

std::vector<named_policy> all_policies() {
  std::vector<named_policy> v;
  const char* rm_names[] = {"nearest_even", "toward_zero", "toward_pos_inf", "stochastic", "nearest_away",
                            "nearest_toward_zero"};
  for (const overflow ov : {overflow::saturate, overflow::non_saturate}) {
    for (int rm = 0; rm < 6; ++rm) {
      policy p;
      p.ov = ov;
      p.rm = static_cast<rounding>(rm);
      const std::string name = std::string(rm_names[rm]) + (ov == overflow::saturate ? ", saturate" : ", non_saturate");
      v.push_back({name, p, p.rm == rounding::stochastic});
      if (p.rm == rounding::stochastic) v.push_back({name + ", no random bits", p, false});
    }
  }
  v.push_back({"preset cuda_nosat", lowbit::presets::cuda_nosat(), false});
  v.push_back({"preset ml_dtypes", lowbit::presets::ml_dtypes(), false});
  v.push_back({"preset ml_dtypes(saturate)", lowbit::presets::ml_dtypes(overflow::saturate), false});
  v.push_back({"preset pytorch", lowbit::presets::pytorch(), false});
  v.push_back({"preset pytorch(saturate)", lowbit::presets::pytorch(overflow::saturate), false});
  v.push_back({"preset onnx", lowbit::presets::onnx(), false});
  v.push_back({"preset onnx(non_saturate)", lowbit::presets::onnx(overflow::non_saturate), false});
  v.push_back({"preset onnx(non_saturate, toward_zero)", lowbit::presets::onnx(overflow::non_saturate, rounding::toward_zero),
               false});
  v.push_back({"preset onnx(saturate, toward_pos_inf)", lowbit::presets::onnx(overflow::saturate, rounding::toward_pos_inf),
               false});
  // Signed NaN codes and +-Inf kept under saturation (limit_mode::inf_lanes) on the paths of the
  // other rounding modes too (path 2 turns Inf away under inf_lanes: fast_t_top).
  policy pytorch_stochastic = lowbit::presets::pytorch(overflow::saturate);
  pytorch_stochastic.rm = rounding::stochastic;
  v.push_back({"preset pytorch(saturate), stochastic", pytorch_stochastic, true});
  policy pytorch_nosat_stochastic = lowbit::presets::pytorch();
  pytorch_nosat_stochastic.rm = rounding::stochastic;
  v.push_back({"preset pytorch, stochastic", pytorch_nosat_stochastic, true});
  policy ml_dtypes_away = lowbit::presets::ml_dtypes(overflow::saturate);
  ml_dtypes_away.rm = rounding::nearest_away;
  v.push_back({"preset ml_dtypes(saturate), nearest_away", ml_dtypes_away, false});
  // Toward +Inf without saturation, whose limit depends on each finite lane's sign, with signed NaN codes.
  policy pytorch_up = lowbit::presets::pytorch();
  pytorch_up.rm = rounding::toward_pos_inf;
  v.push_back({"preset pytorch, toward_pos_inf", pytorch_up, false});
  policy signed_max;
  signed_max.nan_to_finite = lowbit::nan_to_finite::signed_max;
  v.push_back({"nan_to_finite::signed_max", signed_max, false});
  policy propagate_up;
  propagate_up.inf = lowbit::inf_policy::propagate;
  propagate_up.rm = rounding::toward_pos_inf;
  v.push_back({"inf_policy::propagate, toward_pos_inf", propagate_up, false});
  return v;
}

std::vector<std::uint32_t> random_words(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint32_t> r(n);
  for (std::uint32_t& x : r) x = static_cast<std::uint32_t>(gen());
  // A few extremes, where the carry decision sits on its boundary.
  for (std::size_t i = 0; i < n; i += 7) r[i] = (i / 7) % 2 == 0 ? 0xFFFFFFFFu : 0u;
  return r;
}

// float32 inputs for format T: random patterns, Gaussian at the format's scale, edge set.
template <class T>
std::vector<std::vector<float>> float_inputs() {
  const float sigma = static_cast<float>(std::numeric_limits<T>::max()) / 4;
  return {random_patterns(1000, 1), gaussian(1500, sigma, 2), gaussian(600, sigma / 64, 3), edge_set<T>(),
          tiny_patterns(640, 4)};
}

template <class T, bool Packed = false>
void encode_from_float_all_policies(const char* type_name) {
  const auto inputs = float_inputs<T>();
  for (const named_policy& np : all_policies()) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::vector<std::uint32_t> random = random_words(inputs[k].size(), 100 + static_cast<unsigned>(k));
      check_encode<T, Packed>(inputs[k], np.p, np.random ? &random : nullptr,
                              std::string("float -> ") + type_name + (Packed ? " packed" : "") + ", " + np.name +
                                  ", input set " + std::to_string(k));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Dispatch.

TEST(KernelDispatch, OverridesAndRestores) {
  const isa before = lowbit::active_isa();
  {
    const lowbit::scoped_isa s(isa::scalar);
    EXPECT_EQ(lowbit::active_isa(), isa::scalar);
    {
      const lowbit::scoped_isa t(isa::avx2);
      EXPECT_EQ(lowbit::active_isa(), have_avx2() ? isa::avx2 : isa::scalar);
    }
    EXPECT_EQ(lowbit::active_isa(), isa::scalar);
  }
  EXPECT_EQ(lowbit::active_isa(), before);
  const isa previous = lowbit::set_isa(isa::scalar);
  EXPECT_EQ(previous, before);
  EXPECT_EQ(lowbit::active_isa(), isa::scalar);
  lowbit::reset_isa();
  EXPECT_EQ(lowbit::active_isa(), before);
  EXPECT_TRUE(lowbit::is_supported(isa::scalar));
  EXPECT_EQ(lowbit::is_supported(isa::avx2), lowbit::detected_isa() >= isa::avx2);
  EXPECT_EQ(lowbit::is_supported(isa::avx512), lowbit::detected_isa() == isa::avx512);
  {
    // Asking for more than the CPU has gives the best it has; each supported path is taken as asked.
    const lowbit::scoped_isa s(isa::avx512);
    EXPECT_EQ(lowbit::active_isa(), lowbit::detected_isa());
  }
  for (const isa i : {isa::scalar, isa::avx2, isa::avx512}) {
    if (!lowbit::is_supported(i)) continue;
    const lowbit::scoped_isa s(i);
    EXPECT_EQ(lowbit::active_isa(), i);
    EXPECT_EQ(lowbit::detail::use_avx2(), i >= isa::avx2);
    EXPECT_EQ(lowbit::detail::use_avx512(), i == isa::avx512);
  }
  EXPECT_STREQ(lowbit::isa_name(isa::scalar), "scalar");
  EXPECT_STREQ(lowbit::isa_name(isa::avx2), "avx2");
  EXPECT_STREQ(lowbit::isa_name(isa::avx512), "avx512");
#if LOWBIT_HAS_AVX2_KERNELS
  std::printf("detected %s, active %s\n", lowbit::isa_name(lowbit::detected_isa()), lowbit::isa_name(before));
#endif
}

// LOWBIT_FORCE_ISA names a path; LOWBIT_FORCE_SCALAR is its older spelling for scalar. The
// variables are read once per process, so the parser is tested here and the variables by CI.
TEST(KernelDispatch, EnvironmentSelectsACeiling) {
  const auto with = [](const char* force_isa, const char* force_scalar) {
    if (force_isa != nullptr) ::setenv("LOWBIT_FORCE_ISA", force_isa, 1); else ::unsetenv("LOWBIT_FORCE_ISA");
    if (force_scalar != nullptr) ::setenv("LOWBIT_FORCE_SCALAR", force_scalar, 1); else ::unsetenv("LOWBIT_FORCE_SCALAR");
    const int v = lowbit::detail::isa_forced_by_environment();
    ::unsetenv("LOWBIT_FORCE_ISA");
    ::unsetenv("LOWBIT_FORCE_SCALAR");
    return v;
  };
  const char* saved_isa = std::getenv("LOWBIT_FORCE_ISA");
  const char* saved_scalar = std::getenv("LOWBIT_FORCE_SCALAR");
  const std::string keep_isa = saved_isa != nullptr ? saved_isa : "";
  const std::string keep_scalar = saved_scalar != nullptr ? saved_scalar : "";
  EXPECT_EQ(with(nullptr, nullptr), -1);
  EXPECT_EQ(with("scalar", nullptr), static_cast<int>(isa::scalar));
  EXPECT_EQ(with("avx2", nullptr), static_cast<int>(isa::avx2));
  EXPECT_EQ(with("avx512", nullptr), static_cast<int>(isa::avx512));
  EXPECT_EQ(with("avx", nullptr), -1);       // not a path name: ignored
  EXPECT_EQ(with("avx2x", nullptr), -1);
  EXPECT_EQ(with("", nullptr), -1);
  EXPECT_EQ(with(nullptr, "1"), static_cast<int>(isa::scalar));
  EXPECT_EQ(with(nullptr, "0"), -1);
  EXPECT_EQ(with(nullptr, ""), -1);
  EXPECT_EQ(with("avx2", "1"), static_cast<int>(isa::avx2));  // the path name wins
  if (saved_isa != nullptr) ::setenv("LOWBIT_FORCE_ISA", keep_isa.c_str(), 1);
  if (saved_scalar != nullptr) ::setenv("LOWBIT_FORCE_SCALAR", keep_scalar.c_str(), 1);
}

// The VBMI forms (convert/avx512.hpp's FP8 and FP6 decoders) run when the CPU has VBMI, the
// avx512 path is active and LOWBIT_NO_VBMI is not set (ctest runs the decoders both ways).
TEST(KernelDispatch, VbmiFollowsTheCpuThePathAndTheEnvironment) {
#if LOWBIT_HAS_AVX512_KERNELS
  const char* v = std::getenv("LOWBIT_NO_VBMI");
  const bool forbidden = v != nullptr && std::string(v) != "" && std::string(v) != "0";
  const bool cpu = lowbit::is_supported(isa::avx512) && __builtin_cpu_supports("avx512vbmi");
  EXPECT_EQ(lowbit::detail::vbmi_allowed(), cpu && !forbidden);
  {
    const lowbit::scoped_isa use(isa::avx512);
    EXPECT_EQ(lowbit::detail::use_avx512_vbmi(), cpu && !forbidden);
  }
#endif
  const lowbit::scoped_isa use(isa::avx2);
  EXPECT_FALSE(lowbit::detail::use_avx512_vbmi());
}

// The VBMI byte tables: the default policy's at any length; another policy's built by a call of
// vbmi_build_min_elements or more and then used by calls of any length on that thread; a smaller
// call that would build them declines (the caller takes the AVX2 kernels) and writes nothing.
TEST(KernelDispatch, VbmiTablesAreBuiltByLargeCallsAndReusedBySmallOnes) {
#if LOWBIT_HAS_AVX512_KERNELS
  if (!lowbit::detail::vbmi_allowed()) GTEST_SKIP() << "no AVX-512 VBMI";
  std::thread([] {
    constexpr std::size_t big = lowbit::kernels::avx512::detail::vbmi_build_min_elements;
    std::vector<lowbit::float8_e5m2> src(big);
    for (std::size_t i = 0; i < big; ++i) src[i] = lowbit::float8_e5m2::from_bits(static_cast<std::uint8_t>(i * 37));
    const policy other = lowbit::presets::pytorch(overflow::saturate);
    std::vector<lowbit::float8_e4m3fn> want(big), got(big);
    for (const bool is_default : {true, false}) {
      const policy p = is_default ? policy{} : other;
      lowbit::kernels::scalar::encode(src.data(), want.data(), big, p, nullptr);
      std::fill(got.begin(), got.end(), lowbit::float8_e4m3fn::from_bits(0x55));
      EXPECT_EQ(lowbit::kernels::avx512::convert_vbmi(src.data(), got.data(), 1, p), is_default);
      EXPECT_EQ(got[0].bits(), is_default ? want[0].bits() : 0x55);
      EXPECT_TRUE(lowbit::kernels::avx512::convert_vbmi(src.data(), got.data(), big, p));
      EXPECT_EQ(std::memcmp(got.data(), want.data(), big), 0);
      std::fill(got.begin(), got.end(), lowbit::float8_e4m3fn::from_bits(0x55));
      EXPECT_TRUE(lowbit::kernels::avx512::convert_vbmi(src.data(), got.data(), 100, p));
      EXPECT_EQ(std::memcmp(got.data(), want.data(), 100), 0);
      EXPECT_EQ(got[100].bits(), 0x55);
    }
    // Another policy again: declined below the threshold while the thread holds `other`'s.
    policy third = other;
    third.rm = rounding::toward_zero;
    EXPECT_FALSE(lowbit::kernels::avx512::convert_vbmi(src.data(), got.data(), 100, third));
  }).join();
#endif
}

TEST(KernelDispatch, Avx512Bf16FollowsTheCpuThePathAndTheEnvironment) {
#if LOWBIT_HAS_AVX512_KERNELS
  const char* v = std::getenv("LOWBIT_NO_AVX512BF16");
  const bool forbidden = v != nullptr && std::string(v) != "" && std::string(v) != "0";
  const bool cpu = lowbit::is_supported(isa::avx512) && __builtin_cpu_supports("avx512bf16");
  EXPECT_EQ(lowbit::detail::avx512_bf16_allowed(), cpu && !forbidden);
  {
    const lowbit::scoped_isa use(isa::avx512);
    EXPECT_EQ(lowbit::detail::use_avx512_bf16(), cpu && !forbidden);
  }
#endif
  const lowbit::scoped_isa use(isa::avx2);
  EXPECT_FALSE(lowbit::detail::use_avx512_bf16());
}

// Known answers through the AVX2 path, in a full block and in the tail, so that a reference and a
// kernel that agree on something wrong still fail.
TEST(KernelDispatch, KnownAnswers) {
  REQUIRE_AVX2();
  const lowbit::scoped_isa use(isa::avx2);
  std::vector<float> x(40, 464.0f);  // the E4M3FN overflow tie: 448
  x[3] = 480.0f;                     // beyond it: saturates to 448, or NaN
  x[36] = -0.0f;
  x[37] = std::numeric_limits<float>::quiet_NaN();
  x[38] = 0.25f;  // E2M1: a tie between 0 and 0.5 -> 0
  x[39] = 0.75f;  // E2M1: a tie between 0.5 and 1 -> 1 (even)
  std::vector<lowbit::float8_e4m3fn> q(40);
  lowbit::convert(x.data(), q.data(), x.size());
  EXPECT_EQ(q[0].bits(), 0x7E);
  EXPECT_EQ(q[35].bits(), 0x7E);
  EXPECT_EQ(q[3].bits(), 0x7E);
  EXPECT_EQ(q[36].bits(), 0x80);
  EXPECT_EQ(q[37].bits(), 0x7F);
  lowbit::convert(x.data(), q.data(), x.size(), overflow::non_saturate);
  EXPECT_EQ(q[0].bits(), 0x7E);
  EXPECT_EQ(q[3].bits(), 0x7F);
  std::vector<std::uint8_t> packed(lowbit::packed_bytes<lowbit::float4_e2m1fn>(x.size()));
  lowbit::convert_packed<lowbit::float4_e2m1fn>(x.data(), packed.data(), x.size());
  EXPECT_EQ(packed[0], 0x77);                        // 464 saturates to 6
  EXPECT_EQ(packed[18], 0x78);                       // -0 (0x8), then NaN -> +max (0x7)
  EXPECT_EQ(packed[19], 0x20);                       // 0.25 -> 0, then 0.75 -> 1.0 (0x2)
  std::vector<float> back(x.size());
  lowbit::convert_packed<lowbit::float4_e2m1fn>(packed.data(), back.data(), x.size());
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[39], 1.0f);
  EXPECT_TRUE(std::signbit(back[36]));
}

// ------------------------------------------------------------------------------------------------
// float32 -> every format, every policy.

template <class T>
class EncodeFromFloat : public ::testing::Test {};
using all_formats = ::testing::Types<lowbit::float8_e4m3fn, lowbit::float8_e5m2, lowbit::float8_e4m3fnuz,
                                     lowbit::float8_e5m2fnuz, lowbit::float6_e2m3fn, lowbit::float6_e3m2fn,
                                     lowbit::float4_e2m1fn, lowbit::float8_e8m0fnu, lowbit::float16, lowbit::bfloat16>;
class format_names {
 public:
  template <class T>
  static std::string GetName(int) {
    return T::format::name;
  }
};
TYPED_TEST_SUITE(EncodeFromFloat, all_formats, format_names);

TYPED_TEST(EncodeFromFloat, MatchesScalarUnderEveryPolicy) {
  REQUIRE_AVX2();
  encode_from_float_all_policies<TypeParam>(TypeParam::format::name);
}

// ------------------------------------------------------------------------------------------------
// float16 and bfloat16 -> every format: every 16-bit pattern.

template <class Half>
std::vector<Half> all_half_patterns() {
  std::vector<Half> v(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) v[i] = Half::from_bits(static_cast<std::uint16_t>(i * 40503u));  // a permutation
  return v;
}

template <class T>
class EncodeFromHalf : public ::testing::Test {};
TYPED_TEST_SUITE(EncodeFromHalf, all_formats, format_names);

TYPED_TEST(EncodeFromHalf, EveryPattern) {
  REQUIRE_AVX2();
  const auto f16 = all_half_patterns<lowbit::float16>();
  const auto bf16 = all_half_patterns<lowbit::bfloat16>();
  const std::vector<std::uint32_t> random = random_words(65536, 5);
  for (const named_policy& np : all_policies()) {
    if (np.p.rm != rounding::nearest_even && np.p.rm != rounding::stochastic && np.p.rm != rounding::toward_zero &&
        np.name.find("preset") == std::string::npos)
      continue;  // the other modes run from float32; here the sources matter
    check_encode<TypeParam, false>(f16, np.p, np.random ? &random : nullptr,
                                   std::string("float16 -> ") + TypeParam::format::name + ", " + np.name);
    check_encode<TypeParam, false>(bf16, np.p, np.random ? &random : nullptr,
                                   std::string("bfloat16 -> ") + TypeParam::format::name + ", " + np.name);
    if (::testing::Test::HasFailure()) return;
  }
}

// ------------------------------------------------------------------------------------------------
// Every format -> float32, and the byte formats -> float16 / bfloat16: every code.

template <class T>
std::vector<std::uint8_t> all_codes_bytes() {
  // Every code, sorted, shuffled, and each over a whole block; then random storage bytes.
  using F = typename T::format;
  std::vector<std::uint32_t> codes;
  const std::uint32_t count = 1u << F::bits;
  for (std::uint32_t c = 0; c < count; ++c) codes.push_back(c);
  std::vector<std::uint32_t> all = codes;
  std::vector<std::uint32_t> shuffled = codes;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  all.insert(all.end(), shuffled.begin(), shuffled.end());
  if (F::bits <= 8)
    for (std::uint32_t c : codes) all.insert(all.end(), 32, c);
  std::mt19937 gen(4);
  for (int i = 0; i < 999; ++i) all.push_back(static_cast<std::uint32_t>(gen()) & F::code_mask);
  std::vector<std::uint8_t> bytes(all.size() * sizeof(T));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const T v = T::from_bits(static_cast<typename F::storage>(all[i]));
    std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T));
  }
  return bytes;
}

template <class T>
class DecodeToFloat : public ::testing::Test {};
TYPED_TEST_SUITE(DecodeToFloat, all_formats, format_names);

TYPED_TEST(DecodeToFloat, EveryCode) {
  REQUIRE_AVX2();
  check_decode<TypeParam, false>(all_codes_bytes<TypeParam>(), std::string(TypeParam::format::name) + " -> float");
}

template <class T>
class DecodeToHalf : public ::testing::Test {};
using byte_formats = ::testing::Types<lowbit::float8_e4m3fn, lowbit::float8_e5m2, lowbit::float8_e4m3fnuz,
                                      lowbit::float8_e5m2fnuz, lowbit::float6_e2m3fn, lowbit::float6_e3m2fn,
                                      lowbit::float4_e2m1fn, lowbit::float8_e8m0fnu>;
TYPED_TEST_SUITE(DecodeToHalf, byte_formats, format_names);

// all_codes_bytes as elements of T.
template <class T>
std::vector<T> all_codes() {
  const std::vector<std::uint8_t> bytes = all_codes_bytes<T>();
  std::vector<T> codes(bytes.size());
  std::memcpy(static_cast<void*>(codes.data()), bytes.data(), bytes.size());
  return codes;
}

// Codes of a byte format into each format To, one code per element and (4 and 6 bits) packed,
// under every policy (random bits for the stochastic ones).
template <class From, class... To>
void check_from_codes(const std::vector<From>& src, const std::vector<std::uint32_t>& random) {
  for (const named_policy& np : all_policies()) {
    const std::vector<std::uint32_t>* r = np.random ? &random : nullptr;
    const auto one = [&](auto to) {
      using T = decltype(to);
      const std::string name = std::string(From::format::name) + " -> " + T::format::name + ", " + np.name;
      check_encode<T, false>(src, np.p, r, name);
      if constexpr (T::format::bits < 8) check_encode<T, true>(src, np.p, r, name + " packed");
    };
    (one(To{}), ...);
    if (::testing::Test::HasFailure()) return;
  }
}

TYPED_TEST(DecodeToHalf, EveryCodeEveryPolicy) {
  REQUIRE_AVX2();
  // Random bits matter where a code is not a value of the destination (E8M0 into float16).
  const std::vector<TypeParam> src = all_codes<TypeParam>();
  check_from_codes<TypeParam, lowbit::float16, lowbit::bfloat16>(src, random_words(src.size(), 6));
}

template <class T>
class ByteSource : public ::testing::Test {};
TYPED_TEST_SUITE(ByteSource, byte_formats, format_names);

TYPED_TEST(ByteSource, EveryCodeIntoEveryByteFormat) {
  REQUIRE_AVX2();
  const std::vector<TypeParam> src = all_codes<TypeParam>();
  check_from_codes<TypeParam, lowbit::float8_e4m3fn, lowbit::float8_e5m2, lowbit::float8_e4m3fnuz,
                   lowbit::float8_e5m2fnuz, lowbit::float6_e2m3fn, lowbit::float6_e3m2fn, lowbit::float4_e2m1fn,
                   lowbit::float8_e8m0fnu>(src, random_words(src.size(), 7));
}

TEST(DecodeHalves, EveryPattern) {
  REQUIRE_AVX2();
  for (int k = 0; k < 2; ++k) {
    std::vector<std::uint8_t> bytes(2 * 65536 * 2);
    for (std::uint32_t i = 0; i < 2 * 65536; ++i) {
      const std::uint16_t h = static_cast<std::uint16_t>(i < 65536 ? i : (i * 40503u));
      std::memcpy(&bytes[2 * i], &h, 2);
    }
    if (k == 0)
      check_decode<lowbit::float16, false>(bytes, "float16 -> float");
    else
      check_decode<lowbit::bfloat16, false>(bytes, "bfloat16 -> float");
  }
}

// ------------------------------------------------------------------------------------------------
// Packed layouts: E2M1 two per byte, FP6 four in three bytes (and 8-bit formats one per byte).

template <class T>
class Packed : public ::testing::Test {};
using packed_formats = ::testing::Types<lowbit::float4_e2m1fn, lowbit::float6_e2m3fn, lowbit::float6_e3m2fn,
                                        lowbit::float8_e4m3fn>;
TYPED_TEST_SUITE(Packed, packed_formats, format_names);

TYPED_TEST(Packed, EncodeEveryPolicy) {
  REQUIRE_AVX2();
  encode_from_float_all_policies<TypeParam, true>(TypeParam::format::name);
  const auto bf16 = all_half_patterns<lowbit::bfloat16>();
  check_encode<TypeParam, true>(bf16, policy{}, nullptr, std::string("bfloat16 -> ") + TypeParam::format::name + " packed");
}

TYPED_TEST(Packed, DecodeEveryByte) {
  REQUIRE_AVX2();
  std::vector<std::uint8_t> bytes;
  for (int rep = 0; rep < 3; ++rep)
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<std::uint8_t>(rep == 1 ? (b * 97) & 0xFF : b));
  std::mt19937 gen(9);
  for (int i = 0; i < 3000; ++i) bytes.push_back(static_cast<std::uint8_t>(gen()));
  check_decode<TypeParam, true>(bytes, std::string(TypeParam::format::name) + " packed -> float");
}

// Every length 0..130 (the AVX-512 step is 64, AVX2's 32), from a misaligned source into a
// destination at every offset in its line, with NaN, Inf, subnormal and overflowing inputs among
// them: unpacked and, for 4- and 6-bit formats, packed, against the scalar reference.
template <class T>
class Tails : public ::testing::Test {};
TYPED_TEST_SUITE(Tails, all_formats, format_names);

// Every length 0..130 from sources of type From (float32; bfloat16 and float16 from their own
// patterns), both rounding modes the AVX-512 encoders take, each path under FTZ + DAZ + round-up.
template <class T, class From>
void check_tails(const std::vector<From>& x) {
  constexpr bool packable = T::format::bits == 4 || T::format::bits == 6;
  for (const rounding rm : {rounding::nearest_even, rounding::toward_zero}) {
    policy p;
    p.rm = rm;
    for (std::size_t len = 0; len <= 130; ++len) {
      const From* src = x.data() + 1;
      for (int packed = 0; packed < (packable ? 2 : 1); ++packed) {
        const std::size_t bytes = packed != 0 ? lowbit::packed_bytes(len, T::format::bits) : len * sizeof(T);
        const auto write = [&](std::uint8_t* d) {
          if constexpr (packable) {
            if (packed != 0) return lowbit::convert_packed<T>(src, d, len, p);
          }
          lowbit::convert(src, reinterpret_cast<T*>(d), len, p);
        };
        const std::vector<std::uint8_t> expected = run_guarded(bytes, 0, [&](std::uint8_t* d) {
          const lowbit::scoped_isa use(isa::scalar);
          write(d);
        }, "reference");
        for (const isa path : checked_paths()) {
          const std::string what = std::string(T::format::name) + (packed != 0 ? " packed, " : ", ") +
                                   lowbit::isa_name(path) + ", length " + std::to_string(len) + ", source of " +
                                   std::to_string(sizeof(From)) + " bytes";
          const std::vector<std::uint8_t> got = run_guarded(bytes, (len * 3) % 32 / sizeof(T) * sizeof(T), [&](std::uint8_t* d) {
            const lowbit::scoped_isa use(path);
            const lowbit_test::mxcsr_scope fp(lowbit_test::mxcsr_ftz | lowbit_test::mxcsr_daz | lowbit_test::mxcsr_round_up);
            write(d);
          }, what);
          ASSERT_TRUE(same_bytes(got, expected.data(), packed != 0 ? T::format::bits : 8 * sizeof(T),
                                 [&](std::size_t e) { return bits_of(src[e]); }, what));
        }
      }
    }
  }
}

TYPED_TEST(Tails, EveryLengthEveryPath) {
  REQUIRE_AVX2();
  using T = TypeParam;
  std::vector<float> x = random_patterns(140, 77);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            -static_cast<float>(std::numeric_limits<T>::min()) / 3, 1e30f, -1e30f, -0.0f};
  for (std::size_t i = 0; i < x.size(); i += 9) x[i] = specials[(i / 9) % 8];
  for (std::size_t i = 4; i < x.size(); i += 9) x[i] = -float_from_bits(0x7FC12345u);  // a NaN with payload
  check_tails<T>(x);
  if (::testing::Test::HasFatalFailure()) return;
  // 16-bit sources: random patterns (NaN, Inf and subnormals among them) and the specials.
  std::mt19937 gen(78);
  std::vector<lowbit::bfloat16> xb(140);
  std::vector<lowbit::float16> xh(140);
  for (std::size_t i = 0; i < xb.size(); ++i) {
    xb[i] = lowbit::bfloat16::from_bits(static_cast<std::uint16_t>(gen()));
    xh[i] = lowbit::float16::from_bits(static_cast<std::uint16_t>(gen()));
  }
  const std::uint16_t half_specials[] = {0x7E00, 0xFC00, 0x7C00, 0x0001, 0x8000, 0x7BFF, 0x83FF, 0x7D01};
  const std::uint16_t bf16_specials[] = {0x7FC0, 0xFF80, 0x7F80, 0x0001, 0x8000, 0x7F7F, 0x807F, 0x7F81};
  for (std::size_t i = 0; i < xb.size(); i += 9) {
    xb[i] = lowbit::bfloat16::from_bits(bf16_specials[(i / 9) % 8]);
    xh[i] = lowbit::float16::from_bits(half_specials[(i / 9) % 8]);
  }
  check_tails<T>(xb);
  if (::testing::Test::HasFatalFailure()) return;
  check_tails<T>(xh);
}

// Packing agrees with core/packing.hpp's layout, element by element, for every odd length.
TEST(PackedLayout, MatchesPackingHelpers) {
  REQUIRE_AVX2();
  const lowbit::scoped_isa use(isa::avx2);
  const std::vector<float> x = gaussian(100, 3.0f, 21);
  for (std::size_t n = 0; n <= x.size(); ++n) {
    std::vector<std::uint8_t> codes(n), expected(lowbit::packed_bytes<lowbit::float6_e3m2fn>(n)),
        got(expected.size());
    for (std::size_t i = 0; i < n; ++i) codes[i] = lowbit::encode<lowbit::float6_e3m2fn>(x[i]).bits();
    lowbit::pack_sextets(codes.data(), expected.data(), n);
    lowbit::convert_packed<lowbit::float6_e3m2fn>(x.data(), got.data(), n);
    ASSERT_EQ(got, expected) << "n = " << n;
    std::vector<std::uint8_t> e4(lowbit::packed_bytes<lowbit::float4_e2m1fn>(n)), g4(e4.size());
    for (std::size_t i = 0; i < n; ++i) codes[i] = lowbit::encode<lowbit::float4_e2m1fn>(x[i]).bits();
    lowbit::pack_nibbles(codes.data(), e4.data(), n);
    lowbit::convert_packed<lowbit::float4_e2m1fn>(x.data(), g4.data(), n);
    ASSERT_EQ(g4, e4) << "n = " << n;
  }
}


// Decoders into float outputs of 16 MiB or more write with non-temporal stores from the first
// 32-byte boundary on (convert/avx2.hpp's stream_start): the head before it, the streamed middle
// and the tail all equal the scalar decode, for every alignment of the destination.
template <class T, bool Packed>
void check_large_decode(const std::string& name) {
  constexpr std::size_t n = (std::size_t{16} << 20) / sizeof(float) + 45;  // just past the threshold
  constexpr std::size_t bits = Packed ? T::format::bits : 8 * sizeof(T);
  std::vector<std::uint8_t> src((n * bits + 7) / 8);
  std::mt19937 gen(31);
  for (auto& b : src) b = static_cast<std::uint8_t>(gen());
  std::vector<float> expected(n);
  if constexpr (Packed)
    lowbit::kernels::scalar::decode_packed<T>(src.data(), expected.data(), n);
  else
    lowbit::kernels::scalar::decode(reinterpret_cast<const T*>(src.data()), expected.data(), n);
  std::vector<float> buffer(n + 16);  // room to align, shift by up to 7 and check one past the end
  // dst % 32 = 0, 4, ..., 28 bytes; under the sanitizers 0 and 16, where every layout streams
  for (const isa path : lowbit_test::simd_paths())
  for (std::size_t shift = 0; shift < 8; shift += lowbit_test::sanitized_size(1, 4)) {
    const lowbit::scoped_isa use(path);
    float* base = buffer.data();
    while (reinterpret_cast<std::uintptr_t>(base) % 32 != 0) ++base;
    float* dst = base + shift;
    std::fill(buffer.begin(), buffer.end(), -7.0f);
    if constexpr (Packed)
      lowbit::convert_packed<T>(src.data(), dst, n);
    else
      lowbit::convert(reinterpret_cast<const T*>(src.data()), dst, n);
    ASSERT_EQ(std::memcmp(dst, expected.data(), n * sizeof(float)), 0)
        << name << ", " << lowbit::isa_name(path) << ", dst % 32 = " << 4 * shift;
    if (shift > 0) {
      ASSERT_EQ(dst[-1], -7.0f) << name << ": wrote before the destination";
    }
    ASSERT_EQ(dst[n], -7.0f) << name << ": wrote past the destination";
  }
}

TEST(LargeDecode, StreamingStoresGiveTheScalarResult) {
  REQUIRE_AVX2();
  check_large_decode<lowbit::float8_e4m3fn, false>("e4m3fn -> float");
  check_large_decode<lowbit::float8_e5m2, false>("e5m2 -> float");
  check_large_decode<lowbit::float8_e4m3fnuz, false>("e4m3fnuz -> float");
  check_large_decode<lowbit::float6_e3m2fn, false>("e3m2fn -> float");
  check_large_decode<lowbit::bfloat16, false>("bfloat16 -> float");
  check_large_decode<lowbit::float16, false>("float16 -> float");
  check_large_decode<lowbit::float4_e2m1fn, true>("e2m1fn packed -> float");
  check_large_decode<lowbit::float6_e2m3fn, true>("e2m3fn packed -> float");
}

// Encodings that move 16 MiB or more (source and output) write whole 32-byte lines of output with
// non-temporal stores from the first aligned element on (convert/avx2.hpp's encode_stream_start):
// every layout (bytes, words, nibbles, sextets), stochastic rounding too, at destination offsets
// that put that element anywhere in its line, against the scalar path. From a byte format (the
// VBMI tables' 64-byte lines) the values are first rounded to it.
template <class T, bool Packed, class From = float>
void check_large_encode(const policy& p, bool stochastic, const std::string& name) {
  constexpr std::size_t n = (std::size_t{16} << 20) / (std::is_same<From, float>::value ? 4 : 2) + 77;
  using Range = std::conditional_t<std::is_same<From, float>::value, T, From>;
  const double top = std::min(static_cast<double>(std::numeric_limits<T>::max()),
                              static_cast<double>(std::numeric_limits<Range>::max()));
  const std::vector<float> values = gaussian(n, static_cast<float>(top / 4), 41);
  std::vector<From> x(n);
  if constexpr (std::is_same<From, float>::value)
    x = values;
  else
    lowbit::convert(values.data(), x.data(), n);
  std::vector<std::uint32_t> random(stochastic ? n : 0);
  std::mt19937 gen(42);
  for (auto& r : random) r = static_cast<std::uint32_t>(gen());
  const std::uint32_t* rb = stochastic ? random.data() : nullptr;
  const std::size_t bytes = Packed ? lowbit::packed_bytes<T>(n) : n * sizeof(T);
  std::vector<std::uint8_t> expected(bytes);
  {
    const lowbit::scoped_isa use(isa::scalar);
    if constexpr (Packed)
      lowbit::convert_packed<T>(x.data(), expected.data(), n, p, rb);
    else
      lowbit::convert(x.data(), reinterpret_cast<T*>(expected.data()), n, p, rb);
  }
  std::vector<std::uint8_t> buffer(bytes + 64 + 1);
  std::uint8_t* base = buffer.data();
  while (reinterpret_cast<std::uintptr_t>(base) % 32 != 0) ++base;
  // (under the sanitizers every third offset: none, then a long head and for bytes a short one)
  for (const isa path : lowbit_test::simd_paths())
  for (std::size_t shift = 0; shift < 32; shift += (sizeof(T) == 2 ? 6 : 5) * lowbit_test::sanitized_size(1, 3)) {
    const lowbit::scoped_isa use(path);
    std::uint8_t* dst = base + shift;
    std::fill(buffer.begin(), buffer.end(), std::uint8_t{0xA5});
    if constexpr (Packed)
      lowbit::convert_packed<T>(x.data(), dst, n, p, rb);
    else
      lowbit::convert(x.data(), reinterpret_cast<T*>(dst), n, p, rb);
    ASSERT_EQ(std::memcmp(dst, expected.data(), bytes), 0) << name << ", " << lowbit::isa_name(path) << ", dst % 32 = " << shift;
    ASSERT_EQ(dst[bytes], 0xA5) << name << ": wrote past the destination";
    if (shift > 0) {
      ASSERT_EQ(dst[-1], 0xA5) << name << ": wrote before the destination";
    }
  }
}

TEST(LargeEncode, StreamingStoresGiveTheScalarResult) {
  REQUIRE_AVX2();
  check_large_encode<lowbit::float8_e4m3fn, false>(policy{}, false, "float -> e4m3fn");
  policy sr;
  sr.rm = rounding::stochastic;
  check_large_encode<lowbit::float8_e5m2, false>(sr, true, "float -> e5m2, stochastic");
  check_large_encode<lowbit::bfloat16, false>(policy{}, false, "float -> bfloat16");
  check_large_encode<lowbit::float4_e2m1fn, true>(policy{}, false, "float -> e2m1fn packed");
  check_large_encode<lowbit::float6_e3m2fn, true>(policy{}, false, "float -> e3m2fn packed");
  check_large_encode<lowbit::float16, false>(policy{}, false, "float -> float16");
  check_large_encode<lowbit::float8_e4m3fn, false, lowbit::float8_e5m2>(policy{}, false, "e5m2 -> e4m3fn");
  check_large_encode<lowbit::float8_e5m2, false, lowbit::float8_e4m3fn>(sr, true, "e4m3fn -> e5m2, stochastic");
  check_large_encode<lowbit::bfloat16, false, lowbit::float8_e4m3fn>(policy{}, false, "e4m3fn -> bfloat16");
}

// ------------------------------------------------------------------------------------------------
// The contract of docs/api.md sections 5-8: in place for same-size elements, and the container
// overloads that check what the pointer overloads assume.

// In place (src == dst) gives what a separate destination gets, on both paths, at every length
// around the 32-element block and at one that takes the streaming path.
template <class From, class To>
void check_in_place(const std::string& name) {
  static_assert(sizeof(From) == sizeof(To), "in place needs same-size elements");
  // (under the sanitizers the streaming one just past the threshold: 16 MiB of source and output)
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33},
                        std::size_t{1000}, std::size_t{5000},
                        lowbit_test::sanitized_size((std::size_t{16} << 20) / sizeof(From) + 5,
                                                    (std::size_t{16} << 20) / (2 * sizeof(From)) + 5)}) {
    const std::vector<float> x = random_patterns(n, 7);
    std::vector<From> src(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = From::from_bits(static_cast<typename From::format::storage>(float_bits(x[i]) >> 16));
    for (isa path : checked_paths()) {
      const lowbit::scoped_isa use(path);
      std::vector<To> expected(n);
      lowbit::convert(src.data(), expected.data(), n);
      std::vector<From> buffer = src;
      To* dst = reinterpret_cast<To*>(buffer.data());
      lowbit::convert(buffer.data(), dst, n);
      ASSERT_TRUE(n == 0 || std::memcmp(dst, expected.data(), n * sizeof(To)) == 0)  // memcmp(null, ...) is UB
          << name << ", n " << n << ", " << lowbit::isa_name(path);
      buffer = src;
      ASSERT_TRUE(lowbit::convert(lowbit::span<const From>(buffer.data(), n), lowbit::span<To>(reinterpret_cast<To*>(buffer.data()), n)).ok());
      ASSERT_TRUE(n == 0 || std::memcmp(buffer.data(), expected.data(), n * sizeof(To)) == 0) << name << " (span), n " << n;
    }
  }
}

TEST(ConvertContract, InPlaceForSameSizeElements) {
  check_in_place<lowbit::float16, lowbit::bfloat16>("float16 -> bfloat16");
  check_in_place<lowbit::bfloat16, lowbit::float16>("bfloat16 -> float16");
  check_in_place<lowbit::float16, lowbit::float16>("float16 -> float16");
}

TEST(ConvertContract, InPlaceBetweenByteFormats) {
  std::vector<lowbit::float8_e5m2> codes(300);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = lowbit::float8_e5m2::from_bits(static_cast<std::uint8_t>(i));
  std::vector<lowbit::float8_e4m3fn> expected(codes.size());
  lowbit::convert(codes.data(), expected.data(), codes.size());
  auto* in_place = reinterpret_cast<lowbit::float8_e4m3fn*>(codes.data());
  lowbit::convert(codes.data(), in_place, codes.size());
  EXPECT_EQ(std::memcmp(in_place, expected.data(), codes.size()), 0);
  // Every path and length: the VBMI table (streamed at 8M codes) and the float32 stage (1024 a step).
  check_in_place<lowbit::float8_e5m2, lowbit::float8_e4m3fn>("e5m2 -> e4m3fn");
}

TEST(ConvertContract, ContainerOverloadsConvertLikeThePointerOnes) {
  const std::vector<float> x = gaussian(1001, 100.0f, 3);
  std::vector<lowbit::float8_e4m3fn> want(x.size()), got(x.size());
  policy p;
  p.ov = overflow::non_saturate;
  lowbit::convert(x.data(), want.data(), x.size(), p);
  ASSERT_TRUE(lowbit::convert(x, got, p).ok());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), x.size()), 0);
  ASSERT_TRUE(lowbit::convert(x, got, overflow::saturate, rounding::toward_zero).ok());
  lowbit::convert(x.data(), want.data(), x.size(), overflow::saturate, rounding::toward_zero);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), x.size()), 0);
  std::vector<float> back(x.size()), back_want(x.size());
  ASSERT_TRUE(lowbit::convert(got, back).ok());
  lowbit::convert(got.data(), back_want.data(), got.size());
  EXPECT_EQ(std::memcmp(back.data(), back_want.data(), back.size() * sizeof(float)), 0);
  std::vector<std::uint8_t> packed(lowbit::packed_bytes<lowbit::float4_e2m1fn>(x.size()));
  std::vector<std::uint8_t> packed_want(packed.size());
  ASSERT_TRUE(lowbit::convert_packed<lowbit::float4_e2m1fn>(x, packed).ok());
  lowbit::convert_packed<lowbit::float4_e2m1fn>(x.data(), packed_want.data(), x.size());
  EXPECT_EQ(packed, packed_want);
  ASSERT_TRUE(lowbit::convert_packed<lowbit::float4_e2m1fn>(packed, back).ok());
  lowbit::convert_packed<lowbit::float4_e2m1fn>(packed.data(), back_want.data(), x.size());
  EXPECT_EQ(std::memcmp(back.data(), back_want.data(), back.size() * sizeof(float)), 0);
  // Stochastic rounding with its random bits as a container.
  std::vector<std::uint32_t> random(x.size(), 0x9E3779B9u);
  ASSERT_TRUE(lowbit::convert(x, got, overflow::saturate, rounding::stochastic, random).ok());
  lowbit::convert(x.data(), want.data(), x.size(), overflow::saturate, rounding::stochastic, random.data());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), x.size()), 0);
}

TEST(ConvertContract, ContainerOverloadsRejectBadArgumentsAndWriteNothing) {
  using lowbit::errc;
  using lowbit::span;
  using q8 = lowbit::float8_e4m3fn;
  std::vector<float> x(64, 1.0f);
  std::vector<q8> out(64, q8::from_bits(0x5A));
  auto untouched = [&] {
    for (const q8& v : out)
      if (v.bits() != 0x5A) return false;
    return true;
  };
  std::vector<q8> short_out(63, q8::from_bits(0x5A));
  EXPECT_EQ(lowbit::convert(x, short_out).code(), errc::size_mismatch);
  std::vector<std::uint32_t> random(10);
  EXPECT_EQ(lowbit::convert(x, out, overflow::saturate, rounding::stochastic, random).code(), errc::size_mismatch);
  // The output may not overlap the random bits either (they are read while it is written).
  std::vector<std::uint32_t> words(64, 0x12345678u);
  EXPECT_EQ(lowbit::convert(x, span<q8>(reinterpret_cast<q8*>(words.data()), 64), overflow::saturate,
                            rounding::stochastic, words)
                .code(),
            errc::overlapping_buffers);
  for (std::uint32_t w : words) ASSERT_EQ(w, 0x12345678u);
  EXPECT_EQ(lowbit::convert(span<const float>(nullptr, 64), out).code(), errc::bad_argument);
  lowbit_test::misaligned<float> odd(64);
  EXPECT_EQ(lowbit::convert(span<const float>(odd.data(), 64), out).code(), errc::misaligned);
  // Output bytes inside the input floats: partial overlap.
  EXPECT_EQ(lowbit::convert(span<const float>(x), span<q8>(reinterpret_cast<q8*>(x.data()) + 8, 64)).code(),
            errc::overlapping_buffers);
  // Exactly in place, but float -> byte is not same-size: also refused.
  EXPECT_EQ(lowbit::convert(span<const float>(x), span<q8>(reinterpret_cast<q8*>(x.data()), 64)).code(),
            errc::overlapping_buffers);
  EXPECT_TRUE(untouched());
  for (float v : x) ASSERT_EQ(v, 1.0f);
  // Packed sizes must be exact.
  std::vector<std::uint8_t> packed(31);
  EXPECT_EQ(lowbit::convert_packed<lowbit::float4_e2m1fn>(x, packed).code(), errc::size_mismatch);
  std::vector<float> back(65);
  std::vector<std::uint8_t> packed32(32);
  EXPECT_EQ(lowbit::convert_packed<lowbit::float4_e2m1fn>(packed32, back).code(), errc::size_mismatch);
  // n = 0 is ok with null data.
  EXPECT_TRUE(lowbit::convert(span<const float>(nullptr, 0), span<q8>(nullptr, 0)).ok());
}

#ifndef NDEBUG
// Builds with assertions check the pointer overloads' preconditions.
TEST(ConvertContractDeathTest, PreconditionsAreAssertedInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> x(64, 1.0f);
  std::vector<lowbit::float8_e4m3fn> out(64);
  EXPECT_DEATH(lowbit::convert(static_cast<const float*>(nullptr), out.data(), 64), "");
  EXPECT_DEATH(lowbit::convert(x.data(), reinterpret_cast<lowbit::float8_e4m3fn*>(x.data()) + 3, 64), "");
  lowbit_test::misaligned<float> odd(64);
  EXPECT_DEATH(lowbit::convert(odd.data(), out.data(), 64), "");
}
#endif

}  // namespace
