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

ChunkLayout PlanChunk(const OperatorBase& op, const Tensor& X, int axis, int parts) {
  const std::vector<int64_t>& dims = X.dims();
  const int ndim = static_cast<int>(dims.size());
  DOPPIO_ENFORCE(ndim > 0, "input '", op.input_name(0), "' is a scalar; there is no axis to split");
  DOPPIO_ENFORCE(axis >= -ndim && axis < ndim, "axis ", axis, " is out of range for input '",
                 op.input_name(0), "' of shape ", dims);
  ChunkLayout layout;
  layout.axis = axis < 0 ? axis + ndim : axis;
  // Every replica needs at least one example: a smaller batch is a user
  // error (PyTorch would silently use fewer devices; a net cannot).
  DOPPIO_ENFORCE(dims[layout.axis] >= parts, "input '", op.input_name(0), "' of shape ", dims,
                 " has ", dims[layout.axis], " along axis ", layout.axis, ", fewer than the ",
                 parts, " outputs (devices) it is split into");
  layout.sizes = ChunkSizes(dims[layout.axis], parts);
  for (int d = 0; d < layout.axis; ++d) layout.before *= dims[d];
  for (int d = layout.axis + 1; d < ndim; ++d) layout.after *= dims[d];
  return layout;
}

int ReadChunkAxis(const OperatorBase& op) { return op.GetSingleArgument<int>("axis", 0); }

ChunkOp::ChunkOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(ReadChunkAxis(*this)) {}

void ChunkOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t>& dims = X.dims();
  const ChunkLayout layout = PlanChunk(*this, X, axis_, OutputSize());
  const int axis = layout.axis;
  const int64_t after = layout.after;
  const int64_t in_row = dims[axis] * after;
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    int64_t offset = 0;
    for (int i = 0; i < OutputSize(); ++i) {
      std::vector<int64_t> out_dims = dims;
      out_dims[axis] = layout.sizes[i];
      Tensor* Y = Output(i);
      Y->Resize(out_dims);
      const int64_t width = layout.sizes[i] * after;
      T* y = Y->mutable_data<T>();
      for (int64_t b = 0; b < layout.before; ++b) {
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
