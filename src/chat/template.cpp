// chat/template.cpp — the public API: parse once, render many times.
#include "chat/template.h"

#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "core/error.h"

namespace squeeze::chat {

Template::Template(std::string_view source, TemplateOptions options) : options_(std::move(options)) {
  const LexOptions lo{options_.trim_blocks, options_.lstrip_blocks, options_.keep_trailing_newline};
  body_ = std::make_shared<const Body>(parse(lex(source, lo, options_.name), options_.name));
}

std::string Template::render(const DictItems& context, const RenderLimits& limits) const {
  return run_template(*body_, context, options_, limits);
}

std::string Template::render(const Json& context, const RenderLimits& limits) const {
  if (context.is_null()) return render(DictItems{}, limits);  // no variables
  if (!context.is_object()) fail(options_.name, ": the context must be a JSON object");
  return render(from_json(context).entries(), limits);
}

Json chat_context(const Json& messages, bool add_generation_prompt, const std::string& bos_token,
                  const std::string& eos_token, const Json& tools, const Json& extra) {
  Json c = Json::object();
  c["messages"] = messages;
  c["tools"] = tools;
  c["documents"] = nullptr;
  c["add_generation_prompt"] = add_generation_prompt;
  c["bos_token"] = bos_token;
  c["eos_token"] = eos_token;
  if (!extra.is_null()) {
    if (!extra.is_object()) fail("chat template: extra variables must be a JSON object");
    for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
  }
  return c;
}

std::string render_chat(const Template& t, const Json& messages, bool add_generation_prompt,
                        const std::string& bos_token, const std::string& eos_token, const Json& tools,
                        const Json& extra) {
  if (!messages.is_array()) fail(t.options().name, ": messages must be a JSON array");
  return t.render(chat_context(messages, add_generation_prompt, bos_token, eos_token, tools, extra));
}

}  // namespace squeeze::chat
