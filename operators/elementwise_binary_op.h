// Binary elementwise ops C = f(A, B) under numpy or Caffe2's legacy
// broadcasting (see elementwise_ops_utils.h), and their gradients, written
// once as templates over a small functor. Add, Sub, Mul and Div live in
// elementwise_binary_op.cc; the comparison and logical ops in
// comparison_op.cc.
//
// A forward functor provides
//   using Types = TypeList<...>;               the input dtypes it accepts
//   template <typename T> using Output = ...;  C's element type (T by default)
//   template <typename T> Output<T> operator()(T a, T b) const;
//   template <typename T> static void Validate(const OperatorBase&, const Tensor& B);
//     (optional: rejects inputs the kernel cannot take, e.g. an integer 0
//      divisor)
// A gradient functor additionally provides
//   using GradTypes = TypeList<...>;
//   static constexpr bool kNeedsA, kNeedsB, kNeedsC;  which values it reads
//   static GradientSlots Slots(int num_inputs);        where dC, A, B, C are
//   template <typename T> void Gradient(T dc, T a, T b, T c, T* da, T* db) const;
//     the contributions of one output element to dA and dB; the op sums
//     them over the dims along which each input was broadcast.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"
#include "operators/elementwise_ops_utils.h"
#include "operators/op_type_dispatch.h"
#include "proto/doppio.pb.h"

namespace doppio {

struct BinaryFunctorBase {
  template <typename T>
  using Output = T;
  template <typename T>
  static void Validate(const OperatorBase& /*op*/, const Tensor& /*B*/) {}
};

// Input positions of a gradient op; -1 when the op is not given that tensor.
struct GradientSlots {
  int dc = 0;
  int a = 1;
  int b = 2;
  int c = -1;
};

// The plan for the forward op, after checking that an in-place output can
// hold the result: an input may be overwritten only when the result has
// its shape.
BroadcastPlan PlanBinaryOutput(const OperatorBase& op, const BroadcastArgs& args,
                               const Tensor& A, const Tensor& B);

// Shape inference of a broadcasting binary op; `bool_output` for comparisons.
std::vector<TensorShape> BroadcastShapeInference(const OperatorDef& def,
                                                 const std::vector<TensorShape>& in,
                                                 bool bool_output);

template <class Functor>
class BinaryElementwiseOp final : public Operator<CPUContext> {
 public:
  BinaryElementwiseOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), args_(ReadBroadcastArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    EnforceSameType(*this, 0, A, 1, B);
    const BroadcastPlan plan = PlanBinaryOutput(*this, args_, A, B);
    DispatchTypes(typename Functor::Types{}, input_name(0), A.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using R = typename Functor::template Output<T>;
      Functor::template Validate<T>(*this, B);
      const T* a = A.data<T>();
      const T* b = B.data<T>();
      Tensor* C = Output(0);
      C->Resize(plan.output_dims);
      BroadcastBinary(plan, a, b, C->mutable_data<R>(), Functor());
    });
  }

 private:
  BroadcastArgs args_;
};

// Runs the gradient functor over the plan and reduces each input's part to
// that input's (plan) shape. a, b, c may be null when the functor does not
// read them; da and db must not alias dc.
template <typename T, class Functor>
void ComputeBinaryGradient(const BroadcastPlan& plan, const Functor& functor, const T* dc,
                           const T* a, const T* b, const T* c, T* da, T* db) {
  const int64_t out_count = CheckedNumElements(plan.out);
  const bool a_full = CheckedNumElements(plan.a) == out_count;
  const bool b_full = CheckedNumElements(plan.b) == out_count;
  auto at = [](const T* values, int64_t i) { return values ? values[i] : T(0); };
  if (a_full && b_full) {
    for (int64_t i = 0; i < out_count; ++i) {
      functor.Gradient(dc[i], at(a, i), at(b, i), at(c, i), &da[i], &db[i]);
    }
    return;
  }
  // A broadcast input collects one part per output element first.
  std::vector<T> a_parts(a_full ? 0 : out_count);
  std::vector<T> b_parts(b_full ? 0 : out_count);
  T* a_target = a_full ? da : a_parts.data();
  T* b_target = b_full ? db : b_parts.data();
  broadcast_detail::ForEachBroadcast(
      plan.a, plan.b, plan.out, [&](int64_t i, int64_t ia, int64_t ib) {
        functor.Gradient(dc[i], at(a, ia), at(b, ib), at(c, i), &a_target[i], &b_target[i]);
      });
  if (!a_full) SumToBroadcastShape(plan.out, a_parts.data(), plan.a, da);
  if (!b_full) SumToBroadcastShape(plan.out, b_parts.data(), plan.b, db);
}

template <class Functor>
class BinaryElementwiseGradientOp final : public Operator<CPUContext> {
 public:
  BinaryElementwiseGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        args_(ReadBroadcastArgs(*this)),
        slots_(Functor::Slots(InputSize())) {}

  void RunOnDevice() override {
    const Tensor& dC = Input(slots_.dc);
    const Tensor& B = Input(slots_.b);
    // Without A (Caffe2's three-input DivGradient), C has A's shape.
    const int a_slot = slots_.a >= 0 ? slots_.a : slots_.c;
    // Copies: an output may replace a tensor these refer to.
    const std::vector<int64_t> a_dims = Input(a_slot).dims();
    const std::vector<int64_t> b_dims = B.dims();
    const BroadcastPlan plan = PlanBroadcast(*this, args_, {input_name(a_slot), a_dims},
                                             {input_name(slots_.b), b_dims});
    DOPPIO_ENFORCE(dC.dims() == plan.output_dims, "gradient '", input_name(slots_.dc),
                   "' has shape ", dC.dims(), " but the forward output has shape ",
                   plan.output_dims);
    DispatchTypes(typename Functor::GradTypes{}, input_name(slots_.dc), dC.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(plan, a_dims, b_dims);
    });
  }

 private:
  // Values of input `slot`, which must hold T like dC.
  template <typename T>
  const T* Values(int slot, bool needed) {
    if (!needed || slot < 0) return nullptr;
    EnforceSameType(*this, slot, Input(slot), slots_.dc, Input(slots_.dc));
    return Input(slot).template data<T>();
  }

  template <typename T>
  void Run(const BroadcastPlan& plan, const std::vector<int64_t>& a_dims,
           const std::vector<int64_t>& b_dims) {
    const T* dc = Input(slots_.dc).template data<T>();
    const T* a = Values<T>(slots_.a, Functor::kNeedsA);
    const T* b = Values<T>(slots_.b, Functor::kNeedsB);
    const T* c = Values<T>(slots_.c, Functor::kNeedsC);
    // An output that is also an input (dC, or B in the three-input
    // DivGradient) must not be written while that input is read.
    bool aliased = false;
    for (int i = 0; i < InputSize(); ++i) {
      aliased = aliased || IsInputOutputAlias(i, 0) || IsInputOutputAlias(i, 1);
    }
    Tensor a_scratch, b_scratch;
    Tensor* dA = aliased ? &a_scratch : Output(0);
    Tensor* dB = aliased ? &b_scratch : Output(1);
    dA->Resize(a_dims);
    dB->Resize(b_dims);
    ComputeBinaryGradient(plan, Functor(), dc, a, b, c, dA->mutable_data<T>(),
                          dB->mutable_data<T>());
    if (aliased) {
      *Output(0) = std::move(a_scratch);
      *Output(1) = std::move(b_scratch);
    }
  }

  BroadcastArgs args_;
  GradientSlots slots_;
};

// Schema parts shared by the broadcasting binary ops.
void BroadcastArgsSchema(OpSchema& schema);

}  // namespace doppio
