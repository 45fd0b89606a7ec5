// Pieces shared by serialization.cc (tensors) and serialization_blob.cc
// (blobs, chunks, registries). Not an API: use core/serialization.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace serialization_internal {

// What a TensorProto promises, checked against its own fields.
struct TensorLayout {
  DataType wire_type = DataType::kUndefined;  // as written (kByte stays kByte)
  DataType dtype = DataType::kUndefined;      // what the tensor will hold
  std::vector<int64_t> dims;
  int64_t numel = 0;
  // The flattened elements [begin, end) this proto carries.
  int64_t begin = 0;
  int64_t end = 0;
};

// "'fc_w'" (or "(unnamed)"), for messages: "tensor 'fc_w' has ...".
std::string TensorLabel(const TensorProto& proto);

// Checks everything in the proto without allocating from it: a known
// data_type, dims >= 0 whose product fits int64, a segment within the
// tensor, and a data field of exactly the segment's (or tensor's) length.
TensorLayout ValidateTensorProto(const TensorProto& proto);

// Writes the proto's elements into [begin, end) of `tensor`, which must
// already have layout.dims.
void FillFromProto(const TensorProto& proto, const TensorLayout& layout,
                   Tensor* tensor);

}  // namespace serialization_internal
}  // namespace doppio
