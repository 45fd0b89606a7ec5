#include "operators/reduce_front_back_op.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

FrontBackSplit SplitForReduce(const std::vector<int64_t>& dims, int num_reduce_dim,
                              FrontBackSide side) {
  const int rank = static_cast<int>(dims.size());
  DOPPIO_ENFORCE(num_reduce_dim >= 0 && num_reduce_dim <= rank, "num_reduce_dim (", num_reduce_dim,
                 ") must be in [0, ", rank, "], the input's rank");
  const int split = side == FrontBackSide::kFront ? num_reduce_dim : rank - num_reduce_dim;
  FrontBackSplit result;
  for (int d = 0; d < rank; ++d) {
    const bool reduced = side == FrontBackSide::kFront ? d < split : d >= split;
    (reduced ? result.reduced : result.kept) *= dims[d];
    if (!reduced) result.output_dims.push_back(dims[d]);
  }
  return result;
}

namespace {

// Element (r, k) of the [reduced, kept] view: rows are reduced for the
// front ops, columns for the back ops.
template <FrontBackSide kSide>
int64_t Offset(int64_t r, int64_t k, const FrontBackSplit& s) {
  return kSide == FrontBackSide::kFront ? r * s.kept + k : k * s.reduced + r;
}

// The length of output k: lengths[k], checked, or the whole reduced extent.
int64_t LengthOf(const Tensor* lengths, int64_t k, const FrontBackSplit& s, bool need_one,
                 const OperatorBase& op, int index) {
  if (lengths == nullptr) return s.reduced;
  const int64_t length = lengths->data<int32_t>()[k];
  DOPPIO_ENFORCE(length >= (need_one ? 1 : 0) && length <= s.reduced, "'", op.input_name(index),
                 "'[", k, "] is ", length, "; lengths must be in [", need_one ? 1 : 0, ", ",
                 s.reduced, "] (the reduced extent)");
  return length;
}

const Tensor* CheckedLengths(const OperatorBase& op, int index, const FrontBackSplit& s) {
  if (op.InputSize() <= index) return nullptr;
  const Tensor& lengths = TensorInput(op, index);
  EnforceInputType(TypeList<int32_t>{}, op, index, lengths.dtype());
  DOPPIO_ENFORCE(lengths.numel() == s.kept, "'", op.input_name(index), "' has ", lengths.numel(),
                 " lengths; the output has ", s.kept, " elements");
  return &lengths;
}

}  // namespace

template <FrontBackSide kSide, FrontBackReducer kKind>
ReduceFrontBackOp<kSide, kKind>::ReduceFrontBackOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      num_reduce_dim_(GetSingleArgument<int>("num_reduce_dim", 1)) {}

template <FrontBackSide kSide, FrontBackReducer kKind>
void ReduceFrontBackOp<kSide, kKind>::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceInputType(TypeList<float>{}, *this, 0, X.dtype());
  const FrontBackSplit s = SplitForReduce(X.dims(), num_reduce_dim_, kSide);
  const Tensor* lengths = CheckedLengths(*this, 1, s);
  Tensor* Y = Output(0);
  Y->Resize(s.output_dims);
  const float* x = X.data<float>();
  float* y = Y->mutable_data<float>();
  for (int64_t k = 0; k < s.kept; ++k) {
    const int64_t length = LengthOf(lengths, k, s, kKind != FrontBackReducer::kSum, *this, 1);
    DOPPIO_ENFORCE(kKind == FrontBackReducer::kSum || length > 0, "cannot take the ",
                   kKind == FrontBackReducer::kMax ? "max" : "mean", " of an empty reduction (",
                   X.DebugString(), ", num_reduce_dim ", num_reduce_dim_, ")");
    double sum = 0.0;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t r = 0; r < length; ++r) {
      const float value = x[Offset<kSide>(r, k, s)];
      sum += value;
      max = std::max(max, value);
    }
    y[k] = kKind == FrontBackReducer::kMax    ? max
           : kKind == FrontBackReducer::kMean ? static_cast<float>(sum / length)
                                              : static_cast<float>(sum);
  }
}

template <FrontBackSide kSide, FrontBackReducer kKind>
ReduceFrontBackGradientOp<kSide, kKind>::ReduceFrontBackGradientOp(const OperatorDef& def,
                                                                   Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      num_reduce_dim_(GetSingleArgument<int>("num_reduce_dim", 1)) {}

template <FrontBackSide kSide, FrontBackReducer kKind>
void ReduceFrontBackGradientOp<kSide, kKind>::RunOnDevice() {
  const Tensor& dY = Input(0);
  EnforceInputType(TypeList<float>{}, *this, 0, dY.dtype());
  const Tensor& second = Input(1);
  // Sum and Mean take X or X's shape (int64 dims), as Caffe2.
  std::vector<int64_t> dims = second.dims();
  const bool given_shape = kKind != FrontBackReducer::kMax && second.dtype() == DataType::kInt64 &&
                           second.dims().size() == 1;
  if (given_shape) dims.assign(second.data<int64_t>(), second.data<int64_t>() + second.numel());
  const FrontBackSplit s = SplitForReduce(dims, num_reduce_dim_, kSide);
  DOPPIO_ENFORCE(dY.numel() == s.kept, "'", input_name(0), "' has ", dY.numel(),
                 " elements; the reduction has ", s.kept, " outputs");
  const int lengths_index = kKind == FrontBackReducer::kMax ? 3 : 2;
  const Tensor* lengths = CheckedLengths(*this, lengths_index, s);
  const float* x = nullptr;
  const float* y = nullptr;
  if (kKind == FrontBackReducer::kMax) {
    EnforceInputType(TypeList<float>{}, *this, 1, second.dtype());
    const Tensor& Y = Input(2);
    DOPPIO_ENFORCE(Y.numel() == s.kept, "'", input_name(2), "' has ", Y.numel(),
                   " elements; the reduction has ", s.kept, " outputs");
    x = second.data<float>();
    y = Y.data<float>();
  }
  Tensor* dX = Output(0);
  dX->Resize(dims);
  float* dx = dX->mutable_data<float>();
  std::fill(dx, dx + dX->numel(), 0.f);
  const float* dy = dY.data<float>();
  for (int64_t k = 0; k < s.kept; ++k) {
    const int64_t length = LengthOf(lengths, k, s, false, *this, lengths_index);
    for (int64_t r = 0; r < length; ++r) {
      const int64_t at = Offset<kSide>(r, k, s);
      if (kKind == FrontBackReducer::kSum) dx[at] = dy[k];
      if (kKind == FrontBackReducer::kMean) dx[at] = dy[k] / static_cast<float>(length);
      if (kKind == FrontBackReducer::kMax && x[at] == y[k]) dx[at] = dy[k];
    }
  }
}

// ---- registration ----

#define DOPPIO_REDUCE_FRONT_BACK_(name, side, kind)                                            \
  REGISTER_CPU_OPERATOR(name, ReduceFrontBackOp<FrontBackSide::side, FrontBackReducer::kind>); \
  REGISTER_CPU_OPERATOR(name##Gradient,                                                        \
                        ReduceFrontBackGradientOp<FrontBackSide::side, FrontBackReducer::kind>)
DOPPIO_REDUCE_FRONT_BACK_(ReduceFrontSum, kFront, kSum);
DOPPIO_REDUCE_FRONT_BACK_(ReduceFrontMean, kFront, kMean);
DOPPIO_REDUCE_FRONT_BACK_(ReduceFrontMax, kFront, kMax);
DOPPIO_REDUCE_FRONT_BACK_(ReduceBackSum, kBack, kSum);
DOPPIO_REDUCE_FRONT_BACK_(ReduceBackMean, kBack, kMean);
DOPPIO_REDUCE_FRONT_BACK_(ReduceBackMax, kBack, kMax);
#undef DOPPIO_REDUCE_FRONT_BACK_

namespace {

void ForwardSchema(OpSchema& s, FrontBackSide side, const char* what) {
  const bool front = side == FrontBackSide::kFront;
  s.NumInputs(1, 2)
      .NumOutputs(1)
      .TensorInferenceFunction([side](const OperatorDef& def, const std::vector<TensorShape>& in) {
        const std::vector<int64_t> dims(in.at(0).dims().begin(), in.at(0).dims().end());
        const FrontBackSplit split =
            SplitForReduce(dims, ArgumentHelper(def).GetSingle<int>("num_reduce_dim", 1), side);
        TensorShape out;
        out.set_data_type(in.at(0).data_type());
        for (int64_t d : split.output_dims) out.add_dims(d);
        return std::vector<TensorShape>{out};
      })
      .Arg("num_reduce_dim", front ? "(int, default 1) how many leading dims to reduce"
                                   : "(int, default 1) how many trailing dims to reduce")
      .Input(0, "X", "float tensor")
      .Input(1, "lengths",
             "(optional) int32, one per output element: reduce only the first "
             "`length` entries")
      .Output(0, "Y", front ? "X's trailing dims" : "X's leading dims")
      .Doc(MakeString("The ", what, " over the ", front ? "first" : "last",
                      " num_reduce_dim dims of X (see operators/reduce_front_back_op.h)."));
}

void GradientSchema(OpSchema& s, bool max) {
  s.NumInputs(max ? 3 : 2, max ? 4 : 3)
      .NumOutputs(1)
      .Arg("num_reduce_dim", "the forward op's")
      .Input(0, "dY", "gradient of the forward op's output")
      .Input(1, "X",
             max ? "the forward op's input"
                 : "the forward op's input, or its shape "
                   "(int64 dims)")
      .Output(0, "dX", "gradient of X");
}

template <bool kMax>
class GetReduceFrontBackGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs = {GO(0), I(0)};
    if (kMax) inputs.push_back(O(0));
    if (Def().input_size() > 1) inputs.push_back(I(1));
    return SingleGradientDef(Def().type() + "Gradient", "", inputs, {GI(0)}, Def().arg());
  }
};

constexpr const char kSecondOrder[] = "it is a gradient op; second derivatives are not supported";

}  // namespace

OPERATOR_SCHEMA(ReduceFrontSum).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kFront, "sum");
});
OPERATOR_SCHEMA(ReduceFrontMean).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kFront, "mean");
});
OPERATOR_SCHEMA(ReduceFrontMax).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kFront, "max");
});
OPERATOR_SCHEMA(ReduceBackSum).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kBack, "sum");
});
OPERATOR_SCHEMA(ReduceBackMean).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kBack, "mean");
});
OPERATOR_SCHEMA(ReduceBackMax).Apply([](OpSchema& s) {
  ForwardSchema(s, FrontBackSide::kBack, "max");
});
OPERATOR_SCHEMA(ReduceFrontSumGradient).Apply([](OpSchema& s) { GradientSchema(s, false); });
OPERATOR_SCHEMA(ReduceFrontMeanGradient).Apply([](OpSchema& s) { GradientSchema(s, false); });
OPERATOR_SCHEMA(ReduceFrontMaxGradient).Apply([](OpSchema& s) { GradientSchema(s, true); });
OPERATOR_SCHEMA(ReduceBackSumGradient).Apply([](OpSchema& s) { GradientSchema(s, false); });
OPERATOR_SCHEMA(ReduceBackMeanGradient).Apply([](OpSchema& s) { GradientSchema(s, false); });
OPERATOR_SCHEMA(ReduceBackMaxGradient).Apply([](OpSchema& s) { GradientSchema(s, true); });

REGISTER_GRADIENT(ReduceFrontSum, GetReduceFrontBackGradient<false>);
REGISTER_GRADIENT(ReduceFrontMean, GetReduceFrontBackGradient<false>);
REGISTER_GRADIENT(ReduceFrontMax, GetReduceFrontBackGradient<true>);
REGISTER_GRADIENT(ReduceBackSum, GetReduceFrontBackGradient<false>);
REGISTER_GRADIENT(ReduceBackMean, GetReduceFrontBackGradient<false>);
REGISTER_GRADIENT(ReduceBackMax, GetReduceFrontBackGradient<true>);
NO_GRADIENT(ReduceFrontSumGradient, kSecondOrder);
NO_GRADIENT(ReduceFrontMeanGradient, kSecondOrder);
NO_GRADIENT(ReduceFrontMaxGradient, kSecondOrder);
NO_GRADIENT(ReduceBackSumGradient, kSecondOrder);
NO_GRADIENT(ReduceBackMeanGradient, kSecondOrder);
NO_GRADIENT(ReduceBackMaxGradient, kSecondOrder);

}  // namespace doppio
