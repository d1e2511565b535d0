// lesson_block_scaling: why one scale per tensor is fragile, and what block scaling costs and buys.
//
//   lesson 000, section 2.4 (MXFP4 vs NVFP4: block, scale overhead, bits per element);
//   lesson 003, paragraph 2 (the 8-weight INT4 example with and without an outlier);
//   lesson 003, paragraph 3 (bits per element, the block [0.3, -1.2, 2.4, 5.0] in MXFP4 and NVFP4).
//
// Every value is quantized and read back by lowbit (integer schemes, mx_*, nvfp4_*), byte counts
// come from its *_storage_for, and errors from lowbit::mse.
#include <lowbit/formats/types.hpp>
#include <lowbit/metrics.hpp>
#include <lowbit/schemes/integer.hpp>
#include <lowbit/schemes/mx.hpp>
#include <lowbit/schemes/nvfp4.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lesson/report.hpp"

namespace {

// A call that cannot run leaves the example without its numbers: stop.
void must(const lowbit::status& s, const char* what) {
  if (s) return;
  fmt::print(stderr, "{}: {}\n", what, s.message());
  std::exit(2);
}
template <class T>
T must(const lowbit::result<T>& r, const char* what) {
  must(r.status, what);
  return r.value;
}

// An exactly representable value as the lesson writes it: 4, 0.5.
std::string g(float v) { return fmt::format("{:g}", v); }

// MSE over the first n values of two buffers.
double mse(const std::vector<float>& x, const std::vector<float>& y, std::size_t n) {
  return must(lowbit::mse(x.data(), n, y.data(), n), "mse");
}

void bits_per_element(lesson::report& r) {
  r.section("Lesson 000 2.4 and 003 paragraph 3: bits per element of a 4096 x 4096 matrix");
  const lowbit::mx_options mo = lowbit::mx_presets::ocp();
  const lowbit::storage mx = must(lowbit::mx_storage_for<lowbit::mxfp4>(4096, 4096, mo), "mx_storage_for");
  const lowbit::storage nv = must(lowbit::nvfp4_storage_for(4096, 4096), "nvfp4_storage_for");
  // Scale bits per element: everything but the 4-bit payload. NVFP4's 4-byte tensor scale is
  // counted too (it adds 2e-6 bits here).
  auto scale_bits = [](const lowbit::storage& s) {
    return 8.0 * static_cast<double>(s.scale_bytes) / static_cast<double>(s.elements);
  };
  r.exact("MXFP4 block", static_cast<long long>(mo.block_size), 32);
  r.exact("NVFP4 block", static_cast<long long>(lowbit::nvfp4_block_size), 16);
  r.exact("MXFP4 scale overhead, bits per element", scale_bits(mx), 0.25, 2);
  r.exact("NVFP4 scale overhead, bits per element", scale_bits(nv), 0.50, 2);
  r.exact("MXFP4 bits per element", mx.bits_per_weight(), 4.25, 2);
  r.exact("NVFP4 bits per element", nv.bits_per_weight(), 4.50, 2);
}

void outlier(lesson::report& r) {
  r.section("Lesson 003, paragraph 2: eight weights, INT4 symmetric -7..7, one scale");
  r.note("the lesson does not list its weights; these eight reproduce every number it gives:");
  std::vector<float> w{0.35f, -0.40f, 0.49f, -0.51f, 0.53f, -0.68f, 0.74f, 1.40f};
  r.note(fmt::format("  w = [{}], then the last one replaced by 14.0", fmt::join(w, ", ")));

  lowbit::int_params p;  // symmetric, restricted range -7..7: s = amax / 7
  p.bits = 4;
  p.granularity = lowbit::granularity::per_tensor;
  struct quantized {
    float scale;
    std::vector<std::uint8_t> codes;
    std::vector<float> back;
  };
  auto quantize = [&](const std::vector<float>& x) {
    quantized q{0.0f, std::vector<std::uint8_t>(x.size()), std::vector<float>(x.size())};
    must(lowbit::quantize_int(x.data(), 1, x.size(), p, q.codes.data(), &q.scale, nullptr), "quantize_int");
    must(lowbit::dequantize_int(q.codes.data(), &q.scale, nullptr, 1, x.size(), p, q.back.data()), "dequantize_int");
    return q;
  };

  const quantized plain = quantize(w);
  std::vector<float> w_out = w;
  w_out.back() = 14.0f;
  const quantized spoiled = quantize(w_out);
  int zeros = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i) zeros += lowbit::symmetric_value(spoiled.codes[i], p.bits) == 0;

  const double mse8 = mse(w, plain.back, 8), mse8_out = mse(w_out, spoiled.back, 8);
  const double mse7 = mse(w, plain.back, 7), mse7_out = mse(w_out, spoiled.back, 7);  // the seven unchanged
  r.exact("max 1.40: s", static_cast<double>(plain.scale), 0.2, 1);
  r.exact("max 1.40: MSE over eight", mse8, 0.0042, 4);
  r.exact("max 14.0: s", g(spoiled.scale), "2");
  r.exact("max 14.0: the other seven rounding to 0", static_cast<long long>(zeros), 7);
  r.exact("max 14.0: MSE over eight", mse8_out, 0.2592, 4);
  r.exact("seven unchanged values: MSE before", mse7, 0.0048, 4);
  r.exact("seven unchanged values: MSE after", mse7_out, 0.29623, 5);
  r.exact("ratio, denominator 8", mse8_out / mse8, 61.7, 1);
  r.exact("ratio, denominator 7", mse7_out / mse7, 61.7, 1);
}

void one_block(lesson::report& r) {
  r.section("Lesson 003, paragraph 3: the block [0.3, -1.2, 2.4, 5.0]");
  // MX blocks hold 32 values and NVFP4 blocks 16: the four values are padded with zeros, which
  // change no block maximum, and the errors are taken over the four real values only.
  const std::vector<float> values{0.3f, -1.2f, 2.4f, 5.0f};
  auto padded = [&](std::size_t n) {
    std::vector<float> x(n, 0.0f);
    std::copy(values.begin(), values.end(), x.begin());
    return x;
  };

  // MXFP4 (OCP): scale 2^(floor(log2 amax) - 2) = 2^0, elements E2M1 ties to even.
  const lowbit::mx_options mo = lowbit::mx_presets::ocp();
  const std::vector<float> x32 = padded(32);
  std::vector<std::uint8_t> mx_elements(lowbit::packed_bytes(32, lowbit::mxfp4::element_bits)), mx_scale(1);
  std::vector<float> mx_back(32);
  must(lowbit::mx_quantize<lowbit::mxfp4>(x32.data(), 32, mo, mx_elements.data(), mx_scale.data()), "mx_quantize");
  must(lowbit::mx_dequantize<lowbit::mxfp4>(mx_elements.data(), mx_scale.data(), 32, mo, mx_back.data()),
       "mx_dequantize");
  const float mx_x = lowbit::decode(lowbit::float8_e8m0fnu::from_bits(mx_scale[0]));
  r.note(fmt::format("MXFP4 reads back [{}] (5.0 is a tie between E2M1's 4 and 6: to even)",
                     fmt::join(mx_back.begin(), mx_back.begin() + 4, ", ")));
  r.exact("MXFP4 scale (E8M0)", g(mx_x), "1");
  r.exact("MXFP4: 5.0 reads back as", g(mx_back[3]), "4");
  r.exact("MXFP4 MSE", mse(values, mx_back, 4), 0.31, 2);

  // NVFP4 with tensor scale 1 (single level, the default options): block scale E4M3(amax / 6).
  const std::vector<float> x16 = padded(16);
  const lowbit::nvfp4_options single = lowbit::nvfp4_presets::nvidia();  // tensor_scale = 1
  std::vector<std::uint8_t> nv_elements(lowbit::packed_bytes(16, 4)), nv_scale(1);
  std::vector<float> nv_back(16);
  must(lowbit::nvfp4_quantize(x16.data(), 16, single, nv_elements.data(), nv_scale.data()), "nvfp4_quantize");
  must(lowbit::nvfp4_dequantize(nv_elements.data(), nv_scale.data(), 16, single, nv_back.data()), "nvfp4_dequantize");
  const double nv_mse = mse(values, nv_back, 4);
  r.note(fmt::format("NVFP4 (tensor scale 1) reads back [{}], MSE {:.6g}",
                     fmt::join(nv_back.begin(), nv_back.begin() + 4, ", "), nv_mse));
  r.exact("NVFP4 block scale E4M3(5/6)",
          static_cast<double>(lowbit::decode(lowbit::float8_e4m3fn::from_bits(nv_scale[0]))), 0.8125, 4);
  r.exact("NVFP4 MSE (\"about 0.0072\")", nv_mse, 0.0072, 4);

  // Not in the lesson: NVIDIA's production recipe, two levels. The tensor scale amax / (448 * 6)
  // puts this block's scale on E4M3's max, 448, where it has all its mantissa bits.
  lowbit::nvfp4_options two = lowbit::nvfp4_presets::nvidia();
  two.tensor_scale = must(lowbit::nvfp4_compute_tensor_scale(x16.data(), 16, two), "nvfp4_compute_tensor_scale");
  must(lowbit::nvfp4_quantize(x16.data(), 16, two, nv_elements.data(), nv_scale.data()), "nvfp4_quantize");
  must(lowbit::nvfp4_dequantize(nv_elements.data(), nv_scale.data(), 16, two, nv_back.data()), "nvfp4_dequantize");
  r.note(fmt::format("not in the lesson, NVIDIA's two-level recipe: tensor scale {:.7f} = 5/2688, block scale {},",
                     two.tensor_scale, lowbit::decode(lowbit::float8_e4m3fn::from_bits(nv_scale[0]))));
  r.note(fmt::format("  reads back [{}]", fmt::join(nv_back.begin(), nv_back.begin() + 4, ", ")));
  r.exact("NVFP4 MSE, two-level recipe (not in the lesson)", mse(values, nv_back, 4), 0.006528, 6);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_block_scaling: one scale per tensor vs block scales",
                   "000 section 2.4; 003 paragraphs 2 and 3");
  if (!r.parse(argc, argv)) return 2;
  bits_per_element(r);
  outlier(r);
  one_block(r);
  return r.finish();
}
