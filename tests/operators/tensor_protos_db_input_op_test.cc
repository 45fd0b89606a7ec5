// TensorProtosDBInput over DBs written here record by record (through the
// db API, not make_db): batches against values computed in the test, for
// every dtype a record may carry, both backends, wrap-around and sharding;
// and failures in the prefetch thread surfacing from RunNet as errors that
// name the op, the record and the DB.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/db.h"
#include "core/gradient.h"
#include "core/intra_op_threads.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::Fetch;
using testing::FetchTensor;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;

// Record r of the standard test DB: a float [2, 3] tensor of 10r + j, a
// BYTE [2, 2] image of (r + j) % 256 in byte_data, an int32 scalar label r,
// an int64 [1] tensor 1000r and a string [2] tensor {"r<r>a", "r<r>b"}.
TensorProtos StandardRecord(int r) {
  TensorProtos protos;
  TensorProto* values = protos.add_protos();
  values->set_data_type(TensorProto::FLOAT);
  values->add_dims(2);
  values->add_dims(3);
  for (int j = 0; j < 6; ++j) values->add_float_data(10.0f * r + j);
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  image->add_dims(2);
  image->add_dims(2);
  std::string pixels;
  for (int j = 0; j < 4; ++j) pixels.push_back(static_cast<char>((r + j) % 256));
  image->set_byte_data(pixels);
  TensorProto* label = protos.add_protos();
  label->set_data_type(TensorProto::INT32);
  label->add_int32_data(r);
  TensorProto* wide = protos.add_protos();
  wide->set_data_type(TensorProto::INT64);
  wide->add_dims(1);
  wide->add_int64_data(1000LL * r);
  TensorProto* names = protos.add_protos();
  names->set_data_type(TensorProto::STRING);
  names->add_dims(2);
  names->add_string_data("r" + std::to_string(r) + "a");
  names->add_string_data("r" + std::to_string(r) + "b");
  return protos;
}

std::string Key(int r) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", r);
  return key;
}

// Writes `values` (already serialized) under keys 00000000, 00000001, ...
void WriteDB(const std::string& type, const std::string& path,
             const std::vector<std::string>& values) {
  std::unique_ptr<db::DB> out = db::OpenDB(type, path, db::NEW);
  {
    std::unique_ptr<db::Transaction> transaction = out->NewTransaction();
    for (size_t r = 0; r < values.size(); ++r) transaction->Put(Key(static_cast<int>(r)), values[r]);
    transaction->Commit();
  }
  out->Close();
}

std::vector<std::string> StandardRecords(int count) {
  std::vector<std::string> values;
  for (int r = 0; r < count; ++r) values.push_back(StandardRecord(r).SerializeAsString());
  return values;
}

const std::vector<std::string> kStandardOutputs = {"values", "image", "label", "wide", "names"};

OperatorDef CreateDBDef(const std::string& type, const std::string& path, int num_shards = 1,
                        int shard_id = 0, const std::string& reader = "reader") {
  return MakeOp("CreateDB", {}, {reader},
                {StringArg("db", path), StringArg("db_type", type),
                 IntArg("num_shards", num_shards), IntArg("shard_id", shard_id)});
}

NetDef InputNet(const std::string& name, int batch_size,
                const std::vector<std::string>& outputs = kStandardOutputs,
                const std::string& reader = "reader") {
  NetDef net;
  net.set_name(name);
  OperatorDef* op = net.add_op();
  *op = MakeOp("TensorProtosDBInput", {reader}, outputs, {IntArg("batch_size", batch_size)});
  op->set_name("input");
  return net;
}

// The batch the op must produce from the given record numbers.
void ExpectBatch(Workspace& ws, const std::vector<int>& records) {
  const int64_t n = static_cast<int64_t>(records.size());
  std::vector<float> values;
  std::vector<uint8_t> image;
  std::vector<int32_t> label;
  std::vector<int64_t> wide;
  std::vector<std::string> names;
  for (int r : records) {
    for (int j = 0; j < 6; ++j) values.push_back(10.0f * r + j);
    for (int j = 0; j < 4; ++j) image.push_back(static_cast<uint8_t>((r + j) % 256));
    label.push_back(r);
    wide.push_back(1000LL * r);
    names.push_back("r" + std::to_string(r) + "a");
    names.push_back("r" + std::to_string(r) + "b");
  }
  EXPECT_EQ(FetchTensor(ws, "values").dims(), (std::vector<int64_t>{n, 2, 3}));
  EXPECT_EQ(FetchTensor(ws, "image").dims(), (std::vector<int64_t>{n, 2, 2}));
  EXPECT_EQ(FetchTensor(ws, "label").dims(), (std::vector<int64_t>{n}));
  EXPECT_EQ(FetchTensor(ws, "wide").dims(), (std::vector<int64_t>{n, 1}));
  EXPECT_EQ(FetchTensor(ws, "names").dims(), (std::vector<int64_t>{n, 2}));
  EXPECT_EQ(Fetch<float>(ws, "values"), values);
  EXPECT_EQ(Fetch<uint8_t>(ws, "image"), image);
  EXPECT_EQ(Fetch<int32_t>(ws, "label"), label);
  EXPECT_EQ(Fetch<int64_t>(ws, "wide"), wide);
  EXPECT_EQ(Fetch<std::string>(ws, "names"), names);
}

class TensorProtosDBInputTest : public ::testing::TestWithParam<std::string> {
 protected:
  // A fresh path for a DB of this test's backend.
  std::string DBPath(const std::string& name) {
    const std::string dir = testing::TempDir("tpdbi_" + GetParam() + "_" + name);
    return dir + "/db";
  }
};

TEST_P(TensorProtosDBInputTest, BatchesStackRecordsAndWrapAroundTheEnd) {
  const std::string path = DBPath("batches");
  WriteDB(GetParam(), path, StandardRecords(7));
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 3));
  ws.RunNet("train");
  ExpectBatch(ws, {0, 1, 2});
  ws.RunNet("train");
  ExpectBatch(ws, {3, 4, 5});
  ws.RunNet("train");
  ExpectBatch(ws, {6, 0, 1});
  ws.RunNet("train");
  ExpectBatch(ws, {2, 3, 4});
}

TEST_P(TensorProtosDBInputTest, ABatchLargerThanTheDBRepeatsRecords) {
  const std::string path = DBPath("large");
  WriteDB(GetParam(), path, StandardRecords(3));
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 8));
  ws.RunNet("train");
  ExpectBatch(ws, {0, 1, 2, 0, 1, 2, 0, 1});
  ws.RunNet("train");
  ExpectBatch(ws, {2, 0, 1, 2, 0, 1, 2, 0});
}

TEST_P(TensorProtosDBInputTest, BatchSizeZeroOutputsOneRecordUnbatched) {
  const std::string path = DBPath("unbatched");
  WriteDB(GetParam(), path, StandardRecords(2));
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 0));
  for (int r : {0, 1, 0}) {
    ws.RunNet("train");
    EXPECT_EQ(FetchTensor(ws, "values").dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(Fetch<float>(ws, "values"),
              (std::vector<float>{10.0f * r, 10.0f * r + 1, 10.0f * r + 2, 10.0f * r + 3,
                                  10.0f * r + 4, 10.0f * r + 5}));
    EXPECT_EQ(FetchTensor(ws, "label").dims(), std::vector<int64_t>{});
    EXPECT_EQ(Fetch<int32_t>(ws, "label"), std::vector<int32_t>{r});
    EXPECT_EQ(Fetch<std::string>(ws, "names"),
              (std::vector<std::string>{"r" + std::to_string(r) + "a",
                                        "r" + std::to_string(r) + "b"}));
  }
}

TEST_P(TensorProtosDBInputTest, TwoShardsCoverEveryRecordOncePerEpoch) {
  const std::string path = DBPath("shards");
  const int kRecords = 9;
  WriteDB(GetParam(), path, StandardRecords(kRecords));
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path, 2, 0, "reader0"));
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path, 2, 1, "reader1"));
  ws.CreateNet(InputNet("shard0", 1, {"v0", "i0", "label0", "w0", "n0"}, "reader0"));
  ws.CreateNet(InputNet("shard1", 1, {"v1", "i1", "label1", "w1", "n1"}, "reader1"));
  std::map<int, int> seen;
  // Shard 0 holds records 0, 2, 4, 6, 8; shard 1 holds 1, 3, 5, 7.
  std::vector<int> shard0, shard1;
  for (int i = 0; i < 5; ++i) {
    ws.RunNet("shard0");
    shard0.push_back(Fetch<int32_t>(ws, "label0").at(0));
  }
  for (int i = 0; i < 4; ++i) {
    ws.RunNet("shard1");
    shard1.push_back(Fetch<int32_t>(ws, "label1").at(0));
  }
  for (int r : shard0) ++seen[r];
  for (int r : shard1) ++seen[r];
  EXPECT_EQ(shard0, (std::vector<int>{0, 2, 4, 6, 8}));
  EXPECT_EQ(shard1, (std::vector<int>{1, 3, 5, 7}));
  ASSERT_EQ(seen.size(), static_cast<size_t>(kRecords));
  for (const auto& entry : seen) EXPECT_EQ(entry.second, 1) << "record " << entry.first;
  // The next epoch starts over within each shard.
  ws.RunNet("shard0");
  EXPECT_EQ(Fetch<int32_t>(ws, "label0").at(0), 0);
  ws.RunNet("shard1");
  EXPECT_EQ(Fetch<int32_t>(ws, "label1").at(0), 1);
}

// Labels of `runs` runs of a shuffling input net over shard 1 of 2.
std::vector<std::vector<int32_t>> ShuffledRuns(Workspace& ws, int runs) {
  std::vector<std::vector<int32_t>> labels;
  for (int i = 0; i < runs; ++i) {
    ws.RunNet("shuffled");
    labels.push_back(Fetch<int32_t>(ws, "label"));
  }
  return labels;
}

NetDef ShuffledInputNet() {
  NetDef net = InputNet("shuffled", 2);
  *net.mutable_op(0)->add_arg() = IntArg("shuffle_buffer", 3);
  *net.mutable_op(0)->add_arg() = IntArg("shuffle_seed", 7);
  return net;
}

TEST_P(TensorProtosDBInputTest, ASavedReaderResumesWhereItsNetWas) {
  const std::string path = DBPath("resume");
  WriteDB(GetParam(), path, StandardRecords(11));
  Workspace uninterrupted;
  uninterrupted.RunOperatorOnce(CreateDBDef(GetParam(), path, 2, 1));
  uninterrupted.CreateNet(ShuffledInputNet());
  const auto expected = ShuffledRuns(uninterrupted, 9);

  // 4 runs, then the reader is saved: the op has read ahead, but the saved
  // reader records the 8 records the net received.
  const std::string saved = testing::TempDir("tpdbi_resume_" + GetParam()) + "/reader";
  {
    Workspace first;
    first.RunOperatorOnce(CreateDBDef(GetParam(), path, 2, 1));
    first.CreateNet(ShuffledInputNet());
    const auto head = ShuffledRuns(first, 4);
    EXPECT_EQ(head, std::vector<std::vector<int32_t>>(expected.begin(), expected.begin() + 4));
    first.RunOperatorOnce(MakeOp("Save", {"reader"}, {},
                                 {StringArg("db", saved), StringArg("db_type", "minidb"),
                                  IntArg("absolute_path", 1)}));
  }
  // A new process: the init net makes a fresh reader and the net is
  // created (its shuffle buffer filled from it), then the checkpoint's
  // reader is loaded over it.
  Workspace resumed;
  resumed.RunOperatorOnce(CreateDBDef(GetParam(), path, 2, 1));
  resumed.CreateNet(ShuffledInputNet());
  resumed.RunOperatorOnce(MakeOp("Load", {}, {"reader"},
                                 {StringArg("db", saved), StringArg("db_type", "minidb"),
                                  IntArg("absolute_path", 1)}));
  const db::DBReader& reader = resumed.GetBlob("reader")->Get<db::DBReader>();
  EXPECT_EQ(reader.num_shards(), 2);
  EXPECT_EQ(reader.shard_id(), 1);
  EXPECT_EQ(reader.pending_replay(), 8);
  EXPECT_EQ(ShuffledRuns(resumed, 5),
            std::vector<std::vector<int32_t>>(expected.begin() + 4, expected.end()));
  EXPECT_EQ(reader.consumed(), 18);
}

TEST_P(TensorProtosDBInputTest, RecordsOfDifferentShapesInOneBatchFailFromRunNet) {
  const std::string path = DBPath("ragged");
  std::vector<std::string> values = StandardRecords(4);
  TensorProtos odd = StandardRecord(2);
  odd.mutable_protos(0)->clear_dims();
  odd.mutable_protos(0)->add_dims(3);
  odd.mutable_protos(0)->add_dims(2);
  values[2] = odd.SerializeAsString();
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 2));
  ws.RunNet("train");  // records 0 and 1 agree
  ExpectBatch(ws, {0, 1});
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "TensorProtosDBInput 'input'", path, "record '00000003'",
                     "record '00000002'", "float32[3, 2]", "shape");
  // The op survives its error: the next run reads on (records 0 and 1 again).
  ws.RunNet("train");
  ExpectBatch(ws, {0, 1});
}

TEST_P(TensorProtosDBInputTest, ARecordWithTheWrongNumberOfTensorsFails) {
  const std::string path = DBPath("count");
  std::vector<std::string> values = StandardRecords(2);
  TensorProtos short_record = StandardRecord(1);
  short_record.mutable_protos()->RemoveLast();
  values[1] = short_record.SerializeAsString();
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 2));
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "record '00000001'", "holds 4 tensors", "5 outputs", path);
}

TEST_P(TensorProtosDBInputTest, ARecordThatIsNotTensorProtosFails) {
  const std::string path = DBPath("garbage");
  std::vector<std::string> values = StandardRecords(2);
  values[0] = std::string("\xff\xff\xff\xff", 4);
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 1));
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "record '00000000'", "not a serialized TensorProtos", path);
}

TEST_P(TensorProtosDBInputTest, ATensorWhoseDataDoesNotMatchItsDimsFails) {
  const std::string path = DBPath("short_data");
  std::vector<std::string> values = StandardRecords(2);
  TensorProtos bad = StandardRecord(1);
  bad.mutable_protos(1)->set_byte_data("xy");  // dims say 4 bytes
  values[1] = bad.SerializeAsString();
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 0));
  ws.RunNet("train");
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "tensor 1 of record '00000001'", path);
}

// Plain records (image, label, values: what make_db writes) are decoded
// straight from their bytes (operators/tensor_protos_record.h); a record in
// any other form -- here a named label with a device_detail, dims written
// unpacked -- goes through protobuf. A batch mixing both stacks the same
// values, and a plain record of another shape fails as any record does.
TensorProtos PlainRecord(int r, bool plain) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(r % 3 == 0 ? TensorProto::UINT8 : TensorProto::BYTE);
  image->add_dims(1);
  image->add_dims(2);
  image->add_dims(3);
  std::string pixels;
  for (int j = 0; j < 6; ++j) pixels.push_back(static_cast<char>((7 * r + j) % 256));
  image->set_byte_data(pixels);
  TensorProto* label = protos.add_protos();
  label->set_data_type(TensorProto::INT32);
  label->add_int32_data(r % 2 == 0 ? -r : r);
  TensorProto* values = protos.add_protos();
  values->set_data_type(TensorProto::FLOAT);
  values->add_dims(2);
  for (int j = 0; j < 2; ++j) values->add_float_data(0.5f * r - j);
  if (!plain) {
    label->set_name("label");
    label->mutable_device_detail()->set_device_type(0);
  }
  return protos;
}

TEST_P(TensorProtosDBInputTest, PlainAndOtherRecordsStackAlike) {
  const std::string path = DBPath("plain");
  std::vector<std::string> values;
  for (int r = 0; r < 6; ++r) values.push_back(PlainRecord(r, r % 4 != 1).SerializeAsString());
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 3, {"image", "label", "values"}));
  for (int batch = 0; batch < 4; ++batch) {
    ws.RunNet("train");
    std::vector<uint8_t> image;
    std::vector<int32_t> label;
    std::vector<float> floats;
    for (int item = 0; item < 3; ++item) {
      const int r = (3 * batch + item) % 6;
      for (int j = 0; j < 6; ++j) image.push_back(static_cast<uint8_t>((7 * r + j) % 256));
      label.push_back(r % 2 == 0 ? -r : r);
      for (int j = 0; j < 2; ++j) floats.push_back(0.5f * r - j);
    }
    EXPECT_EQ(FetchTensor(ws, "image").dims(), (std::vector<int64_t>{3, 1, 2, 3}));
    EXPECT_EQ(FetchTensor(ws, "label").dims(), (std::vector<int64_t>{3}));
    EXPECT_EQ(FetchTensor(ws, "values").dims(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(Fetch<uint8_t>(ws, "image"), image);
    EXPECT_EQ(Fetch<int32_t>(ws, "label"), label);
    EXPECT_EQ(Fetch<float>(ws, "values"), floats);
  }
}

TEST_P(TensorProtosDBInputTest, APlainRecordOfAnotherShapeFails) {
  const std::string path = DBPath("plain_ragged");
  std::vector<std::string> values;
  for (int r = 0; r < 2; ++r) values.push_back(PlainRecord(r, true).SerializeAsString());
  TensorProtos odd = PlainRecord(1, true);
  odd.mutable_protos(2)->add_float_data(9.0f);
  odd.mutable_protos(2)->set_dims(0, 3);
  values[1] = odd.SerializeAsString();
  WriteDB(GetParam(), path, values);
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
  ws.CreateNet(InputNet("train", 2, {"image", "label", "values"}));
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "tensor 2 of record '00000001'", "float32[3]",
                     "record '00000000'", "shape", path);
}

// The reader runs ahead of the net (from CreateNet on, up to
// PrefetchOperator::kPrefetchDepth batches), but each batch, and each
// failure, still belongs to the run that would have read it in order, and a
// pause between runs (the reader filling every slot) changes nothing.
//
// Both ways of reading: with 1 intra-op thread on a multi-core machine the
// net leaves cores idle and a thread reads ahead; with an intra-op thread
// per core the op reads on the net's thread, after handing out what the
// thread started at CreateNet had read ahead (prefetch_op.h).
TEST_P(TensorProtosDBInputTest, ReadingAheadKeepsBatchesAndFailuresInOrder) {
  const int cores = AvailableCores();
  for (int intra_op_threads : {1, cores}) {
    SCOPED_TRACE("intra_op_threads " + std::to_string(intra_op_threads));
    const std::string path = DBPath("ahead" + std::to_string(intra_op_threads));
    std::vector<std::string> values = StandardRecords(6);
    values[4] = std::string("\xff\xff\xff\xff", 4);
    WriteDB(GetParam(), path, values);
    Workspace ws;
    ws.RunOperatorOnce(CreateDBDef(GetParam(), path));
    NetDef net = InputNet("train", 2);
    *net.add_arg() = IntArg("intra_op_threads", intra_op_threads);
    ws.CreateNet(net);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ws.RunNet("train");
    ExpectBatch(ws, {0, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ws.RunNet("train");
    ExpectBatch(ws, {2, 3});
    // Record 4 is garbage: the third run fails, after two good ones.
    const std::string error = ErrorOf([&] { ws.RunNet("train"); });
    EXPECT_MESSAGE_HAS(error, "record '00000004'", "not a serialized TensorProtos", path,
                       "while prefetching for TensorProtosDBInput 'input'");
    // Reading goes on after the bad record: 5, then around to 0.
    ws.RunNet("train");
    ExpectBatch(ws, {5, 0});
    ws.RunNet("train");
    ExpectBatch(ws, {1, 2});
    // The second pass meets record 4 in the same place.
    EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunNet("train"); }), "record '00000004'");
    ws.RunNet("train");
    ExpectBatch(ws, {5, 0});
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TensorProtosDBInputTest,
                         ::testing::Values("minidb", "lmdb"));

TEST(TensorProtosDBInputOpTest, AnInputThatIsNotADBReaderFails) {
  Workspace ws;
  testing::Feed<float>(ws, "reader", {1}, {0.0f});
  ws.CreateNet(InputNet("train", 2, {"x"}));
  const std::string error = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_MESSAGE_HAS(error, "DBReader", "'reader'");
}

TEST(TensorProtosDBInputOpTest, NegativeBatchSizeIsRefused) {
  Workspace ws;
  ws.CreateBlob("reader")->GetMutable<db::DBReader>();
  const std::string error = ErrorOf([&] { ws.CreateNet(InputNet("train", -1, {"x"})); });
  EXPECT_MESSAGE_HAS(error, "batch_size");
}

TEST(TensorProtosDBInputOpTest, DestroyingTheOpWithAFetchInFlightIsClean) {
  const std::string path = testing::TempDir("tpdbi_destroy") + "/db";
  WriteDB("minidb", path, StandardRecords(5));
  // One intra-op thread: on a machine of 2+ cores the op then reads ahead
  // on its thread (prefetch_op.h), which is what this test is about.
  NetDef net = InputNet("train", 4);
  *net.add_arg() = IntArg("intra_op_threads", 1);
  for (int round = 0; round < 20; ++round) {
    Workspace ws;
    ws.RunOperatorOnce(CreateDBDef("minidb", path));
    ws.CreateNet(net);
    ws.RunNet("train");
    // The net (and the op, with its next fetch running) dies before the
    // workspace's blobs.
  }
  // And an op that never ran has no thread to stop.
  Workspace ws;
  ws.RunOperatorOnce(CreateDBDef("minidb", path));
  ws.CreateNet(InputNet("train", 4));
  EXPECT_TRUE(ws.DeleteNet("train"));
}

TEST(TensorProtosDBInputOpTest, SchemaAndGradient) {
  const OpSchema* schema = OpSchemaRegistry::Schema("TensorProtosDBInput");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->min_input(), 1);
  EXPECT_EQ(schema->max_input(), 1);
  EXPECT_EQ(schema->min_output(), 1);
  const GradientRegistry::Entry* entry = GradientRegistry::Find("TensorProtosDBInput");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->kind, GradientRegistry::Kind::kNoGradient);
  EXPECT_FALSE(entry->reason.empty());
}

}  // namespace
}  // namespace doppio
