// Gradient makers written in Python (Caffe2's
// core.GradientRegistry.RegisterGradient): the backward pass stays C++ and
// asks the Python function, under the GIL, for an op's gradient ops and
// input gradients. A Python maker replaces any C++ one for its op type.
//
// The Python side (python_ops.py) passes a function taking (serialized
// OperatorDef, output gradients) and returning (serialized gradient ops,
// input gradients); a gradient is a name, (indices, values) or None.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/gradient.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

py::object ToPython(const GradientWrapper& gradient) {
  if (gradient.IsDense()) return py::str(gradient.dense);
  if (gradient.IsSparse()) return py::make_tuple(gradient.indices, gradient.values);
  return py::none();
}

class PythonGradientMaker final : public GradientMakerBase {
 public:
  PythonGradientMaker(const OperatorDef& def, const std::vector<GradientWrapper>& output_gradients,
                      const py::object* function)
      : GradientMakerBase(def, output_gradients),
        output_gradients_(output_gradients),
        function_(function) {}

  // The Python maker's ops are taken as it built them (device option,
  // engine, no is_gradient_op mark), as Caffe2 did.
  bool CopyDeviceOption() const override { return false; }
  bool CopyEngine() const override { return false; }
  bool MarksGradientOps() const override { return false; }

  std::vector<OperatorDef> GetGradientDefs() override {
    py::gil_scoped_acquire gil;
    py::list outputs;
    for (const GradientWrapper& gradient : output_gradients_) outputs.append(ToPython(gradient));
    py::tuple result;
    try {
      result = (*function_)(SerializeProto(Def()), outputs);
    } catch (py::error_already_set& e) {
      DOPPIO_THROW("the Python gradient maker of ", Def().type(), " raised ", e.what());
    }
    DOPPIO_ENFORCE(py::len(result) == 2, "a Python gradient maker returns (ops, input grads)");
    std::vector<OperatorDef> ops;
    for (const py::handle op : result[0].cast<py::list>()) {
      ops.push_back(ParseProto<OperatorDef>(op.cast<py::bytes>(), "OperatorDef"));
    }
    const py::list inputs = result[1].cast<py::list>();
    DOPPIO_ENFORCE_EQ(static_cast<int>(py::len(inputs)), Def().input_size(),
                      "the Python "
                      "gradient maker of ",
                      Def().type(), " must give one gradient per input");
    for (int i = 0; i < Def().input_size(); ++i) {
      const py::handle gradient = inputs[i];
      if (py::isinstance<py::str>(gradient)) {
        SetDense(i, gradient.cast<std::string>());
      } else if (py::isinstance<py::tuple>(gradient)) {
        auto pair = gradient.cast<std::pair<std::string, std::string>>();
        SetSparse(i, pair.first, pair.second);
      } else {
        DOPPIO_ENFORCE(gradient.is_none(), "input gradient ", i, " of ", Def().type(),
                       " must be a name, (indices, values) or None");
      }
    }
    return ops;
  }

 private:
  std::vector<GradientWrapper> output_gradients_;
  const py::object* function_;
};

void RegisterPythonGradient(const std::string& op_type, py::object function) {
  // Never freed: the backward pass may run until the process ends, and a
  // Python object must not be released after the interpreter is gone.
  const py::object* kept = new py::object(std::move(function));
  GradientRegistry::Entry entry;
  entry.kind = GradientRegistry::Kind::kMaker;
  entry.creator = [kept](const OperatorDef& def, const std::vector<GradientWrapper>& outputs) {
    return std::unique_ptr<GradientMakerBase>(new PythonGradientMaker(def, outputs, kept));
  };
  GradientRegistry::Register(op_type, std::move(entry));
}

}  // namespace

void DefinePythonGradients(py::module_& m) {
  m.def("register_python_gradient", &RegisterPythonGradient, py::arg("op_type"), py::arg("maker"));
}

}  // namespace python
}  // namespace doppio
