// tests/train/test_teacher_cache.cpp — the stored top-k teacher: entries read back as
// written, a cache written by anything else refused, an interrupted write recovered, and
// a distillation run reading the cache identical to the run that filled it; the
// hard-label mix is (1 − α)·KL + α·cross-entropy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/distill.h"
#include "train/teacher_cache.h"
#include "train/trainer.h"
#include "tiny_corpus.h"

namespace squeeze::train {
namespace {

std::string temp_path(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("squeeze_tcache_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove(p);
  return p.string();
}

// A random window entry: S tokens, S·k distinct ids per row and rounded log-probs.
struct Entry {
  std::vector<int32_t> tokens, ids;
  std::vector<float> logprobs;
};
Entry random_entry(std::mt19937& rng, int64_t S, int64_t k, int64_t V) {
  Entry e;
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V - 1));
  std::uniform_real_distribution<float> lp(-12.0f, 0.0f);
  for (int64_t s = 0; s < S; ++s) e.tokens.push_back(tok(rng));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j) e.ids.push_back(static_cast<int32_t>((s * 7 + j * 3 + rng() % 2) % V)), e.logprobs.push_back(lp(rng));
  round_like_cache(e.logprobs);
  return e;
}

constexpr TeacherCacheKey kKey{.vocab = 300, .k = 8, .seq_len = 12, .temperature = 1.0f, .teacher = 0xfeed};

TEST(TeacherCache, EntriesReadBackAfterReopening) {
  const std::string path = temp_path("roundtrip.bin");
  std::mt19937 rng(11);
  std::vector<Entry> entries;
  for (int i = 0; i < 5; ++i) entries.push_back(random_entry(rng, kKey.seq_len, kKey.k, kKey.vocab));
  const size_t n = static_cast<size_t>(kKey.seq_len * kKey.k);
  std::vector<int32_t> ids(n);
  std::vector<float> lp(n);
  {
    TeacherTopKCache c(path, kKey);
    EXPECT_EQ(c.entries(), 0);
    for (int i = 0; i < 4; ++i) c.append(entries[i].tokens, entries[i].ids, entries[i].logprobs);
    c.append(entries[1].tokens, entries[1].ids, entries[1].logprobs);  // present: not stored twice
    EXPECT_EQ(c.entries(), 4);
    ASSERT_TRUE(c.lookup(entries[2].tokens, ids, lp));
    EXPECT_EQ(ids, entries[2].ids);
  }
  TeacherTopKCache c(path, kKey);
  EXPECT_EQ(c.entries(), 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(c.lookup(entries[i].tokens, ids, lp)) << i;
    EXPECT_EQ(ids, entries[i].ids);
    EXPECT_EQ(lp, entries[i].logprobs);  // rounded before storing: exact
  }
  EXPECT_FALSE(c.lookup(entries[4].tokens, ids, lp));
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, kKey); }).find("in use by another run"), std::string::npos);
  EXPECT_EQ(c.hits(), 4);
  EXPECT_EQ(c.misses(), 1);
  std::filesystem::remove(path);
}

TEST(TeacherCache, RefusesWhatItWasNotWrittenFor) {
  const std::string path = temp_path("mismatch.bin");
  { TeacherTopKCache c(path, kKey); }
  auto with = [](auto change) {
    TeacherCacheKey k = kKey;
    change(k);
    return k;
  };
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, with([](auto& k) { k.k = 16; })); }).find("--topk 16"), std::string::npos);
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, with([](auto& k) { k.seq_len = 13; })); }).find("--seq-len 13"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, with([](auto& k) { k.temperature = 2; })); }).find("temperature"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, with([](auto& k) { k.vocab = 301; })); }).find("vocabulary"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(path, with([](auto& k) { k.teacher = 1; })); }).find("another teacher"),
            std::string::npos);
  const std::string other = temp_path("not-a-cache.txt");
  std::ofstream(other) << "And the ships came home to the harbour, every one of them, at evening.\n";
  EXPECT_NE(thrown_message([&] { TeacherTopKCache(other, kKey); }).find("not a squeeze teacher top-k cache"), std::string::npos);
  std::ifstream in(other);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}),
            "And the ships came home to the harbour, every one of them, at evening.\n");  // untouched
  std::filesystem::remove(path);
  std::filesystem::remove(other);
}

TEST(TeacherCache, DropsAnInterruptedLastEntry) {
  const std::string path = temp_path("partial.bin");
  std::mt19937 rng(5);
  const Entry a = random_entry(rng, kKey.seq_len, kKey.k, kKey.vocab), b = random_entry(rng, kKey.seq_len, kKey.k, kKey.vocab);
  { TeacherTopKCache c(path, kKey); c.append(a.tokens, a.ids, a.logprobs); c.append(b.tokens, b.ids, b.logprobs); }
  const auto full = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, full - 100);  // b cut short, as by a crash mid-append
  const size_t n = static_cast<size_t>(kKey.seq_len * kKey.k);
  std::vector<int32_t> ids(n);
  std::vector<float> lp(n);
  {
    TeacherTopKCache c(path, kKey);
    EXPECT_EQ(c.entries(), 1);
    EXPECT_TRUE(c.lookup(a.tokens, ids, lp));
    EXPECT_FALSE(c.lookup(b.tokens, ids, lp));
    c.append(b.tokens, b.ids, b.logprobs);  // lands where b belongs
  }
  EXPECT_EQ(std::filesystem::file_size(path), full);
  TeacherTopKCache c(path, kKey);
  ASSERT_TRUE(c.lookup(b.tokens, ids, lp));
  EXPECT_EQ(ids, b.ids);
  EXPECT_EQ(lp, b.logprobs);
  std::filesystem::remove(path);
}

struct Fixture : TinyCorpus {
  Fixture() : TinyCorpus(tiny_glimmer_config(2, 1, 4)) {}
};

TEST(TeacherCache, RunReadingTheCacheEqualsTheRunThatFilledIt) {
  Fixture f;
  GlimmerModel teacher = f.model(41);
  for (float& v : teacher.param("token_embd.weight").value) v *= 3.0f;
  const std::string path = temp_path("run.bin");
  const TrainOptions opt{.steps = 6, .batch = 3, .seq_len = 12, .lr = 3e-3f, .warmup = 2, .eval_sequences = 2,
                         .progress = false};
  const TeacherCacheKey key{.vocab = 300, .k = 16, .seq_len = 12, .temperature = 1.0f,
                            .teacher = teacher_fingerprint(teacher)};
  auto train = [&](TeacherTopKCache* cache, std::vector<float>* losses) {
    GlimmerModel student = f.model(7);
    Trainer tr(student, f.tokens, f.tokens, opt,
               distillation_loss(teacher, {.kl = {.temperature = 1.0f}, .topk = 16, .cache = cache}));
    tr.run();
    for (const auto& r : tr.history()) losses->push_back(r.loss);
    return student.params();
  };
  std::vector<float> fill_loss, read_loss, plain_loss;
  std::vector<Parameter> filled, read;
  {
    TeacherTopKCache cache(path, key);
    filled = train(&cache, &fill_loss);
    EXPECT_EQ(cache.hits() + cache.misses(), 18);  // 6 steps × 3 windows
    EXPECT_EQ(cache.entries(), cache.misses());     // every window the teacher ran is stored
    EXPECT_GT(cache.entries(), 3);
  }
  {
    TeacherTopKCache cache(path, key);
    read = train(&cache, &read_loss);
    EXPECT_EQ(cache.misses(), 0) << "the second run must not need the teacher";
    EXPECT_EQ(cache.hits(), 18);
  }
  EXPECT_EQ(fill_loss, read_loss);
  for (size_t i = 0; i < filled.size(); ++i) EXPECT_EQ(filled[i].value, read[i].value) << filled[i].name;
  // Against the teacher's unrounded log-probs the run differs only by f16 rounding.
  train(nullptr, &plain_loss);
  ASSERT_EQ(plain_loss.size(), fill_loss.size());
  for (size_t i = 0; i < plain_loss.size(); ++i) EXPECT_NEAR(fill_loss[i], plain_loss[i], 2e-3 * plain_loss[i]) << i;
  // Another teacher has another fingerprint (so its cache is refused, test above).
  GlimmerModel other = f.model(42);
  EXPECT_NE(teacher_fingerprint(other), key.teacher);
  std::filesystem::remove(path);
}

TEST(TeacherCache, HardLabelMixIsTheWeightedSum) {
  Fixture f;
  GlimmerModel teacher = f.model(41), student = f.model(7);
  const int64_t S = 12;
  const auto in = std::span<const int32_t>(f.tokens).first(static_cast<size_t>(2 * S));
  const auto tg = std::span<const int32_t>(f.tokens).subspan(1, static_cast<size_t>(2 * S));
  auto value = [&](const DistillParams& p) {
    Tape<float> t;
    const Var logits = student.forward(t, in, S, false);
    return t.value(distillation_loss(teacher, p)(t, logits, in, tg, S))[0];
  };
  auto ce = [&] {
    Tape<float> t;
    return t.value(cross_entropy(t, student.forward(t, in, S, false), tg))[0];
  }();
  for (int64_t topk : {0, 16}) {
    const float kl = value({.kl = {.temperature = 2.0f}, .topk = topk});
    const float mixed = value({.kl = {.temperature = 2.0f}, .topk = topk, .hard_label_weight = 0.3});
    EXPECT_GT(kl, 0.01f);
    EXPECT_NEAR(mixed, 0.7f * kl + 0.3f * ce, 1e-5f * (kl + ce)) << "top-k " << topk;
    EXPECT_NEAR(value({.kl = {.temperature = 2.0f}, .topk = topk, .hard_label_weight = 1.0}), ce, 1e-5f * ce);
  }
  EXPECT_THROW(distillation_loss(teacher, {.hard_label_weight = 1.5}), Error);
}

}  // namespace
}  // namespace squeeze::train
