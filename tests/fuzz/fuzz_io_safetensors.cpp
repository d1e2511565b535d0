// Fuzz target: arbitrary bytes as a safetensors file (and as an .npy file), parsed from memory.
// A malformed input must give an error (one line, naming the file) and no view; a well-formed one
// must give views inside the input that match their shapes, sorted and disjoint, and must
// survive a round trip through the writer: encode, parse again, the same tensors and metadata,
// and encoding that gives the same bytes again. ASan/UBSan catch any read outside the input.
//
// Inputs whose 8-byte header length points past the end are also parsed with the length folded
// into range, so that mutations of the length still reach the JSON parser.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <lowbit/io/npy.hpp>
#include <lowbit/core/status.hpp>  // fuzz.hpp names lowbit::status
#include <lowbit/io/safetensors.hpp>

#include "fuzz.hpp"

namespace {

using lowbit::io::tensor_view;

void check_views(const std::vector<tensor_view>& tensors, const std::uint8_t* data, std::size_t size,
                 std::size_t data_offset) {
  const std::uint8_t* lo = data + data_offset;
  const std::uint8_t* hi = data + size;
  const std::uint8_t* prev_end = nullptr;
  for (const tensor_view& t : tensors) {
    std::uint64_t need = 0;
    LOWBIT_FUZZ_CHECK(lowbit::io::detail::byte_count(t.shape, t.type, need) && need == t.bytes,
                      "tensor %s: %zu bytes, shape needs %llu", t.name.c_str(), t.bytes,
                      static_cast<unsigned long long>(need));
    if (t.bytes == 0) continue;
    LOWBIT_FUZZ_CHECK(t.data >= lo && t.data <= hi && t.bytes <= static_cast<std::size_t>(hi - t.data),
                      "tensor %s: view outside the data section", t.name.c_str());
    LOWBIT_FUZZ_CHECK(prev_end == nullptr || t.data >= prev_end, "tensor %s: overlaps or out of order",
                      t.name.c_str());
    prev_end = t.data + t.bytes;
    if (t.bytes <= (1u << 16)) {
      std::vector<float> v;
      LOWBIT_FUZZ_CHECK(lowbit::io::to_float(t, v).ok(), "to_float failed on %s", t.name.c_str());
    }
  }
}

void check_safetensors(const std::uint8_t* data, std::size_t size) {
  const std::string name = "fuzz.safetensors";
  auto r = lowbit::io::safetensors_file::parse(data, size, name);
  if (!r.ok()) {
    LOWBIT_FUZZ_CHECK(r.error.rfind(name + ": ", 0) == 0, "error does not start with the file name: %s",
                      r.error.c_str());
    LOWBIT_FUZZ_CHECK(r.error.find('\n') == std::string::npos, "error is not one line: %s", r.error.c_str());
    LOWBIT_FUZZ_CHECK(r.value.tensors().empty() && r.value.metadata().empty(), "a failed parse kept tensors");
    return;
  }
  const auto& tensors = r.value.tensors();
  check_views(tensors, data, size, r.value.data_offset());
  for (const tensor_view& t : tensors) {
    const tensor_view* f = r.value.find(t.name);
    LOWBIT_FUZZ_CHECK(f == &t, "find(%s) does not return it (duplicate name?)", t.name.c_str());
  }
  // Round trip through the writer.
  std::vector<unsigned char> once, twice;
  const auto st = lowbit::io::encode_safetensors(tensors, r.value.metadata(), once);
  LOWBIT_FUZZ_CHECK(st.ok(), "a file lowbit read cannot be written: %s", st.error.c_str());
  auto again = lowbit::io::safetensors_file::parse(once.data(), once.size(), "again");
  LOWBIT_FUZZ_CHECK(again.ok(), "lowbit cannot read what it wrote: %s", again.error.c_str());
  LOWBIT_FUZZ_CHECK(again.value.tensors().size() == tensors.size(), "tensor count changed");
  LOWBIT_FUZZ_CHECK(again.value.metadata() == r.value.metadata(), "metadata changed");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const tensor_view& a = tensors[i];
    const tensor_view& b = again.value.tensors()[i];
    LOWBIT_FUZZ_CHECK(a.name == b.name && a.type == b.type && a.shape == b.shape && a.bytes == b.bytes &&
                          (a.bytes == 0 || std::memcmp(a.data, b.data, a.bytes) == 0),
                      "tensor %zu (%s) changed in the round trip", i, a.name.c_str());
  }
  const auto st2 = lowbit::io::encode_safetensors(again.value.tensors(), again.value.metadata(), twice);
  LOWBIT_FUZZ_CHECK(st2.ok() && twice == once, "encoding is not a fixed point");
}

void check_npy(const std::uint8_t* data, std::size_t size) {
  auto r = lowbit::io::npy_file::parse(data, size, "fuzz.npy");
  if (!r.ok()) {
    LOWBIT_FUZZ_CHECK(r.error.rfind("fuzz.npy: ", 0) == 0, "npy error does not name the file: %s", r.error.c_str());
    return;
  }
  const tensor_view& t = r.value.tensor();
  check_views({t}, data, size, 0);
  std::vector<unsigned char> out;
  const auto st = lowbit::io::encode_npy(t, out);
  LOWBIT_FUZZ_CHECK(st.ok(), "an .npy lowbit read cannot be written: %s", st.error.c_str());
  auto again = lowbit::io::npy_file::parse(out.data(), out.size(), "again.npy");
  LOWBIT_FUZZ_CHECK(again.ok() && again.value.tensor().type == t.type && again.value.tensor().shape == t.shape &&
                        again.value.tensor().bytes == t.bytes,
                    "npy round trip failed: %s", again.error.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check_safetensors(data, size);
  if (size >= 8) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
    if (n > size - 8) {
      std::vector<std::uint8_t> folded(data, data + size);
      n %= static_cast<std::uint64_t>(size - 8) + 1;
      for (int i = 0; i < 8; ++i) folded[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
      check_safetensors(folded.data(), folded.size());
    }
  }
  check_npy(data, size);
  return 0;
}
