// tests/model/test_image_rows.cpp — rows that enter the model as given embeddings (image
// features) instead of tokens, and ring snapshots that let a context edit go back to a
// position the local layers' rings have moved past:
//  - a row given as exactly what the token's embedding becomes (scaled and normed) gives
//    the token's logits bit for bit; another row changes them;
//  - image rows split across prefill chunks give what one chunk gives;
//  - restoring a ring snapshot and running a different continuation gives the logits of a
//    fresh session that ran the prefix and that continuation, bit for bit, also after the
//    rings wrapped several times; snapshots of another shape or from the future are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

struct TinyMuse {
  std::string path;
  std::unique_ptr<Model> model;
  TinyMuse() {
    path = (std::filesystem::temp_directory_path() / ("squeeze_imgrows_" + std::to_string(::getpid()) + ".gguf")).string();
    write_random_model({.config = builtin_config("muse-glimmer-tiny"), .type = gguf::GgmlType::F32, .seed = 9, .path = path});
    model = Model::load(path);
  }
  ~TinyMuse() { std::filesystem::remove(path); }
};

TinyMuse& tiny() {
  static TinyMuse t;
  return t;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(1, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

TEST(ImageRows, RowEqualToTheTokensEmbeddingGivesItsLogits) {
  const Model& m = *tiny().model;
  ASSERT_TRUE(m.config().embd_norm);  // the row must skip the norm to match
  const int64_t E = m.config().n_embd;
  const auto tokens = random_tokens(12, m.config().n_vocab, 1);
  // What the first layer receives for each token: the last embedding stage of a dump.
  std::vector<float> entered;
  Session a(m, {.n_ctx = 64, .batch = 64});
  a.set_dump([&](const std::string& name, const float* d, int64_t rows, int64_t cols) {
    if (name == "embd_norm") entered.assign(d, d + rows * cols);
  });
  const auto want = copy(a.forward(tokens, /*all_logits=*/true));
  ASSERT_EQ(entered.size(), tokens.size() * size_t(E));

  std::vector<const float*> rows(tokens.size(), nullptr);
  for (size_t i : {2u, 3u, 4u, 9u}) rows[i] = entered.data() + i * size_t(E);
  Session b(m, {.n_ctx = 64, .batch = 64});
  const auto got = copy(b.forward(tokens, rows, /*all_logits=*/true));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "logit " << i;

  // A different row at position 3 changes every later position's logits.
  std::vector<float> other(entered.begin() + 5 * E, entered.begin() + 6 * E);
  rows[3] = other.data();
  Session c(m, {.n_ctx = 64, .batch = 64});
  const auto changed = copy(c.forward(tokens, rows, /*all_logits=*/true));
  const int64_t V = m.config().n_vocab;
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t v = 0; v < V; ++v) ASSERT_EQ(changed[size_t(p * V + v)], want[size_t(p * V + v)]);
  double diff = 0;
  for (int64_t v = 0; v < V; ++v) diff = std::max(diff, double(std::fabs(changed[size_t(3 * V + v)] - want[size_t(3 * V + v)])));
  EXPECT_GT(diff, 1e-3);
}

TEST(ImageRows, RowsAcrossChunksMatchOneChunk) {
  const Model& m = *tiny().model;
  const int64_t E = m.config().n_embd;
  const auto tokens = random_tokens(23, m.config().n_vocab, 2);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> features(size_t(10 * E));
  for (float& x : features) x = normal(rng);
  std::vector<const float*> rows(tokens.size(), nullptr);
  for (size_t i = 0; i < 10; ++i) rows[7 + i] = features.data() + i * size_t(E);  // spans chunks of 5
  Session whole(m, {.n_ctx = 64, .batch = 64});
  Session chunked(m, {.n_ctx = 64, .batch = 5});
  const auto a = copy(whole.forward(tokens, rows, true));
  const auto b = copy(chunked.forward(tokens, rows, true));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1.0f + std::fabs(a[i]))) << i;
  Session bad(m, {.n_ctx = 64, .batch = 64});
  rows.pop_back();
  EXPECT_THROW(bad.forward(tokens, rows), Error);
}

TEST(RingSnapshot, RestoredPrefixContinuesAsAFreshRun) {
  const Model& m = *tiny().model;  // window 8, headroom 4: rings of 12 slots
  const int64_t V = m.config().n_vocab;
  const auto prefix = random_tokens(30, V, 4), later = random_tokens(40, V, 5), edit = random_tokens(11, V, 6);
  const SessionParams params{.n_ctx = 128, .batch = 4, .kv_headroom = 4};

  Session s(m, params);
  s.forward(prefix);
  const KvRingSnapshot snap = s.snapshot_rings();
  EXPECT_EQ(snap.position, 30);
  EXPECT_GT(snap.bytes(), 0u);
  s.forward(later);  // the rings wrap several times past position 30
  EXPECT_THROW(s.truncate(30), Error);  // a plain rollback cannot go back there
  s.restore_rings(snap);
  EXPECT_EQ(s.position(), 30);
  const auto got = copy(s.forward(edit, true));

  Session fresh(m, params);
  fresh.forward(prefix);
  const auto want = copy(fresh.forward(edit, true));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "logit " << i;

  // From the future (past the cache's end) and of another shape: refused, nothing changed.
  Session short_run(m, params);
  short_run.forward(random_tokens(10, V, 7));
  EXPECT_THROW(short_run.restore_rings(snap), Error);
  EXPECT_EQ(short_run.position(), 10);
  KvRingSnapshot wrong = snap;
  for (auto& r : wrong.rows)
    if (!r.empty()) {
      r.pop_back();
      break;
    }
  EXPECT_THROW(s.restore_rings(wrong), Error);
  EXPECT_EQ(s.position(), 41);
}

}  // namespace
