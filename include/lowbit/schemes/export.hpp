// lowbit: one call from a quantized_matrix (a [out, in] weight) to the tensors a checkpoint
// stores for it, in each layout of schemes/layouts/: GPTQ v1 / v2, AWQ GEMM, ggml Q4_0 / Q8_0.
// The codes are read from the matrix's bit stream a row (or a block) at a time: no
// one-code-per-byte copy of the matrix is made. The results own their storage, allocated with
// new (std::nothrow) (errc::out_of_memory when that fails); they are move-only.
//
//   export_gptq(m, fmt)   qweight int32 [in*b/32, out], qzeros int32 [groups, out*b/32] (the
//                         symmetric schemes' fixed zero-point 2^(b-1) included), scales fp16
//                         [groups, out], g_idx int32 [in]
//   export_awq(m)         qweight int32 [in, out/8], qzeros int32 [groups, out/8], scales fp16
//                         [groups, out]
//   export_ggml_q4_0(m)   [out, in/32] blocks; export_ggml_q8_0(m) the same
//
// Each gives the bytes of the layout's packers (gptq_pack_qweight, gptq_pack_qzeros,
// transpose_group_params, awq_pack_*, ggml_pack_*) fed with the matrix's codes, zero-points and
// scales: tests/test_export.cpp checks that byte for byte. Errors: an empty matrix ->
// bad_argument (there is no layer to export); a width the layout cannot hold ->
// bad_bit_width; a scheme it cannot hold (a float offset; ggml: an affine scheme) or scales
// not stored as fp16 (scale_format != fp16), two's complement codes -> bad_argument; groups
// along rows, a partial last group, or groups that are not what the
// layout stores (ggml: per_group of 32; GPTQ / AWQ: per_group, or per_channel as one group)
// -> bad_group_size; dimensions that are not whole words or blocks -> bad_block_size; the
// packers' own data errors (a GPTQ v1 zero-point of 0) -> bad_argument; out_of_memory.
#ifndef LOWBIT_SCHEMES_EXPORT_HPP
#define LOWBIT_SCHEMES_EXPORT_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "layouts/awq.hpp"
#include "layouts/ggml.hpp"
#include "layouts/gptq.hpp"
#include "quantized_matrix.hpp"

namespace lowbit {

// An owned row-major [rows, cols] tensor of T (move-only; values() views it).
template <class T>
class tensor {
 public:
  tensor() = default;
  tensor(tensor&&) noexcept = default;
  tensor& operator=(tensor&&) noexcept = default;
  tensor(const tensor&) = delete;
  tensor& operator=(const tensor&) = delete;

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  span<const T> values() const noexcept { return {data_.get(), size()}; }
  span<T> values() noexcept { return {data_.get(), size()}; }

  // rows * cols value-initialised elements (zeros); out_of_memory when the allocation fails.
  [[nodiscard]] status allocate(std::size_t rows, std::size_t cols) noexcept {
    *this = tensor{};
    std::size_t n = 0;
    if (status s = detail::checked_shape(rows, cols, sizeof(T), &n); !s) return s;
    if (n != 0) {
      data_.reset(new (std::nothrow) T[n]());
      if (!data_) return errc::out_of_memory;
    }
    rows_ = rows;
    cols_ = cols;
    return status{};
  }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
};

struct gptq_tensors {
  tensor<std::int32_t> qweight;  // [in * bits / 32, out]
  tensor<std::int32_t> qzeros;   // [groups, out * bits / 32]
  tensor<float16> scales;        // [groups, out]
  tensor<std::int32_t> g_idx;    // [1, in]
};

struct awq_tensors {
  tensor<std::int32_t> qweight;  // [in, out / 8]
  tensor<std::int32_t> qzeros;   // [groups, out / 8]
  tensor<float16> scales;        // [groups, out]
};

namespace detail {

// The checks every export makes, in docs/api.md's order: an empty matrix (nothing to export) ->
// bad_argument; `width` (the layout's verdict on the bit width) ; a float-offset scheme, scales
// not stored as fp16 or two's complement codes -> bad_argument; granularity per_tensor, groups
// along rows or a partial last group -> bad_group_size. Then the groups
// per output row (1 for per_channel / per_token).
inline status export_check(const quantized_matrix& m, status width, std::size_t* groups_per_row) noexcept {
  const int_params& p = m.params();
  if (m.empty()) return errc::bad_argument;
  if (!width) return width;
  if (p.scheme == int_scheme::affine_offset || p.scale_format != scale_storage::fp16 ||
      p.code_storage != int_code_storage::offset_binary)
    return errc::bad_argument;  // the layouts store offset-binary codes and zero-points
  if (p.granularity != granularity::per_tensor &&
      (p.group_axis != int_group_axis::cols ||
       (p.granularity == granularity::per_group && m.cols() % p.group_size != 0)))
    return errc::bad_group_size;  // groups down the columns, or a partial last group
  if (p.granularity == granularity::per_group) {
    *groups_per_row = m.cols() / p.group_size;
  } else if (p.granularity == granularity::per_channel || p.granularity == granularity::per_token) {
    *groups_per_row = 1;
  } else {
    return errc::bad_group_size;
  }
  return status{};
}

// The zero-point of group g of output row o (the fixed 2^(b-1) for symmetric schemes).
inline std::uint32_t export_zero(const quantized_matrix& m, std::size_t o, std::size_t groups, std::size_t g) noexcept {
  if (!has_zero_points(m.params())) return static_cast<std::uint32_t>(symmetric_zero_point(m.params().bits));
  return static_cast<std::uint32_t>(m.zeros()[o * groups + g]);
}

// scales [groups, out] as fp16 from the matrix's [out, groups] (exact: scale_format is fp16).
inline status export_scales(const quantized_matrix& m, std::size_t groups, tensor<float16>* t) noexcept {
  const std::size_t out = m.rows();
  if (status s = t->allocate(groups, out); !s) return s;
  const span<const float> sc = m.scales();
  span<float16> dst = t->values();
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t g = 0; g < groups; ++g) dst[g * out + o] = encode<float16>(sc[o * groups + g]);
  return status{};
}

// A buffer for one row of codes, one per byte.
inline status row_buffer(std::size_t n, std::unique_ptr<std::uint8_t[]>* row) noexcept {
  row->reset(new (std::nothrow) std::uint8_t[n]);
  return *row ? status{} : status{errc::out_of_memory};
}

}  // namespace detail

// GPTQ's tensors of m (see the top of this file). fmt: v1 stores zero - 1 (a zero-point of 0 is
// then bad_argument), v2 the zero itself.
[[nodiscard]] inline result<gptq_tensors> export_gptq(const quantized_matrix& m,
                                                      gptq_format fmt = gptq_format::v1) noexcept {
  result<gptq_tensors> r;
  const int_params& p = m.params();
  const std::size_t out = m.rows(), in = m.cols();
  std::size_t groups = 0;
  if ((r.status = detail::export_check(m, detail::check_word_width(p.bits), &groups)) != status{}) return r;
  if (static_cast<unsigned>(fmt) > 1u) {
    r.status = errc::bad_argument;
    return r;
  }
  const std::size_t k = 32u / static_cast<std::size_t>(p.bits);
  if (in % k != 0 || out % k != 0) {
    r.status = errc::bad_block_size;
    return r;
  }
  const std::uint32_t bias = fmt == gptq_format::v1 ? 1u : 0u;
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t g = 0; g < groups; ++g)
      if (detail::export_zero(m, o, groups, g) < bias) {
        r.status = errc::bad_argument;  // v1 cannot store a zero-point of 0
        return r;
      }
  gptq_tensors& t = r.value;
  std::unique_ptr<std::uint8_t[]> row;
  if ((r.status = t.qweight.allocate(in / k, out)) != status{} || (r.status = t.qzeros.allocate(groups, out / k)) != status{} ||
      (r.status = t.g_idx.allocate(1, in)) != status{} || (r.status = detail::export_scales(m, groups, &t.scales)) != status{} ||
      (r.status = detail::row_buffer(in, &row)) != status{}) {
    t = gptq_tensors{};
    return r;
  }
  const unsigned b = static_cast<unsigned>(p.bits);
  span<std::int32_t> qw = t.qweight.values();
  for (std::size_t o = 0; o < out; ++o) {
    detail::get_codes(m.packed_codes().data(), o * in, in, p.bits, row.get());
    for (std::size_t w = 0; w < in / k; ++w) {
      std::uint32_t word = 0;
      for (std::size_t j = 0; j < k; ++j) word |= static_cast<std::uint32_t>(row[w * k + j]) << (b * j);
      qw[w * out + o] = static_cast<std::int32_t>(word);
    }
  }
  span<std::int32_t> qz = t.qzeros.values();
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t w = 0; w < out / k; ++w) {
      std::uint32_t word = 0;
      for (std::size_t j = 0; j < k; ++j) word |= (detail::export_zero(m, w * k + j, groups, g) - bias) << (b * j);
      qz[g * (out / k) + w] = static_cast<std::int32_t>(word);
    }
  const std::size_t group_length = in / groups;
  span<std::int32_t> gi = t.g_idx.values();
  for (std::size_t i = 0; i < in; ++i) gi[i] = static_cast<std::int32_t>(i / group_length);
  return r;
}

// AWQ GEMM's tensors of m: 4 bits; the integer zero-points (affine) or 8 (symmetric).
[[nodiscard]] inline result<awq_tensors> export_awq(const quantized_matrix& m) noexcept {
  result<awq_tensors> r;
  const int_params& p = m.params();
  const std::size_t out = m.rows(), in = m.cols();
  std::size_t groups = 0;
  if ((r.status = detail::export_check(m, p.bits == 4 ? status{} : status{errc::bad_bit_width}, &groups)) != status{})
    return r;
  if (out % 8 != 0) {
    r.status = errc::bad_block_size;
    return r;
  }
  awq_tensors& t = r.value;
  std::unique_ptr<std::uint8_t[]> row;
  if ((r.status = t.qweight.allocate(in, out / 8)) != status{} || (r.status = t.qzeros.allocate(groups, out / 8)) != status{} ||
      (r.status = detail::export_scales(m, groups, &t.scales)) != status{} ||
      (r.status = detail::row_buffer(in, &row)) != status{}) {
    t = awq_tensors{};
    return r;
  }
  span<std::int32_t> qw = t.qweight.values();  // zeros: the nibbles are or-ed in
  span<std::int32_t> qz = t.qzeros.values();
  for (std::size_t o = 0; o < out; ++o) {
    const unsigned shift = 4u * static_cast<unsigned>(awq_reverse_order[o % 8]);
    detail::get_codes(m.packed_codes().data(), o * in, in, 4, row.get());
    for (std::size_t i = 0; i < in; ++i)
      qw[i * (out / 8) + o / 8] = static_cast<std::int32_t>(static_cast<std::uint32_t>(qw[i * (out / 8) + o / 8]) |
                                                            static_cast<std::uint32_t>(row[i]) << shift);
    for (std::size_t g = 0; g < groups; ++g)
      qz[g * (out / 8) + o / 8] = static_cast<std::int32_t>(static_cast<std::uint32_t>(qz[g * (out / 8) + o / 8]) |
                                                            detail::export_zero(m, o, groups, g) << shift);
  }
  return r;
}

namespace detail {
// The ggml blocks of m: a symmetric scheme of `bits` bits in groups of 32 with fp16 scales, each
// block written by the layout's own rule (put_block, as ggml_pack_q4_0 / q8_0 write it).
template <class Block>
inline result<tensor<Block>> export_ggml(const quantized_matrix& m, int bits) noexcept {
  result<tensor<Block>> r;
  const int_params& p = m.params();
  std::size_t groups = 0;
  if ((r.status = export_check(m, p.bits == bits ? status{} : status{errc::bad_bit_width}, &groups)) != status{})
    return r;
  if (p.scheme != int_scheme::symmetric) {
    r.status = errc::bad_argument;
    return r;
  }
  if (p.granularity != granularity::per_group || p.group_size != ggml_block_size) {
    r.status = errc::bad_group_size;
    return r;
  }
  if ((r.status = r.value.allocate(m.rows(), m.cols() / ggml_block_size)) != status{}) return r;
  span<Block> blocks = r.value.values();
  std::uint8_t codes[ggml_block_size];
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    get_codes(m.packed_codes().data(), b * ggml_block_size, ggml_block_size, bits, codes);
    put_block(codes, m.scales()[b], &blocks[b]);
  }
  return r;
}
}  // namespace detail

// ggml Q4_0 blocks [out, in/32] of m: 4-bit symmetric (any range rule), groups of 32, fp16.
[[nodiscard]] inline result<tensor<ggml_block_q4_0>> export_ggml_q4_0(const quantized_matrix& m) noexcept {
  return detail::export_ggml<ggml_block_q4_0>(m, 4);
}

// ggml Q8_0 blocks [out, in/32] of m: 8-bit symmetric, groups of 32, fp16 scales.
[[nodiscard]] inline result<tensor<ggml_block_q8_0>> export_ggml_q8_0(const quantized_matrix& m) noexcept {
  return detail::export_ggml<ggml_block_q8_0>(m, 8);
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_EXPORT_HPP
