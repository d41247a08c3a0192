// chat/tagged_output.h — the output of models that tag their thinking and tool calls
// (Qwen2.5, Qwen3, Hermes-style templates): an optional `<think>…</think>` first, then the
// answer, with each call as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
//
//   <think>
//   The user wants Paris.
//   </think>
//
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
//
// The thinking is the text between the tags less its leading and trailing newlines, the
// answer what follows less its leading newlines (as the templates re-render a past turn);
// whitespace after a call is dropped. Never fails: a call whose body is not such an object
// stays in the answer as written, and a turn that ends inside `<think>` is all thinking.
// Streamed in any split, the deltas add up to the one-shot parse (text that may still be
// a tag, or trailing newlines of the thinking, is held back until decided).
#pragma once

#include <string>
#include <string_view>

#include "chat/output_parser.h"

namespace squeeze::chat {

class TaggedOutputParser final : public OutputParser {
 public:
  // `starts_in_thinking`: the prompt already opened `<think>` (templates that pre-fill it).
  explicit TaggedOutputParser(bool starts_in_thinking = false);

  ParsedOutput feed(std::string_view chunk) override;
  ParsedOutput finish() override;

 private:
  enum class State { start, thinking, content, tool_call };

  void run(bool at_end, ParsedOutput& out);
  bool step(bool at_end, ParsedOutput& out);  // false: needs more text
  void emit_reasoning(std::string_view text, bool last, ParsedOutput& out);

  State state_;
  std::string buf_;  // undecided text, from pos_
  size_t pos_ = 0;
  bool reasoning_started_ = false;  // leading newlines of the thinking are behind us
  std::string held_newlines_;       // trailing newlines of the thinking so far
  bool strip_newlines_ = false;     // the answer after </think>: leading newlines dropped
  bool strip_space_ = false;        // after a call: whitespace dropped
  bool finished_ = false;
};

ParsedOutput parse_tagged_output(std::string_view text, bool starts_in_thinking = false);

}  // namespace squeeze::chat
