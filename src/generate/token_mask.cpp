// generate/token_mask.cpp — the vocabulary tries and the masking walk.
#include "generate/token_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace squeeze::generate {

struct VocabTrie::Entry {
  std::string text;
  int32_t id;
};

namespace {

// The characters of `text` when it can stand inside a JSON string as it is (no quote,
// backslash or control byte; whole UTF-8 sequences, no overlongs or surrogates, nothing past
// U+10FFFF — the matcher's rules), else -1.
int64_t plain_string_chars(const std::string& text) {
  int64_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x20 || c == '"' || c == '\\') return -1;
    size_t more = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) more = 0;
    else if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c == 0xE0) more = 2, lo = 0xA0;
    else if (c == 0xED) more = 2, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) more = 2;
    else if (c == 0xF0) more = 3, lo = 0x90;
    else if (c == 0xF4) more = 3, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) more = 3;
    else return -1;
    for (size_t k = 1; k <= more; ++k) {
      if (i + k >= text.size()) return -1;
      const auto b = static_cast<uint8_t>(text[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return -1;
    }
    i += more + 1;
    ++chars;
  }
  return chars;
}

}  // namespace

VocabTrie::VocabTrie(const text::Tokenizer& tok) : n_vocab_(tok.n_vocab()) {
  std::vector<Entry> all, not_plain;
  std::vector<std::pair<int64_t, int32_t>> plain;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    const text::TokenType t = tok.token_type(id);
    if (t == text::TokenType::control) control_ids_.push_back(id);
    if (t == text::TokenType::control || t == text::TokenType::unused) continue;
    std::string text = tok.token_to_piece(id, {.render_control = false});
    if (text.empty()) continue;
    const int64_t chars = plain_string_chars(text);
    if (chars > 0) plain.emplace_back(chars, id);
    else not_plain.push_back({text, id});
    all.push_back({std::move(text), id});
  }
  std::sort(plain.begin(), plain.end());
  for (const auto& [chars, id] : plain) plain_chars_.push_back(chars), plain_ids_.push_back(id);
  all_.build(std::move(all));
  not_plain_.build(std::move(not_plain));
}

void VocabTrie::Trie::build(std::vector<Entry> entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.text < b.text; });
  for (const Entry& e : entries) max_length = std::max(max_length, e.text.size());
  build(entries, 0, entries.size(), 0);
}

// A node for the entries [a, b), which share their first `depth` bytes: first the tokens
// that end here (sorted first), then one child per next byte, its slots reserved before
// recursing so that a node's children are contiguous.
int32_t VocabTrie::Trie::build(std::vector<Entry>& entries, size_t a, size_t b, size_t depth) {
  const auto id = static_cast<int32_t>(nodes.size());
  nodes.push_back({});
  nodes[static_cast<size_t>(id)].first_token = static_cast<int32_t>(tokens.size());
  while (a < b && entries[a].text.size() == depth) tokens.push_back(entries[a++].id);
  nodes[static_cast<size_t>(id)].n_tokens = static_cast<int32_t>(tokens.size()) - nodes[static_cast<size_t>(id)].first_token;
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = a; i < b;) {
    size_t j = i + 1;
    while (j < b && entries[j].text[depth] == entries[i].text[depth]) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const auto first = static_cast<int32_t>(children.size());
  nodes[static_cast<size_t>(id)].first_child = first;
  nodes[static_cast<size_t>(id)].n_children = static_cast<int32_t>(groups.size());
  for (const auto& [i, j] : groups) {
    bytes.push_back(static_cast<uint8_t>(entries[i].text[depth]));
    children.push_back(-1);
  }
  for (size_t k = 0; k < groups.size(); ++k)
    children[static_cast<size_t>(first) + k] = build(entries, groups[k].first, groups[k].second, depth + 1);
  return id;
}

void VocabTrie::Trie::walk(const GrammarMatcher& m, int32_t node, size_t depth, std::vector<GrammarMatcher::Parses>& levels,
                           std::vector<uint8_t>& allowed) const {
  const Node& n = nodes[static_cast<size_t>(node)];
  for (int32_t k = 0; k < n.n_children; ++k) {
    const auto slot = static_cast<size_t>(n.first_child + k);
    m.step(levels[depth], bytes[slot], levels[depth + 1]);
    if (levels[depth + 1].empty()) continue;
    const Node& child = nodes[static_cast<size_t>(children[slot])];
    for (int32_t t = 0; t < child.n_tokens; ++t) allowed[static_cast<size_t>(tokens[static_cast<size_t>(child.first_token + t)])] = 1;
    walk(m, children[slot], depth + 1, levels, allowed);
  }
}

bool VocabTrie::mask(const GrammarMatcher& m, std::span<const int32_t> end_ids, std::span<float> logits,
                     std::vector<GrammarMatcher::Parses>& scratch, bool use_string_path) const {
  std::vector<uint8_t> allowed(static_cast<size_t>(n_vocab_), 0);
  const int64_t room = use_string_path ? m.string_room() : -1;
  const Trie& trie = room >= 0 ? not_plain_ : all_;
  if (room >= 0) {
    const size_t fit = static_cast<size_t>(std::upper_bound(plain_chars_.begin(), plain_chars_.end(), room) - plain_chars_.begin());
    for (size_t i = 0; i < fit; ++i) allowed[static_cast<size_t>(plain_ids_[i])] = 1;
  }
  scratch.resize(trie.max_length + 1);
  scratch[0] = m.parses();
  if (!trie.nodes.empty()) trie.walk(m, 0, 0, scratch, allowed);
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
