// lowbit: the vocabulary of the linear-algebra calls (docs/linalg.md): which operand is
// transposed, which triangle is meant, and the shape checks every call shares.
//
// Matrices are row-major with a leading dimension: element (i, j) of a matrix with leading
// dimension ld is p[i * ld + j], and ld >= its number of columns. A matrix of r rows spans
// (r - 1) * ld + cols elements; that span is what the overlap and alignment checks see (so two
// matrices interleaved in one buffer count as overlapping when their spans overlap).
#ifndef LOWBIT_LINALG_TYPES_HPP
#define LOWBIT_LINALG_TYPES_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../core/checks.hpp"
#include "../core/status.hpp"

namespace lowbit {

// op(X) in a multiply or a solve: X as stored, or its transpose.
enum class matrix_op : std::uint8_t { identity, transpose };

// Which triangle of a square matrix a call reads or writes.
enum class triangle : std::uint8_t {
  upper,  // elements (i, j) with j >= i
  lower,  // elements (i, j) with j <= i
  both    // the whole matrix (only where a call says so)
};

// Which side of X the triangular matrix multiplies in a solve.
enum class solve_side : std::uint8_t {
  left,  // op(T) X = B
  right  // X op(T) = B
};

namespace detail {

constexpr bool valid(matrix_op o) noexcept { return o == matrix_op::identity || o == matrix_op::transpose; }
constexpr bool valid(triangle t) noexcept {
  return t == triangle::upper || t == triangle::lower || t == triangle::both;
}
constexpr bool valid(solve_side s) noexcept { return s == solve_side::left || s == solve_side::right; }

// The number of elements a rows x cols matrix with leading dimension ld spans, into *out; false
// when ld < cols or the span (in bytes of float) overflows size_t.
inline bool matrix_span(std::size_t rows, std::size_t cols, std::size_t ld, std::size_t* out) noexcept {
  if (ld < cols) return false;
  if (rows == 0 || cols == 0) {
    *out = 0;
    return true;
  }
  std::size_t body = 0;
  if (!checked_mul(rows - 1, ld, &body)) return false;
  if (body > static_cast<std::size_t>(-1) - cols) return false;
  std::size_t bytes = 0;
  if (!checked_mul(body + cols, sizeof(double), &bytes)) return false;  // leaves room for index arithmetic
  *out = body + cols;
  return true;
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_LINALG_TYPES_HPP
