// lowbit::io safetensors: the exact bytes written (checked against the format's specification,
// https://huggingface.co/docs/safetensors, not against lowbit's own reader), round trips of every
// dtype, the streaming writer, and every malformed header the reader must reject.
#include <gtest/gtest.h>

#include <lowbit/io/safetensors.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io_support.hpp"

namespace {

using lowbit::io::dtype;
using lowbit::io::safetensors_file;
using lowbit::io::safetensors_writer;
using lowbit::io::tensor_data;
using lowbit::io::tensor_view;
using lowbit_io_test::bytes_t;

using lowbit_io_test::read_bytes;
using lowbit_io_test::temp_dir;
using lowbit_io_test::write_bytes;
using lowbit_io_test::write_text;

void append_le64(bytes_t& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// A safetensors image: the length of `header`, `header` as given (no padding), then `data`.
bytes_t image(const std::string& header, const bytes_t& data) {
  bytes_t b;
  append_le64(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

bytes_t float_bytes(std::initializer_list<float> v) {
  bytes_t b(v.size() * 4);
  std::memcpy(b.data(), v.begin(), b.size());
  return b;
}

tensor_data make(const std::string& name, dtype t, std::vector<std::uint64_t> shape, unsigned seed) {
  tensor_data d;
  d.name = name;
  d.type = t;
  d.shape = std::move(shape);
  std::uint64_t n = 1;
  for (auto s : d.shape) n *= s;
  d.bytes.resize(static_cast<std::size_t>(n * lowbit::io::dtype_size(t)));
  for (std::size_t i = 0; i < d.bytes.size(); ++i) d.bytes[i] = static_cast<unsigned char>(i * 7 + seed * 31 + 1);
  return d;
}

bytes_t view_bytes(const tensor_view& v) { return v.bytes == 0 ? bytes_t{} : bytes_t(v.data, v.data + v.bytes); }

// ----- the bytes lowbit writes -------------------------------------------------------------------

TEST(Safetensors, WritesTheSpecifiedBytes) {
  temp_dir dir;
  const std::string path = dir.file("exact.safetensors");
  tensor_data a{"a", dtype::f32, {2}, float_bytes({1.0f, 2.0f})};
  tensor_data b{"b", dtype::u8, {3}, {1, 2, 3}};
  ASSERT_TRUE(lowbit::io::write_safetensors(path, {a.view(), b.view()}, {{"format", "pt"}}).ok());

  // Compact JSON, "__metadata__" first, tensors in the order given with dtype, shape,
  // data_offsets; 138 bytes padded with 6 spaces to 144, a multiple of 8 (as the reference
  // implementation pads).
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}"
      "      ";
  ASSERT_EQ(header.size(), 144u);
  bytes_t expected = {0x90, 0, 0, 0, 0, 0, 0, 0};
  expected.insert(expected.end(), header.begin(), header.end());
  const bytes_t data = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 1, 2, 3};
  expected.insert(expected.end(), data.begin(), data.end());
  EXPECT_EQ(read_bytes(path), expected);
}

TEST(Safetensors, WritesAnEmptyFileAsAnEmptyObject) {
  temp_dir dir;
  const std::string path = dir.file("empty.safetensors");
  ASSERT_TRUE(lowbit::io::write_safetensors(path, {}).ok());
  const bytes_t expected = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
  EXPECT_EQ(read_bytes(path), expected);
  auto f = safetensors_file::open(path);
  ASSERT_TRUE(f.ok()) << f.error;
  EXPECT_TRUE(f.value.tensors().empty());
  EXPECT_TRUE(f.value.metadata().empty());
}

TEST(Safetensors, EscapesStringsAsJson) {
  temp_dir dir;
  const std::string path = dir.file("escape.safetensors");
  tensor_data t{"q\"\\\n", dtype::i8, {1}, {5}};
  ASSERT_TRUE(lowbit::io::write_safetensors(path, {t.view()}).ok());
  const bytes_t b = read_bytes(path);
  ASSERT_GE(b.size(), 8u);
  const std::string header(b.begin() + 8, b.end() - 1);
  EXPECT_EQ(header.rfind("{\"q\\\"\\\\\\n\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 0), 0u) << header;
  auto f = safetensors_file::open(path);
  ASSERT_TRUE(f.ok()) << f.error;
  ASSERT_EQ(f.value.tensors().size(), 1u);
  EXPECT_EQ(f.value.tensors()[0].name, "q\"\\\n");
}

// ----- reading a file built byte by byte --------------------------------------------------------

TEST(Safetensors, ReadsAHandBuiltFile) {
  temp_dir dir;
  const std::string path = dir.file("hand.safetensors");
  // Unpadded header, metadata last, tensors listed out of offset order.
  const std::string header =
      "{\"second\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12]},"
      "\"first\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
      "\"__metadata__\":{\"k\":\"v\",\"empty\":\"\"}}";
  // BF16 1.0, -2.0, 0.5, 3.0 (0x3F80, 0xC000, 0x3F00, 0x4040), then int32 -7.
  const bytes_t data = {0x80, 0x3F, 0x00, 0xC0, 0x00, 0x3F, 0x40, 0x40, 0xF9, 0xFF, 0xFF, 0xFF};
  write_bytes(path, image(header, data));

  auto r = safetensors_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  const safetensors_file& f = r.value;
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, "first");  // file order: by offset
  EXPECT_EQ(f.tensors()[1].name, "second");
  const tensor_view* first = f.find("first");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->type, dtype::bf16);
  EXPECT_EQ(first->shape, (std::vector<std::uint64_t>{2, 2}));
  EXPECT_EQ(first->bytes, 8u);
  EXPECT_EQ(first->data, f.map().data() + 8 + header.size());
  EXPECT_EQ(f.data_offset(), 8 + header.size());
  std::vector<float> v;
  ASSERT_TRUE(lowbit::io::to_float(*first, v).ok());
  EXPECT_EQ(v, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
  const tensor_view* second = f.find("second");
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(lowbit::io::to_float(*second, v).ok());
  EXPECT_EQ(v, (std::vector<float>{-7.0f}));
  EXPECT_EQ(f.find("third"), nullptr);
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"k", "v"}, {"empty", ""}}));
}

TEST(Safetensors, ParsesFromMemory) {
  const std::string header = "{\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
  const bytes_t b = image(header, {9, 8});
  auto r = safetensors_file::parse(b.data(), b.size(), "buffer");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.value.tensors().size(), 1u);
  EXPECT_EQ(r.value.tensors()[0].data, b.data() + 8 + header.size());
  EXPECT_EQ(r.value.map().size(), 0u);
}

// ----- round trips ------------------------------------------------------------------------------

TEST(Safetensors, RoundTripsEveryDtype) {
  temp_dir dir;
  const std::string path = dir.file("all.safetensors");
  std::vector<tensor_data> ts;
  unsigned seed = 0;
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::bf16, dtype::f8_e4m3, dtype::f8_e5m2, dtype::f8_e8m0,
                  dtype::i64, dtype::i32, dtype::i16, dtype::i8, dtype::u8, dtype::u32, dtype::boolean}) {
    ts.push_back(make(std::string("model.layers.") + std::to_string(seed) + "." + lowbit::io::dtype_name(t), t,
                      {3, 5}, seed));
    ++seed;
  }
  ts.push_back(make("scalar", dtype::f32, {}, 99));      // 0-d: one element
  ts.push_back(make("empty", dtype::f16, {0, 4}, 100));  // no bytes
  ts.push_back(make("cube", dtype::bf16, {2, 3, 4}, 101));
  std::vector<tensor_view> views;
  for (const auto& t : ts) views.push_back(t.view());
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"quote\"back\\slash", "line\nbreak\ttab"}, {"unicode", "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC"}};
  ASSERT_TRUE(lowbit::io::write_safetensors(path, views, meta).ok());

  const bytes_t file = read_bytes(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[static_cast<std::size_t>(i)];
  EXPECT_EQ(n % 8, 0u) << "header not padded to a multiple of 8";

  auto r = safetensors_file::open(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value.metadata(), meta);
  ASSERT_EQ(r.value.tensors().size(), ts.size());
  for (const auto& t : ts) {
    const tensor_view* v = r.value.find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->type, t.type) << t.name;
    EXPECT_EQ(v->shape, t.shape) << t.name;
    EXPECT_EQ(view_bytes(*v), t.bytes) << t.name;
  }
  // Written in the order given, so file order is that order (the empty tensor sits at the
  // offset of the next one).
  for (std::size_t i = 0; i + 1 < ts.size(); ++i) EXPECT_EQ(r.value.tensors()[i].name, ts[i].name);

  // The in-memory encoder gives the same bytes.
  bytes_t encoded;
  ASSERT_TRUE(lowbit::io::encode_safetensors(views, meta, encoded).ok());
  EXPECT_EQ(encoded, file);
}

TEST(Safetensors, ViewsSurviveMoves) {
  temp_dir dir;
  const std::string path = dir.file("move.safetensors");
  tensor_data t = make("t", dtype::f32, {16}, 3);
  ASSERT_TRUE(lowbit::io::write_safetensors(path, {t.view()}).ok());
  std::vector<safetensors_file> files;
  for (int i = 0; i < 9; ++i) {  // the vector reallocates, moving the files
    auto r = safetensors_file::open(path);
    ASSERT_TRUE(r.ok()) << r.error;
    files.push_back(std::move(r.value));
  }
  for (const auto& f : files) EXPECT_EQ(view_bytes(*f.find("t")), t.bytes);
  safetensors_file moved = std::move(files[0]);
  EXPECT_EQ(view_bytes(moved.tensors()[0]), t.bytes);
}

// ----- the streaming writer ---------------------------------------------------------------------

TEST(SafetensorsWriter, GivesTheSameBytesAsWriteSafetensors) {
  temp_dir dir;
  std::vector<tensor_data> ts = {make("w0", dtype::bf16, {4, 8}, 1), make("none", dtype::f32, {0}, 2),
                                 make("w1", dtype::i8, {7}, 3), make("w2", dtype::f32, {3, 3}, 4)};
  std::vector<tensor_view> views;
  for (const auto& t : ts) views.push_back(t.view());
  const std::map<std::string, std::string> meta = {{"producer", "lowbit"}};
  ASSERT_TRUE(lowbit::io::write_safetensors(dir.file("whole.safetensors"), views, meta).ok());

  std::vector<tensor_view> declared = views;
  for (auto& d : declared) d.data = nullptr, d.bytes = 0;  // ignored
  auto w = safetensors_writer::create(dir.file("stream.safetensors"), declared, meta);
  ASSERT_TRUE(w.ok()) << w.error;
  safetensors_writer writer = std::move(w.value);  // movable
  for (const auto& t : ts) {
    // In chunks of 5 bytes.
    for (std::size_t i = 0; i < t.bytes.size(); i += 5) {
      const std::size_t n = std::min<std::size_t>(5, t.bytes.size() - i);
      ASSERT_TRUE(writer.write(t.bytes.data() + i, n).ok());
    }
  }
  EXPECT_EQ(writer.remaining(), 0u);
  ASSERT_TRUE(writer.finish().ok());
  EXPECT_EQ(read_bytes(dir.file("stream.safetensors")), read_bytes(dir.file("whole.safetensors")));
}

TEST(SafetensorsWriter, RejectsMoreOrLessThanDeclared) {
  temp_dir dir;
  tensor_data a = make("a", dtype::f32, {2}, 1), b = make("b", dtype::u8, {3}, 2);
  {
    auto w = safetensors_writer::create(dir.file("over.safetensors"), {a.view(), b.view()});
    ASSERT_TRUE(w.ok()) << w.error;
    EXPECT_EQ(w.value.remaining(), 8u);
    ASSERT_TRUE(w.value.write(a.bytes.data(), 6).ok());
    auto st = w.value.write(a.bytes.data(), 3);  // a needs only 2 more: never spans into b
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.error.find("over.safetensors"), std::string::npos) << st.error;
    EXPECT_NE(st.error.find("'a'"), std::string::npos) << st.error;
    EXPECT_FALSE(w.value.finish().ok());  // a failed writer stays failed
  }
  {
    auto w = safetensors_writer::create(dir.file("short.safetensors"), {a.view(), b.view()});
    ASSERT_TRUE(w.ok()) << w.error;
    ASSERT_TRUE(w.value.write(a.bytes.data(), 8).ok());
    ASSERT_TRUE(w.value.write(b.bytes.data(), 1).ok());
    auto st = w.value.finish();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.error.find("'b'"), std::string::npos) << st.error;
    EXPECT_NE(st.error.find("short.safetensors"), std::string::npos) << st.error;
  }
  // The unfinished file declares more than it holds: readers reject it.
  auto r = safetensors_file::open(dir.file("short.safetensors"));
  EXPECT_FALSE(r.ok());
  {
    auto w = safetensors_writer::create(dir.file("past.safetensors"), {a.view()});
    ASSERT_TRUE(w.ok()) << w.error;
    ASSERT_TRUE(w.value.write(a.bytes.data(), 8).ok());
    EXPECT_FALSE(w.value.write(a.bytes.data(), 1).ok());
  }
  {
    tensor_data dup = make("a", dtype::u8, {1}, 3);
    auto w = safetensors_writer::create(dir.file("dup.safetensors"), {a.view(), dup.view()});
    EXPECT_FALSE(w.ok());
    EXPECT_NE(w.error.find("'a'"), std::string::npos) << w.error;
  }
}

TEST(SafetensorsWriter, RejectsBadTensors) {
  temp_dir dir;
  tensor_data a = make("a", dtype::f32, {2}, 1);
  tensor_data bad = a;
  bad.bytes.pop_back();
  auto st = lowbit::io::write_safetensors(dir.file("bad.safetensors"), {bad.view()});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.error.find("bad.safetensors"), std::string::npos) << st.error;
  EXPECT_NE(st.error.find("'a'"), std::string::npos) << st.error;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.safetensors")));
  EXPECT_FALSE(lowbit::io::write_safetensors(dir.file("d.safetensors"), {a.view(), a.view()}).ok());
  tensor_data reserved = make("__metadata__", dtype::u8, {1}, 1);
  EXPECT_FALSE(lowbit::io::write_safetensors(dir.file("r.safetensors"), {reserved.view()}).ok());
  tensor_data not_utf8 = make("\xFF", dtype::u8, {1}, 1);
  EXPECT_FALSE(lowbit::io::write_safetensors(dir.file("u.safetensors"), {not_utf8.view()}).ok());
  auto nodir = lowbit::io::write_safetensors(dir.file("no/such/dir.safetensors"), {a.view()});
  EXPECT_FALSE(nodir.ok());
  EXPECT_NE(nodir.error.find("dir.safetensors"), std::string::npos) << nodir.error;
}

// ----- malformed files --------------------------------------------------------------------------

struct malformed {
  const char* file;    // file name (each case its own, so the error must name it)
  bytes_t bytes;
  const char* tensor;  // the tensor the error must name, or null
};

std::string entry(const std::string& name, const std::string& dtype_name, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype_name + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

std::vector<malformed> malformed_cases() {
  std::vector<malformed> c;
  const bytes_t d16(16, 0);
  c.push_back({"empty.safetensors", {}, nullptr});
  c.push_back({"seven-bytes.safetensors", {1, 0, 0, 0, 0, 0, 0}, nullptr});
  {
    bytes_t b = image("{}", {});
    b[0] = 200;  // header length past the file
    c.push_back({"length-past-end.safetensors", b, nullptr});
  }
  {
    bytes_t b;
    append_le64(b, 200000000);  // over the 100 MB limit
    b.push_back('{');
    c.push_back({"length-too-large.safetensors", b, nullptr});
  }
  {
    bytes_t b;
    append_le64(b, UINT64_MAX);
    c.push_back({"length-max.safetensors", b, nullptr});
  }
  c.push_back({"not-json.safetensors", image("{\"a\":{\"dtype\":", d16), nullptr});
  c.push_back({"not-utf8.safetensors", image("{\"a\xFF\":{}}", d16), nullptr});
  c.push_back({"array.safetensors", image("[1,2]", d16), nullptr});
  c.push_back({"entry-not-object.safetensors", image("{\"w\":[1]}", d16), "w"});
  c.push_back({"dtype-number.safetensors", image("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", d16), "w"});
  c.push_back({"dtype-missing.safetensors", image("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", d16), "w"});
  c.push_back({"shape-string.safetensors", image("{" + entry("w", "F32", "\"1\"", "[0,4]") + "}", d16), "w"});
  c.push_back({"shape-negative.safetensors", image("{" + entry("w", "F32", "[-1]", "[0,4]") + "}", d16), "w"});
  c.push_back({"shape-float.safetensors", image("{" + entry("w", "F32", "[1.0]", "[0,4]") + "}", d16), "w"});
  c.push_back({"offsets-three.safetensors", image("{" + entry("w", "F32", "[1]", "[0,4,8]") + "}", d16), "w"});
  c.push_back({"offsets-string.safetensors", image("{" + entry("w", "F32", "[1]", "[\"0\",4]") + "}", d16), "w"});
  c.push_back({"offsets-missing.safetensors", image("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", d16), "w"});
  c.push_back({"unknown-dtype.safetensors", image("{" + entry("w", "F4", "[1]", "[0,1]") + "}", d16), "w"});
  c.push_back({"size-mismatch.safetensors", image("{" + entry("w", "F32", "[2,3]", "[0,16]") + "}", d16), "w"});
  c.push_back({"shape-overflow.safetensors",
               image("{" + entry("w", "F32", "[4294967296,4294967296,4]", "[0,16]") + "}", d16), "w"});
  c.push_back({"bytes-overflow.safetensors",
               image("{" + entry("w", "F64", "[4294967296,4294967296]", "[0,16]") + "}", d16), "w"});
  c.push_back({"offsets-past-end.safetensors", image("{" + entry("w", "F32", "[8]", "[0,32]") + "}", d16), "w"});
  c.push_back({"offsets-huge.safetensors",
               image("{" + entry("w", "U8", "[1]", "[18446744073709551615,18446744073709551616]") + "}", d16), "w"});
  c.push_back({"begin-after-end.safetensors", image("{" + entry("w", "U8", "[0]", "[8,4]") + "}", d16), "w"});
  c.push_back({"overlap.safetensors",
               image("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("w", "F32", "[2]", "[4,12]") + "}", d16),
               "w"});
  c.push_back({"contained.safetensors",
               image("{" + entry("a", "F32", "[4]", "[0,16]") + "," + entry("w", "U8", "[2]", "[4,6]") + "}", d16),
               "w"});
  c.push_back({"duplicate.safetensors",
               image("{" + entry("w", "F32", "[2]", "[0,8]") + "," + entry("w", "F32", "[2]", "[8,16]") + "}", d16),
               "w"});
  c.push_back({"duplicate-field.safetensors",
               image("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d16),
               nullptr});
  c.push_back({"metadata-number.safetensors", image("{\"__metadata__\":{\"k\":1}}", d16), nullptr});
  c.push_back({"metadata-array.safetensors", image("{\"__metadata__\":[]}", d16), nullptr});
  {
    // A valid file cut short: the last tensor's bytes are missing.
    bytes_t b = image("{" + entry("w", "F32", "[4]", "[0,16]") + "}", d16);
    b.resize(b.size() - 3);
    c.push_back({"truncated.safetensors", b, "w"});
  }
  return c;
}

TEST(SafetensorsMalformed, EveryCaseIsAnErrorNamingFileAndTensor) {
  temp_dir dir;
  for (const malformed& m : malformed_cases()) {
    const std::string path = dir.file(m.file);
    write_bytes(path, m.bytes);
    auto r = safetensors_file::open(path);
    EXPECT_FALSE(r.ok()) << m.file;
    EXPECT_NE(r.error.find(m.file), std::string::npos) << m.file << ": " << r.error;
    if (m.tensor != nullptr) {
      EXPECT_NE(r.error.find(std::string("tensor '") + m.tensor + "'"), std::string::npos) << m.file << ": " << r.error;
    }
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << "one line: " << r.error;
    EXPECT_TRUE(r.value.tensors().empty()) << m.file;
    // The same from memory.
    auto p = safetensors_file::parse(m.bytes.data(), m.bytes.size(), path);
    EXPECT_FALSE(p.ok()) << m.file;
    EXPECT_EQ(p.error, r.error);
  }
}

TEST(SafetensorsMalformed, ErrorsSayWhatIsWrong) {
  auto error_of = [](const bytes_t& b) { return safetensors_file::parse(b.data(), b.size(), "m.safetensors").error; };
  const bytes_t d16(16, 0);
  EXPECT_NE(error_of(image("{" + entry("w", "F4", "[1]", "[0,1]") + "}", d16)).find("unknown dtype 'F4'"),
            std::string::npos);
  EXPECT_NE(error_of(image("{" + entry("w", "F32", "[2,3]", "[0,16]") + "}", d16)).find("needs 24"),
            std::string::npos);
  EXPECT_NE(error_of(image("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("w", "F32", "[2]", "[4,12]") + "}",
                           d16))
                .find("overlap tensor 'a'"),
            std::string::npos);
  EXPECT_NE(error_of(image("{" + entry("w", "F32", "[8]", "[0,32]") + "}", d16)).find("truncated"),
            std::string::npos);
  EXPECT_EQ(safetensors_file::open("/nonexistent/x.safetensors").error.find("/nonexistent/x.safetensors"), 0u);
}

TEST(SafetensorsMalformed, AcceptsGapsEmptyTensorsAndTrailingBytes) {
  // Gaps between tensors, bytes after the last, an empty tensor inside another's range, extra
  // fields, whitespace: all readable.
  const std::string header = "  { \"b\" : " + std::string("{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12],\"x\":1}") +
                             "," + entry("a", "U8", "[2]", "[0,2]") + "," + entry("e", "F32", "[0,3]", "[1,1]") +
                             "}    ";
  const bytes_t b = image(header, bytes_t(20, 7));
  auto r = safetensors_file::parse(b.data(), b.size(), "gaps.safetensors");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.value.tensors().size(), 3u);
  EXPECT_EQ(r.value.tensors()[0].name, "a");
  EXPECT_EQ(r.value.tensors()[1].name, "e");
  EXPECT_EQ(r.value.tensors()[1].bytes, 0u);
  EXPECT_EQ(r.value.tensors()[2].name, "b");
}

TEST(SafetensorsMalformed, NamesWithControlCharactersStayOnOneLine) {
  const bytes_t b = image("{" + entry("bad\\nname", "F4", "[1]", "[0,1]") + "}", bytes_t(4, 0));
  auto r = safetensors_file::parse(b.data(), b.size(), "ctl.safetensors");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("tensor 'bad\\x0aname'"), std::string::npos) << r.error;
}

}  // namespace
