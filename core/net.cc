#include "core/net.h"

#include <map>
#include <set>

#include "core/registry.h"
#include "core/workspace.h"

namespace doppio {
namespace {

std::map<std::string, NetCreator>& NetCreators() {
  static auto* creators = new std::map<std::string, NetCreator>();
  return *creators;
}

std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<std::string>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

NetBase::NetBase(const NetDef& def, Workspace* /*workspace*/) : def_(def) {
  for (int i = 0; i < def_.op_size(); ++i) {
    *def_.mutable_op(i) = EffectiveOpDef(def, def.op(i));
  }
  if (def_.external_input_size() == 0) return;
  // Declared inputs let us catch a miswired net before anything runs.
  std::set<std::string> known(def_.external_input().begin(),
                              def_.external_input().end());
  for (int i = 0; i < def_.op_size(); ++i) {
    const OperatorDef& op = def_.op(i);
    for (const std::string& input : op.input()) {
      if (!known.count(input)) {
        DOPPIO_THROW("input '", input, "' of ", DescribeOp(i),
                     " is neither an external input of the net nor produced by "
                     "an earlier op");
      }
    }
    known.insert(op.output().begin(), op.output().end());
  }
}

OperatorDef NetBase::EffectiveOpDef(const NetDef& net, const OperatorDef& op) {
  OperatorDef effective = op;
  if (net.has_device_option() && !op.has_device_option()) {
    *effective.mutable_device_option() = net.device_option();
  }
  return effective;
}

std::string NetBase::DescribeOp(int index) const {
  const OperatorDef& op = def_.op(index);
  return MakeString("op #", index, " ", op.type(),
                    op.name().empty() ? "" : " '" + op.name() + "'", " (inputs ",
                    Names(op.input()), ", outputs ", Names(op.output()), ") in net '",
                    def_.name(), "'");
}

std::unique_ptr<OperatorBase> NetBase::CreateOpAt(int index,
                                                  Workspace* workspace) const {
  try {
    return CreateOperator(def_.op(index), workspace);
  } catch (Error& error) {
    error.AppendContext("while creating " + DescribeOp(index));
    throw;
  }
}

void NetBase::SetOpObserver(OpObserver observer) {
  if (!observer) {
    observer_ = nullptr;
    return;
  }
  observer_ = [observer = std::move(observer)](const OpEvent& event) {
    observer(event.op_index, *event.op, event.seconds);
  };
}

void NetBase::RunOpAt(int index, OperatorBase& op) const {
  try {
    if (observer_) {
      OpEvent event;
      event.op_index = index;
      event.op = &op;
      event.start = std::chrono::steady_clock::now();
      op.Run();
      const std::chrono::duration<double> elapsed =
          std::chrono::steady_clock::now() - event.start;
      event.seconds = elapsed.count();
      std::lock_guard<std::mutex> lock(observer_mutex_);
      observer_(event);
    } else {
      op.Run();
    }
  } catch (Error& error) {
    error.AppendContext("while running " + DescribeOp(index));
    throw;
  } catch (const std::exception& error) {
    // Library exceptions (bad_alloc, out_of_range) get the same context.
    Error wrapped(MakeString(error.what()));
    wrapped.AppendContext("while running " + DescribeOp(index));
    throw wrapped;
  }
}

void NetRegistry::Register(const std::string& type, NetCreator creator) {
  NetCreators()[type] = std::move(creator);
}

std::vector<std::string> NetRegistry::Types() {
  std::vector<std::string> types;
  for (const auto& entry : NetCreators()) types.push_back(entry.first);
  return types;
}

const NetCreator* NetRegistry::Find(const std::string& type) {
  auto it = NetCreators().find(type);
  return it == NetCreators().end() ? nullptr : &it->second;
}

std::unique_ptr<NetBase> CreateNet(const NetDef& def, Workspace* workspace) {
  const std::string type = def.type().empty() ? "simple" : def.type();
  const NetCreator* creator = NetRegistry::Find(type);
  if (creator == nullptr) {
    DOPPIO_THROW("net '", def.name(), "' asks for executor type '", type,
                 "', which is not one of ", NetRegistry::Types());
  }
  return (*creator)(def, workspace);
}

}  // namespace doppio
