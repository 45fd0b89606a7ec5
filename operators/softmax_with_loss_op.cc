#include "operators/softmax_with_loss_op.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/loss_ops.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/softmax_op.h"

namespace doppio {

SoftmaxLossArgs ReadSoftmaxLossArgs(const OperatorBase& op) {
  SoftmaxLossArgs args;
  args.scale = op.GetSingleArgument<float>("scale", 1.0f);
  args.label_prob = op.GetSingleArgument<int>("label_prob", 0) != 0;
  // SpatialSoftmaxWithLoss is SoftmaxWithLoss with spatial=1.
  args.spatial = op.GetSingleArgument<int>("spatial", 0) != 0 ||
                 op.type().rfind("SpatialSoftmaxWithLoss", 0) == 0;
  args.axis = op.GetSingleArgument<int>("axis", 1);
  const std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  DOPPIO_ENFORCE(args.scale >= 0.0f, "argument scale is ", args.scale, "; it must be >= 0");
  DOPPIO_ENFORCE(order == "NCHW", "argument order is '", order, "'; only NCHW is supported");
  if (args.spatial) {
    DOPPIO_ENFORCE(args.axis == 1, "argument axis is ", args.axis,
                   "; spatial=1 supports only axis 1 (the channels of NCHW)");
    DOPPIO_ENFORCE(!args.label_prob, "label_prob=1 is not supported with spatial=1");
  }
  return args;
}

void CheckSoftmaxLossGradientInputs(const OperatorBase& op, const Tensor& X, const Tensor& P,
                                    int p_index, const Tensor& d_loss) {
  DOPPIO_ENFORCE(P.dims() == X.dims() && P.dtype() == X.dtype(), "softmax '",
                 op.input_name(p_index), "' is ", P.DebugString(), " but logits '",
                 op.input_name(0), "' are ", X.DebugString());
  DOPPIO_ENFORCE(d_loss.numel() == 1 && d_loss.dtype() == X.dtype(), "loss gradient '",
                 op.input_name(op.InputSize() - 1), "' is ", d_loss.DebugString(),
                 "; expected one ", DataTypeName(X.dtype()));
}

functors::SoftmaxLossLayout CheckSoftmaxLossInputs(const OperatorBase& op,
                                                   const SoftmaxLossArgs& args, const Tensor& X,
                                                   const Tensor& labels, const Tensor* weights,
                                                   int weights_index) {
  const std::string& x_name = op.input_name(0);
  const std::string& label_name = op.input_name(1);
  functors::SoftmaxLossLayout layout;
  if (args.spatial) {
    DOPPIO_ENFORCE(X.ndim() == 4, "with spatial=1 logits '", x_name,
                   "' must be [N, D, H, W] but have shape ", X.dims());
    const std::vector<int64_t> want = {X.dim(0), X.dim(2), X.dim(3)};
    DOPPIO_ENFORCE(labels.dims() == want, "labels '", label_name, "' have shape ", labels.dims(),
                   "; with spatial=1 they must be [N, H, W] = ", want);
    layout = {X.dim(0), X.dim(1), X.dim(2) * X.dim(3)};
  } else {
    const RowsAndCols split = SplitAtAxis(op, x_name, X, args.axis);
    const int axis = args.axis < 0 ? args.axis + X.ndim() : args.axis;
    layout = {split.rows, split.cols, 1};
    const int64_t n = split.rows;
    if (args.label_prob) {
      const bool ok = labels.ndim() >= 2 && labels.ndim() >= axis &&
                      labels.SizeToDim(axis) == n && labels.SizeFromDim(axis) == split.cols;
      DOPPIO_ENFORCE(ok, "with label_prob=1 labels '", label_name, "' have shape ", labels.dims(),
                     " but must have 2 or more dims and ", "split at axis ", axis, " into ", n,
                     " rows of ", split.cols, " probabilities like logits '", x_name, "' of shape ",
                     X.dims());
      DOPPIO_ENFORCE(labels.dtype() == X.dtype(), "with label_prob=1 labels '", label_name,
                     "' hold ", DataTypeName(labels.dtype()), " but logits '", x_name, "' hold ",
                     DataTypeName(X.dtype()));
    } else {
      bool ok = false;
      if (labels.ndim() == axis) {
        ok = labels.numel() == n;
      } else if (labels.ndim() > axis) {
        ok = labels.SizeToDim(axis) == n && labels.SizeFromDim(axis) == 1;
      }
      DOPPIO_ENFORCE(ok, "labels '", label_name, "' have shape ", labels.dims(), " but logits '",
                     x_name, "' of shape ", X.dims(), " have ", n,
                     " rows; expected one label per row, e.g. [", n, "]");
    }
  }
  if (weights != nullptr) {
    const std::string& w_name = op.input_name(weights_index);
    DOPPIO_ENFORCE(weights->numel() == layout.samples(), "weights '", w_name, "' have shape ",
                   weights->dims(), " (", weights->numel(), " elements) but there are ",
                   layout.samples(), " samples to weight");
    DOPPIO_ENFORCE(weights->dtype() == X.dtype(), "weights '", w_name, "' hold ",
                   DataTypeName(weights->dtype()), " but logits '", x_name, "' hold ",
                   DataTypeName(X.dtype()));
  }
  return layout;
}

namespace {

// Probability rows must be distributions (Caffe2's tolerance); the error
// names the row and what is wrong with it. The shared functor only tells
// whether a row is one.
template <typename T>
void CheckProbabilityRows(const OperatorBase& op, const functors::SoftmaxLossLayout& layout,
                          const T* t) {
  for (int64_t o = 0; o < layout.outer; ++o) {
    if (functors::IsProbabilityRow(layout, o, t)) continue;
    double total = 0;
    for (int64_t c = 0; c < layout.classes; ++c) {
      const T value = t[layout.at(o, c, 0)];
      DOPPIO_ENFORCE(value >= T(0), "label probability ", value, " at row ", o, ", class ", c,
                     " of '", op.input_name(1), "' is negative");
      total += value;
    }
    DOPPIO_THROW("label probabilities of row ", o, " of '", op.input_name(1), "' sum to ", total,
                 ", not 1");
  }
}

// Calls fn(targets) with the checked targets of the op: probability rows,
// or class labels (int32/int64) all within range.
template <typename T, typename Fn>
void WithCheckedTargets(const OperatorBase& op, const SoftmaxLossArgs& args,
                        const functors::SoftmaxLossLayout& layout, const Tensor& labels,
                        const T* weights, Fn&& fn) {
  if (args.label_prob) {
    const T* t = labels.data<T>();
    CheckProbabilityRows(op, layout, t);
    fn(functors::SoftmaxLossTargets<T, int32_t>{layout, nullptr, t, weights, false});
    return;
  }
  DispatchInput(IndexTypes{}, op, 1, labels.dtype(), [&](auto label_tag) {
    using L = typename decltype(label_tag)::type;
    const L* label = labels.data<L>();
    loss::CheckLabelRange(op, op.input_name(1), label, layout.samples(), layout.classes,
                          args.spatial, static_cast<L>(functors::kIgnoredLabel));
    fn(functors::SoftmaxLossTargets<T, L>{layout, label, nullptr, weights, args.spatial});
  });
}

}  // namespace

// ---- forward ----

SoftmaxWithLossOp::SoftmaxWithLossOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadSoftmaxLossArgs(*this)) {}

void SoftmaxWithLossOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& labels = Input(1);
  const Tensor* weights = InputSize() > 2 ? &Input(2) : nullptr;
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const functors::SoftmaxLossLayout layout =
        CheckSoftmaxLossInputs(*this, args_, X, labels, weights, 2);
    const T* x = X.data<T>();
    const T* w = weights != nullptr ? weights->data<T>() : nullptr;
    Tensor* P = Output(0);
    P->Resize(X.dims());
    T* p = P->template mutable_data<T>();
    double loss_value = 0;
    WithCheckedTargets<T>(*this, args_, layout, labels, w, [&](const auto& targets) {
      loss_value = functors::CpuSoftmaxLoss(targets, x, args_.scale, p);
    });
    Tensor* loss = Output(1);
    loss->Resize({});
    *loss->template mutable_data<T>() = static_cast<T>(loss_value);
  });
}

// ---- gradient ----

SoftmaxWithLossGradientOp::SoftmaxWithLossGradientOp(const OperatorDef& def,
                                                     Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadSoftmaxLossArgs(*this)) {}

void SoftmaxWithLossGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& labels = Input(1);
  const bool weighted = InputSize() == 5;
  const Tensor* weights = weighted ? &Input(2) : nullptr;
  const int p_index = InputSize() - 2;
  const Tensor& P = Input(p_index);
  const Tensor& d_loss = Input(InputSize() - 1);
  CheckSoftmaxLossGradientInputs(*this, X, P, p_index, d_loss);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const functors::SoftmaxLossLayout layout =
        CheckSoftmaxLossInputs(*this, args_, X, labels, weights, 2);
    const T* p = P.data<T>();
    const T* w = weights != nullptr ? weights->data<T>() : nullptr;
    const double dy = static_cast<double>(*d_loss.data<T>());
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    WithCheckedTargets<T>(*this, args_, layout, labels, w, [&](const auto& targets) {
      functors::CpuSoftmaxLossGradient(targets, p, args_.scale, dy, dx);
    });
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(SoftmaxWithLoss, SoftmaxWithLossOp);
REGISTER_CPU_OPERATOR(SoftmaxWithLossGradient, SoftmaxWithLossGradientOp);
REGISTER_CPU_OPERATOR(SpatialSoftmaxWithLoss, SoftmaxWithLossOp);
REGISTER_CPU_OPERATOR(SpatialSoftmaxWithLossGradient, SoftmaxWithLossGradientOp);

namespace {

void SoftmaxLossArgDocs(OpSchema& schema) {
  schema.Arg("scale", "(float, default 1.0) multiplies the loss; must be >= 0")
      .Arg("label_prob", "(int, default 0) 1: labels are probability rows, not classes")
      .Arg("spatial", "(int, default 0) 1: X is [N, D, H, W], one softmax per pixel, labels "
                      "[N, H, W] with -1 ignored")
      .Arg("axis", "(int, default 1) X is split at axis into rows and classes")
      .Arg("order", "(string, default NCHW) only NCHW is supported");
}

// The softmax has the logits' shape; the loss is a scalar of their type.
std::vector<TensorShape> SoftmaxAndLossShapes(const OperatorDef&,
                                              const std::vector<TensorShape>& in) {
  TensorShape loss;
  loss.set_data_type(in.at(0).data_type());
  return {in.at(0), loss};
}

std::vector<TensorShape> LikeLogits(const OperatorDef&, const std::vector<TensorShape>& in) {
  return {in.at(0)};
}

// What SoftmaxWithLoss and SpatialSoftmaxWithLoss share; they describe
// their inputs and outputs themselves.
void ForwardSchema(OpSchema& schema) {
  schema.NumInputs(2, 3)
      .CostInferenceFunction(CostInferenceForSoftmaxWithLoss)
      .NumOutputs(2)
      .TensorInferenceFunction(SoftmaxAndLossShapes)
      .Apply(SoftmaxLossArgDocs);
}

// The gradients' common part: inputs X, labels, [weights], P, d_loss.
void GradientSchema(OpSchema& schema) {
  schema.NumInputs(4, 5)
      .CostInferenceFunction(PointwiseCostInference(2))
      .NumOutputs(1)
      .TensorInferenceFunction(LikeLogits)
      .Apply(SoftmaxLossArgDocs)
      .Input(0, "X", "the forward logits")
      .Input(1, "labels", "the forward labels")
      .Input(2, "weight_tensor", "the forward weights, when given (then P and d_loss shift by 1)")
      .Input(3, "P", "the forward softmax output")
      .Input(4, "d_loss", "gradient of the loss (one element)");
}

}  // namespace

OPERATOR_SCHEMA(SoftmaxWithLoss)
    .Apply(ForwardSchema)
    .Input(0, "logits", "unscaled log probabilities, float32/float64")
    .Input(1, "labels", "int32/int64 classes in [0, D), or probability rows with label_prob=1")
    .Input(2, "weight_tensor", "optional weight per row (per pixel with spatial=1)")
    .Output(0, "softmax", "softmax of the logits, of their shape")
    .Output(1, "loss", "scale * weighted mean cross entropy, a scalar")
    .Doc(
        "Softmax followed by cross-entropy against the labels, computed together for "
        "numerical stability; the loss is the weighted mean over rows, times scale.");

OPERATOR_SCHEMA(SoftmaxWithLossGradient)
    .Apply(GradientSchema)
    .Output(0, "dX", "gradient of the logits")
    .Doc(
        "Gradient of SoftmaxWithLoss for the logits: (P - target) * weight, times "
        "scale * d_loss over the weight sum.");

OPERATOR_SCHEMA(SpatialSoftmaxWithLoss)
    .Apply(ForwardSchema)
    .Input(0, "logits", "[N, D, H, W] unscaled log probabilities, float32/float64")
    .Input(1, "labels", "[N, H, W] int32/int64 classes in [0, D); -1 marks a pixel ignored")
    .Input(2, "weight_tensor", "optional weight per pixel, [N, H, W]")
    .Output(0, "softmax", "softmax over D at every pixel, of the logits' shape")
    .Output(1, "loss", "weighted mean cross entropy over the pixels not ignored, a scalar")
    .Doc(
        "SoftmaxWithLoss with spatial=1: one softmax and cross entropy per pixel of "
        "NCHW logits.");

OPERATOR_SCHEMA(SpatialSoftmaxWithLossGradient)
    .Apply(GradientSchema)
    .Output(0, "dX", "gradient of the logits; 0 at ignored pixels")
    .Doc("Gradient of SpatialSoftmaxWithLoss for the logits.");

namespace {

class GetSoftmaxWithLossGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs = {I(0), I(1)};
    if (Def().input_size() == 3) inputs.push_back(I(2));
    inputs.push_back(O(0));
    inputs.push_back(GO(1));
    return SingleGradientDef(Def().type() + "Gradient", "", inputs, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(SoftmaxWithLoss, GetSoftmaxWithLossGradient);
REGISTER_GRADIENT(SpatialSoftmaxWithLoss, GetSoftmaxWithLossGradient);
SHOULD_NOT_DO_GRADIENT(SoftmaxWithLossGradient,
                       "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(SpatialSoftmaxWithLossGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
