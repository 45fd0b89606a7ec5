// Caffe2's engine preferences (core/engine_pref.h): which kernel
// CreateOperator picks for an op, observed through a probe op whose engines
// write different values.
#include "core/engine_pref.h"

#include <gtest/gtest.h>

#include <string>

#include "core/operator.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::MakeOp;

// Writes kValue into its one output: which engine ran.
template <int kValue>
class ProbeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override {
    Tensor* out = Output(0);
    out->Resize({});
    *out->mutable_data<int32_t>() = kValue;
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(EnginePrefProbe, ProbeOp<0>);
REGISTER_CPU_OPERATOR_WITH_ENGINE(EnginePrefProbe, FAST, ProbeOp<1>);
REGISTER_CPU_OPERATOR_WITH_ENGINE(EnginePrefProbe, EXACT, ProbeOp<2>);
OPERATOR_SCHEMA(EnginePrefProbe).NumInputs(0).NumOutputs(1).Doc("test probe");

namespace {

class EnginePrefTest : public ::testing::Test {
 protected:
  void TearDown() override { SetEnginePref({}, {}); }

  // The value written by the kernel CreateOperator picks for `engine`.
  int Ran(const std::string& engine = "") {
    OperatorDef def = MakeOp("EnginePrefProbe", {}, {"y"});
    def.set_engine(engine);
    ws_.RunOperatorOnce(def);
    return ws_.GetBlob("y")->GetTensor().data<int32_t>()[0];
  }

  Workspace ws_;
};

TEST_F(EnginePrefTest, TheDefsEnginesComeFirstThenPerOpThenGlobal) {
  EXPECT_EQ(Ran(), 0);
  SetGlobalEnginePref({{DeviceKind::kCPU, {"FAST"}}});
  EXPECT_EQ(Ran(), 1);
  EXPECT_EQ(Ran("EXACT"), 2);
  // Engines without a kernel are skipped, per op before device-wide.
  SetPerOpEnginePref({{DeviceKind::kCPU, {{"EnginePrefProbe", {"MISSING", "EXACT"}}}}});
  EXPECT_EQ(Ran(), 2);
  EXPECT_EQ(PreferredEngines("EnginePrefProbe", DeviceKind::kCPU),
            (std::vector<std::string>{"MISSING", "EXACT", "FAST"}));
  // Another device's preferences do not apply.
  SetEnginePref({}, {{DeviceKind::kCUDA, {"FAST"}}});
  EXPECT_EQ(Ran(), 0);
  SetOpEnginePref("EnginePrefProbe", {{DeviceKind::kCPU, {"FAST"}}});
  EXPECT_EQ(Ran(), 1);
  SetEnginePref({}, {});
  EXPECT_EQ(Ran(), 0);
}

TEST_F(EnginePrefTest, AnOpTypeWithoutAKernelThereIsRefusedAndChangesNothing) {
  SetOpEnginePref("EnginePrefProbe", {{DeviceKind::kCPU, {"FAST"}}});
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       SetPerOpEnginePref({{DeviceKind::kCPU, {{"NoSuchOp", {"FAST"}}}}});
                     }),
                     "'NoSuchOp'", "no CPU kernel");
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       SetOpEnginePref("EnginePrefProbe", {{DeviceKind::kCUDA, {"FAST"}}});
                     }),
                     "'EnginePrefProbe'", "no CUDA kernel");
  EXPECT_EQ(Ran(), 1);
}

}  // namespace
}  // namespace doppio
