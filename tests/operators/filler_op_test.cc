// Fill operators: shapes from arguments and inputs, every ConstantFill
// dtype, GivenTensor*Fill values, the statistics of the random fills, seeds,
// and the errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::Feed;
using testing::Fetch;
using testing::FetchTensor;
using testing::FloatArg;
using testing::FloatsArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::SetSeed;
using testing::StringArg;
using testing::StringsArg;

constexpr int kFloat = 1, kInt32 = 2, kString = 4, kBool = 5, kUint8 = 6, kInt8 = 7,
              kUint16 = 8, kInt16 = 9, kInt64 = 10, kFloat16 = 12, kDouble = 13;

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

template <typename T>
Moments MomentsOf(const std::vector<T>& values) {
  Moments m;
  m.min = m.max = static_cast<double>(values.at(0));
  for (T v : values) {
    m.mean += static_cast<double>(v);
    m.min = std::min(m.min, static_cast<double>(v));
    m.max = std::max(m.max, static_cast<double>(v));
  }
  m.mean /= values.size();
  for (T v : values) m.stddev += (v - m.mean) * (v - m.mean);
  m.stddev = std::sqrt(m.stddev / values.size());
  return m;
}

// ---- ConstantFill ----

TEST(ConstantFillTest, DefaultsToFloatZeros) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {2, 3})}));
  const Tensor& y = FetchTensor(ws, "y");
  EXPECT_EQ(y.dtype(), DataType::kFloat);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Fetch<float>(ws, "y"), std::vector<float>(6, 0.0f));
}

TEST(ConstantFillTest, ValueTypeChoosesDtypeWithoutDtype) {
  Workspace ws;
  ws.RunOperatorOnce(
      MakeOp("ConstantFill", {}, {"f"}, {IntsArg("shape", {3}), FloatArg("value", 2.5f)}));
  EXPECT_EQ(Fetch<float>(ws, "f"), std::vector<float>(3, 2.5f));
  // An int value without dtype means int64, as in Caffe2.
  ws.RunOperatorOnce(
      MakeOp("ConstantFill", {}, {"i"}, {IntsArg("shape", {2}), IntArg("value", 7)}));
  EXPECT_EQ(FetchTensor(ws, "i").dtype(), DataType::kInt64);
  EXPECT_EQ(Fetch<int64_t>(ws, "i"), std::vector<int64_t>(2, 7));
}

TEST(ConstantFillTest, EveryDtype) {
  Workspace ws;
  auto fill = [&](int dtype, const Argument& value) {
    ws.RunOperatorOnce(MakeOp("ConstantFill", {}, {"y"},
                              {IntsArg("shape", {2, 2}), IntArg("dtype", dtype), value}));
    return &FetchTensor(ws, "y");
  };
  EXPECT_EQ(fill(kFloat, FloatArg("value", -1.5f))->data<float>()[3], -1.5f);
  EXPECT_EQ(fill(kDouble, FloatArg("value", 0.25f))->data<double>()[0], 0.25);
  EXPECT_EQ(fill(kInt32, IntArg("value", -3))->data<int32_t>()[1], -3);
  EXPECT_EQ(fill(kInt64, IntArg("value", 1LL << 40))->data<int64_t>()[2], 1LL << 40);
  EXPECT_EQ(fill(kInt16, IntArg("value", -300))->data<int16_t>()[0], -300);
  EXPECT_EQ(fill(kInt8, IntArg("value", -7))->data<int8_t>()[0], -7);
  EXPECT_EQ(fill(kUint8, IntArg("value", 200))->data<uint8_t>()[0], 200);
  EXPECT_EQ(fill(kUint16, IntArg("value", 60000))->data<uint16_t>()[0], 60000);
  EXPECT_EQ(fill(kBool, IntArg("value", 1))->data<bool>()[3], true);
  EXPECT_EQ(HalfToFloat(fill(kFloat16, FloatArg("value", 0.5f))->data<float16>()[0]), 0.5f);
  const Tensor* strings = fill(kString, StringArg("value", "ab"));
  EXPECT_EQ(strings->dtype(), DataType::kString);
  EXPECT_EQ(strings->data<std::string>()[3], "ab");
  // An int value is fine for a float dtype.
  EXPECT_EQ(fill(kFloat, IntArg("value", 4))->data<float>()[0], 4.0f);
}

TEST(ConstantFillTest, ShapeFromInputExtraShapeAndInputAsShape) {
  Workspace ws;
  Feed<double>(ws, "x", {2, 3}, std::vector<double>(6, 9.0));
  ws.RunOperatorOnce(MakeOp("ConstantFill", {"x"}, {"y"}, {FloatArg("value", 1.0f)}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(FetchTensor(ws, "y").dtype(), DataType::kFloat);

  ws.RunOperatorOnce(MakeOp("ConstantFill", {"x"}, {"y"}, {IntsArg("extra_shape", {4, 1})}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{2, 3, 4, 1}));

  Feed<int64_t>(ws, "shape", {3}, {4, 0, 2});
  ws.RunOperatorOnce(MakeOp("ConstantFill", {"shape"}, {"y"},
                            {IntArg("input_as_shape", 1), IntsArg("extra_shape", {5})}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{4, 0, 2, 5}));
  EXPECT_EQ(FetchTensor(ws, "y").numel(), 0);
}

TEST(ConstantFillTest, ScalarsEmptyTensorsAndInPlace) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("ConstantFill", {}, {"s"}, {FloatArg("value", 3.0f)}));
  EXPECT_EQ(FetchTensor(ws, "s").ndim(), 0);
  EXPECT_EQ(Fetch<float>(ws, "s"), std::vector<float>{3.0f});

  ws.RunOperatorOnce(MakeOp("ConstantFill", {}, {"e"}, {IntsArg("shape", {3, 0})}));
  EXPECT_EQ(FetchTensor(ws, "e").numel(), 0);
  EXPECT_EQ(FetchTensor(ws, "e").dims(), (std::vector<int64_t>{3, 0}));

  // In place: X keeps its shape and takes the new values and dtype.
  Feed<int32_t>(ws, "x", {2, 2}, {1, 2, 3, 4});
  ws.RunOperatorOnce(MakeOp("ConstantFill", {"x"}, {"x"}, {FloatArg("value", 0.5f)}));
  EXPECT_EQ(FetchTensor(ws, "x").dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Fetch<float>(ws, "x"), std::vector<float>(4, 0.5f));
}

TEST(ConstantFillTest, SecondInputGivesTheValue) {
  Workspace ws;
  Feed<float>(ws, "x", {2, 2}, {0, 0, 0, 0});
  Feed<int32_t>(ws, "v", {1}, {42});
  ws.RunOperatorOnce(MakeOp("ConstantFill", {"x", "v"}, {"y"}));
  EXPECT_EQ(FetchTensor(ws, "y").dtype(), DataType::kInt32);
  EXPECT_EQ(Fetch<int32_t>(ws, "y"), std::vector<int32_t>(4, 42));
}

TEST(ConstantFillTest, BadArgumentsNameTheOpAndArgument) {
  Workspace ws;
  Feed<float>(ws, "x", {2}, {1, 2});
  auto error = [&](const OperatorDef& def) { return ErrorOf([&] { ws.RunOperatorOnce(def); }); };
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {2, -1})})),
                     "ConstantFill", "'shape'", "-1");
  EXPECT_MESSAGE_HAS(
      error(MakeOp("ConstantFill", {"x"}, {"y"}, {IntsArg("extra_shape", {-2})})),
      "ConstantFill", "'extra_shape'", "-2");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {"x"}, {"y"}, {IntsArg("shape", {2})})),
                     "ConstantFill", "'shape'", "'x'");
  EXPECT_MESSAGE_HAS(
      error(MakeOp("ConstantFill", {}, {"y"}, {IntsArg("extra_shape", {2})})),
      "ConstantFill", "extra_shape");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("input_as_shape", 1)})),
                     "ConstantFill", "input_as_shape");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("shape", 3)})),
                     "ConstantFill", "'shape'", "list");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("dtype", 0)})),
                     "ConstantFill", "'dtype'");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("dtype", 99)})),
                     "ConstantFill", "'dtype'", "99");
  EXPECT_MESSAGE_HAS(
      error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("dtype", kInt8), IntArg("value", 300)})),
      "ConstantFill", "'value'", "300");
  EXPECT_MESSAGE_HAS(
      error(MakeOp("ConstantFill", {}, {"y"}, {IntArg("dtype", kInt32), FloatArg("value", 1.5f)})),
      "ConstantFill", "'value'");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {StringArg("value", "a")})),
                     "ConstantFill", "'value'");
  // A string where an int is expected.
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {StringArg("dtype", "float")})),
                     "ConstantFill", "'dtype'", "string");
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {}, {"y"}, {StringsArg("shape", {"2"})})),
                     "ConstantFill", "'shape'");
  // input_as_shape wants a 1-D integer tensor.
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {"x"}, {"y"}, {IntArg("input_as_shape", 1)})),
                     "ConstantFill", "'x'", "int64");
  Feed<int64_t>(ws, "neg", {2}, {2, -3});
  EXPECT_MESSAGE_HAS(
      error(MakeOp("ConstantFill", {"neg"}, {"y"}, {IntArg("input_as_shape", 1)})),
      "ConstantFill", "'neg'", "-3");
  // Missing input blob.
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {"nope"}, {"y"})), "ConstantFill", "'nope'");
  // Too many inputs (schema).
  EXPECT_MESSAGE_HAS(error(MakeOp("ConstantFill", {"x", "x", "x"}, {"y"})), "ConstantFill",
                     "got 3");
}

TEST(ConstantFillTest, ShapeInferenceFollowsArguments) {
  const OpSchema* schema = OpSchemaRegistry::Schema("ConstantFill");
  ASSERT_NE(schema, nullptr);
  const auto out = schema->InferTensor(
      MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {4, 5}), IntArg("dtype", kInt64)}),
      {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data_type(), TensorProto::INT64);
  ASSERT_EQ(out[0].dims_size(), 2);
  EXPECT_EQ(out[0].dims(1), 5);
}

// ---- GivenTensor*Fill ----

TEST(GivenTensorFillTest, EveryVariantHoldsItsValues) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("GivenTensorFill", {}, {"f"},
                            {IntsArg("shape", {2, 3}), FloatsArg("values", {1, 2, 3, 4, 5, 6.5})}));
  EXPECT_EQ(FetchTensor(ws, "f").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Fetch<float>(ws, "f"), (std::vector<float>{1, 2, 3, 4, 5, 6.5}));

  ws.RunOperatorOnce(MakeOp("GivenTensorDoubleFill", {}, {"d"},
                            {IntsArg("shape", {2}), FloatsArg("values", {0.5, -2})}));
  EXPECT_EQ(Fetch<double>(ws, "d"), (std::vector<double>{0.5, -2}));

  ws.RunOperatorOnce(MakeOp("GivenTensorIntFill", {}, {"i"},
                            {IntsArg("shape", {3}), IntsArg("values", {-1, 0, 7})}));
  EXPECT_EQ(Fetch<int32_t>(ws, "i"), (std::vector<int32_t>{-1, 0, 7}));

  ws.RunOperatorOnce(MakeOp("GivenTensorInt64Fill", {}, {"l"},
                            {IntsArg("shape", {2}), IntsArg("values", {1LL << 40, -5})}));
  EXPECT_EQ(Fetch<int64_t>(ws, "l"), (std::vector<int64_t>{1LL << 40, -5}));

  ws.RunOperatorOnce(MakeOp("GivenTensorBoolFill", {}, {"b"},
                            {IntsArg("shape", {3}), IntsArg("values", {1, 0, 1})}));
  EXPECT_EQ(Fetch<bool>(ws, "b"), (std::vector<bool>{true, false, true}));

  ws.RunOperatorOnce(MakeOp("GivenTensorStringFill", {}, {"s"},
                            {IntsArg("shape", {2}), StringsArg("values", {"x", "yz"})}));
  EXPECT_EQ(Fetch<std::string>(ws, "s"), (std::vector<std::string>{"x", "yz"}));

  // GivenTensorFill with dtype names another element type.
  ws.RunOperatorOnce(MakeOp("GivenTensorFill", {}, {"g"},
                            {IntsArg("shape", {2}), IntArg("dtype", kInt64),
                             IntsArg("values", {3, 1LL << 33})}));
  EXPECT_EQ(Fetch<int64_t>(ws, "g"), (std::vector<int64_t>{3, 1LL << 33}));
}

TEST(GivenTensorFillTest, ShapeFromInputScalarAndEmpty) {
  Workspace ws;
  Feed<int32_t>(ws, "x", {2, 2}, {0, 0, 0, 0});
  ws.RunOperatorOnce(MakeOp("GivenTensorFill", {"x"}, {"y"}, {FloatsArg("values", {1, 2, 3, 4})}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Fetch<float>(ws, "y"), (std::vector<float>{1, 2, 3, 4}));
  ws.RunOperatorOnce(MakeOp("GivenTensorFill", {}, {"s"}, {FloatsArg("values", {9})}));
  EXPECT_EQ(FetchTensor(ws, "s").ndim(), 0);
  EXPECT_EQ(Fetch<float>(ws, "s"), std::vector<float>{9});
  ws.RunOperatorOnce(MakeOp("GivenTensorFill", {}, {"e"}, {IntsArg("shape", {0, 4})}));
  EXPECT_EQ(FetchTensor(ws, "e").numel(), 0);
}

TEST(GivenTensorFillTest, ValueCountMismatchIsAnError) {
  Workspace ws;
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("GivenTensorFill", {}, {"y"},
                                                 {IntsArg("shape", {2, 3}),
                                                  FloatsArg("values", {1, 2, 3, 4, 5})}));
                     }),
                     "GivenTensorFill", "'values'", "5", "6");
  Feed<float>(ws, "x", {3}, {0, 0, 0});
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("GivenTensorIntFill", {"x"}, {"y"},
                                                 {IntsArg("values", {1, 2})}));
                     }),
                     "GivenTensorIntFill", "'values'", "[3]");
  // Floats for an int variant.
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("GivenTensorIntFill", {}, {"y"},
                                                 {IntsArg("shape", {1}),
                                                  FloatsArg("values", {1.5})}));
                     }),
                     "GivenTensorIntFill", "'values'");
}

// ---- random fills ----

std::vector<float> RunSeeded(const std::string& type, std::vector<Argument> args,
                             uint32_t seed) {
  Workspace ws;
  OperatorDef def = MakeOp(type, {}, {"y"}, args);
  SetSeed(&def, seed);
  ws.RunOperatorOnce(def);
  return Fetch<float>(ws, "y");
}

TEST(RandomFillTest, SeedsReproduce) {
  for (const char* type : {"UniformFill", "GaussianFill", "XavierFill", "MSRAFill"}) {
    SCOPED_TRACE(type);
    const std::vector<Argument> args = {IntsArg("shape", {20, 30})};
    EXPECT_EQ(RunSeeded(type, args, 5), RunSeeded(type, args, 5));
    EXPECT_NE(RunSeeded(type, args, 5), RunSeeded(type, args, 6));
  }
  // Rerunning one op continues its sequence rather than restarting it.
  Workspace ws;
  OperatorDef def = MakeOp("UniformFill", {}, {"y"}, {IntsArg("shape", {8})});
  SetSeed(&def, 3);
  NetDef net;
  *net.add_op() = def;
  net.set_name("fill");
  ws.CreateNet(net);
  ws.RunNet("fill");
  const std::vector<float> first = Fetch<float>(ws, "y");
  ws.RunNet("fill");
  EXPECT_NE(first, Fetch<float>(ws, "y"));
  EXPECT_EQ(first, RunSeeded("UniformFill", {IntsArg("shape", {8})}, 3));
}

TEST(RandomFillTest, UniformFillRangeAndMoments) {
  const std::vector<float> values = RunSeeded(
      "UniformFill", {IntsArg("shape", {200000}), FloatArg("min", -2), FloatArg("max", 6)}, 11);
  const Moments m = MomentsOf(values);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 6.0);
  EXPECT_NEAR(m.mean, 2.0, 0.05);
  EXPECT_NEAR(m.stddev, 8.0 / std::sqrt(12.0), 0.02);
  // Defaults: [0, 1).
  const Moments unit = MomentsOf(RunSeeded("UniformFill", {IntsArg("shape", {50000})}, 1));
  EXPECT_GE(unit.min, 0.0);
  EXPECT_LT(unit.max, 1.0);
  EXPECT_NEAR(unit.mean, 0.5, 0.01);
}

TEST(RandomFillTest, UniformIntFillIsInclusive) {
  Workspace ws;
  OperatorDef def = MakeOp("UniformIntFill", {}, {"y"},
                           {IntsArg("shape", {10000}), IntArg("min", -3), IntArg("max", 4)});
  SetSeed(&def, 2);
  ws.RunOperatorOnce(def);
  EXPECT_EQ(FetchTensor(ws, "y").dtype(), DataType::kInt32);
  const std::vector<int32_t> values = Fetch<int32_t>(ws, "y");
  std::vector<int> counts(8, 0);
  for (int32_t v : values) {
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 4);
    ++counts[v + 3];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000 / 8, 200);
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("UniformIntFill", {}, {"y"},
                                                 {IntArg("min", 5), IntArg("max", 5)}));
                     }),
                     "UniformIntFill", "min");
}

TEST(RandomFillTest, UniformFillBoundsFromInputs) {
  Workspace ws;
  Feed<int64_t>(ws, "shape", {2}, {50, 2});
  Feed<float>(ws, "lo", {}, {10});
  Feed<float>(ws, "hi", {}, {11});
  ws.RunOperatorOnce(
      MakeOp("UniformFill", {"shape", "lo", "hi"}, {"y"}, {IntArg("input_as_shape", 1)}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{50, 2}));
  const Moments m = MomentsOf(Fetch<float>(ws, "y"));
  EXPECT_GE(m.min, 10.0);
  EXPECT_LT(m.max, 11.0);
  // An inverted range from inputs gives an empty first dimension.
  Feed<float>(ws, "hi", {}, {9});
  ws.RunOperatorOnce(
      MakeOp("UniformFill", {"shape", "lo", "hi"}, {"y"}, {IntArg("input_as_shape", 1)}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (std::vector<int64_t>{0, 2}));
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("UniformFill", {"shape", "lo", "hi"}, {"y"},
                                                 {IntArg("input_as_shape", 1), FloatArg("min", 0)}));
                     }),
                     "UniformFill", "min");
}

TEST(RandomFillTest, GaussianFillMoments) {
  const std::vector<float> values = RunSeeded(
      "GaussianFill", {IntsArg("shape", {400, 500}), FloatArg("mean", 3), FloatArg("std", 0.5)},
      17);
  const Moments m = MomentsOf(values);
  EXPECT_NEAR(m.mean, 3.0, 0.01);
  EXPECT_NEAR(m.stddev, 0.5, 0.01);
  const Moments unit = MomentsOf(RunSeeded("GaussianFill", {IntsArg("shape", {100000})}, 4));
  EXPECT_NEAR(unit.mean, 0.0, 0.02);
  EXPECT_NEAR(unit.stddev, 1.0, 0.02);
  // std 0 is a constant; a negative std is refused.
  EXPECT_EQ(RunSeeded("GaussianFill", {IntsArg("shape", {3}), FloatArg("mean", 2), FloatArg("std", 0)}, 1),
            std::vector<float>(3, 2.0f));
  Workspace ws;
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("GaussianFill", {}, {"y"}, {FloatArg("std", -1)}));
                     }),
                     "GaussianFill", "'std'");
}

TEST(RandomFillTest, XavierFillScale) {
  // fan_in = numel / dim(0) = 10 * 5 = 50.
  const std::vector<float> values = RunSeeded("XavierFill", {IntsArg("shape", {400, 10, 5})}, 9);
  const double scale = std::sqrt(3.0 / 50);
  const Moments m = MomentsOf(values);
  EXPECT_GE(m.min, -scale);
  EXPECT_LE(m.max, scale);
  EXPECT_GT(m.max, 0.98 * scale);
  EXPECT_LT(m.min, -0.98 * scale);
  EXPECT_NEAR(m.mean, 0.0, 0.01 * scale);
  EXPECT_NEAR(m.stddev, scale / std::sqrt(3.0), 0.02 * scale);
}

TEST(RandomFillTest, MSRAFillScale) {
  // fan_out = numel / dim(1) = 40 * 3 * 3 = 360.
  const std::vector<float> values = RunSeeded("MSRAFill", {IntsArg("shape", {40, 200, 3, 3})}, 8);
  const double stddev = std::sqrt(2.0 / 360);
  const Moments m = MomentsOf(values);
  EXPECT_NEAR(m.mean, 0.0, 0.02 * stddev);
  EXPECT_NEAR(m.stddev, stddev, 0.02 * stddev);
  Workspace ws;
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("MSRAFill", {}, {"y"}, {IntsArg("shape", {7})}));
                     }),
                     "MSRAFill", "fan_out");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("XavierFill", {}, {"y"})); }),
                     "XavierFill", "fan_in");
  // Empty outputs are fine.
  ws.RunOperatorOnce(MakeOp("XavierFill", {}, {"y"}, {IntsArg("shape", {0, 4})}));
  EXPECT_EQ(FetchTensor(ws, "y").numel(), 0);
}

TEST(FillGradientTest, FillsHaveNoGradient) {
  for (const char* type :
       {"ConstantFill", "UniformFill", "UniformIntFill", "GaussianFill", "XavierFill",
        "MSRAFill", "GivenTensorFill", "GivenTensorDoubleFill", "GivenTensorBoolFill",
        "GivenTensorIntFill", "GivenTensorInt64Fill", "GivenTensorStringFill"}) {
    SCOPED_TRACE(type);
    const GradientRegistry::Entry* entry = GradientRegistry::Find(type);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->kind, GradientRegistry::Kind::kNoGradient);
    EXPECT_FALSE(entry->reason.empty());
    GradientWrapper output_gradient;
    output_gradient.dense = "y_grad";
    const GradientOpsMeta meta =
        GetGradientForOp(MakeOp(type, {"x"}, {"y"}), {output_gradient});
    EXPECT_TRUE(meta.ops.empty());
    ASSERT_EQ(meta.input_gradients.size(), 1u);
    EXPECT_TRUE(meta.input_gradients[0].IsEmpty());
  }
}

}  // namespace
}  // namespace doppio
