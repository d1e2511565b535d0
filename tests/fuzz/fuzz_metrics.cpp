// Fuzz target: the metrics (lowbit/metrics.hpp).
//
// Input: which lengths and pointers to pass (equal, different, zero, null), then the data.
// Checks, each on any input:
//  - the SIMD reduction gives the same sums as the scalar one, bit for bit;
//  - a bad shape or pointer is an error (never ok; a misaligned one is `misaligned`), and an ok
//    result is never NaN;
//  - NaN or Inf in either input is non_finite_input;
//  - the values stay in their ranges (mse, max error >= 0; cosine in [-1, 1]) and agree with a
//    plain double loop (relative 1e-9: the lane order differs from the loop's);
//  - a vector against itself: mse 0, sqnr +inf, relative error 0.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <lowbit/metrics.hpp>

#include "fuzz.hpp"

namespace {

using lowbit_fuzz::input;

bool close(double a, double b) {
  if (a == b) return true;
  const double scale = std::fabs(a) > std::fabs(b) ? std::fabs(a) : std::fabs(b);
  return std::fabs(a - b) <= 1e-9 * scale + 1e-300;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const std::uint8_t shape = in.u8();
  const bool finite_only = in.flag();
  const std::size_t n = in.flag() ? in.below(40) : in.below(5000);
  std::size_t n_test = n;
  if (shape % 8 == 1) n_test = n + 1 + in.below(8);  // lengths differ
  if (shape % 8 == 2 && n > 0) n_test = n - 1 - in.below(n);
  const std::vector<float> ref = in.floats(n, finite_only);
  std::vector<float> test(n_test);
  for (std::size_t i = 0; i < n_test; ++i) {
    // Mostly near the reference (a quantization error), sometimes anything.
    if (i < n && in.u8() % 4 != 0) {
      test[i] = ref[i] + static_cast<float>(static_cast<std::int8_t>(in.u8())) * 0x1p-10f * (ref[i] == 0.0f ? 1.0f : ref[i]);
    } else {
      test[i] = in.f32();
    }
    if (finite_only && !std::isfinite(test[i])) test[i] = 0.0f;
  }
  const float* r = ref.data();
  const float* t = test.data();
  const bool null_ref = shape % 8 == 3, null_test = shape % 8 == 4;
  if (null_ref) r = nullptr;
  if (null_test) t = nullptr;
  // A float pointer one byte off (never read: the call must say misaligned first).
  std::vector<float> shifted(n_test + 1);
  const bool misaligned = shape % 8 == 5 && n_test > 0;
  if (misaligned) t = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(shifted.data()) + 1);
  const bool bad = n == 0 || n_test != n || null_ref || null_test || misaligned;

  auto run = [&] { return lowbit::error_statistics(r, n, t, n_test); };
  const auto results = lowbit_fuzz::on_both_paths(run);
  const auto& a = results.first;
  const auto& b = results.second;
  LOWBIT_FUZZ_CHECK(a.status.code() == b.status.code(), "status differs between paths: %s vs %s", a.status.message(),
                    b.status.message());
  if (bad) {
    LOWBIT_FUZZ_CHECK(!a.ok(), "bad shape (n %zu, n_test %zu, null %d/%d) accepted", n, n_test, null_ref, null_test);
    // Every metric reports the same error.
    const auto m = lowbit::mse(r, n, t, n_test);
    const auto c = lowbit::cosine_similarity(r, n, t, n_test);
    LOWBIT_FUZZ_CHECK(!m.ok() && !c.ok(), "a metric accepted a bad shape");
    if (misaligned && n == n_test && !null_ref)
      LOWBIT_FUZZ_CHECK(a.status.code() == lowbit::errc::misaligned, "misaligned test pointer: %s", a.status.message());
    return 0;
  }
  bool any_non_finite = false;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(ref[i]) || !std::isfinite(test[i])) any_non_finite = true;
  if (any_non_finite) {
    LOWBIT_FUZZ_CHECK(a.status.code() == lowbit::errc::non_finite_input, "NaN/Inf input gave %s", a.status.message());
    return 0;
  }
  LOWBIT_FUZZ_CHECK(a.ok(), "finite input gave %s", a.status.message());
  const lowbit::error_sums& s = a.value;
  const lowbit::error_sums& v = b.value;
  LOWBIT_FUZZ_CHECK(s.n == v.n && s.ref_sq == v.ref_sq && s.test_sq == v.test_sq && s.err_sq == v.err_sq &&
                        s.dot == v.dot && s.max_abs == v.max_abs,
                    "sums differ between paths: err_sq %a vs %a, dot %a vs %a", s.err_sq, v.err_sq, s.dot, v.dot);

  double ref_sq = 0, test_sq = 0, err_sq = 0, dot = 0, max_abs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = ref[i], y = test[i], d = x - y;
    ref_sq += x * x;
    test_sq += y * y;
    err_sq += d * d;
    dot += x * y;
    max_abs = std::fabs(d) > max_abs ? std::fabs(d) : max_abs;
  }
  LOWBIT_FUZZ_CHECK(s.n == n, "n %zu, expected %zu", s.n, n);
  LOWBIT_FUZZ_CHECK(close(s.ref_sq, ref_sq) && close(s.test_sq, test_sq) && close(s.err_sq, err_sq),
                    "sums of squares: %a %a %a, a plain loop gives %a %a %a", s.ref_sq, s.test_sq, s.err_sq, ref_sq,
                    test_sq, err_sq);
  LOWBIT_FUZZ_CHECK(s.max_abs == max_abs, "max |r - t| %a, a plain loop gives %a", s.max_abs, max_abs);
  // The dot product cancels: compare it against the magnitudes it is made of.
  LOWBIT_FUZZ_CHECK(std::fabs(s.dot - dot) <= 1e-9 * (std::sqrt(ref_sq) * std::sqrt(test_sq)) + 1e-300,
                    "dot %a, a plain loop gives %a", s.dot, dot);

  const auto mse = lowbit::mse(r, n, t, n_test);
  const auto sqnr = lowbit::sqnr_db(r, n, t, n_test);
  const auto maxe = lowbit::max_abs_error(r, n, t, n_test);
  const auto rel = lowbit::relative_frobenius_error(r, n, t, n_test);
  const auto cos = lowbit::cosine_similarity(r, n, t, n_test);
  LOWBIT_FUZZ_CHECK(mse.ok() && sqnr.ok() && maxe.ok() && rel.ok() && cos.ok(), "a metric failed on valid input");
  LOWBIT_FUZZ_CHECK(mse.value >= 0 && !std::isnan(mse.value), "mse %a", mse.value);
  LOWBIT_FUZZ_CHECK(!std::isnan(sqnr.value), "sqnr NaN");
  LOWBIT_FUZZ_CHECK(maxe.value >= 0 && !std::isnan(maxe.value), "max error %a", maxe.value);
  LOWBIT_FUZZ_CHECK(rel.value >= 0 && !std::isnan(rel.value), "relative error %a", rel.value);
  LOWBIT_FUZZ_CHECK(cos.value >= -1.0 && cos.value <= 1.0, "cosine %a", cos.value);

  const auto span_mse = lowbit::mse(lowbit::span<const float>(ref), lowbit::span<const float>(test));
  LOWBIT_FUZZ_CHECK(span_mse.ok() && span_mse.value == mse.value, "span and pointer mse differ");
  const auto self_mse = lowbit::mse(r, n, r, n);
  const auto self_sqnr = lowbit::sqnr_db(r, n, r, n);
  const auto self_rel = lowbit::relative_frobenius_error(r, n, r, n);
  LOWBIT_FUZZ_CHECK(self_mse.ok() && self_mse.value == 0.0, "mse(x, x) = %a", self_mse.value);
  LOWBIT_FUZZ_CHECK(self_sqnr.ok() && self_sqnr.value == std::numeric_limits<double>::infinity(), "sqnr(x, x) = %a",
                    self_sqnr.value);
  LOWBIT_FUZZ_CHECK(self_rel.ok() && self_rel.value == 0.0, "relative error(x, x) = %a", self_rel.value);
  return 0;
}
