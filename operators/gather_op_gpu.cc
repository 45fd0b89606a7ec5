// Gather on CUDA: rows of DATA at INDICES, both on the op's GPU, any
// fixed-size dtype (the kernel copies elements as words of their size).
// Indices are range-checked on the host first (sparse_index_utils_gpu.h),
// so a bad id is the same error as on the CPU. The schema is the CPU op's.
#include <vector>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/gather_op.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"
#include "operators/sparse_index_utils_gpu.h"
#include "operators/sparse_op_gpu.h"

namespace doppio {
namespace {

class CudaGatherOp final : public Operator<CUDAContext> {
 public:
  CudaGatherOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace) {
    EnforceGatherAxis(*this);
  }

  void RunOnDevice() override {
    const Tensor& data = Input(0);
    const Tensor& indices = Input(1);
    EnforceHasRows(*this, 0, data);
    EnforceInputOnDevice(*this, 0, data, context_.device());
    DOPPIO_ENFORCE(data.dtype() != DataType::kString, "CUDA kernel: '", input_name(0),
                   "' holds strings, which live only on the host");
    const int64_t rows = data.dim(0);
    const int64_t row_size = data.SizeFromDim(1);
    const std::vector<int64_t> output_dims = ShapeOfRows(indices.dims(), data);
    DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      CheckCudaIndicesInRange<Index>(*this, context_, 1, indices, rows, 0);
      Tensor* output = Output(0);
      output->Resize(output_dims);
      void* destination = output->raw_mutable_data(data.dtype());
      LaunchGatherCuda<Index>(data.itemsize(), indices.numel(), row_size, rows, data.raw_data(),
                              indices.data<Index>(), destination, context_.cuda_stream());
    });
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Gather, CudaGatherOp);

}  // namespace doppio
