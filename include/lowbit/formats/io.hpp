// lowbit: stream output of lowbit values (their exact value, printed as a float).
#ifndef LOWBIT_FORMATS_IO_HPP
#define LOWBIT_FORMATS_IO_HPP

#include <ostream>

#include "minifloat.hpp"

namespace lowbit {

template <class F>
std::ostream& operator<<(std::ostream& os, minifloat<F> v) {
  return os << static_cast<float>(v);
}

}  // namespace lowbit

#endif  // LOWBIT_FORMATS_IO_HPP
