// GGUF (lowbit/io/gguf.hpp): images built byte by byte from the spec (ggml's docs/gguf.md) parsed
// field by field, the writer's bytes against a hand-built image, round trips of every supported
// tensor and metadata type, the quantized blocks against lowbit's ggml layout calls, and
// malformed files (every truncation, every field out of range) rejected with an error naming the
// file and the key or tensor.
#include <lowbit/io/gguf.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace io = lowbit::io;
using io::ggml_type;
using io::gguf_type;
using io::gguf_value;

// A GGUF image written field by field, little-endian.
struct image {
  std::vector<unsigned char> b;
  template <class T>
  image& put(T v) {
    unsigned char x[sizeof(T)];
    std::memcpy(x, &v, sizeof(T));
    b.insert(b.end(), x, x + sizeof(T));
    return *this;
  }
  image& u32(std::uint32_t v) { return put(v); }
  image& u64(std::uint64_t v) { return put(v); }
  image& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  image& raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  image& pad(std::size_t a) {
    while (b.size() % a != 0) b.push_back(0);
    return *this;
  }
  image& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
    raw("GGUF", 4);
    return u32(version).u64(tensors).u64(kvs);
  }
  image& tensor(const std::string& name, const std::vector<std::uint64_t>& dims, std::uint32_t type,
                std::uint64_t offset) {
    str(name).u32(static_cast<std::uint32_t>(dims.size()));
    for (const auto d : dims) u64(d);
    return u32(type).u64(offset);
  }
};

const float kW[6] = {1.0f, -2.0f, 0.5f, 3.25f, -0.125f, 100.0f};

// The spec's example in small: two metadata pairs (a string and an array of strings), one F32
// tensor [2, 3] (ggml dims {3, 2}), padding to 32, the data. The data ends the file.
image small_image() {
  image im;
  im.header(1, 2);
  im.str("general.architecture").u32(8).str("llama");
  im.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("a").str("bc").str("");
  im.tensor("w", {3, 2}, 0, 0);
  im.pad(32);
  im.raw(kW, sizeof kW);
  return im;
}

std::string temp_path(const std::string& name) { return testing::TempDir() + "lowbit_gguf_" + name + ".gguf"; }

std::vector<unsigned char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

bool exists(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// Parses a copy of exactly n bytes (so that ASan sees any read past the end).
io::io_result<io::gguf_file> parse_copy(const std::vector<unsigned char>& b, std::size_t n, std::vector<unsigned char>& keep) {
  keep.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return io::gguf_file::parse(keep.empty() ? nullptr : keep.data(), keep.size(), "x.gguf");
}

std::vector<float> test_matrix(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    const float u = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
    x[i] = u * std::ldexp(1.0f, static_cast<int>(i / 32 % 7) - 3);
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// Reading a hand-built image.

TEST(GgufRead, HandBuiltImageFieldByField) {
  const image im = small_image();
  // header 24, key/value pairs 45 + 72, tensor info 41: 182, padded to 192; 24 bytes of data.
  ASSERT_EQ(im.b.size(), 192u + 24u);
  io::io_result<io::gguf_file> r = io::gguf_file::parse(im.b.data(), im.b.size(), "small.gguf");
  ASSERT_TRUE(r.ok()) << r.error;
  const io::gguf_file& f = r.value;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 192u);

  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");
  ASSERT_NE(f.metadata()[0].second.as_string(), nullptr);
  EXPECT_EQ(*f.metadata()[0].second.as_string(), "llama");
  EXPECT_EQ(f.metadata()[1].first, "tokenizer.ggml.tokens");
  const gguf_value* tokens = f.find_metadata("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->type(), gguf_type::array);
  EXPECT_EQ(tokens->element_type(), gguf_type::string);
  ASSERT_EQ(tokens->size(), 3u);
  ASSERT_NE(tokens->strings(), nullptr);
  EXPECT_EQ((*tokens->strings()), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(*tokens->at(1)->as_string(), "bc");
  EXPECT_FALSE(tokens->at(3).has_value());
  EXPECT_EQ(f.find_metadata("general.name"), nullptr);

  ASSERT_EQ(f.tensor_infos().size(), 1u);
  const io::gguf_tensor_info& t = f.tensor_infos()[0];
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(t.dims, (std::vector<std::uint64_t>{3, 2}));
  EXPECT_EQ(t.shape(), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(t.type, ggml_type::f32);
  EXPECT_EQ(t.offset, 0u);
  EXPECT_EQ(t.bytes, 24u);
  EXPECT_EQ(t.data, im.b.data() + 192);
  EXPECT_EQ(f.find_tensor("w"), &t);

  const std::vector<io::tensor_view> views = f.float_tensors();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].name, "w");
  EXPECT_EQ(views[0].type, io::dtype::f32);
  EXPECT_EQ(views[0].shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(views[0].rows(), 2u);
  EXPECT_EQ(views[0].cols(), 3u);
  std::vector<float> x;
  ASSERT_TRUE(io::to_float(views[0], x).ok());
  EXPECT_EQ(x, std::vector<float>(kW, kW + 6));
}

TEST(GgufRead, AlignmentKeyVersion2AndNoTensors) {
  // general.alignment = 64 moves the data; a version 2 file reads the same.
  image im;
  im.header(1, 1, 2);
  im.str("general.alignment").u32(4).u32(64);
  im.tensor("b", {2}, 1, 64);  // F16, at offset 64 of the data
  im.pad(64);
  const std::size_t start = im.b.size();
  EXPECT_EQ(start, 128u);  // 90 bytes of header, metadata and tensor info
  for (int i = 0; i < 64; ++i) im.b.push_back(0xEE);  // a gap before the tensor
  const std::uint16_t h[2] = {0x3C00, 0xC000};       // 1.0, -2.0
  im.raw(h, sizeof h);
  io::io_result<io::gguf_file> r = io::gguf_file::parse(im.b.data(), im.b.size(), "a.gguf");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value.version(), 2u);
  EXPECT_EQ(r.value.alignment(), 64u);
  EXPECT_EQ(r.value.tensor_infos()[0].data, im.b.data() + 192);
  EXPECT_EQ(r.value.data_offset(), 128u);
  std::vector<float> x;
  ASSERT_TRUE(io::to_float(r.value.float_tensors()[0], x).ok());
  EXPECT_EQ(x, (std::vector<float>{1.0f, -2.0f}));

  // No tensors: no padding is needed after the metadata.
  image none;
  none.header(0, 1).str("general.name").u32(8).str("empty");
  r = io::gguf_file::parse(none.b.data(), none.b.size(), "none.gguf");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.value.tensor_infos().empty());
  EXPECT_EQ(r.value.data_offset(), none.b.size());
}

// ---------------------------------------------------------------------------------------------
// Writing.

TEST(GgufWrite, BytesEqualHandBuiltImage) {
  const std::string path = temp_path("bytes");
  io::gguf_metadata md;
  md.emplace_back("general.architecture", gguf_value::str("llama"));
  md.emplace_back("tokenizer.ggml.tokens", gguf_value::string_array({"a", "bc", ""}));
  io::gguf_tensor_out w{"w", {2, 3}, ggml_type::f32, {}};
  w.bytes.resize(sizeof kW);
  std::memcpy(w.bytes.data(), kW, sizeof kW);
  ASSERT_TRUE(io::write_gguf(path, md, {w}).ok());
  image expected = small_image();
  expected.pad(32);  // ggml pads after every tensor, the last one too
  EXPECT_EQ(read_all(path), expected.b);

  // Alignment 64: general.alignment (u32) is appended to the metadata, the padding follows it.
  ASSERT_TRUE(io::write_gguf(path, md, {w}, 64).ok());
  image e64;
  e64.header(1, 3);
  e64.str("general.architecture").u32(8).str("llama");
  e64.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("a").str("bc").str("");
  e64.str("general.alignment").u32(4).u32(64);
  e64.tensor("w", {3, 2}, 0, 0);
  e64.pad(64).raw(kW, sizeof kW).pad(64);
  EXPECT_EQ(read_all(path), e64.b);

  // Two tensors: the second at the first's size rounded up to the alignment; scalars and a
  // 3-D shape.
  io::gguf_tensor_out s{"s", {}, ggml_type::f32, {0, 0, 0x80, 0x3F}};  // 1.0f
  io::gguf_tensor_out c{"c", {2, 1, 2}, ggml_type::f16, std::vector<unsigned char>(8, 0x11)};
  ASSERT_TRUE(io::write_gguf(path, {}, {s, c}).ok());
  image e2;
  e2.header(2, 0);
  e2.tensor("s", {1}, 0, 0);
  e2.tensor("c", {2, 1, 2}, 1, 32);
  e2.pad(32).raw(s.bytes.data(), 4).pad(32).raw(c.bytes.data(), 8).pad(32);
  EXPECT_EQ(read_all(path), e2.b);
  std::remove(path.c_str());
}

TEST(GgufWrite, RoundTripEveryTensorAndValueType) {
  const std::size_t rows = 3, cols = 64;
  const std::vector<float> x = test_matrix(rows, cols, 7);
  std::vector<io::gguf_tensor_out> tensors;
  for (const ggml_type t : {ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q4_0, ggml_type::q8_0,
                            ggml_type::mxfp4}) {
    io::io_result<io::gguf_tensor_out> q =
        io::gguf_quantize(std::string("blk.0.") + io::ggml_type_name(t), x.data(), rows, cols, t);
    ASSERT_TRUE(q.ok()) << q.error;
    tensors.push_back(std::move(q.value));
  }
  // An F16 vector from a tensor_view.
  const std::uint16_t h[3] = {0x3C00, 0x0001, 0xFC00};
  const io::tensor_view hv{"norm", io::dtype::f16, {3}, reinterpret_cast<const unsigned char*>(h), 6};
  io::io_result<io::gguf_tensor_out> hv_out = io::gguf_float_tensor(hv);
  ASSERT_TRUE(hv_out.ok()) << hv_out.error;
  tensors.push_back(hv_out.value);

  io::gguf_metadata md;
  md.emplace_back("t.u8", gguf_value::u8(200));
  md.emplace_back("t.i8", gguf_value::i8(-100));
  md.emplace_back("t.u16", gguf_value::u16(60000));
  md.emplace_back("t.i16", gguf_value::i16(-30000));
  md.emplace_back("t.u32", gguf_value::u32(4000000000u));
  md.emplace_back("t.i32", gguf_value::i32(-2000000000));
  md.emplace_back("t.f32", gguf_value::f32(0.1f));
  md.emplace_back("t.bool", gguf_value::boolean(true));
  md.emplace_back("t.string", gguf_value::str("h\xC3\xA9llo"));
  md.emplace_back("t.u64", gguf_value::u64(UINT64_MAX));
  md.emplace_back("t.i64", gguf_value::i64(INT64_MIN));
  md.emplace_back("t.f64", gguf_value::f64(-1e300));
  md.emplace_back("t.arr_i32", gguf_value::array(std::vector<std::int32_t>{1, -2, 3}));
  md.emplace_back("t.arr_f32", gguf_value::array(std::vector<float>{0.5f, -0.0f}));
  md.emplace_back("t.arr_u8", gguf_value::array(std::vector<std::uint8_t>{}));
  md.emplace_back("t.arr_bool", gguf_value::bool_array({true, false, true}));
  md.emplace_back("t.arr_str", gguf_value::string_array({"x", "", "yz"}));
  md.emplace_back("t.arr_arr", gguf_value::array_of_arrays({gguf_value::array(std::vector<std::int64_t>{-5}),
                                                            gguf_value::string_array({"q"})}));
  md.emplace_back("general.alignment", gguf_value::u32(64));

  const std::string path = temp_path("roundtrip");
  ASSERT_TRUE(io::write_gguf(path, md, tensors, 64).ok());
  io::io_result<io::gguf_file> r = io::gguf_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  const io::gguf_file f = std::move(r.value);  // moving keeps the map and the data pointers
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);

  ASSERT_EQ(f.metadata().size(), md.size());
  for (std::size_t i = 0; i < md.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].first, md[i].first);
    EXPECT_TRUE(f.metadata()[i].second == md[i].second) << md[i].first;
  }
  EXPECT_EQ(*f.find_metadata("t.u8")->as_uint(), 200u);
  EXPECT_EQ(*f.find_metadata("t.i8")->as_int(), -100);
  EXPECT_FALSE(f.find_metadata("t.i8")->as_uint().has_value());
  EXPECT_EQ(*f.find_metadata("t.u32")->as_int(), 4000000000);
  EXPECT_EQ(*f.find_metadata("t.i16")->as_int(), -30000);
  EXPECT_EQ(*f.find_metadata("t.i32")->as_int(), -2000000000);
  EXPECT_EQ(*f.find_metadata("t.u64")->as_uint(), UINT64_MAX);
  EXPECT_FALSE(f.find_metadata("t.u64")->as_int().has_value());
  EXPECT_EQ(*f.find_metadata("t.i64")->as_int(), INT64_MIN);
  EXPECT_EQ(*f.find_metadata("t.f32")->as_float(), static_cast<double>(0.1f));
  EXPECT_EQ(*f.find_metadata("t.f64")->as_float(), -1e300);
  EXPECT_EQ(*f.find_metadata("t.bool")->as_bool(), true);
  EXPECT_EQ(*f.find_metadata("t.string")->as_string(), "h\xC3\xA9llo");
  const gguf_value& ai = *f.find_metadata("t.arr_i32");
  ASSERT_EQ(ai.size(), 3u);
  EXPECT_EQ(*ai.at(1)->as_int(), -2);
  EXPECT_EQ(ai.at(1)->type(), gguf_type::i32);
  EXPECT_TRUE(std::signbit(*f.find_metadata("t.arr_f32")->at(1)->as_float()));
  EXPECT_EQ(*f.find_metadata("t.arr_bool")->at(1)->as_bool(), false);
  const gguf_value& aa = *f.find_metadata("t.arr_arr");
  ASSERT_NE(aa.arrays(), nullptr);
  EXPECT_EQ(*(*aa.arrays())[0].at(0)->as_int(), -5);
  EXPECT_EQ(*(*aa.arrays())[1].at(0)->as_string(), "q");

  ASSERT_EQ(f.tensor_infos().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const io::gguf_tensor_info& t = f.tensor_infos()[i];
    EXPECT_EQ(t.name, tensors[i].name);
    EXPECT_EQ(t.type, tensors[i].type);
    EXPECT_EQ(t.shape(), tensors[i].shape);
    EXPECT_EQ(t.offset % 64, 0u);
    ASSERT_EQ(t.bytes, tensors[i].bytes.size()) << t.name;
    EXPECT_EQ(std::memcmp(t.data, tensors[i].bytes.data(), t.bytes), 0) << t.name;
  }
  EXPECT_EQ(f.tensor_infos()[0].dims, (std::vector<std::uint64_t>{cols, rows}));
  EXPECT_EQ(f.tensor_infos()[3].bytes, rows * cols / 32 * 18);
  EXPECT_EQ(f.tensor_infos()[4].bytes, rows * cols / 32 * 34);
  EXPECT_EQ(f.tensor_infos()[5].bytes, rows * cols / 32 * 17);

  // The float tensors as views, and their values.
  const std::vector<io::tensor_view> views = f.float_tensors();
  ASSERT_EQ(views.size(), 4u);
  std::vector<float> y;
  ASSERT_TRUE(io::to_float(views[0], y).ok());
  EXPECT_EQ(y, x);
  ASSERT_TRUE(io::to_float(views[1], y).ok());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], static_cast<float>(lowbit::encode<lowbit::float16>(x[i], lowbit::overflow::non_saturate)));
  ASSERT_TRUE(io::to_float(views[2], y).ok());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], static_cast<float>(lowbit::encode<lowbit::bfloat16>(x[i], lowbit::overflow::non_saturate)));
  EXPECT_EQ(views[3].name, "norm");
  ASSERT_TRUE(io::to_float(views[3], y).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[2], -INFINITY);

  // The Q8_0 tensor from the file dequantizes close to the source.
  std::vector<lowbit::ggml_block_q8_0> q8(rows * cols / 32);
  std::memcpy(q8.data(), f.tensor_infos()[4].data, f.tensor_infos()[4].bytes);
  std::vector<float> d(rows * cols);
  ASSERT_TRUE(lowbit::ggml_dequantize_q8_0(q8.data(), rows, cols, d.data()).ok());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(d[i], x[i], 0.01);
  std::remove(path.c_str());
}

TEST(GgufWrite, StreamingWriter) {
  const std::string path = temp_path("stream");
  const std::vector<float> x = test_matrix(2, 32, 3);
  const std::vector<io::gguf_tensor_desc> descs = {{"a", {2, 32}, ggml_type::f32}, {"b", {2, 32}, ggml_type::q8_0}};
  io::io_result<io::gguf_tensor_out> q = io::gguf_quantize("b", x.data(), 2, 32, ggml_type::q8_0);
  ASSERT_TRUE(q.ok());
  {
    io::io_result<io::gguf_writer> w = io::gguf_writer::create(path, {}, descs);
    ASSERT_TRUE(w.ok()) << w.error;
    ASSERT_TRUE(w.value.write_tensor(reinterpret_cast<const unsigned char*>(x.data()), 256).ok());
    ASSERT_TRUE(w.value.write_tensor(q.value.bytes.data(), q.value.bytes.size()).ok());
    EXPECT_EQ(w.value.tensors_written(), 2u);
    ASSERT_TRUE(w.value.finish().ok());
  }
  io::io_result<io::gguf_file> r = io::gguf_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value.tensor_infos()[1].offset, 256u);
  EXPECT_EQ(std::memcmp(r.value.tensor_infos()[1].data, q.value.bytes.data(), 68), 0);

  // A wrong byte count: an error naming the tensor, and the partial file is removed.
  {
    io::io_result<io::gguf_writer> w = io::gguf_writer::create(path, {}, descs);
    ASSERT_TRUE(w.ok());
    const io::io_status s = w.value.write_tensor(reinterpret_cast<const unsigned char*>(x.data()), 255);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find("tensor 'a'"), std::string::npos) << s.error;
    EXPECT_FALSE(exists(path));
  }
  // Destroyed before finish(): removed too; finish() with a tensor missing is an error.
  {
    io::io_result<io::gguf_writer> w = io::gguf_writer::create(path, {}, descs);
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE(exists(path));
  }
  EXPECT_FALSE(exists(path));
  {
    io::io_result<io::gguf_writer> w = io::gguf_writer::create(path, {}, descs);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w.value.write_tensor(reinterpret_cast<const unsigned char*>(x.data()), 256).ok());
    const io::io_status s = w.value.finish();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find("1 of 2"), std::string::npos) << s.error;
    EXPECT_FALSE(exists(path));
  }
}

TEST(GgufWrite, Errors) {
  const std::string path = temp_path("errors");
  std::remove(path.c_str());
  const io::gguf_tensor_out good{"w", {1, 32}, ggml_type::f32, std::vector<unsigned char>(128)};
  auto expect_error = [&](const io::gguf_metadata& md, const std::vector<io::gguf_tensor_out>& ts,
                          std::uint32_t alignment, const std::string& needle) {
    const io::io_status s = io::write_gguf(path, md, ts, alignment);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_EQ(s.error.rfind(path + ": ", 0), 0u) << s.error;
    EXPECT_NE(s.error.find(needle), std::string::npos) << s.error;
    EXPECT_FALSE(exists(path)) << needle;
  };
  expect_error({}, {good}, 24, "alignment 24");
  expect_error({}, {good}, 4, "alignment 4");
  expect_error({{"k", gguf_value::u8(1)}, {"k", gguf_value::u8(2)}}, {good}, 32, "duplicate metadata key 'k'");
  expect_error({{"", gguf_value::u8(1)}}, {good}, 32, "empty metadata key");
  expect_error({{"general.alignment", gguf_value::u64(32)}}, {good}, 32, "'general.alignment' is u64");
  expect_error({{"general.alignment", gguf_value::u32(32)}}, {good}, 64, "differs");
  expect_error({{"bad", gguf_value::array_of_arrays({gguf_value::u8(1)})}}, {good}, 32, "metadata 'bad'");
  gguf_value deep = gguf_value::array(std::vector<std::uint8_t>{1});
  for (int i = 0; i < io::gguf_max_array_depth; ++i) deep = gguf_value::array_of_arrays({deep});
  expect_error({{"deep", deep}}, {good}, 32, "nested");
  expect_error({}, {good, good}, 32, "duplicate tensor 'w'");
  expect_error({}, {{std::string(64, 'n'), {1, 32}, ggml_type::f32, std::vector<unsigned char>(128)}}, 32,
               "64 bytes");
  expect_error({}, {{"w", {1, 1, 1, 1, 32}, ggml_type::f32, std::vector<unsigned char>(128)}}, 32, "5 dimensions");
  expect_error({}, {{"w", {0, 32}, ggml_type::f32, {}}}, 32, "zero dimension");
  expect_error({}, {{"w", {1, 33}, ggml_type::q4_0, std::vector<unsigned char>(18)}}, 32, "Q4_0 block of 32");
  expect_error({}, {{"w", {1, 32}, ggml_type::q4_0, std::vector<unsigned char>(17)}}, 32, "tensor 'w': 17 bytes");
  expect_error({}, {{"w", {1ull << 62, 1ull << 62}, ggml_type::f32, {}}}, 32, "INT64_MAX");
  expect_error({}, {{"w", {32}, static_cast<ggml_type>(3), std::vector<unsigned char>(20)}}, 32, "ggml type 3");

  // Within the limit, nesting is fine.
  gguf_value ok_deep = gguf_value::array(std::vector<std::uint8_t>{1});
  for (int i = 1; i < io::gguf_max_array_depth; ++i) ok_deep = gguf_value::array_of_arrays({ok_deep});
  ASSERT_TRUE(io::write_gguf(path, {{"deep", ok_deep}}, {good}).ok());
  io::io_result<io::gguf_file> r = io::gguf_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.value.find_metadata("deep") == ok_deep);
  std::remove(path.c_str());

  io::io_result<io::gguf_tensor_out> bad_view =
      io::gguf_float_tensor(io::tensor_view{"i", io::dtype::i8, {1}, good.bytes.data(), 1});
  EXPECT_FALSE(bad_view.ok());
  EXPECT_NE(bad_view.error.find("tensor 'i'"), std::string::npos);
  EXPECT_FALSE(io::gguf_file::open(path).ok());  // no such file
}

// ---------------------------------------------------------------------------------------------
// Quantized blocks: the bytes of lowbit's ggml layout calls (proven against ggml's reference
// quantizers in test_layouts and test_mx).

TEST(GgufQuantize, BlocksEqualLayoutCalls) {
  const std::size_t rows = 5, cols = 96, n = rows * cols;
  std::vector<float> x = test_matrix(rows, cols, 11);
  x[40] = 0.0f;
  for (std::size_t j = 64; j < 96; ++j) x[j] = 0.0f;  // an all-zero block

  io::io_result<io::gguf_tensor_out> q4 = io::gguf_quantize("q4", x.data(), rows, cols, ggml_type::q4_0);
  ASSERT_TRUE(q4.ok()) << q4.error;
  std::vector<lowbit::ggml_block_q4_0> b4(n / 32);
  ASSERT_TRUE(lowbit::ggml_quantize_q4_0(x.data(), rows, cols, b4.data()).ok());
  ASSERT_EQ(q4.value.bytes.size(), n / 32 * 18);
  EXPECT_EQ(std::memcmp(q4.value.bytes.data(), b4.data(), q4.value.bytes.size()), 0);
  EXPECT_EQ(q4.value.shape, (std::vector<std::uint64_t>{rows, cols}));
  EXPECT_EQ(q4.value.type, ggml_type::q4_0);
  // The all-zero block stores d = -0 and codes 8, as ggml does.
  const unsigned char* z = q4.value.bytes.data() + 2 * 18;
  EXPECT_EQ(z[0], 0x00);
  EXPECT_EQ(z[1], 0x80);
  EXPECT_EQ(z[2], 0x88);

  io::io_result<io::gguf_tensor_out> q8 = io::gguf_quantize("q8", x.data(), rows, cols, ggml_type::q8_0);
  ASSERT_TRUE(q8.ok()) << q8.error;
  std::vector<lowbit::ggml_block_q8_0> b8(n / 32);
  ASSERT_TRUE(lowbit::ggml_quantize_q8_0(x.data(), rows, cols, b8.data()).ok());
  ASSERT_EQ(q8.value.bytes.size(), n / 32 * 34);
  EXPECT_EQ(std::memcmp(q8.value.bytes.data(), b8.data(), q8.value.bytes.size()), 0);

  io::io_result<io::gguf_tensor_out> mx = io::gguf_quantize("mx", x.data(), rows, cols, ggml_type::mxfp4);
  ASSERT_TRUE(mx.ok()) << mx.error;
  lowbit::mx_options o = lowbit::mx_presets::ggml();
  o.scale_rule = lowbit::e8m0_rule::floor_log2f;
  std::vector<std::uint8_t> e(n / 2), s(n / 32);
  ASSERT_TRUE(lowbit::mx_quantize<lowbit::mxfp4>(x.data(), n, o, e.data(), s.data()).ok());
  std::vector<lowbit::ggml_block_mxfp4> bm(n / 32);
  ASSERT_TRUE(lowbit::mxfp4_to_ggml(e.data(), s.data(), n, bm.data()).ok());
  ASSERT_EQ(mx.value.bytes.size(), n / 32 * 17);
  EXPECT_EQ(std::memcmp(mx.value.bytes.data(), bm.data(), mx.value.bytes.size()), 0);

  // A hand-checked MXFP4 block: amax 6 -> e = floor(log2 6) - 2 + 127 = 127; 1.0 is E2M1 0x2,
  // -6 is 0xF; element j in qs[j] low nibble, element j + 16 in the high nibble.
  std::vector<float> one(32, 0.0f);
  one[0] = 1.0f;
  one[16] = -6.0f;
  io::io_result<io::gguf_tensor_out> b = io::gguf_quantize("one", one.data(), 1, 32, ggml_type::mxfp4);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b.value.bytes.size(), 17u);
  EXPECT_EQ(b.value.bytes[0], 127);
  EXPECT_EQ(b.value.bytes[1], 0xF2);
  for (std::size_t j = 2; j < 17; ++j) EXPECT_EQ(b.value.bytes[j], 0) << j;

  // Rows of whole blocks only, errors name the tensor.
  io::io_result<io::gguf_tensor_out> bad = io::gguf_quantize("blk.1.ffn", x.data(), 1, 48, ggml_type::q8_0);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("tensor 'blk.1.ffn'"), std::string::npos) << bad.error;
  EXPECT_NE(bad.error.find("48 columns"), std::string::npos) << bad.error;
  x[3] = NAN;
  for (const ggml_type t : {ggml_type::q4_0, ggml_type::q8_0, ggml_type::mxfp4}) {
    io::io_result<io::gguf_tensor_out> nan = io::gguf_quantize("nan", x.data(), rows, cols, t);
    EXPECT_FALSE(nan.ok()) << io::ggml_type_name(t);
    EXPECT_NE(nan.error.find("tensor 'nan'"), std::string::npos) << nan.error;
  }
  // F32 and F16 take any number of columns.
  EXPECT_TRUE(io::gguf_quantize("f", x.data(), 1, 7, ggml_type::f16).ok());
  EXPECT_EQ(io::gguf_quantize("f", x.data(), 1, 7, ggml_type::f32).value.bytes.size(), 28u);
}

// ---------------------------------------------------------------------------------------------
// Malformed files.

TEST(GgufMalformed, EveryTruncationIsAnError) {
  // The small image, and a written file with every value type (cut before its trailing padding:
  // a file that ends with its last tensor's data is complete).
  std::vector<std::vector<unsigned char>> files = {small_image().b};
  {
    io::gguf_metadata md;
    md.emplace_back("a", gguf_value::u8(1));
    md.emplace_back("b", gguf_value::i16(-2));
    md.emplace_back("c", gguf_value::f64(0.5));
    md.emplace_back("d", gguf_value::boolean(false));
    md.emplace_back("e", gguf_value::string_array({"x", "yy"}));
    md.emplace_back("f", gguf_value::array(std::vector<std::uint32_t>{1, 2}));
    md.emplace_back("g", gguf_value::array_of_arrays({gguf_value::bool_array({true})}));
    const std::vector<float> x = test_matrix(2, 32, 5);
    io::io_result<io::gguf_tensor_out> a = io::gguf_quantize("a", x.data(), 2, 32, ggml_type::q4_0);
    io::io_result<io::gguf_tensor_out> b = io::gguf_quantize("b", x.data(), 2, 32, ggml_type::mxfp4);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::string path = temp_path("trunc");
    ASSERT_TRUE(io::write_gguf(path, md, {a.value, b.value}).ok());
    std::vector<unsigned char> all = read_all(path);
    std::remove(path.c_str());
    io::io_result<io::gguf_file> r = io::gguf_file::parse(all.data(), all.size(), "t.gguf");
    ASSERT_TRUE(r.ok()) << r.error;
    const io::gguf_tensor_info& last = r.value.tensor_infos().back();
    all.resize(static_cast<std::size_t>(last.data - all.data()) + last.bytes);
    files.push_back(all);
  }
  for (const auto& file : files) {
    std::vector<unsigned char> keep;
    ASSERT_TRUE(parse_copy(file, file.size(), keep).ok());
    for (std::size_t n = 0; n < file.size(); ++n) {
      io::io_result<io::gguf_file> r = parse_copy(file, n, keep);
      EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes";
      EXPECT_EQ(r.error.rfind("x.gguf: ", 0), 0u) << r.error;
    }
  }
}

// One malformed image per check; the error names the file and the key or tensor.
void expect_malformed(const image& im, const std::string& needle) {
  std::vector<unsigned char> keep;
  io::io_result<io::gguf_file> r = parse_copy(im.b, im.b.size(), keep);
  EXPECT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.error.rfind("x.gguf: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
}

// A file with one tensor info and enough data after it.
image one_tensor(const std::vector<std::uint64_t>& dims, std::uint32_t type, std::uint64_t offset,
                 std::size_t data_bytes) {
  image im;
  im.header(1, 0).tensor("t", dims, type, offset).pad(32);
  im.b.resize(im.b.size() + data_bytes);
  return im;
}

TEST(GgufMalformed, HeaderAndMetadata) {
  image im;
  im.raw("GGUG", 4).u32(3).u64(0).u64(0);
  expect_malformed(im, "bad magic");
  expect_malformed(image{}.header(0, 0, 1), "unsupported GGUF version 1");
  expect_malformed(image{}.header(0, 0, 4), "unsupported GGUF version 4");
  expect_malformed(image{}.header(0, 0, 0x03000000), "big-endian");
  expect_malformed(image{}.header(0, 1u << 20), "metadata_kv_count");
  expect_malformed(image{}.header(UINT64_MAX, 0), "tensor_count");

  expect_malformed(image{}.header(0, 1).u64(1000).raw("key", 3).u32(0).put<std::uint8_t>(0), "metadata key 0");
  expect_malformed(image{}.header(0, 1).str("").u32(0).u32(0), "metadata key 0 is empty");
  expect_malformed(image{}.header(0, 1).str("k").u32(13).put<std::uint8_t>(0), "metadata 'k': unknown value type 13");
  expect_malformed(image{}.header(0, 1).str("k").u32(7).put<std::uint8_t>(2), "metadata 'k': bool value 2");
  expect_malformed(image{}.header(0, 1).str("k").u32(8).u64(UINT64_MAX).raw("abcd", 4),
                   "metadata 'k': string length beyond");
  expect_malformed(image{}.header(0, 1).str("k").u32(9).u32(4).u64(1u << 30).u32(0), "metadata 'k': array of");
  expect_malformed(image{}.header(0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(99).raw("b", 1),
                   "metadata 'k': string 1 of the array");
  expect_malformed(image{}.header(0, 1).str("k").u32(9).u32(7).u64(2).put<std::uint16_t>(0x0301),
                   "metadata 'k': bool element 1");
  expect_malformed(image{}.header(0, 1).str("k").u32(9).u32(99).u64(0), "metadata 'k': array of unknown");
  expect_malformed(image{}.header(0, 2).str("k").u32(0).put<std::uint8_t>(1).str("k").u32(0).put<std::uint8_t>(1),
                   "duplicate metadata key 'k'");
  expect_malformed(image{}.header(0, 1).str("general.alignment").u32(5).u32(32),
                   "'general.alignment' is i32");
  expect_malformed(image{}.header(0, 1).str("general.alignment").u32(4).u32(48), "not a power of two");
  expect_malformed(image{}.header(0, 1).str("general.alignment").u32(4).u32(0), "not a power of two");

  // Arrays nested gguf_max_array_depth deep are read; one level more is an error.
  auto nested = [](int levels) {
    image n;
    n.header(0, 1).str("k").u32(9);
    for (int i = 0; i < levels; ++i) {
      if (i + 1 < levels) n.u32(9).u64(1);
      else n.u32(4).u64(1).u32(7);
    }
    return n;
  };
  const image ok = nested(io::gguf_max_array_depth);
  io::io_result<io::gguf_file> r = io::gguf_file::parse(ok.b.data(), ok.b.size(), "x.gguf");
  ASSERT_TRUE(r.ok()) << r.error;
  const gguf_value* v = r.value.find_metadata("k");
  for (int i = 1; i < io::gguf_max_array_depth; ++i) v = &(*v->arrays())[0];
  EXPECT_EQ(*v->at(0)->as_uint(), 7u);
  expect_malformed(nested(io::gguf_max_array_depth + 1), "nested more than");
  // A million levels: rejected at the limit, without deep recursion.
  image deep;
  deep.header(0, 1).str("k").u32(9);
  for (int i = 0; i < 1000000; ++i) deep.u32(9).u64(1);
  expect_malformed(deep, "nested more than");
}

TEST(GgufMalformed, TensorInfosAndData) {
  // Each of these is valid with the right field (checked first), then broken one field at a time.
  {
    const image good = one_tensor({32, 2}, 2, 0, 36);
    std::vector<unsigned char> keep;
    ASSERT_TRUE(parse_copy(good.b, good.b.size(), keep).ok());
  }
  expect_malformed(one_tensor({1, 1, 1, 1, 1}, 0, 0, 4), "tensor 't': 5 dimensions");
  expect_malformed(one_tensor({1ull << 32, 1ull << 32}, 0, 0, 4), "tensor 't': dimensions overflow");
  expect_malformed(one_tensor({1ull << 63}, 0, 0, 4), "tensor 't': dimensions overflow");
  expect_malformed(one_tensor({32}, 3, 0, 20), "tensor 't': ggml type 3");
  expect_malformed(one_tensor({32}, 40, 0, 20), "tensor 't': ggml type 40");
  expect_malformed(one_tensor({33, 1}, 2, 0, 36), "tensor 't': 33 elements per row");
  expect_malformed(one_tensor({16}, 39, 0, 17), "MXFP4 block of 32");
  expect_malformed(one_tensor({32, 2}, 8, 0, 67), "tensor 't': data [0, +68) ends beyond");
  expect_malformed(one_tensor({4}, 0, 16, 64), "tensor 't': data offset 16 is not a multiple of the alignment 32");
  expect_malformed(one_tensor({4}, 0, UINT64_MAX - 31, 64), "ends beyond");
  expect_malformed(one_tensor({1ull << 40, 1ull << 20}, 0, 0, 64), "ends beyond");

  image big_name;
  big_name.header(1, 0).tensor(std::string(65, 'n'), {1}, 0, 0).pad(32).raw(kW, 4);
  expect_malformed(big_name, "tensor 0: name of 65 bytes");
  image name_beyond;
  name_beyond.header(1, 0).u64(1000).raw("abc", 3).u32(0).u32(0).u64(0).u64(0);
  expect_malformed(name_beyond, "tensor 0: name length beyond");
  image dup;
  dup.header(2, 0).tensor("t", {1}, 0, 0).tensor("t", {1}, 0, 32).pad(32).raw(kW, 4).pad(32).raw(kW, 4);
  expect_malformed(dup, "duplicate tensor 't'");
  image no_data;
  no_data.header(1, 0).tensor("t", {1}, 0, 0);
  expect_malformed(no_data, "beyond the end of the file");
}

TEST(GgufValue, Accessors) {
  const gguf_value m = gguf_value::i8(-1);
  EXPECT_EQ(m.type(), gguf_type::i8);
  EXPECT_EQ(*m.as_int(), -1);
  EXPECT_FALSE(m.as_uint().has_value());
  EXPECT_FALSE(m.as_float().has_value());
  EXPECT_EQ(m.as_string(), nullptr);
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(*gguf_value::u16(65535).as_uint(), 65535u);
  EXPECT_EQ(*gguf_value::i64(5).as_uint(), 5u);
  EXPECT_EQ(*gguf_value::f32(-0.25f).as_float(), -0.25);
  const gguf_value a = gguf_value::array(std::vector<std::int16_t>{-3, 4});
  EXPECT_EQ(a.element_type(), gguf_type::i16);
  EXPECT_EQ(*a.at(0)->as_int(), -3);
  ASSERT_NE(a.scalar_bytes(), nullptr);
  EXPECT_EQ(*a.scalar_bytes(), (std::vector<unsigned char>{0xFD, 0xFF, 0x04, 0x00}));
  EXPECT_TRUE(gguf_value::f32(NAN) == gguf_value::f32(NAN));
  EXPECT_FALSE(gguf_value::f64(0.0) == gguf_value::f64(-0.0));
  EXPECT_FALSE(gguf_value::u32(1) == gguf_value::i32(1));
  EXPECT_STREQ(io::ggml_type_name(ggml_type::mxfp4), "MXFP4");
  EXPECT_EQ(static_cast<std::uint32_t>(ggml_type::bf16), 30u);
  EXPECT_EQ(static_cast<std::uint32_t>(ggml_type::mxfp4), 39u);
  EXPECT_EQ(io::ggml_block_bytes(ggml_type::mxfp4), 17u);
}

}  // namespace
