// model/kv_cache.cpp — see kv_cache.h.
#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "kernels/cpu/ops.h"

namespace squeeze::model {

using kernels::cpu::kv_row_bytes;

void KvCacheConfig::validate() const {
  SQZ_CHECK(n_kv_heads > 0, "KV cache: n_kv_heads must be positive, got ", n_kv_heads);
  SQZ_CHECK(head_dim > 0, "KV cache: head_dim must be positive, got ", head_dim);
  SQZ_CHECK(!layer_windows.empty(), "KV cache: no layers");
  SQZ_CHECK(context_limit > 0, "KV cache: context_limit must be positive, got ", context_limit);
  SQZ_CHECK(headroom >= 0, "KV cache: negative headroom ", headroom);
  SQZ_CHECK(chunk_slots > 0, "KV cache: chunk_slots must be positive, got ", chunk_slots);
  SQZ_CHECK(type == KvType::F32 || type == KvType::F16 || type == KvType::BF16 || type == KvType::Q8_0,
            "KV cache: unsupported type");
  SQZ_CHECK(kernels::cpu::kv_type_fits(type, head_dim), "KV cache: ", kernels::cpu::kv_type_name(type),
            " needs head_dim % 32 == 0, this model's is ", head_dim, " (use --kv f16)");
  for (size_t i = 0; i < layer_windows.size(); ++i)
    SQZ_CHECK(layer_windows[i] >= 0, "KV cache: layer ", i, " has negative window ", layer_windows[i]);
  // Guard the byte arithmetic: a layer at the limit must fit in size_t comfortably.
  const double bytes = 2.0 * n_kv_heads * static_cast<double>(kv_row_bytes(type, head_dim)) *
                       static_cast<double>(context_limit + chunk_slots);
  SQZ_CHECK(bytes < 1e15, "KV cache: ", bytes, " bytes per layer is beyond any machine");
}

int64_t KvCacheConfig::slots_at_limit(int64_t layer) const {
  return kv_layer_slots(layer_windows.at(static_cast<size_t>(layer)), context_limit, headroom, chunk_slots);
}

size_t KvCacheConfig::bytes_per_slot() const {
  return 2 * static_cast<size_t>(n_kv_heads) * kv_row_bytes(type, head_dim);
}

size_t KvCacheConfig::bytes_at_limit() const {
  size_t total = 0;
  for (int64_t l = 0; l < n_layers(); ++l) total += static_cast<size_t>(slots_at_limit(l)) * bytes_per_slot();
  return total;
}

KvCache::KvCache(KvCacheConfig config) : config_(std::move(config)) {
  config_.validate();
  layers_.resize(static_cast<size_t>(config_.n_layers()));
  for (int64_t i = 0; i < config_.n_layers(); ++i) {
    Layer& l = layers_[static_cast<size_t>(i)];
    l.window = config_.layer_windows[static_cast<size_t>(i)];
    if (l.window > 0) {
      // The ring is allocated whole: its size never changes.
      l.ring = config_.slots_at_limit(i);
      l.block_slots = l.ring;
      add_block(l);
    } else {
      l.block_slots = config_.chunk_slots;
    }
  }
}

const KvCache::Layer& KvCache::layer_at(int64_t layer) const {
  SQZ_CHECK(layer >= 0 && layer < n_layers(), "KV cache: layer ", layer, " out of range [0, ", n_layers(), ")");
  return layers_[static_cast<size_t>(layer)];
}

size_t KvCache::block_bytes(const Layer& l) const {
  return static_cast<size_t>(l.block_slots) * config_.bytes_per_slot();
}

void KvCache::add_block(Layer& l) {
  l.blocks.emplace_back(block_bytes(l));
  l.block_ptrs.push_back(static_cast<const std::byte*>(l.blocks.back().data()));
}

int64_t KvCache::size() const {
  int64_t n = std::numeric_limits<int64_t>::max();
  for (const Layer& l : layers_) n = std::min(n, l.end);
  return n;
}

int64_t KvCache::max_chunk() const {
  int64_t n = config_.context_limit;
  for (const Layer& l : layers_)
    if (l.ring > 0 && l.ring < config_.context_limit) n = std::min(n, l.ring - l.window + 1);
  return n;
}

int64_t KvCache::min_truncate_position() const {
  int64_t lowest = 0;
  for (const Layer& l : layers_) {
    if (l.begin == 0) continue;
    // The next query at t needs keys [t - window + 1, t): all must be >= begin.
    lowest = std::max(lowest, l.window > 0 ? l.begin + l.window - 1 : l.begin);
  }
  return lowest;
}

void KvCache::append(int64_t layer, const KvRows& rows) {
  layer_at(layer);
  Layer& l = layers_[static_cast<size_t>(layer)];
  const int64_t H = config_.n_kv_heads, D = config_.head_dim;
  const int64_t stride = rows.stride ? rows.stride : H * D;
  SQZ_CHECK(rows.n >= 0, "KV cache: negative row count");
  if (rows.n == 0) return;
  SQZ_CHECK(rows.k != nullptr && rows.v != nullptr, "KV cache: null K or V rows");
  SQZ_CHECK(stride >= H * D, "KV cache: row stride ", stride, " shorter than n_kv_heads * head_dim = ", H * D);
  SQZ_CHECK(rows.n <= config_.context_limit - l.end, "KV cache: appending ", rows.n, " positions at ", l.end,
            " overflows the context limit of ", config_.context_limit);
  const int64_t new_end = l.end + rows.n;
  if (l.ring == 0)
    while (static_cast<int64_t>(l.blocks.size()) * l.block_slots < new_end) add_block(l);

  const KvLayerView v = view(layer);
  for (int64_t i = 0; i < rows.n; ++i) {
    const int64_t pos = l.end + i;
    for (int64_t h = 0; h < H; ++h) {
      const KvLayerView::Run run = v.run(h, pos, 1);
      auto* dk = const_cast<std::byte*>(run.k);  // the cache owns this storage
      auto* dv = const_cast<std::byte*>(run.v);
      const float* sk = rows.k + i * stride + h * D;
      const float* sv = rows.v + i * stride + h * D;
      kernels::cpu::kv_encode_row(config_.type, sk, dk, D);
      kernels::cpu::kv_encode_row(config_.type, sv, dv, D);
    }
  }
  l.end = new_end;
  if (l.ring > 0) l.begin = std::max(l.begin, l.end - l.ring);
}

KvLayerView KvCache::view(int64_t layer) const {
  const Layer& l = layer_at(layer);
  KvLayerView v;
  v.type = config_.type;
  v.n_kv_heads = config_.n_kv_heads;
  v.head_dim = config_.head_dim;
  v.block_slots = l.block_slots;
  v.ring_slots = l.ring;
  v.blocks = std::span<const std::byte* const>(l.block_ptrs.data(), l.block_ptrs.size());
  v.v_offset = static_cast<size_t>(config_.n_kv_heads) * v.head_bytes();
  v.pos_begin = l.begin;
  v.pos_end = l.end;
  return v;
}

void KvCache::truncate(int64_t pos) {
  SQZ_CHECK(pos >= 0, "KV cache: cannot truncate to negative position ", pos);
  for (int64_t i = 0; i < n_layers(); ++i) {
    const Layer& l = layers_[static_cast<size_t>(i)];
    SQZ_CHECK(pos <= l.end, "KV cache: cannot truncate layer ", i, " to ", pos, ", beyond its end ", l.end);
    // The next query, at pos, needs keys [needed, pos) (an empty range needs nothing).
    const int64_t needed = l.window > 0 ? std::max<int64_t>(0, pos - l.window + 1) : 0;
    SQZ_CHECK(needed >= pos || l.begin <= needed, "KV cache: cannot truncate to ", pos, ": layer ", i,
              (l.window > 0 ? " (local)" : ""), " no longer holds positions before ", l.begin,
              " (rollback beyond the ring's headroom of ", config_.headroom, ")");
  }
  truncate_unchecked(pos, false);
}

void KvCache::copy_prefix_from(const KvCache& src, int64_t pos) {
  SQZ_CHECK(&src != this, "KV cache: copying a cache onto itself");
  SQZ_CHECK(src.n_layers() == n_layers() && src.config_.type == config_.type && src.config_.n_kv_heads == config_.n_kv_heads &&
                src.config_.head_dim == config_.head_dim && src.config_.layer_windows == config_.layer_windows &&
                src.config_.context_limit == config_.context_limit && src.config_.headroom == config_.headroom &&
                src.config_.chunk_slots == config_.chunk_slots,
            "KV cache: copying between caches of different shapes");
  SQZ_CHECK(pos >= 0, "KV cache: cannot copy a negative prefix ", pos);
  for (int64_t i = 0; i < n_layers(); ++i) {  // the checks of src.truncate(pos)
    const Layer& l = src.layers_[static_cast<size_t>(i)];
    SQZ_CHECK(pos <= l.end, "KV cache: cannot copy ", pos, " positions of layer ", i, ", which holds ", l.end);
    const int64_t needed = l.window > 0 ? std::max<int64_t>(0, pos - l.window + 1) : 0;
    SQZ_CHECK(needed >= pos || l.begin <= needed, "KV cache: cannot copy ", pos, " positions: layer ", i,
              " no longer holds positions before ", l.begin);
  }
  truncate_unchecked(0, true);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& from = src.layers_[i];
    Layer& to = layers_[i];
    if (to.ring > 0) {  // the ring whole: position p lives in slot p % ring in both
      std::memcpy(to.blocks[0].data(), from.blocks[0].data(), block_bytes(to));
      to.begin = std::min(from.begin, pos);
    } else {
      const auto blocks = static_cast<size_t>((pos + to.block_slots - 1) / to.block_slots);
      while (to.blocks.size() < blocks) add_block(to);
      for (size_t b = 0; b < blocks; ++b) std::memcpy(to.blocks[b].data(), from.blocks[b].data(), block_bytes(to));
      to.begin = 0;
    }
    to.end = pos;
  }
}

void KvCache::truncate_unchecked(int64_t pos, bool reset_begin) {
  for (Layer& l : layers_) {
    l.end = std::min(l.end, pos);
    l.begin = reset_begin ? 0 : std::min(l.begin, l.end);
    if (l.ring == 0) {
      const size_t keep = static_cast<size_t>((l.end + l.block_slots - 1) / l.block_slots);
      if (l.blocks.size() > keep) {
        l.blocks.resize(keep);
        l.block_ptrs.resize(keep);
      }
    }
  }
}

void KvCache::erase(int64_t p0, int64_t p1, const KeyShift& shift) {
  SQZ_CHECK(0 <= p0 && p0 <= p1 && p1 <= size(), "KV cache: cannot erase [", p0, ", ", p1, ") from ", size(),
            " positions");
  if (p0 == p1) return;
  const int64_t d = p1 - p0;
  for (int64_t i = 0; i < n_layers(); ++i) {
    const Layer& l = layers_[static_cast<size_t>(i)];
    SQZ_CHECK(l.end == size(), "KV cache: erase while layer ", i, " is mid-step");
    // After the edit the next query sits at end - d and needs [end - d - window + 1, end - d);
    // those below p0 keep their positions and must still be held.
    const int64_t needed = l.window > 0 ? std::max<int64_t>(0, l.end - d - l.window + 1) : 0;
    SQZ_CHECK(l.begin <= std::min(needed, p0), "KV cache: cannot erase [", p0, ", ", p1, "): layer ", i,
              " (local) no longer holds positions before ", l.begin);
  }
  for (int64_t i = 0; i < n_layers(); ++i) erase_layer(i, p0, p1, shift);
  truncate_unchecked(size(), false);  // frees global blocks past the new end
}

void KvCache::erase_layer(int64_t layer, int64_t p0, int64_t p1, const KeyShift& shift) {
  Layer& l = layers_[static_cast<size_t>(layer)];
  const int64_t d = p1 - p0, H = config_.n_kv_heads, D = config_.head_dim;
  const KvLayerView v = view(layer);
  const size_t row = v.row_bytes();
  // Rows of positions [p1, end) in order, K then V per (position, head). A ring is copied
  // out first (its destination slots may still hold sources); a global layer moves rows
  // down in place, which is safe in ascending order because slot = position.
  const int64_t moved = l.end - p1;
  std::vector<std::byte> staged(l.ring > 0 ? static_cast<size_t>(moved * H) * 2 * row : 0);
  auto slot_ptr = [&](int64_t h, int64_t pos, bool values) {
    const KvLayerView::Run r = v.run(h, pos, 1);
    return const_cast<std::byte*>(values ? r.v : r.k);  // the cache owns this storage
  };
  if (l.ring > 0)
    for (int64_t p = p1; p < l.end; ++p)
      for (int64_t h = 0; h < H; ++h) {
        std::byte* dst = staged.data() + static_cast<size_t>((p - p1) * H + h) * 2 * row;
        std::memcpy(dst, slot_ptr(h, p, false), row);
        std::memcpy(dst + row, slot_ptr(h, p, true), row);
      }
  std::vector<float> widened(shift ? static_cast<size_t>(D) : 0);
  for (int64_t p = p1; p < l.end; ++p)
    for (int64_t h = 0; h < H; ++h) {
      std::byte* k = slot_ptr(h, p - d, false);
      std::byte* vv = slot_ptr(h, p - d, true);
      if (l.ring > 0) {
        const std::byte* src = staged.data() + static_cast<size_t>((p - p1) * H + h) * 2 * row;
        std::memcpy(k, src, row);
        std::memcpy(vv, src + row, row);
      } else {
        std::memmove(k, slot_ptr(h, p, false), row);
        std::memmove(vv, slot_ptr(h, p, true), row);
      }
      if (shift) {
        if (config_.type == KvType::F32) {
          shift(layer, reinterpret_cast<float*>(k), p, p - d);
        } else {
          kernels::cpu::kv_decode_row(config_.type, k, widened.data(), D);
          shift(layer, widened.data(), p, p - d);
          kernels::cpu::kv_encode_row(config_.type, widened.data(), k, D);
        }
      }
    }
  l.end -= d;  // begin <= p0 (checked by erase), so it keeps its position
}

KvMemory KvCache::memory() const {
  KvMemory m;
  for (const Layer& l : layers_) {
    for (const AlignedBuffer& b : l.blocks) m.bytes_held += b.size();
    m.slots_held += static_cast<int64_t>(l.blocks.size()) * l.block_slots;
  }
  m.bytes_at_limit = config_.bytes_at_limit();
  m.positions = size();
  return m;
}

size_t KvRingSnapshot::bytes() const {
  size_t total = 0;
  for (const auto& r : rows) total += r.size();
  return total;
}

namespace {
// The positions a query at `pos` reads from a local layer of window w: [pos − w + 1, pos).
int64_t window_start(int64_t window, int64_t pos) { return std::max<int64_t>(0, pos - window + 1); }
}  // namespace

KvRingSnapshot KvCache::snapshot_rings() const {
  KvRingSnapshot snap;
  snap.position = size();
  snap.rows.resize(layers_.size());
  for (int64_t i = 0; i < n_layers(); ++i) {
    const Layer& l = layers_[static_cast<size_t>(i)];
    if (l.window == 0) continue;
    SQZ_CHECK(l.end == snap.position, "KV cache: ring snapshot while layer ", i, " is mid-step");
    const int64_t first = window_start(l.window, snap.position);
    SQZ_CHECK(l.begin <= first, "KV cache: layer ", i, " no longer holds the window before ", snap.position);
    const KvLayerView v = view(i);
    const size_t row = v.row_bytes();
    auto& out = snap.rows[static_cast<size_t>(i)];
    out.resize(static_cast<size_t>(snap.position - first) * static_cast<size_t>(config_.n_kv_heads) * 2 * row);
    std::byte* dst = out.data();
    for (int64_t p = first; p < snap.position; ++p)
      for (int64_t h = 0; h < config_.n_kv_heads; ++h) {
        const KvLayerView::Run run = v.run(h, p, 1);
        dst = std::copy_n(run.k, row, dst);
        dst = std::copy_n(run.v, row, dst);
      }
  }
  return snap;
}

void KvCache::restore_rings(const KvRingSnapshot& snap) {
  const int64_t pos = snap.position;
  SQZ_CHECK(pos >= 0 && pos <= size(), "KV cache: a ring snapshot at ", pos, " cannot be restored into ", size(),
            " positions");
  SQZ_CHECK(snap.rows.size() == layers_.size(), "KV cache: a ring snapshot of ", snap.rows.size(),
            " layers for a cache of ", layers_.size());
  for (int64_t i = 0; i < n_layers(); ++i) {
    const Layer& l = layers_[static_cast<size_t>(i)];
    const size_t want = l.window == 0 ? 0
                                      : static_cast<size_t>(pos - window_start(l.window, pos)) *
                                            static_cast<size_t>(config_.n_kv_heads) * 2 * view(i).row_bytes();
    SQZ_CHECK(snap.rows[static_cast<size_t>(i)].size() == want, "KV cache: a ring snapshot whose layer ", i,
              " does not match this cache");
  }
  truncate_unchecked(pos, false);
  for (int64_t i = 0; i < n_layers(); ++i) {
    Layer& l = layers_[static_cast<size_t>(i)];
    if (l.window == 0) continue;
    const int64_t first = window_start(l.window, pos);
    l.begin = first;  // the slots of [first, pos) are rewritten below; the ring holds them all
    const KvLayerView v = view(i);
    const size_t row = v.row_bytes();
    const std::byte* src = snap.rows[static_cast<size_t>(i)].data();
    for (int64_t p = first; p < pos; ++p)
      for (int64_t h = 0; h < config_.n_kv_heads; ++h) {
        const KvLayerView::Run run = v.run(h, p, 1);
        std::copy_n(src, row, const_cast<std::byte*>(run.k));  // the cache owns this storage
        std::copy_n(src + row, row, const_cast<std::byte*>(run.v));
        src += 2 * row;
      }
  }
}

}  // namespace squeeze::model
