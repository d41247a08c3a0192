// generate/conversation.cpp — conversation state, context fitting and the KV reuse rule.
#include "generate/conversation.h"

#include <algorithm>

#include "core/error.h"

namespace squeeze::generate {

size_t Conversation::n_turns() const {
  return static_cast<size_t>(
      std::count_if(messages_.begin(), messages_.end(), [](const ChatMessage& m) { return m.role == "user"; }));
}

size_t Conversation::turn_start(size_t turn) const {
  size_t seen = 0;
  for (size_t i = 0; i < messages_.size(); ++i)
    if (messages_[i].role == "user" && seen++ == turn) return i;
  return messages_.size();
}

chat::Json Conversation::to_json(size_t first_turn) const {
  chat::Json out = chat::Json::array();
  if (!system_.empty()) out.push_back({{"role", "system"}, {"content", system_}});
  // Messages before the first user message (none in practice) belong to no turn and stay.
  const size_t first_user = turn_start(0);
  const auto message = [](const ChatMessage& m) {
    chat::Json j = {{"role", m.role}, {"content", m.content}};
    if (!m.images.empty()) {
      chat::Json parts = chat::Json::array();
      for (const std::string& path : m.images) parts.push_back({{"type", "image"}, {"path", path}});
      parts.push_back({{"type", "text"}, {"text", m.content}});
      j["content"] = std::move(parts);
    }
    if (!m.reasoning.empty()) j["reasoning_content"] = m.reasoning;
    return j;
  };
  for (size_t i = 0; i < first_user; ++i) out.push_back(message(messages_[i]));
  for (size_t i = std::max(first_user, turn_start(first_turn)); i < messages_.size(); ++i) out.push_back(message(messages_[i]));
  return out;
}

void Conversation::drop_oldest_turns(size_t n) {
  if (n == 0) return;
  const size_t first_user = turn_start(0);
  const size_t end = turn_start(n);
  messages_.erase(messages_.begin() + static_cast<std::ptrdiff_t>(first_user),
                  messages_.begin() + static_cast<std::ptrdiff_t>(std::max(first_user, end)));
}

std::optional<FittedPrompt> fit_prompt(const Conversation& conversation, const EncodeFn& encode, int64_t budget) {
  const size_t turns = conversation.n_turns();
  // Dropping one turn at a time from the oldest: each try is a full render, which is
  // what the template needs (it may rewrite anything), and conversations in a terminal
  // are short enough that this linear search costs nothing next to a prefill.
  for (size_t drop = 0; drop == 0 || drop < turns; ++drop) {
    std::vector<int32_t> ids = encode(conversation.to_json(drop));
    if (static_cast<int64_t>(ids.size()) <= budget) return FittedPrompt{std::move(ids), drop};
  }
  return std::nullopt;
}

namespace {
template <typename T>
size_t reusable_prefix_of(std::span<const T> cached, std::span<const T> prompt, int64_t min_truncate) {
  const auto [a, b] = std::mismatch(cached.begin(), cached.end(), prompt.begin(), prompt.end());
  size_t keep = static_cast<size_t>(a - cached.begin());
  if (keep == prompt.size() && keep > 0) --keep;
  // 0 (a reset) is always possible; a rollback below min_truncate is not.
  if (keep < cached.size() && static_cast<int64_t>(keep) < min_truncate) keep = 0;
  return keep;
}
}  // namespace

size_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt, int64_t min_truncate) {
  return reusable_prefix_of(cached, prompt, min_truncate);
}

size_t reusable_prefix(std::span<const uint64_t> cached, std::span<const uint64_t> prompt, int64_t min_truncate) {
  return reusable_prefix_of(cached, prompt, min_truncate);
}

std::vector<std::string> image_paths(const chat::Json& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) {
    const auto c = m.find("content");
    if (c == m.end() || !c->is_array()) continue;
    for (const auto& part : *c)
      if (part.is_object() && part.value("type", "") == "image" && part.contains("path"))
        out.push_back(part["path"].get<std::string>());
  }
  return out;
}

}  // namespace squeeze::generate
