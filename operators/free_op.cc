// Free's CPU registration and schema; the op itself is operators/free_op.h
// (the CUDA registration is in free_op_gpu.cc).
#include "operators/free_op.h"

#include <climits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

REGISTER_CPU_OPERATOR(Free, FreeOp<CPUContext>);

OPERATOR_SCHEMA(Free)
    .NumInputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) { return in == out; })
    .AllowInplace([](int in, int out) { return in == out; })
    .Input(0, "input", "blobs to free (any number)")
    .Output(0, "output", "the same blobs, now empty")
    .Doc("Frees the contents of its input blobs in place. The blobs stay in the "
         "workspace, empty, until an op writes them again.");

NO_GRADIENT(Free, "freeing memory is bookkeeping, not a function of its inputs");

}  // namespace doppio
