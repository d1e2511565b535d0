// Storage layouts (schemes/layouts.hpp): lowbit's bit stream, GPTQ qweight/qzeros (v1 and v2),
// the AWQ interleaved order, and ggml's Q4_0/Q8_0 blocks bit for bit against hand-computed
// blocks of ggml's reference quantizers. Every layout round-trips.
#include <lowbit/schemes/layouts.hpp>
#include <lowbit/schemes/integer.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;

// A null pointer the compiler cannot see through (a literal nullptr makes GCC warn about the
// code behind the check that rejects it).
template <class T>
T* opaque_null() {
  static T* volatile p = nullptr;
  return p;
}

std::vector<std::uint8_t> random_codes(std::size_t n, int bits, std::uint32_t seed) {
  std::vector<std::uint8_t> c(n);
  for (auto& v : c) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<std::uint8_t>((seed >> 24) & ((1u << bits) - 1u));
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Bit stream.

TEST(BitStream, HandPackedBytes) {
  auto pack = [](std::vector<std::uint8_t> codes, int bits) {
    std::vector<std::uint8_t> out(lowbit::packed_bytes(codes.size(), bits), 0xAA);
    EXPECT_TRUE(lowbit::pack_codes(codes.data(), codes.size(), bits, out.data()).ok());
    return out;
  };
  // 4 bits = sequential nibbles: element 2i low, 2i+1 high; odd tail in a low nibble.
  EXPECT_EQ(pack({1, 2, 3, 4, 5}, 4), (std::vector<std::uint8_t>{0x21, 0x43, 0x05}));
  // 2 bits: element 4i+j at bits 2j of byte i: 1 | 2<<2 | 3<<4 | 0<<6 = 0x39.
  EXPECT_EQ(pack({1, 2, 3, 0, 3}, 2), (std::vector<std::uint8_t>{0x39, 0x03}));
  // 3 bits: 001 010 011 100 101 110 111 000 read from bit 0 up.
  EXPECT_EQ(pack({1, 2, 3, 4, 5, 6, 7, 0}, 3), (std::vector<std::uint8_t>{0xD1, 0x58, 0x1F}));
  EXPECT_EQ(pack({31, 1, 16, 7, 9}, 5), (std::vector<std::uint8_t>{0x3F, 0xC0, 0x93, 0x00}));
  EXPECT_EQ(pack({0x7F, 0, 0x55, 1}, 7), (std::vector<std::uint8_t>{0x7F, 0x40, 0x35, 0x00}));
  EXPECT_EQ(pack({0x12, 0xFE}, 8), (std::vector<std::uint8_t>{0x12, 0xFE}));
}

TEST(BitStream, AgreesWithCorePacking) {
  const auto c4 = random_codes(33, 4, 1u);
  std::vector<std::uint8_t> a(17), b(17);
  ASSERT_TRUE(lowbit::pack_codes(c4.data(), 33, 4, a.data()).ok());
  lowbit::pack_nibbles(c4.data(), b.data(), 33);
  EXPECT_EQ(a, b);
  const auto c6 = random_codes(11, 6, 2u);
  std::vector<std::uint8_t> s(lowbit::packed_bytes(11, 6)), t(lowbit::packed_bytes(11, 6));
  ASSERT_TRUE(lowbit::pack_codes(c6.data(), 11, 6, s.data()).ok());
  lowbit::pack_sextets(c6.data(), t.data(), 11);
  EXPECT_EQ(s, t);
}

TEST(BitStream, RoundTripEveryWidthFromAnyOffset) {
  for (int bits = 1; bits <= 8; ++bits) {
    const std::size_t n = 101;
    const auto codes = random_codes(n, bits, static_cast<std::uint32_t>(bits));
    std::vector<std::uint8_t> packed(lowbit::packed_bytes(n, bits));
    ASSERT_TRUE(lowbit::pack_codes(codes.data(), n, bits, packed.data()).ok());
    std::vector<std::uint8_t> back(n);
    ASSERT_TRUE(lowbit::unpack_codes(packed.data(), 0, n, bits, back.data()).ok());
    EXPECT_EQ(back, codes) << bits;
    for (std::size_t first : {1u, 3u, 50u, 100u}) {
      std::vector<std::uint8_t> part(n - first);
      ASSERT_TRUE(lowbit::unpack_codes(packed.data(), first, n - first, bits, part.data()).ok());
      EXPECT_EQ(part, std::vector<std::uint8_t>(codes.begin() + static_cast<std::ptrdiff_t>(first), codes.end()))
          << bits << " from " << first;
    }
  }
}

TEST(BitStream, Errors) {
  std::uint8_t codes[2] = {16, 1};
  std::uint8_t out[2];
  EXPECT_EQ(lowbit::pack_codes(codes, 2, 4, out).code(), errc::bad_argument);  // 16 needs 5 bits
  EXPECT_EQ(lowbit::pack_codes(codes, 2, 0, out).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::pack_codes(codes, 2, 9, out).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::pack_codes(opaque_null<std::uint8_t>(), 2, 8, out).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::unpack_codes(out, 0, 2, 9, codes).code(), errc::bad_bit_width);
  EXPECT_TRUE(lowbit::pack_codes(codes, 0, 4, nullptr).ok());  // nothing to do
}

// ---------------------------------------------------------------------------------------------
// GPTQ.

TEST(Gptq, QweightWordsByHand) {
  // [out = 2, in = 8], 4 bits: row 0 holds 0..7, row 1 holds 8..15; one word per column,
  // element j of the word at bits 4j.
  std::vector<std::uint8_t> codes(16);
  for (int i = 0; i < 16; ++i) codes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  std::uint32_t q[2] = {};
  ASSERT_TRUE(lowbit::gptq_pack_qweight(codes.data(), 2, 8, 4, q).ok());
  EXPECT_EQ(q[0], 0x76543210u);
  EXPECT_EQ(q[1], 0xFEDCBA98u);
  // [out = 1, in = 16] at 2 bits: codes 0,1,2,3,... -> 0b..11100100 repeating = 0xE4E4E4E4.
  std::vector<std::uint8_t> c2(16);
  for (int i = 0; i < 16; ++i) c2[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i % 4);
  std::uint32_t w2 = 0;
  ASSERT_TRUE(lowbit::gptq_pack_qweight(c2.data(), 1, 16, 2, &w2).ok());
  EXPECT_EQ(w2, 0xE4E4E4E4u);
  // [out = 2, in = 4] at 8 bits: qweight is [1, 2].
  const std::uint8_t c8[8] = {0x11, 0x22, 0x33, 0x44, 0xA0, 0xB0, 0xC0, 0xD0};
  std::uint32_t w8[2] = {};
  ASSERT_TRUE(lowbit::gptq_pack_qweight(c8, 2, 4, 8, w8).ok());
  EXPECT_EQ(w8[0], 0x44332211u);
  EXPECT_EQ(w8[1], 0xD0C0B0A0u);
  // Rows of qweight run along `in`: [out = 1, in = 16] at 4 bits is two words in two rows.
  std::vector<std::uint8_t> c16(16);
  for (int i = 0; i < 16; ++i) c16[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(15 - i);
  std::uint32_t w16[2] = {};
  ASSERT_TRUE(lowbit::gptq_pack_qweight(c16.data(), 1, 16, 4, w16).ok());
  EXPECT_EQ(w16[0], 0x89ABCDEFu);
  EXPECT_EQ(w16[1], 0x01234567u);
}

TEST(Gptq, QzerosV1StoresZeroMinusOne) {
  // [out = 8, groups = 1]: symmetric GPTQ's zero 8 is stored as 7 in v1, 8 in v2.
  std::vector<std::uint8_t> z(8, 8);
  std::uint32_t w = 0;
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v1, &w).ok());
  EXPECT_EQ(w, 0x77777777u);
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v2, &w).ok());
  EXPECT_EQ(w, 0x88888888u);
  // Zeros 1..8 along `out`: v1 0x76543210, v2 0x87654321.
  for (int o = 0; o < 8; ++o) z[static_cast<std::size_t>(o)] = static_cast<std::uint8_t>(o + 1);
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v1, &w).ok());
  EXPECT_EQ(w, 0x76543210u);
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v2, &w).ok());
  EXPECT_EQ(w, 0x87654321u);
  // Zeros are given [out, groups] and stored [groups, out/8]: out = 8, groups = 2.
  const std::uint8_t z2[16] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
  std::uint32_t w2[2] = {};
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(z2, 8, 2, 4, lowbit::gptq_format::v2, w2).ok());
  EXPECT_EQ(w2[0], 0x11111111u);
  EXPECT_EQ(w2[1], 0x22222222u);
  // v1 cannot hold a zero of 0; reading an all-ones v1 field would give 16.
  z[3] = 0;
  EXPECT_EQ(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v1, &w).code(), errc::bad_argument);
  EXPECT_TRUE(lowbit::gptq_pack_qzeros(z.data(), 8, 1, 4, lowbit::gptq_format::v2, &w).ok());
  const std::uint32_t bad = 0x7777F777u;
  std::uint8_t back[8];
  EXPECT_EQ(lowbit::gptq_unpack_qzeros(&bad, 8, 1, 4, lowbit::gptq_format::v1, back).code(), errc::bad_argument);
}

TEST(Gptq, RoundTripsAndErrors) {
  for (int bits : {2, 4, 8}) {
    const std::size_t out = 16;
    const std::size_t in = 64;
    const std::size_t groups = 4;
    const auto codes = random_codes(out * in, bits, 3u);
    std::vector<std::uint32_t> qw(in * static_cast<std::size_t>(bits) / 32 * out);
    ASSERT_TRUE(lowbit::gptq_pack_qweight(codes.data(), out, in, bits, qw.data()).ok());
    std::vector<std::uint8_t> back(out * in);
    ASSERT_TRUE(lowbit::gptq_unpack_qweight(qw.data(), out, in, bits, back.data()).ok());
    EXPECT_EQ(back, codes) << bits;
    auto zeros = random_codes(out * groups, bits, 4u);
    for (auto& z : zeros) z = static_cast<std::uint8_t>(z == 0 ? 1 : z);  // v1 needs z >= 1
    std::vector<std::uint32_t> qz(groups * out * static_cast<std::size_t>(bits) / 32);
    for (auto fmt : {lowbit::gptq_format::v1, lowbit::gptq_format::v2}) {
      ASSERT_TRUE(lowbit::gptq_pack_qzeros(zeros.data(), out, groups, bits, fmt, qz.data()).ok());
      std::vector<std::uint8_t> zb(out * groups);
      ASSERT_TRUE(lowbit::gptq_unpack_qzeros(qz.data(), out, groups, bits, fmt, zb.data()).ok());
      EXPECT_EQ(zb, zeros);
    }
  }
  std::uint8_t c[8] = {};
  std::uint32_t w[2];
  EXPECT_EQ(lowbit::gptq_pack_qweight(c, 1, 8, 3, w).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::gptq_pack_qweight(c, 1, 6, 4, w).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::gptq_pack_qweight(c, 0, 8, 4, w).code(), errc::ok);  // n = 0: nothing to write
  c[0] = 16;
  EXPECT_EQ(lowbit::gptq_pack_qweight(c, 1, 8, 4, w).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::gptq_pack_qzeros(c, 4, 1, 4, lowbit::gptq_format::v2, w).code(), errc::bad_block_size);
}

TEST(Gptq, GIdxAndTransposedScales) {
  std::int32_t g[8];
  ASSERT_TRUE(lowbit::gptq_g_idx(8, 4, g).ok());
  EXPECT_EQ(std::vector<std::int32_t>(g, g + 8), (std::vector<std::int32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(lowbit::gptq_g_idx(8, 3, g).code(), errc::bad_group_size);
  const float s[6] = {1, 2, 3, 4, 5, 6};  // [out = 2, groups = 3]
  float t[6];
  ASSERT_TRUE(lowbit::transpose_group_params(s, 2, 3, t).ok());
  EXPECT_EQ(std::vector<float>(t, t + 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// A GPTQ checkpoint read back the way loaders do (v1: zero = stored + 1, value = s * (q - zero))
// reproduces lowbit's dequantized symmetric INT4 exactly.
TEST(Gptq, CheckpointDequantizesLikeLowbit) {
  const std::size_t out = 8;
  const std::size_t in = 64;
  const lowbit::int_params p = lowbit::int_presets::gptq(4, 32);
  std::vector<float> w(out * in);
  std::uint32_t st = 77u;
  for (auto& v : w) {
    st = st * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(st)) / 2147483648.0f;
  }
  std::vector<std::uint8_t> codes(out * in);
  std::vector<float> scales(out * 2);
  ASSERT_TRUE(lowbit::quantize_int(w.data(), out, in, p, codes.data(), scales.data(), nullptr).ok());
  std::vector<float> ref(out * in);
  ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), nullptr, out, in, p, ref.data()).ok());

  std::vector<std::uint32_t> qweight(in / 8 * out), qzeros(2 * out / 8);
  const std::vector<std::uint8_t> zeros(out * 2, 8);
  ASSERT_TRUE(lowbit::gptq_pack_qweight(codes.data(), out, in, 4, qweight.data()).ok());
  ASSERT_TRUE(lowbit::gptq_pack_qzeros(zeros.data(), out, 2, 4, lowbit::gptq_format::v1, qzeros.data()).ok());
  std::vector<float> ckpt_scales(2 * out);  // [groups, out]
  ASSERT_TRUE(lowbit::transpose_group_params(scales.data(), out, 2, ckpt_scales.data()).ok());
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t k = 0; k < in; ++k) {
      const unsigned q = (qweight[(k / 8) * out + o] >> (4 * (k % 8))) & 0xFu;
      const std::size_t g = k / 32;
      const unsigned zero = ((qzeros[g * (out / 8) + o / 8] >> (4 * (o % 8))) & 0xFu) + 1u;
      const float value = static_cast<float>(static_cast<int>(q) - static_cast<int>(zero)) * ckpt_scales[g * out + o];
      ASSERT_EQ(value, ref[o * in + k]) << o << "," << k;
    }
}

// ---------------------------------------------------------------------------------------------
// AWQ.

TEST(Awq, InterleavedOrderByHand) {
  // [out = 8, in = 1]: channel c has code c. Slot i holds channel awq_order[i] = 0,2,4,6,1,3,5,7.
  std::vector<std::uint8_t> codes = {0, 1, 2, 3, 4, 5, 6, 7};
  std::uint32_t w = 0;
  ASSERT_TRUE(lowbit::awq_pack_qweight(codes.data(), 8, 1, 4, &w).ok());
  EXPECT_EQ(w, 0x75316420u);
  // Codes 15 - c: slots hold 15, 13, 11, 9, 14, 12, 10, 8.
  for (int c = 0; c < 8; ++c) codes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(15 - c);
  ASSERT_TRUE(lowbit::awq_pack_qweight(codes.data(), 8, 1, 4, &w).ok());
  EXPECT_EQ(w, 0x8ACE9BDFu);
  // Zeros are packed the same way, [groups, out/8].
  const std::uint8_t z[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  ASSERT_TRUE(lowbit::awq_pack_qzeros(z, 8, 1, 4, &w).ok());
  EXPECT_EQ(w, 0x75316420u);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(lowbit::awq_order[lowbit::awq_reverse_order[c]], c);
}

TEST(Awq, RoundTripAndAReaderThatUndoesTheOrder) {
  const std::size_t out = 24;
  const std::size_t in = 5;
  const std::size_t groups = 5;
  const auto codes = random_codes(out * in, 4, 8u);
  std::vector<std::uint32_t> qw(in * out / 8);
  ASSERT_TRUE(lowbit::awq_pack_qweight(codes.data(), out, in, 4, qw.data()).ok());
  std::vector<std::uint8_t> back(out * in);
  ASSERT_TRUE(lowbit::awq_unpack_qweight(qw.data(), out, in, 4, back.data()).ok());
  EXPECT_EQ(back, codes);
  // A reader as AutoAWQ's: shift out slots 0..7, then column 8w + c comes from slot reverse[c].
  for (std::size_t k = 0; k < in; ++k)
    for (std::size_t o = 0; o < out; ++o) {
      const std::uint32_t word = qw[k * (out / 8) + o / 8];
      const int slot = lowbit::awq_reverse_order[o % 8];
      EXPECT_EQ((word >> (4 * slot)) & 0xFu, codes[o * in + k]);
    }
  const auto zeros = random_codes(out * groups, 4, 9u);
  std::vector<std::uint32_t> qz(groups * out / 8);
  ASSERT_TRUE(lowbit::awq_pack_qzeros(zeros.data(), out, groups, 4, qz.data()).ok());
  std::vector<std::uint8_t> zb(out * groups);
  ASSERT_TRUE(lowbit::awq_unpack_qzeros(qz.data(), out, groups, 4, zb.data()).ok());
  EXPECT_EQ(zb, zeros);
  std::uint8_t c[8] = {};
  std::uint32_t w[1];
  EXPECT_EQ(lowbit::awq_pack_qweight(c, 4, 2, 4, w).code(), errc::bad_block_size);
  c[1] = 20;
  EXPECT_EQ(lowbit::awq_pack_qweight(c, 8, 1, 4, w).code(), errc::bad_argument);
}

// ---------------------------------------------------------------------------------------------
// ggml Q4_0 / Q8_0.

TEST(GgmlQ4_0, ReferenceBlockRampByHand) {
  // x[j] = j - 16: max = -16 (largest magnitude), d = -16/-8 = 2 (fp16 0x4000), id = 0.5;
  // code = trunc(x/2 + 8.5) = floor((j + 1)/2), 16 -> 15. Byte j = code(j) | code(j+16) << 4.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 16);
  lowbit::ggml_block_q4_0 b{};
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, 32, &b).ok());
  EXPECT_EQ(b.d, 0x4000);
  const std::uint8_t qs[16] = {0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4,
                               0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
  EXPECT_EQ(std::memcmp(b.qs, qs, 16), 0);
  std::vector<float> y(32);
  ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(&b, 1, 32, y.data()).ok());
  EXPECT_EQ(y[0], -16.0f);
  EXPECT_EQ(y[1], -14.0f);  // -15 / 2 = -7.5 rounds half up to -7
  EXPECT_EQ(y[31], 14.0f);  // 15 / 2 = 7.5 -> 8 clamps to 7
  // The layout is 18 bytes: d (little-endian on this host) then qs.
  unsigned char raw[18];
  std::memcpy(raw, &b, 18);
  EXPECT_EQ(raw[2], 0x80);
}

TEST(GgmlQ4_0, ReferenceBlockPositiveMaxHalfUpAndTies) {
  // max = +3 (the -3 at index 9 comes later: first wins), d = 3/-8 = -0.375 (fp16 0xB600),
  // id = -2.6666667f. -0.1875*id = 0.5 -> 9 (half up; nearest-even would give 8);
  // 0.1875 -> -0.5 -> 8; 1.5 -> -4 -> 4; 3 -> -8 -> 0; -3 -> 8 -> 16 -> 15; 0 -> 8.
  std::vector<float> x(32, 0.0f);
  x[0] = -0.1875f;
  x[1] = 0.1875f;
  x[2] = 1.5f;
  x[5] = 3.0f;
  x[9] = -3.0f;
  lowbit::ggml_block_q4_0 b{};
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, 32, &b).ok());
  EXPECT_EQ(b.d, 0xB600);
  const std::uint8_t qs[16] = {0x89, 0x88, 0x84, 0x88, 0x88, 0x80, 0x88, 0x88,
                               0x88, 0x8F, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  EXPECT_EQ(std::memcmp(b.qs, qs, 16), 0);
  std::vector<float> y(32);
  ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(&b, 1, 32, y.data()).ok());
  EXPECT_EQ(y[5], 3.0f);
  EXPECT_EQ(y[9], -2.625f);
  EXPECT_EQ(y[0], -0.375f);
}

TEST(GgmlQ4_0, AllZeroBlockAndErrors) {
  std::vector<float> x(64, 0.0f);
  lowbit::ggml_block_q4_0 b[2];
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, 64, b).ok());
  EXPECT_EQ(b[0].d, 0x8000);  // 0 / -8 = -0, as ggml stores it
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[1].qs[j], 0x88);
  std::vector<float> y(64, 1.0f);
  ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(b, 1, 64, y.data()).ok());
  for (float v : y) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 31, b).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 0, b).code(), errc::ok);  // n = 0: nothing to write
  x[40] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 64, b).code(), errc::non_finite_input);
  x[40] = 1.0e6f;  // d = -125000 does not fit fp16, nor 1e7 / 127
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 64, b).code(), errc::scale_overflow);
  x[40] = 1.0e7f;
  lowbit::ggml_block_q8_0 b8[2];
  EXPECT_EQ(lowbit::ggml_quantize_q8_0(x.data(), 1, 64, b8).code(), errc::scale_overflow);
  {
    const lowbit::scoped_isa scalar(lowbit::isa::scalar);
    EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 64, b).code(), errc::scale_overflow);
    EXPECT_EQ(lowbit::ggml_quantize_q8_0(x.data(), 1, 64, b8).code(), errc::scale_overflow);
  }
}

TEST(GgmlQ8_0, ReferenceBlocksByHand) {
  // amax 127 -> d = 1, id = 1: roundf rounds half away from zero (2.5 -> 3, -2.5 -> -3).
  std::vector<float> x(32, 0.0f);
  const float head[8] = {-127.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 126.4f, 0.49f};
  for (int j = 0; j < 8; ++j) x[static_cast<std::size_t>(j)] = head[j];
  lowbit::ggml_block_q8_0 b{};
  ASSERT_TRUE(lowbit::ggml_quantize_q8_0(x.data(), 1, 32, &b).ok());
  EXPECT_EQ(b.d, 0x3C00);
  const std::int8_t q[8] = {-127, 1, -1, 2, 3, -3, 126, 0};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(b.qs[j], q[j]) << j;
  // x[j] = j - 16: d = 16/127 in FP32 (fp16 0x3008 = 0.1259765625 stored), id = 7.9375.
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 16);
  ASSERT_TRUE(lowbit::ggml_quantize_q8_0(x.data(), 1, 32, &b).ok());
  EXPECT_EQ(b.d, 0x3008);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], -119);  // -15 * 7.9375 = -119.06
  EXPECT_EQ(b.qs[8], -64);   // -63.5 away from zero
  EXPECT_EQ(b.qs[24], 64);
  EXPECT_EQ(b.qs[25], 71);   // 71.4375
  EXPECT_EQ(b.qs[31], 119);
  std::vector<float> y(32);
  ASSERT_TRUE(lowbit::ggml_dequantize_q8_0(&b, 1, 32, y.data()).ok());
  EXPECT_EQ(y[0], -127.0f * 0.1259765625f);
  EXPECT_EQ(lowbit::ggml_quantize_q8_0(x.data(), 1, 33, &b).code(), errc::bad_block_size);
  x[3] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(lowbit::ggml_quantize_q8_0(x.data(), 1, 32, &b).code(), errc::non_finite_input);
}

// lowbit's own schemes on ggml's grids write blocks that ggml dequantizes to lowbit's values, and
// blocks read back into lowbit codes and scales exactly.
TEST(GgmlBlocks, PackAndUnpackLowbitCodes) {
  const std::size_t n = 96;
  std::vector<float> x(n);
  std::uint32_t st = 5u;
  for (auto& v : x) {
    st = st * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<std::int32_t>(st)) / 2147483648.0f * 3.0f;
  }
  {
    const lowbit::int_params p = lowbit::int_presets::ggml_q4_0();
    std::vector<std::uint8_t> codes(n);
    std::vector<float> scales(n / 32), ref(n), got(n);
    ASSERT_TRUE(lowbit::quantize_int(x.data(), 1, n, p, codes.data(), scales.data(), nullptr).ok());
    ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), nullptr, 1, n, p, ref.data()).ok());
    std::vector<lowbit::ggml_block_q4_0> blocks(n / 32);
    ASSERT_TRUE(lowbit::ggml_pack_q4_0(codes.data(), scales.data(), 1, n, blocks.data()).ok());
    ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(blocks.data(), 1, n, got.data()).ok());
    EXPECT_EQ(got, ref);
    std::vector<std::uint8_t> codes2(n);
    std::vector<float> scales2(n / 32);
    ASSERT_TRUE(lowbit::ggml_unpack_q4_0(blocks.data(), 1, n, codes2.data(), scales2.data()).ok());
    EXPECT_EQ(codes2, codes);
    EXPECT_EQ(scales2, scales);
    // And ggml's reference blocks unpack into codes lowbit dequantizes to ggml's values.
    ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, n, blocks.data()).ok());
    ASSERT_TRUE(lowbit::ggml_dequantize_q4_0(blocks.data(), 1, n, ref.data()).ok());
    ASSERT_TRUE(lowbit::ggml_unpack_q4_0(blocks.data(), 1, n, codes2.data(), scales2.data()).ok());
    ASSERT_TRUE(lowbit::dequantize_int(codes2.data(), scales2.data(), nullptr, 1, n, p, got.data()).ok());
    EXPECT_EQ(got, ref);
  }
  {
    const lowbit::int_params p = lowbit::int_presets::ggml_q8_0();
    std::vector<std::uint8_t> codes(n);
    std::vector<float> scales(n / 32), ref(n), got(n);
    ASSERT_TRUE(lowbit::quantize_int(x.data(), 1, n, p, codes.data(), scales.data(), nullptr).ok());
    ASSERT_TRUE(lowbit::dequantize_int(codes.data(), scales.data(), nullptr, 1, n, p, ref.data()).ok());
    std::vector<lowbit::ggml_block_q8_0> blocks(n / 32);
    ASSERT_TRUE(lowbit::ggml_pack_q8_0(codes.data(), scales.data(), 1, n, blocks.data()).ok());
    ASSERT_TRUE(lowbit::ggml_dequantize_q8_0(blocks.data(), 1, n, got.data()).ok());
    EXPECT_EQ(got, ref);
    std::vector<std::uint8_t> codes2(n);
    std::vector<float> scales2(n / 32);
    ASSERT_TRUE(lowbit::ggml_unpack_q8_0(blocks.data(), 1, n, codes2.data(), scales2.data()).ok());
    EXPECT_EQ(codes2, codes);
    EXPECT_EQ(scales2, scales);
  }
  // A scale fp16 cannot hold exactly is refused.
  std::vector<std::uint8_t> c(32, 8);
  const float s = 0.1f;
  lowbit::ggml_block_q4_0 b;
  EXPECT_EQ(lowbit::ggml_pack_q4_0(c.data(), &s, 1, 32, &b).code(), errc::bad_argument);
}

// ---------------------------------------------------------------------------------------------
// Regression tests of issue 9 (one public API; no bad input that gets past it).

// out_features x in_features overflowing size_t used to size the checks and the loops with a
// wrapped product (heap-buffer-overflow): bad_argument, before any memory is touched.
TEST(LayoutsIssue9, GptqAndAwqShapesOverflowingSizeTAreBadArgument) {
  const std::size_t big = std::size_t{1} << 33;  // big * big = 2^66
  std::uint8_t c[64];
  std::uint32_t w[16];
  std::memset(c, 0x5A, sizeof c);
  std::memset(w, 0xA5, sizeof w);
  const auto fmt = lowbit::gptq_format::v1;
  EXPECT_EQ(lowbit::gptq_pack_qweight(c, big, big, 4, w).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::gptq_unpack_qweight(w, big, big, 4, c).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::gptq_pack_qzeros(c, big, big, 4, fmt, w).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::gptq_unpack_qzeros(w, big, big, 4, fmt, c).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::awq_pack_qweight(c, big, big, 4, w).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::awq_unpack_qweight(w, big, big, 4, c).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::awq_pack_qzeros(c, big, big, 4, w).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::awq_unpack_qzeros(w, big, big, 4, c).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::transpose_group_params(reinterpret_cast<const float*>(w), big, big,
                                           reinterpret_cast<float*>(w + 8)).code(),
            errc::bad_argument);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(reinterpret_cast<const float*>(w), big, big,
                                       reinterpret_cast<lowbit::ggml_block_q4_0*>(c)).code(),
            errc::bad_argument);
  for (std::uint8_t v : c) ASSERT_EQ(v, 0x5A);
  for (std::uint32_t v : w) ASSERT_EQ(v, 0xA5A5A5A5u);
}

// awq_* take the width like gptq_*: only 4 bits exist.
TEST(LayoutsIssue9, AwqTakesABitWidth) {
  std::uint8_t c[8] = {};
  std::uint32_t w[1] = {};
  EXPECT_EQ(lowbit::awq_pack_qweight(c, 8, 1, 3, w).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::awq_unpack_qweight(w, 8, 1, 8, c).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::awq_pack_qzeros(c, 8, 1, 2, w).code(), errc::bad_bit_width);
  EXPECT_EQ(lowbit::awq_unpack_qzeros(w, 8, 1, 5, c).code(), errc::bad_bit_width);
  EXPECT_TRUE(lowbit::awq_pack_qweight(c, 8, 1, 4, w).ok());
}

// n = 0 is ok everywhere and writes nothing; the pointers may be null.
TEST(LayoutsIssue9, EmptyShapesAreOkAndWriteNothing) {
  EXPECT_TRUE(lowbit::gptq_pack_qweight(nullptr, 0, 8, 4, nullptr).ok());
  EXPECT_TRUE(lowbit::gptq_unpack_qzeros(nullptr, 8, 0, 4, lowbit::gptq_format::v1, nullptr).ok());
  EXPECT_TRUE(lowbit::awq_pack_qzeros(nullptr, 8, 0, 4, nullptr).ok());
  EXPECT_TRUE(lowbit::gptq_g_idx(0, 128, nullptr).ok());
  EXPECT_TRUE(lowbit::transpose_group_params(nullptr, 0, 3, nullptr).ok());
  EXPECT_TRUE(lowbit::ggml_quantize_q8_0(nullptr, 5, 0, nullptr).ok());
  EXPECT_TRUE(lowbit::ggml_unpack_q4_0(nullptr, 0, 64, nullptr, nullptr).ok());
  EXPECT_TRUE(lowbit::unpack_codes(nullptr, 7, 0, 3, nullptr).ok());
}

// ggml calls take (rows, cols): a block never straddles two rows.
TEST(LayoutsIssue9, GgmlBlocksNeverStraddleRows) {
  std::vector<float> x(32 * 48);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 37) - 18) * 0.25f;
  std::vector<lowbit::ggml_block_q4_0> b(x.size() / 32);
  std::vector<lowbit::ggml_block_q8_0> b8(x.size() / 32);
  std::vector<std::uint8_t> codes(x.size());
  std::vector<float> scales(b.size()), y(x.size());
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 32, 48, b.data()).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::ggml_quantize_q8_0(x.data(), 32, 48, b8.data()).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::ggml_dequantize_q4_0(b.data(), 32, 48, y.data()).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::ggml_unpack_q8_0(b8.data(), 32, 48, codes.data(), scales.data()).code(), errc::bad_block_size);
  EXPECT_EQ(lowbit::ggml_pack_q4_0(codes.data(), scales.data(), 32, 48, b.data()).code(), errc::bad_block_size);
  // 48 x 32: one block per row, the same bytes as the rows quantized one by one.
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 48, 32, b.data()).ok());
  for (std::size_t r = 0; r < 48; ++r) {
    lowbit::ggml_block_q4_0 one;
    ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data() + 32 * r, 1, 32, &one).ok());
    ASSERT_EQ(std::memcmp(&one, &b[r], sizeof one), 0) << r;
  }
  // The span forms take their counts from the spans.
  EXPECT_TRUE(lowbit::ggml_quantize_q4_0(lowbit::span<const float>(x), 48, 32, lowbit::span<lowbit::ggml_block_q4_0>(b)).ok());
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(lowbit::span<const float>(x.data(), 32 * 47), 48, 32,
                                       lowbit::span<lowbit::ggml_block_q4_0>(b)).code(),
            errc::size_mismatch);
}

// An output overlapping an input (or another output) is overlapping_buffers, nothing written.
TEST(LayoutsIssue9, OverlappingBuffersAreRejectedUntouched) {
  std::vector<std::uint8_t> codes = random_codes(64, 4, 7);
  const std::vector<std::uint8_t> before = codes;
  EXPECT_EQ(lowbit::pack_codes(codes.data(), 64, 4, codes.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::unpack_codes(codes.data(), 0, 32, 4, codes.data() + 8).code(), errc::overlapping_buffers);
  std::vector<std::uint32_t> words(64);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = 0x11111111u * static_cast<std::uint32_t>(i % 15);
  const std::vector<std::uint32_t> wbefore = words;
  auto* as_bytes = reinterpret_cast<std::uint8_t*>(words.data());
  EXPECT_EQ(lowbit::gptq_pack_qweight(as_bytes, 4, 32, 4, words.data() + 4).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::gptq_unpack_qweight(words.data(), 4, 32, 4, as_bytes + 4).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::awq_unpack_qzeros(words.data(), 8, 2, 4, as_bytes + 1).code(), errc::overlapping_buffers);
  auto* as_floats = reinterpret_cast<float*>(words.data());
  EXPECT_EQ(lowbit::transpose_group_params(as_floats, 4, 4, as_floats).code(), errc::overlapping_buffers);  // in place
  // In-place ggml dequantization (values over their own blocks).
  auto* blocks = reinterpret_cast<lowbit::ggml_block_q4_0*>(words.data());
  EXPECT_EQ(lowbit::ggml_dequantize_q4_0(blocks, 1, 32, as_floats).code(), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(as_floats, 1, 32, blocks).code(), errc::overlapping_buffers);
  std::vector<float> scales(2);
  EXPECT_EQ(lowbit::ggml_unpack_q4_0(blocks, 1, 64, as_bytes + 20, scales.data()).code(), errc::overlapping_buffers);
  EXPECT_EQ(codes, before);
  EXPECT_EQ(words, wbefore);
}

// A pointer not aligned to its element type is misaligned, nothing written.
TEST(LayoutsIssue9, MisalignedPointersAreRejectedUntouched) {
  lowbit_test::misaligned<float> xf(64);
  lowbit_test::misaligned<std::uint32_t> qw(8);
  lowbit_test::misaligned<lowbit::ggml_block_q4_0> blk(2);
  std::vector<float> x(64, 1.0f);
  std::vector<lowbit::ggml_block_q4_0> b(2);
  std::memset(b.data(), 0x33, b.size() * sizeof b[0]);
  std::vector<std::uint8_t> codes(64, 1);
  std::vector<std::uint32_t> words(8, 7u);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(xf.data(), 1, 64, b.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::ggml_quantize_q4_0(x.data(), 1, 64, blk.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::ggml_dequantize_q4_0(b.data(), 1, 64, xf.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::gptq_pack_qweight(codes.data(), 8, 8, 4, qw.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::gptq_unpack_qweight(qw.data(), 8, 8, 4, codes.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::awq_pack_qweight(codes.data(), 8, 8, 4, qw.data()).code(), errc::misaligned);
  EXPECT_EQ(lowbit::transpose_group_params(x.data(), 8, 8, xf.data()).code(), errc::misaligned);
  for (const auto& blkv : b)
    for (std::uint8_t q : blkv.qs) ASSERT_EQ(q, 0x33);
  for (std::uint8_t v : codes) ASSERT_EQ(v, 1);
}

// The scalar Q4_0 reference computes x * id + 8.5 with two roundings, as ggml and the AVX2 kernel
// do: a compiler contracting it into an FMA (-march=native -ffp-contract=fast) used to change
// codes on exact ties. d = 3 makes id = RN(1/3) inexact and x = 3 (k + 1/2) a tie.
TEST(LayoutsIssue9, ScalarGgmlQ4_0IsImmuneToFpContraction) {
  const lowbit::scoped_isa scalar(lowbit::isa::scalar);
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = 3.0f * (static_cast<float>(j % 16 - 8) + 0.5f);
  x[0] = -24.0f;  // max = -24: d = 3
  lowbit::ggml_block_q4_0 b;
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, 32, &b).ok());
  const volatile float id = 1.0f / 3.0f;
  for (std::size_t j = 0; j < 32; ++j) {
    const volatile float product = x[j] * id;  // rounded on its own
    const float v = product + 8.5f;
    const int want = v >= 15.0f ? 15 : v >= 0.0f ? static_cast<int>(v) : 0;
    const int got = j < 16 ? (b.qs[j] & 0x0F) : (b.qs[j - 16] >> 4);
    EXPECT_EQ(got, want) << j;
  }
  if (lowbit_test::have_avx2()) {
    const lowbit::scoped_isa avx2(lowbit::isa::avx2);
    lowbit::ggml_block_q4_0 v;
    ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), 1, 32, &v).ok());
    EXPECT_EQ(std::memcmp(&v, &b, sizeof b), 0);
  }
}

}  // namespace
