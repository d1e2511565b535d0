// Export of a quantized_matrix to checkpoint tensors (schemes/export.hpp): GPTQ v1/v2, AWQ and
// ggml Q4_0/Q8_0, byte for byte against the layout packers fed with the matrix's unpacked codes,
// zero-points and transposed scales; and the errors.
#include <lowbit/schemes/export.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using lowbit::errc;
using lowbit::int_params;
using lowbit::quantized_matrix;

std::vector<float> weights(std::size_t n, std::uint32_t seed) {
  std::vector<float> x(n);
  for (auto& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(seed)) / 2147483648.0f;
  }
  return x;
}

quantized_matrix make(std::size_t out, std::size_t in, const int_params& p) {
  const std::vector<float> w = weights(out * in, static_cast<std::uint32_t>(out * 31 + in));
  auto m = quantized_matrix::quantize(w.data(), out, in, p);
  EXPECT_TRUE(m.ok()) << m.status.message();
  return std::move(m.value);
}

template <class A, class B>
std::vector<std::uint8_t> bytes(const A* p, std::size_t n) {
  std::vector<std::uint8_t> b(n * sizeof(A));
  std::memcpy(b.data(), p, b.size());
  static_assert(sizeof(A) == sizeof(B), "same element size");
  return b;
}

// The matrix's parts as the packers take them: codes one per byte, zeros [out, groups] as bytes,
// scales [groups, out] as fp16 bits.
struct parts {
  std::vector<std::uint8_t> codes, zeros;
  std::vector<std::uint16_t> scales_t;
  std::size_t groups;
};

parts parts_of(const quantized_matrix& m) {
  parts r;
  r.groups = m.group_count() / m.rows();
  r.codes.resize(m.size());
  EXPECT_TRUE(m.unpack(r.codes).ok());
  const int_params& p = m.params();
  for (std::size_t i = 0; i < m.group_count(); ++i)
    r.zeros.push_back(lowbit::has_zero_points(p) ? static_cast<std::uint8_t>(m.zeros()[i])
                                                 : static_cast<std::uint8_t>(lowbit::symmetric_zero_point(p.bits)));
  std::vector<float> t(m.group_count());
  EXPECT_TRUE(lowbit::transpose_group_params(m.scales().data(), m.rows(), r.groups, t.data()).ok());
  for (float s : t) r.scales_t.push_back(lowbit::encode<lowbit::float16>(s).bits());
  return r;
}

TEST(Export, GptqMatchesThePackers) {
  for (int bits : {2, 4, 8}) {
    for (bool affine : {false, true}) {
      int_params p = affine ? lowbit::int_presets::awq(bits, 64) : lowbit::int_presets::gptq(bits, 64);
      if (affine) p.range_includes_zero = true;  // zero-points >= 1 for v1 on this data
      const std::size_t out = 32, in = 256;
      const quantized_matrix m = make(out, in, p);
      const parts pt = parts_of(m);
      for (auto fmt : {lowbit::gptq_format::v1, lowbit::gptq_format::v2}) {
        const auto t = lowbit::export_gptq(m, fmt);
        ASSERT_TRUE(t.ok()) << t.status.message() << " bits " << bits;
        const std::size_t k = 32u / static_cast<std::size_t>(bits);
        std::vector<std::uint32_t> qw(in / k * out), qz(pt.groups * out / k);
        ASSERT_TRUE(lowbit::gptq_pack_qweight(pt.codes.data(), out, in, bits, qw.data()).ok());
        ASSERT_TRUE(lowbit::gptq_pack_qzeros(pt.zeros.data(), out, pt.groups, bits, fmt, qz.data()).ok());
        EXPECT_EQ(t.value.qweight.rows(), in / k);
        EXPECT_EQ(t.value.qweight.cols(), out);
        EXPECT_EQ((bytes<std::int32_t, std::uint32_t>(t.value.qweight.values().data(), t.value.qweight.size())),
                  (bytes<std::uint32_t, std::int32_t>(qw.data(), qw.size())));
        EXPECT_EQ((bytes<std::int32_t, std::uint32_t>(t.value.qzeros.values().data(), t.value.qzeros.size())),
                  (bytes<std::uint32_t, std::int32_t>(qz.data(), qz.size())));
        EXPECT_EQ((bytes<lowbit::float16, std::uint16_t>(t.value.scales.values().data(), t.value.scales.size())),
                  (bytes<std::uint16_t, lowbit::float16>(pt.scales_t.data(), pt.scales_t.size())));
        std::vector<std::int32_t> g(in);
        ASSERT_TRUE(lowbit::gptq_g_idx(in, 64, g.data()).ok());
        EXPECT_EQ(std::vector<std::int32_t>(t.value.g_idx.values().begin(), t.value.g_idx.values().end()), g);
        // And back: the packers' readers give the matrix's codes and zero-points.
        std::vector<std::uint8_t> codes(out * in), zeros(out * pt.groups);
        ASSERT_TRUE(lowbit::gptq_unpack_qweight(reinterpret_cast<const std::uint32_t*>(t.value.qweight.values().data()),
                                                out, in, bits, codes.data()).ok());
        ASSERT_TRUE(lowbit::gptq_unpack_qzeros(reinterpret_cast<const std::uint32_t*>(t.value.qzeros.values().data()),
                                               out, pt.groups, bits, fmt, zeros.data()).ok());
        EXPECT_EQ(codes, pt.codes);
        EXPECT_EQ(zeros, pt.zeros);
      }
    }
  }
}

TEST(Export, AwqMatchesThePackers) {
  for (bool affine : {true, false}) {
    const int_params p = affine ? lowbit::int_presets::awq(4, 128) : lowbit::int_presets::gptq(4, 128);
    const std::size_t out = 24, in = 384;
    const quantized_matrix m = make(out, in, p);
    const parts pt = parts_of(m);
    const auto t = lowbit::export_awq(m);
    ASSERT_TRUE(t.ok()) << t.status.message();
    std::vector<std::uint32_t> qw(in * out / 8), qz(pt.groups * out / 8);
    ASSERT_TRUE(lowbit::awq_pack_qweight(pt.codes.data(), out, in, 4, qw.data()).ok());
    ASSERT_TRUE(lowbit::awq_pack_qzeros(pt.zeros.data(), out, pt.groups, 4, qz.data()).ok());
    EXPECT_EQ((bytes<std::int32_t, std::uint32_t>(t.value.qweight.values().data(), t.value.qweight.size())),
              (bytes<std::uint32_t, std::int32_t>(qw.data(), qw.size())));
    EXPECT_EQ((bytes<std::int32_t, std::uint32_t>(t.value.qzeros.values().data(), t.value.qzeros.size())),
              (bytes<std::uint32_t, std::int32_t>(qz.data(), qz.size())));
    EXPECT_EQ((bytes<lowbit::float16, std::uint16_t>(t.value.scales.values().data(), t.value.scales.size())),
              (bytes<std::uint16_t, lowbit::float16>(pt.scales_t.data(), pt.scales_t.size())));
  }
}

TEST(Export, GgmlMatchesThePackersAndDequantizesToTheMatrix) {
  const std::size_t out = 6, in = 128;
  {
    const quantized_matrix m = make(out, in, lowbit::int_presets::ggml_q4_0());
    const parts pt = parts_of(m);
    const auto t = lowbit::export_ggml_q4_0(m);
    ASSERT_TRUE(t.ok()) << t.status.message();
    std::vector<lowbit::ggml_block_q4_0> b(out * in / 32);
    ASSERT_TRUE(lowbit::ggml_pack_q4_0(pt.codes.data(), m.scales().data(), out, in, b.data()).ok());
    ASSERT_EQ(t.value.size(), b.size());
    EXPECT_EQ(std::memcmp(t.value.values().data(), b.data(), b.size() * sizeof b[0]), 0);
    std::vector<float> a(out * in), c(out * in);
    ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(t.value.values(), out, in, lowbit::span<float>(a)).ok());
    ASSERT_TRUE(m.dequantize(c).ok());
    EXPECT_EQ(a, c);
  }
  {
    const quantized_matrix m = make(out, in, lowbit::int_presets::ggml_q8_0());
    const parts pt = parts_of(m);
    const auto t = lowbit::export_ggml_q8_0(m);
    ASSERT_TRUE(t.ok()) << t.status.message();
    std::vector<lowbit::ggml_block_q8_0> b(out * in / 32);
    ASSERT_TRUE(lowbit::ggml_pack_q8_0(pt.codes.data(), m.scales().data(), out, in, b.data()).ok());
    EXPECT_EQ(std::memcmp(t.value.values().data(), b.data(), b.size() * sizeof b[0]), 0);
    std::vector<float> a(out * in), c(out * in);
    ASSERT_TRUE(lowbit::ggml_dequantize_q8_0(t.value.values(), out, in, lowbit::span<float>(a)).ok());
    ASSERT_TRUE(m.dequantize(c).ok());
    EXPECT_EQ(a, c);
  }
}

TEST(Export, Errors) {
  EXPECT_EQ(lowbit::export_gptq(quantized_matrix{}).status.code(), errc::bad_argument);  // nothing to export
  EXPECT_EQ(lowbit::export_gptq(make(32, 64, lowbit::int_presets::gptq(3, 32))).status.code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::export_gptq(make(32, 64, lowbit::int_presets::kivi(4, 32))).status.code(), errc::bad_argument);
  int_params f32 = lowbit::int_presets::gptq(4, 32);
  f32.scale_format = lowbit::scale_storage::fp32;
  EXPECT_EQ(lowbit::export_gptq(make(32, 64, f32)).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::export_gptq(make(12, 64, lowbit::int_presets::gptq(4, 32))).status.code(), errc::bad_block_size);
  int_params tensor = lowbit::int_presets::gptq(4, 32);
  tensor.granularity = lowbit::granularity::per_tensor;
  tensor.group_size = 0;
  EXPECT_EQ(lowbit::export_gptq(make(32, 64, tensor)).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::export_awq(make(32, 64, lowbit::int_presets::gptq(8, 32))).status.code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::export_awq(make(12, 64, lowbit::int_presets::awq(4, 32))).status.code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::export_ggml_q4_0(make(4, 128, lowbit::int_presets::gptq(4, 64))).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::export_ggml_q4_0(make(4, 128, lowbit::int_presets::awq(4, 32))).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::export_ggml_q8_0(make(4, 128, lowbit::int_presets::ggml_q4_0())).status.code(), errc::bad_bit_width);
  // GPTQ v1 cannot store a zero-point of 0 (true min/max of all-positive rows); v2 can.
  std::vector<float> w(32 * 64);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0f + static_cast<float>(i % 7);
  auto pos = quantized_matrix::quantize(w.data(), 32, 64, lowbit::int_presets::awq(4, 32));
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(lowbit::export_gptq(pos.value, lowbit::gptq_format::v1).status.code(), errc::bad_argument);
  EXPECT_TRUE(lowbit::export_gptq(pos.value, lowbit::gptq_format::v2).ok());
}

}  // namespace
