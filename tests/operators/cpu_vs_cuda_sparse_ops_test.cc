// CPU vs CUDA, in C++, for the ops Parallelize_GPU emits for sparse
// gradients and dynamic memory management: Concat (any axis, split_info on
// the host), Gather, SparseMomentumSGDUpdate, SparseAdagrad (and the dense
// Adagrad beside it) and Free. Each
// runs on the CPU and on GPU 0 from the same inputs; the outputs must agree,
// and so must the errors for bad indices. The CPU ops are checked against
// independent references elsewhere (and the update math in
// sparse_functors_test.cc), so agreement pins the GPU to them.
//
// Without a GPU every test skips with the reason; with DOPPIO_REQUIRE_GPU=1
// it fails instead.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "tests/operators/cpu_vs_cuda_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;
using namespace cpu_vs_cuda;

// The error each device gives, with "CUDA"/"CPU"-free text compared.
void ExpectSameError(const OperatorDef& def, const std::vector<Feed>& feeds,
                     const std::string& needle) {
  const std::string cpu = ErrorOf([&] { RunOn(def, feeds, false); });
  const std::string gpu = ErrorOf([&] { RunOn(def, feeds, true); });
  EXPECT_NE(cpu.find(needle), std::string::npos) << cpu;
  EXPECT_NE(gpu.find(needle), std::string::npos) << gpu;
}

// ---- Concat ----

template <typename T>
void CheckConcat(const std::vector<std::vector<int64_t>>& shapes,
                 const std::vector<Argument>& args) {
  std::vector<Feed> feeds;
  std::vector<std::string> names;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("X" + std::to_string(i));
    feeds.push_back(Make<T>(names.back(), shapes[i],
                            Values<T>(Count(shapes[i]), 50.0, static_cast<int>(i))));
  }
  ExpectCpuEqualsCuda(MakeOp("Concat", names, {"Y", "split_info"}, args), feeds, 0,
                      /*host_outputs=*/{1});
}

TEST(CpuVsCudaSparseOps, ConcatAlongEveryAxis) {
  SKIP_WITHOUT_GPU();
  // Parallelize's slices: indices (1-D) and values (rows) along axis 0.
  CheckConcat<int32_t>({{5}, {3}, {0}, {4}}, {IntArg("axis", 0)});
  CheckConcat<int64_t>({{5}, {3}}, {IntArg("axis", 0)});
  CheckConcat<float>({{5, 3}, {2, 3}, {4, 3}}, {IntArg("axis", 0)});
  // Middle, last and negative axes, the order rule and a new axis.
  CheckConcat<float>({{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, {IntArg("axis", 1)});
  CheckConcat<double>({{2, 3, 4}, {2, 3, 2}}, {IntArg("axis", -1)});
  CheckConcat<float>({{2, 3, 2, 2}, {2, 3, 2, 2}}, {StringArg("order", "NHWC")});
  CheckConcat<float>({{2, 3, 2, 2}, {2, 4, 2, 2}}, {});
  CheckConcat<int32_t>({{2, 3}, {2, 3}, {2, 3}}, {IntArg("axis", 1), IntArg("add_axis", 1)});
  CheckConcat<float>({{2, 3}, {2, 3}}, {IntArg("axis", 2), IntArg("add_axis", 1)});
}

TEST(CpuVsCudaSparseOps, ConcatRejectsMismatchedShapes) {
  SKIP_WITHOUT_GPU();
  const std::vector<Feed> feeds = {Make<float>("A", {2, 3}, Values<float>(6, 1, 0)),
                                   Make<float>("B", {3, 2}, Values<float>(6, 1, 1))};
  ExpectSameError(MakeOp("Concat", {"A", "B"}, {"Y", "info"}, {IntArg("axis", 0)}), feeds,
                  "may differ only along axis 0");
}

// ---- Gather ----

TEST(CpuVsCudaSparseOps, GatherRowsOfAnyDtype) {
  SKIP_WITHOUT_GPU();
  const std::vector<int32_t> ids = {3, 0, 3, 11, 7, 7, 2};
  ExpectCpuEqualsCuda(MakeOp("Gather", {"D", "I"}, {"Y"}),
                      {Make<float>("D", {12, 3}, Values<float>(36, 2, 0)),
                       Make<int32_t>("I", {7}, ids)}, 0);
  ExpectCpuEqualsCuda(MakeOp("Gather", {"D", "I"}, {"Y"}),
                      {Make<int64_t>("D", {6, 2, 2}, Values<int64_t>(24, 1000, 1)),
                       Make<int64_t>("I", {2, 2}, {5, 0, 1, 5})}, 0);
  ExpectCpuEqualsCuda(MakeOp("Gather", {"D", "I"}, {"Y"}),
                      {Make<double>("D", {4}, Values<double>(4, 3, 2)),
                       Make<int32_t>("I", {0}, {})}, 0);
  ExpectCpuEqualsCuda(MakeOp("Gather", {"D", "I"}, {"Y"}),
                      {Make<uint8_t>("D", {3, 5}, std::vector<uint8_t>(15, 7)),
                       Make<int32_t>("I", {2}, {2, 1})}, 0);
}

TEST(CpuVsCudaSparseOps, GatherRejectsIndicesOutOfRange) {
  SKIP_WITHOUT_GPU();
  ExpectSameError(MakeOp("Gather", {"D", "I"}, {"Y"}),
                  {Make<float>("D", {4, 2}, Values<float>(8, 1, 0)),
                   Make<int64_t>("I", {3}, {1, 4, 0})},
                  "index 4 at position 1 of 'I' is out of range [0, 4)");
}

// ---- SparseMomentumSGDUpdate and SparseAdagrad ----

// Repeated indices, as Parallelize's concatenated slices have them.
const std::vector<int32_t> kIds = {2, 5, 2, 0, 5, 5, 7};

template <typename T, typename Index>
std::vector<Feed> MomentumFeeds(bool lr_on_host) {
  const int64_t rows = 8, width = 3, count = static_cast<int64_t>(kIds.size());
  return {Make<T>("grad", {count, width}, Values<T>(count * width, 1.5, 0)),
          Make<T>("moment", {rows, width}, Values<T>(rows * width, 0.5, 1)),
          Make<float>("lr", {1}, {0.25f}, lr_on_host),
          Make<T>("param", {rows, width}, Values<T>(rows * width, 2.0, 2)),
          Make<Index>("ids", {count}, std::vector<Index>(kIds.begin(), kIds.end()))};
}

TEST(CpuVsCudaSparseOps, SparseMomentumSgdUpdate) {
  SKIP_WITHOUT_GPU();
  for (int nesterov : {0, 1}) {
    for (bool lr_on_host : {true, false}) {
      const OperatorDef def = MakeOp(
          "SparseMomentumSGDUpdate", {"grad", "moment", "lr", "param", "ids"},
          {"step", "moment", "param"}, {FloatArg("momentum", 0.9f), IntArg("nesterov", nesterov)});
      ExpectCpuEqualsCuda(def, MomentumFeeds<float, int32_t>(lr_on_host), 1e-6);
      ExpectCpuEqualsCuda(def, MomentumFeeds<double, int64_t>(lr_on_host), 1e-12);
    }
  }
  // In place on the gradient too, and without momentum (Parallelize's plain
  // SGD on a sparse gradient).
  ExpectCpuEqualsCuda(MakeOp("SparseMomentumSGDUpdate", {"grad", "moment", "lr", "param", "ids"},
                             {"grad", "moment", "param"}),
                      MomentumFeeds<float, int64_t>(true), 1e-6);
}

template <typename T, typename Index>
std::vector<Feed> AdagradFeeds(bool lr_on_host) {
  const int64_t rows = 8, width = 3, count = static_cast<int64_t>(kIds.size());
  std::vector<T> moment = Values<T>(rows * width, 0.5, 1);
  for (T& m : moment) m = std::fabs(m);
  return {Make<T>("param", {rows, width}, Values<T>(rows * width, 2.0, 2)),
          Make<T>("moment", {rows, width}, moment),
          Make<Index>("ids", {count}, std::vector<Index>(kIds.begin(), kIds.end())),
          Make<T>("grad", {count, width}, Values<T>(count * width, 1.5, 0)),
          Make<float>("lr", {1}, {-0.1f}, lr_on_host)};
}

TEST(CpuVsCudaSparseOps, SparseAdagrad) {
  SKIP_WITHOUT_GPU();
  for (bool lr_on_host : {true, false}) {
    const OperatorDef def = MakeOp("SparseAdagrad", {"param", "moment", "ids", "grad", "lr"},
                                   {"param", "moment"}, {FloatArg("epsilon", 1e-4f)});
    ExpectCpuEqualsCuda(def, AdagradFeeds<float, int32_t>(lr_on_host), 1e-6);
    ExpectCpuEqualsCuda(def, AdagradFeeds<double, int64_t>(lr_on_host), 1e-12);
  }
}

TEST(CpuVsCudaSparseOps, DenseAdagrad) {
  SKIP_WITHOUT_GPU();
  std::vector<float> moment = Values<float>(24, 0.5, 1);
  for (float& m : moment) m = std::fabs(m);
  for (bool lr_on_host : {true, false}) {
    const std::vector<Feed> feeds = {Make<float>("param", {8, 3}, Values<float>(24, 2, 2)),
                                     Make<float>("moment", {8, 3}, moment),
                                     Make<float>("grad", {8, 3}, Values<float>(24, 1.5, 0)),
                                     Make<float>("lr", {1}, {-0.1f}, lr_on_host)};
    ExpectCpuEqualsCuda(MakeOp("Adagrad", {"param", "moment", "grad", "lr"},
                               {"param", "moment"}, {FloatArg("decay", 0.9f)}),
                        feeds, 1e-6);
    ExpectCpuEqualsCuda(MakeOp("Adagrad", {"param", "moment", "grad", "lr"},
                               {"p2", "m2", "effective_lr", "update"}),
                        feeds, 1e-6);
  }
}

TEST(CpuVsCudaSparseOps, SparseUpdatesRejectBadInputs) {
  SKIP_WITHOUT_GPU();
  std::vector<Feed> feeds = AdagradFeeds<float, int32_t>(true);
  feeds[2] = Make<int32_t>("ids", {7}, {2, 5, 2, 0, 8, 5, 7});
  ExpectSameError(MakeOp("SparseAdagrad", {"param", "moment", "ids", "grad", "lr"},
                         {"param", "moment"}),
                  feeds, "index 8 at position 4 of 'ids' is out of range [0, 8)");
  std::vector<Feed> short_grad = MomentumFeeds<float, int32_t>(true);
  short_grad[0] = Make<float>("grad", {2, 3}, Values<float>(6, 1, 0));
  ExpectSameError(MakeOp("SparseMomentumSGDUpdate", {"grad", "moment", "lr", "param", "ids"},
                         {"step", "moment", "param"}),
                  short_grad, "'grad' has 6 elements");
}

// ---- Free ----

TEST(CpuVsCudaSparseOps, FreeEmptiesCudaBlobs) {
  SKIP_WITHOUT_GPU();
  Workspace ws;
  Put(&ws, Make<float>("a", {1000}, Values<float>(1000, 1, 0)), true);
  Put(&ws, Make<int32_t>("b", {3}, {1, 2, 3}), true);
  OperatorDef free_op = MakeOp("Free", {"a", "b"}, {"a", "b"});
  free_op.mutable_device_option()->set_device_type(CUDA);
  ws.RunOperatorOnce(free_op);
  EXPECT_FALSE(ws.GetBlob("a")->IsTensor());
  EXPECT_FALSE(ws.GetBlob("b")->IsTensor());
  // The blob takes a new CUDA tensor afterwards (the freed block may be
  // reused on this stream).
  Put(&ws, Make<float>("a", {2}, {4.0f, -1.0f}), true);
  EXPECT_EQ(Get(ws, "a").values, (std::vector<double>{4.0, -1.0}));
  EXPECT_NE(ErrorOf([&] {
              OperatorDef bad = MakeOp("Free", {"a"}, {"b"});
              bad.mutable_device_option()->set_device_type(CUDA);
              ws.RunOperatorOnce(bad);
            }).find("Free works in place"),
            std::string::npos);
}

}  // namespace
}  // namespace doppio
