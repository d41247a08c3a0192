// serve/agent_context.h — the context of a computer-use agent: a system message, then per
// step a screenshot (with optional text) from the environment and the action the model
// took. Only the most recent screenshots stay in the context (OSWorld's baseline agent
// keeps 3, Agent S3 8); older ones become a short text placeholder. Every removal edits
// the prompt behind the newer screenshots, so how the KV cache meets the edit decides
// what each step costs.
//
// Retention. With `keep` screenshots and eviction in batches of `batch` (the trick of
// Anthropic's computer-use demo: removing images k at a time keeps the prompt's prefix
// stable for k − 1 steps), of n screenshots the oldest
//   evicted(n) = floor(max(0, n − keep) / batch) · batch
// are placeholders: between keep and keep + batch − 1 stay. batch = 1 keeps exactly the
// last `keep`.
//
// Reuse rule. Each sync() renders the context, widens the screenshots to their tokens and
// compares row keys (vision/image_prompt.h) with what the cache holds: p = the first
// position that differs. Then recomputation starts at
//   - p, when the cache only grows (p = its length) or can roll back to p: global layers
//     keep every position, and a local layer's ring still holds the window before p
//     (KvCache::min_truncate_position, i.e. p is within the ring's headroom of the end);
//   - else s, the latest ring snapshot at or before p (Reuse::snapshots): one is taken at
//     every screenshot's <|image_start|> as it is prefilled, and an eviction's first
//     change is exactly such a position, so s = p in practice;
//   - else 0. Not p − window: the K/V of the window before p in a local layer depend,
//     through the layers below, on positions further back that the rings no longer hold,
//     so recomputing only the window would not reproduce them.
// Every rule is exact: the logits equal a recompute of the whole context from position 0
// (bit for bit with batch-invariant products; tests/serve/test_agent_context.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chat/value.h"
#include "model/session.h"
#include "generate/chat_format.h"
#include "vision/image_features.h"
#include "vision/image_prompt.h"

namespace squeeze::serve {

enum class AgentReuse { none, prefix, snapshots };
const char* agent_reuse_name(AgentReuse r);

struct AgentParams {
  int64_t keep = 3;        // screenshots kept in the context
  int64_t batch = 1;       // evicted together
  AgentReuse reuse = AgentReuse::snapshots;
  std::string placeholder = "[earlier screenshot removed]";
  chat::Json template_variables = chat::Json::object();  // e.g. reasoning_effort
};

// Screenshots, of n taken, that are placeholders under (keep, batch).
int64_t evicted_screenshots(int64_t n, int64_t keep, int64_t batch);

struct AgentSync {
  int64_t prompt_tokens = 0;    // the rendered context with its generation prompt
  int64_t first_change = 0;     // first position that differs from the cache
  int64_t recompute_from = 0;   // where prefill started (reused = this many)
  int64_t prefilled = 0;        // prompt_tokens − recompute_from
  const char* how = "";         // "extend", "rollback", "snapshot", "from 0"
  int64_t screenshots = 0, in_context = 0;
  size_t snapshot_bytes = 0;    // ring snapshots held
  double seconds = 0;           // prefill wall time
};

class AgentContext {
 public:
  AgentContext(model::Session& session, const generate::ChatFormat& format, vision::ImageTokenIds tokens, AgentParams params);

  void set_system(std::string text) { system_ = std::move(text); }
  // A new observation: the screenshot's features and text shown with it.
  void observe(std::shared_ptr<const vision::ImageFeatures> screenshot, std::string text = {});
  // The action the model took (its answer's text).
  void act(std::string action);

  // The messages as the template gets them (placeholders in place of evicted screenshots).
  chat::Json messages() const;
  // Brings the session's cache to the rendered context plus the generation prompt.
  AgentSync sync();
  // The logits of the context's last token (after sync()).
  std::span<const float> logits() const { return logits_; }
  // Tokens the caller ran through the session after sync() (an answer being generated).
  void forwarded(int32_t id) { keys_.push_back(vision::text_key(id)); }
  // Observation indices of the screenshots in the context, oldest first.
  std::vector<int64_t> kept() const;

 private:
  struct Step {
    std::shared_ptr<const vision::ImageFeatures> screenshot;
    std::string text, action;
    bool acted = false;
  };
  model::Session& session_;
  const generate::ChatFormat& format_;
  vision::ImageTokenIds tokens_;
  AgentParams params_;
  std::string system_;
  std::vector<Step> steps_;
  std::vector<uint64_t> keys_;  // keys_[p]: what cache position p holds
  std::vector<std::shared_ptr<const vision::ImageFeatures>> held_;  // the rows the cache came from
  std::vector<model::KvRingSnapshot> snapshots_;  // ascending positions, all ≤ the cache's length
  std::span<const float> logits_;
};

}  // namespace squeeze::serve
