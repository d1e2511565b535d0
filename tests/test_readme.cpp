// The README's "Use it" section, line for line (between the BEGIN/END markers each snippet is the
// README's text), with the numbers it promises checked. If this file changes, change the README.
#include <gtest/gtest.h>

#include <lowbit/lowbit.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "support.hpp"

namespace {

using lowbit_test::gaussian;

TEST(Readme, Fp8) {
  const std::vector<float> x = {0.02f, -0.3f, 1.7f, 12.0f, 500.0f};
  // BEGIN fp8
  std::vector<lowbit::float8_e4m3fn> q(x.size());
  lowbit::status s = lowbit::convert(x, q);  // round to nearest even, saturate at +-448
  std::vector<float> back(x.size());
  s = lowbit::convert(q, back);              // exact
  // END fp8
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(back[2], 1.75f);
  EXPECT_EQ(back[4], 448.0f);
}

TEST(Readme, ScaledFp8) {
  const std::size_t out = 256, in = 384;
  const std::vector<float> w = gaussian(out * in, 0.02f, 3);
  // BEGIN scaled-fp8
  const lowbit::fp8_options o = lowbit::fp8_presets::deepseek_v3_weights();
  std::vector<lowbit::float8_e4m3fn> q(out * in);
  std::vector<float> scales(lowbit::fp8_blocks(o, out, in).value.scale_count());  // [out/128, in/128]
  lowbit::status s = lowbit::fp8_quantize(w.data(), out, in, o, q.data(), scales.data());
  std::vector<float> w_hat(out * in);
  s = lowbit::fp8_dequantize(q.data(), scales.data(), out, in, o, w_hat.data());  // q * scale
  // END scaled-fp8
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(scales.size(), 2u * 3u);
  // E4M3 keeps 3 mantissa bits: about 31 dB on Gaussian weights (uniform relative error of at
  // most 1/16 in the normal range).
  EXPECT_GT(lowbit::sqnr_db(w, w_hat).value, 28.0);
}

TEST(Readme, Int4Gptq) {
  const std::size_t out = 64, in = 256;
  const std::vector<float> w = gaussian(out * in, 0.02f, 1);
  // BEGIN gptq
  // INT4, groups of 128 along `in`, fp16 scales: a GPTQ checkpoint's tensors, int32 as stored.
  auto m = lowbit::quantized_matrix::quantize(w, out, in, lowbit::int_presets::gptq(4, 128));
  if (!m.ok()) return;  // m.status.message() says why
  auto t = lowbit::export_gptq(m.value);  // qweight [in/8, out], qzeros, scales [in/128, out], g_idx
  std::vector<float> w_hat(out * in);
  lowbit::status s = m.value.dequantize(w_hat);
  double sqnr = lowbit::sqnr_db(w, w_hat).value;  // about 19 dB for Gaussian weights
  // END gptq
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(t.value.qweight.rows(), in / 8);
  EXPECT_EQ(t.value.qweight.cols(), out);
  EXPECT_EQ(t.value.scales.rows(), in / 128);
  EXPECT_GT(sqnr, 18.0);
  EXPECT_LT(sqnr, 21.0);
}

TEST(Readme, MxAndNvfp4) {
  const std::size_t n = 4096;
  const std::vector<float> x = gaussian(n, 1.0f, 2);
  std::vector<float> y(n);
  // BEGIN blocks
  // MXFP4: 32 E2M1 elements share one E8M0 scale; the same options go both ways.
  const lowbit::mx_options mx = lowbit::mx_presets::ocp();
  std::vector<std::uint8_t> elements(lowbit::packed_bytes(n, 4)), mx_scales(n / 32);
  lowbit::status s = lowbit::mx_quantize<lowbit::mxfp4_e2m1>(x, mx, elements, mx_scales);
  s = lowbit::mx_dequantize<lowbit::mxfp4_e2m1>(elements, mx_scales, mx, y);

  // NVFP4: 16 elements share an E4M3 scale, under one float32 tensor scale.
  lowbit::nvfp4_options nv = lowbit::nvfp4_presets::nvidia();
  nv.tensor_scale = lowbit::nvfp4_compute_tensor_scale(x, nv).value;  // amax / (448 * 6)
  std::vector<std::uint8_t> nv_scales(n / 16);
  s = lowbit::nvfp4_quantize(x, nv, elements, nv_scales);
  s = lowbit::nvfp4_dequantize(elements, nv_scales, nv, y);
  // END blocks
  ASSERT_TRUE(s.ok());
  EXPECT_GT(lowbit::sqnr_db(x, y).value, 15.0);
}

}  // namespace
