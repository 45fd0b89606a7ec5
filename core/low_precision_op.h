// float16 and bfloat16 on CPU kernels written for float32.
//
// An op whose schema says LowPrecisionInFloat32() (core/schema.h) is built
// by CreateOperator as a LowPrecisionOp around its CPU kernel. With float32
// inputs the kernel runs exactly as it would alone. When some input is
// float16 or bfloat16, the op widens those inputs to float32 in blobs of its
// own, runs a second instance of the kernel over them (float32 inputs are
// shared, not copied) and rounds each output back to the low type, to
// nearest even, except the outputs the schema keeps in float32. The result
// is what a GPU's half kernel with float32 accumulation computes, and every
// machine can run and test mixed-precision graphs.
//
// Ownership: the op owns its float32 blobs (a private Workspace) and both
// kernel instances. Thread-safety: one Run() at a time, as any op.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "core/operator.h"
#include "core/tensor.h"
#include "core/types.h"

namespace doppio {

class Workspace;

// Element-wise conversions between float32 and the low types (float16,
// bfloat16) of whole tensors, through the bulk conversions of core/types.h,
// resizing `out` like `in` on the CPU. Rounding to nearest even;
// NaN stays NaN; float16 overflows to infinity.
void WidenToFloat(const Tensor& in, Tensor* out);
void NarrowFromFloat(const Tensor& in, DataType low, Tensor* out);
inline bool IsLowPrecision(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

class LowPrecisionOp final : public OperatorBase {
 public:
  using Creator = std::function<std::unique_ptr<OperatorBase>(const OperatorDef&, Workspace*)>;
  LowPrecisionOp(const OperatorDef& def, Workspace* workspace, Creator creator,
                 std::set<int> float32_outputs);
  ~LowPrecisionOp() override;

  void Run() override;
  StreamPlacement stream_placement() const override { return direct_->stream_placement(); }
  // The generator of the instance that ran last (a dropout mask drawn in
  // low precision comes from the widened kernel's); a restored state goes
  // to both.
  std::string RandomState() const override;
  void SetRandomState(const std::string& state) override;

 private:
  // kFloat when no input is low precision; throws when inputs mix the two
  // low types.
  DataType LowInputType() const;
  void RunWidened(DataType low);

  Creator creator_;
  std::set<int> float32_outputs_;
  std::unique_ptr<OperatorBase> direct_;
  // Built at the first low-precision run, over blobs of `shadow_` named as
  // the op's own, so in-place pairs stay in place.
  std::unique_ptr<Workspace> shadow_;
  std::unique_ptr<OperatorBase> widened_;
  std::vector<Blob*> shadow_inputs_, shadow_outputs_;
  bool ran_widened_ = false;
  std::string restored_state_;
};

}  // namespace doppio
