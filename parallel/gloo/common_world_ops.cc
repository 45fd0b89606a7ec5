#include "parallel/gloo/common_world_ops.h"

#include <signal.h>

#include <chrono>
#include <exception>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/gloo/flight_recorder.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {
namespace {

constexpr int kDefaultTimeoutMs = 30000;

// Gloo writes to its sockets with writev, so a peer that dies makes the next
// write raise SIGPIPE, whose default action kills this process instead of
// letting Gloo report the error. Ignore it unless the program installed a
// handler of its own (Python already ignores it).
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current;
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
}

// Index of the optional status output, or -1.
int StatusOutput(const OperatorBase& op) { return op.OutputSize() > 1 ? 1 : -1; }

}  // namespace

CreateCommonWorldOp::CreateCommonWorldOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      size_(GetSingleArgument<int>("size", 0)),
      rank_(GetSingleArgument<int>("rank", 0)),
      timeout_ms_(GetSingleArgument<int>("timeout_ms", kDefaultTimeoutMs)),
      interface_(GetSingleArgument<std::string>("interface", "")),
      key_prefix_(def.name().empty() ? def.output(0) : def.name()) {
  DOPPIO_ENFORCE(size_ >= 1, "argument 'size' must be >= 1, got ", size_);
  DOPPIO_ENFORCE(rank_ >= 0 && rank_ < size_, "rank ", rank_, " is not in [0, ", size_, ")");
  DOPPIO_ENFORCE(timeout_ms_ > 0, "argument 'timeout_ms' must be positive, got ", timeout_ms_);
  const std::string transport = GetSingleArgument<std::string>("transport", "tcp");
  DOPPIO_ENFORCE(transport == "tcp", "transport '", transport,
                 "' is not supported; this build has Gloo's \"tcp\" transport");
  IgnoreSigpipeUnlessHandled();
  InstallFlightRecorderSignal();
  gloo::transport::tcp::attr attr;
  // Without an interface Gloo binds to the address the host name resolves
  // to, as Caffe2 does.
  if (!interface_.empty()) attr.iface = interface_;
  try {
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& error) {
    DOPPIO_THROW("cannot open a TCP device",
                 interface_.empty() ? std::string(" on this host's address")
                                    : " on interface '" + interface_ + "'",
                 ": ", error.what());
  }
}

void CreateCommonWorldOp::RunOnDevice() {
  const GlooStoreHandler& handler = InputAs<GlooStoreHandler>(0);
  gloo::rendezvous::PrefixStore store(key_prefix_, handler.store());
  auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
  context->setTimeout(std::chrono::milliseconds(timeout_ms_));
  GlooFailureHandler failures(this, StatusOutput(*this));
  const std::string where = "rank " + std::to_string(rank_) + " of " +
                            std::to_string(size_) + " (rendezvous through " +
                            handler.description() + ", timeout_ms " +
                            std::to_string(timeout_ms_) + ")";
  const bool connected = failures.Run("rendezvous (CreateCommonWorld)", where,
                                      [&] { context->connectFullMesh(store, device_); });
  if (connected) {
    TrackCommonWorld(context);
    *OutputAs<CommonWorld>(0) = std::move(context);
  }
}

void CloneCommonWorldOp::RunOnDevice() {
  const CommonWorld existing = CommonWorldInput(*this);
  GlooFailureHandler failures(this, StatusOutput(*this));
  CommonWorld clone;
  const bool cloned = failures.Run("clone of a common world", existing, [&] {
    gloo::rendezvous::ContextFactory factory(existing);
    clone = factory.makeContext(existing->getDevice());
    clone->setTimeout(existing->getTimeout());
  });
  if (cloned) {
    TrackCommonWorld(clone);
    *OutputAs<CommonWorld>(0) = std::move(clone);
  }
}

void DestroyCommonWorldOp::RunOnDevice() {
  // Destroying twice, or a world whose creation failed, is not an error: the
  // point is that no connection stays open.
  Blob* blob = OutputBlob(0);
  if (!blob->IsType<CommonWorld>()) return;
  CommonWorld* world = blob->GetMutable<CommonWorld>();
  if (*world == nullptr) return;
  // Closing while a peer may still wait on this rank's last message fails
  // that peer's collective (see TrackCommonWorld); after a barrier every
  // rank has consumed all of the others' messages. A dead peer makes the
  // barrier fail at once (or after the timeout): irrelevant, as the world is
  // being closed anyway.
  BarrierIgnoringFailure(*world);
  UntrackCommonWorld(*world);
  (*world)->closeConnections();
  world->reset();
}

REGISTER_CPU_OPERATOR(CreateCommonWorld, CreateCommonWorldOp);
REGISTER_CPU_OPERATOR(CloneCommonWorld, CloneCommonWorldOp);
REGISTER_CPU_OPERATOR(DestroyCommonWorld, DestroyCommonWorldOp);

OPERATOR_SCHEMA(CreateCommonWorld)
    .NumInputs(1)
    .NumOutputs(1, 2)
    .Arg("size", "(int, required) number of processes in the world", true)
    .Arg("rank", "(int, default 0) this process's rank in [0, size)")
    .Arg("transport", "(string, default \"tcp\") Gloo transport; only \"tcp\" is built")
    .Arg("interface", "(string, default \"\") network interface to bind (e.g. \"lo\"); "
                      "empty binds the address the host name resolves to")
    .Arg("timeout_ms", "(int, default 30000) limit for the rendezvous and for every "
                       "send or receive of the collectives that use this world")
    .Arg("status_blob", "(string, default \"\") Caffe2's alternative to output 1")
    .Input(0, "kv_handler", "a store handler (FileStoreHandlerCreate, RedisStoreHandlerCreate)")
    .Output(0, "comm_world", "the connected common world")
    .Output(1, "status", "optional int32 scalar: 0 when connected, 1 when the rendezvous "
                         "failed (then no error is thrown and comm_world is untouched)")
    .Doc("Connects `size` processes into a full mesh: each rank publishes its TCP "
         "address under the op's name in the store and connects to every other rank. "
         "A rank missing after timeout_ms is an error naming the store.");

OPERATOR_SCHEMA(CloneCommonWorld)
    .NumInputs(1)
    .NumOutputs(1, 2)
    .Input(0, "existing_comm_world", "a connected common world")
    .Output(0, "comm_world", "a new world over the same ranks, with its own connections")
    .Output(1, "status", "optional int32 scalar: 0 ok, 1 failed")
    .Doc("Clones a common world without a store: every rank must run it together. "
         "Collectives on the clone do not interleave with those on the original.");

OPERATOR_SCHEMA(DestroyCommonWorld)
    .NumInputs(1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .Input(0, "common_world", "the world to close")
    .Output(0, "common_world", "in place: emptied")
    .Doc("Closes a common world's connections; the blob then holds no context. Every "
         "rank runs it together: it waits (at most the world's timeout) until all ranks "
         "reach it, so no rank's close cuts off a peer's last collective.");

SHOULD_NOT_DO_GRADIENT(CreateCommonWorld, "it connects processes, not a differentiable op");
SHOULD_NOT_DO_GRADIENT(CloneCommonWorld, "it connects processes, not a differentiable op");
SHOULD_NOT_DO_GRADIENT(DestroyCommonWorld, "it closes connections, not a differentiable op");

}  // namespace doppio
