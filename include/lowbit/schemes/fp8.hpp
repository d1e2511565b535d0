// lowbit: scaled FP8, the way engines use FP8 for weights and activations.
//
// A [rows, cols] row-major matrix is cut into blocks, each with one float scale s:
//
//   s   = amax(block) * headroom / max_finite(T)      rounded once to the scale's storage format
//   q_i = T(x_i / s)                                   (or x_i * (1/s), see scale_application)
//   x_i ~= decode(q_i) * s                             s is the multiplier the reader applies
//
// T is an 8-bit float type: float8_e4m3fn (max 448) or float8_e5m2 (max 57344), and the FNUZ
// variants (float8_e4m3fnuz, max 240, is what ROCm engines use). The blocks:
//
//   per_tensor    one scale                              [1, 1]
//   per_channel   one per row of a [out, in] weight      [rows, 1]
//   per_token     one per row of a [tokens, features]    [rows, 1]   (dynamic activations)
//   per_block     block_rows x block_cols tiles          [ceil(rows/br), ceil(cols/bc)]
//                 (DeepSeek-V3: 1 x 128 for activations, 128 x 128 for weights; the last
//                 block of a row or column may be partial)
//
// Dynamic scales (fp8_quantize) are computed from each block's amax in the same call: for
// per_token the row's amax pass and its quantization run back to back while the row is in cache.
// Static scales (fp8_quantize_fixed) are the caller's: from a calibration amax through
// fp8_scale_from_amax, or read from a checkpoint. docs/fp8-scaling.md has the engine conventions
// (which engine stores s, which its reciprocal, under which name) and a worked example.
//
// Scale rules, every one an option (fp8_options):
//  - headroom h (default 1): s = amax * h / max. TransformerEngine's margin m is h = 2^m.
//  - min_amax (default 0): amax is raised to it first (vLLM's and FBGEMM's epsilon).
//  - the product amax * h is exact in double, divided by max in double and rounded once to the
//    storage format (fp32, fp16, bf16): with h = 1 and fp32, s is the float32 quotient amax / max
//    that PyTorch recipes compute; power_of_two_scales rounds the exact quotient up to a power of
//    two instead (DeepSeek-V3.1's UE8M0 scales; exact in E8M0, see fp8_scales_to_e8m0).
//  - a block of zeros (amax 0 after min_amax) gets s = 1: its codes are zeros and every reader,
//    whether it multiplies by s or divides by it, gets zeros back, never 0/0.
//  - a scale below the storage format's smallest value whose float32 is normal (fp32 and bf16:
//    2^-126; fp16: 2^-24) is raised to it, so no reader that flushes subnormals sees a zero scale.
//  - a scale beyond the storage format (fp16 above 65504) is errc::scale_overflow.
//
// Elements are encoded with the conversion codec (formats/codec.hpp) under element_overflow and
// element_rounding: with overflow::saturate a value beyond max (possible with headroom < 1 or a
// static scale) becomes +-max; with overflow::non_saturate it becomes Inf (E5M2) or NaN
// (E4M3FN). NaN and Inf cannot get a dynamic scale (errc::non_finite_input); under a static
// scale they are encoded as convert() encodes them.
//
// Determinism: x / s and decode(q) * s are IEEE float operations, run in the default environment
// whatever the caller's MXCSR (kernels/fp_env.hpp); the AVX2 kernels give the scalar reference's
// bytes. Calls follow docs/api.md: f(inputs, shape, options, outputs, random_bits), checks in the
// order options -> shape -> n = 0 (ok) -> buffers -> data, nothing written before a data error,
// and blocks before a failing block written (in row-major order of the scale grid).
#ifndef LOWBIT_SCHEMES_FP8_HPP
#define LOWBIT_SCHEMES_FP8_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/bits.hpp"
#include "../core/checks.hpp"
#include "../core/cpu.hpp"
#include "../core/rounding.hpp"
#include "../core/span.hpp"
#include "../core/status.hpp"
#include "../formats/limits.hpp"
#include "../formats/types.hpp"
#include "../kernels/fp8/avx2.hpp"
#include "../kernels/fp8/avx512.hpp"
#include "../kernels/fp8/scalar.hpp"
#include "../kernels/fp_env.hpp"
#include "../kernels/integer/reference.hpp"
#include "export.hpp"
#include "layouts/bitstream.hpp"
#include "storage.hpp"

namespace lowbit {

// ---------------------------------------------------------------------------------------------
// Options

enum class fp8_granularity : std::uint8_t { per_tensor, per_channel, per_token, per_block };

// The options of every scaled-FP8 call; the same object goes to the quantizer and the
// dequantizer. Validated first (check_fp8_options): block_rows and block_cols must both be set
// (>= 1) for per_block and both 0 otherwise (errc::bad_block_size); an enumerator out of range,
// a headroom that is not finite and > 0, or a min_amax that is not finite and >= 0 is
// errc::bad_argument.
struct fp8_options {
  fp8_granularity granularity = fp8_granularity::per_tensor;
  std::size_t block_rows = 0;  // per_block only
  std::size_t block_cols = 0;  // per_block only
  float headroom = 1.0f;       // s = amax * headroom / max
  float min_amax = 0.0f;       // amax = max(amax, min_amax) before the scale is computed
  scale_storage scale_format = scale_storage::fp32;
  bool power_of_two_scales = false;  // round s up to 2^k (UE8M0 scales)
  scale_application application = scale_application::divide;
  overflow element_overflow = overflow::saturate;
  rounding element_rounding = rounding::nearest_even;
};

// Named settings. Every one takes dynamic or static scales alike (the call decides).
namespace fp8_presets {
// One float32 scale for the tensor, amax / max: PyTorch's float8 recipes (tensorwise),
// compressed-tensors' "tensor" strategy, ModelOpt and vLLM per-tensor FP8.
inline fp8_options per_tensor() noexcept { return fp8_options{}; }
// One scale per output channel (row) of a weight: compressed-tensors' "channel" strategy.
inline fp8_options per_channel() noexcept {
  fp8_options o;
  o.granularity = fp8_granularity::per_channel;
  return o;
}
// One dynamic scale per token (row) of an activation: vLLM's dynamic per-token FP8, PyTorch's
// rowwise recipe.
inline fp8_options per_token() noexcept {
  fp8_options o;
  o.granularity = fp8_granularity::per_token;
  return o;
}
// block_rows x block_cols tiles.
inline fp8_options blockwise(std::size_t block_rows, std::size_t block_cols) noexcept {
  fp8_options o;
  o.granularity = fp8_granularity::per_block;
  o.block_rows = block_rows;
  o.block_cols = block_cols;
  return o;
}
// DeepSeek-V3's recipe: weights in 128 x 128 tiles (the checkpoint's weight_scale_inv, which
// despite its name holds s, the multiplier), activations in 1 x 128 groups per token.
inline fp8_options deepseek_v3_weights() noexcept { return blockwise(128, 128); }
inline fp8_options deepseek_v3_activations() noexcept { return blockwise(1, 128); }
// FBGEMM's rowwise FP8 (quantize_fp8_row): per row, amax raised to 1e-12, x multiplied by the
// float reciprocal of the scale.
inline fp8_options fbgemm_rowwise() noexcept {
  fp8_options o = per_token();
  o.min_amax = 1e-12f;
  o.application = scale_application::multiply_reciprocal;
  return o;
}
}  // namespace fp8_presets

// The options checks of docs/api.md, in its order.
[[nodiscard]] inline status check_fp8_options(const fp8_options& o) noexcept {
  if (static_cast<unsigned>(o.granularity) > 3u) return errc::bad_argument;
  const bool blocks = o.granularity == fp8_granularity::per_block;
  if (blocks ? (o.block_rows == 0 || o.block_cols == 0) : (o.block_rows != 0 || o.block_cols != 0))
    return errc::bad_block_size;
  const bool bad_enum = static_cast<unsigned>(o.scale_format) > 2u || static_cast<unsigned>(o.application) > 1u ||
                        static_cast<unsigned>(o.element_overflow) > 1u ||
                        static_cast<unsigned>(o.element_rounding) > 5u;
  const bool bad_value = !(o.headroom > 0.0f && o.headroom < std::numeric_limits<float>::infinity()) ||
                         !(o.min_amax >= 0.0f && o.min_amax < std::numeric_limits<float>::infinity());
  if (bad_enum || bad_value) return errc::bad_argument;
  return status{};
}

// ---------------------------------------------------------------------------------------------
// Shape

// How a [rows, cols] matrix is cut: blocks of block_rows x block_cols elements (the last row and
// column of blocks may be partial), and the scale grid [scale_rows, scale_cols], row-major.
struct fp8_blocking {
  std::size_t block_rows = 0;
  std::size_t block_cols = 0;
  std::size_t scale_rows = 0;
  std::size_t scale_cols = 0;
  std::size_t scale_count() const noexcept { return scale_rows * scale_cols; }
};

// Validates o for a [rows, cols] matrix and gives its blocking. Errors: check_fp8_options';
// rows * cols, or its bytes as float, beyond what an object can hold -> bad_argument. An empty
// matrix is ok, with no scales.
[[nodiscard]] inline result<fp8_blocking> fp8_blocks(const fp8_options& o, std::size_t rows, std::size_t cols) noexcept {
  result<fp8_blocking> r;
  if (status s = check_fp8_options(o); !s) {
    r.status = s;
    return r;
  }
  std::size_t n = 0;
  if (status s = detail::checked_shape(rows, cols, sizeof(float), &n); !s) {
    r.status = s;
    return r;
  }
  if (n == 0) return r;
  fp8_blocking& b = r.value;
  switch (o.granularity) {
    case fp8_granularity::per_tensor: b.block_rows = rows, b.block_cols = cols; break;
    case fp8_granularity::per_channel:
    case fp8_granularity::per_token: b.block_rows = 1, b.block_cols = cols; break;
    case fp8_granularity::per_block:
      b.block_rows = o.block_rows < rows ? o.block_rows : rows;
      b.block_cols = o.block_cols < cols ? o.block_cols : cols;
      break;
  }
  b.scale_rows = (rows - 1) / b.block_rows + 1;
  b.scale_cols = (cols - 1) / b.block_cols + 1;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Scales

namespace detail {
template <class T>
struct is_fp8 : std::integral_constant<bool, is_minifloat<T>::value && T::format::bits == 8 && T::format::is_signed> {};

template <class From>
struct is_fp8_source : std::integral_constant<bool, std::is_same<From, float>::value ||
                                                        std::is_same<From, bfloat16>::value ||
                                                        std::is_same<From, float16>::value> {};

template <class Dst>
struct is_fp8_destination : is_fp8_source<Dst> {};

template <class T>
inline double fp8_max() noexcept {
  return static_cast<double>(static_cast<float>(std::numeric_limits<T>::max()));
}

// The smallest scale a computed one is raised to: the least positive value of the storage
// format whose float32 is normal.
inline float fp8_min_scale(scale_storage f) noexcept {
  return f == scale_storage::fp16 ? 0x1p-24f : 0x1p-126f;
}

// How many of s[0, nb), counted from the first, are scales the format holds and the scheme
// accepts (finite, at least 2^-126, exact in the storage format, a power of two when the options
// ask for one). The storage switch is taken once per run of scales, not per scale (a 1 x 128
// blocking checks a scale every 128 values).
inline std::size_t fp8_good_scales(const float* s, std::size_t nb, const fp8_options& o) noexcept {
  const std::uint32_t fraction = o.power_of_two_scales ? 0x007FFFFFu : 0u;
  const auto held = [fraction](float x) {
    const std::uint32_t u = lowbit::detail::bit_cast<std::uint32_t>(x);
    return u - 0x00800000u < 0x7F000000u && (u & fraction) == 0;  // 2^-126 <= x <= FLT_MAX
  };
  std::size_t i = 0;
  switch (o.scale_format) {
    case scale_storage::fp32:
      while (i < nb && held(s[i])) ++i;
      break;
    case scale_storage::fp16:
      while (i < nb && held(s[i]) && static_cast<float>(encode<float16>(s[i])) == s[i]) ++i;
      break;
    case scale_storage::bf16:
      while (i < nb && held(s[i]) && static_cast<float>(encode<bfloat16>(s[i])) == s[i]) ++i;
      break;
  }
  return i;
}

// amax raised to o.min_amax: the magnitude a block's scale is computed from (0: a block of zeros,
// whose scale is 1).
inline float fp8_raised_amax(float amax, const fp8_options& o) noexcept {
  return amax > o.min_amax ? amax : o.min_amax;
}

// fp8_scale's quotient: the raised amax times the headroom over T's largest value, in double (the
// product of two floats is exact in double; the quotient rounds once).
template <class T>
inline double fp8_quotient(float amax, const fp8_options& o) noexcept {
  return static_cast<double>(fp8_raised_amax(amax, o)) * static_cast<double>(o.headroom) / fp8_max<T>();
}

// q as an fp32 scale: from the midpoint of FLT_MAX and 2^128 on, Inf (the conversion of a double
// beyond float's range is undefined in C++).
inline float fp8_fp32_scale(double q) noexcept {
  return q < 0x1.ffffffp+127 ? static_cast<float>(q) : std::numeric_limits<float>::infinity();
}

// The scale of a block whose largest magnitude is amax (finite, >= 0); o already checked.
template <class T>
inline result<float> fp8_scale(float amax, const fp8_options& o) noexcept {
  result<float> r;
  if (fp8_raised_amax(amax, o) == 0.0f) {
    r.value = 1.0f;
    return r;
  }
  double q = fp8_quotient<T>(amax, o);
  if (o.power_of_two_scales) {
    int e = 0;
    const double m = std::frexp(q, &e);  // q = m * 2^e, m in [0.5, 1)
    q = std::ldexp(1.0, m == 0.5 ? e - 1 : e);
  }
  float s = 0.0f;
  switch (o.scale_format) {
    case scale_storage::fp32: s = fp8_fp32_scale(q); break;
    case scale_storage::fp16: s = static_cast<float>(encode<float16>(q, overflow::non_saturate)); break;
    case scale_storage::bf16: s = static_cast<float>(encode<bfloat16>(q, overflow::non_saturate)); break;
  }
  if (!(s <= std::numeric_limits<float>::max())) {
    r.status = errc::scale_overflow;
    return r;
  }
  const float least = fp8_min_scale(o.scale_format);
  r.value = s < least ? least : s;
  return r;
}

// The scales of nb blocks from their largest magnitudes' bits (fp8_amax_tile) into s, up to the
// first block that has none: returns how many were written, and the first error (NaN or Inf
// -> non_finite_input, fp8_scale's scale_overflow) in *error. With fp32 scales that are not
// powers of two (the common case) every block's scale is computed first, without a branch, so
// that their divisions overlap: FP8 E4M3 dynamic 1 x 128 in cache (4 x 4096, Zen 5, medians of
// eight alternating runs) 5.26 -> 5.61 G elem/s on AVX-512 and 3.52 -> 3.70 on AVX2, against
// fp8_scale block by block.
template <class T>
inline std::size_t fp8_chunk_scales(const std::uint32_t* amax, std::size_t nb, const fp8_options& o, float* s,
                                    status* error) noexcept {
  std::size_t good = 0;
  if (o.scale_format == scale_storage::fp32 && !o.power_of_two_scales) {
    const float least = fp8_min_scale(scale_storage::fp32);
    for (std::size_t j = 0; j < nb; ++j) {  // (NaN and Inf amax give some value, not kept)
      const float x = lowbit::detail::bit_cast<float>(amax[j]);
      const float v = fp8_fp32_scale(fp8_quotient<T>(x, o));
      s[j] = fp8_raised_amax(x, o) == 0.0f ? 1.0f : v < least ? least : v;
    }
    while (good < nb && amax[good] < 0x7F800000u && s[good] <= std::numeric_limits<float>::max()) ++good;
    if (good < nb) *error = amax[good] >= 0x7F800000u ? errc::non_finite_input : errc::scale_overflow;
    return good;
  }
  for (; good < nb; ++good) {
    if (amax[good] >= 0x7F800000u) {
      *error = errc::non_finite_input;
      break;
    }
    const result<float> sc = fp8_scale<T>(lowbit::detail::bit_cast<float>(amax[good]), o);
    if (!sc.ok()) {
      *error = sc.status;
      break;
    }
    s[good] = sc.value;
  }
  return good;
}
}  // namespace detail

// The scale that fp8_quantize computes for a block whose largest magnitude is amax: for static
// scaling from a calibration amax. Errors: the options errors; NaN or Inf amax ->
// non_finite_input; a negative amax -> bad_argument; a scale beyond its storage format ->
// scale_overflow.
template <class T, std::enable_if_t<detail::is_fp8<T>::value, int> = 0>
[[nodiscard]] inline result<float> fp8_scale_from_amax(float amax, const fp8_options& o) noexcept {
  result<float> r;
  if (status s = check_fp8_options(o); !s) {
    r.status = s;
    return r;
  }
  if (!std::isfinite(amax)) {
    r.status = errc::non_finite_input;
    return r;
  }
  if (amax < 0.0f) {
    r.status = errc::bad_argument;
    return r;
  }
  return detail::fp8_scale<T>(amax, o);
}

// ---------------------------------------------------------------------------------------------
// Kernels: the tile functions of the active path.

namespace detail {

template <class From>
inline void fp8_amax_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t bc,
                          std::uint32_t* amax) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (use_avx512()) return kernels::fp8_avx512::amax_tile(x, ld, rows, cols, bc, amax);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2()) return kernels::fp8_avx2::amax_tile(x, ld, rows, cols, bc, amax);
#endif
  kernels::fp8_ref::amax_tile(x, ld, rows, cols, bc, amax);
}

// traffic: whether the whole call moves at least stream_threshold_bytes (non-temporal stores),
// and whether it reads its source twice (kernels::fp8_traffic).
template <class T, class From>
inline void fp8_quantize_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t bc,
                              const float* scales, const fp8_options& o, const std::uint32_t* rb, T* q,
                              kernels::fp8_traffic traffic) noexcept {
  policy p;
  p.ov = o.element_overflow;
  p.rm = o.element_rounding;
#if LOWBIT_HAS_AVX512_KERNELS
  if (use_avx512())  // hands what it does not cover to the AVX2 kernel
    return kernels::fp8_avx512::quantize_tile(x, ld, rows, cols, bc, scales, o.application, p, rb, q, traffic);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2())
    return kernels::fp8_avx2::quantize_tile(x, ld, rows, cols, bc, scales, o.application, p, rb, q, traffic);
#else
  (void)traffic;
#endif
  kernels::fp8_ref::quantize_tile(x, ld, rows, cols, bc, scales, o.application, p, rb, q);
}

// stream: the whole call writes at least stream_threshold_bytes of float (non-temporal stores).
template <class T, class Dst>
inline void fp8_dequantize_tile(const T* q, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t bc,
                                const float* scales, Dst* y, bool stream) noexcept {
#if LOWBIT_HAS_AVX512_KERNELS
  if (use_avx512()) return kernels::fp8_avx512::dequantize_tile(q, ld, rows, cols, bc, scales, y, stream);
#endif
#if LOWBIT_HAS_AVX2_KERNELS
  if (use_avx2()) return kernels::fp8_avx2::dequantize_tile(q, ld, rows, cols, bc, scales, y, stream);
#else
  (void)stream;
#endif
  kernels::fp8_ref::dequantize_tile(q, ld, rows, cols, bc, scales, y);
}

// The scale blocks are visited a band of block rows at a time, up to fp8_chunk blocks of the
// band at once: run(r0, nr, c0, nc, j0, nb) does rows [r0, r0 + nr) x columns [c0, c0 + nc),
// which are blocks j0 .. j0 + nb - 1 of the band's scale row, and returns the status of the
// first failing block (with the blocks before it done) or ok.
constexpr std::size_t fp8_chunk = 64;

template <class Run>
inline status fp8_for_each_chunk(const fp8_blocking& b, std::size_t rows, std::size_t cols, Run run) noexcept {
  for (std::size_t bi = 0; bi < b.scale_rows; ++bi) {
    const std::size_t r0 = bi * b.block_rows;
    const std::size_t nr = rows - r0 < b.block_rows ? rows - r0 : b.block_rows;
    for (std::size_t j0 = 0; j0 < b.scale_cols; j0 += fp8_chunk) {
      const std::size_t nb = b.scale_cols - j0 < fp8_chunk ? b.scale_cols - j0 : fp8_chunk;
      const std::size_t c0 = j0 * b.block_cols;
      const std::size_t nc = cols - c0 < nb * b.block_cols ? cols - c0 : nb * b.block_cols;
      if (status s = run(r0, nr, c0, nc, bi * b.scale_cols + j0, nb); !s) return s;
    }
  }
  return status{};
}

// The columns of the first `good` blocks of a chunk starting at c0 with nc columns.
inline std::size_t fp8_good_cols(std::size_t good, std::size_t block_cols, std::size_t nc) noexcept {
  return good * block_cols < nc ? good * block_cols : nc;
}

// What every bulk call checks first: options, shape (and n = 0).
struct fp8_call {
  fp8_blocking b;
  std::size_t n = 0;
};
inline result<fp8_call> fp8_call_shape(const fp8_options& o, std::size_t rows, std::size_t cols) noexcept {
  result<fp8_call> r;
  const result<fp8_blocking> b = fp8_blocks(o, rows, cols);
  if (!b.ok()) {
    r.status = b.status;
    return r;
  }
  r.value.b = b.value;
  r.value.n = rows * cols;
  return r;
}

inline const std::uint32_t* fp8_rounding_bits(const fp8_options& o, const std::uint32_t* random_bits) noexcept {
  return o.element_rounding == rounding::stochastic ? random_bits : nullptr;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Bulk calls

// Quantizes src [rows, cols] (float, bfloat16 or float16) with dynamic scales: elements gets
// rows*cols codes of T, scales fp8_blocks().scale_count() scales ([scale_rows, scale_cols]
// row-major). random_bits: rows*cols values for rounding::stochastic (null: all zero), else
// ignored.
// Errors, in order: the options and shape errors of fp8_blocks; n = 0 -> ok, nothing written; a
// null, misaligned or overlapping buffer -> bad_argument, misaligned, overlapping_buffers
// (nothing written); NaN or Inf in a block -> non_finite_input; a scale beyond its storage
// format -> scale_overflow (blocks before the failing one written).
template <class T, class From,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_source<From>::value, int> = 0>
[[nodiscard]] inline status fp8_quantize(const From* src, std::size_t rows, std::size_t cols, const fp8_options& o,
                                         T* elements, float* scales,
                                         const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::fp8_call> c = detail::fp8_call_shape(o, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const fp8_blocking& b = c.value.b;
  const std::uint32_t* rb = detail::fp8_rounding_bits(o, random_bits);
  if (status s = detail::check_buffers({detail::buffer_of(src, n), detail::buffer_of(rb, rb != nullptr ? n : 0)},
                                       {detail::buffer_of(elements, n), detail::buffer_of(scales, b.scale_count())});
      !s)
    return s;
  const kernels::ieee_scope env;  // same bytes whatever the caller's MXCSR
  const kernels::fp8_traffic traffic = n * (sizeof(From) + 1) >= kernels::fp8_stream_threshold_bytes
                                           ? kernels::fp8_traffic::streamed_twice
                                           : kernels::fp8_traffic::cached;
  return detail::fp8_for_each_chunk(
      b, rows, cols,
      [&](std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc, std::size_t j0, std::size_t nb) -> status {
        std::uint32_t amax[detail::fp8_chunk] = {};
        const std::size_t at = r0 * cols + c0;
        detail::fp8_amax_tile(src + at, cols, nr, nc, b.block_cols, amax);
        float s[detail::fp8_chunk];
        status error;
        const std::size_t good = detail::fp8_chunk_scales<T>(amax, nb, o, s, &error);
        if (good != 0) {
          detail::fp8_quantize_tile(src + at, cols, nr, detail::fp8_good_cols(good, b.block_cols, nc), b.block_cols, s, o,
                                    rb != nullptr ? rb + at : nullptr, elements + at, traffic);
          for (std::size_t j = 0; j < good; ++j) scales[j0 + j] = s[j];
        }
        return error;
      });
}

// Quantizes src against given scales (static scaling: a calibration's, or a checkpoint's), laid
// out as fp8_quantize writes them. Errors: those of fp8_quantize before the data; then, per
// block, a scale that is not finite, below 2^-126, inexact in o.scale_format, or (with
// power_of_two_scales) not a power of two -> bad_argument (blocks before it written). NaN and Inf
// in src are encoded as convert() encodes them.
template <class T, class From,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_source<From>::value, int> = 0>
[[nodiscard]] inline status fp8_quantize_fixed(const From* src, const float* scales, std::size_t rows, std::size_t cols,
                                               const fp8_options& o, T* elements,
                                               const std::uint32_t* random_bits = nullptr) noexcept {
  const result<detail::fp8_call> c = detail::fp8_call_shape(o, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const fp8_blocking& b = c.value.b;
  const std::uint32_t* rb = detail::fp8_rounding_bits(o, random_bits);
  if (status s = detail::check_buffers({detail::buffer_of(src, n), detail::buffer_of(scales, b.scale_count()),
                                        detail::buffer_of(rb, rb != nullptr ? n : 0)},
                                       {detail::buffer_of(elements, n)});
      !s)
    return s;
  const kernels::ieee_scope env;
  const kernels::fp8_traffic traffic = n * (sizeof(From) + 1) >= kernels::fp8_stream_threshold_bytes
                                           ? kernels::fp8_traffic::streamed
                                           : kernels::fp8_traffic::cached;
  return detail::fp8_for_each_chunk(
      b, rows, cols,
      [&](std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc, std::size_t j0, std::size_t nb) -> status {
        const std::size_t good = detail::fp8_good_scales(scales + j0, nb, o);
        const std::size_t at = r0 * cols + c0;
        if (good != 0)
          detail::fp8_quantize_tile(src + at, cols, nr, detail::fp8_good_cols(good, b.block_cols, nc), b.block_cols,
                                    scales + j0, o, rb != nullptr ? rb + at : nullptr, elements + at, traffic);
        return good == nb ? status{} : status{errc::bad_argument};
      });
}

// dst = decode(elements) * scale, as float32, or as bfloat16 / float16 rounded to nearest even
// (saturating; NaN the all-ones NaN), as encode() rounds by default. Errors: those of
// fp8_quantize before the data; a scale fp8_quantize_fixed would reject -> bad_argument (blocks
// before it written).
template <class T, class Dst,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_destination<Dst>::value, int> = 0>
[[nodiscard]] inline status fp8_dequantize(const T* elements, const float* scales, std::size_t rows, std::size_t cols,
                                           const fp8_options& o, Dst* dst) noexcept {
  const result<detail::fp8_call> c = detail::fp8_call_shape(o, rows, cols);
  if (!c.ok()) return c.status;
  const std::size_t n = c.value.n;
  if (n == 0) return status{};
  const fp8_blocking& b = c.value.b;
  if (status s = detail::check_buffers({detail::buffer_of(elements, n), detail::buffer_of(scales, b.scale_count())},
                                       {detail::buffer_of(dst, n)});
      !s)
    return s;
  const kernels::ieee_scope env;
  const bool stream = n * sizeof(Dst) >= kernels::fp8_stream_threshold_bytes;
  return detail::fp8_for_each_chunk(
      b, rows, cols,
      [&](std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc, std::size_t j0, std::size_t nb) -> status {
        const std::size_t good = detail::fp8_good_scales(scales + j0, nb, o);
        const std::size_t at = r0 * cols + c0;
        if (good != 0)
          detail::fp8_dequantize_tile(elements + at, cols, nr, detail::fp8_good_cols(good, b.block_cols, nc),
                                      b.block_cols, scales + j0, dst + at, stream);
        return good == nb ? status{} : status{errc::bad_argument};
      });
}

// Span forms: every span must hold exactly what the call reads or writes (src, elements, dst:
// rows*cols; scales: fp8_blocks().scale_count(); random_bits: empty or rows*cols), otherwise
// errc::size_mismatch after the options and shape errors.
namespace detail {
inline status fp8_span_sizes(const fp8_options& o, std::size_t rows, std::size_t cols, std::size_t values,
                             std::size_t elements, std::size_t scales, std::size_t random_bits) noexcept {
  const result<fp8_call> c = fp8_call_shape(o, rows, cols);
  if (!c.ok()) return c.status;
  if (values != c.value.n || elements != c.value.n || scales != c.value.b.scale_count() ||
      (random_bits != 0 && random_bits != c.value.n))
    return errc::size_mismatch;
  return status{};
}
}  // namespace detail

template <class T, class From,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_source<From>::value, int> = 0>
[[nodiscard]] inline status fp8_quantize(span<const From> src, std::size_t rows, std::size_t cols, const fp8_options& o,
                                         span<T> elements, span<float> scales,
                                         span<const std::uint32_t> random_bits = {}) noexcept {
  if (status s = detail::fp8_span_sizes(o, rows, cols, src.size(), elements.size(), scales.size(), random_bits.size());
      !s)
    return s;
  return fp8_quantize(src.data(), rows, cols, o, elements.data(), scales.data(), random_bits.data());
}
template <class T, class From,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_source<From>::value, int> = 0>
[[nodiscard]] inline status fp8_quantize_fixed(span<const From> src, span<const float> scales, std::size_t rows,
                                               std::size_t cols, const fp8_options& o, span<T> elements,
                                               span<const std::uint32_t> random_bits = {}) noexcept {
  if (status s = detail::fp8_span_sizes(o, rows, cols, src.size(), elements.size(), scales.size(), random_bits.size());
      !s)
    return s;
  return fp8_quantize_fixed(src.data(), scales.data(), rows, cols, o, elements.data(), random_bits.data());
}
template <class T, class Dst,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_destination<Dst>::value, int> = 0>
[[nodiscard]] inline status fp8_dequantize(span<const T> elements, span<const float> scales, std::size_t rows,
                                           std::size_t cols, const fp8_options& o, span<Dst> dst) noexcept {
  if (status s = detail::fp8_span_sizes(o, rows, cols, dst.size(), elements.size(), scales.size(), 0); !s) return s;
  return fp8_dequantize(elements.data(), scales.data(), rows, cols, o, dst.data());
}

// ---------------------------------------------------------------------------------------------
// Byte accounting and checkpoint tensors

// What a checkpoint stores for a [rows, cols] matrix: one byte per element, one scale per block
// in its storage format (4 bytes for fp32; 2 for fp16 and bf16). (A runtime that keeps
// power-of-two scales as E8M0 bytes stores one byte per scale instead.) Errors: fp8_blocks'.
[[nodiscard]] inline result<storage> fp8_storage_for(const fp8_options& o, std::size_t rows, std::size_t cols) noexcept {
  result<storage> r;
  const result<fp8_blocking> b = fp8_blocks(o, rows, cols);
  if (!b.ok()) {
    r.status = b.status;
    return r;
  }
  r.value.elements = rows * cols;
  r.value.payload_bytes = rows * cols;
  r.value.scale_bytes = b.value.scale_count() * bytes_per_scale(o.scale_format);
  return r;
}

// Power-of-two scales as E8M0 bytes (2^(e - 127) -> e), for runtimes that keep them so (UE8M0).
// Errors: size_mismatch; a scale that is not a power of two in [2^-126, 2^127] -> bad_argument
// (nothing written); overlapping_buffers.
[[nodiscard]] inline status fp8_scales_to_e8m0(span<const float> scales, span<float8_e8m0fnu> dst) noexcept {
  if (scales.size() != dst.size()) return errc::size_mismatch;
  if (status s = detail::check_buffers({detail::buffer_of(scales.data(), scales.size())},
                                       {detail::buffer_of(dst.data(), dst.size())});
      !s)
    return s;
  for (float s : scales) {
    const std::uint32_t bits = lowbit::detail::bit_cast<std::uint32_t>(s);
    if (!(s >= 0x1p-126f && s <= 0x1p127f) || (bits & 0x007FFFFFu) != 0) return errc::bad_argument;
  }
  for (std::size_t i = 0; i < scales.size(); ++i)
    dst[i] = float8_e8m0fnu::from_bits(static_cast<std::uint8_t>(lowbit::detail::bit_cast<std::uint32_t>(scales[i]) >> 23));
  return status{};
}

// The tensors a checkpoint stores for a scaled-FP8 weight [out, in]: weight [out, in] of T and
// weight_scale, the multiplier s, as float32 [scale_rows, scale_cols]: [1, 1] per tensor,
// [out, 1] per channel, [ceil(out/br), ceil(in/bc)] per block. These are compressed-tensors'
// weight_scale and DeepSeek-V3's weight_scale_inv (docs/fp8-scaling.md); a per-tensor scale is
// often stored as a 0-dimensional tensor: same value, shape [].
template <class T>
struct fp8_tensors {
  tensor<T> weight;
  tensor<float> weight_scale;
};

// Quantizes src [rows, cols] with dynamic scales into owned checkpoint tensors. Errors: those
// of fp8_quantize (an empty matrix -> bad_argument: there is no layer to export), out_of_memory.
template <class T, class From,
          std::enable_if_t<detail::is_fp8<T>::value && detail::is_fp8_source<From>::value, int> = 0>
[[nodiscard]] inline result<fp8_tensors<T>> export_fp8(const From* src, std::size_t rows, std::size_t cols,
                                                       const fp8_options& o) noexcept {
  result<fp8_tensors<T>> r;
  const result<fp8_blocking> b = fp8_blocks(o, rows, cols);
  if (!b.ok() || b.value.scale_count() == 0) {
    r.status = b.ok() ? status{errc::bad_argument} : b.status;
    return r;
  }
  if (status s = r.value.weight.allocate(rows, cols); !s) {
    r.status = s;
    return r;
  }
  if (status s = r.value.weight_scale.allocate(b.value.scale_rows, b.value.scale_cols); !s) {
    r.status = s;
    return r;
  }
  r.status = fp8_quantize(src, rows, cols, o, r.value.weight.values().data(), r.value.weight_scale.values().data());
  return r;
}

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_FP8_HPP
