// Fuzz target: bytes -> ParseTensorProtosRecord (TensorProtosDBInput's fast
// decoder of DB records) against protobuf's path. Whatever the fast decoder
// accepts, protobuf must parse as a TensorProtos of as many tensors, each of
// which DeserializeTensor loads with the same dtype, dims and bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/serialization.h"
#include "operators/tensor_protos_record.h"
#include "proto/doppio.pb.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  const std::string_view record(reinterpret_cast<const char*>(data), size);
  constexpr int kMaxTensors = 4;
  RecordTensorView views[kMaxTensors];
  for (int num_tensors = 0; num_tensors <= kMaxTensors; ++num_tensors) {
    if (!ParseTensorProtosRecord(record, num_tensors, views, kMaxTensors)) continue;
    TensorProtos protos;
    FUZZ_CHECK(protos.ParseFromArray(data, static_cast<int>(size)));
    FUZZ_CHECK(protos.protos_size() == num_tensors);
    for (int i = 0; i < num_tensors; ++i) {
      Tensor expected;
      try {
        DeserializeTensor(protos.protos(i), &expected);
      } catch (const Error&) {
        FUZZ_CHECK(false && "the fast decoder accepted a tensor protobuf's path refuses");
      }
      const RecordTensorView& view = views[i];
      FUZZ_CHECK(expected.dtype() == view.dtype);
      FUZZ_CHECK(expected.dims() == std::vector<int64_t>(view.dims, view.dims + view.ndims));
      FUZZ_CHECK(expected.numel() == view.numel);
      std::vector<char> copied(expected.nbytes() + 1, 0);
      CopyRecordElements(view, copied.data());
      FUZZ_CHECK(expected.nbytes() == 0 ||
                 std::memcmp(copied.data(), expected.raw_data(), expected.nbytes()) == 0);
    }
  }
  return 0;
}
