// serve/thinking_budget.h — reasoning effort as an enforced budget of thinking tokens,
// for models that think in Muse Glimmer's framing (a message to recipient `self`).
//
// One counter per assistant turn: every token of every `self` message's body counts,
// however many thinking messages the turn has. When the next sampled token would exceed
// the budget, the thinking is closed at the last word boundary at or before the budget:
// the tokens of the unfinished word (held back from the output while the word was being
// written) are taken back from the KV cache, and `<|eom|><|start|>assistant` is run in
// their place, so the model goes on to its next message. From then on the turn may not
// open `self` again (the header's recipient is masked), so it must answer or call a tool.
// A budget of 0 is the no-thinking baseline: `self` is masked from the start.
//
//   ThinkingBudget b(tok, 192);          // after a prompt ending in `<|start|>assistant`
//   b.mask(logits);                      // before each sample
//   auto s = b.push(token);              // what to emit, take back and run instead
//
// A word boundary is where a token's text starts with whitespace, or the text before it
// ends with whitespace; the held part never splits a UTF-8 sequence, and a word longer
// than `max_takeback` tokens is cut at the last whole UTF-8 character instead.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf/metadata.h"
#include "text/tokenizer.h"

namespace squeeze::serve {

// Thinking tokens per level (low, medium, high, xhigh): GGUF keys
// squeeze.reasoning.budget.{low,medium,high,xhigh}, else the built-in defaults.
struct ReasoningBudgets {
  std::array<int64_t, 4> tokens = {512, 2048, 8192, 16384};
  int64_t for_level(std::string_view level) const;  // low … xhigh; none / minimal → low
};
inline constexpr const char* kReasoningBudgetKeyPrefix = "squeeze.reasoning.budget.";
ReasoningBudgets reasoning_budgets_from_metadata(const gguf::Metadata& meta);

class ThinkingBudget {
 public:
  // The vocabulary must have Muse Glimmer's <|start|> <|message|> <|eom|> <|eot|> (else a
  // one-line error). `budget` ≥ 0. The generation starts right after `<|start|>assistant`.
  ThinkingBudget(const text::Tokenizer& tok, int64_t budget, int64_t max_takeback = 16);
  // Whether the vocabulary has the framing this needs.
  static bool supports(const text::Tokenizer& tok);

  // Sets to −inf the logits of tokens the turn may not write next (a `self` header once
  // thinking is over budget). `logits` has the vocabulary's size.
  void mask(std::span<float> logits) const;

  struct Step {
    std::vector<int32_t> emit;   // tokens released to the output now, in order
    bool close = false;          // the budget closed the thinking:
    int64_t take_back = 0;       //   tokens already run that leave the cache (never emitted),
                                 //   and the sampled token is not run either;
    std::vector<int32_t> force;  //   tokens to run and emit in their place (after `emit`)
  };
  // The token just sampled. Without `close`, the caller runs it through the model as usual.
  Step push(int32_t token);
  // Generation ended: the tokens still held back.
  std::vector<int32_t> finish();

  int64_t budget() const { return budget_; }
  int64_t thinking_tokens() const { return used_; }  // counted so far this turn (kept ones)
  bool forced_close() const { return forced_; }       // the budget closed the thinking

 private:
  enum class State { header, thinking, body, after_eom, done };
  bool starts_word(int32_t token) const;
  bool self_header(const std::string& header) const;
  void release_through_boundary(Step& out);

  const text::Tokenizer& tok_;
  int64_t budget_, max_takeback_;
  int32_t start_, message_, eom_, eot_;
  std::vector<int32_t> assistant_;  // the tokens of "assistant" after <|start|>
  std::vector<std::string> pieces_;
  State state_ = State::header;
  std::string header_ = "assistant";
  bool spent_ = false;    // `self` may not be opened again this turn
  bool forced_ = false;
  int64_t used_ = 0;
  std::vector<int32_t> held_;  // thinking tokens run but not yet released (the current word)
};

}  // namespace squeeze::serve
