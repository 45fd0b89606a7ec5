// Chunk on CUDA: the batch split of scatter (operators/scatter_gather_op.h)
// for a tensor already on a GPU. Each chunk is one strided 2-D copy on the
// op's stream (rows = the product of the dimensions before the axis), so no
// kernel is needed. The schema and gradient live with the CPU op.
#include <cuda_runtime.h>

#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/op_type_dispatch.h"
#include "operators/scatter_gather_op.h"

namespace doppio {
namespace {

class CudaChunkOp final : public Operator<CUDAContext> {
 public:
  CudaChunkOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), axis_(ReadChunkAxis(*this)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceInputOnDevice(*this, 0, X, context_.device());
    DOPPIO_ENFORCE(X.dtype() != DataType::kUndefined && X.dtype() != DataType::kString, "input '",
                   input_name(0), "' holds no numeric data");
    const std::vector<int64_t>& dims = X.dims();
    const ChunkLayout layout = PlanChunk(*this, X, axis_, OutputSize());
    const int axis = layout.axis;
    const int64_t rows = layout.before, after = layout.after;
    const std::vector<int64_t>& sizes = layout.sizes;
    const size_t itemsize = X.itemsize();
    const size_t in_pitch = static_cast<size_t>(dims[axis] * after) * itemsize;
    const char* x = static_cast<const char*>(X.raw_data());
    size_t offset = 0;
    for (int i = 0; i < OutputSize(); ++i) {
      std::vector<int64_t> out_dims = dims;
      out_dims[axis] = sizes[i];
      Tensor* Y = Output(i);
      Y->Resize(out_dims);
      char* y = static_cast<char*>(Y->raw_mutable_data(X.dtype()));
      const size_t width = static_cast<size_t>(sizes[i] * after) * itemsize;
      if (width > 0 && rows > 0) {
        DOPPIO_CUDA_CHECK(cudaMemcpy2DAsync(y, width, x + offset, in_pitch, width,
                                            static_cast<size_t>(rows),
                                            cudaMemcpyDeviceToDevice, context_.cuda_stream()));
      }
      offset += width;
    }
  }

 private:
  int axis_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Chunk, CudaChunkOp);

}  // namespace doppio
