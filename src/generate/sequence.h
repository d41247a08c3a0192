// generate/sequence.h — one sequence being generated: what turns the model's logits into
// output, written once for `squeeze generate`, `squeeze chat` and the server's engine.
//
// A Sequence owns the sampler, the stop checks (end-of-turn ids, stop strings, the token
// limit), the banned tokens and logit biases, the per-turn thinking budget and the token
// the next forward step runs. The caller owns the KV cache and the forward pass: it runs
// feed() (and drafts after it, when draft_room() allows), hands the resulting logits rows
// to advance(), and applies the Step it gets back to its cache:
//
//   seq.start(prompt.size(), prompt);          // after running the prompt
//   Step s = seq.advance(last_row, {});         // the first token
//   while (!seq.finished()) {
//     run feed() [+ drafts] at positions [p, …)
//     s = seq.advance(rows, drafts);            // the verify-walk
//     keep s.keep of the tokens just run, then drop s.take_back positions; print s.text
//   }
//
// The verify-walk: rows[i] is the target's distribution after feed()[0] and drafts[0..i);
// draft i stays while the sampler, walking the rows, picks it itself (so the output is the
// target's distribution whatever the drafts are); the first token it picks that is not the
// draft becomes the next feed. A thinking budget may close the thinking on any sampled
// token: the unfinished word leaves the cache (take_back), the sampled token is not run,
// and the closing tokens are fed next, all in one step.
//
// Every prompt token goes to the sampler's penalty history, as llama.cpp does; the token
// limit counts the tokens released to the output (forced closing tokens included, a word
// the budget still holds not yet).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "generate/grammar_matcher.h"
#include "generate/thinking_budget.h"
#include "generate/token_mask.h"
#include "text/sampler.h"
#include "text/stop.h"
#include "text/tokenizer.h"

namespace squeeze::generate {

struct TopLogprob {
  int32_t id;
  float logprob;
};

struct TokenLogprob {
  int32_t id;
  float logprob;                // log-softmax of the logits the sampler saw (temperature 1)
  std::vector<TopLogprob> top;  // the top_logprobs most likely, most likely first
};

// Why a sequence ended.
enum class Finish { none, stop, max_tokens, context_full };

struct SequenceParams {
  text::StopParams stop = {};  // end-of-generation ids, stop strings, max_tokens (-1: none)
  int64_t n_ctx = 0;           // positions the caller's cache holds
  bool render_control = false;  // control tokens reach the text as their text (an output parser reads them)
  int top_logprobs = -1;        // -1: no log-probabilities; 0..20: with that many alternatives
  // Added to a token's logit before sampling (OpenAI's logit_bias; ≤ -100 bans).
  std::vector<std::pair<int32_t, float>> logit_bias = {};
  // Grammar-constrained output (OpenAI's response_format): only tokens the grammar accepts
  // are sampled, the end-of-generation ids only once the value is complete, and the sequence
  // stops (Finish::stop) when nothing may follow. With a thinking budget of `<think>`
  // framing, the grammar starts with the answer: the thinking is free, except that it
  // cannot end on a control token (only `</think>` or the budget's close). Both or neither.
  std::shared_ptr<const JsonGrammar> grammar = nullptr;
  std::shared_ptr<const VocabTrie> vocab_trie = nullptr;
};

// The tokens a vocabulary never lets a model generate (type `unused`: padding).
std::vector<int32_t> unused_tokens(const text::Tokenizer& tok);

class Sequence {
 public:
  // `banned` (usually unused_tokens(tok)) must outlive the sequence; `thinking` may be null.
  Sequence(const text::Tokenizer& tok, text::Sampler sampler, SequenceParams params,
           std::unique_ptr<ThinkingBudget> thinking, std::span<const int32_t> banned);

  // The caller's cache holds `position` tokens (the prompt, or the part of the conversation
  // it shares); `history` goes to the sampler's penalty history.
  void start(int64_t position, std::span<const int32_t> history);

  struct Step {
    std::string text;                     // released to the output now (may be empty)
    std::vector<TokenLogprob> logprobs;   // one per sampled token, when asked
    int64_t sampled = 0;                  // tokens sampled in this step
    int64_t keep = 0;                     // of the tokens the step ran, how many stay cached
    int64_t take_back = 0;                // then: cached positions dropped before them
  };
  // After start(): `rows` is the last prompt row. After that: the logits of the last token
  // of feed() ([V]) when no drafts ran, else every row of [feed()[0], drafts…] ([1 + k, V]).
  Step advance(std::span<const float> rows, std::span<const int32_t> drafts);

  // What the next step runs: the pending token, or the tokens of a forced close. Empty once
  // the sequence finished.
  const std::vector<int32_t>& feed() const { return feed_; }
  // How many drafts may follow feed() in the next step (0 while a close is fed).
  int64_t draft_room() const;

  bool finished() const { return finish_ != Finish::none; }
  Finish finish_reason() const { return finish_; }
  // The caller ends the sequence early (interrupt, cancel, error): the text still held (a
  // word the budget holds, a possible stop string's prefix).
  std::string flush();

  int64_t position() const { return position_; }      // tokens in the caller's cache
  int64_t n_tokens() const { return checker_.n_tokens(); }  // released so far
  const ThinkingBudget* thinking() const { return thinking_.get(); }
  text::Sampler& sampler() { return sampler_; }  // a chat carries it over to the next turn

 private:
  // Samples one token from a row and releases it; false when the walk must stop there
  // (finished, or a close is now fed).
  int32_t sample(std::span<const float> row, Step& out);
  bool release(const std::vector<int32_t>& tokens, Step& out);
  void end(Finish f) { finish_ = f, feed_.clear(); }
  // Whether the grammar constrains the token sampled now (not while thinking).
  bool constrained() const;
  // False when no token is left to sample (the sequence then stops).
  bool mask_grammar(std::span<float> logits);
  // After a constrained token: the grammar takes its text (not <think> opening the thinking).
  void accept_grammar(int32_t token, bool thinking_may_open);

  const text::Tokenizer& tok_;
  text::Sampler sampler_;
  text::StopChecker checker_;
  SequenceParams params_;
  std::unique_ptr<ThinkingBudget> thinking_;
  std::span<const int32_t> banned_;
  std::vector<float> masked_;
  std::optional<GrammarMatcher> grammar_;
  std::vector<GrammarMatcher::Parses> grammar_scratch_;
  std::vector<int32_t> feed_;
  bool forcing_ = false;  // feed_ holds the tokens of a forced close
  bool started_ = false, flushed_ = false;
  int64_t position_ = 0;
  Finish finish_ = Finish::none;
};

}  // namespace squeeze::generate
