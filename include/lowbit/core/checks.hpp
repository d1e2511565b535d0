// lowbit: the argument checks every bulk call makes before it touches memory (docs/api.md):
// sizes that overflow, null pointers, misaligned pointers and outputs that overlap other buffers.
#ifndef LOWBIT_CORE_CHECKS_HPP
#define LOWBIT_CORE_CHECKS_HPP

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "status.hpp"

// Preconditions of the calls that cannot return a status (convert, convert_packed): checked in
// builds without NDEBUG, assumed otherwise.
#ifndef LOWBIT_ASSERT
#define LOWBIT_ASSERT(cond) assert(cond)
#endif

namespace lowbit {
namespace detail {

// a * b into *out; false (and *out untouched) when the product overflows size_t.
constexpr bool checked_mul(std::size_t a, std::size_t b, std::size_t* out) noexcept {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) return false;
  *out = a * b;
  return true;
}

// One buffer a call reads or writes: its address, its size in bytes and its element alignment.
// A buffer of 0 bytes is never checked (it may be null).
struct buffer {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::size_t alignment = 1;
};

// count elements of T at p; a byte count that would overflow size_t saturates (the shape checks
// reject such a count first; saturation keeps the overlap test conservative).
template <class T>
constexpr buffer buffer_of(const T* p, std::size_t count) noexcept {
  buffer b;
  b.address = reinterpret_cast<std::uintptr_t>(p);
  b.bytes = count > std::numeric_limits<std::size_t>::max() / sizeof(T) ? std::numeric_limits<std::size_t>::max()
                                                                          : count * sizeof(T);
  b.alignment = alignof(T);
  return b;
}

inline bool overlaps(const buffer& a, const buffer& b) noexcept {
  if (a.bytes == 0 || b.bytes == 0) return false;
  const std::uintptr_t a_last = a.address + (a.bytes - 1);  // may wrap only for absurd sizes
  const std::uintptr_t b_last = b.address + (b.bytes - 1);
  return a.address <= b_last && b.address <= a_last;
}

// The checks of docs/api.md, in its order: a null non-empty buffer -> bad_argument; a misaligned
// one -> misaligned; an output overlapping an input or another output -> overlapping_buffers.
inline status check_buffers(std::initializer_list<buffer> inputs, std::initializer_list<buffer> outputs) noexcept {
  for (std::initializer_list<buffer> list : {inputs, outputs})
    for (const buffer& b : list)
      if (b.bytes != 0 && b.address == 0) return errc::bad_argument;
  for (std::initializer_list<buffer> list : {inputs, outputs})
    for (const buffer& b : list)
      if (b.bytes != 0 && b.address % b.alignment != 0) return errc::misaligned;
  for (const buffer* o = outputs.begin(); o != outputs.end(); ++o) {
    for (const buffer& i : inputs)
      if (overlaps(*o, i)) return errc::overlapping_buffers;
    for (const buffer* p = outputs.begin(); p != o; ++p)
      if (overlaps(*o, *p)) return errc::overlapping_buffers;
  }
  return status{};
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_CORE_CHECKS_HPP
