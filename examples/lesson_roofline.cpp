// lesson_roofline: the weight-traffic roofline of one decode step. Lesson 000 section 5 (ridge
// points, intensities, the batch where each format becomes compute-bound, the crossover B*),
// section 3.3 and exercises 01 and 04.
//
// The arithmetic is lowbit's (estimates.hpp): ridge_point, decode_intensity, compute_bound_batch.
// The bytes per weight of W4A16 come from the same storage accounting a checkpoint uses.
//
//   lesson_roofline [--check]
#include <lowbit/lowbit.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lesson/report.hpp"

namespace {

// The lesson's table 5.2: HBM bandwidth (GB/s) and dense peaks (TFLOP/s).
struct gpu {
  const char* name;
  double bandwidth, peak16, peak8;
};
constexpr gpu kA100{"A100", 2039, 312, 624};
constexpr gpu kH100{"H100", 3350, 989, 1979};

double value_of(const lowbit::result<double>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "estimate: %s\n", r.status.message());
    std::exit(2);
  }
  return r.value;
}

// Bytes per weight of symmetric INT4 with one fp16 scale per 128 weights: 0.5 * (1 + eta).
double w4a16_bytes_per_weight() {
  const lowbit::result<lowbit::storage> s = lowbit::int_storage_for(lowbit::int_presets::gptq(4, 128), 4096, 4096);
  if (!s.ok()) std::exit(2);
  return static_cast<double>(s.value.total_bytes()) / static_cast<double>(s.value.elements);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_roofline: where weight traffic stops being the limit of a decode step",
                   "000 sections 3.3 and 5, exercises 01 and 04");
  if (!r.parse(argc, argv)) return 2;
  const double w4 = w4a16_bytes_per_weight();
  const double eta = 2.0 * w4 - 1.0;  // w4 = 0.5 (1 + eta)

  r.section("Ridge points, peak / bandwidth (section 5.2), FLOP/B");
  r.exact("A100 FP16", value_of(lowbit::ridge_point(kA100.peak16, kA100.bandwidth)), 153, 0);
  r.exact("A100 INT8", value_of(lowbit::ridge_point(kA100.peak8, kA100.bandwidth)), 306, 0);
  r.exact("H100 FP16", value_of(lowbit::ridge_point(kH100.peak16, kH100.bandwidth)), 295, 0);
  r.exact("H100 FP8", value_of(lowbit::ridge_point(kH100.peak8, kH100.bandwidth)), 591, 0);

  r.section("Operational intensity 2 B / bytes per weight (sections 3.3, 5.3)");
  r.exact("INT4 G=128 scale overhead eta", eta, 0.03125, 5);
  r.exact("W4A16: I / B = 4 / (1 + eta)", value_of(lowbit::decode_intensity(1, w4)), 3.88, 2);
  r.exact("W8A8: I / B", value_of(lowbit::decode_intensity(1, 1.0)), 2, 0);
  r.exact("FP16 at B = 1: I", value_of(lowbit::decode_intensity(1, 2.0)), 1, 0);
  r.exact("W8A8 at B = 512: I", value_of(lowbit::decode_intensity(512, 1.0)), 1024, 0);

  r.section("Batch where each path becomes compute-bound, and the crossover B* (section 5.4)");
  for (const gpu* gp : {&kA100, &kH100}) {
    const gpu& g = *gp;
    const bool a100 = gp == &kA100;
    const std::string n = g.name;
    r.exact(n + ": W4A16 at the FP16 ceiling, B", value_of(lowbit::compute_bound_batch(w4, g.peak16, g.bandwidth)),
            a100 ? 39.4 : 76.1, 1);
    r.exact(n + ": W8A8/FP8 compute-bound, B", value_of(lowbit::compute_bound_batch(1.0, g.peak8, g.bandwidth)),
            a100 ? 153 : 295, 0);
    // B*: the 8-bit path, still bound by bandwidth (1 byte per weight), reaches the FP16 peak.
    const double b_star = value_of(lowbit::compute_bound_batch(1.0, g.peak16, g.bandwidth));
    r.exact(n + ": crossover B*", b_star, a100 ? 76.5 : 147.6, 1);
    r.exact(n + ": crossover B*, rounded", b_star, a100 ? 77 : 148, 0);
  }

  r.section("Exercise 04: a 70B model on H100 at B = 32");
  const double i_w4 = value_of(lowbit::decode_intensity(32, w4));
  const double i_fp8 = value_of(lowbit::decode_intensity(32, 1.0));
  r.exact("W4A16 intensity, FLOP/B", i_w4, 124, 0);
  r.exact("FP8 intensity, FLOP/B", i_fp8, 64, 0);
  r.note("Both are below their ridge points (295 and 591): both are bandwidth-bound.");
  r.exact("W4A16 bytes per parameter", w4, 0.516, 3);
  r.exact("weight traffic, FP8 / W4A16 (x)", 1.0 / w4, 1.94, 2);
  r.note("The model leaves out KV-cache traffic and kernel efficiency; either can reverse this.");
  return r.finish();
}
