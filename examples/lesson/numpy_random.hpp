// numpy's legacy random stream (np.random.RandomState(seed)), so that a lesson example draws the
// very numbers the lesson's Python script drew. std::normal_distribution cannot do this: the
// standard leaves its algorithm to the library, so it differs between libstdc++, libc++ and MSVC.
//
// What numpy does, and so what this does:
//   seed         RandomState(int) seeds MT19937 with init_genrand(seed), which is exactly what
//                std::mt19937(seed) does (the C++ standard fixes both the seeding and the outputs);
//   uniform      random_sample(): 53 random bits from two 32-bit outputs a, b,
//                ((a >> 5) * 2^26 + (b >> 6)) / 2^53, in [0, 1);
//   normal       Marsaglia's polar method; each accepted pair gives two normals, the second is
//                kept for the next call (numpy's legacy_gauss);
//   normal(m, s) m + s * gauss, arrays filled in C (row-major) order.
#ifndef LOWBIT_EXAMPLES_LESSON_NUMPY_RANDOM_HPP
#define LOWBIT_EXAMPLES_LESSON_NUMPY_RANDOM_HPP

#include <lowbit/core/no_contract.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lesson {

class numpy_random {
 public:
  explicit numpy_random(std::uint32_t seed) : mt_(seed) {}

  double random_sample() {
    const std::uint32_t a = static_cast<std::uint32_t>(mt_()) >> 5;  // 27 bits
    const std::uint32_t b = static_cast<std::uint32_t>(mt_()) >> 6;  // 26 bits
    return (a * 67108864.0 + b) / 9007199254740992.0;                 // exact: < 2^53
  }

  double standard_normal() {
    if (has_cached_) {
      has_cached_ = false;
      return cached_;
    }
    double x1 = 0.0, x2 = 0.0, r2 = 0.0;
    do {  // a point uniform in the unit disc, not at its centre
      x1 = 2.0 * random_sample() - 1.0;
      x2 = 2.0 * random_sample() - 1.0;
      // no_contract: numpy rounds x1*x1 before the addition; a fused multiply-add (GCC fuses by
      // default where the target has FMA) could round r2 differently and change a number.
      r2 = lowbit::detail::no_contract(x1 * x1) + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_ = f * x1;
    has_cached_ = true;
    return f * x2;
  }

  // n draws of normal(loc, scale), in the order numpy fills an array of n elements.
  std::vector<double> normal(double loc, double scale, std::size_t n) {
    std::vector<double> v(n);
    for (double& x : v) x = loc + lowbit::detail::no_contract(scale * standard_normal());
    return v;
  }

 private:
  std::mt19937 mt_;
  bool has_cached_ = false;
  double cached_ = 0.0;
};

}  // namespace lesson

#endif  // LOWBIT_EXAMPLES_LESSON_NUMPY_RANDOM_HPP
