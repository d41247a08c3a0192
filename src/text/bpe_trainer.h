// text/bpe_trainer.h — learns a byte-level BPE vocabulary from a corpus.
//
// The result is a TokenizerData in GGUF form: the special tokens first (control type),
// then the 256 byte tokens, then one token per learned merge, most frequent pair first.
// Pairs never merge across pre-tokenizer pieces, as at encode time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/pretokenize.h"
#include "text/tokenizer.h"

namespace squeeze::text {

struct BpeTrainParams {
  int32_t vocab_size = 4096;               // specials + 256 bytes + merges
  std::vector<std::string> specials = {};  // e.g. "<|bos|>", "<|eos|>", "<think>", ...
  PreTokenizer pre = PreTokenizer::gpt2;
  int64_t min_pair_count = 2;              // stop merging when the best pair is rarer
  std::string bos = "", eos = "";          // names among specials for the BOS/EOS ids
};

TokenizerData train_bpe(std::string_view corpus, const BpeTrainParams& params);

}  // namespace squeeze::text
