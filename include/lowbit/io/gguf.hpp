// lowbit::io: GGUF, the file format of ggml and llama.cpp (spec: ggml's docs/gguf.md), read and
// written with F32, F16, BF16, Q4_0, Q8_0 and MXFP4 tensors. docs/gguf.md describes the layout
// and every choice made here.
//
//   "GGUF" | u32 version (3) | u64 tensor_count | u64 metadata_kv_count
//   metadata_kv_count x { string key | u32 value type | value }
//   tensor_count x { string name | u32 n_dims | n_dims x u64 dim (ggml order: dim 0 varies
//                    fastest, the number of columns) | u32 ggml type | u64 offset }
//   zero padding to `general.alignment` (default 32)
//   tensor data, each tensor at its offset (relative to the start of the data, a multiple of the
//   alignment), zero-padded to the alignment
//
// Strings are a u64 byte count and the bytes (no terminator). Little-endian only: the files and
// the host (big-endian GGUF files exist; they are rejected with a message saying so).
//
// Reading (gguf_file::open maps the file, gguf_file::parse reads a buffer in place) checks every
// read against the end of the buffer. A malformed file (bad magic, an unsupported version,
// counts or lengths beyond the file, an unknown value or ggml type, more than 4 dimensions,
// dimensions whose product overflows, arrays nested more than gguf_max_array_depth deep, a
// duplicate key or tensor name, a misaligned or out-of-range tensor) gives an error naming the
// file and the key or tensor; nothing throws and nothing reads outside the buffer.
//
// Shapes: gguf_tensor_info::dims are the file's (ggml order); tensor_view and gguf_tensor_out
// use lowbit's row-major order, the reverse ([rows, cols] is stored as dims {cols, rows}).
#ifndef LOWBIT_IO_GGUF_HPP
#define LOWBIT_IO_GGUF_HPP

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../convert.hpp"
#include "../schemes/layouts/ggml.hpp"
#include "../schemes/mx.hpp"
#include "mapped_file.hpp"
#include "tensor.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lowbit/io/gguf.hpp reads and writes GGUF on little-endian hosts only"
#endif

namespace lowbit {
namespace io {

// ----- ggml tensor types -------------------------------------------------------------------------

// The ggml types lowbit reads and writes, with ggml's numbers (ggml.h, enum ggml_type). Any other
// number in a file is an error naming the tensor.
enum class ggml_type : std::uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30, mxfp4 = 39 };

constexpr bool ggml_type_supported(std::uint32_t t) noexcept {
  return t == 0 || t == 1 || t == 2 || t == 8 || t == 30 || t == 39;
}

// ggml's name of the type (ggml_type_name).
constexpr const char* ggml_type_name(ggml_type t) noexcept {
  switch (t) {
    case ggml_type::f32: return "F32";
    case ggml_type::f16: return "F16";
    case ggml_type::q4_0: return "Q4_0";
    case ggml_type::q8_0: return "Q8_0";
    case ggml_type::bf16: return "BF16";
    case ggml_type::mxfp4: return "MXFP4";
  }
  return "?";
}

// Elements per block and bytes per block (ggml_blck_size, ggml_type_size): F32 1/4, F16 and BF16
// 1/2, Q4_0 32/18, Q8_0 32/34, MXFP4 32/17. A row (dims[0] elements) must hold whole blocks.
constexpr std::size_t ggml_block_elements(ggml_type t) noexcept {
  return t == ggml_type::q4_0 || t == ggml_type::q8_0 || t == ggml_type::mxfp4 ? 32 : 1;
}
constexpr std::size_t ggml_block_bytes(ggml_type t) noexcept {
  switch (t) {
    case ggml_type::f32: return 4;
    case ggml_type::f16:
    case ggml_type::bf16: return 2;
    case ggml_type::q4_0: return 18;
    case ggml_type::q8_0: return 34;
    case ggml_type::mxfp4: return 17;
  }
  return 0;
}

// The bytes of a tensor of `type` with the given row-major shape (the last dimension is the
// row): false when the row is not whole blocks or a count overflows 64 bits. An empty shape is
// one element.
inline bool ggml_tensor_bytes(ggml_type type, const std::vector<std::uint64_t>& shape, std::uint64_t& bytes) noexcept {
  std::uint64_t n = 0;
  if (!element_count(shape, n)) return false;
  const std::uint64_t cols = shape.empty() ? 1 : shape.back();
  const std::uint64_t k = ggml_block_elements(type);
  if (cols % k != 0) return false;
  const std::uint64_t blocks = n / k, size = ggml_block_bytes(type);
  if (size == 0 || blocks > UINT64_MAX / size) return false;
  bytes = blocks * size;
  return true;
}

// ----- metadata values ---------------------------------------------------------------------------

// The metadata value types (gguf_metadata_value_type).
enum class gguf_type : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

constexpr const char* gguf_type_name(gguf_type t) noexcept {
  switch (t) {
    case gguf_type::u8: return "u8";
    case gguf_type::i8: return "i8";
    case gguf_type::u16: return "u16";
    case gguf_type::i16: return "i16";
    case gguf_type::u32: return "u32";
    case gguf_type::i32: return "i32";
    case gguf_type::f32: return "f32";
    case gguf_type::boolean: return "bool";
    case gguf_type::string: return "string";
    case gguf_type::array: return "array";
    case gguf_type::u64: return "u64";
    case gguf_type::i64: return "i64";
    case gguf_type::f64: return "f64";
  }
  return "?";
}

// Bytes of a scalar value; 0 for string and array.
constexpr std::size_t gguf_scalar_size(gguf_type t) noexcept {
  switch (t) {
    case gguf_type::u8:
    case gguf_type::i8:
    case gguf_type::boolean: return 1;
    case gguf_type::u16:
    case gguf_type::i16: return 2;
    case gguf_type::u32:
    case gguf_type::i32:
    case gguf_type::f32: return 4;
    case gguf_type::u64:
    case gguf_type::i64:
    case gguf_type::f64: return 8;
    case gguf_type::string:
    case gguf_type::array: return 0;
  }
  return 0;
}

// Arrays may hold arrays (the spec allows it; llama.cpp's reader does not): at most this many
// levels, the outermost array counting as 1. Deeper nesting is an error when read or written.
inline constexpr int gguf_max_array_depth = 8;

// One metadata value: a scalar (integer, float, bool), a string, or an array of one element type.
// Built with the named constructors; read with the as_* accessors (empty / null for another type).
// Arrays of scalars are kept as their little-endian bytes (a million-entry u8 array costs a
// megabyte), arrays of strings as strings, arrays of arrays as values.
class gguf_value {
 public:
  gguf_value() noexcept = default;  // u8 0

  static gguf_value u8(std::uint8_t v) { return scalar(gguf_type::u8, v); }
  static gguf_value i8(std::int8_t v) { return scalar(gguf_type::i8, static_cast<std::uint8_t>(v)); }
  static gguf_value u16(std::uint16_t v) { return scalar(gguf_type::u16, v); }
  static gguf_value i16(std::int16_t v) { return scalar(gguf_type::i16, static_cast<std::uint16_t>(v)); }
  static gguf_value u32(std::uint32_t v) { return scalar(gguf_type::u32, v); }
  static gguf_value i32(std::int32_t v) { return scalar(gguf_type::i32, static_cast<std::uint32_t>(v)); }
  static gguf_value u64(std::uint64_t v) { return scalar(gguf_type::u64, v); }
  static gguf_value i64(std::int64_t v) { return scalar(gguf_type::i64, static_cast<std::uint64_t>(v)); }
  static gguf_value f32(float v) {
    std::uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    return scalar(gguf_type::f32, b);
  }
  static gguf_value f64(double v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, 8);
    return scalar(gguf_type::f64, b);
  }
  static gguf_value boolean(bool v) { return scalar(gguf_type::boolean, v ? 1u : 0u); }
  static gguf_value str(std::string v) {
    gguf_value r;
    r.type_ = gguf_type::string;
    r.string_ = std::move(v);
    return r;
  }
  // An array of numbers: the element type follows T (an integer of 1, 2, 4 or 8 bytes, signed or
  // not, float or double).
  template <class T, std::enable_if_t<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value, int> = 0>
  static gguf_value array(const std::vector<T>& v) {
    gguf_value r;
    r.type_ = gguf_type::array;
    r.element_ = element_type_of<T>();
    r.count_ = v.size();
    r.bytes_.resize(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(r.bytes_.data(), v.data(), r.bytes_.size());
    return r;
  }
  static gguf_value bool_array(const std::vector<bool>& v) {
    gguf_value r;
    r.type_ = gguf_type::array;
    r.element_ = gguf_type::boolean;
    r.count_ = v.size();
    r.bytes_.reserve(v.size());
    for (const bool b : v) r.bytes_.push_back(static_cast<unsigned char>(b ? 1 : 0));
    return r;
  }
  static gguf_value string_array(std::vector<std::string> v) {
    gguf_value r;
    r.type_ = gguf_type::array;
    r.element_ = gguf_type::string;
    r.count_ = v.size();
    r.strings_ = std::move(v);
    return r;
  }
  // An array of arrays: every element must itself be an array (write_gguf checks).
  static gguf_value array_of_arrays(std::vector<gguf_value> v) {
    gguf_value r;
    r.type_ = gguf_type::array;
    r.element_ = gguf_type::array;
    r.count_ = v.size();
    r.arrays_ = std::move(v);
    return r;
  }

  gguf_type type() const noexcept { return type_; }
  // The element type of an array (the type itself for a scalar or string).
  gguf_type element_type() const noexcept { return type_ == gguf_type::array ? element_ : type_; }
  bool is_array() const noexcept { return type_ == gguf_type::array; }

  // Integers of any width and signedness, when the value fits the result.
  std::optional<std::uint64_t> as_uint() const noexcept {
    if (is_unsigned(type_)) return bits_;
    if (is_signed(type_) && signed_value() >= 0) return static_cast<std::uint64_t>(signed_value());
    return std::nullopt;
  }
  std::optional<std::int64_t> as_int() const noexcept {
    if (is_signed(type_)) return signed_value();
    if (is_unsigned(type_) && bits_ <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(bits_);
    return std::nullopt;
  }
  // f32 (exactly) and f64.
  std::optional<double> as_float() const noexcept {
    if (type_ == gguf_type::f32) {
      float f = 0;
      const auto b = static_cast<std::uint32_t>(bits_);
      std::memcpy(&f, &b, 4);
      return static_cast<double>(f);
    }
    if (type_ == gguf_type::f64) {
      double d = 0;
      std::memcpy(&d, &bits_, 8);
      return d;
    }
    return std::nullopt;
  }
  std::optional<bool> as_bool() const noexcept {
    if (type_ == gguf_type::boolean) return bits_ != 0;
    return std::nullopt;
  }
  const std::string* as_string() const noexcept { return type_ == gguf_type::string ? &string_ : nullptr; }

  // Arrays: the element count, element i as a value (a copy; nullopt past the end or for a
  // non-array), the strings of a string array, the arrays of an array of arrays, and the
  // little-endian bytes of an array of scalars (size() * gguf_scalar_size(element_type())).
  std::size_t size() const noexcept { return type_ == gguf_type::array ? count_ : 0; }
  std::optional<gguf_value> at(std::size_t i) const {
    if (type_ != gguf_type::array || i >= count_) return std::nullopt;
    if (element_ == gguf_type::string) return str(strings_[i]);
    if (element_ == gguf_type::array) return arrays_[i];
    const std::size_t s = gguf_scalar_size(element_);
    std::uint64_t b = 0;
    std::memcpy(&b, bytes_.data() + i * s, s);  // little-endian host
    return scalar(element_, b);
  }
  const std::vector<std::string>* strings() const noexcept {
    return type_ == gguf_type::array && element_ == gguf_type::string ? &strings_ : nullptr;
  }
  const std::vector<gguf_value>* arrays() const noexcept {
    return type_ == gguf_type::array && element_ == gguf_type::array ? &arrays_ : nullptr;
  }
  const std::vector<unsigned char>* scalar_bytes() const noexcept {
    return type_ == gguf_type::array && gguf_scalar_size(element_) != 0 ? &bytes_ : nullptr;
  }

  // The same type and the same bits (floats compare by bit pattern: NaN equals itself, -0 is
  // not +0).
  friend bool operator==(const gguf_value& a, const gguf_value& b) noexcept {
    return a.type_ == b.type_ && a.element_type() == b.element_type() && a.bits_ == b.bits_ && a.count_ == b.count_ &&
           a.string_ == b.string_ && a.bytes_ == b.bytes_ && a.strings_ == b.strings_ && a.arrays_ == b.arrays_;
  }
  friend bool operator!=(const gguf_value& a, const gguf_value& b) noexcept { return !(a == b); }

 private:
  friend struct gguf_codec;

  static gguf_value scalar(gguf_type t, std::uint64_t bits) {
    gguf_value r;
    r.type_ = t;
    r.bits_ = is_signed(t) ? sign_extend(bits, gguf_scalar_size(t)) : bits;
    return r;
  }
  static constexpr bool is_unsigned(gguf_type t) noexcept {
    return t == gguf_type::u8 || t == gguf_type::u16 || t == gguf_type::u32 || t == gguf_type::u64;
  }
  static constexpr bool is_signed(gguf_type t) noexcept {
    return t == gguf_type::i8 || t == gguf_type::i16 || t == gguf_type::i32 || t == gguf_type::i64;
  }
  // The two's complement value of the low `size` bytes, extended to 64 bits.
  static std::uint64_t sign_extend(std::uint64_t b, std::size_t size) noexcept {
    if (size >= 8) return b;
    const std::uint64_t sign = std::uint64_t{1} << (8 * size - 1);
    const std::uint64_t low = b & ((sign << 1) - 1);
    return (low ^ sign) - sign;
  }
  std::int64_t signed_value() const noexcept {
    std::int64_t v = 0;
    std::memcpy(&v, &bits_, 8);
    return v;
  }
  template <class T>
  static constexpr gguf_type element_type_of() noexcept {
    if constexpr (std::is_floating_point<T>::value) {
      static_assert(sizeof(T) == 4 || sizeof(T) == 8, "GGUF floats are f32 or f64");
      return sizeof(T) == 4 ? gguf_type::f32 : gguf_type::f64;
    } else {
      static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "GGUF integer widths");
      constexpr bool s = std::is_signed<T>::value;
      return sizeof(T) == 1   ? (s ? gguf_type::i8 : gguf_type::u8)
             : sizeof(T) == 2 ? (s ? gguf_type::i16 : gguf_type::u16)
             : sizeof(T) == 4 ? (s ? gguf_type::i32 : gguf_type::u32)
                              : (s ? gguf_type::i64 : gguf_type::u64);
    }
  }

  gguf_type type_ = gguf_type::u8;
  gguf_type element_ = gguf_type::u8;  // arrays
  std::uint64_t bits_ = 0;             // scalars: zero- or sign-extended integer, float bits, bool 0/1
  std::size_t count_ = 0;              // arrays: elements
  std::string string_;                 // string
  std::vector<unsigned char> bytes_;   // arrays of scalars
  std::vector<std::string> strings_;   // arrays of strings
  std::vector<gguf_value> arrays_;     // arrays of arrays
};

using gguf_metadata = std::vector<std::pair<std::string, gguf_value>>;

// ----- reading -----------------------------------------------------------------------------------

struct gguf_tensor_info {
  std::string name;
  std::vector<std::uint64_t> dims;  // ggml order: dims[0] varies fastest (the columns)
  ggml_type type = ggml_type::f32;
  std::uint64_t offset = 0;          // relative to the start of the tensor data
  const unsigned char* data = nullptr;
  std::size_t bytes = 0;

  // lowbit's row-major shape: dims reversed.
  std::vector<std::uint64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
};

// Reads the metadata, the tensor infos and the tensors' places in the file; moves, does not copy.
// A file from open() owns its memory map (tensor data pointers stay valid while it lives, moves
// included); one from parse() points into the caller's buffer, which must outlive it.
struct gguf_codec;  // the parser and the serializer (below)

class gguf_file {
 public:
  gguf_file() = default;
  gguf_file(const gguf_file&) = delete;
  gguf_file& operator=(const gguf_file&) = delete;
  gguf_file(gguf_file&&) noexcept = default;
  gguf_file& operator=(gguf_file&&) noexcept = default;
  ~gguf_file() = default;

  static io_result<gguf_file> open(const std::string& path);
  // `name` is used in error messages.
  static io_result<gguf_file> parse(const unsigned char* data, std::size_t size, const std::string& name);

  std::uint32_t version() const noexcept { return version_; }
  std::uint32_t alignment() const noexcept { return alignment_; }
  // Byte offset of the tensor data in the file (the end of the tensor infos, padded).
  std::size_t data_offset() const noexcept { return data_offset_; }

  const gguf_metadata& metadata() const noexcept { return metadata_; }
  const gguf_value* find_metadata(std::string_view key) const noexcept {
    for (const auto& kv : metadata_)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  const std::vector<gguf_tensor_info>& tensor_infos() const noexcept { return infos_; }
  const gguf_tensor_info* find_tensor(std::string_view name) const noexcept {
    for (const auto& t : infos_)
      if (t.name == name) return &t;
    return nullptr;
  }

  // The F32, F16 and BF16 tensors as tensor_views (shape row-major: dims reversed), in file
  // order; the block-quantized ones are in tensor_infos() only.
  std::vector<tensor_view> float_tensors() const {
    std::vector<tensor_view> out;
    for (const auto& t : infos_) {
      dtype d = dtype::f32;
      if (t.type == ggml_type::f32) d = dtype::f32;
      else if (t.type == ggml_type::f16) d = dtype::f16;
      else if (t.type == ggml_type::bf16) d = dtype::bf16;
      else continue;
      out.push_back(tensor_view{t.name, d, t.shape(), t.data, t.bytes});
    }
    return out;
  }

 private:
  friend struct gguf_codec;
  mapped_file map_;
  std::uint32_t version_ = 3;
  std::uint32_t alignment_ = 32;
  std::size_t data_offset_ = 0;
  gguf_metadata metadata_;
  std::vector<gguf_tensor_info> infos_;
};

// ----- writing -----------------------------------------------------------------------------------

// A tensor to write: its row-major shape (lowbit order; reversed into ggml's dims in the file),
// its ggml type and exactly its bytes (ggml_tensor_bytes), as ggml stores them.
struct gguf_tensor_out {
  std::string name;
  std::vector<std::uint64_t> shape;
  ggml_type type = ggml_type::f32;
  std::vector<unsigned char> bytes;
};

// What a streaming writer needs to know before the data: a tensor without its bytes.
struct gguf_tensor_desc {
  std::string name;
  std::vector<std::uint64_t> shape;
  ggml_type type = ggml_type::f32;
};

// Writes a GGUF v3 file tensor by tensor, so that a checkpoint larger than memory can be
// converted: create() writes the header, the metadata and the tensor infos; write_tensor() takes
// the tensors' bytes in the order they were declared; finish() checks that all came and closes
// the file. On any error, or when the writer is destroyed before finish(), the partial file is
// removed.
class gguf_writer {
 public:
  gguf_writer() = default;
  gguf_writer(const gguf_writer&) = delete;
  gguf_writer& operator=(const gguf_writer&) = delete;
  gguf_writer(gguf_writer&& o) noexcept { swap(o); }
  gguf_writer& operator=(gguf_writer&& o) noexcept {
    gguf_writer(std::move(o)).swap(*this);
    return *this;
  }
  ~gguf_writer() { abandon(); }

  // Errors (nothing is created): alignment not a power of two of at least 8; a key empty,
  // longer than 65535 bytes or repeated; `general.alignment` present with another type than u32
  // or another value than `alignment`; an array of arrays holding a non-array or nested beyond
  // gguf_max_array_depth; a tensor name empty, longer than 63 bytes (ggml's GGML_MAX_NAME) or
  // repeated; more than 4 dimensions, a zero dimension, or a size beyond INT64_MAX; a row that is
  // not whole blocks. `general.alignment` (u32) is appended to the metadata when alignment is not
  // 32 and the metadata does not hold it.
  static io_result<gguf_writer> create(const std::string& path, const gguf_metadata& metadata,
                                       const std::vector<gguf_tensor_desc>& tensors, std::uint32_t alignment = 32);

  // The next tensor's bytes: exactly its size, else an error (and the file is removed).
  io_status write_tensor(const unsigned char* data, std::size_t bytes);
  // All tensors written: flushes and closes the file.
  io_status finish();

  std::size_t tensors_written() const noexcept { return next_; }

  void swap(gguf_writer& o) noexcept {
    std::swap(file_, o.file_);
    std::swap(path_, o.path_);
    std::swap(names_, o.names_);
    std::swap(sizes_, o.sizes_);
    std::swap(next_, o.next_);
    std::swap(alignment_, o.alignment_);
    std::swap(written_, o.written_);
  }

 private:
  friend struct gguf_codec;
  io_status fail(const std::string& msg) {
    abandon();
    return {path_ + ": " + msg};
  }
  void abandon() noexcept {
    if (file_ != nullptr) {
      std::fclose(file_);
      file_ = nullptr;
      std::remove(path_.c_str());
    }
  }
  bool put(const void* p, std::size_t n) noexcept {
    if (n != 0 && std::fwrite(p, 1, n, file_) != n) return false;
    written_ += n;
    return true;
  }
  bool pad() noexcept {
    static const unsigned char zeros[64] = {};
    while (written_ % alignment_ != 0) {
      const std::uint64_t rest = alignment_ - written_ % alignment_;
      if (!put(zeros, static_cast<std::size_t>(rest < 64 ? rest : 64))) return false;
    }
    return true;
  }

  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> sizes_;
  std::size_t next_ = 0;
  std::uint32_t alignment_ = 32;
  std::uint64_t written_ = 0;
};

// Writes metadata and tensors (in this order, each tensor's data at the next multiple of the
// alignment, zero-padded after it, as ggml's gguf_write_to_file does). The errors of
// gguf_writer::create, and a tensor whose byte count is not its shape's.
io_status write_gguf(const std::string& path, const gguf_metadata& metadata,
                     const std::vector<gguf_tensor_out>& tensors, std::uint32_t alignment = 32);

// An F32, F16 or BF16 tensor_view as a tensor to write (its bytes copied). Errors: another
// dtype, or bytes that do not match the shape.
io_result<gguf_tensor_out> gguf_float_tensor(const tensor_view& t);

// A float32 [rows, cols] matrix (row-major, [out, in] as checkpoints store weights) in ggml's
// storage: F32 copied; F16 and BF16 rounded to nearest even (overflow to Inf, as ggml converts);
// Q4_0 and Q8_0 by ggml_quantize_q4_0 / ggml_quantize_q8_0 (ggml's reference quantizers bit for
// bit); MXFP4 by mxfp4_quantize_ggml with mx_presets::ggml() and e8m0_rule::floor_log2f
// (ggml's floorf(log2f(amax))). Errors name the tensor: cols not a multiple of
// 32 for the block types, a size that overflows, a null src, NaN or Inf in a quantized block, a
// Q4_0/Q8_0 scale beyond fp16.
io_result<gguf_tensor_out> gguf_quantize(const std::string& name, const float* src, std::size_t rows,
                                         std::size_t cols, ggml_type type);

// ----- implementation ----------------------------------------------------------------------------

struct gguf_codec {
  static constexpr std::uint64_t max_key_bytes = 65535;     // the spec's limit
  static constexpr std::uint64_t max_name_bytes = 64;       // the spec's limit (reading)
  static constexpr std::uint64_t max_write_name_bytes = 63; // ggml's GGML_MAX_NAME - 1 (writing)
  static constexpr std::uint32_t max_dims = 4;

  struct cursor {
    const unsigned char* p;
    std::size_t size;
    std::size_t pos;
    std::size_t left() const noexcept { return size - pos; }
    template <class T>
    bool read(T& v) noexcept {
      if (sizeof(T) > left()) return false;
      std::memcpy(&v, p + pos, sizeof(T));  // little-endian host
      pos += sizeof(T);
      return true;
    }
    // A u64 length and that many bytes; false with `beyond` set when the length passes the end.
    bool read_string(std::string_view& s, bool& beyond) noexcept {
      beyond = false;
      std::uint64_t n = 0;
      if (!read(n)) return false;
      if (n > left()) {
        beyond = true;
        return false;
      }
      s = std::string_view(reinterpret_cast<const char*>(p + pos), static_cast<std::size_t>(n));
      pos += static_cast<std::size_t>(n);
      return true;
    }
  };

  static std::string q(std::string_view s) { return "'" + std::string(s) + "'"; }

  static bool valid_value_type(std::uint32_t t) noexcept { return t <= 12; }

  // Fewest bytes one value of type t takes in a file (for the count checks before allocating).
  static std::size_t min_bytes(gguf_type t) noexcept {
    if (t == gguf_type::string) return 8;
    if (t == gguf_type::array) return 12;
    return gguf_scalar_size(t);
  }

  // Reads a value of type t (the type already read). depth: arrays enclosing it. Returns an
  // error message or "".
  static std::string read_value(cursor& c, gguf_type t, int depth, gguf_value& out) {
    out = gguf_value{};
    out.type_ = t;
    if (t == gguf_type::string) {
      std::string_view s;
      bool beyond = false;
      if (!c.read_string(s, beyond)) return beyond ? "string length beyond the end of the file" : "truncated string";
      out.string_.assign(s.data(), s.size());
      return {};
    }
    if (t != gguf_type::array) {
      const std::size_t size = gguf_scalar_size(t);
      if (size > c.left()) return std::string("truncated ") + gguf_type_name(t) + " value";
      std::uint64_t b = 0;
      std::memcpy(&b, c.p + c.pos, size);
      c.pos += size;
      if (t == gguf_type::boolean && b > 1) return "bool value " + std::to_string(b) + " is neither 0 nor 1";
      out.bits_ = gguf_value::is_signed(t) ? gguf_value::sign_extend(b, size) : b;
      return {};
    }
    if (depth + 1 > gguf_max_array_depth)
      return "arrays nested more than " + std::to_string(gguf_max_array_depth) + " deep";
    std::uint32_t et = 0;
    std::uint64_t n = 0;
    if (!c.read(et) || !c.read(n)) return "truncated array header";
    if (!valid_value_type(et)) return "array of unknown value type " + std::to_string(et);
    const auto e = static_cast<gguf_type>(et);
    out.element_ = e;
    const std::size_t least = min_bytes(e);
    if (n > c.left() / least)
      return "array of " + std::to_string(n) + " " + gguf_type_name(e) + " needs at least " +
             (n > UINT64_MAX / least ? std::string("2^64") : std::to_string(n * least)) + " bytes, " +
             std::to_string(c.left()) + " left in the file";
    const auto count = static_cast<std::size_t>(n);
    out.count_ = count;
    if (e == gguf_type::string) {
      out.strings_.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        std::string_view s;
        bool beyond = false;
        if (!c.read_string(s, beyond))
          return "string " + std::to_string(i) + " of the array: " +
                 (beyond ? "length beyond the end of the file" : "truncated");
        out.strings_[i].assign(s.data(), s.size());
      }
    } else if (e == gguf_type::array) {
      out.arrays_.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        std::string err = read_value(c, gguf_type::array, depth + 1, out.arrays_[i]);
        if (!err.empty()) return "element " + std::to_string(i) + " of the array: " + err;
      }
    } else {
      const std::size_t bytes = count * least;  // fits: count <= left / least
      out.bytes_.assign(c.p + c.pos, c.p + c.pos + bytes);
      c.pos += bytes;
      if (e == gguf_type::boolean)
        for (std::size_t i = 0; i < count; ++i)
          if (out.bytes_[i] > 1)
            return "bool element " + std::to_string(i) + " of the array is " + std::to_string(out.bytes_[i]) +
                   ", neither 0 nor 1";
    }
    return {};
  }

  static std::string parse(gguf_file& f, const unsigned char* data, std::size_t size) {
    if (data == nullptr && size != 0) return "null buffer";
    cursor c{data, size, 0};
    static const unsigned char magic[4] = {'G', 'G', 'U', 'F'};
    if (size < 4) {
      if (size == 0 || std::memcmp(data, magic, size) == 0) return "truncated header (" + std::to_string(size) + " bytes)";
      return "bad magic: not a GGUF file";
    }
    if (std::memcmp(data, magic, 4) != 0) return "bad magic: not a GGUF file";
    c.pos = 4;
    std::uint32_t version = 0;
    std::uint64_t n_tensors = 0, n_kv = 0;
    if (!c.read(version)) return "truncated header";
    if (version != 0 && (version & 0xFFFFu) == 0)
      return "GGUF version " + std::to_string(version) + " looks byte-swapped: big-endian files are not supported";
    if (version != 2 && version != 3)
      return "unsupported GGUF version " + std::to_string(version) + " (lowbit reads versions 2 and 3)";
    if (!c.read(n_tensors) || !c.read(n_kv)) return "truncated header";
    f.version_ = version;
    // Each pair takes at least 14 bytes (key length, a 1-byte key, type, a 1-byte value); each
    // tensor info at least 24 (name length, n_dims, type, offset).
    if (n_kv > c.left() / 14)
      return "metadata_kv_count " + std::to_string(n_kv) + " is more than the " + std::to_string(c.left()) +
             " bytes left can hold";
    if (n_tensors > c.left() / 24)
      return "tensor_count " + std::to_string(n_tensors) + " is more than the " + std::to_string(c.left()) +
             " bytes left can hold";

    // metadata
    f.metadata_.reserve(static_cast<std::size_t>(n_kv));
    std::unordered_set<std::string_view> keys;
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      std::string_view key;
      bool beyond = false;
      if (!c.read_string(key, beyond))
        return "metadata key " + std::to_string(i) + ": " +
               (beyond ? "length beyond the end of the file" : std::string("truncated"));
      if (key.empty()) return "metadata key " + std::to_string(i) + " is empty";
      if (key.size() > max_key_bytes)
        return "metadata key " + std::to_string(i) + " has " + std::to_string(key.size()) +
               " bytes (GGUF allows 65535)";
      if (!keys.insert(key).second) return "duplicate metadata key " + q(key);
      std::uint32_t t = 0;
      if (!c.read(t)) return "metadata " + q(key) + ": truncated value type";
      if (!valid_value_type(t)) return "metadata " + q(key) + ": unknown value type " + std::to_string(t);
      gguf_value v;
      const std::string err = read_value(c, static_cast<gguf_type>(t), 0, v);
      if (!err.empty()) return "metadata " + q(key) + ": " + err;
      f.metadata_.emplace_back(std::string(key), std::move(v));
    }

    // alignment
    f.alignment_ = 32;
    if (const gguf_value* a = f.find_metadata("general.alignment")) {
      if (a->type() != gguf_type::u32)
        return std::string("metadata 'general.alignment' is ") + gguf_type_name(a->type()) + ", not u32";
      const std::uint64_t v = *a->as_uint();
      if (v == 0 || (v & (v - 1)) != 0)
        return "metadata 'general.alignment' = " + std::to_string(v) + " is not a power of two";
      f.alignment_ = static_cast<std::uint32_t>(v);
    }

    // tensor infos
    f.infos_.reserve(static_cast<std::size_t>(n_tensors));
    std::unordered_set<std::string_view> names;
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
      const std::string which = "tensor " + std::to_string(i);
      std::string_view name;
      bool beyond = false;
      if (!c.read_string(name, beyond))
        return which + ": name " + (beyond ? "length beyond the end of the file" : std::string("truncated"));
      if (name.size() > max_name_bytes)
        return which + ": name of " + std::to_string(name.size()) + " bytes (GGUF allows 64)";
      const std::string t = "tensor " + q(name);
      if (!names.insert(name).second) return "duplicate " + t;
      gguf_tensor_info info;
      info.name.assign(name.data(), name.size());
      std::uint32_t n_dims = 0;
      if (!c.read(n_dims)) return t + ": truncated";
      if (n_dims > max_dims) return t + ": " + std::to_string(n_dims) + " dimensions (GGUF allows at most 4)";
      info.dims.resize(n_dims);
      std::uint64_t n = 1;
      for (std::uint32_t d = 0; d < n_dims; ++d) {
        if (!c.read(info.dims[d])) return t + ": truncated";
        const std::uint64_t x = info.dims[d];
        if (x > static_cast<std::uint64_t>(INT64_MAX) || (x != 0 && n > static_cast<std::uint64_t>(INT64_MAX) / x))
          return t + ": dimensions overflow (their product must fit int64)";
        n *= x;
      }
      std::uint32_t type = 0;
      if (!c.read(type)) return t + ": truncated";
      if (!ggml_type_supported(type))
        return t + ": ggml type " + std::to_string(type) +
               " is not supported (lowbit reads F32, F16, BF16, Q4_0, Q8_0, MXFP4)";
      info.type = static_cast<ggml_type>(type);
      const std::uint64_t cols = n_dims == 0 ? 1 : info.dims[0];
      const std::uint64_t k = ggml_block_elements(info.type);
      if (cols % k != 0)
        return t + ": " + std::to_string(cols) + " elements per row is not a multiple of the " +
               ggml_type_name(info.type) + " block of " + std::to_string(k);
      const std::uint64_t size_per_block = ggml_block_bytes(info.type);
      if (n / k > UINT64_MAX / size_per_block || n / k * size_per_block > std::numeric_limits<std::size_t>::max())
        return t + ": byte size overflows";
      info.bytes = static_cast<std::size_t>(n / k * size_per_block);
      if (!c.read(info.offset)) return t + ": truncated";
      f.infos_.push_back(std::move(info));
    }

    // data
    std::size_t start = c.pos;
    if (n_tensors > 0) {
      const std::size_t a = f.alignment_;
      const std::size_t rem = start % a;
      const std::size_t padded = rem == 0 ? start : start + (a - rem);  // start <= size, a <= 2^31
      if (padded > size)
        return "tensor data would start at byte " + std::to_string(padded) + ", beyond the end of the file (" +
               std::to_string(size) + " bytes)";
      start = padded;
    }
    f.data_offset_ = start;
    const std::size_t room = size - start;
    for (auto& info : f.infos_) {
      const std::string t = "tensor " + q(info.name);
      if (info.offset % f.alignment_ != 0)
        return t + ": data offset " + std::to_string(info.offset) + " is not a multiple of the alignment " +
               std::to_string(f.alignment_);
      if (info.offset > room || info.bytes > room - info.offset)
        return t + ": data [" + std::to_string(info.offset) + ", +" + std::to_string(info.bytes) +
               ") ends beyond the end of the file (" + std::to_string(room) + " bytes of tensor data)";
      info.data = data + start + static_cast<std::size_t>(info.offset);
    }
    return {};
  }

  // ----- serializing -----

  template <class T>
  static void put(std::vector<unsigned char>& out, T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian host
    out.insert(out.end(), b, b + sizeof(T));
  }
  static void put_string(std::vector<unsigned char>& out, std::string_view s) {
    put<std::uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }

  // Checks a value to write: arrays of arrays hold arrays, nesting within the limit.
  static std::string check_value(const gguf_value& v, int depth) {
    if (!v.is_array()) return {};
    if (depth + 1 > gguf_max_array_depth)
      return "arrays nested more than " + std::to_string(gguf_max_array_depth) + " deep";
    if (v.element_ == gguf_type::array) {
      for (std::size_t i = 0; i < v.arrays_.size(); ++i) {
        if (!v.arrays_[i].is_array())
          return "element " + std::to_string(i) + " of an array of arrays is a " +
                 gguf_type_name(v.arrays_[i].type());
        std::string err = check_value(v.arrays_[i], depth + 1);
        if (!err.empty()) return err;
      }
    }
    return {};
  }

  // The value's bytes after its type tag.
  static void put_value(std::vector<unsigned char>& out, const gguf_value& v) {
    if (v.type_ == gguf_type::string) {
      put_string(out, v.string_);
      return;
    }
    if (v.type_ != gguf_type::array) {
      unsigned char b[8];
      std::memcpy(b, &v.bits_, 8);  // little-endian host: the low bytes first
      out.insert(out.end(), b, b + gguf_scalar_size(v.type_));
      return;
    }
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.element_));
    put<std::uint64_t>(out, v.count_);
    if (v.element_ == gguf_type::string) {
      for (const auto& s : v.strings_) put_string(out, s);
    } else if (v.element_ == gguf_type::array) {
      for (const auto& a : v.arrays_) put_value(out, a);
    } else {
      out.insert(out.end(), v.bytes_.begin(), v.bytes_.end());
    }
  }

  // Validates the tensors and builds everything before the tensor data (padded). Sizes of the
  // tensors into *sizes. Returns an error message or "".
  static std::string header(const gguf_metadata& metadata, const std::vector<gguf_tensor_desc>& tensors,
                            std::uint32_t alignment, std::vector<unsigned char>& out,
                            std::vector<std::uint64_t>& sizes) {
    if (alignment < 8 || (alignment & (alignment - 1)) != 0)
      return "alignment " + std::to_string(alignment) + " is not a power of two of at least 8";
    std::unordered_set<std::string_view> keys;
    bool has_alignment = false;
    for (const auto& kv : metadata) {
      const std::string& key = kv.first;
      if (key.empty()) return "empty metadata key";
      if (key.size() > max_key_bytes)
        return "metadata key of " + std::to_string(key.size()) + " bytes (GGUF allows 65535)";
      if (!keys.insert(key).second) return "duplicate metadata key " + q(key);
      std::string err = check_value(kv.second, 0);
      if (!err.empty()) return "metadata " + q(key) + ": " + err;
      if (key == "general.alignment") {
        if (kv.second.type() != gguf_type::u32)
          return std::string("metadata 'general.alignment' is ") + gguf_type_name(kv.second.type()) + ", not u32";
        if (*kv.second.as_uint() != alignment)
          return "metadata 'general.alignment' = " + std::to_string(*kv.second.as_uint()) +
                 " differs from the alignment " + std::to_string(alignment);
        has_alignment = true;
      }
    }
    const bool add_alignment = !has_alignment && alignment != 32;

    std::unordered_set<std::string_view> names;
    sizes.clear();
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> offsets;
    for (const auto& t : tensors) {
      const std::string w = "tensor " + q(t.name);
      if (t.name.empty()) return "empty tensor name";
      if (t.name.size() > max_write_name_bytes)
        return w + ": name of " + std::to_string(t.name.size()) + " bytes (ggml reads at most 63)";
      if (!names.insert(t.name).second) return "duplicate " + w;
      if (!ggml_type_supported(static_cast<std::uint32_t>(t.type)))
        return w + ": ggml type " + std::to_string(static_cast<std::uint32_t>(t.type)) + " is not supported";
      if (t.shape.size() > max_dims)
        return w + ": " + std::to_string(t.shape.size()) + " dimensions (GGUF allows at most 4)";
      std::uint64_t n = 1;
      for (const std::uint64_t d : t.shape) {
        if (d == 0) return w + ": a zero dimension (ggml's reader rejects it)";
        if (d > static_cast<std::uint64_t>(INT64_MAX) || n > static_cast<std::uint64_t>(INT64_MAX) / d)
          return w + ": size beyond INT64_MAX elements";
        n *= d;
      }
      std::uint64_t bytes = 0;
      if (!ggml_tensor_bytes(t.type, t.shape, bytes)) {
        const std::uint64_t cols = t.shape.empty() ? 1 : t.shape.back();
        return w + ": " + std::to_string(cols) + " columns are not a multiple of the " + ggml_type_name(t.type) +
               " block of " + std::to_string(ggml_block_elements(t.type));
      }
      sizes.push_back(bytes);
      offsets.push_back(offset);
      const std::uint64_t padded = bytes + (alignment - bytes % alignment) % alignment;
      if (padded < bytes || offset > UINT64_MAX - padded) return w + ": file size overflows";
      offset += padded;
    }

    out.clear();
    const unsigned char magic[4] = {'G', 'G', 'U', 'F'};
    out.insert(out.end(), magic, magic + 4);
    put<std::uint32_t>(out, 3);
    put<std::uint64_t>(out, tensors.size());
    put<std::uint64_t>(out, metadata.size() + (add_alignment ? 1 : 0));
    for (const auto& kv : metadata) {
      put_string(out, kv.first);
      put<std::uint32_t>(out, static_cast<std::uint32_t>(kv.second.type()));
      put_value(out, kv.second);
    }
    if (add_alignment) {
      put_string(out, "general.alignment");
      put<std::uint32_t>(out, static_cast<std::uint32_t>(gguf_type::u32));
      put<std::uint32_t>(out, alignment);
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      put_string(out, t.name);
      if (t.shape.empty()) {
        put<std::uint32_t>(out, 1);  // a scalar: one dimension of 1, as ggml writes it
        put<std::uint64_t>(out, 1);
      } else {
        put<std::uint32_t>(out, static_cast<std::uint32_t>(t.shape.size()));
        for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<std::uint64_t>(out, *d);
      }
      put<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
      put<std::uint64_t>(out, offsets[i]);
    }
    while (out.size() % alignment != 0) out.push_back(0);  // always, as ggml does
    return {};
  }
};

inline io_result<gguf_file> gguf_file::parse(const unsigned char* data, std::size_t size, const std::string& name) {
  io_result<gguf_file> r;
  std::string err = gguf_codec::parse(r.value, data, size);
  if (!err.empty()) {
    r.value = gguf_file{};
    r.error = name + ": " + err;
  }
  return r;
}

inline io_result<gguf_file> gguf_file::open(const std::string& path) {
  io_result<gguf_file> r;
  io_result<mapped_file> m = mapped_file::open(path);
  if (!m) {
    r.error = m.error;
    return r;
  }
  r = parse(m.value.data(), m.value.size(), path);
  if (r) r.value.map_ = std::move(m.value);  // the map's address does not change: pointers stay valid
  return r;
}

inline io_result<gguf_writer> gguf_writer::create(const std::string& path, const gguf_metadata& metadata,
                                                  const std::vector<gguf_tensor_desc>& tensors,
                                                  std::uint32_t alignment) {
  io_result<gguf_writer> r;
  std::vector<unsigned char> head;
  std::vector<std::uint64_t> sizes;
  const std::string err = gguf_codec::header(metadata, tensors, alignment, head, sizes);
  if (!err.empty()) {
    r.error = path + ": " + err;
    return r;
  }
  gguf_writer& w = r.value;
  w.path_ = path;
  w.alignment_ = alignment;
  w.sizes_ = std::move(sizes);
  w.names_.reserve(tensors.size());
  for (const auto& t : tensors) w.names_.push_back(t.name);
  w.file_ = std::fopen(path.c_str(), "wb");
  if (w.file_ == nullptr) {
    r.error = path + ": cannot create: " + std::strerror(errno);
    return r;
  }
  if (!w.put(head.data(), head.size())) {
    r.error = w.fail("write failed: " + std::string(std::strerror(errno))).error;
    return r;
  }
  return r;
}

inline io_status gguf_writer::write_tensor(const unsigned char* data, std::size_t bytes) {
  if (file_ == nullptr) return {path_ + ": writer is not open"};
  if (next_ >= sizes_.size()) return fail("more tensors written than declared (" + std::to_string(sizes_.size()) + ")");
  const std::string t = "tensor '" + names_[next_] + "'";
  if (bytes != sizes_[next_])
    return fail(t + ": " + std::to_string(bytes) + " bytes given, its shape and type need " +
                std::to_string(sizes_[next_]));
  if (bytes != 0 && data == nullptr) return fail(t + ": null data");
  if (!put(data, bytes) || !pad()) return fail(t + ": write failed: " + std::string(std::strerror(errno)));
  ++next_;
  return {};
}

inline io_status gguf_writer::finish() {
  if (file_ == nullptr) return {path_ + ": writer is not open"};
  if (next_ != sizes_.size())
    return fail(std::to_string(next_) + " of " + std::to_string(sizes_.size()) + " tensors written");
  const bool flushed = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    std::remove(path_.c_str());
    return {path_ + ": write failed: " + std::string(std::strerror(errno))};
  }
  return {};
}

inline io_status write_gguf(const std::string& path, const gguf_metadata& metadata,
                            const std::vector<gguf_tensor_out>& tensors, std::uint32_t alignment) {
  std::vector<gguf_tensor_desc> descs;
  descs.reserve(tensors.size());
  for (const auto& t : tensors) descs.push_back({t.name, t.shape, t.type});
  // Sizes first, so that a wrong byte count creates no file.
  for (const auto& t : tensors) {
    std::uint64_t bytes = 0;
    if (ggml_type_supported(static_cast<std::uint32_t>(t.type)) && ggml_tensor_bytes(t.type, t.shape, bytes) &&
        bytes != t.bytes.size())
      return {path + ": tensor '" + t.name + "': " + std::to_string(t.bytes.size()) +
              " bytes given, its shape and type need " + std::to_string(bytes)};
  }
  io_result<gguf_writer> w = gguf_writer::create(path, metadata, descs, alignment);
  if (!w) return {w.error};
  for (const auto& t : tensors) {
    io_status s = w.value.write_tensor(t.bytes.data(), t.bytes.size());
    if (!s) return s;
  }
  return w.value.finish();
}

inline io_result<gguf_tensor_out> gguf_float_tensor(const tensor_view& t) {
  io_result<gguf_tensor_out> r;
  ggml_type g = ggml_type::f32;
  if (t.type == dtype::f32) g = ggml_type::f32;
  else if (t.type == dtype::f16) g = ggml_type::f16;
  else if (t.type == dtype::bf16) g = ggml_type::bf16;
  else {
    r.error = "tensor '" + t.name + "': dtype " + dtype_name(t.type) + " has no GGUF float type (F32, F16, BF16)";
    return r;
  }
  std::uint64_t n = 0;
  if (!element_count(t.shape, n) || n > UINT64_MAX / dtype_size(t.type) || n * dtype_size(t.type) != t.bytes ||
      (t.bytes != 0 && t.data == nullptr)) {
    r.error = "tensor '" + t.name + "': " + std::to_string(t.bytes) + " bytes do not match its shape";
    return r;
  }
  r.value.name = t.name;
  r.value.shape = t.shape;
  r.value.type = g;
  if (t.bytes != 0) r.value.bytes.assign(t.data, t.data + t.bytes);
  return r;
}

inline io_result<gguf_tensor_out> gguf_quantize(const std::string& name, const float* src, std::size_t rows,
                                                std::size_t cols, ggml_type type) {
  io_result<gguf_tensor_out> r;
  const std::string t = "tensor '" + name + "'";
  if (!ggml_type_supported(static_cast<std::uint32_t>(type))) {
    r.error = t + ": ggml type " + std::to_string(static_cast<std::uint32_t>(type)) + " is not supported";
    return r;
  }
  const std::size_t k = ggml_block_elements(type);
  if (cols % k != 0) {
    r.error = t + ": " + std::to_string(cols) + " columns are not a multiple of the " + ggml_type_name(type) +
              " block of " + std::to_string(k);
    return r;
  }
  std::size_t n = 0;
  if (!lowbit::detail::checked_mul(rows, cols, &n) || n > std::numeric_limits<std::size_t>::max() / sizeof(float)) {
    r.error = t + ": " + std::to_string(rows) + " x " + std::to_string(cols) + " overflows";
    return r;
  }
  if (n != 0 && src == nullptr) {
    r.error = t + ": null source";
    return r;
  }
  r.value.name = name;
  r.value.shape = {rows, cols};
  r.value.type = type;
  std::vector<unsigned char>& out = r.value.bytes;
  out.resize(n / k * ggml_block_bytes(type));
  if (n == 0) return r;
  auto copy_out = [&](const void* p) { std::memcpy(out.data(), p, out.size()); };
  status s{};
  switch (type) {
    case ggml_type::f32: copy_out(src); break;
    case ggml_type::f16: {
      std::vector<float16> h(n);
      lowbit::convert(src, h.data(), n, overflow::non_saturate);
      copy_out(h.data());
      break;
    }
    case ggml_type::bf16: {
      std::vector<bfloat16> h(n);
      lowbit::convert(src, h.data(), n, overflow::non_saturate);
      copy_out(h.data());
      break;
    }
    case ggml_type::q4_0: {
      std::vector<ggml_block_q4_0> b(n / 32);
      s = ggml_quantize_q4_0(src, rows, cols, b.data());
      if (s) copy_out(b.data());
      break;
    }
    case ggml_type::q8_0: {
      std::vector<ggml_block_q8_0> b(n / 32);
      s = ggml_quantize_q8_0(src, rows, cols, b.data());
      if (s) copy_out(b.data());
      break;
    }
    case ggml_type::mxfp4: {
      mx_options o = mx_presets::ggml();
      o.scale_rule = e8m0_rule::floor_log2f;
      o.non_finite_is_error = true;
      std::vector<ggml_block_mxfp4> b(n / 32);
      s = mxfp4_quantize_ggml(src, n, o, b.data());  // cols % 32 == 0: rows of whole blocks
      if (s) copy_out(b.data());
      break;
    }
  }
  if (!s) {
    r.value = gguf_tensor_out{};
    r.error = t + ": " + ggml_type_name(type) + ": " + s.message();
  }
  return r;
}

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_GGUF_HPP
