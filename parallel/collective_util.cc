#include "parallel/collective_util.h"

namespace doppio {

void EnforceOneToOneInplace(const OperatorBase& op) {
  DOPPIO_ENFORCE(op.InputSize() == op.OutputSize(),
                 "the op runs in place over its per-device blobs: it needs as many outputs as "
                 "inputs, got ",
                 op.InputSize(), " inputs and ", op.OutputSize(), " outputs");
  for (int i = 0; i < op.InputSize(); ++i) {
    DOPPIO_ENFORCE(op.IsInputOutputAlias(i, i), "the op runs in place: output ", i, " ('",
                   op.output_name(i), "') must be input ", i, " ('", op.input_name(i), "')");
    for (int j = 0; j < i; ++j) {
      DOPPIO_ENFORCE(&op.InputBlob(i) != &op.InputBlob(j), "inputs ", j, " and ", i,
                     " are the same blob '", op.input_name(i),
                     "'; each device's blob may appear once");
    }
  }
}

Tensor* ReplicaTensor(OperatorBase* op, int i) {
  Blob* blob = op->OutputBlob(i);
  DOPPIO_ENFORCE(blob->IsTensor(), "input ", i, " ('", op->input_name(i),
                 "') should be a tensor but holds ", blob->TypeName());
  return blob->GetMutable<Tensor>();
}

void EnforceSameDimsAndType(const OperatorBase& op, const std::vector<Tensor*>& replicas) {
  const Tensor& first = *replicas.at(0);
  for (size_t i = 1; i < replicas.size(); ++i) {
    const Tensor& other = *replicas[i];
    DOPPIO_ENFORCE(other.dims() == first.dims() && other.dtype() == first.dtype(), "input ", i,
                   " ('", op.input_name(static_cast<int>(i)), "') is ", other.DebugString(),
                   " but input 0 ('", op.input_name(0), "') is ", first.DebugString(),
                   "; every device's blob needs the same "
                   "shape and type");
  }
}

std::vector<TensorShape> InPlaceCollectiveShapes(const OperatorDef& def,
                                                 const std::vector<TensorShape>& inputs) {
  const bool gloo = def.engine() == "GLOO";
  const int first_tensor = gloo ? 1 : 0;
  const int tensors = static_cast<int>(inputs.size()) - first_tensor;
  std::vector<TensorShape> outputs;
  for (int i = 0; i < def.output_size(); ++i) {
    if (i < tensors) {
      outputs.push_back(inputs.at(i + first_tensor));
    } else {
      TensorShape status;  // a 0-d int32: 0 ok, 1 failed
      status.set_data_type(TensorProto::INT32);
      outputs.push_back(status);
    }
  }
  return outputs;
}

}  // namespace doppio
