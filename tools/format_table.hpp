// lowbit tool: every code of a low-bit float format with its fields and its exact value, the
// `lowbit table` command's printer (promoted from examples/format_table.cpp). One generic
// function prints any format; everything it shows comes from the format's spec
// (formats/spec.hpp) and std::numeric_limits, so a new format needs only a line in kFormats.
//
//   lowbit_tool::find_format("e4m3fn")->print(stdout, "e4m3fn");
#ifndef LOWBIT_TOOL_FORMAT_TABLE_HPP
#define LOWBIT_TOOL_FORMAT_TABLE_HPP

#include <lowbit/fmt.hpp>
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace lowbit_tool {
namespace format_table {

// ----- exact decimal expansion of a binary floating-point value -------------------------------

// A non-negative integer as decimal digits, least significant first.
struct decimal {
  std::vector<int> digits{0};

  void multiply(int k) {
    int carry = 0;
    for (int& d : digits) {
      const int t = d * k + carry;
      d = t % 10;
      carry = t / 10;
    }
    for (; carry != 0; carry /= 10) digits.push_back(carry % 10);
  }
  std::string str() const {
    std::string s;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) s += static_cast<char>('0' + *it);
    return s;
  }
};

// The exact decimal of a finite double, e.g. 0.001953125 or 5.877...e-39. Every binary fraction
// has a finite decimal expansion: m * 2^-k = m * 5^k / 10^k. Short results are written out;
// long ones (the extremes of E8M0) in scientific notation, still with every digit.
inline std::string exact_decimal(double x) {
  if (x == 0) return std::signbit(x) ? "-0" : "0";
  const std::string sign = x < 0 ? "-" : "";
  int e = 0;
  const double f = std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
  e -= 53;
  for (; (m & 1u) == 0; m >>= 1) ++e;  // m odd: the shortest exact integer significand

  decimal n;
  n.digits.clear();
  for (std::uint64_t t = m; t != 0; t /= 10) n.digits.push_back(static_cast<int>(t % 10));
  const int frac_digits = e < 0 ? -e : 0;
  for (int i = 0; i < e; ++i) n.multiply(2);
  for (int i = 0; i < frac_digits; ++i) n.multiply(5);
  std::string s = n.str();  // the value times 10^frac_digits
  if (static_cast<int>(s.size()) <= frac_digits) s.insert(0, static_cast<std::size_t>(frac_digits) + 1 - s.size(), '0');

  const std::size_t point = s.size() - static_cast<std::size_t>(frac_digits);
  std::string plain = frac_digits == 0 ? s : s.substr(0, point) + "." + s.substr(point);
  if (plain.size() <= 24) return sign + plain;

  // Scientific: d.ddd...e+-XX with all significant digits.
  const std::size_t first = s.find_first_not_of('0');
  const std::size_t last = s.find_last_not_of('0');
  const long exponent = static_cast<long>(point) - static_cast<long>(first) - 1;
  std::string mantissa = s.substr(first, 1);
  if (last > first) mantissa += "." + s.substr(first + 1, last - first);
  return fmt::format("{}{}e{}{:02}", sign, mantissa, exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
}

// ----- one format's table ---------------------------------------------------------------------

inline std::string binary_field(std::uint32_t value, int width) {
  if (width == 0) return "-";
  std::string s;
  for (int i = width - 1; i >= 0; --i) s += ((value >> i) & 1u) != 0 ? '1' : '0';
  return s;
}

template <class T>
std::string exact_of(T v) {
  const float x = lowbit::decode(v);
  if (v.is_nan()) return v.signbit() ? "-NaN" : "NaN";
  if (v.is_inf()) return x < 0 ? "-Inf" : "+Inf";
  return exact_decimal(static_cast<double>(x));
}

// A landmark for the header: exact when that is short, else hexfloat and the shortest decimal.
template <class T>
std::string landmark(T v) {
  const std::string exact = exact_of(v);
  return exact.size() <= 24 ? exact : fmt::format("{:a} (~{})", v, v);
}

template <class T>
std::string codes_of(bool (T::*predicate)() const, unsigned hex_digits) {
  std::string s;
  for (std::uint32_t c = 0; c < (1u << T::format::bits); ++c) {
    const T v = T::from_bits(static_cast<typename T::storage_type>(c));
    if ((v.*predicate)()) s += fmt::format("{}0x{:0{}X}", s.empty() ? "" : " ", c, hex_digits);
  }
  return s.empty() ? "none" : s;
}

template <class T>
void print_table(std::FILE* out, const char* short_name) {
  using F = typename T::format;
  using L = std::numeric_limits<T>;
  constexpr int E = F::exponent_bits;
  constexpr int M = F::mantissa_bits;
  constexpr unsigned hex_digits = (F::bits + 3) / 4;

  // Header: what the format is, then its landmarks.
  fmt::print(out, "{} ({}): {}, {} exponent bit{}, {} mantissa bit{}; bias {}\n", F::name, short_name,
             F::is_signed ? "1 sign bit" : "no sign bit", E, E == 1 ? "" : "s", M, M == 1 ? "" : "s", F::bias);
  fmt::print(out, "  max {}   min normal {}   min subnormal {}   ULP at 1 {}\n", landmark(L::max()), landmark(L::min()),
             L::has_denorm == std::denorm_present ? landmark(L::denorm_min()) : std::string("none"),
             landmark(L::epsilon()));
  fmt::print(out, "  Inf: {}   NaN: {}{}\n\n", codes_of<T>(&T::is_inf, hex_digits), codes_of<T>(&T::is_nan, hex_digits),
             F::has_negative_zero ? "" : (F::has_zero ? "   (no -0)" : "   (no zero)"));

  // One row per code.
  const int code_width = hex_digits + 2 > 4 ? hex_digits + 2 : 4;
  const int exp_width = E > 3 ? E : 3;
  const int man_width = M > 3 ? M : 3;
  fmt::print(out, "{:<{}}  {}  {:<{}}  {:<{}}  {:<9}  {:<11}  {}\n", "code", code_width, "s", "exp", exp_width, "man",
             man_width, "class", "hexfloat", "exact value");
  for (std::uint32_t c = 0; c < (1u << F::bits); ++c) {
    const T v = T::from_bits(static_cast<typename T::storage_type>(c));
    const std::uint32_t field = (c & F::magnitude_mask) >> M;
    const std::uint32_t mantissa = c & F::mantissa_mask;
    const char* cls = v.is_nan()    ? "nan"
                      : v.is_inf()  ? "inf"
                      : v.is_zero() ? "zero"
                      : (F::has_subnormals && field == 0) ? "subnormal"
                                                          : "normal";
    const char* sign = !F::is_signed ? " " : v.signbit() ? "-" : "+";
    const std::string code = fmt::format("0x{:0{}X}", c, hex_digits);
    // lowbit/fmt.hpp: a lowbit value takes float's format specs, so {:a} is its hexfloat.
    fmt::print(out, "{:<{}}  {}  {:<{}}  {:<{}}  {:<9}  {:<11a}  {}\n", code, code_width, sign, binary_field(field, E),
               exp_width, binary_field(mantissa, M), man_width, cls, v, exact_of(v));
  }
}

// ----- the formats -----------------------------------------------------------------------------

struct format_entry {
  const char* name;
  const char* description;
  void (*print)(std::FILE*, const char*);
};

inline const std::vector<format_entry>& formats() {
  static const std::vector<format_entry> all = {
      {"e4m3fn", "OCP FP8 E4M3 (max 448, NaN only)", print_table<lowbit::float8_e4m3fn>},
      {"e5m2", "OCP FP8 E5M2 (IEEE-like, Inf and NaN)", print_table<lowbit::float8_e5m2>},
      {"e4m3fnuz", "FP8 E4M3 FNUZ (AMD/Graphcore: bias 8, no -0)", print_table<lowbit::float8_e4m3fnuz>},
      {"e5m2fnuz", "FP8 E5M2 FNUZ (bias 16, no -0)", print_table<lowbit::float8_e5m2fnuz>},
      {"e2m3fn", "OCP MX FP6 E2M3 (max 7.5)", print_table<lowbit::float6_e2m3fn>},
      {"e3m2fn", "OCP MX FP6 E3M2 (max 28)", print_table<lowbit::float6_e3m2fn>},
      {"e2m1fn", "OCP MX / NVFP4 FP4 E2M1 (max 6)", print_table<lowbit::float4_e2m1fn>},
      {"e8m0fnu", "OCP MX scale E8M0 (powers of two, NaN 0xFF)", print_table<lowbit::float8_e8m0fnu>},
  };
  return all;
}

inline const format_entry* find_format(const std::string& name) {
  for (const format_entry& f : formats())
    if (name == f.name) return &f;
  return nullptr;
}

inline std::string format_names() {
  std::string s;
  for (const format_entry& f : formats()) s += fmt::format("{}{}", s.empty() ? "" : " ", f.name);
  return s;
}

}  // namespace format_table
}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_FORMAT_TABLE_HPP
