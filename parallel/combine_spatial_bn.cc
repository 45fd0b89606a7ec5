#include "parallel/combine_spatial_bn.h"

#include <set>
#include <utility>

#include "core/argument.h"
#include "core/enforce.h"

namespace doppio {
namespace {

// The statistics ops follow the SpatialBN op's layout and placement.
OperatorDef StatsOp(const std::string& type, const OperatorDef& bn_op,
                    const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) {
  OperatorDef op;
  op.set_type(type);
  if (!bn_op.name().empty()) op.set_name(bn_op.name() + "_" + type);
  for (const std::string& input : inputs) op.add_input(input);
  for (const std::string& output : outputs) op.add_output(output);
  for (const Argument& arg : bn_op.arg()) {
    if (arg.name() == "order") *op.add_arg() = arg;
  }
  if (bn_op.has_device_option()) *op.mutable_device_option() = bn_op.device_option();
  return op;
}

bool IsSingleBatchTrainingBN(const OperatorDef& op) {
  if (op.type() != "SpatialBN" || op.input_size() != 5 || op.output_size() != 5) return false;
  ArgumentHelper args(op);
  return !args.GetSingle<bool>("is_test", false) && args.GetSingle<int>("num_batches", 1) == 1;
}

}  // namespace

std::map<int, std::vector<std::string>> CombineSpatialBN(std::vector<OperatorDef>* train_ops,
                                                         int num_devices) {
  DOPPIO_ENFORCE(num_devices > 1, "combine_spatial_bn: needs more than one device, got ",
                 num_devices);
  std::map<int, std::vector<std::string>> allreduce_after;
  // Saved-mean blob of each rewritten SpatialBN: its gradient op reads it.
  std::set<std::string> combined_saved_means;
  std::vector<OperatorDef> rewritten;
  rewritten.reserve(train_ops->size());
  for (const OperatorDef& op : *train_ops) {
    if (IsSingleBatchTrainingBN(op)) {
      const std::string sums = op.output(0) + "_channel_sums";
      const std::string sumsq = op.output(0) + "_channel_sumsq";
      rewritten.push_back(StatsOp("ChannelStats", op, {op.input(0)}, {sums, sumsq}));
      allreduce_after[static_cast<int>(rewritten.size()) - 1] = {sums, sumsq};
      OperatorDef bn = op;
      bn.add_input(sums);
      bn.add_input(sumsq);
      SetArgument(&bn, "num_batches", num_devices);
      rewritten.push_back(bn);
      combined_saved_means.insert(op.output(3));
      continue;
    }
    if (op.type() == "SpatialBNGradient" && op.input_size() == 5 && op.output_size() == 3 &&
        combined_saved_means.count(op.input(3))) {
      const std::string dscale = op.output(1) + "_all_devices";
      const std::string dbias = op.output(2) + "_all_devices";
      rewritten.push_back(StatsOp("ChannelBackpropStats", op,
                                  {op.input(0), op.input(3), op.input(4), op.input(2)},
                                  {dscale, dbias}));
      allreduce_after[static_cast<int>(rewritten.size()) - 1] = {dscale, dbias};
      OperatorDef grad = op;
      grad.add_input(dscale);
      grad.add_input(dbias);
      SetArgument(&grad, "num_batches", num_devices);
      rewritten.push_back(grad);
      continue;
    }
    rewritten.push_back(op);
  }
  *train_ops = std::move(rewritten);
  return allreduce_after;
}

}  // namespace doppio
