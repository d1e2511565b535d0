// lowbit: span<T>, a pointer and a count, for the container overloads of the bulk calls.
//
// C++17 has no std::span, so lowbit carries this small one. It is built implicitly from anything
// with data() and size() whose data() converts to T* (std::vector, std::array, std::string for
// bytes, and std::span under C++20), and from a built-in array; span<const T> also from span<T>.
// It owns nothing: the container must outlive the call.
//
//   std::vector<float> x(4096 * 4096);
//   std::vector<lowbit::float8_e4m3fn> q(x.size());
//   lowbit::status s = lowbit::convert(lowbit::span<const float>(x), lowbit::span<lowbit::float8_e4m3fn>(q));
//
// The container overloads take their counts from the spans and check them: every span must hold
// exactly the number of elements the call reads or writes (errc::size_mismatch otherwise).
#ifndef LOWBIT_CORE_SPAN_HPP
#define LOWBIT_CORE_SPAN_HPP

#include <cstddef>
#include <type_traits>
#include <utility>

#include "config.hpp"

namespace lowbit {

template <class T>
class span {
  // A container qualifies when a pointer to its elements converts to T* without a value
  // conversion (float* to const float*, never int* to float*): the test std::span uses.
  template <class C>
  using element_of = std::remove_pointer_t<decltype(std::declval<C&>().data())>;
  template <class C, class = void>
  struct is_container : std::false_type {};
  template <class C>
  struct is_container<C, std::void_t<element_of<C>, decltype(std::declval<C&>().size())>>
      : std::is_convertible<element_of<C> (*)[], T (*)[]> {};

 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  constexpr span() noexcept = default;
  constexpr span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr span(T (&a)[N]) noexcept : data_(a), size_(N) {}  // NOLINT: implicit by design
  template <class C, std::enable_if_t<is_container<C>::value && !std::is_same<std::decay_t<C>, span>::value, int> = 0>
  constexpr span(C&& c) noexcept(noexcept(c.data())) : data_(c.data()), size_(static_cast<std::size_t>(c.size())) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace lowbit

#endif  // LOWBIT_CORE_SPAN_HPP
