#include "operators/conv_pool_op_base.h"

#include <cmath>
#include <numeric>

#include "core/argument.h"

namespace doppio {

StorageOrder ParseStorageOrder(const std::string& order, const std::string& op_type) {
  if (order == "NCHW") return StorageOrder::kNCHW;
  if (order == "NHWC") return StorageOrder::kNHWC;
  DOPPIO_THROW("op ", op_type, ": argument 'order' is '", order,
               "'; expected \"NCHW\" or \"NHWC\"");
}

const char* StorageOrderName(StorageOrder order) {
  return order == StorageOrder::kNCHW ? "NCHW" : "NHWC";
}

void ComputeSizeAndPad(int64_t in_size, int64_t stride, int64_t kernel, int64_t dilation,
                       LegacyPadding legacy_pad, const std::string& op_type,
                       int64_t* pad_head, int64_t* pad_tail, int64_t* out_size) {
  const int64_t dilated_kernel = dilation * (kernel - 1) + 1;
  switch (legacy_pad) {
    case LegacyPadding::kNotSet: {
      const int64_t padded = in_size + *pad_head + *pad_tail;
      DOPPIO_ENFORCE(padded >= dilated_kernel, "op ", op_type, ": the kernel (", kernel,
                     ", dilated to ", dilated_kernel, ") is larger than the padded input (",
                     in_size, " + pads ", *pad_head, " + ", *pad_tail, ")");
      *out_size = (padded - dilated_kernel) / stride + 1;
      return;
    }
    case LegacyPadding::kValid:
      *pad_head = 0;
      *pad_tail = 0;
      DOPPIO_ENFORCE(in_size >= dilated_kernel, "op ", op_type, ": the kernel (",
                     dilated_kernel, ") is larger than the input (", in_size,
                     ") with VALID padding");
      *out_size = (in_size - dilated_kernel) / stride + 1;
      return;
    case LegacyPadding::kSame: {
      DOPPIO_ENFORCE(dilation == 1, "op ", op_type,
                     ": dilation is not supported with legacy SAME padding");
      const int64_t target = (in_size + stride - 1) / stride;
      // A kernel smaller than the stride needs no padding (never negative).
      const int64_t needed = std::max<int64_t>(0, (target - 1) * stride + kernel - in_size);
      *pad_head = needed / 2;
      *pad_tail = needed - *pad_head;
      *out_size = (in_size + needed - dilated_kernel) / stride + 1;
      return;
    }
    case LegacyPadding::kCaffeLegacyPooling: {
      // Caffe rounded the output size up where Caffe2 rounds down; the extra
      // window is paid for with extra tail padding.
      const int64_t span = in_size + *pad_head * 2 - kernel;
      DOPPIO_ENFORCE(span >= 0, "op ", op_type, ": the kernel (", kernel,
                     ") is larger than the padded input (", in_size, " + 2 * ", *pad_head, ")");
      int64_t size = (span + stride - 1) / stride + 1;
      // Caffe also keeps the last window starting inside the image.
      if (*pad_head > 0 && (size - 1) * stride >= in_size + *pad_head) --size;
      const int64_t standard = span / stride + 1;
      *pad_tail = *pad_head + stride * (size - standard);
      *out_size = size;
      return;
    }
  }
  DOPPIO_THROW("op ", op_type, ": unknown legacy_pad value ", static_cast<int>(legacy_pad));
}

int64_t ConvPoolGeometry::input_image_size() const {
  return std::accumulate(input.begin(), input.end(), int64_t{1}, std::multiplies<int64_t>());
}
int64_t ConvPoolGeometry::output_image_size() const {
  return std::accumulate(output.begin(), output.end(), int64_t{1}, std::multiplies<int64_t>());
}
int64_t ConvPoolGeometry::kernel_size() const {
  return std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::vector<int64_t> ConvPoolGeometry::OutputDims(int64_t out_channels) const {
  std::vector<int64_t> dims{batch};
  if (order == StorageOrder::kNCHW) dims.push_back(out_channels);
  dims.insert(dims.end(), output.begin(), output.end());
  if (order == StorageOrder::kNHWC) dims.push_back(out_channels);
  return dims;
}

ConvPoolArgs::PerAxis ConvPoolArgs::ReadPerAxis(const OperatorDef& def,
                                                const std::string& scalar,
                                                const std::string& repeated,
                                                const std::vector<std::string>& per_axis_2d,
                                                const std::string& op_type) {
  // Read as int, Caffe2's type: larger values are errors, and products of
  // sizes stay far from int64 overflow.
  ArgumentHelper args(def);
  PerAxis result;
  result.name = scalar;
  int forms = 0;
  if (args.Has(scalar)) {
    ++forms;
    result.given = true;
    result.scalar = true;
    result.values = {args.GetSingle<int>(scalar, 0)};
  }
  if (args.Has(repeated)) {
    ++forms;
    result.given = true;
    result.scalar = false;
    const std::vector<int> values = args.GetRepeated<int>(repeated);
    result.values.assign(values.begin(), values.end());
    DOPPIO_ENFORCE(!result.values.empty(), "op ", op_type, ": argument '", repeated,
                   "' is empty");
  }
  int per_axis_present = 0;
  for (const std::string& name : per_axis_2d) per_axis_present += args.Has(name) ? 1 : 0;
  if (per_axis_present > 0) {
    ++forms;
    std::string all_names;
    for (const std::string& name : per_axis_2d) all_names += (all_names.empty() ? "" : ", ") + name;
    DOPPIO_ENFORCE(per_axis_present == static_cast<int>(per_axis_2d.size()), "op ", op_type,
                   ": give all of ", all_names, " or none");
    result.given = true;
    result.scalar = false;
    result.values.clear();
    for (const std::string& name : per_axis_2d) result.values.push_back(args.GetSingle<int>(name, 0));
  }
  DOPPIO_ENFORCE(forms <= 1, "op ", op_type, ": give only one of '", scalar, "', '", repeated,
                 "' and the per-axis form (", per_axis_2d.front(), " ...)");
  return result;
}

ConvPoolArgs::ConvPoolArgs(const OperatorDef& def) : op_type_(def.type()) {
  ArgumentHelper args(def);
  order_ = ParseStorageOrder(args.GetSingle<std::string>("order", "NCHW"), op_type_);
  const int legacy = args.GetSingle<int>("legacy_pad", 0);
  DOPPIO_ENFORCE(legacy >= 0 && legacy <= 3, "op ", op_type_, ": legacy_pad is ", legacy,
                 "; expected 0 (NOTSET), 1 (VALID), 2 (SAME) or 3 (CAFFE_LEGACY_POOLING)");
  legacy_pad_ = static_cast<LegacyPadding>(legacy);
  global_pooling_ = args.GetSingle<bool>("global_pooling", false);
  group_ = args.GetSingle<int>("group", 1);
  DOPPIO_ENFORCE(group_ >= 1, "op ", op_type_, ": group is ", group_, "; it must be >= 1");

  kernel_ = ReadPerAxis(def, "kernel", "kernels", {"kernel_h", "kernel_w"}, op_type_);
  stride_ = ReadPerAxis(def, "stride", "strides", {"stride_h", "stride_w"}, op_type_);
  pad_ = ReadPerAxis(def, "pad", "pads", {"pad_t", "pad_l", "pad_b", "pad_r"}, op_type_);
  dilation_ = ReadPerAxis(def, "dilation", "dilations", {"dilation_h", "dilation_w"}, op_type_);

  if (legacy_pad_ == LegacyPadding::kValid || legacy_pad_ == LegacyPadding::kSame) {
    DOPPIO_ENFORCE(!pad_.given, "op ", op_type_,
                   ": with legacy padding VALID or SAME, do not give pad values");
  }
  for (int64_t k : kernel_.values)
    DOPPIO_ENFORCE(k > 0, "op ", op_type_, ": kernel sizes must be > 0, got ", kernel_.values);
  for (int64_t s : stride_.values)
    DOPPIO_ENFORCE(s > 0, "op ", op_type_, ": strides must be > 0, got ", stride_.values);
  for (int64_t d : dilation_.values)
    DOPPIO_ENFORCE(d > 0, "op ", op_type_, ": dilations must be > 0, got ", dilation_.values);
  for (int64_t p : pad_.values)
    DOPPIO_ENFORCE(p >= 0, "op ", op_type_, ": pads must be >= 0, got ", pad_.values);
}

std::vector<int64_t> ConvPoolArgs::Expand(const PerAxis& arg, int num_spatial,
                                          int per_axis_count, int64_t default_value,
                                          const std::string& input_name) const {
  const size_t wanted = static_cast<size_t>(num_spatial) * per_axis_count;
  if (!arg.given) return std::vector<int64_t>(wanted, default_value);
  if (arg.scalar) return std::vector<int64_t>(wanted, arg.values[0]);
  DOPPIO_ENFORCE(arg.values.size() == wanted, "op ", op_type_, ": ", arg.name, " values ",
                 arg.values, " do not fit input '", input_name, "' with ", num_spatial,
                 " spatial dims (expected ", wanted, " values)");
  return arg.values;
}

std::vector<int64_t> ConvPoolArgs::Kernel(int num_spatial, const std::string& input_name) const {
  if (!kernel_.given) return {};
  return Expand(kernel_, num_spatial, 1, 0, input_name);
}
std::vector<int64_t> ConvPoolArgs::Stride(int num_spatial, const std::string& input_name) const {
  return Expand(stride_, num_spatial, 1, 1, input_name);
}
std::vector<int64_t> ConvPoolArgs::Dilation(int num_spatial,
                                            const std::string& input_name) const {
  return Expand(dilation_, num_spatial, 1, 1, input_name);
}
std::vector<int64_t> ConvPoolArgs::Pads(int num_spatial, const std::string& input_name) const {
  return Expand(pad_, num_spatial, 2, 0, input_name);
}

ConvPoolGeometry ConvPoolArgs::Resolve(const std::vector<int64_t>& input_dims,
                                       const std::string& input_name,
                                       const std::vector<int64_t>& default_kernel) const {
  const int rank = static_cast<int>(input_dims.size());
  DOPPIO_ENFORCE(rank >= 3 && rank <= 5, "op ", op_type_, ": input '", input_name,
                 "' has shape ", input_dims, "; expected 3 to 5 dims (",
                 StorageOrderName(order_), " with 1 to 3 spatial dims)");
  ConvPoolGeometry g;
  g.order = order_;
  const int num_spatial = rank - 2;
  g.batch = input_dims[0];
  if (order_ == StorageOrder::kNCHW) {
    g.channels = input_dims[1];
    g.input.assign(input_dims.begin() + 2, input_dims.end());
  } else {
    g.channels = input_dims[rank - 1];
    g.input.assign(input_dims.begin() + 1, input_dims.end() - 1);
  }
  if (global_pooling_) {
    // The window is the whole image: no stride, pads or dilation apply.
    g.kernel = g.input;
    g.stride.assign(num_spatial, 1);
    g.dilation.assign(num_spatial, 1);
    g.pads.assign(2 * num_spatial, 0);
    g.output.assign(num_spatial, 1);
    for (int64_t size : g.input)
      DOPPIO_ENFORCE(size > 0, "op ", op_type_, ": input '", input_name, "' of shape ",
                     input_dims, " has an empty spatial dim; global pooling needs one value");
    return g;
  }
  g.kernel = kernel_.given ? Kernel(num_spatial, input_name) : default_kernel;
  DOPPIO_ENFORCE(!g.kernel.empty(), "op ", op_type_,
                 ": the kernel size is not set (give 'kernel', 'kernels' or kernel_h and "
                 "kernel_w)");
  DOPPIO_ENFORCE(static_cast<int>(g.kernel.size()) == num_spatial, "op ", op_type_,
                 ": kernel ", g.kernel, " does not fit input '", input_name, "' of shape ",
                 input_dims);
  for (int64_t k : g.kernel)
    DOPPIO_ENFORCE(k > 0, "op ", op_type_, ": kernel sizes must be > 0, got ", g.kernel);
  g.stride = Stride(num_spatial, input_name);
  g.dilation = Dilation(num_spatial, input_name);
  g.pads = Pads(num_spatial, input_name);
  g.output.resize(num_spatial);
  for (int axis = 0; axis < num_spatial; ++axis) {
    try {
      ComputeSizeAndPad(g.input[axis], g.stride[axis], g.kernel[axis], g.dilation[axis],
                        legacy_pad_, op_type_, &g.pads[axis], &g.pads[num_spatial + axis],
                        &g.output[axis]);
    } catch (Error& error) {
      error.AppendContext(MakeString("spatial dim ", axis, " of input '", input_name,
                                     "' with shape ", input_dims));
      throw;
    }
  }
  return g;
}

OpSchema::InferenceFunction ConvPoolShapeInference(bool channels_from_filter) {
  return [channels_from_filter](const OperatorDef& def,
                                const std::vector<TensorShape>& inputs) {
    std::vector<TensorShape> outputs(def.output_size());
    for (TensorShape& shape : outputs) shape.set_unknown_shape(true);
    if (inputs.empty() || inputs[0].unknown_shape()) return outputs;
    if (channels_from_filter && (inputs.size() < 2 || inputs[1].unknown_shape() ||
                                 inputs[1].dims_size() == 0)) {
      return outputs;
    }
    try {
      const ConvPoolArgs args(def);
      const std::vector<int64_t> dims(inputs[0].dims().begin(), inputs[0].dims().end());
      std::vector<int64_t> filter_kernel;
      if (channels_from_filter) {
        const auto& f = inputs[1].dims();
        const bool nchw = args.order() == StorageOrder::kNCHW;
        if (f.size() >= 3) {
          filter_kernel.assign(f.begin() + (nchw ? 2 : 1), f.end() - (nchw ? 0 : 1));
        }
      }
      const ConvPoolGeometry g = args.Resolve(dims, def.input(0), filter_kernel);
      const int64_t channels = channels_from_filter ? inputs[1].dims(0) : g.channels;
      TensorShape shape;
      for (int64_t d : g.OutputDims(channels)) shape.add_dims(d);
      shape.set_data_type(inputs[0].data_type());
      if (!outputs.empty()) outputs[0] = shape;
    } catch (const Error&) {
      // Leave the shape unknown; running the op reports the problem.
    }
    return outputs;
  };
}

}  // namespace doppio
