// Fuzz target: scaled FP8 (lowbit/schemes/fp8.hpp): fp8_quantize, fp8_quantize_fixed and
// fp8_dequantize (float, bfloat16 and float16 outputs) for E4M3FN, E5M2, E4M3FNUZ and E5M2FNUZ
// codes from float, bfloat16 and float16 sources.
//
// Input: byte 0 picks the format and the source type; then every fp8_options field (each
// granularity and enumerator, out-of-range ones too; block sizes consistent, zero or huge;
// headroom and min_amax from 1 and 0 to NaN, Inf, negative, zero and subnormal), a shape (valid,
// many blocks, empty, too large to allocate, overflowing), a buffer plan (null, misaligned,
// overlapping outputs, overlapping inputs), a scale hint, the data (raw floats, values on and a
// few float steps beside the format's decision points times the hint, blocks anchored so that
// their scale is the hint), random bits, static scales and codes.
// Checks, on any input:
//  - fp8_blocks / fp8_storage_for give the error docs/api.md's order gives (options ->
//    shape), and the scale grid this file computes on its own;
//  - every call reports the options or shape error, or for an empty matrix ok, before it looks
//    at a pointer; a shape too large to allocate reaches the buffer checks with null or
//    misaligned pointers and is rejected there without touching memory;
//  - a null, misaligned or overlapping buffer is the documented error (null -> bad_argument,
//    then misaligned, then overlapping_buffers; random_bits only counts under stochastic
//    rounding; inputs may overlap each other), and nothing is written;
//  - each call runs inside one arena of canary bytes: the scalar path and the AVX2 path give the
//    same status and the same arena bytes (partial outputs of a data error included), and both
//    equal a straightforward loop written here from the definition (per block in row-major
//    order: amax, s = round(max(amax, min_amax) * h / max), x / s or x * (1/s) encoded with
//    lowbit::encode; decode(q) * s; stored scales checked), which stops at the first failing
//    block: nothing past the outputs, and nothing of the failing block or after it, is written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <lowbit/schemes/fp8.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t max_elements = 4096;
constexpr std::size_t max_ptrdiff = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());

// splitmix64: the bulk of the data comes from a seed the input gives.
struct rng {
  std::uint64_t s;
  std::uint64_t next() noexcept {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint32_t u32() noexcept { return static_cast<std::uint32_t>(next() >> 32); }
  std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(next() % n); }
};

float bits_float(std::uint32_t b) { return input::bits_to_float(b); }

// An enumerator: mostly in range; otherwise a value past the range (or, for the int-based
// enumerations, a negative one).
template <class E>
E read_enum(input& in, unsigned count) {
  const std::uint8_t v = in.u8();
  if (v < 232) return static_cast<E>(v % count);
  using U = std::underlying_type_t<E>;
  if (std::is_signed<U>::value && v >= 248) return static_cast<E>(static_cast<U>(static_cast<int>(v) - 256));
  return static_cast<E>(static_cast<U>(v < 240 ? count + (v - 232) : v));
}

std::size_t read_block(input& in) {
  static const std::size_t sizes[] = {1, 1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 32, 33, 64, 96, 128, 128, 256, 4096,
                                      std::size_t{1} << 20, std::size_t{1} << 62, static_cast<std::size_t>(-1)};
  return sizes[in.u8() % (sizeof(sizes) / sizeof(sizes[0]))];
}

fp8_options read_options(input& in) {
  fp8_options o;
  o.granularity = read_enum<fp8_granularity>(in, 4);
  const std::uint8_t b = in.u8();
  const bool blocks = o.granularity == fp8_granularity::per_block;
  if (b < 208) {  // consistent
    o.block_rows = blocks ? read_block(in) : 0;
    o.block_cols = blocks ? read_block(in) : 0;
  } else if (b < 232) {  // one of them zero
    (b % 2 ? o.block_rows : o.block_cols) = read_block(in);
  } else {
    o.block_rows = b % 2 ? read_block(in) : 0;
    o.block_cols = b % 4 < 2 ? read_block(in) : 0;
  }
  static const float headrooms[] = {0.5f, 2.0f, 4.0f, 0.25f, 0.875f, 1.125f, 448.0f, 1.0f / 448.0f, 0x1p-20f, 0x1p20f,
                                    3.0f, 0x1p-149f, 0x1p127f, 3.4028235e38f};
  const std::uint8_t h = in.u8();
  o.headroom = h < 150 ? 1.0f
               : h < 200 ? headrooms[in.u8() % (sizeof(headrooms) / sizeof(headrooms[0]))]
               : h < 236 ? std::fabs(in.f32())
                         : in.f32();
  static const float mins[] = {1e-12f, 1e-6f, 1.0f, 448.0f, 0x1p-126f, 1e-45f, -0.0f, 3e38f};
  const std::uint8_t m = in.u8();
  o.min_amax = m < 160 ? 0.0f
               : m < 200 ? mins[in.u8() % (sizeof(mins) / sizeof(mins[0]))]
               : m < 236 ? std::fabs(in.f32())
                         : in.f32();
  o.scale_format = read_enum<scale_storage>(in, 3);
  o.power_of_two_scales = in.u8() < 64;
  o.application = read_enum<scale_application>(in, 2);
  o.element_overflow = read_enum<overflow>(in, 2);
  o.element_rounding = read_enum<rounding>(in, 6);
  return o;
}

// The options error in docs/api.md's order: an unknown granularity first (it decides whether
// block sizes belong), then the block sizes, then the other fields.
errc options_error(const fp8_options& o) {
  const unsigned g = static_cast<unsigned>(o.granularity);
  if (g > 3u) return errc::bad_argument;
  if (g == 3u ? (o.block_rows == 0 || o.block_cols == 0) : (o.block_rows != 0 || o.block_cols != 0))
    return errc::bad_block_size;
  if (static_cast<unsigned>(o.scale_format) > 2u || static_cast<unsigned>(o.application) > 1u ||
      static_cast<unsigned>(o.element_overflow) > 1u || static_cast<unsigned>(o.element_rounding) > 5u)
    return errc::bad_argument;
  if (!std::isfinite(o.headroom) || !(o.headroom > 0.0f)) return errc::bad_argument;
  if (!std::isfinite(o.min_amax) || !(o.min_amax >= 0.0f)) return errc::bad_argument;
  return errc::ok;
}

enum class shape_kind { small, huge_valid, too_large };
struct shape {
  std::size_t rows = 0, cols = 0;
  shape_kind kind = shape_kind::small;
};

// The shape error: rows * cols, or its bytes as float, beyond PTRDIFF_MAX.
bool shape_too_large(std::size_t rows, std::size_t cols) {
  std::size_t n = 0, bytes = 0;
  return __builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, sizeof(float), &bytes) ||
         bytes > max_ptrdiff;
}

shape read_shape(input& in) {
  shape s;
  const unsigned k = in.u8() % 16u;
  if (k < 7) {
    s.rows = 1 + in.below(8);
    s.cols = 1 + in.below(160);
  } else if (k < 9) {  // whole AVX2 steps: the indexed reader
    s.rows = 1 + in.below(4);
    s.cols = 32 * (1 + in.below(16));
  } else if (k == 9) {  // long rows: many blocks, several chunks of 64
    s.rows = 1 + in.below(2);
    s.cols = 1 + in.below(max_elements);
  } else if (k == 10) {  // tall
    s.rows = 1 + in.below(128);
    s.cols = 1 + in.below(40);
  } else if (k == 11) {  // empty
    const std::size_t other = in.flag() ? in.below(100) : lowbit_fuzz::huge_size(in);
    if (in.flag())
      s.rows = 0, s.cols = other;
    else
      s.rows = other, s.cols = 0;
  } else if (k == 12) {  // valid but never allocated
    s.rows = 1 + in.below(4);
    s.cols = in.flag() ? (std::size_t{1} << 20) + in.below(1000) : max_ptrdiff / 4 / s.rows;
    s.kind = shape_kind::huge_valid;
    return s;
  } else if (k == 13) {  // bytes just past PTRDIFF_MAX, no size_t overflow
    s.rows = 1;
    s.cols = max_ptrdiff / 4 + 1 + in.below(1000);
    if (in.flag()) std::swap(s.rows, s.cols);
    s.kind = shape_kind::too_large;
    return s;
  } else {
    s.rows = lowbit_fuzz::huge_size(in);
    s.cols = k == 14 ? 1 + in.below(300) : lowbit_fuzz::huge_size(in);
    if (in.flag()) std::swap(s.rows, s.cols);
    s.kind = shape_too_large(s.rows, s.cols) ? shape_kind::too_large : shape_kind::huge_valid;
    return s;
  }
  if (s.rows * s.cols > max_elements) s.cols = max_elements / s.rows;
  return s;
}

// The scale grid, computed here from docs/fp8-scaling.md's table.
struct grid {
  std::size_t br = 0, bc = 0, sr = 0, sc = 0;
  std::size_t count() const { return sr * sc; }
};
grid grid_of(const fp8_options& o, std::size_t rows, std::size_t cols) {
  grid g;
  if (rows == 0 || cols == 0) return g;
  g.br = rows, g.bc = cols;
  if (o.granularity == fp8_granularity::per_channel || o.granularity == fp8_granularity::per_token) g.br = 1;
  if (o.granularity == fp8_granularity::per_block) {
    g.br = o.block_rows < rows ? o.block_rows : rows;
    g.bc = o.block_cols < cols ? o.block_cols : cols;
  }
  g.sr = rows / g.br + (rows % g.br != 0);
  g.sc = cols / g.bc + (cols % g.bc != 0);
  return g;
}

// ---------------------------------------------------------------------------------------------
// The reference: straightforward loops from the definition.

template <class T>
double max_of() {
  return static_cast<double>(static_cast<float>(std::numeric_limits<T>::max()));
}

template <class T>
errc reference_scale(float amax, const fp8_options& o, float* s_out) {
  const double a = static_cast<double>(amax) > static_cast<double>(o.min_amax) ? amax : o.min_amax;
  if (a == 0.0) {
    *s_out = 1.0f;
    return errc::ok;
  }
  double q = a * static_cast<double>(o.headroom) / max_of<T>();
  if (o.power_of_two_scales) {
    double p = std::ldexp(1.0, std::ilogb(q));
    if (p < q) p *= 2.0;
    q = p;
  }
  float s = 0.0f;
  // Beyond FLT_MAX + half an ulp (ties go to the even 2^128) the float is Inf; converting such a
  // double is undefined, so compare first.
  if (o.scale_format == scale_storage::fp32)
    s = q >= 0x1.ffffffp127 ? std::numeric_limits<float>::infinity() : static_cast<float>(q);
  if (o.scale_format == scale_storage::fp16) s = static_cast<float>(encode<float16>(q, overflow::non_saturate));
  if (o.scale_format == scale_storage::bf16) s = static_cast<float>(encode<bfloat16>(q, overflow::non_saturate));
  if (std::isinf(s)) return errc::scale_overflow;
  const float least = o.scale_format == scale_storage::fp16 ? 0x1p-24f : 0x1p-126f;
  *s_out = s < least ? least : s;
  return errc::ok;
}

bool scale_valid(float s, const fp8_options& o) {
  if (std::isnan(s) || std::isinf(s) || s < 0x1p-126f) return false;
  if (o.scale_format == scale_storage::fp16 && static_cast<float>(encode<float16>(s)) != s) return false;
  if (o.scale_format == scale_storage::bf16 && static_cast<float>(encode<bfloat16>(s)) != s) return false;
  if (o.power_of_two_scales) {
    int e = 0;
    if (std::frexp(s, &e) != 0.5f) return false;
  }
  return true;
}

template <class T>
T encode_scaled(float x, float s, const fp8_options& o, std::uint32_t bits) {
  policy p;
  p.ov = o.element_overflow;
  p.rm = o.element_rounding;
  const float r = 1.0f / s;
  const float y = o.application == scale_application::divide ? x / s : x * r;
  return encode<T>(y, p, bits);
}

// Visits the blocks in row-major order of the scale grid; f(k, r0, r1, c0, c1) returns false
// to stop.
template <class F>
void for_blocks(const grid& g, std::size_t rows, std::size_t cols, F f) {
  for (std::size_t bi = 0; bi < g.sr; ++bi)
    for (std::size_t bj = 0; bj < g.sc; ++bj) {
      const std::size_t r0 = bi * g.br, c0 = bj * g.bc;
      const std::size_t r1 = rows - r0 < g.br ? rows : r0 + g.br, c1 = cols - c0 < g.bc ? cols : c0 + g.bc;
      if (!f(bi * g.sc + bj, r0, r1, c0, c1)) return;
    }
}

template <class T, class From>
errc reference_quantize(const std::vector<From>& x, const std::uint32_t* rb, std::size_t rows, std::size_t cols,
                        const fp8_options& o, std::vector<T>& q, std::vector<float>& scales) {
  const grid g = grid_of(o, rows, cols);
  errc e = errc::ok;
  for_blocks(g, rows, cols, [&](std::size_t k, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    float amax = 0.0f;
    for (std::size_t i = r0; i < r1; ++i)
      for (std::size_t j = c0; j < c1; ++j) {
        const float v = std::fabs(static_cast<float>(x[i * cols + j]));
        if (!std::isfinite(v)) {
          e = errc::non_finite_input;
          return false;
        }
        amax = v > amax ? v : amax;
      }
    float s = 0.0f;
    e = reference_scale<T>(amax, o, &s);
    if (e != errc::ok) return false;
    scales[k] = s;
    for (std::size_t i = r0; i < r1; ++i)
      for (std::size_t j = c0; j < c1; ++j)
        q[i * cols + j] = encode_scaled<T>(static_cast<float>(x[i * cols + j]), s, o, rb ? rb[i * cols + j] : 0u);
    return true;
  });
  return e;
}

template <class T, class From>
errc reference_quantize_fixed(const std::vector<From>& x, const std::vector<float>& scales, const std::uint32_t* rb,
                              std::size_t rows, std::size_t cols, const fp8_options& o, std::vector<T>& q) {
  const grid g = grid_of(o, rows, cols);
  errc e = errc::ok;
  for_blocks(g, rows, cols, [&](std::size_t k, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    const float s = scales[k];
    if (!scale_valid(s, o)) {
      e = errc::bad_argument;
      return false;
    }
    for (std::size_t i = r0; i < r1; ++i)
      for (std::size_t j = c0; j < c1; ++j)
        q[i * cols + j] = encode_scaled<T>(static_cast<float>(x[i * cols + j]), s, o, rb ? rb[i * cols + j] : 0u);
    return true;
  });
  return e;
}

inline void store(float* y, float v) { *y = v; }
template <class H>
void store(H* y, float v) {
  *y = encode<H>(v);
}

template <class T, class Dst>
errc reference_dequantize(const std::vector<T>& q, const std::vector<float>& scales, std::size_t rows,
                          std::size_t cols, const fp8_options& o, std::vector<Dst>& y) {
  const grid g = grid_of(o, rows, cols);
  errc e = errc::ok;
  for_blocks(g, rows, cols, [&](std::size_t k, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    const float s = scales[k];
    if (!scale_valid(s, o)) {
      e = errc::bad_argument;
      return false;
    }
    for (std::size_t i = r0; i < r1; ++i)
      for (std::size_t j = c0; j < c1; ++j) store(&y[i * cols + j], decode(q[i * cols + j]) * s);
    return true;
  });
  return e;
}

// ---------------------------------------------------------------------------------------------
// Buffers: every call runs in an arena of canary bytes, its buffers placed by a plan.

struct buffer_spec {
  const char* name;
  std::size_t bytes;  // 0: absent
  std::size_t align;
  bool output;
  const void* data;  // an input's contents
  bool checked;      // whether the call checks it (random_bits only under stochastic rounding)
  bool absent = false;  // passed as nullptr (random_bits not given)
};

struct plan {
  unsigned kind = 0;  // 0 plain, 1 null, 2 misaligned, 3 overlapping output, 4 several, 5 inputs alias
  std::uint8_t sel[4] = {};
  std::uint64_t jitter = 0;
  bool all_null = false;  // empty matrices: every pointer null
};

plan read_plan(input& in) {
  plan p;
  const std::uint8_t k = in.u8();
  p.kind = k < 150 ? 0 : 1 + (k - 150) % 5;
  for (auto& s : p.sel) s = in.u8();
  p.jitter = in.u64();
  p.all_null = in.flag();
  return p;
}

struct layout {
  std::vector<std::size_t> off;
  std::vector<bool> null;
  std::size_t size = 0;
};

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

bool overlap(std::size_t a, std::size_t an, std::size_t b, std::size_t bn) {
  return an != 0 && bn != 0 && a < b + bn && b < a + an;
}

// Places b so that it overlaps a (when both are non-empty), keeping b aligned when a is.
void place_over(const buffer_spec& sa, std::size_t oa, const buffer_spec& sb, std::size_t& ob, std::uint8_t sel) {
  const long long lo = -static_cast<long long>(sb.bytes) + 1, hi = static_cast<long long>(sa.bytes) - 1;
  long long d = lo + static_cast<long long>(sel) * (hi - lo) / 255;
  const long long al = static_cast<long long>(sb.align);
  d = d >= 0 ? (d + al - 1) / al * al : -((-d) / al * al);  // toward +inf, a multiple of the alignment
  if (!overlap(oa, sa.bytes, static_cast<std::size_t>(static_cast<long long>(oa) + d), sb.bytes)) d = 0;
  ob = static_cast<std::size_t>(static_cast<long long>(oa) + d);
}

layout make_layout(const std::vector<buffer_spec>& b, const plan& p) {
  layout l;
  l.off.resize(b.size());
  l.null.assign(b.size(), false);
  std::size_t biggest = 0;
  for (const auto& s : b) biggest = s.bytes > biggest ? s.bytes : biggest;
  rng r{p.jitter};
  std::size_t cursor = align_up(biggest + 64, 64);
  for (std::size_t i = 0; i < b.size(); ++i) {
    cursor = align_up(cursor, 64) + 4 * r.below(16);
    l.off[i] = cursor;
    cursor += b[i].bytes + 16 + r.below(16);
  }
  l.size = cursor + biggest + 64;

  auto pick = [&](std::uint8_t sel, auto ok) -> std::size_t {
    std::vector<std::size_t> c;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (ok(i)) c.push_back(i);
    return c.empty() ? b.size() : c[sel % c.size()];
  };
  const bool several = p.kind == 4;
  if (p.kind == 1 || (several && p.sel[3] % 2)) {
    // A null random_bits is not an error (it means all zero): give_bits covers it.
    const std::size_t i = pick(p.sel[0], [&](std::size_t j) {
      return b[j].bytes != 0 && b[j].checked && std::strcmp(b[j].name, "random_bits") != 0;
    });
    if (i < b.size()) l.null[i] = true;
  }
  if (p.kind == 2 || (several && p.sel[3] / 2 % 2)) {
    const std::size_t i = pick(p.sel[1], [&](std::size_t j) { return b[j].bytes != 0 && b[j].align > 1; });
    if (i < b.size()) l.off[i] += 1;
  }
  if (p.kind == 3 || (several && p.sel[3] / 4 % 2)) {
    const std::size_t o = pick(p.sel[1], [&](std::size_t j) { return b[j].bytes != 0 && b[j].output; });
    if (o < b.size()) {
      const std::size_t a = pick(p.sel[2], [&](std::size_t j) { return j != o && b[j].bytes != 0; });
      if (a < b.size()) place_over(b[a], l.off[a], b[o], l.off[o], p.sel[3]);
    }
  }
  if (p.kind == 5) {
    const std::size_t a = pick(p.sel[1], [&](std::size_t j) { return b[j].bytes != 0 && !b[j].output; });
    const std::size_t c = pick(p.sel[2], [&](std::size_t j) { return j != a && b[j].bytes != 0 && !b[j].output; });
    if (a < b.size() && c < b.size()) place_over(b[a], l.off[a], b[c], l.off[c], p.sel[3]);
  }
  return l;
}

// What the buffer checks must say for this layout (the arena base is 64-byte aligned).
errc buffer_error(const std::vector<buffer_spec>& b, const layout& l) {
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i].checked && b[i].bytes != 0 && l.null[i]) return errc::bad_argument;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i].checked && b[i].bytes != 0 && l.off[i] % b[i].align != 0) return errc::misaligned;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!b[i].output || !b[i].checked) continue;
    for (std::size_t j = 0; j < b.size(); ++j)
      if (j != i && b[j].checked && !l.null[i] && !l.null[j] && overlap(l.off[i], b[i].bytes, l.off[j], b[j].bytes))
        return errc::overlapping_buffers;
  }
  return errc::ok;
}

struct arena {
  std::vector<std::uint8_t> storage;
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
  void init(std::size_t n) {
    storage.assign(n + 64, lowbit_fuzz::canary);
    base = storage.data() + (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64) % 64;
    size = n;
  }
  std::vector<std::uint8_t> bytes() const { return std::vector<std::uint8_t>(base, base + size); }
};

struct call_result {
  status st;
  std::vector<std::uint8_t> before, after;
};

// Runs call(pointer of buffer i...) in a fresh arena laid out by l, inputs copied in.
template <class Call>
call_result run_in_arena(const std::vector<buffer_spec>& b, const layout& l, bool all_null, Call call) {
  arena a;
  a.init(l.size);
  for (std::size_t i = 0; i < b.size(); ++i)
    if (!b[i].output && b[i].bytes != 0 && b[i].data != nullptr) std::memcpy(a.base + l.off[i], b[i].data, b[i].bytes);
  call_result r;
  r.before = a.bytes();
  std::vector<void*> ptr(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) ptr[i] = (l.null[i] || all_null || b[i].absent) ? nullptr : a.base + l.off[i];
  r.st = call(ptr);
  r.after = a.bytes();
  return r;
}

template <class V>
std::vector<V> read_from(const std::vector<std::uint8_t>& bytes, std::size_t off, std::size_t n) {
  std::vector<V> v(n);
  if (n != 0) std::memcpy(static_cast<void*>(v.data()), bytes.data() + off, n * sizeof(V));
  return v;
}
template <class V>
void write_to(std::vector<std::uint8_t>& bytes, std::size_t off, const std::vector<V>& v) {
  if (!v.empty()) std::memcpy(bytes.data() + off, static_cast<const void*>(v.data()), v.size() * sizeof(V));
}

// ---------------------------------------------------------------------------------------------
// One input.

const char* type_name(float*) { return "float"; }
const char* type_name(bfloat16*) { return "bfloat16"; }
const char* type_name(float16*) { return "float16"; }
template <class F>
const char* type_name(minifloat<F>*) {
  if (std::is_same<F, formats::e4m3fn>::value) return "e4m3fn";
  if (std::is_same<F, formats::e5m2>::value) return "e5m2";
  if (std::is_same<F, formats::e4m3fnuz>::value) return "e4m3fnuz";
  return "e5m2fnuz";
}
template <class V>
const char* name_of() {
  return type_name(static_cast<V*>(nullptr));
}

struct context {
  const char* what = "";
  const char* fmt = "";
  const char* src = "";
  const char* dst = "";
  fp8_options o;
  std::size_t rows = 0, cols = 0;
  unsigned plan_kind = 0;
};

void describe(const context& c) {
  std::fprintf(stderr,
               "  call %s, T %s, source %s, destination %s, shape %zu x %zu, plan %u\n"
               "  options: granularity %u, block %zu x %zu, headroom %a, min_amax %a, scale_format %u, pow2 %d, "
               "application %u, overflow %d, rounding %d\n",
               c.what, c.fmt, c.src, c.dst, c.rows, c.cols, c.plan_kind, static_cast<unsigned>(c.o.granularity),
               c.o.block_rows, c.o.block_cols, static_cast<double>(c.o.headroom), static_cast<double>(c.o.min_amax),
               static_cast<unsigned>(c.o.scale_format), c.o.power_of_two_scales ? 1 : 0,
               static_cast<unsigned>(c.o.application), static_cast<int>(c.o.element_overflow),
               static_cast<int>(c.o.element_rounding));
}

std::size_t first_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size() < b.size() ? a.size() : b.size();
}

// Which buffer (or gap) an arena offset falls in.
std::string where(const std::vector<buffer_spec>& b, const layout& l, std::size_t at) {
  for (std::size_t i = 0; i < b.size(); ++i)
    if (at >= l.off[i] && at < l.off[i] + b[i].bytes)
      return std::string(b[i].name) + " byte " + std::to_string(at - l.off[i]);
  return "outside every buffer (offset " + std::to_string(at) + ")";
}

// Runs the call on both paths and checks it. pre: the options/shape error (or ok); empty: n = 0.
// reference(before, expected_after) fills the outputs into expected_after and returns the status.
template <class Call, class Reference>
void check_call(const context& c, const std::vector<buffer_spec>& b, const plan& p, errc pre, bool empty, Call call,
                Reference reference) {
  const layout l = make_layout(b, p);
  const bool all_null = (empty || pre != errc::ok) && p.all_null;
  call_result ref, simd;
  {
    const scoped_isa s{isa::scalar};
    ref = run_in_arena(b, l, all_null, call);
  }
  if (is_supported(isa::avx2)) {
    const scoped_isa s{isa::avx2};
    simd = run_in_arena(b, l, all_null, call);
  } else {
    simd = ref;
  }
  if (ref.st.code() != simd.st.code()) describe(c);
  LOWBIT_FUZZ_CHECK(ref.st.code() == simd.st.code(), "status: scalar %s, AVX2 %s", ref.st.message(),
                    simd.st.message());
  if (ref.after != simd.after) describe(c);
  LOWBIT_FUZZ_CHECK(ref.after == simd.after, "AVX2 bytes differ from scalar at %s: scalar 0x%02x, AVX2 0x%02x (%s)",
                    where(b, l, first_diff(ref.after, simd.after)).c_str(),
                    ref.after[first_diff(ref.after, simd.after)], simd.after[first_diff(ref.after, simd.after)],
                    ref.st.message());

  errc want = pre;
  if (want == errc::ok && !empty) want = buffer_error(b, l);
  if (want != errc::ok || empty) {
    if (ref.st.code() != want || ref.after != ref.before) describe(c);
    LOWBIT_FUZZ_CHECK(ref.st.code() == want, "status %s, expected %s", ref.st.message(), lowbit::message(want));
    LOWBIT_FUZZ_CHECK(ref.after == ref.before, "a call that failed before the data (%s) wrote at %s",
                      ref.st.message(), where(b, l, first_diff(ref.after, ref.before)).c_str());
    return;
  }
  std::vector<std::uint8_t> expected = ref.before;
  const errc e = reference(ref.before, expected, l);
  if (ref.st.code() != e || ref.after != expected) describe(c);
  LOWBIT_FUZZ_CHECK(ref.st.code() == e, "status %s, the reference loop says %s", ref.st.message(), lowbit::message(e));
  LOWBIT_FUZZ_CHECK(ref.after == expected, "bytes differ from the reference loop at %s: call 0x%02x, reference 0x%02x",
                    where(b, l, first_diff(ref.after, expected)).c_str(), ref.after[first_diff(ref.after, expected)],
                    expected[first_diff(ref.after, expected)]);
}

// A float near the decision points of T: a value of T or a midpoint of two neighbours, moved a
// few float steps.
template <class T>
float near_decision(rng& r) {
  const std::uint8_t c = static_cast<std::uint8_t>(r.u32());
  float v = decode(T::from_bits(c));
  if (!std::isfinite(v)) v = static_cast<float>(std::numeric_limits<T>::max());
  if (r.below(2) != 0) {
    const float w = decode(T::from_bits(static_cast<std::uint8_t>((c & 0x80u) | ((c + 1u) & 0x7Fu))));
    if (std::isfinite(w) && std::signbit(w) == std::signbit(v)) v = static_cast<float>((static_cast<double>(v) + w) / 2);
  }
  if (r.below(3) != 0) {
    const std::uint32_t bits = lowbit_fuzz::float_bits(v);
    const std::uint32_t mag = bits & 0x7FFFFFFFu;
    const int d = static_cast<int>(r.below(11)) - 5;
    if (d < 0 ? mag >= static_cast<std::uint32_t>(-d) : mag + static_cast<std::uint32_t>(d) < 0x7F800000u)
      v = bits_float((bits & 0x80000000u) | (mag + static_cast<std::uint32_t>(d)));
  }
  return v;
}

float special(rng& r) {
  static const float s[] = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, 57344.0f, 240.0f, 464.0f, 0x1p-126f, 0x1p-149f,
                            3.4028235e38f, -3.4028235e38f, 65504.0f, 65520.0f};
  static const std::uint32_t nonfinite[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u,
                                            0xFFA12345u};
  if (r.below(4) == 0) return bits_float(nonfinite[r.below(6)]);
  return s[r.below(sizeof(s) / sizeof(s[0]))];
}

// A scale the options accept, from a hint.
float valid_scale(float h, const fp8_options& o) {
  if (!std::isfinite(h) || !(std::fabs(h) >= 0x1p-126f)) h = 1.0f;
  h = std::fabs(h);
  if (o.scale_format == scale_storage::fp16) h = static_cast<float>(encode<float16>(h));
  if (o.scale_format == scale_storage::bf16) h = static_cast<float>(encode<bfloat16>(h));
  if (o.power_of_two_scales) h = std::ldexp(1.0f, std::ilogb(h));
  return scale_valid(h, o) ? h : 1.0f;
}

float bad_scale(rng& r) {
  static const float s[] = {0.0f, -0.0f, -1.0f, 0x1p-127f, 1e-39f, 0.3f, 0.375f, 0x1p127f, 0x1.8p126f,
                            3.4028235e38f, 0x1p-126f, 0x1p-24f, 65504.0f, 131072.0f};
  if (r.below(4) == 0) return bits_float(r.below(2) ? 0x7FC00000u : 0x7F800000u);
  return s[r.below(sizeof(s) / sizeof(s[0]))];
}

template <class From>
From to_source(float f) {
  if constexpr (std::is_same<From, float>::value) {
    return f;
  } else {
    return encode<From>(f, overflow::non_saturate);
  }
}

template <class T, class From>
void check(input& in, const context& base) {
  context c = base;
  c.o = read_options(in);
  const fp8_options& o = c.o;
  const shape sh = read_shape(in);
  c.rows = sh.rows, c.cols = sh.cols;
  const plan p = read_plan(in);
  c.plan_kind = p.kind;
  const std::uint8_t hint_kind = in.u8();
  float hint = 1.0f;
  switch (hint_kind % 4) {
    case 0: hint = std::ldexp(1.0f, static_cast<int>(in.below(264)) - 132); break;
    case 1: hint = std::ldexp(1.0f + static_cast<float>(in.u8()) / 256.0f, static_cast<int>(in.below(80)) - 40); break;
    case 2: hint = std::fabs(in.f32()); break;
    default: hint = static_cast<float>(1.0 / max_of<T>()) * static_cast<float>(1 + in.below(1000)); break;
  }

  const errc oe = options_error(o);
  const errc pre = oe != errc::ok ? oe : shape_too_large(sh.rows, sh.cols) ? errc::bad_argument : errc::ok;
  LOWBIT_FUZZ_CHECK((sh.kind == shape_kind::too_large) == shape_too_large(sh.rows, sh.cols), "shape kind");

  // fp8_blocks and fp8_storage_for.
  const result<fp8_blocking> fb = fp8_blocks(o, sh.rows, sh.cols);
  if (fb.status.code() != pre) describe(c);
  LOWBIT_FUZZ_CHECK(fb.status.code() == pre, "fp8_blocks: %s, expected %s", fb.status.message(), lowbit::message(pre));
  const grid g = pre == errc::ok ? grid_of(o, sh.rows, sh.cols) : grid{};
  if (pre == errc::ok) {
    LOWBIT_FUZZ_CHECK(fb.value.scale_rows == g.sr && fb.value.scale_cols == g.sc &&
                          (g.count() == 0 || (fb.value.block_rows == g.br && fb.value.block_cols == g.bc)),
                      "fp8_blocks: %zu x %zu blocks of %zu x %zu, expected %zu x %zu of %zu x %zu", fb.value.scale_rows,
                      fb.value.scale_cols, fb.value.block_rows, fb.value.block_cols, g.sr, g.sc, g.br, g.bc);
    const result<storage> st = fp8_storage_for(o, sh.rows, sh.cols);
    LOWBIT_FUZZ_CHECK(st.ok() && st.value.elements == sh.rows * sh.cols && st.value.payload_bytes == sh.rows * sh.cols &&
                          st.value.scale_bytes == g.count() * (o.scale_format == scale_storage::fp32 ? 4u : 2u),
                      "fp8_storage_for: %s", st.status.message());
  } else {
    LOWBIT_FUZZ_CHECK(fp8_storage_for(o, sh.rows, sh.cols).status.code() == pre, "fp8_storage_for error");
  }

  if (sh.kind != shape_kind::small) {
    // Never allocated: options or shape errors with pointers that are never valid; a valid huge
    // shape with a null or misaligned pointer, rejected before memory is touched.
    const bool use_null = in.flag();
    auto fake = [](std::size_t k) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x100000 * (k + 1))); };
    void* bad = use_null ? nullptr : reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1001));
    const bool checkable = pre != errc::ok || sh.kind == shape_kind::huge_valid;
    if (!checkable) return;
    const errc want = pre != errc::ok ? pre : use_null ? errc::bad_argument : errc::misaligned;
    const From* src = static_cast<const From*>(pre != errc::ok ? fake(0) : bad);
    const status a = fp8_quantize(src, sh.rows, sh.cols, o, static_cast<T*>(fake(1)), static_cast<float*>(fake(2)));
    const status f = fp8_quantize_fixed(src, static_cast<const float*>(fake(3)), sh.rows, sh.cols, o,
                                        static_cast<T*>(fake(1)));
    const T* codes = static_cast<const T*>(pre != errc::ok ? fake(1) : use_null ? nullptr : fake(1));
    const float* sc = static_cast<const float*>(pre != errc::ok ? fake(3) : use_null ? fake(3) : bad);
    const status d = fp8_dequantize(codes, sc, sh.rows, sh.cols, o, static_cast<float*>(fake(4)));
    const status d16 = fp8_dequantize(codes, sc, sh.rows, sh.cols, o, static_cast<bfloat16*>(fake(4)));
    if (a.code() != want || f.code() != want || d.code() != want || d16.code() != want) describe(c);
    LOWBIT_FUZZ_CHECK(a.code() == want && f.code() == want && d.code() == want && d16.code() == want,
                      "shape %zu x %zu: quantize %s, fixed %s, dequantize %s / %s, expected %s", sh.rows, sh.cols,
                      a.message(), f.message(), d.message(), d16.message(), lowbit::message(want));
    return;
  }

  const std::size_t n = sh.rows * sh.cols;
  const bool empty = n == 0;
  // Buffer sizes: with options errors the grid is unknown; nothing may be written anyway.
  const std::size_t sc_count = pre == errc::ok ? g.count() : n;
  const bool stochastic = o.element_rounding == rounding::stochastic;

  // The data.
  rng r{in.u64()};
  const unsigned data_kind = in.u8() % 5u;
  const bool finite_only = in.u8() < 170;
  const bool anchor = in.flag();
  std::vector<float> xf(n);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned k = data_kind;
    if (k == 4) k = static_cast<unsigned>(r.below(4));
    float v = 0.0f;
    switch (k) {
      case 0: v = in.remaining() != 0 ? in.f32() : bits_float(r.u32()); break;
      case 1: v = near_decision<T>(r) * hint; break;
      case 2: {
        const double u = (static_cast<double>(r.u32()) + static_cast<double>(r.u32())) / 4294967296.0 - 1.0;
        v = static_cast<float>(u * max_of<T>() * hint);
        break;
      }
      default: v = r.below(8) == 0 ? special(r) : near_decision<T>(r) * hint; break;
    }
    if (finite_only && !std::isfinite(v)) v = 0.0f;
    xf[i] = v;
  }
  if (anchor && pre == errc::ok && !empty) {
    const float a = static_cast<float>(max_of<T>()) * hint;
    for_blocks(g, sh.rows, sh.cols, [&](std::size_t, std::size_t r0, std::size_t, std::size_t c0, std::size_t) {
      if (std::isfinite(a)) xf[r0 * sh.cols + c0] = r.below(2) ? a : -a;
      return true;
    });
  }
  std::vector<From> src(n);
  for (std::size_t i = 0; i < n; ++i) src[i] = to_source<From>(xf[i]);
  if constexpr (!std::is_same<From, float>::value) {
    if (in.u8() < 32)  // raw 16-bit patterns: NaN payloads, subnormals
      for (std::size_t i = 0; i < n; ++i)
        if (r.below(8) == 0) src[i] = From::from_bits(static_cast<std::uint16_t>(r.u32()));
  }
  std::vector<std::uint32_t> bits;
  const bool give_bits = in.u8() < 200;
  if (give_bits) {
    bits.resize(n);
    for (auto& b : bits) b = r.below(16) == 0 ? (r.below(2) ? 0u : 0xFFFFFFFFu) : r.u32();
  }
  const std::size_t bits_bytes = give_bits ? n * 4 : 0;
  const std::uint8_t scale_kind = in.u8();
  const std::uint8_t code_kind = in.u8();

  // fp8_quantize.
  c.what = "fp8_quantize";
  std::vector<float> dynamic_scales(sc_count, 1.0f);
  bool dynamic_ok = false;
  std::vector<T> dynamic_codes(n, T::from_bits(0));
  {
    const std::vector<buffer_spec> b = {
        {"src", n * sizeof(From), alignof(From), false, src.data(), true},
        {"random_bits", bits_bytes, 4, false, bits.data(), stochastic, !give_bits},
        {"elements", n, 1, true, nullptr, true},
        {"scales", sc_count * 4, 4, true, nullptr, true},
    };
    auto call = [&](const std::vector<void*>& ptr) {
      return fp8_quantize(static_cast<const From*>(ptr[0]), sh.rows, sh.cols, o, static_cast<T*>(ptr[2]),
                          static_cast<float*>(ptr[3]), static_cast<const std::uint32_t*>(ptr[1]));
    };
    auto reference = [&](const std::vector<std::uint8_t>& before, std::vector<std::uint8_t>& after, const layout& l) {
      const std::vector<From> x = read_from<From>(before, l.off[0], n);
      const std::vector<std::uint32_t> rb = read_from<std::uint32_t>(before, l.off[1], give_bits ? n : 0);
      std::vector<T> q = read_from<T>(before, l.off[2], n);
      std::vector<float> s = read_from<float>(before, l.off[3], sc_count);
      const errc e = reference_quantize<T>(x, stochastic && give_bits ? rb.data() : nullptr, sh.rows, sh.cols, o, q, s);
      write_to(after, l.off[2], q);
      write_to(after, l.off[3], s);
      dynamic_ok = e == errc::ok;
      dynamic_scales = s;
      dynamic_codes = q;
      return e;
    };
    check_call(c, b, p, pre, empty, call, reference);
  }

  // Static scales.
  std::vector<float> scales(sc_count);
  const float good = valid_scale(hint, o);
  for (std::size_t k = 0; k < sc_count; ++k) {
    const float base_scale = dynamic_ok ? dynamic_scales[k] : good;
    switch (scale_kind % 4) {
      case 0: scales[k] = base_scale; break;
      case 1: scales[k] = good; break;
      case 2: scales[k] = r.below(12) == 0 ? bad_scale(r) : base_scale; break;
      default: scales[k] = r.below(2) ? in.f32() : base_scale; break;
    }
  }

  // fp8_quantize_fixed.
  c.what = "fp8_quantize_fixed";
  {
    const std::vector<buffer_spec> b = {
        {"src", n * sizeof(From), alignof(From), false, src.data(), true},
        {"scales", sc_count * 4, 4, false, scales.data(), true},
        {"random_bits", bits_bytes, 4, false, bits.data(), stochastic, !give_bits},
        {"elements", n, 1, true, nullptr, true},
    };
    auto call = [&](const std::vector<void*>& ptr) {
      return fp8_quantize_fixed(static_cast<const From*>(ptr[0]), static_cast<const float*>(ptr[1]), sh.rows, sh.cols,
                                o, static_cast<T*>(ptr[3]), static_cast<const std::uint32_t*>(ptr[2]));
    };
    auto reference = [&](const std::vector<std::uint8_t>& before, std::vector<std::uint8_t>& after, const layout& l) {
      const std::vector<From> x = read_from<From>(before, l.off[0], n);
      const std::vector<float> s = read_from<float>(before, l.off[1], sc_count);
      const std::vector<std::uint32_t> rb = read_from<std::uint32_t>(before, l.off[2], give_bits ? n : 0);
      std::vector<T> q = read_from<T>(before, l.off[3], n);
      const errc e = reference_quantize_fixed<T>(x, s, stochastic && give_bits ? rb.data() : nullptr, sh.rows, sh.cols,
                                                 o, q);
      write_to(after, l.off[3], q);
      return e;
    };
    check_call(c, b, p, pre, empty, call, reference);
  }

  // Codes to dequantize.
  std::vector<T> codes(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (code_kind % 3) {
      case 0: codes[i] = dynamic_codes[i]; break;
      case 1: codes[i] = T::from_bits(static_cast<std::uint8_t>(r.u32())); break;
      default: codes[i] = r.below(4) == 0 ? T::from_bits(static_cast<std::uint8_t>(r.u32())) : dynamic_codes[i]; break;
    }
  }

  auto dequantize_into = [&](auto* tag) {
    using Dst = std::remove_pointer_t<decltype(tag)>;
    context cd = c;
    cd.what = "fp8_dequantize";
    cd.dst = name_of<Dst>();
    const std::vector<buffer_spec> b = {
        {"elements", n, 1, false, codes.data(), true},
        {"scales", sc_count * 4, 4, false, scales.data(), true},
        {"dst", n * sizeof(Dst), alignof(Dst), true, nullptr, true},
    };
    auto call = [&](const std::vector<void*>& ptr) {
      return fp8_dequantize(static_cast<const T*>(ptr[0]), static_cast<const float*>(ptr[1]), sh.rows, sh.cols, o,
                            static_cast<Dst*>(ptr[2]));
    };
    auto reference = [&](const std::vector<std::uint8_t>& before, std::vector<std::uint8_t>& after, const layout& l) {
      const std::vector<T> q = read_from<T>(before, l.off[0], n);
      const std::vector<float> s = read_from<float>(before, l.off[1], sc_count);
      std::vector<Dst> y = read_from<Dst>(before, l.off[2], n);
      const errc e = reference_dequantize(q, s, sh.rows, sh.cols, o, y);
      write_to(after, l.off[2], y);
      return e;
    };
    check_call(cd, b, p, pre, empty, call, reference);
  };
  dequantize_into(static_cast<float*>(nullptr));
  dequantize_into(static_cast<bfloat16*>(nullptr));
  dequantize_into(static_cast<float16*>(nullptr));
}

template <class T>
void check_format(input& in, unsigned source) {
  context c;
  c.fmt = name_of<T>();
  switch (source) {
    case 0: c.src = "float"; return check<T, float>(in, c);
    case 1: c.src = "bfloat16"; return check<T, bfloat16>(in, c);
    default: c.src = "float16"; return check<T, float16>(in, c);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const std::uint8_t first = in.u8();
  const unsigned source = (first / 4u) % 3u;
  switch (first % 4u) {
    case 0: check_format<float8_e4m3fn>(in, source); break;
    case 1: check_format<float8_e5m2>(in, source); break;
    case 2: check_format<float8_e4m3fnuz>(in, source); break;
    default: check_format<float8_e5m2fnuz>(in, source); break;
  }
  return 0;
}
