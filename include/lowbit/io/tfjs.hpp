// lowbit::io: TensorFlow.js weight manifests (model.json of a layers or graph model, or a bare
// weights_manifest.json) and their binary shards.
//
// model.json holds "weightsManifest": [{"paths": ["group1-shard1of2.bin", ...],
// "weights": [{"name", "shape", "dtype", "quantization"?}, ...]}, ...]. The weights of a group
// are stored back to back, in the order listed, in the concatenation of its shard files (a
// weight may span two shards); paths are relative to the directory of model.json.
//
// Read: dtype "float32", "int32" and "bool" as they are; "quantization" {"dtype": "uint8" or
// "uint16", "scale", "min"} dequantized as TF.js does (q * scale + min, to float32; to int32
// rounded with Math.round for an int32 weight), and {"dtype": "float16"} widened to float32.
// Unquantized weights that lie in one shard are views into that shard's memory map; a weight
// that spans shards, and every dequantized weight, lives in a buffer the tfjs_model owns.
// Errors (naming model.json and the weight): JSON that does not parse, a missing or mistyped
// field, "string" or "complex64" weights (their size cannot be known from the shape), an unknown
// quantization, a duplicate name, a shard that cannot be opened, and shards shorter than the
// weights listed (bytes after the last weight are ignored).
#ifndef LOWBIT_IO_TFJS_HPP
#define LOWBIT_IO_TFJS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mapped_file.hpp"
#include "safetensors.hpp"
#include "tensor.hpp"

namespace lowbit {
namespace io {

namespace detail {

inline bool json_number(const nlohmann::json& j, double& out) noexcept {
  if (const auto* f = j.get_ptr<const nlohmann::json::number_float_t*>()) {
    out = static_cast<double>(*f);
    return true;
  }
  if (const auto* u = j.get_ptr<const nlohmann::json::number_unsigned_t*>()) {
    out = static_cast<double>(*u);
    return true;
  }
  if (const auto* i = j.get_ptr<const nlohmann::json::number_integer_t*>()) {
    out = static_cast<double>(*i);
    return true;
  }
  return false;
}

// JavaScript's Math.round, then ToInt32 (what storing into an Int32Array does).
inline std::int32_t js_round_to_int32(double x) noexcept {
  if (!std::isfinite(x)) return 0;
  const double r = std::floor(x + 0.5);
  double m = std::fmod(r, 4294967296.0);
  if (m < 0) m += 4294967296.0;
  const auto u = static_cast<std::uint32_t>(m);
  std::int32_t v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

inline std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace detail

// A TF.js model's weights. Move-only; the views stay valid while the object (or the one it is
// moved to) lives: they point into the shard maps or into heap buffers, neither of which a move
// relocates.
class tfjs_model {
 public:
  tfjs_model() = default;
  tfjs_model(const tfjs_model&) = delete;
  tfjs_model& operator=(const tfjs_model&) = delete;
  tfjs_model(tfjs_model&&) noexcept = default;
  tfjs_model& operator=(tfjs_model&&) noexcept = default;

  static io_result<tfjs_model> open(const std::string& model_json_path) {
    io_result<tfjs_model> r;
    r.error = r.value.load(model_json_path);
    if (!r.ok()) r.value = tfjs_model();
    return r;
  }

  // The weights in manifest order.
  const std::vector<tensor_view>& tensors() const noexcept { return tensors_; }
  const tensor_view* find(std::string_view name) const noexcept { return detail::find_view(tensors_, name); }

 private:
  struct group_bytes {
    std::vector<const mapped_file*> shards;
    std::vector<std::uint64_t> starts;  // offset of each shard in the group
    std::uint64_t total = 0;
  };

  // The bytes [begin, begin + n) of a group: a pointer into one shard's map, or a copy when
  // they span shards.
  const unsigned char* slice(const group_bytes& g, std::uint64_t begin, std::uint64_t n) {
    if (n == 0 || g.shards.empty()) return nullptr;  // (n > 0 implies begin + n <= g.total, so shards)
    std::size_t s = 0;
    while (s + 1 < g.shards.size() && g.starts[s + 1] <= begin) ++s;
    const std::uint64_t local = begin - g.starts[s];
    if (local + n <= g.shards[s]->size()) return g.shards[s]->data() + static_cast<std::size_t>(local);
    buffers_.emplace_back(static_cast<std::size_t>(n));
    unsigned char* out = buffers_.back().data();
    std::uint64_t done = 0;
    std::uint64_t at = local;
    while (done < n && s < g.shards.size()) {
      const std::uint64_t avail = g.shards[s]->size() - at;
      const std::uint64_t take = avail < n - done ? avail : n - done;
      if (take != 0) std::memcpy(out + done, g.shards[s]->data() + at, static_cast<std::size_t>(take));
      done += take;
      at = 0;
      ++s;
    }
    return out;
  }

  std::string load(const std::string& path) {
    io_result<mapped_file> m = mapped_file::open(path);
    if (!m) return std::move(m.error);
    const unsigned char* text = m.value.data();
    const nlohmann::json j = nlohmann::json::parse(text, text + m.value.size(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return path + ": not valid JSON";
    const nlohmann::json* manifest = &j;
    if (j.is_object()) {
      const auto it = j.find("weightsManifest");
      if (it == j.end()) return path + ": no \"weightsManifest\" (not a TF.js model.json)";
      manifest = &*it;
    }
    if (!manifest->is_array()) return path + ": \"weightsManifest\" is not an array";
    const std::string dir = detail::directory_of(path);

    // Map every shard first: the maps move into shards_ only while it grows, and a
    // mapped_file's pointer survives a move.
    std::size_t shard_count = 0;
    for (std::size_t gi = 0; gi < manifest->size(); ++gi) {
      const nlohmann::json& g = (*manifest)[gi];
      const std::string where = path + ": weightsManifest[" + std::to_string(gi) + "]: ";
      if (!g.is_object()) return where + "not a JSON object";
      const auto paths = g.find("paths");
      const auto weights = g.find("weights");
      if (paths == g.end() || !paths->is_array()) return where + "\"paths\" is missing or not an array";
      if (weights == g.end() || !weights->is_array()) return where + "\"weights\" is missing or not an array";
      for (const auto& p : *paths) {
        const auto* s = p.get_ptr<const std::string*>();
        if (s == nullptr) return where + "\"paths\" holds something other than a string";
        io_result<mapped_file> shard = mapped_file::open(dir + *s);
        if (!shard) return where + shard.error;
        shards_.push_back(std::move(shard.value));
        ++shard_count;
      }
    }

    std::set<std::string> names;
    std::size_t next_shard = 0;
    for (std::size_t gi = 0; gi < manifest->size(); ++gi) {
      const nlohmann::json& g = (*manifest)[gi];
      const auto paths = g.find("paths");
      const auto weights = g.find("weights");
      group_bytes bytes;
      for (std::size_t k = 0; k < paths->size() && next_shard < shard_count; ++k) {
        const mapped_file& f = shards_[next_shard++];
        bytes.shards.push_back(&f);
        bytes.starts.push_back(bytes.total);
        bytes.total += f.size();
      }
      std::uint64_t offset = 0;
      for (const auto& w : *weights) {
        std::string problem = weight(path, gi, w, bytes, offset, names);
        if (!problem.empty()) return problem;
      }
    }
    return {};
  }

  std::string weight(const std::string& path, std::size_t gi, const nlohmann::json& w, const group_bytes& g,
                     std::uint64_t& offset, std::set<std::string>& names) {
    const std::string group = path + ": weightsManifest[" + std::to_string(gi) + "]: ";
    if (!w.is_object()) return group + "a weight entry is not a JSON object";
    const auto name_it = w.find("name");
    const std::string* name = name_it == w.end() ? nullptr : name_it->get_ptr<const std::string*>();
    if (name == nullptr) return group + "a weight has no \"name\" string";
    const std::string where = path + ": weight " + detail::quote_name(*name) + ": ";
    if (!names.insert(*name).second) return where + "the name appears twice";
    tensor_view t;
    t.name = *name;
    const auto shape = w.find("shape");
    if (shape == w.end() || !shape->is_array()) return where + "\"shape\" is missing or not an array";
    for (const auto& d : *shape) {
      std::uint64_t v = 0;
      if (!detail::json_u64(d, v)) return where + "\"shape\" holds something other than a non-negative integer";
      t.shape.push_back(v);
    }
    const auto dt = w.find("dtype");
    const std::string* dtype_str = dt == w.end() ? nullptr : dt->get_ptr<const std::string*>();
    if (dtype_str == nullptr) return where + "\"dtype\" is missing or not a string";
    if (*dtype_str == "float32") {
      t.type = dtype::f32;
    } else if (*dtype_str == "int32") {
      t.type = dtype::i32;
    } else if (*dtype_str == "bool") {
      t.type = dtype::boolean;
    } else {
      return where + "dtype " + detail::quote_name(*dtype_str) + " is not supported (float32, int32 or bool)";
    }
    std::uint64_t elements = 0;
    if (!element_count(t.shape, elements)) return where + "shape " + detail::shape_string(t.shape) + " is too large";

    // What is stored: the dtype itself, or its quantized form.
    enum class q_kind { none, u8, u16, f16 } q = q_kind::none;
    double scale = 1.0, min = 0.0;
    const auto qit = w.find("quantization");
    if (qit != w.end() && !qit->is_null()) {
      if (!qit->is_object()) return where + "\"quantization\" is not a JSON object";
      const auto qd = qit->find("dtype");
      const std::string* qname = qd == qit->end() ? nullptr : qd->get_ptr<const std::string*>();
      if (qname == nullptr) return where + "\"quantization\" has no \"dtype\" string";
      if (*qname == "uint8") {
        q = q_kind::u8;
      } else if (*qname == "uint16") {
        q = q_kind::u16;
      } else if (*qname == "float16") {
        q = q_kind::f16;
      } else {
        return where + "quantization dtype " + detail::quote_name(*qname) + " is not uint8, uint16 or float16";
      }
      if (t.type == dtype::boolean) return where + "a bool weight cannot be quantized";
      if (q == q_kind::f16 && t.type != dtype::f32) return where + "float16 quantization of a non-float32 weight";
      if (q != q_kind::f16) {
        const auto s = qit->find("scale");
        const auto mn = qit->find("min");
        if (s == qit->end() || mn == qit->end() || !detail::json_number(*s, scale) || !detail::json_number(*mn, min)) {
          return where + "\"quantization\" needs numbers \"scale\" and \"min\"";
        }
      }
    }
    const std::uint64_t stored_size = q == q_kind::none ? dtype_size(t.type) : q == q_kind::u8 ? 1 : 2;
    if (elements != 0 && stored_size > UINT64_MAX / elements) {
      return where + "shape " + detail::shape_string(t.shape) + " is too large";
    }
    const std::uint64_t n = elements * stored_size;
    if (offset > g.total || n > g.total - offset) {
      return where + "needs " + std::to_string(n) + " bytes at offset " + std::to_string(offset) + " of weight group " +
             std::to_string(gi) + ", but its shards hold " + std::to_string(g.total) + " bytes (truncated shard?)";
    }
    if (n > SIZE_MAX / 4) return where + "too large for this machine";
    const unsigned char* src = slice(g, offset, n);
    offset += n;
    const auto count = static_cast<std::size_t>(elements);
    if (q == q_kind::none) {
      t.data = src;
      t.bytes = static_cast<std::size_t>(n);
    } else {
      buffers_.emplace_back(count * 4);
      unsigned char* out = buffers_.back().data();
      for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t bits = 0;
        if (q == q_kind::u8) {
          const double v = static_cast<double>(src[i]) * scale + min;
          if (t.type == dtype::i32) {
            const std::int32_t iv = detail::js_round_to_int32(v);
            std::memcpy(&bits, &iv, 4);
          } else {
            const auto f = static_cast<float>(v);
            std::memcpy(&bits, &f, 4);
          }
        } else {
          const auto h = static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
          if (q == q_kind::f16) {
            const float f = decode(float16::from_bits(h));
            std::memcpy(&bits, &f, 4);
          } else {
            const double v = static_cast<double>(h) * scale + min;
            if (t.type == dtype::i32) {
              const std::int32_t iv = detail::js_round_to_int32(v);
              std::memcpy(&bits, &iv, 4);
            } else {
              const auto f = static_cast<float>(v);
              std::memcpy(&bits, &f, 4);
            }
          }
        }
        std::memcpy(out + 4 * i, &bits, 4);  // little-endian hosts (as the whole module)
      }
      if (q == q_kind::f16) t.type = dtype::f32;
      t.data = count == 0 ? nullptr : out;
      t.bytes = count * 4;
    }
    tensors_.push_back(std::move(t));
    return {};
  }

  std::vector<mapped_file> shards_;
  std::vector<std::vector<unsigned char>> buffers_;
  std::vector<tensor_view> tensors_;
};

}  // namespace io
}  // namespace lowbit

#endif  // LOWBIT_IO_TFJS_HPP
