// lowbit roofline --gpu a100|h100|h200 --params N [--batch B] : the weight-traffic roofline of one
// decode step (lesson 000 section 5; docs/lesson.md; examples/lesson_roofline.cpp), for BF16,
// W8A8 (INT8/FP8), W4A16 INT4 g128, MXFP4 and NVFP4. The arithmetic is lowbit's (estimates.hpp);
// bytes per parameter come from each scheme's *_storage_for on a representative matrix, so the
// scales are counted.
#ifndef LOWBIT_TOOL_CMD_ROOFLINE_HPP
#define LOWBIT_TOOL_CMD_ROOFLINE_HPP

#include <lowbit/lowbit.hpp>

#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"

namespace lowbit_tool {

namespace roofline {

// The lesson's table 5.2: HBM bandwidth (GB/s) and dense tensor peaks (TFLOP/s).
struct gpu {
  const char* key;
  const char* name;
  double bandwidth;  // GB/s
  double peak16;     // TFLOP/s, FP16/BF16 dense
  double peak8;      // TFLOP/s, INT8 (A100) / FP8 (H100, H200) dense
  const char* peak8_kind;
};

inline const std::vector<gpu>& gpus() {
  static const std::vector<gpu> all = {
      {"a100", "A100 80GB", 2039, 312, 624, "INT8"},
      {"h100", "H100 SXM", 3350, 989, 1979, "FP8/INT8"},
      // The same chip as H100 SXM (same peaks), with HBM3e: more bandwidth.
      {"h200", "H200", 4800, 989, 1979, "FP8/INT8"},
  };
  return all;
}

inline const gpu* find_gpu(const std::string& key) {
  std::string k;
  for (char c : key) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const gpu& g : gpus())
    if (k == g.key) return &g;
  return nullptr;
}

// One row of the table: a format, its bytes per parameter (scales included) and the peak its
// matrix products run at.
struct format_row {
  std::string name;
  std::string accounting;  // how the bytes were counted
  double bytes_per_param = 0;
  bool eight_bit_compute = false;  // runs at the 8-bit peak (W8A8); else at the 16-bit one
};

inline double per_param(const lowbit::result<lowbit::storage>& s) {
  return s.ok() && s.value.elements != 0
             ? static_cast<double>(s.value.total_bytes()) / static_cast<double>(s.value.elements)
             : 0.0;
}

// Bytes per parameter of each format on a rows x cols weight; false when a shape does not fit a
// format (the message says which).
inline bool format_rows(std::size_t rows, std::size_t cols, std::vector<format_row>& out, std::string& error) {
  out.clear();
  out.push_back({"BF16", "2 bytes", 2.0, false});
  const double fp8 = per_param(lowbit::fp8_storage_for(lowbit::fp8_presets::per_tensor(), rows, cols));
  const double w4 = per_param(lowbit::int_storage_for(lowbit::int_presets::gptq(4, 128), rows, cols));
  const double mx = per_param(lowbit::mx_storage_for<lowbit::mxfp4_e2m1>(rows, cols, lowbit::mx_presets::ocp()));
  const double nv = per_param(lowbit::nvfp4_storage_for(rows, cols));
  if (fp8 == 0 || w4 == 0 || mx == 0 || nv == 0) {
    error = fmt::format("roofline: --shape {}x{} does not fit every format (cols must be a multiple of 128)", rows, cols);
    return false;
  }
  out.push_back({"W8A8 (INT8/FP8)", "1 byte + one fp32 scale per tensor", fp8, true});
  out.push_back({"W4A16 INT4 g128", "4 bits + one fp16 scale per 128", w4, false});
  out.push_back({"MXFP4 (W4A16)", "4 bits + one E8M0 scale per 32", mx, false});
  out.push_back({"NVFP4 (W4A16)", "4 bits + one E4M3 scale per 16 + fp32 per tensor", nv, false});
  return true;
}

// "8e9", "8000000000", "8B", "70b", "7.5M", "1.2T": a parameter count.
inline bool parse_params(const std::string& text, double& out) {
  if (text.empty()) return false;
  double mult = 1.0;
  std::string t = text;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
  if (last == 'K' || last == 'M' || last == 'B' || last == 'G' || last == 'T') {
    mult = last == 'K' ? 1e3 : last == 'M' ? 1e6 : (last == 'B' || last == 'G') ? 1e9 : 1e12;
    t.pop_back();
  }
  double v = 0;
  if (!parse_positive(t, v)) return false;
  out = v * mult;
  return true;
}

inline double value_of(const lowbit::result<double>& r) { return r.ok() ? r.value : 0.0; }

}  // namespace roofline

inline void roofline_usage(std::FILE* to) {
  fmt::print(to,
             "usage: lowbit roofline --gpu a100|h100|h200 --params N [--batch B] [--shape ROWSxCOLS]\n"
             "\n"
             "The weight-traffic roofline of one decode step (lesson 000 section 5): for BF16, W8A8\n"
             "(INT8/FP8), W4A16 INT4 g128, MXFP4 and NVFP4, the bytes per parameter (scales included),\n"
             "the weight bytes of N parameters, the time to read them and to compute at batch B, the\n"
             "operational intensity 2B / bytes-per-parameter, the ridge points peak / bandwidth, the batch\n"
             "at which each format becomes compute-bound, and the W4A16 / W8A8 crossover B*.\n"
             "\n"
             "options:\n"
             "  --gpu G          a100 (A100 80GB: 2039 GB/s, 312 / 624 TFLOP/s), h100 (H100 SXM: 3350 GB/s,\n"
             "                   989 / 1979), h200 (H200: 4800 GB/s, 989 / 1979, the H100 chip with HBM3e)\n"
             "  --params N       parameters: 8e9, 8000000000, 8B, 70B, 7.5M\n"
             "  --batch B        sequences decoded together (default 1)\n"
             "  --shape RxC      the weight shape scales are counted on (default 4096x4096)\n"
             "\n"
             "exit codes: 0 ok, 1 bad usage\n");
}

inline int run_roofline(int argc, char** argv) {
  using namespace roofline;
  arguments args;
  if (!args.parse("roofline", argc, argv, {"gpu", "params", "batch", "shape"}, {})) return exit_usage;
  if (args.help()) {
    roofline_usage(stdout);
    return exit_ok;
  }
  if (!args.positional().empty()) {
    print_error(fmt::format("roofline: unexpected argument '{}' (see lowbit roofline --help)", args.positional()[0]));
    return exit_usage;
  }
  if (!args.has("gpu") || !args.has("params")) {
    print_error("roofline: --gpu and --params are required (see lowbit roofline --help)");
    return exit_usage;
  }
  const gpu* g = find_gpu(args.get("gpu"));
  if (g == nullptr) {
    print_error(fmt::format("roofline: unknown GPU '{}'; expected a100, h100 or h200", args.get("gpu")));
    return exit_usage;
  }
  double params = 0, batch = 1;
  if (!parse_params(args.get("params"), params)) {
    print_error(fmt::format("roofline: --params '{}' is not a positive count (8e9, 8B, 70B)", args.get("params")));
    return exit_usage;
  }
  if (args.has("batch") && !parse_positive(args.get("batch"), batch)) {
    print_error(fmt::format("roofline: --batch '{}' is not a positive number", args.get("batch")));
    return exit_usage;
  }
  std::size_t rows = 4096, cols = 4096;
  if (args.has("shape")) {
    const std::string s = args.get("shape");
    const std::size_t x = s.find_first_of("xX");
    if (x == std::string::npos || !parse_count(s.substr(0, x), rows) || !parse_count(s.substr(x + 1), cols)) {
      print_error(fmt::format("roofline: --shape '{}' is not ROWSxCOLS", s));
      return exit_usage;
    }
  }
  std::vector<format_row> formats;
  std::string error;
  if (!format_rows(rows, cols, formats, error)) {
    print_error(error);
    return exit_usage;
  }

  const double ridge16 = value_of(lowbit::ridge_point(g->peak16, g->bandwidth));
  const double ridge8 = value_of(lowbit::ridge_point(g->peak8, g->bandwidth));
  fmt::print("Decode roofline, weights only: {} ({:g} GB/s; dense {:g} TFLOP/s 16-bit, {:g} TFLOP/s {})\n", g->name,
             g->bandwidth, g->peak16, g->peak8, g->peak8_kind);
  fmt::print("{:.0f} parameters ({:.2f} B), batch {:g}; scales counted on a {}x{} weight\n\n", params, params / 1e9, batch,
             rows, cols);
  fmt::print("Ridge points (peak / bandwidth): 16-bit {:.1f} FLOP/B, 8-bit {:.1f} FLOP/B\n\n", ridge16, ridge8);

  const std::string at_b = fmt::format("B={:g}", batch);
  fmt::print("{:<17} {:>11} {:>10} {:>9} {:>10} {:>9} {:>7} {:>13} {:>8}\n", "", "bytes/param", "weights", "read",
             "compute", "FLOP/B", "", "compute-bound", "bound");
  fmt::print("{:<17} {:>11} {:>10} {:>9} {:>10} {:>9} {:>7} {:>13} {:>8}\n", "format", "(scales in)", "GB", "ms", "ms",
             "at " + at_b, "peak", "from B", "at " + at_b);
  for (const format_row& f : formats) {
    const double peak = f.eight_bit_compute ? g->peak8 : g->peak16;
    const double bytes = f.bytes_per_param * params;
    const double read_s = value_of(lowbit::weight_read_seconds(bytes, g->bandwidth));
    const double compute_s = 2.0 * params * batch / (peak * 1e12);
    const double intensity = value_of(lowbit::decode_intensity(batch, f.bytes_per_param));
    const double from_b = value_of(lowbit::compute_bound_batch(f.bytes_per_param, peak, g->bandwidth));
    fmt::print("{:<17} {:>11.6f} {:>10.3f} {:>9.3f} {:>10.3f} {:>9.2f} {:>7} {:>13.1f} {:>8}\n", f.name,
               f.bytes_per_param, bytes / 1e9, read_s * 1e3, compute_s * 1e3, intensity,
               f.eight_bit_compute ? "8-bit" : "16-bit", from_b, compute_s > read_s ? "compute" : "memory");
  }
  fmt::print("\nBytes per parameter:\n");
  for (const format_row& f : formats) fmt::print("  {:<17} {}\n", f.name, f.accounting);

  const format_row& w8 = formats[1];
  const format_row& w4 = formats[2];
  const double b_star = value_of(lowbit::compute_bound_batch(w8.bytes_per_param, g->peak16, g->bandwidth));
  const double w4_bound = value_of(lowbit::compute_bound_batch(w4.bytes_per_param, g->peak16, g->bandwidth));
  fmt::print("\nW4A16 / W8A8 crossover B* = {:.1f}\n", b_star);
  fmt::print("  W4A16 reaches the 16-bit peak at B = {:.1f}. W8A8, still bandwidth-bound at {:g} byte/param,\n"
             "  reaches the same 16-bit throughput at B* = {:.1f}; above B* it keeps going up to its 8-bit peak\n"
             "  (compute-bound from B = {:.1f}), which W4A16 (dequantized to 16-bit) cannot use.\n"
             "  At B = {:g}: {}.\n",
             w4_bound, w8.bytes_per_param, b_star,
             value_of(lowbit::compute_bound_batch(w8.bytes_per_param, g->peak8, g->bandwidth)), batch,
             batch < b_star ? "W4A16 moves fewer bytes and is the faster choice"
                            : "W8A8 is the faster choice (its 8-bit tensor cores)");
  fmt::print("\nCaveats (the lesson's):\n"
             "  - weights-only traffic: activations and KV-cache reads are left out; the KV cache grows with\n"
             "    batch and context and can dominate long sequences;\n"
             "  - no kernel efficiency: real kernels reach a fraction of peak bandwidth and FLOP/s, and\n"
             "    dequantization costs instructions; either can move or reverse the crossover;\n"
             "  - A100, H100 and H200 have no FP4 tensor cores: MXFP4 and NVFP4 are counted as weight-only\n"
             "    (dequantized to 16-bit), at the 16-bit peak.\n");
  return exit_ok;
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_CMD_ROOFLINE_HPP
