// format_table: every code of a lowbit format, with its fields and its exact value.
//
//   format_table e4m3fn        one format
//   format_table e2m1fn e8m0fnu
//   format_table --all         all eight
//
// One generic function prints any format; everything it shows comes from the format's spec
// (formats/spec.hpp) and std::numeric_limits, so a new format needs only a line in `kFormats`.
#include <lowbit/fmt.hpp>
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

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
std::string exact_decimal(double x) {
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

std::string binary_field(std::uint32_t value, int width) {
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
void print_table(const char* short_name) {
  using F = typename T::format;
  using L = std::numeric_limits<T>;
  constexpr int E = F::exponent_bits;
  constexpr int M = F::mantissa_bits;
  constexpr unsigned hex_digits = (F::bits + 3) / 4;

  // Header: what the format is, then its landmarks.
  fmt::print("{} ({}): {}, {} exponent bit{}, {} mantissa bit{}; bias {}\n", F::name, short_name,
             F::is_signed ? "1 sign bit" : "no sign bit", E, E == 1 ? "" : "s", M, M == 1 ? "" : "s", F::bias);
  fmt::print("  max {}   min normal {}   min subnormal {}   ULP at 1 {}\n", landmark(L::max()), landmark(L::min()),
             L::has_denorm == std::denorm_present ? landmark(L::denorm_min()) : std::string("none"),
             landmark(L::epsilon()));
  fmt::print("  Inf: {}   NaN: {}{}\n\n", codes_of<T>(&T::is_inf, hex_digits), codes_of<T>(&T::is_nan, hex_digits),
             F::has_negative_zero ? "" : (F::has_zero ? "   (no -0)" : "   (no zero)"));

  // One row per code.
  const int code_width = hex_digits + 2 > 4 ? hex_digits + 2 : 4;
  const int exp_width = E > 3 ? E : 3;
  const int man_width = M > 3 ? M : 3;
  fmt::print("{:<{}}  {}  {:<{}}  {:<{}}  {:<9}  {:<11}  {}\n", "code", code_width, "s", "exp", exp_width, "man",
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
    fmt::print("{:<{}}  {}  {:<{}}  {:<{}}  {:<9}  {:<11a}  {}\n", code, code_width, sign, binary_field(field, E),
               exp_width, binary_field(mantissa, M), man_width, cls, v, exact_of(v));
  }
}

// ----- command line ---------------------------------------------------------------------------

struct format_entry {
  const char* name;
  void (*print)(const char*);
};

const format_entry kFormats[] = {
    {"e4m3fn", print_table<lowbit::float8_e4m3fn>},     {"e5m2", print_table<lowbit::float8_e5m2>},
    {"e4m3fnuz", print_table<lowbit::float8_e4m3fnuz>}, {"e5m2fnuz", print_table<lowbit::float8_e5m2fnuz>},
    {"e2m3fn", print_table<lowbit::float6_e2m3fn>},     {"e3m2fn", print_table<lowbit::float6_e3m2fn>},
    {"e2m1fn", print_table<lowbit::float4_e2m1fn>},     {"e8m0fnu", print_table<lowbit::float8_e8m0fnu>},
};

std::string format_names() {
  std::string s;
  for (const format_entry& f : kFormats) s += fmt::format("{}{}", s.empty() ? "" : " ", f.name);
  return s;
}

void usage(std::FILE* to) {
  fmt::print(to,
             "usage: format_table FORMAT...   print every code of each FORMAT\n"
             "       format_table --all       print every format\n"
             "formats: {}\n",
             format_names());
}

const format_entry* find_format(const char* name) {
  for (const format_entry& f : kFormats)
    if (std::strcmp(f.name, name) == 0) return &f;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return 0;
  }
  std::vector<const format_entry*> chosen;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--all") == 0) {
      for (const format_entry& f : kFormats) chosen.push_back(&f);
      continue;
    }
    const format_entry* f = find_format(argv[i]);
    if (f == nullptr) {
      fmt::print(stderr, "format_table: unknown format '{}'; expected one of: {} (or --all)\n", argv[i],
                 format_names());
      return 2;
    }
    chosen.push_back(f);
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (i != 0) fmt::print("\n");
    chosen[i]->print(chosen[i]->name);
  }
  return 0;
}
