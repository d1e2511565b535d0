// lowbit quantize IN OUT --scheme S [--method rtn] : a quantized safetensors checkpoint.
//
// Every 2-D floating-point tensor whose name ends in "weight" and whose shape the scheme's
// export can hold is quantized with round-to-nearest and written as the tensors that scheme's
// engines load (schemes.hpp); every other tensor is copied unchanged. The output is streamed:
// all tensors are declared first (their shapes follow from the scheme), then each is read from
// the input's memory map, quantized and written before the next one, so memory holds one tensor
// at a time whatever the size of the file.
#ifndef LOWBIT_TOOL_CMD_QUANTIZE_HPP
#define LOWBIT_TOOL_CMD_QUANTIZE_HPP

#include <lowbit/io/safetensors.hpp>
#include <lowbit/io/tensor.hpp>
#include <lowbit/lowbit.hpp>

#include <cstdio>
#include <map>
#include <set>
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

// What happens to one input tensor.
struct plan_entry {
  const io::tensor_view* view = nullptr;
  bool quantized = false;
  std::string base;                // the name without its trailing "weight"
  std::vector<out_tensor> outputs; // quantized: the export's tensors (shapes only, until written)
  std::string why_copied;          // not quantized: why
};

inline plan_entry plan_tensor(const io::tensor_view& t, const scheme& s) {
  plan_entry e;
  e.view = &t;
  if (!ends_with(t.name, "weight")) {
    e.why_copied = "name does not end in 'weight'";
  } else if (!is_float_type(t.type)) {
    e.why_copied = fmt::format("{} is not a floating-point type", io::dtype_name(t.type));
  } else if (t.shape.size() != 2) {
    e.why_copied = fmt::format("{}-D, not a matrix", t.shape.size());
  } else if (t.shape[0] < 2 || t.shape[1] == 0) {
    e.why_copied = "fewer than 2 rows";
  } else if (std::string why = export_limit(s, static_cast<std::size_t>(t.shape[0]), static_cast<std::size_t>(t.shape[1]));
             !why.empty()) {
    e.why_copied = why;
  } else {
    e.quantized = true;
    e.base = t.name.substr(0, t.name.size() - 6);
    e.outputs = s.export_plan(static_cast<std::size_t>(t.shape[0]), static_cast<std::size_t>(t.shape[1]));
  }
  return e;
}

inline std::string output_names(const plan_entry& e) {
  std::string s;
  for (const out_tensor& o : e.outputs) s += fmt::format("{}{}", s.empty() ? "" : ", ", o.suffix);
  return s;
}

}  // namespace quantize

inline void quantize_usage(std::FILE* to) {
  fmt::print(to,
             "usage: lowbit quantize IN OUT --scheme S [--method rtn] [--quiet]\n"
             "\n"
             "Writes OUT (a .safetensors file), a quantized copy of IN (.safetensors, .npy, model.json):\n"
             "every 2-D floating-point tensor whose name ends in 'weight' and whose shape fits the scheme\n"
             "is quantized with round-to-nearest and stored as the scheme's engines load it; every other\n"
             "tensor is copied unchanged. Prints, per tensor, what was done and the SQNR of the quantized\n"
             "weight. The file is streamed tensor by tensor: memory holds one tensor at a time.\n"
             "\n"
             "options:\n"
             "  --scheme S       one of:\n");
  for (const scheme& s : all_schemes()) fmt::print(to, "                     {:<15} {}\n", s.name, s.layout);
  fmt::print(to,
             "  --method rtn     round to nearest (the default and, for now, the only method)\n"
             "  --method gptq|awq, --calib DIR, and OUT ending in .gguf: not yet supported (exit 1)\n"
             "  --quiet          print only the summary line\n"
             "\n"
             "exit codes: 0 ok, 1 bad usage or not yet supported, 2 IN cannot be read, OUT cannot be\n"
             "written, or a weight cannot be quantized (NaN/Inf; the partial OUT is removed)\n");
}

inline int run_quantize(int argc, char** argv) {
  using namespace quantize;
  arguments args;
  if (!args.parse("quantize", argc, argv, {"scheme", "method", "calib"}, {"quiet"})) return exit_usage;
  if (args.help()) {
    quantize_usage(stdout);
    return exit_ok;
  }
  if (args.positional().size() != 2) {
    print_error("quantize: expected IN and OUT (see lowbit quantize --help)");
    return exit_usage;
  }
  const std::string in = args.positional()[0], out = args.positional()[1];
  const std::string method = args.get("method", "rtn");
  if (method == "gptq" || method == "awq") {
    print_error(fmt::format("quantize: --method {} is not yet supported (only rtn)", method));
    return exit_usage;
  }
  if (method != "rtn") {
    print_error(fmt::format("quantize: unknown method '{}'; expected rtn (gptq and awq are not yet supported)", method));
    return exit_usage;
  }
  if (args.has("calib")) {
    print_error("quantize: --calib is not yet supported (it is for --method gptq|awq)");
    return exit_usage;
  }
  if (!args.has("scheme")) {
    print_error(fmt::format("quantize: --scheme is required; one of: {}", scheme_names()));
    return exit_usage;
  }
  const scheme* s = find_scheme(args.get("scheme"));
  if (s == nullptr) {
    print_error(fmt::format("quantize: unknown scheme '{}'; expected one of: {}", args.get("scheme"), scheme_names()));
    return exit_usage;
  }
  if (ends_with(out, ".gguf")) {
    print_error(fmt::format("quantize: {}: GGUF output is not yet supported (write .safetensors)", out));
    return exit_usage;
  }
  if (!ends_with(out, ".safetensors")) {
    print_error(fmt::format("quantize: {}: OUT must end in .safetensors", out));
    return exit_usage;
  }
  if (in == out) {
    print_error(fmt::format("quantize: {}: IN and OUT are the same file", in));
    return exit_usage;
  }
  const bool quiet = args.has("quiet");

  io::io_result<input_file> file = input_file::open(in);
  if (!file.ok()) {
    print_file_error(in, file.error);
    return exit_bad_input;
  }
  const std::vector<io::tensor_view>& tensors = file.value.tensors();

  // Declare every output tensor.
  std::vector<plan_entry> plan;
  std::vector<io::tensor_view> declared;
  std::set<std::string> names;
  std::uint64_t in_bytes = 0;
  for (const io::tensor_view& t : tensors) {
    plan.push_back(plan_tensor(t, *s));
    const plan_entry& e = plan.back();
    in_bytes += t.bytes;
    if (e.quantized) {
      for (const out_tensor& o : e.outputs)
        declared.push_back({e.base + o.suffix, o.type, o.shape, nullptr, o.byte_size()});
    } else {
      declared.push_back({t.name, t.type, t.shape, nullptr, t.bytes});
    }
  }
  for (const io::tensor_view& d : declared)
    if (!names.insert(d.name).second) {
      print_error(fmt::format("quantize: {}: the output would hold two tensors named '{}' (an input tensor has the name "
                              "of a {} output)",
                              in, d.name, s->name));
      return exit_bad_input;
    }
  // The input's metadata (safetensors' __metadata__), and what lowbit did.
  std::map<std::string, std::string> metadata = file.value.metadata();
  metadata["format"] = "pt";
  metadata["lowbit.scheme"] = s->name;
  metadata["lowbit.method"] = "rtn";
  metadata["lowbit.layout"] = s->layout;
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

  // Quantize and write, one tensor at a time.
  std::size_t quantized = 0;
  std::uint64_t out_bytes = 0;
  std::vector<float> src, dst;
  for (plan_entry& e : plan) {
    const io::tensor_view& t = *e.view;
    if (!e.quantized) {
      if (io::io_status w = writer.value.write(t.data, t.bytes); !w.ok()) return abandon(out, w.error);
      out_bytes += t.bytes;
      if (!quiet) fmt::print("  {}  {} {}: copied ({})\n", t.name, shape_text(t.shape), io::dtype_name(t.type), e.why_copied);
      continue;
    }
    if (io::io_status r = io::to_float(t, src); !r.ok()) return abandon(in, r.error);
    const auto rows = static_cast<std::size_t>(t.shape[0]), cols = static_cast<std::size_t>(t.shape[1]);
    dst.assign(src.size(), 0.0f);
    std::vector<out_tensor> produced;
    const lowbit::status st = s->export_tensors(src.data(), rows, cols, produced, dst.data());
    if (!st.ok()) {
      const char* why = st.code() == lowbit::errc::non_finite_input ? "the tensor holds NaN or Inf" : st.message();
      return abandon(in, fmt::format("tensor '{}': cannot quantize with {}: {}; nothing written", t.name, s->name, why));
    }
    for (std::size_t k = 0; k < produced.size(); ++k) {
      if (produced[k].bytes.size() != e.outputs[k].byte_size())
        return abandon(out, fmt::format("tensor '{}{}': internal error: {} bytes produced, {} declared", e.base,
                                        produced[k].suffix, produced[k].bytes.size(), e.outputs[k].byte_size()));
      if (io::io_status w = writer.value.write(produced[k].bytes.data(), produced[k].bytes.size()); !w.ok())
        return abandon(out, w.error);
      out_bytes += produced[k].bytes.size();
    }
    ++quantized;
    if (!quiet) {
      const lowbit::result<lowbit::error_sums> err = lowbit::error_statistics(src.data(), src.size(), dst.data(), dst.size());
      fmt::print("  {}  {} {} -> {} ({}): SQNR {} dB, max err {:.4g}\n", t.name, shape_text(t.shape),
                 io::dtype_name(t.type), s->name, output_names(e),
                 err.ok() ? fmt::format("{:.2f}", lowbit::sqnr_db(err.value)) : std::string("-"),
                 err.ok() ? err.value.max_abs : 0.0);
    }
  }
  if (io::io_status f = writer.value.finish(); !f.ok()) return abandon(out, f.error);
  fmt::print("{}: {} tensors quantized with {}, {} copied; {} -> {} of tensor data\n", out, quantized, s->name,
             plan.size() - quantized, bytes_text(static_cast<double>(in_bytes)), bytes_text(static_cast<double>(out_bytes)));
  return exit_ok;
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_CMD_QUANTIZE_HPP
