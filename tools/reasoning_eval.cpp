// tools/reasoning_eval.cpp — see reasoning_eval.h.
#include "reasoning_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "chat/value.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "generate/decode.h"
#include "sampling_options.h"
#include "gguf/atomic_file.h"
#include "model/model.h"
#include "model/session.h"
#include "reasoning.h"
#include "generate/chat_format.h"
#include "text/rng.h"
#include "train/loss_plot.h"

namespace squeeze::cli {

namespace {

using chat::Json;
using Clock = std::chrono::steady_clock;

struct Problem {
  std::string family, question, answer;
};

std::vector<Problem> read_problems(const std::string& path, int64_t limit) {
  std::ifstream in(path);
  SQZ_CHECK(in, path, ": cannot open");
  std::vector<Problem> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line) && (limit <= 0 || static_cast<int64_t>(out.size()) < limit); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const squeeze::BoundedJson<Json> parsed = squeeze::parse_json_bounded<Json>(line, {.max_depth = 16});
    if (!parsed.error.empty()) fail(path, ":", n, ": ", parsed.error);
    const Json& j = parsed.value;
    SQZ_CHECK(j.is_object() && j.contains("question") && j["question"].is_string() && j.contains("answer") &&
                  j["answer"].is_string(),
              path, ":", n, ": expected an object with string \"question\" and \"answer\"");
    out.push_back({j.value("family", std::string("all")), j["question"].get<std::string>(), j["answer"].get<std::string>()});
  }
  SQZ_CHECK(!out.empty(), path, ": no problems");
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

struct Setting {
  std::string name, level;
  int64_t budget = 0;
};

struct Outcome {
  bool correct = false, answered = false, hit = false, over = false;
  int64_t thinking = 0;
};

struct SettingResult {
  Setting setting;
  std::vector<Outcome> outcomes;
  double seconds = 0;
  double accuracy() const {
    double n = 0;
    for (const auto& o : outcomes) n += o.correct;
    return n / static_cast<double>(outcomes.size());
  }
  double mean_thinking() const {
    double n = 0;
    for (const auto& o : outcomes) n += static_cast<double>(o.thinking);
    return n / static_cast<double>(outcomes.size());
  }
  int64_t count(bool Outcome::*field) const {
    int64_t n = 0;
    for (const auto& o : outcomes) n += o.*field;
    return n;
  }
};

}  // namespace

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

int64_t count_thinking_tokens(std::span<const int32_t> generated, const text::Tokenizer& tok) {
  const auto start = tok.find_token("<|start|>"), message = tok.find_token("<|message|>");
  SQZ_CHECK(start && message, "count_thinking_tokens: the vocabulary lacks <|start|> / <|message|>");
  std::string header = "assistant";
  bool in_header = true, thinking = false;
  int64_t n = 0;
  for (int32_t t : generated) {
    const bool control = tok.token_type(t) == text::TokenType::control;
    if (in_header) {
      if (t == *message) {
        in_header = false;
        const size_t to = header.find("to=");
        thinking = to != std::string::npos && header.compare(to + 3, std::string::npos, "self") == 0;
      } else if (t == *start) {
        header.clear();
      } else {
        header += tok.token_to_piece(t);
      }
    } else if (control) {
      thinking = false;
      if (t == *start) in_header = true, header.clear();
    } else if (thinking) {
      ++n;
    }
  }
  return n;
}

std::pair<double, double> bootstrap_interval(std::span<const double> values, int64_t resamples, uint64_t seed) {
  SQZ_CHECK(!values.empty() && resamples > 0, "bootstrap: nothing to resample");
  text::Rng rng(seed);
  std::vector<double> means(static_cast<size_t>(resamples));
  for (auto& m : means) {
    double s = 0;
    for (size_t i = 0; i < values.size(); ++i) s += values[rng.next_u64() % values.size()];
    m = s / static_cast<double>(values.size());
  }
  std::sort(means.begin(), means.end());
  const auto at = [&](double q) { return means[static_cast<size_t>(std::floor(q * static_cast<double>(resamples - 1)))]; };
  return {at(0.025), at(0.975)};
}

int run_reasoning_eval(const Args& args) {
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(!args.has("--file") && !args.has("--base"), "--reasoning takes no -f or --base");
  const gguf::DeclaredInputs inputs({path, args.get("--reasoning")});
  for (const char* o : {"--json", "--plot"})
    if (args.has(o)) gguf::check_output_path(args.get(o));
  set_default_thread_count(args.get_int32("--threads"));
  const auto problems = read_problems(args.get("--reasoning"), args.get_int("--problems"));
  const auto model = model::Model::load(path);
  const auto& tok = model->tokenizer();
  SQZ_CHECK(generate::ThinkingBudget::supports(tok), path,
            ": --reasoning needs a model that thinks in Muse Glimmer's framing (<|start|> <|message|> <|eom|> <|eot|>)");
  const generate::ChatFormat format(*model);
  const ReasoningSettings chosen = reasoning_settings(args, *model);

  // One level when --reasoning-effort or --thinking-budget is given; else the no-thinking
  // baseline and every level at its budget.
  std::vector<Setting> settings;
  if (args.has("--budget-sweep")) {
    SQZ_CHECK(!args.has("--thinking-budget"), "--budget-sweep gives the budgets: no --thinking-budget");
    for (const int64_t v : parse_int_list("--budget-sweep", args.get("--budget-sweep"), {0, 1 << 30}))
      settings.push_back({chosen.level + " at " + std::to_string(v), chosen.level, v});
  } else if (args.has("--reasoning-effort") || args.has("--thinking-budget")) {
    settings.push_back({chosen.level + " (budget " + std::to_string(*chosen.budget) + ")", chosen.level, *chosen.budget});
  } else {
    const auto budgets = generate::reasoning_budgets_from_metadata(model->file().metadata());
    settings.push_back({"no thinking (budget 0)", "high", 0});
    for (const char* level : {"low", "medium", "high", "xhigh"})
      settings.push_back({level, level, budgets.for_level(level)});
  }
  const std::vector<int32_t>& stop_ids = format.turn_stop_ids();
  const int64_t answer_tokens = args.get_int("--answer-tokens");
  const int64_t n_ctx = args.has("--ctx") ? args.get_int("--ctx") : 0;  // eval's default window is not this mode's
  model::Session session(*model, {.n_ctx = n_ctx, .batch = 64});
  const std::vector<int32_t> banned = generate::unused_tokens(tok);

  std::vector<SettingResult> results;
  for (const Setting& s : settings) {
    SettingResult r{.setting = s, .outcomes = {}};
    const Json vars = {{"reasoning_strength", s.level}, {"reasoning_effort", s.level}, {"current_date", "2026-06-01"}};
    const auto t0 = Clock::now();
    for (size_t i = 0; i < problems.size(); ++i) {
      const Problem& p = problems[i];
      const Json messages = Json::array({Json{{"role", "user"}, {"content", p.question}}});
      const auto prompt = format.tokenize(format.render(messages, true, nullptr, vars));
      const int64_t room = session.n_ctx() - static_cast<int64_t>(prompt.size());
      SQZ_CHECK(room > 0, "problem ", i + 1, ": the prompt of ", prompt.size(), " tokens does not fit the context of ",
                session.n_ctx());
      session.reset();
      const auto logits = session.forward(prompt);
      generate::Sequence seq(tok, text::Sampler({.temperature = 0}),
                             {.stop = {.eos_ids = stop_ids, .max_tokens = s.budget + answer_tokens},
                              .n_ctx = session.n_ctx(),
                              .render_control = true},
                             std::make_unique<generate::ThinkingBudget>(chosen.vocab, s.budget), banned);
      seq.start(session.position(), prompt);
      std::string text;
      std::vector<int32_t> run;
      generate::decode(session, seq, logits, {.forwarded = &run}, [&text](const std::string& t) { text += t; });
      const auto parsed = chat::parse_muse_glimmer_output(text);
      Outcome o;
      const std::string answer = trim(parsed.content);
      o.answered = !answer.empty();
      o.correct = answer == p.answer;
      o.thinking = count_thinking_tokens(run, tok);
      o.hit = seq.thinking()->forced_close();
      o.over = o.thinking > s.budget;
      r.outcomes.push_back(o);
      std::fprintf(stderr, "\r%s: %zu/%zu  accuracy %.1f%%   ", s.name.c_str(), i + 1, problems.size(), 100.0 * r.accuracy());
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, "\n");
    results.push_back(std::move(r));
  }

  const int64_t resamples = args.get_int("--bootstrap");
  const uint64_t seed = static_cast<uint64_t>(args.get_int("--seed"));
  const auto correct_of = [](const SettingResult& r) {
    std::vector<double> v;
    for (const auto& o : r.outcomes) v.push_back(o.correct ? 1.0 : 0.0);
    return v;
  };
  Json out = {{"model", path}, {"problems", problems.size()}, {"settings", Json::array()}, {"pairs", Json::array()}};
  std::printf("%zu problems from %s, greedy, one thinking budget per turn\n\n", problems.size(),
              args.get("--reasoning").c_str());
  std::printf("| setting | budget | accuracy | 95%% interval | mean thinking tokens | budget hits | over budget | "
              "no answer | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : results) {
    const auto v = correct_of(r);
    const auto [lo, hi] = bootstrap_interval(v, resamples, seed);
    std::printf("| %s | %lld | %.1f%% | %.1f–%.1f%% | %.1f | %lld | %lld | %lld | %.1f |\n", r.setting.name.c_str(),
                static_cast<long long>(r.setting.budget), 100 * r.accuracy(), 100 * lo, 100 * hi, r.mean_thinking(),
                static_cast<long long>(r.count(&Outcome::hit)), static_cast<long long>(r.count(&Outcome::over)),
                static_cast<long long>(static_cast<int64_t>(r.outcomes.size()) - r.count(&Outcome::answered)), r.seconds);
    Json fam = Json::object();
    std::vector<std::string> families;
    for (const auto& p : problems)
      if (std::find(families.begin(), families.end(), p.family) == families.end()) families.push_back(p.family);
    for (const auto& f : families) {
      double n = 0, c = 0;
      for (size_t i = 0; i < problems.size(); ++i)
        if (problems[i].family == f) ++n, c += r.outcomes[i].correct;
      fam[f] = c / n;
    }
    out["settings"].push_back({{"name", r.setting.name}, {"level", r.setting.level}, {"budget", r.setting.budget},
                               {"accuracy", r.accuracy()}, {"interval", {lo, hi}},
                               {"mean_thinking_tokens", r.mean_thinking()}, {"budget_hits", r.count(&Outcome::hit)},
                               {"over_budget", r.count(&Outcome::over)},
                               {"no_answer", static_cast<int64_t>(r.outcomes.size()) - r.count(&Outcome::answered)},
                               {"seconds", r.seconds}, {"accuracy_by_family", fam}});
  }
  if (results.size() > 1) {
    // Neighbouring levels, and the top level against the no-thinking baseline (a sweep:
    // neighbouring budgets).
    const bool sweep = args.has("--budget-sweep");
    std::vector<std::pair<size_t, size_t>> pairs;
    for (size_t i = sweep ? 0 : 1; i + 1 < results.size(); ++i) pairs.push_back({i, i + 1});
    if (!sweep) pairs.push_back({0, results.size() - 1});
    std::printf("\n| paired difference | accuracy gain | 95%% interval (paired bootstrap) |\n|---|---|---|\n");
    for (const auto& [a, b] : pairs) {
      const auto va = correct_of(results[a]), vb = correct_of(results[b]);
      std::vector<double> d(va.size());
      for (size_t i = 0; i < d.size(); ++i) d[i] = vb[i] - va[i];
      const auto [lo, hi] = bootstrap_interval(d, resamples, seed + 1);
      const double gain = results[b].accuracy() - results[a].accuracy();
      std::printf("| %s → %s | %+.1f points | %+.1f … %+.1f |\n", results[a].setting.name.c_str(),
                  results[b].setting.name.c_str(), 100 * gain, 100 * lo, 100 * hi);
      out["pairs"].push_back({{"from", results[a].setting.name}, {"to", results[b].setting.name}, {"gain", gain},
                              {"interval", {lo, hi}}});
    }
  }
  if (args.has("--json")) gguf::write_file_atomically(args.get("--json"), out.dump(2) + "\n");
  if (args.has("--plot")) {
    std::vector<train::LabelledPoint> points;
    for (const auto& r : results)
      points.push_back({r.mean_thinking(), 100 * r.accuracy(),
                        args.has("--budget-sweep") ? std::to_string(r.setting.budget)
                        : r.setting.budget == 0    ? "none"
                                                   : r.setting.level});
    train::write_point_plot(args.get("--plot"), points, "mean thinking tokens", "accuracy %",
                            "accuracy vs thinking: " + std::to_string(problems.size()) + " held-out problems");
  }
  return 0;
}

}  // namespace squeeze::cli
