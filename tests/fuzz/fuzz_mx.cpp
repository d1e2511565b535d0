// Fuzz target: the MX block formats (lowbit/schemes/mx.hpp), all six, float and bfloat16 input.
//
// Input: format, the mx_options fields (block sizes from 0 to 2^64 - 1, enumerators out of
// range), a shape (valid, indivisible, empty or overflowing), a buffer mode, then the data.
// Checks, each on any input:
//  - options and shape errors are the ones mx_storage_for reports, and are found before
//    anything is written (canaries intact; overflowing shapes get pointers that are never valid);
//  - null, misaligned and overlapping buffers are errors and nothing is written;
//  - the SIMD path gives the scalar reference's status and bytes, quantizing and dequantizing
//    (the best path, and AVX2 as well where the best is AVX-512);
//  - nothing is written past the elements and scales the shape needs;
//  - under the floor rule, quantizing the dequantized values gives the same bytes back;
//  - the run-time dispatch (mx_format) rejects an enumerator out of range.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <lowbit/schemes/mx.hpp>

#include "fuzz.hpp"

namespace {

using namespace lowbit;
using lowbit_fuzz::input;

constexpr std::size_t guard = 8;

std::size_t read_block_size(input& in) {
  static const std::size_t sizes[] = {32, 32, 32, 32, 16, 64, 8, 2, 1, 0, 3, 48, 128, std::size_t{1} << 32,
                                      std::size_t{1} << 62, static_cast<std::size_t>(-1)};
  const std::uint8_t k = in.u8();
  return k < 240 ? sizes[k % 16] : in.u16();
}

mx_options read_options(input& in) {
  mx_options o;
  o.block_size = read_block_size(in);
  const std::uint8_t rule = in.u8();
  o.scale_rule = static_cast<e8m0_rule>(rule < 250 ? rule % 3 : rule);
  const std::uint8_t rm = in.u8();
  o.element_rounding = static_cast<rounding>(rm < 240 ? rm % 6 : rm);
  o.signed_zero = in.flag();
  o.non_finite_is_error = in.flag();
  return o;
}

template <class Src>
std::vector<Src> read_values(input& in, std::size_t n) {
  std::vector<float> f = in.floats(n);
  if constexpr (std::is_same<Src, float>::value) {
    return f;
  } else {
    std::vector<Src> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = encode<Src>(f[i]);
    return v;
  }
}

using outputs = lowbit_fuzz::block_outputs;

template <class Fmt, class Src>
void check(input& in) {
  const mx_options o = read_options(in);
  const lowbit_fuzz::shape sh = lowbit_fuzz::read_shape(in, o.block_size, sizeof(Src));
  const unsigned mode = in.u8() % 10u;
  const result<storage> st = mx_storage_for<Fmt>(sh.fake ? 1 : sh.rows, sh.fake ? 0 : sh.cols, o);
  const bool options_ok = mx_storage_for<Fmt>(0, 0, o).ok();

  if (sh.fake) {
    // Never allocated: the call must fail on the options or the shape before touching memory.
    const status s = mx_quantize_matrix<Fmt>(lowbit_fuzz::fake_pointer<const Src>(), sh.rows, sh.cols, o,
                                             lowbit_fuzz::fake_pointer<std::uint8_t>(),
                                             lowbit_fuzz::fake_pointer<std::uint8_t>() + 4096);
    LOWBIT_FUZZ_CHECK(!s.ok(), "shape %zu x %zu (block %zu) accepted", sh.rows, sh.cols, o.block_size);
    const status d = mx_dequantize_matrix<Fmt>(lowbit_fuzz::fake_pointer<const std::uint8_t>(),
                                               lowbit_fuzz::fake_pointer<const std::uint8_t>() + 4096, sh.rows,
                                               sh.cols, o, lowbit_fuzz::fake_pointer<float>() + 8192);
    LOWBIT_FUZZ_CHECK(!d.ok(), "dequantize: shape %zu x %zu (block %zu) accepted", sh.rows, sh.cols, o.block_size);
    return;
  }

  const std::size_t n = sh.n();
  const std::vector<Src> src = read_values<Src>(in, n);
  const std::size_t e_bytes = st.ok() ? st.value.payload_bytes : 0;
  const std::size_t s_bytes = st.ok() ? st.value.scale_bytes : 0;

  auto run = [&](unsigned m) {
    outputs out;
    out.elements = lowbit_fuzz::canary_buffer<std::uint8_t>(e_bytes + guard);
    out.scales = lowbit_fuzz::canary_buffer<std::uint8_t>(s_bytes + guard);
    std::vector<std::uint8_t> raw(n * sizeof(Src) + 1);
    const Src* x = src.data();
    std::uint8_t* e = out.elements.data();
    std::uint8_t* s = out.scales.data();
    if (m == 4) x = nullptr;
    if (m == 5) (in.flag() ? e : s) = nullptr;
    if (m == 6 && sizeof(Src) > 1) {
      if (n != 0) std::memcpy(raw.data() + 1, src.data(), n * sizeof(Src));
      x = reinterpret_cast<const Src*>(raw.data() + 1);
    }
    if (m == 7 && e_bytes > 0 && s_bytes > 0) s = e + (e_bytes > 1 ? 1 : 0);
    out.st = mx_quantize_matrix<Fmt>(x, sh.rows, sh.cols, o, e, s);
    return out;
  };

  if (!st.ok()) {
    const outputs out = run(0);
    LOWBIT_FUZZ_CHECK(out.st.code() == st.status.code(), "quantize says %s, mx_storage_for %s", out.st.message(),
                      st.status.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(out.elements) && lowbit_fuzz::untouched(out.scales),
                      "an options or shape error (%s) wrote", out.st.message());
    return;
  }
  LOWBIT_FUZZ_CHECK(options_ok, "mx_storage_for accepts a shape with options it rejects on an empty one");

  if (n > 0 && mode >= 4 && mode <= 7 && !(mode == 6 && sizeof(Src) == 1) && !(mode == 7 && (e_bytes == 0 || s_bytes == 0))) {
    const outputs out = run(mode);
    const errc want = mode == 6 ? errc::misaligned : mode == 7 ? errc::overlapping_buffers : errc::bad_argument;
    LOWBIT_FUZZ_CHECK(out.st.code() == want, "buffer mode %u: %s, expected %s", mode, out.st.message(),
                      lowbit::message(want));
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(out.elements) && lowbit_fuzz::untouched(out.scales),
                      "buffer mode %u wrote", mode);
    return;
  }

  if (mode == 8) {  // run-time dispatch with an enumerator out of range
    const auto f = static_cast<mx_format>(6 + in.below(250));
    std::vector<std::uint8_t> e = lowbit_fuzz::canary_buffer<std::uint8_t>(e_bytes + guard);
    std::vector<std::uint8_t> s = lowbit_fuzz::canary_buffer<std::uint8_t>(s_bytes + guard);
    const status r = mx_quantize_matrix(f, src.data(), sh.rows, sh.cols, o, e.data(), s.data());
    LOWBIT_FUZZ_CHECK(r.code() == errc::bad_argument, "mx_format %u: %s", static_cast<unsigned>(f), r.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::untouched(e) && lowbit_fuzz::untouched(s), "a bad mx_format wrote");
    return;
  }

  const auto both = lowbit_fuzz::on_both_paths([&] { return run(0); });
  const outputs& ref = both.first;
  const outputs& simd = both.second;
  LOWBIT_FUZZ_CHECK(ref.st.ok() || (ref.st.code() == errc::non_finite_input && o.non_finite_is_error),
                    "valid call (%zu x %zu, block %zu) failed: %s", sh.rows, sh.cols, o.block_size, ref.st.message());
  if (!lowbit_fuzz::check_block_quantize(ref, simd, e_bytes, s_bytes, guard, n)) return;
  // Where the best path is AVX-512, the AVX2 path too (on_both_paths ran scalar and the best).
  const bool also_avx2 = active_isa() == isa::avx512;
  if (also_avx2) {
    const outputs v2 = [&] {
      const scoped_isa s{isa::avx2};
      return run(0);
    }();
    (void)lowbit_fuzz::check_block_quantize(ref, v2, e_bytes, s_bytes, guard, n);
  }

  // Dequantize, both paths; then quantize again.
  auto dequant = [&] {
    std::vector<float> y = lowbit_fuzz::canary_buffer<float>(n + guard);
    const status s = mx_dequantize_matrix<Fmt>(ref.elements.data(), ref.scales.data(), sh.rows, sh.cols, o, y.data());
    LOWBIT_FUZZ_CHECK(s.ok(), "dequantize of valid codes: %s", s.message());
    return y;
  };
  const auto ys = lowbit_fuzz::on_both_paths(dequant);
  LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, ys.second), "dequantize: SIMD differs at %zu",
                    lowbit_fuzz::first_difference(ys.first, ys.second));
  if (also_avx2) {
    const std::vector<float> y2 = [&] {
      const scoped_isa s{isa::avx2};
      return dequant();
    }();
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(ys.first, y2), "dequantize: AVX2 differs at %zu",
                      lowbit_fuzz::first_difference(ys.first, y2));
  }
  for (std::size_t i = n; i < n + guard; ++i)
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::float_bits(ys.first[i]) == 0xA5A5A5A5u, "dequantize wrote past n");
  if (o.scale_rule == e8m0_rule::floor && std::is_same<Src, float>::value) {
    mx_options again_o = o;
    again_o.non_finite_is_error = false;
    std::vector<std::uint8_t> e2 = lowbit_fuzz::canary_buffer<std::uint8_t>(e_bytes + guard);
    std::vector<std::uint8_t> s2 = lowbit_fuzz::canary_buffer<std::uint8_t>(s_bytes + guard);
    const status r = mx_quantize_matrix<Fmt>(ys.first.data(), sh.rows, sh.cols, again_o, e2.data(), s2.data());
    LOWBIT_FUZZ_CHECK(r.ok(), "quantizing dequantized values: %s", r.message());
    LOWBIT_FUZZ_CHECK(lowbit_fuzz::same_bytes(e2, ref.elements) && lowbit_fuzz::same_bytes(s2, ref.scales),
                      "quantize(dequantize(q)) != q: elements differ at %zu, scales at %zu",
                      lowbit_fuzz::first_difference(e2, ref.elements), lowbit_fuzz::first_difference(s2, ref.scales));
  }
}

template <class Fmt>
void check_format(input& in) {
  if (in.flag()) {
    check<Fmt, float>(in);
  } else {
    check<Fmt, bfloat16>(in);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  switch (in.below(6)) {
    case 0: check_format<mxfp8_e4m3>(in); break;
    case 1: check_format<mxfp8_e5m2>(in); break;
    case 2: check_format<mxfp6_e2m3>(in); break;
    case 3: check_format<mxfp6_e3m2>(in); break;
    case 4: check_format<mxfp4_e2m1>(in); break;
    default: check_format<mxint8>(in); break;
  }
  return 0;
}
