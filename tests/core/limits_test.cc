// The caps on tensors read from files and protos and on net sizes
// (core/limits.h): their parsing, setters and environment variables, and
// that every reader checks them before allocating, with an error naming the
// input, the limit and how to raise it. Expected byte counts are worked out
// here by hand (elements x bytes per element).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/limits.h"
#include "core/net.h"
#include "core/npy.h"
#include "core/plan.h"
#include "core/serialization.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::MakeOp;
using testing::MiniDBRecord;
using testing::StringArg;
using testing::TempDir;
using testing::WriteBytes;

// Sets the caps for one test and restores the previous ones after it.
class ScopedLimits {
 public:
  ScopedLimits(int64_t tensor_bytes, int64_t net_ops)
      : tensor_bytes_(SetMaxTensorBytes(tensor_bytes)), net_ops_(SetMaxNetOps(net_ops)) {}
  ~ScopedLimits() {
    SetMaxTensorBytes(tensor_bytes_);
    SetMaxNetOps(net_ops_);
  }

 private:
  int64_t tensor_bytes_;
  int64_t net_ops_;
};

TensorProto FloatProto(const std::string& name, int64_t count) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(TensorProto::FLOAT);
  proto.add_dims(count);
  for (int64_t i = 0; i < count; ++i) proto.add_float_data(static_cast<float>(i));
  return proto;
}

NetDef ReluChain(const std::string& name, int ops) {
  NetDef net;
  net.set_name(name);
  net.add_external_input("x");
  for (int i = 0; i < ops; ++i) *net.add_op() = MakeOp("Relu", {"x"}, {"x"});
  return net;
}

// A .npy file's bytes: magic, version 1.0, header length, the dict padded to
// 64 bytes, then the data.
std::string NpyBytes(const std::string& dict, const std::string& data) {
  size_t total = 10 + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  const size_t header = total - 10;
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header & 0xff);
  out += static_cast<char>(header >> 8);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  return out + '\n' + data;
}

TEST(LimitsTest, DefaultsAreGenerous) {
  EXPECT_EQ(kDefaultMaxTensorBytes, int64_t{17179869184});  // 16 GiB
  EXPECT_EQ(kDefaultMaxNetOps, 1000000);
  EXPECT_EQ(kDefaultMaxProtoBytes, int64_t{1073741824});  // 1 GiB
}

TEST(LimitsTest, ParsesPlainAndSuffixedValues) {
  EXPECT_EQ(ParseLimitValue("123", "V", true), 123);
  EXPECT_EQ(ParseLimitValue("4K", "V", true), 4096);
  EXPECT_EQ(ParseLimitValue("3m", "V", true), 3 * 1048576);
  EXPECT_EQ(ParseLimitValue("16G", "V", true), int64_t{17179869184});
  EXPECT_EQ(ParseLimitValue("2T", "V", true), int64_t{2199023255552});
  EXPECT_EQ(ParseLimitValue("9223372036854775807", "V", false), INT64_MAX);
}

TEST(LimitsTest, RejectsMalformedValuesNamingTheVariable) {
  for (const char* bad : {"", "abc", "-5", "0", "12X", "1.5G", "7 ", "G",
                          "9223372036854775808", "8388608T"}) {
    SCOPED_TRACE(bad);
    EXPECT_MESSAGE_HAS(ErrorOf([&] { ParseLimitValue(bad, "DOPPIO_MAX_THING", true); }),
                       "DOPPIO_MAX_THING");
  }
  // Net sizes are counts: no suffixes.
  EXPECT_MESSAGE_HAS(ErrorOf([] { ParseLimitValue("5K", "DOPPIO_MAX_NET_OPS", false); }),
                     "DOPPIO_MAX_NET_OPS", "positive integer");
}

TEST(LimitsTest, SettersReturnThePreviousValueAndRefuseNonPositive) {
  const int64_t original = MaxTensorBytes();
  EXPECT_EQ(SetMaxTensorBytes(1000), original);
  EXPECT_EQ(MaxTensorBytes(), 1000);
  EXPECT_EQ(SetMaxTensorBytes(original), 1000);
  EXPECT_EQ(MaxTensorBytes(), original);
  EXPECT_FALSE(ErrorOf([] { SetMaxTensorBytes(0); }).empty());
  EXPECT_FALSE(ErrorOf([] { SetMaxNetOps(-1); }).empty());
  EXPECT_EQ(MaxTensorBytes(), original);
}

TEST(LimitsTest, ProtoBytesAtTheLimitPassAndOneMoreFailsNamingTheSource) {
  const int64_t original = SetMaxProtoBytes(100);
  EXPECT_EQ(MaxProtoBytes(), 100);
  EXPECT_EQ(ErrorIfAny([] { EnforceProtoBytesLimit(100, "NetDef from bytes"); }), "");
  EXPECT_MESSAGE_HAS(ErrorOf([] { EnforceProtoBytesLimit(101, "NetDef from bytes"); }),
                     "NetDef from bytes is 101 bytes", "limit of 100 bytes",
                     "DOPPIO_MAX_PROTO_BYTES", "SetMaxProtoBytes");
  EXPECT_MESSAGE_HAS(ErrorOf([] { EnforceProtoBytesLimit(-1, "PlanDef file 'p.pb'"); }),
                     "PlanDef file 'p.pb'", "negative");
  EXPECT_FALSE(ErrorOf([] { SetMaxProtoBytes(0); }).empty());
  EXPECT_EQ(SetMaxProtoBytes(original), 100);
  EXPECT_EQ(MaxProtoBytes(), original);
}

TEST(LimitsTest, TensorProtoAtTheLimitLoadsAndOneElementMoreFails) {
  ScopedLimits limits(1024, kDefaultMaxNetOps);
  Tensor tensor;
  // 256 floats are exactly 1024 bytes.
  DeserializeTensor(FloatProto("fits", 256), &tensor);
  EXPECT_EQ(tensor.numel(), 256);
  const std::string message =
      ErrorOf([] { Tensor t; DeserializeTensor(FloatProto("too_big", 257), &t); });
  EXPECT_MESSAGE_HAS(message, "'too_big'", "1028 bytes", "limit of 1024",
                     "DOPPIO_MAX_TENSOR_BYTES", "SetMaxTensorBytes");
}

TEST(LimitsTest, StringTensorsCountTheirStringObjects) {
  ScopedLimits limits(10 * sizeof(std::string), kDefaultMaxNetOps);
  TensorProto proto;
  proto.set_name("words");
  proto.set_data_type(TensorProto::STRING);
  proto.add_dims(11);
  for (int i = 0; i < 11; ++i) proto.add_string_data("w");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Tensor t; DeserializeTensor(proto, &t); }), "'words'",
                     "limit of " + std::to_string(10 * sizeof(std::string)));
  proto.mutable_dims()->Set(0, 10);
  proto.mutable_string_data()->RemoveLast();
  Tensor tensor;
  DeserializeTensor(proto, &tensor);
  EXPECT_EQ(tensor.numel(), 10);
}

// A segment of a few elements claiming a huge tensor: the allocation it
// would cause is the whole tensor, so the cap applies to the dims. With the
// default cap, no test machine could allocate this.
TEST(LimitsTest, SegmentClaimingAHugeTensorFailsBeforeAllocating) {
  TensorProto proto;
  proto.set_name("claims_1e12");
  proto.set_data_type(TensorProto::FLOAT);
  proto.add_dims(1000000);
  proto.add_dims(1000000);
  proto.mutable_segment()->set_begin(0);
  proto.mutable_segment()->set_end(1);
  proto.add_float_data(1);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Tensor t; DeserializeTensor(proto, &t); }),
                     "'claims_1e12'", "4000000000000 bytes", "limit of 17179869184");
}

TEST(LimitsTest, OverflowingAndNegativeDimsAreRejected) {
  TensorProto proto;
  proto.set_name("overflow");
  proto.set_data_type(TensorProto::FLOAT);
  proto.add_dims(int64_t{1} << 62);
  proto.add_dims(4);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Tensor t; DeserializeTensor(proto, &t); }), "'overflow'",
                     "int64");
  proto.set_name("negative");
  proto.mutable_dims()->Set(1, -4);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Tensor t; DeserializeTensor(proto, &t); }), "'negative'",
                     "negative");
}

TEST(LimitsTest, LoadNamesTheBlobAndTheFile) {
  ScopedLimits limits(40, kDefaultMaxNetOps);
  BlobProto blob;
  blob.set_name("w");
  blob.set_type("Tensor");
  *blob.mutable_tensor() = FloatProto("w", 11);  // 44 bytes
  const std::string path = TempDir("limits_load") + "/big.minidb";
  WriteBytes(path, MiniDBRecord("w", blob.SerializeAsString()));
  Workspace workspace;
  const std::string message = ErrorOf([&] {
    workspace.RunOperatorOnce(MakeOp("Load", {}, {"w"},
                                     {StringArg("db", path), StringArg("db_type", "minidb"),
                                      testing::IntArg("absolute_path", 1)}));
  });
  EXPECT_MESSAGE_HAS(message, "'w'", "44 bytes", "limit of 40", path,
                     "DOPPIO_MAX_TENSOR_BYTES");
  // All or nothing: the output blob was created by the op, never filled.
  EXPECT_TRUE(workspace.GetBlob("w")->IsEmpty());
}

TEST(LimitsTest, NpyHeaderBeyondTheLimitFailsBeforeItsDataIsRead) {
  // 2^33 float32 elements: 32 GiB promised by a 64-byte file.
  const std::string claim = NpyBytes(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (8589934592,), }", "");
  const std::string message = ErrorOf([&] { ParseNpy(claim, "claim.npy"); });
  EXPECT_MESSAGE_HAS(message, "claim.npy", "34359738368 bytes", "limit of 17179869184",
                     "DOPPIO_MAX_TENSOR_BYTES");
  EXPECT_EQ(message.find("truncated"), std::string::npos) << message;

  ScopedLimits limits(8, kDefaultMaxNetOps);
  const std::string path = TempDir("limits_npy") + "/three.npy";
  WriteBytes(path, NpyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
                            std::string(12, '\0')));
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ReadNpyFile(path); }), path, "12 bytes", "limit of 8");
  SetMaxTensorBytes(12);
  EXPECT_EQ(ReadNpyFile(path).numel(), 3);
}

TEST(LimitsTest, NetsBeyondTheOpLimitAreRefusedAtCreation) {
  ScopedLimits limits(kDefaultMaxTensorBytes, 3);
  Workspace workspace;
  workspace.CreateBlob("x")->GetMutableTensor()->Resize({1});
  EXPECT_EQ(ErrorIfAny([&] { workspace.CreateNet(ReluChain("small", 3)); }), "");
  const std::string message = ErrorOf([&] { workspace.CreateNet(ReluChain("big", 4)); });
  EXPECT_MESSAGE_HAS(message, "net 'big'", "4 operators", "limit of 3", "DOPPIO_MAX_NET_OPS",
                     "SetMaxNetOps");
  EXPECT_EQ(workspace.GetNet("big"), nullptr);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { workspace.RunNetOnce(ReluChain("once", 4)); }),
                     "net 'once'", "limit of 3");
}

TEST(LimitsTest, PlansWithAnOversizedNetFailValidation) {
  ScopedLimits limits(kDefaultMaxTensorBytes, 2);
  PlanDef plan;
  plan.set_name("p");
  *plan.add_network() = ReluChain("fine", 2);
  *plan.add_network() = ReluChain("huge", 3);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ValidatePlan(plan); }), "network 'huge'", "plan 'p'",
                     "3 operators", "limit of 2");
}

// Fixed caps on numbers in NetDefs and PlanDefs that would otherwise start
// unbounded threads or overflow time arithmetic (found by fuzzing).
TEST(LimitsTest, DagNetsCapTheirWorkerThreads) {
  Workspace workspace;
  workspace.CreateBlob("x")->GetMutableTensor()->Resize({1});
  NetDef net = ReluChain("dag", 1);
  net.set_type("dag");
  *net.add_arg() = testing::IntArg("num_workers", 2000000000);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { workspace.CreateNet(net); }), "net 'dag'", "2000000000",
                     "1024 worker threads");
  net.mutable_arg(0)->set_i(4);
  EXPECT_EQ(ErrorIfAny([&] { workspace.CreateNet(net); }), "");
}

TEST(LimitsTest, PlansCapIntervalsAndConcurrentInstances) {
  PlanDef plan;
  plan.set_name("p");
  *plan.add_network() = ReluChain("n", 1);
  ExecutionStep* step = plan.add_execution_step();
  step->set_name("s");
  ExecutionStep* work = step->add_substep();
  work->set_name("work");
  work->add_network("n");
  ExecutionStep* tick = step->add_substep();
  tick->set_name("tick");
  tick->add_network("n");
  tick->set_run_every_ms(int64_t{1} << 62);  // * 10^6 ns overflows int64
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ValidatePlan(plan); }), "'s/tick'", "run_every_ms");
  tick->set_run_every_ms(1000);
  step->set_num_concurrent_instances(1000000);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ValidatePlan(plan); }), "num_concurrent_instances",
                     "1000000");
  step->set_num_concurrent_instances(8);
  EXPECT_EQ(ErrorIfAny([&] { ValidatePlan(plan); }), "");
}

// The environment is read once per process, so these run in a fresh one
// (the threadsafe death-test style re-executes the test binary).
class LimitsEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override { ::testing::GTEST_FLAG(death_test_style) = "threadsafe"; }
};

TEST_F(LimitsEnvironmentTest, EnvironmentSetsTheCaps) {
  EXPECT_EXIT(
      {
        setenv("DOPPIO_MAX_TENSOR_BYTES", "3K", 1);
        setenv("DOPPIO_MAX_NET_OPS", "7", 1);
        setenv("DOPPIO_MAX_PROTO_BYTES", "5M", 1);
        const bool ok = MaxTensorBytes() == 3072 && MaxNetOps() == 7 &&
                        MaxProtoBytes() == 5 * 1048576;
        // A setter still wins over the environment.
        SetMaxNetOps(9);
        std::exit(ok && MaxNetOps() == 9 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LimitsEnvironmentTest, MalformedEnvironmentValueFailsChecksNamingIt) {
  EXPECT_EXIT(
      {
        setenv("DOPPIO_MAX_TENSOR_BYTES", "lots", 1);
        std::string message;
        Tensor tensor;
        try {
          DeserializeTensor(FloatProto("t", 1), &tensor);
        } catch (const Error& error) {
          message = error.what();
        }
        std::exit(message.find("DOPPIO_MAX_TENSOR_BYTES='lots'") != std::string::npos ? 0
                                                                                     : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace doppio
