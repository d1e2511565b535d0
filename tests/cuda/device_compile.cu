// Compile-only test (nvcc -c, no GPU needed): the scalar codecs must be
// callable from device code without --expt-relaxed-constexpr.
#include <lowbit/lowbit.hpp>

namespace {

template <class T>
__global__ void round_trip(const float* x, float* decoded, unsigned* bits, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    const T v = lowbit::encode<T>(x[i]);
    const T w = lowbit::encode<T>(x[i], lowbit::overflow::non_saturate,
                                  lowbit::rounding::toward_zero);
    decoded[i] = lowbit::decode(v) + lowbit::decode(w);
    bits[i] = static_cast<unsigned>(v.bits());
  }
}

template <class T>
void launch(const float* x, float* decoded, unsigned* bits, int n) {
  round_trip<T><<<(n + 255) / 256, 256>>>(x, decoded, bits, n);
}

}  // namespace

// Host entry point that instantiates the kernel for each value type.
void lowbit_device_compile(const float* x, float* decoded, unsigned* bits, int n) {
  launch<lowbit::float8_e4m3fn>(x, decoded, bits, n);
  launch<lowbit::float8_e5m2>(x, decoded, bits, n);
  launch<lowbit::float4_e2m1fn>(x, decoded, bits, n);
  launch<lowbit::float8_e8m0fnu>(x, decoded, bits, n);
  launch<lowbit::bfloat16>(x, decoded, bits, n);
  launch<lowbit::float16>(x, decoded, bits, n);
}
