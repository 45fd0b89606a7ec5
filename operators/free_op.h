// Free: releases what its blobs hold, so memory that is no longer needed
// goes back to the allocator mid-net (memonger's release_blobs_when_used and
// Parallelize's dynamic_memory_management insert it after a blob's last
// reader). One class for both devices: on CUDA the op runs under its
// CUDAContext, so the caching allocator sees the op's stream as the freeing
// stream and keeps the block from other streams until the work queued
// before the Free has finished; no device sync is needed here.
#pragma once

#include "core/operator.h"

namespace doppio {

template <class Context>
class FreeOp final : public Operator<Context> {
 public:
  FreeOp(const OperatorDef& def, Workspace* workspace) : Operator<Context>(def, workspace) {
    // Freeing an input while writing elsewhere would be a hidden side
    // effect on a blob the dependency analysis thinks is only read.
    for (int i = 0; i < this->OutputSize(); ++i) {
      DOPPIO_ENFORCE(this->input_name(i) == this->output_name(i), "op Free: output ", i, " '",
                     this->output_name(i), "' must be input ", i, " '", this->input_name(i),
                     "' (Free works in place)");
    }
  }

  // The outputs are the inputs (enforced in place), so resetting the
  // outputs empties the very blobs the net named.
  void RunOnDevice() override {
    for (int i = 0; i < this->OutputSize(); ++i) this->OutputBlob(i)->Reset();
  }
};

}  // namespace doppio
