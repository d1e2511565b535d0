// The table every lesson example prints: each quantity, lowbit's value, the lesson's value and
// the tolerance it is checked against. `--check` makes the program exit non-zero when a value is
// outside its tolerance (ctest runs every example that way), and the last line sums the rows up
// for scripts/run-examples.sh:
//
//   lesson-numbers: 12 checked, 10 exact, 2 within tolerance, 0 from constructed inputs, 0 outside; tolerances: 0.3 0.2
//
// Three kinds of row:
//   exact        lowbit's value, rounded to the digits the lesson prints, is the lesson's number
//                (63.2456 against the lesson's 63.25); integers and bit patterns compare equal;
//   within       the lesson's number is reproduced within a stated tolerance, for a stated reason
//                (a reconstructed input, a value the lesson itself rounded twice);
//   constructed  the lesson does not give its inputs: the example builds inputs that show the same
//                effect and reports how close each stated number comes.
#ifndef LOWBIT_EXAMPLES_LESSON_REPORT_HPP
#define LOWBIT_EXAMPLES_LESSON_REPORT_HPP

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace lesson {

class report {
 public:
  // `title` names the example, `source` the lesson's file and section it follows.
  report(std::string title, std::string source) : title_(std::move(title)), source_(std::move(source)) {}

  // Reads the flags every example takes: --check (exit non-zero on a value outside its
  // tolerance) and --csv PATH (examples that write a curve). Unknown flags are an error.
  bool parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--check") == 0) {
        check_ = true;
      } else if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
        csv_ = argv[++i];
      } else {
        fmt::print(stderr, "usage: {} [--check] [--csv PATH]\n", argv[0]);
        return false;
      }
    }
    fmt::print("{}\n(lesson: {})\n", title_, source_);
    return true;
  }
  const std::string& csv_path() const { return csv_; }

  // A heading between groups of rows.
  void section(const std::string& name) { rows_.push_back({kind::heading, name, "", "", "", true}); }
  // A line of explanation under the current section (not a checked number).
  void note(const std::string& text) { rows_.push_back({kind::note, text, "", "", "", true}); }

  // lowbit's value, rounded to the lesson's `decimals`, must equal the lesson's value.
  void exact(const std::string& what, double value, double lesson, int decimals) {
    const double half_unit = 0.5 * std::pow(10.0, -decimals);
    const bool ok = std::fabs(value - lesson) <= half_unit * (1 + 1e-9);
    add(kind::exact, what, fmt::format("{:.{}f}", value, decimals + 2), fmt::format("{:.{}f}", lesson, decimals),
        "digits shown", ok);
  }
  // Integers and byte counts: equal or not.
  void exact(const std::string& what, long long value, long long lesson) {
    add(kind::exact, what, group(value), group(lesson), "equal", value == lesson);
  }
  // Bit patterns and other text: equal or not.
  void exact(const std::string& what, const std::string& value, const std::string& lesson) {
    add(kind::exact, what, value, lesson, "equal", value == lesson);
  }

  // |value - lesson| <= tolerance; `why` says why the lesson's digits are not reproduced exactly.
  void within(const std::string& what, double value, double lesson, double tolerance, int decimals,
              const std::string& why) {
    add(kind::within, what, fmt::format("{:.{}f}", value, decimals + 2), fmt::format("{:.{}f}", lesson, decimals),
        fmt::format("+-{:g} ({})", tolerance, why), std::fabs(value - lesson) <= tolerance);
    rows_.back().tolerance = tolerance;
  }

  // A number the lesson states without giving its inputs, reproduced from inputs the example
  // built; `tolerance` is how close it comes, `why` what was constructed.
  void constructed(const std::string& what, double value, double lesson, double tolerance, int decimals,
                   const std::string& why) {
    add(kind::constructed, what, fmt::format("{:.{}f}", value, decimals + 2),
        fmt::format("{:.{}f}", lesson, decimals), fmt::format("+-{:g} ({})", tolerance, why),
        std::fabs(value - lesson) <= tolerance);
  }

  // Not a lesson number: a check of the example's own machinery (a random generator against its
  // reference stream). Printed and enforced by --check, but not counted as a lesson number.
  void self_check(const std::string& what, double value, double expected, int decimals) {
    const bool ok = std::fabs(value - expected) <= 0.5 * std::pow(10.0, -decimals) * (1 + 1e-9);
    add(kind::self_check, what, fmt::format("{:.{}f}", value, decimals), fmt::format("{:.{}f}", expected, decimals),
        "self-check", ok);
  }

  // Prints the table and the summary line; the process's exit status.
  int finish() const {
    std::size_t w = 8;
    for (const row& r : rows_) {
      if (r.k != kind::heading && r.k != kind::note) w = std::max(w, r.what.size());
    }
    int counts[3] = {0, 0, 0};
    int outside = 0;
    fmt::print("\n  {:<{}}  {:>16}  {:>12}  {}\n", "quantity", w, "lowbit", "lesson", "check");
    for (const row& r : rows_) {
      if (r.k == kind::heading) {
        fmt::print("\n  {}\n", r.what);
        continue;
      }
      if (r.k == kind::note) {
        fmt::print("    {}\n", r.what);
        continue;
      }
      if (r.k != kind::self_check) ++counts[static_cast<int>(r.k)];
      if (!r.ok) ++outside;
      fmt::print("  {:<{}}  {:>16}  {:>12}  {}{}\n", r.what, w, r.value, r.lesson, r.ok ? "" : "OUTSIDE: ", r.check);
    }
    const int checked = counts[0] + counts[1] + counts[2];
    fmt::print("\nlesson-numbers: {} checked, {} exact, {} within tolerance, {} from constructed inputs, {} outside;",
               checked, counts[0] - count_outside(kind::exact), counts[1] - count_outside(kind::within),
               counts[2] - count_outside(kind::constructed), outside - count_outside(kind::self_check));
    fmt::print(" tolerances:");  // of the rows reproduced within a tolerance, for the overall summary
    for (const row& r : rows_) {
      if (r.k == kind::within && r.ok) fmt::print(" {:g}", r.tolerance);
    }
    fmt::print("\n");
    if (count_outside(kind::self_check) > 0) fmt::print("self-checks failed: the example's inputs are wrong\n");
    return check_ && outside > 0 ? 1 : 0;
  }

 private:
  enum class kind { exact = 0, within = 1, constructed = 2, self_check, heading, note };
  struct row {
    kind k;
    std::string what, value, lesson, check;
    bool ok;
    double tolerance = 0.0;
  };

  void add(kind k, const std::string& what, std::string value, std::string lesson, std::string check, bool ok) {
    rows_.push_back({k, what, std::move(value), std::move(lesson), std::move(check), ok});
  }
  int count_outside(kind k) const {
    int n = 0;
    for (const row& r : rows_) n += (r.k == k && !r.ok) ? 1 : 0;
    return n;
  }
  static std::string group(long long v) {  // 262144 -> 262,144
    std::string digits = std::to_string(v < 0 ? -v : v), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return (v < 0 ? "-" : "") + out;
  }

  std::string title_, source_, csv_;
  bool check_ = false;
  std::vector<row> rows_;
};

}  // namespace lesson

#endif  // LOWBIT_EXAMPLES_LESSON_REPORT_HPP
