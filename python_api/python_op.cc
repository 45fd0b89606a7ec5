// Python operators (Caffe2's "Python" / "PythonGradient"): ops whose work is
// a Python function f(inputs, outputs[, workspace]), registered from Python
// (core.CreatePythonOperator, Net.Python). The function gets TensorCPU
// objects: `.data` is a numpy view of the tensor's own elements, `.shape`,
// `.reshape(dims)` (then write `.data[...]`), `.feed(array)`, `.fetch()`
// (a copy), `.init(dims, TensorProto type)`.
//
// Functions are kept under a token (the op's "token" argument) for the life
// of the process, or rebuilt per op from a pickled (builder, args, kwargs)
// ("pickled_builder"). Ops run with the GIL released; the op takes it for the
// call. A Python exception becomes the op's error, with its message.
//
// Only this extension registers the ops: a net holding them runs in Python
// processes, not in the runner binary.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "python_api/numpy_tensor.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

struct PythonFunction {
  py::object forward;
  py::object backward;  // None without a gradient
  bool pass_workspace = false;
};

// Token -> function. Never destroyed: Python objects must not be released
// after the interpreter has gone.
struct FunctionRegistry {
  std::mutex mutex;
  std::map<std::string, PythonFunction> functions;
  int64_t next = 0;
};

FunctionRegistry& Functions() {
  static auto* registry = new FunctionRegistry();
  return *registry;
}

std::string RegisterPythonOp(py::object f, bool pass_workspace, const std::string& name) {
  auto& registry = Functions();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const std::string token =
      MakeString("python_op_", registry.next++, name.empty() ? "" : "_" + name);
  registry.functions[token] = PythonFunction{std::move(f), py::none(), pass_workspace};
  return token;
}

void RegisterPythonGradientOp(const std::string& token, py::object grad_f) {
  auto& registry = Functions();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.functions.find(token);
  DOPPIO_ENFORCE(it != registry.functions.end(), "no Python op is registered as '", token, "'");
  it->second.backward = std::move(grad_f);
}

// A tensor handed to a Python function; valid during the call.
struct TensorHandle {
  Tensor* tensor;
  std::string name;
};

// The op's workspace handed to a pass_workspace function; valid during the
// call. blobs[name].fetch() / .feed(array), as workspace.C.Workspace's.
struct WorkspaceHandle {
  Workspace* workspace;
};

struct BlobHandle {
  Workspace* workspace;
  std::string name;
};

class PythonOpBase : public Operator<CPUContext> {
 public:
  PythonOpBase(const OperatorDef& def, Workspace* workspace, bool gradient)
      : Operator<CPUContext>(def, workspace),
        gradient_(gradient),
        token_(GetSingleArgument<std::string>("token", "")) {
    const std::string pickled =
        GetSingleArgument<std::string>(gradient ? "pickled_grad_builder" : "pickled_builder", "");
    DOPPIO_ENFORCE(!pickled.empty() || !token_.empty(),
                   "a Python op needs a 'token' or a pickled builder argument");
    if (!pickled.empty()) {
      py::gil_scoped_acquire gil;
      try {
        py::tuple call = py::module_::import("pickle").attr("loads")(py::bytes(pickled));
        DOPPIO_ENFORCE(py::len(call) == 3, "the pickled builder must be (func, args, kwargs)");
        py::object built = call[0](*call[1].cast<py::tuple>(), **call[2].cast<py::dict>());
        built_ = std::make_unique<PythonFunction>();
        built_->forward = built;
        built_->pass_workspace = GetSingleArgument<bool>("pass_workspace", false);
      } catch (const py::error_already_set& e) {
        DOPPIO_THROW("building the Python op's function raised: ", e.what());
      }
    }
  }
  ~PythonOpBase() override {
    if (built_) {
      py::gil_scoped_acquire gil;
      built_.reset();
    }
  }

  void RunOnDevice() override {
    py::gil_scoped_acquire gil;
    const py::object function = Function();
    py::list inputs, outputs;
    for (int i = 0; i < InputSize(); ++i) {
      const Blob& blob = InputBlob(i);
      DOPPIO_ENFORCE(blob.IsTensor(), "input '", input_name(i), "' holds ", blob.TypeName(),
                     ", not a tensor");
      inputs.append(TensorHandle{const_cast<Tensor*>(&blob.GetTensor()), input_name(i)});
    }
    for (int i = 0; i < OutputSize(); ++i) {
      outputs.append(TensorHandle{Output(i), output_name(i)});
    }
    try {
      if (PassWorkspace()) {
        function(inputs, outputs, WorkspaceHandle{workspace()});
      } else {
        function(inputs, outputs);
      }
    } catch (py::error_already_set& e) {
      DOPPIO_THROW("the Python function raised ", e.what());
    }
  }

 private:
  const PythonFunction& Registered() const {
    auto& registry = Functions();
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.functions.find(token_);
    DOPPIO_ENFORCE(it != registry.functions.end(), "no Python function is registered as '", token_,
                   "' in this process (Python ops cannot be loaded from a saved net)");
    return it->second;
  }
  py::object Function() const {
    if (built_) return built_->forward;
    const PythonFunction& registered = Registered();
    if (!gradient_) return registered.forward;
    DOPPIO_ENFORCE(!registered.backward.is_none(), "the Python op '", token_,
                   "' was registered without a gradient function");
    return registered.backward;
  }
  bool PassWorkspace() const {
    return built_ ? built_->pass_workspace : Registered().pass_workspace;
  }

  bool gradient_;
  std::string token_;
  std::unique_ptr<PythonFunction> built_;
};

class PythonOp final : public PythonOpBase {
 public:
  PythonOp(const OperatorDef& def, Workspace* workspace) : PythonOpBase(def, workspace, false) {}
};

class PythonGradientOp final : public PythonOpBase {
 public:
  PythonGradientOp(const OperatorDef& def, Workspace* workspace)
      : PythonOpBase(def, workspace, true) {}
};

// Inputs: the op's inputs, outputs and output gradients (those in
// grad_output_indices, default all); outputs: the gradients of its inputs
// (those in grad_input_indices, default all).
class GetPythonGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    ArgumentHelper args(Def());
    const auto output_indices = args.GetRepeated<int>("grad_output_indices");
    const auto input_indices = args.GetRepeated<int>("grad_input_indices");
    std::vector<std::string> inputs, outputs;
    for (int i = 0; i < Def().input_size(); ++i) inputs.push_back(I(i));
    for (int i = 0; i < Def().output_size(); ++i) inputs.push_back(O(i));
    if (output_indices.empty()) {
      for (int i = 0; i < Def().output_size(); ++i) inputs.push_back(GO(i));
    } else {
      for (int i : output_indices) inputs.push_back(GO(i));
    }
    if (input_indices.empty()) {
      for (int i = 0; i < Def().input_size(); ++i) outputs.push_back(GI(i));
    } else {
      for (int i : input_indices) outputs.push_back(GI(i));
    }
    return SingleGradientDef("PythonGradient", "", inputs, outputs, Def().arg());
  }
};

REGISTER_CPU_OPERATOR(Python, PythonOp);
REGISTER_CPU_OPERATOR(PythonGradient, PythonGradientOp);

OPERATOR_SCHEMA(Python)
    .NumInputs(0, INT_MAX)
    .NumOutputs(0, INT_MAX)
    .AllowInplace([](int, int) { return true; })
    .Arg("token", "the registered function (core.CreatePythonOperator, Net.Python)")
    .Arg("pickled_builder", "pickled (func, args, kwargs): func(*args, **kwargs) builds f")
    .Arg("pass_workspace", "(bool) with pickled_builder: f also gets the workspace")
    .Arg("grad_output_indices", "outputs whose gradients the gradient function takes")
    .Arg("grad_input_indices", "inputs the gradient function gives gradients")
    .Input(0, "inputs", "tensors handed to f")
    .Output(0, "outputs", "tensors f fills")
    .Doc("Runs a Python function f(inputs, outputs) on host tensors (Caffe2's Python op).");

OPERATOR_SCHEMA(PythonGradient)
    .NumInputs(0, INT_MAX)
    .NumOutputs(0, INT_MAX)
    .AllowInplace([](int, int) { return true; })
    .Input(0, "inputs", "the op's inputs, outputs and output gradients")
    .Output(0, "input_grads", "gradients of the op's inputs")
    .Doc("Runs a Python op's gradient function.");

REGISTER_GRADIENT(Python, GetPythonGradient);
SHOULD_NOT_DO_GRADIENT(PythonGradient, "it is a gradient op; second derivatives are not supported");

DataType DataTypeOfProtoType(int type) {
  const DataType dtype = static_cast<DataType>(type);
  DOPPIO_ENFORCE(IsStorableType(dtype) && dtype != DataType::kString,
                 "cannot init a tensor of TensorProto type ", type, "; use feed for strings");
  return dtype;
}

py::array DataOf(TensorHandle& handle) {
  // Caffe2 gave a tensor that was never written float elements.
  if (handle.tensor->dtype() == DataType::kUndefined) handle.tensor->mutable_data<float>();
  return TensorView(handle.tensor, handle.name);
}

}  // namespace

void DefinePythonOps(py::module_& m) {
  m.def("register_python_op", &RegisterPythonOp, py::arg("f"), py::arg("pass_workspace"),
        py::arg("name"));
  m.def("register_python_gradient_op", &RegisterPythonGradientOp);
  py::class_<TensorHandle>(m, "TensorCPU")
      .def_property_readonly("data", &DataOf)
      .def_property_readonly(
          "shape", [](const TensorHandle& h) { return py::tuple(py::cast(h.tensor->dims())); })
      .def_property_readonly("_shape", [](const TensorHandle& h) { return h.tensor->dims(); })
      .def("reshape",
           [](TensorHandle& h, const std::vector<int64_t>& dims) { h.tensor->Resize(dims); })
      .def("_reshape",
           [](TensorHandle& h, const std::vector<int64_t>& dims) { h.tensor->Resize(dims); })
      .def("feed",
           [](TensorHandle& h, const py::array& array) { ArrayToTensor(array, h.name, h.tensor); })
      .def("fetch", [](const TensorHandle& h) { return TensorToArray(*h.tensor, h.name); })
      .def("init", [](TensorHandle& h, const std::vector<int64_t>& dims, int type) {
        h.tensor->Resize(dims);
        h.tensor->raw_mutable_data(DataTypeOfProtoType(type));
      });
  py::class_<BlobHandle>(m, "_OpBlob")
      .def("fetch",
           [](const BlobHandle& b) {
             const Blob* blob = b.workspace->GetBlob(b.name);
             DOPPIO_ENFORCE(blob != nullptr && blob->IsTensor(), "blob '", b.name,
                            "' holds no tensor");
             return TensorToArray(blob->GetTensor(), b.name);
           })
      .def("feed", [](const BlobHandle& b, const py::array& array) {
        ArrayToTensor(array, b.name, b.workspace->CreateBlob(b.name)->GetMutableTensor());
      });
  py::class_<WorkspaceHandle>(m, "_OpWorkspace")
      .def_property_readonly("blobs",
                             [](const WorkspaceHandle& w) {
                               py::dict blobs;
                               for (const auto& name : w.workspace->Blobs()) {
                                 blobs[py::str(name)] = BlobHandle{w.workspace, name};
                               }
                               return blobs;
                             })
      .def("create_blob", [](const WorkspaceHandle& w, const std::string& name) {
        w.workspace->CreateBlob(name);
        return BlobHandle{w.workspace, name};
      });
}

}  // namespace python
}  // namespace doppio
