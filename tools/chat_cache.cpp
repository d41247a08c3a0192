// tools/chat_cache.cpp — KV cache reuse across the turns of a chat.
#include "chat_cache.h"

#include <algorithm>

#include "generate/conversation.h"
#include "core/error.h"

namespace squeeze::cli {

using namespace generate;

PromptCache::Prefill PromptCache::prefill(const std::vector<int32_t>& prompt) {
  std::vector<uint64_t> keys(prompt.size());
  std::transform(prompt.begin(), prompt.end(), keys.begin(), vision::text_key);
  images_.clear();
  return run(prompt, {}, keys);
}

PromptCache::Prefill PromptCache::prefill(const vision::PromptRows& prompt) {
  SQZ_CHECK(prompt.images.empty() || speculator_ == nullptr, "images with speculative decoding are not supported yet");
  auto r = run(prompt.ids, prompt.embeddings, prompt.keys);
  images_ = prompt.images;  // the rows the cache was built from stay alive with it
  return r;
}

PromptCache::Prefill PromptCache::run(std::span<const int32_t> prompt, std::span<const float* const> embeddings,
                                      std::span<const uint64_t> keys) {
  SQZ_CHECK(!prompt.empty(), "the chat prompt encodes to no tokens");
  SQZ_CHECK(static_cast<int64_t>(prompt.size()) <= session_.n_ctx(), "the chat prompt has ", prompt.size(),
            " tokens, more than the context of ", session_.n_ctx());
  SQZ_CHECK(static_cast<int64_t>(ids_.size()) == session_.position(), "chat cache out of step with its session");
  // What the cache holds, as keys: the last prompt's, then the generated tokens'.
  std::vector<uint64_t> cached(ids_.size());
  for (size_t p = 0; p < ids_.size(); ++p) cached[p] = p < keys_.size() ? keys_[p] : vision::text_key(ids_[p]);
  size_t keep = reusable_prefix(std::span<const uint64_t>(cached), keys, session_.cache().min_truncate_position());
  if (speculator_) {
    if (!speculator_->rewind(static_cast<int64_t>(keep))) {
      keep = 0;
      speculator_->rewind(0);
    }
  } else if (keep == 0) {
    session_.reset();
  } else {
    session_.truncate(static_cast<int64_t>(keep));
  }
  ids_.assign(prompt.begin(), prompt.end());
  keys_.assign(keys.begin(), keys.end());
  const std::span<const int32_t> rest = prompt.subspan(keep);
  Prefill r{.reused = keep, .prefilled = rest.size(), .logits = {}};
  try {
    r.logits = speculator_ ? speculator_->prefill(rest)
                           : session_.forward(rest, embeddings.empty() ? embeddings : embeddings.subspan(keep));
  } catch (...) {
    reset();  // whatever the forward pass left in the cache is unknown now
    throw;
  }
  return r;
}

void PromptCache::reset() {
  if (speculator_) speculator_->rewind(0);
  session_.reset();
  ids_.clear();
  keys_.clear();
  images_.clear();
}

}  // namespace squeeze::cli
