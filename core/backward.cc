#include "core/backward.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/enforce.h"

namespace doppio {
namespace {

// Which gradient op output (by index into the result's op list) produced a
// gradient, or -1 when the gradient was handed through without an op (e.g.
// Sum or Gather passing their output gradient on).
struct OutputRef {
  int op = -1;
  int output = 0;
  bool has_op() const { return op >= 0; }
};

// One contribution to the gradient of one blob version. Sparse contributions
// may have their indices and values made by different ops.
struct Generator {
  GradientWrapper gradient;
  OutputRef dense_or_indices;
  OutputRef values;
  bool sparse() const { return gradient.IsSparse(); }
};

struct VersionedGradient {
  GradientWrapper gradient;
  int version = 0;
};

struct OpVersions {
  std::map<std::string, int> inputs;
  std::map<std::string, int> outputs;
};

std::string OpLabel(const OperatorDef& op, int index) {
  std::string label = MakeString("op #", index, " (", op.type());
  if (!op.name().empty()) label += MakeString(" '", op.name(), "'");
  return label + ")";
}

bool SameGradient(const GradientWrapper& a, const std::string& name) {
  return a.dense == name || (a.IsSparse() && (a.indices == name || a.values == name));
}

int IndexInGradients(const std::vector<GradientWrapper>& gradients,
                     const std::string& name) {
  for (size_t i = 0; i < gradients.size(); ++i) {
    if (!gradients[i].IsEmpty() && SameGradient(gradients[i], name)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string RemoveSuffix(const std::string& s, const std::string& suffix) {
  if (s.size() >= suffix.size() &&
      s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return s.substr(0, s.size() - suffix.size());
  }
  return s;
}

class BackwardBuilder {
 public:
  explicit BackwardBuilder(const NetDef& net) : net_(net) {
    for (int i = 0; i < net.op_size(); ++i) Play(i);
  }

  BackwardResult Build(const std::vector<std::string>& losses,
                       const std::map<std::string, GradientWrapper>& loss_gradients) {
    DOPPIO_ENFORCE(!losses.empty(), "AddGradientOperators on net '", net_.name(),
                   "': no loss blobs given");
    for (const auto& entry : loss_gradients) {
      DOPPIO_ENFORCE(std::find(losses.begin(), losses.end(), entry.first) != losses.end(),
                     "AddGradientOperators on net '", net_.name(),
                     "': an initial gradient is given for '", entry.first,
                     "', which is not one of the losses");
    }
    std::set<std::string> seen;
    for (const std::string& loss : losses) {
      if (!seen.insert(loss).second) continue;
      AddLossGradient(loss, loss_gradients);
    }
    for (int index = net_.op_size() - 1; index >= 0; --index) {
      GenerateGradientsForOp(index);
      AccumulateGradients(index);
    }
    for (const auto& entry : input_to_grad_) {
      if (!entry.second.gradient.IsEmpty()) {
        result_.gradients[entry.first] = entry.second.gradient;
      }
    }
    return std::move(result_);
  }

 private:
  // Forward "play": versions every blob as the net reads and writes it.
  void Play(int index) {
    const OperatorDef& op = net_.op(index);
    OpVersions versions;
    for (const std::string& input : op.input()) {
      const int version = frontier_.emplace(input, 0).first->second;
      versions.inputs[input] = version;
      usages_[input][version].push_back(index);
    }
    for (const std::string& output : op.output()) {
      auto it = frontier_.find(output);
      const int version = it == frontier_.end() ? 0 : it->second + 1;
      frontier_[output] = version;
      versions.outputs[output] = version;
    }
    versions_.push_back(std::move(versions));
  }

  void AddLossGradient(const std::string& loss,
                       const std::map<std::string, GradientWrapper>& loss_gradients) {
    auto it = frontier_.find(loss);
    DOPPIO_ENFORCE(it != frontier_.end(), "AddGradientOperators on net '", net_.name(),
                   "': loss blob '", loss, "' is neither read nor written by the net");
    const int version = it->second;
    // The loss counts as one more reader, so a loss that other ops also read
    // gets its gradients summed.
    usages_[loss][version].push_back(net_.op_size());
    Generator generator;
    auto given = loss_gradients.find(loss);
    if (given != loss_gradients.end() && !given->second.IsEmpty()) {
      generator.gradient = given->second;
    } else {
      OperatorDef fill;
      fill.set_type("ConstantFill");
      fill.set_name("");
      // On the loss's own device: a model-parallel net would otherwise copy
      // the loss to the default device and its gradient back.
      for (int i = net_.op_size() - 1; i >= 0; --i) {
        const OperatorDef& writer = net_.op(i);
        if (std::find(writer.output().begin(), writer.output().end(), loss) !=
            writer.output().end()) {
          if (writer.has_device_option()) *fill.mutable_device_option() = writer.device_option();
          break;
        }
      }
      fill.add_input(loss);
      // Caffe2's name for a gradient the backward pass makes up.
      fill.add_output(loss + "_autogen_grad");
      Argument* value = fill.add_arg();
      value->set_name("value");
      value->set_f(1.0f);
      generator.gradient.dense = fill.output(0);
      generator.dense_or_indices = OutputRef{static_cast<int>(result_.ops.size()), 0};
      result_.ops.push_back(fill);
    }
    input_to_grad_[loss] = VersionedGradient{generator.gradient, version};
    generators_[loss][version].push_back(generator);
  }

  void GenerateGradientsForOp(int index) {
    const OperatorDef& op = net_.op(index);
    const OpVersions& versions = versions_[index];
    std::vector<GradientWrapper> output_gradients;
    std::string first_output_with_gradient;
    for (const std::string& output : op.output()) {
      auto it = input_to_grad_.find(output);
      // Only the gradient of the version this op wrote applies to it; an
      // older version's writer gets no gradient from a later overwrite.
      if (it != input_to_grad_.end() && it->second.version == versions.outputs.at(output)) {
        output_gradients.push_back(it->second.gradient);
        if (first_output_with_gradient.empty() && !it->second.gradient.IsEmpty()) {
          first_output_with_gradient = output;
        }
      } else {
        output_gradients.emplace_back();
      }
    }
    const GradientRegistry::Entry* entry = GradientRegistry::Find(op.type());
    // An op without outputs gets no gradient to pass on, but a maker may
    // still give its inputs one (ZeroGradient's zeros).
    const bool outputless_maker =
        op.output_size() == 0 && entry != nullptr && entry->kind == GradientRegistry::Kind::kMaker;
    // As Caffe2: every op with an output gradient is differentiated, also
    // below a StopGradient or a fill (a program may fetch those gradients).
    if (first_output_with_gradient.empty() && !outputless_maker) return;
    DOPPIO_ENFORCE(entry == nullptr ||
                       entry->kind != GradientRegistry::Kind::kShouldNotDoGradient,
                   "AddGradientOperators on net '", net_.name(), "': ", OpLabel(op, index),
                   " lies on the path to a loss (its output '", first_output_with_gradient,
                   "' has a gradient) but must not be differentiated: ",
                   entry ? entry->reason : "");
    GradientOpsMeta meta;
    try {
      meta = GetGradientForOp(op, output_gradients);
      DOPPIO_ENFORCE_EQ(static_cast<int>(meta.input_gradients.size()), op.input_size(),
                        "the gradient maker returned the wrong number of input gradients");
    } catch (Error& error) {
      error.AppendContext(MakeString("while making the gradient of ", OpLabel(op, index),
                                     " in net '", net_.name(), "' for output '",
                                     first_output_with_gradient, "'"));
      throw;
    }
    const int first_op = static_cast<int>(result_.ops.size());
    for (OperatorDef& grad_op : meta.ops) result_.ops.push_back(std::move(grad_op));
    RecordGenerators(index, first_op, output_gradients, meta.input_gradients);

    std::set<std::string> got_gradient;
    for (int i = 0; i < op.input_size(); ++i) {
      const std::string& name = op.input(i);
      const GradientWrapper& gradient = meta.input_gradients[i];
      if (!gradient.IsEmpty()) {
        got_gradient.insert(name);
      } else if (got_gradient.count(name)) {
        continue;  // another slot of the same blob got its gradient
      }
      // An empty gradient must not hide another reader's gradient of the
      // same version, unless this op rewrote the blob (a new version).
      if (!gradient.IsEmpty() || !input_to_grad_.count(name) ||
          versions.outputs.count(name) > 0) {
        input_to_grad_[name] = VersionedGradient{gradient, versions.inputs.at(name)};
      }
    }
  }

  // Checks that every blob the gradient ops read holds the right value when
  // they run (after the whole forward net), and records who produced each
  // input gradient.
  void RecordGenerators(int index, int first_op,
                        const std::vector<GradientWrapper>& output_gradients,
                        const std::vector<GradientWrapper>& input_gradients) {
    const OperatorDef& op = net_.op(index);
    const OpVersions& versions = versions_[index];
    std::set<std::string> local_blobs;
    // name -> version -> partial sparse generators (indices and values may
    // come from different ops; merged below).
    std::map<std::string, std::map<int, std::vector<Generator>>> sparse_parts;
    for (int k = first_op; k < static_cast<int>(result_.ops.size()); ++k) {
      const OperatorDef& grad_op = result_.ops[k];
      for (const std::string& blob : grad_op.input()) {
        CheckGradientOpInput(index, grad_op, blob, output_gradients, local_blobs);
      }
      for (int o = 0; o < grad_op.output_size(); ++o) {
        const std::string& blob = grad_op.output(o);
        local_blobs.insert(blob);
        const int input_index = IndexInGradients(input_gradients, blob);
        if (input_index < 0) continue;
        const std::string& input_name = op.input(input_index);
        const int version = versions.inputs.at(input_name);
        Generator generator;
        generator.gradient = input_gradients[input_index];
        if (generator.sparse()) {
          if (generator.gradient.indices == blob) {
            generator.dense_or_indices = OutputRef{k, o};
          } else {
            generator.values = OutputRef{k, o};
          }
          sparse_parts[input_name][version].push_back(generator);
        } else {
          generator.dense_or_indices = OutputRef{k, o};
          generators_[input_name][version].push_back(generator);
        }
      }
    }
    for (auto& by_name : sparse_parts) {
      for (auto& by_version : by_name.second) {
        std::vector<Generator>& parts = by_version.second;
        DOPPIO_ENFORCE(parts.size() <= 2, "AddGradientOperators: ", OpLabel(op, index),
                       ": its gradient ops write the sparse gradient of '", by_name.first,
                       "' more than once");
        Generator merged = parts[0];
        if (parts.size() == 2) {
          if (!merged.dense_or_indices.has_op()) merged.dense_or_indices = parts[1].dense_or_indices;
          if (!merged.values.has_op()) merged.values = parts[1].values;
        }
        generators_[by_name.first][by_version.first].push_back(merged);
      }
    }
    // Gradients handed through without an op still count as contributions.
    for (int i = 0; i < op.input_size(); ++i) {
      const GradientWrapper& gradient = input_gradients[i];
      if (gradient.IsEmpty()) continue;
      const bool made_here =
          gradient.IsSparse()
              ? (local_blobs.count(gradient.indices) || local_blobs.count(gradient.values))
              : local_blobs.count(gradient.dense) > 0;
      if (made_here) continue;
      Generator generator;
      generator.gradient = gradient;
      generators_[op.input(i)][versions.inputs.at(op.input(i))].push_back(generator);
    }
  }

  void CheckGradientOpInput(int index, const OperatorDef& grad_op, const std::string& blob,
                            const std::vector<GradientWrapper>& output_gradients,
                            const std::set<std::string>& local_blobs) {
    const OperatorDef& op = net_.op(index);
    const OpVersions& versions = versions_[index];
    if (IndexInGradients(output_gradients, blob) >= 0) return;
    auto check_version = [&](int wanted, const char* role) {
      const int current = frontier_.at(blob);
      DOPPIO_ENFORCE(current == wanted, "AddGradientOperators on net '", net_.name(),
                     "': gradient op ", grad_op.type(), " of ", OpLabel(op, index),
                     " needs its ", role, " '", blob, "' as that op saw it (version ",
                     wanted, "), but a later op overwrote it (version ", current,
                     "); an in-place op destroys a value this gradient needs");
    };
    auto out = versions.outputs.find(blob);
    if (out != versions.outputs.end()) return check_version(out->second, "output");
    auto in = versions.inputs.find(blob);
    if (in != versions.inputs.end()) return check_version(in->second, "input");
    DOPPIO_ENFORCE(local_blobs.count(blob) > 0, "AddGradientOperators on net '",
                   net_.name(), "': gradient op ", grad_op.type(), " of ",
                   OpLabel(op, index), " reads blob '", blob,
                   "', which is neither an input, output or output gradient of that op "
                   "nor made by its earlier gradient ops");
  }

  // Called once the backward walk reaches the first reader of each input
  // version: every other reader has contributed its gradient by then.
  void AccumulateGradients(int index) {
    const OperatorDef& op = net_.op(index);
    const OpVersions& versions = versions_[index];
    for (const auto& input : versions.inputs) {
      const std::string& name = input.first;
      const int version = input.second;
      const std::vector<int>& usage = usages_[name][version];
      if (usage.size() <= 1 || usage[0] != index) continue;
      std::vector<Generator>& generators = generators_[name][version];
      if (generators.size() < 2) continue;
      for (const Generator& generator : generators) {
        DOPPIO_ENFORCE(generator.sparse() == generators[0].sparse(),
                       "AddGradientOperators on net '", net_.name(), "': blob '", name,
                       "' (read by ", OpLabel(op, index),
                       " and others) gets both dense and sparse gradients; summing a "
                       "mix of them is not supported");
      }
      GradientWrapper total = generators[0].sparse() ? MakeSparseSum(name, generators)
                                                     : MakeDenseSum(name, generators);
      input_to_grad_[name] = VersionedGradient{total, version};
    }
  }

  std::string SumOutputName(const std::string& name, const std::vector<Generator>& generators) {
    for (const Generator& generator : generators) {
      if (!generator.sparse() && generator.dense_or_indices.has_op()) {
        return OutputOf(generator.dense_or_indices);
      }
      if (generator.sparse() && generator.dense_or_indices.has_op()) {
        return RemoveSuffix(OutputOf(generator.dense_or_indices), "_indices");
      }
      if (generator.sparse() && generator.values.has_op()) {
        return RemoveSuffix(OutputOf(generator.values), "_values");
      }
    }
    return GradientName(name);
  }

  std::string& OutputOf(const OutputRef& ref) {
    return *result_.ops[ref.op].mutable_output(ref.output);
  }

  std::string Rename(const OutputRef& ref, int* count) {
    std::string& output = OutputOf(ref);
    output = MakeString("_", output, "_autosplit_", (*count)++);
    return output;
  }

  void CheckNoConflict(const std::string& base, const std::string& handed_through,
                       const std::string& name) {
    DOPPIO_ENFORCE(base != handed_through, "AddGradientOperators on net '", net_.name(),
                   "': the gradient '", handed_through, "' handed through for blob '", name,
                   "' has the name its summed gradient needs");
  }

  GradientWrapper MakeDenseSum(const std::string& name, std::vector<Generator>& generators) {
    const std::string base = SumOutputName(name, generators);
    // A gradient handed through under the sum's name (a loss gradient given
    // for a blob other ops also read: RecurrentNetwork's step outputs) must
    // survive until the sum, which then accumulates into it in place; every
    // gradient op then writes a blob of its own.
    const bool base_handed_through =
        std::any_of(generators.begin(), generators.end(), [&](const Generator& g) {
          return !g.dense_or_indices.has_op() && g.gradient.dense == base;
        });
    std::vector<std::string> inputs;
    int count = 0;
    bool first_op_output = !base_handed_through;
    for (const Generator& generator : generators) {
      if (generator.dense_or_indices.has_op()) {
        if (first_op_output) {
          first_op_output = false;
          inputs.push_back(OutputOf(generator.dense_or_indices));
        } else {
          inputs.push_back(Rename(generator.dense_or_indices, &count));
        }
      } else {
        inputs.push_back(generator.gradient.dense);
      }
    }
    // Sum may only work in place on its first input.
    auto it = std::find(inputs.begin(), inputs.end(), base);
    if (it != inputs.end()) std::iter_swap(inputs.begin(), it);
    OperatorDef sum;
    sum.set_type("Sum");
    for (const std::string& input : inputs) sum.add_input(input);
    sum.add_output(base);
    AppendAccumulationOp(std::move(sum), generators);
    return GradientWrapper{base, "", ""};
  }

  GradientWrapper MakeSparseSum(const std::string& name, std::vector<Generator>& generators) {
    const std::string base = SumOutputName(name, generators);
    std::vector<std::string> indices, values;
    int count_indices = 0, count_values = 0;
    for (const Generator& generator : generators) {
      if (generator.dense_or_indices.has_op()) {
        indices.push_back(Rename(generator.dense_or_indices, &count_indices));
      } else {
        CheckNoConflict(base, generator.gradient.indices, name);
        indices.push_back(generator.gradient.indices);
      }
      if (generator.values.has_op()) {
        values.push_back(Rename(generator.values, &count_values));
      } else {
        CheckNoConflict(base, generator.gradient.values, name);
        values.push_back(generator.gradient.values);
      }
    }
    // No deduplication of indices here: the sparse optimizers handle
    // repeated rows, as in Caffe2.
    auto concat = [&](const std::vector<std::string>& inputs, const std::string& output) {
      OperatorDef op;
      op.set_type("Concat");
      for (const std::string& input : inputs) op.add_input(input);
      op.add_output(output);
      op.add_output(output + "_split");
      Argument* axis = op.add_arg();
      axis->set_name("axis");
      axis->set_i(0);
      AppendAccumulationOp(std::move(op), generators);
    };
    concat(indices, base + "_indices_concat");
    concat(values, base + "_values_concat");
    return GradientWrapper{"", base + "_indices_concat", base + "_values_concat"};
  }

  // Accumulation runs where the contributions were made.
  void AppendAccumulationOp(OperatorDef op, const std::vector<Generator>& generators) {
    for (const Generator& generator : generators) {
      const OutputRef& ref =
          generator.dense_or_indices.has_op() ? generator.dense_or_indices : generator.values;
      if (!ref.has_op()) continue;
      const OperatorDef& maker = result_.ops[ref.op];
      if (maker.has_device_option()) *op.mutable_device_option() = maker.device_option();
      break;
    }
    // Caffe2 built these in Python, where every op has a (possibly empty)
    // name: protos compare equal to theirs.
    op.set_name("");
    result_.ops.push_back(std::move(op));
  }

  const NetDef& net_;
  std::map<std::string, int> frontier_;  // each blob's final version
  std::map<std::string, std::map<int, std::vector<int>>> usages_;
  std::vector<OpVersions> versions_;
  std::map<std::string, std::map<int, std::vector<Generator>>> generators_;
  std::map<std::string, VersionedGradient> input_to_grad_;
  BackwardResult result_;
};

}  // namespace

BackwardResult AddGradientOperators(const NetDef& net,
                                    const std::vector<std::string>& losses) {
  return AddGradientOperators(net, losses, {});
}

BackwardResult AddGradientOperators(
    const NetDef& net, const std::vector<std::string>& losses,
    const std::map<std::string, GradientWrapper>& loss_gradients) {
  return BackwardBuilder(net).Build(losses, loss_gradients);
}

}  // namespace doppio
