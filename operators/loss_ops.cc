#include "operators/loss_ops.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/elementwise_functors.h"
#include "operators/loss_functors.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

// ---- AveragedLoss ----

void AveragedLossOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    double sum = 0;
    for (int64_t i = 0; i < X.numel(); ++i) sum += x[i];
    const double mean = functors::AverageOf(sum, X.numel());
    Tensor* Y = Output(0);
    Y->Resize({});
    *Y->template mutable_data<T>() = static_cast<T>(mean);
  });
}

void AveragedLossGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(1);
  DOPPIO_ENFORCE(dY.numel() == 1, "gradient '", input_name(1), "' has shape ", dY.dims(),
                 "; AveragedLoss's output is a scalar");
  DOPPIO_ENFORCE(dY.dtype() == X.dtype(), "'", input_name(1), "' holds ", DataTypeName(dY.dtype()),
                 " but '", input_name(0), "' holds ", DataTypeName(X.dtype()));
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = X.numel();
    const T value = functors::AveragedLossGradientValue(*dY.data<T>(), n);
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) dx[i] = value;
  });
}

// ---- SquaredL2Distance ----

namespace {

// Rows of X (and Y): dim 0, or one row for a scalar.
int64_t RowCount(const Tensor& X) { return X.ndim() > 0 ? X.dim(0) : 1; }

void CheckSameShape(const OperatorBase& op, int a, const Tensor& A, int b, const Tensor& B) {
  DOPPIO_ENFORCE(A.dims() == B.dims(), "'", op.input_name(a), "' has shape ", A.dims(), " but '",
                 op.input_name(b), "' has shape ", B.dims(), "; they must match");
  DOPPIO_ENFORCE(A.dtype() == B.dtype(), "'", op.input_name(a), "' holds ", DataTypeName(A.dtype()),
                 " but '", op.input_name(b), "' holds ", DataTypeName(B.dtype()));
}

}  // namespace

void SquaredL2DistanceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  CheckSameShape(*this, 0, X, 1, Y);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t rows = RowCount(X);
    const int64_t cols = rows > 0 ? X.numel() / rows : 0;
    const T* x = X.data<T>();
    const T* y = Y.data<T>();
    Tensor* distance = Output(0);
    distance->Resize({rows});
    T* out = distance->template mutable_data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const T diff = x[r * cols + c] - y[r * cols + c];
        sum += diff * diff;
      }
      out[r] = T(0.5) * sum;
    }
  });
}

void SquaredL2DistanceGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dDistance = Input(2);
  CheckSameShape(*this, 0, X, 1, Y);
  const int64_t rows = RowCount(X);
  DOPPIO_ENFORCE(dDistance.ndim() == 1 && dDistance.dim(0) == rows, "gradient '", input_name(2),
                 "' has shape ", dDistance.dims(), " but the distance has shape [", rows, "]");
  DOPPIO_ENFORCE(dDistance.dtype() == X.dtype(), "'", input_name(2), "' holds ",
                 DataTypeName(dDistance.dtype()), " but '", input_name(0), "' holds ",
                 DataTypeName(X.dtype()));
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t cols = rows > 0 ? X.numel() / rows : 0;
    const T* x = X.data<T>();
    const T* y = Y.data<T>();
    const T* dd = dDistance.data<T>();
    Tensor* dX = Output(0);
    Tensor* dY = Output(1);
    dX->Resize(X.dims());
    dY->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    T* dy = dY->template mutable_data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        dx[i] = (x[i] - y[i]) * dd[r];
        dy[i] = -dx[i];
      }
    }
  });
}

// ---- Accuracy ----

int ReadAccuracyTopK(const OperatorBase& op) {
  const int top_k = op.GetSingleArgument<int>("top_k", 1);
  DOPPIO_ENFORCE(top_k >= 1, "argument top_k is ", top_k, "; it must be at least 1");
  return top_k;
}

int64_t CheckAccuracyShapes(const OperatorBase& op, const Tensor& X, const Tensor& labels) {
  DOPPIO_ENFORCE(X.ndim() == 2, "predictions '", op.input_name(0), "' have shape ", X.dims(),
                 "; expected [N, classes]");
  const int64_t rows = X.dim(0);
  DOPPIO_ENFORCE(labels.ndim() == 1 && labels.dim(0) == rows, "labels '", op.input_name(1),
                 "' have shape ", labels.dims(), " but predictions '", op.input_name(0), "' have ",
                 rows, " rows; expected [", rows, "]");
  return rows;
}

AccuracyOp::AccuracyOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), top_k_(ReadAccuracyTopK(*this)) {}

void AccuracyOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& labels = Input(1);
  const int64_t rows = CheckAccuracyShapes(*this, X, labels);
  const int64_t classes = X.dim(1);
  int64_t correct = 0;
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    DispatchInput(IndexTypes{}, *this, 1, labels.dtype(), [&](auto label_tag) {
      using L = typename decltype(label_tag)::type;
      const L* label = labels.data<L>();
      loss::CheckLabelRange(*this, input_name(1), label, rows, classes);
      for (int64_t r = 0; r < rows; ++r) {
        // The test the CUDA kernel runs (elementwise_functors.h).
        if (functors::LabelInTopK(x + r * classes, classes, static_cast<int64_t>(label[r]),
                                  static_cast<int64_t>(top_k_))) {
          ++correct;
        }
      }
    });
  });
  Tensor* accuracy = Output(0);
  accuracy->Resize({});
  *accuracy->mutable_data<float>() =
      rows > 0 ? static_cast<float>(correct) / static_cast<float>(rows) : 0.0f;
}

// ---- registration ----

REGISTER_CPU_OPERATOR(AveragedLoss, AveragedLossOp);
REGISTER_CPU_OPERATOR(AveragedLossGradient, AveragedLossGradientOp);
REGISTER_CPU_OPERATOR(SquaredL2Distance, SquaredL2DistanceOp);
REGISTER_CPU_OPERATOR(SquaredL2DistanceGradient, SquaredL2DistanceGradientOp);
REGISTER_CPU_OPERATOR(Accuracy, AccuracyOp);

namespace {

TensorShape ScalarOf(TensorProto::DataType dtype) {
  TensorShape shape;
  shape.set_data_type(dtype);
  return shape;
}

// [dim 0] (or [1] for a scalar) in `like`'s type.
TensorShape RowsShape(const TensorShape& like) {
  TensorShape shape;
  shape.set_data_type(like.data_type());
  shape.add_dims(like.dims_size() > 0 ? like.dims(0) : 1);
  return shape;
}

}  // namespace

OPERATOR_SCHEMA(AveragedLoss)
    .NumInputs(1)
    .CostInferenceFunction(PointwiseCostInference(1))
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{ScalarOf(in.at(0).data_type())};
    })
    .Input(0, "input", "the losses, float32 or float64, any shape")
    .Output(0, "output", "their mean, a scalar of the input's type")
    .Doc("The average of all elements of the input (0 when it is empty).");

OPERATOR_SCHEMA(AveragedLossGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "AveragedLoss's input")
    .Input(1, "dY", "gradient of the average (one element)")
    .Output(0, "dX", "dY / numel(input) in the input's shape")
    .Doc("Gradient of AveragedLoss.");

OPERATOR_SCHEMA(SquaredL2Distance)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{RowsShape(in.at(0))};
    })
    .Input(0, "X", "first tensor, float32 or float64, rows along dim 0")
    .Input(1, "Y", "second tensor, of X's shape and type")
    .Output(0, "Z", "0.5 * ||X_i - Y_i||^2 for each row i, shape [N]")
    .Doc("Half the squared Euclidean distance between the rows of X and Y.");

OPERATOR_SCHEMA(SquaredL2DistanceGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in.at(0), in.at(0)};
    })
    .Input(0, "X", "SquaredL2Distance's X")
    .Input(1, "Y", "SquaredL2Distance's Y")
    .Input(2, "dDistance", "gradient of the distances, shape [N]")
    .Output(0, "dX", "(X - Y) * dDistance per row")
    .Output(1, "dY", "-dX")
    .Doc("Gradient of SquaredL2Distance for both inputs.");

OPERATOR_SCHEMA(Accuracy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{ScalarOf(TensorProto::FLOAT)};
    })
    .Arg("top_k", "(int, default 1) a row counts as correct when its label is among "
                  "the top_k scores")
    .Input(0, "predictions", "scores, [N, classes], float32 or float64")
    .Input(1, "labels", "true classes, [N], int32 or int64, each in [0, classes)")
    .Output(0, "accuracy", "float32 scalar: the fraction of rows predicted correctly")
    .Doc("The fraction of rows whose label is among the top_k scores; ties rank the "
         "lower class index first.");

namespace {

class GetAveragedLossGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("AveragedLossGradient", "", {I(0), GO(0)}, {GI(0)});
  }
};

class GetSquaredL2DistanceGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SquaredL2DistanceGradient", "", {I(0), I(1), GO(0)},
                             {GI(0), GI(1)});
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(AveragedLoss, GetAveragedLossGradient);
REGISTER_GRADIENT(SquaredL2Distance, GetSquaredL2DistanceGradient);
SHOULD_NOT_DO_GRADIENT(AveragedLossGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SquaredL2DistanceGradient, kSecondOrder);
NO_GRADIENT(Accuracy,
            "accuracy is a step function of the scores (a count of correct rows): its "
            "derivative is zero almost everywhere, so it is a metric, not a loss");

}  // namespace doppio
