// lowbit: the scalar reference of the scaled FP8 scheme (schemes/fp8.hpp). It is the
// straightforward loop, element by element: divide by the block's scale (or multiply by its
// float reciprocal), encode; decode, multiply by the scale. The AVX2 kernels (kernels/fp8/avx2.hpp)
// give the same bytes for every input.
//
// A tile is `rows` rows of `cols` elements, `ld` elements apart, cut into column blocks of
// `block_cols` elements (the last one may be shorter); block j has the scale scales[j]. Callers
// run the kernels inside an IEEE scope (kernels/fp_env.hpp): the divisions and products are IEEE
// float arithmetic in the default environment.
#ifndef LOWBIT_KERNELS_FP8_SCALAR_HPP
#define LOWBIT_KERNELS_FP8_SCALAR_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../core/bits.hpp"
#include "../../core/rounding.hpp"
#include "../../formats/types.hpp"

namespace lowbit {

// How a value meets its block's scale s on the way to its code.
//  divide              x / s: PyTorch's reference recipes, DeepSeek-V3, TransformerEngine.
//  multiply_reciprocal x * r with r = 1.0f / s rounded once to float: vLLM's and FBGEMM's kernels.
// The two differ in the last bit of the quotient for some x, which changes the code where that
// bit decides a rounding (rarely, but not never).
enum class scale_application : std::uint8_t { divide, multiply_reciprocal };

namespace kernels {

// Float outputs of at least this many bytes are written with non-temporal stores on the AVX2
// path (the value of avx2::stream_threshold_bytes, kernels/avx2_common.hpp).
inline constexpr std::size_t fp8_stream_threshold_bytes = std::size_t{16} << 20;

// How a quantizer call moves its source and codes: in cache; streamed (at least
// fp8_stream_threshold_bytes: non-temporal stores, and each run asks for the lines one run
// ahead); or streamed and read twice, the largest magnitudes then the codes (the dynamic
// quantizer, whose runs through a band of tall blocks ask for the band below instead:
// fp8_avx2::detail::run_distance).
enum class fp8_traffic : std::uint8_t { cached, streamed, streamed_twice };

namespace fp8_ref {

// The float32 bit pattern of |x|: ordered as the magnitudes are, NaN above Inf (0x7F800000).
template <class From>
inline std::uint32_t magnitude_bits(From x) noexcept {
  return lowbit::detail::bit_cast<std::uint32_t>(static_cast<float>(x)) & 0x7FFFFFFFu;
}

// Calls f(at, n, j) for each run of one block in the tile: row r, columns [c, c + n) of column
// block j, at = r * ld + c.
template <class F>
inline void for_each_block_run(std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols, F f) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0, j = 0; c < cols; c += block_cols, ++j)
      f(r * ld + c, cols - c < block_cols ? cols - c : block_cols, j);
}

// amax[j] = max(amax[j], the largest magnitude_bits of column block j of the tile).
template <class From>
inline void amax_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols,
                      std::uint32_t* amax) noexcept {
  for_each_block_run(ld, rows, cols, block_cols, [&](std::size_t at, std::size_t n, std::size_t j) {
    std::uint32_t m = amax[j];
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t b = magnitude_bits(x[at + i]);
      m = b > m ? b : m;
    }
    amax[j] = m;
  });
}

// q = encode(x / s) (or x * r, r = 1.0f / s) under p, per column block; random_bits (stochastic
// rounding) is laid out as x (ld apart), or null for all zero.
template <class T, class From>
inline void quantize_tile(const From* x, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols,
                          const float* scales, scale_application a, const policy& p,
                          const std::uint32_t* random_bits, T* q) noexcept {
  for_each_block_run(ld, rows, cols, block_cols, [&](std::size_t at, std::size_t n, std::size_t j) {
    const float s = scales[j];
    const float r = 1.0f / s;
    for (std::size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(x[at + i]);
      const float y = a == scale_application::divide ? v / s : v * r;
      q[at + i] = encode<T>(y, p, random_bits != nullptr ? random_bits[at + i] : 0u);
    }
  });
}

// The output types of a dequantization: float, or bfloat16 / float16 rounded from the float
// product as encode does by default (nearest even, saturating, NaN the canonical all-ones NaN).
inline void store_value(float* y, float v) noexcept { *y = v; }
template <class H>
inline void store_value(H* y, float v) noexcept {
  *y = encode<H>(v);
}

// y = decode(q) * s, per column block.
template <class T, class Dst>
inline void dequantize_tile(const T* q, std::size_t ld, std::size_t rows, std::size_t cols, std::size_t block_cols,
                            const float* scales, Dst* y) noexcept {
  for_each_block_run(ld, rows, cols, block_cols, [&](std::size_t at, std::size_t n, std::size_t j) {
    for (std::size_t i = 0; i < n; ++i) store_value(y + at + i, decode(q[at + i]) * scales[j]);
  });
}

}  // namespace fp8_ref
}  // namespace kernels
}  // namespace lowbit

#endif  // LOWBIT_KERNELS_FP8_SCALAR_HPP
