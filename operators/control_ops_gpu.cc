// The control ops under a CUDA device option: the same ops (control_ops.h);
// If and While read a condition that lives on the device through the op's
// stream. The schemas are the CPU ops'.
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/control_ops.h"

namespace doppio {

REGISTER_CUDA_OPERATOR(CreateScope, CreateScopeOp);
REGISTER_CUDA_OPERATOR(HasScope, HasScopeOp);
REGISTER_CUDA_OPERATOR(Do, DoOp);
REGISTER_CUDA_OPERATOR(If, IfOp<CUDAContext>);
REGISTER_CUDA_OPERATOR(While, WhileOp<CUDAContext>);

}  // namespace doppio
