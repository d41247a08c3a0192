// tests/train/test_reasoning_problems.cpp — the reasoning problem generator: levels by
// name, splits by hash (disjoint, roughly 90/5/5), problems reproducible from a seed, every
// trace ending in the answer and longer at higher effort, and the word cuts used for
// thinking cut short. (tests/python/test_reasoning_cli.py recomputes every answer from
// the question text.)
#include <gtest/gtest.h>

#include <set>

#include "train/reasoning_problems.h"

using namespace squeeze::train;

TEST(ReasoningProblems, EffortNames) {
  // (The level names' parsing, none / minimal → low, is generate::reasoning_level's, tested
  // in tests/serve/test_thinking_budget.cpp.)
  EXPECT_EQ(effort_name(Effort::medium), "medium");
}

TEST(ReasoningProblems, SplitsAreDisjointAndReproducible) {
  const auto train = make_reasoning_problems(Split::train, 1500, 3);
  const auto test = make_reasoning_problems(Split::test, 200, 3);
  std::set<std::string> q;
  for (const auto& p : train) {
    EXPECT_EQ(split_of(p.question), Split::train);
    q.insert(p.question);
  }
  EXPECT_EQ(q.size(), train.size());
  for (const auto& p : test) {
    EXPECT_EQ(split_of(p.question), Split::test);
    EXPECT_EQ(q.count(p.question), 0u);
  }
  const auto again = make_reasoning_problems(Split::test, 200, 3);
  for (size_t i = 0; i < test.size(); ++i) EXPECT_EQ(test[i].question, again[i].question);
  // The hash spreads questions about 90 / 5 / 5.
  squeeze::text::Rng rng(9);
  int64_t held = 0;
  for (int i = 0; i < 4000; ++i)
    held += split_of(make_reasoning_problem(rng, static_cast<size_t>(i % 4), 1 + i % 4).question) != Split::train;
  EXPECT_GT(held, 4000 * 0.06);
  EXPECT_LT(held, 4000 * 0.14);
}

TEST(ReasoningProblems, TracesEndInTheAnswerAndGrowWithEffort) {
  squeeze::text::Rng rng(17);
  for (size_t family = 0; family < kProblemFamilies.size(); ++family)
    for (int d = 1; d <= 4; ++d) {
      const auto p = make_reasoning_problem(rng, family, d);
      EXPECT_EQ(p.family, kProblemFamilies[family]);
      for (const auto& t : p.traces) {
        ASSERT_GE(t.size(), p.answer.size() + 1);
        EXPECT_EQ(t.substr(t.size() - p.answer.size() - 1), p.answer + ".") << t;
      }
      EXPECT_LE(count_words(p.traces[0]), count_words(p.traces[1])) << p.question;
      EXPECT_LE(count_words(p.traces[1]), count_words(p.traces[2])) << p.question;
      EXPECT_LT(count_words(p.traces[2]), count_words(p.traces[3])) << p.question;
    }
  EXPECT_THROW(make_reasoning_problem(rng, 0, 5), std::exception);
  EXPECT_THROW(make_reasoning_problem(rng, 4, 1), std::exception);
}

TEST(ReasoningProblems, WordCuts) {
  EXPECT_EQ(count_words("a bc  d"), 3);
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(first_words("a bc  d", 0), "");
  EXPECT_EQ(first_words("a bc  d", 1), "a");
  EXPECT_EQ(first_words("a bc  d", 2), "a bc");
  EXPECT_EQ(first_words("a bc  d", 3), "a bc  d");
  EXPECT_EQ(first_words("a bc  d", 9), "a bc  d");
}
