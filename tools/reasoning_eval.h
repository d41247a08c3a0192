// tools/reasoning_eval.h — `squeeze eval --reasoning PROBLEMS.jsonl`: held-out problems
// answered at each reasoning level (and with no thinking), greedy, with the levels'
// enforced thinking budgets (eval/reasoning_eval.h measures): a table of accuracy with its
// bootstrap interval, mean thinking tokens, budget hits, answers over budget or missing and
// wall time; paired intervals between neighbouring levels; a JSON file and a plot of accuracy
// against mean thinking tokens.
#pragma once

#include "args.h"

namespace squeeze::cli {

// The options `eval` adds for the reasoning mode.
void add_reasoning_eval_options(Args& args);
// Runs the mode (args has --reasoning).
int run_reasoning_eval(const Args& args);

}  // namespace squeeze::cli
