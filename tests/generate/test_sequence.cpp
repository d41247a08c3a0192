// tests/generate/test_sequence.cpp — generate::Sequence on synthetic logits rows (each row
// peaked at a chosen token, sampled greedily): the verify-walk keeps the drafts the sampler
// picks and feeds its own token, a stop inside the walk is not kept, the context and the
// token limit end a sequence where they should, banned tokens and logit biases are never
// sampled, drafts leave room for the target's token, and a thinking budget's close takes the
// unfinished word back and feeds the closing tokens in one step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/muse_tokenizer.h"
#include "generate/sequence.h"
#include "text/tokenizer.h"

using namespace squeeze;
using generate::Finish;
using generate::Sequence;

namespace {

const text::Tokenizer& seq_tokenizer() {
  static const text::Tokenizer tok =
      muse_test_tokenizer("assistant to=self to=user one two three four five six seven eight nine. ", 40, 400);
  return tok;
}

std::vector<int32_t> seq_encode(const std::string& s) {
  return seq_tokenizer().encode(s, {.add_special = false, .parse_special = true});
}

// Rows peaked at each token in turn: a greedy sampler picks exactly these.
std::vector<float> peaked_rows(const std::vector<int32_t>& picks) {
  const auto V = static_cast<size_t>(seq_tokenizer().n_vocab());
  std::vector<float> rows(picks.size() * V);
  for (size_t r = 0; r < picks.size(); ++r) {
    for (size_t i = 0; i < V; ++i) rows[r * V + i] = 0.001f * static_cast<float>(i % 7);  // not all equal
    rows[r * V + static_cast<size_t>(picks[r])] = 10.0f;
  }
  return rows;
}

Sequence greedy(generate::SequenceParams params, std::unique_ptr<generate::ThinkingBudget> thinking = nullptr,
                std::span<const int32_t> banned = {}) {
  return Sequence(seq_tokenizer(), text::Sampler({.temperature = 0}), std::move(params), std::move(thinking), banned);
}

std::string seq_text(const std::vector<int32_t>& ids) { return seq_tokenizer().decode(ids); }

TEST(Sequence, TheWalkKeepsTheDraftsTheSamplerPicksAndFeedsItsOwnToken) {
  const auto t = seq_encode(" one two three four five");
  ASSERT_GE(t.size(), 5u);
  Sequence seq = greedy({.n_ctx = 100});
  seq.start(7, seq_encode(" six"));
  auto step = seq.advance(peaked_rows({t[0]}), {});
  EXPECT_EQ(step.keep, 0);  // the prompt was counted by start()
  EXPECT_EQ(seq.feed(), std::vector<int32_t>{t[0]});
  EXPECT_EQ(seq.position(), 7);
  // Ran [t0, d1, d2, d3]; the rows pick d1, d2, then t4 instead of d3.
  const std::vector<int32_t> drafts = {t[1], t[2], t[3]};
  std::string text = step.text;
  step = seq.advance(peaked_rows({t[1], t[2], t[4], t[0]}), drafts);
  text += step.text;
  EXPECT_EQ(step.keep, 3);  // t0, d1, d2
  EXPECT_EQ(step.sampled, 3);
  EXPECT_EQ(step.take_back, 0);
  EXPECT_EQ(seq.position(), 10);
  EXPECT_EQ(seq.feed(), std::vector<int32_t>{t[4]});
  EXPECT_FALSE(seq.finished());
  text += seq.flush();
  EXPECT_EQ(text, seq_text({t[0], t[1], t[2], t[4]}));
}

TEST(Sequence, AStopInsideTheWalkIsNotKeptAndNotPrinted) {
  const auto t = seq_encode(" one two three");
  const int32_t eos = seq_tokenizer().find_token("<|eot|>").value();
  Sequence seq = greedy({.stop = {.eos_ids = {eos}}, .n_ctx = 100});
  seq.start(3, {});
  std::string text = seq.advance(peaked_rows({t[0]}), {}).text;
  const auto step = seq.advance(peaked_rows({t[1], eos, t[2]}), std::vector<int32_t>{t[1], eos});
  text += step.text;
  EXPECT_TRUE(seq.finished());
  EXPECT_EQ(seq.finish_reason(), Finish::stop);
  EXPECT_EQ(step.keep, 2);  // t0 and the draft t1; the end-of-turn token is never run
  EXPECT_TRUE(seq.feed().empty());
  EXPECT_EQ(text + seq.flush(), seq_text({t[0], t[1]}));
}

TEST(Sequence, AFullContextEndsAfterTheTokenSampledFromTheLastPosition) {
  const auto t = seq_encode(" one two");
  Sequence seq = greedy({.n_ctx = 4});
  seq.start(3, {});
  seq.advance(peaked_rows({t[0]}), {});
  EXPECT_EQ(seq.draft_room(), 0);  // 3 cached + t0 leaves no room for a draft and the target's token
  const auto step = seq.advance(peaked_rows({t[1]}), {});  // t0 fills position 3: the cache is full
  EXPECT_EQ(step.keep, 1);
  EXPECT_EQ(seq.position(), 4);
  EXPECT_EQ(seq.finish_reason(), Finish::context_full);
  EXPECT_EQ(step.text + seq.flush(), seq_text({t[1]}));  // sampled, printed, never run
  EXPECT_THROW(seq.advance(peaked_rows({t[0]}), {}), std::exception);
}

TEST(Sequence, TheTokenLimitCountsReleasedTokensAndDraftsLeaveRoomForIt) {
  const auto t = seq_encode(" one two three four");
  Sequence seq = greedy({.stop = {.max_tokens = 3}, .n_ctx = 100});
  seq.start(2, {});
  seq.advance(peaked_rows({t[0]}), {});
  EXPECT_EQ(seq.draft_room(), 1);  // 2 left: one draft and the target's own token
  const auto step = seq.advance(peaked_rows({t[1], t[2]}), std::vector<int32_t>{t[1]});
  EXPECT_EQ(seq.n_tokens(), 3);
  EXPECT_EQ(seq.finish_reason(), Finish::max_tokens);
  EXPECT_EQ(step.keep, 2);

  Sequence none = greedy({.stop = {.max_tokens = 0}, .n_ctx = 100});
  none.start(2, {});
  EXPECT_EQ(none.finish_reason(), Finish::max_tokens);  // nothing to generate: no sample at all
}

TEST(Sequence, BannedTokensAndNegativeHundredBiasesAreNeverSampled) {
  const auto t = seq_encode(" one two three");
  const auto V = static_cast<size_t>(seq_tokenizer().n_vocab());
  std::vector<float> row(V, 0.0f);
  row[static_cast<size_t>(t[0])] = 10.0f, row[static_cast<size_t>(t[1])] = 9.0f, row[static_cast<size_t>(t[2])] = 8.0f;
  const std::vector<int32_t> banned = {t[0]};
  Sequence seq = greedy({.n_ctx = 100, .top_logprobs = 2, .logit_bias = {{t[1], -100.0f}}}, nullptr, banned);
  seq.start(1, {});
  const auto step = seq.advance(row, {});
  EXPECT_EQ(seq.feed(), std::vector<int32_t>{t[2]});
  ASSERT_EQ(step.logprobs.size(), 1u);
  EXPECT_EQ(step.logprobs[0].id, t[2]);
  ASSERT_EQ(step.logprobs[0].top.size(), 2u);
  EXPECT_EQ(step.logprobs[0].top[0].id, t[2]);  // the banned and biased tokens are out of the distribution
  // log-softmax without the two removed tokens: 8 − log(e^8 + (V − 3) · e^0)
  const double want = 8.0 - std::log(std::exp(8.0) + static_cast<double>(V - 3));
  EXPECT_NEAR(step.logprobs[0].logprob, want, 1e-4);
}

TEST(Sequence, ABudgetCloseTakesTheWordBackAndFeedsTheCloseInOneStep) {
  const auto& tok = seq_tokenizer();
  const auto header = seq_encode(" to=self<|message|>");
  // " one" and " two" spend the budget; "three" glued to " two" continues its word, so the
  // close takes " two" back.
  const auto words = seq_encode(" one two"), glued = seq_encode("three");
  std::vector<int32_t> want = header;
  want.insert(want.end(), words.begin(), words.end());
  want.insert(want.end(), glued.begin(), glued.end());
  Sequence seq = greedy({.n_ctx = 200, .render_control = true},
                        std::make_unique<generate::ThinkingBudget>(tok, /*budget=*/2));
  seq.start(10, {});
  std::string text = seq.advance(peaked_rows({want[0]}), {}).text;
  int64_t position = 10;
  generate::Sequence::Step step;
  size_t i = 1;
  for (; i < want.size() && !seq.thinking()->forced_close(); ++i) {
    const size_t fed = seq.feed().size();
    step = seq.advance(peaked_rows({want[i]}), {});
    position += step.keep - step.take_back;
    ASSERT_EQ(static_cast<int64_t>(fed), step.keep);
    text += step.text;
  }
  ASSERT_TRUE(seq.thinking()->forced_close()) << text;
  EXPECT_EQ(step.take_back, 1);  // " two", run but never released
  EXPECT_EQ(text.find("two"), std::string::npos) << text;
  EXPECT_EQ(seq.position(), position);
  // The closing tokens are fed together, and nothing is drafted after them.
  const std::vector<int32_t> close = seq.feed();
  ASSERT_GE(close.size(), 3u);
  EXPECT_EQ(close[0], tok.find_token("<|eom|>").value());
  EXPECT_EQ(close[1], tok.find_token("<|start|>").value());
  EXPECT_EQ(seq.draft_room(), 0);
  EXPECT_NE(text.find("<|eom|><|start|>assistant"), std::string::npos) << text;  // released with the close
  // Their last row decides the next token; all of them stay cached.
  step = seq.advance(peaked_rows({seq_encode(" to=user")[0]}), {});
  EXPECT_EQ(step.keep, static_cast<int64_t>(close.size()));
  EXPECT_EQ(seq.position(), position + static_cast<int64_t>(close.size()));
  EXPECT_EQ(seq.thinking()->thinking_tokens(), 1);  // " one": the word taken back is not counted
}

}  // namespace
