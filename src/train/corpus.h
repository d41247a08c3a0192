// train/corpus.h — turning a text corpus into what training needs: a byte-level BPE
// tokenizer padded to the model's vocabulary, and the token stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace squeeze::train {

// The special tokens every squeeze-trained vocabulary starts with (ids 0..7): BOS, EOS,
// padding, thinking start/end, image start/end, and the speculative drafter's mask.
std::vector<std::string> default_special_tokens();

// Learns a BPE vocabulary of at most vocab_size tokens from `corpus` (text/bpe_trainer)
// and pads it with unused tokens to exactly vocab_size, so it fits a model config.
text::TokenizerData train_tokenizer(std::string_view corpus, int64_t vocab_size);

// Reads a whole file (error naming it when unreadable or empty).
std::string read_text_file(const std::string& path);

}  // namespace squeeze::train
