// Read-only views of a NetDef that the graph transforms share: who reads and
// who writes each blob, and typed access to op arguments.
//
// The transforms rewrite one pattern at a time and rebuild these views
// after each rewrite, so they never reason about a half-edited net.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

// Op indexes reading and writing each blob, plus the net's declared
// external inputs and outputs.
class BlobUses {
 public:
  explicit BlobUses(const NetDef& net);

  const std::vector<int>& Readers(const std::string& blob) const;
  const std::vector<int>& Writers(const std::string& blob) const;
  bool IsExternalInput(const std::string& blob) const { return external_inputs_.count(blob); }
  bool IsExternalOutput(const std::string& blob) const { return external_outputs_.count(blob); }
  // The ops that read the value op `writer` leaves in `blob`: later readers
  // up to and including the next op that writes it (which may read it
  // first, in place).
  std::vector<int> ValueReaders(const std::string& blob, int writer) const;
  // Whether an op strictly between `first` and `last` reads or writes `blob`.
  bool TouchedBetween(const std::string& blob, int first, int last) const;
  // True when the value `writer` leaves in the blob is seen by `reader`
  // alone: `reader` is its only reader, and the net does not hand it out
  // (it is overwritten later, or not an external output).
  bool IsPrivateLink(const std::string& blob, int writer, int reader) const;

 private:
  // The first op after `writer` that writes `blob`; a huge index if none.
  int NextWriter(const std::string& blob, int writer) const;

  std::map<std::string, std::vector<int>> readers_, writers_;
  std::set<std::string> external_inputs_, external_outputs_;
};

// Whether the op runs on the CPU (its own device option, else the net's).
bool RunsOnCpu(const NetDef& net, const OperatorDef& op);

bool HasArg(const OperatorDef& op, const std::string& name);
// A binary op with Caffe2's legacy broadcast axis ("axis" / "axis_str"):
// its operands do not broadcast as numpy's do, so the passes leave it.
bool HasLegacyBroadcastAxis(const OperatorDef& op);
int IntArg(const OperatorDef& op, const std::string& name, int default_value);
float FloatArg(const OperatorDef& op, const std::string& name, float default_value);
std::string StringArg(const OperatorDef& op, const std::string& name,
                      const std::string& default_value);

// The blobs the net leaves behind: each it writes that no later op reads,
// in order of their last write. What a net that declares no external
// outputs hands out, so the passes keep them for such a net.
std::vector<std::string> SinkBlobs(const NetDef& net);

// `base`, or `base_1`, `base_2` ...: the first name no blob of the net nor
// of the workspace (when given) has yet.
std::string UniqueBlobName(const std::string& base, const NetDef& net,
                           const Workspace* workspace);

}  // namespace transforms
}  // namespace doppio
