// tools/reasoning.h — reasoning effort in generate, chat and eval: the options, the
// level's variables for the chat template, the thinking budget (GGUF defaults, command-line
// override) and the split of the output into thinking and answer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "args.h"
#include "chat/output_parser.h"
#include "chat/value.h"
#include "model/model.h"
#include "generate/thinking_budget.h"

namespace squeeze::cli {

// --reasoning-effort LEVEL, --thinking-budget N.
void add_reasoning_options(Args& args);

struct ReasoningSettings {
  std::string level = "high";       // low … xhigh ("none" / "minimal" become low)
  bool off = false;                 // --reasoning-effort none: templates that can switch thinking off do
  bool thinks = false;              // the model thinks apart (Muse Glimmer's self, harmony's analysis, <think>)
  std::optional<int64_t> budget;    // thinking tokens per turn (thinks only)
  std::shared_ptr<const generate::ThinkingVocab> vocab;  // thinks only: shared by every turn's budget
  // reasoning_strength / reasoning_effort for the template, and enable_thinking false for
  // `none` (Qwen3's switch).
  chat::Json template_variables() const;
  // A fresh per-turn counter (null without a budget); `starts_in_thinking`: the rendering
  // already opened `<think>` (ChatFormat::prompt_opens_thinking).
  std::unique_ptr<generate::ThinkingBudget> new_turn(bool starts_in_thinking = false) const;
};

// From the options and the model: the level's budget from the file's squeeze.reasoning.*
// keys (or the built-in defaults), replaced by --thinking-budget. A budget for a model
// without the framing is a one-line error.
ReasoningSettings reasoning_settings(const Args& args, const model::Model& model);

// Generated text → thinking and answer through the chat format's output parser, streamed to
// two sinks (a model without framing: everything is the answer).
class ThinkingPrinter {
 public:
  using Sink = std::function<void(const std::string&)>;
  ThinkingPrinter(std::unique_ptr<chat::OutputParser> parser, Sink thinking, Sink answer)
      : parser_(std::move(parser)), thinking_(std::move(thinking)), answer_(std::move(answer)) {}
  void feed(const std::string& text) { route(parser_->feed(text)); }
  void finish() { route(parser_->finish()); }
  const chat::ParsedOutput& all() const { return all_; }

 private:
  void route(const chat::ParsedOutput& delta);
  std::unique_ptr<chat::OutputParser> parser_;
  chat::ParsedOutput all_;
  Sink thinking_, answer_;
};

}  // namespace squeeze::cli
