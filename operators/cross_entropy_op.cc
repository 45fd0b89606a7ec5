#include "operators/cross_entropy_op.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/elementwise_functors.h"
#include "operators/loss_ops.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

// Caffe2's floor under probabilities before their log.
constexpr double kLogThreshold = 1e-20;

template <typename T>
T ClampedProbability(T p) {
  return std::max(p, static_cast<T>(kLogThreshold));
}

// X as [N, D]: N = dim 0 and D the rest, or N = 1 for a vector.
struct BatchShape {
  int64_t n = 1;
  int64_t d = 1;
};

BatchShape BatchShapeOf(const OperatorBase& op, const Tensor& X) {
  DOPPIO_ENFORCE(X.ndim() >= 1, "input '", op.input_name(0),
                 "' is a scalar; expected [N, D] probabilities (or a vector of D)");
  if (X.ndim() == 1) return {1, X.dim(0)};
  return {X.dim(0), X.SizeFromDim(1)};
}

void CheckClassLabelShape(const OperatorBase& op, const Tensor& label, int64_t n) {
  const bool ok = (label.ndim() == 1 && label.dim(0) == n) ||
                  (label.ndim() == 2 && label.dim(0) == n && label.dim(1) == 1);
  DOPPIO_ENFORCE(ok, "label '", op.input_name(1), "' has shape ", label.dims(), " but '",
                 op.input_name(0), "' has ", n, " rows; expected [", n, "] or [", n, ", 1]");
}

void CheckSoftLabelShape(const OperatorBase& op, const Tensor& X, const Tensor& label,
                         const BatchShape& shape) {
  const bool ok = label.dims() == X.dims() ||
                  (label.ndim() == 2 && label.dim(0) == shape.n && label.dim(1) == shape.d);
  DOPPIO_ENFORCE(ok, "label '", op.input_name(1), "' has shape ", label.dims(), " but '",
                 op.input_name(0), "' has shape ", X.dims(), "; expected X's shape or [", shape.n,
                 ", ", shape.d, "]");
  DOPPIO_ENFORCE(label.dtype() == X.dtype(), "label '", op.input_name(1), "' holds ",
                 DataTypeName(label.dtype()), " but '", op.input_name(0), "' holds ",
                 DataTypeName(X.dtype()),
                 "; soft labels are probabilities of X's type (LabelCrossEntropy takes "
                 "integer classes)");
}

// dY of a per-row loss: [N], of X's type.
void CheckRowGradient(const OperatorBase& op, int index, const Tensor& dY, int64_t n,
                      DataType dtype) {
  DOPPIO_ENFORCE(dY.ndim() == 1 && dY.dim(0) == n, "gradient '", op.input_name(index),
                 "' has shape ", dY.dims(), "; expected [", n, "]");
  DOPPIO_ENFORCE(dY.dtype() == dtype, "gradient '", op.input_name(index), "' holds ",
                 DataTypeName(dY.dtype()), " but the loss is ", DataTypeName(dtype));
}

// Calls fn(x, labels) with X's float type and label's integer type, after
// checking every label names one of the shape.d classes.
template <typename Fn>
void DispatchClassLabels(const OperatorBase& op, const Tensor& X, const Tensor& label,
                         const BatchShape& shape, Fn&& fn) {
  DispatchTypes(FloatTypes{}, op.input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    DispatchInput(IndexTypes{}, op, 1, label.dtype(), [&](auto label_tag) {
      using L = typename decltype(label_tag)::type;
      const L* labels = label.data<L>();
      loss::CheckLabelRange(op, op.input_name(1), labels, shape.n, shape.d);
      fn(X.data<T>(), labels);
    });
  });
}

}  // namespace

// ---- LabelCrossEntropy ----

void LabelCrossEntropyOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& label = Input(1);
  const BatchShape shape = BatchShapeOf(*this, X);
  CheckClassLabelShape(*this, label, shape.n);
  DispatchClassLabels(*this, X, label, shape, [&](auto x, auto labels) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    Tensor* Y = Output(0);
    Y->Resize({shape.n});
    T* y = Y->template mutable_data<T>();
    for (int64_t i = 0; i < shape.n; ++i) {
      // The functor the CUDA kernel runs (elementwise_functors.h).
      y[i] = functors::LabelCrossEntropy{}(x[i * shape.d + labels[i]]);
    }
  });
}

void LabelCrossEntropyGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& label = Input(1);
  const Tensor& dY = Input(2);
  const BatchShape shape = BatchShapeOf(*this, X);
  CheckClassLabelShape(*this, label, shape.n);
  CheckRowGradient(*this, 2, dY, shape.n, X.dtype());
  DispatchClassLabels(*this, X, label, shape, [&](auto x, auto labels) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    std::fill(dx, dx + X.numel(), T(0));
    for (int64_t i = 0; i < shape.n; ++i) {
      const int64_t at = i * shape.d + labels[i];
      dx[at] = functors::LabelCrossEntropyGradient{}(x[at], dy[i]);
    }
  });
}

// ---- CrossEntropy ----

void CrossEntropyOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& label = Input(1);
  const BatchShape shape = BatchShapeOf(*this, X);
  CheckSoftLabelShape(*this, X, label, shape);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* t = label.data<T>();
    for (int64_t i = 0; i < label.numel(); ++i) {
      DOPPIO_ENFORCE(t[i] >= T(0) && t[i] <= T(1), "soft label ", t[i], " at index ", i, " of '",
                     input_name(1),
                     "' is not a probability in [0, 1] (LabelCrossEntropy takes class "
                     "indices)");
    }
    Tensor* Y = Output(0);
    Y->Resize({shape.n});
    T* y = Y->template mutable_data<T>();
    for (int64_t i = 0; i < shape.n; ++i) {
      T sum = 0;
      for (int64_t j = 0; j < shape.d; ++j) {
        const int64_t at = i * shape.d + j;
        sum += t[at] * std::log(ClampedProbability(x[at]));
      }
      y[i] = -sum;
    }
  });
}

void CrossEntropyGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& label = Input(1);
  const Tensor& dY = Input(2);
  const BatchShape shape = BatchShapeOf(*this, X);
  CheckSoftLabelShape(*this, X, label, shape);
  CheckRowGradient(*this, 2, dY, shape.n, X.dtype());
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* t = label.data<T>();
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    for (int64_t i = 0; i < shape.n; ++i) {
      for (int64_t j = 0; j < shape.d; ++j) {
        const int64_t at = i * shape.d + j;
        dx[at] = -t[at] * dy[i] / ClampedProbability(x[at]);
      }
    }
  });
}

// ---- SigmoidCrossEntropyWithLogits ----

namespace {

SigmoidCrossEntropyVariant ReadVariant(const OperatorBase& op) {
  SigmoidCrossEntropyVariant variant;
  variant.log_d_trick = op.GetSingleArgument<bool>("log_D_trick", false);
  variant.unjoined_lr_loss = op.GetSingleArgument<bool>("unjoined_lr_loss", false);
  DOPPIO_ENFORCE(!(variant.log_d_trick && variant.unjoined_lr_loss),
                 "arguments log_D_trick and unjoined_lr_loss cannot both be set");
  return variant;
}

// The last dim is averaged over; a scalar is one row of one element.
struct RowsOfLast {
  int64_t outer = 1;
  int64_t inner = 1;
};

// `inputs` are the logits, the targets and maybe the weights, the op's
// inputs from logits_index on: the others must have the logits' shape and type.
RowsOfLast CheckLogitsAndTargets(const OperatorBase& op, int logits_index,
                                 const std::vector<const Tensor*>& inputs) {
  const Tensor& logits = *inputs[0];
  for (int k = 1; k < static_cast<int>(inputs.size()); ++k) {
    const int slot = logits_index + k;
    const Tensor& other = *inputs[k];
    const char* what = slot == logits_index + 1 ? "targets" : "weights";
    DOPPIO_ENFORCE(logits.dims() == other.dims(), "logits '", op.input_name(logits_index),
                   "' have shape ", logits.dims(), " but ", what, " '", op.input_name(slot),
                   "' have shape ", other.dims());
    DOPPIO_ENFORCE(logits.dtype() == other.dtype(), "logits '", op.input_name(logits_index),
                   "' hold ", DataTypeName(logits.dtype()), " but ", what, " '",
                   op.input_name(slot), "' hold ", DataTypeName(other.dtype()));
  }
  if (logits.ndim() == 0) return {};
  return {logits.SizeToDim(logits.ndim() - 1), logits.dim(-1)};
}

template <typename T>
T Softplus(T x) {
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}

template <typename T>
T Sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

// One element's loss: softplus(x) - t*x is -[t log s(x) + (1-t) log(1-s(x))].
template <typename T>
T SigmoidXentLoss(const SigmoidCrossEntropyVariant& variant, T x, T t) {
  if (variant.unjoined_lr_loss) return (T(1) - t) * Softplus(x) - t * x;
  // log s(x) = x - softplus(x); the trick maximizes log D for positives and
  // minimizes it for negatives.
  if (variant.log_d_trick) return -(T(2) * t - T(1)) * (x - Softplus(x));
  return Softplus(x) - t * x;
}

// d(loss)/dx of SigmoidXentLoss.
template <typename T>
T SigmoidXentSlope(const SigmoidCrossEntropyVariant& variant, T x, T t) {
  if (variant.unjoined_lr_loss) return (T(1) - t) * Sigmoid(x) - t;
  if (variant.log_d_trick) return -(T(2) * t - T(1)) * Sigmoid(-x);
  return Sigmoid(x) - t;
}

}  // namespace

SigmoidCrossEntropyWithLogitsOp::SigmoidCrossEntropyWithLogitsOp(const OperatorDef& def,
                                                                 Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      variant_(ReadVariant(*this)),
      weighted_(InputSize() == 3) {}

void SigmoidCrossEntropyWithLogitsOp::RunOnDevice() {
  const Tensor& logits = Input(0);
  const Tensor& targets = Input(1);
  std::vector<const Tensor*> checked{&logits, &targets};
  if (weighted_) checked.push_back(&Input(2));
  const RowsOfLast rows = CheckLogitsAndTargets(*this, 0, checked);
  DispatchTypes(FloatTypes{}, input_name(0), logits.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = logits.data<T>();
    const T* t = targets.data<T>();
    const T* w = weighted_ ? Input(2).data<T>() : nullptr;
    std::vector<int64_t> dims = logits.dims();
    if (!dims.empty()) dims.pop_back();
    Tensor* out = Output(0);
    out->Resize(dims);
    T* y = out->template mutable_data<T>();
    for (int64_t r = 0; r < rows.outer; ++r) {
      T sum = 0;
      for (int64_t c = 0; c < rows.inner; ++c) {
        const int64_t at = r * rows.inner + c;
        sum += SigmoidXentLoss(variant_, x[at], t[at]) * (w ? w[at] : T(1));
      }
      // An empty last dim averages nothing: its loss is 0.
      y[r] = rows.inner > 0 ? sum / static_cast<T>(rows.inner) : T(0);
    }
  });
}

SigmoidCrossEntropyWithLogitsGradientOp::SigmoidCrossEntropyWithLogitsGradientOp(
    const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      variant_(ReadVariant(*this)),
      weighted_(InputSize() == 4) {}

void SigmoidCrossEntropyWithLogitsGradientOp::RunOnDevice() {
  const Tensor& g = Input(0);
  const Tensor& logits = Input(1);
  const Tensor& targets = Input(2);
  std::vector<const Tensor*> checked{&logits, &targets};
  if (weighted_) checked.push_back(&Input(3));
  const RowsOfLast rows = CheckLogitsAndTargets(*this, 1, checked);
  DOPPIO_ENFORCE(g.numel() == rows.outer, "gradient '", input_name(0), "' has shape ", g.dims(),
                 " (", g.numel(), " elements) but the loss has ", rows.outer);
  DOPPIO_ENFORCE(g.dtype() == logits.dtype(), "gradient '", input_name(0), "' holds ",
                 DataTypeName(g.dtype()), " but logits '", input_name(1), "' hold ",
                 DataTypeName(logits.dtype()));
  DispatchTypes(FloatTypes{}, input_name(1), logits.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gy = g.data<T>();
    const T* x = logits.data<T>();
    const T* t = targets.data<T>();
    const T* w = weighted_ ? Input(3).data<T>() : nullptr;
    Tensor* dlogits = Output(0);
    dlogits->Resize(logits.dims());
    T* dx = dlogits->template mutable_data<T>();
    for (int64_t r = 0; r < rows.outer; ++r) {
      const T factor = gy[r] / static_cast<T>(rows.inner);
      for (int64_t c = 0; c < rows.inner; ++c) {
        const int64_t at = r * rows.inner + c;
        dx[at] = factor * SigmoidXentSlope(variant_, x[at], t[at]) * (w ? w[at] : T(1));
      }
    }
  });
}

// ---- MakeTwoClass ----

void MakeTwoClassOp::RunOnDevice() {
  const Tensor& X = Input(0);
  std::vector<int64_t> dims = X.dims();
  dims.push_back(2);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    for (int64_t i = 0; i < X.numel(); ++i) {
      DOPPIO_ENFORCE(x[i] >= T(0) && x[i] <= T(1), "'", input_name(0),
                     "' holds probabilities; element ", i, " is ", x[i]);
    }
    Tensor* Y = Output(0);
    Y->Resize(dims);
    T* y = Y->template mutable_data<T>();
    for (int64_t i = 0; i < X.numel(); ++i) {
      y[2 * i] = T(1) - x[i];
      y[2 * i + 1] = x[i];
    }
  });
}

void MakeTwoClassGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  DOPPIO_ENFORCE(dY.ndim() >= 1 && dY.dim(-1) == 2, "gradient '", input_name(0),
                 "' must end in a dimension of 2 (the two classes), got shape ", dY.dims());
  std::vector<int64_t> dims = dY.dims();
  dims.pop_back();
  DispatchTypes(FloatTypes{}, input_name(0), dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(dims);
    T* dx = dX->template mutable_data<T>();
    for (int64_t i = 0; i < dX->numel(); ++i) dx[i] = dy[2 * i + 1] - dy[2 * i];
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(LabelCrossEntropy, LabelCrossEntropyOp);
REGISTER_CPU_OPERATOR(LabelCrossEntropyGradient, LabelCrossEntropyGradientOp);
REGISTER_CPU_OPERATOR(CrossEntropy, CrossEntropyOp);
REGISTER_CPU_OPERATOR(CrossEntropyGradient, CrossEntropyGradientOp);
REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogits, SigmoidCrossEntropyWithLogitsOp);
REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogitsGradient,
                      SigmoidCrossEntropyWithLogitsGradientOp);
REGISTER_CPU_OPERATOR(WeightedSigmoidCrossEntropyWithLogits, SigmoidCrossEntropyWithLogitsOp);
REGISTER_CPU_OPERATOR(MakeTwoClass, MakeTwoClassOp);
REGISTER_CPU_OPERATOR(MakeTwoClassGradient, MakeTwoClassGradientOp);
REGISTER_CPU_OPERATOR(WeightedSigmoidCrossEntropyWithLogitsGradient,
                      SigmoidCrossEntropyWithLogitsGradientOp);

namespace {

// [N] of X's type, N as BatchShapeOf counts it.
std::vector<TensorShape> PerRowLoss(const OperatorDef&, const std::vector<TensorShape>& in) {
  TensorShape out;
  out.set_data_type(in.at(0).data_type());
  out.add_dims(in[0].dims_size() > 1 ? in[0].dims(0) : 1);
  return {out};
}

std::vector<TensorShape> LastDimDropped(const OperatorDef&, const std::vector<TensorShape>& in) {
  TensorShape out;
  out.set_data_type(in.at(0).data_type());
  for (int i = 0; i + 1 < in[0].dims_size(); ++i) out.add_dims(in[0].dims(i));
  return {out};
}

std::vector<TensorShape> LikeSecondInput(const OperatorDef&, const std::vector<TensorShape>& in) {
  return {in.at(1)};
}

std::vector<TensorShape> LikeFirstInput(const OperatorDef&, const std::vector<TensorShape>& in) {
  return {in.at(0)};
}

// <forward>Gradient(X, label, dY) -> dX; the caller documents dX.
std::function<void(OpSchema&)> RowLossGradientSchema(const char* forward) {
  return [forward](OpSchema& schema) {
    schema.NumInputs(3)
        .NumOutputs(1)
        .TensorInferenceFunction(LikeFirstInput)
        .Input(0, "X", MakeString(forward, "'s X"))
        .Input(1, "label", MakeString(forward, "'s label"))
        .Input(2, "dY", "gradient of Y, [N]")
        .Doc(MakeString("Gradient of ", forward, " for X."));
  };
}

}  // namespace

OPERATOR_SCHEMA(LabelCrossEntropy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(PerRowLoss)
    .Input(0, "X", "probabilities [N, D] (float32/float64), usually Softmax's output")
    .Input(1, "label", "class of each row, [N] or [N, 1], int32/int64 in [0, D)")
    .Output(0, "Y", "-log(X[i, label_i]) per row, [N]")
    .Doc("Cross entropy against integer class labels: Y_i = -log(max(X[i, label_i], "
         "1e-20)).");

OPERATOR_SCHEMA(LabelCrossEntropyGradient)
    .Apply(RowLossGradientSchema("LabelCrossEntropy"))
    .Output(0, "dX", "-dY_i / X[i, label_i] at each label, 0 elsewhere");

OPERATOR_SCHEMA(CrossEntropy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(PerRowLoss)
    .Input(0, "X", "probabilities [N, D] (float32/float64)")
    .Input(1, "label", "soft labels in [0, 1], X's type, X's shape or [N, D]")
    .Output(0, "Y", "-sum_j label_ij log(X_ij) per row, [N]")
    .Doc("Cross entropy against soft (probability) labels; logs are of max(X, 1e-20).");

OPERATOR_SCHEMA(CrossEntropyGradient)
    .Apply(RowLossGradientSchema("CrossEntropy"))
    .Output(0, "dX", "-label * dY_i / X");

OPERATOR_SCHEMA(SigmoidCrossEntropyWithLogits)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(LastDimDropped)
    .Arg("log_D_trick",
         "(bool, default false) use the log-D trick (Goodfellow et al. 2014) "
         "against vanishing gradients early in GAN training")
    .Arg("unjoined_lr_loss",
         "(bool, default false) loss for unjoined data, where a "
         "negative may later turn out positive")
    .Input(0, "logits", "logits, float32/float64, e.g. [batch, classes]")
    .Input(1, "targets", "targets in [0, 1], of the logits' shape and type")
    .Output(0, "xentropy", "binary cross entropy averaged over the last dim")
    .Doc(
        "Sigmoid cross entropy computed stably from logits, averaged over the last "
        "dim: mean_j [softplus(x) - t x] for the default variant.");

OPERATOR_SCHEMA(SigmoidCrossEntropyWithLogitsGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(LikeSecondInput)
    .Arg("log_D_trick", "as in the forward op")
    .Arg("unjoined_lr_loss", "as in the forward op")
    .Input(0, "g", "gradient of xentropy")
    .Input(1, "logits", "the forward op's logits")
    .Input(2, "targets", "the forward op's targets")
    .Output(0, "dlogits", "gradient of the logits")
    .Doc("Gradient of SigmoidCrossEntropyWithLogits for the logits.");

OPERATOR_SCHEMA(WeightedSigmoidCrossEntropyWithLogits)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(LastDimDropped)
    .Input(0, "logits", "logits, float32/float64, e.g. [batch, classes]")
    .Input(1, "targets", "targets in [0, 1], of the logits' shape and type")
    .Input(2, "weights", "a weight per element, of the logits' shape and type")
    .Output(0, "xentropy", "weighted binary cross entropy averaged over the last dim")
    .Doc(
        "SigmoidCrossEntropyWithLogits with each element's loss multiplied by its "
        "weight: mean_j w [softplus(x) - t x].");

OPERATOR_SCHEMA(WeightedSigmoidCrossEntropyWithLogitsGradient)
    .NumInputs(4)
    .NumOutputs(1)
    .TensorInferenceFunction(LikeSecondInput)
    .Input(0, "g", "gradient of xentropy")
    .Input(1, "logits", "the forward op's logits")
    .Input(2, "targets", "the forward op's targets")
    .Input(3, "weights", "the forward op's weights")
    .Output(0, "dlogits", "gradient of the logits")
    .Doc(
        "Gradient of WeightedSigmoidCrossEntropyWithLogits for the logits (the "
        "targets and weights get none).");

OPERATOR_SCHEMA(MakeTwoClass)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out = in.at(0);
      out.add_dims(2);
      return std::vector<TensorShape>{out};
    })
    .Input(0, "X", "probabilities in [0, 1], float32/float64")
    .Output(0, "Y", "X's shape + [2]: (1 - X, X)")
    .Doc("Turns the probability of the positive class into two-class probabilities.");

OPERATOR_SCHEMA(MakeTwoClassGradient)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "dY", "gradient of MakeTwoClass's output")
    .Output(0, "dX", "dY[..., 1] - dY[..., 0]")
    .Doc("Gradient of MakeTwoClass.");

namespace {

class GetMakeTwoClassGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("MakeTwoClassGradient", "", {GO(0)}, {GI(0)});
  }
};

// <Op>Gradient(X, label, dY) -> dX for LabelCrossEntropy and CrossEntropy.
class GetCrossEntropyGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), I(1), GO(0)}, {GI(0)});
  }
};

class GetSigmoidCrossEntropyWithLogitsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs{GO(0), I(0), I(1)};
    if (Def().input_size() == 3) inputs.push_back(I(2));  // the weighted op's weights
    return SingleGradientDef(Def().type() + "Gradient", "", inputs, {GI(0)}, Def().arg());
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(LabelCrossEntropy, GetCrossEntropyGradient);
REGISTER_GRADIENT(CrossEntropy, GetCrossEntropyGradient);
REGISTER_GRADIENT(SigmoidCrossEntropyWithLogits, GetSigmoidCrossEntropyWithLogitsGradient);
SHOULD_NOT_DO_GRADIENT(LabelCrossEntropyGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(CrossEntropyGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SigmoidCrossEntropyWithLogitsGradient, kSecondOrder);
REGISTER_GRADIENT(WeightedSigmoidCrossEntropyWithLogits, GetSigmoidCrossEntropyWithLogitsGradient);
SHOULD_NOT_DO_GRADIENT(WeightedSigmoidCrossEntropyWithLogitsGradient, kSecondOrder);
REGISTER_GRADIENT(MakeTwoClass, GetMakeTwoClassGradient);
SHOULD_NOT_DO_GRADIENT(MakeTwoClassGradient, kSecondOrder);

}  // namespace doppio
