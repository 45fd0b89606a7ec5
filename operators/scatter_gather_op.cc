#include "operators/scatter_gather_op.h"

#include <algorithm>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/concat_split_op.h"

namespace doppio {

std::vector<int64_t> ChunkSizes(int64_t size, int parts) {
  std::vector<int64_t> sizes(parts, 0);
  if (parts <= 0 || size <= 0) return sizes;
  const int64_t chunk = (size + parts - 1) / parts;
  int64_t left = size;
  for (int i = 0; i < parts && left > 0; ++i) {
    sizes[i] = std::min(chunk, left);
    left -= sizes[i];
  }
  return sizes;
}

ChunkOp::ChunkOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 0)) {}

void ChunkOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> dims = X.dims();
  const int ndim = static_cast<int>(dims.size());
  DOPPIO_ENFORCE(ndim > 0, "input '", input_name(0), "' is a scalar; there is no axis to split");
  DOPPIO_ENFORCE(axis_ >= -ndim && axis_ < ndim, "axis ", axis_, " is out of range for input '",
                 input_name(0), "' of shape ", dims);
  const int axis = axis_ < 0 ? axis_ + ndim : axis_;
  // Every replica needs at least one example: a smaller batch is a user
  // error (PyTorch would silently use fewer devices; a net cannot).
  DOPPIO_ENFORCE(dims[axis] >= OutputSize(), "input '", input_name(0), "' of shape ", dims, " has ",
                 dims[axis], " along axis ", axis, ", fewer than the ", OutputSize(),
                 " outputs (devices) it is split into");
  const std::vector<int64_t> sizes = ChunkSizes(dims[axis], OutputSize());
  int64_t before = 1;
  for (int d = 0; d < axis; ++d) before *= dims[d];
  int64_t after = 1;
  for (int d = axis + 1; d < ndim; ++d) after *= dims[d];
  const int64_t in_row = dims[axis] * after;
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    int64_t offset = 0;
    for (int i = 0; i < OutputSize(); ++i) {
      std::vector<int64_t> out_dims = dims;
      out_dims[axis] = sizes[i];
      Tensor* Y = Output(i);
      Y->Resize(out_dims);
      const int64_t width = sizes[i] * after;
      T* y = Y->mutable_data<T>();
      for (int64_t b = 0; b < before; ++b) {
        std::copy(x + b * in_row + offset, x + b * in_row + offset + width, y + b * width);
      }
      offset += width;
    }
  });
}

REGISTER_CPU_OPERATOR(Chunk, ChunkOp);

OPERATOR_SCHEMA(Chunk)
    .NumInputs(1)
    .NumOutputs(1, 1 << 30)
    .Arg("axis", "(int, default 0) the axis to split along; negative counts from the end")
    .Input(0, "input", "tensor to split, e.g. a batch")
    .Output(0, "output_0", "the first chunk; one output per chunk (device)")
    .Doc("Splits the input along `axis` as torch.chunk does: chunks of ceil(N / n), "
         "the last smaller (trailing outputs empty when the rule gives fewer than n "
         "chunks). N < n is an error. The batch split of torch.nn.parallel.scatter; its "
         "gradient is Concat of the output gradients.");

namespace {

// Chunk cuts its input into consecutive parts along `axis` (its only
// argument), as Split does, so it shares Split's gradient: Concat of the
// output gradients, zeros for outputs nobody used. Only the default axis
// differs (0, the batch).
class GetChunkGradient final : public SplitGradientMaker {
 public:
  using SplitGradientMaker::SplitGradientMaker;

 protected:
  int DefaultAxis() const override { return 0; }
};

}  // namespace

REGISTER_GRADIENT(Chunk, GetChunkGradient);

}  // namespace doppio
