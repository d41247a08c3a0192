// generate/chat_format.h — a model's chat template and what turns its rendering into token
// ids: the BOS / EOS texts the template sees, the BOS rule of llama.cpp, and the tokens
// that end an assistant turn.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output_parser.h"
#include "chat/template.h"
#include "chat/tool_params.h"
#include "model/model.h"
#include "generate/content_literals.h"

namespace squeeze::generate {

// How a model frames its answer, each read by its chat::OutputParser:
//   muse_glimmer: messages `<|start|>ROLE<|message|>…` ended by <|eom|> (more follow) or
//     <|eot|> (the turn ends), the thinking in `self` messages, tool calls in ATEM, read with
//     control tokens rendered (chat/muse_glimmer_output.h);
//   harmony: gpt-oss's messages `<|start|>assistant<|channel|>NAME<|message|>…` ended by
//     <|end|> (more follow), <|call|> or <|return|>, the thinking in the analysis channel,
//     calls as JSON to `functions.NAME`, read with control tokens rendered
//     (chat/harmony_output.h, docs/harmony.md);
//   tagged: `<think>…</think>` and `<tool_call>{json}</tool_call>` (Qwen2.5, Qwen3;
//     chat/tagged_output.h);
//   llama3_json: a call is the whole answer, {"name", "parameters"} (Llama 3.x;
//     chat/llama3_output.h);
//   plain: the answer is the text.
enum class OutputFraming { plain, muse_glimmer, harmony, tagged, llama3_json };
// From the vocabulary: Muse Glimmer's when it has <|start|> <|message|> <|eom|> <|eot|>;
// harmony when it has <|start|> <|channel|> <|message|> <|return|>; tagged when it has
// <think> or <tool_call> as text tokens (not control ones); llama3_json when it has
// <|python_tag|>.
OutputFraming output_framing(const text::Tokenizer& tok);

class ChatFormat {
 public:
  // Reads tokenizer.chat_template; a model without one is a one-line error naming the key.
  explicit ChatFormat(const model::Model& model);

  // `tools` (a list, or null) and `extra` variables (e.g. reasoning_strength) reach the
  // template as transformers' apply_chat_template passes them; under harmony, whose
  // template knows low, medium and high, a reasoning_effort of xhigh is passed as high.
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
  // taking the special token that follows it, e.g. <|im_end|>, <end_of_turn>, <|eot_id|>);
  // under harmony also <|return|> and <|call|> (a call ends the turn: the tool answers).
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }

  // Chosen at load; every tool that turns generated text into an answer (the CLI, the
  // OpenAI layer) reads these instead of asking which model it runs.
  OutputFraming framing() const { return framing_; }
  // A fresh parser of one answer in this framing; `tools` (the request's) type the
  // arguments of the calls it reads; `prompt` (the rendering the answer follows) tells
  // whether the template already opened the thinking (a generation prompt ending in <think>).
  std::unique_ptr<chat::OutputParser> output_parser(chat::ToolParams tools = {}, std::string_view prompt = {}) const;
  // The rendering already opened the thinking (`<think>` at its end, before any trailing
  // whitespace): the answer starts inside it, for the parser and the thinking budget.
  bool prompt_opens_thinking(std::string_view prompt) const;
  // What the framing carries: tool calls the parser returns as calls; thinking apart from
  // the answer; thinking a budget can limit (generate/thinking_budget.h).
  bool calls_tools() const { return framing_ != OutputFraming::plain; }
  bool reasons() const { return frames_messages() || thinks_in_tags_; }
  bool thinks() const { return frames_messages() || thinks_in_tags_; }
  // Control tokens reach the text (the output parser needs them).
  bool renders_control() const { return frames_messages(); }
  // The tokens that end the turn: stop_ids() less those that end a message within it
  // (<|eom|> under Muse Glimmer's framing, <|end|> under harmony's: the parser reads the
  // next message).
  const std::vector<int32_t>& turn_stop_ids() const { return turn_stop_ids_; }

 private:
  void find_stop_ids(const model::Model& model);
  void add_stop_id(int64_t id);
  bool frames_messages() const { return framing_ == OutputFraming::muse_glimmer || framing_ == OutputFraming::harmony; }

  const text::Tokenizer& tok_;
  ControlTexts controls_;
  chat::Template template_;
  std::string bos_, eos_;
  std::vector<int32_t> stop_ids_, turn_stop_ids_;
  OutputFraming framing_ = OutputFraming::plain;
  bool thinks_in_tags_ = false;  // tagged, and the vocabulary has <think>
};

}  // namespace squeeze::generate
