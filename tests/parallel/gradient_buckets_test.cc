// PlanGradientBuckets and InferredFloatElements (parallel/distributed.h):
// buckets follow DDP's rule (first bucket closes at 1 MiB, later ones at the
// cap), order is kept, unknown sizes travel alone, cap 0 means one
// collective per gradient; element counts come from the fills' shapes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/distributed.h"

namespace doppio {
namespace {

using Buckets = std::vector<std::vector<std::string>>;
constexpr int64_t kMiBFloats = (1 << 20) / 4;

TEST(GradientBuckets, FirstBucketClosesAtOneMiBThenAtTheCap) {
  // 0.5 MiB each: the first bucket is full after two, later ones (2 MiB cap)
  // after four.
  std::vector<GradientToReduce> grads;
  for (int i = 0; i < 8; ++i) grads.push_back({"g" + std::to_string(i), kMiBFloats / 2});
  const Buckets expected = {{"g0", "g1"}, {"g2", "g3", "g4", "g5"}, {"g6", "g7"}};
  EXPECT_EQ(PlanGradientBuckets(grads, 2.0), expected);
}

TEST(GradientBuckets, ACapUnderOneMiBAlsoBoundsTheFirstBucket) {
  const std::vector<GradientToReduce> grads = {{"a", 100}, {"b", 100}, {"c", 100}};
  // 800 bytes = two gradients of 400 bytes.
  const Buckets expected = {{"a", "b"}, {"c"}};
  EXPECT_EQ(PlanGradientBuckets(grads, 800.0 / (1 << 20)), expected);
}

TEST(GradientBuckets, UnknownSizesTravelAloneAndKeepTheOrder) {
  const std::vector<GradientToReduce> grads = {{"a", 10}, {"b", -1}, {"c", 10}, {"d", 10}};
  const Buckets expected = {{"a"}, {"b"}, {"c", "d"}};
  EXPECT_EQ(PlanGradientBuckets(grads, 25.0), expected);
}

TEST(GradientBuckets, CapZeroIsOneCollectivePerGradient) {
  const std::vector<GradientToReduce> grads = {{"a", 10}, {"b", 20}, {"c", 30}};
  const Buckets expected = {{"a"}, {"b"}, {"c"}};
  EXPECT_EQ(PlanGradientBuckets(grads, 0.0), expected);
  EXPECT_TRUE(PlanGradientBuckets({}, 25.0).empty());
}

TEST(GradientBuckets, ElementCountsComeFromTheInitNetsShapes) {
  NetDef init;
  auto fill = [&](const std::string& type, const std::string& out, std::vector<int64_t> shape) {
    OperatorDef* op = init.add_op();
    op->set_type(type);
    op->add_output(out);
    Argument* arg = op->add_arg();
    arg->set_name("shape");
    for (int64_t d : shape) arg->add_ints(d);
  };
  fill("XavierFill", "w", {4, 3, 5, 5});
  fill("ConstantFill", "b", {4});
  fill("GivenTensorIntFill", "ids", {7});
  const auto elements = InferredFloatElements(init);
  EXPECT_EQ(elements.at("w"), 4 * 3 * 5 * 5);
  EXPECT_EQ(elements.at("b"), 4);
  EXPECT_EQ(elements.count("ids"), 0u);  // int32: no float gradient to pack
}

}  // namespace
}  // namespace doppio
