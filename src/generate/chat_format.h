// generate/chat_format.h — a model's chat template and what turns its rendering into token
// ids: the BOS / EOS texts the template sees, the BOS rule of llama.cpp, and the tokens
// that end an assistant turn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/template.h"
#include "model/model.h"
#include "generate/content_literals.h"

namespace squeeze::generate {

class ChatFormat {
 public:
  // Reads tokenizer.chat_template; a model without one is a one-line error naming the key.
  explicit ChatFormat(const model::Model& model);

  // `tools` (a list, or null) and `extra` variables (e.g. reasoning_strength) reach the
  // template as transformers' apply_chat_template passes them.
  std::string render(const chat::Json& messages, bool add_generation_prompt, const chat::Json& tools = nullptr,
                     const chat::Json& extra = chat::Json::object()) const;
  // The rendering's token ids: special token texts become their tokens, except within
  // `literal_ranges` (byte ranges of the rendering: message content, generate/content_literals.h).
  std::vector<int32_t> tokenize(const std::string& rendered,
                                std::vector<std::pair<size_t, size_t>> literal_ranges = {}) const;
  // The vocabulary's control-token texts (what message content may not spell as tokens).
  const ControlTexts& control_texts() const { return controls_; }
  std::vector<int32_t> encode(const chat::Json& messages, bool add_generation_prompt) const {
    return tokenize(render(messages, add_generation_prompt));
  }

  // Tokens that end an answer: EOS, tokenizer.ggml.eot_token_id / eom_token_id when set,
  // and the template's own end-of-turn token (found by rendering a probe answer and
  // taking the special token that follows it, e.g. <|im_end|>, <end_of_turn>, <|eot_id|>).
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }

 private:
  void find_stop_ids(const model::Model& model);

  const text::Tokenizer& tok_;
  ControlTexts controls_;
  chat::Template template_;
  std::string bos_, eos_;
  std::vector<int32_t> stop_ids_;
};

}  // namespace squeeze::generate
