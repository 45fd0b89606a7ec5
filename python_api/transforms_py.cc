// Bindings of the graph transforms (transforms/) for doppio.transformations:
// serialized NetDef in, serialized NetDef out, weights read from and folded
// ones written to the current workspace (as Caffe2's transform_* functions
// use its global workspace).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"
#include "transforms/fuse_activation.h"
#include "transforms/fuse_conv_bn.h"
#include "transforms/inplace_activation.h"
#include "transforms/optimize_inference.h"
#include "transforms/registry.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

NetDef ParseNet(const py::bytes& bytes, const char* function) {
  NetDef net;
  DOPPIO_ENFORCE(net.ParseFromString(std::string(bytes)), "the net given to ", function,
                 " is not a serialized NetDef");
  return net;
}

py::bytes Serialize(const NetDef& net) { return py::bytes(net.SerializeAsString()); }

}  // namespace

void DefineTransforms(py::module_& m, std::function<Workspace*()> current_workspace) {
  m.def(
      "transform_fuseConvBN",
      [current_workspace](const py::bytes& net_bytes) {
        const NetDef net = ParseNet(net_bytes, "transform_fuseConvBN");
        int fused = 0;
        NetDef out;
        {
          py::gil_scoped_release release;
          out = transforms::FuseConvBN(net, current_workspace(), &fused);
        }
        return py::make_tuple(Serialize(out), fused);
      },
      py::arg("net"));
  m.def(
      "transform_fuseActivation",
      [](const py::bytes& net_bytes) {
        transforms::ActivationFusions fused;
        const NetDef out =
            transforms::FuseActivation(ParseNet(net_bytes, "transform_fuseActivation"), &fused);
        py::dict counts;
        counts["swish"] = fused.swish;
        counts["conv_relu"] = fused.conv_relu;
        counts["conv_activation"] = fused.conv_activation;
        counts["fc_relu"] = fused.fc_relu;
        return py::make_tuple(Serialize(out), counts);
      },
      py::arg("net"));
  m.def(
      "apply_transform",
      [](const std::string& name, const py::bytes& net_bytes) {
        return Serialize(
            transforms::ApplyRegisteredTransform(name, ParseNet(net_bytes, "ApplyTransform")));
      },
      py::arg("name"), py::arg("net"));
  m.def("registered_transforms", &transforms::RegisteredTransforms);
  m.def(
      "transform_inplaceActivation",
      [](const py::bytes& net_bytes) {
        int rewritten = 0;
        const NetDef out = transforms::InplaceActivation(
            ParseNet(net_bytes, "transform_inplaceActivation"), &rewritten);
        return py::make_tuple(Serialize(out), rewritten);
      },
      py::arg("net"));
  m.def(
      "transform_optimizeForInference",
      [current_workspace](const py::bytes& net_bytes, const std::vector<std::string>& keep,
                          const std::string& passes) {
        const NetDef net = ParseNet(net_bytes, "transform_optimizeForInference");
        const transforms::InferencePasses selected = transforms::InferencePasses::Parse(passes);
        transforms::InferenceOptimizations done;
        NetDef out;
        {
          py::gil_scoped_release release;
          out = transforms::OptimizeForInference(net, current_workspace(), keep, &done, selected);
        }
        py::dict counts;
        counts["conv_bn"] = done.conv_bn;
        counts["matmul_bias"] = done.matmul_bias;
        counts["channels_last"] = done.channels_last;
        counts["conv_sum"] = done.conv_sum;
        counts["conv_inference"] = done.conv_inference;
        counts["swish"] = done.swish;
        counts["conv_relu"] = done.conv_relu;
        counts["conv_activation"] = done.conv_activation;
        counts["fc_relu"] = done.fc_relu;
        counts["inplace"] = done.inplace;
        return py::make_tuple(Serialize(out), counts);
      },
      py::arg("net"), py::arg("keep") = std::vector<std::string>{}, py::arg("passes") = "default");
}

}  // namespace python
}  // namespace doppio
