// tools/reasoning_eval.h — `squeeze eval --reasoning PROBLEMS.jsonl`: held-out problems
// answered at each reasoning level (and with no thinking), greedy, with the levels'
// enforced thinking budgets: exact-match accuracy with a bootstrap interval, mean thinking
// tokens, budget hits, answers over budget or missing, wall time; paired-bootstrap
// intervals between neighbouring levels; a table, a JSON file and a plot of accuracy
// against mean thinking tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "args.h"
#include "text/tokenizer.h"

namespace squeeze::cli {

// The options `eval` adds for the reasoning mode.
void add_reasoning_eval_options(Args& args);
// Runs the mode (args has --reasoning).
int run_reasoning_eval(const Args& args);

// Tokens in the bodies of `self` messages of a generated turn (the prompt ended with
// `<|start|>assistant`): an independent count of what the thinking budget limits.
int64_t count_thinking_tokens(std::span<const int32_t> generated, const text::Tokenizer& tok);

// The 2.5% and 97.5% points of the mean of `values` over `resamples` bootstrap resamples
// (paired differences: pass the per-problem differences).
std::pair<double, double> bootstrap_interval(std::span<const double> values, int64_t resamples, uint64_t seed);

}  // namespace squeeze::cli
