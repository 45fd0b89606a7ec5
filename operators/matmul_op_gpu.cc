// MatMul on cuBLAS (its gradient is MatMul again, so the CPU gradient maker
// serves both devices), and the row-major GEMM the CUDA FC ops share.
// Engine TENSORCORE (Caffe2's name for the FC ops that use tensor cores)
// allows TF32 on float32; the default engine keeps float32 exact.
#include "operators/matmul_op_gpu.h"

#include <limits>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/matmul_op.h"
#include "operators/matrix_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

int ToBlasInt(int64_t value, const char* op) {
  DOPPIO_ENFORCE(value >= 0 && value <= std::numeric_limits<int>::max(), "op ", op,
                 ": matrix dim ", value, " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same
// buffers with the operands swapped.
void GemmEx(cublasHandle_t handle, cudaStream_t stream, bool trans_a, bool trans_b,
            int64_t rows, int64_t cols, int64_t inner, const void* alpha, const void* A,
            const void* B, const void* beta, void* C, cudaDataType_t type,
            cublasComputeType_t compute, const char* op) {
  DOPPIO_CUBLAS_CHECK(cublasSetStream(handle, stream));
  // The handle is shared by every op on this stream; a previous op may have
  // changed its math mode.
  DOPPIO_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const int m = ToBlasInt(rows, op), n = ToBlasInt(cols, op), k = ToBlasInt(inner, op);
  const int lda = trans_a ? m : k;  // A's row length as stored
  const int ldb = trans_b ? k : n;
  DOPPIO_CUBLAS_CHECK(cublasGemmEx(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, alpha, B, type,
                                   ldb, A, type, lda, beta, C, type, n, compute,
                                   CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void RowMajorGemm(cublasHandle_t handle, cudaStream_t stream, bool allow_tf32, bool trans_a,
                  bool trans_b, int64_t rows, int64_t cols, int64_t inner, float alpha,
                  const float* A, const float* B, float beta, float* C, const char* op) {
  if (rows == 0 || cols == 0) return;
  GemmEx(handle, stream, trans_a, trans_b, rows, cols, inner, &alpha, A, B, &beta, C,
         CUDA_R_32F, allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, op);
}

void RowMajorGemm(cublasHandle_t handle, cudaStream_t stream, bool /*allow_tf32*/,
                  bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t inner,
                  double alpha, const double* A, const double* B, double beta, double* C,
                  const char* op) {
  if (rows == 0 || cols == 0) return;
  GemmEx(handle, stream, trans_a, trans_b, rows, cols, inner, &alpha, A, B, &beta, C,
         CUDA_R_64F, CUBLAS_COMPUTE_64F, op);
}

namespace {

// Inputs A, B and the gradient form's optional third input whose shape Y
// takes; output Y = op(A) op(B).
class CudaMatMulOp final : public Operator<CUDAContext> {
 public:
  CudaMatMulOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadMatMulArgs(*this)),
        allow_tf32_(def.engine() == "TENSORCORE") {}

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const MatMulPlan plan = PlanMatMul(*this, args_);
    const MatMulShape& shape = plan.shape;
    Tensor* Y = Output(0);
    Y->Resize(plan.y_dims);
    DispatchInput(FloatTypes{}, *this, 0, A.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* y = Y->template mutable_data<T>();
      if (shape.K == 0) {
        // An empty inner dim sums nothing: Y is zero.
        DOPPIO_CUDA_CHECK(cudaMemsetAsync(y, 0, Y->nbytes(), context_.cuda_stream()));
        return;
      }
      RowMajorGemm(context_.cublas_handle(), context_.cuda_stream(), allow_tf32_, args_.trans_a,
                   args_.trans_b, shape.M, shape.N, shape.K, T(1), A.data<T>(), B.data<T>(), T(0),
                   y, type().c_str());
    });
  }

 private:
  MatMulArgs args_;
  bool allow_tf32_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(MatMul, CudaMatMulOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(MatMul, TENSORCORE, CudaMatMulOp);

}  // namespace doppio
