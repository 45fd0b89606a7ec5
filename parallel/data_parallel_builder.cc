#include "parallel/data_parallel_builder.h"

#include <algorithm>

#include <set>

#include "core/backward.h"
#include "core/enforce.h"

namespace doppio {
namespace {

// Blobs `init` makes that the forward ops (from index `first_forward_op`)
// read before writing them, in order of first use.
std::vector<std::string> DiscoverParams(const NetDef& init, const NetDef& net,
                                        int first_forward_op) {
  std::set<std::string> initialized;
  for (const OperatorDef& op : init.op()) initialized.insert(op.output().begin(), op.output().end());
  std::set<std::string> written;
  std::set<std::string> listed;
  std::vector<std::string> params;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    if (i >= first_forward_op) {
      for (const std::string& input : op.input()) {
        if (initialized.count(input) && !written.count(input) && listed.insert(input).second) {
          params.push_back(input);
        }
      }
    }
    written.insert(op.output().begin(), op.output().end());
  }
  return params;
}

}  // namespace

Parallelized BuildDataParallel(const ModelBuilders& builders, const ParallelizeOptions& options) {
  DOPPIO_ENFORCE(static_cast<bool>(builders.forward),
                 "BuildDataParallel: ModelBuilders::forward is required");
  DOPPIO_ENFORCE(!options.devices.empty(), "BuildDataParallel: the device list is empty");
  DataParallelTemplate model;
  model.param_init_net.set_name("param_init_net");
  model.net.set_name("data_parallel_net");
  model.param_update_net.set_name("data_parallel_net_update");

  if (builders.input) builders.input(&model.param_init_net, &model.net);
  const int first_forward_op = model.net.op_size();
  // The gradients are summed over devices, shards and micro-batches.
  const float loss_scale =
      1.0f / (static_cast<float>(options.devices.size()) *
              static_cast<float>(std::max(1, options.rendezvous.num_shards)) *
              static_cast<float>(std::max(1, options.accumulate_steps)));
  std::vector<std::string> losses =
      builders.forward(&model.param_init_net, &model.net, loss_scale);
  model.params = builders.params.empty()
                     ? DiscoverParams(model.param_init_net, model.net, first_forward_op)
                     : builders.params;
  model.computed_params = builders.computed_params;

  if (builders.param_update) {
    DOPPIO_ENFORCE(!losses.empty(), "BuildDataParallel: forward returned no losses, but "
                   "param_update needs their gradients");
    // The same backward the pass runs per device: its gradient names are the
    // ones the update ops must read.
    const BackwardResult backward = AddGradientOperators(model.net, losses);
    std::map<std::string, std::string> param_to_grad;
    for (const std::string& param : model.params) {
      auto found = backward.gradients.find(param);
      if (found == backward.gradients.end()) continue;
      DOPPIO_ENFORCE(!found->second.IsSparse(), "BuildDataParallel: parameter '", param,
                     "' has a sparse gradient (GradientSlice '", found->second.indices, "', '",
                     found->second.values, "'); the C++ builder hands param_update dense "
                     "gradients only");
      param_to_grad[param] = found->second.dense;
    }
    builders.param_update(&model.param_init_net, &model.param_update_net, param_to_grad);
    model.losses = losses;
  }
  return Parallelize(model, options);
}

void RunInitNet(Workspace* workspace, const Parallelized& model) {
  DOPPIO_ENFORCE(workspace != nullptr, "RunInitNet: no workspace");
  workspace->RunNetOnce(model.param_init_net);
  for (const std::string& input : model.net.external_input()) {
    if (!workspace->HasBlob(input)) workspace->CreateBlob(input);
  }
  workspace->CreateNet(model.net, /*overwrite=*/true);
}

void RunNet(Workspace* workspace, const Parallelized& model, int iterations) {
  DOPPIO_ENFORCE(workspace != nullptr, "RunNet: no workspace");
  DOPPIO_ENFORCE(iterations >= 0, "RunNet: iterations must be >= 0, got ", iterations);
  DOPPIO_ENFORCE(workspace->GetNet(model.net.name()) != nullptr, "RunNet: net '",
                 model.net.name(), "' was not created; call RunInitNet first");
  for (int i = 0; i < iterations; ++i) workspace->RunNet(model.net.name());
}

}  // namespace doppio
