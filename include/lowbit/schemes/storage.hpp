// lowbit: byte accounting shared by every scheme. Each family's *_storage_for(shape, options)
// returns one of these (int_storage_for, mx_storage_for, nvfp4_storage_for), so a table of
// formats can be printed from one type.
#ifndef LOWBIT_SCHEMES_STORAGE_HPP
#define LOWBIT_SCHEMES_STORAGE_HPP

#include <cstddef>

namespace lowbit {

// What a checkpoint stores for one tensor: the packed codes or elements (payload), the scales,
// and the zero-points or offsets; any per-tensor scale (NVFP4's) is counted in scale_bytes.
struct storage {
  std::size_t elements = 0;
  std::size_t payload_bytes = 0;
  std::size_t scale_bytes = 0;
  std::size_t zero_point_bytes = 0;

  constexpr std::size_t metadata_bytes() const noexcept { return scale_bytes + zero_point_bytes; }
  constexpr std::size_t total_bytes() const noexcept { return payload_bytes + metadata_bytes(); }
  // metadata / payload, in percent (INT4 G=128 with fp16 scales: 3.125).
  double overhead_percent() const noexcept {
    return payload_bytes == 0 ? 0.0 : 100.0 * static_cast<double>(metadata_bytes()) / static_cast<double>(payload_bytes);
  }
  double bits_per_weight() const noexcept {
    return elements == 0 ? 0.0 : 8.0 * static_cast<double>(total_bytes()) / static_cast<double>(elements);
  }
  // 2 bytes per element over total bytes (INT4 G=128 with fp16 scales: 3.878...).
  double compression_vs_fp16() const noexcept {
    return total_bytes() == 0 ? 0.0 : 2.0 * static_cast<double>(elements) / static_cast<double>(total_bytes());
  }
  double total_mib() const noexcept { return static_cast<double>(total_bytes()) / 1048576.0; }
};

}  // namespace lowbit

#endif  // LOWBIT_SCHEMES_STORAGE_HPP
