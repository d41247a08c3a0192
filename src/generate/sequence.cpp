// generate/sequence.cpp — sampling, the verify-walk, the budget close and the stop checks of
// one sequence.
#include "generate/sequence.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace squeeze::generate {

std::vector<int32_t> unused_tokens(const text::Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.token_type(id) == text::TokenType::unused) ids.push_back(id);
  return ids;
}

Sequence::Sequence(const text::Tokenizer& tok, text::Sampler sampler, SequenceParams params,
                   std::unique_ptr<ThinkingBudget> thinking, std::span<const int32_t> banned)
    : tok_(tok),
      sampler_(std::move(sampler)),
      checker_(params.stop),
      params_(std::move(params)),
      thinking_(std::move(thinking)),
      banned_(banned) {
  SQZ_CHECK(params_.n_ctx >= 1, "generation: the context must hold at least one token");
  for (const auto& [id, bias] : params_.logit_bias)
    SQZ_CHECK(id >= 0 && id < tok.n_vocab(), "generation: logit bias for token ", id, ", outside the vocabulary");
  SQZ_CHECK(!params_.grammar == !params_.vocab_trie, "generation: a grammar needs the vocabulary's trie");
  if (params_.grammar) {
    SQZ_CHECK(params_.vocab_trie->n_vocab() == tok.n_vocab(), "generation: the trie is of another vocabulary");
    SQZ_CHECK(!thinking_ || thinking_->answer_may_follow() || thinking_->open_token() >= 0,
              "generation: grammar-constrained output needs `<think>` framing when the model thinks");
    grammar_.emplace(params_.grammar);
  }
}

bool Sequence::constrained() const { return grammar_ && (!thinking_ || thinking_->answer_may_follow()); }

bool Sequence::mask_grammar(std::span<float> logits) {
  // Before the thinking opens, <think> stays as the model and the budget left it.
  const bool may_open = thinking_ && thinking_->thinking_may_open();
  const int32_t open = may_open ? thinking_->open_token() : -1;
  const float open_logit = open >= 0 ? logits[static_cast<size_t>(open)] : -INFINITY;
  const bool any = params_.vocab_trie->mask(*grammar_, params_.stop.eos_ids, logits, grammar_scratch_);
  if (open >= 0) logits[static_cast<size_t>(open)] = open_logit;
  return any || open_logit != -INFINITY;
}

void Sequence::accept_grammar(int32_t token, bool thinking_may_open) {
  for (int32_t id : params_.stop.eos_ids)
    if (token == id) return;
  if (thinking_may_open && token == thinking_->open_token()) return;  // the thinking opens: not the answer yet
  SQZ_CHECK(grammar_->accept_bytes(tok_.token_to_piece(token, {.render_control = false})),
            "generation: sampled token ", token, " that the grammar refuses");
}

void Sequence::start(int64_t position, std::span<const int32_t> history) {
  SQZ_CHECK(!started_, "generation: a sequence starts once");
  SQZ_CHECK(position >= 1 && position <= params_.n_ctx, "generation: a prompt of ", position,
            " positions in a context of ", params_.n_ctx);
  for (int32_t t : history) sampler_.accept(t);
  position_ = position;
  started_ = true;
  if (params_.stop.max_tokens == 0) end(Finish::max_tokens);  // nothing to generate
}

int64_t Sequence::draft_room() const {
  if (finished() || forcing_ || feed_.size() != 1) return 0;
  const int64_t left = params_.stop.max_tokens < 0 ? std::numeric_limits<int64_t>::max()
                                                   : params_.stop.max_tokens - checker_.n_tokens();
  // The fed token takes one position and the target's own token after the drafts one more.
  return std::max<int64_t>(0, std::min(left - 1, params_.n_ctx - position_ - 2));
}

bool Sequence::release(const std::vector<int32_t>& tokens, Step& out) {
  for (int32_t t : tokens) {
    const text::StopStep step = checker_.push(t, tok_.token_to_piece(t, {.render_control = params_.render_control}));
    out.text += step.text;
    if (step.stopped()) {
      end(step.reason == text::StopReason::max_tokens ? Finish::max_tokens : Finish::stop);
      return false;
    }
  }
  return true;
}

int32_t Sequence::sample(std::span<const float> row, Step& out) {
  // The row as the sampler sees it: a copy only when something changes it (a vocabulary of
  // 262k floats is a megabyte per token).
  std::span<const float> seen = row;
  const bool constrained = this->constrained();
  // Thinking before a constrained answer: it may end only with its closing tag (or the
  // budget's close), never with a control token that would end the turn or leave the
  // thinking unmarked in the text.
  const bool thinking_first = grammar_ && !constrained;
  if (constrained || thinking_first || !params_.logit_bias.empty() || !banned_.empty() ||
      (thinking_ && thinking_->restricts())) {
    masked_.assign(row.begin(), row.end());
    for (const auto& [id, bias] : params_.logit_bias) {
      float& l = masked_[static_cast<size_t>(id)];
      l = bias <= -100.0f ? -INFINITY : l + bias;
    }
    for (int32_t id : banned_) masked_[static_cast<size_t>(id)] = -INFINITY;
    if (thinking_) thinking_->mask(masked_);  // no `self` header once the budget closed the thinking
    // Nothing the grammar takes is left (the model's logits ruled every allowed token out):
    // the value cannot go on, and the sequence stops where it is.
    if (constrained && !mask_grammar(masked_)) {
      end(Finish::stop);
      return -1;
    }
    if (thinking_first)
      for (int32_t id : params_.vocab_trie->control_ids()) masked_[static_cast<size_t>(id)] = -INFINITY;
    seen = masked_;
  }
  const int32_t y = sampler_.sample(seen);
  sampler_.accept(y);
  ++out.sampled;
  if (constrained) accept_grammar(y, thinking_ && thinking_->thinking_may_open());
  // The value is complete and nothing may follow: the sequence ends after this token.
  const auto close_if_done = [&] {
    if (constrained && !finished() && !forcing_ && grammar_->closed()) end(Finish::stop);
  };

  if (params_.top_logprobs >= 0) {  // log-softmax of the distribution the sampler saw
    float mx = -INFINITY;
    for (float l : seen) mx = std::max(mx, l);
    double sum = 0;
    for (float l : seen) sum += std::exp(static_cast<double>(l - mx));
    const float lse = mx + static_cast<float>(std::log(sum));
    TokenLogprob t{y, seen[static_cast<size_t>(y)] - lse, {}};
    if (params_.top_logprobs > 0) {
      std::vector<int32_t> order(seen.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
      const size_t k = std::min(order.size(), static_cast<size_t>(params_.top_logprobs));
      const auto at = [&](int32_t id) { return seen[static_cast<size_t>(id)]; };
      std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(),
                        [&](int32_t a, int32_t b) { return at(a) > at(b) || (at(a) == at(b) && a < b); });
      for (size_t i = 0; i < k; ++i) t.top.push_back({order[i], at(order[i]) - lse});
    }
    out.logprobs.push_back(std::move(t));
  }

  if (!thinking_) {
    release({y}, out);
    close_if_done();
    return y;
  }
  // The budget may hold the token back (its word is unfinished) or close the thinking.
  ThinkingBudget::Step step = thinking_->push(y);
  if (!release(step.emit, out)) return y;
  if (!step.close) {
    close_if_done();
    return y;
  }
  // The unfinished word leaves the cache and the sampled token is not run: the closing
  // tokens are run (and released) in their place.
  out.take_back = step.take_back;
  position_ -= step.take_back;
  for (int32_t t : step.force) sampler_.accept(t);
  if (!release(step.force, out)) return y;
  if (position_ + static_cast<int64_t>(step.force.size()) > params_.n_ctx) {
    end(Finish::context_full);
    return y;
  }
  feed_ = std::move(step.force);
  forcing_ = true;
  return y;
}

Sequence::Step Sequence::advance(std::span<const float> rows, std::span<const int32_t> drafts) {
  SQZ_CHECK(started_ && !finished() && !flushed_, "generation: advance() on a sequence that is not running");
  SQZ_CHECK(drafts.empty() || (feed_.size() == 1 && !forcing_), "generation: drafts follow one fed token");
  const auto V = static_cast<size_t>(tok_.n_vocab());
  SQZ_CHECK(rows.size() == (drafts.size() + 1) * V, "generation: ", rows.size(), " logits for ", drafts.size() + 1,
            " rows of ", V);
  Step out;
  out.keep = static_cast<int64_t>(feed_.size());  // what ran stays: the pending token or the whole close
  position_ += out.keep;
  feed_.clear();
  forcing_ = false;
  for (size_t i = 0; i <= drafts.size(); ++i) {
    const int32_t y = sample(rows.subspan(i * V, V), out);
    if (finished() || forcing_) return out;  // a stop (not run), or a close fed next
    if (i < drafts.size() && y == drafts[i]) {  // the target picked the draft itself: already cached
      ++out.keep;
      ++position_;
      continue;
    }
    if (position_ >= params_.n_ctx) {  // no room to run it: the context is exactly full
      end(Finish::context_full);
      return out;
    }
    feed_ = {y};
    return out;
  }
  return out;  // unreachable: the last row always decides
}

std::string Sequence::flush() {
  feed_.clear();
  forcing_ = false;
  if (flushed_ || checker_.reason() != text::StopReason::none) return {};
  flushed_ = true;
  Step sink;  // a word the budget still holds, then what the stop checks hold back
  if (thinking_ && !release(thinking_->finish(), sink)) return sink.text;
  return sink.text + checker_.finish();
}

}  // namespace squeeze::generate
