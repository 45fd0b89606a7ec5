// Workspace: the named blobs and nets of one model.
//
// A workspace may have a parent; its blobs are visible (readable and
// writable) through the child, and blobs the child creates stay local. A
// scoped workspace (Caffe2's blob bindings, for the Do op) sees instead only
// the outer blobs bound to it, each under an inner name of its own. The
// workspace owns its blobs and nets; nets are destroyed before blobs, since
// operators hold pointers into blobs.
//
// Thread-safety: creating, looking up and removing blobs, and creating,
// running and deleting nets, may happen from several threads. The content
// of a blob is not protected: the executor orders readers and writers.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/blob.h"
#include "proto/doppio.pb.h"

namespace doppio {

class NetBase;

class Workspace {
 public:
  Workspace();
  // `parent` must outlive this workspace.
  explicit Workspace(Workspace* parent);
  // A scoped workspace: `bindings` maps inner names to blobs of `outer`
  // (which must exist and outlive this workspace); no other outer blob is
  // visible.
  Workspace(Workspace* outer, const std::map<std::string, std::string>& bindings);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // The named blob, created locally if neither this workspace nor a parent
  // has it. Never null.
  Blob* CreateBlob(const std::string& name);
  // Own or parent's blob; nullptr when absent.
  Blob* GetBlob(const std::string& name);
  const Blob* GetBlob(const std::string& name) const;
  bool HasBlob(const std::string& name) const { return GetBlob(name) != nullptr; }
  // Removes a local blob; false if there was none.
  bool RemoveBlob(const std::string& name);
  // Names of local, bound and parent blobs, sorted.
  std::vector<std::string> Blobs() const;
  std::vector<std::string> LocalBlobs() const;

  // Binds more inner names to blobs of `outer`. Binding a name again to the
  // same blob is a no-op; to another blob, or binding a name this workspace
  // already has, is an error, unless `skip_defined` (then a local blob of
  // that name stays, as a gradient Do keeps the forward run's values).
  void AddBlobMapping(Workspace* outer, const std::map<std::string, std::string>& bindings,
                      bool skip_defined = false);
  // Replaces each bound name in `names` by a local copy of the outer
  // tensor's current value (values a loop's gradient needs after later
  // iterations overwrite the outer blob), made by `copy` (the operators
  // layer copies device tensors; core reaches host memory only).
  using TensorCopier = std::function<void(const Tensor& source, Tensor* destination)>;
  void CopyForwardedTensors(const std::set<std::string>& names, const TensorCopier& copy);

  // Creates (or, with overwrite, replaces) the net named def.name(). A net of
  // that name that exists already is an error without overwrite.
  NetBase* CreateNet(const NetDef& def, bool overwrite = false);
  NetBase* GetNet(const std::string& name);
  bool DeleteNet(const std::string& name);
  std::vector<std::string> Nets() const;
  // Runs a net made earlier with CreateNet.
  void RunNet(const std::string& name);
  // Creates, runs and drops a net.
  void RunNetOnce(const NetDef& def);
  void RunOperatorOnce(const OperatorDef& def);
  // Runs a PlanDef's execution steps here (see core/plan.h).
  void RunPlan(const PlanDef& plan);

  Workspace* parent() const { return parent_; }

  // Caffe2's root folder: Load, Save, DBExists and CreateDB resolve relative
  // db paths against it and refuse paths that leave it, unless their
  // absolute_path argument is set. "." (the default) is the process's
  // current directory; a child workspace starts with its parent's. Set it
  // before running ops that read it.
  const std::string& RootFolder() const { return root_folder_; }
  void SetRootFolder(const std::string& root_folder);

 private:
  Workspace* parent_ = nullptr;
  std::string root_folder_ = ".";
  mutable std::mutex blobs_mutex_;
  std::map<std::string, std::unique_ptr<Blob>> blobs_;
  // Bound blobs: inner name -> (outer workspace, outer name).
  std::map<std::string, std::pair<Workspace*, std::string>> bound_;
  mutable std::mutex nets_mutex_;
  std::map<std::string, std::shared_ptr<NetBase>> nets_;
};

}  // namespace doppio
