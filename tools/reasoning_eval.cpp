// tools/reasoning_eval.cpp — see reasoning_eval.h.
#include "reasoning_eval.h"

#include <cstdio>

#include "core/error.h"
#include "core/thread_pool.h"
#include "eval/reasoning_eval.h"
#include "generate/thinking_budget.h"
#include "gguf/atomic_file.h"
#include "model/model.h"
#include "reasoning.h"
#include "sampling_options.h"
#include "train/loss_plot.h"

namespace squeeze::cli {

void add_reasoning_eval_options(Args& args) {
  args.group("reasoning evaluation")
      .option({"--reasoning"}, "FILE.jsonl",
              "reasoning mode: answer these problems (JSON lines with question and answer, as\n"
              "`squeeze reasoning-data --format jsonl` writes) at each level and with no thinking")
      .int_option({"--problems"}, "N", "--reasoning: the first N problems (0: all)", {0, int64_t{1} << 32}, "0")
      .int_option({"--answer-tokens"}, "N", "--reasoning: tokens allowed after the thinking budget", {1, kMaxTokens}, "64")
      .int_option({"--bootstrap"}, "N", "--reasoning: bootstrap resamples of the intervals", {100, 1 << 24}, "2000")
      .option({"--budget-sweep"}, "N1,N2,...", "--reasoning: the level of --reasoning-effort at each of these thinking\n"
                                               "budgets instead of the levels (forced closes at work)")
      .option({"--plot"}, "FILE.png", "--reasoning: plot accuracy against mean thinking tokens");
}

int run_reasoning_eval(const Args& args) {
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(!args.has("--file") && !args.has("--base"), "--reasoning takes no -f or --base");
  const gguf::DeclaredInputs inputs({path, args.get("--reasoning")});
  for (const char* o : {"--json", "--plot"})
    if (args.has(o)) gguf::check_output_path(args.get(o));
  set_default_thread_count(args.get_int32("--threads"));
  const auto problems = eval::read_reasoning_problems(args.get("--reasoning"), args.get_int("--problems"));
  const auto model = model::Model::load(path);
  SQZ_CHECK(generate::ThinkingVocab::has_muse_framing(model->tokenizer()), path,
            ": --reasoning needs a model that thinks in Muse Glimmer's framing (<|start|> <|message|> <|eom|> <|eot|>)");
  const ReasoningSettings chosen = reasoning_settings(args, *model);

  // One level when --reasoning-effort or --thinking-budget is given; else the no-thinking
  // baseline and every level at its budget.
  std::vector<eval::ReasoningSetting> settings;
  const bool sweep = args.has("--budget-sweep");
  if (sweep) {
    SQZ_CHECK(!args.has("--thinking-budget"), "--budget-sweep gives the budgets: no --thinking-budget");
    for (const int64_t v : parse_int_list("--budget-sweep", args.get("--budget-sweep"), {0, 1 << 30}))
      settings.push_back({chosen.level + " at " + std::to_string(v), chosen.level, v});
  } else if (args.has("--reasoning-effort") || args.has("--thinking-budget")) {
    settings.push_back({chosen.level + " (budget " + std::to_string(*chosen.budget) + ")", chosen.level, *chosen.budget});
  } else {
    const auto budgets = generate::reasoning_budgets_from_metadata(model->file().metadata());
    settings.push_back({"no thinking (budget 0)", "high", 0});
    for (const char* level : {"low", "medium", "high", "xhigh"}) settings.push_back({level, level, budgets.for_level(level)});
  }
  const eval::ReasoningEvalOptions options{
      .answer_tokens = args.get_int("--answer-tokens"),
      .n_ctx = args.has("--ctx") ? args.get_int("--ctx") : 0,  // eval's default window is not this mode's
  };
  const auto results = eval::evaluate_reasoning(
      *model, problems, settings, options, [](const eval::ReasoningSetting& s, size_t done, size_t total, double accuracy) {
        std::fprintf(stderr, "\r%s: %zu/%zu  accuracy %.1f%%   %s", s.name.c_str(), done, total, 100.0 * accuracy,
                     done == total ? "\n" : "");
      });
  chat::Json report = eval::reasoning_report(
      problems, results,
      {.resamples = args.get_int("--bootstrap"), .seed = static_cast<uint64_t>(args.get_int("--seed")), .sweep = sweep});

  std::printf("%zu problems from %s, greedy, one thinking budget per turn\n\n", problems.size(),
              args.get("--reasoning").c_str());
  std::printf("| setting | budget | accuracy | 95%% interval | mean thinking tokens | budget hits | over budget | "
              "no answer | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const chat::Json& s : report["settings"])
    std::printf("| %s | %lld | %.1f%% | %.1f–%.1f%% | %.1f | %lld | %lld | %lld | %.1f |\n",
                s["name"].get<std::string>().c_str(), static_cast<long long>(s["budget"].get<int64_t>()),
                100 * s["accuracy"].get<double>(), 100 * s["interval"][0].get<double>(),
                100 * s["interval"][1].get<double>(), s["mean_thinking_tokens"].get<double>(),
                static_cast<long long>(s["budget_hits"].get<int64_t>()),
                static_cast<long long>(s["over_budget"].get<int64_t>()),
                static_cast<long long>(s["no_answer"].get<int64_t>()), s["seconds"].get<double>());
  if (!report["pairs"].empty()) {
    std::printf("\n| paired difference | accuracy gain | 95%% interval (paired bootstrap) |\n|---|---|---|\n");
    for (const chat::Json& p : report["pairs"])
      std::printf("| %s → %s | %+.1f points | %+.1f … %+.1f |\n", p["from"].get<std::string>().c_str(),
                  p["to"].get<std::string>().c_str(), 100 * p["gain"].get<double>(),
                  100 * p["interval"][0].get<double>(), 100 * p["interval"][1].get<double>());
  }
  if (args.has("--json")) {
    chat::Json out = {{"model", path}};
    out.update(report);
    gguf::write_file_atomically(args.get("--json"), out.dump(2) + "\n");
  }
  if (args.has("--plot")) {
    std::vector<train::LabelledPoint> points;
    for (const auto& r : results)
      points.push_back({r.mean_thinking(), 100 * r.accuracy(),
                        sweep                    ? std::to_string(r.setting.budget)
                        : r.setting.budget == 0 ? "none"
                                                : r.setting.level});
    train::write_point_plot(args.get("--plot"), points, "mean thinking tokens", "accuracy %",
                            "accuracy vs thinking: " + std::to_string(problems.size()) + " held-out problems");
  }
  return 0;
}

}  // namespace squeeze::cli
