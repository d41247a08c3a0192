// tests/common/harmony_tokenizer.h — a small byte-level BPE vocabulary with harmony's special
// tokens (gpt-oss's o200k_harmony framing), learned from `sentence` repeated: what the
// harmony framing, thinking-budget and server tests run on without gpt-oss itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "train/corpus.h"

namespace squeeze {

// All control tokens, as o200k_harmony types them; <|return|> is the EOS, as in gpt-oss's GGUF.
inline const std::vector<std::string>& harmony_specials() {
  static const std::vector<std::string> s = {"<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                                             "<|start|>",     "<|end|>",    "<|message|>",   "<|call|>"};
  return s;
}

// The vocabulary's first special tokens (train/corpus.h: eight) renamed to harmony's.
inline text::Tokenizer harmony_test_tokenizer(const std::string& sentence, int repeats, int64_t vocab) {
  std::string corpus;
  for (int i = 0; i < repeats; ++i) corpus += sentence;
  text::TokenizerData data = train::train_tokenizer(corpus, vocab);
  data.token_types.resize(data.tokens.size(), static_cast<int32_t>(text::TokenType::normal));
  for (size_t i = 0; i < harmony_specials().size(); ++i) {
    data.tokens[i] = harmony_specials()[i];
    data.token_types[i] = static_cast<int32_t>(text::TokenType::control);
  }
  data.bos_id = -1;
  data.eos_id = 1;
  data.pad_id = 0;
  data.add_bos = false;
  return text::Tokenizer(data);
}

}  // namespace squeeze
