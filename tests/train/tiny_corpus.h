// tests/train/tiny_corpus.h — what the training tests train on: a small glimmer-shaped
// config, a tokenizer learned from a two-sentence text, and that text repeated.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "model/model.h"
#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/glimmer_model.h"

namespace squeeze::train {

inline constexpr const char* kTinyText =
    "In the beginning the keeper lit the lamp, and the lamp shone over the sea. "
    "And the ships saw the light, and the ships came home to the harbour. ";

// glimmer-tiny cut down: width 32, 4 query heads of 8, a vocabulary of 300.
inline model::ModelConfig tiny_glimmer_config(int64_t layers, int64_t kv_heads, int64_t window) {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_layer = layers;
  c.is_local = model::period_pattern(layers, std::min<int64_t>(layers, 4));  // [L L L G], or [L G]
  c.n_embd = 32, c.n_head = 4, c.n_head_kv = kv_heads, c.head_dim = 8, c.n_ff = 48;
  c.n_vocab = 300, c.sliding_window = window;
  return c;
}

struct TinyCorpus {
  model::ModelConfig config;
  text::TokenizerData tok;
  std::vector<int32_t> tokens;
  explicit TinyCorpus(model::ModelConfig c) : config(std::move(c)), tok(train_tokenizer(kTinyText, config.n_vocab)) {
    std::string text;
    for (int i = 0; i < 12; ++i) text += kTinyText;
    tokens = text::Tokenizer(tok).encode(text, {.add_special = false});
  }
  GlimmerModel model(uint64_t seed) const { return GlimmerModel::init(config, tok, {.seed = seed}); }
};

}  // namespace squeeze::train
