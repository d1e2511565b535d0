// main() for the fuzz targets when libFuzzer is not linked (g++, or LOWBIT_FUZZ_ENGINE=driver).
// It takes the libFuzzer options the CI scripts use, so one command line fits both builds:
//
//   fuzz_convert FILE_OR_DIR...          run each file (each file of each directory) once
//   fuzz_convert -runs=N [-seed=S] [-max_len=L]
//                                        N pseudo-random inputs of 0..L bytes (default L 4096)
//
// Other -options are ignored. A failed check aborts, naming the input; with random inputs the
// input is written to ./crash-driver-<seed>-<run> by a SIGABRT handler, so it can be replayed
// (the random inputs are also reproducible from -seed and -runs: std::mt19937_64 is portable).
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

struct current_input {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  long seed = 0, run = -1;
} current;
char crash_name[96];

extern "C" void save_current_input(int) {
  if (current.run >= 0) {
    const int fd = ::open(crash_name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      if (current.size != 0 && ::write(fd, current.data, current.size) < 0) {
      }
      ::close(fd);
    }
    const char msg[] = "driver: the failing random input is saved in ";
    if (::write(2, msg, sizeof msg - 1) < 0 || ::write(2, crash_name, std::strlen(crash_name)) < 0 ||
        ::write(2, "\n", 1) < 0) {
    }
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

int run_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.string().c_str());
    return 1;
  }
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "running %s (%zu bytes)\n", path.string().c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

long option(const char* arg, const char* name, long fallback) {
  const std::size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) == 0 && arg[n] == '=') return std::strtol(arg + n + 1, nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = -1, seed = 1, max_len = 4096;
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      runs = option(argv[i], "-runs", runs);
      seed = option(argv[i], "-seed", seed);
      max_len = option(argv[i], "-max_len", max_len);
    } else {
      paths.emplace_back(argv[i]);
    }
  }
  int failures = 0;
  std::size_t files = 0;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) failures += run_file(e.path()), ++files;
    } else {
      failures += run_file(p), ++files;
    }
  }
  if (runs < 0) runs = paths.empty() ? 1000 : 0;
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
  std::vector<std::uint8_t> bytes;
  if (runs > 0) std::signal(SIGABRT, save_current_input);
  for (long r = 0; r < runs; ++r) {
    const std::size_t len = max_len > 0 ? static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(max_len + 1)) : 0;
    bytes.resize(len);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    current = {bytes.data(), bytes.size(), seed, r};
    std::snprintf(crash_name, sizeof crash_name, "crash-driver-%ld-%ld", seed, r);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::fprintf(stderr, "%zu file(s), %ld random input(s) of at most %ld bytes (seed %ld): ok\n", files, runs,
               max_len, seed);
  return failures == 0 ? 0 : 1;
}
