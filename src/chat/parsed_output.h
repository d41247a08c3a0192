// chat/parsed_output.h — an assistant turn taken apart: what the model thought (reasoning),
// what it told the user (content) and the tools it called. A streaming output parser
// yields deltas of the same shape; appended in order, they make the whole turn.
#pragma once

#include <string>
#include <vector>

namespace squeeze::chat {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, compact, keys in the order the model wrote them

  bool operator==(const ToolCall&) const = default;
};

struct ParsedOutput {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;

  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  void append(const ParsedOutput& delta) {
    reasoning += delta.reasoning;
    content += delta.content;
    tool_calls.insert(tool_calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
  }
  bool operator==(const ParsedOutput&) const = default;
};

}  // namespace squeeze::chat
