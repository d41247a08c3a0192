// train/muse_specials.cpp — see muse_specials.h.
#include "train/muse_specials.h"

#include "core/error.h"
#include "train/corpus.h"

namespace squeeze::train {

void rename_to_muse_glimmer_specials(text::TokenizerData& tok) {
  const std::vector<std::string> from = default_special_tokens();
  const std::vector<std::string> to = {"<|begin_of_text|>", "<|eot|>", "<|eom|>", "<|start|>",
                                       "<|message|>", "<|image_start|>", "<|image_end|>", "<|mask|>"};
  SQZ_CHECK(tok.tokens.size() >= from.size(), "--specials muse-glimmer: the vocabulary has no special tokens to rename");
  for (size_t i = 0; i < from.size(); ++i) {
    SQZ_CHECK(tok.tokens[i] == from[i] || tok.tokens[i] == to[i], "--specials muse-glimmer: token ", i, " is '",
              tok.tokens[i], "', not the KJV vocabulary's '", from[i], "'");
    tok.tokens[i] = to[i];
  }
  if (tok.token_types.size() < tok.tokens.size()) tok.token_types.resize(tok.tokens.size(), static_cast<int32_t>(text::TokenType::normal));
  for (size_t i = 0; i < from.size(); ++i) tok.token_types[i] = static_cast<int32_t>(text::TokenType::control);
  tok.bos_id = 0;
  tok.eos_id = 1;
  tok.pad_id = -1;
}

void append_muse_patch_token(GlimmerModel& model) {
  text::TokenizerData& tok = model.tokenizer_mut();
  for (const std::string& t : tok.tokens) SQZ_CHECK(t != "<|patch|>", "the vocabulary already has <|patch|>");
  tok.tokens.push_back("<|patch|>");
  if (!tok.token_types.empty()) tok.token_types.push_back(static_cast<int32_t>(text::TokenType::control));
  if (!tok.scores.empty()) tok.scores.push_back(0.0f);
  model.grow_vocabulary(1);
}

}  // namespace squeeze::train
