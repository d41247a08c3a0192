// tests/common/parsed_output_test.h — building and printing a ParsedOutput, for the output
// parsers' tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/parsed_output.h"
#include "chat/value.h"

namespace squeeze::chat {

inline ParsedOutput expect(std::string reasoning, std::string content, std::vector<ToolCall> calls = {}) {
  return ParsedOutput{std::move(reasoning), std::move(content), std::move(calls)};
}

inline std::string show(const ParsedOutput& o) {
  std::string s = "reasoning=" + Json(o.reasoning).dump() + " content=" + Json(o.content).dump() + " calls=[";
  for (const auto& c : o.tool_calls) s += c.name + c.arguments + ";";
  return s + "]";
}

}  // namespace squeeze::chat
