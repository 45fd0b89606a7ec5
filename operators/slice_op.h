// Slice: the block [starts[i], ends[i]) of each leading dim (dims past the
// given bounds are taken whole), bounds from arguments or from two int
// inputs. As in Caffe2 a negative bound v means dim + 1 + v, so -1 is the
// end of the dim; bounds past the end are clamped. SliceGradient scatters
// the output gradient back into zeros of the input's shape.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

// Per dim: the first index taken and the count.
struct SliceBounds {
  std::vector<int64_t> start;
  std::vector<int64_t> size;
};

class SliceOpBase : public Operator<CPUContext> {
 public:
  SliceOpBase(const OperatorDef& def, Workspace* workspace, int bounds_input);

 protected:
  // Resolved bounds over `dims`, from the inputs at bounds_input,
  // bounds_input + 1 when given, else from the arguments.
  SliceBounds Bounds(const std::vector<int64_t>& dims);

 private:
  std::vector<int64_t> ReadBoundsInput(int index);

  int bounds_input_;  // -1: bounds are arguments
  std::vector<int64_t> starts_, ends_;
};

class SliceOp final : public SliceOpBase {
 public:
  SliceOp(const OperatorDef& def, Workspace* workspace)
      : SliceOpBase(def, workspace, def.input_size() == 3 ? 1 : -1) {}
  void RunOnDevice() override;
};

class SliceGradientOp final : public SliceOpBase {
 public:
  SliceGradientOp(const OperatorDef& def, Workspace* workspace)
      : SliceOpBase(def, workspace, def.input_size() == 4 ? 1 : -1) {}
  void RunOnDevice() override;
};

}  // namespace doppio
