#include "parallel/broadcast_op.h"

#include <climits>
#include <cstring>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/collective_util.h"

namespace doppio {

BroadcastOp::BroadcastOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), root_(GetSingleArgument<int>("root", 0)) {
  EnforceOneToOneInplace(*this);
  DOPPIO_ENFORCE(root_ >= 0 && root_ < InputSize(), "root ", root_, " is not one of its ",
                 InputSize(), " inputs");
}

void BroadcastOp::RunOnDevice() {
  const Blob& root_blob = InputBlob(root_);
  DOPPIO_ENFORCE(root_blob.IsTensor(), "root input ", root_, " ('", input_name(root_),
                 "') should be a tensor but holds ", root_blob.TypeName());
  const Tensor& source = root_blob.GetTensor();
  DOPPIO_ENFORCE(source.dtype() != DataType::kUndefined, "root input ", root_, " ('",
                 input_name(root_), "') was never written");
  const void* from = source.raw_data();  // an error if never written
  for (int i = 0; i < InputSize(); ++i) {
    if (i == root_) continue;
    // A replica that holds no tensor yet (or another shape or type) takes the
    // root's; an existing tensor keeps its device id.
    Blob* blob = OutputBlob(i);
    Tensor* target =
        blob->IsTensor() ? blob->GetMutable<Tensor>() : blob->GetMutableTensor(source.device());
    target->Resize(source.dims());
    if (source.dtype() == DataType::kString) {
      target->CopyFrom(source);
      continue;
    }
    void* to = target->raw_mutable_data(source.dtype());
    if (source.nbytes() > 0) std::memcpy(to, from, source.nbytes());
  }
}

REGISTER_CPU_OPERATOR(Broadcast, BroadcastOp);

namespace {

// In process every output takes the root's shape and type. Under engine
// "GLOO" the root is a rank, and each rank's blobs keep their own shapes.
std::vector<TensorShape> RootShapes(const OperatorDef& def,
                                    const std::vector<TensorShape>& inputs) {
  if (def.engine() == "GLOO") return InPlaceCollectiveShapes(def, inputs);
  int root = 0;
  for (const Argument& arg : def.arg()) {
    if (arg.name() == "root" && arg.has_i()) root = static_cast<int>(arg.i());
  }
  DOPPIO_ENFORCE(root >= 0 && root < def.output_size(), "op Broadcast: root ", root,
                 " is not one of its ", def.output_size(), " tensors");
  return std::vector<TensorShape>(def.output_size(), inputs.at(root));
}

}  // namespace

OPERATOR_SCHEMA(Broadcast)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1, INT_MAX)
    // In process: X_0..X_{n-1}; under engine "GLOO": a common world, then the
    // tensor(s). Blobs are in place either way.
    .NumInputsOutputs([](int in, int out) { return in == out || in == out + 1; })
    .AllowInplace([](int in, int out) { return in == out || in == out + 1; })
    .TensorInferenceFunction(RootShapes)
    .Arg("root", "(int, default 0) in process: the input whose tensor is copied to the "
         "others; engine GLOO: the rank whose tensors every rank receives")
    .Arg("status_blob", "(string, engine GLOO) the last output receives an int32 status "
         "(0 ok, 1 failed) instead of the op throwing; an extra last output does the same")
    .Input(0, "X_0", "device 0's blob")
    .Input(1, "X_1...", "the other devices' blobs")
    .Output(0, "X_0", "in place: a copy of X_root")
    .Output(1, "X_1...", "in place: copies of X_root, one per input")
    .Doc(
        "In-process broadcast for CPU devices: copies input `root` into every other input "
        "blob, in place (output i must be input i). A blob of another shape or type, or "
        "holding no tensor yet, takes the root's shape and type. Cross-process broadcast "
        "is the same op type under engine \"GLOO\", whose input 0 is a common world.");

NO_GRADIENT(Broadcast,
            "it copies initialized parameters to the other devices once, before training; "
            "their gradients are summed by Allreduce instead");

}  // namespace doppio
