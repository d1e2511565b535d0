// lowbit::io: numpy's .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// Layout: the magic "\x93NUMPY", a major and a minor version byte, the header length (2 bytes
// little-endian in version 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }, padded with spaces and
// ended by '\n' so that the data starts at a multiple of 64 (16 in old files); then the data.
//
// Reading (npy_file): versions 1.0, 2.0 and 3.0; dtypes <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u4 |b1
// ('<' or '|' for the one-byte types). Errors: a bad magic or version, a header that is not the
// three-key dict, fortran_order True (lowbit's tensors are row-major), big-endian data ('>f4'),
// a dtype lowbit does not read (structured, strings, objects, complex), a shape whose byte count
// overflows, and data shorter than the shape needs (bytes after it are ignored, as numpy does).
// The file is memory-mapped; the view is named after the file (its name without directory and
// ".npy").
//
// Writing (write_npy, encode_npy): version 1.0 (2.0 when the header needs more than 65535
// bytes), the header exactly as numpy >= 1.24 writes it: keys in sorted order, the shape as
// Python prints a tuple, room for the first dimension to grow to 21 digits, spaces up to a
// multiple of 64, '\n'. bfloat16 and the FP8 formats have no .npy dtype and are errors.
#ifndef LOWBIT_IO_NPY_HPP
#define LOWBIT_IO_NPY_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mapped_file.hpp"
#include "safetensors.hpp"
#include "tensor.hpp"

namespace lowbit {
namespace io {

namespace detail {

// The numpy type string of a dtype, or null when .npy has none.
inline const char* npy_descr(dtype t) noexcept {
  switch (t) {
    case dtype::f64: return "<f8";
    case dtype::f32: return "<f4";
    case dtype::f16: return "<f2";
    case dtype::i64: return "<i8";
    case dtype::i32: return "<i4";
    case dtype::i16: return "<i2";
    case dtype::i8: return "|i1";
    case dtype::u8: return "|u1";
    case dtype::u32: return "<u4";
    case dtype::boolean: return "|b1";
    default: return nullptr;
  }
}

// The .npy header dict, parsed.
class npy_header_parser {
 public:
  explicit npy_header_parser(std::string_view s) noexcept : s_(s) {}

  // Returns the problem, or empty.
  std::string parse(std::string& descr, bool& fortran, std::vector<std::uint64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    if (!eat('{')) return "the header is not a dict literal";
    for (;;) {
      skip_space();
      if (eat('}')) break;
      std::string key;
      if (!string_literal(key)) return "a key of the header dict is not a string";
      skip_space();
      if (!eat(':')) return "no ':' after " + quote_name(key) + " in the header";
      skip_space();
      if (key == "descr") {
        if (have_descr) return "'descr' appears twice in the header";
        have_descr = true;
        if (peek() == '[') return "structured dtypes are not supported (a 'descr' list)";
        if (!string_literal(descr)) return "'descr' is not a string";
      } else if (key == "fortran_order") {
        if (have_fortran) return "'fortran_order' appears twice in the header";
        have_fortran = true;
        if (word("True")) {
          fortran = true;
        } else if (word("False")) {
          fortran = false;
        } else {
          return "'fortran_order' is not True or False";
        }
      } else if (key == "shape") {
        if (have_shape) return "'shape' appears twice in the header";
        have_shape = true;
        if (!tuple(shape)) return "'shape' is not a tuple of non-negative integers";
      } else {
        return "unexpected key " + quote_name(key) + " in the header";
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return "the header dict is malformed after " + quote_name(key);
    }
    skip_space();
    if (pos_ != s_.size()) return "unexpected text after the header dict";
    if (!have_descr || !have_fortran || !have_shape) {
      return "the header lacks 'descr', 'fortran_order' or 'shape'";
    }
    return {};
  }

 private:
  char peek() const noexcept { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) noexcept {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void skip_space() noexcept {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool word(std::string_view w) noexcept {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  // 'text' or "text", no escapes (numpy's keys and type strings have none).
  bool string_literal(std::string& out) {
    const char q = peek();
    if (q != '\'' && q != '"') return false;
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) return false;
    const std::string_view body = s_.substr(pos_ + 1, end - pos_ - 1);
    if (body.find('\\') != std::string_view::npos) return false;
    out.assign(body.data(), body.size());
    pos_ = end + 1;
    return true;
  }
  // (), (3,), (3, 4), with an optional trailing comma and Python 2's 'L' suffix.
  bool tuple(std::vector<std::uint64_t>& out) {
    out.clear();
    if (!eat('(')) return false;
    for (;;) {
      skip_space();
      if (eat(')')) return true;
      if (peek() < '0' || peek() > '9') return false;
      std::uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const auto d = static_cast<std::uint64_t>(peek() - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        ++pos_;
      }
      eat('L');
      out.push_back(v);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      return eat(')');
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

inline std::string npy_base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".npy") == 0) base.resize(base.size() - 4);
  return base;
}

// Parses an .npy image; the view points into it. Returns the problem with the name in front.
inline std::string parse_npy(const unsigned char* data, std::size_t size, const std::string& name, tensor_view& t) {
  t = tensor_view{};
  t.name = npy_base_name(name);
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || data == nullptr || std::memcmp(data, magic, 6) != 0) {
    return name + ": not an .npy file (no \\x93NUMPY magic)";
  }
  const unsigned major = data[6], minor = data[7];
  std::size_t prefix = 0;
  std::uint64_t header_len = 0;
  if (major == 1 && minor == 0) {
    prefix = 10;
    header_len = static_cast<std::uint64_t>(data[8]) | static_cast<std::uint64_t>(data[9]) << 8;
  } else if ((major == 2 || major == 3) && minor == 0) {
    prefix = 12;
    if (size < prefix) return name + ": the file ends inside the .npy header length";
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | data[8 + i];
  } else {
    return name + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor);
  }
  if (header_len > size - prefix) {
    return name + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
           std::to_string(size) + " bytes)";
  }
  const std::string_view header(reinterpret_cast<const char*>(data + prefix), static_cast<std::size_t>(header_len));
  std::string descr;
  bool fortran = false;
  std::string problem = npy_header_parser(header).parse(descr, fortran, t.shape);
  if (!problem.empty()) return name + ": " + problem;
  if (fortran) return name + ": fortran_order True is not supported (save a C-ordered array: np.ascontiguousarray)";
  if (descr.size() == 3 && descr[0] == '>' && descr[2] != '1') {
    return name + ": big-endian data (" + quote_name(descr) + ") is not supported; save it as little-endian " +
           "(arr.astype(arr.dtype.newbyteorder('<')))";
  }
  bool known = false;
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '>')) {
    for (int i = 0; i <= static_cast<int>(dtype::boolean) && !known; ++i) {
      const auto candidate = static_cast<dtype>(i);
      const char* d = npy_descr(candidate);
      if (d != nullptr && descr[1] == d[1] && descr[2] == d[2] && (descr[0] == d[0] || d[2] == '1')) {
        t.type = candidate;
        known = true;
      }
    }
  }
  if (!known) return name + ": unsupported dtype " + quote_name(descr);
  std::uint64_t need = 0;
  if (!byte_count(t.shape, t.type, need)) {
    return name + ": shape " + shape_string(t.shape) + " of " + descr + " has more than 2^64 bytes";
  }
  const std::size_t offset = prefix + static_cast<std::size_t>(header_len);
  if (need > size - offset) {
    return name + ": truncated: shape " + shape_string(t.shape) + " of " + descr + " needs " + std::to_string(need) +
           " bytes, the file has " + std::to_string(size - offset) + " after the header";
  }
  t.data = data + offset;
  t.bytes = static_cast<std::size_t>(need);
  return {};
}

}  // namespace detail

// An .npy file, memory-mapped. Move-only; the view points into the map and stays valid while
// the object (or the one it is moved to) lives.
class npy_file {
 public:
  npy_file() = default;
  npy_file(const npy_file&) = delete;
  npy_file& operator=(const npy_file&) = delete;
  npy_file(npy_file&&) noexcept = default;
  npy_file& operator=(npy_file&&) noexcept = default;

  static io_result<npy_file> open(const std::string& path) {
    io_result<npy_file> r;
    io_result<mapped_file> m = mapped_file::open(path);
    if (!m) {
      r.error = std::move(m.error);
      return r;
    }
    r.value.map_ = std::move(m.value);
    r.error = detail::parse_npy(r.value.map_.data(), r.value.map_.size(), path, r.value.tensor_);
    if (!r.ok()) r.value = npy_file();
    return r;
  }

  // Parses an .npy image in memory; the view points into it, which must outlive the result.
  static io_result<npy_file> parse(const unsigned char* data, std::size_t size, const std::string& name) {
    io_result<npy_file> r;
    r.error = detail::parse_npy(data, size, name, r.value.tensor_);
    if (!r.ok()) r.value = npy_file();
    return r;
  }

  const tensor_view& tensor() const noexcept { return tensor_; }
  const mapped_file& map() const noexcept { return map_; }

 private:
  mapped_file map_;
  tensor_view tensor_;
};

namespace detail {

// The header of an .npy file holding t (magic to '\n'), or the problem.
inline std::string npy_header(const tensor_view& t, std::string& out) {
  out.clear();
  const char* descr = npy_descr(t.type);
  if (descr == nullptr) return "tensor " + quote_name(t.name) + ": .npy has no " + dtype_name(t.type) + " dtype";
  std::uint64_t need = 0;
  if (!byte_count(t.shape, t.type, need) || need != t.bytes || (t.bytes != 0 && t.data == nullptr)) {
    return "tensor " + quote_name(t.name) + ": " + std::to_string(t.bytes) + " bytes of data for shape " +
           shape_string(t.shape) + " of " + dtype_name(t.type);
  }
  // numpy.lib.format._write_array_header: sorted keys, repr() of each value.
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i != 0) dict += ", ";
    dict += std::to_string(t.shape[i]);
  }
  if (t.shape.size() == 1) dict += ',';
  dict += "), }";
  // Room to grow the first axis in place: 21 digits minus those it has (GROWTH_AXIS_MAX_DIGITS).
  if (!t.shape.empty()) {
    const std::size_t digits = std::to_string(t.shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  // _wrap_header: '\n' ends it; spaces before it bring magic + version + length + header to a
  // multiple of 64. Version 2.0 (a 4-byte length) only when 1.0's 2 bytes cannot hold it.
  const std::size_t align = 64;
  std::size_t prefix = 10;
  const std::size_t hlen = dict.size() + 1;
  std::size_t pad = align - (prefix + hlen) % align;
  if (hlen + pad > 65535) {
    prefix = 12;
    pad = align - (prefix + hlen) % align;
  }
  const std::size_t header_len = hlen + pad;
  out = "\x93NUMPY";
  out.push_back(prefix == 10 ? '\x01' : '\x02');
  out.push_back('\0');
  append_le(out, header_len, static_cast<int>(prefix - 8));
  out += dict;
  out.append(pad, ' ');
  out.push_back('\n');
  return {};
}

}  // namespace detail

// The bytes of an .npy file holding t (version 1.0, or 2.0 for a header over 65535 bytes).
inline io_status encode_npy(const tensor_view& t, std::vector<unsigned char>& out) {
  out.clear();
  std::string header;
  std::string problem = detail::npy_header(t, header);
  if (!problem.empty()) return {problem};
  out.reserve(header.size() + t.bytes);
  out.insert(out.end(), header.begin(), header.end());
  if (t.bytes != 0) out.insert(out.end(), t.data, t.data + t.bytes);
  return {};
}

// Writes t as an .npy file (the header, then the data straight from the view). On an error the
// partial file is removed.
inline io_status write_npy(const std::string& path, const tensor_view& t) {
  std::string header;
  std::string problem = detail::npy_header(t, header);
  if (!problem.empty()) return {path + ": " + problem};
  detail::output_file f;
  std::string err = f.open(path);
  if (!err.empty()) return {err};
  err = f.write(header.data(), header.size());
  if (err.empty()) err = f.write(t.data, t.bytes);
  if (err.empty()) err = f.close();
  if (!err.empty()) {
    f.close();
    std::remove(path.c_str());
  }
  return {err};
}

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_NPY_HPP
