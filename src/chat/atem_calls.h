// chat/atem_calls.h — tool calls written as ATEM XML, Muse Glimmer's call syntax:
//
//   <atem:function_calls>
//   <atem:invoke name="get_weather">
//   <atem:parameter name="city">Paris</atem:parameter>
//   <atem:parameter name="days">2</atem:parameter>
//   </atem:invoke>
//   </atem:function_calls>
//
// It is not XML: values are raw text (no entities, newlines and markup kept), so a
// `</atem:parameter>` ends a value only where the next tag may follow it (whitespace, then
// `<atem:parameter` or `</atem:invoke>`). Arguments are typed by the request's tools
// (chat/tool_params.h): a string parameter keeps its text verbatim; any other becomes JSON
// when its (trimmed) text is JSON, else stays a string.
//
// Besides the canonical form it reads what models are seen to write instead: the
// `<atem:function_calls>` wrapper left out around invokes, `<atem:parameter="x">` for
// `<atem:parameter name="x">`, and a swallowed parameter tag,
//   <atem:invoke name="read.path">/tmp/x</atem:parameter></atem:invoke>
// read as read(path="/tmp/x") when the tools say `read` exists, `read.path` does not and
// `path` is one of read's parameters.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "chat/parsed_output.h"
#include "chat/tool_params.h"

namespace squeeze::chat {

// The calls in one tool-addressed message body: only whitespace may surround the call
// blocks. nullopt when the body is anything else (the caller keeps it as text). Never throws.
std::optional<std::vector<ToolCall>> parse_atem_calls(std::string_view body, const ToolParams& tools = {});

}  // namespace squeeze::chat
