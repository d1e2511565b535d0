// lowbit: the owning buffers of the calls that allocate (quantized_matrix, exports, GPTQ, the
// searches): new (std::nothrow), so an allocation failure is a null pointer the caller turns
// into errc::out_of_memory, never an exception.
#ifndef LOWBIT_CORE_MEMORY_HPP
#define LOWBIT_CORE_MEMORY_HPP

#include <cstddef>
#include <memory>
#include <new>

namespace lowbit {
namespace detail {

// n default-initialised elements, or null (n == 0, or the allocation failed).
template <class T>
inline std::unique_ptr<T[]> allocate(std::size_t n) noexcept {
  if (n == 0) return nullptr;
  return std::unique_ptr<T[]>(new (std::nothrow) T[n]);
}

// A working buffer of n default-initialised elements (at least one, so that null always means
// the allocation failed).
template <class T>
inline std::unique_ptr<T[]> allocate_buffer(std::size_t n) noexcept {
  return std::unique_ptr<T[]>(new (std::nothrow) T[n == 0 ? 1 : n]);
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_CORE_MEMORY_HPP
