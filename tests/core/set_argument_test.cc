// SetArgument: one argument of the name afterwards, holding only the new
// integer, whether it replaced an argument or appended one.
#include <gtest/gtest.h>

#include "core/argument.h"

namespace doppio {
namespace {

TEST(SetArgumentTest, AppendsAnAbsentArgument) {
  OperatorDef op;
  op.add_arg()->set_name("other");
  op.mutable_arg(0)->set_f(0.5f);
  SetArgument(&op, "num_batches", 4);
  ASSERT_EQ(op.arg_size(), 2);
  EXPECT_EQ(op.arg(0).name(), "other");
  EXPECT_FLOAT_EQ(op.arg(0).f(), 0.5f);
  EXPECT_EQ(op.arg(1).name(), "num_batches");
  EXPECT_TRUE(op.arg(1).has_i());
  EXPECT_EQ(op.arg(1).i(), 4);
}

TEST(SetArgumentTest, ReplacesInPlaceAndDropsTheOldValueKind) {
  OperatorDef op;
  Argument* first = op.add_arg();
  first->set_name("fusion_type");
  first->set_s("relu");
  first->add_ints(7);
  op.add_arg()->set_name("after");
  SetArgument(&op, "fusion_type", int64_t{1} << 40);
  ASSERT_EQ(op.arg_size(), 2);
  EXPECT_EQ(op.arg(0).name(), "fusion_type");
  EXPECT_EQ(op.arg(0).i(), int64_t{1} << 40);
  EXPECT_FALSE(op.arg(0).has_s());
  EXPECT_EQ(op.arg(0).ints_size(), 0);
  EXPECT_EQ(op.arg(1).name(), "after");
}

TEST(SetArgumentTest, NetDefArguments) {
  NetDef net;
  SetArgument(&net, "num_workers", 2);
  SetArgument(&net, "num_workers", 3);
  ASSERT_EQ(net.arg_size(), 1);
  EXPECT_EQ(net.arg(0).name(), "num_workers");
  EXPECT_EQ(net.arg(0).i(), 3);
}

}  // namespace
}  // namespace doppio
