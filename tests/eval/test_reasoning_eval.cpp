// tests/eval/test_reasoning_eval.cpp — the reasoning evaluation's own pieces: the independent
// count of thinking tokens in a generated turn, the bootstrap interval, the problems file
// and the report (which settings it pairs, accuracy by family).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/muse_tokenizer.h"
#include "common/thrown_message.h"
#include "eval/reasoning_eval.h"
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
  EXPECT_EQ(eval::count_thinking_tokens(turn, tokenizer()), static_cast<int64_t>(a.size() + b.size()));
  EXPECT_EQ(eval::count_thinking_tokens(encode(" to=user<|message|>one two three<|eot|>"), tokenizer()), 0);
  EXPECT_EQ(eval::count_thinking_tokens(encode(" to=self<|message|>one two three"), tokenizer()),
            static_cast<int64_t>(encode("one two three").size()));  // cut off mid-thought: still counted
}

TEST(ReasoningEval, BootstrapIntervalCoversTheMean) {
  std::vector<double> v;
  for (int i = 0; i < 400; ++i) v.push_back(i % 4 == 0 ? 1.0 : 0.0);  // mean 0.25
  const auto [lo, hi] = eval::bootstrap_interval(v, 2000, 5);
  EXPECT_LT(lo, 0.25);
  EXPECT_GT(hi, 0.25);
  EXPECT_GT(lo, 0.18);  // about ±4.2 points at n = 400
  EXPECT_LT(hi, 0.32);
  const std::vector<double> same(50, 1.0);
  EXPECT_EQ(eval::bootstrap_interval(same, 500, 1), std::make_pair(1.0, 1.0));
  EXPECT_THROW(eval::bootstrap_interval({}, 10, 1), std::exception);
}

namespace {
eval::ReasoningResult result(const std::string& name, int64_t budget, const std::vector<int>& correct,
                             const std::vector<int64_t>& thinking) {
  eval::ReasoningResult r{.setting = {name, name, budget}, .outcomes = {}};
  for (size_t i = 0; i < correct.size(); ++i)
    r.outcomes.push_back({.correct = correct[i] != 0, .answered = true, .hit = thinking[i] >= budget,
                          .over = false, .thinking = thinking[i]});
  return r;
}
}  // namespace

TEST(ReasoningEval, ReportPairsNeighbourLevelsAndTheTopAgainstNoThinking) {
  const std::vector<eval::ReasoningProblem> problems = {{"sum", "q1", "1"}, {"sum", "q2", "2"}, {"order", "q3", "3"},
                                                        {"order", "q4", "4"}};
  const std::vector<eval::ReasoningResult> results = {result("none", 0, {0, 0, 1, 0}, {0, 0, 0, 0}),
                                                      result("low", 8, {1, 0, 1, 0}, {8, 3, 8, 2}),
                                                      result("high", 32, {1, 1, 1, 1}, {10, 31, 32, 4})};
  const chat::Json levels = eval::reasoning_report(problems, results, {.resamples = 200, .seed = 3});
  ASSERT_EQ(levels["settings"].size(), 3u);
  EXPECT_DOUBLE_EQ(levels["settings"][1]["accuracy"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(levels["settings"][1]["accuracy_by_family"]["sum"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(levels["settings"][0]["accuracy_by_family"]["order"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(levels["settings"][2]["mean_thinking_tokens"].get<double>(), 77.0 / 4);
  EXPECT_EQ(levels["settings"][1]["budget_hits"].get<int64_t>(), 2);
  // Levels: low → high, then none → high (the baseline is not paired with low).
  ASSERT_EQ(levels["pairs"].size(), 2u);
  EXPECT_EQ(levels["pairs"][0]["from"], "low");
  EXPECT_EQ(levels["pairs"][0]["to"], "high");
  EXPECT_DOUBLE_EQ(levels["pairs"][0]["gain"].get<double>(), 0.5);
  EXPECT_EQ(levels["pairs"][1]["from"], "none");
  EXPECT_DOUBLE_EQ(levels["pairs"][1]["gain"].get<double>(), 0.75);
  // A sweep: every neighbour, from the first.
  const chat::Json sweep = eval::reasoning_report(problems, results, {.resamples = 200, .seed = 3, .sweep = true});
  ASSERT_EQ(sweep["pairs"].size(), 2u);
  EXPECT_EQ(sweep["pairs"][0]["from"], "none");
  EXPECT_EQ(sweep["pairs"][0]["to"], "low");
  // Outcomes that do not match the problems are an error, not a wrong table.
  const std::vector<eval::ReasoningProblem> three(problems.begin(), problems.begin() + 3);
  EXPECT_NE(thrown_message([&] { eval::reasoning_report(three, results, {}); }).find("4 outcomes for 3 problems"),
            std::string::npos);
}

TEST(ReasoningEval, ProblemsFileErrorsNameTheLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("squeeze_reasoning_" + std::to_string(::getpid()) + ".jsonl")).string();
  const auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("{\"question\": \"1+1\", \"answer\": \"2\", \"family\": \"sum\"}\n\n{\"question\": \"a\", \"answer\": \"b\"}\n");
  const auto problems = eval::read_reasoning_problems(path, 0);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].family, "sum");
  EXPECT_EQ(problems[1].family, "all");
  EXPECT_EQ(eval::read_reasoning_problems(path, 1).size(), 1u);
  write("{\"question\": \"q\", \"answer\": \"a\"}\n{\"question\": 3, \"answer\": \"a\"}\n");
  EXPECT_NE(thrown_message([&] { eval::read_reasoning_problems(path, 0); }).find(":2: expected an object"), std::string::npos);
  write("{\"question\": \"q\", \"answer\": \"a\", \"family\": [1]}\n");
  EXPECT_NE(thrown_message([&] { eval::read_reasoning_problems(path, 0); }).find(":1: \"family\" must be a string"),
            std::string::npos);
  write("{\"question\": \"q\", \"answer\": ");
  EXPECT_NE(thrown_message([&] { eval::read_reasoning_problems(path, 0); }).find(":1: "), std::string::npos);
  write("\n");
  EXPECT_NE(thrown_message([&] { eval::read_reasoning_problems(path, 0); }).find("no problems"), std::string::npos);
  std::filesystem::remove(path);
}
