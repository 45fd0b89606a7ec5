// Collective schedules: the ordered list of the cross-process collectives a
// rank will run, derived from its NetDefs, and the check that every rank's
// list is the same before the first one runs.
//
// Why: two ranks whose nets disagree (one built an extra layer, a gradient
// of another dtype, another bucket layout) meet in collectives that do not
// match. Gloo then blocks until the timeout or, worse, sums the wrong
// buffers. A static graph knows its whole schedule before it runs, so the
// ranks compare schedules once, right after the rendezvous: a mismatch
// fails every rank at once with the first differing collective of each.
//
// The Parallelize pass (parallel/data_parallel.cc) adds the check to the
// init net of a multi-process model, right after CreateCommonWorld; the op
// that runs it is VerifyCollectiveSchedule (parallel/gloo).
//
// Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

struct ScheduledCollective {
  // What must agree across ranks: op type and engine, its arguments, and
  // each blob it moves with dtype and shape ("?" where not known), e.g.
  // "AllreduceCoalesced engine=GLOO [cpu_0/fc2_w_grad FLOAT (3, 7), ...]".
  // A bucket's layout is its blob list.
  std::string signature;
  // Where it is, for errors only: "net 'mlp' op 57 'allreduce_shards_...'".
  std::string where;
};

// The ops of `nets`, in order, whose input 0 is `common_world` (the
// collectives over that world; not the op that creates it, nor a
// VerifyCollectiveSchedule). `shapes` gives
// the dtype and shape of the blobs they move where known.
std::vector<ScheduledCollective> CollectiveSchedule(
    const std::vector<const NetDef*>& nets, const std::string& common_world,
    const std::map<std::string, TensorShape>& shapes);

// The index of the first entry whose signature differs between `a` and `b`
// (the shorter one's size when one is a prefix of the other), or -1 when
// they are the same.
int FirstScheduleDifference(const std::vector<ScheduledCollective>& a,
                            const std::vector<ScheduledCollective>& b);

// Names the first differing collective on each side ("rank 1 has no
// collective 4" when one schedule is shorter). `a` and `b` must differ.
std::string DescribeScheduleMismatch(int rank_a, const std::vector<ScheduledCollective>& a,
                                     int rank_b, const std::vector<ScheduledCollective>& b);

// A stable 64-bit digest of the signatures (FNV-1a): what ranks compare
// first, so equal schedules cost one small exchange.
uint64_t ScheduleDigest(const std::vector<ScheduledCollective>& schedule);

// A schedule as bytes (what ranks exchange when digests differ: the
// serialized arguments of a check op) and back; Decode throws doppio::Error
// on bytes that are not one.
std::string EncodeSchedule(const std::vector<ScheduledCollective>& schedule);
std::vector<ScheduledCollective> DecodeSchedule(const std::string& text);

// The VerifyCollectiveSchedule op for `schedule` over `common_world`
// (in place on the world, so every later reader of the world follows it).
OperatorDef ScheduleCheckOp(const std::vector<ScheduledCollective>& schedule,
                            const std::string& common_world, const DeviceOption& device_option);

// Puts a VerifyCollectiveSchedule right after `init`'s CreateCommonWorld of
// `common_world` (replacing the one there, if any), carrying the schedule
// of every collective after it in `init` and then in `nets`, in order.
// Front ends call it again when they add collectives to other nets.
// Throws doppio::Error when `init` has no such CreateCommonWorld.
void InsertScheduleCheck(NetDef* init, const std::vector<const NetDef*>& nets,
                         const std::string& common_world,
                         const std::map<std::string, TensorShape>& shapes);

// The schedule a VerifyCollectiveSchedule op carries (its "schedule" and
// "where" arguments); throws doppio::Error when they do not pair up.
std::vector<ScheduledCollective> ScheduleOfCheckOp(const OperatorDef& op);

}  // namespace doppio
