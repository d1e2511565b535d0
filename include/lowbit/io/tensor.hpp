// lowbit::io: the types every tensor-file reader and writer shares. The io module is optional
// (CMake target lowbit::io): it needs nlohmann-json for safetensors headers and TF.js manifests,
// and POSIX for memory maps. Nothing under include/lowbit/ outside io/ includes it.
//
// Errors: io calls return an io_result<T> (or an io_status) whose `error` is one English line
// naming the file, the tensor and the problem ("model.safetensors: tensor 'w': data offsets
// [0, 64) need 128 bytes"); empty means success. Nothing throws: JSON is parsed with exceptions
// off and every field is type-checked before it is read.
#ifndef LOWBIT_IO_TENSOR_HPP
#define LOWBIT_IO_TENSOR_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/memory.hpp"
#include "../formats/types.hpp"

namespace lowbit {
namespace io {

// ----- results -----------------------------------------------------------------------------------

// Success, or one line saying what went wrong.
struct [[nodiscard]] io_status {
  std::string error;
  bool ok() const noexcept { return error.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

template <class T>
struct [[nodiscard]] io_result {
  T value{};
  std::string error;
  bool ok() const noexcept { return error.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

// ----- element types -----------------------------------------------------------------------------

// The element types of the files lowbit reads and writes. Names follow safetensors
// ("F32", "BF16", "F8_E4M3", ...), which ml_dtypes, PyTorch and numpy agree on.
enum class dtype : std::uint8_t {
  f64,
  f32,
  f16,
  bf16,
  f8_e4m3,  // OCP E4M3FN
  f8_e5m2,
  f8_e8m0,  // UE8M0 scales (MX)
  i64,
  i32,
  i16,
  i8,
  u8,
  u32,
  boolean,
};

constexpr std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64: return 8;
    case dtype::f32:
    case dtype::i32:
    case dtype::u32: return 4;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16: return 2;
    case dtype::f8_e4m3:
    case dtype::f8_e5m2:
    case dtype::f8_e8m0:
    case dtype::i8:
    case dtype::u8:
    case dtype::boolean: return 1;
  }
  return 0;
}

// The safetensors name of a dtype, and back (false for a name lowbit does not read).
constexpr const char* dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::f64: return "F64";
    case dtype::f32: return "F32";
    case dtype::f16: return "F16";
    case dtype::bf16: return "BF16";
    case dtype::f8_e4m3: return "F8_E4M3";
    case dtype::f8_e5m2: return "F8_E5M2";
    case dtype::f8_e8m0: return "F8_E8M0";
    case dtype::i64: return "I64";
    case dtype::i32: return "I32";
    case dtype::i16: return "I16";
    case dtype::i8: return "I8";
    case dtype::u8: return "U8";
    case dtype::u32: return "U32";
    case dtype::boolean: return "BOOL";
  }
  return "?";
}

inline bool parse_dtype(std::string_view name, dtype& out) noexcept {
  for (int i = 0; i <= static_cast<int>(dtype::boolean); ++i) {
    const auto t = static_cast<dtype>(i);
    if (name == dtype_name(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

// ----- tensors -----------------------------------------------------------------------------------

// product of the shape, or false when it does not fit 64 bits.
inline bool element_count(const std::vector<std::uint64_t>& shape, std::uint64_t& n) noexcept {
  n = 1;
  for (const std::uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return false;
    n *= d;
  }
  return true;
}

// A tensor in a file: its bytes stay owned by the file object that produced the view (a memory
// map or a buffer), and are valid while it lives. Little-endian, row-major, as every format here
// stores them.
struct tensor_view {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::uint64_t> shape;
  const unsigned char* data = nullptr;
  std::size_t bytes = 0;

  std::uint64_t elements() const noexcept {
    std::uint64_t n = 0;
    return element_count(shape, n) ? n : 0;
  }
  // Rows and columns of a matrix: a 2-D tensor as it is; an N-D tensor as [prod(shape[:-1]),
  // shape[-1]]; a 1-D tensor as one row.
  std::uint64_t rows() const noexcept {
    if (shape.empty()) return 1;
    std::uint64_t r = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
    return r;
  }
  std::uint64_t cols() const noexcept { return shape.empty() ? 1 : shape.back(); }
};

// A tensor to write: the same description with bytes it owns.
struct tensor_data {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::uint64_t> shape;
  std::vector<unsigned char> bytes;

  tensor_view view() const { return {name, type, shape, bytes.data(), bytes.size()}; }
};

// Float32 values of a tensor of any floating-point or integer dtype: exact for f16, bf16, the FP8
// formats, E8M0 and integers up to 2^24; f64 and wider integers round to nearest. Unaligned
// data is fine (read byte by byte). Errors: a byte count that does not match the shape.
inline io_status to_float(const tensor_view& t, std::vector<float>& out) {
  const std::uint64_t n = t.elements();
  if (n * dtype_size(t.type) != t.bytes || (t.bytes != 0 && t.data == nullptr)) {
    return {"tensor '" + t.name + "': " + std::to_string(t.bytes) + " bytes for " + std::to_string(n) + " " +
            dtype_name(t.type) + " elements"};
  }
  out.resize(static_cast<std::size_t>(n));
  const unsigned char* p = t.data;
  const std::size_t size = dtype_size(t.type);
  auto load = [&](auto tag, std::size_t i) {
    decltype(tag) v;
    std::memcpy(&v, p + i * size, sizeof v);
    return v;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t.type) {
      case dtype::f64: out[i] = static_cast<float>(load(double{}, i)); break;
      case dtype::f32: out[i] = load(float{}, i); break;
      case dtype::f16: out[i] = decode(float16::from_bits(load(std::uint16_t{}, i))); break;
      case dtype::bf16: out[i] = decode(bfloat16::from_bits(load(std::uint16_t{}, i))); break;
      case dtype::f8_e4m3: out[i] = decode(float8_e4m3fn::from_bits(p[i])); break;
      case dtype::f8_e5m2: out[i] = decode(float8_e5m2::from_bits(p[i])); break;
      case dtype::f8_e8m0: out[i] = decode(float8_e8m0fnu::from_bits(p[i])); break;
      case dtype::i64: out[i] = static_cast<float>(load(std::int64_t{}, i)); break;
      case dtype::i32: out[i] = static_cast<float>(load(std::int32_t{}, i)); break;
      case dtype::u32: out[i] = static_cast<float>(load(std::uint32_t{}, i)); break;
      case dtype::i16: out[i] = static_cast<float>(load(std::int16_t{}, i)); break;
      case dtype::i8: out[i] = static_cast<float>(static_cast<std::int8_t>(p[i])); break;
      case dtype::u8:
      case dtype::boolean: out[i] = static_cast<float>(p[i]); break;
    }
  }
  return {};
}

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_TENSOR_HPP
