// OCP MX block formats (include/lowbit/schemes/mx.hpp): the lesson's worked block, hand-written
// scale and element codes for every rule and edge the spec names, the storage layout, errors,
// and properties on random blocks. Every expected value below is worked out by hand (comments
// show the arithmetic) or computed by test-local code that does not call the code under test.
#include <lowbit/schemes/mx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace lb = lowbit;
using lb::e8m0_rule;
using lb::errc;
using lb::rounding;

const float nan_f = std::numeric_limits<float>::quiet_NaN();
const float inf_f = std::numeric_limits<float>::infinity();

// A block of n values: `head` followed by zeros.
std::vector<float> block(std::initializer_list<float> head, std::size_t n = 32) {
  std::vector<float> v(head);
  v.resize(n, 0.0f);
  return v;
}

lb::mx_options with_rule(e8m0_rule r, std::size_t block_size = 32) {
  lb::mx_options o;
  o.scale_rule = r;
  o.block_size = block_size;
  return o;
}
lb::mx_options with_rounding(rounding rm, std::size_t block_size = 32) {
  lb::mx_options o;
  o.element_rounding = rm;
  o.block_size = block_size;
  return o;
}

struct quantized {
  std::vector<std::uint8_t> elements;
  std::vector<std::uint8_t> scales;
  std::vector<float> decoded;
};

template <class Fmt>
quantized run(const std::vector<float>& x, const lb::mx_options& o = {}) {
  quantized q;
  q.elements.assign(lb::packed_bytes(x.size(), Fmt::element_bits), 0xEE);
  q.scales.assign(x.size() / o.block_size, 0xEE);
  q.decoded.assign(x.size(), -12345.0f);
  EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), x.size(), o, q.elements.data(), q.scales.data()).code(), errc::ok);
  EXPECT_EQ(lb::mx_dequantize<Fmt>(q.elements.data(), q.scales.data(), x.size(), o, q.decoded.data()).code(),
            errc::ok);
  return q;
}

// Element code i, read back from the packed bytes without core/packing: FP4 low nibble first,
// FP6 as a little-endian bit stream, FP8/INT8 one byte each.
template <class Fmt>
unsigned code_at(const std::vector<std::uint8_t>& e, std::size_t i) {
  switch (Fmt::element_bits) {
    case 4: return (e[i / 2] >> (4 * (i % 2))) & 0xFu;
    case 6: {
      const std::size_t bit = 6 * i;
      unsigned w = e[bit / 8];
      if (bit / 8 + 1 < e.size()) w |= static_cast<unsigned>(e[bit / 8 + 1]) << 8;
      return (w >> (bit % 8)) & 0x3Fu;
    }
    default: return e[i];
  }
}

// ---------------------------------------------------------------------------------------------
// The lesson's worked block (lesson 003, FP4 paragraph).

TEST(MxWorkedBlock, Mxfp4ScaleOneAndFiveReadsBackAsFour) {
  // [0.3, -1.2, 2.4, 5.0]: amax 5, floor(log2 5) = 2, emax(E2M1) = 2, so X = 2^0 = 1: code 0x7F.
  // E2M1 grid 0, 0.5, 1, 1.5, 2, 3, 4, 6:
  //   0.3  -> 0.5  (0.2 away vs 0.3 from 0)   code 0x1
  //  -1.2  -> -1   (0.2 vs 0.3 from -1.5)     code 0x8 | 0x2 = 0xA
  //   2.4  -> 2    (0.4 vs 0.6 from 3)        code 0x4
  //   5.0  -> 4    (tie 4/6, even mantissa)   code 0x6
  // MSE = (0.2^2 + 0.2^2 + 0.4^2 + 1^2) / 4 = (0.04 + 0.04 + 0.16 + 1.0) / 4 = 0.31.
  for (std::size_t bs : {std::size_t{4}, std::size_t{32}}) {
    const std::vector<float> x = block({0.3f, -1.2f, 2.4f, 5.0f}, bs);
    const quantized q = run<lb::mxfp4>(x, lb::mx_presets::ocp(bs));
    ASSERT_EQ(q.scales.size(), 1u);
    EXPECT_EQ(q.scales[0], 0x7F);
    EXPECT_EQ(q.elements[0], 0xA1);  // element 0 low nibble, element 1 high nibble
    EXPECT_EQ(q.elements[1], 0x64);
    EXPECT_EQ(q.decoded[0], 0.5f);
    EXPECT_EQ(q.decoded[1], -1.0f);
    EXPECT_EQ(q.decoded[2], 2.0f);
    EXPECT_EQ(q.decoded[3], 4.0f);
    double se = 0.0;
    for (int i = 0; i < 4; ++i) se += (static_cast<double>(q.decoded[i]) - x[i]) * (static_cast<double>(q.decoded[i]) - x[i]);
    EXPECT_NEAR(se / 4.0, 0.31, 1e-6);
  }
}

TEST(MxWorkedBlock, ProducersTieRulesOnTheFive) {
  // 5.0 is the 4/6 tie: ties-to-even and ggml's smaller magnitude give 4 (0x6), microxcaling's
  // ties-away gives 6 (0x7). MSE with 6 is also (0.04 + 0.04 + 0.16 + 1) / 4 = 0.31.
  const std::vector<float> x = block({0.3f, -1.2f, 2.4f, 5.0f}, 4);
  EXPECT_EQ(code_at<lb::mxfp4>(run<lb::mxfp4>(x, lb::mx_presets::microxcaling(4)).elements, 3), 0x7u);
  lb::mx_options g = lb::mx_presets::ggml();
  g.block_size = 4;
  EXPECT_EQ(code_at<lb::mxfp4>(run<lb::mxfp4>(x, g).elements, 3), 0x6u);
}

// ---------------------------------------------------------------------------------------------
// The per-block reference (mx_block_scale, mx_quantize_block, mx_dequantize_block), called
// directly on blocks whose results follow from OCP MX v1.0 by hand, and compared with the bulk
// calls, which must write the same bytes.

template <class Fmt>
void expect_block_reference(const std::vector<float>& x, unsigned scale, std::initializer_list<unsigned> codes,
                            const lb::mx_options& o = {}) {
  SCOPED_TRACE(Fmt::name);
  ASSERT_EQ(x.size(), o.block_size);
  const std::size_t bytes = lb::packed_bytes(o.block_size, Fmt::element_bits);
  std::vector<std::uint8_t> e(bytes, 0xEE);
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  EXPECT_EQ(lb::mx_block_scale<Fmt>(amax, o.scale_rule), scale);
  const std::uint8_t sc = lb::mx_quantize_block<Fmt>(x.data(), o, e.data());
  EXPECT_EQ(sc, scale);
  std::size_t i = 0;
  for (unsigned c : codes) EXPECT_EQ(code_at<Fmt>(e, i++), c) << "element " << i - 1;
  std::vector<float> y(o.block_size, -12345.0f);
  lb::mx_dequantize_block<Fmt>(e.data(), sc, o, y.data());
  // Every value of these blocks is representable: the block reads back exactly.
  for (std::size_t j = 0; j < x.size(); ++j) EXPECT_EQ(y[j], x[j]) << "element " << j;
  // The bulk calls agree byte for byte with the per-block functions.
  const quantized q = run<Fmt>(x, o);
  EXPECT_EQ(q.elements, e);
  EXPECT_EQ(q.scales[0], sc);
  for (std::size_t j = 0; j < x.size(); ++j)
    EXPECT_EQ(lowbit_test::float_bits(q.decoded[j]), lowbit_test::float_bits(y[j])) << "element " << j;
}

TEST(MxBlockReference, LessonBlockThroughThePerBlockFunctions) {
  // The lesson's block (see MxWorkedBlock above), one block of 4.
  const std::vector<float> x = {0.3f, -1.2f, 2.4f, 5.0f};
  const lb::mx_options o = lb::mx_presets::ocp(4);
  std::uint8_t e[2] = {0xEE, 0xEE};
  const std::uint8_t sc = lb::mx_quantize_block<lb::mxfp4>(x.data(), o, e);
  EXPECT_EQ(sc, 0x7F);
  EXPECT_EQ(e[0], 0xA1);
  EXPECT_EQ(e[1], 0x64);
  float y[4];
  lb::mx_dequantize_block<lb::mxfp4>(e, sc, lb::mx_presets::ocp(4), y);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(y[3], 4.0f);
  const quantized q = run<lb::mxfp4>(x, o);
  EXPECT_EQ(q.scales[0], sc);
  EXPECT_EQ(q.elements, (std::vector<std::uint8_t>{e[0], e[1]}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.decoded[i], y[i]);
}

TEST(MxBlockReference, SpecBlocksOfEveryFormat) {
  // Blocks of 32 holding each format's largest normal (so X = 2^0 under the floor rule: code
  // 0x7F), a negative normal and the smallest subnormal, then zeros. Element codes from the
  // formats' definitions (OCP MX v1.0 section 5.3): sign | exponent field | mantissa.
  //  E4M3 (bias 7):  448 = 1.75 * 2^8 -> 0 1111 110 = 0x7E; -1 = 0 0111 000 | 0x80 = 0xB8;
  //                  2^-9 = 0.001 * 2^-6 -> 0x01
  //  E5M2 (bias 15): 57344 = 1.75 * 2^15 -> 0 11110 11 = 0x7B; -1 -> 0x3C | 0x80 = 0xBC;
  //                  2^-16 -> 0x01
  //  E2M3 (bias 1):  7.5 = 1.875 * 2^2 -> 0 11 111 = 0x1F; -1.125 = 1.001b -> 01 001 | 0x20 = 0x29;
  //                  0.125 = 0.001b * 2^0 -> 0x01
  //  E3M2 (bias 3):  28 = 1.75 * 2^4 -> 0 111 11 = 0x1F; -1 -> 011 00 | 0x20 = 0x2C;
  //                  0.0625 = 0.01b * 2^-2 -> 0x01
  //  E2M1 (bias 1):  6 = 1.5 * 2^2 -> 0 11 1 = 0x7; -1 -> 01 0 | 0x8 = 0xA; 0.5 -> 0x1
  //  INT8 (1.6 fixed point): 127/64 -> 127 = 0x7F; -1 -> -64 = 0xC0; 1/64 -> 0x01
  expect_block_reference<lb::mxfp8_e4m3>(block({448.0f, -1.0f, 0x1p-9f}), 0x7F, {0x7E, 0xB8, 0x01, 0x00});
  expect_block_reference<lb::mxfp8_e5m2>(block({57344.0f, -1.0f, 0x1p-16f}), 0x7F, {0x7B, 0xBC, 0x01, 0x00});
  expect_block_reference<lb::mxfp6_e2m3>(block({7.5f, -1.125f, 0.125f}), 0x7F, {0x1F, 0x29, 0x01, 0x00});
  expect_block_reference<lb::mxfp6_e3m2>(block({28.0f, -1.0f, 0.0625f}), 0x7F, {0x1F, 0x2C, 0x01, 0x00});
  expect_block_reference<lb::mxfp4_e2m1>(block({6.0f, -1.0f, 0.5f}), 0x7F, {0x7, 0xA, 0x1, 0x0});
  expect_block_reference<lb::mxint8>(block({127.0f / 64, -1.0f, 1.0f / 64}), 0x7F, {0x7F, 0xC0, 0x01, 0x00});
  // The same blocks times 2^5: X = 2^5 (code 0x84), the same element codes; and times 2^-20
  // (code 0x6B).
  for (float k : {0x1p5f, 0x1p-20f}) {
    const unsigned sc = k > 1.0f ? 0x84 : 0x6B;
    expect_block_reference<lb::mxfp8_e4m3>(block({448.0f * k, -k, 0x1p-9f * k}), sc, {0x7E, 0xB8, 0x01});
    expect_block_reference<lb::mxfp6_e3m2>(block({28.0f * k, -k, 0.0625f * k}), sc, {0x1F, 0x2C, 0x01});
    expect_block_reference<lb::mxfp4_e2m1>(block({6.0f * k, -k, 0.5f * k}), sc, {0x7, 0xA, 0x1});
    expect_block_reference<lb::mxint8>(block({127.0f / 64 * k, -k, k / 64}), sc, {0x7F, 0xC0, 0x01});
  }
}

TEST(MxBlockReference, SpecialBlocksThroughThePerBlockFunctions) {
  // A NaN block: scale 0xFF and element codes 0, decoding to NaN everywhere (OCP MX v1.0 6.3);
  // an all-zero block: scale 0x00 and signed zeros.
  std::vector<float> x = block({1.0f, nan_f, -2.0f});
  std::uint8_t e[16];
  std::memset(e, 0xEE, sizeof e);
  EXPECT_EQ(lb::mx_quantize_block<lb::mxfp4>(x.data(), lb::mx_options{}, e), 0xFF);
  for (std::uint8_t b : e) EXPECT_EQ(b, 0x00);
  float y[32];
  lb::mx_dequantize_block<lb::mxfp4>(e, 0xFF, lb::mx_options{}, y);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
  const std::vector<float> z = block({-0.0f, 0.0f, -0.0f});
  EXPECT_EQ(lb::mx_quantize_block<lb::mxfp4>(z.data(), lb::mx_options{}, e), 0x00);
  EXPECT_EQ(e[0], 0x08);  // -0 | +0 << 4
  EXPECT_EQ(e[1], 0x08);  // -0, then +0
  lb::mx_dequantize_block<lb::mxfp4>(e, 0x00, lb::mx_options{}, y);
  EXPECT_TRUE(std::signbit(y[0]));
  EXPECT_FALSE(std::signbit(y[1]));
  EXPECT_EQ(y[0], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Bits per element and byte accounting (lesson 000, section 2.4).

template <class Fmt>
lb::storage storage_of(std::size_t rows, std::size_t cols, const lb::mx_options& o = {}) {
  const lb::result<lb::storage> r = lb::mx_storage_for<Fmt>(rows, cols, o);
  EXPECT_TRUE(r.ok()) << Fmt::name;
  return r.value;
}

TEST(MxAccounting, BitsPerElement) {
  // element bits + 8 / 32 for the E8M0 scale of each block of 32 (8 / 16 for blocks of 16).
  EXPECT_EQ(storage_of<lb::mxfp4_e2m1>(1, 4096).bits_per_weight(), 4.25);
  EXPECT_EQ(storage_of<lb::mxfp6_e2m3>(1, 4096).bits_per_weight(), 6.25);
  EXPECT_EQ(storage_of<lb::mxfp6_e3m2>(1, 4096).bits_per_weight(), 6.25);
  EXPECT_EQ(storage_of<lb::mxfp8_e4m3>(1, 4096).bits_per_weight(), 8.25);
  EXPECT_EQ(storage_of<lb::mxfp8_e5m2>(1, 4096).bits_per_weight(), 8.25);
  EXPECT_EQ(storage_of<lb::mxint8>(1, 4096).bits_per_weight(), 8.25);
  EXPECT_EQ(storage_of<lb::mxfp4_e2m1>(1, 4096, lb::mx_presets::ocp(16)).bits_per_weight(), 4.5);
}

TEST(MxAccounting, StorageBytes) {
  // 4096 elements, 128 blocks: FP4 2048 + 128, FP6 3072 + 128, FP8 4096 + 128.
  const lb::storage fp4 = storage_of<lb::mxfp4>(1, 4096);
  EXPECT_EQ(fp4.elements, 4096u);
  EXPECT_EQ(fp4.payload_bytes, 2048u);
  EXPECT_EQ(fp4.scale_bytes, 128u);
  EXPECT_EQ(fp4.zero_point_bytes, 0u);
  EXPECT_EQ(fp4.total_bytes(), 2176u);
  EXPECT_EQ(storage_of<lb::mxfp6_e2m3>(1, 4096).total_bytes(), 3200u);
  EXPECT_EQ(storage_of<lb::mxfp8_e4m3>(1, 4096).total_bytes(), 4224u);
  EXPECT_EQ(storage_of<lb::mxint8>(1, 4096).total_bytes(), 4224u);
  // A matrix [4096, 11008] of MXFP4: 22544384 element bytes, 1409024 scales.
  const lb::storage w = storage_of<lb::mxfp4>(4096, 11008);
  EXPECT_EQ(w.payload_bytes, 22544384u);
  EXPECT_EQ(w.scale_bytes, 1409024u);
  // The run-time format gives the same, and the buffers the bulk calls fill have these sizes.
  EXPECT_EQ(lb::mx_storage_for(lb::mx_format::mxfp6_e3m2, 2, 64).value.payload_bytes, 96u);
  EXPECT_EQ(lb::mx_element_bits(lb::mx_format::mxfp6_e3m2), 6);
  // Errors: the options and shape checks of the bulk calls.
  EXPECT_EQ(lb::mx_storage_for<lb::mxfp4>(2, 48).status.code(), errc::bad_block_size);
  EXPECT_EQ(lb::mx_storage_for<lb::mxfp4>(2, 32, lb::mx_presets::ocp(3)).status.code(), errc::bad_block_size);
  EXPECT_EQ(lb::mx_storage_for<lb::mxfp4>(static_cast<std::size_t>(-1) / 16, 64).status.code(),
            errc::bad_argument);
  EXPECT_EQ(lb::mx_storage_for(static_cast<lb::mx_format>(17), 1, 32).status.code(), errc::bad_argument);
}

TEST(MxAccounting, FormatConstants) {
  // emax_elem and element max of OCP MX v1.0 Table 1 / section 5.3.
  EXPECT_EQ(lb::mxfp8_e4m3::emax, 8);
  EXPECT_EQ(lb::mxfp8_e5m2::emax, 15);
  EXPECT_EQ(lb::mxfp6_e2m3::emax, 2);
  EXPECT_EQ(lb::mxfp6_e3m2::emax, 4);
  EXPECT_EQ(lb::mxfp4_e2m1::emax, 2);
  EXPECT_EQ(lb::mxint8::emax, 0);
  EXPECT_EQ(lb::mxfp8_e4m3::element_max, 448.0f);
  EXPECT_EQ(lb::mxfp8_e5m2::element_max, 57344.0f);
  EXPECT_EQ(lb::mxfp6_e2m3::element_max, 7.5f);
  EXPECT_EQ(lb::mxfp6_e3m2::element_max, 28.0f);
  EXPECT_EQ(lb::mxfp4_e2m1::element_max, 6.0f);
  EXPECT_EQ(lb::mxint8::element_max, 1.984375f);
}

// ---------------------------------------------------------------------------------------------
// Scale codes, by hand. code = 127 + s.

struct scale_row {
  float amax;
  unsigned code;
};

template <class Fmt>
void expect_scales(e8m0_rule rule, std::initializer_list<scale_row> rows) {
  for (const scale_row& r : rows) {
    EXPECT_EQ(lb::mx_block_scale<Fmt>(r.amax, rule), r.code) << Fmt::name << " amax " << r.amax;
    // The same through a whole block whose max is amax.
    const quantized q = run<Fmt>(block({r.amax * 0.25f, -r.amax}), with_rule(rule));
    EXPECT_EQ(q.scales[0], r.code) << Fmt::name << " block amax " << r.amax;
  }
}

const float below_one = 0.99999994f;  // 1 - 2^-24: floor(log2) = -1
const float big = FLT_MAX;            // (2 - 2^-23) 2^127

TEST(MxScale, FloorRule) {
  // s = floor(log2 amax) - emax, clamped to [-127, 127].
  expect_scales<lb::mxfp4_e2m1>(e8m0_rule::floor, {
                                                      {4.0f, 0x7F},       // 2 - 2 = 0: power of two
                                                      {6.0f, 0x7F},       // 2 - 2
                                                      {7.99f, 0x7F},      // 2 - 2 (block max lands in [4, 8))
                                                      {8.0f, 0x80},       // 3 - 2
                                                      {1.0f, 0x7D},       // 0 - 2
                                                      {below_one, 0x7C},  // -1 - 2
                                                      {0x1p-130f, 0x00},  // -132 clamped to -127
                                                      {big, 0xFC},        // 127 - 2
                                                  });
  expect_scales<lb::mxfp8_e4m3>(e8m0_rule::floor, {
                                                      {448.0f, 0x7F},  // 8 - 8
                                                      {256.0f, 0x7F},
                                                      {511.0f, 0x7F},
                                                      {512.0f, 0x80},
                                                      {1.0f, 0x77},  // 0 - 8
                                                      {big, 0xF6},   // 127 - 8
                                                  });
  expect_scales<lb::mxfp8_e5m2>(e8m0_rule::floor, {
                                                      {57344.0f, 0x7F},   // 15 - 15
                                                      {32768.0f, 0x7F},
                                                      {1.0f, 0x70},       // -15
                                                      {0x1p-110f, 0x02},  // -125
                                                      {0x1p-113f, 0x00},  // -128 clamped
                                                  });
  expect_scales<lb::mxfp6_e2m3>(e8m0_rule::floor, {
                                                      {7.5f, 0x7F},       // 2 - 2
                                                      {4.0f, 0x7F},
                                                      {8.0f, 0x80},
                                                      {below_one, 0x7C},  // -1 - 2
                                                  });
  expect_scales<lb::mxfp6_e3m2>(e8m0_rule::floor, {
                                                      {28.0f, 0x7F},  // 4 - 4
                                                      {16.0f, 0x7F},
                                                      {32.0f, 0x80},
                                                      {1.0f, 0x7B},  // -4
                                                  });
  expect_scales<lb::mxint8>(e8m0_rule::floor, {
                                                  {1.0f, 0x7F},  // 0 - 0
                                                  {1.5f, 0x7F},
                                                  {2.0f, 0x80},
                                                  {0.75f, 0x7E},
                                                  {below_one, 0x7E},
                                                  {big, 0xFE},  // 127
                                              });
}

TEST(MxScale, CeilRule) {
  // s = ceil(log2(amax / elem_max)), clamped: the smallest X with amax / X <= elem_max.
  expect_scales<lb::mxfp4_e2m1>(e8m0_rule::ceil, {
                                                     {6.0f, 0x7F},          // 6/6 = 1 -> 0
                                                     {6.0000005f, 0x80},    // just above 6 -> 1
                                                     {4.0f, 0x7F},          // 0.667 -> 0
                                                     {3.0f, 0x7E},          // 0.5 -> -1
                                                     {3.0000002f, 0x7F},    // just above 0.5 -> 0
                                                     {below_one, 0x7D},     // 0.1667 -> -2
                                                     {0x1p-130f, 0x00},     // -132 clamped
                                                 });
  expect_scales<lb::mxfp8_e4m3>(e8m0_rule::ceil, {
                                                     {448.0f, 0x7F},
                                                     {449.0f, 0x80},
                                                     {224.0f, 0x7E},
                                                 });
  expect_scales<lb::mxint8>(e8m0_rule::ceil, {
                                                 {1.984375f, 0x7F},  // 127/64 exactly
                                                 {1.99f, 0x80},
                                                 {2.0f, 0x80},
                                                 {big, 0xFE},  // ceil gives 128, clamped to 127
                                             });
}

TEST(MxScale, EvenRule) {
  // amax rounded to the element's mantissa width (ties away), then floor.
  expect_scales<lb::mxfp4_e2m1>(e8m0_rule::even, {
                                                     {7.0f, 0x80},   // 1.75 * 4 -> 2 * 4 = 8: 3 - 2
                                                     {6.9f, 0x7F},   // 1.725 * 4 -> 1.5 * 4: 2 - 2
                                                     {1.75f, 0x7E},  // -> 2: 1 - 2
                                                     {1.7f, 0x7D},   // -> 1.5: 0 - 2
                                                 });
  expect_scales<lb::mxfp8_e4m3>(e8m0_rule::even, {
                                                     {496.0f, 0x80},  // 1.9375 * 256: tie 1.875/2 -> 2
                                                     {495.0f, 0x7F},  // below the tie -> 1.875
                                                 });
  expect_scales<lb::mxint8>(e8m0_rule::even, {
                                                 {1.9921875f, 0x80},  // 1 + 127/128: tie -> 2
                                                 {1.984375f, 0x7F},
                                             });
}

// The float32-log2 rule: s = floor(log2f(amax)) - emax, log2 rounded to the nearest float32 as
// microxcaling's torch.log2 on a float32 tensor (and ggml's log2f) computes it.
//
// By hand, MXFP4 amax 0x427FFFFF = 64 (1 - 2^-24): log2 = 6 + log2(1 - 2^-24) = 6 - 2^-24 / ln 2
// = 6 - 8.6e-8, and floats near 6 are 2^-21 = 4.8e-7 apart, so the nearest float is 6.0: s = 6 - 2
// = 4 (code 0x83), where the exact floor gives 5 - 2 = 3 (0x82). Just below 2 the float32 log2
// does not round up: log2(2 (1 - 2^-24)) = 1 - 1.44 * 2^-24, and floats just below 1 are 2^-24
// apart, so it rounds to 1 - 2^-24, whose floor is 0.
TEST(MxScale, FloorLog2fRuleHandCases) {
  float a = 0.0f;
  const std::uint32_t b = 0x427FFFFFu;
  std::memcpy(&a, &b, sizeof a);
  EXPECT_EQ(std::log2(a), 6.0f);  // the platform's log2f agrees with the hand derivation
  expect_scales<lb::mxfp4_e2m1>(e8m0_rule::floor_log2f, {
                                                            {a, 0x83},          // 6 - 2, floor: 0x82
                                                            {64.0f, 0x83},      // exact powers: as floor
                                                            {63.9f, 0x82},      // far below 64: as floor
                                                            {below_one, 0x7C},  // -1 - 2, as floor
                                                            {std::nextafter(2.0f, 0.0f), 0x7D},  // 0 - 2
                                                            {0x1p-130f, 0x00},  // clamped
                                                            {big, 0xFD},        // log2f(FLT_MAX) = 128: 126 + 127
                                                        });
  EXPECT_EQ(lb::mx_block_scale<lb::mxfp4_e2m1>(a, e8m0_rule::floor), 0x82);
  EXPECT_EQ(lb::mx_block_scale<lb::mxfp4>(0.0f, e8m0_rule::floor_log2f), 0x00);
}

// Every format, the 200 floats just below every power of two 2^-148 .. 2^128: the expected
// exponent is floor(log2(a)) with log2 computed in double and rounded to float
// ((float)std::log2((double)a): the double result is within 2^-29 float ulps of the exact value,
// and no such a lies that close to a float32 rounding boundary, so this is the correctly rounded
// log2f). Bulk calls on both paths write the same scales.
template <class Fmt>
void check_floor_log2f_sweep() {
  int rounded_up = 0;
  std::vector<float> amaxes;
  for (int k = -148; k <= 128; ++k) {
    const float bottom = std::ldexp(1.0f, k - 1);
    float a = k == 128 ? FLT_MAX : std::nextafter(std::ldexp(1.0f, k), 0.0f);
    for (int m = 0; m < 200 && a >= bottom; ++m, a = std::nextafter(a, 0.0f)) {
      const int e = static_cast<int>(std::floor(static_cast<float>(std::log2(static_cast<double>(a)))));
      const int code = std::min(254, std::max(0, e - Fmt::emax + 127));
      ASSERT_EQ(lb::mx_block_scale<Fmt>(a, e8m0_rule::floor_log2f), static_cast<unsigned>(code))
          << Fmt::name << " amax " << a << " (2^" << k << " - " << m + 1 << " ulps)";
      if (e == k) ++rounded_up;
      if (amaxes.size() < 4096) amaxes.push_back(a);
    }
  }
  EXPECT_GT(rounded_up, 1000) << Fmt::name;  // the rule differs from floor on many of them
  // Through the bulk call, one amax per block of 32, on both paths.
  const lb::mx_options o = with_rule(e8m0_rule::floor_log2f);
  std::vector<float> x(amaxes.size() * 32, 0.0f);
  for (std::size_t i = 0; i < amaxes.size(); ++i) {
    x[32 * i] = amaxes[i] * 0.5f;
    x[32 * i + 7] = -amaxes[i];
  }
  std::vector<std::uint8_t> want;
  for (const lb::isa path : {lb::isa::scalar, lb::isa::avx2, lb::isa::avx512}) {
    if (!lb::is_supported(path)) continue;
    const lb::scoped_isa use(path);
    std::vector<std::uint8_t> e(lb::packed_bytes(x.size(), Fmt::element_bits)), s(amaxes.size());
    ASSERT_TRUE(lb::mx_quantize<Fmt>(x.data(), x.size(), o, e.data(), s.data()).ok());
    for (std::size_t i = 0; i < amaxes.size(); ++i)
      ASSERT_EQ(s[i], lb::mx_block_scale<Fmt>(amaxes[i], e8m0_rule::floor_log2f)) << Fmt::name << " block " << i;
    if (want.empty()) want = e;
    EXPECT_EQ(e, want) << Fmt::name << ": the elements differ between paths";
  }
}

TEST(MxScale, FloorLog2fRuleBelowEveryPowerOfTwo) {
  check_floor_log2f_sweep<lb::mxfp4_e2m1>();
  check_floor_log2f_sweep<lb::mxfp8_e4m3>();
  check_floor_log2f_sweep<lb::mxfp8_e5m2>();
  check_floor_log2f_sweep<lb::mxfp6_e2m3>();
  check_floor_log2f_sweep<lb::mxfp6_e3m2>();
  check_floor_log2f_sweep<lb::mxint8>();
}

// The ceil rule is the exact ceiling. The fp32 quotient amax / elem_max followed by cvt.rp (torchao
// RCEIL) agrees except where the quotient is a float32 subnormal and rounds onto a power of two:
// one amax per FP element format. MXFP4 amax 0x01400001 = (1.5 + 2^-23) 2^-125: amax / 6 =
// 2^-127 + 2^-148 / 6, above 2^-127, so the ceiling is 2^-126 (0x01); in float32 the quotient's
// excess 2^-150.6 is below half the subnormal spacing 2^-149, so it rounds to 2^-127 exactly and
// cvt.rp keeps it (0x00).
TEST(MxScale, CeilRuleWhereTheFp32QuotientIsSubnormal) {
  float a = 0.0f;
  const std::uint32_t b = 0x01400001u;
  std::memcpy(&a, &b, sizeof a);
  EXPECT_EQ(lb::mx_block_scale<lb::mxfp4_e2m1>(a, e8m0_rule::ceil), 0x01u);
  const float q = a / 6.0f;  // default MXCSR: the subnormal quotient is kept
  EXPECT_EQ(q, 0x1p-127f);
  EXPECT_EQ(lb::encode<lb::float8_e8m0fnu>(q, lb::overflow::saturate, rounding::toward_pos_inf).bits(), 0x00u);
  for (const lb::isa path : {lb::isa::scalar, lb::isa::avx2, lb::isa::avx512}) {
    if (!lb::is_supported(path)) continue;
    const lb::scoped_isa use(path);
    const quantized r = run<lb::mxfp4_e2m1>(block({a}), with_rule(e8m0_rule::ceil));
    EXPECT_EQ(r.scales[0], 0x01u);
  }
}

TEST(MxScale, ZeroAndNonFiniteAmax) {
  for (e8m0_rule r : {e8m0_rule::floor, e8m0_rule::ceil, e8m0_rule::even, e8m0_rule::floor_log2f}) {
    EXPECT_EQ(lb::mx_block_scale<lb::mxfp4>(0.0f, r), 0x00);
    EXPECT_EQ(lb::mx_block_scale<lb::mxfp4>(nan_f, r), 0xFF);
    EXPECT_EQ(lb::mx_block_scale<lb::mxfp4>(inf_f, r), 0xFF);
  }
}

// ---------------------------------------------------------------------------------------------
// Element codes, by hand.

TEST(MxElements, Fp4SaturatesAndSubnormals) {
  // amax 7.5: floor(log2 7.5) = 2 -> X = 1. 7.5 > 6 saturates to 6 (0x7), -7.5 to 0xF.
  // 0.25: tie 0/0.5 -> 0 (even); 0.3 -> 0.5 (subnormal, 0x1); 0.75: tie 0.5/1 -> 1 (0x2);
  // 1.25: tie 1/1.5 -> 1 (0x2); 2.5: tie 2/3 -> 2 (0x4); 3.5: tie 3/4 -> 4 (0x6).
  const quantized q = run<lb::mxfp4>(block({7.5f, -7.5f, 0.25f, 0.3f, 0.75f, 1.25f, 2.5f, 3.5f}));
  EXPECT_EQ(q.scales[0], 0x7F);
  const unsigned expected[] = {0x7, 0xF, 0x0, 0x1, 0x2, 0x2, 0x4, 0x6};
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(code_at<lb::mxfp4>(q.elements, i), expected[i]) << i;
  EXPECT_EQ(q.decoded[0], 6.0f);
  EXPECT_EQ(q.decoded[1], -6.0f);
}

TEST(MxElements, Fp4TieRules) {
  // Same ties, block max 4 (X = 1). Order: 0.25, 0.75, 1.25, 2.5, 3.5, 5, -0.25.
  const std::vector<float> x = block({4.0f, 0.25f, 0.75f, 1.25f, 2.5f, 3.5f, 5.0f, -0.25f});
  struct mode {
    lb::mx_options o;
    unsigned codes[7];
  };
  lb::mx_options away = lb::mx_presets::microxcaling();
  lb::mx_options ggml = lb::mx_presets::ggml();
  lb::mx_options tz = with_rounding(rounding::nearest_toward_zero);  // keeps -0
  const mode modes[] = {
      {lb::mx_presets::ocp(), {0x0, 0x2, 0x2, 0x4, 0x6, 0x6, 0x8}},  // even
      {away, {0x1, 0x2, 0x3, 0x5, 0x6, 0x7, 0x9}},                   // away from zero
      {ggml, {0x0, 0x1, 0x2, 0x4, 0x5, 0x6, 0x0}},                   // smaller magnitude, +0
      {tz, {0x0, 0x1, 0x2, 0x4, 0x5, 0x6, 0x8}},                     // smaller magnitude, -0 kept
  };
  for (const mode& m : modes) {
    const quantized q = run<lb::mxfp4>(x, m.o);
    EXPECT_EQ(q.scales[0], 0x7F);
    for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(code_at<lb::mxfp4>(q.elements, i + 1), m.codes[i]) << i;
  }
}

TEST(MxElements, Fp8E4M3) {
  // amax 500: floor(log2 500) = 8 -> X = 1 (0x7F). 500 -> 448 (0x7E, saturated: 500 > 464);
  // 2^-8 = 2 * 2^-9 subnormal (0x02); 0.001 = 0.512 * 2^-9 -> 2^-9 (0x01); -1 = 0xB8.
  const quantized q = run<lb::mxfp8_e4m3>(block({500.0f, 0x1p-8f, 0.001f, -1.0f}));
  EXPECT_EQ(q.scales[0], 0x7F);
  EXPECT_EQ(q.elements[0], 0x7E);
  EXPECT_EQ(q.elements[1], 0x02);
  EXPECT_EQ(q.elements[2], 0x01);
  EXPECT_EQ(q.elements[3], 0xB8);
  EXPECT_EQ(q.decoded[0], 448.0f);
  EXPECT_EQ(q.decoded[2], 0x1p-9f);
}

TEST(MxElements, Fp8E5M2) {
  // amax 65000: floor(log2) = 15 -> X = 1. 65000 > 61440 (the 57344/65536 tie) saturates to
  // 57344 (0x7B); 1 = 0x3C; -3 = -1.5 * 2 = 0xC2; 2^-16 = smallest subnormal (0x01).
  const quantized q = run<lb::mxfp8_e5m2>(block({65000.0f, 1.0f, -3.0f, 0x1p-16f}));
  EXPECT_EQ(q.scales[0], 0x7F);
  EXPECT_EQ(q.elements[0], 0x7B);
  EXPECT_EQ(q.elements[1], 0x3C);
  EXPECT_EQ(q.elements[2], 0xC2);
  EXPECT_EQ(q.elements[3], 0x01);
}

TEST(MxElements, Fp6E2M3) {
  // amax 7.9: floor(log2) = 2 -> X = 1. 7.9 > 7.5 saturates (0x1F); 0.375 = 3/8 subnormal (0x03);
  // -2.25 = -1.001b * 2 -> sign, field 2, mantissa 001 = 0x31.
  const quantized q = run<lb::mxfp6_e2m3>(block({7.9f, 0.375f, -2.25f}));
  EXPECT_EQ(q.scales[0], 0x7F);
  EXPECT_EQ(code_at<lb::mxfp6_e2m3>(q.elements, 0), 0x1Fu);
  EXPECT_EQ(code_at<lb::mxfp6_e2m3>(q.elements, 1), 0x03u);
  EXPECT_EQ(code_at<lb::mxfp6_e2m3>(q.elements, 2), 0x31u);
  EXPECT_EQ(q.decoded[0], 7.5f);
}

TEST(MxElements, Fp6E3M2) {
  // amax 31: floor(log2) = 4 -> X = 1. 31 > 28 saturates (0x1F); 2^-4 smallest subnormal (0x01);
  // 5 = 1.25 * 4 -> field 5, mantissa 01 = 0x15.
  const quantized q = run<lb::mxfp6_e3m2>(block({31.0f, 0.0625f, 5.0f}));
  EXPECT_EQ(q.scales[0], 0x7F);
  EXPECT_EQ(code_at<lb::mxfp6_e3m2>(q.elements, 0), 0x1Fu);
  EXPECT_EQ(code_at<lb::mxfp6_e3m2>(q.elements, 1), 0x01u);
  EXPECT_EQ(code_at<lb::mxfp6_e3m2>(q.elements, 2), 0x15u);
}

TEST(MxElements, Int8FixedPoint) {
  // amax 1.999: floor(log2) = 0, emax 0 -> X = 1. q = round(64 v), saturated to +-127:
  // 1 -> 64; -0.5 -> -32 (0xE0); 0.3 -> 19.2 -> 19; 1.999 -> 127.94 -> 128 -> 127;
  // -1.999 -> -127 (0x81); 1/128 -> 0.5 (tie) -> 0; 3/128 -> 1.5 (tie) -> 2.
  const std::vector<float> x = block({1.0f, -0.5f, 0.3f, 1.999f, -1.999f, 1.0f / 128, 3.0f / 128});
  const quantized q = run<lb::mxint8>(x);
  EXPECT_EQ(q.scales[0], 0x7F);
  const unsigned expected[] = {0x40, 0xE0, 0x13, 0x7F, 0x81, 0x00, 0x02};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(q.elements[i], expected[i]) << i;
  EXPECT_EQ(q.decoded[3], 1.984375f);
  EXPECT_EQ(q.decoded[4], -1.984375f);
  // Ties away (microxcaling): 1/128 -> 1, 3/128 -> 2.
  const quantized a = run<lb::mxint8>(x, lb::mx_presets::microxcaling());
  EXPECT_EQ(a.elements[5], 0x01);
  EXPECT_EQ(a.elements[6], 0x02);
  // -128 is never written but decodes as -2 (with scale 2^0).
  std::vector<std::uint8_t> e(32, 0);
  e[0] = 0x80;
  const std::uint8_t s = 0x7F;
  float out[32];
  ASSERT_TRUE(lb::mx_dequantize<lb::mxint8>(e.data(), &s, 32, {}, out).ok());
  EXPECT_EQ(out[0], -2.0f);
}

TEST(MxElements, AmaxJustBelowOne) {
  // amax 1 - 2^-24. floor: X = 2^-3 and amax / X = 7.9999995 saturates to 6 -> 0.75.
  // ceil: X = 2^-2, amax / X = 3.99999976 -> 4 -> 1.0.
  const std::vector<float> x = block({below_one});
  const quantized f = run<lb::mxfp4>(x);
  EXPECT_EQ(f.scales[0], 0x7C);
  EXPECT_EQ(code_at<lb::mxfp4>(f.elements, 0), 0x7u);
  EXPECT_EQ(f.decoded[0], 0.75f);
  const quantized c = run<lb::mxfp4>(x, lb::mx_presets::rceil());
  EXPECT_EQ(c.scales[0], 0x7D);
  EXPECT_EQ(code_at<lb::mxfp4>(c.elements, 0), 0x6u);
  EXPECT_EQ(c.decoded[0], 1.0f);
}

TEST(MxElements, FloorClipsWhereCeilDoesNot) {
  // amax 7.9: floor X = 1, 7.9 -> 6 (error 1.9). ceil X = 2, 3.95 -> 4 -> 8 (error 0.1);
  // the small element 0.3 is 0.5 with X = 1 and 0 with X = 2 (0.15 < 0.25): ceil's cost.
  const std::vector<float> x = block({7.9f, 0.3f});
  const quantized f = run<lb::mxfp4>(x);
  const quantized c = run<lb::mxfp4>(x, lb::mx_presets::rceil());
  EXPECT_EQ(f.scales[0], 0x7F);
  EXPECT_EQ(c.scales[0], 0x80);
  EXPECT_EQ(f.decoded[0], 6.0f);
  EXPECT_EQ(c.decoded[0], 8.0f);
  EXPECT_EQ(f.decoded[1], 0.5f);
  EXPECT_EQ(c.decoded[1], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Special blocks.

template <class Fmt>
void expect_zero_block() {
  // All zeros, one of them -0: scale 0x00, codes of +-0, decoded zeros with the signs
  // (MXINT8 has no -0).
  std::vector<float> x(32, 0.0f);
  x[1] = -0.0f;
  for (e8m0_rule r : {e8m0_rule::floor, e8m0_rule::ceil, e8m0_rule::even}) {
    const quantized q = run<Fmt>(x, with_rule(r));
    EXPECT_EQ(q.scales[0], 0x00) << Fmt::name;
    for (std::size_t i = 0; i < 32; ++i) {
      const unsigned neg_zero = Fmt::element_bits == 8 && Fmt::id == lb::mx_format::mxint8 ? 0u
                                : 1u << (Fmt::element_bits - 1);
      EXPECT_EQ(code_at<Fmt>(q.elements, i), i == 1 ? neg_zero : 0u) << Fmt::name << " " << i;
      EXPECT_EQ(q.decoded[i], 0.0f);
    }
    EXPECT_EQ(std::signbit(q.decoded[1]), Fmt::id != lb::mx_format::mxint8) << Fmt::name;
    EXPECT_FALSE(std::signbit(q.decoded[0]));
  }
}

TEST(MxSpecial, ZeroBlock) {
  expect_zero_block<lb::mxfp8_e4m3>();
  expect_zero_block<lb::mxfp8_e5m2>();
  expect_zero_block<lb::mxfp6_e2m3>();
  expect_zero_block<lb::mxfp6_e3m2>();
  expect_zero_block<lb::mxfp4_e2m1>();
  expect_zero_block<lb::mxint8>();
}

template <class Fmt>
void expect_non_finite_block(float bad) {
  // Block 1 of 3 holds `bad`: scale 0xFF, every element code 0, NaN everywhere on decode; the
  // blocks around it are untouched by it.
  std::vector<float> x(96, 0.0f);
  for (std::size_t i = 0; i < 96; ++i) x[i] = 0.5f + 0.01f * static_cast<float>(i % 7);
  x[40] = bad;
  const quantized q = run<Fmt>(x);
  EXPECT_EQ(q.scales[1], 0xFF) << Fmt::name;
  EXPECT_NE(q.scales[0], 0xFF);
  EXPECT_NE(q.scales[2], 0xFF);
  const std::size_t bytes = lb::packed_bytes(32, Fmt::element_bits);
  for (std::size_t j = 0; j < bytes; ++j) EXPECT_EQ(q.elements[bytes + j], 0) << Fmt::name;
  for (std::size_t i = 32; i < 64; ++i) EXPECT_TRUE(std::isnan(q.decoded[i])) << Fmt::name << " " << i;
  for (std::size_t i = 0; i < 32; ++i) EXPECT_FALSE(std::isnan(q.decoded[i]));
  for (std::size_t i = 64; i < 96; ++i) EXPECT_FALSE(std::isnan(q.decoded[i]));

  // Opt-in error: the same output, and a status that says so.
  lb::mx_options o;
  o.non_finite_is_error = true;
  std::vector<std::uint8_t> e(lb::packed_bytes(96, Fmt::element_bits)), s(3);
  EXPECT_EQ(lb::mx_quantize<Fmt>(x.data(), 96, o, e.data(), s.data()).code(), errc::non_finite_input);
  EXPECT_EQ(e, q.elements);
  EXPECT_EQ(s, q.scales);
}

TEST(MxSpecial, NaNBlock) {
  expect_non_finite_block<lb::mxfp8_e4m3>(nan_f);
  expect_non_finite_block<lb::mxfp8_e5m2>(-nan_f);
  expect_non_finite_block<lb::mxfp6_e2m3>(nan_f);
  expect_non_finite_block<lb::mxfp6_e3m2>(nan_f);
  expect_non_finite_block<lb::mxfp4_e2m1>(nan_f);
  expect_non_finite_block<lb::mxint8>(nan_f);
}

TEST(MxSpecial, InfBlock) {
  expect_non_finite_block<lb::mxfp8_e4m3>(inf_f);
  expect_non_finite_block<lb::mxfp8_e5m2>(-inf_f);
  expect_non_finite_block<lb::mxfp4_e2m1>(inf_f);
  expect_non_finite_block<lb::mxint8>(-inf_f);
}

TEST(MxSpecial, NaNScaleDecodesToNaNWhateverTheElements) {
  std::vector<std::uint8_t> e(16, 0x77);
  const std::uint8_t s = 0xFF;
  std::vector<float> out(32);
  ASSERT_TRUE(lb::mx_dequantize<lb::mxfp4>(e.data(), &s, 32, {}, out.data()).ok());
  for (float v : out) EXPECT_TRUE(std::isnan(v));
}

// ---------------------------------------------------------------------------------------------
// Storage layout.

TEST(MxLayout, Fp6FourCodesInThreeBytes) {
  // Block of 4, amax 7.5 -> X = 1. E2M3 codes: 4.0 = 0x18, 0.5 = 4/8 = 0x04, -1 = 0x28,
  // 7.5 = 0x1F. Bit stream 0x18 | 0x04 << 6 | 0x28 << 12 | 0x1F << 18 = 0x7E8118,
  // bytes 0x18 0x81 0x7E.
  const quantized q = run<lb::mxfp6_e2m3>({4.0f, 0.5f, -1.0f, 7.5f}, lb::mx_presets::ocp(4));
  ASSERT_EQ(q.elements.size(), 3u);
  EXPECT_EQ(q.scales[0], 0x7F);
  EXPECT_EQ(q.elements[0], 0x18);
  EXPECT_EQ(q.elements[1], 0x81);
  EXPECT_EQ(q.elements[2], 0x7E);
  EXPECT_EQ(q.decoded, (std::vector<float>{4.0f, 0.5f, -1.0f, 7.5f}));
}

TEST(MxLayout, MatrixRowsBlockedAlongIn) {
  // [2, 64] MXFP4: row r's elements at byte 32 r, scales [r0b0, r0b1, r1b0, r1b1].
  // Row maxima: 1, 8 in row 0; 0.5, 3 in row 1 -> floor codes 0x7D, 0x80, 0x7C, 0x7E.
  std::vector<float> m(128, 0.0f);
  m[3] = 1.0f;
  m[40] = -8.0f;
  m[64 + 10] = 0.5f;
  m[64 + 63] = 3.0f;
  std::vector<std::uint8_t> e(64, 0xEE), s(4, 0xEE);
  ASSERT_TRUE(lb::mx_quantize_matrix<lb::mxfp4>(m.data(), 2, 64, {}, e.data(), s.data()).ok());
  EXPECT_EQ(s, (std::vector<std::uint8_t>{0x7D, 0x80, 0x7C, 0x7E}));
  // 1 / 2^-2 = 4 -> 0x6 in the high nibble of byte 1; -8 / 2 = -4 -> 0xE, low nibble of byte 20;
  // 0.5 / 2^-3 = 4 -> low nibble of byte 32 + 5; 3 / 2^-1 = 6 -> high nibble of byte 63.
  EXPECT_EQ(e[1], 0x60);
  EXPECT_EQ(e[20], 0x0E);
  EXPECT_EQ(e[37], 0x06);
  EXPECT_EQ(e[63], 0x70);
  std::vector<float> back(128);
  ASSERT_TRUE(lb::mx_dequantize_matrix<lb::mxfp4>(e.data(), s.data(), 2, 64, {}, back.data()).ok());
  EXPECT_EQ(back, m);
}

TEST(MxLayout, RuntimeDispatchMatchesTemplates) {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(64);
  for (float& v : x) v = nd(gen);
  std::vector<std::uint8_t> e1(64), s1(2), e2(64), s2(2);
  ASSERT_TRUE(lb::mx_quantize<lb::mxfp6_e3m2>(x.data(), 64, {}, e1.data(), s1.data()).ok());
  ASSERT_TRUE(lb::mx_quantize(lb::mx_format::mxfp6_e3m2, x.data(), 64, {}, e2.data(), s2.data()).ok());
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(s1, s2);
  std::vector<float> d1(64), d2(64);
  ASSERT_TRUE(lb::mx_dequantize<lb::mxfp6_e3m2>(e1.data(), s1.data(), 64, {}, d1.data()).ok());
  ASSERT_TRUE(lb::mx_dequantize(lb::mx_format::mxfp6_e3m2, e1.data(), s1.data(), 64, {}, d2.data()).ok());
  EXPECT_EQ(d1, d2);
}

TEST(MxLayout, Bfloat16InAndOut) {
  // bfloat16 input quantizes exactly like the same values as float; bfloat16 output is the float
  // output rounded (here exact: FP4 values times powers of two fit in bfloat16).
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<lb::bfloat16> xb(64);
  std::vector<float> xf(64);
  for (std::size_t i = 0; i < 64; ++i) {
    xb[i] = lb::bfloat16(nd(gen));
    xf[i] = static_cast<float>(xb[i]);
  }
  std::vector<std::uint8_t> eb(32), sb(2), ef(32), sf(2);
  ASSERT_TRUE(lb::mx_quantize<lb::mxfp4>(xb.data(), 64, {}, eb.data(), sb.data()).ok());
  ASSERT_TRUE(lb::mx_quantize<lb::mxfp4>(xf.data(), 64, {}, ef.data(), sf.data()).ok());
  EXPECT_EQ(eb, ef);
  EXPECT_EQ(sb, sf);
  std::vector<lb::bfloat16> ob(64);
  std::vector<float> of(64);
  ASSERT_TRUE(lb::mx_dequantize<lb::mxfp4>(eb.data(), sb.data(), 64, {}, ob.data()).ok());
  ASSERT_TRUE(lb::mx_dequantize<lb::mxfp4>(ef.data(), sf.data(), 64, {}, of.data()).ok());
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(static_cast<float>(ob[i]), of[i]);
  ASSERT_TRUE(lb::mx_quantize_matrix<lb::mxfp4>(xb.data(), 2, 32, {}, eb.data(), sb.data()).ok());
  EXPECT_EQ(eb, ef);
}

std::vector<lb::isa> block_paths() {
  std::vector<lb::isa> v = {lb::isa::scalar};
  for (const lb::isa p : lowbit_test::simd_paths()) v.push_back(p);
  return v;
}

// Calls of 16 MiB and more, where the kernels stream their outputs, into outputs at 64-byte aligned
// addresses (streamed) and one element past them: every path writes the scalar path's bytes, and
// nothing next to them.
template <class Fmt>
void check_large_call() {
  const std::size_t n = std::size_t{1} << 22;  // 16 MiB of float32
  const std::vector<float> x = lowbit_test::large_input(n, 21);
  lowbit_test::check_large_call(block_paths(), lb::packed_bytes(n, Fmt::element_bits), n / 32, n,
                                [&](std::uint8_t* e, std::uint8_t* s, float* y) {
                                  return lb::mx_quantize<Fmt>(x.data(), n, {}, e, s).ok() &&
                                         lb::mx_dequantize<Fmt>(e, s, n, {}, y).ok();
                                });
}

TEST(MxLayout, LargeCallsAlignedAndNot) {
  check_large_call<lb::mxfp4>();
  check_large_call<lb::mxfp8_e4m3>();
}

std::uint8_t blocks_byte(const lb::ggml_block_mxfp4& g, std::size_t k) { return k == 0 ? g.e : g.qs[k - 1]; }
bool same_blocks(const std::vector<lb::ggml_block_mxfp4>& a, const std::vector<lb::ggml_block_mxfp4>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
}

TEST(MxLayout, GgmlBlockMxfp4) {
  // Planar codes c_j = j for j < 16 and 31 - j for j >= 16 (so c_{j+16} = 15 - j).
  // ggml: qs[j] = c_j | c_{j+16} << 4 = j | (15 - j) << 4: qs[0] = 0xF0, qs[1] = 0xE1, qs[15] = 0x0F.
  std::vector<std::uint8_t> planar(16);
  for (std::size_t i = 0; i < 16; ++i) {
    const unsigned lo = static_cast<unsigned>(i < 8 ? 2 * i : 31 - 2 * i);  // code of element 2i
    const unsigned hi = static_cast<unsigned>(i < 8 ? 2 * i + 1 : 30 - 2 * i);
    planar[i] = static_cast<std::uint8_t>(lo | hi << 4);
  }
  const std::uint8_t scale = 0x85;
  lb::ggml_block_mxfp4 g{};
  ASSERT_TRUE(lb::mxfp4_to_ggml(planar.data(), &scale, 32, &g).ok());
  EXPECT_EQ(g.e, 0x85);
  EXPECT_EQ(g.qs[0], 0xF0);
  EXPECT_EQ(g.qs[1], 0xE1);
  EXPECT_EQ(g.qs[7], 0x87);
  EXPECT_EQ(g.qs[15], 0x0F);
  std::vector<std::uint8_t> back(16);
  std::uint8_t s2 = 0;
  ASSERT_TRUE(lb::mxfp4_from_ggml(&g, 32, back.data(), &s2).ok());
  EXPECT_EQ(back, planar);
  EXPECT_EQ(s2, 0x85);
  // A NaN scale is copied but reported: ggml would read it as 2^128.
  const std::uint8_t nan_scale = 0xFF;
  EXPECT_EQ(lb::mxfp4_to_ggml(planar.data(), &nan_scale, 32, &g).code(), errc::non_finite_input);
  EXPECT_EQ(lb::mxfp4_to_ggml(planar.data(), &scale, 48, &g).code(), errc::bad_block_size);
}

// A test-local port of ggml's quantize_row_mxfp4_ref element search (first best index over the
// doubled E2M1 table, strict <), with the exact floor(log2) for the scale.
void ggml_mxfp4_reference(const float* x, lb::ggml_block_mxfp4* out) {
  static const int kvalues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const int e = amax > 0.0f ? std::ilogb(amax) - 2 + 127 : 0;
  const float d = std::ldexp(1.0f, e - 128);  // half the scale, for the doubled table
  auto best = [&](float v) {
    int bi = 0;
    float be = std::fabs(static_cast<float>(kvalues[0]) * d - v);
    for (int i = 1; i < 16; ++i) {
      const float err = std::fabs(static_cast<float>(kvalues[i]) * d - v);
      if (err < be) {
        bi = i;
        be = err;
      }
    }
    return bi;
  };
  out->e = static_cast<std::uint8_t>(e);
  for (int j = 0; j < 16; ++j) out->qs[j] = static_cast<std::uint8_t>(best(x[j]) | best(x[j + 16]) << 4);
}

TEST(MxLayout, GgmlPresetReproducesGgmlBlocks) {
  std::mt19937 gen(2024);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-20, 20);
  std::vector<float> x(32 * 256);
  for (std::size_t b = 0; b < 256; ++b) {
    const float m = std::ldexp(1.0f, mag(gen));
    for (std::size_t j = 0; j < 32; ++j) {
      float v = nd(gen) * m;
      if (j % 5 == 0) v = std::ldexp(std::nearbyint(std::ldexp(v, 3 - std::ilogb(m))), std::ilogb(m) - 3);  // ties
      x[32 * b + j] = v;
    }
  }
  std::vector<std::uint8_t> e(x.size() / 2), s(x.size() / 32);
  ASSERT_TRUE(lb::mx_quantize<lb::mxfp4>(x.data(), x.size(), lb::mx_presets::ggml(), e.data(), s.data()).ok());
  std::vector<lb::ggml_block_mxfp4> ours(256), theirs(256);
  ASSERT_TRUE(lb::mxfp4_to_ggml(e.data(), s.data(), x.size(), ours.data()).ok());
  for (std::size_t b = 0; b < 256; ++b) {
    ggml_mxfp4_reference(x.data() + 32 * b, &theirs[b]);
    ASSERT_EQ(ours[b].e, theirs[b].e) << b;
    for (int j = 0; j < 16; ++j) ASSERT_EQ(ours[b].qs[j], theirs[b].qs[j]) << b << " " << j;
  }
  // Straight into the blocks, on every path: the same bytes as the port.
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    std::vector<lb::ggml_block_mxfp4> direct(256);
    ASSERT_TRUE(lb::mxfp4_quantize_ggml(x.data(), x.size(), lb::mx_presets::ggml(), direct.data()).ok());
    EXPECT_TRUE(same_blocks(direct, theirs)) << lb::isa_name(path);
  }
}

// ---------------------------------------------------------------------------------------------
// Quantizing straight into ggml's block_mxfp4 and dequantizing straight out of it
// (mxfp4_quantize_ggml, mxfp4_dequantize_ggml), on every path this build has.

TEST(MxGgmlDirect, BlocksAsTheLayoutDescribesThem) {
  // docs/block-formats.md 2.4: block_mxfp4 = e, then qs[j] = x[j] | x[j+16] << 4. Block 0 holds the
  // E2M1 values of codes c_j = j (j < 16) and c_j = 31 - j (j >= 16), amax 6: s = floor(log2 6) - 2
  // = 0, e = 127 = 0x7F, codes exact. Block 1 is block 0 times 4 (e = 0x81), block 2 times 2^-130
  // (every product lies on float's grid down to 2^-131: e = 0x00 after the clamp at s = -127,
  // the elements 0.5 * 2^-130 ... round at 2^-127's grid). Only blocks 0 and 1 are checked by hand.
  const float e2m1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  std::vector<float> x(64);
  for (std::size_t j = 0; j < 32; ++j) {
    x[j] = e2m1[j < 16 ? j : 31 - j];
    x[32 + j] = 4.0f * x[j];
  }
  lb::ggml_block_mxfp4 want{};
  want.e = 0x7F;
  for (unsigned j = 0; j < 16; ++j) want.qs[j] = static_cast<std::uint8_t>(j | (15u - j) << 4);
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    std::vector<lb::ggml_block_mxfp4> g(2);
    ASSERT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, {}, g.data()).code(), errc::ok) << lb::isa_name(path);
    for (std::size_t k = 0; k < 17; ++k) {
      EXPECT_EQ(blocks_byte(g[0], k), blocks_byte(want, k)) << lb::isa_name(path) << " byte " << k;
      EXPECT_EQ(blocks_byte(g[1], k), k == 0 ? 0x81 : blocks_byte(want, k)) << lb::isa_name(path) << " byte " << k;
    }
    // ... and back: X * P_j exactly.
    std::vector<float> y(64);
    ASSERT_EQ(lb::mxfp4_dequantize_ggml(g.data(), 64, {}, y.data()).code(), errc::ok);
    for (std::size_t i = 0; i < 64; ++i)
      EXPECT_EQ(lowbit_test::float_bits(y[i]), lowbit_test::float_bits(x[i])) << lb::isa_name(path) << " " << i;
  }
}

// The reference: the planar call, then the conversion (both on the scalar path).
struct mx_ggml_ref {
  lb::status status;
  std::vector<lb::ggml_block_mxfp4> blocks;
};
template <class Src>
mx_ggml_ref mx_ggml_reference(const std::vector<Src>& x, const lb::mx_options& o) {
  const lb::scoped_isa scalar(lb::isa::scalar);
  std::vector<std::uint8_t> e(x.size() / 2), s(x.size() / 32);
  mx_ggml_ref r;
  r.blocks.assign(x.size() / 32, lb::ggml_block_mxfp4{});
  r.status = lb::mx_quantize<lb::mxfp4>(x.data(), x.size(), o, e.data(), s.data());
  const lb::status c = lb::mxfp4_to_ggml(e.data(), s.data(), x.size(), r.blocks.data());
  if (r.status) r.status = c;
  return r;
}
template <class Dst>
std::vector<Dst> mx_ggml_reference_back(const std::vector<lb::ggml_block_mxfp4>& g, const lb::mx_options& o) {
  const lb::scoped_isa scalar(lb::isa::scalar);
  const std::size_t n = 32 * g.size();
  std::vector<std::uint8_t> e(n / 2), s(n / 32);
  std::vector<Dst> y(n);
  EXPECT_TRUE(lb::mxfp4_from_ggml(g.data(), n, e.data(), s.data()));
  EXPECT_TRUE(lb::mx_dequantize<lb::mxfp4>(e.data(), s.data(), n, o, y.data()));
  return y;
}
template <class T>
std::vector<std::uint32_t> value_bits(const std::vector<T>& v) {
  std::vector<std::uint32_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same<T, float>::value) {
      r[i] = lowbit_test::float_bits(v[i]);
    } else {
      r[i] = v[i].bits();
    }
  }
  return r;
}

template <class Src>
void check_mx_ggml_direct(const std::vector<Src>& x, const lb::mx_options& o, const std::string& what) {
  const mx_ggml_ref ref = mx_ggml_reference(x, o);
  const std::vector<float> back = mx_ggml_reference_back<float>(ref.blocks, o);
  const std::vector<lb::bfloat16> back16 = mx_ggml_reference_back<lb::bfloat16>(ref.blocks, o);
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    const std::string w = what + " " + lb::isa_name(path);
    std::vector<lb::ggml_block_mxfp4> g(x.size() / 32);
    std::memset(g.data(), 0xEE, g.size() * sizeof(g[0]));
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), x.size(), o, g.data()).code(), ref.status.code()) << w;
    EXPECT_TRUE(same_blocks(g, ref.blocks)) << w;
    std::vector<float> y(x.size(), -1.0f);
    std::vector<lb::bfloat16> y16(x.size());
    EXPECT_TRUE(lb::mxfp4_dequantize_ggml(ref.blocks.data(), x.size(), o, y.data())) << w;
    EXPECT_TRUE(lb::mxfp4_dequantize_ggml(ref.blocks.data(), x.size(), o, y16.data())) << w;
    EXPECT_EQ(value_bits(y), value_bits(back)) << w;
    EXPECT_EQ(value_bits(y16), value_bits(back16)) << w;
  }
}

// Blocks of every kind the kernels treat apart: Gaussian at magnitudes from 2^-140 (below the
// AVX2 fast range) to 2^120, all zeros with signs, one NaN or Inf, float subnormals, ties.
std::vector<float> mx_edge_blocks(std::size_t blocks, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-140, 120);
  std::vector<float> x(32 * blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    float* v = x.data() + 32 * b;
    const int m = mag(gen);
    for (std::size_t j = 0; j < 32; ++j) v[j] = std::ldexp(nd(gen), m);
    switch (b % 7) {
      case 1: for (std::size_t j = 0; j < 32; ++j) v[j] = j % 3 == 0 ? -0.0f : 0.0f; break;
      case 2: v[gen() % 32] = b % 2 ? nan_f : -inf_f; break;
      case 3: for (std::size_t j = 0; j < 32; ++j) v[j] = std::ldexp(nd(gen), -140); break;
      case 4: for (std::size_t j = 0; j < 32; ++j) v[j] = static_cast<float>(static_cast<int>(j % 13) - 6) * 0.25f; break;
      default: break;
    }
  }
  return x;
}

TEST(MxGgmlDirect, SameBlocksAndValuesAsPlanarPlusConversion) {
  // Block counts that leave partial groups of eight, and one long enough for many groups.
  std::vector<lb::mx_options> opts = {lb::mx_presets::ocp(), lb::mx_presets::ggml(), lb::mx_presets::rceil(),
                                      lb::mx_presets::microxcaling(), with_rule(e8m0_rule::even),
                                      with_rule(e8m0_rule::floor_log2f), with_rounding(rounding::toward_zero),
                                      with_rounding(rounding::toward_pos_inf)};
  opts.push_back(lb::mx_presets::ggml());
  opts.back().scale_rule = e8m0_rule::floor_log2f;  // what gguf_quantize uses
  opts.push_back(lb::mx_options{});
  opts.back().non_finite_is_error = true;
  unsigned seed = 1;
  for (const lb::mx_options& o : opts) {
    for (std::size_t blocks : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{9}, std::size_t{17},
                               std::size_t{301}}) {
      const std::vector<float> x = mx_edge_blocks(blocks, seed++);
      const std::string w = "rule " + std::to_string(static_cast<int>(o.scale_rule)) + " rm " +
                            std::to_string(static_cast<int>(o.element_rounding)) + " blocks " + std::to_string(blocks);
      check_mx_ggml_direct(x, o, w);
      std::vector<lb::bfloat16> xb(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) xb[i] = lb::encode<lb::bfloat16>(x[i]);
      check_mx_ggml_direct(xb, o, w + " bfloat16");
    }
  }
}

TEST(MxGgmlDirect, ArbitraryBlockBytesDecodeAsTheConversionDoes) {
  // Every scale byte (0xFF: NaN; ggml would read 2^128) with random nibbles.
  std::mt19937 gen(7);
  std::vector<lb::ggml_block_mxfp4> g(256 + 5);
  for (std::size_t b = 0; b < g.size(); ++b) {
    g[b].e = static_cast<std::uint8_t>(b);
    for (auto& q : g[b].qs) q = static_cast<std::uint8_t>(gen());
  }
  const std::vector<float> want = mx_ggml_reference_back<float>(g, {});
  const std::vector<lb::bfloat16> want16 = mx_ggml_reference_back<lb::bfloat16>(g, {});
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    std::vector<float> y(32 * g.size());
    std::vector<lb::bfloat16> y16(32 * g.size());
    ASSERT_EQ(lb::mxfp4_dequantize_ggml(lb::span<const lb::ggml_block_mxfp4>(g), {}, lb::span<float>(y)).code(), errc::ok);
    ASSERT_EQ(lb::mxfp4_dequantize_ggml(lb::span<const lb::ggml_block_mxfp4>(g), {}, lb::span<lb::bfloat16>(y16)).code(),
              errc::ok);
    EXPECT_EQ(value_bits(y), value_bits(want)) << lb::isa_name(path);
    EXPECT_EQ(value_bits(y16), value_bits(want16)) << lb::isa_name(path);
  }
}

TEST(MxGgmlDirect, NonFiniteBlocksAreWrittenAndReported) {
  // Block 1 holds a NaN, block 2 an Inf: scale 0xFF and zero nibbles, as mxfp4_to_ggml copies
  // them; the status is non_finite_input with or without non_finite_is_error (ggml would read the
  // block as zeros), and every block is written.
  std::vector<float> x = mx_edge_blocks(4, 3);
  for (std::size_t j = 0; j < 32; ++j) x[j] = 1.0f;  // block 0: scale 2^-2 (0x7D), codes 6 (4 * 2^-2)
  x[32 + 5] = nan_f;
  x[64 + 31] = -inf_f;
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    for (bool strict : {false, true}) {
      lb::mx_options o;
      o.non_finite_is_error = strict;
      std::vector<lb::ggml_block_mxfp4> g(4);
      std::memset(g.data(), 0xEE, sizeof(g[0]) * 4);
      EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), x.size(), o, g.data()).code(), errc::non_finite_input);
      EXPECT_EQ(g[0].e, 0x7D);
      EXPECT_EQ(g[0].qs[0], 0x66);
      for (std::size_t b : {1, 2}) {
        EXPECT_EQ(g[b].e, 0xFF) << b;
        for (auto q : g[b].qs) EXPECT_EQ(q, 0) << b;
      }
      EXPECT_NE(g[3].e, 0xEE);  // written after the NaN blocks
      const mx_ggml_ref ref = mx_ggml_reference(x, o);
      EXPECT_TRUE(same_blocks(g, ref.blocks));
    }
  }
}

TEST(MxGgmlDirect, ErrorsWriteNothing) {
  std::vector<float> x(128, 1.0f);
  std::vector<lb::ggml_block_mxfp4> g(4);
  std::vector<float> y(128, 5.0f);
  auto untouched = [&] {
    for (const auto& b : g)
      if (b.e != 0xEE) return false;
    for (float v : y)
      if (v != 5.0f) return false;
    return true;
  };
  for (const lb::isa path : block_paths()) {
    const lb::scoped_isa use(path);
    std::memset(g.data(), 0xEE, sizeof(g[0]) * g.size());
    // options
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, with_rounding(rounding::stochastic), g.data()).code(),
              errc::bad_argument);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, with_rule(static_cast<e8m0_rule>(9)), g.data()).code(),
              errc::bad_argument);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, lb::mx_presets::ocp(16), g.data()).code(), errc::bad_block_size);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, lb::mx_presets::ocp(64), g.data()).code(), errc::bad_block_size);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(g.data(), 64, lb::mx_presets::ocp(16), y.data()).code(), errc::bad_block_size);
    // shape: not a whole number of blocks; the check comes before the null one
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 48, {}, g.data()).code(), errc::bad_block_size);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(static_cast<const float*>(nullptr), 33, {}, nullptr).code(), errc::bad_block_size);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(g.data(), 96 + 16, {}, y.data()).code(), errc::bad_block_size);
    const std::size_t huge = (std::numeric_limits<std::size_t>::max() / 64) * 32;
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), huge, {}, g.data()).code(), errc::bad_argument);
    // empty: ok, pointers may be null
    EXPECT_EQ(lb::mxfp4_quantize_ggml(static_cast<const float*>(nullptr), 0, {}, nullptr).code(), errc::ok);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(nullptr, 0, {}, static_cast<float*>(nullptr)).code(), errc::ok);
    // buffers
    EXPECT_EQ(lb::mxfp4_quantize_ggml(static_cast<const float*>(nullptr), 64, {}, g.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, {}, nullptr).code(), errc::bad_argument);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(nullptr, 64, {}, y.data()).code(), errc::bad_argument);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(g.data(), 64, {}, static_cast<float*>(nullptr)).code(), errc::bad_argument);
    const float* odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(x.data()) + 1);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(odd, 32, {}, g.data()).code(), errc::misaligned);
    float* odd_out = reinterpret_cast<float*>(reinterpret_cast<char*>(y.data()) + 2);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(g.data(), 32, {}, odd_out).code(), errc::misaligned);
    // overlapping: blocks over the source, values over the blocks
    auto* over = reinterpret_cast<lb::ggml_block_mxfp4*>(x.data() + 8);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(x.data(), 64, {}, over).code(), errc::overlapping_buffers);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(over, 32, {}, x.data()).code(), errc::overlapping_buffers);
    EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) { return v == 1.0f; }));
    // spans: sizes from the spans, size_mismatch after the options and shape checks
    EXPECT_EQ(lb::mxfp4_quantize_ggml(lb::span<const float>(x.data(), 64), {}, lb::span<lb::ggml_block_mxfp4>(g)).code(),
              errc::size_mismatch);
    EXPECT_EQ(lb::mxfp4_quantize_ggml(lb::span<const float>(x.data(), 48), {}, lb::span<lb::ggml_block_mxfp4>(g)).code(),
              errc::bad_block_size);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(lb::span<const lb::ggml_block_mxfp4>(g), {}, lb::span<float>(y.data(), 64)).code(),
              errc::size_mismatch);
    EXPECT_TRUE(untouched()) << lb::isa_name(path);
    // and the span forms work
    EXPECT_EQ(lb::mxfp4_quantize_ggml(lb::span<const float>(x), {}, lb::span<lb::ggml_block_mxfp4>(g)).code(), errc::ok);
    EXPECT_EQ(g[3].e, 0x7D);
    EXPECT_EQ(lb::mxfp4_dequantize_ggml(lb::span<const lb::ggml_block_mxfp4>(g), {}, lb::span<float>(y)).code(), errc::ok);
    EXPECT_EQ(y[127], 1.0f);
    std::fill(y.begin(), y.end(), 5.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(MxErrors, BadSizes) {
  std::vector<float> x(96, 1.0f);
  std::vector<std::uint8_t> e(96, 0xEE), s(16, 0xEE);
  auto q = [&](std::size_t n, const lb::mx_options& o) {
    return lb::mx_quantize<lb::mxfp4>(x.data(), n, o, e.data(), s.data()).code();
  };
  EXPECT_EQ(q(40, {}), errc::bad_block_size);                 // not a multiple of 32
  EXPECT_EQ(q(32, lb::mx_presets::ocp(0)), errc::bad_block_size);
  EXPECT_EQ(q(33, lb::mx_presets::ocp(3)), errc::bad_block_size);  // FP4 blocks must be even
  EXPECT_EQ((lb::mx_quantize<lb::mxfp6_e2m3>(x.data(), 36, lb::mx_presets::ocp(6), e.data(), s.data()).code()),
            errc::bad_block_size);  // 36 bits: not byte-aligned
  EXPECT_EQ(e, std::vector<std::uint8_t>(96, 0xEE));  // nothing written so far
  EXPECT_EQ(s, std::vector<std::uint8_t>(16, 0xEE));
  EXPECT_EQ((lb::mx_quantize<lb::mxfp8_e4m3>(x.data(), 36, lb::mx_presets::ocp(6), e.data(), s.data()).code()),
            errc::ok);  // FP8 blocks of 6 are fine
  std::vector<std::uint8_t> e2(16, 0xEE), s2(1, 0xEE);
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(x.data(), 31, {}, e2.data(), s2.data()).code(), errc::bad_block_size);
  EXPECT_EQ(e2, std::vector<std::uint8_t>(16, 0xEE));
  EXPECT_EQ(s2[0], 0xEE);
  // Matrix: 2 x 48 is 96 = 3 blocks, but rows of 48 are not whole blocks.
  EXPECT_EQ(lb::mx_quantize_matrix<lb::mxfp4>(x.data(), 2, 48, {}, e.data(), s.data()).code(), errc::bad_block_size);
  float out[96];
  EXPECT_EQ(lb::mx_dequantize<lb::mxfp4>(e.data(), s.data(), 40, {}, out).code(), errc::bad_block_size);
  EXPECT_EQ(lb::mx_dequantize_matrix<lb::mxfp4>(e.data(), s.data(), 2, 48, {}, out).code(), errc::bad_block_size);
  // Empty input is fine.
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(x.data(), 0, {}, e.data(), s.data()).code(), errc::ok);
}

TEST(MxErrors, BadArguments) {
  std::vector<float> x(32, 1.0f);
  std::vector<std::uint8_t> e(32), s(1);
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(static_cast<const float*>(nullptr), 32, {}, e.data(), s.data()).code(),
            errc::bad_argument);
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(x.data(), 32, {}, nullptr, s.data()).code(), errc::bad_argument);
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(x.data(), 32, {}, e.data(), nullptr).code(), errc::bad_argument);
  EXPECT_EQ(lb::mx_quantize<lb::mxfp4>(x.data(), 32, with_rounding(rounding::stochastic), e.data(), s.data()).code(),
            errc::bad_argument);
  float out[32];
  EXPECT_EQ(lb::mx_dequantize<lb::mxfp4>(e.data(), s.data(), 32, {}, static_cast<float*>(nullptr)).code(),
            errc::bad_argument);
  EXPECT_EQ(lb::mx_dequantize<lb::mxfp4>(nullptr, s.data(), 32, {}, out).code(), errc::bad_argument);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_EQ(lb::mx_quantize_matrix<lb::mxfp4>(x.data(), huge, 64, {}, e.data(), s.data()).code(), errc::bad_argument);
}

// ---------------------------------------------------------------------------------------------
// Properties on random blocks. The element grid of each format, written out here: the smallest
// normal exponent and the mantissa width (MXINT8: ulp 2^-6 everywhere, as emin 0, M 6).

struct grid {
  int emin;
  int mbits;
};
template <class Fmt>
grid grid_of();
template <>
grid grid_of<lb::mxfp8_e4m3>() { return {-6, 3}; }
template <>
grid grid_of<lb::mxfp8_e5m2>() { return {-14, 2}; }
template <>
grid grid_of<lb::mxfp6_e2m3>() { return {0, 3}; }
template <>
grid grid_of<lb::mxfp6_e3m2>() { return {-2, 2}; }
template <>
grid grid_of<lb::mxfp4_e2m1>() { return {0, 1}; }
template <>
grid grid_of<lb::mxint8>() { return {0, 6}; }

// The scale exponent each rule should pick, from the definitions (not from the code under test).
template <class Fmt>
int expected_exponent(float amax, e8m0_rule rule) {
  if (amax == 0.0f) return -127;
  int s = 0;
  if (rule == e8m0_rule::floor) {
    s = std::ilogb(amax) - Fmt::emax;
  } else {  // ceil: smallest s with amax <= max * 2^s
    s = std::ilogb(amax) - Fmt::emax - 2;
    while (static_cast<double>(amax) > std::ldexp(static_cast<double>(Fmt::element_max), s)) ++s;
  }
  return s < -127 ? -127 : s > 127 ? 127 : s;
}

template <class Fmt>
std::vector<float> random_blocks(std::mt19937& gen, std::size_t blocks) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-30, 30);
  std::uniform_int_distribution<int> spread(0, 12);
  std::vector<float> x(32 * blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    const int m = mag(gen);
    for (std::size_t j = 0; j < 32; ++j) x[32 * b + j] = std::ldexp(nd(gen), m - spread(gen));
  }
  return x;
}

template <class Fmt>
void check_half_ulp(e8m0_rule rule, rounding rm) {
  std::mt19937 gen(1234);
  const std::vector<float> x = random_blocks<Fmt>(gen, 200);
  lb::mx_options o;
  o.scale_rule = rule;
  o.element_rounding = rm;
  const quantized q = run<Fmt>(x, o);
  const grid g = grid_of<Fmt>();
  for (std::size_t b = 0; b < 200; ++b) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[32 * b + j]));
    const int s = expected_exponent<Fmt>(amax, rule);
    ASSERT_EQ(static_cast<int>(q.scales[b]) - 127, s) << Fmt::name << " block " << b;
    for (std::size_t j = 0; j < 32; ++j) {
      const double v = x[32 * b + j];
      const double y = std::ldexp(v, -s);  // exact
      const double dec = q.decoded[32 * b + j];
      if (std::fabs(y) > Fmt::element_max) {
        ASSERT_EQ(dec, std::copysign(std::ldexp(static_cast<double>(Fmt::element_max), s), v)) << Fmt::name;
        continue;
      }
      const int e = y == 0.0 ? g.emin : std::max(std::ilogb(y), g.emin);
      const double half_ulp = std::ldexp(1.0, e - g.mbits - 1 + s);
      ASSERT_LE(std::fabs(dec - v), half_ulp) << Fmt::name << " v=" << v << " dec=" << dec;
    }
  }
}

template <class Fmt>
void check_half_ulp_all() {
  for (e8m0_rule r : {e8m0_rule::floor, e8m0_rule::ceil})
    for (rounding rm : {rounding::nearest_even, rounding::nearest_away, rounding::nearest_toward_zero})
      check_half_ulp<Fmt>(r, rm);
}

TEST(MxProperty, WithinHalfUlpTimesScaleUnlessClamped) {
  check_half_ulp_all<lb::mxfp8_e4m3>();
  check_half_ulp_all<lb::mxfp8_e5m2>();
  check_half_ulp_all<lb::mxfp6_e2m3>();
  check_half_ulp_all<lb::mxfp6_e3m2>();
  check_half_ulp_all<lb::mxfp4_e2m1>();
  check_half_ulp_all<lb::mxint8>();
}

// Element decoding for building representable blocks (the codec's decode, tested elsewhere).
template <class Fmt>
double element_value(unsigned code) {
  return static_cast<double>(static_cast<float>(Fmt::element::from_bits(static_cast<std::uint8_t>(code))));
}
template <>
double element_value<lb::mxint8>(unsigned code) {
  return static_cast<double>(code < 128 ? static_cast<int>(code) : static_cast<int>(code) - 256) / 64.0;
}

template <class Fmt>
void check_representable_exact() {
  // Blocks of random element codes times 2^s, one element in the top binade so that the floor
  // rule picks exactly s: quantizing gives back the same codes and the same values.
  std::mt19937 gen(99);
  const unsigned ncodes = 1u << Fmt::element_bits;
  std::uniform_int_distribution<unsigned> code(0, ncodes - 1);
  std::uniform_int_distribution<int> scale(-127, 100);
  for (int trial = 0; trial < 300; ++trial) {
    const int s = scale(gen);
    std::vector<unsigned> codes(32);
    std::vector<float> x(32);
    for (std::size_t j = 0; j < 32; ++j) {
      unsigned c = 0;
      double v = 0;
      do {
        c = code(gen);
        v = element_value<Fmt>(c);
      } while (!std::isfinite(v) || (Fmt::id == lb::mx_format::mxint8 && c == 0x80) ||
               (j == 0 && !(std::fabs(v) >= std::ldexp(1.0, Fmt::emax))));
      codes[j] = c;
      x[j] = static_cast<float>(std::ldexp(v, s));
      ASSERT_EQ(static_cast<double>(x[j]), std::ldexp(v, s));  // exactly a float
    }
    const quantized q = run<Fmt>(x);
    ASSERT_EQ(static_cast<int>(q.scales[0]), s + 127) << Fmt::name;
    for (std::size_t j = 0; j < 32; ++j) {
      ASSERT_EQ(code_at<Fmt>(q.elements, j), codes[j]) << Fmt::name << " j=" << j;
      ASSERT_EQ(q.decoded[j], x[j]);
      ASSERT_EQ(std::signbit(q.decoded[j]), std::signbit(x[j]));
    }
  }
}

TEST(MxProperty, RepresentableBlocksAreExact) {
  check_representable_exact<lb::mxfp8_e4m3>();
  check_representable_exact<lb::mxfp8_e5m2>();
  check_representable_exact<lb::mxfp6_e2m3>();
  check_representable_exact<lb::mxfp6_e3m2>();
  check_representable_exact<lb::mxfp4_e2m1>();
  check_representable_exact<lb::mxint8>();
}

template <class Fmt>
void check_rules_differ_where_they_should() {
  // floor and ceil pick the same exponent unless the block max, scaled into [2^emax, 2^(emax+1)),
  // lies above the element max: there floor saturates and ceil uses the next power of two.
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-100, 100);
  const double top = static_cast<double>(Fmt::element_max) / std::ldexp(1.0, Fmt::emax);  // 1.5 for FP4
  for (int i = 0; i < 2000; ++i) {
    const float m = mant(gen);
    const float amax = std::ldexp(m, ex(gen));
    const int f = lb::mx_block_scale<Fmt>(amax, e8m0_rule::floor);
    const int c = lb::mx_block_scale<Fmt>(amax, e8m0_rule::ceil);
    if (static_cast<double>(m) > top)
      ASSERT_EQ(c, f + 1) << Fmt::name << " amax " << amax;
    else
      ASSERT_EQ(c, f) << Fmt::name << " amax " << amax;
  }
}

TEST(MxProperty, FloorAndCeilDifferOnlyAboveTheElementMax) {
  check_rules_differ_where_they_should<lb::mxfp8_e4m3>();
  check_rules_differ_where_they_should<lb::mxfp8_e5m2>();
  check_rules_differ_where_they_should<lb::mxfp6_e2m3>();
  check_rules_differ_where_they_should<lb::mxfp6_e3m2>();
  check_rules_differ_where_they_should<lb::mxfp4_e2m1>();
  check_rules_differ_where_they_should<lb::mxint8>();
}

TEST(MxProperty, CeilNeverSaturatesFloorDoes) {
  // Over random blocks, no ceil-rule element reaches past the element max before rounding, and
  // the floor rule does saturate some FP4 block maxima (those in (6, 8) * 2^s).
  std::mt19937 gen(77);
  const std::vector<float> x = random_blocks<lb::mxfp4>(gen, 400);
  const quantized c = run<lb::mxfp4>(x, lb::mx_presets::rceil());
  const quantized f = run<lb::mxfp4>(x);
  int floor_saturated = 0;
  for (std::size_t b = 0; b < 400; ++b) {
    for (std::size_t j = 0; j < 32; ++j) {
      const double v = x[32 * b + j];
      ASSERT_LE(std::fabs(std::ldexp(v, 127 - c.scales[b])), 6.0);
      if (std::fabs(std::ldexp(v, 127 - f.scales[b])) > 6.0) ++floor_saturated;
    }
  }
  EXPECT_GT(floor_saturated, 0);
}

TEST(MxProperty, IndependentOfFtzAndDaz) {
  // Block max 2^-128 (a float subnormal): floor(log2) = -128, so the E4M3 scale clamps to
  // 2^-127 (0x00) and 2^-128 / 2^-127 = 0.5 = E4M3 0x30; -3 * 2^-136 is 3 * 2^-9 times the scale,
  // the subnormal 0x83. Decoding gives the float subnormals 2^-128 (0x00200000) and 3 * 2^-136
  // (0x80006000: 3 * 2^13 units of 2^-149). With FTZ and DAZ set, nothing changes.
  for (const lowbit_test::mxcsr_state& state : lowbit_test::mxcsr_states) {
    SCOPED_TRACE(state.name);
    std::vector<float> x(32, 0.0f);
    x[0] = lowbit_test::float_from_bits(0x00200000u);  // 2^-128
    x[1] = lowbit_test::float_from_bits(0x80006000u);  // -3 * 2^-136
    std::uint8_t e[32] = {}, s = 0;
    float out[32] = {};
    lb::status q, d;
    {
      lowbit_test::mxcsr_scope env(state.bits);
      q = lb::mx_quantize<lb::mxfp8_e4m3>(x.data(), 32, {}, e, &s);
      d = lb::mx_dequantize<lb::mxfp8_e4m3>(e, &s, 32, {}, out);
    }
    ASSERT_TRUE(q.ok());
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(s, 0x00);
    EXPECT_EQ(e[0], 0x30);
    EXPECT_EQ(e[1], 0x83);
    EXPECT_EQ(lowbit_test::float_bits(out[0]), 0x00200000u);
    EXPECT_EQ(lowbit_test::float_bits(out[1]), 0x80006000u);
  }
}

}  // namespace
