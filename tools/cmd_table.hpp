// lowbit table FORMAT... : every code of a low-bit float format with its value.
#ifndef LOWBIT_TOOL_CMD_TABLE_HPP
#define LOWBIT_TOOL_CMD_TABLE_HPP

#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#include "format_table.hpp"

namespace lowbit_tool {

inline void table_usage(std::FILE* to) {
  fmt::print(to,
             "usage: lowbit table FORMAT...   every code of each FORMAT: sign, exponent and mantissa\n"
             "                                fields, class, hexfloat and exact decimal value\n"
             "       lowbit table --all       every format\n"
             "\n"
             "formats:\n");
  for (const format_table::format_entry& f : format_table::formats()) fmt::print(to, "  {:<10} {}\n", f.name, f.description);
  fmt::print(to, "\nexit codes: 0 ok, 1 bad usage (unknown format)\n");
}

inline int run_table(int argc, char** argv) {
  arguments args;
  if (!args.parse("table", argc, argv, {}, {"all"})) return exit_usage;
  if (args.help()) {
    table_usage(stdout);
    return exit_ok;
  }
  std::vector<const format_table::format_entry*> chosen;
  if (args.has("all"))
    for (const format_table::format_entry& f : format_table::formats()) chosen.push_back(&f);
  for (const std::string& name : args.positional()) {
    const format_table::format_entry* f = format_table::find_format(name);
    if (f == nullptr) {
      print_error(fmt::format("table: unknown format '{}'; expected one of: {} (or --all)", name,
                              format_table::format_names()));
      return exit_usage;
    }
    chosen.push_back(f);
  }
  if (chosen.empty()) {
    print_error("table: no format given (lowbit table FORMAT..., see lowbit table --help)");
    return exit_usage;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (i != 0) fmt::print("\n");
    chosen[i]->print(stdout, chosen[i]->name);
  }
  return exit_ok;
}

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_CMD_TABLE_HPP
