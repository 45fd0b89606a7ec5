// The sharded optimizer state (ZeRO stage 1) of the Parallelize pass:
// ParallelizeOptions::shard_optimizer_state over several processes.
//
// Every shard holds the whole parameters (the forward and backward passes
// are unchanged), but only its block (parallel/shard_block.h) of each
// optimizer state blob. After backward the gradients are reduce-scattered
// (ReduceScatterBlocks: each shard gets its block of each summed gradient),
// each shard runs the update ops on its blocks -- of the param (cut from the
// whole param with ShardSlice), of the gradient and of the state -- and the
// updated blocks are allgathered back into the whole params
// (AllgatherBlocks), which then go to the process's other devices.
//
// This works for update ops that are elementwise (OpSchema::Elementwise:
// the SGD family, Adam, Adagrad, RmsProp, Ftrl, WeightedSum, arithmetic)
// over a param, its gradient and blobs derived from them, reading otherwise
// only one-element blobs (the learning rate, the iteration, ONE). Which
// blobs are a param's optimizer state follows from data flow alone: every
// blob the update ops write from a param's blobs belongs to that param, and
// those of them the init net makes are its state.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

struct ShardedState {
  bool enabled = false;
  int num_shards = 1;
  int shard_id = 0;
  // Template param -> the blob its block is cut into each step, and its
  // dense gradient -> the blob ReduceScatterBlocks writes its block to.
  std::map<std::string, std::string> param_blocks;
  std::map<std::string, std::string> grad_blocks;
  // Index into the update net -> the param whose blocks the op updates.
  // Other update ops run on whole tensors, on every replica.
  std::map<int, std::string> op_param;
  // Param -> its optimizer state: blobs the init net makes (whole) and the
  // update ops write; every shard keeps only its block of each.
  std::map<std::string, std::vector<std::string>> state;
  // The params' allgather buckets (the gradients' buckets, as params).
  std::vector<std::vector<std::string>> param_buckets;
};

// What PlanShardedState reads: the template's update net and params.
struct ShardedStateInputs {
  const NetDef* update_net = nullptr;
  const std::map<std::string, std::string>* param_to_grad = nullptr;
  const std::set<std::string>* shared = nullptr;
  // Shapes after the init net and the update net (the one-element check).
  const std::map<std::string, TensorShape>* shapes = nullptr;
  // The template's init-net shapes: which blobs it makes, and their sizes.
  const std::map<std::string, TensorShape>* init_shapes = nullptr;
  // Forward and backward ops, which may not read a param's state.
  const std::vector<OperatorDef>* train_ops = nullptr;
  // Every name the model uses: the block names must be free.
  const std::set<std::string>* taken = nullptr;
};

// The groups, state and block names above, for shard `shard_id` of
// `num_shards` (enabled is set). Throws NotImplementedError naming the op
// and param for an update op that mixes two params' blocks, is not
// elementwise, reads a blob that is neither a block nor one element, or
// writes a shared blob from a block, for state the train ops read or whose
// size is not the param's; InvalidArgumentError for a block name in use.
ShardedState PlanShardedState(const ShardedStateInputs& inputs, int num_shards, int shard_id);

// Param buckets from gradient buckets.
std::vector<std::vector<std::string>> ParamBuckets(
    const std::vector<std::vector<std::string>>& grad_buckets,
    const std::map<std::string, std::string>& param_to_grad);

}  // namespace doppio
