// The argument handling that convolution and pooling ops share, as in
// Caffe2's conv_pool_op_base.h: kernel / stride / pad / dilation (scalar,
// repeated or per-axis forms), storage order, legacy padding, global pooling
// and group, resolved against an input shape into one ConvPoolGeometry that
// holds the output size and the per-side pads.
//
// Arguments (Caffe2's names and defaults):
//   kernel | kernels | kernel_h + kernel_w      required unless global_pooling
//            (Conv infers it from the filter when absent, as Caffe2 does)
//   stride | strides | stride_h + stride_w      default 1
//   pad    | pads    | pad_t + pad_l + pad_b + pad_r   default 0;
//            `pads` lists the begin pads of every spatial axis, then the end
//            pads: 2-D is [pad_t, pad_l, pad_b, pad_r].
//   dilation | dilations | dilation_h + dilation_w    default 1
//   order          "NCHW" (default) or "NHWC"; 1-D and 3-D use the same
//                  names (channels second or last).
//   legacy_pad     0 NOTSET (default), 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING
//   global_pooling 0 (default) or 1: the kernel covers the whole input.
//   group          default 1 (convolution only; pooling ignores it).
// A scalar form (kernel, stride, pad, dilation) applies to every spatial axis
// of the input, so one def works for 1-D, 2-D and 3-D inputs; the repeated
// forms must have one value per spatial axis (pads: two), and the _h/_w forms
// only fit 2-D inputs. Giving two forms of one argument is an error.
//
// Usage in a kernel:
//   class MyPoolOp final : public ConvPoolOpBase {
//     void RunOnDevice() override {
//       const ConvPoolGeometry g = Geometry(Input(0));  // validates X's shape
//       Output(0)->Resize(g.OutputDims(g.channels));
//       ... g.input / g.kernel / g.stride / g.dilation / g.pads / g.output
//   };
// and in a schema:
//   .TensorInferenceFunction(ConvPoolShapeInference(/*channels_from_filter*/))
//
// Every error names the op type and, for shape problems, the input blob.
// Thread-safety: ConvPoolArgs and ConvPoolGeometry are immutable values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"

namespace doppio {

enum class StorageOrder { kNCHW, kNHWC };

// "NCHW" / "NHWC" -> StorageOrder; anything else is an error naming op_type.
StorageOrder ParseStorageOrder(const std::string& order, const std::string& op_type);
const char* StorageOrderName(StorageOrder order);

// Caffe2's LegacyPadding enum values (caffe2_legacy.proto).
enum class LegacyPadding : int {
  kNotSet = 0,
  kValid = 1,
  kSame = 2,
  kCaffeLegacyPooling = 3,
};

// One spatial axis' output size and pads (Caffe2's ComputeSizeAndPad).
// pad_head / pad_tail are inputs for kNotSet and kCaffeLegacyPooling (which
// may grow pad_tail), outputs for kValid and kSame. Throws, naming `op_type`,
// when the (dilated) kernel does not fit the padded input.
void ComputeSizeAndPad(int64_t in_size, int64_t stride, int64_t kernel, int64_t dilation,
                       LegacyPadding legacy_pad, const std::string& op_type,
                       int64_t* pad_head, int64_t* pad_tail, int64_t* out_size);

// The arguments resolved for one input shape.
struct ConvPoolGeometry {
  StorageOrder order = StorageOrder::kNCHW;
  int64_t batch = 0;     // N
  int64_t channels = 0;  // C of the input
  std::vector<int64_t> input;     // spatial sizes of the input
  std::vector<int64_t> kernel;    // per spatial axis
  std::vector<int64_t> stride;    // per spatial axis
  std::vector<int64_t> dilation;  // per spatial axis
  std::vector<int64_t> pads;      // [begin per axis..., end per axis...]
  std::vector<int64_t> output;    // spatial sizes of the output

  int num_spatial() const { return static_cast<int>(input.size()); }
  int64_t pad_begin(int axis) const { return pads[axis]; }
  int64_t pad_end(int axis) const { return pads[num_spatial() + axis]; }
  int64_t input_image_size() const;   // product of `input`
  int64_t output_image_size() const;  // product of `output`
  int64_t kernel_size() const;        // product of `kernel`
  // Full output dims: {N, out_channels, output...} or {N, output..., out_channels}.
  std::vector<int64_t> OutputDims(int64_t out_channels) const;
};

// The conv/pool arguments of one OperatorDef, read and checked once.
class ConvPoolArgs {
 public:
  // Throws when arguments conflict or are out of range (negative pads,
  // non-positive stride/dilation/kernel, explicit pads with VALID/SAME ...).
  explicit ConvPoolArgs(const OperatorDef& def);

  StorageOrder order() const { return order_; }
  LegacyPadding legacy_pad() const { return legacy_pad_; }
  bool global_pooling() const { return global_pooling_; }
  int group() const { return group_; }
  const std::string& op_type() const { return op_type_; }

  // Resolves the arguments for an input of shape `input_dims` (rank 3 to 5:
  // batch, channels and 1-3 spatial axes in `order`). Errors name the op and
  // `input_name`, e.g. a kernel larger than the padded input or a `kernels`
  // list whose length differs from the input's spatial rank.
  // `default_kernel` (per spatial axis) is used when no kernel argument was
  // given; when it is empty too (and not global pooling), that is an error.
  ConvPoolGeometry Resolve(const std::vector<int64_t>& input_dims,
                           const std::string& input_name,
                           const std::vector<int64_t>& default_kernel = {}) const;
  bool has_kernel_argument() const { return kernel_.given; }

  // The per-axis values for `num_spatial` axes (kernel is empty when it was
  // not given, e.g. global pooling); used by Resolve and by ConvTranspose,
  // which computes its output size differently.
  std::vector<int64_t> Kernel(int num_spatial, const std::string& input_name) const;
  std::vector<int64_t> Stride(int num_spatial, const std::string& input_name) const;
  std::vector<int64_t> Dilation(int num_spatial, const std::string& input_name) const;
  std::vector<int64_t> Pads(int num_spatial, const std::string& input_name) const;

 private:
  // One argument given as scalar, repeated or _h/_w form.
  struct PerAxis {
    std::string name;            // "kernel", "stride" ... (for messages)
    bool given = false;
    bool scalar = false;         // a single value for every axis
    std::vector<int64_t> values; // scalar: 1 value; else per axis (pads: 2 per axis)
  };
  static PerAxis ReadPerAxis(const OperatorDef& def, const std::string& scalar,
                             const std::string& repeated,
                             const std::vector<std::string>& per_axis_2d,
                             const std::string& op_type);
  std::vector<int64_t> Expand(const PerAxis& arg, int num_spatial, int per_axis_count,
                              int64_t default_value, const std::string& input_name) const;

  std::string op_type_;
  StorageOrder order_ = StorageOrder::kNCHW;
  LegacyPadding legacy_pad_ = LegacyPadding::kNotSet;
  bool global_pooling_ = false;
  int group_ = 1;
  PerAxis kernel_, stride_, pad_, dilation_;
};

// Base class of CPU conv and pool kernels: reads the arguments once.
class ConvPoolOpBase : public Operator<CPUContext> {
 public:
  ConvPoolOpBase(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), conv_args_(def) {}

 protected:
  StorageOrder order() const { return conv_args_.order(); }
  int group() const { return conv_args_.group(); }
  const ConvPoolArgs& conv_args() const { return conv_args_; }
  // The geometry for input X (input 0); shape errors name the op and blob.
  ConvPoolGeometry Geometry(const Tensor& X,
                            const std::vector<int64_t>& default_kernel = {}) const {
    return conv_args_.Resolve(X.dims(), input_name(0), default_kernel);
  }

 private:
  ConvPoolArgs conv_args_;
};

// A schema inference function for ops whose output 0 is the conv/pool output
// of input 0 with input 0's dtype. The output channel count is input 1's
// dim 0 (the filter's M) when `channels_from_filter` (and the kernel defaults
// to the filter's spatial dims), else input 0's C.
// Unknown or malformed input shapes give an empty (unknown) result rather
// than an error: inference is advisory.
OpSchema::InferenceFunction ConvPoolShapeInference(bool channels_from_filter);

}  // namespace doppio
