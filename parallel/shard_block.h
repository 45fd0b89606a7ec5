// How a tensor is cut into one block per shard, for the sharded optimizer
// state (ZeRO stage 1, ParallelizeOptions::shard_optimizer_state) and the
// collectives that move the blocks (ReduceScatter, ReduceScatterBlocks,
// AllgatherBlocks, ShardSlice).
//
// The flattened tensor of n elements is cut into `num_shards` consecutive
// blocks, the first n % num_shards of them one element longer: Gloo's
// reduce-scatter layout, so one rule serves every op and every process.
#pragma once

#include <cstdint>

namespace doppio {

struct ShardBlock {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Block `shard` of `n` elements over `num_shards` (0 <= shard < num_shards).
inline ShardBlock BlockOfShard(int64_t n, int num_shards, int shard) {
  const int64_t base = n / num_shards;
  const int64_t longer = n % num_shards;
  ShardBlock block;
  block.begin = shard * base + (shard < longer ? shard : longer);
  block.end = block.begin + base + (shard < longer ? 1 : 0);
  return block;
}

}  // namespace doppio
