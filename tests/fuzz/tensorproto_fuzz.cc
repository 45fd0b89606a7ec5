// Fuzz target: bytes -> TensorProto (binary or text) -> DeserializeTensor.
// A proto that loads whole (no segment) must survive a round trip:
// serialized again and reloaded, it gives the same dtype, shape and bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/serialization.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool SameTensor(const doppio::Tensor& a, const doppio::Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.numel() == 0) return true;
  if (a.dtype() == doppio::DataType::kString) {
    const std::string* x = a.data<std::string>();
    const std::string* y = b.data<std::string>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (x[i] != y[i]) return false;
    }
    return true;
  }
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  TensorProto proto;
  if (!fuzz::ParseBinaryOrText(data, size, &proto)) return 0;
  Tensor tensor;
  try {
    DeserializeTensor(proto, &tensor);
  } catch (const Error&) {
    return 0;
  }
  // A segment leaves the rest of the tensor unspecified: nothing to compare.
  if (proto.has_segment()) return 0;
  TensorProto again;
  SerializeTensor(tensor, proto.name(), &again);
  Tensor reloaded;
  DeserializeTensor(again, &reloaded);
  FUZZ_CHECK(SameTensor(tensor, reloaded));
  return 0;
}
