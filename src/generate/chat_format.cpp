// generate/chat_format.cpp — chat template rendering to token ids, and end-of-turn tokens.
#include "generate/chat_format.h"

#include <algorithm>

#include "chat/harmony_output.h"
#include "chat/llama3_output.h"
#include "chat/muse_glimmer_output.h"
#include "chat/tagged_output.h"
#include "core/error.h"
#include "generate/thinking_budget.h"

namespace squeeze::generate {
namespace {

// Qwen's tags are tokens written into the text (user-defined, not control), which tells them
// apart from a vocabulary that merely reserves a control token of the same spelling.
bool has_text_tag(const text::Tokenizer& tok, std::string_view tag) {
  const auto id = tok.find_token(tag);
  return id && tok.token_type(*id) != text::TokenType::control;
}

std::string template_source(const model::Model& model) {
  const auto* t = model.file().metadata().find("tokenizer.chat_template");
  if (!t || !t->string_if())
    fail(model.file().path(), ": no tokenizer.chat_template in the model; chat needs a chat (instruct) model");
  return *t->string_if();
}

chat::TemplateOptions template_options(const model::Model& model) {
  chat::TemplateOptions o;
  o.name = model.file().path() + ": tokenizer.chat_template";
  return o;
}

std::string token_text_or_empty(const text::Tokenizer& tok, int32_t id) {
  return id >= 0 && id < tok.n_vocab() ? tok.token_text(id) : std::string();
}

}  // namespace

ChatFormat::ChatFormat(const model::Model& model)
    : tok_(model.tokenizer()),
      controls_(tok_),
      template_(template_source(model), template_options(model)),
      bos_(token_text_or_empty(tok_, tok_.bos_id())),
      eos_(token_text_or_empty(tok_, tok_.eos_id())) {
  find_stop_ids(model);
  framing_ = output_framing(tok_);
  thinks_in_tags_ = framing_ == OutputFraming::tagged && has_text_tag(tok_, "<think>");
  if (framing_ == OutputFraming::harmony)
    for (const char* t : {"<|return|>", "<|call|>"})
      if (const auto id = tok_.find_token(t)) add_stop_id(*id);
  turn_stop_ids_ = stop_ids_;
  // A message's end within the turn: the model goes on with its next message (under
  // harmony, the answer after the analysis; the thinking budget's close writes <|end|> too).
  const char* message_end = framing_ == OutputFraming::muse_glimmer ? "<|eom|>"
                            : framing_ == OutputFraming::harmony    ? "<|end|>"
                                                                    : nullptr;
  if (message_end)
    if (const auto id = tok_.find_token(message_end)) std::erase(turn_stop_ids_, *id);
}

std::unique_ptr<chat::OutputParser> ChatFormat::output_parser(chat::ToolParams tools, std::string_view prompt) const {
  switch (framing_) {
    case OutputFraming::muse_glimmer: return std::make_unique<chat::MuseGlimmerOutputParser>(std::move(tools));
    case OutputFraming::harmony: return std::make_unique<chat::HarmonyOutputParser>();
    case OutputFraming::tagged: return std::make_unique<chat::TaggedOutputParser>(prompt_opens_thinking(prompt));
    case OutputFraming::llama3_json: return std::make_unique<chat::Llama3OutputParser>();
    case OutputFraming::plain: break;
  }
  return std::make_unique<chat::PlainOutputParser>();
}

bool ChatFormat::prompt_opens_thinking(std::string_view prompt) const {
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' ')) prompt.remove_suffix(1);
  return thinks_in_tags_ && prompt.ends_with("<think>");
}

OutputFraming output_framing(const text::Tokenizer& tok) {
  if (ThinkingVocab::has_muse_framing(tok)) return OutputFraming::muse_glimmer;
  if (ThinkingVocab::has_harmony_framing(tok)) return OutputFraming::harmony;
  if (has_text_tag(tok, "<think>") || has_text_tag(tok, "<tool_call>")) return OutputFraming::tagged;
  if (tok.find_token("<|python_tag|>")) return OutputFraming::llama3_json;
  return OutputFraming::plain;
}

std::string ChatFormat::render(const chat::Json& messages, bool add_generation_prompt, const chat::Json& tools,
                               const chat::Json& extra) const {
  // The request's levels reach the template as they are, except where harmony's has none.
  if (framing_ == OutputFraming::harmony && extra.is_object() && extra.contains("reasoning_effort") &&
      extra["reasoning_effort"] == "xhigh") {
    chat::Json known = extra;
    known["reasoning_effort"] = "high";
    return chat::render_chat(template_, messages, add_generation_prompt, bos_, eos_, tools, known);
  }
  return chat::render_chat(template_, messages, add_generation_prompt, bos_, eos_, tools, extra);
}

std::vector<int32_t> ChatFormat::tokenize(const std::string& rendered,
                                          std::vector<std::pair<size_t, size_t>> literal_ranges) const {
  // What llama.cpp does (common/chat.cpp, then tokenizing with add_special=true): when the
  // vocabulary adds BOS itself (tokenizer.ggml.add_bos_token), one leading BOS text is
  // cut from the rendering first, and likewise a trailing EOS text when it adds EOS. So a
  // template that writes {{ bos_token }} and one that does not both give exactly one BOS,
  // never two; a template that writes it for a vocabulary that does not add it keeps its
  // BOS (parse_special turns the text into the token).
  std::string_view text = rendered;
  size_t cut = 0;
  if (tok_.adds_bos() && !bos_.empty() && text.starts_with(bos_)) {
    text.remove_prefix(bos_.size());
    cut = bos_.size();
  }
  if (tok_.adds_eos() && !eos_.empty() && text.ends_with(eos_)) text.remove_suffix(eos_.size());
  for (auto& [b, e] : literal_ranges) {  // into the trimmed text
    b = std::min(text.size(), b > cut ? b - cut : 0);
    e = std::min(text.size(), e > cut ? e - cut : 0);
  }
  return tok_.encode(text, {.add_special = true, .parse_special = true, .literal_ranges = literal_ranges});
}

void ChatFormat::add_stop_id(int64_t id) {
  if (id >= 0 && id < tok_.n_vocab() &&
      std::find(stop_ids_.begin(), stop_ids_.end(), static_cast<int32_t>(id)) == stop_ids_.end())
    stop_ids_.push_back(static_cast<int32_t>(id));
}

void ChatFormat::find_stop_ids(const model::Model& model) {
  const auto add = [this](int64_t id) { add_stop_id(id); };
  add(tok_.eos_id());
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const auto* v = model.file().metadata().find(key))
      if (const auto id = v->as_i64()) add(*id);

  // The template knows how it closes an assistant turn: render one answer and look at
  // the first token after it. Only a special token counts (control or user-defined), so
  // a template that ends turns with plain text (a newline) adds nothing. Templates that
  // refuse this probe conversation simply add nothing either.
  const std::string probe = "squeeze-probe-answer";
  try {
    const chat::Json messages = chat::Json::array({{{"role", "user"}, {"content", "Hi"}},
                                                   {{"role", "assistant"}, {"content", probe}}});
    const std::string text = render(messages, false);
    const size_t at = text.rfind(probe);
    if (at == std::string::npos) return;
    const auto after = tok_.encode(std::string_view(text).substr(at + probe.size()),
                                   {.add_special = false, .parse_special = true});
    if (after.empty()) return;
    const auto type = tok_.token_type(after.front());
    if (type == text::TokenType::control || type == text::TokenType::user_defined) add(after.front());
  } catch (const std::exception&) {
  }
}

}  // namespace squeeze::generate
