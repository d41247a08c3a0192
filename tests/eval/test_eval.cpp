// tests/eval/test_eval.cpp — the multiple-choice task items (well-formed, reproducible,
// the truth among distinct candidates) and their scoring, and the sampled-text KL (zero
// against itself, positive against another model).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unistd.h>

#include "core/error.h"
#include "eval/choice_tasks.h"
#include "eval/sampled_kl.h"
#include "model/random_model.h"
#include "model/session.h"

namespace squeeze::eval {
namespace {

// Twelve short "verses" in two "books" (a blank line between them).
const std::string kVerses =
    "And the keeper lit the lamp upon the rock.\n"
    "And the lamp shone over the dark sea all night.\n"
    "Then the ships saw the light from afar off.\n"
    "And the ships came home unto the harbour at dawn.\n"
    "And the people rejoiced with a great joy that day.\n"
    "For the sea was calm and the wind was still.\n"
    "\n"
    "Now the fisherman went out upon the waters early.\n"
    "And he cast his net on the right side of the boat.\n"
    "And the net was full of fishes great and small.\n"
    "So he drew it to the land with his brethren.\n"
    "And they did eat bread and fish by the fire.\n"
    "And the morning came and they were glad.\n";

TEST(ChoiceTasks, ItemsAreWellFormedAndReproducible) {
  for (auto task : {ChoiceTask::next_word, ChoiceTask::verse_ending}) {
    const auto items = make_choice_items(task, kVerses, 10, 7);
    ASSERT_EQ(items.size(), 10u);
    for (const auto& it : items) {
      ASSERT_EQ(it.candidates.size(), 4u);
      EXPECT_EQ(std::set<std::string>(it.candidates.begin(), it.candidates.end()).size(), 4u);
      ASSERT_TRUE(it.answer >= 0 && it.answer < 4);
      const std::string& truth = it.candidates[static_cast<size_t>(it.answer)];
      ASSERT_EQ(truth[0], ' ');
      // The context and the true continuation rebuild a verse of the text (minus the last
      // word's punctuation for next-word).
      const std::string line = it.context.substr(it.context.rfind('\n') + 1) + truth;
      EXPECT_NE(kVerses.find(line), std::string::npos) << line;
      if (task == ChoiceTask::next_word) {
        EXPECT_EQ(truth.find(' ', 1), std::string::npos) << "one word: " << truth;
      }
    }
    const auto again = make_choice_items(task, kVerses, 10, 7);
    const auto other = make_choice_items(task, kVerses, 10, 8);
    bool same = true, differs = false;
    for (size_t i = 0; i < items.size(); ++i) {
      same &= items[i].context == again[i].context && items[i].candidates == again[i].candidates && items[i].answer == again[i].answer;
      differs |= items[i].context != other[i].context || items[i].answer != other[i].answer;
    }
    EXPECT_TRUE(same);
    EXPECT_TRUE(differs);
  }
  // The first verse of a book has no previous-verse context.
  bool saw_book_start = false;
  for (const auto& it : make_choice_items(ChoiceTask::verse_ending, kVerses, 12, 1))
    saw_book_start |= it.context.find('\n') == std::string::npos;
  EXPECT_TRUE(saw_book_start);
  EXPECT_THROW(make_choice_items(ChoiceTask::next_word, "too few\nlines here\n", 5, 1), Error);
  EXPECT_THROW(make_choice_items(ChoiceTask::next_word, kVerses, 0, 1), Error);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_eval_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::unique_ptr<model::Model> random_model(uint64_t seed, const std::string& path) {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_ctx = 96;
  model::write_random_model({.config = c, .seed = seed, .path = path});
  auto m = model::Model::load(path);
  std::remove(path.c_str());  // mapped: the open mapping keeps the data
  return m;
}

// The candidate the model prefers, computed independently of the scorer: float64 log-
// softmax of the model's logits over context + candidate, summed over the candidate's
// tokens (per byte of the candidate for verse endings).
int preferred_candidate(const model::Model& m, ChoiceTask task, const ChoiceItem& item) {
  const auto& tok = m.tokenizer();
  const std::vector<int32_t> ctx = tok.encode(item.context, {.add_special = false});
  const int64_t V = m.config().n_vocab;
  int best = -1;
  double best_score = -INFINITY;
  for (size_t c = 0; c < item.candidates.size(); ++c) {
    std::vector<int32_t> seq = ctx;
    const std::vector<int32_t> cand = tok.encode(item.candidates[c], {.add_special = false});
    seq.insert(seq.end(), cand.begin(), cand.end());
    EXPECT_LE(static_cast<int64_t>(seq.size()), m.config().n_ctx);  // no context cut: scored whole
    model::Session s(m, {.n_ctx = m.config().n_ctx, .batch = std::min<int64_t>(m.config().n_ctx, 256)});
    const auto logits = s.forward(seq, /*all_logits=*/true);
    double score = 0;
    for (size_t i = 0; i < cand.size(); ++i) {
      const float* row = logits.data() + (ctx.size() - 1 + i) * static_cast<size_t>(V);
      double mx = -INFINITY, sum = 0;
      for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(row[v]));
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
      score += static_cast<double>(row[cand[i]]) - mx - std::log(sum);
    }
    if (task == ChoiceTask::verse_ending) score /= static_cast<double>(item.candidates[c].size());
    if (score > best_score) best_score = score, best = static_cast<int>(c);
  }
  return best;
}

// The scorer counts an item correct exactly when the model's preferred candidate is the
// answer: with every answer moved to the preferred candidate it must score all items,
// moved away from it none, and on the real items the independent count.
TEST(ChoiceTasks, ScoringCountsEveryItem) {
  const auto m = random_model(3, temp_path("a.gguf"));
  for (auto task : {ChoiceTask::next_word, ChoiceTask::verse_ending}) {
    const auto items = make_choice_items(task, kVerses, 8, 2);
    auto right = items, wrong = items;
    int64_t agree = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const int p = preferred_candidate(*m, task, items[i]);
      ASSERT_GE(p, 0);
      right[i].answer = p;
      wrong[i].answer = (p + 1) % static_cast<int>(items[i].candidates.size());
      agree += p == items[i].answer;
    }
    const ChoiceResult r = score_choice_items(*m, task, items);
    EXPECT_EQ(r.items, 8);
    EXPECT_EQ(r.correct, agree);
    EXPECT_EQ(score_choice_items(*m, task, right).correct, 8);
    EXPECT_EQ(score_choice_items(*m, task, wrong).correct, 0);
  }
}

TEST(SampledKl, ZeroAgainstItselfPositiveAgainstAnother) {
  const auto a = random_model(3, temp_path("a.gguf")), b = random_model(4, temp_path("b.gguf"));
  std::vector<int32_t> prompts;
  for (int i = 0; i < 200; ++i) prompts.push_back(8 + (i * 37) % 400);
  const SampledKlParams p{.sequences = 6, .prompt_len = 10, .gen_len = 12, .seed = 5};
  const SampledKl self = sampled_kl(*a, *a, prompts, p);
  EXPECT_EQ(self.tokens, 72);
  EXPECT_NEAR(self.reverse_kl, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(self.model_nll, self.reference_nll);
  const SampledKl other = sampled_kl(*a, *b, prompts, p);
  EXPECT_GT(other.reverse_kl, 0.01);
  EXPECT_DOUBLE_EQ(other.model_nll, self.model_nll);  // same samples: the model and seed decide them
  EXPECT_THROW(sampled_kl(*a, *b, prompts, {.sequences = 1, .prompt_len = 80, .gen_len = 40}), Error);
}

}  // namespace
}  // namespace squeeze::eval
