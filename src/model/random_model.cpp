// model/random_model.cpp
#include "model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

// A tensor's storage type and, when it had to fall back from the one asked for, why.
using TypeRule = std::function<FittedType(const TensorShape&)>;

// Matrices take `matrix_type`, or F32 when their row length does not fit its block.
TypeRule plain_rule(gguf::GgmlType matrix_type) {
  return [matrix_type](const TensorShape& s) -> FittedType {
    if (!(s.kind == TensorKind::matrix && !s.is_vector())) return {gguf::GgmlType::F32, {}};
    if (s.ne0 % gguf::ggml_type_info(matrix_type).block_size != 0)
      return {gguf::GgmlType::F32, s.name + " kept as F32 (row length " + std::to_string(s.ne0) + " not a multiple of the " +
                                       std::string(gguf::ggml_type_info(matrix_type).name) + " block)"};
    return {matrix_type, {}};
  };
}

// Each tensor the preset's type for it, fitted to the row length as convert fits it.
TypeRule preset_rule(const QuantPreset& preset, const ModelConfig& c) {
  return [preset, &c](const TensorShape& s) -> FittedType {
    if (!(s.kind == TensorKind::matrix && !s.is_vector())) return {gguf::GgmlType::F32, {}};
    const TensorRole role{.name = s.name, .row_length = s.ne0, .n_dims = static_cast<int>(s.dims().size()),
                          .layer = s.layer, .n_layer = c.n_layer, .tied_output = c.tied_output};
    return fitted_preset_type(preset, role);
  };
}

// Adds `shapes` to `w` with the random weights described in the header, each in the type
// `rule` picks; returns the fallbacks.
// A random MXFP4 matrix drawn in MXFP4 itself (uniform codes, the block exponent that gives
// the matrix's N(0, 1/cols) scale): quantizing ~20B normal values with the searched MXFP4
// quantizer would take most of an hour on 2 cores for a random gpt-oss-20b, for weights
// whose only use is to be read at the real shape's speed.
void write_random_mxfp4(const gguf::ByteSink& out, int64_t rows, int64_t cols, uint64_t seed) {
  // The codes' values (E2M1 doubled) have an RMS of sqrt(mean(v²)) = 5.85 over the table.
  const double sigma = 1.0 / std::sqrt(static_cast<double>(cols));
  const auto e = static_cast<uint8_t>(std::lround(128.0 + std::log2(sigma / 5.85)));
  const int64_t row_bytes = quant::row_bytes(gguf::GgmlType::MXFP4, cols), blocks = cols / 32;
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(static_cast<size_t>(std::min<int64_t>(rows, 4096) * row_bytes));
  for (int64_t r0 = 0; r0 < rows; r0 += 4096) {
    const int64_t n = std::min<int64_t>(4096, rows - r0);
    for (int64_t b = 0; b < n * blocks; ++b) {
      uint8_t* block = bytes.data() + b * 17;
      block[0] = e;
      for (int j = 0; j < 16; j += 8) {
        const uint64_t bits = rng();
        std::memcpy(block + 1 + j, &bits, 8);
      }
    }
    out(std::span(bytes.data(), static_cast<size_t>(n * row_bytes)));
  }
}

std::vector<std::string> add_random_tensors(gguf::Writer& w, const std::vector<TensorShape>& shapes,
                                            const TypeRule& rule, uint64_t seed);

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
  if (p.text_tags) {
    for (size_t i = 0; i < tok.tokens.size(); ++i)
      if (tok.tokens[i] == "<think>" || tok.tokens[i] == "</think>")
        tok.token_types[i] = static_cast<int32_t>(text::TokenType::user_defined);
    for (const char* tag : {"<tool_call>", "</tool_call>"}) {
      SQZ_CHECK(static_cast<int64_t>(tok.tokens.size()) < c.n_vocab, "vocabulary of ", c.n_vocab, " has no room for ", tag);
      tok.tokens.push_back(tag);
      tok.token_types.push_back(static_cast<int32_t>(text::TokenType::user_defined));
    }
  }
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
  if (p.preset && p.preset->file_type != 0) w.metadata().set("general.file_type", gguf::Value::u32(p.preset->file_type));

  std::vector<std::string> fallbacks =
      add_random_tensors(w, weight_tensors(c), p.preset ? preset_rule(*p.preset, c) : plain_rule(p.type), p.seed);
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
  add_random_tensors(w, config.weight_tensors(), plain_rule(type), seed);
  w.finish();
}

namespace {

// Values drawn per chunk of rows, each chunk from its own seed: chunk 0 from the tensor's,
// so a tensor of at most kChunkElements values is the one stream it always was.
constexpr int64_t kChunkElements = int64_t{1} << 22;

uint64_t chunk_seed(uint64_t tensor_seed, int64_t chunk) {
  if (chunk == 0) return tensor_seed;
  uint64_t z = tensor_seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(chunk);  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<std::string> add_random_tensors(gguf::Writer& w, const std::vector<TensorShape>& shapes,
                                            const TypeRule& rule, uint64_t seed) {
  std::vector<std::string> fallbacks;
  uint64_t tensor_seed = seed;
  for (const TensorShape& s : shapes) {
    // Norms (and a drafter's vectors) scatter around 1, biases and other parameters around
    // 0; both stay F32. Matrices take the weight type.
    const bool is_matrix = s.kind == TensorKind::matrix && !s.is_vector();
    const bool around_one = s.kind == TensorKind::norm || (s.kind == TensorKind::matrix && s.is_vector());
    const FittedType choice = rule(s);
    if (!choice.fallback.empty()) fallbacks.push_back(choice.fallback);
    const gguf::GgmlType type = choice.type;
    // Generated while the file is written, one tensor at a time, each from its own seed.
    tensor_seed = tensor_seed * 6364136223846793005ull + 1442695040888963407ull;
    w.add_tensor({.name = s.name, .type = type, .dims = s.dims()}, [s, type, is_matrix, around_one,
                                                                    seed = tensor_seed](const gguf::ByteSink& out) {
      ThreadPool& pool = default_thread_pool();
      const int64_t rows = s.ne1 * s.ne2, cols = s.ne0;
      const int64_t chunk_rows = std::max<int64_t>(1, kChunkElements / cols);
      const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
      const int64_t wave = std::max(1, pool.size());  // chunks drawn in parallel, then quantized and written
      std::vector<float> data(static_cast<size_t>(std::min(rows, wave * chunk_rows) * cols));
      std::vector<uint8_t> bytes;
      if (type == gguf::GgmlType::MXFP4 && is_matrix) {
        write_random_mxfp4(out, rows, cols, seed);
        return;
      }
      for (int64_t first = 0; first < chunks; first += wave) {
        const int64_t last = std::min(chunks, first + wave);
        pool.parallel_for(first, last, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            std::mt19937_64 rng(chunk_seed(seed, k));
            std::normal_distribution<float> dist(around_one ? 1.0f : 0.0f,
                                                 is_matrix ? 1.0f / std::sqrt(static_cast<float>(cols)) : 0.1f);
            std::uniform_real_distribution<float> divisor(1.0f, 8.0f);  // RoPE divisors in [1, 8], as Llama 3's
            const int64_t r0 = k * chunk_rows, n = std::min(chunk_rows, rows - r0);
            float* dst = data.data() + (k - first) * chunk_rows * cols;
            for (int64_t i = 0; i < n * cols; ++i) dst[i] = dist(rng);
            if (s.id == TensorId::rope_freqs)
              for (int64_t i = 0; i < n * cols; ++i) dst[i] = divisor(rng);
          }
        });
        const int64_t r0 = first * chunk_rows, n = std::min(rows, last * chunk_rows) - r0;
        bytes.resize(static_cast<size_t>(n * quant::row_bytes(type, cols)));
        quant::quantize_rows(pool, {.type = type, .src = data.data(), .rows = n, .cols = cols}, bytes.data());
        out(bytes);
      }
    });
  }
  return fallbacks;
}

}  // namespace

}  // namespace squeeze::model
