#include "operators/int8_pool_ops.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// One output pixel's window, clipped to the image.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

Window WindowAt(const ConvPoolGeometry& g, int64_t oy, int64_t ox) {
  const int64_t iy = oy * g.stride[0] - g.pad_begin(0);
  const int64_t ix = ox * g.stride[1] - g.pad_begin(1);
  return {std::max<int64_t>(iy, 0), std::min(iy + g.kernel[0], g.input[0]),
          std::max<int64_t>(ix, 0), std::min(ix + g.kernel[1], g.input[1])};
}

// Max (or the rounded mean) of each channel over the window, as uint8.
template <bool kMax>
void PoolPixel(const ConvPoolGeometry& g, const uint8_t* image, const Window& w, int32_t zero_point,
               std::vector<int32_t>* acc, uint8_t* out) {
  const int64_t C = g.channels;
  std::fill(acc->begin(), acc->end(), 0);
  for (int64_t y = w.y0; y < w.y1; ++y) {
    for (int64_t x = w.x0; x < w.x1; ++x) {
      const uint8_t* p = image + (y * g.input[1] + x) * C;
      for (int64_t c = 0; c < C; ++c) {
        (*acc)[c] = kMax ? std::max<int32_t>((*acc)[c], p[c]) : (*acc)[c] + p[c];
      }
    }
  }
  const int64_t count = w.count();
  for (int64_t c = 0; c < C; ++c) {
    // A window wholly in the padding (possible with legacy pads) is real 0.
    if (count == 0) {
      out[c] = static_cast<uint8_t>(zero_point);
    } else {
      out[c] = static_cast<uint8_t>(kMax ? (*acc)[c] : ((*acc)[c] + count / 2) / count);
    }
  }
}

}  // namespace

template <bool kMax, bool kRelu>
Int8PoolOp<kMax, kRelu>::Int8PoolOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(def) {
  DOPPIO_ENFORCE(args_.order() == StorageOrder::kNHWC,
                 "Int8 pooling takes NHWC tensors (as Caffe2's); set order \"NHWC\"");
}

template <bool kMax, bool kRelu>
void Int8PoolOp<kMax, kRelu>::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  DOPPIO_ENFORCE(X.t.ndim() == 4, "X '", input_name(0), "' must be 4-D NHWC, not ", X.t.dims());
  const ConvPoolGeometry g = args_.Resolve(X.t.dims(), input_name(0));
  const int8::Quantization xq = int8::QuantizationOf(X);
  const int8::Quantization yq = int8::OutputQuantizationOr(*this, xq);
  const int8::Limits limits = int8::ActivationLimits(yq, kRelu);
  // Pooled values (in X's quantization) -> Y's quantization and limits.
  const std::array<uint8_t, 256> table = int8::RequantizeTable(xq, yq, limits);
  const uint8_t* x = X.t.data<uint8_t>();
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, yq, g.OutputDims(g.channels));
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  const int64_t OH = g.output[0], OW = g.output[1], C = g.channels;
  ParallelFor(
      g.batch * OH,
      [&](int64_t begin, int64_t end) {
        std::vector<int32_t> acc(C);
        for (int64_t row = begin; row < end; ++row) {
          const int64_t n = row / OH, oy = row % OH;
          const uint8_t* image = x + n * g.input[0] * g.input[1] * C;
          for (int64_t ox = 0; ox < OW; ++ox) {
            uint8_t* out = y + (row * OW + ox) * C;
            PoolPixel<kMax>(g, image, WindowAt(g, oy, ox), xq.zero_point, &acc, out);
            for (int64_t c = 0; c < C; ++c) out[c] = table[out[c]];
          }
        }
      },
      RowsPerThread(OW * C * g.kernel_size()));
}

REGISTER_CPU_OPERATOR(Int8MaxPool, Int8PoolOp<true, false>);
REGISTER_CPU_OPERATOR(Int8MaxPoolRelu, Int8PoolOp<true, true>);
REGISTER_CPU_OPERATOR(Int8AveragePool, Int8PoolOp<false, false>);
REGISTER_CPU_OPERATOR(Int8AveragePoolRelu, Int8PoolOp<false, true>);

namespace {

void Int8PoolSchema(OpSchema& schema) {
  schema.NumInputs(1)
      .NumOutputs(1)
      .Arg("kernel", "(int) window size; also kernels, kernel_h/kernel_w")
      .Arg("stride", "(int, default 1) also strides, stride_h/stride_w")
      .Arg("pad", "(int, default 0) also pads, pad_t/pad_l/pad_b/pad_r")
      .Arg("global_pooling", "(bool, default false) the window is the whole image")
      .Arg("legacy_pad", "(int, default 0) Caffe2 legacy padding")
      .Arg("order", "(string) must be \"NHWC\"", true)
      .Arg("Y_scale", "(float) output scale; default X's")
      .Arg("Y_zero_point", "(int) output zero point; default X's")
      .Input(0, "X", "Int8 [N, H, W, C] (uint8)")
      .Output(0, "Y", "Int8 [N, oH, oW, C] (uint8)");
}

}  // namespace

OPERATOR_SCHEMA(Int8MaxPool).Apply(Int8PoolSchema).Doc("Quantized max pooling.");
OPERATOR_SCHEMA(Int8MaxPoolRelu).Apply(Int8PoolSchema).Doc("Quantized max pooling, then Relu.");
OPERATOR_SCHEMA(Int8AveragePool)
    .Apply(Int8PoolSchema)
    .Doc("Quantized average pooling; padding is not counted, means round half up.");
OPERATOR_SCHEMA(Int8AveragePoolRelu)
    .Apply(Int8PoolSchema)
    .Doc("Quantized average pooling, then Relu.");

SHOULD_NOT_DO_GRADIENT(Int8MaxPool, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8MaxPoolRelu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8AveragePool, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8AveragePoolRelu, int8::kInferenceOnly);

}  // namespace doppio
