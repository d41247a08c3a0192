// convert/hf_tokenizer.h — a Hugging Face tokenizer (tokenizer.json, tokenizer_config.json,
// chat_template.jinja) as the GGUF `tokenizer.ggml.*` vocabulary llama.cpp's converter
// writes for byte-level BPE ("gpt2"): tokens by id (ids the tokenizer leaves free become
// "[PAD<id>]" of type unused), merges, token types (added special tokens are control,
// other added tokens user-defined), the pre-tokenizer named by its regexes, BOS/EOS/PAD/
// UNK ids, add_bos, and the chat template.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace squeeze::convert {

struct HfTokenizer {
  text::TokenizerData data;
  std::string chat_template;       // empty when the checkpoint has none
  int32_t eot_id = -1;             // <|eot|> when the vocabulary has it (Muse Glimmer), else -1
  int64_t n_listed = 0;            // entries of model.vocab plus added_tokens (llama.cpp's "real" vocabulary size)
};

// Reads `dir`'s tokenizer files; n_vocab is the model's vocabulary (config.json), which
// the token list is padded to. Returns nullopt when the directory has no tokenizer.json.
// Errors (one line, naming the file) for what squeeze cannot represent faithfully: a
// non-BPE or non-byte-level model, an unknown pre-tokenizer, ids beyond n_vocab, holes.
std::optional<HfTokenizer> read_hf_tokenizer(const std::string& dir, const nlohmann::json& config, int64_t n_vocab);

}  // namespace squeeze::convert
