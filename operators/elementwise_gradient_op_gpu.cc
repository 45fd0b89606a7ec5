// CUDA AddGradient, SubGradient, MulGradient, DivGradient and SumReduceLike:
// the CPU ops' broadcast plans and input slots (elementwise_binary_op.h),
// the per-element math of broadcast_gradient_functors.h through the kernels
// of elementwise_gradient_op_gpu.cu. float32 and float64, as the CUDA
// forward ops; schemas and gradient makers are the CPU ops'.
#include "operators/elementwise_gradient_op_gpu.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/elementwise_binary_op.h"
#include "operators/elementwise_ops_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace {

// Which forward values the gradient of `kind` reads.
struct GradientNeeds {
  bool a, b, c;
};

template <typename F>
constexpr GradientNeeds NeedsOf() {
  return {F::kNeedsA, F::kNeedsB, F::kNeedsC};
}

constexpr GradientNeeds NeedsOf(CudaBinaryGradientKind kind) {
  switch (kind) {
    case CudaBinaryGradientKind::kAdd: return NeedsOf<functors::AddGradient>();
    case CudaBinaryGradientKind::kSub: return NeedsOf<functors::SubGradient>();
    case CudaBinaryGradientKind::kMul: return NeedsOf<functors::MulGradient>();
    case CudaBinaryGradientKind::kDiv: return NeedsOf<functors::DivGradient>();
  }
  return {true, true, true};
}

// The CPU ops' input layout: (dC, A, B) for all four; DivGradient also
// (dC, A, B, C) and the older (B, C, dC).
GradientSlots SlotsOf(CudaBinaryGradientKind kind, int num_inputs) {
  if (kind != CudaBinaryGradientKind::kDiv) return {};
  if (num_inputs == 4) return {0, 1, 2, 3};
  return {2, -1, 0, 1};
}

functors::BroadcastReducer ReducerOnto(const OperatorBase& op, const std::vector<int64_t>& target,
                                       const std::vector<int64_t>& out) {
  functors::BroadcastReducer reducer;
  DOPPIO_ENFORCE(functors::MakeBroadcastReducer(target, out, &reducer),
                 "CUDA kernel: cannot reduce ", out, " onto ", target, " (at most ",
                 functors::BroadcastReducer::kMaxDims, " dims)");
  return reducer;
}

// <Op>Gradient(dC, A, B[, C]) -> (dA, dB), each summed over the dims along
// which its input was broadcast.
template <CudaBinaryGradientKind kKind>
class CudaBinaryGradientOp final : public Operator<CUDAContext> {
 public:
  CudaBinaryGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadBroadcastArgs(*this)),
        slots_(SlotsOf(kKind, InputSize())) {}

  void RunOnDevice() override {
    constexpr GradientNeeds kNeeds = NeedsOf(kKind);
    const Tensor& dC = Input(slots_.dc);
    // Without A (the three-input DivGradient), C has A's shape.
    const int a_slot = slots_.a >= 0 ? slots_.a : slots_.c;
    // Copies: an output may replace a tensor these refer to.
    const std::vector<int64_t> a_dims = Input(a_slot).dims();
    const std::vector<int64_t> b_dims = Input(slots_.b).dims();
    const BroadcastPlan plan = PlanBroadcast(*this, args_, {input_name(a_slot), a_dims},
                                             {input_name(slots_.b), b_dims});
    DOPPIO_ENFORCE(dC.dims() == plan.output_dims, "gradient '", input_name(slots_.dc),
                   "' has shape ", dC.dims(), " but the forward output has shape ",
                   plan.output_dims);
    functors::BroadcastIndexMapper mapper;
    DOPPIO_ENFORCE(functors::MakeBroadcastIndexMapper(plan.a, plan.b, plan.out, &mapper),
                   "CUDA kernel: broadcasting supports at most ",
                   functors::BroadcastIndexMapper::kMaxDims, " dims, got ", plan.out.size());
    const functors::BroadcastReducer onto_a = ReducerOnto(*this, plan.a, plan.out);
    const functors::BroadcastReducer onto_b = ReducerOnto(*this, plan.b, plan.out);
    EnforceInputOnDevice(*this, slots_.dc, dC, context_.device());
    const bool needed[] = {kNeeds.a, kNeeds.b, kNeeds.c};
    const int slots[] = {slots_.a, slots_.b, slots_.c};
    for (int k = 0; k < 3; ++k) {
      if (needed[k] && slots[k] >= 0) {
        EnforceInputOnDevice(*this, slots[k], Input(slots[k]), context_.device());
        EnforceSameType(*this, slots_.dc, dC, slots[k], Input(slots[k]));
      }
    }
    DispatchInput(FloatTypes{}, *this, slots_.dc, dC.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto values = [&](int k) -> const T* {
        return needed[k] && slots[k] >= 0 ? Input(slots[k]).template data<T>() : nullptr;
      };
      const T* dc = dC.data<T>();
      const T* a = values(0);
      const T* b = values(1);
      const T* c = values(2);
      // An output that is also an input (dC, or B in the three-input
      // DivGradient) must not be written while the kernels read it.
      bool aliased = false;
      for (int i = 0; i < InputSize(); ++i) {
        aliased = aliased || IsInputOutputAlias(i, 0) || IsInputOutputAlias(i, 1);
      }
      Tensor a_scratch(context_.device()), b_scratch(context_.device());
      Tensor* dA = aliased ? &a_scratch : Output(0);
      Tensor* dB = aliased ? &b_scratch : Output(1);
      dA->Resize(a_dims);
      dB->Resize(b_dims);
      LaunchBinaryGradientCuda(kKind, mapper, onto_a, 0, dc, a, b, c,
                               dA->template mutable_data<T>(), context_.cuda_stream());
      LaunchBinaryGradientCuda(kKind, mapper, onto_b, 1, dc, a, b, c,
                               dB->template mutable_data<T>(), context_.cuda_stream());
      if (aliased) {
        // This may free an input's storage while the kernels above still
        // read it; the caching allocator hands a block freed on this stream
        // to another only after the work queued here so far is done.
        *Output(0) = std::move(a_scratch);
        *Output(1) = std::move(b_scratch);
      }
    });
  }

 private:
  BroadcastArgs args_;
  GradientSlots slots_;
};

// SumReduceLike(A, B) -> C: A summed onto B's shape (legacy broadcasting).
// Only B's shape is read, so B may live anywhere.
class CudaSumReduceLikeOp final : public Operator<CUDAContext> {
 public:
  CudaSumReduceLikeOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadBroadcastArgs(*this, /*always_legacy=*/true)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    EnforceInputOnDevice(*this, 0, A, context_.device());
    const std::vector<int64_t> b_dims = Input(1).dims();
    const BroadcastPlan plan =
        PlanBroadcast(*this, args_, {input_name(0), A.dims()}, {input_name(1), b_dims});
    const functors::BroadcastReducer onto_b = ReducerOnto(*this, plan.b, plan.out);
    DispatchInput(FloatTypes{}, *this, 0, A.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = A.data<T>();
      Tensor* C = Output(0);
      C->Resize(b_dims);
      LaunchSumReduceLikeCuda(onto_b, a, C->template mutable_data<T>(), context_.cuda_stream());
    });
  }

 private:
  BroadcastArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(AddGradient, CudaBinaryGradientOp<CudaBinaryGradientKind::kAdd>);
REGISTER_CUDA_OPERATOR(SubGradient, CudaBinaryGradientOp<CudaBinaryGradientKind::kSub>);
REGISTER_CUDA_OPERATOR(MulGradient, CudaBinaryGradientOp<CudaBinaryGradientKind::kMul>);
REGISTER_CUDA_OPERATOR(DivGradient, CudaBinaryGradientOp<CudaBinaryGradientKind::kDiv>);
REGISTER_CUDA_OPERATOR(SumReduceLike, CudaSumReduceLikeOp);

}  // namespace doppio
