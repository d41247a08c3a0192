// tools/reasoning.cpp — reasoning effort options, budgets and output routing.
#include "reasoning.h"

#include "core/error.h"
#include "generate/chat_format.h"

namespace squeeze::cli {

void add_reasoning_options(Args& args) {
  args.group("reasoning")
      .option({"--reasoning-effort"}, "LEVEL",
              "reasoning effort: low, medium, high or xhigh (none and minimal: low); it reaches the model\n"
              "through the chat template's 'Reasoning strength' line and sets the thinking budget",
              "high")
      .int_option({"--thinking-budget"}, "N",
                  "thinking tokens per turn, replacing the level's (the model's squeeze.reasoning.budget.*\n"
                  "or the built-in default); 0: no thinking",
                  {0, kMaxTokens});
}

chat::Json ReasoningSettings::template_variables() const {
  chat::Json vars = {{"reasoning_strength", level}, {"reasoning_effort", level}};
  if (off) vars["enable_thinking"] = false;
  return vars;
}

std::unique_ptr<generate::ThinkingBudget> ReasoningSettings::new_turn(bool starts_in_thinking) const {
  if (!thinks || !budget) return nullptr;
  auto b = std::make_unique<generate::ThinkingBudget>(vocab, *budget);
  if (starts_in_thinking) b->start_in_thinking();
  return b;
}

ReasoningSettings reasoning_settings(const Args& args, const model::Model& model) {
  ReasoningSettings s;
  const auto level = generate::reasoning_level(args.get("--reasoning-effort"));
  SQZ_CHECK(level, "--reasoning-effort must be none, minimal, low, medium, high or xhigh (got '",
            args.get("--reasoning-effort"), "')");
  s.level = *level;
  s.off = args.get("--reasoning-effort") == "none";
  s.thinks = generate::ThinkingVocab::supports(model.tokenizer());
  if (s.thinks) {
    s.vocab = std::make_shared<const generate::ThinkingVocab>(model.tokenizer());
    s.budget = args.has("--thinking-budget") ? args.get_int("--thinking-budget")
                                             : generate::reasoning_budgets_from_metadata(model.file().metadata()).for_level(s.level);
  } else {
    SQZ_CHECK(!args.has("--thinking-budget"), "--thinking-budget needs a model that thinks apart from its answer "
                                              "(Muse Glimmer's <|start|> <|message|> <|eom|> <|eot|>, harmony's "
                                              "analysis channel, or <think> </think>); this one does not");
  }
  return s;
}

void ThinkingPrinter::route(const chat::ParsedOutput& delta) {
  if (!delta.reasoning.empty()) thinking_(delta.reasoning);
  // The thinking ends its line before the answer starts, so that on one terminal the two
  // do not run together (the answer's stream stays the answer alone).
  if (!delta.content.empty() && !all_.reasoning.empty() && all_.content.empty()) thinking_("\n");
  if (!delta.content.empty()) answer_(delta.content);
  all_.append(delta);
}

}  // namespace squeeze::cli
