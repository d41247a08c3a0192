// generate/thinking_budget.h — reasoning effort as an enforced budget of thinking tokens,
// for models that think apart from their answer: in Muse Glimmer's framing (a message to
// recipient `self`), in harmony's (gpt-oss: a message in the `analysis` channel) or between
// `<think>` and `</think>` (Qwen3).
//
// One counter per assistant turn: every thinking token counts, however many thinking
// messages the turn has. When the next sampled token would exceed the budget, the thinking
// is closed at the last word boundary at or before the budget: the tokens of the unfinished
// word (held back from the output while the word was being written) are taken back from
// the KV cache, and the close is run in their place — `<|eom|><|start|>assistant`, so the
// model goes on to its next message, `<|end|><|start|>assistant<|channel|>final<|message|>`
// (harmony: straight into the answer), or `\n</think>\n\n`, so it answers. From then on the
// turn may not open the thinking again (`self` as a recipient, `analysis` as a channel, or
// `<think>`, is masked), so it must answer or call a tool. A budget of 0 is the no-thinking baseline: the thinking is
// masked from the start.
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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf/metadata.h"
#include "text/tokenizer.h"

namespace squeeze::generate {

// Thinking tokens per level (low, medium, high, xhigh): GGUF keys
// squeeze.reasoning.budget.{low,medium,high,xhigh}, else the built-in defaults.
struct ReasoningBudgets {
  std::array<int64_t, 4> tokens = {512, 2048, 8192, 16384};
  int64_t for_level(std::string_view level) const;  // low … xhigh; none / minimal → low
};
// A requested level as the model knows it: low, medium, high or xhigh; none and minimal
// are low (the lowest level, never the template's default); anything else is nullopt.
std::optional<std::string> reasoning_level(std::string_view requested);
inline constexpr const char* kReasoningBudgetKeyPrefix = "squeeze.reasoning.budget.";
ReasoningBudgets reasoning_budgets_from_metadata(const gguf::Metadata& meta);

// What a budget needs to know of the vocabulary, computed once per model (every token's
// text: a vocabulary of 200k tokens makes that worth sharing between turns and requests).
struct ThinkingVocab {
  enum class Kind { muse_glimmer, harmony, think_tags };
  // The vocabulary must have Muse Glimmer's <|start|> <|message|> <|eom|> <|eot|>, harmony's
  // <|start|> <|channel|> <|message|> <|return|>, or <think> and </think> as text tokens
  // (else a one-line error).
  explicit ThinkingVocab(const text::Tokenizer& tok);
  // Whether the vocabulary has any of the framings; has_muse_framing: Muse Glimmer's (it
  // wins over harmony's where a vocabulary has both); has_harmony_framing: harmony's.
  static bool supports(const text::Tokenizer& tok);
  static bool has_muse_framing(const text::Tokenizer& tok);
  static bool has_harmony_framing(const text::Tokenizer& tok);

  const text::Tokenizer& tok;
  Kind kind;
  int32_t start = -1, message = -1, eom = -1, eot = -1;  // muse_glimmer (start, message: harmony too)
  // harmony: <|channel|> <|return|>, and <|end|> <|call|> <|constrain|> (-1 when absent)
  int32_t channel = -1, end = -1, ret = -1, call = -1, constrain = -1;
  int32_t think = -1, think_end = -1;  // think_tags
  std::vector<int32_t> assistant;      // the tokens of "assistant" after <|start|> (muse_glimmer, harmony)
  // The tokens a forced close runs: <|eom|> <|start|> assistant, <|end|> <|start|> assistant
  // <|channel|> final <|message|>, or "\n</think>\n\n".
  std::vector<int32_t> close;
  int64_t close_length() const { return static_cast<int64_t>(close.size()); }
  std::vector<std::string> pieces;  // every token's text (control tokens: empty)
};

class ThinkingBudget {
 public:
  // `budget` ≥ 0. The generation starts right after `<|start|>assistant`.
  ThinkingBudget(std::shared_ptr<const ThinkingVocab> vocab, int64_t budget, int64_t max_takeback = 16);
  // With a vocabulary of its own (one-off uses).
  ThinkingBudget(const text::Tokenizer& tok, int64_t budget, int64_t max_takeback = 16)
      : ThinkingBudget(std::make_shared<const ThinkingVocab>(tok), budget, max_takeback) {}
  static bool supports(const text::Tokenizer& tok) { return ThinkingVocab::supports(tok); }
  // The prompt already opened `<think>` (a template that pre-fills it): the turn's first
  // token is thinking, counted from there; with a budget of 0 the first push closes it.
  // Before the first push, and for `<think>` framing only (else a one-line error).
  void start_in_thinking();

  // Whether mask() would change anything now (a header is being written, or <think> may
  // open, after the budget is spent): callers copy the logits only then.
  bool restricts() const { return spent_ && state_ == State::header; }
  // Sets to −inf the logits of tokens the turn may not write next (a `self` header, an
  // `analysis` channel, or <think>, once thinking is over budget). `logits` has the
  // vocabulary's size.
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

  // `<think>` framing only (else false, -1): whether the answer may be written now (before
  // the thinking opened, or after it closed), whether <think> may still open, and its id.
  bool answer_may_follow() const {
    return vocab_->kind == ThinkingVocab::Kind::think_tags && (state_ == State::header || state_ == State::body);
  }
  bool thinking_may_open() const { return vocab_->kind == ThinkingVocab::Kind::think_tags && state_ == State::header; }
  int32_t open_token() const { return vocab_->kind == ThinkingVocab::Kind::think_tags ? vocab_->think : -1; }

  int64_t budget() const { return budget_; }
  int64_t thinking_tokens() const { return used_; }  // counted so far this turn (kept ones)
  bool forced_close() const { return forced_; }       // the budget closed the thinking

 private:
  // think_tags use header (before <think>), thinking and body; after_eom is also harmony's
  // after <|end|>.
  enum class State { header, thinking, body, after_eom, done };
  bool starts_word(int32_t token) const;
  // The header (as written so far) opens a thinking message: recipient `self`, or (harmony)
  // channel `analysis` with no recipient.
  bool thinking_header(const std::string& header) const;
  void release_through_boundary(Step& out);
  // A thinking token: counted and held (released a whole word at a time) while under the
  // budget; else the close. True when the budget closed the thinking.
  bool think(int32_t token, Step& out);
  // Over budget at `token`: the thinking closes at the last word boundary (close, force).
  void close_thinking(bool new_word, Step& out);
  Step push_tags(int32_t token);
  Step push_harmony(int32_t token);
  bool harmony_framing(int32_t token) const;  // one of harmony's framing tokens, whatever its type

  std::shared_ptr<const ThinkingVocab> vocab_;
  const std::string& piece(int32_t token) const { return vocab_->pieces[static_cast<size_t>(token)]; }
  bool control(int32_t token) const { return vocab_->tok.token_type(token) == text::TokenType::control; }
  int64_t budget_, max_takeback_;
  State state_ = State::header;
  std::string header_ = "assistant";  // (harmony: with <|channel|> and <|constrain|> as their text)
  bool spent_ = false;    // the thinking may not be opened again this turn
  bool forced_ = false;
  int64_t used_ = 0;
  std::vector<int32_t> held_;  // thinking tokens run but not yet released (the current word)
};

}  // namespace squeeze::generate
