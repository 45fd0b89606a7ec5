// Fuzz target: bytes -> NetDef (binary or text) -> a net created in a fresh
// workspace with every registered op type reachable, so malformed ops,
// unknown types, bad arguments, schema violations and missing blobs are all
// exercised. Nets made only of allow-listed pure ops (net_fuzz_util.h) are
// also run once on small input tensors.
#include <cstddef>
#include <cstdint>

#include "core/net.h"
#include "core/workspace.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/net_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  NetDef net;
  if (!fuzz::ParseBinaryOrText(data, size, &net)) return 0;
  Workspace workspace;
  fuzz::FeedExternalInputs(net, &workspace);
  try {
    workspace.CreateNet(net);
  } catch (const Error&) {
    return 0;
  }
  if (!fuzz::AllOpsRunnable(net)) return 0;
  try {
    workspace.RunNet(net.name());
    // Twice: ops keep state between runs (resized outputs, cached shapes).
    workspace.RunNet(net.name());
  } catch (const Error&) {
  }
  return 0;
}
