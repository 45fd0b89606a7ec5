#include "operators/concat_split_op.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

// Maps `axis` onto [0, ndim) (negative counts from the end).
int CanonicalAxis(const std::string& op_type, int axis, int ndim,
                  const std::vector<int64_t>& dims) {
  DOPPIO_ENFORCE(axis >= -ndim && axis < ndim, "op ", op_type, ": axis ", axis,
                 " is out of range for ", ndim, " dims (input shape ", dims, ")");
  return axis < 0 ? axis + ndim : axis;
}

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= dims[i];
  return product;
}

}  // namespace

// ---- Concat ----

int ConcatAxisArgument(const std::string& op_type, const ArgumentHelper& args) {
  DOPPIO_ENFORCE(!(args.Has("axis") && args.Has("order")), "op ", op_type,
                 ": give either argument 'axis' or 'order', not both");
  if (args.Has("axis")) return args.GetSingle<int>("axis", -1);
  const std::string order = args.GetSingle<std::string>("order", "NCHW");
  if (order == "NCHW") return 1;
  if (order == "NHWC") return 3;
  DOPPIO_THROW("op ", op_type, ": argument 'order' is '", order, "', not NCHW or NHWC");
}

ConcatArgs ReadConcatArgs(const OperatorBase& op) {
  ConcatArgs args;
  args.axis = ConcatAxisArgument(op.type(), ArgumentHelper(op.def()));
  args.add_axis = op.HasArgument("axis") && op.GetSingleArgument<int>("add_axis", 0) != 0;
  return args;
}

ConcatLayout PlanConcat(const OperatorBase& op, const std::vector<const Tensor*>& inputs,
                        const ConcatArgs& args, Tensor* split_info) {
  const int axis_argument = args.axis;
  const bool add_axis = args.add_axis;
  const Tensor& X0 = *inputs.at(0);
  const std::vector<int64_t>& dims0 = X0.dims();
  const int ndim = X0.ndim();
  const int axis = CanonicalAxis(op.type(), axis_argument, ndim + (add_axis ? 1 : 0), dims0);
  const int count = static_cast<int>(inputs.size());
  for (int i = 1; i < count; ++i) {
    const Tensor& Xi = *inputs[i];
    EnforceSameType(op, 0, X0, i, Xi);
    bool compatible = Xi.ndim() == ndim;
    for (int d = 0; compatible && d < ndim; ++d) {
      compatible = Xi.dim(d) == dims0[d] || (d == axis && !add_axis);
    }
    DOPPIO_ENFORCE(compatible, "input ", i, " ('", op.input_name(i), "') has shape ", Xi.dims(),
                   " but input 0 ('", op.input_name(0), "') has shape ", dims0,
                   "; they may differ only along axis ", axis,
                   add_axis ? " (and not at all with add_axis=1)" : "");
  }
  split_info->Resize({count});
  int32_t* sizes = split_info->mutable_data<int32_t>();
  ConcatLayout layout;
  for (int i = 0; i < count; ++i) {
    const int64_t size = add_axis ? 1 : inputs[i]->dim(axis);
    DOPPIO_ENFORCE(size <= INT32_MAX, "input '", op.input_name(i), "' is too large along axis ",
                   axis, " for split_info");
    sizes[i] = static_cast<int32_t>(size);
    layout.total += size;
  }
  layout.out_dims = dims0;
  if (add_axis) {
    layout.out_dims.insert(layout.out_dims.begin() + axis, layout.total);
  } else {
    layout.out_dims[axis] = layout.total;
  }
  layout.before = Product(dims0, 0, axis);
  layout.after = Product(dims0, add_axis ? axis : axis + 1, ndim);
  return layout;
}

ConcatOp::ConcatOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadConcatArgs(*this)) {}

void ConcatOp::RunOnDevice() {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < InputSize(); ++i) inputs.push_back(&Input(i));
  Tensor* split_info = Output(1);
  const ConcatLayout layout = PlanConcat(*this, inputs, args_, split_info);
  const int32_t* sizes = split_info->data<int32_t>();
  Tensor* Y = Output(0);
  Y->Resize(layout.out_dims);
  DispatchDataType(inputs[0]->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = Y->mutable_data<T>();
    std::vector<const T*> from;
    for (int i = 0; i < InputSize(); ++i) from.push_back(Input(i).template data<T>());
    // Output row by output row, so each thread writes one contiguous range:
    // an NHWC concat along the channels has a row per pixel, each a few
    // inputs' short runs of channels.
    const int64_t row = layout.total * layout.after;
    const auto copy_rows = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* to = y + r * row;
        for (size_t i = 0; i < from.size(); ++i) {
          const int64_t width = sizes[i] * layout.after;
          to = std::copy(from[i] + r * width, from[i] + (r + 1) * width, to);
        }
      }
    };
    if constexpr (std::is_arithmetic<T>::value) {
      ParallelFor(layout.before, copy_rows, RowsPerThread(row));
    } else {
      copy_rows(0, layout.before);  // copying strings may throw: not in a thread region
    }
  });
}

// ---- Split ----

SplitOp::SplitOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      args_(ReadConcatArgs(*this)),
      split_(GetRepeatedArgument<int64_t>("split")) {
  if (InputSize() == 2) {
    DOPPIO_ENFORCE(split_.empty(), "the sizes are input '", input_name(1),
                   "'; do not also pass argument 'split'");
  } else if (!split_.empty()) {
    DOPPIO_ENFORCE(static_cast<int>(split_.size()) == OutputSize(), "argument 'split' ", split_,
                   " has ", split_.size(), " sizes for ", OutputSize(), " outputs");
  }
}

std::vector<int64_t> SplitOp::Sizes(int64_t axis_dim) {
  std::vector<int64_t> sizes = split_;
  if (InputSize() == 2) {
    const Tensor& split = Input(1);
    DOPPIO_ENFORCE(split.numel() == OutputSize(), "split input '", input_name(1), "' has ",
                   split.numel(), " sizes for ", OutputSize(), " outputs");
    DispatchTypes(TypeList<int32_t, int64_t>{}, input_name(1), split.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I* values = split.data<I>();
      sizes.assign(values, values + split.numel());
    });
  } else if (sizes.empty() && !args_.add_axis) {
    DOPPIO_ENFORCE(axis_dim % OutputSize() == 0,
                   "without 'split', the "
                   "axis size ",
                   axis_dim, " must divide into ", OutputSize(), " equal parts");
    sizes.assign(OutputSize(), axis_dim / OutputSize());
  }
  if (args_.add_axis) {
    // Each output is one slice along the axis, which it drops.
    DOPPIO_ENFORCE(axis_dim == OutputSize(),
                   "with add_axis=1 the axis "
                   "size ",
                   axis_dim, " must equal the number of outputs ", OutputSize());
    return std::vector<int64_t>(OutputSize(), 1);
  }
  for (int64_t size : sizes) {
    DOPPIO_ENFORCE(size >= 0, "split sizes ", sizes, " include a negative size");
  }
  const int64_t sum = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  DOPPIO_ENFORCE(sum == axis_dim, "split sizes ", sizes, " add up to ", sum, " but the input has ",
                 axis_dim, " along the axis");
  return sizes;
}

void SplitOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> dims = X.dims();
  const int axis = CanonicalAxis(type(), args_.axis, X.ndim(), dims);
  const std::vector<int64_t> sizes = Sizes(dims[axis]);
  const int64_t before = Product(dims, 0, axis);
  const int64_t after = Product(dims, axis + 1, dims.size());
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    std::vector<T*> to;
    std::vector<int64_t> widths;
    for (int i = 0; i < OutputSize(); ++i) {
      std::vector<int64_t> out_dims = dims;
      if (args_.add_axis) {
        out_dims.erase(out_dims.begin() + axis);
      } else {
        out_dims[axis] = sizes[i];
      }
      Tensor* Y = Output(i);
      Y->Resize(out_dims);
      to.push_back(Y->mutable_data<T>());
      widths.push_back(sizes[i] * after);
    }
    // Input row by input row, as Concat writes output rows: an NHWC split
    // along the channels (Concat's gradient) has a row per pixel.
    const int64_t row = dims[axis] * after;
    const auto copy_rows = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* from = x + r * row;
        for (size_t i = 0; i < to.size(); ++i) {
          std::copy(from, from + widths[i], to[i] + r * widths[i]);
          from += widths[i];
        }
      }
    };
    if constexpr (std::is_arithmetic<T>::value) {
      ParallelFor(before, copy_rows, RowsPerThread(row));
    } else {
      copy_rows(0, before);  // copying strings may throw: not in a thread region
    }
  });
}

REGISTER_CPU_OPERATOR(Concat, ConcatOp);
REGISTER_CPU_OPERATOR(Split, SplitOp);

namespace {

std::vector<TensorShape> ConcatInference(const OperatorDef& def,
                                         const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const bool add_axis = args.Has("axis") && args.GetSingle<int>("add_axis", 0) != 0;
  std::vector<int64_t> dims(in.at(0).dims().begin(), in.at(0).dims().end());
  const int axis = CanonicalAxis(def.type(), ConcatAxisArgument(def.type(), args),
                                 dims.size() + (add_axis ? 1 : 0), dims);
  if (add_axis) {
    dims.insert(dims.begin() + axis, static_cast<int64_t>(in.size()));
  } else {
    for (size_t i = 1; i < in.size(); ++i) {
      DOPPIO_ENFORCE(in[i].dims_size() == static_cast<int>(dims.size()), "op ", def.type(),
                     ": input ", i, " has ", in[i].dims_size(), " dims, input 0 ", dims.size());
      dims[axis] += in[i].dims(axis);
    }
  }
  TensorShape result, split_info;
  result.set_data_type(in[0].data_type());
  for (int64_t d : dims) result.add_dims(d);
  split_info.set_data_type(TensorProto::INT32);
  split_info.add_dims(static_cast<int64_t>(in.size()));
  return {result, split_info};
}

std::vector<TensorShape> SplitInference(const OperatorDef& def,
                                        const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const int outputs = def.output_size();
  std::vector<TensorShape> out(outputs);
  for (TensorShape& shape : out) shape.set_data_type(in.at(0).data_type());
  if (in.size() > 1) {
    // The sizes are data.
    for (TensorShape& shape : out) shape.set_unknown_shape(true);
    return out;
  }
  const bool add_axis = args.Has("axis") && args.GetSingle<int>("add_axis", 0) != 0;
  const std::vector<int64_t> dims(in[0].dims().begin(), in[0].dims().end());
  const int axis = CanonicalAxis(def.type(), ConcatAxisArgument(def.type(), args), dims.size(), dims);
  std::vector<int64_t> sizes = args.GetRepeated<int64_t>("split");
  if (sizes.empty()) sizes.assign(outputs, add_axis ? 1 : dims[axis] / outputs);
  for (int i = 0; i < outputs; ++i) {
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
      if (d != axis) {
        out[i].add_dims(dims[d]);
      } else if (!add_axis) {
        out[i].add_dims(sizes.at(i));
      }
    }
  }
  return out;
}

}  // namespace

OPERATOR_SCHEMA(Concat)
    .NumInputs(1, 1 << 30)
    .CostInferenceFunction(CostInferenceForConcat)
    .NumOutputs(2)
    .TensorInferenceFunction(ConcatInference)
    .Arg("axis", "(int, default -1) the axis to join along; negative counts from the end")
    .Arg("order", "(string, default NCHW) without 'axis': join along C of this layout")
    .Arg("add_axis", "(int, default 0) 1 stacks the inputs along a new dim at 'axis'")
    .Input(0, "data_0", "first tensor; all inputs share one type and all dims but the axis")
    .Output(0, "concat_result", "the inputs joined along the axis")
    .Output(1, "split_info", "1-D int32: each input's size along the axis")
    .Doc("Concatenates its inputs along an axis (Caffe2's default: axis 1, the "
         "channels of NCHW).");

OPERATOR_SCHEMA(Split)
    .NumInputs(1, 2)
    .NumOutputs(1, 1 << 30)
    .TensorInferenceFunction(SplitInference)
    .Arg("axis", "(int, default -1) the axis to split along; negative counts from the end")
    .Arg("order", "(string, default NCHW) without 'axis': split along C of this layout")
    .Arg("split", "(list of ints) each output's size along the axis; not with input 1")
    .Arg("add_axis", "(int, default 0) 1 splits into single slices and drops the axis "
                     "(the gradient of Concat with add_axis=1)")
    .Input(0, "input", "tensor to split")
    .Input(1, "split", "(optional) 1-D int32/int64 tensor of the output sizes")
    .Output(0, "output_0", "the first part; one output per part")
    .Doc("Splits the input along an axis into parts of the given sizes, or into "
         "equal parts.");

namespace {

class GetConcatGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (!HasGO(0)) return {};
    std::vector<std::string> grads;
    for (int i = 0; i < Def().input_size(); ++i) grads.push_back(GI(i));
    return SingleGradientDef("Split", "", {GO(0), O(1)}, grads, Def().arg());
  }
};

}  // namespace

std::vector<OperatorDef> SplitGradientMaker::GetGradientDefs() {
  bool any = false;
  for (int i = 0; i < Def().output_size(); ++i) any = any || HasGO(i);
  if (!any) return {};
  std::vector<OperatorDef> ops;
  std::vector<std::string> parts;
  for (int i = 0; i < Def().output_size(); ++i) {
    if (HasGO(i)) {
      parts.push_back(GO(i));
      continue;
    }
    // An unused part contributes zeros (ConstantFill makes float32).
    const std::string zeros = "_" + O(i) + "_grad_zeros";
    OperatorDef fill = SingleGradientDef("ConstantFill", "", {O(i)}, {zeros})[0];
    Argument* value = fill.add_arg();
    value->set_name("value");
    value->set_f(0.0f);
    ops.push_back(fill);
    parts.push_back(zeros);
  }
  google::protobuf::RepeatedPtrField<Argument> args;
  bool axis_given = false;
  for (const Argument& arg : Def().arg()) {
    if (arg.name() == "split") continue;
    axis_given = axis_given || arg.name() == "axis" || arg.name() == "order";
    *args.Add() = arg;
  }
  if (!axis_given && DefaultAxis() != 1) {
    Argument* axis = args.Add();
    axis->set_name("axis");
    axis->set_i(DefaultAxis());
  }
  ops.push_back(
      SingleGradientDef("Concat", "", parts, {GI(0), "_" + GI(0) + "_dims"}, args)[0]);
  return ops;
}

REGISTER_GRADIENT(Concat, GetConcatGradient);
REGISTER_GRADIENT(Split, SplitGradientMaker);

}  // namespace doppio
