// lowbit::io: safetensors, the checkpoint format almost every LLM ships in
// (https://huggingface.co/docs/safetensors).
//
// Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
//   {"__metadata__": {"key": "value", ...},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the data, where [begin, end) is relative to the first byte after the header.
//
// Reading (safetensors_file): the file is memory-mapped and every tensor_view points into the
// map, so a multi-gigabyte checkpoint is never copied. The header is checked completely before
// any view is made: a header length past the file or above 100 MB, JSON that does not parse, a
// duplicate key, a field of the wrong type, an unknown dtype, begin > end, offsets past the end
// of the file (a truncated file), a byte range that does not match shape x dtype size (computed
// without overflow) and tensors that share bytes are errors naming the file and the tensor.
// Gaps between tensors and bytes after the last one are allowed (the reference writer makes
// neither). Nothing throws, nothing reads outside the file.
//
// Writing (write_safetensors, encode_safetensors, safetensors_writer): tensors are stored in
// the order given, back to back from offset 0; the header is compact JSON ("__metadata__" first
// when there is metadata, then each tensor's "dtype", "shape", "data_offsets"), padded with
// spaces to a multiple of 8 bytes as the reference implementation pads it, so the data starts
// 8-byte aligned.
#ifndef LOWBIT_IO_SAFETENSORS_HPP
#define LOWBIT_IO_SAFETENSORS_HPP

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mapped_file.hpp"
#include "tensor.hpp"

namespace lowbit {
namespace io {

namespace detail {

// The largest header lowbit reads, as the reference implementation (MAX_HEADER_SIZE).
constexpr std::uint64_t safetensors_max_header = 100000000;

inline std::uint64_t load_le64(const unsigned char* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void append_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

// A name as it appears in an error message: quoted, control and non-ASCII bytes as \xNN, long
// names cut, so that the message stays one printable line.
inline std::string quote_name(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  const std::size_t limit = 200;
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7F || c == '\\' || c == '\'') {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15u]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (s.size() > limit) out += "...";
  out += "'";
  return out;
}

inline bool valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0u) == 0xC0u) {
      len = 2, cp = c & 0x1Fu;
    } else if ((c & 0xF0u) == 0xE0u) {
      len = 3, cp = c & 0x0Fu;
    } else if ((c & 0xF8u) == 0xF0u) {
      len = 4, cp = c & 0x07u;
    } else {
      return false;
    }
    if (len > s.size() - i) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    const std::uint32_t min_cp = len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u;
    if (cp < min_cp || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu)) return false;
    i += len;
  }
  return true;
}

// A JSON string literal as serde_json (the reference writer) spells it: ", \ and control
// characters escaped, everything else (UTF-8 included) as it is.
inline void append_json_string(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15u]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

inline std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// shape x dtype size in bytes, or false when it does not fit 64 bits.
inline bool byte_count(const std::vector<std::uint64_t>& shape, dtype t, std::uint64_t& bytes) noexcept {
  std::uint64_t n = 0;
  if (!element_count(shape, n)) return false;
  const std::uint64_t size = dtype_size(t);
  if (n != 0 && size > UINT64_MAX / n) return false;
  bytes = n * size;
  return true;
}

// A non-negative JSON integer (never throws: the type is checked before the value is read).
inline bool json_u64(const nlohmann::json& j, std::uint64_t& out) noexcept {
  if (const auto* u = j.get_ptr<const nlohmann::json::number_unsigned_t*>()) {
    out = static_cast<std::uint64_t>(*u);
    return true;
  }
  if (const auto* i = j.get_ptr<const nlohmann::json::number_integer_t*>()) {
    if (*i < 0) return false;
    out = static_cast<std::uint64_t>(*i);
    return true;
  }
  return false;
}

// Parses JSON with exceptions off, and reports the first key that appears twice in one object
// (nlohmann keeps the last one silently). depth_of_duplicate is 1 for a top-level key.
inline nlohmann::json parse_json_unique(const unsigned char* first, const unsigned char* last,
                                        std::string& duplicate, int& depth_of_duplicate) {
  std::vector<std::set<std::string>> open;
  bool found = false;
  nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t event,
                                             nlohmann::json& parsed) -> bool {
    using ev = nlohmann::json::parse_event_t;
    if (event == ev::object_start) {
      open.emplace_back();
    } else if (event == ev::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == ev::key && !open.empty() && !found) {
      if (const auto* k = parsed.get_ptr<const std::string*>()) {
        if (!open.back().insert(*k).second) {
          found = true;
          duplicate = *k;
          depth_of_duplicate = depth;
        }
      }
    }
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(first, last, cb, /*allow_exceptions=*/false);
  if (!found) duplicate.clear();
  return j;
}

struct safetensors_entry {
  tensor_view view;
  std::uint64_t begin = 0, end = 0;
};

// Parses a whole safetensors image [data, data + size); views point into it. Returns the error
// (empty on success).
inline std::string parse_safetensors(const unsigned char* data, std::size_t size, const std::string& name,
                                     std::vector<tensor_view>& tensors, std::map<std::string, std::string>& metadata,
                                     std::size_t& data_offset) {
  tensors.clear();
  metadata.clear();
  data_offset = 0;
  if (size < 8 || data == nullptr) {
    return name + ": " + std::to_string(size) + " bytes, too short for a safetensors file (8-byte header length)";
  }
  const std::uint64_t n = load_le64(data);
  if (n > safetensors_max_header) {
    return name + ": header length " + std::to_string(n) + " exceeds the limit of " +
           std::to_string(safetensors_max_header) + " bytes";
  }
  if (n > size - 8) {
    return name + ": header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
           " bytes)";
  }
  const auto header_bytes = static_cast<std::size_t>(n);
  const unsigned char* header = data + 8;
  std::string duplicate;
  int duplicate_depth = 0;
  const nlohmann::json j = parse_json_unique(header, header + header_bytes, duplicate, duplicate_depth);
  if (j.is_discarded()) return name + ": header is not valid JSON (" + std::to_string(n) + " bytes)";
  if (!duplicate.empty()) {
    if (duplicate_depth == 1) return name + ": tensor " + quote_name(duplicate) + ": name appears twice in the header";
    return name + ": header: key " + quote_name(duplicate) + " appears twice in one object";
  }
  if (!j.is_object()) return name + ": header is not a JSON object";

  const std::size_t base = 8 + header_bytes;
  const std::uint64_t data_size = size - base;
  std::vector<safetensors_entry> entries;
  entries.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) return name + ": '__metadata__' is not a JSON object";
      for (auto m = v.begin(); m != v.end(); ++m) {
        const auto* s = m.value().get_ptr<const std::string*>();
        if (s == nullptr) return name + ": '__metadata__': value of " + quote_name(m.key()) + " is not a string";
        metadata[m.key()] = *s;
      }
      continue;
    }
    const std::string where = name + ": tensor " + quote_name(key) + ": ";
    if (!v.is_object()) return where + "entry is not a JSON object";
    const auto dt = v.find("dtype");
    const std::string* dtype_str = dt == v.end() ? nullptr : dt->get_ptr<const std::string*>();
    if (dtype_str == nullptr) return where + "'dtype' is missing or not a string";
    safetensors_entry e;
    e.view.name = key;
    if (!parse_dtype(*dtype_str, e.view.type)) return where + "unknown dtype " + quote_name(*dtype_str);
    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) return where + "'shape' is missing or not an array";
    e.view.shape.reserve(sh->size());
    for (const auto& d : *sh) {
      std::uint64_t dim = 0;
      if (!json_u64(d, dim)) return where + "'shape' holds something other than a non-negative integer";
      e.view.shape.push_back(dim);
    }
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !json_u64((*off)[0], e.begin) ||
        !json_u64((*off)[1], e.end)) {
      return where + "'data_offsets' is missing or not two non-negative integers";
    }
    const std::string range = "data offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.begin > e.end) return where + range + " begin after they end";
    std::uint64_t need = 0;
    if (!byte_count(e.view.shape, e.view.type, need)) {
      return where + "shape " + shape_string(e.view.shape) + " of " + dtype_name(e.view.type) +
             " has more than 2^64 bytes";
    }
    if (e.end > data_size) {
      return where + range + " run past the " + std::to_string(data_size) + " bytes of data (truncated file?)";
    }
    if (need != e.end - e.begin) {
      return where + range + " hold " + std::to_string(e.end - e.begin) + " bytes but shape " +
             shape_string(e.view.shape) + " of " + dtype_name(e.view.type) + " needs " + std::to_string(need);
    }
    e.view.bytes = static_cast<std::size_t>(need);
    e.view.data = data + base + static_cast<std::size_t>(e.begin);
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const safetensors_entry& a, const safetensors_entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Two tensors overlap when they share a byte: with the entries sorted by begin, when one
  // starts before the furthest end so far (empty tensors share nothing).
  const safetensors_entry* furthest = nullptr;  // the non-empty tensor that ends last so far
  for (const safetensors_entry& e : entries) {
    if (e.begin == e.end) continue;
    if (furthest != nullptr && furthest->end > e.begin) {
      return name + ": tensor " + quote_name(e.view.name) + ": data offsets [" + std::to_string(e.begin) + ", " +
             std::to_string(e.end) + ") overlap tensor " + quote_name(furthest->view.name) + " [" +
             std::to_string(furthest->begin) + ", " + std::to_string(furthest->end) + ")";
    }
    if (furthest == nullptr || e.end > furthest->end) furthest = &e;
  }
  tensors.reserve(entries.size());
  for (auto& e : entries) tensors.push_back(std::move(e.view));
  data_offset = base;
  return {};
}

// The header of a safetensors file with these tensors in this order, length prefix included.
// With use_bytes, each tensor's `bytes` must match its shape and its data must be there; without
// (the streaming writer's declarations), the sizes come from the shapes. Returns the problem.
inline std::string safetensors_header(const std::vector<tensor_view>& tensors,
                                      const std::map<std::string, std::string>& metadata, bool use_bytes,
                                      std::string& out, std::vector<std::uint64_t>* sizes = nullptr) {
  out.clear();
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& kv : metadata) {
      if (!valid_utf8(kv.first) || !valid_utf8(kv.second)) {
        return "'__metadata__': key or value of " + quote_name(kv.first) + " is not valid UTF-8";
      }
      if (!first) json += ',';
      first = false;
      append_json_string(json, kv.first);
      json += ':';
      append_json_string(json, kv.second);
    }
    json += "},";
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  if (sizes != nullptr) sizes->clear();
  for (const tensor_view& t : tensors) {
    const std::string where = "tensor " + quote_name(t.name) + ": ";
    if (t.name == "__metadata__") return where + "the name is reserved for the metadata";
    if (!valid_utf8(t.name)) return where + "the name is not valid UTF-8";
    if (!names.insert(t.name).second) return where + "the name appears twice";
    if (dtype_size(t.type) == 0) return where + "not a dtype safetensors stores";
    std::uint64_t need = 0;
    if (!byte_count(t.shape, t.type, need)) {
      return where + "shape " + shape_string(t.shape) + " of " + dtype_name(t.type) + " has more than 2^64 bytes";
    }
    if (use_bytes && (need != t.bytes || (t.bytes != 0 && t.data == nullptr))) {
      return where + std::to_string(t.bytes) + " bytes of data but shape " + shape_string(t.shape) + " of " +
             dtype_name(t.type) + " needs " + std::to_string(need);
    }
    if (offset > UINT64_MAX - need) return where + "the data passes 2^64 bytes";
    append_json_string(json, t.name);
    json += ":{\"dtype\":\"";
    json += dtype_name(t.type);
    json += "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i != 0) json += ',';
      json += std::to_string(t.shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + need) + "]},";
    offset += need;
    if (sizes != nullptr) sizes->push_back(need);
  }
  if (json.back() == ',') json.pop_back();
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  append_le(out, json.size(), 8);
  out += json;
  return {};
}

// A FILE* that closes itself; every failure becomes "<path>: <what>: <strerror>".
class output_file {
 public:
  output_file() noexcept = default;
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  output_file(output_file&& o) noexcept : f_(std::exchange(o.f_, nullptr)), path_(std::move(o.path_)) {}
  output_file& operator=(output_file&& o) noexcept {
    if (this != &o) {
      if (f_ != nullptr) std::fclose(f_);
      f_ = std::exchange(o.f_, nullptr);
      path_ = std::move(o.path_);
    }
    return *this;
  }
  ~output_file() {
    if (f_ != nullptr) std::fclose(f_);
  }

  std::string open(const std::string& path) {
    path_ = path;
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) return path + ": cannot create: " + std::strerror(errno);
    return {};
  }
  std::string write(const void* p, std::size_t n) {
    if (n == 0) return {};
    if (f_ == nullptr) return path_ + ": not open for writing";
    if (std::fwrite(p, 1, n, f_) != n) return path_ + ": cannot write: " + std::strerror(errno);
    return {};
  }
  std::string close() {
    if (f_ == nullptr) return {};
    const int r = std::fclose(std::exchange(f_, nullptr));
    if (r != 0) return path_ + ": cannot finish writing: " + std::strerror(errno);
    return {};
  }
  bool is_open() const noexcept { return f_ != nullptr; }

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
};

inline const tensor_view* find_view(const std::vector<tensor_view>& tensors, std::string_view name) noexcept {
  for (const tensor_view& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace detail

// A safetensors file, memory-mapped. Move-only; the views stay valid (they point into the map,
// which a move does not touch) until the object that owns them is destroyed.
class safetensors_file {
 public:
  safetensors_file() = default;
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;
  safetensors_file(safetensors_file&&) noexcept = default;
  safetensors_file& operator=(safetensors_file&&) noexcept = default;

  static io_result<safetensors_file> open(const std::string& path) {
    io_result<safetensors_file> r;
    io_result<mapped_file> m = mapped_file::open(path);
    if (!m) {
      r.error = std::move(m.error);
      return r;
    }
    r.value.map_ = std::move(m.value);
    r.error = detail::parse_safetensors(r.value.map_.data(), r.value.map_.size(), path, r.value.tensors_,
                                        r.value.metadata_, r.value.data_offset_);
    if (!r.ok()) r.value = safetensors_file();
    return r;
  }

  // Parses a safetensors image already in memory; the views point into [data, data + size),
  // which must outlive the result. `name` is what error messages call it.
  static io_result<safetensors_file> parse(const unsigned char* data, std::size_t size, const std::string& name) {
    io_result<safetensors_file> r;
    r.error = detail::parse_safetensors(data, size, name, r.value.tensors_, r.value.metadata_, r.value.data_offset_);
    if (!r.ok()) r.value = safetensors_file();
    return r;
  }

  // The tensors in file order (sorted by data offset).
  const std::vector<tensor_view>& tensors() const noexcept { return tensors_; }
  // The tensor called `name`, or null.
  const tensor_view* find(std::string_view name) const noexcept { return detail::find_view(tensors_, name); }
  // The "__metadata__" strings (empty when the file has none).
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
  // The memory map (empty after parse()): map().release(...) drops the pages of a tensor done with.
  const mapped_file& map() const noexcept { return map_; }
  // Where the data starts in the file: 8 + the header length. A view's file offset is
  // view.data - map().data().
  std::size_t data_offset() const noexcept { return data_offset_; }

 private:
  mapped_file map_;
  std::vector<tensor_view> tensors_;
  std::map<std::string, std::string> metadata_;
  std::size_t data_offset_ = 0;
};

// The bytes of a safetensors file with these tensors (in this order) and metadata.
// Errors: a byte count that does not match the shape, a duplicate or reserved name, a string
// that is not UTF-8.
inline io_status encode_safetensors(const std::vector<tensor_view>& tensors,
                                    const std::map<std::string, std::string>& metadata,
                                    std::vector<unsigned char>& out) {
  out.clear();
  std::string header;
  std::string problem = detail::safetensors_header(tensors, metadata, true, header);
  if (!problem.empty()) return {"safetensors: " + problem};
  std::size_t total = header.size();
  for (const tensor_view& t : tensors) total += t.bytes;
  out.reserve(total);
  out.insert(out.end(), header.begin(), header.end());
  for (const tensor_view& t : tensors)
    if (t.bytes != 0) out.insert(out.end(), t.data, t.data + t.bytes);
  return {};
}

// Writes a safetensors file: the tensors in the order given, back to back, the header padded
// with spaces to a multiple of 8 bytes. On an error the partial file is removed.
inline io_status write_safetensors(const std::string& path, const std::vector<tensor_view>& tensors,
                                   const std::map<std::string, std::string>& metadata = {}) {
  std::string header;
  std::string problem = detail::safetensors_header(tensors, metadata, true, header);
  if (!problem.empty()) return {path + ": " + problem};
  detail::output_file f;
  std::string err = f.open(path);
  if (!err.empty()) return {err};
  err = f.write(header.data(), header.size());
  for (std::size_t i = 0; i < tensors.size() && err.empty(); ++i) err = f.write(tensors[i].data, tensors[i].bytes);
  if (err.empty()) err = f.close();
  if (!err.empty()) {
    f.close();
    std::remove(path.c_str());
  }
  return {err};
}

// Writes a safetensors file larger than memory: every tensor is declared first (name, dtype,
// shape; data and bytes are ignored), the header is written at once, then the data of each
// tensor in declaration order through write(). The result has the same bytes as
// write_safetensors with the same tensors. A file left unfinished (an error, or destroyed
// before finish()) declares more data than it holds, so every reader rejects it as truncated.
class safetensors_writer {
 public:
  safetensors_writer() = default;
  safetensors_writer(const safetensors_writer&) = delete;
  safetensors_writer& operator=(const safetensors_writer&) = delete;
  safetensors_writer(safetensors_writer&&) noexcept = default;
  safetensors_writer& operator=(safetensors_writer&&) noexcept = default;

  static io_result<safetensors_writer> create(const std::string& path, const std::vector<tensor_view>& declared,
                                              const std::map<std::string, std::string>& metadata = {}) {
    io_result<safetensors_writer> r;
    safetensors_writer& w = r.value;
    std::string header;
    std::string problem = detail::safetensors_header(declared, metadata, false, header, &w.sizes_);
    if (!problem.empty()) {
      r.error = path + ": " + problem;
      return r;
    }
    w.path_ = path;
    w.names_.reserve(declared.size());
    for (const tensor_view& t : declared) w.names_.push_back(t.name);
    r.error = w.file_.open(path);
    if (r.ok()) r.error = w.file_.write(header.data(), header.size());
    if (!r.ok()) r.value = safetensors_writer();
    return r;
  }

  // Appends n bytes to the current tensor (the first one not yet complete). A write never
  // spans two tensors: more bytes than the current tensor still needs is an error.
  io_status write(const unsigned char* bytes, std::size_t n) {
    if (!failed_.empty()) return {failed_};
    if (!file_.is_open()) return {path_.empty() ? "safetensors_writer: not created" : path_ + ": already finished"};
    skip_complete();
    if (n == 0) return {};
    if (bytes == nullptr) return {path_ + ": write of " + std::to_string(n) + " bytes from a null pointer"};
    if (current_ == sizes_.size()) {
      return fail(path_ + ": write of " + std::to_string(n) + " bytes after every declared tensor is complete");
    }
    const std::uint64_t left = sizes_[current_] - written_;
    if (n > left) {
      return fail(path_ + ": tensor " + detail::quote_name(names_[current_]) + ": write of " + std::to_string(n) +
                  " bytes, but it needs only " + std::to_string(left) + " more (of " +
                  std::to_string(sizes_[current_]) + ")");
    }
    std::string err = file_.write(bytes, n);
    if (!err.empty()) return fail(std::move(err));
    written_ += n;
    return {};
  }

  // Bytes the current tensor still needs (0 when every tensor is complete).
  std::uint64_t remaining() const noexcept {
    std::size_t c = current_;
    std::uint64_t w = written_;
    while (c < sizes_.size() && sizes_[c] == w) ++c, w = 0;
    return c < sizes_.size() ? sizes_[c] - w : 0;
  }

  // Checks that every tensor is complete and closes the file.
  io_status finish() {
    if (!failed_.empty()) return {failed_};
    if (!file_.is_open()) return {path_.empty() ? "safetensors_writer: not created" : path_ + ": already finished"};
    skip_complete();
    if (current_ < sizes_.size()) {
      return fail(path_ + ": tensor " + detail::quote_name(names_[current_]) + ": only " + std::to_string(written_) +
                  " of its " + std::to_string(sizes_[current_]) + " bytes were written");
    }
    std::string err = file_.close();
    if (!err.empty()) return fail(std::move(err));
    return {};
  }

 private:
  void skip_complete() noexcept {
    while (current_ < sizes_.size() && sizes_[current_] == written_) ++current_, written_ = 0;
  }
  io_status fail(std::string e) {
    failed_ = e;
    file_.close();
    return {std::move(e)};
  }

  detail::output_file file_;
  std::string path_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> sizes_;
  std::size_t current_ = 0;
  std::uint64_t written_ = 0;
  std::string failed_;
};

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_SAFETENSORS_HPP
