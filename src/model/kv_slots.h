// model/kv_slots.h — the one rule for how many K/V slots a layer holds, shared by the KV
// cache (what it allocates, kv_cache.h) and the memory planner (what it promises,
// memory_plan.h), so that `squeeze plan` and the running engine cannot disagree.
#pragma once

#include <algorithm>
#include <cstdint>

namespace squeeze::model {

// Headroom of a local layer's ring when none is asked for: at least this many slots, so
// that batch-1 decoding still has rollback depth (speculative decoding, truncate()).
inline constexpr int64_t kMinLocalHeadroom = 64;
// Growth step of a global layer's storage (KvCacheConfig::chunk_slots' default).
inline constexpr int64_t kGlobalChunkSlots = 256;

// Ring slots beyond the window of a local layer: `requested` when > 0, else
// max(batch, kMinLocalHeadroom). A prefill chunk of n tokens needs n - 1 slots beyond
// the window (kv_cache.h), so the batch sets the floor; llama.cpp sizes its SWA cache
// the same way (window + ubatch).
inline int64_t local_ring_headroom(int64_t batch, int64_t requested) {
  return requested > 0 ? requested : std::max(batch, kMinLocalHeadroom);
}

// Slots one layer holds once `context` positions have been written: a local layer
// (window > 0) a ring of min(window + headroom, context); a global one `context` rounded
// up to whole chunks of chunk_slots.
inline int64_t kv_layer_slots(int64_t window, int64_t context, int64_t headroom, int64_t chunk_slots) {
  if (window > 0) return std::min(window + headroom, context);
  return (context + chunk_slots - 1) / chunk_slots * chunk_slots;
}

}  // namespace squeeze::model
