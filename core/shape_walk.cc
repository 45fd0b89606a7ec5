#include "core/shape_walk.h"

#include <exception>

#include "core/schema.h"
#include "core/workspace.h"

namespace doppio {

std::map<std::string, TensorShape> WorkspaceShapes(const Workspace& workspace) {
  std::map<std::string, TensorShape> shapes;
  for (const std::string& name : workspace.Blobs()) {
    const Blob* blob = workspace.GetBlob(name);
    if (blob == nullptr || !blob->IsTensor()) continue;
    const Tensor& tensor = blob->GetTensor();
    TensorShape shape;
    for (int64_t dim : tensor.dims()) shape.add_dims(dim);
    shape.set_data_type(static_cast<TensorProto::DataType>(tensor.dtype()));
    shapes[name] = shape;
  }
  return shapes;
}

bool KnownInputShapes(const OperatorDef& op, const std::map<std::string, TensorShape>& shapes,
                      std::vector<TensorShape>* inputs, std::string* missing) {
  inputs->clear();
  for (const std::string& input : op.input()) {
    auto known = shapes.find(input);
    if (known == shapes.end() || known->second.unknown_shape()) {
      *missing = input;
      return false;
    }
    inputs->push_back(known->second);
  }
  return true;
}

void RecordOutputs(const OperatorDef& op, const std::vector<TensorShape>& inputs, bool inputs_known,
                   std::map<std::string, TensorShape>* shapes) {
  std::vector<TensorShape> outputs;
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  if (schema != nullptr && schema->has_shape_inference()) {
    std::vector<TensorShape> given = inputs;
    if (!inputs_known) {
      // Ops with no inputs (fillers) or with shape arguments may still
      // know their outputs; give unknown shapes for the rest.
      given.clear();
      for (const std::string& input : op.input()) {
        auto known = shapes->find(input);
        TensorShape shape;
        if (known != shapes->end())
          shape = known->second;
        else
          shape.set_unknown_shape(true);
        given.push_back(shape);
      }
    }
    try {
      outputs = schema->InferTensor(op, given);
    } catch (const std::exception&) {
      outputs.clear();  // advisory: running the op reports the problem
    }
  }
  for (int i = 0; i < op.output_size(); ++i) {
    const bool known = i < static_cast<int>(outputs.size()) && !outputs[i].unknown_shape() &&
                       outputs[i].unknown_dims_size() == 0;
    if (known) {
      (*shapes)[op.output(i)] = outputs[i];
    } else {
      shapes->erase(op.output(i));
    }
  }
}

std::map<std::string, TensorShape> InferNetShapes(
    const NetDef& net, const std::map<std::string, TensorShape>& known_shapes) {
  std::map<std::string, TensorShape> shapes = known_shapes;
  for (const OperatorDef& op : net.op()) {
    std::vector<TensorShape> inputs;
    std::string missing;
    const bool inputs_known = KnownInputShapes(op, shapes, &inputs, &missing);
    RecordOutputs(op, inputs, inputs_known, &shapes);
  }
  return shapes;
}

}  // namespace doppio
