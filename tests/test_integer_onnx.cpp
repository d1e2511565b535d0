// What an ONNX user needs from the integer schemes (issue 10): two's complement code storage,
// partial last groups, groups down the columns (ONNX blocked axis 0, per-axis axis 1), a
// placeholder scale for all-zero groups, and int_presets::onnx.
//
// Expected codes are written by hand from ONNX's QuantizeLinear formula,
// y = saturate(round_half_even(x / y_scale) + y_zero_point), with scales chosen so that the
// arithmetic is exact; none is computed by the code under test.
#include <lowbit/schemes/export.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;
using lowbit::granularity;
using lowbit::int_code_storage;
using lowbit::int_group_axis;
using lowbit::int_params;
using lowbit::int_range;
using lowbit::int_scheme;
using lowbit::onnx_type;
using lowbit::scale_storage;
namespace presets = lowbit::int_presets;

using bytes = std::vector<std::uint8_t>;
using floats = std::vector<float>;

// Every path: scalar, avx2 and avx512 (path_available skips those this build or CPU lacks).
constexpr lowbit::isa both_paths[] = {lowbit::isa::scalar, lowbit::isa::avx2, lowbit::isa::avx512};
bool path_available(lowbit::isa i) { return lowbit::is_supported(i); }

struct quantized {
  lowbit::status st;
  bytes codes, packed;
  floats scales, zeros, y;
};

// quantize_int and quantize_int_packed of x [rows, cols] under p, and the values dequantized
// from the one-per-byte codes (checked equal to those from the packed codes).
quantized run(const floats& x, std::size_t rows, std::size_t cols, const int_params& p) {
  quantized q;
  const lowbit::result<lowbit::int_grouping> g = lowbit::int_groups(p, rows, cols);
  EXPECT_TRUE(g.ok());
  const std::size_t count = g.value.group_count;
  q.codes.assign(x.size(), 0xAA);
  q.packed.assign(lowbit::packed_bytes(x.size(), p.bits), 0xAA);
  q.scales.assign(count, -1.0f);
  q.zeros.assign(lowbit::has_zero_points(p) ? count : 0, -1.0f);
  q.st = lowbit::quantize_int(x, rows, cols, p, q.codes, q.scales, q.zeros);
  if (!q.st) return q;
  floats s2(count), z2(q.zeros.size());
  EXPECT_TRUE(lowbit::quantize_int_packed(x, rows, cols, p, q.packed, s2, z2).ok());
  EXPECT_EQ(s2, q.scales);
  EXPECT_EQ(z2, q.zeros);
  q.y.assign(x.size(), 0.0f);
  EXPECT_TRUE(lowbit::dequantize_int(q.codes, q.scales, q.zeros, rows, cols, p, q.y).ok());
  floats y2(x.size());
  EXPECT_TRUE(lowbit::dequantize_int_packed(q.packed, q.scales, q.zeros, rows, cols, p, y2).ok());
  EXPECT_EQ(y2, q.y);
  return q;
}

// ---------------------------------------------------------------------------------------------
// Hand-computed ONNX examples

// INT8 per tensor: s = 2 * 127.5 / 255 = 1; 127.5 -> 128 saturates to 127, -127.5 -> -128 (even),
// 2.5 -> 2, -0.5 -> -0 = 0. Codes are int8 bytes.
TEST(OnnxInt8, PerTensorTwosComplementBytes) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    int_params p = presets::onnx(onnx_type::int8);
    p.granularity = granularity::per_tensor;
    const floats x = {127.5f, -127.5f, 0.0f, 1.5f, 2.5f, -0.5f, 3.0f};
    const quantized q = run(x, 1, x.size(), p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0x7F, 0x80, 0x00, 0x02, 0x02, 0x00, 0x03}));
    EXPECT_EQ(q.packed, q.codes);
    EXPECT_EQ(q.scales, floats{1.0f});
    EXPECT_TRUE(q.zeros.empty());
    EXPECT_EQ(q.y, (floats{127.0f, -128.0f, 0.0f, 2.0f, 2.0f, 0.0f, 3.0f}));
  }
}

// INT4 blocked along axis 1 with block 3 on [2, 5]: the last block of each row holds 2. Row 0:
// {7.5, -7.5, 1} s = 1 -> 7, -8, 1; {3.75, -1} s = 0.5 -> 7.5 -> 7, -2. Row 1: {0, 0, 0} is
// all zero -> placeholder scale 1, codes 0; {-1.875, 0.25} s = 0.25 -> -7.5 -> -8, 1.
TEST(OnnxInt4, PartialLastBlockPackedLowNibbleFirst) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const int_params p = presets::onnx(onnx_type::int4, 1, 3);
    const floats x = {7.5f, -7.5f, 1.0f, 3.75f, -1.0f, 0.0f, 0.0f, 0.0f, -1.875f, 0.25f};
    const lowbit::result<lowbit::int_grouping> g = lowbit::int_groups(p, 2, 5);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g.value.group_count, 4u);
    EXPECT_EQ(g.value.group_length, 3u);
    const quantized q = run(x, 2, 5, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0x07, 0xF8, 0x01, 0x07, 0xFE, 0x00, 0x00, 0x00, 0xF8, 0x01}));
    // nibbles 7 8 | 1 7 | E 0 | 0 0 | 8 1, element 2i in the low nibble of byte i
    EXPECT_EQ(q.packed, (bytes{0x87, 0x71, 0x0E, 0x00, 0x18}));
    EXPECT_EQ(q.scales, (floats{1.0f, 0.5f, 1.0f, 0.25f}));
    EXPECT_EQ(q.y, (floats{7.0f, -8.0f, 1.0f, 3.5f, -1.0f, 0.0f, 0.0f, 0.0f, -2.0f, 0.25f}));
  }
}

// INT8 blocked along axis 0 with block 2 on [3, 2]: scales [ceil(3/2), 2] row-major. Block
// (0, c0) = {127.5, -1} s = 1 -> 127, -1; (0, c1) = {2, -255} s = 2 -> 1, -127.5 -> -128;
// (1, c0) = {0.5} s = RN(1/255) -> 127.5 (or a neighbour) saturates to 127; (1, c1) = {0} -> 1, 0.
TEST(OnnxInt8, BlocksAlongAxis0) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const int_params p = presets::onnx(onnx_type::int8, 0, 2);
    EXPECT_EQ(p.group_axis, int_group_axis::rows);
    const floats x = {127.5f, 2.0f, -1.0f, -255.0f, 0.5f, 0.0f};
    const quantized q = run(x, 3, 2, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0x7F, 0x01, 0xFF, 0x80, 0x7F, 0x00}));
    const float s = static_cast<float>(1.0 / 255.0);
    EXPECT_EQ(q.scales, (floats{1.0f, 2.0f, s, 1.0f}));
    EXPECT_EQ(q.y, (floats{127.0f, 2.0f, -1.0f, -256.0f, 127.0f * s, 0.0f}));
  }
}

// Per-axis with ONNX axis 1: one scale per column. Column 0 {127.5, -1} s = 1; column 1 all
// zero -> 1; column 2 {-255, 4} s = 2 -> -128, 2.
TEST(OnnxInt8, PerAxis1IsOneScalePerColumn) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const int_params p = presets::onnx(onnx_type::int8);
    EXPECT_EQ(p.granularity, granularity::per_channel);
    const floats x = {127.5f, 0.0f, -255.0f, -1.0f, 0.0f, 4.0f};
    const quantized q = run(x, 2, 3, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0x7F, 0x00, 0x80, 0xFF, 0x00, 0x02}));
    EXPECT_EQ(q.scales, (floats{1.0f, 1.0f, 2.0f}));
    // axis 0 (or -2): one scale per row, the ordinary per_channel
    const int_params r = presets::onnx(onnx_type::int8, -2);
    EXPECT_EQ(r.group_axis, int_group_axis::cols);
    const quantized qr = run(x, 2, 3, r);
    ASSERT_TRUE(qr.st.ok());
    EXPECT_EQ(qr.scales, (floats{2.0f, static_cast<float>(8.0 / 255.0)}));  // amax 255 and 4
  }
}

// A signed zero-point: INT8 affine over [-1, 254] has s = 1, z = 1 on the offset grid, stored as
// the ONNX zero point 1 - 128 = -127; y = round(x) - 127: -128, -127, 127.
TEST(OnnxInt8, AffineZeroPointIsNegative) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    int_params p = presets::onnx(onnx_type::int8);
    p.scheme = int_scheme::affine;
    p.granularity = granularity::per_tensor;
    const quantized q = run({-1.0f, 0.0f, 254.0f}, 1, 3, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0x80, 0x81, 0x7F}));
    EXPECT_EQ(q.zeros, floats{-127.0f});
    EXPECT_EQ(q.y, (floats{-1.0f, 0.0f, 254.0f}));
    // stored zero points are read back in -128..127: 127 fine, 128 rejected
    floats y(3);
    floats s{1.0f}, z{127.0f};
    EXPECT_TRUE(lowbit::dequantize_int(q.codes, s, z, 1, 3, p, y).ok());
    EXPECT_EQ(y, (floats{-255.0f, -254.0f, 0.0f}));
    z[0] = 128.0f;
    EXPECT_EQ(lowbit::dequantize_int(q.codes, s, z, 1, 3, p, y).code(), errc::bad_argument);
    z[0] = -128.5f;
    EXPECT_EQ(lowbit::dequantize_int(q.codes, s, z, 1, 3, p, y).code(), errc::bad_argument);
  }
}

// UINT4 blocked along axis 0, block 2, on [3, 1]: {-1, 14} s = 1, z = 1 -> 0, 15; {7.5} -> [0, 7.5],
// s = 0.5, z = 0 -> 15. Unsigned types stay offset binary.
TEST(OnnxUint4, PartialBlockAlongAxis0) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const int_params p = presets::onnx(onnx_type::uint4, 0, 2);
    EXPECT_EQ(p.code_storage, int_code_storage::offset_binary);
    const quantized q = run({-1.0f, 14.0f, 7.5f}, 3, 1, p);
    ASSERT_TRUE(q.st.ok());
    EXPECT_EQ(q.codes, (bytes{0, 15, 15}));
    EXPECT_EQ(q.packed, (bytes{0xF0, 0x0F}));
    EXPECT_EQ(q.scales, (floats{1.0f, 0.5f}));
    EXPECT_EQ(q.zeros, (floats{1.0f, 0.0f}));
  }
}

// quantize_int_fixed with given scales is QuantizeLinear itself: saturation to -128..127.
TEST(OnnxInt8, FixedScalesAreQuantizeLinear) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    int_params p = presets::onnx(onnx_type::int8);
    p.granularity = granularity::per_tensor;
    const floats x = {300.0f, -300.0f, 1.5f, -2.5f};
    bytes codes(4);
    EXPECT_TRUE(lowbit::quantize_int_fixed(x, floats{1.0f}, floats{}, 1, 4, p, codes).ok());
    EXPECT_EQ(codes, (bytes{0x7F, 0x80, 0x02, 0xFE}));
  }
}

// ---------------------------------------------------------------------------------------------
// Equivalences that hold by definition

floats random_matrix(std::size_t n, unsigned seed, std::size_t zero_every = 0) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  floats x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = d(g);
  if (zero_every != 0)
    for (std::size_t i = 0; i < n; i += zero_every) x[i] = 0.0f;
  return x;
}

// Two's complement is the offset code minus 2^(b-1) in a byte, the zero-point minus 2^(b-1),
// the packed fields XOR 2^(b-1); scales and values do not change. Regular groups (fused path).
TEST(TwosComplement, IsOffsetBinaryShifted) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    for (int bits : {2, 3, 4, 5, 8})
      for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine}) {
        int_params a = presets::gptq(bits, 32);
        a.scheme = sc;
        int_params b = a;
        b.code_storage = int_code_storage::twos_complement;
        const floats x = random_matrix(6 * 96, 11u + static_cast<unsigned>(bits));
        const quantized qa = run(x, 6, 96, a);
        const quantized qb = run(x, 6, 96, b);
        ASSERT_TRUE(qa.st.ok() && qb.st.ok());
        const unsigned h = 1u << (bits - 1);
        for (std::size_t k = 0; k < x.size(); ++k)
          ASSERT_EQ(qb.codes[k], static_cast<std::uint8_t>(qa.codes[k] - h)) << bits << " " << k;
        bytes flipped(qa.codes.size());
        for (std::size_t k = 0; k < x.size(); ++k) flipped[k] = static_cast<std::uint8_t>(qa.codes[k] ^ h);
        bytes want(qa.packed.size());
        ASSERT_TRUE(lowbit::pack_codes(flipped, bits, want).ok());
        EXPECT_EQ(qb.packed, want);
        EXPECT_EQ(qa.scales, qb.scales);
        for (std::size_t g = 0; g < qa.zeros.size(); ++g) EXPECT_EQ(qb.zeros[g], qa.zeros[g] - static_cast<float>(h));
        EXPECT_EQ(qa.y, qb.y);
      }
  }
}

// Dequantizing two's complement: bfloat16 output as for offset binary, and a stored zero-point
// out of -8..7 is bad_argument with the groups before it written, on both paths.
TEST(TwosComplement, DequantizeBf16AndBadZeroPoint) {
  const floats x = random_matrix(4 * 64, 8u);
  int_params a = presets::awq(4, 32);
  int_params b = a;
  b.code_storage = int_code_storage::twos_complement;
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const quantized qa = run(x, 4, 64, a), qb = run(x, 4, 64, b);
    ASSERT_TRUE(qa.st.ok() && qb.st.ok());
    std::vector<lowbit::bfloat16> ya(x.size()), yb(x.size());
    ASSERT_TRUE(lowbit::dequantize_int_packed(qa.packed, qa.scales, qa.zeros, 4, 64, a, ya).ok());
    ASSERT_TRUE(lowbit::dequantize_int_packed(qb.packed, qb.scales, qb.zeros, 4, 64, b, yb).ok());
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(ya[k].bits(), yb[k].bits());
    floats z = qb.zeros;
    z[5] = 8.0f;  // 8 - 8 = 0 would be fine offset-binary; stored two's complement tops out at 7
    floats y(x.size(), -7.0f);
    EXPECT_EQ(lowbit::dequantize_int_packed(qb.packed, qb.scales, z, 4, 64, b, y).code(), errc::bad_argument);
    for (std::size_t k = 0; k < 5 * 32; ++k) ASSERT_EQ(y[k], qb.y[k]);
    for (std::size_t k = 5 * 32; k < 6 * 32; ++k) ASSERT_EQ(y[k], -7.0f);
    y.assign(x.size(), -7.0f);
    EXPECT_EQ(lowbit::dequantize_int(qb.codes, qb.scales, z, 4, 64, b, y).code(), errc::bad_argument);
    for (std::size_t k = 0; k < 5 * 32; ++k) ASSERT_EQ(y[k], qb.y[k]);
  }
}

// Groups along rows are groups along cols of the transpose, scales transposed.
TEST(GroupAxis, RowsIsTheTransposeAlongCols) {
  const std::size_t rows = 37, cols = 5, g = 8;
  const floats x = random_matrix(rows * cols, 3u, 7);
  floats xt(x.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
  for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset}) {
    int_params p = presets::gptq(4, g);
    p.scheme = sc;
    p.partial_groups = true;
    int_params pr = p;
    pr.group_axis = int_group_axis::rows;
    const quantized a = run(xt, cols, rows, p);
    const quantized b = run(x, rows, cols, pr);
    ASSERT_TRUE(a.st.ok() && b.st.ok());
    const std::size_t blocks = (rows + g - 1) / g;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        ASSERT_EQ(b.codes[r * cols + c], a.codes[c * rows + r]);
        ASSERT_EQ(b.y[r * cols + c], a.y[c * rows + r]);
      }
    for (std::size_t k = 0; k < blocks; ++k)
      for (std::size_t c = 0; c < cols; ++c) {
        EXPECT_EQ(b.scales[k * cols + c], a.scales[c * blocks + k]);
        if (!a.zeros.empty()) {
          EXPECT_EQ(b.zeros[k * cols + c], a.zeros[c * blocks + k]);
        }
      }
  }
}

// partial_groups changes nothing where G divides the axis.
TEST(PartialGroups, SameResultWhenGDivides) {
  const floats x = random_matrix(4 * 64, 5u);
  int_params p = presets::gptq(4, 32);
  int_params q = p;
  q.partial_groups = true;
  const quantized a = run(x, 4, 64, p), b = run(x, 4, 64, q);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
}

// The scalar and the AVX2 path give the same bytes on odd shapes, every option combination.
TEST(Paths, ScalarAndAvx2AgreeOnOddShapes) {
  REQUIRE_AVX2();
  const std::size_t shapes[][2] = {{7, 13}, {33, 5}, {3, 257}, {300, 3}, {1, 1}, {16, 96}};
  unsigned seed = 100;
  for (const auto& sh : shapes)
    for (int bits : {2, 3, 4, 8})
      for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset})
        for (int variant = 0; variant < 6; ++variant) {
          int_params p = presets::gptq(bits, variant % 2 == 0 ? 4 : 32);
          p.scheme = sc;
          p.partial_groups = true;
          p.group_axis = variant % 3 == 0 ? int_group_axis::rows : int_group_axis::cols;
          if (sc != int_scheme::affine_offset && variant != 1) p.code_storage = int_code_storage::twos_complement;
          if (variant >= 4) p.zero_group_scale = 0.5f;
          if (variant == 5) p.search = lowbit::scale_search::mse_grid;
          if (variant == 2 || variant == 3) {
            p.granularity = granularity::per_channel;
            p.group_size = 0;
          }
          floats x = random_matrix(sh[0] * sh[1], ++seed, 5);
          for (std::size_t k = 0; k < x.size() && k < 4 * sh[1]; ++k) x[k] = 0.0f;  // all-zero groups
          quantized a, b;
          {
            const lowbit::scoped_isa path(lowbit::isa::scalar);
            a = run(x, sh[0], sh[1], p);
          }
          ASSERT_TRUE(a.st.ok()) << a.st.message();
          for (const lowbit::isa simd : lowbit_test::simd_paths()) {
            {
              const lowbit::scoped_isa path(simd);
              b = run(x, sh[0], sh[1], p);
            }
            ASSERT_EQ(a.codes, b.codes) << sh[0] << "x" << sh[1] << " bits " << bits << " variant " << variant << " "
                                        << lowbit::isa_name(simd);
            ASSERT_EQ(a.packed, b.packed);
            ASSERT_EQ(a.scales, b.scales);
            ASSERT_EQ(a.zeros, b.zeros);
            ASSERT_EQ(a.y, b.y);
          }
          if (p.zero_group_scale != 0.0f) {
            for (float s : a.scales) ASSERT_NE(s, 0.0f);
          }
        }
}

// Round trips: every value reads back within half a step (within the clipping of full range).
TEST(RoundTrip, WithinHalfAStep) {
  const floats x = random_matrix(29 * 11, 9u, 13);
  for (const int_params& p : {presets::onnx(onnx_type::int8, 0, 4), presets::onnx(onnx_type::uint8, 1, 4),
                              presets::onnx(onnx_type::int4, 1), presets::onnx(onnx_type::uint4, 0)}) {
    const quantized q = run(x, 29, 11, p);
    ASSERT_TRUE(q.st.ok());
    const lowbit::detail::int_layout L = lowbit::detail::make_layout(p, 29, 11);
    for (std::size_t g = 0; g < L.count; ++g) {
      std::size_t first = 0, length = 0, stride = 0;
      L.group(g, &first, &length, &stride);
      for (std::size_t i = 0; i < length; ++i) {
        const std::size_t k = first + i * stride;
        EXPECT_LE(std::fabs(q.y[k] - x[k]), q.scales[g]) << g << " " << i;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(OnnxErrors, OptionCombinations) {
  int_params p = presets::onnx(onnx_type::int4);
  p.scheme = int_scheme::affine_offset;  // a float offset has no two's complement form
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p = presets::onnx(onnx_type::int8, 2);
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p = presets::onnx(onnx_type::int8, -3);
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p = presets::onnx(onnx_type::int8);
  p.code_storage = static_cast<int_code_storage>(2);
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p = presets::onnx(onnx_type::int8);
  p.group_axis = static_cast<int_group_axis>(2);
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  // the placeholder: > 0 and exactly representable in the scale format
  p = presets::onnx(onnx_type::int8);
  p.scale_format = scale_storage::fp16;
  p.zero_group_scale = 0.1f;
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p.zero_group_scale = 0.125f;
  EXPECT_TRUE(lowbit::check_int_params(p).ok());
  p.zero_group_scale = 1e-30f;  // fp16 cannot hold it
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p.zero_group_scale = -1.0f;
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p.zero_group_scale = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
  p.zero_group_scale = std::numeric_limits<float>::infinity();
  EXPECT_EQ(lowbit::check_int_params(p).code(), errc::bad_argument);
}

TEST(OnnxErrors, ShapesAndOrder) {
  int_params p = presets::gptq(4, 4);
  EXPECT_EQ(lowbit::int_groups(p, 2, 6).status.code(), errc::bad_group_size);  // default: must divide
  p.partial_groups = true;
  ASSERT_TRUE(lowbit::int_groups(p, 2, 6).ok());
  EXPECT_EQ(lowbit::int_groups(p, 2, 6).value.group_count, 4u);
  p.partial_groups = false;
  p.group_axis = int_group_axis::rows;
  EXPECT_EQ(lowbit::int_groups(p, 6, 4).status.code(), errc::bad_group_size);  // rows % 4
  ASSERT_TRUE(lowbit::int_groups(p, 8, 3).ok());                                // cols free
  EXPECT_EQ(lowbit::int_groups(p, 8, 3).value.group_count, 6u);
  // sizes that overflow
  p.partial_groups = true;
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_EQ(lowbit::int_groups(p, big, 3).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::int_storage_for(p, 3, big).status.code(), errc::bad_argument);
  // options before shape
  int_params q = p;
  q.zero_group_scale = -2.0f;
  EXPECT_EQ(lowbit::int_groups(q, big, 3).status.code(), errc::bad_argument);
  q = presets::gptq(4, 4);
  q.code_storage = int_code_storage::twos_complement;
  q.scheme = int_scheme::affine_offset;
  EXPECT_EQ(lowbit::int_groups(q, 2, 6).status.code(), errc::bad_argument);
  // n = 0 is ok with null pointers
  EXPECT_TRUE(lowbit::quantize_int(nullptr, 0, 5, p, nullptr, nullptr, nullptr).ok());
  // storage: ceil(rows/G) * cols scales
  const lowbit::result<lowbit::storage> s = lowbit::int_storage_for(p, 9, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value.scale_bytes, 3u * 3u * 2u);
}

// A data error in a strided group: the groups before it are written, it and those after untouched.
TEST(OnnxErrors, DataErrorLeavesLaterGroupsUntouched) {
  for (lowbit::isa i : both_paths) {
    if (!path_available(i)) continue;
    const lowbit::scoped_isa path(i);
    const int_params p = presets::onnx(onnx_type::int8, 0, 2);  // groups (block, column), column fastest
    floats x = random_matrix(4 * 3, 1u);
    x[1 * 3 + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 2: group (0, 2)
    bytes codes(12, 0xAA);
    floats scales(6, -1.0f);
    EXPECT_EQ(lowbit::quantize_int(x, 4, 3, p, codes, scales, floats{}).code(), errc::non_finite_input);
    EXPECT_NE(scales[0], -1.0f);
    EXPECT_NE(scales[1], -1.0f);
    for (std::size_t g = 2; g < 6; ++g) EXPECT_EQ(scales[g], -1.0f);
    for (std::size_t r = 0; r < 4; ++r) {
      EXPECT_EQ(codes[r * 3 + 2], 0xAA);
      if (r >= 2) {
        EXPECT_EQ(codes[r * 3 + 0], 0xAA);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The container and the exports

TEST(OnnxMatrix, QuantizeDequantizeAndCodes) {
  const std::size_t rows = 19, cols = 7;
  const floats x = random_matrix(rows * cols, 21u, 9);
  for (const int_params& p : {presets::onnx(onnx_type::int4, 0, 4), presets::onnx(onnx_type::int8, 1, 3),
                              presets::onnx(onnx_type::int4), presets::onnx(onnx_type::uint4, 1, 2)}) {
    const quantized q = run(x, rows, cols, p);
    ASSERT_TRUE(q.st.ok());
    auto m = lowbit::quantized_matrix::quantize(x, rows, cols, p);
    ASSERT_TRUE(m.ok()) << m.status.message();
    EXPECT_EQ(bytes(m.value.packed_codes().begin(), m.value.packed_codes().end()), q.packed);
    EXPECT_EQ(floats(m.value.scales().begin(), m.value.scales().end()), q.scales);
    bytes codes(x.size());
    ASSERT_TRUE(m.value.unpack(codes).ok());
    EXPECT_EQ(codes, q.codes);  // one per byte as quantize_int writes them: sign-extended
    EXPECT_EQ(m.value.code(1, 2), q.codes[1 * cols + 2]);
    floats y(x.size());
    ASSERT_TRUE(m.value.dequantize(y).ok());
    EXPECT_EQ(y, q.y);
    // from bfloat16 values: the same as quantizing the decoded floats
    std::vector<lowbit::bfloat16> xb(x.size());
    floats xd(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) {
      xb[k] = lowbit::encode<lowbit::bfloat16>(x[k]);
      xd[k] = static_cast<float>(xb[k]);
    }
    auto mb = lowbit::quantized_matrix::quantize(xb.data(), rows, cols, p);
    ASSERT_TRUE(mb.ok());
    const quantized qd = run(xd, rows, cols, p);
    EXPECT_EQ(bytes(mb.value.packed_codes().begin(), mb.value.packed_codes().end()), qd.packed);
    EXPECT_EQ(floats(mb.value.scales().begin(), mb.value.scales().end()), qd.scales);
    EXPECT_EQ(floats(mb.value.zeros().begin(), mb.value.zeros().end()), qd.zeros);
    // from_codes takes the same codes back
    auto mc = lowbit::quantized_matrix::from_codes(q.codes, q.scales, q.zeros, rows, cols, p);
    ASSERT_TRUE(mc.ok());
    EXPECT_EQ(bytes(mc.value.packed_codes().begin(), mc.value.packed_codes().end()), q.packed);
  }
}

TEST(OnnxMatrix, FromCodesRejectsBytesThatAreNotSignExtended) {
  const int_params p = presets::onnx(onnx_type::int4, 1, 2);
  const floats scales{1.0f};
  EXPECT_TRUE(lowbit::quantized_matrix::from_codes(bytes{0xF8, 0x07}, scales, floats{}, 1, 2, p).ok());
  EXPECT_EQ(lowbit::quantized_matrix::from_codes(bytes{0x08, 0x07}, scales, floats{}, 1, 2, p).status.code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::quantized_matrix::from_codes(bytes{0x7F, 0x07}, scales, floats{}, 1, 2, p).status.code(),
            errc::bad_argument);
}

TEST(OnnxExports, RejectWhatTheLayoutsCannotWrite) {
  const floats x = random_matrix(32 * 64, 4u);
  int_params twos = presets::gptq(4, 32);
  twos.code_storage = int_code_storage::twos_complement;
  auto m = lowbit::quantized_matrix::quantize(x, 32, 64, twos);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(lowbit::export_gptq(m.value).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::export_awq(m.value).status.code(), errc::bad_argument);
  EXPECT_EQ(lowbit::export_ggml_q4_0(m.value).status.code(), errc::bad_argument);

  int_params rows = presets::gptq(4, 32);
  rows.group_axis = int_group_axis::rows;
  m = lowbit::quantized_matrix::quantize(x, 32, 64, rows);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(lowbit::export_gptq(m.value).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::export_awq(m.value).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::export_ggml_q4_0(m.value).status.code(), errc::bad_group_size);

  int_params partial = presets::gptq(4, 48);
  partial.partial_groups = true;
  m = lowbit::quantized_matrix::quantize(x, 32, 64, partial);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(lowbit::export_gptq(m.value).status.code(), errc::bad_group_size);
  EXPECT_EQ(lowbit::export_awq(m.value).status.code(), errc::bad_group_size);

  // a placeholder scale is just a scale: GPTQ writes it
  floats xz = x;
  for (std::size_t k = 0; k < 32; ++k) xz[k] = 0.0f;
  int_params ph = presets::gptq(4, 32);
  ph.zero_group_scale = 1.0f;
  m = lowbit::quantized_matrix::quantize(xz, 32, 64, ph);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.value.scales()[0], 1.0f);
  EXPECT_TRUE(lowbit::export_gptq(m.value).ok());
}

}  // namespace
