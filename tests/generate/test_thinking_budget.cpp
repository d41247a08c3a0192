// tests/generate/test_thinking_budget.cpp — the per-turn thinking budget on a real byte-level
// BPE vocabulary with Muse Glimmer's specials: tokens pass through in order under the
// budget; at the budget the thinking closes at the last word boundary (the unfinished
// word taken back), the closing tokens follow, and `self` cannot be reopened; one counter
// for several thinking messages; budget 0 masks `self` from the start.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/muse_tokenizer.h"
#include "generate/thinking_budget.h"
#include "text/tokenizer.h"
#include "train/corpus.h"

using namespace squeeze;
using generate::ThinkingBudget;

namespace {

const text::Tokenizer& tokenizer() {
  static const text::Tokenizer tok = muse_test_tokenizer(
      "assistant to=self to=user the cat sat on the mat; carry 1, write 7. counting letters one by one. ", 40, 400);
  return tok;
}

std::vector<int32_t> encode(const std::string& s) { return tokenizer().encode(s, {.add_special = false, .parse_special = true}); }

struct Pushed {
  std::vector<int32_t> emitted, forced;
  int64_t taken_back = -1;  // at the close; -1: no close
  size_t closed_at = 0;     // index of the sampled token that closed
};

// Pushes `tokens` (as if sampled) until a close; what was emitted, taken back and forced.
Pushed push_all(ThinkingBudget& b, const std::vector<int32_t>& tokens) {
  Pushed r;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto step = b.push(tokens[i]);
    r.emitted.insert(r.emitted.end(), step.emit.begin(), step.emit.end());
    if (step.close) {
      r.taken_back = step.take_back;
      r.forced = step.force;
      r.closed_at = i;
      return r;
    }
  }
  const auto rest = b.finish();
  r.emitted.insert(r.emitted.end(), rest.begin(), rest.end());
  return r;
}

std::string text_of(const std::vector<int32_t>& ids) { return tokenizer().decode(ids); }

}  // namespace

TEST(ThinkingBudget, UnderBudgetEverythingPassesInOrder) {
  const auto turn = encode(" to=self<|message|>the cat sat on the mat<|eom|><|start|>assistant to=user<|message|>7<|eot|>");
  ThinkingBudget b(tokenizer(), 1000);
  const Pushed r = push_all(b, turn);
  EXPECT_EQ(r.taken_back, -1);
  EXPECT_EQ(r.emitted, turn);
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("the cat sat on the mat").size()));
  EXPECT_FALSE(b.forced_close());
}

TEST(ThinkingBudget, ClosesAtTheLastWordBoundaryAtOrBeforeTheBudget) {
  const std::string thinking = "counting letters one by one carry write";
  const auto head = encode(" to=self<|message|>");
  const auto body = encode(thinking);
  ASSERT_GT(body.size(), 8u);
  for (int64_t budget = 1; budget < static_cast<int64_t>(body.size()); ++budget) {
    ThinkingBudget b(tokenizer(), budget);
    std::vector<int32_t> turn = head;
    turn.insert(turn.end(), body.begin(), body.end());
    const Pushed r = push_all(b, turn);
    ASSERT_GE(r.taken_back, 0) << "budget " << budget;
    EXPECT_TRUE(b.forced_close());
    // What was emitted of the thinking: whole words of it, no more tokens than the budget.
    const std::vector<int32_t> kept(r.emitted.begin() + static_cast<ptrdiff_t>(head.size()), r.emitted.end());
    EXPECT_LE(static_cast<int64_t>(kept.size()), budget);
    EXPECT_EQ(static_cast<int64_t>(kept.size()), b.thinking_tokens());
    const std::string shown = text_of(kept);
    EXPECT_EQ(thinking.compare(0, shown.size(), shown), 0) << shown;
    EXPECT_TRUE(shown.empty() || shown.size() == thinking.size() || thinking[shown.size()] == ' ') << "budget " << budget << ": '" << shown << "'";
    // Everything run after the kept tokens is taken back: the budget's tokens past the
    // boundary (the sampled one that closed was never run).
    EXPECT_EQ(static_cast<int64_t>(r.closed_at - head.size()) - static_cast<int64_t>(kept.size()), r.taken_back);
    // The close: end the message, start the next.
    EXPECT_EQ(r.forced, encode("<|eom|><|start|>assistant"));
  }
}

// Whether any token of `header`, pushed in turn, is masked when its turn comes.
bool header_masked(ThinkingBudget b, const std::string& header) {
  for (int32_t t : encode(header)) {
    std::vector<float> l(static_cast<size_t>(tokenizer().n_vocab()), 0.0f);
    b.mask(l);
    if (std::isinf(l[static_cast<size_t>(t)])) return true;
    b.push(t);
  }
  return false;
}

TEST(ThinkingBudget, SelfCannotBeReopenedAfterTheClose) {
  ThinkingBudget b(tokenizer(), 2);
  EXPECT_FALSE(header_masked(b, " to=self<|message|>"));  // before: thinking may start
  push_all(b, encode(" to=self<|message|>counting letters one by one"));
  ASSERT_TRUE(b.forced_close());
  for (int32_t t : encode("<|eom|><|start|>assistant")) b.push(t);
  EXPECT_TRUE(header_masked(b, " to=self<|message|>"));
  EXPECT_FALSE(header_masked(b, " to=user<|message|>"));
  // A header that already names self cannot be finished by <|message|>.
  ThinkingBudget spent(tokenizer(), 0);
  for (int32_t t : encode(" to=sel")) spent.push(t);
  EXPECT_TRUE(header_masked(spent, "f<|message|>"));
}

TEST(ThinkingBudget, OneCounterForEveryThinkingMessageOfTheTurn) {
  ThinkingBudget b(tokenizer(), 6);
  const auto first = encode(" to=self<|message|>the cat<|eom|><|start|>assistant");
  const Pushed r1 = push_all(b, first);
  EXPECT_EQ(r1.taken_back, -1);
  const int64_t used = b.thinking_tokens();
  EXPECT_EQ(used, static_cast<int64_t>(encode("the cat").size()));
  const Pushed r2 = push_all(b, encode(" to=self<|message|>counting letters one by one carry write"));
  ASSERT_GE(r2.taken_back, 0);
  EXPECT_LE(b.thinking_tokens(), 6);
}

TEST(ThinkingBudget, ZeroBudgetMasksSelfFromTheStart) {
  ThinkingBudget b(tokenizer(), 0);
  std::vector<float> l(static_cast<size_t>(tokenizer().n_vocab()), 0.0f);
  for (int32_t t : encode(" to=")) b.push(t);
  b.mask(l);
  for (int32_t t : encode("self")) EXPECT_TRUE(std::isinf(l[static_cast<size_t>(t)]));
  for (int32_t t : encode("user")) EXPECT_FALSE(std::isinf(l[static_cast<size_t>(t)]));
}

TEST(ThinkingBudget, RefusesVocabulariesWithoutTheFraming) {
  std::string corpus(200, 'a');
  text::TokenizerData data = train::train_tokenizer(corpus + " hello world", 300);
  const text::Tokenizer plain(data);
  EXPECT_FALSE(ThinkingBudget::supports(plain));
  EXPECT_THROW(ThinkingBudget(plain, 5), std::exception);
  EXPECT_THROW(ThinkingBudget(tokenizer(), -1), std::exception);
}

TEST(ReasoningLevel, NamesAndTheLowestLevel) {
  EXPECT_EQ(generate::reasoning_level("low"), "low");
  EXPECT_EQ(generate::reasoning_level("xhigh"), "xhigh");
  EXPECT_EQ(generate::reasoning_level("none"), "low");  // never the template's default
  EXPECT_EQ(generate::reasoning_level("minimal"), "low");
  EXPECT_FALSE(generate::reasoning_level("max").has_value());
}

TEST(ThinkingBudget, SharesOneVocabularyAndRestrictsOnlyWhileASelfHeaderIsPossible) {
  const auto vocab = std::make_shared<const generate::ThinkingVocab>(tokenizer());
  ThinkingBudget spent(vocab, 0), open(vocab, 5);
  EXPECT_TRUE(spent.restricts());   // header, budget 0
  EXPECT_FALSE(open.restricts());   // thinking still allowed
  for (int32_t t : encode(" to=user<|message|>")) spent.push(t);
  EXPECT_FALSE(spent.restricts());  // in the answer: nothing to mask
}

TEST(ReasoningBudgets, LevelsAndDefaults) {
  generate::ReasoningBudgets b;
  b.tokens = {1, 2, 3, 4};
  EXPECT_EQ(b.for_level("none"), 1);
  EXPECT_EQ(b.for_level("minimal"), 1);
  EXPECT_EQ(b.for_level("low"), 1);
  EXPECT_EQ(b.for_level("medium"), 2);
  EXPECT_EQ(b.for_level("high"), 3);
  EXPECT_EQ(b.for_level("xhigh"), 4);
  EXPECT_THROW(b.for_level("max"), std::exception);
}
