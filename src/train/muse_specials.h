// train/muse_specials.h — the Muse Glimmer special tokens in a squeeze-trained vocabulary,
// so a KJV student can carry the chat, reasoning and vision framing without retraining.
//
// The KJV vocabulary's eight specials (ids 0–7, train/corpus.h) never occur in training
// text (it is encoded with parse_special off), so renaming them changes no number of a
// distillation from the existing teacher; they take the Muse Glimmer names by role:
//   0 <|bos|> → <|begin_of_text|>   1 <|eos|> → <|eot|> (end of turn, the EOS)
//   2 <|pad|> → <|eom|>             3 <think> → <|start|>    4 </think> → <|message|>
//   5 <image> → <|image_start|>     6 </image> → <|image_end|>   7 <|mask|> (kept)
// <|patch|> has no slot; append_muse_patch_token adds it as one more id, with a zero
// embedding and a zero output row (logit 0 before the soft-cap), for the vision work to train.
#pragma once

#include "text/tokenizer.h"
#include "train/glimmer_model.h"

namespace squeeze::train {

// Renames ids 0–7 as above (all control tokens; the pad id becomes unset). Throws unless
// they are the KJV vocabulary's specials.
void rename_to_muse_glimmer_specials(text::TokenizerData& tok);

// The model with <|patch|> appended: one more vocabulary row, zeros in token_embd and in
// an untied output head.
void append_muse_patch_token(GlimmerModel& model);

}  // namespace squeeze::train
