// Helpers the io tests share: a scratch directory and whole-file byte reads and writes.
#ifndef LOWBIT_TESTS_IO_SUPPORT_HPP
#define LOWBIT_TESTS_IO_SUPPORT_HPP

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace lowbit_io_test {

using bytes_t = std::vector<unsigned char>;

// A scratch directory, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lowbit-io-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const char* made = ::mkdtemp(buf.data());
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? std::string(made) : std::string("/tmp");
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, const bytes_t& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline void write_text(const std::string& path, const std::string& s) {
  write_bytes(path, bytes_t(s.begin(), s.end()));
}

inline bytes_t read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return bytes_t((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace lowbit_io_test

#endif  // LOWBIT_TESTS_IO_SUPPORT_HPP
