// What the Gloo ops share: the blob types they pass to each other (a store
// handler, a common world) and the one place Gloo's exceptions become
// doppio::Error or a status output.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gloo/algorithm.h>
#include <gloo/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>

#include "core/operator.h"

namespace doppio {

// A common world: every rank's connected pairs, as in Caffe2. Blobs hold the
// shared_ptr itself so a clone and the ops that use it share one context.
using CommonWorld = std::shared_ptr<gloo::Context>;

// A rendezvous store (file or Redis) plus an optional key prefix, held in a
// blob by FileStoreHandlerCreate / RedisStoreHandlerCreate.
class GlooStoreHandler {
 public:
  GlooStoreHandler(std::unique_ptr<gloo::rendezvous::Store> backend, const std::string& prefix,
                   std::string description);
  GlooStoreHandler(const GlooStoreHandler&) = delete;
  GlooStoreHandler& operator=(const GlooStoreHandler&) = delete;

  // The prefixed view when a prefix was given, else the backend.
  // Gloo's store calls are not const; the handler is a connection, whose
  // state a const blob does not protect.
  gloo::rendezvous::Store& store() const;
  // "file store '/tmp/x'" or "Redis store at host:port": for error messages.
  const std::string& description() const { return description_; }

 private:
  std::unique_ptr<gloo::rendezvous::Store> backend_;
  // PrefixStore keeps a reference to the backend, so it is declared after it
  // and destroyed first.
  std::unique_ptr<gloo::rendezvous::PrefixStore> prefixed_;
  std::string description_;
};

// Status convention of Caffe2's Gloo ops: 0 after success, 1 after a failed
// collective or rendezvous.
constexpr int32_t kGlooStatusOk = 0;
constexpr int32_t kGlooStatusFailed = 1;

// Routes a Gloo failure of `op` either to a status blob (the op's extra
// output, or Caffe2's `status_blob` argument) or to a doppio::Error.
class GlooFailureHandler {
 public:
  // `status_output`: index of the op's status output, or -1 when it has none.
  GlooFailureHandler(OperatorBase* op, int status_output);

  // Runs `body`; a gloo exception (peer lost, timeout, enforce) either sets
  // the status to kGlooStatusFailed and returns false, or throws an error
  // naming the op, `what` (e.g. "allreduce (ring)") and `where` (e.g. "rank 1
  // of 2"). On success the status, if any, is set to kGlooStatusOk.
  bool Run(const std::string& what, const std::string& where,
           const std::function<void()>& body);
  // The same over a connected `world`: `where` is its DescribeRank, and a
  // lost peer is named by rank ("lost rank 1 (127.0.0.1:23169)").
  bool Run(const std::string& what, const CommonWorld& world,
           const std::function<void()>& body);

  bool has_status() const { return status_ != nullptr; }

 private:
  void SetStatus(int32_t value);
  // `world`: null while not connected (a rendezvous).
  bool RunNaming(const std::string& what, const std::string& where, gloo::Context* world,
                 const std::function<void()>& body);

  OperatorBase* op_;
  Blob* status_ = nullptr;
};

// The operands of a collective that runs in place after its common world:
// inputs 1..k are outputs 0..k-1, and an extra output k, if present, is the
// status. Checks the aliasing, that each holds a written tensor of a type
// Gloo can move (not strings), and -- when `same_shape` -- one shape and type.
struct InplaceOperands {
  std::vector<Tensor*> tensors;
  int status_output = -1;
};
InplaceOperands InplaceTensorsAfterWorld(OperatorBase* op, bool same_shape);

// Gloo's algorithms register their buffers with the world's pairs when
// built; rebuilding every run would pay that each step, so an op keeps its
// algorithm while the world, buffers, count and type stay the same. Every
// rank runs the same net, so ranks rebuild in step (a rank that rebuilds
// alone waits for peers on another slot and times out with an error).
struct AlgorithmKey {
  CommonWorld world;
  std::vector<const void*> buffers;
  int64_t count = 0;
  DataType dtype = DataType::kUndefined;
  std::string variant;  // the algorithm's name, root, ...
  bool operator==(const AlgorithmKey& other) const;
};

class CachedAlgorithm {
 public:
  // The algorithm built for `key`, building it with `make` when the key
  // changed since the last call. Gloo errors from `make` propagate.
  gloo::Algorithm& Get(AlgorithmKey key,
                       const std::function<std::unique_ptr<gloo::Algorithm>()>& make);
  // After a failure the algorithm's buffers are in an unknown state.
  void Reset() { algorithm_.reset(); }

 private:
  AlgorithmKey key_;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

// Gloo's algorithms count elements in an int.
int ElementCount(const OperatorBase& op, int64_t numel);

// "rank 1 of 4": how failures name the local end of a world.
std::string DescribeRank(const gloo::Context& world);

// The common world in input 0 of a collective, with a clear error when it
// holds anything else or was destroyed.
const CommonWorld& CommonWorldInput(const OperatorBase& op);

// Orderly shutdown of common worlds.
//
// Gloo's TCP receive path reports a pair's failure before a completion that
// already arrived: when a rank exits right after its last send, the peer's
// device thread can read that message and the end-of-stream together, and
// the peer's collective then throws "Connection closed by peer" although
// every byte it needed came. So no rank may close a world while a peer could
// still be waiting on it: closing waits for a barrier first.
//
// Thread-safe. The registry holds weak references: it keeps no world alive.
void TrackCommonWorld(const CommonWorld& world);
// DestroyCommonWorld's: the world was drained and closed by hand.
void UntrackCommonWorld(const CommonWorld& world);

// A barrier over `world` that never throws; false when it failed (a dead peer
// makes it fail at once, a silent one after the world's timeout). Every rank
// must reach it for it to succeed.
bool BarrierIgnoringFailure(const CommonWorld& world);

// Runs BarrierIgnoringFailure on every tracked world that is still alive and
// not yet drained, concurrently (so ranks need not agree on an order), and
// marks them drained. Called at normal process exit (doppio's Python module
// registers it with atexit; run_net calls it before returning) so a rank that
// finishes first waits for its peers instead of cutting off their last
// collective. Returns how many barriers failed.
int DrainCommonWorlds();

}  // namespace doppio
