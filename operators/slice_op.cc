#include "operators/slice_op.h"

#include <algorithm>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

SliceBounds ResolveBounds(const std::string& op_type, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& starts,
                          const std::vector<int64_t>& ends) {
  DOPPIO_ENFORCE(starts.size() == ends.size(), "op ", op_type, ": starts ", starts,
                 " and ends ", ends, " differ in length");
  DOPPIO_ENFORCE(starts.size() <= dims.size(), "op ", op_type, ": starts ", starts,
                 " has more entries than the input of shape ", dims, " has dims");
  SliceBounds bounds;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t start = 0, end = dims[i];
    if (i < starts.size()) {
      start = starts[i] < 0 ? dims[i] + 1 + starts[i] : std::min(starts[i], dims[i]);
      end = ends[i] < 0 ? dims[i] + 1 + ends[i] : std::min(ends[i], dims[i]);
      DOPPIO_ENFORCE(start >= 0 && end >= 0 && start <= end, "op ", op_type,
                     ": slice [", starts[i], ", ", ends[i], ") of dim ", i, " (size ", dims[i],
                     ") is out of range: it resolves to [", start, ", ", end, ")");
    }
    bounds.start.push_back(start);
    bounds.size.push_back(end - start);
  }
  return bounds;
}

// Visits (offset in the full tensor of `dims`, offset in the block) for each
// innermost row of the block, with the row's length.
template <typename Visit>
void ForEachSliceRow(const std::vector<int64_t>& dims, const SliceBounds& bounds,
                     Visit&& visit) {
  const int ndim = static_cast<int>(dims.size());
  if (CheckedNumElements(bounds.size) == 0) return;
  if (ndim == 0) {
    visit(0, 0, 1);
    return;
  }
  std::vector<int64_t> strides(ndim, 1);
  for (int d = ndim - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  int64_t offset = 0;
  for (int d = 0; d < ndim; ++d) offset += bounds.start[d] * strides[d];
  const int64_t row = bounds.size[ndim - 1];
  const int64_t total = CheckedNumElements(bounds.size);
  std::vector<int64_t> index(ndim, 0);
  for (int64_t k = 0; k < total; k += row) {
    visit(offset, k, row);
    for (int d = ndim - 2; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < bounds.size[d]) break;
      offset -= strides[d] * bounds.size[d];
      index[d] = 0;
    }
  }
}

}  // namespace

SliceOpBase::SliceOpBase(const OperatorDef& def, Workspace* workspace, int bounds_input)
    : Operator<CPUContext>(def, workspace),
      bounds_input_(bounds_input),
      starts_(GetRepeatedArgument<int64_t>("starts")),
      ends_(GetRepeatedArgument<int64_t>("ends")) {
  if (bounds_input_ < 0) {
    DOPPIO_ENFORCE(HasArgument("starts") && HasArgument("ends"),
                   "give the bounds as arguments 'starts' and 'ends' or as inputs");
  } else {
    DOPPIO_ENFORCE(!HasArgument("starts") && !HasArgument("ends"),
                   "the bounds are inputs; do not also pass arguments 'starts'/'ends'");
  }
}

std::vector<int64_t> SliceOpBase::ReadBoundsInput(int index) {
  const Tensor& tensor = Input(index);
  DOPPIO_ENFORCE(tensor.ndim() == 1, "bounds '", input_name(index), "' must be 1-D, not of shape ",
                 tensor.dims());
  std::vector<int64_t> values;
  DispatchTypes(TypeList<int32_t, int64_t>{}, input_name(index), tensor.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* data = tensor.data<I>();
    values.assign(data, data + tensor.numel());
  });
  return values;
}

SliceBounds SliceOpBase::Bounds(const std::vector<int64_t>& dims) {
  if (bounds_input_ < 0) return ResolveBounds(type(), dims, starts_, ends_);
  const std::vector<int64_t> starts = ReadBoundsInput(bounds_input_);
  const std::vector<int64_t> ends = ReadBoundsInput(bounds_input_ + 1);
  return ResolveBounds(type(), dims, starts, ends);
}

void SliceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const SliceBounds bounds = Bounds(X.dims());
  Tensor* Y = Output(0);
  Y->Resize(bounds.size);
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y->mutable_data<T>();
    ForEachSliceRow(X.dims(), bounds, [&](int64_t from, int64_t to, int64_t length) {
      std::copy(x + from, x + from + length, y + to);
    });
  });
}

void SliceGradientOp::RunOnDevice() {
  const std::vector<int64_t> dims = Input(0).dims();
  const Tensor& dY = Input(InputSize() - 1);
  const SliceBounds bounds = Bounds(dims);
  DOPPIO_ENFORCE(dY.dims() == bounds.size, "gradient '", input_name(InputSize() - 1),
                 "' has shape ", dY.dims(), " but the slice has shape ", bounds.size);
  DispatchTypes(NumericTypes{}, input_name(InputSize() - 1), dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(dims);
    T* dx = dX->mutable_data<T>();
    std::fill(dx, dx + dX->numel(), T(0));
    ForEachSliceRow(dims, bounds, [&](int64_t to, int64_t from, int64_t length) {
      std::copy(dy + from, dy + from + length, dx + to);
    });
  });
}

REGISTER_CPU_OPERATOR(Slice, SliceOp);
REGISTER_CPU_OPERATOR(SliceGradient, SliceGradientOp);

OPERATOR_SCHEMA(Slice)
    .NumInputs({1, 3})
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.set_data_type(in.at(0).data_type());
      ArgumentHelper args(def);
      if (in.size() > 1 || !args.Has("starts") || !args.Has("ends")) {
        out.set_unknown_shape(true);  // the bounds are data
        return std::vector<TensorShape>{out};
      }
      const std::vector<int64_t> dims(in[0].dims().begin(), in[0].dims().end());
      const SliceBounds bounds = ResolveBounds(def.type(), dims, args.GetRepeated<int64_t>("starts"),
                                               args.GetRepeated<int64_t>("ends"));
      for (int64_t d : bounds.size) out.add_dims(d);
      return std::vector<TensorShape>{out};
    })
    .Arg("starts", "(list of ints) first index per leading dim; negative v means dim + 1 + v")
    .Arg("ends", "(list of ints) end (exclusive) per leading dim; -1 is the end of the dim")
    .Input(0, "data", "tensor of any type")
    .Input(1, "starts", "(optional) 1-D int32/int64 starts, with input 2")
    .Input(2, "ends", "(optional) 1-D int32/int64 ends, with input 1")
    .Output(0, "output", "the sliced block")
    .Doc("Takes the block [starts[i], ends[i]) along each of the first "
         "len(starts) dims (Caffe2's convention: -1 is the end of a dim, "
         "bounds past the end are clamped, other bounds out of range are errors).");

OPERATOR_SCHEMA(SliceGradient)
    .NumInputs({2, 4})
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out = in.at(0);
      out.set_data_type(in.back().data_type());
      return std::vector<TensorShape>{out};
    })
    .Arg("starts", "(list of ints) Slice's starts")
    .Arg("ends", "(list of ints) Slice's ends")
    .Input(0, "data", "Slice's input (for its shape)")
    .Input(1, "starts_or_dY", "Slice's starts input, or dY when the bounds are arguments")
    .Output(0, "dX", "dY placed at the slice, zeros elsewhere")
    .Doc("Gradient of Slice. Inputs (data, starts, ends, dY), or (data, dY) "
         "with the bounds as arguments.");

namespace {

class GetSliceGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (Def().input_size() > 1) {
      return SingleGradientDef("SliceGradient", "", {I(0), I(1), I(2), GO(0)}, {GI(0)});
    }
    return SingleGradientDef("SliceGradient", "", {I(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(Slice, GetSliceGradient);
SHOULD_NOT_DO_GRADIENT(SliceGradient, "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
