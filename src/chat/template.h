// chat/template.h — chat templates: the Jinja subset that GGUF files carry in
// `tokenizer.chat_template`, rendered as Hugging Face transformers renders them
// (jinja2 ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
// loopcontrols extension, `tojson` as json.dumps(ensure_ascii=False), and the globals
// raise_exception and strftime_now).
//
//   chat::Template t(source);                   // syntax errors throw here
//   std::string prompt = t.render(context);     // context: a JSON object of variables
//   std::string prompt = chat::render_chat(t, messages, true, "<s>", "</s>");
//
// Errors (syntax, runtime, raise_exception, limits) are one-line squeeze::Errors
// "<name>:LINE:COL: message". Rendering is bounded (RenderLimits): nesting depth of
// evaluation and of values, work done (statements, iterations, and the work inside
// filters and operators), bytes built, and output size, so no template can hang,
// exhaust memory or overflow the stack.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chat/value.h"

namespace squeeze::chat {

struct Stmt;

struct TemplateOptions {
  // transformers' chat settings; jinja2's own defaults are false, false, false.
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
  // The clock strftime_now reads, as Unix seconds formatted in UTC (tests, reproducible
  // prompts); unset: the local time at rendering.
  std::optional<int64_t> now = {};
  std::string name = "chat template";  // prefixes error messages
};

// Upper bounds on one render; generous for real templates (thousands of steps).
struct RenderLimits {
  // Statements, loop iterations, calls, and the work inside filters and operators: one
  // step per element visited and per 64 bytes read or written (chat/budget.h).
  int64_t max_steps = 10'000'000;
  int max_depth = 400;                 // nested expression / statement / macro evaluation
  size_t max_output = size_t{1} << 26;  // 64 MiB
  // Cumulative bytes of the strings and list / dict elements (sizeof(Value) each) the
  // render creates, output included, counted before each is built. Real templates build
  // a few times their output (a prompt is well under a few MB); 512 MiB still lets the
  // quadratic `ns.s = ns.s ~ part` pattern some templates use accumulate ~0.7 MB, and
  // building it takes about a second at worst, while a template building lists of
  // 50 MB strings stops here instead of at the machine's memory.
  size_t max_built_bytes = size_t{1} << 29;
};

class Template {
 public:
  explicit Template(std::string_view source, TemplateOptions options = {});

  // `context` must be a JSON object (or null: none); its keys become the template's variables.
  std::string render(const Json& context, const RenderLimits& limits = {}) const;
  std::string render(const DictItems& context, const RenderLimits& limits = {}) const;

  const TemplateOptions& options() const { return options_; }

 private:
  TemplateOptions options_;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// The variables transformers' apply_chat_template passes: messages, tools (None when
// there are none), documents (None), add_generation_prompt, bos_token, eos_token, then
// `extra` (e.g. {"enable_thinking": false, "date_string": "..."}), which may override.
Json chat_context(const Json& messages, bool add_generation_prompt, const std::string& bos_token,
                  const std::string& eos_token, const Json& tools = nullptr, const Json& extra = Json::object());

std::string render_chat(const Template& t, const Json& messages, bool add_generation_prompt,
                        const std::string& bos_token, const std::string& eos_token, const Json& tools = nullptr,
                        const Json& extra = Json::object());

}  // namespace squeeze::chat
