// Operators: the units of work in a net.
//
// An operator is built from an OperatorDef inside a Workspace. Its
// constructor resolves every input and output blob once (inputs must exist;
// outputs are created) and reads its arguments once, so Run() does no
// lookups. Operator<Context> adds a device context and the Tensor
// shorthands Input(i) / Output(i); a kernel implements RunOnDevice().
//
// Ownership: the workspace owns the blobs; the operator holds borrowed
// pointers to them, valid while the workspace lives (nets are destroyed
// before their workspace's blobs).
// Thread-safety: one Run() at a time per operator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/blob.h"
#include "core/context.h"
#include "core/enforce.h"
#include "core/tensor.h"
#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

class OperatorBase {
 public:
  OperatorBase(const OperatorDef& def, Workspace* workspace);
  virtual ~OperatorBase() = default;
  OperatorBase(const OperatorBase&) = delete;
  OperatorBase& operator=(const OperatorBase&) = delete;

  // Does the op's work; failures throw doppio::Error.
  virtual void Run() = 0;

  const OperatorDef& def() const { return def_; }
  const std::string& type() const { return def_.type(); }
  // "FC 'fc1'" or "FC": how messages name this op.
  std::string DisplayName() const;

  int InputSize() const { return static_cast<int>(inputs_.size()); }
  int OutputSize() const { return static_cast<int>(outputs_.size()); }
  const std::string& input_name(int i) const { return def_.input(i); }
  const std::string& output_name(int i) const { return def_.output(i); }
  const Blob& InputBlob(int i) const { return *inputs_.at(i); }
  Blob* OutputBlob(int i) { return outputs_.at(i); }
  bool IsInputOutputAlias(int input, int output) const {
    return inputs_.at(input) == outputs_.at(output);
  }

  // Non-tensor inputs and outputs (DB cursors, store handlers ...).
  template <typename T>
  const T& InputAs(int i) const {
    const Blob& blob = InputBlob(i);
    DOPPIO_ENFORCE(blob.IsType<T>(), "input ", i, " ('", input_name(i),
                   "') should hold ", DemangledTypeName(typeid(T)), " but holds ",
                   blob.TypeName());
    return blob.Get<T>();
  }
  template <typename T>
  T* OutputAs(int i) {
    return OutputBlob(i)->GetMutable<T>();
  }

  bool HasArgument(const std::string& name) const { return args_.Has(name); }
  template <typename T>
  T GetSingleArgument(const std::string& name, const T& default_value) const {
    return args_.GetSingle<T>(name, default_value);
  }
  template <typename T>
  std::vector<T> GetRepeatedArgument(const std::string& name,
                                     const std::vector<T>& default_value = {}) const {
    return args_.GetRepeated<T>(name, default_value);
  }

  // For ops that create or look up blobs by name at run time (Load, Save).
  Workspace* workspace() const { return workspace_; }

 private:
  OperatorDef def_;
  ArgumentHelper args_{def_};
  Workspace* workspace_;
  std::vector<const Blob*> inputs_;
  std::vector<Blob*> outputs_;
};

template <class Context>
class Operator : public OperatorBase {
 public:
  Operator(const OperatorDef& def, Workspace* workspace)
      : OperatorBase(def, workspace), context_(def.device_option()) {}

  void Run() final {
    context_.SwitchToDevice();
    RunOnDevice();
    context_.FinishDeviceComputation();
  }
  virtual void RunOnDevice() = 0;

 protected:
  // Input i as a tensor; a clear error if the blob holds anything else.
  const Tensor& Input(int i) const {
    const Blob& blob = InputBlob(i);
    DOPPIO_ENFORCE(blob.IsTensor(), "input ", i, " ('", input_name(i),
                   "') should be a tensor but holds ", blob.TypeName());
    return blob.GetTensor();
  }
  // Output i as a tensor on this op's device.
  Tensor* Output(int i) { return OutputBlob(i)->GetMutableTensor(context_.device()); }

  Context context_;
};

}  // namespace doppio
