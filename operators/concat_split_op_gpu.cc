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
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils_gpu.h"

namespace doppio {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= dims[i];
  return product;
}

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
      : Operator<CUDAContext>(def, workspace) {
    // Caffe2's rule, as the CPU op: `axis` (default -1), else the C dim of
    // `order`; add_axis counts only with an explicit axis.
    DOPPIO_ENFORCE(!(HasArgument("axis") && HasArgument("order")), "op ", type(),
                   ": give either argument 'axis' or 'order', not both");
    if (HasArgument("axis")) {
      axis_ = GetSingleArgument<int>("axis", -1);
    } else {
      const std::string order = GetSingleArgument<std::string>("order", "NCHW");
      DOPPIO_ENFORCE(order == "NCHW" || order == "NHWC", "op ", type(), ": argument 'order' is '",
                     order, "', not NCHW or NHWC");
      axis_ = order == "NCHW" ? 1 : 3;
    }
    add_axis_ = HasArgument("axis") && GetSingleArgument<int>("add_axis", 0) != 0;
  }

  void RunOnDevice() override {
    const Tensor& X0 = Input(0);
    const std::vector<int64_t>& dims0 = X0.dims();
    const int ndim = X0.ndim();
    const int axis_ndim = ndim + (add_axis_ ? 1 : 0);
    DOPPIO_ENFORCE(axis_ >= -axis_ndim && axis_ < axis_ndim, "op ", type(), ": axis ", axis_,
                   " is out of range for ", axis_ndim, " dims (input shape ", dims0, ")");
    const int axis = axis_ < 0 ? axis_ + axis_ndim : axis_;
    DOPPIO_ENFORCE(X0.dtype() != DataType::kString, "op ", type(), " on CUDA: '",
                   input_name(0), "' holds strings, which live only on the host");
    for (int i = 0; i < InputSize(); ++i) {
      const Tensor& Xi = Input(i);
      EnforceOnOpGpu(*this, context_, i, Xi);
      EnforceSameType(*this, 0, X0, i, Xi);
      bool compatible = Xi.ndim() == ndim;
      for (int d = 0; compatible && d < ndim; ++d) {
        compatible = Xi.dim(d) == dims0[d] || (d == axis && !add_axis_);
      }
      DOPPIO_ENFORCE(compatible, "op ", type(), ": input ", i, " ('", input_name(i),
                     "') has shape ", Xi.dims(), " but input 0 ('", input_name(0),
                     "') has shape ", dims0, "; they may differ only along axis ", axis,
                     add_axis_ ? " (and not at all with add_axis=1)" : "");
    }
    Tensor* split_info = OutputBlob(1)->GetMutableTensor(Device{DeviceKind::kCPU, 0});
    split_info->Resize({InputSize()});
    int32_t* sizes = split_info->mutable_data<int32_t>();
    int64_t total = 0;
    for (int i = 0; i < InputSize(); ++i) {
      const int64_t size = add_axis_ ? 1 : Input(i).dim(axis);
      DOPPIO_ENFORCE(size <= INT32_MAX, "op ", type(), ": input '", input_name(i),
                     "' is too large along axis ", axis, " for split_info");
      sizes[i] = static_cast<int32_t>(size);
      total += size;
    }
    std::vector<int64_t> out_dims = dims0;
    if (add_axis_) {
      out_dims.insert(out_dims.begin() + axis, total);
    } else {
      out_dims[axis] = total;
    }
    // Viewed as [before, size, after] with size the (possibly new) axis.
    const int64_t before = Product(dims0, 0, axis);
    const int64_t after = Product(dims0, add_axis_ ? axis : axis + 1, ndim);
    const size_t itemsize = X0.itemsize();
    Tensor* Y = Output(0);
    Y->Resize(out_dims);
    char* y = static_cast<char*>(Y->raw_mutable_data(X0.dtype()));
    const size_t out_pitch = static_cast<size_t>(total * after) * itemsize;
    size_t offset = 0;
    for (int i = 0; i < InputSize(); ++i) {
      const size_t width = static_cast<size_t>(sizes[i] * after) * itemsize;
      CopyDeviceRows(before, width, static_cast<const char*>(Input(i).raw_data()), width,
                     y + offset, out_pitch, context_.cuda_stream());
      offset += width;
    }
  }

 private:
  int axis_ = -1;
  bool add_axis_ = false;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Concat, CudaConcatOp);

}  // namespace doppio
