// lowbit::io: a read-only memory map of a whole file, so a multi-gigabyte checkpoint is read
// tensor by tensor through the page cache instead of being copied into memory. POSIX (mmap);
// an empty file maps to an empty range. Move-only; the map is released by the destructor.
#ifndef LOWBIT_IO_MAPPED_FILE_HPP
#define LOWBIT_IO_MAPPED_FILE_HPP

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "tensor.hpp"

namespace lowbit {
namespace io {

class mapped_file {
 public:
  mapped_file() noexcept = default;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&& o) noexcept { swap(o); }
  mapped_file& operator=(mapped_file&& o) noexcept {
    mapped_file(std::move(o)).swap(*this);
    return *this;
  }
  ~mapped_file() {
    if (data_ != nullptr && size_ != 0) ::munmap(const_cast<unsigned char*>(data_), size_);
  }

  // Maps `path` read-only. Errors name the file and the system's reason.
  static io_result<mapped_file> open(const std::string& path) {
    io_result<mapped_file> r;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      r.error = path + ": cannot open: " + std::strerror(errno);
      return r;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      r.error = path + ": not a regular file";
      ::close(fd);
      return r;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size != 0) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        r.error = path + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno);
        ::close(fd);
        return r;
      }
      r.value.data_ = static_cast<const unsigned char*>(p);
    }
    ::close(fd);  // the map keeps the file's pages
    r.value.size_ = size;
    r.value.path_ = path;
    return r;
  }

  const unsigned char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

  // Tells the kernel the pages of [offset, offset + n) are not needed soon (a tensor already
  // processed), so that reading a file larger than memory does not keep all of it resident.
  void release(std::size_t offset, std::size_t n) const noexcept {
    if (data_ == nullptr || offset >= size_) return;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t begin = (offset / page) * page;
    const std::size_t end = n > size_ - offset ? size_ : offset + n;
    ::madvise(const_cast<unsigned char*>(data_) + begin, end - begin, MADV_DONTNEED);
  }

  void swap(mapped_file& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(path_, o.path_);
  }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_MAPPED_FILE_HPP
