// tests/model/test_forward_batch.cpp — several sequences in one forward step (the server's
// continuous batching): each sequence's logits must be what it gets alone — bit for bit in
// batch-invariant mode, within f32 rounding otherwise — and a bad chunk must leave every
// cache untouched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

struct TempModel {
  std::string path;
  // wide: every projection 256 columns or more, so Q4_K matrices keep their type (and are
  // repacked for the packed integer kernels where the CPU runs them).
  TempModel(const std::string& config, gguf::GgmlType type, bool wide = false) {
    path = (std::filesystem::temp_directory_path() /
            ("squeeze_fwdbatch_" + std::to_string(::getpid()) + "_" + config + (wide ? "_wide" : "") + ".gguf"))
               .string();
    ModelConfig c = builtin_config(config);
    if (wide) {
      c.n_embd = 256, c.n_head = 8, c.head_dim = 32, c.n_ff = 512;
      if (c.n_ff_exp > 0) c.n_ff_exp = 256;
      set_arch_defaults(c, c.arch);  // options derived from the width (Gemma's embedding scale)
    }
    write_random_model({.config = c, .type = type, .seed = 5, .path = path});
  }
  ~TempModel() { std::filesystem::remove(path); }
};

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// Three sequences: A decodes token by token, B prefills in chunks of 5, C joins late.
// Every step runs what each active sequence has next; the logits of each are compared
// with the same sequence run alone through a Session fed the same chunks.
void check_batched_equals_alone(const Model& m, bool invariant, float tolerance) {
  const ModelConfig& c = m.config();
  const int64_t ctx = 96, chunk = 5;
  const auto ta = random_tokens(40, c.n_vocab, 1), tb = random_tokens(40, c.n_vocab, 2), tc = random_tokens(30, c.n_vocab, 3);
  struct Seq {
    const std::vector<int32_t>* tokens;
    int64_t step, start;  // tokens per step; the step it joins at
    KvCache cache;
    int64_t done = 0;
    std::vector<std::vector<float>> logits;  // per step it ran in
  };
  const auto cfg = sequence_cache_config(c, ctx, chunk, KvType::F16);
  std::vector<Seq> seqs;
  seqs.push_back({&ta, 1, 0, KvCache(cfg), 0, {}});
  seqs.push_back({&tb, chunk, 0, KvCache(cfg), 0, {}});
  seqs.push_back({&tc, 1, 7, KvCache(cfg), 0, {}});
  ForwardScratch scratch(c, 1 + chunk + 1);
  for (int64_t step = 0;; ++step) {
    std::vector<SequenceChunk> chunks;
    std::vector<Seq*> who;
    for (Seq& s : seqs) {
      const int64_t left = static_cast<int64_t>(s.tokens->size()) - s.done;
      if (step < s.start || left == 0) continue;
      chunks.push_back({.cache = &s.cache, .tokens = s.tokens->data() + s.done, .n = std::min(s.step, left)});
      who.push_back(&s);
    }
    if (chunks.empty()) break;
    std::vector<float> logits(static_cast<size_t>(logit_rows(chunks) * c.n_vocab));
    forward_step(m, default_thread_pool(), scratch, chunks, logits.data(), {.batch_invariant = invariant});
    for (size_t i = 0; i < who.size(); ++i) {
      who[i]->logits.emplace_back(logits.begin() + static_cast<ptrdiff_t>(i * c.n_vocab),
                                  logits.begin() + static_cast<ptrdiff_t>((i + 1) * c.n_vocab));
      who[i]->done += chunks[i].n;
    }
  }
  for (const Seq& s : seqs) {
    Session alone(m, {.n_ctx = ctx, .batch = chunk, .kv_type = KvType::F16, .batch_invariant = invariant});
    size_t k = 0;
    for (int64_t done = 0; done < static_cast<int64_t>(s.tokens->size()); ++k) {
      const int64_t n = std::min<int64_t>(s.step, static_cast<int64_t>(s.tokens->size()) - done);
      const auto l = alone.forward({s.tokens->data() + done, static_cast<size_t>(n)});
      done += n;
      ASSERT_LT(k, s.logits.size());
      for (int64_t v = 0; v < c.n_vocab; ++v) {
        if (invariant) {
          ASSERT_EQ(l[static_cast<size_t>(v)], s.logits[k][static_cast<size_t>(v)]) << "step " << k << " token " << v;
        } else {
          ASSERT_NEAR(l[static_cast<size_t>(v)], s.logits[k][static_cast<size_t>(v)], tolerance) << "step " << k;
        }
      }
    }
    EXPECT_EQ(k, s.logits.size());
  }
}

}  // namespace

TEST(ForwardBatch, BatchInvariantStepsEqualEachSequenceAloneBitForBit) {
  for (const auto type : {gguf::GgmlType::F32, gguf::GgmlType::Q4_K}) {
    // gemma3-tiny: local rings, GeGLU, QK-norm; muse-glimmer-tiny: NoPE globals, gates;
    // qwen3moe-tiny: expert layers, whose rows group per expert differently in every step.
    for (const char* config : {"gemma3-tiny", "muse-glimmer-tiny", "qwen3moe-tiny"}) {
      SCOPED_TRACE(config);
      for (bool wide : {false, true}) {
        TempModel tm(config, type, wide);
        const auto m = Model::load(tm.path);
        check_batched_equals_alone(*m, true, 0.0f);
      }
    }
  }
}

TEST(ForwardBatch, DefaultStepsMatchAloneWithinRounding) {
  // Without batch invariance, a batch may take another product (GEMV vs dot tile vs BLAS),
  // which reorders f32 sums: logits of order 1..10 agree to ~1e-3.
  TempModel tm("muse-glimmer-tiny", gguf::GgmlType::F32);
  const auto m = Model::load(tm.path);
  check_batched_equals_alone(*m, false, 2e-3f);
}

TEST(ForwardBatch, BadChunkLeavesEveryCacheUntouched) {
  TempModel tm("gemma3-tiny", gguf::GgmlType::F32);
  const auto m = Model::load(tm.path);
  const ModelConfig& c = m->config();
  const auto cfg = sequence_cache_config(c, 16, 4, KvType::F16);
  KvCache a(cfg), b(cfg);
  ForwardScratch scratch(c, 8);
  const std::vector<int32_t> good{1, 2, 3}, bad{1, static_cast<int32_t>(c.n_vocab)};
  std::vector<float> logits(static_cast<size_t>(2 * c.n_vocab));
  std::vector<SequenceChunk> chunks{{.cache = &a, .tokens = good.data(), .n = 3}, {.cache = &b, .tokens = bad.data(), .n = 2}};
  EXPECT_THROW(forward_step(*m, default_thread_pool(), scratch, chunks, logits.data()), Error);
  EXPECT_EQ(a.size(), 0);
  EXPECT_EQ(b.size(), 0);
  // More rows than the scratch holds, and a chunk past the context, are refused too.
  const std::vector<int32_t> many(9, 1);
  chunks = {{.cache = &a, .tokens = many.data(), .n = 9}};
  EXPECT_THROW(forward_step(*m, default_thread_pool(), scratch, chunks, logits.data()), Error);
  KvCache small(sequence_cache_config(c, 2, 4, KvType::F16));
  chunks = {{.cache = &small, .tokens = good.data(), .n = 3}};
  EXPECT_THROW(forward_step(*m, default_thread_pool(), scratch, chunks, logits.data()), Error);
  EXPECT_EQ(small.size(), 0);
}
