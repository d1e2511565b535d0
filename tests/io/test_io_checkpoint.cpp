// lowbit::io checkpoint layouts (io/checkpoint.hpp): names, dtypes and shapes as the engines load
// them, bytes of tiny layers worked out by hand from the conventions (docs/checkpoints.md),
// quantize_linear -> dequantize_linear against lowbit's own quantize-then-dequantize, the config
// JSON, errors, and a round trip through a real safetensors file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/io/checkpoint.hpp"
#include "lowbit/io/safetensors.hpp"

namespace {

using lowbit::io::checkpoint_format;
using lowbit::io::checkpoint_options;
using lowbit::io::dtype;
using lowbit::io::tensor_data;
using lowbit::io::tensor_view;
using shape_t = std::vector<std::uint64_t>;

const std::string kPrefix = "model.layers.0.mlp.down_proj";

// Deterministic weights in about [-1, 1) with a few larger outliers (xorshift, no <random>).
std::vector<float> weights(std::size_t n, std::uint32_t seed = 12345) {
  std::vector<float> w(n);
  std::uint32_t s = seed;
  for (std::size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    float v = static_cast<float>(static_cast<double>(s) / 2147483648.0 - 1.0);
    if (i % 97 == 0) v *= 4.0f;
    w[i] = v;
  }
  return w;
}

checkpoint_options opts(checkpoint_format f) {
  checkpoint_options o;
  o.format = f;
  return o;
}

std::vector<tensor_data> quantize(const std::vector<float>& w, std::size_t out, std::size_t in,
                                  const checkpoint_options& o) {
  auto r = lowbit::io::quantize_linear(kPrefix, w.data(), out, in, o);
  EXPECT_TRUE(r.ok()) << r.error;
  return std::move(r.value);
}

std::vector<tensor_view> views(const std::vector<tensor_data>& ts) {
  std::vector<tensor_view> v;
  for (const tensor_data& t : ts) v.push_back(t.view());
  return v;
}

const tensor_data* find(const std::vector<tensor_data>& ts, const std::string& suffix) {
  for (const tensor_data& t : ts)
    if (t.name == kPrefix + "." + suffix) return &t;
  return nullptr;
}

// name suffix, dtype, shape of each tensor, in order.
struct layout_row {
  std::string suffix;
  dtype type;
  shape_t shape;
};

void expect_layout(const std::vector<tensor_data>& ts, const std::vector<layout_row>& rows) {
  ASSERT_EQ(ts.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(rows[i].suffix);
    EXPECT_EQ(ts[i].name, kPrefix + "." + rows[i].suffix);
    EXPECT_EQ(ts[i].type, rows[i].type) << lowbit::io::dtype_name(ts[i].type);
    EXPECT_EQ(ts[i].shape, rows[i].shape);
    std::uint64_t n = 0;
    ASSERT_TRUE(lowbit::io::element_count(ts[i].shape, n));
    EXPECT_EQ(ts[i].bytes.size(), n * lowbit::io::dtype_size(ts[i].type));
  }
}

std::uint32_t word(const tensor_data& t, std::size_t i) {
  std::uint32_t v = 0;
  for (std::size_t b = 0; b < 4; ++b) v |= static_cast<std::uint32_t>(t.bytes[4 * i + b]) << (8 * b);
  return v;
}
std::uint16_t half(const tensor_data& t, std::size_t i) {
  return static_cast<std::uint16_t>(t.bytes[2 * i] | t.bytes[2 * i + 1] << 8);
}
float f32(const tensor_data& t, std::size_t i) {
  float f = 0.0f;
  std::uint32_t u = word(t, i);
  std::memcpy(&f, &u, 4);
  return f;
}

void expect_bitwise(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b && bad++ < 5) ADD_FAILURE() << "element " << i << ": " << got[i] << " != " << want[i];
  }
  EXPECT_EQ(bad, 0u);
}

std::vector<float> dequantize(const std::vector<tensor_data>& ts, const checkpoint_options& o, std::size_t out,
                              std::size_t in) {
  std::size_t r = 0, c = 0;
  auto d = lowbit::io::dequantize_linear(kPrefix, views(ts), o, r, c);
  EXPECT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(r, out);
  EXPECT_EQ(c, in);
  return std::move(d.value);
}

// lowbit's own quantize-then-dequantize of the integer grid p.
std::vector<float> int_reference(const std::vector<float>& w, std::size_t out, std::size_t in,
                                 const lowbit::int_params& p) {
  std::vector<float> y(w.size());
  EXPECT_TRUE(lowbit::quantize_dequantize_int(w.data(), out, in, p, y.data()).ok());
  return y;
}

// ----- names, dtypes and shapes of a 256 x 512 layer ------------------------------------------------

constexpr std::size_t kOut = 256, kIn = 512;

TEST(CheckpointLayout, GptqNamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  checkpoint_options o = opts(checkpoint_format::gptq);
  expect_layout(quantize(w, kOut, kIn, o), {{"qweight", dtype::i32, {64, 256}},
                                            {"qzeros", dtype::i32, {4, 32}},
                                            {"scales", dtype::f16, {4, 256}},
                                            {"g_idx", dtype::i32, {512}}});
  o.bits = 8;
  expect_layout(quantize(w, kOut, kIn, o), {{"qweight", dtype::i32, {128, 256}},
                                            {"qzeros", dtype::i32, {4, 64}},
                                            {"scales", dtype::f16, {4, 256}},
                                            {"g_idx", dtype::i32, {512}}});
  o.bits = 4;
  o.group_size = 0;  // per channel: GPTQ's group_size -1, one group
  const auto t = quantize(w, kOut, kIn, o);
  expect_layout(t, {{"qweight", dtype::i32, {64, 256}},
                    {"qzeros", dtype::i32, {1, 32}},
                    {"scales", dtype::f16, {1, 256}},
                    {"g_idx", dtype::i32, {512}}});
  for (std::size_t i = 0; i < kIn; ++i) EXPECT_EQ(word(*find(t, "g_idx"), i), 0u);
}

TEST(CheckpointLayout, GptqGidxIsGroupOfInputChannel) {
  const auto w = weights(kOut * kIn);
  const auto t = quantize(w, kOut, kIn, opts(checkpoint_format::gptq));
  for (std::size_t i = 0; i < kIn; ++i) EXPECT_EQ(word(*find(t, "g_idx"), i), i / 128);
}

TEST(CheckpointLayout, AwqNamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  checkpoint_options o = opts(checkpoint_format::awq);
  o.symmetric = false;
  expect_layout(quantize(w, kOut, kIn, o), {{"qweight", dtype::i32, {512, 32}},
                                            {"qzeros", dtype::i32, {4, 32}},
                                            {"scales", dtype::f16, {4, 256}}});
}

TEST(CheckpointLayout, Fp8NamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  expect_layout(quantize(w, kOut, kIn, opts(checkpoint_format::fp8_per_tensor)),
                {{"weight", dtype::f8_e4m3, {256, 512}}, {"weight_scale", dtype::f32, {1}}});
  expect_layout(quantize(w, kOut, kIn, opts(checkpoint_format::fp8_per_channel)),
                {{"weight", dtype::f8_e4m3, {256, 512}}, {"weight_scale", dtype::f32, {256, 1}}});
}

TEST(CheckpointLayout, CompressedPackQuantizedNamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  checkpoint_options o = opts(checkpoint_format::compressed_int4);
  auto t = quantize(w, kOut, kIn, o);
  expect_layout(t, {{"weight_packed", dtype::i32, {256, 64}},
                    {"weight_scale", dtype::bf16, {256, 4}},
                    {"weight_shape", dtype::i64, {2}}});
  const tensor_data& s = *find(t, "weight_shape");
  std::int64_t dims[2];
  std::memcpy(dims, s.bytes.data(), 16);
  EXPECT_EQ(dims[0], 256);
  EXPECT_EQ(dims[1], 512);

  o.symmetric = false;
  expect_layout(quantize(w, kOut, kIn, o), {{"weight_packed", dtype::i32, {256, 64}},
                                            {"weight_scale", dtype::bf16, {256, 4}},
                                            {"weight_zero_point", dtype::i32, {32, 4}},
                                            {"weight_shape", dtype::i64, {2}}});
  o.bits = 8;
  o.group_size = 0;
  o.scale_dtype = dtype::f16;
  expect_layout(quantize(w, kOut, kIn, o), {{"weight_packed", dtype::i32, {256, 128}},
                                            {"weight_scale", dtype::f16, {256, 1}},
                                            {"weight_zero_point", dtype::i32, {64, 1}},
                                            {"weight_shape", dtype::i64, {2}}});
}

TEST(CheckpointLayout, Nvfp4NamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  expect_layout(quantize(w, kOut, kIn, opts(checkpoint_format::nvfp4)),
                {{"weight_packed", dtype::u8, {256, 256}},
                 {"weight_scale", dtype::f8_e4m3, {256, 32}},
                 {"weight_global_scale", dtype::f32, {1}}});
}

TEST(CheckpointLayout, Mxfp4NamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  expect_layout(quantize(w, kOut, kIn, opts(checkpoint_format::mxfp4)),
                {{"weight_packed", dtype::u8, {256, 256}}, {"weight_scale", dtype::u8, {256, 16}}});
}

TEST(CheckpointLayout, Int8PerChannelNamesDtypesShapes) {
  const auto w = weights(kOut * kIn);
  expect_layout(quantize(w, kOut, kIn, opts(checkpoint_format::int8_per_channel)),
                {{"weight", dtype::i8, {256, 512}}, {"weight_scale", dtype::f32, {256, 1}}});
}

// linear_layout declares exactly what quantize_linear writes (names, dtypes, shapes, bytes, order).
TEST(CheckpointLayout, LinearLayoutMatchesQuantizeLinear) {
  const auto w = weights(kOut * kIn);
  std::vector<checkpoint_options> all;
  for (checkpoint_format f :
       {checkpoint_format::gptq, checkpoint_format::awq, checkpoint_format::fp8_per_tensor,
        checkpoint_format::fp8_per_channel, checkpoint_format::compressed_int4, checkpoint_format::nvfp4,
        checkpoint_format::mxfp4, checkpoint_format::int8_per_channel})
    all.push_back(opts(f));
  for (std::size_t g : {std::size_t{0}, std::size_t{32}}) {
    checkpoint_options o = opts(checkpoint_format::gptq);
    o.group_size = g;
    o.bits = g == 0 ? 8 : 2;
    all.push_back(o);
    o = opts(checkpoint_format::compressed_int4);
    o.group_size = g;
    o.symmetric = false;
    o.scale_dtype = dtype::f32;
    all.push_back(o);
    o = opts(checkpoint_format::awq);
    o.symmetric = false;
    o.group_size = g;
    all.push_back(o);
  }
  for (const checkpoint_options& o : all) {
    SCOPED_TRACE(std::string(lowbit::io::checkpoint_detail::format_name(o.format)) + " bits " +
                 std::to_string(o.bits) + " group " + std::to_string(o.group_size));
    const auto t = quantize(w, kOut, kIn, o);
    const auto l = lowbit::io::linear_layout(kPrefix, kOut, kIn, o);
    ASSERT_TRUE(l.ok()) << l.error;
    ASSERT_EQ(l.value.size(), t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(l.value[i].name, t[i].name);
      EXPECT_EQ(l.value[i].type, t[i].type);
      EXPECT_EQ(l.value[i].shape, t[i].shape);
      EXPECT_EQ(l.value[i].bytes, t[i].bytes.size());
      EXPECT_EQ(l.value[i].data, nullptr);
    }
  }
  const auto bad = lowbit::io::linear_layout(kPrefix, kOut, 100, opts(checkpoint_format::gptq));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.rfind(kPrefix + ": in_features 100", 0), 0u) << bad.error;
  EXPECT_FALSE(lowbit::io::linear_layout("", kOut, kIn, opts(checkpoint_format::gptq)).ok());
}

// export_linear of the codes quantize_linear would choose gives the same bytes; GPTQ's codes
// (another matrix on the same grid) go through the same layout.
TEST(CheckpointLayout, ExportLinearMatchesQuantizeLinear) {
  const auto w = weights(kOut * kIn, 7);
  for (checkpoint_format f : {checkpoint_format::gptq, checkpoint_format::awq, checkpoint_format::compressed_int4,
                              checkpoint_format::int8_per_channel}) {
    SCOPED_TRACE(lowbit::io::checkpoint_detail::format_name(f));
    checkpoint_options o = opts(f);
    o.symmetric = f != checkpoint_format::awq;
    const auto p = lowbit::io::checkpoint_int_params(o);
    ASSERT_TRUE(p.ok()) << p.error;
    const auto m = lowbit::quantized_matrix::quantize(w.data(), kOut, kIn, p.value);
    ASSERT_TRUE(m.ok());
    const auto e = lowbit::io::export_linear(kPrefix, m.value, o);
    ASSERT_TRUE(e.ok()) << e.error;
    const auto t = quantize(w, kOut, kIn, o);
    ASSERT_EQ(e.value.size(), t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(e.value[i].name, t[i].name);
      EXPECT_EQ(e.value[i].shape, t[i].shape);
      EXPECT_EQ(e.value[i].bytes, t[i].bytes);
    }
  }
  const auto m = lowbit::quantized_matrix::quantize(w.data(), kOut, kIn, lowbit::int_presets::gptq(4, 128));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(lowbit::io::export_linear(kPrefix, m.value, opts(checkpoint_format::nvfp4)).ok());
  checkpoint_options o8 = opts(checkpoint_format::gptq);
  o8.bits = 8;
  EXPECT_FALSE(lowbit::io::export_linear(kPrefix, m.value, o8).ok());
}

// ----- bytes of tiny layers, by hand ---------------------------------------------------------------
//
// An 8 x 32 layer whose rows have amax 7.5 and integer values: the symmetric INT4 scale of GPTQ and
// compressed-tensors is 2 * 7.5 / 15 = 1 exactly, so the signed value q is the weight itself
// (-7.5 rounds to even, -8) and the stored code is q + 8. Row o: w[0] = -7.5, w[j] = ((j + o) % 15) - 7.

std::vector<float> symmetric_tiny() {
  std::vector<float> w(8 * 32);
  for (std::size_t o = 0; o < 8; ++o) {
    w[o * 32] = -7.5f;
    for (std::size_t j = 1; j < 32; ++j) w[o * 32 + j] = static_cast<float>(static_cast<int>((j + o) % 15) - 7);
  }
  return w;
}

TEST(CheckpointBytes, GptqTinyLayerByHand) {
  checkpoint_options o = opts(checkpoint_format::gptq);
  o.group_size = 32;
  const auto t = quantize(symmetric_tiny(), 8, 32, o);
  // qweight [4, 8]: word (r, o) holds in-channels 8r..8r+7 of output o, the first in the low nibble.
  // o = 0, r = 0: codes 0 (from -7.5), then ((j % 15) - 7) + 8 = j + 1 for j = 1..7 -> 2..8.
  EXPECT_EQ(word(*find(t, "qweight"), 0), 0x87654320u);
  // o = 1: codes 0, then j + 2 -> 3..9.
  EXPECT_EQ(word(*find(t, "qweight"), 1), 0x98765430u);
  // r = 1, o = 0: j = 8..14 -> j + 1 = 9..15, j = 15 -> (15 % 15) - 7 + 8 = 1.
  EXPECT_EQ(word(*find(t, "qweight"), 8), 0x1FEDCBA9u);
  // qzeros [1, 1]: the symmetric zero 8, stored as 8 - 1 = 7 (v1) in each of 8 nibbles.
  EXPECT_EQ(word(*find(t, "qzeros"), 0), 0x77777777u);
  // scales [1, 8]: 1.0 in fp16.
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(half(*find(t, "scales"), i), 0x3C00u);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(word(*find(t, "g_idx"), i), 0u);

  o.gptq_version = lowbit::gptq_format::v2;  // the zero itself
  EXPECT_EQ(word(*find(quantize(symmetric_tiny(), 8, 32, o), "qzeros"), 0), 0x88888888u);
}

TEST(CheckpointBytes, CompressedPackQuantizedTinyLayerByHand) {
  checkpoint_options o = opts(checkpoint_format::compressed_int4);
  o.group_size = 32;
  const auto t = quantize(symmetric_tiny(), 8, 32, o);
  // weight_packed [8, 4]: row o, word w holds in-channels 8w..8w+7 (q + 8, low nibble first).
  EXPECT_EQ(word(*find(t, "weight_packed"), 0), 0x87654320u);      // row 0, word 0
  EXPECT_EQ(word(*find(t, "weight_packed"), 1), 0x1FEDCBA9u);      // row 0, word 1
  EXPECT_EQ(word(*find(t, "weight_packed"), 4), 0x98765430u);      // row 1, word 0
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(half(*find(t, "weight_scale"), i), 0x3F80u);  // bf16 1.0
  EXPECT_EQ(find(t, "weight_zero_point"), nullptr);

  // Asymmetric: row o is ((i + o) % 16) - 3, min -3, max 12: s = 15 / 15 = 1, zero 3, code
  // (i + o) % 16. The zero-points pack along out: word (0, 0) holds the 8 rows' zeros.
  std::vector<float> w(8 * 32);
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t i = 0; i < 32; ++i) w[r * 32 + i] = static_cast<float>(static_cast<int>((i + r) % 16) - 3);
  o.symmetric = false;
  const auto a = quantize(w, 8, 32, o);
  EXPECT_EQ(word(*find(a, "weight_packed"), 0), 0x76543210u);
  EXPECT_EQ(word(*find(a, "weight_packed"), 4 * 3), 0xA9876543u);  // row 3, word 0
  EXPECT_EQ(word(*find(a, "weight_zero_point"), 0), 0x33333333u);
}

TEST(CheckpointBytes, AwqTinyLayerByHand) {
  // Row o is ((i + o) % 16) - 3: AWQ's true min/max -3 .. 12 gives s = 1, zero 3, code (i + o) % 16.
  std::vector<float> w(8 * 32);
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t i = 0; i < 32; ++i) w[r * 32 + i] = static_cast<float>(static_cast<int>((i + r) % 16) - 3);
  checkpoint_options o = opts(checkpoint_format::awq);
  o.symmetric = false;
  o.group_size = 32;
  const auto t = quantize(w, 8, 32, o);
  // qweight [32, 1]: word i holds in-channel i of outputs 0..7, nibble s = output {0,2,4,6,1,3,5,7}[s].
  // In-channel 0: output c has code c -> nibbles 0,2,4,6,1,3,5,7.
  EXPECT_EQ(word(*find(t, "qweight"), 0), 0x75316420u);
  // In-channel 1: code c + 1.
  EXPECT_EQ(word(*find(t, "qweight"), 1), 0x86427531u);
  EXPECT_EQ(word(*find(t, "qzeros"), 0), 0x33333333u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(half(*find(t, "scales"), i), 0x3C00u);
}

TEST(CheckpointBytes, Fp8TinyLayerByHand) {
  // Per tensor: amax 448 -> s = 1; E4M3 448 = 0x7E, 1 = 0x38, -2 = 0xC0, 0.5 = 0x30.
  const std::vector<float> w = {448.0f, 1.0f, -2.0f, 0.5f, 0.0f, -448.0f, 2.0f, 1.0f};
  auto t = quantize(w, 2, 4, opts(checkpoint_format::fp8_per_tensor));
  const std::vector<unsigned char> q = {0x7E, 0x38, 0xC0, 0x30, 0x00, 0xFE, 0x40, 0x38};
  EXPECT_EQ(find(t, "weight")->bytes, q);
  EXPECT_EQ(f32(*find(t, "weight_scale"), 0), 1.0f);
  // Per channel: row 1 scaled by 1/2 has amax 224 -> s = 0.5, and 224 / 0.5 = 448 -> 0x7E.
  const std::vector<float> v = {448.0f, 1.0f, -2.0f, 0.5f, 0.0f, -224.0f, 1.0f, 0.5f};
  t = quantize(v, 2, 4, opts(checkpoint_format::fp8_per_channel));
  const std::vector<unsigned char> qc = {0x7E, 0x38, 0xC0, 0x30, 0x00, 0xFE, 0x40, 0x38};
  EXPECT_EQ(find(t, "weight")->bytes, qc);
  EXPECT_EQ(f32(*find(t, "weight_scale"), 0), 1.0f);
  EXPECT_EQ(f32(*find(t, "weight_scale"), 1), 0.5f);
}

// The 16 E2M1 values in code order (0x0..0x7 positive, 0x8..0xF negative; -0 replaced by 0).
const float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

TEST(CheckpointBytes, Nvfp4TinyLayerByHand) {
  // amax 2688 = 6 * 448: global scale g = 2688 / 2688 = 1; the block scale (2688 / 6) * 1 = 448
  // is E4M3 0x7E; element x / 448 is the E2M1 value itself.
  std::vector<float> w(16);
  for (std::size_t i = 0; i < 16; ++i) w[i] = kE2M1[i] * 448.0f;
  w[8] = 0.0f;  // code 0 (a +0)
  const auto t = quantize(w, 1, 16, opts(checkpoint_format::nvfp4));
  const std::vector<unsigned char> packed = {0x10, 0x32, 0x54, 0x76, 0x90, 0xBA, 0xDC, 0xFE};
  EXPECT_EQ(find(t, "weight_packed")->bytes, packed);
  EXPECT_EQ(find(t, "weight_scale")->bytes, std::vector<unsigned char>{0x7E});
  EXPECT_EQ(f32(*find(t, "weight_global_scale"), 0), 1.0f);

  // The multiplier convention: amax 1344 gives g = 2 (not the divisor 0.5), the same block scale
  // 448, and the engine computes x = q * 448 / 2.
  for (float& x : w) x *= 0.5f;
  const auto h = quantize(w, 1, 16, opts(checkpoint_format::nvfp4));
  EXPECT_EQ(f32(*find(h, "weight_global_scale"), 0), 2.0f);
  EXPECT_EQ(find(h, "weight_packed")->bytes, packed);
  EXPECT_EQ(find(h, "weight_scale")->bytes, std::vector<unsigned char>{0x7E});
}

TEST(CheckpointBytes, Mxfp4TinyLayerByHand) {
  // amax 6: E8M0 exponent floor(log2 6) - 2 = 0 -> biased 127 = 0x7F; elements are the values.
  std::vector<float> w(32);
  for (std::size_t i = 0; i < 32; ++i) w[i] = kE2M1[i % 16];
  w[8] = w[24] = 0.0f;
  const auto t = quantize(w, 1, 32, opts(checkpoint_format::mxfp4));
  const std::vector<unsigned char> half_row = {0x10, 0x32, 0x54, 0x76, 0x90, 0xBA, 0xDC, 0xFE};
  std::vector<unsigned char> packed = half_row;
  packed.insert(packed.end(), half_row.begin(), half_row.end());
  EXPECT_EQ(find(t, "weight_packed")->bytes, packed);
  EXPECT_EQ(find(t, "weight_scale")->bytes, std::vector<unsigned char>{0x7F});
  // amax 12: exponent 1 -> 0x80, same elements.
  for (float& x : w) x *= 2.0f;
  EXPECT_EQ(find(quantize(w, 1, 32, opts(checkpoint_format::mxfp4)), "weight_scale")->bytes,
            std::vector<unsigned char>{0x80});
}

// ----- quantize_linear -> dequantize_linear == lowbit's own dequantization -------------------------

TEST(CheckpointRoundTrip, GptqMatchesQuantizeDequantizeInt) {
  const auto w = weights(kOut * kIn, 7);
  for (int bits : {2, 4, 8})
    for (bool sym : {true, false})
      for (std::size_t g : {std::size_t{0}, std::size_t{64}, std::size_t{128}}) {
        SCOPED_TRACE("bits " + std::to_string(bits) + (sym ? " sym" : " asym") + " group " + std::to_string(g));
        checkpoint_options o = opts(checkpoint_format::gptq);
        o.bits = bits;
        o.symmetric = sym;
        o.group_size = g;
        o.gptq_version = lowbit::gptq_format::v2;  // asymmetric groups may have a zero-point of 0
        lowbit::int_params p = lowbit::int_presets::gptq(bits, g);
        if (!sym) p.scheme = lowbit::int_scheme::affine;  // GPTQ asym: range contains 0
        if (g == 0) {
          p.granularity = lowbit::granularity::per_channel;
          p.group_size = 0;
        }
        expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn), int_reference(w, kOut, kIn, p));
      }
}

TEST(CheckpointRoundTrip, GptqV1Symmetric) {
  const auto w = weights(kOut * kIn, 8);
  const checkpoint_options o = opts(checkpoint_format::gptq);
  expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn),
                 int_reference(w, kOut, kIn, lowbit::int_presets::gptq(4, 128)));
}

TEST(CheckpointRoundTrip, AwqMatchesQuantizeDequantizeInt) {
  const auto w = weights(kOut * kIn, 9);
  checkpoint_options o = opts(checkpoint_format::awq);
  o.symmetric = false;
  expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn),
                 int_reference(w, kOut, kIn, lowbit::int_presets::awq(4, 128)));
  o.symmetric = true;  // AWQ without zero-point: amax / 7, stored with zero 8
  lowbit::int_params p = lowbit::int_presets::awq(4, 128);
  p.scheme = lowbit::int_scheme::symmetric;
  p.range = lowbit::int_range::restricted;
  expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn), int_reference(w, kOut, kIn, p));
}

TEST(CheckpointRoundTrip, CompressedPackQuantizedMatchesQuantizeDequantizeInt) {
  const auto w = weights(kOut * kIn, 10);
  for (int bits : {4, 8})
    for (bool sym : {true, false})
      for (dtype sd : {dtype::bf16, dtype::f16, dtype::f32}) {
        SCOPED_TRACE("bits " + std::to_string(bits) + (sym ? " sym " : " asym ") + lowbit::io::dtype_name(sd));
        checkpoint_options o = opts(checkpoint_format::compressed_int4);
        o.bits = bits;
        o.symmetric = sym;
        o.scale_dtype = sd;
        lowbit::int_params p = lowbit::int_presets::gptq(bits, 128);  // amax / 7.5, or [min, max] with 0
        if (!sym) p.scheme = lowbit::int_scheme::affine;
        p.scale_format = sd == dtype::bf16  ? lowbit::scale_storage::bf16
                         : sd == dtype::f16 ? lowbit::scale_storage::fp16
                                            : lowbit::scale_storage::fp32;
        expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn), int_reference(w, kOut, kIn, p));
      }
}

TEST(CheckpointRoundTrip, CompressedZeroPointsPadOutToWholeWords) {
  // out = 12 is not a multiple of 8: weight_zero_point is [2, groups], the last word half empty.
  const auto w = weights(12 * 64, 11);
  checkpoint_options o = opts(checkpoint_format::compressed_int4);
  o.symmetric = false;
  o.group_size = 32;
  const auto t = quantize(w, 12, 64, o);
  EXPECT_EQ(find(t, "weight_zero_point")->shape, (shape_t{2, 2}));
  EXPECT_EQ(word(*find(t, "weight_zero_point"), 2) >> 16, 0u);  // rows 12..15 do not exist
  lowbit::int_params p = lowbit::int_presets::gptq(4, 32);
  p.scheme = lowbit::int_scheme::affine;
  p.scale_format = lowbit::scale_storage::bf16;
  expect_bitwise(dequantize(t, o, 12, 64), int_reference(w, 12, 64, p));
}

TEST(CheckpointRoundTrip, Fp8MatchesFp8Dequantize) {
  const auto w = weights(kOut * kIn, 12);
  for (bool channel : {false, true}) {
    const lowbit::fp8_options fo = channel ? lowbit::fp8_presets::per_channel() : lowbit::fp8_presets::per_tensor();
    std::vector<lowbit::float8_e4m3fn> q(w.size());
    std::vector<float> s(channel ? kOut : 1), want(w.size());
    ASSERT_TRUE(lowbit::fp8_quantize(w.data(), kOut, kIn, fo, q.data(), s.data()).ok());
    ASSERT_TRUE(lowbit::fp8_dequantize(q.data(), s.data(), kOut, kIn, fo, want.data()).ok());
    const checkpoint_options o =
        opts(channel ? checkpoint_format::fp8_per_channel : checkpoint_format::fp8_per_tensor);
    expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn), want);
  }
}

TEST(CheckpointRoundTrip, Fp8ReadsAScalarPerTensorScale) {
  // Some writers store the per-tensor scale 0-dimensional: shape [] reads the same.
  const auto w = weights(kOut * kIn, 13);
  const checkpoint_options o = opts(checkpoint_format::fp8_per_tensor);
  auto t = quantize(w, kOut, kIn, o);
  const auto want = dequantize(t, o, kOut, kIn);
  t[1].shape.clear();
  expect_bitwise(dequantize(t, o, kOut, kIn), want);
}

TEST(CheckpointRoundTrip, Nvfp4MatchesNvfp4Dequantize) {
  const auto w = weights(kOut * kIn, 14);
  lowbit::nvfp4_options n = lowbit::nvfp4_presets::nvidia();
  n.tensor_scale_convention = lowbit::nvfp4_scale_convention::multiplier;
  const auto g = lowbit::nvfp4_compute_tensor_scale(w.data(), w.size(), n);
  ASSERT_TRUE(g.ok());
  n.tensor_scale = g.value;
  std::vector<std::uint8_t> e(w.size() / 2), s(w.size() / 16);
  std::vector<float> want(w.size());
  ASSERT_TRUE(lowbit::nvfp4_quantize_matrix(w.data(), kOut, kIn, n, e.data(), s.data()).ok());
  ASSERT_TRUE(lowbit::nvfp4_dequantize_matrix(e.data(), s.data(), kOut, kIn, n, want.data()).ok());
  const checkpoint_options o = opts(checkpoint_format::nvfp4);
  const auto t = quantize(w, kOut, kIn, o);
  EXPECT_EQ(f32(*find(t, "weight_global_scale"), 0), g.value);
  EXPECT_EQ(find(t, "weight_packed")->bytes, std::vector<unsigned char>(e.begin(), e.end()));
  EXPECT_EQ(find(t, "weight_scale")->bytes, std::vector<unsigned char>(s.begin(), s.end()));
  expect_bitwise(dequantize(t, o, kOut, kIn), want);
}

TEST(CheckpointRoundTrip, Nvfp4GlobalScaleIsAMultiplier) {
  // Dequantize by hand with compressed-tensors' reading: x = e2m1(code) * (e4m3(scale) / g).
  const auto w = weights(16 * 64, 15);
  const checkpoint_options o = opts(checkpoint_format::nvfp4);
  const auto t = quantize(w, 16, 64, o);
  const float g = f32(*find(t, "weight_global_scale"), 0);
  const auto got = dequantize(t, o, 16, 64);
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t i = 0; i < 64; ++i) {
      const std::uint8_t byte = find(t, "weight_packed")->bytes[(r * 64 + i) / 2];
      const std::uint8_t code = static_cast<std::uint8_t>(i % 2 == 0 ? byte & 0xF : byte >> 4);
      const float d = static_cast<float>(
          lowbit::float8_e4m3fn::from_bits(find(t, "weight_scale")->bytes[r * 4 + i / 16]));
      EXPECT_EQ(got[r * 64 + i], kE2M1[code] * (d / g)) << r << ", " << i;
    }
}

TEST(CheckpointRoundTrip, Mxfp4MatchesMxDequantize) {
  const auto w = weights(kOut * kIn, 16);
  for (const lowbit::mx_options& mo : {lowbit::mx_presets::ocp(), lowbit::mx_presets::rceil()}) {
    std::vector<std::uint8_t> e(w.size() / 2), s(w.size() / 32);
    std::vector<float> want(w.size());
    ASSERT_TRUE(lowbit::mx_quantize_matrix<lowbit::mxfp4_e2m1>(w.data(), kOut, kIn, mo, e.data(), s.data()).ok());
    ASSERT_TRUE(lowbit::mx_dequantize_matrix<lowbit::mxfp4_e2m1>(e.data(), s.data(), kOut, kIn, mo, want.data()).ok());
    checkpoint_options o = opts(checkpoint_format::mxfp4);
    o.mx = mo;
    const auto t = quantize(w, kOut, kIn, o);
    EXPECT_EQ(find(t, "weight_scale")->bytes, std::vector<unsigned char>(s.begin(), s.end()));
    expect_bitwise(dequantize(t, o, kOut, kIn), want);
  }
}

// int-quantized: the I8 byte is q (two's complement), the scale amax / 127 in F32; by hand on a
// row whose amax is 127 (scale 1), then against lowbit's int8 per-channel round trip.
TEST(CheckpointRoundTrip, Int8PerChannelMatchesQuantizeDequantizeInt) {
  std::vector<float> tiny(2 * 4);
  const float row0[4] = {127.0f, -3.0f, 0.0f, -127.0f};
  for (std::size_t i = 0; i < 4; ++i) {
    tiny[i] = row0[i];
    tiny[4 + i] = row0[i] * 0.5f;
  }
  const auto t = quantize(tiny, 2, 4, opts(checkpoint_format::int8_per_channel));
  const tensor_data& q = *find(t, "weight");
  EXPECT_EQ(q.bytes[0], 127u);
  EXPECT_EQ(q.bytes[1], 0xFDu);  // -3
  EXPECT_EQ(q.bytes[2], 0u);
  EXPECT_EQ(q.bytes[3], 0x81u);  // -127
  EXPECT_EQ(f32(*find(t, "weight_scale"), 0), 1.0f);
  EXPECT_EQ(f32(*find(t, "weight_scale"), 1), 0.5f);

  const auto w = weights(kOut * kIn, 3);
  const checkpoint_options o = opts(checkpoint_format::int8_per_channel);
  expect_bitwise(dequantize(quantize(w, kOut, kIn, o), o, kOut, kIn),
                 int_reference(w, kOut, kIn, lowbit::int_presets::int8_per_channel()));
}

TEST(CheckpointRoundTrip, GptqActOrderGidx) {
  // A non-trivial g_idx (act-order): input channel i belongs to group g_idx[i].
  const auto w = weights(32 * 64, 17);
  checkpoint_options o = opts(checkpoint_format::gptq);
  o.group_size = 32;
  auto t = quantize(w, 32, 64, o);
  tensor_data& gi = t[3];
  for (std::size_t i = 0; i < 64; ++i) gi.bytes[4 * i] = static_cast<unsigned char>(i % 2);
  const auto got = dequantize(t, o, 32, 64);
  const tensor_data& qw = *find(t, "qweight");
  const tensor_data& sc = *find(t, "scales");
  for (std::size_t r = 0; r < 32; ++r)
    for (std::size_t i = 0; i < 64; ++i) {
      const std::uint32_t code = (word(qw, (i / 8) * 32 + r) >> (4 * (i % 8))) & 0xF;
      const float s = lowbit::decode(lowbit::float16::from_bits(half(sc, (i % 2) * 32 + r)));
      EXPECT_EQ(got[r * 64 + i], (static_cast<float>(code) - 8.0f) * s);
    }
}

// ----- the config block ---------------------------------------------------------------------------

nlohmann::json parse(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

TEST(CheckpointConfig, Gptq) {
  checkpoint_options o = opts(checkpoint_format::gptq);
  auto j = parse(lowbit::io::quantization_config_json(o));
  EXPECT_EQ(j["quant_method"], "gptq");
  EXPECT_EQ(j["bits"], 4);
  EXPECT_EQ(j["group_size"], 128);
  EXPECT_EQ(j["sym"], true);
  EXPECT_EQ(j["desc_act"], false);
  EXPECT_EQ(j["checkpoint_format"], "gptq");
  o.group_size = 0;
  o.symmetric = false;
  o.gptq_version = lowbit::gptq_format::v2;
  o.bits = 8;
  j = parse(lowbit::io::quantization_config_json(o));
  EXPECT_EQ(j["group_size"], -1);
  EXPECT_EQ(j["sym"], false);
  EXPECT_EQ(j["bits"], 8);
  EXPECT_EQ(j["checkpoint_format"], "gptq_v2");
}

TEST(CheckpointConfig, Awq) {
  auto j = parse(lowbit::io::quantization_config_json(opts(checkpoint_format::awq)));
  EXPECT_EQ(j["quant_method"], "awq");
  EXPECT_EQ(j["bits"], 4);
  EXPECT_EQ(j["group_size"], 128);
  EXPECT_EQ(j["zero_point"], true);
  EXPECT_EQ(j["version"], "gemm");
}

const nlohmann::json& weights_of(const nlohmann::json& j) { return j["config_groups"]["group_0"]["weights"]; }

TEST(CheckpointConfig, CompressedTensors) {
  checkpoint_options o = opts(checkpoint_format::compressed_int4);
  auto j = parse(lowbit::io::quantization_config_json(o));
  EXPECT_EQ(j["quant_method"], "compressed-tensors");
  EXPECT_EQ(j["format"], "pack-quantized");
  EXPECT_EQ(j["quantization_status"], "compressed");
  EXPECT_EQ(j["config_groups"]["group_0"]["targets"], nlohmann::json::array({"Linear"}));
  EXPECT_EQ(j["config_groups"]["group_0"]["format"], "pack-quantized");
  EXPECT_TRUE(j["config_groups"]["group_0"]["input_activations"].is_null());
  EXPECT_EQ(j["ignore"], nlohmann::json::array({"lm_head"}));
  auto w = weights_of(j);
  EXPECT_EQ(w["num_bits"], 4);
  EXPECT_EQ(w["type"], "int");
  EXPECT_EQ(w["symmetric"], true);
  EXPECT_EQ(w["strategy"], "group");
  EXPECT_EQ(w["group_size"], 128);
  o.group_size = 0;
  o.symmetric = false;
  w = weights_of(parse(lowbit::io::quantization_config_json(o)));
  EXPECT_EQ(w["strategy"], "channel");
  EXPECT_TRUE(w["group_size"].is_null());
  EXPECT_EQ(w["symmetric"], false);

  for (bool channel : {false, true}) {
    o = opts(channel ? checkpoint_format::fp8_per_channel : checkpoint_format::fp8_per_tensor);
    j = parse(lowbit::io::quantization_config_json(o));
    EXPECT_EQ(j["format"], "float-quantized");
    w = weights_of(j);
    EXPECT_EQ(w["num_bits"], 8);
    EXPECT_EQ(w["type"], "float");
    EXPECT_EQ(w["strategy"], channel ? "channel" : "tensor");
    const auto& in = j["config_groups"]["group_0"]["input_activations"];
    EXPECT_EQ(in["strategy"], "token");
    EXPECT_EQ(in["dynamic"], true);
    o.fp8_dynamic_activations = false;
    EXPECT_TRUE(
        parse(lowbit::io::quantization_config_json(o))["config_groups"]["group_0"]["input_activations"].is_null());
  }

  o = opts(checkpoint_format::int8_per_channel);
  j = parse(lowbit::io::quantization_config_json(o));
  EXPECT_EQ(j["format"], "int-quantized");
  EXPECT_EQ(j["config_groups"]["group_0"]["format"], "int-quantized");
  w = weights_of(j);
  EXPECT_EQ(w["num_bits"], 8);
  EXPECT_EQ(w["type"], "int");
  EXPECT_EQ(w["symmetric"], true);
  EXPECT_EQ(w["strategy"], "channel");
  EXPECT_EQ(j["config_groups"]["group_0"]["input_activations"]["type"], "int");
  EXPECT_EQ(j["config_groups"]["group_0"]["input_activations"]["strategy"], "token");
  o.fp8_dynamic_activations = false;
  EXPECT_TRUE(parse(lowbit::io::quantization_config_json(o))["config_groups"]["group_0"]["input_activations"].is_null());

  j = parse(lowbit::io::quantization_config_json(opts(checkpoint_format::nvfp4)));
  EXPECT_EQ(j["format"], "nvfp4-pack-quantized");
  w = weights_of(j);
  EXPECT_EQ(w["num_bits"], 4);
  EXPECT_EQ(w["type"], "float");
  EXPECT_EQ(w["strategy"], "tensor_group");
  EXPECT_EQ(w["group_size"], 16);

  j = parse(lowbit::io::quantization_config_json(opts(checkpoint_format::mxfp4)));
  EXPECT_EQ(j["format"], "mxfp4-pack-quantized");
  w = weights_of(j);
  EXPECT_EQ(w["strategy"], "group");
  EXPECT_EQ(w["group_size"], 32);
  EXPECT_EQ(w["scale_dtype"], "torch.uint8");
}

TEST(CheckpointConfig, BadOptionsGiveNoConfig) {
  checkpoint_options o = opts(checkpoint_format::awq);
  o.bits = 8;
  EXPECT_EQ(lowbit::io::quantization_config_json(o), "");
  o.format = static_cast<checkpoint_format>(42);
  EXPECT_EQ(lowbit::io::quantization_config_json(o), "");
}

// ----- errors --------------------------------------------------------------------------------------

void expect_error(const std::vector<float>& w, std::size_t out, std::size_t in, const checkpoint_options& o,
                  const std::string& words) {
  auto r = lowbit::io::quantize_linear(kPrefix, w.data(), out, in, o);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.value.empty());
  EXPECT_EQ(r.error.rfind(kPrefix + ": ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find(words), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
}

TEST(CheckpointErrors, BadShapesNameThePrefix) {
  const auto w = weights(64 * 200);
  checkpoint_options o = opts(checkpoint_format::gptq);
  expect_error(w, 64, 200, o, "group size 128");  // in not a multiple of the group
  o.group_size = 0;
  expect_error(w, 64, 196, o, "pack factor");  // 196 not a multiple of 8
  expect_error(w, 60, 200, o, "out_features 60");
  o = opts(checkpoint_format::awq);
  o.group_size = 40;
  expect_error(w, 60, 200, o, "out_features 60");
  expect_error(w, 64, 100, opts(checkpoint_format::awq), "group size 128");
  o = opts(checkpoint_format::compressed_int4);
  o.group_size = 0;
  expect_error(w, 64, 196, o, "pack factor");
  expect_error(w, 64, 200, opts(checkpoint_format::compressed_int4), "group size 128");
  expect_error(w, 64, 200, opts(checkpoint_format::nvfp4), "block size 16");
  expect_error(w, 64, 200, opts(checkpoint_format::mxfp4), "block size 32");
  expect_error(w, 0, 200, opts(checkpoint_format::fp8_per_tensor), "empty layer");
}

TEST(CheckpointErrors, BadOptionsAndData) {
  const auto w = weights(64 * 256);
  checkpoint_options o = opts(checkpoint_format::gptq);
  o.bits = 3;
  expect_error(w, 64, 256, o, "2, 4 or 8 bits");
  o = opts(checkpoint_format::awq);
  o.bits = 8;
  expect_error(w, 64, 256, o, "4 bits");
  o = opts(checkpoint_format::compressed_int4);
  o.scale_dtype = dtype::i8;
  expect_error(w, 64, 256, o, "scale_dtype");
  o = opts(checkpoint_format::mxfp4);
  o.mx.block_size = 16;
  expect_error(w, 64, 256, o, "32 elements");
  auto bad = w;
  bad[77] = std::nanf("");
  for (checkpoint_format f : {checkpoint_format::gptq, checkpoint_format::fp8_per_tensor, checkpoint_format::nvfp4,
                              checkpoint_format::mxfp4})
    expect_error(bad, 64, 256, opts(f), "NaN");
  auto empty = lowbit::io::quantize_linear("", w.data(), 64, 256, opts(checkpoint_format::gptq));
  EXPECT_FALSE(empty.ok());
}

TEST(CheckpointErrors, GptqV1CannotStoreAZeroOfZero) {
  // Asymmetric GPTQ widens the range to contain 0: a group of values >= 0 has zero-point 0,
  // which v1 (zero - 1) cannot store; v2 can.
  auto w = weights(32 * 128);
  for (float& x : w) x = std::fabs(x);
  checkpoint_options o = opts(checkpoint_format::gptq);
  o.symmetric = false;
  expect_error(w, 32, 128, o, "zero-point of 0");
  o.gptq_version = lowbit::gptq_format::v2;
  lowbit::int_params p = lowbit::int_presets::gptq(4, 128);
  p.scheme = lowbit::int_scheme::affine;
  expect_bitwise(dequantize(quantize(w, 32, 128, o), o, 32, 128), int_reference(w, 32, 128, p));
}

TEST(CheckpointErrors, DequantizeNamesTheProblem) {
  const auto w = weights(kOut * kIn);
  const checkpoint_options o = opts(checkpoint_format::gptq);
  auto t = quantize(w, kOut, kIn, o);
  std::size_t r = 0, c = 0;
  auto missing = t;
  missing.erase(missing.begin() + 1);  // qzeros
  auto d = lowbit::io::dequantize_linear(kPrefix, views(missing), o, r, c);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.error.find(kPrefix + ".qzeros' not found"), std::string::npos) << d.error;
  auto wrong = t;
  wrong[2].type = dtype::i16;  // scales
  d = lowbit::io::dequantize_linear(kPrefix, views(wrong), o, r, c);
  EXPECT_NE(d.error.find("is I16"), std::string::npos) << d.error;
  auto shape = t;
  shape[1].shape = {4, 16};
  shape[1].bytes.resize(4 * 16 * 4);
  d = lowbit::io::dequantize_linear(kPrefix, views(shape), o, r, c);
  EXPECT_NE(d.error.find("qzeros' has shape [4, 16]"), std::string::npos) << d.error;
  auto truncated = t;
  truncated[0].bytes.pop_back();
  d = lowbit::io::dequantize_linear(kPrefix, views(truncated), o, r, c);
  EXPECT_EQ(d.error.rfind(kPrefix + ": ", 0), 0u) << d.error;
  EXPECT_NE(d.error.find("bytes for shape"), std::string::npos) << d.error;
  // a v1 all-ones qzeros field (a zero of 0 written by AutoGPTQ) is refused, not read as 16
  auto ones = t;
  ones[1].bytes[0] = 0x0F;
  d = lowbit::io::dequantize_linear(kPrefix, views(ones), o, r, c);
  EXPECT_NE(d.error.find("all ones"), std::string::npos) << d.error;
  EXPECT_EQ(r, 0u);
  EXPECT_EQ(c, 0u);
}

// ----- through a real safetensors file -------------------------------------------------------------

TEST(CheckpointFile, EveryFormatRoundTripsThroughSafetensors) {
  const auto w = weights(kOut * kIn, 21);
  for (checkpoint_format f :
       {checkpoint_format::gptq, checkpoint_format::awq, checkpoint_format::fp8_per_tensor,
        checkpoint_format::fp8_per_channel, checkpoint_format::compressed_int4, checkpoint_format::nvfp4,
        checkpoint_format::mxfp4, checkpoint_format::int8_per_channel}) {
    SCOPED_TRACE(lowbit::io::checkpoint_detail::format_name(f));
    checkpoint_options o = opts(f);
    o.symmetric = f != checkpoint_format::awq && f != checkpoint_format::compressed_int4;
    const auto t = quantize(w, kOut, kIn, o);
    const auto want = dequantize(t, o, kOut, kIn);
    const std::string path = ::testing::TempDir() + "lowbit_ckpt_" +
                             lowbit::io::checkpoint_detail::format_name(f) + ".safetensors";
    const std::map<std::string, std::string> meta = {{"format", "pt"}};
    const auto st = lowbit::io::write_safetensors(path, views(t), meta);
    ASSERT_TRUE(st.ok()) << st.error;
    {
      auto file = lowbit::io::safetensors_file::open(path);
      ASSERT_TRUE(file.ok()) << file.error;
      for (const tensor_data& d : t) {
        const tensor_view* v = file.value.find(d.name);
        ASSERT_NE(v, nullptr) << d.name;
        EXPECT_EQ(v->type, d.type);
        EXPECT_EQ(v->shape, d.shape);
      }
      std::size_t r = 0, c = 0;
      auto got = lowbit::io::dequantize_linear(kPrefix, file.value.tensors(), o, r, c);
      ASSERT_TRUE(got.ok()) << got.error;
      EXPECT_EQ(r, kOut);
      EXPECT_EQ(c, kIn);
      expect_bitwise(got.value, want);
    }
    std::remove(path.c_str());
  }
}

}  // namespace
