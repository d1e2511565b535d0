// lowbit tool: what every command shares. Exit codes, one-line errors on stderr, and a small
// argument parser (options may come before or after the positional arguments; "--name value" and
// "--name=value" are both accepted; "--" ends the options).
#ifndef LOWBIT_TOOL_COMMON_HPP
#define LOWBIT_TOOL_COMMON_HPP

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit_tool {

// The exit codes of every command (docs/tool.md).
enum exit_code : int {
  exit_ok = 0,          // done
  exit_usage = 1,       // bad usage: unknown command, option or value; a feature not yet supported
  exit_bad_input = 2,   // an input file that cannot be read or parsed, or an output that cannot be written
  exit_check_failed = 3 // a requested check failed (quantize: a tensor whose quantization failed)
};

// Replaces line breaks so that an error stays one line.
inline std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// "lowbit: problem" on stderr.
inline void print_error(const std::string& message) { fmt::print(stderr, "lowbit: {}\n", one_line(message)); }

// "lowbit: FILE: problem": io errors already start with the file's name; others get it added.
inline void print_file_error(const std::string& path, const std::string& message) {
  if (message.compare(0, path.size() + 1, path + ":") == 0) {
    print_error(message);
  } else {
    print_error(path + ": " + message);
  }
}

// An option's value, as given on the command line.
struct option_value {
  std::string name;  // without the leading dashes
  std::string value;
  bool has_value = false;
};

// The parsed command line of one command: options and positional arguments.
class arguments {
 public:
  // `with_value`: the options that take a value; `flags`: the ones that do not. Anything else
  // starting with "-" is an unknown option. Returns false (and prints the error) on bad usage.
  bool parse(const std::string& command, int argc, char** argv, const std::vector<std::string_view>& with_value,
             const std::vector<std::string_view>& flags) {
    bool options_done = false;
    for (int i = 0; i < argc; ++i) {
      const std::string a = argv[i];
      if (options_done || a.size() < 2 || a[0] != '-' || is_number(a)) {
        positional_.push_back(a);
        continue;
      }
      if (a == "--") {
        options_done = true;
        continue;
      }
      if (a == "-h" || a == "--help") {
        help_ = true;
        continue;
      }
      std::string name = a.substr(a[1] == '-' ? 2 : 1);
      std::string value;
      bool has_value = false;
      if (const std::size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (contains(flags, name)) {
        if (has_value) {
          print_error(fmt::format("{}: option --{} takes no value", command, name));
          return false;
        }
        options_.push_back({name, "", false});
        continue;
      }
      if (!contains(with_value, name)) {
        print_error(fmt::format("{}: unknown option '{}' (see lowbit {} --help)", command, a, command));
        return false;
      }
      if (!has_value) {
        if (i + 1 >= argc) {
          print_error(fmt::format("{}: option --{} needs a value", command, name));
          return false;
        }
        value = argv[++i];
      }
      options_.push_back({name, value, true});
    }
    return true;
  }

  bool help() const noexcept { return help_; }
  const std::vector<std::string>& positional() const noexcept { return positional_; }
  bool has(std::string_view name) const {
    for (const option_value& o : options_)
      if (o.name == name) return true;
    return false;
  }
  // The last value given for `name`, or `fallback`.
  std::string get(std::string_view name, const std::string& fallback = "") const {
    std::string v = fallback;
    for (const option_value& o : options_)
      if (o.name == name) v = o.value;
    return v;
  }

 private:
  static bool contains(const std::vector<std::string_view>& names, const std::string& n) {
    for (std::string_view s : names)
      if (s == n) return true;
    return false;
  }
  // "-1", "-0.5": a negative number is a (bad) value, not an option.
  static bool is_number(const std::string& a) { return a.size() >= 2 && (std::isdigit(static_cast<unsigned char>(a[1])) != 0 || a[1] == '.'); }

  std::vector<option_value> options_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// A finite positive number ("8e9", "70000000000", "1.5"). False when the text is not one.
inline bool parse_positive(const std::string& text, double& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v) || !(v > 0.0)) return false;
  out = v;
  return true;
}

// A whole number >= 1 that fits size_t ("8", "1e3" is not accepted).
inline bool parse_count(const std::string& text, std::size_t& out) {
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0' || v == 0 || v > static_cast<unsigned long long>(SIZE_MAX)) return false;
  out = static_cast<std::size_t>(v);
  return true;
}

// A shape as text: "[64, 256]".
inline std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i == 0 ? "" : ", ", shape[i]);
  return s + "]";
}

// Bytes as text with a binary unit: "1.50 MiB", "512 B".
inline std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_COMMON_HPP
