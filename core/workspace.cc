#include "core/workspace.h"

#include <algorithm>

#include "core/enforce.h"
#include "core/net.h"
#include "core/plan.h"
#include "core/registry.h"

namespace doppio {

Workspace::Workspace() = default;

Workspace::Workspace(Workspace* parent) : parent_(parent) {
  if (parent_ != nullptr) root_folder_ = parent_->RootFolder();
}

Workspace::Workspace(Workspace* outer, const std::map<std::string, std::string>& bindings) {
  DOPPIO_ENFORCE(outer != nullptr, "a scoped workspace needs an outer workspace");
  root_folder_ = outer->RootFolder();
  AddBlobMapping(outer, bindings);
}

void Workspace::AddBlobMapping(Workspace* outer, const std::map<std::string, std::string>& bindings,
                               bool skip_defined) {
  for (const auto& binding : bindings) {
    const std::string& inner = binding.first;
    DOPPIO_ENFORCE_FOUND(outer->HasBlob(binding.second), "cannot bind '", inner, "' to the outer blob '",
                   binding.second, "': it does not exist");
    {
      std::lock_guard<std::mutex> lock(blobs_mutex_);
      auto it = bound_.find(inner);
      if (it != bound_.end()) {
        DOPPIO_ENFORCE(it->second.first == outer && it->second.second == binding.second,
                       "the blob '", inner, "' is bound to '", it->second.second,
                       "' already; it cannot be bound to '", binding.second, "'");
        continue;
      }
    }
    if (HasBlob(inner)) {
      DOPPIO_ENFORCE(skip_defined, "cannot bind '", inner, "' to the outer blob '", binding.second,
                     "': this workspace has a blob of that name");
      continue;
    }
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    bound_[inner] = {outer, binding.second};
  }
}

void Workspace::CopyForwardedTensors(const std::set<std::string>& names,
                                     const TensorCopier& copy_tensor) {
  for (const std::string& name : names) {
    std::pair<Workspace*, std::string> source;
    {
      std::lock_guard<std::mutex> lock(blobs_mutex_);
      auto it = bound_.find(name);
      if (it == bound_.end()) continue;
      source = it->second;
    }
    const Blob* from = source.first->GetBlob(source.second);
    DOPPIO_ENFORCE(from != nullptr && from->IsTensor(), "the outer blob '", source.second,
                   "' (bound as '", name, "') must hold a tensor to be copied");
    auto copy = std::make_unique<Blob>();
    copy_tensor(from->GetTensor(), copy->GetMutable<Tensor>());
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    bound_.erase(name);
    blobs_[name] = std::move(copy);
  }
}

void Workspace::SetRootFolder(const std::string& root_folder) {
  DOPPIO_ENFORCE(!root_folder.empty(), "a workspace's root folder cannot be empty "
                 "(use \".\" for the current directory)");
  root_folder_ = root_folder;
}

Workspace::~Workspace() {
  // Operators point into blobs: drop the nets first.
  std::lock_guard<std::mutex> lock(nets_mutex_);
  nets_.clear();
}

Blob* Workspace::CreateBlob(const std::string& name) {
  if (Blob* existing = GetBlob(name)) return existing;  // local, bound or the parent's
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  auto& slot = blobs_[name];
  if (!slot) slot = std::make_unique<Blob>();
  return slot.get();
}

Blob* Workspace::GetBlob(const std::string& name) {
  return const_cast<Blob*>(static_cast<const Workspace*>(this)->GetBlob(name));
}

const Blob* Workspace::GetBlob(const std::string& name) const {
  std::pair<Workspace*, std::string> bound;
  {
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    auto it = blobs_.find(name);
    if (it != blobs_.end()) return it->second.get();
    auto binding = bound_.find(name);
    if (binding != bound_.end()) bound = binding->second;
  }
  if (bound.first != nullptr)
    return static_cast<const Workspace*>(bound.first)->GetBlob(bound.second);
  return parent_ ? static_cast<const Workspace*>(parent_)->GetBlob(name) : nullptr;
}

bool Workspace::RemoveBlob(const std::string& name) {
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  return blobs_.erase(name) > 0;
}

std::vector<std::string> Workspace::LocalBlobs() const {
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  std::vector<std::string> names;
  for (const auto& entry : blobs_) names.push_back(entry.first);
  return names;
}

std::vector<std::string> Workspace::Blobs() const {
  std::vector<std::string> names = LocalBlobs();
  {
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    for (const auto& binding : bound_) names.push_back(binding.first);
  }
  if (parent_) {
    for (const std::string& name : parent_->Blobs()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

NetBase* Workspace::CreateNet(const NetDef& def, bool overwrite) {
  {
    std::lock_guard<std::mutex> lock(nets_mutex_);
    DOPPIO_ENFORCE(overwrite || !nets_.count(def.name()), "a net named '",
                   def.name(), "' already exists in this workspace");
  }
  // Built outside the lock: construction creates blobs and may be slow.
  std::shared_ptr<NetBase> net = doppio::CreateNet(def, this);
  std::lock_guard<std::mutex> lock(nets_mutex_);
  nets_[def.name()] = net;
  return net.get();
}

NetBase* Workspace::GetNet(const std::string& name) {
  std::lock_guard<std::mutex> lock(nets_mutex_);
  auto it = nets_.find(name);
  return it == nets_.end() ? nullptr : it->second.get();
}

bool Workspace::DeleteNet(const std::string& name) {
  std::lock_guard<std::mutex> lock(nets_mutex_);
  return nets_.erase(name) > 0;
}

std::vector<std::string> Workspace::Nets() const {
  std::lock_guard<std::mutex> lock(nets_mutex_);
  std::vector<std::string> names;
  for (const auto& entry : nets_) names.push_back(entry.first);
  return names;
}

void Workspace::RunNet(const std::string& name) {
  std::shared_ptr<NetBase> net;
  {
    std::lock_guard<std::mutex> lock(nets_mutex_);
    auto it = nets_.find(name);
    DOPPIO_ENFORCE_FOUND(it != nets_.end(), "no net named '", name,
                   "' in this workspace; create it first");
    // Held by value: a concurrent DeleteNet must not destroy a running net.
    net = it->second;
  }
  net->Run();
}

void Workspace::RunNetOnce(const NetDef& def) {
  std::unique_ptr<NetBase> net = doppio::CreateNet(def, this);
  net->Run();
}

void Workspace::RunOperatorOnce(const OperatorDef& def) {
  std::unique_ptr<OperatorBase> op;
  try {
    op = CreateOperator(def, this);
    op->Run();
  } catch (Error& error) {
    error.AppendContext(MakeString("in operator ", def.type(),
                                   def.name().empty() ? "" : " '" + def.name() + "'",
                                   " (inputs ", std::vector<std::string>(def.input().begin(), def.input().end()),
                                   ", outputs ", std::vector<std::string>(def.output().begin(), def.output().end()),
                                   ")"));
    throw;
  }
}

void Workspace::RunPlan(const PlanDef& plan) { doppio::RunPlan(plan, this); }

}  // namespace doppio
