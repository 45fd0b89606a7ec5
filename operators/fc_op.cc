#include "operators/fc_op.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/fc_op_dnnl.h"
#include "operators/matrix_utils.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

FCShape ComputeFCShape(const std::string& op, const std::string& x_name,
                       const std::vector<int64_t>& x_dims, const std::string& w_name,
                       const std::vector<int64_t>& w_dims, int axis, int axis_w,
                       bool weight_is_k_by_n) {
  const int x_axis = CanonicalAxisOf(op, "axis", axis, x_name, x_dims);
  const int w_axis = CanonicalAxisOf(op, "axis_w", axis_w, w_name, w_dims);
  FCShape shape;
  shape.M = DimsProduct(x_dims, 0, x_axis);
  shape.K = DimsProduct(x_dims, x_axis, x_dims.size());
  const int64_t w_rows = DimsProduct(w_dims, 0, w_axis);
  const int64_t w_cols = DimsProduct(w_dims, w_axis, w_dims.size());
  shape.N = weight_is_k_by_n ? w_cols : w_rows;
  const int64_t w_k = weight_is_k_by_n ? w_rows : w_cols;
  DOPPIO_ENFORCE(w_k == shape.K, "op ", op, ": input X ('", x_name, "') of shape ", x_dims,
                 " flattens at axis ", x_axis, " to [", shape.M, ", ", shape.K,
                 "] but weight W ('", w_name, "') of shape ", w_dims, " flattens at axis_w ",
                 w_axis, " to [", w_rows, ", ", w_cols, "], whose ",
                 weight_is_k_by_n ? "rows" : "columns", " should number K = ", shape.K);
  shape.y_dims.assign(x_dims.begin(), x_dims.begin() + x_axis);
  shape.y_dims.push_back(shape.N);
  return shape;
}

namespace {

// FC's fusion_type: 0 none, 1 Relu after the bias (the value ConvFusion
// uses for Conv + Relu).
constexpr int kFCFusionNone = 0;
constexpr int kFCFusionRelu = 1;

// Which Relu fusion FC runs, from fusion_type.
bool ReadFCFuseRelu(const OperatorBase& op) {
  const int fusion_type = op.GetSingleArgument<int>("fusion_type", kFCFusionNone);
  DOPPIO_ENFORCE(fusion_type == kFCFusionNone || fusion_type == kFCFusionRelu, "fusion_type ",
                 fusion_type, " is not supported; 0 (none) or 1 (Relu)");
  return fusion_type == kFCFusionRelu;
}

}  // namespace

FCArgs ReadFCArgs(const OperatorBase& op, bool weight_is_k_by_n) {
  FCArgs args;
  args.axis = op.GetSingleArgument<int>("axis", args.axis);
  args.axis_w = op.GetSingleArgument<int>("axis_w", args.axis_w);
  args.weight_is_k_by_n = weight_is_k_by_n;
  args.fuse_relu = ReadFCFuseRelu(op);
  return args;
}

FCShape CheckFCInputs(const OperatorBase& op, const FCArgs& args) {
  EnforceInputsOfOneType(FloatTypes{}, op, {0, 1, 2});
  const Tensor& W = TensorInput(op, 1);
  const Tensor& b = TensorInput(op, 2);
  FCShape shape =
      ComputeFCShape(op.type(), op.input_name(0), TensorInput(op, 0).dims(), op.input_name(1),
                     W.dims(), args.axis, args.axis_w, args.weight_is_k_by_n);
  DOPPIO_ENFORCE(b.ndim() == 1 && b.dim(0) == shape.N, "bias b ('", op.input_name(2),
                 "') has shape ", b.dims(), " but should be [", shape.N,
                 "], one entry per output unit N of weight W ('", op.input_name(1), "') ",
                 W.dims());
  return shape;
}

FCShape CheckFCGradientInputs(const OperatorBase& op, const FCArgs& args) {
  EnforceInputsOfOneType(FloatTypes{}, op, {0, 1, 2});
  const Tensor& dY = TensorInput(op, 2);
  FCShape shape =
      ComputeFCShape(op.type(), op.input_name(0), TensorInput(op, 0).dims(), op.input_name(1),
                     TensorInput(op, 1).dims(), args.axis, args.axis_w, args.weight_is_k_by_n);
  DOPPIO_ENFORCE(dY.numel() == shape.M * shape.N, "output gradient dY ('", op.input_name(2),
                 "') has shape ", dY.dims(), " but the FC output has shape ", shape.y_dims);
  return shape;
}

// ---- FC / FCTransposed ----

FCOp::FCOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n)
    : Operator<CPUContext>(def, workspace), args_(ReadFCArgs(*this, weight_is_k_by_n)) {}

void FCOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& b = Input(2);
  const FCShape shape = CheckFCInputs(*this, args_);
  if (X.dtype() == DataType::kFloat && shape.M > 0 && shape.N > 0 && shape.K > 0) {
    Tensor* Y = Output(0);
    Y->Resize(shape.y_dims);
    DnnlMatMulShape product;
    product.M = shape.M;
    product.K = shape.K;
    product.N = shape.N;
    product.trans_b = !args_.weight_is_k_by_n;
    product.relu = args_.fuse_relu;
    if (dnnl_.Run(product, X.data<float>(), W.data<float>(), b.data<float>(),
                  Y->mutable_data<float>())) {
      return;
    }
  }
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor* Y = Output(0);
    Y->Resize(shape.y_dims);
    T* y = Y->mutable_data<T>();
    // Y = X W^T (W stored [N, K]) or X W (W stored [K, N]).
    MatrixProduct<T>(false, !args_.weight_is_k_by_n, shape.M, shape.N, shape.K, X.data<T>(),
                     W.data<T>(), y);
    const T* bias = b.data<T>();
    if (args_.fuse_relu) {
      for (int64_t m = 0; m < shape.M; ++m) {
        T* row = y + m * shape.N;
        for (int64_t n = 0; n < shape.N; ++n) row[n] = std::max(row[n] + bias[n], T(0));
      }
      return;
    }
    for (int64_t m = 0; m < shape.M; ++m) {
      T* row = y + m * shape.N;
      for (int64_t n = 0; n < shape.N; ++n) row[n] += bias[n];
    }
  });
}

// ---- FCGradient / FCTransposedGradient ----

FCGradientOp::FCGradientOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n)
    : Operator<CPUContext>(def, workspace), args_(ReadFCArgs(*this, weight_is_k_by_n)) {}

void FCGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& dY = Input(2);
  const FCShape shape = CheckFCGradientInputs(*this, args_);
  const bool want_dx = OutputSize() == 3;
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    const T* dy = dY.data<T>();
    const int64_t M = shape.M, K = shape.K, N = shape.N;

    Tensor* dW = Output(0);
    dW->Resize(W.dims());
    T* weight_grad = dW->mutable_data<T>();
    Tensor* db = Output(1);
    db->Resize({N});
    T* bias_grad = db->mutable_data<T>();
    T* input_grad = nullptr;
    if (want_dx) {
      Tensor* dX = Output(2);
      dX->Resize(X.dims());
      input_grad = dX->mutable_data<T>();
    }

    bool weight_grad_done = false;
    bool input_grad_done = !want_dx;
    if constexpr (std::is_same_v<T, float>) {
      if (M > 0 && N > 0 && K > 0) {
        // dW = dY^T X ([N, K]) or X^T dY ([K, N]): the batch is the inner dim.
        DnnlMatMulShape weight_product;
        weight_product.M = args_.weight_is_k_by_n ? K : N;
        weight_product.K = M;
        weight_product.N = args_.weight_is_k_by_n ? N : K;
        weight_product.trans_a = true;
        weight_grad_done = args_.weight_is_k_by_n
                               ? dnnl_weight_grad_.Run(weight_product, x, dy, nullptr, weight_grad)
                               : dnnl_weight_grad_.Run(weight_product, dy, x, nullptr, weight_grad);
        if (want_dx) {
          // dX = dY W (W stored [N, K]) or dY W^T (W stored [K, N]).
          DnnlMatMulShape input_product;
          input_product.M = M;
          input_product.K = N;
          input_product.N = K;
          input_product.trans_b = args_.weight_is_k_by_n;
          input_grad_done = dnnl_input_grad_.Run(input_product, dy, w, nullptr, input_grad);
        }
      }
    }
    if (!weight_grad_done) {
      if (args_.weight_is_k_by_n) {
        MatrixProduct<T>(true, false, K, N, M, x, dy, weight_grad);  // X^T dY
      } else {
        MatrixProduct<T>(true, false, N, K, M, dy, x, weight_grad);  // dY^T X
      }
    }
    if (!input_grad_done) {
      MatrixProduct<T>(false, args_.weight_is_k_by_n, M, K, N, dy, w, input_grad);
    }

    std::fill(bias_grad, bias_grad + N, T(0));
    for (int64_t m = 0; m < M; ++m) {
      const T* row = dy + m * N;
      for (int64_t n = 0; n < N; ++n) bias_grad[n] += row[n];
    }
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(FC, FCOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(FC, DNNL, FCOp);
REGISTER_CPU_OPERATOR(FCTransposed, FCTransposedOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(FCTransposed, DNNL, FCTransposedOp);
REGISTER_CPU_OPERATOR(FCGradient, FCGradientOp);
REGISTER_CPU_OPERATOR(FCTransposedGradient, FCTransposedGradientOp);

namespace {

OpSchema::InferenceFunction FCInference(bool weight_is_k_by_n) {
  return [weight_is_k_by_n](const OperatorDef& def, const std::vector<TensorShape>& in) {
    ArgumentHelper args(def);
    const FCShape shape = ComputeFCShape(
        def.type(), def.input(0), DimsOf(in.at(0)), def.input(1), DimsOf(in.at(1)),
        args.GetSingle<int>("axis", 1), args.GetSingle<int>("axis_w", 1), weight_is_k_by_n);
    return std::vector<TensorShape>{MakeShape(shape.y_dims, in[0].data_type())};
  };
}

OpSchema::InferenceFunction FCGradientInference(bool weight_is_k_by_n) {
  return [weight_is_k_by_n](const OperatorDef& def, const std::vector<TensorShape>& in) {
    ArgumentHelper args(def);
    const FCShape shape = ComputeFCShape(
        def.type(), def.input(0), DimsOf(in.at(0)), def.input(1), DimsOf(in.at(1)),
        args.GetSingle<int>("axis", 1), args.GetSingle<int>("axis_w", 1), weight_is_k_by_n);
    const auto dtype = in[0].data_type();
    std::vector<TensorShape> out = {MakeShape(DimsOf(in[1]), dtype),
                                    MakeShape({shape.N}, dtype)};
    if (def.output_size() == 3) out.push_back(MakeShape(DimsOf(in[0]), dtype));
    return out;
  };
}

constexpr const char kAxisDoc[] =
    "(int, default 1) X is flattened to [M, K] at this axis: M is the product "
    "of the dims before it (the batch), K of the rest";
constexpr const char kAxisWDoc[] =
    "(int, default 1) W is flattened to a matrix at this axis";
constexpr const char kFloat16Doc[] =
    "(bool, default 0) accepted for compatibility; the CPU kernel computes in "
    "the input's type";

constexpr const char kFusionTypeDoc[] =
    "(int, default 0) Doppio extension for inference: 1 applies Relu to Y (written by the "
    "FC + Relu fusion pass, doppio.transformations / run_net --optimize); float32 then runs "
    "on oneDNN's matmul with bias and Relu fused, as it does with engine \"DNNL\". Such an "
    "FC has no gradient";

void FCSchemaArgs(OpSchema& schema) {
  schema.Arg("axis", kAxisDoc)
      .Arg("axis_w", kAxisWDoc)
      .Arg("float16_compute", kFloat16Doc)
      .Arg("fusion_type", kFusionTypeDoc);
}

}  // namespace

OPERATOR_SCHEMA(FC).LowPrecisionInFloat32()
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(FCInference(false))
    .CostInferenceFunction(CostInferenceForFC)
    .Apply(FCSchemaArgs)
    .Input(0, "X", "input (float32 or float64), read as [M, K] split at `axis`")
    .Input(1, "W", "weights of X's type, read as [N, K] split at `axis_w`")
    .Input(2, "b", "1-D bias of N entries")
    .Output(0, "Y", "X W^T + b, of shape X.dims[:axis] + [N]")
    .Doc(
        "Fully connected layer: Y = X W^T + b, where X is coerced to a matrix "
        "[M, K] at `axis` and W to [N, K] at `axis_w`; b is added to every row.");

OPERATOR_SCHEMA(FCTransposed).LowPrecisionInFloat32()
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(FCInference(true))
    .CostInferenceFunction(CostInferenceForFCTransposed)
    .Apply(FCSchemaArgs)
    .Input(0, "X", "input (float32 or float64), read as [M, K] split at `axis`")
    .Input(1, "W", "pre-transposed weights of X's type, read as [K, N] split at `axis_w`")
    .Input(2, "b", "1-D bias of N entries")
    .Output(0, "Y", "X W + b, of shape X.dims[:axis] + [N]")
    .Doc("FC with the weight matrix stored transposed, [K, N]: Y = X W + b.");

OPERATOR_SCHEMA(FCGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .NumOutputs(2, 3)
    .TensorInferenceFunction(FCGradientInference(false))
    .CostInferenceFunction(CostInferenceForFCGradient)
    .Apply(FCSchemaArgs)
    .Input(0, "X", "FC's input")
    .Input(1, "W", "FC's weights, [N, K]")
    .Input(2, "dY", "gradient of FC's output")
    .Output(0, "dW", "gradient of W: dY^T X, of W's shape")
    .Output(1, "db", "gradient of b: dY summed over the batch, [N]")
    .Output(2, "dX", "(optional) gradient of X: dY W, of X's shape")
    .Doc("Gradient of FC.");

OPERATOR_SCHEMA(FCTransposedGradient)
    .NumInputs(3)
    .NumOutputs(2, 3)
    .TensorInferenceFunction(FCGradientInference(true))
    .CostInferenceFunction(CostInferenceForFCTransposedGradient)
    .Apply(FCSchemaArgs)
    .Input(0, "X", "FCTransposed's input")
    .Input(1, "W", "FCTransposed's weights, [K, N]")
    .Input(2, "dY", "gradient of FCTransposed's output")
    .Output(0, "dW", "gradient of W: X^T dY, of W's shape")
    .Output(1, "db", "gradient of b: dY summed over the batch, [N]")
    .Output(2, "dX", "(optional) gradient of X: dY W^T, of X's shape")
    .Doc("Gradient of FCTransposed.");

namespace {

class GetFCGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(ArgumentHelper(Def()).GetSingle<int>("fusion_type", 0) == 0, "op ",
                   Def().type(), " '", Def().name(), "' has fusion_type ",
                   ArgumentHelper(Def()).GetSingle<int>("fusion_type", 0),
                   " (fused for inference); it has no gradient: train the unfused FC + Relu");
    // axis/axis_w travel along so the gradient flattens X and W the same way.
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), I(1), GO(0)},
                             {GI(1), GI(2), GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(FC, GetFCGradient);
REGISTER_GRADIENT(FCTransposed, GetFCGradient);
SHOULD_NOT_DO_GRADIENT(FCGradient, "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(FCTransposedGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
