// Free insertion (Caffe2's release_blobs_when_used).
#include <set>
#include <vector>

#include "parallel/memonger/memonger.h"

namespace doppio {
namespace memonger {

NetDef ReleaseBlobsWhenUsed(const NetDef& net, const std::set<std::string>& dont_free_blobs) {
  std::set<std::string> read;
  std::set<std::string> can_release;
  std::set<std::string> aliased;
  for (const OperatorDef& op : net.op()) {
    // An Alias shares its input's memory with another name; freeing either
    // would pull it from under the other.
    if (op.type() == "Alias") {
      if (op.input_size() > 0) aliased.insert(op.input(0));
      continue;
    }
    read.insert(op.input().begin(), op.input().end());
    // Only blobs the net makes before reading them: anything read first
    // lives across runs (params, state, external inputs).
    for (const std::string& out : op.output()) {
      if (!read.count(out)) can_release.insert(out);
    }
  }
  for (const std::string& name : net.external_output()) can_release.erase(name);
  for (const std::string& name : dont_free_blobs) can_release.erase(name);
  for (const std::string& name : aliased) can_release.erase(name);

  // Walk backwards so each blob is freed right after its last reader; the
  // Free reads and writes the blob, so the dag executor orders it after
  // every reader and before any later writer.
  std::vector<std::vector<std::string>> free_after(net.op_size());
  for (int i = net.op_size() - 1; i >= 0; --i) {
    for (const std::string& name : net.op(i).input()) {
      if (can_release.erase(name) && read.count(name)) free_after[i].push_back(name);
    }
  }
  NetDef released = net;
  released.clear_op();
  for (int i = 0; i < net.op_size(); ++i) {
    *released.add_op() = net.op(i);
    for (const std::string& name : free_after[i]) {
      OperatorDef* free_op = released.add_op();
      free_op->set_type("Free");
      free_op->add_input(name);
      free_op->add_output(name);
      *free_op->mutable_device_option() = net.op(i).device_option();
    }
  }
  return released;
}

}  // namespace memonger
}  // namespace doppio
