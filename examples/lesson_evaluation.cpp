// lesson_evaluation: the paired comparison of lesson 003's last paragraph. Two models answer the
// same 1,000 questions; 56 answers flip and the accuracy moves by -0.4 points. Which gains and
// losses does that mean, and what interval does the paired difference give?
//
// lowbit's paired_counts_from_flips and paired_difference_interval (estimates.hpp) do the work:
// the per-question differences are +1 (gain), -1 (loss) or 0, and their mean +- 1.96 standard
// errors is the 95 % interval (normal approximation).
//
//   lesson_evaluation [--check]
#include <lowbit/lowbit.hpp>

#include <cstdio>

#include "lesson/report.hpp"

int main(int argc, char** argv) {
  lesson::report r("lesson_evaluation: the paired-comparison interval of an accuracy change",
                   "003 last paragraph");
  if (!r.parse(argc, argv)) return 2;

  const lowbit::result<lowbit::paired_counts> c = lowbit::paired_counts_from_flips(1000, 56, -0.4);
  if (!c.ok()) {
    std::fprintf(stderr, "paired_counts_from_flips: %s\n", c.status.message());
    return 2;
  }
  r.section("1,000 items, 56 flips, net -0.4 points");
  r.exact("gains", static_cast<long long>(c.value.gains), 26);
  r.exact("losses", static_cast<long long>(c.value.losses), 30);

  const lowbit::result<lowbit::interval> ci = lowbit::paired_difference_interval(c.value);
  if (!ci.ok()) return 2;
  r.section("95 % interval of the change, points");
  r.exact("low", ci.value.low, -1.866, 3);
  r.exact("high", ci.value.high, 1.066, 3);
  r.exact("low, as the lesson prints it", ci.value.low, -1.87, 2);
  r.exact("high, as the lesson prints it", ci.value.high, 1.07, 2);
  r.note("The interval contains 0: a -0.4 point change on 1,000 items is not evidence of a loss.");
  return r.finish();
}
