// lowbit tool: the quantization schemes `report` measures and `quantize` writes, in one list.
//
// A scheme is a name, a description, its byte accounting (storage), a round trip (the values its
// codes decode to, for the error metrics) and its checkpoint export: the tensors an engine loads
// for one [out, in] weight, named by suffixes appended to the weight's name without its trailing
// "weight" ("model.q_proj.weight" -> "model.q_proj.qweight"). Every call is lowbit's.
//
//   name            scheme                                           export (docs/tool.md)
//   int8            INT8 symmetric per output channel, fp32 scales   compressed-tensors int8: weight I8, weight_scale F32 [out, 1]
//   int4-g128       INT4 symmetric, groups of 128, fp16 (GPTQ grid)  GPTQ v1: qweight, qzeros, scales, g_idx
//   int4-g128-asym  INT4 affine, groups of 128, fp16 (AWQ)           AWQ GEMM: qweight, qzeros, scales
//   int4-g32        INT4 symmetric, groups of 32, fp16               GPTQ v1
//   int4-channel    INT4 symmetric per output channel, fp16          GPTQ v1 (one group per row)
//   fp8             FP8 E4M3 with one fp32 scale per tensor          compressed-tensors: weight F8_E4M3, weight_scale F32 [1]
//   fp8-channel     FP8 E4M3 with one fp32 scale per output channel  weight F8_E4M3, weight_scale F32 [out, 1]
//   mxfp4           OCP MXFP4: E2M1, E8M0 scale per 32               weight_packed U8 [out, in/2], weight_scale U8 (E8M0) [out, in/32]
//   nvfp4           NVFP4: E2M1, E4M3 scale per 16, fp32 per tensor  weight_packed U8, weight_scale F8_E4M3 [out, in/16], weight_global_scale F32 [1]
#ifndef LOWBIT_TOOL_SCHEMES_HPP
#define LOWBIT_TOOL_SCHEMES_HPP

#include <lowbit/io/tensor.hpp>
#include <lowbit/lowbit.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace lowbit_tool {

namespace io = lowbit::io;

// One tensor of a scheme's export: its name suffix, type, shape and (once produced) bytes.
struct out_tensor {
  std::string suffix;
  io::dtype type = io::dtype::f32;
  std::vector<std::uint64_t> shape;
  std::vector<unsigned char> bytes;

  std::size_t byte_size() const {
    std::uint64_t n = 0;
    return io::element_count(shape, n) ? static_cast<std::size_t>(n) * io::dtype_size(type) : 0;
  }
};

struct scheme {
  const char* name;
  const char* description;
  const char* layout;  // what quantize writes
  std::size_t block;   // cols must be a multiple of it (0: any cols)
  // What a checkpoint stores for [rows, cols]; fails when the shape does not fit.
  lowbit::result<lowbit::storage> (*storage)(std::size_t rows, std::size_t cols);
  // dst = the values src's codes decode to.
  lowbit::status (*round_trip)(const float* src, std::size_t rows, std::size_t cols, float* dst);
  // Why the export cannot hold [rows, cols] (beyond `block`), or "" when it can.
  std::string (*export_limit)(std::size_t rows, std::size_t cols);
  // The export's tensors for [rows, cols]: suffixes, types and shapes (bytes empty).
  std::vector<out_tensor> (*export_plan)(std::size_t rows, std::size_t cols);
  // Quantizes src into the tensors of export_plan (bytes filled) and dst (decoded values).
  lowbit::status (*export_tensors)(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                                   float* dst);
};

namespace schemes_detail {

using lowbit::result;
using lowbit::status;
using lowbit::storage;
using u64 = std::uint64_t;

inline u64 u(std::size_t v) { return static_cast<u64>(v); }

template <class T>
inline void put(out_tensor& t, const T* data, std::size_t n) {
  t.bytes.resize(n * sizeof(T));
  if (n != 0) std::memcpy(t.bytes.data(), data, n * sizeof(T));
}

// ----- integer schemes ---------------------------------------------------------------------------

inline lowbit::int_params int8_params() { return lowbit::int_presets::int8_per_channel(); }
inline lowbit::int_params int4_channel_params() {
  lowbit::int_params p = lowbit::int_presets::gptq(4, 128);
  p.granularity = lowbit::granularity::per_channel;
  p.group_size = 0;
  return p;
}

template <lowbit::int_params (*P)()>
inline result<storage> int_storage(std::size_t rows, std::size_t cols) {
  return lowbit::int_storage_for(P(), rows, cols);
}
template <lowbit::int_params (*P)()>
inline status int_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  return lowbit::quantize_dequantize_int(src, rows, cols, P(), dst);
}

inline lowbit::int_params gptq_g128() { return lowbit::int_presets::gptq(4, 128); }
inline lowbit::int_params gptq_g32() { return lowbit::int_presets::gptq(4, 32); }
inline lowbit::int_params awq_g128() { return lowbit::int_presets::awq(4, 128); }

// int8: compressed-tensors' int-quantized weight: codes as I8 (two's complement), fp32 scales.
inline std::string int8_limit(std::size_t, std::size_t) { return ""; }
inline std::vector<out_tensor> int8_plan(std::size_t rows, std::size_t cols) {
  return {{"weight", io::dtype::i8, {u(rows), u(cols)}, {}}, {"weight_scale", io::dtype::f32, {u(rows), 1}, {}}};
}
inline status int8_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                          float* dst) {
  lowbit::int_params p = int8_params();
  p.code_storage = lowbit::int_code_storage::twos_complement;
  result<lowbit::quantized_matrix> m = lowbit::quantized_matrix::quantize(src, rows, cols, p);
  if (!m.ok()) return m.status;
  if (status s = m.value.dequantize(lowbit::span<float>(dst, rows * cols)); !s) return s;
  out = int8_plan(rows, cols);
  put(out[0], m.value.packed_codes().data(), m.value.packed_codes().size());  // 8-bit codes: one byte each
  put(out[1], m.value.scales().data(), m.value.scales().size());
  return status{};
}

// GPTQ v1 (qweight [in/8, out], qzeros [groups, out/8], scales fp16 [groups, out], g_idx [in]).
inline std::string gptq_limit(std::size_t rows, std::size_t cols) {
  if (rows % 8 != 0) return fmt::format("GPTQ packs 8 output channels per int32: rows {} not a multiple of 8", rows);
  if (cols % 8 != 0) return fmt::format("GPTQ packs 8 inputs per int32: cols {} not a multiple of 8", cols);
  return "";
}
template <std::size_t G>
inline std::vector<out_tensor> gptq_plan(std::size_t rows, std::size_t cols) {
  const std::size_t groups = G == 0 ? 1 : cols / G;
  return {{"qweight", io::dtype::i32, {u(cols / 8), u(rows)}, {}},
          {"qzeros", io::dtype::i32, {u(groups), u(rows / 8)}, {}},
          {"scales", io::dtype::f16, {u(groups), u(rows)}, {}},
          {"g_idx", io::dtype::i32, {u(cols)}, {}}};
}
template <lowbit::int_params (*P)(), std::size_t G>
inline status gptq_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                          float* dst) {
  result<lowbit::quantized_matrix> m = lowbit::quantized_matrix::quantize(src, rows, cols, P());
  if (!m.ok()) return m.status;
  if (status s = m.value.dequantize(lowbit::span<float>(dst, rows * cols)); !s) return s;
  result<lowbit::gptq_tensors> t = lowbit::export_gptq(m.value, lowbit::gptq_format::v1);
  if (!t.ok()) return t.status;
  out = gptq_plan<G>(rows, cols);
  put(out[0], t.value.qweight.values().data(), t.value.qweight.size());
  put(out[1], t.value.qzeros.values().data(), t.value.qzeros.size());
  put(out[2], t.value.scales.values().data(), t.value.scales.size());
  put(out[3], t.value.g_idx.values().data(), t.value.g_idx.size());
  return status{};
}

// AWQ GEMM (qweight [in, out/8], qzeros [groups, out/8], scales fp16 [groups, out]).
inline std::string awq_limit(std::size_t rows, std::size_t) {
  if (rows % 8 != 0) return fmt::format("AWQ packs 8 output channels per int32: rows {} not a multiple of 8", rows);
  return "";
}
inline std::vector<out_tensor> awq_plan(std::size_t rows, std::size_t cols) {
  const std::size_t groups = cols / 128;
  return {{"qweight", io::dtype::i32, {u(cols), u(rows / 8)}, {}},
          {"qzeros", io::dtype::i32, {u(groups), u(rows / 8)}, {}},
          {"scales", io::dtype::f16, {u(groups), u(rows)}, {}}};
}
inline status awq_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                         float* dst) {
  result<lowbit::quantized_matrix> m = lowbit::quantized_matrix::quantize(src, rows, cols, awq_g128());
  if (!m.ok()) return m.status;
  if (status s = m.value.dequantize(lowbit::span<float>(dst, rows * cols)); !s) return s;
  result<lowbit::awq_tensors> t = lowbit::export_awq(m.value);
  if (!t.ok()) return t.status;
  out = awq_plan(rows, cols);
  put(out[0], t.value.qweight.values().data(), t.value.qweight.size());
  put(out[1], t.value.qzeros.values().data(), t.value.qzeros.size());
  put(out[2], t.value.scales.values().data(), t.value.scales.size());
  return status{};
}

// ----- FP8 ---------------------------------------------------------------------------------------

template <bool PerChannel>
inline lowbit::fp8_options fp8_params() {
  return PerChannel ? lowbit::fp8_presets::per_channel() : lowbit::fp8_presets::per_tensor();
}
template <bool PerChannel>
inline result<storage> fp8_storage(std::size_t rows, std::size_t cols) {
  return lowbit::fp8_storage_for(fp8_params<PerChannel>(), rows, cols);
}
inline std::string no_limit(std::size_t, std::size_t) { return ""; }
template <bool PerChannel>
inline std::vector<out_tensor> fp8_plan(std::size_t rows, std::size_t cols) {
  return {{"weight", io::dtype::f8_e4m3, {u(rows), u(cols)}, {}},
          {"weight_scale", io::dtype::f32, PerChannel ? std::vector<u64>{u(rows), 1} : std::vector<u64>{1}, {}}};
}
template <bool PerChannel>
inline status fp8_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                         float* dst) {
  const lowbit::fp8_options o = fp8_params<PerChannel>();
  result<lowbit::fp8_tensors<lowbit::float8_e4m3fn>> t = lowbit::export_fp8<lowbit::float8_e4m3fn>(src, rows, cols, o);
  if (!t.ok()) return t.status;
  if (status s = lowbit::fp8_dequantize(t.value.weight.values().data(), t.value.weight_scale.values().data(), rows,
                                        cols, o, dst);
      !s)
    return s;
  out = fp8_plan<PerChannel>(rows, cols);
  put(out[0], t.value.weight.values().data(), t.value.weight.size());
  put(out[1], t.value.weight_scale.values().data(), t.value.weight_scale.size());
  return status{};
}
template <bool PerChannel>
inline status fp8_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  std::vector<out_tensor> out;
  return fp8_export<PerChannel>(src, rows, cols, out, dst);
}

// ----- MXFP4 and NVFP4 -----------------------------------------------------------------------------

inline result<storage> mxfp4_storage(std::size_t rows, std::size_t cols) {
  return lowbit::mx_storage_for<lowbit::mxfp4_e2m1>(rows, cols, lowbit::mx_presets::ocp());
}
inline std::vector<out_tensor> mxfp4_plan(std::size_t rows, std::size_t cols) {
  return {{"weight_packed", io::dtype::u8, {u(rows), u(cols / 2)}, {}},
          {"weight_scale", io::dtype::u8, {u(rows), u(cols / 32)}, {}}};
}
inline status mxfp4_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                           float* dst) {
  const lowbit::mx_options o = lowbit::mx_presets::ocp();
  std::vector<out_tensor> t = mxfp4_plan(rows, cols);
  t[0].bytes.resize(t[0].byte_size());
  t[1].bytes.resize(t[1].byte_size());
  if (status s = lowbit::mx_quantize_matrix<lowbit::mxfp4_e2m1>(src, rows, cols, o, t[0].bytes.data(), t[1].bytes.data());
      !s)
    return s;
  if (status s = lowbit::mx_dequantize_matrix<lowbit::mxfp4_e2m1>(t[0].bytes.data(), t[1].bytes.data(), rows, cols, o, dst);
      !s)
    return s;
  out = std::move(t);
  return status{};
}
inline status mxfp4_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  std::vector<out_tensor> out;
  return mxfp4_export(src, rows, cols, out, dst);
}

inline result<storage> nvfp4_storage(std::size_t rows, std::size_t cols) { return lowbit::nvfp4_storage_for(rows, cols); }
inline std::vector<out_tensor> nvfp4_plan(std::size_t rows, std::size_t cols) {
  return {{"weight_packed", io::dtype::u8, {u(rows), u(cols / 2)}, {}},
          {"weight_scale", io::dtype::f8_e4m3, {u(rows), u(cols / 16)}, {}},
          {"weight_global_scale", io::dtype::f32, {1}, {}}};
}
// Two-level NVFP4 with the tensor scale from the data, in compressed-tensors' convention (the
// multiplier g = 2688 / amax, stored as weight_global_scale).
inline status nvfp4_export(const float* src, std::size_t rows, std::size_t cols, std::vector<out_tensor>& out,
                           float* dst) {
  lowbit::nvfp4_options o = lowbit::nvfp4_presets::nvidia();
  o.tensor_scale_convention = lowbit::nvfp4_scale_convention::multiplier;
  const result<float> g = lowbit::nvfp4_compute_tensor_scale(src, rows * cols, o);
  if (!g.ok()) return g.status;
  o.tensor_scale = g.value;
  std::vector<out_tensor> t = nvfp4_plan(rows, cols);
  t[0].bytes.resize(t[0].byte_size());
  t[1].bytes.resize(t[1].byte_size());
  if (status s = lowbit::nvfp4_quantize_matrix(src, rows, cols, o, t[0].bytes.data(), t[1].bytes.data()); !s) return s;
  if (status s = lowbit::nvfp4_dequantize_matrix(t[0].bytes.data(), t[1].bytes.data(), rows, cols, o, dst); !s) return s;
  put(t[2], &g.value, 1);
  out = std::move(t);
  return status{};
}
inline status nvfp4_round_trip(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  std::vector<out_tensor> out;
  return nvfp4_export(src, rows, cols, out, dst);
}

}  // namespace schemes_detail

// Every scheme, in the default order of `lowbit report`.
inline const std::vector<scheme>& all_schemes() {
  using namespace schemes_detail;
  static const std::vector<scheme> all = {
      {"int8", "INT8 symmetric per output channel, fp32 scales (SmoothQuant W8 weights)",
       "compressed-tensors int8: weight I8 [out, in], weight_scale F32 [out, 1]", 0, int_storage<int8_params>,
       int_round_trip<int8_params>, int8_limit, int8_plan, int8_export},
      {"int4-g128", "INT4 symmetric (GPTQ grid), groups of 128 along in, fp16 scales",
       "GPTQ v1: qweight I32 [in/8, out], qzeros I32 [in/128, out/8], scales F16 [in/128, out], g_idx I32 [in]", 128,
       int_storage<gptq_g128>, int_round_trip<gptq_g128>, gptq_limit, gptq_plan<128>, gptq_export<gptq_g128, 128>},
      {"int4-g128-asym", "INT4 affine with integer zero-points (AWQ), groups of 128, fp16 scales",
       "AWQ GEMM: qweight I32 [in, out/8], qzeros I32 [in/128, out/8], scales F16 [in/128, out]", 128,
       int_storage<awq_g128>, int_round_trip<awq_g128>, awq_limit, awq_plan, awq_export},
      {"int4-g32", "INT4 symmetric (GPTQ grid), groups of 32, fp16 scales",
       "GPTQ v1: qweight I32 [in/8, out], qzeros I32 [in/32, out/8], scales F16 [in/32, out], g_idx I32 [in]", 32,
       int_storage<gptq_g32>, int_round_trip<gptq_g32>, gptq_limit, gptq_plan<32>, gptq_export<gptq_g32, 32>},
      {"int4-channel", "INT4 symmetric (GPTQ grid) per output channel, fp16 scales",
       "GPTQ v1 with one group per row: qweight, qzeros I32 [1, out/8], scales F16 [1, out], g_idx (all 0)", 0,
       int_storage<int4_channel_params>, int_round_trip<int4_channel_params>, gptq_limit, gptq_plan<0>,
       gptq_export<int4_channel_params, 0>},
      {"fp8", "FP8 E4M3 with one fp32 scale per tensor (amax / 448)",
       "compressed-tensors FP8 tensor: weight F8_E4M3 [out, in], weight_scale F32 [1]", 0, fp8_storage<false>,
       fp8_round_trip<false>, no_limit, fp8_plan<false>, fp8_export<false>},
      {"fp8-channel", "FP8 E4M3 with one fp32 scale per output channel",
       "compressed-tensors FP8 channel: weight F8_E4M3 [out, in], weight_scale F32 [out, 1]", 0, fp8_storage<true>,
       fp8_round_trip<true>, no_limit, fp8_plan<true>, fp8_export<true>},
      {"mxfp4", "OCP MXFP4: E2M1 elements, one E8M0 scale per 32 (floor rule)",
       "weight_packed U8 [out, in/2] (low nibble first), weight_scale U8 (E8M0 codes) [out, in/32]", 32,
       mxfp4_storage, mxfp4_round_trip, no_limit, mxfp4_plan, mxfp4_export},
      {"nvfp4", "NVFP4 two-level: E2M1, one E4M3 scale per 16, fp32 tensor scale from amax",
       "compressed-tensors NVFP4: weight_packed U8 [out, in/2], weight_scale F8_E4M3 [out, in/16], "
       "weight_global_scale F32 [1] (2688 / amax)",
       16, nvfp4_storage, nvfp4_round_trip, no_limit, nvfp4_plan, nvfp4_export},
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

// Why quantize cannot export a [rows, cols] weight with `s`, or "" when it can.
inline std::string export_limit(const scheme& s, std::size_t rows, std::size_t cols) {
  std::string why = scheme_limit(s, rows, cols);
  return why.empty() ? s.export_limit(rows, cols) : why;
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
