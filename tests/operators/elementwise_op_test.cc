// Add (numpy and legacy broadcasting), AddGradient, SumReduceLike, Sum and
// Scale: outputs against naive index-arithmetic references written here,
// in-place runs, finite-difference gradient checks and errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::Feed;
using testing::Fetch;
using testing::FetchTensor;
using testing::FloatArg;
using testing::IntArg;
using testing::MakeOp;
using testing::NumElements;
using testing::RandomValues;
using testing::StringArg;

using Dims = std::vector<int64_t>;

// ---- references ----

// Coordinates of flat index `flat` in a row-major tensor of `dims`.
Dims Unravel(int64_t flat, const Dims& dims) {
  Dims coords(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    coords[i] = flat % dims[i];
    flat /= dims[i];
  }
  return coords;
}

int64_t Ravel(const Dims& coords, const Dims& dims) {
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + coords[i];
  return flat;
}

// Numpy broadcasting: shapes aligned at the right, size-1 dims stretched.
Dims NumpyShape(const Dims& a, const Dims& b) {
  const size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    const int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = (da == 0 || db == 0) ? 0 : std::max(da, db);
  }
  return out;
}

// The element of a tensor of shape `dims` that output coordinates `coords`
// (of higher or equal rank) read under numpy broadcasting.
int64_t NumpySource(const Dims& coords, const Dims& dims) {
  Dims own(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t c = coords[coords.size() - dims.size() + i];
    own[i] = dims[i] == 1 ? 0 : c;
  }
  return Ravel(own, dims);
}

template <typename T>
std::vector<T> NumpyAdd(const std::vector<T>& a, const Dims& a_dims, const std::vector<T>& b,
                        const Dims& b_dims) {
  const Dims out_dims = NumpyShape(a_dims, b_dims);
  std::vector<T> out(NumElements(out_dims));
  for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k) {
    const Dims coords = Unravel(k, out_dims);
    out[k] = a[NumpySource(coords, a_dims)] + b[NumpySource(coords, b_dims)];
  }
  return out;
}

// Legacy broadcasting: B's dim j lines up with A's dim axis + j.
template <typename T>
std::vector<T> LegacyAdd(const std::vector<T>& a, const Dims& a_dims, const std::vector<T>& b,
                         const Dims& b_dims, int axis) {
  if (axis < 0) axis = static_cast<int>(a_dims.size() - b_dims.size());
  std::vector<T> out(a.size());
  for (int64_t k = 0; k < static_cast<int64_t>(a.size()); ++k) {
    const Dims coords = Unravel(k, a_dims);
    Dims b_coords(b_dims.size());
    for (size_t j = 0; j < b_dims.size(); ++j) {
      b_coords[j] = b_dims[j] == 1 ? 0 : coords[axis + j];
    }
    out[k] = a[k] + (b.size() == 1 ? b[0] : b[Ravel(b_coords, b_dims)]);
  }
  return out;
}

template <typename T>
std::vector<T> Iota(int64_t count, T start) {
  std::vector<T> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<T>(start + static_cast<T>(i % 23));
  return values;
}

// ---- Add forward ----

template <typename T>
void CheckNumpyAdd(const Dims& a_dims, const Dims& b_dims) {
  SCOPED_TRACE(::testing::Message() << DataTypeName(DataTypeFor<T>()) << " "
                                    << ::testing::PrintToString(a_dims) << " + "
                                    << ::testing::PrintToString(b_dims));
  Workspace ws;
  const auto a = Iota<T>(NumElements(a_dims), T(3));
  const auto b = Iota<T>(NumElements(b_dims), T(-5));
  Feed<T>(ws, "a", a_dims, a);
  Feed<T>(ws, "b", b_dims, b);
  ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"c"}));
  EXPECT_EQ(FetchTensor(ws, "c").dims(), NumpyShape(a_dims, b_dims));
  EXPECT_EQ(FetchTensor(ws, "c").dtype(), DataTypeFor<T>());
  EXPECT_EQ(Fetch<T>(ws, "c"), NumpyAdd(a, a_dims, b, b_dims));
}

const std::vector<std::pair<Dims, Dims>> kNumpyCases = {
    {{2, 3}, {2, 3}},       {{2, 3, 4}, {4}},    {{2, 3, 4}, {3, 1}}, {{2, 1, 4}, {3, 1}},
    {{1}, {2, 3}},          {{}, {2, 3}},        {{2, 3}, {}},        {{}, {}},
    {{0, 3}, {3}},          {{0}, {1}},          {{4, 1, 3, 1}, {5, 1, 2}},
    {{3, 1, 5}, {1, 4, 1}}, {{1, 1}, {6, 1, 1}}, {{7}, {7}}};

TEST(AddTest, NumpyBroadcastingMatchesReference) {
  for (const auto& c : kNumpyCases) {
    CheckNumpyAdd<float>(c.first, c.second);
    CheckNumpyAdd<double>(c.first, c.second);
    CheckNumpyAdd<int32_t>(c.first, c.second);
    CheckNumpyAdd<int64_t>(c.first, c.second);
  }
}

struct LegacyCase {
  Dims a, b;
  int axis;
};

TEST(AddTest, LegacyBroadcastingMatchesReference) {
  const std::vector<LegacyCase> cases = {
      {{2, 3, 4, 5}, {}, -1},    {{2, 3, 4, 5}, {1}, -1},     {{2, 3, 4, 5}, {5}, -1},
      {{2, 3, 4, 5}, {4, 5}, -1}, {{2, 3, 4, 5}, {3, 4}, 1},  {{2, 3, 4, 5}, {2}, 0},
      {{2, 3, 4, 5}, {1, 4, 1}, -1}, {{2, 3, 4, 5}, {3, 1}, 1}, {{2, 3}, {2, 3}, -1},
      {{0, 3}, {3}, -1}};
  for (const LegacyCase& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.a) + " + " + ::testing::PrintToString(c.b) +
                 " axis " + std::to_string(c.axis));
    Workspace ws;
    const auto a = RandomValues<float>(NumElements(c.a), 1);
    const auto b = RandomValues<float>(NumElements(c.b), 2);
    Feed<float>(ws, "a", c.a, a);
    Feed<float>(ws, "b", c.b, b);
    std::vector<Argument> args = {IntArg("broadcast", 1)};
    if (c.axis >= 0) args.push_back(IntArg("axis", c.axis));
    ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"c"}, args));
    EXPECT_EQ(FetchTensor(ws, "c").dims(), c.a);
    EXPECT_EQ(Fetch<float>(ws, "c"), LegacyAdd(a, c.a, b, c.b, c.axis));
  }
}

TEST(AddTest, LegacyAxisStrUsesOrder) {
  Workspace ws;
  const Dims a_dims = {2, 3, 4, 4};
  const auto a = RandomValues<float>(NumElements(a_dims), 3);
  const std::vector<float> b = {10, 20, 30};
  Feed<float>(ws, "a", a_dims, a);
  Feed<float>(ws, "b", {3}, b);
  ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"c"},
                            {IntArg("broadcast", 1), StringArg("axis_str", "C")}));
  EXPECT_EQ(Fetch<float>(ws, "c"), LegacyAdd(a, a_dims, b, {3}, 1));
  // NHWC: C is the last axis.
  Feed<float>(ws, "a2", {2, 4, 4, 3}, a);
  ws.RunOperatorOnce(MakeOp("Add", {"a2", "b"}, {"c2"},
                            {IntArg("broadcast", 1), StringArg("axis_str", "C"),
                             StringArg("order", "NHWC")}));
  EXPECT_EQ(Fetch<float>(ws, "c2"), LegacyAdd(a, {2, 4, 4, 3}, b, {3}, 3));
}

TEST(AddTest, InPlaceMatchesOutOfPlace) {
  Workspace ws;
  const auto a = RandomValues<float>(24, 4);
  const auto b = RandomValues<float>(4, 5);
  const auto big_b = RandomValues<float>(24, 6);
  Feed<float>(ws, "a", {2, 3, 4}, a);
  Feed<float>(ws, "b", {4}, b);
  ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"c"}));
  ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"a"}));
  EXPECT_EQ(Fetch<float>(ws, "a"), Fetch<float>(ws, "c"));
  EXPECT_EQ(Fetch<float>(ws, "a"), NumpyAdd(a, {2, 3, 4}, b, {4}));
  // Into B, when B has the output's shape.
  Feed<float>(ws, "small", {3, 1}, {1, 2, 3});
  Feed<float>(ws, "big", {2, 3, 4}, big_b);
  ws.RunOperatorOnce(MakeOp("Add", {"small", "big"}, {"big"}));
  EXPECT_EQ(Fetch<float>(ws, "big"), NumpyAdd<float>({1, 2, 3}, {3, 1}, big_b, {2, 3, 4}));
  // Legacy, into A.
  Feed<float>(ws, "a", {2, 3, 4}, a);
  ws.RunOperatorOnce(MakeOp("Add", {"a", "b"}, {"a"}, {IntArg("broadcast", 1)}));
  EXPECT_EQ(Fetch<float>(ws, "a"), LegacyAdd(a, {2, 3, 4}, b, {4}, -1));
}

TEST(AddTest, ErrorsNameShapesAndOp) {
  Workspace ws;
  Feed<float>(ws, "a", {2, 3}, std::vector<float>(6, 1));
  Feed<float>(ws, "b", {4}, std::vector<float>(4, 1));
  Feed<float>(ws, "b3", {3}, std::vector<float>(3, 1));
  Feed<double>(ws, "d", {2, 3}, std::vector<double>(6, 1));
  Feed<float>(ws, "big", {5, 2, 3}, std::vector<float>(30, 1));
  auto error = [&](const OperatorDef& def) { return ErrorOf([&] { ws.RunOperatorOnce(def); }); };
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "b"}, {"c"})), "Add", "[2, 3]", "[4]", "'a'",
                     "'b'");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "b"}, {"c"}, {IntArg("broadcast", 1)})), "Add",
                     "[2, 3]", "[4]");
  EXPECT_MESSAGE_HAS(
      error(MakeOp("Add", {"a", "b3"}, {"c"}, {IntArg("broadcast", 1), IntArg("axis", 0)})),
      "Add", "[2, 3]", "[3]");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"b3", "a"}, {"c"}, {IntArg("broadcast", 1)})), "Add",
                     "[3]", "[2, 3]");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "d"}, {"c"})), "Add", "float32", "float64");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "big"}, {"a"})), "Add", "in place", "[5, 2, 3]");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "b3"}, {"b3"}, {IntArg("broadcast", 1)})), "Add",
                     "'b3'");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a"}, {"c"})), "Add", "2 inputs, got 1");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "a", "a"}, {"c"})), "Add", "got 3");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "missing"}, {"c"})), "Add", "'missing'");
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"a", "b3"}, {"c"}, {StringArg("broadcast", "yes")})),
                     "Add", "'broadcast'", "string");
  Feed<std::string>(ws, "s", {1}, {"x"});
  EXPECT_MESSAGE_HAS(error(MakeOp("Add", {"s", "s"}, {"c"})), "Add", "str");
}

// ---- Add gradient ----

TEST(AddGradientTest, MatchesFiniteDifferences) {
  for (const auto& c : kNumpyCases) {
    SCOPED_TRACE(::testing::PrintToString(c.first) + " + " +
                 ::testing::PrintToString(c.second));
    Workspace ws;
    Feed<double>(ws, "a", c.first, RandomValues<double>(NumElements(c.first), 7));
    Feed<double>(ws, "b", c.second, RandomValues<double>(NumElements(c.second), 8));
    CheckGradient(MakeOp("Add", {"a", "b"}, {"c"}), ws, {0, 1});
  }
  const std::vector<LegacyCase> legacy = {
      {{2, 3, 4}, {4}, -1}, {{2, 3, 4}, {3}, 1}, {{2, 3, 4}, {}, -1}, {{2, 3, 4}, {1, 3, 1}, 0}};
  for (const LegacyCase& c : legacy) {
    SCOPED_TRACE("legacy " + ::testing::PrintToString(c.b));
    Workspace ws;
    Feed<double>(ws, "a", c.a, RandomValues<double>(NumElements(c.a), 9));
    Feed<double>(ws, "b", c.b, RandomValues<double>(NumElements(c.b), 10));
    std::vector<Argument> args = {IntArg("broadcast", 1)};
    if (c.axis >= 0) args.push_back(IntArg("axis", c.axis));
    CheckGradient(MakeOp("Add", {"a", "b"}, {"c"}, args), ws, {0, 1});
  }
}

TEST(AddGradientTest, MakerEmitsAddGradientWithArguments) {
  const OperatorDef add = MakeOp("Add", {"a", "b"}, {"c"}, {IntArg("broadcast", 1)});
  GradientWrapper dc;
  dc.dense = "c_grad";
  const GradientOpsMeta meta = GetGradientForOp(add, {dc});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "AddGradient");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"c_grad", "a", "b"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"a_grad", "b_grad"}));
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "broadcast");
}

TEST(AddGradientTest, InPlaceOverTheOutputGradient) {
  // dA written over dC (allowed {0, 0}) while dB still reads dC.
  Workspace ws;
  const auto dc = RandomValues<float>(6, 11);
  Feed<float>(ws, "dc", {2, 3}, dc);
  Feed<float>(ws, "a", {2, 3}, std::vector<float>(6, 0));
  Feed<float>(ws, "b", {3}, std::vector<float>(3, 0));
  ws.RunOperatorOnce(MakeOp("AddGradient", {"dc", "a", "b"}, {"dc", "db"}));
  EXPECT_EQ(Fetch<float>(ws, "dc"), dc);
  const std::vector<float> db = Fetch<float>(ws, "db");
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(db[j], dc[j] + dc[3 + j]);
  // dB, of a smaller shape, written over dC (allowed {0, 1}).
  ws.RunOperatorOnce(MakeOp("AddGradient", {"dc", "a", "b"}, {"da", "dc"}));
  EXPECT_EQ(Fetch<float>(ws, "da"), dc);
  EXPECT_EQ(FetchTensor(ws, "dc").dims(), (Dims{3}));
  const std::vector<float> reduced = Fetch<float>(ws, "dc");
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(reduced[j], dc[j] + dc[3 + j]);
  Feed<float>(ws, "wrong", {3, 3}, std::vector<float>(9, 0));
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { ws.RunOperatorOnce(MakeOp("AddGradient", {"wrong", "a", "b"}, {"x", "y"})); }),
      "AddGradient", "'wrong'", "[3, 3]", "[2, 3]");
}

TEST(SumReduceLikeTest, ReducesLikeLegacyBroadcast) {
  Workspace ws;
  const Dims a_dims = {2, 3, 4};
  const auto a = RandomValues<double>(24, 12);
  Feed<double>(ws, "a", a_dims, a);
  Feed<double>(ws, "b", {3}, {0, 0, 0});
  ws.RunOperatorOnce(MakeOp("SumReduceLike", {"a", "b"}, {"c"}, {IntArg("axis", 1)}));
  EXPECT_EQ(FetchTensor(ws, "c").dims(), (Dims{3}));
  std::vector<double> expected(3, 0.0);
  for (int64_t k = 0; k < 24; ++k) expected[Unravel(k, a_dims)[1]] += a[k];
  const std::vector<double> c = Fetch<double>(ws, "c");
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(c[j], expected[j], 1e-12);
  // A scalar-like B sums everything.
  Feed<double>(ws, "s", {1}, {0});
  ws.RunOperatorOnce(MakeOp("SumReduceLike", {"a", "s"}, {"t"}));
  double total = 0;
  for (double v : a) total += v;
  EXPECT_NEAR(Fetch<double>(ws, "t")[0], total, 1e-12);
}

// ---- Sum ----

template <typename T>
void CheckSum(const Dims& dims, int inputs) {
  SCOPED_TRACE(DataTypeName(DataTypeFor<T>()));
  Workspace ws;
  std::vector<std::string> names;
  std::vector<T> expected(NumElements(dims), T(0));
  for (int i = 0; i < inputs; ++i) {
    const auto values = Iota<T>(NumElements(dims), static_cast<T>(i * 3 - 2));
    names.push_back("x" + std::to_string(i));
    Feed<T>(ws, names.back(), dims, values);
    for (size_t k = 0; k < values.size(); ++k) expected[k] += values[k];
  }
  ws.RunOperatorOnce(MakeOp("Sum", names, {"y"}));
  EXPECT_EQ(FetchTensor(ws, "y").dims(), dims);
  EXPECT_EQ(Fetch<T>(ws, "y"), expected);
  // In place into input 0 gives the same.
  ws.RunOperatorOnce(MakeOp("Sum", names, {names[0]}));
  EXPECT_EQ(Fetch<T>(ws, names[0]), expected);
}

TEST(SumTest, MatchesReferenceAndInPlace) {
  for (const Dims& dims : {Dims{2, 3}, Dims{}, Dims{0, 4}, Dims{5}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    for (int inputs : {1, 2, 4}) {
      CheckSum<float>(dims, inputs);
      CheckSum<double>(dims, inputs);
      CheckSum<int32_t>(dims, inputs);
      CheckSum<int64_t>(dims, inputs);
    }
  }
}

TEST(SumTest, GradientGivesEveryInputTheOutputGradient) {
  Workspace ws;
  for (int i = 0; i < 3; ++i) {
    Feed<double>(ws, "x" + std::to_string(i), {2, 3}, RandomValues<double>(6, 20 + i));
  }
  const OperatorDef sum = MakeOp("Sum", {"x0", "x1", "x2"}, {"y"});
  CheckGradient(sum, ws, {0, 1, 2});
  GradientWrapper dy;
  dy.dense = "y_grad";
  const GradientOpsMeta meta = GetGradientForOp(sum, {dy});
  EXPECT_TRUE(meta.ops.empty());
  for (const GradientWrapper& g : meta.input_gradients) EXPECT_EQ(g.dense, "y_grad");
}

TEST(SumTest, Errors) {
  Workspace ws;
  Feed<float>(ws, "a", {2, 3}, std::vector<float>(6, 1));
  Feed<float>(ws, "b", {3, 2}, std::vector<float>(6, 1));
  Feed<int32_t>(ws, "i", {2, 3}, std::vector<int32_t>(6, 1));
  Feed<bool>(ws, "flags", {1}, {true});
  auto error = [&](const OperatorDef& def) { return ErrorOf([&] { ws.RunOperatorOnce(def); }); };
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"a", "b"}, {"y"})), "Sum", "[2, 3]", "[3, 2]", "'b'");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"a", "i"}, {"y"})), "Sum", "float32", "int32");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {}, {"y"})), "Sum", "got 0");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"a", "a"}, {"a", "z"})), "Sum", "outputs");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"a", "b"}, {"b"})), "Sum", "in place");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"flags"}, {"y"})), "Sum", "bool");
  EXPECT_MESSAGE_HAS(error(MakeOp("Sum", {"a", "gone"}, {"y"})), "Sum", "'gone'");
}

// ---- Scale ----

TEST(ScaleTest, ScalesFloatAndDoubleInAndOutOfPlace) {
  Workspace ws;
  const auto x = RandomValues<float>(12, 30);
  Feed<float>(ws, "x", {3, 4}, x);
  ws.RunOperatorOnce(MakeOp("Scale", {"x"}, {"y"}, {FloatArg("scale", -2.5f)}));
  std::vector<float> expected;
  for (float v : x) expected.push_back(-2.5f * v);
  EXPECT_EQ(Fetch<float>(ws, "y"), expected);
  EXPECT_EQ(FetchTensor(ws, "y").dims(), (Dims{3, 4}));
  ws.RunOperatorOnce(MakeOp("Scale", {"x"}, {"x"}, {FloatArg("scale", -2.5f)}));
  EXPECT_EQ(Fetch<float>(ws, "x"), expected);
  // Default scale 1; int arguments accepted for the float.
  Feed<double>(ws, "d", {2}, {1.25, -4});
  ws.RunOperatorOnce(MakeOp("Scale", {"d"}, {"e"}));
  EXPECT_EQ(Fetch<double>(ws, "e"), (std::vector<double>{1.25, -4}));
  ws.RunOperatorOnce(MakeOp("Scale", {"d"}, {"e"}, {IntArg("scale", 3)}));
  EXPECT_EQ(Fetch<double>(ws, "e"), (std::vector<double>{3.75, -12}));
  // Scalars and empty tensors.
  Feed<float>(ws, "s", {}, {2});
  ws.RunOperatorOnce(MakeOp("Scale", {"s"}, {"t"}, {FloatArg("scale", 0.5f)}));
  EXPECT_EQ(Fetch<float>(ws, "t"), std::vector<float>{1});
  Feed<float>(ws, "empty", {0, 2}, {});
  ws.RunOperatorOnce(MakeOp("Scale", {"empty"}, {"t"}));
  EXPECT_EQ(FetchTensor(ws, "t").dims(), (Dims{0, 2}));
}

TEST(ScaleTest, GradientAndErrors) {
  Workspace ws;
  Feed<double>(ws, "x", {4, 2}, RandomValues<double>(8, 31));
  CheckGradient(MakeOp("Scale", {"x"}, {"y"}, {FloatArg("scale", 1.75f)}), ws, {0});
  Feed<int32_t>(ws, "i", {2}, {1, 2});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("Scale", {"i"}, {"y"})); }),
                     "Scale", "'i'", "int32");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(
                           MakeOp("Scale", {"x"}, {"y"}, {StringArg("scale", "big")}));
                     }),
                     "Scale", "'scale'");
}

}  // namespace
}  // namespace doppio
