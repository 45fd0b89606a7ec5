// The typed boundary of the Parallelize pass (parallel/data_parallel.h):
// Python fills one ParallelizeRequest (the template and every option) and
// gets one Parallelized back (the nets, the gradient maps, the replicas'
// prefixes, the plan). NetDefs and OperatorDefs cross as serialized bytes
// (python_api/proto_bytes.h). doppio.data_parallel_model uses only what
// this returns; the naming rules and checks stay on the C++ side.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/net_dag.h"
#include "parallel/collective_schedule.h"
#include "parallel/data_parallel.h"
#include "parallel/data_parallel_phases.h"
#include "parallel/device_collectives.h"
#include "parallel/mixed_precision.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

// A NetDef member as a bytes property.
template <typename Owner>
void NetProperty(py::class_<Owner>& cls, const char* name, NetDef Owner::*member) {
  cls.def_property(
      name, [member](const Owner& owner) { return SerializeProto(owner.*member); },
      [member, name](Owner& owner, const py::bytes& bytes) {
        owner.*member = ParseProto<NetDef>(bytes, std::string(name) + " NetDef");
      });
}

// A gradient as Python names it: a blob name, or (indices, values).
py::object GradientToPython(const GradientWrapper& grad) {
  if (grad.IsSparse()) return py::make_tuple(grad.indices, grad.values);
  return py::str(grad.dense);
}

GradientWrapper GradientFromPython(const py::handle& grad) {
  GradientWrapper wrapper;
  if (py::isinstance<py::tuple>(grad) || py::isinstance<py::list>(grad)) {
    const auto parts = grad.cast<std::vector<std::string>>();
    DOPPIO_ENFORCE(parts.size() == 2, "a sparse gradient is (indices, values), got ",
                   parts.size(), " names");
    wrapper.indices = parts[0];
    wrapper.values = parts[1];
  } else {
    wrapper.dense = grad.cast<std::string>();
  }
  return wrapper;
}

// The backward the caller already ran: its ops (bytes) and gradients.
void SetBackward(DataParallelTemplate& model, const std::vector<py::bytes>& ops,
                 const py::dict& gradients) {
  BackwardResult backward;
  for (const py::bytes& op : ops) {
    backward.ops.push_back(ParseProto<OperatorDef>(op, "gradient OperatorDef"));
  }
  for (const auto& entry : gradients) {
    backward.gradients[entry.first.cast<std::string>()] = GradientFromPython(entry.second);
  }
  model.backward = std::move(backward);
}

// The plan's reductions, one dict per (op, kind), in emission order.
py::list Reductions(const ParallelPlan& plan) {
  py::list rows;
  auto add = [&](int index, const char* kind, const std::vector<std::string>& blobs) {
    if (blobs.empty()) return;
    py::dict row;
    row["after_op"] = index;
    row["op_type"] = plan.train_ops[index].type();
    row["kind"] = kind;
    row["blobs"] = blobs;
    rows.append(row);
  };
  for (const auto& entry : plan.after_op) {
    const AfterOp& after = entry.second;
    add(entry.first, "statistics", after.statistics);
    add(entry.first, "gradients", after.gradients);
    for (const auto& bucket : after.shard_buckets) add(entry.first, "shard_bucket", bucket);
    for (const SparseGradientSync& sync : after.sparse) {
      add(entry.first, "sparse", {sync.slice.indices, sync.slice.values});
    }
  }
  return rows;
}

void DefineRequest(py::module_& m) {
  py::class_<RendezvousOptions>(m, "RendezvousOptions")
      .def(py::init<>())
      .def_readwrite("kv_handler", &RendezvousOptions::kv_handler)
      .def_readwrite("num_shards", &RendezvousOptions::num_shards)
      .def_readwrite("shard_id", &RendezvousOptions::shard_id)
      .def_readwrite("common_world", &RendezvousOptions::common_world)
      .def_readwrite("engine", &RendezvousOptions::engine)
      .def_readwrite("transport", &RendezvousOptions::transport)
      .def_readwrite("interface", &RendezvousOptions::interface)
      .def_readwrite("timeout_ms", &RendezvousOptions::timeout_ms)
      .def_readwrite("bucket_cap_mb", &RendezvousOptions::bucket_cap_mb);
  py::class_<ParallelizeOptions>(m, "ParallelizeOptions")
      .def(py::init<>())
      .def_readwrite("devices", &ParallelizeOptions::devices)
      .def_readwrite("device_type", &ParallelizeOptions::device_type)
      .def_readwrite("use_nccl", &ParallelizeOptions::use_nccl)
      .def_readwrite("broadcast_computed_params", &ParallelizeOptions::broadcast_computed_params)
      .def_readwrite("net_type", &ParallelizeOptions::net_type)
      .def_readwrite("num_threads_per_device", &ParallelizeOptions::num_threads_per_device)
      .def_readwrite("shared_blobs", &ParallelizeOptions::shared_blobs)
      .def_readwrite("combine_spatial_bn", &ParallelizeOptions::combine_spatial_bn)
      .def_readwrite("shared_model", &ParallelizeOptions::shared_model)
      .def_readwrite("accumulate_steps", &ParallelizeOptions::accumulate_steps)
      .def_readwrite("local_updates", &ParallelizeOptions::local_updates)
      .def_readwrite("shard_optimizer_state", &ParallelizeOptions::shard_optimizer_state)
      .def_readwrite("precision", &ParallelizeOptions::precision)
      .def_readwrite("dynamic_loss_scale", &ParallelizeOptions::dynamic_loss_scale)
      .def_readwrite("init_loss_scale", &ParallelizeOptions::init_loss_scale)
      .def_readwrite("loss_scale_growth_interval",
                     &ParallelizeOptions::loss_scale_growth_interval)
      .def_readwrite("rendezvous", &ParallelizeOptions::rendezvous);
  py::class_<DataParallelTemplate> model(m, "DataParallelTemplate");
  model.def(py::init<>())
      .def_readwrite("losses", &DataParallelTemplate::losses)
      .def_readwrite("params", &DataParallelTemplate::params)
      .def_readwrite("computed_params", &DataParallelTemplate::computed_params)
      .def("set_backward", &SetBackward, py::arg("ops"), py::arg("gradients"));
  NetProperty(model, "param_init_net", &DataParallelTemplate::param_init_net);
  NetProperty(model, "net", &DataParallelTemplate::net);
  NetProperty(model, "param_update_net", &DataParallelTemplate::param_update_net);
  py::class_<ParallelizeRequest>(m, "ParallelizeRequest")
      .def(py::init<>())
      .def_readwrite("model", &ParallelizeRequest::model)
      .def_readwrite("options", &ParallelizeRequest::options);
}

void DefineResult(py::module_& m) {
  py::class_<ParallelPlan>(m, "ParallelPlan")
      .def_property_readonly("prefixes",
                             [](const ParallelPlan& plan) {
                               std::vector<std::string> prefixes;
                               for (const Replica& r : plan.replicas) prefixes.push_back(r.prefix);
                               return prefixes;
                             })
      .def_readonly("shared", &ParallelPlan::shared)
      .def_readonly("master_params", &ParallelPlan::master_params)
      .def_readonly("distributed", &ParallelPlan::distributed)
      .def_readonly("accumulate_steps", &ParallelPlan::accumulate_steps)
      .def_readonly("accumulators", &ParallelPlan::accumulators)
      .def_readonly("init_broadcasts", &ParallelPlan::init_broadcasts)
      .def_property_readonly("loss_scaling",
                             [](const ParallelPlan& plan) { return plan.loss_scaling.enabled; })
      .def_property_readonly(
          "precision", [](const ParallelPlan& plan) { return DataTypeName(plan.precision.low); })
      .def_property_readonly("reductions", &Reductions)
      .def("__str__", &ParallelPlan::ToString);
  py::class_<Parallelized>(m, "Parallelized")
      .def_property_readonly("param_init_net",
                             [](const Parallelized& r) { return SerializeProto(r.param_init_net); })
      .def_property_readonly("net", [](const Parallelized& r) { return SerializeProto(r.net); })
      .def_readonly("param_to_grad", &Parallelized::param_to_grad)
      .def_property_readonly("sparse_param_to_grad",
                             [](const Parallelized& r) {
                               py::dict sparse;
                               for (const auto& entry : r.sparse_param_to_grad) {
                                 sparse[py::str(entry.first)] = GradientToPython(entry.second);
                               }
                               return sparse;
                             })
      .def_readonly("device_param_to_grad", &Parallelized::device_param_to_grad)
      .def_property_readonly("schedule_shapes",
                             [](const Parallelized& r) {
                               py::dict shapes;
                               for (const auto& entry : r.schedule_shapes) {
                                 shapes[py::str(entry.first)] = SerializeProto(entry.second);
                               }
                               return shapes;
                             })
      // (blob, whole dims, dtype, begin, end) per block of optimizer state.
      .def_property_readonly("sharded_blobs",
                             [](const Parallelized& r) {
                               py::list blobs;
                               for (const Parallelized::ShardedBlob& b : r.sharded_blobs) {
                                 std::vector<int64_t> dims(b.whole.dims().begin(),
                                                           b.whole.dims().end());
                                 blobs.append(py::make_tuple(b.blob, dims,
                                                             static_cast<int>(b.whole.data_type()),
                                                             b.begin, b.end));
                               }
                               return blobs;
                             })
      .def_property_readonly("shard_state_net",
                             [](const Parallelized& r) { return SerializeProto(r.shard_state_net); })
      .def_readonly("plan", &Parallelized::plan);
}

}  // namespace

void DefineParallelize(py::module_& m) {
  DefineRequest(m);
  DefineResult(m);
  m.def(
      "parallelize",
      [](const ParallelizeRequest& request) {
        py::gil_scoped_release release;
        return Parallelize(request.model, request.options);
      },
      py::arg("request"));
  m.def("validate_parallelize_options", &ValidateParallelizeOptions, py::arg("options"));
  // Dynamic loss scaling's per-replica blob names (without the prefix).
  m.attr("LOSS_SCALE_BLOB") = kLossScaleBlob;
  m.attr("LOSS_SCALE_SKIPPED_STEPS_BLOB") = kLossScaleSkippedStepsBlob;
  m.attr("LOSS_SCALE_GOOD_STEPS_BLOB") = kLossScaleGoodStepsBlob;
  // The forward net lowered to `precision` (parallel/mixed_precision.h), and
  // the plan's text: what the Python front end runs before it derives the
  // backward, so that the gradient ops follow the lowered ops.
  m.def(
      "lower_precision",
      [](const py::bytes& net_bytes, const std::string& precision) {
        const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
        LoweredNet lowered = LowerPrecision(net, ParsePrecision(precision));
        return py::make_tuple(SerializeProto(lowered.net), lowered.plan.ToString());
      },
      py::arg("net"), py::arg("precision"));
  // The init net again with its collective schedule check covering `nets`
  // too (parallel/collective_schedule.h), for collectives added after the
  // pass; `shapes`: Parallelized.schedule_shapes.
  m.def(
      "insert_schedule_check",
      [](const py::bytes& init_bytes, const std::vector<py::bytes>& net_bytes,
         const std::string& common_world, const py::dict& shape_bytes) {
        NetDef init = ParseProto<NetDef>(init_bytes, "init NetDef");
        std::vector<NetDef> nets;
        for (const py::bytes& bytes : net_bytes) nets.push_back(ParseProto<NetDef>(bytes, "NetDef"));
        std::map<std::string, TensorShape> shapes;
        for (const auto& entry : shape_bytes) {
          shapes[entry.first.cast<std::string>()] = ParseProto<TensorShape>(
              entry.second.cast<py::bytes>(), "TensorShape");
        }
        std::vector<const NetDef*> pointers;
        for (const NetDef& net : nets) pointers.push_back(&net);
        InsertScheduleCheck(&init, pointers, common_world, shapes);
        return SerializeProto(init);
      },
      py::arg("init_net"), py::arg("nets"), py::arg("common_world"), py::arg("shapes"));
  // The pass's in-process sums (parallel/device_collectives.h) of each of
  // `blobs` (template names) into the first of `devices`, as a serialized
  // NetDef (external inputs: the copies it reads), for front ends that
  // reduce other blobs than gradients (Parallelize_BMUF's params): the same
  // Allreduce on CPU, NCCLReduce or the Copy + Sum tree on CUDA, chained as
  // the pass chains its own.
  m.def(
      "device_reduce_to_first",
      [](int device_type, const std::vector<int>& devices, bool use_nccl,
         const std::vector<std::string>& blobs) {
        ParallelizeOptions options;
        options.device_type = device_type;
        options.devices = devices;
        std::vector<std::string> prefixes;
        std::vector<DeviceOption> device_options;
        for (const Replica& replica : PlanReplicas(options)) {
          prefixes.push_back(replica.prefix);
          device_options.push_back(replica.device_option);
        }
        DeviceCollectives collectives(prefixes, device_options, use_nccl);
        NetDef net;
        net.set_name("device_reduce_to_first");
        for (const std::string& blob : blobs) {
          std::vector<std::string> copies;
          for (const std::string& prefix : prefixes) {
            copies.push_back(prefix + blob);
            net.add_external_input(prefix + blob);
          }
          for (OperatorDef& op : collectives.ReduceToFirst(blob, copies)) {
            *net.add_op() = std::move(op);
          }
        }
        return SerializeProto(net);
      },
      py::arg("device_type"), py::arg("devices"), py::arg("use_nccl"), py::arg("blobs"));
  m.def("device_prefix", &DevicePrefix, py::arg("device_type"), py::arg("device_id"));
  m.def("device_prefix_of", &DevicePrefixOf, py::arg("device_type"), py::arg("name"));
  // How the dag executor will run a net's ops on this machine (pools,
  // workers after the CPU cap, intra-op threads), for Parallelize to say.
  m.def(
      "dag_thread_plan",
      [](const py::bytes& bytes) {
        const NetDef net = ParseProto<NetDef>(bytes, "NetDef");
        py::dict result;
        if (!IsDagNetType(net.type())) {
          result["text"] = "net type '" + net.type() + "': ops run one after another";
          return result;
        }
        const DagThreadPlan plan = PlanDagThreads(net);
        result["devices"] = plan.devices;
        result["workers"] = plan.workers;
        result["requested_workers"] = plan.requested_workers;
        result["intra_op_threads"] = plan.intra_op_threads;
        result["runs_on_caller"] = plan.runs_on_caller;
        result["text"] = plan.ToString();
        return result;
      },
      py::arg("net"));
}

}  // namespace python
}  // namespace doppio
