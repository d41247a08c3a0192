// tests/kernels/test_attention.cpp — the attention kernel (scalar and AVX2 variants, split
// and tiled paths, threads) against an independent float64 oracle computed from the
// logical per-position K/V (not through the cache view), and the float64 reference
// (which reads through the view) against the same oracle. Fresh random data every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/cpu/attention.h"

namespace squeeze::kernels::cpu {
namespace {

using test::kEpsF32;
using test::random_vector;

// A KV store for one layer written position by position (so a ring wraps the way the
// model's cache does), remembering every position's K/V as logical rows.
struct TestKv {
  KvType type;
  int64_t H, D, ring, block_slots;
  std::vector<std::vector<float>> k, v;  // [pos][H * D], already rounded to the storage type
  std::vector<AlignedBuffer> blocks;
  std::vector<const std::byte*> ptrs;
  int64_t begin = 0, end = 0;

  TestKv(KvType type_, int64_t heads, int64_t dim, int64_t n_pos, int64_t ring_slots, int64_t block)
      : type(type_), H(heads), D(dim), ring(ring_slots), block_slots(block) {
    const int64_t slots = ring > 0 ? ring : n_pos;
    const int64_t n_blocks = std::max<int64_t>(1, (slots + block_slots - 1) / block_slots);
    for (int64_t b = 0; b < n_blocks; ++b) {
      blocks.emplace_back(static_cast<size_t>(2 * H * block_slots) * kv_row_bytes(type, D));
      ptrs.push_back(static_cast<const std::byte*>(blocks.back().data()));
    }
    for (int64_t p = 0; p < n_pos; ++p) push();
  }

  // Each head's row goes through the cache's encoder; the logical rows the oracle uses
  // are what the scalar decoder reads back (exact for f32/f16/bf16 widening; q8_0 is
  // scale · code), so the oracle sees exactly the stored values.
  void push() {
    auto kr = random_vector(H * D), vr = random_vector(H * D);
    const int64_t pos = end++;
    const KvLayerView vw = view();
    for (int64_t h = 0; h < H; ++h) {
      const KvLayerView::Run run = vw.run(h, pos, 1);
      auto* kd = const_cast<std::byte*>(run.k);
      auto* vd = const_cast<std::byte*>(run.v);
      kv_encode_row(type, kr.data() + h * D, kd, D);
      kv_encode_row(type, vr.data() + h * D, vd, D);
      kv_decode_row(type, kd, kr.data() + h * D, D);
      kv_decode_row(type, vd, vr.data() + h * D, D);
    }
    k.push_back(std::move(kr));
    v.push_back(std::move(vr));
    if (ring > 0) begin = std::max<int64_t>(0, end - ring);
  }

  KvLayerView view() const {
    KvLayerView vw;
    vw.type = type;
    vw.n_kv_heads = H;
    vw.head_dim = D;
    vw.block_slots = block_slots;
    vw.ring_slots = ring;
    vw.blocks = std::span<const std::byte* const>(ptrs.data(), ptrs.size());
    vw.v_offset = static_cast<size_t>(H) * vw.head_bytes();
    vw.pos_begin = begin;
    vw.pos_end = end;
    return vw;
  }
};

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, window;
  int64_t n_pos;     // positions written
  int64_t n_queries; // the last n_queries positions are queried
  int64_t ring = 0;  // 0: global layout
  int64_t block_slots = 64;
  bool sinks = false;  // a random sink logit per query head (gpt-oss)
};

// Output of query i, head h in float64 from the logical rows, plus the error budget of an
// f32 online-softmax kernel for it (derivation at kernel_bound()).
struct Oracle {
  std::vector<double> out;
  std::vector<double> bound;
};

// Error budget of an f32 kernel against exact arithmetic on the same (already rounded)
// K/V, per output element, with u the f32 unit roundoff and vmax = max |v|:
//  * each score s_k = scale q·k is an f32 dot of D terms plus the pre-scaling of q:
//    |Δs_k| ≤ (D + 2) u A, A = max_k scale Σ|q_d k_d| (Higham's dot bound);
//  * perturbing every score by ≤ δ moves each normalised weight by ≤ 2δ w_k;
//  * exp (the AVX2 one is within 2e-7 ≈ 4u) and the rescales by exp(m_old − m_new) —
//    applied to both acc and l, so their own error cancels, leaving one rounding per
//    rescale on each (≤ 2u per key) — and the f32 sum of n weighted values (≤ n u vmax);
//  * the final division and the split merge: a few u.
// Total: vmax · u · (2 (D + 2) A + 2·4 + 3 n + 16). Worst case; typical errors are far smaller.
double kernel_bound(int64_t D, double A, int64_t n_keys, double vmax) {
  return vmax * kEpsF32 * (2.0 * static_cast<double>(D + 2) * A + 8.0 + 3.0 * static_cast<double>(n_keys) + 16.0);
}

Oracle oracle(const Case& c, const TestKv& kv, const std::vector<float>& q, int64_t pos0, double scale,
              const float* sinks) {
  const int64_t H = c.n_heads, D = c.head_dim, G = H / c.n_kv_heads;
  Oracle o;
  o.out.assign(static_cast<size_t>(c.n_queries * H * D), 0.0);
  o.bound.assign(static_cast<size_t>(c.n_queries * H), 0.0);
  for (int64_t i = 0; i < c.n_queries; ++i) {
    const int64_t pos = pos0 + i, lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = q.data() + (i * H + h) * D;
      const int64_t kvh = h / G;
      std::vector<double> s;
      double mx = -INFINITY, A = 0, vmax = 0;
      for (int64_t p = lo; p <= pos; ++p) {
        const float* kr = kv.k[static_cast<size_t>(p)].data() + kvh * D;
        double dot = 0, abs = 0;
        for (int64_t d = 0; d < D; ++d) {
          dot += static_cast<double>(qh[d]) * kr[d];
          abs += std::fabs(static_cast<double>(qh[d]) * kr[d]);
        }
        s.push_back(dot * scale);
        mx = std::max(mx, dot * scale);
        A = std::max(A, abs * scale);
      }
      // A sink only joins the denominator.
      const double sink = sinks ? static_cast<double>(sinks[h]) : -INFINITY;
      mx = std::max(mx, sink);
      double sum = std::exp(sink - mx);
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t p = lo; p <= pos; ++p) {
        const float* vr = kv.v[static_cast<size_t>(p)].data() + kvh * D;
        const double w = s[static_cast<size_t>(p - lo)] / sum;
        for (int64_t d = 0; d < D; ++d) {
          o.out[static_cast<size_t>((i * H + h) * D + d)] += w * vr[d];
          vmax = std::max(vmax, std::fabs(static_cast<double>(vr[d])));
        }
      }
      o.bound[static_cast<size_t>(i * H + h)] = kernel_bound(D, A, pos - lo + 1, vmax);
    }
  }
  return o;
}

struct Variant {
  Isa isa;
  KvType type;
};

class Attention : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (!attention_isa_available(GetParam().isa)) GTEST_SKIP() << isa_name(GetParam().isa) << " not available";
  }

  // Runs case c with the given tuning on `threads` threads; checks the kernel against the
  // oracle, and the float64 reference (through the view) against the oracle.
  void check(const Case& c, AttentionTuning tuning = {}, int threads = 2) {
    SCOPED_TRACE(::testing::Message() << "H=" << c.n_heads << " Hkv=" << c.n_kv_heads << " D=" << c.head_dim
                                      << " window=" << c.window << " n_pos=" << c.n_pos << " nq=" << c.n_queries
                                      << " ring=" << c.ring << " splits=" << tuning.key_splits
                                      << " qtile=" << tuning.query_tile << " threads=" << threads);
    if (!kv_type_fits(GetParam().type, c.head_dim)) return;  // q8_0 rows need D % 32 == 0 (tested below)
    const TestKv kv(GetParam().type, c.n_kv_heads, c.head_dim, c.n_pos, c.ring, c.block_slots);
    // Sinks in [-3, 6]: some heads' sink dominates their scores, some barely counts.
    const auto sinks = random_vector(c.n_heads, -3.0f, 6.0f);
    const AttentionParams params{.n_heads = c.n_heads, .n_kv_heads = c.n_kv_heads, .head_dim = c.head_dim,
                                 .window = c.window, .sinks = c.sinks ? sinks.data() : nullptr};
    // Queries in [-2, 2] make the softmax peaked enough that a wrong key shows.
    const auto q = random_vector(c.n_queries * c.n_heads * c.head_dim, -2.0f, 2.0f);
    const int64_t pos0 = c.n_pos - c.n_queries;
    const Oracle want = oracle(c, kv, q, pos0, params.effective_scale(), params.sinks);

    const Isa isa = GetParam().isa;
    tuning.isa = &isa;
    ThreadPool pool(threads);
    std::vector<float> got(q.size(), NAN), ref(q.size(), NAN);
    const KvLayerView view = kv.view();
    attention(pool, params, view, {.q = q.data(), .out = got.data(), .n_queries = c.n_queries, .pos0 = pos0}, tuning);
    attention_reference(params, view, {.q = q.data(), .out = ref.data(), .n_queries = c.n_queries, .pos0 = pos0});
    int failures = 0;
    for (size_t e = 0; e < got.size() && failures < 5; ++e) {
      const double exact = want.out[e], bound = want.bound[e / static_cast<size_t>(c.head_dim)];
      // The reference computes in float64 and rounds once: within u |exact| (+ tiny).
      if (!(std::fabs(ref[e] - exact) <= kEpsF32 * std::fabs(exact) + 1e-12)) {
        ADD_FAILURE() << "reference element " << e << ": " << ref[e] << " vs " << exact;
        ++failures;
      }
      if (!(std::fabs(got[e] - exact) <= bound)) {
        ADD_FAILURE() << "kernel element " << e << ": " << got[e] << " vs " << exact << " (bound " << bound << ")";
        ++failures;
      }
    }
  }
};

TEST_P(Attention, DecodeHeadDimsAndGqaRatios) {
  // 16 and 32 with 32·9 + 1 keys: the prefetch for the last full tile then covers one
  // key, fewer bytes than a cache line (the AVX-512 kernel once spun forever there).
  for (int64_t D : {64, 128, 80, 16, 32})
    for (int64_t G : {1, 4, 16}) {
      const int64_t kvh = G == 16 ? 1 : 2;
      check({.n_heads = kvh * G, .n_kv_heads = kvh, .head_dim = D, .window = 0, .n_pos = D <= 32 ? 289 : 301,
             .n_queries = 1});
    }
}

TEST_P(Attention, DecodeLongContextSplitsKeys) {
  // 2 KV heads and 2049 keys: the driver splits each head's keys in two; also force odd splits.
  const Case c{.n_heads = 8, .n_kv_heads = 2, .head_dim = 128, .window = 0, .n_pos = 2049, .n_queries = 1};
  check(c);
  check(c, {.key_splits = 7});
  check(c, {.key_splits = 1}, 1);
}

// The model's greedy output must not depend on the thread count: neither may attention.
TEST_P(Attention, IdenticalForAnyThreadCount) {
  // 2100 keys: the driver splits each KV head's range in two (kKeysPerSplit = 1024).
  const TestKv kv(GetParam().type, 2, 128, 2100, 0, 256);
  const Isa isa = GetParam().isa;
  const AttentionParams params{.n_heads = 8, .n_kv_heads = 2, .head_dim = 128};
  for (int64_t nq : {1, 9}) {
    const auto q = random_vector(nq * 8 * 128);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<float> out(q.size());
      attention(pool, params, kv.view(), {.q = q.data(), .out = out.data(), .n_queries = nq, .pos0 = 2100 - nq},
                {.isa = &isa});
      if (first.empty()) first = out;
      EXPECT_EQ(out, first) << threads << " threads, " << nq << " queries";
    }
  }
}

TEST_P(Attention, PrefillCausal) {
  for (int64_t D : {64, 80})
    check({.n_heads = 8, .n_kv_heads = 2, .head_dim = D, .window = 0, .n_pos = 150, .n_queries = 150});
  // Query tiles that do not divide the queries, and splits inside a prefill.
  const Case c{.n_heads = 4, .n_kv_heads = 1, .head_dim = 128, .window = 0, .n_pos = 120, .n_queries = 77};
  check(c, {.query_tile = 5});
  check(c, {.key_splits = 3, .query_tile = 16}, 3);
}

TEST_P(Attention, SlidingWindowSmallerAndLargerThanSequence) {
  for (int64_t window : {1, 7, 33, 500}) {
    check({.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = window, .n_pos = 200, .n_queries = 1});
    check({.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = window, .n_pos = 200, .n_queries = 60});
  }
  check({.n_heads = 16, .n_kv_heads = 1, .head_dim = 128, .window = 100, .n_pos = 1500, .n_queries = 1},
        {.key_splits = 4});
}

// gpt-oss's sinks: decode with and without key splits (the merge adds the sink), prefill
// tiles, a sliding window over a ring.
TEST_P(Attention, SinksJoinTheDenominator) {
  for (int64_t splits : {0, 1, 3})
    check({.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = 0, .n_pos = 700, .n_queries = 1, .sinks = true},
          {.key_splits = splits});
  check({.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = 0, .n_pos = 90, .n_queries = 90, .sinks = true});
  check({.n_heads = 8, .n_kv_heads = 4, .head_dim = 32, .window = 40, .n_pos = 300, .n_queries = 24, .ring = 63,
         .block_slots = 16, .sinks = true});
  check({.n_heads = 4, .n_kv_heads = 1, .head_dim = 24, .window = 0, .n_pos = 50, .n_queries = 10, .sinks = true});
}

TEST_P(Attention, RingBufferWrapsAround) {
  // window 40 + headroom 23 = 63 slots in blocks of 16 (the last one partly used); 500
  // positions written wrap the ring ~8 times. Decode, and a prefill chunk of headroom + 1.
  for (int64_t D : {64, 128, 80}) {
    check({.n_heads = 8, .n_kv_heads = 4, .head_dim = D, .window = 40, .n_pos = 500, .n_queries = 1, .ring = 63,
           .block_slots = 16});
    check({.n_heads = 8, .n_kv_heads = 4, .head_dim = D, .window = 40, .n_pos = 500, .n_queries = 24, .ring = 63,
           .block_slots = 16});
  }
  // A ring in one block, as the model's cache builds it, with splits across the wrap.
  check({.n_heads = 16, .n_kv_heads = 1, .head_dim = 128, .window = 300, .n_pos = 1000, .n_queries = 1, .ring = 333,
         .block_slots = 333},
        {.key_splits = 5});
}

// In batch-invariant mode a query's output has the same bits whether it runs alone (a
// decode step) or in a chunk with others, wherever the chunk starts (a verify; a prefill
// resumed at any position), under a sliding window, across a ring's wrap, and past the
// length where a decode would split its keys: the key tiles are at fixed positions and
// key ranges are never split.
TEST_P(Attention, EachQueryHasTheSameBitsInAnyChunk) {
  if (!kv_type_fits(GetParam().type, 64)) return;
  const Isa isa = GetParam().isa;
  struct Shape {
    int64_t window, n_pos, n_queries, ring, block_slots;
  };
  for (const Shape sh : {Shape{40, 500, 24, 63, 16}, Shape{33, 200, 60, 0, 256}, Shape{0, 150, 60, 0, 256},
                         Shape{0, 2300, 20, 0, 256}}) {
    const TestKv kv(GetParam().type, 2, 64, sh.n_pos, sh.ring, sh.block_slots);
    const AttentionParams params{.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = sh.window,
                                 .batch_invariant = true};
    const int64_t row = 8 * 64, pos0 = sh.n_pos - sh.n_queries;
    const auto q = random_vector(sh.n_queries * row, -2.0f, 2.0f);
    ThreadPool pool(2);
    std::vector<float> whole(q.size());
    attention(pool, params, kv.view(), {.q = q.data(), .out = whole.data(), .n_queries = sh.n_queries, .pos0 = pos0},
              {.isa = &isa});
    for (const int64_t chunk : {1, 5, 7, 13}) {
      std::vector<float> parts(q.size(), NAN);
      for (int64_t i = 0; i < sh.n_queries; i += chunk) {
        const int64_t m = std::min(chunk, sh.n_queries - i);
        attention(pool, params, kv.view(),
                  {.q = q.data() + i * row, .out = parts.data() + i * row, .n_queries = m, .pos0 = pos0 + i},
                  {.isa = &isa});
      }
      for (size_t e = 0; e < whole.size(); ++e)
        ASSERT_EQ(parts[e], whole[e]) << "window " << sh.window << ", chunks of " << chunk << ", element " << e;
    }
  }
}

TEST_P(Attention, StridedRowsAndExplicitScale) {
  const TestKv kv(GetParam().type, 2, 64, 90, 0, 32);
  const Isa isa = GetParam().isa;
  const AttentionParams params{.n_heads = 4, .n_kv_heads = 2, .head_dim = 64, .window = 0, .scale = 0.3f};
  const int64_t nq = 9, qs = 4 * 64 + 13, os = 4 * 64 + 5;
  const auto q = random_vector(nq * qs);
  std::vector<float> got(static_cast<size_t>(nq * os), 7.0f), ref(got);
  ThreadPool pool(2);
  const AttentionBatch b{.q = q.data(), .q_stride = qs, .out = got.data(), .out_stride = os, .n_queries = nq, .pos0 = 81};
  attention(pool, params, kv.view(), b, {.isa = &isa});
  AttentionBatch rb = b;
  rb.out = ref.data();
  attention_reference(params, kv.view(), rb);
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t e = 0; e < 4 * 64; ++e) {
      // Bound as in kernel_bound() with A ≤ 0.3 · 64 · 1 and n ≤ 90 keys, vmax ≤ 1.
      ASSERT_NEAR(got[static_cast<size_t>(i * os + e)], ref[static_cast<size_t>(i * os + e)],
                  kernel_bound(64, 0.3 * 64, 90, 1.0) + kEpsF32);
    }
    // The gap between rows is not written.
    for (int64_t e = 4 * 64; e < os; ++e) ASSERT_EQ(got[static_cast<size_t>(i * os + e)], 7.0f);
  }
}

TEST_P(Attention, RejectsBadInput) {
  TestKv kv(GetParam().type, 2, 64, 100, 50, 50);  // a ring holding [50, 100)
  const Isa isa = GetParam().isa;
  ThreadPool pool(2);
  const auto q = random_vector(8 * 64 * 10);
  std::vector<float> out(q.size());
  const AttentionParams ok{.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .window = 20};
  auto run = [&](AttentionParams p, int64_t pos0, int64_t nq) {
    attention(pool, p, kv.view(), {.q = q.data(), .out = out.data(), .n_queries = nq, .pos0 = pos0}, {.isa = &isa});
  };
  EXPECT_NO_THROW(run(ok, 99, 1));
  EXPECT_THROW(run(ok, 100, 1), Error);  // the query's own key was not appended yet
  EXPECT_THROW(run(ok, 60, 10), Error);  // window of position 60 starts at 41 < 50
  AttentionParams global = ok;
  global.window = 0;
  EXPECT_THROW(run(global, 99, 1), Error);  // a global query needs position 0
  AttentionParams bad = ok;
  bad.n_heads = 7;
  EXPECT_THROW(run(bad, 99, 1), Error);
  bad = ok;
  bad.head_dim = 32;
  EXPECT_THROW(run(bad, 99, 1), Error);
  bad = ok;
  bad.window = -1;
  EXPECT_THROW(run(bad, 99, 1), Error);
  EXPECT_THROW(attention(pool, ok, kv.view(), {.q = q.data(), .q_stride = 10, .out = out.data(), .n_queries = 1, .pos0 = 99}),
               Error);
  EXPECT_THROW(attention(pool, ok, kv.view(), {.q = nullptr, .out = out.data(), .n_queries = 1, .pos0 = 99}), Error);
}

// q8_0 rows: the encoder's rule (scale amax/127 in f16, codes round(x / scale)), every
// value back within about half a step, and a head_dim the blocks do not divide refused.
TEST(KvQ8, EncodeDecodeAndShapeCheck) {
  const int64_t D = 96;
  auto x = random_vector(D, -3.0f, 3.0f);
  x[40] = 0.0f;
  std::vector<std::byte> row(kv_row_bytes(KvType::Q8_0, D));
  ASSERT_EQ(row.size(), 3u * 34u);
  kv_encode_row(KvType::Q8_0, x.data(), row.data(), D);
  std::vector<float> y(D);
  kv_decode_row(KvType::Q8_0, row.data(), y.data(), D);
  for (int64_t b = 0; b < D / 32; ++b) {
    float amax = 0;
    for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    uint16_t h;
    std::memcpy(&h, row.data() + b * 34, 2);
    EXPECT_EQ(h, f32_to_f16(amax / 127.0f));
    const float step = f16_to_f32(h);
    // Half a step, plus the codes' use of the unrounded scale: ≤ 127 codes × the f16
    // rounding of the scale (relative 2^-11).
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_LE(std::fabs(y[b * 32 + i] - x[b * 32 + i]), step * (0.5f + 127.0f / 2048.0f) * 1.01f);
  }
  EXPECT_EQ(y[40], 0.0f);
  EXPECT_FALSE(kv_type_fits(KvType::Q8_0, 48));
  EXPECT_TRUE(kv_type_fits(KvType::F16, 48));
  EXPECT_EQ(kv_type_from_name("Q8_0"), KvType::Q8_0);
  EXPECT_THROW(kv_type_from_name("q4_0"), Error);
  TestKv ok(KvType::F16, 1, 48, 4, 0, 64);
  KvLayerView bad = ok.view();
  bad.type = KvType::Q8_0;
  std::vector<float> q(48), out(48);
  ThreadPool pool(1);
  EXPECT_THROW(attention(pool, {.n_heads = 1, .n_kv_heads = 1, .head_dim = 48}, bad,
                         {.q = q.data(), .out = out.data(), .n_queries = 1, .pos0 = 3}),
               Error);
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(isa_env_name(info.param.isa)) + "_" + kv_type_name(info.param.type);
}

INSTANTIATE_TEST_SUITE_P(Variants, Attention,
                         ::testing::Values(Variant{Isa::Scalar, KvType::F32}, Variant{Isa::Scalar, KvType::F16},
                                           Variant{Isa::Scalar, KvType::BF16}, Variant{Isa::Avx2, KvType::F32},
                                           Variant{Isa::Avx2, KvType::F16}, Variant{Isa::Avx2, KvType::BF16},
                                           Variant{Isa::Scalar, KvType::Q8_0}, Variant{Isa::Avx2, KvType::Q8_0},
                                           Variant{Isa::Avx512, KvType::F32}, Variant{Isa::Avx512, KvType::F16},
                                           Variant{Isa::Avx512, KvType::BF16}, Variant{Isa::Avx512, KvType::Q8_0}),
                         variant_name);

}  // namespace
}  // namespace squeeze::kernels::cpu
