// lowbit report FILE [--schemes LIST] [--json | --csv] [--limit N] : what each scheme costs, in
// bytes and in error, on every matrix of a tensor file.
//
// Every floating-point tensor with at least two dimensions and two rows is read as a matrix
// [prod(shape[:-1]), shape[-1]] (weights are [out, in]: groups and blocks run along in). For each
// scheme: its bytes (scales included), bits per weight, SQNR, MSE and largest absolute error of
// the values its codes decode to. Tensors are measured in parallel (one per core, an atomic work
// index); results are collected by file index, so the output does not depend on the schedule.
#ifndef LOWBIT_TOOL_CMD_REPORT_HPP
#define LOWBIT_TOOL_CMD_REPORT_HPP

#include <lowbit/io/tensor.hpp>
#include <lowbit/lowbit.hpp>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "input_file.hpp"
#include "schemes.hpp"

namespace lowbit_tool {

namespace report {

struct scheme_result {
  bool applies = false;
  std::string reason;  // why not, when !applies
  lowbit::storage st;
  double sqnr_db = 0, mse = 0, max_abs = 0;
  double ref_sq = 0, err_sq = 0;  // for the pooled SQNR of the summary
};

struct tensor_result {
  std::size_t index = 0;  // in the file
  const io::tensor_view* view = nullptr;
  std::size_t rows = 0, cols = 0;
  std::string error;  // a tensor that could not be read
  std::vector<scheme_result> schemes;
};

struct skipped {
  const io::tensor_view* view;
  std::string reason;
};

// Why a tensor is not measured, or "" when it is.
inline std::string skip_reason(const io::tensor_view& t) {
  if (!is_float_type(t.type)) return fmt::format("{} is not a floating-point type", io::dtype_name(t.type));
  if (t.shape.size() < 2) return fmt::format("{}-D, not a matrix", t.shape.size());
  if (t.elements() == 0) return "empty";
  if (t.rows() < 2) return "fewer than 2 rows";
  if (t.rows() > SIZE_MAX / (t.cols() == 0 ? 1 : t.cols()) / sizeof(float)) return "too large for this machine";
  return "";
}

inline void measure(const input_file& file, tensor_result& r, const std::vector<const scheme*>& schemes,
                    std::atomic<std::uint64_t>& done) {
  const io::tensor_view& t = *r.view;
  std::vector<float> src;
  const io::io_status read = io::to_float(t, src);
  file.release(t);  // its float copy is all that is needed now: memory stays bounded on large files
  if (const io::io_status& s = read; !s.ok()) {
    r.error = s.error;
    done += static_cast<std::uint64_t>(schemes.size()) * t.elements();
    return;
  }
  std::vector<float> dst(src.size());
  const std::size_t n = src.size();
  r.schemes.resize(schemes.size());
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    scheme_result& out = r.schemes[k];
    const scheme& s = *schemes[k];
    out.reason = scheme_limit(s, r.rows, r.cols);
    if (out.reason.empty()) {
      const lowbit::status st = s.round_trip(src.data(), r.rows, r.cols, dst.data());
      if (!st.ok()) {
        out.reason = st.code() == lowbit::errc::non_finite_input ? "the tensor holds NaN or Inf" : st.message();
      } else {
        const lowbit::result<lowbit::error_sums> e = lowbit::error_statistics(src.data(), n, dst.data(), n);
        if (!e.ok()) {
          out.reason = e.status.code() == lowbit::errc::non_finite_input ? "the tensor holds NaN or Inf"
                                                                          : e.status.message();
        } else {
          out.applies = true;
          out.st = s.storage(r.rows, r.cols).value;
          out.sqnr_db = lowbit::sqnr_db(e.value);
          out.mse = lowbit::mse(e.value);
          out.max_abs = e.value.max_abs;
          out.ref_sq = e.value.ref_sq;
          out.err_sq = e.value.err_sq;
        }
      }
    }
    done += t.elements();
  }
}

// The sort key: the first scheme's SQNR; tensors where it does not apply, or that failed, last.
inline double sort_key(const tensor_result& r) {
  if (!r.error.empty() || r.schemes.empty() || !r.schemes[0].applies) return std::numeric_limits<double>::infinity();
  return r.schemes[0].sqnr_db;
}

inline std::string duration_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

// The progress line on stderr: bar, percent, tensors done, elapsed and ETA.
inline void draw_progress(double fraction, std::size_t tensors_done, std::size_t tensors, double elapsed, bool final) {
  constexpr int width = 30;
  const int filled = static_cast<int>(fraction * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  const std::string eta = fraction > 0.0 && !final ? duration_text(elapsed * (1.0 - fraction) / fraction) : "-";
  fmt::print(stderr, "\r[{}] {:3.0f}%  {}/{} tensors  {} elapsed  ETA {}{}", bar, fraction * 100.0, tensors_done, tensors,
             duration_text(elapsed), eta, final ? "\n" : "");
  std::fflush(stderr);
}

// Runs measure() over every tensor on `threads` threads, with a progress line when asked.
inline void measure_all(const input_file& file, std::vector<tensor_result>& results, const std::vector<const scheme*>& schemes,
                        std::size_t threads, bool progress) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};
  std::atomic<std::uint64_t> done{0};
  std::uint64_t total = 0;
  for (const tensor_result& r : results) total += r.view->elements() * schemes.size();
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= results.size()) return;
      measure(file, results[i], schemes, done);
      ++finished;
    }
  };
  threads = std::max<std::size_t>(1, std::min(threads, results.size()));
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  if (!progress) {
    worker();
  } else {
    // The calling thread draws the progress line; the pool does the work.
    pool.emplace_back(worker);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    while (finished.load() < results.size()) {
      draw_progress(total == 0 ? 1.0 : static_cast<double>(done.load()) / static_cast<double>(total), finished.load(),
                    results.size(), elapsed(), false);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    draw_progress(1.0, results.size(), results.size(), elapsed(), true);
  }
  for (std::thread& t : pool) t.join();
}

// The summary of one scheme over the file.
struct scheme_summary {
  std::size_t tensors = 0, not_applicable = 0;
  std::uint64_t params = 0;
  std::uint64_t bytes = 0;
  double weighted_sqnr_sum = 0;  // sum of params x SQNR over finite SQNRs
  std::uint64_t weighted_params = 0;
  double ref_sq = 0, err_sq = 0;

  double bits_per_weight() const { return params == 0 ? 0.0 : 8.0 * static_cast<double>(bytes) / static_cast<double>(params); }
  // The parameter-weighted mean of the tensors' SQNR in dB (tensors with an exact round trip,
  // SQNR +inf, are left out of it).
  double weighted_sqnr() const {
    return weighted_params == 0 ? std::numeric_limits<double>::quiet_NaN()
                                : weighted_sqnr_sum / static_cast<double>(weighted_params);
  }
  // The SQNR of the file as one signal: sum of squares over sum of squared errors.
  double pooled_sqnr() const {
    if (err_sq == 0.0) return ref_sq == 0.0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(ref_sq / err_sq);
  }
};

inline std::vector<scheme_summary> summarize(const std::vector<tensor_result>& results, std::size_t count) {
  std::vector<scheme_summary> s(count);
  for (const tensor_result& r : results) {
    if (!r.error.empty()) continue;
    for (std::size_t k = 0; k < count; ++k) {
      const scheme_result& x = r.schemes[k];
      if (!x.applies) {
        ++s[k].not_applicable;
        continue;
      }
      const std::uint64_t n = x.st.elements;
      ++s[k].tensors;
      s[k].params += n;
      s[k].bytes += x.st.total_bytes();
      if (std::isfinite(x.sqnr_db)) {
        s[k].weighted_sqnr_sum += static_cast<double>(n) * x.sqnr_db;
        s[k].weighted_params += n;
      }
      s[k].ref_sq += x.ref_sq;
      s[k].err_sq += x.err_sq;
    }
  }
  return s;
}

// A number for JSON: NaN as null, infinities as null too (JSON has neither).
inline nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

inline std::string db_text(double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.2f}", v);
}

}  // namespace report

inline void report_usage(std::FILE* to) {
  fmt::print(to,
             "usage: lowbit report FILE [--schemes LIST] [--json | --csv] [--limit N] [--sort sqnr|file]\n"
             "                     [--threads N] [--progress | --no-progress] [--fail-below DB]\n"
             "\n"
             "For every floating-point tensor of FILE with at least 2 dimensions and 2 rows (an N-D tensor\n"
             "is read as [prod(shape[:-1]), shape[-1]]): its shape and, for each scheme, the bytes a\n"
             "checkpoint stores (scales included), bits per weight, SQNR (dB), MSE and largest absolute\n"
             "error after a round trip. The worst tensors (lowest SQNR of the first scheme) come first;\n"
             "a summary over the file follows (SQNR weighted by parameters, and pooled). Schemes that do\n"
             "not fit a shape are shown as n/a with the reason. FILE: .safetensors, .npy, model.json.\n"
             "\n"
             "options:\n"
             "  --schemes LIST   comma-separated scheme names, or 'all' (the default):\n");
  for (const scheme& s : all_schemes()) fmt::print(to, "                     {:<15} {}\n", s.name, s.description);
  fmt::print(to,
             "  --json           the report as JSON on stdout\n"
             "  --csv            one line per tensor and scheme as CSV on stdout\n"
             "  --limit N        list only the N worst tensors (the summary still covers every tensor)\n"
             "  --sort sqnr|file worst first (default) or in file order\n"
             "  --threads N      tensors measured at once (default: the machine's cores)\n"
             "  --progress       show the progress line on stderr even when it is not a terminal or the\n"
             "                   file is small (default: on a terminal, for files over 64 MiB of tensors)\n"
             "  --no-progress    never show it\n"
             "  --fail-below DB  exit 3 when a tensor's SQNR under the first scheme is below DB\n"
             "\n"
             "exit codes: 0 ok, 1 bad usage, 2 FILE cannot be read, 3 --fail-below found a tensor below DB\n");
}

inline int run_report(int argc, char** argv) {
  using namespace report;
  arguments args;
  if (!args.parse("report", argc, argv, {"schemes", "limit", "sort", "threads", "fail-below"},
                  {"json", "csv", "progress", "no-progress"}))
    return exit_usage;
  if (args.help()) {
    report_usage(stdout);
    return exit_ok;
  }
  if (args.positional().size() != 1) {
    print_error(args.positional().empty() ? "report: no FILE given (see lowbit report --help)"
                                          : "report: one FILE at a time (see lowbit report --help)");
    return exit_usage;
  }
  if (args.has("json") && args.has("csv")) {
    print_error("report: --json and --csv exclude each other");
    return exit_usage;
  }
  // Schemes, in the order given: the first one sorts.
  std::vector<const scheme*> schemes;
  const std::string list = args.get("schemes", "all");
  if (list == "all") {
    for (const scheme& s : all_schemes()) schemes.push_back(&s);
  } else {
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      const std::string name = list.substr(start, comma - start);
      const scheme* s = find_scheme(name);
      if (s == nullptr) {
        print_error(fmt::format("report: unknown scheme '{}'; expected one of: {}", name, scheme_names()));
        return exit_usage;
      }
      if (std::find(schemes.begin(), schemes.end(), s) == schemes.end()) schemes.push_back(s);
      start = comma + 1;
    }
  }
  std::size_t limit = SIZE_MAX;
  if (args.has("limit") && !parse_count(args.get("limit"), limit)) {
    print_error(fmt::format("report: --limit '{}' is not a count >= 1", args.get("limit")));
    return exit_usage;
  }
  const std::string sort = args.get("sort", "sqnr");
  if (sort != "sqnr" && sort != "file") {
    print_error(fmt::format("report: --sort '{}': expected sqnr or file", sort));
    return exit_usage;
  }
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  if (args.has("threads") && !parse_count(args.get("threads"), threads)) {
    print_error(fmt::format("report: --threads '{}' is not a count >= 1", args.get("threads")));
    return exit_usage;
  }
  double fail_below = -std::numeric_limits<double>::infinity();
  if (args.has("fail-below")) {
    char* end = nullptr;
    const std::string v = args.get("fail-below");
    fail_below = std::strtod(v.c_str(), &end);
    if (v.empty() || end == nullptr || *end != '\0' || !std::isfinite(fail_below)) {
      print_error(fmt::format("report: --fail-below '{}' is not a number of dB", v));
      return exit_usage;
    }
  }

  const std::string path = args.positional()[0];
  io::io_result<input_file> file = input_file::open(path);
  if (!file.ok()) {
    print_file_error(path, file.error);
    return exit_bad_input;
  }
  const std::vector<io::tensor_view>& tensors = file.value.tensors();

  std::vector<tensor_result> results;
  std::vector<skipped> skips;
  std::uint64_t float_bytes = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string why = skip_reason(tensors[i]);
    if (!why.empty()) {
      skips.push_back({&tensors[i], why});
      continue;
    }
    tensor_result r;
    r.index = i;
    r.view = &tensors[i];
    r.rows = static_cast<std::size_t>(tensors[i].rows());
    r.cols = static_cast<std::size_t>(tensors[i].cols());
    results.push_back(std::move(r));
    float_bytes += tensors[i].bytes;
  }
  const bool progress = !args.has("no-progress") &&
                        (args.has("progress") || (::isatty(STDERR_FILENO) == 1 && float_bytes > (64u << 20)));
  measure_all(file.value, results, schemes, threads, progress);

  for (const tensor_result& r : results)
    if (!r.error.empty()) {
      print_file_error(path, r.error);
      return exit_bad_input;
    }
  const std::vector<scheme_summary> summary = summarize(results, schemes.size());
  std::uint64_t params = 0;
  for (const tensor_result& r : results) params += r.view->elements();

  if (sort == "sqnr")
    std::stable_sort(results.begin(), results.end(),
                     [](const tensor_result& a, const tensor_result& b) { return sort_key(a) < sort_key(b); });
  const std::size_t listed = std::min(limit, results.size());
  bool below = false;
  for (const tensor_result& r : results)
    if (!r.schemes.empty() && r.schemes[0].applies && r.schemes[0].sqnr_db < fail_below) below = true;

  if (args.has("json")) {
    nlohmann::ordered_json j;
    j["file"] = path;
    j["sort"] = sort == "sqnr" ? fmt::format("sqnr_db of {}, lowest first", schemes[0]->name) : "file order";
    nlohmann::ordered_json js = nlohmann::ordered_json::array();
    for (const scheme* s : schemes) js.push_back({{"name", s->name}, {"description", s->description}});
    j["schemes"] = js;
    nlohmann::ordered_json jt = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < listed; ++i) {
      const tensor_result& r = results[i];
      nlohmann::ordered_json t;
      t["name"] = r.view->name;
      t["index"] = r.index;
      t["dtype"] = io::dtype_name(r.view->type);
      t["shape"] = r.view->shape;
      t["rows"] = r.rows;
      t["cols"] = r.cols;
      t["params"] = r.view->elements();
      nlohmann::ordered_json per = nlohmann::ordered_json::object();
      for (std::size_t k = 0; k < schemes.size(); ++k) {
        const scheme_result& x = r.schemes[k];
        if (!x.applies) {
          per[schemes[k]->name] = {{"applies", false}, {"reason", x.reason}};
          continue;
        }
        per[schemes[k]->name] = {{"applies", true},
                                 {"bytes", x.st.total_bytes()},
                                 {"bits_per_weight", x.st.bits_per_weight()},
                                 {"sqnr_db", json_number(x.sqnr_db)},
                                 {"mse", json_number(x.mse)},
                                 {"max_abs_error", json_number(x.max_abs)}};
      }
      t["schemes"] = per;
      jt.push_back(t);
    }
    j["tensors"] = jt;
    nlohmann::ordered_json jsk = nlohmann::ordered_json::array();
    for (const skipped& s : skips)
      jsk.push_back({{"name", s.view->name},
                     {"dtype", io::dtype_name(s.view->type)},
                     {"shape", s.view->shape},
                     {"reason", s.reason}});
    j["skipped"] = jsk;
    nlohmann::ordered_json sum;
    sum["tensors"] = results.size();
    sum["params"] = params;
    nlohmann::ordered_json ss = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      const scheme_summary& s = summary[k];
      ss[schemes[k]->name] = {{"tensors", s.tensors},
                              {"not_applicable", s.not_applicable},
                              {"params", s.params},
                              {"bytes", s.bytes},
                              {"bits_per_weight", json_number(s.params == 0 ? NAN : s.bits_per_weight())},
                              {"sqnr_db_weighted", json_number(s.weighted_sqnr())},
                              {"sqnr_db_pooled", json_number(s.pooled_sqnr())}};
    }
    sum["schemes"] = ss;
    j["summary"] = sum;
    fmt::print("{}\n", j.dump(2));
    return below ? exit_check_failed : exit_ok;
  }

  if (args.has("csv")) {
    fmt::print("index,tensor,dtype,shape,rows,cols,scheme,applies,reason,bytes,bits_per_weight,sqnr_db,mse,max_abs_error\n");
    for (std::size_t i = 0; i < listed; ++i) {
      const tensor_result& r = results[i];
      std::string shape;
      for (std::size_t d = 0; d < r.view->shape.size(); ++d) shape += fmt::format("{}{}", d == 0 ? "" : "x", r.view->shape[d]);
      for (std::size_t k = 0; k < schemes.size(); ++k) {
        const scheme_result& x = r.schemes[k];
        fmt::print("{},{},{},{},{},{},{},", r.index, csv_field(r.view->name), io::dtype_name(r.view->type), shape, r.rows,
                   r.cols, schemes[k]->name);
        if (!x.applies) {
          fmt::print("0,{},,,,,\n", csv_field(x.reason));
        } else {
          fmt::print("1,,{},{:.6g},{},{:.6g},{:.6g}\n", x.st.total_bytes(), x.st.bits_per_weight(), db_text(x.sqnr_db), x.mse,
                     x.max_abs);
        }
      }
    }
    return below ? exit_check_failed : exit_ok;
  }

  // The terminal table.
  fmt::print("{}: {} tensors, {} measured ({} parameters), {} skipped\n", path, tensors.size(), results.size(), params,
             skips.size());
  if (sort == "sqnr") fmt::print("worst first: lowest SQNR under {}\n", schemes[0]->name);
  if (listed < results.size()) fmt::print("listing the {} worst of {}\n", listed, results.size());
  for (std::size_t i = 0; i < listed; ++i) {
    const tensor_result& r = results[i];
    fmt::print("\n{}  {} {}\n", r.view->name, shape_text(r.view->shape), io::dtype_name(r.view->type));
    fmt::print("  {:<15} {:>12} {:>7} {:>8} {:>11} {:>11}\n", "scheme", "bytes", "bits/w", "SQNR dB", "MSE", "max err");
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      const scheme_result& x = r.schemes[k];
      if (!x.applies) {
        fmt::print("  {:<15} n/a: {}\n", schemes[k]->name, x.reason);
        continue;
      }
      fmt::print("  {:<15} {:>12} {:>7.3f} {:>8} {:>11.4g} {:>11.4g}\n", schemes[k]->name, x.st.total_bytes(),
                 x.st.bits_per_weight(), db_text(x.sqnr_db), x.mse, x.max_abs);
    }
  }
  if (!skips.empty()) {
    fmt::print("\nskipped:\n");
    for (const skipped& s : skips)
      fmt::print("  {}  {} {}: {}\n", s.view->name, shape_text(s.view->shape), io::dtype_name(s.view->type), s.reason);
  }
  fmt::print("\nsummary over {} tensors ({} parameters):\n", results.size(), params);
  fmt::print("  {:<15} {:>7} {:>5} {:>14} {:>7} {:>14} {:>12}\n", "scheme", "tensors", "n/a", "bytes", "bits/w",
             "SQNR weighted", "SQNR pooled");
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    const scheme_summary& s = summary[k];
    fmt::print("  {:<15} {:>7} {:>5} {:>14} {:>7.3f} {:>14} {:>12}\n", schemes[k]->name, s.tensors, s.not_applicable,
               s.bytes, s.bits_per_weight(), db_text(s.weighted_sqnr()), db_text(s.pooled_sqnr()));
  }
  return below ? exit_check_failed : exit_ok;
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_CMD_REPORT_HPP
