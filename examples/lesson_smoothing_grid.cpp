// lesson_smoothing_grid: the lesson's SmoothQuant teaching example (lesson 003, "Activation outlier
// channels ..."): an outlier channel leaves an ordinary channel only a few INT8 levels; smoothing
// at alpha = 0.5 gives it about 40 and cuts the W8A8 output error from 1.95 % to 0.15 %.
//
//   lesson_smoothing_grid            prints every number beside the lesson's
//   lesson_smoothing_grid --check    exits non-zero when one is outside its tolerance
//
// The lesson does not give its teaching example's inputs, so X and W below are constructed. They
// were found by a throwaway search (not part of lowbit): random 4 x 2 activations with an integer
// outlier channel (30..60) and a one-decimal ordinary channel, one-decimal 2 x 2 weights, then
// one-step changes kept while they brought the four stated numbers closer. Every number shown
// here is recomputed by lowbit; none is copied from the search.
//
// The W8A8 recipe: activations INT8 with one scale per tensor, weights INT8 with one scale per
// output channel, both symmetric (-127..127), round half to even.
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lesson/report.hpp"

namespace {

constexpr std::size_t kTokens = 4, kIn = 2, kOut = 2;

// Activations [tokens, in]: channel 0 is the outlier channel (39 to 55 in every token), channel 1
// an ordinary one (|x| <= 1.3).
const std::vector<float> kX = {
    55.0f, 0.2f,   //
    46.0f, -1.3f,  //
    39.0f, 0.1f,   //
    48.0f, -0.2f,  //
};
// Weights [out, in], as a checkpoint stores them. Channel 1's weights are the larger ones, so
// smoothing has room to move difficulty onto them.
const std::vector<float> kW = {
    -0.5f, -2.1f,  //
    -0.1f, -1.3f,  //
};

// A lowbit call that fails here is a bug in the example: say which and stop.
void ok(lowbit::status s, const char* what) {
  if (!s) {
    fmt::print(stderr, "{}: {}\n", what, s.message());
    std::exit(2);
  }
}

// x [rows, cols] quantized with p and dequantized again, with the codes and scales used.
struct round_trip {
  std::vector<float> back;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
};

round_trip quantize(const std::vector<float>& x, std::size_t rows, std::size_t cols, const lowbit::int_params& p) {
  const lowbit::result<lowbit::int_grouping> g = lowbit::int_groups(p, rows, cols);
  ok(g.status, "int_groups");
  round_trip q{std::vector<float>(x.size()), std::vector<std::uint8_t>(x.size()),
               std::vector<float>(g.value.group_count)};
  ok(lowbit::quantize_int(lowbit::span<const float>(x), rows, cols, p, q.codes, q.scales, {}), "quantize_int");
  ok(lowbit::dequantize_int(lowbit::span<const std::uint8_t>(q.codes), q.scales, {}, rows, cols, p, q.back),
     "dequantize_int");
  return q;
}

// Y = X W^T (W stored [out, in]).
std::vector<float> matmul(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> y(kTokens * kOut);
  lowbit::gemm_options nt;
  nt.op_b = lowbit::matrix_op::transpose;
  ok(lowbit::gemm(x.data(), kIn, w.data(), kIn, kTokens, kOut, kIn, nt, y.data(), kOut), "gemm");
  return y;
}

// max |m[., j]| of a row-major [rows, kIn] matrix: a channel's largest magnitude.
float channel_max(const std::vector<float>& m, std::size_t j) {
  float a = 0.0f;
  for (std::size_t i = j; i < m.size(); i += kIn) a = std::max(a, std::fabs(m[i]));
  return a;
}

// The W8A8 layer on x and w, against the unquantized product y.
struct w8a8 {
  double error_percent;  // ||Y - Y^||_F / ||Y||_F
  int channel1_levels;   // the largest |integer level| channel 1's activations reach
  double channel1_steps; // max|X_1| / step, the same before rounding
};

w8a8 run_w8a8(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& y) {
  const round_trip xq = quantize(x, kTokens, kIn, lowbit::int_presets::int8_per_tensor());
  const round_trip wq = quantize(w, kOut, kIn, lowbit::int_presets::int8_per_channel());
  const std::vector<float> yq = matmul(xq.back, wq.back);
  const lowbit::result<double> e = lowbit::relative_frobenius_error(y, yq);
  ok(e.status, "relative_frobenius_error");
  int levels = 0;
  for (std::size_t t = 0; t < kTokens; ++t)
    levels = std::max(levels, std::abs(lowbit::symmetric_value(xq.codes[t * kIn + 1], 8)));
  return {100.0 * e.value, levels, static_cast<double>(channel_max(x, 1)) / static_cast<double>(xq.scales[0])};
}

void print_matrix(lesson::report& r, const std::string& name, const std::vector<float>& m, std::size_t rows) {
  r.note(name);
  for (std::size_t i = 0; i < rows; ++i) r.note(fmt::format("  {:9.4f} {:9.4f}", m[i * kIn], m[i * kIn + 1]));
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_smoothing_grid: SmoothQuant's teaching example (W8A8, alpha = 0.5)",
                   "003, paragraph \"Activation outlier channels\"");
  if (!r.parse(argc, argv)) return 2;
  const std::string built = "constructed X and W (see the top of the file)";
  const std::vector<float> y = matmul(kX, kW);

  r.section("The constructed layer");
  print_matrix(r, "X [tokens, in] (channel 0 is the outlier channel):", kX, kTokens);
  print_matrix(r, "W [out, in]:", kW, kOut);
  r.note("usable grid points of channel 1: the largest integer level |q| its activations reach,");
  r.note("i.e. max|X_1| / step rounded; the other side of zero mirrors it");

  r.section("W8A8 without smoothing");
  const w8a8 before = run_w8a8(kX, kW, y);
  // The outlier's 55 sets the per-tensor step 55 / 127 = 0.433; channel 1 spans 1.3 / 0.433 steps.
  r.note(fmt::format("channel 1: max|X_1| / step = {:.3f}", before.channel1_steps));
  r.constructed("channel 1: usable grid points", before.channel1_levels, 3.0, 0.0, 0, built);
  r.constructed("relative output error (%)", before.error_percent, 1.95, 0.0003, 2, built);
  {
    // Per token instead: each token's outlier still sets that token's step.
    lowbit::int_params per_token = lowbit::int_presets::int8_per_token();
    const round_trip xq = quantize(kX, kTokens, kIn, per_token);
    int levels = 0;
    for (std::size_t t = 0; t < kTokens; ++t)
      levels = std::max(levels, std::abs(lowbit::symmetric_value(xq.codes[t * kIn + 1], 8)));
    r.note(fmt::format("per-token activation scales instead: channel 1 reaches level {}", levels));
  }

  r.section("SmoothQuant, alpha = 0.5: X^ = X diag(s)^-1, W^ = W diag(s)");
  // s_j = max|X_j|^alpha / max|W_j|^(1 - alpha), from the calibration maxima of X and W's columns.
  const float act_max[kIn] = {channel_max(kX, 0), channel_max(kX, 1)};
  const lowbit::linear_weight layers[] = {{kW.data(), kOut}};
  float s[kIn] = {};
  ok(lowbit::smoothquant_scales(act_max, lowbit::span<const lowbit::linear_weight>(layers), kIn,
                                lowbit::smoothquant_options{0.5f}, s),
     "smoothquant_scales");
  std::vector<float> xs(kX.size()), ws = kW;
  ok(lowbit::divide_input_channels(kX.data(), s, kTokens, kIn, xs.data()), "divide_input_channels");
  ok(lowbit::scale_input_channels(s, kOut, kIn, ws.data()), "scale_input_channels");
  r.note(fmt::format("s = [{:.4f}, {:.4f}]", s[0], s[1]));
  print_matrix(r, "X^:", xs, kTokens);
  print_matrix(r, "W^:", ws, kOut);
  // At alpha = 0.5, max|X_j| / s_j = s_j max|W_j| = sqrt(max|X_j| max|W_j|): both sides of every
  // channel meet at the geometric mean (to float rounding).
  for (std::size_t j = 0; j < kIn; ++j) {
    const double mean = std::sqrt(static_cast<double>(act_max[j]) * static_cast<double>(channel_max(kW, j)));
    r.exact(fmt::format("channel {}: max|X^_{}| = sqrt(max|X| max|W|)", j, j), channel_max(xs, j), mean, 4);
    r.exact(fmt::format("channel {}: max|W^_{}| = sqrt(max|X| max|W|)", j, j), channel_max(ws, j), mean, 4);
  }

  r.section("W8A8 after smoothing");
  const w8a8 after = run_w8a8(xs, ws, y);
  // Channel 0's maximum is now sqrt(55 x 0.5) = 5.24, channel 1's sqrt(1.3 x 2.1) = 1.65: the
  // per-tensor step shrinks 10.5-fold (55 -> 5.24) while channel 1 even grows (1.3 -> 1.65).
  r.note(fmt::format("channel 1: max|X^_1| / step = {:.3f}", after.channel1_steps));
  r.constructed("channel 1: usable grid points", after.channel1_levels, 40.0, 0.0, 0, built);
  r.constructed("relative output error (%)", after.error_percent, 0.15, 0.0003, 2, built);

  return r.finish();
}
