#include "operators/image_input_op.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/types.h"

namespace doppio {

namespace {

// PCA of ImageNet's RGB pixels (AlexNet's lighting noise), as Caffe2 has it.
constexpr float kLightingEigvecs[3][3] = {{-144.7125f, 183.396f, 102.2295f},
                                          {-148.104f, -1.1475f, -207.57f},
                                          {-148.818f, -177.174f, 107.1765f}};
constexpr float kLightingEigvals[3] = {0.2175f, 0.0188f, 0.0045f};

void ReadNormalization(const ArgumentHelper& a, ImageInputArgs* args) {
  std::vector<float> mean = a.GetRepeated<float>("mean_per_channel", {});
  std::vector<float> std = a.GetRepeated<float>("std_per_channel", {});
  if (mean.empty()) mean = {a.GetSingle<float>("mean", 0.f)};
  if (std.empty()) std = {a.GetSingle<float>("std", 1.f)};
  DOPPIO_ENFORCE(mean.size() == std.size(),
                 "ImageInput: mean and std must have the same "
                 "number of values, got ",
                 mean.size(), " and ", std.size());
  DOPPIO_ENFORCE(mean.size() == 1 || mean.size() == 3,
                 "ImageInput: mean and std take 1 or 3 values, got ", mean.size());
  for (int c = 0; c < 3; ++c) {
    const size_t i = mean.size() == 1 ? 0 : c;
    DOPPIO_ENFORCE(std[i] != 0.f, "ImageInput: std must not be 0");
    args->mean[c] = mean[i];
    args->inv_std[c] = 1.f / std[i];
  }
}

void ReadGeometry(const ArgumentHelper& a, ImageInputArgs* args) {
  args->scale = a.GetSingle<int>("scale", -1);
  args->minsize = a.GetSingle<int>("minsize", -1);
  const std::vector<int> random_scale = a.GetRepeated<int>("random_scale", {-1, -1});
  DOPPIO_ENFORCE(random_scale.size() == 2, "ImageInput: random_scale is [min, max]");
  if (random_scale[0] != -1 && random_scale[1] != -1) {
    DOPPIO_ENFORCE(random_scale[0] > 0 && random_scale[1] >= random_scale[0],
                   "ImageInput: random_scale must be a range [min, max] of positive sizes");
    args->random_scale = {{random_scale[0], random_scale[1]}};
    args->minsize = random_scale[0];
  }
  args->warp = a.GetSingle<int>("warp", 0) != 0;
  args->crop = a.GetSingle<int>("crop", -1);
  args->inception_scale_jitter = a.GetSingle<int>("scale_jitter_type", 0) == 1;
  DOPPIO_ENFORCE((args->scale > 0) != (args->minsize > 0),
                 "ImageInput: give one and only one of scale and minsize");
  DOPPIO_ENFORCE(args->crop > 0, "ImageInput: crop (the output size) is required");
  DOPPIO_ENFORCE(std::max(args->scale, args->minsize) >= args->crop, "ImageInput: scale/minsize (",
                 std::max(args->scale, args->minsize), ") must be no smaller than crop (",
                 args->crop, ")");
  BoundingBox& box = args->default_box;
  box.ymin = a.GetSingle<int>("bounding_ymin", -1);
  box.xmin = a.GetSingle<int>("bounding_xmin", -1);
  box.height = a.GetSingle<int>("bounding_height", -1);
  box.width = a.GetSingle<int>("bounding_width", -1);
  box.valid = box.ymin >= 0 && box.xmin >= 0 && box.height > 0 && box.width > 0;
}

void ReadLabels(const ArgumentHelper& a, int num_outputs, ImageInputArgs* args) {
  const int label_type = a.GetSingle<int>("label_type", 0);
  DOPPIO_ENFORCE_SUPPORTED(label_type >= 0 && label_type <= 2, "ImageInput: label_type ",
                           label_type,
                           " (weighted labels) is not implemented; 0 (one label), "
                           "1 (sparse multi-label) and 2 (dense multi-label) are");
  args->label_type = static_cast<ImageInputArgs::LabelType>(label_type);
  args->num_labels = a.GetSingle<int>("num_labels", 0);
  DOPPIO_ENFORCE(label_type == 0 || args->num_labels > 0,
                 "ImageInput: num_labels must be set for multi-label label_type ", label_type);
  args->use_caffe_datum = a.GetSingle<int>("use_caffe_datum", 0) != 0;
  DOPPIO_ENFORCE(!args->use_caffe_datum || (label_type == 0 && num_outputs == 2),
                 "ImageInput: Caffe datums carry one integer label: 2 outputs, label_type 0");
  args->output_sizes = a.GetRepeated<int>("output_sizes", std::vector<int>(num_outputs - 2, 1));
  DOPPIO_ENFORCE(static_cast<int>(args->output_sizes.size()) == num_outputs - 2,
                 "ImageInput: output_sizes must give a size for each of the ", num_outputs - 2,
                 " additional outputs");
}

}  // namespace

ImageInputArgs ReadImageInputArgs(const OperatorDef& def) {
  const ArgumentHelper a(def);
  ImageInputArgs args;
  args.batch_size = a.GetSingle<int>("batch_size", 0);
  DOPPIO_ENFORCE(args.batch_size > 0, "ImageInput: batch_size must be positive, got ",
                 args.batch_size);
  args.channels = a.GetSingle<int>("color", 1) ? 3 : 1;
  args.color_jitter = a.GetSingle<int>("color_jitter", 0) != 0;
  args.saturation = a.GetSingle<float>("img_saturation", 0.4f);
  args.brightness = a.GetSingle<float>("img_brightness", 0.4f);
  args.contrast = a.GetSingle<float>("img_contrast", 0.4f);
  args.color_lighting = a.GetSingle<int>("color_lighting", 0) != 0;
  args.color_lighting_std = a.GetSingle<float>("color_lighting_std", 0.1f);
  args.mirror = a.GetSingle<int>("mirror", 0) != 0;
  args.is_test = a.GetSingle<int>("is_test", 0) != 0;
  args.nchw_output = a.GetSingle<int>("use_gpu_transform", 0) != 0;
  args.decode_threads = a.GetSingle<int>("decode_threads", 4);
  DOPPIO_ENFORCE(args.decode_threads > 0 && args.decode_threads <= 256,
                 "ImageInput: decode_threads must be in [1, 256], got ", args.decode_threads);
  if (a.Has("output_type")) {
    const std::string type = a.GetSingle<std::string>("output_type", "float");
    DOPPIO_ENFORCE(type == "float" || type == "float16",
                   "ImageInput: output_type is 'float' "
                   "or 'float16', got '",
                   type, "'");
    args.output_type = type == "float16" ? DataType::kFloat16 : DataType::kFloat;
  }
  ReadNormalization(a, &args);
  ReadGeometry(a, &args);
  ReadLabels(a, def.output_size(), &args);
  return args;
}

// ---- one batch ----

struct ImageInputOp::Batch {
  std::vector<Tensor>* tensors;  // image, label, additional outputs
  std::string source;            // for messages
};

namespace {

std::string RecordName(const std::string& source, const std::string& key) {
  return "record '" + key + "' of " + source;
}

// The image tensor proto of a TensorProtos record as an Image.
Image ImageFromProto(const TensorProto& proto, int channels, const std::string& what) {
  if (proto.data_type() == TensorProto::STRING) {
    DOPPIO_ENFORCE(proto.string_data_size() == 1, what,
                   ": an encoded image tensor holds one "
                   "string, not ",
                   proto.string_data_size());
    return ConvertChannels(DecodeJpeg(proto.string_data(0), channels, what), channels);
  }
  DOPPIO_ENFORCE(proto.data_type() == TensorProto::BYTE || proto.data_type() == TensorProto::UINT8,
                 what,
                 ": the image tensor must be STRING (an encoded image) or BYTE/UINT8 "
                 "(raw HWC pixels), not ",
                 TensorProto::DataType_Name(proto.data_type()));
  DOPPIO_ENFORCE(proto.dims_size() == 2 || proto.dims_size() == 3, what,
                 ": a raw image tensor has dims [H, W] or [H, W, C]");
  const int image_channels = proto.dims_size() == 3 ? static_cast<int>(proto.dims(2)) : 1;
  std::string bytes = proto.byte_data();
  if (proto.data_type() == TensorProto::UINT8 && bytes.empty()) {
    bytes.reserve(proto.int32_data_size());
    for (int32_t v : proto.int32_data()) bytes.push_back(static_cast<char>(v));
  }
  const Image raw = RawImage(bytes, static_cast<int>(proto.dims(0)),
                             static_cast<int>(proto.dims(1)), image_channels, what);
  return ConvertChannels(raw, channels);
}

// A Caffe Datum record: its image (raw CHW bytes become HWC) and label.
Image ImageFromDatum(const Datum& datum, int channels, const std::string& what) {
  if (datum.encoded()) return ConvertChannels(DecodeJpeg(datum.data(), channels, what), channels);
  const int c = datum.channels();
  DOPPIO_ENFORCE(c == 1 || c == 3, what, ": a raw datum has 1 or 3 channels, not ", c);
  const Image chw = RawImage(datum.data(), datum.height(), datum.width(), c, what);
  Image hwc{chw.height, chw.width, c, std::vector<uint8_t>(chw.pixels.size())};
  const size_t plane = static_cast<size_t>(chw.height) * chw.width;
  for (int k = 0; k < c; ++k) {
    for (size_t p = 0; p < plane; ++p) hwc.pixels[p * c + k] = chw.pixels[k * plane + p];
  }
  return ConvertChannels(hwc, channels);
}

template <typename T>
void WriteLabel(const std::vector<T>& values, const ImageInputArgs& args, int item,
                const std::string& what, Tensor* label) {
  if (args.label_type == ImageInputArgs::kSingleLabel) {
    DOPPIO_ENFORCE(values.size() == 1, what, ": a single label, got ", values.size(), " values");
    label->mutable_data<T>()[item] = values[0];
    return;
  }
  T* row = label->mutable_data<T>() + static_cast<int64_t>(item) * args.num_labels;
  if (args.label_type == ImageInputArgs::kMultiLabelDense) {
    DOPPIO_ENFORCE(static_cast<int>(values.size()) == args.num_labels, what,
                   ": a dense label "
                   "of ",
                   args.num_labels, " values, got ", values.size());
    std::copy(values.begin(), values.end(), row);
    return;
  }
  std::fill(row, row + args.num_labels, T(0));
  for (T index : values) {
    const int64_t i = static_cast<int64_t>(index);
    DOPPIO_ENFORCE(i >= 0 && i < args.num_labels, what, ": label index ", i, " outside [0, ",
                   args.num_labels, ")");
    row[i] = T(1);
  }
}

void WriteLabelProto(const TensorProto& proto, const ImageInputArgs& args, int item,
                     const std::string& what, Tensor* label) {
  const DataType want = label->dtype();
  if (proto.data_type() == TensorProto::INT32 && want == DataType::kInt32) {
    WriteLabel(std::vector<int>(proto.int32_data().begin(), proto.int32_data().end()), args, item,
               what, label);
  } else if (proto.data_type() == TensorProto::FLOAT && want == DataType::kFloat) {
    WriteLabel(std::vector<float>(proto.float_data().begin(), proto.float_data().end()), args, item,
               what, label);
  } else {
    DOPPIO_THROW(what, ": its label is ", TensorProto::DataType_Name(proto.data_type()),
                 " but the batch's first record's is ", DataTypeName(want),
                 " (labels are INT32 or FLOAT, one type per batch)");
  }
}

void WriteExtraProto(const TensorProto& proto, int size, int item, const std::string& what,
                     Tensor* out) {
  auto copy = [&](const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    DOPPIO_ENFORCE(values.size() == size, what, ": an additional output of ", size,
                   " values per image, got ", values.size());
    std::copy(values.begin(), values.end(), out->mutable_data<T>() + int64_t{item} * size);
  };
  if (proto.data_type() == TensorProto::FLOAT && out->dtype() == DataType::kFloat) {
    copy(proto.float_data());
  } else if (proto.data_type() == TensorProto::INT32 && out->dtype() == DataType::kInt32) {
    copy(proto.int32_data());
  } else if (proto.data_type() == TensorProto::INT64 && out->dtype() == DataType::kInt64) {
    copy(proto.int64_data());
  } else {
    DOPPIO_THROW(what,
                 ": additional outputs are FLOAT, INT32 or INT64 of the batch's first "
                 "record's type");
  }
}

}  // namespace

// ---- per image ----

namespace {

// Caffe2's Inception-style crop: up to 10 tries at a random window of 8% to
// 100% of the area with aspect ratio in [3/4, 4/3], resized to crop x crop.
bool RandomSizedCrop(Image* image, int crop, std::mt19937* rng) {
  const int area = image->height * image->width;
  std::uniform_real_distribution<> area_fraction(0.08, 1.0);
  std::uniform_real_distribution<> aspect_ratio(3.0 / 4.0, 4.0 / 3.0);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int target = static_cast<int>(std::ceil(area_fraction(*rng) * area));
    const float ratio = static_cast<float>(aspect_ratio(*rng));
    const int h = static_cast<int>(std::floor(std::sqrt(static_cast<float>(target) / ratio)));
    const int w = static_cast<int>(std::floor(std::sqrt(static_cast<float>(target) * ratio)));
    if (h < 1 || h > image->height || w < 1 || w > image->width) continue;
    const int y = std::uniform_int_distribution<>(0, image->height - h)(*rng);
    const int x = std::uniform_int_distribution<>(0, image->width - w)(*rng);
    *image = ResizeArea(CropImage(*image, y, x, h, w), crop, crop);
    return true;
  }
  return false;
}

// The shorter side to `scale` (or up to `minsize`), or both sides with warp.
void ScaleImage(const ImageInputArgs& args, std::mt19937* rng, Image* image) {
  int target = args.scale > 0 ? args.scale : args.minsize;
  if (args.random_scaling()) {
    target = std::uniform_int_distribution<>(args.random_scale[0], args.random_scale[1])(*rng);
  }
  int height = target, width = target;
  if (!args.warp && image->height > image->width) {
    height = static_cast<int>(static_cast<float>(image->height) * target / image->width);
  } else if (!args.warp) {
    width = static_cast<int>(static_cast<float>(image->width) * target / image->height);
  }
  const bool changes = height != image->height || width != image->width;
  const bool grows = height > image->height || width > image->width;
  // scale always resizes; minsize only enlarges.
  if ((args.scale > 0 && changes) || grows) *image = ResizeArea(*image, height, width);
}

float Gray(const float* bgr) { return bgr[0] * 0.114f + bgr[1] * 0.587f + bgr[2] * 0.299f; }

void JitterColor(const ImageInputArgs& args, int pixels, std::mt19937* rng, float* hwc) {
  std::array<int, 3> order{{0, 1, 2}};
  std::shuffle(order.begin(), order.end(), *rng);
  for (int step : order) {
    const float limit = step == 0 ? args.saturation : step == 1 ? args.brightness : args.contrast;
    const float alpha = 1.f + std::uniform_real_distribution<float>(-limit, limit)(*rng);
    float gray_mean = 0.f;
    if (step == 2) {
      for (int p = 0; p < pixels; ++p) gray_mean += Gray(hwc + 3 * p);
      gray_mean /= pixels;
    }
    for (int p = 0; p < pixels; ++p) {
      float* bgr = hwc + 3 * p;
      const float gray = step == 0 ? Gray(bgr) : gray_mean;
      for (int c = 0; c < 3; ++c) {
        bgr[c] = step == 1 ? bgr[c] * alpha : bgr[c] * alpha + gray * (1.f - alpha);
      }
    }
  }
}

void AddLighting(float std, int pixels, std::mt19937* rng, float* hwc) {
  std::normal_distribution<float> noise(0.f, std);
  std::array<float, 3> alphas{};
  for (float& alpha : alphas) alpha = noise(*rng);
  std::array<float, 3> delta_rgb{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      delta_rgb[i] += kLightingEigvecs[i][j] * kLightingEigvals[j] * alphas[j];
  }
  for (int p = 0; p < pixels; ++p) {
    for (int c = 0; c < 3; ++c) hwc[3 * p + c] += delta_rgb[2 - c];  // BGR pixels
  }
}

// The crop x crop window (random, or central in test), mirrored at random
// in training, as floats (HWC), then the training-only color noise and the
// normalization.
std::vector<float> CropAndNormalize(const ImageInputArgs& args, const Image& image,
                                    const std::string& what, std::mt19937* rng) {
  const int crop = args.crop, c = image.channels;
  DOPPIO_ENFORCE(image.height >= crop && image.width >= crop, what, ": the image is ", image.height,
                 " x ", image.width, " after scaling, smaller than crop ", crop);
  int y = (image.height - crop) / 2, x = (image.width - crop) / 2;
  if (!args.is_test) {
    x = std::uniform_int_distribution<>(0, image.width - crop)(*rng);
    y = std::uniform_int_distribution<>(0, image.height - crop)(*rng);
  }
  const bool mirror = !args.is_test && args.mirror && std::bernoulli_distribution(0.5)(*rng);
  std::vector<float> out(static_cast<size_t>(crop) * crop * c);
  float* q = out.data();
  for (int row = y; row < y + crop; ++row) {
    for (int i = 0; i < crop; ++i) {
      const int col = mirror ? x + crop - 1 - i : x + i;
      const uint8_t* p = image.row(row) + static_cast<size_t>(col) * c;
      for (int k = 0; k < c; ++k) *q++ = p[k];
    }
  }
  if (c == 3 && !args.is_test && args.color_jitter) JitterColor(args, crop * crop, rng, out.data());
  if (c == 3 && !args.is_test && args.color_lighting) {
    AddLighting(args.color_lighting_std, crop * crop, rng, out.data());
  }
  for (size_t p = 0; p < out.size(); ++p) {
    const int k = static_cast<int>(p % c);
    out[p] = (out[p] - args.mean[k]) * args.inv_std[k];
  }
  return out;
}

// Writes one image (HWC floats) as item `item` of the batch tensor.
void StoreImage(const ImageInputArgs& args, const std::vector<float>& hwc, int item,
                Tensor* images) {
  const int64_t plane = int64_t{args.crop} * args.crop;
  const int c = args.channels;
  const int64_t offset = item * plane * c;
  auto store = [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    for (int64_t p = 0; p < plane; ++p) {
      for (int k = 0; k < c; ++k) {
        const int64_t at = args.nchw_output ? offset + k * plane + p : offset + p * c + k;
        if constexpr (std::is_same<T, float16>::value) {
          data[at] = FloatToHalf(hwc[p * c + k]);
        } else {
          data[at] = hwc[p * c + k];
        }
      }
    }
  };
  if (images->dtype() == DataType::kFloat16) {
    store(images->mutable_data<float16>());
  } else {
    store(images->mutable_data<float>());
  }
}

}  // namespace

// ---- the op ----

ImageInputOp::ImageInputOp(const OperatorDef& def, Workspace* workspace)
    : PrefetchOperator<CPUContext>(def, workspace),
      args_(ReadImageInputArgs(def)),
      base_seed_(context_.RandGenerator()()),
      prefetched_(kPrefetchDepth) {
  DOPPIO_ENFORCE(OutputSize() >= 2,
                 "ImageInput outputs the images and the labels (and "
                 "optional additional outputs), got ",
                 OutputSize(), " outputs");
  for (std::vector<Tensor>& slot : prefetched_) slot.resize(OutputSize());
  if (InputSize() == 0) {
    // Caffe2's old form: the op opens its own reader from db / db_type.
    const std::string db = GetSingleArgument<std::string>("db", "");
    DOPPIO_ENFORCE(!db.empty(), "ImageInput without a reader input needs the argument 'db'");
    owned_reader_ =
        std::make_unique<db::DBReader>(GetSingleArgument<std::string>("db_type", "leveldb"), db);
  }
}

const db::DBReader& ImageInputOp::Reader() const {
  return owned_reader_ ? *owned_reader_ : InputAs<db::DBReader>(0);
}

std::string ImageInputOp::DataSourceDescription() const {
  if (!owned_reader_) {
    const Blob& blob = InputBlob(0);
    if (!blob.IsType<db::DBReader>()) {
      return MakeString("input '", input_name(0), "' (which holds ", blob.TypeName(),
                        ", not a DBReader from CreateDB)");
    }
  }
  const db::DBReader& reader = Reader();
  if (!reader.is_open()) return "an unopened DBReader";
  return MakeString(reader.db_type(), " db '", reader.source(), "'");
}

void ImageInputOp::PrepareBatch(const std::string& key, const std::string& value,
                                Batch* batch) const {
  std::vector<Tensor>& t = *batch->tensors;
  const int n = args_.batch_size, crop = args_.crop, c = args_.channels;
  t[0].Resize(args_.nchw_output ? std::vector<int64_t>{n, c, crop, crop}
                                : std::vector<int64_t>{n, crop, crop, c});
  t[0].raw_mutable_data(args_.nchw_output ? args_.output_type : DataType::kFloat);
  t[1].Resize(args_.label_type == ImageInputArgs::kSingleLabel
                  ? std::vector<int64_t>{n}
                  : std::vector<int64_t>{n, args_.num_labels});
  if (args_.use_caffe_datum) {
    t[1].raw_mutable_data(DataType::kInt32);
    return;
  }
  TensorProtos protos;
  const std::string what = RecordName(batch->source, key);
  DOPPIO_ENFORCE(protos.ParseFromString(value), what,
                 " is not a serialized TensorProtos "
                 "(set use_caffe_datum=1 for Caffe Datum records)");
  DOPPIO_ENFORCE(protos.protos_size() >= 2 + static_cast<int>(args_.output_sizes.size()), what,
                 " has ", protos.protos_size(), " tensors; the image, the label and ",
                 args_.output_sizes.size(), " additional outputs were expected");
  const int label_type = protos.protos(1).data_type();
  DOPPIO_ENFORCE(label_type == TensorProto::INT32 || label_type == TensorProto::FLOAT, what,
                 ": the label is ", TensorProto::DataType_Name(protos.protos(1).data_type()),
                 "; labels are INT32 or FLOAT");
  t[1].raw_mutable_data(label_type == TensorProto::INT32 ? DataType::kInt32 : DataType::kFloat);
  for (size_t i = 0; i < args_.output_sizes.size(); ++i) {
    const TensorProto& extra = protos.protos(2 + i);
    t[2 + i].Resize({n, args_.output_sizes[i]});
    t[2 + i].raw_mutable_data(extra.data_type() == TensorProto::INT32   ? DataType::kInt32
                              : extra.data_type() == TensorProto::INT64 ? DataType::kInt64
                                                                        : DataType::kFloat);
  }
}

void ImageInputOp::ProcessItem(const std::string& key, const std::string& value, int item,
                               Batch* batch) const {
  const std::string what = RecordName(batch->source, key);
  std::vector<Tensor>& t = *batch->tensors;
  Image image;
  BoundingBox box = args_.default_box;
  if (args_.use_caffe_datum) {
    Datum datum;
    DOPPIO_ENFORCE(datum.ParseFromString(value), what, " is not a serialized Caffe Datum");
    image = ImageFromDatum(datum, args_.channels, what);
    t[1].mutable_data<int32_t>()[item] = datum.label();
  } else {
    TensorProtos protos;
    DOPPIO_ENFORCE(protos.ParseFromString(value), what, " is not a serialized TensorProtos");
    const int extras = static_cast<int>(args_.output_sizes.size());
    DOPPIO_ENFORCE(protos.protos_size() >= 2 + extras, what, " has too few tensors");
    image = ImageFromProto(protos.protos(0), args_.channels, what);
    WriteLabelProto(protos.protos(1), args_, item, what, &t[1]);
    for (int i = 0; i < extras; ++i) {
      WriteExtraProto(protos.protos(2 + i), args_.output_sizes[i], item, what, &t[2 + i]);
    }
    if (protos.protos_size() == 3 + extras) {
      const TensorProto& b = protos.protos(2 + extras);
      DOPPIO_ENFORCE(b.data_type() == TensorProto::INT32 && b.int32_data_size() == 4, what,
                     ": a bounding box is 4 INT32 values [ymin, xmin, height, width]");
      box = {true, b.int32_data(0), b.int32_data(1), b.int32_data(2), b.int32_data(3)};
    }
  }
  if (box.valid && box.ymin >= 0 && box.xmin >= 0 && box.height > 0 && box.width > 0 &&
      box.ymin + box.height <= image.height && box.xmin + box.width <= image.width) {
    image = CropImage(image, box.ymin, box.xmin, box.height, box.width);
  }
  // Each image's generator depends only on the op's seed, the batch and the
  // position: the same batches whatever the threads.
  std::seed_seq seed{base_seed_, static_cast<uint32_t>(batches_read_),
                     static_cast<uint32_t>(batches_read_ >> 32), static_cast<uint32_t>(item)};
  std::mt19937 rng(seed);
  const bool jittered =
      args_.inception_scale_jitter && !args_.is_test && RandomSizedCrop(&image, args_.crop, &rng);
  if (!jittered) ScaleImage(args_, &rng, &image);
  StoreImage(args_, CropAndNormalize(args_, image, what, &rng), item, &t[0]);
}

bool ImageInputOp::SourceChanged() const {
  return !owned_reader_ && position_.Changed(InputBlob(0));
}

void ImageInputOp::Prefetch(int slot) {
  const db::DBReader& reader = Reader();
  std::vector<std::pair<std::string, std::string>> records(args_.batch_size);
  const ReaderPosition::Start start = position_.BeforeFetch(reader);
  if (start.restart) {
    // Where an uninterrupted run stood: its reader after the records it had
    // handed out, and its batch count, which seeds each image's randomness.
    // Only the op replaying rewinds: another op sharing the reader finds it
    // where it should be.
    if (start.replay > 0) reader.SeekToFirst();
    std::pair<std::string, std::string> dropped;
    for (int64_t i = 0; i < start.replay; ++i) reader.Read(&dropped.first, &dropped.second);
    batches_read_ = static_cast<uint64_t>(start.replay / args_.batch_size);
  }
  Batch batch{&prefetched_[slot], DataSourceDescription()};
  for (auto& record : records) reader.Read(&record.first, &record.second);
  PrepareBatch(records[0].first, records[0].second, &batch);
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&](int first) {
    for (int item = first; item < args_.batch_size; item += args_.decode_threads) {
      try {
        ProcessItem(records[item].first, records[item].second, item, &batch);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  const int threads = std::min(args_.decode_threads, args_.batch_size);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work, i);
  work(0);
  for (std::thread& thread : pool) thread.join();
  ++batches_read_;
  if (failure) std::rethrow_exception(failure);
}

void ImageInputOp::CopyPrefetched(int slot) {
  for (int i = 0; i < OutputSize(); ++i) Output(i)->CopyFrom(prefetched_[slot][i]);
  // What a checkpoint of the reader resumes from (core/db.h).
  Reader().AddConsumed(args_.batch_size);
}

REGISTER_CPU_OPERATOR(ImageInput, ImageInputOp);

// The schema: image_input_schema.cc.

}  // namespace doppio
