// lowbit::io .npy, TF.js manifests and tensor_file: the bytes write_npy produces (numpy's
// format as numpy.lib.format documents and writes it), hand-built headers of versions 1, 2 and 3,
// the errors, a TF.js model with a weight spanning two shards and quantized weights, and the
// one-entry-point reader.
#include <gtest/gtest.h>

#include <lowbit/io/npy.hpp>
#include <lowbit/io/safetensors.hpp>
#include <lowbit/io/tensor_file.hpp>
#include <lowbit/io/tfjs.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "io_support.hpp"

namespace {

using lowbit::io::dtype;
using lowbit::io::npy_file;
using lowbit::io::tensor_data;
using lowbit::io::tensor_file;
using lowbit::io::tensor_view;
using lowbit::io::tfjs_model;
using lowbit_io_test::bytes_t;

using lowbit_io_test::read_bytes;
using lowbit_io_test::temp_dir;
using lowbit_io_test::write_bytes;
using lowbit_io_test::write_text;

template <class T>
bytes_t raw(std::initializer_list<T> v) {
  bytes_t b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.begin(), b.size());
  return b;
}

bytes_t view_bytes(const tensor_view& v) { return v.bytes == 0 ? bytes_t{} : bytes_t(v.data, v.data + v.bytes); }

// An .npy image: magic, version, the header length in 2 (v1) or 4 bytes, the header as given.
bytes_t npy_image(int major, const std::string& header, const bytes_t& data) {
  bytes_t b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < len_bytes; ++i) b.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// ----- .npy -------------------------------------------------------------------------------------

TEST(Npy, WritesTheBytesNumpyWrites) {
  temp_dir dir;
  const std::string path = dir.file("m.npy");
  std::vector<float> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 2.5f;
  tensor_view t{"m", dtype::f32, {3, 4}, reinterpret_cast<const unsigned char*>(v.data()), v.size() * 4};
  ASSERT_TRUE(lowbit::io::write_npy(path, t).ok());
  // np.save(np.zeros((3, 4), '<f4')) with numpy >= 1.24: version 1.0, header length 118 (0x76):
  // the dict (59 characters), 20 spaces of room for the first axis to grow to 21 digits, 38
  // spaces so that 10 + 118 is a multiple of 64, '\n'.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  bytes_t expected = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76, 0};
  expected.insert(expected.end(), dict.begin(), dict.end());
  expected.insert(expected.end(), 20 + 38, ' ');
  expected.push_back('\n');
  ASSERT_EQ(expected.size(), 128u);
  const bytes_t data = view_bytes(t);
  expected.insert(expected.end(), data.begin(), data.end());
  EXPECT_EQ(read_bytes(path), expected);
}

TEST(Npy, WritesOneAndZeroDimensionalShapesAsPythonTuples) {
  temp_dir dir;
  const bytes_t one = raw<std::int8_t>({1, -2, 3});
  ASSERT_TRUE(lowbit::io::write_npy(dir.file("v.npy"), {"v", dtype::i8, {3}, one.data(), 3}).ok());
  const bytes_t b = read_bytes(dir.file("v.npy"));
  const std::string text(b.begin(), b.end());
  EXPECT_NE(text.find("{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  EXPECT_EQ(b.size(), 128u + 3u);
  const bytes_t s = raw<double>({2.5});
  ASSERT_TRUE(lowbit::io::write_npy(dir.file("s.npy"), {"s", dtype::f64, {}, s.data(), 8}).ok());
  const bytes_t sb = read_bytes(dir.file("s.npy"));
  const std::string stext(sb.begin(), sb.end());
  // A 0-d array: "()" and no growth padding; 10 + 55 + '\n' = 66, so 62 spaces up to 128.
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
  EXPECT_EQ(stext.substr(10, 118), dict + std::string(62, ' ') + "\n");
  EXPECT_EQ(sb.size(), 128u + 8u);
}

TEST(Npy, ReadsAHandBuiltVersion1File) {
  temp_dir dir;
  const std::string path = dir.file("acts.npy");
  // An old numpy header: 16-byte alignment (10 + 70 = 80).
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(70 - 1 - header.size(), ' ');
  header += '\n';
  write_bytes(path, npy_image(1, header, raw<std::int32_t>({1, -2, 3, -4, 5, 600000})));
  auto r = npy_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  const tensor_view& t = r.value.tensor();
  EXPECT_EQ(t.name, "acts");
  EXPECT_EQ(t.type, dtype::i32);
  EXPECT_EQ(t.shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(t.bytes, 24u);
  EXPECT_EQ(t.data, r.value.map().data() + 80);
  std::vector<float> v;
  ASSERT_TRUE(lowbit::io::to_float(t, v).ok());
  EXPECT_EQ(v, (std::vector<float>{1, -2, 3, -4, 5, 600000}));
  npy_file moved = std::move(r.value);
  EXPECT_EQ(moved.tensor().data, moved.map().data() + 80);
}

TEST(Npy, ReadsVersions2And3AndOtherSpellings) {
  // Version 2.0 and 3.0 (4-byte length); double quotes, keys in another order, no trailing
  // comma, Python 2's long suffix.
  const bytes_t data = raw<std::uint16_t>({0x3C00, 0xC000});  // f16 1, -2
  for (int major : {2, 3}) {
    const bytes_t b = npy_image(major, "{\"shape\": (2L,), \"descr\": \"<f2\", \"fortran_order\": False}\n", data);
    auto r = npy_file::parse(b.data(), b.size(), "h.npy");
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.value.tensor().type, dtype::f16);
    EXPECT_EQ(r.value.tensor().shape, (std::vector<std::uint64_t>{2}));
    std::vector<float> v;
    ASSERT_TRUE(lowbit::io::to_float(r.value.tensor(), v).ok());
    EXPECT_EQ(v, (std::vector<float>{1.0f, -2.0f}));
  }
}

TEST(Npy, RoundTripsEveryDtype) {
  temp_dir dir;
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::i64, dtype::i32, dtype::i16, dtype::i8, dtype::u8,
                  dtype::u32, dtype::boolean}) {
    for (const std::vector<std::uint64_t>& shape :
         {std::vector<std::uint64_t>{}, std::vector<std::uint64_t>{5}, std::vector<std::uint64_t>{2, 3, 4},
          std::vector<std::uint64_t>{0, 7}, std::vector<std::uint64_t>{1234567, 0}}) {
      tensor_data d;
      d.name = "x";
      d.type = t;
      d.shape = shape;
      std::uint64_t n = 1;
      for (auto s : shape) n *= s;
      d.bytes.resize(static_cast<std::size_t>(n * lowbit::io::dtype_size(t)));
      for (std::size_t i = 0; i < d.bytes.size(); ++i) d.bytes[i] = static_cast<unsigned char>(i * 13 + 5);
      if (t == dtype::boolean)
        for (auto& b : d.bytes) b &= 1;
      const std::string path = dir.file(std::string("x-") + lowbit::io::dtype_name(t) + ".npy");
      ASSERT_TRUE(lowbit::io::write_npy(path, d.view()).ok());
      const bytes_t file = read_bytes(path);
      ASSERT_GE(file.size(), 10u);
      EXPECT_EQ((10 + file[8] + 256u * file[9]) % 64, 0u);
      auto r = npy_file::open(path);
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_EQ(r.value.tensor().name, "x-" + std::string(lowbit::io::dtype_name(t)));
      EXPECT_EQ(r.value.tensor().type, t);
      EXPECT_EQ(r.value.tensor().shape, shape);
      EXPECT_EQ(view_bytes(r.value.tensor()), d.bytes);
      bytes_t encoded;
      ASSERT_TRUE(lowbit::io::encode_npy(d.view(), encoded).ok());
      EXPECT_EQ(encoded, file);
    }
  }
}

TEST(Npy, RejectsWhatItCannotRead) {
  temp_dir dir;
  struct bad {
    const char* file;
    bytes_t bytes;
    const char* says;  // a piece of the error
  };
  const bytes_t d8(8, 0);
  auto hdr = [](const std::string& dict) { return dict + std::string(3, ' ') + "\n"; };
  const std::vector<bad> cases = {
      {"fortran.npy", npy_image(1, hdr("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }"), d8),
       "fortran_order"},
      {"big.npy", npy_image(1, hdr("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }"), d8), "big-endian"},
      {"complex.npy", npy_image(1, hdr("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), d8),
       "unsupported dtype '<c8'"},
      {"u2.npy", npy_image(1, hdr("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }"), d8),
       "unsupported dtype"},
      {"struct.npy",
       npy_image(1, hdr("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"), d8), "structured"},
      {"short.npy", npy_image(1, hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), d8), "truncated"},
      {"overflow.npy",
       npy_image(1, hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), d8),
       "2^64"},
      {"digits.npy", npy_image(1, hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
                               d8),
       "shape"},
      {"missing.npy", npy_image(1, hdr("{'descr': '<f4', 'shape': (2,), }"), d8), "lacks"},
      {"extra.npy", npy_image(1, hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"), d8),
       "unexpected key"},
      {"notdict.npy", npy_image(1, hdr("['descr']"), d8), "dict"},
      {"magic.npy", {'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0, 0, 0}, "magic"},
      {"version.npy", npy_image(4, "{}", {}), "version 4.0"},
      {"length.npy", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xFF, 0xFF, '{'}, "header length"},
      {"tiny.npy", {0x93, 'N', 'U'}, "magic"},
  };
  for (const bad& c : cases) {
    const std::string path = dir.file(c.file);
    write_bytes(path, c.bytes);
    auto r = npy_file::open(path);
    EXPECT_FALSE(r.ok()) << c.file;
    EXPECT_EQ(r.error.find(path), 0u) << r.error;
    EXPECT_NE(r.error.find(c.says), std::string::npos) << c.file << ": " << r.error;
  }
  const bytes_t bf(4, 0);
  auto st = lowbit::io::write_npy(dir.file("bf.npy"), {"bf", dtype::bf16, {2}, bf.data(), 4});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.error.find("BF16"), std::string::npos) << st.error;
  EXPECT_FALSE(lowbit::io::write_npy(dir.file("sz.npy"), {"sz", dtype::f32, {2}, bf.data(), 4}).ok());
}

// ----- TF.js ------------------------------------------------------------------------------------

// group 1: shards of 32 and 33 bytes; "emb" spans the boundary. group 2: one shard.
struct tfjs_fixture {
  temp_dir dir;
  std::string model;
  std::vector<float> kernel{1.5f, -2.0f, 3.25f, 0.0f, -0.125f, 1e6f};
  std::vector<float> emb{0.5f, 0.25f, -8.0f, 9.5f};
  std::vector<float> bias{-1.0f, 2.0f};

  explicit tfjs_fixture(const std::string& weights_json_extra = "") {
    model = dir.file("model.json");
    bytes_t g1 = raw<float>({kernel[0], kernel[1], kernel[2], kernel[3], kernel[4], kernel[5]});  // [0, 24)
    const bytes_t e = raw<float>({emb[0], emb[1], emb[2], emb[3]});                                  // [24, 40)
    g1.insert(g1.end(), e.begin(), e.end());
    const bytes_t q = {0, 1, 2, 10, 255};  // uint8, [40, 45)
    g1.insert(g1.end(), q.begin(), q.end());
    const bytes_t ids = raw<std::int32_t>({7, -9});  // [45, 53), unaligned
    g1.insert(g1.end(), ids.begin(), ids.end());
    const bytes_t h = raw<std::uint16_t>({0x3C00, 0xC000, 0x3800});  // float16 1, -2, 0.5: [53, 59)
    g1.insert(g1.end(), h.begin(), h.end());
    const bytes_t qi = raw<std::uint16_t>({0, 6, 10});  // uint16 -> int32: [59, 65)
    g1.insert(g1.end(), qi.begin(), qi.end());
    EXPECT_EQ(g1.size(), 65u);
    write_bytes(dir.file("group1-shard1of2.bin"), bytes_t(g1.begin(), g1.begin() + 32));
    write_bytes(dir.file("group1-shard2of2.bin"), bytes_t(g1.begin() + 32, g1.end()));
    write_bytes(dir.file("group2-shard1of1.bin"), raw<float>({bias[0], bias[1]}));
    write_text(model, R"({"format": "layers-model", "modelTopology": {"x": 1}, "weightsManifest": [
      {"paths": ["group1-shard1of2.bin", "group1-shard2of2.bin"], "weights": [
        {"name": "dense/kernel", "shape": [2, 3], "dtype": "float32"},
        {"name": "emb", "shape": [4], "dtype": "float32"},
        {"name": "q", "shape": [5], "dtype": "float32", "quantization": {"dtype": "uint8", "scale": 0.5, "min": -1.0}},
        {"name": "ids", "shape": [2], "dtype": "int32"},
        {"name": "h", "shape": [3], "dtype": "float32", "quantization": {"dtype": "float16"}},
        {"name": "qi", "shape": [3], "dtype": "int32", "quantization": {"dtype": "uint16", "scale": 0.25, "min": -2}})" +
                          weights_json_extra + R"(
      ]},
      {"paths": ["group2-shard1of1.bin"], "weights": [{"name": "bias", "shape": [2], "dtype": "float32"}]}
    ]})");
  }
};

std::vector<float> floats_of(const tensor_view* t) {
  std::vector<float> v;
  if (t == nullptr) return {-12345.0f};
  EXPECT_TRUE(lowbit::io::to_float(*t, v).ok());
  return v;
}

TEST(Tfjs, ReadsShardsQuantizedWeightsAndSpans) {
  tfjs_fixture fx;
  auto r = tfjs_model::open(fx.model);
  ASSERT_TRUE(r.ok()) << r.error;
  tfjs_model m = std::move(r.value);  // the views survive the move
  ASSERT_EQ(m.tensors().size(), 7u);
  const char* order[] = {"dense/kernel", "emb", "q", "ids", "h", "qi", "bias"};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(m.tensors()[i].name, order[i]);
  const tensor_view* kernel = m.find("dense/kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->type, dtype::f32);
  EXPECT_EQ(kernel->shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(floats_of(kernel), fx.kernel);
  EXPECT_EQ(floats_of(m.find("emb")), fx.emb);  // across the shard boundary
  const tensor_view* q = m.find("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, dtype::f32);
  EXPECT_EQ(floats_of(q), (std::vector<float>{-1.0f, -0.5f, 0.0f, 4.0f, 126.5f}));  // q * 0.5 - 1
  const tensor_view* ids = m.find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->type, dtype::i32);
  EXPECT_EQ(floats_of(ids), (std::vector<float>{7.0f, -9.0f}));
  const tensor_view* h = m.find("h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->type, dtype::f32);
  EXPECT_EQ(floats_of(h), (std::vector<float>{1.0f, -2.0f, 0.5f}));
  // int32 from uint16: Math.round(q * 0.25 - 2): -2, round(-0.5) = -0 -> 0, round(0.5) = 1.
  const tensor_view* qi = m.find("qi");
  ASSERT_NE(qi, nullptr);
  EXPECT_EQ(qi->type, dtype::i32);
  EXPECT_EQ(floats_of(qi), (std::vector<float>{-2.0f, 0.0f, 1.0f}));
  EXPECT_EQ(floats_of(m.find("bias")), fx.bias);
  EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(Tfjs, ErrorsNameTheModelAndTheWeight) {
  {
    tfjs_fixture fx(R"(, {"name": "s", "shape": [1], "dtype": "string"})");
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("model.json: weight 's'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx(R"(, {"name": "big", "shape": [100], "dtype": "float32"})");  // past the shards
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'big'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx(R"(, {"name": "emb", "shape": [0], "dtype": "float32"})");
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'emb'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx(R"(, {"name": "q4", "shape": [1], "dtype": "float32", "quantization": {"dtype": "int4"}})");
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'q4'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx(R"(, {"name": "noscale", "shape": [0], "dtype": "float32", "quantization": {"dtype": "uint8"}})");
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'noscale'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx(R"(, {"name": "shape", "shape": [-1], "dtype": "float32"})");
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'shape'"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx;
    std::filesystem::remove(fx.dir.file("group1-shard2of2.bin"));
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("group1-shard2of2.bin"), std::string::npos) << r.error;
  }
  {
    tfjs_fixture fx;
    bytes_t s2 = read_bytes(fx.dir.file("group1-shard2of2.bin"));
    s2.pop_back();  // truncated: "qi" is one byte short
    write_bytes(fx.dir.file("group1-shard2of2.bin"), s2);
    auto r = tfjs_model::open(fx.model);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("weight 'qi'"), std::string::npos) << r.error;
  }
  {
    temp_dir dir;
    write_text(dir.file("model.json"), "{\"weightsManifest\": [");
    auto r = tfjs_model::open(dir.file("model.json"));
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("model.json"), std::string::npos) << r.error;
    write_text(dir.file("model.json"), "{\"modelTopology\": {}}");
    EXPECT_FALSE(tfjs_model::open(dir.file("model.json")).ok());
    write_text(dir.file("model.json"), "{\"weightsManifest\": [{\"paths\": [1], \"weights\": []}]}");
    EXPECT_FALSE(tfjs_model::open(dir.file("model.json")).ok());
  }
}

TEST(Tfjs, ReadsABareManifestAndEmptyWeights) {
  temp_dir dir;
  write_bytes(dir.file("s.bin"), raw<std::int32_t>({4, 5}));
  // A weights_manifest.json is the array alone; a group may have no shards when its weights
  // are all empty.
  write_text(dir.file("weights_manifest.json"), R"([
    {"paths": [], "weights": [{"name": "z", "shape": [0, 3], "dtype": "float32"}]},
    {"paths": ["s.bin"], "weights": [{"name": "e", "shape": [0], "dtype": "int32"},
                                      {"name": "b", "shape": [2], "dtype": "bool"},
                                      {"name": "i", "shape": [1], "dtype": "int32", "quantization": null}]}
  ])");
  auto r = tfjs_model::open(dir.file("weights_manifest.json"));
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.value.tensors().size(), 4u);
  EXPECT_EQ(r.value.find("z")->bytes, 0u);
  EXPECT_EQ(r.value.find("e")->bytes, 0u);
  EXPECT_EQ(r.value.find("b")->type, dtype::boolean);
  EXPECT_EQ(floats_of(r.value.find("b")), (std::vector<float>{4.0f, 0.0f}));
  // "i" follows the two bool bytes: bytes 2..5 of the shard, 00 00 05 00, unaligned.
  const tensor_view* i = r.value.find("i");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(view_bytes(*i), (bytes_t{0, 0, 5, 0}));
  EXPECT_EQ(floats_of(i), (std::vector<float>{327680.0f}));
}

// ----- tensor_file ------------------------------------------------------------------------------

TEST(TensorFile, OpensEachKindByName) {
  temp_dir dir;
  const bytes_t f = raw<float>({1.0f, 2.0f, 3.0f});
  const tensor_view t{"w", dtype::f32, {3}, f.data(), f.size()};
  ASSERT_TRUE(lowbit::io::write_safetensors(dir.file("a.safetensors"), {t}, {{"k", "v"}}).ok());
  ASSERT_TRUE(lowbit::io::write_npy(dir.file("acts.npy"), t).ok());

  auto s = tensor_file::open(dir.file("a.safetensors"));
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_EQ(s.value.kind(), lowbit::io::tensor_file_kind::safetensors);
  EXPECT_EQ(s.value.path(), dir.file("a.safetensors"));
  EXPECT_EQ(s.value.metadata().at("k"), "v");
  tensor_file moved = std::move(s.value);
  ASSERT_NE(moved.find("w"), nullptr);
  EXPECT_EQ(view_bytes(*moved.find("w")), f);

  auto n = tensor_file::open(dir.file("acts.npy"));
  ASSERT_TRUE(n.ok()) << n.error;
  EXPECT_EQ(n.value.kind(), lowbit::io::tensor_file_kind::npy);
  ASSERT_NE(n.value.find("acts"), nullptr);
  EXPECT_EQ(view_bytes(*n.value.find("acts")), f);

  tfjs_fixture fx;
  auto j = tensor_file::open(fx.model);
  ASSERT_TRUE(j.ok()) << j.error;
  EXPECT_EQ(j.value.kind(), lowbit::io::tensor_file_kind::tfjs);
  EXPECT_EQ(j.value.tensors().size(), 7u);
  EXPECT_EQ(floats_of(j.value.find("emb")), fx.emb);

  // Unknown names: recognised by their first bytes.
  std::filesystem::copy_file(dir.file("a.safetensors"), dir.file("a.bin"));
  std::filesystem::copy_file(dir.file("acts.npy"), dir.file("acts.dat"));
  auto sb = tensor_file::open(dir.file("a.bin"));
  ASSERT_TRUE(sb.ok()) << sb.error;
  EXPECT_EQ(sb.value.kind(), lowbit::io::tensor_file_kind::safetensors);
  auto nb = tensor_file::open(dir.file("acts.dat"));
  ASSERT_TRUE(nb.ok()) << nb.error;
  EXPECT_EQ(nb.value.kind(), lowbit::io::tensor_file_kind::npy);
}

TEST(TensorFile, ErrorsAreTheReadersErrors) {
  temp_dir dir;
  write_text(dir.file("x.gguf"), "GGUF");
  auto g = tensor_file::open(dir.file("x.gguf"));
  EXPECT_FALSE(g.ok());
  EXPECT_NE(g.error.find("x.gguf"), std::string::npos);
  write_text(dir.file("bad.safetensors"), "short");
  auto b = tensor_file::open(dir.file("bad.safetensors"));
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.error.find(dir.file("bad.safetensors")), 0u) << b.error;
  EXPECT_TRUE(b.value.tensors().empty());
  write_text(dir.file("what.txt"), "hello");
  auto w = tensor_file::open(dir.file("what.txt"));
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.error.find("unknown tensor file type"), std::string::npos) << w.error;
  EXPECT_FALSE(tensor_file::open(dir.file("missing.safetensors")).ok());
}

}  // namespace
