// tests/tools/test_reasoning_eval.cpp — eval --reasoning's own pieces: the independent
// count of thinking tokens in a generated turn, and the bootstrap interval.
#include <gtest/gtest.h>

#include <string>

#include "common/muse_tokenizer.h"
#include "reasoning_eval.h"
#include "text/tokenizer.h"

using namespace squeeze;

namespace {
const text::Tokenizer& tokenizer() {
  static const text::Tokenizer tok =
      muse_test_tokenizer("assistant to=self to=user one two three four; 7 + 8 = 15. ", 30, 350);
  return tok;
}
std::vector<int32_t> encode(const std::string& s) { return tokenizer().encode(s, {.add_special = false, .parse_special = true}); }
}  // namespace

TEST(ReasoningEval, CountsOnlyTheBodiesOfSelfMessages) {
  const auto a = encode("one two"), b = encode("7 + 8 = 15.");
  const auto turn = encode(" to=self<|message|>one two<|eom|><|start|>assistant to=user<|message|>15<|eom|>"
                           "<|start|>assistant to=self<|message|>7 + 8 = 15.<|eot|>");
  EXPECT_EQ(cli::count_thinking_tokens(turn, tokenizer()), static_cast<int64_t>(a.size() + b.size()));
  EXPECT_EQ(cli::count_thinking_tokens(encode(" to=user<|message|>one two three<|eot|>"), tokenizer()), 0);
  EXPECT_EQ(cli::count_thinking_tokens(encode(" to=self<|message|>one two three"), tokenizer()),
            static_cast<int64_t>(encode("one two three").size()));  // cut off mid-thought: still counted
}

TEST(ReasoningEval, BootstrapIntervalCoversTheMean) {
  std::vector<double> v;
  for (int i = 0; i < 400; ++i) v.push_back(i % 4 == 0 ? 1.0 : 0.0);  // mean 0.25
  const auto [lo, hi] = cli::bootstrap_interval(v, 2000, 5);
  EXPECT_LT(lo, 0.25);
  EXPECT_GT(hi, 0.25);
  EXPECT_GT(lo, 0.18);  // about ±4.2 points at n = 400
  EXPECT_LT(hi, 0.32);
  const std::vector<double> same(50, 1.0);
  EXPECT_EQ(cli::bootstrap_interval(same, 500, 1), std::make_pair(1.0, 1.0));
  EXPECT_THROW(cli::bootstrap_interval({}, 10, 1), std::exception);
}
