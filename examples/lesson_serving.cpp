// lesson_serving: the serving arithmetic of lesson 003 — H100's dense peaks, the KV cache of a
// 128K-token sequence and how many fit on an 80 GB GPU, and the decode time of an 8B model in
// BF16 and in W4A16 (paragraphs 1 and 4).
//
// The arithmetic is lowbit's (estimates.hpp): tensor_peak_tflops, kv_cache_bytes,
// sequences_that_fit, weight_read_seconds, compute_bound_batch.
//
//   lesson_serving [--check]
#include <lowbit/lowbit.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "lesson/report.hpp"

namespace {

template <class T>
T value_of(const lowbit::result<T>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "estimate: %s\n", r.status.message());
    std::exit(2);
  }
  return r.value;
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_serving: peaks, KV cache and decode time of the teaching model",
                   "003 paragraphs 1 and 4");
  if (!r.parse(argc, argv)) return 2;

  r.section("H100 SXM5 dense Tensor Core peaks: 132 SMs x FLOPs per clock per SM x 1.830 GHz");
  const double bf16_peak = value_of(lowbit::tensor_peak_tflops(132, 4096, 1.830));
  r.exact("BF16/FP16 peak, TFLOP/s (4096 per clock per SM)", bf16_peak, 989.4, 1);
  r.exact("FP8 peak, TFLOP/s (8192 per clock per SM)", value_of(lowbit::tensor_peak_tflops(132, 8192, 1.830)),
          1978.9, 1);

  r.section("KV cache of one 128K-token sequence, Llama-3-8B shapes (32 layers, 8 KV heads, dim 128)");
  const lowbit::kv_cache_shape llama3_8b{32, 8, 128};
  const std::uint64_t bf16_kv = value_of(lowbit::kv_cache_bytes(llama3_8b, 128 * 1024, 16));
  const std::uint64_t fp8_kv = value_of(lowbit::kv_cache_bytes(llama3_8b, 128 * 1024, 8));
  r.exact("BF16 KV cache, GiB", static_cast<double>(bf16_kv) / (1u << 30), 16, 0);
  r.exact("BF16 KV cache, bytes (16 GiB exactly)", static_cast<long long>(bf16_kv), 16LL << 30);

  r.section("Sequences that fit on an 80 GB GPU beside 16 GB of BF16 weights");
  r.note("With vLLM's default reserve, gpu_memory_utilization = 0.9 (72 GB usable). Without it FP8");
  r.note("would fit 7, not 6: the lesson's 3 -> 6 needs the reserve.");
  const double gpu = 80e9, weights = 16e9;
  r.exact("BF16 KV: sequences", static_cast<long long>(value_of(
                                    lowbit::sequences_that_fit(gpu, 0.9, weights, static_cast<double>(bf16_kv)))), 3);
  r.exact("FP8 KV: sequences", static_cast<long long>(value_of(
                                   lowbit::sequences_that_fit(gpu, 0.9, weights, static_cast<double>(fp8_kv)))), 6);

  r.section("Decode of the 8B teaching model at batch 1 on H100 (3,352 GB/s): weight bytes / bandwidth");
  const double params = 8e9, bandwidth = 3352;
  const double bf16_bytes = 2 * params;  // 16 GB
  const double w4_bytes = 4.87e9;        // the lesson's figure (output layer kept in BF16): an input
  const double t_bf16 = value_of(lowbit::weight_read_seconds(bf16_bytes, bandwidth));
  const double t_w4 = value_of(lowbit::weight_read_seconds(w4_bytes, bandwidth));
  r.exact("BF16 weights, GB", bf16_bytes / 1e9, 16, 0);
  r.exact("BF16 step, ms", t_bf16 * 1e3, 4.77, 2);
  r.exact("W4A16 g128 step, ms", t_w4 * 1e3, 1.45, 2);
  r.exact("speedup (x)", t_bf16 / t_w4, 3.29, 2);
  // Compute time B x 2N / peak reaches the read time at B = peak x bytes per weight / (2 x bandwidth).
  const double b = value_of(lowbit::compute_bound_batch(w4_bytes / params, bf16_peak, bandwidth));
  r.within("W4A16 compute-bound from B", b, 89.66, 0.2, 2, "89.66 divides by the time rounded to 1.45 ms");
  r.exact("W4A16 compute-bound from B, about", b, 90, 0);
  return r.finish();
}
