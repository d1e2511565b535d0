// lowbit::io: one linear layer's weight [out, in] as the tensors an engine loads, and back.
//
//   quantize_linear(prefix, w, out, in, o)      the tensors "<prefix>.<name>" of o.format
//   quantization_config_json(o)                 the config block the engine reads with them
//   dequantize_linear(prefix, tensors, o, ...)  the float weight those tensors stand for
//
// docs/checkpoints.md has every layout as a table (names, dtypes, shapes, packing order,
// zero-point offset) with the source each convention was read from. In short, for [out, in]:
//
//   gptq             qweight I32 [in*b/32, out], qzeros I32 [groups, out*b/32] (zero - 1 under
//                    gptq_format::v1, the zero under v2), scales F16 [groups, out], g_idx I32 [in]
//   awq              qweight I32 [in, out/8] and qzeros I32 [groups, out/8] in AWQ's interleaved
//                    order (nibble i of word w: channel 8w + {0,2,4,6,1,3,5,7}[i]), scales F16
//                    [groups, out]
//   fp8_per_tensor   weight F8_E4M3 [out, in], weight_scale F32 [1]      (x = q * s)
//   fp8_per_channel  weight F8_E4M3 [out, in], weight_scale F32 [out, 1]
//   compressed_int4  compressed-tensors pack-quantized (b = 4 or 8): weight_packed I32
//                    [out, in*b/32] (q + 2^(b-1), low bits first along `in`), weight_scale
//                    [out, groups] (o.scale_dtype), weight_zero_point I32 [ceil(out*b/32), groups]
//                    (asymmetric only; packed along `out`), weight_shape I64 [2] = {out, in}
//   nvfp4            compressed-tensors nvfp4-pack-quantized: weight_packed U8 [out, in/2] (E2M1,
//                    first in the low nibble), weight_scale F8_E4M3 [out, in/16],
//                    weight_global_scale F32 [1] = 2688 / amax (a multiplier: x = q * s / g)
//   mxfp4            compressed-tensors mxfp4-pack-quantized: weight_packed U8 [out, in/2],
//                    weight_scale U8 [out, in/32] (E8M0 biased exponents, x = q * 2^(e - 127))
//   int8_per_channel compressed-tensors int-quantized, strategy "channel": weight I8 [out, in]
//                    (two's complement q), weight_scale F32 [out, 1] (x = q * s, s = amax / 127)
//
//   linear_layout(prefix, out, in, o)           the names, dtypes and shapes, without quantizing
//   export_linear(prefix, m, o)                 an integer format from a quantized_matrix (GPTQ's)
//
// Everything follows lowbit's quantizers (schemes/export.hpp, fp8.hpp, nvfp4.hpp, mx.hpp): the
// values an engine reads back are exactly quantize-then-dequantize of those calls. Errors are one
// line starting with the prefix ("model.layers.0.mlp.down_proj: in_features 100 is not a multiple
// of the group size 128"); nothing throws (the JSON is built with nlohmann-json, no parsing).
#ifndef LOWBIT_IO_CHECKPOINT_HPP
#define LOWBIT_IO_CHECKPOINT_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../formats/types.hpp"
#include "../schemes/export.hpp"
#include "../schemes/fp8.hpp"
#include "../schemes/integer.hpp"
#include "../schemes/mx.hpp"
#include "../schemes/nvfp4.hpp"
#include "../schemes/quantized_matrix.hpp"
#include "tensor.hpp"

namespace lowbit {
namespace io {

// The layouts quantize_linear writes.
enum class checkpoint_format : std::uint8_t {
  gptq,             // AutoGPTQ / GPTQModel (vLLM "gptq", exllama, Marlin)
  awq,              // AutoAWQ GEMM (vLLM "awq", awq_marlin)
  fp8_per_tensor,   // compressed-tensors float-quantized, strategy "tensor" (vLLM's weight_scale)
  fp8_per_channel,  // compressed-tensors float-quantized, strategy "channel"
  compressed_int4,  // compressed-tensors pack-quantized (4 or 8 bits, vLLM WNA16)
  nvfp4,            // compressed-tensors nvfp4-pack-quantized (NVFP4A16 weights)
  mxfp4,            // compressed-tensors mxfp4-pack-quantized (OCP MX, E8M0 scales as U8)
  int8_per_channel, // compressed-tensors int-quantized, channel strategy (vLLM W8A8 INT8)
};

// What each format reads (the rest is ignored; the float formats fix their own widths and blocks):
//  bits, group_size, symmetric    gptq (bits 2, 4, 8), awq (bits 4), compressed_int4 (bits 4, 8).
//                                 group_size 0 is one group per output channel (GPTQ's
//                                 group_size -1, compressed-tensors' "channel" strategy).
//                                 Symmetric: GPTQ and compressed-tensors s = amax / 7.5 (INT4,
//                                 zero 8, codes 0..15); AWQ s = amax / 7 (AWQ without zero-point,
//                                 stored with zero 8). Asymmetric: GPTQ and compressed-tensors
//                                 widen [min, max] to contain 0; AWQ takes the true min/max.
//  gptq_version                   gptq: v1 stores zero - 1 (AutoGPTQ; a zero of 0, from an
//                                 asymmetric group whose min is >= 0, cannot be stored: error), v2
//                                 the zero (GPTQModel "gptq_v2").
//  scale_dtype                    compressed_int4: F16, BF16 (default, the dtype most models
//                                 ship in) or F32.
//  fp8_dynamic_activations        fp8 configs: input_activations FP8 dynamic per token (the
//                                 FP8_DYNAMIC scheme) or null (weight-only, W8A16); the same for
//                                 int8_per_channel with INT8 activations (W8A8 dynamic / W8A16).
//  (int8_per_channel reads none of bits, group_size, symmetric: always 8 bits, symmetric, one
//  fp32 scale per output channel, int_presets::int8_per_channel.)
//  mx                             mxfp4: the E8M0 rule and element rounding (block_size must be
//                                 32); the default is OCP's (floor), which compressed-tensors uses.
//  ignore                         compressed-tensors configs: the "ignore" list.
struct checkpoint_options {
  checkpoint_format format = checkpoint_format::gptq;
  int bits = 4;
  std::size_t group_size = 128;
  bool symmetric = true;
  gptq_format gptq_version = gptq_format::v1;
  dtype scale_dtype = dtype::bf16;
  bool fp8_dynamic_activations = true;
  mx_options mx = mx_presets::ocp();
  std::vector<std::string> ignore = {"lm_head"};
};

namespace checkpoint_detail {

inline std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

inline const char* format_name(checkpoint_format f) noexcept {
  switch (f) {
    case checkpoint_format::gptq: return "gptq";
    case checkpoint_format::awq: return "awq";
    case checkpoint_format::fp8_per_tensor: return "fp8_per_tensor";
    case checkpoint_format::fp8_per_channel: return "fp8_per_channel";
    case checkpoint_format::compressed_int4: return "compressed_int4";
    case checkpoint_format::nvfp4: return "nvfp4";
    case checkpoint_format::mxfp4: return "mxfp4";
    case checkpoint_format::int8_per_channel: return "int8_per_channel";
  }
  return "?";
}

inline bool is_integer_format(checkpoint_format f) noexcept {
  return f == checkpoint_format::gptq || f == checkpoint_format::awq || f == checkpoint_format::compressed_int4 ||
         f == checkpoint_format::int8_per_channel;
}

// The options checks (no shape): empty when o can be written.
inline std::string check_options(const checkpoint_options& o) {
  if (static_cast<unsigned>(o.format) > static_cast<unsigned>(checkpoint_format::int8_per_channel))
    return "checkpoint format out of range";
  const std::string f = format_name(o.format);
  switch (o.format) {
    case checkpoint_format::gptq:
      if (o.bits != 2 && o.bits != 4 && o.bits != 8)
        return "gptq holds 2, 4 or 8 bits, not " + std::to_string(o.bits);
      if (static_cast<unsigned>(o.gptq_version) > 1u) return "gptq_version out of range";
      break;
    case checkpoint_format::awq:
      if (o.bits != 4) return "awq holds 4 bits, not " + std::to_string(o.bits);
      break;
    case checkpoint_format::compressed_int4:
      if (o.bits != 4 && o.bits != 8)
        return "compressed-tensors pack-quantized holds 4 or 8 bits, not " + std::to_string(o.bits);
      if (o.scale_dtype != dtype::f16 && o.scale_dtype != dtype::bf16 && o.scale_dtype != dtype::f32)
        return std::string("scale_dtype ") + dtype_name(o.scale_dtype) + " is not F16, BF16 or F32";
      break;
    case checkpoint_format::mxfp4:
      if (o.mx.block_size != 32)
        return "mxfp4 blocks are 32 elements, not " + std::to_string(o.mx.block_size);
      break;
    default: break;
  }
  if (is_integer_format(o.format) && o.group_size > 0x7FFFFFFFu) return "group_size out of range";
  return {};
}

// The int_params of an integer format (options checked).
inline int_params int_params_of(const checkpoint_options& o) noexcept {
  if (o.format == checkpoint_format::int8_per_channel) return int_presets::int8_per_channel();
  int_params p;
  p.bits = o.bits;
  p.scale_format = scale_storage::fp16;
  p.granularity = o.group_size == 0 ? granularity::per_channel : granularity::per_group;
  p.group_size = o.group_size;
  if (o.symmetric) {
    p.scheme = int_scheme::symmetric;
    p.range = o.format == checkpoint_format::awq ? int_range::restricted : int_range::full;
  } else {
    p.scheme = int_scheme::affine;
    p.range_includes_zero = o.format != checkpoint_format::awq;
  }
  if (o.format == checkpoint_format::compressed_int4)
    p.scale_format = o.scale_dtype == dtype::f16   ? scale_storage::fp16
                     : o.scale_dtype == dtype::f32 ? scale_storage::fp32
                                                   : scale_storage::bf16;
  return p;
}

// ----- bytes -------------------------------------------------------------------------------------

inline void put_le(std::vector<unsigned char>& b, std::size_t at, std::uint64_t v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) b[at * n + i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t get_le(const unsigned char* p, std::size_t at, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[at * n + i]) << (8 * i);
  return v;
}

inline tensor_data make(const std::string& name, dtype t, std::vector<std::uint64_t> shape) {
  tensor_data d;
  d.name = name;
  d.type = t;
  d.shape = std::move(shape);
  std::uint64_t n = 0;
  element_count(d.shape, n);
  d.bytes.assign(static_cast<std::size_t>(n) * dtype_size(t), 0);
  return d;
}

inline tensor_data from_i32(const std::string& name, span<const std::int32_t> v, std::vector<std::uint64_t> shape) {
  tensor_data d = make(name, dtype::i32, std::move(shape));
  for (std::size_t i = 0; i < v.size(); ++i) put_le(d.bytes, i, static_cast<std::uint32_t>(v[i]), 4);
  return d;
}
inline tensor_data from_f16(const std::string& name, span<const float16> v, std::vector<std::uint64_t> shape) {
  tensor_data d = make(name, dtype::f16, std::move(shape));
  for (std::size_t i = 0; i < v.size(); ++i) put_le(d.bytes, i, v[i].bits(), 2);
  return d;
}
inline tensor_data from_f32(const std::string& name, span<const float> v, std::vector<std::uint64_t> shape) {
  tensor_data d = make(name, dtype::f32, std::move(shape));
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v[i], 4);
    put_le(d.bytes, i, u, 4);
  }
  return d;
}
inline tensor_data from_bytes(const std::string& name, dtype t, const std::uint8_t* v, std::size_t n,
                              std::vector<std::uint64_t> shape) {
  tensor_data d = make(name, t, std::move(shape));
  if (n != 0) std::memcpy(d.bytes.data(), v, n);
  return d;
}

// A scale stored in dtype t (F16, BF16, F32): exact, since the scale is already rounded to it.
inline void put_scale(std::vector<unsigned char>& b, std::size_t at, float v, dtype t) noexcept {
  if (t == dtype::f16) {
    put_le(b, at, encode<float16>(v).bits(), 2);
  } else if (t == dtype::bf16) {
    put_le(b, at, encode<bfloat16>(v).bits(), 2);
  } else {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, 4);
    put_le(b, at, u, 4);
  }
}
inline float get_scale(const unsigned char* p, std::size_t at, dtype t) noexcept {
  if (t == dtype::f16) return decode(float16::from_bits(static_cast<std::uint16_t>(get_le(p, at, 2))));
  if (t == dtype::bf16) return decode(bfloat16::from_bits(static_cast<std::uint16_t>(get_le(p, at, 2))));
  const std::uint32_t u = static_cast<std::uint32_t>(get_le(p, at, 4));
  float f = 0.0f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::string status_text(status s) { return s.message(); }

// ----- writers -----------------------------------------------------------------------------------

inline std::string write_gptq(const std::string& prefix, const quantized_matrix& m, const checkpoint_options& o,
                              std::vector<tensor_data>& out) {
  const result<gptq_tensors> t = export_gptq(m, o.gptq_version);
  if (!t.ok()) {
    if (t.status == errc::bad_argument && o.gptq_version == gptq_format::v1)
      return "gptq v1 stores zero - 1 and cannot hold a zero-point of 0 (an asymmetric group whose values are "
             "all >= 0): use gptq_version v2 or a symmetric scheme";
    return status_text(t.status);
  }
  const gptq_tensors& g = t.value;
  out.push_back(from_i32(prefix + ".qweight", g.qweight.values(), {g.qweight.rows(), g.qweight.cols()}));
  out.push_back(from_i32(prefix + ".qzeros", g.qzeros.values(), {g.qzeros.rows(), g.qzeros.cols()}));
  out.push_back(from_f16(prefix + ".scales", g.scales.values(), {g.scales.rows(), g.scales.cols()}));
  out.push_back(from_i32(prefix + ".g_idx", g.g_idx.values(), {g.g_idx.cols()}));
  return {};
}

inline std::string write_awq(const std::string& prefix, const quantized_matrix& m, std::vector<tensor_data>& out) {
  const result<awq_tensors> t = export_awq(m);
  if (!t.ok()) return status_text(t.status);
  const awq_tensors& a = t.value;
  out.push_back(from_i32(prefix + ".qweight", a.qweight.values(), {a.qweight.rows(), a.qweight.cols()}));
  out.push_back(from_i32(prefix + ".qzeros", a.qzeros.values(), {a.qzeros.rows(), a.qzeros.cols()}));
  out.push_back(from_f16(prefix + ".scales", a.scales.values(), {a.scales.rows(), a.scales.cols()}));
  return {};
}

// compressed-tensors pack_to_int32: k = 32/b codes per word, code j of a word at bits b*j; the
// stored field is the signed value + 2^(b-1), which is lowbit's offset-binary code u (and, for
// zero-points, lowbit's unsigned z). Weights are packed along `in`, zero-points along `out`
// (padded with zero fields to whole words).
inline std::string write_compressed_int(const std::string& prefix, const quantized_matrix& m,
                                        const checkpoint_options& o, std::vector<tensor_data>& out) {
  const std::size_t rows = m.rows(), cols = m.cols(), groups = m.group_count() / rows;
  const unsigned b = static_cast<unsigned>(o.bits);
  const std::size_t k = 32u / b;
  std::vector<std::uint8_t> codes(rows * cols);
  if (status s = m.unpack(span<std::uint8_t>(codes.data(), codes.size())); !s) return status_text(s);
  tensor_data packed = make(prefix + ".weight_packed", dtype::i32, {rows, cols / k});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t w = 0; w < cols / k; ++w) {
      std::uint32_t word = 0;
      for (std::size_t j = 0; j < k; ++j) word |= static_cast<std::uint32_t>(codes[r * cols + w * k + j]) << (b * j);
      put_le(packed.bytes, r * (cols / k) + w, word, 4);
    }
  out.push_back(std::move(packed));
  tensor_data scale = make(prefix + ".weight_scale", o.scale_dtype, {rows, groups});
  const span<const float> sc = m.scales();
  for (std::size_t i = 0; i < sc.size(); ++i) put_scale(scale.bytes, i, sc[i], o.scale_dtype);
  out.push_back(std::move(scale));
  if (!o.symmetric) {
    const std::size_t words = (rows + k - 1) / k;
    tensor_data zp = make(prefix + ".weight_zero_point", dtype::i32, {words, groups});
    const span<const float> z = m.zeros();
    for (std::size_t w = 0; w < words; ++w)
      for (std::size_t g = 0; g < groups; ++g) {
        std::uint32_t word = 0;
        for (std::size_t j = 0; j < k && w * k + j < rows; ++j)
          word |= static_cast<std::uint32_t>(z[(w * k + j) * groups + g]) << (b * j);
        put_le(zp.bytes, w * groups + g, word, 4);
      }
    out.push_back(std::move(zp));
  }
  tensor_data shape = make(prefix + ".weight_shape", dtype::i64, {2});
  put_le(shape.bytes, 0, rows, 8);
  put_le(shape.bytes, 1, cols, 8);
  out.push_back(std::move(shape));
  return {};
}

// compressed-tensors int-quantized: the signed code q as one two's complement byte (lowbit's
// offset-binary code u = q + 128, so q's byte is u ^ 0x80), fp32 scales [out, 1].
inline std::string write_int8(const std::string& prefix, const quantized_matrix& m, std::vector<tensor_data>& out) {
  const std::size_t rows = m.rows(), cols = m.cols();
  if (m.params().bits != 8 || m.params().scheme != int_scheme::symmetric ||
      m.params().granularity != granularity::per_channel || m.params().scale_format != scale_storage::fp32)
    return "int8_per_channel needs 8-bit symmetric per-channel codes with fp32 scales";
  std::vector<std::uint8_t> codes(rows * cols);
  if (status s = m.unpack(span<std::uint8_t>(codes.data(), codes.size())); !s) return status_text(s);
  tensor_data weight = make(prefix + ".weight", dtype::i8, {rows, cols});
  for (std::size_t i = 0; i < codes.size(); ++i) weight.bytes[i] = static_cast<unsigned char>(codes[i] ^ 0x80u);
  out.push_back(std::move(weight));
  out.push_back(from_f32(prefix + ".weight_scale", m.scales(), {rows, 1}));
  return {};
}

inline std::string write_fp8(const std::string& prefix, const float* w, std::size_t rows, std::size_t cols,
                             bool per_channel, std::vector<tensor_data>& out) {
  const fp8_options fo = per_channel ? fp8_presets::per_channel() : fp8_presets::per_tensor();
  const result<fp8_tensors<float8_e4m3fn>> t = export_fp8<float8_e4m3fn>(w, rows, cols, fo);
  if (!t.ok()) return status_text(t.status);
  tensor_data weight = make(prefix + ".weight", dtype::f8_e4m3, {rows, cols});
  const span<const float8_e4m3fn> q = t.value.weight.values();
  for (std::size_t i = 0; i < q.size(); ++i) weight.bytes[i] = q[i].bits();
  out.push_back(std::move(weight));
  out.push_back(from_f32(prefix + ".weight_scale", t.value.weight_scale.values(),
                         per_channel ? std::vector<std::uint64_t>{rows, 1} : std::vector<std::uint64_t>{1}));
  return {};
}

// The nvfp4_options of a compressed-tensors checkpoint whose global scale is g.
inline nvfp4_options nvfp4_options_for(float g) noexcept {
  nvfp4_options n = nvfp4_presets::nvidia();
  n.tensor_scale_convention = nvfp4_scale_convention::multiplier;
  n.tensor_scale = g;
  n.non_finite_is_error = true;
  return n;
}

inline std::string write_nvfp4(const std::string& prefix, const float* w, std::size_t rows, std::size_t cols,
                               std::vector<tensor_data>& out) {
  const result<float> g = nvfp4_compute_tensor_scale(w, rows * cols, nvfp4_options_for(1.0f));
  if (!g.ok()) return status_text(g.status);
  const nvfp4_options n = nvfp4_options_for(g.value);
  std::vector<std::uint8_t> elements(rows * cols / 2), scales(rows * cols / 16);
  if (status s = nvfp4_quantize_matrix(w, rows, cols, n, elements.data(), scales.data()); !s) return status_text(s);
  out.push_back(from_bytes(prefix + ".weight_packed", dtype::u8, elements.data(), elements.size(), {rows, cols / 2}));
  out.push_back(from_bytes(prefix + ".weight_scale", dtype::f8_e4m3, scales.data(), scales.size(), {rows, cols / 16}));
  out.push_back(from_f32(prefix + ".weight_global_scale", span<const float>(&g.value, 1), {1}));
  return {};
}

inline std::string write_mxfp4(const std::string& prefix, const float* w, std::size_t rows, std::size_t cols,
                               const checkpoint_options& o, std::vector<tensor_data>& out) {
  mx_options mo = o.mx;
  mo.non_finite_is_error = true;
  std::vector<std::uint8_t> elements(rows * cols / 2), scales(rows * cols / 32);
  if (status s = mx_quantize_matrix<mxfp4_e2m1>(w, rows, cols, mo, elements.data(), scales.data()); !s)
    return status_text(s);
  out.push_back(from_bytes(prefix + ".weight_packed", dtype::u8, elements.data(), elements.size(), {rows, cols / 2}));
  out.push_back(from_bytes(prefix + ".weight_scale", dtype::u8, scales.data(), scales.size(), {rows, cols / 32}));
  return {};
}

// ----- readers -----------------------------------------------------------------------------------

inline const tensor_view* find_tensor(const std::vector<tensor_view>& tensors, const std::string& name) noexcept {
  for (const tensor_view& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// The tensor "<prefix>.<suffix>", whose dtype is one of `types` and whose byte count matches its
// shape; null and an error otherwise.
inline const tensor_view* need(const std::vector<tensor_view>& tensors, const std::string& prefix, const char* suffix,
                               std::initializer_list<dtype> types, std::string& error) {
  const std::string name = prefix + "." + suffix;
  const tensor_view* t = find_tensor(tensors, name);
  if (t == nullptr) {
    error = "tensor '" + name + "' not found";
    return nullptr;
  }
  bool ok = false;
  std::string names;
  for (dtype d : types) {
    ok = ok || t->type == d;
    names += names.empty() ? "" : " or ";
    names += dtype_name(d);
  }
  if (!ok) {
    error = "tensor '" + name + "' is " + dtype_name(t->type) + ", expected " + names;
    return nullptr;
  }
  std::uint64_t n = 0;
  if (!element_count(t->shape, n) || n * dtype_size(t->type) != t->bytes || (t->bytes != 0 && t->data == nullptr)) {
    error = "tensor '" + name + "': " + std::to_string(t->bytes) + " bytes for shape " + shape_text(t->shape);
    return nullptr;
  }
  return t;
}

inline bool shape_is(const tensor_view& t, std::initializer_list<std::uint64_t> shape) noexcept {
  return t.shape.size() == shape.size() && std::equal(shape.begin(), shape.end(), t.shape.begin());
}

inline std::string bad_shape(const tensor_view& t, const std::string& expected) {
  return "tensor '" + t.name + "' has shape " + shape_text(t.shape) + ", expected " + expected;
}

// A matrix dimension that fits size_t and whose products with the others do not overflow later:
// every count below is checked against 2^40 elements, far beyond any layer.
inline bool sane(std::uint64_t v) noexcept { return v != 0 && v <= (std::uint64_t{1} << 40); }

// The integer layer being read: codes [out, in] (offset binary), scales and zero-points [out, groups],
// and the input channel's group (g_idx; empty when groups are consecutive).
struct int_layer {
  std::size_t out = 0, in = 0, groups = 0;
  int bits = 4;
  dtype scale_type = dtype::f16;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales, zeros;
  std::vector<std::int32_t> g_idx;
};

inline std::string finish_int(int_layer& L, std::vector<float>& w) {
  const std::size_t n = L.out * L.in;
  w.assign(n, 0.0f);
  bool consecutive = true;
  const std::size_t len = L.in / L.groups;
  for (std::size_t i = 0; i < L.g_idx.size(); ++i) {
    if (L.g_idx[i] < 0 || static_cast<std::size_t>(L.g_idx[i]) >= L.groups)
      return "g_idx[" + std::to_string(i) + "] = " + std::to_string(L.g_idx[i]) + " is not a group";
    consecutive = consecutive && static_cast<std::size_t>(L.g_idx[i]) == i / len;
  }
  if (consecutive && L.in % L.groups == 0) {
    int_params p;
    p.bits = L.bits;
    p.scheme = int_scheme::affine;
    p.granularity = granularity::per_group;
    p.group_size = len;
    p.scale_format = L.scale_type == dtype::f16 ? scale_storage::fp16
                     : L.scale_type == dtype::bf16 ? scale_storage::bf16
                                                   : scale_storage::fp32;
    for (std::size_t i = 0; i < L.scales.size(); ++i) {
      const result<int_group_codec> c = stored_int_codec(L.scales[i], L.zeros[i], p);
      if (!c.ok())
        return "group " + std::to_string(i % L.groups) + " of output channel " + std::to_string(i / L.groups) +
               ": scale " + std::to_string(L.scales[i]) + " / zero-point " + std::to_string(L.zeros[i]) +
               " cannot be decoded (" + status_text(c.status) + ")";
    }
    if (status s = dequantize_int(L.codes.data(), L.scales.data(), L.zeros.data(), L.out, L.in, p, w.data()); !s)
      return status_text(s);
    return {};
  }
  // act-order checkpoints: the group of input channel i is g_idx[i]
  for (std::size_t o = 0; o < L.out; ++o)
    for (std::size_t i = 0; i < L.in; ++i) {
      const std::size_t g = o * L.groups + static_cast<std::size_t>(L.g_idx[i]);
      w[o * L.in + i] = (static_cast<float>(L.codes[o * L.in + i]) - L.zeros[g]) * L.scales[g];
    }
  return {};
}

inline std::string read_gptq(const std::string& prefix, const std::vector<tensor_view>& ts,
                             const checkpoint_options& o, int_layer& L) {
  std::string e;
  const tensor_view* qw = need(ts, prefix, "qweight", {dtype::i32, dtype::u32}, e);
  const tensor_view* qz = qw ? need(ts, prefix, "qzeros", {dtype::i32, dtype::u32}, e) : nullptr;
  const tensor_view* sc = qz ? need(ts, prefix, "scales", {dtype::f16, dtype::bf16, dtype::f32}, e) : nullptr;
  if (sc == nullptr) return e;
  const tensor_view* gi = find_tensor(ts, prefix + ".g_idx");
  if (gi != nullptr && (gi = need(ts, prefix, "g_idx", {dtype::i32}, e)) == nullptr) return e;
  const unsigned b = static_cast<unsigned>(o.bits);
  const std::size_t k = 32u / b;
  if (qw->shape.size() != 2 || !sane(qw->shape[0]) || !sane(qw->shape[1]) || !sane(qw->shape[0] * k))
    return bad_shape(*qw, "[in * " + std::to_string(b) + " / 32, out]");
  L.in = static_cast<std::size_t>(qw->shape[0]) * k;
  L.out = static_cast<std::size_t>(qw->shape[1]);
  if (sc->shape.size() != 2 || sc->shape[1] != L.out || !sane(sc->shape[0]) || sc->shape[0] > L.in)
    return bad_shape(*sc, "[groups, " + std::to_string(L.out) + "]");
  L.groups = static_cast<std::size_t>(sc->shape[0]);
  if (L.out % k != 0 || !shape_is(*qz, {L.groups, L.out / k}))
    return bad_shape(*qz, "[" + std::to_string(L.groups) + ", " + std::to_string(L.out) + " * " + std::to_string(b) +
                              " / 32]");
  if (gi != nullptr && !shape_is(*gi, {L.in})) return bad_shape(*gi, "[" + std::to_string(L.in) + "]");
  L.bits = o.bits;
  L.scale_type = sc->type;
  L.codes.resize(L.out * L.in);
  const std::uint32_t mask = (1u << b) - 1u;
  for (std::size_t r = 0; r < L.in / k; ++r)
    for (std::size_t c = 0; c < L.out; ++c) {
      const std::uint32_t word = static_cast<std::uint32_t>(get_le(qw->data, r * L.out + c, 4));
      for (std::size_t j = 0; j < k; ++j)
        L.codes[c * L.in + r * k + j] = static_cast<std::uint8_t>((word >> (b * j)) & mask);
    }
  L.scales.resize(L.out * L.groups);
  L.zeros.resize(L.out * L.groups);
  const std::uint32_t bias = o.gptq_version == gptq_format::v1 ? 1u : 0u;
  for (std::size_t g = 0; g < L.groups; ++g)
    for (std::size_t c = 0; c < L.out; ++c) {
      L.scales[c * L.groups + g] = get_scale(sc->data, g * L.out + c, sc->type);
      const std::uint32_t word = static_cast<std::uint32_t>(get_le(qz->data, g * (L.out / k) + c / k, 4));
      const std::uint32_t z = ((word >> (b * (c % k))) & mask) + bias;
      if (z > mask)
        return "qzeros of output channel " + std::to_string(c) + ", group " + std::to_string(g) +
               " is all ones, a zero-point of 2^" + std::to_string(b) + " under gptq v1 (written as 0 - 1)";
      L.zeros[c * L.groups + g] = static_cast<float>(z);
    }
  if (gi != nullptr) {
    L.g_idx.resize(L.in);
    for (std::size_t i = 0; i < L.in; ++i) L.g_idx[i] = static_cast<std::int32_t>(get_le(gi->data, i, 4));
  } else if (L.in % L.groups != 0) {
    return "no g_idx, and " + std::to_string(L.groups) + " groups do not divide in_features " + std::to_string(L.in);
  }
  return {};
}

inline std::string read_awq(const std::string& prefix, const std::vector<tensor_view>& ts, int_layer& L) {
  std::string e;
  const tensor_view* qw = need(ts, prefix, "qweight", {dtype::i32, dtype::u32}, e);
  const tensor_view* qz = qw ? need(ts, prefix, "qzeros", {dtype::i32, dtype::u32}, e) : nullptr;
  const tensor_view* sc = qz ? need(ts, prefix, "scales", {dtype::f16, dtype::bf16, dtype::f32}, e) : nullptr;
  if (sc == nullptr) return e;
  if (qw->shape.size() != 2 || !sane(qw->shape[0]) || !sane(qw->shape[1]) || !sane(qw->shape[1] * 8))
    return bad_shape(*qw, "[in, out / 8]");
  L.in = static_cast<std::size_t>(qw->shape[0]);
  L.out = static_cast<std::size_t>(qw->shape[1]) * 8;
  if (sc->shape.size() != 2 || sc->shape[1] != L.out || !sane(sc->shape[0]) || L.in % sc->shape[0] != 0)
    return bad_shape(*sc, "[groups dividing " + std::to_string(L.in) + ", " + std::to_string(L.out) + "]");
  L.groups = static_cast<std::size_t>(sc->shape[0]);
  if (!shape_is(*qz, {L.groups, L.out / 8}))
    return bad_shape(*qz, "[" + std::to_string(L.groups) + ", " + std::to_string(L.out / 8) + "]");
  L.bits = 4;
  L.scale_type = sc->type;
  L.codes.resize(L.out * L.in);
  const std::size_t words = L.out / 8;
  for (std::size_t i = 0; i < L.in; ++i)
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint32_t word = static_cast<std::uint32_t>(get_le(qw->data, i * words + w, 4));
      for (unsigned s = 0; s < 8; ++s)
        L.codes[(w * 8 + static_cast<std::size_t>(awq_order[s])) * L.in + i] =
            static_cast<std::uint8_t>((word >> (4u * s)) & 0xFu);
    }
  L.scales.resize(L.out * L.groups);
  L.zeros.resize(L.out * L.groups);
  for (std::size_t g = 0; g < L.groups; ++g)
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint32_t word = static_cast<std::uint32_t>(get_le(qz->data, g * words + w, 4));
      for (unsigned s = 0; s < 8; ++s) {
        const std::size_t c = w * 8 + static_cast<std::size_t>(awq_order[s]);
        L.zeros[c * L.groups + g] = static_cast<float>((word >> (4u * s)) & 0xFu);
        L.scales[c * L.groups + g] = get_scale(sc->data, g * L.out + c, sc->type);
      }
    }
  return {};
}

inline std::string read_compressed_int(const std::string& prefix, const std::vector<tensor_view>& ts,
                                       const checkpoint_options& o, int_layer& L) {
  std::string e;
  const tensor_view* wp = need(ts, prefix, "weight_packed", {dtype::i32}, e);
  const tensor_view* sc = wp ? need(ts, prefix, "weight_scale", {dtype::f16, dtype::bf16, dtype::f32}, e) : nullptr;
  const tensor_view* ws = sc ? need(ts, prefix, "weight_shape", {dtype::i64, dtype::i32}, e) : nullptr;
  if (ws == nullptr) return e;
  const tensor_view* zp = find_tensor(ts, prefix + ".weight_zero_point");
  if (zp != nullptr && (zp = need(ts, prefix, "weight_zero_point", {dtype::i32}, e)) == nullptr) return e;
  if (!shape_is(*ws, {2})) return bad_shape(*ws, "[2]");
  const std::size_t isz = dtype_size(ws->type);
  const std::uint64_t rows = get_le(ws->data, 0, isz), cols = get_le(ws->data, 1, isz);
  if (!sane(rows) || !sane(cols) || !sane(rows * cols))
    return "tensor '" + ws->name + "' holds an impossible shape [" + std::to_string(rows) + ", " +
           std::to_string(cols) + "]";
  const unsigned b = static_cast<unsigned>(o.bits);
  const std::size_t k = 32u / b;
  L.out = static_cast<std::size_t>(rows);
  L.in = static_cast<std::size_t>(cols);
  const std::size_t words = (L.in + k - 1) / k;  // pack_to_int32 pads a row to whole words
  if (!shape_is(*wp, {L.out, words}))
    return bad_shape(*wp, "[" + std::to_string(L.out) + ", " + std::to_string(words) + "]");
  if (sc->shape.size() != 2 || sc->shape[0] != L.out || !sane(sc->shape[1]) || sc->shape[1] > L.in)
    return bad_shape(*sc, "[" + std::to_string(L.out) + ", groups]");
  L.groups = static_cast<std::size_t>(sc->shape[1]);
  if (L.in % L.groups != 0)
    return "weight_scale's " + std::to_string(L.groups) + " groups do not divide in_features " + std::to_string(L.in);
  const std::size_t zwords = (L.out + k - 1) / k;
  if (zp != nullptr && !shape_is(*zp, {zwords, L.groups}))
    return bad_shape(*zp, "[" + std::to_string(zwords) + ", " + std::to_string(L.groups) + "]");
  L.bits = o.bits;
  L.scale_type = sc->type;
  const std::uint32_t mask = (1u << b) - 1u;
  L.codes.resize(L.out * L.in);
  for (std::size_t r = 0; r < L.out; ++r)
    for (std::size_t i = 0; i < L.in; ++i) {
      const std::uint32_t word = static_cast<std::uint32_t>(get_le(wp->data, r * words + i / k, 4));
      L.codes[r * L.in + i] = static_cast<std::uint8_t>((word >> (b * (i % k))) & mask);
    }
  L.scales.resize(L.out * L.groups);
  L.zeros.assign(L.out * L.groups, static_cast<float>(1u << (b - 1)));  // symmetric: signed zero 0
  for (std::size_t i = 0; i < L.scales.size(); ++i) L.scales[i] = get_scale(sc->data, i, sc->type);
  if (zp != nullptr)
    for (std::size_t r = 0; r < L.out; ++r)
      for (std::size_t g = 0; g < L.groups; ++g) {
        const std::uint32_t word = static_cast<std::uint32_t>(get_le(zp->data, (r / k) * L.groups + g, 4));
        L.zeros[r * L.groups + g] = static_cast<float>((word >> (b * (r % k))) & mask);
      }
  return {};
}

inline std::string read_fp8(const std::string& prefix, const std::vector<tensor_view>& ts, bool per_channel,
                            std::vector<float>& w, std::size_t& rows, std::size_t& cols) {
  std::string e;
  const tensor_view* wt = need(ts, prefix, "weight", {dtype::f8_e4m3}, e);
  const tensor_view* sc = wt ? need(ts, prefix, "weight_scale", {dtype::f32, dtype::bf16, dtype::f16}, e) : nullptr;
  if (sc == nullptr) return e;
  if (wt->shape.size() != 2 || !sane(wt->shape[0]) || !sane(wt->shape[1]) || !sane(wt->shape[0] * wt->shape[1]))
    return bad_shape(*wt, "[out, in]");
  rows = static_cast<std::size_t>(wt->shape[0]);
  cols = static_cast<std::size_t>(wt->shape[1]);
  if (per_channel ? !(shape_is(*sc, {rows, 1}) || shape_is(*sc, {rows}))
                  : !(shape_is(*sc, {1}) || sc->shape.empty()))
    return bad_shape(*sc, per_channel ? "[" + std::to_string(rows) + ", 1]" : std::string("[1] or []"));
  std::vector<float8_e4m3fn> q(rows * cols);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = float8_e4m3fn::from_bits(wt->data[i]);
  std::vector<float> s(per_channel ? rows : 1);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = get_scale(sc->data, i, sc->type);
  w.assign(rows * cols, 0.0f);
  const fp8_options fo = per_channel ? fp8_presets::per_channel() : fp8_presets::per_tensor();
  if (status st = fp8_dequantize(q.data(), s.data(), rows, cols, fo, w.data()); !st)
    return "tensor '" + sc->name + "': " + status_text(st);
  return {};
}

// weight_packed U8 [out, in/2] and weight_scale [out, in/block]: out and in.
inline std::string read_fp4_shapes(const tensor_view& wp, const tensor_view& sc, std::size_t block, std::size_t& rows,
                                    std::size_t& cols) {
  if (wp.shape.size() != 2 || !sane(wp.shape[0]) || !sane(wp.shape[1]) || !sane(wp.shape[0] * wp.shape[1] * 2))
    return bad_shape(wp, "[out, in / 2]");
  rows = static_cast<std::size_t>(wp.shape[0]);
  cols = static_cast<std::size_t>(wp.shape[1]) * 2;
  if (cols % block != 0)
    return "tensor '" + wp.name + "': in_features " + std::to_string(cols) + " is not a multiple of the block size " +
           std::to_string(block);
  if (!shape_is(sc, {rows, cols / block}))
    return bad_shape(sc, "[" + std::to_string(rows) + ", " + std::to_string(cols / block) + "]");
  return {};
}

inline std::string read_nvfp4(const std::string& prefix, const std::vector<tensor_view>& ts, std::vector<float>& w,
                              std::size_t& rows, std::size_t& cols) {
  std::string e;
  const tensor_view* wp = need(ts, prefix, "weight_packed", {dtype::u8}, e);
  const tensor_view* sc = wp ? need(ts, prefix, "weight_scale", {dtype::f8_e4m3}, e) : nullptr;
  const tensor_view* gs = sc ? need(ts, prefix, "weight_global_scale", {dtype::f32}, e) : nullptr;
  if (gs == nullptr) return e;
  if ((e = read_fp4_shapes(*wp, *sc, 16, rows, cols)).size() != 0) return e;
  if (!shape_is(*gs, {1}) && !gs->shape.empty()) return bad_shape(*gs, "[1]");
  const float g = get_scale(gs->data, 0, dtype::f32);
  if (!nvfp4_valid_tensor_scale(g))
    return "tensor '" + gs->name + "': global scale " + std::to_string(g) + " is outside [2^-119, 2^119]";
  w.assign(rows * cols, 0.0f);
  if (status s = nvfp4_dequantize_matrix(wp->data, sc->data, rows, cols, nvfp4_options_for(g), w.data()); !s)
    return status_text(s);
  return {};
}

inline std::string read_mxfp4(const std::string& prefix, const std::vector<tensor_view>& ts,
                              const checkpoint_options& o, std::vector<float>& w, std::size_t& rows,
                              std::size_t& cols) {
  std::string e;
  const tensor_view* wp = need(ts, prefix, "weight_packed", {dtype::u8}, e);
  const tensor_view* sc = wp ? need(ts, prefix, "weight_scale", {dtype::u8, dtype::f8_e8m0}, e) : nullptr;
  if (sc == nullptr) return e;
  if ((e = read_fp4_shapes(*wp, *sc, 32, rows, cols)).size() != 0) return e;
  w.assign(rows * cols, 0.0f);
  if (status s = mx_dequantize_matrix<mxfp4_e2m1>(wp->data, sc->data, rows, cols, o.mx, w.data()); !s)
    return status_text(s);
  return {};
}

// compressed-tensors int-quantized (channel): weight I8 [out, in], weight_scale [out, 1] (F32,
// F16 or BF16); x = q * s.
inline std::string read_int8(const std::string& prefix, const std::vector<tensor_view>& ts, std::vector<float>& w,
                             std::size_t& rows, std::size_t& cols) {
  std::string e;
  const tensor_view* wt = need(ts, prefix, "weight", {dtype::i8}, e);
  const tensor_view* sc = wt ? need(ts, prefix, "weight_scale", {dtype::f32, dtype::f16, dtype::bf16}, e) : nullptr;
  if (sc == nullptr) return e;
  if (wt->shape.size() != 2 || !sane(wt->shape[0]) || !sane(wt->shape[1]) || !sane(wt->shape[0] * wt->shape[1]))
    return bad_shape(*wt, "[out, in]");
  rows = static_cast<std::size_t>(wt->shape[0]);
  cols = static_cast<std::size_t>(wt->shape[1]);
  if (!shape_is(*sc, {rows, 1})) return bad_shape(*sc, "[" + std::to_string(rows) + ", 1]");
  w.assign(rows * cols, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    const float s = get_scale(sc->data, r, sc->type);
    if (!std::isfinite(s) || s < 0.0f)
      return "tensor '" + sc->name + "': scale " + std::to_string(s) + " of output channel " + std::to_string(r) +
             " is not a finite non-negative number";
    for (std::size_t c = 0; c < cols; ++c)
      w[r * cols + c] = static_cast<float>(static_cast<std::int8_t>(wt->data[r * cols + c])) * s;
  }
  return {};
}

}  // namespace checkpoint_detail

// The int_params quantize_linear uses for an integer format (gptq, awq, compressed_int4), so
// that a caller can compare with quantize_dequantize_int or feed a GPTQ / AWQ solver the same
// grid; an error for the other formats or for options quantize_linear rejects.
inline io_result<int_params> checkpoint_int_params(const checkpoint_options& o) {
  io_result<int_params> r;
  r.error = checkpoint_detail::check_options(o);
  if (r.ok() && !checkpoint_detail::is_integer_format(o.format))
    r.error = std::string(checkpoint_detail::format_name(o.format)) + " is not an integer format";
  if (r.ok()) r.value = checkpoint_detail::int_params_of(o);
  return r;
}

namespace checkpoint_detail {

// Why a [out, in] layer cannot be written in o.format ("" when it can); options already checked.
inline std::string shape_error(std::size_t out, std::size_t in, const checkpoint_options& o) {
  if (out == 0 || in == 0)
    return "empty layer [" + std::to_string(out) + ", " + std::to_string(in) + "]: nothing to quantize";
  if (out > (std::size_t{1} << 40) || in > (std::size_t{1} << 40) || out > (std::size_t{1} << 40) / in * 16)
    return "layer [" + std::to_string(out) + ", " + std::to_string(in) + "] is too large";
  const std::string shape = "[" + std::to_string(out) + ", " + std::to_string(in) + "]";
  auto multiple = [&](std::size_t v, std::size_t m, const char* what, const char* of) -> std::string {
    if (v % m == 0) return {};
    return std::string(what) + " " + std::to_string(v) + " of " + shape + " is not a multiple of " + of + " " +
           std::to_string(m);
  };
  std::string e;
  switch (o.format) {
    case checkpoint_format::gptq: {
      const std::size_t k = 32u / static_cast<std::size_t>(o.bits);
      if (o.group_size != 0) e = multiple(in, o.group_size, "in_features", "the group size");
      if (e.empty()) e = multiple(in, k, "in_features", "the pack factor 32/bits =");
      if (e.empty()) e = multiple(out, k, "out_features", "the qzeros pack factor 32/bits =");
      break;
    }
    case checkpoint_format::awq:
      if (o.group_size != 0) e = multiple(in, o.group_size, "in_features", "the group size");
      if (e.empty()) e = multiple(out, 8, "out_features", "the pack factor");
      break;
    case checkpoint_format::compressed_int4:
      if (o.group_size != 0) e = multiple(in, o.group_size, "in_features", "the group size");
      if (e.empty()) e = multiple(in, 32u / static_cast<std::size_t>(o.bits), "in_features", "the pack factor 32/bits =");
      break;
    case checkpoint_format::nvfp4: e = multiple(in, 16, "in_features", "the NVFP4 block size"); break;
    case checkpoint_format::mxfp4: e = multiple(in, 32, "in_features", "the MX block size"); break;
    default: break;
  }
  return e;
}

// The declarations (name, dtype, shape, byte count; no data) of the tensors quantize_linear
// writes for a [out, in] layer that shape_error accepts.
inline std::vector<tensor_view> layout_of(const std::string& prefix, std::size_t out, std::size_t in,
                                          const checkpoint_options& o) {
  using shape_t = std::vector<std::uint64_t>;
  std::vector<tensor_view> v;
  auto add = [&](const char* suffix, dtype t, shape_t shape) {
    tensor_view d;
    d.name = prefix + "." + suffix;
    d.type = t;
    d.shape = std::move(shape);
    std::uint64_t n = 0;
    element_count(d.shape, n);
    d.bytes = n * dtype_size(t);
    v.push_back(std::move(d));
  };
  const std::uint64_t O = out, I = in;
  const std::uint64_t groups = o.group_size == 0 ? 1 : I / o.group_size;
  switch (o.format) {
    case checkpoint_format::gptq: {
      const std::uint64_t k = 32u / static_cast<unsigned>(o.bits);
      add("qweight", dtype::i32, {I / k, O});
      add("qzeros", dtype::i32, {groups, O / k});
      add("scales", dtype::f16, {groups, O});
      add("g_idx", dtype::i32, {I});
      break;
    }
    case checkpoint_format::awq:
      add("qweight", dtype::i32, {I, O / 8});
      add("qzeros", dtype::i32, {groups, O / 8});
      add("scales", dtype::f16, {groups, O});
      break;
    case checkpoint_format::compressed_int4: {
      const std::uint64_t k = 32u / static_cast<unsigned>(o.bits);
      add("weight_packed", dtype::i32, {O, I / k});
      add("weight_scale", o.scale_dtype, {O, groups});
      if (!o.symmetric) add("weight_zero_point", dtype::i32, {(O + k - 1) / k, groups});
      add("weight_shape", dtype::i64, {2});
      break;
    }
    case checkpoint_format::fp8_per_tensor:
    case checkpoint_format::fp8_per_channel:
      add("weight", dtype::f8_e4m3, {O, I});
      add("weight_scale", dtype::f32, o.format == checkpoint_format::fp8_per_channel ? shape_t{O, 1} : shape_t{1});
      break;
    case checkpoint_format::nvfp4:
      add("weight_packed", dtype::u8, {O, I / 2});
      add("weight_scale", dtype::f8_e4m3, {O, I / 16});
      add("weight_global_scale", dtype::f32, {1});
      break;
    case checkpoint_format::mxfp4:
      add("weight_packed", dtype::u8, {O, I / 2});
      add("weight_scale", dtype::u8, {O, I / 32});
      break;
    case checkpoint_format::int8_per_channel:
      add("weight", dtype::i8, {O, I});
      add("weight_scale", dtype::f32, {O, 1});
      break;
  }
  return v;
}

inline std::string write_int(const std::string& prefix, const quantized_matrix& m, const checkpoint_options& o,
                             std::vector<tensor_data>& out) {
  switch (o.format) {
    case checkpoint_format::gptq: return write_gptq(prefix, m, o, out);
    case checkpoint_format::awq: return write_awq(prefix, m, out);
    case checkpoint_format::int8_per_channel: return write_int8(prefix, m, out);
    default: return write_compressed_int(prefix, m, o, out);
  }
}

}  // namespace checkpoint_detail

// The tensors quantize_linear would write for a [out, in] layer: names, dtypes, shapes and byte
// counts (data null), in the same order, without quantizing anything, so that a streaming
// writer can declare a file before the layers are quantized. Errors: quantize_linear's that do
// not depend on the weights (prefix, options, shape).
inline io_result<std::vector<tensor_view>> linear_layout(const std::string& prefix, std::size_t out, std::size_t in,
                                                         const checkpoint_options& o) {
  namespace cd = checkpoint_detail;
  io_result<std::vector<tensor_view>> r;
  std::string e = prefix.empty() ? std::string("the layer needs a name prefix") : cd::check_options(o);
  if (e.empty()) e = cd::shape_error(out, in, o);
  if (!e.empty()) {
    r.error = (prefix.empty() ? std::string("<no prefix>") : prefix) + ": " + e;
    return r;
  }
  r.value = cd::layout_of(prefix, out, in, o);
  return r;
}

// The tensors one linear layer's weight w [out, in] (row-major float32) becomes, named
// "<prefix>.<name>" as the engine expects, in the order of the table at the top of this file.
// Errors (one line starting with "<prefix>: "): an empty prefix; options the format cannot hold
// (above); an empty layer or a null w; in_features not a multiple of the group size or the
// packing factor (32/bits for gptq and compressed_int4; 16 for nvfp4, 32 for mxfp4),
// out_features not a multiple of 32/bits (gptq) or 8 (awq); NaN or Inf in w; a scale that
// overflows its storage (fp16 scales above 65504); gptq v1 with a zero-point of 0.
inline io_result<std::vector<tensor_data>> quantize_linear(const std::string& prefix, const float* w,
                                                           std::size_t out, std::size_t in,
                                                           const checkpoint_options& o) {
  namespace cd = checkpoint_detail;
  io_result<std::vector<tensor_data>> r;
  const std::string at = (prefix.empty() ? std::string("<no prefix>") : prefix) + ": ";
  auto fail = [&](const std::string& e) {
    r.value.clear();
    r.error = at + e;
    return r;
  };
  if (prefix.empty()) return fail("the layer needs a name prefix");
  if (std::string e = cd::check_options(o); !e.empty()) return fail(e);
  if (out != 0 && in != 0 && w == nullptr) return fail("null weight");
  std::string e = cd::shape_error(out, in, o);
  if (!e.empty()) return fail(e);
  switch (o.format) {
    case checkpoint_format::gptq:
    case checkpoint_format::awq:
    case checkpoint_format::compressed_int4:
    case checkpoint_format::int8_per_channel: {
      const result<quantized_matrix> m = quantized_matrix::quantize(w, out, in, cd::int_params_of(o));
      if (!m.ok()) return fail(cd::status_text(m.status));
      e = cd::write_int(prefix, m.value, o, r.value);
      break;
    }
    case checkpoint_format::fp8_per_tensor:
    case checkpoint_format::fp8_per_channel:
      e = cd::write_fp8(prefix, w, out, in, o.format == checkpoint_format::fp8_per_channel, r.value);
      break;
    case checkpoint_format::nvfp4: e = cd::write_nvfp4(prefix, w, out, in, r.value); break;
    case checkpoint_format::mxfp4: e = cd::write_mxfp4(prefix, w, out, in, o, r.value); break;
  }
  if (!e.empty()) return fail(e);
  return r;
}

// An integer format's tensors (gptq, awq, compressed_int4, int8_per_channel) from codes already
// chosen, e.g. by GPTQ (gptq_output::to_matrix()) or AWQ: the same layout as quantize_linear,
// whose integer path is export_linear(quantized_matrix::quantize(w, checkpoint_int_params(o))).
// m's grid should be checkpoint_int_params(o) (bits, groups, scale storage); the layouts'
// own checks reject what they cannot hold. Errors: quantize_linear's shape errors; a float format.
inline io_result<std::vector<tensor_data>> export_linear(const std::string& prefix, const quantized_matrix& m,
                                                         const checkpoint_options& o) {
  namespace cd = checkpoint_detail;
  io_result<std::vector<tensor_data>> r;
  std::string e = prefix.empty() ? std::string("the layer needs a name prefix") : cd::check_options(o);
  if (e.empty() && !cd::is_integer_format(o.format))
    e = std::string(cd::format_name(o.format)) + " is not an integer format";
  if (e.empty()) e = cd::shape_error(m.rows(), m.cols(), o);
  if (e.empty() && m.params().bits != cd::int_params_of(o).bits)
    e = "the codes have " + std::to_string(m.params().bits) + " bits, the format " + std::to_string(cd::int_params_of(o).bits);
  if (e.empty()) e = cd::write_int(prefix, m, o, r.value);
  if (!e.empty()) {
    r.value.clear();
    r.error = (prefix.empty() ? std::string("<no prefix>") : prefix) + ": " + e;
  }
  return r;
}

// The configuration block engines read for checkpoints of o.format, as JSON text:
//  gptq   AutoGPTQ's quantize_config.json, which is also config.json's "quantization_config"
//         (quant_method "gptq", bits, group_size (-1 per channel), sym, desc_act false,
//         static_groups, true_sequential, damp_percent, checkpoint_format "gptq" / "gptq_v2");
//  awq    config.json's "quantization_config" (quant_method "awq", bits, group_size, zero_point
//         (true: qzeros are always stored), version "gemm");
//  others config.json's "quantization_config" for compressed-tensors (quant_method
//         "compressed-tensors", format, quantization_status "compressed", config_groups.group_0
//         {targets ["Linear"], weights {...}, input_activations, output_activations, format},
//         ignore).
// An empty string for options quantize_linear rejects.
inline std::string quantization_config_json(const checkpoint_options& o) {
  using json = nlohmann::ordered_json;
  if (!checkpoint_detail::check_options(o).empty()) return {};
  json j = json::object();
  const long long group = o.group_size == 0 ? -1 : static_cast<long long>(o.group_size);
  if (o.format == checkpoint_format::gptq) {
    j["quant_method"] = "gptq";
    j["bits"] = o.bits;
    j["group_size"] = group;
    j["sym"] = o.symmetric;
    j["desc_act"] = false;
    j["static_groups"] = false;
    j["true_sequential"] = true;
    j["damp_percent"] = 0.01;
    j["checkpoint_format"] = o.gptq_version == gptq_format::v1 ? "gptq" : "gptq_v2";
  } else if (o.format == checkpoint_format::awq) {
    j["quant_method"] = "awq";
    j["bits"] = o.bits;
    j["group_size"] = group;
    j["zero_point"] = true;
    j["version"] = "gemm";
  } else {
    json weights = json::object();
    json inputs = nullptr;
    std::string fmt;
    weights["num_bits"] = 4;
    weights["type"] = "float";
    weights["symmetric"] = true;
    weights["dynamic"] = false;
    switch (o.format) {
      case checkpoint_format::compressed_int4:
        fmt = "pack-quantized";
        weights["num_bits"] = o.bits;
        weights["type"] = "int";
        weights["symmetric"] = o.symmetric;
        weights["strategy"] = o.group_size == 0 ? "channel" : "group";
        weights["group_size"] = o.group_size == 0 ? json(nullptr) : json(o.group_size);
        weights["actorder"] = nullptr;
        break;
      case checkpoint_format::fp8_per_tensor:
      case checkpoint_format::fp8_per_channel:
        fmt = "float-quantized";
        weights["num_bits"] = 8;
        weights["strategy"] = o.format == checkpoint_format::fp8_per_tensor ? "tensor" : "channel";
        weights["group_size"] = nullptr;
        if (o.fp8_dynamic_activations) {
          inputs = json::object();
          inputs["num_bits"] = 8;
          inputs["type"] = "float";
          inputs["symmetric"] = true;
          inputs["strategy"] = "token";
          inputs["dynamic"] = true;
        }
        break;
      case checkpoint_format::int8_per_channel:
        fmt = "int-quantized";
        weights["num_bits"] = 8;
        weights["type"] = "int";
        weights["strategy"] = "channel";
        weights["group_size"] = nullptr;
        if (o.fp8_dynamic_activations) {
          inputs = json::object();
          inputs["num_bits"] = 8;
          inputs["type"] = "int";
          inputs["symmetric"] = true;
          inputs["strategy"] = "token";
          inputs["dynamic"] = true;
        }
        break;
      case checkpoint_format::nvfp4:
        fmt = "nvfp4-pack-quantized";
        weights["strategy"] = "tensor_group";
        weights["group_size"] = 16;
        break;
      default:  // mxfp4
        fmt = "mxfp4-pack-quantized";
        weights["strategy"] = "group";
        weights["group_size"] = 32;
        weights["scale_dtype"] = "torch.uint8";
        break;
    }
    json group0 = json::object();
    group0["targets"] = json::array({"Linear"});
    group0["weights"] = std::move(weights);
    group0["input_activations"] = std::move(inputs);
    group0["output_activations"] = nullptr;
    group0["format"] = fmt;
    j["quant_method"] = "compressed-tensors";
    j["format"] = fmt;
    j["quantization_status"] = "compressed";
    j["config_groups"] = json::object();
    j["config_groups"]["group_0"] = std::move(group0);
    j["ignore"] = json::array();
    for (const std::string& s : o.ignore) j["ignore"].push_back(s);
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

// The float32 weight [out, in] that the tensors "<prefix>.*" of o.format stand for, as the engine
// computes it (one IEEE multiplication per element after the code and zero-point are read; lowbit's
// own dequantizers, so the result equals quantize-then-dequantize of the quantizer bit for bit).
// out and in are set from the tensors (weight_shape for compressed_int4). o supplies what the
// tensors do not say: bits and gptq_version (gptq), bits (compressed_int4), mx (mxfp4); a
// compressed_int4 layer without weight_zero_point is symmetric. GPTQ reads g_idx when present
// (act-order checkpoints). Errors (one line starting with "<prefix>: "): a tensor missing, of an
// unexpected dtype, whose bytes do not match its shape, or whose shape disagrees with the others;
// a GPTQ v1 zero-point field of all ones; a scale that cannot be decoded.
inline io_result<std::vector<float>> dequantize_linear(const std::string& prefix,
                                                       const std::vector<tensor_view>& tensors,
                                                       const checkpoint_options& o, std::size_t& out,
                                                       std::size_t& in) {
  namespace cd = checkpoint_detail;
  io_result<std::vector<float>> r;
  const std::string at = (prefix.empty() ? std::string("<no prefix>") : prefix) + ": ";
  std::string e = cd::check_options(o);
  std::size_t rows = 0, cols = 0;
  if (e.empty()) {
    switch (o.format) {
      case checkpoint_format::gptq:
      case checkpoint_format::awq:
      case checkpoint_format::compressed_int4: {
        cd::int_layer L;
        e = o.format == checkpoint_format::gptq  ? cd::read_gptq(prefix, tensors, o, L)
            : o.format == checkpoint_format::awq ? cd::read_awq(prefix, tensors, L)
                                                 : cd::read_compressed_int(prefix, tensors, o, L);
        if (e.empty()) e = cd::finish_int(L, r.value);
        rows = L.out;
        cols = L.in;
        break;
      }
      case checkpoint_format::fp8_per_tensor:
      case checkpoint_format::fp8_per_channel:
        e = cd::read_fp8(prefix, tensors, o.format == checkpoint_format::fp8_per_channel, r.value, rows, cols);
        break;
      case checkpoint_format::nvfp4: e = cd::read_nvfp4(prefix, tensors, r.value, rows, cols); break;
      case checkpoint_format::mxfp4: e = cd::read_mxfp4(prefix, tensors, o, r.value, rows, cols); break;
      case checkpoint_format::int8_per_channel: e = cd::read_int8(prefix, tensors, r.value, rows, cols); break;
    }
  }
  if (!e.empty()) {
    r.value.clear();
    r.error = at + e;
    return r;
  }
  out = rows;
  in = cols;
  return r;
}

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_CHECKPOINT_HPP
