// A C++ front end to the Parallelize pass, the counterpart of Python's
// data_parallel_model.Parallelize: the model is described by builder
// callbacks that write plain NetDefs, called once on a template without
// device prefixes; the pass then replicates it (parallel/data_parallel.h).
//
//   ModelBuilders builders;
//   builders.forward = [](NetDef* init, NetDef* net, float loss_scale) {
//     ... FC / Relu / SoftmaxWithLoss into *net, their params' fills into *init,
//     ... a Scale of the loss by loss_scale;
//     return std::vector<std::string>{"scaled_loss"};
//   };
//   builders.param_update = [](NetDef* init, NetDef* update,
//                              const std::map<std::string, std::string>& grads) {
//     ... one update op per entry of grads (param -> gradient) ...
//   };
//   Parallelized model = BuildDataParallel(builders, options);
//   Workspace ws;
//   RunInitNet(&ws, model);           // init, broadcast, create the train net
//   ... feed cpu_<d>/data and cpu_<d>/label ...
//   RunNet(&ws, model);               // one synchronous step on every device
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "parallel/data_parallel.h"
#include "proto/doppio.pb.h"

namespace doppio {

struct ModelBuilders {
  // Optional: ops producing the data (readers) go into `net`, their one-time
  // setup into `init`. Leave empty when the caller feeds cpu_<d>/<blob>.
  std::function<void(NetDef* init, NetDef* net)> input;
  // Required: the forward pass into `net`, its params' initializers into
  // `init`. Returns the loss blobs, already multiplied by loss_scale
  // (1 / (devices x shards x accumulate_steps), so the summed gradients are
  // the global batch mean's).
  std::function<std::vector<std::string>(NetDef* init, NetDef* net, float loss_scale)> forward;
  // Optional (none: a forward-only model): update ops into `update`, their
  // state (learning rate, momentum) into `init`, given each trained param's
  // dense gradient by its template name.
  std::function<void(NetDef* init, NetDef* update,
                     const std::map<std::string, std::string>& param_to_grad)>
      param_update;
  // The trained params. Empty: every blob `init` makes that a forward op
  // reads, in order of first use.
  std::vector<std::string> params;
  // Blobs the net updates itself (batch-norm running statistics).
  std::vector<std::string> computed_params;
};

// Calls the builders once and runs the pass. Throws doppio::Error when
// forward is missing or returns no losses while an update is built, and for
// a param whose gradient is sparse (the update callback sees only dense
// gradients; the Python front end handles GradientSlices), besides the
// pass's own errors.
Parallelized BuildDataParallel(const ModelBuilders& builders, const ParallelizeOptions& options);

// Runs the init net once (params made and broadcast from device 0) and
// creates the train net. Its inputs no op makes (each device's data) are
// created empty, to be fed before the first RunNet.
void RunInitNet(Workspace* workspace, const Parallelized& model);

// Runs the train net created by RunInitNet `iterations` times.
void RunNet(Workspace* workspace, const Parallelized& model, int iterations = 1);

}  // namespace doppio
