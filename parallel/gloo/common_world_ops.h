// Common worlds: a Gloo context per group of processes, every rank connected
// to every other over TCP after a rendezvous through a store handler.
#pragma once

#include <memory>
#include <string>

#include <gloo/transport/device.h>

#include "core/operator.h"

namespace doppio {

class CreateCommonWorldOp final : public Operator<CPUContext> {
 public:
  CreateCommonWorldOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int size_;
  int rank_;
  int timeout_ms_;
  std::string interface_;
  // Keys of this world in the store: the op's name (as in Caffe2), else its
  // output's, so worlds created from one store do not collide.
  std::string key_prefix_;
  std::shared_ptr<gloo::transport::Device> device_;
};

class CloneCommonWorldOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class DestroyCommonWorldOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
