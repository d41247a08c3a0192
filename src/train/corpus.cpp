// train/corpus.cpp — see corpus.h.
#include "train/corpus.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/bpe_trainer.h"

namespace squeeze::train {

std::vector<std::string> default_special_tokens() {
  return {"<|bos|>", "<|eos|>", "<|pad|>", "<think>", "</think>", "<image>", "</image>", "<|mask|>"};
}

text::TokenizerData train_tokenizer(std::string_view corpus, int64_t vocab_size) {
  text::BpeTrainParams bp;
  bp.specials = default_special_tokens();
  SQZ_CHECK(vocab_size >= static_cast<int64_t>(bp.specials.size()) + 256 && vocab_size <= (1 << 24), "a vocabulary of ",
            vocab_size, " cannot hold the ", bp.specials.size(), " special and 256 byte tokens");
  bp.vocab_size = static_cast<int32_t>(vocab_size);
  bp.min_pair_count = 2;
  bp.bos = "<|bos|>";
  bp.eos = "<|eos|>";
  text::TokenizerData tok = text::train_bpe(corpus, bp);
  while (static_cast<int64_t>(tok.tokens.size()) < vocab_size) {
    tok.tokens.push_back("<|unused_" + std::to_string(tok.tokens.size()) + "|>");
    tok.token_types.push_back(static_cast<int32_t>(text::TokenType::unused));
  }
  tok.pad_id = 2;
  tok.add_bos = true;
  return tok;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SQZ_CHECK(in.good(), path, ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  SQZ_CHECK(!s.str().empty(), path, ": the file is empty");
  return s.str();
}

}  // namespace squeeze::train
