// ParallelizeOptions::shared_model: the CPU replicas share ONE copy of the
// parameters, the master's (the first device's, "cpu_<devices[0]>/<param>"),
// as Caffe2's data_parallel_model does with shared_model=True
// (_RemapParameterBlobsForSharedModel, _PruneParametersForSharing).
//
// Every device's forward and backward ops read the master's params; each
// device still computes its own gradients, which are allreduced as usual;
// the update ops run once, for the master; the init net makes the params
// (and the optimizer state only the updates read) for the master alone.
// Computed params (batch-norm running statistics) stay per device.
#pragma once

#include <string>
#include <vector>

#include "parallel/data_parallel.h"

namespace doppio {

// Refuses a template the shared model cannot place: a forward or backward
// op writing a param (every device would write the one shared copy), or a
// param that is also a computed param. `train_ops` is forward + backward.
void CheckSharedModelTemplate(const DataParallelTemplate& model,
                              const std::vector<OperatorDef>& train_ops);

// One flag per op of model.param_init_net: true when only the master runs
// it. Those are the ops writing params and the ops writing only blobs that
// the update ops use and the forward/backward ops never touch (optimizer
// state such as momentum: only the master's params are updated). Throws
// when an op writes a param together with a blob the devices each need.
std::vector<bool> MasterOnlyInitOps(const DataParallelTemplate& model,
                                    const std::vector<OperatorDef>& train_ops);

}  // namespace doppio
