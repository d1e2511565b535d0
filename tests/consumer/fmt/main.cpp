#include <lowbit/fmt.hpp>
#include <lowbit/lowbit.hpp>

#include <string>

// Values format with float's format spec.
int main() {
  const std::string s = fmt::format("{:g}", lowbit::encode<lowbit::float8_e4m3fn>(1.5f));
  return s == "1.5" ? 0 : 1;
}
