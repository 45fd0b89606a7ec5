// Fuzz target: bytes -> the .npy reader, both from memory (ParseNpy) and from
// a file (ReadNpyFile, the path run_net takes), which must agree: both fail,
// or both give the same tensor. A loaded array must survive EncodeNpy and
// ParseNpy unchanged.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/npy.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool SameTensor(const doppio::Tensor& a, const doppio::Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  return a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Tensor parsed;
  bool parsed_ok = true;
  try {
    parsed = ParseNpy(bytes, "fuzz input");
  } catch (const Error&) {
    parsed_ok = false;
  }

  const std::string path = fuzz::ScratchDir::Path() + "/input.npy";
  fuzz::WriteFileOrDie(path, data, size);
  Tensor read;
  bool read_ok = true;
  try {
    read = ReadNpyFile(path);
  } catch (const Error&) {
    read_ok = false;
  }
  FUZZ_CHECK(parsed_ok == read_ok);
  if (!parsed_ok) return 0;
  FUZZ_CHECK(SameTensor(parsed, read));
  FUZZ_CHECK(SameTensor(parsed, ParseNpy(EncodeNpy(parsed), "re-encoded fuzz input")));
  return 0;
}
