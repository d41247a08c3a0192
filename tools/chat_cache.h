// tools/chat_cache.h — a model session that remembers which token ids its KV cache
// holds, so each new rendering of a conversation runs only what differs from the last:
// the cache is rolled back to the common prefix and the rest is prefilled.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/session.h"
#include "model/speculative.h"
#include "vision/image_prompt.h"

namespace squeeze::cli {

class PromptCache {
 public:
  // With a speculator, prompts go through it so its draft source follows the cache.
  explicit PromptCache(model::Session& session, model::Speculator* speculator = nullptr)
      : session_(session), speculator_(speculator) {}

  struct Prefill {
    size_t reused = 0;     // prompt tokens whose K/V were already cached
    size_t prefilled = 0;  // prompt tokens run now
    std::span<const float> logits;  // of the prompt's last token; valid until the next forward
  };
  // Makes the cache hold exactly `prompt` (non-empty, at most n_ctx tokens) and returns
  // the logits of its last token.
  Prefill prefill(const std::vector<int32_t>& prompt);
  // The same for a prompt with images (vision/image_prompt.h): the prefix is compared by
  // row keys, so an image reused is an image with the same bytes. No speculator then.
  Prefill prefill(const vision::PromptRows& prompt);
  // A generated token that was run through the session (DecodeParams::forwarded).
  std::vector<int32_t>& ids() { return ids_; }
  void reset();

 private:
  model::Session& session_;
  model::Speculator* speculator_;
  Prefill run(std::span<const int32_t> prompt, std::span<const float* const> embeddings, std::span<const uint64_t> keys);

  std::vector<int32_t> ids_;  // ids_[p] is the token at cache position p
  // keys_[p]: the key of position p (vision/image_prompt.h) for the last prompt's rows;
  // positions past it (generated tokens) are their ids' text keys.
  std::vector<uint64_t> keys_;
  std::vector<std::shared_ptr<const vision::ImageFeatures>> images_;  // the cached prompt's
};

}  // namespace squeeze::cli
