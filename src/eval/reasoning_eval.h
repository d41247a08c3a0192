// eval/reasoning_eval.h — held-out problems answered at reasoning levels under enforced
// thinking budgets (`squeeze eval --reasoning`): each problem greedy, its exact-match answer,
// the thinking tokens it spent, whether the budget forced a close; then bootstrap intervals
// per setting and paired ones between settings. The command (tools/reasoning_eval.cpp)
// chooses the settings and prints; this is the measurement.
//
//   const auto problems = eval::read_reasoning_problems("held_out.jsonl", 0);
//   const auto results = eval::evaluate_reasoning(model, problems, settings, {}, nullptr);
//   const chat::Json report = eval::reasoning_report(problems, results, {.resamples = 2000});
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace squeeze::eval {

struct ReasoningProblem {
  std::string family, question, answer;
};

// JSON lines with string "question" and "answer" (and optionally "family"), as
// `squeeze reasoning-data --format jsonl` writes; the first `limit` (0: all). Blank lines
// are skipped; anything else malformed is a one-line error naming the line.
std::vector<ReasoningProblem> read_reasoning_problems(const std::string& path, int64_t limit);

// One way of answering: a reasoning level (what the chat template is told) and the thinking
// budget enforced per turn (0: no thinking).
struct ReasoningSetting {
  std::string name, level;
  int64_t budget = 0;
};

struct ReasoningOutcome {
  bool correct = false, answered = false;
  bool hit = false;   // the budget forced the thinking closed
  bool over = false;  // more thinking tokens than the budget (a budget bug if ever true)
  int64_t thinking = 0;
};

struct ReasoningResult {
  ReasoningSetting setting;
  std::vector<ReasoningOutcome> outcomes;  // one per problem, in order
  double seconds = 0;

  double accuracy() const;
  double mean_thinking() const;
  int64_t count(bool ReasoningOutcome::*field) const;
};

struct ReasoningEvalOptions {
  int64_t answer_tokens = 64;  // tokens allowed after the thinking budget
  int64_t n_ctx = 0;           // the session's window (0: the model's)
  std::string current_date = "2026-06-01";  // the template's date, fixed so runs compare
};

// Called after each problem: the setting, how many problems are done, the accuracy so far.
using ReasoningProgress = std::function<void(const ReasoningSetting&, size_t done, size_t total, double accuracy)>;

// Every problem under every setting, greedy. The model must think in Muse Glimmer's framing
// (a one-line error otherwise); a prompt that does not fit the window is an error naming it.
std::vector<ReasoningResult> evaluate_reasoning(const model::Model& model, std::span<const ReasoningProblem> problems,
                                                std::span<const ReasoningSetting> settings,
                                                const ReasoningEvalOptions& options, const ReasoningProgress& progress);

struct ReportOptions {
  int64_t resamples = 2000;  // bootstrap resamples
  uint64_t seed = 0;
  // Which pairs to compare: neighbours (a budget sweep), or neighbouring levels after the
  // first setting (the no-thinking baseline) and the last level against that baseline.
  bool sweep = false;
};

// {"problems", "settings": [{name, level, budget, accuracy, interval, mean_thinking_tokens,
//  budget_hits, over_budget, no_answer, seconds, accuracy_by_family}], "pairs": [{from, to,
//  gain, interval}]}.
chat::Json reasoning_report(std::span<const ReasoningProblem> problems, std::span<const ReasoningResult> results,
                            const ReportOptions& options);

// Tokens in the bodies of `self` messages of a generated turn (the prompt ended with
// `<|start|>assistant`): an independent count of what the thinking budget limits.
int64_t count_thinking_tokens(std::span<const int32_t> generated, const text::Tokenizer& tok);

// The 2.5% and 97.5% points of the mean of `values` over `resamples` bootstrap resamples
// (paired differences: pass the per-problem differences).
std::pair<double, double> bootstrap_interval(std::span<const double> values, int64_t resamples, uint64_t seed);

}  // namespace squeeze::eval
