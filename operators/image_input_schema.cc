// ImageInput's schema, the documentation of its arguments (Caffe2's
// names); the op is in image_input_op.cc.
#include <climits>

#include "core/gradient.h"
#include "core/schema.h"

namespace doppio {

OPERATOR_SCHEMA(ImageInput)
    .NumInputs(0, 1)
    .NumOutputs(2, INT_MAX)
    .Arg("batch_size", "(int, required) images per run")
    .Arg("scale", "(int) resize so the shorter side is this long (one of scale / minsize)")
    .Arg("minsize", "(int) enlarge images whose shorter side is below this")
    .Arg("random_scale", "(ints [min, max]) a random shorter side per image instead")
    .Arg("warp", "(int, default 0) resize both sides to scale / minsize (no aspect kept)")
    .Arg("crop", "(int, required) output height and width")
    .Arg("mirror", "(int, default 0) flip half of the images left-right in training")
    .Arg("is_test", "(int, default 0) central crop, no mirroring or color noise")
    .Arg("color", "(int, default 1) 3 channels (BGR) or, with 0, grayscale")
    .Arg("mean", "(float, default 0) subtracted from every channel")
    .Arg("std", "(float, default 1) every channel is divided by it")
    .Arg("mean_per_channel", "(floats) per-channel mean (BGR order)")
    .Arg("std_per_channel", "(floats) per-channel std (BGR order)")
    .Arg("use_caffe_datum", "(int, default 0) records are Caffe Datums, not TensorProtos")
    .Arg("label_type", "(int, default 0) 0 one label; 1 sparse multi-label; 2 dense")
    .Arg("num_labels", "(int) label width for label_type 1 and 2")
    .Arg("output_sizes", "(ints) values per image of each additional output")
    .Arg("scale_jitter_type", "(int, default 0) 1: Inception-style random sized crops")
    .Arg("color_jitter", "(int, default 0) random saturation, brightness and contrast")
    .Arg("img_saturation", "(float, default 0.4) saturation jitter range")
    .Arg("img_brightness", "(float, default 0.4) brightness jitter range")
    .Arg("img_contrast", "(float, default 0.4) contrast jitter range")
    .Arg("color_lighting", "(int, default 0) AlexNet's PCA lighting noise")
    .Arg("color_lighting_std", "(float, default 0.1) its standard deviation")
    .Arg("bounding_ymin", "(int) default bounding box (with xmin, height, width)")
    .Arg("decode_threads", "(int, default 4) threads decoding one batch")
    .Arg("use_gpu_transform",
         "(int, default 0) output NCHW in output_type, as Caffe2's GPU "
         "transform did")
    .Arg("output_type",
         "(string, default 'float') 'float' or 'float16' with "
         "use_gpu_transform")
    .Arg("db", "(string) the db to open when there is no reader input (old form)")
    .Arg("db_type", "(string, default 'leveldb') its type")
    .Input(0, "reader", "a DBReader (CreateDB) over TensorProtos or Datum records")
    .Output(0, "data",
            "images, NHWC float [batch, crop, crop, C] (NCHW with "
            "use_gpu_transform)")
    .Output(1, "label", "int32 or float labels: [batch], or [batch, num_labels]")
    .Doc(
        "Caffe2's ImageInput: decodes a batch of JPEG (or raw) images from a db, "
        "resizes, crops, mirrors, normalizes (see operators/image_input_op.h); a "
        "background thread reads the next batches.");

NO_GRADIENT(ImageInput, "it reads its outputs from a db");

}  // namespace doppio
