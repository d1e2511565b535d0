// lowbit: streaming statistics of a linear layer's input activations, the calibration data of
// SmoothQuant (transforms/smoothquant.hpp: per-channel max |x|) and AWQ (transforms/awq.hpp:
// per-channel mean |x|), plus a bounded, seeded reservoir of whole rows for their searches.
// docs/transforms.md section 5.
//
// Fed batch by batch with activation rows [tokens, features] (float32 or bfloat16), like the
// Hessian accumulator (transforms/hessian.hpp):
//
//   auto st = lowbit::activation_stats::create(in);               // result<activation_stats>
//   for (batch : calibration) s = st.value.add(batch.data(), batch_tokens, in);
//   std::vector<float> amax(in), mean(in);
//   s = st.value.max_abs(lowbit::span<float>(amax));              // max_t |x_tj|
//   s = st.value.mean_abs(lowbit::span<float>(mean));             // sum_t |x_tj| / tokens
//   st.value.reservoir();                                          // [reservoir_rows(), in] rows
//
// - max |x| is exact (a maximum); mean |x| is summed in float64 and divided once, so it does not
//   depend on how the rows were split into batches beyond float64 rounding.
// - The reservoir keeps a uniform sample of at most `reservoir_capacity` rows of everything added
//   (Vitter's algorithm R: row t, counted from 0 over every add, fills slot t while t < capacity,
//   then replaces slot j = r mod (t + 1) when j < capacity, r the next value of a splitmix64
//   stream started at `seed`). It depends on the rows and their order, not on the batch
//   boundaries. merge() combines two reservoirs into a uniform sample of the union (each slot is
//   drawn from one side with probability proportional to the rows that side has seen, without
//   replacement), deterministic given both seeds.
// - A batch with a NaN or Inf is rejected whole (non_finite_input), the accumulator unchanged;
//   the index of the first row holding one (counted from 0 within the batch) is written to the
//   optional `bad_row` out-parameter.
//
// Never throws; storage is allocated with new (std::nothrow) (errc::out_of_memory); move-only.
#ifndef LOWBIT_TRANSFORMS_ACTIVATION_STATS_HPP
#define LOWBIT_TRANSFORMS_ACTIVATION_STATS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "../core/checks.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/types.hpp"
#include "../schemes/layouts/bitstream.hpp"

namespace lowbit {

// The default reservoir: 512 rows, the number of calibration tokens llm-awq's clip search
// subsamples to (n_sample_token = 512).
struct activation_stats_options {
  std::size_t reservoir_capacity = 512;  // rows kept for the searches; 0: no reservoir
  std::uint64_t seed = 42;               // the reservoir's random stream
};

class activation_stats {
 public:
  activation_stats() = default;
  activation_stats(activation_stats&&) noexcept = default;
  activation_stats& operator=(activation_stats&&) noexcept = default;
  activation_stats(const activation_stats&) = delete;
  activation_stats& operator=(const activation_stats&) = delete;

  // Empty statistics for rows of `features` values. Errors: features 0, or a reservoir of
  // capacity * features floats beyond what an object can hold -> bad_argument; out_of_memory.
  [[nodiscard]] static result<activation_stats> create(std::size_t features,
                                                       const activation_stats_options& o = {}) noexcept {
    result<activation_stats> r;
    std::size_t nres = 0;
    if (features == 0 || !detail::checked_mul(o.reservoir_capacity, features, &nres) ||
        nres > static_cast<std::size_t>(-1) / sizeof(double)) {
      r.status = errc::bad_argument;
      return r;
    }
    activation_stats& a = r.value;
    a.max_.reset(new (std::nothrow) float[features]());
    a.sum_.reset(new (std::nothrow) double[features]());
    if (nres != 0) a.rows_.reset(new (std::nothrow) float[nres]);
    if (!a.max_ || !a.sum_ || (nres != 0 && !a.rows_)) {
      r.value = activation_stats{};
      r.status = errc::out_of_memory;
      return r;
    }
    a.features_ = features;
    a.capacity_ = o.reservoir_capacity;
    a.seed_ = o.seed;
    a.rng_ = o.seed;
    return r;
  }

  std::size_t features() const noexcept { return features_; }
  // Rows added so far (over every add and merge).
  std::uint64_t tokens() const noexcept { return tokens_; }
  std::size_t reservoir_capacity() const noexcept { return capacity_; }
  // Rows the reservoir holds: min(tokens(), capacity).
  std::size_t reservoir_rows() const noexcept { return held_; }
  // The reservoir, [reservoir_rows(), features()] row-major float32 (bfloat16 rows decoded).
  span<const float> reservoir() const noexcept { return {rows_.get(), held_ * features_}; }

  // Adds the rows of x [tokens, features] (row-major). Errors, in order: features not this
  // accumulator's -> size_mismatch (an empty, moved-from one: bad_argument); the rows' size
  // overflowing -> bad_argument; tokens 0: ok, nothing added; x null -> bad_argument; misaligned;
  // a NaN or Inf anywhere -> non_finite_input, the accumulator unchanged and, when bad_row is not
  // null, *bad_row = the first such row within the batch (*bad_row is written only then).
  [[nodiscard]] status add(const float* x, std::size_t tokens, std::size_t features,
                           std::size_t* bad_row = nullptr) noexcept {
    return add_rows(x, tokens, features, bad_row);
  }
  [[nodiscard]] status add(const bfloat16* x, std::size_t tokens, std::size_t features,
                           std::size_t* bad_row = nullptr) noexcept {
    return add_rows(x, tokens, features, bad_row);
  }
  // Span forms: tokens = x.size() / features() (not a multiple -> size_mismatch).
  [[nodiscard]] status add(span<const float> x, std::size_t* bad_row = nullptr) noexcept {
    return add_span(x, bad_row);
  }
  [[nodiscard]] status add(span<const bfloat16> x, std::size_t* bad_row = nullptr) noexcept {
    return add_span(x, bad_row);
  }

  // Adds other's statistics into this one (other unchanged): maxima, sums and counts exactly as
  // one accumulator fed both streams (the sums up to one float64 addition), the reservoir a
  // uniform sample of the union drawn with this accumulator's stream (see the header comment).
  // Errors: a different feature count or reservoir capacity, an empty accumulator on either side,
  // or other == *this -> size_mismatch; out_of_memory (unchanged).
  [[nodiscard]] status merge(const activation_stats& other) noexcept {
    if (features_ == 0 || other.features_ != features_ || other.capacity_ != capacity_ || &other == this)
      return errc::size_mismatch;
    const std::size_t f = features_;
    if (capacity_ != 0 && other.held_ != 0) {
      if (held_ == 0) {
        for (std::size_t i = 0; i < other.held_ * f; ++i) rows_[i] = other.rows_[i];
        held_ = other.held_;
      } else {
        // Each output slot from A (this) with probability (A's unseen rows) / (both sides' unseen
        // rows), the row a random one of that side's kept rows not drawn before.
        const std::size_t out = held_ + other.held_ < capacity_ ? held_ + other.held_ : capacity_;
        std::unique_ptr<float[]> merged(new (std::nothrow) float[out * f]);
        std::unique_ptr<std::size_t[]> ia(new (std::nothrow) std::size_t[held_]);
        std::unique_ptr<std::size_t[]> ib(new (std::nothrow) std::size_t[other.held_]);
        if (!merged || !ia || !ib) return errc::out_of_memory;
        for (std::size_t i = 0; i < held_; ++i) ia[i] = i;
        for (std::size_t i = 0; i < other.held_; ++i) ib[i] = i;
        std::uint64_t na = tokens_, nb = other.tokens_;
        std::size_t left_a = held_, left_b = other.held_;
        for (std::size_t slot = 0; slot < out; ++slot) {
          const bool from_a = left_b == 0 || (left_a != 0 && next_random() % (na + nb) < na);
          std::size_t* idx = from_a ? ia.get() : ib.get();
          std::size_t& left = from_a ? left_a : left_b;
          const std::size_t pick = static_cast<std::size_t>(next_random() % left);  // partial Fisher-Yates
          const std::size_t row = idx[pick];
          idx[pick] = idx[left - 1];
          --left;
          (from_a ? na : nb) -= 1;
          const float* src = (from_a ? rows_.get() : other.rows_.get()) + row * f;
          for (std::size_t j = 0; j < f; ++j) merged[slot * f + j] = src[j];
        }
        for (std::size_t i = 0; i < out * f; ++i) rows_[i] = merged[i];
        held_ = out;
      }
    }
    for (std::size_t j = 0; j < f; ++j) {
      if (other.max_[j] > max_[j]) max_[j] = other.max_[j];
      sum_[j] += other.sum_[j];
    }
    tokens_ += other.tokens_;
    return status{};
  }

  // max_t |x_tj| per channel j. Errors: amax.size() != features() -> size_mismatch; no token ->
  // empty_input; misaligned.
  [[nodiscard]] status max_abs(span<float> amax) const noexcept {
    if (status s = check_out(amax.data(), amax.size()); !s) return s;
    for (std::size_t j = 0; j < features_; ++j) amax[j] = max_[j];
    return status{};
  }
  // sum_t |x_tj| / tokens per channel j (float64 sum, rounded once). Errors: as max_abs.
  [[nodiscard]] status mean_abs(span<float> mean) const noexcept {
    if (status s = check_out(mean.data(), mean.size()); !s) return s;
    const double n = static_cast<double>(tokens_);
    for (std::size_t j = 0; j < features_; ++j) mean[j] = static_cast<float>(sum_[j] / n);
    return status{};
  }

  // Forgets every row and restarts the reservoir's stream at the seed (keeps the storage).
  void reset() noexcept {
    for (std::size_t j = 0; j < features_; ++j) {
      max_[j] = 0.0f;
      sum_[j] = 0.0;
    }
    tokens_ = 0;
    held_ = 0;
    rng_ = seed_;
  }

 private:
  // splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit stream, cheap and portable.
  std::uint64_t next_random() noexcept {
    std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  status check_out(const float* p, std::size_t n) const noexcept {
    if (features_ == 0) return errc::bad_argument;
    if (n != features_) return errc::size_mismatch;
    if (tokens_ == 0) return errc::empty_input;
    return detail::check_buffers({}, {detail::buffer_of(p, n)});
  }

  template <class T>
  status add_span(span<const T> x, std::size_t* bad_row) noexcept {
    if (features_ == 0) return errc::bad_argument;
    if (x.size() % features_ != 0) return errc::size_mismatch;
    return add_rows(x.data(), x.size() / features_, features_, bad_row);
  }

  template <class T>
  status add_rows(const T* x, std::size_t tokens, std::size_t features, std::size_t* bad_row) noexcept {
    if (features_ == 0) return errc::bad_argument;
    if (features != features_) return errc::size_mismatch;
    std::size_t n = 0;
    if (status s = detail::checked_shape(tokens, features, sizeof(float), &n); !s) return s;
    if (n == 0) return status{};
    if (status s = detail::check_buffers({detail::buffer_of(x, n)}, {}); !s) return s;
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(static_cast<float>(x[i]))) {
        if (bad_row != nullptr) *bad_row = i / features;
        return errc::non_finite_input;
      }
    const std::size_t f = features_;
    for (std::size_t t = 0; t < tokens; ++t) {
      const T* row = x + t * f;
      for (std::size_t j = 0; j < f; ++j) {
        const float a = std::fabs(static_cast<float>(row[j]));
        if (a > max_[j]) max_[j] = a;
        sum_[j] += static_cast<double>(a);
      }
      if (capacity_ != 0) {  // algorithm R
        const std::uint64_t seen = tokens_ + t;
        std::size_t slot = capacity_;
        if (seen < capacity_) {
          slot = static_cast<std::size_t>(seen);
          held_ = slot + 1;
        } else {
          const std::uint64_t j = next_random() % (seen + 1);
          if (j < capacity_) slot = static_cast<std::size_t>(j);
        }
        if (slot < capacity_)
          for (std::size_t j = 0; j < f; ++j) rows_[slot * f + j] = static_cast<float>(row[j]);
      }
    }
    tokens_ += tokens;
    return status{};
  }

  std::size_t features_ = 0;
  std::size_t capacity_ = 0;
  std::size_t held_ = 0;
  std::uint64_t tokens_ = 0;
  std::uint64_t seed_ = 0;
  std::uint64_t rng_ = 0;
  std::unique_ptr<float[]> max_;   // max |x| per channel
  std::unique_ptr<double[]> sum_;  // sum |x| per channel
  std::unique_ptr<float[]> rows_;  // the reservoir, capacity x features
};

}  // namespace lowbit

#endif  // LOWBIT_TRANSFORMS_ACTIVATION_STATS_HPP
