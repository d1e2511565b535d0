// lesson_formats: the FP8 numbers of the lessons, read from lowbit's format specs and codec.
//
//   lesson 000, section 2.2 (E4M3FN vs E5M2) and exercise 05 (derive 448 and 57344, find the NaNs);
//   lesson 003, paragraph 3 (E4M3's relative error, subnormals, INT8 vs E4M3 on one tensor).
//
// Nothing below is a typed-in result: limits come from std::numeric_limits of lowbit's types or
// from the fields of formats/spec.hpp, and every rounding is lowbit's encode or a lowbit scheme.
#include <lowbit/convert.hpp>
#include <lowbit/formats/limits.hpp>
#include <lowbit/formats/spec.hpp>
#include <lowbit/formats/types.hpp>
#include <lowbit/schemes/fp8.hpp>
#include <lowbit/schemes/integer.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lesson/report.hpp"

namespace {

using e4m3 = lowbit::float8_e4m3fn;
using e5m2 = lowbit::float8_e5m2;

// The "plain IEEE E4M3" the lesson compares with: E4M3FN's fields and bias, but exponent 1111
// reserved for Inf and NaN as in E5M2. lowbit's codec is driven by the spec alone, so four lines
// give a working format, with encode/decode and numeric_limits.
struct e4m3_ieee_spec : lowbit::format_spec<4, 3, 7, lowbit::special_values::ieee> {
  static constexpr const char* name = "float8_e4m3 (IEEE-style)";
};
using e4m3_ieee = lowbit::minifloat<e4m3_ieee_spec>;

// A call that cannot run leaves the example without its numbers: stop.
void must(const lowbit::status& s, const char* what) {
  if (s) return;
  fmt::print(stderr, "{}: {}\n", what, s.message());
  std::exit(2);
}

template <class T>
double value(T v) {
  return static_cast<double>(lowbit::decode(v));
}

// The largest finite value rebuilt from the spec's fields, as exercise 05 asks: split the code of
// the largest finite number (spec.hpp's max_bits) into exponent field E and mantissa M, then
// (1 + M / 2^m) * 2^(E - bias).
struct layout {
  unsigned exponent_field, mantissa_field;
  double value;
};
template <class T>
layout largest_from_fields() {
  using F = typename T::format;
  const unsigned e = F::max_bits >> F::mantissa_bits;
  const unsigned m = F::max_bits & F::mantissa_mask;
  return {e, m, std::ldexp(1.0 + m / std::ldexp(1.0, F::mantissa_bits), static_cast<int>(e) - F::bias)};
}

// ULP at 1.0: the code after 1's code, decoded, minus 1.
template <class T>
double ulp_at_one() {
  const T one = lowbit::encode<T>(1.0);
  return value(T::from_bits(static_cast<typename T::storage_type>(one.bits() + 1))) - 1.0;
}

// Binades holding a finite nonzero value, counted from the smallest subnormal's to the largest
// finite's (both included). This is the count that gives the lesson's 18 and 32.
template <class T>
int binades() {
  using L = std::numeric_limits<T>;
  return std::ilogb(value(L::max())) - std::ilogb(value(L::denorm_min())) + 1;
}

// Every code of T whose decoded float is NaN (or Inf, or zero), as "0x7F 0xFF": lowbit decodes
// each of the 256 bytes.
template <class T>
std::string codes_decoding_to(bool (*is)(float)) {
  std::string s;
  for (std::uint32_t c = 0; c < 256; ++c) {
    const float x = lowbit::decode(T::from_bits(static_cast<typename T::storage_type>(c)));
    if (is(x)) s += fmt::format("{}0x{:02X}", s.empty() ? "" : " ", c);
  }
  return s.empty() ? "none" : s;
}
bool is_nan(float x) { return std::isnan(x); }
bool is_inf(float x) { return std::isinf(x); }
bool is_zero(float x) { return x == 0.0f; }

std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float bits_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::string hex(unsigned code) { return fmt::format("0x{:02X}", code); }

double relative_error_percent(double x, double back) { return 100.0 * std::fabs(back - x) / std::fabs(x); }

void layouts(lesson::report& r) {
  using L4 = std::numeric_limits<e4m3>;
  using L5 = std::numeric_limits<e5m2>;

  r.section("Lesson 000, 2.2 and exercise 05: E4M3FN (1 sign, 4 exponent, 3 mantissa bits, bias 7)");
  const layout l4 = largest_from_fields<e4m3>();
  r.note(fmt::format("largest finite code {} = S.{:04b}.{:03b}: (1 + {}/8) x 2^({} - {})", hex(L4::max().bits()),
                     l4.exponent_field, l4.mantissa_field, l4.mantissa_field, l4.exponent_field, e4m3::format::bias));
  r.exact("E4M3FN max from the fields", l4.value, 448.0, 1);
  r.exact("E4M3FN max, numeric_limits", value(L4::max()), 448.0, 1);
  r.exact("E4M3FN bias", static_cast<long long>(e4m3::format::bias), 7);
  r.exact("E4M3FN exponent field of the max", static_cast<long long>(l4.exponent_field), 15);
  r.exact("E4M3FN mantissa field of the max", static_cast<long long>(l4.mantissa_field), 6);
  r.exact("E4M3FN max code (+)", hex(L4::max().bits()), "0x7E");
  r.exact("E4M3FN max code (-)", hex(L4::lowest().bits()), "0xFE");
  r.exact("E4M3FN min normal", value(L4::min()), 0.015625, 6);
  r.exact("E4M3FN min normal, exponent", static_cast<long long>(std::ilogb(value(L4::min()))), -6);
  r.exact("E4M3FN ULP at 1", ulp_at_one<e4m3>(), 0.125, 3);
  // Encoding a NaN keeps its sign only under a sign-preserving policy (lowbit's default writes
  // NVIDIA's canonical +NaN); with it, the two NaN codes of exercise 05 appear.
  lowbit::policy keep_sign;
  keep_sign.nan_sign = lowbit::nan_sign::preserve;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.exact("E4M3FN encode(+NaN)", hex(lowbit::encode<e4m3>(nan, keep_sign).bits()), "0x7F");
  r.exact("E4M3FN encode(-NaN)", hex(lowbit::encode<e4m3>(-nan, keep_sign).bits()), "0xFF");
  r.note("lesson strings below: S.1111.111 and the E5M2 patterns written as bytes; lowbit decodes all 256");
  r.exact("E4M3FN codes decoding to NaN", codes_decoding_to<e4m3>(is_nan), "0x7F 0xFF");
  r.exact("E4M3FN codes decoding to Inf", codes_decoding_to<e4m3>(is_inf), "none");
  r.exact("E4M3FN codes decoding to zero (S.0000.000)", codes_decoding_to<e4m3>(is_zero), "0x00 0x80");

  r.section(fmt::format("{}: exponent 1111 reserved, defined here from format_spec", e4m3_ieee_spec::name));
  const layout li = largest_from_fields<e4m3_ieee>();
  r.note(fmt::format("its largest finite code {} = S.{:04b}.{:03b}: the top binade is lost",
                     hex(std::numeric_limits<e4m3_ieee>::max().bits()), li.exponent_field, li.mantissa_field));
  r.exact("IEEE-style E4M3 max, numeric_limits", value(std::numeric_limits<e4m3_ieee>::max()), 240.0, 1);
  const int gained = std::ilogb(value(L4::max())) - std::ilogb(value(std::numeric_limits<e4m3_ieee>::max()));
  r.exact("binades E4M3FN gains by reclaiming 1111", static_cast<long long>(gained), 1);

  r.section("Lesson 000, 2.2 and exercise 05: E5M2 (1 sign, 5 exponent, 2 mantissa bits, bias 15)");
  const layout l5 = largest_from_fields<e5m2>();
  r.note(fmt::format("largest finite code {} = S.{:05b}.{:02b}: (1 + {}/4) x 2^({} - {})", hex(L5::max().bits()),
                     l5.exponent_field, l5.mantissa_field, l5.mantissa_field, l5.exponent_field, e5m2::format::bias));
  r.exact("E5M2 bias", static_cast<long long>(e5m2::format::bias), 15);
  r.exact("E5M2 max from the fields", l5.value, 57344.0, 1);
  r.exact("E5M2 max, numeric_limits", value(L5::max()), 57344.0, 1);
  r.exact("E5M2 min normal, exponent", static_cast<long long>(std::ilogb(value(L5::min()))), -14);
  r.exact("E5M2 min normal x 10^5", value(L5::min()) * 1e5, 6.1, 1);
  r.exact("E5M2 ULP at 1", ulp_at_one<e5m2>(), 0.25, 2);
  r.exact("E5M2 codes decoding to zero (S.00000.00)", codes_decoding_to<e5m2>(is_zero), "0x00 0x80");
  r.exact("E5M2 codes decoding to Inf (S.11111.00)", codes_decoding_to<e5m2>(is_inf), "0x7C 0xFC");
  r.exact("E5M2 codes decoding to NaN (S.11111.{01,10,11})", codes_decoding_to<e5m2>(is_nan),
          "0x7D 0x7E 0x7F 0xFD 0xFE 0xFF");
  // FP16, the comparison the lesson makes: same smallest normal, larger max (10 mantissa bits).
  using L16 = std::numeric_limits<lowbit::float16>;
  r.exact("FP16 min normal, exponent", static_cast<long long>(std::ilogb(value(L16::min()))), -14);
  r.exact("FP16 max, numeric_limits", value(L16::max()), 65504.0, 1);

  r.section("Lesson 000, 2.2: dynamic range");
  r.note("binades: powers of two [2^k, 2^(k+1)) holding a finite value, min subnormal to max");
  r.exact("E4M3FN binades", static_cast<long long>(binades<e4m3>()), 18);
  r.exact("E5M2 binades", static_cast<long long>(binades<e5m2>()), 32);
  // The lesson's powers of ten count from the smallest normal instead: from the smallest
  // subnormal they would be 10^5.4 and 10^9.6.
  r.note("powers of ten: log10(max / min normal) (the lesson's 10^4 and 10^9 count from min normal;");
  r.note("  its 18 and 32 binades count from min subnormal, where 10^4 would be 10^5.4)");
  r.exact("E4M3FN log10(max / min normal)", std::log10(value(L4::max()) / value(L4::min())), 4.0, 0);
  r.exact("E5M2 log10(max / min normal)", std::log10(value(L5::max()) / value(L5::min())), 9.0, 0);
}

void relative_error(lesson::report& r) {
  r.section("Lesson 003, paragraph 3: E4M3's relative error at scale 1");
  int in_one_binade = 0;  // codes whose value lies in [1, 2): the same count in every normal binade
  for (std::uint32_t c = 0; c < 256; ++c) {
    const double v = value(e4m3::from_bits(static_cast<std::uint8_t>(c)));
    in_one_binade += v >= 1.0 && v < 2.0;
  }
  r.exact("E4M3 grid points per normal binade", static_cast<long long>(in_one_binade), 8);
  // Half a step over the start of a binade: 2^-(m+1) with m mantissa bits (digits = m + 1).
  const double bound = std::ldexp(1.0, -std::numeric_limits<e4m3>::digits);
  r.exact("normal-range bound 2^-(m+1), %", 100.0 * bound, 6.25, 2);

  // Measured: every 256th float from the smallest normal to the max (a step of 256 bit
  // patterns still lands on every tie), rounded to nearest even by lowbit's convert.
  std::vector<float> x;
  const std::uint32_t lo = float_bits(lowbit::decode(std::numeric_limits<e4m3>::min()));
  const std::uint32_t hi = float_bits(lowbit::decode(std::numeric_limits<e4m3>::max()));
  for (std::uint32_t b = lo; b <= hi; b += 256) x.push_back(bits_float(b));
  std::vector<e4m3> q(x.size());
  std::vector<float> back(x.size());
  must(lowbit::convert(x, q), "convert to E4M3");
  must(lowbit::convert(q, back), "convert from E4M3");
  double worst = 0.0;
  float worst_x = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::fabs(static_cast<double>(back[i]) - x[i]) / x[i];
    if (e > worst) worst = e, worst_x = x[i];
  }
  r.note(fmt::format("largest over {} floats in [2^-6, 448]: {:.4f} % first at {} (a tie above a power of two:",
                     x.size(), 100.0 * worst, worst_x));
  r.note("  2^-4 / (1 + 2^-4) = 1/17; the bound, half a step over the binade's start, is not reached)");
  r.exact("largest measured error within the bound", std::string(worst <= bound ? "yes" : "no"), "yes");

  // Below 2^-6 the step stays 2^-9 (subnormals), so small values lose their relative accuracy.
  const double tiny = 0.001;
  const double tiny_back = value(lowbit::encode<e4m3>(tiny));
  r.exact("0.001 rounds to 2^k, k", static_cast<long long>(std::ilogb(tiny_back)), -9);
  r.exact("0.001 relative error, %", relative_error_percent(tiny, tiny_back), 95.3125, 4);
  const double tinier = 0.0004;  // below half of 2^-9: rounds to zero
  r.exact("underflow (0.0004 -> 0) relative error, %",
          relative_error_percent(tinier, value(lowbit::encode<e4m3>(tinier))), 100.0, 0);
}

void int8_vs_e4m3(lesson::report& r) {
  r.section("Lesson 003, paragraph 3: [0.02, -0.3, 1.7, 12] per tensor");
  const float x[4] = {0.02f, -0.3f, 1.7f, 12.0f};

  // INT8 symmetric, -127..127, one scale for the tensor: s = 12 / 127.
  lowbit::int_params p;  // symmetric, restricted range, 8 bits
  p.granularity = lowbit::granularity::per_tensor;
  std::uint8_t codes[4];
  float s_int = 0.0f, y_int[4];
  must(lowbit::quantize_int(x, 1, 4, p, codes, &s_int, nullptr), "quantize_int");
  must(lowbit::dequantize_int(codes, &s_int, nullptr, 1, 4, p, y_int), "dequantize_int");
  r.note(fmt::format("INT8 scale {:.6f} = 12/127; 0.02 / s = {:.3f} rounds to 0", s_int, x[0] / s_int));

  // E4M3 with s = amax / 448.
  const lowbit::fp8_options o = lowbit::fp8_presets::per_tensor();
  e4m3 q[4];
  float s_fp8 = 0.0f, y_fp8[4];
  must(lowbit::fp8_quantize(x, 1, 4, o, q, &s_fp8), "fp8_quantize");
  must(lowbit::fp8_dequantize(q, &s_fp8, 1, 4, o, y_fp8), "fp8_dequantize");
  r.note(fmt::format("E4M3 scale {:.6f} = 12/448; 0.02 / s = {:.4f} -> {} ({})", s_fp8, x[0] / s_fp8,
                     lowbit::decode(q[0]), hex(q[0].bits())));

  r.exact("INT8: code of 0.02", static_cast<long long>(lowbit::symmetric_value(codes[0], p.bits)), 0);
  r.exact("INT8: 0.02 reads back as", fmt::format("{:g}", y_int[0]), "0");
  r.exact("E4M3: 0.02 relative error, %", relative_error_percent(x[0], y_fp8[0]), 0.45, 2);
  r.exact("INT8: 1.7 relative error, %", relative_error_percent(x[2], y_int[2]), 0.046, 3);
  r.exact("E4M3: 1.7 relative error, %", relative_error_percent(x[2], y_fp8[2]), 0.840, 3);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_formats: FP8 layouts, limits and rounding errors",
                   "000 section 2.2 and exercise 05; 003 paragraph 3");
  if (!r.parse(argc, argv)) return 2;
  layouts(r);
  relative_error(r);
  int8_vs_e4m3(r);
  return r.finish();
}
