// TwinOp: the ordinary op an Int8 op runs on its inputs' values, so a
// quantized op does not re-implement what Doppio already has fast and
// checked:
//  - Conv, FC and RoIAlign run in float32 on the integers minus their zero
//    points (or on the reals); integer products of uint8 values accumulate
//    exactly in float32 while a sum stays below 2^24, and beyond that the
//    rounding is far below one output step. The Int8 op requantizes.
//  - Reshape, Flatten, Slice, Transpose and Concat run on the uint8
//    integers themselves (they move values without changing them).
//
// The twin lives in a workspace of its own whose blobs carry the Int8 op's
// input and output names, so the twin's messages (a filter that does not
// fit X, a bad slice) name the user's blobs.
//
// Ownership: the Int8 op owns its twin. Thread-safety: one Run at a time.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/operator.h"
#include "core/workspace.h"

namespace doppio {

class TwinOp {
 public:
  // A `type` op with the arguments of `int8_def` (minus its quantization
  // arguments, those extra_args replaces and `dropped_args`) and
  // `extra_args`, the first `num_inputs` inputs of int8_def
  // and `num_outputs` outputs (int8_def's, then made-up names).
  TwinOp(const std::string& type, const OperatorDef& int8_def, int num_inputs, int num_outputs = 1,
         const std::vector<Argument>& extra_args = {},
         const std::set<std::string>& dropped_args = {});
  ~TwinOp();

  Tensor* input(int i);
  void Run();
  const Tensor& output(int i = 0) const;

 private:
  Workspace workspace_;
  std::vector<Blob*> inputs_;
  std::vector<Blob*> outputs_;
  std::unique_ptr<OperatorBase> op_;
};

// An integer argument, for extra_args.
Argument IntArgument(const std::string& name, int64_t value);

}  // namespace doppio
