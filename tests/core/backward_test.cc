// The structure of the backward pass: which gradient ops it emits, in which
// order, with which names (checked against Caffe2's naming by hand), and its
// errors. backward_numeric_test.cc checks the values against finite
// differences.
#include "core/backward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

NetDef MakeNet(const std::vector<OperatorDef>& ops) {
  NetDef net;
  net.set_name("test_net");
  for (const OperatorDef& op : ops) *net.add_op() = op;
  return net;
}

// "Type(in, ...)->(out, ...)": compact and easy to compare by eye.
std::string Describe(const OperatorDef& op) {
  std::string text = op.type() + "(";
  for (int i = 0; i < op.input_size(); ++i) text += (i ? "," : "") + op.input(i);
  text += ")->(";
  for (int i = 0; i < op.output_size(); ++i) text += (i ? "," : "") + op.output(i);
  return text + ")";
}

std::vector<std::string> Describe(const std::vector<OperatorDef>& ops) {
  std::vector<std::string> out;
  for (const OperatorDef& op : ops) out.push_back(Describe(op));
  return out;
}

TEST(BackwardTest, LossGetsConstantFillOfOne) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"y"}, {FloatArg("scale", 2.0f)}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  ASSERT_GE(result.ops.size(), 1u);
  const OperatorDef& fill = result.ops[0];
  EXPECT_EQ(Describe(fill), "ConstantFill(loss)->(loss_autogen_grad)");
  ASSERT_EQ(fill.arg_size(), 1);
  EXPECT_EQ(fill.arg(0).name(), "value");
  EXPECT_FLOAT_EQ(fill.arg(0).f(), 1.0f);
  EXPECT_EQ(Describe(result.ops),
            (std::vector<std::string>{"ConstantFill(loss)->(loss_autogen_grad)",
                                      "AveragedLossGradient(y,loss_autogen_grad)->(y_grad)",
                                      "Scale(y_grad)->(x_grad)"}));
  // The gradient op of Scale keeps its scale.
  ASSERT_EQ(result.ops[2].arg_size(), 1);
  EXPECT_FLOAT_EQ(result.ops[2].arg(0).f(), 2.0f);
  EXPECT_TRUE(result.ops[2].is_gradient_op());
  EXPECT_EQ(result.gradients.at("x").dense, "x_grad");
  EXPECT_EQ(result.gradients.at("y").dense, "y_grad");
  EXPECT_EQ(result.gradients.at("loss").dense, "loss_autogen_grad");
  EXPECT_EQ(result.gradients.size(), 3u);
}

TEST(BackwardTest, GivenLossGradientReplacesTheFill) {
  const NetDef net = MakeNet({MakeOp("AveragedLoss", {"x"}, {"loss"})});
  const BackwardResult result =
      AddGradientOperators(net, {"loss"}, {{"loss", GradientWrapper{"my_grad", "", ""}}});
  EXPECT_EQ(Describe(result.ops),
            (std::vector<std::string>{"AveragedLossGradient(x,my_grad)->(x_grad)"}));
  EXPECT_EQ(result.gradients.at("loss").dense, "my_grad");
}

TEST(BackwardTest, FanOutIsSummedWithCaffe2Renaming) {
  // h is read by Relu and Sigmoid; the backward walk meets Sigmoid first, so
  // its gradient keeps the name h_grad and Relu's is renamed.
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w", "b"}, {"h"}),
                              MakeOp("Relu", {"h"}, {"r"}),
                              MakeOp("Sigmoid", {"h"}, {"s"}),
                              MakeOp("Add", {"r", "s"}, {"sum"}),
                              MakeOp("AveragedLoss", {"sum"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 7u) << ::testing::PrintToString(ops);
  EXPECT_EQ(ops[0], "ConstantFill(loss)->(loss_autogen_grad)");
  EXPECT_EQ(ops[1], "AveragedLossGradient(sum,loss_autogen_grad)->(sum_grad)");
  EXPECT_EQ(result.ops[2].type(), "AddGradient");
  EXPECT_EQ(ops[3], "SigmoidGradient(s,s_grad)->(h_grad)");
  EXPECT_EQ(ops[4], "ReluGradient(r,r_grad)->(_h_grad_autosplit_0)");
  EXPECT_EQ(ops[5], "Sum(h_grad,_h_grad_autosplit_0)->(h_grad)");
  EXPECT_EQ(result.ops[6].type(), "FCGradient");
  EXPECT_EQ(result.ops[6].input(2), "h_grad");
  EXPECT_EQ(result.gradients.at("h").dense, "h_grad");
  EXPECT_EQ(result.gradients.at("w").dense, "w_grad");
  EXPECT_EQ(result.gradients.at("b").dense, "b_grad");
}

TEST(BackwardTest, SameBlobTwiceInOneOpIsSummed) {
  const NetDef net = MakeNet({MakeOp("Mul", {"x", "x"}, {"y"}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  ASSERT_EQ(result.ops.size(), 4u) << ::testing::PrintToString(Describe(result.ops));
  const OperatorDef& mul_grad = result.ops[2];
  EXPECT_EQ(mul_grad.type(), "MulGradient");
  ASSERT_EQ(mul_grad.output_size(), 2);
  EXPECT_EQ(mul_grad.output(0), "x_grad");
  EXPECT_EQ(mul_grad.output(1), "_x_grad_autosplit_0");
  EXPECT_EQ(Describe(result.ops[3]), "Sum(x_grad,_x_grad_autosplit_0)->(x_grad)");
}

TEST(BackwardTest, InPlaceChainPassesGradientsThroughVersions) {
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w", "b"}, {"h"}),
                              MakeOp("Scale", {"h"}, {"h"}, {FloatArg("scale", 0.5f)}),
                              MakeOp("Relu", {"h"}, {"h"}),
                              MakeOp("AveragedLoss", {"h"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 5u) << ::testing::PrintToString(ops);
  EXPECT_EQ(ops[1], "AveragedLossGradient(h,loss_autogen_grad)->(h_grad)");
  EXPECT_EQ(ops[2], "ReluGradient(h,h_grad)->(h_grad)");
  EXPECT_EQ(ops[3], "Scale(h_grad)->(h_grad)");
  EXPECT_EQ(result.ops[4].type(), "FCGradient");
  EXPECT_EQ(result.ops[4].input(2), "h_grad");
}

TEST(BackwardTest, InPlaceOverwriteOfANeededValueIsAnError) {
  // SigmoidGradient needs s as Sigmoid wrote it, but Relu overwrites it.
  const NetDef net = MakeNet({MakeOp("Sigmoid", {"x"}, {"s"}),
                              MakeOp("Relu", {"s"}, {"s"}),
                              MakeOp("AveragedLoss", {"s"}, {"loss"})});
  const std::string message = ErrorOf([&] { AddGradientOperators(net, {"loss"}); });
  EXPECT_MESSAGE_HAS(message, "SigmoidGradient", "op #0 (Sigmoid)", "'s'", "overwrote",
                     "test_net");
  // Relu's gradient reads Relu's output, so a second in-place op after it
  // is refused too (as Caffe2 refuses it).
  const NetDef twice = MakeNet({MakeOp("Relu", {"x"}, {"x"}), MakeOp("Relu", {"x"}, {"x"}),
                                MakeOp("AveragedLoss", {"x"}, {"loss"})});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { AddGradientOperators(twice, {"loss"}); }),
                     "ReluGradient", "op #0 (Relu)", "'x'", "version 1", "version 2");
}

TEST(BackwardTest, OverwrittenBlobGivesNoGradientToItsEarlierWriter) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"y"}),
                              MakeOp("Scale", {"z"}, {"y"}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  EXPECT_EQ(Describe(result.ops),
            (std::vector<std::string>{"ConstantFill(loss)->(loss_autogen_grad)",
                                      "AveragedLossGradient(y,loss_autogen_grad)->(y_grad)",
                                      "Scale(y_grad)->(z_grad)"}));
  EXPECT_EQ(result.gradients.count("x"), 0u);
  EXPECT_EQ(result.gradients.at("z").dense, "z_grad");
}

TEST(BackwardTest, StopGradientCutsThePath) {
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w", "b"}, {"h"}),
                              MakeOp("StopGradient", {"h"}, {"hs"}),
                              MakeOp("FC", {"hs", "w2", "b2"}, {"o"}),
                              MakeOp("AveragedLoss", {"o"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 3u) << ::testing::PrintToString(ops);
  EXPECT_EQ(result.ops[2].type(), "FCGradient");
  EXPECT_EQ(result.gradients.at("w2").dense, "w2_grad");
  EXPECT_EQ(result.gradients.at("b2").dense, "b2_grad");
  EXPECT_EQ(result.gradients.count("h"), 0u);
  EXPECT_EQ(result.gradients.count("w"), 0u);
  EXPECT_EQ(result.gradients.count("x"), 0u);
}

TEST(BackwardTest, InPlaceStopGradientCutsThePath) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"h"}),
                              MakeOp("StopGradient", {"h"}, {"h"}),
                              MakeOp("Mul", {"h", "w"}, {"o"}),
                              MakeOp("AveragedLoss", {"o"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  EXPECT_EQ(result.gradients.at("w").dense, "w_grad");
  EXPECT_EQ(result.gradients.count("x"), 0u);
  // The gradient stops at the StopGradient: no Scale gradient reaches x.
  for (const OperatorDef& op : result.ops) EXPECT_NE(op.type(), "Scale") << Describe(op);
}

TEST(BackwardTest, OpsBelowAFillAreDifferentiatedAsInCaffe2) {
  // c comes from a fill: the fill gets no gradient op, but Scale(c) does, so
  // c2's and c's gradients exist for programs that fetch them (Caffe2's
  // GetBackwardPass does the same).
  const NetDef net = MakeNet({MakeOp("ConstantFill", {}, {"c"},
                                     {IntsArg("shape", {3}), FloatArg("value", 1.0f)}),
                              MakeOp("Scale", {"c"}, {"c2"}),
                              MakeOp("Mul", {"c2", "w"}, {"o"}),
                              MakeOp("AveragedLoss", {"o"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 4u) << ::testing::PrintToString(ops);
  EXPECT_EQ(result.ops[2].type(), "MulGradient");
  EXPECT_EQ(result.ops[3].type(), "Scale");
  EXPECT_EQ(result.gradients.at("w").dense, "w_grad");
  EXPECT_EQ(result.gradients.at("c").dense, "c_grad");
  for (const OperatorDef& op : result.ops) EXPECT_NE(op.type(), "ConstantFillGradient");
}

TEST(BackwardTest, OpsOffTheLossPathGetNothing) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"y"}),
                              MakeOp("Scale", {"x"}, {"unused"}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"}),
                              MakeOp("Save", {"y"}, {}, {})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  EXPECT_EQ(Describe(result.ops),
            (std::vector<std::string>{"ConstantFill(loss)->(loss_autogen_grad)",
                                      "AveragedLossGradient(y,loss_autogen_grad)->(y_grad)",
                                      "Scale(y_grad)->(x_grad)"}));
  EXPECT_EQ(result.gradients.count("unused"), 0u);
}

TEST(BackwardTest, GatherGivesAGradientSlice) {
  const NetDef net = MakeNet({MakeOp("Gather", {"emb", "idx"}, {"rows"}),
                              MakeOp("AveragedLoss", {"rows"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  EXPECT_EQ(
      Describe(result.ops),
      (std::vector<std::string>{"ConstantFill(loss)->(loss_autogen_grad)",
                                "AveragedLossGradient(rows,loss_autogen_grad)->(rows_grad)"}));
  const GradientWrapper& grad = result.gradients.at("emb");
  EXPECT_TRUE(grad.IsSparse());
  EXPECT_EQ(grad.indices, "idx");
  EXPECT_EQ(grad.values, "rows_grad");
}

TEST(BackwardTest, SparseFanOutIsConcatenated) {
  const NetDef net = MakeNet({MakeOp("Gather", {"emb", "idx1"}, {"r1"}),
                              MakeOp("Gather", {"emb", "idx2"}, {"r2"}),
                              MakeOp("Mul", {"r1", "r2"}, {"m"}),
                              MakeOp("AveragedLoss", {"m"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 5u) << ::testing::PrintToString(ops);
  // The walk meets the second Gather first.
  EXPECT_EQ(ops[3], "Concat(idx2,idx1)->(emb_grad_indices_concat,emb_grad_indices_concat_split)");
  EXPECT_EQ(ops[4], "Concat(r2_grad,r1_grad)->(emb_grad_values_concat,emb_grad_values_concat_split)");
  ASSERT_EQ(result.ops[3].arg_size(), 1);
  EXPECT_EQ(result.ops[3].arg(0).name(), "axis");
  EXPECT_EQ(result.ops[3].arg(0).i(), 0);
  const GradientWrapper& grad = result.gradients.at("emb");
  EXPECT_EQ(grad.indices, "emb_grad_indices_concat");
  EXPECT_EQ(grad.values, "emb_grad_values_concat");
}

TEST(BackwardTest, MixedDenseAndSparseIsAnError) {
  const NetDef net = MakeNet({MakeOp("Gather", {"emb", "idx"}, {"r"}),
                              MakeOp("Scale", {"emb"}, {"e2"}),
                              MakeOp("AveragedLoss", {"r"}, {"l1"}),
                              MakeOp("AveragedLoss", {"e2"}, {"l2"})});
  const std::string message = ErrorOf([&] { AddGradientOperators(net, {"l1", "l2"}); });
  EXPECT_MESSAGE_HAS(message, "'emb'", "dense and sparse", "op #0 (Gather)");
}

TEST(BackwardTest, ShouldNotDoGradientOnThePathIsAnError) {
  OperatorDef bad = MakeOp("ReluGradient", {"y", "dy"}, {"z"});
  bad.set_name("misplaced");
  const NetDef net = MakeNet({MakeOp("Relu", {"x"}, {"y"}), bad,
                              MakeOp("AveragedLoss", {"z"}, {"loss"})});
  const std::string message = ErrorOf([&] { AddGradientOperators(net, {"loss"}); });
  EXPECT_MESSAGE_HAS(message, "op #1 (ReluGradient 'misplaced')", "'z'",
                     "must not be differentiated", "test_net");
}

TEST(BackwardTest, ShouldNotDoGradientOffThePathIsFine) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"y"}),
                              MakeOp("ReluGradient", {"y", "dy"}, {"z"}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"})});
  EXPECT_EQ(AddGradientOperators(net, {"loss"}).gradients.at("x").dense, "x_grad");
}

TEST(BackwardTest, MakerErrorsNameTheOp) {
  const NetDef net = MakeNet({MakeOp("NoSuchOpType", {"x"}, {"y"}),
                              MakeOp("AveragedLoss", {"y"}, {"loss"})});
  const std::string message = ErrorOf([&] { AddGradientOperators(net, {"loss"}); });
  EXPECT_MESSAGE_HAS(message, "NoSuchOpType", "op #0", "'y'");
}

TEST(BackwardTest, BadLossesAreErrors) {
  const NetDef net = MakeNet({MakeOp("AveragedLoss", {"x"}, {"loss"})});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { AddGradientOperators(net, {"nope"}); }), "'nope'",
                     "test_net");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { AddGradientOperators(net, {}); }), "no loss");
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] {
        AddGradientOperators(net, {"loss"}, {{"x", GradientWrapper{"g", "", ""}}});
      }),
      "'x'", "not one of the losses");
}

TEST(BackwardTest, LossReadByAnotherOpGetsBothGradients) {
  const NetDef net = MakeNet({MakeOp("AveragedLoss", {"x"}, {"l1"}),
                              MakeOp("Scale", {"l1"}, {"l2"}, {FloatArg("scale", 3.0f)})});
  const BackwardResult result = AddGradientOperators(net, {"l1", "l2"});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 5u) << ::testing::PrintToString(ops);
  EXPECT_EQ(ops[0], "ConstantFill(l1)->(l1_autogen_grad)");
  EXPECT_EQ(ops[1], "ConstantFill(l2)->(l2_autogen_grad)");
  EXPECT_EQ(ops[2], "Scale(l2_autogen_grad)->(_l1_grad_autosplit_0)");
  EXPECT_EQ(ops[3], "Sum(l1_autogen_grad,_l1_grad_autosplit_0)->(l1_autogen_grad)");
  EXPECT_EQ(ops[4], "AveragedLossGradient(x,l1_autogen_grad)->(x_grad)");
}

TEST(BackwardTest, GivenGradientOfABlobOthersReadIsSummedIntoInPlace) {
  // RecurrentNetwork's step nets: the state gradient comes from outside
  // under "<blob>_grad", the very name the readers' gradients would take.
  const NetDef net = MakeNet({MakeOp("Scale", {"h"}, {"l2"}, {FloatArg("scale", 3.0f)})});
  const BackwardResult result =
      AddGradientOperators(net, {"h", "l2"}, {{"h", GradientWrapper{"h_grad", "", ""}}});
  const std::vector<std::string> ops = Describe(result.ops);
  ASSERT_EQ(ops.size(), 3u) << ::testing::PrintToString(ops);
  EXPECT_EQ(ops[0], "ConstantFill(l2)->(l2_autogen_grad)");
  EXPECT_EQ(ops[1], "Scale(l2_autogen_grad)->(_h_grad_autosplit_0)");
  EXPECT_EQ(ops[2], "Sum(h_grad,_h_grad_autosplit_0)->(h_grad)");
  EXPECT_EQ(result.gradients.at("h").dense, "h_grad");
}

TEST(BackwardTest, OutputlessOpWithAMakerGivesItsInputAGradient) {
  const NetDef net = MakeNet({MakeOp("Scale", {"x"}, {"y"}, {FloatArg("scale", 2.0f)}),
                              MakeOp("ZeroGradient", {"y"}, {}),
                              MakeOp("Save", {"y"}, {}, {testing::StringArg("db", "f")}),
                              MakeOp("AveragedLoss", {"x"}, {"loss"})});
  const BackwardResult result = AddGradientOperators(net, {"loss"});
  const std::vector<std::string> ops = Describe(result.ops);
  // y's zeros flow back through Scale into x, summed with the loss's.
  EXPECT_EQ(result.gradients.at("y").dense, "y_grad");
  EXPECT_NE(std::find(ops.begin(), ops.end(), "ConstantFill(y)->(y_grad)"), ops.end())
      << ::testing::PrintToString(ops);
}

}  // namespace
}  // namespace doppio
