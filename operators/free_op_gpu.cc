// Free on CUDA devices: the same op as on the CPU (free_op.h), run under a
// CUDAContext so the tensors it releases go back to the caching allocator
// ordered on the op's stream. The schema is the CPU op's.
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/free_op.h"

namespace doppio {

REGISTER_CUDA_OPERATOR(Free, FreeOp<CUDAContext>);

}  // namespace doppio
