#include <lowbit/lowbit.hpp>

float round_trip_in_other_tu(float x) {
  return lowbit::decode(lowbit::encode<lowbit::float8_e4m3fn>(x));
}
