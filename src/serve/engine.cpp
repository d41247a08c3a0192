// serve/engine.cpp — slots, the scheduler loop, sampling and stop checks per slot.
#include "serve/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "core/error.h"
#include "model/session.h"
#include "text/stop.h"
#include "vision/image_prompt.h"

namespace squeeze::serve {

using Clock = std::chrono::steady_clock;

namespace {
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::none: return "none";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
    case FinishReason::error: return "error";
  }
  return "?";
}

void RequestStream::push(Update u) {
  {
    std::lock_guard lock(mu_);
    updates_.push_back(std::move(u));
  }
  cv_.notify_all();
}

std::optional<Update> RequestStream::pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !updates_.empty(); })) return std::nullopt;
  Update u = std::move(updates_.front());
  updates_.pop_front();
  return u;
}

struct Engine::Slot {
  explicit Slot(model::KvCacheConfig config) : cache(std::move(config)) {}
  model::KvCache cache;
  std::vector<int32_t> ids;  // ids[p]: the token at cache position p
  // prompt_keys[p]: the key (vision/image_prompt.h) of position p of the last prompt; the
  // positions past it hold generated tokens, keyed by their ids.
  std::vector<uint64_t> prompt_keys;
  uint64_t key_at(size_t p) const { return p < prompt_keys.size() ? prompt_keys[p] : vision::text_key(ids[p]); }
  std::optional<Job> job;
  std::optional<text::Sampler> sampler;
  std::optional<text::StopChecker> checker;
  int64_t prefill_pos = 0;   // next prompt position to run while < prompt size
  int32_t pending = -1;      // the sampled token the next step runs
  int64_t cached = 0;        // prompt tokens reused from the cache
  // speculative decoding: the source follows ids; `verify` holds [pending, drafts…] of a step
  std::unique_ptr<model::DraftSource> source;
  std::optional<model::DraftLengthController> controller;
  std::vector<int32_t> verify;
  double draft_seconds = 0;
  // the request's thinking budget: tokens a forced close runs next, and the tokens it takes back
  std::unique_ptr<generate::ThinkingBudget> thinking;
  std::deque<int32_t> forced;
  int64_t take_back = -1;  // ≥ 0: a close is waiting for apply_take_back
  uint64_t last_used = 0;
  Clock::time_point first_token_at, last_token_at;
  bool busy() const { return job.has_value(); }
  bool prefilling() const { return busy() && prefill_pos < static_cast<int64_t>(job->req.prompt.size()); }
};

Engine::Engine(const model::Model& model, EngineParams params)
    : model_(model),
      pool_(params.pool ? *params.pool : default_thread_pool()),
      n_ctx_(params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(model.config().n_ctx, 4096)),
      chunk_(std::max<int64_t>(1, params.chunk)),
      max_queue_(static_cast<size_t>(std::max<int64_t>(0, params.max_queue))),
      scratch_(model.config(), std::max<int64_t>(1, params.parallel) * (1 + (params.drafter || params.lookup ? params.max_drafts : 0)) +
                                   std::max<int64_t>(1, params.chunk)),
      drafter_(params.drafter),
      lookup_(params.lookup),
      adaptive_drafts_(params.adaptive_drafts) {
  SQZ_CHECK(params.parallel >= 1, "serve: --parallel must be at least 1");
  SQZ_CHECK(!(drafter_ && lookup_), "serve: a drafter and prompt lookup are two draft sources: give one");
  SQZ_CHECK(n_ctx_ >= 1, "serve: the context must be at least 1 token");
  // Ring headroom of two chunks: prefix reuse may roll a slot back by up to a chunk past
  // the end of what the next turn shares with it (kv_cache.h: truncate()).
  const auto config = model::sequence_cache_config(model.config(), n_ctx_, chunk_, params.kv_type, 2 * chunk_);
  for (int64_t i = 0; i < params.parallel; ++i) slots_.push_back(std::make_unique<Slot>(config));
  chunk_ = std::min(chunk_, slots_.front()->cache.max_chunk());
  if (drafter_ || lookup_) {
    SQZ_CHECK(params.max_drafts >= 1, "serve: at least one draft token per step");
    max_drafts_ = std::min(params.max_drafts, slots_.front()->cache.max_chunk() - 1);
    if (drafter_) {
      max_drafts_ = std::min(max_drafts_, drafter_->config().block_size - 1);
      tap_layers_ = drafter_->config().target_layers;
    }
    for (auto& s : slots_) {
      if (drafter_) s->source = std::make_unique<model::DFlashSource>(*drafter_, &pool_);
      else s->source = std::make_unique<model::PromptLookupSource>(max_drafts_);
      s->controller.emplace(max_drafts_, adaptive_drafts_);
    }
  }
  const text::Tokenizer& tok = model.tokenizer();
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.token_type(id) == text::TokenType::unused) banned_.push_back(id);
  stats_.slots = params.parallel;
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<RequestStream> Engine::submit(GenerationRequest request) {
  SQZ_CHECK(!request.prompt.empty() && static_cast<int64_t>(request.prompt.size()) <= n_ctx_,
            "serve: a prompt of ", request.prompt.size(), " tokens (1..", n_ctx_, ")");
  auto stream = std::make_shared<RequestStream>();
  {
    std::lock_guard lock(mu_);
    if (stop_ || draining_ || queue_.size() >= max_queue_) return nullptr;
    queue_.push_back({std::move(request), stream, Clock::now()});
    stats_.queue_length = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return stream;
}

void Engine::drain() {
  std::unique_lock lock(mu_);
  draining_ = true;
  cv_.wait(lock, [&] { return stop_ || (queue_.empty() && stats_.slots_busy == 0); });
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Engine::assign(Job job) {
  const auto& prompt = job.req.prompt;
  if (job.req.keys.empty()) {
    job.req.keys.resize(prompt.size());
    std::transform(prompt.begin(), prompt.end(), job.req.keys.begin(), vision::text_key);
  }
  const auto& keys = job.req.keys;
  Slot* best = nullptr;
  int64_t best_reuse = -1;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.busy()) continue;
    const size_t n = std::min(s.ids.size(), prompt.size() - 1);
    size_t common = 0;
    while (common < n && s.key_at(common) == keys[common]) ++common;
    int64_t reuse = static_cast<int64_t>(common) / chunk_ * chunk_;
    if (reuse > 0 && reuse < s.cache.min_truncate_position()) reuse = 0;  // the rings no longer hold it
    if (reuse > best_reuse || (reuse == best_reuse && s.last_used < best->last_used)) best = &s, best_reuse = reuse;
  }
  Slot& s = *best;
  if (best_reuse > 0) {
    s.cache.truncate(best_reuse);
  } else {
    s.cache.clear();
  }
  if (s.source) s.source->truncate(best_reuse);  // a trimmed DFlash context restarts there
  s.ids.resize(static_cast<size_t>(best_reuse));
  s.prompt_keys = keys;
  s.prefill_pos = best_reuse;
  s.cached = best_reuse;
  s.pending = -1;
  try {
    s.sampler.emplace(job.req.sampling);
    s.checker.emplace(text::StopParams{.eos_ids = job.req.stop_ids, .stop_strings = job.req.stop_strings,
                                       .max_tokens = job.req.max_tokens});
    if (job.req.thinking_budget >= 0 && !thinking_vocab_)
      thinking_vocab_ = std::make_shared<const generate::ThinkingVocab>(model_.tokenizer());  // once per engine
    s.thinking = job.req.thinking_budget >= 0 ? std::make_unique<generate::ThinkingBudget>(thinking_vocab_, job.req.thinking_budget)
                                              : nullptr;
    s.forced.clear();
    s.take_back = -1;
  } catch (const std::exception& e) {
    job.stream->push({.finish = FinishReason::error, .error = e.what()});
    return;
  }
  const auto prompt_size = static_cast<int64_t>(prompt.size());
  s.job = std::move(job);  // `prompt` is gone from here on
  std::lock_guard lock(mu_);
  ++stats_.slots_busy;
  stats_.prompt_tokens += prompt_size;
  stats_.prompt_tokens_cached += best_reuse;
}

void Engine::finish(Slot& s, FinishReason reason, const std::string& error) {
  Update u;
  if (s.checker && s.checker->reason() == text::StopReason::none && reason != FinishReason::error) {
    // A word the thinking budget held back when generation ended (length, cancel) is output.
    if (s.thinking)
      for (int32_t t : s.thinking->finish()) {
        const auto step = s.checker->push(t, model_.tokenizer().token_to_piece(t, {.render_control = s.job->req.render_control}));
        u.text += step.text;
        if (step.stopped()) break;
      }
    if (s.checker->reason() == text::StopReason::none) u.text += s.checker->finish();
  }
  u.finish = reason;
  u.error = error;
  u.prompt_tokens = static_cast<int64_t>(s.job->req.prompt.size());
  u.cached_tokens = s.cached;
  u.completion_tokens = s.checker ? s.checker->n_tokens() : 0;
  const bool started = u.completion_tokens > 0;
  if (started) u.ttft_s = seconds_between(s.job->queued, s.first_token_at);
  s.job->stream->push(std::move(u));
  s.job.reset();
  s.sampler.reset();
  s.checker.reset();
  s.thinking.reset();
  s.forced.clear();
  s.take_back = -1;
  s.pending = -1;
  s.last_used = ++tick_;
  if (reason == FinishReason::error) {  // whatever the cache holds is suspect
    s.cache.clear();
    s.ids.clear();
    if (s.source) s.source->truncate(0);
  }
  std::lock_guard lock(mu_);
  --stats_.slots_busy;
  if (reason == FinishReason::cancelled) {
    ++stats_.requests_cancelled;
  } else {
    ++stats_.requests_finished;
  }
}

void Engine::sample_next(Slot& s, std::span<float> masked) {
  const GenerationRequest& req = s.job->req;
  for (const auto& [id, bias] : req.logit_bias)
    masked[static_cast<size_t>(id)] = bias <= -100.0f ? -INFINITY : masked[static_cast<size_t>(id)] + bias;
  for (int32_t id : banned_) masked[static_cast<size_t>(id)] = -INFINITY;  // in the step's own logits row
  if (s.thinking) s.thinking->mask(masked);  // no `self` header once the budget closed the thinking
  const int32_t next = s.sampler->sample(masked);
  s.sampler->accept(next);

  Update u;
  if (req.top_logprobs >= 0) {  // log-softmax of the model's own distribution
    float mx = -INFINITY;
    for (float l : masked) mx = std::max(mx, l);
    double sum = 0;
    for (float l : masked) sum += std::exp(static_cast<double>(l - mx));
    const float lse = mx + static_cast<float>(std::log(sum));
    TokenLogprob t{next, masked[static_cast<size_t>(next)] - lse, {}};
    if (req.top_logprobs > 0) {
      std::vector<int32_t> order(masked.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
      const size_t k = std::min(order.size(), static_cast<size_t>(req.top_logprobs));
      std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(), [&](int32_t a, int32_t b) {
        return masked[static_cast<size_t>(a)] > masked[static_cast<size_t>(b)] ||
               (masked[static_cast<size_t>(a)] == masked[static_cast<size_t>(b)] && a < b);
      });
      for (size_t i = 0; i < k; ++i) t.top.push_back({order[i], masked[static_cast<size_t>(order[i])] - lse});
    }
    u.logprobs.push_back(std::move(t));
  }

  const auto now = Clock::now();
  {
    std::lock_guard lock(mu_);
    ++stats_.generated_tokens;
    if (s.checker->n_tokens() == 0) {
      stats_.ttft_sum_s += seconds_between(s.job->queued, now);
      ++stats_.ttft_count;
    } else {
      stats_.inter_token_sum_s += seconds_between(s.last_token_at, now);
      ++stats_.inter_token_count;
    }
  }
  if (s.checker->n_tokens() == 0) s.first_token_at = now;
  s.last_token_at = now;

  // What reaches the output: the token, or with a thinking budget what it releases (a word
  // is held until it is finished) and, when it closes the thinking, the closing tokens.
  std::vector<int32_t> out(1, next);
  bool closed = false;
  if (s.thinking) {
    generate::ThinkingBudget::Step step = s.thinking->push(next);
    out = std::move(step.emit);
    if (step.close) {
      closed = true;
      s.take_back = step.take_back;
      s.forced.assign(step.force.begin(), step.force.end());
      out.insert(out.end(), step.force.begin(), step.force.end());
    }
  }
  for (int32_t t : out) {
    const std::string piece = model_.tokenizer().token_to_piece(t, {.render_control = req.render_control});
    const text::StopStep step = s.checker->push(t, piece);
    u.text += step.text;
    if (step.stopped()) {
      s.job->stream->push(std::move(u));
      finish(s, step.reason == text::StopReason::max_tokens ? FinishReason::length : FinishReason::stop);
      return;
    }
  }
  if (s.cache.size() >= n_ctx_) {  // no room to run it: the context is exactly full
    s.job->stream->push(std::move(u));
    finish(s, FinishReason::length);
    return;
  }
  if (!u.text.empty() || !u.logprobs.empty()) s.job->stream->push(std::move(u));
  if (closed) next_forced(s);
  else s.pending = next;
}

void Engine::next_forced(Slot& s) {
  s.pending = s.forced.front();
  s.forced.pop_front();
}

void Engine::apply_take_back(Slot& s) {
  if (s.take_back < 0) return;
  const int64_t pos = s.cache.size() - s.take_back;
  s.take_back = -1;
  if (pos == s.cache.size()) return;
  try {
    SQZ_CHECK(pos >= s.cache.min_truncate_position(), "the thinking budget cannot take back the unfinished word");
    if (s.source) s.source->truncate(pos);
  } catch (const std::exception& e) {
    if (s.busy()) finish(s, FinishReason::error, e.what());
    return;
  }
  s.cache.truncate(pos);
  s.ids.resize(static_cast<size_t>(pos));
}

void Engine::accept_drafts(Slot& s, float* rows, int64_t pos0, const float* taps) {
  const int64_t V = model_.config().n_vocab, drafts = static_cast<int64_t>(s.verify.size()) - 1;
  int64_t kept = 1;  // verify[0] (the pending token) always stays
  s.ids.push_back(s.verify[0]);
  s.pending = -1;
  if (!s.forced.empty()) {  // a forced close is running its tokens: nothing drafted, nothing sampled
    s.cache.truncate(pos0 + 1);
    s.source->commit(std::span<const int32_t>(s.verify.data(), 1), taps);
    next_forced(s);
    return;
  }
  for (int64_t i = 0; i <= drafts; ++i) {
    sample_next(s, std::span<float>(rows + i * V, static_cast<size_t>(V)));
    if (!s.busy() || s.take_back >= 0 || i == drafts || s.pending != s.verify[static_cast<size_t>(i + 1)]) break;
    s.ids.push_back(s.pending);  // the draft the target picked itself: already in the cache
    s.pending = -1;
    ++kept;
  }
  s.cache.truncate(pos0 + kept);
  if (drafts > 0) {
    s.controller->record_verify(drafts, kept - 1, s.draft_seconds);
    std::lock_guard lock(mu_);
    ++stats_.spec_verify_steps;
    stats_.spec_drafted += drafts;
    stats_.spec_accepted += kept - 1;
  }
  // the source follows ids even when the request ended here (the next one may reuse the prefix)
  s.source->commit(std::span<const int32_t>(s.verify.data(), static_cast<size_t>(kept)), taps);
  apply_take_back(s);
}

void Engine::loop() {
  const int64_t V = model_.config().n_vocab;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      const auto any_busy = [&] {
        return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy(); });
      };
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || any_busy(); });
      if (stop_) {
        while (!queue_.empty()) {
          queue_.front().stream->push({.finish = FinishReason::cancelled});
          queue_.pop_front();
        }
        lock.unlock();
        for (auto& s : slots_)
          if (s->busy()) finish(*s, FinishReason::cancelled);
        cv_.notify_all();
        return;
      }
      while (!queue_.empty() && !std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy(); })) {
        Job job = std::move(queue_.front());
        queue_.pop_front();
        stats_.queue_length = static_cast<int64_t>(queue_.size());
        if (job.stream->cancelled()) {
          job.stream->push({.finish = FinishReason::cancelled});
          continue;
        }
        lock.unlock();
        assign(std::move(job));
        lock.lock();
      }
    }
    for (auto& s : slots_)
      if (s->busy() && s->job->stream->cancelled()) finish(*s, FinishReason::cancelled);

    // The step: every decoding slot's pending token, then whole prompt chunks (aligned to
    // multiples of chunk_) oldest request first, while they fit the chunk budget.
    std::vector<model::SequenceChunk> chunks;
    std::vector<Slot*> who;
    for (auto& s : slots_)
      if (s->busy() && !s->prefilling() && s->pending >= 0) {
        if (!s->source) {
          chunks.push_back({.cache = &s->cache, .tokens = &s->pending, .n = 1});
        } else {  // [pending, drafts…]: drafts only while they fit what is left to generate
          const int64_t left = s->job->req.max_tokens - s->checker->n_tokens();
          const int64_t room = std::min(left - 1, n_ctx_ - s->cache.size() - 2);
          const int64_t k = s->forced.empty() ? s->controller->choose(room) : 0;
          s->verify.assign(1, s->pending);
          s->draft_seconds = 0;
          if (k > 0) {
            const auto t0 = Clock::now();
            const auto drafts = s->source->propose(s->pending, k);
            s->draft_seconds = seconds_between(t0, Clock::now());
            s->verify.insert(s->verify.end(), drafts.begin(), drafts.end());
          }
          const auto n = static_cast<int64_t>(s->verify.size());
          chunks.push_back({.cache = &s->cache, .tokens = s->verify.data(), .n = n, .all_logits = n > 1});
        }
        who.push_back(s.get());
      }
    std::vector<Slot*> prefills;
    for (auto& s : slots_)
      if (s->prefilling()) prefills.push_back(s.get());
    std::sort(prefills.begin(), prefills.end(), [](Slot* a, Slot* b) { return a->job->queued < b->job->queued; });
    int64_t budget = chunk_;
    for (Slot* s : prefills) {
      const int64_t end = static_cast<int64_t>(s->job->req.prompt.size());
      const int64_t n = std::min(end, (s->prefill_pos / chunk_ + 1) * chunk_) - s->prefill_pos;
      if (n > budget) break;
      budget -= n;
      const auto& embeddings = s->job->req.embeddings;
      chunks.push_back({.cache = &s->cache, .tokens = s->job->req.prompt.data() + s->prefill_pos, .n = n,
                        .embeddings = embeddings.empty() ? nullptr : embeddings.data() + s->prefill_pos});
      who.push_back(s);
    }
    if (chunks.empty()) {
      cv_.notify_all();  // drain() waits for idle
      continue;
    }
    logits_.resize(static_cast<size_t>(model::logit_rows(chunks) * V));
    int64_t step_rows = 0;
    std::vector<int64_t> pos0(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) pos0[i] = chunks[i].cache->size(), step_rows += chunks[i].n;
    const bool tapping = !tap_layers_.empty();
    if (tapping) taps_.resize(static_cast<size_t>(step_rows * static_cast<int64_t>(tap_layers_.size()) * model_.config().n_embd));
    const auto t_step = Clock::now();
    try {
      model::forward_step(model_, pool_, scratch_, chunks, logits_.data(),
                          {.batch_invariant = true, .tap_layers = tapping ? &tap_layers_ : nullptr,
                           .taps = tapping ? taps_.data() : nullptr});
    } catch (const std::exception& e) {
      for (Slot* s : who) finish(*s, FinishReason::error, e.what());
      cv_.notify_all();
      continue;
    }
    {
      std::lock_guard lock(mu_);
      ++stats_.steps;
      size_t kv = 0;
      for (auto& s : slots_) kv += s->cache.memory().bytes_held;
      stats_.kv_bytes_held = kv;
    }
    const double step_s = seconds_between(t_step, Clock::now());
    const int64_t tap_width = static_cast<int64_t>(tap_layers_.size()) * model_.config().n_embd;
    size_t logit_row = 0;
    int64_t step_row = 0;
    for (size_t i = 0; i < who.size(); ++i) {
      Slot& s = *who[i];
      float* rows = logits_.data() + logit_row * static_cast<size_t>(V);
      logit_row += static_cast<size_t>(chunks[i].all_logits ? chunks[i].n : 1);
      const float* taps = tapping ? taps_.data() + step_row * tap_width : nullptr;
      step_row += chunks[i].n;
      const std::span<float> row(rows, static_cast<size_t>(V));
      if (s.prefilling()) {
        s.ids.insert(s.ids.end(), chunks[i].tokens, chunks[i].tokens + chunks[i].n);
        if (s.source) s.source->commit(std::span<const int32_t>(chunks[i].tokens, static_cast<size_t>(chunks[i].n)), taps);
        s.prefill_pos += chunks[i].n;
        if (s.prefilling()) continue;  // more prompt to run
      } else if (s.source) {
        s.controller->record_step(chunks[i].n, step_s);
        accept_drafts(s, rows, pos0[i], taps);
        continue;
      } else {
        s.ids.push_back(s.pending);
        s.pending = -1;
        if (!s.forced.empty()) {  // a forced close runs its tokens without sampling
          if (s.cache.size() >= n_ctx_) finish(s, FinishReason::length);
          else next_forced(s);
          continue;
        }
      }
      sample_next(s, row);
      apply_take_back(s);
    }
    cv_.notify_all();
  }
}

}  // namespace squeeze::serve
