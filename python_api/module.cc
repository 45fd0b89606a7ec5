// doppio._C: the Python extension. It keeps Caffe2's model of a process-wide
// set of named workspaces with one current workspace, and exchanges protos
// as serialized bytes (Python holds them as protobuf messages).
//
// Every doppio::Error surfaces as RuntimeError with the whole message. Calls
// that run nets or operators release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/backward.h"
#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/gradient.h"
#include "core/limits.h"
#include "core/net.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/serialization.h"
#include "core/tensor_int8.h"
#include "core/workspace.h"
#include "operators/op_cost.h"
#include "parallel/gloo/gloo_common.h"
#include "parallel/memonger/memonger.h"
#include "python_api/numpy_tensor.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

// The process's workspaces, by name, and which one is current. Guarded by
// the GIL: every function touching it runs with the GIL held.
struct WorkspaceRegistry {
  std::map<std::string, std::unique_ptr<Workspace>> workspaces;
  std::string current = "default";
  Workspace* Current() {
    auto& slot = workspaces[current];
    if (!slot) slot = std::make_unique<Workspace>();
    return slot.get();
  }
};

WorkspaceRegistry& Registry() {
  static auto* registry = new WorkspaceRegistry();
  return *registry;
}

void SwitchWorkspace(const std::string& name, bool create_if_missing) {
  auto& registry = Registry();
  // The current workspace exists even before first use (Caffe2 lists it),
  // so a script can switch away from it and back.
  registry.Current();
  if (!registry.workspaces.count(name)) {
    DOPPIO_ENFORCE(create_if_missing, "workspace '", name,
                   "' does not exist (pass create_if_missing=True to make it)");
    registry.workspaces[name] = std::make_unique<Workspace>();
  }
  registry.current = name;
}

// Caffe2's reset_workspace(root_folder): a fresh workspace, optionally with
// the root folder its db ops resolve relative paths against.
void ResetWorkspace(const std::optional<std::string>& root_folder) {
  auto& registry = Registry();
  auto fresh = std::make_unique<Workspace>();
  if (root_folder) fresh->SetRootFolder(*root_folder);
  registry.workspaces[registry.current] = std::move(fresh);
}

// Throws, naming the blob, unless `option` names a usable CUDA device.
void EnforceCudaDeviceFor(const DeviceOption& option, const std::string& verb,
                          const std::string& name) {
  DOPPIO_ENFORCE(HasCudaGpu(), "cannot ", verb, " blob '", name, "' on CUDA device ",
                 option.cuda_gpu_id(), ": ", CudaUnavailableReason());
  EnforceValidCudaDevice(option.cuda_gpu_id(), "blob '" + name + "'");
}

bool IsCudaOption(const DeviceOption& option) {
  return option.device_type() == static_cast<int>(DeviceKind::kCUDA);
}

// `host` copied into a new tensor on the option's GPU; returns once the copy
// is done, so `host` may go away.
Tensor CopyToCuda(const Tensor& host, const DeviceOption& option, const std::string& name) {
  DOPPIO_ENFORCE(host.dtype() != DataType::kString, "cannot feed blob '", name,
                 "' to a CUDA device: string tensors live on the CPU only");
  CUDAContext context(option);
  context.SwitchToDevice();
  Tensor device_tensor(Device{DeviceKind::kCUDA, option.cuda_gpu_id()});
  device_tensor.Resize(host.dims());
  void* destination = device_tensor.raw_mutable_data(host.dtype());
  context.CopyBytes(host.nbytes(), host.raw_data(), destination);
  context.FinishDeviceComputation();
  return device_tensor;
}

Tensor CopyToHost(const Tensor& device_tensor, const std::string& name) {
  DeviceOption option;
  option.set_device_type(static_cast<int>(DeviceKind::kCUDA));
  option.set_cuda_gpu_id(device_tensor.device().id);
  EnforceCudaDeviceFor(option, "fetch", name);
  CUDAContext context(option);
  context.SwitchToDevice();
  Tensor host(device_tensor.dims(), device_tensor.dtype());
  void* destination = host.raw_mutable_data(device_tensor.dtype());
  context.CopyBytes(device_tensor.nbytes(), device_tensor.raw_data(), destination);
  context.FinishDeviceComputation();
  return host;
}

// With a CUDA device option the array lands in a tensor on that GPU (as
// Caffe2's FeedBlob under a CUDA device scope); otherwise on the host.
void FeedBlob(const std::string& name, const py::array& array,
              const py::object& device_option_bytes) {
  DeviceOption option;
  if (!device_option_bytes.is_none()) {
    option = ParseProto<DeviceOption>(device_option_bytes.cast<py::bytes>(), "DeviceOption");
  }
  if (IsCudaOption(option)) EnforceCudaDeviceFor(option, "feed", name);
  Tensor tensor;
  ArrayToTensor(array, name, &tensor);
  if (IsCudaOption(option)) tensor = CopyToCuda(tensor, option, name);
  Registry().Current()->CreateBlob(name)->Reset(std::make_unique<Tensor>(std::move(tensor)));
}

// A Python str or bytes is a std::string blob, as in Caffe2 (not a string
// tensor: Caffe2 scripts fetch it back as bytes, and Save writes it as
// Caffe2's "std::string" BlobProto).
void FeedStringBlob(const std::string& name, const py::bytes& value) {
  Registry().Current()->CreateBlob(name)->Reset(
      std::make_unique<std::string>(static_cast<std::string>(value)));
}

// An Int8TensorCPU from a uint8 (activations, weights) or int32 (biases)
// array and its quantization: what Caffe2's Int8GivenTensorFill makes.
void FeedInt8Blob(const std::string& name, const py::array& array, float scale,
                  int32_t zero_point) {
  DOPPIO_ENFORCE(std::isfinite(scale) && scale > 0, "cannot feed Int8 blob '", name, "': scale ",
                 scale, " must be finite and positive");
  auto int8_tensor = std::make_unique<int8::Int8TensorCPU>();
  ArrayToTensor(array, name, &int8_tensor->t);
  const DataType dtype = int8_tensor->t.dtype();
  DOPPIO_ENFORCE(dtype == DataType::kUint8 || dtype == DataType::kInt32, "cannot feed Int8 blob '",
                 name, "': its data must be uint8 or int32, not ", DataTypeName(dtype));
  int8_tensor->scale = scale;
  int8_tensor->zero_point = zero_point;
  Registry().Current()->CreateBlob(name)->Reset(std::move(int8_tensor));
}

// A bfloat16 tensor (numpy has no bfloat16) from float32/float64 values,
// rounded to nearest even, or from uint16 arrays of bfloat16 bit patterns.
void FeedBFloat16Blob(const std::string& name, const py::array& array) {
  Tensor values;
  ArrayToTensor(array, name, &values);
  Tensor tensor(values.dims(), DataType::kBFloat16);
  bfloat16* out = tensor.mutable_data<bfloat16>();
  const int64_t n = values.numel();
  switch (values.dtype()) {
    case DataType::kUint16:
      for (int64_t i = 0; i < n; ++i) out[i].bits = values.data<uint16_t>()[i];
      break;
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) out[i] = FloatToBFloat16(values.data<float>()[i]);
      break;
    case DataType::kDouble:
      // As x.astype(float32) then a cast: two roundings, which can differ
      // from rounding the double once where float32's rounding lands on a
      // bfloat16 midpoint.
      for (int64_t i = 0; i < n; ++i) {
        out[i] = FloatToBFloat16(static_cast<float>(values.data<double>()[i]));
      }
      break;
    default:
      DOPPIO_THROW("cannot feed bfloat16 blob '", name, "' from ", DataTypeName(values.dtype()),
                   ": give float32/float64 values or uint16 bit patterns");
  }
  Registry().Current()->CreateBlob(name)->Reset(std::make_unique<Tensor>(std::move(tensor)));
}

// GPU tensors are copied to the host first; a std::string blob comes back
// as bytes; an Int8TensorCPU as (data, scale, zero_point), as Caffe2's
// fetch_blob returns it. A CUDA device option only asserts that the caller expects a GPU
// (a clear error where there is none).
py::object FetchBlob(const std::string& name, const py::object& device_option_bytes) {
  if (!device_option_bytes.is_none()) {
    const auto option =
        ParseProto<DeviceOption>(device_option_bytes.cast<py::bytes>(), "DeviceOption");
    if (IsCudaOption(option)) EnforceCudaDeviceFor(option, "fetch", name);
  }
  const Blob* blob = Registry().Current()->GetBlob(name);
  DOPPIO_ENFORCE(blob != nullptr, "cannot fetch blob '", name,
                 "': it does not exist in the current workspace");
  if (blob->IsType<std::string>()) return py::bytes(blob->Get<std::string>());
  if (blob->IsType<int8::Int8TensorCPU>()) {
    const auto& int8_tensor = blob->Get<int8::Int8TensorCPU>();
    return py::make_tuple(TensorToArray(int8_tensor.t, name), int8_tensor.scale,
                          int8_tensor.zero_point);
  }
  // Other C++ objects (DB cursors, RecurrentNetwork's step workspaces)
  // fetch as a description, as Caffe2's did: scripts fetch every blob.
  if (!blob->IsTensor()) {
    return py::bytes(MakeString(name, ", a C++ native class of type ", blob->TypeName(), "."));
  }
  const Tensor& tensor = blob->GetTensor();
  if (tensor.device().kind == DeviceKind::kCUDA) {
    return TensorToArray(CopyToHost(tensor, name), name);
  }
  return TensorToArray(tensor, name);
}

// Blob `name`'s tensor as a numpy array over its memory (Caffe2's
// Blob.tensor().data): writes land in the blob.
py::array TensorViewOfBlob(const std::string& name) {
  const Blob* blob = Registry().Current()->GetBlob(name);
  DOPPIO_ENFORCE(blob != nullptr, "cannot view blob '", name,
                 "': it does not exist in the current workspace");
  DOPPIO_ENFORCE(blob->IsTensor(), "blob '", name, "' holds ", blob->TypeName(), ", not a tensor");
  return SharedTensorView(blob->GetTensor(), name);
}

void RunOperatorOnce(const py::bytes& op_bytes) {
  const OperatorDef def = ParseProto<OperatorDef>(op_bytes, "OperatorDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunOperatorOnce(def);
}

void RunNetOnce(const py::bytes& net_bytes) {
  const NetDef def = ParseProto<NetDef>(net_bytes, "NetDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunNetOnce(def);
}

void CreateNet(const py::bytes& net_bytes, bool overwrite) {
  const NetDef def = ParseProto<NetDef>(net_bytes, "NetDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->CreateNet(def, overwrite);
}

// A PlanDef runs to completion (or its first error) without the GIL, so
// Python threads (e.g. one feeding data) keep running beside it.
void RunPlan(const py::bytes& plan_bytes) {
  const PlanDef def = ParseProto<PlanDef>(plan_bytes, "PlanDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunPlan(def);
}

void RunNet(const std::string& name, int num_iter) {
  DOPPIO_ENFORCE(num_iter >= 0, "num_iter must be >= 0, got ", num_iter);
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  for (int i = 0; i < num_iter; ++i) workspace->RunNet(name);
}

NetBase* NetNamed(const std::string& name) {
  NetBase* net = Registry().Current()->GetNet(name);
  DOPPIO_ENFORCE(net != nullptr, "no net named '", name, "' (create it first)");
  return net;
}

std::vector<py::bytes> GetNetRandomStates(const std::string& name) {
  std::vector<py::bytes> states;
  for (const std::string& state : NetRandomStates(*NetNamed(name))) states.emplace_back(state);
  return states;
}

void SetNetRandomStatesFromPython(const std::string& name, const std::vector<std::string>& states) {
  SetNetRandomStates(NetNamed(name), states);
}

// (gradient op bytes, gradient blob per input: a name, (indices, values) or None)
py::tuple GetGradientDefs(const py::bytes& op_bytes, const std::vector<py::object>& output_grads) {
  const OperatorDef def = ParseProto<OperatorDef>(op_bytes, "OperatorDef");
  std::vector<GradientWrapper> wrappers;
  for (const py::object& grad : output_grads) {
    GradientWrapper wrapper;
    if (py::isinstance<py::str>(grad)) {
      wrapper.dense = grad.cast<std::string>();
    } else if (py::isinstance<py::tuple>(grad)) {
      auto pair = grad.cast<std::pair<std::string, std::string>>();
      wrapper.indices = pair.first;
      wrapper.values = pair.second;
    } else {
      DOPPIO_ENFORCE(grad.is_none(), "output gradients must be str, (indices, values) or None");
    }
    wrappers.push_back(wrapper);
  }
  const GradientOpsMeta meta = GetGradientForOp(def, wrappers);
  py::list ops;
  for (const OperatorDef& op : meta.ops) ops.append(SerializeProto(op));
  py::list input_grads;
  for (const GradientWrapper& grad : meta.input_gradients) {
    if (grad.IsDense()) {
      input_grads.append(py::str(grad.dense));
    } else if (grad.IsSparse()) {
      input_grads.append(py::make_tuple(grad.indices, grad.values));
    } else {
      input_grads.append(py::none());
    }
  }
  return py::make_tuple(ops, input_grads);
}

// The backward pass of a serialized NetDef: (gradient op bytes, blob ->
// gradient), a gradient being a str or an (indices, values) tuple.
py::tuple AddGradientOperatorsPy(const py::bytes& net_bytes, const std::vector<std::string>& losses,
                                 const py::object& loss_grads) {
  const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
  std::map<std::string, GradientWrapper> initial;
  if (!loss_grads.is_none()) {
    DOPPIO_ENFORCE(py::isinstance<py::dict>(loss_grads),
                   "add_gradient_operators: loss_grads must be a dict loss -> gradient or None");
    for (const auto& item : loss_grads.cast<py::dict>()) {
      const std::string loss = py::str(item.first);
      const py::handle grad = item.second;
      GradientWrapper wrapper;
      if (py::isinstance<py::str>(grad)) {
        wrapper.dense = grad.cast<std::string>();
      } else if (py::isinstance<py::tuple>(grad) || py::isinstance<py::list>(grad)) {
        auto pair = grad.cast<std::vector<std::string>>();
        DOPPIO_ENFORCE(pair.size() == 2, "add_gradient_operators: the gradient of loss '", loss,
                       "' must be a name or (indices, values)");
        wrapper.indices = pair[0];
        wrapper.values = pair[1];
      } else {
        DOPPIO_ENFORCE(grad.is_none(), "add_gradient_operators: the gradient of loss '", loss,
                       "' must be str, (indices, values) or None");
      }
      initial[loss] = wrapper;
    }
  }
  BackwardResult result;
  {
    py::gil_scoped_release release;
    result = AddGradientOperators(net, losses, initial);
  }
  py::list ops;
  for (const OperatorDef& op : result.ops) ops.append(SerializeProto(op));
  py::dict gradients;
  for (const auto& entry : result.gradients) {
    const GradientWrapper& grad = entry.second;
    if (grad.IsDense()) {
      gradients[py::str(entry.first)] = py::str(grad.dense);
    } else {
      gradients[py::str(entry.first)] = py::make_tuple(grad.indices, grad.values);
    }
  }
  return py::make_tuple(ops, gradients);
}

// The Parallelize pass on serialized template nets:
// (init net bytes, net bytes, {template param: gradient}).
py::dict SchemaInfo(const std::string& type) {
  const OpSchema* schema = OpSchemaRegistry::Schema(type);
  DOPPIO_ENFORCE(schema != nullptr, "op type '", type, "' has no schema");
  py::dict info;
  info["min_input"] = schema->min_input();
  info["max_input"] = schema->max_input();
  info["min_output"] = schema->min_output();
  info["max_output"] = schema->max_output();
  info["doc"] = schema->doc();
  info["summary"] = schema->Summary();
  return info;
}

// Schema cost inference over a serialized NetDef (tools/inspect_net): shapes
// is {blob: dims}, types optionally {blob: TensorProto.DataType} (default
// float). Returns per-op figures, their total and the inferred blob shapes.
py::dict InferNetCostPy(const py::bytes& net_bytes, const py::dict& shapes,
                        const py::object& types) {
  const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
  std::map<std::string, TensorShape> known;
  for (const auto& item : shapes) {
    const std::string name = py::str(item.first);
    TensorShape shape;
    try {
      for (int64_t d : item.second.cast<std::vector<int64_t>>()) shape.add_dims(d);
    } catch (const py::cast_error&) {
      DOPPIO_THROW("infer_net_cost: the shape of blob '", name, "' must be a list of ints");
    }
    known[name] = shape;
  }
  if (!types.is_none()) {
    for (const auto& item : types.cast<py::dict>()) {
      const std::string name = py::str(item.first);
      const int dtype = item.second.cast<int>();
      DOPPIO_ENFORCE(TensorProto::DataType_IsValid(dtype), "infer_net_cost: blob '", name,
                     "' has an invalid data type ", dtype);
      known[name].set_data_type(static_cast<TensorProto::DataType>(dtype));
    }
  }
  NetCostEstimate estimate;
  {
    py::gil_scoped_release release;
    estimate = InferNetCost(net, known);
  }
  auto cost_dict = [](const OpSchema::Cost& cost) {
    py::dict d;
    d["flops"] = cost.flops;
    d["bytes_read"] = cost.bytes_read;
    d["bytes_written"] = cost.bytes_written;
    d["params_bytes"] = cost.params_bytes;
    return d;
  };
  py::list ops;
  for (const OpCostEstimate& op : estimate.ops) {
    py::dict d = cost_dict(op.cost);
    d["index"] = op.index;
    d["type"] = op.type;
    d["name"] = op.name;
    d["known"] = op.known;
    d["reason"] = op.reason;
    ops.append(d);
  }
  py::dict inferred;
  for (const auto& item : estimate.shapes) {
    std::vector<int64_t> dims(item.second.dims().begin(), item.second.dims().end());
    inferred[py::str(item.first)] =
        py::make_tuple(dims, static_cast<int>(item.second.data_type()));
  }
  py::dict result;
  result["ops"] = ops;
  result["total"] = cost_dict(estimate.total);
  result["unknown_ops"] = estimate.unknown_ops;
  result["shapes"] = inferred;
  return result;
}

// Memonger passes on serialized NetDefs (doppio.memonger): bytes in, bytes out.
memonger::BlobShapes ShapesFromPy(const py::object& shapes) {
  memonger::BlobShapes result;
  if (shapes.is_none()) return result;
  DOPPIO_ENFORCE(py::isinstance<py::dict>(shapes),
                 "memonger: blob_shapes must be a dict blob name -> shape or None");
  for (const auto& item : shapes.cast<py::dict>()) {
    const std::string name = py::str(item.first);
    try {
      result[name] = item.second.cast<std::vector<int64_t>>();
    } catch (const py::cast_error&) {
      DOPPIO_THROW("memonger: the shape of blob '", name, "' in blob_shapes must be a list of ints");
    }
  }
  return result;
}

std::set<std::string> AsSet(const std::vector<std::string>& names) {
  return std::set<std::string>(names.begin(), names.end());
}

void DefineMemonger(py::module_& m) {
  m.def("memonger_share_grad_blobs",
        [](const py::bytes& net, const std::vector<std::string>& losses,
           const std::vector<std::string>& param_grads, const std::string& namescope,
           const std::vector<std::string>& dont_share_blobs, bool share_activations,
           const py::object& blob_shapes) {
          const NetDef def = ParseProto<NetDef>(net, "NetDef");
          const memonger::BlobShapes shapes = ShapesFromPy(blob_shapes);
          NetDef result;
          {
            py::gil_scoped_release release;
            result = memonger::ShareGradBlobs(def, losses, AsSet(param_grads), namescope,
                                              AsSet(dont_share_blobs), share_activations, shapes);
          }
          return SerializeProto(result);
        },
        py::arg("net_def"), py::arg("losses"), py::arg("param_grads"), py::arg("namescope"),
        py::arg("dont_share_blobs"), py::arg("share_activations"), py::arg("blob_shapes"));
  m.def("memonger_compute_blob_recycling_for_dag",
        [](const py::bytes& net, const std::vector<std::string>& shareable_blobs,
           const std::string& namescope, const std::vector<std::string>& dont_share_blobs,
           const py::object& blob_shapes, bool dynamic_programming) {
          memonger::RecyclingOptions options;
          options.shareable_blobs = AsSet(shareable_blobs);
          options.namescope = namescope;
          options.dont_share_blobs = AsSet(dont_share_blobs);
          options.blob_shapes = ShapesFromPy(blob_shapes);
          options.algorithm = dynamic_programming
                                  ? memonger::AssignmentAlgorithm::kDynamicProgramming
                                  : memonger::AssignmentAlgorithm::kGreedy;
          return SerializeProto(
              memonger::ComputeBlobRecyclingForDag(ParseProto<NetDef>(net, "NetDef"), options));
        },
        py::arg("net_def"), py::arg("shareable_blobs"), py::arg("namescope"),
        py::arg("dont_share_blobs"), py::arg("blob_shapes"), py::arg("dynamic_programming") = false);
  m.def("memonger_optimize_inference_for_dag",
        [](const py::bytes& net, const std::vector<std::string>& input_blobs,
           const std::string& namescope) {
          return SerializeProto(memonger::OptimizeInferenceForDag(
              ParseProto<NetDef>(net, "NetDef"), input_blobs, namescope));
        },
        py::arg("net_def"), py::arg("input_blobs"), py::arg("namescope"));
  m.def("memonger_release_blobs_when_used",
        [](const py::bytes& net, const std::vector<std::string>& dont_free_blobs) {
          return SerializeProto(
              memonger::ReleaseBlobsWhenUsed(ParseProto<NetDef>(net, "NetDef"), AsSet(dont_free_blobs)));
        },
        py::arg("net_def"), py::arg("dont_free_blobs"));
  m.def("memonger_verify_graph_equality",
        [](const py::bytes& a, const py::bytes& b) {
          return memonger::VerifyGraphEquality(ParseProto<NetDef>(a, "NetDef"),
                                               ParseProto<NetDef>(b, "NetDef"));
        },
        py::arg("net_a"), py::arg("net_b"));
  m.def("memonger_verify_inplace_blobs",
        [](const py::bytes& a, const py::bytes& b) {
          return memonger::VerifyInplaceBlobs(ParseProto<NetDef>(a, "NetDef"),
                                              ParseProto<NetDef>(b, "NetDef"));
        },
        py::arg("net_a"), py::arg("net_b"));
}

}  // namespace

// python_api/cross_device_py.cc
void DefineCrossDeviceCopies(py::module_& m);
// python_api/parallelize_py.cc
void DefineParallelize(py::module_& m);
void DefineEnginePref(py::module_& m);
// python_api/capabilities_py.cc
void DefineCapabilities(py::module_& m);
void DefinePythonOps(py::module_& m);
void DefinePythonGradients(py::module_& m);
// python_api/shape_inference_py.cc
void DefineShapeInference(py::module_& m, std::function<Workspace*()> current_workspace);
// python_api/transforms_py.cc
void DefineTransforms(py::module_& m, std::function<Workspace*()> current_workspace);
// python_api/db_py.cc
void DefineDB(py::module_& m);

PYBIND11_MODULE(_C, m) {
  m.doc() = "Doppio's C++ runtime";
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const InvalidArgumentError& error) {
      PyErr_SetString(PyExc_ValueError, error.what());
    } catch (const NotImplementedError& error) {
      PyErr_SetString(PyExc_NotImplementedError, error.what());
    } catch (const Error& error) {
      PyErr_SetString(PyExc_RuntimeError, error.what());
    }
  });

  m.def("switch_workspace", &SwitchWorkspace, py::arg("name"),
        py::arg("create_if_missing") = false);
  m.def("current_workspace", [] { return Registry().current; });
  m.def("workspaces", [] {
    std::vector<std::string> names;
    for (const auto& entry : Registry().workspaces) names.push_back(entry.first);
    return names;
  });
  m.def("reset_workspace", &ResetWorkspace, py::arg("root_folder") = py::none());
  m.def("root_folder", [] { return Registry().Current()->RootFolder(); });
  m.def("feed_blob", &FeedBlob, py::arg("name"), py::arg("array"),
        py::arg("device_option") = py::none());
  m.def("feed_string_blob", &FeedStringBlob, py::arg("name"), py::arg("value"));
  m.def("feed_int8_blob", &FeedInt8Blob, py::arg("name"), py::arg("array"), py::arg("scale"),
        py::arg("zero_point"));
  m.def("feed_bfloat16_blob", &FeedBFloat16Blob, py::arg("name"), py::arg("array"));
  m.def("fetch_blob", &FetchBlob, py::arg("name"), py::arg("device_option") = py::none());
  m.def("tensor_view", &TensorViewOfBlob, py::arg("name"));
  m.def("has_blob", [](const std::string& name) { return Registry().Current()->HasBlob(name); });
  m.def("create_blob", [](const std::string& name) {
    Registry().Current()->CreateBlob(name);
    return true;
  });
  // A blob as one BlobProto's bytes (what Save writes for it), and back.
  m.def("serialize_blob", [](const std::string& name) {
    const Blob* blob = Registry().Current()->GetBlob(name);
    DOPPIO_ENFORCE(blob != nullptr, "cannot serialize blob '", name,
                   "': it does not exist in the current workspace");
    return py::bytes(SerializeBlobToString(*blob, name));
  });
  m.def("deserialize_blob", [](const std::string& name, const py::bytes& serialized) {
    Blob loaded;
    DeserializeBlob(static_cast<std::string>(serialized), &loaded);
    Registry().Current()->CreateBlob(name)->Swap(loaded);
  });
  m.def("blobs", [] { return Registry().Current()->Blobs(); });
  m.def("remove_blob", [](const std::string& name) { return Registry().Current()->RemoveBlob(name); });
  m.def("run_operator_once", &RunOperatorOnce, py::arg("op_def"));
  m.def("run_net_once", &RunNetOnce, py::arg("net_def"));
  m.def("create_net", &CreateNet, py::arg("net_def"), py::arg("overwrite") = false);
  m.def("run_net", &RunNet, py::arg("name"), py::arg("num_iter") = 1);
  // Each op's random generator state (core/net.h), for checkpoints.
  m.def("net_random_states", &GetNetRandomStates, py::arg("name"));
  m.def("set_net_random_states", &SetNetRandomStatesFromPython, py::arg("name"),
        py::arg("states"));
  m.def("run_plan", &RunPlan, py::arg("plan_def"));
  m.def("nets", [] { return Registry().Current()->Nets(); });
  m.def("delete_net", [](const std::string& name) { return Registry().Current()->DeleteNet(name); });
  m.def("get_gradient_defs", &GetGradientDefs, py::arg("op_def"), py::arg("output_grads"));
  m.def("add_gradient_operators", &AddGradientOperatorsPy, py::arg("net_def"), py::arg("losses"),
        py::arg("loss_grads") = py::none());
  m.def("registered_operators", [] {
    std::vector<std::string> types;
    for (const OperatorKey& key : OperatorRegistry::Keys()) {
      if (types.empty() || types.back() != key.type) types.push_back(key.type);
    }
    return types;
  });
  // (device, engine) pairs an op type is registered under: "CPU"/"CUDA",
  // "" for the default engine.
  m.def("registered_operator_devices", [](const std::string& type) {
    std::vector<std::pair<std::string, std::string>> devices;
    for (const OperatorKey& key : OperatorRegistry::Keys()) {
      if (key.type != type) continue;
      devices.emplace_back(key.device == DeviceKind::kCUDA ? "CUDA" : "CPU", key.engine);
    }
    return devices;
  }, py::arg("op_type"));
  DefineParallelize(m);
  DefineEnginePref(m);
  DefinePythonOps(m);
  DefinePythonGradients(m);
  DefineMemonger(m);
  DefineCrossDeviceCopies(m);
  DefineTransforms(m, [] { return Registry().Current(); });
  DefineDB(m);
  m.def("schema", &SchemaInfo, py::arg("op_type"));
  m.def("infer_net_cost", &InferNetCostPy, py::arg("net_def"), py::arg("shapes"),
        py::arg("types") = py::none());
  m.def("inplace_allowed", [](const std::string& type, int input, int output) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    DOPPIO_ENFORCE(schema != nullptr, "op type '", type, "' has no schema");
    return schema->inplace_allowed(input, output);
  });
  m.def("inplace_enforced", [](const std::string& type, int input, int output) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    DOPPIO_ENFORCE(schema != nullptr, "op type '", type, "' has no schema");
    return schema->inplace_enforced(input, output);
  });
  DefineCapabilities(m);
  DefineShapeInference(m, [] { return Registry().Current(); });
  // Peak workspace bytes for memonger's benchmark and tests (Doppio only).
  m.def("cpu_allocator_stats", [] {
    const doppio::AllocatorStats stats = doppio::GetCPUAllocatorStats();
    py::dict result;
    result["current_bytes"] = stats.current_bytes;
    result["peak_bytes"] = stats.peak_bytes;
    result["allocations"] = stats.allocations;
    result["allocated_bytes"] = stats.allocated_bytes;
    return result;
  });
  m.def("reset_cpu_allocator_peak", &doppio::ResetCPUAllocatorPeak);
  m.def("drain_common_worlds", &DrainCommonWorlds, py::call_guard<py::gil_scoped_release>(),
        "Waits (each at most its timeout) until every rank of every live Gloo common world "
        "reaches this call; returns how many failed. Registered with atexit by doppio.");
}

}  // namespace python
}  // namespace doppio
