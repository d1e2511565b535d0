// lowbit: the command-line tool. What does format X cost me on this tensor?
//
//   lowbit table FORMAT...                        every code of a low-bit float format
//   lowbit roofline --gpu G --params N [--batch B]  the decode roofline of the lesson
//   lowbit report FILE [--schemes LIST] [--json | --csv]
//   lowbit quantize IN OUT --scheme S [--method rtn]
//
// Each command lives in its own header (cmd_*.hpp); docs/tool.md documents them.
#include <lowbit/lowbit.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "cmd_quantize.hpp"
#include "cmd_report.hpp"
#include "cmd_roofline.hpp"
#include "cmd_table.hpp"
#include "common.hpp"

namespace {

struct command {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

const command kCommands[] = {
    {"report", "bytes and error of each scheme on every matrix of a tensor file", lowbit_tool::run_report},
    {"quantize", "write a quantized safetensors checkpoint (round to nearest)", lowbit_tool::run_quantize},
    {"table", "every code of a low-bit float format with its value", lowbit_tool::run_table},
    {"roofline", "the weight-traffic roofline of a decode step on A100 / H100 / H200", lowbit_tool::run_roofline},
};

void usage(std::FILE* to) {
  fmt::print(to, "usage: lowbit COMMAND [ARGS...]   (lowbit COMMAND --help for its options)\n\ncommands:\n");
  for (const command& c : kCommands) fmt::print(to, "  {:<9} {}\n", c.name, c.summary);
  fmt::print(to,
             "\nexit codes: 0 ok, 1 bad usage, 2 bad input file, 3 a check failed\n"
             "lowbit {}.{}.{}; docs/tool.md\n",
             LOWBIT_VERSION_MAJOR, LOWBIT_VERSION_MINOR, LOWBIT_VERSION_PATCH);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return lowbit_tool::exit_usage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(stdout);
    return lowbit_tool::exit_ok;
  }
  if (name == "--version") {
    fmt::print("lowbit {}.{}.{}\n", LOWBIT_VERSION_MAJOR, LOWBIT_VERSION_MINOR, LOWBIT_VERSION_PATCH);
    return lowbit_tool::exit_ok;
  }
  for (const command& c : kCommands)
    if (name == c.name) return c.run(argc - 2, argv + 2);
  lowbit_tool::print_error(fmt::format("unknown command '{}'; expected report, quantize, table or roofline (see lowbit --help)", name));
  return lowbit_tool::exit_usage;
}
