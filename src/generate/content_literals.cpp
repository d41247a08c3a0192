// generate/content_literals.cpp — placeholders for control-token texts in message content.
#include "generate/content_literals.h"

#include <algorithm>

namespace squeeze::generate {
namespace {

// U+E000 and U+E001 (UTF-8): a placeholder is kOpen, the literal's index in decimal, kClose.
constexpr std::string_view kOpen = "\xEE\x80\x80", kClose = "\xEE\x80\x81";

}  // namespace

ControlTexts::ControlTexts(const text::Tokenizer& tok) : terminal_(1, 0) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const text::TokenType type = tok.token_type(id);
    if (type != text::TokenType::control && type != text::TokenType::unknown) continue;
    const std::string& t = tok.token_text(id);
    if (t.empty()) continue;
    uint32_t node = 0;
    for (const char c : t) {
      const uint64_t key = uint64_t{node} << 8 | static_cast<unsigned char>(c);
      auto it = trie_.find(key);
      if (it == trie_.end()) {
        it = trie_.emplace(key, static_cast<uint32_t>(terminal_.size())).first;
        terminal_.push_back(0);
      }
      node = it->second;
    }
    terminal_[node] = static_cast<uint32_t>(t.size());
  }
}

size_t ControlTexts::match_at(std::string_view text, size_t at) const {
  size_t best = 0;
  uint32_t node = 0;
  for (size_t k = at; k < text.size(); ++k) {
    const auto it = trie_.find(uint64_t{node} << 8 | static_cast<unsigned char>(text[k]));
    if (it == trie_.end()) break;
    node = it->second;
    best = std::max<size_t>(best, terminal_[node]);
  }
  return best;
}

std::string ContentLiterals::protect(std::string_view content) {
  std::string out;
  out.reserve(content.size());
  for (size_t i = 0; i < content.size();) {
    size_t n = controls_.match_at(content, i);
    if (n == 0 && (content.substr(i, kOpen.size()) == kOpen || content.substr(i, kClose.size()) == kClose)) n = kOpen.size();
    if (n == 0) {
      out += content[i++];
      continue;
    }
    out += kOpen;
    out += std::to_string(literals_.size());
    out += kClose;
    literals_.emplace_back(content.substr(i, n));
    i += n;
  }
  return out;
}

std::string ContentLiterals::restore(std::string_view rendered, std::vector<std::pair<size_t, size_t>>* ranges) const {
  std::string out;
  out.reserve(rendered.size());
  for (size_t i = 0; i < rendered.size();) {
    if (rendered.substr(i, kOpen.size()) == kOpen) {
      // Only a well-formed placeholder of ours is replaced; anything else stays as it is.
      size_t j = i + kOpen.size(), index = 0;
      bool digits = false;
      while (j < rendered.size() && rendered[j] >= '0' && rendered[j] <= '9' && index <= literals_.size()) {
        index = index * 10 + static_cast<size_t>(rendered[j++] - '0');
        digits = true;
      }
      if (digits && index < literals_.size() && rendered.substr(j, kClose.size()) == kClose) {
        if (ranges) ranges->emplace_back(out.size(), out.size() + literals_[index].size());
        out += literals_[index];
        i = j + kClose.size();
        continue;
      }
    }
    out += rendered[i++];
  }
  return out;
}

}  // namespace squeeze::generate
