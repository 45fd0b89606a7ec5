#include "core/cuda/caching_allocator.h"

#include <algorithm>

#include "core/enforce.h"

namespace doppio {

CachingAllocator::CachingAllocator(DeviceMemoryBacking* backing, bool caching_enabled)
    : backing_(backing), caching_enabled_(caching_enabled) {
  DOPPIO_ENFORCE(backing_ != nullptr, "CachingAllocator needs a backing");
}

CachingAllocator::~CachingAllocator() {
  // Blocks still in use belong to tensors that outlive the allocator (only
  // at process exit); their memory goes with the process.
  try {
    EmptyCache();
  } catch (...) {
  }
}

size_t CachingAllocator::BinSize(size_t nbytes) {
  if (nbytes <= kMinBlockBytes) return kMinBlockBytes;
  size_t power = kMinBlockBytes;
  while (power * 2 <= nbytes) power *= 2;  // largest power of two <= nbytes
  const size_t step = std::max(kMinBlockBytes, power / 4);
  const size_t steps = nbytes / step + (nbytes % step != 0 ? 1 : 0);
  DOPPIO_ENFORCE(steps <= SIZE_MAX / step, "allocation of ", nbytes, " bytes is too large");
  return steps * step;
}

CachingAllocator::DevicePool& CachingAllocator::PoolLocked(int device) {
  return pools_[device];
}

std::unique_ptr<CachingAllocator::Block> CachingAllocator::TakeCachedLocked(
    DevicePool& pool, size_t size, StreamHandle stream) {
  auto bin = pool.cached.find(size);
  if (bin == pool.cached.end()) return nullptr;
  std::vector<std::unique_ptr<Block>>& blocks = bin->second;
  // Same stream first: its queue orders the new use after the old one, so
  // the block is safe at once, whatever its event says -- unless another
  // stream freed it, whose queue may still hold work on it.
  auto chosen = std::find_if(blocks.begin(), blocks.end(), [&](const std::unique_ptr<Block>& b) {
    return b->stream == stream && b->free_event_other == nullptr;
  });
  if (chosen == blocks.end()) {
    chosen = std::find_if(blocks.begin(), blocks.end(), [&](const std::unique_ptr<Block>& b) {
      return FreeEventsCompletedLocked(*b);
    });
  }
  if (chosen == blocks.end()) return nullptr;
  std::unique_ptr<Block> block = std::move(*chosen);
  blocks.erase(chosen);
  if (blocks.empty()) pool.cached.erase(bin);
  DestroyFreeEventsLocked(*block);
  block->stream = stream;
  return block;
}

void* CachingAllocator::Allocate(int device, size_t nbytes, StreamHandle stream) {
  if (nbytes == 0) return nullptr;
  const size_t size = BinSize(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  DevicePool& pool = PoolLocked(device);
  std::unique_ptr<Block> block = TakeCachedLocked(pool, size, stream);
  if (block) {
    pool.stats.cached_bytes -= static_cast<int64_t>(size);
    ++pool.stats.cache_hits;
  } else {
    void* ptr = backing_->Allocate(device, size);
    if (ptr == nullptr && pool.stats.cached_bytes > 0) {
      // Cached blocks of other bins may be what the device lacks.
      ReleaseCachedLocked(pool);
      ptr = backing_->Allocate(device, size);
    }
    DOPPIO_ENFORCE(ptr != nullptr, "CUDA out of memory on device ", device, ": allocating ",
                   nbytes, " bytes (bin ", size, " bytes) with ", pool.stats.current_bytes,
                   " bytes already allocated by Doppio's caching allocator");
    block = std::make_unique<Block>();
    block->device = device;
    block->size = size;
    block->ptr = ptr;
    block->stream = stream;
    ++pool.stats.backing_allocations;
  }
  ++pool.stats.allocations;
  pool.stats.current_bytes += static_cast<int64_t>(size);
  pool.stats.peak_bytes = std::max(pool.stats.peak_bytes, pool.stats.current_bytes);
  void* ptr = block->ptr;
  in_use_.emplace(ptr, std::move(block));
  return ptr;
}

bool CachingAllocator::FreeEventsCompletedLocked(const Block& block) {
  if (!backing_->EventCompleted(block.device, block.free_event)) return false;
  return block.free_event_other == nullptr ||
         backing_->EventCompleted(block.device, block.free_event_other);
}

void CachingAllocator::DestroyFreeEventsLocked(Block& block) {
  for (EventHandle* event : {&block.free_event, &block.free_event_other}) {
    if (*event == nullptr) continue;
    backing_->DestroyEvent(block.device, *event);
    *event = nullptr;
  }
}

void CachingAllocator::Free(void* ptr, CurrentStreamFunction freeing_stream) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = in_use_.find(ptr);
  DOPPIO_ENFORCE(found != in_use_.end(), "CUDA caching allocator: freeing pointer ", ptr,
                 " that it did not allocate (or that was already freed)");
  std::unique_ptr<Block> block = std::move(found->second);
  in_use_.erase(found);
  DevicePool& pool = PoolLocked(block->device);
  pool.stats.current_bytes -= static_cast<int64_t>(block->size);
  if (!caching_enabled_) {
    ReturnToBackingLocked(*block);
    return;
  }
  block->free_event = backing_->RecordEvent(block->device, block->stream);
  if (freeing_stream != nullptr) {
    const StreamHandle freer = freeing_stream(block->device);
    if (freer != block->stream) {
      block->free_event_other = backing_->RecordEvent(block->device, freer);
    }
  }
  pool.stats.cached_bytes += static_cast<int64_t>(block->size);
  pool.cached[block->size].push_back(std::move(block));
}

void CachingAllocator::ReturnToBackingLocked(Block& block) {
  DestroyFreeEventsLocked(block);
  backing_->Free(block.device, block.ptr);
}

void CachingAllocator::ReleaseCachedLocked(DevicePool& pool) {
  for (auto& bin : pool.cached) {
    for (std::unique_ptr<Block>& block : bin.second) ReturnToBackingLocked(*block);
  }
  pool.cached.clear();
  pool.stats.cached_bytes = 0;
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : pools_) ReleaseCachedLocked(entry.second);
}

CachingAllocatorStats CachingAllocator::GetStats(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = pools_.find(device);
  return found == pools_.end() ? CachingAllocatorStats() : found->second.stats;
}

void CachingAllocator::ResetPeak(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  DevicePool& pool = PoolLocked(device);
  pool.stats.peak_bytes = pool.stats.current_bytes;
}

}  // namespace doppio
