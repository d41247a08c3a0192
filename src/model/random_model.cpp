// model/random_model.cpp
#include "model/random_model.h"

#include <cmath>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "gguf/writer.h"
#include "model/gguf_config.h"
#include "model/tensor_table.h"
#include "quant/quantize.h"
#include "text/bpe_trainer.h"

namespace squeeze::model {

namespace {

// Original text written for this purpose (no third-party rights): enough words for a few
// hundred merges.
constexpr const char* kSampleText =
    "The lighthouse keeper climbed the stairs every evening before the sun went down. "
    "He counted the steps, one hundred and twelve, and at the top he wound the clock, "
    "trimmed the wick and wiped the great lens until it shone. Ships passed in the night "
    "and never knew his name, yet every one of them found the harbour because of him. "
    "In the winter the wind came from the north and the sea turned grey and heavy. "
    "The keeper wrote in his book: the weather, the ships, the birds that rested on the rail. "
    "When spring returned, the children of the village came to visit and asked him questions. "
    "Why does the light turn? So that every sailor sees it flash and knows which coast is near. "
    "Why do you stay here alone? Because somebody has to watch, and I like the quiet. "
    "What is the brightest thing you have seen? The morning, he said, after a long storm. "
    "Numbers matter too: 1, 2, 3, 10, 42, 100, 2048 and 131072 tokens of context. "
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(i)\n";

std::vector<std::string> special_tokens() {
  return {"<|bos|>", "<|eos|>", "<|pad|>", "<think>", "</think>", "<image>", "</image>", "<|mask|>"};
}

// Adds `shapes` to `w` with the random weights described in the header (matrices of a row
// length `matrix_type` cannot block fall back to F32 and are returned).
std::vector<std::string> add_random_tensors(gguf::Writer& w, const std::vector<TensorShape>& shapes,
                                            gguf::GgmlType matrix_type, uint64_t seed);

}  // namespace

std::vector<std::string> write_random_model(const RandomModelParams& p) {
  const ModelConfig& c = p.config;
  c.validate();
  SQZ_CHECK(!p.path.empty(), "no output path");

  text::BpeTrainParams bp;
  bp.specials = special_tokens();
  bp.vocab_size = static_cast<int32_t>(c.n_vocab);
  bp.min_pair_count = 2;
  bp.bos = "<|bos|>";
  bp.eos = "<|eos|>";
  SQZ_CHECK(c.n_vocab >= static_cast<int64_t>(bp.specials.size()) + 256, "vocabulary of ", c.n_vocab,
            " is too small for the byte-level tokenizer (needs at least ", bp.specials.size() + 256, ")");
  text::TokenizerData tok = text::train_bpe(kSampleText, bp);
  while (static_cast<int64_t>(tok.tokens.size()) < c.n_vocab) {
    tok.tokens.push_back("<|unused_" + std::to_string(tok.tokens.size()) + "|>");
    tok.token_types.push_back(static_cast<int32_t>(text::TokenType::unused));
  }
  tok.pad_id = 2;
  tok.add_bos = true;

  gguf::Writer w(p.path);
  write_config(w.metadata(), c);
  write_tokenizer(w.metadata(), tok);
  if (!p.chat_template.empty()) w.metadata().set("tokenizer.chat_template", gguf::Value::string(p.chat_template));
  w.metadata().set("general.name",
                   gguf::Value::string(c.name + " (random weights, seed " + std::to_string(p.seed) + ")"));
  w.metadata().set("general.quantization_version", gguf::Value::u32(2));

  std::vector<std::string> fallbacks = add_random_tensors(w, weight_tensors(c), p.type, p.seed);
  w.finish();
  return fallbacks;
}

void write_random_drafter(const DraftConfig& config, gguf::GgmlType type, uint64_t seed, const std::string& path) {
  config.validate();
  SQZ_CHECK(!path.empty(), "no output path");
  gguf::Writer w(path);
  write_draft_config(w.metadata(), config);
  w.metadata().set("general.name",
                   gguf::Value::string(config.name + " (random weights, seed " + std::to_string(seed) + ")"));
  add_random_tensors(w, config.weight_tensors(), type, seed);
  w.finish();
}

namespace {

std::vector<std::string> add_random_tensors(gguf::Writer& w, const std::vector<TensorShape>& shapes,
                                            gguf::GgmlType matrix_type, uint64_t seed) {
  std::vector<std::string> fallbacks;
  uint64_t tensor_seed = seed;
  for (const TensorShape& s : shapes) {
    // Norms (and a drafter's vectors) scatter around 1, biases and other parameters around
    // 0; both stay F32. Matrices take the weight type.
    const bool is_matrix = s.kind == TensorKind::matrix && !s.is_vector();
    const bool around_one = s.kind == TensorKind::norm || (s.kind == TensorKind::matrix && s.is_vector());
    gguf::GgmlType type = is_matrix ? matrix_type : gguf::GgmlType::F32;
    if (s.ne0 % gguf::ggml_type_info(type).block_size != 0) {
      fallbacks.push_back(s.name);
      type = gguf::GgmlType::F32;
    }
    // Generated while the file is written, one tensor at a time, each from its own seed.
    tensor_seed = tensor_seed * 6364136223846793005ull + 1442695040888963407ull;
    w.add_tensor({.name = s.name, .type = type, .dims = s.dims()}, [s, type, is_matrix, around_one,
                                                                    seed = tensor_seed](const gguf::ByteSink& out) {
      std::mt19937_64 rng(seed);
      std::normal_distribution<float> dist(around_one ? 1.0f : 0.0f,
                                           is_matrix ? 1.0f / std::sqrt(static_cast<float>(s.ne0)) : 0.1f);
      std::vector<float> data(static_cast<size_t>(s.elements()));
      for (auto& v : data) v = dist(rng);
      if (s.id == TensorId::rope_freqs) {  // RoPE frequency divisors: in [1, 8], as Llama 3's are
        std::uniform_real_distribution<float> divisor(1.0f, 8.0f);
        for (auto& v : data) v = divisor(rng);
      }
      out(quant::quantize_tensor({.type = type, .src = data.data(), .rows = s.ne1 * s.ne2, .cols = s.ne0}));
    });
  }
  return fallbacks;
}

}  // namespace

}  // namespace squeeze::model
