// tool_testkit: the data and the checks of the lowbit tool's tests (tools/tests/CMakeLists.txt).
//
//   tool_testkit write-fixture DIR          DIR/model.safetensors (written here byte by byte, not
//                                           with lowbit::io, so the reader is tested against an
//                                           independent writer), DIR/truncated.safetensors (its
//                                           first half), DIR/garbage.safetensors (not safetensors)
//   tool_testkit check-report JSON          `lowbit report --json` of model.safetensors
//   tool_testkit check-quantized JSON S     `lowbit report --json` of model.safetensors quantized
//                                           with scheme S: every expected name, dtype and shape
//                                           (also written by write-fixture: DIR/acts/NAME.npy,
//                                           activations [512, 256] of the two [64, 256] weights,
//                                           and DIR/kernel.npy, the Gaussian weight as [in, out])
//   tool_testkit check-config FILE METHOD   FILE (.safetensors) holds __metadata__
//                                           quantization_config with quant_method METHOD
//   tool_testkit check-gguf FILE            `lowbit quantize model.safetensors FILE --scheme q8_0`:
//                                           the Q8_0 tensors' infos, the copies, the metadata
//   tool_testkit check-method-log LOG M [REGEX]  every "-> S M (...): output error on N calibration
//                                           rows: RTN a -> M b" line of a quantize log (of the
//                                           tensors matching REGEX, at least one) has b < a
//   tool_testkit check-real-report JSON     `lowbit report --json` of the real fixture's model.json
//   tool_testkit write-big FILE N ROWS COLS N float32 matrices [ROWS, COLS], streamed to FILE
//
// Exit 0 when the check passes; otherwise 1 and one line per failure on stderr.
#include <lowbit/io/gguf.hpp>
#include <lowbit/io/safetensors.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void fail(const std::string& what) {
  std::cerr << "FAIL: " << what << "\n";
  ++failures;
}

// ----- the fixture ---------------------------------------------------------------------------------

struct raw_tensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::vector<unsigned char> bytes;
};

std::vector<unsigned char> float_bytes(const std::vector<float>& v) {
  std::vector<unsigned char> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A Gaussian matrix (sigma 0.02, as LLM weights are initialised), from a fixed seed.
std::vector<float> gaussian(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; i += 2) {  // Box-Muller: the same values on every standard library
    const double u1 = (static_cast<double>(gen()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(gen()) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    v[i] = static_cast<float>(0.02 * r * std::cos(6.283185307179586 * u2));
    if (i + 1 < n) v[i + 1] = static_cast<float>(0.02 * r * std::sin(6.283185307179586 * u2));
  }
  return v;
}

std::vector<raw_tensor> fixture_tensors() {
  std::vector<raw_tensor> t;
  // A plain Gaussian weight [64, 256].
  t.push_back({"layers.0.mlp.gaussian.weight", "F32", {64, 256}, float_bytes(gaussian(64 * 256, 1))});
  // The same kind of weight with outliers: input channels 7, 100 and 200 are 50x larger (the
  // outlier features of LLM.int8), and row 5 is 20x larger. Every row's scale is set by its
  // outlier, so the other weights of the row get coarse steps: per-channel INT8 loses ~15 dB.
  std::vector<float> w = gaussian(64 * 256, 2);
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t c : {7u, 100u, 200u}) w[r * 256 + c] *= 50.0f;
  for (std::size_t c = 0; c < 256; ++c) w[5 * 256 + c] *= 20.0f;
  t.push_back({"layers.0.mlp.outlier.weight", "F32", {64, 256}, float_bytes(w)});
  // cols 100: no group of 32 or 128 and no MX/NVFP4 block fits (n/a with the reason).
  t.push_back({"layers.0.mlp.odd.weight", "F32", {8, 100}, float_bytes(gaussian(8 * 100, 3))});
  // 1-D: skipped by report, copied by quantize.
  t.push_back({"layers.0.norm.weight", "F32", {256}, float_bytes(std::vector<float>(256, 1.0f))});
  // BF16 and 3-D: read as [32, 64]; its name does not end in "weight", so quantize copies it.
  {
    const std::vector<float> v = gaussian(4 * 8 * 64, 4);
    std::vector<unsigned char> b(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &v[i], 4);
      bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even (finite values)
      b[2 * i] = static_cast<unsigned char>(bits >> 16);
      b[2 * i + 1] = static_cast<unsigned char>(bits >> 24);
    }
    t.push_back({"layers.0.attn.rotary_cache", "BF16", {4, 8, 64}, b});
  }
  // Integers: skipped by report, copied by quantize.
  {
    std::vector<unsigned char> b(16 * 4);
    for (std::size_t i = 0; i < 16; ++i) b[4 * i] = static_cast<unsigned char>(i);
    t.push_back({"position_ids", "I32", {1, 16}, b});
  }
  return t;
}

// safetensors: 8-byte little-endian header length, JSON header padded with spaces to a multiple
// of 8, data back to back.
std::vector<unsigned char> encode(const std::vector<raw_tensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::uint64_t offset = 0;
  for (const raw_tensor& t : tensors) {
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::vector<unsigned char> out(8);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<unsigned char>(header.size() >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  for (const raw_tensor& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

bool write_file(const std::string& path, const unsigned char* data, std::size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) {
    std::cerr << "cannot write " << path << "\n";
    return false;
  }
  return true;
}

// A float32 .npy [rows, cols] (format 1.0, C order).
bool write_npy(const std::string& path, const std::vector<float>& v, std::size_t rows, std::size_t cols) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                  std::to_string(cols) + "), }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::vector<unsigned char> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(h.size() & 0xFF),
                                  static_cast<unsigned char>(h.size() >> 8)};
  b.insert(b.end(), h.begin(), h.end());
  const std::vector<unsigned char> d = float_bytes(v);
  b.insert(b.end(), d.begin(), d.end());
  return write_file(path, b.data(), b.size());
}

// Calibration activations [512, 256]: Gaussian, every 16th input channel 10x larger (the
// outlier channels AWQ protects), input channel 3 a copy of channel 2 plus noise (correlated
// inputs, which GPTQ's error feedback exploits).
std::vector<float> activations(unsigned seed) {
  std::vector<float> x = gaussian(512 * 256, seed);
  for (std::size_t t = 0; t < 512; ++t) {
    for (std::size_t c = 0; c < 256; c += 16) x[t * 256 + c] *= 10.0f;
    x[t * 256 + 3] = x[t * 256 + 2] + 0.1f * x[t * 256 + 3];
  }
  for (float& v : x) v *= 50.0f;  // unit scale (gaussian() has sigma 0.02)
  return x;
}

int write_fixture(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/acts", ec);
  if (!write_npy(dir + "/acts/layers.0.mlp.gaussian.weight.npy", activations(11), 512, 256) ||
      !write_npy(dir + "/acts/layers.0.mlp.outlier.weight.npy", activations(12), 512, 256))
    return 1;
  {
    const std::vector<float> w = gaussian(64 * 256, 1);  // the Gaussian weight, stored [in, out]
    std::vector<float> k(w.size());
    for (std::size_t o = 0; o < 64; ++o)
      for (std::size_t i = 0; i < 256; ++i) k[i * 64 + o] = w[o * 256 + i];
    if (!write_npy(dir + "/kernel.npy", k, 256, 64)) return 1;
  }
  const std::vector<unsigned char> bytes = encode(fixture_tensors());
  if (!write_file(dir + "/model.safetensors", bytes.data(), bytes.size())) return 1;
  if (!write_file(dir + "/truncated.safetensors", bytes.data(), bytes.size() / 2)) return 1;
  const std::string garbage = "this is not a safetensors file, only some text in its place\n";
  if (!write_file(dir + "/garbage.safetensors", reinterpret_cast<const unsigned char*>(garbage.data()), garbage.size()))
    return 1;
  return 0;
}

// ----- checks ----------------------------------------------------------------------------------------

bool read_json(const std::string& path, nlohmann::json& j) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) {
    fail(path + ": not JSON");
    return false;
  }
  return true;
}

const nlohmann::json* find_tensor(const nlohmann::json& list, const std::string& name) {
  for (const nlohmann::json& t : list)
    if (t.value("name", "") == name) return &t;
  return nullptr;
}

double sqnr(const nlohmann::json& t, const std::string& scheme) {
  const nlohmann::json& s = t["schemes"][scheme];
  if (!s.value("applies", false) || !s["sqnr_db"].is_number()) {
    fail(t.value("name", "?") + ": no SQNR for " + scheme);
    return NAN;
  }
  return s["sqnr_db"].get<double>();
}

int check_report(const std::string& path) {
  nlohmann::json j;
  if (!read_json(path, j)) return 1;
  const nlohmann::json& tensors = j["tensors"];
  if (!tensors.is_array() || tensors.size() != 4) fail("expected 4 measured tensors");
  const char* names[] = {"layers.0.mlp.gaussian.weight", "layers.0.mlp.outlier.weight"};
  for (const char* name : names) {
    const nlohmann::json* t = find_tensor(tensors, name);
    if (t == nullptr) {
      fail(std::string("tensor missing: ") + name);
      continue;
    }
    if ((*t)["shape"] != nlohmann::json({64, 256})) fail(std::string(name) + ": shape");
    const double i8 = sqnr(*t, "int8"), i4 = sqnr(*t, "int4-g128"), i4c = sqnr(*t, "int4-channel");
    const double f8 = sqnr(*t, "fp8"), f8c = sqnr(*t, "fp8-channel"), i4g32 = sqnr(*t, "int4-g32");
    std::cerr << name << ": int8 " << i8 << ", fp8-channel " << f8c << ", fp8 " << f8 << ", int4-g32 " << i4g32
              << ", int4-g128 " << i4 << ", int4-channel " << i4c << " dB\n";
    if (!(i8 > i4)) fail(std::string(name) + ": int8 SQNR not above int4-g128");
    if (!(i4g32 > i4)) fail(std::string(name) + ": int4-g32 SQNR not above int4-g128");
    if (!(i4 > i4c)) fail(std::string(name) + ": int4-g128 SQNR not above int4-channel");
    const nlohmann::json& s = (*t)["schemes"]["int4-g128"];
    // 64 x 256 INT4: 8192 payload bytes + 2 fp16 scales per row (256 bytes): 4.125 bits.
    if (s.value("bytes", 0) != 8448 || std::fabs(s.value("bits_per_weight", 0.0) - 4.125) > 1e-9)
      fail(std::string(name) + ": int4-g128 bytes / bits per weight");
  }
  const nlohmann::json* g = find_tensor(tensors, "layers.0.mlp.gaussian.weight");
  if (g != nullptr && !(sqnr(*g, "int8") > sqnr(*g, "fp8") && sqnr(*g, "fp8") > sqnr(*g, "int4-g128")))
    fail("gaussian: not int8 > fp8 > int4-g128");
  if (tensors.empty() || tensors[0].value("name", "") != "layers.0.mlp.outlier.weight")
    fail("the outlier tensor does not sort first");
  const nlohmann::json* odd = find_tensor(tensors, "layers.0.mlp.odd.weight");
  if (odd == nullptr) {
    fail("tensor missing: layers.0.mlp.odd.weight");
  } else {
    const nlohmann::json& s = (*odd)["schemes"]["int4-g128"];
    if (s.value("applies", true) || s.value("reason", "") != "cols 100 not a multiple of 128")
      fail("odd: int4-g128 should be n/a: cols 100 not a multiple of 128");
    if (!(*odd)["schemes"]["int8"].value("applies", false)) fail("odd: int8 should apply");
  }
  const nlohmann::json* rot = find_tensor(tensors, "layers.0.attn.rotary_cache");
  if (rot == nullptr || rot->value("rows", 0) != 32 || rot->value("cols", 0) != 64 || rot->value("dtype", "") != "BF16")
    fail("rotary_cache: a 3-D BF16 tensor read as [32, 64]");
  const nlohmann::json& skipped = j["skipped"];
  if (!skipped.is_array() || skipped.size() != 2 || find_tensor(skipped, "layers.0.norm.weight") == nullptr ||
      find_tensor(skipped, "position_ids") == nullptr)
    fail("skipped: expected layers.0.norm.weight and position_ids");
  const nlohmann::json& sum = j["summary"];
  if (sum.value("tensors", 0) != 4 || sum.value("params", 0) != 64 * 256 * 2 + 800 + 2048)
    fail("summary: tensors / params");
  if (!sum["schemes"]["int8"]["sqnr_db_weighted"].is_number()) fail("summary: int8 weighted SQNR");
  return failures == 0 ? 0 : 1;
}

// Name -> (dtype, shape) of every tensor of a report (measured or skipped).
std::map<std::string, std::pair<std::string, nlohmann::json>> all_tensors(const nlohmann::json& j) {
  std::map<std::string, std::pair<std::string, nlohmann::json>> m;
  for (const char* list : {"tensors", "skipped"})
    for (const nlohmann::json& t : j[list]) m[t.value("name", "")] = {t.value("dtype", ""), t["shape"]};
  return m;
}

int check_quantized(const std::string& path, const std::string& scheme) {
  nlohmann::json j;
  if (!read_json(path, j)) return 1;
  using entry = std::pair<std::string, nlohmann::json>;
  std::map<std::string, entry> expected;
  // The two [64, 256] weights, as each scheme's export stores them.
  std::map<std::string, entry> big;
  if (scheme == "int8") {
    big = {{"weight", {"I8", {64, 256}}}, {"weight_scale", {"F32", {64, 1}}}};
  } else if (scheme == "int4-g128" || scheme == "int4-g32" || scheme == "int4-channel") {
    const int groups = scheme == "int4-g128" ? 2 : scheme == "int4-g32" ? 8 : 1;
    big = {{"qweight", {"I32", {32, 64}}},
           {"qzeros", {"I32", {groups, 8}}},
           {"scales", {"F16", {groups, 64}}},
           {"g_idx", {"I32", {256}}}};
  } else if (scheme == "int4-g128-asym") {
    big = {{"qweight", {"I32", {256, 8}}}, {"qzeros", {"I32", {2, 8}}}, {"scales", {"F16", {2, 64}}}};
  } else if (scheme == "fp8" || scheme == "fp8-channel") {
    big = {{"weight", {"F8_E4M3", {64, 256}}},
           {"weight_scale", {"F32", scheme == "fp8" ? nlohmann::json({1}) : nlohmann::json({64, 1})}}};
  } else if (scheme == "mxfp4") {
    big = {{"weight_packed", {"U8", {64, 128}}}, {"weight_scale", {"U8", {64, 8}}}};
  } else if (scheme == "nvfp4") {
    big = {{"weight_packed", {"U8", {64, 128}}},
           {"weight_scale", {"F8_E4M3", {64, 16}}},
           {"weight_global_scale", {"F32", {1}}}};
  } else {
    fail("unknown scheme " + scheme);
    return 1;
  }
  for (const char* base : {"layers.0.mlp.gaussian.", "layers.0.mlp.outlier."})
    for (const auto& kv : big) expected[base + kv.first] = kv.second;
  // [8, 100]: only the schemes without groups or blocks (and no packing constraint) take it.
  if (scheme == "int8") {
    expected["layers.0.mlp.odd.weight"] = {"I8", {8, 100}};
    expected["layers.0.mlp.odd.weight_scale"] = {"F32", {8, 1}};
  } else if (scheme == "fp8" || scheme == "fp8-channel") {
    expected["layers.0.mlp.odd.weight"] = {"F8_E4M3", {8, 100}};
    expected["layers.0.mlp.odd.weight_scale"] = {"F32", scheme == "fp8" ? nlohmann::json({1}) : nlohmann::json({8, 1})};
  } else {
    expected["layers.0.mlp.odd.weight"] = {"F32", {8, 100}};  // copied
  }
  expected["layers.0.norm.weight"] = {"F32", {256}};
  expected["layers.0.attn.rotary_cache"] = {"BF16", {4, 8, 64}};
  expected["position_ids"] = {"I32", {1, 16}};

  const auto got = all_tensors(j);
  for (const auto& kv : expected) {
    const auto it = got.find(kv.first);
    if (it == got.end()) {
      fail(scheme + ": missing " + kv.first);
    } else if (it->second.first != kv.second.first || it->second.second != kv.second.second) {
      fail(scheme + ": " + kv.first + " is " + it->second.first + " " + it->second.second.dump() + ", expected " +
           kv.second.first + " " + kv.second.second.dump());
    }
  }
  for (const auto& kv : got)
    if (expected.find(kv.first) == expected.end()) fail(scheme + ": unexpected tensor " + kv.first);
  return failures == 0 ? 0 : 1;
}

// ----- quantize's outputs --------------------------------------------------------------------------

int check_config(const std::string& path, const std::string& method) {
  auto f = lowbit::io::safetensors_file::open(path);
  if (!f.ok()) {
    fail(f.error);
    return 1;
  }
  const auto it = f.value.metadata().find("quantization_config");
  if (it == f.value.metadata().end()) {
    fail(path + ": no quantization_config in __metadata__");
    return 1;
  }
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || j.value("quant_method", "") != method)
    fail(path + ": quantization_config quant_method is not " + method + ": " + it->second);
  return failures == 0 ? 0 : 1;
}

int check_gguf(const std::string& path) {
  auto f = lowbit::io::gguf_file::open(path);
  if (!f.ok()) {
    fail(f.error);
    return 1;
  }
  using lowbit::io::ggml_type;
  struct want {
    const char* name;
    ggml_type type;
    std::vector<std::uint64_t> dims;  // ggml order
    std::size_t bytes;
  };
  const want w[] = {{"layers.0.mlp.gaussian.weight", ggml_type::q8_0, {256, 64}, 64 * 256 / 32 * 34},
                    {"layers.0.mlp.outlier.weight", ggml_type::q8_0, {256, 64}, 64 * 256 / 32 * 34},
                    {"layers.0.mlp.odd.weight", ggml_type::f32, {100, 8}, 8 * 100 * 4},
                    {"layers.0.norm.weight", ggml_type::f32, {256}, 256 * 4},
                    {"layers.0.attn.rotary_cache", ggml_type::bf16, {64, 8, 4}, 4 * 8 * 64 * 2}};
  if (f.value.tensor_infos().size() != 5) fail("expected 5 tensors (position_ids, I32, skipped)");
  for (const want& x : w) {
    const lowbit::io::gguf_tensor_info* t = f.value.find_tensor(x.name);
    if (t == nullptr) {
      fail(std::string("missing ") + x.name);
      continue;
    }
    if (t->type != x.type || t->dims != x.dims || t->bytes != x.bytes || t->offset % f.value.alignment() != 0)
      fail(std::string(x.name) + ": type, dims, bytes or alignment");
  }
  // The first Q8_0 block of the Gaussian weight: fp16 scale amax/127 of its first 32 values.
  if (const auto* t = f.value.find_tensor("layers.0.mlp.gaussian.weight"); t != nullptr && t->data != nullptr) {
    const std::vector<float> g = gaussian(64 * 256, 1);
    float amax = 0.0f;
    for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(g[i]));
    const std::uint16_t h = static_cast<std::uint16_t>(t->data[0] | t->data[1] << 8);
    const float d = lowbit::decode(lowbit::float16::from_bits(h));
    if (std::fabs(d - amax / 127.0f) > 1e-3f * amax / 127.0f) fail("first Q8_0 block: scale is not amax / 127");
  }
  const auto* name = f.value.find_metadata("general.name");
  const auto* qv = f.value.find_metadata("general.quantization_version");
  if (name == nullptr || name->as_string() == nullptr || *name->as_string() != "model")
    fail("general.name should be 'model'");
  if (qv == nullptr || !qv->as_uint() || *qv->as_uint() != 2) fail("general.quantization_version should be 2");
  if (f.value.find_metadata("general.architecture") != nullptr) fail("general.architecture should not be written");
  return failures == 0 ? 0 : 1;
}

int check_method_log(const std::string& path, const std::string& method, const std::string& filter) {
  std::ifstream f(path);
  std::string line;
  const std::regex re("^  (\\S+) .* -> \\S+ " + method + " \\(.*output error on ([0-9]+) calibration rows: RTN ([0-9.e+-]+) -> " +
                      (method == "gptq" ? std::string("GPTQ") : std::string("AWQ")) + " ([0-9.e+-]+)");
  const std::regex keep(filter.empty() ? std::string(".") : filter);
  int seen = 0;
  while (std::getline(f, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, re) || !std::regex_search(m[1].str(), keep)) continue;
    ++seen;
    const double rtn = std::stod(m[3].str()), after = std::stod(m[4].str());
    std::cerr << m[1].str() << ": RTN " << rtn << " -> " << method << " " << after << "\n";
    if (!(after < rtn)) fail(m[1].str() + ": " + method + " error " + m[4].str() + " not below RTN " + m[3].str());
  }
  if (seen == 0) fail("no " + method + " line in " + path + (filter.empty() ? "" : " matching " + filter));
  return failures == 0 ? 0 : 1;
}

// The real fixture (Universal Sentence Encoder lite): every matrix listed, and the parameter-
// weighted SQNR ordering INT8 per-channel > FP8 per-tensor > INT4 g128 > INT4 per-channel.
int check_real_report(const std::string& path) {
  nlohmann::json j;
  if (!read_json(path, j)) return 1;
  const char* matrices[] = {
      "module/Embeddings_en",
      "module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat",
      "module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
      "module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
      "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1",
      "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_0/TransformerLayer/FFN/conv2/Tensordot/Reshape_1",
      "module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
      "module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
      "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_1/TransformerLayer/FFN/conv1/Tensordot/Reshape_1",
      "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_1/TransformerLayer/FFN/conv2/Tensordot/Reshape_1",
      "module/Encoder_en/hidden_layers/tanh_layer_0/weights"};
  for (const char* m : matrices)
    if (find_tensor(j["tensors"], m) == nullptr) fail(std::string("matrix not listed: ") + m);
  // Every tensor of at least 2 x 2 elements is a matrix the report must list.
  for (const nlohmann::json& t : j["skipped"]) {
    std::uint64_t big = 0;
    for (const auto& d : t["shape"]) big += d.get<std::uint64_t>() >= 2 ? 1u : 0u;
    if (big >= 2) fail("a matrix was skipped: " + t.value("name", "?") + " (" + t.value("reason", "") + ")");
  }
  const nlohmann::json& sum = j["summary"]["schemes"];
  auto weighted = [&](const char* s) -> double {
    const nlohmann::json& v = sum[s]["sqnr_db_weighted"];
    if (!v.is_number()) {
      fail(std::string("summary: no weighted SQNR for ") + s);
      return NAN;
    }
    return v.get<double>();
  };
  const double i8 = weighted("int8"), f8 = weighted("fp8"), i4 = weighted("int4-g128"), i4c = weighted("int4-channel");
  std::cerr << "weighted SQNR: int8 " << i8 << ", fp8 " << f8 << ", int4-g128 " << i4 << ", int4-channel " << i4c
            << " dB\n";
  if (!(i8 > f8 && f8 > i4 && i4 > i4c)) fail("not int8 > fp8 > int4-g128 > int4-channel");
  return failures == 0 ? 0 : 1;
}

// N float32 matrices [rows, cols] named "layers.K.weight", streamed with io::safetensors_writer
// (one matrix in memory): the input of the memory measurement (docs/tool.md).
int write_big(const std::string& path, std::size_t n, std::size_t rows, std::size_t cols) {
  std::vector<lowbit::io::tensor_view> declared;
  for (std::size_t k = 0; k < n; ++k)
    declared.push_back({"layers." + std::to_string(k) + ".weight", lowbit::io::dtype::f32, {rows, cols}, nullptr,
                        rows * cols * 4});
  auto w = lowbit::io::safetensors_writer::create(path, declared, {{"format", "pt"}});
  if (!w.ok()) {
    fail(w.error);
    return 1;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const std::vector<float> v = gaussian(rows * cols, static_cast<unsigned>(100 + k));
    if (auto s = w.value.write(reinterpret_cast<const unsigned char*>(v.data()), v.size() * 4); !s.ok()) {
      fail(s.error);
      return 1;
    }
  }
  if (auto s = w.value.finish(); !s.ok()) fail(s.error);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write-fixture" && argc == 3) return write_fixture(argv[2]);
  if (cmd == "check-report" && argc == 3) return check_report(argv[2]);
  if (cmd == "check-quantized" && argc == 4) return check_quantized(argv[2], argv[3]);
  if (cmd == "check-config" && argc == 4) return check_config(argv[2], argv[3]);
  if (cmd == "check-gguf" && argc == 3) return check_gguf(argv[2]);
  if (cmd == "check-method-log" && (argc == 4 || argc == 5)) return check_method_log(argv[2], argv[3], argc == 5 ? argv[4] : "");
  if (cmd == "check-real-report" && argc == 3) return check_real_report(argv[2]);
  if (cmd == "write-big" && argc == 6)
    return write_big(argv[2], std::stoul(argv[3]), std::stoul(argv[4]), std::stoul(argv[5]));
  std::cerr << "usage: tool_testkit write-fixture DIR | check-report JSON | check-quantized JSON SCHEME |\n"
               "       check-config FILE METHOD | check-gguf FILE | check-method-log LOG METHOD [REGEX] |\n"
               "       check-real-report JSON | write-big FILE N ROWS COLS\n";
  return 2;
}
