// lowbit: the streaming Hessian of a linear layer's inputs, H = (2 / n) sum_t x_t^T x_t, the
// matrix GPTQ (transforms/gptq.hpp) minimises the output error against (docs/transforms.md).
//
// Fed batch by batch with activation rows [tokens, features] (float32 or bfloat16), as the
// calibration forward passes produce them. Each batch's X^T X is computed by the float32
// symmetric rank-k update (linalg syrk, upper triangle) in chunks of at most hessian_chunk_tokens
// rows and added into a float64 running sum: the float32 part only ever sums one chunk, so the
// rounding error does not grow with the number of batches (a float32 running sum, as the
// reference keeps, loses about log2(batches) bits once the sum dwarfs each batch), and the result
// does not depend on how the tokens were split into batches beyond the float32 error of one
// chunk. Two accumulators fed on two threads or shards give, merged, the one-accumulator sum
// (merge adds the float64 sums and the counts).
//
//   auto acc = lowbit::hessian_accumulator::create(in);          // result<hessian_accumulator>
//   for (batch : calibration) s = acc.value.add(batch.data(), batch_tokens, in);
//   std::vector<float> h(in * in);
//   s = acc.value.hessian(lowbit::span<float>(h));               // (2 / n) sum x^T x, symmetric
//
// Never throws; storage is allocated with new (std::nothrow) (errc::out_of_memory); move-only.
#ifndef LOWBIT_TRANSFORMS_HESSIAN_HPP
#define LOWBIT_TRANSFORMS_HESSIAN_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../core/checks.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../linalg/exec.hpp"
#include "../linalg/gemm.hpp"
#include "../schemes/layouts/bitstream.hpp"

namespace lowbit {

// The largest number of rows one float32 syrk sums before the float64 sum takes it over.
inline constexpr std::size_t hessian_chunk_tokens = 2048;

class hessian_accumulator {
 public:
  hessian_accumulator() = default;
  hessian_accumulator(hessian_accumulator&&) noexcept = default;
  hessian_accumulator& operator=(hessian_accumulator&&) noexcept = default;
  hessian_accumulator(const hessian_accumulator&) = delete;
  hessian_accumulator& operator=(const hessian_accumulator&) = delete;

  // An empty accumulator for rows of `features` values (the layer's `in`). Errors: features 0 or
  // features^2 doubles beyond what an object can hold -> bad_argument; out_of_memory.
  [[nodiscard]] static result<hessian_accumulator> create(std::size_t features) noexcept {
    result<hessian_accumulator> r;
    std::size_t n2 = 0;
    if (features == 0 || !detail::checked_mul(features, features, &n2) ||
        n2 > static_cast<std::size_t>(-1) / sizeof(double)) {
      r.status = errc::bad_argument;
      return r;
    }
    hessian_accumulator& a = r.value;
    a.sum_.reset(new (std::nothrow) double[n2]());
    if (!a.sum_) {
      r.status = errc::out_of_memory;
      return r;
    }
    a.features_ = features;
    return r;
  }

  std::size_t features() const noexcept { return features_; }
  // Rows added so far (over every add and merge).
  std::uint64_t tokens() const noexcept { return tokens_; }

  // Adds the rows of x [tokens, features] (row-major, float32). Errors, in order: features not
  // this accumulator's -> size_mismatch (an empty, moved-from accumulator: bad_argument); the
  // rows' size overflowing -> bad_argument; tokens 0: ok, nothing added; x null -> bad_argument;
  // misaligned; a NaN or Inf anywhere in x -> non_finite_input with the accumulator unchanged
  // (the batch is scanned before anything is added); out_of_memory (the float32 work block,
  // allocated on the first add; unchanged).
  [[nodiscard]] status add(const float* x, std::size_t tokens, std::size_t features,
                           const linalg_exec& exec = {}) noexcept {
    return add_rows(x, tokens, features, exec);
  }
  // The same for bfloat16 rows (each decoded exactly to float32).
  [[nodiscard]] status add(const bfloat16* x, std::size_t tokens, std::size_t features,
                           const linalg_exec& exec = {}) noexcept {
    return add_rows(x, tokens, features, exec);
  }
  // Span forms: x holds exactly tokens * features() values, tokens = x.size() / features()
  // (a size that is not a multiple -> size_mismatch).
  [[nodiscard]] status add(span<const float> x, const linalg_exec& exec = {}) noexcept {
    return add_span(x, exec);
  }
  [[nodiscard]] status add(span<const bfloat16> x, const linalg_exec& exec = {}) noexcept {
    return add_span(x, exec);
  }

  // Adds other's sum and count into this one (other unchanged): the result of one accumulator fed
  // both streams, up to the float64 rounding of one addition per element. Errors: a different
  // feature count (or an empty accumulator on either side) -> size_mismatch.
  [[nodiscard]] status merge(const hessian_accumulator& other) noexcept {
    if (features_ == 0 || other.features_ != features_ || &other == this) return errc::size_mismatch;
    const std::size_t n = features_;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) sum_[i * n + j] += other.sum_[i * n + j];
    tokens_ += other.tokens_;
    return status{};
  }

  // Writes H = (2 / tokens()) sum x^T x, features x features, both triangles (exactly
  // symmetric), rounded once from float64 to float32. Errors: h.size() != features()^2 ->
  // size_mismatch; no token added -> empty_input; misaligned.
  [[nodiscard]] status hessian(span<float> h) const noexcept { return write(h); }
  // The same in float64.
  [[nodiscard]] status hessian(span<double> h) const noexcept { return write(h); }

  // Forgets every row (keeps the storage).
  void reset() noexcept {
    for (std::size_t i = 0; i < features_ * features_; ++i) sum_[i] = 0.0;
    tokens_ = 0;
  }

 private:
  template <class T>
  status add_span(span<const T> x, const linalg_exec& exec) noexcept {
    if (features_ == 0) return errc::bad_argument;
    if (x.size() % features_ != 0) return errc::size_mismatch;
    return add_rows(x.data(), x.size() / features_, features_, exec);
  }

  template <class T>
  status add_rows(const T* x, std::size_t tokens, std::size_t features, const linalg_exec& exec) noexcept {
    if (features_ == 0) return errc::bad_argument;
    if (features != features_) return errc::size_mismatch;
    std::size_t n = 0;
    if (status s = detail::checked_shape(tokens, features, sizeof(float), &n); !s) return s;
    if (n == 0) return status{};
    if (status s = detail::check_buffers({detail::buffer_of(x, n)}, {}); !s) return s;
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(static_cast<float>(x[i]))) return errc::non_finite_input;
    const std::size_t f = features_;
    if (!work_) {
      work_.reset(new (std::nothrow) float[f * f]);
      if (!work_) return errc::out_of_memory;
    }
    std::unique_ptr<float[]> rows;  // bfloat16: one chunk decoded to float32
    constexpr bool convert = !std::is_same<T, float>::value;
    if (convert) {
      const std::size_t chunk = tokens < hessian_chunk_tokens ? tokens : hessian_chunk_tokens;
      rows.reset(new (std::nothrow) float[chunk * f]);
      if (!rows) return errc::out_of_memory;
    }
    for (std::size_t t0 = 0; t0 < tokens; t0 += hessian_chunk_tokens) {
      const std::size_t nt = tokens - t0 < hessian_chunk_tokens ? tokens - t0 : hessian_chunk_tokens;
      const float* a = nullptr;
      if (convert) {
        for (std::size_t i = 0; i < nt * f; ++i) rows[i] = static_cast<float>(x[t0 * f + i]);
        a = rows.get();
      } else {
        a = reinterpret_cast<const float*>(x) + t0 * f;
      }
      syrk_options o;
      o.beta = 0.0f;  // the chunk alone
      if (status s = syrk(a, f, nt, f, o, work_.get(), f, exec); !s) return s;  // out_of_memory only
      for (std::size_t i = 0; i < f; ++i)
        for (std::size_t j = i; j < f; ++j) sum_[i * f + j] += static_cast<double>(work_[i * f + j]);
    }
    tokens_ += tokens;
    return status{};
  }

  template <class T>
  status write(span<T> h) const noexcept {
    if (features_ == 0) return errc::bad_argument;
    const std::size_t f = features_;
    if (h.size() != f * f) return errc::size_mismatch;
    if (tokens_ == 0) return errc::empty_input;
    if (status s = detail::check_buffers({}, {detail::buffer_of(h.data(), h.size())}); !s) return s;
    const double scale = 2.0 / static_cast<double>(tokens_);
    for (std::size_t i = 0; i < f; ++i)
      for (std::size_t j = i; j < f; ++j) {
        const T v = static_cast<T>(scale * sum_[i * f + j]);
        h[i * f + j] = v;
        h[j * f + i] = v;
      }
    return status{};
  }

  std::size_t features_ = 0;
  std::uint64_t tokens_ = 0;
  std::unique_ptr<double[]> sum_;   // upper triangle of sum x^T x, features x features
  std::unique_ptr<float[]> work_;   // one chunk's float32 X^T X
};

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_HESSIAN_HPP
