// tests/generate/test_harmony_budget.cpp — the thinking budget under harmony's framing
// (gpt-oss: the thinking is the analysis channel) on a byte-level BPE vocabulary with
// harmony's specials: under the budget tokens pass in order; at the budget the analysis
// closes at the last word boundary and the close runs straight into the final channel;
// analysis cannot be reopened (a budget of 0 masks it from the start) while other channels
// and tool calls in the analysis channel stay open; one counter for the whole turn.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/harmony_tokenizer.h"
#include "generate/thinking_budget.h"

using namespace squeeze;
using generate::ThinkingBudget;

namespace {

const text::Tokenizer& tokenizer() {
  static const text::Tokenizer tok = harmony_test_tokenizer(
      "assistant analysis final commentary json to=functions.get_weather the cat sat on the mat; carry 1, write 7. "
      "counting letters one by one. ",
      40, 420);
  return tok;
}

std::vector<int32_t> encode(const std::string& s) {
  return tokenizer().encode(s, {.add_special = false, .parse_special = true});
}

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

const std::string kAnalysis = "<|channel|>analysis<|message|>";
const std::string kToFinal = "<|end|><|start|>assistant<|channel|>final<|message|>";

}  // namespace

TEST(HarmonyBudget, TheVocabularyIsHarmonys) {
  ASSERT_TRUE(ThinkingBudget::supports(tokenizer()));
  const generate::ThinkingVocab v(tokenizer());
  EXPECT_EQ(v.kind, generate::ThinkingVocab::Kind::harmony);
  EXPECT_EQ(v.close, encode(kToFinal));
  EXPECT_GE(v.constrain, 0);
}

TEST(HarmonyBudget, UnderBudgetEverythingPassesInOrder) {
  const auto turn = encode(kAnalysis + "the cat sat on the mat" + kToFinal + "7<|return|>");
  ThinkingBudget b(tokenizer(), 1000);
  const Pushed r = push_all(b, turn);
  EXPECT_EQ(r.taken_back, -1);
  EXPECT_EQ(r.emitted, turn);
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("the cat sat on the mat").size()));
  EXPECT_FALSE(b.forced_close());
}

TEST(HarmonyBudget, ClosesAtAWordBoundaryStraightIntoTheFinalChannel) {
  const std::string thinking = "counting letters one by one carry write";
  const auto head = encode(kAnalysis);
  const auto body = encode(thinking);
  ASSERT_GT(body.size(), 8u);
  for (int64_t budget = 1; budget < static_cast<int64_t>(body.size()); ++budget) {
    ThinkingBudget b(tokenizer(), budget);
    std::vector<int32_t> turn = head;
    turn.insert(turn.end(), body.begin(), body.end());
    const Pushed r = push_all(b, turn);
    ASSERT_GE(r.taken_back, 0) << "budget " << budget;
    EXPECT_TRUE(b.forced_close());
    const std::vector<int32_t> kept(r.emitted.begin() + static_cast<ptrdiff_t>(head.size()), r.emitted.end());
    EXPECT_LE(static_cast<int64_t>(kept.size()), budget);
    EXPECT_EQ(static_cast<int64_t>(kept.size()), b.thinking_tokens());
    const std::string shown = tokenizer().decode(kept);
    EXPECT_EQ(thinking.compare(0, shown.size(), shown), 0) << shown;
    EXPECT_TRUE(shown.empty() || thinking[shown.size()] == ' ') << "budget " << budget << ": '" << shown << "'";
    EXPECT_EQ(static_cast<int64_t>(r.closed_at - head.size()) - static_cast<int64_t>(kept.size()), r.taken_back);
    EXPECT_EQ(r.forced, encode(kToFinal));
    // The close left the model in the answer: nothing to mask, and the answer passes.
    EXPECT_FALSE(b.restricts());
    const auto answer = encode("7<|return|>");
    EXPECT_EQ(push_all(b, answer).emitted, answer);
  }
}

TEST(HarmonyBudget, AnalysisCannotBeReopenedAfterTheClose) {
  ThinkingBudget b(tokenizer(), 2);
  EXPECT_FALSE(header_masked(b, kAnalysis));  // before: thinking may start
  push_all(b, encode(kAnalysis + "counting letters one by one"));
  ASSERT_TRUE(b.forced_close());
  for (int32_t t : encode("7<|end|><|start|>assistant")) b.push(t);
  EXPECT_TRUE(b.restricts());
  EXPECT_TRUE(header_masked(b, kAnalysis));
  EXPECT_FALSE(header_masked(b, "<|channel|>final<|message|>"));
  EXPECT_FALSE(header_masked(b, "<|channel|>commentary<|message|>"));
  EXPECT_FALSE(header_masked(b, " to=functions.get_weather<|channel|>commentary json<|message|>"));
}

TEST(HarmonyBudget, ZeroBudgetMasksAnalysisButNotToolCallsInIt) {
  ThinkingBudget b(tokenizer(), 0);
  EXPECT_TRUE(b.restricts());
  EXPECT_TRUE(header_masked(b, kAnalysis));
  EXPECT_FALSE(header_masked(b, "<|channel|>final<|message|>"));
  EXPECT_FALSE(header_masked(b, " to=functions.get_weather<|channel|>analysis<|message|>"));
  // A header that already names analysis cannot be finished by <|message|>.
  ThinkingBudget spent(tokenizer(), 0);
  for (int32_t t : encode("<|channel|>analysis")) spent.push(t);
  EXPECT_TRUE(header_masked(spent, "<|message|>"));
}

TEST(HarmonyBudget, OneCounterForTheTurnAndCallsDoNotCount) {
  ThinkingBudget b(tokenizer(), 6);
  const Pushed r1 = push_all(b, encode(kAnalysis + "the cat<|end|><|start|>assistant"));
  EXPECT_EQ(r1.taken_back, -1);
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("the cat").size()));
  // A call (here in the commentary channel, its recipient before the channel) is not thinking.
  push_all(b, encode(" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"the mat\"}<|call|>"));
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("the cat").size()));
  ThinkingBudget c(tokenizer(), 6);
  push_all(c, encode(kAnalysis + "the cat<|end|><|start|>assistant"));
  const Pushed r2 = push_all(c, encode(kAnalysis + "counting letters one by one carry write"));
  ASSERT_GE(r2.taken_back, 0);
  EXPECT_LE(c.thinking_tokens(), 6);
}

TEST(HarmonyBudget, TheModelEndingItsAnalysisInPlaceIsFollowed) {
  // `<|channel|>` written inside the analysis (the output parser reads a new message there).
  ThinkingBudget b(tokenizer(), 1000);
  const auto turn = encode(kAnalysis + "the cat<|channel|>final<|message|>the mat<|return|>");
  EXPECT_EQ(push_all(b, turn).emitted, turn);
  EXPECT_EQ(b.thinking_tokens(), static_cast<int64_t>(encode("the cat").size()));
}

TEST(HarmonyBudget, AVocabularyWithOnlyTheFramingsCoreStillGetsABudget) {
  // <|start|> <|channel|> <|message|> <|return|> choose the framing; without <|end|> the close
  // starts the final message at <|start|> (where the output parser ends a message too).
  text::TokenizerData data = train::train_tokenizer(std::string(40, 'a') + " assistant final analysis ", 300);
  data.token_types.resize(data.tokens.size(), static_cast<int32_t>(text::TokenType::normal));
  const std::vector<std::string> core = {"<|start|>", "<|channel|>", "<|message|>", "<|return|>"};
  for (size_t i = 0; i < core.size(); ++i) {
    data.tokens[i] = core[i];
    data.token_types[i] = static_cast<int32_t>(text::TokenType::control);
  }
  const text::Tokenizer tok(data);
  ASSERT_TRUE(ThinkingBudget::supports(tok));
  const generate::ThinkingVocab v(tok);
  EXPECT_EQ(v.kind, generate::ThinkingVocab::Kind::harmony);
  EXPECT_EQ(v.end, -1);
  EXPECT_EQ(v.close, tok.encode("<|start|>assistant<|channel|>final<|message|>", {.add_special = false}));
  ThinkingBudget b(tok, 1);
  bool closed = false;
  for (int32_t t : tok.encode("<|channel|>analysis<|message|>aaaa aaaa aaaa", {.add_special = false}))
    closed = closed || b.push(t).close;
  EXPECT_TRUE(closed);
}
