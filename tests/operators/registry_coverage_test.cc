// Every registered operator type must have a schema (CreateOperator refuses
// it otherwise) and a gradient entry: a maker, NO_GRADIENT or
// SHOULD_NOT_DO_GRADIENT, each with its reason.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {
namespace {

std::set<std::string> RegisteredTypes() {
  std::set<std::string> types;
  for (const OperatorKey& key : OperatorRegistry::Keys()) types.insert(key.type);
  return types;
}

TEST(RegistryCoverageTest, TheOperatorsOfThisLibraryAreRegistered) {
  const std::set<std::string> types = RegisteredTypes();
  for (const char* type : {"ConstantFill", "GivenTensorFill", "Add", "AddGradient", "Sum",
                           "Scale", "Copy", "Alias", "Print"}) {
    EXPECT_TRUE(types.count(type)) << type;
  }
}

TEST(RegistryCoverageTest, TheElementwiseAndShapeOperatorsAreRegistered) {
  const std::set<std::string> types = RegisteredTypes();
  for (const char* type :
       {"Sub", "Mul", "Div", "SubGradient", "MulGradient", "DivGradient", "SumReduceLike",
        "Neg", "Exp", "Log", "Sqrt", "Pow", "Abs", "AbsGradient", "Clip", "ClipGradient", "Max",
        "Min", "MaxGradient", "MinGradient", "WeightedSum", "WeightedSumGradient", "EQ", "NE",
        "LT", "LE", "GT", "GE", "And", "Or", "Xor", "Not", "Reshape", "Flatten", "FlattenToVec",
        "ResizeLike", "Transpose", "Concat", "Split", "Slice", "SliceGradient", "Squeeze",
        "ExpandDims", "NCHW2NHWC", "NHWC2NCHW", "Cast", "Shape", "StopGradient"}) {
    EXPECT_TRUE(types.count(type)) << type;
  }
}

TEST(RegistryCoverageTest, EveryOperatorHasASchema) {
  std::vector<std::string> missing;
  for (const std::string& type : RegisteredTypes()) {
    if (OpSchemaRegistry::Schema(type) == nullptr) missing.push_back(type);
  }
  EXPECT_TRUE(missing.empty()) << "operators without OPERATOR_SCHEMA: "
                               << ::testing::PrintToString(missing);
}

TEST(RegistryCoverageTest, EveryOperatorHasAGradientEntry) {
  std::vector<std::string> missing;
  std::vector<std::string> unexplained;
  for (const std::string& type : RegisteredTypes()) {
    const GradientRegistry::Entry* entry = GradientRegistry::Find(type);
    if (entry == nullptr) {
      missing.push_back(type);
    } else if (entry->kind != GradientRegistry::Kind::kMaker && entry->reason.empty()) {
      unexplained.push_back(type);
    }
  }
  EXPECT_TRUE(missing.empty())
      << "operators without REGISTER_GRADIENT, NO_GRADIENT or SHOULD_NOT_DO_GRADIENT: "
      << ::testing::PrintToString(missing);
  EXPECT_TRUE(unexplained.empty()) << "gradient entries without a reason: "
                                   << ::testing::PrintToString(unexplained);
}

}  // namespace
}  // namespace doppio
