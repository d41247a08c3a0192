// serve/engine.h — the continuous-batching generation engine behind `squeeze serve`.
//
// `parallel` slots, each a sequence with its own KV cache (rings for local layers). One
// scheduler thread runs steps: every decoding slot's next token plus prompt chunks of
// slots that are prefilling, as one model::forward_step (weights read once per step), so
// a long prompt never stalls running streams for more than one chunk's compute.
//
// Determinism: steps run in batch-invariant mode and prompts are prefilled in chunks
// aligned to multiples of `chunk` positions, so a request's tokens are bit-identical
// whatever else shares its steps (greedy answers alone equal answers under load).
//
// Prefix reuse: a new request goes to the idle slot whose cached tokens share the longest
// prefix with its prompt. The reused length is that prefix rounded down to a multiple of
// `chunk` (so the rest is chunked as a fresh prefill would be), at most prompt − 1 (the
// last prompt token is always run, for its logits), and only if the cache can roll back to
// it: global layers always can; a local layer's ring must still hold the window before it
// (KvCache::min_truncate_position()), otherwise the prompt is prefilled from position 0.
//
// A running slot's prompt is shared the same way: when a busy slot's cache shares a longer
// prefix than any idle one (the same rounding and rollback rule), its K/V up to that length
// are copied into an idle slot (KvCache::copy_prefix_from) — a request with the same system
// prompt as a running one, or the n choices of one request. Not with draft sources, whose
// per-slot state follows the slot's own history.
//
// Groups (OpenAI's n): submit_group() queues n requests with one prompt; the first runs its
// prompt, and the others wait at the head of the queue until its prefill is done, then copy
// it, so the prompt is prefilled once (up to the last, partial chunk).
//
// Requests talk to the engine through a RequestStream: the engine pushes Updates (text as
// the stop checker releases it, per-token log-probabilities, then one final Update with
// the finish reason and counts); the client side pops them and may cancel at any time
// (a disconnect), which frees the slot at the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/drafter.h"
#include "model/forward.h"
#include "model/speculative.h"
#include "model/model.h"
#include "generate/sequence.h"
#include "generate/thinking_budget.h"
#include "text/sampler.h"
#include "vision/image_features.h"

namespace squeeze::serve {

using TopLogprob = generate::TopLogprob;
using TokenLogprob = generate::TokenLogprob;

enum class FinishReason { none, stop, length, cancelled, error };

// The engine stopped (shutdown) before it could take or finish the work.
struct EngineStopping : Error {
  using Error::Error;
};
const char* finish_reason_name(FinishReason r);

struct Update {
  std::string text = {};                 // generated text released now (may be empty)
  std::vector<TokenLogprob> logprobs = {};  // one per token sampled in this update, when asked
  FinishReason finish = FinishReason::none;  // set on the last update only
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;  // on the last update
  double ttft_s = 0;                     // queue + prefill time, on the last update
  std::string error = {};                // FinishReason::error: why
};

// The channel between one request and the engine. Thread-safe.
class RequestStream {
 public:
  void push(Update u);
  // The next update, or nullopt after `timeout` without one.
  std::optional<Update> pop(std::chrono::milliseconds timeout);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Update> updates_;
  std::atomic<bool> cancelled_{false};
};

struct GenerationRequest {
  std::vector<int32_t> prompt;           // 1 ≤ size ≤ the slot context
  text::SamplerParams sampling;
  std::vector<int32_t> stop_ids;         // end-of-generation tokens (not part of the text)
  std::vector<std::string> stop_strings;
  int64_t max_tokens = 0;                // ≥ 1; the context may end it sooner (finish: length)
  bool render_control = false;           // control tokens' text in the output (Muse Glimmer's framing)
  int top_logprobs = -1;                 // -1: no log-probabilities; 0..20: with that many alternatives
  // Added to a token's logit before sampling (OpenAI's logit_bias, -100..100; -100 bans).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Grammar-constrained output (response_format): both or neither (generate/sequence.h).
  std::shared_ptr<const generate::JsonGrammar> grammar;
  std::shared_ptr<const generate::VocabTrie> vocab_trie;
  // Thinking tokens allowed in the turn (generate/thinking_budget.h; the prompt ends with
  // `<|start|>assistant`, or for `<think>` framing before the thinking or inside it when
  // `thinking_started`); -1: no budget.
  int64_t thinking_budget = -1;
  bool thinking_started = false;  // the prompt already opened `<think>`
  // A prompt with images (vision/image_prompt.h): per prompt token, null or the image row
  // it enters as (empty: no images); the rows' keys, which prefix reuse compares (empty:
  // the ids); the features the rows point into.
  std::vector<const float*> embeddings;
  std::vector<uint64_t> keys;
  std::vector<std::shared_ptr<const vision::ImageFeatures>> images;
};

struct EngineParams {
  int64_t parallel = 4;      // slots
  int64_t n_ctx = 0;         // context per slot; 0: the model's, at most 4096
  int64_t chunk = 64;        // prompt tokens per chunk (and the prefill budget of one step)
  int64_t max_queue = 256;   // requests waiting for a slot; more are refused
  model::KvType kv_type = model::KvType::F16;
  ThreadPool* pool = nullptr;  // null: default_thread_pool()
  // Speculative decoding per slot (model/speculative.h): a DFlash drafter for the model, or
  // prompt lookup; drafts ride in the slot's chunk of the step and are verified there.
  const model::Drafter* drafter = nullptr;
  bool lookup = false;
  int64_t max_drafts = 15;
  bool adaptive_drafts = true;
};

// A consistent copy of the engine's counters (for /metrics).
struct EngineStats {
  int64_t slots = 0, slots_busy = 0, queue_length = 0;
  int64_t requests_finished = 0, requests_cancelled = 0;
  int64_t prompt_tokens = 0, prompt_tokens_cached = 0, generated_tokens = 0;
  int64_t steps = 0;
  double ttft_sum_s = 0, inter_token_sum_s = 0;
  int64_t ttft_count = 0, inter_token_count = 0;
  size_t kv_bytes_held = 0;
  int64_t spec_verify_steps = 0, spec_drafted = 0, spec_accepted = 0;  // speculative decoding
};

class Engine {
 public:
  Engine(const model::Model& model, EngineParams params);
  ~Engine();  // stops the scheduler; running requests end with FinishReason::cancelled
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int64_t n_ctx() const { return n_ctx_; }
  int64_t parallel() const { return static_cast<int64_t>(slots_.size()); }

  // Queues a request; nullptr when the queue is full. The request must be valid (the
  // HTTP layer checks prompt length and parameters first); the sampler is built here.
  std::shared_ptr<RequestStream> submit(GenerationRequest request);
  // Requests with one prompt (OpenAI's n): their streams, in order, or empty when the queue
  // has no room for all of them.
  std::vector<std::shared_ptr<RequestStream>> submit_group(std::vector<GenerationRequest> requests);
  // The final norm's output ([tokens, n_embd], what the head reads) of `tokens` run as a
  // sequence of their own, one chunk per scheduler iteration between generation steps
  // (OpenAI's embeddings). Blocks until done; nullopt when max_queue inputs already wait.
  // Throws EngineStopping when the engine stops first, Error when the input is empty or
  // longer than a slot's context.
  std::optional<std::vector<float>> hidden_states(std::vector<int32_t> tokens);
  // Stops taking requests and returns once every queued and running one has finished.
  void drain();
  EngineStats stats() const;

 private:
  struct Job {
    GenerationRequest req;
    std::shared_ptr<RequestStream> stream;
    std::chrono::steady_clock::time_point queued;
    std::shared_ptr<RequestStream> leader = nullptr;  // a group's first request, which prefills the prompt
  };
  struct Slot;

  struct EmbedJob {
    std::vector<int32_t> tokens;
    std::promise<std::vector<float>> result;
    std::unique_ptr<model::KvCache> cache;  // while it runs
    std::vector<float> out;
    int64_t pos = 0;                         // tokens run so far
  };

  void loop();
  // One chunk of the embedding job at the head of the queue (the scheduler's thread).
  void embed_chunk(EmbedJob& job);
  void assign(Job job);                 // a queued job to an idle slot (prefix reuse)
  bool waits_for_leader(const Job& job) const;  // its group's first request is still prefilling
  void finish(Slot& s, FinishReason reason, const std::string& error = {});
  // The slot's chunk of the step: what its sequence feeds, with drafts when they may follow.
  model::SequenceChunk decode_chunk(Slot& s);
  // After the step: the slot's sequence walks its rows (generate/sequence.h); the cache, the
  // ids and the draft source keep what it keeps and drop what it takes back; the text goes
  // to the request.
  void advance(Slot& s, const float* rows, int64_t pos0, const float* taps, double step_s);

  const model::Model& model_;
  ThreadPool& pool_;
  int64_t n_ctx_, chunk_;
  size_t max_queue_;
  model::KvType kv_type_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::optional<model::ForwardScratch> scratch_;  // rows for every slot's decode and one prompt chunk
  std::vector<float> logits_;
  const model::Drafter* drafter_;
  bool lookup_;
  int64_t max_drafts_ = 0;            // 0: no speculative decoding
  bool adaptive_drafts_;
  std::vector<int64_t> tap_layers_;   // the drafter's
  std::vector<float> taps_;           // the step's tapped rows
  std::vector<int32_t> banned_;        // tokens of type `unused`: never sampled
  std::shared_ptr<const generate::ThinkingVocab> thinking_vocab_;  // a thinking framing: what every budget reads
  int64_t slot_rows_ = 1;             // the most rows a decoding slot runs in one step

  mutable std::mutex mu_;              // guards queue_, stop_, draining_, stats_
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::deque<EmbedJob> embed_queue_;
  bool stop_ = false, draining_ = false;
  EngineStats stats_;
  uint64_t tick_ = 0;                  // LRU clock of slots
  std::thread thread_;
};

}  // namespace squeeze::serve
