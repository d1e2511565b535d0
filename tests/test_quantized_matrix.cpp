// The quantized matrix (schemes/integer.hpp): byte accounting against the lesson's figures,
// creation from float32 and bfloat16, dequantization to float32 and bfloat16, packed codes,
// building from stored parts, and its errors.
#include <lowbit/schemes/integer.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using lowbit::errc;
using lowbit::granularity;
using lowbit::int_params;
using lowbit::int_scheme;
using lowbit::quantized_matrix;
using lowbit::scale_storage;

template <class T>
std::vector<std::remove_const_t<T>> vec(lowbit::span<T> s) {
  return std::vector<std::remove_const_t<T>>(s.begin(), s.end());
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Byte accounting: the lesson's 4096 x 4096 figures (000, sections 2.3 and exercise 3).

TEST(ByteAccounting, Int4Group128Fp16Scales) {
  const auto s = lowbit::int_storage_for(lowbit::int_presets::gptq(4, 128), 4096, 4096);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value.elements, 16777216u);
  EXPECT_EQ(s.value.payload_bytes, 8388608u);  // 16,777,216 / 2
  EXPECT_EQ(s.value.scale_bytes, 262144u);     // 131,072 groups * 2 bytes
  EXPECT_EQ(s.value.zero_point_bytes, 0u);     // symmetric: no zero-points
  EXPECT_EQ(s.value.metadata_bytes(), 262144u);
  EXPECT_EQ(s.value.total_bytes(), 8650752u);
  EXPECT_EQ(s.value.total_mib(), 8.25);
  EXPECT_EQ(s.value.overhead_percent(), 3.125);
  EXPECT_EQ(s.value.bits_per_weight(), 4.125);
  EXPECT_EQ(fixed(s.value.compression_vs_fp16(), 2), "3.88");  // 32 MiB / 8.25 MiB, not 4x
  EXPECT_DOUBLE_EQ(s.value.compression_vs_fp16(), 32.0 / 8.25);
}

TEST(ByteAccounting, Int4Group32Fp16Scales) {
  const auto s = lowbit::int_storage_for(lowbit::int_presets::gptq(4, 32), 4096, 4096);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value.scale_bytes, 1048576u);
  EXPECT_EQ(s.value.overhead_percent(), 12.5);
  EXPECT_EQ(fixed(s.value.overhead_percent(), 2), "12.50");
  EXPECT_EQ(s.value.bits_per_weight(), 4.5);
}

TEST(ByteAccounting, Int8PerChannelFp16Scales) {
  const auto s = lowbit::int_storage_for(lowbit::int_presets::int8_per_channel(scale_storage::fp16), 4096, 4096);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value.payload_bytes, 16777216u);
  EXPECT_EQ(s.value.scale_bytes, 8192u);
  EXPECT_EQ(s.value.overhead_percent(), 0.048828125);
  EXPECT_EQ(fixed(s.value.overhead_percent(), 4), "0.0488");
}

TEST(ByteAccounting, ZeroPointsAndOffsets) {
  // Affine INT4 G=128: zero-points packed at 4 bits (GPTQ/AWQ qzeros): 131,072 / 2 bytes.
  const auto a = lowbit::int_storage_for(lowbit::int_presets::awq(4, 128), 4096, 4096);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value.zero_point_bytes, 65536u);
  EXPECT_EQ(a.value.metadata_bytes(), 327680u);
  // KIVI-style offsets are stored like scales (fp16 here).
  const auto k = lowbit::int_storage_for(lowbit::int_presets::kivi(2, 32), 128, 64);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k.value.payload_bytes, 2048u);
  EXPECT_EQ(k.value.scale_bytes, 512u);
  EXPECT_EQ(k.value.zero_point_bytes, 512u);
  // Per-tensor float32: 4 bytes of metadata. 3-bit codes pack with no per-row padding.
  int_params p;
  p.bits = 3;
  p.granularity = granularity::per_tensor;
  const auto t = lowbit::int_storage_for(p, 3, 5);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value.payload_bytes, 6u);  // 45 bits
  EXPECT_EQ(t.value.scale_bytes, 4u);
  const auto e = lowbit::int_storage_for(p, 0, 5);  // an empty matrix stores nothing
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value.total_bytes(), 0u);
}

// ---------------------------------------------------------------------------------------------
// The container.

int_params int4_rows() {
  int_params p;
  p.bits = 4;
  p.granularity = granularity::per_channel;
  return p;
}

TEST(QuantizedMatrix, QuantizeDequantizeAndPackedCodes) {
  // 2 x 4, per channel, INT4 restricted: row scales 1 and 0.5.
  const std::vector<float> x = {7.0f, -1.0f, 2.0f, 0.0f, 3.5f, 0.5f, -3.5f, 1.0f};
  const auto m = quantized_matrix::quantize(x.data(), 2, 4, int4_rows());
  ASSERT_TRUE(m.ok()) << m.status.message();
  const quantized_matrix& q = m.value;
  EXPECT_EQ(q.rows(), 2u);
  EXPECT_EQ(q.cols(), 4u);
  EXPECT_EQ(q.group_count(), 2u);
  EXPECT_EQ(q.group_length(), 4u);
  EXPECT_EQ(vec(q.scales()), (std::vector<float>{1.0f, 0.5f}));
  EXPECT_TRUE(q.zeros().empty());
  // Codes 15 7 10 8 | 15 9 1 10, two per byte, first in the low nibble.
  EXPECT_EQ(vec(q.packed_codes()), (std::vector<std::uint8_t>{0x7F, 0x8A, 0x9F, 0xA1}));
  EXPECT_EQ(q.code(1, 2), 1);
  EXPECT_EQ(q.code(5, 0), 0);  // out of range
  std::vector<float> y(8);
  ASSERT_TRUE(q.dequantize(y).ok());
  EXPECT_EQ(y, x);
  std::vector<lowbit::bfloat16> yb(8);
  ASSERT_TRUE(q.dequantize(yb).ok());
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(static_cast<float>(yb[i]), x[i]);
  std::vector<std::uint8_t> codes(8);
  ASSERT_TRUE(q.unpack(codes).ok());
  EXPECT_EQ(codes, (std::vector<std::uint8_t>{15, 7, 10, 8, 15, 9, 1, 10}));
  EXPECT_EQ(q.storage().payload_bytes, 4u);
  EXPECT_EQ(q.storage().scale_bytes, 8u);
}

TEST(QuantizedMatrix, MatchesThePointerCoreOnLargerData) {
  const std::size_t rows = 16;
  const std::size_t cols = 384;  // groups of 128, and a per-tensor group longer than one chunk
  std::vector<float> x(rows * cols);
  std::uint32_t st = 3u;
  for (auto& v : x) {
    st = st * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(st)) / 2147483648.0f;
  }
  for (int bits : {2, 3, 4, 5, 8})
    for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine, int_scheme::affine_offset})
      for (granularity g : {granularity::per_tensor, granularity::per_token, granularity::per_group}) {
        int_params p;
        p.bits = bits;
        p.scheme = sc;
        p.granularity = g;
        p.group_size = g == granularity::per_group ? 128 : 0;
        p.scale_format = scale_storage::bf16;
        const auto m = quantized_matrix::quantize(x.data(), rows, cols, p);
        ASSERT_TRUE(m.ok());
        const auto gr = lowbit::int_groups(p, rows, cols);
        std::vector<std::uint8_t> codes(x.size());
        std::vector<float> scales(gr.value.group_count), zeros(gr.value.group_count), ref(x.size()), y(x.size());
        ASSERT_TRUE(lowbit::quantize_int(x.data(), rows, cols, p, codes.data(), scales.data(), zeros.data()).ok());
        ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), zeros.data(), rows, cols, p, ref.data()).ok());
        ASSERT_TRUE(m.value.dequantize(y).ok());
        EXPECT_EQ(y, ref) << bits << " " << static_cast<int>(sc) << " " << static_cast<int>(g);
        EXPECT_EQ(vec(m.value.scales()), scales);
        std::vector<std::uint8_t> back(x.size());
        ASSERT_TRUE(m.value.unpack(back).ok());
        EXPECT_EQ(back, codes);
        EXPECT_EQ(m.value.packed_codes().size(), lowbit::packed_bytes(x.size(), bits));
      }
}

TEST(QuantizedMatrix, FromBfloat16) {
  // Values exact in bfloat16: the bfloat16 path equals the float path.
  const std::vector<float> x = {1.5f, -0.25f, 3.0f, 0.125f, -2.0f, 0.75f};
  std::vector<lowbit::bfloat16> xb;
  for (float v : x) xb.push_back(lowbit::encode<lowbit::bfloat16>(v));
  const auto a = quantized_matrix::quantize(x.data(), 2, 3, int4_rows());
  const auto b = quantized_matrix::quantize(xb.data(), 2, 3, int4_rows());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(vec(a.value.packed_codes()), vec(b.value.packed_codes()));
  EXPECT_EQ(vec(a.value.scales()), vec(b.value.scales()));
  EXPECT_EQ(quantized_matrix::quantize(lowbit::span<const float>(x.data(), 5), 2, 3, int4_rows()).status.code(),
            errc::size_mismatch);
}

TEST(QuantizedMatrix, FromStoredParts) {
  // An affine INT4 matrix as a checkpoint holds it: codes, scales [rows, groups], zero-points.
  int_params p = lowbit::int_presets::awq(4, 2);
  const std::uint8_t codes[8] = {0, 15, 3, 4, 8, 8, 1, 2};
  const float scales[4] = {0.5f, 0.25f, 1.0f, 2.0f};
  const float zeros[4] = {3.0f, 4.0f, 8.0f, 0.0f};
  using lowbit::span;
  using u8s = span<const std::uint8_t>;
  using fs = span<const float>;
  const auto m = quantized_matrix::from_codes(codes, scales, zeros, 2, 4, p);
  ASSERT_TRUE(m.ok()) << m.status.message();
  std::vector<float> y(8);
  ASSERT_TRUE(m.value.dequantize(y).ok());
  EXPECT_EQ(y, (std::vector<float>{-1.5f, 6.0f, -0.25f, 0.0f, 0.0f, 0.0f, 2.0f, 4.0f}));
  // Errors: counts, a code above 15, a fractional zero-point, a scale fp16 cannot hold.
  EXPECT_EQ(quantized_matrix::from_codes(u8s(codes, 7), scales, zeros, 2, 4, p).status.code(), errc::size_mismatch);
  EXPECT_EQ(quantized_matrix::from_codes(codes, fs(scales, 3), zeros, 2, 4, p).status.code(), errc::size_mismatch);
  EXPECT_EQ(quantized_matrix::from_codes(codes, scales, fs(), 2, 4, p).status.code(), errc::size_mismatch);
  const std::uint8_t wide[8] = {0, 16, 3, 4, 8, 8, 1, 2};
  EXPECT_EQ(quantized_matrix::from_codes(wide, scales, zeros, 2, 4, p).status.code(), errc::bad_argument);
  const float frac[4] = {3.0f, 4.5f, 8.0f, 0.0f};
  EXPECT_EQ(quantized_matrix::from_codes(codes, scales, frac, 2, 4, p).status.code(), errc::bad_argument);
  const float odd[4] = {0.1f, 0.25f, 1.0f, 2.0f};
  EXPECT_EQ(quantized_matrix::from_codes(codes, odd, zeros, 2, 4, p).status.code(), errc::bad_argument);
  // Symmetric restricted codes start at 1 (code 0 would be -8, outside -7..7).
  int_params s;
  s.bits = 4;
  s.granularity = granularity::per_tensor;
  const float one = 1.0f;
  EXPECT_EQ(quantized_matrix::from_codes(codes, fs(&one, 1), fs(), 2, 4, s).status.code(), errc::bad_argument);
}

TEST(QuantizedMatrix, Errors) {
  const std::vector<float> x(8, 1.0f);
  int_params p = int4_rows();
  EXPECT_EQ(quantized_matrix::quantize(lowbit::span<const float>(x.data(), 7), 2, 4, p).status.code(),
            errc::size_mismatch);
  const auto empty = quantized_matrix::quantize(x.data(), 0, 8, p);  // n = 0: ok, an empty matrix
  EXPECT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value.empty());
  p.bits = 1;
  EXPECT_EQ(quantized_matrix::quantize(x.data(), 2, 4, p).status.code(), errc::bad_bit_width);
  p = int4_rows();
  p.granularity = granularity::per_group;
  p.group_size = 3;
  EXPECT_EQ(quantized_matrix::quantize(x.data(), 2, 4, p).status.code(), errc::bad_group_size);
  std::vector<float> bad = x;
  bad[5] = std::numeric_limits<float>::infinity();
  const auto nf = quantized_matrix::quantize(bad.data(), 2, 4, int4_rows());
  EXPECT_EQ(nf.status.code(), errc::non_finite_input);
  EXPECT_TRUE(nf.value.empty());  // nothing half-built is handed back
  const auto ok = quantized_matrix::quantize(x.data(), 2, 4, int4_rows());
  ASSERT_TRUE(ok.ok());
  std::vector<float> y(9);
  EXPECT_EQ(ok.value.dequantize(y).code(), errc::size_mismatch);
  EXPECT_EQ(quantized_matrix{}.dequantize(lowbit::span<float>()).code(), errc::ok);  // n = 0: nothing to write
}

// ---------------------------------------------------------------------------------------------
// Regression tests of issue 9.

// A shape too large for memory threw std::bad_alloc from std::vector: now out_of_memory, and the
// library stays usable under -fno-exceptions. (2^60 elements: 2^59 bytes of INT4 codes.)
TEST(QuantizedMatrixIssue9, HugeShapeIsOutOfMemoryNotBadAlloc) {
  const std::vector<float> x(64, 1.0f);
  const auto m = quantized_matrix::quantize(x.data(), std::size_t{1} << 40, std::size_t{1} << 20,
                                            lowbit::int_presets::gptq(4, 128));
  EXPECT_EQ(m.status.code(), errc::out_of_memory);
  EXPECT_TRUE(m.value.empty());
  std::vector<lowbit::bfloat16> xb(64);
  EXPECT_EQ(quantized_matrix::quantize(xb.data(), std::size_t{1} << 40, std::size_t{1} << 20,
                                       lowbit::int_presets::gptq(4, 128))
                .status.code(),
            errc::out_of_memory);
  // Beyond what an object can hold at all: bad_argument before any allocation.
  EXPECT_EQ(quantized_matrix::quantize(x.data(), std::size_t{1} << 62, 4, int4_rows()).status.code(), errc::bad_argument);
}

// The container is move-only; clone() copies with a status; the accessors are spans.
TEST(QuantizedMatrixIssue9, MoveOnlyWithCloneAndSpanAccessors) {
  static_assert(!std::is_copy_constructible<quantized_matrix>::value, "move-only");
  static_assert(std::is_nothrow_move_constructible<quantized_matrix>::value, "moves never throw");
  static_assert(std::is_same<decltype(std::declval<const quantized_matrix&>().scales()), lowbit::span<const float>>::value,
                "span accessors");
  const std::vector<float> x = {7.0f, -1.0f, 2.0f, 0.0f, 3.5f, 0.5f, -3.5f, 1.0f};
  auto m = quantized_matrix::quantize(x.data(), 2, 4, int4_rows());
  ASSERT_TRUE(m.ok());
  const auto c = m.value.clone();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(vec(c.value.packed_codes()), vec(m.value.packed_codes()));
  EXPECT_EQ(vec(c.value.scales()), vec(m.value.scales()));
  EXPECT_NE(c.value.packed_codes().data(), m.value.packed_codes().data());  // its own storage
  quantized_matrix moved = std::move(m.value);
  EXPECT_EQ(moved.rows(), 2u);
  std::vector<std::uint8_t> row(4);
  ASSERT_TRUE(moved.unpack(4, row).ok());  // the second row alone
  EXPECT_EQ(row, (std::vector<std::uint8_t>{15, 9, 1, 10}));
  EXPECT_EQ(moved.unpack(6, row).code(), errc::size_mismatch);
}

// The bfloat16 overload converts a batch of rows at a time (no float copy of the matrix); its
// result is the float path's on the decoded values, across batches and for every granularity.
TEST(QuantizedMatrixIssue9, Bfloat16BatchesGiveTheFloatPathsBytes) {
  const std::size_t rows = 37, cols = 640;  // 6 rows a batch, a partial last batch
  std::vector<lowbit::bfloat16> xb(rows * cols);
  std::vector<float> xf(rows * cols);
  std::uint32_t st = 11u;
  for (std::size_t i = 0; i < xb.size(); ++i) {
    st = st * 1664525u + 1013904223u;
    xb[i] = lowbit::encode<lowbit::bfloat16>(static_cast<float>(static_cast<std::int32_t>(st)) / 2147483648.0f);
    xf[i] = static_cast<float>(xb[i]);
  }
  for (granularity g : {granularity::per_tensor, granularity::per_channel, granularity::per_group}) {
    for (int_scheme sc : {int_scheme::symmetric, int_scheme::affine_offset}) {
      int_params p;
      p.bits = 3;
      p.scheme = sc;
      p.granularity = g;
      p.group_size = g == granularity::per_group ? 64 : 0;
      const auto a = quantized_matrix::quantize(xf.data(), rows, cols, p);
      const auto b = quantized_matrix::quantize(xb.data(), rows, cols, p);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(vec(a.value.packed_codes()), vec(b.value.packed_codes())) << static_cast<int>(g);
      EXPECT_EQ(vec(a.value.scales()), vec(b.value.scales()));
      EXPECT_EQ(vec(a.value.zeros()), vec(b.value.zeros()));
    }
  }
}

}  // namespace
