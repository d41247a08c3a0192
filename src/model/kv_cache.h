// model/kv_cache.h — the per-layer K/V store of one sequence: ring buffers for local
// (sliding-window) layers, chunk-grown buffers for global layers, truncation for
// speculative rollback, and an exact memory report.
//
// Positions are absolute token indices 0, 1, 2, … of the sequence. Each layer keeps the
// positions [begin(layer), end(layer)); a forward step appends the new positions' K/V to a
// layer and then attends (kernels/cpu/attention.h reads the layer through view()).
//
// Local layers (window w > 0) hold a ring of min(w + headroom, context_limit) slots:
// position p lives in slot p % ring. Headroom serves two purposes, and both are exact:
//  * rollback: truncate(t) succeeds while the ring still holds the last w positions
//    before t, i.e. for any t ≥ end − headroom − 1 (≥ min_truncate_position());
//  * prefill longer than the window: a chunk of n positions is written and then attended.
//    Its first query needs keys from w − 1 positions before the chunk, and writing the
//    chunk overwrote the n oldest slots, so n ≤ headroom + 1 = max_chunk(). The forward pass
//    prefills in chunks of at most max_chunk() (set headroom ≥ the prefill batch, as
//    llama.cpp sizes its SWA cache window + ubatch); a longer chunk is refused by the
//    attention kernel with an error, never silently truncated.
// Global layers (w == 0) allocate blocks of chunk_slots slots as positions arrive, up to
// context_limit; truncation frees the blocks past the new end.
// Storage layout per block: K then V, each [n_kv_heads][block_slots][head_dim].
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/cpu/attention.h"
#include "model/kv_slots.h"

namespace squeeze::model {

using kernels::cpu::KvLayerView;
using kernels::cpu::KvType;

struct KvCacheConfig {
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  std::vector<int64_t> layer_windows;  // one per layer: 0 = global, > 0 = sliding window
  int64_t context_limit = 0;           // positions [0, context_limit) may be written
  int64_t headroom = 512;              // ring slots beyond the window (rollback depth, prefill chunk)
  int64_t chunk_slots = kGlobalChunkSlots;  // growth step of global layers
  KvType type = KvType::F16;

  void validate() const;  // throws squeeze::Error naming the bad field
  int64_t n_layers() const { return static_cast<int64_t>(layer_windows.size()); }
  // Slots of one layer's storage when full (ring size, or context_limit rounded up to
  // chunks): kv_layer_slots(), the rule the memory planner uses too.
  int64_t slots_at_limit(int64_t layer) const;
  // Bytes of K + V for one position of one layer (all KV heads).
  size_t bytes_per_slot() const;
  // Bytes the whole cache holds once every layer has reached context_limit.
  size_t bytes_at_limit() const;
};

// K and V rows of consecutive positions for one layer, as the projections produce them.
struct KvRows {
  const float* k = nullptr;  // [n, n_kv_heads, head_dim]
  const float* v = nullptr;  // [n, n_kv_heads, head_dim]
  int64_t n = 0;
  int64_t stride = 0;        // floats between positions; 0 means n_kv_heads * head_dim
};

// Re-rotates one K row (head_dim floats, in place) whose position changes from old_pos to
// new_pos, e.g. RoPE by (new_pos - old_pos) with the layer's own base. Called per KV head.
using KeyShift = std::function<void(int64_t layer, float* k_row, int64_t old_pos, int64_t new_pos)>;

struct KvMemory {
  size_t bytes_held = 0;      // exactly the K/V storage allocated now
  size_t bytes_at_limit = 0;  // what it will hold at context_limit
  int64_t slots_held = 0;     // Σ over layers of allocated slots
  int64_t positions = 0;      // the sequence length (size())
};

// What the local layers' rings hold of the window before one position: enough to come
// back to that position (KvCache::restore_rings) after the rings have moved past it, while
// the global layers, which keep every position, are simply truncated. A context edit at a
// position with a snapshot then recomputes from the edit, not from 0.
struct KvRingSnapshot {
  int64_t position = -1;                   // -1: empty
  std::vector<std::vector<std::byte>> rows;  // per layer (empty for global ones): per position, per head, K then V
  size_t bytes() const;
};

class KvCache {
 public:
  explicit KvCache(KvCacheConfig config);

  const KvCacheConfig& config() const { return config_; }
  int64_t n_layers() const { return config_.n_layers(); }
  bool is_local(int64_t layer) const { return layer_at(layer).window > 0; }

  // The sequence length: positions appended to every layer (layers agree between steps).
  int64_t size() const;
  int64_t end(int64_t layer) const { return layer_at(layer).end; }
  int64_t begin(int64_t layer) const { return layer_at(layer).begin; }
  // Largest chunk that may be appended to every layer and then attended exactly.
  int64_t max_chunk() const;
  // Lowest position above 0 that truncate() accepts now (0, a reset, is always accepted).
  int64_t min_truncate_position() const;

  // Appends positions [end(layer), end(layer) + rows.n), converting to the storage type.
  // Throws past context_limit.
  void append(int64_t layer, const KvRows& rows);
  // The layer as the attention kernel reads it; valid until the next append/truncate/clear.
  KvLayerView view(int64_t layer) const;

  // Drops positions >= pos from every layer. Throws (changing nothing) when pos is beyond
  // a layer's end or a local layer's ring no longer holds the window before pos.
  void truncate(int64_t pos);
  void clear() { truncate_unchecked(0, true); }
  // Makes this cache what `src` would be after truncate(pos), leaving `src` as it is (a
  // request sharing a running one's prompt starts from its K/V). The configs must be equal;
  // throws, changing nothing, where src.truncate(pos) would.
  void copy_prefix_from(const KvCache& src, int64_t pos);

  // The rings' window before size() (see KvRingSnapshot).
  KvRingSnapshot snapshot_rings() const;
  // Truncates to snap.position and writes the snapshot's window back into the rings: the
  // state truncate(snap.position) would give had it been called while the rings still held
  // it. Throws, changing nothing, when snap.position > size() or the snapshot is not of this
  // cache's shape.
  void restore_rings(const KvRingSnapshot& snap);

  // Removes positions [p0, p1) from every layer (a context edit); positions >= p1 become
  // p0, p0 + 1, … and their K rows are passed through `shift` when given (for f16 / bf16 storage
  // a row is widened to f32, shifted and rounded back). Throws, changing nothing, when a
  // local layer's ring no longer holds the window the next position needs. Note that the
  // kept K/V were computed with the removed tokens in context: this is the approximate
  // edit (llama.cpp seq_rm + seq_add), not a re-prefill.
  void erase(int64_t p0, int64_t p1, const KeyShift& shift = nullptr);

  KvMemory memory() const;

 private:
  struct Layer {
    int64_t window = 0;
    int64_t ring = 0;         // > 0 for local layers: slots in the ring
    int64_t block_slots = 0;
    std::vector<AlignedBuffer> blocks;
    std::vector<const std::byte*> block_ptrs;  // what view() hands out
    int64_t begin = 0, end = 0;
  };
  const Layer& layer_at(int64_t layer) const;
  size_t block_bytes(const Layer& l) const;
  void add_block(Layer& l);
  void truncate_unchecked(int64_t pos, bool reset_begin);
  void erase_layer(int64_t layer, int64_t p0, int64_t p1, const KeyShift& shift);

  KvCacheConfig config_;
  std::vector<Layer> layers_;
};

}  // namespace squeeze::model
