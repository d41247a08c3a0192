// generate/token_mask.h — which tokens a grammar lets a model write next.
//
// The vocabulary's token texts as a byte trie, built once per model: one walk of the trie
// advances the matcher's parses a byte at a time and stops at the first byte no parse
// accepts, so a step costs the trie nodes still live, not the vocabulary times the token
// lengths. Control tokens and tokens with no text are never allowed, except the model's
// end-of-generation tokens when the value is complete.
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
  // walk's parses (one per caller; the trie itself is shared).
  bool mask(const GrammarMatcher& m, std::span<const int32_t> end_ids, std::span<float> logits,
            std::vector<GrammarMatcher::Parses>& scratch) const;

 private:
  struct Node {
    int32_t first_child = 0, n_children = 0;  // into bytes_ / children_
    int32_t first_token = 0, n_tokens = 0;    // into tokens_: the tokens whose text ends here
  };
  struct Entry;
  int32_t build(std::vector<Entry>& entries, size_t a, size_t b, size_t depth);
  void walk(const GrammarMatcher& m, int32_t node, size_t depth, std::vector<GrammarMatcher::Parses>& levels,
            std::vector<uint8_t>& allowed) const;

  int32_t n_vocab_ = 0;
  std::vector<Node> nodes_;
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> children_, tokens_, control_ids_;
  size_t max_length_ = 0;
};

}  // namespace squeeze::generate
