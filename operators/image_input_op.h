// ImageInput: Caffe2's image reader. Each run outputs a batch of images
// decoded from a DB (LMDB, minidb ...) and transformed as for training or
// testing, with their labels:
//
//   reader = CreateDB([], db=PATH, db_type="lmdb")
//   data_nhwc, label = ImageInput([reader], batch_size=32, scale=256, crop=224,
//                                 mirror=1, mean=128., std=128., is_test=0)
//
// Records are Caffe2 TensorProtos (an encoded image as a STRING tensor, or
// raw HWC bytes as a BYTE/UINT8 tensor; then the label; then one tensor per
// additional output; optionally a final INT32 [ymin, xmin, height, width]
// bounding box), or Caffe's Datum with use_caffe_datum=1. Per image: decode
// (JPEG; color images in BGR order, as Caffe2 got them from OpenCV), apply
// the bounding box, resize (shorter side to `scale`, or up to `minsize`, or
// both sides with `warp`; INTER_AREA), crop `crop` x `crop` (random in
// training, central in test), mirror at random (training, `mirror`),
// optionally jitter color / add PCA lighting noise (training), then
// subtract `mean` and divide by `std` per channel. The output is NHWC float
// [batch, crop, crop, C]; use_gpu_transform=1 gives NCHW in `output_type`
// (float or float16), what Caffe2's GPU transform produced.
//
// Doppio differences, none visible in the results' distribution:
//   * randomness comes from the op's DeviceOption.random_seed (each image's
//     generator is seeded from it, the batch and the position), so a seeded
//     net reads the same batches whatever decode_threads is;
//   * a bad record (not parsing, not a JPEG, a truncated image, a crop larger
//     than the image) is an error naming the db and the record's key, where
//     Caffe2 aborted the process;
//   * the weighted label types (3, 4) are not implemented (a clear error).
//
// Thread-safety: one batch is decoded at a time, on `decode_threads`
// threads that share nothing but the op's read-only arguments.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/db.h"
#include "core/tensor.h"
#include "operators/image_codec.h"
#include "operators/prefetch_op.h"
#include "operators/reader_position.h"
#include "proto/doppio.pb.h"

namespace doppio {

struct BoundingBox {
  bool valid = false;
  int ymin = 0;
  int xmin = 0;
  int height = 0;
  int width = 0;
};

// ImageInput's arguments, checked (Caffe2's names and defaults).
struct ImageInputArgs {
  enum LabelType { kSingleLabel = 0, kMultiLabelSparse = 1, kMultiLabelDense = 2 };
  int batch_size = 0;
  LabelType label_type = kSingleLabel;
  int num_labels = 0;
  int channels = 3;  // color=1 -> 3 (BGR), color=0 -> 1
  bool color_jitter = false;
  float saturation = 0.4f;
  float brightness = 0.4f;
  float contrast = 0.4f;
  bool color_lighting = false;
  float color_lighting_std = 0.1f;
  bool inception_scale_jitter = false;  // scale_jitter_type 1
  int scale = -1;
  int minsize = -1;
  std::array<int, 2> random_scale{{-1, -1}};  // [min, max] shorter side
  bool warp = false;
  int crop = -1;
  bool mirror = false;
  bool is_test = false;
  bool use_caffe_datum = false;
  bool nchw_output = false;  // use_gpu_transform
  DataType output_type = DataType::kFloat;
  int decode_threads = 4;
  std::array<float, 3> mean{{0, 0, 0}};
  std::array<float, 3> inv_std{{1, 1, 1}};
  BoundingBox default_box;
  std::vector<int> output_sizes;  // elements per image of each additional output

  bool random_scaling() const { return random_scale[0] > 0; }
};

ImageInputArgs ReadImageInputArgs(const OperatorDef& def);

class ImageInputOp final : public PrefetchOperator<CPUContext> {
 public:
  ImageInputOp(const OperatorDef& def, Workspace* workspace);
  ~ImageInputOp() override { Finalize(); }

 protected:
  void Prefetch(int slot) override;
  void CopyPrefetched(int slot) override;
  std::string DataSourceDescription() const override;
  bool SourceChanged() const override;

 private:
  struct Batch;
  const db::DBReader& Reader() const;
  // Sets the label and additional outputs' types from the batch's first record.
  void PrepareBatch(const std::string& key, const std::string& value, Batch* batch) const;
  // Decodes and transforms record `item` into the batch (any thread).
  void ProcessItem(const std::string& key, const std::string& value, int item, Batch* batch) const;

  ImageInputArgs args_;
  std::unique_ptr<db::DBReader> owned_reader_;  // the old form: db / db_type arguments
  uint32_t base_seed_;
  uint64_t batches_read_ = 0;  // prefetch thread only
  // Which reader the prefetched batches come from: a reader restored from
  // a checkpoint replays the records the op had handed out (core/db.h).
  ReaderPosition position_;
  // Per prefetch slot: image, label, additional outputs.
  std::vector<std::vector<Tensor>> prefetched_;
};

}  // namespace doppio
