// lesson_gptq: the two-weight GPTQ example of lesson 003, paragraph 5, through lowbit's Hessian
// accumulator and GPTQ.
//
// Two strongly correlated inputs, three samples, w = [0.62, 0.37], a grid of step 0.25.
// Rounding each weight to nearest leaves both errors with the same sign, and because the inputs
// move together the output errors add up. GPTQ rounds w1, then moves its error onto w2 through
// the Hessian H = 2 X X^T, so that w2's rounding can cancel it.
#include <lowbit/core/span.hpp>
#include <lowbit/metrics.hpp>
#include <lowbit/schemes/integer.hpp>
#include <lowbit/transforms/gptq.hpp>
#include <lowbit/transforms/hessian.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
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
T must(lowbit::result<T>&& r, const char* what) {
  must(r.status, what);
  return std::move(r.value);
}

constexpr std::size_t in = 2, samples = 3;
// The lesson's X: one row per input, one column per sample.
constexpr float X[in][samples] = {{2.4f, 0.5f, 0.5f}, {2.4f, 0.5f, 0.2f}};
const std::vector<float> w{0.62f, 0.37f};  // one output channel: a 1 x 2 weight
const float step = 0.25f;

// The grid: symmetric, one scale per output channel, fixed at the step. 8 bits, so that no
// weight here comes near the ends of the grid: only the step matters.
lowbit::int_params grid() {
  lowbit::int_params p;
  p.bits = 8;
  p.granularity = lowbit::granularity::per_channel;
  return p;
}

// The layer's outputs y_t = w . x_t for the three samples.
std::vector<float> outputs(const std::vector<float>& weights) {
  std::vector<float> y(samples, 0.0f);
  for (std::size_t t = 0; t < samples; ++t)
    for (std::size_t i = 0; i < in; ++i) y[t] += weights[i] * X[i][t];
  return y;
}

// The lesson's error: the sum over samples of the squared output error, ||(w - w^)^T X||^2.
double output_error(const std::vector<float>& w_hat) {
  const std::vector<float> y = outputs(w), y_hat = outputs(w_hat);
  return static_cast<double>(samples) * must(lowbit::mse(y, y_hat), "mse");
}

std::vector<float> dequantize(const std::uint8_t* codes, const float* scales) {
  std::vector<float> w_hat(in);
  must(lowbit::dequantize_int(codes, scales, nullptr, 1, in, grid(), w_hat.data()), "dequantize_int");
  return w_hat;
}

std::string show(const std::vector<float>& v) { return fmt::format("[{:g}, {:g}]", v[0], v[1]); }

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_gptq: GPTQ moves one weight's rounding error onto the next", "003 paragraph 5");
  if (!r.parse(argc, argv)) return 2;

  // The Hessian from the calibration samples, fed as activation rows [tokens, in] = X^T.
  // lowbit's accumulator averages over tokens: H = (2 / n) X X^T with n = 3, the lesson's H
  // divided by n. Ratios of its entries and GPTQ's result do not change; errors read from it are
  // multiplied back by n / 2.
  std::vector<float> rows(samples * in);
  for (std::size_t t = 0; t < samples; ++t)
    for (std::size_t i = 0; i < in; ++i) rows[t * in + i] = X[i][t];
  lowbit::hessian_accumulator acc = must(lowbit::hessian_accumulator::create(in), "hessian_accumulator::create");
  must(acc.add(rows.data(), samples, in), "hessian_accumulator::add");
  std::vector<float> h(in * in);
  must(acc.hessian(lowbit::span<float>(h)), "hessian_accumulator::hessian");
  const double n_over_2 = static_cast<double>(acc.tokens()) / 2.0;

  r.section("Lesson 003, paragraph 5: the Hessian");
  const double ratio = static_cast<double>(h[1]) / h[3];
  r.note(fmt::format("H = (2/3) X X^T = [[{:.4f}, {:.4f}], [{:.4f}, {:.4f}]], H12 / H22 = {:.4f}", h[0], h[1], h[2],
                     h[3], ratio));
  r.exact("H12 / H22", ratio, 1.01, 2);
  r.exact("H12 / H22, to four decimals", ratio, 1.0099, 4);

  r.section("Round to nearest on the step-0.25 grid");
  std::uint8_t rtn_codes[in];
  must(lowbit::quantize_int_fixed(w.data(), &step, nullptr, 1, in, grid(), rtn_codes), "quantize_int_fixed");
  const std::vector<float> rtn = dequantize(rtn_codes, &step);
  r.exact("RTN weights", show(rtn), "[0.5, 0.25]");
  r.exact("RTN summed squared output error", output_error(rtn), 0.353, 3);

  r.section("GPTQ on the same grid (gptq_quantize_fixed, dampening 0)");
  lowbit::gptq_options o;
  o.percdamp = 0.0;  // the lesson's H as it is; H is positive definite, nothing to stabilise
  const lowbit::gptq_output g =
      must(lowbit::gptq_quantize_fixed(w.data(), h.data(), &step, nullptr, 1, in, grid(), o), "gptq_quantize_fixed");
  const std::vector<float> q = dequantize(g.codes.values().data(), g.scales.values().data());
  const double e1 = static_cast<double>(w[0]) - q[0];
  r.exact("w1 rounds to", fmt::format("{:g}", q[0]), "0.5");
  r.exact("w1's error pushed onto w2", e1, 0.12, 2);
  r.note(fmt::format("w2 becomes 0.37 + 0.12 x H12/H22 = {:.4f} before it is rounded", w[1] + e1 * ratio));
  r.exact("GPTQ weights", show(q), "[0.5, 0.5]");
  r.exact("GPTQ summed squared output error", output_error(q), 0.00176, 5);

  // GPTQ's own report: tr(D H D^T) against the H it was given, i.e. the same two errors times 2/n.
  r.note(fmt::format("GPTQ's report: output_error_rtn {:.6f}, output_error {:.6f} (for H = (2/n) X X^T)",
                     g.report.output_error_rtn, g.report.output_error));
  r.exact("report: RTN error x n/2", g.report.output_error_rtn * n_over_2, 0.353, 3);
  r.exact("report: GPTQ error x n/2", g.report.output_error * n_over_2, 0.00176, 5);

  // The default 1 % dampening adds 0.01 * mean(diag H) to the diagonal: w2's correction becomes
  // 0.12 x H12 / (H22 + damp), still enough to reach 0.5.
  const lowbit::gptq_output d =
      must(lowbit::gptq_quantize_fixed(w.data(), h.data(), &step, nullptr, 1, in, grid()), "gptq_quantize_fixed");
  r.exact("GPTQ weights, default 1 % dampening", show(dequantize(d.codes.values().data(), d.scales.values().data())),
          "[0.5, 0.5]");
  return r.finish();
}
