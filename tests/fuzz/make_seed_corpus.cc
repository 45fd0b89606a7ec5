// Writes the seed inputs of the fuzz targets that Doppio's own writers make:
// checkpoints saved by the Save op (minidb and lmdb), BlobProtos and
// TensorProtos as serialization writes them, .npy files from WriteNpyFile
// plus a few numpy variants written by hand, and NetDefs / PlanDefs that
// reach the interesting paths (runnable nets, dag nets, I/O ops, plans with
// substeps). Caffe2's own vectors are copied into the corpus as they are.
//
//   bazel run //tests/fuzz:make_seed_corpus -- $PWD/tests/fuzz/corpus
//
// Only files named seed_* are (re)written; crash reproducers and Caffe2's
// files beside them are left alone.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>

#include "core/db.h"
#include "core/npy.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/serialization.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

namespace {

namespace fs = std::filesystem;
using doppio::DataType;
using doppio::Tensor;

std::string g_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = fs::path(g_root) / target;
  fs::create_directories(dir);
  std::ofstream file(dir / name, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw doppio::Error("cannot write " + (dir / name).string());
}

template <typename Message>
Message FromText(const std::string& text) {
  Message message;
  if (!google::protobuf::TextFormat::ParseFromString(text, &message)) {
    throw doppio::Error("bad seed text proto:\n" + text);
  }
  return message;
}

template <typename T>
Tensor MakeTensor(const std::vector<int64_t>& dims, const std::vector<T>& values) {
  Tensor tensor(dims, doppio::DataTypeFor<T>());
  T* data = tensor.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return tensor;
}

// A workspace holding one small tensor of each kind the savers handle.
void FillCheckpointBlobs(doppio::Workspace* workspace) {
  workspace->CreateBlob("w")->GetMutableTensor()->CopyFrom(
      MakeTensor<float>({2, 3}, {0.5f, -1.f, 2.f, 0.f, 3.25f, -7.f}));
  workspace->CreateBlob("ids")->GetMutableTensor()->CopyFrom(
      MakeTensor<int64_t>({4}, {0, 1, -1, 1LL << 40}));
  workspace->CreateBlob("mask")->GetMutableTensor()->CopyFrom(
      MakeTensor<bool>({3}, {true, false, true}));
  workspace->CreateBlob("names")->GetMutableTensor()->CopyFrom(
      MakeTensor<std::string>({2}, {"a", "bc"}));
  workspace->CreateBlob("half")->GetMutableTensor()->CopyFrom(
      MakeTensor<doppio::float16>({1}, {doppio::FloatToHalf(1.5f)}));
  workspace->CreateBlob("empty")->GetMutableTensor()->CopyFrom(
      MakeTensor<double>({0, 2}, {}));
}

// Saves the blobs above with Save, in chunks of 2 elements so that blobs
// have several keys with segments.
void SaveCheckpoint(const std::string& db_type, const std::string& path) {
  doppio::Workspace workspace;
  FillCheckpointBlobs(&workspace);
  workspace.RunOperatorOnce(FromText<doppio::OperatorDef>(
      "type: 'Save' input: 'w' input: 'ids' input: 'mask' input: 'names' input: 'half' "
      "input: 'empty' arg { name: 'db' s: '" + path + "' } arg { name: 'db_type' s: '" +
      db_type + "' } arg { name: 'chunk_size' i: 2 } arg { name: 'absolute_path' i: 1 }"));
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!file.good() && !file.eof()) throw doppio::Error("cannot read " + path);
  return bytes;
}

// An lmdb with every page kind: hundreds of small records (several leaf
// pages under a branch page) and values too big for a page (overflow runs).
void WriteLMDBTreeSeed(const std::string& path) {
  std::vector<float> values(2100);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  doppio::Blob many, big;
  many.GetMutableTensor()->CopyFrom(
      MakeTensor<float>({1200}, std::vector<float>(values.begin(), values.begin() + 1200)));
  big.GetMutableTensor()->CopyFrom(MakeTensor<float>({3, 700}, values));
  {
    std::unique_ptr<doppio::db::DB> db = doppio::db::OpenDB("lmdb", path, doppio::db::NEW);
    std::unique_ptr<doppio::db::Transaction> txn = db->NewTransaction();
    auto put = [&txn](const std::string& key, const std::string& value) { txn->Put(key, value); };
    doppio::SerializeBlob(many, "many", put, /*chunk_size=*/3);
    doppio::SerializeBlob(big, "big", put, /*chunk_size=*/700);
    txn->Commit();
  }
  Write("lmdb_fuzz", "seed_tree_and_overflow.mdb", ReadFile(path + "/data.mdb"));
}

void WriteDBSeeds(const std::string& scratch) {
  const std::string minidb = scratch + "/seed.minidb";
  SaveCheckpoint("minidb", minidb);
  Write("minidb_fuzz", "seed_save_chunked.minidb", ReadFile(minidb));

  const std::string lmdb = scratch + "/seed.lmdb";
  SaveCheckpoint("lmdb", lmdb);
  Write("lmdb_fuzz", "seed_save_chunked.mdb", ReadFile(lmdb + "/data.mdb"));
  WriteLMDBTreeSeed(scratch + "/tree.lmdb");

  // The saved records are BlobProtos as Load reads them.
  std::unique_ptr<doppio::db::DB> db = doppio::db::OpenDB("minidb", minidb, doppio::db::READ);
  std::unique_ptr<doppio::db::Cursor> cursor = db->NewCursor();
  for (int i = 0; cursor->Valid(); cursor->Next(), ++i) {
    Write("blobproto_fuzz", "seed_record_" + std::to_string(i) + ".pb", cursor->value());
    doppio::BlobProto blob;
    blob.ParseFromString(cursor->value());
    Write("tensorproto_fuzz", "seed_record_" + std::to_string(i) + ".pb",
          blob.tensor().SerializeAsString());
  }
}

void WriteTensorSeeds() {
  doppio::TensorProto proto;
  doppio::SerializeTensor(MakeTensor<int32_t>({2, 2}, {1, -2, 3, 1 << 30}), "i32", &proto);
  Write("tensorproto_fuzz", "seed_int32.pb", proto.SerializeAsString());
  // Caffe2's BYTE type and newer Caffe2's raw byte_data for narrow types.
  Write("tensorproto_fuzz", "seed_byte.pbtxt",
        "dims: 3 data_type: BYTE byte_data: \"\\001\\002\\377\" name: \"bytes\"");
  Write("tensorproto_fuzz", "seed_int16_byte_data.pbtxt",
        "dims: 2 data_type: INT16 byte_data: \"\\001\\000\\377\\377\" name: \"i16\"");
  Write("tensorproto_fuzz", "seed_segment.pbtxt",
        "dims: 2 dims: 3 data_type: FLOAT float_data: 1 float_data: 2 "
        "segment { begin: 4 end: 6 } name: \"part\"");
  Write("tensorproto_fuzz", "seed_undefined_empty.pbtxt",
        "dims: 0 data_type: UNDEFINED name: \"never_written\"");
}

std::string NpyHeader(const std::string& dict, int major) {
  const size_t preamble = major == 1 ? 10 : 12;
  size_t total = preamble + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  const size_t header = total - preamble;
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header >> (8 * i)) & 0xff);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  return out + '\n';
}

// Caffe2's Int8TensorCPU blob: a QTensorProto with uint8 data.
void WriteInt8BlobSeed() {
  Write("blobproto_fuzz", "seed_int8_blob.pb",
        FromText<doppio::BlobProto>(
            "name: \"q\" type: \"Int8TensorCPU\" qtensor { dims: 2 precision: 8 scale: 0.5 "
            "bias: 3 is_signed: false data: 1 data: 255 data_type: UINT8 name: \"q\" }")
            .SerializeAsString());
}

void WriteNpySeeds() {
  Write("npy_fuzz", "seed_float32_2x3.npy",
        doppio::EncodeNpy(MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})));
  Write("npy_fuzz", "seed_int64_scalar.npy", doppio::EncodeNpy(MakeTensor<int64_t>({}, {-5})));
  Write("npy_fuzz", "seed_bool.npy", doppio::EncodeNpy(MakeTensor<bool>({3}, {true, false, true})));
  Write("npy_fuzz", "seed_float16.npy",
        doppio::EncodeNpy(MakeTensor<doppio::float16>({2}, {doppio::FloatToHalf(0.5f),
                                                            doppio::FloatToHalf(-2.f)})));
  Write("npy_fuzz", "seed_uint8_empty.npy", doppio::EncodeNpy(MakeTensor<uint8_t>({0, 2}, {})));
  // What numpy writes for big-endian data, format 2.0, and Fortran order.
  Write("npy_fuzz", "seed_big_endian_f8.npy",
        NpyHeader("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", 1) +
            std::string("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8));
  Write("npy_fuzz", "seed_version2_u2.npy",
        NpyHeader("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 2) +
            std::string("\x01\x00\xff\xff", 4));
  Write("npy_fuzz", "seed_fortran_i4.npy",
        NpyHeader("{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }", 1) +
            std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8));
}

// Ops the netdef target runs on the tensors it feeds; the fuzzer reaches
// other input shapes and types by mutating the input names.
const char kRunnableNet[] = R"(
name: "runnable"
external_input: "x" external_input: "w" external_input: "b" external_input: "idx"
op { type: "FC" input: "x" input: "w" input: "b" output: "fc" arg { name: "axis" i: 1 } }
op { type: "Relu" input: "fc" output: "fc" }
op { type: "Softmax" input: "fc" output: "prob" arg { name: "axis" i: -1 } }
op { type: "Add" input: "x" input: "b" output: "sum" arg { name: "broadcast" i: 1 } }
op { type: "Concat" input: "x" input: "x" output: "cat" output: "cat_info"
     arg { name: "axis" i: 0 } }
op { type: "Split" input: "cat" output: "s0" output: "s1" arg { name: "axis" i: 0 } }
op { type: "Reshape" input: "x" output: "r" output: "old_shape" arg { name: "shape" ints: -1 } }
op { type: "Transpose" input: "x" output: "t" arg { name: "axes" ints: 1 ints: 0 } }
op { type: "Gather" input: "x" input: "idx" output: "g" }
op { type: "ReduceSum" input: "x" output: "rs" arg { name: "axes" ints: 0 }
     arg { name: "keepdims" i: 0 } }
op { type: "Slice" input: "x" output: "sl" arg { name: "starts" ints: 0 ints: 0 }
     arg { name: "ends" ints: -1 ints: 1 } }
op { type: "Cast" input: "x" output: "xi" arg { name: "to" i: 2 } }
op { type: "LayerNorm" input: "x" output: "ln" output: "mean" output: "std" }
op { type: "Sum" input: "x" input: "x" output: "twice" }
)";

// Caffe2's Int8 ops on Int8 blobs made in the net (the fed inputs are
// plain tensors).
const char kInt8Net[] = R"(
name: "int8"
external_input: "x"
op { type: "Int8Quantize" input: "x" output: "q" arg { name: "Y_scale" f: 0.1 }
     arg { name: "Y_zero_point" i: 128 } }
op { type: "Int8GivenTensorFill" output: "w" arg { name: "shape" ints: 2 ints: 1 }
     arg { name: "values" s: "\001\377" } arg { name: "Y_scale" f: 0.5 } }
op { type: "Int8GivenIntTensorFill" output: "b" arg { name: "shape" ints: 2 }
     arg { name: "values" ints: 3 ints: -4 } arg { name: "Y_scale" f: 0.05 } }
op { type: "Int8FC" input: "q" input: "w" input: "b" output: "fc" arg { name: "Y_scale" f: 0.2 } }
op { type: "Int8Relu" input: "q" output: "r" }
op { type: "Int8Add" input: "q" input: "r" output: "s" arg { name: "Y_scale" f: 0.3 } }
op { type: "Int8Sum" input: "q" input: "r" input: "s" output: "s3" }
op { type: "Int8Softmax" input: "q" output: "p" }
op { type: "Int8Sigmoid" input: "q" output: "sg" }
op { type: "Int8Concat" input: "q" input: "r" output: "cat" }
op { type: "Int8Reshape" input: "q" output: "rq" output: "old" arg { name: "shape" ints: -1 } }
op { type: "Int8Transpose" input: "q" output: "tq" }
op { type: "Int8Slice" input: "q" output: "sl" arg { name: "starts" ints: 0 }
     arg { name: "ends" ints: 1 } }
op { type: "Int8ChannelShuffle" input: "q" output: "cs" arg { name: "group" i: 1 } }
op { type: "Int8Dequantize" input: "fc" output: "y" }
)";

// Rotated-box detection ops (RRPN) on tensors the net fills.
const char kRotatedNet[] = R"(
name: "rotated"
op { type: "GivenTensorFill" output: "scores" arg { name: "shape" ints: 1 ints: 1 ints: 2 ints: 2 }
     arg { name: "values" floats: 0.9 floats: 0.1 floats: 0.5 floats: 0.7 } }
op { type: "ConstantFill" output: "deltas" arg { name: "shape" ints: 1 ints: 5 ints: 2 ints: 2 }
     arg { name: "value" f: 0.1 } }
op { type: "GivenTensorFill" output: "im_info" arg { name: "shape" ints: 1 ints: 3 }
     arg { name: "values" floats: 64 floats: 64 floats: 1 } }
op { type: "GivenTensorFill" output: "anchors" arg { name: "shape" ints: 1 ints: 5 }
     arg { name: "values" floats: 8 floats: 8 floats: 16 floats: 8 floats: 30 } }
op { type: "GenerateProposals" input: "scores" input: "deltas" input: "im_info"
     input: "anchors" output: "rois" output: "probs" arg { name: "min_size" f: 0 }
     arg { name: "spatial_scale" f: 0.0625 } }
op { type: "GivenTensorFill" output: "cls" arg { name: "shape" ints: 2 ints: 2 }
     arg { name: "values" floats: 0.1 floats: 0.9 floats: 0.2 floats: 0.8 } }
op { type: "GivenTensorFill" output: "boxes" arg { name: "shape" ints: 2 ints: 10 }
     arg { name: "values" floats: 0 floats: 0 floats: 1 floats: 1 floats: 0 floats: 10
           floats: 10 floats: 8 floats: 4 floats: 45 floats: 0 floats: 0 floats: 1 floats: 1
           floats: 0 floats: 12 floats: 10 floats: 8 floats: 4 floats: -30 } }
op { type: "BoxWithNMSLimit" input: "cls" input: "boxes" output: "s" output: "b" output: "c"
     arg { name: "rotated" i: 1 } arg { name: "soft_nms_enabled" i: 1 } }
)";

const char kDagNet[] = R"(
name: "dag"
type: "dag"
arg { name: "num_workers" i: 2 }
device_option { device_type: 0 }
external_input: "a"
op { type: "Relu" input: "a" output: "b" }
op { type: "Sigmoid" input: "a" output: "c" device_option { device_type: 0 cuda_gpu_id: 1 } }
op { type: "Mul" input: "b" input: "c" output: "d" control_input: "a" }
)";

const char kTrainingNet[] = R"(
name: "train"
external_input: "data" external_input: "label" external_input: "conv_w" external_input: "conv_b"
op { type: "Conv" input: "data" input: "conv_w" input: "conv_b" output: "conv"
     arg { name: "kernel" i: 3 } arg { name: "pad" i: 1 } arg { name: "order" s: "NCHW" }
     engine: "DNNL" }
op { type: "SpatialBN" input: "conv" input: "s" input: "bias" input: "rm" input: "rv"
     output: "bn"
     output: "rm" output: "rv" output: "sm" output: "sv" arg { name: "is_test" i: 0 }
     arg { name: "epsilon" f: 1e-5 } }
op { type: "MaxPool" input: "bn" output: "pool" arg { name: "kernel" i: 2 }
     arg { name: "stride" i: 2 } }
op { type: "SoftmaxWithLoss" input: "pool" input: "label" output: "softmax" output: "loss" }
op { type: "ConstantFill" input: "loss" output: "loss_grad" arg { name: "value" f: 1 } }
op { type: "MomentumSGDUpdate" input: "g" input: "m" input: "lr" input: "conv_w" output: "g"
     output: "m" output: "conv_w"
     arg { name: "momentum" f: 0.9 } arg { name: "nesterov" i: 0 } }
op { type: "GivenTensorFill" output: "given" arg { name: "shape" ints: 2 }
     arg { name: "values" floats: 1 floats: 2 } }
op { type: "Iter" input: "iter" output: "iter" }
)";

const char kIONet[] = R"(
name: "io"
op { type: "CreateDB" output: "reader" arg { name: "db" s: "/nonexistent/db" }
     arg { name: "db_type" s: "minidb" } }
op { type: "Load" input: "reader" output: "w" arg { name: "load_all" i: 0 } }
op { type: "Save" input: "w" arg { name: "db" s: "/nonexistent/out" }
     arg { name: "db_type" s: "minidb" }
     arg { name: "chunk_size" i: 0 } }
op { type: "TensorProtosDBInput" input: "reader" output: "data" output: "label"
     arg { name: "batch_size" i: 4 } }
op { type: "FileStoreHandlerCreate" output: "store"
     arg { name: "path" s: "/nonexistent/store" } }
op { type: "CreateCommonWorld" input: "store" output: "world" arg { name: "size" i: 2 }
     arg { name: "rank" i: 0 } }
op { type: "Allreduce" input: "world" input: "w" output: "w" }
)";

const char kPlan[] = R"(
name: "plan"
network { name: "init" external_input: "x" op { type: "Relu" input: "x" output: "y" } }
network { name: "step" external_input: "y" op { type: "Abs" input: "y" output: "y" }
          op { type: "LT" input: "y" input: "y" output: "stop" } }
network { name: "report" external_input: "y" op { type: "SumElements" input: "y" output: "total" } }
execution_step { name: "init" network: "init" }
execution_step {
  name: "train"
  substep { name: "loop" network: "step" num_iter: 3 }
  substep { name: "also" network: "step" }
  concurrent_substeps: true
  num_iter: 2
  report_net: "report"
  report_interval: 1
}
execution_step { name: "until" network: "step" should_stop_blob: "stop" only_once: true }
execution_step { name: "instances" substep { name: "copy" network: "report" create_workspace: true }
                 num_concurrent_instances: 2 }
execution_step { name: "periodic" substep { name: "work" network: "init" num_iter: 2 }
                 substep { name: "tick" network: "report" run_every_ms: 5 } }
)";

// One net per CPU op type, its inputs fed by the target and every argument
// its schema lists set to 1: a starting point for each op's constructor
// checks that mutation alone would take long to reach.
void WriteOpSeeds() {
  std::set<std::string> cpu_types;
  for (const doppio::OperatorKey& key : doppio::OperatorRegistry::Keys()) {
    if (key.device == doppio::DeviceKind::kCPU) cpu_types.insert(key.type);
  }
  for (const auto& entry : doppio::OpSchemaRegistry::All()) {
    const doppio::OpSchema& schema = entry.second;
    if (!cpu_types.count(schema.type())) continue;
    doppio::NetDef net;
    net.set_name("op_" + schema.type());
    doppio::OperatorDef* op = net.add_op();
    op->set_type(schema.type());
    for (int i = 0; i < std::min(schema.min_input(), 4); ++i) {
      const std::string name = "in" + std::to_string(i);
      net.add_external_input(name);
      op->add_input(name);
    }
    for (int i = 0; i < std::max(1, std::min(schema.min_output(), 4)); ++i) {
      op->add_output("out" + std::to_string(i));
    }
    for (const doppio::OpSchema::Argument& arg : schema.args()) {
      doppio::Argument* value = op->add_arg();
      value->set_name(arg.name);
      value->set_i(1);
    }
    Write("netdef_fuzz", "seed_op_" + schema.type() + ".pb", net.SerializeAsString());
  }
}

void WriteNetSeeds() {
  Write("netdef_fuzz", "seed_runnable.pb",
        FromText<doppio::NetDef>(kRunnableNet).SerializeAsString());
  Write("netdef_fuzz", "seed_dag.pb", FromText<doppio::NetDef>(kDagNet).SerializeAsString());
  Write("netdef_fuzz", "seed_int8.pb", FromText<doppio::NetDef>(kInt8Net).SerializeAsString());
  Write("netdef_fuzz", "seed_rotated.pb",
        FromText<doppio::NetDef>(kRotatedNet).SerializeAsString());
  Write("netdef_fuzz", "seed_training.pb",
        FromText<doppio::NetDef>(kTrainingNet).SerializeAsString());
  Write("netdef_fuzz", "seed_io.pb", FromText<doppio::NetDef>(kIONet).SerializeAsString());
  Write("netdef_fuzz", "seed_dag.pbtxt", kDagNet);
  Write("plandef_fuzz", "seed_plan.pb", FromText<doppio::PlanDef>(kPlan).SerializeAsString());
  Write("plandef_fuzz", "seed_plan.pbtxt", kPlan);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  const fs::path scratch = fs::temp_directory_path() / "doppio-seed-corpus";
  try {
    fs::remove_all(scratch);
    fs::create_directories(scratch);
    WriteDBSeeds(scratch.string());
    WriteTensorSeeds();
    WriteNpySeeds();
    WriteInt8BlobSeed();
    WriteNetSeeds();
    WriteOpSeeds();
  } catch (const doppio::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  fs::remove_all(scratch);
  return 0;
}
