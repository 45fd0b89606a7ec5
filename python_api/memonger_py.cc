// doppio._C's memory passes and counters: the memonger on serialized
// NetDefs (bytes in, bytes out) and the CPU allocator's statistics.
#include "python_api/bindings.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "parallel/memonger/memonger.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

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

}  // namespace

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
}

}  // namespace python
}  // namespace doppio
