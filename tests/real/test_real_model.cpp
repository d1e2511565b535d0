// lowbit integration tests on a real model (issue 14, "Acceptance on real data"): Google's
// Universal Sentence Encoder lite (docs/real-model.md), its trained float32 weights read from the
// TF.js model.json and shards, and the real inputs of its dense layers (.npy, captured in Node by
// scripts/fixture/capture-activations.mjs on the Apache-2.0 licence text).
//
//   1. Every weight of the manifest is read; the 11 matrices have the names and shapes of
//      docs/real-model.md; on every matrix the SQNR of the schemes is ordered as physics says:
//      INT8 per-channel > FP8 E4M3 per-tensor > INT4 g128 symmetric > INT4 per-channel.
//   2. On the four FFN layers with their real activations (calibration: the first half of the
//      text; held out: the second half): GPTQ and AWQ beat round to nearest on the held-out
//      tokens' output error, and SmoothQuant's best alpha beats alpha = 0 for W8A8 on the FFN down
//      projections (the ReLU outputs with the outliers).
//
// The figures are printed (the test output is the record; docs/real-model.md quotes them). When
// the fixture is missing every test skips, saying how to fetch it:
//   bash scripts/fetch-fixture.sh --activations
//   ctest -L real --output-on-failure   (or run test_real_model directly to see the tables)
#include <gtest/gtest.h>

#include <lowbit/io/npy.hpp>
#include <lowbit/io/tensor.hpp>
#include <lowbit/io/tfjs.hpp>
#include <lowbit/linalg.hpp>
#include <lowbit/metrics.hpp>
#include <lowbit/schemes/fp8.hpp>
#include <lowbit/schemes/integer.hpp>
#include <lowbit/transforms.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

#ifndef LOWBIT_FIXTURE_DIR
#define LOWBIT_FIXTURE_DIR "fixtures"
#endif

const std::string fixture_root = std::string(LOWBIT_FIXTURE_DIR) + "/use-lite";
const std::string model_json = fixture_root + "/package/dist/model.json";
const std::string activation_dir = fixture_root + "/activations";
const char* const fetch_hint = "run `bash scripts/fetch-fixture.sh --activations` from the repository root";

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

#define LOWBIT_REQUIRE_FILE(path)                                                                    \
  do {                                                                                               \
    if (!file_exists(path)) GTEST_SKIP() << "real-model fixture missing: " << (path) << "; " << fetch_hint; \
  } while (0)

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ----- the model's matrices --------------------------------------------------------------------

const std::string ffn_prefix = "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/";
const std::string l0_conv1 = ffn_prefix + "Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1";
const std::string l0_conv2 = ffn_prefix + "Layer_0/TransformerLayer/FFN/conv2/Tensordot/Reshape_1";
const std::string l1_conv1 = ffn_prefix + "Layer_1/TransformerLayer/FFN/conv1/Tensordot/Reshape_1";
const std::string l1_conv2 = ffn_prefix + "Layer_1/TransformerLayer/FFN/conv2/Tensordot/Reshape_1";
const std::string embedding = "module/Embeddings_en";

struct expected_matrix {
  std::string name;
  std::vector<std::uint64_t> shape;
  const char* label;
  std::uint64_t offset;  // into the concatenated shards
};

// docs/real-model.md, "The weights": the 11 tensors with two or more dimensions and at least
// 1,000 elements, in manifest order.
const std::vector<expected_matrix>& expected_matrices() {
  static const std::vector<expected_matrix> m = {
      {l1_conv2, {1536, 512}, "L1 FFN conv2 (down)", 0},
      {l1_conv1, {512, 1536}, "L1 FFN conv1 (up)", 3145728},
      {"module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
       {1, 1, 512, 1536}, "L1 attention QKV", 6307844},
      {"module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
       {1, 1, 512, 512}, "L1 attention out", 9459736},
      {l0_conv2, {1536, 512}, "L0 FFN conv2 (down)", 10510360},
      {l0_conv1, {512, 1536}, "L0 FFN conv1 (up)", 13656088},
      {"module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
       {1, 1, 256, 768}, "L0 attention QKV", 16816176},
      {"module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
       {1, 1, 256, 512}, "L0 attention out", 17605720},
      {embedding, {8002, 256}, "embedding (gather)", 18132056},
      {"module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat",
       {256, 512}, "L0 residual projection", 26326616},
      {"module/Encoder_en/hidden_layers/tanh_layer_0/weights", {512, 512}, "sentence head (tanh)", 26853024},
  };
  return m;
}

// A weight in lowbit's layout: rows are output channels, [out, in]. The dense kernels are stored
// [in, out] (y = x @ W; 1x1 Conv2D kernels [1, 1, in, out]) and are transposed. The embedding is a
// gather: its rows (one per vocabulary entry) are what a lookup reads, and each is quantized on its
// own, as llama.cpp does with token_embd; it is kept as stored, [8002, 256].
struct matrix {
  std::size_t out = 0, in = 0;
  std::vector<float> w;
};

::testing::AssertionResult load_matrix(const lowbit::io::tensor_view& t, bool transpose, matrix& m) {
  std::vector<float> v;
  const lowbit::io::io_status s = lowbit::io::to_float(t, v);
  if (!s) return ::testing::AssertionFailure() << s.error;
  const auto r = static_cast<std::size_t>(t.rows()), c = static_cast<std::size_t>(t.cols());
  if (!transpose) {
    m.out = r;
    m.in = c;
    m.w = std::move(v);
  } else {
    m.out = c;
    m.in = r;
    m.w.assign(v.size(), 0.0f);
    for (std::size_t i = 0; i < r; ++i)
      for (std::size_t j = 0; j < c; ++j) m.w[j * r + i] = v[i * c + j];
  }
  for (float x : m.w)
    if (!std::isfinite(x)) return ::testing::AssertionFailure() << t.name << ": a non-finite weight";
  return ::testing::AssertionSuccess();
}

std::string shape_string(const std::vector<std::uint64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// ----- schemes ---------------------------------------------------------------------------------

lowbit::int_params int4_per_channel() {
  lowbit::int_params p = lowbit::int_presets::gptq(4, 128);
  p.granularity = lowbit::granularity::per_channel;
  p.group_size = 0;
  return p;
}

::testing::AssertionResult qdq_int(const matrix& m, const lowbit::int_params& p, std::vector<float>& out) {
  out.assign(m.w.size(), 0.0f);
  const lowbit::status s = lowbit::quantize_dequantize_int(m.w.data(), m.out, m.in, p, out.data());
  if (!s) return ::testing::AssertionFailure() << "quantize_dequantize_int: " << s.message();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult qdq_fp8(const matrix& m, const lowbit::fp8_options& o, std::vector<float>& out) {
  std::vector<lowbit::float8_e4m3fn> e(m.w.size());
  std::vector<float> scales(o.granularity == lowbit::fp8_granularity::per_tensor ? 1 : m.out);
  lowbit::status s = lowbit::fp8_quantize(m.w.data(), m.out, m.in, o, e.data(), scales.data());
  if (!s) return ::testing::AssertionFailure() << "fp8_quantize: " << s.message();
  out.assign(m.w.size(), 0.0f);
  s = lowbit::fp8_dequantize(e.data(), scales.data(), m.out, m.in, o, out.data());
  if (!s) return ::testing::AssertionFailure() << "fp8_dequantize: " << s.message();
  return ::testing::AssertionSuccess();
}

// ----- activations -----------------------------------------------------------------------------

struct activation_index {
  nlohmann::json json;
  bool ok = false;
  std::string error;
};

const activation_index& index_json() {
  static const activation_index idx = [] {
    activation_index r;
    std::ifstream f(activation_dir + "/index.json");
    if (!f) {
      r.error = activation_dir + "/index.json: cannot open";
      return r;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    r.json = nlohmann::json::parse(ss.str(), nullptr, false);
    if (r.json.is_discarded() || !r.json.is_object() || !r.json.contains("layers") || !r.json["layers"].is_array() ||
        !r.json.contains("runs") || !r.json["runs"].is_array()) {
      r.error = activation_dir + "/index.json: not the capture's index (no layers or runs array)";
      return r;
    }
    r.ok = true;
    return r;
  }();
  return idx;
}

// The rows of the calibration half: the text's first paragraphs, up to the paragraph boundary
// nearest half the tokens (runs are in text order; a paragraph longer than 128 tokens is two
// runs, kept on one side). The rest is held out: text the calibration never saw.
std::size_t calibration_rows(const nlohmann::json& runs, std::size_t tokens) {
  std::size_t seen = 0, best = 0;
  auto distance = [&](std::size_t b) { return b * 2 > tokens ? b * 2 - tokens : tokens - b * 2; };
  for (const auto& run : runs) {
    if (!run.is_object()) return tokens / 2;
    if (run.value("begin", 0) == 0 && seen != 0 && distance(seen) < distance(best)) best = seen;
    seen += static_cast<std::size_t>(run.value("end", 0) - run.value("begin", 0));
  }
  return seen == tokens && best != 0 ? best : tokens / 2;
}

struct layer_data {
  const char* label = "";
  matrix w;                 // [out, in]
  std::vector<float> x;     // [tokens, in]
  std::size_t tokens = 0, calib = 0;
  const float* x_cal() const { return x.data(); }
  const float* x_held() const { return x.data() + calib * w.in; }
  std::size_t held() const { return tokens - calib; }
};

::testing::AssertionResult load_layer(const lowbit::io::tfjs_model& model, const std::string& name, const char* label,
                                      layer_data& d) {
  d.label = label;
  const lowbit::io::tensor_view* t = model.find(name);
  if (t == nullptr) return ::testing::AssertionFailure() << "model.json has no weight " << name;
  if (auto r = load_matrix(*t, true, d.w); !r) return r;
  const activation_index& idx = index_json();
  if (!idx.ok) return ::testing::AssertionFailure() << idx.error;
  std::string file;
  for (const auto& l : idx.json["layers"])
    if (l.is_object() && l.value("weight", std::string()) == name) file = l.value("file", std::string());
  if (file.empty()) return ::testing::AssertionFailure() << "index.json lists no activation file for " << name;
  lowbit::io::io_result<lowbit::io::npy_file> npy = lowbit::io::npy_file::open(activation_dir + "/" + file);
  if (!npy) return ::testing::AssertionFailure() << npy.error;
  const lowbit::io::tensor_view& a = npy.value.tensor();
  if (a.shape.size() != 2 || a.shape[1] != d.w.in)
    return ::testing::AssertionFailure() << file << ": shape " << shape_string(a.shape) << ", expected [tokens, "
                                         << d.w.in << "]";
  if (lowbit::io::io_status s = lowbit::io::to_float(a, d.x); !s) return ::testing::AssertionFailure() << s.error;
  d.tokens = static_cast<std::size_t>(a.shape[0]);
  d.calib = calibration_rows(idx.json["runs"], d.tokens);
  if (d.calib == 0 || d.calib >= d.tokens) return ::testing::AssertionFailure() << "no calibration / held-out split";
  return ::testing::AssertionSuccess();
}

// ||X (W - Q)^T||^2 / ||X W^T||^2 over the rows of x, the sums in double.
double output_error(const float* x, std::size_t tokens, const matrix& w, const std::vector<float>& q) {
  std::vector<float> d(w.w.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = w.w[i] - q[i];
  std::vector<float> y(tokens * w.out), e(tokens * w.out);
  lowbit::gemm_options o;
  o.op_b = lowbit::matrix_op::transpose;
  if (!lowbit::gemm(x, w.in, w.w.data(), w.in, tokens, w.out, w.in, o, y.data(), w.out).ok()) return NAN;
  if (!lowbit::gemm(x, w.in, d.data(), w.in, tokens, w.out, w.in, o, e.data(), w.out).ok()) return NAN;
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    num += static_cast<double>(e[i]) * e[i];
    den += static_cast<double>(y[i]) * y[i];
  }
  return num / den;
}

// ||X W^T - Xq Wq^T||^2 / ||X W^T||^2 (W8A8: both operands quantized).
double output_error_w8a8(const float* x, const float* xq, std::size_t tokens, const matrix& w,
                         const std::vector<float>& wq) {
  std::vector<float> y(tokens * w.out), yq(tokens * w.out);
  lowbit::gemm_options o;
  o.op_b = lowbit::matrix_op::transpose;
  if (!lowbit::gemm(x, w.in, w.w.data(), w.in, tokens, w.out, w.in, o, y.data(), w.out).ok()) return NAN;
  if (!lowbit::gemm(xq, w.in, wq.data(), w.in, tokens, w.out, w.in, o, yq.data(), w.out).ok()) return NAN;
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dd = static_cast<double>(y[i]) - yq[i];
    num += dd * dd;
    den += static_cast<double>(y[i]) * y[i];
  }
  return num / den;
}

// The weights a GPTQ output stands for, [out, in]: (code - zero) * scale[row, g_idx[col]].
std::vector<float> gptq_weights(const lowbit::gptq_output& q) {
  const auto codes = q.codes.values();
  const auto scales = q.scales.values();
  const auto zeros = q.zeros.values();
  const auto gi = q.g_idx.values();
  const std::size_t groups = q.groups();
  const float sym_zero = static_cast<float>(lowbit::symmetric_zero_point(q.params.bits));
  std::vector<float> v(q.rows * q.cols);
  for (std::size_t r = 0; r < q.rows; ++r)
    for (std::size_t c = 0; c < q.cols; ++c) {
      const std::size_t g = r * groups + static_cast<std::size_t>(gi[c]);
      const float z = zeros.size() != 0 ? zeros[g] : sym_zero;
      v[r * q.cols + c] = (static_cast<float>(codes[r * q.cols + c]) - z) * scales[g];
    }
  return v;
}

struct ffn_set {
  std::vector<layer_data> layers;
  std::string error;
};

// The four FFN layers with their activations; `down_only`: the two conv2 layers.
::testing::AssertionResult load_ffn(bool down_only, ffn_set& s) {
  lowbit::io::io_result<lowbit::io::tfjs_model> model = lowbit::io::tfjs_model::open(model_json);
  if (!model) return ::testing::AssertionFailure() << model.error;
  struct which {
    const std::string* name;
    const char* label;
    bool down;
  };
  const which all[] = {{&l0_conv1, "L0 conv1 (up)", false},
                       {&l0_conv2, "L0 conv2 (down)", true},
                       {&l1_conv1, "L1 conv1 (up)", false},
                       {&l1_conv2, "L1 conv2 (down)", true}};
  for (const which& w : all) {
    if (down_only && !w.down) continue;
    layer_data d;
    if (auto r = load_layer(model.value, *w.name, w.label, d); !r) return r;
    s.layers.push_back(std::move(d));
  }
  return ::testing::AssertionSuccess();
}

// ----- 1. every matrix, and the SQNR ordering of the schemes ----------------------------------

TEST(RealModel, ReadsEveryWeightWithTheDocumentedShapes) {
  LOWBIT_REQUIRE_FILE(model_json);
  lowbit::io::io_result<lowbit::io::tfjs_model> model = lowbit::io::tfjs_model::open(model_json);
  ASSERT_TRUE(model.ok()) << model.error;
  const auto& tensors = model.value.tensors();
  EXPECT_EQ(tensors.size(), 61u);
  std::size_t f32 = 0, i32 = 0;
  std::uint64_t f32_params = 0;
  std::vector<std::string> matrices;
  for (const auto& t : tensors) {
    if (t.type == lowbit::io::dtype::f32) {
      ++f32;
      f32_params += t.elements();
    } else if (t.type == lowbit::io::dtype::i32) {
      ++i32;
    }
    EXPECT_EQ(t.bytes, t.elements() * lowbit::io::dtype_size(t.type)) << t.name;
    if (t.shape.size() >= 2 && t.elements() >= 1000) matrices.push_back(t.name);
    std::vector<float> v;  // every weight converts
    EXPECT_TRUE(lowbit::io::to_float(t, v).ok()) << t.name;
  }
  EXPECT_EQ(f32, 35u);
  EXPECT_EQ(i32, 26u);
  EXPECT_EQ(f32_params, 6975877u);
  const auto& expected = expected_matrices();
  ASSERT_EQ(matrices.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(matrices[i], expected[i].name) << "matrix " << i << " in manifest order";
    const lowbit::io::tensor_view* t = model.value.find(expected[i].name);
    ASSERT_NE(t, nullptr) << expected[i].name;
    EXPECT_EQ(t->type, lowbit::io::dtype::f32) << expected[i].name;
    EXPECT_EQ(t->shape, expected[i].shape) << expected[i].name;
  }
  // The reader against the bytes: the shards concatenated in order hold the weights back to back
  // in manifest order (docs/real-model.md); every view must equal its slice of that stream,
  // including the weights that cross a shard boundary.
  std::vector<unsigned char> stream;
  for (int k = 1; k <= 7; ++k) {
    const std::string shard = fixture_root + "/package/dist/group1-shard" + std::to_string(k) + "of7";
    std::ifstream f(shard, std::ios::binary);
    ASSERT_TRUE(f.good()) << shard;
    stream.insert(stream.end(), std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  EXPECT_EQ(stream.size(), 27903656u);
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    ASSERT_LE(offset + t.bytes, stream.size()) << t.name;
    EXPECT_TRUE(t.bytes == 0 || std::memcmp(t.data, stream.data() + offset, t.bytes) == 0) << t.name;
    for (const expected_matrix& e : expected)
      if (e.name == t.name) {
        EXPECT_EQ(offset, e.offset) << t.name;
      }
    offset += t.bytes;
  }
  EXPECT_EQ(offset, stream.size());
  // The length limit (ClipToMaxLength) is the int32 128.
  const lowbit::io::tensor_view* limit = model.value.find("module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y");
  ASSERT_NE(limit, nullptr);
  std::vector<float> lv;
  ASSERT_TRUE(lowbit::io::to_float(*limit, lv).ok());
  ASSERT_EQ(lv.size(), 1u);
  EXPECT_EQ(lv[0], 128.0f);
}

struct scheme_row {
  const char* name;
  double sqnr[7];
};

TEST(RealModel, SchemeSqnrOrderingOnEveryMatrix) {
  LOWBIT_REQUIRE_FILE(model_json);
  const auto t0 = std::chrono::steady_clock::now();
  lowbit::io::io_result<lowbit::io::tfjs_model> model = lowbit::io::tfjs_model::open(model_json);
  ASSERT_TRUE(model.ok()) << model.error;

  // The schemes, best expected first. Columns 0, 1, 4, 6 are the asserted chain.
  const char* const names[7] = {"INT8 pc", "FP8 pc", "FP8 pt", "INT4 g32", "INT4 g128", "INT4 g128a", "INT4 pc"};
  enum { int8_pc, fp8_pc, fp8_pt, int4_g32, int4_g128, int4_g128_affine, int4_pc, schemes };
  double signal_total = 0.0, noise_total[schemes] = {};
  double weighted_db[schemes] = {};
  std::uint64_t params_total = 0;
  double min_gap[3] = {1e9, 1e9, 1e9};  // INT8pc - FP8pt, FP8pt - INT4g128, INT4g128 - INT4pc

  std::printf("\nSQNR (dB) of each scheme on each matrix, weights as [out, in] (the embedding as stored, one row per\n"
              "token); INT8 pc: int8_per_channel; FP8: E4M3 scaled, fp8_presets per_channel / per_tensor; INT4 g32 /\n"
              "g128: int_presets::gptq (symmetric, fp16 scales); g128a: int_presets::awq (affine); INT4 pc: symmetric\n"
              "per output channel\n\n");
  std::printf("%-24s %-12s %8s %8s %8s %8s %8s %8s %8s\n", "matrix", "[out, in]", names[0], names[1], names[2],
              names[3], names[4], names[5], names[6]);
  for (const expected_matrix& e : expected_matrices()) {
    const lowbit::io::tensor_view* t = model.value.find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    matrix m;
    ASSERT_TRUE(load_matrix(*t, e.name != embedding, m));
    lowbit::int_params g32 = lowbit::int_presets::gptq(4, 32);
    double db[schemes];
    std::vector<float> q;
    for (int s = 0; s < schemes; ++s) {
      switch (s) {
        case int8_pc: ASSERT_TRUE(qdq_int(m, lowbit::int_presets::int8_per_channel(), q)); break;
        case fp8_pc: ASSERT_TRUE(qdq_fp8(m, lowbit::fp8_presets::per_channel(), q)); break;
        case fp8_pt: ASSERT_TRUE(qdq_fp8(m, lowbit::fp8_presets::per_tensor(), q)); break;
        case int4_g32: ASSERT_TRUE(qdq_int(m, g32, q)); break;
        case int4_g128: ASSERT_TRUE(qdq_int(m, lowbit::int_presets::gptq(4, 128), q)); break;
        case int4_g128_affine: ASSERT_TRUE(qdq_int(m, lowbit::int_presets::awq(4, 128), q)); break;
        case int4_pc: ASSERT_TRUE(qdq_int(m, int4_per_channel(), q)); break;
      }
      const lowbit::result<double> r = lowbit::sqnr_db(m.w.data(), m.w.size(), q.data(), q.size());
      ASSERT_TRUE(r.ok()) << r.status.message();
      db[s] = r.value;
      double sig = 0.0, noise = 0.0;
      for (std::size_t i = 0; i < q.size(); ++i) {
        const double d = static_cast<double>(m.w[i]) - q[i];
        noise += d * d;
        sig += static_cast<double>(m.w[i]) * m.w[i];
      }
      noise_total[s] += noise;
      if (s == 0) signal_total += sig;
      // sqnr_db agrees with the definition computed here
      EXPECT_NEAR(db[s], 10.0 * std::log10(sig / noise), 1e-6) << e.label << " " << names[s];
      weighted_db[s] += db[s] * static_cast<double>(m.w.size());
    }
    params_total += m.w.size();
    std::printf("%-24s %-12s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", e.label,
                ("[" + std::to_string(m.out) + ", " + std::to_string(m.in) + "]").c_str(), db[0], db[1], db[2], db[3],
                db[4], db[5], db[6]);
    min_gap[0] = std::min(min_gap[0], db[int8_pc] - db[fp8_pt]);
    min_gap[1] = std::min(min_gap[1], db[fp8_pt] - db[int4_g128]);
    min_gap[2] = std::min(min_gap[2], db[int4_g128] - db[int4_pc]);
    // The asserted chain, per matrix, with margins in dB (docs/real-model.md; measured smallest
    // gaps 7.05, 12.11 and 0.55 dB: g128 is close to per-channel where in = 256, two groups a row).
    EXPECT_GT(db[int8_pc], db[fp8_pt] + 3.0) << e.label;
    EXPECT_GT(db[fp8_pt], db[int4_g128] + 6.0) << e.label;
    EXPECT_GT(db[int4_g128], db[int4_pc] + 0.25) << e.label;
    // The rest of what physics says, without a margin: finer groups and per-channel scales
    // do not lose.
    EXPECT_GE(db[fp8_pc], db[fp8_pt] - 0.05) << e.label;
    EXPECT_GE(db[int4_g32], db[int4_g128]) << e.label;
  }
  std::printf("%-24s %-12s", "parameter-weighted mean", "");
  for (int s = 0; s < schemes; ++s) std::printf(" %8.2f", weighted_db[s] / static_cast<double>(params_total));
  std::printf("\n%-24s %-12s", "whole model (sum/sum)", "");
  double model_db[schemes];
  for (int s = 0; s < schemes; ++s) {
    model_db[s] = 10.0 * std::log10(signal_total / noise_total[s]);
    std::printf(" %8.2f", model_db[s]);
  }
  std::printf("\nsmallest per-matrix gaps: INT8pc-FP8pt %.2f dB, FP8pt-INT4g128 %.2f dB, INT4g128-INT4pc %.2f dB\n",
              min_gap[0], min_gap[1], min_gap[2]);
  std::printf("%zu parameters in the 11 matrices; %.2f s\n", static_cast<std::size_t>(params_total), seconds_since(t0));
  // Over the whole model (every matrix's squared error over every matrix's energy; measured gaps
  // 10.38, 12.84 and 1.37 dB).
  EXPECT_GT(model_db[int8_pc], model_db[fp8_pt] + 3.0);
  EXPECT_GT(model_db[fp8_pt], model_db[int4_g128] + 6.0);
  EXPECT_GT(model_db[int4_g128], model_db[int4_pc] + 1.0);
}

// ----- 2. GPTQ, AWQ and SmoothQuant on the FFN layers ------------------------------------------

// GPTQ is run with the reference's dampening (percdamp 0.01) and with 0.1. The calibration half
// holds fewer tokens than conv2 has inputs (1,316 against 1,536), so H is singular but for the
// dampening, and with 1 % GPTQ fits the calibration tokens (5-6x below RTN on them) far better
// than it generalises (0.92x and 1.16x RTN on the held-out ones). 10 % dampening regularises the
// fit; it is the run the held-out margin is asserted on (docs/real-model.md).
TEST(RealModel, GptqBeatsRoundToNearestOnHeldOutTokens) {
  LOWBIT_REQUIRE_FILE(model_json);
  LOWBIT_REQUIRE_FILE(activation_dir + "/index.json");
  ffn_set ffn;
  ASSERT_TRUE(load_ffn(false, ffn));
  const lowbit::int_params p = lowbit::int_presets::gptq(4, 128);
  lowbit::gptq_options damped;
  damped.percdamp = 0.1;
  std::printf("\nGPTQ W4 g128 symmetric (int_presets::gptq(4, 128)), block 128, no act-order; calibration: the first\n"
              "%zu tokens, held out: the other %zu. Output error ||X(W-Q)^T||^2 / ||XW^T||^2; RTN: the same grid.\n"
              "d0.01: percdamp 0.01 (the default), d0.1: percdamp 0.1; ao: act-order (desc_act), percdamp 0.1.\n\n",
              ffn.layers[0].calib, ffn.layers[0].held());
  std::printf("%-16s %-12s %9s %9s %9s | %9s %9s %9s %9s | %7s %7s %6s\n", "layer", "[out, in]", "cal RTN",
              "cal d0.01", "cal d0.1", "held RTN", "held d.01", "held d0.1", "held ao", "d.01/R", "d0.1/R", "time");
  for (const layer_data& d : ffn.layers) {
    lowbit::result<lowbit::hessian_accumulator> acc = lowbit::hessian_accumulator::create(d.w.in);
    ASSERT_TRUE(acc.ok());
    ASSERT_TRUE(acc.value.add(d.x_cal(), d.calib, d.w.in).ok());
    const auto t0 = std::chrono::steady_clock::now();
    lowbit::result<lowbit::gptq_output> g = lowbit::gptq_quantize(d.w.w.data(), acc.value, d.w.out, d.w.in, p);
    ASSERT_TRUE(g.ok()) << g.status.message();
    const double seconds = seconds_since(t0);
    lowbit::result<lowbit::gptq_output> gd =
        lowbit::gptq_quantize(d.w.w.data(), acc.value, d.w.out, d.w.in, p, damped);
    ASSERT_TRUE(gd.ok()) << gd.status.message();
    lowbit::gptq_options act = damped;
    act.act_order = true;
    lowbit::result<lowbit::gptq_output> ga = lowbit::gptq_quantize(d.w.w.data(), acc.value, d.w.out, d.w.in, p, act);
    ASSERT_TRUE(ga.ok()) << ga.status.message();
    for (const auto* r : {&g, &gd, &ga}) {
      EXPECT_FALSE(r->value.report.fell_back) << d.label;
      EXPECT_EQ(r->value.report.retries, 0) << d.label;
    }
    const std::vector<float> q = gptq_weights(g.value), qd = gptq_weights(gd.value), qa = gptq_weights(ga.value);
    // The same weights through the library's own container.
    lowbit::result<lowbit::quantized_matrix> qm = g.value.to_matrix();
    ASSERT_TRUE(qm.ok());
    std::vector<float> q2(q.size());
    ASSERT_TRUE(qm.value.dequantize(lowbit::span<float>(q2)).ok());
    ASSERT_EQ(q, q2) << d.label;

    std::vector<float> rtn;
    ASSERT_TRUE(qdq_int(d.w, p, rtn));
    const double cal_rtn = output_error(d.x_cal(), d.calib, d.w, rtn);
    const double cal_gptq = output_error(d.x_cal(), d.calib, d.w, q);
    const double cal_damped = output_error(d.x_cal(), d.calib, d.w, qd);
    const double held_rtn = output_error(d.x_held(), d.held(), d.w, rtn);
    const double held_gptq = output_error(d.x_held(), d.held(), d.w, q);
    const double held_damped = output_error(d.x_held(), d.held(), d.w, qd);
    const double held_act = output_error(d.x_held(), d.held(), d.w, qa);
    // The report's errors are the calibration errors through H: the same ratios.
    EXPECT_NEAR(g.value.report.relative_error_rtn, cal_rtn, 1e-3 * cal_rtn) << d.label;
    EXPECT_NEAR(g.value.report.relative_error, cal_gptq, 1e-3 * cal_gptq) << d.label;
    EXPECT_NEAR(gd.value.report.relative_error, cal_damped, 1e-3 * cal_damped) << d.label;

    const double ratio = held_damped / held_rtn;
    std::printf("%-16s %-12s %9.3e %9.3e %9.3e | %9.3e %9.3e %9.3e %9.3e | %7.3f %7.3f %6.2f\n", d.label,
                ("[" + std::to_string(d.w.out) + ", " + std::to_string(d.w.in) + "]").c_str(), cal_rtn, cal_gptq,
                cal_damped, held_rtn, held_gptq, held_damped, held_act, held_gptq / held_rtn, ratio, seconds);
    RecordProperty(std::string("gptq_over_rtn_held_") + (d.label[1] == '0' ? "l0_" : "l1_") +
                       (d.label[7] == '1' ? "conv1" : "conv2"),
                   std::to_string(ratio));
    // The margins (docs/real-model.md): on the calibration tokens, GPTQ with the default
    // dampening below half of RTN's error (measured at most 0.33); on the held-out tokens, with
    // 10 % dampening, below 0.9 of it (measured at most 0.81), act-order too (at most 0.66).
    EXPECT_LT(cal_gptq, 0.5 * cal_rtn) << d.label;
    EXPECT_LT(held_damped, 0.9 * held_rtn) << d.label;
    EXPECT_LT(held_act, 0.9 * held_rtn) << d.label;
  }
  std::printf("(time: one GPTQ run with the report, percdamp 0.01, single thread)\n");
}

TEST(RealModel, AwqBeatsRoundToNearestOnHeldOutTokens) {
  LOWBIT_REQUIRE_FILE(model_json);
  LOWBIT_REQUIRE_FILE(activation_dir + "/index.json");
  ffn_set ffn;
  ASSERT_TRUE(load_ffn(false, ffn));
  const lowbit::int_params p = lowbit::int_presets::awq(4, 128);
  // The reservoir holds every calibration row (the scale search runs on all of them; the clip
  // search subsamples them to awq_options::clip_tokens = 512, every 2nd row).
  lowbit::activation_stats_options so;
  so.reservoir_capacity = ffn.layers[0].calib;
  std::printf("\nAWQ W4 g128 affine (int_presets::awq(4, 128)), awq_options defaults (20 ratios, clip search on 512\n"
              "rows); statistics and scale search on the %zu calibration tokens; output error on the %zu held-out\n"
              "tokens. RTN: quantize_dequantize_int on the same grid. cal: the search's own figures.\n\n",
              ffn.layers[0].calib, ffn.layers[0].held());
  std::printf("%-16s %6s %10s %10s %10s %10s %10s %10s %8s\n", "layer", "ratio", "cal RTN", "cal scaled", "cal AWQ",
              "held RTN", "held AWQ", "AWQ/RTN", "time s");
  for (const layer_data& d : ffn.layers) {
    const auto t0 = std::chrono::steady_clock::now();
    lowbit::result<lowbit::activation_stats> st = lowbit::activation_stats::create(d.w.in, so);
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE(st.value.add(d.x_cal(), d.calib, d.w.in).ok());
    const lowbit::linear_weight lw{d.w.w.data(), d.w.out};
    lowbit::result<lowbit::awq_output> a =
        lowbit::awq_quantize(st.value, lowbit::span<const lowbit::linear_weight>(&lw, 1), d.w.in, p);
    ASSERT_TRUE(a.ok()) << a.status.message();
    const double seconds = seconds_since(t0);
    // The effective weights: Q(clip(W diag(s))) diag(s)^-1 (the 1/s goes into the op before).
    const lowbit::quantized_matrix& qm = a.value.layers.values()[0].weight;
    ASSERT_EQ(qm.rows(), d.w.out);
    ASSERT_EQ(qm.cols(), d.w.in);
    std::vector<float> q(qm.size());
    ASSERT_TRUE(qm.dequantize(lowbit::span<float>(q)).ok());
    const auto s = a.value.scales.values();
    ASSERT_EQ(s.size(), d.w.in);
    for (std::size_t o = 0; o < d.w.out; ++o)
      for (std::size_t j = 0; j < d.w.in; ++j) q[o * d.w.in + j] /= s[j];

    std::vector<float> rtn;
    ASSERT_TRUE(qdq_int(d.w, p, rtn));
    const double held_rtn = output_error(d.x_held(), d.held(), d.w, rtn);
    const double held_awq = output_error(d.x_held(), d.held(), d.w, q);
    const double ratio = held_awq / held_rtn;
    std::printf("%-16s %6.2f %10.3e %10.3e %10.3e %10.3e %10.3e %10.3f %8.2f\n", d.label, a.value.alpha,
                a.value.error_rtn, a.value.error_scaled, a.value.error, held_rtn, held_awq, ratio, seconds);
    RecordProperty(std::string("awq_over_rtn_") + (d.label[1] == '0' ? "l0_" : "l1_") + (d.label[7] == '1' ? "conv1" : "conv2"),
                   std::to_string(ratio));
    // r = 0 is round to nearest (errors[0] == error_rtn), and the search never loses to it.
    EXPECT_EQ(a.value.errors.values()[0], a.value.error_rtn) << d.label;
    EXPECT_LE(a.value.error_scaled, a.value.error_rtn) << d.label;
    // The acceptance margin (docs/real-model.md): measured at most 0.84.
    EXPECT_LT(held_awq, 0.9 * held_rtn) << d.label;
  }
}

TEST(RealModel, SmoothQuantBestAlphaBeatsAlphaZeroOnFfnDown) {
  LOWBIT_REQUIRE_FILE(model_json);
  LOWBIT_REQUIRE_FILE(activation_dir + "/index.json");
  ffn_set ffn;
  ASSERT_TRUE(load_ffn(true, ffn));
  std::printf("\nSmoothQuant W8A8 on the FFN down projections (inputs: ReLU outputs with outliers); weights INT8\n"
              "per channel, activations INT8 per tensor (dynamic: amax of the batch); smoothquant_search over\n"
              "alpha = 0, 0.05, ..., 1 on the %zu calibration tokens (max |x| from them); held out: the other %zu,\n"
              "with the calibration's scales. Error ||Y - Y^||^2 / ||Y||^2.\n\n",
              ffn.layers[0].calib, ffn.layers[0].held());
  for (const layer_data& d : ffn.layers) {
    std::vector<float> amax(d.w.in, 0.0f);
    for (std::size_t t = 0; t < d.calib; ++t)
      for (std::size_t j = 0; j < d.w.in; ++j) amax[j] = std::max(amax[j], std::fabs(d.x[t * d.w.in + j]));
    const lowbit::linear_weight lw{d.w.w.data(), d.w.out};
    const lowbit::span<const lowbit::linear_weight> layers(&lw, 1);
    lowbit::smoothquant_search_options o;
    o.activations = lowbit::int_presets::int8_per_tensor();
    o.weights = lowbit::int_presets::int8_per_channel();
    const auto t0 = std::chrono::steady_clock::now();
    lowbit::result<lowbit::smoothquant_search_result> r =
        lowbit::smoothquant_search(d.x_cal(), amax.data(), layers, d.calib, d.w.in, o);
    ASSERT_TRUE(r.ok()) << r.status.message();
    const double seconds = seconds_since(t0);
    const auto alphas = r.value.alphas.values();
    const auto errors = r.value.errors.values();
    ASSERT_EQ(alphas.size(), 21u);
    ASSERT_EQ(alphas[0], 0.0f);

    // Held out: s from the calibration maxima, X / s and W diag(s) quantized, as deployed.
    auto held_error = [&](bool smooth, float alpha) {
      std::vector<float> s(d.w.in, 1.0f);
      if (smooth) {
        lowbit::smoothquant_options so;
        so.alpha = alpha;
        if (!lowbit::smoothquant_scales(amax.data(), layers, d.w.in, so, s.data()).ok()) return double(NAN);
      }
      const std::size_t n = d.held() * d.w.in;
      std::vector<float> xs(n), xq(n);
      for (std::size_t t = 0; t < d.held(); ++t)
        for (std::size_t j = 0; j < d.w.in; ++j) xs[t * d.w.in + j] = d.x_held()[t * d.w.in + j] / s[j];
      if (!lowbit::quantize_dequantize_int(xs.data(), d.held(), d.w.in, o.activations, xq.data()).ok())
        return double(NAN);
      matrix ws = d.w;
      for (std::size_t r0 = 0; r0 < ws.out; ++r0)
        for (std::size_t j = 0; j < ws.in; ++j) ws.w[r0 * ws.in + j] *= s[j];
      std::vector<float> wq(ws.w.size());
      if (!lowbit::quantize_dequantize_int(ws.w.data(), ws.out, ws.in, o.weights, wq.data()).ok()) return double(NAN);
      return output_error_w8a8(d.x_held(), xq.data(), d.held(), d.w, wq);
    };
    const double held_best = held_error(true, r.value.alpha);
    const double held_zero = held_error(true, 0.0f);
    const double held_none = held_error(false, 0.0f);

    // Per token, for comparison (not asserted).
    lowbit::smoothquant_search_options ot = o;
    ot.activations = lowbit::int_presets::int8_per_token();
    lowbit::result<lowbit::smoothquant_search_result> rt =
        lowbit::smoothquant_search(d.x_cal(), amax.data(), layers, d.calib, d.w.in, ot);
    ASSERT_TRUE(rt.ok());

    std::printf("%s: per tensor: best alpha %.2f, calibration error %.3e (alpha 0: %.3e, unsmoothed %.3e), "
                "held out %.3e (alpha 0: %.3e, unsmoothed %.3e); search %.2f s\n",
                d.label, r.value.alpha, r.value.error, errors[0], r.value.error_unsmoothed, held_best, held_zero,
                held_none, seconds);
    std::printf("  curve (alpha: calibration error):");
    for (std::size_t i = 0; i < alphas.size(); i += 2) std::printf(" %.1f:%.2e", alphas[i], errors[i]);
    std::printf("\n  per token: best alpha %.2f, error %.3e (alpha 0: %.3e, unsmoothed %.3e)\n", rt.value.alpha,
                rt.value.error, rt.value.errors.values()[0], rt.value.error_unsmoothed);
    // Channels the calibration half never saw active (max 0: s = 1e-5, the reference's floor)
    // that fire on the held-out tokens: X / s there is 1e5 times their value, and a per-tensor
    // activation scale collapses.
    std::size_t unseen = 0;
    for (std::size_t j = 0; j < d.w.in; ++j) {
      if (amax[j] != 0.0f) continue;
      for (std::size_t t = 0; t < d.held(); ++t)
        if (d.x_held()[t * d.w.in + j] != 0.0f) {
          ++unseen;
          break;
        }
    }
    std::printf("  channels silent on the calibration tokens that fire on the held-out ones: %zu\n", unseen);
    RecordProperty(std::string("smoothquant_best_over_alpha0_cal_") + (d.label[1] == '0' ? "l0" : "l1"),
                   std::to_string(r.value.error / errors[0]));
    EXPECT_GT(r.value.alpha, 0.0f) << d.label;
    EXPECT_EQ(r.value.error, errors[static_cast<std::size_t>(std::lround(r.value.alpha * 20.0f))]) << d.label;
    // The margins on the calibration tokens (docs/real-model.md): the best alpha below a fifth of
    // alpha = 0's error (measured at most 0.055), and below 0.85 of the unsmoothed W8A8 error
    // (measured at most 0.73).
    EXPECT_LT(r.value.error, 0.2 * errors[0]) << d.label;
    EXPECT_LT(r.value.error, 0.85 * r.value.error_unsmoothed) << d.label;
    // Held out, with the calibration's scales: asserted where the calibration saw every channel
    // that fires (otherwise the figures are printed; see docs/real-model.md).
    if (unseen == 0) {
      EXPECT_LT(held_best, 0.5 * held_zero) << d.label;  // measured 0.20 (L0 conv2)
    }
  }
}

}  // namespace
