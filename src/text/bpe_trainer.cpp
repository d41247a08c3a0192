// text/bpe_trainer.cpp — greedy pair merging over the distinct pre-tokenized words,
// each weighted by its count (counts are recomputed per merge: simple, and fast enough
// for corpora of a few MB and vocabularies of a few thousand).
#include "text/bpe_trainer.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/error.h"

namespace squeeze::text {

TokenizerData train_bpe(std::string_view corpus, const BpeTrainParams& p) {
  const int32_t n_special = static_cast<int32_t>(p.specials.size());
  SQZ_CHECK(p.vocab_size >= n_special + 256, "vocab_size ", p.vocab_size, " is below the ", n_special + 256,
            " special and byte tokens");
  TokenizerData t;
  // GGUF names llama.cpp also understands (its own spelling of each split).
  t.pre = p.pre == PreTokenizer::gpt2 ? "gpt-2" : p.pre == PreTokenizer::llama3 ? "llama-bpe" : "qwen2";
  for (const auto& s : p.specials) {
    t.tokens.push_back(s);
    t.token_types.push_back(static_cast<int32_t>(TokenType::control));
  }
  std::vector<std::string> symbol_bytes;  // raw bytes each symbol stands for, by symbol id
  for (int b = 0; b < 256; ++b) {
    symbol_bytes.push_back(std::string(1, static_cast<char>(b)));
    t.tokens.push_back(gpt2_byte_to_unicode(static_cast<uint8_t>(b)));
    t.token_types.push_back(static_cast<int32_t>(TokenType::normal));
  }

  // Distinct words with counts, as symbol sequences.
  std::unordered_map<std::string, int64_t> word_count;
  for (const Piece& piece : pre_tokenize(corpus, p.pre)) ++word_count[std::string(corpus.substr(piece.offset, piece.length))];
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  words.reserve(word_count.size());
  for (const auto& [w, n] : word_count) {
    std::vector<int32_t> syms;
    for (unsigned char ch : w) syms.push_back(ch);
    words.emplace_back(std::move(syms), n);
  }
  std::sort(words.begin(), words.end());  // deterministic order regardless of hashing

  while (static_cast<int32_t>(t.tokens.size()) < p.vocab_size) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;  // ordered: ties go to the smallest pair
    for (const auto& [syms, n] : words)
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += n;
    auto best = pairs.end();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (best == pairs.end() || it->second > best->second) best = it;
    if (best == pairs.end() || best->second < p.min_pair_count) break;
    const auto [a, b] = best->first;
    const int32_t merged = static_cast<int32_t>(symbol_bytes.size());
    symbol_bytes.push_back(symbol_bytes[static_cast<size_t>(a)] + symbol_bytes[static_cast<size_t>(b)]);
    t.merges.push_back(gpt2_encode_bytes(symbol_bytes[static_cast<size_t>(a)]) + " " +
                       gpt2_encode_bytes(symbol_bytes[static_cast<size_t>(b)]));
    t.tokens.push_back(gpt2_encode_bytes(symbol_bytes.back()));
    t.token_types.push_back(static_cast<int32_t>(TokenType::normal));
    for (auto& [syms, n] : words) {
      size_t out = 0;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          syms[out++] = merged;
          ++i;
        } else {
          syms[out++] = syms[i];
        }
      }
      syms.resize(out);
    }
  }
  auto special_id = [&](const std::string& name) -> int32_t {
    if (name.empty()) return -1;
    for (int32_t i = 0; i < n_special; ++i)
      if (p.specials[static_cast<size_t>(i)] == name) return i;
    fail("BPE training: '", name, "' is not among the special tokens");
  };
  t.bos_id = special_id(p.bos);
  t.eos_id = special_id(p.eos);
  return t;
}

}  // namespace squeeze::text
