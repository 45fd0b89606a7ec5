// Small conversions between TensorShape (what shape inference sees) and dims
// vectors (what the kernels' shape planners take), shared by the schemas'
// inference functions so each planner serves both the kernel and its schema.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schema.h"
#include "proto/doppio.pb.h"

namespace doppio {

std::vector<int64_t> DimsOf(const TensorShape& shape);

// A known shape of `dims` and `data_type` (a TensorProto::DataType value).
TensorShape MakeShape(const std::vector<int64_t>& dims, int data_type);

// One output with input `index`'s shape and input 0's type.
OpSchema::InferenceFunction ShapeOfInput(int index);

}  // namespace doppio
