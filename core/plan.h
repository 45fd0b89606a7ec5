// Plans: running a PlanDef (networks plus a tree of ExecutionSteps) in a
// workspace with Caffe2's semantics.
//
// - The plan's networks are created in the workspace the first time a step
//   uses them and then reused; a net that already existed in the workspace
//   before the plan started is replaced once by the plan's definition. A step
//   with create_workspace runs in a fresh child workspace on every execution,
//   so its nets and the blobs they create vanish afterwards.
// - A step has either substeps or networks. It repeats them num_iter times
//   (default 1) or, with should_stop_blob, until that blob (a bool scalar,
//   checked after every net or substep) is true; only_once runs such a step
//   once at most.
// - concurrent_substeps runs each substep in its own thread per iteration;
//   num_concurrent_instances runs that many copies of every substep at once,
//   each copy in its own child workspace. The first error stops the siblings
//   at their next iteration boundary and is rethrown once all have stopped.
// - A substep with run_every_ms runs periodically beside its siblings and
//   once more after they finish; report_net runs every report_interval
//   seconds in the same way. An error there fails the step.
// - criteria_network (deprecated in Caffe2) is refused.
//
// Errors name the plan, the step path ("train/iter") and the net. A single
// operator that never returns cannot be interrupted; everything else stops.
// Thread-safety: RunPlan may run concurrently on different workspaces.
#pragma once

#include <cstdint>
#include <functional>

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

// Asked before every iteration of every step (with the step's iteration
// index), possibly from several of the plan's threads at once; returning
// false ends the plan early without an error, as a signal handler would.
using PlanShouldContinue = std::function<bool(int64_t iteration)>;

// Checks the plan's structure before anything runs: unique network names,
// steps with either substeps or networks, known network names, valid counts
// and intervals. Throws an Error naming the offending step.
void ValidatePlan(const PlanDef& plan);

// Validates and runs `plan` in `workspace`; see above for the semantics.
void RunPlan(const PlanDef& plan, Workspace* workspace,
             const PlanShouldContinue& should_continue = nullptr);

}  // namespace doppio
