// The argument checks of the MX and NVFP4 calls (docs/api.md sections 4-6): misaligned pointers,
// outputs overlapping inputs or each other, null pointers, empty calls and the order in which the
// checks are made, on the scalar and the AVX2 path. Every rejected call must leave its outputs
// untouched. Regression tests of issue 9: a float* one byte off tripped UBSan on the scalar
// paths, and a scales array over x gave different bytes on the two paths.
#include <lowbit/schemes/nvfp4.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support.hpp"

namespace {

namespace lb = lowbit;
using lb::errc;
using lowbit_test::misaligned;

// The paths this machine can run; every check must give the same status on each.
std::vector<lb::isa> paths() {
  std::vector<lb::isa> p = {lb::isa::scalar};
  if (lowbit_test::have_avx2()) p.push_back(lb::isa::avx2);
  return p;
}

template <class Fmt>
class MxArguments : public ::testing::Test {};
using mx_formats = ::testing::Types<lb::mxfp8_e4m3, lb::mxfp8_e5m2, lb::mxfp6_e2m3, lb::mxfp6_e3m2, lb::mxfp4_e2m1,
                                    lb::mxint8>;
TYPED_TEST_SUITE(MxArguments, mx_formats);

constexpr std::size_t n = 64;  // two blocks of 32

TYPED_TEST(MxArguments, MisalignedPointersAreRejectedBeforeAnyWrite) {
  using Fmt = TypeParam;
  const std::size_t eb = lb::packed_bytes(n, Fmt::element_bits);
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    misaligned<float> xf(n);
    misaligned<lb::bfloat16> xb(n);
    std::vector<std::uint8_t> e(eb, 0xEE), s(2, 0xEE);
    EXPECT_EQ(lb::mx_quantize<Fmt>(static_cast<const float*>(xf.data()), n, {}, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lb::mx_quantize<Fmt>(static_cast<const lb::bfloat16*>(xb.data()), n, {}, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lb::mx_quantize_matrix<Fmt>(static_cast<const float*>(xf.data()), 2, 32, {}, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lb::mx_quantize(Fmt::id, static_cast<const float*>(xf.data()), n, {}, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(e, std::vector<std::uint8_t>(eb, 0xEE));
    EXPECT_EQ(s, std::vector<std::uint8_t>(2, 0xEE));
    EXPECT_EQ(lb::mx_dequantize<Fmt>(e.data(), s.data(), n, {}, xf.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(e.data(), s.data(), n, {}, xb.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::mx_dequantize_matrix<Fmt>(e.data(), s.data(), 2, 32, {}, xf.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::mx_dequantize(Fmt::id, e.data(), s.data(), n, {}, xb.data()).code(), errc::misaligned);
  }
}

TYPED_TEST(MxArguments, OverlappingBuffersAreRejectedBeforeAnyWrite) {
  using Fmt = TypeParam;
  const std::size_t eb = lb::packed_bytes(n, Fmt::element_bits);
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    // The scales inside x (the case), the elements inside x, elements and scales sharing
    // a byte: overlapping_buffers, and x keeps every bit.
    std::vector<float> x(n + eb);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 3.0f;
    const std::vector<float> x0 = x;
    std::uint8_t* inside_x = reinterpret_cast<std::uint8_t*>(x.data()) + 4 * (n - 1);
    std::vector<std::uint8_t> e(eb + 2, 0xEE), s(2, 0xEE);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, {}, e.data(), inside_x).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, {}, inside_x, s.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, {}, e.data(), e.data() + eb - 1).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_quantize_matrix<Fmt>(x.data(), 2, 32, {}, e.data(), inside_x).code(), errc::overlapping_buffers);
    EXPECT_EQ(std::memcmp(x.data(), x0.data(), x.size() * sizeof(float)), 0);
    EXPECT_EQ(e, std::vector<std::uint8_t>(eb + 2, 0xEE));
    EXPECT_EQ(s, std::vector<std::uint8_t>(2, 0xEE));
    // Adjacent is not overlapping: scales right after the elements, elements right after x.
    std::vector<float> y(n + eb);
    std::memcpy(y.data(), x.data(), n * sizeof(float));
    std::uint8_t* after_y = reinterpret_cast<std::uint8_t*>(y.data() + n);
    EXPECT_EQ(lb::mx_quantize<Fmt>(y.data(), n, {}, after_y, after_y + eb).code(), errc::ok);
    std::vector<std::uint8_t> e2(eb), s2(2);
    ASSERT_EQ(lb::mx_quantize<Fmt>(x0.data(), n, {}, e2.data(), s2.data()).code(), errc::ok);
    EXPECT_EQ(std::vector<std::uint8_t>(after_y, after_y + eb), e2);
    EXPECT_EQ(std::vector<std::uint8_t>(after_y + eb, after_y + eb + 2), s2);
    // In-place dequantization (the output over its own elements or scales) is rejected.
    std::vector<float> out(n + eb, 7.0f);
    std::uint8_t* ob = reinterpret_cast<std::uint8_t*>(out.data());
    std::memcpy(ob, e2.data(), eb);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(ob, s2.data(), n, {}, out.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(e2.data(), ob + 4 * n - 1, n, {}, out.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_dequantize_matrix<Fmt>(ob, s2.data(), 2, 32, {}, out.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(std::memcmp(ob, e2.data(), eb), 0);
    for (std::size_t i = eb / 4 + 1; i < out.size(); ++i) ASSERT_EQ(out[i], 7.0f) << i;
  }
}

TYPED_TEST(MxArguments, ChecksComeInTheDocumentedOrder) {
  using Fmt = TypeParam;
  const std::size_t eb = lb::packed_bytes(n, Fmt::element_bits);
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    misaligned<float> xm(n);
    const float* null_x = nullptr;
    std::vector<float> x(n, 1.0f);
    std::vector<std::uint8_t> e(eb, 0xEE), s(2, 0xEE);
    lb::mx_options stochastic;
    stochastic.element_rounding = lb::rounding::stochastic;
    lb::mx_options bad_rule;
    bad_rule.scale_rule = static_cast<lb::e8m0_rule>(9);
    lb::mx_options bad_rounding;
    bad_rounding.element_rounding = static_cast<lb::rounding>(42);
    // options before shape before empty before buffers
    EXPECT_EQ(lb::mx_quantize<Fmt>(null_x, 33, stochastic, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, bad_rule, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, bad_rounding, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mx_quantize<Fmt>(null_x, 33, {}, e.data(), s.data()).code(), errc::bad_block_size);
    EXPECT_EQ(lb::mx_quantize<Fmt>(null_x, 0, {}, nullptr, nullptr).code(), errc::ok);
    EXPECT_EQ(lb::mx_quantize_matrix<Fmt>(null_x, 0, 32, {}, nullptr, nullptr).code(), errc::ok);
    EXPECT_EQ(lb::mx_quantize_matrix<Fmt>(null_x, 0, 33, {}, nullptr, nullptr).code(), errc::bad_block_size);
    // null before misaligned before overlapping
    EXPECT_EQ(lb::mx_quantize<Fmt>(xm.data(), n, {}, nullptr, s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mx_quantize<Fmt>(xm.data(), n, {}, e.data(), e.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), n, {}, e.data(), e.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(e.data(), s.data(), n, {}, static_cast<float*>(nullptr)).code(), errc::bad_argument);
    EXPECT_EQ(lb::mx_dequantize<Fmt>(e.data(), s.data(), 0, {}, static_cast<float*>(nullptr)).code(), errc::ok);
    // A size whose float bytes overflow size_t is bad_argument, before any pointer is looked at.
    const std::size_t huge = (static_cast<std::size_t>(-1) / 4 / 32 + 1) * 32;
    EXPECT_EQ(lb::mx_quantize<Fmt>(null_x, huge, {}, nullptr, nullptr).code(), errc::bad_argument);
    EXPECT_EQ(e, std::vector<std::uint8_t>(eb, 0xEE));
    EXPECT_EQ(s, std::vector<std::uint8_t>(2, 0xEE));
  }
}

TEST(MxArguments, GgmlInteropChecks) {
  std::vector<std::uint8_t> e(32, 0x11), s(2, 0x7F);
  lb::ggml_block_mxfp4 g[2] = {};
  const std::uint8_t* null_bytes = nullptr;
  EXPECT_EQ(lb::mxfp4_to_ggml(null_bytes, nullptr, 0, nullptr).code(), errc::ok);
  EXPECT_EQ(lb::mxfp4_to_ggml(null_bytes, s.data(), 40, g).code(), errc::bad_block_size);
  EXPECT_EQ(lb::mxfp4_to_ggml(null_bytes, s.data(), 64, g).code(), errc::bad_argument);
  // The blocks over their own elements or scales.
  std::vector<std::uint8_t> both(2 * sizeof(lb::ggml_block_mxfp4) + 32, 0x22);
  auto* over = reinterpret_cast<lb::ggml_block_mxfp4*>(both.data());
  EXPECT_EQ(lb::mxfp4_to_ggml(both.data() + 20, s.data(), 64, over).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::mxfp4_to_ggml(e.data(), both.data() + 33, 64, over).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::mxfp4_from_ggml(over, 64, both.data() + 30, s.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::mxfp4_from_ggml(g, 64, e.data(), e.data() + 31).code(), errc::overlapping_buffers);
  EXPECT_EQ(both, std::vector<std::uint8_t>(both.size(), 0x22));
  EXPECT_EQ(e, std::vector<std::uint8_t>(32, 0x11));
  EXPECT_EQ(lb::mxfp4_to_ggml(e.data(), s.data(), 64, g).code(), errc::ok);
}

TYPED_TEST(MxArguments, SpanOverloadsTakeTheirCountsFromTheContainers) {
  using Fmt = TypeParam;
  const std::size_t eb = lb::packed_bytes(n, Fmt::element_bits);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 13) * 0.37f - 2.0f;
  const lb::mx_options o;
  std::vector<std::uint8_t> e1(eb), s1(2), e2(eb, 0xEE), s2(2, 0xEE);
  ASSERT_EQ(lb::mx_quantize<Fmt>(x.data(), n, o, e1.data(), s1.data()).code(), errc::ok);
  ASSERT_EQ(lb::mx_quantize<Fmt>(x, o, e2, s2).code(), errc::ok);
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(s1, s2);
  std::vector<float> y1(n), y2(n);
  ASSERT_EQ(lb::mx_dequantize<Fmt>(e1.data(), s1.data(), n, o, y1.data()).code(), errc::ok);
  ASSERT_EQ(lb::mx_dequantize<Fmt>(e2, s2, o, y2).code(), errc::ok);
  EXPECT_EQ(y1, y2);
  std::fill(e2.begin(), e2.end(), 0xEE);
  ASSERT_EQ(lb::mx_quantize_matrix<Fmt>(x, 2, 32, o, e2, s2).code(), errc::ok);
  EXPECT_EQ(e1, e2);
  ASSERT_EQ(lb::mx_dequantize_matrix<Fmt>(e2, s2, 2, 32, o, y2).code(), errc::ok);
  EXPECT_EQ(y1, y2);
  // A span one element too long or too short is size_mismatch, and nothing is written.
  std::vector<std::uint8_t> e3(eb + 1, 0xEE), s3(1, 0xEE);
  EXPECT_EQ(lb::mx_quantize<Fmt>(x, o, e3, s2).code(), errc::size_mismatch);
  EXPECT_EQ(lb::mx_quantize<Fmt>(x, o, e1, s3).code(), errc::size_mismatch);
  EXPECT_EQ(lb::mx_quantize_matrix<Fmt>(x, 2, 64, o, e1, s1).code(), errc::size_mismatch);
  EXPECT_EQ(e3, std::vector<std::uint8_t>(eb + 1, 0xEE));
  EXPECT_EQ(s3, std::vector<std::uint8_t>(1, 0xEE));
  std::vector<float> y3(n + 1, 5.0f);
  EXPECT_EQ(lb::mx_dequantize<Fmt>(e1, s1, o, y3).code(), errc::bad_block_size);  // 65 values: not whole blocks
  EXPECT_EQ(lb::mx_dequantize_matrix<Fmt>(e1, s1, 1, 64, o, y3).code(), errc::size_mismatch);
  EXPECT_EQ(y3, std::vector<float>(n + 1, 5.0f));
  // Options and shape come first: a bad block size is reported over a size mismatch.
  EXPECT_EQ(lb::mx_quantize<Fmt>(x, lb::mx_presets::ocp(0), e3, s3).code(), errc::bad_block_size);
}

TEST(MxArguments, RunTimeFormatOutOfRangeIsBadArgument) {
  std::vector<float> x(32, 1.0f), y(32, 5.0f);
  std::vector<std::uint8_t> e(32, 0xEE), s(1, 0xEE);
  const auto bad = static_cast<lb::mx_format>(6);
  EXPECT_EQ(lb::mx_quantize(bad, x.data(), 32, {}, e.data(), s.data()).code(), errc::bad_argument);
  EXPECT_EQ(lb::mx_dequantize(bad, e.data(), s.data(), 32, {}, y.data()).code(), errc::bad_argument);
  EXPECT_EQ(lb::mx_quantize_matrix(bad, x.data(), 1, 32, {}, e.data(), s.data()).code(), errc::bad_argument);
  EXPECT_EQ(lb::mx_element_bits(bad), 0);
  EXPECT_EQ(e, std::vector<std::uint8_t>(32, 0xEE));
  EXPECT_EQ(y, std::vector<float>(32, 5.0f));
  // The run-time matrix calls write what the templates write.
  std::vector<std::uint8_t> e2(24);
  ASSERT_EQ(lb::mx_quantize_matrix(lb::mx_format::mxfp6_e2m3, x.data(), 1, 32, {}, e.data(), s.data()).code(),
            errc::ok);
  ASSERT_EQ(lb::mx_quantize_matrix<lb::mxfp6_e2m3>(x.data(), 1, 32, {}, e2.data(), s.data()).code(), errc::ok);
  EXPECT_TRUE(std::equal(e2.begin(), e2.end(), e.begin()));
  ASSERT_EQ(lb::mx_dequantize_matrix(lb::mx_format::mxfp6_e2m3, e2.data(), s.data(), 1, 32, {}, y.data()).code(),
            errc::ok);
  EXPECT_EQ(y, x);
}

TEST(MxArguments, GgmlSpanOverloads) {
  std::vector<std::uint8_t> e(32), s = {0x7F, 0x80};
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = static_cast<std::uint8_t>(i * 7);
  std::vector<lb::ggml_block_mxfp4> g(2), g2(2);
  ASSERT_EQ(lb::mxfp4_to_ggml(e.data(), s.data(), 64, g.data()).code(), errc::ok);
  ASSERT_EQ(lb::mxfp4_to_ggml(e, s, g2).code(), errc::ok);
  EXPECT_EQ(std::memcmp(g.data(), g2.data(), 2 * sizeof(lb::ggml_block_mxfp4)), 0);
  std::vector<std::uint8_t> e2(32), s2(2);
  ASSERT_EQ(lb::mxfp4_from_ggml(g2, e2, s2).code(), errc::ok);
  EXPECT_EQ(e2, e);
  EXPECT_EQ(s2, s);
  std::vector<lb::ggml_block_mxfp4> g3(3);
  EXPECT_EQ(lb::mxfp4_to_ggml(e, s, g3).code(), errc::size_mismatch);
  EXPECT_EQ(lb::mxfp4_from_ggml(g3, e2, s2).code(), errc::size_mismatch);
}

// ---------------------------------------------------------------------------------------------
// NVFP4.

TEST(Nvfp4Arguments, MisalignedPointersAreRejectedBeforeAnyWrite) {
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    misaligned<float> xf(n);
    misaligned<lb::bfloat16> xb(n);
    std::vector<std::uint8_t> e(n / 2, 0xEE), s(n / 16, 0xEE);
    const lb::nvfp4_options t = lb::nvfp4_options{};
    EXPECT_EQ(lb::nvfp4_quantize(static_cast<const float*>(xf.data()), n, t, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lb::nvfp4_quantize(static_cast<const lb::bfloat16*>(xb.data()), n, t, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(lb::nvfp4_quantize_matrix(static_cast<const float*>(xf.data()), 4, 16, t, e.data(), s.data()).code(),
              errc::misaligned);
    EXPECT_EQ(e, std::vector<std::uint8_t>(n / 2, 0xEE));
    EXPECT_EQ(s, std::vector<std::uint8_t>(n / 16, 0xEE));
    EXPECT_EQ(lb::nvfp4_dequantize(e.data(), s.data(), n, t, xf.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::nvfp4_dequantize(e.data(), s.data(), n, t, xb.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::nvfp4_dequantize_matrix(e.data(), s.data(), 4, 16, t, xf.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::nvfp4_compute_tensor_scale(static_cast<const float*>(xf.data()), n, lb::nvfp4_options{})
                  .status.code(),
              errc::misaligned);
  }
}

TEST(Nvfp4Arguments, OverlappingBuffersAreRejectedBeforeAnyWrite) {
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    const lb::nvfp4_options t = lb::nvfp4_options{};
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.25f - 3.0f;
    const std::vector<float> x0 = x;
    std::uint8_t* inside_x = reinterpret_cast<std::uint8_t*>(x.data()) + 4 * (n - 1);
    std::vector<std::uint8_t> e(n / 2 + 4, 0xEE), s(n / 16, 0xEE);
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), n, t, e.data(), inside_x).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), n, t, inside_x - 1, s.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), n, t, e.data(), e.data() + n / 2 - 1).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::nvfp4_quantize_matrix(x.data(), 4, 16, t, e.data(), inside_x).code(), errc::overlapping_buffers);
    EXPECT_EQ(std::memcmp(x.data(), x0.data(), n * sizeof(float)), 0);
    EXPECT_EQ(e, std::vector<std::uint8_t>(n / 2 + 4, 0xEE));
    EXPECT_EQ(lb::nvfp4_quantize(x.data(), n, t, e.data(), e.data() + n / 2).code(), errc::ok);  // adjacent
    std::vector<float> out(n, 7.0f);
    std::uint8_t* ob = reinterpret_cast<std::uint8_t*>(out.data());
    std::memcpy(ob, e.data(), n / 2 + 4);
    EXPECT_EQ(lb::nvfp4_dequantize(ob, ob + n / 2, n, t, out.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::nvfp4_dequantize(e.data(), ob + 4 * n - 1, n, t, out.data()).code(), errc::overlapping_buffers);
    EXPECT_EQ(std::memcmp(ob, e.data(), n / 2 + 4), 0);
    for (std::size_t i = (n / 2 + 4) / 4; i < n; ++i) ASSERT_EQ(out[i], 7.0f) << i;
  }
}

TEST(Nvfp4Arguments, ChecksComeInTheDocumentedOrder) {
  for (lb::isa isa : paths()) {
    lb::scoped_isa scope(isa);
    const float* null_x = nullptr;
    misaligned<float> xm(n);
    std::vector<std::uint8_t> e(n / 2, 0xEE), s(n / 16, 0xEE);
    const lb::nvfp4_options t = lb::nvfp4_options{};
    const lb::nvfp4_options bad_t{0.0f};
    const lb::nvfp4_options bad_convention{1.0f, static_cast<lb::nvfp4_scale_convention>(5)};
    lb::nvfp4_options bad_rounding;
    bad_rounding.scale_rounding = static_cast<lb::rounding>(42);
    EXPECT_EQ(lb::nvfp4_quantize(null_x, 33, bad_t, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_quantize(null_x, 33, bad_convention, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_quantize(null_x, 33, bad_rounding, e.data(), s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_quantize(null_x, 33, t, e.data(), s.data()).code(), errc::bad_block_size);
    EXPECT_EQ(lb::nvfp4_quantize(null_x, 0, t, nullptr, nullptr).code(), errc::ok);
    EXPECT_EQ(lb::nvfp4_quantize(xm.data(), n, t, nullptr, s.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_quantize(xm.data(), n, t, e.data(), e.data()).code(), errc::misaligned);
    EXPECT_EQ(lb::nvfp4_dequantize(e.data(), s.data(), 0, bad_t, static_cast<float*>(nullptr)).code(),
              errc::bad_argument);
    EXPECT_EQ(lb::nvfp4_dequantize(e.data(), s.data(), 0, t, static_cast<float*>(nullptr)).code(), errc::ok);
    EXPECT_EQ(lb::nvfp4_compute_tensor_scale(null_x, 0, lb::nvfp4_options{}).status.code(),
              errc::empty_input);
    EXPECT_EQ(lb::nvfp4_compute_tensor_scale(null_x, 16, lb::nvfp4_options{}).status.code(),
              errc::bad_argument);
    EXPECT_EQ(
        lb::nvfp4_compute_tensor_scale(null_x, 0, lb::nvfp4_options{1.0f, static_cast<lb::nvfp4_scale_convention>(5)}).status.code(),
        errc::bad_argument);
    EXPECT_EQ(e, std::vector<std::uint8_t>(n / 2, 0xEE));
    EXPECT_EQ(s, std::vector<std::uint8_t>(n / 16, 0xEE));
  }
}

TEST(Nvfp4Arguments, SpanOverloadsTakeTheirCountsFromTheContainers) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 11) * 0.41f - 2.0f;
  lb::nvfp4_options o;
  const lb::result<float> t = lb::nvfp4_compute_tensor_scale(x, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value, lb::nvfp4_compute_tensor_scale(x.data(), n, o).value);
  o.tensor_scale = t.value;
  std::vector<std::uint8_t> e1(n / 2), s1(n / 16), e2(n / 2, 0xEE), s2(n / 16, 0xEE);
  ASSERT_EQ(lb::nvfp4_quantize(x.data(), n, o, e1.data(), s1.data()).code(), errc::ok);
  ASSERT_EQ(lb::nvfp4_quantize(x, o, e2, s2).code(), errc::ok);
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(s1, s2);
  std::vector<float> y1(n), y2(n);
  ASSERT_EQ(lb::nvfp4_dequantize(e1.data(), s1.data(), n, o, y1.data()).code(), errc::ok);
  ASSERT_EQ(lb::nvfp4_dequantize(e2, s2, o, y2).code(), errc::ok);
  EXPECT_EQ(y1, y2);
  ASSERT_EQ(lb::nvfp4_quantize_matrix(x, 4, 16, o, e2, s2).code(), errc::ok);
  EXPECT_EQ(e1, e2);
  ASSERT_EQ(lb::nvfp4_dequantize_matrix(e2, s2, 4, 16, o, y2).code(), errc::ok);
  EXPECT_EQ(y1, y2);
  std::vector<std::uint8_t> e3(n / 2 - 1, 0xEE);
  EXPECT_EQ(lb::nvfp4_quantize(x, o, e3, s2).code(), errc::size_mismatch);
  EXPECT_EQ(lb::nvfp4_quantize_matrix(x, 2, 16, o, e1, s1).code(), errc::size_mismatch);
  EXPECT_EQ(lb::nvfp4_dequantize(e3, s2, o, y2).code(), errc::size_mismatch);
  EXPECT_EQ(e3, std::vector<std::uint8_t>(n / 2 - 1, 0xEE));
  EXPECT_EQ(lb::nvfp4_compute_tensor_scale(std::vector<float>{}, o).status.code(), errc::empty_input);
  lb::ggml_block_nvfp4 g{}, g2{};
  ASSERT_EQ(lb::nvfp4_to_ggml(e1.data(), s1.data(), n, &g).code(), errc::ok);
  ASSERT_EQ(lb::nvfp4_to_ggml(lb::span<const std::uint8_t>(e1), lb::span<const std::uint8_t>(s1),
                              lb::span<lb::ggml_block_nvfp4>(&g2, 1))
                .code(),
            errc::ok);
  EXPECT_EQ(std::memcmp(&g, &g2, sizeof g), 0);
  std::vector<std::uint8_t> e4(n / 2), s4(n / 16);
  ASSERT_EQ(lb::nvfp4_from_ggml(lb::span<const lb::ggml_block_nvfp4>(&g2, 1), e4, s4).code(), errc::ok);
  EXPECT_EQ(e4, e1);
  EXPECT_EQ(lb::nvfp4_from_ggml(lb::span<const lb::ggml_block_nvfp4>(&g2, 1), e3, s4).code(), errc::size_mismatch);
}

TEST(Nvfp4Arguments, GgmlInteropChecks) {
  std::vector<std::uint8_t> e(32, 0x11), s(4, 0x38);
  lb::ggml_block_nvfp4 g{};
  EXPECT_EQ(lb::nvfp4_to_ggml(nullptr, nullptr, 0, nullptr).code(), errc::ok);
  EXPECT_EQ(lb::nvfp4_to_ggml(e.data(), s.data(), 48, &g).code(), errc::bad_block_size);
  EXPECT_EQ(lb::nvfp4_to_ggml(e.data(), nullptr, 64, &g).code(), errc::bad_argument);
  std::vector<std::uint8_t> both(sizeof(lb::ggml_block_nvfp4) + 32, 0x22);
  auto* over = reinterpret_cast<lb::ggml_block_nvfp4*>(both.data());
  EXPECT_EQ(lb::nvfp4_to_ggml(both.data() + 35, s.data(), 64, over).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::nvfp4_from_ggml(over, 64, both.data() + 4, s.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(lb::nvfp4_from_ggml(&g, 64, e.data(), e.data() + 28).code(), errc::overlapping_buffers);
  EXPECT_EQ(both, std::vector<std::uint8_t>(both.size(), 0x22));
  EXPECT_EQ(e, std::vector<std::uint8_t>(32, 0x11));
  EXPECT_EQ(lb::nvfp4_to_ggml(e.data(), s.data(), 64, &g).code(), errc::ok);
}

}  // namespace
