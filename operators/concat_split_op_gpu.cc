// Concat on CUDA: every input on the op's GPU, any axis (or a new one with
// add_axis=1), any fixed-size dtype. The output is on the GPU; split_info,
// the inputs' sizes along the axis, is a host int32 tensor as Caffe2 keeps
// it (its readers, Split in Concat's gradient, take the sizes on the host).
// No kernel: each input is one strided copy (cudaMemcpy2DAsync) into its
// columns of the output. The schema is the CPU op's.
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/concat_split_op.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils_gpu.h"

namespace doppio {
namespace {

// `rows` rows of `width` bytes between strided device buffers, on `stream`.
void CopyDeviceRows(int64_t rows, size_t width, const char* from, size_t from_pitch, char* to,
                    size_t to_pitch, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  if (rows == 1 || (width == from_pitch && width == to_pitch)) {
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(to, from, static_cast<size_t>(rows) * width,
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  DOPPIO_CUDA_CHECK(cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, width,
                                      static_cast<size_t>(rows), cudaMemcpyDeviceToDevice,
                                      stream));
}

class CudaConcatOp final : public Operator<CUDAContext> {
 public:
  CudaConcatOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadConcatArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& X0 = Input(0);
    DOPPIO_ENFORCE(X0.dtype() != DataType::kString, "CUDA kernel: '", input_name(0),
                   "' holds strings, which live only on the host");
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < InputSize(); ++i) {
      EnforceInputOnDevice(*this, i, Input(i), context_.device());
      inputs.push_back(&Input(i));
    }
    Tensor* split_info = OutputBlob(1)->GetMutableTensor(Device{DeviceKind::kCPU, 0});
    const ConcatLayout layout = PlanConcat(*this, inputs, args_, split_info);
    const int32_t* sizes = split_info->data<int32_t>();
    const size_t itemsize = X0.itemsize();
    Tensor* Y = Output(0);
    Y->Resize(layout.out_dims);
    char* y = static_cast<char*>(Y->raw_mutable_data(X0.dtype()));
    const size_t out_pitch = static_cast<size_t>(layout.total * layout.after) * itemsize;
    size_t offset = 0;
    for (int i = 0; i < InputSize(); ++i) {
      const size_t width = static_cast<size_t>(sizes[i] * layout.after) * itemsize;
      CopyDeviceRows(layout.before, width, static_cast<const char*>(Input(i).raw_data()), width,
                     y + offset, out_pitch, context_.cuda_stream());
      offset += width;
    }
  }

 private:
  const ConcatArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Concat, CudaConcatOp);

}  // namespace doppio
