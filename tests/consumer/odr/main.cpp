#include <lowbit/lowbit.hpp>

float round_trip_in_other_tu(float x);

// Same instantiations as other.cpp, so the linker sees each twice.
int main() {
  const float here = lowbit::decode(lowbit::encode<lowbit::float8_e4m3fn>(1.5f));
  const float there = round_trip_in_other_tu(1.5f);
  return here == 1.5f && there == 1.5f ? 0 : 1;
}
