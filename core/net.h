// Nets: an executable NetDef bound to a workspace.
//
// CreateNet picks the executor from NetDef.type ("simple" by default) in the
// net registry. Every net applies its DeviceOption to ops that have none,
// creates all operators up front (so a bad op fails at creation, naming it),
// and, when the NetDef declares external inputs, checks that each op input is
// an external input or produced by an earlier op.
//
// Errors raised while running carry the op's index, type, name, blobs and the
// net's name. Thread-safety: one Run() at a time per net.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"
#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

class NetBase {
 public:
  // Called after each op with its index in the net and its wall time.
  using OpObserver = std::function<void(int op_index, const OperatorBase& op,
                                        double seconds)>;

  NetBase(const NetDef& def, Workspace* workspace);
  virtual ~NetBase() = default;
  NetBase(const NetBase&) = delete;
  NetBase& operator=(const NetBase&) = delete;

  // Runs every op once; the first failure throws with the op's context.
  virtual void Run() = 0;
  virtual const std::vector<std::unique_ptr<OperatorBase>>& operators() const = 0;

  const std::string& name() const { return def_.name(); }
  const NetDef& def() const { return def_; }
  void SetOpObserver(OpObserver observer) { observer_ = std::move(observer); }

 protected:
  // The op's definition as the net runs it (net device option applied).
  static OperatorDef EffectiveOpDef(const NetDef& net, const OperatorDef& op);
  // "op #3 FC 'fc1' (inputs [...], outputs [...]) in net 'train'"
  std::string DescribeOp(int index) const;
  // Creates the op at `index`, adding its context to any error.
  std::unique_ptr<OperatorBase> CreateOpAt(int index, Workspace* workspace) const;
  // Runs one op, timing it for the observer and adding context to errors.
  void RunOpAt(int index, OperatorBase& op) const;

  NetDef def_;
  OpObserver observer_;
};

using NetCreator =
    std::function<std::unique_ptr<NetBase>(const NetDef&, Workspace*)>;

class NetRegistry {
 public:
  static void Register(const std::string& type, NetCreator creator);
  static std::vector<std::string> Types();
  static const NetCreator* Find(const std::string& type);
};

std::unique_ptr<NetBase> CreateNet(const NetDef& def, Workspace* workspace);

struct NetRegisterer {
  NetRegisterer(const char* type, NetCreator creator) {
    NetRegistry::Register(type, std::move(creator));
  }
};

}  // namespace doppio
