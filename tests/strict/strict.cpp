// Compiled with -fsyntax-only, strict warnings and -fno-exceptions under each
// standard and compiler (see tests/CMakeLists.txt). Templates are only
// checked when instantiated, so instantiate the public contract for every
// value type.
#include <lowbit/lowbit.hpp>

namespace {

template <class T>
float strict_round_trip(float x) {
  const T saturated = lowbit::encode<T>(x);
  const T non_saturated =
      lowbit::encode<T>(x, lowbit::overflow::non_saturate, lowbit::rounding::toward_zero);
  return lowbit::decode(saturated) + lowbit::decode(non_saturated) +
         static_cast<float>(saturated) + static_cast<float>(T::from_bits(saturated.bits()));
}

}  // namespace

float strict_all_formats(float x) {
  return strict_round_trip<lowbit::float8_e4m3fn>(x) +
         strict_round_trip<lowbit::float8_e5m2>(x) +
         strict_round_trip<lowbit::float8_e4m3fnuz>(x) +
         strict_round_trip<lowbit::float8_e5m2fnuz>(x) +
         strict_round_trip<lowbit::float6_e2m3fn>(x) +
         strict_round_trip<lowbit::float6_e3m2fn>(x) +
         strict_round_trip<lowbit::float4_e2m1fn>(x) +
         strict_round_trip<lowbit::float8_e8m0fnu>(x) +
         strict_round_trip<lowbit::bfloat16>(x) +
         strict_round_trip<lowbit::float16>(x);
}
