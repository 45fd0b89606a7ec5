// SpatialBN's and SpatialBNGradient's schemas (shape inference, cost,
// arguments) and SpatialBN's gradient maker; the kernels are in
// spatial_batch_norm_op.cc.
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_cost.h"
#include "operators/spatial_batch_norm_op.h"

namespace doppio {

namespace {

std::vector<TensorShape> SpatialBNShapeInference(const OperatorDef& def,
                                                 const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  if (args.GetSingle<bool>("is_test", false)) return {in.at(0)};
  const TensorShape& X = in.at(0);
  const bool channels_last = args.GetSingle<std::string>("order", "NCHW") == "NHWC";
  TensorShape per_channel;
  per_channel.set_data_type(X.data_type());
  if (X.dims_size() >= 2) per_channel.add_dims(X.dims(channels_last ? X.dims_size() - 1 : 1));
  return {X, per_channel, per_channel, per_channel, per_channel};
}

void SpatialBNCommonArgs(OpSchema& schema) {
  schema.Arg("is_test", "(int, default 0) nonzero: normalize with the given mean/var")
      .Arg("epsilon", "(float, default 1e-5) added to the variance before the square root")
      .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
      .Arg("num_batches",
           "(int, default 1) >1: statistics come from per-channel aggregates over that "
           "many batches (inputs sums/sumsq, or dscale/dbias sums in the gradient)");
}

}  // namespace

OPERATOR_SCHEMA(SpatialBN).LowPrecisionInFloat32({1, 2, 3, 4})
    .NumInputs(std::set<int>{5, 7})
    .NumOutputs(std::set<int>{1, 5})
    .AllowInplace({{0, 0}, {5, 3}, {6, 4}})
    .EnforceInplace({{3, 1}, {4, 2}})
    .TensorInferenceFunction(SpatialBNShapeInference)
    .CostInferenceFunction(CostInferenceForSpatialBN)
    .Apply(SpatialBNCommonArgs)
    .Arg("momentum",
         "(float, default 0.9) running = momentum * running + (1 - momentum) * batch")
    .Input(0, "X", "input of rank >= 2, NCHW or NHWC (float32 or float64)")
    .Input(1, "scale", "per-channel scale, C elements")
    .Input(2, "bias", "per-channel bias, C elements")
    .Input(3, "mean", "running mean (training, updated in place) or the mean to use (test)")
    .Input(4, "var", "running variance (training, updated in place) or the variance (test)")
    .Input(5, "sums", "(optional, num_batches > 1) per-channel sums of X over the batches")
    .Input(6, "sumsq", "(optional, num_batches > 1) per-channel sums of X^2")
    .Output(0, "Y", "normalized X, of X's shape")
    .Output(1, "mean", "(training) the updated running mean, in place on input 3")
    .Output(2, "var", "(training) the updated running variance (unbiased), in place on input 4")
    .Output(3, "saved_mean", "(training) the batch mean, for the gradient")
    .Output(4, "saved_var", "(training) the batch's 1 / sqrt(var + epsilon), for the gradient")
    .Doc("Batch normalization per channel: Y = (X - mean) / sqrt(var + epsilon) * scale "
         "+ bias. Training uses the batch's statistics and updates the running ones; "
         "is_test=1 uses inputs mean and var.");

OPERATOR_SCHEMA(SpatialBNGradient).LowPrecisionInFloat32({1, 2})
    .NumInputs(std::set<int>{5, 7})
    .CostInferenceFunction(CostInferenceForSpatialBNGradient)
    .NumOutputs(3)
    .AllowInplace({{5, 1}, {6, 2}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape per_channel = in.at(1);
      per_channel.set_data_type(in.at(0).data_type());
      return std::vector<TensorShape>{in.at(0), per_channel, per_channel};
    })
    .Apply(SpatialBNCommonArgs)
    .Input(0, "X", "SpatialBN's input")
    .Input(1, "scale", "SpatialBN's scale")
    .Input(2, "dY", "gradient of SpatialBN's output")
    .Input(3, "saved_mean", "SpatialBN's saved mean (is_test=1: its mean input)")
    .Input(4, "saved_inv_std", "SpatialBN's saved inverse std (is_test=1: its var input)")
    .Input(5, "dscale_sum", "(optional, num_batches > 1) aggregated scale gradient")
    .Input(6, "dbias_sum", "(optional, num_batches > 1) aggregated bias gradient")
    .Output(0, "dX", "gradient of X")
    .Output(1, "dscale", "gradient of scale")
    .Output(2, "dbias", "gradient of bias")
    .Doc("Gradient of SpatialBN with respect to X, scale and bias.");

namespace {

class GetSpatialBNGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    ArgumentHelper args(Def());
    const bool is_test = args.GetSingle<bool>("is_test", false);
    const int num_batches = args.GetSingle<int>("num_batches", 1);
    std::vector<std::string> inputs;
    if (is_test) {
      DOPPIO_ENFORCE(Def().input_size() == 5 && Def().output_size() == 1,
                     "SpatialBN with is_test=1 needs 5 inputs and 1 output to be "
                     "differentiated");
      inputs = {I(0), I(1), GO(0), I(3), I(4)};
    } else if (num_batches > 1) {
      DOPPIO_ENFORCE(Def().input_size() == 7 && Def().output_size() == 5,
                     "SpatialBN with num_batches > 1 needs 7 inputs and 5 outputs");
      inputs = {I(0), I(1), GO(0), O(3), O(4), GI(1), GI(2)};
    } else {
      DOPPIO_ENFORCE(Def().input_size() == 5 && Def().output_size() == 5,
                     "SpatialBN in training needs 5 inputs and 5 outputs to be "
                     "differentiated");
      inputs = {I(0), I(1), GO(0), O(3), O(4)};
    }
    // is_test, epsilon, order and num_batches travel along.
    return SingleGradientDef("SpatialBNGradient", "", inputs, {GI(0), GI(1), GI(2)},
                             Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(SpatialBN, GetSpatialBNGradient);
SHOULD_NOT_DO_GRADIENT(SpatialBNGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
