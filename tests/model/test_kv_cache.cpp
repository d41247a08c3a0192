// tests/model/test_kv_cache.cpp — the KV cache: exact memory accounting, storage round
// trips through the view (ring wrap included), overflow and rollback errors, chunked
// prefill through the ring against a full-sequence float64 reference, and truncate +
// re-decode reproducing the original outputs. Fresh random data every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/attention.h"
#include "model/kv_cache.h"

namespace squeeze::model {
namespace {

using kernels::cpu::AttentionParams;
using kernels::cpu::attention;
using kernels::cpu::attention_reference;

std::mt19937& rng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

std::vector<float> random_vector(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng());
  return v;
}

float load(KvType type, const std::byte* row, int64_t d) {
  if (type == KvType::F32) return reinterpret_cast<const float*>(row)[d];
  return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
}
float stored(KvType type, float x) { return type == KvType::F32 ? x : f16_to_f32(f32_to_f16(x)); }

KvCacheConfig hybrid_config(KvType type = KvType::F16) {
  // Layers 0-2 local (window 24, ring 24 + 15 = 39 slots), layer 3 global in chunks of 32.
  return {.n_kv_heads = 2, .head_dim = 64, .layer_windows = {24, 24, 24, 0}, .context_limit = 300, .headroom = 15,
          .chunk_slots = 32, .type = type};
}

TEST(KvCache, ValidatesConfig) {
  auto bad = [](auto mutate) {
    KvCacheConfig c = hybrid_config();
    mutate(c);
    EXPECT_THROW(KvCache{c}, Error);
  };
  bad([](KvCacheConfig& c) { c.n_kv_heads = 0; });
  bad([](KvCacheConfig& c) { c.head_dim = -1; });
  bad([](KvCacheConfig& c) { c.layer_windows.clear(); });
  bad([](KvCacheConfig& c) { c.layer_windows[1] = -3; });
  bad([](KvCacheConfig& c) { c.context_limit = 0; });
  bad([](KvCacheConfig& c) { c.headroom = -1; });
  bad([](KvCacheConfig& c) { c.chunk_slots = 0; });
  bad([](KvCacheConfig& c) { c.context_limit = int64_t{1} << 60; });
  EXPECT_NO_THROW(KvCache{hybrid_config()});
}

TEST(KvCache, ReportsExactBytes) {
  KvCache cache(hybrid_config());
  const size_t slot = 2 * 2 * 64 * 2;  // K + V, 2 heads of 64 f16
  EXPECT_EQ(cache.config().bytes_per_slot(), slot);
  // Rings are allocated whole; the global layer holds nothing yet.
  EXPECT_EQ(cache.memory().bytes_held, 3 * 39 * slot);
  EXPECT_EQ(cache.memory().bytes_at_limit, 3 * 39 * slot + 320 * slot);  // 300 rounded up to chunks of 32
  const auto k = random_vector(40 * 128), v = random_vector(40 * 128);
  for (int64_t l = 0; l < 4; ++l) cache.append(l, {.k = k.data(), .v = v.data(), .n = 1});
  EXPECT_EQ(cache.memory().bytes_held, (3 * 39 + 32) * slot);
  for (int64_t l = 0; l < 4; ++l) cache.append(l, {.k = k.data(), .v = v.data(), .n = 32});
  EXPECT_EQ(cache.memory().bytes_held, (3 * 39 + 64) * slot);  // 33 positions: two chunks
  EXPECT_EQ(cache.memory().positions, 33);
  cache.truncate(30);
  EXPECT_EQ(cache.memory().bytes_held, (3 * 39 + 32) * slot);  // the second chunk is freed
  cache.clear();
  EXPECT_EQ(cache.memory().bytes_held, 3 * 39 * slot);
  EXPECT_EQ(cache.size(), 0);
}

// Every held position reads back (through the view, as the kernel reads it) what was
// appended, rounded to the storage type; the ring holds exactly the last ring positions.
TEST(KvCache, RoundTripsThroughTheViewAcrossRingWrap) {
  for (KvType type : {KvType::F32, KvType::F16}) {
    KvCache cache(hybrid_config(type));
    const int64_t n = 200, row = 2 * 64, stride = row + 3;
    const auto k = random_vector(static_cast<size_t>(n * stride)), v = random_vector(static_cast<size_t>(n * stride));
    for (int64_t l = 0; l < 4; ++l)
      for (int64_t p = 0; p < n;) {  // uneven chunk sizes
        const int64_t c = std::min<int64_t>(1 + p % 13, n - p);
        cache.append(l, {.k = k.data() + p * stride, .v = v.data() + p * stride, .n = c, .stride = stride});
        p += c;
      }
    for (int64_t l = 0; l < 4; ++l) {
      const KvLayerView view = cache.view(l);
      EXPECT_EQ(view.pos_end, n);
      EXPECT_EQ(view.pos_begin, l < 3 ? n - 39 : 0);
      for (int64_t p = view.pos_begin; p < n; ++p)
        for (int64_t h = 0; h < 2; ++h) {
          const KvLayerView::Run run = view.run(h, p, 1);
          for (int64_t d = 0; d < 64; ++d) {
            ASSERT_EQ(load(type, run.k, d), stored(type, k[static_cast<size_t>(p * stride + h * 64 + d)]));
            ASSERT_EQ(load(type, run.v, d), stored(type, v[static_cast<size_t>(p * stride + h * 64 + d)]));
          }
        }
    }
  }
}

// A copied prefix equals the source truncated there, before and after both take the same
// new rows; the source is left as it was; a prefix the rings no longer hold is refused.
TEST(KvCache, CopiedPrefixEqualsTheTruncatedSource) {
  for (KvType type : {KvType::F32, KvType::F16}) {
    KvCache src(hybrid_config(type)), twin(hybrid_config(type)), copy(hybrid_config(type));
    const int64_t n = 200, row = 2 * 64, extra = 20;
    const auto k = random_vector(static_cast<size_t>((n + extra) * row)), v = random_vector(static_cast<size_t>((n + extra) * row));
    const auto k2 = random_vector(static_cast<size_t>(extra * row)), v2 = random_vector(static_cast<size_t>(extra * row));
    for (KvCache* c : {&src, &twin, &copy})
      for (int64_t l = 0; l < 4; ++l) c->append(l, {.k = k.data(), .v = v.data(), .n = c == &copy ? 7 : n});
    const int64_t pos = 190;  // rings of 39 slots still hold the window of 24 before it
    copy.copy_prefix_from(src, pos);
    EXPECT_EQ(src.size(), n);
    twin.truncate(pos);
    for (KvCache* c : {&twin, &copy})
      for (int64_t l = 0; l < 4; ++l) c->append(l, {.k = k2.data(), .v = v2.data(), .n = extra});
    for (int64_t l = 0; l < 4; ++l) {
      const KvLayerView a = twin.view(l), b = copy.view(l);
      ASSERT_EQ(a.pos_begin, b.pos_begin);
      ASSERT_EQ(a.pos_end, b.pos_end);
      for (int64_t p = std::max(a.pos_begin, pos + extra - 24); p < a.pos_end; ++p)
        for (int64_t h = 0; h < 2; ++h)
          ASSERT_EQ(std::memcmp(a.run(h, p, 1).k, b.run(h, p, 1).k, kernels::cpu::kv_row_bytes(type, 64)), 0) << l << " " << p;
      if (l == 3) {  // the global layer keeps every position
        for (int64_t p = 0; p < a.pos_end; ++p)
          ASSERT_EQ(std::memcmp(a.run(1, p, 1).v, b.run(1, p, 1).v, kernels::cpu::kv_row_bytes(type, 64)), 0) << p;
      }
    }
    KvCache other(hybrid_config(type));
    EXPECT_THROW(other.copy_prefix_from(src, 100), Error);  // the rings moved past it
    EXPECT_THROW(other.copy_prefix_from(src, n + 1), Error);
    EXPECT_THROW(copy.copy_prefix_from(copy, 10), Error);
  }
}

TEST(KvCache, OverflowAndRollbackErrors) {
  KvCache cache(hybrid_config());
  const auto k = random_vector(400 * 128), v = random_vector(400 * 128);
  EXPECT_THROW(cache.append(0, {.k = k.data(), .v = v.data(), .n = 301}), Error);
  EXPECT_THROW(cache.append(4, {.k = k.data(), .v = v.data(), .n = 1}), Error);
  EXPECT_THROW(cache.append(0, {.k = nullptr, .v = v.data(), .n = 1}), Error);
  EXPECT_THROW(cache.append(0, {.k = k.data(), .v = v.data(), .n = 1, .stride = 5}), Error);
  for (int64_t l = 0; l < 4; ++l) cache.append(l, {.k = k.data(), .v = v.data(), .n = 300});
  EXPECT_THROW(cache.append(3, {.k = k.data(), .v = v.data(), .n = 1}), Error);  // at the limit
  EXPECT_EQ(cache.max_chunk(), 16);
  // The rings hold [261, 300): the next query at t needs [t - 23, t), so t >= 284.
  EXPECT_EQ(cache.min_truncate_position(), 284);
  EXPECT_THROW(cache.truncate(301), Error);
  EXPECT_THROW(cache.truncate(283), Error);
  EXPECT_EQ(cache.size(), 300);  // a refused truncation changes nothing
  cache.truncate(284);
  EXPECT_EQ(cache.size(), 284);
  cache.truncate(0);  // a full reset is always possible
  EXPECT_EQ(cache.size(), 0);
  EXPECT_NO_THROW(cache.append(0, {.k = k.data(), .v = v.data(), .n = 16}));
}

// One sequence of random per-layer K/V and queries for the attention tests below.
struct Sequence {
  int64_t n, H, Hkv, D;
  std::vector<std::vector<float>> k, v;  // [layer][n * Hkv * D]
  std::vector<std::vector<float>> q;     // [layer][n * H * D]
  Sequence(int64_t n_pos, int64_t layers, int64_t heads, int64_t kv_heads, int64_t dim)
      : n(n_pos), H(heads), Hkv(kv_heads), D(dim) {
    for (int64_t l = 0; l < layers; ++l) {
      k.push_back(random_vector(static_cast<size_t>(n * Hkv * D)));
      v.push_back(random_vector(static_cast<size_t>(n * Hkv * D)));
      q.push_back(random_vector(static_cast<size_t>(n * H * D), -2.0f, 2.0f));
    }
  }
  // Appends positions [p0, p0 + c) to every layer and attends them; outputs into out[layer].
  void step(ThreadPool& pool, KvCache& cache, int64_t p0, int64_t c, std::vector<std::vector<float>>& out) const {
    for (int64_t l = 0; l < cache.n_layers(); ++l) {
      const size_t kvo = static_cast<size_t>(p0 * Hkv * D), qo = static_cast<size_t>(p0 * H * D);
      cache.append(l, {.k = k[l].data() + kvo, .v = v[l].data() + kvo, .n = c});
      const AttentionParams params{.n_heads = H, .n_kv_heads = Hkv, .head_dim = D,
                                   .window = cache.config().layer_windows[static_cast<size_t>(l)]};
      attention(pool, params, cache.view(l),
                {.q = q[l].data() + qo, .out = out[l].data() + qo, .n_queries = c, .pos0 = p0});
    }
  }
};

// Prefill in chunks (up to max_chunk, through ring wrap-around) then decode, against one
// float64 pass over the whole sequence with a cache whose rings never wrap.
TEST(KvCache, ChunkedPrefillThroughTheRingMatchesFullSequence) {
  const int64_t n = 180, H = 8, Hkv = 2, D = 64;
  const Sequence seq(n, 4, H, Hkv, D);
  KvCacheConfig cfg = hybrid_config();
  KvCache cache(cfg);
  cfg.headroom = 1000;  // rings of min(1024, 300) slots: never wrap
  KvCache full(cfg);
  ThreadPool pool(2);

  std::vector<std::vector<float>> got(4, std::vector<float>(static_cast<size_t>(n * H * D), NAN)), want = got;
  int64_t p = 0;
  for (int64_t c : {16, 1, 16, 16, 7, 16, 16, 16, 3, 16, 16})  // 139 positions of prefill chunks
    seq.step(pool, cache, p, c, got), p += c;
  while (p < n) seq.step(pool, cache, p, 1, got), ++p;  // then decode

  for (int64_t l = 0; l < 4; ++l) {
    const size_t o = 0;
    full.append(l, {.k = seq.k[l].data() + o, .v = seq.v[l].data() + o, .n = n});
    const AttentionParams params{.n_heads = H, .n_kv_heads = Hkv, .head_dim = D,
                                 .window = cfg.layer_windows[static_cast<size_t>(l)]};
    attention_reference(params, full.view(l), {.q = seq.q[l].data(), .out = want[l].data(), .n_queries = n, .pos0 = 0});
  }
  // The kernel's error bound against float64 (tests/kernels/test_attention.cpp,
  // kernel_bound): vmax u (2 (D + 2) A + 3 n_keys + 24), here with |q| <= 2, |k|, |v| <= 1
  // (f16 rounding is applied to both sides alike), so A <= 2 D / sqrt(D), n_keys <= n.
  const double A = 2.0 * D / std::sqrt(static_cast<double>(D));
  const double bound = 5.96e-8 * (2.0 * (D + 2) * A + 3.0 * n + 24.0);
  for (int64_t l = 0; l < 4; ++l)
    for (size_t e = 0; e < got[l].size(); ++e)
      ASSERT_NEAR(got[l][e], want[l][e], bound) << "layer " << l << " element " << e;
}

TEST(KvCache, ChunkLongerThanHeadroomIsRefused) {
  const Sequence seq(60, 4, 8, 2, 64);
  KvCache cache(hybrid_config());
  ThreadPool pool(2);
  std::vector<std::vector<float>> out(4, std::vector<float>(60 * 8 * 64));
  seq.step(pool, cache, 0, 30, out);  // the ring (39 slots) has not wrapped yet: fine
  EXPECT_THROW(seq.step(pool, cache, 30, 17, out), Error);  // 17 > max_chunk 16 after wrap
}

// Decode to beyond the ring, roll back within the headroom, re-decode the same tokens:
// the outputs are reproduced exactly (same kernel, same data, same thread count).
TEST(KvCache, TruncateThenRedecodeReproducesOutputs) {
  const int64_t n = 120, H = 8, Hkv = 2, D = 64;
  const Sequence seq(n, 4, H, Hkv, D);
  KvCache cache(hybrid_config());
  ThreadPool pool(2);
  std::vector<std::vector<float>> first(4, std::vector<float>(static_cast<size_t>(n * H * D))), again = first;
  int64_t p = 0;
  for (; p + 10 <= n - 16; p += 10) seq.step(pool, cache, p, 10, first);
  seq.step(pool, cache, p, n - 16 - p, first);
  for (p = n - 16; p < n; ++p) seq.step(pool, cache, p, 1, first);
  // Roll back 16 positions (the most the headroom allows), 3 times with other tokens in
  // between, as a speculative decoder would.
  for (int round = 0; round < 3; ++round) {
    cache.truncate(n - 16);
    const Sequence junk(n, 4, H, Hkv, D);
    std::vector<std::vector<float>> scratch(4, std::vector<float>(static_cast<size_t>(n * H * D)));
    junk.step(pool, cache, n - 16, 9, scratch);  // rejected draft tokens overwrite ring slots
    cache.truncate(n - 16);
  }
  for (p = n - 16; p < n; ++p) seq.step(pool, cache, p, 1, again);
  for (int64_t l = 0; l < 4; ++l)
    for (size_t e = static_cast<size_t>((n - 16) * H * D); e < again[l].size(); ++e)
      ASSERT_EQ(again[l][e], first[l][e]) << "layer " << l << " element " << e;  // deterministic kernel
}

}  // namespace
}  // namespace squeeze::model

namespace squeeze::model {
namespace {

// erase(p0, p1) against a cache built directly from the edited sequence: the same rows
// (shifted by the callback) at the same positions, and the same attention output after.
TEST(KvCache, EraseRangeMatchesTheEditedSequence) {
  const int64_t n = 60, p0 = 50, p1 = 55, d = p1 - p0, HD = 2 * 64;
  const auto k = random_vector(static_cast<size_t>((n + 1) * HD)), v = random_vector(static_cast<size_t>((n + 1) * HD));
  // A stand-in for RoPE re-rotation: deterministic in (layer, old, new) and exact in f32.
  int64_t calls = 0;
  const KeyShift shift = [&](int64_t layer, float* row, int64_t old_pos, int64_t new_pos) {
    ++calls;
    row[0] += 0.25f * static_cast<float>(old_pos - new_pos) + static_cast<float>(layer);
  };
  KvCache edited(hybrid_config(KvType::F32)), direct(hybrid_config(KvType::F32));
  std::vector<float> k2(k.begin(), k.begin() + p0 * HD), v2(v.begin(), v.begin() + p0 * HD);
  k2.insert(k2.end(), k.begin() + p1 * HD, k.begin() + n * HD);
  v2.insert(v2.end(), v.begin() + p1 * HD, v.begin() + n * HD);
  for (int64_t l = 0; l < 4; ++l) {
    edited.append(l, {.k = k.data(), .v = v.data(), .n = n});
    std::vector<float> kl = k2;
    for (int64_t p = p0; p < n - d; ++p)
      for (int64_t h = 0; h < 2; ++h) kl[static_cast<size_t>(p * HD + h * 64)] += 0.25f * d + static_cast<float>(l);
    direct.append(l, {.k = kl.data(), .v = v2.data(), .n = n - d});
  }
  EXPECT_THROW(edited.erase(50, 70), Error);
  EXPECT_THROW(edited.erase(5, 10), Error);  // local rings hold [21, 60) only
  EXPECT_EQ(edited.size(), n);
  edited.erase(p0, p1, shift);
  EXPECT_EQ(calls, (n - p1) * 2 * 4);
  EXPECT_EQ(edited.size(), n - d);
  for (int64_t l = 0; l < 4; ++l) {
    const KvLayerView a = edited.view(l), b = direct.view(l);
    const int64_t from = std::max(a.pos_begin, b.pos_begin);
    EXPECT_EQ(a.pos_end, n - d);
    for (int64_t p = from; p < n - d; ++p)
      for (int64_t h = 0; h < 2; ++h)
        ASSERT_EQ(std::memcmp(a.run(h, p, 1).k, b.run(h, p, 1).k, 64 * 4), 0) << "layer " << l << " pos " << p;
  }
  // One more token in both: the decode outputs agree bit for bit.
  ThreadPool pool(2);
  const auto q = random_vector(8 * 64);
  for (int64_t l = 0; l < 4; ++l) {
    std::vector<float> out_a(q.size()), out_b(q.size());
    const AttentionParams params{.n_heads = 8, .n_kv_heads = 2, .head_dim = 64,
                                 .window = edited.config().layer_windows[static_cast<size_t>(l)]};
    for (KvCache* c : {&edited, &direct}) c->append(l, {.k = k.data() + n * HD, .v = v.data() + n * HD, .n = 1});
    attention(pool, params, edited.view(l), {.q = q.data(), .out = out_a.data(), .n_queries = 1, .pos0 = n - d});
    attention(pool, params, direct.view(l), {.q = q.data(), .out = out_b.data(), .n_queries = 1, .pos0 = n - d});
    EXPECT_EQ(out_a, out_b) << "layer " << l;
  }
  // Local rings refuse an edit below what they hold; a global-only cache accepts it and
  // frees its second chunk.
  EXPECT_THROW(edited.erase(10, 40), Error);
  KvCacheConfig global = hybrid_config(KvType::F32);
  global.layer_windows = {0};
  KvCache g(global);
  g.append(0, {.k = k.data(), .v = v.data(), .n = n});
  EXPECT_EQ(g.memory().bytes_held, 64 * global.bytes_per_slot());
  g.erase(10, 40);
  EXPECT_EQ(g.memory().bytes_held, 32 * global.bytes_per_slot());
  EXPECT_EQ(std::memcmp(g.view(0).run(1, 12, 1).v, v.data() + 42 * HD + 64, 64 * 4), 0);
}

}  // namespace
}  // namespace squeeze::model
