// chat/json_tool_calls.h — tool calls a model writes as JSON objects ({"name": ..., "arguments"
// or "parameters": {...}}), as Qwen's `<tool_call>` bodies and Llama 3's answers hold them.
// Untrusted text: bounded parsing, and nullopt (never an exception) for anything else.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/parsed_output.h"

namespace squeeze::chat {

// One object (surrounding whitespace allowed): a string "name" and an object of arguments
// (or a string holding one), written back compact with the model's key order.
std::optional<ToolCall> json_tool_call(std::string_view text);

// Arguments written as one JSON object (surrounding whitespace allowed), as harmony's tool
// messages hold them: the object compact, with the model's key order.
std::optional<std::string> json_arguments(std::string_view text);

// One or more such objects, separated by whitespace or ';' (Llama 3's parallel calls).
std::optional<std::vector<ToolCall>> json_tool_calls(std::string_view text);

}  // namespace squeeze::chat
