#include "parallel/shared_model.h"

#include <set>

#include "core/enforce.h"

namespace doppio {
namespace {

void AddBlobsOf(const OperatorDef& op, std::set<std::string>* blobs) {
  blobs->insert(op.input().begin(), op.input().end());
  blobs->insert(op.output().begin(), op.output().end());
  blobs->insert(op.control_input().begin(), op.control_input().end());
}

}  // namespace

void CheckSharedModelTemplate(const DataParallelTemplate& model,
                              const std::vector<OperatorDef>& train_ops) {
  const std::set<std::string> params(model.params.begin(), model.params.end());
  for (const std::string& computed : model.computed_params) {
    DOPPIO_ENFORCE(!params.count(computed), "Parallelize(shared_model): '", computed,
                   "' is listed both as a param (one shared copy) and as a computed param "
                   "(one copy per device)");
  }
  for (const OperatorDef& op : train_ops) {
    for (const std::string& output : op.output()) {
      DOPPIO_ENFORCE(!params.count(output), "Parallelize(shared_model): op ", op.type(), " '",
                     op.name(), "' of net '", model.net.name(), "' or its backward writes param '",
                     output, "'; with a shared model every device reads the master's copy, "
                     "so only the init net and the update ops may write params");
    }
  }
}

std::vector<bool> MasterOnlyInitOps(const DataParallelTemplate& model,
                                    const std::vector<OperatorDef>& train_ops) {
  const std::set<std::string> params(model.params.begin(), model.params.end());
  std::set<std::string> train_blobs;
  for (const OperatorDef& op : train_ops) AddBlobsOf(op, &train_blobs);
  std::set<std::string> update_blobs;
  for (const OperatorDef& op : model.param_update_net.op()) AddBlobsOf(op, &update_blobs);
  auto update_only = [&](const std::string& blob) {
    return update_blobs.count(blob) && !train_blobs.count(blob);
  };

  std::vector<bool> master_only;
  for (const OperatorDef& op : model.param_init_net.op()) {
    bool writes_param = false;
    bool all_update_only = op.output_size() > 0;
    for (const std::string& output : op.output()) {
      writes_param = writes_param || params.count(output) > 0;
      all_update_only = all_update_only && update_only(output);
    }
    if (writes_param) {
      for (const std::string& output : op.output()) {
        DOPPIO_ENFORCE(params.count(output) || update_only(output),
                       "Parallelize(shared_model): op ", op.type(), " '", op.name(),
                       "' of param_init_net '", model.param_init_net.name(),
                       "' writes a param and '", output,
                       "', which every device needs; only the master's params are "
                       "initialized, so make '", output, "' with a separate op");
      }
    }
    master_only.push_back(writes_param || all_update_only);
  }
  return master_only;
}

}  // namespace doppio
