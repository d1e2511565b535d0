// lesson_smoothquant: the numbers of the lesson's section 4 (the activation outlier problem and
// SmoothQuant), recomputed with lowbit.
//
//   lesson_smoothquant                  prints every number beside the lesson's
//   lesson_smoothquant --check          exits non-zero when one is outside its tolerance
//   lesson_smoothquant --csv PATH       also writes the alpha curve (alpha,sqnr_db) for the plot
//                                       (scripts/plot-lesson.sh draws docs/plots/smoothquant_alpha.png)
//
// The lesson's numbers come from a Python script that draws its synthetic matrices with numpy's
// legacy RandomState. lesson/numpy_random.hpp replays that stream, so the inputs here are the
// script's inputs to the last bit; lowbit then does the work in float32 where numpy used float64.
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "lesson/numpy_random.hpp"
#include "lesson/report.hpp"

namespace {

// The synthetic layer of sections 4.1 and 4.4: 128 tokens, 256 input channels, 512 outputs.
constexpr std::size_t kTokens = 128, kIn = 256, kOut = 512;
constexpr std::size_t kOutlierChannel = 112;
constexpr double kOutlier = 80.0;

// A lowbit call that fails here is a bug in the example: say which and stop.
void ok(lowbit::status s, const char* what) {
  if (!s) {
    fmt::print(stderr, "{}: {}\n", what, s.message());
    std::exit(2);
  }
}

// The INT8 schemes of the lesson: symmetric -127..127, round half to even; activations with one
// scale for the whole tensor, weights with one per output channel.
const lowbit::int_params int8_per_tensor = lowbit::int_presets::int8_per_tensor();
const lowbit::int_params int8_per_channel = lowbit::int_presets::int8_per_channel();

// x [rows, cols] quantized with p and dequantized again: the values the INT8 GEMM computes with.
std::vector<float> int_round_trip(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                  const lowbit::int_params& p) {
  std::vector<float> y(x.size());
  ok(lowbit::quantize_dequantize_int(lowbit::span<const float>(x), rows, cols, p, lowbit::span<float>(y)),
     "quantize_dequantize_int");
  return y;
}

double sqnr_db(const std::vector<float>& ref, const std::vector<float>& test) {
  const lowbit::result<double> r = lowbit::sqnr_db(ref, test);
  ok(r.status, "sqnr_db");
  return r.value;
}

std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(v[i]);
  return f;
}

// ----- exercise 02 and section 4.1: channel 112 ------------------------------------------------

void channel_112(lesson::report& r) {
  r.section("Exercise 02: s for channel 112 (max|X| = 80, max|W| = 0.02)");
  struct row {
    float alpha;
    double s, act_max, weight_max;  // the lesson's values
    int s_digits, max_digits;       // the digits the lesson prints them with
  };
  const row rows[] = {{0.0f, 50, 1.6, 1.0, 0, 1},
                      {0.5f, 63.25, 1.27, 1.26, 2, 2},
                      {0.85f, 74.55, 1.07, 1.49, 2, 2},
                      {1.0f, 80, 1.0, 1.6, 0, 1}};
  const float act_max = 80.0f, weight_max = 0.02f;
  for (const row& c : rows) {
    float s = 0.0f;
    ok(lowbit::smoothquant_scales(&act_max, &weight_max, 1, lowbit::smoothquant_options{c.alpha}, &s),
       "smoothquant_scales");
    const std::string a = fmt::format("alpha {:g}", c.alpha);
    // After smoothing the channel's activations are divided by s, its weights multiplied by s.
    const double smoothed_act = 80.0 / s, smoothed_weight = 0.02 * s;
    r.exact(a + ": s_112", s, c.s, c.s_digits);
    if (c.alpha == 0.5f) {
      // Balanced: both maxima are sqrt(80 * 0.02) = 1.2649; the lesson prints this one as 1.27.
      r.within(a + ": max|X^| = 80 / s", smoothed_act, c.act_max, 0.01, 2,
               "both maxima are sqrt(80 x 0.02) = 1.2649; the lesson rounds one up to 1.27");
    } else {
      r.exact(a + ": max|X^| = 80 / s", smoothed_act, c.act_max, c.max_digits);
    }
    r.exact(a + ": max|W^| = 0.02 s", smoothed_weight, c.weight_max, c.max_digits);
  }

  r.section("4.1: one per-tensor INT8 scale for a tensor holding the outlier");
  // The outlier and a few typical activations, quantized together with one scale.
  const std::vector<float> x = {80.0f, 0.35f, 0.5f, 0.65f, 0.9f};
  const std::vector<float> back = int_round_trip(x, 1, x.size(), int8_per_tensor);
  const double scale = back[0] / 127.0;  // 80 comes back exactly as 127 steps
  const auto level = [&](std::size_t i) { return std::lround(back[i] / scale); };
  r.exact("per-tensor scale S = 80 / 127", scale, 0.63, 2);
  r.exact("0.5 / S, in steps", 0.5 / scale, 0.8, 1);
  std::set<int> levels;
  for (std::size_t i = 1; i < x.size(); ++i) levels.insert(static_cast<int>(level(i)));
  r.exact("integer level of 0.5", static_cast<long long>(level(2)), 1LL);
  r.note(fmt::format("0.35, 0.5, 0.65 and 0.9 use {} integer level(s) ({}); 0.5 comes back as {:.4f}", levels.size(),
                     fmt::join(levels, ", "), back[2]));
}

// ----- section 4.4: the W8A8 output SQNR against alpha -----------------------------------------

// The script's layer, drawn as numpy draws it: X = normal(0, 0.5, (128, 256)) first, then
// W = normal(0, 0.02, (256, 512)) (Y = X W), then X[:, 112] = 80.
struct layer {
  std::vector<float> x;   // [tokens, in]
  std::vector<float> wt;  // [out, in]: W transposed, lowbit's (and a checkpoint's) weight layout
  std::vector<float> y;   // [tokens, out]: X W from the float64 draws, as numpy computes it
};

layer make_layer(std::uint32_t seed, bool with_reference) {
  lesson::numpy_random rng(seed);
  std::vector<double> x = rng.normal(0.0, 0.5, kTokens * kIn);
  const std::vector<double> w = rng.normal(0.0, 0.02, kIn * kOut);  // [in, out]
  for (std::size_t t = 0; t < kTokens; ++t) x[t * kIn + kOutlierChannel] = kOutlier;
  layer l;
  l.x = to_float(x);
  l.wt.resize(kOut * kIn);
  for (std::size_t j = 0; j < kIn; ++j)
    for (std::size_t o = 0; o < kOut; ++o) l.wt[o * kIn + j] = static_cast<float>(w[j * kOut + o]);
  if (with_reference) {  // the unquantized output, in float64 like the script, rounded once
    std::vector<double> y(kTokens * kOut, 0.0);
    for (std::size_t t = 0; t < kTokens; ++t)
      for (std::size_t j = 0; j < kIn; ++j)
        for (std::size_t o = 0; o < kOut; ++o) y[t * kOut + o] += x[t * kIn + j] * w[j * kOut + o];
    l.y = to_float(y);
  }
  return l;
}

// Per input channel j, max over tokens of |X_tj|: SmoothQuant's calibration statistic.
std::vector<float> activation_maxima(const layer& l) {
  lowbit::activation_stats_options o;
  o.reservoir_capacity = 0;  // only the maxima are needed, no rows kept
  lowbit::result<lowbit::activation_stats> st = lowbit::activation_stats::create(kIn, o);
  ok(st.status, "activation_stats::create");
  ok(st.value.add(lowbit::span<const float>(l.x)), "activation_stats::add");
  std::vector<float> amax(kIn);
  ok(st.value.max_abs(lowbit::span<float>(amax)), "activation_stats::max_abs");
  return amax;
}

// The W8A8 output SQNR at one alpha, step by step as the lesson describes it.
double w8a8_sqnr(const layer& l, float alpha) {
  // 1. s from the activation maxima and the weight maxima of each input channel.
  const std::vector<float> amax = activation_maxima(l);
  const lowbit::linear_weight layers[] = {{l.wt.data(), kOut}};
  std::vector<float> s(kIn);
  ok(lowbit::smoothquant_scales(amax.data(), lowbit::span<const lowbit::linear_weight>(layers), kIn,
                                lowbit::smoothquant_options{alpha}, s.data()),
     "smoothquant_scales");
  // 2. X^ = X diag(s)^-1 and W^ = diag(s) W: the product is unchanged.
  std::vector<float> xs(l.x.size()), ws = l.wt;
  ok(lowbit::divide_input_channels(l.x.data(), s.data(), kTokens, kIn, xs.data()), "divide_input_channels");
  ok(lowbit::scale_input_channels(s.data(), kOut, kIn, ws.data()), "scale_input_channels");
  // 3. INT8: activations with one scale per tensor, weights one scale per output channel.
  const std::vector<float> xq = int_round_trip(xs, kTokens, kIn, int8_per_tensor);
  const std::vector<float> wq = int_round_trip(ws, kOut, kIn, int8_per_channel);
  // 4. Y^ = Xq Wq (Wq stored [out, in], so transposed) against the unquantized Y.
  std::vector<float> yq(kTokens * kOut);
  lowbit::gemm_options nt;
  nt.op_b = lowbit::matrix_op::transpose;
  ok(lowbit::gemm(xq.data(), kIn, wq.data(), kIn, kTokens, kOut, kIn, nt, yq.data(), kOut), "gemm");
  return sqnr_db(l.y, yq);
}

// SQNR at every alpha of `alphas` through lowbit's own alpha search, which runs the four steps of
// w8a8_sqnr for each alpha (its reference Y is the float32 product X W).
std::vector<double> search_sqnr(const layer& l, const std::vector<float>& alphas) {
  const std::vector<float> amax = activation_maxima(l);
  const lowbit::linear_weight layers[] = {{l.wt.data(), kOut}};
  lowbit::smoothquant_search_options o;
  o.alphas = lowbit::span<const float>(alphas);
  o.activations = int8_per_tensor;
  o.weights = int8_per_channel;
  const lowbit::result<lowbit::smoothquant_search_result> res = lowbit::smoothquant_search(
      l.x.data(), amax.data(), lowbit::span<const lowbit::linear_weight>(layers), kTokens, kIn, o);
  ok(res.status, "smoothquant_search");
  std::vector<double> db;
  for (double e : res.value.errors.values()) db.push_back(-10.0 * std::log10(e));  // error = 1 / SNR
  return db;
}

void alpha_sweep(lesson::report& r) {
  r.section("4.4: W8A8 output SQNR (X per-tensor, W per output channel, seed 42)");
  const layer l = make_layer(42, true);
  const double at0 = w8a8_sqnr(l, 0.0f), at05 = w8a8_sqnr(l, 0.5f), at085 = w8a8_sqnr(l, 0.85f),
               at1 = w8a8_sqnr(l, 1.0f);
  r.exact("alpha 0 (dB)", at0, 29.15, 2);
  r.exact("alpha 0.5 (dB)", at05, 45.95, 2);
  r.exact("alpha 0.85 (dB)", at085, 42.90, 2);
  r.exact("alpha 1.0 (dB)", at1, 37.72, 2);
  r.exact("alpha 0.5 over alpha 0 (dB)", at05 - at0, 16.80, 2);
  r.exact("alpha 0.5 over alpha 1.0 (dB)", at05 - at1, 8.23, 2);

  // The whole curve, 0 to 1 in steps of 0.05, through lowbit's search.
  std::vector<float> grid;
  for (int i = 0; i <= 20; ++i) grid.push_back(static_cast<float>(i) / 20.0f);
  const std::vector<double> curve = search_sqnr(l, grid);
  r.section("4.4: the whole curve (smoothquant_search, 21 alphas)");
  std::size_t best = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    r.note(fmt::format("alpha {:.2f}  {:6.2f} dB", grid[i], curve[i]));
    if (curve[i] > curve[best]) best = i;
  }
  r.note(fmt::format("best alpha on this grid: {:.2f} ({:.2f} dB), between the lesson's 0.5 and 0.85", grid[best],
                     curve[best]));
  const double gap = std::max({std::fabs(curve[0] - at0), std::fabs(curve[10] - at05), std::fabs(curve[17] - at085),
                               std::fabs(curve[20] - at1)});
  r.note(fmt::format("the search agrees with the step-by-step values above to {:.1g} dB (its Y is the float32 X W)", gap));
  if (!r.csv_path().empty()) {
    std::FILE* f = std::fopen(r.csv_path().c_str(), "w");
    if (f == nullptr) {
      fmt::print(stderr, "cannot write {}\n", r.csv_path());
      std::exit(2);
    }
    fmt::print(f, "alpha,sqnr_db\n");
    for (std::size_t i = 0; i < grid.size(); ++i) fmt::print(f, "{:.2f},{:.4f}\n", grid[i], curve[i]);
    std::fclose(f);
    r.note("curve written to " + r.csv_path());
  }

  // The lesson warns that the optimum belongs to this matrix; the ordering of the four points
  // should not. Redraw X and W for other seeds and count where it holds.
  constexpr std::uint32_t kSeeds = 100;
  const std::vector<float> four = {0.0f, 0.5f, 0.85f, 1.0f};
  long long ordered = 0;
  for (std::uint32_t seed = 0; seed < kSeeds; ++seed) {
    const std::vector<double> v = search_sqnr(make_layer(seed, false), four);
    if (v[1] > v[2] && v[2] > v[3] && v[3] > v[0]) ++ordered;
  }
  r.section("4.4: the same layer drawn with seeds 0..99");
  r.exact("seeds with SQNR(0.5) > SQNR(0.85) > SQNR(1) > SQNR(0)", ordered, static_cast<long long>(kSeeds));
}

// ----- section 4.1 and "Sources": a weight matrix with one large row ---------------------------

void weight_matrix(lesson::report& r) {
  r.section("4.1 / Sources: INT8 SQNR of a weight matrix with one 0.80 row");
  // Reconstructed: 4096 x 256 weights normal(0, 0.02) from RandomState(42), row 0 rescaled so that
  // its max |w| is 0.80 (in float64, as numpy would). This gives 20.93 / 43.11 / 44.51 dB in
  // numpy and here; the lesson's script is not given, so its 20.8 / 43.3 / 44.6 are matched
  // within 0.3 dB only.
  constexpr std::size_t rows = 4096, cols = 256;
  lesson::numpy_random rng(42);
  std::vector<double> w = rng.normal(0.0, 0.02, rows * cols);
  double row_max = 0.0;
  for (std::size_t c = 0; c < cols; ++c) row_max = std::max(row_max, std::fabs(w[c]));
  for (std::size_t c = 0; c < cols; ++c) w[c] *= 0.8 / row_max;
  const std::vector<float> wf = to_float(w);

  lowbit::int_params per_group = lowbit::int_presets::int8_per_channel();
  per_group.granularity = lowbit::granularity::per_group;
  per_group.group_size = 64;
  const std::string why = "reconstructed input: the lesson's script is not given";
  r.within("per-tensor (dB)", sqnr_db(wf, int_round_trip(wf, rows, cols, int8_per_tensor)), 20.8, 0.3, 1, why);
  r.within("per-row (dB)", sqnr_db(wf, int_round_trip(wf, rows, cols, int8_per_channel)),
           43.3, 0.3, 1, why);
  r.within("per-group of 64 (dB)", sqnr_db(wf, int_round_trip(wf, rows, cols, per_group)), 44.6, 0.3, 1, why);

  // Why per-tensor is so poor: the one row sets the step for every weight. Uniform rounding noise
  // is step^2 / 12, the typical weight's power 0.02^2.
  const double step = 0.8 / 127;
  r.exact("per-tensor, analytic: 10 log10(0.02^2 / (step^2 / 12))", 10.0 * std::log10(0.02 * 0.02 / (step * step / 12)),
          20.8, 1);
}

// ----- the generator: numpy's first draws ------------------------------------------------------

void generator_check(lesson::report& r) {
  r.section("numpy RandomState(42) replayed (lesson/numpy_random.hpp), against numpy's values");
  lesson::numpy_random u(42), n(42);
  r.self_check("random_sample() #1", u.random_sample(), 0.3745401188473625, 16);
  r.self_check("standard_normal() #1", n.standard_normal(), 0.4967141530112327, 16);
  r.self_check("standard_normal() #2", n.standard_normal(), -0.13826430117118466, 16);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_smoothquant: SmoothQuant's alpha on the lesson's synthetic layer",
                   "000, section 4 (4.1, 4.4), exercise 02, Sources");
  if (!r.parse(argc, argv)) return 2;
  generator_check(r);
  channel_112(r);
  alpha_sweep(r);
  weight_matrix(r);
  return r.finish();
}
