// generate/token_mask.h — which tokens a grammar lets a model write next.
//
// The vocabulary's token texts as a byte trie, built once per model: one walk of the trie
// advances the matcher's parses a byte at a time and stops at the first byte no parse
// accepts, so a step costs the trie nodes still live, not the vocabulary times the token
// lengths. Control tokens and tokens with no text are never allowed, except the model's
// end-of-generation tokens when the value is complete.
//
// Inside a JSON string nearly every token is allowed, and the walk would visit most of
// the trie. So tokens whose text is plain string content (no quote, backslash or control
// byte; whole, valid UTF-8) are also kept apart, sorted by their characters: when the
// matcher is in a string's text (GrammarMatcher::string_room), those that fit the room
// left are allowed at once, and only the other tokens' trie is walked. The result is the
// full walk's, token for token (tests/generate/test_json_grammar.cpp checks both against
// trying every token).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "generate/grammar_matcher.h"
#include "text/tokenizer.h"

namespace squeeze::generate {

class VocabTrie {
 public:
  explicit VocabTrie(const text::Tokenizer& tok);
  int32_t n_vocab() const { return n_vocab_; }
  // The control tokens (never text, so never part of a grammar's output).
  const std::vector<int32_t>& control_ids() const { return control_ids_; }

  // Sets logits[t] to −inf for every token t the matcher refuses; `end_ids` stay when the
  // matcher can end, else they go too. False when no token is left. `scratch` holds the
  // walk's parses (one per caller; the trie itself is shared). `use_string_path` false
  // walks the whole trie (the reference the fast path is tested against).
  bool mask(const GrammarMatcher& m, std::span<const int32_t> end_ids, std::span<float> logits,
            std::vector<GrammarMatcher::Parses>& scratch, bool use_string_path = true) const;

 private:
  struct Entry;
  struct Trie {
    struct Node {
      int32_t first_child = 0, n_children = 0;  // into bytes / children
      int32_t first_token = 0, n_tokens = 0;    // into tokens: the tokens whose text ends here
    };
    std::vector<Node> nodes;
    std::vector<uint8_t> bytes;
    std::vector<int32_t> children, tokens;
    size_t max_length = 0;
    void build(std::vector<Entry> entries);
    int32_t build(std::vector<Entry>& entries, size_t a, size_t b, size_t depth);
    void walk(const GrammarMatcher& m, int32_t node, size_t depth, std::vector<GrammarMatcher::Parses>& levels,
              std::vector<uint8_t>& allowed) const;
  };

  int32_t n_vocab_ = 0;
  Trie all_, not_plain_;  // every text token; those that are not plain string content
  std::vector<int32_t> plain_ids_;    // plain string content, fewest characters first
  std::vector<int64_t> plain_chars_;  // their characters
  std::vector<int32_t> control_ids_;
};

}  // namespace squeeze::generate
