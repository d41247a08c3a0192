// generate/token_mask.cpp — the vocabulary trie and the masking walk.
#include "generate/token_mask.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace squeeze::generate {

struct VocabTrie::Entry {
  std::string text;
  int32_t id;
};

VocabTrie::VocabTrie(const text::Tokenizer& tok) : n_vocab_(tok.n_vocab()) {
  std::vector<Entry> entries;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    const text::TokenType t = tok.token_type(id);
    if (t == text::TokenType::control) control_ids_.push_back(id);
    if (t == text::TokenType::control || t == text::TokenType::unused) continue;
    std::string text = tok.token_to_piece(id, {.render_control = false});
    if (text.empty()) continue;
    max_length_ = std::max(max_length_, text.size());
    entries.push_back({std::move(text), id});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.text < b.text; });
  build(entries, 0, entries.size(), 0);
}

// A node for the entries [a, b), which share their first `depth` bytes: first the tokens
// that end here (sorted first), then one child per next byte, its slots reserved before
// recursing so that a node's children are contiguous.
int32_t VocabTrie::build(std::vector<Entry>& entries, size_t a, size_t b, size_t depth) {
  const auto id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({});
  nodes_[static_cast<size_t>(id)].first_token = static_cast<int32_t>(tokens_.size());
  while (a < b && entries[a].text.size() == depth) tokens_.push_back(entries[a++].id);
  nodes_[static_cast<size_t>(id)].n_tokens = static_cast<int32_t>(tokens_.size()) - nodes_[static_cast<size_t>(id)].first_token;
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = a; i < b;) {
    size_t j = i + 1;
    while (j < b && entries[j].text[depth] == entries[i].text[depth]) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const auto first = static_cast<int32_t>(children_.size());
  nodes_[static_cast<size_t>(id)].first_child = first;
  nodes_[static_cast<size_t>(id)].n_children = static_cast<int32_t>(groups.size());
  for (const auto& [i, j] : groups) {
    bytes_.push_back(static_cast<uint8_t>(entries[i].text[depth]));
    children_.push_back(-1);
  }
  for (size_t k = 0; k < groups.size(); ++k)
    children_[static_cast<size_t>(first) + k] = build(entries, groups[k].first, groups[k].second, depth + 1);
  return id;
}

void VocabTrie::walk(const GrammarMatcher& m, int32_t node, size_t depth, std::vector<GrammarMatcher::Parses>& levels,
                     std::vector<uint8_t>& allowed) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  for (int32_t k = 0; k < n.n_children; ++k) {
    const auto slot = static_cast<size_t>(n.first_child + k);
    m.step(levels[depth], bytes_[slot], levels[depth + 1]);
    if (levels[depth + 1].empty()) continue;
    const Node& child = nodes_[static_cast<size_t>(children_[slot])];
    for (int32_t t = 0; t < child.n_tokens; ++t) allowed[static_cast<size_t>(tokens_[static_cast<size_t>(child.first_token + t)])] = 1;
    walk(m, children_[slot], depth + 1, levels, allowed);
  }
}

bool VocabTrie::mask(const GrammarMatcher& m, std::span<const int32_t> end_ids, std::span<float> logits,
                     std::vector<GrammarMatcher::Parses>& scratch) const {
  std::vector<uint8_t> allowed(static_cast<size_t>(n_vocab_), 0);
  scratch.resize(max_length_ + 1);
  scratch[0] = m.parses();
  walk(m, 0, 0, scratch, allowed);
  if (m.can_end())
    for (int32_t id : end_ids)
      if (id >= 0 && id < n_vocab_) allowed[static_cast<size_t>(id)] = 1;
  bool any = false;
  for (size_t t = 0; t < allowed.size() && t < logits.size(); ++t) {
    if (!allowed[t]) logits[t] = -INFINITY;
    else any = any || logits[t] != -INFINITY;
  }
  return any;
}

}  // namespace squeeze::generate
