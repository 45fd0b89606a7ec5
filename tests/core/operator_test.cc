// Operator construction, the registry (engines, fallback, suggestions),
// schema verification and argument access, with test-only ops.
#include <gtest/gtest.h>

#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringArg;

// Writes `value` (an int argument) plus an engine tag into a 1-element tensor.
template <int kEngineTag>
class TestWriteOp final : public Operator<CPUContext> {
 public:
  TestWriteOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws), value_(GetSingleArgument<int>("value", 0)) {}
  void RunOnDevice() override {
    Tensor* out = Output(0);
    out->Resize({2});
    out->mutable_data<int32_t>()[0] = value_;
    out->mutable_data<int32_t>()[1] = kEngineTag;
  }

 private:
  int value_;
};

OPERATOR_SCHEMA(DoppioTestWrite).NumInputs(0, 1).NumOutputs(1).AllowInplace({{0, 0}});
REGISTER_CPU_OPERATOR(DoppioTestWrite, TestWriteOp<0>);
REGISTER_CPU_OPERATOR_WITH_ENGINE(DoppioTestWrite, FAST, TestWriteOp<1>);

// Registered without a schema on purpose: creation must refuse it.
REGISTER_CPU_OPERATOR(DoppioTestNoSchema, TestWriteOp<0>);

TEST(OperatorTest, RunsAndReadsArguments) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("DoppioTestWrite", {}, {"y"}, {IntArg("value", 42)}));
  const Tensor& y = ws.GetBlob("y")->GetTensor();
  EXPECT_EQ(y.data<int32_t>()[0], 42);
  EXPECT_EQ(y.data<int32_t>()[1], 0);
}

TEST(OperatorTest, EngineIsPreferredAndFallsBackToDefault) {
  Workspace ws;
  OperatorDef def = MakeOp("DoppioTestWrite", {}, {"y"});
  def.set_engine("FAST");
  ws.RunOperatorOnce(def);
  EXPECT_EQ(ws.GetBlob("y")->GetTensor().data<int32_t>()[1], 1);
  def.set_engine("NOSUCHENGINE");
  ws.RunOperatorOnce(def);
  EXPECT_EQ(ws.GetBlob("y")->GetTensor().data<int32_t>()[1], 0);
  def.set_engine("NOSUCHENGINE,FAST");
  ws.RunOperatorOnce(def);
  EXPECT_EQ(ws.GetBlob("y")->GetTensor().data<int32_t>()[1], 1);
}

TEST(OperatorTest, UnknownTypeSuggestsCloseNames) {
  Workspace ws;
  const std::string message =
      ErrorOf([&] { ws.RunOperatorOnce(MakeOp("DoppioTestWrit", {}, {"y"})); });
  EXPECT_NE(message.find("unknown operator type 'DoppioTestWrit'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("did you mean [DoppioTestWrite"), std::string::npos) << message;
}

TEST(OperatorTest, MissingSchemaIsRefused) {
  Workspace ws;
  const std::string message =
      ErrorOf([&] { ws.RunOperatorOnce(MakeOp("DoppioTestNoSchema", {}, {"y"})); });
  EXPECT_NE(message.find("without a schema"), std::string::npos) << message;
}

TEST(OperatorTest, SchemaChecksCountsAndInplace) {
  Workspace ws;
  ws.CreateBlob("a")->GetMutableTensor()->Resize({1});
  ws.CreateBlob("b");
  std::string message = ErrorOf(
      [&] { ws.RunOperatorOnce(MakeOp("DoppioTestWrite", {"a", "b"}, {"y"})); });
  EXPECT_NE(message.find("takes 0 to 1 inputs, got 2"), std::string::npos) << message;
  // Allowed in place {0, 0}.
  ws.RunOperatorOnce(MakeOp("DoppioTestWrite", {"a"}, {"a"}));
  const OpSchema* schema = OpSchemaRegistry::Schema("DoppioTestWrite");
  ASSERT_NE(schema, nullptr);
  EXPECT_TRUE(schema->inplace_allowed(0, 0));
  EXPECT_FALSE(schema->inplace_allowed(0, 1));
}

TEST(OperatorTest, MissingInputBlobIsNamed) {
  Workspace ws;
  const std::string message =
      ErrorOf([&] { ws.RunOperatorOnce(MakeOp("DoppioTestWrite", {"nope"}, {"y"})); });
  EXPECT_NE(message.find("input blob 'nope' does not exist"), std::string::npos)
      << message;
  EXPECT_NE(message.find("DoppioTestWrite"), std::string::npos) << message;
}

TEST(OperatorTest, WrongArgumentTypeIsNamed) {
  Workspace ws;
  const OperatorDef def =
      MakeOp("DoppioTestWrite", {}, {"y"}, {StringArg("value", "forty-two")});
  const std::string message = ErrorOf([&] { ws.RunOperatorOnce(def); });
  EXPECT_NE(message.find("argument 'value' should be an int but holds a string"),
            std::string::npos)
      << message;
}

TEST(ArgumentTest, ConversionsAndRanges) {
  const OperatorDef def =
      MakeOp("", {}, {},
             {FloatArg("f", 2.0f), FloatArg("half", 0.5f), IntArg("big", int64_t{1} << 40),
              IntsArg("ints", {1, -2})});
  ArgumentHelper args(def);
  EXPECT_EQ(args.GetSingle<int>("f", 0), 2);  // an integral float is accepted
  EXPECT_THROW(args.GetSingle<int>("half", 0), Error);
  EXPECT_THROW(args.GetSingle<int>("big", 0), Error);  // does not fit int32
  EXPECT_EQ(args.GetSingle<int64_t>("big", 0), int64_t{1} << 40);
  EXPECT_EQ(args.GetSingle<float>("missing", 3.5f), 3.5f);
  EXPECT_EQ(args.GetRepeated<int>("ints"), (std::vector<int>{1, -2}));
  EXPECT_EQ(args.GetRepeated<float>("ints"), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_THROW(args.GetRepeated<std::string>("ints"), Error);
}

class GetTestWriteGradient final : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("DoppioTestWrite", "", {GO(0)}, {GI(0)});
  }
};
REGISTER_GRADIENT(DoppioTestWrite, GetTestWriteGradient);

TEST(GradientTest, MakerNamesGradientsAndCopiesDevice) {
  OperatorDef def = MakeOp("DoppioTestWrite", {"x"}, {"y"});
  def.mutable_device_option()->set_random_seed(7);
  GradientOpsMeta meta = GetGradientForOp(def, {{"y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].input(0), "y_grad");
  EXPECT_EQ(meta.ops[0].output(0), "x_grad");
  EXPECT_TRUE(meta.ops[0].is_gradient_op());
  EXPECT_EQ(meta.ops[0].device_option().random_seed(), 7u);
  ASSERT_EQ(meta.input_gradients.size(), 1u);
  EXPECT_EQ(meta.input_gradients[0].dense, "x_grad");
  // Asking for a sparse output gradient where a dense one is needed fails.
  EXPECT_THROW(GetGradientForOp(def, {{"", "y_i", "y_v"}}), Error);
  // An op with nothing registered fails clearly.
  EXPECT_THROW(GetGradientForOp(MakeOp("DoppioTestNoSchema", {}, {"y"}), {{}}), Error);
}

}  // namespace
}  // namespace doppio
