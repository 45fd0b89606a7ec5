#include "parallel/gloo/allgather_ops.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/allgather_ring.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

void GlooAllgatherOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const int count = InputSize() - 1;
  DOPPIO_ENFORCE(count >= 1, "the op needs a common world and at least one tensor");
  std::vector<const Tensor*> inputs;
  for (int i = 1; i <= count; ++i) {
    const Tensor& x = Input(i);
    DOPPIO_ENFORCE(x.dtype() != DataType::kUndefined && x.dtype() != DataType::kString, "input ", i,
                   " ('", input_name(i), "') is ", x.DebugString(),
                   "; it needs a written numeric tensor");
    x.raw_data();  // an error if never written
    DOPPIO_ENFORCE(x.dims() == Input(1).dims() && x.dtype() == Input(1).dtype(), "input ", i, " ('",
                   input_name(i), "') is ", x.DebugString(), " but input 1 ('", input_name(1),
                   "') is ", Input(1).DebugString(), "; the tensors need one shape and type");
    for (int j = 0; j < OutputSize(); ++j) {
      DOPPIO_ENFORCE(!IsInputOutputAlias(i, j), "output ", j, " ('", output_name(j),
                     "') may not be input ", i,
                     "; Allgather writes a new "
                     "tensor");
    }
    inputs.push_back(&x);
  }
  const Tensor& first = *inputs[0];
  std::vector<int64_t> dims = first.dims();
  const int64_t copies = static_cast<int64_t>(world->size) * count;
  if (dims.empty()) {
    dims.push_back(copies);
  } else {
    dims[0] *= copies;
  }
  Tensor* y = Output(0);
  y->Resize(dims);
  uint8_t* out = static_cast<uint8_t*>(y->raw_mutable_data(first.dtype()));
  GlooFailureHandler failures(this, OutputSize() == 2 ? 1 : -1);
  const int bytes = ElementCount(*this, static_cast<int64_t>(first.nbytes()));
  if (bytes == 0) {
    failures.Run("allgather", world, [] {});
    return;
  }
  ElementCount(*this, static_cast<int64_t>(y->nbytes()));
  std::vector<const uint8_t*> buffers;
  AlgorithmKey key;
  key.world = world;
  for (const Tensor* x : inputs) {
    buffers.push_back(static_cast<const uint8_t*>(x->raw_data()));
    key.buffers.push_back(buffers.back());
  }
  key.buffers.push_back(out);
  key.count = bytes;
  key.dtype = first.dtype();
  const bool ok = failures.Run("allgather (ring)", world, [&] {
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      // Bytes, so every fixed-size type travels the same way.
      return std::make_unique<gloo::AllgatherRing<uint8_t>>(world, buffers, out, bytes);
    };
    cache_.Get(key, make).run();
  });
  if (!ok) cache_.Reset();
}

REGISTER_CPU_OPERATOR_WITH_ENGINE(Allgather, GLOO, GlooAllgatherOp);

OPERATOR_SCHEMA(Allgather)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1, 2)
    .Arg("status_blob", "(string, default \"\") Caffe2's alternative to the status output")
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Input(1, "X", "tensor(s) of one shape and numeric type, the same on every rank")
    .Output(0, "Y", "every rank's X_1..X_k concatenated along axis 0, rank-major")
    .Output(1, "status", "optional int32 scalar: 0 ok, 1 when the collective failed (then "
                         "nothing is thrown)")
    .Doc("Cross-process allgather (engine \"GLOO\", ring): Y holds rank 0's inputs, then "
         "rank 1's, ..., with shape [size * k * d0, d1, ...] for k inputs of shape "
         "[d0, d1, ...] ([size * k] for scalars).");

NO_GRADIENT(Allgather, "a collective for moving data between processes, not differentiated "
                       "through here");

}  // namespace doppio
