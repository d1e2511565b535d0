// Fuzz target: the checkpoint layouts (lowbit/schemes/layouts/): GPTQ qweight and qzeros (v1, v2),
// AWQ qweight, ggml Q4_0 and Q8_0.
//
// Input: layout, width (valid or not), format enumerator (in range or not), a shape (valid,
// indivisible, empty or overflowing), a buffer mode, then codes or values.
// Checks, each on any input:
//  - every error (width, shape, buffers, a code wider than the width) writes nothing;
//    overflowing shapes are rejected before memory is touched (pointers that are never valid);
//  - unpack(pack(codes)) == codes for GPTQ and AWQ, and the packed words past the output stay
//    untouched;
//  - ggml: the SIMD path gives the scalar reference's status and blocks, quantizing and
//    dequantizing; unpacking blocks to codes and scales and packing them again gives the same
//    blocks.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <lowbit/schemes/layouts/awq.hpp>
#include <lowbit/schemes/layouts/ggml.hpp>
#include <lowbit/schemes/layouts/gptq.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t guard = 4;

int read_bits(input& in, int usual) {
  const std::uint8_t b = in.u8();
  if (b < 160) return usual;
  if (b < 230) return (b % 3 == 0) ? 2 : (b % 3 == 1) ? 4 : 8;
  static const int odd[] = {0, 1, 3, 5, 6, 7, 16, 32, -4};
  return odd[b % 9];
}

std::vector<std::uint8_t> read_codes(input& in, std::size_t n, int bits) {
  std::vector<std::uint8_t> c(n);
  const bool wide = in.u8() >= 240;  // sometimes a code that does not fit the width
  const unsigned mask = bits > 0 && bits < 8 ? (1u << bits) - 1u : 0xFFu;
  for (auto& v : c) v = static_cast<std::uint8_t>(wide ? in.u8() : (in.u8() & mask));
  return c;
}

// GPTQ qweight / qzeros and AWQ qweight: pack, unpack, compare.
void check_words(input& in, unsigned layout) {
  const bool awq = layout == 2;
  const bool zeros = layout == 1;
  const int bits = read_bits(in, awq ? 4 : (in.flag() ? 4 : 8));
  const auto fmt = static_cast<gptq_format>(in.u8() < 240 ? in.u8() % 2 : in.u8());
  // The packed direction needs a multiple of 32 / bits (8 for AWQ).
  const std::size_t per_word = bits == 2 || bits == 4 || bits == 8 ? 32u / static_cast<std::size_t>(bits) : 8u;
  const lowbit_fuzz::shape sh = lowbit_fuzz::read_shape(in, per_word, 1, std::size_t{1} << 16);
  // GPTQ qweight packs along in (the cols here), qzeros along out, AWQ along out: rows and cols
  // of the shape are (other, along).
  const std::size_t along = sh.cols, other = sh.rows;
  const std::size_t out_features = (zeros || awq) ? along : other;
  const std::size_t in_or_groups = (zeros || awq) ? other : along;
  const unsigned mode = in.u8() % 8u;

  auto pack = [&](const std::uint8_t* c, std::uint32_t* w) {
    if (awq) return awq_pack_qweight(c, out_features, in_or_groups, bits, w);
    if (zeros) return gptq_pack_qzeros(c, out_features, in_or_groups, bits, fmt, w);
    return gptq_pack_qweight(c, out_features, in_or_groups, bits, w);
  };
  auto unpack = [&](const std::uint32_t* w, std::uint8_t* c) {
    if (awq) return awq_unpack_qweight(w, out_features, in_or_groups, bits, c);
    if (zeros) return gptq_unpack_qzeros(w, out_features, in_or_groups, bits, fmt, c);
    return gptq_unpack_qweight(w, out_features, in_or_groups, bits, c);
  };

  if (sh.fake) {
    const status a = pack(lowbit_fuzz::fake_pointer<const std::uint8_t>(), lowbit_fuzz::fake_pointer<std::uint32_t>() + 64);
    LOWBIT_FUZZ_CHECK(!a.ok(), "layout %u: pack of %zu x %zu accepted", layout, out_features, in_or_groups);
    const status b = unpack(lowbit_fuzz::fake_pointer<const std::uint32_t>(), lowbit_fuzz::fake_pointer<std::uint8_t>() + 256);
    LOWBIT_FUZZ_CHECK(!b.ok(), "layout %u: unpack of %zu x %zu accepted", layout, out_features, in_or_groups);
    return;
  }
  const std::size_t n = sh.n();
  const std::size_t words = bits == 2 || bits == 4 || bits == 8 ? n * static_cast<std::size_t>(bits) / 32 : 0;
  std::vector<std::uint8_t> codes = read_codes(in, n, bits > 0 && bits <= 8 ? bits : 8);
  std::vector<std::uint32_t> packed = lowbit_fuzz::canary_buffer<std::uint32_t>(words + guard);
  std::vector<std::uint8_t> raw((words + guard) * 4 + 4, lowbit_fuzz::canary);
  std::uint32_t* w = packed.data();
  const std::uint8_t* c = codes.data();
  if (n > 0 && mode == 4) c = nullptr;
  if (n > 0 && mode == 5) w = nullptr;
  if (n > 0 && mode == 6) w = reinterpret_cast<std::uint32_t*>(raw.data() + 1);
  const status s = pack(c, w);
  const bool raw_untouched = lowbit_fuzz::untouched(raw);
  if (!s.ok()) {
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(packed) && raw_untouched, "layout %u: pack failed (%s) but wrote", layout,
                      s.message());
    const bool options_ok = (awq ? bits == 4 : (bits == 2 || bits == 4 || bits == 8)) &&
                            (!zeros || static_cast<unsigned>(fmt) <= 1u);
    if (n > 0 && mode == 6 && options_ok && along % per_word == 0)
      LOWBIT_FUZZ_CHECK(s.code() == errc::misaligned, "layout %u: misaligned words gave %s", layout, s.message());
    return;
  }
  LOWBIT_FUZZ_CHECK(n == 0 || mode < 4 || mode > 6, "layout %u: buffer mode %u accepted", layout, mode);
  for (std::size_t i = words; i < words + guard; ++i)
    LOWBIT_FUZZ_CHECK(packed[i] == 0xA5A5A5A5u, "layout %u: wrote word %zu of %zu", layout, i, words);
  std::vector<std::uint8_t> back = lowbit_fuzz::canary_buffer<std::uint8_t>(n + guard);
  const status u = unpack(packed.data(), back.data());
  LOWBIT_FUZZ_CHECK(u.ok(), "layout %u: unpack of packed codes: %s", layout, u.message());
  back.resize(n);
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(back, codes), "layout %u (bits %d, %zu x %zu): code %zu comes back changed",
                    layout, bits, out_features, in_or_groups, lowbit_fuzz::first_difference(back, codes));
}

template <class Block>
void check_ggml(input& in) {
  constexpr bool q4 = sizeof(Block) == sizeof(ggml_block_q4_0);
  const lowbit_fuzz::shape sh = lowbit_fuzz::read_shape(in, ggml_block_size, sizeof(float), std::size_t{1} << 16);
  const unsigned mode = in.u8() % 8u;
  auto quantize = [](const float* x, std::size_t r, std::size_t c, Block* b) {
    if constexpr (q4) {
      return ggml_quantize_q4_0(x, r, c, b);
    } else {
      return ggml_quantize_q8_0(x, r, c, b);
    }
  };
  auto dequantize = [](const Block* b, std::size_t r, std::size_t c, float* y) {
    if constexpr (q4) {
      return ggml_dequantize_q4_0(b, r, c, y);
    } else {
      return ggml_dequantize_q8_0(b, r, c, y);
    }
  };
  if (sh.fake) {
    const status a = quantize(lowbit_fuzz::fake_pointer<const float>(), sh.rows, sh.cols,
                              lowbit_fuzz::fake_pointer<Block>() + 64);
    LOWBIT_FUZZ_CHECK(!a.ok(), "ggml: quantize of %zu x %zu accepted", sh.rows, sh.cols);
    const status b = dequantize(lowbit_fuzz::fake_pointer<const Block>(), sh.rows, sh.cols,
                                lowbit_fuzz::fake_pointer<float>() + 4096);
    LOWBIT_FUZZ_CHECK(!b.ok(), "ggml: dequantize of %zu x %zu accepted", sh.rows, sh.cols);
    return;
  }
  const std::size_t n = sh.n();
  const bool valid_shape = sh.cols % ggml_block_size == 0;
  const std::size_t nb = valid_shape ? n / ggml_block_size : 0;
  const std::vector<float> src = in.floats(n, in.u8() < 220);

  auto run = [&](unsigned m) {
    std::vector<Block> blocks = lowbit_fuzz::canary_buffer<Block>(nb + guard);
    std::vector<unsigned char> raw((nb + guard) * sizeof(Block) + 2, lowbit_fuzz::canary);
    Block* b = blocks.data();
    const float* x = src.data();
    if (m == 4) x = nullptr;
    if (m == 5) b = nullptr;
    if (m == 6) b = reinterpret_cast<Block*>(raw.data() + 1);
    const status s = quantize(x, sh.rows, sh.cols, b);
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(raw) || m != 6 || s.ok(), "ggml: misaligned blocks written (%s)",
                      s.message());
    return std::make_pair(s, blocks);
  };
  if (!valid_shape || (n > 0 && mode >= 4 && mode <= 6)) {
    const auto r = run(valid_shape ? mode : 0);
    LOWBIT_FUZZ_CHECK(!r.first.ok(), "ggml: %s accepted", valid_shape ? "a bad buffer" : "cols % 32 != 0");
    if (valid_shape && mode == 6)
      LOWBIT_FUZZ_CHECK(r.first.code() == errc::misaligned, "ggml: misaligned blocks gave %s", r.first.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(r.second), "ggml: an error (%s) wrote", r.first.message());
    return;
  }
  const auto both = lowbit_fuzz::on_both_paths([&] { return run(0); });
  const status st = both.first.first;
  LOWBIT_FUZZ_CHECK(st.code() == both.second.first.code(), "ggml: status scalar %s, SIMD %s", st.message(),
                    both.second.first.message());
  LOWBIT_FUZZ_CHECK(st.ok() || st.code() == errc::non_finite_input || st.code() == errc::scale_overflow,
                    "ggml: valid call failed: %s", st.message());
  const std::vector<Block>& blocks = both.first.second;
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(blocks, both.second.second), "ggml: SIMD block %zu differs of %zu",
                    lowbit_fuzz::first_difference(blocks, both.second.second), nb);
  std::vector<Block> tail(blocks.begin() + static_cast<std::ptrdiff_t>(nb), blocks.end());
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(tail), "ggml: wrote past %zu blocks", nb);
  if (!st.ok() || n == 0) return;

  const auto ys = lowbit_fuzz::on_both_paths([&] {
    std::vector<float> y = lowbit_fuzz::canary_buffer<float>(n + guard);
    const status s = dequantize(blocks.data(), sh.rows, sh.cols, y.data());
    LOWBIT_FUZZ_CHECK(s.ok(), "ggml: dequantize: %s", s.message());
    return y;
  });
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, ys.second), "ggml: dequantize SIMD differs at %zu",
                    lowbit_fuzz::first_difference(ys.first, ys.second));

  // Unpack to codes and scales, pack again: the same blocks.
  std::vector<std::uint8_t> codes(n);
  std::vector<float> scales(nb);
  std::vector<Block> again = lowbit_fuzz::canary_buffer<Block>(nb);
  status u, p;
  if constexpr (q4) {
    u = ggml_unpack_q4_0(blocks.data(), sh.rows, sh.cols, codes.data(), scales.data());
    p = ggml_pack_q4_0(codes.data(), scales.data(), sh.rows, sh.cols, again.data());
  } else {
    u = ggml_unpack_q8_0(blocks.data(), sh.rows, sh.cols, codes.data(), scales.data());
    p = ggml_pack_q8_0(codes.data(), scales.data(), sh.rows, sh.cols, again.data());
  }
  LOWBIT_FUZZ_CHECK(u.ok() && p.ok(), "ggml: unpack %s, pack %s", u.message(), p.message());
  std::vector<Block> head(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(nb));
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(again, head), "ggml: pack(unpack(b)) changes block %zu",
                    lowbit_fuzz::first_difference(again, head));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const unsigned layout = in.u8() % 5u;
  switch (layout) {
    case 0:
    case 1:
    case 2: check_words(in, layout); break;
    case 3: check_ggml<ggml_block_q4_0>(in); break;
    default: check_ggml<ggml_block_q8_0>(in); break;
  }
  return 0;
}
