// generate/conversation.h — the state of a chat (the terminal chat, generate --chat): a system message and the
// turns so far (as text, since templates rewrite history and the model's answers must be
// re-rendered with the rest), fitting them into the context by dropping the oldest turns,
// and the rule for how much of the KV cache a new rendering can keep.
//
// No model here: rendering and tokenizing come in as a function, so the logic is tested
// with a fake tokenizer (tests/tools/test_chat.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chat/value.h"

namespace squeeze::generate {

struct ChatMessage {
  std::string role;  // "user" or "assistant"
  std::string content;
  std::string reasoning = {};  // an assistant's thinking (the template's reasoning_content), if any
  // Image files shown before the text (a user's): the content becomes parts, each image an
  // {"type": "image", "path": FILE} part, then the text.
  std::vector<std::string> images = {};
};

class Conversation {
 public:
  // "" removes the system message.
  void set_system(std::string text) { system_ = std::move(text); }
  const std::string& system() const { return system_; }

  void add(std::string role, std::string content, std::string reasoning = {}, std::vector<std::string> images = {}) {
    messages_.push_back({std::move(role), std::move(content), std::move(reasoning), std::move(images)});
  }
  void pop_back() { messages_.pop_back(); }
  // Forgets the turns; the system message stays.
  void clear() { messages_.clear(); }
  const std::vector<ChatMessage>& messages() const { return messages_; }

  // A turn is a user message and what follows it up to the next user message.
  size_t n_turns() const;
  // The messages as the template takes them: the system message first (when set), then
  // the turns from turn `first_turn` on.
  chat::Json to_json(size_t first_turn = 0) const;
  // Removes the first n turns (the system message stays).
  void drop_oldest_turns(size_t n);

 private:
  size_t turn_start(size_t turn) const;  // index in messages_ of turn `turn`'s user message

  std::string system_;
  std::vector<ChatMessage> messages_;
};

// Messages (as to_json gives them) to the prompt's token ids.
using EncodeFn = std::function<std::vector<int32_t>(const chat::Json& messages)>;

struct FittedPrompt {
  std::vector<int32_t> ids;
  size_t dropped_turns = 0;  // oldest turns left out to fit
};

// The rendering of the whole conversation if it has at most `budget` tokens; otherwise of
// the conversation without its oldest turns, as few dropped as fit. nullopt when even the
// system message and the last turn alone exceed the budget.
std::optional<FittedPrompt> fit_prompt(const Conversation& conversation, const EncodeFn& encode, int64_t budget);

// How many leading tokens of `cached` (the ids the KV cache holds, in order) a new prompt
// can keep: their common prefix, one less when the whole prompt is cached (its last
// token must run again to give the logits of the next), and 0 when the cache cannot roll
// back that far (a sliding-window ring; min_truncate from KvCache::min_truncate_position).
size_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt, int64_t min_truncate);
// The same over row keys (vision/image_prompt.h), for prompts with images.
size_t reusable_prefix(std::span<const uint64_t> cached, std::span<const uint64_t> prompt, int64_t min_truncate);

// The image files of messages (as to_json gives them), in the order the template renders
// their placeholders.
std::vector<std::string> image_paths(const chat::Json& messages);

}  // namespace squeeze::generate
