// Collective schedules (parallel/collective_schedule.h): what a rank's nets
// say it will run over a world, how two schedules are compared and named,
// and the text ranks exchange.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parallel/collective_schedule.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;

TensorShape Shape(TensorProto::DataType dtype, const std::vector<int64_t>& dims) {
  TensorShape shape;
  shape.set_data_type(dtype);
  for (int64_t d : dims) shape.add_dims(d);
  return shape;
}

NetDef TwoCollectives() {
  NetDef net;
  net.set_name("train");
  *net.add_op() = MakeOp("CreateCommonWorld", {"store"}, {"world"});
  *net.add_op() = MakeOp("FC", {"x", "w", "b"}, {"y"});
  OperatorDef bucket = MakeOp("AllreduceCoalesced", {"world", "w_grad", "b_grad"},
                              {"w_grad", "b_grad"});
  bucket.set_name("bucket");
  bucket.set_engine("GLOO");
  *net.add_op() = bucket;
  OperatorDef broadcast = MakeOp("Broadcast", {"world", "w"}, {"w"}, {IntArg("root", 0)});
  broadcast.set_engine("GLOO");
  *net.add_op() = broadcast;
  *net.add_op() = MakeOp("Broadcast", {"other_world", "w"}, {"w"});
  return net;
}

TEST(CollectiveScheduleTest, ListsTheWorldsCollectivesWithDtypesAndShapes) {
  const NetDef net = TwoCollectives();
  const auto schedule = CollectiveSchedule(
      {&net}, "world", {{"w_grad", Shape(TensorProto::FLOAT, {3, 7})},
                        {"w", Shape(TensorProto::DOUBLE, {3, 7})}});
  ASSERT_EQ(schedule.size(), 2u);
  EXPECT_EQ(schedule[0].signature,
            "AllreduceCoalesced engine=GLOO [w_grad FLOAT (3, 7), b_grad ?]");
  EXPECT_EQ(schedule[0].where, "net 'train' op 2 'bucket'");
  EXPECT_EQ(schedule[1].signature, "Broadcast engine=GLOO {name: \"root\" i: 0} [w DOUBLE (3, 7)]");
  EXPECT_EQ(schedule[1].where, "net 'train' op 3");
}

TEST(CollectiveScheduleTest, ArgumentOrderDoesNotMatterButValuesDo) {
  NetDef a, b;
  *a.add_op() = MakeOp("Broadcast", {"world", "w"}, {"w"}, {IntArg("root", 0), IntArg("x", 1)});
  *b.add_op() = MakeOp("Broadcast", {"world", "w"}, {"w"}, {IntArg("x", 1), IntArg("root", 0)});
  EXPECT_EQ(FirstScheduleDifference(CollectiveSchedule({&a}, "world", {}),
                                    CollectiveSchedule({&b}, "world", {})),
            -1);
  b.mutable_op(0)->mutable_arg(1)->set_i(1);
  EXPECT_EQ(FirstScheduleDifference(CollectiveSchedule({&a}, "world", {}),
                                    CollectiveSchedule({&b}, "world", {})),
            0);
}

TEST(CollectiveScheduleTest, FirstDifferenceAndItsDescription) {
  const std::vector<ScheduledCollective> a = {{"A", "net 'n' op 1"}, {"B", "net 'n' op 2"},
                                              {"C", "net 'n' op 3"}};
  std::vector<ScheduledCollective> b = a;
  b[1].where = "net 'n' op 9";  // where alone is not a difference
  EXPECT_EQ(FirstScheduleDifference(a, b), -1);
  EXPECT_EQ(ScheduleDigest(a), ScheduleDigest(b));
  b[1].signature = "B2";
  EXPECT_EQ(FirstScheduleDifference(a, b), 1);
  EXPECT_NE(ScheduleDigest(a), ScheduleDigest(b));
  const std::string text = DescribeScheduleMismatch(0, a, 3, b);
  EXPECT_NE(text.find("ranks 0 and 3 first disagree at collective 1 of 3 / 3"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rank 0: B (net 'n' op 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 3: B2 (net 'n' op 9)"), std::string::npos) << text;

  const std::vector<ScheduledCollective> shorter(a.begin(), a.begin() + 2);
  EXPECT_EQ(FirstScheduleDifference(a, shorter), 2);
  EXPECT_EQ(FirstScheduleDifference(shorter, a), 2);
  const std::string missing = DescribeScheduleMismatch(0, a, 1, shorter);
  EXPECT_NE(missing.find("rank 1 has no collective 2 (it has 2)"), std::string::npos) << missing;
  EXPECT_NE(ErrorOf([&] { DescribeScheduleMismatch(0, a, 1, a); }).find("the same"),
            std::string::npos);
}

TEST(CollectiveScheduleTest, DigestSeesEntryBoundaries) {
  // "AB" + "C" and "A" + "BC" are different schedules.
  EXPECT_NE(ScheduleDigest({{"AB", ""}, {"C", ""}}), ScheduleDigest({{"A", ""}, {"BC", ""}}));
  EXPECT_NE(ScheduleDigest({}), ScheduleDigest({{"", ""}}));
  EXPECT_EQ(ScheduleDigest({{"A", "here"}}), ScheduleDigest({{"A", "there"}}));
}

TEST(CollectiveScheduleTest, EncodedBytesRoundTripAndBadBytesAreRefused) {
  // Any bytes in a name survive, separators and NULs included.
  const char raw[] = "Allreduce [g\x1e\x1f\0x FLOAT (2)]";
  const std::vector<ScheduledCollective> schedule = {
      {std::string(raw, sizeof(raw) - 1), "net 'n' op 4"},
      {"Broadcast [w ?]", ""}};
  const auto decoded = DecodeSchedule(EncodeSchedule(schedule));
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].signature, schedule[0].signature);
  EXPECT_EQ(decoded[0].where, schedule[0].where);
  EXPECT_EQ(decoded[1].where, "");
  EXPECT_TRUE(DecodeSchedule(EncodeSchedule({})).empty());
  EXPECT_NE(ErrorOf([] { DecodeSchedule("\xff\xff\xff"); }).find("not a serialized schedule"),
            std::string::npos);
}

TEST(CollectiveScheduleTest, TheCheckOpCarriesTheScheduleInPlaceOnTheWorld) {
  const std::vector<ScheduledCollective> schedule = {{"A", "here"}, {"B", "there"}};
  DeviceOption cpu;
  const OperatorDef op = ScheduleCheckOp(schedule, "world", cpu);
  EXPECT_EQ(op.type(), "VerifyCollectiveSchedule");
  EXPECT_EQ(op.input(0), "world");
  EXPECT_EQ(op.output(0), "world");
  const auto carried = ScheduleOfCheckOp(op);
  ASSERT_EQ(carried.size(), 2u);
  EXPECT_EQ(carried[1].signature, "B");
  EXPECT_EQ(carried[1].where, "there");
  // The check itself is not part of any schedule.
  NetDef net;
  *net.add_op() = op;
  EXPECT_TRUE(CollectiveSchedule({&net}, "world", {}).empty());
  OperatorDef broken = op;
  broken.mutable_arg(1)->clear_strings();
  EXPECT_NE(ErrorOf([&] { ScheduleOfCheckOp(broken); }).find("pair up"), std::string::npos);
}

}  // namespace
}  // namespace doppio
