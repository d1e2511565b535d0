// lowbit tool: the quantization schemes `report` measures and `quantize` writes, in one list.
//
// A scheme is a name, a description, its byte accounting (storage), a round trip (the values its
// codes decode to, for the error metrics) and its checkpoint layout: an io::checkpoint_options,
// so that `quantize` writes through io::quantize_linear (include/lowbit/io/checkpoint.hpp, the one
// definition of the engines' conventions, docs/checkpoints.md) and the tensors are named
// "<prefix>.<name>", prefix being the weight's name without its trailing ".weight"
// ("model.q_proj.weight" -> "model.q_proj.qweight"). Every call is lowbit's.
//
//   name            scheme                                           checkpoint format
//   int8            INT8 symmetric per output channel, fp32 scales   int8_per_channel: weight I8, weight_scale F32 [out, 1]
//   int4-g128       INT4 symmetric, groups of 128, fp16 (GPTQ grid)  gptq (v1): qweight, qzeros, scales, g_idx
//   int4-g128-asym  INT4 affine, groups of 128, fp16 (AWQ)           awq (GEMM): qweight, qzeros, scales
//   int4-g32        INT4 symmetric, groups of 32, fp16               gptq, group 32
//   int4-channel    INT4 symmetric per output channel, fp16          gptq, group_size 0 (one group per row)
//   fp8             FP8 E4M3 with one fp32 scale per tensor          fp8_per_tensor: weight F8_E4M3, weight_scale F32 [1]
//   fp8-channel     FP8 E4M3 with one fp32 scale per output channel  fp8_per_channel: weight_scale F32 [out, 1]
//   mxfp4           OCP MXFP4: E2M1, E8M0 scale per 32               mxfp4: weight_packed U8, weight_scale U8 (E8M0)
//   nvfp4           NVFP4: E2M1, E4M3 scale per 16, fp32 per tensor  nvfp4: weight_packed, weight_scale, weight_global_scale
#ifndef LOWBIT_TOOL_SCHEMES_HPP
#define LOWBIT_TOOL_SCHEMES_HPP

#include <lowbit/io/checkpoint.hpp>
#include <lowbit/io/tensor.hpp>
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit_tool {

namespace io = lowbit::io;

struct scheme {
  const char* name;
  const char* description;
  const char* layout;  // what quantize writes
  std::size_t block;   // cols must be a multiple of it (0: any cols)
  // What a checkpoint stores for [rows, cols]; fails when the shape does not fit.
  lowbit::result<lowbit::storage> (*storage)(std::size_t rows, std::size_t cols);
  // dst = the values src's codes decode to.
  lowbit::status (*round_trip)(const float* src, std::size_t rows, std::size_t cols, float* dst);
  // The checkpoint layout quantize writes (io::quantize_linear's options).
  io::checkpoint_options (*checkpoint)();
};

namespace schemes_detail {

using lowbit::result;
using lowbit::status;
using lowbit::storage;
using io::checkpoint_format;

inline io::checkpoint_options ckpt(checkpoint_format f, std::size_t group = 128, bool symmetric = true) {
  io::checkpoint_options o;
  o.format = f;
  o.bits = 4;
  o.group_size = group;
  o.symmetric = symmetric;
  o.ignore.clear();
  return o;
}
inline io::checkpoint_options int8_ckpt() { return ckpt(checkpoint_format::int8_per_channel); }
inline io::checkpoint_options gptq_g128() { return ckpt(checkpoint_format::gptq, 128); }
inline io::checkpoint_options gptq_g32() { return ckpt(checkpoint_format::gptq, 32); }
inline io::checkpoint_options gptq_channel() { return ckpt(checkpoint_format::gptq, 0); }
inline io::checkpoint_options awq_g128() { return ckpt(checkpoint_format::awq, 128, false); }
inline io::checkpoint_options fp8_tensor_ckpt() { return ckpt(checkpoint_format::fp8_per_tensor); }
inline io::checkpoint_options fp8_channel_ckpt() { return ckpt(checkpoint_format::fp8_per_channel); }
inline io::checkpoint_options mxfp4_ckpt() { return ckpt(checkpoint_format::mxfp4); }
inline io::checkpoint_options nvfp4_ckpt() { return ckpt(checkpoint_format::nvfp4); }

// The integer grid of a checkpoint format (the one quantize_linear quantizes on).
template <io::checkpoint_options (*C)()>
inline lowbit::int_params int_params() {
  return io::checkpoint_int_params(C()).value;
}
template <io::checkpoint_options (*C)()>
inline result<storage> int_storage(std::size_t rows, std::size_t cols) {
  return lowbit::int_storage_for(int_params<C>(), rows, cols);
}
template <io::checkpoint_options (*C)()>
inline status int_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  return lowbit::quantize_dequantize_int(src, rows, cols, int_params<C>(), dst);
}

template <bool PerChannel>
inline result<storage> fp8_storage(std::size_t rows, std::size_t cols) {
  return lowbit::fp8_storage_for(PerChannel ? lowbit::fp8_presets::per_channel() : lowbit::fp8_presets::per_tensor(),
                                 rows, cols);
}
inline result<storage> mxfp4_storage(std::size_t rows, std::size_t cols) {
  return lowbit::mx_storage_for<lowbit::mxfp4_e2m1>(rows, cols, lowbit::mx_presets::ocp());
}
inline result<storage> nvfp4_storage(std::size_t rows, std::size_t cols) { return lowbit::nvfp4_storage_for(rows, cols); }

// The float formats' round trip: the checkpoint's tensors and the weight they decode to.
template <io::checkpoint_options (*C)()>
inline status checkpoint_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  const io::checkpoint_options o = C();
  io::io_result<std::vector<io::tensor_data>> t = io::quantize_linear("w", src, rows, cols, o);
  if (!t.ok()) {
    for (std::size_t i = 0; i < rows * cols; ++i)
      if (!std::isfinite(src[i])) return lowbit::errc::non_finite_input;
    return lowbit::errc::bad_argument;
  }
  std::vector<io::tensor_view> views;
  for (const io::tensor_data& d : t.value) views.push_back(d.view());
  std::size_t r = 0, c = 0;
  io::io_result<std::vector<float>> w = io::dequantize_linear("w", views, o, r, c);
  if (!w.ok() || w.value.size() != rows * cols) return lowbit::errc::bad_argument;
  std::copy(w.value.begin(), w.value.end(), dst);
  return status{};
}

}  // namespace schemes_detail

// Every scheme, in the default order of `lowbit report`.
inline const std::vector<scheme>& all_schemes() {
  using namespace schemes_detail;
  static const std::vector<scheme> all = {
      {"int8", "INT8 symmetric per output channel, fp32 scales (SmoothQuant W8 weights)",
       "compressed-tensors int-quantized: weight I8 [out, in], weight_scale F32 [out, 1]", 0, int_storage<int8_ckpt>,
       int_round_trip<int8_ckpt>, int8_ckpt},
      {"int4-g128", "INT4 symmetric (GPTQ grid), groups of 128 along in, fp16 scales",
       "GPTQ v1: qweight I32 [in/8, out], qzeros I32 [in/128, out/8], scales F16 [in/128, out], g_idx I32 [in]", 128,
       int_storage<gptq_g128>, int_round_trip<gptq_g128>, gptq_g128},
      {"int4-g128-asym", "INT4 affine with integer zero-points (AWQ), groups of 128, fp16 scales",
       "AWQ GEMM: qweight I32 [in, out/8], qzeros I32 [in/128, out/8], scales F16 [in/128, out]", 128,
       int_storage<awq_g128>, int_round_trip<awq_g128>, awq_g128},
      {"int4-g32", "INT4 symmetric (GPTQ grid), groups of 32, fp16 scales",
       "GPTQ v1: qweight I32 [in/8, out], qzeros I32 [in/32, out/8], scales F16 [in/32, out], g_idx I32 [in]", 32,
       int_storage<gptq_g32>, int_round_trip<gptq_g32>, gptq_g32},
      {"int4-channel", "INT4 symmetric (GPTQ grid) per output channel, fp16 scales",
       "GPTQ v1 with one group per row: qweight, qzeros I32 [1, out/8], scales F16 [1, out], g_idx (all 0)", 0,
       int_storage<gptq_channel>, int_round_trip<gptq_channel>, gptq_channel},
      {"fp8", "FP8 E4M3 with one fp32 scale per tensor (amax / 448)",
       "compressed-tensors FP8 tensor: weight F8_E4M3 [out, in], weight_scale F32 [1]", 0, fp8_storage<false>,
       checkpoint_round_trip<fp8_tensor_ckpt>, fp8_tensor_ckpt},
      {"fp8-channel", "FP8 E4M3 with one fp32 scale per output channel",
       "compressed-tensors FP8 channel: weight F8_E4M3 [out, in], weight_scale F32 [out, 1]", 0, fp8_storage<true>,
       checkpoint_round_trip<fp8_channel_ckpt>, fp8_channel_ckpt},
      {"mxfp4", "OCP MXFP4: E2M1 elements, one E8M0 scale per 32 (floor rule)",
       "compressed-tensors MXFP4: weight_packed U8 [out, in/2] (low nibble first), weight_scale U8 (E8M0 codes) [out, in/32]",
       32, mxfp4_storage, checkpoint_round_trip<mxfp4_ckpt>, mxfp4_ckpt},
      {"nvfp4", "NVFP4 two-level: E2M1, one E4M3 scale per 16, fp32 tensor scale from amax",
       "compressed-tensors NVFP4: weight_packed U8 [out, in/2], weight_scale F8_E4M3 [out, in/16], "
       "weight_global_scale F32 [1] (2688 / amax)",
       16, nvfp4_storage, checkpoint_round_trip<nvfp4_ckpt>, nvfp4_ckpt},
  };
  return all;
}

inline const scheme* find_scheme(const std::string& name) {
  for (const scheme& s : all_schemes())
    if (name == s.name) return &s;
  return nullptr;
}

inline std::string scheme_names() {
  std::string s;
  for (const scheme& sc : all_schemes()) s += fmt::format("{}{}", s.empty() ? "" : ", ", sc.name);
  return s;
}

// Why `s` does not apply to a [rows, cols] matrix, or "" when it does.
inline std::string scheme_limit(const scheme& s, std::size_t rows, std::size_t cols) {
  if (s.block != 0 && cols % s.block != 0) return fmt::format("cols {} not a multiple of {}", cols, s.block);
  const lowbit::result<lowbit::storage> st = s.storage(rows, cols);
  if (!st.ok()) return st.status.message();
  return "";
}

// Why quantize cannot export a [rows, cols] weight with `s`, or "" when it can (the scheme's own
// limits, then the checkpoint layout's: io::linear_layout, without its prefix).
inline std::string export_limit(const scheme& s, std::size_t rows, std::size_t cols) {
  std::string why = scheme_limit(s, rows, cols);
  if (!why.empty()) return why;
  const io::io_result<std::vector<io::tensor_view>> l = io::linear_layout("w", rows, cols, s.checkpoint());
  return l.ok() ? std::string() : l.error.substr(3);
}

// Floating-point element types: the tensors report and quantize read as weights.
inline bool is_float_type(io::dtype t) {
  switch (t) {
    case io::dtype::f64:
    case io::dtype::f32:
    case io::dtype::f16:
    case io::dtype::bf16:
    case io::dtype::f8_e4m3:
    case io::dtype::f8_e5m2: return true;
    default: return false;
  }
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_SCHEMES_HPP
