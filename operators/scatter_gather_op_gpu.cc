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
#include "operators/scatter_gather_op.h"

namespace doppio {
namespace {

class CudaChunkOp final : public Operator<CUDAContext> {
 public:
  CudaChunkOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 0)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    DOPPIO_ENFORCE(X.device().kind == DeviceKind::kCUDA, "op ", DisplayName(), ": input '",
                   input_name(0), "' is on the CPU; run Chunk on the CPU or copy it first");
    DOPPIO_ENFORCE(X.dtype() != DataType::kUndefined && X.dtype() != DataType::kString,
                   "op ", DisplayName(), ": input '", input_name(0),
                   "' holds no numeric data");
    const std::vector<int64_t> dims = X.dims();
    const int ndim = static_cast<int>(dims.size());
    DOPPIO_ENFORCE(ndim > 0, "op ", DisplayName(), ": input '", input_name(0),
                   "' is a scalar; there is no axis to split");
    DOPPIO_ENFORCE(axis_ >= -ndim && axis_ < ndim, "op ", DisplayName(), ": axis ", axis_,
                   " is out of range for input '", input_name(0), "' of shape ", dims);
    const int axis = axis_ < 0 ? axis_ + ndim : axis_;
    DOPPIO_ENFORCE(dims[axis] >= OutputSize(), "op ", DisplayName(), ": input '",
                   input_name(0), "' of shape ", dims, " has ", dims[axis], " along axis ",
                   axis, ", fewer than the ", OutputSize(),
                   " outputs (devices) it is split into");
    const std::vector<int64_t> sizes = ChunkSizes(dims[axis], OutputSize());
    int64_t rows = 1;
    for (int d = 0; d < axis; ++d) rows *= dims[d];
    int64_t after = 1;
    for (int d = axis + 1; d < ndim; ++d) after *= dims[d];
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
