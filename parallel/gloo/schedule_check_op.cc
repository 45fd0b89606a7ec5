#include "parallel/gloo/schedule_check_op.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>

#include <gloo/allgather_ring.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {
namespace {

// What each rank sends first: the digest, the entry count, the encoded size.
constexpr int kHeaderWords = 3;

}  // namespace

VerifyCollectiveScheduleOp::VerifyCollectiveScheduleOp(const OperatorDef& def,
                                                       Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      schedule_(ScheduleOfCheckOp(def)),
      digest_(ScheduleDigest(schedule_)),
      encoded_(EncodeSchedule(schedule_)) {}

std::vector<std::vector<ScheduledCollective>> VerifyCollectiveScheduleOp::GatherSchedules(
    const CommonWorld& world, const std::vector<int64_t>& sizes) {
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  const int bytes = ElementCount(*this, std::max<int64_t>(longest, 1));
  ElementCount(*this, static_cast<int64_t>(bytes) * world->size);
  // Padded to the longest rank's bytes: an allgather moves equal sizes.
  std::vector<char> padded(bytes, 0);
  std::copy(encoded_.begin(), encoded_.end(), padded.begin());
  std::vector<char> all(static_cast<size_t>(bytes) * world->size);
  GlooFailureHandler failures(this, -1);
  failures.Run("allgather (collective schedules)", world, [&] {
    gloo::AllgatherRing<char>(world, {padded.data()}, all.data(), bytes).run();
  });
  std::vector<std::vector<ScheduledCollective>> schedules;
  for (int rank = 0; rank < world->size; ++rank) {
    const char* begin = all.data() + static_cast<size_t>(rank) * bytes;
    DOPPIO_ENFORCE(sizes[rank] >= 0 && sizes[rank] <= bytes, "rank ", rank,
                   " announced a schedule of ", sizes[rank], " bytes");
    schedules.push_back(DecodeSchedule(std::string(begin, sizes[rank])));
  }
  return schedules;
}

void VerifyCollectiveScheduleOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const int64_t header[kHeaderWords] = {static_cast<int64_t>(digest_),
                                        static_cast<int64_t>(schedule_.size()),
                                        static_cast<int64_t>(encoded_.size())};
  std::vector<int64_t> headers(static_cast<size_t>(kHeaderWords) * world->size);
  GlooFailureHandler failures(this, -1);
  failures.Run("allgather (collective schedule digests)", world, [&] {
    gloo::AllgatherRing<int64_t>(world, {header}, headers.data(), kHeaderWords).run();
  });
  std::vector<int64_t> sizes;
  int first_different = -1;
  for (int rank = 0; rank < world->size; ++rank) {
    const int64_t* theirs = &headers[static_cast<size_t>(rank) * kHeaderWords];
    sizes.push_back(theirs[2]);
    const bool same = theirs[0] == headers[0] && theirs[1] == headers[1];
    if (!same && first_different < 0) first_different = rank;
  }
  if (first_different < 0) return;
  // Every rank takes this path together: the digests are the same everywhere.
  const auto schedules = GatherSchedules(world, sizes);
  if (FirstScheduleDifference(schedules[0], schedules[first_different]) < 0) {
    // Equal signatures under different digests cannot happen; say so plainly.
    DOPPIO_THROW("the ranks' collective schedule digests differ but their schedules do not "
                 "(rank 0 and rank ", first_different, ")");
  }
  DOPPIO_THROW(DescribeScheduleMismatch(0, schedules[0], first_different,
                                        schedules[first_different]),
               " [this is ", DescribeRank(*world), "]");
}

REGISTER_CPU_OPERATOR(VerifyCollectiveSchedule, VerifyCollectiveScheduleOp);

OPERATOR_SCHEMA(VerifyCollectiveSchedule)
    .NumInputs(1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .Arg("schedule", "(strings) this rank's collectives in order, each as its signature: op "
                     "type, engine, arguments, and each blob with dtype and shape")
    .Arg("where", "(strings) where each collective is, for the error message")
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Output(0, "comm_world", "the same world, in place: later collectives read it after this")
    .Doc("Checks that every rank of the world will run the same collectives in the same order "
         "(parallel/collective_schedule.h). The Parallelize pass adds it after "
         "CreateCommonWorld. Equal schedules cost one allgather of 24 bytes per rank; a "
         "mismatch fails every rank at once with the first differing collective on each "
         "side, instead of a hang or a timeout in the collective where the ranks part.");

NO_GRADIENT(VerifyCollectiveSchedule, "it checks processes against each other and computes "
                                      "no tensor");

}  // namespace doppio
