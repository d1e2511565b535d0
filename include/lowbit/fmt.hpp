// lowbit: opt-in {fmt} support. Include this header (and link fmt) to format lowbit values with
// fmt::format; the format spec is that of float: fmt::format("{:g}", float8_e4m3fn(1.5f)).
// The core headers never include fmt.
#ifndef LOWBIT_FMT_HPP
#define LOWBIT_FMT_HPP

#include <fmt/format.h>

#include "formats/minifloat.hpp"

template <class F>
struct fmt::formatter<lowbit::minifloat<F>> : fmt::formatter<float> {
  template <class FormatContext>
  auto format(lowbit::minifloat<F> v, FormatContext& ctx) const {
    return fmt::formatter<float>::format(static_cast<float>(v), ctx);
  }
};

#endif  // LOWBIT_FMT_HPP
