// serve/constrained_output.h — OpenAI's response_format as a grammar for constrained sampling.
//
//   {"type": "text"}                                  free text (null grammar)
//   {"type": "json_object"}                           any JSON object
//   {"type": "json_object", "schema": {...}}          llama-server's spelling of a schema
//   {"type": "json_schema", "json_schema": {"name": "...", "schema": {...}, "strict": true}}
//   a top-level "json_schema": {...}                 llama-server's field (not with response_format)
//
// tool_choice "required" (one call of any tool) or {"type": "function", "function":
// {"name": N}} (a call of N): the call in the model's framing — `<tool_call>\n{"name": N,
// "arguments": {...}}\n</tool_call>` (tagged) or `{"name": N, "parameters": {...}}`
// (llama3_json) — with the arguments constrained by the tool's parameters schema. "auto"
// and "none" constrain nothing ("none" also hides the tools from the template).
//
// A schema keyword the grammar cannot enforce is a 400 naming it (generate/json_grammar.h
// lists what is enforced and how).
#pragma once

#include <memory>

#include "chat/value.h"
#include "generate/chat_format.h"
#include "generate/json_grammar.h"

namespace squeeze::serve {

// Null for free text. Throws ApiError (400, param response_format).
std::shared_ptr<const generate::JsonGrammar> response_format_grammar(const chat::Json& body);

// The tool_choice of a request: "auto", "none", "required", or the named function.
struct ToolChoice {
  std::string mode = "auto";  // auto, none, required, function
  std::string function;       // mode function: its name
};
// Throws ApiError (400, param tool_choice) for anything else.
ToolChoice parse_tool_choice(const chat::Json& body);
// The grammar that forces the call (null for auto / none); `tools` is the request's list.
// Throws ApiError 400 when the framing cannot call tools or a named tool is not in the list.
std::shared_ptr<const generate::JsonGrammar> tool_choice_grammar(const ToolChoice& choice, const chat::Json& tools,
                                                                 generate::OutputFraming framing);

}  // namespace squeeze::serve
