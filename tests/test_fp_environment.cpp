// Every bulk entry point gives the same bytes whatever the caller's MXCSR (issue: inference
// engines run with flush-to-zero and denormals-are-zero set). Each case below is one where plain
// float arithmetic does change under FTZ/DAZ: subnormal inputs, scales or products. Both the
// scalar reference path (forced with scoped_isa) and the dispatched path are checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <lowbit/lowbit.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

namespace {

using namespace lowbit;

// Runs f() with MXCSR = csr and restores the caller's word.
template <class F>
void with_mxcsr(unsigned csr, F f) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(csr);
  f();
  _mm_setcsr(saved);
}

constexpr unsigned default_csr = 0x1F80u;
constexpr unsigned ftz_daz_csr = 0x1F80u | 0x8000u | 0x0040u;
constexpr unsigned ftz_daz_down_csr = ftz_daz_csr | 0x2000u;  // and round toward -inf

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Runs `run` (which fills a byte vector) under each MXCSR word and each ISA path, and expects the
// same bytes every time.
template <class Run>
void expect_same_everywhere(Run run) {
  std::vector<std::uint8_t> expected;
  {
    scoped_isa s{isa::scalar};
    with_mxcsr(default_csr, [&] { expected = run(); });
  }
  ASSERT_FALSE(expected.empty());
  for (isa path : {isa::scalar, active_isa()}) {
    scoped_isa s{path};
    for (unsigned csr : {default_csr, ftz_daz_csr, ftz_daz_down_csr}) {
      std::vector<std::uint8_t> got;
      with_mxcsr(csr, [&] { got = run(); });
      EXPECT_EQ(got, expected) << "isa " << isa_name(path) << ", MXCSR 0x" << std::hex << csr;
    }
  }
}

TEST(FpEnvironment, IntegerPerTokenOfSubnormals) {
  // A group of float subnormals: in the default environment it gets a subnormal scale and codes
  // spread over the range; with DAZ the inputs would read as zero (all codes at the zero-point).
  const std::vector<float> x{1e-39f, -2e-39f, 3e-39f, 0.0f};
  expect_same_everywhere([&] {
    std::vector<std::uint8_t> codes(4);
    std::vector<float> scales(1);
    const int_params p = int_presets::int8_per_token();
    EXPECT_TRUE(quantize_int(x.data(), 1, 4, p, codes.data(), scales.data(), nullptr).ok());
    std::vector<std::uint8_t> out = bytes_of(codes);
    const auto s = bytes_of(scales);
    out.insert(out.end(), s.begin(), s.end());
    return out;
  });
}

TEST(FpEnvironment, IntegerDequantizeWithSubnormalScale) {
  const std::vector<std::uint8_t> codes{129, 127, 200, 128};
  const std::vector<float> scales{1e-39f};
  expect_same_everywhere([&] {
    std::vector<float> y(4);
    const int_params p = int_presets::int8_per_token();
    EXPECT_TRUE(dequantize_int(codes.data(), scales.data(), nullptr, 1, 4, p, y.data()).ok());
    return bytes_of(y);
  });
}

TEST(FpEnvironment, GgmlBlocksOfTinyValues) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * 1e-38f * static_cast<float>(i + 1) / 32.0f;
  expect_same_everywhere([&] {
    std::vector<ggml_block_q4_0> q4(1);
    std::vector<ggml_block_q8_0> q8(1);
    EXPECT_TRUE(ggml_quantize_q4_0(x.data(), 1, 32, q4.data()).ok());
    EXPECT_TRUE(ggml_quantize_q8_0(x.data(), 1, 32, q8.data()).ok());
    std::vector<std::uint8_t> out = bytes_of(q4);
    const auto b8 = bytes_of(q8);
    out.insert(out.end(), b8.begin(), b8.end());
    return out;
  });
}

TEST(FpEnvironment, MetricsCountSubnormalErrors) {
  const std::vector<float> ref{1e-39f, 2e-39f};
  const std::vector<float> test{0.0f, 0.0f};
  expect_same_everywhere([&] {
    const result<double> m = mse(ref.data(), ref.size(), test.data(), test.size());
    EXPECT_TRUE(m.ok());
    EXPECT_GT(m.value, 0.0);  // the default environment sees the subnormal difference
    return bytes_of(std::vector<double>{m.value});
  });
}

TEST(FpEnvironment, Nvfp4WithTinyTensorScale) {
  // A tensor scale at the 2^-119 limit and subnormal inputs: the effective block scale D and the
  // quotients x / D are float subnormals, which FTZ/DAZ would flush (found by a random search).
  const float block[16] = {-0x1.3ap-131f, 0x1.8dp-129f,  0x1.48p-128f,  0x1.0bp-123f, -0x1.fdp-127f, 0x1.3bp-132f,
                           0x1p-148f,     -0x1.2p-144f,  0x1.f1p-125f,  -0x1.48p-144f, 0x1.37p-140f, 0x1.08p-137f,
                           -0x1.03p-131f, -0x1.cp-145f,  0x1.98p-132f,  0x1.b5p-136f};
  std::vector<float> x(block, block + 16);
  nvfp4_options o;
  o.tensor_scale = 0x1p-119f;
  expect_same_everywhere([&] {
    std::vector<std::uint8_t> elements(8), scales(1);
    std::vector<float> y(16);
    EXPECT_TRUE(nvfp4_quantize(x.data(), 16, o, elements.data(), scales.data()).ok());
    EXPECT_TRUE(nvfp4_dequantize(elements.data(), scales.data(), 16, o, y.data()).ok());
    std::vector<std::uint8_t> out = elements;
    out.push_back(scales[0]);  // not insert(): g++ 12 -O3 reports a false -Warray-bounds on it
    const auto yb = bytes_of(y);
    out.insert(out.end(), yb.begin(), yb.end());
    return out;
  });
}

TEST(FpEnvironment, CallerMxcsrIsRestored) {
  with_mxcsr(ftz_daz_down_csr, [] {
    const std::vector<float> x{1e-39f, -2e-39f, 3e-39f, 0.0f};
    std::vector<std::uint8_t> codes(4);
    std::vector<float> scales(1);
    EXPECT_TRUE(quantize_int(x.data(), 1, 4, int_presets::int8_per_token(), codes.data(), scales.data(), nullptr).ok());
    EXPECT_EQ(_mm_getcsr() & 0xFFC0u, ftz_daz_down_csr & 0xFFC0u);
  });
}

// The conversions round subnormal codes with a float instruction (vcvtps2dq, under a scope that
// installs round-to-nearest): the caller's whole MXCSR comes back, exception flags included, as
// the scalar path (integer code) leaves it. Inputs in E4M3's subnormal range, inexact there.
TEST(FpEnvironment, ConversionsLeaveMxcsrUntouched) {
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.0007f * static_cast<float>(i) - 0.03f;
  for (isa path : {isa::scalar, active_isa()}) {
    scoped_isa s{path};
    for (unsigned csr : {default_csr, ftz_daz_csr, ftz_daz_down_csr}) {
      with_mxcsr(csr, [&] {
        std::vector<float8_e4m3fn> e4(x.size());
        std::vector<float6_e2m3fn> e2(x.size());
        convert(x.data(), e4.data(), x.size());
        convert(x.data(), e2.data(), x.size(), overflow::saturate, rounding::toward_zero);
        EXPECT_EQ(_mm_getcsr(), csr) << "isa " << isa_name(path);
      });
    }
  }
}

}  // namespace
#endif
