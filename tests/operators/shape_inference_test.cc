// Every schema's shape and type inference agrees with what its kernel
// actually produces. Each op with inference must have at least one case
// here, so a new op cannot ship an inference function nobody ran.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/schema.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::FloatsArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringsArg;

struct Case {
  OperatorDef def;
  // Inputs fed before the op runs: name -> (dims, dtype).
  std::vector<std::pair<std::vector<int64_t>, DataType>> inputs;
};

TensorShape ShapeOf(const Tensor& tensor) {
  TensorShape shape;
  for (int64_t d : tensor.dims()) shape.add_dims(d);
  shape.set_data_type(static_cast<TensorProto::DataType>(tensor.dtype()));
  return shape;
}

void Fill(Tensor* tensor, const std::vector<int64_t>& dims, DataType dtype) {
  tensor->Resize(dims);
  DispatchDataType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = tensor->mutable_data<T>();
    for (int64_t i = 0; i < tensor->numel(); ++i) data[i] = T();
  });
}

std::vector<Case> Cases() {
  const auto f32 = DataType::kFloat;
  const auto f64 = DataType::kDouble;
  const auto i32 = DataType::kInt32;
  const auto i64 = DataType::kInt64;
  std::vector<Case> cases = {
      {MakeOp("Add", {"a", "b"}, {"c"}), {{{2, 3, 4}, f32}, {{3, 1}, f32}}},
      {MakeOp("Add", {"a", "b"}, {"c"}), {{{1, 5}, i64}, {{4, 1}, i64}}},
      {MakeOp("Add", {"a", "b"}, {"c"}, {IntArg("broadcast", 1), IntArg("axis", 1)}),
       {{{2, 3, 4}, f64}, {{3}, f64}}},
      {MakeOp("AddGradient", {"dc", "a", "b"}, {"da", "db"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{3}, f32}}},
      {MakeOp("SumReduceLike", {"a", "b"}, {"c"}, {IntArg("axis", 0)}),
       {{{2, 3, 4}, f32}, {{2, 3}, f32}}},
      {MakeOp("Sum", {"a", "b", "c"}, {"s"}), {{{4, 2}, i32}, {{4, 2}, i32}, {{4, 2}, i32}}},
      {MakeOp("Scale", {"a"}, {"b"}, {FloatArg("scale", 2)}), {{{3, 3}, f64}}},
      {MakeOp("Copy", {"a"}, {"b"}), {{{5}, i64}}},
      {MakeOp("CopyOnDeviceLike", {"a", "b"}, {"c"}), {{{5, 2}, f32}, {{1}, f32}}},
      {MakeOp("CopyFromCPUInput", {"a"}, {"b"}), {{{3, 4}, f32}}},
      {MakeOp("EnsureCPUOutput", {"a"}, {"b"}), {{{2, 0, 3}, i64}}},
      {MakeOp("Alias", {"a"}, {"b"}), {{{2, 2}, f32}}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {2, 3})}), {}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {4}), IntArg("dtype", 10)}), {}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {4}), IntArg("value", 3)}), {}},
      {MakeOp("ConstantFill", {"x"}, {"y"}, {IntsArg("extra_shape", {5})}), {{{2, 3}, f32}}},
      {MakeOp("UniformFill", {}, {"y"}, {IntsArg("shape", {3, 2})}), {}},
      {MakeOp("UniformIntFill", {}, {"y"},
              {IntsArg("shape", {7}), IntArg("min", 0), IntArg("max", 5)}),
       {}},
      {MakeOp("GaussianFill", {}, {"y"}, {IntsArg("shape", {2, 2})}), {}},
      {MakeOp("XavierFill", {}, {"y"}, {IntsArg("shape", {4, 3})}), {}},
      {MakeOp("MSRAFill", {}, {"y"}, {IntsArg("shape", {4, 3})}), {}},
      {MakeOp("GivenTensorFill", {}, {"y"}, {IntsArg("shape", {2}), FloatsArg("values", {1, 2})}),
       {}},
      {MakeOp("GivenTensorDoubleFill", {}, {"y"},
              {IntsArg("shape", {1}), FloatsArg("values", {1})}),
       {}},
      {MakeOp("GivenTensorBoolFill", {}, {"y"}, {IntsArg("shape", {1}), IntsArg("values", {1})}),
       {}},
      {MakeOp("GivenTensorIntFill", {}, {"y"}, {IntsArg("shape", {2}), IntsArg("values", {1, 2})}),
       {}},
      {MakeOp("GivenTensorInt64Fill", {}, {"y"}, {IntsArg("shape", {1}), IntsArg("values", {9})}),
       {}},
      {MakeOp("GivenTensorStringFill", {}, {"y"},
              {IntsArg("shape", {2}), StringsArg("values", {"a", "b"})}),
       {}},
      // Convolution family (conv_op.cc, conv_gradient_op.cc, conv_transpose_op.cc).
      {MakeOp("Conv", {"x", "w", "b"}, {"y"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
       {{{2, 3, 6, 5}, f32}, {{4, 3, 3, 3}, f32}, {{4}, f32}}},
      {MakeOp("Conv", {"x", "w"}, {"y"},
              {IntsArg("strides", {2, 1}), IntsArg("pads", {0, 1, 2, 0}),
               IntArg("group", 2), testing::StringArg("order", "NHWC")}),
       {{{1, 7, 5, 4}, f64}, {{6, 3, 2, 2}, f64}}},
      {MakeOp("ConvFusion", {"x", "w", "b"}, {"y"},
              {IntArg("kernel", 3), IntArg("stride", 2), IntArg("fusion_type", 1)}),
       {{{2, 3, 7, 6}, f32}, {{4, 3, 3, 3}, f32}, {{4}, f32}}},
      {MakeOp("Conv1D", {"x", "w"}, {"y"}, {IntArg("dilation", 2)}),
       {{{2, 2, 9}, f32}, {{3, 2, 3}, f32}}},
      {MakeOp("Conv2D", {"x", "w"}, {"y"}, {IntArg("stride", 2)}),
       {{{1, 1, 5, 5}, f32}, {{2, 1, 3, 3}, f32}}},
      {MakeOp("Conv3D", {"x", "w"}, {"y"}, {IntArg("pad", 1)}),
       {{{1, 2, 3, 4, 3}, f32}, {{2, 2, 2, 2, 2}, f32}}},
      {MakeOp("ConvGradient", {"x", "w", "dy"}, {"dw", "db", "dx"}, {IntArg("kernel", 3)}),
       {{{2, 3, 5, 5}, f32}, {{4, 3, 3, 3}, f32}, {{2, 4, 3, 3}, f32}}},
      {MakeOp("ConvGradient", {"x", "w", "dy"}, {"dw"}, {IntArg("no_bias", 1)}),
       {{{1, 2, 4}, f64}, {{3, 2, 2}, f64}, {{1, 3, 3}, f64}}},
      {MakeOp("ConvTranspose", {"x", "w", "b"}, {"y"},
              {IntArg("stride", 2), IntArg("pad", 1), IntArg("adj", 1)}),
       {{{2, 3, 4, 3}, f32}, {{3, 2, 3, 3}, f32}, {{2}, f32}}},
      {MakeOp("ConvTranspose", {"x", "w"}, {"y"},
              {IntArg("group", 2), testing::StringArg("order", "NHWC")}),
       {{{1, 3, 2}, f64}, {{2, 2, 3}, f64}}},
      {MakeOp("ConvTransposeGradient", {"x", "w", "dy"}, {"dw", "db", "dx"}),
       {{{2, 3, 4, 4}, f32}, {{3, 2, 3, 3}, f32}, {{2, 2, 6, 6}, f32}}},
      // Normalization and pooling (spatial_batch_norm_op, layer_norm_op,
      // instance_norm_op, lrn_op, pool_op).
      {MakeOp("SpatialBN", {"x", "s", "b", "m", "v"}, {"y"}, {IntArg("is_test", 1)}),
       {{{2, 3, 4}, f32}, {{3}, f32}, {{3}, f32}, {{3}, f32}, {{3}, f32}}},
      {MakeOp("SpatialBN", {"x", "s", "b", "m", "v"}, {"y", "m", "v", "sm", "siv"},
              {testing::StringArg("order", "NHWC")}),
       {{{2, 2, 5}, f64}, {{5}, f64}, {{5}, f64}, {{5}, f64}, {{5}, f64}}},
      {MakeOp("SpatialBNGradient", {"x", "s", "dy", "sm", "siv"}, {"dx", "ds", "db"}),
       {{{2, 3, 4}, f32}, {{3}, f32}, {{2, 3, 4}, f32}, {{3}, f32}, {{3}, f32}}},
      {MakeOp("ChannelStats", {"x"}, {"sum", "sumsq"}), {{{2, 3, 4, 2}, f32}}},
      {MakeOp("ChannelStats", {"x"}, {"sum", "sumsq"}, {testing::StringArg("order", "NHWC")}),
       {{{2, 4, 5}, f64}}},
      {MakeOp("ChannelBackpropStats", {"x", "m", "siv", "dy"}, {"ds", "db"}),
       {{{2, 3, 4}, f64}, {{3}, f64}, {{3}, f64}, {{2, 3, 4}, f64}}},
      {MakeOp("LayerNorm", {"x"}, {"y", "mean", "std"}, {IntArg("axis", 2)}),
       {{{2, 3, 4}, f32}}},
      {MakeOp("LayerNorm", {"x", "g", "b"}, {"y", "mean", "std"},
              {IntArg("axis", -1), IntArg("elementwise_affine", 1)}),
       {{{3, 5}, f64}, {{5}, f64}, {{5}, f64}}},
      {MakeOp("InstanceNorm", {"x", "s", "b"}, {"y", "mean", "inv_std"},
              {testing::StringArg("order", "NHWC")}),
       {{{2, 3, 3, 4}, f32}, {{4}, f32}, {{4}, f32}}},
      {MakeOp("InstanceNorm", {"x", "s", "b"}, {"y"}), {{{1, 2, 3}, f64}, {{2}, f64}, {{2}, f64}}},
      {MakeOp("LRN", {"x"}, {"y", "scale"}, {IntArg("size", 3)}), {{{1, 4, 2, 2}, f32}}},
      {MakeOp("LRNGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("size", 3)}),
       {{{1, 4, 2, 2}, f32}, {{1, 4, 2, 2}, f32}, {{1, 4, 2, 2}, f32}}},
      {MakeOp("MaxPool", {"x"}, {"y"}, {IntArg("kernel", 2), IntArg("stride", 2)}),
       {{{2, 3, 5, 4}, f32}}},
      {MakeOp("MaxPool", {"x"}, {"y"},
              {IntArg("global_pooling", 1), testing::StringArg("order", "NHWC")}),
       {{{2, 3, 5, 4}, f64}}},
      {MakeOp("MaxPool1D", {"x"}, {"y"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
       {{{1, 2, 6}, f32}}},
      {MakeOp("MaxPool2D", {"x"}, {"y"}, {IntsArg("kernels", {2, 3})}), {{{1, 1, 4, 4}, f32}}},
      {MakeOp("MaxPool3D", {"x"}, {"y"}, {IntArg("kernel", 2)}), {{{1, 1, 3, 3, 3}, f32}}},
      {MakeOp("AveragePool", {"x"}, {"y"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
       {{{1, 2, 5, 5, 5}, f32}}},
      {MakeOp("AveragePool1D", {"x"}, {"y"},
              {IntArg("kernel", 2), IntArg("count_include_pad", 1), IntArg("pad", 1)}),
       {{{2, 3, 3}, f64}}},
      {MakeOp("AveragePool2D", {"x"}, {"y"}, {IntArg("kernel", 2), IntArg("stride", 2),
                                              testing::StringArg("order", "NHWC")}),
       {{{1, 4, 6, 3}, f32}}},
      {MakeOp("AveragePool3D", {"x"}, {"y"}, {IntArg("global_pooling", 1)}),
       {{{1, 2, 2, 3, 4}, f32}}},
      {MakeOp("MaxPoolGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 2)}),
       {{{1, 2, 3, 3}, f32}, {{1, 2, 2, 2}, f32}, {{1, 2, 2, 2}, f32}}},
      {MakeOp("MaxPool1DGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 2)}),
       {{{1, 2, 3}, f64}, {{1, 2, 2}, f64}, {{1, 2, 2}, f64}}},
      {MakeOp("MaxPool2DGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("global_pooling", 1)}),
       {{{1, 2, 3, 3}, f32}, {{1, 2, 1, 1}, f32}, {{1, 2, 1, 1}, f32}}},
      {MakeOp("MaxPool3DGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 1)}),
       {{{1, 1, 2, 2, 2}, f32}, {{1, 1, 2, 2, 2}, f32}, {{1, 1, 2, 2, 2}, f32}}},
      {MakeOp("AveragePoolGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 2)}),
       {{{1, 2, 3, 3}, f32}, {{1, 2, 2, 2}, f32}, {{1, 2, 2, 2}, f32}}},
      {MakeOp("AveragePool1DGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 3)}),
       {{{2, 1, 3}, f32}, {{2, 1, 1}, f32}, {{2, 1, 1}, f32}}},
      {MakeOp("AveragePool2DGradient", {"x", "y", "dy"}, {"dx"},
              {IntArg("kernel", 2), testing::StringArg("order", "NHWC")}),
       {{{1, 3, 3, 2}, f64}, {{1, 2, 2, 2}, f64}, {{1, 2, 2, 2}, f64}}},
      {MakeOp("AveragePool3DGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 2)}),
       {{{1, 1, 2, 2, 2}, f32}, {{1, 1, 1, 1, 1}, f32}, {{1, 1, 1, 1, 1}, f32}}},
  };
  // Dense ops and reductions (fc_op, matmul_op, reduce_op, reduce_elements_op).
  const std::vector<Case> dense_cases = {
      {MakeOp("FC", {"x", "w", "b"}, {"y"}), {{{2, 3, 4}, f32}, {{5, 12}, f32}, {{5}, f32}}},
      {MakeOp("FC", {"x", "w", "b"}, {"y"}, {IntArg("axis", 2), IntArg("axis_w", -1)}),
       {{{2, 3, 4}, f64}, {{5, 4}, f64}, {{5}, f64}}},
      {MakeOp("FCTransposed", {"x", "w", "b"}, {"y"}),
       {{{2, 3}, f32}, {{3, 2, 2}, f32}, {{4}, f32}}},
      {MakeOp("FCGradient", {"x", "w", "dy"}, {"dw", "db", "dx"}),
       {{{2, 6}, f32}, {{5, 3, 2}, f32}, {{2, 5}, f32}}},
      {MakeOp("FCGradient", {"x", "w", "dy"}, {"dw", "db"}),
       {{{2, 3}, f64}, {{4, 3}, f64}, {{2, 4}, f64}}},
      {MakeOp("FCTransposedGradient", {"x", "w", "dy"}, {"dw", "db", "dx"}),
       {{{2, 3}, f32}, {{3, 4}, f32}, {{2, 4}, f32}}},
      {MakeOp("MatMul", {"a", "b"}, {"y"}), {{{2, 3}, f32}, {{3, 4}, f32}}},
      {MakeOp("MatMul", {"a", "b"}, {"y"},
              {IntArg("trans_a", 1), IntArg("trans_b", 1), IntArg("axis_a", 2)}),
       {{{3, 1, 2, 2}, f64}, {{5, 3}, f64}}},
      {MakeOp("MatMul", {"a", "b", "like"}, {"y"}),
       {{{2, 3}, f32}, {{3, 4}, f32}, {{2, 2, 2}, f32}}},
      {MakeOp("BatchMatMul", {"a", "b"}, {"y"}), {{{2, 3, 4}, f32}, {{2, 4, 5}, f32}}},
      {MakeOp("BatchMatMul", {"a", "b"}, {"y"}, {IntArg("broadcast", 1), IntArg("trans_b", 1)}),
       {{{4, 1, 2, 3}, f64}, {{5, 6, 3}, f64}}},
      {MakeOp("BatchMatMul", {"a", "b"}, {"y"}, {IntArg("broadcast", 1)}),
       {{{3}, f32}, {{2, 3, 4}, f32}}},
      {MakeOp("BatchMatMul", {"a", "b"}, {"y"}, {IntArg("broadcast", 1)}),
       {{{3}, f32}, {{3}, f32}}},
      {MakeOp("ReduceSum", {"x"}, {"y"}, {IntsArg("axes", {0, -1})}),
       {{{2, 3, 4}, f32}}},
      {MakeOp("ReduceSum", {"x"}, {"y"}, {IntArg("keepdims", 0)}), {{{2, 3}, i64}}},
      {MakeOp("ReduceMean", {"x"}, {"y"}, {IntsArg("axes", {1}), IntArg("keepdims", 0)}),
       {{{2, 3, 4}, f64}}},
      {MakeOp("ReduceMax", {"x"}, {"y"}, {IntsArg("axes", {2})}), {{{2, 3, 4}, i32}}},
      {MakeOp("ReduceSumGradient", {"dy", "x", "y"}, {"dx"}, {IntsArg("axes", {1})}),
       {{{2, 1}, f32}, {{2, 3}, f32}, {{2, 1}, f32}}},
      {MakeOp("ReduceMeanGradient", {"dy", "x", "y"}, {"dx"}, {IntArg("keepdims", 0)}),
       {{{}, f64}, {{2, 3}, f64}, {{}, f64}}},
      {MakeOp("ReduceMaxGradient", {"dy", "x", "y"}, {"dx"},
              {IntsArg("axes", {0}), IntArg("keepdims", 0)}),
       {{{3}, f32}, {{2, 3}, f32}, {{3}, f32}}},
      {MakeOp("SumElements", {"x"}, {"s"}), {{{2, 3}, f32}}},
      {MakeOp("SumElementsGradient", {"x", "ds"}, {"dx"}), {{{2, 3}, f64}, {{}, f64}}},
      {MakeOp("RowwiseMax", {"x"}, {"y"}), {{{2, 3, 4}, f32}}},
      {MakeOp("RowwiseMax", {"x"}, {"y"}), {{{3, 4}, f64}}},
      {MakeOp("ColwiseMax", {"x"}, {"y"}), {{{2, 3, 4}, f32}}},
      {MakeOp("RowwiseMaxGradient", {"x", "y", "dy"}, {"dx"}),
       {{{2, 3, 4}, f32}, {{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("ColwiseMaxGradient", {"x", "y", "dy"}, {"dx"}),
       {{{3, 4}, f32}, {{4}, f32}, {{4}, f32}}},
  };
  cases.insert(cases.end(), dense_cases.begin(), dense_cases.end());
  // Sparse and optimizer ops (gather_op, lengths_reducer_ops,
  // segment_reduction_op, iter_op, learning_rate_op, momentum_sgd_op,
  // clip_tensor_op, lpnorm_op). Inputs are zero-filled, so indices are 0 and
  // lengths are 0.
  const std::vector<Case> sparse_optimizer_cases = {
      {MakeOp("Gather", {"d", "i"}, {"y"}), {{{4, 3}, f32}, {{2, 2}, i32}}},
      {MakeOp("Gather", {"d", "i"}, {"y"}), {{{5}, i64}, {{}, i64}}},
      {MakeOp("ScatterAssign", {"d", "i", "s"}, {"d"}),
       {{{3, 2}, f32}, {{2}, i64}, {{2, 2}, f32}}},
      {MakeOp("LengthsSum", {"d", "l"}, {"y"}), {{{0, 3}, f32}, {{2}, i32}}},
      {MakeOp("LengthsMean", {"d", "l"}, {"y"}), {{{0}, f64}, {{3}, i64}}},
      {MakeOp("SparseLengthsSum", {"d", "i", "l"}, {"y"}),
       {{{4, 2}, f32}, {{0}, i64}, {{3}, i32}}},
      {MakeOp("SparseLengthsMean", {"d", "i", "l"}, {"y"}),
       {{{4}, f64}, {{0}, i32}, {{1}, i64}}},
      {MakeOp("UnsortedSegmentSumGradient", {"dy", "ids"}, {"dx"}),
       {{{2, 3}, f32}, {{5}, i32}}},
      {MakeOp("Iter", {"it"}, {"it"}), {{{1}, i64}}},
      {MakeOp("Iter", {}, {"it"}), {}},
      {MakeOp("LearningRate", {"it"}, {"lr"},
              {FloatArg("base_lr", -0.1f), testing::StringArg("policy", "fixed")}),
       {{{1}, i64}}},
      {MakeOp("MomentumSGD", {"g", "m", "lr"}, {"g", "m"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{1}, f32}}},
      {MakeOp("MomentumSGDUpdate", {"g", "m", "lr", "w"}, {"g2", "m2", "w2"}),
       {{{2, 3}, f64}, {{2, 3}, f64}, {{1}, f32}, {{2, 3}, f64}}},
      {MakeOp("SparseMomentumSGDUpdate", {"g", "m", "lr", "w", "i"}, {"g2", "m", "w"}),
       {{{2, 3}, f32}, {{4, 3}, f32}, {{1}, f32}, {{4, 3}, f32}, {{2}, i64}}},
      {MakeOp("FP16MomentumSGDUpdate", {"g", "m", "lr", "w"}, {"g", "m", "w"},
              {FloatArg("momentum", 0.9f), FloatArg("weight_decay", 0.01f)}),
       {{{2, 3}, DataType::kFloat16}, {{2, 3}, DataType::kFloat16}, {{1}, f32},
        {{2, 3}, DataType::kFloat16}}},
      {MakeOp("FP32MomentumSGDUpdate", {"g", "m", "lr", "w"}, {"g2", "m2", "w2"}),
       {{{4}, f32}, {{4}, f32}, {{1}, f32}, {{4}, f32}}},
      {MakeOp("ClipTensorByScaling", {"x", "v"}, {"y"}, {FloatArg("threshold", 1)}),
       {{{3}, f32}, {{1}, f32}}},
      {MakeOp("LpNorm", {"x"}, {"z"}), {{{2, 2}, f64}}},
      {MakeOp("LpNormGradient", {"x", "dz"}, {"dx"}, {IntArg("p", 1)}),
       {{{2, 2}, f32}, {{1}, f32}}},
  };
  cases.insert(cases.end(), sparse_optimizer_cases.begin(), sparse_optimizer_cases.end());
  // Activations, softmax, dropout, losses and metrics (activation_ops,
  // prelu_op, softmax_op, dropout_op, softmax_with_loss_op, cross_entropy_op,
  // loss_ops). Zero-filled labels are class 0, a valid label.
  const auto b8 = DataType::kBool;
  std::vector<Case> activation_loss_cases;
  for (const char* type : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Softplus"}) {
    activation_loss_cases.push_back({MakeOp(type, {"x"}, {"y"}), {{{2, 3}, f32}}});
    activation_loss_cases.push_back({MakeOp(std::string(type) + "Gradient", {"y", "dy"}, {"dx"}),
                                     {{{4}, f64}, {{4}, f64}}});
  }
  const std::vector<Case> more_activation_loss_cases = {
      {MakeOp("PRelu", {"x", "w"}, {"y"}), {{{2, 3, 2}, f32}, {{3}, f32}}},
      {MakeOp("SequenceMask", {"x", "len"}, {"y"}, {testing::StringArg("mode", "sequence")}),
       {{{2, 3}, f32}, {{2}, i32}}},
      {MakeOp("NanCheck", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("ElementwiseLinear", {"x", "a", "b"}, {"y"}, {IntArg("axis", 1)}),
       {{{2, 3, 2}, f32}, {{6}, f32}, {{6}, f32}}},
      {MakeOp("PReluGradient", {"y", "dy", "x", "w"}, {"dx", "dw"}),
       {{{2, 3}, f64}, {{2, 3}, f64}, {{2, 3}, f64}, {{1}, f64}}},
      {MakeOp("Softmax", {"x"}, {"y"}), {{{2, 3, 4}, f32}}},
      {MakeOp("SoftmaxGradient", {"y", "dy"}, {"dx"}), {{{2, 3}, f64}, {{2, 3}, f64}}},
      {MakeOp("LogSoftmax", {"x"}, {"y"}, {IntArg("axis", -1)}), {{{2, 3}, f64}}},
      {MakeOp("LogSoftmaxGradient", {"y", "dy"}, {"dx"}), {{{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("Dropout", {"x"}, {"y", "mask"}), {{{3, 2}, f32}}},
      {MakeOp("Dropout", {"x"}, {"y"}, {IntArg("is_test", 1)}), {{{5}, f64}}},
      {MakeOp("DropoutGrad", {"dy", "mask"}, {"dx"}), {{{3, 2}, f32}, {{3, 2}, b8}}},
      {MakeOp("SoftmaxWithLoss", {"x", "l"}, {"p", "loss"}), {{{2, 3}, f32}, {{2}, i32}}},
      {MakeOp("SoftmaxWithLoss", {"x", "l", "w"}, {"p", "loss"}, {IntArg("spatial", 1)}),
       {{{2, 3, 2, 2}, f64}, {{2, 2, 2}, i64}, {{2, 2, 2}, f64}}},
      {MakeOp("SoftmaxWithLossGradient", {"x", "l", "p", "dl"}, {"dx"}),
       {{{2, 3}, f32}, {{2}, i32}, {{2, 3}, f32}, {{}, f32}}},
      {MakeOp("LabelCrossEntropy", {"x", "l"}, {"y"}), {{{2, 3}, f32}, {{2}, i32}}},
      {MakeOp("LabelCrossEntropy", {"x", "l"}, {"y"}), {{{3}, f64}, {{1, 1}, i64}}},
      {MakeOp("LabelCrossEntropyGradient", {"x", "l", "dy"}, {"dx"}),
       {{{2, 3}, f32}, {{2}, i32}, {{2}, f32}}},
      {MakeOp("CrossEntropy", {"x", "l"}, {"y"}), {{{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("CrossEntropyGradient", {"x", "l", "dy"}, {"dx"}),
       {{{2, 3}, f64}, {{2, 3}, f64}, {{2}, f64}}},
      {MakeOp("SigmoidCrossEntropyWithLogits", {"x", "t"}, {"y"}), {{{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("SigmoidCrossEntropyWithLogits", {"x", "t"}, {"y"}), {{{}, f64}, {{}, f64}}},
      {MakeOp("SigmoidCrossEntropyWithLogitsGradient", {"g", "x", "t"}, {"dx"}),
       {{{2}, f32}, {{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("SquaredL2Distance", {"x", "y"}, {"d"}), {{{4, 2}, f32}, {{4, 2}, f32}}},
      {MakeOp("SquaredL2Distance", {"x", "y"}, {"d"}), {{{}, f64}, {{}, f64}}},
      {MakeOp("SquaredL2DistanceGradient", {"x", "y", "dd"}, {"dx", "dy"}),
       {{{4, 2}, f64}, {{4, 2}, f64}, {{4}, f64}}},
      {MakeOp("AveragedLoss", {"x"}, {"y"}), {{{2, 3}, f64}}},
      {MakeOp("AveragedLossGradient", {"x", "dy"}, {"dx"}), {{{2, 3}, f32}, {{}, f32}}},
      {MakeOp("Accuracy", {"x", "l"}, {"a"}), {{{4, 3}, f64}, {{4}, i64}}},
  };
  activation_loss_cases.insert(activation_loss_cases.end(), more_activation_loss_cases.begin(),
                               more_activation_loss_cases.end());
  cases.insert(cases.end(), activation_loss_cases.begin(), activation_loss_cases.end());
  // Elementwise and shape ops.
  const auto boolean = DataType::kBool;
  const std::vector<Case> elementwise_shape_cases = {
      {MakeOp("Sub", {"a", "b"}, {"c"}), {{{2, 3}, f32}, {{3}, f32}}},
      {MakeOp("Mul", {"a", "b"}, {"c"}), {{{4, 1}, i32}, {{1, 5}, i32}}},
      {MakeOp("Div", {"a", "b"}, {"c"}, {IntArg("broadcast", 1)}), {{{2, 3}, f64}, {{3}, f64}}},
      {MakeOp("SubGradient", {"dc", "a", "b"}, {"da", "db"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{1, 3}, f32}}},
      {MakeOp("MulGradient", {"dc", "a", "b"}, {"da", "db"}),
       {{{2, 3}, f64}, {{2, 1}, f64}, {{3}, f64}}},
      {MakeOp("DivGradient", {"dc", "a", "b", "c"}, {"da", "db"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{3}, f32}, {{2, 3}, f32}}},
      {MakeOp("DivGradient", {"b", "c", "dc"}, {"da", "db"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("EQ", {"a", "b"}, {"c"}), {{{2, 3}, i64}, {{3}, i64}}},
      {MakeOp("NE", {"a", "b"}, {"c"}), {{{2, 1}, f32}, {{4}, f32}}},
      {MakeOp("LT", {"a", "b"}, {"c"}), {{{3}, f64}, {{3}, f64}}},
      {MakeOp("LE", {"a", "b"}, {"c"}, {IntArg("broadcast", 1)}), {{{2, 3}, i32}, {{3}, i32}}},
      {MakeOp("GT", {"a", "b"}, {"c"}), {{{2, 3}, boolean}, {{2, 3}, boolean}}},
      {MakeOp("GE", {"a", "b"}, {"c"}), {{{1}, f32}, {{2, 2}, f32}}},
      {MakeOp("And", {"a", "b"}, {"c"}), {{{2, 3}, boolean}, {{3}, boolean}}},
      {MakeOp("Or", {"a", "b"}, {"c"}), {{{2, 3}, boolean}, {{2, 3}, boolean}}},
      {MakeOp("Xor", {"a", "b"}, {"c"}), {{{2, 1}, boolean}, {{1, 3}, boolean}}},
      {MakeOp("Not", {"x"}, {"y"}), {{{4}, boolean}}},
      {MakeOp("Neg", {"x"}, {"y"}), {{{2, 3}, i64}}},
      {MakeOp("Negative", {"x"}, {"y"}), {{{2, 3}, i64}}},
      {MakeOp("Exp", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("Log", {"x"}, {"y"}), {{{3}, f64}}},
      {MakeOp("Sqrt", {"x"}, {"y"}), {{{1, 2}, f32}}},
      {MakeOp("Abs", {"x"}, {"y"}), {{{5}, i32}}},
      {MakeOp("AbsGradient", {"x", "dy"}, {"dx"}), {{{2, 2}, f32}, {{2, 2}, f32}}},
      {MakeOp("Clip", {"x"}, {"y"}, {FloatArg("min", 0), FloatArg("max", 1)}), {{{3, 2}, f64}}},
      {MakeOp("ClipGradient", {"y", "dy"}, {"dx"}), {{{3}, f32}, {{3}, f32}}},
      {MakeOp("Pow", {"x"}, {"y"}, {FloatArg("exponent", 2)}), {{{2, 3}, f32}}},
      {MakeOp("Pow", {"x", "e"}, {"y"}, {IntArg("broadcast", 1)}), {{{2, 3}, f64}, {{3}, f64}}},
      {MakeOp("Max", {"a", "b", "c"}, {"y"}), {{{2, 3}, f32}, {{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("Min", {"a"}, {"y"}), {{{4}, i64}}},
      {MakeOp("MaxGradient", {"y", "dy", "a", "b"}, {"da", "db"}),
       {{{2}, f32}, {{2}, f32}, {{2}, f32}, {{2}, f32}}},
      {MakeOp("MinGradient", {"y", "dy", "a"}, {"da"}), {{{3}, f64}, {{3}, f64}, {{3}, f64}}},
      {MakeOp("WeightedSum", {"a", "wa", "b", "wb"}, {"y"}),
       {{{2, 3}, f32}, {{1}, f32}, {{2, 3}, f32}, {{1}, f32}}},
      {MakeOp("Reshape", {"x"}, {"y", "old"}, {IntsArg("shape", {0, -1})}), {{{2, 3, 4}, f32}}},
      {MakeOp("Flatten", {"x"}, {"y"}), {{{2, 3, 4}, i32}}},
      {MakeOp("Flatten", {"x"}, {"y"}, {IntArg("axis", -1)}), {{{2, 3, 4}, f32}}},
      {MakeOp("FlattenToVec", {"x"}, {"y"}), {{{2, 3}, f64}}},
      {MakeOp("ResizeLike", {"x", "s"}, {"y"}), {{{6}, f32}, {{3, 2}, i32}}},
      {MakeOp("Transpose", {"x"}, {"y"}), {{{2, 3, 4}, f32}}},
      {MakeOp("Transpose", {"x"}, {"y"}, {IntsArg("axes", {1, 2, 0})}), {{{2, 3, 4}, i64}}},
      {MakeOp("NCHW2NHWC", {"x"}, {"y"}), {{{2, 3, 4, 5}, f32}}},
      {MakeOp("AffineChannel", {"x", "s", "b"}, {"y"}), {{{2, 3, 4}, f32}, {{3}, f32}, {{3}, f32}}},
      {MakeOp("IsEmpty", {"x"}, {"e"}), {{{2, 0}, f32}}},
      {MakeOp("GatherElements", {"x", "i"}, {"y"}, {IntArg("axis", 1)}),
       {{{2, 3, 4}, f32}, {{2, 5, 4}, i64}}},
      {MakeOp("HasElements", {"x", "z"}, {"e"}), {{{2, 3}, f64}, {{0}, f32}}},
      {MakeOp("RoIAlign", {"x", "r"}, {"y"}, {IntArg("pooled_h", 2), IntArg("pooled_w", 3)}),
       {{{1, 2, 5, 6}, f32}, {{3, 5}, f32}}},
      {MakeOp("RoIAlign", {"x", "r"}, {"y"},
              {IntArg("pooled_h", 3), testing::StringArg("order", "NHWC")}),
       {{{2, 5, 6, 4}, f64}, {{2, 4}, f64}}},
      {MakeOp("RoIAlignRotated", {"x", "r"}, {"y"}, {IntArg("pooled_h", 2), IntArg("pooled_w", 3)}),
       {{{1, 2, 5, 6}, f32}, {{3, 6}, f32}}},
      {MakeOp("ResizeNearest", {"x"}, {"y"},
              {FloatArg("height_scale", 2), FloatArg("width_scale", 1.5)}),
       {{{1, 2, 3, 5}, f32}}},
      {MakeOp("ResizeNearest", {"x"}, {"y"},
              {FloatArg("height_scale", 0.5), testing::StringArg("order", "NHWC")}),
       {{{2, 5, 3, 4}, f64}}},
      {MakeOp("NHWC2NCHW", {"x"}, {"y"}), {{{2, 4, 5, 3}, f32}}},
      {MakeOp("Concat", {"a", "b"}, {"y", "info"}, {IntArg("axis", -1)}),
       {{{2, 3}, f32}, {{2, 5}, f32}}},
      {MakeOp("Concat", {"a", "b"}, {"y", "info"}, {IntArg("axis", 1), IntArg("add_axis", 1)}),
       {{{2, 3}, i32}, {{2, 3}, i32}}},
      {MakeOp("Split", {"x"}, {"a", "b"}, {IntArg("axis", 0), IntsArg("split", {1, 3})}),
       {{{4, 2}, f32}}},
      {MakeOp("Split", {"x"}, {"a", "b"}), {{{2, 6, 2}, f64}}},
      {MakeOp("Slice", {"x"}, {"y"}, {IntsArg("starts", {1, 0}), IntsArg("ends", {-1, 2})}),
       {{{3, 4}, f32}}},
      {MakeOp("SliceGradient", {"x", "dy"}, {"dx"},
              {IntsArg("starts", {1, 0}), IntsArg("ends", {-1, 2})}),
       {{{3, 4}, f32}, {{2, 2}, f32}}},
      {MakeOp("Squeeze", {"x"}, {"y"}, {IntsArg("dims", {0, 2})}), {{{1, 3, 1, 2}, f32}}},
      {MakeOp("ExpandDims", {"x"}, {"y"}, {IntsArg("dims", {0, 3})}), {{{3, 2}, i64}}},
      {MakeOp("Cast", {"x"}, {"y"}, {IntArg("to", 10)}), {{{2, 3}, f32}}},
      {MakeOp("Cast", {"x"}, {"y"}, {testing::StringArg("to", "float")}), {{{2}, boolean}}},
      {MakeOp("FloatToHalf", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("ReduceFrontSum", {"x"}, {"y"}, {IntArg("num_reduce_dim", 2)}), {{{2, 3, 4}, f32}}},
      {MakeOp("ReduceFrontMean", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("ReduceFrontMax", {"x"}, {"y"}, {IntArg("num_reduce_dim", 0)}), {{{2, 3}, f32}}},
      {MakeOp("ReduceBackSum", {"x"}, {"y"}, {IntArg("num_reduce_dim", 2)}), {{{2, 3, 4}, f32}}},
      {MakeOp("ReduceBackMean", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("ReduceBackMax", {"x"}, {"y"}, {IntArg("num_reduce_dim", 2)}), {{{2, 3}, f32}}},
      {MakeOp("HalfToFloat", {"x"}, {"y"}), {{{4}, DataType::kFloat16}}},
      {MakeOp("Shape", {"x"}, {"y"}), {{{2, 3, 4}, f32}}},
      {MakeOp("Shape", {"x"}, {"y"}, {IntsArg("axes", {2, 0})}), {{{2, 3, 4}, f32}}},
      {MakeOp("StopGradient", {"x"}, {"y"}), {{{2, 3}, f64}}},
  };
  cases.insert(cases.end(), elementwise_shape_cases.begin(), elementwise_shape_cases.end());
  // ONNX support ops (operators/onnx_support_op.cc).
  for (const char* math : {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
                           "Acosh", "Atanh", "Erf"}) {
    cases.push_back({MakeOp(math, {"x"}, {"y"}), {{{2, 3}, f32}}});
    cases.push_back({MakeOp(std::string(math) + "Gradient", {"x", "dy"}, {"dx"}),
                     {{{2, 3}, f64}, {{2, 3}, f64}}});
  }
  for (const char* step : {"Floor", "Ceil", "Round", "Sign"}) {
    cases.push_back({MakeOp(step, {"x"}, {"y"}), {{{4}, f64}}});
  }
  cases.push_back({MakeOp("Where", {"c", "a", "b"}, {"y"}),
                   {{{2, 1}, boolean}, {{1, 3}, f32}, {{2, 3}, f32}}});
  cases.push_back({MakeOp("ExpandGradient", {"dy", "x"}, {"dx"}), {{{2, 3}, f32}, {{1, 3}, f32}}});
  cases.push_back({MakeOp("ArgMax", {"x"}, {"y"}, {IntArg("axis", 1)}), {{{2, 3, 4}, f32}}});
  cases.push_back({MakeOp("ArgMin", {"x"}, {"y"}, {IntArg("axis", 0), IntArg("keepdims", 0)}),
                   {{{2, 3}, f64}}});
  // Ops Caffe2's own tests reach (elementwise, fillers, losses, sparse
  // optimizers, fused 8-bit tables, BatchGather).
  const auto u8 = DataType::kUint8;
  const std::vector<Case> caffe2_surface_cases = {
      {MakeOp("Sqr", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("Swish", {"x"}, {"y"}), {{{2, 3}, f64}}},
      {MakeOp("SwishGradient", {"x", "y", "dy"}, {"dx"}), {{{4}, f32}, {{4}, f32}, {{4}, f32}}},
      {MakeOp("Gelu", {"x"}, {"y"}), {{{2, 3}, f64}}},
      {MakeOp("GeluGradient", {"dy", "x"}, {"dx"}), {{{4}, f32}, {{4}, f32}}},
      {MakeOp("HardSigmoid", {"x"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("HardSigmoidGradient", {"y", "dy"}, {"dx"}), {{{4}, f64}, {{4}, f64}}},
      {MakeOp("HardSwish", {"x"}, {"y"}), {{{3, 2}, f64}}},
      {MakeOp("HardSwishGradient", {"x", "dy"}, {"dx"}), {{{4}, f32}, {{4}, f32}}},
      {MakeOp("DiagonalFill", {}, {"y"}, {IntsArg("shape", {3, 4}), IntArg("value", 2)}), {}},
      {MakeOp("DiagonalFill", {"x"}, {"y"}), {{{2, 2, 2}, f64}}},
      {MakeOp("WeightedSigmoidCrossEntropyWithLogits", {"x", "t", "w"}, {"y"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{2, 3}, f32}}},
      {MakeOp("WeightedSigmoidCrossEntropyWithLogitsGradient", {"g", "x", "t", "w"}, {"dx"}),
       {{{2}, f64}, {{2, 3}, f64}, {{2, 3}, f64}, {{2, 3}, f64}}},
      {MakeOp("SpatialSoftmaxWithLoss", {"x", "l"}, {"p", "loss"}),
       {{{2, 3, 2, 2}, f32}, {{2, 2, 2}, i32}}},
      {MakeOp("SpatialSoftmaxWithLossGradient", {"x", "l", "p", "dl"}, {"dx"}),
       {{{2, 3, 2, 2}, f32}, {{2, 2, 2}, i32}, {{2, 3, 2, 2}, f32}, {{}, f32}}},
      {MakeOp("FloatToFused8BitRowwiseQuantized", {"x"}, {"q"}), {{{3, 5}, f32}}},
      {MakeOp("Fused8BitRowwiseQuantizedToFloat", {"q"}, {"x"}), {{{3, 13}, u8}}},
      {MakeOp("GatherFused8BitRowwise", {"q", "i"}, {"y"}), {{{3, 13}, u8}, {{4}, i64}}},
      {MakeOp("SparseLengthsSumFused8BitRowwise", {"q", "i", "l"}, {"y"}),
       {{{3, 13}, u8}, {{0}, i32}, {{2}, i32}}},
      {MakeOp("SparseLengthsMeanFused8BitRowwise", {"q", "i", "l"}, {"y"}),
       {{{3, 13}, u8}, {{0}, i64}, {{3}, i64}}},
      {MakeOp("SparseLengthsWeightedSumFused8BitRowwise", {"q", "w", "i", "l"}, {"y"}),
       {{{3, 13}, u8}, {{0}, f32}, {{0}, i32}, {{1}, i32}}},
      {MakeOp("BatchGather", {"d", "i"}, {"y"}), {{{2, 3, 4}, f32}, {{2, 2}, i32}}},
      {MakeOp("Lars", {"x", "dx"}, {"r"}), {{{2, 3}, f64}, {{2, 3}, f64}}},
      {MakeOp("MakeTwoClass", {"p"}, {"y"}), {{{2, 3}, f32}}},
      {MakeOp("SparseLengthsWeightedSum", {"d", "w", "i", "l"}, {"y"}),
       {{{3, 2}, f32}, {{0}, f32}, {{0}, i64}, {{2}, i32}}},
      {MakeOp("LpPool", {"x"}, {"y"}, {IntArg("kernel", 2), FloatArg("p", 3)}),
       {{{1, 2, 4, 4}, f32}}},
      {MakeOp("LpPoolGradient", {"x", "y", "dy"}, {"dx"}, {IntArg("kernel", 2)}),
       {{{1, 2, 4, 4}, f64}, {{1, 2, 3, 3}, f64}, {{1, 2, 3, 3}, f64}}},
      {MakeOp("BatchGatherGradient", {"d", "i", "dy"}, {"dd"}),
       {{{2, 3}, f32}, {{5}, i64}, {{2, 5}, f32}}},
  };
  cases.insert(cases.end(), caffe2_surface_cases.begin(), caffe2_surface_cases.end());
  // In-process collectives (parallel/), linked into every test.
  cases.push_back({MakeOp("Allreduce", {"a", "b", "c"}, {"a", "b", "c"}),
                   {{{3, 2}, f32}, {{3, 2}, f32}, {{3, 2}, f32}}});
  cases.push_back({MakeOp("Broadcast", {"a", "b"}, {"a", "b"}, {IntArg("root", 1)}),
                   {{{2}, f32}, {{4, 1}, f64}}});
  cases.push_back({MakeOp("ShardSlice", {"a"}, {"b"},
                          {IntArg("num_shards", 3), IntArg("shard_id", 2)}),
                   {{{4, 2}, f64}}});
  cases.push_back({MakeOp("MicroBatchSlice", {"a", "s"}, {"b"}, {IntArg("micro_batches", 3)}),
                   {{{6, 2}, f64}, {{}, DataType::kInt64}}});
  return cases;
}

TEST(ShapeInferenceTest, InferredShapesMatchKernels) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.def.ShortDebugString());
    const OpSchema* schema = OpSchemaRegistry::Schema(c.def.type());
    ASSERT_NE(schema, nullptr);
    ASSERT_TRUE(schema->has_shape_inference());
    Workspace ws;
    std::vector<TensorShape> input_shapes;
    for (int i = 0; i < c.def.input_size(); ++i) {
      Tensor* tensor = ws.CreateBlob(c.def.input(i))->GetMutableTensor();
      Fill(tensor, c.inputs.at(i).first, c.inputs.at(i).second);
      input_shapes.push_back(ShapeOf(*tensor));
    }
    const std::vector<TensorShape> inferred = schema->InferTensor(c.def, input_shapes);
    ws.RunOperatorOnce(c.def);
    ASSERT_EQ(static_cast<int>(inferred.size()), c.def.output_size());
    for (int i = 0; i < c.def.output_size(); ++i) {
      const TensorShape actual = ShapeOf(ws.GetBlob(c.def.output(i))->GetTensor());
      EXPECT_EQ(inferred[i].SerializeAsString(), actual.SerializeAsString())
          << "output " << i << ": inferred " << inferred[i].ShortDebugString()
          << ", kernel produced " << actual.ShortDebugString();
    }
  }
}

TEST(ShapeInferenceTest, EveryInferringOpHasACase) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.def.type());
  // Kernels only for CUDA devices: a case here could not run the kernel to
  // compare with. The GPU suite (issue 9) covers their inference.
  const std::set<std::string> cuda_only = {"NCCLAllreduce", "NCCLBroadcast", "NCCLReduce",
                                           "NCCLAllGather", "NCCLReduceScatter",
                                           "CopyCPUToGPU", "CopyGPUToCPU"};
  // Output shapes that depend on input values, not shapes: inference can
  // only say "unknown", which no kernel output equals.
  const std::set<std::string> value_dependent = {"Expand", "LengthsRangeFill"};
  for (const auto& entry : OpSchemaRegistry::All()) {
    if (cuda_only.count(entry.first) || value_dependent.count(entry.first)) continue;
    if (entry.second.has_shape_inference()) {
      EXPECT_TRUE(covered.count(entry.first))
          << entry.first << " infers shapes but has no case in this test";
    }
  }
}

}  // namespace
}  // namespace doppio
