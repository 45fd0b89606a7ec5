// Allreduce and Broadcast through a Workspace: sums against a loop written
// here, determinism across thread counts, in-place reuse, and the errors.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("cpu_" + std::to_string(i) + "/w_grad");
  return names;
}

template <typename T>
std::vector<std::vector<T>> RandomReplicas(int n, int64_t numel, uint32_t seed) {
  std::mt19937 rng(seed);
  // Magnitudes spread over several decades, so the order of additions
  // changes the rounded result and a reordered sum would be caught.
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<std::vector<T>> replicas(n, std::vector<T>(numel));
  for (auto& replica : replicas) {
    for (T& v : replica) v = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
  }
  return replicas;
}

template <typename T>
void Feed(Workspace& ws, const std::string& name, const std::vector<int64_t>& dims,
          const std::vector<T>& values) {
  Tensor* tensor = ws.CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  T* data = tensor->mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
}

template <typename T>
std::vector<T> Fetch(Workspace& ws, const std::string& name) {
  const Tensor& tensor = ws.GetBlob(name)->GetTensor();
  const T* data = tensor.data<T>();
  return std::vector<T>(data, data + tensor.numel());
}

// Left-to-right sum in T, the order the op promises.
template <typename T>
std::vector<T> ReferenceSum(const std::vector<std::vector<T>>& replicas) {
  std::vector<T> sum = replicas[0];
  for (size_t k = 1; k < replicas.size(); ++k) {
    for (size_t j = 0; j < sum.size(); ++j) sum[j] = sum[j] + replicas[k][j];
  }
  return sum;
}

template <typename T>
void ExpectAllreduceMatchesReference(int n, const std::vector<int64_t>& dims, int num_threads) {
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  const auto replicas = RandomReplicas<T>(n, numel, 17 + n);
  const auto expected = ReferenceSum(replicas);
  Workspace ws;
  const auto names = Names(n);
  for (int i = 0; i < n; ++i) Feed<T>(ws, names[i], dims, replicas[i]);
  ws.RunOperatorOnce(MakeOp("Allreduce", names, names, {IntArg("num_threads", num_threads)}));
  for (int i = 0; i < n; ++i) {
    const std::vector<T> got = Fetch<T>(ws, names[i]);
    ASSERT_EQ(got.size(), expected.size());
    // Bit-identical: the same additions in the same order.
    // (memcmp must not see the null data() of an empty vector.)
    EXPECT_TRUE(got.empty() ||
                std::memcmp(got.data(), expected.data(), got.size() * sizeof(T)) == 0)
        << "replica " << i << " of " << n << ", " << num_threads << " thread(s)";
    EXPECT_EQ(ws.GetBlob(names[i])->GetTensor().dims(), dims);
  }
}

TEST(AllreduceTest, SumsInInputOrderForAnyThreadCount) {
  for (int n = 1; n <= 5; ++n) {
    for (int threads : {1, 2, 3, 7}) {
      // Sizes below one block, at odd block counts, and large enough that
      // every thread gets a range.
      ExpectAllreduceMatchesReference<float>(n, {7}, threads);
      ExpectAllreduceMatchesReference<float>(n, {3, 1, 4099}, threads);
      ExpectAllreduceMatchesReference<double>(n, {100003}, threads);
    }
  }
  ExpectAllreduceMatchesReference<float>(3, {0, 4}, 2);
}

TEST(AllreduceTest, ReusedOperatorKeepsSummingInPlace) {
  Workspace ws;
  const auto names = Names(3);
  const int64_t numel = 70001;
  const auto replicas = RandomReplicas<float>(3, numel, 5);
  for (int i = 0; i < 3; ++i) Feed<float>(ws, names[i], {numel}, replicas[i]);
  auto op = CreateOperator(MakeOp("Allreduce", names, names, {IntArg("num_threads", 2)}), &ws);
  op->Run();
  const std::vector<float> once = ReferenceSum(replicas);
  op->Run();
  const std::vector<float> twice = ReferenceSum<float>({once, once, once});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Fetch<float>(ws, names[i]), twice) << names[i];
}

TEST(AllreduceTest, Float16SumsInFloatAndRoundsOnce) {
  Workspace ws;
  const auto names = Names(3);
  const std::vector<float> a = {1.0f, 2048.0f, -0.5f}, b = {0.25f, 1.0f, 0.5f},
                           c = {-3.0f, 1.0f, 0.0f};
  const std::vector<std::vector<float>> values = {a, b, c};
  for (int i = 0; i < 3; ++i) {
    std::vector<float16> half;
    for (float v : values[i]) half.push_back(FloatToHalf(v));
    Feed<float16>(ws, names[i], {3}, half);
  }
  ws.RunOperatorOnce(MakeOp("Allreduce", names, names));
  // 2048 + 1 + 1 = 2050 exactly in float; rounding after each addition in
  // half (spacing 2 above 2048) would give 2048.
  const std::vector<float> expected = {-1.75f, 2050.0f, 0.0f};
  for (const auto& name : names) {
    const auto got = Fetch<float16>(ws, name);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(HalfToFloat(got[j]), expected[j]) << name << " " << j;
  }
}

TEST(AllreduceTest, ErrorsNameTheBlobs) {
  Workspace ws;
  Feed<float>(ws, "cpu_0/g", {2, 3}, std::vector<float>(6, 1.0f));
  Feed<float>(ws, "cpu_1/g", {3, 2}, std::vector<float>(6, 1.0f));
  Feed<double>(ws, "cpu_2/g", {2, 3}, std::vector<double>(6, 1.0));
  Feed<int32_t>(ws, "cpu_0/i", {2}, {1, 2});
  Feed<int32_t>(ws, "cpu_1/i", {2}, {1, 2});
  ws.CreateBlob("cpu_1/empty");

  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "cpu_1/g"},
                                                 {"cpu_0/g", "cpu_1/g"}));
                     }),
                     "Allreduce", "cpu_1/g", "cpu_0/g", "[3, 2]", "[2, 3]");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "cpu_2/g"},
                                                 {"cpu_0/g", "cpu_2/g"}));
                     }),
                     "cpu_2/g", "float64", "float32");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/i", "cpu_1/i"},
                                                 {"cpu_0/i", "cpu_1/i"}));
                     }),
                     "Allreduce", "cpu_0/i", "int32");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "cpu_1/empty"},
                                                 {"cpu_0/g", "cpu_1/empty"}));
                     }),
                     "cpu_1/empty", "tensor");
  // Not in place: the result would land in a blob nobody reads.
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "cpu_1/g"},
                                                 {"sum_0", "sum_1"}));
                     }),
                     "Allreduce", "in place");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "cpu_0/g"},
                                                 {"cpu_0/g", "cpu_0/g"}));
                     }),
                     "Allreduce", "cpu_0/g");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g"}, {"cpu_0/g"},
                                                 {IntArg("num_threads", -1)}));
                     }),
                     "num_threads");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Allreduce", {"cpu_0/g", "missing"},
                                                 {"cpu_0/g", "missing"}));
                     }),
                     "missing");
  // Inputs untouched by the failed runs.
  EXPECT_EQ(Fetch<float>(ws, "cpu_0/g"), std::vector<float>(6, 1.0f));
}

TEST(BroadcastTest, CopiesRootIntoEveryReplica) {
  Workspace ws;
  const auto names = Names(4);
  const std::vector<double> root_values = {1.5, -2.0, 3.25, 4.0, 5.0, -6.5};
  Feed<double>(ws, names[0], {1}, {9.0});
  Feed<double>(ws, names[1], {2, 3}, std::vector<double>(6, 0.0));
  Feed<double>(ws, names[2], {2, 3}, root_values);
  ws.CreateBlob(names[3]);  // not written yet: takes the root's shape
  ws.RunOperatorOnce(MakeOp("Broadcast", names, names, {IntArg("root", 2)}));
  for (const auto& name : names) {
    EXPECT_EQ(ws.GetBlob(name)->GetTensor().dims(), (std::vector<int64_t>{2, 3})) << name;
    EXPECT_EQ(Fetch<double>(ws, name), root_values) << name;
  }
}

TEST(BroadcastTest, ErrorsNameTheBlobs) {
  Workspace ws;
  Feed<float>(ws, "a", {2}, {1.0f, 2.0f});
  Feed<float>(ws, "b", {2}, {0.0f, 0.0f});
  ws.CreateBlob("unwritten");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(
                           MakeOp("Broadcast", {"a", "b"}, {"a", "b"}, {IntArg("root", 2)}));
                     }),
                     "Broadcast", "root 2");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Broadcast", {"unwritten", "b"},
                                                 {"unwritten", "b"}));
                     }),
                     "Broadcast", "unwritten");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Broadcast", {"a", "b"}, {"a", "c"}));
                     }),
                     "Broadcast", "in place");
}

TensorShape Shape(const std::vector<int64_t>& dims, TensorProto::DataType type) {
  TensorShape shape;
  for (int64_t d : dims) shape.add_dims(d);
  shape.set_data_type(type);
  return shape;
}

TEST(CollectiveSchemaTest, GlooFormShapesSkipTheWorldAndTypeTheStatus) {
  // Cross-process form: a common world first, the tensors in place, and an
  // optional int32 status last. The in-process form maps blob i to blob i.
  const TensorShape world;  // not a tensor
  const std::vector<TensorShape> inputs = {world, Shape({3, 2}, TensorProto::FLOAT),
                                           Shape({4}, TensorProto::DOUBLE)};
  for (const char* type : {"Allreduce", "Broadcast"}) {
    SCOPED_TRACE(type);
    OperatorDef def = MakeOp(type, {"world", "x", "y"}, {"x", "y", "status"});
    def.set_engine("GLOO");
    const std::vector<TensorShape> out =
        OpSchemaRegistry::Schema(type)->InferTensor(def, inputs);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].SerializeAsString(), inputs[1].SerializeAsString());
    EXPECT_EQ(out[1].SerializeAsString(), inputs[2].SerializeAsString());
    EXPECT_EQ(out[2].dims_size(), 0);
    EXPECT_EQ(out[2].data_type(), TensorProto::INT32);

    OperatorDef no_status = MakeOp(type, {"world", "x", "y"}, {"x", "y"});
    no_status.set_engine("GLOO");
    EXPECT_EQ(OpSchemaRegistry::Schema(type)->InferTensor(no_status, inputs).size(), 2u);
  }
}

}  // namespace
}  // namespace doppio
