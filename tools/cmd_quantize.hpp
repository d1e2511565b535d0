// lowbit quantize IN OUT --scheme S [--method rtn|gptq|awq --calib DIR] : a quantized checkpoint.
//
// OUT ending in .safetensors: every weight matrix whose shape the scheme's checkpoint layout can
// hold is quantized and written through io::quantize_linear / io::export_linear (checkpoint.hpp:
// the engines' conventions, defined once), named "<prefix>.<name>" with prefix the weight's name
// without its trailing ".weight"; every other tensor is copied unchanged; the metadata gets the
// layout's "quantization_config" (io::quantization_config_json). With --method gptq|awq and the
// layer's activations in DIR, GPTQ (hessian_accumulator + gptq_quantize) or AWQ (activation_stats
// + awq_quantize) choose the codes; other layers fall back to round to nearest.
//
// OUT ending in .gguf (--scheme q4_0|q8_0|mxfp4|f16|bf16): 2-D float weights whose cols are a
// multiple of 32 become ggml blocks (io::gguf_quantize), other float tensors are copied as
// F32/F16/BF16, the rest is skipped; written with io::gguf_writer.
//
// Both outputs are streamed: all tensors are declared first (their shapes follow from the
// layout), then each is read from the input's memory map, quantized, written, and its input pages
// released (tensor_file::release) before the next one, so memory holds one tensor at a time.
#ifndef LOWBIT_TOOL_CMD_QUANTIZE_HPP
#define LOWBIT_TOOL_CMD_QUANTIZE_HPP

#include <lowbit/io/checkpoint.hpp>
#include <lowbit/io/gguf.hpp>
#include <lowbit/io/npy.hpp>
#include <lowbit/io/safetensors.hpp>
#include <lowbit/io/tensor.hpp>
#include <lowbit/lowbit.hpp>
#include <lowbit/transforms/activation_stats.hpp>
#include <lowbit/transforms/awq.hpp>
#include <lowbit/transforms/gptq.hpp>
#include <lowbit/transforms/hessian.hpp>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "input_file.hpp"
#include "schemes.hpp"

namespace lowbit_tool {

namespace quantize {

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The GGUF schemes: a ggml type for the weight matrices.
struct gguf_scheme {
  const char* name;
  io::ggml_type type;
  const char* description;
};
inline const std::vector<gguf_scheme>& gguf_schemes() {
  static const std::vector<gguf_scheme> all = {
      {"q4_0", io::ggml_type::q4_0, "ggml Q4_0: 4-bit, one fp16 scale per 32"},
      {"q8_0", io::ggml_type::q8_0, "ggml Q8_0: 8-bit, one fp16 scale per 32"},
      {"mxfp4", io::ggml_type::mxfp4, "ggml MXFP4: E2M1, one E8M0 scale per 32"},
      {"f16", io::ggml_type::f16, "IEEE half"},
      {"bf16", io::ggml_type::bf16, "bfloat16"},
  };
  return all;
}
inline const gguf_scheme* find_gguf_scheme(const std::string& name) {
  for (const gguf_scheme& g : gguf_schemes())
    if (name == g.name) return &g;
  return nullptr;
}
inline std::string gguf_scheme_names() {
  std::string s;
  for (const gguf_scheme& g : gguf_schemes()) s += fmt::format("{}{}", s.empty() ? "" : ", ", g.name);
  return s;
}

// A weight matrix of the input: [out, in] in the checkpoint convention, stored as is (out-in) or
// transposed (in-out: TF.js dense kernels, y = x @ W, and 1x1 convolution kernels [1, 1, in, out]).
struct matrix_shape {
  std::size_t out = 0, in = 0;
  bool transposed = false;
};

// Whether t is a weight matrix to quantize; else why not.
inline std::string weight_matrix(const io::tensor_view& t, bool in_out, matrix_shape& m) {
  if (!in_out && !ends_with(t.name, "weight")) return "name does not end in 'weight'";
  if (!is_float_type(t.type)) return fmt::format("{} is not a floating-point type", io::dtype_name(t.type));
  const std::size_t d = t.shape.size();
  bool leading_ones = d >= 2;
  for (std::size_t i = 0; i + 2 < d; ++i) leading_ones = leading_ones && t.shape[i] == 1;
  if (d != 2 && !(in_out && leading_ones)) return fmt::format("{}-D, not a matrix", d);
  const auto a = static_cast<std::size_t>(t.shape[d - 2]), b = static_cast<std::size_t>(t.shape[d - 1]);
  if (in_out) {
    if (a < 2 || b < 2) return "fewer than 2 input or output channels";
    m = {b, a, true};
  } else {
    if (a < 2 || b == 0) return "fewer than 2 rows";
    m = {a, b, false};
  }
  return "";
}

// The weight as float [out, in], transposing an [in, out] one.
inline io::io_status read_weight(const io::tensor_view& t, const matrix_shape& m, std::vector<float>& w,
                                 std::vector<float>& scratch) {
  if (!m.transposed) return io::to_float(t, w);
  if (io::io_status s = io::to_float(t, scratch); !s.ok()) return s;
  w.resize(m.out * m.in);
  for (std::size_t i = 0; i < m.in; ++i)
    for (std::size_t o = 0; o < m.out; ++o) w[o * m.in + i] = scratch[i * m.out + o];
  return {};
}

// The output names' prefix: the weight's name without its trailing ".weight".
inline std::string prefix_of(const std::string& name) {
  return ends_with(name, ".weight") && name.size() > 7 ? name.substr(0, name.size() - 7) : name;
}

// ----- calibration activations ------------------------------------------------------------------

// Where each weight's activations are: DIR/index.json (scripts/fetch-fixture.sh's: "layers", each
// with "weight" and "file"), else DIR/<name with [^A-Za-z0-9_.-] replaced by '.'>.npy.
struct calibration {
  std::string dir;
  std::map<std::string, std::string> files;  // from index.json
  bool indexed = false;

  static bool load(const std::string& dir, calibration& c, std::string& error) {
    c.dir = dir;
    std::ifstream f(dir + "/index.json");
    if (!f) {
      std::ifstream d(dir);
      if (!d) {
        error = "cannot open the directory";
        return false;
      }
      return true;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("layers") || !j["layers"].is_array()) {
      error = "index.json: not JSON with a \"layers\" array";
      return false;
    }
    for (const nlohmann::json& l : j["layers"]) {
      if (!l.is_object() || !l.contains("weight") || !l.contains("file") || !l["weight"].is_string() ||
          !l["file"].is_string()) {
        error = "index.json: a layer without \"weight\" and \"file\" strings";
        return false;
      }
      c.files[l["weight"].get<std::string>()] = l["file"].get<std::string>();
    }
    c.indexed = true;
    return true;
  }

  static std::string file_name(const std::string& weight) {
    std::string s = weight;
    for (char& ch : s)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.' || ch == '-')) ch = '.';
    return s + ".npy";
  }

  // The activation file of a weight ("" when there is none; `why` says so).
  std::string path_for(const std::string& weight, std::string& why) const {
    if (indexed) {
      const auto it = files.find(weight);
      if (it == files.end()) {
        why = "no activations in " + dir + "/index.json";
        return "";
      }
      return dir + "/" + it->second;
    }
    const std::string p = dir + "/" + file_name(weight);
    std::ifstream f(p);
    if (!f) {
      why = "no activations (" + p + " not found)";
      return "";
    }
    return p;
  }
};

// What happens to one input tensor.
struct plan_entry {
  const io::tensor_view* view = nullptr;
  bool quantized = false;
  matrix_shape m;
  std::string prefix;                   // quantized: the output names' prefix
  std::vector<io::tensor_view> outputs; // quantized, safetensors: the layout's declarations
  std::string why_copied;               // not quantized: why
  std::string calib;                    // gptq/awq: the activation file, or ""
  std::string why_rtn;                  // gptq/awq without activations: why
  // GGUF
  bool skipped = false;                 // not written at all
  io::ggml_type gguf_type = io::ggml_type::f32;
  bool convert_to_f32 = false;          // a float dtype GGUF has no type for (F64, FP8)
};

inline std::string output_names(const plan_entry& e) {
  std::string s;
  for (const io::tensor_view& o : e.outputs)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", o.name.substr(e.prefix.size() + 1));
  return s;
}

inline std::string sqnr_text(const float* ref, const float* got, std::size_t n) {
  const lowbit::result<lowbit::error_sums> err = lowbit::error_statistics(ref, n, got, n);
  if (!err.ok()) return "SQNR - dB";
  return fmt::format("SQNR {:.2f} dB, max err {:.4g}", lowbit::sqnr_db(err.value), err.value.max_abs);
}

// The activations of a layer with `in` input channels: a float .npy [tokens, in].
inline std::string read_activations(const std::string& path, std::size_t in, std::vector<float>& x,
                                    std::size_t& tokens) {
  io::io_result<io::npy_file> f = io::npy_file::open(path);
  if (!f.ok()) return f.error;
  const io::tensor_view& t = f.value.tensor();
  if (t.shape.size() != 2 || t.shape[1] != in || t.shape[0] == 0)
    return fmt::format("{}: shape {}, expected [tokens, {}]", path, shape_text(t.shape), in);
  if (!is_float_type(t.type)) return fmt::format("{}: {} is not a floating-point type", path, io::dtype_name(t.type));
  if (io::io_status s = io::to_float(t, x); !s.ok()) return path + ": " + s.error;
  tokens = static_cast<std::size_t>(t.shape[0]);
  return "";
}

}  // namespace quantize

inline void quantize_usage(std::FILE* to) {
  fmt::print(to,
             "usage: lowbit quantize IN OUT --scheme S [--method rtn|gptq|awq --calib DIR [--damp F]]\n"
             "                       [--layout out-in|in-out] [--quiet]\n"
             "\n"
             "Writes OUT, a quantized copy of IN (.safetensors, .npy, model.json, .gguf), tensor by tensor.\n"
             "OUT ending in .safetensors: every 2-D floating-point weight (name ending in 'weight'; with\n"
             "--layout in-out every float matrix) whose shape fits the scheme is stored as the scheme's\n"
             "engines load it (tensors '<prefix>.<name>', prefix = the name without '.weight'), with the\n"
             "layout's quantization_config in the metadata; every other tensor is copied unchanged.\n"
             "OUT ending in .gguf: weight matrices whose cols are a multiple of 32 become ggml blocks;\n"
             "other float tensors are copied as F32/F16/BF16, the rest is skipped.\n"
             "Prints, per tensor, what was done and the error of the quantized weight.\n"
             "\n"
             "options:\n"
             "  --scheme S       for .safetensors, one of:\n");
  for (const scheme& s : all_schemes()) fmt::print(to, "                     {:<15} {}\n", s.name, s.layout);
  fmt::print(to, "                   for .gguf, one of:\n");
  for (const quantize::gguf_scheme& g : quantize::gguf_schemes())
    fmt::print(to, "                     {:<15} {}\n", g.name, g.description);
  fmt::print(to,
             "  --method M       rtn (round to nearest, the default), gptq or awq (integer schemes, .safetensors)\n"
             "  --calib DIR      gptq/awq: float32 .npy activations [tokens, in] of the layers, found through\n"
             "                   DIR/index.json (entries with 'weight' and 'file') or named after the weight\n"
             "                   (characters outside [A-Za-z0-9_.-] replaced by '.') plus '.npy'; a layer\n"
             "                   without activations is rounded to nearest (said per layer)\n"
             "  --damp F         gptq: the dampening fraction of mean(diag H) (default 0.01)\n"
             "  --layout L       out-in: weights are [out, in] (the checkpoint convention, the default);\n"
             "                   in-out: [in, out] (y = x @ W, TF.js; the default for a model.json input),\n"
             "                   transposed to [out, in] before quantizing\n"
             "  --quiet          print only the summary line\n"
             "\n"
             "exit codes: 0 ok, 1 bad usage, 2 IN or an activation file cannot be read, OUT cannot be\n"
             "written, or a weight cannot be quantized (NaN/Inf; the partial OUT is removed)\n");
}

inline int run_quantize(int argc, char** argv) {
  using namespace quantize;
  arguments args;
  if (!args.parse("quantize", argc, argv, {"scheme", "method", "calib", "damp", "layout"}, {"quiet"}))
    return exit_usage;
  if (args.help()) {
    quantize_usage(stdout);
    return exit_ok;
  }
  if (args.positional().size() != 2) {
    print_error("quantize: expected IN and OUT (see lowbit quantize --help)");
    return exit_usage;
  }
  const std::string in = args.positional()[0], out = args.positional()[1];
  const bool to_gguf = ends_with(out, ".gguf");
  if (!to_gguf && !ends_with(out, ".safetensors")) {
    print_error(fmt::format("quantize: {}: OUT must end in .safetensors or .gguf", out));
    return exit_usage;
  }
  const std::string method = args.get("method", "rtn");
  if (method != "rtn" && method != "gptq" && method != "awq") {
    print_error(fmt::format("quantize: unknown method '{}'; expected rtn, gptq or awq", method));
    return exit_usage;
  }
  if (method != "rtn" && to_gguf) {
    print_error(fmt::format("quantize: --method {} writes .safetensors only (GGUF output is round to nearest)", method));
    return exit_usage;
  }
  if (method != "rtn" && !args.has("calib")) {
    print_error(fmt::format("quantize: --method {} needs --calib DIR (the layers' activations)", method));
    return exit_usage;
  }
  if (method == "rtn" && args.has("calib")) {
    print_error("quantize: --calib is for --method gptq|awq");
    return exit_usage;
  }
  double damp = 0.01;
  if (args.has("damp")) {
    char* end = nullptr;
    const std::string v = args.get("damp");
    damp = std::strtod(v.c_str(), &end);
    if (v.empty() || end == nullptr || *end != '\0' || !std::isfinite(damp) || damp < 0.0) {
      print_error(fmt::format("quantize: --damp '{}' is not a number >= 0", v));
      return exit_usage;
    }
  }
  if (!args.has("scheme")) {
    print_error(fmt::format("quantize: --scheme is required; one of: {}", to_gguf ? gguf_scheme_names() : scheme_names()));
    return exit_usage;
  }
  const scheme* s = to_gguf ? nullptr : find_scheme(args.get("scheme"));
  const gguf_scheme* g = to_gguf ? find_gguf_scheme(args.get("scheme")) : nullptr;
  if (s == nullptr && g == nullptr) {
    print_error(fmt::format("quantize: unknown scheme '{}' for {} output; expected one of: {}", args.get("scheme"),
                            to_gguf ? ".gguf" : ".safetensors", to_gguf ? gguf_scheme_names() : scheme_names()));
    return exit_usage;
  }
  const io::checkpoint_options ckpt = s != nullptr ? s->checkpoint() : io::checkpoint_options{};
  if (method != "rtn" && !io::checkpoint_int_params(ckpt).ok()) {
    print_error(fmt::format("quantize: --method {} needs an integer scheme (int8, int4-*), not {}", method, s->name));
    return exit_usage;
  }
  if (in == out) {
    print_error(fmt::format("quantize: {}: IN and OUT are the same file", in));
    return exit_usage;
  }
  std::string layout = args.get("layout", "");
  if (!layout.empty() && layout != "out-in" && layout != "in-out") {
    print_error(fmt::format("quantize: --layout '{}'; expected out-in or in-out", layout));
    return exit_usage;
  }
  const bool quiet = args.has("quiet");

  io::io_result<input_file> file = input_file::open(in);
  if (!file.ok()) {
    print_file_error(in, file.error);
    return exit_bad_input;
  }
  if (layout.empty()) layout = file.value.kind() == io::tensor_file_kind::tfjs ? "in-out" : "out-in";
  const bool in_out = layout == "in-out";
  calibration calib;
  if (method != "rtn") {
    std::string why;
    if (!calibration::load(args.get("calib"), calib, why)) {
      print_file_error(args.get("calib"), why);
      return exit_bad_input;
    }
  }
  const std::vector<io::tensor_view>& tensors = file.value.tensors();

  // ----- the plan: every output tensor, declared before any data -----
  std::vector<plan_entry> plan;
  std::uint64_t in_bytes = 0;
  std::vector<std::string> ignore;  // weight matrices left in float (compressed-tensors' "ignore")
  for (const io::tensor_view& t : tensors) {
    plan_entry e;
    e.view = &t;
    in_bytes += t.bytes;
    std::string why = weight_matrix(t, in_out, e.m);
    if (to_gguf) {
      if (why.empty() && g->type != io::ggml_type::f16 && g->type != io::ggml_type::bf16 && e.m.in % 32 != 0)
        why = fmt::format("cols {} not a multiple of 32", e.m.in);
      if (t.name.size() > 63) {
        e.skipped = true;
        e.why_copied = "name longer than GGUF's 63 bytes";
      } else if (why.empty()) {
        e.quantized = true;
        e.gguf_type = g->type;
      } else if (t.type == io::dtype::f32 || t.type == io::dtype::f16 || t.type == io::dtype::bf16) {
        e.gguf_type = t.type == io::dtype::f32 ? io::ggml_type::f32
                      : t.type == io::dtype::f16 ? io::ggml_type::f16 : io::ggml_type::bf16;
        e.why_copied = why;
      } else if (is_float_type(t.type) && t.shape.size() <= 4 && t.elements() != 0) {
        e.gguf_type = io::ggml_type::f32;
        e.convert_to_f32 = true;
        e.why_copied = why + "; " + io::dtype_name(t.type) + " written as F32";
      } else {
        e.skipped = true;
        e.why_copied = t.shape.size() > 4 ? "more than 4 dimensions"
                       : t.elements() == 0 ? "empty"
                                           : fmt::format("{} has no GGUF type here (F32, F16, BF16, blocks)",
                                                         io::dtype_name(t.type));
      }
      plan.push_back(std::move(e));
      continue;
    }
    if (why.empty()) why = export_limit(*s, e.m.out, e.m.in);
    if (why.empty()) {
      e.prefix = prefix_of(t.name);
      io::io_result<std::vector<io::tensor_view>> l = io::linear_layout(e.prefix, e.m.out, e.m.in, ckpt);
      if (!l.ok()) {
        why = l.error;
      } else {
        e.quantized = true;
        e.outputs = std::move(l.value);
        if (method != "rtn") e.calib = calib.path_for(t.name, e.why_rtn);
        if (method == "awq" && !e.calib.empty()) {
          io::tensor_view sv;
          sv.name = e.prefix + ".awq_scales";
          sv.type = io::dtype::f32;
          sv.shape = {e.m.in};
          sv.bytes = e.m.in * 4;
          e.outputs.push_back(sv);
        }
      }
    }
    if (!e.quantized) {
      e.why_copied = why;
      matrix_shape unused;
      if (weight_matrix(t, in_out, unused).empty()) ignore.push_back(prefix_of(t.name));
    }
    plan.push_back(std::move(e));
  }

  std::size_t quantized = 0, skipped = 0;
  std::uint64_t out_bytes = 0;
  std::vector<float> w, scratch, dec;
  auto summary = [&]() {
    fmt::print("{}: {} tensors quantized with {}{}, {} copied{}; {} -> {} of tensor data\n", out, quantized,
               to_gguf ? g->name : s->name, method == "rtn" ? "" : " (" + method + ")", plan.size() - quantized - skipped,
               skipped != 0 ? fmt::format(", {} skipped", skipped) : std::string(),
               bytes_text(static_cast<double>(in_bytes)), bytes_text(static_cast<double>(out_bytes)));
  };

  // ----- GGUF -----
  if (to_gguf) {
    io::gguf_metadata meta;
    std::string name;
    if (file.value.kind() == io::tensor_file_kind::gguf) {  // the architecture's own metadata, kept
      io::io_result<io::gguf_file> src = io::gguf_file::open(in);
      if (!src.ok()) {
        print_file_error(in, src.error);
        return exit_bad_input;
      }
      for (const auto& kv : src.value.metadata())
        if (kv.first != "general.alignment" && kv.first != "general.quantization_version" &&
            kv.first != "general.file_type")
          meta.push_back(kv);
      for (const io::gguf_tensor_info& ti : src.value.tensor_infos())
        if (ti.type != io::ggml_type::f32 && ti.type != io::ggml_type::f16 && ti.type != io::ggml_type::bf16) {
          ++skipped;
          if (!quiet)
            fmt::print("  {}  {} {}: skipped (block-quantized in IN; not requantized)\n", ti.name,
                       shape_text(ti.shape()), io::ggml_type_name(ti.type));
        }
    }
    bool has_name = false;
    for (const auto& kv : meta) has_name = has_name || kv.first == "general.name";
    if (!has_name) {
      std::string stem = in.substr(in.find_last_of('/') == std::string::npos ? 0 : in.find_last_of('/') + 1);
      if (const std::size_t dot = stem.rfind('.'); dot != std::string::npos && dot != 0) stem = stem.substr(0, dot);
      meta.emplace_back("general.name", io::gguf_value::str(stem));
    }
    meta.emplace_back("general.quantization_version", io::gguf_value::u32(2));
    std::vector<io::gguf_tensor_desc> descs;
    for (const plan_entry& e : plan) {
      if (e.skipped) continue;
      if (e.quantized) {
        descs.push_back({e.view->name, {e.m.out, e.m.in}, e.gguf_type});
      } else {
        descs.push_back({e.view->name, e.view->shape, e.gguf_type});
      }
    }
    io::io_result<io::gguf_writer> writer = io::gguf_writer::create(out, meta, descs);
    if (!writer.ok()) {
      print_file_error(out, writer.error);
      return exit_bad_input;
    }
    auto abandon = [&](const std::string& path, const std::string& problem) {
      writer.value = io::gguf_writer();
      std::remove(out.c_str());
      print_file_error(path, problem);
      return exit_bad_input;
    };
    for (const plan_entry& e : plan) {
      const io::tensor_view& t = *e.view;
      if (e.skipped) {
        ++skipped;
        if (!quiet) fmt::print("  {}  {} {}: skipped ({})\n", t.name, shape_text(t.shape), io::dtype_name(t.type), e.why_copied);
        continue;
      }
      if (!e.quantized && !e.convert_to_f32) {
        if (io::io_status st = writer.value.write_tensor(t.data, t.bytes); !st.ok()) return abandon(out, st.error);
        file.value.release(t);
        out_bytes += t.bytes;
        if (!quiet) fmt::print("  {}  {} {}: copied ({})\n", t.name, shape_text(t.shape), io::dtype_name(t.type), e.why_copied);
        continue;
      }
      if (!e.quantized) {
        if (io::io_status r = io::to_float(t, w); !r.ok()) return abandon(in, r.error);
        file.value.release(t);
        const auto* p = reinterpret_cast<const unsigned char*>(w.data());
        if (io::io_status st = writer.value.write_tensor(p, w.size() * 4); !st.ok()) return abandon(out, st.error);
        out_bytes += w.size() * 4;
        if (!quiet) fmt::print("  {}  {} {}: copied as F32 ({})\n", t.name, shape_text(t.shape), io::dtype_name(t.type), e.why_copied);
        continue;
      }
      if (io::io_status r = read_weight(t, e.m, w, scratch); !r.ok()) return abandon(in, r.error);
      file.value.release(t);
      io::io_result<io::gguf_tensor_out> q = io::gguf_quantize(t.name, w.data(), e.m.out, e.m.in, e.gguf_type);
      if (!q.ok()) return abandon(in, q.error);
      if (io::io_status st = writer.value.write_tensor(q.value.bytes.data(), q.value.bytes.size()); !st.ok())
        return abandon(out, st.error);
      out_bytes += q.value.bytes.size();
      ++quantized;
      if (!quiet) {
        std::string err = "";
        dec.assign(w.size(), 0.0f);
        lowbit::status ds = lowbit::errc::bad_argument;
        const std::size_t n = w.size();
        if (e.gguf_type == io::ggml_type::q4_0) {
          std::vector<lowbit::ggml_block_q4_0> b(n / 32);
          std::memcpy(b.data(), q.value.bytes.data(), q.value.bytes.size());
          ds = lowbit::ggml_dequantize_q4_0(b.data(), e.m.out, e.m.in, dec.data());
        } else if (e.gguf_type == io::ggml_type::q8_0) {
          std::vector<lowbit::ggml_block_q8_0> b(n / 32);
          std::memcpy(b.data(), q.value.bytes.data(), q.value.bytes.size());
          ds = lowbit::ggml_dequantize_q8_0(b.data(), e.m.out, e.m.in, dec.data());
        } else if (e.gguf_type == io::ggml_type::f16 || e.gguf_type == io::ggml_type::bf16) {
          io::tensor_view v{t.name, e.gguf_type == io::ggml_type::f16 ? io::dtype::f16 : io::dtype::bf16,
                            {e.m.out, e.m.in}, q.value.bytes.data(), q.value.bytes.size()};
          ds = io::to_float(v, dec).ok() ? lowbit::status{} : lowbit::status{lowbit::errc::bad_argument};
        }
        err = ds.ok() ? ": " + sqnr_text(w.data(), dec.data(), n) : "";
        fmt::print("  {}  {} {} -> {} {}{}{}\n", t.name, shape_text(t.shape), io::dtype_name(t.type),
                   io::ggml_type_name(e.gguf_type), shape_text({e.m.out, e.m.in}),
                   e.m.transposed ? " (transposed from [in, out])" : "", err);
      }
    }
    if (io::io_status f = writer.value.finish(); !f.ok()) return abandon(out, f.error);
    summary();
    return exit_ok;
  }

  // ----- safetensors -----
  std::vector<io::tensor_view> declared;
  std::set<std::string> names;
  for (const plan_entry& e : plan) {
    if (e.quantized) {
      for (const io::tensor_view& o : e.outputs) declared.push_back(o);
    } else {
      declared.push_back({e.view->name, e.view->type, e.view->shape, nullptr, e.view->bytes});
    }
  }
  for (const io::tensor_view& d : declared)
    if (!names.insert(d.name).second) {
      print_error(fmt::format("quantize: {}: the output would hold two tensors named '{}' (an input tensor has the name "
                              "of a {} output)",
                              in, d.name, s->name));
      return exit_bad_input;
    }
  // The input's metadata (safetensors' __metadata__), what lowbit did, and the engines' config.
  std::map<std::string, std::string> metadata = file.value.metadata();
  io::checkpoint_options config = ckpt;
  config.ignore = ignore;
  nlohmann::ordered_json qc = nlohmann::ordered_json::parse(io::quantization_config_json(config), nullptr, false);
  if (method == "gptq" && qc.is_object() && qc.contains("damp_percent")) qc["damp_percent"] = damp;
  metadata["format"] = "pt";
  metadata["lowbit.scheme"] = s->name;
  metadata["lowbit.method"] = method;
  metadata["lowbit.layout"] = s->layout;
  metadata["lowbit.weight_layout"] = layout;
  metadata["quantization_config"] = qc.dump();
  io::io_result<io::safetensors_writer> writer = io::safetensors_writer::create(out, declared, metadata);
  if (!writer.ok()) {
    print_file_error(out, writer.error);
    return exit_bad_input;
  }
  auto abandon = [&](const std::string& path, const std::string& problem) {
    writer.value = io::safetensors_writer();
    std::remove(out.c_str());
    print_file_error(path, problem);
    return exit_bad_input;
  };
  const lowbit::int_params grid = method == "rtn" ? lowbit::int_params{} : io::checkpoint_int_params(ckpt).value;

  for (plan_entry& e : plan) {
    const io::tensor_view& t = *e.view;
    if (!e.quantized) {
      if (io::io_status st = writer.value.write(t.data, t.bytes); !st.ok()) return abandon(out, st.error);
      file.value.release(t);
      out_bytes += t.bytes;
      if (!quiet) fmt::print("  {}  {} {}: copied ({})\n", t.name, shape_text(t.shape), io::dtype_name(t.type), e.why_copied);
      continue;
    }
    if (io::io_status r = read_weight(t, e.m, w, scratch); !r.ok()) return abandon(in, r.error);
    file.value.release(t);
    const std::size_t rows = e.m.out, cols = e.m.in;
    std::vector<io::tensor_data> produced;
    std::string what;           // per-layer text after the scheme
    std::vector<float> awq_s;   // AWQ's per-input-channel scales
    if (!e.calib.empty()) {
      std::vector<float> x;
      std::size_t tokens = 0;
      if (std::string err = read_activations(e.calib, cols, x, tokens); !err.empty()) return abandon(e.calib, err);
      lowbit::result<lowbit::quantized_matrix> qm;
      if (method == "gptq") {
        lowbit::result<lowbit::hessian_accumulator> acc = lowbit::hessian_accumulator::create(cols);
        if (acc.ok()) acc.status = acc.value.add(x.data(), tokens, cols);
        lowbit::gptq_options go;
        go.percdamp = damp;
        lowbit::result<lowbit::gptq_output> gq;
        if (acc.ok()) gq = lowbit::gptq_quantize(w.data(), acc.value, rows, cols, grid, go);
        const lowbit::status st = !acc.ok() ? acc.status : gq.status;
        if (!st.ok()) return abandon(in, fmt::format("tensor '{}': GPTQ failed: {}", t.name, st.message()));
        qm = gq.value.to_matrix();
        const lowbit::gptq_report& rep = gq.value.report;
        what = fmt::format("output error on {} calibration rows: RTN {:.4e} -> GPTQ {:.4e}{}", tokens,
                           rep.relative_error_rtn, rep.relative_error,
                           rep.fell_back ? " (Cholesky failed: rounded to nearest)" : "");
      } else {
        lowbit::activation_stats_options so;
        so.reservoir_capacity = tokens;  // every calibration row scores the search
        lowbit::result<lowbit::activation_stats> stats = lowbit::activation_stats::create(cols, so);
        if (stats.ok()) stats.status = stats.value.add(x.data(), tokens, cols);
        const lowbit::linear_weight layer{w.data(), rows};
        lowbit::result<lowbit::awq_output> aq;
        if (stats.ok())
          aq = lowbit::awq_quantize(stats.value, lowbit::span<const lowbit::linear_weight>(&layer, 1), cols, grid);
        const lowbit::status st = !stats.ok() ? stats.status : aq.status;
        if (!st.ok()) return abandon(in, fmt::format("tensor '{}': AWQ failed: {}", t.name, st.message()));
        qm.value = std::move(aq.value.layers.values()[0].weight);
        const lowbit::span<const float> sc = aq.value.scales.values();
        awq_s.assign(sc.begin(), sc.end());
        what = fmt::format("output error on {} calibration rows: RTN {:.4e} -> AWQ {:.4e} (alpha {:.2f})", tokens,
                           aq.value.layers.values()[0].error_rtn, aq.value.layers.values()[0].error, aq.value.alpha);
      }
      if (!qm.ok()) return abandon(in, fmt::format("tensor '{}': {}", t.name, qm.status.message()));
      io::io_result<std::vector<io::tensor_data>> ex = io::export_linear(e.prefix, qm.value, ckpt);
      if (!ex.ok()) return abandon(in, ex.error);
      produced = std::move(ex.value);
    } else {
      io::io_result<std::vector<io::tensor_data>> q = io::quantize_linear(e.prefix, w.data(), rows, cols, ckpt);
      if (!q.ok()) {
        bool finite = true;
        for (float v : w) finite = finite && std::isfinite(v);
        return abandon(in, fmt::format("tensor '{}': cannot quantize with {}: {}; nothing written", t.name, s->name,
                                       finite ? q.error : "the tensor holds NaN or Inf"));
      }
      produced = std::move(q.value);
      if (method != "rtn") {
        what = "RTN: " + e.why_rtn;
      }
    }
    // The weight the written tensors stand for, as the engine decodes it.
    std::vector<io::tensor_view> views;
    for (const io::tensor_data& d : produced) views.push_back(d.view());
    std::size_t r = 0, c = 0;
    io::io_result<std::vector<float>> back = io::dequantize_linear(e.prefix, views, ckpt, r, c);
    if (!back.ok()) return abandon(out, "internal error: " + back.error);
    if (!awq_s.empty())  // AWQ stored Q(W diag(s)): the layer computes with it / s
      for (std::size_t o = 0; o < rows; ++o)
        for (std::size_t i = 0; i < cols; ++i) back.value[o * cols + i] /= awq_s[i];
    if (e.outputs.size() == produced.size() + 1) {  // AWQ's scales, declared last
      io::tensor_data sd;
      sd.name = e.prefix + ".awq_scales";
      sd.type = io::dtype::f32;
      sd.shape = {cols};
      if (awq_s.empty()) awq_s.assign(cols, 1.0f);
      sd.bytes.resize(cols * 4);
      std::memcpy(sd.bytes.data(), awq_s.data(), cols * 4);
      produced.push_back(std::move(sd));
    }
    for (std::size_t k = 0; k < produced.size(); ++k) {
      if (k >= e.outputs.size() || produced[k].name != e.outputs[k].name ||
          produced[k].bytes.size() != e.outputs[k].bytes)
        return abandon(out, fmt::format("tensor '{}': internal error: not the declared layout", produced[k].name));
      if (io::io_status st = writer.value.write(produced[k].bytes.data(), produced[k].bytes.size()); !st.ok())
        return abandon(out, st.error);
      out_bytes += produced[k].bytes.size();
    }
    ++quantized;
    if (!quiet) {
      fmt::print("  {}  {} {} -> {}{} ({}): {}{}{}\n", t.name, shape_text(t.shape), io::dtype_name(t.type), s->name,
                 e.calib.empty() ? "" : " " + method, output_names(e), what, what.empty() ? "" : "; weight ",
                 sqnr_text(w.data(), back.value.data(), w.size()));
    }
  }
  if (io::io_status f = writer.value.finish(); !f.ok()) return abandon(out, f.error);
  summary();
  return exit_ok;
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_CMD_QUANTIZE_HPP
