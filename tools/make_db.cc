// make_db: converts an MNIST-style dataset (IDX image and label files, as
// Fashion-MNIST ships them, gzip'd or not) into a DB of TensorProtos records
// that TensorProtosDBInput reads, with Caffe2's make_mnist_db flags and
// record layout:
//   key    "%08d" record index
//   value  TensorProtos{ image: BYTE, dims [1, rows, cols] (channel first) or
//                               [rows, cols, 1], pixels in byte_data;
//                        label: INT32 scalar (no dims), in int32_data }
//
// Both files are read and checked completely before the DB is created, so a
// bad input (wrong magic, truncated, counts that differ) leaves no output.

#include <gflags/gflags.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/db.h"
#include "core/enforce.h"
#include "operators/image_codec.h"
#include "proto/doppio.pb.h"
#include "tools/cli_util.h"

DEFINE_string(image_file, "", "IDX image file (magic 2051), gzip'd or raw; required");
DEFINE_string(label_file, "", "IDX label file (magic 2049), gzip'd or raw; required");
DEFINE_string(output_file, "",
              "the DB to create; required. An lmdb directory must not exist yet; a "
              "minidb file is replaced");
DEFINE_string(db, "lmdb", "the DB type: lmdb or minidb");
DEFINE_int32(data_limit, -1, "write only the first N records; -1 writes them all");
DEFINE_bool(channel_first, true,
            "image records as [1, rows, cols] (CHW); --nochannel_first writes "
            "[rows, cols, 1] (HWC)");
DEFINE_string(record_format, "tensor_protos",
              "tensor_protos (raw uint8 images, for TensorProtosDBInput), "
              "jpeg_tensor_protos or jpeg_datum (grayscale JPEG files, for ImageInput)");
DEFINE_int32(jpeg_quality, 90, "JPEG quality (1-100) of the jpeg_* record formats");

namespace doppio {
namespace {

constexpr const char* kTool = "make_db";

constexpr const char* kUsage =
    "converts MNIST-style IDX files into a DB of TensorProtos (image, label).\n"
    "\n"
    "  make_db --image_file=train-images-idx3-ubyte.gz \\\n"
    "          --label_file=train-labels-idx1-ubyte.gz \\\n"
    "          --output_file=fmnist_train_lmdb [--db=lmdb|minidb] \\\n"
    "          [--data_limit=N] [--nochannel_first]\n"
    "\n"
    "Records are keyed \"%08d\" by index; each holds the image (uint8/BYTE, dims\n"
    "[1,rows,cols], or [rows,cols,1] with --nochannel_first) and the label (int32\n"
    "scalar). Read them with CreateDB + TensorProtosDBInput.\n"
    "Exit status: 0 success, 1 failure (one line on stderr names the file),\n"
    "2 command-line error.";

// Magic numbers of the IDX format: unsigned bytes, 3 dims / 1 dim.
constexpr uint32_t kImageMagic = 2051;
constexpr uint32_t kLabelMagic = 2049;
// Records per LMDB/minidb transaction commit, as Caffe2's tool does.
constexpr int kRecordsPerCommit = 1000;

// The whole file, decompressed if it is gzip'd (zlib reads plain files
// through unchanged).
std::string ReadMaybeGzipped(const std::string& path) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  DOPPIO_ENFORCE(file != nullptr, "cannot open '", path, "': ",
                 errno != 0 ? std::strerror(errno) : "out of memory");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(file, gzclose);
  std::string bytes;
  std::vector<char> buffer(1 << 20);
  while (true) {
    const int got = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      DOPPIO_THROW("cannot read '", path, "': ", message,
                   code == Z_ERRNO ? std::string(" (") + std::strerror(errno) + ")" : "");
    }
    if (got == 0) break;
    bytes.append(buffer.data(), static_cast<size_t>(got));
  }
  int code = 0;
  const char* message = gzerror(file, &code);
  // A gzip stream cut short ends like a file, with the error left behind.
  DOPPIO_ENFORCE(code == Z_OK || code == Z_STREAM_END, "cannot read '", path, "': ", message,
                 " (is the gzip file truncated?)");
  return bytes;
}

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  }
  return value;
}

// An IDX file of unsigned bytes: its dims, and the offset where data begins.
struct IdxFile {
  std::string bytes;
  std::vector<uint64_t> dims;
  size_t data_offset = 0;
};

IdxFile ReadIdx(const std::string& path, uint32_t magic, const char* what) {
  IdxFile idx;
  idx.bytes = ReadMaybeGzipped(path);
  const size_t num_dims = magic & 0xff;
  const size_t header_bytes = 4 + 4 * num_dims;
  DOPPIO_ENFORCE(idx.bytes.size() >= 4, "'", path, "' is not an IDX ", what, " file: ",
                 idx.bytes.size(), " bytes, too short for a magic number");
  const uint32_t found = BigEndian32(idx.bytes, 0);
  if (found != magic) {
    const char* hint = found == kImageMagic   ? " (that of an image file)"
                       : found == kLabelMagic ? " (that of a label file)"
                                              : "";
    DOPPIO_THROW("'", path, "' is not an IDX ", what, " file: magic number ", found, hint,
                 ", expected ", magic);
  }
  DOPPIO_ENFORCE(idx.bytes.size() >= header_bytes, "'", path, "' is truncated: ",
                 idx.bytes.size(), " bytes, shorter than the ", header_bytes,
                 "-byte header of an IDX ", what, " file");
  uint64_t payload = 1;
  for (size_t d = 0; d < num_dims; ++d) {
    const uint64_t dim = BigEndian32(idx.bytes, 4 + 4 * d);
    idx.dims.push_back(dim);
    // Three 32-bit dims can overflow 64 bits; no real file comes close.
    DOPPIO_ENFORCE(dim == 0 || payload <= UINT64_MAX / dim, "'", path,
                   "' has implausible IDX dims ", idx.dims, "...");
    payload *= dim;
  }
  idx.data_offset = header_bytes;
  const uint64_t present = idx.bytes.size() - header_bytes;
  DOPPIO_ENFORCE(present >= payload, "'", path, "' is truncated: its header promises ",
                 idx.dims, " (", payload, " bytes) but only ", present, " bytes follow");
  DOPPIO_ENFORCE(present == payload, "'", path, "' has ", present - payload,
                 " bytes after the ", payload, " its header ", idx.dims, " promises");
  DOPPIO_ENFORCE(idx.dims[0] > 0, "'", path, "' holds no ", what, "s");
  return idx;
}

// The record of one (image, label) pair; `protos` is reused across records.
void FillRecord(const char* pixels, size_t num_pixels, uint8_t label, TensorProtos* protos) {
  protos->mutable_protos(0)->set_byte_data(pixels, num_pixels);
  protos->mutable_protos(1)->set_int32_data(0, label);
}

TensorProtos RecordTemplate(uint64_t rows, uint64_t cols) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  const std::vector<int64_t> dims =
      FLAGS_channel_first ? std::vector<int64_t>{1, static_cast<int64_t>(rows),
                                                 static_cast<int64_t>(cols)}
                          : std::vector<int64_t>{static_cast<int64_t>(rows),
                                                 static_cast<int64_t>(cols), 1};
  for (int64_t d : dims) image->add_dims(d);
  TensorProto* label = protos.add_protos();
  label->set_data_type(TensorProto::INT32);
  label->add_int32_data(0);
  return protos;
}

// The serialized record of image `i` in the --record_format chosen.
class RecordWriter {
 public:
  RecordWriter(uint64_t rows, uint64_t cols)
      : rows_(static_cast<int>(rows)),
        cols_(static_cast<int>(cols)),
        protos_(RecordTemplate(rows, cols)) {}

  void Serialize(const char* pixels, uint8_t label, std::string* value) {
    const size_t num_pixels = static_cast<size_t>(rows_) * cols_;
    if (FLAGS_record_format == "tensor_protos") {
      FillRecord(pixels, num_pixels, label, &protos_);
      DOPPIO_ENFORCE(protos_.SerializeToString(value), "cannot serialize a record");
      return;
    }
    const Image image{rows_, cols_, 1, std::vector<uint8_t>(pixels, pixels + num_pixels)};
    const std::string jpeg = EncodeJpeg(image, FLAGS_jpeg_quality);
    if (FLAGS_record_format == "jpeg_datum") {
      Datum datum;
      datum.set_channels(1);
      datum.set_height(rows_);
      datum.set_width(cols_);
      datum.set_encoded(true);
      datum.set_data(jpeg);
      datum.set_label(label);
      DOPPIO_ENFORCE(datum.SerializeToString(value), "cannot serialize a record");
      return;
    }
    TensorProtos protos;
    TensorProto* encoded = protos.add_protos();
    encoded->set_data_type(TensorProto::STRING);
    encoded->add_string_data(jpeg);
    TensorProto* label_proto = protos.add_protos();
    label_proto->set_data_type(TensorProto::INT32);
    label_proto->add_int32_data(label);
    DOPPIO_ENFORCE(protos.SerializeToString(value), "cannot serialize a record");
  }

 private:
  int rows_;
  int cols_;
  TensorProtos protos_;
};

int MakeDB() {
  if (FLAGS_image_file.empty()) throw cli::UsageError("--image_file is required");
  if (FLAGS_label_file.empty()) throw cli::UsageError("--label_file is required");
  if (FLAGS_output_file.empty()) throw cli::UsageError("--output_file is required");
  if (FLAGS_record_format != "tensor_protos" && FLAGS_record_format != "jpeg_tensor_protos" &&
      FLAGS_record_format != "jpeg_datum") {
    throw cli::UsageError(
        "--record_format must be tensor_protos, jpeg_tensor_protos or "
        "jpeg_datum, not '" +
        FLAGS_record_format + "'");
  }
  if (FLAGS_jpeg_quality < 1 || FLAGS_jpeg_quality > 100) {
    throw cli::UsageError("--jpeg_quality must be in [1, 100]");
  }
  if (FLAGS_data_limit < -1 || FLAGS_data_limit == 0) {
    throw cli::UsageError("--data_limit must be positive, or -1 for every record");
  }
  const auto start = std::chrono::steady_clock::now();

  const IdxFile images = ReadIdx(FLAGS_image_file, kImageMagic, "image");
  const IdxFile labels = ReadIdx(FLAGS_label_file, kLabelMagic, "label");
  DOPPIO_ENFORCE(images.dims[0] == labels.dims[0], "image file '", FLAGS_image_file,
                 "' holds ", images.dims[0], " images but label file '", FLAGS_label_file,
                 "' holds ", labels.dims[0], " labels");
  const uint64_t rows = images.dims[1], cols = images.dims[2];
  DOPPIO_ENFORCE(rows > 0 && cols > 0, "image file '", FLAGS_image_file,
                 "' has empty images: ", rows, "x", cols);
  uint64_t count = images.dims[0];
  if (FLAGS_data_limit > 0 && static_cast<uint64_t>(FLAGS_data_limit) < count) {
    count = static_cast<uint64_t>(FLAGS_data_limit);
  }
  DOPPIO_ENFORCE(count <= 100000000ull, "'", FLAGS_image_file, "' holds ", count,
                 " images; keys are 8 digits, so at most 100000000 fit");

  std::unique_ptr<db::DB> out = db::OpenDB(FLAGS_db, FLAGS_output_file, db::NEW);
  {
    std::unique_ptr<db::Transaction> transaction = out->NewTransaction();
    RecordWriter writer(rows, cols);
    const size_t num_pixels = static_cast<size_t>(rows * cols);
    const char* pixels = images.bytes.data() + images.data_offset;
    const char* label_bytes = labels.bytes.data() + labels.data_offset;
    std::string value;
    char key[16];
    for (uint64_t i = 0; i < count; ++i) {
      writer.Serialize(pixels + i * num_pixels, static_cast<uint8_t>(label_bytes[i]), &value);
      std::snprintf(key, sizeof(key), "%08llu", static_cast<unsigned long long>(i));
      transaction->Put(key, value);
      if ((i + 1) % kRecordsPerCommit == 0) transaction->Commit();
    }
    transaction->Commit();
  }
  out->Close();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string image_dims = FLAGS_channel_first
                                     ? MakeString("[1,", rows, ",", cols, "]")
                                     : MakeString("[", rows, ",", cols, ",1]");
  const std::string contents = FLAGS_record_format == "tensor_protos"
                                   ? "uint8 " + image_dims + " images, int32 labels"
                                   : FLAGS_record_format + " JPEG images, int32 labels";
  std::printf("make_db: wrote %llu records (%s) to %s db '%s' in %.2f s\n",
              static_cast<unsigned long long>(count), contents.c_str(), FLAGS_db.c_str(),
              FLAGS_output_file.c_str(), seconds);
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  using namespace doppio;
  return cli::RunFlagsOnlyTool(kTool, kUsage, "tools/make_db", argc, argv, MakeDB);
}
