// lowbit: the value types. Each is a thin alias of minifloat<spec>; see formats/spec.hpp.
#ifndef LOWBIT_FORMATS_TYPES_HPP
#define LOWBIT_FORMATS_TYPES_HPP

#include "minifloat.hpp"
#include "spec.hpp"

namespace lowbit {

using float8_e4m3fn = minifloat<formats::e4m3fn>;      // OCP FP8 E4M3: max 448, NaN 0x7F/0xFF, no Inf
using float8_e5m2 = minifloat<formats::e5m2>;          // OCP FP8 E5M2: max 57344, IEEE Inf/NaN
using float8_e4m3fnuz = minifloat<formats::e4m3fnuz>;  // bias 8: max 240, NaN 0x80, no -0
using float8_e5m2fnuz = minifloat<formats::e5m2fnuz>;  // bias 16: max 57344, NaN 0x80, no -0
using float6_e2m3fn = minifloat<formats::e2m3fn>;      // OCP MX FP6 E2M3: max 7.5, no Inf/NaN
using float6_e3m2fn = minifloat<formats::e3m2fn>;      // OCP MX FP6 E3M2: max 28, no Inf/NaN
using float4_e2m1fn = minifloat<formats::e2m1fn>;      // OCP MX FP4 E2M1: max 6, no Inf/NaN
using float8_e8m0fnu = minifloat<formats::e8m0fnu>;    // OCP MX scale: 2^(e-127), NaN 0xFF, no zero/sign
using float16 = minifloat<formats::binary16>;          // IEEE binary16 (storage and conversion only)
using bfloat16 = minifloat<formats::bfloat16>;         // bfloat16 (storage and conversion only)

}  // namespace lowbit

#endif  // LOWBIT_FORMATS_TYPES_HPP
