// model/random_model.h — writes a GGUF model with random weights for any config: the
// subject of runtime tests, benchmarks and the side-by-side race with other engines
// (which only needs the shapes and the bytes moved to be real).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gguf/ggml_type.h"
#include "model/config.h"
#include "model/draft_config.h"
#include "model/quant_rules.h"

namespace squeeze::model {

struct RandomModelParams {
  ModelConfig config;
  gguf::GgmlType type = gguf::GgmlType::F32;  // matrices; norms stay F32
  // When set, each tensor takes the preset's type for it (Q4_K_M's mix: routers F32,
  // attn_v and ffn_down Q6_K on the layers llama.cpp gives more bits, the head its own) in
  // place of `type`, fitted to its row length as convert does, and general.file_type is set.
  std::optional<QuantPreset> preset = std::nullopt;
  uint64_t seed = 1;
  std::string path;
  std::string chat_template = {};  // written as tokenizer.chat_template when not empty
  // <think> </think> <tool_call> </tool_call> as text tokens, as Qwen's vocabularies have
  // them (the tagged output framing: thinking and tool calls), instead of control tokens.
  bool text_tags = false;
};

// Matrices get N(0, 1/cols) entries (so activations keep their scale through the
// layers), norm weights 1 + N(0, 0.1²). Matrices whose row length does not fit `type`'s
// block fall back to F32 (a preset's: to its fallback type) and are listed in the return
// value. The tokenizer is a byte-level BPE learned from a short built-in English text and
// padded with unused tokens to the config's vocabulary size. Streamed: each tensor is drawn
// and quantized in chunks of rows over the thread pool while the file is written, so a
// 30B model at Q4_K_M needs neither an F16 intermediate nor its size in memory; the values
// do not depend on the number of threads.
std::vector<std::string> write_random_model(const RandomModelParams& params);

// A DFlash drafter (model/draft_config.h) with random weights in the same way: tests, and
// the starting point of `squeeze train-drafter`.
void write_random_drafter(const DraftConfig& config, gguf::GgmlType type, uint64_t seed, const std::string& path);

}  // namespace squeeze::model
