#include "parallel/gloo/gloo_common.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include <gloo/barrier_all_to_all.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include "core/workspace.h"
#include "parallel/gloo/flight_recorder.h"
#include "parallel/gloo/lost_peers.h"

namespace doppio {

GlooStoreHandler::GlooStoreHandler(std::unique_ptr<gloo::rendezvous::Store> backend,
                                   const std::string& prefix, std::string description)
    : backend_(std::move(backend)), description_(std::move(description)) {
  if (!prefix.empty()) {
    prefixed_ = std::make_unique<gloo::rendezvous::PrefixStore>(prefix, *backend_);
    description_ += " (prefix '" + prefix + "')";
  }
}

gloo::rendezvous::Store& GlooStoreHandler::store() const {
  if (prefixed_) return *prefixed_;
  return *backend_;
}

GlooFailureHandler::GlooFailureHandler(OperatorBase* op, int status_output) : op_(op) {
  if (status_output >= 0) {
    status_ = op->OutputBlob(status_output);
  } else {
    // Caffe2 names the status blob with an argument instead of an output.
    const std::string name = op->GetSingleArgument<std::string>("status_blob", "");
    if (!name.empty()) status_ = op->workspace()->CreateBlob(name);
  }
}

void GlooFailureHandler::SetStatus(int32_t value) {
  Tensor* tensor = status_->GetMutableTensor();
  tensor->Resize({});
  *tensor->mutable_data<int32_t>() = value;
}

bool GlooFailureHandler::Run(const std::string& what, const std::string& where,
                             const std::function<void()>& body) {
  return RunNaming(what, where, nullptr, body);
}

bool GlooFailureHandler::Run(const std::string& what, const CommonWorld& world,
                             const std::function<void()>& body) {
  return RunNaming(what, DescribeRank(*world), world.get(), body);
}

namespace {

// The bytes of the tensors a collective's op moves (its inputs after the
// world), for the flight recorder.
int64_t OperandBytes(const OperatorBase& op) {
  int64_t bytes = 0;
  for (int i = 1; i < op.InputSize(); ++i) {
    const Blob& blob = op.InputBlob(i);
    if (blob.IsTensor()) bytes += static_cast<int64_t>(blob.GetTensor().nbytes());
  }
  return bytes;
}

std::string DescribeOpForRecord(const OperatorBase& op) {
  const OperatorDef& def = op.def();
  return def.name().empty() ? def.type() : def.type() + " '" + def.name() + "'";
}

}  // namespace

bool GlooFailureHandler::RunNaming(const std::string& what, const std::string& where,
                                   gloo::Context* world, const std::function<void()>& body) {
  FlightRecorder& recorder = FlightRecorder::Get();
  const uint64_t record =
      recorder.Begin(DescribeOpForRecord(*op_), what, OperandBytes(*op_),
                     world ? world->rank : -1, world ? world->size : 0);
  std::string message;
  // Only I/O failures come from peers; an enforce is this rank's own check.
  auto lost_peers = [&](const std::exception& error) -> std::string {
    if (world == nullptr) return "";
    const std::string peers = DescribeLostPeers(*world, error);
    return peers.empty() ? "" : peers + ": ";
  };
  try {
    body();
    recorder.End(record, "");
    if (status_ != nullptr) SetStatus(kGlooStatusOk);
    return true;
  } catch (const gloo::IoException& error) {
    message = lost_peers(error) +
              "I/O error (a peer died, closed its connection or timed out): " + error.what();
  } catch (const gloo::EnforceNotMet& error) {
    message = std::string("Gloo check failed: ") + error.what();
  } catch (const gloo::Exception& error) {
    message = lost_peers(error) + "Gloo error: " + error.what();
  }
  recorder.End(record, message);
  std::string problem;
  const std::string dumped = recorder.Dump("Gloo " + what + " failed on " + where, &problem);
  message += dumped.empty()
                 ? " (flight recorder: " + problem + ")"
                 : " (flight recorder: this rank's last collectives are in " + dumped + ")";
  if (status_ != nullptr) {
    SetStatus(kGlooStatusFailed);
    return false;
  }
  DOPPIO_THROW("Gloo ", what, " failed on ", where, ": ", message);
}

InplaceOperands InplaceTensorsAfterWorld(OperatorBase* op, bool same_shape) {
  const int count = op->InputSize() - 1;
  DOPPIO_ENFORCE(count >= 1, "the op needs a common world and at least one tensor");
  DOPPIO_ENFORCE(op->OutputSize() == count || op->OutputSize() == count + 1,
                 "the op runs in place over its ", count,
                 " tensor(s): it takes as many outputs, plus an optional status, got ",
                 op->OutputSize());
  InplaceOperands operands;
  if (op->OutputSize() == count + 1) operands.status_output = count;
  for (int i = 0; i < count; ++i) {
    DOPPIO_ENFORCE(op->IsInputOutputAlias(i + 1, i), "the op runs in place: output ", i, " ('",
                   op->output_name(i), "') must be input ", i + 1, " ('", op->input_name(i + 1),
                   "')");
    Blob* blob = op->OutputBlob(i);
    DOPPIO_ENFORCE(blob->IsTensor(), "input ", i + 1, " ('", op->input_name(i + 1),
                   "') should be a tensor but holds ", blob->TypeName());
    Tensor* tensor = blob->GetMutable<Tensor>();
    DOPPIO_ENFORCE(tensor->dtype() != DataType::kUndefined && tensor->dtype() != DataType::kString,
                   "input ", i + 1, " ('", op->input_name(i + 1), "') is ", tensor->DebugString(),
                   "; it needs a written numeric tensor");
    tensor->raw_data();  // an error if never written
    if (same_shape && i > 0) {
      const Tensor& first = *operands.tensors[0];
      DOPPIO_ENFORCE(tensor->dims() == first.dims() && tensor->dtype() == first.dtype(), "input ",
                     i + 1, " ('", op->input_name(i + 1), "') is ", tensor->DebugString(),
                     " but input 1 ('", op->input_name(1), "') is ", first.DebugString(),
                     "; the tensors need one shape and type");
    }
    operands.tensors.push_back(tensor);
  }
  return operands;
}

bool AlgorithmKey::operator==(const AlgorithmKey& other) const {
  return world == other.world && buffers == other.buffers && count == other.count &&
         dtype == other.dtype && variant == other.variant;
}

gloo::Algorithm& CachedAlgorithm::Get(
    AlgorithmKey key, const std::function<std::unique_ptr<gloo::Algorithm>()>& make) {
  if (algorithm_ == nullptr || !(key == key_)) {
    algorithm_.reset();  // release the old buffers' slots before building
    algorithm_ = make();
    key_ = std::move(key);
  }
  return *algorithm_;
}

int ElementCount(const OperatorBase& op, int64_t numel) {
  DOPPIO_ENFORCE(numel <= std::numeric_limits<int>::max(), "", numel,
                 " elements exceed Gloo's limit of ", std::numeric_limits<int>::max(),
                 " per tensor");
  return static_cast<int>(numel);
}

std::string DescribeRank(const gloo::Context& world) {
  return "rank " + std::to_string(world.rank) + " of " + std::to_string(world.size);
}

const CommonWorld& CommonWorldInput(const OperatorBase& op) {
  const CommonWorld& world = op.InputAs<CommonWorld>(0);
  DOPPIO_ENFORCE(world != nullptr, "common world '", op.input_name(0),
                 "' holds no context (destroyed, or never connected)");
  return world;
}

namespace {

struct WorldRegistry {
  std::mutex mutex;
  std::vector<std::weak_ptr<gloo::Context>> live;
};

WorldRegistry& Worlds() {
  // Leaked on purpose: DrainCommonWorlds may run from exit handlers, after
  // function-local statics of other translation units are destroyed.
  static WorldRegistry* registry = new WorldRegistry;
  return *registry;
}

}  // namespace

void TrackCommonWorld(const CommonWorld& world) {
  if (world == nullptr || world->size <= 1) return;
  WorldRegistry& registry = Worlds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  // Forget worlds that are gone, so a long job that reconnects keeps a short list.
  auto& live = registry.live;
  live.erase(std::remove_if(live.begin(), live.end(),
                            [](const std::weak_ptr<gloo::Context>& w) { return w.expired(); }),
             live.end());
  live.push_back(world);
}

void UntrackCommonWorld(const CommonWorld& world) {
  WorldRegistry& registry = Worlds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto& live = registry.live;
  live.erase(std::remove_if(live.begin(), live.end(),
                            [&](const std::weak_ptr<gloo::Context>& w) {
                              return w.expired() || w.lock() == world;
                            }),
             live.end());
}

bool BarrierIgnoringFailure(const CommonWorld& world) {
  if (world == nullptr || world->size <= 1) return true;
  try {
    gloo::BarrierAllToAll(world).run();
    return true;
  } catch (const gloo::Exception&) {
  } catch (const gloo::EnforceNotMet&) {
  } catch (const std::exception&) {
  }
  return false;
}

int DrainCommonWorlds() {
  std::vector<CommonWorld> worlds;
  {
    WorldRegistry& registry = Worlds();
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (const auto& weak : registry.live) {
      if (CommonWorld world = weak.lock()) worlds.push_back(std::move(world));
    }
    registry.live.clear();  // drained: a second call has nothing to wait for
  }
  std::vector<char> failed(worlds.size(), 0);
  std::vector<std::thread> threads;
  threads.reserve(worlds.size());
  for (size_t i = 0; i < worlds.size(); ++i) {
    threads.emplace_back([&, i] { failed[i] = BarrierIgnoringFailure(worlds[i]) ? 0 : 1; });
  }
  for (auto& thread : threads) thread.join();
  int failures = 0;
  for (char f : failed) failures += f;
  return failures;
}

}  // namespace doppio
