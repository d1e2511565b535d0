// lowbit: quantized_matrix, an owning [rows, cols] matrix of integer codes with its scheme,
// packed codes, scales and zero-points. Built on schemes/integer.hpp's calls; never throws:
// storage is allocated with new (std::nothrow), a failed allocation is errc::out_of_memory.
// Move-only (clone() copies, with a status).
#ifndef LOWBIT_SCHEMES_QUANTIZED_MATRIX_HPP
#define LOWBIT_SCHEMES_QUANTIZED_MATRIX_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "../core/memory.hpp"
#include "integer.hpp"

namespace lowbit {

// Codes are packed at b bits in lowbit's bit stream (pack_codes: row-major, element k at bits
// b*k; for INT4 two per byte, the first in the low nibble); scales and zero-points/offsets are
// floats holding exactly the stored values, [rows, cols/G] row-major (one per group).
class quantized_matrix {
 public:
  quantized_matrix() = default;
  quantized_matrix(quantized_matrix&&) noexcept = default;
  quantized_matrix& operator=(quantized_matrix&&) noexcept = default;
  quantized_matrix(const quantized_matrix&) = delete;
  quantized_matrix& operator=(const quantized_matrix&) = delete;

  // Quantizes src [rows, cols] (float32). Errors: quantize_int_packed's; out_of_memory.
  [[nodiscard]] static result<quantized_matrix> quantize(const float* src, std::size_t rows, std::size_t cols,
                                                         const int_params& p,
                                                         const std::uint32_t* random_bits = nullptr) noexcept {
    result<quantized_matrix> r;
    r.status = r.value.init(rows, cols, p);
    if (!r.ok() || r.value.empty()) return r;
    quantized_matrix& m = r.value;
    r.status = quantize_int_packed(src, rows, cols, p, m.codes_.get(), m.scales_.get(), m.zeros_.get(), random_bits);
    if (!r.ok()) m = quantized_matrix{};
    return r;
  }

  // The span form: src holds exactly rows * cols values (errc::size_mismatch otherwise).
  [[nodiscard]] static result<quantized_matrix> quantize(span<const float> src, std::size_t rows, std::size_t cols,
                                                         const int_params& p) noexcept {
    result<quantized_matrix> r;
    r.status = int_groups(p, rows, cols).status;
    if (r.ok() && src.size() != rows * cols) r.status = errc::size_mismatch;
    if (!r.ok()) return r;
    return quantize(src.data(), rows, cols, p);
  }

  // Quantizes bfloat16 values (each decoded exactly to float32; the same result as quantizing the
  // decoded floats). Rows are converted a batch at a time into a stack buffer of 4096 floats, so
  // no float copy of the matrix is made, except under per_tensor granularity or with rows longer
  // than the buffer, where one allocation holds the rows of a batch (out_of_memory if it fails).
  [[nodiscard]] static result<quantized_matrix> quantize(const bfloat16* src, std::size_t rows, std::size_t cols,
                                                         const int_params& p,
                                                         const std::uint32_t* random_bits = nullptr) noexcept {
    result<quantized_matrix> r;
    r.status = r.value.init(rows, cols, p);
    if (!r.ok() || r.value.empty()) return r;
    quantized_matrix& m = r.value;
    const std::size_t n = rows * cols;
    const std::uint32_t* rb = detail::rounding_bits(p, random_bits);
    r.status = detail::check_buffers({detail::buffer_of(src, n), detail::buffer_of(rb, rb != nullptr ? n : 0)}, {});
    if (!r.ok()) {
      m = quantized_matrix{};
      return r;
    }
    r.status = m.quantize_rows(src, rb);
    if (!r.ok()) m = quantized_matrix{};
    return r;
  }

  // Builds a matrix from codes (rows*cols, one per byte), scales and zero-points as quantize_int
  // writes them (a checkpoint being read, a GPTQ solver's output). Errors: int_groups'; a span
  // whose size differs from the shape's (zeros empty for symmetric schemes) -> size_mismatch; a
  // code above 2^b-1 (or 0 under the restricted symmetric range) or a parameter stored_int_codec
  // rejects -> bad_argument; out_of_memory.
  [[nodiscard]] static result<quantized_matrix> from_codes(span<const std::uint8_t> codes, span<const float> scales,
                                                           span<const float> zeros, std::size_t rows, std::size_t cols,
                                                           const int_params& p) noexcept {
    result<quantized_matrix> r;
    r.status = detail::int_span_sizes(p, rows, cols, codes.size(), codes.size(), false, scales.size(), zeros.size(), 0);
    if (!r.ok()) return r;
    const int lo = p.scheme == int_scheme::symmetric && p.range == int_range::restricted ? 1 : 0;
    const bool twos = p.code_storage == int_code_storage::twos_complement;
    for (std::uint8_t t : codes) {
      // two's complement: the sign-extended byte of a b-bit q (INT4 -8..7 is 0xF8..0x07)
      const std::uint8_t c = twos ? detail::offset_code(t, p.bits) : t;
      if (c < lo || c > max_code(p.bits) || (twos && detail::stored_code(c, p.bits) != t)) {
        r.status = errc::bad_argument;
        return r;
      }
    }
    for (std::size_t i = 0; i < scales.size(); ++i) {
      const result<int_group_codec> c = stored_int_codec(scales[i], zeros.empty() ? 0.0f : zeros[i], p);
      if (!c.ok()) {
        r.status = c.status;
        return r;
      }
    }
    r.status = r.value.init(rows, cols, p);
    if (!r.ok() || r.value.empty()) return r;
    quantized_matrix& m = r.value;
    for (std::size_t i = 0; i < scales.size(); ++i) m.scales_[i] = scales[i];
    for (std::size_t i = 0; i < zeros.size(); ++i) m.zeros_[i] = zeros[i];
    if (p.code_storage == int_code_storage::twos_complement) {
      detail::put_codes(codes.data(), codes.size(), p.bits, m.codes_.get(), 0);  // the low b bits
      return r;
    }
    r.status = pack_codes(codes.data(), codes.size(), p.bits, m.codes_.get());
    if (!r.ok()) m = quantized_matrix{};
    return r;
  }

  // A copy (out_of_memory if it cannot be allocated).
  [[nodiscard]] result<quantized_matrix> clone() const noexcept {
    result<quantized_matrix> r;
    r.status = r.value.init(rows_, cols_, params_);
    if (!r.ok()) return r;
    for (std::size_t i = 0; i < codes_size_; ++i) r.value.codes_[i] = codes_[i];
    for (std::size_t i = 0; i < grouping_.group_count; ++i) r.value.scales_[i] = scales_[i];
    for (std::size_t i = 0; i < zero_count(); ++i) r.value.zeros_[i] = zeros_[i];
    return r;
  }

  // Writes the rows*cols dequantized values: dst must hold exactly size() (errc::size_mismatch);
  // an empty matrix writes nothing (ok). Buffer errors as dequantize_int_packed's.
  [[nodiscard]] status dequantize(span<float> dst) const noexcept { return dequantize_values(dst); }
  // The same, rounded to bfloat16 (nearest even).
  [[nodiscard]] status dequantize(span<bfloat16> dst) const noexcept { return dequantize_values(dst); }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  bool empty() const noexcept { return size() == 0; }
  const int_params& params() const noexcept { return params_; }
  std::size_t group_length() const noexcept { return grouping_.group_length; }
  std::size_t group_count() const noexcept { return grouping_.group_count; }

  // packed_bytes(size(), bits) bytes in pack_codes' layout.
  span<const std::uint8_t> packed_codes() const noexcept { return {codes_.get(), codes_size_}; }
  // One per group, exactly the stored values.
  span<const float> scales() const noexcept { return {scales_.get(), grouping_.group_count}; }
  // One per group for the affine schemes (integer zero-points as floats, or offsets); empty for
  // symmetric ones.
  span<const float> zeros() const noexcept { return {zeros_.get(), zero_count()}; }

  // The code of element (r, c), one per byte as quantize_int writes it (under twos_complement the
  // sign-extended byte); 0 out of range.
  std::uint8_t code(std::size_t r, std::size_t c) const noexcept {
    std::uint8_t u = 0;
    if (r < rows_ && c < cols_) {
      detail::get_codes(codes_.get(), r * cols_ + c, 1, params_.bits, &u);
      to_bytes(&u, 1);
    }
    return u;
  }

  // Codes first .. first + codes.size() - 1 (row-major), one per byte as quantize_int writes them:
  // a row or a group without unpacking the rest. first + codes.size() beyond size() -> size_mismatch.
  [[nodiscard]] status unpack(std::size_t first, span<std::uint8_t> codes) const noexcept {
    if (first > size() || codes.size() > size() - first) return errc::size_mismatch;
    const status s = unpack_codes(packed_codes(), first, params_.bits, codes);
    if (s) to_bytes(codes.data(), codes.size());
    return s;
  }
  // All codes (codes.size() must equal size()).
  [[nodiscard]] status unpack(span<std::uint8_t> codes) const noexcept {
    if (codes.size() != size()) return errc::size_mismatch;
    return unpack(0, codes);
  }

  // Byte accounting of this matrix (int_storage_for its shape and parameters).
  lowbit::storage storage() const noexcept {
    const result<lowbit::storage> s = int_storage_for(params_, rows_, cols_);
    return s.ok() ? s.value : lowbit::storage{};
  }

 private:
  std::size_t zero_count() const noexcept { return has_zero_points(params_) ? grouping_.group_count : 0; }

  // Packed fields (the low b bits) to one code per byte: two's complement fields sign-extended.
  void to_bytes(std::uint8_t* c, std::size_t n) const noexcept {
    if (params_.code_storage != int_code_storage::twos_complement) return;
    const unsigned h = 1u << (params_.bits - 1);
    for (std::size_t i = 0; i < n; ++i) c[i] = detail::stored_code(static_cast<std::uint8_t>(c[i] ^ h), params_.bits);
  }

  // Shape, parameters and storage of an empty-valued matrix; int_groups' errors, out_of_memory.
  status init(std::size_t rows, std::size_t cols, const int_params& p) noexcept {
    const result<int_grouping> g = int_groups(p, rows, cols);
    if (!g.ok()) return g.status;
    rows_ = rows;
    cols_ = cols;
    params_ = p;
    grouping_ = g.value;
    codes_size_ = packed_bytes(rows * cols, p.bits);
    codes_ = detail::allocate<std::uint8_t>(codes_size_);
    scales_ = detail::allocate<float>(g.value.group_count);
    zeros_ = detail::allocate<float>(zero_count());
    if ((codes_size_ != 0 && !codes_) || (g.value.group_count != 0 && !scales_) || (zero_count() != 0 && !zeros_)) {
      *this = quantized_matrix{};
      return errc::out_of_memory;
    }
    for (std::size_t i = 0; i < codes_size_; ++i) codes_[i] = 0;
    return status{};
  }

  // quantize(bfloat16): batches of whole rows through a float buffer, codes one per byte, then
  // into the bit stream. Groups along cols never straddle rows; groups along rows take batches of
  // whole blocks of G rows (per_channel along rows: every row); per_tensor takes one batch of
  // every row.
  status quantize_rows(const bfloat16* src, const std::uint32_t* rb) noexcept {
    constexpr std::size_t stack_floats = 4096;
    const bool along_rows = params_.group_axis == int_group_axis::rows;
    const bool whole = params_.granularity == granularity::per_tensor ||
                       (along_rows && params_.granularity != granularity::per_group);
    // rows per block of scales: G along rows (at most every row), else 1
    const std::size_t unit = along_rows && !whole ? (params_.group_size < rows_ ? params_.group_size : rows_) : 1;
    const std::size_t unit_elems = unit * cols_;  // <= rows * cols
    const std::size_t batch_rows =
        whole ? rows_ : (unit_elems <= stack_floats ? stack_floats / unit_elems * unit : unit);
    const std::size_t batch = batch_rows * cols_;
    float stack_x[stack_floats];
    std::uint8_t stack_codes[stack_floats];
    std::unique_ptr<float[]> heap_x;
    std::unique_ptr<std::uint8_t[]> heap_codes;
    float* x = stack_x;
    std::uint8_t* codes = stack_codes;
    if (batch > stack_floats) {
      heap_x = detail::allocate<float>(batch);
      heap_codes = detail::allocate<std::uint8_t>(batch);
      if (!heap_x || !heap_codes) return errc::out_of_memory;
      x = heap_x.get();
      codes = heap_codes.get();
    }
    // groups per `unit` rows: along cols, the groups of one row; along rows, one per column
    const std::size_t groups_per_unit = whole ? 0 : along_rows ? cols_ : grouping_.group_count / rows_;
    for (std::size_t r0 = 0; r0 < rows_; r0 += batch_rows) {
      const std::size_t nr = rows_ - r0 < batch_rows ? rows_ - r0 : batch_rows;
      const std::size_t first = r0 * cols_;
      const std::size_t g0 = r0 / unit * groups_per_unit;
      for (std::size_t i = 0; i < nr * cols_; ++i) x[i] = static_cast<float>(src[first + i]);
      float* zeros = zeros_ ? zeros_.get() + g0 : nullptr;
      const status s = quantize_int(x, nr, cols_, params_, codes, scales_.get() + g0, zeros,
                                    rb != nullptr ? rb + first : nullptr);
      if (!s) return s;
      detail::put_codes(codes, nr * cols_, params_.bits, codes_.get(), first);
    }
    return status{};
  }

  template <class T>
  status dequantize_values(span<T> dst) const noexcept {
    if (dst.size() != size()) return errc::size_mismatch;
    if (empty()) return status{};
    return dequantize_int_packed(codes_.get(), scales_.get(), zeros_.get(), rows_, cols_, params_, dst.data());
  }

  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  int_params params_{};
  int_grouping grouping_{};
  std::size_t codes_size_ = 0;
  std::unique_ptr<std::uint8_t[]> codes_;
  std::unique_ptr<float[]> scales_;
  std::unique_ptr<float[]> zeros_;
};

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_QUANTIZED_MATRIX_HPP
