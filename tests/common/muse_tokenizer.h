// tests/common/muse_tokenizer.h — a small byte-level BPE vocabulary with Muse Glimmer's special
// tokens, learned from `sentence` repeated: what the thinking-budget, sequence and reasoning
// tests run on without a model file.
#pragma once

#include <cstdint>
#include <string>

#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/muse_specials.h"

namespace squeeze {

inline text::Tokenizer muse_test_tokenizer(const std::string& sentence, int repeats, int64_t vocab) {
  std::string corpus;
  for (int i = 0; i < repeats; ++i) corpus += sentence;
  text::TokenizerData data = train::train_tokenizer(corpus, vocab);
  train::rename_to_muse_glimmer_specials(data);
  return text::Tokenizer(data);
}

}  // namespace squeeze
