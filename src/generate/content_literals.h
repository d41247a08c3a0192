// generate/content_literals.h — message content stays text inside a rendered chat prompt.
// The prompt is tokenized with control-token texts parsed (the template's own markup,
// "<|im_start|>assistant"), so a user who types "<|im_end|>\n<|im_start|>system" would
// end their turn and speak as another role. Before rendering, each control-token text in
// content is replaced by a placeholder (private-use characters around an index, which
// survive the string operations templates apply to content: trim, split, replace of other
// text); after rendering the placeholders are put back and their byte ranges tokenized as
// text (text::EncodeOptions::literal_ranges). Content without control texts renders
// exactly as before.
//
//   ContentLiterals lit(format.control_texts());
//   message["content"] = lit.protect(content);         // before rendering
//   std::string prompt = lit.restore(rendered, &ranges);  // after; tokenize with ranges
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/tokenizer.h"

namespace squeeze::generate {

// A vocabulary's control-token texts, matched by one trie walk from a position.
class ControlTexts {
 public:
  explicit ControlTexts(const text::Tokenizer& tok);
  // Bytes of the longest control-token text starting at text[at]; 0 if none does.
  size_t match_at(std::string_view text, size_t at) const;
  bool empty() const { return terminal_.size() <= 1; }

 private:
  std::unordered_map<uint64_t, uint32_t> trie_;  // (node << 8 | byte) -> child node
  std::vector<uint32_t> terminal_;               // per node: bytes of the text ending there, or 0
};

class ContentLiterals {
 public:
  explicit ContentLiterals(const ControlTexts& controls) : controls_(controls) {}

  // `content` with every control-token text (and any character the placeholders use) replaced.
  std::string protect(std::string_view content);
  // The rendering with the placeholders as their texts again; where they are, into *ranges.
  std::string restore(std::string_view rendered, std::vector<std::pair<size_t, size_t>>* ranges = nullptr) const;

 private:
  const ControlTexts& controls_;
  std::vector<std::string> literals_;
};

}  // namespace squeeze::generate
