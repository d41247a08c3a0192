// fuzz/fuzz_chat_template.cpp — chat::Template: lexing, parsing and rendering of a
// template source with a JSON context. Input: the template, a NUL, the context (a JSON
// object; anything else renders a fixed chat with a tool). Small RenderLimits keep each
// run short; any refusal must be a one-line squeeze::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/template.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

const chat::Json& default_context() {
  static const chat::Json ctx = chat::Json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Weather?"}, {"type": "image"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [source, context_text] = fuzz::split_at_nul(fuzz::as_text(data, size));
  BoundedJson<chat::Json> context =
      parse_json_bounded<chat::Json>(context_text, {.max_depth = 16, .max_object_keys = 64});
  const chat::Json& ctx = context.error.empty() && context.value.is_object() ? context.value : default_context();
  const chat::RenderLimits limits{.max_steps = 20'000, .max_depth = 64, .max_output = size_t{1} << 16};
  try {
    const chat::Template t(source, {.now = 0, .name = "t"});
    const std::string out = t.render(ctx, limits);
    if (out.size() > limits.max_output) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
