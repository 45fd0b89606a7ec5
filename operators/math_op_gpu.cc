// CUDA Scale, Sum and WeightedSum: the CPU ops' rules (scale_op.h,
// sum_op.h, weighted_sum_op.h), the math of math_functors.h through the
// kernels of math_op_gpu.cu. Schemas and gradient makers are the CPU ops'.
#include "operators/math_op_gpu.h"

#include <cstdint>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/op_type_dispatch.h"
#include "operators/scalar_operand_gpu.h"
#include "operators/scale_op.h"

namespace doppio {
namespace {

// Data input i has input 0's shape and type (Sum, WeightedSum).
void EnforceLikeFirst(const OperatorBase& op, const Tensor& first, int i, const Tensor& x) {
  DOPPIO_ENFORCE(x.dims() == first.dims(), "input ", i, " ('", op.input_name(i), "') has shape ",
                 x.dims(), " but input 0 ('", op.input_name(0), "') has shape ", first.dims(),
                 "; all inputs must have one shape");
  DOPPIO_ENFORCE(x.dtype() == first.dtype(), "input ", i, " ('", op.input_name(i), "') holds ",
                 DataTypeName(x.dtype()), " but input 0 ('", op.input_name(0), "') holds ",
                 DataTypeName(first.dtype()), "; all inputs must have one type");
}

// Y = scale * X; Y may be X.
class CudaScaleOp final : public Operator<CUDAContext> {
 public:
  CudaScaleOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), scale_(ReadScaleArgument(*this)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceInputOnDevice(*this, 0, X, context_.device());
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      Tensor* Y = Output(0);
      Y->Resize(X.dims());
      LaunchScaleCuda(X.numel(), scale_, x, Y->template mutable_data<T>(),
                      context_.cuda_stream());
    });
  }

 private:
  float scale_;
};

// Sum(data_0, ...) -> sum of one shape and type (float32, float64, int32,
// int64); in place over data_0 it accumulates.
class CudaSumOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& first = Input(0);
    for (int i = 0; i < InputSize(); ++i) {
      EnforceInputOnDevice(*this, i, Input(i), context_.device());
      if (i > 0) EnforceLikeFirst(*this, first, i, Input(i));
    }
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x0 = first.data<T>();
      Tensor* output = Output(0);
      // In place (output is input 0) this keeps the storage and its values.
      output->Resize(first.dims());
      T* y = output->template mutable_data<T>();
      const int64_t count = first.numel();
      if (y != x0 && count > 0) {
        DOPPIO_CUDA_CHECK(cudaMemcpyAsync(y, x0, count * sizeof(T), cudaMemcpyDeviceToDevice,
                                          context_.cuda_stream()));
      }
      for (int i = 1; i < InputSize(); ++i) {
        LaunchSumIntoCuda(count, Input(i).template data<T>(), y, context_.cuda_stream());
      }
    };
    switch (first.dtype()) {
      case DataType::kFloat: return run(TypeTag<float>{});
      case DataType::kDouble: return run(TypeTag<double>{});
      case DataType::kInt32: return run(TypeTag<int32_t>{});
      case DataType::kInt64: return run(TypeTag<int64_t>{});
      default: break;
    }
    DOPPIO_THROW("input 0 ('", input_name(0), "') holds ", DataTypeName(first.dtype()),
                 "; supported types are float32, float64, int32 and int64");
  }
};

// WeightedSum(X_0, w_0, X_1, w_1, ...) -> sum of w_i * X_i. Each weight is
// one element, float32 or the data's type, on the host (a CPU learning
// rate) or on this GPU.
class CudaWeightedSumOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X0 = Input(0);
    for (int i = 0; i < InputSize(); i += 2) {
      EnforceInputOnDevice(*this, i, Input(i), context_.device());
      if (i > 0) EnforceLikeFirst(*this, X0, i, Input(i));
    }
    DispatchInput(FloatTypes{}, *this, 0, X0.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Every weight is checked before the output is touched.
      for (int i = 1; i < InputSize(); i += 2) CheckWeight<T>(i);
      const int64_t count = X0.numel();
      const T* x0 = X0.data<T>();
      Tensor* Y = Output(0);
      Y->Resize(X0.dims());
      T* y = Y->template mutable_data<T>();
      for (int i = 0; i < InputSize(); i += 2) {
        const T* x = i == 0 ? x0 : Input(i).template data<T>();
        AddTerm<T>(i + 1, count, x, /*accumulate=*/i > 0, y);
      }
    });
  }

 private:
  template <typename T>
  void CheckWeight(int index) const {
    const Tensor& weight = Input(index);
    DOPPIO_ENFORCE(weight.dtype() == DataType::kFloat || weight.dtype() == DataTypeFor<T>(),
                   "weight '", input_name(index), "' holds ", DataTypeName(weight.dtype()),
                   "; weights are float32 or the data's type ", DataTypeName(DataTypeFor<T>()));
  }

  template <typename T>
  void AddTerm(int weight_index, int64_t count, const T* x, bool accumulate, T* y) {
    const Tensor& weight = Input(weight_index);
    if (weight.dtype() == DataType::kFloat) {
      const auto w = ScalarOperandOf<float>(*this, weight_index, weight, context_.device(),
                                            "weight");
      LaunchWeightedTermCuda<T, float>(count, w, x, accumulate, y, context_.cuda_stream());
    } else {
      const auto w = ScalarOperandOf<T>(*this, weight_index, weight, context_.device(), "weight");
      LaunchWeightedTermCuda<T, T>(count, w, x, accumulate, y, context_.cuda_stream());
    }
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Scale, CudaScaleOp);
REGISTER_CUDA_OPERATOR(Sum, CudaSumOp);
REGISTER_CUDA_OPERATOR(WeightedSum, CudaWeightedSumOp);

}  // namespace doppio
