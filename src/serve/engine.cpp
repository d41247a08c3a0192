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
  std::optional<generate::Sequence> seq;  // the request's generation (generate/sequence.h)
  int64_t prefill_pos = 0;   // next prompt position to run while < prompt size
  int64_t cached = 0;        // prompt tokens reused from the cache
  // the tokens of this step: what the sequence feeds, then `drafts` drafts from the source
  // (which follows ids)
  std::vector<int32_t> run;
  int64_t drafts = 0;
  std::unique_ptr<model::DraftSource> source;
  std::optional<model::DraftLengthController> controller;
  double draft_seconds = 0;
  uint64_t last_used = 0;
  Clock::time_point first_token_at, last_token_at;
  bool busy() const { return job.has_value(); }
  bool prefilling() const { return busy() && prefill_pos < static_cast<int64_t>(job->req.prompt.size()); }
  bool decoding() const { return busy() && !prefilling() && seq && !seq->feed().empty(); }
};

Engine::Engine(const model::Model& model, EngineParams params)
    : model_(model),
      pool_(params.pool ? *params.pool : default_thread_pool()),
      n_ctx_(params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(model.config().n_ctx, 4096)),
      chunk_(std::max<int64_t>(1, params.chunk)),
      max_queue_(static_cast<size_t>(std::max<int64_t>(0, params.max_queue))),
      kv_type_(params.kv_type),
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
  banned_ = generate::unused_tokens(tok);
  // A decoding slot runs its pending token and drafts, or the tokens of a forced close.
  slot_rows_ = 1 + max_drafts_;
  if (generate::ThinkingBudget::supports(tok)) {
    thinking_vocab_ = std::make_shared<const generate::ThinkingVocab>(tok);
    slot_rows_ = std::max(slot_rows_, thinking_vocab_->close_length());
  }
  scratch_.emplace(model.config(), params.parallel * slot_rows_ + chunk_);
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

std::vector<std::shared_ptr<RequestStream>> Engine::submit_group(std::vector<GenerationRequest> requests) {
  SQZ_CHECK(!requests.empty(), "serve: an empty group of requests");
  for (const GenerationRequest& r : requests) {
    SQZ_CHECK(!r.prompt.empty() && static_cast<int64_t>(r.prompt.size()) <= n_ctx_, "serve: a prompt of ", r.prompt.size(),
              " tokens (1..", n_ctx_, ")");
    SQZ_CHECK(r.prompt == requests.front().prompt, "serve: a group's requests share one prompt");
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < requests.size(); ++i) streams.push_back(std::make_shared<RequestStream>());
  {
    std::lock_guard lock(mu_);
    if (stop_ || draining_ || queue_.size() + requests.size() > max_queue_) return {};
    for (size_t i = 0; i < requests.size(); ++i)
      queue_.push_back({std::move(requests[i]), streams[i], Clock::now(), i == 0 ? nullptr : streams[0]});
    stats_.queue_length = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return streams;
}

bool Engine::waits_for_leader(const Job& job) const {
  // With draft sources no slot lends its K/V (assign()): nothing to wait for.
  if (!job.leader || drafter_ || lookup_ || job.stream->cancelled()) return false;
  for (const auto& s : slots_)
    if (s->busy() && s->job->stream == job.leader) return s->prefilling();
  return false;  // the leader has finished (its slot keeps the prompt) or never started
}

std::optional<std::vector<float>> Engine::hidden_states(std::vector<int32_t> tokens) {
  SQZ_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) <= n_ctx_, "serve: an input of ", tokens.size(),
            " tokens (1..", n_ctx_, ")");
  std::future<std::vector<float>> result;
  {
    std::lock_guard lock(mu_);
    if (stop_ || draining_) throw EngineStopping("serve: the engine is stopping");
    if (embed_queue_.size() >= max_queue_) return std::nullopt;
    EmbedJob job;
    job.tokens = std::move(tokens);
    embed_queue_.push_back(std::move(job));
    result = embed_queue_.back().result.get_future();
  }
  cv_.notify_all();
  return result.get();
}

// A fresh sequence in chunks (the batch-invariant products of generation), on the
// scheduler's thread, so it never runs beside a step on the same pool; one chunk per
// iteration, so a long input delays running streams by a chunk at a time.
void Engine::embed_chunk(EmbedJob& job) {
  const int64_t E = model_.config().n_embd;
  const auto n = static_cast<int64_t>(job.tokens.size());
  try {
    if (!job.cache) {
      job.cache = std::make_unique<model::KvCache>(model::sequence_cache_config(model_.config(), n, chunk_, kv_type_, chunk_));
      job.out.resize(static_cast<size_t>(n * E));
    }
    const int64_t m = std::min(chunk_, n - job.pos);
    const model::SequenceChunk chunk{.cache = job.cache.get(), .tokens = job.tokens.data() + job.pos, .n = m};
    model::forward_step(model_, pool_, *scratch_, std::span(&chunk, 1), nullptr,
                        {.batch_invariant = true, .hidden_out = job.out.data() + job.pos * E});
    job.pos += m;
    if (job.pos == n) job.result.set_value(std::move(job.out));
  } catch (...) {
    job.pos = n;
    job.result.set_exception(std::current_exception());
  }
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
  // A running slot sharing more of the prompt lends its K/V to the least recently used idle slot.
  Slot* donor = nullptr;
  int64_t donor_reuse = 0;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.busy() || s.source) continue;
    const size_t n = std::min({s.ids.size(), static_cast<size_t>(s.cache.size()), prompt.size() - 1});
    size_t common = 0;
    while (common < n && s.key_at(common) == keys[common]) ++common;
    int64_t reuse = static_cast<int64_t>(common) / chunk_ * chunk_;
    if (reuse > 0 && reuse < s.cache.min_truncate_position()) reuse = 0;
    if (reuse > donor_reuse) donor = &s, donor_reuse = reuse;
  }
  const bool copied = donor && donor_reuse > best_reuse;
  if (copied) {
    for (auto& sp : slots_)
      if (!sp->busy() && sp->last_used <= best->last_used) best = sp.get();
    best->cache.copy_prefix_from(donor->cache, donor_reuse);
    best->ids.assign(donor->ids.begin(), donor->ids.begin() + donor_reuse);
    best_reuse = donor_reuse;
  }
  Slot& s = *best;
  if (copied) {
    // the cache ends at best_reuse already
  } else if (best_reuse > 0) {
    s.cache.truncate(best_reuse);
  } else {
    s.cache.clear();
  }
  if (s.source) s.source->truncate(best_reuse);  // a trimmed DFlash context restarts there
  s.ids.resize(static_cast<size_t>(best_reuse));
  s.prompt_keys = keys;
  s.prefill_pos = best_reuse;
  s.cached = best_reuse;
  s.first_token_at = {};
  try {
    const GenerationRequest& req = job.req;
    SQZ_CHECK(req.thinking_budget < 0 || thinking_vocab_, "a thinking budget needs a model that thinks apart from its answer");
    s.seq.emplace(model_.tokenizer(), text::Sampler(req.sampling),
                  generate::SequenceParams{.stop = {.eos_ids = req.stop_ids,
                                                    .stop_strings = req.stop_strings,
                                                    .max_tokens = req.max_tokens},
                                           .n_ctx = n_ctx_,
                                           .render_control = req.render_control,
                                           .top_logprobs = req.top_logprobs,
                                           .logit_bias = req.logit_bias,
                                           .grammar = req.grammar,
                                           .vocab_trie = req.vocab_trie},
                  [&]() -> std::unique_ptr<generate::ThinkingBudget> {
                    if (req.thinking_budget < 0) return nullptr;
                    auto b = std::make_unique<generate::ThinkingBudget>(thinking_vocab_, req.thinking_budget);
                    if (req.thinking_started) b->start_in_thinking();
                    return b;
                  }(),
                  banned_);
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
  // What the sequence still holds (a word the thinking budget held back, a possible stop
  // string's start) is output when it ends for a length or a cancel.
  if (s.seq && reason != FinishReason::error) u.text = s.seq->flush();
  u.finish = reason;
  u.error = error;
  u.prompt_tokens = static_cast<int64_t>(s.job->req.prompt.size());
  u.cached_tokens = s.cached;
  u.completion_tokens = s.seq ? s.seq->n_tokens() : 0;
  const bool started = u.completion_tokens > 0;
  if (started) u.ttft_s = seconds_between(s.job->queued, s.first_token_at);
  s.job->stream->push(std::move(u));
  s.job.reset();
  s.seq.reset();
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

model::SequenceChunk Engine::decode_chunk(Slot& s) {
  const std::vector<int32_t>& feed = s.seq->feed();
  s.run.assign(feed.begin(), feed.end());
  s.drafts = 0;
  s.draft_seconds = 0;
  if (s.source) {
    const int64_t k = s.controller->choose(s.seq->draft_room());
    if (k > 0) {
      const auto t0 = Clock::now();
      const auto drafts = s.source->propose(s.run[0], k);
      s.draft_seconds = seconds_between(t0, Clock::now());
      s.run.insert(s.run.end(), drafts.begin(), drafts.end());
      s.drafts = static_cast<int64_t>(drafts.size());
    }
  }
  return {.cache = &s.cache, .tokens = s.run.data(), .n = static_cast<int64_t>(s.run.size()), .all_logits = s.drafts > 0};
}

void Engine::advance(Slot& s, const float* rows, int64_t pos0, const float* taps, double step_s) {
  const auto V = static_cast<size_t>(model_.config().n_vocab);
  const size_t n_rows = s.drafts > 0 ? s.run.size() : 1;
  const std::span<const int32_t> drafts(s.run.data() + (s.run.size() - static_cast<size_t>(s.drafts)),
                                        static_cast<size_t>(s.drafts));
  if (s.source && pos0 >= 0) s.controller->record_step(static_cast<int64_t>(s.run.size()), step_s);
  generate::Sequence::Step step = s.seq->advance(std::span<const float>(rows, n_rows * V), drafts);

  if (step.sampled > 0) {
    const auto now = Clock::now();
    const bool first = s.first_token_at == Clock::time_point{};
    {
      std::lock_guard lock(mu_);
      stats_.generated_tokens += step.sampled;
      if (first) {
        stats_.ttft_sum_s += seconds_between(s.job->queued, now);
        ++stats_.ttft_count;
        stats_.inter_token_count += step.sampled - 1;  // the walk's further tokens came with it
      } else {
        stats_.inter_token_sum_s += seconds_between(s.last_token_at, now);
        stats_.inter_token_count += step.sampled;
      }
    }
    if (first) s.first_token_at = now;
    s.last_token_at = now;
  }

  // The cache keeps what the sequence kept of the tokens just run (none after the prompt).
  if (pos0 >= 0) {
    s.cache.truncate(pos0 + step.keep);
    s.ids.insert(s.ids.end(), s.run.begin(), s.run.begin() + step.keep);
    // the source follows ids even when the request ends here (the next one may reuse the prefix)
    if (s.source) s.source->commit(std::span<const int32_t>(s.run.data(), static_cast<size_t>(step.keep)), taps);
    if (s.drafts > 0) {
      s.controller->record_verify(s.drafts, step.keep - 1, s.draft_seconds);
      std::lock_guard lock(mu_);
      ++stats_.spec_verify_steps;
      stats_.spec_drafted += s.drafts;
      stats_.spec_accepted += step.keep - 1;
    }
  }
  if (step.take_back > 0) {  // a forced close: the unfinished word leaves the cache
    const int64_t pos = s.cache.size() - step.take_back;
    try {
      SQZ_CHECK(pos >= s.cache.min_truncate_position(), "the thinking budget cannot take back the unfinished word");
      if (s.source) s.source->truncate(pos);
    } catch (const std::exception& e) {
      finish(s, FinishReason::error, e.what());
      return;
    }
    s.cache.truncate(pos);
    s.ids.resize(static_cast<size_t>(pos));
  }

  Update u{.text = std::move(step.text), .logprobs = std::move(step.logprobs)};
  switch (s.seq->finish_reason()) {
    case generate::Finish::none:
      if (!u.text.empty() || !u.logprobs.empty()) s.job->stream->push(std::move(u));
      return;
    case generate::Finish::stop:
      s.job->stream->push(std::move(u));
      finish(s, FinishReason::stop);
      return;
    case generate::Finish::max_tokens:
    case generate::Finish::context_full:
      s.job->stream->push(std::move(u));
      finish(s, FinishReason::length);
      return;
  }
}

void Engine::loop() {
  const int64_t V = model_.config().n_vocab;
  std::optional<EmbedJob> embedding;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      const auto any_busy = [&] {
        return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy(); });
      };
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !embed_queue_.empty() || any_busy(); });
      if (stop_) {
        for (EmbedJob& e : embed_queue_)
          e.result.set_exception(std::make_exception_ptr(EngineStopping("serve: the engine stopped")));
        embed_queue_.clear();
        while (!queue_.empty()) {
          queue_.front().stream->push({.finish = FinishReason::cancelled});
          ++stats_.requests_cancelled;
          queue_.pop_front();
        }
        lock.unlock();
        for (auto& s : slots_)
          if (s->busy()) finish(*s, FinishReason::cancelled);
        cv_.notify_all();
        return;
      }
      while (!queue_.empty() && !std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy(); })) {
        if (waits_for_leader(queue_.front())) break;  // admitted once the group's prompt is in a cache
        Job job = std::move(queue_.front());
        queue_.pop_front();
        stats_.queue_length = static_cast<int64_t>(queue_.size());
        if (job.stream->cancelled()) {  // its client left while it waited: a cancelled request too
          job.stream->push({.finish = FinishReason::cancelled});
          ++stats_.requests_cancelled;
          continue;
        }
        lock.unlock();
        assign(std::move(job));
        lock.lock();
      }
      if (!embed_queue_.empty()) embedding = std::move(embed_queue_.front()), embed_queue_.pop_front();
    }
    if (embedding) {  // one chunk; an unfinished job goes back to the head of the queue
      embed_chunk(*embedding);
      if (embedding->pos < static_cast<int64_t>(embedding->tokens.size())) {
        std::lock_guard lock(mu_);
        embed_queue_.push_front(std::move(*embedding));
      }
      embedding.reset();
    }
    for (auto& s : slots_)
      if (s->busy() && s->job->stream->cancelled()) finish(*s, FinishReason::cancelled);

    // The step: what every decoding slot's sequence feeds (its pending token with drafts, or
    // the tokens of a forced close), then whole prompt chunks (aligned to multiples of
    // chunk_) oldest request first, while they fit the chunk budget.
    std::vector<model::SequenceChunk> chunks;
    std::vector<Slot*> who;
    for (auto& s : slots_)
      if (s->decoding()) {
        chunks.push_back(decode_chunk(*s));
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
      model::forward_step(model_, pool_, *scratch_, chunks, logits_.data(),
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
      // A sequence that throws (a sampler fed nothing it may sample) ends its request with
      // an error; the others go on.
      const auto advance_or_fail = [&](int64_t p0) {
        try {
          advance(s, rows, p0, taps, step_s);
        } catch (const std::exception& e) {
          finish(s, FinishReason::error, e.what());
        }
      };
      if (!s.prefilling()) {
        advance_or_fail(pos0[i]);
        continue;
      }
      s.ids.insert(s.ids.end(), chunks[i].tokens, chunks[i].tokens + chunks[i].n);
      if (s.source) s.source->commit(std::span<const int32_t>(chunks[i].tokens, static_cast<size_t>(chunks[i].n)), taps);
      s.prefill_pos += chunks[i].n;
      if (s.prefilling()) continue;  // more prompt to run
      const auto& prompt = s.job->req.prompt;
      s.seq->start(static_cast<int64_t>(prompt.size()), prompt);
      s.run.clear();
      s.drafts = 0;
      advance_or_fail(/*pos0=*/-1);  // the first token, from the prompt's last row
    }
    cv_.notify_all();
  }
}

}  // namespace squeeze::serve
