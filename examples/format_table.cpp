// format_table: every code of a lowbit format, with its fields and its exact value.
//
//   format_table e4m3fn        one format
//   format_table e2m1fn e8m0fnu
//   format_table --all         all eight
//
// The printer is the `lowbit table` command's (tools/format_table.hpp): one generic function
// prints any format from its spec (formats/spec.hpp) and std::numeric_limits, so a new format
// needs only a line in its list.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "../tools/format_table.hpp"

namespace {

namespace ft = lowbit_tool::format_table;

void usage(std::FILE* to) {
  fmt::print(to,
             "usage: format_table FORMAT...   print every code of each FORMAT\n"
             "       format_table --all       print every format\n"
             "formats: {}\n",
             ft::format_names());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return 0;
  }
  std::vector<const ft::format_entry*> chosen;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--all") == 0) {
      for (const ft::format_entry& f : ft::formats()) chosen.push_back(&f);
      continue;
    }
    const ft::format_entry* f = ft::find_format(argv[i]);
    if (f == nullptr) {
      fmt::print(stderr, "format_table: unknown format '{}'; expected one of: {} (or --all)\n", argv[i],
                 ft::format_names());
      return 2;
    }
    chosen.push_back(f);
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (i != 0) fmt::print("\n");
    chosen[i]->print(stdout, chosen[i]->name);
  }
  return 0;
}
