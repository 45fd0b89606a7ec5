// Every schema's shape and type inference agrees with what its kernel
// actually produces. Each op with inference must have at least one case
// here, so a new op cannot ship an inference function nobody ran.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/schema.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::FloatsArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringsArg;

struct Case {
  OperatorDef def;
  // Inputs fed before the op runs: name -> (dims, dtype).
  std::vector<std::pair<std::vector<int64_t>, DataType>> inputs;
};

TensorShape ShapeOf(const Tensor& tensor) {
  TensorShape shape;
  for (int64_t d : tensor.dims()) shape.add_dims(d);
  shape.set_data_type(static_cast<TensorProto::DataType>(tensor.dtype()));
  return shape;
}

void Fill(Tensor* tensor, const std::vector<int64_t>& dims, DataType dtype) {
  tensor->Resize(dims);
  DispatchDataType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = tensor->mutable_data<T>();
    for (int64_t i = 0; i < tensor->numel(); ++i) data[i] = T();
  });
}

std::vector<Case> Cases() {
  const auto f32 = DataType::kFloat;
  const auto f64 = DataType::kDouble;
  const auto i32 = DataType::kInt32;
  const auto i64 = DataType::kInt64;
  std::vector<Case> cases = {
      {MakeOp("Add", {"a", "b"}, {"c"}), {{{2, 3, 4}, f32}, {{3, 1}, f32}}},
      {MakeOp("Add", {"a", "b"}, {"c"}), {{{1, 5}, i64}, {{4, 1}, i64}}},
      {MakeOp("Add", {"a", "b"}, {"c"}, {IntArg("broadcast", 1), IntArg("axis", 1)}),
       {{{2, 3, 4}, f64}, {{3}, f64}}},
      {MakeOp("AddGradient", {"dc", "a", "b"}, {"da", "db"}),
       {{{2, 3}, f32}, {{2, 3}, f32}, {{3}, f32}}},
      {MakeOp("SumReduceLike", {"a", "b"}, {"c"}, {IntArg("axis", 0)}),
       {{{2, 3, 4}, f32}, {{2, 3}, f32}}},
      {MakeOp("Sum", {"a", "b", "c"}, {"s"}), {{{4, 2}, i32}, {{4, 2}, i32}, {{4, 2}, i32}}},
      {MakeOp("Scale", {"a"}, {"b"}, {FloatArg("scale", 2)}), {{{3, 3}, f64}}},
      {MakeOp("Copy", {"a"}, {"b"}), {{{5}, i64}}},
      {MakeOp("CopyOnDeviceLike", {"a", "b"}, {"c"}), {{{5, 2}, f32}, {{1}, f32}}},
      {MakeOp("Alias", {"a"}, {"b"}), {{{2, 2}, f32}}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {2, 3})}), {}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {4}), IntArg("dtype", 10)}), {}},
      {MakeOp("ConstantFill", {}, {"y"}, {IntsArg("shape", {4}), IntArg("value", 3)}), {}},
      {MakeOp("ConstantFill", {"x"}, {"y"}, {IntsArg("extra_shape", {5})}), {{{2, 3}, f32}}},
      {MakeOp("UniformFill", {}, {"y"}, {IntsArg("shape", {3, 2})}), {}},
      {MakeOp("UniformIntFill", {}, {"y"},
              {IntsArg("shape", {7}), IntArg("min", 0), IntArg("max", 5)}),
       {}},
      {MakeOp("GaussianFill", {}, {"y"}, {IntsArg("shape", {2, 2})}), {}},
      {MakeOp("XavierFill", {}, {"y"}, {IntsArg("shape", {4, 3})}), {}},
      {MakeOp("MSRAFill", {}, {"y"}, {IntsArg("shape", {4, 3})}), {}},
      {MakeOp("GivenTensorFill", {}, {"y"}, {IntsArg("shape", {2}), FloatsArg("values", {1, 2})}),
       {}},
      {MakeOp("GivenTensorDoubleFill", {}, {"y"},
              {IntsArg("shape", {1}), FloatsArg("values", {1})}),
       {}},
      {MakeOp("GivenTensorBoolFill", {}, {"y"}, {IntsArg("shape", {1}), IntsArg("values", {1})}),
       {}},
      {MakeOp("GivenTensorIntFill", {}, {"y"}, {IntsArg("shape", {2}), IntsArg("values", {1, 2})}),
       {}},
      {MakeOp("GivenTensorInt64Fill", {}, {"y"}, {IntsArg("shape", {1}), IntsArg("values", {9})}),
       {}},
      {MakeOp("GivenTensorStringFill", {}, {"y"},
              {IntsArg("shape", {2}), StringsArg("values", {"a", "b"})}),
       {}},
  };
  return cases;
}

TEST(ShapeInferenceTest, InferredShapesMatchKernels) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.def.ShortDebugString());
    const OpSchema* schema = OpSchemaRegistry::Schema(c.def.type());
    ASSERT_NE(schema, nullptr);
    ASSERT_TRUE(schema->has_shape_inference());
    Workspace ws;
    std::vector<TensorShape> input_shapes;
    for (int i = 0; i < c.def.input_size(); ++i) {
      Tensor* tensor = ws.CreateBlob(c.def.input(i))->GetMutableTensor();
      Fill(tensor, c.inputs.at(i).first, c.inputs.at(i).second);
      input_shapes.push_back(ShapeOf(*tensor));
    }
    const std::vector<TensorShape> inferred = schema->InferTensor(c.def, input_shapes);
    ws.RunOperatorOnce(c.def);
    ASSERT_EQ(static_cast<int>(inferred.size()), c.def.output_size());
    for (int i = 0; i < c.def.output_size(); ++i) {
      const TensorShape actual = ShapeOf(ws.GetBlob(c.def.output(i))->GetTensor());
      EXPECT_EQ(inferred[i].SerializeAsString(), actual.SerializeAsString())
          << "output " << i << ": inferred " << inferred[i].ShortDebugString()
          << ", kernel produced " << actual.ShortDebugString();
    }
  }
}

TEST(ShapeInferenceTest, EveryInferringOpHasACase) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.def.type());
  for (const auto& entry : OpSchemaRegistry::All()) {
    if (entry.second.has_shape_inference()) {
      EXPECT_TRUE(covered.count(entry.first))
          << entry.first << " infers shapes but has no case in this test";
    }
  }
}

}  // namespace
}  // namespace doppio
