// eval/reasoning_eval.cpp — see reasoning_eval.h.
#include "eval/reasoning_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>

#include "chat/muse_glimmer_output.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "generate/chat_format.h"
#include "generate/decode.h"
#include "generate/sequence.h"
#include "generate/thinking_budget.h"
#include "model/session.h"
#include "text/rng.h"
#include "text/sampler.h"

namespace squeeze::eval {

namespace {

using chat::Json;
using Clock = std::chrono::steady_clock;

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<double> correct_of(const ReasoningResult& r) {
  std::vector<double> v;
  for (const auto& o : r.outcomes) v.push_back(o.correct ? 1.0 : 0.0);
  return v;
}

}  // namespace

double ReasoningResult::accuracy() const {
  double n = 0;
  for (const auto& o : outcomes) n += o.correct;
  return n / static_cast<double>(outcomes.size());
}

double ReasoningResult::mean_thinking() const {
  double n = 0;
  for (const auto& o : outcomes) n += static_cast<double>(o.thinking);
  return n / static_cast<double>(outcomes.size());
}

int64_t ReasoningResult::count(bool ReasoningOutcome::*field) const {
  int64_t n = 0;
  for (const auto& o : outcomes) n += o.*field;
  return n;
}

std::vector<ReasoningProblem> read_reasoning_problems(const std::string& path, int64_t limit) {
  std::ifstream in(path);
  SQZ_CHECK(in, path, ": cannot open");
  std::vector<ReasoningProblem> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line) && (limit <= 0 || static_cast<int64_t>(out.size()) < limit); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const squeeze::BoundedJson<Json> parsed = squeeze::parse_json_bounded<Json>(line, {.max_depth = 16});
    if (!parsed.error.empty()) fail(path, ":", n, ": ", parsed.error);
    const Json& j = parsed.value;
    SQZ_CHECK(j.is_object() && j.contains("question") && j["question"].is_string() && j.contains("answer") &&
                  j["answer"].is_string(),
              path, ":", n, ": expected an object with string \"question\" and \"answer\"");
    std::string family = "all";
    if (j.contains("family")) {
      SQZ_CHECK(j["family"].is_string(), path, ":", n, ": \"family\" must be a string");
      family = j["family"].get<std::string>();
    }
    out.push_back({std::move(family), j["question"].get<std::string>(), j["answer"].get<std::string>()});
  }
  SQZ_CHECK(!out.empty(), path, ": no problems");
  return out;
}

std::vector<ReasoningResult> evaluate_reasoning(const model::Model& model, std::span<const ReasoningProblem> problems,
                                                std::span<const ReasoningSetting> settings,
                                                const ReasoningEvalOptions& options, const ReasoningProgress& progress) {
  const text::Tokenizer& tok = model.tokenizer();
  SQZ_CHECK(generate::ThinkingVocab::has_muse_framing(tok),
            "the reasoning evaluation needs a model that thinks in Muse Glimmer's framing "
            "(<|start|> <|message|> <|eom|> <|eot|>)");
  const generate::ChatFormat format(model);
  const auto vocab = std::make_shared<const generate::ThinkingVocab>(tok);
  const std::vector<int32_t>& stop_ids = format.turn_stop_ids();
  const std::vector<int32_t> banned = generate::unused_tokens(tok);
  model::Session session(model, {.n_ctx = options.n_ctx, .batch = 64});

  std::vector<ReasoningResult> results;
  for (const ReasoningSetting& s : settings) {
    ReasoningResult r{.setting = s, .outcomes = {}};
    const Json vars = {{"reasoning_strength", s.level}, {"reasoning_effort", s.level}, {"current_date", options.current_date}};
    const auto t0 = Clock::now();
    for (size_t i = 0; i < problems.size(); ++i) {
      const ReasoningProblem& p = problems[i];
      const Json messages = Json::array({Json{{"role", "user"}, {"content", p.question}}});
      const auto prompt = format.tokenize(format.render(messages, true, nullptr, vars));
      SQZ_CHECK(static_cast<int64_t>(prompt.size()) < session.n_ctx(), "problem ", i + 1, ": the prompt of ",
                prompt.size(), " tokens does not fit the context of ", session.n_ctx());
      session.reset();
      const auto logits = session.forward(prompt);
      generate::Sequence seq(tok, text::Sampler({.temperature = 0}),
                             {.stop = {.eos_ids = stop_ids, .max_tokens = s.budget + options.answer_tokens},
                              .n_ctx = session.n_ctx(),
                              .render_control = true},
                             std::make_unique<generate::ThinkingBudget>(vocab, s.budget), banned);
      seq.start(session.position(), prompt);
      std::string text;
      std::vector<int32_t> run;
      generate::decode(session, seq, logits, {.forwarded = &run}, [&text](const std::string& t) { text += t; });
      const std::string answer = trim(chat::parse_muse_glimmer_output(text).content);
      ReasoningOutcome o;
      o.answered = !answer.empty();
      o.correct = answer == p.answer;
      o.thinking = count_thinking_tokens(run, tok);
      o.hit = seq.thinking()->forced_close();
      o.over = o.thinking > s.budget;
      r.outcomes.push_back(o);
      if (progress) progress(s, i + 1, problems.size(), r.accuracy());
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    results.push_back(std::move(r));
  }
  return results;
}

Json reasoning_report(std::span<const ReasoningProblem> problems, std::span<const ReasoningResult> results,
                      const ReportOptions& options) {
  std::vector<std::string> families;
  for (const auto& p : problems)
    if (std::find(families.begin(), families.end(), p.family) == families.end()) families.push_back(p.family);
  Json out = {{"problems", problems.size()}, {"settings", Json::array()}, {"pairs", Json::array()}};
  for (const auto& r : results) {
    SQZ_CHECK(r.outcomes.size() == problems.size(), "reasoning_report: ", r.outcomes.size(), " outcomes for ",
              problems.size(), " problems");
    const auto [lo, hi] = bootstrap_interval(correct_of(r), options.resamples, options.seed);
    Json by_family = Json::object();
    for (const auto& f : families) {
      double n = 0, c = 0;
      for (size_t i = 0; i < problems.size(); ++i)
        if (problems[i].family == f) ++n, c += r.outcomes[i].correct;
      by_family[f] = c / n;
    }
    const int64_t no_answer = static_cast<int64_t>(r.outcomes.size()) - r.count(&ReasoningOutcome::answered);
    out["settings"].push_back({{"name", r.setting.name}, {"level", r.setting.level}, {"budget", r.setting.budget},
                               {"accuracy", r.accuracy()}, {"interval", {lo, hi}},
                               {"mean_thinking_tokens", r.mean_thinking()},
                               {"budget_hits", r.count(&ReasoningOutcome::hit)},
                               {"over_budget", r.count(&ReasoningOutcome::over)}, {"no_answer", no_answer},
                               {"seconds", r.seconds}, {"accuracy_by_family", by_family}});
  }
  if (results.size() > 1) {
    std::vector<std::pair<size_t, size_t>> pairs;
    for (size_t i = options.sweep ? 0 : 1; i + 1 < results.size(); ++i) pairs.push_back({i, i + 1});
    if (!options.sweep) pairs.push_back({0, results.size() - 1});
    for (const auto& [a, b] : pairs) {
      const auto va = correct_of(results[a]), vb = correct_of(results[b]);
      std::vector<double> d(va.size());
      for (size_t i = 0; i < d.size(); ++i) d[i] = vb[i] - va[i];
      const auto [lo, hi] = bootstrap_interval(d, options.resamples, options.seed + 1);
      out["pairs"].push_back({{"from", results[a].setting.name}, {"to", results[b].setting.name},
                              {"gain", results[b].accuracy() - results[a].accuracy()}, {"interval", {lo, hi}}});
    }
  }
  return out;
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

}  // namespace squeeze::eval
