// tests/generate/test_think_tag_budget.cpp — the thinking budget over Qwen3's framing:
// `<think>` … `</think>` at the start of the turn, the tags user-defined text tokens. Under
// the budget everything passes; at the budget the thinking closes at the last word boundary
// with "\n</think>\n\n" run in place of the unfinished word; `<think>` cannot reopen; budget
// 0 masks it from the start; the model's own close ends the counting.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "generate/thinking_budget.h"
#include "text/tokenizer.h"
#include "train/corpus.h"

using namespace squeeze;
using generate::ThinkingBudget;
using generate::ThinkingVocab;

namespace {

// squeeze's trained vocabulary reserves <think> and </think> (ids 3 and 4) as control
// tokens; Qwen3's are user-defined, as here.
const text::Tokenizer& tokenizer() {
  static const text::Tokenizer tok = [] {
    std::string corpus;
    for (int i = 0; i < 40; ++i) corpus += "counting letters one by one; the cat sat on the mat.\n\n";
    text::TokenizerData data = train::train_tokenizer(corpus, 400);
    EXPECT_EQ(data.tokens[3], "<think>");
    EXPECT_EQ(data.tokens[4], "</think>");
    data.token_types.resize(data.tokens.size(), static_cast<int32_t>(text::TokenType::normal));
    data.token_types[3] = data.token_types[4] = static_cast<int32_t>(text::TokenType::user_defined);
    return text::Tokenizer(data);
  }();
  return tok;
}

std::vector<int32_t> encode(const std::string& s) { return tokenizer().encode(s, {.add_special = false, .parse_special = true}); }

}  // namespace

TEST(ThinkTagBudget, TheVocabularyIsQwensFraming) {
  ASSERT_TRUE(ThinkingVocab::supports(tokenizer()));
  EXPECT_FALSE(ThinkingVocab::has_muse_framing(tokenizer()));
  const ThinkingVocab v(tokenizer());
  EXPECT_EQ(v.kind, ThinkingVocab::Kind::think_tags);
  EXPECT_EQ(tokenizer().decode(v.close), "\n</think>\n\n");
}

TEST(ThinkTagBudget, UnderBudgetEverythingPassesAndTheModelsCloseEndsTheCount) {
  const auto turn = encode("<think>\nthe cat sat\n</think>\n\nthe mat");
  ThinkingBudget b(tokenizer(), 1000);
  std::vector<int32_t> out;
  for (int32_t t : turn) {
    const auto step = b.push(t);
    ASSERT_FALSE(step.close);
    out.insert(out.end(), step.emit.begin(), step.emit.end());
  }
  const auto rest = b.finish();
  out.insert(out.end(), rest.begin(), rest.end());
  EXPECT_EQ(out, turn);
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("\nthe cat sat\n").size()));
  // After the close the answer is not thinking: nothing is masked, nothing counted.
  std::vector<float> l(static_cast<size_t>(tokenizer().n_vocab()), 0.0f);
  b.mask(l);
  for (float x : l) ASSERT_FALSE(std::isinf(x));
}

TEST(ThinkTagBudget, ClosesAtAWordBoundaryWithTheClosingTag) {
  const std::string thinking = "counting letters one by one the cat sat";
  const auto body = encode(thinking);
  const int32_t open = *tokenizer().find_token("<think>");
  for (int64_t budget = 1; budget < static_cast<int64_t>(body.size()); ++budget) {
    ThinkingBudget b(tokenizer(), budget);
    std::vector<int32_t> emitted, forced;
    int64_t taken_back = -1;
    size_t closed_at = 0;
    auto step = b.push(open);
    emitted.insert(emitted.end(), step.emit.begin(), step.emit.end());
    for (size_t i = 0; i < body.size() && taken_back < 0; ++i) {
      step = b.push(body[i]);
      emitted.insert(emitted.end(), step.emit.begin(), step.emit.end());
      if (step.close) taken_back = step.take_back, forced = step.force, closed_at = i;
    }
    ASSERT_GE(taken_back, 0) << "budget " << budget;
    EXPECT_TRUE(b.forced_close());
    const std::vector<int32_t> kept(emitted.begin() + 1, emitted.end());
    EXPECT_LE(static_cast<int64_t>(kept.size()), budget);
    const std::string shown = tokenizer().decode(kept);
    EXPECT_EQ(thinking.compare(0, shown.size(), shown), 0) << shown;
    EXPECT_TRUE(shown.empty() || thinking[shown.size()] == ' ') << "budget " << budget << ": '" << shown << "'";
    EXPECT_EQ(static_cast<int64_t>(closed_at) - static_cast<int64_t>(kept.size()), taken_back);
    EXPECT_EQ(tokenizer().decode(forced), "\n</think>\n\n");
    // The answer follows; <think> may not open again.
    for (int32_t t : forced) b.push(t);
    std::vector<float> l(static_cast<size_t>(tokenizer().n_vocab()), 0.0f);
    b.mask(l);
    EXPECT_FALSE(std::isinf(l[static_cast<size_t>(open)])) << "the answer has begun: nothing left to mask";
  }
}

TEST(ThinkTagBudget, ZeroBudgetMasksTheOpeningTag) {
  ThinkingBudget b(tokenizer(), 0);
  std::vector<float> l(static_cast<size_t>(tokenizer().n_vocab()), 0.0f);
  ASSERT_TRUE(b.restricts());
  b.mask(l);
  const int32_t open = *tokenizer().find_token("<think>");
  for (size_t id = 0; id < l.size(); ++id) EXPECT_EQ(std::isinf(l[id]), static_cast<int32_t>(id) == open) << id;
  b.push(encode("the")[0]);  // the answer begins: nothing more to restrict
  EXPECT_FALSE(b.restricts());
}

// A template that pre-fills `<think>` (the prompt ends inside the thinking): the turn's
// first token is thinking, counted from there and closed at the budget; with a budget of 0
// the first token is already over it, so the close runs in its place.
TEST(ThinkTagBudget, StartsInsideAPrefilledThinking) {
  const auto body = encode("counting letters one by one the cat sat");
  for (const int64_t budget : {int64_t{0}, int64_t{3}}) {
    ThinkingBudget b(tokenizer(), budget);
    b.start_in_thinking();
    EXPECT_FALSE(b.restricts());
    std::vector<int32_t> kept;
    bool closed = false;
    for (size_t i = 0; i < body.size() && !closed; ++i) {
      const auto step = b.push(body[i]);
      kept.insert(kept.end(), step.emit.begin(), step.emit.end());
      if (step.close) {
        closed = true;
        EXPECT_EQ(tokenizer().decode(step.force), "\n</think>\n\n");
        if (budget == 0) EXPECT_EQ(i, 0u) << "budget 0 closes before the first thinking token";
      }
    }
    EXPECT_TRUE(closed) << "budget " << budget;
    EXPECT_TRUE(b.forced_close());
    EXPECT_LE(static_cast<int64_t>(kept.size()), budget);
    EXPECT_LE(b.thinking_tokens(), budget);
  }
  // Only before the first token, and only for <think> framing.
  ThinkingBudget late(tokenizer(), 5);
  late.push(encode("the")[0]);
  EXPECT_THROW(late.start_in_thinking(), Error);
}
