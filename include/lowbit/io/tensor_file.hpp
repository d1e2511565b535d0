// lowbit::io: one entry point for every tensor file lowbit reads, chosen by the file name:
//   *.safetensors          safetensors_file
//   *.npy                  npy_file (one tensor, named after the file)
//   *.json (model.json)    tfjs_model (a TF.js weight manifest and its shards)
//   *.gguf                 gguf_file: its F32, F16 and BF16 tensors (block-quantized ones, Q4_0,
//                          Q8_0, MXFP4, are listed by gguf_file::tensor_infos, not as views)
// Any other name is recognised by its first bytes: the .npy magic, a safetensors header (an
// 8-byte length then '{'), or a JSON object.
#ifndef LOWBIT_IO_TENSOR_FILE_HPP
#define LOWBIT_IO_TENSOR_FILE_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mapped_file.hpp"
#include "npy.hpp"
#include "safetensors.hpp"
#include "tensor.hpp"
#include "gguf.hpp"
#include "tfjs.hpp"

namespace lowbit {
namespace io {

enum class tensor_file_kind : std::uint8_t {
  safetensors,
  npy,
  tfjs,
  gguf,
};

// A tensor file of any kind lowbit reads. Move-only; the views (copies of the reader's, pointing
// into the same maps and buffers, which a move does not relocate) are valid while it lives.
class tensor_file {
 public:
  tensor_file() = default;
  tensor_file(const tensor_file&) = delete;
  tensor_file& operator=(const tensor_file&) = delete;
  tensor_file(tensor_file&&) noexcept = default;
  tensor_file& operator=(tensor_file&&) noexcept = default;

  static io_result<tensor_file> open(const std::string& path) {
    io_result<tensor_file> r;
    tensor_file& f = r.value;
    f.path_ = path;
    tensor_file_kind kind{};
    if (!kind_of(path, kind, r.error)) return r;
    f.kind_ = kind;
    switch (kind) {
      case tensor_file_kind::safetensors: {
        io_result<safetensors_file> s = safetensors_file::open(path);
        if (!s) {
          r.value = tensor_file();
          r.error = std::move(s.error);
          return r;
        }
        f.tensors_ = s.value.tensors();
        f.metadata_ = s.value.metadata();
        f.owner_ = std::move(s.value);
        break;
      }
      case tensor_file_kind::npy: {
        io_result<npy_file> n = npy_file::open(path);
        if (!n) {
          r.value = tensor_file();
          r.error = std::move(n.error);
          return r;
        }
        f.tensors_.push_back(n.value.tensor());
        f.owner_ = std::move(n.value);
        break;
      }
      case tensor_file_kind::tfjs: {
        io_result<tfjs_model> t = tfjs_model::open(path);
        if (!t) {
          r.value = tensor_file();
          r.error = std::move(t.error);
          return r;
        }
        f.tensors_ = t.value.tensors();
        f.owner_ = std::move(t.value);
        break;
      }
      case tensor_file_kind::gguf: {
        io_result<gguf_file> g = gguf_file::open(path);
        if (!g) {
          r.value = tensor_file();
          r.error = std::move(g.error);
          return r;
        }
        f.tensors_ = g.value.float_tensors();
        for (const auto& kv : g.value.metadata()) {
          if (const std::string* text = kv.second.as_string()) f.metadata_[kv.first] = *text;
        }
        f.owner_ = std::move(g.value);
        break;
      }
    }
    return r;
  }

  const std::vector<tensor_view>& tensors() const noexcept { return tensors_; }
  const tensor_view* find(std::string_view name) const noexcept { return detail::find_view(tensors_, name); }
  const std::string& path() const noexcept { return path_; }
  tensor_file_kind kind() const noexcept { return kind_; }
  // Drops the resident pages of a tensor done with (mapped_file::release on the view's bytes),
  // so that reading a file larger than memory tensor by tensor keeps one tensor resident; the
  // view stays valid (its pages are read again if touched). For safetensors and .npy files
  // (memory-mapped); a no-op for the others and for views not in this file's map.
  void release(const tensor_view& t) const noexcept {
    const mapped_file* m = nullptr;
    if (const auto* s = std::get_if<safetensors_file>(&owner_)) m = &s->map();
    else if (const auto* n = std::get_if<npy_file>(&owner_)) m = &n->map();
    if (m == nullptr || t.data == nullptr || m->data() == nullptr || t.data < m->data() ||
        t.data >= m->data() + m->size())
      return;
    m->release(static_cast<std::size_t>(t.data - m->data()), t.bytes);
  }

  // String metadata: safetensors' "__metadata__", GGUF's string-valued keys; empty otherwise.
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

 private:
  static bool ends_with(const std::string& s, std::string_view suffix) noexcept {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  static bool kind_of(const std::string& path, tensor_file_kind& kind, std::string& error) {
    if (ends_with(path, ".safetensors")) {
      kind = tensor_file_kind::safetensors;
      return true;
    }
    if (ends_with(path, ".npy")) {
      kind = tensor_file_kind::npy;
      return true;
    }
    if (ends_with(path, ".json")) {
      kind = tensor_file_kind::tfjs;
      return true;
    }
    if (ends_with(path, ".gguf")) {
      kind = tensor_file_kind::gguf;
      return true;
    }
    // Unknown name: look at the first bytes.
    io_result<mapped_file> m = mapped_file::open(path);
    if (!m) {
      error = std::move(m.error);
      return false;
    }
    const unsigned char* p = m.value.data();
    const std::size_t n = m.value.size();
    if (n >= 6 && std::memcmp(p, "\x93NUMPY", 6) == 0) {
      kind = tensor_file_kind::npy;
      return true;
    }
    if (n >= 4 && std::memcmp(p, "GGUF", 4) == 0) {
      kind = tensor_file_kind::gguf;
      return true;
    }
    if (n >= 9 && p[8] == '{' && detail::load_le64(p) <= n - 8) {
      kind = tensor_file_kind::safetensors;
      return true;
    }
    std::size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) ++i;
    if (i < n && (p[i] == '{' || p[i] == '[')) {
      kind = tensor_file_kind::tfjs;
      return true;
    }
    error = path + ": unknown tensor file type (expected .safetensors, .gguf, .npy or a TF.js model.json)";
    return false;
  }

  std::string path_;
  tensor_file_kind kind_ = tensor_file_kind::safetensors;
  std::vector<tensor_view> tensors_;
  std::map<std::string, std::string> metadata_;
  std::variant<std::monostate, safetensors_file, npy_file, tfjs_model, gguf_file> owner_;
};

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_TENSOR_FILE_HPP
