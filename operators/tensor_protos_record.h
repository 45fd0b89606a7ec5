// Decoding one DB record -- a serialized TensorProtos, as tools/make_db and
// Caffe2's DB writers store them -- without building protobuf messages.
//
// Why: TensorProtosDBInput decodes a batch of records per training step on
// its prefetch thread, which shares the cores with the step itself. Through
// protobuf (parse into messages, validate, deserialize into a record tensor,
// copy into the batch) a 28x28 image record cost ~1 us; the reference MLP's
// 64-image step is ~0.4 ms on 2 cores, so decoding took a tenth of it.
// Reading the wire format directly and copying the elements once into the
// batch costs a fraction of that.
//
// Only the plain records are decoded here (see ParseTensorProtosRecord);
// anything else -- other fields, other types, duplicates, anything malformed
// -- makes the parser say no, and the caller takes protobuf's path, which
// decides what such a record means and owns every error message. So a
// record decodes the same through either path (tests/fuzz/record_fuzz
// checks exactly that) and this file never has to report an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/types.h"

namespace doppio {

// One tensor of a record, pointing into the record's bytes.
struct RecordTensorView {
  static constexpr int kMaxDims = 8;
  // The tensor's dtype (BYTE on the wire loads as uint8, as protobuf's path
  // does): float, int32 or uint8.
  DataType dtype = DataType::kUndefined;
  int ndims = 0;
  int64_t dims[kMaxDims] = {};
  int64_t numel = 0;
  // The data field's payload: numel little-endian floats, numel bytes, or
  // (int32) numel varints.
  const char* payload = nullptr;
  size_t payload_bytes = 0;
};

// Parses `record` as a TensorProtos of exactly `num_tensors` TensorProto
// (num_tensors <= max_tensors, the size of `tensors`), each holding only:
//   dims (1: non-negative, packed or not, at most kMaxDims),
//   data_type (2: exactly once; FLOAT, INT32, BYTE or UINT8),
//   the data field of that type, at most once -- float_data (3, packed) for
//   FLOAT, int32_data (4, packed) for INT32, byte_data (5) for BYTE and
//   UINT8 -- carrying exactly numel elements (product of dims),
//   name (7, at most once; ignored).
// Returns false for any other record, including every malformed one, and
// for tensors over MaxTensorBytes().
bool ParseTensorProtosRecord(std::string_view record, int num_tensors, RecordTensorView* tensors,
                             int max_tensors);

// Writes the view's numel elements (numel * ItemSize(dtype) bytes) to `out`.
// Only for views ParseTensorProtosRecord returned.
void CopyRecordElements(const RecordTensorView& view, void* out);

}  // namespace doppio
