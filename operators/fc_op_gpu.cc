// FC / FCTransposed and their gradients on cuBLAS, as Caffe2's
// fully_connected_op_gpu.cc: one GEMM per product, the bias added (and its
// gradient summed) by the small kernels in fc_op_gpu.cu. Engine TENSORCORE
// (Caffe2's name) allows TF32 tensor cores on float32; the default engine
// keeps float32 exact so CUDA matches the CPU to rounding.
#include "operators/fc_op_gpu.h"

#include <string>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/fc_op.h"
#include "operators/matmul_op_gpu.h"
#include "operators/matrix_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

class CudaFCOp : public Operator<CUDAContext> {
 public:
  CudaFCOp(const OperatorDef& def, Workspace* workspace)
      : CudaFCOp(def, workspace, /*weight_is_k_by_n=*/false) {}

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& b = Input(2);
    const FCShape shape = CheckFCInputs(*this, args_);
    Tensor* Y = Output(0);
    Y->Resize(shape.y_dims);
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* y = Y->template mutable_data<T>();
      const cudaStream_t stream = context_.cuda_stream();
      if (Y->numel() == 0) return;
      if (shape.K == 0) {
        DOPPIO_CUDA_CHECK(cudaMemsetAsync(y, 0, Y->nbytes(), stream));
      } else {
        // Y = X W^T (W stored [N, K]) or X W (W stored [K, N]).
        RowMajorGemm(context_.cublas_handle(), stream, allow_tf32_, false, !args_.weight_is_k_by_n,
                     shape.M, shape.N, shape.K, T(1), X.data<T>(), W.data<T>(), T(0), y,
                     type().c_str());
      }
      LaunchAddRowBias(shape.M, shape.N, b.data<T>(), args_.fuse_relu, y, stream);
      DOPPIO_CUDA_CHECK(cudaGetLastError());
    });
  }

 protected:
  CudaFCOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadFCArgs(*this, weight_is_k_by_n)),
        allow_tf32_(def.engine() == "TENSORCORE") {}

 private:
  FCArgs args_;
  bool allow_tf32_;
};

class CudaFCTransposedOp final : public CudaFCOp {
 public:
  CudaFCTransposedOp(const OperatorDef& def, Workspace* workspace)
      : CudaFCOp(def, workspace, /*weight_is_k_by_n=*/true) {}
};

// Inputs X, W, dY; outputs dW, db and, when a third output is named, dX.
class CudaFCGradientOp : public Operator<CUDAContext> {
 public:
  CudaFCGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudaFCGradientOp(def, workspace, /*weight_is_k_by_n=*/false) {}

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    const FCShape shape = CheckFCGradientInputs(*this, args_);
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t M = shape.M, K = shape.K, N = shape.N;
      const cudaStream_t stream = context_.cuda_stream();
      cublasHandle_t handle = context_.cublas_handle();
      const char* op = type().c_str();
      const T* x = X.data<T>();
      const T* dy = dY.data<T>();

      Tensor* dW = Output(0);
      dW->Resize(W.dims());
      T* dw = dW->template mutable_data<T>();
      if (M == 0) {
        // An empty batch contributes nothing.
        if (dW->nbytes() > 0) DOPPIO_CUDA_CHECK(cudaMemsetAsync(dw, 0, dW->nbytes(), stream));
      } else if (args_.weight_is_k_by_n) {
        RowMajorGemm(handle, stream, allow_tf32_, true, false, K, N, M, T(1), x, dy, T(0), dw,
                     op);  // X^T dY
      } else {
        RowMajorGemm(handle, stream, allow_tf32_, true, false, N, K, M, T(1), dy, x, T(0), dw,
                     op);  // dY^T X
      }

      Tensor* db = Output(1);
      db->Resize({N});
      LaunchColumnSums(M, N, dy, db->template mutable_data<T>(), stream);
      DOPPIO_CUDA_CHECK(cudaGetLastError());

      if (OutputSize() == 3) {
        Tensor* dX = Output(2);
        dX->Resize(X.dims());
        T* dx = dX->template mutable_data<T>();
        if (N == 0) {
          if (dX->nbytes() > 0) {
            DOPPIO_CUDA_CHECK(cudaMemsetAsync(dx, 0, dX->nbytes(), stream));
          }
        } else {
          // dX = dY W (W stored [N, K]) or dY W^T (W stored [K, N]).
          RowMajorGemm(handle, stream, allow_tf32_, false, args_.weight_is_k_by_n, M, K, N, T(1),
                       dy, W.data<T>(), T(0), dx, op);
        }
      }
    });
  }

 protected:
  CudaFCGradientOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadFCArgs(*this, weight_is_k_by_n)),
        allow_tf32_(def.engine() == "TENSORCORE") {}

 private:
  FCArgs args_;
  bool allow_tf32_;
};

class CudaFCTransposedGradientOp final : public CudaFCGradientOp {
 public:
  CudaFCTransposedGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudaFCGradientOp(def, workspace, /*weight_is_k_by_n=*/true) {}
};

}  // namespace

REGISTER_CUDA_OPERATOR(FC, CudaFCOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(FC, TENSORCORE, CudaFCOp);
REGISTER_CUDA_OPERATOR(FCGradient, CudaFCGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(FCGradient, TENSORCORE, CudaFCGradientOp);
REGISTER_CUDA_OPERATOR(FCTransposed, CudaFCTransposedOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(FCTransposed, TENSORCORE, CudaFCTransposedOp);
REGISTER_CUDA_OPERATOR(FCTransposedGradient, CudaFCTransposedGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(FCTransposedGradient, TENSORCORE,
                                   CudaFCTransposedGradientOp);

}  // namespace doppio
