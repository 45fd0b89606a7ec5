#include "core/net.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/event_schedule.h"
#include "core/limits.h"
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

// What the dependency analysis remembers about one blob name.
struct BlobAccess {
  int last_writer = -1;
  // Ops that read the blob since last_writer wrote it.
  std::vector<int> readers;
};

}  // namespace

std::vector<std::vector<int>> OpDependencies(const NetDef& net) {
  std::vector<std::vector<int>> parents(net.op_size());
  std::unordered_map<std::string, BlobAccess> blobs;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    std::vector<int>& deps = parents[i];
    auto after_writer = [&](const std::string& name) {
      auto it = blobs.find(name);
      if (it != blobs.end() && it->second.last_writer >= 0) {
        deps.push_back(it->second.last_writer);
      }
    };
    for (const std::string& name : op.input()) after_writer(name);
    for (const std::string& name : op.control_input()) after_writer(name);
    for (const std::string& name : op.output()) {
      after_writer(name);
      auto it = blobs.find(name);
      if (it == blobs.end()) continue;
      for (int reader : it->second.readers) {
        if (reader != i) deps.push_back(reader);
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

    // Record reads before writes: an in-place op's write clears its own read.
    auto note_reader = [&](const std::string& name) {
      std::vector<int>& readers = blobs[name].readers;
      if (readers.empty() || readers.back() != i) readers.push_back(i);
    };
    for (const std::string& name : op.input()) note_reader(name);
    for (const std::string& name : op.control_input()) note_reader(name);
    for (const std::string& name : op.output()) {
      BlobAccess& access = blobs[name];
      access.last_writer = i;
      access.readers.clear();
    }
  }
  return parents;
}

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

NetBase::~NetBase() = default;

std::unique_ptr<StreamScheduler> NetBase::MakeStreamScheduler(
    const std::vector<std::unique_ptr<OperatorBase>>& operators,
    int streams_per_device) const {
  std::vector<StreamPlacement> placements;
  placements.reserve(operators.size());
  for (const auto& op : operators) placements.push_back(op->stream_placement());
  if (!StreamScheduler::AnyOnStreams(placements)) return nullptr;
  return std::make_unique<StreamScheduler>(OpDependencies(def_), std::move(placements),
                                           streams_per_device,
                                           [this](int index) { return DescribeOp(index); });
}

void NetBase::RunOpAt(int index, OperatorBase& op, StreamScheduler* streams,
                      int stream_id) const {
  try {
    if (streams == nullptr && !observer_) {
      op.Run();  // the common case, as cheap as a plain loop
    } else {
      RunObservedOrOnStream(index, op, streams, stream_id);
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

void NetBase::RunObservedOrOnStream(int index, OperatorBase& op, StreamScheduler* streams,
                                    int stream_id) const {
  if (streams) streams->BeforeOp(index, stream_id);
  // Observers time the call: for an async op, the queuing of its work.
  OpEvent event;
  if (observer_) event.start = std::chrono::steady_clock::now();
  if (streams && streams->placement(index).on_streams()) {
    op.RunOnStream(stream_id);
  } else {
    op.Run();
  }
  if (observer_) {
    event.op_index = index;
    event.op = &op;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - event.start;
    event.seconds = elapsed.count();
    std::lock_guard<std::mutex> lock(observer_mutex_);
    observer_(event);
  }
  if (streams) streams->AfterOp(index, stream_id);
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
  EnforceNetOpsLimit(def.op_size(), "net '" + def.name() + "'");
  const std::string type = def.type().empty() ? "simple" : def.type();
  const NetCreator* creator = NetRegistry::Find(type);
  if (creator == nullptr) {
    DOPPIO_THROW("net '", def.name(), "' asks for executor type '", type,
                 "', which is not one of ", NetRegistry::Types());
  }
  return (*creator)(def, workspace);
}

}  // namespace doppio
