// Cross-process Broadcast and Barrier over a common world (engine "GLOO").
#pragma once

#include "core/operator.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

// Copies the root rank's first tensor into every tensor of every rank. The
// tensors must already have the root's shape and type on every rank (Gloo
// moves bytes; a size mismatch is reported by Gloo as an error).
class GlooBroadcastOp final : public Operator<CPUContext> {
 public:
  GlooBroadcastOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int root_;
  CachedAlgorithm cache_;
};

// Returns on every rank once every rank has entered it.
class GlooBarrierOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  CachedAlgorithm cache_;
};

}  // namespace doppio
