// lowbit: error reporting without exceptions. Every operation that can reject its input returns
// a status (or a result<T>); both are [[nodiscard]], so ignoring one is a compiler warning.
#ifndef LOWBIT_CORE_STATUS_HPP
#define LOWBIT_CORE_STATUS_HPP

#include <cstdint>

#include "config.hpp"

namespace lowbit {

enum class errc : std::uint8_t {
  ok = 0,
  empty_input,        // n == 0 where a statistic or a scale needs at least one value
  size_mismatch,      // two buffers or a shape and a buffer disagree
  bad_group_size,     // group size 0, or one that does not divide the row length
  bad_block_size,     // block size 0, or a length that is not a multiple of it
  bad_bit_width,      // integer width outside the supported range
  non_finite_input,   // NaN or Inf in a group or block whose scale must be computed
  bad_argument,       // any other out-of-range parameter (stated in the function's comment)
  scale_overflow,     // a computed scale or offset beyond its storage format (fp16 above 65504)
  overlapping_buffers,  // an output overlaps an input or another output (docs/api.md, aliasing)
  misaligned,           // a pointer not aligned to its element type (a float* at an odd address)
  out_of_memory,        // an owning container could not allocate its storage
  not_positive_definite,  // a matrix that must be symmetric positive definite is not (Cholesky)
};

// A short English description of an error code (static storage, never null).
LOWBIT_HD constexpr const char* message(errc c) noexcept {
  switch (c) {
    case errc::ok: return "ok";
    case errc::empty_input: return "empty input";
    case errc::size_mismatch: return "sizes do not match";
    case errc::bad_group_size: return "group size does not divide the row length";
    case errc::bad_block_size: return "length is not a multiple of the block size";
    case errc::bad_bit_width: return "bit width out of range";
    case errc::non_finite_input: return "NaN or Inf where a scale must be computed";
    case errc::bad_argument: return "argument out of range";
    case errc::scale_overflow: return "computed scale does not fit its storage format";
    case errc::overlapping_buffers: return "an output overlaps an input or another output";
    case errc::misaligned: return "pointer not aligned to its element type";
    case errc::out_of_memory: return "out of memory";
    case errc::not_positive_definite: return "matrix is not positive definite";
  }
  return "unknown error";
}

class [[nodiscard]] status {
 public:
  constexpr status() noexcept = default;
  constexpr status(errc code) noexcept : code_(code) {}  // NOLINT: implicit by design

  constexpr bool ok() const noexcept { return code_ == errc::ok; }
  constexpr explicit operator bool() const noexcept { return ok(); }
  constexpr errc code() const noexcept { return code_; }
  constexpr const char* message() const noexcept { return lowbit::message(code_); }

  friend constexpr bool operator==(status a, status b) noexcept { return a.code_ == b.code_; }
  friend constexpr bool operator!=(status a, status b) noexcept { return a.code_ != b.code_; }

 private:
  errc code_ = errc::ok;
};

// A value together with the status of the computation that produced it; value is meaningful
// only when ok().
template <class T>
struct [[nodiscard]] result {
  T value{};
  lowbit::status status{};

  constexpr bool ok() const noexcept { return status.ok(); }
  constexpr explicit operator bool() const noexcept { return ok(); }
};

}  // namespace lowbit

#endif  // LOWBIT_CORE_STATUS_HPP
