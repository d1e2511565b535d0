// lesson_overhead: what the scales cost. Lesson 000 section 2.3 (metadata overhead of a 4096 x 4096
// matrix), section 3.3 (W4A16 reads 8.25 MiB instead of 32) and exercise 03 (INT4 G=128 footprint).
//
// Every byte count comes from lowbit::int_storage_for, the call a checkpoint writer uses to size
// its tensors: codes packed at b bits, one fp16 scale per group, no zero-points (symmetric).
//
//   lesson_overhead [--check]
#include <lowbit/lowbit.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lesson/report.hpp"

namespace {

constexpr std::size_t kRows = 4096, kCols = 4096;

// The INT8 per-output-channel and symmetric INT4 per-group schemes of the lesson, fp16 scales.
lowbit::storage storage_of(const lowbit::int_params& p) {
  const lowbit::result<lowbit::storage> s = lowbit::int_storage_for(p, kRows, kCols);
  if (!s.ok()) {
    std::fprintf(stderr, "int_storage_for: %s\n", s.status.message());
    std::exit(2);
  }
  return s.value;
}

lowbit::int_params int4_groups(std::size_t group) {
  lowbit::int_params p = lowbit::int_presets::gptq(4, group);  // symmetric INT4, fp16 scales
  p.range = lowbit::int_range::restricted;                       // -7..7, the lesson's table
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  lesson::report r("lesson_overhead: metadata overhead of a 4096 x 4096 weight matrix",
                   "000 section 2.3, section 3.3, exercise 03");
  if (!r.parse(argc, argv)) return 2;

  const lowbit::storage int8 = storage_of(lowbit::int_presets::int8_per_channel(lowbit::scale_storage::fp16));
  const lowbit::storage g128 = storage_of(int4_groups(128));
  const lowbit::storage g32 = storage_of(int4_groups(32));

  r.section("Metadata overhead (section 2.3): scale bytes, and scale bytes / payload bytes");
  r.exact("INT8 per-channel: scale bytes", static_cast<long long>(int8.metadata_bytes()), 8192);
  r.exact("INT8 per-channel: overhead %", int8.overhead_percent(), 0.0488, 4);
  r.exact("INT4 G=128: scale bytes", static_cast<long long>(g128.metadata_bytes()), 262144);
  r.exact("INT4 G=128: overhead %", g128.overhead_percent(), 3.125, 3);
  r.exact("INT4 G=32: scale bytes", static_cast<long long>(g32.metadata_bytes()), 1048576);
  r.exact("INT4 G=32: overhead %", g32.overhead_percent(), 12.50, 2);

  r.section("Exercise 03 and section 3.3: INT4 G=128 footprint against FP16");
  r.exact("INT4 payload: bytes", static_cast<long long>(g128.payload_bytes), 8388608);
  r.exact("INT4 payload: MiB", static_cast<double>(g128.payload_bytes) / 1048576.0, 8.00, 2);
  r.exact("fp16 scales: MiB", static_cast<double>(g128.scale_bytes) / 1048576.0, 0.25, 2);
  r.exact("total: MiB", g128.total_mib(), 8.25, 2);
  r.exact("FP16 baseline: MiB", 2.0 * static_cast<double>(g128.elements) / 1048576.0, 32.00, 2);
  r.exact("compression vs FP16 (x)", g128.compression_vs_fp16(), 3.88, 2);
  r.note("Not 4x: the scales add 1/32 to the 4-bit payload, 4 / (1 + 0.03125) = 3.879.");
  return r.finish();
}
