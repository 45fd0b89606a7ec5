// Free: releases what its blobs hold, so memory that is no longer needed
// goes back to the allocator mid-net (memonger's release_blobs_when_used
// inserts it after a blob's last reader).
#include <climits>

#include "core/gradient.h"
#include "core/operator.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {
namespace {

class FreeOp final : public Operator<CPUContext> {
 public:
  FreeOp(const OperatorDef& def, Workspace* workspace) : Operator<CPUContext>(def, workspace) {
    // Freeing an input while writing elsewhere would be a hidden side
    // effect on a blob the dependency analysis thinks is only read.
    for (int i = 0; i < OutputSize(); ++i) {
      DOPPIO_ENFORCE(input_name(i) == output_name(i), "op Free: output ", i, " '",
                     output_name(i), "' must be input ", i, " '", input_name(i),
                     "' (Free works in place)");
    }
  }

  // The outputs are the inputs (enforced in place), so resetting the
  // outputs empties the very blobs the net named.
  void RunOnDevice() override {
    for (int i = 0; i < OutputSize(); ++i) OutputBlob(i)->Reset();
  }
};

REGISTER_CPU_OPERATOR(Free, FreeOp);

OPERATOR_SCHEMA(Free)
    .NumInputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) { return in == out; })
    .AllowInplace([](int in, int out) { return in == out; })
    .Input(0, "input", "blobs to free (any number)")
    .Output(0, "output", "the same blobs, now empty")
    .Doc("Frees the contents of its input blobs in place. The blobs stay in the "
         "workspace, empty, until an op writes them again.");

NO_GRADIENT(Free, "freeing memory is bookkeeping, not a function of its inputs");

}  // namespace
}  // namespace doppio
