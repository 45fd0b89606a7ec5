#include "operators/roi_align_op.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// A bin averages at most this many samples: an adaptive grid follows the
// RoI's size, and a RoI of absurd coordinates must be an error, not an
// endless loop.
constexpr int64_t kMaxSamplesPerBin = int64_t{1} << 24;
// RoIs are taken in passes of about this many samples, which bounds the
// sample table (40-72 bytes a sample).
constexpr int64_t kSamplesPerPass = int64_t{1} << 20;

RoIAlignArgs ReadRoIAlignArgs(const OperatorBase& op) {
  RoIAlignArgs a;
  a.order = ParseStorageOrder(op.GetSingleArgument<std::string>("order", "NCHW"), op.type());
  a.spatial_scale = op.GetSingleArgument<float>("spatial_scale", 1.0f);
  a.pooled_h = op.GetSingleArgument<int64_t>("pooled_h", 1);
  a.pooled_w = op.GetSingleArgument<int64_t>("pooled_w", 1);
  a.sampling_ratio = op.GetSingleArgument<int64_t>("sampling_ratio", -1);
  a.aligned = op.GetSingleArgument<bool>("aligned", false);
  a.rotated = op.type().rfind("RoIAlignRotated", 0) == 0;
  DOPPIO_ENFORCE(std::isfinite(a.spatial_scale) && a.spatial_scale > 0, "spatial_scale (",
                 a.spatial_scale, ") must be a positive number");
  DOPPIO_ENFORCE(a.pooled_h > 0 && a.pooled_w > 0, "pooled_h and pooled_w (", a.pooled_h, ", ",
                 a.pooled_w, ") must be positive");
  DOPPIO_ENFORCE(a.sampling_ratio <= (int64_t{1} << 12), "sampling_ratio ", a.sampling_ratio,
                 " is more than 4096 samples a side");
  return a;
}

struct FeatureShape {
  int64_t batch, channels, height, width;
};

FeatureShape ShapeOf(const OperatorBase& op, const Tensor& x, StorageOrder order) {
  DOPPIO_ENFORCE(x.ndim() == 4, "X '", op.input_name(0), "' must be 4-D (", StorageOrderName(order),
                 "), not ", x.dims());
  const bool nchw = order == StorageOrder::kNCHW;
  return {x.dim(0), x.dim(nchw ? 1 : 3), x.dim(nchw ? 2 : 1), x.dim(nchw ? 3 : 2)};
}

void CheckRoIs(const OperatorBase& op, const Tensor& x, const Tensor& rois, bool rotated) {
  const int64_t box = rotated ? 5 : 4;
  DOPPIO_ENFORCE(rois.ndim() == 2 && (rois.dim(1) == box || rois.dim(1) == box + 1), "RoIs '",
                 op.input_name(1), "' must be ",
                 rotated ? "[R, 6] (batch index, ctr_x, ctr_y, w, h, angle) or [R, 5]"
                         : "[R, 5] (batch index, x1, y1, x2, y2) or [R, 4]",
                 ", not ", rois.dims());
  DOPPIO_ENFORCE(rois.dtype() == x.dtype(), "RoIs '", op.input_name(1), "' hold ",
                 DataTypeName(rois.dtype()), ", X holds ", DataTypeName(x.dtype()));
}

std::vector<int64_t> OutputDims(const RoIAlignArgs& a, int64_t rois, int64_t channels) {
  if (a.order == StorageOrder::kNCHW) return {rois, channels, a.pooled_h, a.pooled_w};
  return {rois, a.pooled_h, a.pooled_w, channels};
}

// Where the samples of a pass of RoIs read X: each sample interpolates four
// pixels (y * W + x of its image) with four weights; a sample outside the
// image has none. Bins are RoI-major, then pooled row, then column.
template <typename T>
struct SampleTable {
  std::vector<int64_t> image;    // per RoI
  std::vector<int64_t> bin_end;  // per bin: one past its last sample
  std::vector<T> bin_count;      // per bin: its grid's size (at least 1), the divisor
  std::vector<int64_t> pixel;    // 4 per sample
  std::vector<T> weight;         // 4 per sample

  void Clear() {
    image.clear();
    bin_end.clear();
    bin_count.clear();
    pixel.clear();
    weight.clear();
  }
  int64_t samples() const { return static_cast<int64_t>(pixel.size() / 4); }
  int64_t bin_begin(int64_t bin) const { return bin == 0 ? 0 : bin_end[bin - 1]; }
};

// Caffe2's bilinear interpolation at (y, x), clamped into the image.
template <typename T>
void AddSample(T y, T x, int64_t height, int64_t width, SampleTable<T>* table) {
  if (y < -1 || y > height || x < -1 || x > width) return;
  y = std::max<T>(y, 0);
  x = std::max<T>(x, 0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  }
  const T ly = y - y_low, lx = x - x_low, hy = 1 - ly, hx = 1 - lx;
  table->pixel.insert(table->pixel.end(), {y_low * width + x_low, y_low * width + x_high,
                                           y_high * width + x_low, y_high * width + x_high});
  table->weight.insert(table->weight.end(), {hy * hx, hy * lx, ly * hx, ly * lx});
}

// The samples per side of a bin of `side` pixels split `pooled` ways.
template <typename T>
int64_t GridSide(const RoIAlignArgs& a, T side, int64_t pooled) {
  if (a.sampling_ratio > 0) return a.sampling_ratio;
  const double grid = std::ceil(static_cast<double>(side) / pooled);
  return grid <= 0 ? 0 : static_cast<int64_t>(std::min(grid, double{kMaxSamplesPerBin + 1}));
}

// A RoI on X: its bins' grid starts at (start_x, start_y) of the RoI's own
// frame, which is turned by (cos, sin) and moved by (cx, cy) onto X. An
// upright RoI's frame is X's: (1, 0) and (0, 0), so x is exactly xx.
template <typename T>
struct RoIFrame {
  T start_x, start_y, w, h, cos, sin, cx, cy;
};

// The frame of RoI `r` (its box values at `roi`: x1, y1, x2, y2, or ctr_x,
// ctr_y, w, h, angle), scaled onto X.
template <typename T>
RoIFrame<T> FrameOf(const RoIAlignArgs& a, int64_t r, const T* roi) {
  const int values = a.rotated ? 5 : 4;
  for (int k = 0; k < values; ++k) {
    DOPPIO_ENFORCE(std::isfinite(roi[k]), "RoI ", r, " has a non-finite coordinate ", roi[k]);
  }
  const T scale = static_cast<T>(a.spatial_scale), offset = a.aligned ? T(0.5) : T(0);
  RoIFrame<T> f;
  if (a.rotated) {
    f.cx = roi[0] * scale - offset, f.cy = roi[1] * scale - offset;
    f.w = roi[2] * scale, f.h = roi[3] * scale;
    const double theta = static_cast<double>(roi[4]) * 3.14159265358979323846 / 180.0;
    f.cos = static_cast<T>(std::cos(theta)), f.sin = static_cast<T>(std::sin(theta));
    DOPPIO_ENFORCE(!a.aligned || (f.w >= 0 && f.h >= 0), "RoI ", r, " has a negative size (",
                   roi[2], ", ", roi[3], ")");
  } else {
    f.cx = f.cy = T(0), f.cos = T(1), f.sin = T(0);
    f.start_x = roi[0] * scale - offset, f.start_y = roi[1] * scale - offset;
    f.w = roi[2] * scale - offset - f.start_x, f.h = roi[3] * scale - offset - f.start_y;
  }
  DOPPIO_ENFORCE(std::isfinite(f.cx) && std::isfinite(f.cy) && std::isfinite(f.w) &&
                     std::isfinite(f.h) && (a.rotated || std::isfinite(f.start_x + f.start_y)),
                 "RoI ", r, " is out of range once scaled by spatial_scale ", a.spatial_scale);
  if (!a.aligned) {  // Caffe2's: at least one pixel
    f.w = std::max<T>(f.w, 1);
    f.h = std::max<T>(f.h, 1);
  }
  if (a.rotated) f.start_x = -f.w / 2, f.start_y = -f.h / 2;
  return f;
}

// Appends RoI `r` (its values at `roi`, the batch index first when `cols`
// has one) to the table.
template <typename T>
void AddRoI(const RoIAlignArgs& a, const FeatureShape& s, int64_t r, const T* roi, int64_t cols,
            SampleTable<T>* table) {
  int64_t image = 0;
  if (cols == (a.rotated ? 6 : 5)) {
    image = boxes::ImageIndex(roi[0], r, s.batch, "X");
    ++roi;
  } else {
    DOPPIO_ENFORCE(s.batch > 0, "RoI ", r,
                   " without a batch index refers to image 0, but X "
                   "has none");
  }
  const RoIFrame<T> f = FrameOf(a, r, roi);
  const T bin_h = f.h / static_cast<T>(a.pooled_h), bin_w = f.w / static_cast<T>(a.pooled_w);
  const int64_t grid_h = GridSide(a, f.h, a.pooled_h), grid_w = GridSide(a, f.w, a.pooled_w);
  DOPPIO_ENFORCE(grid_h <= kMaxSamplesPerBin / std::max<int64_t>(grid_w, 1), "RoI ", r, " needs a ",
                 grid_h, " x ", grid_w, " sampling grid per bin (at most ", kMaxSamplesPerBin,
                 " samples): its coordinates or spatial_scale are out of scale");
  table->image.push_back(image);
  const T count = static_cast<T>(std::max<int64_t>(grid_h * grid_w, 1));
  for (int64_t ph = 0; ph < a.pooled_h; ++ph) {
    for (int64_t pw = 0; pw < a.pooled_w; ++pw) {
      for (int64_t iy = 0; iy < grid_h; ++iy) {
        const T yy =
            f.start_y + ph * bin_h + static_cast<T>(iy + .5f) * bin_h / static_cast<T>(grid_h);
        for (int64_t ix = 0; ix < grid_w; ++ix) {
          const T xx =
              f.start_x + pw * bin_w + static_cast<T>(ix + .5f) * bin_w / static_cast<T>(grid_w);
          const T x = a.rotated ? xx * f.cos + yy * f.sin + f.cx : xx;
          const T y = a.rotated ? yy * f.cos - xx * f.sin + f.cy : yy;
          AddSample(y, x, s.height, s.width, table);
        }
      }
      table->bin_end.push_back(table->samples());
      table->bin_count.push_back(count);
    }
  }
}

// Calls pass(first, count, table) for consecutive runs of RoIs whose tables
// hold about kSamplesPerPass samples.
template <typename T, typename Pass>
void ForEachPass(const RoIAlignArgs& a, const FeatureShape& s, const Tensor& rois, Pass&& pass) {
  const int64_t R = rois.dim(0), cols = rois.dim(1);
  const T* r = rois.data<T>();
  SampleTable<T> table;
  int64_t first = 0;
  for (int64_t i = 0; i < R; ++i) {
    AddRoI(a, s, i, r + i * cols, cols, &table);
    if (table.samples() >= kSamplesPerPass || i + 1 == R) {
      pass(first, i + 1 - first, table);
      table.Clear();
      first = i + 1;
    }
  }
}

// Y for `count` RoIs from `first`, over channels [c0, c1).
template <typename T>
void PoolPass(const RoIAlignArgs& a, const FeatureShape& s, const SampleTable<T>& t, int64_t first,
              int64_t count, const T* x, int64_t c0, int64_t c1, T* y) {
  const int64_t bins = a.pooled_h * a.pooled_w, C = s.channels, image = s.height * s.width;
  const bool nchw = a.order == StorageOrder::kNCHW;
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t b = 0; b < bins; ++b) {
      const int64_t bin = r * bins + b;
      const int64_t begin = t.bin_begin(bin), end = t.bin_end[bin];
      if (nchw) {
        for (int64_t c = c0; c < c1; ++c) {
          const T* plane = x + (t.image[r] * C + c) * image;
          T sum = 0;
          for (int64_t k = begin; k < end; ++k) {
            const int64_t* p = &t.pixel[4 * k];
            const T* w = &t.weight[4 * k];
            sum +=
                w[0] * plane[p[0]] + w[1] * plane[p[1]] + w[2] * plane[p[2]] + w[3] * plane[p[3]];
          }
          y[((first + r) * C + c) * bins + b] = sum / t.bin_count[bin];
        }
        continue;
      }
      T* out = y + ((first + r) * bins + b) * C;
      std::fill(out + c0, out + c1, T(0));
      for (int64_t k = begin; k < end; ++k) {
        const int64_t* p = &t.pixel[4 * k];
        const T* w = &t.weight[4 * k];
        const T* base = x + t.image[r] * image * C;
        const T *v0 = base + p[0] * C, *v1 = base + p[1] * C, *v2 = base + p[2] * C,
                *v3 = base + p[3] * C;
        for (int64_t c = c0; c < c1; ++c) {
          out[c] += w[0] * v0[c] + w[1] * v1[c] + w[2] * v2[c] + w[3] * v3[c];
        }
      }
      for (int64_t c = c0; c < c1; ++c) out[c] /= t.bin_count[bin];
    }
  }
}

// dX += each sample's share of dY, for `count` RoIs from `first`, over
// channels [c0, c1); RoIs, bins and samples in order, so each dX value sums
// in the same order however the channels are split.
template <typename T>
void ScatterPass(const RoIAlignArgs& a, const FeatureShape& s, const SampleTable<T>& t,
                 int64_t first, int64_t count, const T* dy, int64_t c0, int64_t c1, T* dx) {
  const int64_t bins = a.pooled_h * a.pooled_w, C = s.channels, image = s.height * s.width;
  const bool nchw = a.order == StorageOrder::kNCHW;
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t b = 0; b < bins; ++b) {
      const int64_t bin = r * bins + b;
      const int64_t begin = t.bin_begin(bin), end = t.bin_end[bin];
      const T n = t.bin_count[bin];
      for (int64_t k = begin; k < end; ++k) {
        const int64_t* p = &t.pixel[4 * k];
        const T* w = &t.weight[4 * k];
        for (int64_t c = c0; c < c1; ++c) {
          const T g =
              nchw ? dy[((first + r) * C + c) * bins + b] : dy[((first + r) * bins + b) * C + c];
          T* base = nchw ? dx + (t.image[r] * C + c) * image : dx + t.image[r] * image * C + c;
          const int64_t step = nchw ? 1 : C;
          for (int j = 0; j < 4; ++j) base[p[j] * step] += g * w[j] / n;
        }
      }
    }
  }
}

// Work per channel of a pass, for ParallelFor's split.
template <typename T>
int64_t ChannelsPerThread(const SampleTable<T>& t) {
  return RowsPerThread(4 * t.samples() + static_cast<int64_t>(t.bin_end.size()));
}

}  // namespace

RoIAlignOp::RoIAlignOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadRoIAlignArgs(*this)) {}

void RoIAlignOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& rois = Input(1);
  const FeatureShape s = ShapeOf(*this, X, args_.order);
  CheckRoIs(*this, X, rois, args_.rotated);
  Tensor* Y = Output(0);
  Y->Resize(OutputDims(args_, rois.dim(0), s.channels));
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y->template mutable_data<T>();
    ForEachPass<T>(args_, s, rois, [&](int64_t first, int64_t count, const SampleTable<T>& t) {
      ParallelFor(
          s.channels,
          [&](int64_t c0, int64_t c1) { PoolPass(args_, s, t, first, count, x, c0, c1, y); },
          ChannelsPerThread(t));
    });
  });
}

RoIAlignGradientOp::RoIAlignGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadRoIAlignArgs(*this)) {}

void RoIAlignGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& rois = Input(1);
  const Tensor& dY = Input(2);
  const FeatureShape s = ShapeOf(*this, X, args_.order);
  CheckRoIs(*this, X, rois, args_.rotated);
  const std::vector<int64_t> y_dims = OutputDims(args_, rois.dim(0), s.channels);
  DOPPIO_ENFORCE(dY.dims() == y_dims && dY.dtype() == X.dtype(), "dY '", input_name(2), "' (",
                 dY.dims(), ", ", DataTypeName(dY.dtype()), ") must have RoIAlign's output shape ",
                 y_dims, " and X's type");
  Tensor* dX = Output(0);
  dX->ResizeLike(X);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    T* dx = dX->template mutable_data<T>();
    std::fill(dx, dx + dX->numel(), T(0));
    ForEachPass<T>(args_, s, rois, [&](int64_t first, int64_t count, const SampleTable<T>& t) {
      ParallelFor(
          s.channels,
          [&](int64_t c0, int64_t c1) { ScatterPass(args_, s, t, first, count, dy, c0, c1, dx); },
          ChannelsPerThread(t));
    });
  });
}

REGISTER_CPU_OPERATOR(RoIAlign, RoIAlignOp);
REGISTER_CPU_OPERATOR(RoIAlignGradient, RoIAlignGradientOp);
REGISTER_CPU_OPERATOR(RoIAlignRotated, RoIAlignOp);
REGISTER_CPU_OPERATOR(RoIAlignRotatedGradient, RoIAlignGradientOp);

namespace {

std::vector<TensorShape> RoIAlignInference(const OperatorDef& def,
                                           const std::vector<TensorShape>& in) {
  const ArgumentHelper args(def);
  RoIAlignArgs a;
  a.order = ParseStorageOrder(args.GetSingle<std::string>("order", "NCHW"), def.type());
  a.pooled_h = args.GetSingle<int64_t>("pooled_h", 1);
  a.pooled_w = args.GetSingle<int64_t>("pooled_w", 1);
  DOPPIO_ENFORCE(in.at(0).dims_size() == 4 && in.at(1).dims_size() == 2,
                 "RoIAlign needs a 4-D X and 2-D RoIs");
  const int64_t channels = in[0].dims(a.order == StorageOrder::kNCHW ? 1 : 3);
  TensorShape out;
  out.set_data_type(in[0].data_type());
  for (int64_t d : OutputDims(a, in[1].dims(0), channels)) out.add_dims(d);
  return {out};
}

const char kOrderDoc[] = "(string, default NCHW) NCHW or NHWC, X's and Y's layout";

class GetRoIAlignGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), I(1), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

void CommonArgs(OpSchema& schema) {
  schema
      .Arg("spatial_scale",
           "(float, default 1) X's scale relative to the image the RoIs are in, e.g. 0.0625 "
           "for a feature map of stride 16")
      .Arg("pooled_h", "(int, default 1) Y's height")
      .Arg("pooled_w", "(int, default 1) Y's width")
      .Arg("sampling_ratio",
           "(int, default -1) samples per bin side; <= 0: adaptive, ceil(RoI side / pooled side)")
      .Arg("aligned",
           "(bool, default false) later Caffe2's and torchvision's: shift the RoI by -0.5 pixel "
           "(pixel centers) and do not widen RoIs thinner than one pixel")
      .Arg("order", kOrderDoc);
}

// `rois` documents the RoIs input.
std::function<void(OpSchema&)> ForwardSchema(const char* rois, const char* doc) {
  return [rois, doc](OpSchema& schema) {
    schema.NumInputs(2)
        .NumOutputs(1)
        .TensorInferenceFunction(RoIAlignInference)
        .Apply(CommonArgs)
        .Input(0, "X", "feature map [N, C, H, W] (NHWC: [N, H, W, C]), float32 or float64")
        .Input(1, "RoIs", rois)
        .Output(0, "Y", "[R, C, pooled_h, pooled_w] (NHWC: [R, pooled_h, pooled_w, C])")
        .Doc(doc);
  };
}

std::function<void(OpSchema&)> GradientSchema(const char* forward) {
  return [forward](OpSchema& schema) {
    schema.NumInputs(3)
        .NumOutputs(1)
        .Apply(CommonArgs)
        .Input(0, "X", std::string(forward) + "'s X")
        .Input(1, "RoIs", std::string(forward) + "'s RoIs")
        .Input(2, "dY", "gradient of Y")
        .Output(0, "dX", "gradient of X: each sample's share of dY on the pixels it interpolated")
        .Doc("Gradient of " + std::string(forward) +
             " with respect to X (the RoIs get none, as in Caffe2).");
  };
}

}  // namespace

OPERATOR_SCHEMA(RoIAlign).Apply(ForwardSchema(
    "[R, 5] (batch index, x1, y1, x2, y2) or [R, 4] for one image, X's type, in the image's "
    "coordinates",
    "Region of interest align (Mask R-CNN): each RoI pooled into pooled_h x pooled_w bins, each "
    "the average of bilinearly interpolated samples; samples beyond one pixel outside X count "
    "as 0."));
OPERATOR_SCHEMA(RoIAlignRotated)
    .Apply(ForwardSchema(
        "[R, 6] (batch index, ctr_x, ctr_y, w, h, angle in degrees counter-clockwise) or "
        "[R, 5] for one image, X's type, in the image's coordinates",
        "RoIAlign of rotated RoIs (RRPN): each RoI's bins laid out in its own frame, turned by "
        "its angle about its center; otherwise as RoIAlign."));
OPERATOR_SCHEMA(RoIAlignGradient).Apply(GradientSchema("RoIAlign"));
OPERATOR_SCHEMA(RoIAlignRotatedGradient).Apply(GradientSchema("RoIAlignRotated"));

REGISTER_GRADIENT(RoIAlign, GetRoIAlignGradient);
REGISTER_GRADIENT(RoIAlignRotated, GetRoIAlignGradient);
SHOULD_NOT_DO_GRADIENT(RoIAlignGradient,
                       "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(RoIAlignRotatedGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
