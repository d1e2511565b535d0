#include <lowbit/lowbit.hpp>

// 1.5 is exact in E4M3FN, so the round trip must give it back.
int main() {
  return lowbit::decode(lowbit::encode<lowbit::float8_e4m3fn>(1.5f)) == 1.5f ? 0 : 1;
}
