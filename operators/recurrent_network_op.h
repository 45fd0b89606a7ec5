// RecurrentNetwork: runs a step net once per timestep over a sequence, with
// Caffe2's arguments (recurrent.recurrent_net in Python writes them), and its
// gradient, which runs the backward step net from the last timestep to the
// first in the workspaces the forward pass kept.
//
// How a run works. Each recurrent state is a [T + L, N, D] tensor in the op's
// workspace (L initial slices, from the initial-state input). A link
// (internal, external, offset, window) makes the step net's blob `internal`
// a view of slices [t + offset, t + offset + window) of `external` at
// timestep t (rnn_internal_apply_link ops, prepended to the step net, do
// this), so the step net reads its previous state and writes its new one in
// place, without copies. Aliases expose views of the states as the op's
// outputs (offset 1: every step's state; -1: the last one).
//
// Workspaces. Step nets run in child workspaces of a shared one, itself a
// child of the op's workspace: parameters and states resolve to the op's
// workspace, blobs a step creates stay in its own. With a backward pass
// every timestep keeps its workspace (the gradient reads the activations in
// it); forward-only runs alternate between two. The workspaces live in the
// op's last output (a StepWorkspaces), which the gradient op takes as input.
//
// Devices. The ops are host ops on every device: they run step nets, whose
// ops have their own kernels, and move whole states, initial values and
// gradients through a DeviceMemory of the op's device (CUDA's is registered
// by recurrent_network_op_gpu.cc), so a net built under a GPU device scope
// keeps its states and gradients on the GPU.
//
// Thread-safety: as any op, one run at a time; the step nets run serially.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"
#include "core/workspace.h"

namespace doppio {
namespace rnn {

struct Link {
  std::string internal;
  std::string external;
  int offset = 0;
  int window = 1;
};

struct Alias {
  std::string src;
  std::string dst;
  int offset = 0;
};

// One recurrent state and the index of the op input holding its initial
// value.
struct RecurrentInput {
  std::string state;
  int input;
};

// float32 work on the memory of one device. Every call returns with the work
// done (host ops follow); pointers must be that device's memory.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual Device device() const = 0;
  virtual void Copy(const float* from, float* to, int64_t n) = 0;
  virtual void Zero(float* data, int64_t n) = 0;
  // to[i] += from[i]
  virtual void AddInto(const float* from, float* to, int64_t n) = 0;
};

using DeviceMemoryMaker = std::unique_ptr<DeviceMemory> (*)(const DeviceOption& option);

// Makes `maker` the memory of device kind `kind`; for static registration,
// hence the bool.
bool RegisterDeviceMemory(DeviceKind kind, DeviceMemoryMaker maker);

// The memory of the device `def` runs on; an error naming the device when
// that kind has none (a CPU-only build asked for CUDA).
std::unique_ptr<DeviceMemory> MakeDeviceMemory(const OperatorDef& def);

// Input `index` of `op` on the op's device, or an error naming it.
const Tensor& InputOnDevice(const OperatorBase& op, int index, const DeviceMemory& memory);

// The op's last output: the timesteps' workspaces and the workspace they
// share (its parent is the op's workspace).
struct StepWorkspaces {
  std::vector<std::shared_ptr<Workspace>> steps;
  std::shared_ptr<Workspace> shared;
};

// Links from the repeated arguments internal/external/offset[/window]
// (window_arg empty: every window is 1); mismatched lengths are an error.
std::vector<Link> ReadLinks(const OperatorBase& op, const std::string& internal_arg,
                            const std::string& external_arg, const std::string& offset_arg,
                            const std::string& window_arg);

// The NetDef in argument `name`: a NetDef (Argument.n) or its text format.
NetDef ReadStepNet(const OperatorBase& op, const std::string& name);

// Prepends `ops` to the net's ops.
void PrependOps(std::vector<OperatorDef> ops, NetDef* net);

// Prepends one rnn_internal_apply_link op per link and declares the linked
// blobs external inputs. An op that writes a linked blob before any op reads
// it gets a control input on it, so executors order it after the link.
void AddApplyLinkOps(const std::vector<Link>& links, const std::string& timestep,
                     const DeviceOption& device, NetDef* net);

// The timestep t from input `index` of `op`, an int32 scalar.
int ReadTimestep(const OperatorBase& op, int index, const Tensor& timestep);

// Sets the int32 scalar `name` in `ws` to t.
void SetTimestep(Workspace* ws, const std::string& name, int t);

// Runs the net named def.name() in `ws`, creating it on first use.
void RunStepNet(Workspace* ws, const NetDef& def);

// Declares which arguments of RecurrentNetwork (and its gradient) name
// blobs or hold step nets, so passes that rename blobs rename them too.
void BlobArguments(OpSchema& schema);

// Applies a memonger rename ("<blob>.rename" arguments) to a blob name.
std::string Renamed(const OperatorBase& op, const std::string& blob);

}  // namespace rnn

// Inputs: the input sequence [T, N, ...], the initial states, the step net's
// parameters (any order; arguments index them). Outputs: the aliased states,
// then the StepWorkspaces.
class RecurrentNetworkOp final : public Operator<CPUContext> {
 public:
  RecurrentNetworkOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  void InitializeState(const rnn::RecurrentInput& input, int64_t seq_len, int64_t batch);
  Workspace* StepWorkspace(rnn::StepWorkspaces* scratch, int t);

  std::unique_ptr<rnn::DeviceMemory> memory_;
  NetDef step_net_;
  std::string timestep_;
  bool has_backward_pass_;
  std::vector<rnn::Link> links_;
  std::vector<rnn::Alias> aliases_;
  std::vector<rnn::RecurrentInput> recurrent_inputs_;
  std::vector<std::string> recompute_blobs_;
};

// Inputs: the gradients of the outputs in outputs_with_grads, every input
// and output of the forward op (the StepWorkspaces last). Outputs: the
// gradients of the input sequence, of the parameters in `param`, and of the
// initial states.
class RecurrentNetworkGradientOp final : public Operator<CPUContext> {
 public:
  RecurrentNetworkGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  struct Param {
    int input;                  // the forward input (index among this op's inputs)
    int output;                 // the op output accumulating its gradient
    std::string grad;           // that output's name
    std::string cell_gradient;  // what one backward step writes
  };
  struct StateGradient {
    std::string state;      // the [T + L, N, D] forward state
    std::string grad;       // its gradient, same shape
    std::string all_grad;   // gradient of the every-step output, or ""
    std::string last_grad;  // gradient of the last-step output, or ""
  };
  void ReadParams();
  void ReadStateGradients();
  void AddInputGradientAccumulation();
  void AddParamGradientAccumulation();
  void PrepareGradients(int64_t batch);
  void WriteInitialStateGradients(int64_t batch);
  Tensor* OutputOnDevice(int index);

  std::unique_ptr<rnn::DeviceMemory> memory_;
  NetDef step_net_;
  std::string timestep_;
  std::vector<int> outputs_with_grads_;
  std::vector<rnn::Link> links_;
  std::vector<Param> params_;
  std::vector<StateGradient> state_grads_;
  std::vector<int> initial_state_ids_;
};

}  // namespace doppio
