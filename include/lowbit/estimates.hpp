// lowbit: the back-of-the-envelope arithmetic that decides which format to try first. A
// weight-traffic roofline of one decode step, the KV cache's size and how many sequences fit
// beside the weights, and the confidence interval of a paired evaluation (the same questions
// answered before and after quantizing). Each is a formula from the lesson (docs/lesson.md), with
// its units in the names, so that the examples and the `lowbit` tool compute them one way.
//
// Units: bandwidth in GB/s (10^9 bytes per second, as spec sheets state it), peaks in TFLOP/s
// (10^12), sizes in bytes, time in seconds, intensities in FLOP per byte.
//
// Errors (docs/api.md section 4): every argument must be finite and positive where a ratio needs
// it (bandwidth, peak, bytes per parameter, the batch), else bad_argument; a byte count that does
// not fit 64 bits is bad_argument too. Nothing here allocates, throws or touches memory it was not
// given; the functions are host code.
#ifndef LOWBIT_ESTIMATES_HPP
#define LOWBIT_ESTIMATES_HPP

#include <cmath>
#include <cstdint>

#include "core/status.hpp"

namespace lowbit {

namespace detail {

inline bool positive_finite(double v) noexcept { return std::isfinite(v) && v > 0.0; }

template <class T>
inline result<T> bad_estimate() noexcept {
  return {T{}, status(errc::bad_argument)};
}

}  // namespace detail

// ----- roofline of one decode step (weights only) -------------------------------------------------
//
// A decode step at batch B reads every weight once and does 2 P B FLOPs. Its intensity is
// 2 B / bytes_per_param FLOP/B; it is compute-bound when that reaches the ridge point
// peak / bandwidth. bytes_per_param is storage::total_bytes() / storage::elements of the format
// (0.515625 for INT4 G=128 with fp16 scales, 1 for FP8 or INT8, 2 for BF16).

// peak / bandwidth: the intensity at which a kernel stops being bandwidth-bound.
// A100: 312 / 2039 -> 153.0 FLOP/B (FP16), 624 / 2039 -> 306.0 (INT8).
[[nodiscard]] inline result<double> ridge_point(double peak_tflops, double bandwidth_gb_s) noexcept {
  if (!detail::positive_finite(peak_tflops) || !detail::positive_finite(bandwidth_gb_s)) {
    return detail::bad_estimate<double>();
  }
  return {peak_tflops * 1e12 / (bandwidth_gb_s * 1e9), status()};
}

// 2 B / bytes_per_param: FLOPs per byte of weights read at batch B (W4A16 G=128: 3.88 B).
[[nodiscard]] inline result<double> decode_intensity(double batch, double bytes_per_param) noexcept {
  if (!detail::positive_finite(batch) || !detail::positive_finite(bytes_per_param)) {
    return detail::bad_estimate<double>();
  }
  return {2.0 * batch / bytes_per_param, status()};
}

// The batch at which a format reading bytes_per_param per weight reaches the compute peak:
// 2 B / bytes_per_param = peak / bandwidth. W4A16 G=128 on A100 at the FP16 peak: 39.4. With
// bytes_per_param = 1 and the 16-bit peak it is also the crossover B* of the lesson, where an
// 8-bit format still bound by bandwidth catches up with the 16-bit ceiling: 76.5 on A100.
[[nodiscard]] inline result<double> compute_bound_batch(double bytes_per_param, double peak_tflops,
                                                        double bandwidth_gb_s) noexcept {
  const result<double> ridge = ridge_point(peak_tflops, bandwidth_gb_s);
  if (!ridge.ok() || !detail::positive_finite(bytes_per_param)) return detail::bad_estimate<double>();
  return {ridge.value * bytes_per_param / 2.0, status()};
}

// bytes / bandwidth: the time to read the weights once (BF16 8B model, 16 GB at 3352 GB/s:
// 4.77 ms).
[[nodiscard]] inline result<double> weight_read_seconds(double bytes, double bandwidth_gb_s) noexcept {
  if (!std::isfinite(bytes) || bytes < 0.0 || !detail::positive_finite(bandwidth_gb_s)) {
    return detail::bad_estimate<double>();
  }
  return {bytes / (bandwidth_gb_s * 1e9), status()};
}

// A dense Tensor Core peak from the chip's organisation: SMs x FLOPs per clock per SM x clock.
// H100 SXM5: 132 x 4096 (FP16, dense) x 1.830 GHz = 989.4 TFLOP/s; 8192 for FP8: 1978.9.
[[nodiscard]] inline result<double> tensor_peak_tflops(double sms, double flops_per_clock_per_sm,
                                                       double clock_ghz) noexcept {
  if (!detail::positive_finite(sms) || !detail::positive_finite(flops_per_clock_per_sm) ||
      !detail::positive_finite(clock_ghz)) {
    return detail::bad_estimate<double>();
  }
  return {sms * flops_per_clock_per_sm * clock_ghz * 1e9 / 1e12, status()};
}

// ----- KV cache -----------------------------------------------------------------------------------

// The attention shape that sets the cache's size (grouped-query attention: kv_heads, not the
// query heads). Llama-3-8B: 32 layers, 8 KV heads, head dimension 128.
struct kv_cache_shape {
  std::uint64_t layers = 0;
  std::uint64_t kv_heads = 0;
  std::uint64_t head_dim = 0;
};

// Bytes of keys and values for `tokens` positions: 2 x layers x kv_heads x head_dim x tokens x
// bits / 8, rounded up to a byte (bits 16 for BF16, 8 for FP8, 4 for KV4 without its scales).
// Llama-3-8B at 131072 tokens in BF16: 17,179,869,184 bytes = 16 GiB. A zero dimension or token
// count gives 0; bits must be 1..64 and the product must fit 64 bits (bad_argument otherwise).
[[nodiscard]] inline result<std::uint64_t> kv_cache_bytes(const kv_cache_shape& shape, std::uint64_t tokens,
                                                          unsigned bits_per_element) noexcept {
  if (bits_per_element == 0 || bits_per_element > 64) return detail::bad_estimate<std::uint64_t>();
  const std::uint64_t factors[] = {2, shape.layers, shape.kv_heads, shape.head_dim, tokens, bits_per_element};
  std::uint64_t bits = 1;
  for (const std::uint64_t f : factors) {
    if (f == 0) return {0, status()};
    if (bits > UINT64_MAX / f) return detail::bad_estimate<std::uint64_t>();
    bits *= f;
  }
  return {bits / 8 + (bits % 8 != 0 ? 1 : 0), status()};
}

// How many sequences of `bytes_per_sequence` fit in `memory_bytes x utilization` beside
// `weight_bytes`: floor((memory x utilization - weights) / per sequence), 0 when the weights
// alone do not fit. Engines keep a reserve (vLLM's gpu_memory_utilization, 0.9 by default) for
// activations and the runtime. 80 GB x 0.9 - 16 GB beside a 16 GiB BF16 sequence: 3; in FP8: 6.
[[nodiscard]] inline result<std::uint64_t> sequences_that_fit(double memory_bytes, double utilization,
                                                              double weight_bytes,
                                                              double bytes_per_sequence) noexcept {
  if (!detail::positive_finite(memory_bytes) || !detail::positive_finite(utilization) || utilization > 1.0 ||
      !std::isfinite(weight_bytes) || weight_bytes < 0.0 || !detail::positive_finite(bytes_per_sequence)) {
    return detail::bad_estimate<std::uint64_t>();
  }
  const double room = memory_bytes * utilization - weight_bytes;
  if (room <= 0.0) return {0, status()};
  return {static_cast<std::uint64_t>(std::floor(room / bytes_per_sequence)), status()};
}

// ----- paired evaluation --------------------------------------------------------------------------
//
// Two models answer the same n questions. A question whose correctness changed is a flip: a gain
// (wrong before, right after) or a loss. The accuracy change is (gains - losses) / n, and its
// standard error comes from the per-question differences d_i in {-1, 0, +1}:
// var(d) = (gains + losses) / n - mean^2 (the normal approximation, population variance), so the
// interval is mean +- z sqrt(var / n). It is much narrower than comparing two independent
// accuracies, because most questions do not flip.

struct paired_counts {
  std::uint64_t items = 0;
  std::uint64_t gains = 0;
  std::uint64_t losses = 0;
};

// Gains and losses from the number of flips and the net change in points (percent of items):
// 1,000 items, 56 flips, net -0.4 points -> 26 gains, 30 losses. bad_argument unless the counts
// come out whole, non-negative and within the items.
[[nodiscard]] inline result<paired_counts> paired_counts_from_flips(std::uint64_t items, std::uint64_t flips,
                                                                   double net_points) noexcept {
  if (items == 0 || flips > items || !std::isfinite(net_points)) return detail::bad_estimate<paired_counts>();
  const double net = net_points * static_cast<double>(items) / 100.0;  // gains - losses
  const double rounded = std::round(net);
  if (std::fabs(net - rounded) > 1e-6 || std::fabs(rounded) > static_cast<double>(flips)) {
    return detail::bad_estimate<paired_counts>();
  }
  const auto difference = static_cast<std::int64_t>(rounded);
  if ((static_cast<std::int64_t>(flips) + difference) % 2 != 0) return detail::bad_estimate<paired_counts>();
  const auto gains = static_cast<std::uint64_t>((static_cast<std::int64_t>(flips) + difference) / 2);
  return {{items, gains, flips - gains}, status()};
}

// The two-sided normal z for 95 %.
inline constexpr double z_95 = 1.959963984540054;

struct interval {
  double low = 0.0;
  double high = 0.0;
};

// The confidence interval of the accuracy change, in points: 1,000 items, 26 gains, 30 losses ->
// [-1.866, +1.066]. bad_argument for no items, more flips than items, or z not positive.
[[nodiscard]] inline result<interval> paired_difference_interval(const paired_counts& c, double z = z_95) noexcept {
  if (c.items == 0 || c.gains > c.items || c.losses > c.items - c.gains || !detail::positive_finite(z)) {
    return detail::bad_estimate<interval>();
  }
  const double n = static_cast<double>(c.items);
  const double mean = (static_cast<double>(c.gains) - static_cast<double>(c.losses)) / n;
  const double variance = (static_cast<double>(c.gains) + static_cast<double>(c.losses)) / n - mean * mean;
  const double half = z * std::sqrt(variance / n);
  return {{100.0 * (mean - half), 100.0 * (mean + half)}, status()};
}

}  // namespace lowbit

#endif  // LOWBIT_ESTIMATES_HPP
