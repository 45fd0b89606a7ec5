// Cast: converts a tensor's elements to the dtype of argument `to` (a
// TensorProto.DataType number or name such as "FLOAT" or "int64"). Floats
// go to integers by truncation, saturating at the integer's range (nan
// becomes 0) instead of C++'s undefined behaviour; numbers to bool by
// != 0; any number to STRING with std::to_string, as Caffe2 (or, with
// shortest_strings, the shortest text that reads back exactly, as ONNX);
// strings to numbers by reading them.
//
// FloatToHalf / HalfToFloat: Caffe2's fixed-type casts between float32 and
// float16 (round to nearest even; FloatToHalf's `clip` saturates at
// +-65504 instead of overflowing to infinity). Each is the other's
// gradient.
#pragma once

#include <string>

#include "core/argument.h"
#include "core/operator.h"

namespace doppio {

class CastOp final : public Operator<CPUContext> {
 public:
  CastOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        to_(CastTypeArgument(type(), ArgumentHelper(def), "to")),
        shortest_strings_(ArgumentHelper(def).GetSingle<bool>("shortest_strings", false)) {}
  void RunOnDevice() override;

 private:
  DataType to_;
  bool shortest_strings_;
};

class FloatToHalfOp final : public Operator<CPUContext> {
 public:
  FloatToHalfOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        clip_(ArgumentHelper(def).GetSingle<bool>("clip", false)) {}
  void RunOnDevice() override;

 private:
  bool clip_;
};

class HalfToFloatOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
