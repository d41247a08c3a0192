// tools/chat_cache.cpp — KV cache reuse across the turns of a chat.
#include "chat_cache.h"

#include "chat_conversation.h"
#include "core/error.h"

namespace squeeze::cli {

PromptCache::Prefill PromptCache::prefill(const std::vector<int32_t>& prompt) {
  SQZ_CHECK(!prompt.empty(), "the chat prompt encodes to no tokens");
  SQZ_CHECK(static_cast<int64_t>(prompt.size()) <= session_.n_ctx(), "the chat prompt has ", prompt.size(),
            " tokens, more than the context of ", session_.n_ctx());
  SQZ_CHECK(static_cast<int64_t>(ids_.size()) == session_.position(), "chat cache out of step with its session");
  size_t keep = reusable_prefix(ids_, prompt, session_.cache().min_truncate_position());
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
  const std::span<const int32_t> rest(prompt.data() + keep, prompt.size() - keep);
  Prefill r{.reused = keep, .prefilled = rest.size(), .logits = {}};
  try {
    r.logits = speculator_ ? speculator_->prefill(rest) : session_.forward(rest);
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
}

}  // namespace squeeze::cli
